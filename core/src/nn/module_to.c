/* SPDX-License-Identifier: BSD-3-Clause */
/* module_to.c — gf_module_to (graft/module.h): PyTorch's module.to(device,
 * dtype). Every tensor of the tree is converted first, and only when all
 * conversions succeeded does each tensor take its new data (PyTorch's
 * param.data = new), so a failure leaves the module as it was and the
 * tensors keep their identity (an optimiser holding them sees the move). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "module_internal.h"

typedef struct to_pair {
    gf_tensor *t;   /* the module's tensor or a parameter's .grad (borrowed) */
    gf_tensor *new; /* its converted data (a reference), NULL when unchanged */
} to_pair;

typedef struct to_ctx {
    gf_device *dev; /* NULL: keep */
    gf_dtype dtype; /* GF_MODULE_KEEP_DTYPE: keep */
    to_pair *p;
    int n, cap;
} to_ctx;

/* Converts t once (a tied tensor or a shared buffer is visited again). */
static gf_status convert(to_ctx *c, gf_tensor *t) {
    for (int i = 0; i < c->n; i++)
        if (c->p[i].t == t) return GF_OK;
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 32;
        to_pair *np = realloc(c->p, (size_t)cap * sizeof *np);
        if (!np) return gf__error(GF_ERR_OUT_OF_MEMORY, "gf_module_to: out of host memory");
        c->p = np;
        c->cap = cap;
    }
    /* Integer and bool tensors (num_batches_tracked) keep their dtype, as
     * PyTorch casts floating-point and complex ones only. A complex tensor
     * to a real dtype fails (gf_to_dtype's rule: graft never drops an
     * imaginary part silently, where PyTorch warns and drops it). */
    gf_dtype t_dt = gf_tensor_dtype(t);
    gf_dtype dt = c->dtype != GF_MODULE_KEEP_DTYPE &&
                          (gf_dtype_is_float(t_dt) || gf_dtype_is_complex(t_dt))
                      ? c->dtype
                      : t_dt;
    gf_device *dev = c->dev ? c->dev : gf_tensor_device(t);
    gf_tensor *r = NULL;
    if (dt != gf_tensor_dtype(t) || dev != gf_tensor_device(t)) {
        gf_tensor *cast = gf_to_dtype(t, dt);
        r = cast ? gf_to_device(cast, dev) : NULL;
        gf_tensor_release(cast);
        if (!r) return gf__status();
    }
    c->p[c->n++] = (to_pair){t, r};
    return GF_OK;
}

static gf_status visit(const char *path, gf__mod_entry *e, void *ctx) {
    if (!e->t) return GF_OK;
    to_ctx *c = ctx;
    gf_status st = convert(c, e->t);
    /* PyTorch's module.to moves .grad too (the .grad slot keeps it alive). */
    gf_tensor *g = st == GF_OK && e->kind == GF__MOD_PARAM ? gf_tensor_grad(e->t) : NULL;
    gf_tensor_release(g);
    if (g) st = convert(c, g);
    if (st == GF_OK) return GF_OK;
    char why[512];
    snprintf(why, sizeof why, "%s", gf_last_error());
    return gf__error(st, "gf_module_to: converting %s%s '%s' failed (%s); the module is "
                     "unchanged", g ? "the gradient of " : "",
                     e->kind == GF__MOD_PARAM ? "parameter" : "buffer", path, why);
}

gf_status gf_module_to(gf_module *m, const char *device, gf_dtype dtype) {
    const char *op = "gf_module_to";
    if (!m || !m->state)
        return gf__error(GF_ERR_INVALID, "%s: the module is NULL (or was never initialised "
                         "with gf_module_init)", op);
    if (dtype != GF_MODULE_KEEP_DTYPE && !gf_dtype_is_float(dtype) && !gf_dtype_is_complex(dtype))
        return gf__error(GF_ERR_DTYPE, "%s: dtype %s: a module is converted to a floating-point "
                         "or complex dtype only (its integer buffers keep theirs); give GF_F32, "
                         "GF_F64, GF_F16, GF_BF16, GF_C64 or GF_C128, or GF_MODULE_KEEP_DTYPE "
                         "to move it only", op,
                         gf_dtype_size(dtype) ? gf_dtype_name(dtype) : "(unknown)");
    to_ctx c = {.dtype = dtype};
    if (device) {
        c.dev = gf_device_find(device);
        if (!c.dev) {
            char why[512];
            snprintf(why, sizeof why, "%s", gf_last_error());
            return gf__error(gf_last_status(), "%s: %s (graft-info lists the devices; NULL "
                             "keeps each tensor where it is); the module is unchanged", op, why);
        }
    }
    int saved = gf__scope_suspend();
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    gf_status st = gf__mod_walk(m, MASK_P | MASK_B, visit, &c);
    gf_grad_mode_set(prev);
    gf__scope_resume(saved);
    for (int i = 0; i < c.n; i++) {
        if (st == GF_OK && c.p[i].new) gf__tensor_set_data(c.p[i].t, c.p[i].new);
        gf_tensor_release(c.p[i].new);
    }
    free(c.p);
    return st;
}
