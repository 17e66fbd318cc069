/* SPDX-License-Identifier: BSD-3-Clause */
/* test_dlpack.c — DLPack export (memory shared, deleter releases graft's
 * reference), import of foreign tensors (adopted without a copy, the
 * producer's deleter run once when graft lets go; copied when they cannot be
 * adopted), round trips (shared), and the errors of both directions. */
#include "interop_test.h"

#if defined(__has_include)
#if __has_include(<dlpack/dlpack.h>)
#define HAVE_DLPACK_H 1
#endif
#endif

#if HAVE_DLPACK_H
#include <dlpack/dlpack.h>

static gf_device *cpu;

static uint64_t bytes_in_use(void) {
    gf_memory_stats st;
    gf_memory_get_stats(cpu, &st);
    return st.bytes_in_use;
}

/* The element at a multi-index, read through the DLPack fields alone. */
static const void *dl_at(const DLTensor *d, const int64_t *idx, size_t es) {
    int64_t off = 0;
    for (int i = 0; i < d->ndim; i++) off += idx[i] * d->strides[i];
    return (const char *)d->data + d->byte_offset + off * (int64_t)es;
}

static void test_export_shares_memory(void) {
    uint64_t before = bytes_in_use();
    const float a[6] = {0, 1, 2, 3, 4, 5};
    gf_tensor *t = gf_from_data(a, SZ(2, 3), 2, GF_F32, cpu);
    DLManagedTensor *m = gf_to_dlpack(t);
    CHECK_MSG(m != NULL, "%s", gf_last_error());
    if (!m) return;
    DLTensor *d = &m->dl_tensor;
    CHECK(d->device.device_type == kDLCPU && d->device.device_id == 0);
    CHECK(d->ndim == 2 && d->shape[0] == 2 && d->shape[1] == 3);
    CHECK(d->strides && d->strides[0] == 3 && d->strides[1] == 1);
    CHECK(d->dtype.code == kDLFloat && d->dtype.bits == 32 && d->dtype.lanes == 1);
    CHECK(d->byte_offset == 0);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            CHECK(*(const float *)dl_at(d, SZ(i, j), 4) == (float)(3 * i + j));
    /* A write through the DLPack pointer is seen by graft ... */
    *(float *)dl_at(d, SZ(1, 2), 4) = 42.0f;
    CHECK(it_get(t, 5) == 42.0);
    /* ... and an in-place op in graft is seen through the pointer. */
    gf_tensor *one = gf_scalar(1, GF_F32, cpu);
    CHECK(gf_add_(t, one) == GF_OK);
    CHECK(*(const float *)dl_at(d, SZ(0, 0), 4) == 1.0f);
    /* The export keeps the memory alive after graft lets go of the tensor. */
    gf_tensor_release(t);
    gf_tensor_release(one);
    CHECK(*(const float *)dl_at(d, SZ(1, 2), 4) == 43.0f);
    CHECK(bytes_in_use() > before);
    m->deleter(m);
    CHECK(bytes_in_use() == before);
}

static void test_export_views_and_dtypes(void) {
    /* transpose: strides swap, no copy */
    gf_tensor *t = gf_arange(0, 12, 1, GF_I64, cpu);
    gf_tensor *m34 = gf_view(t, SZ(3, 4), 2);
    gf_tensor *tr = gf_transpose(m34, 0, 1);
    DLManagedTensor *m = gf_to_dlpack(tr);
    CHECK(m && m->dl_tensor.ndim == 2 && m->dl_tensor.shape[0] == 4 && m->dl_tensor.shape[1] == 3);
    CHECK(m && m->dl_tensor.strides[0] == 1 && m->dl_tensor.strides[1] == 4);
    CHECK(m && m->dl_tensor.dtype.code == kDLInt && m->dl_tensor.dtype.bits == 64);
    for (int i = 0; m && i < 4; i++)
        for (int j = 0; j < 3; j++)
            CHECK(*(const int64_t *)dl_at(&m->dl_tensor, SZ(i, j), 8) == 4 * j + i);
    if (m) m->deleter(m);
    /* a slice with an offset and a step: byte_offset and a stride of 3 */
    gf_tensor *sl = gf_slice(t, 0, 2, 12, 3); /* 2, 5, 8, 11 */
    m = gf_to_dlpack(sl);
    CHECK(m && m->dl_tensor.byte_offset == 2 * 8 && m->dl_tensor.strides[0] == 3);
    for (int i = 0; m && i < 4; i++)
        CHECK(*(const int64_t *)dl_at(&m->dl_tensor, SZ(i), 8) == 2 + 3 * i);
    if (m) m->deleter(m);
    /* 0-dim */
    gf_tensor *s = gf_scalar(2.5, GF_F64, cpu);
    m = gf_to_dlpack(s);
    CHECK(m && m->dl_tensor.ndim == 0 && m->dl_tensor.dtype.code == kDLFloat &&
          m->dl_tensor.dtype.bits == 64 && *(const double *)m->dl_tensor.data == 2.5);
    if (m) m->deleter(m);
    /* i32 and bool (type code 6 = kDLBool of DLPack >= 0.8) */
    gf_tensor *i = gf_full(SZ(2), 1, -3, GF_I32, cpu);
    m = gf_to_dlpack(i);
    CHECK(m && m->dl_tensor.dtype.code == kDLInt && m->dl_tensor.dtype.bits == 32 &&
          ((const int32_t *)m->dl_tensor.data)[1] == -3);
    if (m) m->deleter(m);
    gf_tensor *b = gf_full(SZ(3), 1, 1, GF_BOOL, cpu);
    m = gf_to_dlpack(b);
    CHECK(m && m->dl_tensor.dtype.code == 6 && m->dl_tensor.dtype.bits == 8 &&
          m->dl_tensor.dtype.lanes == 1 && ((const uint8_t *)m->dl_tensor.data)[2] == 1);
    if (m) m->deleter(m);
    gf_tensor_release(t);
    gf_tensor_release(m34);
    gf_tensor_release(tr);
    gf_tensor_release(sl);
    gf_tensor_release(s);
    gf_tensor_release(i);
    gf_tensor_release(b);
}

static void test_export_errors(void) {
    CHECK(gf_to_dlpack(NULL) == NULL);
    CHECK_FAILS(GF_ERR_INVALID, "is NULL");
    gf_tensor *w = gf_ones(SZ(2), 1, GF_F32, cpu);
    CHECK(gf_tensor_set_requires_grad(w, true) == GF_OK);
    CHECK(gf_to_dlpack(w) == NULL);
    CHECK_FAILS(GF_ERR_AUTOGRAD, "gf_detach");
    gf_tensor *dw = gf_detach(w);
    DLManagedTensor *m = gf_to_dlpack(dw);
    CHECK(m != NULL);
    if (m) m->deleter(m);
    gf_tensor_release(dw);
    gf_tensor_release(w);
}

/* ---- a foreign producer */
typedef struct producer {
    DLManagedTensor managed;
    int64_t shape[8], strides[8];
    int deleted; /* times the deleter ran */
    void *data;
} producer;

static void producer_deleter(DLManagedTensor *self) {
    producer *p = self->manager_ctx;
    p->deleted++;
    free(p->data);
    p->data = NULL;
}

static void producer_init(producer *p, void *data, int ndim, const int64_t *shape,
                          const int64_t *strides, uint8_t code, uint8_t bits) {
    memset(p, 0, sizeof *p);
    p->data = data;
    p->managed.dl_tensor.data = data;
    p->managed.dl_tensor.device.device_type = kDLCPU;
    p->managed.dl_tensor.ndim = ndim;
    p->managed.dl_tensor.dtype.code = code;
    p->managed.dl_tensor.dtype.bits = bits;
    p->managed.dl_tensor.dtype.lanes = 1;
    for (int i = 0; i < ndim; i++) {
        p->shape[i] = shape[i];
        if (strides) p->strides[i] = strides[i];
    }
    p->managed.dl_tensor.shape = p->shape;
    p->managed.dl_tensor.strides = strides ? p->strides : NULL;
    p->managed.manager_ctx = p;
    p->managed.deleter = producer_deleter;
}

static void test_import_foreign(void) {
    /* compact row-major, strides NULL: adopted, the memory is shared */
    double *a = malloc(6 * sizeof *a);
    for (int i = 0; i < 6; i++) a[i] = 0.5 * i;
    producer p;
    producer_init(&p, a, 2, SZ(2, 3), NULL, kDLFloat, 64);
    gf_tensor *t = gf_from_dlpack(&p.managed, NULL);
    CHECK_MSG(t != NULL, "%s", gf_last_error());
    CHECK(p.deleted == 0); /* graft uses the producer's memory until it lets go */
    CHECK(t && gf_tensor_dtype(t) == GF_F64 && gf_tensor_rank(t) == 2 && gf_tensor_size(t, 1) == 3);
    for (int i = 0; t && i < 6; i++) CHECK(it_get(t, i) == 0.5 * i);
    a[4] = -8; /* the producer writes: graft sees it */
    CHECK(t && it_get(t, 4) == -8);
    gf_tensor *two = gf_scalar(2, GF_F64, cpu);
    CHECK(gf_mul_(t, two) == GF_OK); /* graft writes in place: the producer sees it */
    CHECK(a[1] == 1.0 && a[4] == -16);
    /* a view keeps the memory alive after the tensor is gone */
    gf_tensor *row = gf_select(t, 0, 1);
    gf_tensor_release(t);
    CHECK(p.deleted == 0);
    CHECK(row && it_get(row, 0) == 3.0);
    gf_tensor *sum = gf_sum(row, NULL, 0, false); /* a kernel reads the adopted memory */
    CHECK(sum && it_get(sum, 0) == 3.0 - 16 + 5);
    gf_tensor_release(sum);
    gf_tensor_release(two);
    gf_tensor_release(row);
    CHECK(p.deleted == 1); /* the last reference went: handed back, once */

    /* Column 1 of a 3x4 int32 matrix seen as [3] with stride 4 and a byte
     * offset; then the same matrix transposed through strides [1, 4]. */
    int32_t *b = malloc(12 * sizeof *b);
    for (int i = 0; i < 12; i++) b[i] = 10 * i;
    producer_init(&p, b, 1, SZ(3), SZ(4), kDLInt, 32);
    p.managed.dl_tensor.byte_offset = 1 * sizeof(int32_t);
    p.data = NULL; /* b is freed by the next producer */
    t = gf_from_dlpack(&p.managed, cpu);
    CHECK(t && gf_tensor_dtype(t) == GF_I32 && gf_tensor_numel(t) == 3);
    CHECK(t && gf_tensor_strides(t)[0] == 4); /* a strided view of b itself */
    CHECK(t && it_get(t, 0) == 10 && it_get(t, 1) == 50 && it_get(t, 2) == 90);
    CHECK(p.deleted == 0);
    gf_tensor_release(t);
    CHECK(p.deleted == 1);
    producer_init(&p, b, 2, SZ(4, 3), SZ(1, 4), kDLInt, 32);
    t = gf_from_dlpack(&p.managed, cpu);
    CHECK(t && gf_tensor_strides(t)[0] == 1 && gf_tensor_strides(t)[1] == 4);
    for (int i = 0; t && i < 4; i++)
        for (int j = 0; j < 3; j++) CHECK(it_get(t, 3 * i + j) == 10 * (4 * j + i));
    gf_tensor *c2 = gf_contiguous(t); /* kernels take the transposed layout as it is */
    for (int i = 0; c2 && i < 4; i++)
        for (int j = 0; j < 3; j++) CHECK(it_get(c2, 3 * i + j) == 10 * (4 * j + i));
    gf_tensor_release(c2);
    gf_tensor_release(t);
    CHECK(p.deleted == 1);

    /* Misaligned data (a float at an odd address) cannot be adopted: it is
     * copied and handed back at once. */
    unsigned char *raw = malloc(4 * sizeof(float) + 1);
    float fv[3] = {1.5f, -2.0f, 7.25f};
    memcpy(raw + 1, fv, sizeof fv);
    producer_init(&p, raw, 1, SZ(3), NULL, kDLFloat, 32);
    p.managed.dl_tensor.byte_offset = 1;
    t = gf_from_dlpack(&p.managed, NULL);
    CHECK_MSG(t != NULL, "%s", gf_last_error());
    CHECK(p.deleted == 1 && t && it_get(t, 2) == 7.25 && it_get(t, 1) == -2.0);
    gf_tensor_release(t);

    /* A negative stride (a reversed view, as NumPy's a[::-1]): data points
     * at element 0 of the view, which is the last in memory. */
    int64_t *c = malloc(4 * sizeof *c);
    for (int i = 0; i < 4; i++) c[i] = (INT64_C(1) << 40) + i;
    producer_init(&p, c, 1, SZ(4), SZ(-1), kDLInt, 64);
    p.managed.dl_tensor.byte_offset = 3 * sizeof(int64_t);
    t = gf_from_dlpack(&p.managed, NULL);
    CHECK(p.deleted == 1); /* graft views have no negative strides: copied */
    int64_t got[4] = {0};
    CHECK(t && gf_tensor_to_host(t, got, sizeof got) == GF_OK);
    for (int i = 0; i < 4; i++) CHECK(got[i] == (INT64_C(1) << 40) + 3 - i);
    gf_tensor_release(t);

    /* 0-dim, bool with a value other than 1, and an empty tensor */
    uint8_t *bo = malloc(1);
    bo[0] = 7;
    producer_init(&p, bo, 0, NULL, NULL, 6, 8);
    t = gf_from_dlpack(&p.managed, NULL);
    CHECK(p.deleted == 1); /* bool is copied so every byte is 0 or 1 */
    uint8_t bv = 0;
    CHECK(t && gf_tensor_rank(t) == 0 && gf_tensor_dtype(t) == GF_BOOL &&
          gf_tensor_to_host(t, &bv, 1) == GF_OK && bv == 1);
    gf_tensor_release(t);
    producer_init(&p, NULL, 2, SZ(0, 5), NULL, kDLFloat, 32);
    t = gf_from_dlpack(&p.managed, NULL);
    CHECK(t && gf_tensor_numel(t) == 0 && gf_tensor_size(t, 1) == 5 && p.deleted == 1);
    gf_tensor_release(t);
    /* empty, NULL data with a byte offset and strides: no pointer is formed */
    producer_init(&p, NULL, 2, SZ(3, 0), SZ(INT64_MAX, 1), kDLFloat, 32);
    p.managed.dl_tensor.byte_offset = 64;
    t = gf_from_dlpack(&p.managed, NULL);
    CHECK_MSG(t && gf_tensor_numel(t) == 0 && p.deleted == 1, "%s", gf_last_error());
    gf_tensor_release(t);

    /* A producer without a deleter (static memory) */
    static float fixed[2] = {3, 4};
    producer_init(&p, fixed, 1, SZ(2), NULL, kDLFloat, 32);
    p.managed.deleter = NULL;
    t = gf_from_dlpack(&p.managed, NULL);
    CHECK(t && it_get(t, 1) == 4 && p.deleted == 0);
    gf_tensor_release(t);
}

static void import_error(producer *p, gf_status status, const char *text) {
    gf_tensor *t = gf_from_dlpack(&p->managed, NULL);
    CHECK(t == NULL);
    gf_tensor_release(t);
    CHECK_FAILS(status, text);
    /* On failure the caller still owns it: nothing was deleted. */
    CHECK(p->deleted == 0);
}

static void test_import_errors(void) {
    static float buf[16];
    producer p;
    producer_init(&p, buf, 1, SZ(4), NULL, kDLUInt, 16);
    p.data = NULL;
    import_error(&p, GF_ERR_DTYPE, "uint16");
    producer_init(&p, buf, 1, SZ(2), NULL, kDLComplex, 32);
    p.data = NULL;
    import_error(&p, GF_ERR_DTYPE, "complex32");
    producer_init(&p, buf, 1, SZ(2), NULL, kDLFloat, 32);
    p.managed.dl_tensor.dtype.lanes = 4;
    p.data = NULL;
    import_error(&p, GF_ERR_INVALID, "4 lanes");
    producer_init(&p, buf, 1, SZ(2), NULL, kDLFloat, 32);
    p.managed.dl_tensor.device.device_type = kDLCUDA;
    p.data = NULL;
    import_error(&p, GF_ERR_DEVICE, "kDLCPU");
    producer_init(&p, buf, 8, SZ(1, 1, 1, 1, 1, 1, 1, 1), NULL, kDLFloat, 32);
    p.managed.dl_tensor.ndim = 9;
    p.data = NULL;
    import_error(&p, GF_ERR_INVALID, "ndim 9");
    producer_init(&p, buf, 2, SZ(2, -1), NULL, kDLFloat, 32);
    p.data = NULL;
    import_error(&p, GF_ERR_INVALID, "negative");
    producer_init(&p, NULL, 1, SZ(3), NULL, kDLFloat, 32);
    import_error(&p, GF_ERR_INVALID, "data is NULL");
    /* strides whose reach passes int64 (elements or bytes), either sign */
    producer_init(&p, buf, 2, SZ(3, 2), SZ(INT64_MAX / 2, 1), kDLFloat, 32);
    p.data = NULL;
    import_error(&p, GF_ERR_OVERFLOW, "2^63");
    producer_init(&p, buf, 1, SZ(2), SZ(INT64_MIN), kDLFloat, 32);
    p.data = NULL;
    import_error(&p, GF_ERR_OVERFLOW, "2^63");
    producer_init(&p, buf, 1, SZ(3), SZ(-(INT64_MAX / 8)), kDLFloat, 64);
    p.data = NULL;
    import_error(&p, GF_ERR_OVERFLOW, "2^63");
    CHECK(gf_from_dlpack(NULL, NULL) == NULL);
    CHECK_FAILS(GF_ERR_INVALID, "managed is NULL");
}

static void test_round_trip(void) {
    uint64_t before = bytes_in_use();
    gf_tensor *t = gf_arange(0, 6, 1, GF_F32, cpu);
    gf_tensor *v = gf_view(t, SZ(2, 3), 2);
    gf_tensor *tr = gf_transpose(v, 0, 1);
    DLManagedTensor *m = gf_to_dlpack(tr);
    CHECK(m != NULL);
    gf_tensor *u = gf_from_dlpack(m, NULL);
    CHECK_MSG(u != NULL, "%s", gf_last_error());
    /* the same storage, the same geometry: a view, not a copy */
    CHECK(gf_tensor_shares_storage(u, t));
    CHECK(u && gf_tensor_size(u, 0) == 3 && gf_tensor_strides(u)[0] == 1 &&
          gf_tensor_strides(u)[1] == 3);
    for (int i = 0; u && i < 3; i++)
        for (int j = 0; j < 2; j++) CHECK(it_get(u, 2 * i + j) == 3 * j + i);
    /* a write through one is seen by the other */
    gf_tensor *ten = gf_scalar(10, GF_F32, cpu);
    CHECK(gf_mul_(u, ten) == GF_OK);
    CHECK(it_get(t, 5) == 50);
    gf_tensor_release(ten);
    gf_tensor_release(t);
    gf_tensor_release(v);
    gf_tensor_release(tr);
    CHECK(u && it_get(u, 5) == 50); /* u alone keeps the storage */
    gf_tensor_release(u);
    CHECK(bytes_in_use() == before); /* the export record let go of it too */

    /* A slice: the offset comes back through byte_offset. */
    t = gf_arange(0, 10, 1, GF_I32, cpu);
    gf_tensor *sl = gf_slice(t, 0, 3, 9, 2); /* 3, 5, 7 */
    u = gf_from_dlpack(gf_to_dlpack(sl), cpu);
    CHECK(u && gf_tensor_shares_storage(u, t) && gf_tensor_offset(u) == 3);
    CHECK(u && it_get(u, 0) == 3 && it_get(u, 2) == 7);
    gf_tensor_release(u);
    gf_tensor_release(sl);
    gf_tensor_release(t);
    CHECK(bytes_in_use() == before);
}

/* Exported by one host device, imported onto another (cpu_onednn and the
 * reference, when both are loaded): the second adopts the first's memory,
 * and the export record holds it until the import is gone. */
static void test_across_devices(void) {
    gf_device *other = gf_device_find("cpu:1");
    gf_clear_error();
    if (!other) {
        fprintf(stderr, "  (one cpu device only: nothing to cross)\n");
        return;
    }
    gf_tensor *t = gf_arange(0, 4, 1, GF_F32, cpu);
    gf_tensor *u = gf_from_dlpack(gf_to_dlpack(t), other);
    CHECK_MSG(u != NULL, "%s", gf_last_error());
    CHECK(u && gf_tensor_device(u) == other && !gf_tensor_shares_storage(u, t));
    gf_tensor *two = gf_scalar(2, GF_F32, other);
    CHECK(gf_mul_(u, two) == GF_OK); /* a kernel of the other device, in place */
    CHECK(it_get(t, 3) == 6);         /* ...on the first device's memory */
    gf_tensor_release(t);
    CHECK(u && it_get(u, 2) == 4); /* u alone keeps it alive */
    gf_tensor_release(u);
    gf_tensor_release(two);
}

/* Complex tensors both ways: kDLComplex 64 / 128 with interleaved parts, on
 * a device that stores them; a device that does not refuses the import
 * (nothing deleted) with the message of gf_empty. */
static void test_complex(void) {
    gf_device *cx = it_device_storing(GF_C64, 1);
    CHECK_MSG(cx != NULL, "no loaded device stores c64 (the reference plugin does)");
    if (!cx) return;
    double *a = malloc(6 * sizeof *a); /* 3 c128 values: 0.5k + (k - 1)i */
    for (int k = 0; k < 3; k++) a[2 * k] = 0.5 * k, a[2 * k + 1] = k - 1;
    producer p;
    producer_init(&p, a, 1, SZ(3), NULL, kDLComplex, 128);
    gf_tensor *t = gf_from_dlpack(&p.managed, cx);
    CHECK_MSG(t && gf_tensor_dtype(t) == GF_C128, "%s", gf_last_error());
    double re = 0, im = 0;
    CHECK(t && gf_tensor_get_complex(t, SZ(2), &re, &im) == GF_OK && re == 1.0 && im == 1.0);
    a[3] = 7; /* shared: the producer's write is read as the imaginary part of element 1 */
    CHECK(t && gf_tensor_get_complex(t, SZ(1), &re, &im) == GF_OK && re == 0.5 && im == 7);
    /* exported back: kDLComplex 128, the same memory */
    DLManagedTensor *m = t ? gf_to_dlpack(t) : NULL;
    CHECK(m && m->dl_tensor.dtype.code == kDLComplex && m->dl_tensor.dtype.bits == 128 &&
          m->dl_tensor.data == (void *)a);
    if (m) m->deleter(m);
    gf_tensor_release(t);
    CHECK(p.deleted == 1);

    /* c64 made by graft, exported and read through the DLPack fields */
    const float zf[4] = {1, -2, 3.5f, 4};
    gf_tensor *z = gf_from_data(zf, SZ(2), 1, GF_C64, cx);
    m = z ? gf_to_dlpack(z) : NULL;
    CHECK(m && m->dl_tensor.dtype.code == kDLComplex && m->dl_tensor.dtype.bits == 64);
    if (m) {
        const float *e = dl_at(&m->dl_tensor, SZ(1), 8);
        CHECK(e[0] == 3.5f && e[1] == 4);
        gf_tensor *back = gf_from_dlpack(m, cx); /* a view of z's storage */
        CHECK(back && gf_tensor_dtype(back) == GF_C64 && gf_tensor_shares_storage(back, z));
        gf_tensor_release(back);
    }
    gf_tensor_release(z);

    gf_device *plain = it_device_storing(GF_C64, 0);
    if (plain) { /* cpu_onednn, when it is loaded */
        float *b = malloc(4 * sizeof *b);
        producer_init(&p, b, 1, SZ(2), NULL, kDLComplex, 64);
        CHECK(gf_from_dlpack(&p.managed, plain) == NULL);
        CHECK_FAILS(GF_ERR_DTYPE, "does not store dtype c64");
        CHECK(p.deleted == 0);
        free(b);
    }
}

int main(void) {
    cpu = gf_device_find("cpu");
    if (!cpu) {
        fprintf(stderr, "no cpu device: %s\n", gf_last_error());
        return 1;
    }
    RUN(test_export_shares_memory);
    RUN(test_export_views_and_dtypes);
    RUN(test_export_errors);
    RUN(test_import_foreign);
    RUN(test_import_errors);
    RUN(test_round_trip);
    RUN(test_across_devices);
    RUN(test_complex);
    return CHECK_REPORT();
}

#else /* no <dlpack/dlpack.h> for the test: the library must say so */

int main(void) {
    gf_tensor *t = gf_ones(SZ(2), 1, GF_F32, NULL);
    void *m = gf_to_dlpack(t);
    CHECK(m == NULL);
    CHECK_FAILS(GF_ERR_UNSUPPORTED, "without <dlpack/dlpack.h>");
    gf_tensor_release(t);
    return CHECK_REPORT();
}
#endif
