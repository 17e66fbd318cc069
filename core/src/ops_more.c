/* SPDX-License-Identifier: BSD-3-Clause */
/* ops_more.c — small ops that PyTorch ports otherwise write by hand:
 * pixel_shuffle / pixel_unshuffle, flatten over a range of dims and
 * unflatten, add / sub with alpha (and their in-place forms), dot / vdot /
 * outer, the *_like random tensors, multinomial, and the in-place forms of
 * the activations PyTorch has in place.
 *
 * Every op is composed from public graft ops (no op id, no kernel of its
 * own), so it runs on every device those run on and its gradients of every
 * order come from their rules. multinomial is not differentiable: its
 * probabilities are read back to the host, the uniforms come from graft's
 * generator (gf_rand on the probabilities' device), and the picks are made
 * on the host in f64. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graft/complex.h"
#include "graft/ops_extra.h"
#include "graft/shape.h"
#include "autograd/ag_internal.h"

/* ------------------------------------------------------------ temporaries */
/* The temporaries of one composite: T(expr) evaluates expr only while every
 * earlier step succeeded and keeps its result for one release at the end;
 * the first failure's status and message are kept. */
typedef struct tmps {
    gf_tensor *t[32];
    int n;
    bool bad;
    gf_status st;
    char msg[512];
} tmps;

static gf_tensor *keep(tmps *l, gf_tensor *t) {
    if (!t || l->n == (int)(sizeof l->t / sizeof l->t[0])) {
        if (t) {
            gf_tensor_release(t);
            gf__error(GF_ERR_INVALID, "composite op: internal temporary list full");
        }
        if (!l->bad) {
            l->bad = true;
            l->st = gf__status() != GF_OK ? gf__status() : GF_ERR_INVALID;
            snprintf(l->msg, sizeof l->msg, "%s", gf__message() ? gf__message() : "");
        }
        return NULL;
    }
    l->t[l->n++] = t;
    return t;
}
#define T(expr) (L->bad ? NULL : keep(L, (expr)))

static gf_tensor *finish(tmps *l, gf_tensor *y) {
    gf_tensor *r = (!l->bad && y) ? gf_tensor_retain(y) : NULL;
    for (int i = 0; i < l->n; i++) gf_tensor_release(l->t[i]);
    l->n = 0;
    if (l->bad) gf__error(l->st, "%s", l->msg);
    return r;
}

#define BEGIN                               \
    int saved_scope_ = gf__scope_suspend(); \
    tmps L_ = {0};                          \
    tmps *L = &L_
#define END(y)                                  \
    gf_tensor *res_ = finish(L, (y));           \
    gf__scope_resume(saved_scope_);             \
    return res_ ? gf__ret(res_) : NULL

static bool device_stores(const gf_device *dev, gf_dtype dt) {
    gf_device_info info;
    return gf_device_get_info(dev, &info) == GF_OK && (info.dtypes & (1u << dt));
}

static int64_t prod(const int64_t *s, int from, int to) {
    int64_t p = 1;
    for (int i = from; i < to; i++) p *= s[i];
    return p;
}

/* ------------------------------------------------------------ pixel shuffle */
static bool pixel_checks(const gf_tensor *x, int64_t r, const char *op, const char *what) {
    if (!x) {
        gf__null_arg(op, "x");
        return false;
    }
    if (x->rank < 3) {
        gf__error(GF_ERR_SHAPE, "%s: expects the input to have at least 3 dimensions (..., C, H, "
                  "W), but got an input with %d dimension(s); unsqueeze it first", op, x->rank);
        return false;
    }
    if (r <= 0 || r > INT32_MAX) {
        gf__error(GF_ERR_INVALID, "%s: expects a positive %s (below 2^31), but got %lld", op,
                  what, (long long)r);
        return false;
    }
    return true;
}

/* An output size beyond int64 (an empty input's other sizes can be huge). */
static void pixel_overflow(const gf_tensor *x, int64_t r, const char *op) {
    char shape[160];
    gf__error(GF_ERR_OVERFLOW, "%s: the output of an input of sizes %s with factor %lld has a "
              "size beyond 2^63 - 1; use a smaller factor", op,
              gf__shape_str(x->sizes, x->rank, shape, sizeof shape), (long long)r);
}

/* x [B..., C r^2, H, W] -> [B..., C, H r, W r]: the batch dims are folded into
 * one so the six-dim intermediate fits any rank. */
gf_tensor *gf_pixel_shuffle(const gf_tensor *x, int64_t upscale_factor) {
    const char *op = "gf_pixel_shuffle";
    int64_t r = upscale_factor;
    if (!pixel_checks(x, r, op, "upscale_factor")) return NULL;
    int k = x->rank;
    int64_t c = x->sizes[k - 3], h = x->sizes[k - 2], w = x->sizes[k - 1];
    if (c % (r * r)) {
        gf__error(GF_ERR_SHAPE, "%s: expects its input's 'channel' dimension to be divisible by "
                  "the square of upscale_factor, but input.size(-3)=%lld is not divisible by "
                  "%lld", op, (long long)c, (long long)(r * r));
        return NULL;
    }
    int64_t oc = c / (r * r);
    int64_t s6[6] = {prod(x->sizes, 0, k - 3), oc, r, r, h, w};
    int64_t out[GF_MAX_RANK];
    memcpy(out, x->sizes, sizeof(int64_t) * (size_t)(k - 3));
    out[k - 3] = oc;
    if (!gf__mul_ok(h, r, &out[k - 2]) || !gf__mul_ok(w, r, &out[k - 1]))
        return pixel_overflow(x, r, op), NULL;
    static const int perm[6] = {0, 1, 4, 2, 5, 3};
    BEGIN;
    gf_tensor *v = T(gf_reshape(x, s6, 6));
    gf_tensor *p = T(gf_permute(v, perm, 6));
    gf_tensor *y = T(gf_reshape(p, out, k));
    END(y);
}

/* x [B..., C, H r, W r] -> [B..., C r^2, H, W]. */
gf_tensor *gf_pixel_unshuffle(const gf_tensor *x, int64_t downscale_factor) {
    const char *op = "gf_pixel_unshuffle";
    int64_t r = downscale_factor;
    if (!pixel_checks(x, r, op, "downscale_factor")) return NULL;
    int k = x->rank;
    int64_t c = x->sizes[k - 3], h = x->sizes[k - 2], w = x->sizes[k - 1];
    if (h % r || w % r) {
        bool hb = h % r != 0;
        gf__error(GF_ERR_SHAPE, "%s: expects %s to be divisible by downscale_factor, but "
                  "input.size(%d)=%lld is not divisible by %lld", op, hb ? "height" : "width",
                  hb ? -2 : -1, (long long)(hb ? h : w), (long long)r);
        return NULL;
    }
    int64_t s6[6] = {prod(x->sizes, 0, k - 3), c, h / r, r, w / r, r};
    int64_t out[GF_MAX_RANK];
    memcpy(out, x->sizes, sizeof(int64_t) * (size_t)(k - 3));
    if (!gf__mul_ok(c, r * r, &out[k - 3])) return pixel_overflow(x, r, op), NULL;
    out[k - 2] = h / r, out[k - 1] = w / r;
    static const int perm[6] = {0, 1, 3, 5, 2, 4};
    BEGIN;
    gf_tensor *v = T(gf_reshape(x, s6, 6));
    gf_tensor *p = T(gf_permute(v, perm, 6));
    gf_tensor *y = T(gf_reshape(p, out, k));
    END(y);
}

/* ------------------------------------------------------------ flatten / unflatten */
gf_tensor *gf_flatten_dims(const gf_tensor *x, int start_dim, int end_dim) {
    const char *op = "gf_flatten_dims";
    if (!x) return gf__null_arg(op, "x"), NULL;
    int s = gf__norm_dim(start_dim, x->rank, op);
    int e = s < 0 ? -1 : gf__norm_dim(end_dim, x->rank, op);
    if (s < 0 || e < 0) return NULL;
    if (x->rank == 0) {
        int64_t one = 1;
        return gf_reshape(x, &one, 1);
    }
    if (s > e) {
        gf__error(GF_ERR_INVALID, "%s: start_dim (%d) cannot come after end_dim (%d) (dims "
                  "counted from 0 after negative ones are normalised)", op, s, e);
        return NULL;
    }
    int64_t sz[GF_MAX_RANK];
    int n = 0;
    for (int i = 0; i < s; i++) sz[n++] = x->sizes[i];
    sz[n++] = prod(x->sizes, s, e + 1);
    for (int i = e + 1; i < x->rank; i++) sz[n++] = x->sizes[i];
    return gf_reshape(x, sz, n);
}

gf_tensor *gf_unflatten(const gf_tensor *x, int dim, const int64_t *sizes, int n) {
    const char *op = "gf_unflatten";
    if (!x) return gf__null_arg(op, "x"), NULL;
    if (x->rank == 0) {
        gf__error(GF_ERR_INDEX, "%s: dimension specified as %d but the tensor has no "
                  "dimensions", op, dim);
        return NULL;
    }
    int d = gf__norm_dim(dim, x->rank, op);
    if (d < 0) return NULL;
    if (n <= 0 || !sizes) {
        gf__error(GF_ERR_INVALID, "%s: sizes must be non-empty (got %d sizes%s)", op, n,
                  sizes ? "" : ", NULL");
        return NULL;
    }
    if (x->rank - 1 + n > GF_MAX_RANK) {
        gf__error(GF_ERR_SHAPE, "%s: the result would have rank %d, above graft's limit of %d",
                  op, x->rank - 1 + n, GF_MAX_RANK);
        return NULL;
    }
    int infer = -1;
    int64_t known = 1;
    bool ovf = false;
    for (int i = 0; i < n; i++) {
        if (sizes[i] == -1) {
            if (infer >= 0) {
                gf__error(GF_ERR_INVALID, "%s: only one dimension can be inferred (sizes %d and "
                          "%d are both -1)", op, infer, i);
                return NULL;
            }
            infer = i;
        } else if (sizes[i] < 0) {
            gf__error(GF_ERR_INVALID, "%s: size %d is %lld; sizes must be >= 0, or -1 for the "
                      "one inferred", op, i, (long long)sizes[i]);
            return NULL;
        } else if (sizes[i] && known > INT64_MAX / sizes[i]) {
            ovf = true;
        } else {
            known *= sizes[i];
        }
    }
    int64_t have = x->sizes[d];
    int64_t sz[GF_MAX_RANK], inferred = 0;
    char b[200];
    if (!ovf && infer >= 0) {
        if (known == 0 || have % known) ovf = true; /* reported below */
        else inferred = have / known;
    }
    if (ovf || (infer < 0 && known != have)) {
        gf__error(GF_ERR_SHAPE, "%s: the sizes %s %s the size of dim %d (%lld) of the input; "
                  "give sizes whose product is %lld", op, gf__shape_str(sizes, n, b, sizeof b),
                  infer >= 0 ? "cannot be completed to multiply up to" : "don't multiply up to",
                  d, (long long)have, (long long)have);
        return NULL;
    }
    int m = 0;
    for (int i = 0; i < d; i++) sz[m++] = x->sizes[i];
    for (int i = 0; i < n; i++) sz[m++] = i == infer ? inferred : sizes[i];
    for (int i = d + 1; i < x->rank; i++) sz[m++] = x->sizes[i];
    return gf_reshape(x, sz, m);
}

/* ------------------------------------------------------------ add / sub with alpha */
/* alpha * b in the result dtype (a float b of another width, or an integer
 * b of a float result, is cast first so alpha is not rounded to b's dtype). */
static gf_tensor *scaled(tmps *L, const gf_tensor *b, gf_dtype rd, double alpha) {
    if (gf_dtype_is_float(rd)) {
        gf_tensor *bc = b->dtype == rd ? (gf_tensor *)b : T(gf_to_dtype(b, rd));
        return T(gf_mul_scalar(bc, alpha));
    }
    return T(gf_mul_scalar_int(b, (int64_t)alpha));
}

static gf_tensor *add_alpha_impl(const gf_tensor *a, const gf_tensor *b, double alpha, bool sub,
                                 const char *op) {
    if (!a) return gf__null_arg(op, "a"), NULL;
    if (!b) return gf__null_arg(op, "b"), NULL;
    gf_dtype rd = gf__promote(a->dtype, b->dtype);
    if (isnan(alpha) && !gf_dtype_is_float(rd)) alpha = 0.5; /* refused below */
    if (!gf_dtype_is_float(rd) &&
        (alpha != floor(alpha) || fabs(alpha) >= 9223372036854775808.0)) {
        gf__error(GF_ERR_INVALID, "%s: for integer and bool input tensors, alpha must be an "
                  "integral number (got %g), as in PyTorch; convert the tensors to a float "
                  "dtype first", op, alpha);
        return NULL;
    }
    if (alpha == 1.0) return sub ? gf_sub(a, b) : gf_add(a, b);
    BEGIN;
    gf_tensor *ab = scaled(L, b, rd, alpha);
    gf_tensor *y = T(sub ? gf_sub(a, ab) : gf_add(a, ab));
    if (y && rd == GF_BOOL && y->dtype != GF_BOOL) y = T(gf_to_dtype(y, GF_BOOL));
    END(y);
}

gf_tensor *gf_add_alpha(const gf_tensor *a, const gf_tensor *b, double alpha) {
    return add_alpha_impl(a, b, alpha, false, "gf_add_alpha");
}
gf_tensor *gf_sub_alpha(const gf_tensor *a, const gf_tensor *b, double alpha) {
    return add_alpha_impl(a, b, alpha, true, "gf_sub_alpha");
}

/* ------------------------------------------------------------ dot / vdot / outer */
static bool vec_pair(const gf_tensor *a, const gf_tensor *b, const char *op, bool same_len) {
    if (!a) return gf__null_arg(op, "a"), false;
    if (!b) return gf__null_arg(op, "b"), false;
    if (a->rank != 1 || b->rank != 1) {
        gf__error(GF_ERR_SHAPE, "%s: 1D tensors expected, but got %dD and %dD tensors; flatten "
                  "them (gf_flatten) first", op, a->rank, b->rank);
        return false;
    }
    if (!gf__same_device(a, b, op)) return false;
    if (same_len && a->sizes[0] != b->sizes[0]) {
        gf__error(GF_ERR_SHAPE, "%s: inconsistent tensor size, expected tensors [%lld] and "
                  "[%lld] to have the same number of elements", op, (long long)a->sizes[0],
                  (long long)b->sizes[0]);
        return false;
    }
    return true;
}

static gf_tensor *dot_impl(const gf_tensor *a, const gf_tensor *b, const char *op) {
    if (!vec_pair(a, b, op, true)) return NULL;
    if (a->dtype != b->dtype) {
        gf__error(GF_ERR_DTYPE, "%s: expected both vectors to have the same dtype, but found "
                  "%s and %s; convert one with gf_to_dtype", op, gf_dtype_name(a->dtype),
                  gf_dtype_name(b->dtype));
        return NULL;
    }
    if (a->dtype == GF_BOOL) {
        gf__error(GF_ERR_DTYPE, "%s: not implemented for bool vectors (as PyTorch); convert "
                  "them to an integer or float dtype", op);
        return NULL;
    }
    if (gf_dtype_is_float(a->dtype) && a->sizes[0] > 0) return gf_matmul(a, b);
    BEGIN;
    gf_tensor *s = T(gf_sum(T(gf_mul(a, b)), NULL, 0, false));
    gf_tensor *y = s && s->dtype != a->dtype ? T(gf_to_dtype(s, a->dtype)) : s;
    END(y);
}

gf_tensor *gf_dot(const gf_tensor *a, const gf_tensor *b) { return dot_impl(a, b, "gf_dot"); }
/* vdot conjugates its first vector when it is complex (as PyTorch and numpy). */
gf_tensor *gf_vdot(const gf_tensor *a, const gf_tensor *b) {
    if (!a || !gf_dtype_is_complex(a->dtype)) return dot_impl(a, b, "gf_vdot");
    BEGIN;
    gf_tensor *y = T(dot_impl(T(gf_conj(a)), b, "gf_vdot"));
    END(y);
}

gf_tensor *gf_outer(const gf_tensor *a, const gf_tensor *b) {
    const char *op = "gf_outer";
    if (!vec_pair(a, b, op, false)) return NULL;
    BEGIN;
    gf_tensor *y = T(gf_mul(T(gf_unsqueeze(a, 1)), T(gf_unsqueeze(b, 0))));
    END(y);
}

/* ------------------------------------------------------------ random *_like */
static bool float_like(const gf_tensor *x, const char *op) {
    if (!x) return gf__null_arg(op, "x"), false;
    if (!gf_dtype_is_float(x->dtype)) {
        gf__error(GF_ERR_DTYPE, "%s: x has dtype %s, and this op fills float tensors (as "
                  "PyTorch); use gf_randint_like for integers, or pass a float tensor", op,
                  gf_dtype_name(x->dtype));
        return false;
    }
    return true;
}

gf_tensor *gf_rand_like(const gf_tensor *x) {
    if (!float_like(x, "gf_rand_like")) return NULL;
    return gf_rand(x->sizes, x->rank, x->dtype, x->storage->device);
}

gf_tensor *gf_randn_like(const gf_tensor *x) {
    if (!float_like(x, "gf_randn_like")) return NULL;
    return gf_randn(x->sizes, x->rank, x->dtype, x->storage->device);
}

/* The largest magnitude every integer up to which the dtype holds exactly. */
static double exact_int_limit(gf_dtype dt) {
    switch (dt) {
    case GF_F64: return 9007199254740992.0;  /* 2^53 */
    case GF_F32: return 16777216.0;          /* 2^24 */
    case GF_F16: return 2048.0;              /* 2^11 */
    case GF_BF16: return 256.0;              /* 2^8 */
    case GF_I32: return 2147483648.0;
    case GF_BOOL: return 2.0;
    default: return 9223372036854775808.0;
    }
}

gf_tensor *gf_randint_like(const gf_tensor *x, int64_t low, int64_t high) {
    const char *op = "gf_randint_like";
    if (!x) return gf__null_arg(op, "x"), NULL;
    if (low >= high) {
        gf__error(GF_ERR_INVALID, "%s: expects low to be less than high, but got low=%lld >= "
                  "high=%lld (the values are drawn from [low, high))", op, (long long)low,
                  (long long)high);
        return NULL;
    }
    double lim = exact_int_limit(x->dtype);
    double lo_ok = x->dtype == GF_BOOL ? 0.0 : -lim;
    if ((double)low < lo_ok || (double)high > lim) {
        gf__error(GF_ERR_INVALID, "%s: the range [%lld, %lld) does not fit x's dtype %s "
                  "(integers from %.17g up to %.17g are exact there); narrow the range or use "
                  "a wider dtype", op, (long long)low, (long long)high, gf_dtype_name(x->dtype),
                  lo_ok, lim);
        return NULL;
    }
    gf_device *dev = x->storage->device;
    gf_dtype ud = device_stores(dev, GF_F64) ? GF_F64 : GF_F32;
    double span = (double)high - (double)low;
    BEGIN;
    gf_tensor *u = T(gf_rand(x->sizes, x->rank, ud, dev));
    /* floor(low + u span), kept below high where rounding reaches it */
    gf_tensor *v = T(gf_floor(T(gf_add_scalar(T(gf_mul_scalar(u, span)), (double)low))));
    gf_tensor *c = T(gf_clamp(v, (double)low, (double)high - 1.0));
    gf_tensor *y = T(gf_to_dtype(c, x->dtype));
    END(y);
}

/* ------------------------------------------------------------ multinomial */
/* The probabilities as f64 on the host (rows * cats of them). */
static double *read_f64(const gf_tensor *p, int64_t n, const char *op) {
    double *out = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    if (!out) {
        gf__error(GF_ERR_OUT_OF_MEMORY, "%s: no memory for %lld probabilities", op, (long long)n);
        return NULL;
    }
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    int sc = gf__scope_suspend();
    gf_status s;
    if (p->dtype == GF_F64) {
        s = gf_tensor_to_host(p, out, sizeof(double) * (size_t)n);
    } else {
        gf_tensor *f = p->dtype == GF_F32 ? gf_tensor_retain((gf_tensor *)p)
                                          : gf_to_dtype(p, GF_F32);
        float *tmp = f ? malloc(sizeof(float) * (size_t)(n > 0 ? n : 1)) : NULL;
        s = !f ? gf__status()
               : !tmp ? gf__error(GF_ERR_OUT_OF_MEMORY, "%s: no memory for %lld values", op,
                                  (long long)n)
                      : gf_tensor_to_host(f, tmp, sizeof(float) * (size_t)n);
        for (int64_t i = 0; s == GF_OK && i < n; i++) out[i] = tmp[i];
        free(tmp);
        gf_tensor_release(f);
    }
    gf__scope_resume(sc);
    gf_grad_mode_set(prev);
    if (s != GF_OK) {
        free(out);
        return NULL;
    }
    return out;
}

/* Index of the category that u (in [0, 1)) picks by the running sum of w,
 * skipping zero weights (a rounding overshoot picks the last nonzero one). */
static int64_t pick(const double *w, int64_t n, double total, double u) {
    double target = u * total, acc = 0;
    int64_t last = -1;
    for (int64_t i = 0; i < n; i++) {
        if (w[i] <= 0) continue;
        last = i;
        acc += w[i];
        if (target < acc) return i;
    }
    return last;
}

gf_tensor *gf_multinomial(const gf_tensor *probs, int64_t num_samples, bool replacement) {
    const char *op = "gf_multinomial";
    if (!probs) return gf__null_arg(op, "probs"), NULL;
    if (probs->rank != 1 && probs->rank != 2) {
        gf__error(GF_ERR_SHAPE, "%s: prob_dist must be 1 or 2 dim (got %d dims)", op,
                  probs->rank);
        return NULL;
    }
    if (!gf_dtype_is_float(probs->dtype)) {
        gf__error(GF_ERR_DTYPE, "%s: only supports floating-point dtypes for the "
                  "probabilities, got %s; convert them with gf_to_dtype", op,
                  gf_dtype_name(probs->dtype));
        return NULL;
    }
    int64_t rows = probs->rank == 2 ? probs->sizes[0] : 1;
    int64_t cats = probs->sizes[probs->rank - 1];
    if (num_samples <= 0) {
        gf__error(GF_ERR_INVALID, "%s: cannot sample num_samples <= 0 samples (got %lld)", op,
                  (long long)num_samples);
        return NULL;
    }
    if (cats == 0) {
        gf__error(GF_ERR_SHAPE, "%s: the number of categories cannot be zero", op);
        return NULL;
    }
    if (cats > (1 << 24)) {
        gf__error(GF_ERR_SHAPE, "%s: the number of categories cannot exceed 2^24 (got %lld), as "
                  "in PyTorch", op, (long long)cats);
        return NULL;
    }
    if (!replacement && num_samples > cats) {
        gf__error(GF_ERR_INVALID, "%s: cannot sample num_samples (%lld) > prob_dist.size(-1) "
                  "(%lld) samples without replacement; pass replacement = true or fewer "
                  "samples", op, (long long)num_samples, (long long)cats);
        return NULL;
    }
    /* the weights and the draws pass through host memory */
    if (num_samples > ((int64_t)1 << 31) / (rows > 0 ? rows : 1) ||
        rows > ((int64_t)1 << 31) / cats) {
        gf__error(GF_ERR_OVERFLOW, "%s: %lld rows of %lld categories and %lld samples are too "
                  "many for one call (at most 2^31 weights and 2^31 samples); split the rows",
                  op, (long long)rows, (long long)cats, (long long)num_samples);
        return NULL;
    }
    int64_t np = rows * cats, ns = rows * num_samples;
    double *w = read_f64(probs, np, op);
    if (!w) return NULL;
    for (int64_t r = 0; r < rows; r++) {
        double sum = 0;
        int64_t nonzero = 0;
        for (int64_t i = 0; i < cats; i++) {
            double v = w[r * cats + i];
            if (!isfinite(v) || v < 0) {
                free(w);
                gf__error(GF_ERR_INVALID, "%s: the probability tensor contains either inf, NaN or "
                          "an element < 0 (row %lld, category %lld: %g)", op, (long long)r,
                          (long long)i, v);
                return NULL;
            }
            sum += v;
            nonzero += v > 0;
        }
        if (!(sum > 0) || !isfinite(sum)) {
            free(w);
            gf__error(GF_ERR_INVALID, "%s: invalid multinomial distribution (the sum of the "
                      "probabilities of row %lld is %g; it must be positive and finite)", op,
                      (long long)r, sum);
            return NULL;
        }
        if (!replacement && nonzero < num_samples) {
            free(w);
            gf__error(GF_ERR_INVALID, "%s: invalid multinomial distribution (with replacement "
                      "= false, row %lld has %lld nonzero categories, fewer than the %lld "
                      "samples asked for)", op, (long long)r, (long long)nonzero,
                      (long long)num_samples);
            return NULL;
        }
    }
    gf_device *dev = probs->storage->device;
    gf_dtype ud = device_stores(dev, GF_F64) ? GF_F64 : GF_F32;
    int sc = gf__scope_suspend();
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    gf_tensor *ut = gf_rand(&ns, 1, ud, dev);
    gf_grad_mode_set(prev);
    gf__scope_resume(sc);
    double *u = ut ? read_f64(ut, ns, op) : NULL;
    gf_tensor_release(ut);
    int64_t *idx = u ? malloc(sizeof(int64_t) * (size_t)(ns > 0 ? ns : 1)) : NULL;
    if (!idx) {
        if (u) gf__error(GF_ERR_OUT_OF_MEMORY, "%s: no memory for %lld samples", op, (long long)ns);
        free(u);
        free(w);
        return NULL;
    }
    for (int64_t r = 0; r < rows; r++) {
        double *row = w + r * cats, total = 0;
        for (int64_t i = 0; i < cats; i++) total += row[i];
        for (int64_t k = 0; k < num_samples; k++) {
            int64_t c = pick(row, cats, total, u[r * num_samples + k]);
            idx[r * num_samples + k] = c;
            if (!replacement) { /* take it out: the next draws are among the rest */
                total -= row[c];
                row[c] = 0;
                if (!(total > 0)) { /* rounding left nothing: sum the rest again */
                    total = 0;
                    for (int64_t i = 0; i < cats; i++) total += row[i];
                }
            }
        }
    }
    int64_t osz[2] = {rows, num_samples};
    gf_tensor *y = probs->rank == 2 ? gf_from_data(idx, osz, 2, GF_I64, dev)
                                    : gf_from_data(idx, &num_samples, 1, GF_I64, dev);
    free(idx);
    free(u);
    free(w);
    return y;
}

/* ------------------------------------------------------------ in-place activations
 * leaky_relu, elu, gelu, silu and hardswish are single device ops on self
 * (self_input 0); the composed ones (celu, selu, hardtanh, relu6,
 * hardsigmoid, mish) end in an op on an intermediate (self_input -1). */
typedef struct act_args {
    double a, b;
    bool flag;
} act_args;

static gf_tensor *f_leaky(gf_tensor *d, gf_tensor *x, const void *c) {
    (void)d;
    return gf_leaky_relu(x, ((const act_args *)c)->a);
}
static gf_tensor *f_elu(gf_tensor *d, gf_tensor *x, const void *c) {
    (void)d;
    return gf_elu(x, ((const act_args *)c)->a);
}
static gf_tensor *f_celu(gf_tensor *d, gf_tensor *x, const void *c) {
    (void)d;
    return gf_celu(x, ((const act_args *)c)->a);
}
static gf_tensor *f_selu(gf_tensor *d, gf_tensor *x, const void *c) {
    (void)d, (void)c;
    return gf_selu(x);
}
static gf_tensor *f_hardtanh(gf_tensor *d, gf_tensor *x, const void *c) {
    (void)d;
    return gf_hardtanh(x, ((const act_args *)c)->a, ((const act_args *)c)->b);
}
static gf_tensor *f_relu6(gf_tensor *d, gf_tensor *x, const void *c) {
    (void)d, (void)c;
    return gf_relu6(x);
}
static gf_tensor *f_silu(gf_tensor *d, gf_tensor *x, const void *c) {
    (void)d, (void)c;
    return gf_silu(x);
}
static gf_tensor *f_gelu(gf_tensor *d, gf_tensor *x, const void *c) {
    (void)d;
    return gf_gelu(x, ((const act_args *)c)->flag);
}
static gf_tensor *f_hardsigmoid(gf_tensor *d, gf_tensor *x, const void *c) {
    (void)d, (void)c;
    return gf_hardsigmoid(x);
}
static gf_tensor *f_hardswish(gf_tensor *d, gf_tensor *x, const void *c) {
    (void)d, (void)c;
    return gf_hardswish(x);
}
static gf_tensor *f_mish(gf_tensor *d, gf_tensor *x, const void *c) {
    (void)d, (void)c;
    return gf_mish(x);
}

gf_status gf_leaky_relu_(gf_tensor *self, double negative_slope) {
    act_args a = {.a = negative_slope};
    return gf__ag_inplace_ew(self, "gf_leaky_relu_", f_leaky, &a, NULL, 0);
}
gf_status gf_elu_(gf_tensor *self, double alpha) {
    act_args a = {.a = alpha};
    return gf__ag_inplace_ew(self, "gf_elu_", f_elu, &a, NULL, 0);
}
gf_status gf_celu_(gf_tensor *self, double alpha) {
    act_args a = {.a = alpha};
    return gf__ag_inplace_ew(self, "gf_celu_", f_celu, &a, NULL, -1);
}
gf_status gf_selu_(gf_tensor *self) {
    return gf__ag_inplace_ew(self, "gf_selu_", f_selu, NULL, NULL, -1);
}
gf_status gf_hardtanh_(gf_tensor *self, double min_val, double max_val) {
    act_args a = {.a = min_val, .b = max_val};
    return gf__ag_inplace_ew(self, "gf_hardtanh_", f_hardtanh, &a, NULL, -1);
}
gf_status gf_relu6_(gf_tensor *self) {
    return gf__ag_inplace_ew(self, "gf_relu6_", f_relu6, NULL, NULL, -1);
}
gf_status gf_silu_(gf_tensor *self) {
    return gf__ag_inplace_ew(self, "gf_silu_", f_silu, NULL, NULL, 0);
}
gf_status gf_gelu_(gf_tensor *self, bool approximate) {
    act_args a = {.flag = approximate};
    return gf__ag_inplace_ew(self, "gf_gelu_", f_gelu, &a, NULL, 0);
}
gf_status gf_hardsigmoid_(gf_tensor *self) {
    return gf__ag_inplace_ew(self, "gf_hardsigmoid_", f_hardsigmoid, NULL, NULL, -1);
}
gf_status gf_hardswish_(gf_tensor *self) {
    return gf__ag_inplace_ew(self, "gf_hardswish_", f_hardswish, NULL, NULL, 0);
}
gf_status gf_mish_(gf_tensor *self) {
    return gf__ag_inplace_ew(self, "gf_mish_", f_mish, NULL, NULL, -1);
}

/* ------------------------------------------------------------ in-place add / sub with alpha */
typedef struct alpha_args {
    const gf_tensor *other;
    double alpha;
} alpha_args;

static gf_tensor *f_add_alpha(gf_tensor *d, gf_tensor *x, const void *c) {
    (void)d;
    const alpha_args *a = c;
    return add_alpha_impl(x, a->other, a->alpha, false, "gf_add_alpha_");
}
static gf_tensor *f_sub_alpha(gf_tensor *d, gf_tensor *x, const void *c) {
    (void)d;
    const alpha_args *a = c;
    return add_alpha_impl(x, a->other, a->alpha, true, "gf_sub_alpha_");
}

gf_status gf_add_alpha_(gf_tensor *self, const gf_tensor *other, double alpha) {
    if (!other) return gf__null_arg("gf_add_alpha_", "other");
    alpha_args a = {other, alpha};
    return gf__ag_inplace_ew(self, "gf_add_alpha_", f_add_alpha, &a, other, 0);
}
gf_status gf_sub_alpha_(gf_tensor *self, const gf_tensor *other, double alpha) {
    if (!other) return gf__null_arg("gf_sub_alpha_", "other");
    alpha_args a = {other, alpha};
    return gf__ag_inplace_ew(self, "gf_sub_alpha_", f_sub_alpha, &a, other, 0);
}
