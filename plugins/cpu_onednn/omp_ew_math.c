/* SPDX-License-Identifier: BSD-3-Clause */
/* omp_ew_math.c — unary and binary arithmetic on the elementwise engine.
 *
 * The formulas are the reference's (ref_elementwise.c), written once with F()
 * naming the libm function of the precision and instantiated for float and
 * double, so a result here equals the reference's bit for bit. The plugin is
 * built with -fno-math-errno (errno is never read) so that sqrt, floor,
 * ceil and friends become vector instructions; ISO C mode keeps FMA
 * contraction off, so vectorised code rounds exactly as scalar code. Integer
 * dtypes get add, sub, mul, maximum and minimum (wrapping); the others stay
 * with the reference. */
#include <math.h>
#include <string.h>

#include "onednn_internal.h"
#include "onednn_math.h"

typedef odn_math_args unary_args;

#define GELU_SQRT1_2 0.70710678118654752440 /* 1/sqrt(2) */
#define GELU_TANH_K 0.79788456080286535588  /* sqrt(2/pi) */

static inline float clamp_f32(float x, const unary_args *p) {
    if (x != x) return x;
    if (p->has_min && x < (float)p->min) x = (float)p->min;
    if (p->has_max && x > (float)p->max) x = (float)p->max;
    return x;
}
static inline double clamp_f64(double x, const unary_args *p) {
    if (x != x) return x;
    if (p->has_min && x < p->min) x = p->min;
    if (p->has_max && x > p->max) x = p->max;
    return x;
}

/* X(name, cost, expression of x, T, P and F) */
#define UNARY_OPS(X)                                                                     \
    X(neg, 1, -x)                                                                        \
    X(abs, 1, F(fabs)(x))                                                                \
    X(sign, 1, x > 0 ? (T)1 : x < 0 ? (T)-1 : x == 0 ? (T)0 : x)                         \
    X(exp, 2, F(exp)(x))                                                                 \
    X(log, 16, F(log)(x))                                                                \
    X(log1p, 16, F(log1p)(x))                                                            \
    X(expm1, 16, F(expm1)(x))                                                            \
    X(sqrt, 2, F(sqrt)(x))                                                               \
    X(rsqrt, 2, (T)1 / F(sqrt)(x))                                                       \
    X(reciprocal, 1, (T)1 / x)                                                           \
    X(square, 1, x * x)                                                                  \
    X(sin, 16, F(sin)(x))                                                                \
    X(cos, 16, F(cos)(x))                                                                \
    X(tanh, 16, F(tanh)(x))                                                              \
    X(sigmoid, 16, (T)1 / ((T)1 + F(exp)(-x)))                                           \
    X(relu, 1, x > 0 || x != x ? x : (T)0)                                               \
    X(leaky_relu, 1, x > 0 ? x : x * (T)P->a)                                            \
    X(elu, 16, x <= 0 ? (T)P->a * F(expm1)(x) : x)                                       \
    X(gelu, 16, (T)0.5 * x * ((T)1 + F(erf)(x * (T)GELU_SQRT1_2)))                       \
    X(gelu_tanh, 16,                                                                     \
      (T)0.5 * x * ((T)1 + F(tanh)((T)GELU_TANH_K * (x + (T)0.044715 * x * x * x))))     \
    X(silu, 16, x / ((T)1 + F(exp)(-x)))                                                 \
    X(softplus, 16,                                                                      \
      x * (T)P->a > (T)P->b ? x : F(log1p)(F(exp)(x * (T)P->a)) / (T)P->a)               \
    X(erf, 16, F(erf)(x))                                                                \
    X(floor, 1, F(floor)(x))                                                             \
    X(ceil, 1, F(ceil)(x))                                                               \
    X(round, 1, F(nearbyint)(x))                                                         \
    X(clamp, 1, F(clamp_)(x, P))                                                         \
    X(pow_scalar, 16, F(pow)(x, (T)P->a))                                                \
    X(asin, 16, F(asin)(x))                                                              \
    X(acos, 16, F(acos)(x))                                                              \
    X(atan, 16, F(atan)(x))

#define UNARY_KERNEL(NAME, TYPE, EXPR)                                                   \
    ODN_EW_INLINE void NAME##_1d(char *const *p, const int64_t *s, int64_t n,        \
                                const void *ctx) {                                       \
        typedef TYPE T;                                                                  \
        const unary_args *P = ctx;                                                       \
        (void)P;                                                                         \
        T *y = (T *)p[0];                                                                \
        const T *X = (const T *)p[1];                                                    \
        if (s[0] == 1 && s[1] == 1) {                                                    \
            for (int64_t i = 0; i < n; i++) {                                            \
                T x = X[i];                                                              \
                y[i] = (EXPR);                                                           \
            }                                                                            \
        } else {                                                                         \
            for (int64_t i = 0; i < n; i++) {                                            \
                T x = X[i * s[1]];                                                       \
                y[i * s[0]] = (EXPR);                                                    \
            }                                                                            \
        }                                                                                \
    }                                                                                    \
    ODN_EW_KERNEL_2D(NAME)

/* float: libm's f-suffixed functions; clamp_ -> clamp_f32 */
#define F(fn) F_##fn
#define F_fabs fabsf
#define F_exp odn_expf /* vectorised; libm's special cases */
#define F_log logf
#define F_log1p log1pf
#define F_expm1 expm1f
#define F_sqrt sqrtf
#define F_sin sinf
#define F_cos cosf
#define F_tanh tanhf
#define F_erf erff
#define F_floor floorf
#define F_ceil ceilf
#define F_nearbyint nearbyintf
#define F_pow powf
#define F_asin asinf
#define F_acos acosf
#define F_atan atanf
#define F_clamp_ clamp_f32
#define X_F32(name, cost, expr) UNARY_KERNEL(u_##name##_f32, float, expr)
UNARY_OPS(X_F32)
#undef F
#define F(fn) G_##fn
#define G_fabs fabs
#define G_exp exp
#define G_log log
#define G_log1p log1p
#define G_expm1 expm1
#define G_sqrt sqrt
#define G_sin sin
#define G_cos cos
#define G_tanh tanh
#define G_erf erf
#define G_floor floor
#define G_ceil ceil
#define G_nearbyint nearbyint
#define G_pow pow
#define G_asin asin
#define G_acos acos
#define G_atan atan
#define G_clamp_ clamp_f64
#define X_F64(name, cost, expr) UNARY_KERNEL(u_##name##_f64, double, expr)
UNARY_OPS(X_F64)
#undef F

typedef struct unary_entry {
    const char *name; /* the op's name in graft_ops.def */
    odn_ew_fn f32, f64;
    int cost;
} unary_entry;

#define X_ENTRY(name, cost, expr) {#name, u_##name##_f32, u_##name##_f64, cost},
static const unary_entry unary_table[] = {UNARY_OPS(X_ENTRY)};

/* ------------------------------------------------------------ binary */
#define BINARY_KERNEL(NAME, TYPE, EXPR)                                                  \
    ODN_EW_INLINE void NAME##_1d(char *const *p, const int64_t *s, int64_t n,        \
                                const void *ctx) {                                       \
        typedef TYPE T;                                                                  \
        (void)ctx;                                                                       \
        T *y = (T *)p[0];                                                                \
        const T *A = (const T *)p[1], *B = (const T *)p[2];                              \
        if (s[0] == 1 && s[1] == 1 && s[2] == 1) {                                       \
            for (int64_t i = 0; i < n; i++) {                                            \
                T a = A[i], b = B[i];                                                    \
                y[i] = (EXPR);                                                           \
            }                                                                            \
        } else if (s[0] == 1 && s[1] == 1 && s[2] == 0) {                                \
            const T b = B[0];                                                            \
            for (int64_t i = 0; i < n; i++) {                                            \
                T a = A[i];                                                              \
                y[i] = (EXPR);                                                           \
            }                                                                            \
        } else if (s[0] == 1 && s[1] == 0 && s[2] == 1) {                                \
            const T a = A[0];                                                            \
            for (int64_t i = 0; i < n; i++) {                                            \
                T b = B[i];                                                              \
                y[i] = (EXPR);                                                           \
            }                                                                            \
        } else {                                                                         \
            for (int64_t i = 0; i < n; i++) {                                            \
                T a = A[i * s[1]], b = B[i * s[2]];                                      \
                y[i * s[0]] = (EXPR);                                                    \
            }                                                                            \
        }                                                                                \
    }                                                                                    \
    ODN_EW_KERNEL_2D(NAME)

#define FLOAT_BINARY(TYPE, TAG, POW, ATAN2, ERF, EXP)                                              \
    BINARY_KERNEL(b_add_##TAG, TYPE, a + b)                                              \
    BINARY_KERNEL(b_sub_##TAG, TYPE, a - b)                                              \
    BINARY_KERNEL(b_mul_##TAG, TYPE, a * b)                                              \
    BINARY_KERNEL(b_div_##TAG, TYPE, a / b)                                              \
    BINARY_KERNEL(b_pow_##TAG, TYPE, POW(a, b))                                          \
    BINARY_KERNEL(b_max_##TAG, TYPE, a != a ? a : b != b ? b : a > b ? a : b)            \
    BINARY_KERNEL(b_min_##TAG, TYPE, a != a ? a : b != b ? b : a < b ? a : b)            \
    BINARY_KERNEL(b_atan2_##TAG, TYPE, ATAN2(a, b))                                      \
    BINARY_KERNEL(b_relu_bw_##TAG, TYPE, b <= 0 ? (T)0 : a)                              \
    BINARY_KERNEL(b_gelu_bw_##TAG, TYPE,                                                 \
                  a * ((T)0.5 * ((T)1 + ERF(b * (T)0.70710678118654752440)) +            \
                       b * (EXP((T)-0.5 * b * b) * (T)0.39894228040143267794)))
FLOAT_BINARY(float, f32, powf, atan2f, erff, odn_expf)
FLOAT_BINARY(double, f64, pow, atan2, erf, exp)

/* Integers wrap: the arithmetic goes through the unsigned type. */
#define INT_BINARY(TYPE, UTYPE, TAG)                                                     \
    BINARY_KERNEL(b_add_##TAG, TYPE, (T)((UTYPE)a + (UTYPE)b))                           \
    BINARY_KERNEL(b_sub_##TAG, TYPE, (T)((UTYPE)a - (UTYPE)b))                           \
    BINARY_KERNEL(b_mul_##TAG, TYPE, (T)((UTYPE)a * (UTYPE)b))                           \
    BINARY_KERNEL(b_max_##TAG, TYPE, a > b ? a : b)                                      \
    BINARY_KERNEL(b_min_##TAG, TYPE, a < b ? a : b)                                      \
    BINARY_KERNEL(b_relu_bw_##TAG, TYPE, b <= 0 ? (T)0 : a)
INT_BINARY(int32_t, uint32_t, i32)
INT_BINARY(int64_t, uint64_t, i64)

/* By the op's name in graft_ops.def: [dtype f32 f64 i32 i64]; NULL: the reference's. */
typedef struct binary_entry {
    const char *name;
    odn_ew_fn fn[4];
} binary_entry;
static const binary_entry binary_table[] = {
    {"add", {b_add_f32, b_add_f64, b_add_i32, b_add_i64}},
    {"sub", {b_sub_f32, b_sub_f64, b_sub_i32, b_sub_i64}},
    {"mul", {b_mul_f32, b_mul_f64, b_mul_i32, b_mul_i64}},
    {"div", {b_div_f32, b_div_f64, NULL, NULL}},
    {"pow", {b_pow_f32, b_pow_f64, NULL, NULL}},
    {"maximum", {b_max_f32, b_max_f64, b_max_i32, b_max_i64}},
    {"minimum", {b_min_f32, b_min_f64, b_min_i32, b_min_i64}},
    {"atan2", {b_atan2_f32, b_atan2_f64, NULL, NULL}},
    {"relu_backward", {b_relu_bw_f32, b_relu_bw_f64, b_relu_bw_i32, b_relu_bw_i64}},
    {"gelu_backward", {b_gelu_bw_f32, b_gelu_bw_f64, NULL, NULL}},
};

static const unary_entry *unary_of(uint32_t op) {
    const char *name = gfp_op_name(op);
    for (size_t i = 0; name && i < sizeof unary_table / sizeof unary_table[0]; i++)
        if (!strcmp(unary_table[i].name, name)) return &unary_table[i];
    return NULL;
}

static const binary_entry *binary_of(uint32_t op) {
    const char *name = gfp_op_name(op);
    for (size_t i = 0; name && i < sizeof binary_table / sizeof binary_table[0]; i++)
        if (!strcmp(binary_table[i].name, name)) return &binary_table[i];
    return NULL;
}

/* ------------------------------------------------------------ launch */
bool odn_math_args_read(uint32_t op, const void *params, odn_math_args *args) {
    memset(args, 0, sizeof *args);
    gfp_params_kind kind = (gfp_params_kind)gfp_op_lookup(op)->params;
    if (kind == GFP_PARAMS_scalar) {
        if (!params || ((const gfp_scalar_params *)params)->struct_size <
                           GFP_SCALAR_PARAMS_SIZE_V1_0)
            return false;
        const gfp_scalar_params *p = params;
        args->a = p->a;
        args->b = p->b;
    } else if (kind == GFP_PARAMS_clamp) {
        if (!params ||
            ((const gfp_clamp_params *)params)->struct_size < GFP_CLAMP_PARAMS_SIZE_V1_0)
            return false;
        const gfp_clamp_params *p = params;
        args->has_min = p->has_min != 0;
        args->has_max = p->has_max != 0;
        args->min = p->min;
        args->max = p->max;
    }
    return true;
}

bool odn_math_kernel(uint32_t op, int n_t, int32_t dtype, odn_ew_fn *fn, int64_t *cost) {
    gfp_op_family family = gfp_op_family_of(op);
    const unary_entry *e = family == GFP_FAMILY_UNARY && n_t == 2 ? unary_of(op) : NULL;
    if (e) {
        if (dtype != GFP_F32 && dtype != GFP_F64) return false;
        *fn = dtype == GFP_F32 ? e->f32 : e->f64;
        *cost = e->cost;
        odn_ew_fn v = op == GFP_OP_ERF && dtype == GFP_F32 ? odn_vec_erf_f32() : NULL;
        if (v) *fn = v, *cost = 2; /* omp_vecmath.c */
        return true;
    }
    const binary_entry *b = family == GFP_FAMILY_BINARY && n_t == 3 ? binary_of(op) : NULL;
    if (!b || dtype < GFP_F32 || dtype > GFP_I64 || !b->fn[dtype]) return false;
    *fn = b->fn[dtype];
    *cost = op == GFP_OP_POW || op == GFP_OP_ATAN2 || op == GFP_OP_GELU_BACKWARD ? 16 : 1;
    odn_ew_fn v = op == GFP_OP_GELU_BACKWARD && dtype == GFP_F32 ? odn_vec_gelu_bw_f32() : NULL;
    if (v) *fn = v, *cost = 4; /* omp_vecmath.c */
    return true;
}

gfp_status odn_math_launch(uint32_t op, const gfp_tensor *const *t, int n_t, const void *params) {
    odn_ew_fn fn;
    int64_t cost;
    if (!odn_math_kernel(op, n_t, t[0]->dtype, &fn, &cost)) return ODN_FALLBACK;
    unary_args args;
    if (n_t == 2 && !odn_math_args_read(op, params, &args)) return ODN_FALLBACK;
    odn_ew g;
    odn_ew_init(&g, t, n_t);
    odn_ew_run(&g, fn, n_t == 2 ? &args : NULL, cost);
    return GFP_OK;
}

/* A captured BINARY launch (the graph slots, onednn_plugin.c): the checks and
 * the routing odn_elementwise_launch and odn_math_launch make, done once, so
 * a graph launch is odn_ew_run alone, with the same kernel, split and
 * order as the launch would have. False: launch it the ordinary way. */
bool odn_binary_prepare(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                        const gfp_tensor *const *out, uint32_t n_out, odn_ew_prepared *p) {
    if (gfp_op_family_of(op) != GFP_FAMILY_BINARY || n_in != 2 || n_out != 1 || !in[0] ||
        !in[1] || !out[0])
        return false;
    const gfp_tensor *t[3] = {out[0], in[0], in[1]};
    for (int k = 0; k < 3; k++)
        if (ref_is_complex(t[k]->dtype) || t[k]->dtype != t[0]->dtype ||
            (k && !pk_same_shape(t[0], t[k])))
            return false;
    if (!odn_math_kernel(op, 3, t[0]->dtype, &p->fn, &p->cost)) return false;
    odn_ew_init(&p->g, t, 3);
    return true;
}

void odn_prepared_run(const odn_ew_prepared *p) { odn_ew_run(&p->g, p->fn, NULL, p->cost); }
