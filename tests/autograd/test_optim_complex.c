/* SPDX-License-Identifier: BSD-3-Clause */
/* test_optim_complex.c — every optimiser on a complex parameter against
 * torch.optim's trajectory (tools/expected/gen_optim_complex.py): the real
 * and imaginary parts are separate coordinates, as PyTorch's view_as_real
 * updates make them; the state stays complex and round-trips through a
 * state dict. */
#include <graft.h>
#include <math.h>
#include <string.h>

#include "check.h"
#include "optim_complex_expected.h"

static gf_device *dev;

/* sum(|z - t|^2) + sum(|z|^4), backward into z.grad. */
static gf_status loss_backward(gf_tensor *z, gf_tensor *t) {
    gf_scope_begin();
    gf_tensor *d = gf_abs(gf_sub(z, t));
    gf_tensor *a = gf_abs(z);
    gf_tensor *l = gf_add(gf_sum(gf_square(d), NULL, 0, false),
                          gf_sum(gf_pow_scalar(a, 4.0), NULL, 0, false));
    gf_status s = l ? gf_backward(l, NULL, NULL) : gf_last_status();
    gf_scope_end();
    return s;
}

static gf_optimizer *make(const char *name, gf_tensor *z) {
    if (!strcmp(name, "sgd")) {
        gf_sgd_opts o = {.lr = 0.05, .momentum = 0.9, .weight_decay = 0.01};
        return gf_sgd_create(&z, 1, &o);
    }
    if (!strcmp(name, "adam") || !strcmp(name, "adamw")) {
        gf_adam_opts o = GF_ADAM_OPTS_DEFAULT;
        gf_adam_opts w = GF_ADAMW_OPTS_DEFAULT;
        if (name[4]) o = w;
        else o.weight_decay = 0.01;
        o.lr = 0.1;
        return gf_adam_create(&z, 1, &o);
    }
    if (!strcmp(name, "rmsprop")) {
        gf_rmsprop_opts o = GF_RMSPROP_OPTS_DEFAULT;
        o.lr = 0.05, o.momentum = 0.5, o.centered = true;
        return gf_rmsprop_create(&z, 1, &o);
    }
    if (!strcmp(name, "adagrad")) {
        gf_adagrad_opts o = GF_ADAGRAD_OPTS_DEFAULT;
        o.lr = 0.3;
        return gf_adagrad_create(&z, 1, &o);
    }
    if (!strcmp(name, "adadelta")) {
        gf_adadelta_opts o = GF_ADADELTA_OPTS_DEFAULT;
        o.lr = 1.0;
        return gf_adadelta_create(&z, 1, &o);
    }
    if (!strcmp(name, "nadam")) {
        gf_nadam_opts o = GF_NADAM_OPTS_DEFAULT;
        o.lr = 0.1;
        return gf_nadam_create(&z, 1, &o);
    }
    gf_radam_opts o = GF_RADAM_OPTS_DEFAULT;
    o.lr = 0.1;
    return gf_radam_create(&z, 1, &o);
}

static void check_z(const char *what, int step, const gf_tensor *z, const double *want) {
    for (int64_t k = 0; k < 3; k++) {
        double re = NAN, im = NAN;
        CHECK(gf_tensor_get_complex(z, (const int64_t[]){k}, &re, &im) == GF_OK);
        CHECK_MSG(check_close_(re, want[2 * k], 1e-12, 1e-12) &&
                      check_close_(im, want[2 * k + 1], 1e-12, 1e-12),
                  "%s step %d [%lld]: %.17g%+.17gi, torch %.17g%+.17gi", what, step + 1,
                  (long long)k, re, im, want[2 * k], want[2 * k + 1]);
    }
}

static void test_against_torch(void) {
    int64_t n = 3;
    for (size_t c = 0; c < sizeof oc_cases / sizeof oc_cases[0]; c++) {
        const oc_case *cs = &oc_cases[c];
        gf_tensor *z = gf_from_data(oc_z0, &n, 1, GF_C128, dev);
        gf_tensor *t = gf_from_data(oc_t, &n, 1, GF_C128, dev);
        CHECK_MSG(z && t, "%s", gf_last_error());
        if (!z || !t) return;
        gf_tensor_set_requires_grad(z, true);
        gf_optimizer *opt = make(cs->name, z);
        CHECK_MSG(opt != NULL, "%s: %s", cs->name, gf_last_error());
        for (int s = 0; opt && s < OC_STEPS; s++) {
            CHECK(gf_optimizer_zero_grad(opt) == GF_OK);
            CHECK_MSG(loss_backward(z, t) == GF_OK, "%s", gf_last_error());
            CHECK_MSG(gf_optimizer_step(opt) == GF_OK, "%s: %s", cs->name, gf_last_error());
            check_z(cs->name, s, z, cs->z[s]);
            if (s == 1) {
                /* the state is complex, and a state dict taken now and
                 * loaded into a fresh optimiser continues the trajectory */
                gf_tensor_dict *d = gf_optimizer_state_dict(opt, "");
                CHECK_MSG(d != NULL, "%s", gf_last_error());
                for (int i = 0; d && i < gf_tensor_dict_size(d); i++) {
                    gf_tensor *e = gf_tensor_dict_at(d, i);
                    if (gf_tensor_numel(e) == 3)
                        CHECK_MSG(gf_tensor_dtype(e) == GF_C128, "%s: state %s is %s", cs->name,
                                  gf_tensor_dict_name(d, i), gf_dtype_name(gf_tensor_dtype(e)));
                }
                gf_optimizer *fresh = make(cs->name, z);
                CHECK_MSG(fresh && gf_optimizer_load_state_dict(fresh, d, "") == GF_OK, "%s: %s",
                          cs->name, gf_last_error());
                gf_tensor_dict_destroy(d);
                gf_optimizer_destroy(opt);
                opt = fresh;
            }
        }
        gf_optimizer_destroy(opt);
        gf_tensor_set_grad(z, NULL);
        gf_tensor_release(z);
        gf_tensor_release(t);
    }
}

int main(void) {
    /* a device that stores complex (the reference or cpu_onednn plugin) */
    for (int i = 0; i < gf_device_count() && !dev; i++) {
        gf_device_info info;
        gf_device *d = gf_device_at(i);
        if (d && gf_device_get_info(d, &info) == GF_OK && ((info.dtypes >> GF_C128) & 1u))
            dev = d;
    }
    if (!dev) {
        fprintf(stderr, "no loaded device stores c128: load the reference or cpu_onednn plugin\n");
        return 1;
    }
    RUN(test_against_torch);
    return CHECK_REPORT();
}
