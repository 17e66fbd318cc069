/* SPDX-License-Identifier: BSD-3-Clause */
/* ulp_sweep.c — a device's f32 transcendental ops against a double
 * reference computed here, in ulp, over dense sweeps of f32 inputs.
 *
 *   ulp_sweep vulkan|opencl            the sweeps, each held to its bound
 *   ulp_sweep vulkan|opencl --report   every op's max error and where, no bounds
 *
 * GLSL's exp, log, sin, cos... are loosely specified (about 3 ulp, or an
 * absolute error), so the Vulkan plugin's f32 formulas use functions of
 * their own (plugins/common/glsl_fmath.glsl); OpenCL's built-ins are allowed
 * a few ulp too, and the OpenCL plugin computes erf itself (opgen.c's
 * prelude). This test holds exp, log, sin, cos and erf to 1 ulp of the
 * exact result, and the ops built on them to what they measure (see
 * test_exp_log), on both. Each sweep walks the f32 bit patterns of a range
 * in order (every binade gets its share), one pattern at a random place in
 * each stride, about 2^18 inputs per op, plus the range's ends.
 *
 * The error unit is the ulp of the exact result in f32, but never less than
 * FLT_MIN: Vulkan lets a device flush f32 subnormals (lavapipe does, inputs
 * and results), and a flushed result is FLT_MIN-accurate only. Inputs are
 * normal numbers or zero. */
#include <float.h>

#include "xd_harness.h"

typedef gf_tensor *(*unary_fn)(const gf_tensor *);
typedef double (*ref_fn)(double);

enum { SWEEP_N = 1 << 18 };

static bool report_only;

static uint32_t bits_of(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static float float_of(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}
/* f32 in the order of their values, as integers (-0 and +0 both 0). */
static int64_t ordered(float f) {
    uint32_t u = bits_of(f);
    return u >> 31 ? -(int64_t)(u & 0x7fffffffu) : (int64_t)u;
}
static float unordered(int64_t o) {
    return o < 0 ? float_of(0x80000000u | (uint32_t)-o) : float_of((uint32_t)o);
}
static uint32_t mix(uint32_t h) {
    h ^= h >> 16;
    h *= 0x7feb352du;
    h ^= h >> 15;
    h *= 0x846ca68bu;
    h ^= h >> 16;
    return h;
}

/* Normal f32 in [lo, hi] (and zero), about SWEEP_N of them; *n is set. */
static float *sweep_inputs(float lo, float hi, int64_t *n) {
    int64_t a = ordered(lo), b = ordered(hi), stride = (b - a) / SWEEP_N + 1;
    float *x = malloc((size_t)(SWEEP_N + 8) * sizeof *x);
    int64_t k = 0;
    x[k++] = lo;
    x[k++] = hi;
    for (int64_t i = 0; a + i * stride <= b; i++) {
        int64_t o = a + i * stride + (int64_t)(mix((uint32_t)i) % (uint64_t)stride);
        float f = unordered(o > b ? b : o);
        if (f != 0 && fabsf(f) < FLT_MIN) continue;
        x[k++] = f;
    }
    *n = k;
    return x;
}

/* |got - want| in ulp of want in f32 (at least FLT_MIN); NaN must be NaN,
 * an infinity that same infinity (got may overflow only where want does). */
static double ulp_error(float got, double want) {
    if (isnan(want)) return isnan(got) ? 0 : INFINITY;
    if (isnan(got)) return INFINITY;
    if (isinf(got) || isinf(want)) {
        if ((double)got == want) return 0;
        if (isinf(want) && fabs((double)got) == FLT_MAX) return 1;
        if (isinf(got) && fabs(want) >= FLT_MAX) return 1; /* rounds to inf */
        return INFINITY;
    }
    if (fabs(want) < FLT_MIN) return fabs((double)got - want) / FLT_MIN;
    int e;
    frexp(want, &e); /* |want| in [2^(e-1), 2^e) */
    return fabs((double)got - want) / ldexp(1.0, e - 1 - 23);
}

typedef struct worst {
    double ulp;
    float x, got;
    double want;
} worst;

static void note(worst *w, float x, float got, double want) {
    double u = ulp_error(got, want);
    if (u > w->ulp) *w = (worst){u, x, got, want};
}

static void judge(const char *name, const worst *w, double bound, int64_t n) {
    fprintf(stderr, "%-16s %7lld inputs  max %.3f ulp (bound %.0f) at x=%.9g (got %.9g, exact %.17g)\n",
            name, (long long)n, w->ulp, bound, (double)w->x, (double)w->got, w->want);
    if (!report_only)
        CHECK_MSG(w->ulp <= bound, "%s: %.3f ulp > %.0f at x=%.9g (got %.9g, exact %.17g)", name,
                  w->ulp, bound, (double)w->x, (double)w->got, w->want);
}

/* f(x) on the device under test for the n inputs x: a new array (NULL on
 * failure). */
static float *on_device(unary_fn f, const float *x, int64_t n) {
    gf_tensor *t = gf_from_data(x, &n, 1, GF_F32, xd_dev), *y = t ? f(t) : NULL;
    float *out = malloc((size_t)n * sizeof *out);
    bool ok = y && gf_tensor_to_host(y, out, (size_t)n * sizeof *out) == GF_OK;
    CHECK_MSG(ok, "running an op on %s: %s", gf_device_spec(xd_dev), gf_last_error());
    gf_tensor_release(t);
    gf_tensor_release(y);
    if (!ok) {
        gf_clear_error();
        free(out);
        return NULL;
    }
    return out;
}

static void sweep(const char *name, unary_fn f, ref_fn ref, float lo, float hi, double bound) {
    int64_t n;
    float *x = sweep_inputs(lo, hi, &n);
    float *y = on_device(f, x, n);
    worst w = {0};
    for (int64_t i = 0; y && i < n; i++) note(&w, x[i], y[i], ref((double)x[i]));
    if (y) judge(name, &w, bound, n);
    free(x);
    free(y);
}

/* ---- the double references: the op_math.def formulas, exactly, in double */
static double r_sigmoid(double x) { return 1 / (1 + exp(-x)); }
static double r_gelu(double x) { return 0.5 * x * (1 + erf(x * 0.70710678118654752440)); }
static double r_gelu_tanh(double x) {
    return 0.5 * x * (1 + tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x)));
}
static double r_silu(double x) { return x / (1 + exp(-x)); }
static double r_softplus(double x) { return x > 20 ? x : log1p(exp(x)); }
static double r_elu(double x) { return x <= 0 ? expm1(x) : x; }
static double r_pow25(double x) { return pow(x, 2.5); }
static double r_powm13(double x) { return pow(x, -1.3); }
static gf_tensor *gelu(const gf_tensor *x) { return gf_gelu(x, false); }
static gf_tensor *gelu_tanh(const gf_tensor *x) { return gf_gelu(x, true); }
static gf_tensor *softplus(const gf_tensor *x) { return gf_softplus(x, 1.0, 20.0); }
static gf_tensor *elu(const gf_tensor *x) { return gf_elu(x, 1.0); }
static gf_tensor *pow25(const gf_tensor *x) { return gf_pow_scalar(x, 2.5); }
static gf_tensor *powm13(const gf_tensor *x) { return gf_pow_scalar(x, -1.3); }

/* The largest f32 x whose exp is finite, and the smallest whose exp rounds
 * to something above 0. */
#define EXP_HI 88.7228317f
#define EXP_LO -103.972076f

/* The bound of exp and log, and of sin and cos: on Vulkan the plugin's own
 * (plugins/common/glsl_fmath.glsl), 1 ulp; on OpenCL the driver's
 * built-ins, held to what OpenCL allows them (3 and 4 ulp; PoCL measures
 * 0.9 and 2.3). erf is computed by both plugins (opgen_glsl.c's and
 * opgen.c's preludes): 1 ulp on both. */
static double exp_log_bound = 1, trig_bound = 1;

/* The others are formulas over them (op_math.def, the dialects' preludes),
 * held to what they measure, so that a change that worsens them shows:
 *  - log1p and expm1 (Kahan's corrections), tanh (over expm1), sigmoid, elu,
 *    softplus: a few roundings after exp or log, about 2-4 ulp;
 *  - asin, acos, atan: fdlibm's float polynomials without their extra
 *    precision steps, about 2-3 ulp;
 *  - pow: GLSL's (exp2(y log2 x)), about 150 ulp at large |y log2 x|
 *    (OpenCL's built-in: about 55);
 *  - silu from -88.7 down: exp(-x) overflows, the formula gives -0 where the
 *    exact value is a tiny normal; gelu and gelu_tanh below 0: 1 + erf(x)
 *    cancels in f32, whatever erf's accuracy, so only x >= 0 is bounded. */
static void test_exp_log(void) {
    sweep("exp", gf_exp, exp, EXP_LO, EXP_HI, exp_log_bound);
    sweep("exp near 0", gf_exp, exp, -1, 1, exp_log_bound);
    sweep("log", gf_log, log, 0, FLT_MAX, exp_log_bound);
    sweep("log near 1", gf_log, log, 0.5f, 2, exp_log_bound);
    sweep("expm1", gf_expm1, expm1, -FLT_MAX, EXP_HI, 3);
    sweep("log1p", gf_log1p, log1p, -1, FLT_MAX, 3);
}

static void test_trig(void) {
    sweep("sin", gf_sin, sin, -FLT_MAX, FLT_MAX, trig_bound);
    sweep("cos", gf_cos, cos, -FLT_MAX, FLT_MAX, trig_bound);
    sweep("sin <= 1e4", gf_sin, sin, -1e4f, 1e4f, trig_bound);
    sweep("cos <= 1e4", gf_cos, cos, -1e4f, 1e4f, trig_bound);
    sweep("asin", gf_asin, asin, -1, 1, 3);
    sweep("acos", gf_acos, acos, -1, 1, 3);
    sweep("atan", gf_atan, atan, -FLT_MAX, FLT_MAX, 3);
}

static void test_other(void) {
    sweep("erf", gf_erf, erf, -FLT_MAX, FLT_MAX, 1);
    sweep("tanh", gf_tanh, tanh, -FLT_MAX, FLT_MAX, 5);
    sweep("sigmoid", gf_sigmoid, r_sigmoid, -FLT_MAX, FLT_MAX, 3);
    sweep("silu", gf_silu, r_silu, -88.7f, FLT_MAX, 3);
    sweep("elu", elu, r_elu, -FLT_MAX, FLT_MAX, 3);
    sweep("softplus", softplus, r_softplus, -FLT_MAX, FLT_MAX, 3);
    sweep("gelu", gelu, r_gelu, 0, FLT_MAX, 3);
    sweep("gelu_tanh", gelu_tanh, r_gelu_tanh, 0, FLT_MAX, 3);
    sweep("pow(x,2.5)", pow25, r_pow25, 0, 1.8e15f, 200);
    sweep("pow(x,-1.3)", powm13, r_powm13, 1e-29f, FLT_MAX, 200);
    if (report_only) {
        sweep("silu (all)", gf_silu, r_silu, -FLT_MAX, FLT_MAX, INFINITY);
        sweep("gelu (all)", gelu, r_gelu, -FLT_MAX, FLT_MAX, INFINITY);
        sweep("gelu_tanh (all)", gelu_tanh, r_gelu_tanh, -FLT_MAX, FLT_MAX, INFINITY);
    }
}

int main(int argc, char **argv) {
    static const xd_target targets[] = {{"vulkan", "Vulkan", "vulkan:0"},
                                        {"opencl", "OpenCL", "opencl:0"}};
    const xd_target *target = NULL;
    for (size_t i = 0; argc > 1 && i < sizeof targets / sizeof targets[0]; i++)
        if (!strcmp(argv[1], targets[i].plugin)) target = &targets[i];
    if (!target) {
        fprintf(stderr, "usage: %s vulkan|opencl [--report]\n", argv[0]);
        return 2;
    }
    report_only = argc > 2 && !strcmp(argv[2], "--report");
    if (!strcmp(target->plugin, "opencl")) exp_log_bound = 3, trig_bound = 4;
    int rc = xd_init_target(target);
    if (rc) return rc;
    RUN(test_exp_log);
    RUN(test_trig);
    RUN(test_other);
    return xd_finish();
}
