/* SPDX-License-Identifier: BSD-3-Clause */
/* test_ocl_elementwise.c — every elementwise op on the OpenCL device against
 * the reference plugin: unary, binary, comparison, logical, where, copy with
 * every dtype conversion, fill, arange, tril/triu and in-place forms, on
 * contiguous, transposed, step-sliced, offset, broadcast, 0-size, scalar and
 * odd shapes. */
#include "xd_test.h"

static const gf_dtype all_dtypes[] = {GF_F32, GF_F64, GF_I32, GF_I64, GF_BOOL};
static bool have_f64;

static bool dtype_ok(gf_dtype dt) { return dt != GF_F64 || have_f64; }

/* Shapes every op is run on: odd sizes, a row longer than a work-group, a
 * 0-size one, a scalar, and ranks 3 and 4 with rows short and long (the
 * strided form's walks, ocl_launch.c, split at 32). */
typedef struct shape {
    int rank;
    int64_t sizes[4];
} shape;
static const shape shapes[] = {
    {2, {3, 5}}, {3, {2, 3, 4}}, {1, {130}}, {2, {7, 33}}, {2, {0, 4}}, {0, {0}},
    {3, {3, 2, 40}}, {4, {2, 3, 2, 5}},
};
#define N_SHAPES (sizeof shapes / sizeof shapes[0])
static const xd_layout layouts[] = {XL_CONTIG, XL_TRANSPOSED, XL_STEP, XL_OFFSET};

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
    bool ints;       /* exact on i32 / i64 too */
    xd_values kind;  /* input values */
} unary_case;

static const unary_case unary_cases[] = {
    {"neg", gf_neg, true, XV_GENERAL},
    {"abs", gf_abs, true, XV_GENERAL},
    {"sign", gf_sign, true, XV_GENERAL},
    {"exp", gf_exp, false, XV_GENERAL},
    {"log", gf_log, false, XV_GENERAL},
    {"log1p", gf_log1p, false, XV_GENERAL},
    {"expm1", gf_expm1, false, XV_GENERAL},
    {"sqrt", gf_sqrt, false, XV_GENERAL},
    {"rsqrt", gf_rsqrt, false, XV_POSITIVE},
    {"reciprocal", gf_reciprocal, false, XV_GENERAL},
    {"square", gf_square, true, XV_GENERAL},
    {"sin", gf_sin, false, XV_GENERAL},
    {"cos", gf_cos, false, XV_GENERAL},
    {"tanh", gf_tanh, false, XV_GENERAL},
    {"sigmoid", gf_sigmoid, false, XV_GENERAL},
    {"relu", gf_relu, true, XV_GENERAL},
    {"leaky_relu", leaky, false, XV_GENERAL},
    {"elu", elu, false, XV_GENERAL},
    {"gelu", gelu, false, XV_GENERAL},
    {"gelu_tanh", gelu_tanh, false, XV_GENERAL},
    {"silu", gf_silu, false, XV_GENERAL},
    {"hardswish", gf_hardswish, false, XV_GENERAL},
    {"asin", gf_asin, false, XV_GENERAL},
    {"asin [-1, 1]", asin_q, false, XV_GENERAL},
    {"acos", gf_acos, false, XV_GENERAL},
    {"acos [-1, 1]", acos_q, false, XV_GENERAL},
    {"atan", gf_atan, false, XV_GENERAL},
    {"softplus", softplus, false, XV_GENERAL},
    {"erf", gf_erf, false, XV_GENERAL},
    {"floor", gf_floor, false, XV_GENERAL},
    {"ceil", gf_ceil, false, XV_GENERAL},
    {"round", gf_round, false, XV_GENERAL},
    {"clamp", clamp, true, XV_GENERAL},
    {"clamp (min only)", clamp_lo, true, XV_GENERAL},
    {"clamp (max only)", clamp_hi, true, XV_GENERAL},
    {"clamp (min > max)", clamp_crossed, true, XV_GENERAL},
    {"pow_scalar 2.5", pow_frac, false, XV_GENERAL},
    {"pow_scalar -1", pow_neg, false, XV_GENERAL},
    {"logical_not", gf_logical_not, true, XV_GENERAL},
};

static void test_unary(void) {
    for (size_t u = 0; u < sizeof unary_cases / sizeof unary_cases[0]; u++) {
        const unary_case *uc = &unary_cases[u];
        for (size_t di = 0; di < 5; di++) {
            gf_dtype dt = all_dtypes[di];
            if (!dtype_ok(dt) || dt == GF_BOOL) continue;
            bool is_f = dt == GF_F32 || dt == GF_F64;
            if (!is_f && !uc->ints) continue;
            for (size_t s = 0; s < N_SHAPES; s++) {
                xd_layout L = layouts[(u + s) % 4]; /* every layout, spread over shapes */
                xd_seed(u * 100 + di * 10 + s);
                xd_pair x = xd_pair_rand(dt, shapes[s].rank, shapes[s].sizes, uc->kind, L);
                char what[160];
                snprintf(what, sizeof what, "%s %s [shape %zu, %s]", uc->name, xd_dtn(dt), s,
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
    xd_values kind_b; /* values of the second operand */
} binary_case;

static const binary_case binary_cases[] = {
    {"add", gf_add, true, false, XV_GENERAL},
    {"sub", gf_sub, true, false, XV_GENERAL},
    {"mul", gf_mul, true, false, XV_GENERAL},
    {"div", gf_div, true, false, XV_GENERAL},
    {"pow", gf_pow, true, false, XV_SMALL},
    {"maximum", gf_maximum, true, false, XV_GENERAL},
    {"minimum", gf_minimum, true, false, XV_GENERAL},
    {"eq", gf_eq, true, true, XV_GENERAL},
    {"ne", gf_ne, true, true, XV_GENERAL},
    {"lt", gf_lt, true, true, XV_GENERAL},
    {"le", gf_le, true, true, XV_GENERAL},
    {"gt", gf_gt, true, true, XV_GENERAL},
    {"ge", gf_ge, true, true, XV_GENERAL},
    {"logical_and", gf_logical_and, true, true, XV_GENERAL},
    {"logical_or", gf_logical_or, true, true, XV_GENERAL},
    {"atan2", gf_atan2, true, true, XV_GENERAL}, /* integers and bool: in f32 */
};

/* Operand shape pairs: equal, broadcast both ways, scalar, 0-size, rank 3
 * with long rows. */
typedef struct bshape {
    int ra, rb;
    int64_t a[3], b[3];
} bshape;
static const bshape bshapes[] = {
    {2, 2, {5, 7}, {5, 7}},    {3, 2, {3, 1, 5}, {4, 5}}, {1, 2, {6}, {3, 6}},
    {2, 0, {4, 33}, {0}},      {2, 2, {0, 3}, {1, 3}},    {2, 2, {37, 1}, {1, 40}},
    {3, 2, {2, 1, 36}, {3, 36}},
};

static void test_binary(void) {
    for (size_t bi = 0; bi < sizeof binary_cases / sizeof binary_cases[0]; bi++) {
        const binary_case *bc = &binary_cases[bi];
        for (size_t di = 0; di < 5; di++) {
            gf_dtype dt = all_dtypes[di];
            if (!dtype_ok(dt)) continue;
            if ((dt == GF_I32 || dt == GF_I64) && !bc->ints) continue;
            if (dt == GF_BOOL && !bc->bools) continue;
            for (size_t s = 0; s < sizeof bshapes / sizeof bshapes[0]; s++) {
                const bshape *sh = &bshapes[s];
                xd_layout La = layouts[(bi + s) % 4], Lb = layouts[(bi + 2 * s + 1) % 4];
                xd_seed(bi * 1000 + di * 10 + s);
                xd_pair a = xd_pair_rand(dt, sh->ra, sh->a, XV_GENERAL, La);
                xd_pair b = xd_pair_rand(dt, sh->rb, sh->b, bc->kind_b, Lb);
                char what[160];
                snprintf(what, sizeof what, "%s %s [shapes %zu, %s, %s]", bc->name, xd_dtn(dt), s,
                         xd_layout_name[La], xd_layout_name[Lb]);
                /* Integer division by zero is not a case graft's true division reaches. */
                xd_check_pair(what, bc->fn(a.d, b.d), bc->fn(a.r, b.r));
                xd_pair_release(a);
                xd_pair_release(b);
            }
        }
    }
    /* Logical ops take operands of different dtypes as they are. */
    for (size_t da = 0; da < 5; da++)
        for (size_t db = 0; db < 5; db++) {
            gf_dtype ta = all_dtypes[da], tb = all_dtypes[db];
            if (!dtype_ok(ta) || !dtype_ok(tb)) continue;
            xd_seed(da * 7 + db);
            xd_pair a = xd_pair_rand(ta, 2, SZ(4, 9), XV_GENERAL, XL_STEP);
            xd_pair b = xd_pair_rand(tb, 2, SZ(4, 9), XV_GENERAL, XL_TRANSPOSED);
            char what[96];
            snprintf(what, sizeof what, "logical_and %s, %s", xd_dtn(ta), xd_dtn(tb));
            xd_check_pair(what, gf_logical_and(a.d, b.d), gf_logical_and(a.r, b.r));
            snprintf(what, sizeof what, "logical_or %s, %s", xd_dtn(ta), xd_dtn(tb));
            xd_check_pair(what, gf_logical_or(a.d, b.d), gf_logical_or(a.r, b.r));
            xd_pair_release(a);
            xd_pair_release(b);
        }
}

/* ------------------------------------------------------------ where, copy, fill */
static void test_where(void) {
    for (size_t di = 0; di < 5; di++) {
        gf_dtype dt = all_dtypes[di];
        if (!dtype_ok(dt)) continue;
        xd_seed(di);
        xd_pair c = xd_pair_rand(GF_BOOL, 3, SZ(3, 1, 6), XV_GENERAL, XL_STEP);
        xd_pair a = xd_pair_rand(dt, 2, SZ(4, 6), XV_GENERAL, XL_TRANSPOSED);
        xd_pair b = xd_pair_rand(dt, 0, SZ(0), XV_GENERAL, XL_CONTIG);
        char what[64];
        snprintf(what, sizeof what, "where %s (broadcast)", xd_dtn(dt));
        xd_check_pair(what, gf_where(c.d, a.d, b.d), gf_where(c.r, a.r, b.r));
        xd_pair c2 = xd_pair_rand(GF_BOOL, 1, SZ(300), XV_GENERAL, XL_CONTIG);
        xd_pair a2 = xd_pair_rand(dt, 1, SZ(300), XV_GENERAL, XL_CONTIG);
        xd_pair b2 = xd_pair_rand(dt, 1, SZ(300), XV_GENERAL, XL_OFFSET);
        snprintf(what, sizeof what, "where %s (1-D)", xd_dtn(dt));
        xd_check_pair(what, gf_where(c2.d, a2.d, b2.d), gf_where(c2.r, a2.r, b2.r));
        xd_pair_release(c);
        xd_pair_release(a);
        xd_pair_release(b);
        xd_pair_release(c2);
        xd_pair_release(a2);
        xd_pair_release(b2);
    }
}

static void test_copy_convert(void) {
    for (size_t si = 0; si < 5; si++)
        for (size_t di = 0; di < 5; di++) {
            gf_dtype from = all_dtypes[si], to = all_dtypes[di];
            if (!dtype_ok(from) || !dtype_ok(to)) continue;
            for (int L = 0; L < 4; L++) {
                xd_seed(si * 50 + di * 5 + (uint64_t)L);
                xd_pair x = xd_pair_rand(from, 2, SZ(9, 70), XV_GENERAL, (xd_layout)L);
                /* Large magnitudes too, for the saturating conversions. */
                char what[96];
                snprintf(what, sizeof what, "copy %s -> %s [%s]", xd_dtn(from), xd_dtn(to),
                         xd_layout_name[L]);
                xd_check_pair(what, gf_to_dtype(x.d, to), gf_to_dtype(x.r, to));
                xd_pair_release(x);
            }
        }
    /* Float to integer at and beyond the limits, and NaN. */
    static const double edge[] = {2147483647.0,  2147483648.0, -2147483649.0, 1e19, -1e19,
                                  NAN,           -0.7,         0.7,           9.3e18, -2.5};
    for (size_t si = 0; si < 2; si++) {
        gf_dtype from = si ? GF_F64 : GF_F32;
        if (!dtype_ok(from)) continue;
        xd_pair x = xd_pair_make(from, 1, SZ(10), edge, XL_CONTIG);
        xd_check_pair("float -> i32 at the limits", gf_to_dtype(x.d, GF_I32), gf_to_dtype(x.r, GF_I32));
        xd_check_pair("float -> i64 at the limits", gf_to_dtype(x.d, GF_I64), gf_to_dtype(x.r, GF_I64));
        xd_check_pair("float -> bool", gf_to_dtype(x.d, GF_BOOL), gf_to_dtype(x.r, GF_BOOL));
        xd_pair_release(x);
    }
    /* Contiguous copies of views, and a round trip between the devices. */
    xd_pair x = xd_pair_rand(GF_F32, 3, SZ(4, 5, 6), XV_GENERAL, XL_TRANSPOSED);
    xd_check_pair("contiguous of a transposed view", gf_contiguous(x.d), gf_contiguous(x.r));
    gf_tensor *back = gf_to_device(x.d, xd_ref);
    xd_check("opencl -> reference keeps the values", back, x.r);
    gf_tensor_release(back);
    xd_pair_release(x);
}

/* gf_contiguous of every permutation of rank 3 and 4, plain and step-sliced,
 * in every dtype: the strided copy's walks, and the transposing copy's tiles
 * (ocl_elementwise.c) cut at sizes that are not multiples of 16. */
static gf_tensor *permuted_copy(const gf_tensor *x, const int *perm, int rank) {
    gf_tensor *v = gf_permute(x, perm, rank);
    gf_tensor *c = v ? gf_contiguous(v) : NULL;
    gf_tensor_release(v);
    return c;
}

static void test_permute_copies(void) {
    static const int64_t sizes[2][4] = {{5, 17, 33}, {3, 18, 2, 20}};
    for (int r = 3; r <= 4; r++)
        for (size_t di = 0; di < 5; di++) {
            gf_dtype dt = all_dtypes[di];
            if (!dtype_ok(dt)) continue;
            for (int li = 0; li < 2; li++) {
                xd_layout L = li ? XL_STEP : XL_CONTIG;
                xd_seed((uint64_t)(r * 100) + di * 5 + (uint64_t)li);
                xd_pair x = xd_pair_rand(dt, r, sizes[r - 3], XV_GENERAL, L);
                int p[4];
                for (int code = 0; code < 256; code++) { /* base-4 digits, distinct */
                    unsigned seen = 0;
                    bool ok = true;
                    for (int d = 0; d < r; d++) {
                        p[d] = (code >> (2 * d)) & 3;
                        ok = ok && p[d] < r && !(seen & (1u << p[d]));
                        seen |= 1u << (p[d] & 3);
                    }
                    if (!ok || code >= (1 << (2 * r))) continue;
                    char what[96];
                    snprintf(what, sizeof what, "permute (%d, %d, %d, %d) of rank %d %s [%s]", p[0],
                             p[1], p[2], r > 3 ? p[3] : -1, r, xd_dtn(dt), xd_layout_name[L]);
                    xd_check_pair(what, permuted_copy(x.d, p, r), permuted_copy(x.r, p, r));
                }
                xd_pair_release(x);
            }
        }
}

static void test_fill_arange(void) {
    for (size_t di = 0; di < 5; di++) {
        gf_dtype dt = all_dtypes[di];
        if (!dtype_ok(dt)) continue;
        static const double values[] = {2.75, -3.0, 0.0, NAN, 1e10};
        for (int k = 0; k < 5; k++) {
            if ((isnan(values[k]) || values[k] > 2147483647.0) && dt == GF_I32) {
                /* a value i32 cannot hold: refused by every device, as PyTorch */
                gf_clear_error();
                CHECK(gf_full(SZ(3, 7), 2, values[k], dt, xd_dev) == NULL &&
                      gf_last_status() == GF_ERR_INVALID);
                continue;
            }
            if (isnan(values[k]) && dt != GF_F32 && dt != GF_F64 && dt != GF_BOOL) continue;
            char what[80];
            snprintf(what, sizeof what, "full %s %g", xd_dtn(dt), values[k]);
            xd_check_pair(what, gf_full(SZ(3, 7), 2, values[k], dt, xd_dev),
                          gf_full(SZ(3, 7), 2, values[k], dt, xd_ref));
            /* Filling a strided view in place. */
            xd_pair x = xd_pair_rand(dt, 2, SZ(5, 6), XV_GENERAL, XL_STEP);
            gf_status so = gf_fill_(x.d, values[k]), sr = gf_fill_(x.r, values[k]);
            CHECK(so == GF_OK && sr == GF_OK);
            snprintf(what, sizeof what, "fill_ %s %g of a strided view", xd_dtn(dt), values[k]);
            xd_check(what, x.d, x.r);
            xd_pair_release(x);
        }
    }
    static const double ar[][3] = {{0, 10, 1}, {-5, 7, 3}, {0.5, 4.0, 0.25}, {10, -3, -1.5},
                                   {1e15, 1e15 + 20, 1}};
    for (size_t di = 0; di < 5; di++) {
        gf_dtype dt = all_dtypes[di];
        if (!dtype_ok(dt) || dt == GF_BOOL) continue;
        for (size_t k = 0; k < sizeof ar / sizeof ar[0]; k++) {
            if (dt == GF_I32 && ar[k][0] > 1e9) continue;
            char what[80];
            snprintf(what, sizeof what, "arange %s (%g, %g, %g)", xd_dtn(dt), ar[k][0], ar[k][1],
                     ar[k][2]);
            xd_check_pair(what, gf_arange(ar[k][0], ar[k][1], ar[k][2], dt, xd_dev),
                          gf_arange(ar[k][0], ar[k][1], ar[k][2], dt, xd_ref));
        }
    }
}

static void test_tri(void) {
    for (size_t di = 0; di < 5; di++) {
        gf_dtype dt = all_dtypes[di];
        if (!dtype_ok(dt)) continue;
        for (int64_t diag = -1; diag <= 2; diag++)
            for (int L = 0; L < 4; L++) {
                xd_seed(di * 31 + (uint64_t)(diag + 1) * 4 + (uint64_t)L);
                xd_pair x = xd_pair_rand(dt, 3, SZ(2, 4, 5), XV_GENERAL, (xd_layout)L);
                char what[80];
                snprintf(what, sizeof what, "tril %s diag %lld [%s]", xd_dtn(dt), (long long)diag,
                         xd_layout_name[L]);
                xd_check_pair(what, gf_tril(x.d, diag), gf_tril(x.r, diag));
                snprintf(what, sizeof what, "triu %s diag %lld [%s]", xd_dtn(dt), (long long)diag,
                         xd_layout_name[L]);
                xd_check_pair(what, gf_triu(x.d, diag), gf_triu(x.r, diag));
                xd_pair_release(x);
            }
    }
}

/* In-place ops write through a strided view (the output aliases an input). */
static void test_inplace(void) {
    for (size_t di = 0; di < 4; di++) {
        gf_dtype dt = all_dtypes[di];
        if (!dtype_ok(dt)) continue;
        xd_seed(di + 900);
        xd_pair x = xd_pair_rand(dt, 2, SZ(6, 8), XV_PLAIN, XL_TRANSPOSED);
        xd_pair y = xd_pair_rand(dt, 1, SZ(8), XV_PLAIN, XL_STEP);
        CHECK(gf_add_(x.d, y.d) == GF_OK && gf_add_(x.r, y.r) == GF_OK);
        xd_check("add_ into a transposed view", x.d, x.r);
        /* integers keep their kind with int64 scalars (a double one gives
         * f32, refused in place: ops.h) */
        if (gf_dtype_is_float(dt)) {
            CHECK(gf_mul_scalar_(x.d, 0.5) == GF_OK && gf_mul_scalar_(x.r, 0.5) == GF_OK);
            xd_check("mul_scalar_ in place", x.d, x.r);
            CHECK(gf_clamp_(x.d, -2, 3) == GF_OK && gf_clamp_(x.r, -2, 3) == GF_OK);
            xd_check("clamp_ in place", x.d, x.r);
        } else {
            CHECK(gf_mul_scalar_int_(x.d, 3) == GF_OK && gf_mul_scalar_int_(x.r, 3) == GF_OK);
            xd_check("mul_scalar_int_ in place", x.d, x.r);
            CHECK(gf_clamp_int_(x.d, -2, 3) == GF_OK && gf_clamp_int_(x.r, -2, 3) == GF_OK);
            xd_check("clamp_int_ in place", x.d, x.r);
        }
        xd_pair_release(x);
        xd_pair_release(y);
    }
}

int main(void) {
    int rc = xd_init();
    if (rc) return rc;
    have_f64 = xd_stores(GF_F64);
    RUN(test_unary);
    RUN(test_binary);
    RUN(test_where);
    RUN(test_copy_convert);
    RUN(test_permute_copies);
    RUN(test_fill_arange);
    RUN(test_tri);
    RUN(test_inplace);
    return CHECK_REPORT();
}
