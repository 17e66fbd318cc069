/* SPDX-License-Identifier: BSD-3-Clause */
/* ref_elementwise.c — COPY, FILL, ARANGE, TRIL/TRIU, the unary and binary
 * elementwise ops and WHERE.
 *
 * Semantics are PyTorch's. F32 is computed in float with the f-suffixed libm
 * functions (what a float device computes), F64 in double. Integer dtypes are
 * computed exactly in int64 and wrap as two's complement (arithmetic goes
 * through uint64 so overflow is defined). Which (op, dtypes) combinations are
 * provided is decided in one place, accepts(), used both by the capability
 * query and by launch, so the two can never disagree. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ref_internal.h"

/* ------------------------------------------------------------ what is provided */
typedef pk_ew_kind ew_kind; /* plugin_kit.h */

static ew_kind kind_of(uint32_t op) { return pk_ew_kind_of(op); }

static uint32_t inputs_of(uint32_t op) { return gfp_op_lookup(op)->in_min; }

#define DT_BIT(d) GFP_DTYPE_BIT(d)
#define DT_FLOAT REF_DT_FLOAT
#define DT_NUMERIC (DT_FLOAT | DT_BIT(GFP_I32) | DT_BIT(GFP_I64))
#define DT_ALL (DT_NUMERIC | DT_BIT(GFP_BOOL))
/* What byte-copying kernels (TRIL/TRIU, WHERE) take: every stored dtype. */
#define DT_STORED (DT_ALL | PK_DT_COMPLEX)

/* The dtypes an op of kind UNARY or BINARY computes in. */
static uint32_t arith_dtypes(uint32_t op) {
    return pk_ew_numeric(op) ? DT_NUMERIC : DT_FLOAT;
}

static bool in_set(int32_t d, uint32_t set) {
    return d >= 0 && d < GFP_DTYPE_COUNT && (set & DT_BIT(d));
}

/* True when launch runs op with these dtypes (counts already match). */
static bool any_complex(uint32_t op, const int32_t *in, const int32_t *out) {
    uint32_t n = inputs_of(op);
    for (uint32_t i = 0; i < n; i++)
        if (ref_is_complex(in[i])) return true;
    return ref_is_complex(out[0]);
}

static bool accepts(uint32_t op, const int32_t *in, const int32_t *out) {
    ew_kind k = kind_of(op);
    if (k != PK_EW_TRI && k != PK_EW_WHERE && any_complex(op, in, out))
        return ref_complex_accepts(op, in, out); /* ref_complex.c */
    switch (k) {
    case PK_EW_COPY: return in_set(in[0], DT_ALL) && in_set(out[0], DT_ALL);
    case PK_EW_FILL: return in_set(out[0], DT_ALL);
    case PK_EW_ARANGE: return in_set(out[0], DT_NUMERIC);
    case PK_EW_TRI: return in_set(out[0], DT_STORED) && in[0] == out[0];
    case PK_EW_UNARY: return in_set(out[0], arith_dtypes(op)) && in[0] == out[0];
    case PK_EW_LOGICAL_NOT: return in_set(in[0], DT_ALL) && out[0] == GFP_BOOL;
    case PK_EW_BINARY:
        return in_set(out[0], arith_dtypes(op)) && in[0] == out[0] && in[1] == out[0];
    case PK_EW_COMPARE: return in_set(in[0], DT_ALL) && in[1] == in[0] && out[0] == GFP_BOOL;
    case PK_EW_LOGICAL:
        return in_set(in[0], DT_ALL) && in_set(in[1], DT_ALL) && out[0] == GFP_BOOL;
    case PK_EW_WHERE:
        return in[0] == GFP_BOOL && in_set(out[0], DT_STORED) && in[1] == out[0] &&
               in[2] == out[0];
    default: return false;
    }
}

/* What accepts() takes, said for an error message. */
static const char *accepted_text(uint32_t op) {
    switch (kind_of(op)) {
    case PK_EW_COPY:
    case PK_EW_FILL: return "f32, f64, f16, bf16, i32, i64 or bool";
    case PK_EW_ARANGE: return "an f32, f64, f16, bf16, i32 or i64 output";
    case PK_EW_TRI: return "one stored dtype for input and output";
    case PK_EW_UNARY:
        return arith_dtypes(op) == DT_FLOAT
                   ? "f32, f64, f16 or bf16, the same for input and output"
                   : "f32, f64, f16, bf16, i32 or i64, the same for input and output";
    case PK_EW_LOGICAL_NOT: return "any stored dtype in, bool out";
    case PK_EW_BINARY:
        return arith_dtypes(op) == DT_FLOAT ? "f32, f64, f16 or bf16 for both inputs and the output"
                                            : "f32, f64, f16, bf16, i32 or i64 for both inputs and the output";
    case PK_EW_COMPARE: return "two inputs of one stored dtype and a bool output";
    case PK_EW_LOGICAL: return "inputs of any stored dtype and a bool output";
    case PK_EW_WHERE: return "a bool condition, and a, b and output of one stored dtype";
    default: return "";
    }
}

uint32_t ref_elementwise_support(const gfp_op_query *q) {
    ew_kind k = kind_of(q->op);
    if (k == PK_EW_NONE) return GFP_SUPPORT_NONE;
    return accepts(q->op, q->input_dtypes, q->output_dtypes) ? GFP_SUPPORT_STRIDED
                                                             : GFP_SUPPORT_NONE;
}

/* ------------------------------------------------------------ iteration */
/* Walks a shape in row-major order, keeping the element offset of each of
 * up to four tensors (t[0] the output, then the inputs) current. */
typedef struct ew_iter {
    int rank, n;
    int64_t sizes[GFP_MAX_RANK];
    int64_t idx[GFP_MAX_RANK];
    int64_t off[4];
    const int64_t *strides[4];
} ew_iter;

static void iter_init(ew_iter *it, const gfp_tensor *const *t, int n) {
    memset(it, 0, sizeof *it);
    it->rank = t[0]->rank;
    it->n = n;
    for (int d = 0; d < it->rank; d++) it->sizes[d] = t[0]->sizes[d];
    for (int k = 0; k < n; k++) it->strides[k] = t[k]->strides;
}

/* Advances one element; false once every element has been visited. Steps
 * only within the shape: a size-1 dim's stride may be any value (huge in a
 * view of adopted memory), so it is never added. */
static bool iter_next(ew_iter *it) {
    for (int d = it->rank - 1; d >= 0; d--) {
        if (++it->idx[d] < it->sizes[d]) {
            for (int k = 0; k < it->n; k++) it->off[k] += it->strides[k][d];
            return true;
        }
        for (int k = 0; k < it->n; k++) it->off[k] -= it->strides[k][d] * (it->sizes[d] - 1);
        it->idx[d] = 0;
    }
    return false;
}

#define AT(T, t, off) (((T *)ref_base(t))[off])

/* ------------------------------------------------------------ scalar formulas */
/* Parameters of the unary ops, read once per launch. */
typedef struct unary_args {
    double a, b;            /* scalar params */
    bool has_min, has_max;  /* clamp */
    double min, max;
} unary_args;

#define GELU_SQRT1_2 0.70710678118654752440 /* 1/sqrt(2) */
#define GELU_TANH_K 0.79788456080286535588  /* sqrt(2/pi) */

/* One body, instantiated for float (FN adds the f suffix) and double, so the
 * two precisions cannot drift apart. */
#define FN_F32(fn) fn##f
#define FN_F64(fn) fn
#define DEFINE_UNARY(NAME, T, FN)                                                        \
    static T NAME(uint32_t op, T x, const unary_args *p) {                              \
        switch (op) {                                                                    \
        case GFP_OP_NEG: return -x;                                                      \
        case GFP_OP_ABS: return FN(fabs)(x);                                             \
        case GFP_OP_SIGN: return x > 0 ? (T)1 : x < 0 ? (T)-1 : x == 0 ? (T)0 : x;       \
        case GFP_OP_EXP: return FN(exp)(x);                                              \
        case GFP_OP_LOG: return FN(log)(x);                                              \
        case GFP_OP_LOG1P: return FN(log1p)(x);                                          \
        case GFP_OP_EXPM1: return FN(expm1)(x);                                          \
        case GFP_OP_SQRT: return FN(sqrt)(x);                                            \
        case GFP_OP_RSQRT: return (T)1 / FN(sqrt)(x);                                    \
        case GFP_OP_RECIPROCAL: return (T)1 / x;                                         \
        case GFP_OP_SQUARE: return x * x;                                                \
        case GFP_OP_SIN: return FN(sin)(x);                                              \
        case GFP_OP_COS: return FN(cos)(x);                                              \
        case GFP_OP_TANH: return FN(tanh)(x);                                            \
        case GFP_OP_SIGMOID: return (T)1 / ((T)1 + FN(exp)(-x));                         \
        case GFP_OP_RELU: return x > 0 || x != x ? x : (T)0; /* NaN propagates */        \
        case GFP_OP_LEAKY_RELU: return x > 0 ? x : x * (T)p->a;                          \
        case GFP_OP_ELU: return x <= 0 ? (T)p->a * FN(expm1)(x) : x;                     \
        case GFP_OP_GELU: return (T)0.5 * x * ((T)1 + FN(erf)(x * (T)GELU_SQRT1_2));      \
        case GFP_OP_GELU_TANH: {                                                         \
            T inner = (T)GELU_TANH_K * (x + (T)0.044715 * x * x * x);                    \
            return (T)0.5 * x * ((T)1 + FN(tanh)(inner));                                \
        }                                                                                \
        case GFP_OP_SILU: return x / ((T)1 + FN(exp)(-x));                               \
        case GFP_OP_SOFTPLUS: {                                                          \
            T beta = (T)p->a;                                                            \
            return x * beta > (T)p->b ? x : FN(log1p)(FN(exp)(x * beta)) / beta;         \
        }                                                                                \
        case GFP_OP_ERF: return FN(erf)(x);                                              \
        case GFP_OP_FLOOR: return FN(floor)(x);                                          \
        case GFP_OP_CEIL: return FN(ceil)(x);                                            \
        case GFP_OP_ROUND: return FN(nearbyint)(x); /* half to even by default */        \
        case GFP_OP_CLAMP:                                                               \
            /* min(max(x, lo), hi): when lo > hi every element becomes hi. */            \
            if (x != x) return x;                                                        \
            if (p->has_min && x < (T)p->min) x = (T)p->min;                              \
            if (p->has_max && x > (T)p->max) x = (T)p->max;                              \
            return x;                                                                    \
        case GFP_OP_POW_SCALAR: return FN(pow)(x, (T)p->a);                              \
        case GFP_OP_HARDSWISH: {                                                         \
            T r6 = x + (T)3; /* relu6(x + 3); NaN stays NaN */                           \
            r6 = r6 < (T)0 ? (T)0 : r6 > (T)6 ? (T)6 : r6;                               \
            return x * r6 / (T)6;                                                        \
        }                                                                                \
        case GFP_OP_ASIN: return FN(asin)(x); /* NaN outside [-1, 1] */                  \
        case GFP_OP_ACOS: return FN(acos)(x);                                            \
        case GFP_OP_ATAN: return FN(atan)(x);                                            \
        default: return x;                                                               \
        }                                                                                \
    }
DEFINE_UNARY(unary_f32, float, FN_F32)
DEFINE_UNARY(unary_f64, double, FN_F64)

/* float -> int64 for clamp bounds on integer tensors: truncate, saturate.
 * (A NaN bound is dropped before: no integer compares with it.) */
static int64_t bound_i64(double v) {
    if (v != v) return 0;
    if (v >= 9223372036854775808.0) return INT64_MAX;
    if (v <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)v;
}

/* Integer unary ops; results wrap modulo 2^64 (and 2^32 when stored to i32). */
static int64_t unary_int(uint32_t op, int64_t x, int64_t lo, int64_t hi, const unary_args *p) {
    switch (op) {
    case GFP_OP_NEG: return (int64_t)(0u - (uint64_t)x);
    case GFP_OP_ABS: return x < 0 ? (int64_t)(0u - (uint64_t)x) : x;
    case GFP_OP_SIGN: return (x > 0) - (x < 0);
    case GFP_OP_SQUARE: return (int64_t)((uint64_t)x * (uint64_t)x);
    case GFP_OP_RELU: return x > 0 ? x : 0;
    case GFP_OP_CLAMP:
        if (p->has_min && x < lo) x = lo;
        if (p->has_max && x > hi) x = hi;
        return x;
    default: return x;
    }
}

#define DEFINE_BINARY(NAME, T, FN)                                                  \
    static T NAME(uint32_t op, T a, T b) {                                          \
        switch (op) {                                                               \
        case GFP_OP_ADD: return a + b;                                              \
        case GFP_OP_SUB: return a - b;                                              \
        case GFP_OP_MUL: return a * b;                                              \
        case GFP_OP_DIV: return a / b;                                              \
        case GFP_OP_POW: return FN(pow)(a, b);                                      \
        case GFP_OP_MAXIMUM: return a != a ? a : b != b ? b : a > b ? a : b;        \
        case GFP_OP_MINIMUM: return a != a ? a : b != b ? b : a < b ? a : b;        \
        case GFP_OP_ATAN2: return FN(atan2)(a, b);                                  \
        case GFP_OP_RELU_BACKWARD: return b <= 0 ? (T)0 : a;                        \
        case GFP_OP_GELU_BACKWARD: /* op_math.def's order */                        \
            return a * ((T)0.5 * ((T)1 + FN(erf)(b * (T)0.70710678118654752440)) +  \
                        b * (FN(exp)((T)-0.5 * b * b) * (T)0.39894228040143267794)); \
        default: return a;                                                          \
        }                                                                           \
    }
DEFINE_BINARY(binary_f32, float, FN_F32)
DEFINE_BINARY(binary_f64, double, FN_F64)

/* Integer power by squaring, wrapping. A negative exponent gives what
 * truncating 1 / a^-b gives (PyTorch's rule): 1 for 1, +-1 for -1, else 0. */
static int64_t pow_int(int64_t a, int64_t b) {
    if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
    uint64_t base = (uint64_t)a, r = 1;
    for (uint64_t e = (uint64_t)b; e; e >>= 1) {
        if (e & 1) r *= base;
        base *= base;
    }
    return (int64_t)r;
}

static int64_t binary_int(uint32_t op, int64_t a, int64_t b) {
    switch (op) {
    case GFP_OP_ADD: return (int64_t)((uint64_t)a + (uint64_t)b);
    case GFP_OP_SUB: return (int64_t)((uint64_t)a - (uint64_t)b);
    case GFP_OP_MUL: return (int64_t)((uint64_t)a * (uint64_t)b);
    case GFP_OP_DIV:
        if (b == 0) return 0;                                    /* the ABI's rule */
        if (b == -1) return (int64_t)(0u - (uint64_t)a);        /* INT64_MIN / -1 wraps */
        return a / b;                                            /* C truncates toward 0 */
    case GFP_OP_POW: return pow_int(a, b);
    case GFP_OP_MAXIMUM: return a > b ? a : b;
    case GFP_OP_MINIMUM: return a < b ? a : b;
    case GFP_OP_RELU_BACKWARD: return b <= 0 ? 0 : a;
    default: return a;
    }
}

/* -1, 0, 1 for a < b, a == b, a > b; 2 when unordered (NaN). */
static int compare3(const gfp_tensor *a, int64_t ia, const gfp_tensor *b, int64_t ib) {
    if (ref_is_float(a->dtype)) {
        double x = ref_load(a, ia), y = ref_load(b, ib); /* f32 -> double is exact */
        if (x != x || y != y) return 2;
        return (x > y) - (x < y);
    }
    int64_t x = ref_load_i64(a, ia), y = ref_load_i64(b, ib);
    return (x > y) - (x < y);
}

static bool compare_result(uint32_t op, int c) {
    switch (op) {
    case GFP_OP_EQ: return c == 0;
    case GFP_OP_NE: return c != 0; /* NaN != anything */
    case GFP_OP_LT: return c == -1;
    case GFP_OP_LE: return c == -1 || c == 0;
    case GFP_OP_GT: return c == 1;
    case GFP_OP_GE: return c == 1 || c == 0;
    default: return false;
    }
}

/* x != 0 for any stored dtype (NaN is true, -0.0 false). */
static bool truth(const gfp_tensor *t, int64_t off) {
    switch (t->dtype) {
    case GFP_F32: return AT(float, t, off) != 0;
    case GFP_F64: return AT(double, t, off) != 0;
    case GFP_F16:
    case GFP_BF16: return (AT(uint16_t, t, off) & 0x7fffu) != 0; /* +-0 false, NaN true */
    case GFP_I32: return AT(int32_t, t, off) != 0;
    case GFP_I64: return AT(int64_t, t, off) != 0;
    default: return AT(uint8_t, t, off) != 0;
    }
}

/* ------------------------------------------------------------ kernels */
/* t[0] is the output, t[1..] the inputs; all have the output's shape. */

static void run_copy(const gfp_tensor *const *t) {
    const gfp_tensor *y = t[0], *x = t[1];
    size_t es = pk_dtype_size(y->dtype);
    ew_iter it;
    iter_init(&it, t, 2);
    do {
        if (x->dtype == y->dtype) /* exact: keeps -0.0 and NaN payloads; may alias */
            memmove(ref_base(y) + it.off[0] * (int64_t)es, ref_base(x) + it.off[1] * (int64_t)es,
                   es);
        else if (ref_is_float(x->dtype)) /* one rounding; truncation toward 0 */
            ref_store(y, it.off[0], ref_load(x, it.off[1]));
        else /* integers stay exact (i64 -> f32 rounds once, not through double) */
            ref_store_i64(y, it.off[0], ref_load_i64(x, it.off[1]));
    } while (iter_next(&it));
}

/* Writes one element of the value into every element of y. */
static void run_fill(const gfp_tensor *y, const gfp_fill_params *p) {
    union {
        double align;
        unsigned char bytes[8];
    } elem;
    gfp_tensor one = *y; /* a one-element tensor over elem, to reuse the stores */
    one.buffer = elem.bytes;
    one.offset = 0;
    if (ref_is_float(y->dtype) || y->dtype == GFP_BOOL)
        ref_store(&one, 0, p->value);
    else
        ref_store_i64(&one, 0, p->ivalue);
    size_t es = pk_dtype_size(y->dtype);
    const gfp_tensor *const t[1] = {y};
    ew_iter it;
    iter_init(&it, t, 1);
    do memcpy(ref_base(y) + it.off[0] * (int64_t)es, elem.bytes, es);
    while (iter_next(&it));
}

/* An integer value that converts to int64 without overflow. */
static bool is_integral(double v) {
    return v >= -9223372036854775808.0 && v < 9223372036854775808.0 && v == floor(v);
}

static void run_arange(const gfp_tensor *y, const gfp_arange_params *p) {
    int64_t n = y->sizes[0], s = y->strides[0];
    /* Integer outputs with integral start and step are exact in int64, as
     * PyTorch computes them; everything else goes through double. */
    bool exact = !ref_is_float(y->dtype) && is_integral(p->start) && is_integral(p->step);
    uint64_t start = exact ? (uint64_t)(int64_t)p->start : 0;
    uint64_t step = exact ? (uint64_t)(int64_t)p->step : 0;
    for (int64_t i = 0; i < n; i++) {
        if (exact)
            ref_store_i64(y, i * s, (int64_t)(start + (uint64_t)i * step));
        else
            ref_store(y, i * s, p->start + (double)i * p->step);
    }
}

static void run_tri(uint32_t op, const gfp_tensor *const *t, int64_t diagonal) {
    const gfp_tensor *y = t[0], *x = t[1];
    size_t es = pk_dtype_size(y->dtype);
    int r = y->rank;
    ew_iter it;
    iter_init(&it, t, 2);
    do {
        int64_t d = it.idx[r - 1] - it.idx[r - 2]; /* column - row */
        bool keep = op == GFP_OP_TRIL ? d <= diagonal : d >= diagonal;
        char *dst = ref_base(y) + it.off[0] * (int64_t)es;
        if (keep)
            memmove(dst, ref_base(x) + it.off[1] * (int64_t)es, es); /* may alias exactly */
        else
            memset(dst, 0, es); /* zero of every stored dtype */
    } while (iter_next(&it));
}

static void run_unary(uint32_t op, const gfp_tensor *const *t, const unary_args *p) {
    const gfp_tensor *y = t[0], *x = t[1];
    ew_iter it;
    iter_init(&it, t, 2);
    switch (y->dtype) {
    case GFP_F32:
        do AT(float, y, it.off[0]) = unary_f32(op, AT(float, x, it.off[1]), p);
        while (iter_next(&it));
        break;
    case GFP_F64:
        do AT(double, y, it.off[0]) = unary_f64(op, AT(double, x, it.off[1]), p);
        while (iter_next(&it));
        break;
    case GFP_F16:
    case GFP_BF16: /* in f32, as PyTorch's kernels; one rounding on store */
        do ref_store(y, it.off[0], unary_f32(op, (float)ref_load(x, it.off[1]), p));
        while (iter_next(&it));
        break;
    default: {
        unary_args ip = *p;
        ip.has_min = ip.has_min && ip.min == ip.min; /* x < NaN is false: no bound */
        ip.has_max = ip.has_max && ip.max == ip.max;
        int64_t lo = bound_i64(p->min), hi = bound_i64(p->max);
        do ref_store_i64(y, it.off[0], unary_int(op, ref_load_i64(x, it.off[1]), lo, hi, &ip));
        while (iter_next(&it));
        break;
    }
    }
}

static void run_binary(uint32_t op, const gfp_tensor *const *t) {
    const gfp_tensor *y = t[0], *a = t[1], *b = t[2];
    ew_iter it;
    iter_init(&it, t, 3);
    switch (y->dtype) {
    case GFP_F32:
        do AT(float, y, it.off[0]) =
            binary_f32(op, AT(float, a, it.off[1]), AT(float, b, it.off[2]));
        while (iter_next(&it));
        break;
    case GFP_F64:
        do AT(double, y, it.off[0]) =
            binary_f64(op, AT(double, a, it.off[1]), AT(double, b, it.off[2]));
        while (iter_next(&it));
        break;
    case GFP_F16:
    case GFP_BF16:
        do ref_store(y, it.off[0], binary_f32(op, (float)ref_load(a, it.off[1]),
                                              (float)ref_load(b, it.off[2])));
        while (iter_next(&it));
        break;
    default:
        do ref_store_i64(y, it.off[0],
                         binary_int(op, ref_load_i64(a, it.off[1]), ref_load_i64(b, it.off[2])));
        while (iter_next(&it));
        break;
    }
}

static void run_predicate(uint32_t op, const gfp_tensor *const *t) {
    const gfp_tensor *y = t[0];
    int n = (int)inputs_of(op) + 1;
    ew_iter it;
    iter_init(&it, t, n);
    do {
        bool r;
        switch (op) {
        case GFP_OP_LOGICAL_NOT: r = !truth(t[1], it.off[1]); break;
        case GFP_OP_LOGICAL_AND: r = truth(t[1], it.off[1]) && truth(t[2], it.off[2]); break;
        case GFP_OP_LOGICAL_OR: r = truth(t[1], it.off[1]) || truth(t[2], it.off[2]); break;
        default: r = compare_result(op, compare3(t[1], it.off[1], t[2], it.off[2])); break;
        }
        AT(uint8_t, y, it.off[0]) = r;
    } while (iter_next(&it));
}

static void run_where(const gfp_tensor *const *t) {
    const gfp_tensor *y = t[0];
    size_t es = pk_dtype_size(y->dtype);
    ew_iter it;
    iter_init(&it, t, 4);
    do {
        const gfp_tensor *src = AT(uint8_t, t[1], it.off[1]) ? t[2] : t[3];
        int64_t off = src == t[2] ? it.off[2] : it.off[3];
        memmove(ref_base(y) + it.off[0] * (int64_t)es, ref_base(src) + off * (int64_t)es, es);
    } while (iter_next(&it));
}

/* ------------------------------------------------------------ launch */
static gfp_status unsupported(uint32_t op, const char *name, const gfp_tensor *const *in,
                              uint32_t n_in, const gfp_tensor *y) {
    char ins[64];
    pk_dtypes_text(in, n_in, ins, sizeof ins);
    bool cx = ref_is_complex(y->dtype);
    for (uint32_t i = 0; i < n_in; i++) cx = cx || (in[i] && ref_is_complex(in[i]->dtype));
    if (cx && kind_of(op) != PK_EW_TRI && kind_of(op) != PK_EW_WHERE)
        return pk_fail(GFP_ERR_UNSUPPORTED,
                       "%s: the reference plugin does not provide it for input dtype(s) (%s) and "
                       "output dtype %s; with complex dtypes it takes %s",
                       name, ins, pk_dtype_name(y->dtype), ref_complex_accepted_text(op));
    return pk_fail(GFP_ERR_UNSUPPORTED,
                    "%s: the reference plugin does not provide it for input dtype(s) (%s) and "
                    "output dtype %s; it takes %s",
                    name, ins, pk_dtype_name(y->dtype), accepted_text(op));
}

gfp_status ref_elementwise_launch(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                                  const gfp_tensor *const *out, uint32_t n_out,
                                  const void *params) {
    /* Counts, absent inputs and params: checked by the launch preamble. */
    (void)n_out;
    ew_kind kind = kind_of(op);
    const char *name = pk_op_name(op);
    if (kind == PK_EW_NONE)
        return pk_fail(GFP_ERR_UNSUPPORTED, "%s: the reference plugin has no kernel for it",
                       name);
    gfp_status st;

    /* t[0] = output, t[1..] = inputs: the order the kernels and the iterator use. */
    const gfp_tensor *t[4];
    int32_t in_dt[3], out_dt[1] = {out[0]->dtype};
    pk_ew_operands(in, n_in, out[0], t, in_dt);
    if (!accepts(op, in_dt, out_dt)) return unsupported(op, name, in, n_in, out[0]);
    st = pk_check_elementwise(op, in, n_in, out[0]);
    if (st != GFP_OK) return st;
    if (pk_numel(out[0]) == 0) return GFP_OK;
    if (kind != PK_EW_TRI && kind != PK_EW_WHERE && any_complex(op, in_dt, out_dt))
        return ref_complex_run(op, t, (int)n_in + 1, params);

    switch (kind) {
    case PK_EW_COPY: run_copy(t); return GFP_OK;
    case PK_EW_FILL: run_fill(out[0], params); return GFP_OK;
    case PK_EW_ARANGE: run_arange(out[0], params); return GFP_OK;
    case PK_EW_TRI: run_tri(op, t, ((const gfp_tri_params *)params)->diagonal); return GFP_OK;
    case PK_EW_UNARY: {
        unary_args args = {0};
        gfp_params_kind pk = (gfp_params_kind)gfp_op_lookup(op)->params;
        if (pk == GFP_PARAMS_scalar) {
            const gfp_scalar_params *p = params;
            args.a = p->a;
            args.b = p->b;
        } else if (pk == GFP_PARAMS_clamp) {
            const gfp_clamp_params *p = params;
            args.has_min = p->has_min != 0;
            args.has_max = p->has_max != 0;
            args.min = p->min;
            args.max = p->max;
        }
        run_unary(op, t, &args);
        return GFP_OK;
    }
    case PK_EW_BINARY: run_binary(op, t); return GFP_OK;
    case PK_EW_LOGICAL_NOT:
    case PK_EW_COMPARE:
    case PK_EW_LOGICAL: run_predicate(op, t); return GFP_OK;
    case PK_EW_WHERE: run_where(t); return GFP_OK;
    default: return pk_fail(GFP_ERR_INTERNAL, "%s: no kernel", name);
    }
}
