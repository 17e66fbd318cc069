/* SPDX-License-Identifier: BSD-3-Clause */
/* test_cuda_xd_elementwise.c — every elementwise op on cuda:0 against the
 * reference plugin: unary, binary, comparison, logical, where, masked_fill,
 * copies between every pair of dtypes, fill, arange, tril/triu, random
 * numbers, in-place forms, and the f16/bf16 forms of the unary and binary
 * ops; on contiguous, transposed, step-sliced, offset, broadcast, 0-size,
 * scalar and odd shapes. Skipped (exit 77) without a CUDA device. */
#include "cu_xd.h"

static const gf_dtype dtypes[] = {GF_F32, GF_F64, GF_I32, GF_I64, GF_BOOL};

typedef struct shape {
    int rank;
    int64_t sizes[4];
} shape;
/* Odd sizes, one longer than a block, one that takes several grid strides,
 * a 0-size one and a scalar. */
static const shape shapes[] = {
    {2, {3, 5}}, {3, {2, 3, 4}}, {1, {1000}}, {2, {7, 33}}, {2, {0, 4}}, {0, {0}}, {1, {300001}},
};
#define N_SHAPES (sizeof shapes / sizeof shapes[0])

/* ------------------------------------------------------------ unary */
typedef gf_tensor *(*unary_fn)(const gf_tensor *);
static gf_tensor *leaky(const gf_tensor *x) { return gf_leaky_relu(x, 0.125); }
static gf_tensor *elu(const gf_tensor *x) { return gf_elu(x, 1.3); }
static gf_tensor *gelu(const gf_tensor *x) { return gf_gelu(x, false); }
static gf_tensor *gelu_tanh(const gf_tensor *x) { return gf_gelu(x, true); }
static gf_tensor *softplus(const gf_tensor *x) { return gf_softplus(x, 2.0, 5.0); }
static gf_tensor *clamp(const gf_tensor *x) { return gf_clamp(x, -1.5, 2.5); }
static gf_tensor *clamp_lo(const gf_tensor *x) { return gf_clamp(x, -0.5, NAN); }
static gf_tensor *clamp_hi(const gf_tensor *x) { return gf_clamp(x, NAN, 1.0); }
static gf_tensor *clamp_crossed(const gf_tensor *x) { return gf_clamp(x, 2.0, -1.0); }
static gf_tensor *pow_frac(const gf_tensor *x) { return gf_pow_scalar(x, 2.5); }
static gf_tensor *pow_neg(const gf_tensor *x) { return gf_pow_scalar(x, -1.0); }
/* asin and acos of x / 4 (exact), so most of XV_GENERAL lands in [-1, 1]. */
static gf_tensor *asin_q(const gf_tensor *x) {
    gf_tensor *q = gf_mul_scalar(x, 0.25), *y = q ? gf_asin(q) : NULL;
    gf_tensor_release(q);
    return y;
}
static gf_tensor *acos_q(const gf_tensor *x) {
    gf_tensor *q = gf_mul_scalar(x, 0.25), *y = q ? gf_acos(q) : NULL;
    gf_tensor_release(q);
    return y;
}

typedef struct unary_case {
    const char *name;
    unary_fn fn;
    bool ints; /* also on i32 / i64 (exact) */
    xd_values kind;
} unary_case;

static const unary_case unary_cases[] = {
    {"neg", gf_neg, true, XV_GENERAL},          {"abs", gf_abs, true, XV_GENERAL},
    {"sign", gf_sign, true, XV_GENERAL},        {"exp", gf_exp, false, XV_GENERAL},
    {"log", gf_log, false, XV_GENERAL},         {"log1p", gf_log1p, false, XV_GENERAL},
    {"expm1", gf_expm1, false, XV_GENERAL},     {"sqrt", gf_sqrt, false, XV_GENERAL},
    {"rsqrt", gf_rsqrt, false, XV_POSITIVE},    {"reciprocal", gf_reciprocal, false, XV_GENERAL},
    {"square", gf_square, true, XV_GENERAL},    {"sin", gf_sin, false, XV_GENERAL},
    {"cos", gf_cos, false, XV_GENERAL},         {"tanh", gf_tanh, false, XV_GENERAL},
    {"sigmoid", gf_sigmoid, false, XV_GENERAL}, {"relu", gf_relu, true, XV_GENERAL},
    {"leaky_relu", leaky, false, XV_GENERAL},   {"elu", elu, false, XV_GENERAL},
    {"gelu", gelu, false, XV_GENERAL},          {"gelu_tanh", gelu_tanh, false, XV_GENERAL},
    {"silu", gf_silu, false, XV_GENERAL},       {"softplus", softplus, false, XV_GENERAL},
    {"hardswish", gf_hardswish, false, XV_GENERAL},
    {"asin", gf_asin, false, XV_GENERAL},       {"asin [-1, 1]", asin_q, false, XV_GENERAL},
    {"acos", gf_acos, false, XV_GENERAL},       {"acos [-1, 1]", acos_q, false, XV_GENERAL},
    {"atan", gf_atan, false, XV_GENERAL},
    {"erf", gf_erf, false, XV_GENERAL},         {"floor", gf_floor, false, XV_GENERAL},
    {"ceil", gf_ceil, false, XV_GENERAL},       {"round", gf_round, false, XV_GENERAL},
    {"clamp", clamp, true, XV_GENERAL},         {"clamp (min only)", clamp_lo, true, XV_GENERAL},
    {"clamp (max only)", clamp_hi, true, XV_GENERAL},
    {"clamp (min > max)", clamp_crossed, true, XV_GENERAL},
    {"pow_scalar 2.5", pow_frac, false, XV_GENERAL},
    {"pow_scalar -1", pow_neg, false, XV_GENERAL},
    {"logical_not", gf_logical_not, true, XV_GENERAL},
};
#define N_UNARY (sizeof unary_cases / sizeof unary_cases[0])

static void test_unary(void) {
    for (size_t u = 0; u < N_UNARY; u++) {
        const unary_case *uc = &unary_cases[u];
        for (size_t di = 0; di < 4; di++) {
            gf_dtype dt = dtypes[di];
            if (!xd_is_float(dt) && !uc->ints) continue;
            for (size_t s = 0; s < N_SHAPES; s++) {
                xd_layout L = (xd_layout)((u + s) % XL_COUNT);
                xd_seed(u * 100 + di * 10 + s);
                xd_pair x = xd_pair_rand(dt, shapes[s].rank, shapes[s].sizes, uc->kind, L);
                char what[160];
                snprintf(what, sizeof what, "%s %s [shape %zu, %s]", uc->name, gf_dtype_name(dt), s,
                         xd_layout_name[L]);
                xd_check_pair(what, uc->fn(x.d), uc->fn(x.r));
                xd_pair_release(x);
            }
        }
    }
}

/* ------------------------------------------------------------ binary */
typedef gf_tensor *(*binary_fn)(const gf_tensor *, const gf_tensor *);
typedef struct binary_case {
    const char *name;
    binary_fn fn;
    bool ints, bools;
    xd_values kind_b;
} binary_case;

static const binary_case binary_cases[] = {
    {"add", gf_add, true, false, XV_GENERAL},       {"sub", gf_sub, true, false, XV_GENERAL},
    {"mul", gf_mul, true, false, XV_GENERAL},       {"div", gf_div, true, false, XV_GENERAL},
    {"pow", gf_pow, true, false, XV_SMALL},         {"maximum", gf_maximum, true, false, XV_GENERAL},
    {"minimum", gf_minimum, true, false, XV_GENERAL}, {"eq", gf_eq, true, true, XV_GENERAL},
    {"ne", gf_ne, true, true, XV_GENERAL},          {"lt", gf_lt, true, true, XV_GENERAL},
    {"le", gf_le, true, true, XV_GENERAL},          {"gt", gf_gt, true, true, XV_GENERAL},
    {"ge", gf_ge, true, true, XV_GENERAL},
    {"logical_and", gf_logical_and, true, true, XV_GENERAL},
    {"logical_or", gf_logical_or, true, true, XV_GENERAL},
    {"atan2", gf_atan2, true, true, XV_GENERAL}, /* integers and bool: in f32 */
};
#define N_BINARY (sizeof binary_cases / sizeof binary_cases[0])

static void test_binary(void) {
    for (size_t c = 0; c < N_BINARY; c++) {
        const binary_case *bc = &binary_cases[c];
        for (size_t di = 0; di < 5; di++) {
            gf_dtype dt = dtypes[di];
            if ((dt == GF_I32 || dt == GF_I64) && !bc->ints) continue;
            if (dt == GF_BOOL && !bc->bools) continue;
            for (size_t s = 0; s < N_SHAPES; s++) {
                xd_seed(c * 1000 + di * 10 + s);
                const shape *sh = &shapes[s];
                xd_pair a = xd_pair_rand(dt, sh->rank, sh->sizes, XV_GENERAL,
                                         (xd_layout)(s % XL_COUNT));
                xd_pair b = xd_pair_rand(dt, sh->rank, sh->sizes, bc->kind_b,
                                         (xd_layout)((s + 1) % XL_COUNT));
                char what[160];
                snprintf(what, sizeof what, "%s %s [shape %zu]", bc->name, gf_dtype_name(dt), s);
                xd_check_pair(what, bc->fn(a.d, b.d), bc->fn(a.r, b.r));
                xd_pair_release(a);
                xd_pair_release(b);
            }
            /* Broadcasting: [4, 1, 3] with [5, 1] (stride-0 dims on both sides). */
            xd_seed(c * 7 + di);
            xd_pair a = xd_pair_rand(dt, 3, SZ(4, 1, 3), XV_GENERAL, XL_CONTIG);
            xd_pair b = xd_pair_rand(dt, 2, SZ(5, 1), bc->kind_b, XL_TRANSPOSED);
            char what[160];
            snprintf(what, sizeof what, "%s %s broadcast", bc->name, gf_dtype_name(dt));
            xd_check_pair(what, bc->fn(a.d, b.d), bc->fn(a.r, b.r));
            xd_pair_release(a);
            xd_pair_release(b);
        }
    }
    /* Mixed dtypes: the core promotes, then the device runs one dtype. */
    xd_pair a = xd_pair_rand(GF_I32, 2, SZ(3, 4), XV_GENERAL, XL_CONTIG);
    xd_pair b = xd_pair_rand(GF_F64, 2, SZ(3, 4), XV_GENERAL, XL_STEP);
    xd_check_pair("add i32 + f64", gf_add(a.d, b.d), gf_add(a.r, b.r));
    xd_check_pair("logical_or i32, f64", gf_logical_or(a.d, b.d), gf_logical_or(a.r, b.r));
    xd_pair_release(a);
    xd_pair_release(b);
}

static void test_where_masked(void) {
    for (size_t di = 0; di < 5; di++) {
        gf_dtype dt = dtypes[di];
        xd_seed(di + 500);
        xd_pair c = xd_pair_rand(GF_BOOL, 2, SZ(6, 7), XV_GENERAL, XL_TRANSPOSED);
        xd_pair a = xd_pair_rand(dt, 2, SZ(6, 7), XV_GENERAL, XL_STEP);
        xd_pair b = xd_pair_rand(dt, 1, SZ(7), XV_GENERAL, XL_OFFSET); /* broadcast rows */
        char what[96];
        snprintf(what, sizeof what, "where %s", gf_dtype_name(dt));
        xd_check_pair(what, gf_where(c.d, a.d, b.d), gf_where(c.r, a.r, b.r));
        snprintf(what, sizeof what, "masked_fill %s", gf_dtype_name(dt));
        xd_check_pair(what, gf_masked_fill(a.d, c.d, -3.0), gf_masked_fill(a.r, c.r, -3.0));
        xd_pair_release(c);
        xd_pair_release(a);
        xd_pair_release(b);
    }
}

/* ------------------------------------------------------------ copies, creation */
static void test_copies(void) {
    for (size_t i = 0; i < 5; i++)
        for (size_t j = 0; j < 5; j++) {
            xd_seed(i * 5 + j + 900);
            xd_pair x = xd_pair_rand(dtypes[i], 3, SZ(3, 4, 5), XV_GENERAL, (xd_layout)((i + j) % 4));
            char what[96];
            snprintf(what, sizeof what, "copy %s -> %s", gf_dtype_name(dtypes[i]),
                     gf_dtype_name(dtypes[j]));
            xd_check_pair(what, gf_to_dtype(x.d, dtypes[j]), gf_to_dtype(x.r, dtypes[j]));
            xd_pair_release(x);
        }
    /* contiguous() of every layout, and a strided in-place copy. */
    for (int L = 0; L < XL_COUNT; L++) {
        xd_pair x = xd_pair_rand(GF_F64, 3, SZ(2, 5, 3), XV_GENERAL, (xd_layout)L);
        xd_check_pair(xd_layout_name[L], gf_contiguous(x.d), gf_contiguous(x.r));
        xd_pair y = xd_pair_rand(GF_F32, 3, SZ(2, 5, 3), XV_PLAIN, XL_TRANSPOSED);
        CHECK(gf_copy_(y.d, x.d) == GF_OK && gf_copy_(y.r, x.r) == GF_OK);
        xd_check("copy_ f64 into a transposed f32 view", y.d, y.r);
        xd_pair_release(x);
        xd_pair_release(y);
    }
    /* A round trip larger than the staging buffers, of an odd size. */
    int64_t n = 3 * (1 << 20) + 12345;
    xd_pair big = xd_pair_rand(GF_F32, 1, &n, XV_GENERAL, XL_CONTIG);
    gf_tensor *back = gf_to_device(big.d, xd_ref);
    xd_check_tol("12 MB round trip", back, big.r, (xd_tol){0, 0});
    gf_tensor_release(back);
    xd_pair_release(big);
}

static void test_creation(void) {
    const double values[] = {0.0, -2.75, 3e9, NAN, -INFINITY, 1.0};
    for (size_t di = 0; di < 5; di++)
        for (size_t v = 0; v < 6; v++) {
            gf_dtype dt = dtypes[di];
            if (!xd_is_float(dt) && !isfinite(values[v])) continue;
            char what[96];
            snprintf(what, sizeof what, "full %s %g", gf_dtype_name(dt), values[v]);
            xd_check_pair(what, gf_full(SZ(3, 17), 2, values[v], dt, xd_dev),
                          gf_full(SZ(3, 17), 2, values[v], dt, xd_ref));
        }
    /* Fill through the FILL op: a strided view filled in place. */
    xd_pair x = xd_pair_rand(GF_I64, 2, SZ(4, 6), XV_GENERAL, XL_TRANSPOSED);
    CHECK(gf_fill_(x.d, -7.0) == GF_OK && gf_fill_(x.r, -7.0) == GF_OK);
    xd_check("fill_ of a transposed view", x.d, x.r);
    xd_pair_release(x);
    const double ar[][3] = {{0, 10, 1}, {-3, 7.5, 0.5}, {5, -5, -1.5}, {1e15, 1e15 + 40, 3}};
    for (size_t di = 0; di < 4; di++)
        for (size_t k = 0; k < 4; k++) {
            char what[96];
            snprintf(what, sizeof what, "arange %s #%zu", gf_dtype_name(dtypes[di]), k);
            xd_check_pair(what, gf_arange(ar[k][0], ar[k][1], ar[k][2], dtypes[di], xd_dev),
                          gf_arange(ar[k][0], ar[k][1], ar[k][2], dtypes[di], xd_ref));
        }
    for (size_t di = 0; di < 5; di++)
        for (int64_t diag = -2; diag <= 3; diag++) {
            xd_pair m = xd_pair_rand(dtypes[di], 3, SZ(2, 4, 5), XV_GENERAL,
                                     (xd_layout)((diag + 2) % 4));
            char what[96];
            snprintf(what, sizeof what, "tril/triu %s diagonal %lld", gf_dtype_name(dtypes[di]),
                     (long long)diag);
            xd_check_pair(what, gf_tril(m.d, diag), gf_tril(m.r, diag));
            xd_check_pair(what, gf_triu(m.d, diag), gf_triu(m.r, diag));
            xd_pair_release(m);
        }
}

/* The same seed gives the same numbers on every device: uniform and
 * bernoulli bit for bit, normal within the last bit of log/sqrt/cos. */
static void test_random(void) {
    const gf_dtype fl[] = {GF_F32, GF_F64};
    for (int i = 0; i < 2; i++) {
        gf_manual_seed(1234);
        gf_tensor *a = gf_rand_uniform(SZ(257, 3), 2, -1.5, 2.0, fl[i], xd_dev);
        gf_manual_seed(1234);
        gf_tensor *b = gf_rand_uniform(SZ(257, 3), 2, -1.5, 2.0, fl[i], xd_ref);
        xd_check_pair_tol("rand_uniform", a, b, (xd_tol){0, 0});
        gf_manual_seed(99);
        a = gf_rand_normal(SZ(1001), 1, 0.5, 2.0, fl[i], xd_dev);
        gf_manual_seed(99);
        b = gf_rand_normal(SZ(1001), 1, 0.5, 2.0, fl[i], xd_ref);
        xd_check_pair_tol("rand_normal", a, b, fl[i] == GF_F32 ? (xd_tol){1.2e-7, 1e-7}
                                                                : (xd_tol){4e-16, 4e-16});
    }
    for (size_t di = 0; di < 5; di++) {
        gf_manual_seed(7);
        gf_tensor *a = gf_bernoulli(SZ(33, 9), 2, 0.3, dtypes[di], xd_dev);
        gf_manual_seed(7);
        gf_tensor *b = gf_bernoulli(SZ(33, 9), 2, 0.3, dtypes[di], xd_ref);
        xd_check_pair("bernoulli", a, b);
    }
}

static void test_inplace(void) {
    xd_pair a = xd_pair_rand(GF_F32, 2, SZ(5, 6), XV_GENERAL, XL_TRANSPOSED);
    xd_pair b = xd_pair_rand(GF_F32, 1, SZ(6), XV_GENERAL, XL_STEP);
    CHECK(gf_add_(a.d, b.d) == GF_OK && gf_add_(a.r, b.r) == GF_OK);
    xd_check("add_ into a transposed view", a.d, a.r);
    CHECK(gf_relu_(a.d) == GF_OK && gf_relu_(a.r) == GF_OK);
    xd_check("relu_", a.d, a.r);
    CHECK(gf_clamp_(a.d, 0.1, 1.5) == GF_OK && gf_clamp_(a.r, 0.1, 1.5) == GF_OK);
    xd_check("clamp_", a.d, a.r);
    CHECK(gf_exp_(a.d) == GF_OK && gf_exp_(a.r) == GF_OK);
    xd_check("exp_", a.d, a.r);
    xd_pair_release(a);
    xd_pair_release(b);
}

/* Values for half tests: [-2, 2] without |x| < 0.05, so that no quotient
 * leaves f16's range (65504) where the f32 oracle stays finite. */
static xd_pair half_inputs(int rank, const int64_t *sizes, bool positive, xd_layout L) {
    int64_t n = xd_numel(rank, sizes);
    double *v = xd_vals(GF_F32, n, positive ? XV_POSITIVE : XV_SMALL);
    for (int64_t i = 0; i < n; i++)
        if (fabs(v[i]) < 0.05) v[i] = v[i] < 0 ? -0.05 - v[i] : 0.05 + v[i];
    xd_pair p = xd_pair_make(GF_F32, rank, sizes, v, L);
    free(v);
    return p;
}

/* f16 and bf16: the device computes in half (through f32), the reference in
 * f32 on the same half inputs; one rounding apart. */
static void test_half(void) {
    const gf_dtype halves[] = {GF_F16, GF_BF16};
    for (int h = 0; h < 2; h++) {
        if (!xd_stores(halves[h])) continue;
        xd_tol tol = xd_half_tol(halves[h]);
        for (size_t u = 0; u < N_UNARY; u++) {
            if (unary_cases[u].fn == gf_logical_not) continue;
            xd_seed(u + 3000);
            xd_pair x = half_inputs(2, SZ(9, 31), unary_cases[u].kind == XV_POSITIVE, XL_CONTIG);
            xd_pair xh = xd_half_make(halves[h], &x);
            char what[96];
            snprintf(what, sizeof what, "%s %s", unary_cases[u].name, gf_dtype_name(halves[h]));
            gf_tensor *got = unary_cases[u].fn(xh.d), *want = unary_cases[u].fn(xh.r);
            CHECK_MSG(!got || gf_tensor_dtype(got) == halves[h], "%s: result dtype %s", what,
                      got ? gf_dtype_name(gf_tensor_dtype(got)) : "-");
            xd_check_pair_tol(what, got, want, tol);
            xd_pair_release(xh);
            xd_pair_release(x);
        }
        for (size_t c = 0; c < N_BINARY; c++) {
            xd_seed(c + 4000);
            xd_pair a = half_inputs(2, SZ(9, 31), false, XL_TRANSPOSED);
            xd_pair b = half_inputs(2, SZ(9, 31), false, XL_STEP);
            xd_pair ah = xd_half_make(halves[h], &a), bh = xd_half_make(halves[h], &b);
            char what[96];
            snprintf(what, sizeof what, "%s %s", binary_cases[c].name, gf_dtype_name(halves[h]));
            xd_check_pair_tol(what, binary_cases[c].fn(ah.d, bh.d), binary_cases[c].fn(ah.r, bh.r),
                              tol);
            xd_pair_release(ah);
            xd_pair_release(bh);
            xd_pair_release(a);
            xd_pair_release(b);
        }
    }
}

int main(void) {
    int st = xd_init();
    if (st != 0) return st;
    RUN(test_unary);
    RUN(test_binary);
    RUN(test_where_masked);
    RUN(test_copies);
    RUN(test_creation);
    RUN(test_random);
    RUN(test_inplace);
    RUN(test_half);
    return xd_finish();
}
