/* SPDX-License-Identifier: BSD-3-Clause */
/* layers_conv.c — convolution, normalisation, embedding, dropout and
 * pooling layers as modules (graft/module.h), with PyTorch's names,
 * defaults and initialisation. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../internal.h"
#include "module_internal.h"

/* A module whose class keeps options after the gf_module. */
typedef struct conv_mod {
    gf_module base;
    gf_conv2d_opts opts;
} conv_mod;
typedef struct bn_mod {
    gf_module base;
    double eps, momentum;
    bool track;
} bn_mod;
typedef struct ln_mod {
    gf_module base;
    int rank;
    double eps;
} ln_mod;
typedef struct drop_mod {
    gf_module base;
    double p;
} drop_mod;
typedef struct pool_mod {
    gf_module base;
    gf_pool2d_opts opts;
    int64_t out[2];
} pool_mod;

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

/* Registers a new tensor of sizes, filled by how (0 zeros, 1 ones, 2
 * uniform +-bound, 3 normal(0, 1), 4 kaiming_uniform a = sqrt(5)), as a
 * parameter or (param false) a buffer. */
static gf_status add_tensor(gf_module *m, const char *name, const int64_t *sizes, int rank,
                            gf_dtype dtype, gf_device *dev, int how, double bound, bool param) {
    gf_tensor *t = how == 0 ? gf_zeros(sizes, rank, dtype, dev) : gf_empty(sizes, rank, dtype, dev);
    if (!t) return gf__status();
    int64_t numel = gf_tensor_numel(t);
    gf_status st = how == 0   ? GF_OK
                 : how == 1   ? gf_init_ones_(t)
                 : how == 2   ? gf_init_uniform_(t, -bound, bound)
                 : how == 3   ? gf_init_normal_(t, 0.0, 1.0)
                 : numel == 0 ? GF_OK
                              : gf_init_kaiming_uniform_(t, sqrt(5.0), GF_FAN_IN,
                                                         GF_NONLIN_LEAKY_RELU);
    if (st == GF_OK)
        st = param ? gf_module_register_parameter(m, name, t)
                   : gf_module_register_buffer(m, name, t, true);
    gf_tensor_release(t);
    return st;
}

static gf_module *finish(gf_module *m, gf_status st, int saved) {
    gf__scope_resume(saved);
    if (st == GF_OK) return m;
    gf_module_release(m);
    return NULL;
}

static bool float_dtype(gf_dtype dtype, const char *op) {
    if (gf_dtype_is_float(dtype)) return true;
    gf__error(GF_ERR_DTYPE, "%s: dtype %s; the layer's parameters are floating-point", op,
              gf_dtype_name(dtype));
    return false;
}

/* ------------------------------------------------------------ Conv2d */
static gf_tensor *conv_forward(gf_module *m, gf_tensor *const *in, int n) {
    if (!gf__mod_one_input("Conv2d", n)) return NULL;
    return gf_conv2d(in[0], gf__mod_own(m, "weight"), gf__mod_own(m, "bias"), &((conv_mod *)m)->opts);
}
static const gf_module_class conv_class = {"Conv2d", conv_forward, NULL};

gf_module *gf_nn_conv2d(int64_t in_channels, int64_t out_channels, const int kernel[2],
                        const gf_conv2d_opts *opts, bool bias, gf_dtype dtype, gf_device *dev) {
    const char *op = "gf_nn_conv2d";
    gf_conv2d_opts o = opts ? *opts : (gf_conv2d_opts){{1, 1}, {0, 0}, {1, 1}, 1};
    int groups = o.groups > 0 ? o.groups : 1;
    if (!kernel || kernel[0] < 1 || kernel[1] < 1 || in_channels < 1 || out_channels < 1 ||
        in_channels % groups || out_channels % groups) {
        gf__error(GF_ERR_INVALID, "%s: in_channels %lld, out_channels %lld (both >= 1 and "
                  "divisible by groups %d) and a kernel of sizes >= 1 are needed", op,
                  (long long)in_channels, (long long)out_channels, groups);
        return NULL;
    }
    if (!float_dtype(dtype, op)) return NULL;
    int saved = gf__scope_suspend();
    conv_mod *c = new_module(sizeof *c, &conv_class, op);
    if (!c) return finish(NULL, gf__status(), saved);
    c->opts = o;
    const int64_t ws[4] = {out_channels, in_channels / groups, kernel[0], kernel[1]};
    double fan_in = (double)(in_channels / groups) * kernel[0] * kernel[1];
    gf_status st = add_tensor(&c->base, "weight", ws, 4, dtype, dev, 4, 0, true);
    if (st == GF_OK)
        st = bias ? add_tensor(&c->base, "bias", (const int64_t[]){out_channels}, 1, dtype, dev,
                               2, 1.0 / sqrt(fan_in), true)
                  : gf_module_register_parameter(&c->base, "bias", NULL);
    return finish(&c->base, st, saved);
}

/* ------------------------------------------------------------ BatchNorm */
static gf_tensor *bn_forward(gf_module *m, gf_tensor *const *in, int n) {
    if (!gf__mod_one_input("BatchNorm", n)) return NULL;
    bn_mod *b = (bn_mod *)m;
    bool training = gf_module_is_training(m);
    gf_tensor *rm = gf__mod_own(m, "running_mean"), *rv = gf__mod_own(m, "running_var");
    /* training: the batch's statistics, the running ones updated; eval: the
     * running ones, or the batch's when none are tracked */
    gf_tensor *y = gf_batch_norm(in[0], rm, rv, gf__mod_own(m, "weight"), gf__mod_own(m, "bias"),
                                 training || !rm, b->momentum, b->eps, NULL, NULL);
    if (y && training && rm) {
        /* num_batches_tracked += 1, as PyTorch's training forward */
        gf_tensor *nb = gf__mod_own(m, "num_batches_tracked");
        gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
        gf_status st = nb ? gf_add_scalar_int_(nb, 1) : GF_OK;
        gf_grad_mode_set(prev);
        if (st != GF_OK) {
            gf_tensor_release(y);
            return NULL;
        }
    }
    return y;
}
static const gf_module_class bn_class = {"BatchNorm", bn_forward, NULL};

gf_module *gf_nn_batch_norm(int64_t num_features, double eps, double momentum, bool affine,
                            bool track_running_stats, gf_dtype dtype, gf_device *dev) {
    const char *op = "gf_nn_batch_norm";
    if (num_features < 1 || !(eps >= 0) || !(momentum >= 0 && momentum <= 1)) {
        gf__error(GF_ERR_INVALID, "%s: num_features %lld (>= 1), eps %g (>= 0), momentum %g (in "
                  "[0, 1])", op, (long long)num_features, eps, momentum);
        return NULL;
    }
    if (!float_dtype(dtype, op)) return NULL;
    int saved = gf__scope_suspend();
    bn_mod *b = new_module(sizeof *b, &bn_class, op);
    if (!b) return finish(NULL, gf__status(), saved);
    b->eps = eps, b->momentum = momentum, b->track = track_running_stats;
    const int64_t c[1] = {num_features};
    gf_status st = GF_OK;
    if (affine) {
        st = add_tensor(&b->base, "weight", c, 1, dtype, dev, 1, 0, true);
        if (st == GF_OK) st = add_tensor(&b->base, "bias", c, 1, dtype, dev, 0, 0, true);
    } else {
        st = gf_module_register_parameter(&b->base, "weight", NULL);
        if (st == GF_OK) st = gf_module_register_parameter(&b->base, "bias", NULL);
    }
    if (st == GF_OK && track_running_stats) {
        st = add_tensor(&b->base, "running_mean", c, 1, dtype, dev, 0, 0, false);
        if (st == GF_OK) st = add_tensor(&b->base, "running_var", c, 1, dtype, dev, 1, 0, false);
        if (st == GF_OK) st = add_tensor(&b->base, "num_batches_tracked", NULL, 0, GF_I64, dev, 0,
                                         0, false);
    }
    return finish(&b->base, st, saved);
}

/* ------------------------------------------------------------ LayerNorm */
static gf_tensor *ln_forward(gf_module *m, gf_tensor *const *in, int n) {
    if (!gf__mod_one_input("LayerNorm", n)) return NULL;
    ln_mod *l = (ln_mod *)m;
    return gf_layer_norm(in[0], l->rank, gf__mod_own(m, "weight"), gf__mod_own(m, "bias"), l->eps, NULL, NULL);
}
static const gf_module_class ln_class = {"LayerNorm", ln_forward, NULL};

gf_module *gf_nn_layer_norm(const int64_t *normalized_shape, int rank, double eps,
                            bool elementwise_affine, gf_dtype dtype, gf_device *dev) {
    const char *op = "gf_nn_layer_norm";
    if (!normalized_shape || rank < 1 || rank > GF_MAX_RANK || !(eps >= 0)) {
        gf__error(GF_ERR_INVALID, "%s: give normalized_shape (rank 1 to %d) and eps >= 0", op,
                  GF_MAX_RANK);
        return NULL;
    }
    if (!float_dtype(dtype, op)) return NULL;
    int saved = gf__scope_suspend();
    ln_mod *l = new_module(sizeof *l, &ln_class, op);
    if (!l) return finish(NULL, gf__status(), saved);
    l->rank = rank, l->eps = eps;
    gf_status st = GF_OK;
    if (elementwise_affine) {
        st = add_tensor(&l->base, "weight", normalized_shape, rank, dtype, dev, 1, 0, true);
        if (st == GF_OK)
            st = add_tensor(&l->base, "bias", normalized_shape, rank, dtype, dev, 0, 0, true);
    } else {
        st = gf_module_register_parameter(&l->base, "weight", NULL);
        if (st == GF_OK) st = gf_module_register_parameter(&l->base, "bias", NULL);
    }
    return finish(&l->base, st, saved);
}

/* ------------------------------------------------------------ Embedding */
static gf_tensor *emb_forward(gf_module *m, gf_tensor *const *in, int n) {
    if (!gf__mod_one_input("Embedding", n)) return NULL;
    return gf_embedding(gf__mod_own(m, "weight"), in[0]);
}
static const gf_module_class emb_class = {"Embedding", emb_forward, NULL};

gf_module *gf_nn_embedding(int64_t num_embeddings, int64_t embedding_dim, gf_dtype dtype,
                           gf_device *dev) {
    const char *op = "gf_nn_embedding";
    if (num_embeddings < 0 || embedding_dim < 0) {
        gf__error(GF_ERR_INVALID, "%s: num_embeddings %lld and embedding_dim %lld must be >= 0",
                  op, (long long)num_embeddings, (long long)embedding_dim);
        return NULL;
    }
    if (!float_dtype(dtype, op)) return NULL;
    int saved = gf__scope_suspend();
    gf_module *m = new_module(sizeof *m, &emb_class, op);
    if (!m) return finish(NULL, gf__status(), saved);
    const int64_t ws[2] = {num_embeddings, embedding_dim};
    return finish(m, add_tensor(m, "weight", ws, 2, dtype, dev, 3, 0, true), saved);
}

/* ------------------------------------------------------------ Dropout */
static gf_tensor *drop_forward(gf_module *m, gf_tensor *const *in, int n) {
    if (!gf__mod_one_input("Dropout", n)) return NULL;
    return gf_dropout(in[0], ((drop_mod *)m)->p, gf_module_is_training(m));
}
static const gf_module_class drop_class = {"Dropout", drop_forward, NULL};

gf_module *gf_nn_dropout(double p) {
    if (!(p >= 0 && p <= 1)) {
        gf__error(GF_ERR_INVALID, "gf_nn_dropout: dropout probability has to be between 0 and "
                  "1, but got %g", p);
        return NULL;
    }
    drop_mod *d = new_module(sizeof *d, &drop_class, "gf_nn_dropout");
    if (d) d->p = p;
    return d ? &d->base : NULL;
}

/* ------------------------------------------------------------ pooling */
static gf_tensor *maxpool_forward(gf_module *m, gf_tensor *const *in, int n) {
    if (!gf__mod_one_input("MaxPool2d", n)) return NULL;
    return gf_max_pool2d(in[0], &((pool_mod *)m)->opts, NULL);
}
static gf_tensor *avgpool_forward(gf_module *m, gf_tensor *const *in, int n) {
    if (!gf__mod_one_input("AvgPool2d", n)) return NULL;
    return gf_avg_pool2d(in[0], &((pool_mod *)m)->opts);
}
static gf_tensor *adaptive_forward(gf_module *m, gf_tensor *const *in, int n) {
    if (!gf__mod_one_input("AdaptiveAvgPool2d", n)) return NULL;
    return gf_adaptive_avg_pool2d(in[0], ((pool_mod *)m)->out);
}
static const gf_module_class maxpool_class = {"MaxPool2d", maxpool_forward, NULL};
static const gf_module_class avgpool_class = {"AvgPool2d", avgpool_forward, NULL};
static const gf_module_class adaptive_class = {"AdaptiveAvgPool2d", adaptive_forward, NULL};

static gf_module *pool_module(const gf_module_class *cls, const gf_pool2d_opts *opts,
                              const int64_t *out, const char *op) {
    if ((cls != &adaptive_class && !opts) || (cls == &adaptive_class && !out)) {
        gf__error(GF_ERR_INVALID, "%s: %s is NULL", op, opts || out ? "output_size" : "opts");
        return NULL;
    }
    pool_mod *p = new_module(sizeof *p, cls, op);
    if (!p) return NULL;
    if (opts) p->opts = *opts;
    if (out) p->out[0] = out[0], p->out[1] = out[1];
    return &p->base;
}
gf_module *gf_nn_max_pool2d(const gf_pool2d_opts *opts) {
    return pool_module(&maxpool_class, opts, NULL, "gf_nn_max_pool2d");
}
gf_module *gf_nn_avg_pool2d(const gf_pool2d_opts *opts) {
    return pool_module(&avgpool_class, opts, NULL, "gf_nn_avg_pool2d");
}
gf_module *gf_nn_adaptive_avg_pool2d(const int64_t output_size[2]) {
    return pool_module(&adaptive_class, NULL, output_size, "gf_nn_adaptive_avg_pool2d");
}

/* ------------------------------------------------------------ Conv1d, ConvTranspose2d */
typedef struct conv1_mod {
    gf_module base;
    gf_conv1d_opts opts;
} conv1_mod;
typedef struct convt_mod {
    gf_module base;
    gf_conv_transpose2d_opts opts;
} convt_mod;

static gf_tensor *conv1_forward(gf_module *m, gf_tensor *const *in, int n) {
    if (!gf__mod_one_input("Conv1d", n)) return NULL;
    return gf_conv1d(in[0], gf__mod_own(m, "weight"), gf__mod_own(m, "bias"), &((conv1_mod *)m)->opts);
}
static gf_tensor *convt_forward(gf_module *m, gf_tensor *const *in, int n) {
    if (!gf__mod_one_input("ConvTranspose2d", n)) return NULL;
    return gf_conv_transpose2d(in[0], gf__mod_own(m, "weight"), gf__mod_own(m, "bias"), &((convt_mod *)m)->opts);
}
static const gf_module_class conv1_class = {"Conv1d", conv1_forward, NULL};
static const gf_module_class convt_class = {"ConvTranspose2d", convt_forward, NULL};

/* weight of sizes ws (kaiming_uniform a = sqrt(5) over fan_in), bias [co]
 * uniform +-1/sqrt(fan_in) (PyTorch's _ConvNd.reset_parameters; for the
 * transposed layout fan_in is computed from the weight as torch does). */
static gf_status conv_params(gf_module *m, const int64_t *ws, int rank, int64_t co, double fan_in,
                             bool bias, gf_dtype dtype, gf_device *dev) {
    gf_status st = add_tensor(m, "weight", ws, rank, dtype, dev, 4, 0, true);
    if (st == GF_OK)
        st = bias ? add_tensor(m, "bias", (const int64_t[]){co}, 1, dtype, dev, 2,
                               fan_in > 0 ? 1.0 / sqrt(fan_in) : 0, true)
                  : gf_module_register_parameter(m, "bias", NULL);
    return st;
}

gf_module *gf_nn_conv1d(int64_t in_channels, int64_t out_channels, int kernel,
                        const gf_conv1d_opts *opts, bool bias, gf_dtype dtype, gf_device *dev) {
    const char *op = "gf_nn_conv1d";
    gf_conv1d_opts o = opts ? *opts : (gf_conv1d_opts){1, 0, 1, 1};
    int groups = o.groups > 0 ? o.groups : 1;
    if (kernel < 1 || in_channels < 1 || out_channels < 1 || in_channels % groups ||
        out_channels % groups) {
        gf__error(GF_ERR_INVALID, "%s: channels %lld -> %lld (divisible by groups %d) and a "
                  "kernel >= 1 are needed", op, (long long)in_channels, (long long)out_channels,
                  groups);
        return NULL;
    }
    if (!float_dtype(dtype, op)) return NULL;
    int saved = gf__scope_suspend();
    conv1_mod *c = new_module(sizeof *c, &conv1_class, op);
    if (!c) return finish(NULL, gf__status(), saved);
    c->opts = o;
    const int64_t ws[3] = {out_channels, in_channels / groups, kernel};
    return finish(&c->base, conv_params(&c->base, ws, 3, out_channels,
                                         (double)(in_channels / groups) * kernel, bias, dtype, dev),
                  saved);
}

gf_module *gf_nn_conv_transpose2d(int64_t in_channels, int64_t out_channels, const int kernel[2],
                                  const gf_conv_transpose2d_opts *opts, bool bias, gf_dtype dtype,
                                  gf_device *dev) {
    const char *op = "gf_nn_conv_transpose2d";
    gf_conv_transpose2d_opts o = opts ? *opts : (gf_conv_transpose2d_opts){{1, 1}, {0, 0}, {0, 0},
                                                                         {1, 1}, 1};
    int groups = o.groups > 0 ? o.groups : 1;
    if (!kernel || kernel[0] < 1 || kernel[1] < 1 || in_channels < 1 || out_channels < 1 ||
        in_channels % groups || out_channels % groups) {
        gf__error(GF_ERR_INVALID, "%s: channels %lld -> %lld (divisible by groups %d) and a "
                  "kernel of sizes >= 1 are needed", op, (long long)in_channels,
                  (long long)out_channels, groups);
        return NULL;
    }
    if (!float_dtype(dtype, op)) return NULL;
    int saved = gf__scope_suspend();
    convt_mod *c = new_module(sizeof *c, &convt_class, op);
    if (!c) return finish(NULL, gf__status(), saved);
    c->opts = o;
    /* weight [Ci, Co / groups, kh, kw]: torch's fan_in is its dim 1 times the kernel */
    const int64_t ws[4] = {in_channels, out_channels / groups, kernel[0], kernel[1]};
    return finish(&c->base, conv_params(&c->base, ws, 4, out_channels,
                                         (double)(out_channels / groups) * kernel[0] * kernel[1],
                                         bias, dtype, dev),
                  saved);
}

/* ------------------------------------------------------------ GroupNorm, InstanceNorm */
typedef struct gn_mod {
    gf_module base;
    int64_t groups;
    double eps, momentum;
    bool track;
} gn_mod;

static gf_tensor *gn_forward(gf_module *m, gf_tensor *const *in, int n) {
    if (!gf__mod_one_input("GroupNorm", n)) return NULL;
    gn_mod *g = (gn_mod *)m;
    return gf_group_norm(in[0], g->groups, gf__mod_own(m, "weight"), gf__mod_own(m, "bias"), g->eps);
}
static gf_tensor *in_forward(gf_module *m, gf_tensor *const *in, int n) {
    if (!gf__mod_one_input("InstanceNorm2d", n)) return NULL;
    gn_mod *g = (gn_mod *)m;
    /* as torch: the input's statistics in training or without running ones */
    bool input_stats = gf_module_is_training(m) || !g->track;
    return gf_instance_norm(in[0], g->track ? gf__mod_own(m, "running_mean") : NULL,
                            g->track ? gf__mod_own(m, "running_var") : NULL, gf__mod_own(m, "weight"),
                            gf__mod_own(m, "bias"), input_stats, g->momentum, g->eps);
}
static const gf_module_class gn_class = {"GroupNorm", gn_forward, NULL};
static const gf_module_class in_class = {"InstanceNorm2d", in_forward, NULL};

static gf_module *norm_module(const gf_module_class *cls, int64_t groups, int64_t c, double eps,
                              double momentum, bool affine, bool track, gf_dtype dtype,
                              gf_device *dev, const char *op) {
    if (c < 1 || groups < 1 || c % groups || !(eps >= 0) || !(momentum >= 0 && momentum <= 1)) {
        gf__error(GF_ERR_INVALID, "%s: %lld channels (>= 1, divisible by %lld groups), eps %g "
                  "(>= 0), momentum %g (in [0, 1])", op, (long long)c, (long long)groups, eps,
                  momentum);
        return NULL;
    }
    if (!float_dtype(dtype, op)) return NULL;
    int saved = gf__scope_suspend();
    gn_mod *g = new_module(sizeof *g, cls, op);
    if (!g) return finish(NULL, gf__status(), saved);
    g->groups = groups, g->eps = eps, g->momentum = momentum, g->track = track;
    const int64_t cs[1] = {c};
    gf_status st = GF_OK;
    if (affine) {
        st = add_tensor(&g->base, "weight", cs, 1, dtype, dev, 1, 0, true);
        if (st == GF_OK) st = add_tensor(&g->base, "bias", cs, 1, dtype, dev, 0, 0, true);
    } else {
        st = gf_module_register_parameter(&g->base, "weight", NULL);
        if (st == GF_OK) st = gf_module_register_parameter(&g->base, "bias", NULL);
    }
    if (st == GF_OK && track) {
        st = add_tensor(&g->base, "running_mean", cs, 1, dtype, dev, 0, 0, false);
        if (st == GF_OK) st = add_tensor(&g->base, "running_var", cs, 1, dtype, dev, 1, 0, false);
        if (st == GF_OK)
            st = add_tensor(&g->base, "num_batches_tracked", NULL, 0, GF_I64, dev, 0, 0, false);
    }
    return finish(&g->base, st, saved);
}

gf_module *gf_nn_group_norm(int64_t num_groups, int64_t num_channels, double eps, bool affine,
                            gf_dtype dtype, gf_device *dev) {
    return norm_module(&gn_class, num_groups, num_channels, eps, 0.0, affine, false, dtype, dev,
                       "gf_nn_group_norm");
}

gf_module *gf_nn_instance_norm2d(int64_t num_features, double eps, double momentum, bool affine,
                                 bool track_running_stats, gf_dtype dtype, gf_device *dev) {
    return norm_module(&in_class, 1, num_features, eps, momentum, affine, track_running_stats,
                       dtype, dev, "gf_nn_instance_norm2d");
}
