/* SPDX-License-Identifier: BSD-3-Clause */
/* test_grad_layers.c — gradients of the layers of graft/layers.h:
 * gf_gradcheck and gf_gradgradcheck in f64 for each op (contiguous and
 * strided leaves), the gradient rules PyTorch documents (embedding's
 * padding row, instance_norm's running statistics without history), and
 * every bad argument failing with a status and a message naming the op.
 * Forward values are tests/ops/test_layers.c's. */
#include <graft.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"

#define SZ(...) ((const int64_t[]){__VA_ARGS__})

static uint64_t rng_state = 99;
static double urand(void) {
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(rng_state >> 11) / (double)(1ULL << 53) * 2.0 - 1.0;
}

/* An f64 leaf of random values; strided: stored with its last two dims
 * swapped, as a transposed view of a leaf (the leaf is what gradcheck
 * perturbs; the function transposes it back). */
static gf_tensor *leaf(const int64_t *sizes, int rank, bool grad) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= sizes[i];
    double v[1024];
    for (int64_t i = 0; i < n && i < 1024; i++) v[i] = urand();
    gf_tensor *t = gf_from_data(v, sizes, rank, GF_F64, NULL);
    CHECK_MSG(t != NULL, "%s", gf_last_error());
    if (t && grad) CHECK(gf_tensor_set_requires_grad(t, true) == GF_OK);
    return t;
}

typedef enum which {
    CONV1D, CONVT2D, CONVT1D, GROUPN, INSTN, INSTN_EVAL, AAVG, AMAX, INTERP, EMB, SDPA, LINEAR
} which;

typedef struct gcase {
    which op;
    bool strided; /* rank >= 2 inputs arrive as transposes of transposed leaves */
    gf_conv1d_opts c1;
    gf_conv_transpose2d_opts ct;
    gf_conv_transpose1d_opts ct1;
    int64_t groups, out[2];
    gf_interpolate_opts io;
    gf_tensor *aux, *aux2;
    int64_t pad;
    bool causal;
    double dropout;
} gcase;

static gf_tensor *run(gf_tensor *const *in, int n, void *user) {
    const gcase *c = user;
    gf_tensor *v[4] = {NULL, NULL, NULL, NULL};
    for (int i = 0; i < n; i++)
        v[i] = c->strided && gf_tensor_rank(in[i]) >= 2 ? gf_transpose(in[i], -1, -2)
                                                         : gf_tensor_retain(in[i]);
    gf_tensor *b = n > 2 ? v[2] : NULL, *y = NULL;
    switch (c->op) {
    case CONV1D: y = gf_conv1d(v[0], v[1], b, &c->c1); break;
    case CONVT2D: y = gf_conv_transpose2d(v[0], v[1], b, &c->ct); break;
    case CONVT1D: y = gf_conv_transpose1d(v[0], v[1], b, &c->ct1); break;
    case GROUPN: y = gf_group_norm(v[0], c->groups, n > 1 ? v[1] : NULL, b, 1e-5); break;
    case INSTN:
        y = gf_instance_norm(v[0], NULL, NULL, n > 1 ? v[1] : NULL, b, true, 0.1, 1e-5);
        break;
    case INSTN_EVAL:
        y = gf_instance_norm(v[0], c->aux, c->aux2, n > 1 ? v[1] : NULL, b, false, 0.1, 1e-5);
        break;
    case AAVG: y = gf_adaptive_avg_pool2d(v[0], c->out); break;
    case AMAX: y = gf_adaptive_max_pool2d(v[0], c->out, NULL); break;
    case INTERP: y = gf_interpolate(v[0], &c->io); break;
    case EMB: y = gf_embedding_padding_idx(v[0], c->aux, c->pad); break;
    case SDPA:
        if (c->dropout > 0) gf_manual_seed(11); /* the same mask in every evaluation */
        y = gf_scaled_dot_product_attention(v[0], v[1], v[2], c->aux, c->dropout, c->causal, NAN);
        break;
    case LINEAR: y = gf_linear(v[0], v[1], b); break;
    }
    for (int i = 0; i < n; i++) gf_tensor_release(v[i]);
    return y;
}

/* The leaves of a case: for a strided case, each rank >= 2 leaf is made
 * with its last two dims swapped (run() swaps them back). */
static gf_tensor *leaf_for(const gcase *c, const int64_t *sizes, int rank) {
    if (!c->strided || rank < 2) return leaf(sizes, rank, true);
    int64_t s[8];
    memcpy(s, sizes, sizeof(int64_t) * (size_t)rank);
    s[rank - 1] = sizes[rank - 2];
    s[rank - 2] = sizes[rank - 1];
    return leaf(s, rank, true);
}

static void grad_case(const char *name, gcase *c, gf_tensor **in, int n) {
    gf_status s = gf_gradcheck(run, in, n, c, NULL);
    CHECK_MSG(s == GF_OK, "%s%s gradcheck: %s", name, c->strided ? " strided" : "",
              gf_last_error());
    s = gf_gradgradcheck(run, in, n, c, NULL);
    CHECK_MSG(s == GF_OK, "%s%s gradgradcheck: %s", name, c->strided ? " strided" : "",
              gf_last_error());
    for (int i = 0; i < n; i++) gf_tensor_release(in[i]);
}

static void test_gradients(void) {
    for (int st = 0; st < 2; st++) {
        gcase c;
        memset(&c, 0, sizeof c);
        c.strided = st;
        c.op = CONV1D;
        c.c1 = (gf_conv1d_opts){2, 1, 2, 2};
        gf_tensor *a[3] = {leaf_for(&c, SZ(2, 4, 6), 3), leaf_for(&c, SZ(4, 2, 2), 3),
                           leaf_for(&c, SZ(4), 1)};
        grad_case("conv1d", &c, a, 3);

        c.op = CONVT2D;
        c.ct = (gf_conv_transpose2d_opts){{2, 1}, {1, 0}, {1, 0}, {1, 2}, 2};
        gf_tensor *b[3] = {leaf_for(&c, SZ(1, 4, 2, 3), 4), leaf_for(&c, SZ(4, 1, 2, 2), 4),
                           leaf_for(&c, SZ(2), 1)};
        grad_case("conv_transpose2d", &c, b, 3);
        /* output_padding >= stride: the cut path */
        c.ct = (gf_conv_transpose2d_opts){{1, 1}, {0, 1}, {1, 1}, {2, 3}, 1};
        gf_tensor *b2[3] = {leaf_for(&c, SZ(1, 2, 2, 2), 4), leaf_for(&c, SZ(2, 2, 2, 2), 4),
                            leaf_for(&c, SZ(2), 1)};
        grad_case("conv_transpose2d cut", &c, b2, 3);

        c.op = CONVT1D;
        c.ct1 = (gf_conv_transpose1d_opts){2, 1, 1, 1, 1};
        gf_tensor *b3[3] = {leaf_for(&c, SZ(2, 2, 3), 3), leaf_for(&c, SZ(2, 3, 3), 3),
                            leaf_for(&c, SZ(3), 1)};
        grad_case("conv_transpose1d", &c, b3, 3);

        c.op = GROUPN;
        c.groups = 2;
        gf_tensor *g[3] = {leaf_for(&c, SZ(2, 4, 2, 3), 4), leaf_for(&c, SZ(4), 1),
                           leaf_for(&c, SZ(4), 1)};
        grad_case("group_norm", &c, g, 3);

        c.op = INSTN;
        gf_tensor *in[3] = {leaf_for(&c, SZ(2, 3, 2, 2), 4), leaf_for(&c, SZ(3), 1),
                            leaf_for(&c, SZ(3), 1)};
        grad_case("instance_norm", &c, in, 3);
        c.op = INSTN_EVAL;
        c.aux = gf_from_data((const double[]){0.1, -0.2, 0.3}, SZ(3), 1, GF_F64, NULL);
        c.aux2 = gf_from_data((const double[]){1.5, 0.7, 2.0}, SZ(3), 1, GF_F64, NULL);
        gf_tensor *ie[3] = {leaf_for(&c, SZ(2, 3, 2, 2), 4), leaf_for(&c, SZ(3), 1),
                            leaf_for(&c, SZ(3), 1)};
        grad_case("instance_norm eval", &c, ie, 3);
        gf_tensor_release(c.aux);
        gf_tensor_release(c.aux2);
        c.aux = c.aux2 = NULL;

        c.op = AAVG;
        c.out[0] = 3;
        c.out[1] = 2;
        gf_tensor *p1[1] = {leaf_for(&c, SZ(1, 2, 5, 4), 4)};
        grad_case("adaptive_avg_pool2d", &c, p1, 1);
        c.out[0] = 2; /* divisible: the avg_pool2d path */
        gf_tensor *p2[1] = {leaf_for(&c, SZ(1, 2, 4, 4), 4)};
        grad_case("adaptive_avg_pool2d uniform", &c, p2, 1);
        c.op = AMAX;
        c.out[0] = 3;
        gf_tensor *p3[1] = {leaf_for(&c, SZ(1, 2, 5, 4), 4)};
        grad_case("adaptive_max_pool2d", &c, p3, 1);
        c.out[0] = 2;
        gf_tensor *p4[1] = {leaf_for(&c, SZ(2, 1, 4, 4), 4)};
        grad_case("adaptive_max_pool2d uniform", &c, p4, 1);

        c.op = INTERP;
        gf_interp_mode modes[4] = {GF_INTERP_NEAREST, GF_INTERP_BILINEAR, GF_INTERP_BILINEAR,
                                   GF_INTERP_AREA};
        for (int m = 0; m < 4; m++) {
            c.io = (gf_interpolate_opts){modes[m], {5, 3}, {0, 0}, m == 2, false};
            gf_tensor *x[1] = {leaf_for(&c, SZ(1, 2, 3, 4), 4)};
            grad_case(m == 0 ? "interpolate nearest" : m == 3 ? "interpolate area"
                      : m == 1 ? "interpolate bilinear" : "interpolate bilinear align_corners",
                      &c, x, 1);
        }
        c.io = (gf_interpolate_opts){GF_INTERP_LINEAR, {0}, {1.5, 0}, false, false};
        gf_tensor *x1[1] = {leaf_for(&c, SZ(2, 2, 4), 3)};
        grad_case("interpolate linear", &c, x1, 1);

        c.op = EMB;
        c.pad = 1;
        /* the padding row's zero gradient is by design (test_rules); here
         * the other rows, through the masking */
        c.aux = gf_from_data((const int64_t[]){0, 2, 3, 3, 2, 0}, SZ(2, 3), 2, GF_I64, NULL);
        gf_tensor *e[1] = {leaf_for(&c, SZ(4, 3), 2)};
        grad_case("embedding padding_idx", &c, e, 1);
        gf_tensor_release(c.aux);
        c.aux = NULL;

        c.op = SDPA;
        for (int k = 0; k < 4; k++) {
            c.causal = k == 1;
            c.dropout = k == 3 ? 0.3 : 0.0;
            if (k == 2) /* bool mask with a row that attends to nothing */
                c.aux = gf_from_data((const uint8_t[]){1, 0, 1, 0, 0, 0, 0, 1, 1}, SZ(3, 3), 2,
                                     GF_BOOL, NULL);
            gf_tensor *q[3] = {leaf_for(&c, SZ(2, 3, 2), 3), leaf_for(&c, SZ(2, 3, 2), 3),
                               leaf_for(&c, SZ(2, 3, 2), 3)};
            grad_case(k == 0 ? "sdpa" : k == 1 ? "sdpa causal" : k == 2 ? "sdpa bool mask"
                                                                        : "sdpa dropout",
                      &c, q, 3);
            gf_tensor_release(c.aux);
            c.aux = NULL;
        }
        c.causal = false;
        c.dropout = 0;
        c.aux = gf_from_data((const double[]){0.5, -1, 0, 2, -INFINITY, 0.1}, SZ(2, 3), 2, GF_F64,
                             NULL);
        gf_tensor *q2[3] = {leaf_for(&c, SZ(2, 2), 2), leaf_for(&c, SZ(3, 2), 2),
                            leaf_for(&c, SZ(3, 4), 2)};
        grad_case("sdpa float mask", &c, q2, 3);
        gf_tensor_release(c.aux);
        c.aux = NULL;

        c.op = LINEAR;
        gf_tensor *l[3] = {leaf_for(&c, SZ(2, 2, 3), 3), leaf_for(&c, SZ(4, 3), 2),
                           leaf_for(&c, SZ(4), 1)};
        grad_case("linear", &c, l, 3);
    }
}

/* PyTorch's rules: no gradient into embedding's padding row; running
 * statistics updated without history. */
static void test_rules(void) {
    gf_tensor *w = leaf(SZ(3, 2), 2, true);
    gf_tensor *idx = gf_from_data((const int64_t[]){2, 2, 0}, SZ(3), 1, GF_I64, NULL);
    gf_tensor *y = gf_embedding_padding_idx(w, idx, 2);
    gf_tensor *s = gf_sum(y, NULL, 0, false);
    CHECK(s && gf_backward(s, NULL, NULL) == GF_OK);
    gf_tensor *g = gf_tensor_grad(w);
    double gv[6] = {0};
    CHECK(g && gf_tensor_to_host(g, gv, sizeof gv) == GF_OK);
    const double want[6] = {1, 1, 0, 0, 0, 0};
    for (int i = 0; i < 6; i++) CHECK_CLOSE(gv[i], want[i], 0);
    gf_tensor *arr[] = {w, idx, y, s, g};
    for (size_t i = 0; i < sizeof arr / sizeof arr[0]; i++) gf_tensor_release(arr[i]);

    gf_tensor *x = leaf(SZ(2, 2, 3), 3, true);
    gf_tensor *rm = gf_zeros(SZ(2), 1, GF_F64, NULL), *rv = gf_ones(SZ(2), 1, GF_F64, NULL);
    y = gf_instance_norm(x, rm, rv, NULL, NULL, true, 0.1, 1e-5);
    CHECK(y && gf_tensor_requires_grad(y));
    CHECK(!gf_tensor_requires_grad(rm) && !gf_tensor_requires_grad(rv));
    CHECK(gf_tensor_version(rm) == 1 && gf_tensor_version(rv) == 1);
    gf_tensor_release(x);
    gf_tensor_release(rm);
    gf_tensor_release(rv);
    gf_tensor_release(y);
}

/* ------------------------------------------------------------ errors */

#define EXPECT_ERR(call, status, op, text)                                                    \
    do {                                                                                      \
        gf_clear_error();                                                                     \
        gf_tensor *r_ = (call);                                                               \
        CHECK_MSG(r_ == NULL, "%s succeeded", #call);                                        \
        gf_tensor_release(r_);                                                                \
        CHECK_MSG(gf_last_status() == (status), "%s: status %d, message %s", #call,           \
                  (int)gf_last_status(), gf_last_error());                                    \
        const char *m_ = gf_last_error();                                                     \
        CHECK_CONTAINS(m_, op);                                                               \
        CHECK_CONTAINS(m_, text);                                                             \
    } while (0)

static void test_errors(void) {
    gf_tensor *x3 = gf_zeros(SZ(1, 2, 5), 3, GF_F32, NULL);
    gf_tensor *x4 = gf_zeros(SZ(1, 2, 3, 3), 4, GF_F32, NULL);
    gf_tensor *xi = gf_zeros(SZ(1, 2, 5), 3, GF_I64, NULL);
    gf_tensor *w3 = gf_zeros(SZ(4, 2, 3), 3, GF_F32, NULL);
    gf_tensor *w3d = gf_zeros(SZ(4, 2, 3), 3, GF_F64, NULL);
    gf_tensor *w4 = gf_zeros(SZ(2, 3, 2, 2), 4, GF_F32, NULL);
    gf_tensor *b5 = gf_zeros(SZ(5), 1, GF_F32, NULL);
    gf_tensor *v2 = gf_zeros(SZ(2), 1, GF_F32, NULL);
    const char *c1 = "conv1d";
    EXPECT_ERR(gf_conv1d(NULL, w3, NULL, NULL), GF_ERR_INVALID, c1, "NULL");
    EXPECT_ERR(gf_conv1d(x4, w3, NULL, NULL), GF_ERR_SHAPE, c1, "3-D");
    EXPECT_ERR(gf_conv1d(x3, w4, NULL, NULL), GF_ERR_SHAPE, c1, "weight");
    EXPECT_ERR(gf_conv1d(xi, w3, NULL, NULL), GF_ERR_DTYPE, c1, "float");
    EXPECT_ERR(gf_conv1d(x3, w3d, NULL, NULL), GF_ERR_DTYPE, c1, "weight");
    EXPECT_ERR(gf_conv1d(x3, w3, NULL, &(gf_conv1d_opts){.stride = -1}), GF_ERR_INVALID, c1,
               "stride");
    EXPECT_ERR(gf_conv1d(x3, w3, NULL, &(gf_conv1d_opts){.groups = 3}), GF_ERR_SHAPE, c1,
               "groups=3");
    EXPECT_ERR(gf_conv1d(x3, w3, NULL, &(gf_conv1d_opts){.groups = 2}), GF_ERR_SHAPE, c1,
               "channels");
    EXPECT_ERR(gf_conv1d(x3, w3, b5, NULL), GF_ERR_SHAPE, c1, "bias");
    EXPECT_ERR(gf_conv1d(x3, w3, NULL, &(gf_conv1d_opts){.dilation = 3}), GF_ERR_SHAPE, c1,
               "Kernel size");

    const char *ct = "conv_transpose2d";
    gf_tensor *wt = gf_zeros(SZ(2, 3, 2, 2), 4, GF_F32, NULL);
    gf_tensor *x2 = gf_zeros(SZ(2, 2), 2, GF_F32, NULL);
    EXPECT_ERR(gf_conv_transpose2d(x2, wt, NULL, NULL), GF_ERR_SHAPE, ct, "4-D");
    EXPECT_ERR(gf_conv_transpose2d(x4, w3, NULL, NULL), GF_ERR_SHAPE, ct, "weight");
    EXPECT_ERR(gf_conv_transpose2d(x4, wt, NULL, &(gf_conv_transpose2d_opts){.padding = {-1}}),
               GF_ERR_INVALID, ct, "padding");
    EXPECT_ERR(gf_conv_transpose2d(x4, wt, NULL,
                                   &(gf_conv_transpose2d_opts){.stride = {2, 2},
                                                               .output_padding = {2, 0}}),
               GF_ERR_INVALID, ct, "output padding must be smaller");
    EXPECT_ERR(gf_conv_transpose2d(x4, wt, NULL, &(gf_conv_transpose2d_opts){.groups = 3}),
               GF_ERR_SHAPE, ct, "groups=3");
    EXPECT_ERR(gf_conv_transpose2d(x4, wt, NULL, &(gf_conv_transpose2d_opts){.groups = -1}),
               GF_ERR_INVALID, ct, "groups");
    gf_tensor *wt3 = gf_zeros(SZ(3, 3, 2, 2), 4, GF_F32, NULL);
    EXPECT_ERR(gf_conv_transpose2d(x4, wt3, NULL, NULL), GF_ERR_SHAPE, ct, "channels");
    gf_tensor *x4e = gf_zeros(SZ(1, 2, 0, 3), 4, GF_F32, NULL);
    EXPECT_ERR(gf_conv_transpose2d(x4e, wt, NULL, NULL), GF_ERR_SHAPE, ct, "non-zero");
    EXPECT_ERR(gf_conv_transpose2d(x4, wt, NULL, &(gf_conv_transpose2d_opts){.padding = {3, 0}}),
               GF_ERR_SHAPE, ct, "too small");
    EXPECT_ERR(gf_conv_transpose2d(x4, wt, b5, NULL), GF_ERR_SHAPE, ct, "bias");
    EXPECT_ERR(gf_conv_transpose1d(x4, w3, NULL, NULL), GF_ERR_SHAPE, "conv_transpose1d", "3-D");
    EXPECT_ERR(gf_conv_transpose1d(x3, wt, NULL, NULL), GF_ERR_SHAPE, "conv_transpose1d",
               "weight");
    EXPECT_ERR(gf_conv_transpose1d(x3, w3, NULL,
                                   &(gf_conv_transpose1d_opts){.stride = 1, .output_padding = 1}),
               GF_ERR_INVALID, "conv_transpose1d", "output padding");

    const char *gn = "group_norm";
    gf_tensor *x1 = gf_zeros(SZ(4), 1, GF_F32, NULL);
    EXPECT_ERR(gf_group_norm(x1, 1, NULL, NULL, 1e-5), GF_ERR_SHAPE, gn, "2 dims");
    EXPECT_ERR(gf_group_norm(x4, 0, NULL, NULL, 1e-5), GF_ERR_INVALID, gn, "num_groups");
    EXPECT_ERR(gf_group_norm(x4, 3, NULL, NULL, 1e-5), GF_ERR_SHAPE, gn, "divisible");
    EXPECT_ERR(gf_group_norm(x4, 2, b5, NULL, 1e-5), GF_ERR_SHAPE, gn, "weight");
    EXPECT_ERR(gf_group_norm(x4, 2, NULL, NULL, -1.0), GF_ERR_INVALID, gn, "eps");

    const char *inn = "instance_norm";
    gf_tensor *x1s = gf_zeros(SZ(2, 2, 1), 3, GF_F32, NULL);
    gf_tensor *v2d = gf_zeros(SZ(2), 1, GF_F64, NULL);
    EXPECT_ERR(gf_instance_norm(x2, NULL, NULL, NULL, NULL, true, 0.1, 1e-5), GF_ERR_SHAPE, inn,
               "3 dims");
    EXPECT_ERR(gf_instance_norm(x4, v2, NULL, NULL, NULL, true, 0.1, 1e-5), GF_ERR_INVALID, inn,
               "together");
    EXPECT_ERR(gf_instance_norm(x4, NULL, NULL, NULL, NULL, false, 0.1, 1e-5), GF_ERR_INVALID,
               inn, "use_input_stats");
    EXPECT_ERR(gf_instance_norm(x1s, NULL, NULL, NULL, NULL, true, 0.1, 1e-5), GF_ERR_SHAPE, inn,
               "more than 1 spatial");
    EXPECT_ERR(gf_instance_norm(x4, NULL, NULL, b5, NULL, true, 0.1, 1e-5), GF_ERR_SHAPE, inn,
               "weight");
    EXPECT_ERR(gf_instance_norm(x4, v2d, v2d, NULL, NULL, true, 0.1, 1e-5), GF_ERR_DTYPE, inn,
               "running_mean");
    EXPECT_ERR(gf_instance_norm(x4, NULL, NULL, NULL, NULL, true, NAN, 1e-5), GF_ERR_INVALID, inn,
               "momentum");

    const char *aa = "adaptive_avg_pool2d", *am = "adaptive_max_pool2d";
    EXPECT_ERR(gf_adaptive_avg_pool2d(x2, SZ(1, 1)), GF_ERR_SHAPE, aa, "3-D or 4-D");
    EXPECT_ERR(gf_adaptive_avg_pool2d(x4e, SZ(1, 1)), GF_ERR_SHAPE, aa, "non-zero");
    EXPECT_ERR(gf_adaptive_avg_pool2d(x4, NULL), GF_ERR_INVALID, aa, "output_size");
    gf_tensor *x4i = gf_zeros(SZ(1, 1, 2, 2), 4, GF_I32, NULL);
    EXPECT_ERR(gf_adaptive_max_pool2d(x4i, SZ(1, 1), NULL), GF_ERR_DTYPE, am, "float");
    EXPECT_ERR(gf_adaptive_max_pool2d(x2, SZ(1, 1), NULL), GF_ERR_SHAPE, am, "3-D or 4-D");
    EXPECT_ERR(gf_adaptive_avg_pool2d(x4, SZ(1, INT64_MAX / 2)), GF_ERR_OVERFLOW, aa,
               "too large");
    EXPECT_ERR(gf_adaptive_max_pool2d(x4, SZ(INT64_MAX, 1), NULL), GF_ERR_OVERFLOW, am,
               "too large");

    const char *ip = "interpolate";
    gf_tensor *x5 = gf_zeros(SZ(1, 1, 2, 2, 2), 5, GF_F32, NULL);
    EXPECT_ERR(gf_interpolate(x4, NULL), GF_ERR_INVALID, ip, "opts");
    EXPECT_ERR(gf_interpolate(x5, &(gf_interpolate_opts){.size = {2, 2}}), GF_ERR_SHAPE, ip,
               "4-D");
    EXPECT_ERR(gf_interpolate(x4, &(gf_interpolate_opts){.mode = 9, .size = {2, 2}}),
               GF_ERR_INVALID, ip, "mode");
    EXPECT_ERR(gf_interpolate(x4, &(gf_interpolate_opts){.mode = GF_INTERP_LINEAR, .size = {2, 2}}),
               GF_ERR_SHAPE, ip, "linear mode needs 3-D");
    EXPECT_ERR(gf_interpolate(x3, &(gf_interpolate_opts){.mode = GF_INTERP_BILINEAR, .size = {2}}),
               GF_ERR_SHAPE, ip, "bilinear mode needs 4-D");
    EXPECT_ERR(gf_interpolate(x4, &(gf_interpolate_opts){.size = {2, 2}, .align_corners = true}),
               GF_ERR_INVALID, ip, "align_corners");
    EXPECT_ERR(gf_interpolate(x4, &(gf_interpolate_opts){.size = {2, 2}, .scale_factor = {2, 2}}),
               GF_ERR_INVALID, ip, "only one of size or scale_factor");
    EXPECT_ERR(gf_interpolate(x4, &(gf_interpolate_opts){.mode = GF_INTERP_NEAREST}),
               GF_ERR_INVALID, ip, "either size or scale_factor");
    EXPECT_ERR(gf_interpolate(x4, &(gf_interpolate_opts){.scale_factor = {-2, 2}}),
               GF_ERR_INVALID, ip, "scale_factor[0]");
    EXPECT_ERR(gf_interpolate(x4, &(gf_interpolate_opts){.scale_factor = {2, INFINITY}}),
               GF_ERR_INVALID, ip, "scale_factor[1]");
    EXPECT_ERR(gf_interpolate(x4, &(gf_interpolate_opts){.size = {2, -1}}), GF_ERR_INVALID, ip,
               "size[1]");
    EXPECT_ERR(gf_interpolate(x4, &(gf_interpolate_opts){.scale_factor = {0.1, 1}}),
               GF_ERR_INVALID, ip, "greater than 0");
    EXPECT_ERR(gf_interpolate(x4i, &(gf_interpolate_opts){.size = {2, 2}}), GF_ERR_DTYPE, ip,
               "float");

    const char *em = "embedding";
    gf_tensor *ew = gf_zeros(SZ(3, 2), 2, GF_F32, NULL);
    gf_tensor *ei = gf_zeros(SZ(2), 1, GF_I64, NULL);
    EXPECT_ERR(gf_embedding_padding_idx(ew, ei, 3), GF_ERR_INDEX, em, "padding_idx");
    EXPECT_ERR(gf_embedding_padding_idx(ew, ei, -4), GF_ERR_INDEX, em, "padding_idx");
    EXPECT_ERR(gf_embedding_padding_idx(x1, ei, 0), GF_ERR_SHAPE, em, "2-D");

    const char *sd = "scaled_dot_product_attention";
    gf_tensor *q = gf_zeros(SZ(2, 3, 4), 3, GF_F32, NULL);
    gf_tensor *k5 = gf_zeros(SZ(2, 5, 3), 3, GF_F32, NULL);
    gf_tensor *k = gf_zeros(SZ(2, 5, 4), 3, GF_F32, NULL);
    gf_tensor *kb = gf_zeros(SZ(3, 5, 4), 3, GF_F32, NULL);
    gf_tensor *v = gf_zeros(SZ(2, 5, 6), 3, GF_F32, NULL);
    gf_tensor *v4 = gf_zeros(SZ(2, 4, 6), 3, GF_F32, NULL);
    gf_tensor *mi = gf_zeros(SZ(3, 5), 2, GF_I64, NULL);
    gf_tensor *mb = gf_zeros(SZ(3, 4), 2, GF_BOOL, NULL);
    EXPECT_ERR(gf_scaled_dot_product_attention(x1, k, v, NULL, 0, false, NAN), GF_ERR_SHAPE, sd,
               "2 dims");
    EXPECT_ERR(gf_scaled_dot_product_attention(q, k5, v, NULL, 0, false, NAN), GF_ERR_SHAPE, sd,
               "key");
    EXPECT_ERR(gf_scaled_dot_product_attention(q, k, v4, NULL, 0, false, NAN), GF_ERR_SHAPE, sd,
               "value");
    EXPECT_ERR(gf_scaled_dot_product_attention(q, kb, v, NULL, 0, false, NAN), GF_ERR_SHAPE, sd,
               "");
    EXPECT_ERR(gf_scaled_dot_product_attention(q, k, v, NULL, 1.5, false, NAN), GF_ERR_INVALID,
               sd, "dropout_p");
    EXPECT_ERR(gf_scaled_dot_product_attention(q, k, v, NULL, 0, false, INFINITY), GF_ERR_INVALID,
               sd, "scale");
    EXPECT_ERR(gf_scaled_dot_product_attention(q, k, v, mb, 0, true, NAN), GF_ERR_INVALID, sd,
               "is_causal");
    EXPECT_ERR(gf_scaled_dot_product_attention(q, k, v, mi, 0, false, NAN), GF_ERR_DTYPE, sd,
               "attn_mask");
    EXPECT_ERR(gf_scaled_dot_product_attention(q, k, v, mb, 0, false, NAN), GF_ERR_SHAPE, sd,
               "attn_mask");
    EXPECT_ERR(gf_scaled_dot_product_attention(xi, k, v, NULL, 0, false, NAN), GF_ERR_DTYPE, sd,
               "float");

    const char *li = "linear";
    gf_tensor *lw = gf_zeros(SZ(3, 5), 2, GF_F32, NULL);
    gf_tensor *lwd = gf_zeros(SZ(3, 5), 2, GF_F64, NULL);
    EXPECT_ERR(gf_linear(x3, w3, NULL), GF_ERR_SHAPE, li, "weight [out, in]");
    EXPECT_ERR(gf_linear(x2, lw, NULL), GF_ERR_SHAPE, li, "weight [out, in]");
    EXPECT_ERR(gf_linear(x3, lw, b5), GF_ERR_SHAPE, li, "bias");
    EXPECT_ERR(gf_linear(x3, lwd, NULL), GF_ERR_DTYPE, li, "weight");
    EXPECT_ERR(gf_linear(NULL, lw, NULL), GF_ERR_INVALID, li, "NULL");

    gf_tensor *all[] = {x3, x4, xi, w3, w3d, w4, b5, v2, wt, wt3, x4e, x1, x2, x1s, v2d, x4i, x5,
                        ew, ei, q, k5, k, kb, v, v4, mi, mb, lw, lwd};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) gf_tensor_release(all[i]);
}

int main(void) {
    gf_init();
    RUN(test_gradients);
    RUN(test_rules);
    RUN(test_errors);
    return check_report_();
}
