/* SPDX-License-Identifier: BSD-3-Clause */
/* test_ocl_gradcheck.c — gradients computed on the OpenCL device agree with
 * central differences (gf_gradcheck, f64): elementwise chains, matmul,
 * softmax / cross-entropy, layer norm, convolution, pooling, reductions and
 * indexing, whose backward kernels (index_add, scatter_add, the pooling and
 * convolution gradients) all run on the device; and one second derivative. */
#include "xd_test.h"

/* fn's intermediates live in a scope of their own; the result is kept. */
#define SCOPED(expr)                     \
    do {                                 \
        gf_scope_begin();                \
        gf_tensor *r_ = (expr);          \
        if (r_) gf_scope_keep(r_);       \
        gf_scope_end();                  \
        return r_;                       \
    } while (0)

static gf_tensor *leaf(const int64_t *sizes, int rank, uint64_t seed) {
    gf_manual_seed(seed);
    gf_tensor *t = gf_rand_uniform(sizes, rank, -1.0, 1.0, GF_F64, xd_dev);
    if (t) gf_tensor_set_requires_grad(t, true);
    return t;
}

static gf_tensor *f_elementwise(gf_tensor *const *in, int n, void *user) {
    (void)n, (void)user;
    gf_tensor *a = in[0], *b = in[1];
    SCOPED(gf_add(gf_mul(gf_sigmoid(a), gf_tanh(b)),
                  gf_sub(gf_exp(gf_mul_scalar(a, 0.5)), gf_gelu(gf_div(a, gf_add_scalar(gf_square(b), 1.0)), true))));
}
static gf_tensor *f_mlp(gf_tensor *const *in, int n, void *user) {
    (void)n, (void)user;
    gf_scope_begin();
    gf_tensor *h = gf_softplus(gf_add(gf_matmul(in[0], in[1]), in[2]), 1.0, 20.0);
    gf_tensor *y = gf_log_softmax(gf_matmul(h, gf_transpose(in[1], 0, 1)), 1);
    if (y) gf_scope_keep(y);
    gf_scope_end();
    return y;
}
static gf_tensor *f_cross_entropy(gf_tensor *const *in, int n, void *user) {
    (void)n;
    SCOPED(gf_cross_entropy(in[0], user, NULL, GF_REDUCTION_MEAN, -100, 0.1));
}
static gf_tensor *f_layer_norm(gf_tensor *const *in, int n, void *user) {
    (void)n, (void)user;
    SCOPED(gf_layer_norm(in[0], 1, in[1], in[2], 1e-5, NULL, NULL));
}
static gf_tensor *f_conv(gf_tensor *const *in, int n, void *user) {
    (void)n, (void)user;
    gf_conv2d_opts o = {{2, 1}, {1, 1}, {1, 1}, 1};
    SCOPED(gf_conv2d(in[0], in[1], in[2], &o));
}
static gf_tensor *f_pool(gf_tensor *const *in, int n, void *user) {
    (void)n, (void)user;
    gf_pool2d_opts o = {{2, 2}, {2, 1}, {1, 0}, {1, 1}, false, false};
    SCOPED(gf_add(gf_max_pool2d(in[0], &o, NULL), gf_avg_pool2d(in[0], &o)));
}
static gf_tensor *f_reduce(gf_tensor *const *in, int n, void *user) {
    (void)n, (void)user;
    const int d1[1] = {1};
    SCOPED(gf_add(gf_add(gf_var(in[0], d1, 1, 1.0, false), gf_logsumexp(in[0], d1, 1, false)),
                  gf_amax(in[0], d1, 1, false)));
}
static gf_tensor *f_index(gf_tensor *const *in, int n, void *user) {
    (void)n;
    gf_tensor *const *ix = user;
    SCOPED(gf_mul(gf_index_select(in[0], 0, ix[0]), gf_sum(gf_gather(in[0], 1, ix[1]), NULL, 0, false)));
}

static void check(const char *what, gf_check_fn fn, gf_tensor **in, int n, void *user,
                  bool deterministic) {
    gf_gradcheck_opts o = GF_GRADCHECK_OPTS_DEFAULT;
    o.skip_determinism = !deterministic;
    gf_status st = gf_gradcheck(fn, in, n, user, &o);
    CHECK_MSG(st == GF_OK, "gradcheck %s: %s", what, gf_last_error());
    for (int i = 0; i < n; i++) gf_tensor_release(in[i]);
}

static void test_gradcheck(void) {
    gf_tensor *e[2] = {leaf(SZ(3, 4), 2, 1), leaf(SZ(3, 4), 2, 2)};
    check("elementwise", f_elementwise, e, 2, NULL, true);
    gf_tensor *m[3] = {leaf(SZ(5, 4), 2, 3), leaf(SZ(4, 6), 2, 4), leaf(SZ(6), 1, 5)};
    check("matmul, softplus, log_softmax", f_mlp, m, 3, NULL, true);
    gf_tensor *target = gf_from_data((const int64_t[]){2, 0, 3, 1, 2}, SZ(5), 1, GF_I64, xd_dev);
    gf_tensor *c[1] = {leaf(SZ(5, 4), 2, 6)};
    check("cross_entropy", f_cross_entropy, c, 1, target, true);
    gf_tensor_release(target);
    gf_tensor *l[3] = {leaf(SZ(3, 7), 2, 7), leaf(SZ(7), 1, 8), leaf(SZ(7), 1, 9)};
    check("layer_norm", f_layer_norm, l, 3, NULL, true);
    gf_tensor *v[3] = {leaf(SZ(2, 2, 5, 4), 4, 10), leaf(SZ(3, 2, 3, 2), 4, 11), leaf(SZ(3), 1, 12)};
    check("conv2d", f_conv, v, 3, NULL, true);
    gf_tensor *p[1] = {leaf(SZ(1, 2, 5, 6), 4, 13)};
    check("max_pool2d + avg_pool2d", f_pool, p, 1, NULL, false);
    gf_tensor *r[1] = {leaf(SZ(4, 9), 2, 14)};
    check("var + logsumexp + amax", f_reduce, r, 1, NULL, true);
    gf_tensor *ix[2] = {gf_from_data((const int64_t[]){1, 0, 1}, SZ(3), 1, GF_I64, xd_dev),
                        gf_from_data((const int64_t[]){0, 2, 2, 1, 1, 0}, SZ(2, 3), 2, GF_I64, xd_dev)};
    gf_tensor *g[1] = {leaf(SZ(2, 3), 2, 15)};
    /* Their backward kernels add with atomics: the order, and so the last
     * bits, may change from run to run. */
    check("index_select + gather", f_index, g, 1, ix, false);
    gf_tensor_release(ix[0]);
    gf_tensor_release(ix[1]);
}

static void test_gradgradcheck(void) {
    gf_tensor *e[2] = {leaf(SZ(2, 3), 2, 21), leaf(SZ(2, 3), 2, 22)};
    gf_gradcheck_opts o = GF_GRADCHECK_OPTS_DEFAULT;
    gf_status st = gf_gradgradcheck(f_elementwise, e, 2, NULL, &o);
    CHECK_MSG(st == GF_OK, "gradgradcheck: %s", gf_last_error());
    gf_tensor_release(e[0]);
    gf_tensor_release(e[1]);
}

int main(void) {
    int rc = xd_init();
    if (rc) return rc;
    if (!xd_stores(GF_F64)) {
        fprintf(stderr, "skipped: the OpenCL device has no f64, which gradcheck needs\n");
        return XD_SKIP;
    }
    RUN(test_gradcheck);
    RUN(test_gradgradcheck);
    return CHECK_REPORT();
}
