/* SPDX-License-Identifier: BSD-3-Clause */
/* test_grad_small_ops.c — gradients of the small ops of core/src/ops_more.c:
 * gf_gradcheck and gf_gradgradcheck in f64 for every differentiable one
 * (pixel_shuffle / unshuffle, flatten_dims, unflatten, add / sub with alpha
 * and their in-place forms, dot, vdot, outer, the in-place activations), and
 * the in-place activations' autograd rules: a leaf that requires grad (or a
 * view of one) is refused before anything is written, a view of a non-leaf
 * is rebased (its gradient equal to the out-of-place form's), and a saved
 * tensor modified in place makes backward fail. Leaves are made on the
 * default device, so the suite also runs on every other device here. */
#include <graft.h>
#include <math.h>
#include <stdint.h>

#include "test_rules_util.h"

typedef enum which {
    PSHUF, PUNSHUF, FLAT, UNFLAT, ADD_ALPHA, SUB_ALPHA, DOT, VDOT, OUTER, ADD_ALPHA_, SUB_ALPHA_,
    LEAKY_, LEAKY_NEG_, ELU_, CELU_, SELU_, HARDTANH_, RELU6_, SILU_, GELU_, GELU_TANH_,
    HARDSIGMOID_, HARDSWISH_, MISH_, N_WHICH
} which;

static const char *NAMES[N_WHICH] = {
    "pixel_shuffle", "pixel_unshuffle", "flatten_dims", "unflatten", "add_alpha", "sub_alpha",
    "dot", "vdot", "outer", "add_alpha_", "sub_alpha_", "leaky_relu_", "leaky_relu_(-0.3)",
    "elu_", "celu_", "selu_", "hardtanh_", "relu6_", "silu_", "gelu_", "gelu_(tanh)",
    "hardsigmoid_", "hardswish_", "mish_"};

static gf_status act_(which op, gf_tensor *t) {
    switch (op) {
    case LEAKY_: return gf_leaky_relu_(t, 0.2);
    case LEAKY_NEG_: return gf_leaky_relu_(t, -0.3);
    case ELU_: return gf_elu_(t, 1.3);
    case CELU_: return gf_celu_(t, 0.7);
    case SELU_: return gf_selu_(t);
    case HARDTANH_: return gf_hardtanh_(t, -0.5, 0.8);
    case RELU6_: return gf_relu6_(t);
    case SILU_: return gf_silu_(t);
    case GELU_: return gf_gelu_(t, false);
    case GELU_TANH_: return gf_gelu_(t, true);
    case HARDSIGMOID_: return gf_hardsigmoid_(t);
    case HARDSWISH_: return gf_hardswish_(t);
    default: return gf_mish_(t);
    }
}

static which g_op;

static gf_tensor *run(gf_tensor *const *in, int n, void *user) {
    (void)user;
    gf_tensor *x = in[0], *b = n > 1 ? in[1] : NULL, *y = NULL, *t = NULL;
    switch (g_op) {
    case PSHUF: /* x [2, 8, 1, 2] as [1, 2, 8, 1, 2]... with one more batch dim */
        t = gf_unsqueeze(x, 0);
        y = gf_pixel_shuffle(t, 2);
        break;
    case PUNSHUF: y = gf_pixel_unshuffle(x, 2); break; /* x [1, 2, 2, 4] */
    case FLAT:
        t = gf_transpose(x, 0, 2); /* a copy is needed */
        y = gf_flatten_dims(t, 1, 2);
        break;
    case UNFLAT: y = gf_unflatten(x, 1, SZ(2, -1), 2); break;
    case ADD_ALPHA: y = gf_add_alpha(x, b, -1.75); break;
    case SUB_ALPHA: y = gf_sub_alpha(x, b, 2.5); break;
    case DOT: y = gf_dot(x, b); break;
    case VDOT: y = gf_vdot(x, b); break;
    case OUTER: y = gf_outer(x, b); break;
    case ADD_ALPHA_:
    case SUB_ALPHA_:
        y = gf_mul_scalar(x, 1.0);
        if ((g_op == ADD_ALPHA_ ? gf_add_alpha_(y, b, -1.75) : gf_sub_alpha_(y, b, 2.5)) != GF_OK) {
            gf_tensor_release(y);
            y = NULL;
        }
        break;
    default:
        /* through a view: y = x * 1, act_ on its first row */
        y = gf_mul_scalar(x, 1.0);
        t = y ? gf_select(y, 0, 0) : NULL;
        if (!t || act_(g_op, t) != GF_OK || act_(g_op, y) != GF_OK) {
            gf_tensor_release(y);
            y = NULL;
        }
        break;
    }
    gf_tensor_release(t);
    return y;
}

static void check_case(which op, const double *xv, const int64_t *xs, int xr, const double *bv,
                       const int64_t *bs, int br) {
    g_op = op;
    gf_tensor *x = ag_leaf_t(xv, xs, xr);
    gf_tensor *b = bv ? ag_leaf_t(bv, bs, br) : NULL;
    gf_tensor *in[2] = {x, b};
    int n = b ? 2 : 1;
    gf_status s = gf_gradcheck(run, in, n, NULL, NULL);
    CHECK_MSG(s == GF_OK, "%s gradcheck: %s", NAMES[op], gf_last_error());
    gf_status s2 = gf_gradgradcheck(run, in, n, NULL, NULL);
    CHECK_MSG(s2 == GF_OK, "%s gradgradcheck: %s", NAMES[op], gf_last_error());
    fprintf(stderr, "  %s %s\n", s == GF_OK && s2 == GF_OK ? "ok  " : "FAIL", NAMES[op]);
    gf_tensor_release(x);
    gf_tensor_release(b);
}

static void test_gradchecks(void) {
    double v32[32];
    for (int i = 0; i < 32; i++) v32[i] = sin(1.3 * i + 0.2) * 2;
    check_case(PSHUF, v32, SZ(2, 8, 1, 2), 4, NULL, NULL, 0);
    check_case(PUNSHUF, v32, SZ(1, 2, 2, 4), 4, NULL, NULL, 0);
    check_case(FLAT, v32, SZ(2, 2, 3), 3, NULL, NULL, 0);
    check_case(UNFLAT, v32, SZ(3, 4), 2, NULL, NULL, 0);
    check_case(ADD_ALPHA, v32, SZ(2, 3), 2, v32 + 10, SZ(3), 1);
    check_case(SUB_ALPHA, v32, SZ(3), 1, v32 + 10, SZ(2, 3), 2);
    check_case(DOT, v32, SZ(4), 1, v32 + 10, SZ(4), 1);
    check_case(VDOT, v32, SZ(4), 1, v32 + 10, SZ(4), 1);
    check_case(OUTER, v32, SZ(4), 1, v32 + 10, SZ(3), 1);
    check_case(ADD_ALPHA_, v32, SZ(2, 3), 2, v32 + 10, SZ(3), 1);
    check_case(SUB_ALPHA_, v32, SZ(2, 3), 2, v32 + 10, SZ(2, 3), 2);
    /* the activations away from their kinks (0; hardtanh's -0.5, 0.8; relu6's
     * 0 and 6; hardsigmoid's and hardswish's +-3), applied twice in place */
    static const double xa[8] = {-3.7, -1.2, -0.45, -0.1, 0.3, 0.65, 1.9, 7.1};
    for (which op = LEAKY_; op < N_WHICH; op++) check_case(op, xa, SZ(2, 4), 2, NULL, NULL, 0);
}

/* The autograd rules of the in-place activations. */
static void test_inplace_rules(void) {
    for (which op = LEAKY_; op < N_WHICH; op++) {
        /* a leaf that requires grad: refused, nothing written */
        gf_tensor *leaf = ag_leaf(DV(-1, 2), 2);
        gf_status s = act_(op, leaf);
        CHECK_MSG(s == GF_ERR_AUTOGRAD, "%s on a leaf: status %d", NAMES[op], (int)s);
        CHECK_CONTAINS(gf_last_error(), "leaf tensor that requires grad");
        CHECK_CONTAINS(gf_last_error(), "gf_");
        double got[2];
        ag_read(leaf, got, 2);
        CHECK(got[0] == -1 && got[1] == 2);
        /* a view of it: refused too */
        gf_tensor *v = gf_select(leaf, 0, 1);
        s = act_(op, v);
        CHECK(s == GF_ERR_AUTOGRAD);
        CHECK_CONTAINS(gf_last_error(), "view of a leaf tensor");
        gf_tensor_release(v);
        /* under no-grad it is allowed (as an optimiser's update) */
        gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
        CHECK(act_(op, leaf) == GF_OK);
        gf_grad_mode_set(prev);
        gf_tensor_release(leaf);

        /* a saved tensor modified in place: backward fails naming the versions */
        gf_tensor *x = ag_leaf(DV(-1.5, 0.4, 2.5), 3);
        gf_tensor *a = gf_mul_scalar(x, 1.0);
        gf_tensor *p = gf_mul(a, a); /* saves a */
        CHECK(act_(op, a) == GF_OK);
        gf_tensor *l = gf_sum(p, NULL, 0, false);
        s = gf_backward(l, NULL, NULL);
        CHECK_MSG(s == GF_ERR_AUTOGRAD, "%s: backward after modifying a saved tensor: %d",
                  NAMES[op], (int)s);
        CHECK_CONTAINS(gf_last_error(), "modified by an in-place operation");
        gf_tensor_release(l), gf_tensor_release(p), gf_tensor_release(a), gf_tensor_release(x);

        /* a view of a non-leaf: the base's gradient equals the out-of-place form's */
        static const double xv[6] = {-2.2, -0.7, 0.35, 1.1, 2.4, -0.05};
        gf_tensor *x1 = ag_leaf_t(xv, SZ(2, 3), 2), *x2 = ag_leaf_t(xv, SZ(2, 3), 2);
        gf_tensor *b1 = gf_mul_scalar(x1, 1.0);
        gf_tensor *col = gf_select(b1, 1, 2); /* a strided view */
        CHECK(act_(op, col) == GF_OK);
        gf_tensor *w = ag_t(DV(0.5, -1, 2, 1.5, 0.25, -0.75), SZ(2, 3), 2);
        gf_tensor *prod1 = gf_mul(b1, w);
        gf_tensor *l1 = gf_sum(prod1, NULL, 0, false);
        /* the same computed out of place: act(column 2) joined back */
        gf_tensor *c2 = gf_select(x2, 1, 2), *c2c = gf_clone(c2);
        CHECK(act_(op, c2c) == GF_OK);
        gf_tensor *x2m = gf_mul_scalar(x2, 1.0);
        gf_tensor *mask = gf_from_data((const uint8_t[]){0, 0, 1, 0, 0, 1}, SZ(2, 3), 2, GF_BOOL,
                                       NULL);
        gf_tensor *c2u = gf_unsqueeze(c2c, 1);
        gf_tensor *joined = gf_where(mask, c2u, x2m);
        gf_tensor *prod2 = gf_mul(joined, w);
        gf_tensor *l2 = gf_sum(prod2, NULL, 0, false);
        CHECK(gf_backward(l1, NULL, NULL) == GF_OK);
        CHECK(gf_backward(l2, NULL, NULL) == GF_OK);
        double g1[6], g2[6], v1[6], v2[6];
        gf_tensor *gr1 = gf_tensor_grad(x1), *gr2 = gf_tensor_grad(x2);
        CHECK(ag_read(gr1, g1, 6) == 6 && ag_read(gr2, g2, 6) == 6);
        CHECK(ag_read(b1, v1, 6) == 6 && ag_read(joined, v2, 6) == 6);
        for (int i = 0; i < 6; i++) {
            CHECK_MSG(fabs(g1[i] - g2[i]) <= 1e-14, "%s view grad %d: %g vs %g", NAMES[op], i,
                      g1[i], g2[i]);
            CHECK(fabs(v1[i] - v2[i]) <= 1e-14);
        }
        gf_tensor_release(gr1), gf_tensor_release(gr2), gf_tensor_release(l1), gf_tensor_release(prod1);
        gf_tensor_release(l2), gf_tensor_release(prod2), gf_tensor_release(joined);
        gf_tensor_release(c2u), gf_tensor_release(mask), gf_tensor_release(x2m);
        gf_tensor_release(c2c), gf_tensor_release(c2), gf_tensor_release(w);
        gf_tensor_release(col), gf_tensor_release(b1), gf_tensor_release(x1), gf_tensor_release(x2);
    }
    /* add_alpha_ on a leaf that requires grad */
    gf_tensor *leaf = ag_leaf(DV(1, 2), 2), *o = ag_vec(DV(1, 1), 2);
    CHECK(gf_add_alpha_(leaf, o, 2) == GF_ERR_AUTOGRAD);
    CHECK_CONTAINS(gf_last_error(), "gf_add_alpha_");
    CHECK(gf_sub_alpha_(leaf, o, 2) == GF_ERR_AUTOGRAD);
    gf_tensor_release(leaf), gf_tensor_release(o);
}

int main(void) {
    int dc = ag_device_check();
    if (dc) return dc;
    RUN(test_gradchecks);
    RUN(test_inplace_rules);
    return ag_finish();
}
