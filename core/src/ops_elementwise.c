/* SPDX-License-Identifier: BSD-3-Clause */
/* ops_elementwise.c — unary, binary, comparison and selection ops. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "autograd/ag_internal.h"
#include "graph/graph_internal.h"

/* How an op treats dtypes. */
enum {
    K_FLOAT,     /* float math: integer and bool inputs are computed in f32 */
    K_NUMERIC,   /* also exact on integers */
    K_ROUNDING,  /* integers unchanged (floor/ceil/round) */
    K_LOGICAL,   /* any input, bool output */
    K_COMPARE,   /* common dtype in, bool out */
    K_TRUEDIV    /* like K_NUMERIC but integer results become f32 */
};

/* ------------------------------------------------------------ outputs */
/* The in-place fast path (inplace.c): when nothing is recorded, an in-place
 * op passes self as dst to the op's gf__*_into form below, which writes its
 * result into self directly instead of computing a new tensor that is then
 * copied over. Every public op passes NULL. */

static bool same_view(const gf_tensor *a, const gf_tensor *b) {
    size_t n = sizeof(int64_t) * (size_t)a->rank;
    return a->storage == b->storage && a->offset == b->offset && a->rank == b->rank &&
           !memcmp(a->sizes, b->sizes, n) && !memcmp(a->strides, b->strides, n);
}

/* The op's output: dst when it fits (same sizes, dtype and device, and no
 * input overlapping it other than exactly, which kernels handle: element i
 * is read before it is written), else a new tensor. */
static gf_tensor *new_output(const int64_t *shape, int rank, gf_dtype dt, gf_device *dev,
                             gf_tensor *const *ins, int n, gf_tensor *dst) {
    gf_tensor *d = dst;
    if (d && d->dtype == dt && d->rank == rank && d->storage->device == dev &&
        !memcmp(d->sizes, shape, sizeof(int64_t) * (size_t)rank)) {
        bool ok = true;
        for (int i = 0; ok && i < n; i++)
            if (ins[i] && ins[i]->storage == d->storage && !same_view(ins[i], d)) ok = false;
        if (ok) return gf_tensor_retain(d);
    }
    return gf__empty(shape, rank, dt, dev);
}

/* a, b: the op's scalar parameters, for its backward formula. */
static gf_tensor *run_unary_ab(const gf_tensor *x, gfp_op op, const char *name, int kind,
                               const void *params, double pa, double pb, gf_tensor *dst) {
    if (!x) {
        gf__null_arg(name, "x");
        return NULL;
    }
    bool cx = gf_dtype_is_complex(x->dtype);
    if (cx && op == GFP_OP_ABS) return gf__complex_abs(x); /* a real result */
    if (cx && kind == K_ROUNDING) {
        gf__complex_refused(name, x->dtype);
        return NULL;
    }
    if (kind == K_ROUNDING && !gf_dtype_is_float(x->dtype)) return gf__ret(gf__contig(x));
    gf_dtype in_dt = x->dtype;
    if (kind == K_FLOAT && !gf_dtype_is_float(in_dt) && !cx) in_dt = GF_F32;
    if (kind == K_NUMERIC && x->dtype == GF_BOOL) {
        gf__error(GF_ERR_DTYPE, "%s: does not take bool tensors; convert with gf_to_dtype", name);
        return NULL;
    }
    gf_dtype out_dt = kind == K_LOGICAL ? GF_BOOL : in_dt;
    gf_tensor *xin = gf__cast(x, in_dt);
    if (!xin) return NULL;
    gf_tensor *y = new_output(x->sizes, x->rank, out_dt, x->storage->device, &xin, 1, dst);
    const gf_tensor *in[1] = {xin};
    gf_tensor *out[1] = {y};
    if (y && (gf__launch(op, name, in, 1, out, 1, params) != GF_OK ||
              gf__ag_record_unary(op, x, y, pa, pb) != GF_OK)) {
        gf_tensor_release(y);
        y = NULL;
    }
    gf_tensor_release(xin);
    return gf__ret(y);
}

static gf_tensor *run_unary(const gf_tensor *x, gfp_op op, const char *name, int kind,
                            const void *params) {
    return run_unary_ab(x, op, name, kind, params, 0, 0, NULL);
}

#define UNARY(fn, OP, kind) \
    gf_tensor *fn(const gf_tensor *x) { return run_unary(x, OP, #fn, kind, NULL); }
/* The forms with a destination, for the in-place ops that have one. */
#define UNARY_INTO(fn, OP, kind)                                              \
    gf_tensor *gf__##fn##_into(gf_tensor *dst, const gf_tensor *x) {          \
        return run_unary_ab(x, OP, "gf_" #fn, kind, NULL, 0, 0, dst);         \
    }
UNARY(gf_neg, GFP_OP_NEG, K_NUMERIC)
UNARY(gf_abs, GFP_OP_ABS, K_NUMERIC)
UNARY(gf_sign, GFP_OP_SIGN, K_NUMERIC)
UNARY(gf_exp, GFP_OP_EXP, K_FLOAT)
UNARY(gf_log, GFP_OP_LOG, K_FLOAT)
UNARY(gf_log1p, GFP_OP_LOG1P, K_FLOAT)
UNARY(gf_expm1, GFP_OP_EXPM1, K_FLOAT)
UNARY(gf_sqrt, GFP_OP_SQRT, K_FLOAT)
UNARY(gf_rsqrt, GFP_OP_RSQRT, K_FLOAT)
UNARY(gf_reciprocal, GFP_OP_RECIPROCAL, K_FLOAT)
UNARY(gf_square, GFP_OP_SQUARE, K_NUMERIC)
UNARY(gf_sin, GFP_OP_SIN, K_FLOAT)
UNARY(gf_cos, GFP_OP_COS, K_FLOAT)
UNARY(gf_asin, GFP_OP_ASIN, K_FLOAT)
UNARY(gf_acos, GFP_OP_ACOS, K_FLOAT)
UNARY(gf_atan, GFP_OP_ATAN, K_FLOAT)
UNARY(gf_tanh, GFP_OP_TANH, K_FLOAT)
UNARY(gf_sigmoid, GFP_OP_SIGMOID, K_FLOAT)
UNARY(gf_relu, GFP_OP_RELU, K_NUMERIC)
UNARY(gf_silu, GFP_OP_SILU, K_FLOAT)
UNARY(gf_hardswish, GFP_OP_HARDSWISH, K_FLOAT)
UNARY(gf_erf, GFP_OP_ERF, K_FLOAT)
UNARY(gf_floor, GFP_OP_FLOOR, K_ROUNDING)
UNARY(gf_ceil, GFP_OP_CEIL, K_ROUNDING)
UNARY(gf_round, GFP_OP_ROUND, K_ROUNDING)
UNARY(gf_logical_not, GFP_OP_LOGICAL_NOT, K_LOGICAL)
UNARY_INTO(exp, GFP_OP_EXP, K_FLOAT)
UNARY_INTO(tanh, GFP_OP_TANH, K_FLOAT)
UNARY_INTO(sigmoid, GFP_OP_SIGMOID, K_FLOAT)
UNARY_INTO(relu, GFP_OP_RELU, K_NUMERIC)
#undef UNARY
#undef UNARY_INTO

static gf_tensor *unary_scalars(const gf_tensor *x, gfp_op op, const char *name, double a,
                                double b) {
    gfp_scalar_params p = {.struct_size = sizeof p, .a = a, .b = b};
    return run_unary_ab(x, op, name, K_FLOAT, &p, a, b, NULL);
}
gf_tensor *gf_leaky_relu(const gf_tensor *x, double slope) {
    return unary_scalars(x, GFP_OP_LEAKY_RELU, "gf_leaky_relu", slope, 0);
}
gf_tensor *gf_elu(const gf_tensor *x, double alpha) {
    return unary_scalars(x, GFP_OP_ELU, "gf_elu", alpha, 0);
}
gf_tensor *gf_gelu(const gf_tensor *x, bool approximate) {
    return run_unary(x, approximate ? GFP_OP_GELU_TANH : GFP_OP_GELU, "gf_gelu", K_FLOAT, NULL);
}
gf_tensor *gf_softplus(const gf_tensor *x, double beta, double threshold) {
    if (beta == 0) {
        gf__error(GF_ERR_INVALID, "gf_softplus: beta must be non-zero");
        return NULL;
    }
    return unary_scalars(x, GFP_OP_SOFTPLUS, "gf_softplus", beta, threshold);
}
gf_tensor *gf_pow_scalar(const gf_tensor *x, double exponent) {
    return unary_scalars(x, GFP_OP_POW_SCALAR, "gf_pow_scalar", exponent, 0);
}

/* A binary op with a destination (NULL: a new tensor). */
typedef gf_tensor *(*binary_to_fn)(const gf_tensor *a, const gf_tensor *b, gf_tensor *dst);

static gf_dtype int_scalar_dtype(gf_dtype x);
static gf_tensor *with_int_scalar(const gf_tensor *x, int64_t s, bool scalar_first,
                                  binary_to_fn fn, const char *name, gf_tensor *dst);
static gf_tensor *gf_maximum_to(const gf_tensor *a, const gf_tensor *b, gf_tensor *dst);
static gf_tensor *gf_minimum_to(const gf_tensor *a, const gf_tensor *b, gf_tensor *dst);
static gf_tensor *gf_pow_to(const gf_tensor *a, const gf_tensor *b, gf_tensor *dst);

static gf_tensor *clamp_run(const gf_tensor *x, double min, double max, const char *name,
                            gf_tensor *dst) {
    gfp_clamp_params p = {.struct_size = sizeof p, .has_min = !isnan(min), .has_max = !isnan(max),
                          .min = isnan(min) ? 0 : min, .max = isnan(max) ? 0 : max};
    return run_unary_ab(x, GFP_OP_CLAMP, name, K_NUMERIC, &p, min, max, dst);
}

/* The bounds are double scalars (ops.h): an integer or bool x is clamped
 * in f32, as PyTorch's clamp(int_tensor, 0.0, 4.0). */
gf_tensor *gf_clamp(const gf_tensor *x, double min, double max) {
    return gf__clamp_into(NULL, x, min, max);
}

gf_tensor *gf__clamp_into(gf_tensor *dst, const gf_tensor *x, double min, double max) {
    if (gf__refuse_complex(x, "gf_clamp") != GF_OK) return NULL;
    if (isnan(min) && isnan(max)) {
        gf__error(GF_ERR_INVALID, "gf_clamp: at least one of min and max must be given (both are "
                  "NAN)");
        return NULL;
    }
    if (!x || gf_dtype_is_float(x->dtype)) return clamp_run(x, min, max, "gf_clamp", dst);
    int saved = gf__scope_suspend();
    gf_tensor *xf = gf__cast(x, GF_F32);
    gf_tensor *r = xf ? clamp_run(xf, min, max, "gf_clamp", dst) : NULL;
    gf__scope_resume(saved);
    gf_tensor_release(xf);
    return gf__ret(r);
}

/* int64 bounds: an integer x keeps its dtype (bool: i64), clamped exactly
 * (maximum then minimum with exact scalars; a bound beyond the dtype's range
 * has no effect); a float x is clamped in its dtype as by gf_clamp. */
gf_tensor *gf_clamp_int(const gf_tensor *x, int64_t min, int64_t max) {
    return gf__clamp_int_into(NULL, x, min, max);
}

gf_tensor *gf__clamp_int_into(gf_tensor *dst, const gf_tensor *x, int64_t min, int64_t max) {
    if (!x) {
        gf__null_arg("gf_clamp_int", "x");
        return NULL;
    }
    if (gf__refuse_complex(x, "gf_clamp_int") != GF_OK) return NULL;
    if (gf_dtype_is_float(x->dtype))
        return clamp_run(x, min == INT64_MIN ? NAN : (double)min, max == INT64_MAX ? NAN : (double)max,
                         "gf_clamp_int", dst);
    gf_dtype dt = int_scalar_dtype(x->dtype);
    if (dt == GF_I32) { /* saturate: a bound outside the range of i32 clamps nothing */
        min = min < INT32_MIN ? INT32_MIN : min > INT32_MAX ? INT32_MAX : min;
        max = max < INT32_MIN ? INT32_MIN : max > INT32_MAX ? INT32_MAX : max;
    }
    int saved = gf__scope_suspend();
    gf_tensor *xi = gf__cast(x, dt);
    /* dst, when given, takes both results: the minimum reads the maximum
     * element for element from the same place it writes. */
    gf_tensor *lo = xi ? with_int_scalar(xi, min, false, gf_maximum_to, "gf_clamp_int", dst) : NULL;
    gf_tensor *r = lo ? with_int_scalar(lo, max, false, gf_minimum_to, "gf_clamp_int", dst) : NULL;
    gf__scope_resume(saved);
    gf_tensor_release(lo);
    gf_tensor_release(xi);
    return gf__ret(r);
}

/* ------------------------------------------------------------ binary */
/* Runs op on n (<= 3) broadcast inputs of dtype in_dt giving out_dt. */
static gf_tensor *run_nary(const gf_tensor *const *xs, int n, gf_dtype in_dt, gf_dtype out_dt,
                           gfp_op op, const char *name, int cast_from, gf_tensor *dst) {
    int64_t shape[GF_MAX_RANK];
    int rank = 0;
    memcpy(shape, xs[0]->sizes, sizeof shape);
    rank = xs[0]->rank;
    for (int i = 1; i < n; i++) {
        if (!gf__same_device(xs[0], xs[i], name)) return NULL;
        int64_t tmp[GF_MAX_RANK];
        int r;
        if (gf__broadcast_shapes(shape, rank, xs[i]->sizes, xs[i]->rank, tmp, &r, name) != GF_OK)
            return NULL;
        memcpy(shape, tmp, sizeof tmp);
        rank = r;
    }
    gf_tensor *ins[3] = {0};
    gf_tensor *y = NULL;
    bool ok = true;
    for (int i = 0; i < n && ok; i++) {
        gf_tensor *c = i >= cast_from ? gf__cast(xs[i], in_dt) : gf_tensor_retain((gf_tensor *)xs[i]);
        ins[i] = c ? gf__expand_to(c, shape, rank) : NULL;
        gf_tensor_release(c);
        ok = ins[i] != NULL;
    }
    if (ok) y = new_output(shape, rank, out_dt, xs[0]->storage->device, ins, n, dst);
    if (y) {
        gf_tensor *outs[1] = {y};
        if (gf__launch(op, name, (const gf_tensor *const *)ins, n, outs, 1, NULL) != GF_OK) {
            gf_tensor_release(y);
            y = NULL;
        }
    }
    for (int i = 0; i < n; i++) gf_tensor_release(ins[i]);
    return y;
}

static gf_tensor *binary(const gf_tensor *a, const gf_tensor *b, gfp_op op, const char *name,
                         int kind, gf_tensor *dst) {
    if (!a || !b) {
        gf__null_arg(name, !a ? "a" : "b");
        return NULL;
    }
    gf_dtype dt = gf__promote(a->dtype, b->dtype);
    gf_dtype out = dt;
    switch (kind) {
    case K_FLOAT:
        if (gf_dtype_is_complex(dt)) {
            gf__complex_refused(name, dt);
            return NULL;
        }
        if (!gf_dtype_is_float(dt)) dt = out = GF_F32;
        break;
    case K_TRUEDIV:
        if (!gf_dtype_is_float(dt) && !gf_dtype_is_complex(dt)) dt = out = GF_F32;
        break;
    case K_NUMERIC:
        if (dt == GF_BOOL) {
            gf__error(GF_ERR_DTYPE, "%s: does not take two bool tensors; use gf_logical_and / "
                      "gf_logical_or, or convert with gf_to_dtype", name);
            return NULL;
        }
        break;
    case K_COMPARE:
    case K_LOGICAL: out = GF_BOOL; break;
    }
    const gf_tensor *xs[2] = {a, b};
    gf_tensor *y = run_nary(xs, 2, dt, out, op, name, 0, dst);
    if (y && gf__ag_record_binary(op, a, b, y) != GF_OK) {
        gf_tensor_release(y);
        y = NULL;
    }
    return gf__ret(y);
}

#define BINARY(fn, OP, kind)                                                        \
    static inline gf_tensor *fn##_to(const gf_tensor *a, const gf_tensor *b,        \
                                     gf_tensor *dst) {                              \
        return binary(a, b, OP, #fn, kind, dst);                                    \
    }                                                                               \
    gf_tensor *fn(const gf_tensor *a, const gf_tensor *b) { return fn##_to(a, b, NULL); }
BINARY(gf_add, GFP_OP_ADD, K_NUMERIC)
BINARY(gf_sub, GFP_OP_SUB, K_NUMERIC)
BINARY(gf_mul, GFP_OP_MUL, K_NUMERIC)
BINARY(gf_div, GFP_OP_DIV, K_TRUEDIV)
BINARY(gf_pow, GFP_OP_POW, K_NUMERIC)
BINARY(gf_maximum, GFP_OP_MAXIMUM, K_NUMERIC)
BINARY(gf_minimum, GFP_OP_MINIMUM, K_NUMERIC)
BINARY(gf_atan2, GFP_OP_ATAN2, K_FLOAT)
BINARY(gf_eq, GFP_OP_EQ, K_COMPARE)
BINARY(gf_ne, GFP_OP_NE, K_COMPARE)
BINARY(gf_lt, GFP_OP_LT, K_COMPARE)
BINARY(gf_le, GFP_OP_LE, K_COMPARE)
BINARY(gf_gt, GFP_OP_GT, K_COMPARE)
BINARY(gf_ge, GFP_OP_GE, K_COMPARE)
BINARY(gf_logical_and, GFP_OP_LOGICAL_AND, K_LOGICAL)
BINARY(gf_logical_or, GFP_OP_LOGICAL_OR, K_LOGICAL)
#undef BINARY

/* ------------------------------------------------------------ scalar forms */
/* PyTorch's rule for a tensor and a C++ Scalar (ops.h): a double scalar is a
 * floating scalar, so with an integer or bool tensor the op runs in f32 (the
 * default float dtype), whatever the value; with a float tensor it runs in
 * the tensor's dtype. An int64 scalar keeps an integer tensor's dtype, gives
 * i64 with a bool tensor, and takes a float tensor's dtype. Comparisons run
 * in that dtype and give bool. */
static gf_dtype double_scalar_dtype(gf_dtype x) {
    return gf_dtype_is_float(x) || gf_dtype_is_complex(x) ? x : GF_F32;
}

static gf_tensor *with_scalar(const gf_tensor *x, double s, bool scalar_first, binary_to_fn fn,
                              const char *name, gf_tensor *dst) {
    if (!x) {
        gf__null_arg(name, "x");
        return NULL;
    }
    gf_dtype dt = double_scalar_dtype(x->dtype);
    if (gf__check_value(s, dt, name) != GF_OK) return NULL;
    int saved = gf__scope_suspend();
    gf_tensor *c = gf__scalar(s, dt, x->storage->device);
    gf_tensor *r = c ? (scalar_first ? fn(c, x, dst) : fn(x, c, dst)) : NULL;
    gf__scope_resume(saved);
    gf_tensor_release(c);
    return gf__ret(r);
}

/* The dtype an int64 scalar takes with a tensor of dtype x. */
static gf_dtype int_scalar_dtype(gf_dtype x) { return x == GF_BOOL ? GF_I64 : x; }

/* A 0-dim tensor of dtype dt holding v exactly (integers are not passed
 * through a double). Fails OVERFLOW when v does not fit an i32. */
static gf_tensor *int_scalar(int64_t v, gf_dtype dt, gf_device *dev, const char *name) {
    if (dt == GF_I32 && (v < INT32_MIN || v > INT32_MAX)) {
        gf__error(GF_ERR_OVERFLOW, "%s: the scalar %lld does not fit the i32 tensor's dtype; "
                  "convert the tensor with gf_to_dtype(x, GF_I64) first", name, (long long)v);
        return NULL;
    }
    if (gf_dtype_is_float(dt) || gf_dtype_is_complex(dt)) return gf__scalar((double)v, dt, dev);
    gf_tensor *t = gf__empty(NULL, 0, dt, dev);
    if (!t) return NULL;
    unsigned char pat[8];
    int32_t v32 = (int32_t)(dt == GF_I32 ? v : 0);
    if (dt == GF_I64) memcpy(pat, &v, 8);
    else memcpy(pat, &v32, 4);
    size_t es = gf_dtype_size(dt);
    gf__graph_note(t->storage);
    if (gf__dev_fill(dev, t->storage->buffer, (uint64_t)t->offset * es, es, pat, (uint32_t)es) !=
        GF_OK) {
        gf_tensor_release(t);
        return NULL;
    }
    return t;
}

static gf_tensor *with_int_scalar(const gf_tensor *x, int64_t s, bool scalar_first,
                                  binary_to_fn fn, const char *name, gf_tensor *dst) {
    if (!x) {
        gf__null_arg(name, "x");
        return NULL;
    }
    int saved = gf__scope_suspend();
    gf_tensor *c = int_scalar(s, int_scalar_dtype(x->dtype), x->storage->device, name);
    gf_tensor *r = c ? (scalar_first ? fn(c, x, dst) : fn(x, c, dst)) : NULL;
    gf__scope_resume(saved);
    gf_tensor_release(c);
    return gf__ret(r);
}

#define SCALAR(fn, base, first)                                          \
    gf_tensor *fn(const gf_tensor *x, double s) {                        \
        return with_scalar(x, s, first, base##_to, #fn, NULL);           \
    }                                                                    \
    gf_tensor *fn##_int(const gf_tensor *x, int64_t s) {                 \
        return with_int_scalar(x, s, first, base##_to, #fn "_int", NULL); \
    }
SCALAR(gf_add_scalar, gf_add, false)
SCALAR(gf_sub_scalar, gf_sub, false)
SCALAR(gf_rsub_scalar, gf_sub, true)
SCALAR(gf_mul_scalar, gf_mul, false)
SCALAR(gf_div_scalar, gf_div, false)
SCALAR(gf_maximum_scalar, gf_maximum, false)
SCALAR(gf_minimum_scalar, gf_minimum, false)
SCALAR(gf_eq_scalar, gf_eq, false)
SCALAR(gf_ne_scalar, gf_ne, false)
SCALAR(gf_lt_scalar, gf_lt, false)
SCALAR(gf_le_scalar, gf_le, false)
SCALAR(gf_gt_scalar, gf_gt, false)
SCALAR(gf_ge_scalar, gf_ge, false)
#undef SCALAR

/* The destination forms of the in-place elementwise ops (inplace.c). */
gf_tensor *gf__add_into(gf_tensor *dst, const gf_tensor *a, const gf_tensor *b) {
    return gf_add_to(a, b, dst);
}
gf_tensor *gf__sub_into(gf_tensor *dst, const gf_tensor *a, const gf_tensor *b) {
    return gf_sub_to(a, b, dst);
}
gf_tensor *gf__mul_into(gf_tensor *dst, const gf_tensor *a, const gf_tensor *b) {
    return gf_mul_to(a, b, dst);
}
gf_tensor *gf__div_into(gf_tensor *dst, const gf_tensor *a, const gf_tensor *b) {
    return gf_div_to(a, b, dst);
}
gf_tensor *gf__add_scalar_into(gf_tensor *dst, const gf_tensor *x, double s) {
    return with_scalar(x, s, false, gf_add_to, "gf_add_scalar", dst);
}
gf_tensor *gf__mul_scalar_into(gf_tensor *dst, const gf_tensor *x, double s) {
    return with_scalar(x, s, false, gf_mul_to, "gf_mul_scalar", dst);
}
gf_tensor *gf__add_scalar_int_into(gf_tensor *dst, const gf_tensor *x, int64_t s) {
    return with_int_scalar(x, s, false, gf_add_to, "gf_add_scalar_int", dst);
}
gf_tensor *gf__mul_scalar_int_into(gf_tensor *dst, const gf_tensor *x, int64_t s) {
    return with_int_scalar(x, s, false, gf_mul_to, "gf_mul_scalar_int", dst);
}

/* x ** s for an int64 exponent: a float tensor uses gf_pow_scalar (the same
 * values and gradient as a double exponent); an integer or bool one stays
 * integer (bool: i64), computed exactly, as PyTorch's pow(Tensor, int). */
gf_tensor *gf_pow_scalar_int(const gf_tensor *x, int64_t s) {
    if (!x) {
        gf__null_arg("gf_pow_scalar_int", "x");
        return NULL;
    }
    if (gf_dtype_is_float(x->dtype) || gf_dtype_is_complex(x->dtype))
        return gf_pow_scalar(x, (double)s);
    if (s < 0) {
        gf__error(GF_ERR_INVALID, "gf_pow_scalar_int: integers to negative integer powers are "
                  "not allowed (%s tensor, exponent %lld); convert the tensor to a float dtype "
                  "first, or use gf_pow_scalar", gf_dtype_name(x->dtype), (long long)s);
        return NULL;
    }
    int saved = gf__scope_suspend();
    gf_tensor *xi = x->dtype == GF_BOOL ? gf__cast(x, GF_I64) : gf_tensor_retain((gf_tensor *)x);
    gf_tensor *r = xi ? with_int_scalar(xi, s, false, gf_pow_to, "gf_pow_scalar_int", NULL) : NULL;
    gf__scope_resume(saved);
    gf_tensor_release(xi);
    return gf__ret(r);
}

/* ------------------------------------------------------------ selection */
gf_tensor *gf_where(const gf_tensor *cond, const gf_tensor *a, const gf_tensor *b) {
    if (!cond || !a || !b) {
        gf__null_arg("gf_where", !cond ? "cond" : !a ? "a" : "b");
        return NULL;
    }
    if (cond->dtype != GF_BOOL) {
        gf__error(GF_ERR_DTYPE, "gf_where: cond must be bool (got %s); build it with a comparison "
                  "such as gf_gt, or gf_to_dtype(cond, GF_BOOL)", gf_dtype_name(cond->dtype));
        return NULL;
    }
    gf_dtype dt = gf__promote(a->dtype, b->dtype);
    const gf_tensor *xs[3] = {cond, a, b};
    gf_tensor *y = run_nary(xs, 3, dt, dt, GFP_OP_WHERE, "gf_where", 1, NULL);
    if (y && gf__ag_record_where(cond, a, b, y) != GF_OK) {
        gf_tensor_release(y);
        y = NULL;
    }
    return gf__ret(y);
}

gf_tensor *gf_masked_fill(const gf_tensor *x, const gf_tensor *mask, double value) {
    return gf__masked_fill_into(NULL, x, mask, value);
}

gf_tensor *gf__masked_fill_into(gf_tensor *dst, const gf_tensor *x, const gf_tensor *mask,
                                double value) {
    if (!x || !mask) {
        gf__null_arg("gf_masked_fill", !x ? "x" : "mask");
        return NULL;
    }
    if (mask->dtype != GF_BOOL) {
        gf__error(GF_ERR_DTYPE, "gf_masked_fill: mask must be bool (got %s)",
                  gf_dtype_name(mask->dtype));
        return NULL;
    }
    int64_t shape[GF_MAX_RANK];
    int rank;
    if (gf__broadcast_shapes(x->sizes, x->rank, mask->sizes, mask->rank, shape, &rank,
                             "gf_masked_fill") != GF_OK)
        return NULL;
    if (rank != x->rank || memcmp(shape, x->sizes, sizeof(int64_t) * (size_t)rank)) {
        char a[200], b[200];
        gf__error(GF_ERR_SHAPE, "gf_masked_fill: mask of sizes %s must broadcast to x's sizes %s",
                  gf__shape_str(mask->sizes, mask->rank, a, sizeof a),
                  gf__shape_str(x->sizes, x->rank, b, sizeof b));
        return NULL;
    }
    if (!gf__same_device(x, mask, "gf_masked_fill") ||
        gf__check_value(value, x->dtype, "gf_masked_fill") != GF_OK)
        return NULL;
    gf_tensor *v = gf__scalar(value, x->dtype, x->storage->device);
    if (!v) return NULL;
    const gf_tensor *xs[3] = {mask, v, x};
    gf_tensor *r = run_nary(xs, 3, x->dtype, x->dtype, GFP_OP_WHERE, "gf_masked_fill", 1, dst);
    gf_tensor_release(v);
    if (r && gf__ag_record_masked_fill(x, mask, r) != GF_OK) {
        gf_tensor_release(r);
        r = NULL;
    }
    return gf__ret(r);
}
