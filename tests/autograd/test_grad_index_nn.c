/* SPDX-License-Identifier: BSD-3-Clause */
/* test_grad_index_nn.c — gradients of the indexing ops, conv2d, pooling,
 * normalisation, dropout and the losses.
 *
 * Every op goes through gf_gradcheck (analytical Jacobian against central
 * differences) and gf_gradgradcheck (second derivatives through
 * create_graph) in f64, on contiguous and non-contiguous (transposed or
 * sliced with a step) inputs. Linear ops are checked on their squared
 * output: the second derivative then runs through the backward of the
 * op's own gradient formula, which a linear op alone would never reach.
 * A few closed-form gradients, the saving rules and an f32 first-order check
 * complete it. */
#include <graft.h>
#include <stdint.h>

#include "check.h"

/* ------------------------------------------------------------ inputs */
static uint64_t g_state = 0x243F6A8885A308D3ull;

static double urand(void) { /* in [-1, 1) */
    g_state = g_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(g_state >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

typedef enum { CONTIG = 0, TRANSPOSED, STRIDED } layout;

static int64_t numel_of(const int64_t *s, int rank) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= s[i];
    return n;
}

/* A leaf requiring grad that view_of() turns into a tensor of `sizes` with
 * the given layout: TRANSPOSED stores the last two dims swapped, STRIDED
 * stores dim 0 twice as long and takes every other row. distinct: values
 * that are pairwise at least 0.05 apart (max-pooling without ties). */
static gf_tensor *leaf(const int64_t *sizes, int rank, layout lay, gf_dtype dt, bool distinct,
                       double lo, double hi) {
    int64_t s[8];
    memcpy(s, sizes, sizeof(int64_t) * (size_t)rank);
    if (lay == TRANSPOSED) {
        int64_t t = s[rank - 1];
        s[rank - 1] = s[rank - 2];
        s[rank - 2] = t;
    } else if (lay == STRIDED) {
        s[0] *= 2;
    }
    int64_t n = numel_of(s, rank);
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++) v[i] = lo + (hi - lo) * (urand() + 1.0) / 2.0;
    if (distinct) { /* a shuffled ramp */
        for (int64_t i = 0; i < n; i++) v[i] = 0.05 * (double)(i - n / 2);
        for (int64_t i = n - 1; i > 0; i--) {
            int64_t j = (int64_t)((urand() + 1.0) / 2.0 * (double)(i + 1)) % (i + 1);
            double t = v[i];
            v[i] = v[j];
            v[j] = t;
        }
    }
    gf_tensor *x = gf_from_data(v, s, rank, GF_F64, NULL);
    free(v);
    gf_tensor *y = dt == GF_F64 ? x : gf_to_dtype(x, dt);
    if (y != x) gf_tensor_release(x);
    CHECK_MSG(y && gf_tensor_set_requires_grad(y, true) == GF_OK, "%s", gf_last_error());
    return y;
}

static gf_tensor *rnd(const int64_t *sizes, int rank, layout lay) {
    return leaf(sizes, rank, lay, GF_F64, false, -1.0, 1.0);
}

static gf_tensor *view_of(gf_tensor *t, layout lay) {
    switch (lay) {
    case TRANSPOSED: return gf_transpose(t, -2, -1);
    case STRIDED: return gf_slice(t, 0, 0, gf_tensor_size(t, 0), 2);
    default: return gf_tensor_retain(t);
    }
}

static gf_tensor *ints(const int64_t *vals, const int64_t *sizes, int rank) {
    return gf_from_data(vals, sizes, rank, GF_I64, NULL);
}

static gf_tensor *f64s(const double *vals, const int64_t *sizes, int rank) {
    return gf_from_data(vals, sizes, rank, GF_F64, NULL);
}

/* ------------------------------------------------------------ cases */
typedef struct tcase tcase;
typedef gf_tensor *(*op_fn)(gf_tensor *const *v, int n, const tcase *c);

struct tcase {
    op_fn op;
    layout lay[4];
    bool square; /* check op(...)^2 */
    int dim;
    int64_t diag;
    gf_tensor *index, *target, *weight, *aux, *rm, *rv;
    gf_conv2d_opts conv;
    gf_pool2d_opts pool;
    int nr;
    double eps, p, smoothing;
    bool training;
    gf_reduction red;
    int64_t ignore;
    int64_t sizes[4]; /* conv gradient kernels: the other operand's sizes */
};

static gf_tensor *run_case(gf_tensor *const *in, int n, void *user) {
    const tcase *c = user;
    gf_tensor *v[4] = {NULL, NULL, NULL, NULL};
    for (int i = 0; i < n; i++) v[i] = view_of(in[i], c->lay[i]);
    gf_tensor *y = c->op(v, n, c);
    for (int i = 0; i < n; i++) gf_tensor_release(v[i]);
    if (y && c->square) {
        gf_tensor *s = gf_square(y);
        gf_tensor_release(y);
        y = s;
    }
    return y;
}

/* gradcheck, then (second) gradgradcheck; releases the inputs. */
static void check_case(const char *name, tcase *c, gf_tensor **in, int n, bool second,
                       const gf_gradcheck_opts *o) {
    for (int i = 0; i < n; i++) CHECK_MSG(in[i] != NULL, "%s: input %d", name, i);
    gf_status s = gf_gradcheck(run_case, in, n, c, o);
    CHECK_MSG(s == GF_OK, "%s gradcheck: %s", name, gf_last_error());
    if (second) {
        s = gf_gradgradcheck(run_case, in, n, c, o);
        CHECK_MSG(s == GF_OK, "%s gradgradcheck: %s", name, gf_last_error());
    }
    for (int i = 0; i < n; i++) gf_tensor_release(in[i]);
}
#define CHECK_CASE(name, c, n, ...)                       \
    do {                                                  \
        gf_tensor *in_[] = {__VA_ARGS__};                 \
        check_case(name, c, in_, n, true, NULL);          \
    } while (0)

/* ------------------------------------------------------------ index ops */
static gf_tensor *op_index_select(gf_tensor *const *v, int n, const tcase *c) {
    (void)n;
    return gf_index_select(v[0], c->dim, c->index);
}

static void test_index_select(void) {
    int64_t i3[3] = {3, 0, 3}, n3 = 3, i4[4] = {4, 1, 1, 0}, n4 = 4, two = 2;
    int64_t xs[2] = {4, 5};
    tcase c = {.op = op_index_select, .square = true, .dim = 0, .index = ints(i3, &n3, 1)};
    CHECK_CASE("index_select dim 0", &c, 1, rnd(xs, 2, CONTIG));
    gf_tensor_release(c.index);
    c = (tcase){.op = op_index_select, .square = true, .dim = 1, .index = ints(i4, &n4, 1),
                .lay = {TRANSPOSED}};
    CHECK_CASE("index_select dim 1 transposed", &c, 1, rnd(xs, 2, TRANSPOSED));
    gf_tensor_release(c.index);
    c = (tcase){.op = op_index_select, .square = true, .dim = -1, .index = ints(&two, NULL, 0),
                .lay = {STRIDED}};
    CHECK_CASE("index_select 0-dim index, strided", &c, 1, rnd(xs, 2, STRIDED));
    gf_tensor_release(c.index);
}

/* Closed form: each row of x receives as many ones as the index names it. */
static void test_index_select_counts(void) {
    int64_t n4 = 4, i3[3] = {3, 0, 3}, n3 = 3;
    gf_tensor *x = rnd(&n4, 1, CONTIG), *idx = ints(i3, &n3, 1);
    gf_tensor *y = gf_index_select(x, 0, idx);
    CHECK(y && strcmp(gf_tensor_grad_fn_name(y), "IndexSelectBackward") == 0);
    gf_tensor *ones = gf_ones(&n3, 1, GF_F64, NULL);
    CHECK_MSG(gf_backward(y, ones, NULL) == GF_OK, "%s", gf_last_error());
    gf_tensor *g = gf_tensor_grad(x);
    double got[4] = {0}, want[4] = {1, 0, 0, 2};
    CHECK(g && gf_tensor_to_host(g, got, sizeof got) == GF_OK);
    for (int i = 0; i < 4; i++) CHECK_CLOSE(got[i], want[i], 0);
    gf_tensor_release(g);
    gf_tensor_release(ones);
    gf_tensor_release(y);
    gf_tensor_release(idx);
    gf_tensor_release(x);
}

/* An index modified in place after it was saved: backward refuses. */
static void test_index_modified(void) {
    int64_t n4 = 4, i3[3] = {3, 0, 3}, n3 = 3;
    gf_tensor *x = rnd(&n4, 1, CONTIG), *idx = ints(i3, &n3, 1);
    gf_tensor *y = gf_gather(x, 0, idx);
    CHECK(gf_fill_(idx, 1.0) == GF_OK);
    gf_tensor *ones = gf_ones(&n3, 1, GF_F64, NULL);
    CHECK(gf_backward(y, ones, NULL) == GF_ERR_AUTOGRAD);
    CHECK_CONTAINS(gf_last_error(), "modified by an in-place operation");
    gf_tensor_release(ones);
    gf_tensor_release(y);
    gf_tensor_release(idx);
    gf_tensor_release(x);
}

static gf_tensor *op_gather(gf_tensor *const *v, int n, const tcase *c) {
    (void)n;
    return gf_gather(v[0], c->dim, c->index);
}

static void test_gather(void) {
    int64_t xs[2] = {3, 4}, is1[2] = {3, 2}, iv1[6] = {0, 3, 1, 1, 3, 2};
    int64_t is0[2] = {2, 4}, iv0[8] = {2, 0, 1, 2, 2, 2, 0, 1};
    tcase c = {.op = op_gather, .square = true, .dim = 1, .index = ints(iv1, is1, 2)};
    CHECK_CASE("gather dim 1", &c, 1, rnd(xs, 2, CONTIG));
    gf_tensor_release(c.index);
    c = (tcase){.op = op_gather, .square = true, .dim = 0, .index = ints(iv0, is0, 2),
                .lay = {TRANSPOSED}};
    CHECK_CASE("gather dim 0 transposed", &c, 1, rnd(xs, 2, TRANSPOSED));
    gf_tensor_release(c.index);
}

static gf_tensor *op_scatter_add(gf_tensor *const *v, int n, const tcase *c) {
    (void)n;
    return gf_scatter_add(v[0], c->dim, c->index, v[1]);
}

static void test_scatter_add(void) {
    /* src [3, 3] is larger than index [2, 3]: its last row gets no gradient. */
    int64_t xs[2] = {3, 4}, ss[2] = {3, 3}, is[2] = {2, 3}, iv[6] = {0, 3, 0, 2, 2, 1};
    tcase c = {.op = op_scatter_add, .square = true, .dim = 1, .index = ints(iv, is, 2)};
    CHECK_CASE("scatter_add dim 1, src larger", &c, 2, rnd(xs, 2, CONTIG), rnd(ss, 2, CONTIG));
    c.lay[0] = STRIDED;
    c.lay[1] = TRANSPOSED;
    CHECK_CASE("scatter_add strided x, transposed src", &c, 2, rnd(xs, 2, STRIDED),
               rnd(ss, 2, TRANSPOSED));
    gf_tensor_release(c.index);
    int64_t is0[2] = {2, 4}, iv0[8] = {2, 2, 0, 1, 2, 0, 0, 1}, ss0[2] = {2, 4};
    c = (tcase){.op = op_scatter_add, .square = true, .dim = 0, .index = ints(iv0, is0, 2)};
    CHECK_CASE("scatter_add dim 0", &c, 2, rnd(xs, 2, CONTIG), rnd(ss0, 2, CONTIG));
    gf_tensor_release(c.index);
}

static gf_tensor *op_index_add(gf_tensor *const *v, int n, const tcase *c) {
    (void)n;
    return gf_index_add(v[0], c->dim, c->index, v[1]);
}

/* The in-place forms on a non-leaf (x * 1, so history is rebased onto it). */
static gf_tensor *inplace_of(gf_tensor *const *v, const tcase *c, bool scatter) {
    gf_tensor *self = gf_mul_scalar(v[0], 1.0);
    gf_status s = scatter ? gf_scatter_add_(self, c->dim, c->index, v[1])
                          : gf_index_add_(self, c->dim, c->index, v[1]);
    if (s != GF_OK) {
        gf_tensor_release(self);
        return NULL;
    }
    return self;
}

static gf_tensor *op_scatter_add_(gf_tensor *const *v, int n, const tcase *c) {
    (void)n;
    return inplace_of(v, c, true);
}

static gf_tensor *op_index_add_(gf_tensor *const *v, int n, const tcase *c) {
    (void)n;
    return inplace_of(v, c, false);
}

static void test_index_add(void) {
    int64_t xs[2] = {4, 3}, ss[2] = {3, 3}, iv[3] = {1, 3, 1}, n3 = 3;
    tcase c = {.op = op_index_add, .square = true, .dim = 0, .index = ints(iv, &n3, 1)};
    CHECK_CASE("index_add dim 0", &c, 2, rnd(xs, 2, CONTIG), rnd(ss, 2, CONTIG));
    gf_tensor_release(c.index);
    int64_t iv1[2] = {2, 0}, n2 = 2, ss1[2] = {4, 2};
    c = (tcase){.op = op_index_add, .square = true, .dim = 1, .index = ints(iv1, &n2, 1),
                .lay = {TRANSPOSED, STRIDED}};
    CHECK_CASE("index_add dim 1 transposed x, strided src", &c, 2, rnd(xs, 2, TRANSPOSED),
               rnd(ss1, 2, STRIDED));
    c.op = op_index_add_;
    CHECK_CASE("index_add_ in place", &c, 2, rnd(xs, 2, TRANSPOSED), rnd(ss1, 2, STRIDED));
    gf_tensor_release(c.index);
    int64_t ys[2] = {3, 4}, is[2] = {2, 3}, iv2[6] = {0, 3, 0, 2, 2, 1};
    c = (tcase){.op = op_scatter_add_, .square = true, .dim = 1, .index = ints(iv2, is, 2)};
    CHECK_CASE("scatter_add_ in place", &c, 2, rnd(ys, 2, CONTIG), rnd(ss, 2, CONTIG));
    gf_tensor_release(c.index);
}

static gf_tensor *op_embedding(gf_tensor *const *v, int n, const tcase *c) {
    (void)n;
    return gf_embedding(v[0], c->index);
}

static void test_embedding(void) {
    int64_t ws[2] = {5, 3}, is[2] = {2, 3}, iv[6] = {0, 4, 0, 2, 2, 1};
    tcase c = {.op = op_embedding, .square = true, .index = ints(iv, is, 2)};
    CHECK_CASE("embedding", &c, 1, rnd(ws, 2, CONTIG));
    c.lay[0] = TRANSPOSED;
    CHECK_CASE("embedding transposed weight", &c, 1, rnd(ws, 2, TRANSPOSED));
    gf_tensor_release(c.index);
}

static gf_tensor *op_cat(gf_tensor *const *v, int n, const tcase *c) {
    return gf_cat(v, n, c->dim);
}

static gf_tensor *op_stack(gf_tensor *const *v, int n, const tcase *c) {
    return gf_stack(v, n, c->dim);
}

static void test_cat_stack(void) {
    int64_t a[2] = {2, 3}, b[2] = {1, 3}, d[2] = {4, 3}, empty = 0;
    tcase c = {.op = op_cat, .square = true, .dim = 0};
    CHECK_CASE("cat dim 0", &c, 3, rnd(a, 2, CONTIG), rnd(b, 2, CONTIG), rnd(d, 2, CONTIG));
    /* A legacy 1-D [0] input is skipped by cat and gets an empty gradient. */
    CHECK_CASE("cat with a [0] input", &c, 4, rnd(a, 2, CONTIG), rnd(&empty, 1, CONTIG),
               rnd(b, 2, CONTIG), rnd(d, 2, CONTIG));
    int64_t a1[2] = {3, 2}, b1[2] = {3, 1}, d1[2] = {3, 4};
    c = (tcase){.op = op_cat, .square = true, .dim = -1, .lay = {TRANSPOSED, CONTIG, STRIDED}};
    CHECK_CASE("cat dim 1 transposed / strided", &c, 3, rnd(a1, 2, TRANSPOSED),
               rnd(b1, 2, CONTIG), rnd(d1, 2, STRIDED));
    c = (tcase){.op = op_stack, .square = true, .dim = 1};
    CHECK_CASE("stack dim 1", &c, 2, rnd(a, 2, CONTIG), rnd(a, 2, CONTIG));
    c = (tcase){.op = op_stack, .square = true, .dim = 0, .lay = {TRANSPOSED, STRIDED}};
    CHECK_CASE("stack dim 0 transposed / strided", &c, 2, rnd(a, 2, TRANSPOSED),
               rnd(a, 2, STRIDED));
}

/* cat of an f32 and an f64 tensor promotes to f64; each input's gradient
 * comes back in its own dtype, and is the slice of grad_output at its place. */
static void test_cat_mixed_dtypes(void) {
    int64_t s1 = 2, s2 = 3, s5 = 5;
    gf_tensor *a = leaf(&s1, 1, CONTIG, GF_F32, false, -1, 1);
    gf_tensor *b = rnd(&s2, 1, CONTIG);
    gf_tensor *parts[2] = {a, b};
    gf_tensor *y = gf_cat(parts, 2, 0);
    CHECK(y && gf_tensor_dtype(y) == GF_F64);
    CHECK(y && strcmp(gf_tensor_grad_fn_name(y), "CatBackward") == 0);
    double gv[5] = {1, 2, 3, 4, 5};
    gf_tensor *go = f64s(gv, &s5, 1);
    gf_tensor *res[2] = {NULL, NULL};
    CHECK_MSG(gf_grad(&y, 1, &go, parts, 2, res, NULL) == GF_OK, "%s", gf_last_error());
    CHECK(res[0] && gf_tensor_dtype(res[0]) == GF_F32);
    CHECK(res[1] && gf_tensor_dtype(res[1]) == GF_F64);
    float ga[2] = {0};
    double gb[3] = {0};
    CHECK(res[0] && gf_tensor_to_host(res[0], ga, sizeof ga) == GF_OK);
    CHECK(res[1] && gf_tensor_to_host(res[1], gb, sizeof gb) == GF_OK);
    CHECK_CLOSE(ga[0], 1.0, 0);
    CHECK_CLOSE(ga[1], 2.0, 0);
    for (int i = 0; i < 3; i++) CHECK_CLOSE(gb[i], 3.0 + i, 0);
    gf_tensor_release(res[0]);
    gf_tensor_release(res[1]);
    gf_tensor_release(go);
    gf_tensor_release(y);
    gf_tensor_release(a);
    gf_tensor_release(b);
}

static gf_tensor *op_tril(gf_tensor *const *v, int n, const tcase *c) {
    (void)n;
    return gf_tril(v[0], c->diag);
}

static gf_tensor *op_triu(gf_tensor *const *v, int n, const tcase *c) {
    (void)n;
    return gf_triu(v[0], c->diag);
}

static void test_tril_triu(void) {
    int64_t xs[3] = {2, 3, 4};
    tcase c = {.op = op_tril, .square = true, .diag = -1};
    CHECK_CASE("tril -1", &c, 1, rnd(xs, 3, CONTIG));
    c.lay[0] = TRANSPOSED;
    c.diag = 1;
    CHECK_CASE("tril 1 transposed", &c, 1, rnd(xs, 3, TRANSPOSED));
    c = (tcase){.op = op_triu, .square = true, .diag = 1};
    CHECK_CASE("triu 1", &c, 1, rnd(xs, 3, CONTIG));
    c.lay[0] = STRIDED;
    c.diag = -2;
    CHECK_CASE("triu -2 strided", &c, 1, rnd(xs, 3, STRIDED));
}

static void test_one_hot(void) {
    int64_t n3 = 3, iv[3] = {2, 0, 1};
    gf_tensor *idx = ints(iv, &n3, 1);
    gf_tensor *y = gf_one_hot(idx, 4);
    CHECK(y && gf_tensor_dtype(y) == GF_I64);
    CHECK(y && !gf_tensor_requires_grad(y));
    CHECK(y && gf_tensor_grad_fn_name(y) == NULL);
    gf_tensor_release(y);
    gf_tensor_release(idx);
}

/* ------------------------------------------------------------ conv2d */
static gf_tensor *op_conv(gf_tensor *const *v, int n, const tcase *c) {
    return gf_conv2d(v[0], v[1], n > 2 ? v[2] : NULL, &c->conv);
}

static void test_conv2d(void) {
    int64_t xs[4] = {2, 4, 5, 5}, ws[4] = {6, 2, 3, 3}, bs = 6;
    tcase c = {.op = op_conv,
               .conv = {.stride = {2, 2}, .padding = {1, 1}, .dilation = {2, 2}, .groups = 2}};
    CHECK_CASE("conv2d stride 2 pad 1 dil 2 groups 2 bias", &c, 3, rnd(xs, 4, CONTIG),
               rnd(ws, 4, CONTIG), rnd(&bs, 1, CONTIG));
    /* Asymmetric options, non-contiguous x and w, squared output. */
    int64_t xs2[4] = {1, 2, 4, 5}, ws2[4] = {3, 2, 2, 3};
    c = (tcase){.op = op_conv, .square = true, .lay = {TRANSPOSED, STRIDED},
                .conv = {.stride = {1, 2}, .padding = {1, 0}, .dilation = {1, 1}}};
    CHECK_CASE("conv2d transposed x, strided w, no bias", &c, 2, rnd(xs2, 4, TRANSPOSED),
               rnd(ws2, 4, STRIDED));
    int64_t xs3[3] = {2, 4, 4}, ws3[4] = {2, 2, 3, 3}, bs3 = 2;
    c = (tcase){.op = op_conv, .square = true, .conv = {.padding = {1, 1}}};
    CHECK_CASE("conv2d unbatched", &c, 3, rnd(xs3, 3, CONTIG), rnd(ws3, 4, CONTIG),
               rnd(&bs3, 1, CONTIG));
}

static gf_tensor *op_conv_bw_input(gf_tensor *const *v, int n, const tcase *c) {
    (void)n;
    return gf_conv2d_backward_input(v[0], v[1], c->sizes, &c->conv);
}

static gf_tensor *op_conv_bw_weight(gf_tensor *const *v, int n, const tcase *c) {
    (void)n;
    return gf_conv2d_backward_weight(v[0], v[1], c->sizes, &c->conv);
}

/* The gradient kernels as functions of their own: first and second
 * derivatives in both arguments (this is what a third derivative of conv2d
 * runs through). */
static void test_conv2d_gradient_kernels(void) {
    gf_conv2d_opts o = {.stride = {2, 2}, .padding = {1, 1}, .dilation = {2, 2}, .groups = 2};
    int64_t gys[4] = {2, 6, 2, 2}, ws[4] = {6, 2, 3, 3}, xs[4] = {2, 4, 5, 5};
    tcase c = {.op = op_conv_bw_input, .square = true, .conv = o};
    memcpy(c.sizes, xs, sizeof xs);
    CHECK_CASE("conv2d_backward_input", &c, 2, rnd(gys, 4, CONTIG), rnd(ws, 4, CONTIG));
    c = (tcase){.op = op_conv_bw_weight, .square = true, .conv = o, .lay = {STRIDED, TRANSPOSED}};
    memcpy(c.sizes, ws, sizeof ws);
    CHECK_CASE("conv2d_backward_weight", &c, 2, rnd(gys, 4, STRIDED), rnd(xs, 4, TRANSPOSED));
}

/* ------------------------------------------------------------ pooling */
static gf_tensor *op_max_pool(gf_tensor *const *v, int n, const tcase *c) {
    (void)n;
    return gf_max_pool2d(v[0], &c->pool, NULL);
}

static gf_tensor *op_avg_pool(gf_tensor *const *v, int n, const tcase *c) {
    (void)n;
    return gf_avg_pool2d(v[0], &c->pool);
}

static gf_tensor *distinct(const int64_t *sizes, int rank, layout lay) {
    return leaf(sizes, rank, lay, GF_F64, true, 0, 0);
}

static void test_max_pool2d(void) {
    int64_t xs[4] = {2, 2, 5, 5};
    tcase c = {.op = op_max_pool, .square = true,
               .pool = {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}, .ceil_mode = true}};
    CHECK_CASE("max_pool2d k3 s2 p1 ceil", &c, 1, distinct(xs, 4, CONTIG));
    c.pool = (gf_pool2d_opts){.kernel = {2, 3}, .stride = {1, 2}, .dilation = {2, 1},
                              .padding = {1, 1}};
    c.lay[0] = TRANSPOSED;
    CHECK_CASE("max_pool2d dilation, transposed", &c, 1, distinct(xs, 4, TRANSPOSED));
    int64_t xs3[3] = {2, 4, 5};
    c = (tcase){.op = op_max_pool, .square = true, .lay = {STRIDED},
                .pool = {.kernel = {2, 2}, .ceil_mode = true}};
    CHECK_CASE("max_pool2d unbatched ceil, strided", &c, 1, distinct(xs3, 3, STRIDED));
}

static void test_avg_pool2d(void) {
    int64_t xs[4] = {2, 2, 5, 5};
    tcase c = {.op = op_avg_pool, .square = true,
               .pool = {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}, .ceil_mode = true}};
    CHECK_CASE("avg_pool2d k3 s2 p1 ceil", &c, 1, rnd(xs, 4, CONTIG));
    c.pool.exclude_pad = false;
    c.lay[0] = TRANSPOSED;
    CHECK_CASE("avg_pool2d count_include_pad, transposed", &c, 1, rnd(xs, 4, TRANSPOSED));
    int64_t xs3[3] = {2, 4, 5};
    c = (tcase){.op = op_avg_pool, .square = true, .lay = {STRIDED},
                .pool = {.kernel = {2, 3}, .stride = {1, 2}, .padding = {1, 1}}};
    CHECK_CASE("avg_pool2d unbatched, strided", &c, 1, rnd(xs3, 3, STRIDED));
}

static gf_tensor *op_max_pool_bw(gf_tensor *const *v, int n, const tcase *c) {
    (void)n;
    return gf_max_pool2d_backward(v[0], c->index, c->aux, &c->pool);
}

static gf_tensor *op_avg_pool_bw(gf_tensor *const *v, int n, const tcase *c) {
    (void)n;
    return gf_avg_pool2d_backward(v[0], c->aux, &c->pool);
}

/* The pooling gradients as functions of grad_y (their double backward). */
static void test_pool_gradient_kernels(void) {
    int64_t xs[4] = {2, 2, 5, 5};
    gf_pool2d_opts o = {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}, .ceil_mode = true};
    gf_tensor *x = distinct(xs, 4, CONTIG), *idx = NULL;
    gf_tensor *y = gf_max_pool2d(x, &o, &idx);
    CHECK(y && idx);
    const int64_t *ys = gf_tensor_sizes(y);
    tcase c = {.op = op_max_pool_bw, .square = true, .pool = o, .index = idx, .aux = x};
    CHECK_CASE("max_pool2d_backward", &c, 1, rnd(ys, 4, CONTIG));
    c = (tcase){.op = op_avg_pool_bw, .square = true, .pool = o, .aux = x, .lay = {TRANSPOSED}};
    CHECK_CASE("avg_pool2d_backward", &c, 1, rnd(ys, 4, TRANSPOSED));
    gf_tensor_release(y);
    gf_tensor_release(idx);
    gf_tensor_release(x);
}

/* ------------------------------------------------------------ normalisation */
static gf_tensor *op_layer_norm(gf_tensor *const *v, int n, const tcase *c) {
    return gf_layer_norm(v[0], c->nr, n > 1 ? v[1] : NULL, n > 2 ? v[2] : NULL, c->eps, NULL,
                         NULL);
}

static void test_layer_norm(void) {
    int64_t xs[3] = {3, 4, 5}, wsz[2] = {4, 5};
    tcase c = {.op = op_layer_norm, .nr = 2, .eps = 1e-5};
    CHECK_CASE("layer_norm nr 2 affine", &c, 3, rnd(xs, 3, CONTIG), rnd(wsz, 2, CONTIG),
               rnd(wsz, 2, CONTIG));
    c = (tcase){.op = op_layer_norm, .nr = 1, .eps = 1e-5, .lay = {TRANSPOSED}};
    CHECK_CASE("layer_norm nr 1 no affine, transposed", &c, 1, rnd(xs, 3, TRANSPOSED));
    int64_t x2[2] = {2, 3};
    c = (tcase){.op = op_layer_norm, .nr = 2, .eps = 1e-5, .lay = {STRIDED, TRANSPOSED}};
    CHECK_CASE("layer_norm over all dims, strided", &c, 3, rnd(x2, 2, STRIDED),
               rnd(x2, 2, TRANSPOSED), rnd(x2, 2, CONTIG));
}

static gf_tensor *op_batch_norm(gf_tensor *const *v, int n, const tcase *c) {
    return gf_batch_norm(v[0], c->rm, c->rv, n > 1 ? v[1] : NULL, n > 2 ? v[2] : NULL,
                         c->training, 0.1, c->eps, NULL, NULL);
}

static void test_batch_norm(void) {
    int64_t xs[3] = {3, 2, 4}, cs = 2;
    double m0[3] = {0.1, -0.2, 0.3}, v0[3] = {0.5, 1.5, 0.8};
    tcase c = {.op = op_batch_norm, .training = true, .eps = 1e-5, .rm = f64s(m0, &cs, 1),
               .rv = f64s(v0, &cs, 1)};
    CHECK_CASE("batch_norm training [N, C, L] affine", &c, 3, rnd(xs, 3, CONTIG),
               rnd(&cs, 1, CONTIG), rnd(&cs, 1, CONTIG));
    gf_tensor_release(c.rm);
    gf_tensor_release(c.rv);
    int64_t x4[4] = {2, 3, 2, 2}, c3 = 3;
    c = (tcase){.op = op_batch_norm, .training = true, .eps = 1e-5, .lay = {TRANSPOSED}};
    CHECK_CASE("batch_norm training 4-D no affine, transposed", &c, 1, rnd(x4, 4, TRANSPOSED));
    int64_t x2[2] = {4, 3};
    c = (tcase){.op = op_batch_norm, .training = true, .eps = 1e-5, .lay = {STRIDED}};
    CHECK_CASE("batch_norm training [N, C], strided", &c, 3, rnd(x2, 2, STRIDED),
               rnd(&c3, 1, CONTIG), rnd(&c3, 1, CONTIG));
    c = (tcase){.op = op_batch_norm, .training = false, .eps = 1e-5, .square = true,
                .rm = f64s(m0, &c3, 1), .rv = f64s(v0, &c3, 1)};
    CHECK_CASE("batch_norm eval", &c, 3, rnd(x4, 4, CONTIG), rnd(&c3, 1, CONTIG),
               rnd(&c3, 1, CONTIG));
    gf_tensor_release(c.rm);
    gf_tensor_release(c.rv);
}

/* Closed form in evaluation: y = (x - rm) / sqrt(rv + eps) * w + b, so
 * dy/dx = w / sqrt(rv + eps), dy/dw = (x - rm) / sqrt(rv + eps), dy/db = 1. */
static void test_batch_norm_eval_closed_form(void) {
    int64_t xs[2] = {2, 2}, cs = 2;
    double xv[4] = {1, 2, 3, 4}, wv[2] = {2, -1}, bv[2] = {0.5, 0.25}, m[2] = {1, -1},
           v[2] = {3, 0.25};
    gf_tensor *x = f64s(xv, xs, 2), *w = f64s(wv, &cs, 1), *b = f64s(bv, &cs, 1);
    gf_tensor *rm = f64s(m, &cs, 1), *rv = f64s(v, &cs, 1);
    gf_tensor_set_requires_grad(x, true);
    gf_tensor_set_requires_grad(w, true);
    gf_tensor_set_requires_grad(b, true);
    gf_tensor *y = gf_batch_norm(x, rm, rv, w, b, false, 0.1, 1.0, NULL, NULL);
    gf_tensor *ones = gf_ones(xs, 2, GF_F64, NULL);
    CHECK_MSG(gf_backward(y, ones, NULL) == GF_OK, "%s", gf_last_error());
    gf_tensor *gx = gf_tensor_grad(x), *gw = gf_tensor_grad(w), *gb = gf_tensor_grad(b);
    double hx[4] = {0}, hw[2] = {0}, hb[2] = {0};
    CHECK(gx && gf_tensor_to_host(gx, hx, sizeof hx) == GF_OK);
    CHECK(gw && gf_tensor_to_host(gw, hw, sizeof hw) == GF_OK);
    CHECK(gb && gf_tensor_to_host(gb, hb, sizeof hb) == GF_OK);
    /* eps 1: invstd = 1/2 (channel 0), 1/sqrt(1.25) (channel 1). */
    double is[2] = {0.5, 1.0 / sqrt(1.25)};
    for (int i = 0; i < 4; i++) CHECK_CLOSE(hx[i], wv[i % 2] * is[i % 2], 1e-12);
    CHECK_CLOSE(hw[0], ((1 - 1) + (3 - 1)) * is[0], 1e-12);
    CHECK_CLOSE(hw[1], ((2 + 1) + (4 + 1)) * is[1], 1e-12);
    CHECK_CLOSE(hb[0], 2, 0);
    CHECK_CLOSE(hb[1], 2, 0);
    gf_tensor_release(gx);
    gf_tensor_release(gw);
    gf_tensor_release(gb);
    gf_tensor_release(ones);
    gf_tensor_release(y);
    gf_tensor *ts[5] = {x, w, b, rm, rv};
    for (int i = 0; i < 5; i++) gf_tensor_release(ts[i]);
}

/* ------------------------------------------------------------ saving rules */
static int g_packs;

static void *count_pack(const gf_tensor *t, void *user) {
    (void)user;
    g_packs++;
    return gf_tensor_retain((gf_tensor *)t);
}
static gf_tensor *count_unpack(void *packed, void *user) {
    (void)user;
    return gf_tensor_retain(packed);
}
static void count_release(void *packed, void *user) {
    (void)user;
    gf_tensor_release(packed);
}

/* How many tensors an op saves, counted by a pack hook. */
static int saves_of(gf_tensor *(*make)(gf_tensor **), gf_tensor **in) {
    gf_saved_tensor_hooks h = {count_pack, count_unpack, count_release, NULL};
    g_packs = 0;
    CHECK(gf_saved_tensor_hooks_push(&h) == GF_OK);
    gf_tensor *y = make(in);
    CHECK_MSG(y != NULL, "%s", gf_last_error());
    CHECK(gf_saved_tensor_hooks_pop() == GF_OK);
    gf_tensor_release(y);
    return g_packs;
}

static gf_tensor *mk_conv(gf_tensor **in) { return gf_conv2d(in[0], in[1], in[2], NULL); }
static gf_tensor *mk_avg(gf_tensor **in) {
    gf_pool2d_opts o = {.kernel = {2, 2}};
    return gf_avg_pool2d(in[0], &o);
}
static gf_tensor *mk_ln(gf_tensor **in) {
    return gf_layer_norm(in[0], 1, in[1], in[2], 1e-5, NULL, NULL);
}
static gf_tensor *mk_scatter(gf_tensor **in) { return gf_scatter_add(in[0], 0, in[3], in[1]); }

static gf_tensor *plain(const int64_t *sizes, int rank) {
    gf_tensor *t = rnd(sizes, rank, CONTIG);
    gf_tensor_set_requires_grad(t, false);
    return t;
}

static void test_saves_only_what_is_needed(void) {
    int64_t xs[4] = {1, 2, 4, 4}, ws[4] = {3, 2, 3, 3}, bs = 3;
    gf_tensor *in[4] = {plain(xs, 4), plain(ws, 4), plain(&bs, 1), NULL};
    gf_tensor_set_requires_grad(in[2], true);
    CHECK_MSG(saves_of(mk_conv, in) == 0, "conv2d, bias only: %d saved", g_packs);
    gf_tensor_set_requires_grad(in[1], true);
    CHECK_MSG(saves_of(mk_conv, in) == 1, "conv2d, weight and bias: %d saved", g_packs);
    gf_tensor_set_requires_grad(in[0], true);
    CHECK_MSG(saves_of(mk_conv, in) == 2, "conv2d, all: %d saved", g_packs);
    CHECK_MSG(saves_of(mk_avg, in) == 0, "avg_pool2d: %d saved", g_packs);
    for (int i = 0; i < 3; i++) gf_tensor_release(in[i]);

    int64_t ls[2] = {3, 4}, l1 = 4;
    gf_tensor *ln[3] = {plain(ls, 2), plain(&l1, 1), plain(&l1, 1)};
    gf_tensor_set_requires_grad(ln[2], true);
    CHECK_MSG(saves_of(mk_ln, ln) == 0, "layer_norm, bias only: %d saved", g_packs);
    gf_tensor_set_requires_grad(ln[1], true);
    CHECK_MSG(saves_of(mk_ln, ln) == 3, "layer_norm, weight: %d saved (x, mean, rstd)", g_packs);
    gf_tensor_set_requires_grad(ln[0], true);
    CHECK_MSG(saves_of(mk_ln, ln) == 4, "layer_norm, all: %d saved", g_packs);
    for (int i = 0; i < 3; i++) gf_tensor_release(ln[i]);

    int64_t n3 = 3, iv[3] = {0, 2, 0};
    gf_tensor *sc[4] = {plain(&n3, 1), plain(&n3, 1), NULL, ints(iv, &n3, 1)};
    gf_tensor_set_requires_grad(sc[0], true);
    CHECK_MSG(saves_of(mk_scatter, sc) == 0, "scatter_add, x only: %d saved", g_packs);
    gf_tensor_set_requires_grad(sc[1], true);
    CHECK_MSG(saves_of(mk_scatter, sc) == 1, "scatter_add, src: %d saved", g_packs);
    gf_tensor_release(sc[0]);
    gf_tensor_release(sc[1]);
    gf_tensor_release(sc[3]);
}

/* ------------------------------------------------------------ dropout, losses */
static gf_tensor *op_dropout(gf_tensor *const *v, int n, const tcase *c) {
    (void)n;
    gf_manual_seed(1234); /* the same mask on every evaluation */
    return gf_dropout(v[0], c->p, c->training);
}

static void test_dropout(void) {
    int64_t xs[2] = {4, 5};
    tcase c = {.op = op_dropout, .square = true, .p = 0.3, .training = true};
    CHECK_CASE("dropout training", &c, 1, rnd(xs, 2, CONTIG));
    c.lay[0] = TRANSPOSED;
    c.p = 1.0;
    CHECK_CASE("dropout p = 1, transposed", &c, 1, rnd(xs, 2, TRANSPOSED));
    c.training = false;
    CHECK_CASE("dropout eval", &c, 1, rnd(xs, 2, TRANSPOSED));
}

static gf_tensor *op_ce(gf_tensor *const *v, int n, const tcase *c) {
    return gf_cross_entropy(v[0], n > 1 ? v[1] : c->target, c->weight, c->red, c->ignore,
                            c->smoothing);
}

static gf_tensor *op_nll(gf_tensor *const *v, int n, const tcase *c) {
    (void)n;
    return gf_nll_loss(v[0], c->target, c->weight, c->red, c->ignore);
}

static void test_losses(void) {
    int64_t ls[2] = {4, 5}, n4 = 4, c5 = 5;
    int64_t tv[4] = {1, -100, 4, 0};
    double wv[5] = {0.5, 1.0, 2.0, 0.25, 1.5};
    gf_tensor *target = ints(tv, &n4, 1), *weight = f64s(wv, &c5, 1);
    const gf_reduction reds[3] = {GF_REDUCTION_MEAN, GF_REDUCTION_SUM, GF_REDUCTION_NONE};
    char name[128];
    for (int r = 0; r < 3; r++)
        for (int wi = 0; wi < 2; wi++)
            for (int ls_i = 0; ls_i < 2; ls_i++) {
                tcase c = {.op = op_ce, .target = target, .weight = wi ? weight : NULL,
                           .red = reds[r], .ignore = -100, .smoothing = ls_i ? 0.1 : 0.0,
                           .lay = {(r + wi) % 2 ? TRANSPOSED : CONTIG}};
                snprintf(name, sizeof name, "cross_entropy reduction %d weight %d smoothing %d",
                         (int)reds[r], wi, ls_i);
                CHECK_CASE(name, &c, 1, rnd(ls, 2, c.lay[0]));
                c.op = op_nll;
                snprintf(name, sizeof name, "nll_loss reduction %d weight %d", (int)reds[r], wi);
                if (!ls_i) CHECK_CASE(name, &c, 1, rnd(ls, 2, c.lay[0]));
            }
    /* [N, C, d] logits with [N, d] targets, one ignored. */
    int64_t l3[3] = {2, 3, 4}, t2[2] = {2, 4}, tv2[8] = {0, 2, 1, 7, 2, 2, 0, 1};
    gf_tensor *target2 = ints(tv2, t2, 2);
    tcase c = {.op = op_ce, .target = target2, .red = GF_REDUCTION_MEAN, .ignore = 7,
               .smoothing = 0.1, .lay = {STRIDED}};
    CHECK_CASE("cross_entropy [N, C, d], ignore_index 7", &c, 1, rnd(l3, 3, STRIDED));
    /* Probability targets, differentiable in both arguments. */
    c = (tcase){.op = op_ce, .weight = weight, .red = GF_REDUCTION_MEAN, .ignore = -100,
                .smoothing = 0.1};
    CHECK_CASE("cross_entropy probability targets", &c, 2, rnd(ls, 2, CONTIG),
               leaf(ls, 2, CONTIG, GF_F64, false, 0.0, 1.0));
    gf_tensor_release(target2);
    gf_tensor_release(target);
    gf_tensor_release(weight);
}

static gf_tensor *op_mse(gf_tensor *const *v, int n, const tcase *c) {
    (void)n;
    return gf_mse_loss(v[0], v[1], c->red);
}

static void test_mse(void) {
    int64_t xs[2] = {3, 4}, t1 = 4;
    for (int r = 0; r < 3; r++) {
        tcase c = {.op = op_mse, .red = (gf_reduction)r, .lay = {r == 1 ? TRANSPOSED : CONTIG}};
        CHECK_CASE("mse_loss", &c, 2, rnd(xs, 2, c.lay[0]), rnd(xs, 2, CONTIG));
        c.lay[0] = STRIDED;
        CHECK_CASE("mse_loss broadcast target, strided input", &c, 2, rnd(xs, 2, STRIDED),
                   rnd(&t1, 1, CONTIG));
    }
}

/* ------------------------------------------------------------ f32 */
static void test_f32(void) {
    gf_gradcheck_opts o = GF_GRADCHECK_OPTS_DEFAULT;
    o.eps = 1e-3, o.atol = 1e-2, o.rtol = 1e-2;
    int64_t xs[4] = {2, 4, 5, 5}, ws[4] = {6, 2, 3, 3}, bs = 6;
    tcase c = {.op = op_conv,
               .conv = {.stride = {2, 2}, .padding = {1, 1}, .dilation = {2, 2}, .groups = 2}};
    gf_tensor *cin[3] = {leaf(xs, 4, CONTIG, GF_F32, false, -1, 1),
                         leaf(ws, 4, CONTIG, GF_F32, false, -1, 1),
                         leaf(&bs, 1, CONTIG, GF_F32, false, -1, 1)};
    check_case("conv2d f32", &c, cin, 3, false, &o);
    int64_t ls[3] = {3, 4, 5}, wsz[2] = {4, 5};
    c = (tcase){.op = op_layer_norm, .nr = 2, .eps = 1e-5};
    gf_tensor *lin[3] = {leaf(ls, 3, CONTIG, GF_F32, false, -1, 1),
                         leaf(wsz, 2, CONTIG, GF_F32, false, -1, 1),
                         leaf(wsz, 2, CONTIG, GF_F32, false, -1, 1)};
    check_case("layer_norm f32", &c, lin, 3, false, &o);
    int64_t es[2] = {4, 5}, n4 = 4, tv[4] = {1, -100, 4, 0};
    double wv[5] = {0.5, 1.0, 2.0, 0.25, 1.5};
    int64_t c5 = 5;
    gf_tensor *w64 = f64s(wv, &c5, 1);
    c = (tcase){.op = op_ce, .target = ints(tv, &n4, 1), .weight = gf_to_dtype(w64, GF_F32),
                .red = GF_REDUCTION_MEAN, .ignore = -100, .smoothing = 0.1};
    gf_tensor *ein[1] = {leaf(es, 2, CONTIG, GF_F32, false, -2, 2)};
    check_case("cross_entropy f32", &c, ein, 1, false, &o);
    gf_tensor_release(c.target);
    gf_tensor_release(c.weight);
    gf_tensor_release(w64);
}

int main(void) {
    RUN(test_index_select);
    RUN(test_index_select_counts);
    RUN(test_index_modified);
    RUN(test_gather);
    RUN(test_scatter_add);
    RUN(test_index_add);
    RUN(test_embedding);
    RUN(test_cat_stack);
    RUN(test_cat_mixed_dtypes);
    RUN(test_tril_triu);
    RUN(test_one_hot);
    RUN(test_conv2d);
    RUN(test_conv2d_gradient_kernels);
    RUN(test_max_pool2d);
    RUN(test_avg_pool2d);
    RUN(test_pool_gradient_kernels);
    RUN(test_layer_norm);
    RUN(test_batch_norm);
    RUN(test_batch_norm_eval_closed_form);
    RUN(test_saves_only_what_is_needed);
    RUN(test_dropout);
    RUN(test_losses);
    RUN(test_mse);
    RUN(test_f32);
    return CHECK_REPORT();
}
