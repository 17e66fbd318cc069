/* SPDX-License-Identifier: BSD-3-Clause */
/* layers.c — layers as modules (graft/module.h), with PyTorch's names,
 * defaults and initialisation. Each is a gf_module with a class; its
 * parameters are looked up by name at each forward, so a parameter
 * registered again (tying, replacing) is what the layer uses. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "module_internal.h"

/* ------------------------------------------------------------ Linear */
static gf_tensor *linear_forward(gf_module *m, gf_tensor *const *in, int n) {
    if (!gf__mod_one_input("Linear", n)) return NULL;
    return gf_linear(in[0], gf__mod_own(m, "weight"), gf__mod_own(m, "bias"));
}
static const gf_module_class linear_class = {"Linear", linear_forward, NULL};

gf_module *gf_nn_linear(int64_t in_features, int64_t out_features, bool bias, gf_dtype dtype,
                        gf_device *dev) {
    const char *op = "gf_nn_linear";
    if (in_features < 0 || out_features < 0) {
        gf__error(GF_ERR_INVALID, "%s: in_features %lld and out_features %lld must be >= 0", op,
                  (long long)in_features, (long long)out_features);
        return NULL;
    }
    if (!gf_dtype_is_float(dtype)) {
        gf__error(GF_ERR_DTYPE, "%s: dtype %s; a Linear's parameters are floating-point", op,
                  gf_dtype_name(dtype));
        return NULL;
    }
    int saved = gf__scope_suspend();
    gf_module *m = calloc(1, sizeof *m);
    gf_tensor *w = NULL, *b = NULL;
    gf_status st = m ? gf_module_init(m, &linear_class)
                     : gf__error(GF_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    if (st != GF_OK) {
        free(m);
        m = NULL;
    }
    if (m) {
        w = gf_empty((const int64_t[]){out_features, in_features}, 2, dtype, dev);
        /* kaiming_uniform(a = sqrt(5)) = U(+-1/sqrt(fan_in)); zero fan: no values */
        double bound = in_features > 0 ? 1.0 / sqrt((double)in_features) : 0.0;
        st = !w ? gf__status()
           : in_features > 0 ? gf_init_kaiming_uniform_(w, sqrt(5.0), GF_FAN_IN,
                                                        GF_NONLIN_LEAKY_RELU)
                             : GF_OK;
        if (st == GF_OK) st = gf_module_register_parameter(m, "weight", w);
        if (st == GF_OK && bias) {
            b = gf_empty((const int64_t[]){out_features}, 1, dtype, dev);
            st = !b ? gf__status() : gf_init_uniform_(b, -bound, bound);
            if (st == GF_OK) st = gf_module_register_parameter(m, "bias", b);
        } else if (st == GF_OK) {
            st = gf_module_register_parameter(m, "bias", NULL);
        }
        if (st != GF_OK) {
            gf_module_release(m);
            m = NULL;
        }
    }
    gf_tensor_release(w);
    gf_tensor_release(b);
    gf__scope_resume(saved);
    return m;
}

/* ------------------------------------------------------------ Sequential */
static gf_tensor *sequential_forward(gf_module *m, gf_tensor *const *in, int n) {
    gf_tensor *x = NULL;
    int c = gf_module_child_count(m);
    if (c == 0) {
        if (!gf__mod_one_input("Sequential", n)) return NULL;
        return gf_tensor_retain(in[0]); /* an empty Sequential is the identity */
    }
    for (int i = 0; i < c; i++) {
        gf_tensor *y = i == 0 ? gf_module_forward(gf_module_child_at(m, i), in, n)
                              : gf_module_forward(gf_module_child_at(m, i), &x, 1);
        gf_tensor_release(x);
        x = y;
        if (!x) return NULL;
    }
    return x;
}
static const gf_module_class sequential_class = {"Sequential", sequential_forward, NULL};

gf_module *gf_nn_sequential(gf_module *const *modules, int n) {
    if (n < 0 || (n > 0 && !modules)) {
        gf__error(GF_ERR_INVALID, "gf_nn_sequential: %d modules%s", n,
                  n > 0 ? " but the array is NULL" : "; give n >= 0");
        return NULL;
    }
    gf_module *m = calloc(1, sizeof *m);
    if (!m) {
        gf__error(GF_ERR_OUT_OF_MEMORY, "gf_nn_sequential: out of host memory");
        return NULL;
    }
    if (gf_module_init(m, &sequential_class) != GF_OK) {
        free(m);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        char name[16];
        snprintf(name, sizeof name, "%d", i);
        if (gf_module_register_module(m, name, modules[i]) != GF_OK) {
            gf_module_release(m);
            return NULL;
        }
    }
    return m;
}

/* ------------------------------------------------------------ stateless */
static gf_tensor *relu_forward(gf_module *m, gf_tensor *const *in, int n) {
    (void)m;
    return gf__mod_one_input("ReLU", n) ? gf_relu(in[0]) : NULL;
}
static gf_tensor *tanh_forward(gf_module *m, gf_tensor *const *in, int n) {
    (void)m;
    return gf__mod_one_input("Tanh", n) ? gf_tanh(in[0]) : NULL;
}
static const gf_module_class relu_class = {"ReLU", relu_forward, NULL};
static const gf_module_class tanh_class = {"Tanh", tanh_forward, NULL};

static gf_module *stateless(const gf_module_class *cls) {
    gf_module *m = calloc(1, sizeof *m);
    if (!m) {
        gf__error(GF_ERR_OUT_OF_MEMORY, "gf_nn_%s: out of host memory", cls->name);
        return NULL;
    }
    if (gf_module_init(m, cls) != GF_OK) {
        free(m);
        return NULL;
    }
    return m;
}
gf_module *gf_nn_relu(void) { return stateless(&relu_class); }
gf_module *gf_nn_tanh(void) { return stateless(&tanh_class); }
