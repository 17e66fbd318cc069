/* SPDX-License-Identifier: BSD-3-Clause */
/* test_vulkan_elementwise.c — vulkan:0 against cpu:0 (the reference plugin)
 * for the elementwise family: unary ops (every dtype each provides), binary
 * ops with broadcasting, comparisons, logical ops, where, dtype conversions,
 * creation (full, arange, tril/triu) and random numbers (bit-exact), on
 * contiguous, transposed, step-2, broadcast, 0-size, 0-dim and odd shapes. */
#include "vk_test.h"

typedef gf_tensor *(*unary_fn)(const gf_tensor *);
typedef gf_tensor *(*binary_fn)(const gf_tensor *, const gf_tensor *);

/* Shapes every elementwise case runs on. */
static const int n_shapes = 6;
static const int shape_rank[6] = {2, 1, 3, 0, 2, 1};
static const int64_t shape_sizes[6][3] = {{7, 13}, {1000}, {3, 5, 7}, {0}, {0, 3}, {1}};

static void run_unary(const char *name, unary_fn f, gf_dtype dt, double lo, double hi,
                      double tol) {
    for (int s = 0; s < n_shapes; s++)
        for (int l = 0; l < VT_LAYOUTS; l++) {
            vt_pair x = vt_rand(dt, shape_rank[s], shape_sizes[s], 11u + s, lo, hi, l);
            gf_tensor *r = f(x.c), *g = f(x.v);
            char what[160];
            snprintf(what, sizeof what, "%s %s shape#%d %s", name, vt_dtn(dt), s, vt_layout_name[l]);
            VT_COMPARE(what, r, g, tol, tol);
            gf_tensor_release(r);
            gf_tensor_release(g);
            vt_release(x);
        }
}

static gf_tensor *leaky(const gf_tensor *x) { return gf_leaky_relu(x, 0.125); }
static gf_tensor *elu(const gf_tensor *x) { return gf_elu(x, 1.5); }
static gf_tensor *gelu(const gf_tensor *x) { return gf_gelu(x, false); }
static gf_tensor *gelu_tanh(const gf_tensor *x) { return gf_gelu(x, true); }
static gf_tensor *softplus(const gf_tensor *x) { return gf_softplus(x, 2.0, 5.0); }
static gf_tensor *clamp_both(const gf_tensor *x) { return gf_clamp(x, -0.5, 2.0); }
static gf_tensor *clamp_min(const gf_tensor *x) { return gf_clamp(x, -1.0, NAN); }
static gf_tensor *pow_s(const gf_tensor *x) { return gf_pow_scalar(x, 2.5); }
static gf_tensor *pow_i(const gf_tensor *x) { return gf_pow_scalar(x, 3.0); }

static void test_unary_f32(void) {
    struct { const char *n; unary_fn f; double lo, hi, tol; } c[] = {
        {"neg", gf_neg, -5, 5, 0},          {"abs", gf_abs, -5, 5, 0},
        {"sign", gf_sign, -2, 2, 0},        {"exp", gf_exp, -10, 10, 2e-6},
        {"log", gf_log, 0.01, 100, 2e-6},   {"log1p", gf_log1p, -0.9, 10, 2e-6},
        {"expm1", gf_expm1, -5, 5, 2e-6},   {"sqrt", gf_sqrt, 0, 50, 1e-6},
        {"rsqrt", gf_rsqrt, 0.1, 50, 1e-6}, {"reciprocal", gf_reciprocal, 0.5, 9, 1e-6},
        {"square", gf_square, -9, 9, 0},    {"sin", gf_sin, -6, 6, 2e-6},
        {"cos", gf_cos, -6, 6, 2e-6},       {"tanh", gf_tanh, -12, 12, 2e-6},
        {"sigmoid", gf_sigmoid, -20, 20, 2e-6}, {"relu", gf_relu, -3, 3, 0},
        {"leaky_relu", leaky, -3, 3, 0},    {"elu", elu, -4, 4, 2e-6},
        {"gelu", gelu, -6, 6, 2e-6},        {"gelu_tanh", gelu_tanh, -6, 6, 2e-6},
        {"silu", gf_silu, -9, 9, 2e-6},     {"softplus", softplus, -4, 4, 2e-6},
        {"erf", gf_erf, -4, 4, 2e-6},       {"floor", gf_floor, -9, 9, 0},
        {"ceil", gf_ceil, -9, 9, 0},        {"round", gf_round, -9, 9, 0},
        {"clamp", clamp_both, -3, 3, 0},    {"clamp_min", clamp_min, -3, 3, 0},
        {"pow_scalar", pow_s, 0, 4, 2e-6},  {"hardswish", gf_hardswish, -5, 5, 2e-6},
        {"asin", gf_asin, -1, 1, 2e-6},     {"acos", gf_acos, -1, 1, 2e-6},
        {"asin (beyond 1)", gf_asin, -3, 3, 2e-6}, {"atan", gf_atan, -40, 40, 2e-6},
        {"atan (large)", gf_atan, -1e30, 1e30, 2e-6},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        run_unary(c[i].n, c[i].f, GF_F32, c[i].lo, c[i].hi, c[i].tol);
}

/* What the plugin offers in f64 (GLSL has these in double) and the integer
 * forms of the exact ops. */
static void test_unary_f64_int(void) {
    struct { const char *n; unary_fn f; } c64[] = {
        {"neg", gf_neg}, {"abs", gf_abs}, {"sign", gf_sign}, {"sqrt", gf_sqrt},
        {"rsqrt", gf_rsqrt}, {"reciprocal", gf_reciprocal}, {"square", gf_square},
        {"relu", gf_relu}, {"leaky_relu", leaky}, {"floor", gf_floor}, {"ceil", gf_ceil},
        {"round", gf_round}, {"clamp", clamp_both},
    };
    for (size_t i = 0; i < sizeof c64 / sizeof c64[0]; i++)
        run_unary(c64[i].n, c64[i].f, GF_F64, 0.25, 9, 1e-15);
    /* The double functions of plugins/common/glsl_dmath.glsl (GLSL has none):
     * within a few ulp of libm's. */
    struct { const char *n; unary_fn f; double lo, hi; } t64[] = {
        {"exp", gf_exp, -30, 30},       {"log", gf_log, 1e-6, 1e6},   {"log1p", gf_log1p, -0.9, 9},
        {"expm1", gf_expm1, -3, 3},     {"sin", gf_sin, -100, 100},   {"cos", gf_cos, -100, 100},
        {"tanh", gf_tanh, -25, 25},     {"sigmoid", gf_sigmoid, -30, 30}, {"elu", elu, -5, 5},
        {"gelu_tanh", gelu_tanh, -6, 6}, {"silu", gf_silu, -9, 9},     {"softplus", softplus, -4, 4},
        {"pow_scalar", pow_s, 0, 5},    {"pow_scalar3", pow_i, -4, 4},
        {"erf", gf_erf, -7, 7},         {"gelu", gelu, -6, 6},        {"hardswish", gf_hardswish, -6, 6},
        {"asin", gf_asin, -1, 1},       {"acos", gf_acos, -1, 1},     {"acos (beyond 1)", gf_acos, -3, 3},
        {"atan", gf_atan, -40, 40},     {"atan (large)", gf_atan, -1e30, 1e30},
    };
    for (size_t i = 0; i < sizeof t64 / sizeof t64[0]; i++)
        run_unary(t64[i].n, t64[i].f, GF_F64, t64[i].lo, t64[i].hi, 4e-15);
    struct { const char *n; unary_fn f; } ci[] = {
        {"neg", gf_neg}, {"abs", gf_abs}, {"sign", gf_sign}, {"square", gf_square},
        {"relu", gf_relu}, {"clamp", clamp_both}, {"pow_scalar", pow_i},
    };
    for (size_t i = 0; i < sizeof ci / sizeof ci[0]; i++) {
        run_unary(ci[i].n, ci[i].f, GF_I32, 0, 0, 0);
        run_unary(ci[i].n, ci[i].f, GF_I64, 0, 0, 0);
    }
    /* Float functions of integer and bool inputs compute in f32 (the core
     * converts first, on the device). */
    run_unary("exp(i32)", gf_exp, GF_I32, 0, 0, 2e-6);
    run_unary("logical_not", gf_logical_not, GF_BOOL, 0, 0, 0);
    run_unary("logical_not(f32)", gf_logical_not, GF_F32, -1, 1, 0);
}

/* IEEE corner cases through the f32 formulas. */
static void test_special_values(void) {
    const double nan = NAN, inf = INFINITY;
    double v[] = {nan, inf, -inf, 0.0, -0.0, 1e-30, -1e-30, 88.0, -88.0, 1e30, -1e30, 0.5};
    int64_t n = 12;
    unary_fn fs[] = {gf_neg, gf_abs, gf_sign, gf_relu, gf_floor, gf_round, gf_sigmoid,
                     gf_tanh, gf_exp, gf_erf};
    for (size_t i = 0; i < sizeof fs / sizeof fs[0]; i++) {
        vt_pair x = vt_make(GF_F32, 1, &n, v, 0, 0, 0, VT_CONTIG);
        gf_tensor *r = fs[i](x.c), *g = fs[i](x.v);
        char what[64];
        snprintf(what, sizeof what, "special values, unary #%zu", i);
        VT_COMPARE(what, r, g, 2e-6, 2e-6);
        gf_tensor_release(r);
        gf_tensor_release(g);
        vt_release(x);
    }
    vt_pair a = vt_make(GF_F32, 1, &n, v, 0, 0, 0, VT_CONTIG);
    double w[] = {1, nan, 0, -0.0, inf, 2, -2, nan, 3, -inf, 0.5, 0.5};
    vt_pair b = vt_make(GF_F32, 1, &n, w, 0, 0, 0, VT_CONTIG);
    binary_fn bs[] = {gf_maximum, gf_minimum, gf_eq, gf_ne, gf_lt, gf_le, gf_gt, gf_ge,
                      gf_add, gf_mul, gf_div, gf_pow, gf_logical_and, gf_logical_or};
    for (size_t i = 0; i < sizeof bs / sizeof bs[0]; i++) {
        gf_tensor *r = bs[i](a.c, b.c), *g = bs[i](a.v, b.v);
        char what[64];
        snprintf(what, sizeof what, "special values, binary #%zu", i);
        VT_COMPARE(what, r, g, 2e-6, 2e-6);
        gf_tensor_release(r);
        gf_tensor_release(g);
    }
    vt_release(a);
    vt_release(b);
}

/* Points where an implementation's shortcuts show: exp of multiples of
 * ln 2 (the reduced argument is 0), powers with exact results, erf at the
 * boundaries of its approximations. */
static void test_f64_exact_points(void) {
    double v[] = {0.6931471805599453, 1.3862943611198906, -0.6931471805599453, 1e-20, 0.0,
                  4.0, 0.84375, 1.25, 2.857142857142857, 6.0, -0.5, 1e-300};
    int64_t n = 12;
    unary_fn fs[] = {gf_exp, gf_expm1, gf_log1p, gf_sqrt, gf_erf, gf_tanh, gf_sin, pow_s};
    for (size_t i = 0; i < sizeof fs / sizeof fs[0]; i++) {
        vt_pair x = vt_make(GF_F64, 1, &n, v, 0, 0, 0, VT_CONTIG);
        gf_tensor *r = fs[i](x.c), *g = fs[i](x.v);
        char what[64];
        snprintf(what, sizeof what, "f64 exact points, function #%zu", i);
        VT_COMPARE(what, r, g, 4e-16, 4e-16);
        gf_tensor_release(r);
        gf_tensor_release(g);
        vt_release(x);
    }
}

static void run_binary(const char *name, binary_fn f, gf_dtype dt, double lo, double hi,
                       double tol) {
    /* Same shapes, every layout pair on the first operand, and broadcasts. */
    static const int64_t a_s[][3] = {{7, 13}, {3, 1, 5}, {1}, {0, 4}, {6, 1}};
    static const int64_t b_s[][3] = {{7, 13}, {4, 5}, {9, 2}, {1, 4}, {1, 11}};
    static const int a_r[] = {2, 3, 1, 2, 2}, b_r[] = {2, 2, 2, 2, 2};
    for (int s = 0; s < 5; s++)
        for (int l = 0; l < VT_LAYOUTS; l++) {
            vt_pair a = vt_rand(dt, a_r[s], a_s[s], 21u + s, lo, hi, l);
            vt_pair b = vt_rand(dt, b_r[s], b_s[s], 31u + s, lo, hi, (l + 1) % VT_LAYOUTS);
            gf_tensor *r = f(a.c, b.c), *g = f(a.v, b.v);
            char what[160];
            snprintf(what, sizeof what, "%s %s case#%d %s", name, vt_dtn(dt), s, vt_layout_name[l]);
            VT_COMPARE(what, r, g, tol, tol);
            gf_tensor_release(r);
            gf_tensor_release(g);
            vt_release(a);
            vt_release(b);
        }
}

static void test_binary(void) {
    struct { const char *n; binary_fn f; double lo, hi, tol; } c[] = {
        {"add", gf_add, -5, 5, 0}, {"sub", gf_sub, -5, 5, 0}, {"mul", gf_mul, -5, 5, 0},
        {"div", gf_div, 0.5, 5, 1e-7}, {"maximum", gf_maximum, -5, 5, 0},
        {"minimum", gf_minimum, -5, 5, 0}, {"eq", gf_eq, -1, 1, 0}, {"ne", gf_ne, -1, 1, 0},
        {"lt", gf_lt, -1, 1, 0}, {"le", gf_le, -1, 1, 0}, {"gt", gf_gt, -1, 1, 0},
        {"ge", gf_ge, -1, 1, 0}, {"logical_and", gf_logical_and, -1, 1, 0},
        {"logical_or", gf_logical_or, -1, 1, 0},
    };
    gf_dtype dts[] = {GF_F32, GF_F64, GF_I32, GF_I64};
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        for (size_t t = 0; t < 4; t++) {
            if (dts[t] != GF_F32 && dts[t] != GF_F64 && c[i].f == gf_div) continue;
            run_binary(c[i].n, c[i].f, dts[t], c[i].lo, c[i].hi, c[i].tol);
        }
    run_binary("pow", gf_pow, GF_F32, 0.1, 3, 2e-6);
    run_binary("pow", gf_pow, GF_F64, 0.1, 3, 4e-15);
    run_binary("pow", gf_pow, GF_I64, 0, 0, 0);
    run_binary("atan2", gf_atan2, GF_F32, -5, 5, 2e-6);
    run_binary("atan2", gf_atan2, GF_F64, -5, 5, 4e-15);
    run_binary("atan2", gf_atan2, GF_I32, 0, 0, 2e-6); /* computed in f32 */
    run_binary("eq", gf_eq, GF_BOOL, 0, 0, 0);
    run_binary("logical_or", gf_logical_or, GF_BOOL, 0, 0, 0);
}

/* Integer division truncates, /0 gives 0 (through the ABI op DIV on i64, via
 * a scalar divisor which keeps the integer dtype). */
static gf_tensor *div_by_3(const gf_tensor *x) { return gf_div_scalar(x, 3.0); }
static gf_tensor *rsub7(const gf_tensor *x) { return gf_rsub_scalar(x, 7.0); }

static void test_where_and_scalars(void) {
    int64_t s[2] = {5, 6};
    for (int l = 0; l < VT_LAYOUTS; l++) {
        vt_pair c = vt_rand(GF_BOOL, 2, s, 3, 0, 0, l);
        vt_pair a = vt_rand(GF_F32, 2, s, 4, -1, 1, (l + 1) % 3);
        int64_t bs[1] = {6};
        vt_pair b = vt_rand(GF_F32, 1, bs, 5, -1, 1, VT_CONTIG);
        gf_tensor *r = gf_where(c.c, a.c, b.c), *g = gf_where(c.v, a.v, b.v);
        VT_COMPARE("where f32 broadcast", r, g, 0, 0);
        gf_tensor_release(r);
        gf_tensor_release(g);
        gf_tensor *r2 = gf_masked_fill(a.c, c.c, -3.0), *g2 = gf_masked_fill(a.v, c.v, -3.0);
        VT_COMPARE("masked_fill", r2, g2, 0, 0);
        gf_tensor_release(r2);
        gf_tensor_release(g2);
        vt_release(c);
        vt_release(a);
        vt_release(b);
    }
    run_unary("div_scalar", div_by_3, GF_F32, -9, 9, 1e-7);
    run_unary("rsub_scalar", rsub7, GF_I32, 0, 0, 0);
}

/* Every dtype to every dtype, exact (float to int truncates and saturates). */
static void test_copy_convert(void) {
    gf_dtype dts[] = {GF_F32, GF_F64, GF_I32, GF_I64, GF_BOOL};
    double v[] = {1.5, -2.7, 0.0, -0.0, 3e9, -3e9, 1e20, NAN, 7.0, -1.0, 0.25, 2147483647.0};
    int64_t n = 12;
    for (int a = 0; a < 5; a++)
        for (int b = 0; b < 5; b++) {
            for (int l = 0; l < VT_LAYOUTS; l++) {
                int64_t s2[2] = {6, 2};
                vt_pair x = a < 2 ? vt_make(dts[a], 2, s2, v, 0, 0, 0, l)
                                  : vt_rand(dts[a], 2, s2, 9, 0, 0, l);
                gf_tensor *r = gf_to_dtype(x.c, dts[b]), *g = gf_to_dtype(x.v, dts[b]);
                char what[64];
                snprintf(what, sizeof what, "convert %s -> %s %s", vt_dtn(dts[a]), vt_dtn(dts[b]),
                         vt_layout_name[l]);
                VT_COMPARE(what, r, g, 0, 0);
                gf_tensor_release(r);
                gf_tensor_release(g);
                vt_release(x);
            }
        }
    (void)n;
    /* A strided copy into a contiguous tensor, same dtype, every dtype. */
    for (int a = 0; a < 5; a++) {
        int64_t s3[3] = {4, 3, 5};
        vt_pair x = vt_rand(dts[a], 3, s3, 2, -4, 4, VT_TRANSPOSED);
        gf_tensor *r = gf_contiguous(x.c), *g = gf_contiguous(x.v);
        VT_COMPARE("contiguous", r, g, 0, 0);
        gf_tensor_release(r);
        gf_tensor_release(g);
        vt_release(x);
    }
}

static void test_creation(void) {
    gf_dtype dts[] = {GF_F32, GF_F64, GF_I32, GF_I64, GF_BOOL};
    int64_t s[2] = {9, 7};
    for (int t = 0; t < 5; t++) {
        gf_tensor *r = gf_full(s, 2, -2.5, dts[t], vt_cpu), *g = gf_full(s, 2, -2.5, dts[t], vt_vk);
        VT_COMPARE("full", r, g, 0, 0);
        gf_tensor_release(r);
        gf_tensor_release(g);
        gf_tensor *z = gf_zeros(s, 2, dts[t], vt_vk), *zr = gf_zeros(s, 2, dts[t], vt_cpu);
        VT_COMPARE("zeros", zr, z, 0, 0);
        gf_tensor_release(z);
        gf_tensor_release(zr);
    }
    struct { double a, b, c; gf_dtype dt; } ar[] = {
        {0, 10, 1, GF_I64}, {-3, 50, 7, GF_I32}, {0, 1, 0.1, GF_F32}, {-1, 2, 0.3, GF_F64},
        {0.5, 9.5, 1.5, GF_I64}, {5, -5, -0.7, GF_F32},
    };
    for (size_t i = 0; i < sizeof ar / sizeof ar[0]; i++) {
        gf_tensor *r = gf_arange(ar[i].a, ar[i].b, ar[i].c, ar[i].dt, vt_cpu);
        gf_tensor *g = gf_arange(ar[i].a, ar[i].b, ar[i].c, ar[i].dt, vt_vk);
        VT_COMPARE("arange", r, g, 0, 0);
        gf_tensor_release(r);
        gf_tensor_release(g);
    }
    int64_t m[3] = {2, 5, 6};
    for (int t = 0; t < 5; t++)
        for (int l = 0; l < VT_LAYOUTS; l++)
            for (int64_t dg = -2; dg <= 2; dg += 2) {
                vt_pair x = vt_rand(dts[t], 3, m, 8, -3, 3, l);
                gf_tensor *r = gf_tril(x.c, dg), *g = gf_tril(x.v, dg);
                VT_COMPARE("tril", r, g, 0, 0);
                gf_tensor_release(r);
                gf_tensor_release(g);
                r = gf_triu(x.c, dg);
                g = gf_triu(x.v, dg);
                VT_COMPARE("triu", r, g, 0, 0);
                gf_tensor_release(r);
                gf_tensor_release(g);
                vt_release(x);
            }
}

/* Philox on the device gives the reference's numbers bit for bit. */
static void test_random(void) {
    int64_t s[2] = {33, 65};
    gf_dtype dts[] = {GF_F32, GF_F64};
    for (int t = 0; t < 2; t++) {
        for (int kind = 0; kind < 3; kind++) {
            gf_tensor *tt[2];
            gf_device *devs[2] = {vt_cpu, vt_vk};
            for (int d = 0; d < 2; d++) {
                gf_manual_seed(0x123456789abcull);
                gf_tensor *skip = gf_rand(s, 1, dts[t], devs[d]); /* advance the offset */
                gf_tensor_release(skip);
                tt[d] = kind == 0 ? gf_rand_uniform(s, 2, -2, 3, dts[t], devs[d])
                        : kind == 1 ? gf_rand_normal(s, 2, 0.5, 2, dts[t], devs[d])
                                    : gf_bernoulli(s, 2, 0.3, dts[t], devs[d]);
            }
            char what[64];
            snprintf(what, sizeof what, "random kind %d %s", kind, vt_dtn(dts[t]));
            /* f32: exact. f64 normal: the double log and cos of the shader are
             * within 1 ulp of libm's. */
            double tol = dts[t] == GF_F64 && kind == 1 ? 1e-15 : 0;
            VT_COMPARE(what, tt[0], tt[1], tol, tol);
            gf_tensor_release(tt[0]);
            gf_tensor_release(tt[1]);
        }
    }
    gf_tensor *bi[2];
    gf_device *devs[2] = {vt_cpu, vt_vk};
    for (int d = 0; d < 2; d++) {
        gf_manual_seed(7);
        bi[d] = gf_bernoulli(s, 2, 0.5, GF_I64, devs[d]);
    }
    VT_COMPARE("bernoulli i64", bi[0], bi[1], 0, 0);
    gf_tensor_release(bi[0]);
    gf_tensor_release(bi[1]);
}

int main(void) {
    int rc = vt_setup();
    if (rc) return rc;
    RUN(test_unary_f32);
    RUN(test_unary_f64_int);
    RUN(test_special_values);
    RUN(test_f64_exact_points);
    RUN(test_binary);
    RUN(test_where_and_scalars);
    RUN(test_copy_convert);
    RUN(test_creation);
    RUN(test_random);
    /* Everything released: the plugins shut down (device, instance) cleanly. */
    CHECK_MSG(gf_shutdown() == GF_OK, "gf_shutdown: %s", gf_last_error());
    return CHECK_REPORT();
}
