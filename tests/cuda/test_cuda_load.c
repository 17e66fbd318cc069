/* SPDX-License-Identifier: BSD-3-Clause */
/* test_cuda_load.c — the cuda plugin loads and behaves, GPU or not.
 *
 * Through the ABI alone (the plugin file from GRAFT_TEST_CUDA_PLUGIN): the
 * negotiation refuses another major and malformed requests, the table is
 * complete, init succeeds, and the device count is either zero with a reason
 * naming the CUDA error (a machine without driver or GPU, like CI) or
 * positive with sane properties. The capability answers are checked against
 * op_math.def's kinds and the ABI's dtype rules; they do not depend on a
 * device, which is what lets this run without one.
 *
 * Through libgraft (GRAFT_PLUGINS=cuda,reference): the core reports the same
 * count and reason, and cuda:0 either works (a host round trip) or is a
 * clear NOT_FOUND error. */
#include <graft.h>
#include <math.h>
#include <stdint.h>

#include "check.h"
#include "abi_host.h"

static abi_plugin cu;
static uint32_t n_devices;
static char zero_reason_buf[1024];
static const char *zero_reason = zero_reason_buf;

static void test_negotiation(void) {
    const gfp_plugin *t = (const gfp_plugin *)1;
    gfp_negotiate_request req = {.struct_size = sizeof req, .abi_major = GFP_ABI_MAJOR + 1,
                                 .abi_minor = 0, .host = &cu.host};
    cu.error[0] = '\0';
    CHECK(cu.negotiate(&req, &t) == GFP_ERR_VERSION);
    CHECK(t == NULL);
    CHECK_CONTAINS(abi_error(&cu), "ABI");
    CHECK(cu.negotiate(NULL, &t) == GFP_ERR_INVALID);
    req.abi_major = GFP_ABI_MAJOR;
    req.host = NULL;
    CHECK(cu.negotiate(&req, &t) == GFP_ERR_INVALID);
    req.host = &cu.host;
    req.struct_size = 4;
    CHECK(cu.negotiate(&req, &t) == GFP_ERR_INVALID);
    /* A newer minor of the same major is served. */
    req.struct_size = sizeof req;
    req.abi_minor = GFP_ABI_MINOR + 3;
    CHECK(cu.negotiate(&req, &t) == GFP_OK && t == cu.t);

    const gfp_plugin *p = cu.t;
    CHECK(p->abi_major == GFP_ABI_MAJOR);
    CHECK(p->struct_size >= GFP_PLUGIN_SIZE_V1_0);
    CHECK(p->name && !strcmp(p->name, "cuda"));
    CHECK(p->version && p->version[0]);
    CHECK(p->init && p->device_count && p->device_props && p->device_open && p->buffer_alloc &&
          p->buffer_free && p->buffer_write && p->buffer_read && p->launch);
    /* Optional slots the plugin provides: the defaults would be wrong or slow
     * for device memory. */
    CHECK(p->shutdown && p->device_close && p->buffer_copy && p->buffer_fill && p->synchronize &&
          p->query_op && p->query_extension);
}

/* True when a file whose name contains `name` is mapped into this process
 * (false where /proc cannot be read). */
static int mapped(const char *name) {
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return 0;
    char line[1024];
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) found = strstr(line, name) != NULL;
    fclose(f);
    return found;
}

static void test_devices(void) {
    CHECK(cu.t->init(&cu.ctx) == GFP_OK);
    cu.error[0] = '\0';
    CHECK(cu.t->device_count(cu.ctx, &n_devices) == GFP_OK);
    /* cuBLAS and cuDNN wait for the first device_open (cuda_libs.c): a
     * process that only loads the plugin must not pay for them. */
    CHECK_MSG(!mapped("libcublas"), "libcublas is loaded before any device was opened");
    CHECK_MSG(!mapped("libcudnn"), "libcudnn is loaded before any device was opened");
    gfp_device_props props;
    memset(&props, 0, sizeof props);
    props.struct_size = sizeof props;
    if (n_devices == 0) {
        snprintf(zero_reason_buf, sizeof zero_reason_buf, "%s", cu.error);
        fprintf(stderr, "  no CUDA device here; the plugin says: %s\n", zero_reason);
        CHECK_CONTAINS(zero_reason, "CUDA");
        CHECK_CONTAINS(zero_reason, "cudaError"); /* the runtime's error name */
        CHECK(cu.t->device_props(cu.ctx, 0, &props) == GFP_ERR_NOT_FOUND);
        void *dev = (void *)1;
        CHECK(cu.t->device_open(cu.ctx, 0, &dev) == GFP_ERR_NOT_FOUND);
        CHECK(dev == NULL);
        return;
    }
    for (uint32_t i = 0; i < n_devices; i++) {
        CHECK(cu.t->device_props(cu.ctx, i, &props) == GFP_OK);
        CHECK(!strcmp(props.type, "cuda"));
        CHECK(props.name[0] != '\0');
        CHECK(props.memory_bytes > 0);
        CHECK_CONTAINS(props.driver, "compute capability");
        CHECK(props.dtypes & GFP_DTYPE_BIT(GFP_F16));
        CHECK(props.dtypes & GFP_DTYPE_BIT(GFP_BF16));
        CHECK(props.dtypes & GFP_DTYPE_BIT(GFP_C64));
        CHECK(props.dtypes & GFP_DTYPE_BIT(GFP_C128));
        CHECK((props.flags & GFP_DEVICE_FLAG_HOST_ADDRESSABLE) == 0);
        fprintf(stderr, "  cuda:%u: %s (%s)\n", (unsigned)i, props.name, props.driver);
    }
    /* A device round trip through the ABI: write, fill part, copy, read. */
    void *dev = NULL;
    CHECK(cu.t->device_open(cu.ctx, 0, &dev) == GFP_OK);
    if (!dev) return;
    gfp_buffer a = NULL, b = NULL;
    void *host = (void *)1;
    CHECK(cu.t->buffer_alloc(dev, 4096, &a, &host) == GFP_OK && host == NULL);
    CHECK(cu.t->buffer_alloc(dev, 4096, &b, &host) == GFP_OK);
    if (a && b) {
        unsigned char src[4096], dst[4096];
        for (int i = 0; i < 4096; i++) src[i] = (unsigned char)(i * 7 + 1);
        uint32_t pattern = 0xA1B2C3D4u;
        CHECK(cu.t->buffer_write(dev, a, 0, src, 4096) == GFP_OK);
        CHECK(cu.t->buffer_fill(dev, a, 64, 128, &pattern, 4) == GFP_OK);
        CHECK(cu.t->buffer_copy(dev, a, 0, b, 0, 4096) == GFP_OK);
        CHECK(cu.t->buffer_read(dev, b, 0, dst, 4096) == GFP_OK);
        for (int i = 64; i < 192; i += 4) memcpy(src + i, &pattern, 4);
        CHECK(memcmp(src, dst, 4096) == 0);
        /* Out of range: an error, not a fault. */
        CHECK(cu.t->buffer_read(dev, b, 4000, dst, 200) == GFP_ERR_INVALID);
        /* Out of memory: an error naming the CUDA status. */
        gfp_buffer huge = NULL;
        cu.error[0] = '\0';
        CHECK(cu.t->buffer_alloc(dev, 1ull << 50, &huge, &host) == GFP_ERR_OUT_OF_MEMORY);
        CHECK_CONTAINS(abi_error(&cu), "cudaErrorMemoryAllocation");
        CHECK(cu.t->synchronize(dev) == GFP_OK);
    }
    if (a) cu.t->buffer_free(dev, a);
    if (b) cu.t->buffer_free(dev, b);
    cu.t->device_close(dev);
}

/* ------------------------------------------------------------ capabilities */
static uint32_t ask(uint32_t op, int n_in, const int32_t *in, int n_out, const int32_t *out) {
    gfp_op_query q;
    memset(&q, 0, sizeof q);
    q.struct_size = sizeof q;
    q.op = op;
    q.layout = GFP_LAYOUT_STRIDED;
    q.n_inputs = (uint32_t)n_in;
    q.n_outputs = (uint32_t)n_out;
    for (int i = 0; i < n_in; i++) q.input_dtypes[i] = in[i];
    for (int i = 0; i < n_out; i++) q.output_dtypes[i] = out[i];
    uint32_t s = 77;
    gfp_status st = cu.t->query_op(NULL, &q, &s);
    CHECK_MSG(st == GFP_OK, "query_op of op %u failed: %s", (unsigned)op, cu.error);
    return s;
}
#define ASK1(op, a, y) ask((op), 1, (const int32_t[]){a}, 1, (const int32_t[]){y})
#define ASK2(op, a, b, y) ask((op), 2, (const int32_t[]){a, b}, 1, (const int32_t[]){y})

typedef struct def_op {
    uint32_t op;
    int arity;
    const char *kind;
} def_op;
static const def_op defs[] = {
#define GF_OP_MATH_UNARY(ID, name, kind, f, i) {GFP_OP_##ID, 1, #kind},
#define GF_OP_MATH_BINARY(ID, name, kind, f, i) {GFP_OP_##ID, 2, #kind},
#include "op_math.def"
};

static bool is_complex(int32_t dt) { return dt == GFP_C64 || dt == GFP_C128; }

/* The elementwise ops the reference computes on complex (PyTorch's set:
 * nothing that needs an ordering, no logical ops). */
static bool complex_math(uint32_t op) {
    static const uint32_t ops[] = {
        GFP_OP_NEG,  GFP_OP_EXP,     GFP_OP_LOG,     GFP_OP_LOG1P,      GFP_OP_EXPM1,
        GFP_OP_SQRT, GFP_OP_RSQRT,   GFP_OP_RECIPROCAL, GFP_OP_SQUARE, GFP_OP_SIN,
        GFP_OP_COS,  GFP_OP_TANH,    GFP_OP_SIGMOID, GFP_OP_POW_SCALAR, GFP_OP_ASIN,
        GFP_OP_ACOS, GFP_OP_ATAN,    GFP_OP_ADD,     GFP_OP_SUB,        GFP_OP_MUL,
        GFP_OP_DIV,  GFP_OP_POW};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (ops[i] == op) return true;
    return false;
}

static void test_capabilities(void) {
    const uint32_t S = GFP_SUPPORT_STRIDED, N = GFP_SUPPORT_NONE;
    /* Elementwise: what op_math.def's kind promises, no more. */
    for (size_t i = 0; i < sizeof defs / sizeof defs[0]; i++) {
        const def_op *d = &defs[i];
        bool logical = !strcmp(d->kind, "LOGICAL"), compare = !strcmp(d->kind, "COMPARE");
        bool ints = !strcmp(d->kind, "NUMERIC");
        for (int32_t dt = 0; dt < GFP_DTYPE_COUNT; dt++) {
            bool is_float = dt == GFP_F32 || dt == GFP_F64 || dt == GFP_F16 || dt == GFP_BF16;
            bool is_int = dt == GFP_I32 || dt == GFP_I64;
            uint32_t want, got;
            if (is_complex(dt)) {
                /* The reference's complex rules: its math in the dtype, EQ and
                 * NE to bool; no ordering, no logical ops. */
                bool eqne = d->op == GFP_OP_EQ || d->op == GFP_OP_NE;
                got = d->arity == 1 ? ASK1(d->op, dt, dt) : ASK2(d->op, dt, dt, dt);
                CHECK_MSG(got == (complex_math(d->op) ? S : N), "op %u on complex %d: %u",
                          (unsigned)d->op, (int)dt, got);
                got = d->arity == 1 ? ASK1(d->op, dt, GFP_BOOL) : ASK2(d->op, dt, dt, GFP_BOOL);
                CHECK_MSG(got == (eqne ? S : N), "op %u on complex %d -> bool: %u",
                          (unsigned)d->op, (int)dt, got);
                continue;
            }
            if (logical || compare) {
                want = S; /* any stored dtype in, bool out */
                got = d->arity == 1 ? ASK1(d->op, dt, GFP_BOOL) : ASK2(d->op, dt, dt, GFP_BOOL);
                CHECK_MSG(got == want, "op %u on %d -> bool: %u", (unsigned)d->op, (int)dt, got);
                got = d->arity == 1 ? ASK1(d->op, dt, dt) : ASK2(d->op, dt, dt, dt);
                CHECK_MSG(got == (dt == GFP_BOOL ? S : N), "op %u on %d -> %d: %u",
                          (unsigned)d->op, (int)dt, (int)dt, got);
                continue;
            }
            want = is_float || (ints && is_int) ? S : N;
            got = d->arity == 1 ? ASK1(d->op, dt, dt) : ASK2(d->op, dt, dt, dt);
            CHECK_MSG(got == want, "op %u (%s) on dtype %d: %u, expected %u", (unsigned)d->op,
                      d->kind, (int)dt, got, want);
        }
        /* Mixed dtypes are the core's business (it converts first). */
        if (d->arity == 2 && !logical)
            CHECK(ASK2(d->op, GFP_F32, GFP_F64, compare ? GFP_BOOL : GFP_F32) == N);
    }
    CHECK(ASK2(GFP_OP_LOGICAL_AND, GFP_F16, GFP_I64, GFP_BOOL) == S);
    /* Copies between every pair of real dtypes; into complex from complex,
     * f32, f64, the integers and bool; never out of complex into real (the
     * core asks for the real part or the modulus instead). */
    for (int32_t a = 0; a < GFP_DTYPE_COUNT; a++)
        for (int32_t b = 0; b < GFP_DTYPE_COUNT; b++) {
            bool ok = is_complex(b) ? a != GFP_F16 && a != GFP_BF16 : !is_complex(a);
            CHECK_MSG(ASK1(GFP_OP_COPY, a, b) == (ok ? S : N), "copy %d -> %d", (int)a, (int)b);
        }
    /* Complex beyond the elementwise table: |z| into the part dtype, FILL,
     * elements moved by TRIL, WHERE and the index ops, SUM MEAN PROD,
     * cuBLAS's cgemm/zgemm, cuFFT's three kinds; nothing that orders, no
     * random numbers, no nn ops. */
    CHECK(ASK1(GFP_OP_ABS, GFP_C64, GFP_F32) == S);
    CHECK(ASK1(GFP_OP_ABS, GFP_C128, GFP_F64) == S);
    CHECK(ASK1(GFP_OP_ABS, GFP_C64, GFP_C64) == N);
    CHECK(ASK1(GFP_OP_ABS, GFP_C128, GFP_F32) == N);
    CHECK(ask(GFP_OP_FILL, 0, NULL, 1, (const int32_t[]){GFP_C128}) == S);
    CHECK(ask(GFP_OP_RANDOM, 0, NULL, 1, (const int32_t[]){GFP_C64}) == N);
    CHECK(ASK1(GFP_OP_TRIL, GFP_C128, GFP_C128) == S);
    CHECK(ask(GFP_OP_WHERE, 3, (const int32_t[]){GFP_BOOL, GFP_C64, GFP_C64}, 1,
              (const int32_t[]){GFP_C64}) == S);
    CHECK(ask(GFP_OP_WHERE, 3, (const int32_t[]){GFP_BOOL, GFP_C64, GFP_C128}, 1,
              (const int32_t[]){GFP_C128}) == N);
    const int32_t cxs[] = {GFP_C64, GFP_C128};
    for (int i = 0; i < 2; i++) {
        int32_t c = cxs[i], r = c == GFP_C64 ? GFP_F32 : GFP_F64;
        CHECK(ASK1(GFP_OP_SUM, c, c) == S);
        CHECK(ASK1(GFP_OP_MEAN, c, c) == S);
        CHECK(ASK1(GFP_OP_PROD, c, c) == S);
        CHECK(ASK1(GFP_OP_SUM, c, r) == N);
        CHECK(ASK1(GFP_OP_AMAX, c, c) == N);
        CHECK(ASK1(GFP_OP_VAR, c, c) == N);
        CHECK(ASK2(GFP_OP_MATMUL, c, c, c) == S);
        CHECK(ASK2(GFP_OP_MATMUL, c, r, c) == N);
        CHECK(ask(GFP_OP_INDEX_SELECT, 2, (const int32_t[]){c, GFP_I64}, 1,
                  (const int32_t[]){c}) == S);
        CHECK(ask(GFP_OP_SCATTER_ADD, 2, (const int32_t[]){c, GFP_I64}, 1,
                  (const int32_t[]){c}) == S);
        CHECK(ask(GFP_OP_SOFTMAX, 1, (const int32_t[]){c}, 1, (const int32_t[]){c}) == N);
        CHECK(ask(GFP_OP_CONV2D, 2, (const int32_t[]){c, c}, 1, (const int32_t[]){c}) == N);
        /* FFT: C2C, R2C, C2R of one precision, where this build has cuFFT
         * and it opens (cuda.libs checks it does here). */
#ifdef GRAFT_CUDA_HAVE_CUFFT
        const uint32_t F = S;
#else
        const uint32_t F = N;
#endif
        CHECK(ASK1(GFP_OP_FFT, c, c) == F);
        CHECK(ASK1(GFP_OP_FFT, r, c) == F);
        CHECK(ASK1(GFP_OP_FFT, c, r) == F);
        CHECK(ASK1(GFP_OP_FFT, r, r) == N);
        CHECK(ASK1(GFP_OP_FFT, c, c == GFP_C64 ? GFP_C128 : GFP_C64) == N);
    }
    CHECK(ask(GFP_OP_WHERE, 3, (const int32_t[]){GFP_BOOL, GFP_BF16, GFP_BF16}, 1,
              (const int32_t[]){GFP_BF16}) == S);
    CHECK(ask(GFP_OP_WHERE, 3, (const int32_t[]){GFP_I32, GFP_F32, GFP_F32}, 1,
              (const int32_t[]){GFP_F32}) == N);
    CHECK(ask(GFP_OP_RANDOM, 0, NULL, 1, (const int32_t[]){GFP_F16}) == S);
    /* matmul: f32, f64, f16, bf16 through cuBLAS, i32 and i64 on own kernels. */
    const int32_t mm[] = {GFP_F32, GFP_F64, GFP_F16, GFP_BF16, GFP_I32, GFP_I64};
    for (int i = 0; i < 6; i++) CHECK(ASK2(GFP_OP_MATMUL, mm[i], mm[i], mm[i]) == S);
    CHECK(ASK2(GFP_OP_MATMUL, GFP_BOOL, GFP_BOOL, GFP_BOOL) == N);
    CHECK(ASK2(GFP_OP_MATMUL, GFP_F16, GFP_F32, GFP_F32) == N);
    /* Reductions: the reference's dtype rules. */
    CHECK(ASK1(GFP_OP_SUM, GFP_F32, GFP_F32) == S);
    CHECK(ASK1(GFP_OP_SUM, GFP_I64, GFP_I64) == S);
    /* f16 / bf16 reductions, norms, conv and pooling through f32 copies;
     * not with f16 and bf16 mixed, nor the accumulating index ops. */
    CHECK(ASK1(GFP_OP_SUM, GFP_F16, GFP_F16) == S);
    CHECK(ASK1(GFP_OP_MEAN, GFP_BF16, GFP_BF16) == S);
    CHECK(ASK1(GFP_OP_SUM, GFP_F16, GFP_BF16) == N);
    CHECK(ask(GFP_OP_CONV2D, 3, (const int32_t[]){GFP_BF16, GFP_BF16, GFP_BF16}, 1,
              (const int32_t[]){GFP_BF16}) == S);
    CHECK(ask(GFP_OP_MAX_POOL2D, 1, (const int32_t[]){GFP_F16}, 2,
              (const int32_t[]){GFP_F16, GFP_I64}) == S);
    CHECK(ask(GFP_OP_BATCH_NORM, 5, (const int32_t[]){GFP_F16, GFP_F16, GFP_F16, GFP_F16, GFP_F16},
              3, (const int32_t[]){GFP_F16, GFP_F16, GFP_F16}) == S);
    CHECK(ask(GFP_OP_SCATTER_ADD, 2, (const int32_t[]){GFP_F16, GFP_I64}, 1,
              (const int32_t[]){GFP_F16}) == N);
    CHECK(ASK1(GFP_OP_MEAN, GFP_I32, GFP_I32) == N);
    CHECK(ASK1(GFP_OP_AMAX, GFP_BOOL, GFP_BOOL) == S);
    CHECK(ask(GFP_OP_MAX_DIM, 1, (const int32_t[]){GFP_F64}, 2,
              (const int32_t[]){GFP_F64, GFP_I64}) == S);
    CHECK(ask(GFP_OP_MAX_DIM, 1, (const int32_t[]){GFP_F64}, 2,
              (const int32_t[]){GFP_F64, GFP_I32}) == N);
    /* Normalisation, convolution, pooling: f32 and f64 (16-bit above). */
    CHECK(ask(GFP_OP_LAYER_NORM, 3, (const int32_t[]){GFP_F32, -1, -1}, 3,
              (const int32_t[]){GFP_F32, GFP_F32, GFP_F32}) == S);
    CHECK(ask(GFP_OP_CONV2D, 3, (const int32_t[]){GFP_F64, GFP_F64, -1}, 1,
              (const int32_t[]){GFP_F64}) == S);
    CHECK(ask(GFP_OP_CONV2D, 2, (const int32_t[]){GFP_F32, GFP_F32}, 1,
              (const int32_t[]){GFP_F32}) == S);
    CHECK(ask(GFP_OP_CONV2D_BACKWARD_WEIGHT, 2, (const int32_t[]){GFP_I32, GFP_I32}, 1,
              (const int32_t[]){GFP_I32}) == N);
    CHECK(ask(GFP_OP_MAX_POOL2D, 1, (const int32_t[]){GFP_F32}, 2,
              (const int32_t[]){GFP_F32, GFP_I64}) == S);
    CHECK(ask(GFP_OP_INDEX_SELECT, 2, (const int32_t[]){GFP_F16, GFP_I64}, 1,
              (const int32_t[]){GFP_F16}) == S);
    CHECK(ask(GFP_OP_SCATTER_ADD, 2, (const int32_t[]){GFP_BOOL, GFP_I64}, 1,
              (const int32_t[]){GFP_BOOL}) == N);
    /* SOFTMAX_BACKWARD, LOG_SOFTMAX_BACKWARD: grad_y, y -> grad_x of one
     * float dtype (16-bit through f32 copies). */
    const uint32_t sb[2] = {GFP_OP_SOFTMAX_BACKWARD, GFP_OP_LOG_SOFTMAX_BACKWARD};
    for (int i = 0; i < 2; i++) {
        CHECK(ASK2(sb[i], GFP_F32, GFP_F32, GFP_F32) == S);
        CHECK(ASK2(sb[i], GFP_F64, GFP_F64, GFP_F64) == S);
        CHECK(ASK2(sb[i], GFP_BF16, GFP_BF16, GFP_BF16) == S);
        CHECK(ASK2(sb[i], GFP_F32, GFP_F64, GFP_F32) == N);
        CHECK(ASK2(sb[i], GFP_I32, GFP_I32, GFP_I32) == N);
    }
    /* BATCH_NORM_BACKWARD, LAYER_NORM_BACKWARD: grad_y, x, mean, rstd,
     * weight or none -> grad_x, grad_weight, grad_bias, one float dtype. */
    const uint32_t nb[2] = {GFP_OP_BATCH_NORM_BACKWARD, GFP_OP_LAYER_NORM_BACKWARD};
    for (int i = 0; i < 2; i++) {
        for (int k = 0; k < 3; k++) {
            int32_t t = k == 0 ? GFP_F32 : k == 1 ? GFP_F64 : GFP_F16;
            CHECK(ask(nb[i], 5, (const int32_t[]){t, t, t, t, t}, 3,
                      (const int32_t[]){t, t, t}) == S);
            CHECK(ask(nb[i], 5, (const int32_t[]){t, t, t, t, -1}, 3,
                      (const int32_t[]){t, t, t}) == S);
        }
        CHECK(ask(nb[i], 5, (const int32_t[]){GFP_F32, GFP_F64, GFP_F32, GFP_F32, -1}, 3,
                  (const int32_t[]){GFP_F32, GFP_F32, GFP_F32}) == N);
        CHECK(ask(nb[i], 5, (const int32_t[]){GFP_I32, GFP_I32, GFP_I32, GFP_I32, -1}, 3,
                  (const int32_t[]){GFP_I32, GFP_I32, GFP_I32}) == N);
    }
    /* LSTM_CELL and its backward (kernels/cu_rnn.cu): f32 or f64, dy optional. */
    for (int k = 0; k < 2; k++) {
        int32_t t = k ? GFP_F64 : GFP_F32;
        CHECK(ask(GFP_OP_LSTM_CELL, 3, (const int32_t[]){t, t, t}, 4,
                  (const int32_t[]){t, t, t, t}) == S);
        CHECK(ask(GFP_OP_LSTM_CELL_BACKWARD, 6, (const int32_t[]){t, t, t, t, t, t}, 2,
                  (const int32_t[]){t, t}) == S);
        CHECK(ask(GFP_OP_LSTM_CELL_BACKWARD, 6, (const int32_t[]){t, t, t, t, t, -1}, 2,
                  (const int32_t[]){t, t}) == S);
        CHECK(ask(GFP_OP_LSTM_CELL_BACKWARD, 5, (const int32_t[]){t, t, t, t, t}, 2,
                  (const int32_t[]){t, t}) == S);
    }
    CHECK(ask(GFP_OP_LSTM_CELL, 3, (const int32_t[]){GFP_F16, GFP_F16, GFP_F16}, 4,
              (const int32_t[]){GFP_F16, GFP_F16, GFP_F16, GFP_F16}) == N);
    CHECK(ask(GFP_OP_LSTM_CELL_BACKWARD, 5, (const int32_t[]){GFP_F32, -1, GFP_F32, GFP_F32, GFP_F32},
              2, (const int32_t[]){GFP_F32, GFP_F32}) == N);
    /* ADAM_UPDATE: seven tensors of f32 or f64 (kernels/cu_optim.cu). */
    const int32_t fl[2] = {GFP_F32, GFP_F64};
    for (int i = 0; i < 2; i++) {
        int32_t t = fl[i];
        CHECK(ask(GFP_OP_ADAM_UPDATE, 4, (const int32_t[]){t, t, t, t}, 3,
                  (const int32_t[]){t, t, t}) == S);
    }
    CHECK(ask(GFP_OP_ADAM_UPDATE, 4, (const int32_t[]){GFP_F16, GFP_F16, GFP_F16, GFP_F16}, 3,
              (const int32_t[]){GFP_F16, GFP_F16, GFP_F16}) == N);
    CHECK(ask(GFP_OP_ADAM_UPDATE, 4, (const int32_t[]){GFP_F32, GFP_F64, GFP_F32, GFP_F32}, 3,
              (const int32_t[]){GFP_F32, GFP_F32, GFP_F32}) == N);
    /* Wrong counts and unknown ops: not provided, no failure. */
    CHECK(ASK1(GFP_OP_ADD, GFP_F32, GFP_F32) == N);
    CHECK(ASK1(999, GFP_F32, GFP_F32) == N);
    /* Malformed queries: errors with a message. */
    gfp_op_query q;
    memset(&q, 0, sizeof q);
    q.struct_size = 8;
    uint32_t s = 77;
    CHECK(cu.t->query_op(NULL, &q, &s) == GFP_ERR_INVALID && s == N);
    q.struct_size = sizeof q;
    CHECK(cu.t->query_op(NULL, &q, NULL) == GFP_ERR_INVALID);
}

/* ------------------------------------------------------------ through libgraft */
/* The graph slots (cuda_graph.c: CUDA graphs by stream capture) are in the
 * table; their argument checks need no device. On a GPU,
 * autograd.test_graph_replay_cuda replays training steps through them. */
static void test_graph_slots(void) {
    CHECK(cu.t->struct_size >= GFP_PLUGIN_SIZE_V1_3);
    CHECK(cu.t->graph_create && cu.t->graph_launch && cu.t->graph_destroy);
    if (!cu.t->graph_create || !cu.t->graph_launch || !cu.t->graph_destroy) return;
    void *g = (void *)1;
    cu.error[0] = '\0';
    CHECK(cu.t->graph_create(NULL, NULL, 0, &g) == GFP_ERR_INVALID && g == NULL);
    CHECK_CONTAINS(abi_error(&cu), "graph_create");
    CHECK(cu.t->graph_launch(NULL, NULL) == GFP_ERR_INVALID);
    cu.t->graph_destroy(NULL, NULL); /* nothing to do, no fault */
}

static void test_core(void) {
    CHECK(gf_init() == GF_OK);
    bool seen = false;
    for (int i = 0; i < gf_plugin_count(); i++) {
        gf_plugin_info info;
        if (gf_plugin_get_info(i, &info) != GF_OK || strcmp(info.name, "cuda") != 0) continue;
        seen = true;
        CHECK(info.loaded);
        CHECK(info.abi_major == GFP_ABI_MAJOR);
        CHECK(info.device_count == (int)n_devices);
        if (n_devices == 0) {
            CHECK_CONTAINS(info.reason, "no devices");
            CHECK_CONTAINS(info.reason, "cudaError");
        }
    }
    CHECK_MSG(seen, "the core did not find the cuda plugin");
    gf_clear_error();
    gf_device *dev = gf_device_find("cuda:0");
    if (n_devices == 0) {
        CHECK(dev == NULL);
        CHECK(gf_last_status() == GF_ERR_NOT_FOUND);
        CHECK_CONTAINS(gf_last_error(), "cuda");
    } else if (dev) {
        gf_device_info info;
        CHECK(gf_device_get_info(dev, &info) == GF_OK);
        CHECK(!strcmp(info.type, "cuda") && !info.host_addressable);
        CHECK_CONTAINS(info.driver, "compute capability");
        const float v[6] = {1, -2, 3.5f, NAN, INFINITY, -0.0f};
        gf_tensor *t = gf_from_data(v, (const int64_t[]){2, 3}, 2, GF_F32, dev);
        gf_tensor *back = gf_to_device(t, gf_device_find("cpu:0"));
        float w[6] = {0};
        CHECK(back && gf_tensor_to_host(back, w, sizeof w) == GF_OK);
        CHECK(memcmp(v, w, sizeof v) == 0);
        gf_tensor_release(t);
        gf_tensor_release(back);
    }
    CHECK(gf_shutdown() == GF_OK);
}

int main(void) {
    if (abi_load_env(&cu, "GRAFT_TEST_CUDA_PLUGIN") != 0) {
        CHECK_MSG(0, "the cuda plugin could not be loaded (see above): it must load on any "
                  "machine, with or without the NVIDIA driver");
        return CHECK_REPORT();
    }
    RUN(test_negotiation);
    RUN(test_devices);
    RUN(test_capabilities);
    RUN(test_graph_slots);
    if (cu.t->shutdown) cu.t->shutdown(cu.ctx);
    RUN(test_core);
    return CHECK_REPORT();
}
