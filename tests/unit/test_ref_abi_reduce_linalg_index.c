/* SPDX-License-Identifier: BSD-3-Clause */
/* test_ref_abi_reduce_linalg_index.c — the reference plugin's reductions, matmul,
 * normalisations and indexing, launched straight through the plugin ABI (no
 * core in between) on hand-made descriptors, against values computed by hand
 * or with plain formulas here.
 *
 * Usage: test_ref_abi_reduce_linalg_index [path/to/libgraft-reference.so]
 * Without an argument the path comes from GRAFT_TEST_REFERENCE_PLUGIN. */
#include "ref_direct.h"

/* ------------------------------------------------------------------ tensors */
#define MAX_BUFFERS 512
static gfp_buffer buffers[MAX_BUFFERS];
static int n_buffers;

static void encode(int32_t dtype, double v, unsigned char *out) {
    switch (dtype) {
    case GFP_F32: {
        float f = (float)v;
        memcpy(out, &f, 4);
        break;
    }
    case GFP_F64: memcpy(out, &v, 8); break;
    case GFP_I32: {
        int32_t i = (int32_t)v;
        memcpy(out, &i, 4);
        break;
    }
    case GFP_I64: {
        int64_t i = (int64_t)v;
        memcpy(out, &i, 8);
        break;
    }
    default: out[0] = v != 0; break;
    }
}

/* A contiguous tensor in a fresh buffer, holding vals (NULL: zeros) in
 * row-major order. */
static gfp_tensor tensor(int32_t dtype, int rank, const int64_t *sizes, const double *vals) {
    gfp_tensor t = rd_desc(dtype, rank, sizes, NULL);
    int64_t n = rd_numel(&t);
    uint64_t nbytes = (uint64_t)(n > 0 ? n : 1) * rd_esize(dtype);
    void *host_ptr = NULL;
    if (n_buffers == MAX_BUFFERS ||
        P->buffer_alloc(dev, nbytes, &t.buffer, &host_ptr) != GFP_OK) {
        fprintf(stderr, "buffer_alloc failed: %s\n", last_error);
        exit(2);
    }
    buffers[n_buffers++] = t.buffer;
    unsigned char *bytes = calloc((size_t)nbytes, 1);
    for (int64_t i = 0; vals && i < n; i++) encode(dtype, vals[i], bytes + i * rd_esize(dtype));
    CHECK(P->buffer_write(dev, t.buffer, 0, bytes, nbytes) == GFP_OK);
    free(bytes);
    return t;
}

/* An i64 tensor holding exact values (beyond double's 2^53). */
static gfp_tensor tensor_i64(int rank, const int64_t *sizes, const int64_t *vals) {
    gfp_tensor t = tensor(GFP_I64, rank, sizes, NULL);
    CHECK(P->buffer_write(dev, t.buffer, 0, vals, (uint64_t)rd_numel(&t) * 8) == GFP_OK);
    return t;
}

/* Another view of base's buffer. */
static gfp_tensor view(const gfp_tensor *base, int rank, const int64_t *sizes,
                       const int64_t *strides) {
    gfp_tensor t = *base;
    t.rank = rank;
    for (int d = 0; d < rank; d++) {
        t.sizes[d] = sizes[d];
        t.strides[d] = strides[d];
    }
    return t;
}

/* Byte offset of t's element number flat (row-major over its sizes). */
static uint64_t byte_of(const gfp_tensor *t, int64_t flat) {
    return (uint64_t)rd_elem(t, flat) * rd_esize(t->dtype);
}

static double at(const gfp_tensor *t, int64_t flat) {
    unsigned char b[8] = {0};
    if (P->buffer_read(dev, t->buffer, byte_of(t, flat), b, rd_esize(t->dtype)) != GFP_OK)
        CHECK_MSG(0, "buffer_read failed: %s", last_error);
    switch (t->dtype) {
    case GFP_F32: {
        float f;
        memcpy(&f, b, 4);
        return f;
    }
    case GFP_F64: {
        double v;
        memcpy(&v, b, 8);
        return v;
    }
    case GFP_I32: {
        int32_t i;
        memcpy(&i, b, 4);
        return i;
    }
    case GFP_I64: {
        int64_t i;
        memcpy(&i, b, 8);
        return (double)i;
    }
    default: return b[0];
    }
}

static int64_t at_i64(const gfp_tensor *t, int64_t flat) {
    int64_t v = 0;
    if (t->dtype == GFP_I32) return (int64_t)at(t, flat);
    if (P->buffer_read(dev, t->buffer, byte_of(t, flat), &v, 8) != GFP_OK)
        CHECK_MSG(0, "buffer_read failed: %s", last_error);
    return v;
}

/* Every element of t, row-major, against want[]. */
static void expect_(int line, const char *what, const gfp_tensor *t, const double *want,
                    double tol) {
    for (int64_t i = 0; i < rd_numel(t); i++) {
        double got = at(t, i);
        CHECK_MSG(check_close_(got, want[i], tol, tol), "line %d: %s[%lld] = %.17g, expected %.17g",
                  line, what, (long long)i, got, want[i]);
    }
}
#define EXPECT(t, tol, ...) expect_(__LINE__, #t, &(t), (const double[]){__VA_ARGS__}, (tol))

#define SIZES(...) (const int64_t[]){__VA_ARGS__}
#define VALS(...) (const double[]){__VA_ARGS__}

#define DTYPES(...) (const int32_t[]){__VA_ARGS__}

static gfp_reduce_params reduce_params(uint32_t dims, double correction) {
    gfp_reduce_params p = {.struct_size = sizeof p, .dims = dims, .correction = correction};
    return p;
}

/* One-input, one-output reduction. */
static gfp_status reduce(uint32_t op, const gfp_tensor *x, const gfp_tensor *y, uint32_t dims,
                         double correction) {
    gfp_reduce_params p = reduce_params(dims, correction);
    return rd_launch(op, TS(x), 1, TS(y), 1, &p);
}

/* ------------------------------------------------------------------ reductions */
static void test_reduce_dims(void) {
    const double v6[] = {1, 2, 3, 4, 5, 6};
    for (int32_t dt = GFP_F32; dt <= GFP_F64; dt++) {
        gfp_tensor x = tensor(dt, 2, SIZES(2, 3), v6); /* [[1,2,3],[4,5,6]] */
        gfp_tensor cols = tensor(dt, 2, SIZES(1, 3), NULL), rows = tensor(dt, 2, SIZES(2, 1), NULL);
        gfp_tensor all = tensor(dt, 2, SIZES(1, 1), NULL), none = tensor(dt, 2, SIZES(2, 3), NULL);
        CHECK(reduce(GFP_OP_SUM, &x, &cols, 1, 0) == GFP_OK);
        EXPECT(cols, 1e-12, 5, 7, 9);
        CHECK(reduce(GFP_OP_SUM, &x, &rows, 2, 0) == GFP_OK);
        EXPECT(rows, 1e-12, 6, 15);
        CHECK(reduce(GFP_OP_SUM, &x, &all, 3, 0) == GFP_OK);
        EXPECT(all, 1e-12, 21);
        CHECK(reduce(GFP_OP_SUM, &x, &none, 0, 0) == GFP_OK); /* no dim reduced: a copy */
        EXPECT(none, 1e-12, 1, 2, 3, 4, 5, 6);
        CHECK(reduce(GFP_OP_MEAN, &x, &cols, 1, 0) == GFP_OK);
        EXPECT(cols, 1e-12, 2.5, 3.5, 4.5);
        CHECK(reduce(GFP_OP_MEAN, &x, &all, 3, 0) == GFP_OK);
        EXPECT(all, 1e-12, 3.5);
        CHECK(reduce(GFP_OP_PROD, &x, &rows, 2, 0) == GFP_OK);
        EXPECT(rows, 1e-12, 6, 120);
        CHECK(reduce(GFP_OP_PROD, &x, &all, 3, 0) == GFP_OK);
        EXPECT(all, 1e-12, 720);
        CHECK(reduce(GFP_OP_AMAX, &x, &cols, 1, 0) == GFP_OK);
        EXPECT(cols, 0, 4, 5, 6);
        CHECK(reduce(GFP_OP_AMIN, &x, &rows, 2, 0) == GFP_OK);
        EXPECT(rows, 0, 1, 4);
    }
    /* Dims 0 and 2 of a [2,2,2]: y[0,j,0] = sum over i, k of x[i,j,k]. */
    gfp_tensor x3 = tensor(GFP_F64, 3, SIZES(2, 2, 2), VALS(1, 2, 3, 4, 5, 6, 7, 8));
    gfp_tensor y3 = tensor(GFP_F64, 3, SIZES(1, 2, 1), NULL);
    CHECK(reduce(GFP_OP_SUM, &x3, &y3, 5, 0) == GFP_OK);
    EXPECT(y3, 1e-12, 1 + 2 + 5 + 6, 3 + 4 + 7 + 8);
    /* A 0-dim input reduces nothing. */
    gfp_tensor s = tensor(GFP_F32, 0, NULL, VALS(2.5)), sy = tensor(GFP_F32, 0, NULL, NULL);
    CHECK(reduce(GFP_OP_SUM, &s, &sy, 0, 0) == GFP_OK);
    EXPECT(sy, 0, 2.5);
    /* Compensated double accumulation: 1e8 + 1 - 1e8 is 1, not 0 as in float. */
    gfp_tensor c = tensor(GFP_F32, 1, SIZES(3), VALS(1e8, 1, -1e8)),
               cy = tensor(GFP_F32, 1, SIZES(1), NULL);
    CHECK(reduce(GFP_OP_SUM, &c, &cy, 1, 0) == GFP_OK);
    EXPECT(cy, 0, 1);
    /* ... and in f64 the compensation keeps the 1 that 1e16 + 1 rounds away. */
    gfp_tensor c64 = tensor(GFP_F64, 1, SIZES(3), VALS(1e16, 1, -1e16)),
               cy64 = tensor(GFP_F64, 1, SIZES(1), NULL);
    CHECK(reduce(GFP_OP_SUM, &c64, &cy64, 1, 0) == GFP_OK);
    EXPECT(cy64, 0, 1);
}

static void test_reduce_strided(void) {
    /* Storage [[1,2],[3,4],[5,6]] seen transposed: x = [[1,3,5],[2,4,6]]. */
    gfp_tensor base = tensor(GFP_F32, 2, SIZES(3, 2), VALS(1, 2, 3, 4, 5, 6));
    gfp_tensor x = view(&base, 2, SIZES(2, 3), SIZES(1, 2));
    /* The output is strided too: [2,1] with stride 2, gaps hold a sentinel. */
    gfp_tensor ybase = tensor(GFP_F32, 1, SIZES(4), VALS(-7, -7, -7, -7));
    gfp_tensor y = view(&ybase, 2, SIZES(2, 1), SIZES(2, 1));
    CHECK(reduce(GFP_OP_SUM, &x, &y, 2, 0) == GFP_OK);
    EXPECT(y, 1e-6, 9, 12);
    EXPECT(ybase, 1e-6, 9, -7, 12, -7);
    CHECK(reduce(GFP_OP_VAR, &x, &y, 2, 1) == GFP_OK);
    EXPECT(y, 1e-6, 4, 4);
    gfp_tensor cols = tensor(GFP_F32, 2, SIZES(1, 3), NULL);
    CHECK(reduce(GFP_OP_AMAX, &x, &cols, 1, 0) == GFP_OK);
    EXPECT(cols, 0, 2, 4, 6);
    CHECK(reduce(GFP_OP_MEAN, &x, &cols, 1, 0) == GFP_OK);
    EXPECT(cols, 1e-6, 1.5, 3.5, 5.5);
    /* A broadcast (stride 0) input dim: [[1,2,3],[1,2,3]]. */
    gfp_tensor row = tensor(GFP_F64, 1, SIZES(3), VALS(1, 2, 3));
    gfp_tensor b = view(&row, 2, SIZES(2, 3), SIZES(0, 1));
    gfp_tensor by = tensor(GFP_F64, 2, SIZES(1, 3), NULL);
    CHECK(reduce(GFP_OP_SUM, &b, &by, 1, 0) == GFP_OK);
    EXPECT(by, 0, 2, 4, 6);
}

static void test_reduce_empty(void) {
    gfp_tensor x = tensor(GFP_F32, 2, SIZES(2, 0), NULL);
    gfp_tensor y = tensor(GFP_F32, 2, SIZES(2, 1), VALS(5, 5));
    CHECK(reduce(GFP_OP_SUM, &x, &y, 2, 0) == GFP_OK);
    EXPECT(y, 0, 0, 0);
    CHECK(reduce(GFP_OP_PROD, &x, &y, 2, 0) == GFP_OK);
    EXPECT(y, 0, 1, 1);
    CHECK(reduce(GFP_OP_MEAN, &x, &y, 2, 0) == GFP_OK);
    EXPECT(y, 0, NAN, NAN);
    CHECK(reduce(GFP_OP_VAR, &x, &y, 2, 1) == GFP_OK);
    EXPECT(y, 0, NAN, NAN);
    CHECK(reduce(GFP_OP_LOGSUMEXP, &x, &y, 2, 0) == GFP_OK);
    EXPECT(y, 0, -INFINITY, -INFINITY);
    CHECK(reduce(GFP_OP_AMAX, &x, &y, 2, 0) == GFP_ERR_INVALID);
    CHECK_CONTAINS(error_text(), "amax");
    CHECK_CONTAINS(error_text(), "zero elements");
    CHECK(reduce(GFP_OP_AMIN, &x, &y, 3, 0) == GFP_ERR_INVALID);
    CHECK_CONTAINS(error_text(), "amin");
    gfp_tensor idx = tensor(GFP_I64, 2, SIZES(2, 1), NULL);
    gfp_reduce_params p = reduce_params(2, 0);
    CHECK(rd_launch(GFP_OP_MAX_DIM, TS(&x), 1, TS(&y, &idx), 2, &p) == GFP_ERR_INVALID);
    CHECK_CONTAINS(error_text(), "max_dim");
    /* Reducing the non-empty dim leaves an empty output: nothing to do. */
    gfp_tensor e = tensor(GFP_F32, 2, SIZES(1, 0), NULL);
    CHECK(reduce(GFP_OP_SUM, &x, &e, 1, 0) == GFP_OK);
    gfp_tensor xi = tensor(GFP_I64, 1, SIZES(0), NULL), yi = tensor(GFP_I64, 1, SIZES(1), VALS(7));
    CHECK(reduce(GFP_OP_SUM, &xi, &yi, 1, 0) == GFP_OK);
    CHECK(at_i64(&yi, 0) == 0);
    CHECK(reduce(GFP_OP_PROD, &xi, &yi, 1, 0) == GFP_OK);
    CHECK(at_i64(&yi, 0) == 1);
}

static void test_reduce_int_bool_nan(void) {
    gfp_tensor xf = tensor(GFP_F32, 2, SIZES(2, 3), VALS(1, NAN, 3, 4, 5, -6));
    gfp_tensor yf = tensor(GFP_F32, 2, SIZES(2, 1), NULL);
    CHECK(reduce(GFP_OP_AMAX, &xf, &yf, 2, 0) == GFP_OK);
    EXPECT(yf, 0, NAN, 5);
    CHECK(reduce(GFP_OP_AMIN, &xf, &yf, 2, 0) == GFP_OK);
    EXPECT(yf, 0, NAN, -6);

    gfp_tensor xi = tensor(GFP_I32, 2, SIZES(2, 2), VALS(3, -7, 2, 9));
    gfp_tensor yi = tensor(GFP_I32, 2, SIZES(1, 2), NULL);
    CHECK(reduce(GFP_OP_AMAX, &xi, &yi, 1, 0) == GFP_OK);
    EXPECT(yi, 0, 3, 9);
    CHECK(reduce(GFP_OP_AMIN, &xi, &yi, 1, 0) == GFP_OK);
    EXPECT(yi, 0, 2, -7);
    CHECK(reduce(GFP_OP_SUM, &xi, &yi, 1, 0) == GFP_OK);
    EXPECT(yi, 0, 5, 2);
    /* i32 keeps its dtype and wraps like two's complement hardware. */
    gfp_tensor big = tensor(GFP_I32, 1, SIZES(2), VALS(2147483647, 1)),
               one = tensor(GFP_I32, 1, SIZES(1), NULL);
    CHECK(reduce(GFP_OP_SUM, &big, &one, 1, 0) == GFP_OK);
    CHECK(at_i64(&one, 0) == INT32_MIN);
    /* i64 sums are exact beyond 2^53, where a double accumulator rounds. */
    gfp_tensor xl = tensor_i64(1, SIZES(3), (const int64_t[]){INT64_C(9007199254740992), 1, 2});
    gfp_tensor yl = tensor(GFP_I64, 1, SIZES(1), NULL);
    CHECK(reduce(GFP_OP_SUM, &xl, &yl, 1, 0) == GFP_OK);
    CHECK(at_i64(&yl, 0) == INT64_C(9007199254740995));
    gfp_tensor xp = tensor(GFP_I64, 1, SIZES(3), VALS(3, -4, 5));
    CHECK(reduce(GFP_OP_PROD, &xp, &yl, 1, 0) == GFP_OK);
    CHECK(at_i64(&yl, 0) == -60);

    /* bool amax / amin are any / all. */
    gfp_tensor xb = tensor(GFP_BOOL, 2, SIZES(2, 2), VALS(1, 0, 0, 0));
    gfp_tensor rows = tensor(GFP_BOOL, 2, SIZES(2, 1), NULL),
               cols = tensor(GFP_BOOL, 2, SIZES(1, 2), NULL);
    CHECK(reduce(GFP_OP_AMAX, &xb, &rows, 2, 0) == GFP_OK);
    EXPECT(rows, 0, 1, 0);
    CHECK(reduce(GFP_OP_AMIN, &xb, &cols, 1, 0) == GFP_OK);
    EXPECT(cols, 0, 0, 0);
    gfp_tensor xb2 = tensor(GFP_BOOL, 2, SIZES(2, 2), VALS(1, 1, 1, 0));
    CHECK(reduce(GFP_OP_AMIN, &xb2, &rows, 2, 0) == GFP_OK);
    EXPECT(rows, 0, 1, 0);
}

static gfp_status by_dim(uint32_t op, const gfp_tensor *x, const gfp_tensor *v, const gfp_tensor *i,
                         uint32_t dims) {
    gfp_reduce_params p = reduce_params(dims, 0);
    return rd_launch(op, TS(x), 1, TS(v, i), 2, &p);
}

static void test_max_min_dim(void) {
    gfp_tensor x = tensor(GFP_F32, 2, SIZES(2, 3), VALS(3, 1, 3, 0, 2, 2));
    gfp_tensor v = tensor(GFP_F32, 2, SIZES(2, 1), NULL), i = tensor(GFP_I64, 2, SIZES(2, 1), NULL);
    CHECK(by_dim(GFP_OP_MAX_DIM, &x, &v, &i, 2) == GFP_OK);
    EXPECT(v, 0, 3, 2);
    EXPECT(i, 0, 0, 1); /* ties: the first index wins */
    CHECK(by_dim(GFP_OP_MIN_DIM, &x, &v, &i, 2) == GFP_OK);
    EXPECT(v, 0, 1, 0);
    EXPECT(i, 0, 1, 0);
    /* Along dim 0. */
    gfp_tensor x0 = tensor(GFP_F64, 2, SIZES(2, 2), VALS(1, 5, 7, 5));
    gfp_tensor v0 = tensor(GFP_F64, 2, SIZES(1, 2), NULL),
               i0 = tensor(GFP_I64, 2, SIZES(1, 2), NULL);
    CHECK(by_dim(GFP_OP_MAX_DIM, &x0, &v0, &i0, 1) == GFP_OK);
    EXPECT(v0, 0, 7, 5);
    EXPECT(i0, 0, 1, 0);
    /* NaN is the extreme for both, and the first NaN wins. */
    gfp_tensor xn = tensor(GFP_F32, 1, SIZES(4), VALS(1, NAN, 5, NAN));
    gfp_tensor vn = tensor(GFP_F32, 1, SIZES(1), NULL), in = tensor(GFP_I64, 1, SIZES(1), NULL);
    CHECK(by_dim(GFP_OP_MAX_DIM, &xn, &vn, &in, 1) == GFP_OK);
    EXPECT(vn, 0, NAN);
    EXPECT(in, 0, 1);
    CHECK(by_dim(GFP_OP_MIN_DIM, &xn, &vn, &in, 1) == GFP_OK);
    EXPECT(vn, 0, NAN);
    EXPECT(in, 0, 1);
    /* i64 values beyond 2^53 compare exactly. */
    gfp_tensor xl = tensor_i64(
        1, SIZES(3), (const int64_t[]){INT64_C(9007199254740992), INT64_C(9007199254740993), 0});
    gfp_tensor vl = tensor(GFP_I64, 1, SIZES(1), NULL), il = tensor(GFP_I64, 1, SIZES(1), NULL);
    CHECK(by_dim(GFP_OP_MAX_DIM, &xl, &vl, &il, 1) == GFP_OK);
    CHECK(at_i64(&vl, 0) == INT64_C(9007199254740993));
    CHECK(at_i64(&il, 0) == 1);
    /* Exactly one dim. */
    gfp_tensor v2 = tensor(GFP_F32, 2, SIZES(1, 1), NULL),
               i2 = tensor(GFP_I64, 2, SIZES(1, 1), NULL);
    CHECK(by_dim(GFP_OP_MAX_DIM, &x, &v2, &i2, 3) == GFP_ERR_INVALID);
    CHECK_CONTAINS(error_text(), "exactly one");
    /* Indices must be i64. */
    gfp_tensor i32 = tensor(GFP_I32, 2, SIZES(2, 1), NULL);
    CHECK(by_dim(GFP_OP_MAX_DIM, &x, &v, &i32, 2) == GFP_ERR_UNSUPPORTED);
    CHECK_CONTAINS(error_text(), "i32");
}

static void test_var(void) {
    for (int32_t dt = GFP_F32; dt <= GFP_F64; dt++) {
        gfp_tensor x = tensor(dt, 1, SIZES(4), VALS(1, 2, 3, 4)), y = tensor(dt, 1, SIZES(1), NULL);
        /* mean 2.5; squared deviations 2.25 + 0.25 + 0.25 + 2.25 = 5 */
        CHECK(reduce(GFP_OP_VAR, &x, &y, 1, 0) == GFP_OK);
        EXPECT(y, 1e-7, 5.0 / 4);
        CHECK(reduce(GFP_OP_VAR, &x, &y, 1, 1) == GFP_OK);
        EXPECT(y, 1e-7, 5.0 / 3);
    }
    gfp_tensor y = tensor(GFP_F64, 1, SIZES(1), NULL);
    gfp_tensor one = tensor(GFP_F64, 1, SIZES(1), VALS(3));
    CHECK(reduce(GFP_OP_VAR, &one, &y, 1, 1) == GFP_OK); /* 0 / 0 */
    EXPECT(y, 0, NAN);
    gfp_tensor two = tensor(GFP_F64, 1, SIZES(2), VALS(1, 3));
    CHECK(reduce(GFP_OP_VAR, &two, &y, 1, 2) == GFP_OK); /* 2 / 0 */
    EXPECT(y, 0, INFINITY);
    CHECK(reduce(GFP_OP_VAR, &two, &y, 1, 5) == GFP_OK); /* divisor clamped at 0 */
    EXPECT(y, 0, INFINITY);
    /* Far from zero: a one-pass E[x^2] - E[x]^2 loses everything here. */
    gfp_tensor far = tensor(GFP_F64, 1, SIZES(3), VALS(1e9 + 1, 1e9 + 2, 1e9 + 3));
    CHECK(reduce(GFP_OP_VAR, &far, &y, 1, 1) == GFP_OK);
    EXPECT(y, 1e-9, 1);
}

static void test_logsumexp(void) {
    gfp_tensor xf = tensor(GFP_F32, 1, SIZES(2), VALS(1000, 1000)),
               yf = tensor(GFP_F32, 1, SIZES(1), NULL);
    CHECK(reduce(GFP_OP_LOGSUMEXP, &xf, &yf, 1, 0) == GFP_OK);
    EXPECT(yf, 1e-6, 1000 + log(2.0));
    gfp_tensor x = tensor(GFP_F64, 2, SIZES(3, 2), VALS(-1000, -1000, 1, 2, 0, log(3.0)));
    gfp_tensor y = tensor(GFP_F64, 2, SIZES(3, 1), NULL);
    CHECK(reduce(GFP_OP_LOGSUMEXP, &x, &y, 2, 0) == GFP_OK);
    EXPECT(y, 1e-14, -1000 + log(2.0), 2 + log(1 + exp(-1.0)), log(4.0));
    gfp_tensor inf = tensor(GFP_F64, 2, SIZES(2, 2), VALS(-INFINITY, INFINITY, -INFINITY, 1));
    gfp_tensor cols = tensor(GFP_F64, 2, SIZES(1, 2), NULL);
    CHECK(reduce(GFP_OP_LOGSUMEXP, &inf, &cols, 1, 0) == GFP_OK);
    EXPECT(cols, 0, -INFINITY, INFINITY);
}

static void test_reduce_errors(void) {
    CHECK(rd_query(GFP_OP_SUM, 1, DTYPES(GFP_F32), 1, DTYPES(GFP_F32)) == GFP_SUPPORT_STRIDED);
    CHECK(rd_query(GFP_OP_SUM, 1, DTYPES(GFP_I32), 1, DTYPES(GFP_I32)) == GFP_SUPPORT_STRIDED);
    CHECK(rd_query(GFP_OP_SUM, 1, DTYPES(GFP_BOOL), 1, DTYPES(GFP_BOOL)) == GFP_SUPPORT_NONE);
    CHECK(rd_query(GFP_OP_MEAN, 1, DTYPES(GFP_I64), 1, DTYPES(GFP_I64)) == GFP_SUPPORT_NONE);
    CHECK(rd_query(GFP_OP_AMAX, 1, DTYPES(GFP_BOOL), 1, DTYPES(GFP_BOOL)) == GFP_SUPPORT_STRIDED);
    CHECK(rd_query(GFP_OP_MAX_DIM, 1, DTYPES(GFP_F64), 2, DTYPES(GFP_F64, GFP_I64)) ==
          GFP_SUPPORT_STRIDED);
    CHECK(rd_query(GFP_OP_MAX_DIM, 1, DTYPES(GFP_BOOL), 2, DTYPES(GFP_BOOL, GFP_I64)) ==
          GFP_SUPPORT_NONE);
    CHECK(rd_query(GFP_OP_VAR, 1, DTYPES(GFP_F32), 1, DTYPES(GFP_F64)) == GFP_SUPPORT_NONE);

    gfp_tensor xb = tensor(GFP_BOOL, 1, SIZES(2), VALS(1, 0)),
               yb = tensor(GFP_BOOL, 1, SIZES(1), NULL);
    CHECK(reduce(GFP_OP_SUM, &xb, &yb, 1, 0) == GFP_ERR_UNSUPPORTED);
    CHECK_CONTAINS(error_text(), "sum");
    CHECK_CONTAINS(error_text(), "bool");
    gfp_tensor xi = tensor(GFP_I32, 1, SIZES(2), NULL), yi = tensor(GFP_I32, 1, SIZES(1), NULL);
    CHECK(reduce(GFP_OP_MEAN, &xi, &yi, 1, 0) == GFP_ERR_UNSUPPORTED);
    CHECK_CONTAINS(error_text(), "mean");
    CHECK_CONTAINS(error_text(), "i32");
    gfp_tensor x = tensor(GFP_F32, 2, SIZES(2, 3), NULL),
               y64 = tensor(GFP_F64, 2, SIZES(1, 3), NULL);
    CHECK(reduce(GFP_OP_SUM, &x, &y64, 1, 0) == GFP_ERR_UNSUPPORTED);
    gfp_tensor y = tensor(GFP_F32, 2, SIZES(1, 3), NULL);
    CHECK(reduce(GFP_OP_SUM, &x, &y, 4, 0) == GFP_ERR_INVALID); /* dim 2 of a rank-2 input */
    CHECK_CONTAINS(error_text(), "dims");
    CHECK(reduce(GFP_OP_SUM, &x, &y, 2, 0) == GFP_ERR_INVALID); /* y should be [2, 1] */
    CHECK_CONTAINS(error_text(), "size 1");
    CHECK(rd_launch(GFP_OP_SUM, TS(&x), 1, TS(&y), 1, NULL) == GFP_ERR_INVALID);
    CHECK_CONTAINS(error_text(), "sum");
    gfp_reduce_params p = reduce_params(1, 0);
    CHECK(rd_launch(GFP_OP_SUM, TS(&x), 1, TS(&y, &y), 2, &p) == GFP_ERR_INVALID);
}

/* ------------------------------------------------------------------ matmul */
static gfp_status matmul(const gfp_tensor *a, const gfp_tensor *b, const gfp_tensor *y) {
    return rd_launch(GFP_OP_MATMUL, TS(a, b), 2, TS(y), 1, NULL);
}

static void test_matmul_basic(void) {
    /* [[1,2,3],[4,5,6]] @ [[7,8],[9,10],[11,12]]: 1*7+2*9+3*11 = 58, 1*8+2*10+3*12 = 64,
     * 4*7+5*9+6*11 = 139, 4*8+5*10+6*12 = 154. */
    for (int32_t dt = GFP_F32; dt <= GFP_I64; dt++) {
        gfp_tensor a = tensor(dt, 2, SIZES(2, 3), VALS(1, 2, 3, 4, 5, 6));
        gfp_tensor b = tensor(dt, 2, SIZES(3, 2), VALS(7, 8, 9, 10, 11, 12));
        gfp_tensor y = tensor(dt, 2, SIZES(2, 2), NULL);
        CHECK(rd_query(GFP_OP_MATMUL, 2, DTYPES(dt, dt), 1, DTYPES(dt)) == GFP_SUPPORT_STRIDED);
        CHECK(matmul(&a, &b, &y) == GFP_OK);
        EXPECT(y, 0, 58, 64, 139, 154);
    }
    /* Products accumulate in double: 1e8 + 1 - 1e8 = 1 (float gives 0). */
    gfp_tensor a = tensor(GFP_F32, 2, SIZES(1, 3), VALS(1e8, 1, -1e8));
    gfp_tensor b = tensor(GFP_F32, 2, SIZES(3, 1), VALS(1, 1, 1)),
               y = tensor(GFP_F32, 2, SIZES(1, 1), NULL);
    CHECK(matmul(&a, &b, &y) == GFP_OK);
    EXPECT(y, 0, 1);
}

static void test_matmul_strided(void) {
    /* a is one [2,3] matrix broadcast over a batch of 2 (batch stride 0). */
    gfp_tensor a0 = tensor(GFP_F64, 2, SIZES(2, 3), VALS(1, 2, 3, 4, 5, 6));
    gfp_tensor a = view(&a0, 3, SIZES(2, 2, 3), SIZES(0, 3, 1));
    gfp_tensor b = tensor(GFP_F64, 3, SIZES(2, 3, 2), VALS(7, 8, 9, 10, 11, 12, 1, 0, 0, 1, 1, 1));
    gfp_tensor y = tensor(GFP_F64, 3, SIZES(2, 2, 2), NULL);
    CHECK(matmul(&a, &b, &y) == GFP_OK);
    /* batch 1: [[1,2,3],[4,5,6]] @ [[1,0],[0,1],[1,1]] = [[4,5],[10,11]] */
    EXPECT(y, 0, 58, 64, 139, 154, 4, 5, 10, 11);
    /* Transposed operands and a transposed output. */
    gfp_tensor at_ = tensor(GFP_F32, 2, SIZES(3, 2), VALS(1, 4, 2, 5, 3, 6));
    gfp_tensor bt = tensor(GFP_F32, 2, SIZES(2, 3), VALS(7, 9, 11, 8, 10, 12));
    gfp_tensor av = view(&at_, 2, SIZES(2, 3), SIZES(1, 2)),
               bv = view(&bt, 2, SIZES(3, 2), SIZES(1, 3));
    gfp_tensor yt = tensor(GFP_F32, 2, SIZES(2, 2), NULL);
    gfp_tensor yv = view(&yt, 2, SIZES(2, 2), SIZES(1, 2));
    CHECK(matmul(&av, &bv, &yv) == GFP_OK);
    EXPECT(yv, 0, 58, 64, 139, 154);
    EXPECT(yt, 0, 58, 139, 64, 154); /* storage holds y transposed */
}

static void test_matmul_k0_and_errors(void) {
    gfp_tensor a = tensor(GFP_F32, 2, SIZES(2, 0), NULL), b = tensor(GFP_F32, 2, SIZES(0, 3), NULL);
    gfp_tensor y = tensor(GFP_F32, 2, SIZES(2, 3), VALS(99, 99, 99, 99, 99, 99));
    CHECK(matmul(&a, &b, &y) == GFP_OK);
    EXPECT(y, 0, 0, 0, 0, 0, 0, 0);
    gfp_tensor a23 = tensor(GFP_F32, 2, SIZES(2, 3), NULL),
               b22 = tensor(GFP_F32, 2, SIZES(2, 2), NULL);
    gfp_tensor y22 = tensor(GFP_F32, 2, SIZES(2, 2), NULL);
    CHECK(matmul(&a23, &b22, &y22) == GFP_ERR_INVALID);
    CHECK_CONTAINS(error_text(), "matmul");
    gfp_tensor b32 = tensor(GFP_F64, 2, SIZES(3, 2), NULL);
    CHECK(matmul(&a23, &b32, &y22) == GFP_ERR_UNSUPPORTED);
    CHECK_CONTAINS(error_text(), "matmul");
    CHECK_CONTAINS(error_text(), "f64");
    CHECK(rd_query(GFP_OP_MATMUL, 2, DTYPES(GFP_F32, GFP_F64), 1, DTYPES(GFP_F32)) ==
          GFP_SUPPORT_NONE);
    CHECK(rd_query(GFP_OP_MATMUL, 2, DTYPES(GFP_BOOL, GFP_BOOL), 1, DTYPES(GFP_BOOL)) ==
          GFP_SUPPORT_NONE);
    gfp_tensor v3 = tensor(GFP_F32, 1, SIZES(3), NULL), y1 = tensor(GFP_F32, 1, SIZES(2), NULL);
    gfp_tensor b3 = tensor(GFP_F32, 2, SIZES(3, 2), NULL);
    CHECK(matmul(&v3, &b3, &y1) == GFP_ERR_INVALID);
    CHECK_CONTAINS(error_text(), "rank");
    gfp_tensor ab = tensor(GFP_F32, 3, SIZES(2, 2, 3), NULL),
               bb = tensor(GFP_F32, 3, SIZES(3, 3, 2), NULL);
    gfp_tensor yb = tensor(GFP_F32, 3, SIZES(2, 2, 2), NULL);
    CHECK(matmul(&ab, &bb, &yb) == GFP_ERR_INVALID);
    CHECK_CONTAINS(error_text(), "batch");
}

/* ------------------------------------------------------------------ softmax */
static gfp_status along(uint32_t op, const gfp_tensor *x, const gfp_tensor *y, int dim) {
    gfp_dim_params p = {.struct_size = sizeof p, .dim = dim};
    return rd_launch(op, TS(x), 1, TS(y), 1, &p);
}

static void test_softmax(void) {
    gfp_tensor x = tensor(GFP_F32, 1, SIZES(3), VALS(1, 2, 3)),
               y = tensor(GFP_F32, 1, SIZES(3), NULL);
    CHECK(along(GFP_OP_SOFTMAX, &x, &y, 0) == GFP_OK);
    EXPECT(y, 1e-7, 0.09003057, 0.24472847, 0.66524096);
    CHECK(along(GFP_OP_LOG_SOFTMAX, &x, &y, 0) == GFP_OK);
    EXPECT(y, 1e-6, -2.40760596, -1.40760596, -0.40760596);
    /* Along dim 0 of a transposed view: columns [1,2,3] and [1000,1000,1000]. */
    gfp_tensor base = tensor(GFP_F64, 2, SIZES(2, 3), VALS(1, 2, 3, 1000, 1000, 1000));
    gfp_tensor xt = view(&base, 2, SIZES(3, 2), SIZES(1, 3)),
               yt = tensor(GFP_F64, 2, SIZES(3, 2), NULL);
    CHECK(along(GFP_OP_SOFTMAX, &xt, &yt, 0) == GFP_OK);
    EXPECT(yt, 1e-8, 0.09003057, 1.0 / 3, 0.24472847, 1.0 / 3, 0.66524096, 1.0 / 3);
    CHECK(along(GFP_OP_LOG_SOFTMAX, &xt, &yt, 0) == GFP_OK);
    EXPECT(yt, 1e-8, -2.40760596, -log(3.0), -1.40760596, -log(3.0), -0.40760596, -log(3.0));
    /* Rows against exp(x) / sum(exp(x)) computed here; each row sums to 1. */
    const double v[] = {0.5, -1.25, 2, 0.125, -3, 0, 1.5, 0.75};
    gfp_tensor r = tensor(GFP_F64, 2, SIZES(2, 4), v), ry = tensor(GFP_F64, 2, SIZES(2, 4), NULL);
    CHECK(along(GFP_OP_SOFTMAX, &r, &ry, 1) == GFP_OK);
    for (int row = 0; row < 2; row++) {
        double s = 0, total = 0;
        for (int j = 0; j < 4; j++) s += exp(v[row * 4 + j]);
        for (int j = 0; j < 4; j++) {
            CHECK_CLOSE(at(&ry, row * 4 + j), exp(v[row * 4 + j]) / s, 1e-15);
            total += at(&ry, row * 4 + j);
        }
        CHECK_CLOSE(total, 1.0, 1e-15);
    }
    /* -inf takes no mass; a large gap does not overflow. */
    gfp_tensor xi = tensor(GFP_F64, 1, SIZES(2), VALS(0, -INFINITY)),
               yi = tensor(GFP_F64, 1, SIZES(2), NULL);
    CHECK(along(GFP_OP_SOFTMAX, &xi, &yi, 0) == GFP_OK);
    EXPECT(yi, 0, 1, 0);
    gfp_tensor xg = tensor(GFP_F64, 1, SIZES(2), VALS(1000, 0));
    CHECK(along(GFP_OP_LOG_SOFTMAX, &xg, &yi, 0) == GFP_OK);
    EXPECT(yi, 1e-12, 0, -1000);
    /* A 0-dim tensor is a line of one element. */
    gfp_tensor s0 = tensor(GFP_F32, 0, NULL, VALS(-3)), s1 = tensor(GFP_F32, 0, NULL, NULL);
    CHECK(along(GFP_OP_SOFTMAX, &s0, &s1, 0) == GFP_OK);
    EXPECT(s1, 0, 1);
    CHECK(along(GFP_OP_LOG_SOFTMAX, &s0, &s1, 0) == GFP_OK);
    EXPECT(s1, 0, 0);
    /* Errors. */
    CHECK(along(GFP_OP_SOFTMAX, &x, &y, 1) == GFP_ERR_INVALID);
    CHECK_CONTAINS(error_text(), "softmax");
    gfp_tensor xint = tensor(GFP_I32, 1, SIZES(3), NULL), yint = tensor(GFP_I32, 1, SIZES(3), NULL);
    CHECK(along(GFP_OP_SOFTMAX, &xint, &yint, 0) == GFP_ERR_UNSUPPORTED);
    CHECK_CONTAINS(error_text(), "input is i32");
    CHECK(rd_query(GFP_OP_LOG_SOFTMAX, 1, DTYPES(GFP_F64), 1, DTYPES(GFP_F64)) == GFP_SUPPORT_STRIDED);
    CHECK(rd_query(GFP_OP_SOFTMAX, 1, DTYPES(GFP_I64), 1, DTYPES(GFP_I64)) == GFP_SUPPORT_NONE);
}

/* ------------------------------------------------------------------ layer norm */
static void test_layer_norm(void) {
    const double xv[] = {1, 2, 3, 4, 2, 4, 6, 8}, wv[] = {1, 2, 1, 2}, bv[] = {0, 0, 1, 1};
    const double eps = 1e-5;
    gfp_tensor x = tensor(GFP_F64, 2, SIZES(2, 4), xv);
    gfp_tensor w = tensor(GFP_F64, 1, SIZES(4), wv), b = tensor(GFP_F64, 1, SIZES(4), bv);
    gfp_tensor y = tensor(GFP_F64, 2, SIZES(2, 4), NULL);
    gfp_tensor mean = tensor(GFP_F64, 1, SIZES(2), NULL), rstd = tensor(GFP_F64, 1, SIZES(2), NULL);
    gfp_layer_norm_params p = {.struct_size = sizeof p, .normalized_rank = 1, .eps = eps};
    CHECK(rd_launch(GFP_OP_LAYER_NORM, TS(&x, &w, &b), 3, TS(&y, &mean, &rstd), 3, &p) ==
          GFP_OK);
    EXPECT(mean, 1e-14, 2.5, 5);
    /* biased variances: 5/4 and 20/4 */
    EXPECT(rstd, 1e-14, 1 / sqrt(1.25 + eps), 1 / sqrt(5 + eps));
    for (int r = 0; r < 2; r++) {
        double m = 0, var = 0;
        for (int j = 0; j < 4; j++) m += xv[r * 4 + j] / 4;
        for (int j = 0; j < 4; j++) var += (xv[r * 4 + j] - m) * (xv[r * 4 + j] - m) / 4;
        for (int j = 0; j < 4; j++)
            CHECK_CLOSE(at(&y, r * 4 + j), (xv[r * 4 + j] - m) / sqrt(var + eps) * wv[j] + bv[j],
                        1e-13);
    }
    /* Both dims normalised (mean and rstd are 0-dim), no weight or bias, x
     * a transposed f32 view of storage [[1,2],[2,4],[3,6],[4,8]]. */
    gfp_tensor base = tensor(GFP_F32, 2, SIZES(4, 2), VALS(1, 2, 2, 4, 3, 6, 4, 8));
    gfp_tensor xt = view(&base, 2, SIZES(2, 4), SIZES(1, 2));
    gfp_tensor yf = tensor(GFP_F32, 2, SIZES(2, 4), NULL);
    gfp_tensor m0 = tensor(GFP_F32, 0, NULL, NULL), r0 = tensor(GFP_F32, 0, NULL, NULL);
    p.normalized_rank = 2;
    CHECK(rd_launch(GFP_OP_LAYER_NORM, TS(&xt, NULL, NULL), 3, TS(&yf, &m0, &r0), 3, &p) ==
          GFP_OK);
    double m = 0, var = 0;
    for (int i = 0; i < 8; i++) m += xv[i] / 8;
    for (int i = 0; i < 8; i++) var += (xv[i] - m) * (xv[i] - m) / 8;
    EXPECT(m0, 1e-6, 3.75);
    EXPECT(r0, 1e-6, 1 / sqrt(var + eps));
    for (int i = 0; i < 8; i++) CHECK_CLOSE(at(&yf, i), (xv[i] - m) / sqrt(var + eps), 1e-6);
    /* Errors. */
    p.normalized_rank = 3;
    CHECK(rd_launch(GFP_OP_LAYER_NORM, TS(&x, &w, &b), 3, TS(&y, &mean, &rstd), 3, &p) ==
          GFP_ERR_INVALID);
    CHECK_CONTAINS(error_text(), "normalized_rank");
    p.normalized_rank = 1;
    gfp_tensor w3 = tensor(GFP_F64, 1, SIZES(3), NULL);
    CHECK(rd_launch(GFP_OP_LAYER_NORM, TS(&x, &w3, &b), 3, TS(&y, &mean, &rstd), 3, &p) ==
          GFP_ERR_INVALID);
    CHECK_CONTAINS(error_text(), "weight");
    CHECK(rd_launch(GFP_OP_LAYER_NORM, TS(&x, &w, &b), 3, TS(&y, &mean, &rstd), 3, NULL) ==
          GFP_ERR_INVALID);
    CHECK(rd_query(GFP_OP_LAYER_NORM, 3, DTYPES(GFP_F32, -1, -1), 3,
                DTYPES(GFP_F32, GFP_F32, GFP_F32)) == GFP_SUPPORT_STRIDED);
    CHECK(rd_query(GFP_OP_LAYER_NORM, 3, DTYPES(GFP_F32, GFP_F64, -1), 3,
                DTYPES(GFP_F32, GFP_F32, GFP_F32)) == GFP_SUPPORT_NONE);
}

/* ------------------------------------------------------------------ batch norm */
/* x [2, 2, 2]: channel 0 holds 1, 2, 3, 4 and channel 1 holds 0, 0, 0, 4. */
static const double bn_x[] = {1, 2, 0, 0, 3, 4, 0, 4};

static gfp_status batch_norm(const gfp_tensor *const *in, const gfp_tensor *const *out,
                             uint32_t training, double momentum) {
    gfp_batch_norm_params p = {
        .struct_size = sizeof p, .training = training, .momentum = momentum, .eps = 1e-5};
    return rd_launch(GFP_OP_BATCH_NORM, in, 5, out, 3, &p);
}

static void test_batch_norm_training(void) {
    const double eps = 1e-5, w[] = {2, 0.5}, b[] = {1, -1};
    gfp_tensor x = tensor(GFP_F64, 3, SIZES(2, 2, 2), bn_x);
    gfp_tensor wt = tensor(GFP_F64, 1, SIZES(2), w), bt = tensor(GFP_F64, 1, SIZES(2), b);
    gfp_tensor rm = tensor(GFP_F64, 1, SIZES(2), VALS(0, 1)),
               rv = tensor(GFP_F64, 1, SIZES(2), VALS(1, 1));
    gfp_tensor y = tensor(GFP_F64, 3, SIZES(2, 2, 2), NULL);
    gfp_tensor sm = tensor(GFP_F64, 1, SIZES(2), NULL), si = tensor(GFP_F64, 1, SIZES(2), NULL);
    CHECK(batch_norm(TS(&x, &wt, &bt, &rm, &rv), TS(&y, &sm, &si), 1, 0.1) == GFP_OK);
    /* channel 0: mean 2.5, biased var 5/4, unbiased 5/3;
     * channel 1: mean 1, biased var (1+1+1+9)/4 = 3, unbiased 4. */
    EXPECT(sm, 1e-14, 2.5, 1);
    EXPECT(si, 1e-14, 1 / sqrt(1.25 + eps), 1 / sqrt(3 + eps));
    EXPECT(rm, 1e-14, 0.9 * 0 + 0.1 * 2.5, 0.9 * 1 + 0.1 * 1);
    EXPECT(rv, 1e-14, 0.9 * 1 + 0.1 * 5.0 / 3, 0.9 * 1 + 0.1 * 4);
    const double mean[] = {2.5, 1}, var[] = {1.25, 3};
    for (int i = 0; i < 8; i++) {
        int c = (i / 2) % 2;
        CHECK_CLOSE(at(&y, i), (bn_x[i] - mean[c]) / sqrt(var[c] + eps) * w[c] + b[c], 1e-13);
    }
    /* No affine parameters and no running statistics: nothing else changes. */
    CHECK(batch_norm(TS(&x, NULL, NULL, NULL, NULL), TS(&y, &sm, &si), 1, 0.1) == GFP_OK);
    for (int i = 0; i < 8; i++) {
        int c = (i / 2) % 2;
        CHECK_CLOSE(at(&y, i), (bn_x[i] - mean[c]) / sqrt(var[c] + eps), 1e-13);
    }
    EXPECT(rm, 1e-14, 0.25, 1);
    /* f32 with x non-contiguous: the same values stored as [C, N, L]. */
    gfp_tensor cnl = tensor(GFP_F32, 3, SIZES(2, 2, 2), VALS(1, 2, 3, 4, 0, 0, 0, 4));
    gfp_tensor xs = view(&cnl, 3, SIZES(2, 2, 2), SIZES(2, 4, 1));
    gfp_tensor yf = tensor(GFP_F32, 3, SIZES(2, 2, 2), NULL);
    gfp_tensor smf = tensor(GFP_F32, 1, SIZES(2), NULL), sif = tensor(GFP_F32, 1, SIZES(2), NULL);
    CHECK(batch_norm(TS(&xs, NULL, NULL, NULL, NULL), TS(&yf, &smf, &sif), 1, 0.1) ==
          GFP_OK);
    EXPECT(smf, 1e-6, 2.5, 1);
    for (int i = 0; i < 8; i++) {
        int c = (i / 2) % 2;
        CHECK_CLOSE(at(&yf, i), (bn_x[i] - mean[c]) / sqrt(var[c] + eps), 1e-5);
    }
}

static void test_batch_norm_eval(void) {
    const double eps = 1e-5, w[] = {2, 0.5}, b[] = {1, -1}, rmv[] = {1, 2}, rvv[] = {4, 0.25};
    gfp_tensor x = tensor(GFP_F32, 3, SIZES(2, 2, 2), bn_x);
    gfp_tensor wt = tensor(GFP_F32, 1, SIZES(2), w), bt = tensor(GFP_F32, 1, SIZES(2), b);
    gfp_tensor rm = tensor(GFP_F32, 1, SIZES(2), rmv), rv = tensor(GFP_F32, 1, SIZES(2), rvv);
    gfp_tensor y = tensor(GFP_F32, 3, SIZES(2, 2, 2), NULL);
    gfp_tensor sm = tensor(GFP_F32, 1, SIZES(2), NULL), si = tensor(GFP_F32, 1, SIZES(2), NULL);
    CHECK(batch_norm(TS(&x, &wt, &bt, &rm, &rv), TS(&y, &sm, &si), 0, 0.1) == GFP_OK);
    for (int i = 0; i < 8; i++) {
        int c = (i / 2) % 2;
        CHECK_CLOSE(at(&y, i), (bn_x[i] - rmv[c]) / sqrt(rvv[c] + eps) * w[c] + b[c], 1e-5);
    }
    EXPECT(sm, 0, 1, 2);
    EXPECT(si, 1e-6, 1 / sqrt(4 + eps), 1 / sqrt(0.25 + eps));
    EXPECT(rm, 0, 1, 2); /* evaluation leaves the running statistics alone */
    EXPECT(rv, 0, 4, 0.25);
    CHECK(batch_norm(TS(&x, &wt, &bt, NULL, NULL), TS(&y, &sm, &si), 0, 0.1) ==
          GFP_ERR_INVALID);
    CHECK_CONTAINS(error_text(), "running_mean");
    gfp_tensor r3 = tensor(GFP_F32, 1, SIZES(3), NULL);
    CHECK(batch_norm(TS(&x, &wt, &bt, &r3, &rv), TS(&y, &sm, &si), 0, 0.1) ==
          GFP_ERR_INVALID);
    CHECK_CONTAINS(error_text(), "running_mean");
    gfp_tensor r64 = tensor(GFP_F64, 1, SIZES(2), NULL);
    CHECK(batch_norm(TS(&x, &wt, &bt, &r64, &rv), TS(&y, &sm, &si), 0, 0.1) ==
          GFP_ERR_UNSUPPORTED);
    CHECK_CONTAINS(error_text(), "running_mean is f64");
    CHECK(rd_query(GFP_OP_BATCH_NORM, 5, DTYPES(GFP_F64, GFP_F64, -1, GFP_F64, GFP_F64), 3,
                DTYPES(GFP_F64, GFP_F64, GFP_F64)) == GFP_SUPPORT_STRIDED);
}

/* ------------------------------------------------------------------ indexing */
static gfp_status index_op(uint32_t op, const gfp_tensor *data, const gfp_tensor *index,
                           const gfp_tensor *y, int dim) {
    gfp_dim_params p = {.struct_size = sizeof p, .dim = dim};
    return rd_launch(op, TS(data, index), 2, TS(y), 1, &p);
}

static void test_index_select(void) {
    gfp_tensor x = tensor(GFP_F32, 2, SIZES(3, 2), VALS(1, 2, 3, 4, 5, 6));
    gfp_tensor idx = tensor(GFP_I64, 1, SIZES(3), VALS(2, 0, 2));
    gfp_tensor y = tensor(GFP_F32, 2, SIZES(3, 2), NULL);
    CHECK(index_op(GFP_OP_INDEX_SELECT, &x, &idx, &y, 0) == GFP_OK);
    EXPECT(y, 0, 5, 6, 1, 2, 5, 6);
    gfp_tensor one = tensor(GFP_I64, 1, SIZES(1), VALS(1)),
               col = tensor(GFP_F32, 2, SIZES(3, 1), NULL);
    CHECK(index_op(GFP_OP_INDEX_SELECT, &x, &one, &col, 1) == GFP_OK);
    EXPECT(col, 0, 2, 4, 6);
    gfp_tensor xb = tensor(GFP_BOOL, 1, SIZES(3), VALS(1, 0, 1)),
               yb = tensor(GFP_BOOL, 1, SIZES(3), NULL);
    gfp_tensor ib = tensor(GFP_I64, 1, SIZES(3), VALS(1, 1, 2));
    CHECK(index_op(GFP_OP_INDEX_SELECT, &xb, &ib, &yb, 0) == GFP_OK);
    EXPECT(yb, 0, 0, 0, 1);
    /* Out of range: an error naming op, value and range; y untouched. */
    gfp_tensor sentinel = tensor(GFP_F32, 2, SIZES(2, 2), VALS(-1, -1, -1, -1));
    gfp_tensor bad = tensor(GFP_I64, 1, SIZES(2), VALS(0, 3));
    CHECK(index_op(GFP_OP_INDEX_SELECT, &x, &bad, &sentinel, 0) == GFP_ERR_INVALID);
    CHECK_CONTAINS(error_text(), "index_select");
    CHECK_CONTAINS(error_text(), "index 3");
    CHECK_CONTAINS(error_text(), "[0, 3)");
    EXPECT(sentinel, 0, -1, -1, -1, -1);
    gfp_tensor neg = tensor(GFP_I64, 1, SIZES(2), VALS(1, -1));
    CHECK(index_op(GFP_OP_INDEX_SELECT, &x, &neg, &sentinel, 0) == GFP_ERR_INVALID);
    CHECK_CONTAINS(error_text(), "index -1");
    EXPECT(sentinel, 0, -1, -1, -1, -1);
}

static void test_gather(void) {
    gfp_tensor x = tensor(GFP_I32, 2, SIZES(2, 2), VALS(1, 2, 3, 4));
    gfp_tensor idx = tensor(GFP_I64, 2, SIZES(2, 2), VALS(0, 0, 1, 0));
    gfp_tensor y = tensor(GFP_I32, 2, SIZES(2, 2), NULL);
    CHECK(index_op(GFP_OP_GATHER, &x, &idx, &y, 1) == GFP_OK);
    EXPECT(y, 0, 1, 1, 4, 3);
    /* An index smaller than x in the other dims. */
    gfp_tensor x3 = tensor(GFP_F64, 2, SIZES(3, 3), VALS(1, 2, 3, 4, 5, 6, 7, 8, 9));
    gfp_tensor i21 = tensor(GFP_I64, 2, SIZES(2, 1), VALS(2, 0)),
               y21 = tensor(GFP_F64, 2, SIZES(2, 1), NULL);
    CHECK(index_op(GFP_OP_GATHER, &x3, &i21, &y21, 0) == GFP_OK);
    EXPECT(y21, 0, 7, 1); /* y[0,0] = x[2,0], y[1,0] = x[0,0] */
    gfp_tensor sentinel = tensor(GFP_I32, 2, SIZES(2, 2), VALS(-1, -1, -1, -1));
    gfp_tensor bad = tensor(GFP_I64, 2, SIZES(2, 2), VALS(0, 1, 2, 0));
    CHECK(index_op(GFP_OP_GATHER, &x, &bad, &sentinel, 1) == GFP_ERR_INVALID);
    CHECK_CONTAINS(error_text(), "gather");
    CHECK_CONTAINS(error_text(), "index 2");
    CHECK_CONTAINS(error_text(), "[0, 2)");
    EXPECT(sentinel, 0, -1, -1, -1, -1);
}

static void test_scatter_add(void) {
    gfp_tensor y = tensor(GFP_F32, 2, SIZES(3, 5), NULL);
    gfp_tensor src = tensor(GFP_F32, 2, SIZES(2, 5), VALS(1, 1, 1, 1, 1, 1, 1, 1, 1, 1));
    gfp_tensor idx = tensor(GFP_I64, 2, SIZES(2, 5), VALS(0, 1, 2, 0, 0, 0, 1, 2, 2, 2));
    CHECK(index_op(GFP_OP_SCATTER_ADD, &src, &idx, &y, 0) == GFP_OK);
    /* column j sends src[0,j] to row idx[0,j] and src[1,j] to row idx[1,j] */
    EXPECT(y, 0, 2, 0, 0, 1, 1, 0, 2, 0, 0, 0, 0, 0, 2, 1, 1);
    /* Accumulates into what y holds; i32 exact. */
    gfp_tensor yi = tensor(GFP_I32, 1, SIZES(3), VALS(10, 20, 30));
    gfp_tensor si = tensor(GFP_I32, 1, SIZES(4), VALS(1, 2, 3, 4));
    gfp_tensor ii = tensor(GFP_I64, 1, SIZES(4), VALS(0, 2, 2, 0));
    CHECK(index_op(GFP_OP_SCATTER_ADD, &si, &ii, &yi, 0) == GFP_OK);
    EXPECT(yi, 0, 15, 20, 35);
    /* A bad index anywhere: nothing is added, not even before it. */
    gfp_tensor bad = tensor(GFP_I64, 1, SIZES(4), VALS(0, 1, 2, 3));
    CHECK(index_op(GFP_OP_SCATTER_ADD, &si, &bad, &yi, 0) == GFP_ERR_INVALID);
    CHECK_CONTAINS(error_text(), "scatter_add");
    CHECK_CONTAINS(error_text(), "index 3");
    CHECK_CONTAINS(error_text(), "[0, 3)");
    EXPECT(yi, 0, 15, 20, 35);
}

static void test_index_add(void) {
    gfp_tensor y =
        tensor(GFP_F64, 2, SIZES(5, 3), VALS(1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1));
    gfp_tensor src = tensor(GFP_F64, 2, SIZES(3, 3), VALS(1, 2, 3, 4, 5, 6, 7, 8, 9));
    gfp_tensor idx = tensor(GFP_I64, 1, SIZES(3), VALS(0, 4, 2));
    CHECK(index_op(GFP_OP_INDEX_ADD, &src, &idx, &y, 0) == GFP_OK);
    EXPECT(y, 0, 2, 3, 4, 1, 1, 1, 8, 9, 10, 1, 1, 1, 5, 6, 7);
    /* Repeated indices accumulate; along dim 1; i64. */
    gfp_tensor yl = tensor(GFP_I64, 2, SIZES(1, 2), NULL);
    gfp_tensor sl = tensor(GFP_I64, 2, SIZES(1, 3), VALS(1, 2, 3));
    gfp_tensor il = tensor(GFP_I64, 1, SIZES(3), VALS(1, 1, 0));
    CHECK(index_op(GFP_OP_INDEX_ADD, &sl, &il, &yl, 1) == GFP_OK);
    EXPECT(yl, 0, 3, 3);
    gfp_tensor bad = tensor(GFP_I64, 1, SIZES(3), VALS(0, 5, 1));
    CHECK(index_op(GFP_OP_INDEX_ADD, &src, &bad, &y, 0) == GFP_ERR_INVALID);
    CHECK_CONTAINS(error_text(), "index_add");
    CHECK_CONTAINS(error_text(), "index 5");
    CHECK_CONTAINS(error_text(), "[0, 5)");
    EXPECT(y, 0, 2, 3, 4, 1, 1, 1, 8, 9, 10, 1, 1, 1, 5, 6, 7);
}

static void test_index_errors(void) {
    CHECK(rd_query(GFP_OP_GATHER, 2, DTYPES(GFP_BOOL, GFP_I64), 1, DTYPES(GFP_BOOL)) ==
          GFP_SUPPORT_STRIDED);
    CHECK(rd_query(GFP_OP_SCATTER_ADD, 2, DTYPES(GFP_BOOL, GFP_I64), 1, DTYPES(GFP_BOOL)) ==
          GFP_SUPPORT_NONE);
    CHECK(rd_query(GFP_OP_INDEX_ADD, 2, DTYPES(GFP_F32, GFP_I32), 1, DTYPES(GFP_F32)) ==
          GFP_SUPPORT_NONE);
    gfp_tensor yb = tensor(GFP_BOOL, 1, SIZES(2), NULL), sb = tensor(GFP_BOOL, 1, SIZES(2), NULL);
    gfp_tensor i = tensor(GFP_I64, 1, SIZES(2), VALS(0, 1));
    CHECK(index_op(GFP_OP_SCATTER_ADD, &sb, &i, &yb, 0) == GFP_ERR_UNSUPPORTED);
    CHECK_CONTAINS(error_text(), "scatter_add");
    CHECK_CONTAINS(error_text(), "bool");
    gfp_tensor x = tensor(GFP_F32, 1, SIZES(2), NULL), y = tensor(GFP_F32, 1, SIZES(2), NULL);
    gfp_tensor i32 = tensor(GFP_I32, 1, SIZES(2), NULL);
    CHECK(index_op(GFP_OP_INDEX_SELECT, &x, &i32, &y, 0) == GFP_ERR_UNSUPPORTED);
    CHECK_CONTAINS(error_text(), "i32");
    CHECK(index_op(GFP_OP_INDEX_SELECT, &x, &i, &y, 1) == GFP_ERR_INVALID);
    CHECK_CONTAINS(error_text(), "dim 1");
    gfp_tensor y3 = tensor(GFP_F32, 1, SIZES(3), NULL);
    CHECK(index_op(GFP_OP_INDEX_SELECT, &x, &i, &y3, 0) ==
          GFP_ERR_INVALID); /* y's length != index's */
    CHECK_CONTAINS(error_text(), "index_select");
}

/* ------------------------------------------------------------------ main */
int main(int argc, char **argv) {
    if (!rd_open(argc, argv)) return 1;
    RUN(test_reduce_dims);
    RUN(test_reduce_strided);
    RUN(test_reduce_empty);
    RUN(test_reduce_int_bool_nan);
    RUN(test_max_min_dim);
    RUN(test_var);
    RUN(test_logsumexp);
    RUN(test_reduce_errors);
    RUN(test_matmul_basic);
    RUN(test_matmul_strided);
    RUN(test_matmul_k0_and_errors);
    RUN(test_softmax);
    RUN(test_layer_norm);
    RUN(test_batch_norm_training);
    RUN(test_batch_norm_eval);
    RUN(test_index_select);
    RUN(test_gather);
    RUN(test_scatter_add);
    RUN(test_index_add);
    RUN(test_index_errors);
    for (int i = 0; i < n_buffers; i++) P->buffer_free(dev, buffers[i]);
    rd_close();
    return CHECK_REPORT();
}
