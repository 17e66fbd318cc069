/* SPDX-License-Identifier: BSD-3-Clause */
/* fft_ops.c — the torch.fft transforms (graft/fft.h).
 *
 * Each public function follows torch's SpectralOps: canonicalise n / s and
 * dims, convert the dtype, trim or zero-pad the input to the signal
 * lengths, then run one of three primitives, each one launch of the device
 * op FFT (abi/graft_ops.def):
 *   c2c  fft, ifft, fftn, ifftn (a real input is made complex first)
 *   r2c  rfft, rfftn, and ihfft = conj(r2c) with the inverse's scale
 *   c2r  irfft, irfftn, and hfft = c2r(conj(x)) with the forward's scale
 * The norm gives the scale: none, 1/sqrt(n) or 1/n, n the product of the
 * signal lengths (the output's for c2r, the input's otherwise). Padding,
 * trimming, conjugation and dtype conversion are graft ops with their own
 * gradients; the primitives' rules are in fft_grad.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../autograd/ag_internal.h"
#include "../complex/complex_internal.h"
#include "fft_internal.h"

/* ------------------------------------------------------------ primitives */
static gf_tensor *launch_fft(const gf_tensor *x, const int64_t *ysizes, gf_dtype ydt,
                             gfp_fft_kind kind, const int *dims, int nd, bool inverse,
                             double scale) {
    gf_tensor *y = gf__empty(ysizes, x->rank, ydt, x->storage->device);
    if (!y) return NULL;
    gfp_fft_params p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    p.kind = (uint32_t)kind;
    p.inverse = inverse ? 1u : 0u;
    p.n_dims = (uint32_t)nd;
    for (int i = 0; i < nd; i++) p.dims[i] = dims[i];
    p.scale = scale;
    const gf_tensor *in[1] = {x};
    gf_tensor *out[1] = {y};
    if (gf__launch(GFP_OP_FFT, "fft", in, 1, out, 1, &p) != GF_OK) {
        gf_tensor_release(y);
        return NULL;
    }
    return y;
}

gf_tensor *gf__fft_c2c(const gf_tensor *x, const int *dims, int nd, bool inverse, double scale) {
    gf_tensor *y = launch_fft(x, x->sizes, x->dtype, GFP_FFT_C2C, dims, nd, inverse, scale);
    if (y && gf__fft_record_c2c(x, y, dims, nd, inverse, scale) != GF_OK) {
        gf_tensor_release(y);
        y = NULL;
    }
    return y;
}

gf_tensor *gf__fft_r2c(const gf_tensor *x, const int *dims, int nd, double scale) {
    int64_t sizes[GF_MAX_RANK];
    memcpy(sizes, x->sizes, sizeof sizes);
    sizes[dims[nd - 1]] = x->sizes[dims[nd - 1]] / 2 + 1;
    gf_tensor *y = launch_fft(x, sizes, gf_dtype_to_complex(x->dtype), GFP_FFT_R2C, dims, nd,
                              false, scale);
    if (y && gf__fft_record_r2c(x, y, dims, nd, scale) != GF_OK) {
        gf_tensor_release(y);
        y = NULL;
    }
    return y;
}

gf_tensor *gf__fft_c2r(const gf_tensor *x, const int *dims, int nd, int64_t last_n,
                       double scale) {
    int64_t sizes[GF_MAX_RANK];
    memcpy(sizes, x->sizes, sizeof sizes);
    sizes[dims[nd - 1]] = last_n;
    gf_tensor *y = launch_fft(x, sizes, gf_dtype_to_real(x->dtype), GFP_FFT_C2R, dims, nd, true,
                              scale);
    if (y && gf__fft_record_c2r(x, y, dims, nd, scale) != GF_OK) {
        gf_tensor_release(y);
        y = NULL;
    }
    return y;
}

/* ------------------------------------------------------------ arguments */
/* The transformed dims (normalised, distinct) and their signal lengths. */
typedef struct fft_dims {
    int nd;
    int dims[GF_MAX_RANK];
    int64_t n[GF_MAX_RANK];
} fft_dims;

static bool check_norm(gf_fft_norm norm, const char *op) {
    if (norm == GF_FFT_NORM_BACKWARD || norm == GF_FFT_NORM_ORTHO || norm == GF_FFT_NORM_FORWARD)
        return true;
    gf__error(GF_ERR_INVALID, "%s: norm %d is not GF_FFT_NORM_BACKWARD, GF_FFT_NORM_ORTHO or "
              "GF_FFT_NORM_FORWARD", op, (int)norm);
    return false;
}

/* Which dims a length says nothing about: an error for n <= 0 that is not
 * the default. */
static bool check_length(int64_t n, const char *op, const char *what) {
    if (n >= 1 || n == GF_FFT_SIZE_DEFAULT) return true;
    gf__error(GF_ERR_INVALID, "%s: %s is %lld; a signal length must be at least 1 (or "
              "GF_FFT_SIZE_DEFAULT for the input's size)", op, what, (long long)n);
    return false;
}

/* A resolved signal length: INVALID when it is below 1 (an empty input dim,
 * or the default 2 (m - 1) of the c2r transforms for m = 1). */
static bool check_resolved(int64_t n, int dim, const char *op, bool c2r_default) {
    if (n >= 1) return true;
    gf__error(GF_ERR_INVALID, "%s: the signal length of dim %d would be %lld (%s); give a "
              "length of at least 1", op, dim, (long long)n,
              c2r_default ? "the default 2 (m - 1) for an input of m bins" : "the input's size");
    return false;
}

static bool canon_1d(const gf_tensor *x, int64_t n, int dim, bool c2r, const char *op,
                     fft_dims *a) {
    if (!check_length(n, op, "n")) return false;
    if (x->rank == 0) {
        gf__error(GF_ERR_SHAPE, "%s: x is 0-dim; a 1-D transform needs a dim (as in torch): "
                  "reshape x to [1] or use the n-D form", op);
        return false;
    }
    int d = gf__norm_dim(dim, x->rank, op);
    if (d < 0) return false;
    a->nd = 1;
    a->dims[0] = d;
    bool dflt = n == GF_FFT_SIZE_DEFAULT;
    /* 2 (m - 1) cannot overflow: graft keeps every size below 2^59. */
    if (dflt) n = c2r ? 2 * (x->sizes[d] - 1) : x->sizes[d];
    a->n[0] = n;
    return check_resolved(n, d, op, c2r && dflt);
}

static bool canon_nd(const gf_tensor *x, const int64_t *s, int n_s, const int *dims, int n_dims,
                     bool two_d, bool c2r, const char *op, fft_dims *a) {
    int rank = x->rank;
    if (n_s < 0 || (!s && n_s > 0)) {
        gf__error(GF_ERR_INVALID, "%s: s is %s with n_s = %d; pass NULL (the input's sizes) "
                  "or an array of n_s >= 0 lengths", op, s ? "given" : "NULL", n_s);
        return false;
    }
    if (n_dims < 0 || (!dims && n_dims > 0)) {
        gf__error(GF_ERR_INVALID, "%s: dims is %s with n_dims = %d; pass NULL (the default "
                  "dims) or an array of n_dims >= 0 dims", op, dims ? "given" : "NULL", n_dims);
        return false;
    }
    static const int last_two[2] = {-2, -1};
    if (two_d && !dims) {
        dims = last_two;
        n_dims = 2;
    }
    if (dims) {
        /* Distinct valid dims are at most rank <= GF_MAX_RANK: a longer
         * list fails on a repeat before a->dims overflows. */
        for (int i = 0; i < n_dims; i++) {
            int d = gf__norm_dim(dims[i], rank, op);
            if (d < 0) return false;
            if (rank == 0) {
                gf__error(GF_ERR_INDEX, "%s: dim %d given for a 0-dim input", op, dims[i]);
                return false;
            }
            for (int j = 0; j < i; j++)
                if (a->dims[j] == d) {
                    gf__error(GF_ERR_INVALID, "%s: dim %d is given twice; FFT dims must be "
                              "distinct", op, d);
                    return false;
                }
            a->dims[i] = d;
        }
        a->nd = n_dims;
    }
    if (s) {
        if (n_s > rank) {
            gf__error(GF_ERR_SHAPE, "%s: s has %d lengths but x has only %d dims", op, n_s, rank);
            return false;
        }
        if (dims && n_s != n_dims) {
            gf__error(GF_ERR_INVALID, "%s: s has %d lengths and dims %d dims; when both are "
                      "given they must have the same length", op, n_s, n_dims);
            return false;
        }
        if (!dims) {
            a->nd = n_s;
            for (int i = 0; i < n_s; i++) a->dims[i] = rank - n_s + i;
        }
        for (int i = 0; i < n_s; i++) {
            char what[32];
            snprintf(what, sizeof what, "s[%d]", i);
            if (!check_length(s[i], op, what)) return false;
        }
    } else if (!dims) {
        a->nd = rank;
        for (int i = 0; i < rank; i++) a->dims[i] = i;
    }
    for (int i = 0; i < a->nd; i++) {
        int d = a->dims[i];
        int64_t n = s ? s[i] : GF_FFT_SIZE_DEFAULT;
        bool dflt = n == GF_FFT_SIZE_DEFAULT;
        bool last_c2r = c2r && i == a->nd - 1;
        if (dflt) n = last_c2r ? 2 * (x->sizes[d] - 1) : x->sizes[d];
        if (!check_resolved(n, d, op, last_c2r && dflt)) return false;
        a->n[i] = n;
    }
    return true;
}

/* ------------------------------------------------------------ conversions */
gf_tensor *gf__fft_to_float(const gf_tensor *x, const char *op) {
    if (x->dtype == GF_F16 || x->dtype == GF_BF16) {
        gf__error(GF_ERR_DTYPE, "%s: x is %s; the transforms take f32, f64, c64, c128 (and "
                  "integers, converted to f32): convert x with gf_to_dtype(x, GF_F32)", op,
                  gf_dtype_name(x->dtype));
        return NULL;
    }
    if (gf_dtype_is_float(x->dtype) || gf_dtype_is_complex(x->dtype))
        return gf_tensor_retain((gf_tensor *)x);
    int saved = gf__scope_suspend();
    gf_tensor *f = gf_to_dtype(x, GF_F32);
    gf__scope_resume(saved);
    return f;
}

static gf_tensor *to_complex(gf_tensor *x) {
    if (!x || gf_dtype_is_complex(x->dtype)) return x;
    gf_tensor *c = gf_to_dtype(x, gf_dtype_to_complex(x->dtype));
    gf_tensor_release(x);
    return c;
}

/* x trimmed (a view) or zero-padded along each dim to its length. Takes
 * x's reference. */
static gf_tensor *resize(gf_tensor *x, const int *dims, const int64_t *n, int nd) {
    for (int i = 0; i < nd && x; i++) {
        int d = dims[i];
        int64_t cur = x->sizes[d];
        gf_tensor *r = NULL;
        if (n[i] < cur) {
            r = gf_narrow(x, d, 0, n[i]);
        } else if (n[i] > cur) {
            int64_t pad[2 * GF_MAX_RANK] = {0};
            int npad = 2 * (x->rank - d);
            pad[npad - 1] = n[i] - cur;
            r = gf_pad(x, pad, npad, GF_PAD_CONSTANT, 0.0);
        } else {
            continue;
        }
        gf_tensor_release(x);
        x = r;
    }
    return x;
}

/* The norm's scale for a transform in the given direction. */
static double norm_scale(gf_fft_norm norm, bool forward, const int64_t *n, int nd) {
    double count = 1;
    for (int i = 0; i < nd; i++) count *= (double)n[i];
    if (norm == GF_FFT_NORM_ORTHO) return 1.0 / sqrt(count);
    bool by_n = forward ? norm == GF_FFT_NORM_FORWARD : norm == GF_FFT_NORM_BACKWARD;
    return by_n ? 1.0 / count : 1.0;
}

/* ------------------------------------------------------------ the three paths */
static gf_tensor *run_c2c(const gf_tensor *x0, const fft_dims *a, bool forward, gf_fft_norm norm,
                          const char *op) {
    gf_tensor *x = to_complex(gf__fft_to_float(x0, op));
    if (x && a->nd == 0) { /* no dim transformed: a complex copy, as torch */
        gf_tensor *c = gf_clone(x);
        gf_tensor_release(x);
        return c;
    }
    x = resize(x, a->dims, a->n, a->nd);
    gf_tensor *y = x ? gf__fft_c2c(x, a->dims, a->nd, !forward,
                                   norm_scale(norm, forward, a->n, a->nd))
                     : NULL;
    gf_tensor_release(x);
    return y;
}

static gf_tensor *run_r2c(const gf_tensor *x0, const fft_dims *a, bool forward, gf_fft_norm norm,
                          const char *op, const char *instead) {
    if (gf_dtype_is_complex(x0->dtype)) {
        gf__error(GF_ERR_DTYPE, "%s: x is %s; this transform takes a real input (as in torch): "
                  "use %s for a complex one, or pass gf_real(x)", op, gf_dtype_name(x0->dtype),
                  instead);
        return NULL;
    }
    if (a->nd == 0) {
        gf__error(GF_ERR_INVALID, "%s: no dim to transform (dims is empty); it must transform "
                  "at least one", op);
        return NULL;
    }
    gf_tensor *x = resize(gf__fft_to_float(x0, op), a->dims, a->n, a->nd);
    gf_tensor *y = x ? gf__fft_r2c(x, a->dims, a->nd, norm_scale(norm, forward, a->n, a->nd))
                     : NULL;
    gf_tensor_release(x);
    if (y && !forward) { /* ihfft: the conjugate of the forward half */
        gf_tensor *c = gf_conj(y);
        gf_tensor_release(y);
        y = c;
    }
    return y;
}

static gf_tensor *run_c2r(const gf_tensor *x0, const fft_dims *a, bool forward, gf_fft_norm norm,
                          const char *op) {
    if (a->nd == 0) {
        gf__error(GF_ERR_INVALID, "%s: no dim to transform (dims is empty); it must transform "
                  "at least one", op);
        return NULL;
    }
    int64_t half[GF_MAX_RANK];
    memcpy(half, a->n, sizeof half);
    int64_t last_n = a->n[a->nd - 1];
    half[a->nd - 1] = last_n / 2 + 1;
    gf_tensor *x = resize(to_complex(gf__fft_to_float(x0, op)), a->dims, half, a->nd);
    if (x && forward) { /* hfft: the inverse transform of the conjugate */
        gf_tensor *c = gf_conj(x);
        gf_tensor_release(x);
        x = c;
    }
    gf_tensor *y = x ? gf__fft_c2r(x, a->dims, a->nd, last_n,
                                   norm_scale(norm, forward, a->n, a->nd))
                     : NULL;
    gf_tensor_release(x);
    return y;
}

/* ------------------------------------------------------------ public */
typedef enum fft_path { PATH_C2C, PATH_R2C, PATH_C2R } fft_path;

static gf_tensor *fft_1d(const gf_tensor *x, int64_t n, int dim, gf_fft_norm norm, fft_path path,
                         bool forward, const char *op, const char *instead) {
    if (!x) {
        gf__null_arg(op, "x");
        return NULL;
    }
    fft_dims a;
    if (!check_norm(norm, op) || !canon_1d(x, n, dim, path == PATH_C2R, op, &a)) return NULL;
    int saved = gf__scope_suspend();
    gf_tensor *y = path == PATH_C2C   ? run_c2c(x, &a, forward, norm, op)
                   : path == PATH_R2C ? run_r2c(x, &a, forward, norm, op, instead)
                                      : run_c2r(x, &a, forward, norm, op);
    gf__scope_resume(saved);
    return gf__ret(y);
}

static gf_tensor *fft_nd(const gf_tensor *x, const int64_t *s, int n_s, const int *dims,
                         int n_dims, gf_fft_norm norm, bool two_d, fft_path path, bool forward,
                         const char *op, const char *instead) {
    if (!x) {
        gf__null_arg(op, "x");
        return NULL;
    }
    fft_dims a;
    if (!check_norm(norm, op) ||
        !canon_nd(x, s, n_s, dims, n_dims, two_d, path == PATH_C2R, op, &a))
        return NULL;
    int saved = gf__scope_suspend();
    gf_tensor *y = path == PATH_C2C   ? run_c2c(x, &a, forward, norm, op)
                   : path == PATH_R2C ? run_r2c(x, &a, forward, norm, op, instead)
                                      : run_c2r(x, &a, forward, norm, op);
    gf__scope_resume(saved);
    return gf__ret(y);
}

gf_tensor *gf_fft(const gf_tensor *x, int64_t n, int dim, gf_fft_norm norm) {
    return fft_1d(x, n, dim, norm, PATH_C2C, true, "gf_fft", NULL);
}
gf_tensor *gf_ifft(const gf_tensor *x, int64_t n, int dim, gf_fft_norm norm) {
    return fft_1d(x, n, dim, norm, PATH_C2C, false, "gf_ifft", NULL);
}
gf_tensor *gf_rfft(const gf_tensor *x, int64_t n, int dim, gf_fft_norm norm) {
    return fft_1d(x, n, dim, norm, PATH_R2C, true, "gf_rfft", "gf_fft");
}
gf_tensor *gf_irfft(const gf_tensor *x, int64_t n, int dim, gf_fft_norm norm) {
    return fft_1d(x, n, dim, norm, PATH_C2R, false, "gf_irfft", NULL);
}
gf_tensor *gf_hfft(const gf_tensor *x, int64_t n, int dim, gf_fft_norm norm) {
    return fft_1d(x, n, dim, norm, PATH_C2R, true, "gf_hfft", NULL);
}
gf_tensor *gf_ihfft(const gf_tensor *x, int64_t n, int dim, gf_fft_norm norm) {
    return fft_1d(x, n, dim, norm, PATH_R2C, false, "gf_ihfft", "gf_ifft");
}

#define FFT_ND(name, two_d, path, forward, instead)                                           \
    gf_tensor *name(const gf_tensor *x, const int64_t *s, int n_s, const int *dims, int n_dims, \
                    gf_fft_norm norm) {                                                        \
        return fft_nd(x, s, n_s, dims, n_dims, norm, two_d, path, forward, #name, instead);    \
    }
FFT_ND(gf_fftn, false, PATH_C2C, true, NULL)
FFT_ND(gf_ifftn, false, PATH_C2C, false, NULL)
FFT_ND(gf_rfftn, false, PATH_R2C, true, "gf_fftn")
FFT_ND(gf_irfftn, false, PATH_C2R, false, NULL)
FFT_ND(gf_fft2, true, PATH_C2C, true, NULL)
FFT_ND(gf_ifft2, true, PATH_C2C, false, NULL)
FFT_ND(gf_rfft2, true, PATH_R2C, true, "gf_fft2")
FFT_ND(gf_irfft2, true, PATH_C2R, false, NULL)
FFT_ND(gf_hfftn, false, PATH_C2R, true, NULL)
FFT_ND(gf_ihfftn, false, PATH_R2C, false, "gf_ifftn")
FFT_ND(gf_hfft2, true, PATH_C2R, true, NULL)
FFT_ND(gf_ihfft2, true, PATH_R2C, false, "gf_ifft2")
#undef FFT_ND

/* ------------------------------------------------------------ frequencies, shifts */
static gf_tensor *freq(int64_t n, double d, gf_dtype dtype, gf_device *dev, bool onesided,
                       const char *op) {
    if (n < 0) {
        gf__error(GF_ERR_INVALID, "%s: n is %lld; it must be >= 0", op, (long long)n);
        return NULL;
    }
    if (dtype != GF_F32 && dtype != GF_F64) {
        gf__error(GF_ERR_DTYPE, "%s: dtype %s; the frequencies are GF_F32 or GF_F64", op,
                  gf_dtype_name(dtype));
        return NULL;
    }
    if (!dev) dev = gf_device_default();
    if (!dev) return NULL;
    int64_t count = onesided ? n / 2 + 1 : n;
    if ((uint64_t)count > SIZE_MAX / sizeof(double)) {
        gf__error(GF_ERR_OVERFLOW, "%s: %lld frequencies do not fit in memory", op,
                  (long long)count);
        return NULL;
    }
    double *v = malloc(count ? (size_t)count * sizeof(double) : 1);
    float *f = (float *)v;
    if (!v) {
        gf__error(GF_ERR_OUT_OF_MEMORY, "%s: no memory for %lld frequencies", op,
                  (long long)count);
        return NULL;
    }
    /* As torch: the integers k times 1 / (n d), one rounding in the dtype. */
    double scale = 1.0 / ((double)n * d);
    for (int64_t i = 0; i < count; i++) {
        int64_t k = onesided || i < (n + 1) / 2 ? i : i - n;
        if (dtype == GF_F64) v[i] = (double)k * scale;
        else f[i] = (float)k * (float)scale;
    }
    gf_tensor *t = gf_from_data(v, &count, 1, dtype, dev);
    free(v);
    return t; /* gf_from_data recorded it in the scope */
}

gf_tensor *gf_fftfreq(int64_t n, double d, gf_dtype dtype, gf_device *dev) {
    return freq(n, d, dtype, dev, false, "gf_fftfreq");
}

gf_tensor *gf_rfftfreq(int64_t n, double d, gf_dtype dtype, gf_device *dev) {
    return freq(n, d, dtype, dev, true, "gf_rfftfreq");
}

static gf_tensor *shift(const gf_tensor *x, const int *dims, int n_dims, bool inverse,
                        const char *op) {
    if (!x) {
        gf__null_arg(op, "x");
        return NULL;
    }
    if (n_dims < 0 || (!dims && n_dims > 0) || n_dims > GF_MAX_RANK) {
        gf__error(GF_ERR_INVALID, "%s: dims is %s with n_dims = %d; pass NULL (every dim) or "
                  "an array of 0 to %d dims", op, dims ? "given" : "NULL", n_dims, GF_MAX_RANK);
        return NULL;
    }
    int nd = dims ? n_dims : x->rank, d[GF_MAX_RANK];
    int64_t shifts[GF_MAX_RANK];
    for (int i = 0; i < nd; i++) {
        d[i] = dims ? gf__norm_dim(dims[i], x->rank, op) : i;
        if (d[i] < 0) return NULL;
        if (x->rank == 0) {
            gf__error(GF_ERR_INDEX, "%s: dim %d given for a 0-dim input", op, dims[i]);
            return NULL;
        }
        int64_t size = x->sizes[d[i]];
        shifts[i] = inverse ? (size + 1) / 2 : size / 2;
    }
    if (nd == 0) return gf_clone(x); /* nothing to roll (a 0-dim x, or no dims) */
    return gf_roll(x, shifts, nd, d, nd);
}

gf_tensor *gf_fftshift(const gf_tensor *x, const int *dims, int n_dims) {
    return shift(x, dims, n_dims, false, "gf_fftshift");
}

gf_tensor *gf_ifftshift(const gf_tensor *x, const int *dims, int n_dims) {
    return shift(x, dims, n_dims, true, "gf_ifftshift");
}
