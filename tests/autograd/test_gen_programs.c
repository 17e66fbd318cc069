/* SPDX-License-Identifier: BSD-3-Clause */
/* test_gen_programs.c — generated programs: seeded random chains of in-place
 * writes through views of a tensor with history (narrow, select, slice with
 * a step, transpose, diagonal, and views of those; sixteen in-place ops
 * and a custom function that marks the view dirty),
 * with readouts of views taken before and after the writes, reduced to one
 * number y. Each program is differentiated
 *   - by gf_backward and by gf_grad, which must agree (to rounding);
 *   - against central differences in f64 along random directions;
 *   - to second order: a Hessian-vector product through create_graph (by
 *     gf_grad, or by gf_backward and .grad), the second call without
 *     retain_graph, against differences of gradients;
 *   - in forward mode (graft/forward_ad.h), on dual leaves: the tangent of y
 *     against the reverse-mode directional derivative, and the tangent of
 *     the gradient (forward-over-reverse) against the Hessian-vector
 *     product above.
 * On a device that does not store f64, the program runs in f32 and its
 * gradients are compared with those of the same program on the reference
 * device in f64 (itself checked as above).
 *
 * Environment: GRAFT_GEN_PROGRAMS=n runs n programs (default 400),
 * GRAFT_GEN_FIRST=k starts at program k; a failing program is printed with
 * its number, so GRAFT_GEN_FIRST=k GRAFT_GEN_PROGRAMS=1 reruns it. */
#include <stdarg.h>
#include <stdint.h>

#include "test_rules_util.h"

#define MAXE 25 /* elements of a tensor: at most 5 x 5 */
#define MAXLEAF 16
#define MAXSTEP 8
#define MAXSLOT 8

/* ------------------------------------------------------------ the generator */
static uint64_t rng_next(uint64_t *s) { /* splitmix64 */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static int irand(uint64_t *s, int n) { return (int)(rng_next(s) % (uint64_t)n); }
static double urand(uint64_t *s, double lo, double hi) {
    return lo + (hi - lo) * (double)(rng_next(s) >> 11) / 9007199254740992.0;
}

enum { V_NARROW, V_SELECT, V_STEP, V_TRANSPOSE, V_DIAGONAL, V_KINDS };
typedef struct vop {
    int kind;
    int64_t dim, a, b; /* narrow: start, length; select: index; step: start, step;
                          diagonal: a = offset */
} vop;
typedef struct recipe {
    int n;
    vop op[2];
    int rank;
    int64_t sizes[2];
} recipe;

enum {
    W_MUL_SCALAR, W_ADD_SCALAR, W_ADD, W_SUB, W_MUL, W_DIV, W_TANH, W_SIGMOID, W_EXP, W_RELU,
    W_CLAMP, W_COPY, W_FILL, W_ZERO, W_MASKED_FILL, W_INDEX_ADD, W_CUSTOM, W_OPS
};
static const char *const w_names[] = {"mul_scalar_", "add_scalar_", "add_", "sub_", "mul_",
                                      "div_", "tanh_", "sigmoid_", "exp_", "relu_", "clamp_",
                                      "copy_", "fill_", "zero_", "masked_fill_", "index_add_",
                                      "custom scale_add_"};
enum { SRC_LEAF, SRC_X, SRC_B };                /* a binary op's operand */
enum { R_MUL, R_TANH, R_SIGMOID, R_SCALE, R_N }; /* readout: sum(f(view) * c) */

typedef struct leaf {
    int rank;
    int64_t sizes[2];
    double v[MAXE];
} leaf;

typedef struct step {
    bool write;    /* else a readout */
    int slot;      /* the view */
    bool new_view; /* (re)make the slot's view at this step */
    int op;
    double s, s2;
    int src, leaf; /* operand; leaf: operand or index_add source */
    int k;
    int64_t idx[4];
    uint8_t mask[MAXE];
    int rd;
    double c[MAXE];
} step;

typedef struct prog {
    int64_t R, C;
    bool base_add; /* b = x + leaf 1, else b = x * a */
    double a;
    int n_leaf;
    leaf leaf[MAXLEAF];
    int n_slot;
    recipe slot[MAXSLOT];
    int n_step;
    step st[MAXSTEP];
    double cb[MAXE];
    double cs[MAXSLOT][MAXE];
} prog;

static int64_t numel_of(int rank, const int64_t *sizes) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= sizes[i];
    return n;
}

static void recipe_gen(uint64_t *r, const prog *P, recipe *rc) {
    int rank = 2;
    int64_t sz[2] = {P->R, P->C};
    rc->n = irand(r, 3) ? 1 : 2;
    for (int i = 0; i < rc->n; i++) {
        vop *o = &rc->op[i];
        do o->kind = irand(r, V_KINDS);
        while (rank < 2 && o->kind != V_NARROW && o->kind != V_STEP);
        o->dim = irand(r, rank);
        int64_t n = sz[o->dim];
        switch (o->kind) {
        case V_NARROW:
            o->b = 1 + irand(r, (int)n);
            o->a = irand(r, (int)(n - o->b + 1));
            sz[o->dim] = o->b;
            break;
        case V_SELECT:
            o->a = irand(r, (int)n);
            sz[0] = sz[1 - o->dim];
            rank = 1;
            break;
        case V_STEP:
            o->b = 2 + irand(r, 2);
            o->a = irand(r, (int)(n < o->b ? n : o->b));
            sz[o->dim] = (n - o->a + o->b - 1) / o->b;
            break;
        case V_TRANSPOSE: {
            int64_t t = sz[0];
            sz[0] = sz[1];
            sz[1] = t;
            break;
        }
        default: /* V_DIAGONAL: offset -1, 0 or 1 */
            o->a = irand(r, 3) - 1;
            sz[0] = o->a >= 0 ? (sz[0] < sz[1] - o->a ? sz[0] : sz[1] - o->a)
                              : (sz[0] + o->a < sz[1] ? sz[0] + o->a : sz[1]);
            rank = 1;
            break;
        }
    }
    rc->rank = rank;
    rc->sizes[0] = sz[0];
    rc->sizes[1] = rank == 2 ? sz[1] : 1;
}

static int new_leaf(uint64_t *r, prog *P, int rank, const int64_t *sizes, double lo, double hi,
                    bool random_sign) {
    leaf *l = &P->leaf[P->n_leaf];
    l->rank = rank;
    l->sizes[0] = sizes[0];
    l->sizes[1] = rank == 2 ? sizes[1] : 1;
    for (int64_t i = 0; i < numel_of(rank, sizes); i++)
        l->v[i] = urand(r, lo, hi) * (random_sign && irand(r, 2) ? -1 : 1);
    return P->n_leaf++;
}

/* Picks the view of a step: a new one, or one made earlier (then often
 * stale: its base was written since). */
static void pick_slot(uint64_t *r, prog *P, step *st) {
    if (P->n_slot == 0 || (P->n_slot < MAXSLOT && irand(r, 3) == 0)) {
        recipe_gen(r, P, &P->slot[P->n_slot]);
        st->slot = P->n_slot++;
        st->new_view = true;
    } else {
        st->slot = irand(r, P->n_slot);
        st->new_view = irand(r, 4) == 0;
    }
}

static bool grows(int op) {
    return op == W_MUL_SCALAR || op == W_ADD_SCALAR || op == W_ADD || op == W_SUB ||
           op == W_DIV || op == W_EXP || op == W_INDEX_ADD;
}

/* Program number `id`. `bound` follows a bound of |b| so that values stay
 * moderate (exp_ only on small values, no growth past 20). */
static void prog_gen(uint64_t id, prog *P) {
    uint64_t seed = 0x67726166745f6167ull ^ (id * 0x9e3779b97f4a7c15ull), *r = &seed;
    memset(P, 0, sizeof *P);
    P->R = 3 + irand(r, 3);
    P->C = 3 + irand(r, 3);
    const int64_t bs[2] = {P->R, P->C};
    new_leaf(r, P, 2, bs, -1, 1, false); /* x */
    P->base_add = irand(r, 2);
    P->a = urand(r, 0.5, 1.5);
    double bound = 1.5;
    if (P->base_add) {
        new_leaf(r, P, 2, bs, -1, 1, false);
        bound = 2;
    }
    int writes = 0;
    P->n_step = 3 + irand(r, 5);
    for (int i = 0; i < P->n_step; i++) {
        step *st = &P->st[i];
        st->write = irand(r, 20) < 13 || (i == P->n_step - 1 && writes == 0);
        pick_slot(r, P, st);
        const recipe *rc = &P->slot[st->slot];
        int64_t n = numel_of(rc->rank, rc->sizes);
        if (!st->write) {
            st->rd = irand(r, R_N);
            st->s = urand(r, -2, 2);
            for (int64_t k = 0; k < n; k++) st->c[k] = urand(r, -1, 1);
            continue;
        }
        writes++;
        int op;
        do op = irand(r, W_OPS);
        while ((bound > 20 && grows(op)) || (op == W_EXP && bound > 2.5) ||
               (op == W_INDEX_ADD && P->n_leaf >= MAXLEAF) ||
               ((op == W_ADD || op == W_SUB || op == W_MUL || op == W_DIV || op == W_COPY) &&
                P->n_leaf >= MAXLEAF));
        st->op = op;
        switch (op) {
        case W_MUL_SCALAR:
            st->s = urand(r, -1.5, 1.5);
            bound *= fabs(st->s) > 1 ? fabs(st->s) : 1;
            break;
        case W_ADD_SCALAR:
        case W_FILL:
            st->s = urand(r, -1, 1);
            bound += 1;
            break;
        case W_CUSTOM:
            st->s = urand(r, -1.5, 1.5);
            /* fall through */
        case W_ADD: case W_SUB: case W_MUL: case W_DIV: case W_COPY:
            st->src = irand(r, 3);
            if (st->src == SRC_LEAF)
                st->leaf = op == W_DIV ? new_leaf(r, P, rc->rank, rc->sizes, 0.8, 1.6, true)
                                       : new_leaf(r, P, rc->rank, rc->sizes, -1, 1, false);
            bound = op == W_DIV ? bound * 1.25 : op == W_MUL ? bound : bound + 1.6;
            if (op == W_CUSTOM) bound = bound * 1.5 + 1;
            break;
        case W_EXP: bound = exp(bound); break;
        case W_CLAMP:
            st->s = urand(r, -1, -0.1);
            st->s2 = urand(r, 0.1, 1);
            break;
        case W_MASKED_FILL:
            st->s = urand(r, -1, 1);
            for (int64_t k = 0; k < n; k++) st->mask[k] = (uint8_t)irand(r, 2);
            bound += 1;
            break;
        case W_INDEX_ADD: {
            /* a slot with no rows (a narrow of length 0) gets an empty index */
            st->k = rc->sizes[0] ? 1 + irand(r, 3) : 0;
            for (int k = 0; k < st->k; k++) st->idx[k] = irand(r, (int)rc->sizes[0]);
            int64_t ss[2] = {st->k, rc->sizes[1]};
            st->leaf = new_leaf(r, P, rc->rank, ss, -1, 1, false);
            bound += st->k;
            break;
        }
        default: break;
        }
    }
    for (int k = 0; k < P->R * P->C; k++) P->cb[k] = urand(r, -0.5, 0.5);
    for (int sl = 0; sl < P->n_slot; sl++)
        for (int k = 0; k < MAXE; k++) P->cs[sl][k] = urand(r, -1, 1);
}

static void recipe_print(const recipe *rc) {
    static const char *const names[] = {"narrow", "select", "slice", "transpose", "diagonal"};
    for (int i = 0; i < rc->n; i++) {
        const vop *o = &rc->op[i];
        fprintf(stderr, "%s%s", i ? "." : "", names[o->kind]);
        long long d = o->dim, a = o->a, b = o->b;
        if (o->kind == V_NARROW) fprintf(stderr, "(%lld, %lld, %lld)", d, a, b);
        if (o->kind == V_SELECT) fprintf(stderr, "(%lld, %lld)", d, a);
        if (o->kind == V_STEP) fprintf(stderr, "(%lld, %lld, end, %lld)", d, a, b);
        if (o->kind == V_TRANSPOSE) fprintf(stderr, "(0, 1)");
        if (o->kind == V_DIAGONAL) fprintf(stderr, "(%lld, 0, 1)", (long long)o->a);
    }
}

static void prog_print(const prog *P) {
    static const char *const rd[] = {"v * c", "tanh(v) * c", "sigmoid(v) * c", "v * s"};
    static const char *const src[] = {"leaf", "tanh(view of x)", "sigmoid(view of b)"};
    fprintf(stderr, "  x: [%lld, %lld]; b = %s\n", (long long)P->R, (long long)P->C,
            P->base_add ? "x + leaf 1" : "x * a");
    for (int i = 0; i < P->n_step; i++) {
        const step *st = &P->st[i];
        fprintf(stderr, "  %s view %d%s = ", st->write ? "write" : "read ", st->slot,
                st->new_view ? " (new)" : "");
        recipe_print(&P->slot[st->slot]);
        if (!st->write) fprintf(stderr, ": y += sum(%s)\n", rd[st->rd]);
        else if ((st->op >= W_ADD && st->op <= W_DIV) || st->op == W_COPY || st->op == W_CUSTOM)
            fprintf(stderr, ": %s(%s)\n", w_names[st->op], src[st->src]);
        else
            fprintf(stderr, ": %s\n", w_names[st->op]);
    }
    fprintf(stderr, "  y += sum(b * b * c) + sum(view * c) for each view\n");
}

/* ------------------------------------------------------------ the interpreter */
typedef struct env {
    gf_device *dev;
    gf_dtype dt;
} env;

static gf_tensor *mk(const env *e, const double *v, int rank, const int64_t *sizes) {
    float f[MAXE];
    int64_t n = numel_of(rank, sizes);
    for (int64_t i = 0; i < n; i++) f[i] = (float)v[i];
    return gf_from_data(e->dt == GF_F32 ? (const void *)f : (const void *)v, sizes, rank, e->dt,
                        e->dev);
}

static gf_tensor *view_of(gf_tensor *t, const recipe *rc) {
    for (int i = 0; i < rc->n && t; i++) {
        const vop *o = &rc->op[i];
        switch (o->kind) {
        case V_NARROW: t = gf_narrow(t, (int)o->dim, o->a, o->b); break;
        case V_SELECT: t = gf_select(t, (int)o->dim, o->a); break;
        case V_STEP:
            t = gf_slice(t, (int)o->dim, o->a, gf_tensor_size(t, (int)o->dim), o->b);
            break;
        case V_TRANSPOSE: t = gf_transpose(t, 0, 1); break;
        default: t = gf_diagonal(t, o->a, 0, 1); break;
        }
    }
    return t;
}

typedef struct built {
    gf_tensor *leaves[MAXLEAF];
    gf_tensor *b, *slots[MAXSLOT];
} built;

/* The operand of a binary write, of the view's shape. */
static gf_tensor *operand(const prog *P, const step *st, built *B, const env *e, bool div) {
    const recipe *rc = &P->slot[st->slot];
    gf_tensor *t;
    if (st->src == SRC_LEAF) return B->leaves[st->leaf];
    if (st->src == SRC_X) {
        t = view_of(B->leaves[0], rc);
        t = t ? gf_tanh(t) : NULL;
        if (div && t) t = gf_add_scalar(gf_mul_scalar(t, 0.4), 1.2);
        return t;
    }
    t = view_of(B->b, rc);
    t = t ? gf_sigmoid(t) : NULL;
    return div && t ? gf_add_scalar(t, 1.0) : t;
}

/* A custom function writing in place (rule 20 with gf_ctx_mark_dirty):
 * self = self * s + other, s at def.user. */
/* Its forward-mode rule: t_self * s + t_other. */
static gf_status scale_add_jvp(gf_function_ctx *ctx, gf_tensor *const *in, gf_tensor *const *tin,
                               int n_in, gf_tensor *const *out, gf_tensor **tout, int n_out,
                               void *user) {
    double sc = *(const double *)user;
    gf_scope_begin();
    gf_tensor *r = tin[0] ? gf_mul_scalar(tin[0], sc) : NULL;
    if (tin[1]) r = r ? gf_add(r, tin[1]) : gf_mul_scalar(tin[1], 1.0);
    tout[0] = gf_scope_keep(r);
    gf_scope_end();
    return tout[0] || (!tin[0] && !tin[1]) ? GF_OK : gf_last_status();
}

static gf_status scale_add_fwd(gf_function_ctx *ctx, gf_tensor *const *in, int n_in,
                               gf_tensor **out, int n_out, void *user) {
    gf_status s = gf_ctx_set_jvp(ctx, scale_add_jvp, user);
    if (s == GF_OK) s = gf_mul_scalar_(in[0], *(const double *)user);
    if (s == GF_OK) s = gf_add_(in[0], in[1]);
    if (s == GF_OK) s = gf_ctx_mark_dirty(ctx, in[0]);
    if (s == GF_OK && !(out[0] = gf_tensor_retain(in[0]))) s = gf_last_status();
    return s;
}
static gf_status scale_add_bwd(gf_function_ctx *ctx, gf_tensor *const *go, int n_out,
                               gf_tensor **gi, int n_in, void *user) {
    if (gf_ctx_needs_input_grad(ctx, 0) && !(gi[0] = gf_mul_scalar(go[0], *(const double *)user)))
        return gf_last_status();
    if (gf_ctx_needs_input_grad(ctx, 1)) gi[1] = gf_tensor_retain(go[0]);
    return GF_OK;
}

static gf_status do_write(const prog *P, const step *st, built *B, const env *e, gf_tensor *v) {
    const recipe *rc = &P->slot[st->slot];
    gf_tensor *o;
    switch (st->op) {
    case W_MUL_SCALAR: return gf_mul_scalar_(v, st->s);
    case W_ADD_SCALAR: return gf_add_scalar_(v, st->s);
    case W_ADD: return (o = operand(P, st, B, e, false)) ? gf_add_(v, o) : gf_last_status();
    case W_SUB: return (o = operand(P, st, B, e, false)) ? gf_sub_(v, o) : gf_last_status();
    case W_MUL: return (o = operand(P, st, B, e, false)) ? gf_mul_(v, o) : gf_last_status();
    case W_DIV: return (o = operand(P, st, B, e, true)) ? gf_div_(v, o) : gf_last_status();
    case W_COPY: return (o = operand(P, st, B, e, false)) ? gf_copy_(v, o) : gf_last_status();
    case W_CUSTOM: {
        gf_function_def def = {"ScaleAddInPlace", scale_add_fwd, scale_add_bwd, false,
                               (void *)&st->s};
        gf_tensor *in[2] = {v, operand(P, st, B, e, false)}, *out = NULL;
        if (!in[1]) return gf_last_status();
        return gf_function_apply(&def, in, 2, &out, 1); /* out (v) belongs to the scope */
    }
    case W_TANH: return gf_tanh_(v);
    case W_SIGMOID: return gf_sigmoid_(v);
    case W_EXP: return gf_exp_(v);
    case W_RELU: return gf_relu_(v);
    case W_CLAMP: return gf_clamp_(v, st->s, st->s2);
    case W_FILL: return gf_fill_(v, st->s);
    case W_ZERO: return gf_zero_(v);
    case W_MASKED_FILL: {
        gf_tensor *m = gf_from_data(st->mask, rc->sizes, rc->rank, GF_BOOL, e->dev);
        return m ? gf_masked_fill_(v, m, st->s) : gf_last_status();
    }
    default: { /* W_INDEX_ADD */
        gf_tensor *idx = gf_from_data(st->idx, SZ(st->k), 1, GF_I64, e->dev);
        return idx ? gf_index_add_(v, 0, idx, B->leaves[st->leaf]) : gf_last_status();
    }
    }
}

static gf_tensor *weighted_sum(gf_tensor *t, const double *c, const env *e) {
    gf_tensor *w = mk(e, c, gf_tensor_rank(t), gf_tensor_sizes(t));
    gf_tensor *p = w ? gf_mul(t, w) : NULL;
    return p ? gf_sum(p, NULL, 0, false) : NULL;
}

static gf_tensor *acc_add(gf_tensor *acc, gf_tensor *t) {
    return !t ? NULL : acc ? gf_add(acc, t) : t;
}

/* Runs the program on leaves with values vals (requiring grad when grad):
 * returns y and the leaves in leaves_out (new references), or NULL. Every
 * intermediate lives in a scope and goes at its end. */
static gf_tensor *build_dual(const prog *P, double vals[][MAXE], const env *e, bool grad,
                             gf_tensor **leaves_out, double tan[][MAXE], int level) {
    built B = {0};
    gf_tensor *y = NULL, *own[MAXLEAF] = {0};
    gf_scope_begin();
    for (int i = 0; i < P->n_leaf; i++) {
        own[i] = B.leaves[i] = mk(e, vals[i], P->leaf[i].rank, P->leaf[i].sizes);
        if (!B.leaves[i] || (grad && gf_tensor_set_requires_grad(B.leaves[i], true) != GF_OK))
            goto out;
        /* forward mode: the program runs on dual views of the leaves */
        if (tan && !(B.leaves[i] = gf_fwad_make_dual(
                         own[i], mk(e, tan[i], P->leaf[i].rank, P->leaf[i].sizes), level)))
            goto out;
    }
    B.b = P->base_add ? gf_add(B.leaves[0], B.leaves[1]) : gf_mul_scalar(B.leaves[0], P->a);
    if (!B.b) goto out;
    gf_tensor *acc = NULL;
    for (int i = 0; i < P->n_step; i++) {
        const step *st = &P->st[i];
        if (st->new_view || !B.slots[st->slot])
            B.slots[st->slot] = view_of(B.b, &P->slot[st->slot]);
        gf_tensor *v = B.slots[st->slot];
        if (!v) goto out;
        if (st->write) {
            if (do_write(P, st, &B, e, v) != GF_OK) goto out;
            continue;
        }
        gf_tensor *t = st->rd == R_MUL       ? v
                       : st->rd == R_TANH    ? gf_tanh(v)
                       : st->rd == R_SIGMOID ? gf_sigmoid(v)
                                             : gf_mul_scalar(v, st->s);
        if (!t || !(acc = acc_add(acc, weighted_sum(t, st->c, e)))) goto out;
    }
    gf_tensor *bb = gf_mul(B.b, B.b);
    if (!bb || !(acc = acc_add(acc, weighted_sum(bb, P->cb, e)))) goto out;
    for (int sl = 0; sl < P->n_slot; sl++)
        if (B.slots[sl] && !(acc = acc_add(acc, weighted_sum(B.slots[sl], P->cs[sl], e)))) goto out;
    y = gf_scope_keep(acc);
    for (int i = 0; i < P->n_leaf; i++) leaves_out[i] = gf_scope_keep(own[i]);
out:
    gf_scope_end();
    return y;
}

static gf_tensor *build(const prog *P, double vals[][MAXE], const env *e, bool grad,
                        gf_tensor **leaves_out) {
    return build_dual(P, vals, e, grad, leaves_out, NULL, 0);
}

static void release_leaves(const prog *P, gf_tensor **leaves) {
    for (int i = 0; i < P->n_leaf; i++) {
        gf_tensor_release(leaves[i]);
        leaves[i] = NULL;
    }
}

/* ------------------------------------------------------------ evaluations */
typedef double vec[MAXLEAF][MAXE];
static char g_err[512];

static gf_status fail(const char *what) {
    snprintf(g_err, sizeof g_err, "%s: %s", what, gf_last_error());
    return gf_last_status() != GF_OK ? gf_last_status() : GF_ERR_AUTOGRAD;
}

static gf_status eval_value(const prog *P, vec vals, const env *e, double *y) {
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    gf_tensor *leaves[MAXLEAF] = {0};
    gf_tensor *t = build(P, vals, e, false, leaves);
    gf_grad_mode_set(prev);
    gf_status s = t ? GF_OK : fail("forward");
    if (t) *y = ag_item(t);
    gf_tensor_release(t);
    release_leaves(P, leaves);
    return s;
}

/* Reads t (f32 or f64: a device may store no f64) as doubles. */
static int64_t read_host(const gf_tensor *t, double *out) {
    int64_t n = gf_tensor_numel(t);
    if (n > MAXE) return -1;
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    gf_tensor *c = gf_contiguous(t);
    float f[MAXE];
    bool f32 = gf_tensor_dtype(t) == GF_F32;
    gf_status s = !c ? gf_last_status()
                     : gf_tensor_to_host(c, f32 ? (void *)f : (void *)out,
                                         (size_t)n * (f32 ? sizeof(float) : sizeof(double)));
    for (int64_t i = 0; f32 && i < n; i++) out[i] = f[i];
    gf_tensor_release(c);
    gf_grad_mode_set(prev);
    return s == GF_OK ? n : -1;
}

static gf_status read_all(const prog *P, gf_tensor **g, vec out) {
    for (int i = 0; i < P->n_leaf; i++) {
        int64_t n = numel_of(P->leaf[i].rank, P->leaf[i].sizes);
        if (!g[i]) {
            for (int64_t k = 0; k < n; k++) out[i][k] = 0;
        } else if (read_host(g[i], out[i]) != n) {
            return fail("reading a gradient");
        }
    }
    return GF_OK;
}

/* y and its gradient by gf_backward (use_grad false) or gf_grad. */
static gf_status eval_grad(const prog *P, vec vals, const env *e, bool use_grad, double *y, vec g) {
    gf_tensor *leaves[MAXLEAF] = {0}, *r[MAXLEAF] = {0};
    gf_tensor *t = build(P, vals, e, true, leaves);
    gf_status s = t ? GF_OK : fail("forward");
    if (s == GF_OK) *y = ag_item(t);
    if (s == GF_OK && !use_grad) {
        if ((s = gf_backward(t, NULL, NULL)) != GF_OK) s = fail("gf_backward");
        for (int i = 0; i < P->n_leaf && s == GF_OK; i++) r[i] = gf_tensor_grad(leaves[i]);
    } else if (s == GF_OK) {
        gf_grad_opts o = {.retain_graph = -1, .allow_unused = true, .materialize_grads = true};
        if ((s = gf_grad(&t, 1, NULL, leaves, P->n_leaf, r, &o)) != GF_OK) s = fail("gf_grad");
    }
    if (s == GF_OK) s = read_all(P, r, g);
    release_leaves(P, r);
    release_leaves(P, leaves);
    gf_tensor_release(t);
    return s;
}

/* The Hessian times d: g = dy/dleaves with create_graph (by gf_grad, or by
 * gf_backward into .grad), then d(sum_i g_i . d_i)/dleaves by gf_grad
 * without retain_graph. */
static gf_status eval_hvp(const prog *P, vec vals, const env *e, vec d, bool via_backward, vec hd) {
    gf_tensor *leaves[MAXLEAF] = {0}, *g[MAXLEAF] = {0}, *h[MAXLEAF] = {0};
    gf_tensor *t = build(P, vals, e, true, leaves), *s_t = NULL;
    gf_status s = t ? GF_OK : fail("forward");
    if (s == GF_OK && via_backward) {
        gf_backward_opts o = {.retain_graph = -1, .create_graph = true};
        if ((s = gf_backward(t, NULL, &o)) != GF_OK) s = fail("gf_backward with create_graph");
        for (int i = 0; i < P->n_leaf && s == GF_OK; i++) g[i] = gf_tensor_grad(leaves[i]);
    } else if (s == GF_OK) {
        gf_grad_opts o = {.retain_graph = -1, .create_graph = true, .allow_unused = true};
        if ((s = gf_grad(&t, 1, NULL, leaves, P->n_leaf, g, &o)) != GF_OK)
            s = fail("gf_grad with create_graph");
    }
    gf_tensor_release(t);
    gf_scope_begin(); /* the contraction's intermediates */
    for (int i = 0; i < P->n_leaf && s == GF_OK; i++) {
        if (!g[i]) continue;
        gf_tensor *w = weighted_sum(g[i], d[i], e);
        if (!w || !(s_t = acc_add(s_t, w))) s = fail("contracting the gradient");
    }
    s_t = s == GF_OK && s_t ? gf_scope_keep(s_t) : NULL;
    gf_scope_end();
    for (int i = 0; i < P->n_leaf && s == GF_OK; i++) {
        int64_t n = numel_of(P->leaf[i].rank, P->leaf[i].sizes);
        for (int64_t k = 0; k < n; k++) hd[i][k] = 0;
    }
    if (s == GF_OK && s_t && gf_tensor_requires_grad(s_t)) {
        gf_grad_opts o = {.retain_graph = -1, .allow_unused = true, .materialize_grads = true};
        if ((s = gf_grad(&s_t, 1, NULL, leaves, P->n_leaf, h, &o)) != GF_OK)
            s = fail("second gf_grad (without retain_graph)");
        if (s == GF_OK) s = read_all(P, h, hd);
    }
    /* .grad with history refers to the graph, which refers to the leaves. */
    for (int i = 0; i < P->n_leaf; i++)
        if (via_backward && leaves[i]) gf_tensor_set_grad(leaves[i], NULL);
    gf_tensor_release(s_t);
    release_leaves(P, h);
    release_leaves(P, g);
    release_leaves(P, leaves);
    return s;
}

/* Forward mode: on leaves with tangents d at a dual level of its own, the
 * tangent of y (*jv, the directional derivative along d) and, when hd is
 * not NULL, the tangent of the gradient (forward-over-reverse: H d). */
static gf_status eval_forward(const prog *P, vec vals, const env *e, vec d, double *jv, vec hd) {
    int level;
    if (gf_fwad_level_enter(&level) != GF_OK) return fail("gf_fwad_level_enter");
    gf_tensor *leaves[MAXLEAF] = {0}, *g[MAXLEAF] = {0}, *tg[MAXLEAF] = {0}, *ty = NULL;
    gf_tensor *t = build_dual(P, vals, e, hd != NULL, leaves, d, level);
    gf_status s = t ? GF_OK : fail("forward on dual leaves");
    if (s == GF_OK && (s = gf_fwad_unpack_dual(t, level, NULL, &ty)) != GF_OK)
        s = fail("gf_fwad_unpack_dual");
    if (s == GF_OK) *jv = ty ? ag_item(ty) : 0.0;
    if (s == GF_OK && hd) {
        gf_grad_opts o = {.retain_graph = -1, .allow_unused = true, .materialize_grads = true};
        if ((s = gf_grad(&t, 1, NULL, leaves, P->n_leaf, g, &o)) != GF_OK)
            s = fail("gf_grad from dual leaves");
        for (int i = 0; i < P->n_leaf && s == GF_OK; i++)
            if (gf_fwad_unpack_dual(g[i], level, NULL, &tg[i]) != GF_OK)
                s = fail("the gradient's tangent");
        if (s == GF_OK) s = read_all(P, tg, hd);
    }
    gf_tensor_release(ty);
    release_leaves(P, tg);
    release_leaves(P, g);
    release_leaves(P, leaves);
    gf_tensor_release(t);
    if (gf_fwad_level_exit(level) != GF_OK && s == GF_OK) s = fail("gf_fwad_level_exit");
    return s;
}

/* ------------------------------------------------------------ checks */
static gf_device *g_dev, *g_ref;
static int g_failed_programs;

typedef struct verdict {
    long id;
    bool failed;
} verdict;

static void bad(verdict *v, const prog *P, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void bad(verdict *v, const prog *P, const char *fmt, ...) {
    if (!v->failed) {
        fprintf(stderr, "program %ld failed (rerun: GRAFT_GEN_FIRST=%ld GRAFT_GEN_PROGRAMS=1):\n",
                v->id, v->id);
        prog_print(P);
    }
    v->failed = true;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "  ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
}

static int64_t leaf_n(const prog *P, int i) { return numel_of(P->leaf[i].rank, P->leaf[i].sizes); }

/* a and b agree elementwise within atol + rtol * scale, scale the largest |b|. */
static void compare(verdict *v, const prog *P, const char *what, vec a, vec b, double atol,
                    double rtol) {
    double scale = 0;
    for (int i = 0; i < P->n_leaf; i++)
        for (int64_t k = 0; k < leaf_n(P, i); k++) scale = fmax(scale, fabs(b[i][k]));
    for (int i = 0; i < P->n_leaf; i++)
        for (int64_t k = 0; k < leaf_n(P, i); k++)
            if (!(fabs(a[i][k] - b[i][k]) <= atol + rtol * scale)) {
                bad(v, P, "%s: leaf %d element %lld: %.12g vs %.12g", what, i, (long long)k,
                    a[i][k], b[i][k]);
                return;
            }
}

static void random_dir(uint64_t *r, const prog *P, vec d) {
    for (int i = 0; i < P->n_leaf; i++)
        for (int64_t k = 0; k < leaf_n(P, i); k++) d[i][k] = urand(r, -1, 1);
}

static void shifted(const prog *P, vec base, vec d, double eps, vec out) {
    for (int i = 0; i < P->n_leaf; i++)
        for (int64_t k = 0; k < leaf_n(P, i); k++) out[i][k] = base[i][k] + eps * d[i][k];
}

/* The f64 checks of one program on device dev: gf_grad against gf_backward,
 * both against central differences, and the Hessian-vector product against
 * differences of gradients. Leaves g and hd (for direction d) to the caller. */
static void check_f64(verdict *v, const prog *P, gf_device *dev, vec g, vec d, vec hd) {
    const env e = {dev, GF_F64};
    vec vals, g2, p, m, gp, gm;
    uint64_t seed = 0x646972ull + (uint64_t)v->id, *r = &seed;
    for (int i = 0; i < P->n_leaf; i++) memcpy(vals[i], P->leaf[i].v, sizeof vals[i]);
    double y = 0, y2 = 0;
    if (eval_grad(P, vals, &e, false, &y, g) != GF_OK) {
        bad(v, P, "%s", g_err);
        return;
    }
    if (eval_grad(P, vals, &e, true, &y2, g2) != GF_OK) {
        bad(v, P, "%s", g_err);
        return;
    }
    if (y != y2) bad(v, P, "y differs between two runs: %.17g, %.17g", y, y2);
    compare(v, P, "gf_grad vs gf_backward", g2, g, 1e-12, 1e-10);
    const double eps = 1e-6;
    for (int dir = 0; dir < 2; dir++) {
        vec dd;
        random_dir(r, P, dd);
        double fp, fm, an = 0, mag = 0;
        shifted(P, vals, dd, eps, p);
        shifted(P, vals, dd, -eps, m);
        if (eval_value(P, p, &e, &fp) != GF_OK || eval_value(P, m, &e, &fm) != GF_OK) {
            bad(v, P, "%s", g_err);
            return;
        }
        for (int i = 0; i < P->n_leaf; i++)
            for (int64_t k = 0; k < leaf_n(P, i); k++) {
                an += g[i][k] * dd[i][k];
                mag += fabs(g[i][k] * dd[i][k]);
            }
        double fd = (fp - fm) / (2 * eps);
        if (!(fabs(fd - an) <= 1e-6 * (1 + mag + fabs(y))))
            bad(v, P, "directional derivative %d: analytical %.12g, central differences %.12g", dir,
                an, fd);
        double jv = 0;
        if (eval_forward(P, vals, &e, dd, &jv, NULL) != GF_OK) {
            bad(v, P, "%s", g_err);
            return;
        }
        if (!(fabs(jv - an) <= 1e-10 * (1 + mag)))
            bad(v, P, "directional derivative %d: forward mode (jvp) %.15g, reverse mode %.15g",
                dir, jv, an);
    }
    random_dir(r, P, d);
    if (eval_hvp(P, vals, &e, d, v->id % 2 == 1, hd) != GF_OK) {
        bad(v, P, "%s", g_err);
        return;
    }
    shifted(P, vals, d, eps, p);
    shifted(P, vals, d, -eps, m);
    double yp, ym;
    if (eval_grad(P, p, &e, false, &yp, gp) != GF_OK ||
        eval_grad(P, m, &e, false, &ym, gm) != GF_OK) {
        bad(v, P, "%s", g_err);
        return;
    }
    vec fd;
    double gscale = 0;
    for (int i = 0; i < P->n_leaf; i++)
        for (int64_t k = 0; k < leaf_n(P, i); k++) {
            fd[i][k] = (gp[i][k] - gm[i][k]) / (2 * eps);
            gscale = fmax(gscale, fabs(g[i][k]));
        }
    compare(v, P, v->id % 2 ? "Hessian-vector product (gf_backward, create_graph) vs differences"
                            : "Hessian-vector product (gf_grad, create_graph) vs differences",
            hd, fd, 1e-6 * (1 + gscale), 1e-6);
    vec hf;
    double jv = 0;
    if (eval_forward(P, vals, &e, d, &jv, hf) != GF_OK) {
        bad(v, P, "%s", g_err);
        return;
    }
    compare(v, P, "Hessian-vector product: forward-over-reverse vs double backward", hf, hd,
            1e-10 * (1 + gscale), 1e-9);
}

/* A device without f64: the program in f32 there against the reference
 * device's f64 results. */
static void check_f32(verdict *v, const prog *P, vec g64, vec d, vec hd64) {
    const env e = {g_dev, GF_F32};
    vec vals, g, g2, hd;
    for (int i = 0; i < P->n_leaf; i++) memcpy(vals[i], P->leaf[i].v, sizeof vals[i]);
    double y, y2;
    if (eval_grad(P, vals, &e, false, &y, g) != GF_OK) {
        bad(v, P, "f32: %s", g_err);
        return;
    }
    if (eval_grad(P, vals, &e, true, &y2, g2) != GF_OK) {
        bad(v, P, "f32: %s", g_err);
        return;
    }
    compare(v, P, "f32: gf_grad vs gf_backward", g2, g, 1e-6, 1e-5);
    compare(v, P, "f32 gradient vs the reference device's f64", g, g64, 1e-4, 2e-3);
    if (eval_hvp(P, vals, &e, d, v->id % 2 == 1, hd) != GF_OK) {
        bad(v, P, "f32: %s", g_err);
        return;
    }
    compare(v, P, "f32 Hessian-vector product vs the reference device's f64", hd, hd64, 1e-3, 5e-3);
}

static long env_long(const char *name, long def) {
    const char *s = getenv(name);
    return s && *s ? strtol(s, NULL, 10) : def;
}

int main(void) {
    int dev = ag_device_check();
    if (dev) return dev;
    g_dev = gf_device_default();
    for (int i = 0; i < gf_device_count() && !g_ref; i++)
        if (!strcmp(gf_device_plugin(gf_device_at(i)), "reference")) g_ref = gf_device_at(i);
    gf_device_info info;
    CHECK_OK(gf_device_get_info(g_dev, &info));
    bool f64 = (info.dtypes & (1u << GF_F64)) != 0;
    if (!f64 && !g_ref) {
        fprintf(stderr, "FAILED: %s has no f64 and the reference plugin is not loaded (run with "
                "GRAFT_PLUGINS=<plugin>,reference)\n", gf_device_spec(g_dev));
        return 1;
    }
    long first = env_long("GRAFT_GEN_FIRST", 0), count = env_long("GRAFT_GEN_PROGRAMS", 400);
    fprintf(stderr, "programs %ld..%ld in %s on %s%s\n", first, first + count - 1,
            f64 ? "f64" : "f32", gf_device_spec(g_dev),
            f64 ? "" : " (against the reference device in f64)");
    long writes = 0, views[V_KINDS] = {0}, ops[W_OPS] = {0};
    for (long id = first; id < first + count; id++) {
        prog P;
        prog_gen((uint64_t)id, &P);
        for (int i = 0; i < P.n_step; i++)
            if (P.st[i].write) {
                writes++;
                ops[P.st[i].op]++;
                const recipe *rc = &P.slot[P.st[i].slot];
                for (int k = 0; k < rc->n; k++) views[rc->op[k].kind]++;
            }
        verdict v = {id, false};
        vec g, d, hd;
        check_f64(&v, &P, f64 ? g_dev : g_ref, g, d, hd);
        if (!f64 && !v.failed) check_f32(&v, &P, g, d, hd);
        g_failed_programs += v.failed;
        CHECK(!v.failed);
    }
    fprintf(stderr, "%ld programs, %ld in-place writes through views (narrow %ld, select %ld, "
            "step slice %ld, transpose %ld, diagonal %ld); %d failed\n", count, writes,
            views[V_NARROW], views[V_SELECT], views[V_STEP], views[V_TRANSPOSE], views[V_DIAGONAL],
            g_failed_programs);
    for (int o = 0; o < W_OPS; o++)
        CHECK_MSG(count < 100 || ops[o] > 0, "no program wrote with %s", w_names[o]);
    return ag_finish();
}
