/* SPDX-License-Identifier: BSD-3-Clause */
/* ref_fft.c — FFT (ABI 1.3): the discrete Fourier transform over some dims
 * of a tensor, complex to complex (C2C), real to complex onesided (R2C) and
 * its inverse halving (C2R), for any lengths and strides, f32/c64 and
 * f64/c128, computed in double whatever the dtype.
 *
 * The tensor is loaded into a contiguous double complex work array, each
 * listed dim is transformed line by line (1-D transforms along that dim),
 * and the result is stored with the scale. A 1-D transform of length n is
 *   - mixed radix Cooley-Tukey (decimation in time, recursive) when every
 *     prime factor of n is at most MAX_RADIX: radix 4 and 2 for the powers
 *     of two, then 3, 5 and any other small prime as a plain DFT butterfly;
 *   - Bluestein's algorithm otherwise: the DFT as a convolution with a
 *     chirp, computed by power-of-two transforms of length m >= 2n - 1.
 * Twiddles and chirps are computed from exact integer angles reduced to
 * [-pi, pi], so the error stays near 1e-16 * log2(n) relative to the
 * largest output. This file favours clarity over speed: it is the oracle. */
#include <complex.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ref_internal.h"

typedef double complex cplx;

#define PI 3.14159265358979323846
/* Larger prime factors go through Bluestein's algorithm. */
#define MAX_RADIX 32
/* Longest line the reference transforms: Bluestein's m = 2^ceil(log2(2n-1))
 * stays far from overflow, and the work arrays from size_t limits. */
#define MAX_LENGTH ((int64_t)1 << 40)

/* Products written out: C's complex multiply checks for infinities on every
 * call (Annex G), which the transform does not need. */
static inline cplx cmul(cplx a, cplx b) {
    double ar = creal(a), ai = cimag(a), br = creal(b), bi = cimag(b);
    return CMPLX(ar * br - ai * bi, ar * bi + ai * br);
}

/* exp(sign * 2 pi i * k / n) for 0 <= k < n, the angle first reduced to
 * [-pi, pi] in exact integer arithmetic. */
static cplx unit_root(int64_t k, int64_t n, int sign) {
    int64_t r = k % n;
    if (r < 0) r += n;
    if (2 * r > n) r -= n; /* now -n/2 <= r <= n/2 */
    double a = 2.0 * PI * (double)r / (double)n * (double)sign;
    return CMPLX(cos(a), sin(a));
}

/* ------------------------------------------------------------ 1-D plans */
typedef struct fft_plan fft_plan;
struct fft_plan {
    int64_t n;
    int sign;
    int nfac;
    int64_t fac[64]; /* radices, product n (mixed radix only) */
    cplx *tw;        /* n roots exp(sign 2 pi i k / n) (mixed radix only) */
    cplx tmp[MAX_RADIX];
    /* Bluestein */
    int64_t m;
    cplx *chirp;         /* n: exp(sign pi i k^2 / n) */
    cplx *bhat;          /* m: the forward transform of conj(chirp), wrapped */
    cplx *wa, *wb;       /* m each: scratch */
    fft_plan *fwd, *inv; /* length m, signs -1 and +1 */
};

static void plan_free(fft_plan *p) {
    if (!p) return;
    free(p->tw);
    free(p->chirp);
    free(p->bhat);
    free(p->wa);
    free(p->wb);
    plan_free(p->fwd);
    plan_free(p->inv);
    free(p);
}

static cplx *cplx_alloc(int64_t n) {
    if (n <= 0 || (uint64_t)n > SIZE_MAX / sizeof(cplx)) return NULL;
    return malloc((size_t)n * sizeof(cplx));
}

/* Factors n into radices <= MAX_RADIX; false when a larger prime divides n. */
static bool factor(int64_t n, int64_t *fac, int *nfac) {
    int k = 0;
    while (n % 4 == 0) fac[k++] = 4, n /= 4;
    while (n % 2 == 0) fac[k++] = 2, n /= 2;
    for (int64_t p = 3; n > 1; p += 2) {
        if (p > MAX_RADIX) return false;
        while (n % p == 0) fac[k++] = p, n /= p;
    }
    *nfac = k;
    return true;
}

static fft_plan *plan_new(int64_t n, int sign);

static bool plan_bluestein(fft_plan *p) {
    int64_t n = p->n, m = 1;
    while (m < 2 * n - 1) m *= 2;
    p->m = m;
    p->chirp = cplx_alloc(n);
    p->bhat = cplx_alloc(m);
    p->wa = cplx_alloc(m);
    p->wb = cplx_alloc(m);
    p->fwd = plan_new(m, -1);
    p->inv = plan_new(m, +1);
    if (!p->chirp || !p->bhat || !p->wa || !p->wb || !p->fwd || !p->inv) return false;
    /* chirp[k] = exp(sign pi i k^2 / n) = unit_root(k^2 mod 2n, 2n); k^2 mod
     * 2n by the recurrence (k+1)^2 = k^2 + 2k + 1, never overflowing. */
    int64_t q = 0, two_n = 2 * n;
    for (int64_t k = 0; k < n; k++) {
        p->chirp[k] = unit_root(q, two_n, p->sign);
        q = (q + 2 * k + 1) % two_n;
    }
    for (int64_t j = 0; j < m; j++) p->wa[j] = 0;
    p->wa[0] = conj(p->chirp[0]);
    for (int64_t j = 1; j < n; j++) p->wa[j] = p->wa[m - j] = conj(p->chirp[j]);
    return true;
}

static void plan_exec(fft_plan *p, const cplx *in, cplx *out);

static fft_plan *plan_new(int64_t n, int sign) {
    fft_plan *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->n = n;
    p->sign = sign;
    bool ok;
    if (factor(n, p->fac, &p->nfac)) {
        p->tw = cplx_alloc(n);
        ok = p->tw != NULL;
        for (int64_t k = 0; ok && k < n; k++) p->tw[k] = unit_root(k, n, sign);
    } else {
        ok = plan_bluestein(p);
        if (ok) plan_exec(p->fwd, p->wa, p->bhat); /* the transform of the chirp */
    }
    if (!ok) {
        plan_free(p);
        return NULL;
    }
    return p;
}

/* out[0..n) = the DFT of in[0], in[s], .., in[(n-1)s], where the n-th roots
 * are p->tw[j * tws] (n = p->n / tws) and p->fac[fi..] factor n. */
static void mixed_radix(fft_plan *p, const cplx *in, int64_t s, cplx *out, int64_t n, int fi,
                        int64_t tws) {
    if (n == 1) {
        out[0] = in[0];
        return;
    }
    int64_t r = p->fac[fi], m = n / r;
    for (int64_t q = 0; q < r; q++) mixed_radix(p, in + q * s, s * r, out + q * m, m, fi + 1, tws * r);
    const cplx *tw = p->tw;
    if (r == 2) {
        for (int64_t k = 0; k < m; k++) {
            cplx a = out[k], b = cmul(out[m + k], tw[k * tws]);
            out[k] = a + b;
            out[m + k] = a - b;
        }
        return;
    }
    /* X[k + t m] = sum_q (W_n^{qk} Y_q[k]) W_r^{qt}, W_r = tw[tws * m] */
    int64_t wr = tws * m;
    for (int64_t k = 0; k < m; k++) {
        for (int64_t q = 0; q < r; q++) p->tmp[q] = cmul(out[q * m + k], tw[q * k * tws]);
        for (int64_t t = 0; t < r; t++) {
            cplx acc = p->tmp[0];
            for (int64_t q = 1; q < r; q++) acc += cmul(p->tmp[q], tw[((q * t) % r) * wr]);
            out[k + t * m] = acc;
        }
    }
}

/* out = the DFT of in (both length p->n, distinct, contiguous). */
static void plan_exec(fft_plan *p, const cplx *in, cplx *out) {
    if (p->tw) {
        mixed_radix(p, in, 1, out, p->n, 0, 1);
        return;
    }
    int64_t n = p->n, m = p->m;
    for (int64_t j = 0; j < m; j++) p->wa[j] = j < n ? cmul(in[j], p->chirp[j]) : 0;
    plan_exec(p->fwd, p->wa, p->wb);
    for (int64_t j = 0; j < m; j++) p->wb[j] = cmul(p->wb[j], p->bhat[j]);
    plan_exec(p->inv, p->wb, p->wa);
    double inv_m = 1.0 / (double)m; /* exact: m is a power of two */
    for (int64_t k = 0; k < n; k++) out[k] = cmul(p->chirp[k], p->wa[k]) * inv_m;
}

/* ------------------------------------------------------------ n-D */
/* Transforms the contiguous array w of the given shape along dim d. */
static gfp_status transform_dim(cplx *w, const int64_t *shape, int rank, int d, int sign) {
    int64_t n = shape[d], inner = 1, outer = 1;
    if (n == 1) return GFP_OK;
    for (int i = d + 1; i < rank; i++) inner *= shape[i];
    for (int i = 0; i < d; i++) outer *= shape[i];
    fft_plan *p = plan_new(n, sign);
    cplx *a = cplx_alloc(n), *b = cplx_alloc(n);
    gfp_status st = GFP_OK;
    if (!p || !a || !b) {
        st = pk_fail(GFP_ERR_OUT_OF_MEMORY, "fft: no memory for a transform of length %lld",
                     (long long)n);
    } else {
        for (int64_t o = 0; o < outer; o++)
            for (int64_t i = 0; i < inner; i++) {
                cplx *line = w + o * n * inner + i;
                for (int64_t j = 0; j < n; j++) a[j] = line[j * inner];
                plan_exec(p, a, b);
                for (int64_t j = 0; j < n; j++) line[j * inner] = b[j];
            }
    }
    free(a);
    free(b);
    plan_free(p);
    return st;
}

/* Row-major element offset of idx in a contiguous array of shape. */
static int64_t linear(const int64_t *idx, const int64_t *shape, int rank) {
    int64_t off = 0;
    for (int i = 0; i < rank; i++) off = off * shape[i] + idx[i];
    return off;
}

uint32_t ref_fft_support(const gfp_op_query *q) {
    if (q->op != GFP_OP_FFT || q->n_inputs != 1 || q->n_outputs != 1) return GFP_SUPPORT_NONE;
    int32_t x = q->input_dtypes[0], y = q->output_dtypes[0];
    bool ok = (ref_is_complex(x) && y == x) || (x == GFP_F32 && y == GFP_C64) ||
              (x == GFP_F64 && y == GFP_C128) || (x == GFP_C64 && y == GFP_F32) ||
              (x == GFP_C128 && y == GFP_F64);
    return ok ? GFP_SUPPORT_STRIDED : GFP_SUPPORT_NONE;
}

/* Checks the params against x and y; *dl receives the last listed dim. */
static gfp_status check_launch(const gfp_fft_params *prm, const gfp_tensor *x,
                               const gfp_tensor *y, int *dl) {
    const char *name = "fft";
    if (prm->kind > GFP_FFT_C2R)
        return pk_fail(GFP_ERR_INVALID, "%s: kind %u is not GFP_FFT_C2C, R2C or C2R", name,
                       (unsigned)prm->kind);
    if (prm->inverse > 1)
        return pk_fail(GFP_ERR_INVALID, "%s: inverse is %u; it must be 0 or 1", name,
                       (unsigned)prm->inverse);
    if (x->rank != y->rank)
        return pk_fail(GFP_ERR_INVALID, "%s: x has rank %d and y rank %d; they must be equal",
                       name, (int)x->rank, (int)y->rank);
    int rank = x->rank;
    if (prm->n_dims < 1 || prm->n_dims > (uint32_t)rank)
        return pk_fail(GFP_ERR_INVALID, "%s: n_dims is %u; it must be in [1, rank %d]", name,
                       (unsigned)prm->n_dims, rank);
    bool seen[GFP_MAX_RANK] = {false};
    for (uint32_t i = 0; i < prm->n_dims; i++) {
        int32_t d = prm->dims[i];
        if (d < 0 || d >= rank || seen[d])
            return pk_fail(GFP_ERR_INVALID, "%s: dims[%u] = %d is out of [0, %d) or repeated",
                           name, (unsigned)i, (int)d, rank);
        seen[d] = true;
    }
    *dl = prm->dims[prm->n_dims - 1];
    int32_t xd = x->dtype, yd = y->dtype;
    bool dt_ok;
    switch (prm->kind) {
    case GFP_FFT_C2C: dt_ok = ref_is_complex(xd) && yd == xd; break;
    case GFP_FFT_R2C:
        dt_ok = (xd == GFP_F32 && yd == GFP_C64) || (xd == GFP_F64 && yd == GFP_C128);
        break;
    default: dt_ok = (xd == GFP_C64 && yd == GFP_F32) || (xd == GFP_C128 && yd == GFP_F64); break;
    }
    static const char *const kinds[3] = {"C2C", "R2C", "C2R"};
    if (!dt_ok)
        return pk_fail(GFP_ERR_INVALID,
                       "%s: %s takes %s to %s; got %s to %s", name, kinds[prm->kind],
                       prm->kind == GFP_FFT_R2C ? "f32/f64" : "c64/c128",
                       prm->kind == GFP_FFT_C2C ? "the same dtype"
                                                : "the dtype of the same precision",
                       pk_dtype_name(xd), pk_dtype_name(yd));
    for (int d = 0; d < rank; d++) {
        int64_t want = x->sizes[d];
        if (d == *dl && prm->kind == GFP_FFT_R2C) want = x->sizes[d] / 2 + 1;
        bool c2r_half = d == *dl && prm->kind == GFP_FFT_C2R;
        if (c2r_half ? x->sizes[d] != y->sizes[d] / 2 + 1 : y->sizes[d] != want)
            return pk_fail(GFP_ERR_INVALID,
                           "%s: dim %d has size %lld in x and %lld in y, which %s does not "
                           "allow%s", name, d, (long long)x->sizes[d], (long long)y->sizes[d],
                           kinds[prm->kind],
                           d == *dl && prm->kind != GFP_FFT_C2C ? " (the onesided dim holds n/2 + 1 bins)" : "");
        if (seen[d] && (prm->kind == GFP_FFT_C2R ? y->sizes[d] : x->sizes[d]) == 0)
            return pk_fail(GFP_ERR_INVALID, "%s: the transformed dim %d has signal length 0",
                           name, d);
    }
    return GFP_OK;
}

gfp_status ref_fft_launch(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                          const gfp_tensor *const *out, uint32_t n_out, const void *params) {
    if (op != GFP_OP_FFT)
        return pk_fail(GFP_ERR_INTERNAL, "fft: op %u is not a Fourier transform", (unsigned)op);
    gfp_status st = pk_expect_counts(n_in, 1, n_out, 1, "fft");
    if (st == GFP_OK) st = pk_check_params(params, GFP_FFT_PARAMS_SIZE_V1_3, "fft");
    if (st != GFP_OK) return st;
    const gfp_fft_params *prm = params;
    const gfp_tensor *x = in[0], *y = out[0];
    int dl = 0;
    st = check_launch(prm, x, y, &dl);
    if (st != GFP_OK) return st;
    if (pk_numel(x) == 0 || pk_numel(y) == 0) return GFP_OK; /* an empty batch */
    int rank = x->rank, sign = prm->inverse ? 1 : -1;
    for (int d = 0; d < rank; d++)
        if (x->sizes[d] > MAX_LENGTH || y->sizes[d] > MAX_LENGTH)
            return pk_fail(GFP_ERR_INVALID, "fft: dim %d is longer than the reference's limit "
                           "of 2^40 elements", d);

    /* w: x as complex, in x's shape. */
    int64_t nx = pk_numel(x), ny = pk_numel(y);
    cplx *w = cplx_alloc(nx), *w2 = NULL;
    if (!w) return pk_fail(GFP_ERR_OUT_OF_MEMORY, "fft: no memory for %lld elements", (long long)nx);
    int64_t idx[GFP_MAX_RANK] = {0}, k = 0;
    do w[k++] = ref_load_c(x, ref_offset(x, idx));
    while (ref_next_index(idx, x->sizes, rank));

    for (uint32_t i = 0; i < prm->n_dims && st == GFP_OK; i++)
        if (prm->kind != GFP_FFT_C2R || prm->dims[i] != dl)
            st = transform_dim(w, x->sizes, rank, prm->dims[i], sign);
    const int64_t *wshape = x->sizes;
    if (st == GFP_OK && prm->kind == GFP_FFT_C2R) {
        /* Extend each line of dl to n bins by conjugate symmetry, then
         * transform it; the real part is the result. */
        w2 = cplx_alloc(ny);
        if (!w2) st = pk_fail(GFP_ERR_OUT_OF_MEMORY, "fft: no memory for %lld elements",
                              (long long)ny);
        int64_t n = y->sizes[dl], h = x->sizes[dl];
        memset(idx, 0, sizeof idx);
        k = 0;
        if (st == GFP_OK) do {
                int64_t j = idx[dl];
                int64_t src[GFP_MAX_RANK];
                memcpy(src, idx, sizeof src);
                src[dl] = j < h ? j : n - j;
                cplx v = w[linear(src, x->sizes, rank)];
                w2[k++] = j < h ? v : conj(v);
            } while (ref_next_index(idx, y->sizes, rank));
        if (st == GFP_OK) st = transform_dim(w2, y->sizes, rank, dl, sign);
        wshape = y->sizes;
    }
    if (st == GFP_OK) {
        const cplx *r = w2 ? w2 : w;
        memset(idx, 0, sizeof idx);
        do ref_store_c(y, ref_offset(y, idx), r[linear(idx, wshape, rank)] * prm->scale);
        while (ref_next_index(idx, y->sizes, rank));
    }
    free(w);
    free(w2);
    return st;
}
