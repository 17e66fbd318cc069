/* SPDX-License-Identifier: BSD-3-Clause */
/* test_rules_anomaly.c — rule 22: anomaly mode records where each node was
 * created and reports it on a backward error; with it on, a NaN gradient is
 * an error naming the node. */
#include <pthread.h>

#include "test_rules_util.h"

static void *read_anomaly(void *arg) {
    *(int *)arg = gf_is_anomaly_enabled();
    return NULL;
}

static void rule22_anomaly_flag_is_process_wide(void) {
    CHECK(!gf_is_anomaly_enabled());
    gf_set_anomaly_enabled(true);
    CHECK(gf_is_anomaly_enabled());
    int seen = -1;
    pthread_t th;
    CHECK(pthread_create(&th, NULL, read_anomaly, &seen) == 0);
    pthread_join(th, NULL);
    CHECK(seen == 1);
    gf_set_anomaly_enabled(false);
    CHECK(!gf_is_anomaly_enabled());
}

static void rule22_backward_error_reports_where_the_node_was_created(void) {
    gf_set_anomaly_enabled(true);
    gf_tensor *x = ag_leaf(DV(1, 2), 2);
    gf_tensor *c = ag_vec(DV(3, 4), 2);
    gf_tensor *y = gf_mul(x, c); /* MulBackward, created by gf_mul */
    CHECK_OK(gf_mul_scalar_(c, 2.0)); /* c was saved: backward will fail */
    gf_status s = ag_backward_ones(y, -1, false);
    /* The error itself, then what created the failing node. */
    CHECK_ERR(s, GF_ERR_AUTOGRAD, "in-place", "MulBackward", "anomaly", "gf_mul");
    gf_tensor_release(y);
    gf_set_anomaly_enabled(false);

    /* A node created with anomaly mode off carries no creation record. */
    gf_tensor_release(c);
    c = ag_vec(DV(3, 4), 2);
    y = gf_mul(x, c);
    CHECK_OK(gf_mul_scalar_(c, 2.0));
    s = ag_backward_ones(y, -1, false);
    CHECK(s == GF_ERR_AUTOGRAD);
    CHECK_MSG(strstr(gf_last_error(), "gf_mul+") == NULL && strstr(gf_last_error(), "anomaly") == NULL,
              "no creation trace expected: %s", gf_last_error());
    gf_tensor_release(y);
    gf_tensor_release(c);
    gf_tensor_release(x);
}

static void rule22_nan_gradient_of_a_builtin_node(void) {
    /* y = x * inf with a zero grad_output: dy/dx = 0 * inf = NaN. */
    gf_tensor *go = ag_vec(DV(0), 1);
    for (int on = 0; on < 2; on++) {
        gf_set_anomaly_enabled(on);
        gf_tensor *x = ag_leaf(DV(1), 1);
        gf_tensor *c = ag_vec(DV(INFINITY), 1);
        gf_tensor *y = gf_mul(x, c);
        gf_status s = gf_backward(y, go, NULL);
        if (on) {
            CHECK_ERR(s, GF_ERR_AUTOGRAD, "NaN", "MulBackward");
            CHECK(gf_tensor_grad(x) == NULL);
        } else {
            CHECK_OK(s); /* without anomaly mode NaN simply flows */
            CHECK_GRAD(x, DV(NAN), 1, 0);
        }
        gf_tensor_release(y);
        gf_tensor_release(c);
        gf_tensor_release(x);
    }
    gf_set_anomaly_enabled(false);
    gf_tensor_release(go);
}

static gf_status ident_fwd(gf_function_ctx *ctx, gf_tensor *const *in, int n_in, gf_tensor **out,
                           int n_out, void *user) {
    out[0] = gf_mul_scalar(in[0], 1.0);
    return out[0] ? GF_OK : gf_last_status();
}
static gf_status nan_bwd(gf_function_ctx *ctx, gf_tensor *const *go, int n_out, gf_tensor **gi,
                         int n_in, void *user) {
    gf_scope_begin();
    gf_tensor *g = gf_scope_keep(gf_mul_scalar(go[0], NAN));
    gf_scope_end();
    if (!g) return gf_last_status();
    gi[0] = g;
    return GF_OK;
}

static void rule22_custom_backward_returning_nan(void) {
    gf_function_def def = {"NaNFunction", ident_fwd, nan_bwd, false, NULL};
    gf_set_anomaly_enabled(true);
    gf_tensor *x = ag_leaf(DV(1, 2), 2);
    gf_tensor *y = NULL;
    CHECK_OK(gf_function_apply(&def, &x, 1, &y, 1));
    gf_status s = ag_backward_ones(y, -1, false);
    CHECK_ERR(s, GF_ERR_AUTOGRAD, "NaNFunction", "NaN", "gf_function_apply");
    CHECK(gf_tensor_grad(x) == NULL);
    gf_tensor_release(y);
    /* The same function with anomaly mode off: NaN reaches .grad. */
    gf_set_anomaly_enabled(false);
    CHECK_OK(gf_function_apply(&def, &x, 1, &y, 1));
    CHECK_OK(ag_backward_ones(y, -1, false));
    CHECK_GRAD(x, DV(NAN, NAN), 2, 0);
    gf_tensor_release(y);
    gf_tensor_release(x);
}

int main(void) {
    RUN(rule22_anomaly_flag_is_process_wide);
    RUN(rule22_backward_error_reports_where_the_node_was_created);
    RUN(rule22_nan_gradient_of_a_builtin_node);
    RUN(rule22_custom_backward_returning_nan);
    return ag_finish();
}
