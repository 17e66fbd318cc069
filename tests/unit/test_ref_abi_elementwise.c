/* SPDX-License-Identifier: BSD-3-Clause */
/* test_ref_abi_elementwise.c — the reference plugin's entry, memory and elementwise
 * kernels through the ABI alone: the plugin is dlopen'ed, buffers come from
 * its table, descriptors are made by hand. Expected values are closed forms
 * (or hand-computed), never the plugin's own output.
 * Plugin path: argv[1], else $GRAFT_TEST_REFERENCE_PLUGIN. */
#include <stddef.h>

#include "ref_direct.h"

/* ------------------------------------------------------------ tensors */

/* A contiguous tensor in a fresh buffer of `elems` elements (>= its numel),
 * initialised from data (`elems` elements) when given. */
static gfp_tensor make(int32_t dt, int rank, const int64_t *sizes, const void *data,
                       int64_t elems) {
    gfp_tensor t = rd_desc(dt, rank, sizes, NULL);
    void *hp;
    uint64_t bytes = (uint64_t)elems * rd_esize(dt);
    if (P->buffer_alloc(dev, bytes ? bytes : 1, &t.buffer, &hp) != GFP_OK) {
        t.buffer = NULL;
        return t;
    }
    if (data) P->buffer_write(dev, t.buffer, 0, data, bytes);
    return t;
}
static gfp_tensor vec(int32_t dt, int64_t n, const void *data) {
    int64_t s[1] = {n};
    return make(dt, 1, s, data, n);
}
static void drop(gfp_tensor *t) { P->buffer_free(dev, t->buffer); }
static void readall(const gfp_tensor *t, void *dst, int64_t elems) {
    P->buffer_read(dev, t->buffer, 0, dst, (uint64_t)elems * rd_esize(t->dtype));
}

static gfp_status launch(uint32_t op, const gfp_tensor *a, const gfp_tensor *b,
                         const gfp_tensor *c, const gfp_tensor *y, const void *params) {
    uint32_t n = c ? 3 : b ? 2 : a ? 1 : 0;
    return rd_launch(op, TS(a, b, c), n, TS(y), 1, params);
}

/* ------------------------------------------------------------ unary */
#define NV 6
typedef struct unary_case {
    uint32_t op;
    const char *name;
    const void *params;
    int n;
    double x[NV], y[NV];
} unary_case;

#define INF INFINITY
#define NAN_ NAN
#define E_ 2.718281828459045
#define PI_ 3.14159265358979323846
#define SOFTPLUS_08 0.5855503329738889 /* log1p(exp(0.8)) / 2 */

static void run_unary_case(const unary_case *c, int32_t dt) {
    gfp_tensor x = vec(dt, c->n, NULL), y = vec(dt, c->n, NULL);
    float xf[NV], yf[NV];
    double yd[NV];
    for (int i = 0; i < c->n; i++) xf[i] = (float)c->x[i];
    P->buffer_write(dev, x.buffer, 0, dt == GFP_F32 ? (void *)xf : (void *)c->x,
                    (uint64_t)c->n * rd_esize(dt));
    gfp_status st = launch(c->op, &x, NULL, NULL, &y, c->params);
    CHECK_MSG(st == GFP_OK, "%s: status %d (%s)", c->name, (int)st, last_error);
    readall(&y, dt == GFP_F32 ? (void *)yf : (void *)yd, c->n);
    for (int i = 0; i < c->n; i++) {
        double got = dt == GFP_F32 ? yf[i] : yd[i];
        double tol = dt == GFP_F32 ? 3e-6 : 1e-14;
        CHECK_MSG(check_close_(got, c->y[i], tol, tol), "%s %s x=%.17g: %.17g vs %.17g", c->name,
                  dt == GFP_F32 ? "f32" : "f64", c->x[i], got, c->y[i]);
    }
    drop(&x);
    drop(&y);
}

static void unary_float(void) {
    static const gfp_scalar_params leaky = {sizeof leaky, 0, 0.1, 0}, elu2 = {sizeof elu2, 0, 2.0, 0},
                                   sp1 = {sizeof sp1, 0, 1.0, 20.0}, sp2 = {sizeof sp2, 0, 2.0, 20.0},
                                   sp3 = {sizeof sp3, 0, 2.0, 1.0},
                                   cube = {sizeof cube, 0, 3.0, 0}, half = {sizeof half, 0, 0.5, 0};
    static const gfp_clamp_params cl = {sizeof cl, 1, 1, 0, -1.0, 1.0},
                                  cmax = {sizeof cmax, 0, 1, 0, 0.0, 2.0},
                                  crev = {sizeof crev, 1, 1, 0, 3.0, 1.0};
    const unary_case cases[] = {
        {GFP_OP_NEG, "neg", NULL, 3, {1.5, -2, 0}, {-1.5, 2, 0}},
        {GFP_OP_ABS, "abs", NULL, 3, {-3, 2.5, -INF}, {3, 2.5, INF}},
        {GFP_OP_SIGN, "sign", NULL, 5, {-2, 0, 3, -INF, NAN_}, {-1, 0, 1, -1, NAN_}},
        {GFP_OP_EXP, "exp", NULL, 4, {0, 1, -1, -INF}, {1, E_, 0.36787944117144233, 0}},
        {GFP_OP_LOG, "log", NULL, 4, {1, E_, 0, -1}, {0, 1, -INF, NAN_}},
        {GFP_OP_LOG1P, "log1p", NULL, 3, {0, 1e-10, E_ - 1}, {0, 9.999999999500001e-11, 1}},
        {GFP_OP_EXPM1, "expm1", NULL, 3, {0, 1e-10, 1}, {0, 1.00000000005e-10, E_ - 1}},
        {GFP_OP_SQRT, "sqrt", NULL, 3, {4, 2, -1}, {2, 1.4142135623730951, NAN_}},
        {GFP_OP_RSQRT, "rsqrt", NULL, 3, {4, 0.25, 0}, {0.5, 2, INF}},
        {GFP_OP_RECIPROCAL, "reciprocal", NULL, 3, {2, -4, 0}, {0.5, -0.25, INF}},
        {GFP_OP_SQUARE, "square", NULL, 2, {3, -1.5}, {9, 2.25}},
        {GFP_OP_SIN, "sin", NULL, 3, {0, PI_ / 2, PI_ / 6}, {0, 1, 0.5}},
        {GFP_OP_COS, "cos", NULL, 2, {0, PI_ / 3}, {1, 0.5}},
        {GFP_OP_TANH, "tanh", NULL, 3, {0, 1, 30}, {0, 0.7615941559557649, 1}},
        {GFP_OP_SIGMOID, "sigmoid", NULL, 5, {0, 1, -1, -1000, 1000},
         {0.5, 0.7310585786300049, 0.2689414213699951, 0, 1}},
        {GFP_OP_RELU, "relu", NULL, 4, {-1, 0, 2, NAN_}, {0, 0, 2, NAN_}},
        {GFP_OP_LEAKY_RELU, "leaky_relu", &leaky, 3, {-2, 3, 0}, {-0.2, 3, 0}},
        {GFP_OP_ELU, "elu", &elu2, 3, {-1, 2, 0}, {-1.2642411176571153, 2, 0}},
        {GFP_OP_GELU, "gelu", NULL, 3, {1, 0, -1}, {0.8413447460685429, 0, -0.15865525393145707}},
        {GFP_OP_GELU_TANH, "gelu_tanh", NULL, 3, {1, -1, 2},
         {0.8411919906082768, -0.15880800939172324, 1.954597694087775}},
        {GFP_OP_SILU, "silu", NULL, 2, {1, 0}, {0.7310585786300049, 0}},
        {GFP_OP_SOFTPLUS, "softplus", &sp1, 3, {1, 0, 30}, {1.3132616875182228, 0.6931471805599453, 30}},
        {GFP_OP_SOFTPLUS, "softplus beta 2", &sp2, 2, {1, 15}, {1.0634640055214863, 15}},
        /* the threshold applies to beta * x: 0.6 * 2 > 1 is linear, 0.4 * 2 is not */
        {GFP_OP_SOFTPLUS, "softplus threshold", &sp3, 2, {0.6, 0.4}, {0.6, SOFTPLUS_08}},
        {GFP_OP_ERF, "erf", NULL, 3, {0, 1, 0.5}, {0, 0.8427007929497149, 0.5204998778130465}},
        {GFP_OP_FLOOR, "floor", NULL, 3, {-1.5, 2.7, 3}, {-2, 2, 3}},
        {GFP_OP_CEIL, "ceil", NULL, 3, {-1.5, 2.2, 3}, {-1, 3, 3}},
        {GFP_OP_ROUND, "round", NULL, 6, {2.5, -0.5, 1.5, 0.4999, -2.5, 3.5}, {2, 0, 2, 0, -2, 4}},
        {GFP_OP_CLAMP, "clamp", &cl, 4, {-3, 0.5, 7, NAN_}, {-1, 0.5, 1, NAN_}},
        {GFP_OP_CLAMP, "clamp max only", &cmax, 3, {-3, 1, 7}, {-3, 1, 2}},
        {GFP_OP_CLAMP, "clamp min > max", &crev, 3, {0, 2, 5}, {1, 1, 1}},
        {GFP_OP_POW_SCALAR, "pow_scalar 3", &cube, 2, {2, -2}, {8, -8}},
        {GFP_OP_POW_SCALAR, "pow_scalar 0.5", &half, 2, {9, 0.25}, {3, 0.5}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        run_unary_case(&cases[i], GFP_F64);
        run_unary_case(&cases[i], GFP_F32);
    }
}

/* Sign bits the closed-form comparison cannot see: round(-0.5) = -0. */
static void unary_signed_zero(void) {
    double x[2] = {-0.5, -0.4}, y[2] = {1, 1};
    gfp_tensor tx = vec(GFP_F64, 2, x), ty = vec(GFP_F64, 2, NULL);
    CHECK(launch(GFP_OP_ROUND, &tx, NULL, NULL, &ty, NULL) == GFP_OK);
    readall(&ty, y, 2);
    CHECK(y[0] == 0 && signbit(y[0]) && y[1] == 0 && signbit(y[1]));
    CHECK(launch(GFP_OP_NEG, &ty, NULL, NULL, &ty, NULL) == GFP_OK); /* in place */
    readall(&ty, y, 2);
    CHECK(y[0] == 0 && !signbit(y[0]));
    drop(&tx);
    drop(&ty);
}

/* Output aliasing the input exactly, with a non-contiguous view. */
static void unary_in_place_strided(void) {
    double x[6] = {0, 1, 2, 3, 4, 5};
    int64_t s[2] = {2, 3};
    gfp_tensor t = make(GFP_F64, 2, s, x, 6);
    t.sizes[0] = 3; /* the transpose [3, 2], strides {1, 3} */
    t.sizes[1] = 2;
    t.strides[0] = 1;
    t.strides[1] = 3;
    CHECK(launch(GFP_OP_SQUARE, &t, NULL, NULL, &t, NULL) == GFP_OK);
    readall(&t, x, 6);
    for (int i = 0; i < 6; i++) CHECK(x[i] == (double)(i * i));
    drop(&t);
}

static void unary_int(void) {
    int64_t x[5] = {INT64_MIN, -5, 0, 7, 3000000000LL};
    int64_t y[5];
    gfp_tensor tx = vec(GFP_I64, 5, x), ty = vec(GFP_I64, 5, NULL);
    CHECK(launch(GFP_OP_NEG, &tx, NULL, NULL, &ty, NULL) == GFP_OK);
    readall(&ty, y, 5);
    CHECK(y[0] == INT64_MIN && y[1] == 5 && y[2] == 0 && y[3] == -7 && y[4] == -3000000000LL);
    CHECK(launch(GFP_OP_ABS, &tx, NULL, NULL, &ty, NULL) == GFP_OK);
    readall(&ty, y, 5);
    CHECK(y[0] == INT64_MIN && y[1] == 5 && y[2] == 0 && y[3] == 7);
    CHECK(launch(GFP_OP_SIGN, &tx, NULL, NULL, &ty, NULL) == GFP_OK);
    readall(&ty, y, 5);
    CHECK(y[0] == -1 && y[1] == -1 && y[2] == 0 && y[3] == 1 && y[4] == 1);
    CHECK(launch(GFP_OP_SQUARE, &tx, NULL, NULL, &ty, NULL) == GFP_OK);
    readall(&ty, y, 5);
    CHECK(y[0] == 0 && y[1] == 25 && y[3] == 49 && y[4] == 9000000000000000000LL);
    CHECK(launch(GFP_OP_RELU, &tx, NULL, NULL, &ty, NULL) == GFP_OK);
    readall(&ty, y, 5);
    CHECK(y[0] == 0 && y[1] == 0 && y[2] == 0 && y[3] == 7 && y[4] == 3000000000LL);
    gfp_clamp_params cl = {sizeof cl, 1, 1, 0, -1.0, 1.0};
    CHECK(launch(GFP_OP_CLAMP, &tx, NULL, NULL, &ty, &cl) == GFP_OK);
    readall(&ty, y, 5);
    CHECK(y[0] == -1 && y[1] == -1 && y[2] == 0 && y[3] == 1 && y[4] == 1);
    drop(&tx);
    drop(&ty);

    /* i32 wraps modulo 2^32: 65536^2 = 2^32 -> 0, -INT32_MIN -> INT32_MIN. */
    int32_t a[3] = {65536, INT32_MIN, -3}, b[3];
    gfp_tensor ta = vec(GFP_I32, 3, a), tb = vec(GFP_I32, 3, NULL);
    CHECK(launch(GFP_OP_SQUARE, &ta, NULL, NULL, &tb, NULL) == GFP_OK);
    readall(&tb, b, 3);
    CHECK(b[0] == 0 && b[2] == 9);
    CHECK(launch(GFP_OP_NEG, &ta, NULL, NULL, &tb, NULL) == GFP_OK);
    readall(&tb, b, 3);
    CHECK(b[0] == -65536 && b[1] == INT32_MIN && b[2] == 3);

    /* Float-only ops refuse integers, naming op and dtype. */
    CHECK(launch(GFP_OP_EXP, &ta, NULL, NULL, &tb, NULL) == GFP_ERR_UNSUPPORTED);
    CHECK_CONTAINS(error_text(), "exp");
    CHECK_CONTAINS(error_text(), "i32");
    drop(&ta);
    drop(&tb);
}

static void logical_not(void) {
    double x[4] = {0, 2, NAN_, -0.0};
    uint8_t y[4];
    gfp_tensor tx = vec(GFP_F64, 4, x), ty = vec(GFP_BOOL, 4, NULL);
    CHECK(launch(GFP_OP_LOGICAL_NOT, &tx, NULL, NULL, &ty, NULL) == GFP_OK);
    readall(&ty, y, 4);
    CHECK(y[0] == 1 && y[1] == 0 && y[2] == 0 && y[3] == 1);
    int32_t xi[3] = {0, -4, 1};
    gfp_tensor ti = vec(GFP_I32, 3, xi);
    ty.sizes[0] = 3;
    CHECK(launch(GFP_OP_LOGICAL_NOT, &ti, NULL, NULL, &ty, NULL) == GFP_OK);
    readall(&ty, y, 3);
    CHECK(y[0] == 1 && y[1] == 0 && y[2] == 0);
    drop(&tx);
    drop(&ty);
    drop(&ti);
}

/* ------------------------------------------------------------ binary */
static void binary_broadcast_and_transposed(void) {
    for (int f = 0; f < 2; f++) {
        int32_t dt = f ? GFP_F32 : GFP_F64;
        double a64[6] = {1, 2, 3, 4, 5, 6}, row64[3] = {10, 20, 30};
        float a32[6] = {1, 2, 3, 4, 5, 6}, row32[3] = {10, 20, 30};
        int64_t s23[2] = {2, 3};
        gfp_tensor a = make(dt, 2, s23, f ? (void *)a32 : (void *)a64, 6);
        /* row [3] broadcast over dim 0 by stride 0 */
        gfp_tensor row = make(dt, 2, s23, f ? (void *)row32 : (void *)row64, 3);
        row.strides[0] = 0;
        gfp_tensor y = make(dt, 2, s23, NULL, 6);
        CHECK(launch(GFP_OP_ADD, &a, &row, NULL, &y, NULL) == GFP_OK);
        double got[6];
        float gotf[6];
        readall(&y, f ? (void *)gotf : (void *)got, 6);
        const double want_add[6] = {11, 22, 33, 14, 25, 36};
        for (int i = 0; i < 6; i++) CHECK((f ? gotf[i] : got[i]) == want_add[i]);

        /* b stored [3, 2] = {{1,4},{2,5},{3,6}}, read transposed as [2, 3]
         * = a itself; the output is also transposed. */
        double bt64[6] = {1, 4, 2, 5, 3, 6};
        float bt32[6] = {1, 4, 2, 5, 3, 6};
        int64_t s32[2] = {3, 2};
        gfp_tensor bt = make(dt, 2, s32, f ? (void *)bt32 : (void *)bt64, 6);
        bt.sizes[0] = 2, bt.sizes[1] = 3, bt.strides[0] = 1, bt.strides[1] = 2;
        gfp_tensor yt = make(dt, 2, s32, NULL, 6);
        yt.sizes[0] = 2, yt.sizes[1] = 3, yt.strides[0] = 1, yt.strides[1] = 2;
        CHECK(launch(GFP_OP_MUL, &a, &bt, NULL, &yt, NULL) == GFP_OK);
        readall(&yt, f ? (void *)gotf : (void *)got, 6);
        /* yt memory holds y^T: element (i, j) at i + 2j */
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 3; j++) {
                double v = (double)(i * 3 + j + 1);
                CHECK((f ? gotf[i + 2 * j] : got[i + 2 * j]) == v * v);
            }
        CHECK(launch(GFP_OP_SUB, &a, &bt, NULL, &y, NULL) == GFP_OK);
        readall(&y, f ? (void *)gotf : (void *)got, 6);
        for (int i = 0; i < 6; i++) CHECK((f ? gotf[i] : got[i]) == 0);
        drop(&a);
        drop(&row);
        drop(&y);
        drop(&bt);
        drop(&yt);
    }
}

static void binary_float_values(void) {
    double a[5] = {1, 0, 2, NAN_, -1}, b[5] = {0, 0, 3, 1, NAN_}, y[5];
    gfp_tensor ta = vec(GFP_F64, 5, a), tb = vec(GFP_F64, 5, b), ty = vec(GFP_F64, 5, NULL);
    CHECK(launch(GFP_OP_DIV, &ta, &tb, NULL, &ty, NULL) == GFP_OK);
    readall(&ty, y, 5);
    CHECK(y[0] == INF && isnan(y[1]) && y[2] == 2.0 / 3.0);
    CHECK(launch(GFP_OP_POW, &ta, &tb, NULL, &ty, NULL) == GFP_OK);
    readall(&ty, y, 5);
    CHECK(y[0] == 1 && y[1] == 1 && y[2] == 8);
    CHECK(launch(GFP_OP_MAXIMUM, &ta, &tb, NULL, &ty, NULL) == GFP_OK);
    readall(&ty, y, 5);
    CHECK(y[0] == 1 && y[1] == 0 && y[2] == 3 && isnan(y[3]) && isnan(y[4]));
    CHECK(launch(GFP_OP_MINIMUM, &ta, &tb, NULL, &ty, NULL) == GFP_OK);
    readall(&ty, y, 5);
    CHECK(y[0] == 0 && y[1] == 0 && y[2] == 2 && isnan(y[3]) && isnan(y[4]));
    /* in place: a += b */
    CHECK(launch(GFP_OP_ADD, &ta, &tb, NULL, &ta, NULL) == GFP_OK);
    readall(&ta, y, 5);
    CHECK(y[0] == 1 && y[1] == 0 && y[2] == 5 && isnan(y[3]));
    drop(&ta);
    drop(&tb);
    drop(&ty);
}

static void binary_int(void) {
    int64_t a[7] = {7, -7, 7, -7, 5, INT64_MIN, INT64_MAX};
    int64_t b[7] = {2, 2, -2, -2, 0, -1, 1}, y[7];
    gfp_tensor ta = vec(GFP_I64, 7, a), tb = vec(GFP_I64, 7, b), ty = vec(GFP_I64, 7, NULL);
    CHECK(launch(GFP_OP_DIV, &ta, &tb, NULL, &ty, NULL) == GFP_OK);
    readall(&ty, y, 7);
    CHECK(y[0] == 3 && y[1] == -3 && y[2] == -3 && y[3] == 3); /* toward zero */
    CHECK(y[4] == 0);                                           /* x / 0 -> 0 */
    CHECK(y[5] == INT64_MIN);                                   /* wraps */
    CHECK(y[6] == INT64_MAX);
    CHECK(launch(GFP_OP_ADD, &ta, &tb, NULL, &ty, NULL) == GFP_OK);
    readall(&ty, y, 7);
    CHECK(y[0] == 9 && y[4] == 5 && y[5] == INT64_MAX && y[6] == INT64_MIN);
    CHECK(launch(GFP_OP_SUB, &ta, &tb, NULL, &ty, NULL) == GFP_OK);
    readall(&ty, y, 7);
    CHECK(y[0] == 5 && y[5] == INT64_MIN + 1 && y[6] == INT64_MAX - 1);
    CHECK(launch(GFP_OP_MUL, &ta, &tb, NULL, &ty, NULL) == GFP_OK);
    readall(&ty, y, 7);
    CHECK(y[0] == 14 && y[3] == 14 && y[4] == 0 && y[5] == INT64_MIN);
    CHECK(launch(GFP_OP_MAXIMUM, &ta, &tb, NULL, &ty, NULL) == GFP_OK);
    readall(&ty, y, 7);
    CHECK(y[1] == 2 && y[5] == -1 && y[6] == INT64_MAX);
    CHECK(launch(GFP_OP_MINIMUM, &ta, &tb, NULL, &ty, NULL) == GFP_OK);
    readall(&ty, y, 7);
    CHECK(y[1] == -7 && y[5] == INT64_MIN && y[6] == 1);
    drop(&ta);
    drop(&tb);
    drop(&ty);

    int32_t a32[3] = {INT32_MIN, INT32_MAX, -9}, b32[3] = {-1, 1, 4}, y32[3];
    gfp_tensor ta32 = vec(GFP_I32, 3, a32), tb32 = vec(GFP_I32, 3, b32), ty32 = vec(GFP_I32, 3, NULL);
    CHECK(launch(GFP_OP_DIV, &ta32, &tb32, NULL, &ty32, NULL) == GFP_OK);
    readall(&ty32, y32, 3);
    CHECK(y32[0] == INT32_MIN && y32[1] == INT32_MAX && y32[2] == -2);
    CHECK(launch(GFP_OP_ADD, &ta32, &tb32, NULL, &ty32, NULL) == GFP_OK);
    readall(&ty32, y32, 3);
    CHECK(y32[0] == INT32_MAX && y32[1] == INT32_MIN && y32[2] == -5);
    /* mixed dtypes are refused, naming the op */
    gfp_tensor tf = vec(GFP_F32, 3, NULL);
    CHECK(launch(GFP_OP_ADD, &ta32, &tf, NULL, &ty32, NULL) == GFP_ERR_UNSUPPORTED);
    CHECK_CONTAINS(error_text(), "add");

    /* integer pow: exact, wrapping; negative exponents truncate 1 / a^-b */
    int64_t pa[8] = {2, 3, -2, 1, -1, 5, 0, 3}, pb[8] = {10, 0, 3, -2, -3, -1, 0, 41}, py[8];
    gfp_tensor tpa = vec(GFP_I64, 8, pa), tpb = vec(GFP_I64, 8, pb), tpy = vec(GFP_I64, 8, NULL);
    CHECK(launch(GFP_OP_POW, &tpa, &tpb, NULL, &tpy, NULL) == GFP_OK);
    readall(&tpy, py, 8);
    const int64_t want_pow[8] = {1024, 1, -8, 1, -1, 0, 1, -420491770248316829LL}; /* 3^41 mod 2^64 */
    CHECK(!memcmp(py, want_pow, sizeof py));
    int32_t pa32[2] = {-3, 7}, pb32[2] = {41, 2}, py32[2];
    gfp_tensor tpa32 = vec(GFP_I32, 2, pa32), tpb32 = vec(GFP_I32, 2, pb32), tpy32 = vec(GFP_I32, 2, NULL);
    CHECK(launch(GFP_OP_POW, &tpa32, &tpb32, NULL, &tpy32, NULL) == GFP_OK);
    readall(&tpy32, py32, 2);
    CHECK(py32[0] == -2069870691 && py32[1] == 49); /* (-3)^41 mod 2^32 */
    /* bool arithmetic is not provided */
    gfp_tensor tbl = vec(GFP_BOOL, 2, NULL);
    CHECK(launch(GFP_OP_POW, &tbl, &tbl, NULL, &tbl, NULL) == GFP_ERR_UNSUPPORTED);
    CHECK_CONTAINS(error_text(), "bool");
    gfp_tensor *more[] = {&tpa, &tpb, &tpy, &tpa32, &tpb32, &tpy32, &tbl};
    for (size_t i = 0; i < sizeof more / sizeof more[0]; i++) drop(more[i]);
    drop(&ta32);
    drop(&tb32);
    drop(&ty32);
    drop(&tf);
}

static void comparisons(void) {
    float a[3] = {1, 2, NAN_}, b[3] = {2, 2, NAN_};
    gfp_tensor ta = vec(GFP_F32, 3, a), tb = vec(GFP_F32, 3, b), ty = vec(GFP_BOOL, 3, NULL);
    static const struct {
        uint32_t op;
        uint8_t want[3];
    } cmp[] = {{GFP_OP_EQ, {0, 1, 0}}, {GFP_OP_NE, {1, 0, 1}}, {GFP_OP_LT, {1, 0, 0}},
               {GFP_OP_LE, {1, 1, 0}}, {GFP_OP_GT, {0, 0, 0}}, {GFP_OP_GE, {0, 1, 0}}};
    for (size_t k = 0; k < 6; k++) {
        uint8_t y[3] = {9, 9, 9};
        CHECK(launch(cmp[k].op, &ta, &tb, NULL, &ty, NULL) == GFP_OK);
        readall(&ty, y, 3);
        CHECK_MSG(!memcmp(y, cmp[k].want, 3), "comparison %u: %d %d %d", (unsigned)cmp[k].op,
                  y[0], y[1], y[2]);
    }
    /* i64 compares exactly beyond 2^53, where doubles would tie. */
    int64_t ia[2] = {(1LL << 53) + 1, -3}, ib[2] = {1LL << 53, -3};
    gfp_tensor tia = vec(GFP_I64, 2, ia), tib = vec(GFP_I64, 2, ib), ty2 = vec(GFP_BOOL, 2, NULL);
    uint8_t y2[2];
    CHECK(launch(GFP_OP_GT, &tia, &tib, NULL, &ty2, NULL) == GFP_OK);
    readall(&ty2, y2, 2);
    CHECK(y2[0] == 1 && y2[1] == 0);
    CHECK(launch(GFP_OP_EQ, &tia, &tib, NULL, &ty2, NULL) == GFP_OK);
    readall(&ty2, y2, 2);
    CHECK(y2[0] == 0 && y2[1] == 1);
    /* bool inputs compare as 0 < 1 */
    uint8_t ba[2] = {0, 1}, bb[2] = {1, 1};
    gfp_tensor tba = vec(GFP_BOOL, 2, ba), tbb = vec(GFP_BOOL, 2, bb);
    CHECK(launch(GFP_OP_LT, &tba, &tbb, NULL, &ty2, NULL) == GFP_OK);
    readall(&ty2, y2, 2);
    CHECK(y2[0] == 1 && y2[1] == 0);
    /* a non-bool output is refused */
    gfp_tensor tyf = vec(GFP_F32, 3, NULL);
    CHECK(launch(GFP_OP_EQ, &ta, &tb, NULL, &tyf, NULL) == GFP_ERR_UNSUPPORTED);
    CHECK_CONTAINS(error_text(), "eq");

    /* logical ops take mixed dtypes */
    double la[4] = {0, 0, 2.5, NAN_};
    int32_t lb[4] = {0, 7, 0, -1};
    gfp_tensor tla = vec(GFP_F64, 4, la), tlb = vec(GFP_I32, 4, lb), ty4 = vec(GFP_BOOL, 4, NULL);
    uint8_t y4[4];
    CHECK(launch(GFP_OP_LOGICAL_AND, &tla, &tlb, NULL, &ty4, NULL) == GFP_OK);
    readall(&ty4, y4, 4);
    CHECK(y4[0] == 0 && y4[1] == 0 && y4[2] == 0 && y4[3] == 1);
    CHECK(launch(GFP_OP_LOGICAL_OR, &tla, &tlb, NULL, &ty4, NULL) == GFP_OK);
    readall(&ty4, y4, 4);
    CHECK(y4[0] == 0 && y4[1] == 1 && y4[2] == 1 && y4[3] == 1);
    gfp_tensor *all[] = {&ta, &tb, &ty, &tia, &tib, &ty2, &tba, &tbb, &tyf, &tla, &tlb, &ty4};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) drop(all[i]);
}

static void where(void) {
    uint8_t c[4] = {1, 0, 1, 0};
    int64_t a[4] = {1, 2, 3, (1LL << 60) + 1}, b[1] = {-9}, y[4];
    gfp_tensor tc = vec(GFP_BOOL, 4, c), ta = vec(GFP_I64, 4, a), ty = vec(GFP_I64, 4, NULL);
    gfp_tensor tb = vec(GFP_I64, 1, b);
    tb.sizes[0] = 4;
    tb.strides[0] = 0; /* a broadcast scalar */
    CHECK(launch(GFP_OP_WHERE, &tc, &ta, &tb, &ty, NULL) == GFP_OK);
    readall(&ty, y, 4);
    CHECK(y[0] == 1 && y[1] == -9 && y[2] == 3 && y[3] == -9);
    c[3] = 1;
    P->buffer_write(dev, tc.buffer, 0, c, 4);
    CHECK(launch(GFP_OP_WHERE, &tc, &ta, &tb, &ty, NULL) == GFP_OK);
    readall(&ty, y, 4);
    CHECK(y[3] == (1LL << 60) + 1); /* exact, no trip through double */
    /* the condition must be bool */
    CHECK(launch(GFP_OP_WHERE, &ta, &ta, &tb, &ty, NULL) == GFP_ERR_UNSUPPORTED);
    CHECK_CONTAINS(error_text(), "where");
    drop(&tc);
    drop(&ta);
    drop(&tb);
    drop(&ty);
}

/* ------------------------------------------------------------ copy and creation */
static void copy_conversions(void) {
    double x[6] = {2.9, -2.9, 0.5, -0.5, 1e10, NAN_};
    int32_t yi[6];
    gfp_tensor tx = vec(GFP_F64, 6, x), tyi = vec(GFP_I32, 6, NULL);
    CHECK(launch(GFP_OP_COPY, &tx, NULL, NULL, &tyi, NULL) == GFP_OK);
    readall(&tyi, yi, 6);
    CHECK(yi[0] == 2 && yi[1] == -2 && yi[2] == 0 && yi[3] == 0); /* toward zero */
    CHECK(yi[4] == INT32_MAX && yi[5] == 0); /* the plugin's defined saturation */

    double xb[4] = {0, -0.0, 0.1, NAN_};
    uint8_t yb[4];
    gfp_tensor txb = vec(GFP_F64, 4, xb), tyb = vec(GFP_BOOL, 4, NULL);
    CHECK(launch(GFP_OP_COPY, &txb, NULL, NULL, &tyb, NULL) == GFP_OK);
    readall(&tyb, yb, 4);
    CHECK(yb[0] == 0 && yb[1] == 0 && yb[2] == 1 && yb[3] == 1);

    /* i64 -> f32 rounds once (2^60 + 2^36 + 1 is just above the midpoint
     * of two floats; through double it would land on the midpoint and round
     * to even, down); i64 -> i32 wraps; bool -> f64 is 0/1 */
    int64_t xl[3] = {(1LL << 60) + (1LL << 36) + 1, (1LL << 32) + 5, -1};
    float yf[3];
    gfp_tensor txl = vec(GFP_I64, 3, xl), tyf = vec(GFP_F32, 3, NULL), tyi3 = vec(GFP_I32, 3, NULL);
    CHECK(launch(GFP_OP_COPY, &txl, NULL, NULL, &tyf, NULL) == GFP_OK);
    readall(&tyf, yf, 3);
    CHECK(yf[0] == 0x1.000002p60f && yf[2] == -1.0f);
    CHECK(launch(GFP_OP_COPY, &txl, NULL, NULL, &tyi3, NULL) == GFP_OK);
    readall(&tyi3, yi, 3);
    CHECK(yi[0] == 1 && yi[1] == 5 && yi[2] == -1);
    double yd[4];
    gfp_tensor tyd = vec(GFP_F64, 4, NULL);
    CHECK(launch(GFP_OP_COPY, &tyb, NULL, NULL, &tyd, NULL) == GFP_OK);
    readall(&tyd, yd, 4);
    CHECK(yd[0] == 0 && yd[1] == 0 && yd[2] == 1 && yd[3] == 1);

    /* broadcast input (stride 0) into a transposed output, f32 -> f64 */
    float row[3] = {0.25f, 1.5f, -2.0f};
    int64_t s23[2] = {2, 3}, s32[2] = {3, 2};
    gfp_tensor trow = make(GFP_F32, 2, s23, row, 3);
    trow.strides[0] = 0;
    gfp_tensor tt = make(GFP_F64, 2, s32, NULL, 6);
    tt.sizes[0] = 2, tt.sizes[1] = 3, tt.strides[0] = 1, tt.strides[1] = 2;
    CHECK(launch(GFP_OP_COPY, &trow, NULL, NULL, &tt, NULL) == GFP_OK);
    double m[6];
    readall(&tt, m, 6);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++) CHECK(m[i + 2 * j] == (double)row[j]);
    gfp_tensor *all[] = {&tx, &tyi, &txb, &tyb, &txl, &tyf, &tyi3, &tyd, &trow, &tt};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) drop(all[i]);
}

static void fill(void) {
    float y[6];
    gfp_tensor t = vec(GFP_F32, 6, NULL);
    float zero[6] = {0};
    P->buffer_write(dev, t.buffer, 0, zero, sizeof zero);
    t.sizes[0] = 3;
    t.strides[0] = 2; /* every other element */
    gfp_fill_params p = {sizeof p, 0, 2.5, 99};
    CHECK(launch(GFP_OP_FILL, NULL, NULL, NULL, &t, &p) == GFP_OK);
    readall(&t, y, 6);
    CHECK(y[0] == 2.5f && y[1] == 0 && y[2] == 2.5f && y[3] == 0 && y[4] == 2.5f && y[5] == 0);

    /* integers take ivalue exactly (value would round) */
    int64_t yl[2];
    gfp_tensor tl = vec(GFP_I64, 2, NULL);
    gfp_fill_params pl = {sizeof pl, 0, 1.0, (1LL << 62) + 1};
    CHECK(launch(GFP_OP_FILL, NULL, NULL, NULL, &tl, &pl) == GFP_OK);
    readall(&tl, yl, 2);
    CHECK(yl[0] == (1LL << 62) + 1 && yl[1] == (1LL << 62) + 1);
    uint8_t yb[2];
    gfp_tensor tb = vec(GFP_BOOL, 2, NULL);
    gfp_fill_params pb = {sizeof pb, 0, 0.5, 0};
    CHECK(launch(GFP_OP_FILL, NULL, NULL, NULL, &tb, &pb) == GFP_OK);
    readall(&tb, yb, 2);
    CHECK(yb[0] == 1 && yb[1] == 1);
    /* rank 0 */
    double yd = 0;
    gfp_tensor td = vec(GFP_F64, 1, NULL);
    td.rank = 0;
    CHECK(launch(GFP_OP_FILL, NULL, NULL, NULL, &td, &p) == GFP_OK);
    readall(&td, &yd, 1);
    CHECK(yd == 2.5);
    CHECK(launch(GFP_OP_FILL, NULL, NULL, NULL, &td, NULL) == GFP_ERR_INVALID);
    CHECK_CONTAINS(error_text(), "fill");
    drop(&t);
    drop(&tl);
    drop(&tb);
    drop(&td);
}

static void arange(void) {
    double y[4];
    gfp_tensor t = vec(GFP_F64, 4, NULL);
    gfp_arange_params p = {sizeof p, 0, 1.0, 0.5};
    CHECK(launch(GFP_OP_ARANGE, NULL, NULL, NULL, &t, &p) == GFP_OK);
    readall(&t, y, 4);
    CHECK(y[0] == 1 && y[1] == 1.5 && y[2] == 2 && y[3] == 2.5);
    int64_t yl[4];
    gfp_tensor tl = vec(GFP_I64, 4, NULL);
    gfp_arange_params pl = {sizeof pl, 0, -3.0, 2.0};
    CHECK(launch(GFP_OP_ARANGE, NULL, NULL, NULL, &tl, &pl) == GFP_OK);
    readall(&tl, yl, 4);
    CHECK(yl[0] == -3 && yl[1] == -1 && yl[2] == 1 && yl[3] == 3);
    /* integral start and step are exact beyond 2^53 */
    gfp_arange_params pbig = {sizeof pbig, 0, 0x1p60, 1.0};
    CHECK(launch(GFP_OP_ARANGE, NULL, NULL, NULL, &tl, &pbig) == GFP_OK);
    readall(&tl, yl, 4);
    CHECK(yl[0] == (1LL << 60) && yl[1] == (1LL << 60) + 1 && yl[3] == (1LL << 60) + 3);
    float yf[3];
    gfp_tensor tf = vec(GFP_F32, 3, NULL);
    gfp_arange_params pf = {sizeof pf, 0, 0.0, 0.1};
    CHECK(launch(GFP_OP_ARANGE, NULL, NULL, NULL, &tf, &pf) == GFP_OK);
    readall(&tf, yf, 3);
    CHECK(yf[0] == 0.0f && yf[1] == 0.1f && yf[2] == (float)0.2);
    /* 1-D only, no bool */
    gfp_tensor tb = vec(GFP_BOOL, 2, NULL);
    CHECK(launch(GFP_OP_ARANGE, NULL, NULL, NULL, &tb, &p) == GFP_ERR_UNSUPPORTED);
    t.rank = 2;
    t.sizes[0] = 2, t.sizes[1] = 2, t.strides[0] = 2, t.strides[1] = 1;
    CHECK(launch(GFP_OP_ARANGE, NULL, NULL, NULL, &t, &p) == GFP_ERR_INVALID);
    drop(&t);
    drop(&tl);
    drop(&tf);
    drop(&tb);
}

static void tril_triu(void) {
    double x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, y[9];
    int64_t s33[2] = {3, 3};
    gfp_tensor tx = make(GFP_F64, 2, s33, x, 9), ty = make(GFP_F64, 2, s33, NULL, 9);
    static const struct {
        uint32_t op;
        int64_t diag;
        double want[9];
    } cases[] = {
        {GFP_OP_TRIL, 0, {1, 0, 0, 4, 5, 0, 7, 8, 9}},  {GFP_OP_TRIL, -1, {0, 0, 0, 4, 0, 0, 7, 8, 0}},
        {GFP_OP_TRIL, 1, {1, 2, 0, 4, 5, 6, 7, 8, 9}},  {GFP_OP_TRIU, 0, {1, 2, 3, 0, 5, 6, 0, 0, 9}},
        {GFP_OP_TRIU, -1, {1, 2, 3, 4, 5, 6, 0, 8, 9}}, {GFP_OP_TRIU, 1, {0, 2, 3, 0, 0, 6, 0, 0, 0}},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        gfp_tri_params p = {sizeof p, 0, cases[k].diag};
        CHECK(launch(cases[k].op, &tx, NULL, NULL, &ty, &p) == GFP_OK);
        readall(&ty, y, 9);
        CHECK_MSG(!memcmp(y, cases[k].want, sizeof y), "%s diagonal %lld",
                  cases[k].op == GFP_OP_TRIL ? "tril" : "triu", (long long)cases[k].diag);
    }
    /* batch [2, 2, 3] of i32, tril in place */
    int32_t b[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, yb[12];
    int64_t s223[3] = {2, 2, 3};
    gfp_tensor tb = make(GFP_I32, 3, s223, b, 12);
    gfp_tri_params p0 = {sizeof p0, 0, 0};
    CHECK(launch(GFP_OP_TRIL, &tb, NULL, NULL, &tb, &p0) == GFP_OK);
    readall(&tb, yb, 12);
    const int32_t want[12] = {1, 0, 0, 4, 5, 0, 7, 0, 0, 10, 11, 0};
    CHECK(!memcmp(yb, want, sizeof want));
    /* rank 1 is refused */
    tx.rank = 1;
    ty.rank = 1;
    CHECK(launch(GFP_OP_TRIU, &tx, NULL, NULL, &ty, &p0) == GFP_ERR_INVALID);
    CHECK_CONTAINS(error_text(), "rank");
    drop(&tx);
    drop(&ty);
    drop(&tb);
}

/* ------------------------------------------------------------ errors */
static void launch_errors(void) {
    gfp_tensor a = vec(GFP_F32, 4, NULL), b = vec(GFP_F32, 4, NULL), y = vec(GFP_F32, 4, NULL);
    gfp_tensor y3 = vec(GFP_F32, 3, NULL);
    /* wrong input count */
    CHECK(launch(GFP_OP_ADD, &a, NULL, NULL, &y, NULL) == GFP_ERR_INVALID);
    CHECK_CONTAINS(error_text(), "add");
    CHECK(launch(GFP_OP_EXP, &a, &b, NULL, &y, NULL) == GFP_ERR_INVALID);
    const gfp_tensor *in[2] = {&a, &b};
    last_error[0] = '\0';
    CHECK(P->launch(dev, GFP_OP_ADD, in, 2, NULL, 0, NULL) == GFP_ERR_INVALID);
    /* a NULL input */
    const gfp_tensor *in_null[2] = {&a, NULL};
    const gfp_tensor *out[1] = {&y};
    CHECK(P->launch(dev, GFP_OP_ADD, in_null, 2, out, 1, NULL) == GFP_ERR_INVALID);
    /* NULL and short params */
    CHECK(launch(GFP_OP_LEAKY_RELU, &a, NULL, NULL, &y, NULL) == GFP_ERR_INVALID);
    CHECK_CONTAINS(error_text(), "leaky_relu");
    gfp_scalar_params small = {.struct_size = 8};
    CHECK(launch(GFP_OP_ELU, &a, NULL, NULL, &y, &small) == GFP_ERR_INVALID);
    CHECK_CONTAINS(error_text(), "struct_size");
    CHECK(launch(GFP_OP_CLAMP, &a, NULL, NULL, &y, NULL) == GFP_ERR_INVALID);
    /* shapes that differ */
    CHECK(launch(GFP_OP_ADD, &a, &b, NULL, &y3, NULL) == GFP_ERR_INVALID);
    CHECK_CONTAINS(error_text(), "shape");
    /* unknown op */
    CHECK(launch(9999, &a, NULL, NULL, &y, NULL) == GFP_ERR_UNSUPPORTED);
    CHECK_CONTAINS(error_text(), "9999");
    /* descriptors the plugin must not trust */
    gfp_tensor bad = a;
    bad.sizes[0] = 5; /* one element past the 16-byte buffer */
    CHECK(launch(GFP_OP_NEG, &bad, NULL, NULL, &y3, NULL) == GFP_ERR_INVALID);
    bad = a;
    bad.offset = 4; /* 4 elements from byte 4 */
    CHECK(launch(GFP_OP_NEG, &bad, NULL, NULL, &y, NULL) == GFP_ERR_INVALID);
    CHECK_CONTAINS(error_text(), "past the end");
    bad = a;
    bad.rank = 9;
    CHECK(launch(GFP_OP_NEG, &bad, NULL, NULL, &y, NULL) == GFP_ERR_INVALID);
    bad = a;
    bad.struct_size = 8;
    CHECK(launch(GFP_OP_NEG, &bad, NULL, NULL, &y, NULL) == GFP_ERR_INVALID);
    bad = a;
    bad.dtype = GFP_F16;
    CHECK(launch(GFP_OP_NEG, &bad, NULL, NULL, &y, NULL) == GFP_ERR_UNSUPPORTED);
    drop(&a);
    drop(&b);
    drop(&y);
    drop(&y3);
}

static uint32_t ask(uint32_t op, uint32_t n_in, const int32_t *in_dt, int32_t out_dt) {
    return rd_query(op, n_in, in_dt, 1, &out_dt);
}

static void query_op(void) {
    const int32_t f32x2[2] = {GFP_F32, GFP_F32}, i32x2[2] = {GFP_I32, GFP_I32};
    const int32_t mixed[2] = {GFP_F64, GFP_I32}, boolx3[3] = {GFP_BOOL, GFP_I64, GFP_I64};
    CHECK(ask(GFP_OP_ADD, 2, f32x2, GFP_F32) == GFP_SUPPORT_STRIDED);
    CHECK(ask(GFP_OP_ADD, 2, i32x2, GFP_I32) == GFP_SUPPORT_STRIDED);
    CHECK(ask(GFP_OP_ADD, 2, f32x2, GFP_F64) == GFP_SUPPORT_NONE);
    CHECK(ask(GFP_OP_ADD, 1, f32x2, GFP_F32) == GFP_SUPPORT_NONE);
    CHECK(ask(GFP_OP_POW, 2, i32x2, GFP_I32) == GFP_SUPPORT_STRIDED);
    CHECK(ask(GFP_OP_ADD, 2, (const int32_t[]){GFP_BOOL, GFP_BOOL}, GFP_BOOL) == GFP_SUPPORT_NONE);
    CHECK(ask(GFP_OP_EXP, 1, i32x2, GFP_I32) == GFP_SUPPORT_NONE);
    CHECK(ask(GFP_OP_EXP, 1, f32x2, GFP_F32) == GFP_SUPPORT_STRIDED);
    CHECK(ask(GFP_OP_NEG, 1, i32x2, GFP_I32) == GFP_SUPPORT_STRIDED);
    CHECK(ask(GFP_OP_LT, 2, i32x2, GFP_BOOL) == GFP_SUPPORT_STRIDED);
    CHECK(ask(GFP_OP_LT, 2, mixed, GFP_BOOL) == GFP_SUPPORT_NONE);
    CHECK(ask(GFP_OP_LOGICAL_OR, 2, mixed, GFP_BOOL) == GFP_SUPPORT_STRIDED);
    CHECK(ask(GFP_OP_WHERE, 3, boolx3, GFP_I64) == GFP_SUPPORT_STRIDED);
    CHECK(ask(GFP_OP_COPY, 1, mixed, GFP_BOOL) == GFP_SUPPORT_STRIDED);
    CHECK(ask(GFP_OP_FILL, 0, NULL, GFP_I64) == GFP_SUPPORT_STRIDED);
    CHECK(ask(GFP_OP_ARANGE, 0, NULL, GFP_BOOL) == GFP_SUPPORT_NONE);
    CHECK(ask(9999, 1, f32x2, GFP_F32) == GFP_SUPPORT_NONE);
    /* a malformed query is an error, not a guess */
    gfp_op_query q = {.struct_size = 8, .op = GFP_OP_ADD};
    uint32_t s;
    CHECK(P->query_op(dev, &q, &s) == GFP_ERR_INVALID);
    CHECK(P->query_op(dev, NULL, &s) == GFP_ERR_INVALID);
}

/* ------------------------------------------------------------ entry, device, memory */
static void negotiation(void) {
    const gfp_plugin *t = (const gfp_plugin *)1;
    gfp_negotiate_request req = {.struct_size = sizeof req, .abi_major = GFP_ABI_MAJOR + 1,
                                 .abi_minor = 0, .host = &rd_p.host};
    last_error[0] = '\0';
    CHECK(negotiate(&req, &t) == GFP_ERR_VERSION);
    CHECK(t == NULL);
    CHECK_CONTAINS(error_text(), "ABI");
    CHECK(negotiate(NULL, &t) == GFP_ERR_INVALID);
    req.abi_major = GFP_ABI_MAJOR;
    req.struct_size = 8; /* does not cover host */
    CHECK(negotiate(&req, &t) == GFP_ERR_INVALID);
    /* a newer minor is served by the same table */
    req.struct_size = sizeof req;
    req.abi_minor = GFP_ABI_MINOR + 5;
    CHECK(negotiate(&req, &t) == GFP_OK && t == P);
    CHECK(P->struct_size == sizeof(gfp_plugin) && P->abi_major == GFP_ABI_MAJOR);
    CHECK(!strcmp(P->name, "reference") && !strcmp(P->version, "1.0.0"));
    void *out = (void *)1;
    CHECK(P->query_extension(plugin_ctx, "anything", &out) == GFP_ERR_NOT_FOUND && out == NULL);
    CHECK(P->synchronize(dev) == GFP_OK);
}

static void device_properties(void) {
    uint32_t n = 0;
    CHECK(P->device_count(plugin_ctx, &n) == GFP_OK && n == 1);
    gfp_device_props props;
    memset(&props, 0xAB, sizeof props);
    props.struct_size = sizeof props;
    CHECK(P->device_props(plugin_ctx, 0, &props) == GFP_OK);
    CHECK(props.struct_size == sizeof props);
    CHECK(!strcmp(props.name, "Reference CPU (plain C)") && !strcmp(props.type, "cpu"));
    /* f32 f64 i32 i64 bool, f16 bf16 and c64 c128 (1.3) */
    CHECK(props.dtypes == 0x1FFu && props.max_rank == 8 && props.driver[0] == '\0');
    CHECK(props.flags == (GFP_DEVICE_FLAG_HOST_ADDRESSABLE | GFP_DEVICE_FLAG_THREAD_SAFE));
    CHECK(props.memory_bytes > ((uint64_t)1 << 20)); /* this machine has more than 1 MiB */
    /* An older, smaller struct: nothing past its struct_size is written. */
    unsigned char raw[sizeof(gfp_device_props)];
    memset(raw, 0xAB, sizeof raw);
    uint32_t small = (uint32_t)offsetof(gfp_device_props, type);
    memcpy(raw, &small, sizeof small);
    CHECK(P->device_props(plugin_ctx, 0, (gfp_device_props *)raw) == GFP_OK);
    uint32_t size_after;
    memcpy(&size_after, raw, sizeof size_after);
    CHECK(size_after == small);
    CHECK(!strcmp((const char *)raw + offsetof(gfp_device_props, name), "Reference CPU (plain C)"));
    int untouched = 1;
    for (size_t i = small; i < sizeof raw; i++) untouched &= raw[i] == 0xAB;
    CHECK(untouched);
    CHECK(P->device_props(plugin_ctx, 1, &props) == GFP_ERR_NOT_FOUND);
}

static void memory(void) {
    gfp_buffer buf;
    void *hp;
    CHECK(P->buffer_alloc(dev, 100, &buf, &hp) == GFP_OK);
    CHECK(hp == buf && ((uintptr_t)hp % 64) == 0);
    /* fill with a 4-byte pattern, then read through the host pointer */
    uint32_t pat = 0xDEADBEEF;
    CHECK(P->buffer_fill(dev, buf, 4, 96, &pat, 4) == GFP_OK);
    uint32_t w[25];
    memcpy(w, hp, sizeof w);
    int ok = 1;
    for (int i = 1; i < 25; i++) ok &= w[i] == 0xDEADBEEF;
    CHECK(ok);
    uint8_t one = 7;
    CHECK(P->buffer_fill(dev, buf, 0, 4, &one, 1) == GFP_OK);
    CHECK(((uint8_t *)hp)[0] == 7 && ((uint8_t *)hp)[3] == 7);
    CHECK(P->buffer_fill(dev, buf, 0, 6, &pat, 4) == GFP_ERR_INVALID); /* not a multiple */
    CHECK(P->buffer_fill(dev, buf, 0, 6, &pat, 3) == GFP_ERR_INVALID);
    /* write, copy, read; ranges past the end are refused */
    gfp_buffer buf2;
    void *hp2;
    CHECK(P->buffer_alloc(dev, 100, &buf2, &hp2) == GFP_OK);
    const char msg[] = "graft reference";
    CHECK(P->buffer_write(dev, buf, 10, msg, sizeof msg) == GFP_OK);
    CHECK(P->buffer_copy(dev, buf, 10, buf2, 50, sizeof msg) == GFP_OK);
    char back[sizeof msg];
    CHECK(P->buffer_read(dev, buf2, 50, back, sizeof back) == GFP_OK);
    CHECK(!strcmp(back, msg));
    last_error[0] = '\0';
    CHECK(P->buffer_read(dev, buf2, 90, back, sizeof back) == GFP_ERR_INVALID);
    CHECK_CONTAINS(error_text(), "100-byte");
    CHECK(P->buffer_write(dev, buf, 101, msg, 0) == GFP_ERR_INVALID);
    CHECK(P->buffer_copy(dev, buf, 0, buf2, 1, 100) == GFP_ERR_INVALID);
    /* zero and absurd sizes */
    gfp_buffer none = (gfp_buffer)1;
    CHECK(P->buffer_alloc(dev, 0, &none, &hp) == GFP_ERR_INVALID && none == NULL);
    CHECK(P->buffer_alloc(dev, (uint64_t)1 << 63, &none, &hp) == GFP_ERR_OUT_OF_MEMORY);
    CHECK_CONTAINS(error_text(), "buffer_alloc");
    P->buffer_free(dev, buf);
    P->buffer_free(dev, buf2);
    P->buffer_free(dev, NULL); /* never fails */
}

/* Last: shutdown with a buffer still allocated logs a warning. */
static void shutdown_reports_leaks(void) {
    gfp_buffer buf;
    void *hp;
    CHECK(P->buffer_alloc(dev, 64, &buf, &hp) == GFP_OK);
    int before = n_logs;
    P->shutdown(plugin_ctx);
    CHECK(n_logs == before + 1);
    CHECK_CONTAINS(log_text(), "1 buffer");
    P->buffer_free(dev, buf);
}

int main(int argc, char **argv) {
    if (!rd_open(argc, argv)) {
        CHECK_MSG(0, "the reference plugin did not load");
        return CHECK_REPORT();
    }
    RUN(negotiation);
    RUN(device_properties);
    RUN(memory);
    RUN(unary_float);
    RUN(unary_signed_zero);
    RUN(unary_in_place_strided);
    RUN(unary_int);
    RUN(logical_not);
    RUN(binary_broadcast_and_transposed);
    RUN(binary_float_values);
    RUN(binary_int);
    RUN(comparisons);
    RUN(where);
    RUN(copy_conversions);
    RUN(fill);
    RUN(arange);
    RUN(tril_triu);
    RUN(launch_errors);
    RUN(query_op);
    RUN(shutdown_reports_leaks);
    return CHECK_REPORT();
}
