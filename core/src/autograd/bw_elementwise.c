/* SPDX-License-Identifier: BSD-3-Clause */
/* bw_elementwise.c — backward formulas of the elementwise ops.
 *
 * Formulas use graft's own public (differentiable) ops, so with
 * create_graph the backward pass records a graph of its own. Each node saves
 * only what its formula reads: the input x, the output y, or both.
 * Non-differentiable points follow PyTorch (docs/autograd.md, rule 24):
 * relu'(0) = 0, abs'(0) = 0, sqrt'(0) = inf, sign/floor/ceil/round' = 0,
 * clamp passes the gradient only strictly inside (min, max) (none at a
 * bound, as PyTorch 2.x), maximum/minimum ties give half the gradient to
 * each side. */
#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "ag_internal.h"
#include "fwad/fw_internal.h"
#include "graft_ops.h"

#define SQRT1_2 0.70710678118654752440     /* 1/sqrt(2) */
#define INV_SQRT_2PI 0.39894228040143267794 /* 1/sqrt(2 pi) */
#define TWO_SQRTPI 1.12837916709551257390   /* 2/sqrt(pi) */
#define GELU_TANH_K 0.79788456080286535588  /* sqrt(2/pi) */
#define GELU_TANH_C 0.044715

/* A 0-dim zero of g's dtype on g's device (broadcasts in gf_where). */
static gf_tensor *zero_of(const gf_tensor *g) {
    return gf_scalar(0.0, gf_tensor_dtype(g), gf_tensor_device(g));
}

/* g where keep is true, else 0. */
static gf_tensor *keep_where(const gf_tensor *keep, const gf_tensor *g) {
    return gf_where(keep, g, zero_of(g));
}

/* The gradient of an input: g summed back to the input's (pre-broadcast)
 * sizes and converted to its dtype (mixed-dtype ops promote). New reference,
 * outside any scope. */
static gf_tensor *to_input(const gf_tensor *g, const int64_t *sizes, int rank, gf_dtype dt) {
    gf_tensor *r = gf__ag_sum_to(g, sizes, rank);
    if (r && r->dtype != dt) {
        int saved = gf__scope_suspend();
        gf_tensor *c = gf__grad_to_dtype(r, dt);
        gf__scope_resume(saved);
        gf_tensor_release(r);
        r = c;
    }
    return r;
}

/* ------------------------------------------------------------ unary */
static const char *grad_fn_name(gfp_op op, const char *otherwise);
typedef struct unary_ctx {
    gfp_op op;
    double a, b; /* op parameters (slope, alpha, beta, threshold, exponent, min, max) */
} unary_ctx;
GF_CTX_FITS(unary_ctx);

static bool fused_grad(gfp_op op, const char *name, gf_tensor *g, gf_tensor *y, gf_tensor **out);

/* d/dx gelu (erf form) = Phi(x) + x * phi(x): one GELU_BACKWARD launch
 * where fused_grad may, else composed. */
static gf_tensor *gelu_grad(gf_tensor *g, gf_tensor *x) {
    gf_tensor *k;
    if (fused_grad(GFP_OP_GELU_BACKWARD, "gelu_backward", g, x, &k)) return k;
    gf_tensor *cdf = gf_mul_scalar(gf_add_scalar(gf_erf(gf_mul_scalar(x, SQRT1_2)), 1.0), 0.5);
    gf_tensor *pdf = gf_mul_scalar(gf_exp(gf_mul_scalar(gf_square(x), -0.5)), INV_SQRT_2PI);
    return gf_mul(g, gf_add(cdf, gf_mul(x, pdf)));
}

/* PyTorch's formula for the tanh form: with t = tanh(k (x + c x^3)),
 * 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2). */
static gf_tensor *gelu_tanh_grad(gf_tensor *g, gf_tensor *x) {
    gf_tensor *x2 = gf_square(x);
    gf_tensor *inner = gf_mul_scalar(gf_add(x, gf_mul_scalar(gf_mul(x2, x), GELU_TANH_C)),
                                     GELU_TANH_K);
    gf_tensor *t = gf_tanh(inner);
    gf_tensor *left = gf_mul_scalar(gf_add_scalar(t, 1.0), 0.5);
    gf_tensor *dinner = gf_mul_scalar(gf_add_scalar(gf_mul_scalar(x2, 3 * GELU_TANH_C), 1.0),
                                      GELU_TANH_K);
    gf_tensor *right = gf_mul(gf_mul(gf_mul_scalar(x, 0.5), gf_rsub_scalar(gf_square(t), 1.0)),
                              dinner);
    return gf_mul(g, gf_add(left, right));
}

/* d/dx silu = s (1 + x (1 - s)) with s = sigmoid(x). */
static gf_tensor *silu_grad(gf_tensor *g, gf_tensor *x) {
    gf_tensor *s = gf_sigmoid(x);
    gf_tensor *d = gf_mul(s, gf_add_scalar(gf_mul(x, gf_rsub_scalar(s, 1.0)), 1.0));
    return gf_mul(g, d);
}

/* PyTorch 2.x's hardswish_backward: 0 up to -3 (0 at -3), g (x / 3 + 1/2)
 * on the open (-3, 3), g from 3 on (g at 3) and for NaN. (1.13 used the
 * middle formula on the closed [-3, 3]: -g/2 at -3, 3g/2 at 3.) */
static gf_tensor *hardswish_grad(gf_tensor *g, gf_tensor *x) {
    gf_tensor *mid = gf_mul(g, gf_add_scalar(gf_mul_scalar(x, 1.0 / 3.0), 0.5));
    return gf_where(gf_le_scalar(x, -3.0), zero_of(g),
                    gf_where(gf_lt_scalar(x, 3.0), mid, g));
}

/* Pass-through mask of clamp: min < x < max, strictly (either bound may be
 * absent). PyTorch 2.x's clamp_backward: x on a bound, x = NaN and every x
 * when min >= max get 0 (1.13 passed the gradient on the bounds). */
static gf_tensor *clamp_grad(gf_tensor *g, gf_tensor *x, double lo, double hi) {
    gf_tensor *in = NULL;
    if (!isnan(lo)) in = gf_gt_scalar(x, lo);
    if (!isnan(hi)) {
        gf_tensor *lt = gf_lt_scalar(x, hi);
        in = in ? gf_logical_and(in, lt) : lt;
    }
    return keep_where(in, g);
}

/* exponent 0 gives a zero gradient (also where x^-1 would be inf). */
static gf_tensor *pow_scalar_grad(gf_tensor *g, gf_tensor *x, double e) {
    if (e == 0) return gf_zeros_like(g);
    return gf_mul(g, gf_mul_scalar(gf_pow_scalar(x, e - 1.0), e));
}

/* A fused gradient kernel op(g, y) (RELU_BACKWARD, GELU_BACKWARD: g the
 * incoming gradient, y what the kernel reads of the forward) in one launch
 * where the device has it and the result needs neither history
 * (create_graph with g or y requiring grad) nor a tangent. true: *out is
 * the result, or NULL when it failed; false: compose instead. Inside a
 * scope. */
static bool fused_grad(gfp_op op, const char *name, gf_tensor *g, gf_tensor *y, gf_tensor **out) {
    const gf_tensor *gy[2] = {g, y};
    *out = NULL;
    if (g->dtype != y->dtype || g->storage->device != y->storage->device ||
        g->rank != y->rank || memcmp(g->sizes, y->sizes, sizeof(int64_t) * (size_t)y->rank) ||
        gf_dtype_is_complex(g->dtype) ||
        (gf_is_grad_enabled() && (gf_tensor_requires_grad(g) || gf_tensor_requires_grad(y))) ||
        gf__fw_any_tangent(gy, 2))
        return false;
    gf_tensor *o = gf__empty(y->sizes, y->rank, y->dtype, y->storage->device);
    if (!o) return true;
    gf_tensor *outs[1] = {o};
    if (gf__dev_has_op(op, gy, 2, outs, 1)) {
        gf_status s = gf__launch_own(op, name, gy, 2, outs, 1, NULL);
        if (s == GF_OK) {
            *out = gf__ret(o);
            return true;
        }
        if (s != GF_ERR_UNSUPPORTED) {
            gf_tensor_release(o);
            return true;
        }
    }
    gf_tensor_release(o);
    return false;
}

/* relu's gradient, PyTorch's threshold_backward: 0 where y <= 0 (so at 0),
 * g elsewhere, also at NaN. One RELU_BACKWARD launch where fused_grad may;
 * else the composed where (three launches and a bool temporary). Inside a
 * scope. */
static gf_tensor *relu_grad(gf_tensor *g, gf_tensor *y) {
    gf_tensor *k;
    if (fused_grad(GFP_OP_RELU_BACKWARD, "relu_backward", g, y, &k)) return k;
    return gf_where(gf_le_scalar(y, 0.0), zero_of(g), g);
}

/* g * f'(x), from whichever of x and y the op saved. Inside a scope. */
static gf_tensor *unary_formula(const unary_ctx *c, const char *name, gf_tensor *g, gf_tensor *x,
                                gf_tensor *y) {
    switch (c->op) {
    case GFP_OP_NEG: return gf_neg(g);
    case GFP_OP_ABS: return gf_mul(g, gf_sign(x));
    case GFP_OP_SIGN:
    case GFP_OP_FLOOR:
    case GFP_OP_CEIL:
    case GFP_OP_ROUND: return gf_zeros_like(g);
    case GFP_OP_EXP: return gf_mul(g, y);
    case GFP_OP_LOG: return gf_div(g, x);
    case GFP_OP_LOG1P: return gf_div(g, gf_add_scalar(x, 1.0));
    case GFP_OP_EXPM1: return gf_mul(g, gf_add_scalar(y, 1.0));
    case GFP_OP_SQRT: return gf_div(g, gf_mul_scalar(y, 2.0)); /* inf at 0 */
    case GFP_OP_RSQRT: return gf_mul(g, gf_mul_scalar(gf_pow_scalar(y, 3.0), -0.5));
    case GFP_OP_RECIPROCAL: return gf_mul(gf_neg(g), gf_square(y));
    case GFP_OP_SQUARE: return gf_mul(g, gf_mul_scalar(x, 2.0));
    case GFP_OP_SIN: return gf_mul(g, gf_cos(x));
    case GFP_OP_COS: return gf_mul(g, gf_neg(gf_sin(x)));
    /* PyTorch's: g (1 - x^2)^(-1/2), negated for acos (inf at +-1, NaN
     * beyond, where the forward is NaN too); g / (1 + x^2). */
    case GFP_OP_ASIN: return gf_mul(g, gf_rsqrt(gf_rsub_scalar(gf_square(x), 1.0)));
    case GFP_OP_ACOS: return gf_mul(g, gf_neg(gf_rsqrt(gf_rsub_scalar(gf_square(x), 1.0))));
    case GFP_OP_ATAN: return gf_div(g, gf_add_scalar(gf_square(x), 1.0));
    case GFP_OP_TANH: return gf_mul(g, gf_rsub_scalar(gf_square(y), 1.0));
    case GFP_OP_SIGMOID: return gf_mul(g, gf_mul(y, gf_rsub_scalar(y, 1.0)));
    case GFP_OP_RELU: return relu_grad(g, y);
    case GFP_OP_LEAKY_RELU: return gf_where(gf_gt_scalar(x, 0.0), g, gf_mul_scalar(g, c->a));
    case GFP_OP_ELU:
        return gf_where(gf_le_scalar(x, 0.0), gf_mul(g, gf_mul_scalar(gf_exp(x), c->a)), g);
    case GFP_OP_GELU: return gelu_grad(g, x);
    case GFP_OP_GELU_TANH: return gelu_tanh_grad(g, x);
    case GFP_OP_SILU: return silu_grad(g, x);
    case GFP_OP_HARDSWISH: return hardswish_grad(g, x);
    case GFP_OP_SOFTPLUS: {
        /* Above the threshold the forward is the identity. */
        gf_tensor *bx = gf_mul_scalar(x, c->a);
        return gf_where(gf_gt_scalar(bx, c->b), g, gf_mul(g, gf_sigmoid(bx)));
    }
    case GFP_OP_ERF:
        return gf_mul(g, gf_mul_scalar(gf_exp(gf_neg(gf_square(x))), TWO_SQRTPI));
    case GFP_OP_CLAMP: return clamp_grad(g, x, c->a, c->b);
    case GFP_OP_POW_SCALAR: return pow_scalar_grad(g, x, c->a);
    default:
        gf__error(GF_ERR_UNSUPPORTED, "%s: backward not implemented", name);
        return NULL;
    }
}

gf_tensor *gf__ag_unary_derivative(gfp_op op, double a, double b, gf_tensor *g, gf_tensor *x,
                                   gf_tensor *y) {
    const unary_ctx c = {.op = op, .a = a, .b = b};
    return unary_formula(&c, grad_fn_name(op, "UnaryBackward"), g, x, y);
}

static gf_status unary_backward(gf_node *n, gf_tensor *const *grads, gf_tensor **out) {
    const unary_ctx *c = GF_NODE_CTX(n, unary_ctx);
    gf_tensor *x = NULL, *y = NULL;
    gf_status s = gf__ag_unpack(n, 0, &x);
    if (s == GF_OK) s = gf__ag_unpack(n, 1, &y);
    if (s != GF_OK) {
        gf_tensor_release(x);
        return s;
    }
    gf_scope_begin();
    /* A holomorphic f with real coefficients has conj(f'(z)) = f'(conj z),
     * so PyTorch's g * conj(f'(z)) is the real formula on conj(x), conj(y)
     * (the ops below refuse complex before recording: no other op needs
     * more). */
    gf_tensor *xc = x, *yc = y;
    if (x && gf_dtype_is_complex(x->dtype)) xc = gf__ret(gf__conj_if_complex(x));
    if (y && gf_dtype_is_complex(y->dtype)) yc = gf__ret(gf__conj_if_complex(y));
    gf_tensor *r = (x && !xc) || (y && !yc) ? NULL : unary_formula(c, n->name, grads[0], xc, yc);
    r = gf_scope_keep(r);
    gf_scope_end();
    gf_tensor_release(x);
    gf_tensor_release(y);
    if (!r) return gf__status();
    out[0] = r;
    return GF_OK;
}

/* The grad_fn name of an elementwise op, as PyTorch's less its number: the
 * table's name in CamelCase with "Backward" (log1p: Log1pBackward). Both
 * gelu forms are GeluBackward and pow_scalar is PowBackward, as in PyTorch. */
static char grad_fn_names[GFP_OP_ROW_COUNT][48];
static pthread_once_t grad_fn_once = PTHREAD_ONCE_INIT;

static void grad_fn_init(void) {
    for (int i = 0; i < GFP_OP_ROW_COUNT; i++) {
        const char *s = gfp_op_table[i].name;
        if (gfp_op_table[i].op == GFP_OP_GELU_TANH) s = "gelu";
        if (gfp_op_table[i].op == GFP_OP_POW_SCALAR) s = "pow";
        char *d = grad_fn_names[i];
        size_t n = 0, cap = sizeof grad_fn_names[i] - sizeof "Backward";
        for (bool up = true; *s && n < cap; s++) {
            if (*s == '_') {
                up = true;
                continue;
            }
            d[n++] = up ? (char)toupper((unsigned char)*s) : *s;
            up = false;
        }
        memcpy(d + n, "Backward", sizeof "Backward");
    }
}

static const char *grad_fn_name(gfp_op op, const char *otherwise) {
    const gfp_op_info *info = gfp_op_lookup(op);
    if (!info) return otherwise;
    pthread_once(&grad_fn_once, grad_fn_init);
    return grad_fn_names[info - gfp_op_table];
}

/* Which of x (input) and y (output) the formula of op reads. Ops that can
 * use the output do, so their in-place forms (relu_, exp_...) stay valid. */
static void unary_needs(gfp_op op, bool *need_x, bool *need_y) {
    *need_x = *need_y = false;
    switch (op) {
    case GFP_OP_NEG:
    case GFP_OP_SIGN:
    case GFP_OP_FLOOR:
    case GFP_OP_CEIL:
    case GFP_OP_ROUND: break;
    case GFP_OP_EXP:
    case GFP_OP_EXPM1:
    case GFP_OP_SQRT:
    case GFP_OP_RSQRT:
    case GFP_OP_RECIPROCAL:
    case GFP_OP_TANH:
    case GFP_OP_SIGMOID:
    case GFP_OP_RELU: *need_y = true; break;
    default: *need_x = true; break;
    }
}

gf_status gf__ag_record_unary(gfp_op op, const gf_tensor *x, gf_tensor *y, double a, double b) {
    if (gf__fw_unary(op, x, y, a, b) != GF_OK) return gf__status();
    const gf_tensor *ins[1] = {x};
    gf_tensor *outs[1] = {y};
    gf_node *n = gf__ag_record(grad_fn_name(op, "UnaryBackward"), unary_backward, ins, 1, outs, 1);
    if (!n) return GF_OK;
    unary_ctx *c = GF_NODE_CTX(n, unary_ctx);
    c->op = op;
    c->a = a;
    c->b = b;
    bool need_x, need_y;
    unary_needs(op, &need_x, &need_y);
    gf_status s = GF_OK;
    if (need_x) s = gf__ag_save(n, 0, x, false);
    if (need_y && s == GF_OK) s = gf__ag_save(n, 1, y, true);
    return s;
}

/* ------------------------------------------------------------ binary */
typedef struct binary_ctx {
    gfp_op op;
    gf_dtype a_dtype, b_dtype;
    int a_rank, b_rank;
    int64_t a_sizes[GF_MAX_RANK], b_sizes[GF_MAX_RANK];
} binary_ctx;
GF_CTX_FITS(binary_ctx);

/* The ties of maximum/minimum get half the gradient on each side: base is
 * g with those halved; each side then loses the elements where it lost. */
static void minmax_grads(bool is_max, gf_tensor *g, gf_tensor *a, gf_tensor *b, bool need_a,
                         bool need_b, gf_tensor **ga, gf_tensor **gb) {
    gf_tensor *base = gf_where(gf_eq(a, b), gf_mul_scalar(g, 0.5), g);
    if (need_a) *ga = gf_where(is_max ? gf_lt(a, b) : gf_gt(a, b), zero_of(g), base);
    if (need_b) *gb = gf_where(is_max ? gf_gt(a, b) : gf_lt(a, b), zero_of(g), base);
}

/* PyTorch's pow_backward_self / pow_backward_exponent:
 * d/da = b a^(b-1) (0 where b == 0), d/db = y log(a) (0 where a == 0 and b >= 0). */
static void pow_grads(gf_tensor *g, gf_tensor *a, gf_tensor *b, gf_tensor *y, bool need_a,
                      bool need_b, gf_tensor **ga, gf_tensor **gb) {
    if (need_a) {
        gf_tensor *d = gf_mul(b, gf_pow(a, gf_sub_scalar(b, 1.0)));
        *ga = gf_where(gf_eq_scalar(b, 0.0), zero_of(g), gf_mul(g, d));
    }
    if (need_b) {
        gf_tensor *at_zero = gf_logical_and(gf_eq_scalar(a, 0.0), gf_ge_scalar(b, 0.0));
        *gb = gf_mul(g, gf_where(at_zero, zero_of(g), gf_mul(y, gf_log(a))));
    }
}

/* pow_grads for complex (a, b, y already conjugated): PyTorch's rules with
 * the conditions on b's real part (0 where b == 0; for the exponent, 0
 * where a == 0 and re(b) >= 0). */
static void complex_pow_grads(gf_tensor *g, gf_tensor *a, gf_tensor *b, gf_tensor *y, bool need_a,
                              bool need_b, gf_tensor **ga, gf_tensor **gb) {
    if (need_a) {
        gf_tensor *d = gf_mul(b, gf_pow(a, gf_sub_scalar(b, 1.0)));
        *ga = gf_where(gf_eq_scalar(b, 0.0), zero_of(g), gf_mul(g, d));
    }
    if (need_b) {
        gf_tensor *at_zero = gf_logical_and(gf_eq_scalar(a, 0.0), gf_ge_scalar(gf_real(b), 0.0));
        *gb = gf_mul(g, gf_where(at_zero, zero_of(g), gf_mul(y, gf_log(a))));
    }
}

/* Unreduced gradients of a and b (of the broadcast shape, or g itself);
 * inside a scope. */
static void binary_formula(const binary_ctx *c, const char *name, gf_tensor *g, gf_tensor *a,
                           gf_tensor *b, gf_tensor *y, bool need_a, bool need_b, gf_tensor **ga,
                           gf_tensor **gb) {
    switch (c->op) {
    case GFP_OP_ADD:
        *ga = g;
        *gb = g;
        break;
    case GFP_OP_SUB:
        *ga = g;
        if (need_b) *gb = gf_neg(g);
        break;
    case GFP_OP_MUL:
        if (need_a) *ga = gf_mul(g, b);
        if (need_b) *gb = gf_mul(g, a);
        break;
    case GFP_OP_DIV:
        if (need_a) *ga = gf_div(g, b);
        if (need_b) *gb = gf_mul(gf_neg(g), gf_div(gf_div(a, b), b));
        break;
    case GFP_OP_POW: pow_grads(g, a, b, y, need_a, need_b, ga, gb); break;
    case GFP_OP_MAXIMUM: minmax_grads(true, g, a, b, need_a, need_b, ga, gb); break;
    case GFP_OP_MINIMUM: minmax_grads(false, g, a, b, need_a, need_b, ga, gb); break;
    case GFP_OP_ATAN2: {
        /* PyTorch's atan2_backward: r = 1 / (a^2 + b^2); g b r, -g a r,
         * and 0 for both at the origin, as PyTorch 2.x (not 0 * inf). The
         * denominator there is replaced by 1 so that no branch holds inf. */
        gf_tensor *d = gf_add(gf_square(a), gf_square(b));
        gf_tensor *origin = gf_eq_scalar(d, 0.0);
        gf_tensor *r = gf_reciprocal(
            gf_where(origin, gf_scalar(1.0, gf_tensor_dtype(d), gf_tensor_device(d)), d));
        if (need_a) *ga = keep_where(gf_logical_not(origin), gf_mul(gf_mul(g, b), r));
        if (need_b) *gb = keep_where(gf_logical_not(origin), gf_mul(gf_mul(gf_neg(g), a), r));
        break;
    }
    default: gf__error(GF_ERR_UNSUPPORTED, "%s: backward not implemented", name); break;
    }
}

void gf__ag_binary_derivative(gfp_op op, gf_tensor *g, gf_tensor *a, gf_tensor *b, gf_tensor *y,
                              bool need_a, bool need_b, gf_tensor **ga, gf_tensor **gb) {
    if (gf_dtype_is_complex(g->dtype) && op == GFP_OP_POW) {
        complex_pow_grads(g, a, b, y, need_a, need_b, ga, gb);
        return;
    }
    binary_ctx c;
    memset(&c, 0, sizeof c);
    c.op = op;
    binary_formula(&c, grad_fn_name(op, "BinaryBackward"), g, a, b, y, need_a, need_b, ga, gb);
}

/* Gradients of a and b, each summed back to its own (pre-broadcast) shape. */
static gf_status binary_backward(gf_node *n, gf_tensor *const *grads, gf_tensor **out) {
    const binary_ctx *c = GF_NODE_CTX(n, binary_ctx);
    gf_tensor *a = NULL, *b = NULL, *y = NULL;
    gf_status s = gf__ag_unpack(n, 0, &a);
    if (s == GF_OK) s = gf__ag_unpack(n, 1, &b);
    if (s == GF_OK) s = gf__ag_unpack(n, 2, &y);
    if (s != GF_OK) {
        gf_tensor_release(a);
        gf_tensor_release(b);
        return s;
    }
    bool need_a = n->next[0].node != NULL, need_b = n->next[1].node != NULL;
    gf_tensor *ga = NULL, *gb = NULL;
    gf_scope_begin();
    /* Complex: mul, div and pow are holomorphic in each argument, so
     * g * conj(dy/da) is the real formula on the conjugates. */
    bool cx = gf_dtype_is_complex(grads[0]->dtype);
    gf_tensor *ac = cx && a ? gf__ret(gf__conj_if_complex(a)) : a;
    gf_tensor *bc = cx && b ? gf__ret(gf__conj_if_complex(b)) : b;
    gf_tensor *yc = cx && y ? gf__ret(gf__conj_if_complex(y)) : y;
    if ((a && !ac) || (b && !bc) || (y && !yc)) {
        /* a conjugate failed: ga, gb stay NULL and the error is reported below */
    } else if (cx && c->op == GFP_OP_POW) {
        complex_pow_grads(grads[0], ac, bc, yc, need_a, need_b, &ga, &gb);
    } else {
        binary_formula(c, n->name, grads[0], ac, bc, yc, need_a, need_b, &ga, &gb);
    }
    gf_tensor *ra = (need_a && ga) ? to_input(ga, c->a_sizes, c->a_rank, c->a_dtype) : NULL;
    gf_tensor *rb = (need_b && gb) ? to_input(gb, c->b_sizes, c->b_rank, c->b_dtype) : NULL;
    gf_scope_end();
    gf_tensor_release(a);
    gf_tensor_release(b);
    gf_tensor_release(y);
    if ((need_a && !ra) || (need_b && !rb)) {
        gf_tensor_release(ra);
        gf_tensor_release(rb);
        return gf__status();
    }
    out[0] = ra;
    out[1] = rb;
    return GF_OK;
}

gf_status gf__ag_record_binary(gfp_op op, const gf_tensor *a, const gf_tensor *b, gf_tensor *y) {
    if (gf__fw_binary(op, a, b, y) != GF_OK) return gf__status();
    const gf_tensor *ins[2] = {a, b};
    gf_tensor *outs[1] = {y};
    gf_node *n = gf__ag_record(grad_fn_name(op, "BinaryBackward"), binary_backward, ins, 2, outs, 1);
    if (!n) return GF_OK;
    binary_ctx *c = GF_NODE_CTX(n, binary_ctx);
    c->op = op;
    c->a_dtype = a->dtype;
    c->b_dtype = b->dtype;
    c->a_rank = a->rank;
    c->b_rank = b->rank;
    memcpy(c->a_sizes, a->sizes, sizeof c->a_sizes);
    memcpy(c->b_sizes, b->sizes, sizeof c->b_sizes);
    bool need_a = n->next[0].node != NULL, need_b = n->next[1].node != NULL;
    /* Slots: 0 = a, 1 = b, 2 = y; each saved only when a wanted gradient reads it. */
    bool save_a = false, save_b = false, save_y = false;
    switch (op) {
    case GFP_OP_MUL:
        save_a = need_b;
        save_b = need_a;
        break;
    case GFP_OP_DIV:
        save_a = need_b;
        save_b = true;
        break;
    case GFP_OP_POW:
        save_a = save_b = true;
        save_y = need_b;
        break;
    case GFP_OP_MAXIMUM:
    case GFP_OP_MINIMUM:
    case GFP_OP_ATAN2: save_a = save_b = true; break;
    default: break;
    }
    gf_status s = GF_OK;
    if (save_a) s = gf__ag_save(n, 0, a, false);
    if (save_b && s == GF_OK) s = gf__ag_save(n, 1, b, false);
    if (save_y && s == GF_OK) s = gf__ag_save(n, 2, y, true);
    return s;
}

/* ------------------------------------------------------------ selection */
typedef struct where_ctx {
    gf_dtype a_dtype, b_dtype;
    int a_rank, b_rank;
    int64_t a_sizes[GF_MAX_RANK], b_sizes[GF_MAX_RANK];
} where_ctx;
GF_CTX_FITS(where_ctx);

/* Edges: cond (bool, no gradient), a, b. Saved: cond. */
static gf_status where_backward(gf_node *n, gf_tensor *const *grads, gf_tensor **out) {
    const where_ctx *c = GF_NODE_CTX(n, where_ctx);
    gf_tensor *cond = NULL;
    gf_status s = gf__ag_unpack(n, 0, &cond);
    if (s != GF_OK) return s;
    bool need_a = n->next[1].node != NULL, need_b = n->next[2].node != NULL;
    gf_tensor *g = grads[0], *ra = NULL, *rb = NULL;
    gf_scope_begin();
    if (need_a) {
        gf_tensor *ga = gf_where(cond, g, zero_of(g));
        ra = ga ? to_input(ga, c->a_sizes, c->a_rank, c->a_dtype) : NULL;
    }
    if (need_b) {
        gf_tensor *gb = gf_where(cond, zero_of(g), g);
        rb = gb ? to_input(gb, c->b_sizes, c->b_rank, c->b_dtype) : NULL;
    }
    gf_scope_end();
    gf_tensor_release(cond);
    if ((need_a && !ra) || (need_b && !rb)) {
        gf_tensor_release(ra);
        gf_tensor_release(rb);
        return gf__status();
    }
    out[1] = ra;
    out[2] = rb;
    return GF_OK;
}

gf_status gf__ag_record_where(const gf_tensor *cond, const gf_tensor *a, const gf_tensor *b,
                              gf_tensor *y) {
    if (gf__fw_where(cond, a, b, y) != GF_OK) return gf__status();
    const gf_tensor *ins[3] = {cond, a, b};
    gf_tensor *outs[1] = {y};
    gf_node *n = gf__ag_record("WhereBackward", where_backward, ins, 3, outs, 1);
    if (!n) return GF_OK;
    where_ctx *c = GF_NODE_CTX(n, where_ctx);
    c->a_dtype = a->dtype;
    c->b_dtype = b->dtype;
    c->a_rank = a->rank;
    c->b_rank = b->rank;
    memcpy(c->a_sizes, a->sizes, sizeof c->a_sizes);
    memcpy(c->b_sizes, b->sizes, sizeof c->b_sizes);
    return gf__ag_save(n, 0, cond, false);
}

/* Edges: x, mask (bool, no gradient). The mask broadcasts to x's shape, so
 * the gradient needs no reduction. Saved: mask. */
static gf_status masked_fill_backward(gf_node *n, gf_tensor *const *grads, gf_tensor **out) {
    gf_tensor *mask = NULL;
    gf_status s = gf__ag_unpack(n, 0, &mask);
    if (s != GF_OK) return s;
    gf_tensor *g = grads[0];
    gf_scope_begin();
    gf_tensor *r = gf_scope_keep(gf_where(mask, zero_of(g), g));
    gf_scope_end();
    gf_tensor_release(mask);
    if (!r) return gf__status();
    out[0] = r;
    return GF_OK;
}

gf_status gf__ag_record_masked_fill(const gf_tensor *x, const gf_tensor *mask, gf_tensor *y) {
    if (gf__fw_masked_fill(x, mask, y) != GF_OK) return gf__status();
    const gf_tensor *ins[2] = {x, mask};
    gf_tensor *outs[1] = {y};
    gf_node *n = gf__ag_record("MaskedFillBackward", masked_fill_backward, ins, 2, outs, 1);
    if (!n) return GF_OK;
    return gf__ag_save(n, 0, mask, false);
}
