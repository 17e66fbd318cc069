/* SPDX-License-Identifier: BSD-3-Clause */
/* test_rules_custom.c — rule 20 (custom functions from C) and rule 23
 * (gf_gradcheck / gf_gradgradcheck catch a wrong backward).
 *
 * The callbacks open a scope of their own and keep only what they hand
 * back, so they own exactly the references the API documents whatever
 * scope the caller runs them in; one test (in a child process, in case it
 * crashes) writes a backward the plain way the header describes. */
#include <sys/wait.h>
#include <unistd.h>

#include "test_rules_util.h"

/* ------------------------------------------------------------ Cube: y = x^3 */
typedef struct cube_user {
    int fwd_calls, bwd_calls;
    int fwd_grad_enabled, bwd_grad_enabled;
    int saved_count;
    bool detach_in_backward;   /* a backward whose result has no history in x */
    bool wrong_derivative;     /* returns 2 g instead of 3 x^2 g */
} cube_user;

static gf_status cube_fwd(gf_function_ctx *ctx, gf_tensor *const *in, int n_in, gf_tensor **out,
                          int n_out, void *user) {
    cube_user *u = user;
    u->fwd_calls++;
    u->fwd_grad_enabled = gf_is_grad_enabled();
    gf_scope_begin();
    gf_tensor *x2 = gf_mul(in[0], in[0]);
    gf_tensor *y = gf_scope_keep(gf_mul(x2, in[0]));
    gf_scope_end();
    if (!y) return gf_last_status();
    out[0] = y;
    return gf_ctx_save_for_backward(ctx, &in[0], 1);
}

static gf_status cube_bwd(gf_function_ctx *ctx, gf_tensor *const *go, int n_out, gf_tensor **gi,
                          int n_in, void *user) {
    cube_user *u = user;
    u->bwd_calls++;
    u->bwd_grad_enabled = gf_is_grad_enabled();
    u->saved_count = gf_ctx_saved_count(ctx);
    gf_scope_begin();
    gf_tensor *x = gf_ctx_saved_tensor(ctx, 0);
    if (x && u->detach_in_backward) x = gf_detach(x);
    gf_tensor *d = u->wrong_derivative ? gf_full_like(go[0], 2.0)
                                       : gf_mul_scalar(gf_mul(x, x), 3.0);
    gf_tensor *g = gf_scope_keep(gf_mul(go[0], d));
    gf_scope_end();
    if (!g) return gf_last_status();
    gi[0] = g;
    return GF_OK;
}

static gf_function_def cube_def(cube_user *u) {
    gf_function_def d = {"CubeFunction", cube_fwd, cube_bwd, false, u};
    return d;
}

static gf_tensor *apply1(const gf_function_def *def, gf_tensor *const *in, int n_in) {
    gf_tensor *out = NULL;
    gf_status s = gf_function_apply(def, in, n_in, &out, 1);
    if (s != GF_OK) {
        fprintf(stderr, "gf_function_apply: %s\n", gf_last_error());
        return NULL;
    }
    return out;
}

static void rule20_forward_and_backward_callbacks(void) {
    cube_user u = {0};
    gf_function_def def = cube_def(&u);
    gf_tensor *x = ag_leaf(DV(1, 2, -3), 3);
    gf_tensor *y = apply1(&def, &x, 1);
    CHECK(u.fwd_calls == 1 && u.fwd_grad_enabled == 0); /* forward runs without grad */
    CHECK_VALS(y, DV(1, 8, -27), 3, 0);
    CHECK(y && gf_tensor_requires_grad(y) && !gf_tensor_is_leaf(y));
    const char *name = gf_tensor_grad_fn_name(y);
    CHECK(name && strcmp(name, "CubeFunction") == 0);
    gf_tensor *go = ag_vec(DV(1, 10, 100), 3);
    CHECK_OK(gf_backward(y, go, NULL));
    CHECK(u.bwd_calls == 1 && u.bwd_grad_enabled == 0 && u.saved_count == 1);
    CHECK_GRAD(x, DV(3, 120, 2700), 3, 1e-12);
    gf_tensor_release(go);
    gf_tensor_release(y);

    /* Nothing requires grad: no node, backward never needed. */
    gf_tensor *c = ag_vec(DV(2), 1);
    gf_tensor *yc = apply1(&def, &c, 1);
    CHECK_VALS(yc, DV(8), 1, 0);
    CHECK(yc && !gf_tensor_requires_grad(yc) && gf_tensor_is_leaf(yc));
    gf_tensor_release(yc);
    /* Under no-grad neither. */
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    gf_tensor *yn = apply1(&def, &x, 1);
    gf_grad_mode_set(prev);
    CHECK(yn && !gf_tensor_requires_grad(yn));
    gf_tensor_release(yn);
    gf_tensor_release(c);
    gf_tensor_release(x);
}

static void rule20_double_backward_through_custom_backward(void) {
    /* Not once_differentiable: its backward uses graft ops on the saved x
     * (which carries history under create_graph), so d2/dx2 x^3 = 6x. */
    cube_user u = {0};
    gf_function_def def = cube_def(&u);
    gf_tensor *x = ag_leaf(DV(1, 2, -3), 3);
    gf_tensor *y = apply1(&def, &x, 1);
    gf_tensor *g = y ? ag_grad1(y, x, NULL, true) : NULL;
    CHECK(u.bwd_grad_enabled == 1); /* create_graph: backward in grad mode */
    CHECK_VALS(g, DV(3, 12, 27), 3, 1e-12);
    gf_tensor *h = g ? ag_grad1(g, x, NULL, false) : NULL;
    CHECK_VALS(h, DV(6, 12, -18), 3, 1e-12);
    gf_tensor_release(h);
    gf_tensor_release(g);
    gf_tensor_release(y);
    gf_tensor_release(x);
}

/* ------------------------------------------------------------ needs_input_grad, NULL slots */
typedef struct scale_user {
    bool needs_fwd[4], needs_bwd[4];
    int n_in_seen;
    bool grad_for_null_slot; /* backward writes a gradient where no tensor was */
} scale_user;

/* y = a * b (inputs 0 and 1), input 2 is a non-tensor slot (NULL). */
static gf_status scale_fwd(gf_function_ctx *ctx, gf_tensor *const *in, int n_in, gf_tensor **out,
                           int n_out, void *user) {
    scale_user *u = user;
    u->n_in_seen = n_in;
    for (int i = 0; i < n_in && i < 4; i++) u->needs_fwd[i] = gf_ctx_needs_input_grad(ctx, i);
    out[0] = gf_mul(in[0], in[1]);
    if (!out[0]) return gf_last_status();
    return gf_ctx_save_for_backward(ctx, in, 2);
}

static gf_status scale_bwd(gf_function_ctx *ctx, gf_tensor *const *go, int n_out, gf_tensor **gi,
                           int n_in, void *user) {
    scale_user *u = user;
    for (int i = 0; i < n_in && i < 4; i++) u->needs_bwd[i] = gf_ctx_needs_input_grad(ctx, i);
    gf_scope_begin();
    gf_tensor *a = gf_ctx_saved_tensor(ctx, 0), *b = gf_ctx_saved_tensor(ctx, 1);
    if (gf_ctx_needs_input_grad(ctx, 0)) gi[0] = gf_scope_keep(gf_mul(go[0], b));
    if (gf_ctx_needs_input_grad(ctx, 1)) gi[1] = gf_scope_keep(gf_mul(go[0], a));
    if (u->grad_for_null_slot) gi[2] = gf_scope_keep(gf_ones_like(go[0]));
    gf_scope_end();
    return GF_OK;
}

static void rule20_needs_input_grad_and_non_tensor_slots(void) {
    scale_user u = {{0}, {0}, 0, false};
    gf_function_def def = {"ScaleFunction", scale_fwd, scale_bwd, false, &u};
    gf_tensor *x = ag_leaf(DV(1, 2), 2);
    gf_tensor *c = ag_vec(DV(3, 4), 2);
    gf_tensor *in[3] = {x, c, NULL};
    gf_tensor *y = apply1(&def, in, 3);
    CHECK(u.n_in_seen == 3);
    CHECK(u.needs_fwd[0] && !u.needs_fwd[1] && !u.needs_fwd[2]);
    CHECK_VALS(y, DV(3, 8), 2, 0);
    CHECK_OK(ag_backward_ones(y, -1, false));
    CHECK(u.needs_bwd[0] && !u.needs_bwd[1] && !u.needs_bwd[2]);
    CHECK_GRAD(x, DV(3, 4), 2, 0);
    CHECK(gf_tensor_grad(c) == NULL);
    gf_tensor_release(y);
    /* Inputs swapped: now only input 1 needs a gradient. */
    gf_tensor *in2[3] = {c, x, NULL};
    y = apply1(&def, in2, 3);
    CHECK(!u.needs_fwd[0] && u.needs_fwd[1]);
    CHECK_OK(ag_backward_ones(y, -1, false));
    CHECK_GRAD(x, DV(6, 8), 2, 0);
    gf_tensor_release(y);
    gf_tensor_release(c);
    gf_tensor_release(x);
}

static void rule20_backward_gradient_for_a_non_tensor_input_is_error(void) {
    /* PyTorch: "returned a gradient different than None at position 3,
     * but the corresponding forward input was not a Variable". */
    scale_user u = {{0}, {0}, 0, true};
    gf_function_def def = {"ScaleFunction", scale_fwd, scale_bwd, false, &u};
    gf_tensor *x = ag_leaf(DV(1, 2), 2);
    gf_tensor *c = ag_vec(DV(3, 4), 2);
    gf_tensor *in[3] = {x, c, NULL};
    gf_tensor *y = apply1(&def, in, 3);
    CHECK_ERR(ag_backward_ones(y, -1, false), GF_ERR_AUTOGRAD, "ScaleFunction", "2");
    gf_tensor_release(y);
    gf_tensor_release(c);
    gf_tensor_release(x);
}

static void rule20_returning_none_for_an_input_is_fine(void) {
    scale_user u = {{0}, {0}, 0, false};
    gf_function_def def = {"ScaleFunction", scale_fwd, scale_bwd, false, &u};
    /* Both inputs require grad; the backward only fills what it is asked. */
    gf_tensor *x = ag_leaf(DV(1, 2), 2);
    gf_tensor *w = ag_leaf(DV(5, 6), 2);
    gf_tensor *in[3] = {x, w, NULL};
    gf_tensor *y = apply1(&def, in, 3);
    CHECK(u.needs_fwd[0] && u.needs_fwd[1]);
    CHECK_OK(ag_backward_ones(y, -1, false));
    CHECK_GRAD(x, DV(5, 6), 2, 0);
    CHECK_GRAD(w, DV(1, 2), 2, 0);
    gf_tensor_release(y);
    gf_tensor_release(w);
    gf_tensor_release(x);
}

/* ------------------------------------------------------------ wrong shapes */
static gf_status shape_fwd(gf_function_ctx *ctx, gf_tensor *const *in, int n_in, gf_tensor **out,
                           int n_out, void *user) {
    out[0] = gf_mul_scalar(in[0], 2.0);
    return out[0] ? GF_OK : gf_last_status();
}
static gf_status bad_shape_bwd(gf_function_ctx *ctx, gf_tensor *const *go, int n_out,
                               gf_tensor **gi, int n_in, void *user) {
    gf_scope_begin();
    gi[0] = gf_scope_keep(gf_ones(SZ(2), 1, GF_F64, NULL)); /* the input has 3 elements */
    gf_scope_end();
    return GF_OK;
}
static gf_status bad_dtype_bwd(gf_function_ctx *ctx, gf_tensor *const *go, int n_out,
                               gf_tensor **gi, int n_in, void *user) {
    gf_scope_begin();
    gi[0] = gf_scope_keep(gf_ones(SZ(3), 1, GF_F32, NULL));
    gf_scope_end();
    return GF_OK;
}

static void rule20_backward_wrong_shape_names_the_function(void) {
    gf_function_def def = {"BadShapeFunction", shape_fwd, bad_shape_bwd, false, NULL};
    gf_tensor *x = ag_leaf(DV(1, 2, 3), 3);
    gf_tensor *y = apply1(&def, &x, 1);
    CHECK_ERR(ag_backward_ones(y, -1, false), GF_ERR_AUTOGRAD, "BadShapeFunction", "[2]", "[3]");
    CHECK(gf_tensor_grad(x) == NULL);
    gf_tensor_release(y);
    gf_function_def def2 = {"BadDtypeFunction", shape_fwd, bad_dtype_bwd, false, NULL};
    y = apply1(&def2, &x, 1);
    CHECK_ERR(ag_backward_ones(y, -1, false), GF_ERR_AUTOGRAD, "BadDtypeFunction", "f32", "f64");
    gf_tensor_release(y);
    gf_tensor_release(x);
}

/* ------------------------------------------------------------ failing callbacks */
static gf_status failing_fwd(gf_function_ctx *ctx, gf_tensor *const *in, int n_in, gf_tensor **out,
                             int n_out, void *user) {
    return GF_ERR_INVALID;
}
static gf_status null_fwd(gf_function_ctx *ctx, gf_tensor *const *in, int n_in, gf_tensor **out,
                          int n_out, void *user) {
    return GF_OK; /* leaves out[0] NULL */
}
static gf_status failing_bwd(gf_function_ctx *ctx, gf_tensor *const *go, int n_out,
                             gf_tensor **gi, int n_in, void *user) {
    return GF_ERR_INVALID;
}

static void rule20_failing_callbacks_are_errors_naming_the_function(void) {
    gf_tensor *x = ag_leaf(DV(1), 1);
    gf_tensor *out = (gf_tensor *)1;
    gf_function_def f1 = {"FailingForward", failing_fwd, failing_bwd, false, NULL};
    gf_clear_error();
    CHECK_ERR(gf_function_apply(&f1, &x, 1, &out, 1), GF_ERR_INVALID, "FailingForward");
    CHECK(out == NULL);
    gf_function_def f2 = {"NullForward", null_fwd, failing_bwd, false, NULL};
    CHECK_ERR(gf_function_apply(&f2, &x, 1, &out, 1), GF_ERR_AUTOGRAD, "NullForward", "output 0");
    gf_function_def f3 = {"FailingBackward", shape_fwd, failing_bwd, false, NULL};
    gf_tensor *y = apply1(&f3, &x, 1);
    gf_clear_error();
    CHECK_ERR(gf_backward(y, NULL, NULL), GF_ERR_INVALID, "FailingBackward");
    CHECK(gf_tensor_grad(x) == NULL);
    gf_tensor_release(y);
    gf_function_def f4 = {"NoBackward", shape_fwd, NULL, false, NULL};
    CHECK_ERR(gf_function_apply(&f4, &x, 1, &out, 1), GF_ERR_INVALID, "gf_function_apply", "backward");
    gf_tensor_release(x);
}

/* An earlier failure, read and handled by the caller: it must never stand
 * in for a later callback's failure. */
static void fail_and_read_an_unrelated_call(void) {
    gf_tensor *v = ag_vec(DV(1, 2), 2);
    gf_tensor *bad = gf_select(v, 5, 0);
    CHECK(bad == NULL && strstr(gf_last_error(), "gf_select") != NULL);
    gf_tensor_release(v);
}

static gf_status reasoned_fwd(gf_function_ctx *ctx, gf_tensor *const *in, int n_in,
                              gf_tensor **out, int n_out, void *user) {
    return gf_set_error(GF_ERR_SHAPE, "forward wants %d dims", 2);
}
static gf_status reasoned_bwd(gf_function_ctx *ctx, gf_tensor *const *go, int n_out,
                              gf_tensor **gi, int n_in, void *user) {
    return gf_set_error(GF_ERR_UNSUPPORTED, "no gradient for input %d yet", 0);
}
/* A graft call inside the backward fails; the backward hands its status on. */
static gf_status inner_failure_bwd(gf_function_ctx *ctx, gf_tensor *const *go, int n_out,
                                   gf_tensor **gi, int n_in, void *user) {
    gf_tensor *g = gf_sum(go[0], (const int[]){7}, 1, false); /* no dim 7 */
    if (!g) return gf_last_status();
    gi[0] = g;
    return GF_OK;
}

static void rule20_callback_errors_are_their_own_never_an_older_one(void) {
    gf_tensor *x = ag_leaf(DV(1), 1);
    /* without a message: said so, with the function's name; not the older text */
    gf_function_def f1 = {"SilentBackward", shape_fwd, failing_bwd, false, NULL};
    gf_tensor *y = apply1(&f1, &x, 1);
    fail_and_read_an_unrelated_call();
    CHECK_ERR(gf_backward(y, NULL, NULL), GF_ERR_INVALID, "SilentBackward: backward",
              "without a message", "gf_set_error");
    CHECK(strstr(gf_last_error(), "gf_select") == NULL);
    gf_tensor_release(y);
    gf_tensor *out = NULL;
    gf_function_def f2 = {"SilentForward", failing_fwd, failing_bwd, false, NULL};
    fail_and_read_an_unrelated_call();
    CHECK_ERR(gf_function_apply(&f2, &x, 1, &out, 1), GF_ERR_INVALID, "SilentForward: forward",
              "without a message");
    CHECK(strstr(gf_last_error(), "gf_select") == NULL);
    /* with gf_set_error: that status and that message */
    gf_function_def f3 = {"ReasonedFunction", reasoned_fwd, reasoned_bwd, false, NULL};
    fail_and_read_an_unrelated_call();
    CHECK_ERR(gf_function_apply(&f3, &x, 1, &out, 1), GF_ERR_SHAPE,
              "ReasonedFunction: forward: forward wants 2 dims");
    CHECK(out == NULL);
    gf_function_def f4 = {"ReasonedBackward", shape_fwd, reasoned_bwd, false, NULL};
    y = apply1(&f4, &x, 1);
    fail_and_read_an_unrelated_call();
    CHECK_ERR(gf_backward(y, NULL, NULL), GF_ERR_UNSUPPORTED,
              "ReasonedBackward: backward: no gradient for input 0 yet");
    CHECK(gf_tensor_grad(x) == NULL);
    /* through gf_grad the same */
    gf_tensor *r = NULL;
    fail_and_read_an_unrelated_call();
    CHECK_ERR(gf_grad(&y, 1, NULL, &x, 1, &r, NULL), GF_ERR_UNSUPPORTED,
              "ReasonedBackward: backward: no gradient for input 0 yet");
    CHECK(r == NULL);
    gf_tensor_release(y);
    /* a graft call that failed inside the backward: its message */
    gf_function_def f5 = {"InnerFailure", shape_fwd, inner_failure_bwd, false, NULL};
    y = apply1(&f5, &x, 1);
    fail_and_read_an_unrelated_call();
    CHECK_ERR(gf_backward(y, NULL, NULL), GF_ERR_INDEX, "InnerFailure: backward", "dim 7");
    gf_tensor_release(y);
    /* gf_set_error itself */
    CHECK_ERR(gf_set_error(GF_ERR_PLUGIN, "%s", "mine"), GF_ERR_PLUGIN, "mine");
    CHECK_ERR(gf_set_error(GF_OK, "not a failure"), GF_ERR_INVALID, "gf_set_error", "not a failure");
    gf_tensor_release(x);
}

static gf_tensor *silent_null_fn(gf_tensor *const *in, int n, void *user) { return NULL; }
static gf_tensor *reasoned_null_fn(gf_tensor *const *in, int n, void *user) {
    gf_set_error(GF_ERR_DTYPE, "wants f64 inputs");
    return NULL;
}

/* A new integer tensor: the only reference to it is the one returned. */
static gf_tensor *int_output_fn(gf_tensor *const *in, int n, void *user) {
    return gf_to_dtype(in[0], GF_I64);
}

/* The dtype named in the message is read before the output is released
 * (the function's output may be its only reference). */
static void rule23_gradcheck_rejects_an_integer_output(void) {
    gf_tensor *x = ag_leaf(DV(1, 2), 2);
    CHECK_ERR(gf_gradcheck(int_output_fn, &x, 1, NULL, NULL), GF_ERR_DTYPE,
              "gf_gradcheck: the function's output is i64", "floating point", "gf_to_dtype");
    CHECK_ERR(gf_gradgradcheck(int_output_fn, &x, 1, NULL, NULL), GF_ERR_DTYPE,
              "gf_gradgradcheck: the function's output is i64", "floating point");
    gf_tensor_release(x);
}

static void rule23_gradcheck_function_errors_are_its_own(void) {
    gf_tensor *x = ag_leaf(DV(1, 2), 2);
    fail_and_read_an_unrelated_call();
    CHECK_ERR(gf_gradcheck(silent_null_fn, &x, 1, NULL, NULL), GF_ERR_INVALID,
              "returned NULL without recording an error");
    CHECK(strstr(gf_last_error(), "gf_select") == NULL);
    fail_and_read_an_unrelated_call();
    CHECK_ERR(gf_gradcheck(reasoned_null_fn, &x, 1, NULL, NULL), GF_ERR_DTYPE,
              "gradcheck: the function: wants f64 inputs");
    gf_tensor_release(x);
}

/* ------------------------------------------------------------ non-differentiable outputs */
typedef struct two_out_user {
    double g1_seen[4];
    int n_out_seen;
} two_out_user;

/* out0 = 2x; out1 = floor(x), marked non-differentiable. */
static gf_status two_fwd(gf_function_ctx *ctx, gf_tensor *const *in, int n_in, gf_tensor **out,
                         int n_out, void *user) {
    out[0] = gf_mul_scalar(in[0], 2.0);
    out[1] = gf_floor(in[0]);
    if (!out[0] || !out[1]) return gf_last_status();
    return gf_ctx_mark_non_differentiable(ctx, out[1]);
}
static gf_status two_bwd(gf_function_ctx *ctx, gf_tensor *const *go, int n_out, gf_tensor **gi,
                         int n_in, void *user) {
    two_out_user *u = user;
    u->n_out_seen = n_out;
    if (n_out > 1 && go[1]) ag_read(go[1], u->g1_seen, 4);
    gf_scope_begin();
    gi[0] = gf_scope_keep(gf_mul_scalar(go[0], 2.0));
    gf_scope_end();
    return gi[0] ? GF_OK : gf_last_status();
}

static void rule20_mark_non_differentiable(void) {
    two_out_user u = {{9, 9, 9, 9}, 0};
    gf_function_def def = {"TwoOutputs", two_fwd, two_bwd, false, &u};
    gf_tensor *x = ag_leaf(DV(1.5, 2.5), 2);
    gf_tensor *out[2] = {NULL, NULL};
    CHECK_OK(gf_function_apply(&def, &x, 1, out, 2));
    CHECK(out[0] && gf_tensor_requires_grad(out[0]));
    CHECK(out[1] && !gf_tensor_requires_grad(out[1]));
    CHECK_VALS(out[1], DV(1, 2), 2, 0);
    CHECK_OK(ag_backward_ones(out[0], -1, false));
    CHECK(u.n_out_seen == 2);
    CHECK_CLOSE(u.g1_seen[0], 0, 0); /* the missing gradient comes as zeros */
    CHECK_CLOSE(u.g1_seen[1], 0, 0);
    CHECK_GRAD(x, DV(2, 2), 2, 0);
    gf_tensor_release(out[1]);
    gf_tensor_release(out[0]);
    gf_tensor_release(x);
}

/* ------------------------------------------------------------ mark_dirty */
typedef struct dirty_user {
    bool return_it; /* false: forget to return the dirty input */
} dirty_user;

/* Doubles input 0 in place and returns it. */
static gf_status dirty_fwd(gf_function_ctx *ctx, gf_tensor *const *in, int n_in, gf_tensor **out,
                           int n_out, void *user) {
    dirty_user *u = user;
    gf_status s = gf_mul_scalar_(in[0], 2.0);
    if (s != GF_OK) return s;
    if ((s = gf_ctx_mark_dirty(ctx, in[0])) != GF_OK) return s;
    out[0] = u->return_it ? gf_tensor_retain(in[0]) : gf_clone(in[0]);
    return out[0] ? GF_OK : gf_last_status();
}
static gf_status dirty_bwd(gf_function_ctx *ctx, gf_tensor *const *go, int n_out, gf_tensor **gi,
                           int n_in, void *user) {
    gf_scope_begin();
    gi[0] = gf_scope_keep(gf_mul_scalar(go[0], 2.0));
    gf_scope_end();
    return gi[0] ? GF_OK : gf_last_status();
}

static void rule20_mark_dirty(void) {
    dirty_user u = {true};
    gf_function_def def = {"DoubleInPlace", dirty_fwd, dirty_bwd, false, &u};
    gf_tensor *x = ag_leaf(DV(1, 2), 2);
    gf_tensor *a = gf_mul_scalar(x, 3.0); /* a non-leaf: may be modified */
    uint64_t v0 = gf_tensor_version(a);
    gf_tensor *y = apply1(&def, &a, 1);
    CHECK(y != NULL);
    CHECK(gf_tensor_version(a) > v0);
    CHECK_VALS(a, DV(6, 12), 2, 0);
    CHECK(y && gf_tensor_shares_storage(y, a));
    const char *name = gf_tensor_grad_fn_name(a);
    CHECK_MSG(name && strcmp(name, "DoubleInPlace") == 0, "a's grad_fn is %s", name ? name : "(none)");
    gf_tensor *go = ag_vec(DV(1, 10), 2);
    CHECK_OK(gf_backward(a, go, NULL));
    CHECK_GRAD(x, DV(6, 60), 2, 0);
    gf_tensor_release(go);
    gf_tensor_release(y);
    gf_tensor_release(a);

    /* A leaf that requires grad may not be modified in place. */
    gf_tensor *yl = NULL;
    gf_status s = gf_function_apply(&def, &x, 1, &yl, 1);
    CHECK_ERR(s, GF_ERR_AUTOGRAD, "DoubleInPlace", "leaf");
    CHECK(yl == NULL);
    /* A dirty input must be returned. */
    u.return_it = false;
    gf_tensor *b = gf_mul_scalar(x, 1.0);
    s = gf_function_apply(&def, &b, 1, &yl, 1);
    CHECK_ERR(s, GF_ERR_AUTOGRAD, "DoubleInPlace", "output");
    gf_tensor_release(b);
    gf_tensor_release(x);
}

/* ------------------------------------------------------------ once_differentiable */
static void rule20_once_differentiable_double_backward_is_error(void) {
    cube_user u = {0};
    gf_function_def def = cube_def(&u);
    def.name = "OnceCube";
    def.once_differentiable = true;
    gf_tensor *x = ag_leaf(DV(1, 2), 2);
    gf_tensor *y = apply1(&def, &x, 1);
    /* First order works, also with create_graph. */
    gf_tensor *g = y ? ag_grad1(y, x, NULL, true) : NULL;
    CHECK_VALS(g, DV(3, 12), 2, 1e-12);
    CHECK(u.bwd_grad_enabled == 0); /* run without grad even under create_graph */
    /* Differentiating that gradient again goes through the function's backward. */
    if (g && gf_tensor_requires_grad(g)) {
        gf_tensor *ones = gf_ones_like(g);
        gf_tensor *h = NULL;
        CHECK_ERR(gf_grad(&g, 1, &ones, &x, 1, &h, NULL), GF_ERR_AUTOGRAD, "OnceCube", "once");
        CHECK(h == NULL);
        gf_tensor_release(ones);
    } else {
        CHECK_MSG(0, "the create_graph gradient through a once_differentiable function should "
                  "require grad (and fail when differentiated)");
    }
    /* Plain backward is fine. */
    gf_tensor_release(g);
    gf_tensor_release(y);
    y = apply1(&def, &x, 1);
    CHECK_OK(ag_backward_ones(y, -1, false));
    CHECK_GRAD(x, DV(3, 12), 2, 1e-12);
    gf_tensor_release(y);
    gf_tensor_release(x);
}

/* The node that fails on double backward outlives the function's own node
 * (the forward outputs): its name must too. The name is also graft's copy,
 * not the caller's string. */
static void rule20_once_differentiable_error_after_the_outputs_are_released(void) {
    cube_user u = {0};
    gf_function_def def = cube_def(&u);
    char name[32];
    snprintf(name, sizeof name, "OnceCube%d", 7);
    def.name = name;
    def.once_differentiable = true;
    gf_tensor *x = ag_leaf(DV(1, 2), 2);
    gf_tensor *y = apply1(&def, &x, 1);
    gf_tensor *g = y ? ag_grad1(y, x, NULL, true) : NULL;
    CHECK_VALS(g, DV(3, 12), 2, 1e-12);
    gf_tensor_release(y); /* frees the function's node and its context */
    snprintf(name, sizeof name, "Overwritten");
    CHECK(g && gf_tensor_requires_grad(g));
    if (g) {
        const char *fn = gf_tensor_grad_fn_name(g);
        CHECK_CONTAINS(fn, "OnceCube7");
        gf_tensor *ones = gf_ones_like(g);
        gf_tensor *h = NULL;
        CHECK_ERR(gf_grad(&g, 1, &ones, &x, 1, &h, NULL), GF_ERR_AUTOGRAD, "OnceCube7",
                  "once_differentiable");
        CHECK(h == NULL);
        gf_tensor_release(ones);
    }
    gf_tensor_release(g);
    gf_tensor_release(x);
}

typedef struct check_user {
    cube_user cube;
    gf_function_def def;
} check_user;

static gf_tensor *check_fn(gf_tensor *const *in, int n, void *user) {
    check_user *c = user;
    gf_tensor *out = NULL;
    return gf_function_apply(&c->def, in, 1, &out, 1) == GF_OK ? out : NULL;
}

/* gradgradcheck releases fn's output before it differentiates the
 * gradient: the error names the function all the same. */
static void rule20_gradgradcheck_of_a_once_differentiable_function_names_it(void) {
    check_user c = {{0}, {0}};
    c.def = cube_def(&c.cube);
    c.def.name = "OnceCubeChecked";
    c.def.once_differentiable = true;
    gf_tensor *x = ag_leaf(DV(1.5, -0.5, 0.25), 3);
    CHECK_OK(gf_gradcheck(check_fn, &x, 1, &c, NULL));
    CHECK_ERR(gf_gradgradcheck(check_fn, &x, 1, &c, NULL), GF_ERR_AUTOGRAD, "OnceCubeChecked",
              "once_differentiable");
    gf_tensor_release(x);
}

/* ------------------------------------------------------------ saved tensors, ctx data */
static int g_data_released;
static void release_data(void *p) {
    g_data_released++;
    free(p);
}
static gf_status data_fwd(gf_function_ctx *ctx, gf_tensor *const *in, int n_in, gf_tensor **out,
                          int n_out, void *user) {
    double *k = malloc(sizeof *k);
    if (!k) return GF_ERR_OUT_OF_MEMORY;
    *k = 4.0;
    gf_ctx_set_data(ctx, k, release_data);
    out[0] = gf_mul(in[0], in[1]);
    if (!out[0]) return gf_last_status();
    return gf_ctx_save_for_backward(ctx, &in[1], 1); /* c, which needs no grad */
}
static gf_status data_bwd(gf_function_ctx *ctx, gf_tensor *const *go, int n_out, gf_tensor **gi,
                          int n_in, void *user) {
    const double *k = gf_ctx_data(ctx);
    gf_scope_begin();
    gf_tensor *c = gf_ctx_saved_tensor(ctx, 0);
    gf_tensor *g = c && k ? gf_scope_keep(gf_mul_scalar(gf_mul(go[0], c), *k / 4.0)) : NULL;
    gf_scope_end();
    if (!g) return gf_last_status();
    gi[0] = g;
    return GF_OK;
}

static void rule20_saved_tensors_are_version_checked_and_data_released(void) {
    gf_function_def def = {"SavesC", data_fwd, data_bwd, false, NULL};
    gf_tensor *x = ag_leaf(DV(1, 2), 2);
    gf_tensor *c = ag_vec(DV(3, 4), 2);
    gf_tensor *in[2] = {x, c};
    g_data_released = 0;
    gf_tensor *y = apply1(&def, in, 2);
    CHECK_OK(ag_backward_ones(y, -1, false));
    CHECK_GRAD(x, DV(3, 4), 2, 0);
    CHECK(g_data_released == 0);
    gf_tensor_release(y); /* frees the node, and with it the data */
    CHECK(g_data_released == 1);

    y = apply1(&def, in, 2);
    CHECK_OK(gf_mul_scalar_(c, 2.0)); /* c needs no grad: allowed, but it was saved */
    CHECK_ERR(ag_backward_ones(y, -1, false), GF_ERR_AUTOGRAD, "SavesC", "in-place");
    gf_tensor_release(y);
    CHECK(g_data_released == 2);
    /* Outside forward, saving is an error. */
    gf_tensor_release(c);
    gf_tensor_release(x);
}

/* ------------------------------------------------------------ the header's plain style */
/* A backward written as the header documents it: it owns every reference
 * it gets, releases its intermediates, and returns new references. */
static gf_status plain_bwd(gf_function_ctx *ctx, gf_tensor *const *go, int n_out, gf_tensor **gi,
                           int n_in, void *user) {
    gf_tensor *x = gf_ctx_saved_tensor(ctx, 0);
    gf_tensor *x2 = x ? gf_mul(x, x) : NULL;
    gf_tensor *d = x2 ? gf_mul_scalar(x2, 3.0) : NULL;
    gf_tensor *g = d ? gf_mul(go[0], d) : NULL;
    gf_tensor_release(d);
    gf_tensor_release(x2);
    gf_tensor_release(x);
    if (!g) return gf_last_status();
    gi[0] = g;
    return GF_OK;
}

static int plain_style_child(void) {
    cube_user u = {0};
    gf_function_def def = {"PlainCube", cube_fwd, plain_bwd, false, &u};
    gf_tensor *x = ag_leaf(DV(1, 2), 2);
    gf_tensor *y = apply1(&def, &x, 1);
    gf_status s = y ? ag_backward_ones(y, -1, false) : GF_ERR_INVALID;
    double g[2] = {0, 0};
    gf_tensor *gx = gf_tensor_grad(x);
    ag_read(gx, g, 2);
    gf_tensor_release(gx);
    gf_tensor_release(y);
    gf_tensor_release(x);
    int ok = s == GF_OK && g[0] == 3.0 && g[1] == 12.0 && gf_shutdown() == GF_OK;
    return ok ? 0 : 1;
}

static void rule20_backward_written_with_plain_ownership(void) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) _exit(plain_style_child());
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "a backward that releases its intermediates and returns new references %s",
              WIFSIGNALED(status) ? "crashed" : "gave a wrong result or left tensors alive");
}

/* ------------------------------------------------------------ rule 23 */
static void rule23_gradcheck_fails_for_a_wrong_backward(void) {
    check_user c = {{0}, {0}};
    c.def = cube_def(&c.cube);
    gf_tensor *x = ag_leaf(DV(1.5, -0.5, 0.25), 3);
    CHECK_OK(gf_gradcheck(check_fn, &x, 1, &c, NULL));
    CHECK_OK(gf_gradgradcheck(check_fn, &x, 1, &c, NULL));

    c.cube.wrong_derivative = true; /* 2 g instead of 3 x^2 g */
    gf_status s = gf_gradcheck(check_fn, &x, 1, &c, NULL);
    CHECK_ERR(s, GF_ERR_AUTOGRAD, "gf_gradcheck", "input 0", "element 0", "numerical", "analytical",
              "6.7" /* the numerical 6.75 */);
    c.cube.wrong_derivative = false;

    /* Right first derivative, but a backward that is not differentiable in x. */
    c.cube.detach_in_backward = true;
    CHECK_OK(gf_gradcheck(check_fn, &x, 1, &c, NULL));
    CHECK_ERR(gf_gradgradcheck(check_fn, &x, 1, &c, NULL), GF_ERR_AUTOGRAD, "input 0");
    CHECK(gf_tensor_grad(x) == NULL); /* the checks leave .grad alone */
    gf_tensor_release(x);
}

int main(void) {
    RUN(rule20_forward_and_backward_callbacks);
    RUN(rule20_double_backward_through_custom_backward);
    RUN(rule20_needs_input_grad_and_non_tensor_slots);
    RUN(rule20_backward_gradient_for_a_non_tensor_input_is_error);
    RUN(rule20_returning_none_for_an_input_is_fine);
    RUN(rule20_backward_wrong_shape_names_the_function);
    RUN(rule20_failing_callbacks_are_errors_naming_the_function);
    RUN(rule20_callback_errors_are_their_own_never_an_older_one);
    RUN(rule23_gradcheck_function_errors_are_its_own);
    RUN(rule23_gradcheck_rejects_an_integer_output);
    RUN(rule20_mark_non_differentiable);
    RUN(rule20_mark_dirty);
    RUN(rule20_once_differentiable_double_backward_is_error);
    RUN(rule20_once_differentiable_error_after_the_outputs_are_released);
    RUN(rule20_gradgradcheck_of_a_once_differentiable_function_names_it);
    RUN(rule20_saved_tensors_are_version_checked_and_data_released);
    RUN(rule20_backward_written_with_plain_ownership);
    RUN(rule23_gradcheck_fails_for_a_wrong_backward);
    return ag_finish();
}
