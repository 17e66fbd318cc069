/* SPDX-License-Identifier: BSD-3-Clause */
/* test_dlpack_versioned.c — DLPack 1.x (DLManagedTensorVersioned): export
 * with version and flags, import of foreign tensors (adopted), READ_ONLY
 * (copied, the producer's memory untouched), a major version graft does not
 * know (refused, ownership kept), and round trips. */
#include "interop_test.h"

#if defined(__has_include)
#if __has_include(<dlpack/dlpack.h>)
#define HAVE_DLPACK_H 1
#endif
#endif

#if HAVE_DLPACK_H
#include <graft/dlpack.h>

static gf_device *cpu;

typedef struct producer {
    DLManagedTensorVersioned managed;
    int64_t shape[8];
    int deleted;
} producer;

static void producer_deleter(DLManagedTensorVersioned *self) {
    producer *p = self->manager_ctx;
    p->deleted++;
}

static void producer_init(producer *p, void *data, int ndim, const int64_t *shape, uint8_t code,
                          uint8_t bits, uint64_t flags) {
    memset(p, 0, sizeof *p);
    p->managed.version.major = 1;
    p->managed.version.minor = 0;
    p->managed.flags = flags;
    p->managed.dl_tensor.data = data;
    p->managed.dl_tensor.device.device_type = kDLCPU;
    p->managed.dl_tensor.ndim = ndim;
    p->managed.dl_tensor.dtype.code = code;
    p->managed.dl_tensor.dtype.bits = bits;
    p->managed.dl_tensor.dtype.lanes = 1;
    for (int i = 0; i < ndim; i++) p->shape[i] = shape[i];
    p->managed.dl_tensor.shape = p->shape;
    p->managed.manager_ctx = p;
    p->managed.deleter = producer_deleter;
}

/* The 1.0 layout, written out from the DLPack specification: a consumer
 * built against DLPack 1.x reads these offsets. */
static void test_layout(void) {
    CHECK(offsetof(DLManagedTensorVersioned, version) == 0);
    CHECK(offsetof(DLManagedTensorVersioned, manager_ctx) == 8);
    CHECK(offsetof(DLManagedTensorVersioned, deleter) == 16);
    CHECK(offsetof(DLManagedTensorVersioned, flags) == 24);
    CHECK(offsetof(DLManagedTensorVersioned, dl_tensor) == 32);
    CHECK(DLPACK_FLAG_BITMASK_READ_ONLY == 1 && DLPACK_FLAG_BITMASK_IS_COPIED == 2);
}

static void test_export(void) {
    gf_tensor *t = gf_arange(0, 12, 1, GF_F32, cpu);
    gf_tensor *v = gf_view(t, SZ(3, 4), 2);
    gf_tensor *s = gf_slice(v, 1, 1, 4, 2); /* [3, 2]: columns 1 and 3 */
    DLManagedTensorVersioned *m = gf_to_dlpack_versioned(s);
    CHECK_MSG(m != NULL, "%s", gf_last_error());
    if (!m) return;
    CHECK(m->version.major == 1 && m->flags == 0 && m->deleter != NULL);
    const DLTensor *d = &m->dl_tensor;
    CHECK(d->device.device_type == kDLCPU && d->ndim == 2 && d->shape[0] == 3 &&
          d->shape[1] == 2 && d->strides[0] == 4 && d->strides[1] == 2);
    CHECK(d->dtype.code == kDLFloat && d->dtype.bits == 32 && d->dtype.lanes == 1);
    CHECK(d->byte_offset == sizeof(float));
    const float *base = (const float *)((const char *)d->data + d->byte_offset);
    CHECK(base[0] == 1 && base[1 * 4 + 1 * 2] == 7);
    /* writes by the consumer are seen by graft */
    ((float *)((char *)d->data + d->byte_offset))[0] = 100;
    CHECK(it_get(t, 1) == 100);
    gf_tensor_release(s);
    gf_tensor_release(v);
    gf_tensor_release(t);
    CHECK(base[2 * 4 + 2] == 11); /* the export alone keeps the memory */
    m->deleter(m);

    /* requires grad: refused with the way out */
    gf_tensor *w = gf_ones(SZ(2), 1, GF_F32, cpu);
    gf_tensor_set_requires_grad(w, true);
    CHECK(gf_to_dlpack_versioned(w) == NULL);
    CHECK_FAILS(GF_ERR_AUTOGRAD, "gf_detach");
    gf_tensor_release(w);
    CHECK(gf_to_dlpack_versioned(NULL) == NULL);
    CHECK_FAILS(GF_ERR_INVALID, "NULL");
}

static void test_import(void) {
    float data[6] = {1, 2, 3, 4, 5, 6};
    producer p;
    producer_init(&p, data, 2, SZ(2, 3), kDLFloat, 32, 0);
    gf_tensor *t = gf_from_dlpack_versioned(&p.managed, NULL);
    CHECK_MSG(t != NULL, "%s", gf_last_error());
    CHECK(p.deleted == 0 && t && it_get(t, 4) == 5);
    gf_tensor *ten = gf_scalar(10, GF_F32, cpu);
    CHECK(gf_mul_(t, ten) == GF_OK);
    CHECK(data[5] == 60); /* shared */
    gf_tensor_release(t);
    CHECK(p.deleted == 1);

    /* READ_ONLY: graft's tensors are writable, so the data is copied and the
     * producer's memory never written */
    float ro[3] = {7, 8, 9};
    producer_init(&p, ro, 1, SZ(3), kDLFloat, 32, DLPACK_FLAG_BITMASK_READ_ONLY);
    t = gf_from_dlpack_versioned(&p.managed, cpu);
    CHECK(t && p.deleted == 1);
    CHECK(gf_mul_(t, ten) == GF_OK);
    CHECK(t && it_get(t, 2) == 90 && ro[2] == 9);
    gf_tensor_release(t);
    CHECK(p.deleted == 1);

    /* a newer minor of 1.x reads the same */
    int32_t iv[2] = {-3, 4};
    producer_init(&p, iv, 1, SZ(2), kDLInt, 32, DLPACK_FLAG_BITMASK_IS_COPIED);
    p.managed.version.minor = 3;
    t = gf_from_dlpack_versioned(&p.managed, cpu);
    CHECK(t && gf_tensor_dtype(t) == GF_I32 && it_get(t, 0) == -3);
    gf_tensor_release(t);
    CHECK(p.deleted == 1);
    gf_tensor_release(ten);
}

static void test_import_errors(void) {
    float data[2] = {1, 2};
    producer p;
    producer_init(&p, data, 1, SZ(2), kDLFloat, 32, 0);
    p.managed.version.major = 2;
    CHECK(gf_from_dlpack_versioned(&p.managed, NULL) == NULL);
    CHECK_FAILS(GF_ERR_INVALID, "DLPack 2.0");
    CHECK(p.deleted == 0);
    producer_init(&p, data, 1, SZ(2), kDLUInt, 8, 0);
    CHECK(gf_from_dlpack_versioned(&p.managed, NULL) == NULL);
    CHECK_FAILS(GF_ERR_DTYPE, "uint8");
    CHECK(p.deleted == 0);
    producer_init(&p, data, 1, SZ(2), kDLFloat, 32, 0);
    p.managed.dl_tensor.device.device_type = kDLCUDA;
    CHECK(gf_from_dlpack_versioned(&p.managed, NULL) == NULL);
    CHECK_FAILS(GF_ERR_DEVICE, "host");
    CHECK(p.deleted == 0);
    CHECK(gf_from_dlpack_versioned(NULL, NULL) == NULL);
    CHECK_FAILS(GF_ERR_INVALID, "managed is NULL");
}

static void test_round_trip(void) {
    gf_tensor *t = gf_arange(0, 6, 1, GF_I64, cpu);
    gf_tensor *v = gf_view(t, SZ(2, 3), 2);
    gf_tensor *tr = gf_transpose(v, 0, 1);
    gf_tensor *u = gf_from_dlpack_versioned(gf_to_dlpack_versioned(tr), NULL);
    CHECK_MSG(u != NULL, "%s", gf_last_error());
    CHECK(u && gf_tensor_shares_storage(u, t) && gf_tensor_strides(u)[0] == 1 &&
          gf_tensor_strides(u)[1] == 3);
    CHECK(u && it_get(u, 1) == 3 && it_get(u, 4) == 2);
    gf_tensor_release(u);
    gf_tensor_release(tr);
    gf_tensor_release(v);
    gf_tensor_release(t);
}

int main(void) {
    cpu = gf_device_find("cpu");
    if (!cpu) {
        fprintf(stderr, "no cpu device: %s\n", gf_last_error());
        return 1;
    }
    RUN(test_layout);
    RUN(test_export);
    RUN(test_import);
    RUN(test_import_errors);
    RUN(test_round_trip);
    return CHECK_REPORT();
}

#else /* no <dlpack/dlpack.h> for the test: the library must say so */

int main(void) {
    gf_tensor *t = gf_ones(SZ(2), 1, GF_F32, NULL);
    void *m = gf_to_dlpack_versioned(t);
    CHECK(m == NULL);
    CHECK_FAILS(GF_ERR_UNSUPPORTED, "without <dlpack/dlpack.h>");
    gf_tensor_release(t);
    return CHECK_REPORT();
}
#endif
