/* SPDX-License-Identifier: BSD-3-Clause */
/* ops_elementwise_extra.c — the ops of graft/ops_extra.h, composed from the
 * public ops of graft/ops.h (no op id, no kernel of their own).
 *
 * Gradients come from the composing ops' rules. Where a composition would
 * give a gradient other than PyTorch's at a special point (hardtanh at its
 * bounds), the value there is taken from a tensor outside the graph. The
 * exact float remainder / fmod and clamp with tensor bounds are computed
 * outside the graph and recorded as one node whose backward is PyTorch's
 * formula (autograd/bw_elementwise_extra.c).
 *
 * Branches chosen with where() read their input clipped to their own side
 * (where(cond, x, 0)), so the branch where() drops has finite derivatives
 * of every order and cannot turn a zero gradient into NaN. */
#include <float.h>
#include <stdio.h>
#include <math.h>
#include <string.h>

#include "graft/ops_extra.h"
#include "autograd/ag_internal.h"

gf_status gf__ag_record_mod(bool python, const gf_tensor *a, const gf_tensor *b, gf_tensor *y);
gf_status gf__ag_record_clamp_tensor(const gf_tensor *x, const gf_tensor *min,
                                     const gf_tensor *max, gf_tensor *y);

/* ------------------------------------------------------------ temporaries */
/* The temporaries of one composite: T(expr) evaluates expr only while every
 * earlier step succeeded and keeps its result for one release at the end.
 * The first failure's status and message are kept: a later op handed the
 * resulting NULL cannot replace them with its own "NULL argument". */
typedef struct tmps {
    gf_tensor *t[256];
    int n;
    bool bad;
    gf_status st;
    char msg[512];
} tmps;

static void fail_keep(tmps *l) {
    if (l->bad) return;
    l->bad = true;
    l->st = gf__status() != GF_OK ? gf__status() : GF_ERR_INVALID;
    snprintf(l->msg, sizeof l->msg, "%s", gf__message() ? gf__message() : "");
}

static gf_tensor *keep(tmps *l, gf_tensor *t) {
    if (!t) {
        fail_keep(l);
        return NULL;
    }
    if (l->n == (int)(sizeof l->t / sizeof l->t[0])) {
        gf_tensor_release(t);
        gf__error(GF_ERR_INVALID, "elementwise composite: internal temporary list full");
        fail_keep(l);
        return NULL;
    }
    l->t[l->n++] = t;
    return t;
}
#define T(expr) (L->bad ? NULL : keep(L, (expr)))

/* Releases the temporaries and returns a new reference to y (NULL, with the
 * first failure restated, when any step failed). */
static gf_tensor *finish(tmps *l, gf_tensor *y) {
    gf_tensor *r = (!l->bad && y) ? gf_tensor_retain(y) : NULL;
    for (int i = 0; i < l->n; i++) gf_tensor_release(l->t[i]);
    l->n = 0;
    if (l->bad) gf__error(l->st, "%s", l->msg);
    return r;
}

static gf_tensor *ret_new(gf_tensor *t) { return t ? gf__ret(t) : NULL; }

/* Runs body(L, x...) with the scope suspended and returns its result as the
 * op's. BEGIN / END bracket every composite. */
#define BEGIN                        \
    int saved_scope_ = gf__scope_suspend(); \
    tmps L_ = {0};                   \
    tmps *L = &L_
#define END(y)                                     \
    gf_tensor *res_ = finish(L, (y));              \
    gf__scope_resume(saved_scope_);                \
    return ret_new(res_)

static bool null_check(const char *op, const gf_tensor *x, const char *name) {
    if (x) return true;
    gf__null_arg(op, name);
    return false;
}

/* x in a float dtype: x itself, or in f32 for integer and bool x. */
static gf_tensor *as_float(const gf_tensor *x) {
    return gf_dtype_is_float(x->dtype) || gf_dtype_is_complex(x->dtype)
               ? gf_tensor_retain((gf_tensor *)x)
               : gf_to_dtype(x, GF_F32);
}

static gf_tensor *zero_of(tmps *L, const gf_tensor *like) {
    return T(gf__scalar(0.0, like->dtype, like->storage->device));
}

static gf_tensor *const_of(tmps *L, const gf_tensor *like, double v) {
    return T(gf__scalar(v, like->dtype, like->storage->device));
}

static bool device_stores(const gf_device *dev, gf_dtype dt) {
    gf_device_info info;
    return gf_device_get_info(dev, &info) == GF_OK && (info.dtypes & (1u << dt));
}

/* A scope of no-grad computation (leaves inference mode as it is). */
static gf_grad_mode no_grad_begin(void) {
    gf_grad_mode prev = gf_grad_mode_get();
    if (prev == GF_GRAD_MODE_GRAD) gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    return prev;
}
static void no_grad_end(gf_grad_mode prev) { gf_grad_mode_set(prev); }

/* ------------------------------------------------------------ activations */
/* nan_passes: a NaN x keeps the gradient (hardtanh, relu6: PyTorch's
 * hardtanh_backward zeroes only x <= min and x >= max) or loses it
 * (hardsigmoid: its backward passes only -3 < x < 3). */
static gf_tensor *hardtanh_impl(const gf_tensor *x, double lo, double hi, bool nan_passes,
                                const char *op) {
    if (!null_check(op, x, "x")) return NULL;
    if (x->dtype == GF_BOOL) {
        gf__error(GF_ERR_DTYPE, "%s: bool inputs are not supported (as PyTorch); convert with "
                  "gf_to_dtype", op);
        return NULL;
    }
    if (!gf_dtype_is_float(x->dtype)) {
        /* PyTorch: integer x keeps its dtype, the bounds truncated. */
        double tl = trunc(lo), th = trunc(hi);
        int64_t il = tl <= -9.2e18 ? INT64_MIN : tl >= 9.2e18 ? INT64_MAX : (int64_t)tl;
        int64_t ih = th <= -9.2e18 ? INT64_MIN : th >= 9.2e18 ? INT64_MAX : (int64_t)th;
        return gf_clamp_int(x, il, ih);
    }
    BEGIN;
    /* x strictly inside carries the gradient; elsewhere the clamped value
     * comes from outside the graph (gradient 0 at the bounds, as PyTorch's
     * hardtanh_backward). */
    gf_tensor *inside =
        nan_passes
            ? T(gf_logical_not(T(gf_logical_or(T(gf_le_scalar(x, lo)), T(gf_ge_scalar(x, hi))))))
            : T(gf_logical_and(T(gf_gt_scalar(x, lo)), T(gf_lt_scalar(x, hi))));
    gf_grad_mode m = no_grad_begin();
    gf_tensor *c = T(gf_clamp(x, lo, hi));
    no_grad_end(m);
    gf_tensor *y = T(gf_where(inside, x, c));
    END(y);
}

gf_tensor *gf_hardtanh(const gf_tensor *x, double min_val, double max_val) {
    if (isnan(min_val) || isnan(max_val) || min_val > max_val) {
        gf__error(GF_ERR_INVALID, "gf_hardtanh: min_val (%g) cannot be greater than max_val "
                  "(%g), and neither may be NaN (PyTorch's defaults are -1 and 1)", min_val,
                  max_val);
        return NULL;
    }
    return hardtanh_impl(x, min_val, max_val, true, "gf_hardtanh");
}

gf_tensor *gf_relu6(const gf_tensor *x) { return hardtanh_impl(x, 0.0, 6.0, true, "gf_relu6"); }

gf_tensor *gf_hardsigmoid(const gf_tensor *x) {
    if (!null_check("gf_hardsigmoid", x, "x")) return NULL;
    BEGIN;
    gf_tensor *xf = T(as_float(x));
    gf_tensor *h = T(hardtanh_impl(T(gf_add_scalar(xf, 3.0)), 0.0, 6.0, false, "gf_hardsigmoid"));
    gf_tensor *y = T(gf_div_scalar(h, 6.0));
    END(y);
}

/* softplus(x) = log1p(exp(x)) below 0, x + log1p(exp(-x)) from 0. */
static gf_tensor *stable_softplus(tmps *L, gf_tensor *x) {
    gf_tensor *zero = zero_of(L, x);
    gf_tensor *nonneg = T(gf_ge_scalar(x, 0.0));
    gf_tensor *xp = T(gf_where(nonneg, x, zero));
    gf_tensor *xn = T(gf_where(nonneg, zero, x));
    gf_tensor *sp_p = T(gf_add(xp, T(gf_log1p(T(gf_exp(T(gf_neg(xp))))))));
    gf_tensor *sp_n = T(gf_log1p(T(gf_exp(xn))));
    return T(gf_where(nonneg, sp_p, sp_n));
}

gf_tensor *gf_mish(const gf_tensor *x) {
    if (!null_check("gf_mish", x, "x")) return NULL;
    BEGIN;
    gf_tensor *xf = T(as_float(x));
    gf_tensor *y = T(gf_mul(xf, T(gf_tanh(stable_softplus(L, xf)))));
    END(y);
}

gf_tensor *gf_logsigmoid(const gf_tensor *x) {
    if (!null_check("gf_logsigmoid", x, "x")) return NULL;
    BEGIN;
    gf_tensor *xf = T(as_float(x));
    gf_tensor *zero = zero_of(L, xf);
    gf_tensor *neg = T(gf_lt_scalar(xf, 0.0));
    gf_tensor *xn = T(gf_where(neg, xf, zero));
    gf_tensor *xp = T(gf_where(neg, zero, xf));
    gf_tensor *a = T(gf_sub(xn, T(gf_log1p(T(gf_exp(xn))))));
    gf_tensor *b = T(gf_neg(T(gf_log1p(T(gf_exp(T(gf_neg(xp))))))));
    gf_tensor *y = T(gf_where(neg, a, b));
    END(y);
}

gf_tensor *gf_softsign(const gf_tensor *x) {
    if (!null_check("gf_softsign", x, "x")) return NULL;
    BEGIN;
    gf_tensor *xf = T(as_float(x));
    gf_tensor *y = T(gf_div(xf, T(gf_add_scalar(T(gf_abs(xf)), 1.0))));
    END(y);
}

#define SELU_ALPHA 1.6732632423543772848170429916717
#define SELU_SCALE 1.0507009873554804934193349852946

gf_tensor *gf_selu(const gf_tensor *x) {
    if (!null_check("gf_selu", x, "x")) return NULL;
    BEGIN;
    gf_tensor *y = T(gf_mul_scalar(T(gf_elu(x, SELU_ALPHA)), SELU_SCALE));
    END(y);
}

gf_tensor *gf_celu(const gf_tensor *x, double alpha) {
    if (!null_check("gf_celu", x, "x")) return NULL;
    if (alpha == 0.0 || isnan(alpha)) {
        gf__error(GF_ERR_INVALID, "gf_celu: alpha cannot be 0 or NaN (PyTorch's "
                  "ZeroDivisionError; the default is 1.0), got %g", alpha);
        return NULL;
    }
    BEGIN;
    /* PyTorch's elu with input scale 1/alpha: x where x > 0, else
     * alpha (exp(x / alpha) - 1) (for any sign of alpha). */
    gf_tensor *xf = T(as_float(x));
    gf_tensor *pos = T(gf_gt_scalar(xf, 0.0));
    gf_tensor *xn = T(gf_where(pos, zero_of(L, xf), xf));
    gf_tensor *neg = T(gf_mul_scalar(T(gf_expm1(T(gf_div_scalar(xn, alpha)))), alpha));
    gf_tensor *y = T(gf_where(pos, xf, neg));
    END(y);
}

/* ------------------------------------------------------------ remainder, fmod */
/* Integer a - trunc(a / b) b through the ABI's integer DIV (truncating; INT_MIN
 * / -1 wraps, giving remainder 0). a and b of dtype dt, broadcast. */
static gf_tensor *int_trunc_div(tmps *L, gf_tensor *a, gf_tensor *b, const char *op) {
    int64_t shape[GF_MAX_RANK];
    int rank = 0;
    if (L->bad ||
        gf__broadcast_shapes(a->sizes, a->rank, b->sizes, b->rank, shape, &rank, op) != GF_OK) {
        fail_keep(L);
        return NULL;
    }
    gf_tensor *ae = T(gf__expand_to(a, shape, rank));
    gf_tensor *be = T(gf__expand_to(b, shape, rank));
    gf_tensor *q = T(gf__empty(shape, rank, a->dtype, a->storage->device));
    if (!q) return NULL;
    const gf_tensor *ins[2] = {ae, be};
    gf_tensor *outs[1] = {q};
    if (gf__launch(GFP_OP_DIV, op, ins, 2, outs, 1, NULL) != GF_OK) {
        fail_keep(L);
        return NULL;
    }
    return q;
}

/* Fails INVALID (PyTorch's ZeroDivisionError) when an integer b holds a 0:
 * one device-to-host read. */
static bool int_divisor_ok(tmps *L, gf_tensor *b, const char *op) {
    if (L->bad || gf__numel(b) == 0) return !L->bad;
    gf_tensor *z = T(gf_amax(T(gf_to_dtype(T(gf_eq_scalar_int(b, 0)), GF_F32)), NULL, 0, false));
    double v = 0;
    if (!z || gf_tensor_item(z, &v) != GF_OK) {
        fail_keep(L);
        return false;
    }
    if (v != 0) {
        gf__error(GF_ERR_INVALID, "%s: ZeroDivisionError: integer division by zero (a divisor "
                  "is 0); convert to a float dtype for NaN instead", op);
        fail_keep(L);
        return false;
    }
    return true;
}

/* Exact q * y = p + e (Dekker's two-product), without overflow or underflow
 * for the magnitudes step() hands it. K splits a float in two halves. */
static void two_prod(tmps *L, gf_tensor *u, gf_tensor *v, double K, gf_tensor **p,
                     gf_tensor **e) {
    gf_tensor *cu = T(gf_mul_scalar(u, K));
    gf_tensor *uh = T(gf_sub(cu, T(gf_sub(cu, u))));
    gf_tensor *ul = T(gf_sub(u, uh));
    gf_tensor *cv = T(gf_mul_scalar(v, K));
    gf_tensor *vh = T(gf_sub(cv, T(gf_sub(cv, v))));
    gf_tensor *vl = T(gf_sub(v, vh));
    *p = T(gf_mul(u, v));
    gf_tensor *t1 = T(gf_sub(T(gf_mul(uh, vh)), *p));
    gf_tensor *t2 = T(gf_add(T(gf_add(t1, T(gf_mul(uh, vl)))), T(gf_mul(ul, vh))));
    *e = T(gf_add(t2, T(gf_mul(ul, vl))));
}

/* Per-dtype constants of the exact float fmod. */
typedef struct fmod_consts {
    double split;              /* 2^ceil(m/2) + 1 */
    double big, big_scale;     /* divisors above big are scaled by big_scale */
    double small, small_scale; /* divisors below small by small_scale */
    int piece;                 /* log2 of the largest quotient of one step */
} fmod_consts;

static const fmod_consts FMOD_F64 = {134217729.0, 0x1p900, 0x1p-200, 0x1p-900, 0x1p200, 48};
static const fmod_consts FMOD_F32 = {4097.0, 0x1p100, 0x1p-40, 0x1p-60, 0x1p40, 20};

/* fmod(x, y) for x >= 0, y >= 0 (or NaN) with x / y below 2^(mantissa bits
 * - 1) wherever x >= y:
 * q = floor(x / y) is exact or one too large (rounding of x / y up to an
 * integer), x - q y is then exact (two-product and Sterbenz), and one
 * correction step adds y back where it came out negative. Divisors near
 * the ends of the range are scaled by a power of two first. */
static gf_tensor *fmod_step(tmps *outer, gf_tensor *x, gf_tensor *y, const fmod_consts *k) {
    if (outer->bad) return NULL;
    tmps inner = {0}; /* this step's temporaries, released when it ends */
    tmps *L = &inner;
    gf_tensor *one = const_of(L, x, 1.0);
    gf_tensor *big = T(gf_gt_scalar(y, k->big)), *small = T(gf_lt_scalar(y, k->small));
    gf_tensor *sc = T(gf_where(big, const_of(L, x, k->big_scale),
                               T(gf_where(small, const_of(L, x, k->small_scale), one))));
    gf_tensor *xs = T(gf_mul(x, sc)), *ys = T(gf_mul(y, sc));
    gf_tensor *q = T(gf_floor(T(gf_div(xs, ys))));
    gf_tensor *p = NULL, *e = NULL;
    two_prod(L, q, ys, k->split, &p, &e);
    gf_tensor *r = T(gf_sub(T(gf_sub(xs, p)), e));
    r = T(gf_where(T(gf_lt_scalar(r, 0.0)), T(gf_add(r, ys)), r));
    r = T(gf_div(r, sc));
    gf_tensor *res = finish(L, T(gf_where(T(gf_lt(x, y)), x, r)));
    return keep(outer, res);
}

/* C's fmod of float a and b (one dtype, broadcasting), exact. */
static gf_tensor *fmod_exact(tmps *L, gf_tensor *a, gf_tensor *b) {
    const fmod_consts *k = a->dtype == GF_F64 ? &FMOD_F64 : &FMOD_F32;
    gf_tensor *x = T(gf_abs(a)), *y = T(gf_abs(b));
    /* Quotients above 2^P (P = 48 in f64, 20 in f32) are reduced in pieces:
     * with b_j = |b| 2^(P j), x mod b_j for j = J..0 (b_j is a multiple of b,
     * so each step keeps x's class modulo b, and x < b_(j+1) makes x / b_j <
     * 2^P). J from the largest log2 ratio: one device-to-host read. */
    int J = 0;
    if (!L->bad && gf__numel(x) > 0 && gf__numel(y) > 0) {
        gf_tensor *d = T(gf_sub(T(gf_log(x)), T(gf_log(y))));
        gf_tensor *fin = T(gf_lt_scalar(T(gf_abs(d)), INFINITY));
        gf_tensor *m = T(gf_amax(T(gf_where(fin, d, zero_of(L, d))), NULL, 0, false));
        double v = 0;
        if (!m || gf_tensor_item(m, &v) != GF_OK) {
            fail_keep(L);
            return NULL;
        }
        double r2 = v / 0.69314718055994530942;
        if (r2 > k->piece - 1) J = (int)ceil((r2 - (k->piece - 1)) / k->piece);
    }
    gf_tensor *bj = y;
    gf_tensor *steps[128];
    if (J > 127) J = 127;
    steps[0] = y;
    for (int j = 1; j <= J; j++) steps[j] = bj = T(gf_mul_scalar(bj, ldexp(1.0, k->piece)));
    for (int j = J; j >= 0 && !L->bad; j--) x = fmod_step(L, x, steps[j], k);
    /* The sign of a (-0.0 for a zero result of a negative a); |a| < |b| gives
     * a itself (its -0.0, and a for an infinite b). */
    gf_tensor *sx = T(gf_where(T(gf_lt_scalar(a, 0.0)), T(gf_neg(x)), x));
    return T(gf_where(T(gf_lt(T(gf_abs(a)), y)), a, sx));
}

static gf_tensor *mod_impl(const gf_tensor *a, const gf_tensor *b, bool python, const char *op) {
    if (!null_check(op, a, "a") || !null_check(op, b, "b") || !gf__same_device(a, b, op))
        return NULL;
    gf_dtype dt = gf__promote(a->dtype, b->dtype);
    if (dt == GF_BOOL) {
        gf__error(GF_ERR_DTYPE, "%s: does not take two bool tensors; convert with gf_to_dtype",
                  op);
        return NULL;
    }
    int64_t shape[GF_MAX_RANK];
    int rank = 0;
    if (gf__broadcast_shapes(a->sizes, a->rank, b->sizes, b->rank, shape, &rank, op) != GF_OK)
        return NULL;
    BEGIN;
    gf_tensor *y = NULL;
    gf_grad_mode m = no_grad_begin();
    gf_tensor *ac = T(gf__cast(a, dt)), *bc = T(gf__cast(b, dt));
    gf_tensor *r = NULL;
    if (!gf_dtype_is_float(dt)) {
        if (int_divisor_ok(L, bc, op)) {
            gf_tensor *q = int_trunc_div(L, ac, bc, op);
            r = T(gf_sub(ac, T(gf_mul(q, bc))));
        }
    } else {
        gf_dtype cd = dt == GF_F32 && device_stores(a->storage->device, GF_F64) ? GF_F64 : dt;
        gf_tensor *a2 = T(gf__cast(ac, cd)), *b2 = T(gf__cast(bc, cd));
        r = a2 && b2 ? fmod_exact(L, a2, b2) : NULL;
        if (r && python) {
            gf_tensor *fix = T(gf_logical_and(T(gf_ne_scalar(r, 0.0)),
                                              T(gf_ne(T(gf_lt_scalar(r, 0.0)),
                                                      T(gf_lt_scalar(b2, 0.0))))));
            r = T(gf_where(fix, T(gf_add(r, b2)), r));
        }
        if (r && cd != dt) r = T(gf__cast(r, dt));
    }
    if (r && python && !gf_dtype_is_float(dt)) {
        gf_tensor *z = T(gf__scalar(0.0, dt, r->storage->device));
        gf_tensor *fix = T(gf_logical_and(T(gf_ne(r, z)), T(gf_ne(T(gf_lt(r, z)),
                                                                  T(gf_lt(bc, z))))));
        r = T(gf_where(fix, T(gf_add(r, bc)), r));
    }
    no_grad_end(m);
    /* An expanded result (a 0-dim pair) is made a tensor of its own. */
    if (r) y = T(gf__contig(r));
    if (y && gf_dtype_is_float(dt) && gf__ag_record_mod(python, a, b, y) != GF_OK) fail_keep(L);
    END(y);
}

/* A 0-dim tensor for a scalar divisor by the scalar rule of graft/ops.h. */
static gf_tensor *double_scalar_for(const gf_tensor *x, double s) {
    return gf__scalar(s, gf_dtype_is_float(x->dtype) ? x->dtype : GF_F32, x->storage->device);
}

static gf_tensor *int_scalar_for(const gf_tensor *x, int64_t s, const char *op) {
    gf_dtype dt = x->dtype == GF_BOOL ? GF_I64 : x->dtype;
    gf_device *dev = x->storage->device;
    if (gf_dtype_is_float(dt)) return gf__scalar((double)s, dt, dev);
    if (dt == GF_I64) return gf_from_data(&s, NULL, 0, GF_I64, dev);
    if (s < INT32_MIN || s > INT32_MAX) {
        gf__error(GF_ERR_OVERFLOW, "%s: the scalar %lld does not fit the i32 tensor's dtype; "
                  "convert the tensor with gf_to_dtype(x, GF_I64) first", op, (long long)s);
        return NULL;
    }
    int32_t v = (int32_t)s;
    return gf_from_data(&v, NULL, 0, GF_I32, dev);
}

#define MOD_FORMS(name, python)                                                      \
    gf_tensor *gf_##name(const gf_tensor *a, const gf_tensor *b) {                  \
        return mod_impl(a, b, python, "gf_" #name);                                  \
    }                                                                                \
    gf_tensor *gf_##name##_scalar(const gf_tensor *a, double b) {                    \
        if (!null_check("gf_" #name "_scalar", a, "a")) return NULL;                 \
        int s_ = gf__scope_suspend();                                                \
        gf_tensor *c = double_scalar_for(a, b);                                      \
        gf_tensor *r = c ? mod_impl(a, c, python, "gf_" #name "_scalar") : NULL;     \
        gf__scope_resume(s_);                                                        \
        gf_tensor_release(c);                                                        \
        return ret_new(r);                                                           \
    }                                                                                \
    gf_tensor *gf_##name##_scalar_int(const gf_tensor *a, int64_t b) {               \
        if (!null_check("gf_" #name "_scalar_int", a, "a")) return NULL;             \
        int s_ = gf__scope_suspend();                                                \
        gf_tensor *c = int_scalar_for(a, b, "gf_" #name "_scalar_int");              \
        gf_tensor *r = c ? mod_impl(a, c, python, "gf_" #name "_scalar_int") : NULL; \
        gf__scope_resume(s_);                                                        \
        gf_tensor_release(c);                                                        \
        return ret_new(r);                                                           \
    }
MOD_FORMS(remainder, true)
MOD_FORMS(fmod, false)
#undef MOD_FORMS

/* ------------------------------------------------------------ lerp, addc*, clamp */
static bool same_float_dtype(const char *op, const gf_tensor *a, const char *an,
                             const gf_tensor *b, const char *bn) {
    if (!gf__same_device(a, b, op)) return false;
    if (!gf_dtype_is_float(a->dtype) || a->dtype != b->dtype) {
        gf__error(GF_ERR_DTYPE, "%s: expected %s and %s of one float dtype, got %s and %s; "
                  "convert with gf_to_dtype", op, an, bn, gf_dtype_name(a->dtype),
                  gf_dtype_name(b->dtype));
        return false;
    }
    return true;
}

static bool broadcasts(const char *op, const gf_tensor *const *ts, int n) {
    int64_t shape[GF_MAX_RANK], tmp[GF_MAX_RANK];
    int rank = ts[0]->rank, r = 0;
    memcpy(shape, ts[0]->sizes, sizeof(int64_t) * (size_t)rank);
    for (int i = 1; i < n; i++) {
        if (gf__broadcast_shapes(shape, rank, ts[i]->sizes, ts[i]->rank, tmp, &r, op) != GF_OK)
            return false;
        memcpy(shape, tmp, sizeof tmp);
        rank = r;
    }
    return true;
}

/* PyTorch's lerp: start + w (end - start) where |w| < 0.5, else
 * end - (end - start)(1 - w). */
gf_tensor *gf_lerp(const gf_tensor *start, const gf_tensor *end, const gf_tensor *weight) {
    const char *op = "gf_lerp";
    if (!null_check(op, start, "start") || !null_check(op, end, "end") ||
        !null_check(op, weight, "weight") ||
        !same_float_dtype(op, start, "start", end, "end") ||
        !same_float_dtype(op, start, "start", weight, "weight"))
        return NULL;
    const gf_tensor *ts[3] = {start, end, weight};
    if (!broadcasts(op, ts, 3)) return NULL;
    BEGIN;
    gf_tensor *d = T(gf_sub(end, start));
    gf_tensor *lo = T(gf_add(start, T(gf_mul(weight, d))));
    gf_tensor *hi = T(gf_sub(end, T(gf_mul(d, T(gf_rsub_scalar(weight, 1.0))))));
    gf_tensor *y = T(gf_where(T(gf_lt_scalar(T(gf_abs(weight)), 0.5)), lo, hi));
    END(y);
}

gf_tensor *gf_lerp_scalar(const gf_tensor *start, const gf_tensor *end, double weight) {
    const char *op = "gf_lerp_scalar";
    if (!null_check(op, start, "start") || !null_check(op, end, "end") ||
        !same_float_dtype(op, start, "start", end, "end"))
        return NULL;
    const gf_tensor *ts[2] = {start, end};
    if (!broadcasts(op, ts, 2)) return NULL;
    BEGIN;
    gf_tensor *d = T(gf_sub(end, start));
    gf_tensor *y = fabs(weight) < 0.5 ? T(gf_add(start, T(gf_mul_scalar(d, weight))))
                                      : T(gf_sub(end, T(gf_mul_scalar(d, 1.0 - weight))));
    END(y);
}

/* self + value * (t1 op t2). */
static gf_tensor *addc(const gf_tensor *self, const gf_tensor *t1, const gf_tensor *t2,
                       double value, bool div, const char *op) {
    if (!null_check(op, self, "self") || !null_check(op, t1, "tensor1") ||
        !null_check(op, t2, "tensor2") || !gf__same_device(self, t1, op) ||
        !gf__same_device(self, t2, op))
        return NULL;
    const gf_tensor *ts[3] = {self, t1, t2};
    if (!broadcasts(op, ts, 3)) return NULL;
    gf_dtype dt = gf__promote(gf__promote(self->dtype, t1->dtype), t2->dtype);
    if (div && !gf_dtype_is_float(t1->dtype) && !gf_dtype_is_float(t2->dtype)) {
        gf__error(GF_ERR_DTYPE, "%s: integer division of tensor1 (%s) by tensor2 (%s) is not "
                  "supported (as PyTorch); convert one of them to a float dtype", op,
                  gf_dtype_name(t1->dtype), gf_dtype_name(t2->dtype));
        return NULL;
    }
    if (!div && !gf_dtype_is_float(dt) && (value != trunc(value) || isinf(value))) {
        gf__error(GF_ERR_INVALID, "%s: with integer tensors, value must be an integer, got %g "
                  "(PyTorch refuses floating values there)", op, value);
        return NULL;
    }
    if (!div && dt == GF_BOOL) {
        gf__error(GF_ERR_DTYPE, "%s: does not take three bool tensors; convert with "
                  "gf_to_dtype", op);
        return NULL;
    }
    BEGIN;
    gf_tensor *p = T(div ? gf_div(t1, t2) : gf_mul(t1, t2));
    if (value != 1.0) {
        if (p && !gf_dtype_is_float(p->dtype)) {
            if (fabs(value) >= 0x1p63) {
                gf__error(GF_ERR_OVERFLOW, "%s: value %g does not fit an int64", op, value);
                fail_keep(L);
            }
            p = T(gf_mul_scalar_int(p, (int64_t)value));
        } else {
            p = T(gf_mul_scalar(p, value));
        }
    }
    gf_tensor *y = T(gf_add(self, p));
    END(y);
}

gf_tensor *gf_addcmul(const gf_tensor *self, const gf_tensor *tensor1, const gf_tensor *tensor2,
                      double value) {
    return addc(self, tensor1, tensor2, value, false, "gf_addcmul");
}

gf_tensor *gf_addcdiv(const gf_tensor *self, const gf_tensor *tensor1, const gf_tensor *tensor2,
                      double value) {
    return addc(self, tensor1, tensor2, value, true, "gf_addcdiv");
}

gf_tensor *gf_clamp_tensor(const gf_tensor *x, const gf_tensor *min, const gf_tensor *max) {
    const char *op = "gf_clamp_tensor";
    if (!null_check(op, x, "x")) return NULL;
    if (!min && !max) {
        gf__error(GF_ERR_INVALID, "%s: at least one of min and max must be given (both are "
                  "NULL)", op);
        return NULL;
    }
    if ((min && !gf__same_device(x, min, op)) || (max && !gf__same_device(x, max, op)))
        return NULL;
    const gf_tensor *ts[3] = {x, min ? min : max, max ? max : min};
    if (!broadcasts(op, ts, 3)) return NULL;
    gf_dtype dt = gf__promote(gf__promote(x->dtype, ts[1]->dtype), ts[2]->dtype);
    if (dt == GF_BOOL) {
        gf__error(GF_ERR_DTYPE, "%s: bool tensors are not supported; convert with gf_to_dtype",
                  op);
        return NULL;
    }
    BEGIN;
    gf_grad_mode m = no_grad_begin();
    gf_tensor *y = T(gf__cast(x, dt));
    if (min) y = T(gf_maximum(y, min));
    if (max) y = T(gf_minimum(y, max));
    if (y) y = T(gf__contig(y));
    no_grad_end(m);
    if (y && gf_dtype_is_float(dt) && gf__ag_record_clamp_tensor(x, min, max, y) != GF_OK)
        fail_keep(L);
    END(y);
}

/* ------------------------------------------------------------ predicates */
/* value (false / true) for every element of a non-float x. */
static gf_tensor *const_bool(const gf_tensor *x, bool value) {
    return value ? gf_ones(x->sizes, x->rank, GF_BOOL, x->storage->device)
                 : gf_zeros(x->sizes, x->rank, GF_BOOL, x->storage->device);
}

gf_tensor *gf_isnan(const gf_tensor *x) {
    if (!null_check("gf_isnan", x, "x")) return NULL;
    /* complex: NaN in either part (z != z then, as C99 compares them) */
    return gf_dtype_is_float(x->dtype) || gf_dtype_is_complex(x->dtype) ? gf_ne(x, x)
                                                                       : const_bool(x, false);
}

gf_tensor *gf_isposinf(const gf_tensor *x) {
    if (!null_check("gf_isposinf", x, "x")) return NULL;
    return gf_dtype_is_float(x->dtype) ? gf_eq_scalar(x, INFINITY) : const_bool(x, false);
}

gf_tensor *gf_isneginf(const gf_tensor *x) {
    if (!null_check("gf_isneginf", x, "x")) return NULL;
    return gf_dtype_is_float(x->dtype) ? gf_eq_scalar(x, -INFINITY) : const_bool(x, false);
}

gf_tensor *gf_isinf(const gf_tensor *x) {
    if (!null_check("gf_isinf", x, "x")) return NULL;
    if (!gf_dtype_is_float(x->dtype) && !gf_dtype_is_complex(x->dtype))
        return const_bool(x, false); /* complex: |z| is inf iff a part is */
    BEGIN;
    gf_tensor *y = T(gf_eq_scalar(T(gf_abs(x)), INFINITY));
    END(y);
}

gf_tensor *gf_isfinite(const gf_tensor *x) {
    if (!null_check("gf_isfinite", x, "x")) return NULL;
    if (gf_dtype_is_complex(x->dtype)) { /* both parts finite (|z| may overflow) */
        BEGIN;
        gf_tensor *y = T(gf_logical_and(T(gf_isfinite(T(gf_real(x)))),
                                        T(gf_isfinite(T(gf_imag(x))))));
        END(y);
    }
    if (!gf_dtype_is_float(x->dtype)) return const_bool(x, true);
    BEGIN;
    gf_tensor *y = T(gf_lt_scalar(T(gf_abs(x)), INFINITY));
    END(y);
}

gf_tensor *gf_nan_to_num(const gf_tensor *x, double nan, double posinf, double neginf) {
    if (!null_check("gf_nan_to_num", x, "x")) return NULL;
    if (!gf_dtype_is_float(x->dtype)) return gf_clone(x);
    double top = x->dtype == GF_F64 ? DBL_MAX : FLT_MAX;
    if (isnan(posinf)) posinf = top;
    if (isnan(neginf)) neginf = -top;
    BEGIN;
    gf_tensor *repl = T(gf_where(T(gf_ne(x, x)), const_of(L, x, nan),
                                 T(gf_where(T(gf_gt_scalar(x, 0.0)), const_of(L, x, posinf),
                                            const_of(L, x, neginf)))));
    gf_tensor *fin = T(gf_lt_scalar(T(gf_abs(x)), INFINITY));
    gf_tensor *y = T(gf_where(fin, x, repl));
    END(y);
}

/* ------------------------------------------------------------ rounding */
static gf_tensor *trunc_float(tmps *L, gf_tensor *x) {
    return T(gf_where(T(gf_ge_scalar(x, 0.0)), T(gf_floor(x)), T(gf_ceil(x))));
}

gf_tensor *gf_trunc(const gf_tensor *x) {
    if (!null_check("gf_trunc", x, "x")) return NULL;
    if (!gf_dtype_is_float(x->dtype)) return gf_clone(x);
    BEGIN;
    gf_tensor *y = trunc_float(L, (gf_tensor *)x);
    END(y);
}

gf_tensor *gf_frac(const gf_tensor *x) {
    if (!null_check("gf_frac", x, "x")) return NULL;
    if (!gf_dtype_is_float(x->dtype)) {
        gf__error(GF_ERR_DTYPE, "gf_frac: needs a float tensor, got %s (as PyTorch); convert "
                  "with gf_to_dtype", gf_dtype_name(x->dtype));
        return NULL;
    }
    BEGIN;
    gf_tensor *y = T(gf_sub(x, trunc_float(L, (gf_tensor *)x)));
    END(y);
}

/* ------------------------------------------------------------ exp, log */
/* 2^x for a float x, without relying on the device's pow beyond small
 * integer exponents (which every device computes exactly): with n =
 * round(x) and f = x - n (exact, |f| <= 1/2), 2^x = 2^f 2^r (2^64)^q1
 * (2^64)^q2 where n = r + 64 (q1 + q2), 0 <= r < 64, |q1|, |q2| <= 9, and
 * 2^f = exp(f ln 2) (a small argument: no error growth with |x|). Exact at
 * integers; inf above the range, 0 below; NaN stays NaN. The gradient is
 * 2^x ln 2 through the exp (n has none). */
static gf_tensor *exp2_float(tmps *L, gf_tensor *x) {
    if (L->bad) return NULL;
    double lim = x->dtype == GF_F64 ? 1100.0 : 160.0;
    gf_tensor *zero = zero_of(L, x);
    gf_tensor *out = T(gf_gt_scalar(T(gf_abs(x)), lim));
    gf_tensor *xs = T(gf_where(out, zero, x));
    gf_tensor *n = T(gf_round(xs));
    gf_tensor *f = T(gf_sub(xs, n));
    gf_tensor *q = T(gf_floor(T(gf_div_scalar(n, 64.0))));
    gf_tensor *r = T(gf_sub(n, T(gf_mul_scalar(q, 64.0))));
    gf_tensor *q1 = T(gf_trunc(T(gf_div_scalar(q, 2.0))));
    gf_tensor *q2 = T(gf_sub(q, q1));
    gf_tensor *p64 = const_of(L, x, 0x1p64);
    gf_tensor *y = T(gf_exp(T(gf_mul_scalar(f, 0.69314718055994530942))));
    y = T(gf_mul(y, T(gf_pow(const_of(L, x, 2.0), r))));
    y = T(gf_mul(y, T(gf_pow(p64, q1))));
    y = T(gf_mul(y, T(gf_pow(p64, q2))));
    /* beyond the range: inf above, 0 below (the where keeps NaN as NaN) */
    gf_tensor *ends = T(gf_where(T(gf_gt_scalar(x, 0.0)), const_of(L, x, INFINITY), zero));
    return T(gf_where(out, ends, y));
}

/* log(x) * inv_ln_base; f32 through f64 where the device stores it (the
 * rounding to f32 then gives exact integers at powers of the base). In the
 * dtype of x itself (f64, or f32 without f64), a result within a few ulp of
 * an integer n with base^n == x is made n exactly (the correction is taken
 * outside the graph, so the gradient stays 1 / (x ln base)). */
static gf_tensor *log_base(const gf_tensor *x, double base, double inv_ln_base,
                           const char *op) {
    if (!null_check(op, x, "x")) return NULL;
    BEGIN;
    gf_tensor *xf = T(as_float(x));
    gf_dtype out = xf ? xf->dtype : GF_F32;
    gf_dtype cd = out == GF_F32 && device_stores(x->storage->device, GF_F64) ? GF_F64 : out;
    gf_tensor *xc = T(gf_to_dtype(xf, cd));
    gf_tensor *y = T(gf_mul_scalar(T(gf_log(xc)), inv_ln_base));
    if (cd == out && y) { /* f32 through f64 needs no snapping: its rounding does it */
        gf_grad_mode m = no_grad_begin();
        gf_tensor *yd = T(gf_detach(y));
        gf_tensor *n = T(gf_round(yd));
        gf_tensor *pw = base == 2.0 ? exp2_float(L, n) : T(gf_pow(const_of(L, yd, base), n));
        gf_tensor *xd = T(gf_detach(xc));
        gf_tensor *exact = T(gf_logical_and(T(gf_eq(pw, xd)),
                                            T(gf_lt_scalar(T(gf_abs(n)), 2000.0))));
        gf_tensor *corr = T(gf_where(exact, T(gf_sub(n, yd)), zero_of(L, yd)));
        no_grad_end(m);
        y = T(gf_add(y, corr));
    }
    if (cd != out) y = T(gf_to_dtype(y, out));
    END(y);
}

gf_tensor *gf_log2(const gf_tensor *x) {
    return log_base(x, 2.0, 1.4426950408889634073599246810019, "gf_log2");
}

gf_tensor *gf_log10(const gf_tensor *x) {
    return log_base(x, 10.0, 0.43429448190325182765112891891661, "gf_log10");
}

gf_tensor *gf_exp2(const gf_tensor *x) {
    if (!null_check("gf_exp2", x, "x")) return NULL;
    BEGIN;
    gf_tensor *y = exp2_float(L, T(as_float(x)));
    END(y);
}

/* ------------------------------------------------------------ trigonometric */
gf_tensor *gf_tan(const gf_tensor *x) {
    if (!null_check("gf_tan", x, "x")) return NULL;
    BEGIN;
    gf_tensor *xf = T(as_float(x));
    gf_tensor *y = T(gf_div(T(gf_sin(xf)), T(gf_cos(xf))));
    END(y);
}

/* exp(|x| / 2)^2 / 2 for the elements where big holds (xb: x there). */
static gf_tensor *half_exp_abs(tmps *L, gf_tensor *xb) {
    gf_tensor *h = T(gf_exp(T(gf_mul_scalar(T(gf_abs(xb)), 0.5))));
    return T(gf_mul(h, T(gf_mul_scalar(h, 0.5))));
}

static gf_tensor *sinh_cosh(const gf_tensor *x, bool is_sinh, const char *op) {
    if (!null_check(op, x, "x")) return NULL;
    if (gf_dtype_is_complex(x->dtype)) { /* (e^z -+ e^-z) / 2, differentiable through exp */
        BEGIN;
        gf_tensor *ep = T(gf_exp(x)), *em = T(gf_exp(T(gf_neg(x))));
        gf_tensor *y = T(gf_mul_scalar(T(is_sinh ? gf_sub(ep, em) : gf_add(ep, em)), 0.5));
        END(y);
    }
    BEGIN;
    gf_tensor *xf = T(as_float(x));
    gf_tensor *zero = zero_of(L, xf);
    gf_tensor *big = T(gf_gt_scalar(T(gf_abs(xf)), 20.0));
    gf_tensor *xs = T(gf_where(big, zero, xf));
    gf_tensor *xb = T(gf_where(big, xf, const_of(L, xf, 21.0)));
    gf_tensor *small, *large = half_exp_abs(L, xb);
    if (is_sinh) {
        small = T(gf_mul_scalar(T(gf_sub(T(gf_expm1(xs)), T(gf_expm1(T(gf_neg(xs)))))), 0.5));
        large = T(gf_mul(large, T(gf_sign(xb))));
    } else {
        small = T(gf_mul_scalar(T(gf_add(T(gf_exp(xs)), T(gf_exp(T(gf_neg(xs)))))), 0.5));
    }
    gf_tensor *y = T(gf_where(big, large, small));
    END(y);
}

gf_tensor *gf_sinh(const gf_tensor *x) { return sinh_cosh(x, true, "gf_sinh"); }
gf_tensor *gf_cosh(const gf_tensor *x) { return sinh_cosh(x, false, "gf_cosh"); }

#define LN2 0.69314718055994530942
#define HUGE_ARG 268435456.0 /* 2^28 */

/* asinh(u) for u >= 0. */
static gf_tensor *asinh_pos(tmps *L, gf_tensor *u) {
    gf_tensor *big = T(gf_gt_scalar(u, HUGE_ARG));
    gf_tensor *us = T(gf_where(big, zero_of(L, u), u));
    gf_tensor *ub = T(gf_where(big, u, const_of(L, u, 2.0 * HUGE_ARG)));
    gf_tensor *u2 = T(gf_square(us));
    gf_tensor *t = T(gf_add(us, T(gf_div(u2, T(gf_add_scalar(T(gf_sqrt(T(gf_add_scalar(u2, 1.0)))),
                                                              1.0))))));
    gf_tensor *small = T(gf_log1p(t));
    gf_tensor *large = T(gf_add_scalar(T(gf_log(ub)), LN2));
    return T(gf_where(big, large, small));
}

gf_tensor *gf_asinh(const gf_tensor *x) {
    if (!null_check("gf_asinh", x, "x")) return NULL;
    BEGIN;
    gf_tensor *xf = T(as_float(x));
    gf_tensor *zero = zero_of(L, xf);
    gf_tensor *nonneg = T(gf_ge_scalar(xf, 0.0));
    gf_tensor *xp = T(gf_where(nonneg, xf, zero));
    gf_tensor *xn = T(gf_where(nonneg, zero, xf));
    gf_tensor *y = T(gf_where(nonneg, asinh_pos(L, xp), T(gf_neg(asinh_pos(L, T(gf_neg(xn)))))));
    END(y);
}

gf_tensor *gf_acosh(const gf_tensor *x) {
    if (!null_check("gf_acosh", x, "x")) return NULL;
    BEGIN;
    gf_tensor *xf = T(as_float(x));
    gf_tensor *big = T(gf_gt_scalar(xf, HUGE_ARG));
    gf_tensor *xs = T(gf_where(big, const_of(L, xf, 2.0), xf));
    gf_tensor *xb = T(gf_where(big, xf, const_of(L, xf, 2.0 * HUGE_ARG)));
    gf_tensor *t = T(gf_sub_scalar(xs, 1.0));
    /* sqrt(t) sqrt(t + 2) rather than sqrt(t (t + 2)): the gradient at 1 is
     * then inf (sqrt's), not inf * 0 = NaN from the product's rule. */
    gf_tensor *root = T(gf_mul(T(gf_sqrt(t)), T(gf_sqrt(T(gf_add_scalar(t, 2.0))))));
    gf_tensor *small = T(gf_log1p(T(gf_add(t, root))));
    gf_tensor *large = T(gf_add_scalar(T(gf_log(xb)), LN2));
    /* NaN below 1 (far below, t + sqrt(t (t + 2)) would cancel to -1). */
    gf_tensor *y = T(gf_where(T(gf_lt_scalar(xf, 1.0)), const_of(L, xf, NAN),
                              T(gf_where(big, large, small))));
    END(y);
}

gf_tensor *gf_atanh(const gf_tensor *x) {
    if (!null_check("gf_atanh", x, "x")) return NULL;
    BEGIN;
    gf_tensor *xf = T(as_float(x));
    gf_tensor *y = T(gf_mul_scalar(T(gf_sub(T(gf_log1p(xf)), T(gf_log1p(T(gf_neg(xf)))))), 0.5));
    END(y);
}
