/* SPDX-License-Identifier: BSD-3-Clause */
/* test_rules_hooks_inplace.c — saved-tensor hooks (rule 19) around in-place
 * ops (rules 11-14): hooks that keep what pack is given must never keep a
 * tensor that holds the node's own history.
 *
 * An in-place op records its node on the out-of-place value and then moves
 * that node onto self. Had pack been given self, the packed value would hold
 * the node that holds it: a cycle, the graph never freed, release never run,
 * and the saved value overwritten by the very write it was saved before. As
 * PyTorch saves original_self, pack gets a copy of self's old value without
 * history. Every in-place family, on self as: a tensor that did not require
 * grad (history rebased onto it), a view of one (its base rebased through
 * CopySlices), a non-leaf, a view of a non-leaf. Each case checks that release
 * ran once per pack, the device bytes are back to where they were, and (where
 * the op has an operand that requires grad) the gradients through the packed
 * values are the out-of-place ones. Runs on every device (the default
 * device, GRAFT_DEVICE). */
#include <math.h>
#include <string.h>

#include "autograd/test_rules_util.h"

/* The in-place families. self holds {1.5, 2, 3, 4} (or a view of those
 * values), w = {0.5, -1, 2, 0.25} requires grad. */
enum { N = 4 };
typedef gf_status (*inplace_fn)(gf_tensor *self, gf_tensor *w, gf_tensor *aux);
static gf_status op_add(gf_tensor *s, gf_tensor *w, gf_tensor *x) { (void)x; return gf_add_(s, w); }
static gf_status op_sub(gf_tensor *s, gf_tensor *w, gf_tensor *x) { (void)x; return gf_sub_(s, w); }
static gf_status op_mul(gf_tensor *s, gf_tensor *w, gf_tensor *x) { (void)x; return gf_mul_(s, w); }
static gf_status op_div(gf_tensor *s, gf_tensor *w, gf_tensor *x) { (void)x; return gf_div_(s, w); }
static gf_status op_mul_self(gf_tensor *s, gf_tensor *w, gf_tensor *x) {
    (void)w; (void)x;
    return gf_mul_(s, s);
}
static gf_status op_add_scalar(gf_tensor *s, gf_tensor *w, gf_tensor *x) { (void)w; (void)x; return gf_add_scalar_(s, 2); }
static gf_status op_mul_scalar(gf_tensor *s, gf_tensor *w, gf_tensor *x) { (void)w; (void)x; return gf_mul_scalar_(s, -3); }
static gf_status op_clamp(gf_tensor *s, gf_tensor *w, gf_tensor *x) { (void)w; (void)x; return gf_clamp_(s, 1.75, 3.5); }
static gf_status op_relu(gf_tensor *s, gf_tensor *w, gf_tensor *x) { (void)w; (void)x; return gf_relu_(s); }
static gf_status op_sigmoid(gf_tensor *s, gf_tensor *w, gf_tensor *x) { (void)w; (void)x; return gf_sigmoid_(s); }
static gf_status op_tanh(gf_tensor *s, gf_tensor *w, gf_tensor *x) { (void)w; (void)x; return gf_tanh_(s); }
static gf_status op_exp(gf_tensor *s, gf_tensor *w, gf_tensor *x) { (void)w; (void)x; return gf_exp_(s); }
static gf_status op_copy(gf_tensor *s, gf_tensor *w, gf_tensor *x) { (void)x; return gf_copy_(s, w); }
static gf_status op_fill(gf_tensor *s, gf_tensor *w, gf_tensor *x) { (void)w; (void)x; return gf_fill_(s, 7); }
static gf_status op_zero(gf_tensor *s, gf_tensor *w, gf_tensor *x) { (void)w; (void)x; return gf_zero_(s); }
static gf_status op_masked_fill(gf_tensor *s, gf_tensor *w, gf_tensor *mask) {
    (void)w;
    return gf_masked_fill_(s, mask, -2);
}
static gf_status op_index_add(gf_tensor *s, gf_tensor *w, gf_tensor *index) {
    return gf_index_add_(s, 0, index, w);
}
static gf_status op_scatter_add(gf_tensor *s, gf_tensor *w, gf_tensor *index) {
    return gf_scatter_add_(s, 0, index, w);
}

typedef enum { AUX_NONE, AUX_MASK, AUX_INDEX } aux_kind;
typedef struct {
    const char *name;
    inplace_fn fn;
    aux_kind aux;
} family;

static const family families[] = {
    {"add_", op_add, AUX_NONE},           {"sub_", op_sub, AUX_NONE},
    {"mul_", op_mul, AUX_NONE},           {"div_", op_div, AUX_NONE},
    {"mul_(self)", op_mul_self, AUX_NONE}, {"add_scalar_", op_add_scalar, AUX_NONE},
    {"mul_scalar_", op_mul_scalar, AUX_NONE}, {"clamp_", op_clamp, AUX_NONE},
    {"relu_", op_relu, AUX_NONE},         {"sigmoid_", op_sigmoid, AUX_NONE},
    {"tanh_", op_tanh, AUX_NONE},         {"exp_", op_exp, AUX_NONE},
    {"copy_", op_copy, AUX_NONE},         {"fill_", op_fill, AUX_NONE},
    {"zero_", op_zero, AUX_NONE},         {"masked_fill_", op_masked_fill, AUX_MASK},
    {"index_add_", op_index_add, AUX_INDEX}, {"scatter_add_", op_scatter_add, AUX_INDEX},
};

typedef enum { SELF_PLAIN, SELF_VIEW_OF_PLAIN, SELF_NONLEAF, SELF_VIEW_OF_NONLEAF } self_kind;
static const char *const self_names[] = {"a tensor without grad", "a view of one",
                                         "a non-leaf", "a view of a non-leaf"};

static const double self_vals[N] = {1.5, 2, 3, 4};
static const double w_vals[N] = {0.5, -1, 2, 0.25};

static gf_tensor *make_aux(aux_kind k) {
    if (k == AUX_MASK) {
        gf_tensor *m = ag_vec(DV(1, 0, 0, 1), N);
        gf_tensor *b = m ? gf_to_dtype(m, GF_BOOL) : NULL;
        gf_tensor_release(m);
        return b;
    }
    if (k == AUX_INDEX) {
        const int64_t idx[N] = {2, 0, 3, 2};
        return gf_from_data(idx, SZ(N), 1, GF_I64, NULL);
    }
    return NULL;
}

/* Runs family f on self of kind k with hooks that keep what they get, then
 * backward of sum(result * coef) when anything requires grad; leaves the
 * gradients in *gw / *gx (x: the leaf of the non-leaf cases) and returns
 * the value self holds afterwards in out[]. */
static void run_case(const family *f, self_kind k, bool hooks, double *out, double *gw,
                     double *gx, pack_counts *cnt) {
    gf_saved_tensor_hooks h = {ag_pack_keep, ag_unpack_keep, ag_release_keep, cnt};
    gf_tensor *w = ag_leaf(w_vals, N);
    gf_tensor *x = k >= SELF_NONLEAF ? ag_leaf(self_vals, N) : NULL;
    gf_tensor *aux = make_aux(f->aux);
    /* Views are the second row of a 2x4 base (offset 4). */
    double base_vals[2 * N] = {9, 9, 9, 9};
    memcpy(base_vals + N, self_vals, sizeof self_vals);
    gf_tensor *self = NULL, *base = NULL;
    switch (k) {
    case SELF_PLAIN: self = ag_vec(self_vals, N); break;
    case SELF_VIEW_OF_PLAIN:
        base = ag_t(base_vals, SZ(2, N), 2);
        self = base ? gf_select(base, 0, 1) : NULL;
        break;
    case SELF_NONLEAF: self = gf_mul_scalar(x, 1.0); break;
    case SELF_VIEW_OF_NONLEAF: {
        gf_tensor *rows = gf_cat((gf_tensor *const[]){x, x}, 2, 0);
        base = rows ? gf_reshape(rows, SZ(2, N), 2) : NULL;
        gf_tensor_release(rows);
        self = base ? gf_select(base, 0, 1) : NULL;
        break;
    }
    }
    CHECK(self && w && (f->aux == AUX_NONE || aux));
    if (hooks) CHECK_OK(gf_saved_tensor_hooks_push(&h));
    gf_status s = self ? f->fn(self, w, aux) : GF_ERR_INVALID;
    if (hooks) CHECK_OK(gf_saved_tensor_hooks_pop());
    CHECK_MSG(s == GF_OK, "%s on %s: %s", f->name, self_names[k], gf_last_error());
    if (s == GF_OK) CHECK(ag_read(self, out, N) == N);
    /* backward from the base when self is a view: through CopySlices */
    gf_tensor *root = base ? base : self;
    if (s == GF_OK && gf_tensor_requires_grad(root)) {
        gf_tensor *coef = ag_t(DV(1, 2, 3, 4, 5, 6, 7, 8), SZ(2, N), 2);
        gf_tensor *c = base ? coef : gf_select(coef, 0, 0);
        gf_tensor *p = gf_mul(root, c);
        gf_tensor *l = p ? gf_sum(p, NULL, 0, false) : NULL;
        CHECK_MSG(l && gf_backward(l, NULL, NULL) == GF_OK, "%s on %s: %s", f->name,
                  self_names[k], gf_last_error());
        gf_tensor_release(l);
        gf_tensor_release(p);
        if (c != coef) gf_tensor_release(c);
        gf_tensor_release(coef);
    }
    for (int i = 0; i < N; i++) gw[i] = gx[i] = 0;
    gf_tensor *g = gf_tensor_grad(w);
    if (g) CHECK(ag_read(g, gw, N) == N);
    gf_tensor_release(g);
    g = x ? gf_tensor_grad(x) : NULL;
    if (g) CHECK(ag_read(g, gx, N) == N);
    gf_tensor_release(g);
    gf_tensor_release(self);
    gf_tensor_release(base);
    gf_tensor_release(aux);
    gf_tensor_release(x);
    gf_tensor_release(w);
}

static void every_family_on_every_kind_of_self(void) {
    uint64_t bytes = ag_bytes_in_use();
    for (int fi = 0; fi < AG_N(families); fi++) {
        const family *f = &families[fi];
        for (int k = SELF_PLAIN; k <= SELF_VIEW_OF_NONLEAF; k++) {
            pack_counts cnt = {0, 0, 0}, none = {0, 0, 0};
            double v_hooks[N], gw_hooks[N], gx_hooks[N], v[N], gw[N], gx[N];
            run_case(f, (self_kind)k, true, v_hooks, gw_hooks, gx_hooks, &cnt);
            CHECK_MSG(cnt.releases == cnt.packs, "%s on %s: %d packs, %d releases", f->name,
                      self_names[k], cnt.packs, cnt.releases);
            CHECK_MSG(ag_bytes_in_use() == bytes, "%s on %s: %llu bytes in use, %llu before",
                      f->name, self_names[k], (unsigned long long)ag_bytes_in_use(),
                      (unsigned long long)bytes);
            /* the same without hooks: the values and gradients must agree */
            run_case(f, (self_kind)k, false, v, gw, gx, &none);
            for (int i = 0; i < N; i++) {
                CHECK_MSG(check_close_(v_hooks[i], v[i], 1e-12, 1e-12) &&
                              check_close_(gw_hooks[i], gw[i], 1e-12, 1e-12) &&
                              check_close_(gx_hooks[i], gx[i], 1e-12, 1e-12),
                          "%s on %s, element %d: value %g/%g, grad w %g/%g, grad x %g/%g "
                          "(with hooks/without)", f->name, self_names[k], i, v_hooks[i], v[i],
                          gw_hooks[i], gw[i], gx_hooks[i], gx[i]);
            }
            CHECK(ag_bytes_in_use() == bytes);
        }
    }
}

/* The finding as it was reported: c = a * a without grad, c.div_(b) with b
 * requiring grad, hooks that keep what they get, everything released
 * without backward. Then the gradient through the kept value: it is
 * self's value before the write, d(c / b)/db = -c_old / b^2. */
static void div_into_a_tensor_without_grad_frees_everything(void) {
    pack_counts cnt = {0, 0, 0};
    gf_saved_tensor_hooks h = {ag_pack_keep, ag_unpack_keep, ag_release_keep, &cnt};
    uint64_t bytes = ag_bytes_in_use();
    gf_tensor *a = gf_ones(NULL, 0, GF_F32, NULL), *b = gf_ones(NULL, 0, GF_F32, NULL);
    CHECK_OK(gf_tensor_set_requires_grad(b, true));
    CHECK_OK(gf_saved_tensor_hooks_push(&h));
    gf_tensor *c = gf_mul(a, a);
    CHECK_OK(gf_div_(c, b));
    CHECK_OK(gf_saved_tensor_hooks_pop());
    CHECK(cnt.packs > 0);
    gf_tensor_release(c);
    gf_tensor_release(a);
    gf_tensor_release(b);
    CHECK_MSG(cnt.releases == cnt.packs, "%d packs, %d releases", cnt.packs, cnt.releases);
    CHECK(ag_bytes_in_use() == bytes);

    gf_tensor *bb = ag_leaf(DV(2, 4), 2);
    gf_tensor *cc = ag_vec(DV(3, 5), 2);
    CHECK_OK(gf_saved_tensor_hooks_push(&h));
    CHECK_OK(gf_div_(cc, bb));
    CHECK_OK(gf_saved_tensor_hooks_pop());
    CHECK_VALS(cc, DV(1.5, 1.25), 2, 1e-15);
    CHECK_OK(ag_backward_ones(cc, -1, false));
    CHECK_GRAD(bb, DV(-3.0 / 4, -5.0 / 16), 2, 1e-15);
    gf_tensor_release(cc);
    gf_tensor_release(bb);
    CHECK(cnt.releases == cnt.packs);
    CHECK(ag_bytes_in_use() == bytes);
}

/* A tensor saved by an earlier op and then written in place: a.add_(silu(a))
 * rebases a onto a node whose edge leads to silu's node, which saved a.
 * Hooks that keep what pack gets must not keep a itself (they get an alias
 * without history), or a and silu's node hold each other. Without hooks
 * backward then refuses the modified value (rule 12); with hooks the
 * version check is skipped (rule 19) and backward runs (ops that save their
 * output, sqrt and exp, have nothing modified to refuse). Either way every
 * pack is released and the memory comes back. */
typedef gf_tensor *(*saving_op)(const gf_tensor *);
static gf_tensor *op_silu(const gf_tensor *a) { return gf_silu(a); }
static gf_tensor *op_square(const gf_tensor *a) { return gf_mul(a, a); }
static gf_tensor *op_sqrt(const gf_tensor *a) { return gf_sqrt(a); }
static gf_tensor *op_exp2(const gf_tensor *a) { return gf_exp(a); }

static void a_saved_earlier_then_written_in_place(void) {
    const saving_op ops[] = {op_silu, op_square, op_sqrt, op_exp2};
    const char *const names[] = {"silu", "mul", "sqrt", "exp"};
    const bool saves_input[] = {true, true, false, false}; /* sqrt, exp save their output */
    uint64_t bytes = ag_bytes_in_use();
    for (int i = 0; i < AG_N(ops); i++) {
        for (int with_backward = 0; with_backward <= 1; with_backward++) {
            for (int hooks = 0; hooks <= 1; hooks++) {
                pack_counts cnt = {0, 0, 0};
                gf_saved_tensor_hooks h = {ag_pack_keep, ag_unpack_keep, ag_release_keep, &cnt};
                gf_tensor *x = ag_leaf(self_vals, N);
                gf_tensor *a = gf_mul_scalar(x, 1.0); /* a non-leaf */
                if (hooks) CHECK_OK(gf_saved_tensor_hooks_push(&h));
                gf_tensor *y = ops[i](a);
                CHECK_MSG(y && gf_add_(a, y) == GF_OK, "%s: %s", names[i], gf_last_error());
                if (hooks) CHECK_OK(gf_saved_tensor_hooks_pop());
                gf_tensor_release(y);
                if (with_backward) {
                    gf_status s = ag_backward_ones(a, 0, false);
                    if (hooks || !saves_input[i])
                        CHECK_MSG(s == GF_OK, "%s: %s", names[i], gf_last_error());
                    else CHECK_MSG(s == GF_ERR_AUTOGRAD && strstr(gf_last_error(), "version"),
                                   "%s: %s", names[i], gf_last_error());
                    gf_clear_error();
                }
                gf_tensor_release(a);
                gf_tensor_release(x);
                CHECK_MSG(cnt.releases == cnt.packs && (cnt.packs > 0) == hooks,
                          "%s, backward %d, hooks %d: %d packs, %d releases", names[i],
                          with_backward, hooks, cnt.packs, cnt.releases);
                CHECK_MSG(ag_bytes_in_use() == bytes, "%s, backward %d, hooks %d", names[i],
                          with_backward, hooks);
            }
        }
    }
}

int main(void) {
    RUN(div_into_a_tensor_without_grad_frees_everything);
    RUN(every_family_on_every_kind_of_self);
    RUN(a_saved_earlier_then_written_in_place);
    return ag_finish();
}
