/* SPDX-License-Identifier: BSD-3-Clause */
/* test_fwad_batch.c — gf_jacfwd's batched pass (one forward pass per input
 * with a batched tangent) against its per-element loop and against
 * gf_jacrev, in f64, on maps built from each op whose jvp rule batches;
 * maps with an op that does not batch (the loop is taken, same answer; in
 * strict mode an UNSUPPORTED error names the op); a report of which maps
 * batch. The path is chosen with GRAFT_JACFWD (loop / batched / auto). */
#define _POSIX_C_SOURCE 200809L
#include <graft.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_rules_util.h"

static uint64_t g_rng = 0x2545F4914F6CDD1Dull;
static gf_tensor *rnd(const int64_t *sizes, int rank) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= sizes[i];
    double v[256];
    for (int64_t i = 0; i < n; i++) {
        g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
        v[i] = (double)(g_rng >> 11) / 9007199254740992.0 * 2 - 1;
    }
    return gf_from_data(v, sizes, rank, GF_F64, NULL);
}

#define KEEP1(e)                          \
    do {                                  \
        out[0] = gf_scope_keep(e);        \
        gf_scope_end();                   \
        return out[0] ? GF_OK : gf_last_status(); \
    } while (0)

/* ---- the maps: each reads in[0..n) and writes out[0] */
static gf_status m_elementwise(gf_tensor *const *in, int n, gf_tensor **out, int no, void *u) {
    (void)n, (void)no, (void)u;
    gf_scope_begin();
    /* a [3] against b [2, 3]: broadcasting both ways */
    gf_tensor *a = in[0], *b = in[1];
    gf_tensor *y = gf_add(gf_mul(gf_sin(a), b), gf_div(gf_exp(b), gf_add_scalar(gf_square(a), 2)));
    y = gf_sub(gf_pow(gf_sigmoid(y), gf_add_scalar(gf_abs(b), 1)), gf_tanh(a));
    y = gf_add(gf_maximum(y, b), gf_where(gf_gt_scalar(b, 0), gf_relu(a), gf_log1p(gf_square(b))));
    KEEP1(gf_clamp(y, -0.7, 5.0));
}

static gf_status m_reduce(gf_tensor *const *in, int n, gf_tensor **out, int no, void *u) {
    (void)n, (void)no, (void)u;
    gf_scope_begin();
    gf_tensor *x = in[0]; /* [2, 3, 2] */
    gf_tensor *s = gf_sum(x, (const int[]){1}, 1, false);
    gf_tensor *m = gf_mean(gf_square(x), (const int[]){0, 2}, 2, true);
    gf_tensor *a = gf_amax(x, (const int[]){1}, 1, false);
    gf_tensor *v = gf_var(x, (const int[]){1}, 1, 1.0, false);
    gf_tensor *vals = NULL, *idx = NULL;
    gf_max_dim(x, 1, false, &vals, &idx);
    gf_tensor *y = gf_add(gf_add(s, a), gf_add(v, vals));
    y = gf_add(gf_mul(y, gf_sum(m, NULL, 0, false)), gf_logsumexp(x, (const int[]){1}, 1, false));
    KEEP1(y);
}

static gf_status m_softmax(gf_tensor *const *in, int n, gf_tensor **out, int no, void *u) {
    (void)n, (void)no, (void)u;
    gf_scope_begin();
    gf_tensor *x = in[0]; /* [2, 4] */
    KEEP1(gf_add(gf_softmax(x, 1), gf_mul(gf_log_softmax(x, 0), gf_softmax(x, -1))));
}

static gf_status m_views(gf_tensor *const *in, int n, gf_tensor **out, int no, void *u) {
    (void)n, (void)no, (void)u;
    gf_scope_begin();
    gf_tensor *x = in[0], *w = in[1]; /* [2, 3, 4], [4] */
    gf_tensor *t = gf_transpose(x, 0, 2);                       /* [4, 3, 2] */
    gf_tensor *p = gf_permute(x, (const int[]){1, 2, 0}, 3);    /* [3, 4, 2] */
    gf_tensor *r = gf_reshape(gf_contiguous(p), SZ(4, 3, 2), 3);
    gf_tensor *e = gf_expand(gf_reshape(w, SZ(4, 1, 1), 3), SZ(4, 3, 2), 3);
    gf_tensor *y = gf_mul(gf_add(t, r), e);
    gf_tensor *parts[3] = {gf_narrow(y, 0, 1, 2), gf_select(y, 0, 0), gf_slice(y, 0, 0, 4, 2)};
    parts[1] = gf_unsqueeze(parts[1], 0);
    gf_tensor *c = gf_cat(parts, 3, 0); /* [5, 3, 2] */
    gf_tensor *d = gf_diagonal(c, 0, 0, 1);
    KEEP1(gf_add(gf_sum(c, (const int[]){2}, 1, false), gf_sum(d, NULL, 0, false)));
}

static gf_status m_matmul(gf_tensor *const *in, int n, gf_tensor **out, int no, void *u) {
    (void)n, (void)no, (void)u;
    gf_scope_begin();
    gf_tensor *v = in[0], *a = in[1], *b = in[2]; /* [3], [2, 3], [4, 3, 2] */
    gf_tensor *s = gf_matmul(v, v);                 /* dot */
    gf_tensor *av = gf_matmul(a, v);                /* [2] */
    gf_tensor *va = gf_matmul(av, a);               /* [3] */
    gf_tensor *ab = gf_matmul(a, b);                /* [4, 2, 2] */
    gf_tensor *bv = gf_matmul(va, b);               /* [4, 2] */
    gf_tensor *ba = gf_matmul(b, a);                /* [4, 3, 3] */
    gf_tensor *y = gf_add(gf_sum(ab, (const int[]){2}, 1, false), gf_mul_scalar(bv, 0.5));
    y = gf_add(gf_mul(y, s), gf_sum(gf_matmul(ba, v), (const int[]){1}, 1, true));
    KEEP1(y); /* [4, 2] */
}

static gf_status m_mlp(gf_tensor *const *in, int n, gf_tensor **out, int no, void *u) {
    (void)n, (void)no, (void)u;
    gf_scope_begin();
    /* x [2, 4], W1 [5, 4], b1 [5], W2 [3, 5]; layer norm, gelu, cross entropy */
    gf_tensor *h = gf_gelu(gf_linear(in[0], in[1], in[2]), false);
    h = gf_layer_norm(h, 1, NULL, NULL, 1e-5, NULL, NULL);
    gf_tensor *logits = gf_linear(h, in[3], NULL);
    gf_tensor *target = gf_from_data((const int64_t[]){2, 0}, SZ(2), 1, GF_I64, NULL);
    gf_tensor *ce = gf_cross_entropy(logits, target, NULL, GF_REDUCTION_MEAN, -100, 0.1);
    gf_tensor *mse = gf_mse_loss(logits, gf_zeros_like(logits), GF_REDUCTION_SUM);
    KEEP1(gf_add(gf_reshape(ce, SZ(1), 1), gf_reshape(mse, SZ(1), 1)));
}

static gf_status m_norm(gf_tensor *const *in, int n, gf_tensor **out, int no, void *u) {
    (void)n, (void)no, (void)u;
    gf_scope_begin();
    /* x [2, 3, 4], w [3, 4], b [3, 4] */
    KEEP1(gf_layer_norm(in[0], 2, in[1], in[2], 1e-5, NULL, NULL));
}

static gf_status m_bnorm(gf_tensor *const *in, int n, gf_tensor **out, int no, void *u) {
    (void)n, (void)no, (void)u;
    gf_scope_begin();
    /* x [3, 2, 2, 2], w [2], b [2], training statistics */
    gf_tensor *y = gf_batch_norm(in[0], NULL, NULL, in[1], in[2], true, 0.1, 1e-5, NULL, NULL);
    KEEP1(gf_mul(y, gf_prod(in[0], (const int[]){0}, 1, false)));
}

static gf_status m_conv(gf_tensor *const *in, int n, gf_tensor **out, int no, void *u) {
    (void)n, (void)no, (void)u;
    gf_scope_begin();
    /* x [2, 2, 4, 4], w [3, 2, 2, 2], b [3]; stride 2, padding 1 */
    gf_conv2d_opts o = {.stride = {2, 2}, .padding = {1, 1}};
    gf_tensor *y = gf_conv2d(in[0], in[1], in[2], &o);
    KEEP1(gf_tanh(gf_sum(y, (const int[]){3}, 1, false)));
}

/* mixed: max_pool2d's rule does not batch, the rest does */
static gf_status m_pool(gf_tensor *const *in, int n, gf_tensor **out, int no, void *u) {
    (void)n, (void)no, (void)u;
    gf_scope_begin();
    gf_pool2d_opts o = {.kernel = {2, 2}};
    gf_tensor *y = gf_max_pool2d(gf_tanh(in[0]), &o, NULL); /* [1, 2, 2, 2] */
    KEEP1(gf_mul(y, gf_sum(in[0], NULL, 0, false)));
}

/* mixed: an in-place write into a view of a fresh tensor (refused at a
 * batched level) */
static gf_status m_inplace(gf_tensor *const *in, int n, gf_tensor **out, int no, void *u) {
    (void)n, (void)no, (void)u;
    gf_scope_begin();
    gf_tensor *z = gf_zeros(SZ(2, 3), 2, GF_F64, NULL);
    gf_tensor *row = gf_select(z, 0, 1);
    if (gf_add_(row, gf_exp(in[0])) != GF_OK) {
        gf_scope_end();
        return gf_last_status();
    }
    KEEP1(gf_mul(z, in[0]));
}

typedef struct map_case {
    const char *name;
    gf_func_fn f;
    int n_in;
    int64_t sizes[4][4];
    int rank[4];
    bool batches; /* every op on its path batches */
} map_case;

static const map_case cases[] = {
    {"elementwise", m_elementwise, 2, {{3}, {2, 3}}, {1, 2}, true},
    {"reduce", m_reduce, 1, {{2, 3, 2}}, {3}, true},
    {"softmax", m_softmax, 1, {{2, 4}}, {2}, true},
    {"views", m_views, 2, {{2, 3, 4}, {4}}, {3, 1}, true},
    {"matmul", m_matmul, 3, {{3}, {2, 3}, {4, 3, 2}}, {1, 2, 3}, true},
    {"mlp", m_mlp, 4, {{2, 4}, {5, 4}, {5}, {3, 5}}, {2, 2, 1, 2}, true},
    {"layer_norm", m_norm, 3, {{2, 3, 4}, {3, 4}, {3, 4}}, {3, 2, 2}, true},
    {"batch_norm", m_bnorm, 3, {{3, 2, 2, 2}, {2}, {2}}, {4, 1, 1}, true},
    {"conv2d", m_conv, 3, {{2, 2, 4, 4}, {3, 2, 2, 2}, {3}}, {4, 4, 1}, true},
    {"max_pool2d (mixed)", m_pool, 1, {{1, 2, 4, 4}}, {4}, false},
    {"in-place into a view (mixed)", m_inplace, 1, {{3}}, {1}, false},
};

static double max_diff(const gf_tensor *a, const gf_tensor *b) {
    if (!a || !b || gf_tensor_rank(a) != gf_tensor_rank(b)) return INFINITY;
    for (int i = 0; i < gf_tensor_rank(a); i++)
        if (gf_tensor_size(a, i) != gf_tensor_size(b, i)) return INFINITY;
    gf_tensor *d = gf_amax(gf_abs(gf_sub(a, b)), NULL, 0, false);
    double v = INFINITY;
    if (d) ag_read(d, &v, 1);
    return v;
}

static gf_status jac_with(const char *mode, const map_case *c, gf_tensor **in, gf_tensor **jac) {
    setenv("GRAFT_JACFWD", mode, 1);
    gf_status s = gf_jacfwd(c->f, in, c->n_in, 1, NULL, jac);
    unsetenv("GRAFT_JACFWD");
    return s;
}

static void test_maps(void) {
    int batched = 0;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const map_case *c = &cases[k];
        gf_scope_begin();
        gf_tensor *in[4] = {0}, *jb[4] = {0}, *jl[4] = {0}, *ja[4] = {0}, *jr[4] = {0};
        for (int i = 0; i < c->n_in; i++) in[i] = rnd(c->sizes[i], c->rank[i]);
        gf_status sb = jac_with("batched", c, in, jb);
        if (c->batches) {
            CHECK_MSG(sb == GF_OK, "%s: batched: %s", c->name, gf_last_error());
        } else {
            CHECK_MSG(sb == GF_ERR_UNSUPPORTED && strstr(gf_last_error(), "batched"),
                      "%s: strict batched mode should refuse: %d %s", c->name, (int)sb,
                      gf_last_error());
        }
        batched += sb == GF_OK;
        printf("  %-30s %s\n", c->name, sb == GF_OK ? "batched" : "falls back to the loop");
        CHECK_MSG(jac_with("loop", c, in, jl) == GF_OK, "%s: loop: %s", c->name, gf_last_error());
        CHECK_MSG(jac_with("auto", c, in, ja) == GF_OK, "%s: auto: %s", c->name, gf_last_error());
        CHECK_MSG(gf_jacrev(c->f, in, c->n_in, 1, NULL, jr) == GF_OK, "%s: jacrev: %s", c->name,
                  gf_last_error());
        for (int i = 0; i < c->n_in; i++) {
            if (sb == GF_OK)
                CHECK_MSG(max_diff(jb[i], jl[i]) < 1e-12, "%s: input %d: batched vs loop %g",
                          c->name, i, max_diff(jb[i], jl[i]));
            CHECK_MSG(max_diff(ja[i], jl[i]) < 1e-12, "%s: input %d: auto vs loop %g", c->name, i,
                      max_diff(ja[i], jl[i]));
            CHECK_MSG(max_diff(jr[i], jl[i]) < 1e-10, "%s: input %d: jacrev vs loop %g", c->name,
                      i, max_diff(jr[i], jl[i]));
        }
        gf_scope_end();
    }
    printf("  %d of %zu maps batch\n", batched, sizeof cases / sizeof cases[0]);
}

/* hessian = jacfwd of a gradient: forward-over-reverse, batched. */
static gf_status rosen(gf_tensor *const *in, int n, gf_tensor **out, int no, void *u) {
    (void)n, (void)no, (void)u;
    gf_scope_begin();
    gf_tensor *x = in[0];
    gf_tensor *a = gf_narrow(x, 0, 0, 4), *b = gf_narrow(x, 0, 1, 4);
    gf_tensor *t = gf_add(gf_mul_scalar(gf_square(gf_sub(b, gf_square(a))), 100.0),
                          gf_square(gf_rsub_scalar(a, 1.0)));
    KEEP1(gf_sum(t, NULL, 0, false));
}

static void test_hessian(void) {
    gf_tensor *x = rnd(SZ(5), 1), *hb = NULL, *hl = NULL;
    setenv("GRAFT_JACFWD", "loop", 1);
    CHECK_MSG(gf_hessian(rosen, &x, 1, NULL, &hl) == GF_OK, "%s", gf_last_error());
    setenv("GRAFT_JACFWD", "batched", 1);
    CHECK_MSG(gf_hessian(rosen, &x, 1, NULL, &hb) == GF_OK, "%s", gf_last_error());
    unsetenv("GRAFT_JACFWD");
    CHECK_MSG(max_diff(hb, hl) < 1e-10, "hessian batched vs loop %g", max_diff(hb, hl));
}

/* Errors: the strict mode's message; a failing function is its own error
 * (not a fallback); no level stays open. */
static gf_status failing(gf_tensor *const *in, int n, gf_tensor **out, int no, void *u) {
    (void)n, (void)no, (void)u;
    out[0] = gf_matmul(in[0], in[0]); /* [2, 3] @ [2, 3]: a shape error */
    return out[0] ? GF_OK : gf_last_status();
}

static void test_errors(void) {
    gf_tensor *x = rnd(SZ(2, 3), 2), *j = NULL;
    CHECK(gf_jacfwd(failing, &x, 1, 1, NULL, &j) == GF_ERR_SHAPE && !j);
    CHECK(gf_fwad_level_count() == 0);
    gf_tensor *xi = gf_zeros(SZ(3), 1, GF_I64, NULL);
    CHECK(gf_jacfwd(m_softmax, &xi, 1, 1, NULL, &j) == GF_ERR_DTYPE);
    const map_case *c = &cases[9];
    gf_tensor *in = rnd(c->sizes[0], c->rank[0]);
    CHECK(jac_with("batched", c, &in, &j) == GF_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(gf_last_error(), "max_pool2d") != NULL, "%s", gf_last_error());
    CHECK(gf_fwad_level_count() == 0);
    /* an empty input: no pass to batch, an empty block */
    gf_tensor *e = gf_zeros(SZ(0), 1, GF_F64, NULL);
    CHECK_MSG(gf_jacfwd(m_softmax, &e, 1, 1, NULL, &j) != GF_OK || j, "%s", gf_last_error());
}

#define RUN_SCOPED(fn)    \
    do {                  \
        gf_scope_begin(); \
        RUN(fn);          \
        gf_scope_end();   \
    } while (0)

int main(void) {
    RUN_SCOPED(test_maps);
    RUN_SCOPED(test_hessian);
    RUN_SCOPED(test_errors);
    CHECK_MSG(gf_shutdown() == GF_OK, "every buffer released: %s", gf_last_error());
    return CHECK_REPORT();
}
