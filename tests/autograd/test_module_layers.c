/* SPDX-License-Identifier: BSD-3-Clause */
/* test_module_layers.c — Conv1d, ConvTranspose2d, GroupNorm and
 * InstanceNorm2d (training then eval) as modules load torch's state dicts
 * by name and give torch's outputs and running statistics
 * (tools/expected/gen_layers.py). */
#include <graft.h>
#include <math.h>
#include <string.h>

#include "autograd/layers_expected.h"
#include "autograd/test_rules_util.h"
#include "check.h"

static void load(gf_module *m, const ly_entry *e, int n) {
    gf_tensor_dict *sd = gf_module_state_dict(m);
    CHECK_MSG(gf_tensor_dict_size(sd) == n, "%s: %d keys, torch %d", gf_module_type_name(m),
              gf_tensor_dict_size(sd), n);
    for (int i = 0; i < n && i < gf_tensor_dict_size(sd); i++)
        CHECK(!strcmp(gf_tensor_dict_name(sd, i), e[i].name));
    gf_tensor_dict_destroy(sd);
    gf_tensor_dict *d = gf_tensor_dict_new();
    for (int i = 0; i < n; i++) {
        gf_tensor *f = gf_from_data(e[i].v, e[i].sizes, e[i].rank, GF_F64, NULL);
        gf_tensor *t = strstr(e[i].name, "num_batches") ? gf_to_dtype(f, GF_I64) : gf_tensor_retain(f);
        CHECK(t && gf_tensor_dict_set(d, e[i].name, t) == GF_OK);
        gf_tensor_release(f);
        gf_tensor_release(t);
    }
    CHECK_MSG(gf_module_load_state_dict(m, d, true, NULL) == GF_OK, "%s", gf_last_error());
    gf_tensor_dict_destroy(d);
}

static gf_tensor *input(const double *v, const int64_t *s) {
    int r = 0;
    while (r < 4 && s[r]) r++;
    return gf_from_data(v, s, r, GF_F64, NULL);
}

static void run(const char *what, gf_module *m, const ly_entry *e, int n, const double *xv,
                const int64_t *xs, const double *want, int64_t numel) {
    CHECK_MSG(m != NULL, "%s: %s", what, gf_last_error());
    if (!m) return;
    load(m, e, n);
    gf_tensor *x = input(xv, xs);
    CHECK(gf_module_train(m, false) == GF_OK);
    gf_tensor *y = gf_module_forward(m, &x, 1);
    ag_near(what, y, want, numel, 1e-10);
    gf_tensor_release(x);
    gf_tensor_release(y);
}

static void test_against_torch(void) {
    gf_conv1d_opts c1 = {.stride = 2, .padding = 1, .dilation = 1, .groups = 1};
    gf_module *conv1 = gf_nn_conv1d(3, 4, 3, &c1, true, GF_F64, NULL);
    run("Conv1d", conv1, ly_conv1d_state, LY_CONV1D_N, ly_conv1d_x, ly_conv1d_xs, ly_conv1d_y,
        ly_conv1d_numel);
    gf_conv_transpose2d_opts ct = {.stride = {2, 2}, .padding = {1, 1}, .output_padding = {1, 1},
                                   .dilation = {1, 1}, .groups = 1};
    gf_module *convt = gf_nn_conv_transpose2d(3, 2, (const int[]){3, 3}, &ct, true, GF_F64, NULL);
    run("ConvTranspose2d", convt, ly_convt_state, LY_CONVT_N, ly_convt_x, ly_convt_xs, ly_convt_y,
        ly_convt_numel);
    gf_module *gn = gf_nn_group_norm(2, 4, 1e-5, true, GF_F64, NULL);
    run("GroupNorm", gn, ly_gn_state, LY_GN_N, ly_gn_x, ly_gn_xs, ly_gn_y, ly_gn_numel);
    /* InstanceNorm2d: a training forward (the input's statistics, running
     * ones updated), then eval (the running ones) */
    gf_module *in = gf_nn_instance_norm2d(3, 1e-5, 0.1, true, true, GF_F64, NULL);
    load(in, ly_in_state, LY_IN_N);
    gf_tensor *x = input(ly_in_x, ly_in_xs);
    gf_tensor *yt = gf_module_forward(in, &x, 1);
    ag_near("InstanceNorm2d training", yt, ly_in_y_train, ly_in_numel, 1e-10);
    ag_near("running_mean", gf_module_get_buffer(in, "running_mean"), ly_in_running_mean, 3, 1e-10);
    CHECK(gf_module_train(in, false) == GF_OK);
    gf_tensor *ye = gf_module_forward(in, &x, 1);
    ag_near("InstanceNorm2d eval", ye, ly_in_y, ly_in_numel, 1e-10);
    /* errors */
    CHECK(gf_nn_group_norm(3, 4, 1e-5, true, GF_F64, NULL) == NULL);
    CHECK_CONTAINS(gf_last_error(), "divisible by 3 groups");
    CHECK(gf_nn_conv1d(3, 4, 0, NULL, true, GF_F64, NULL) == NULL);
    CHECK(gf_nn_conv_transpose2d(3, 4, NULL, NULL, true, GF_F64, NULL) == NULL);
    CHECK(gf_nn_instance_norm2d(0, 1e-5, 0.1, false, false, GF_F64, NULL) == NULL);
    gf_tensor *items[] = {x, yt, ye};
    for (size_t i = 0; i < sizeof items / sizeof items[0]; i++) gf_tensor_release(items[i]);
    gf_module *mods[] = {conv1, convt, gn, in};
    for (size_t i = 0; i < sizeof mods / sizeof mods[0]; i++) gf_module_release(mods[i]);
}

int main(void) {
    int missing = ag_device_check();
    if (missing) return missing;
    RUN(test_against_torch);
    return CHECK_REPORT();
}
