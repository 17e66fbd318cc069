/* SPDX-License-Identifier: BSD-3-Clause */
/* test_grad_shape.c — gradients of the ops of graft/shape.h: gf_gradcheck
 * and gf_gradgradcheck in f64 for every differentiable op (on transposed,
 * strided views of the leaves), and gradients against hand values where
 * PyTorch's choice matters: the norm of a zero vector, cumprod with zeros,
 * scatter's overwritten elements. Leaves are made on the default device, so
 * the suite also runs on every other device here (GRAFT_DEVICE). */
#include <graft.h>
#include <math.h>
#include <stdint.h>

#include "check.h"

#define SZ(...) ((const int64_t[]){__VA_ARGS__})

typedef enum which {
    NORM2, NORM1, NORMINF, NORMNEGINF, NORM3, NORM_HALF, CUMSUM, CUMPROD0, CUMPROD1, LCSE,
    SORT, TOPK, MEDIAN, MEDIAN_DIM, QUANTILE, QUANTILE_MID, AMINMAX,
    FLIP, ROLL, REPEAT, TILE, RINTER, RINTER_T, PAD_CONST, PAD_REFLECT, PAD_REPLICATE,
    PAD_CIRCULAR, UNBIND, SPLIT, UNFOLD, TAKE, MSELECT,
    SCATTER, INDEX_PUT, INDEX_PUT_ACC, MSCATTER, EIN_MM, EIN_DIAG, EIN_BMM, EIN_3, EIN_ELL,
    N_WHICH
} which;

static const char *NAMES[N_WHICH] = {
    "norm2", "norm1", "norm_inf", "norm_-inf", "norm3", "norm0.5", "cumsum", "cumprod0",
    "cumprod1", "logcumsumexp", "sort", "topk", "median", "median_dim", "quantile",
    "quantile_midpoint", "aminmax", "flip", "roll", "repeat", "tile", "repeat_interleave",
    "repeat_interleave_tensor", "pad_constant", "pad_reflect", "pad_replicate", "pad_circular",
    "unbind", "split_with_sizes", "unfold", "take_along_dim", "masked_select", "scatter",
    "index_put", "index_put_accumulate", "masked_scatter", "einsum_mm", "einsum_diag",
    "einsum_bmm", "einsum_3", "einsum_ellipsis"};

typedef struct gcase {
    which op;
    gf_tensor *aux, *aux2; /* index / mask tensors */
} gcase;

static const int D0 = 0, D1 = 1;

static gf_tensor *run(gf_tensor *const *in, int n, void *user) {
    const gcase *c = user;
    /* the first leaf is stored [4, 3] and used transposed as [3, 4] */
    gf_tensor *x = gf_transpose(in[0], 0, 1);
    gf_tensor *b = n > 1 ? in[1] : NULL, *y = NULL, *t0 = NULL, *t1 = NULL;
    gf_tensor *parts[4] = {0};
    int np = 0;
    switch (c->op) {
    case NORM2: y = gf_vector_norm(x, 2, &D1, 1, false); break;
    case NORM1: y = gf_vector_norm(x, 1, &D0, 1, true); break;
    case NORMINF: y = gf_vector_norm(x, INFINITY, NULL, 0, false); break;
    case NORMNEGINF: y = gf_vector_norm(x, -INFINITY, &D1, 1, false); break;
    case NORM3: y = gf_norm(x, 3, &D1, 1, false); break;
    case NORM_HALF: y = gf_vector_norm(x, 0.5, &D0, 1, false); break;
    case CUMSUM: y = gf_cumsum(x, 1); break;
    case CUMPROD0: y = gf_cumprod(x, 0); break;
    case CUMPROD1: y = gf_cumprod(x, 1); break;
    case LCSE: y = gf_logcumsumexp(x, 1); break;
    case SORT: gf_sort(x, 1, true, &y, &t0); break;
    case TOPK: gf_topk(x, 2, 0, false, true, &y, &t0); break;
    case MEDIAN: y = gf_median(x); break;
    case MEDIAN_DIM: gf_median_dim(x, 1, true, &y, &t0); break;
    case QUANTILE: y = gf_quantile(x, c->aux, 1, false, GF_QUANTILE_LINEAR); break;
    case QUANTILE_MID: y = gf_quantile(x, c->aux, GF_DIM_ALL, true, GF_QUANTILE_MIDPOINT); break;
    case AMINMAX:
        if (gf_aminmax(x, 0, false, &t0, &t1) == GF_OK) {
            gf_tensor *m2 = gf_mul_scalar(t0, 2);
            y = gf_sub(t1, m2);
            gf_tensor_release(m2);
        }
        break;
    case FLIP: y = gf_flip(x, (const int[]){0, 1}, 2); break;
    case ROLL: y = gf_roll(x, SZ(1, -2), 2, (const int[]){0, 1}, 2); break;
    case REPEAT: y = gf_repeat(x, SZ(2, 1, 2), 3); break;
    case TILE: y = gf_tile(x, SZ(2), 1); break;
    case RINTER: y = gf_repeat_interleave(x, 2, 0); break;
    case RINTER_T: y = gf_repeat_interleave_tensor(x, c->aux, 1); break;
    case PAD_CONST: y = gf_pad(x, SZ(1, -1, 2, 0), 4, GF_PAD_CONSTANT, 0.5); break;
    case PAD_REFLECT: y = gf_pad(x, SZ(3, 2, 1, 2), 4, GF_PAD_REFLECT, 0); break;
    case PAD_REPLICATE: y = gf_pad(x, SZ(2, 1, 0, 2), 4, GF_PAD_REPLICATE, 0); break;
    case PAD_CIRCULAR: y = gf_pad(x, SZ(4, 1, 3, 1), 4, GF_PAD_CIRCULAR, 0); break;
    case UNBIND: {
        int m = 0;
        if (gf_unbind(x, 1, parts, 4, &m) == GF_OK) {
            np = m;
            y = gf_mul(parts[1], parts[3]);
        }
        break;
    }
    case SPLIT:
        if (gf_split_with_sizes(x, SZ(1, 3), 2, 1, parts, 4) == GF_OK) {
            np = 2;
            y = gf_mul_scalar(parts[1], 3);
        }
        break;
    case UNFOLD: y = gf_unfold(x, 1, 3, 1); break;
    case TAKE: y = gf_take_along_dim(x, c->aux, 1); break;
    case MSELECT: y = gf_masked_select(x, c->aux); break;
    case SCATTER: y = gf_scatter(x, 1, c->aux, b); break;
    case INDEX_PUT: y = gf_index_put(x, (gf_tensor *[]){c->aux, c->aux2}, 2, b, false); break;
    case INDEX_PUT_ACC: y = gf_index_put(x, (gf_tensor *[]){c->aux}, 1, b, true); break;
    case MSCATTER: y = gf_masked_scatter(x, c->aux, b); break;
    case EIN_MM: y = gf_einsum("ij,jk->ik", (gf_tensor *[]){x, b}, 2); break;
    case EIN_DIAG: {
        gf_tensor *sq = gf_narrow(x, 1, 0, 3);
        y = gf_einsum("ii->i", (gf_tensor *[]){sq}, 1);
        gf_tensor_release(sq);
        break;
    }
    case EIN_BMM: {
        gf_tensor *xb = gf_reshape(x, SZ(2, 3, 2), 3); /* [2, 3, 2] x b [2, 2, 3] */
        y = gf_einsum("bij,bjk->bik", (gf_tensor *[]){xb, b}, 2);
        gf_tensor_release(xb);
        break;
    }
    case EIN_3: y = gf_einsum("ij,jk,k->i", (gf_tensor *[]){x, b, c->aux}, 3); break;
    case EIN_ELL: y = gf_einsum("...j,jk->...k", (gf_tensor *[]){x, b}, 2); break;
    default: break;
    }
    for (int i = 0; i < np; i++) gf_tensor_release(parts[i]);
    gf_tensor_release(t0);
    gf_tensor_release(t1);
    gf_tensor_release(x);
    return y;
}

static gf_tensor *leaf(const double *v, const int64_t *sz, int rank) {
    gf_tensor *t = gf_from_data(v, sz, rank, GF_F64, NULL);
    CHECK_MSG(t != NULL, "%s", gf_last_error());
    if (t) gf_tensor_set_requires_grad(t, true);
    return t;
}

static gf_tensor *consti(const double *v, const int64_t *sz, int rank, gf_dtype dt) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= sz[i];
    gf_tensor *f = gf_from_data(v, sz, rank, GF_F64, NULL);
    gf_tensor *t = gf_to_dtype(f, dt);
    gf_tensor_release(f);
    (void)n;
    return t;
}

static uint64_t bytes_in_use(void) {
    gf_memory_stats st = {0};
    gf_memory_get_stats(gf_device_default(), &st);
    return st.bytes_in_use;
}

static void check_case(which op, gf_tensor *aux, gf_tensor *aux2, gf_tensor *b) {
    uint64_t before = bytes_in_use();
    /* x: [4, 3] storage, used as [3, 4]; distinct values apart, one 0 at
     * (1, 1) of the used view for cumprod's rule, none for the norms */
    static const double xs[12] = {0.9, -1.3, 2.1, 0.4, 0.0, -0.7, 1.6, 2.7, -0.25, -1.9, 1.15, 3.3};
    static const double xn[12] = {0.9, -1.3, 2.1, 0.4, 0.55, -0.7, 1.6, 2.7, -0.25, -1.9, 1.15, 3.3};
    bool nz = op <= NORM_HALF || op == LCSE;
    gcase c = {op, aux, aux2};
    gf_tensor *x = leaf(nz ? xn : xs, SZ(4, 3), 2);
    gf_tensor *in[2] = {x, b};
    int n = b ? 2 : 1;
    gf_status s = gf_gradcheck(run, in, n, &c, NULL);
    CHECK_MSG(s == GF_OK, "%s gradcheck: %s", NAMES[op], gf_last_error());
    s = gf_gradgradcheck(run, in, n, &c, NULL);
    CHECK_MSG(s == GF_OK, "%s gradgradcheck: %s", NAMES[op], gf_last_error());
    fprintf(stderr, "  %s %s\n", s == GF_OK ? "ok  " : "FAIL", NAMES[op]);
    gf_tensor_release(x);
    if (b) gf_tensor_set_grad(b, NULL);
    /* every tensor the op made is gone again (no leak in the op) */
    CHECK_MSG(bytes_in_use() == before, "%s: %lld bytes still in use after the case",
              NAMES[op], (long long)(bytes_in_use() - before));
    gf_tensor_release(aux);
    gf_tensor_release(aux2);
    gf_tensor_release(b);
}

static void test_gradchecks(void) {
    for (which op = NORM2; op <= UNFOLD; op++) {
        gf_tensor *aux = NULL;
        if (op == QUANTILE) aux = consti((const double[]){0.3, 0.8}, SZ(2), 1, GF_F64);
        if (op == QUANTILE_MID) aux = consti((const double[]){0.5}, NULL, 0, GF_F64);
        if (op == RINTER_T) aux = consti((const double[]){2, 0, 1, 3}, SZ(4), 1, GF_I64);
        check_case(op, aux, NULL, NULL);
    }
    check_case(TAKE, consti((const double[]){3, 0, 0, 2, 1, 1}, SZ(3, 2), 2, GF_I64), NULL, NULL);
    check_case(MSELECT, consti((const double[]){1, 0, 1, 1}, SZ(4), 1, GF_BOOL), NULL, NULL);
    /* scatter with a duplicate target in row 0 (columns 2 twice) */
    static const double src[8] = {0.3, -0.8, 1.7, 0.6, -1.1, 2.2, 0.45, -0.35};
    check_case(SCATTER, consti((const double[]){2, 2, 0, 3, 1, 0}, SZ(3, 2), 2, GF_I64), NULL,
               leaf(src, SZ(3, 2), 2));
    check_case(INDEX_PUT, consti((const double[]){2, 0, 2}, SZ(3), 1, GF_I64),
               consti((const double[]){1, 3, -3}, SZ(3), 1, GF_I64), leaf(src, SZ(3), 1));
    check_case(INDEX_PUT_ACC, consti((const double[]){1, 0, 1}, SZ(3), 1, GF_I64), NULL,
               leaf(src, SZ(4), 1));
    check_case(MSCATTER, consti((const double[]){0, 1, 1, 0}, SZ(4), 1, GF_BOOL), NULL,
               leaf(src, SZ(8), 1));
    check_case(EIN_MM, NULL, NULL, leaf(src, SZ(4, 2), 2));
    check_case(EIN_DIAG, NULL, NULL, NULL);
    static const double b12[12] = {0.3, -0.8, 1.7, 0.6, -1.1, 2.2, 0.45, -0.35, 1.2, 0.1, -2, 0.7};
    check_case(EIN_BMM, NULL, NULL, leaf(b12, SZ(2, 2, 3), 3));
    check_case(EIN_3, consti((const double[]){0.5, -1.5, 2}, SZ(3), 1, GF_F64), NULL,
               leaf(b12, SZ(4, 3), 2));
    check_case(EIN_ELL, NULL, NULL, leaf(b12, SZ(4, 3), 2));
}

/* d/dx of sum(op(x)) written to g[n] (x a fresh f64 leaf of v). */
static void grad_of(gf_tensor *(*f)(gf_tensor *), const double *v, int64_t n, double *g) {
    gf_tensor *x = leaf(v, &n, 1);
    gf_tensor *y = f(x);
    gf_tensor *s = gf_sum(y, NULL, 0, false);
    gf_tensor *gr = NULL;
    CHECK_MSG(gf_grad(&s, 1, NULL, &x, 1, &gr, NULL) == GF_OK, "%s", gf_last_error());
    CHECK(gr && gf_tensor_to_host(gr, g, sizeof(double) * (size_t)n) == GF_OK);
    gf_tensor_release(gr);
    gf_tensor_release(s);
    gf_tensor_release(y);
    gf_tensor_release(x);
}

static gf_tensor *f_norm2(gf_tensor *x) { return gf_vector_norm(x, 2, NULL, 0, false); }
static gf_tensor *f_norm3(gf_tensor *x) { return gf_vector_norm(x, 3, NULL, 0, false); }
static gf_tensor *f_cumprod(gf_tensor *x) { return gf_cumprod(x, 0); }
static gf_tensor *f_ninf(gf_tensor *x) { return gf_vector_norm(x, INFINITY, NULL, 0, false); }
static gf_tensor *f_median(gf_tensor *x) { return gf_median(x); }

static gf_tensor *f_norm0(gf_tensor *x) { return gf_vector_norm(x, 0, NULL, 0, false); }

static void test_hand_gradients(void) {
    double g[4];
    /* ord 0 counts and passes a zero gradient, even at inf */
    grad_of(f_norm0, (const double[]){0, INFINITY, -2}, 3, g);
    CHECK(g[0] == 0 && g[1] == 0 && g[2] == 0);
    grad_of(f_norm2, (const double[]){0, 0, 0}, 3, g);
    CHECK(g[0] == 0 && g[1] == 0 && g[2] == 0); /* PyTorch's subgradient, not NaN */
    grad_of(f_norm3, (const double[]){0, 0}, 2, g);
    CHECK(g[0] == 0 && g[1] == 0);
    grad_of(f_norm2, (const double[]){3, -4}, 2, g);
    CHECK_CLOSE(g[0], 0.6, 1e-15);
    CHECK_CLOSE(g[1], -0.8, 1e-15);
    /* cumprod of (2, 0, 3, 5): d sum / dx = (1 + 0 + 0 + 0, 2 + 6 + 30, 0, 0) */
    grad_of(f_cumprod, (const double[]){2, 0, 3, 5}, 4, g);
    CHECK_CLOSE(g[0], 1, 0);
    CHECK_CLOSE(g[1], 38, 0);
    CHECK_CLOSE(g[2], 0, 0);
    CHECK_CLOSE(g[3], 0, 0);
    /* two zeros: every gradient but the first zero's prefix products */
    grad_of(f_cumprod, (const double[]){2, 0, 0, 5}, 4, g);
    CHECK(g[0] == 1 && g[1] == 2 && g[2] == 0 && g[3] == 0);
    /* the inf norm shares its gradient between ties */
    grad_of(f_ninf, (const double[]){-2, 1, 2}, 3, g);
    CHECK(g[0] == -0.5 && g[1] == 0 && g[2] == 0.5);
    /* median: all to the chosen element (the lower median, 2 at index 3) */
    grad_of(f_median, (const double[]){3, 1, 4, 2}, 4, g);
    CHECK(g[0] == 0 && g[1] == 0 && g[2] == 0 && g[3] == 1);
}

/* scatter of (5, 6) at index (0, 0) into x of 3: the last write wins and
 * gets the gradient; the overwritten x[0] gets none. */
static void test_scatter_gradient(void) {
    gf_tensor *x = leaf((const double[]){1, 2, 3}, SZ(3), 1);
    gf_tensor *src = leaf((const double[]){5, 6}, SZ(2), 1);
    int64_t iv[2] = {0, 0};
    gf_tensor *idx = gf_from_data(iv, SZ(2), 1, GF_I64, NULL);
    gf_tensor *y = gf_scatter(x, 0, idx, src);
    double yv[3] = {0}, gx[3] = {0}, gs[2] = {0};
    CHECK(y && gf_tensor_to_host(y, yv, sizeof yv) == GF_OK);
    CHECK(yv[0] == 6 && yv[1] == 2 && yv[2] == 3);
    gf_tensor *w = gf_from_data((const double[]){10, 20, 30}, SZ(3), 1, GF_F64, NULL);
    gf_tensor *yw = gf_mul(y, w);
    gf_tensor *s = gf_sum(yw, NULL, 0, false);
    gf_tensor *g[2] = {NULL, NULL};
    CHECK_MSG(gf_grad(&s, 1, NULL, (gf_tensor *[]){x, src}, 2, g, NULL) == GF_OK, "%s",
              gf_last_error());
    CHECK(g[0] && gf_tensor_to_host(g[0], gx, sizeof gx) == GF_OK);
    CHECK(g[1] && gf_tensor_to_host(g[1], gs, sizeof gs) == GF_OK);
    CHECK(gx[0] == 0 && gx[1] == 20 && gx[2] == 30);
    CHECK(gs[0] == 0 && gs[1] == 10);
    gf_tensor *all[9] = {x, src, idx, y, w, yw, s, g[0], g[1]};
    for (int i = 0; i < 9; i++) gf_tensor_release(all[i]);
}

int main(void) {
    gf_init();
    RUN(test_gradchecks);
    RUN(test_hand_gradients);
    RUN(test_scatter_gradient);
    int r = CHECK_REPORT();
    gf_status s = gf_shutdown();
    if (s != GF_OK) {
        fprintf(stderr, "gf_shutdown: %s (a tensor leaked?)\n", gf_last_error());
        return 1;
    }
    return r;
}
