/* SPDX-License-Identifier: BSD-3-Clause */
/* test_grad_reduce_linalg.c — backward formulas of the reductions (sum, mean,
 * prod, amax, amin, var, std, logsumexp, max_dim, min_dim, argmax/argmin),
 * matmul, softmax and log_softmax.
 *
 * Each op runs gf_gradcheck and gf_gradgradcheck in f64 over dims lists of
 * one dim, several dims and all dims, keepdim true and false, negative dims,
 * on contiguous leaves, transposed (non-contiguous) leaves, inputs transposed
 * inside the function and broadcast-expanded inputs; matmul in every shape
 * case of torch.matmul. Values for amax/amin/max_dim are distinct (no ties),
 * and ties are pinned separately with exact values. Closed-form gradients are
 * computed here in plain C doubles, never through graft. A loose f32
 * first-order gradcheck covers sum, mean, matmul and softmax, and what each
 * node saves is pinned by modifying an input in place before backward. */
#include <graft.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "check.h"

#define SZ(...) ((const int64_t[]){__VA_ARGS__})
#define DV(...) ((const double[]){__VA_ARGS__})
#define MAXN 128

static int64_t numel(int rank, const int64_t *sizes) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= sizes[i];
    return n;
}

/* Distinct values, at least 0.05 apart (no ties, so amax/max_dim are smooth
 * well beyond the finite-difference step). Kind V_PROD: magnitudes in
 * [0.5, 1.5] with mixed signs, so products stay moderate and away from 0. */
enum { V_ANY, V_PROD };
static double value(int kind, int64_t i, int off) {
    int64_t k = ((i + off) * 62) % 97; /* a permutation of 0..96 */
    if (kind == V_PROD) return (0.5 + (double)k / 97.0) * ((i % 3) ? 1.0 : -1.0);
    return ((double)k - 48.5) / 20.0;
}

static gf_tensor *make(gf_dtype dt, int rank, const int64_t *sizes, const double *v, bool rg) {
    gf_tensor *d = gf_from_data(v, sizes, rank, GF_F64, NULL);
    gf_tensor *t = d ? gf_to_dtype(d, dt) : NULL;
    gf_tensor_release(d);
    CHECK_MSG(t != NULL, "%s", gf_last_error());
    if (t && rg) CHECK(gf_tensor_set_requires_grad(t, true) == GF_OK);
    return t;
}

/* A contiguous leaf requiring grad. */
static gf_tensor *leaf(gf_dtype dt, int rank, const int64_t *sizes, int kind, int off) {
    double v[MAXN];
    int64_t n = numel(rank, sizes);
    for (int64_t i = 0; i < n; i++) v[i] = value(kind, i, off);
    return make(dt, rank, sizes, v, true);
}

/* A non-contiguous leaf of the given sizes: storage laid out with dims d0 and
 * d1 swapped, seen through a transpose. */
static gf_tensor *leaf_transposed(gf_dtype dt, int rank, const int64_t *sizes, int d0, int d1,
                                  int kind, int off) {
    int64_t st[8];
    for (int i = 0; i < rank; i++) st[i] = sizes[i];
    st[d0] = sizes[d1];
    st[d1] = sizes[d0];
    double v[MAXN];
    int64_t n = numel(rank, sizes);
    for (int64_t i = 0; i < n; i++) v[i] = value(kind, i, off);
    gf_tensor *base = make(dt, rank, st, v, false);
    gf_tensor *tv = base ? gf_transpose(base, d0, d1) : NULL;
    gf_tensor *t = tv ? gf_detach(tv) : NULL;
    gf_tensor_release(base);
    gf_tensor_release(tv);
    CHECK(t && !gf_tensor_is_contiguous(t));
    if (t) CHECK(gf_tensor_set_requires_grad(t, true) == GF_OK);
    return t;
}

static void read(const gf_tensor *t, double *out, int64_t n) {
    CHECK(t != NULL);
    if (!t) return;
    CHECK(gf_tensor_numel(t) == n);
    gf_tensor *d = gf_to_dtype(t, GF_F64);
    CHECK(d && gf_tensor_to_host(d, out, (size_t)n * sizeof(double)) == GF_OK);
    gf_tensor_release(d);
}

static void check_vals(const gf_tensor *t, const double *want, int64_t n, double tol) {
    double got[MAXN];
    for (int64_t i = 0; i < n; i++) got[i] = NAN;
    read(t, got, n);
    for (int64_t i = 0; i < n; i++) CHECK_CLOSE(got[i], want[i], tol);
}

static void check_shape(const gf_tensor *t, int rank, const int64_t *sizes) {
    CHECK(t != NULL);
    if (!t) return;
    CHECK(gf_tensor_rank(t) == rank);
    for (int i = 0; i < rank && gf_tensor_rank(t) == rank; i++)
        CHECK(gf_tensor_sizes(t)[i] == sizes[i]);
}

/* x.grad after backward of sum(y); consumes y. */
static gf_tensor *grad_of_sum(gf_tensor *y, gf_tensor *x) {
    CHECK_MSG(y != NULL, "%s", gf_last_error());
    gf_tensor *s = y ? gf_sum(y, NULL, 0, false) : NULL;
    CHECK_MSG(s && gf_backward(s, NULL, NULL) == GF_OK, "%s", gf_last_error());
    gf_tensor_release(s);
    gf_tensor_release(y);
    return gf_tensor_grad(x);
}

/* ------------------------------------------------------------ the op under test */
typedef enum {
    OP_SUM, OP_MEAN, OP_PROD, OP_AMAX, OP_AMIN, OP_VAR, OP_STD, OP_LSE, OP_MAXDIM, OP_MINDIM,
    OP_SOFTMAX, OP_LOGSOFTMAX, OP_MATMUL
} opk;
static const char *const OP_NAMES[] = {"sum", "mean", "prod", "amax", "amin", "var", "std",
                                       "logsumexp", "max_dim", "min_dim", "softmax",
                                       "log_softmax", "matmul"};

/* How an input reaches the op inside the function. */
enum { PRE_NONE, PRE_TRANSPOSE, PRE_EXPAND };
typedef struct pre {
    int kind;
    int d0, d1;         /* PRE_TRANSPOSE */
    int rank;           /* PRE_EXPAND: target shape */
    int64_t sizes[8];
} pre;

typedef struct tcase {
    opk op;
    int dims[8], nd;    /* reductions */
    bool keepdim;
    double correction;  /* var, std */
    int dim;            /* max_dim, min_dim, softmax */
    pre p[2];           /* per input */
    char label[160];
} tcase;

static gf_tensor *prepare(const pre *p, gf_tensor *x) {
    if (p->kind == PRE_TRANSPOSE) return gf_transpose(x, p->d0, p->d1);
    if (p->kind == PRE_EXPAND) return gf_expand(x, p->sizes, p->rank);
    return x;
}

static gf_tensor *apply(const tcase *c, gf_tensor *x, gf_tensor *b) {
    const int *d = c->dims;
    gf_tensor *v = NULL, *ix = NULL;
    switch (c->op) {
    case OP_SUM: return gf_sum(x, d, c->nd, c->keepdim);
    case OP_MEAN: return gf_mean(x, d, c->nd, c->keepdim);
    case OP_PROD: return gf_prod(x, d, c->nd, c->keepdim);
    case OP_AMAX: return gf_amax(x, d, c->nd, c->keepdim);
    case OP_AMIN: return gf_amin(x, d, c->nd, c->keepdim);
    case OP_VAR: return gf_var(x, d, c->nd, c->correction, c->keepdim);
    case OP_STD: return gf_std(x, d, c->nd, c->correction, c->keepdim);
    case OP_LSE: return gf_logsumexp(x, d, c->nd, c->keepdim);
    case OP_MAXDIM: gf_max_dim(x, c->dim, c->keepdim, &v, &ix); return v;
    case OP_MINDIM: gf_min_dim(x, c->dim, c->keepdim, &v, &ix); return v;
    case OP_SOFTMAX: return gf_softmax(x, c->dim);
    case OP_LOGSOFTMAX: return gf_log_softmax(x, c->dim);
    case OP_MATMUL: return gf_matmul(x, b);
    }
    return NULL;
}

/* The gradcheck function: intermediates live in a scope of their own. */
static gf_tensor *fn(gf_tensor *const *in, int n, void *user) {
    const tcase *c = user;
    gf_scope_begin();
    gf_tensor *a = prepare(&c->p[0], in[0]);
    gf_tensor *b = n > 1 ? prepare(&c->p[1], in[1]) : NULL;
    gf_tensor *r = gf_scope_keep(apply(c, a, b));
    gf_scope_end();
    return r;
}

static void run_checks(tcase *c, gf_tensor *const *in, int n, const gf_gradcheck_opts *o,
                       bool second_order) {
    for (int i = 0; i < n; i++) CHECK(in[i] != NULL);
    for (int i = 0; i < n; i++)
        if (!in[i]) return;
    gf_status s = gf_gradcheck(fn, in, n, c, o);
    CHECK_MSG(s == GF_OK, "gradcheck %s: %s", c->label, gf_last_error());
    if (!second_order) return;
    s = gf_gradgradcheck(fn, in, n, c, o);
    CHECK_MSG(s == GF_OK, "gradgradcheck %s: %s", c->label, gf_last_error());
}

/* ------------------------------------------------------------ reductions */
/* Dims lists over a [2, 3, 4] input: one dim, several, all (empty list and
 * explicit), negative dims, keepdim both ways. */
typedef struct dimspec {
    int dims[3], nd;
    bool keepdim;
} dimspec;
static const dimspec DIMS3[] = {
    {{1}, 1, false},       {{-1}, 1, true},        {{0, 2}, 2, false}, {{-1, 0}, 2, true},
    {{0}, 0, false},       {{0, 1, 2}, 3, true},   {{-3, 1, -1}, 3, false}, {{2, 1}, 2, true},
};
#define N_DIMS3 ((int)(sizeof DIMS3 / sizeof DIMS3[0]))

/* Input layouts for a logical [2, 3, 4] input. */
enum { L_CONTIG, L_TLEAF, L_TFN, L_EXP_LEAD, L_EXP_MID, N_LAYOUTS };
static const char *const LAYOUT_NAMES[] = {"contiguous", "transposed leaf",
                                           "transposed in fn", "expanded [3,4]",
                                           "expanded [2,1,4]"};

/* The leaf for layout l (logical [2,3,4] after prepare) and its pre step. */
static gf_tensor *layout_input(int l, int kind, int off, pre *p) {
    *p = (pre){.kind = PRE_NONE};
    switch (l) {
    case L_CONTIG: return leaf(GF_F64, 3, SZ(2, 3, 4), kind, off);
    case L_TLEAF: return leaf_transposed(GF_F64, 3, SZ(2, 3, 4), 0, 2, kind, off);
    case L_TFN:
        *p = (pre){.kind = PRE_TRANSPOSE, .d0 = 0, .d1 = 1};
        return leaf(GF_F64, 3, SZ(3, 2, 4), kind, off);
    case L_EXP_LEAD:
        *p = (pre){.kind = PRE_EXPAND, .rank = 3, .sizes = {2, 3, 4}};
        return leaf(GF_F64, 2, SZ(3, 4), kind, off);
    default:
        *p = (pre){.kind = PRE_EXPAND, .rank = 3, .sizes = {2, 3, 4}};
        return leaf(GF_F64, 3, SZ(2, 1, 4), kind, off);
    }
}

static void check_reduction(opk op, int kind, double correction) {
    for (int l = 0; l < N_LAYOUTS; l++) {
        for (int k = 0; k < N_DIMS3; k++) {
            tcase c = {.op = op, .nd = DIMS3[k].nd, .keepdim = DIMS3[k].keepdim,
                       .correction = correction};
            for (int i = 0; i < c.nd; i++) c.dims[i] = DIMS3[k].dims[i];
            /* std' is infinite where a slice is constant (sqrt'(0)): skip
             * the dims that only run along a broadcast (stride-0) dim. */
            if (op == OP_STD && l == L_EXP_MID && c.nd == 1 && c.dims[0] == 1) continue;
            snprintf(c.label, sizeof c.label, "%s dims #%d keepdim %d corr %g, %s",
                     OP_NAMES[op], k, c.keepdim, correction, LAYOUT_NAMES[l]);
            gf_tensor *x = layout_input(l, kind, k, &c.p[0]);
            run_checks(&c, &x, 1, NULL, true);
            gf_tensor_release(x);
        }
    }
}

/* 0-dim and 1-D inputs (dim 0 / -1 / all). */
static void check_reduction_small(opk op, int kind, double correction) {
    static const dimspec D[] = {{{0}, 0, false}, {{0}, 1, true}, {{-1}, 1, false}};
    for (int r = 0; r <= 1; r++) {
        for (int k = 0; k < 3; k++) {
            tcase c = {.op = op, .nd = D[k].nd, .keepdim = D[k].keepdim,
                       .correction = correction};
            for (int i = 0; i < c.nd; i++) c.dims[i] = D[k].dims[i];
            snprintf(c.label, sizeof c.label, "%s rank %d dims #%d", OP_NAMES[op], r, k);
            gf_tensor *x = leaf(GF_F64, r, SZ(5), kind, 3 + k);
            run_checks(&c, &x, 1, NULL, true);
            gf_tensor_release(x);
        }
    }
}

static void test_sum(void) {
    check_reduction(OP_SUM, V_ANY, 0);
    check_reduction_small(OP_SUM, V_ANY, 0);
}
static void test_mean(void) {
    check_reduction(OP_MEAN, V_ANY, 0);
    check_reduction_small(OP_MEAN, V_ANY, 0);
}
static void test_prod(void) {
    check_reduction(OP_PROD, V_PROD, 0);
    check_reduction_small(OP_PROD, V_PROD, 0);
}
static void test_amax(void) {
    check_reduction(OP_AMAX, V_ANY, 0);
    check_reduction_small(OP_AMAX, V_ANY, 0);
}
static void test_amin(void) {
    check_reduction(OP_AMIN, V_ANY, 0);
    check_reduction_small(OP_AMIN, V_ANY, 0);
}
static void test_var(void) {
    check_reduction(OP_VAR, V_ANY, 1.0);
    check_reduction(OP_VAR, V_ANY, 0.0);
    check_reduction_small(OP_VAR, V_ANY, 0.0);
    /* A fractional correction, over dims with more than 3 elements. */
    tcase c = {.op = OP_VAR, .dims = {0, 2}, .nd = 2, .correction = 2.5, .label = "var corr 2.5"};
    gf_tensor *x = leaf(GF_F64, 3, SZ(2, 3, 4), V_ANY, 1);
    run_checks(&c, &x, 1, NULL, true);
    gf_tensor_release(x);
}
static void test_std(void) {
    check_reduction(OP_STD, V_ANY, 1.0);
    check_reduction(OP_STD, V_ANY, 0.0);
    /* std has a node of its own (its gradient at zero variance is 0). */
    gf_tensor *x = leaf(GF_F64, 2, SZ(3, 4), V_ANY, 0);
    gf_tensor *s = gf_std(x, (const int[]){1}, 1, 1.0, false);
    CHECK_MSG(s != NULL, "%s", gf_last_error());
    const char *name = gf_tensor_grad_fn_name(s);
    CHECK_MSG(name && !strcmp(name, "StdBackward"), "std's grad_fn is %s", name ? name : "(none)");
    gf_tensor_release(s);
    gf_tensor_release(x);
}
static void test_logsumexp(void) {
    check_reduction(OP_LSE, V_ANY, 0);
    check_reduction_small(OP_LSE, V_ANY, 0);
}

/* max_dim / min_dim over every dim (positive and negative) and layout. */
static void check_extreme_dim(opk op) {
    static const int DIM[] = {0, 1, 2, -1, -3};
    for (int l = 0; l < N_LAYOUTS; l++) {
        for (int k = 0; k < 5; k++) {
            for (int keep = 0; keep <= 1; keep++) {
                tcase c = {.op = op, .dim = DIM[k], .keepdim = keep};
                snprintf(c.label, sizeof c.label, "%s dim %d keepdim %d, %s", OP_NAMES[op],
                         DIM[k], keep, LAYOUT_NAMES[l]);
                gf_tensor *x = layout_input(l, V_ANY, k, &c.p[0]);
                run_checks(&c, &x, 1, NULL, true);
                gf_tensor_release(x);
            }
        }
    }
    for (int r = 0; r <= 1; r++) {
        tcase c = {.op = op, .dim = -1, .keepdim = r};
        snprintf(c.label, sizeof c.label, "%s rank %d", OP_NAMES[op], r);
        gf_tensor *x = leaf(GF_F64, r, SZ(5), V_ANY, 2);
        run_checks(&c, &x, 1, NULL, true);
        gf_tensor_release(x);
    }
}
static void test_max_dim(void) { check_extreme_dim(OP_MAXDIM); }
static void test_min_dim(void) { check_extreme_dim(OP_MINDIM); }

/* Indices are i64 and carry no history; argmax/argmin neither. */
static void test_indices_no_grad(void) {
    gf_tensor *x = leaf(GF_F64, 2, SZ(3, 4), V_ANY, 0);
    gf_tensor *v = NULL, *ix = NULL;
    CHECK(gf_max_dim(x, 1, false, &v, &ix) == GF_OK);
    CHECK(v && gf_tensor_requires_grad(v));
    CHECK(ix && !gf_tensor_requires_grad(ix) && gf_tensor_grad_fn_name(ix) == NULL);
    CHECK(ix && gf_tensor_dtype(ix) == GF_I64);
    gf_tensor_release(v);
    gf_tensor_release(ix);
    CHECK(gf_min_dim(x, 0, true, &v, &ix) == GF_OK);
    CHECK(ix && !gf_tensor_requires_grad(ix));
    gf_tensor_release(v);
    gf_tensor_release(ix);
    gf_tensor *am = gf_argmax(x, 1, false), *an = gf_argmin(x, GF_DIM_ALL, false);
    CHECK(am && !gf_tensor_requires_grad(am) && gf_tensor_grad_fn_name(am) == NULL);
    CHECK(an && !gf_tensor_requires_grad(an) && gf_tensor_grad_fn_name(an) == NULL);
    gf_tensor_release(am);
    gf_tensor_release(an);
    gf_tensor_release(x);
}

/* ------------------------------------------------------------ ties (exact) */
static void test_amax_amin_ties(void) {
    /* Ties split the gradient evenly among the tied elements. */
    gf_tensor *x = make(GF_F64, 1, SZ(4), DV(1, 3, 3, 2), true);
    gf_tensor *g = grad_of_sum(gf_amax(x, NULL, 0, false), x);
    check_vals(g, DV(0, 0.5, 0.5, 0), 4, 0);
    gf_tensor_release(g);
    gf_tensor_release(x);

    x = make(GF_F64, 1, SZ(4), DV(2, 1, 1, 1), true);
    g = grad_of_sum(gf_amin(x, NULL, 0, true), x);
    check_vals(g, DV(0, 1.0 / 3, 1.0 / 3, 1.0 / 3), 4, 1e-15);
    gf_tensor_release(g);
    gf_tensor_release(x);

    /* Per row, with a weighted grad_output: row 0 ties at 5, row 1 at 4. */
    x = make(GF_F64, 2, SZ(2, 3), DV(1, 5, 5, 4, 4, 2), true);
    gf_tensor *y = gf_amax(x, (const int[]){-1}, 1, false);
    gf_tensor *w = make(GF_F64, 1, SZ(2), DV(2, 3), false);
    CHECK_MSG(y && gf_backward(y, w, NULL) == GF_OK, "%s", gf_last_error());
    g = gf_tensor_grad(x);
    check_vals(g, DV(0, 1, 1, 1.5, 1.5, 0), 6, 0);
    gf_tensor_release(g);
    gf_tensor_release(y);
    gf_tensor_release(w);
    gf_tensor_release(x);

    /* Over several dims: three of four tie. */
    x = make(GF_F64, 2, SZ(2, 2), DV(5, 1, 5, 5), true);
    g = grad_of_sum(gf_amax(x, (const int[]){0, 1}, 2, true), x);
    check_vals(g, DV(1.0 / 3, 0, 1.0 / 3, 1.0 / 3), 4, 1e-15);
    gf_tensor_release(g);
    gf_tensor_release(x);

    /* amin along dim 0 of a transposed (non-contiguous) leaf. */
    gf_tensor *hb = make(GF_F64, 2, SZ(3, 2), DV(7, 7, 1, 1, 2, 3), false);
    gf_tensor *ht = gf_transpose(hb, 0, 1); /* [[7, 1, 2], [7, 1, 3]] */
    x = gf_detach(ht);
    CHECK(x && !gf_tensor_is_contiguous(x) && gf_tensor_set_requires_grad(x, true) == GF_OK);
    g = grad_of_sum(gf_amin(x, (const int[]){0}, 1, false), x);
    check_vals(g, DV(0.5, 0.5, 1, 0.5, 0.5, 0), 6, 0);
    gf_tensor_release(g);
    gf_tensor_release(x);
    gf_tensor_release(ht);
    gf_tensor_release(hb);
}

static void test_max_dim_ties(void) {
    /* The whole gradient goes to the first index of the extreme value. */
    gf_tensor *x = make(GF_F64, 1, SZ(4), DV(1, 3, 3, 2), true);
    gf_tensor *v = NULL, *ix = NULL;
    CHECK(gf_max_dim(x, 0, false, &v, &ix) == GF_OK);
    double i0 = -1;
    CHECK(ix && gf_tensor_item(ix, &i0) == GF_OK && i0 == 1);
    gf_tensor_release(ix);
    gf_tensor *g = grad_of_sum(v, x);
    check_vals(g, DV(0, 1, 0, 0), 4, 0);
    gf_tensor_release(g);
    gf_tensor_release(x);

    x = make(GF_F64, 2, SZ(2, 3), DV(2, 1, 1, 0, 0, 0), true);
    CHECK(gf_min_dim(x, -1, true, &v, &ix) == GF_OK);
    gf_tensor_release(ix);
    gf_tensor *w = make(GF_F64, 2, SZ(2, 1), DV(2, 5), false);
    CHECK_MSG(v && gf_backward(v, w, NULL) == GF_OK, "%s", gf_last_error());
    g = gf_tensor_grad(x);
    check_vals(g, DV(0, 2, 0, 5, 0, 0), 6, 0);
    gf_tensor_release(g);
    gf_tensor_release(v);
    gf_tensor_release(w);
    gf_tensor_release(x);

    /* Along dim 0 with ties in every column. */
    x = make(GF_F64, 2, SZ(3, 2), DV(4, 1, 4, 9, 0, 9), true);
    CHECK(gf_max_dim(x, 0, false, &v, &ix) == GF_OK);
    gf_tensor_release(ix);
    g = grad_of_sum(v, x);
    check_vals(g, DV(1, 0, 0, 1, 0, 0), 6, 0);
    gf_tensor_release(g);
    gf_tensor_release(x);
}

/* ------------------------------------------------------------ prod with zeros */
static void test_prod_zeros(void) {
    /* Exact values: one zero gets the product of the others, the rest 0;
     * two or more zeros give 0 everywhere. */
    gf_tensor *x = make(GF_F64, 2, SZ(3, 3), DV(2, 0, 3, 0, 0, 5, 1.5, 2, -4), true);
    gf_tensor *g = grad_of_sum(gf_prod(x, (const int[]){1}, 1, false), x);
    check_vals(g, DV(0, 6, 0, 0, 0, 0, -8, -6, 3), 9, 1e-15);
    gf_tensor_release(g);
    gf_tensor_release(x);

    x = make(GF_F64, 1, SZ(4), DV(2, -1.5, 0, 3), true);
    g = grad_of_sum(gf_prod(x, NULL, 0, false), x);
    check_vals(g, DV(0, 0, -9, 0), 4, 1e-15);
    gf_tensor_release(g);
    gf_tensor_release(x);

    /* gradcheck and gradgradcheck (prod is a polynomial, so finite
     * differences are exact across zeros) with 0, 1, 2 and 3 zeros per row. */
    static const double V[4 * 4] = {1.2, -0.7, 0.9, 1.4,  /* none */
                                    0.8, 0, -1.3, 0.6,    /* one */
                                    0, 1.1, 0, -0.9,      /* two */
                                    0, 0, 1.7, 0};        /* three */
    for (int keep = 0; keep <= 1; keep++) {
        tcase c = {.op = OP_PROD, .dims = {-1}, .nd = 1, .keepdim = keep};
        snprintf(c.label, sizeof c.label, "prod with zeros, rows, keepdim %d", keep);
        x = make(GF_F64, 2, SZ(4, 4), V, true);
        run_checks(&c, &x, 1, NULL, true);
        gf_tensor_release(x);
    }
    /* Columns of the transposed matrix, and everything at once. */
    tcase c = {.op = OP_PROD, .dims = {0}, .nd = 1,
               .p = {{.kind = PRE_TRANSPOSE, .d0 = 0, .d1 = 1}}, .label = "prod zeros, columns"};
    x = make(GF_F64, 2, SZ(4, 4), V, true);
    run_checks(&c, &x, 1, NULL, true);
    gf_tensor_release(x);
    tcase all = {.op = OP_PROD, .label = "prod two zeros, all dims"};
    x = make(GF_F64, 2, SZ(2, 3), DV(0.9, 0, 1.3, -1.1, 0, 0.7), true);
    run_checks(&all, &x, 1, NULL, true);
    gf_tensor_release(x);
    x = make(GF_F64, 0, NULL, DV(0), true);
    tcase zero_dim = {.op = OP_PROD, .label = "prod 0-dim zero"};
    run_checks(&zero_dim, &x, 1, NULL, true);
    gf_tensor_release(x);
}

/* ------------------------------------------------------------ closed forms */
static void test_closed_forms(void) {
    /* var over dim 1 with correction 1: 2 (x - mean) / (N - 1). */
    double v[6] = {1, 4, -2, 0.5, 3, 2.5}, want[6];
    gf_tensor *x = make(GF_F64, 2, SZ(2, 3), v, true);
    gf_tensor *g = grad_of_sum(gf_var(x, (const int[]){1}, 1, 1.0, false), x);
    for (int r = 0; r < 2; r++) {
        double m = (v[3 * r] + v[3 * r + 1] + v[3 * r + 2]) / 3;
        for (int j = 0; j < 3; j++) want[3 * r + j] = 2 * (v[3 * r + j] - m) / 2;
    }
    check_vals(g, want, 6, 1e-14);
    gf_tensor_release(g);
    gf_tensor_release(x);

    /* mean over all dims: 1 / N; sum: 1, both of x's shape. */
    x = make(GF_F64, 2, SZ(2, 3), v, true);
    g = grad_of_sum(gf_mean(x, NULL, 0, false), x);
    check_shape(g, 2, SZ(2, 3));
    check_vals(g, DV(1.0 / 6, 1.0 / 6, 1.0 / 6, 1.0 / 6, 1.0 / 6, 1.0 / 6), 6, 1e-15);
    gf_tensor_release(g);
    gf_tensor_release(x);

    /* logsumexp over dim 0: softmax over dim 0. */
    x = make(GF_F64, 2, SZ(2, 3), v, true);
    g = grad_of_sum(gf_logsumexp(x, (const int[]){0}, 1, true), x);
    for (int j = 0; j < 3; j++) {
        double z = exp(v[j]) + exp(v[3 + j]);
        want[j] = exp(v[j]) / z;
        want[3 + j] = exp(v[3 + j]) / z;
    }
    check_vals(g, want, 6, 1e-14);
    gf_tensor_release(g);
    gf_tensor_release(x);

    /* softmax with grad_output w along dim 1: y_i (w_i - sum_j w_j y_j). */
    double w[6] = {0.3, -1, 2, 1, 0.5, -0.25};
    x = make(GF_F64, 2, SZ(2, 3), v, true);
    gf_tensor *wt = make(GF_F64, 2, SZ(2, 3), w, false);
    gf_tensor *y = gf_softmax(x, 1);
    CHECK_MSG(y && gf_backward(y, wt, NULL) == GF_OK, "%s", gf_last_error());
    for (int r = 0; r < 2; r++) {
        double z = 0, ys[3], dot = 0;
        for (int j = 0; j < 3; j++) z += exp(v[3 * r + j]);
        for (int j = 0; j < 3; j++) ys[j] = exp(v[3 * r + j]) / z, dot += w[3 * r + j] * ys[j];
        for (int j = 0; j < 3; j++) want[3 * r + j] = ys[j] * (w[3 * r + j] - dot);
    }
    g = gf_tensor_grad(x);
    check_vals(g, want, 6, 1e-14);
    gf_tensor_release(g);
    gf_tensor_release(y);
    gf_tensor_release(x);

    /* log_softmax: w_i - softmax_i * sum_j w_j. */
    x = make(GF_F64, 2, SZ(2, 3), v, true);
    y = gf_log_softmax(x, -1);
    CHECK_MSG(y && gf_backward(y, wt, NULL) == GF_OK, "%s", gf_last_error());
    for (int r = 0; r < 2; r++) {
        double z = 0, ws = 0;
        for (int j = 0; j < 3; j++) z += exp(v[3 * r + j]), ws += w[3 * r + j];
        for (int j = 0; j < 3; j++) want[3 * r + j] = w[3 * r + j] - exp(v[3 * r + j]) / z * ws;
    }
    g = gf_tensor_grad(x);
    check_vals(g, want, 6, 1e-14);
    gf_tensor_release(g);
    gf_tensor_release(y);
    gf_tensor_release(wt);
    gf_tensor_release(x);
}

/* ------------------------------------------------------------ softmax */
static void check_softmax(opk op) {
    static const int DIM[] = {0, 1, 2, -1, -2};
    for (int l = 0; l < N_LAYOUTS; l++) {
        for (int k = 0; k < 5; k++) {
            tcase c = {.op = op, .dim = DIM[k]};
            snprintf(c.label, sizeof c.label, "%s dim %d, %s", OP_NAMES[op], DIM[k],
                     LAYOUT_NAMES[l]);
            gf_tensor *x = layout_input(l, V_ANY, k, &c.p[0]);
            run_checks(&c, &x, 1, NULL, true);
            gf_tensor_release(x);
        }
    }
    for (int r = 0; r <= 1; r++) {
        tcase c = {.op = op, .dim = -1};
        snprintf(c.label, sizeof c.label, "%s rank %d", OP_NAMES[op], r);
        gf_tensor *x = leaf(GF_F64, r, SZ(5), V_ANY, 1);
        run_checks(&c, &x, 1, NULL, true);
        gf_tensor_release(x);
    }
}
static void test_softmax(void) { check_softmax(OP_SOFTMAX); }
static void test_log_softmax(void) { check_softmax(OP_LOGSOFTMAX); }

/* ------------------------------------------------------------ matmul */
typedef struct mshape {
    int ar, br;
    int64_t as[4], bs[4];
} mshape;
static const mshape MM[] = {
    {1, 1, {3}, {3}},                   /* 1-D @ 1-D: a 0-dim result */
    {2, 2, {2, 3}, {3, 4}},
    {1, 2, {3}, {3, 4}},
    {2, 1, {2, 3}, {3}},
    {1, 3, {3}, {2, 3, 4}},
    {3, 1, {2, 4, 3}, {3}},
    {3, 3, {2, 2, 3}, {2, 3, 4}},
    {3, 2, {2, 2, 3}, {3, 4}},          /* b shared by the batch */
    {2, 3, {2, 3}, {2, 3, 4}},          /* a shared by the batch */
    {4, 3, {2, 1, 3, 4}, {5, 4, 2}},    /* broadcast batch dims */
    {4, 4, {3, 1, 2, 3}, {1, 2, 3, 2}}, /* both broadcast */
    {4, 1, {2, 1, 3, 4}, {4}},
    {1, 4, {4}, {2, 1, 4, 3}},
    {3, 3, {1, 2, 3}, {4, 3, 2}},       /* a's batch of 1 broadcast */
};
#define N_MM ((int)(sizeof MM / sizeof MM[0]))

static void mm_label(tcase *c, const mshape *m, const char *what) {
    char a[48] = "", b[48] = "";
    for (int i = 0; i < m->ar; i++)
        snprintf(a + strlen(a), sizeof a - strlen(a), "%s%lld", i ? "," : "", (long long)m->as[i]);
    for (int i = 0; i < m->br; i++)
        snprintf(b + strlen(b), sizeof b - strlen(b), "%s%lld", i ? "," : "", (long long)m->bs[i]);
    snprintf(c->label, sizeof c->label, "matmul [%s] @ [%s] %s", a, b, what);
}

static void test_matmul_shapes(void) {
    for (int k = 0; k < N_MM; k++) {
        const mshape *m = &MM[k];
        tcase c = {.op = OP_MATMUL};
        mm_label(&c, m, "both");
        gf_tensor *in[2] = {leaf(GF_F64, m->ar, m->as, V_ANY, k),
                            leaf(GF_F64, m->br, m->bs, V_ANY, k + 7)};
        run_checks(&c, in, 2, NULL, true);
        /* Only one operand requiring grad (the other is then not saved). */
        for (int only = 0; only < 2; only++) {
            tcase c1 = c;
            mm_label(&c1, m, only ? "only b" : "only a");
            gf_tensor *o[2] = {leaf(GF_F64, m->ar, m->as, V_ANY, k),
                               leaf(GF_F64, m->br, m->bs, V_ANY, k + 7)};
            if (o[1 - only]) CHECK(gf_tensor_set_requires_grad(o[1 - only], false) == GF_OK);
            run_checks(&c1, o, 2, NULL, true);
            gf_tensor_release(o[0]);
            gf_tensor_release(o[1]);
        }
        gf_tensor_release(in[0]);
        gf_tensor_release(in[1]);
    }
}

/* Gradients of 1-D operands are 1-D; of broadcast operands, their own shape. */
static void test_matmul_grad_shapes(void) {
    for (int k = 0; k < N_MM; k++) {
        const mshape *m = &MM[k];
        gf_tensor *a = leaf(GF_F64, m->ar, m->as, V_ANY, k);
        gf_tensor *b = leaf(GF_F64, m->br, m->bs, V_ANY, k + 1);
        gf_tensor *y = gf_matmul(a, b);
        gf_tensor *s = y ? gf_sum(y, NULL, 0, false) : NULL;
        gf_tensor *res[2] = {NULL, NULL};
        gf_tensor *ins[2] = {a, b};
        CHECK_MSG(s && gf_grad(&s, 1, NULL, ins, 2, res, NULL) == GF_OK, "%s", gf_last_error());
        check_shape(res[0], m->ar, m->as);
        check_shape(res[1], m->br, m->bs);
        for (int i = 0; i < 2; i++) gf_tensor_release(res[i]);
        gf_tensor_release(s);
        gf_tensor_release(y);
        gf_tensor_release(a);
        gf_tensor_release(b);
    }
    /* 1-D @ 1-D by hand: d(a.b)/da = b, d/db = a. */
    gf_tensor *a = make(GF_F64, 1, SZ(3), DV(1, 2, 3), true);
    gf_tensor *b = make(GF_F64, 1, SZ(3), DV(-1, 0.5, 4), true);
    gf_tensor *y = gf_matmul(a, b);
    check_shape(y, 0, NULL);
    CHECK_MSG(y && gf_backward(y, NULL, NULL) == GF_OK, "%s", gf_last_error());
    gf_tensor *ga = gf_tensor_grad(a), *gb = gf_tensor_grad(b);
    check_vals(ga, DV(-1, 0.5, 4), 3, 0);
    check_vals(gb, DV(1, 2, 3), 3, 0);
    gf_tensor_release(ga);
    gf_tensor_release(gb);
    gf_tensor_release(y);
    gf_tensor_release(a);
    gf_tensor_release(b);
}

/* Non-contiguous and broadcast-expanded operands. */
static void test_matmul_layouts(void) {
    /* Transposed leaves (last two dims), batched and 2-D. */
    {
        tcase c = {.op = OP_MATMUL, .label = "matmul transposed leaves [2,2,3] @ [3,4]"};
        gf_tensor *in[2] = {leaf_transposed(GF_F64, 3, SZ(2, 2, 3), 1, 2, V_ANY, 0),
                            leaf_transposed(GF_F64, 2, SZ(3, 4), 0, 1, V_ANY, 5)};
        run_checks(&c, in, 2, NULL, true);
        gf_tensor_release(in[0]);
        gf_tensor_release(in[1]);
    }
    {
        tcase c = {.op = OP_MATMUL, .label = "matmul transposed batch leaf [2,3,2] @ [2,2,4]"};
        gf_tensor *in[2] = {leaf_transposed(GF_F64, 3, SZ(2, 3, 2), 0, 1, V_ANY, 0),
                            leaf_transposed(GF_F64, 3, SZ(2, 2, 4), 0, 2, V_ANY, 2)};
        run_checks(&c, in, 2, NULL, true);
        gf_tensor_release(in[0]);
        gf_tensor_release(in[1]);
    }
    /* Transposed inside the function. */
    {
        tcase c = {.op = OP_MATMUL,
                   .p = {{.kind = PRE_TRANSPOSE, .d0 = -1, .d1 = -2},
                         {.kind = PRE_TRANSPOSE, .d0 = 0, .d1 = 1}},
                   .label = "matmul transposed in fn [2,3,2]^T @ [4,3]^T"};
        gf_tensor *in[2] = {leaf(GF_F64, 3, SZ(2, 3, 2), V_ANY, 1),
                            leaf(GF_F64, 2, SZ(4, 3), V_ANY, 3)};
        run_checks(&c, in, 2, NULL, true);
        gf_tensor_release(in[0]);
        gf_tensor_release(in[1]);
    }
    /* Expanded operands: [3,4] -> [2,3,4], [1,2,3] -> [2,2,3], and a 1-D [1] -> [3]. */
    {
        tcase c = {.op = OP_MATMUL,
                   .p = {{.kind = PRE_EXPAND, .rank = 3, .sizes = {2, 2, 3}},
                         {.kind = PRE_EXPAND, .rank = 3, .sizes = {2, 3, 4}}},
                   .label = "matmul expanded [1,2,3]->[2,2,3] @ [3,4]->[2,3,4]"};
        gf_tensor *in[2] = {leaf(GF_F64, 3, SZ(1, 2, 3), V_ANY, 1),
                            leaf(GF_F64, 2, SZ(3, 4), V_ANY, 3)};
        run_checks(&c, in, 2, NULL, true);
        gf_tensor_release(in[0]);
        gf_tensor_release(in[1]);
    }
    {
        tcase c = {.op = OP_MATMUL,
                   .p = {{.kind = PRE_NONE}, {.kind = PRE_EXPAND, .rank = 1, .sizes = {3}}},
                   .label = "matmul [2,3] @ expanded [1]->[3]"};
        gf_tensor *in[2] = {leaf(GF_F64, 2, SZ(2, 3), V_ANY, 1), leaf(GF_F64, 1, SZ(1), V_ANY, 3)};
        run_checks(&c, in, 2, NULL, true);
        gf_tensor_release(in[0]);
        gf_tensor_release(in[1]);
    }
    /* The same tensor on both sides: x^T x. */
    {
        tcase c = {.op = OP_MATMUL, .p = {{.kind = PRE_TRANSPOSE, .d0 = 0, .d1 = 1}},
                   .label = "matmul x^T @ x"};
        gf_tensor *x = leaf(GF_F64, 2, SZ(3, 2), V_ANY, 4);
        gf_tensor *in[2] = {x, x};
        run_checks(&c, in, 2, NULL, true);
        gf_tensor_release(x);
    }
}

/* ------------------------------------------------------------ f32 */
static void test_f32_first_order(void) {
    gf_gradcheck_opts o = GF_GRADCHECK_OPTS_DEFAULT;
    o.eps = 1e-3, o.atol = 1e-2, o.rtol = 1e-2;
    for (int k = 0; k < N_DIMS3; k++) {
        for (int op = OP_SUM; op <= OP_MEAN; op++) {
            tcase c = {.op = (opk)op, .nd = DIMS3[k].nd, .keepdim = DIMS3[k].keepdim};
            for (int i = 0; i < c.nd; i++) c.dims[i] = DIMS3[k].dims[i];
            snprintf(c.label, sizeof c.label, "f32 %s dims #%d", OP_NAMES[op], k);
            gf_tensor *x = leaf(GF_F32, 3, SZ(2, 3, 4), V_ANY, k);
            run_checks(&c, &x, 1, &o, false);
            gf_tensor_release(x);
        }
    }
    tcase ct = {.op = OP_SUM, .dims = {1}, .nd = 1, .label = "f32 sum transposed leaf"};
    gf_tensor *xt = leaf_transposed(GF_F32, 2, SZ(3, 4), 0, 1, V_ANY, 0);
    run_checks(&ct, &xt, 1, &o, false);
    gf_tensor_release(xt);
    for (int d = -1; d <= 2; d++) {
        tcase c = {.op = OP_SOFTMAX, .dim = d};
        snprintf(c.label, sizeof c.label, "f32 softmax dim %d", d);
        gf_tensor *x = leaf(GF_F32, 3, SZ(2, 3, 4), V_ANY, d + 2);
        run_checks(&c, &x, 1, &o, false);
        gf_tensor_release(x);
    }
    for (int k = 0; k < N_MM; k++) {
        const mshape *m = &MM[k];
        tcase c = {.op = OP_MATMUL};
        mm_label(&c, m, "f32");
        gf_tensor *in[2] = {leaf(GF_F32, m->ar, m->as, V_ANY, k),
                            leaf(GF_F32, m->br, m->bs, V_ANY, k + 7)};
        run_checks(&c, in, 2, &o, false);
        gf_tensor_release(in[0]);
        gf_tensor_release(in[1]);
    }
}

/* ------------------------------------------------------------ what is saved */
/* A non-leaf h = 2x modified in place after the op: fine when the node did
 * not save h, a version error when it did. */
static gf_tensor *twice(gf_tensor *x) { return gf_mul_scalar(x, 2.0); }

static void expect_backward(gf_tensor *y, bool ok, const char *what) {
    gf_tensor *s = y ? gf_sum(y, NULL, 0, false) : NULL;
    CHECK(s != NULL);
    gf_status st = s ? gf_backward(s, NULL, NULL) : GF_ERR_INVALID;
    if (ok) CHECK_MSG(st == GF_OK, "%s: %s", what, gf_last_error());
    else {
        CHECK_MSG(st != GF_OK, "%s: backward should fail", what);
        CHECK_CONTAINS(gf_last_error(), "modified by an in-place operation");
    }
    gf_tensor_release(s);
}

static void test_saved(void) {
    gf_tensor *x = leaf(GF_F64, 2, SZ(3, 4), V_ANY, 0);
    gf_tensor *c = make(GF_F64, 2, SZ(4, 2), DV(1, 2, 3, 4, 5, 6, 7, 8), false);
    /* sum and mean save nothing. */
    for (int op = 0; op < 2; op++) {
        gf_tensor *h = twice(x);
        gf_tensor *y = op ? gf_mean(h, (const int[]){1}, 1, false) : gf_sum(h, NULL, 0, true);
        CHECK(gf_mul_scalar_(h, 3.0) == GF_OK);
        expect_backward(y, true, op ? "mean" : "sum");
        gf_tensor_release(y);
        gf_tensor_release(h);
    }
    /* softmax / log_softmax save their output only. */
    for (int op = 0; op < 2; op++) {
        gf_tensor *h = twice(x);
        gf_tensor *y = op ? gf_log_softmax(h, 1) : gf_softmax(h, 0);
        CHECK(gf_mul_scalar_(h, 3.0) == GF_OK);
        expect_backward(y, true, "softmax, input modified");
        gf_tensor_release(y);
        gf_tensor_release(h);
    }
    /* var saves its input. */
    {
        gf_tensor *h = twice(x);
        gf_tensor *y = gf_var(h, NULL, 0, 1.0, false);
        CHECK(gf_mul_scalar_(h, 3.0) == GF_OK);
        expect_backward(y, false, "var, input modified");
        gf_tensor_release(y);
        gf_tensor_release(h);
    }
    /* matmul: a is saved only for b's gradient. */
    {
        gf_tensor *h = twice(x);
        gf_tensor *y = gf_matmul(h, c); /* c needs no gradient: h is not saved */
        CHECK(gf_mul_scalar_(h, 3.0) == GF_OK);
        expect_backward(y, true, "matmul, constant b");
        gf_tensor_release(y);
        gf_tensor_release(h);
        gf_tensor *cb = make(GF_F64, 2, SZ(4, 2), DV(1, 2, 3, 4, 5, 6, 7, 8), true);
        h = twice(x);
        y = gf_matmul(h, cb); /* b's gradient reads h */
        CHECK(gf_mul_scalar_(h, 3.0) == GF_OK);
        expect_backward(y, false, "matmul, b requires grad");
        gf_tensor_release(y);
        gf_tensor_release(h);
        gf_tensor_release(cb);
    }
    gf_tensor_release(c);
    gf_tensor_release(x);
}

/* Zero-size inputs: gradients of the input's (empty) shape, and matmul over
 * an empty K gives zero gradients of the right shapes. */
static void test_empty(void) {
    gf_tensor *x = gf_zeros(SZ(0, 3), 2, GF_F64, NULL);
    CHECK(x && gf_tensor_set_requires_grad(x, true) == GF_OK);
    for (int op = OP_SUM; op <= OP_PROD; op++) {
        const int d0[1] = {0};
        gf_tensor *y = op == OP_SUM ? gf_sum(x, d0, 1, false)
                     : op == OP_MEAN ? gf_mean(x, d0, 1, true) : gf_prod(x, d0, 1, false);
        gf_tensor *ins[1] = {x}, *res[1] = {NULL};
        gf_tensor *go = y ? gf_ones_like(y) : NULL;
        CHECK_MSG(y && gf_grad(&y, 1, &go, ins, 1, res, NULL) == GF_OK, "%s: %s",
                  OP_NAMES[op], gf_last_error());
        check_shape(res[0], 2, SZ(0, 3));
        gf_tensor_release(res[0]);
        gf_tensor_release(go);
        gf_tensor_release(y);
    }
    gf_tensor_release(x);
    gf_tensor *a = gf_zeros(SZ(2, 0), 2, GF_F64, NULL), *b = gf_zeros(SZ(0, 3), 2, GF_F64, NULL);
    CHECK(a && gf_tensor_set_requires_grad(a, true) == GF_OK);
    CHECK(b && gf_tensor_set_requires_grad(b, true) == GF_OK);
    gf_tensor *y = gf_matmul(a, b);
    check_shape(y, 2, SZ(2, 3));
    gf_tensor *go = y ? gf_ones_like(y) : NULL, *ins[2] = {a, b}, *res[2] = {NULL, NULL};
    CHECK_MSG(y && gf_grad(&y, 1, &go, ins, 2, res, NULL) == GF_OK, "%s", gf_last_error());
    check_shape(res[0], 2, SZ(2, 0));
    check_shape(res[1], 2, SZ(0, 3));
    gf_tensor_release(res[0]);
    gf_tensor_release(res[1]);
    gf_tensor_release(go);
    gf_tensor_release(y);
    /* [0, 2] @ [2, 3]: the weight's gradient is a sum over no rows: zeros. */
    gf_tensor *e = gf_zeros(SZ(0, 2), 2, GF_F64, NULL);
    gf_tensor *w = leaf(GF_F64, 2, SZ(2, 3), V_ANY, 0);
    y = gf_matmul(e, w);
    gf_tensor *s = y ? gf_sum(y, NULL, 0, false) : NULL;
    CHECK_MSG(s && gf_backward(s, NULL, NULL) == GF_OK, "%s", gf_last_error());
    gf_tensor *gw = gf_tensor_grad(w);
    check_vals(gw, DV(0, 0, 0, 0, 0, 0), 6, 0);
    gf_tensor_release(gw);
    gf_tensor_release(s);
    gf_tensor_release(y);
    gf_tensor_release(w);
    gf_tensor_release(e);
    gf_tensor_release(a);
    gf_tensor_release(b);
}

/* Node names, and nothing recorded under no-grad. */
static void test_node_names(void) {
    gf_tensor *x = leaf(GF_F64, 2, SZ(2, 3), V_ANY, 0);
    gf_tensor *b = leaf(GF_F64, 1, SZ(3), V_ANY, 1);
    struct {
        gf_tensor *t;
        const char *name;
    } cases[] = {
        {gf_sum(x, NULL, 0, false), "SumBackward"},
        {gf_mean(x, NULL, 0, false), "MeanBackward"},
        {gf_prod(x, NULL, 0, false), "ProdBackward"},
        {gf_amax(x, NULL, 0, false), "AmaxBackward"},
        {gf_amin(x, NULL, 0, false), "AminBackward"},
        {gf_var(x, NULL, 0, 1, false), "VarBackward"},
        {gf_logsumexp(x, NULL, 0, false), "LogsumexpBackward"},
        {gf_softmax(x, 0), "SoftmaxBackward"},
        {gf_log_softmax(x, 0), "LogSoftmaxBackward"},
        {gf_matmul(x, b), "MatmulBackward"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *n = gf_tensor_grad_fn_name(cases[i].t);
        CHECK_MSG(n && !strcmp(n, cases[i].name), "got %s, want %s", n ? n : "(none)",
                  cases[i].name);
        gf_tensor_release(cases[i].t);
    }
    gf_tensor *v = NULL, *ix = NULL;
    CHECK(gf_max_dim(x, 1, false, &v, &ix) == GF_OK);
    CHECK(v && gf_tensor_grad_fn_name(v) && !strcmp(gf_tensor_grad_fn_name(v), "MaxBackward"));
    gf_tensor_release(v);
    gf_tensor_release(ix);
    CHECK(gf_min_dim(x, 1, false, &v, &ix) == GF_OK);
    CHECK(v && gf_tensor_grad_fn_name(v) && !strcmp(gf_tensor_grad_fn_name(v), "MinBackward"));
    gf_tensor_release(v);
    gf_tensor_release(ix);
    /* No grad mode: nothing recorded. */
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    gf_tensor *y = gf_sum(x, NULL, 0, false);
    CHECK(y && !gf_tensor_requires_grad(y) && gf_tensor_grad_fn_name(y) == NULL);
    gf_tensor_release(y);
    gf_grad_mode_set(prev);
    gf_tensor_release(b);
    gf_tensor_release(x);
}

int main(void) {
    RUN(test_sum);
    RUN(test_mean);
    RUN(test_prod);
    RUN(test_prod_zeros);
    RUN(test_amax);
    RUN(test_amin);
    RUN(test_amax_amin_ties);
    RUN(test_var);
    RUN(test_std);
    RUN(test_logsumexp);
    RUN(test_max_dim);
    RUN(test_min_dim);
    RUN(test_max_dim_ties);
    RUN(test_indices_no_grad);
    RUN(test_closed_forms);
    RUN(test_softmax);
    RUN(test_log_softmax);
    RUN(test_matmul_shapes);
    RUN(test_matmul_grad_shapes);
    RUN(test_matmul_layouts);
    RUN(test_f32_first_order);
    RUN(test_saved);
    RUN(test_empty);
    RUN(test_node_names);
    return CHECK_REPORT();
}
