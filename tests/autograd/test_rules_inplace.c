/* SPDX-License-Identifier: BSD-3-Clause */
/* test_rules_inplace.c — rules 11–15: version counters, the check of saved
 * tensors, in-place on leaves, rebasing views of non-leaves (CopySlices),
 * and the views that may not be written in place. */
#include "test_rules_util.h"

/* Every public in-place op, called with an `other` of self's shape [3]. */
typedef struct inplace_op {
    const char *name;
    gf_status (*fn)(gf_tensor *self, const gf_tensor *other);
} inplace_op;

static gf_tensor *g_mask, *g_index, *g_src1;
static gf_status ip_add(gf_tensor *s, const gf_tensor *o) { return gf_add_(s, o); }
static gf_status ip_sub(gf_tensor *s, const gf_tensor *o) { return gf_sub_(s, o); }
static gf_status ip_mul(gf_tensor *s, const gf_tensor *o) { return gf_mul_(s, o); }
static gf_status ip_div(gf_tensor *s, const gf_tensor *o) { return gf_div_(s, o); }
static gf_status ip_add_scalar(gf_tensor *s, const gf_tensor *o) { return gf_add_scalar_(s, 1.5); }
static gf_status ip_mul_scalar(gf_tensor *s, const gf_tensor *o) { return gf_mul_scalar_(s, 3.0); }
static gf_status ip_clamp(gf_tensor *s, const gf_tensor *o) { return gf_clamp_(s, 1.5, 2.5); }
static gf_status ip_relu(gf_tensor *s, const gf_tensor *o) { return gf_relu_(s); }
static gf_status ip_sigmoid(gf_tensor *s, const gf_tensor *o) { return gf_sigmoid_(s); }
static gf_status ip_tanh(gf_tensor *s, const gf_tensor *o) { return gf_tanh_(s); }
static gf_status ip_exp(gf_tensor *s, const gf_tensor *o) { return gf_exp_(s); }
static gf_status ip_fill(gf_tensor *s, const gf_tensor *o) { return gf_fill_(s, 7.0); }
static gf_status ip_zero(gf_tensor *s, const gf_tensor *o) { return gf_zero_(s); }
static gf_status ip_copy(gf_tensor *s, const gf_tensor *o) { return gf_copy_(s, o); }
static gf_status ip_masked_fill(gf_tensor *s, const gf_tensor *o) {
    return gf_masked_fill_(s, g_mask, 9.0);
}
static gf_status ip_index_add(gf_tensor *s, const gf_tensor *o) {
    return gf_index_add_(s, 0, g_index, g_src1);
}
static gf_status ip_scatter_add(gf_tensor *s, const gf_tensor *o) {
    return gf_scatter_add_(s, 0, g_index, g_src1);
}

static const inplace_op g_ops[] = {
    {"gf_add_", ip_add},           {"gf_sub_", ip_sub},
    {"gf_mul_", ip_mul},           {"gf_div_", ip_div},
    {"gf_add_scalar_", ip_add_scalar}, {"gf_mul_scalar_", ip_mul_scalar},
    {"gf_clamp_", ip_clamp},       {"gf_relu_", ip_relu},
    {"gf_sigmoid_", ip_sigmoid},   {"gf_tanh_", ip_tanh},
    {"gf_exp_", ip_exp},           {"gf_fill_", ip_fill},
    {"gf_zero_", ip_zero},         {"gf_copy_", ip_copy},
    {"gf_masked_fill_", ip_masked_fill}, {"gf_index_add_", ip_index_add},
    {"gf_scatter_add_", ip_scatter_add},
};

static void make_op_args(void) {
    g_mask = gf_from_data((const uint8_t[]){0, 1, 0}, SZ(3), 1, GF_BOOL, NULL);
    g_index = gf_from_data((const int64_t[]){1}, SZ(1), 1, GF_I64, NULL);
    g_src1 = ag_vec(DV(10), 1);
}
static void free_op_args(void) {
    gf_tensor_release(g_src1);
    gf_tensor_release(g_index);
    gf_tensor_release(g_mask);
}

/* ------------------------------------------------------------ rule 11 */
static void rule11_version_counter_shared_by_views_and_bumped(void) {
    gf_tensor *t = gf_zeros(SZ(4), 1, GF_F64, NULL);
    gf_tensor *v = gf_slice(t, 0, 1, 3, 1);
    gf_tensor *w = gf_view(t, SZ(2, 2), 2);
    gf_tensor *tr = gf_transpose(w, 0, 1);
    gf_tensor *d = gf_detach(t);
    uint64_t v0 = gf_tensor_version(t);
    CHECK(gf_tensor_version(v) == v0 && gf_tensor_version(tr) == v0 && gf_tensor_version(d) == v0);

    CHECK_OK(gf_add_scalar_(v, 1.0)); /* through a view */
    uint64_t v1 = gf_tensor_version(t);
    CHECK(v1 > v0);
    CHECK(gf_tensor_version(v) == v1 && gf_tensor_version(w) == v1 && gf_tensor_version(tr) == v1 &&
          gf_tensor_version(d) == v1);
    CHECK_VALS(t, DV(0, 1, 1, 0), 4, 0);

    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD); /* also under no-grad */
    CHECK_OK(gf_mul_scalar_(tr, 2.0));
    gf_grad_mode_set(prev);
    uint64_t v2 = gf_tensor_version(t);
    CHECK(v2 > v1 && gf_tensor_version(v) == v2 && gf_tensor_version(d) == v2);
    CHECK_VALS(t, DV(0, 2, 2, 0), 4, 0);

    CHECK_OK(gf_tensor_from_host(d, DV(1, 2, 3, 4), 4 * sizeof(double))); /* a write too */
    uint64_t v3 = gf_tensor_version(t);
    CHECK(v3 > v2 && gf_tensor_version(v) == v3);

    /* Reading and out-of-place ops do not bump. */
    gf_tensor *s = gf_add(t, t);
    double buf[4];
    ag_read(t, buf, 4);
    CHECK(gf_tensor_version(t) == v3);
    /* A copy has a counter of its own. */
    gf_tensor *c = gf_clone(t);
    uint64_t cv = gf_tensor_version(c);
    CHECK_OK(gf_add_scalar_(c, 1.0));
    CHECK(gf_tensor_version(t) == v3 && gf_tensor_version(c) > cv);
    gf_tensor_release(c);
    gf_tensor_release(s);
    gf_tensor_release(d);
    gf_tensor_release(tr);
    gf_tensor_release(w);
    gf_tensor_release(v);
    gf_tensor_release(t);
}

static void rule11_every_inplace_op_bumps(void) {
    make_op_args();
    gf_tensor *o = ag_vec(DV(2, 2, 2), 3);
    for (int i = 0; i < AG_N(g_ops); i++) {
        gf_tensor *t = ag_vec(DV(1, 2, 3), 3);
        gf_tensor *v = gf_view(t, SZ(3), 1);
        uint64_t before = gf_tensor_version(t);
        gf_status s = g_ops[i].fn(v, o);
        CHECK_MSG(s == GF_OK, "%s: %s", g_ops[i].name, gf_last_error());
        CHECK_MSG(gf_tensor_version(t) > before && gf_tensor_version(v) == gf_tensor_version(t),
                  "%s did not bump the version", g_ops[i].name);
        gf_tensor_release(v);
        gf_tensor_release(t);
    }
    gf_tensor_release(o);
    free_op_args();
}

/* ------------------------------------------------------------ rule 12 */
static void version_words(char *a, char *b, uint64_t now, uint64_t saved) {
    sprintf(a, "version %llu", (unsigned long long)now);
    sprintf(b, "version %llu", (unsigned long long)saved);
}

static void rule12_modified_saved_leaf_is_error(void) {
    gf_tensor *x = ag_leaf_t(DV(1, 2, 3, 4, 5, 6), SZ(2, 3), 2);
    gf_tensor *c = ag_t(DV(1, 1, 1, 2, 2, 2), SZ(2, 3), 2);
    gf_tensor *y = gf_mul(x, c); /* saves c for x's gradient */
    uint64_t saved = gf_tensor_version(c);
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD); /* counted under no-grad too */
    CHECK_OK(gf_mul_scalar_(c, 2.0));
    gf_grad_mode_set(prev);
    uint64_t now = gf_tensor_version(c);
    char a[64], b[64];
    version_words(a, b, now, saved);
    CHECK_ERR(ag_backward_ones(y, -1, false), GF_ERR_AUTOGRAD, "in-place", "MulBackward", "f64",
              "[2, 3]", a, b, "gf_clone");
    CHECK(gf_tensor_grad(x) == NULL);
    gf_tensor_release(y);
    /* Control: unmodified, the same graph works. */
    gf_tensor *y2 = gf_mul(x, c);
    CHECK_OK(ag_backward_ones(y2, -1, false));
    CHECK_GRAD(x, DV(2, 2, 2, 4, 4, 4), 6, 0);
    gf_tensor_release(y2);
    gf_tensor_release(c);
    gf_tensor_release(x);
}

static void rule12_modified_saved_output_names_its_node(void) {
    gf_tensor *x = ag_leaf(DV(0, 1), 2);
    gf_tensor *y = gf_exp(x); /* ExpBackward saves its output */
    uint64_t saved = gf_tensor_version(y);
    CHECK_OK(gf_add_scalar_(y, 1.0)); /* a non-leaf: allowed, history moves on */
    uint64_t now = gf_tensor_version(y);
    char a[64], b[64];
    version_words(a, b, now, saved);
    CHECK_ERR(ag_backward_ones(y, -1, false), GF_ERR_AUTOGRAD, "ExpBackward", "f64", "[2]", a, b);
    gf_tensor_release(y);
    gf_tensor_release(x);
}

static void rule12_modified_saved_nonleaf_input_names_saver_and_producer(void) {
    gf_tensor *x = ag_leaf(DV(0, 1, 2), 3);
    gf_tensor *w = ag_leaf(DV(1, 2, 3), 3);
    gf_tensor *h = gf_exp(x);    /* produced by ExpBackward */
    gf_tensor *y = gf_mul(h, w); /* MulBackward saves h for w's gradient */
    uint64_t saved = gf_tensor_version(h);
    CHECK_OK(gf_mul_scalar_(h, 3.0));
    char a[64], b[64];
    version_words(a, b, gf_tensor_version(h), saved);
    CHECK_ERR(ag_backward_ones(y, -1, false), GF_ERR_AUTOGRAD, "MulBackward", "ExpBackward",
              "f64", "[3]", a, b);
    gf_tensor_release(y);
    gf_tensor_release(h);
    gf_tensor_release(w);
    gf_tensor_release(x);
}

/* ------------------------------------------------------------ rule 13 */
static void rule13_inplace_on_leaf_requiring_grad_fails_before_writing(void) {
    make_op_args();
    gf_tensor *o = ag_vec(DV(2, 2, 2), 3);
    gf_tensor *x = ag_leaf(DV(1, 2, 3), 3);
    gf_tensor *view = gf_slice(x, 0, 0, 3, 1); /* a view of the leaf, made in grad mode */
    uint64_t v0 = gf_tensor_version(x);
    for (int i = 0; i < AG_N(g_ops); i++) {
        gf_status s = g_ops[i].fn(x, o);
        CHECK_ERR(s, GF_ERR_AUTOGRAD, g_ops[i].name, "leaf", "GF_GRAD_MODE_NO_GRAD");
        s = g_ops[i].fn(view, o);
        CHECK_ERR(s, GF_ERR_AUTOGRAD, g_ops[i].name, "view", "leaf");
    }
    CHECK_VALS(x, DV(1, 2, 3), 3, 0); /* nothing was written */
    CHECK(gf_tensor_version(x) == v0);
    CHECK(gf_tensor_is_leaf(x) && gf_tensor_requires_grad(x));
    gf_tensor_release(view);
    gf_tensor_release(x);
    gf_tensor_release(o);
    free_op_args();
}

/* A view that was itself made a leaf requiring grad (its base needs none),
 * and a view of that view: the same error as for a view of such a leaf, as
 * in PyTorch, with nothing written, no history, and nothing left behind. */
static void rule13_inplace_on_a_view_made_a_leaf_fails(void) {
    make_op_args();
    gf_tensor *o = ag_vec(DV(2, 2, 2), 3);
    uint64_t in_use = ag_bytes_in_use();
    gf_tensor *x = ag_vec(DV(1, 2, 3, 4), 4); /* requires no grad */
    gf_tensor *v = gf_slice(x, 0, 1, 4, 1);
    CHECK_OK(gf_tensor_set_requires_grad(v, true));
    gf_tensor *vv = gf_slice(v, 0, 0, 3, 1); /* has history through v */
    CHECK(gf_tensor_requires_grad(vv) && !gf_tensor_is_leaf(vv));
    uint64_t v0 = gf_tensor_version(x);
    for (int i = 0; i < AG_N(g_ops); i++) {
        CHECK_ERR(g_ops[i].fn(v, o), GF_ERR_AUTOGRAD, g_ops[i].name, "a view of a leaf", "gf_clone");
        CHECK_ERR(g_ops[i].fn(vv, o), GF_ERR_AUTOGRAD, g_ops[i].name, "a view of a leaf");
    }
    CHECK_VALS(x, DV(1, 2, 3, 4), 4, 0);
    CHECK(gf_tensor_version(x) == v0);
    CHECK(gf_tensor_is_leaf(v) && gf_tensor_requires_grad(v));
    CHECK(gf_tensor_grad_fn_name(v) == NULL);
    CHECK(gf_tensor_is_leaf(v)); /* also after asking for its grad_fn */
    CHECK(gf_tensor_is_leaf(x) && !gf_tensor_requires_grad(x));
    /* v still works as a leaf */
    gf_tensor *y = gf_mul(v, o);
    CHECK_OK(ag_backward_ones(y, -1, false));
    CHECK_GRAD(v, DV(2, 2, 2), 3, 0);
    gf_tensor_release(y);
    /* under no-grad it is allowed, and v stays a leaf */
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    CHECK_OK(gf_add_scalar_(v, 1.0));
    gf_grad_mode_set(prev);
    CHECK_VALS(x, DV(1, 3, 4, 5), 4, 0);
    CHECK(gf_tensor_is_leaf(v) && gf_tensor_grad_fn_name(v) == NULL);
    gf_tensor_release(vv);
    gf_tensor_release(v);
    gf_tensor_release(x);
    CHECK(ag_bytes_in_use() == in_use); /* no cycle kept anything alive */
    gf_tensor_release(o);
    free_op_args();
}

static void rule13_inplace_on_leaf_under_no_grad_is_allowed(void) {
    gf_tensor *x = ag_leaf(DV(1, 2, 3), 3);
    gf_tensor *g = ag_vec(DV(5, 10, 15), 3);
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    uint64_t v0 = gf_tensor_version(x);
    /* An SGD step: x -= 0.1 * g, then a write through a view. */
    gf_tensor *step = gf_mul_scalar(g, 0.1);
    CHECK_OK(gf_sub_(x, step));
    gf_tensor *v = gf_slice(x, 0, 2, 3, 1);
    CHECK_OK(gf_mul_scalar_(v, 2.0));
    gf_grad_mode_set(prev);
    CHECK(gf_tensor_version(x) > v0);
    CHECK_VALS(x, DV(0.5, 1, 3), 3, 1e-15);
    CHECK(gf_tensor_is_leaf(x) && gf_tensor_requires_grad(x) && gf_tensor_grad_fn_name(x) == NULL);
    /* The leaf still works as a leaf, with its new value. */
    gf_tensor *y = gf_mul(x, x);
    CHECK_OK(ag_backward_ones(y, -1, false));
    CHECK_GRAD(x, DV(1, 2, 6), 3, 1e-15);
    gf_tensor_release(y);
    gf_tensor_release(v);
    gf_tensor_release(step);
    gf_tensor_release(g);
    gf_tensor_release(x);
}

/* ------------------------------------------------------------ rule 14 */
static void rule14_inplace_on_view_of_nonleaf_matches_out_of_place(void) {
    /* b = 2x; b[1:3] *= w; L = sum(b * b) (as a grad_output of ones). */
    gf_tensor *x = ag_leaf(DV(1, 2, 3, 4), 4);
    gf_tensor *w = ag_leaf(DV(5, 6), 2);
    gf_tensor *b = gf_mul_scalar(x, 2.0);
    gf_tensor *v = gf_slice(b, 0, 1, 3, 1);
    CHECK_OK(gf_mul_(v, w));
    CHECK_VALS(b, DV(2, 20, 36, 8), 4, 0);
    const char *name = gf_tensor_grad_fn_name(b);
    CHECK_MSG(name && strcmp(name, "CopySlices") == 0, "base grad_fn %s", name ? name : "(none)");
    gf_tensor *l = gf_mul(b, b);
    CHECK_OK(ag_backward_ones(l, -1, false));
    /* dL/db = 2b = [4, 40, 72, 16]; db/dx = [2, 2 w0, 2 w1, 2]; db/dw = [2 x1, 2 x2]. */
    CHECK_GRAD(x, DV(8, 400, 864, 32), 4, 1e-12);
    CHECK_GRAD(w, DV(160, 432), 2, 1e-12);

    /* The out-of-place equivalent: b2 = 2 x2 * [1, w0, w1, 1]. */
    gf_tensor *x2 = ag_leaf(DV(1, 2, 3, 4), 4);
    gf_tensor *w2 = ag_leaf(DV(5, 6), 2);
    gf_tensor *e0 = ag_vec(DV(1, 0, 0, 1), 4), *e1 = ag_vec(DV(0, 1, 0, 0), 4),
              *e2 = ag_vec(DV(0, 0, 1, 0), 4);
    gf_tensor *w0 = gf_select(w2, 0, 0), *w1 = gf_select(w2, 0, 1);
    gf_tensor *t1 = gf_mul(e1, w0), *t2 = gf_mul(e2, w1);
    gf_tensor *t12 = gf_add(t1, t2);
    gf_tensor *full = gf_add(e0, t12);
    gf_tensor *bx = gf_mul_scalar(x2, 2.0);
    gf_tensor *b2 = gf_mul(bx, full);
    gf_tensor *l2 = gf_mul(b2, b2);
    CHECK_OK(ag_backward_ones(l2, -1, false));
    gf_tensor *gx = gf_tensor_grad(x), *gx2 = gf_tensor_grad(x2);
    gf_tensor *gw = gf_tensor_grad(w), *gw2 = gf_tensor_grad(w2);
    double a1[4] = {0}, a2[4] = {0};
    CHECK(ag_read(gx, a1, 4) == 4 && ag_read(gx2, a2, 4) == 4);
    for (int i = 0; i < 4; i++) CHECK_CLOSE(a1[i], a2[i], 1e-12);
    CHECK(ag_read(gw, a1, 4) == 2 && ag_read(gw2, a2, 4) == 2);
    for (int i = 0; i < 2; i++) CHECK_CLOSE(a1[i], a2[i], 1e-12);
    gf_tensor_release(gw2);
    gf_tensor_release(gw);
    gf_tensor_release(gx2);
    gf_tensor_release(gx);
    gf_tensor *all[] = {l2, b2, bx, full, t12, t2, t1, w1, w0, e2, e1, e0, w2, x2, l, v, b, w, x};
    for (int i = 0; i < AG_N(all); i++) gf_tensor_release(all[i]);
}

static void rule14_copyslices_with_ops_that_do_not_save_self(void) {
    /* b = 2x; b[1:3] *= 3; b[1:3] += w; L = sum(b * b).
     * b = [2, 17, 24, 8]; dL/db = [4, 34, 48, 16]; db/dx = [2, 6, 6, 2]. */
    gf_tensor *x = ag_leaf(DV(1, 2, 3, 4), 4);
    gf_tensor *w = ag_leaf(DV(5, 6), 2);
    gf_tensor *b = gf_mul_scalar(x, 2.0);
    gf_tensor *v = gf_slice(b, 0, 1, 3, 1);
    CHECK_OK(gf_mul_scalar_(v, 3.0));
    CHECK_OK(gf_add_(v, w));
    CHECK_VALS(b, DV(2, 17, 24, 8), 4, 0);
    gf_tensor *l = gf_mul(b, b);
    CHECK_OK(ag_backward_ones(l, -1, false));
    CHECK_GRAD(x, DV(8, 204, 288, 32), 4, 1e-12);
    CHECK_GRAD(w, DV(34, 48), 2, 1e-12);
    /* The view's history is regenerated from the base's: dv/dx on [1:3]. */
    gf_tensor_release(l);
    gf_tensor_release(v);
    gf_tensor_release(b);
    b = gf_mul_scalar(x, 2.0);
    v = gf_slice(b, 0, 1, 3, 1);
    CHECK_OK(gf_mul_scalar_(v, 3.0));
    CHECK_OK(gf_add_(v, w));
    gf_tensor *gv = ag_grad1(v, x, NULL, false);
    CHECK_VALS(gv, DV(0, 6, 6, 0), 4, 1e-12);
    gf_tensor_release(gv);
    gf_tensor_release(v);
    gf_tensor_release(b);
    gf_tensor_release(w);
    gf_tensor_release(x);
}

/* Out-of-place twins of g_ops, for comparing gradients. */
static gf_tensor *oop(int i, const gf_tensor *s, const gf_tensor *o) {
    switch (i) {
    case 0: return gf_add(s, o);
    case 1: return gf_sub(s, o);
    case 2: return gf_mul(s, o);
    case 3: return gf_div(s, o);
    case 4: return gf_add_scalar(s, 1.5);
    case 5: return gf_mul_scalar(s, 3.0);
    case 6: return gf_clamp(s, 1.5, 2.5);
    case 7: return gf_relu(s);
    case 8: return gf_sigmoid(s);
    case 9: return gf_tanh(s);
    case 10: return gf_exp(s);
    case 13: return gf_mul_scalar(o, 1.0); /* copy_: the value of o */
    case 14: return gf_masked_fill(s, g_mask, 9.0);
    case 15: return gf_index_add(s, 0, g_index, g_src1);
    case 16: return gf_scatter_add(s, 0, g_index, g_src1);
    default: return NULL;
    }
}

static void rule14_every_inplace_op_on_nonleaf_matches_out_of_place(void) {
    /* y = x * [1, 1, 1] (a non-leaf); op_(y, o); gradients of x and o
     * (both require grad) compared with op(x * 1, o), weighted by c. */
    make_op_args();
    gf_tensor *c = ag_vec(DV(1, 10, 100), 3);
    for (int i = 0; i < AG_N(g_ops); i++) {
        if (i == 11 || i == 12) continue; /* fill_ / zero_: checked below */
        double gi[2][3] = {{0}}, go[2][3] = {{0}};
        gf_status st[2];
        char msg[2][512];
        for (int inplace = 0; inplace < 2; inplace++) {
            gf_tensor *x = ag_leaf(DV(1, 2, 3), 3);
            gf_tensor *o = ag_leaf(DV(2, -1, 4), 3);
            gf_tensor *y = gf_mul_scalar(x, 1.0);
            gf_tensor *r = NULL;
            if (inplace) {
                st[1] = g_ops[i].fn(y, o);
                r = st[1] == GF_OK ? gf_tensor_retain(y) : NULL;
            } else {
                r = oop(i, y, o);
                st[0] = r ? GF_OK : gf_last_status();
            }
            if (r) st[inplace] = gf_backward(r, c, NULL);
            snprintf(msg[inplace], sizeof msg[inplace], "%s", gf_last_error());
            gf_tensor *gx = gf_tensor_grad(x), *gob = gf_tensor_grad(o);
            if (gx) ag_read(gx, gi[inplace], 3);
            if (gob) ag_read(gob, go[inplace], 3);
            gf_tensor_release(gob);
            gf_tensor_release(gx);
            gf_tensor_release(r);
            gf_tensor_release(y);
            gf_tensor_release(o);
            gf_tensor_release(x);
        }
        CHECK_MSG(st[0] == GF_OK, "%s: out-of-place twin failed: %s", g_ops[i].name, msg[0]);
        CHECK_MSG(st[1] == GF_OK, "%s on a non-leaf: %s", g_ops[i].name, msg[1]);
        if (st[0] != GF_OK || st[1] != GF_OK) continue;
        for (int k = 0; k < 3; k++) {
            CHECK_MSG(check_close_(gi[1][k], gi[0][k], 1e-12, 1e-12), "%s: dx[%d] %g vs %g",
                      g_ops[i].name, k, gi[1][k], gi[0][k]);
            CHECK_MSG(check_close_(go[1][k], go[0][k], 1e-12, 1e-12), "%s: do[%d] %g vs %g",
                      g_ops[i].name, k, go[1][k], go[0][k]);
        }
    }
    /* fill_ / zero_ cut the history of self's old value: x gets zeros. */
    for (int z = 0; z < 2; z++) {
        gf_tensor *x = ag_leaf(DV(1, 2, 3), 3);
        gf_tensor *y = gf_mul_scalar(x, 2.0);
        CHECK_OK(z ? gf_zero_(y) : gf_fill_(y, 7.0));
        CHECK_VALS(y, z ? DV(0, 0, 0) : DV(7, 7, 7), 3, 0);
        gf_status s = gf_backward(y, c, NULL);
        /* PyTorch: y no longer depends on x, x.grad = 0 (or none). */
        if (s == GF_OK) {
            gf_tensor *gx = gf_tensor_grad(x);
            if (gx) CHECK_VALS(gx, DV(0, 0, 0), 3, 0);
            gf_tensor_release(gx);
        } else {
            CHECK_MSG(s == GF_OK, "%s: %s", z ? "gf_zero_" : "gf_fill_", gf_last_error());
        }
        gf_tensor_release(y);
        gf_tensor_release(x);
    }
    gf_tensor_release(c);
    free_op_args();
}

static void rule14_view_history_is_regenerated(void) {
    gf_tensor *x = ag_leaf(DV(1, 2, 3, 4), 4);
    gf_tensor *w = ag_leaf(DV(5, 6), 2);
    gf_tensor *b = gf_mul_scalar(x, 2.0);
    gf_tensor *v = gf_slice(b, 0, 1, 3, 1);
    CHECK_OK(gf_mul_(v, w));
    CHECK_VALS(v, DV(20, 36), 2, 0);
    CHECK(gf_tensor_requires_grad(v) && gf_tensor_grad_fn_name(v) != NULL);
    /* v = 2 x[1:3] * w: the view's gradient flows through the in-place op. */
    gf_tensor *gxv = ag_grad1(v, x, NULL, false);
    CHECK_VALS(gxv, DV(0, 10, 12, 0), 4, 1e-12);
    gf_tensor_release(gxv);
    gf_tensor_release(v);
    gf_tensor_release(b);

    b = gf_mul_scalar(x, 2.0);
    v = gf_slice(b, 0, 1, 3, 1);
    CHECK_OK(gf_mul_(v, w));
    gf_tensor *gwv = ag_grad1(v, w, NULL, false);
    CHECK_VALS(gwv, DV(4, 6), 2, 1e-12);
    gf_tensor_release(gwv);
    gf_tensor_release(v);
    gf_tensor_release(b);
    gf_tensor_release(w);
    gf_tensor_release(x);
}

static void rule14_inplace_on_nonleaf_and_on_views_of_non_grad_base(void) {
    /* Not a view: the tensor's own history moves on. y = exp(2x). */
    gf_tensor *x = ag_leaf(DV(0, 0.5), 2);
    gf_tensor *y = gf_mul_scalar(x, 2.0);
    CHECK_OK(gf_exp_(y));
    const char *name = gf_tensor_grad_fn_name(y);
    CHECK(name && strcmp(name, "ExpBackward") == 0);
    CHECK_OK(ag_backward_ones(y, -1, false));
    CHECK_GRAD(x, DV(2, 2 * exp(1.0)), 2, 1e-14);
    gf_tensor_release(y);

    /* A base that did not require grad gains history from the view's op. */
    gf_tensor *w = ag_leaf(DV(5, 6), 2);
    gf_tensor *base = gf_zeros(SZ(4), 1, GF_F64, NULL);
    gf_tensor *v = gf_slice(base, 0, 1, 3, 1);
    CHECK_OK(gf_add_(v, w));
    CHECK(gf_tensor_requires_grad(base));
    CHECK_VALS(base, DV(0, 5, 6, 0), 4, 0);
    gf_tensor *c = ag_vec(DV(1, 2, 3, 4), 4);
    gf_tensor *l = gf_mul(base, c);
    CHECK_OK(ag_backward_ones(l, -1, false));
    CHECK_GRAD(w, DV(2, 3), 2, 0);
    gf_tensor_release(l);
    gf_tensor_release(c);
    gf_tensor_release(v);
    gf_tensor_release(base);
    gf_tensor_release(w);
    gf_tensor_release(x);
}

static void rule14_overlapping_inplace_views(void) {
    /* b = x; b[0:2] *= 3; b[1:3] *= w: b = [3 x0, 3 x1 w0, x2 w1, x3]. */
    gf_tensor *x = ag_leaf(DV(1, 2, 3, 4), 4);
    gf_tensor *w = ag_leaf(DV(5, 6), 2);
    gf_tensor *b = gf_mul_scalar(x, 1.0);
    gf_tensor *v1 = gf_slice(b, 0, 0, 2, 1);
    gf_tensor *v2 = gf_slice(b, 0, 1, 3, 1);
    CHECK_OK(gf_mul_scalar_(v1, 3.0));
    CHECK_OK(gf_mul_(v2, w));
    CHECK_VALS(b, DV(3, 30, 18, 4), 4, 0);
    CHECK_OK(ag_backward_ones(b, -1, false));
    CHECK_GRAD(x, DV(3, 15, 6, 1), 4, 1e-12);
    CHECK_GRAD(w, DV(6, 3), 2, 1e-12);
    gf_tensor_release(v2);
    gf_tensor_release(v1);
    gf_tensor_release(b);
    gf_tensor_release(w);
    gf_tensor_release(x);
}

/* An in-place op whose other input is self, or another view of self's
 * storage: the nodes it records keep the old values they read (as PyTorch
 * saves original_self), not aliases of memory the op then overwrites. A
 * node recorded before the op still sees the write (rule 12). */
static void rule14_inplace_whose_other_input_aliases_self(void) {
    /* y = 2x; y *= y: y = 4 x^2, dy/dx = 8x. */
    gf_tensor *x = ag_leaf(DV(1, 2, 3), 3);
    gf_tensor *y = gf_mul_scalar(x, 2.0);
    CHECK_OK(gf_mul_(y, y));
    CHECK_VALS(y, DV(4, 16, 36), 3, 0);
    CHECK_OK(ag_backward_ones(y, -1, false));
    CHECK_GRAD(x, DV(8, 16, 24), 3, 1e-12);
    gf_tensor_release(y);
    gf_tensor_release(x);

    /* b = 1x; b *= b^T (a transposed view of b itself): b_ij = x_ij x_ji,
     * d sum(b) / dx = 2 x^T. */
    x = ag_leaf_t(DV(1, 2, 3, 4), SZ(2, 2), 2);
    gf_tensor *b = gf_mul_scalar(x, 1.0);
    gf_tensor *bt = gf_transpose(b, 0, 1);
    CHECK_OK(gf_mul_(b, bt));
    CHECK_VALS(b, DV(1, 6, 6, 16), 4, 0);
    CHECK_OK(ag_backward_ones(b, -1, false));
    CHECK_GRAD(x, DV(2, 6, 4, 8), 4, 1e-12);
    gf_tensor_release(bt);
    gf_tensor_release(b);
    gf_tensor_release(x);

    /* One view written in place with another view of the same base:
     * b = 1x; b[0:2] *= b[2:4]: b = [x0 x2, x1 x3, x2, x3]. */
    x = ag_leaf(DV(1, 2, 3, 4), 4);
    b = gf_mul_scalar(x, 1.0);
    gf_tensor *lo = gf_slice(b, 0, 0, 2, 1), *hi = gf_slice(b, 0, 2, 4, 1);
    CHECK_OK(gf_mul_(lo, hi));
    CHECK_VALS(b, DV(3, 8, 3, 4), 4, 0);
    CHECK_OK(ag_backward_ones(b, -1, false));
    CHECK_GRAD(x, DV(3, 4, 2, 3), 4, 1e-12);
    gf_tensor_release(hi);
    gf_tensor_release(lo);
    gf_tensor_release(b);
    gf_tensor_release(x);

    /* z = y * y saved y before y *= y: z's backward reports the write. */
    x = ag_leaf(DV(1, 2, 3), 3);
    y = gf_mul_scalar(x, 2.0);
    gf_tensor *z = gf_mul(y, y);
    CHECK_OK(gf_mul_(y, y));
    CHECK(ag_backward_ones(z, -1, false) == GF_ERR_AUTOGRAD);
    CHECK_CONTAINS(gf_last_error(), "modified by an in-place operation");
    gf_tensor_release(z);
    gf_tensor_release(y);
    gf_tensor_release(x);
}

static void rule14_nested_and_transposed_views(void) {
    /* A view of a view: the write rebases the root base. b = 2x;
     * b[1:4][1:3] *= 5 touches b[2:4]. */
    gf_tensor *x = ag_leaf(DV(1, 2, 3, 4), 4);
    gf_tensor *b = gf_mul_scalar(x, 2.0);
    gf_tensor *v = gf_slice(b, 0, 1, 4, 1);
    gf_tensor *v2 = gf_slice(v, 0, 1, 3, 1);
    CHECK_OK(gf_mul_scalar_(v2, 5.0));
    CHECK_VALS(b, DV(2, 4, 30, 40), 4, 0);
    /* v's history is regenerated from b's new one. */
    gf_tensor *ones = gf_ones_like(v), *gv = NULL;
    gf_grad_opts keep = {.retain_graph = 1};
    CHECK_OK(gf_grad(&v, 1, &ones, &x, 1, &gv, &keep));
    CHECK_VALS(gv, DV(0, 2, 10, 10), 4, 1e-12);
    gf_tensor_release(gv);
    gf_tensor_release(ones);
    CHECK_OK(ag_backward_ones(b, -1, false));
    CHECK_GRAD(x, DV(2, 2, 10, 10), 4, 1e-12);
    gf_tensor_release(v2);
    gf_tensor_release(v);
    gf_tensor_release(b);
    gf_tensor_release(x);

    /* Through a transpose: column 0 of b = 2x ([2, 2]) times 3. */
    gf_tensor *x2 = ag_leaf_t(DV(1, 2, 3, 4), SZ(2, 2), 2);
    gf_tensor *b2 = gf_mul_scalar(x2, 2.0);
    gf_tensor *t = gf_transpose(b2, 0, 1);
    gf_tensor *col = gf_select(t, 0, 0);
    CHECK_OK(gf_mul_scalar_(col, 3.0));
    CHECK_VALS(b2, DV(6, 4, 18, 8), 4, 0);
    gf_tensor *c = ag_t(DV(1, 10, 100, 1000), SZ(2, 2), 2);
    gf_tensor *l = gf_mul(b2, c);
    CHECK_OK(ag_backward_ones(l, -1, false));
    CHECK_GRAD(x2, DV(6, 20, 600, 2000), 4, 1e-12);
    gf_tensor_release(l);
    gf_tensor_release(c);
    gf_tensor_release(col);
    gf_tensor_release(t);
    gf_tensor_release(b2);
    gf_tensor_release(x2);
}

/* The view's history after the write is made when an op first takes the
 * view as input, so that op's node is older than the node its edge leads
 * to: gf_grad must still find the path to its inputs (PyTorch: the same
 * gradients as backward). */
enum { VK_NARROW, VK_SELECT, VK_STEP, VK_TRANSPOSE, VK_DIAGONAL, VK_COUNT };
enum { VO_MUL_SCALAR, VO_ADD, VO_MUL, VO_EXP, VO_TANH, VO_COPY, VO_CLAMP, VO_COUNT };
static const char *const vk_names[] = {"narrow", "select", "slice step 2", "transpose", "diagonal"};
static const char *const vo_names[] = {"mul_scalar_", "add_", "mul_", "exp_", "tanh_", "copy_",
                                       "clamp_"};

static gf_tensor *view_of(gf_tensor *b, int kind) {
    switch (kind) {
    case VK_NARROW: return gf_narrow(b, 1, 1, 2);
    case VK_SELECT: return gf_select(b, 0, 1);
    case VK_STEP: return gf_slice(b, 1, 0, 4, 2);
    case VK_TRANSPOSE: return gf_transpose(b, 0, 1);
    default: return gf_diagonal(b, 1, 0, 1);
    }
}

static bool op_uses_w(int op) { return op == VO_ADD || op == VO_MUL || op == VO_COPY; }

static gf_status write_view(gf_tensor *v, int op, const gf_tensor *w) {
    switch (op) {
    case VO_MUL_SCALAR: return gf_mul_scalar_(v, 0.5);
    case VO_ADD: return gf_add_(v, w);
    case VO_MUL: return gf_mul_(v, w);
    case VO_EXP: return gf_exp_(v);
    case VO_TANH: return gf_tanh_(v);
    case VO_COPY: return gf_copy_(v, w);
    default: return gf_clamp_(v, -0.3, 0.4);
    }
}

/* b = x * 1 ([3, 4]); op_(view(b)); y = sum(v * cv) + sum(b * cb). The
 * gradients of x and w by gf_backward (use_grad 0) or gf_grad (1), into gx
 * (12) and gw (up to 12). */
static gf_status view_write_grads(int kind, int op, int use_grad, double *gx, double *gw) {
    double xv[12], wv[12];
    for (int i = 0; i < 12; i++) {
        xv[i] = 0.1 * (i - 5) + 0.03 * (i % 3);
        wv[i] = 0.7 - 0.11 * i;
    }
    gf_tensor *x = ag_leaf_t(xv, SZ(3, 4), 2);
    gf_tensor *b = gf_mul_scalar(x, 1.0);
    gf_tensor *v = b ? view_of(b, kind) : NULL;
    gf_tensor *w = v ? ag_leaf_t(wv, gf_tensor_sizes(v), gf_tensor_rank(v)) : NULL;
    gf_status s = w ? write_view(v, op, w) : gf_last_status();
    gf_tensor *cv = NULL, *cb = NULL, *y = NULL;
    if (s == GF_OK) {
        double c[12];
        for (int i = 0; i < 12; i++) c[i] = 1.0 + 0.25 * i;
        cv = ag_t(c, gf_tensor_sizes(v), gf_tensor_rank(v));
        cb = ag_t(DV(3, -1, 2, 0.5, -2, 1, 4, -3, 0.25, 2, -1, 1), SZ(3, 4), 2);
        gf_tensor *pv = cv ? gf_mul(v, cv) : NULL, *pb = cb ? gf_mul(b, cb) : NULL;
        gf_tensor *sv = pv ? gf_sum(pv, NULL, 0, false) : NULL;
        gf_tensor *sb = pb ? gf_sum(pb, NULL, 0, false) : NULL;
        y = sv && sb ? gf_add(sv, sb) : NULL;
        gf_tensor_release(pv);
        gf_tensor_release(pb);
        gf_tensor_release(sv);
        gf_tensor_release(sb);
        if (!y) s = gf_last_status();
    }
    for (int i = 0; i < 12; i++) gx[i] = gw[i] = NAN;
    if (s == GF_OK && !use_grad) {
        s = gf_backward(y, NULL, NULL);
        gf_tensor *g = gf_tensor_grad(x);
        if (s == GF_OK && ag_read(g, gx, 12) != 12) s = GF_ERR_AUTOGRAD;
        gf_tensor_release(g);
        g = gf_tensor_grad(w);
        if (s == GF_OK && op_uses_w(op) && ag_read(g, gw, 12) < 0) s = GF_ERR_AUTOGRAD;
        gf_tensor_release(g);
    } else if (s == GF_OK) {
        gf_tensor *in[2] = {x, w}, *r[2] = {NULL, NULL};
        s = gf_grad(&y, 1, NULL, in, op_uses_w(op) ? 2 : 1, r, NULL);
        if (s == GF_OK && ag_read(r[0], gx, 12) != 12) s = GF_ERR_AUTOGRAD;
        if (s == GF_OK && op_uses_w(op) && ag_read(r[1], gw, 12) < 0) s = GF_ERR_AUTOGRAD;
        gf_tensor_release(r[0]);
        gf_tensor_release(r[1]);
    }
    gf_tensor_release(y);
    gf_tensor_release(cv);
    gf_tensor_release(cb);
    gf_tensor_release(w);
    gf_tensor_release(v);
    gf_tensor_release(b);
    gf_tensor_release(x);
    return s;
}

static void rule14_grad_through_view_written_in_place_matches_backward(void) {
    /* The smallest case: x = [1, 2, 3, 4]; b = x * 1; b[1:3] *= 0.5;
     * y = sum(b[1:3] * 1): dy/dx = [0, 0.5, 0.5, 0]. */
    gf_tensor *x = ag_leaf(DV(1, 2, 3, 4), 4);
    gf_tensor *b = gf_mul_scalar(x, 1.0);
    gf_tensor *v = gf_narrow(b, 0, 1, 2);
    CHECK_OK(gf_mul_scalar_(v, 0.5));
    gf_tensor *p = gf_mul_scalar(v, 1.0);
    gf_tensor *y = gf_sum(p, NULL, 0, false);
    gf_tensor *g = NULL;
    CHECK_OK(gf_grad(&y, 1, NULL, &x, 1, &g, NULL));
    CHECK_VALS(g, DV(0, 0.5, 0.5, 0), 4, 0);
    gf_tensor_release(g);
    gf_tensor_release(y);
    gf_tensor_release(p);
    gf_tensor_release(v);
    gf_tensor_release(b);
    gf_tensor_release(x);

    /* Every view kind with several in-place ops, against backward. */
    for (int kind = 0; kind < VK_COUNT; kind++)
        for (int op = 0; op < VO_COUNT; op++) {
            double bx[12], bw[12], gx[12], gw[12];
            gf_status s0 = view_write_grads(kind, op, 0, bx, bw);
            CHECK_MSG(s0 == GF_OK, "%s, %s, backward: %s", vk_names[kind], vo_names[op],
                      gf_last_error());
            gf_status s1 = view_write_grads(kind, op, 1, gx, gw);
            CHECK_MSG(s1 == GF_OK, "%s, %s, gf_grad: %s", vk_names[kind], vo_names[op],
                      gf_last_error());
            if (s0 != GF_OK || s1 != GF_OK) continue;
            for (int i = 0; i < 12; i++) {
                CHECK_MSG(check_close_(gx[i], bx[i], 1e-12, 1e-12), "%s, %s: dx[%d] = %g by "
                          "gf_grad, %g by backward", vk_names[kind], vo_names[op], i, gx[i], bx[i]);
                CHECK_MSG(check_close_(gw[i], bw[i], 1e-12, 1e-12), "%s, %s: dw[%d] = %g by "
                          "gf_grad, %g by backward", vk_names[kind], vo_names[op], i, gw[i], bw[i]);
            }
        }
}

/* An in-place op on a view whose result is cast back to the view's dtype
 * (f32 view, f64 operand): the recorded node is the cast, so CopySlices
 * wraps it and self's old value keeps its own edge inside the op. The copy_
 * case wrote past the CopySlices node's edges; the add_ case lost the
 * operand's gradient. x f32 [1,2,3,4]; b = x * 1; op_(b[1:3], s) with s f64
 * [10, 20]; y = sum(b * [1,2,3,4]). */
static void rule14_inplace_on_view_with_cast_result(void) {
    for (int op = 0; op < 2; op++) { /* 0: copy_, 1: add_ */
        gf_tensor *x = gf_from_data((const float[]){1, 2, 3, 4}, SZ(4), 1, GF_F32, NULL);
        CHECK_OK(gf_tensor_set_requires_grad(x, true));
        gf_tensor *s = ag_leaf(DV(10, 20), 2);
        gf_tensor *w = gf_from_data((const float[]){1, 2, 3, 4}, SZ(4), 1, GF_F32, NULL);
        gf_tensor *b = gf_mul_scalar(x, 1.0);
        gf_tensor *v = gf_narrow(b, 0, 1, 2);
        CHECK_OK(op == 0 ? gf_copy_(v, s) : gf_add_(v, s));
        gf_tensor *p = gf_mul(b, w);
        gf_tensor *y = gf_sum(p, NULL, 0, false);
        CHECK_OK(gf_backward(y, NULL, NULL));
        gf_tensor *gx = gf_tensor_grad(x), *gs = gf_tensor_grad(s);
        CHECK_VALS(gx, op == 0 ? DV(1, 0, 0, 4) : DV(1, 2, 3, 4), 4, 0);
        CHECK_VALS(gs, DV(2, 3), 2, 0);
        gf_tensor *const all[] = {gx, gs, y, p, v, b, w, s, x};
        for (int i = 0; i < AG_N(all); i++) gf_tensor_release(all[i]);
    }
}

/* Second derivatives through an in-place op on a view whose formula uses
 * its own output (exp_, tanh_, sigmoid_): b = x + 1.5; op_(b[:, 0:2]);
 * y = sum(b * b); g = dy/dx with create_graph; h = d sum(g) / dx, without
 * retain_graph. The saved output is the view, whose history leads to the
 * base's CopySlices: the op's node runs once, inside it. */
static double second_derivative(int op, double u) {
    if (op == 0) return 4 * exp(2 * u); /* y = e^(2u) */
    if (op == 1) {                      /* y = t^2, g = 2t(1 - t^2) */
        double t = tanh(u);
        return (2 - 6 * t * t) * (1 - t * t);
    }
    double sg = 1 / (1 + exp(-u)); /* y = s^2, g = 2s^2(1 - s) */
    return (4 * sg - 6 * sg * sg) * sg * (1 - sg);
}

static void rule14_double_backward_through_inplace_on_view(void) {
    static const char *const names[] = {"gf_exp_", "gf_tanh_", "gf_sigmoid_"};
    const double xv[6] = {0, 0.84, 0.3, 0.14, -0.76, -1};
    for (int op = 0; op < 3; op++) {
        gf_tensor *x = ag_leaf_t(xv, SZ(2, 3), 2);
        gf_tensor *b = gf_add_scalar(x, 1.5);
        gf_tensor *v = gf_narrow(b, 1, 0, 2);
        CHECK_OK(op == 0 ? gf_exp_(v) : op == 1 ? gf_tanh_(v) : gf_sigmoid_(v));
        gf_tensor *bb = gf_mul(b, b);
        gf_tensor *y = gf_sum(bb, NULL, 0, false);
        gf_tensor *g = NULL, *h = NULL;
        gf_grad_opts cg = {.retain_graph = -1, .create_graph = true};
        CHECK_OK(gf_grad(&y, 1, NULL, &x, 1, &g, &cg));
        gf_tensor *sg = g ? gf_sum(g, NULL, 0, false) : NULL;
        gf_status s = sg ? gf_grad(&sg, 1, NULL, &x, 1, &h, NULL) : gf_last_status();
        CHECK_MSG(s == GF_OK, "%s: %s", names[op], gf_last_error());
        double want[6];
        for (int i = 0; i < 6; i++) want[i] = i % 3 < 2 ? second_derivative(op, xv[i] + 1.5) : 2;
        if (s == GF_OK) CHECK_VALS(h, want, 6, 1e-12);
        if (op == 0) /* PyTorch's figures for x = [0, 0.84, 0.3; 0.14, -0.76, -1] */
            CHECK(h && fabs(want[0] - 80.34) < 0.01 && fabs(want[1] - 431.08) < 0.01 &&
                  fabs(want[3] - 106.30) < 0.01 && fabs(want[4] - 17.57) < 0.01);
        /* The graph was freed: a third pass is the rule 4 error. */
        gf_tensor *h2 = NULL;
        if (sg)
            CHECK_ERR(gf_grad(&sg, 1, NULL, &x, 1, &h2, NULL), GF_ERR_AUTOGRAD, "second time",
                      "retain_graph");
        gf_tensor_release(h);
        gf_tensor_release(sg);
        gf_tensor_release(g);
        gf_tensor_release(y);
        gf_tensor_release(bb);
        gf_tensor_release(v);
        gf_tensor_release(b);
        gf_tensor_release(x);
    }
}

/* A custom function that writes a view in place and marks it dirty
 * rebases the base's history as the built-in in-place ops do. */
static gf_status addin_fwd(gf_function_ctx *ctx, gf_tensor *const *in, int n_in, gf_tensor **out,
                           int n_out, void *user) {
    gf_status s = gf_add_(in[0], in[1]); /* self += other */
    if (s == GF_OK) s = gf_ctx_mark_dirty(ctx, in[0]);
    for (int j = 0; j < n_out && s == GF_OK; j++) {
        out[j] = j ? gf_clone(in[1]) : gf_tensor_retain(in[0]);
        if (!out[j]) s = gf_last_status();
    }
    return s;
}
static gf_status addin_bwd(gf_function_ctx *ctx, gf_tensor *const *go, int n_out, gf_tensor **gi,
                           int n_in, void *user) {
    /* Plain ownership (rule 20): what it makes and returns is the caller's,
     * also when CopySlices runs it. */
    gi[0] = gf_tensor_retain(go[0]);
    gi[1] = gf_mul_scalar(go[0], 1.0);
    return gi[1] ? GF_OK : gf_last_status();
}

static void rule14_custom_function_dirtying_a_view_rebases_the_base(void) {
    gf_function_def def = {"AddInPlace", addin_fwd, addin_bwd, false, NULL};
    /* xc = clone(x); AddInPlace(xc[1:3], b); y = sum(xc * c). */
    for (int use_grad = 0; use_grad < 2; use_grad++) {
        gf_tensor *x = ag_leaf(DV(1, 2, 3, 4), 4);
        gf_tensor *b = ag_leaf(DV(10, 20), 2);
        gf_tensor *xc = gf_clone(x);
        gf_tensor *v = gf_narrow(xc, 0, 1, 2);
        gf_tensor *in[2] = {v, b}, *out = NULL;
        CHECK_OK(gf_function_apply(&def, in, 2, &out, 1));
        CHECK(out == v);
        CHECK_VALS(xc, DV(1, 12, 23, 4), 4, 0);
        const char *name = gf_tensor_grad_fn_name(xc);
        CHECK_MSG(name && strcmp(name, "CopySlices") == 0, "xc's grad_fn is %s",
                  name ? name : "(none)");
        gf_tensor *c = ag_vec(DV(1, 2, 3, 4), 4);
        gf_tensor *p = gf_mul(xc, c);
        gf_tensor *y = gf_sum(p, NULL, 0, false);
        if (!use_grad) {
            CHECK_OK(gf_backward(y, NULL, NULL));
            CHECK_GRAD(x, DV(1, 2, 3, 4), 4, 0);
            CHECK_GRAD(b, DV(2, 3), 2, 0);
        } else { /* through the view's regenerated history as well */
            gf_tensor *vv = gf_mul_scalar(v, 10.0);
            gf_tensor *sv = gf_sum(vv, NULL, 0, false);
            gf_tensor *ys = gf_add(y, sv);
            gf_tensor *ins[2] = {x, b}, *r[2] = {NULL, NULL};
            CHECK_OK(gf_grad(&ys, 1, NULL, ins, 2, r, NULL));
            CHECK_VALS(r[0], DV(1, 12, 13, 4), 4, 0);
            CHECK_VALS(r[1], DV(12, 13), 2, 0);
            gf_tensor_release(r[0]);
            gf_tensor_release(r[1]);
            gf_tensor_release(ys);
            gf_tensor_release(sv);
            gf_tensor_release(vv);
        }
        gf_tensor_release(y);
        gf_tensor_release(p);
        gf_tensor_release(c);
        gf_tensor_release(out);
        gf_tensor_release(v);
        gf_tensor_release(xc);
        gf_tensor_release(b);
        gf_tensor_release(x);
    }
    /* PyTorch's case: y = sum(x) after the write; b.grad = [1, 1]. A base
     * that needed no gradient gains history from b, as with gf_add_. */
    for (int grad_base = 0; grad_base < 2; grad_base++) {
        gf_tensor *x = ag_leaf(DV(1, 2, 3, 4), 4);
        gf_tensor *b = ag_leaf(DV(10, 20), 2);
        gf_tensor *base = grad_base ? gf_clone(x) : ag_vec(DV(1, 2, 3, 4), 4);
        gf_tensor *v = gf_slice(base, 0, 0, 4, 2); /* elements 0 and 2 */
        gf_tensor *in[2] = {v, b}, *out = NULL;
        CHECK_OK(gf_function_apply(&def, in, 2, &out, 1));
        CHECK(gf_tensor_requires_grad(base));
        gf_tensor *y = gf_sum(base, NULL, 0, false);
        CHECK_OK(gf_backward(y, NULL, NULL));
        CHECK_GRAD(b, DV(1, 1), 2, 0);
        if (grad_base) CHECK_GRAD(x, DV(1, 1, 1, 1), 4, 0);
        gf_tensor_release(y);
        gf_tensor_release(out);
        gf_tensor_release(v);
        gf_tensor_release(base);
        gf_tensor_release(b);
        gf_tensor_release(x);
    }
    /* CopySlices passes the function one gradient: a view written in place
     * must be its only output (PyTorch's rule too). */
    gf_tensor *x = ag_leaf(DV(1, 2, 3, 4), 4);
    gf_tensor *b = ag_leaf(DV(10, 20), 2);
    gf_tensor *xc = gf_clone(x);
    gf_tensor *v = gf_narrow(xc, 0, 1, 2);
    gf_tensor *in[2] = {v, b}, *out[2] = {NULL, NULL};
    CHECK_ERR(gf_function_apply(&def, in, 2, out, 2), GF_ERR_AUTOGRAD, "AddInPlace", "view",
              "only output", "gf_clone");
    CHECK(out[0] == NULL && out[1] == NULL);
    gf_tensor_release(v);
    gf_tensor_release(xc);
    gf_tensor_release(b);
    gf_tensor_release(x);
}

/* ------------------------------------------------------------ rule 15 */
static void rule15_view_made_in_no_grad_then_written_in_grad_mode(void) {
    gf_tensor *x = ag_leaf(DV(1, 2, 3, 4), 4);
    gf_tensor *b = gf_mul_scalar(x, 2.0);
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    gf_tensor *v = gf_slice(b, 0, 0, 2, 1);
    gf_grad_mode_set(prev);
    CHECK_ERR(gf_mul_scalar_(v, 3.0), GF_ERR_AUTOGRAD, "gf_mul_scalar_", "no-grad", "gf_clone");
    CHECK_ERR(gf_zero_(v), GF_ERR_AUTOGRAD, "no-grad");
    /* A view of such a view, even made in grad mode, inherits the ban. */
    gf_tensor *vv = gf_slice(v, 0, 0, 1, 1);
    CHECK_ERR(gf_add_scalar_(vv, 1.0), GF_ERR_AUTOGRAD, "gf_add_scalar_", "no-grad");
    gf_tensor_release(vv);
    CHECK_VALS(b, DV(2, 4, 6, 8), 4, 0);
    /* Written under no-grad it is fine (nothing to record). */
    prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    CHECK_OK(gf_mul_scalar_(v, 3.0));
    gf_grad_mode_set(prev);
    CHECK_VALS(b, DV(6, 12, 6, 8), 4, 0);
    /* A view made in no-grad of a base that needs no grad may be written. */
    gf_tensor *plain = gf_zeros(SZ(2), 1, GF_F64, NULL);
    prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    gf_tensor *pv = gf_slice(plain, 0, 0, 1, 1);
    gf_grad_mode_set(prev);
    CHECK_OK(gf_add_scalar_(pv, 1.0));
    CHECK_VALS(plain, DV(1, 0), 2, 0);
    gf_tensor_release(pv);
    gf_tensor_release(plain);
    gf_tensor_release(v);
    gf_tensor_release(b);
    gf_tensor_release(x);
}

static void rule15_view_made_in_inference_mode_then_written_in_grad_mode(void) {
    gf_tensor *x = ag_leaf(DV(1, 2, 3, 4), 4);
    gf_tensor *b = gf_mul_scalar(x, 2.0);
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_INFERENCE);
    gf_tensor *v = gf_slice(b, 0, 0, 2, 1);
    gf_grad_mode_set(prev);
    CHECK(v && !gf_tensor_is_inference(v)); /* a view of a normal tensor */
    CHECK_ERR(gf_mul_scalar_(v, 3.0), GF_ERR_AUTOGRAD, "gf_mul_scalar_", "inference", "gf_clone");
    gf_tensor_release(v);
    gf_tensor_release(b);
    gf_tensor_release(x);
}

static void rule15_inplace_on_split_or_chunk_piece_is_error(void) {
    gf_tensor *x = ag_leaf(DV(1, 2, 3, 4), 4);
    gf_tensor *b = gf_mul_scalar(x, 2.0);
    gf_tensor *p[4] = {0};
    int n = 0;
    CHECK_OK(gf_split(b, 2, 0, p, 4, &n));
    CHECK(n == 2);
    if (n == 2) {
        CHECK_ERR(gf_mul_scalar_(p[0], 3.0), GF_ERR_AUTOGRAD, "gf_mul_scalar_", "split", "gf_clone");
        CHECK_ERR(gf_add_(p[1], p[0]), GF_ERR_AUTOGRAD, "gf_add_", "split");
        /* The suggested fix. */
        gf_tensor *c = gf_clone(p[0]);
        CHECK_OK(gf_mul_scalar_(c, 3.0));
        CHECK_VALS(c, DV(6, 12), 2, 0);
        gf_tensor_release(c);
    }
    for (int i = 0; i < n; i++) gf_tensor_release(p[i]);
    CHECK_OK(gf_chunk(b, 2, 0, p, 4, &n));
    CHECK(n == 2);
    if (n == 2) CHECK_ERR(gf_relu_(p[1]), GF_ERR_AUTOGRAD, "gf_relu_", "chunk");
    for (int i = 0; i < n; i++) gf_tensor_release(p[i]);
    CHECK_VALS(b, DV(2, 4, 6, 8), 4, 0);

    /* Pieces of a tensor that needs no grad may be written. */
    gf_tensor *plain = ag_vec(DV(1, 2, 3, 4), 4);
    CHECK_OK(gf_split(plain, 2, 0, p, 4, &n));
    if (n == 2) CHECK_OK(gf_mul_scalar_(p[1], 10.0));
    CHECK_VALS(plain, DV(1, 2, 30, 40), 4, 0);
    for (int i = 0; i < n; i++) gf_tensor_release(p[i]);
    gf_tensor_release(plain);
    gf_tensor_release(b);
    gf_tensor_release(x);
}

int main(void) {
    int dev = ag_device_check();
    if (dev) return dev;
    RUN(rule11_version_counter_shared_by_views_and_bumped);
    RUN(rule11_every_inplace_op_bumps);
    RUN(rule12_modified_saved_leaf_is_error);
    RUN(rule12_modified_saved_output_names_its_node);
    RUN(rule12_modified_saved_nonleaf_input_names_saver_and_producer);
    RUN(rule13_inplace_on_leaf_requiring_grad_fails_before_writing);
    RUN(rule13_inplace_on_a_view_made_a_leaf_fails);
    RUN(rule13_inplace_on_leaf_under_no_grad_is_allowed);
    RUN(rule14_inplace_on_view_of_nonleaf_matches_out_of_place);
    RUN(rule14_copyslices_with_ops_that_do_not_save_self);
    RUN(rule14_every_inplace_op_on_nonleaf_matches_out_of_place);
    RUN(rule14_view_history_is_regenerated);
    RUN(rule14_inplace_on_nonleaf_and_on_views_of_non_grad_base);
    RUN(rule14_overlapping_inplace_views);
    RUN(rule14_inplace_whose_other_input_aliases_self);
    RUN(rule14_nested_and_transposed_views);
    RUN(rule14_grad_through_view_written_in_place_matches_backward);
    RUN(rule14_inplace_on_view_with_cast_result);
    RUN(rule14_double_backward_through_inplace_on_view);
    RUN(rule14_custom_function_dirtying_a_view_rebases_the_base);
    RUN(rule15_view_made_in_no_grad_then_written_in_grad_mode);
    RUN(rule15_view_made_in_inference_mode_then_written_in_grad_mode);
    RUN(rule15_inplace_on_split_or_chunk_piece_is_error);
    return ag_finish();
}
