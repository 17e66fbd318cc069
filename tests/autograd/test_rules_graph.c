/* SPDX-License-Identifier: BSD-3-Clause */
/* test_rules_graph.c — rules 1–7 of the autograd semantics (docs/autograd.md):
 * flags, .grad, backward's arguments, freeing saved tensors, gf_grad,
 * gradient summation and node order, and freeing very long graphs.
 *
 * Engine rules are tested on graphs of mul / add / exp / views with explicit
 * grad_outputs, so they do not depend on the formulas of other ops. */
#include <pthread.h>

#include "test_rules_util.h"

/* ------------------------------------------------------------ rule 1 */
static void rule01_output_requires_grad_iff_input_does(void) {
    gf_tensor *x = ag_leaf(DV(1, 2, 3), 3);
    gf_tensor *c = ag_vec(DV(4, 5, 6), 3);
    CHECK(gf_tensor_requires_grad(x) && gf_tensor_is_leaf(x));
    CHECK(gf_tensor_grad_fn_name(x) == NULL);
    CHECK(!gf_tensor_requires_grad(c) && gf_tensor_is_leaf(c));

    gf_tensor *y = gf_mul(x, c); /* one input requires grad */
    CHECK(gf_tensor_requires_grad(y));
    CHECK(!gf_tensor_is_leaf(y));
    CHECK(gf_tensor_grad_fn_name(y) != NULL && strcmp(gf_tensor_grad_fn_name(y), "MulBackward") == 0);

    gf_tensor *z = gf_mul(c, c); /* none does */
    CHECK(!gf_tensor_requires_grad(z));
    CHECK(gf_tensor_is_leaf(z));
    CHECK(gf_tensor_grad_fn_name(z) == NULL);

    /* A bool output of a comparison is never differentiable. */
    gf_tensor *b = gf_gt(x, c);
    CHECK(b && !gf_tensor_requires_grad(b) && gf_tensor_is_leaf(b));

    /* An integer input never requires grad; the float one decides. */
    gf_tensor *k = gf_from_data((const int32_t[]){1, 2, 3}, SZ(3), 1, GF_I32, NULL);
    gf_tensor *xk = gf_mul(x, k);
    CHECK(xk && gf_tensor_requires_grad(xk) && gf_tensor_dtype(xk) == GF_F64);
    gf_tensor *kk = gf_mul(k, k);
    CHECK(kk && !gf_tensor_requires_grad(kk));

    gf_tensor_release(kk);
    gf_tensor_release(xk);
    gf_tensor_release(k);
    gf_tensor_release(b);
    gf_tensor_release(z);
    gf_tensor_release(y);
    gf_tensor_release(c);
    gf_tensor_release(x);
}

static void rule01_requires_grad_on_integer_or_bool_is_error(void) {
    gf_tensor *k = gf_from_data((const int32_t[]){1, 2}, SZ(2), 1, GF_I32, NULL);
    gf_tensor *q = gf_from_data((const int64_t[]){1, 2}, SZ(2), 1, GF_I64, NULL);
    gf_tensor *b = gf_from_data((const uint8_t[]){1, 0}, SZ(2), 1, GF_BOOL, NULL);
    CHECK_ERR(gf_tensor_set_requires_grad(k, true), GF_ERR_AUTOGRAD, "gf_tensor_set_requires_grad",
              "float", "i32", "gf_to_dtype");
    CHECK(!gf_tensor_requires_grad(k));
    CHECK_ERR(gf_tensor_set_requires_grad(q, true), GF_ERR_AUTOGRAD, "float", "i64");
    CHECK_ERR(gf_tensor_set_requires_grad(b, true), GF_ERR_AUTOGRAD, "float", "bool");
    CHECK(!gf_tensor_requires_grad(b));
    /* Turning it off is always fine on a leaf. */
    CHECK_OK(gf_tensor_set_requires_grad(k, false));
    /* f32 is fine too. */
    gf_tensor *f = gf_ones(SZ(2), 1, GF_F32, NULL);
    CHECK_OK(gf_tensor_set_requires_grad(f, true));
    CHECK(gf_tensor_requires_grad(f));
    gf_tensor_release(f);
    gf_tensor_release(b);
    gf_tensor_release(q);
    gf_tensor_release(k);
}

static void rule01_requires_grad_off_on_nonleaf_is_error(void) {
    gf_tensor *x = ag_leaf(DV(1, 2), 2);
    gf_tensor *y = gf_mul_scalar(x, 2.0);
    CHECK_ERR(gf_tensor_set_requires_grad(y, false), GF_ERR_AUTOGRAD, "gf_tensor_set_requires_grad",
              "leaf", "MulBackward", "gf_detach");
    CHECK(gf_tensor_requires_grad(y) && !gf_tensor_is_leaf(y));
    /* Setting it on (already on) is harmless. */
    CHECK_OK(gf_tensor_set_requires_grad(y, true));
    /* The suggested fix works: a detached tensor is a leaf without grad. */
    gf_tensor *d = gf_detach(y);
    CHECK(d && gf_tensor_is_leaf(d) && !gf_tensor_requires_grad(d));
    CHECK(gf_tensor_shares_storage(d, y));
    CHECK_VALS(d, DV(2, 4), 2, 0);
    /* And turning it off on a leaf works. */
    CHECK_OK(gf_tensor_set_requires_grad(x, false));
    CHECK(!gf_tensor_requires_grad(x));
    gf_tensor_release(d);
    gf_tensor_release(y);
    gf_tensor_release(x);
}

/* ------------------------------------------------------------ rule 2 */
static void rule02_grad_on_leaves_only_and_accumulates(void) {
    gf_tensor *x = ag_leaf(DV(1, 2), 2);
    for (int round = 1; round <= 2; round++) {
        gf_tensor *y = gf_mul_scalar(x, 3.0); /* y = 3x */
        gf_tensor *z = gf_mul(y, y);          /* z = 9x^2, dz/dx = 18x */
        CHECK_OK(ag_backward_ones(z, -1, false));
        CHECK(gf_tensor_grad(y) == NULL); /* a non-leaf keeps no .grad */
        CHECK(gf_tensor_grad(z) == NULL);
        if (round == 1) CHECK_GRAD(x, DV(18, 36), 2, 0);
        else CHECK_GRAD(x, DV(36, 72), 2, 0); /* accumulated across the two calls */
        gf_tensor_release(z);
        gf_tensor_release(y);
    }
    /* set_grad(NULL) clears it, as `x.grad = None`. */
    CHECK_OK(gf_tensor_set_grad(x, NULL));
    CHECK(gf_tensor_grad(x) == NULL);
    gf_tensor_release(x);
}

/* A gradient that is the tensor, shares its memory, or holds it through its
 * own .grad would form a reference cycle: refused, and nothing changes. */
static void rule02_set_grad_refuses_a_reference_cycle(void) {
    uint64_t base = ag_bytes_in_use();
    gf_tensor *x = ag_leaf(DV(1, 2), 2);
    gf_tensor *v = gf_slice(x, 0, 0, 2, 1); /* a view of x, same sizes */
    gf_tensor *d = gf_detach(x);
    CHECK_ERR(gf_tensor_set_grad(x, x), GF_ERR_INVALID, "gf_tensor_set_grad", "its own gradient",
              "gf_clone");
    CHECK_ERR(gf_tensor_set_grad(x, v), GF_ERR_INVALID, "gf_tensor_set_grad", "view");
    CHECK_ERR(gf_tensor_set_grad(x, d), GF_ERR_INVALID, "gf_tensor_set_grad", "shares memory");
    CHECK_ERR(gf_tensor_set_grad(v, x), GF_ERR_INVALID, "gf_tensor_set_grad", "shares memory");
    CHECK(gf_tensor_grad(x) == NULL);
    /* a.grad = b, then b.grad = a (or b.grad = a's grad's ...) */
    gf_tensor *a = ag_vec(DV(1, 2), 2), *b = ag_vec(DV(3, 4), 2), *c = ag_vec(DV(5, 6), 2);
    CHECK_OK(gf_tensor_set_grad(a, b));
    CHECK_ERR(gf_tensor_set_grad(b, a), GF_ERR_INVALID, "gf_tensor_set_grad", ".grad");
    CHECK_OK(gf_tensor_set_grad(b, c));
    CHECK_ERR(gf_tensor_set_grad(c, a), GF_ERR_INVALID, "gf_tensor_set_grad", ".grad");
    gf_tensor *va = gf_slice(a, 0, 0, 2, 1);
    CHECK_ERR(gf_tensor_set_grad(c, va), GF_ERR_INVALID, "gf_tensor_set_grad", "base");
    CHECK(gf_tensor_grad(c) == NULL);
    /* a copy is fine, and so is a gradient chain without a cycle */
    gf_tensor *k = gf_clone(d); /* of the detached alias: no history leading back to x */
    CHECK_OK(gf_tensor_set_grad(x, k));
    CHECK_OK(gf_tensor_set_grad(c, x));
    gf_tensor_release(k);
    gf_tensor_release(va);
    gf_tensor_release(c);
    gf_tensor_release(b);
    gf_tensor_release(a);
    gf_tensor_release(d);
    gf_tensor_release(v);
    gf_tensor_release(x);
    CHECK(ag_bytes_in_use() == base); /* every tensor freed: no cycle was made */
}

static void rule02_create_graph_accumulates_out_of_place(void) {
    gf_tensor *x = ag_leaf(DV(1, 2), 2);
    gf_tensor *y1 = gf_mul(x, x);
    CHECK_OK(ag_backward_ones(y1, -1, false));
    gf_tensor *g1 = gf_tensor_grad(x); /* held by the user */
    CHECK_VALS(g1, DV(2, 4), 2, 0);

    gf_tensor *y2 = gf_mul(x, x);
    CHECK_OK(ag_backward_ones(y2, -1, true));
    gf_tensor *g2 = gf_tensor_grad(x);
    CHECK(g2 != NULL && g2 != g1);
    CHECK(!gf_tensor_shares_storage(g1, g2));
    CHECK_VALS(g2, DV(4, 8), 2, 0);
    CHECK_VALS(g1, DV(2, 4), 2, 0); /* the old gradient is intact */
    CHECK(gf_tensor_requires_grad(g2)); /* create_graph: the new .grad has history */

    /* Again with create_graph: the previous create_graph grad stays intact too. */
    gf_tensor *y3 = gf_mul(x, x);
    CHECK_OK(ag_backward_ones(y3, -1, true));
    gf_tensor *g3 = gf_tensor_grad(x);
    CHECK(g3 != NULL && g3 != g2);
    CHECK_VALS(g3, DV(6, 12), 2, 0);
    CHECK_VALS(g2, DV(4, 8), 2, 0);

    /* x.grad refers to a graph that refers to x: break the cycle. */
    CHECK_OK(gf_tensor_set_grad(x, NULL));
    gf_tensor_release(g3);
    gf_tensor_release(g2);
    gf_tensor_release(g1);
    gf_tensor_release(y3);
    gf_tensor_release(y2);
    gf_tensor_release(y1);
    gf_tensor_release(x);
}

static void rule02_retain_grad_on_nonleaf(void) {
    gf_tensor *x = ag_leaf(DV(1, 2), 2);
    gf_tensor *y = gf_mul_scalar(x, 3.0);
    CHECK(!gf_tensor_retains_grad(y));
    CHECK_OK(gf_tensor_retain_grad(y));
    CHECK(gf_tensor_retains_grad(y));
    gf_tensor *z = gf_mul(y, y);
    CHECK_OK(ag_backward_ones(z, 1, false));
    CHECK_GRAD(y, DV(6, 12), 2, 0); /* dz/dy = 2y */
    CHECK_GRAD(x, DV(18, 36), 2, 0);
    CHECK(gf_tensor_grad(z) == NULL); /* only the retained non-leaf */
    /* As PyTorch: a retained gradient accumulates across backward calls. */
    CHECK_OK(ag_backward_ones(z, 0, false));
    CHECK_GRAD(y, DV(12, 24), 2, 0);
    gf_tensor_release(z);
    gf_tensor_release(y);
    gf_tensor_release(x);
}

static void rule02_retain_grad_leaf_noop_and_error_without_grad(void) {
    gf_tensor *x = ag_leaf(DV(1, 2), 2);
    CHECK_OK(gf_tensor_retain_grad(x)); /* a no-op on a leaf */
    gf_tensor *y = gf_mul(x, x);
    CHECK_OK(ag_backward_ones(y, -1, false));
    CHECK_GRAD(x, DV(2, 4), 2, 0);

    gf_tensor *c = ag_vec(DV(1, 2), 2);
    CHECK_ERR(gf_tensor_retain_grad(c), GF_ERR_AUTOGRAD, "gf_tensor_retain_grad",
              "does not require grad", "gf_tensor_set_requires_grad");
    gf_tensor *cc = gf_mul(c, c);
    CHECK_ERR(gf_tensor_retain_grad(cc), GF_ERR_AUTOGRAD, "does not require grad");
    gf_tensor_release(cc);
    gf_tensor_release(c);
    gf_tensor_release(y);
    gf_tensor_release(x);
}

/* ------------------------------------------------------------ rule 3 */
static void rule03_root_must_require_grad(void) {
    gf_tensor *c = ag_vec(DV(1), 1);
    CHECK_ERR(gf_backward(c, NULL, NULL), GF_ERR_AUTOGRAD, "gf_backward", "require",
              "gf_tensor_set_requires_grad");
    gf_tensor *x = ag_leaf(DV(2), 1);
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    gf_tensor *y = gf_mul(x, x); /* computed without history */
    gf_grad_mode_set(prev);
    CHECK_ERR(gf_backward(y, NULL, NULL), GF_ERR_AUTOGRAD, "gf_backward", "require");
    CHECK(gf_tensor_grad(x) == NULL);
    gf_tensor_release(y);
    gf_tensor_release(x);
    gf_tensor_release(c);
}

static void rule03_nonscalar_root_needs_grad_output(void) {
    gf_tensor *x = ag_leaf(DV(1, 2, 3), 3);
    gf_tensor *y = gf_mul(x, x);
    gf_status s = gf_backward(y, NULL, NULL);
    CHECK(s != GF_OK);
    CHECK_ERR(s, gf_last_status(), "gf_backward", "grad_output", "[3]");
    CHECK(gf_tensor_grad(x) == NULL);

    /* One-element roots need none, whatever their rank. */
    gf_tensor *x1 = ag_leaf_t(DV(3), SZ(1, 1), 2);
    gf_tensor *y1 = gf_mul(x1, x1);
    CHECK_OK(gf_backward(y1, NULL, NULL));
    CHECK_GRAD(x1, DV(6), 1, 0);
    gf_tensor *x0 = gf_scalar(4, GF_F64, NULL);
    CHECK_OK(gf_tensor_set_requires_grad(x0, true));
    gf_tensor *y0 = gf_mul(x0, x0);
    CHECK_OK(gf_backward(y0, NULL, NULL));
    CHECK_GRAD(x0, DV(8), 1, 0);

    /* An explicit grad_output is a vector-Jacobian product. */
    gf_tensor *v = ag_vec(DV(1, 10, 100), 3);
    CHECK_OK(gf_backward(y, v, NULL));
    CHECK_GRAD(x, DV(2, 40, 600), 3, 0);
    gf_tensor_release(v);
    gf_tensor_release(y0);
    gf_tensor_release(x0);
    gf_tensor_release(y1);
    gf_tensor_release(x1);
    gf_tensor_release(y);
    gf_tensor_release(x);
}

static void rule03_grad_output_of_wrong_shape_prints_both(void) {
    gf_tensor *x = ag_leaf_t(DV(1, 2, 3, 4, 5, 6), SZ(2, 3), 2);
    gf_tensor *y = gf_mul(x, x);
    gf_tensor *g = gf_ones(SZ(3, 2), 2, GF_F64, NULL);
    CHECK_ERR(gf_backward(y, g, NULL), GF_ERR_SHAPE, "grad_output", "[3, 2]", "[2, 3]");
    gf_tensor *g1 = gf_ones(SZ(6), 1, GF_F64, NULL);
    CHECK_ERR(gf_backward(y, g1, NULL), GF_ERR_SHAPE, "[6]", "[2, 3]");
    CHECK(gf_tensor_grad(x) == NULL);
    /* The graph is untouched by the failed calls. */
    CHECK_OK(ag_backward_ones(y, -1, false));
    CHECK_GRAD(x, DV(2, 4, 6, 8, 10, 12), 6, 0);
    gf_tensor_release(g1);
    gf_tensor_release(g);
    gf_tensor_release(y);
    gf_tensor_release(x);
}

static void rule03_retain_graph_defaults_to_create_graph(void) {
    gf_tensor *x = ag_leaf(DV(1, 2), 2);
    gf_tensor *y = gf_mul(x, x);
    /* create_graph with retain_graph left at its default keeps the graph. */
    CHECK_OK(ag_backward_ones(y, -1, true));
    CHECK_OK(ag_backward_ones(y, -1, false)); /* default: frees it */
    CHECK_GRAD(x, DV(4, 8), 2, 0);
    CHECK_ERR(ag_backward_ones(y, -1, false), GF_ERR_AUTOGRAD, "retain_graph");
    /* opts NULL = the same defaults: the graph is freed. */
    gf_tensor *x1 = ag_leaf(DV(3), 1);
    gf_tensor *y1 = gf_mul(x1, x1);
    CHECK_OK(gf_backward(y1, NULL, NULL));
    CHECK_ERR(gf_backward(y1, NULL, NULL), GF_ERR_AUTOGRAD, "retain_graph");
    CHECK_OK(gf_tensor_set_grad(x, NULL)); /* created with create_graph: break the cycle */
    gf_tensor_release(y1);
    gf_tensor_release(x1);
    gf_tensor_release(y);
    gf_tensor_release(x);
}

/* ------------------------------------------------------------ rule 4 */
static void rule04_second_backward_without_retain_graph_fails(void) {
    gf_tensor *x = ag_leaf(DV(1, 2), 2);
    gf_tensor *y = gf_mul(x, x); /* MulBackward saves x twice */
    CHECK_OK(ag_backward_ones(y, 0, false));
    CHECK_ERR(ag_backward_ones(y, 0, false), GF_ERR_AUTOGRAD, "MulBackward", "retain_graph",
              "freed");
    CHECK_GRAD(x, DV(2, 4), 2, 0); /* the failed call added nothing */
    /* gf_grad says the same. */
    gf_tensor *r = ag_grad1(y, x, NULL, false);
    CHECK(r == NULL);
    CHECK_ERR(gf_last_status(), GF_ERR_AUTOGRAD, "MulBackward", "retain_graph");
    gf_tensor_release(y);

    /* With retain_graph the second run works, and the third (not retained) too. */
    gf_tensor *z = gf_mul(x, x);
    CHECK_OK(ag_backward_ones(z, 1, false));
    CHECK_OK(ag_backward_ones(z, 1, false));
    CHECK_OK(ag_backward_ones(z, 0, false));
    CHECK_GRAD(x, DV(8, 16), 2, 0);
    CHECK_ERR(ag_backward_ones(z, 0, false), GF_ERR_AUTOGRAD, "retain_graph");
    gf_tensor_release(z);
    gf_tensor_release(x);
}

static void rule04_graph_that_saved_nothing_runs_again(void) {
    gf_tensor *x = ag_leaf(DV(1, 2, 3, 4), 4);
    gf_tensor *c = ag_vec(DV(5, 6, 7, 8), 4);
    gf_tensor *y = gf_add(x, x); /* add saves nothing */
    gf_tensor *z = gf_add(y, c);
    gf_tensor *v = gf_view(z, SZ(2, 2), 2); /* views save nothing either */
    gf_tensor *t = gf_transpose(v, 0, 1);
    CHECK_OK(ag_backward_ones(t, 0, false));
    CHECK_OK(ag_backward_ones(t, 0, false));
    CHECK_GRAD(x, DV(4, 4, 4, 4), 4, 0);
    gf_tensor_release(t);
    gf_tensor_release(v);
    gf_tensor_release(z);
    gf_tensor_release(y);
    gf_tensor_release(c);
    gf_tensor_release(x);
}

/* ------------------------------------------------------------ node logging */
#define LOG_MAX 64
static const char *g_log[LOG_MAX];
static int g_nlog;
static void log_reset(void) { g_nlog = 0; }
static void log_add(const char *tag) {
    if (g_nlog < LOG_MAX) g_log[g_nlog++] = tag;
}
static int log_equals(const char *const *want, int n) {
    if (g_nlog != n) return 0;
    for (int i = 0; i < n; i++)
        if (strcmp(g_log[i], want[i])) return 0;
    return 1;
}
static void log_print(void) {
    fprintf(stderr, "  order:");
    for (int i = 0; i < g_nlog; i++) fprintf(stderr, " %s", g_log[i]);
    fputc('\n', stderr);
}
#define CHECK_LOG(...)                                                                  \
    do {                                                                                \
        const char *const want_[] = {__VA_ARGS__};                                      \
        int ok_ = log_equals(want_, AG_N(want_));                                       \
        CHECK_MSG(ok_, "node order differs");                                          \
        if (!ok_) log_print();                                                          \
    } while (0)

static gf_status pre_log(const char *name, gf_tensor **g, int n, void *user) {
    log_add((const char *)user);
    return GF_OK;
}
static void acc_log(gf_tensor *t, void *user) { log_add((const char *)user); }

/* ------------------------------------------------------------ rule 5 */
static int g_exp_runs, g_mul_runs;
static gf_status count_exp(const char *name, gf_tensor **g, int n, void *user) {
    g_exp_runs++;
    return GF_OK;
}
static gf_status count_mul(const char *name, gf_tensor **g, int n, void *user) {
    g_mul_runs++;
    return GF_OK;
}

static void rule05_grad_leaves_dot_grad_untouched_and_runs_only_needed_nodes(void) {
    gf_tensor *a = ag_leaf(DV(1, 2), 2);
    gf_tensor *c = ag_leaf(DV(0, 1), 2);
    gf_tensor *u = gf_mul_scalar(a, 2.0); /* MulBackward */
    gf_tensor *w = gf_exp(c);             /* ExpBackward: not on the path to a */
    gf_tensor *y = gf_add(u, w);
    CHECK(gf_node_register_pre_hook(u, count_mul, NULL) != 0);
    CHECK(gf_node_register_pre_hook(w, count_exp, NULL) != 0);
    g_exp_runs = g_mul_runs = 0;

    gf_tensor *ones = gf_ones_like(y);
    gf_tensor *r = NULL;
    gf_grad_opts o = {.retain_graph = 1};
    CHECK_OK(gf_grad(&y, 1, &ones, &a, 1, &r, &o));
    CHECK_VALS(r, DV(2, 2), 2, 0);
    CHECK(!gf_tensor_requires_grad(r)); /* no create_graph */
    CHECK(g_mul_runs == 1);
    CHECK(g_exp_runs == 0);
    CHECK(gf_tensor_grad(a) == NULL && gf_tensor_grad(c) == NULL);
    gf_tensor_release(r);

    /* A non-leaf input: nothing below it runs. */
    g_exp_runs = g_mul_runs = 0;
    CHECK_OK(gf_grad(&y, 1, &ones, &u, 1, &r, &o));
    CHECK_VALS(r, DV(1, 1), 2, 0);
    CHECK(g_mul_runs == 0 && g_exp_runs == 0);
    gf_tensor_release(r);

    /* backward runs everything. */
    CHECK_OK(gf_backward(y, ones, NULL));
    CHECK(g_mul_runs == 1 && g_exp_runs == 1);
    CHECK_GRAD(a, DV(2, 2), 2, 0);
    CHECK_GRAD(c, DV(1, exp(1.0)), 2, 1e-15);
    gf_tensor_release(ones);
    gf_tensor_release(y);
    gf_tensor_release(w);
    gf_tensor_release(u);
    gf_tensor_release(c);
    gf_tensor_release(a);
}

static void rule05_grad_of_nonleaf_inputs_and_several_outputs(void) {
    gf_tensor *x = ag_leaf(DV(1, 2), 2);
    gf_tensor *y = gf_mul_scalar(x, 3.0);
    gf_tensor *z = gf_mul(y, y);
    gf_tensor *q = gf_mul(x, y); /* 3x^2 */
    gf_tensor *outs[2] = {z, q};
    gf_tensor *ins[2] = {y, x};
    gf_tensor *gz = ag_vec(DV(1, 1), 2), *gq = ag_vec(DV(10, 100), 2);
    gf_tensor *gos[2] = {gz, gq};
    gf_tensor *res[2] = {NULL, NULL};
    CHECK_OK(gf_grad(outs, 2, gos, ins, 2, res, NULL));
    /* L = z . gz + q . gq with y = [3, 6]:
     * dL/dy = 2y + x * gq = [6, 12] + [10, 200] = [16, 212];
     * dL/dx = 3 dL/dy + y * gq = [48, 636] + [30, 600] (both paths summed). */
    CHECK_VALS(res[0], DV(16, 212), 2, 1e-12);
    CHECK_VALS(res[1], DV(78, 1236), 2, 1e-12);
    CHECK(gf_tensor_grad(x) == NULL && gf_tensor_grad(y) == NULL);
    gf_tensor_release(res[0]);
    gf_tensor_release(res[1]);

    /* NULL grad_outputs entries are fine for one-element outputs. */
    gf_tensor *x1 = ag_leaf(DV(5), 1);
    gf_tensor *s1 = gf_mul(x1, x1);
    gf_tensor *r1 = NULL;
    gf_tensor *no_go[1] = {NULL};
    CHECK_OK(gf_grad(&s1, 1, no_go, &x1, 1, &r1, NULL));
    CHECK_VALS(r1, DV(10), 1, 0);
    gf_tensor_release(r1);
    gf_tensor_release(s1);
    gf_tensor_release(x1);

    gf_tensor_release(gq);
    gf_tensor_release(gz);
    gf_tensor_release(q);
    gf_tensor_release(z);
    gf_tensor_release(y);
    gf_tensor_release(x);
}

static void rule05_allow_unused_and_materialize_grads(void) {
    gf_tensor *x = ag_leaf(DV(1, 2), 2);
    gf_tensor *unused = ag_leaf_t(DV(7, 7, 7), SZ(3, 1), 2);
    gf_tensor *y = gf_mul(x, x);
    gf_tensor *ones = gf_ones_like(y);
    gf_tensor *ins[2] = {x, unused};
    gf_tensor *res[2] = {NULL, NULL};
    gf_grad_opts o = {.retain_graph = 1};
    CHECK_ERR(gf_grad(&y, 1, &ones, ins, 2, res, &o), GF_ERR_AUTOGRAD, "gf_grad", "input 1",
              "allow_unused");
    CHECK(res[0] == NULL && res[1] == NULL);

    o.allow_unused = true;
    CHECK_OK(gf_grad(&y, 1, &ones, ins, 2, res, &o));
    CHECK_VALS(res[0], DV(2, 4), 2, 0);
    CHECK(res[1] == NULL);
    gf_tensor_release(res[0]);

    o.materialize_grads = true;
    CHECK_OK(gf_grad(&y, 1, &ones, ins, 2, res, &o));
    CHECK_VALS(res[0], DV(2, 4), 2, 0);
    CHECK(res[1] && gf_tensor_rank(res[1]) == 2 && gf_tensor_size(res[1], 0) == 3 &&
          gf_tensor_size(res[1], 1) == 1 && gf_tensor_dtype(res[1]) == GF_F64);
    CHECK_VALS(res[1], DV(0, 0, 0), 3, 0);
    gf_tensor_release(res[0]);
    gf_tensor_release(res[1]);

    /* An input that does not require grad cannot be differentiated. */
    gf_tensor *c = ag_vec(DV(1, 2), 2);
    gf_tensor *r = NULL;
    CHECK_ERR(gf_grad(&y, 1, &ones, &c, 1, &r, &o), GF_ERR_AUTOGRAD, "gf_grad", "require grad");
    gf_tensor_release(c);
    gf_tensor_release(ones);
    gf_tensor_release(y);
    gf_tensor_release(unused);
    gf_tensor_release(x);
}

static void rule05_hessian_vector_product(void) {
    /* f(x) = sum(x^3): g = 3x^2, H v = 6 x v. */
    gf_tensor *x = ag_leaf(DV(1, -2, 0.5), 3);
    gf_tensor *x2 = gf_mul(x, x);
    gf_tensor *x3 = gf_mul(x2, x);
    gf_tensor *g = ag_grad1(x3, x, NULL, true);
    CHECK_VALS(g, DV(3, 12, 0.75), 3, 1e-15);
    CHECK(g && gf_tensor_requires_grad(g) && !gf_tensor_is_leaf(g));
    gf_tensor *v = ag_vec(DV(2, 3, -4), 3);
    gf_tensor *hv = g ? ag_grad1(g, x, v, false) : NULL;
    CHECK_VALS(hv, DV(12, -36, -12), 3, 1e-14);
    CHECK(hv && !gf_tensor_requires_grad(hv));
    CHECK(gf_tensor_grad(x) == NULL);
    gf_tensor_release(hv);
    gf_tensor_release(v);
    gf_tensor_release(g);
    gf_tensor_release(x3);
    gf_tensor_release(x2);
    gf_tensor_release(x);
}

static void rule05_third_derivative(void) {
    /* x^4 -> 4x^3 -> 12x^2 -> 24x */
    gf_tensor *x = ag_leaf(DV(1, 2, -3), 3);
    gf_tensor *x2 = gf_mul(x, x);
    gf_tensor *x4 = gf_mul(x2, x2);
    gf_tensor *g1 = ag_grad1(x4, x, NULL, true);
    CHECK_VALS(g1, DV(4, 32, -108), 3, 1e-14);
    gf_tensor *g2 = g1 ? ag_grad1(g1, x, NULL, true) : NULL;
    CHECK_VALS(g2, DV(12, 48, 108), 3, 1e-14);
    gf_tensor *g3 = g2 ? ag_grad1(g2, x, NULL, true) : NULL;
    CHECK_VALS(g3, DV(24, 48, -72), 3, 1e-14);
    /* The same through gf_backward with create_graph. */
    gf_tensor *g3b = g2 ? gf_mul_scalar(g2, 1.0) : NULL;
    if (g3b) {
        CHECK_OK(ag_backward_ones(g3b, -1, false));
        CHECK_GRAD(x, DV(24, 48, -72), 3, 1e-14);
    }
    gf_tensor_release(g3b);
    gf_tensor_release(g3);
    gf_tensor_release(g2);
    gf_tensor_release(g1);
    gf_tensor_release(x4);
    gf_tensor_release(x2);
    gf_tensor_release(x);
}

/* ------------------------------------------------------------ rule 6 */
static void rule06_diamond_sums_gradients(void) {
    gf_tensor *x = ag_leaf(DV(1, 2), 2);
    gf_tensor *a = gf_mul_scalar(x, 2.0);
    gf_tensor *b = gf_mul_scalar(x, 3.0);
    gf_tensor *y = gf_mul(a, b); /* 6x^2 */
    CHECK_OK(ag_backward_ones(y, -1, false));
    CHECK_GRAD(x, DV(12, 24), 2, 0);
    /* The same tensor used twice by one op. */
    gf_tensor *x2 = ag_leaf(DV(3), 1);
    gf_tensor *s = gf_add(x2, x2);
    gf_tensor *t = gf_add(s, x2);
    CHECK_OK(gf_backward(t, NULL, NULL));
    CHECK_GRAD(x2, DV(3), 1, 0);
    gf_tensor_release(t);
    gf_tensor_release(s);
    gf_tensor_release(x2);
    gf_tensor_release(y);
    gf_tensor_release(b);
    gf_tensor_release(a);
    gf_tensor_release(x);
}

static double g_h_grad[4];
static int g_h_calls;
static gf_status pre_h(const char *name, gf_tensor **g, int n, void *user) {
    g_h_calls++;
    log_add("H");
    CHECK(n == 1 && g[0] != NULL);
    if (n == 1 && g[0]) ag_read(g[0], g_h_grad, 4);
    return GF_OK;
}

static void rule06_node_runs_once_after_all_contributions(void) {
    gf_tensor *x = ag_leaf(DV(1, 2), 2);
    gf_tensor *h = gf_mul_scalar(x, 1.0);
    gf_tensor *a = gf_mul_scalar(h, 2.0);
    gf_tensor *b = gf_mul_scalar(h, 3.0);
    gf_tensor *y = gf_mul(a, b);
    CHECK(gf_node_register_pre_hook(h, pre_h, NULL) != 0);
    CHECK(gf_node_register_pre_hook(a, pre_log, "A") != 0);
    CHECK(gf_node_register_pre_hook(b, pre_log, "B") != 0);
    CHECK(gf_node_register_pre_hook(y, pre_log, "Y") != 0);
    CHECK(gf_tensor_register_post_accumulate_hook(x, acc_log, "accX") != 0);
    log_reset();
    g_h_calls = 0;
    CHECK_OK(ag_backward_ones(y, -1, false));
    CHECK(g_h_calls == 1); /* once, with the sum of both paths */
    CHECK_CLOSE(g_h_grad[0], 12.0, 0);
    CHECK_CLOSE(g_h_grad[1], 24.0, 0);
    CHECK_LOG("Y", "B", "A", "H", "accX");
    CHECK_GRAD(x, DV(12, 24), 2, 0);
    gf_tensor_release(y);
    gf_tensor_release(b);
    gf_tensor_release(a);
    gf_tensor_release(h);
    gf_tensor_release(x);
}

static void rule06_ready_nodes_by_sequence_leaves_first(void) {
    /* Two ready nodes: the one created later runs first, whatever the
     * order of the edges. */
    for (int swap = 0; swap < 2; swap++) {
        gf_tensor *x = ag_leaf(DV(1), 1);
        gf_tensor *p = gf_mul_scalar(x, 3.0); /* older */
        gf_tensor *q = gf_mul_scalar(x, 2.0); /* newer */
        gf_tensor *y = swap ? gf_add(p, q) : gf_add(q, p);
        gf_node_register_pre_hook(p, pre_log, "P");
        gf_node_register_pre_hook(q, pre_log, "Q");
        gf_node_register_pre_hook(y, pre_log, "Add");
        gf_tensor_register_post_accumulate_hook(x, acc_log, "accX");
        log_reset();
        CHECK_OK(gf_backward(y, NULL, NULL));
        CHECK_LOG("Add", "Q", "P", "accX");
        CHECK_GRAD(x, DV(5), 1, 0);
        gf_tensor_release(y);
        gf_tensor_release(q);
        gf_tensor_release(p);
        gf_tensor_release(x);
    }
    /* A leaf's accumulation runs before other ready nodes. */
    gf_tensor *x = ag_leaf(DV(2), 1);
    gf_tensor *w = ag_leaf(DV(5), 1);
    gf_tensor *a = gf_mul_scalar(x, 3.0);
    gf_tensor *y = gf_mul(a, w);
    gf_node_register_pre_hook(a, pre_log, "A");
    gf_node_register_pre_hook(y, pre_log, "Y");
    gf_tensor_register_post_accumulate_hook(x, acc_log, "accX");
    gf_tensor_register_post_accumulate_hook(w, acc_log, "accW");
    log_reset();
    CHECK_OK(gf_backward(y, NULL, NULL));
    CHECK_LOG("Y", "accW", "A", "accX");
    CHECK_GRAD(x, DV(15), 1, 0);
    CHECK_GRAD(w, DV(6), 1, 0);
    gf_tensor_release(y);
    gf_tensor_release(a);
    gf_tensor_release(w);
    gf_tensor_release(x);
}

/* ------------------------------------------------------------ rule 7 */
#define CHAIN 150000

typedef struct chain_result {
    double grad;
    gf_status status;
    char msg[512];
    uint64_t in_use_start, in_use_base, in_use_after_free, in_use_after_drop, in_use_end;
    int ops_failed;
} chain_result;

static void *long_chain(void *arg) {
    chain_result *r = arg;
    r->in_use_start = ag_bytes_in_use();
    gf_tensor *x = ag_leaf(DV(1), 1);
    gf_tensor *c = ag_vec(DV(1.0001), 1);
    gf_tensor *one = ag_vec(DV(1), 1);
    r->in_use_base = ag_bytes_in_use();
    /* Backward through, then free, a 150k-node chain that saved tensors. */
    gf_tensor *y = gf_tensor_retain(x);
    for (int i = 0; i < CHAIN && y; i++) {
        gf_tensor *n = gf_mul(y, c);
        gf_tensor_release(y);
        y = n;
    }
    r->ops_failed = y == NULL;
    r->status = y ? gf_backward(y, NULL, NULL) : gf_last_status();
    snprintf(r->msg, sizeof r->msg, "%s", gf_last_error());
    gf_tensor *g = gf_tensor_grad(x);
    r->grad = g ? ag_item(g) : NAN;
    gf_tensor_release(g);
    gf_tensor_release(y); /* frees 150k nodes */
    gf_tensor_set_grad(x, NULL);
    r->in_use_after_free = ag_bytes_in_use();
    /* A chain dropped without backward. */
    y = gf_tensor_retain(x);
    for (int i = 0; i < CHAIN && y; i++) {
        gf_tensor *n = gf_add(y, one);
        gf_tensor_release(y);
        y = n;
    }
    r->ops_failed |= y == NULL;
    gf_tensor_release(y);
    r->in_use_after_drop = ag_bytes_in_use();
    gf_tensor_release(one);
    gf_tensor_release(c);
    gf_tensor_release(x);
    r->in_use_end = ag_bytes_in_use();
    return NULL;
}

static void rule07_long_chain_without_stack_overflow(void) {
    /* A small stack proves that backward and freeing iterate: recursion
     * over 150k nodes would need far more. Sanitizers grow frames. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    size_t stack = 1u << 20;
#else
    size_t stack = 256u << 10;
#endif
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    CHECK(pthread_attr_setstacksize(&attr, stack) == 0);
    chain_result r = {0};
    pthread_t th;
    CHECK(pthread_create(&th, &attr, long_chain, &r) == 0);
    pthread_join(th, NULL);
    pthread_attr_destroy(&attr);
    CHECK(!r.ops_failed);
    CHECK_MSG(r.status == GF_OK, "%s", r.msg);
    CHECK_MSG(check_close_(r.grad, pow(1.0001, CHAIN), 0, 1e-9), "grad %.17g vs %.17g", r.grad,
              pow(1.0001, CHAIN));
    /* Dropping the outputs freed every intermediate of both chains. */
    CHECK_MSG(r.in_use_after_free == r.in_use_base, "after backward + release: %llu bytes in use, "
              "expected %llu", (unsigned long long)r.in_use_after_free,
              (unsigned long long)r.in_use_base);
    CHECK_MSG(r.in_use_after_drop == r.in_use_base, "after dropping: %llu bytes in use, "
              "expected %llu", (unsigned long long)r.in_use_after_drop,
              (unsigned long long)r.in_use_base);
    CHECK(r.in_use_end == r.in_use_start);
}

int main(void) {
    RUN(rule01_output_requires_grad_iff_input_does);
    RUN(rule01_requires_grad_on_integer_or_bool_is_error);
    RUN(rule01_requires_grad_off_on_nonleaf_is_error);
    RUN(rule02_grad_on_leaves_only_and_accumulates);
    RUN(rule02_set_grad_refuses_a_reference_cycle);
    RUN(rule02_create_graph_accumulates_out_of_place);
    RUN(rule02_retain_grad_on_nonleaf);
    RUN(rule02_retain_grad_leaf_noop_and_error_without_grad);
    RUN(rule03_root_must_require_grad);
    RUN(rule03_nonscalar_root_needs_grad_output);
    RUN(rule03_grad_output_of_wrong_shape_prints_both);
    RUN(rule03_retain_graph_defaults_to_create_graph);
    RUN(rule04_second_backward_without_retain_graph_fails);
    RUN(rule04_graph_that_saved_nothing_runs_again);
    RUN(rule05_grad_leaves_dot_grad_untouched_and_runs_only_needed_nodes);
    RUN(rule05_grad_of_nonleaf_inputs_and_several_outputs);
    RUN(rule05_allow_unused_and_materialize_grads);
    RUN(rule05_hessian_vector_product);
    RUN(rule05_third_derivative);
    RUN(rule06_diamond_sums_gradients);
    RUN(rule06_node_runs_once_after_all_contributions);
    RUN(rule06_ready_nodes_by_sequence_leaves_first);
    RUN(rule07_long_chain_without_stack_overflow);
    return ag_finish();
}
