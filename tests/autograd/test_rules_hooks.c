/* SPDX-License-Identifier: BSD-3-Clause */
/* test_rules_hooks.c — rules 16–19: tensor hooks, post-accumulate-grad
 * hooks, node pre/post hooks and their order, saved-tensor hooks. */
#include <pthread.h>

#include "test_rules_util.h"

/* ------------------------------------------------------------ a log of calls */
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
    fprintf(stderr, "  calls:");
    for (int i = 0; i < g_nlog; i++) fprintf(stderr, " %s", g_log[i]);
    fputc('\n', stderr);
}
#define CHECK_LOG(...)                                                                  \
    do {                                                                                \
        const char *const want_[] = {__VA_ARGS__};                                      \
        int ok_ = log_equals(want_, AG_N(want_));                                       \
        CHECK_MSG(ok_, "call order differs");                                          \
        if (!ok_) log_print();                                                          \
    } while (0)

/* A tensor hook: logs its tag, records the gradient it saw, and may scale it. */
typedef struct hook_spec {
    const char *tag;
    double scale; /* 0: keep the gradient */
    double seen[8];
    int calls;
} hook_spec;

static gf_tensor *tensor_hook(const gf_tensor *g, void *user) {
    hook_spec *h = user;
    log_add(h->tag);
    h->calls++;
    ag_read(g, h->seen, 8);
    return h->scale != 0 ? gf_mul_scalar(g, h->scale) : NULL;
}

/* ------------------------------------------------------------ rule 16 */
static void rule16_hook_needs_a_tensor_that_requires_grad(void) {
    gf_tensor *c = ag_vec(DV(1, 2), 2);
    hook_spec h = {"h", 0, {0}, 0};
    gf_hook_handle id = gf_tensor_register_hook(c, tensor_hook, &h);
    CHECK_ERR_NULL(id, GF_ERR_AUTOGRAD, "gf_tensor_register_hook", "does not require grad",
                   "gf_tensor_set_requires_grad");
    gf_tensor_release(c);
}

static void rule16_hooks_run_in_order_and_may_replace_the_gradient(void) {
    gf_tensor *x = ag_leaf(DV(1, 2), 2);
    gf_tensor *y = gf_mul_scalar(x, 3.0); /* [3, 6] */
    gf_tensor *z = gf_mul(y, y);          /* dz/dy = 2y = [6, 12] */
    hook_spec h1 = {"h1", 0, {0}, 0}, h2 = {"h2", 10, {0}, 0}, h3 = {"h3", 0, {0}, 0};
    gf_hook_handle i1 = gf_tensor_register_hook(y, tensor_hook, &h1);
    gf_hook_handle i2 = gf_tensor_register_hook(y, tensor_hook, &h2);
    gf_hook_handle i3 = gf_tensor_register_hook(y, tensor_hook, &h3);
    CHECK(i1 && i2 && i3 && i1 != i2 && i2 != i3 && i1 != i3);
    log_reset();
    CHECK_OK(ag_backward_ones(z, 1, false));
    CHECK_LOG("h1", "h2", "h3");
    CHECK_CLOSE(h1.seen[0], 6, 0);
    CHECK_CLOSE(h1.seen[1], 12, 0);
    CHECK_CLOSE(h3.seen[0], 60, 0); /* h3 sees h2's replacement */
    CHECK_CLOSE(h3.seen[1], 120, 0);
    CHECK_GRAD(x, DV(180, 360), 2, 0);

    /* Removed by handle: no longer called; removing twice is harmless. */
    gf_hook_remove(i2);
    gf_hook_remove(i2);
    gf_hook_remove(0);
    gf_hook_remove(i3 + 1000000);
    CHECK_OK(gf_tensor_set_grad(x, NULL));
    log_reset();
    CHECK_OK(ag_backward_ones(z, 0, false));
    CHECK_LOG("h1", "h3");
    CHECK(h2.calls == 1);
    CHECK_GRAD(x, DV(18, 36), 2, 0);
    gf_hook_remove(i1);
    gf_hook_remove(i3);
    gf_hook_remove(i1);
    gf_tensor_release(z);
    gf_tensor_release(y);
    gf_tensor_release(x);
}

static void rule16_hook_on_a_leaf(void) {
    gf_tensor *x = ag_leaf(DV(1, 2), 2);
    hook_spec h = {"leaf", -1, {0}, 0};
    CHECK(gf_tensor_register_hook(x, tensor_hook, &h) != 0);
    gf_tensor *y = gf_mul(x, x);
    log_reset();
    CHECK_OK(ag_backward_ones(y, -1, false));
    CHECK_LOG("leaf");
    CHECK_CLOSE(h.seen[0], 2, 0);
    CHECK_CLOSE(h.seen[1], 4, 0);
    CHECK_GRAD(x, DV(-2, -4), 2, 0); /* the replacement is what accumulates */
    gf_tensor_release(y);
    gf_tensor_release(x);
}

static gf_tensor *bad_shape_hook(const gf_tensor *g, void *user) {
    return gf_zeros(SZ(5), 1, GF_F64, NULL);
}

static void rule16_replacement_of_wrong_shape_is_error(void) {
    gf_tensor *x = ag_leaf(DV(1, 2), 2);
    gf_tensor *y = gf_mul_scalar(x, 3.0);
    CHECK(gf_tensor_register_hook(y, bad_shape_hook, NULL) != 0);
    CHECK_ERR(ag_backward_ones(y, -1, false), GF_ERR_AUTOGRAD, "hook", "[5]", "[2]");
    CHECK(gf_tensor_grad(x) == NULL);
    gf_tensor_release(y);
    gf_tensor_release(x);
}

/* ------------------------------------------------------------ rule 17 */
typedef struct acc_spec {
    const char *tag;
    gf_tensor *expect_t;
    double grad_seen[8];
    int calls;
} acc_spec;

static void post_acc(gf_tensor *t, void *user) {
    acc_spec *a = user;
    log_add(a->tag);
    a->calls++;
    CHECK(t == a->expect_t);
    gf_tensor *g = gf_tensor_grad(t);
    if (g) ag_read(g, a->grad_seen, 8);
    else a->grad_seen[0] = NAN;
    gf_tensor_release(g);
}

static void rule17_post_accumulate_hook_sees_updated_grad(void) {
    gf_tensor *x = ag_leaf(DV(1, 2), 2);
    acc_spec a = {"acc", x, {0}, 0};
    gf_hook_handle id = gf_tensor_register_post_accumulate_hook(x, post_acc, &a);
    CHECK(id != 0);
    gf_tensor *y = gf_mul(x, x);
    CHECK_OK(ag_backward_ones(y, 1, false));
    CHECK(a.calls == 1);
    CHECK_CLOSE(a.grad_seen[0], 2, 0);
    CHECK_CLOSE(a.grad_seen[1], 4, 0);
    CHECK_OK(ag_backward_ones(y, 1, false));
    CHECK(a.calls == 2);
    CHECK_CLOSE(a.grad_seen[0], 4, 0); /* after accumulation */
    CHECK_CLOSE(a.grad_seen[1], 8, 0);
    gf_hook_remove(id);
    CHECK_OK(ag_backward_ones(y, 0, false));
    CHECK(a.calls == 2);
    gf_hook_remove(id);
    /* Not called for a backward that does not reach the leaf. */
    acc_spec b = {"acc_w", NULL, {0}, 0};
    gf_tensor *w = ag_leaf(DV(1), 1);
    b.expect_t = w;
    CHECK(gf_tensor_register_post_accumulate_hook(w, post_acc, &b) != 0);
    gf_tensor *z = gf_mul(x, x);
    gf_tensor *q = gf_mul(w, w);
    CHECK_OK(ag_backward_ones(z, -1, false));
    CHECK(b.calls == 0);
    gf_tensor_release(q);
    gf_tensor_release(z);
    gf_tensor_release(w);
    gf_tensor_release(y);
    gf_tensor_release(x);
}

static void rule17_post_accumulate_hook_on_leaves_only(void) {
    gf_tensor *x = ag_leaf(DV(1, 2), 2);
    gf_tensor *y = gf_mul(x, x);
    acc_spec a = {"acc", y, {0}, 0};
    gf_hook_handle id = gf_tensor_register_post_accumulate_hook(y, post_acc, &a);
    CHECK_ERR_NULL(id, GF_ERR_AUTOGRAD, "gf_tensor_register_post_accumulate_hook", "leaf");
    gf_tensor *c = ag_vec(DV(1), 1);
    id = gf_tensor_register_post_accumulate_hook(c, post_acc, &a);
    CHECK_ERR_NULL(id, GF_ERR_AUTOGRAD, "gf_tensor_register_post_accumulate_hook", "require");
    gf_tensor_release(c);
    gf_tensor_release(y);
    gf_tensor_release(x);
}

/* ------------------------------------------------------------ rule 18 */
typedef struct node_spec {
    const char *tag;
    gf_tensor *watch; /* whose .grad to look at when called */
    int watch_had_grad;
    double g_in[8], g_out[8];
    int n_in, n_out;
    double replace_scale; /* pre-hooks: 0 = keep */
} node_spec;

static gf_status node_pre(const char *name, gf_tensor **grads, int n, void *user) {
    node_spec *s = user;
    log_add(s->tag);
    s->n_out = n;
    if (n > 0 && grads[0]) ag_read(grads[0], s->g_out, 8);
    if (s->watch) {
        gf_tensor *g = gf_tensor_grad(s->watch);
        s->watch_had_grad = g != NULL;
        gf_tensor_release(g);
    }
    if (s->replace_scale != 0 && n > 0 && grads[0]) {
        gf_tensor *r = gf_mul_scalar(grads[0], s->replace_scale);
        if (!r) return gf_last_status();
        gf_tensor_release(grads[0]);
        grads[0] = r;
    }
    return GF_OK;
}

static gf_status node_post(const char *name, gf_tensor **grad_inputs, int n_in,
                           gf_tensor *const *grad_outputs, int n_out, void *user) {
    node_spec *s = user;
    log_add(s->tag);
    s->n_in = n_in;
    s->n_out = n_out;
    if (n_in > 0 && grad_inputs[0]) ag_read(grad_inputs[0], s->g_in, 8);
    if (n_out > 0 && grad_outputs[0]) ag_read(grad_outputs[0], s->g_out, 8);
    if (s->watch) {
        gf_tensor *g = gf_tensor_grad(s->watch);
        s->watch_had_grad = g != NULL;
        gf_tensor_release(g);
    }
    return GF_OK;
}

typedef struct watch_hook {
    const char *tag;
    gf_tensor *watch;
    int watch_had_grad;
    double scale;
} watch_hook;
static gf_tensor *watching_tensor_hook(const gf_tensor *g, void *user) {
    watch_hook *w = user;
    log_add(w->tag);
    gf_tensor *gg = gf_tensor_grad(w->watch);
    w->watch_had_grad = gg != NULL;
    gf_tensor_release(gg);
    return w->scale != 0 ? gf_mul_scalar(g, w->scale) : NULL;
}

static void rule18_order_on_a_node(void) {
    /* y = 3x (MulBackward), z = y * y; on y: two tensor hooks, a node
     * pre-hook, retain_grad, a node post-hook. */
    gf_tensor *x = ag_leaf(DV(1, 2), 2);
    gf_tensor *y = gf_mul_scalar(x, 3.0);
    gf_tensor *z = gf_mul(y, y);
    watch_hook t1 = {"tensor1", y, -1, 0}, t2 = {"tensor2", y, -1, 10};
    node_spec pre = {"pre", y, -1, {0}, {0}, 0, 0, 0}, post = {"post", y, -1, {0}, {0}, 0, 0, 0};
    CHECK(gf_node_register_post_hook(y, node_post, &post) != 0); /* registration order */
    CHECK(gf_node_register_pre_hook(y, node_pre, &pre) != 0);    /* does not matter */
    CHECK_OK(gf_tensor_retain_grad(y));
    CHECK(gf_tensor_register_hook(y, watching_tensor_hook, &t1) != 0);
    CHECK(gf_tensor_register_hook(y, watching_tensor_hook, &t2) != 0);
    log_reset();
    CHECK_OK(ag_backward_ones(z, -1, false));
    CHECK_LOG("tensor1", "tensor2", "pre", "post");
    /* retain_grad: after the tensor hooks and node pre-hooks, before the node. */
    CHECK(t1.watch_had_grad == 0 && t2.watch_had_grad == 0 && pre.watch_had_grad == 0);
    CHECK(post.watch_had_grad == 1);
    CHECK_GRAD(y, DV(60, 120), 2, 0); /* the gradient after the tensor hooks */
    /* The pre-hook saw the hooked gradient; the post-hook the node's output. */
    CHECK_CLOSE(pre.g_out[0], 60, 0);
    CHECK(post.n_in >= 1 && post.n_out == 1);
    CHECK_CLOSE(post.g_out[1], 120, 0);
    CHECK_CLOSE(post.g_in[0], 180, 0);
    CHECK_CLOSE(post.g_in[1], 360, 0);
    CHECK_GRAD(x, DV(180, 360), 2, 0);
    gf_tensor_release(z);
    gf_tensor_release(y);
    gf_tensor_release(x);
}

static void rule18_retain_grad_on_a_view_whose_base_changed_in_place(void) {
    /* v retains its grad; its base is then modified in place, so backward
     * regenerates v's history: the retain hook moves to the new node while
     * the old one (its only owner) is freed. */
    gf_tensor *x = ag_leaf(DV(1, 1, 1), 3);
    gf_tensor *y = gf_mul_scalar(x, 2.0);
    gf_tensor *v = gf_slice(y, 0, 0, 2, 1);
    CHECK_OK(gf_tensor_retain_grad(v));
    CHECK_OK(gf_mul_scalar_(y, 3.0));
    gf_tensor *s = gf_sum(v, NULL, 0, false);
    CHECK_OK(gf_backward(s, NULL, NULL));
    CHECK(gf_tensor_retains_grad(v));
    CHECK_GRAD(v, DV(1, 1), 2, 0);
    CHECK_GRAD(x, DV(6, 6, 0), 3, 0);
    gf_tensor_release(s);
    gf_tensor_release(v);
    gf_tensor_release(y);
    gf_tensor_release(x);
}

static void rule18_order_on_leaf_accumulation(void) {
    /* The leaf's accumulation: tensor hooks, node pre-hooks, .grad update,
     * post-accumulate-grad hooks, node post-hooks. */
    gf_tensor *x = ag_leaf(DV(1, 2), 2);
    gf_tensor *y = gf_mul(x, x); /* the graph holds x's accumulator node */
    watch_hook t = {"tensor", x, -1, 0};
    node_spec pre = {"pre", x, -1, {0}, {0}, 0, 0, 0}, post = {"post", x, -1, {0}, {0}, 0, 0, 0};
    acc_spec a = {"acc", x, {0}, 0};
    CHECK(gf_tensor_register_post_accumulate_hook(x, post_acc, &a) != 0);
    gf_hook_handle hp = gf_node_register_post_hook(x, node_post, &post);
    CHECK_MSG(hp != 0, "post-hook on a leaf's accumulator: %s", gf_last_error());
    gf_hook_handle hq = gf_node_register_pre_hook(x, node_pre, &pre);
    CHECK_MSG(hq != 0, "pre-hook on a leaf's accumulator: %s", gf_last_error());
    CHECK(gf_tensor_register_hook(x, watching_tensor_hook, &t) != 0);
    log_reset();
    CHECK_OK(ag_backward_ones(y, -1, false));
    if (hp && hq) CHECK_LOG("tensor", "pre", "acc", "post");
    else CHECK_LOG("tensor", "acc");
    CHECK(t.watch_had_grad == 0);
    if (hq) CHECK(pre.watch_had_grad == 0);
    if (hp) CHECK(post.watch_had_grad == 1);
    CHECK_CLOSE(a.grad_seen[0], 2, 0);
    gf_tensor_release(y);
    gf_tensor_release(x);
}

static void rule18_node_hooks_run_only_if_the_node_runs(void) {
    gf_tensor *a = ag_leaf(DV(1), 1);
    gf_tensor *c = ag_leaf(DV(2), 1);
    gf_tensor *u = gf_mul_scalar(a, 2.0);
    gf_tensor *w = gf_exp(c); /* off the path to a */
    gf_tensor *y = gf_add(u, w);
    node_spec pre = {"pre", NULL, -1, {0}, {0}, 0, 0, 0}, post = {"post", NULL, -1, {0}, {0}, 0, 0, 0};
    watch_hook th = {"tensor", c, -1, 0};
    CHECK(gf_node_register_pre_hook(w, node_pre, &pre) != 0);
    CHECK(gf_node_register_post_hook(w, node_post, &post) != 0);
    CHECK(gf_tensor_register_hook(w, watching_tensor_hook, &th) != 0);
    log_reset();
    gf_tensor *r = NULL;
    gf_grad_opts o = {.retain_graph = 1};
    CHECK_OK(gf_grad(&y, 1, NULL, &a, 1, &r, &o));
    CHECK_VALS(r, DV(2), 1, 0);
    CHECK(g_nlog == 0);
    if (g_nlog) log_print();
    gf_tensor_release(r);
    /* They do run with backward. */
    CHECK_OK(gf_backward(y, NULL, NULL));
    CHECK_LOG("tensor", "pre", "post");
    gf_tensor_release(y);
    gf_tensor_release(w);
    gf_tensor_release(u);
    gf_tensor_release(c);
    gf_tensor_release(a);
}

static void rule18_pre_hook_may_replace_the_gradient(void) {
    gf_tensor *x = ag_leaf(DV(1, 2), 2);
    gf_tensor *y = gf_mul_scalar(x, 3.0);
    node_spec pre = {"pre", NULL, -1, {0}, {0}, 0, 0, 0.5};
    CHECK(gf_node_register_pre_hook(y, node_pre, &pre) != 0);
    CHECK_OK(ag_backward_ones(y, -1, false));
    CHECK_GRAD(x, DV(1.5, 1.5), 2, 0);
    gf_tensor_release(y);
    gf_tensor_release(x);
}

static gf_status failing_pre(const char *name, gf_tensor **grads, int n, void *user) {
    return GF_ERR_INVALID;
}

static void rule18_failing_node_hook_stops_backward(void) {
    gf_tensor *x = ag_leaf(DV(1), 1);
    gf_tensor *y = gf_mul_scalar(x, 3.0);
    CHECK(gf_node_register_pre_hook(y, failing_pre, NULL) != 0);
    CHECK(gf_backward(y, NULL, NULL) != GF_OK);
    CHECK(gf_tensor_grad(x) == NULL);
    gf_tensor_release(y);
    gf_tensor_release(x);
}

static gf_status reasoned_pre(const char *name, gf_tensor **grads, int n, void *user) {
    return gf_set_error(GF_ERR_INVALID, "gradient of %s rejected", name);
}
static gf_status failing_post(const char *name, gf_tensor **gi, int n_in, gf_tensor *const *go,
                              int n_out, void *user) {
    return GF_ERR_PLUGIN;
}

/* An earlier failure, read and handled: never reported for a hook's. */
static void fail_and_read(void) {
    gf_tensor *v = ag_vec(DV(1, 2), 2);
    CHECK(gf_narrow(v, 3, 0, 1) == NULL && strstr(gf_last_error(), "gf_narrow") != NULL);
    gf_tensor_release(v);
}

static void rule18_failing_node_hook_reports_its_own_error(void) {
    gf_tensor *x = ag_leaf(DV(1), 1);
    gf_tensor *y = gf_mul_scalar(x, 3.0);
    const char *node = gf_tensor_grad_fn_name(y);
    gf_hook_handle h = gf_node_register_pre_hook(y, failing_pre, NULL);
    fail_and_read();
    CHECK_ERR(gf_backward(y, NULL, &(gf_backward_opts){.retain_graph = 1}), GF_ERR_INVALID, node,
              "pre-hook", "without a message", "gf_set_error");
    CHECK(strstr(gf_last_error(), "gf_narrow") == NULL);
    gf_hook_remove(h);
    /* a message of its own: that one, naming the node */
    h = gf_node_register_pre_hook(y, reasoned_pre, NULL);
    fail_and_read();
    CHECK_ERR(gf_backward(y, NULL, &(gf_backward_opts){.retain_graph = 1}), GF_ERR_INVALID, node,
              "a node pre-hook: gradient of", "rejected");
    gf_hook_remove(h);
    /* a post-hook, the status it returned */
    h = gf_node_register_post_hook(y, failing_post, NULL);
    fail_and_read();
    CHECK_ERR(gf_backward(y, NULL, &(gf_backward_opts){.retain_graph = 1}), GF_ERR_PLUGIN, node,
              "post-hook", "without a message");
    gf_hook_remove(h);
    /* on a leaf's accumulator, through gf_backward */
    h = gf_node_register_pre_hook(x, reasoned_pre, NULL);
    fail_and_read();
    CHECK_ERR(gf_backward(y, NULL, NULL), GF_ERR_INVALID, "AccumulateGrad: a node pre-hook",
              "rejected");
    gf_hook_remove(h);
    CHECK(gf_tensor_grad(x) == NULL);
    gf_tensor_release(y);
    gf_tensor_release(x);
}

/* A node hook that logs its tag and, the first time it runs, removes one
 * hook and registers another on `on`. */
typedef struct edit_hook {
    const char *tag;
    gf_hook_handle remove;
    gf_tensor *on;
    gf_node_pre_hook_fn add_fn;
    void *add_user;
    gf_hook_handle added;
} edit_hook;

static gf_status editing_pre(const char *name, gf_tensor **grads, int n, void *user) {
    edit_hook *e = user;
    log_add(e->tag);
    if (e->remove) gf_hook_remove(e->remove);
    e->remove = 0;
    if (e->add_fn && !e->added) e->added = gf_node_register_pre_hook(e->on, e->add_fn, e->add_user);
    return GF_OK;
}
static gf_status logging_pre(const char *name, gf_tensor **grads, int n, void *user) {
    log_add(user);
    return GF_OK;
}
static gf_status logging_post(const char *name, gf_tensor **gi, int n_in, gf_tensor *const *go,
                              int n_out, void *user) {
    log_add(user);
    return GF_OK;
}
typedef struct edit_tensor_hook {
    const char *tag;
    gf_hook_handle remove;
} edit_tensor_hook;
static gf_tensor *editing_tensor_hook(const gf_tensor *g, void *user) {
    edit_tensor_hook *e = user;
    log_add(e->tag);
    if (e->remove) gf_hook_remove(e->remove);
    e->remove = 0;
    return NULL;
}

static void rule18_hooks_are_taken_when_their_list_starts(void) {
    /* As PyTorch: the pre-hooks that run on a node are those registered when
     * its pre-hooks start. One removed by an earlier pre-hook still runs
     * that once; one registered meanwhile runs from the next backward. */
    gf_tensor *x = ag_leaf(DV(1, 2), 2);
    gf_tensor *y = gf_mul_scalar(x, 3.0);
    edit_hook a = {"A", 0, y, logging_pre, "C", 0};
    CHECK(gf_node_register_pre_hook(y, editing_pre, &a) != 0);
    gf_hook_handle b = gf_node_register_pre_hook(y, logging_pre, "B");
    gf_hook_handle post = gf_node_register_post_hook(y, logging_post, "P");
    a.remove = b;
    log_reset();
    CHECK_OK(ag_backward_ones(y, 1, false));
    CHECK_LOG("A", "B", "P");
    CHECK(a.added != 0);
    log_reset();
    CHECK_OK(ag_backward_ones(y, 1, false));
    CHECK_LOG("A", "C", "P"); /* B is gone, C runs from now on */
    /* Another list is taken when it starts: a post-hook removed by a
     * pre-hook of the same node does not run. */
    edit_hook d = {"D", post, NULL, NULL, NULL, 0};
    CHECK(gf_node_register_pre_hook(y, editing_pre, &d) != 0);
    log_reset();
    CHECK_OK(ag_backward_ones(y, 1, false));
    CHECK_LOG("A", "C", "D");
    /* Tensor hooks the same: a later one removed by an earlier one runs once. */
    hook_spec t2 = {"T2", 0, {0}, 0};
    edit_tensor_hook t1 = {"T1", 0};
    CHECK(gf_tensor_register_hook(y, editing_tensor_hook, &t1) != 0);
    t1.remove = gf_tensor_register_hook(y, tensor_hook, &t2);
    log_reset();
    CHECK_OK(ag_backward_ones(y, 1, false));
    CHECK_LOG("T1", "T2", "A", "C", "D");
    log_reset();
    CHECK_OK(ag_backward_ones(y, 0, false));
    CHECK_LOG("T1", "A", "C", "D");
    /* and on a leaf's accumulation */
    edit_tensor_hook l1 = {"L1", 0};
    hook_spec l2 = {"L2", 0, {0}, 0};
    CHECK(gf_tensor_register_hook(x, editing_tensor_hook, &l1) != 0);
    l1.remove = gf_tensor_register_hook(x, tensor_hook, &l2);
    gf_tensor *y2 = gf_mul_scalar(x, 2.0);
    log_reset();
    CHECK_OK(ag_backward_ones(y2, 1, false));
    CHECK_LOG("L1", "L2");
    log_reset();
    CHECK_OK(ag_backward_ones(y2, 0, false));
    CHECK_LOG("L1");
    gf_tensor_release(y2);
    gf_tensor_release(y);
    gf_tensor_release(x);
}

/* ------------------------------------------------------------ rule 19 */
/* Pack to host memory (a plain copy), unpack back to the device. */
typedef struct packed {
    double data[16];
    int64_t sizes[GF_MAX_RANK];
    int rank;
} packed;

static void *pack_host(const gf_tensor *t, void *user) {
    pack_counts *c = user;
    packed *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->rank = gf_tensor_rank(t);
    memcpy(p->sizes, gf_tensor_sizes(t), sizeof(int64_t) * (size_t)p->rank);
    if (ag_read(t, p->data, 16) < 0) {
        free(p);
        return NULL;
    }
    c->packs++;
    return p;
}
static gf_tensor *unpack_host(void *pk, void *user) {
    pack_counts *c = user;
    packed *p = pk;
    c->unpacks++;
    return gf_from_data(p->data, p->sizes, p->rank, GF_F64, NULL);
}
static void release_host(void *pk, void *user) {
    pack_counts *c = user;
    c->releases++;
    free(pk);
}

static gf_saved_tensor_hooks host_hooks(pack_counts *c) {
    gf_saved_tensor_hooks h = {pack_host, unpack_host, release_host, c};
    return h;
}

static void rule19_pack_once_per_saved_tensor_unpack_every_use(void) {
    pack_counts cnt = {0, 0, 0};
    gf_saved_tensor_hooks h = host_hooks(&cnt);
    gf_tensor *x = ag_leaf(DV(1, 2), 2);
    gf_tensor *w = ag_leaf(DV(3, 4), 2);
    CHECK_OK(gf_saved_tensor_hooks_push(&h));
    gf_tensor *y = gf_mul(x, w); /* MulBackward saves x and w */
    gf_tensor *s = gf_add(y, y); /* add saves nothing */
    CHECK_OK(gf_saved_tensor_hooks_pop());
    CHECK(cnt.packs == 2 && cnt.unpacks == 0);
    CHECK_OK(ag_backward_ones(s, 1, false));
    CHECK(cnt.unpacks == 2);
    CHECK_OK(ag_backward_ones(s, 0, false));
    CHECK(cnt.packs == 2 && cnt.unpacks == 4);
    CHECK_GRAD(x, DV(12, 16), 2, 0); /* 2 runs x 2w */
    CHECK_GRAD(w, DV(4, 8), 2, 0);
    gf_tensor_release(s);
    gf_tensor_release(y);
    CHECK(cnt.releases == 2); /* each packed value released once */
    gf_tensor_release(w);
    gf_tensor_release(x);
}

static void rule19_hooked_saved_tensors_skip_version_check(void) {
    pack_counts cnt = {0, 0, 0};
    gf_saved_tensor_hooks h = host_hooks(&cnt);
    gf_tensor *x = ag_leaf(DV(1, 2), 2);
    gf_tensor *w = ag_leaf(DV(3, 4), 2);
    CHECK_OK(gf_saved_tensor_hooks_push(&h));
    gf_tensor *y = gf_mul(x, w);
    CHECK_OK(gf_saved_tensor_hooks_pop());
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    CHECK_OK(gf_add_scalar_(x, 100.0)); /* x's storage moves on; the packed copy does not */
    gf_grad_mode_set(prev);
    CHECK_OK(ag_backward_ones(y, -1, false));
    CHECK_GRAD(w, DV(1, 2), 2, 0); /* the values at save time */
    CHECK_GRAD(x, DV(3, 4), 2, 0);
    CHECK(cnt.unpacks == 2);
    gf_tensor_release(y);
    gf_tensor_release(w);
    gf_tensor_release(x);
}

static void rule19_innermost_hooks_win(void) {
    pack_counts outer = {0, 0, 0}, inner = {0, 0, 0};
    gf_saved_tensor_hooks ho = host_hooks(&outer), hi = host_hooks(&inner);
    gf_tensor *x = ag_leaf(DV(1, 2), 2);
    gf_tensor *w = ag_leaf(DV(3, 4), 2);
    CHECK_OK(gf_saved_tensor_hooks_push(&ho));
    CHECK_OK(gf_saved_tensor_hooks_push(&hi));
    gf_tensor *y1 = gf_mul(x, w);
    CHECK(inner.packs == 2 && outer.packs == 0);
    CHECK_OK(gf_saved_tensor_hooks_pop());
    gf_tensor *y2 = gf_mul(x, w);
    CHECK(inner.packs == 2 && outer.packs == 2);
    CHECK_OK(gf_saved_tensor_hooks_pop());
    gf_tensor *y3 = gf_mul(x, w); /* no hooks */
    CHECK(inner.packs == 2 && outer.packs == 2);
    CHECK_OK(ag_backward_ones(y1, -1, false));
    CHECK(inner.unpacks == 2 && outer.unpacks == 0);
    CHECK_OK(ag_backward_ones(y2, -1, false));
    CHECK(inner.unpacks == 2 && outer.unpacks == 2);
    CHECK_OK(ag_backward_ones(y3, -1, false));
    CHECK(inner.unpacks == 2 && outer.unpacks == 2);
    CHECK_GRAD(x, DV(9, 12), 2, 0);
    gf_tensor_release(y3);
    gf_tensor_release(y2);
    gf_tensor_release(y1);
    CHECK(inner.releases == 2 && outer.releases == 2);
    gf_tensor_release(w);
    gf_tensor_release(x);
}

typedef struct thread_save {
    int ok;
} thread_save;
static void *save_in_thread(void *arg) {
    thread_save *t = arg;
    gf_tensor *x = ag_leaf(DV(1), 1);
    gf_tensor *y = gf_mul(x, x);
    t->ok = y && gf_backward(y, NULL, NULL) == GF_OK;
    gf_tensor_release(y);
    gf_tensor_release(x);
    return NULL;
}

static void rule19_saved_tensor_hooks_are_thread_local(void) {
    pack_counts cnt = {0, 0, 0};
    gf_saved_tensor_hooks h = host_hooks(&cnt);
    CHECK_OK(gf_saved_tensor_hooks_push(&h));
    thread_save t = {0};
    pthread_t th;
    CHECK(pthread_create(&th, NULL, save_in_thread, &t) == 0);
    pthread_join(th, NULL);
    CHECK(t.ok);
    CHECK(cnt.packs == 0 && cnt.unpacks == 0);
    CHECK_OK(gf_saved_tensor_hooks_pop());
}

/* Hooks that pack into a graft tensor of their own (a no-grad copy) and give
 * it back in release: the copy is the hooks', so no scope may release it.
 * Callbacks run with scope recording suspended (user guide, section 5), in
 * a scope the caller has open around the op as much as in the scopes graft
 * opens itself (a backward formula under create_graph, gradgradcheck). */
static void *pack_copy(const gf_tensor *t, void *user) {
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    gf_tensor *k = gf_clone(t);
    gf_grad_mode_set(prev);
    if (k) ((pack_counts *)user)->packs++;
    return k;
}
static gf_tensor *unpack_copy(void *pk, void *user) {
    ((pack_counts *)user)->unpacks++;
    return gf_detach(pk);
}
static void release_copy(void *pk, void *user) {
    ((pack_counts *)user)->releases++;
    gf_tensor_release(pk);
}
static gf_saved_tensor_hooks copy_hooks(pack_counts *c) {
    gf_saved_tensor_hooks h = {pack_copy, unpack_copy, release_copy, c};
    return h;
}

static void rule19_hooks_run_outside_a_scope_around_the_op(void) {
    pack_counts cnt = {0, 0, 0};
    gf_saved_tensor_hooks h = copy_hooks(&cnt);
    gf_tensor *x = ag_leaf(DV(1, 2), 2);
    gf_tensor *w = ag_leaf(DV(3, 4), 2);
    uint64_t base = ag_bytes_in_use();
    /* backward inside the scope: the saved copies are released by backward */
    gf_scope_begin();
    CHECK_OK(gf_saved_tensor_hooks_push(&h));
    gf_tensor *y = gf_mul(x, w); /* the scope records y; the copies are the hooks' */
    CHECK_OK(gf_saved_tensor_hooks_pop());
    CHECK_OK(gf_backward(gf_sum(y, NULL, 0, false), NULL, NULL));
    gf_scope_end();
    CHECK(cnt.packs == 2 && cnt.unpacks == 2 && cnt.releases == 2);
    CHECK_GRAD(x, DV(3, 4), 2, 0);
    CHECK_GRAD(w, DV(1, 2), 2, 0);
    CHECK_OK(gf_tensor_set_grad(x, NULL));
    CHECK_OK(gf_tensor_set_grad(w, NULL));
    CHECK(ag_bytes_in_use() == base);
    /* no backward: the scope's end drops the graph, which releases the copies */
    gf_scope_begin();
    CHECK_OK(gf_saved_tensor_hooks_push(&h));
    CHECK(gf_mul(x, w) != NULL);
    CHECK_OK(gf_saved_tensor_hooks_pop());
    gf_scope_end();
    CHECK(cnt.packs == 4 && cnt.releases == 4);
    CHECK(ag_bytes_in_use() == base);
    gf_tensor_release(w);
    gf_tensor_release(x);
}

static void rule19_hooks_run_outside_graft_scopes_in_create_graph_backward(void) {
    pack_counts cnt = {0, 0, 0};
    gf_saved_tensor_hooks h = copy_hooks(&cnt);
    gf_tensor *x = ag_leaf(DV(1, 2), 2);
    gf_tensor *w = ag_leaf(DV(3, 4), 2);
    uint64_t base = ag_bytes_in_use();
    gf_tensor *y = gf_mul(x, w);
    /* MulBackward under create_graph computes grad * w with graft ops in a
     * scope of its own: that product saves grad and w through the hooks. */
    CHECK_OK(gf_saved_tensor_hooks_push(&h));
    gf_tensor *g = ag_grad1(y, x, NULL, true);
    CHECK_OK(gf_saved_tensor_hooks_pop());
    CHECK_VALS(g, DV(3, 4), 2, 0);
    CHECK(cnt.packs >= 1);
    /* second order through the packed values: d(sum g)/dw = 1 */
    gf_tensor *gw = g ? ag_grad1(g, w, NULL, false) : NULL;
    CHECK_VALS(gw, DV(1, 1), 2, 0);
    CHECK(cnt.unpacks >= 1);
    gf_tensor_release(gw);
    gf_tensor_release(g);
    gf_tensor_release(y);
    CHECK(cnt.releases == cnt.packs);
    CHECK(ag_bytes_in_use() == base);
    gf_tensor_release(w);
    gf_tensor_release(x);
}

/* x * w * x: gradgradcheck records nothing in the caller's scope, so the
 * function releases its intermediate itself. */
static gf_tensor *mul_fn(gf_tensor *const *in, int n, void *user) {
    (void)n;
    (void)user;
    gf_tensor *xw = gf_mul(in[0], in[1]);
    gf_tensor *r = gf_mul(xw, in[0]);
    gf_tensor_release(xw);
    return r;
}

static void rule19_hooks_run_outside_graft_scopes_in_gradgradcheck(void) {
    pack_counts cnt = {0, 0, 0};
    gf_saved_tensor_hooks h = copy_hooks(&cnt);
    gf_tensor *x = ag_leaf(DV(1, -2, 0.5), 3);
    gf_tensor *w = ag_leaf(DV(3, 4, -1), 3);
    uint64_t base = ag_bytes_in_use();
    CHECK_OK(gf_saved_tensor_hooks_push(&h));
    gf_scope_begin(); /* gradgradcheck's own tensors never land here either */
    CHECK_OK(gf_gradgradcheck(mul_fn, (gf_tensor *const[]){x, w}, 2, NULL, NULL));
    gf_scope_end();
    CHECK_OK(gf_saved_tensor_hooks_pop());
    CHECK_MSG(cnt.packs > 0 && cnt.unpacks > 0 && cnt.releases == cnt.packs,
              "%d packs, %d unpacks, %d releases", cnt.packs, cnt.unpacks, cnt.releases);
    CHECK(ag_bytes_in_use() == base);
    gf_tensor_release(w);
    gf_tensor_release(x);
}

/* Hooks that keep the very tensor they are given (a reference), the
 * simplest hooks there are. Around an op that saves its own output the
 * packed value must not hold the output's history (the node itself), or
 * node and output hold each other: dropping the graph without backward
 * would never free it nor run release. */
typedef gf_tensor *(*unary_op)(const gf_tensor *);

static void rule19_hooks_keeping_a_saved_output_make_no_cycle(void) {
    pack_counts cnt = {0, 0, 0};
    gf_saved_tensor_hooks h = {ag_pack_keep, ag_unpack_keep, ag_release_keep, &cnt};
    gf_tensor *x = ag_leaf(DV(-1, 0.5), 2);
    uint64_t base = ag_bytes_in_use();
    const unary_op ops[] = {gf_relu, gf_exp, gf_sigmoid, gf_tanh};
    for (int i = 0; i < AG_N(ops); i++) {
        int packs = cnt.packs;
        CHECK_OK(gf_saved_tensor_hooks_push(&h));
        gf_tensor *y = ops[i](x); /* saves y itself */
        CHECK_OK(gf_saved_tensor_hooks_pop());
        CHECK_MSG(y && cnt.packs > packs, "op %d", i);
        gf_tensor_release(y); /* no backward: the graph goes */
        CHECK_MSG(cnt.releases == cnt.packs, "op %d: %d packs, %d releases", i, cnt.packs,
                  cnt.releases);
        CHECK_MSG(ag_bytes_in_use() == base, "op %d", i);
    }
    /* backward reads the kept value: exp' = exp */
    CHECK_OK(gf_saved_tensor_hooks_push(&h));
    gf_tensor *y = gf_exp(x);
    CHECK_OK(gf_saved_tensor_hooks_pop());
    CHECK_OK(ag_backward_ones(y, -1, false));
    CHECK_GRAD(x, DV(exp(-1.0), exp(0.5)), 2, 1e-15);
    gf_tensor_release(y);
    CHECK(cnt.releases == cnt.packs);
    /* create_graph gives the unpacked value the node's history: on a tensor of
     * graft's own, not on the one the hooks keep */
    for (int second = 0; second <= 1; second++) {
        CHECK_OK(gf_saved_tensor_hooks_push(&h));
        y = gf_exp(x);
        CHECK_OK(gf_saved_tensor_hooks_pop());
        gf_tensor *g = ag_grad1(y, x, NULL, true); /* keeps the graph */
        CHECK_VALS(g, DV(exp(-1.0), exp(0.5)), 2, 1e-15);
        gf_tensor *gg = g && second ? ag_grad1(g, x, NULL, false) : NULL;
        if (second) CHECK_VALS(gg, DV(exp(-1.0), exp(0.5)), 2, 1e-15);
        gf_tensor_release(gg);
        gf_tensor_release(g);
        gf_tensor_release(y);
        CHECK_MSG(cnt.releases == cnt.packs, "second order %d: %d packs, %d releases", second,
                  cnt.packs, cnt.releases);
    }
    CHECK_OK(gf_tensor_set_grad(x, NULL));
    CHECK(ag_bytes_in_use() == base);
    gf_tensor_release(x);
}

static void rule19_push_pop_errors(void) {
    CHECK_ERR(gf_saved_tensor_hooks_pop(), GF_ERR_INVALID, "gf_saved_tensor_hooks_pop");
    gf_saved_tensor_hooks bad = {NULL, unpack_host, NULL, NULL};
    CHECK_ERR(gf_saved_tensor_hooks_push(&bad), GF_ERR_INVALID, "gf_saved_tensor_hooks_push", "pack");
    CHECK_ERR(gf_saved_tensor_hooks_push(NULL), GF_ERR_INVALID, "gf_saved_tensor_hooks_push");
}

int main(void) {
    RUN(rule16_hook_needs_a_tensor_that_requires_grad);
    RUN(rule16_hooks_run_in_order_and_may_replace_the_gradient);
    RUN(rule16_hook_on_a_leaf);
    RUN(rule16_replacement_of_wrong_shape_is_error);
    RUN(rule17_post_accumulate_hook_sees_updated_grad);
    RUN(rule17_post_accumulate_hook_on_leaves_only);
    RUN(rule18_order_on_a_node);
    RUN(rule18_retain_grad_on_a_view_whose_base_changed_in_place);
    RUN(rule18_order_on_leaf_accumulation);
    RUN(rule18_node_hooks_run_only_if_the_node_runs);
    RUN(rule18_pre_hook_may_replace_the_gradient);
    RUN(rule18_failing_node_hook_stops_backward);
    RUN(rule18_failing_node_hook_reports_its_own_error);
    RUN(rule18_hooks_are_taken_when_their_list_starts);
    RUN(rule19_pack_once_per_saved_tensor_unpack_every_use);
    RUN(rule19_hooked_saved_tensors_skip_version_check);
    RUN(rule19_innermost_hooks_win);
    RUN(rule19_saved_tensor_hooks_are_thread_local);
    RUN(rule19_hooks_run_outside_a_scope_around_the_op);
    RUN(rule19_hooks_run_outside_graft_scopes_in_create_graph_backward);
    RUN(rule19_hooks_run_outside_graft_scopes_in_gradgradcheck);
    RUN(rule19_hooks_keeping_a_saved_output_make_no_cycle);
    RUN(rule19_push_pop_errors);
    return ag_finish();
}
