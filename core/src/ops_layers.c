/* SPDX-License-Identifier: BSD-3-Clause */
/* ops_layers.c — conv1d, transposed convolutions, group/instance norm,
 * adaptive pooling, interpolate, embedding with padding_idx, scaled
 * dot-product attention and linear (graft/layers.h), as PyTorch computes
 * them.
 *
 * Every op is a composite of public differentiable ops, so gradients of
 * every order come from those ops' rules: no op id and no backward of its
 * own. The transposed convolution is conv2d's backward-input kernel, whose
 * node differentiates into conv2d and the backward-weight kernel; the
 * normalisations are layer_norm on a reshaped view; interpolation and
 * adaptive pooling gather with index tables built on the host. Each op
 * checks its arguments first, so errors name it rather than an inner op. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "amp/amp_internal.h"
#include "internal.h"

/* The temporaries of one composite: T(expr) evaluates expr only while every
 * earlier step succeeded and keeps its result for one release at the end. */
typedef struct tmps {
    gf_tensor *t[80];
    int n;
    bool bad;
} tmps;

static gf_tensor *keep_t(tmps *l, gf_tensor *t) {
    if (!t || l->n == (int)(sizeof l->t / sizeof l->t[0])) {
        if (t) {
            gf_tensor_release(t);
            gf__error(GF_ERR_INVALID, "layers: internal temporary list full");
        }
        l->bad = true;
        return NULL;
    }
    l->t[l->n++] = t;
    return t;
}
#define T(expr) (L->bad ? NULL : keep_t(L, (expr)))

/* Releases the temporaries; a new reference to y, NULL when a step failed. */
static gf_tensor *finish(tmps *l, gf_tensor *y) {
    gf_tensor *r = (!l->bad && y) ? gf_tensor_retain(y) : NULL;
    for (int i = 0; i < l->n; i++) gf_tensor_release(l->t[i]);
    l->n = 0;
    return r;
}

/* A new reference to t when every step succeeded (the list keeps its own). */
static gf_tensor *finish_keep(tmps *l, gf_tensor *t) {
    return (!l->bad && t) ? gf_tensor_retain(t) : NULL;
}

static gf_tensor *ret_new(gf_tensor *t) { return t ? gf__ret(t) : NULL; }

static bool check_float(const char *op, const char *name, const gf_tensor *t) {
    if (gf_dtype_is_float(t->dtype)) return true;
    gf__error(GF_ERR_DTYPE, "%s: %s must have a float dtype, got %s; convert it with gf_to_dtype",
              op, name, gf_dtype_name(t->dtype));
    return false;
}

/* t (may be NULL) on x's device with x's dtype. */
static bool check_like(const char *op, const char *name, const gf_tensor *t, const gf_tensor *x) {
    if (!t) return true;
    if (!gf__same_device(x, t, op)) return false;
    if (t->dtype == x->dtype) return true;
    gf__error(GF_ERR_DTYPE, "%s: %s has dtype %s but the input has %s; they must be the same "
              "(convert with gf_to_dtype)", op, name, gf_dtype_name(t->dtype),
              gf_dtype_name(x->dtype));
    return false;
}

/* t NULL or 1-D of size n. */
static bool check_vec(const char *op, const char *name, const gf_tensor *t, int64_t n,
                      const char *what) {
    if (!t || (t->rank == 1 && t->sizes[0] == n)) return true;
    char b[128];
    gf__error(GF_ERR_SHAPE, "%s: %s must be 1-D with %lld elements (%s), got shape %s", op, name,
              (long long)n, what, gf__shape_str(t->sizes, t->rank, b, sizeof b));
    return false;
}

/* A host table uploaded as a 1-D (or shaped) tensor. */
static gf_tensor *upload(const void *data, const int64_t *sizes, int rank, gf_dtype dt,
                         gf_device *dev) {
    return gf_from_data(data, sizes, rank, dt, dev);
}

/* 1-D host buffer of n elements of size es, checked. */
static void *host_alloc(int64_t n, size_t es, const char *op) {
    int64_t bytes;
    if (n < 0 || !gf__mul_ok(n, (int64_t)es, &bytes) || bytes > ((int64_t)1 << 50)) {
        gf__error(GF_ERR_OVERFLOW, "%s: an index table of %lld elements is too large", op,
                  (long long)n);
        return NULL;
    }
    void *p = malloc(bytes ? (size_t)bytes : 1);
    if (!p) gf__error(GF_ERR_OUT_OF_MEMORY, "%s: cannot allocate %lld bytes", op, (long long)bytes);
    return p;
}

/* A vector of n values in x's dtype shaped for broadcasting along dim `axis`
 * of a tensor of rank `rank` ([n, 1, ...] with rank - axis dims). */
static gf_tensor *axis_vector(const double *v, int64_t n, int axis, int rank, gf_dtype dt,
                              gf_device *dev, const char *op) {
    int64_t sz[GF_MAX_RANK];
    int r = rank - axis;
    sz[0] = n;
    for (int i = 1; i < r; i++) sz[i] = 1;
    if (dt == GF_F64) return upload(v, sz, r, dt, dev);
    float *f = host_alloc(n, sizeof(float), op);
    if (!f) return NULL;
    for (int64_t i = 0; i < n; i++) f[i] = (float)v[i];
    gf_tensor *t = upload(f, sz, r, GF_F32, dev);
    free(f);
    if (t && dt != GF_F32) {
        gf_tensor *c = gf_to_dtype(t, dt);
        gf_tensor_release(t);
        t = c;
    }
    return t;
}

/* ------------------------------------------------------------ conv1d */

gf_tensor *gf_conv1d(const gf_tensor *x, const gf_tensor *weight, const gf_tensor *bias,
                     const gf_conv1d_opts *opts) {
    GF__AMP_HOOK(CONV1D, 3, gf_conv1d(amp_v[0], amp_v[1], amp_v[2], opts), x, weight, bias);
    const char *op = "conv1d";
    if (!x || !weight) {
        gf__null_arg(op, !x ? "x" : "weight");
        return NULL;
    }
    char bx[128], bw[128];
    if (x->rank != 2 && x->rank != 3) {
        gf__error(GF_ERR_SHAPE, "conv1d: expected 2-D (unbatched) or 3-D (batched) input, but "
                  "got input of size %s", gf__shape_str(x->sizes, x->rank, bx, sizeof bx));
        return NULL;
    }
    if (weight->rank != 3) {
        gf__error(GF_ERR_SHAPE, "conv1d: expected 3-D weight [Co, Ci/groups, k], but got weight "
                  "of size %s", gf__shape_str(weight->sizes, weight->rank, bw, sizeof bw));
        return NULL;
    }
    if (!check_float(op, "x", x) || !check_like(op, "weight", weight, x) ||
        !check_like(op, "bias", bias, x))
        return NULL;
    gf_conv1d_opts o = {0};
    if (opts) o = *opts;
    if (o.stride < 0 || o.padding < 0 || o.dilation < 0 || o.groups < 0) {
        gf__error(GF_ERR_INVALID, "conv1d: stride, padding, dilation and groups must be >= 0 "
                  "(stride, dilation and groups 0 mean 1), got stride %d, padding %d, dilation "
                  "%d, groups %d", o.stride, o.padding, o.dilation, o.groups);
        return NULL;
    }
    int64_t g = o.groups ? o.groups : 1, d = o.dilation ? o.dilation : 1, cin, ext = 0, padded = 0;
    int64_t ci = x->sizes[x->rank - 2], len = x->sizes[x->rank - 1];
    gf__shape_str(x->sizes, x->rank, bx, sizeof bx);
    gf__shape_str(weight->sizes, 3, bw, sizeof bw);
    if (weight->sizes[0] < g || weight->sizes[0] % g) {
        gf__error(GF_ERR_SHAPE, "conv1d: given groups=%lld, expected weight to be at least %lld "
                  "and divisible by %lld at dim 0, but got weight of size %s", (long long)g,
                  (long long)g, (long long)g, bw);
        return NULL;
    }
    if (!gf__mul_ok(weight->sizes[1], g, &cin) || cin != ci) {
        gf__error(GF_ERR_SHAPE, "conv1d: given groups=%lld, weight of size %s, expected input %s "
                  "to have %lld x %lld channels, but got %lld channels instead", (long long)g,
                  bw, bx, (long long)weight->sizes[1], (long long)g, (long long)ci);
        return NULL;
    }
    if (!check_vec(op, "bias", bias, weight->sizes[0], "weight's dim 0")) return NULL;
    if (weight->sizes[2] < 1 || !gf__mul_ok(d, weight->sizes[2] - 1, &ext) ||
        !gf__add_ok(ext, 1, &ext) || !gf__add_ok(len, 2 * (int64_t)o.padding, &padded) ||
        padded < ext) {
        gf__error(GF_ERR_SHAPE, "conv1d: calculated padded input size per channel: (%lld). "
                  "Kernel size: (%lld) with dilation %lld. Kernel size can't be greater than "
                  "actual input size; use a smaller kernel or dilation, or more padding",
                  (long long)padded, (long long)weight->sizes[2], (long long)d);
        return NULL;
    }
    gf_conv2d_opts c = {{1, o.stride}, {0, o.padding}, {1, o.dilation}, o.groups};
    int s = gf__scope_suspend();
    tmps l = {0}, *L = &l;
    gf_tensor *x4 = T(gf_unsqueeze(x, -2));
    gf_tensor *w4 = T(gf_unsqueeze(weight, 2));
    gf_tensor *y = T(gf_squeeze(T(gf_conv2d(x4, w4, bias, &c)), -2));
    y = finish(L, y);
    gf__scope_resume(s);
    return ret_new(y);
}

/* ------------------------------------------------------------ conv_transpose */

/* x rank 3 or 4, weight rank 4 (checked by the callers). */
static gf_tensor *conv_transpose_impl(const char *op, const gf_tensor *x, const gf_tensor *w,
                                      const gf_tensor *bias, const gf_conv_transpose2d_opts *opts) {
    if (!check_float(op, "x", x) || !check_like(op, "weight", w, x) ||
        !check_like(op, "bias", bias, x))
        return NULL;
    gf_conv_transpose2d_opts o;
    memset(&o, 0, sizeof o);
    if (opts) o = *opts;
    int64_t st[2], pd[2], op_[2], dl[2];
    for (int a = 0; a < 2; a++) {
        if (o.stride[a] < 0 || o.padding[a] < 0 || o.output_padding[a] < 0 || o.dilation[a] < 0) {
            gf__error(GF_ERR_INVALID, "%s: stride, padding, output_padding and dilation must be "
                      ">= 0 (stride and dilation 0 mean 1), got stride %d, padding %d, "
                      "output_padding %d, dilation %d", op, o.stride[a], o.padding[a],
                      o.output_padding[a], o.dilation[a]);
            return NULL;
        }
        st[a] = o.stride[a] ? o.stride[a] : 1;
        dl[a] = o.dilation[a] ? o.dilation[a] : 1;
        pd[a] = o.padding[a];
        op_[a] = o.output_padding[a];
        if (op_[a] >= st[a] && op_[a] >= dl[a]) {
            gf__error(GF_ERR_INVALID, "%s: output padding must be smaller than either stride or "
                      "dilation, but got output_padding %lld, stride %lld, dilation %lld", op,
                      (long long)op_[a], (long long)st[a], (long long)dl[a]);
            return NULL;
        }
    }
    if (o.groups < 0) {
        gf__error(GF_ERR_INVALID, "%s: groups must be >= 1 (0 means 1), got %d", op, o.groups);
        return NULL;
    }
    int64_t g = o.groups ? o.groups : 1, cout;
    char bx[128], bw[128];
    gf__shape_str(x->sizes, x->rank, bx, sizeof bx);
    gf__shape_str(w->sizes, 4, bw, sizeof bw);
    int cd = x->rank - 3; /* channel dim */
    if (w->sizes[0] < g || w->sizes[0] % g) {
        gf__error(GF_ERR_SHAPE, "%s: given groups=%lld, expected weight to be at least %lld and "
                  "divisible by %lld at dim 0, but got weight of size %s", op, (long long)g,
                  (long long)g, (long long)g, bw);
        return NULL;
    }
    if (x->sizes[cd] != w->sizes[0]) {
        gf__error(GF_ERR_SHAPE, "%s: given transposed=1, weight of size %s, expected input %s to "
                  "have %lld channels, but got %lld channels instead", op, bw, bx,
                  (long long)w->sizes[0], (long long)x->sizes[cd]);
        return NULL;
    }
    if (x->sizes[cd + 1] == 0 || x->sizes[cd + 2] == 0) {
        gf__error(GF_ERR_SHAPE, "%s: expected input %s to have non-zero size for non-batch "
                  "dimensions", op, bx);
        return NULL;
    }
    if (w->sizes[2] < 1 || w->sizes[3] < 1) {
        gf__error(GF_ERR_SHAPE, "%s: the kernel size (dims 2, 3 of weight %s) must be at least "
                  "1x1", op, bw);
        return NULL;
    }
    if (!gf__mul_ok(w->sizes[1], g, &cout)) {
        gf__error(GF_ERR_OVERFLOW, "%s: weight %s times groups %lld overflows", op, bw,
                  (long long)g);
        return NULL;
    }
    if (!check_vec(op, "bias", bias, cout, "weight's dim 1 times groups")) return NULL;
    /* out = (in - 1) stride - 2 padding + dilation (k - 1) + output_padding + 1;
     * full = the same with no padding and no output_padding. */
    int64_t out[2], full[2];
    for (int a = 0; a < 2; a++) {
        int64_t t, e;
        bool ok = gf__mul_ok(x->sizes[cd + 1 + a] - 1, st[a], &t) &&
                  gf__mul_ok(dl[a], w->sizes[2 + a] - 1, &e) && gf__add_ok(t, e, &t) &&
                  gf__add_ok(t, 1, &full[a]) && gf__sub_ok(full[a], 2 * pd[a], &t) &&
                  gf__add_ok(t, op_[a], &out[a]);
        if (!ok) {
            gf__error(GF_ERR_OVERFLOW, "%s: input %s, weight %s and the options give an output "
                      "size beyond int64", op, bx, bw);
            return NULL;
        }
    }
    if (out[0] < 1 || out[1] < 1) {
        gf__error(GF_ERR_SHAPE, "%s: given input size per channel: (%lld x %lld). Calculated "
                  "output size per channel: (%lld x %lld). Output size is too small", op,
                  (long long)x->sizes[cd + 1], (long long)x->sizes[cd + 2], (long long)out[0],
                  (long long)out[1]);
        return NULL;
    }
    int s = gf__scope_suspend();
    tmps l = {0}, *L = &l;
    gf_tensor *x4 = x->rank == 4 ? (gf_tensor *)x : T(gf_unsqueeze(x, 0));
    int64_t n = x->rank == 4 ? x->sizes[0] : 1;
    /* The kernel's geometry gives back the input size only when
     * output_padding < stride: an axis where it is not is computed at its
     * full size without padding, then cut (and extended by zeros where the
     * output reaches past the last tap). */
    bool direct[2] = {op_[0] < st[0], op_[1] < st[1]};
    gf_conv2d_opts c = {{(int)st[0], (int)st[1]},
                        {direct[0] ? (int)pd[0] : 0, direct[1] ? (int)pd[1] : 0},
                        {(int)dl[0], (int)dl[1]},
                        (int)g};
    int64_t isz[4] = {n, cout, direct[0] ? out[0] : full[0], direct[1] ? out[1] : full[1]};
    gf_tensor *y = T(gf_conv2d_backward_input(x4, w, isz, &c));
    for (int a = 0; a < 2 && !L->bad; a++) {
        if (direct[a]) continue;
        if (op_[a] > pd[a]) {
            int64_t zs[4];
            memcpy(zs, y->sizes, sizeof zs);
            zs[2 + a] = op_[a] - pd[a];
            gf_tensor *parts[2] = {y, T(gf_zeros(zs, 4, x->dtype, x->storage->device))};
            y = T(gf_cat(parts, 2, 2 + a));
        }
        y = T(gf_narrow(y, 2 + a, pd[a], out[a]));
    }
    if (bias) {
        int64_t bs[3] = {cout, 1, 1};
        y = T(gf_add(y, T(gf_reshape(bias, bs, 3))));
    }
    if (x->rank == 3) y = T(gf_squeeze(y, 0));
    y = finish(L, y);
    gf__scope_resume(s);
    return ret_new(y);
}

gf_tensor *gf_conv_transpose2d(const gf_tensor *x, const gf_tensor *weight, const gf_tensor *bias,
                               const gf_conv_transpose2d_opts *opts) {
    GF__AMP_HOOK(CONV_TRANSPOSE2D, 3, gf_conv_transpose2d(amp_v[0], amp_v[1], amp_v[2], opts), x, weight, bias);
    const char *op = "conv_transpose2d";
    if (!x || !weight) {
        gf__null_arg(op, !x ? "x" : "weight");
        return NULL;
    }
    char b[128];
    if (x->rank != 3 && x->rank != 4) {
        gf__error(GF_ERR_SHAPE, "conv_transpose2d: expected 3-D (unbatched) or 4-D (batched) "
                  "input, but got input of size %s", gf__shape_str(x->sizes, x->rank, b, sizeof b));
        return NULL;
    }
    if (weight->rank != 4) {
        gf__error(GF_ERR_SHAPE, "conv_transpose2d: expected 4-D weight [Ci, Co/groups, kh, kw], "
                  "but got weight of size %s",
                  gf__shape_str(weight->sizes, weight->rank, b, sizeof b));
        return NULL;
    }
    return conv_transpose_impl(op, x, weight, bias, opts);
}

gf_tensor *gf_conv_transpose1d(const gf_tensor *x, const gf_tensor *weight, const gf_tensor *bias,
                               const gf_conv_transpose1d_opts *opts) {
    const char *op = "conv_transpose1d";
    if (!x || !weight) {
        gf__null_arg(op, !x ? "x" : "weight");
        return NULL;
    }
    char b[128];
    if (x->rank != 2 && x->rank != 3) {
        gf__error(GF_ERR_SHAPE, "conv_transpose1d: expected 2-D (unbatched) or 3-D (batched) "
                  "input, but got input of size %s", gf__shape_str(x->sizes, x->rank, b, sizeof b));
        return NULL;
    }
    if (weight->rank != 3) {
        gf__error(GF_ERR_SHAPE, "conv_transpose1d: expected 3-D weight [Ci, Co/groups, k], but "
                  "got weight of size %s", gf__shape_str(weight->sizes, weight->rank, b, sizeof b));
        return NULL;
    }
    gf_conv_transpose1d_opts o = {0};
    if (opts) o = *opts;
    gf_conv_transpose2d_opts c = {{1, o.stride}, {0, o.padding}, {0, o.output_padding},
                                  {1, o.dilation}, o.groups};
    int s = gf__scope_suspend();
    tmps l = {0}, *L = &l;
    gf_tensor *x4 = T(gf_unsqueeze(x, -2));
    gf_tensor *w4 = T(gf_unsqueeze(weight, 2));
    gf_tensor *y = L->bad ? NULL : T(conv_transpose_impl(op, x4, w4, bias, &c));
    y = T(gf_squeeze(y, -2));
    y = finish(L, y);
    gf__scope_resume(s);
    return ret_new(y);
}

/* ------------------------------------------------------------ normalisation */

/* y * weight + bias, weight and bias [C] broadcast along dim 1 of y. */
static gf_tensor *affine_c(tmps *L, gf_tensor *y, const gf_tensor *w, const gf_tensor *b,
                           int rank) {
    if (!w && !b) return y;
    int64_t vs[GF_MAX_RANK];
    vs[0] = -1;
    for (int i = 1; i < rank - 1; i++) vs[i] = 1;
    if (w) y = T(gf_mul(y, T(gf_reshape(w, vs, rank - 1))));
    if (b) y = T(gf_add(y, T(gf_reshape(b, vs, rank - 1))));
    return y;
}

static bool check_eps(const char *op, double eps) {
    if (eps >= 0 && isfinite(eps)) return true;
    gf__error(GF_ERR_INVALID, "%s: eps must be finite and >= 0, got %g", op, eps);
    return false;
}

gf_tensor *gf_group_norm(const gf_tensor *x, int64_t num_groups, const gf_tensor *weight,
                         const gf_tensor *bias, double eps) {
    GF__AMP_HOOK(GROUP_NORM, 3, gf_group_norm(amp_v[0], num_groups, amp_v[1], amp_v[2], eps), x, weight, bias);
    const char *op = "group_norm";
    if (!x) {
        gf__null_arg(op, "x");
        return NULL;
    }
    char b[128];
    if (x->rank < 2) {
        gf__error(GF_ERR_SHAPE, "group_norm: expected input of at least 2 dims [N, C, *], got %s",
                  gf__shape_str(x->sizes, x->rank, b, sizeof b));
        return NULL;
    }
    if (!check_float(op, "x", x) || !check_like(op, "weight", weight, x) ||
        !check_like(op, "bias", bias, x) || !check_eps(op, eps))
        return NULL;
    if (num_groups < 1) {
        gf__error(GF_ERR_INVALID, "group_norm: num_groups must be >= 1, got %lld",
                  (long long)num_groups);
        return NULL;
    }
    int64_t c = x->sizes[1];
    if (c % num_groups) {
        gf__error(GF_ERR_SHAPE, "group_norm: expected number of channels in input to be "
                  "divisible by num_groups, but got input of shape %s and num_groups=%lld",
                  gf__shape_str(x->sizes, x->rank, b, sizeof b), (long long)num_groups);
        return NULL;
    }
    if (!check_vec(op, "weight", weight, c, "the channels") ||
        !check_vec(op, "bias", bias, c, "the channels"))
        return NULL;
    int64_t inner = c / num_groups;
    for (int i = 2; i < x->rank; i++) inner *= x->sizes[i]; /* <= numel: no overflow */
    int64_t gs[3] = {x->sizes[0], num_groups, inner};
    int s = gf__scope_suspend();
    tmps l = {0}, *L = &l;
    gf_tensor *xr = T(gf_reshape(x, gs, 3));
    gf_tensor *y = L->bad ? NULL : T(gf_layer_norm(xr, 1, NULL, NULL, eps, NULL, NULL));
    y = T(gf_reshape(y, x->sizes, x->rank));
    y = affine_c(L, y, weight, bias, x->rank);
    y = finish(L, y);
    gf__scope_resume(s);
    return ret_new(y);
}

/* r = (1 - momentum) r + momentum v, in place, no history. */
static void blend_into(tmps *L, gf_tensor *r, gf_tensor *v, double momentum) {
    gf_tensor *n = T(gf_add(T(gf_mul_scalar(r, 1.0 - momentum)), T(gf_mul_scalar(v, momentum))));
    if (n && gf_copy_(r, n) != GF_OK) L->bad = true;
}

gf_tensor *gf_instance_norm(const gf_tensor *x, gf_tensor *running_mean, gf_tensor *running_var,
                            const gf_tensor *weight, const gf_tensor *bias,
                            bool use_input_stats, double momentum, double eps) {
    const char *op = "instance_norm";
    if (!x) {
        gf__null_arg(op, "x");
        return NULL;
    }
    char b[128];
    gf__shape_str(x->sizes, x->rank, b, sizeof b);
    if (x->rank < 3) {
        gf__error(GF_ERR_SHAPE, "instance_norm: expected input of at least 3 dims [N, C, *], got "
                  "%s (add a batch dim with gf_unsqueeze)", b);
        return NULL;
    }
    if (!check_float(op, "x", x) || !check_like(op, "weight", weight, x) ||
        !check_like(op, "bias", bias, x) || !check_like(op, "running_mean", running_mean, x) ||
        !check_like(op, "running_var", running_var, x) || !check_eps(op, eps))
        return NULL;
    if (!isfinite(momentum)) {
        gf__error(GF_ERR_INVALID, "instance_norm: momentum must be finite, got %g", momentum);
        return NULL;
    }
    if (!running_mean != !running_var) {
        gf__error(GF_ERR_INVALID, "instance_norm: running_mean and running_var must be given "
                  "together (got only %s)", running_mean ? "running_mean" : "running_var");
        return NULL;
    }
    if (!use_input_stats && !running_mean) {
        gf__error(GF_ERR_INVALID, "instance_norm: expected running_mean and running_var to be "
                  "defined when use_input_stats is false");
        return NULL;
    }
    int64_t c = x->sizes[1], sp = 1;
    if (!check_vec(op, "weight", weight, c, "the channels") ||
        !check_vec(op, "bias", bias, c, "the channels") ||
        !check_vec(op, "running_mean", running_mean, c, "the channels") ||
        !check_vec(op, "running_var", running_var, c, "the channels"))
        return NULL;
    for (int i = 2; i < x->rank; i++) sp *= x->sizes[i];
    if (use_input_stats && sp <= 1) {
        gf__error(GF_ERR_SHAPE, "instance_norm: expected more than 1 spatial element when "
                  "training, got input size %s", b);
        return NULL;
    }
    int s = gf__scope_suspend();
    tmps l = {0}, *L = &l;
    gf_tensor *y;
    if (use_input_stats) {
        int64_t rs[3] = {x->sizes[0], c, sp};
        gf_tensor *xr = T(gf_reshape(x, rs, 3));
        y = L->bad ? NULL : T(gf_layer_norm(xr, 1, NULL, NULL, eps, NULL, NULL));
        y = T(gf_reshape(y, x->sizes, x->rank));
        if (running_mean && x->sizes[0] > 0 && !L->bad) {
            gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
            static const int d2[1] = {2}, d0[1] = {0};
            gf_tensor *xd = T(gf_detach(xr));
            gf_tensor *m = T(gf_mean(T(gf_mean(xd, d2, 1, false)), d0, 1, false));
            gf_tensor *v = T(gf_mean(T(gf_var(xd, d2, 1, 1.0, false)), d0, 1, false));
            blend_into(L, running_mean, m, momentum);
            blend_into(L, running_var, v, momentum);
            gf_grad_mode_set(prev);
        }
    } else {
        int64_t vs[GF_MAX_RANK];
        vs[0] = -1;
        for (int i = 1; i < x->rank - 1; i++) vs[i] = 1;
        gf_tensor *rm = T(gf_reshape(running_mean, vs, x->rank - 1));
        gf_tensor *rv = T(gf_reshape(running_var, vs, x->rank - 1));
        y = T(gf_mul(T(gf_sub(x, rm)), T(gf_rsqrt(T(gf_add_scalar(rv, eps))))));
    }
    y = affine_c(L, y, weight, bias, x->rank);
    y = finish(L, y);
    gf__scope_resume(s);
    return ret_new(y);
}

/* ------------------------------------------------------------ adaptive pooling */

static int64_t win_start(int64_t i, int64_t in, int64_t out) { return (i * in) / out; }
static int64_t win_end(int64_t i, int64_t in, int64_t out) {
    return ((i + 1) * in + out - 1) / out;
}

/* Checks x and output_size; writes the output sizes. */
static bool adaptive_front(const char *op, const gf_tensor *x, const int64_t *output_size,
                           int64_t *o) {
    char b[128];
    if (!output_size) {
        gf__null_arg_of(op, "output_size", GF__ARG_ARRAY);
        return false;
    }
    if (x->rank != 3 && x->rank != 4) {
        gf__error(GF_ERR_SHAPE, "%s: expected 3-D or 4-D input, got %s", op,
                  gf__shape_str(x->sizes, x->rank, b, sizeof b));
        return false;
    }
    if (!check_float(op, "x", x)) return false;
    for (int i = x->rank - 3; i < x->rank; i++)
        if (x->sizes[i] == 0) {
            gf__error(GF_ERR_SHAPE, "%s: expected input to have non-zero size for non-batch "
                      "dimensions, but input has sizes %s with dimension %d being empty", op,
                      gf__shape_str(x->sizes, x->rank, b, sizeof b), i);
            return false;
        }
    for (int a = 0; a < 2; a++) {
        int64_t in = x->sizes[x->rank - 2 + a];
        o[a] = output_size[a] < 0 ? in : output_size[a];
        /* (i + 1) * in + out - 1 must fit in int64 for the window bounds */
        int64_t t;
        if (!gf__add_ok(o[a], 1, &t) || !gf__mul_ok(t, in, &t) || !gf__add_ok(t, o[a], &t)) {
            gf__error(GF_ERR_OVERFLOW, "%s: output size %lld with input size %lld is too large",
                      op, (long long)o[a], (long long)in);
            return false;
        }
    }
    return true;
}

/* The [out, in] matrix averaging each window of an axis (rows sum to 1). */
static gf_tensor *avg_matrix(int64_t in, int64_t out, bool transposed, gf_dtype dt,
                             gf_device *dev, const char *op) {
    int64_t n;
    if (!gf__mul_ok(in, out, &n)) {
        gf__error(GF_ERR_OVERFLOW, "%s: a pooling matrix of %lld x %lld is too large", op,
                  (long long)out, (long long)in);
        return NULL;
    }
    double *m = host_alloc(n, sizeof(double), op);
    if (!m) return NULL;
    memset(m, 0, (size_t)n * sizeof(double));
    for (int64_t i = 0; i < out; i++) {
        int64_t a = win_start(i, in, out), e = win_end(i, in, out);
        for (int64_t h = a; h < e; h++) {
            double v = 1.0 / (double)(e - a);
            if (transposed) m[h * out + i] = v;
            else m[i * in + h] = v;
        }
    }
    int64_t sz[2] = {transposed ? in : out, transposed ? out : in};
    gf_tensor *t = NULL;
    if (dt == GF_F64) {
        t = upload(m, sz, 2, GF_F64, dev);
    } else {
        float *f = host_alloc(n, sizeof(float), op);
        if (f) {
            for (int64_t i = 0; i < n; i++) f[i] = (float)m[i];
            t = upload(f, sz, 2, GF_F32, dev);
            free(f);
        }
        if (t && dt != GF_F32) {
            gf_tensor *c = gf_to_dtype(t, dt);
            gf_tensor_release(t);
            t = c;
        }
    }
    free(m);
    return t;
}

/* Pooling with kernel = stride when both axes divide evenly. */
static bool uniform_windows(const gf_tensor *x, const int64_t *o, gf_pool2d_opts *p) {
    memset(p, 0, sizeof *p);
    for (int a = 0; a < 2; a++) {
        int64_t in = x->sizes[x->rank - 2 + a];
        if (o[a] == 0 || in % o[a] || in / o[a] > INT_MAX) return false;
        p->kernel[a] = p->stride[a] = (int)(in / o[a]);
    }
    return true;
}

gf_tensor *gf_adaptive_avg_pool2d(const gf_tensor *x, const int64_t output_size[2]) {
    const char *op = "adaptive_avg_pool2d";
    if (!x) {
        gf__null_arg(op, "x");
        return NULL;
    }
    int64_t o[2];
    if (!adaptive_front(op, x, output_size, o)) return NULL;
    int s = gf__scope_suspend();
    tmps l = {0}, *L = &l;
    gf_pool2d_opts p;
    gf_tensor *y;
    if (uniform_windows(x, o, &p)) {
        y = T(gf_avg_pool2d(x, &p));
    } else {
        /* Separable: y = Ph x Pw^T. */
        int64_t h = x->sizes[x->rank - 2], w = x->sizes[x->rank - 1];
        gf_device *dev = x->storage->device;
        gf_tensor *pw = L->bad ? NULL : T(avg_matrix(w, o[1], true, x->dtype, dev, op));
        gf_tensor *ph = L->bad ? NULL : T(avg_matrix(h, o[0], false, x->dtype, dev, op));
        y = T(gf_matmul(ph, T(gf_matmul(x, pw))));
    }
    y = finish(L, y);
    gf__scope_resume(s);
    return ret_new(y);
}

/* Window index table of one axis: out rows of k entries, row i holding the
 * window's positions, padded with its first position (a repeat never
 * changes a max, and comes after the original in row-major order). */
static int64_t *window_table(int64_t in, int64_t out, int64_t *k, const char *op) {
    int64_t kmax = 1;
    for (int64_t i = 0; i < out; i++) {
        int64_t len = win_end(i, in, out) - win_start(i, in, out);
        if (len > kmax) kmax = len;
    }
    int64_t n;
    if (!gf__mul_ok(out, kmax, &n)) {
        gf__error(GF_ERR_OVERFLOW, "%s: a window table of %lld x %lld is too large", op,
                  (long long)out, (long long)kmax);
        return NULL;
    }
    int64_t *t = host_alloc(n, sizeof(int64_t), op);
    if (!t) return NULL;
    for (int64_t i = 0; i < out; i++) {
        int64_t a = win_start(i, in, out), len = win_end(i, in, out) - a;
        for (int64_t j = 0; j < kmax; j++) t[i * kmax + j] = a + (j < len ? j : 0);
    }
    *k = kmax;
    return t;
}

gf_tensor *gf_adaptive_max_pool2d(const gf_tensor *x, const int64_t output_size[2],
                                  gf_tensor **indices) {
    const char *op = "adaptive_max_pool2d";
    if (indices) *indices = NULL;
    if (!x) {
        gf__null_arg(op, "x");
        return NULL;
    }
    int64_t o[2];
    if (!adaptive_front(op, x, output_size, o)) return NULL;
    int s = gf__scope_suspend();
    tmps l = {0}, *L = &l;
    gf_pool2d_opts p;
    gf_tensor *y = NULL, *idx = NULL;
    if (uniform_windows(x, o, &p)) {
        gf_tensor *ix = NULL;
        y = T(gf_max_pool2d(x, &p, &ix));
        idx = T(ix);
    } else {
        gf_device *dev = x->storage->device;
        int64_t h = x->sizes[x->rank - 2], w = x->sizes[x->rank - 1], kh = 0, kw = 0;
        int64_t *rt = window_table(h, o[0], &kh, op);
        int64_t *ct = rt ? window_table(w, o[1], &kw, op) : NULL;
        int64_t nf = 0, oo, kk;
        int64_t *ft = NULL;
        if (ct && gf__mul_ok(o[0], o[1], &oo) && gf__mul_ok(kh, kw, &kk) &&
            gf__mul_ok(oo, kk, &nf))
            ft = host_alloc(nf, sizeof(int64_t), op);
        else if (ct)
            gf__error(GF_ERR_OVERFLOW, "%s: the window tables are too large", op);
        if (!ft) L->bad = true;
        if (ft) /* flat input position of each window element, row-major */
            for (int64_t i = 0; i < o[0]; i++)
                for (int64_t j = 0; j < o[1]; j++)
                    for (int64_t a = 0; a < kh; a++)
                        for (int64_t b = 0; b < kw; b++)
                            ft[((i * o[1] + j) * kh + a) * kw + b] =
                                rt[i * kh + a] * w + ct[j * kw + b];
        int64_t nr = o[0] * kh, nc = o[1] * kw;
        gf_tensor *ri = L->bad ? NULL : T(upload(rt, &nr, 1, GF_I64, dev));
        gf_tensor *ci = L->bad ? NULL : T(upload(ct, &nc, 1, GF_I64, dev));
        int64_t fs[4] = {o[0], o[1], kh * kw};
        gf_tensor *fl = L->bad ? NULL : T(upload(ft, fs, 3, GF_I64, dev));
        free(rt);
        free(ct);
        free(ft);
        gf_tensor *x4 = x->rank == 4 ? (gf_tensor *)x : T(gf_unsqueeze(x, 0));
        int64_t n = x4 ? x4->sizes[0] : 0, c = x4 ? x4->sizes[1] : 0;
        int64_t s5[5] = {n, c, o[0], kh, w};
        gf_tensor *a = T(gf_reshape(T(gf_index_select(x4, 2, ri)), s5, 5));
        int64_t s6[6] = {n, c, o[0], kh, o[1], kw};
        gf_tensor *bsel = T(gf_reshape(T(gf_index_select(a, 4, ci)), s6, 6));
        static const int perm[6] = {0, 1, 2, 4, 3, 5};
        int64_t s5b[5] = {n, c, o[0], o[1], kh * kw};
        gf_tensor *win = T(gf_reshape(T(gf_permute(bsel, perm, 6)), s5b, 5));
        gf_tensor *v = NULL, *arg = NULL;
        if (!L->bad && gf_max_dim(win, 4, true, &v, &arg) != GF_OK) L->bad = true;
        T(v);
        T(arg);
        gf_tensor *fe = T(gf_expand(fl, s5b, 5));
        y = T(gf_squeeze(v, 4));
        idx = T(gf_squeeze(T(gf_gather(fe, 4, arg)), 4));
        if (x->rank == 3) {
            y = T(gf_squeeze(y, 0));
            idx = T(gf_squeeze(idx, 0));
        }
    }
    gf_tensor *ix = indices ? finish_keep(L, idx) : NULL;
    y = finish(L, y);
    if (!y) {
        gf_tensor_release(ix);
        ix = NULL;
    }
    gf__scope_resume(s);
    if (indices) *indices = ret_new(ix);
    return ret_new(y);
}

/* ------------------------------------------------------------ interpolate */

static const char *mode_name(gf_interp_mode m) {
    switch (m) {
    case GF_INTERP_NEAREST: return "nearest";
    case GF_INTERP_NEAREST_EXACT: return "nearest-exact";
    case GF_INTERP_LINEAR: return "linear";
    case GF_INTERP_BILINEAR: return "bilinear";
    case GF_INTERP_AREA: return "area";
    }
    return "?";
}

/* PyTorch's compute_scales_value: 1 / scale when given, else in / out. */
static double scales_value(double scale, int64_t in, int64_t out) {
    return scale > 0 ? 1.0 / scale : (double)in / (double)out;
}

/* Resamples axis `axis` of y from in to out elements. */
static gf_tensor *resample_axis(tmps *L, gf_tensor *y, int axis, int64_t in, int64_t out,
                                double scale, const gf_interpolate_opts *o, const char *op) {
    if (L->bad) return NULL;
    gf_device *dev = y->storage->device;
    int64_t *i0 = host_alloc(out, sizeof(int64_t), op);
    int64_t *i1 = i0 ? host_alloc(out, sizeof(int64_t), op) : NULL;
    double *l0 = i1 ? host_alloc(out, sizeof(double), op) : NULL;
    double *l1 = l0 ? host_alloc(out, sizeof(double), op) : NULL;
    if (!l1) {
        free(i0);
        free(i1);
        free(l0);
        L->bad = true;
        return NULL;
    }
    bool linear = o->mode == GF_INTERP_LINEAR || o->mode == GF_INTERP_BILINEAR;
    if (!linear) {
        /* in f32, as PyTorch's nearest_idx */
        float sc = (float)scales_value(scale, in, out);
        for (int64_t d = 0; d < out; d++) {
            int64_t src;
            if (o->mode == GF_INTERP_NEAREST_EXACT)
                src = (int64_t)floorf(((float)d + 0.5f) * sc);
            else if (out == in)
                src = d;
            else if (out == 2 * in)
                src = d >> 1;
            else
                src = (int64_t)floorf((float)d * sc);
            i0[d] = src < in - 1 ? src : in - 1;
        }
    } else {
        double sc = o->align_corners ? (out > 1 ? (double)(in - 1) / (double)(out - 1) : 0.0)
                                     : scales_value(scale, in, out);
        for (int64_t d = 0; d < out; d++) {
            double src = o->align_corners ? sc * (double)d : sc * ((double)d + 0.5) - 0.5;
            if (src < 0) src = 0;
            int64_t a = (int64_t)floor(src);
            if (a > in - 1) a = in - 1;
            double lam = src - (double)a;
            lam = lam < 0 ? 0 : lam > 1 ? 1 : lam;
            i0[d] = a;
            i1[d] = a < in - 1 ? a + 1 : a;
            l1[d] = lam;
            l0[d] = 1.0 - lam;
        }
    }
    gf_tensor *t0 = T(upload(i0, &out, 1, GF_I64, dev));
    gf_tensor *r;
    if (!linear) {
        r = T(gf_index_select(y, axis, t0));
    } else {
        gf_tensor *t1 = T(upload(i1, &out, 1, GF_I64, dev));
        gf_tensor *w0 = L->bad ? NULL : T(axis_vector(l0, out, axis, y->rank, y->dtype, dev, op));
        gf_tensor *w1 = L->bad ? NULL : T(axis_vector(l1, out, axis, y->rank, y->dtype, dev, op));
        r = T(gf_add(T(gf_mul(T(gf_index_select(y, axis, t0)), w0)),
                     T(gf_mul(T(gf_index_select(y, axis, t1)), w1))));
    }
    free(i0);
    free(i1);
    free(l0);
    free(l1);
    return r;
}

gf_tensor *gf_interpolate(const gf_tensor *x, const gf_interpolate_opts *opts) {
    const char *op = "interpolate";
    if (!x || !opts) {
        gf__null_arg_of(op, !x ? "x" : "opts", !x ? GF__ARG_TENSOR : GF__ARG_OPTIONS);
        return NULL;
    }
    char b[128];
    gf__shape_str(x->sizes, x->rank, b, sizeof b);
    if (x->rank != 3 && x->rank != 4) {
        gf__error(GF_ERR_SHAPE, "interpolate: expected 3-D [N, C, L] or 4-D [N, C, H, W] input, "
                  "got %s (5-D trilinear and bicubic are not supported)", b);
        return NULL;
    }
    if (!check_float(op, "x", x)) return NULL;
    gf_interp_mode m = opts->mode;
    if (m != GF_INTERP_NEAREST && m != GF_INTERP_NEAREST_EXACT && m != GF_INTERP_LINEAR &&
        m != GF_INTERP_BILINEAR && m != GF_INTERP_AREA) {
        gf__error(GF_ERR_INVALID, "interpolate: unknown mode %d; use GF_INTERP_NEAREST, "
                  "_NEAREST_EXACT, _LINEAR, _BILINEAR or _AREA", (int)m);
        return NULL;
    }
    if ((m == GF_INTERP_LINEAR && x->rank != 3) || (m == GF_INTERP_BILINEAR && x->rank != 4)) {
        gf__error(GF_ERR_SHAPE, "interpolate: got %d-D input %s, but %s mode needs %d-D input",
                  x->rank, b, mode_name(m), m == GF_INTERP_LINEAR ? 3 : 4);
        return NULL;
    }
    if (opts->align_corners && m != GF_INTERP_LINEAR && m != GF_INTERP_BILINEAR) {
        gf__error(GF_ERR_INVALID, "interpolate: align_corners option can only be set with the "
                  "interpolating modes: linear | bilinear (mode is %s)", mode_name(m));
        return NULL;
    }
    int nsp = x->rank - 2;
    int64_t in[2] = {0, 0}, out[2] = {0, 0};
    double scale[2] = {0, 0};
    bool have_size = opts->size[0] != 0 || (nsp == 2 && opts->size[1] != 0);
    bool have_scale = opts->scale_factor[0] != 0 || (nsp == 2 && opts->scale_factor[1] != 0);
    if (have_size == have_scale) {
        gf__error(GF_ERR_INVALID, "interpolate: %s", have_size
                  ? "only one of size or scale_factor should be defined"
                  : "either size or scale_factor should be defined");
        return NULL;
    }
    for (int a = 0; a < nsp; a++) {
        in[a] = x->sizes[2 + a];
        if (have_size) {
            if (opts->size[a] <= 0) {
                gf__error(GF_ERR_INVALID, "interpolate: size[%d] must be > 0 (given for every "
                          "spatial dim), got %lld", a, (long long)opts->size[a]);
                return NULL;
            }
            out[a] = opts->size[a];
        } else {
            double sf = opts->scale_factor[a];
            if (!(sf > 0) || !isfinite(sf)) {
                gf__error(GF_ERR_INVALID, "interpolate: scale_factor[%d] must be finite and > 0 "
                          "(given for every spatial dim), got %g", a, sf);
                return NULL;
            }
            double o = floor((double)in[a] * sf);
            if (!gf__double_to_i64(o, &out[a])) {
                gf__error(GF_ERR_OVERFLOW, "interpolate: scale_factor %g gives an output size "
                          "beyond int64", sf);
                return NULL;
            }
            scale[a] = opts->recompute_scale_factor ? 0 : sf;
        }
        if (in[a] < 1 || out[a] < 1) {
            gf__error(GF_ERR_INVALID, "interpolate: input and output sizes should be greater than "
                      "0, but got input %s and output size %lld in spatial dim %d", b,
                      (long long)out[a], a);
            return NULL;
        }
    }
    int s = gf__scope_suspend();
    tmps l = {0}, *L = &l;
    gf_tensor *y;
    if (m == GF_INTERP_AREA) {
        if (nsp == 2) {
            y = T(gf_adaptive_avg_pool2d(x, out));
        } else {
            int64_t o2[2] = {1, out[0]};
            y = T(gf_squeeze(T(gf_adaptive_avg_pool2d(T(gf_unsqueeze(x, 2)), o2)), 2));
        }
    } else {
        y = (gf_tensor *)x;
        for (int a = 0; a < nsp; a++)
            y = resample_axis(L, y, 2 + a, in[a], out[a], scale[a], opts, op);
    }
    y = finish(L, y);
    gf__scope_resume(s);
    return ret_new(y);
}

/* ------------------------------------------------------------ embedding */

gf_tensor *gf_embedding_padding_idx(const gf_tensor *weight, const gf_tensor *indices,
                                    int64_t padding_idx) {
    const char *op = "embedding";
    if (!weight || !indices) {
        gf__null_arg(op, !weight ? "weight" : "indices");
        return NULL;
    }
    char b[128];
    if (weight->rank != 2) {
        gf__error(GF_ERR_SHAPE, "embedding: weight must be 2-D [num_embeddings, embedding_dim], "
                  "got shape %s", gf__shape_str(weight->sizes, weight->rank, b, sizeof b));
        return NULL;
    }
    int64_t num = weight->sizes[0];
    if (padding_idx < -num || padding_idx >= num) {
        gf__error(GF_ERR_INDEX, "embedding: padding_idx %lld must be within num_embeddings "
                  "(in [%lld, %lld))", (long long)padding_idx, (long long)-num, (long long)num);
        return NULL;
    }
    if (padding_idx < 0) padding_idx += num;
    int s = gf__scope_suspend();
    tmps l = {0}, *L = &l;
    gf_tensor *y = T(gf_embedding(weight, indices));
    if (y && gf_tensor_requires_grad(y)) {
        /* The padding rows' values without history: no gradient flows to
         * weight's row padding_idx. */
        gf_tensor *keep = T(gf_unsqueeze(T(gf_ne_scalar_int(indices, padding_idx)), -1));
        y = T(gf_where(keep, y, T(gf_detach(y))));
    }
    y = finish(L, y);
    gf__scope_resume(s);
    return ret_new(y);
}

/* ------------------------------------------------------------ attention */

gf_tensor *gf_scaled_dot_product_attention(const gf_tensor *q, const gf_tensor *k,
                                           const gf_tensor *v, const gf_tensor *attn_mask,
                                           double dropout_p, bool is_causal, double scale) {
    GF__AMP_HOOK(SDPA, 4, gf_scaled_dot_product_attention(amp_v[0], amp_v[1], amp_v[2], amp_v[3], dropout_p, is_causal, scale), q, k, v, attn_mask);
    const char *op = "scaled_dot_product_attention";
    if (!q || !k || !v) {
        gf__null_arg(op, !q ? "query" : !k ? "key" : "value");
        return NULL;
    }
    char bq[128], bk[128], bv[128], bm[128];
    gf__shape_str(q->sizes, q->rank, bq, sizeof bq);
    gf__shape_str(k->sizes, k->rank, bk, sizeof bk);
    gf__shape_str(v->sizes, v->rank, bv, sizeof bv);
    if (q->rank < 2 || k->rank < 2 || v->rank < 2) {
        gf__error(GF_ERR_SHAPE, "%s: query, key and value must have at least 2 dims "
                  "[..., L, E], got %s, %s, %s", op, bq, bk, bv);
        return NULL;
    }
    if (!check_float(op, "query", q) || !check_like(op, "key", k, q) ||
        !check_like(op, "value", v, q))
        return NULL;
    int64_t e = q->sizes[q->rank - 1], len = q->sizes[q->rank - 2], src = k->sizes[k->rank - 2];
    if (k->sizes[k->rank - 1] != e || v->sizes[v->rank - 2] != src) {
        gf__error(GF_ERR_SHAPE, "%s: expected query [..., L, E], key [..., S, E] and value "
                  "[..., S, Ev], got %s, %s, %s", op, bq, bk, bv);
        return NULL;
    }
    int64_t bs[GF_MAX_RANK], bs2[GF_MAX_RANK];
    int br = 0, br2 = 0;
    if (gf__broadcast_shapes(q->sizes, q->rank - 2, k->sizes, k->rank - 2, bs, &br, op) != GF_OK ||
        gf__broadcast_shapes(bs, br, v->sizes, v->rank - 2, bs2, &br2, op) != GF_OK)
        return NULL;
    if (!(dropout_p >= 0 && dropout_p <= 1)) {
        gf__error(GF_ERR_INVALID, "%s: dropout_p must be in [0, 1], got %g", op, dropout_p);
        return NULL;
    }
    if (isinf(scale)) {
        gf__error(GF_ERR_INVALID, "%s: scale must be finite (NAN for 1 / sqrt(E)), got %g", op,
                  scale);
        return NULL;
    }
    if (is_causal && attn_mask) {
        gf__error(GF_ERR_INVALID, "%s: explicit attn_mask should not be set when is_causal is "
                  "true", op);
        return NULL;
    }
    if (attn_mask) {
        if (!gf__same_device(q, attn_mask, op)) return NULL;
        if (attn_mask->dtype != GF_BOOL && attn_mask->dtype != q->dtype) {
            gf__error(GF_ERR_DTYPE, "%s: attn_mask must be bool or of the query's dtype %s, got "
                      "%s", op, gf_dtype_name(q->dtype), gf_dtype_name(attn_mask->dtype));
            return NULL;
        }
        int64_t ss[GF_MAX_RANK], sc[GF_MAX_RANK];
        memcpy(ss, bs2, sizeof(int64_t) * (size_t)br2);
        ss[br2] = len;
        ss[br2 + 1] = src;
        int rr = 0;
        if (gf__broadcast_shapes(ss, br2 + 2, attn_mask->sizes, attn_mask->rank, sc, &rr, op) !=
                GF_OK ||
            rr != br2 + 2 || memcmp(sc, ss, sizeof(int64_t) * (size_t)rr)) {
            gf__error(GF_ERR_SHAPE, "%s: attn_mask of shape %s must broadcast to the scores' "
                      "shape %s", op,
                      gf__shape_str(attn_mask->sizes, attn_mask->rank, bm, sizeof bm),
                      gf__shape_str(ss, br2 + 2, bk, sizeof bk));
            return NULL;
        }
    }
    if (isnan(scale)) scale = e > 0 ? 1.0 / sqrt((double)e) : 1.0;
    int s = gf__scope_suspend();
    tmps l = {0}, *L = &l;
    gf_device *dev = q->storage->device;
    gf_tensor *sc = T(gf_mul_scalar(T(gf_matmul(q, T(gf_transpose(k, -2, -1)))), scale));
    const gf_tensor *mask = attn_mask;
    if (is_causal) {
        int64_t ms[2] = {len, src};
        mask = T(gf_tril(T(gf_ones(ms, 2, GF_BOOL, dev)), 0));
    }
    if (mask) {
        if (mask->dtype == GF_BOOL) sc = T(gf_masked_fill(sc, T(gf_logical_not(mask)), -INFINITY));
        else sc = T(gf_add(sc, mask));
        /* Rows that may attend to nothing: softmax over finite zeros, then
         * zeroed (PyTorch's safe softmax), so no NaN reaches any gradient. */
        static const int last[1] = {-1};
        gf_tensor *ok = T(gf_gt_scalar_int(T(gf_sum(T(gf_gt_scalar(sc, -INFINITY)), last, 1,
                                                    true)), 0));
        gf_tensor *zero = T(gf_scalar(0.0, q->dtype, dev));
        gf_tensor *att = T(gf_softmax(T(gf_where(ok, sc, zero)), -1));
        sc = T(gf_where(ok, att, zero));
    } else {
        sc = T(gf_softmax(sc, -1));
    }
    if (dropout_p > 0) sc = T(gf_dropout(sc, dropout_p, true));
    gf_tensor *y = T(gf_matmul(sc, v));
    y = finish(L, y);
    gf__scope_resume(s);
    return ret_new(y);
}

/* ------------------------------------------------------------ linear */

gf_tensor *gf_linear(const gf_tensor *x, const gf_tensor *weight, const gf_tensor *bias) {
    GF__AMP_HOOK(LINEAR, 3, gf_linear(amp_v[0], amp_v[1], amp_v[2]), x, weight, bias);
    const char *op = "linear";
    if (!x || !weight) {
        gf__null_arg(op, !x ? "x" : "weight");
        return NULL;
    }
    char bx[128], bw[128];
    gf__shape_str(x->sizes, x->rank, bx, sizeof bx);
    gf__shape_str(weight->sizes, weight->rank, bw, sizeof bw);
    if (weight->rank != 2 || x->rank < 1 || x->sizes[x->rank - 1] != weight->sizes[1]) {
        gf__error(GF_ERR_SHAPE, "linear: expected input [..., in] and weight [out, in], got input "
                  "%s and weight %s", bx, bw);
        return NULL;
    }
    /* complex too, as torch's linear: x W^T + b, no conjugation */
    if (!gf_dtype_is_complex(x->dtype) && !check_float(op, "x", x)) return NULL;
    if (!check_like(op, "weight", weight, x) ||
        !check_like(op, "bias", bias, x) ||
        !check_vec(op, "bias", bias, weight->sizes[0], "weight's dim 0"))
        return NULL;
    int s = gf__scope_suspend();
    tmps l = {0}, *L = &l;
    gf_tensor *y = T(gf_matmul(x, T(gf_transpose(weight, 0, 1))));
    if (bias) y = T(gf_add(y, bias));
    y = finish(L, y);
    gf__scope_resume(s);
    return ret_new(y);
}
