/* SPDX-License-Identifier: BSD-3-Clause */
/* layers_shape.c — the stateless shape layers as modules (graft/module.h):
 * nn.PixelShuffle, nn.PixelUnshuffle, nn.Upsample, nn.Flatten(start_dim,
 * end_dim), nn.Unflatten; and nn.ModuleList. Each forward is one public op
 * (gf_pixel_shuffle, gf_interpolate, gf_flatten_dims, gf_unflatten). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "module_internal.h"

static void *new_module(size_t size, const gf_module_class *cls, const char *op) {
    gf_module *m = calloc(1, size);
    if (!m) {
        gf__error(GF_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
        return NULL;
    }
    if (gf_module_init(m, cls) != GF_OK) {
        free(m);
        return NULL;
    }
    return m;
}

/* ------------------------------------------------------------ PixelShuffle */
typedef struct shuffle_mod {
    gf_module base;
    int64_t factor;
} shuffle_mod;

static gf_tensor *shuffle_forward(gf_module *m, gf_tensor *const *in, int n) {
    if (!gf__mod_one_input("PixelShuffle", n)) return NULL;
    return gf_pixel_shuffle(in[0], ((shuffle_mod *)m)->factor);
}
static gf_tensor *unshuffle_forward(gf_module *m, gf_tensor *const *in, int n) {
    if (!gf__mod_one_input("PixelUnshuffle", n)) return NULL;
    return gf_pixel_unshuffle(in[0], ((shuffle_mod *)m)->factor);
}
static const gf_module_class shuffle_class = {"PixelShuffle", shuffle_forward, NULL};
static const gf_module_class unshuffle_class = {"PixelUnshuffle", unshuffle_forward, NULL};

static gf_module *shuffle_new(const gf_module_class *cls, int64_t factor, const char *op,
                              const char *what) {
    if (factor < 1) {
        gf__error(GF_ERR_INVALID, "%s: %s %lld must be >= 1", op, what, (long long)factor);
        return NULL;
    }
    shuffle_mod *s = new_module(sizeof *s, cls, op);
    if (s) s->factor = factor;
    return s ? &s->base : NULL;
}
gf_module *gf_nn_pixel_shuffle(int64_t upscale_factor) {
    return shuffle_new(&shuffle_class, upscale_factor, "gf_nn_pixel_shuffle", "upscale_factor");
}
gf_module *gf_nn_pixel_unshuffle(int64_t downscale_factor) {
    return shuffle_new(&unshuffle_class, downscale_factor, "gf_nn_pixel_unshuffle",
                       "downscale_factor");
}

/* ------------------------------------------------------------ Upsample */
typedef struct upsample_mod {
    gf_module base;
    gf_interpolate_opts opts;
} upsample_mod;

static gf_tensor *upsample_forward(gf_module *m, gf_tensor *const *in, int n) {
    if (!gf__mod_one_input("Upsample", n)) return NULL;
    return gf_interpolate(in[0], &((upsample_mod *)m)->opts);
}
static const gf_module_class upsample_class = {"Upsample", upsample_forward, NULL};

gf_module *gf_nn_upsample(const gf_interpolate_opts *opts) {
    const char *op = "gf_nn_upsample";
    if (!opts) {
        gf__error(GF_ERR_INVALID, "%s: opts is NULL; give the mode and either size or "
                  "scale_factor (gf_interpolate_opts, graft/layers.h)", op);
        return NULL;
    }
    gf_interp_mode mode = opts->mode;
    if (mode != GF_INTERP_NEAREST && mode != GF_INTERP_NEAREST_EXACT && mode != GF_INTERP_LINEAR &&
        mode != GF_INTERP_BILINEAR && mode != GF_INTERP_AREA) {
        gf__error(GF_ERR_INVALID, "%s: unknown mode %d; use GF_INTERP_NEAREST, _NEAREST_EXACT, "
                  "_LINEAR, _BILINEAR or _AREA", op, (int)mode);
        return NULL;
    }
    bool size = opts->size[0] != 0 || opts->size[1] != 0;
    bool scale = opts->scale_factor[0] != 0 || opts->scale_factor[1] != 0;
    if (size == scale) {
        gf__error(GF_ERR_INVALID, "%s: give %s of size and scale_factor", op,
                  size ? "only one" : "one");
        return NULL;
    }
    if (opts->align_corners && mode != GF_INTERP_LINEAR && mode != GF_INTERP_BILINEAR) {
        gf__error(GF_ERR_INVALID, "%s: align_corners is for the linear and bilinear modes "
                  "only; leave it false with this mode", op);
        return NULL;
    }
    upsample_mod *u = new_module(sizeof *u, &upsample_class, op);
    if (u) u->opts = *opts;
    return u ? &u->base : NULL;
}

/* ------------------------------------------------------------ Flatten, Unflatten */
typedef struct flatten_mod {
    gf_module base;
    int start_dim, end_dim;
} flatten_mod;

static gf_tensor *flatten_forward(gf_module *m, gf_tensor *const *in, int n) {
    if (!gf__mod_one_input("Flatten", n)) return NULL;
    flatten_mod *f = (flatten_mod *)m;
    return gf_flatten_dims(in[0], f->start_dim, f->end_dim);
}
static const gf_module_class flatten_class = {"Flatten", flatten_forward, NULL};

gf_module *gf_nn_flatten_dims(int start_dim, int end_dim) {
    flatten_mod *f = new_module(sizeof *f, &flatten_class, "gf_nn_flatten_dims");
    if (f) f->start_dim = start_dim, f->end_dim = end_dim;
    return f ? &f->base : NULL;
}
gf_module *gf_nn_flatten(void) { return gf_nn_flatten_dims(1, -1); }

typedef struct unflatten_mod {
    gf_module base;
    int dim, n;
    int64_t sizes[GF_MAX_RANK];
} unflatten_mod;

static gf_tensor *unflatten_forward(gf_module *m, gf_tensor *const *in, int n) {
    if (!gf__mod_one_input("Unflatten", n)) return NULL;
    unflatten_mod *u = (unflatten_mod *)m;
    return gf_unflatten(in[0], u->dim, u->sizes, u->n);
}
static const gf_module_class unflatten_class = {"Unflatten", unflatten_forward, NULL};

gf_module *gf_nn_unflatten(int dim, const int64_t *sizes, int n) {
    const char *op = "gf_nn_unflatten";
    if (n < 1 || n > GF_MAX_RANK || !sizes) {
        gf__error(GF_ERR_INVALID, "%s: %d sizes%s; give 1 to %d sizes (one may be -1)", op, n,
                  !sizes ? " but the array is NULL" : "", GF_MAX_RANK);
        return NULL;
    }
    for (int i = 0; i < n; i++)
        if (sizes[i] < -1) {
            gf__error(GF_ERR_INVALID, "%s: size %d is %lld; sizes are >= 0, or -1 for one "
                      "inferred size", op, i, (long long)sizes[i]);
            return NULL;
        }
    unflatten_mod *u = new_module(sizeof *u, &unflatten_class, op);
    if (!u) return NULL;
    u->dim = dim, u->n = n;
    memcpy(u->sizes, sizes, (size_t)n * sizeof *sizes);
    return &u->base;
}

/* ------------------------------------------------------------ ModuleList */
static const gf_module_class list_class = {"ModuleList", NULL, NULL};

/* A ModuleList or a Sequential (PyTorch's Sequential also appends and
 * indexes); otherwise INVALID naming op. */
static bool is_list(const gf_module *m, const char *op) {
    const char *t = gf_module_type_name(m);
    if (m && m->state && (m->cls == &list_class || !strcmp(t, "Sequential"))) return true;
    gf__error(GF_ERR_INVALID, "%s: the module is %s, not a ModuleList (gf_nn_module_list) or "
              "Sequential", op, m && m->state ? t : "NULL");
    return false;
}

gf_module *gf_nn_module_list(gf_module *const *modules, int n) {
    const char *op = "gf_nn_module_list";
    if (n < 0 || (n > 0 && !modules)) {
        gf__error(GF_ERR_INVALID, "%s: %d modules%s", op, n,
                  n > 0 ? " but the array is NULL" : "; give n >= 0");
        return NULL;
    }
    gf_module *m = new_module(sizeof *m, &list_class, op);
    for (int i = 0; m && i < n; i++)
        if (gf_module_list_append(m, modules[i]) != GF_OK) {
            gf_module_release(m);
            m = NULL;
        }
    return m;
}

gf_status gf_module_list_append(gf_module *list, gf_module *child) {
    const char *op = "gf_module_list_append";
    if (!is_list(list, op)) return gf__status();
    char name[16];
    snprintf(name, sizeof name, "%d", gf_module_child_count(list));
    return gf_module_register_module(list, name, child);
}

int gf_module_list_len(const gf_module *list) {
    return is_list(list, "gf_module_list_len") ? gf_module_child_count(list) : -1;
}

gf_module *gf_module_list_get(const gf_module *list, int i) {
    const char *op = "gf_module_list_get";
    if (!is_list(list, op)) return NULL;
    int n = gf_module_child_count(list);
    if (i < -n || i >= n) {
        gf__error(GF_ERR_INDEX, "%s: index %d is out of range for %d modules (give -%d to %d)",
                  op, i, n, n, n - 1);
        return NULL;
    }
    return gf_module_child_at(list, i < 0 ? i + n : i);
}
