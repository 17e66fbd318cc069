/* SPDX-License-Identifier: BSD-3-Clause */
/* init_more.c — torch.nn.init.orthogonal_ and trunc_normal_.
 *
 * Both draw their random numbers from graft's generator on the tensor's
 * device, read them back and finish on the host in f64 (a Householder QR
 * for orthogonal_, the inverse normal CDF for trunc_normal_), then copy the
 * result into the tensor under no-grad, as the other initialisers do. They
 * are initialisers, run once per parameter: the host round trip is cheap
 * next to training, and the same code serves every device. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ag_internal.h"

static gf_status init_check(const char *op, const gf_tensor *t) {
    if (!t) return gf__error(GF_ERR_INVALID, "%s: tensor is NULL", op);
    if (!gf_dtype_is_float(gf_tensor_dtype(t)))
        return gf__error(GF_ERR_DTYPE, "%s: the tensor has dtype %s; initialisers fill float "
                         "tensors", op, gf_dtype_name(gf_tensor_dtype(t)));
    return GF_OK;
}

static bool stores(const gf_device *dev, gf_dtype dt) {
    gf_device_info info;
    return gf_device_get_info(dev, &info) == GF_OK && (info.dtypes & (1u << dt));
}

/* n numbers from graft's generator on dev (normal or uniform in [0, 1)),
 * in f64 where the device stores it, read back as f64. */
static double *draw(const char *op, gf_device *dev, int64_t n, bool normal) {
    double *out = malloc(sizeof(double) * (size_t)n);
    if (!out) {
        gf__error(GF_ERR_OUT_OF_MEMORY, "%s: no memory for %lld values", op, (long long)n);
        return NULL;
    }
    gf_dtype dt = stores(dev, GF_F64) ? GF_F64 : GF_F32;
    int sc = gf__scope_suspend();
    gf_tensor *r = normal ? gf_randn(&n, 1, dt, dev) : gf_rand(&n, 1, dt, dev);
    gf_status s = r ? GF_OK : gf__status();
    if (r && dt == GF_F64) {
        s = gf_tensor_to_host(r, out, sizeof(double) * (size_t)n);
    } else if (r) {
        float *f = malloc(sizeof(float) * (size_t)n);
        s = f ? gf_tensor_to_host(r, f, sizeof(float) * (size_t)n)
              : gf__error(GF_ERR_OUT_OF_MEMORY, "%s: no memory for %lld values", op, (long long)n);
        for (int64_t i = 0; s == GF_OK && i < n; i++) out[i] = f[i];
        free(f);
    }
    gf_tensor_release(r);
    gf__scope_resume(sc);
    if (s != GF_OK) {
        free(out);
        return NULL;
    }
    return out;
}

/* Copies row-major host values into t (its shape) under no-grad. */
static gf_status store(const char *op, gf_tensor *t, const double *v) {
    int64_t n = gf_tensor_numel(t);
    gf_device *dev = gf_tensor_device(t);
    gf_dtype dt = stores(dev, GF_F64) ? GF_F64 : GF_F32;
    const void *buf = v;
    float *f = NULL;
    if (dt == GF_F32) {
        f = malloc(sizeof(float) * (size_t)n);
        if (!f) return gf__error(GF_ERR_OUT_OF_MEMORY, "%s: no memory for %lld values", op,
                                 (long long)n);
        for (int64_t i = 0; i < n; i++) f[i] = (float)v[i];
        buf = f;
    }
    int sc = gf__scope_suspend();
    gf_tensor *src = gf_from_data(buf, gf_tensor_sizes(t), gf_tensor_rank(t), dt, dev);
    gf_status s = src ? GF_OK : gf__status();
    if (src) {
        gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
        s = gf_copy_(t, src);
        gf_grad_mode_set(prev);
    }
    gf_tensor_release(src);
    gf__scope_resume(sc);
    free(f);
    return s;
}

/* Householder QR of the m x n row-major matrix a (m >= n), overwritten: q
 * (m x n, row-major) receives the reduced Q, d the diagonal of R. */
static void householder_qr(double *a, int64_t m, int64_t n, double *q, double *d, double *v) {
    /* v holds the n reflectors, each of length m (zero above its start) */
    for (int64_t k = 0; k < n; k++) {
        double norm = 0;
        for (int64_t i = k; i < m; i++) norm += a[i * n + k] * a[i * n + k];
        norm = sqrt(norm);
        double *vk = v + k * m;
        memset(vk, 0, sizeof(double) * (size_t)m);
        if (norm == 0) {
            d[k] = 0;
            continue;
        }
        double alpha = a[k * n + k] > 0 ? -norm : norm;
        for (int64_t i = k; i < m; i++) vk[i] = a[i * n + k];
        vk[k] -= alpha;
        double vn = 0;
        for (int64_t i = k; i < m; i++) vn += vk[i] * vk[i];
        vn = sqrt(vn);
        if (vn == 0) {
            d[k] = a[k * n + k];
            continue;
        }
        for (int64_t i = k; i < m; i++) vk[i] /= vn;
        for (int64_t j = k; j < n; j++) {
            double s = 0;
            for (int64_t i = k; i < m; i++) s += vk[i] * a[i * n + j];
            for (int64_t i = k; i < m; i++) a[i * n + j] -= 2 * s * vk[i];
        }
        d[k] = a[k * n + k];
    }
    /* Q = H_0 ... H_{n-1} applied to the first n columns of the identity */
    memset(q, 0, sizeof(double) * (size_t)(m * n));
    for (int64_t i = 0; i < n; i++) q[i * n + i] = 1;
    for (int64_t k = n - 1; k >= 0; k--) {
        const double *vk = v + k * m;
        for (int64_t j = 0; j < n; j++) {
            double s = 0;
            for (int64_t i = k; i < m; i++) s += vk[i] * q[i * n + j];
            if (s == 0) continue;
            for (int64_t i = k; i < m; i++) q[i * n + j] -= 2 * s * vk[i];
        }
    }
}

gf_status gf_init_orthogonal_(gf_tensor *t, double gain) {
    const char *op = "init_orthogonal_";
    gf_status s = init_check(op, t);
    if (s != GF_OK) return s;
    if (gf_tensor_rank(t) < 2)
        return gf__error(GF_ERR_SHAPE, "%s: only tensors with 2 or more dimensions are "
                         "supported (got rank %d), as in PyTorch", op, gf_tensor_rank(t));
    if (!isfinite(gain))
        return gf__error(GF_ERR_INVALID, "%s: gain must be finite, got %g", op, gain);
    int64_t numel = gf_tensor_numel(t);
    if (numel == 0) return GF_OK; /* PyTorch: a no-op (with a warning) */
    if (numel > ((int64_t)1 << 28))
        return gf__error(GF_ERR_INVALID, "%s: %lld elements are too many for the host QR (at "
                         "most 2^28)", op, (long long)numel);
    int64_t rows = gf_tensor_sizes(t)[0], cols = numel / rows;
    bool wide = rows < cols;
    int64_t m = wide ? cols : rows, n = wide ? rows : cols; /* m >= n */
    double *g = draw(op, gf_tensor_device(t), numel, true);
    if (!g) return gf__status();
    double *a = malloc(sizeof(double) * (size_t)(m * n));
    double *q = malloc(sizeof(double) * (size_t)(m * n));
    double *v = malloc(sizeof(double) * (size_t)(m * n));
    double *d = malloc(sizeof(double) * (size_t)n);
    double *out = malloc(sizeof(double) * (size_t)numel);
    if (!a || !q || !v || !d || !out) {
        s = gf__error(GF_ERR_OUT_OF_MEMORY, "%s: no memory for a %lld x %lld QR", op,
                      (long long)m, (long long)n);
    } else {
        /* PyTorch: the normal matrix (rows x cols), transposed when wide */
        for (int64_t i = 0; i < rows; i++)
            for (int64_t j = 0; j < cols; j++) {
                if (wide) a[j * n + i] = g[i * cols + j];
                else a[i * n + j] = g[i * cols + j];
            }
        householder_qr(a, m, n, q, d, v);
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double sg = d[j] > 0 ? 1.0 : d[j] < 0 ? -1.0 : 0.0;
                double val = q[i * n + j] * sg * gain;
                if (wide) out[j * cols + i] = val;
                else out[i * cols + j] = val;
            }
        s = store(op, t, out);
    }
    free(g), free(a), free(q), free(v), free(d), free(out);
    return s;
}

/* The inverse of erf on [-1, 1]: Giles' single-precision approximation,
 * then Newton steps on erf in f64. */
static double erfinv(double y) {
    if (y <= -1) return y == -1 ? -INFINITY : NAN;
    if (y >= 1) return y == 1 ? INFINITY : NAN;
    double w = -log((1.0 - y) * (1.0 + y)), p;
    if (w < 5.0) {
        w -= 2.5;
        p = 2.81022636e-08;
        p = 3.43273939e-07 + p * w;
        p = -3.5233877e-06 + p * w;
        p = -4.39150654e-06 + p * w;
        p = 0.00021858087 + p * w;
        p = -0.00125372503 + p * w;
        p = -0.00417768164 + p * w;
        p = 0.246640727 + p * w;
        p = 1.50140941 + p * w;
    } else {
        w = sqrt(w) - 3.0;
        p = -0.000200214257;
        p = 0.000100950558 + p * w;
        p = 0.00134934322 + p * w;
        p = -0.00367342844 + p * w;
        p = 0.00573950773 + p * w;
        p = -0.0076224613 + p * w;
        p = 0.00943887047 + p * w;
        p = 1.00167406 + p * w;
        p = 2.83297682 + p * w;
    }
    double x = p * y;
    for (int i = 0; i < 3; i++) {
        double e = erf(x) - y, der = 1.1283791670955126 * exp(-x * x);
        if (der == 0 || !isfinite(der)) break;
        x -= e / der;
    }
    return x;
}

static double norm_cdf(double x) { return (1.0 + erf(x / sqrt(2.0))) / 2.0; }

gf_status gf_init_trunc_normal_(gf_tensor *t, double mean, double std, double a, double b) {
    const char *op = "init_trunc_normal_";
    gf_status s = init_check(op, t);
    if (s != GF_OK) return s;
    if (!isfinite(mean) || !isfinite(std) || !(std >= 0))
        return gf__error(GF_ERR_INVALID, "%s: needs a finite mean and a finite std >= 0, got "
                         "mean = %g, std = %g", op, mean, std);
    if (isnan(a) || isnan(b) || !(a < b))
        return gf__error(GF_ERR_INVALID, "%s: needs bounds a < b (either may be infinite), got "
                         "a = %g, b = %g", op, a, b);
    int64_t n = gf_tensor_numel(t);
    if (n == 0) return GF_OK;
    if (n > ((int64_t)1 << 31))
        return gf__error(GF_ERR_INVALID, "%s: %lld elements are too many for one call (at most "
                         "2^31, drawn on the host); initialise slices of the tensor", op,
                         (long long)n);
    double *u = draw(op, gf_tensor_device(t), n, false);
    if (!u) return gf__status();
    if (std == 0) {
        for (int64_t i = 0; i < n; i++) u[i] = fmin(fmax(mean, a), b);
    } else {
        /* PyTorch's method: uniform in [2l - 1, 2u - 1], erfinv, scale, clamp */
        double l = norm_cdf((a - mean) / std), h = norm_cdf((b - mean) / std);
        for (int64_t i = 0; i < n; i++) {
            double x = erfinv((2 * l - 1) + u[i] * (2 * h - 2 * l)) * std * sqrt(2.0) + mean;
            u[i] = fmin(fmax(x, a), b);
        }
    }
    s = store(op, t, u);
    free(u);
    return s;
}
