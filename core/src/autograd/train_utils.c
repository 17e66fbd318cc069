/* SPDX-License-Identifier: BSD-3-Clause */
/* train_utils.c — gradient clipping (clip_grad_norm_, clip_grad_value_)
 * and parameter initialisers (torch.nn.init), written with public ops
 * under no-grad so they never enter a graph. */
#include <math.h>
#include <string.h>

#include "ag_internal.h"

static gf_status failed(const char *op) {
    gf_status s = gf__status();
    return s != GF_OK ? s : gf__error(GF_ERR_INVALID, "%s: an op failed", op);
}

static gf_status check_list(const char *op, gf_tensor *const *params, int n) {
    if (n < 0 || (n > 0 && !params))
        return gf__error(GF_ERR_INVALID, "%s: params is NULL or n (%d) is negative", op, n);
    for (int i = 0; i < n; i++)
        if (!params[i]) return gf__error(GF_ERR_INVALID, "%s: parameter %d is NULL", op, i);
    return GF_OK;
}

/* The p-norm of one gradient as a double (amax |g| for p = inf, sum
 * |g|^p for finite p, not yet rooted). */
static gf_status grad_norm_part(const char *op, const gf_tensor *g, double p, double *out) {
    *out = 0;
    if (gf_tensor_numel(g) == 0) return GF_OK;
    gf_tensor *a = gf_abs(g), *r = NULL;
    if (a && isinf(p)) {
        r = gf_amax(a, NULL, 0, false);
    } else if (a) {
        gf_tensor *pw = p == 1.0 ? gf_tensor_retain(a) : gf_pow_scalar(a, p);
        gf_tensor *pw64 = pw ? gf_to_dtype(pw, GF_F64) : NULL;
        r = pw64 ? gf_sum(pw64, NULL, 0, false) : NULL;
        gf_tensor_release(pw);
        gf_tensor_release(pw64);
    }
    gf_status s = r ? gf_tensor_item(r, out) : failed(op);
    gf_tensor_release(a);
    gf_tensor_release(r);
    return s;
}

gf_status gf_clip_grad_norm_(gf_tensor *const *params, int n, double max_norm, double norm_type,
                             bool error_if_nonfinite, double *total_norm) {
    const char *op = "clip_grad_norm_";
    if (total_norm) *total_norm = 0;
    gf_status s = check_list(op, params, n);
    if (s != GF_OK) return s;
    if (!(norm_type > 0) || (isinf(norm_type) && norm_type < 0))
        return gf__error(GF_ERR_INVALID, "%s: norm_type %g is not supported; use a p > 0 "
                         "(2 is the default) or INFINITY", op, norm_type);
    if (!(max_norm >= 0))
        return gf__error(GF_ERR_INVALID, "%s: max_norm must be >= 0, got %g", op, max_norm);
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    int scope = gf__scope_suspend();
    double acc = 0;
    for (int i = 0; i < n && s == GF_OK; i++) {
        gf_tensor *g = gf_tensor_grad(params[i]);
        if (!g) continue;
        double part = 0;
        s = grad_norm_part(op, g, norm_type, &part);
        if (isinf(norm_type))
            acc = (isnan(part) || part > acc) ? part : acc;
        else
            acc += part;
        gf_tensor_release(g);
    }
    double total = isinf(norm_type) ? acc : pow(acc, 1.0 / norm_type);
    if (s == GF_OK && error_if_nonfinite && !isfinite(total))
        s = gf__error(GF_ERR_INVALID, "%s: the total norm of order %g for gradients from "
                      "`parameters` is non-finite (%g), so it cannot be clipped; pass "
                      "error_if_nonfinite = false to scale anyway", op, norm_type, total);
    /* As PyTorch: every gradient times min(max_norm / (total + 1e-6), 1). */
    double coef = max_norm / (total + 1e-6);
    if (coef > 1.0) coef = 1.0;
    for (int i = 0; i < n && s == GF_OK; i++) {
        gf_tensor *g = gf_tensor_grad(params[i]);
        if (!g) continue;
        if (coef != 1.0) s = gf_mul_scalar_(g, coef);
        gf_tensor_release(g);
    }
    gf__scope_resume(scope);
    gf_grad_mode_set(prev);
    if (s == GF_OK && total_norm) *total_norm = total;
    return s;
}

gf_status gf_clip_grad_value_(gf_tensor *const *params, int n, double clip_value) {
    const char *op = "clip_grad_value_";
    gf_status s = check_list(op, params, n);
    if (s != GF_OK) return s;
    if (!(clip_value >= 0))
        return gf__error(GF_ERR_INVALID, "%s: clip_value must be >= 0, got %g", op, clip_value);
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    for (int i = 0; i < n && s == GF_OK; i++) {
        gf_tensor *g = gf_tensor_grad(params[i]);
        if (!g) continue;
        s = gf_clamp_(g, -clip_value, clip_value);
        gf_tensor_release(g);
    }
    gf_grad_mode_set(prev);
    return s;
}

/* ---------------------------------------------------------------- init */

static gf_status check_init(const char *op, const gf_tensor *t) {
    if (!t) return gf__error(GF_ERR_INVALID, "%s: tensor is NULL", op);
    if (!gf_dtype_is_float(gf_tensor_dtype(t)))
        return gf__error(GF_ERR_DTYPE, "%s: the tensor has dtype %s; initialisers fill float "
                         "tensors", op, gf_dtype_name(gf_tensor_dtype(t)));
    return GF_OK;
}

/* Copies src (consumed) into t under no-grad. */
static gf_status fill_from(const char *op, gf_tensor *t, gf_tensor *src) {
    if (!src) return failed(op);
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    gf_status s = gf_copy_(t, src);
    gf_grad_mode_set(prev);
    gf_tensor_release(src);
    return s;
}

static gf_status with_const(const char *op, gf_tensor *t, double v) {
    gf_status s = check_init(op, t);
    if (s != GF_OK) return s;
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    s = gf_fill_(t, v);
    gf_grad_mode_set(prev);
    return s;
}

gf_status gf_init_constant_(gf_tensor *t, double value) {
    return with_const("init_constant_", t, value);
}
gf_status gf_init_zeros_(gf_tensor *t) { return with_const("init_zeros_", t, 0.0); }
gf_status gf_init_ones_(gf_tensor *t) { return with_const("init_ones_", t, 1.0); }

static gf_status uniform(const char *op, gf_tensor *t, double a, double b) {
    if (gf_tensor_numel(t) == 0) return GF_OK;
    int s = gf__scope_suspend();
    gf_tensor *r = gf_rand_uniform(gf_tensor_sizes(t), gf_tensor_rank(t), a, b,
                                   gf_tensor_dtype(t), gf_tensor_device(t));
    gf_status st = fill_from(op, t, r);
    gf__scope_resume(s);
    return st;
}

static gf_status normal(const char *op, gf_tensor *t, double mean, double std) {
    if (gf_tensor_numel(t) == 0) return GF_OK;
    int s = gf__scope_suspend();
    gf_tensor *r = gf_rand_normal(gf_tensor_sizes(t), gf_tensor_rank(t), mean, std,
                                  gf_tensor_dtype(t), gf_tensor_device(t));
    gf_status st = fill_from(op, t, r);
    gf__scope_resume(s);
    return st;
}

gf_status gf_init_uniform_(gf_tensor *t, double a, double b) {
    const char *op = "init_uniform_";
    gf_status s = check_init(op, t);
    if (s != GF_OK) return s;
    if (!(a <= b) || !isfinite(a) || !isfinite(b))
        return gf__error(GF_ERR_INVALID, "%s: needs finite bounds a <= b, got a = %g, b = %g",
                         op, a, b);
    return uniform(op, t, a, b);
}

gf_status gf_init_normal_(gf_tensor *t, double mean, double std) {
    const char *op = "init_normal_";
    gf_status s = check_init(op, t);
    if (s != GF_OK) return s;
    if (!(std >= 0) || !isfinite(std) || !isfinite(mean))
        return gf__error(GF_ERR_INVALID, "%s: needs a finite mean and a finite std >= 0, got "
                         "mean = %g, std = %g", op, mean, std);
    return normal(op, t, mean, std);
}

gf_status gf_init_fans(const gf_tensor *t, int64_t *fan_in, int64_t *fan_out) {
    const char *op = "init_fans";
    if (!t) return gf__error(GF_ERR_INVALID, "%s: tensor is NULL", op);
    int rank = gf_tensor_rank(t);
    if (rank < 2)
        return gf__error(GF_ERR_SHAPE, "%s: fan in and fan out can not be computed for a tensor "
                         "with fewer than 2 dimensions (got rank %d)", op, rank);
    const int64_t *sz = gf_tensor_sizes(t);
    int64_t rf = 1;
    for (int d = 2; d < rank; d++) rf *= sz[d]; /* <= numel, which fits int64 */
    if (fan_in) *fan_in = sz[1] * rf;
    if (fan_out) *fan_out = sz[0] * rf;
    return GF_OK;
}

gf_status gf_init_calculate_gain(gf_nonlinearity nonlinearity, double param, double *gain) {
    double g;
    switch (nonlinearity) {
    case GF_NONLIN_LINEAR:
    case GF_NONLIN_SIGMOID: g = 1.0; break;
    case GF_NONLIN_TANH: g = 5.0 / 3.0; break;
    case GF_NONLIN_RELU: g = sqrt(2.0); break;
    case GF_NONLIN_LEAKY_RELU:
        if (isnan(param)) param = 0.01;
        if (!isfinite(param))
            return gf__error(GF_ERR_INVALID, "init_calculate_gain: negative_slope %g is not a "
                             "finite number", param);
        g = sqrt(2.0 / (1.0 + param * param));
        break;
    case GF_NONLIN_SELU: g = 3.0 / 4.0; break;
    default:
        return gf__error(GF_ERR_INVALID, "init_calculate_gain: unsupported nonlinearity %d; use "
                         "a gf_nonlinearity value", (int)nonlinearity);
    }
    if (gain) *gain = g;
    return GF_OK;
}

static gf_status xavier(const char *op, gf_tensor *t, double gain, bool is_uniform) {
    gf_status s = check_init(op, t);
    int64_t fi = 0, fo = 0;
    if (s == GF_OK) s = gf_init_fans(t, &fi, &fo);
    if (s != GF_OK) return s;
    if (!isfinite(gain))
        return gf__error(GF_ERR_INVALID, "%s: gain must be finite, got %g", op, gain);
    if (gf_tensor_numel(t) == 0) return GF_OK; /* PyTorch: a no-op (with a warning) */
    double std = gain * sqrt(2.0 / (double)(fi + fo));
    return is_uniform ? uniform(op, t, -sqrt(3.0) * std, sqrt(3.0) * std)
                      : normal(op, t, 0.0, std);
}

gf_status gf_init_xavier_uniform_(gf_tensor *t, double gain) {
    return xavier("init_xavier_uniform_", t, gain, true);
}
gf_status gf_init_xavier_normal_(gf_tensor *t, double gain) {
    return xavier("init_xavier_normal_", t, gain, false);
}

static gf_status kaiming(const char *op, gf_tensor *t, double a, gf_fan_mode mode,
                         gf_nonlinearity nl, bool is_uniform) {
    gf_status s = check_init(op, t);
    int64_t fi = 0, fo = 0;
    if (s == GF_OK) s = gf_init_fans(t, &fi, &fo);
    if (s != GF_OK) return s;
    if (mode != GF_FAN_IN && mode != GF_FAN_OUT)
        return gf__error(GF_ERR_INVALID, "%s: mode %d is not GF_FAN_IN or GF_FAN_OUT", op,
                         (int)mode);
    double gain = 0;
    s = gf_init_calculate_gain(nl, a, &gain);
    if (s != GF_OK) return s;
    if (gf_tensor_numel(t) == 0) return GF_OK;
    double std = gain / sqrt((double)(mode == GF_FAN_IN ? fi : fo));
    return is_uniform ? uniform(op, t, -sqrt(3.0) * std, sqrt(3.0) * std)
                      : normal(op, t, 0.0, std);
}

gf_status gf_init_kaiming_uniform_(gf_tensor *t, double a, gf_fan_mode mode,
                                   gf_nonlinearity nonlinearity) {
    return kaiming("init_kaiming_uniform_", t, a, mode, nonlinearity, true);
}
gf_status gf_init_kaiming_normal_(gf_tensor *t, double a, gf_fan_mode mode,
                                  gf_nonlinearity nonlinearity) {
    return kaiming("init_kaiming_normal_", t, a, mode, nonlinearity, false);
}
