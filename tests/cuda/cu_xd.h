/* cu_xd.h — the CUDA cross-device suite's helpers: the same op on the CUDA
 * device and on the reference plugin, through libgraft's public API, with
 * the results compared on the host.
 *
 * The programs run with GRAFT_PLUGINS=cuda,reference: the device under test
 * is cuda:0 and the oracle the reference plugin's device. Inputs are made on
 * the host from a seeded generator (NaN, infinities, -0.0 and extreme
 * integers among them) and built on both devices through the same view
 * recipe, so the kernels see real strided, offset and broadcast views of
 * device memory. Without a CUDA device a program prints why (the plugin's
 * own reason) and exits with 77, which CTest reports as skipped.
 *
 * GRAFT_TEST_XD_DEVICE names another device to test instead of cuda:0 (with
 * GRAFT_PLUGINS widened to its plugin); it exists to try the suite itself on
 * a machine without a GPU. */
#ifndef GRAFT_TESTS_CU_XD_H
#define GRAFT_TESTS_CU_XD_H

#include <graft.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define SZ(...) ((const int64_t[]){__VA_ARGS__})
#define XD_SKIP 77

static gf_device *xd_dev, *xd_ref;

/* Finds both devices: 0, XD_SKIP (printing why) or 1. */
static inline int xd_init(void) {
    gf_init();
    for (int i = 0; i < gf_device_count() && !xd_ref; i++) {
        gf_device *d = gf_device_at(i);
        if (d && !strcmp(gf_device_plugin(d), "reference")) xd_ref = d;
    }
    if (!xd_ref) {
        fprintf(stderr, "the reference plugin has no device (run with GRAFT_PLUGINS=cuda,reference)\n");
        return 1;
    }
    const char *spec = getenv("GRAFT_TEST_XD_DEVICE");
    xd_dev = gf_device_find(spec && spec[0] ? spec : "cuda:0");
    if (!xd_dev) {
        bool said = false;
        for (int i = 0; i < gf_plugin_count(); i++) {
            gf_plugin_info p;
            if (gf_plugin_get_info(i, &p) == GF_OK && !strcmp(p.name, "cuda")) {
                fprintf(stderr, "SKIPPED: no CUDA device: %s\n",
                        p.loaded ? p.reason : "the cuda plugin did not load");
                if (!p.loaded) fprintf(stderr, "  (%s)\n", p.reason);
                said = true;
            }
        }
        if (!said) fprintf(stderr, "SKIPPED: no CUDA device: the cuda plugin was not found\n");
        return XD_SKIP;
    }
    fprintf(stderr, "testing %s (%s) against %s\n", gf_device_spec(xd_dev), gf_device_name(xd_dev),
            gf_device_spec(xd_ref));
    return 0;
}

static inline bool xd_stores(gf_dtype dt) {
    gf_device_info info;
    return gf_device_get_info(xd_dev, &info) == GF_OK && (info.dtypes & (1u << dt));
}

/* ------------------------------------------------------------ values */
static uint64_t xd_state = 0x9E3779B97F4A7C15ull;
static inline void xd_seed(uint64_t s) { xd_state = s * 0x9E3779B97F4A7C15ull + 1; }
static inline uint64_t xd_next(void) {
    xd_state ^= xd_state << 13;
    xd_state ^= xd_state >> 7;
    xd_state ^= xd_state << 17;
    return xd_state;
}
static inline double xd_uniform(double lo, double hi) {
    return lo + (hi - lo) * (double)(xd_next() >> 11) * 0x1p-53;
}

typedef enum xd_values {
    XV_GENERAL,  /* floats in [-4, 4] with specials; integers in [-50, 50] with extremes */
    XV_POSITIVE, /* floats in (0, 8]; integers in [1, 50] */
    XV_SMALL,    /* floats in [-2, 2], no specials; integers in [-5, 5] */
    XV_PLAIN     /* XV_GENERAL without specials */
} xd_values;

static inline bool xd_is_float(gf_dtype dt) {
    return dt == GF_F32 || dt == GF_F64 || dt == GF_F16 || dt == GF_BF16;
}

/* n values for dtype dt, as doubles (integers exact). */
static inline double *xd_vals(gf_dtype dt, int64_t n, xd_values kind) {
    double *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    static const double fspecial[] = {0.0, -0.0, NAN, INFINITY, -INFINITY, 1e30, -1e-30, 0.5};
    static const double ispecial[] = {0, 1, -1, 2147483647.0, -2147483648.0, 1e15, -1e15};
    for (int64_t i = 0; i < n; i++) {
        double x;
        if (dt == GF_BOOL) {
            x = (double)(xd_next() & 1);
        } else if (xd_is_float(dt)) {
            x = kind == XV_POSITIVE ? xd_uniform(1e-3, 8.0)
                : kind == XV_SMALL  ? xd_uniform(-2.0, 2.0)
                                    : xd_uniform(-4.0, 4.0);
            if (kind == XV_GENERAL && i % 11 == 3) x = fspecial[(i / 11) % 8];
        } else {
            x = kind == XV_POSITIVE ? (double)(1 + (int64_t)(xd_next() % 50))
                : kind == XV_SMALL  ? (double)((int64_t)(xd_next() % 11) - 5)
                                    : (double)((int64_t)(xd_next() % 101) - 50);
            if (kind == XV_GENERAL && i % 13 == 5) {
                x = ispecial[(i / 13) % 7];
                if (dt == GF_I32 && fabs(x) > 2147483647.0) x = -x / 1e6;
            }
        }
        v[i] = x;
    }
    return v;
}

/* ------------------------------------------------------------ tensors */
static inline int64_t xd_numel(int rank, const int64_t *sizes) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= sizes[i];
    return n;
}

static inline void xd_store(gf_dtype dt, void *dst, int64_t i, double v) {
    switch (dt) {
    case GF_F32: ((float *)dst)[i] = (float)v; break;
    case GF_F64: ((double *)dst)[i] = v; break;
    case GF_I32: ((int32_t *)dst)[i] = (int32_t)v; break;
    case GF_I64: ((int64_t *)dst)[i] = (int64_t)v; break;
    default: ((uint8_t *)dst)[i] = v != 0.0; break;
    }
}

/* How a logical tensor lies in memory. */
typedef enum xd_layout {
    XL_CONTIG,     /* row-major */
    XL_TRANSPOSED, /* the transpose of a row-major storage (rank >= 2) */
    XL_STEP,       /* every other element of a storage twice as wide (last dim) */
    XL_OFFSET,     /* a narrow of a larger storage: a nonzero offset */
    XL_COUNT
} xd_layout;
static const char *const xd_layout_name[XL_COUNT] = {"contiguous", "transposed", "step-2",
                                                     "offset"};

/* The tensor of sizes holding vals (row-major) on dev, laid out as L. Gaps
 * hold a sentinel, so a kernel that reads them is caught. dt is f32, f64,
 * i32, i64 or bool (half types are made with xd_half). */
static inline gf_tensor *xd_make(gf_device *dev, gf_dtype dt, int rank, const int64_t *sizes,
                                 const double *vals, xd_layout L) {
    if (rank == 0 || (L == XL_TRANSPOSED && rank < 2)) L = XL_CONTIG;
    int64_t n = xd_numel(rank, sizes), big[GF_MAX_RANK] = {0};
    for (int i = 0; i < rank; i++) big[i] = sizes[i];
    int64_t extra = L == XL_OFFSET ? 3 : 0;
    if (L == XL_STEP) big[rank - 1] *= 2;
    if (L == XL_TRANSPOSED) {
        big[rank - 2] = sizes[rank - 1];
        big[rank - 1] = sizes[rank - 2];
    }
    int64_t bn = xd_numel(rank, big) + extra;
    char *buf = calloc((size_t)(bn > 0 ? bn : 1), 8);
    for (int64_t i = 0; i < bn; i++) xd_store(dt, buf, i, dt == GF_BOOL ? 1.0 : -777.0);
    for (int64_t i = 0; i < n; i++) {
        int64_t at = i;
        if (L == XL_STEP) at = 2 * i;
        if (L == XL_OFFSET) at = i + extra;
        if (L == XL_TRANSPOSED) {
            int64_t r = sizes[rank - 2], c = sizes[rank - 1], mat = r * c;
            at = (i / mat) * mat + (i % c) * r + (i % mat) / c;
        }
        xd_store(dt, buf, at, vals[i]);
    }
    int64_t flat = bn;
    gf_tensor *base = L == XL_OFFSET ? gf_from_data(buf, &flat, 1, dt, dev)
                                     : gf_from_data(buf, big, rank, dt, dev);
    free(buf);
    if (!base) return NULL;
    gf_tensor *v = NULL;
    switch (L) {
    case XL_STEP: v = gf_slice(base, rank - 1, 0, big[rank - 1], 2); break;
    case XL_TRANSPOSED: v = gf_transpose(base, -2, -1); break;
    case XL_OFFSET: {
        gf_tensor *nar = gf_narrow(base, 0, extra, n);
        v = nar ? gf_view(nar, sizes, rank) : NULL;
        gf_tensor_release(nar);
        break;
    }
    default: v = gf_tensor_retain(base); break;
    }
    gf_tensor_release(base);
    return v;
}

/* The same tensor on the device under test (d) and on the reference (r). */
typedef struct xd_pair {
    gf_tensor *d, *r;
} xd_pair;

static inline xd_pair xd_pair_make(gf_dtype dt, int rank, const int64_t *sizes, const double *vals,
                                   xd_layout L) {
    xd_pair p = {xd_make(xd_dev, dt, rank, sizes, vals, L), xd_make(xd_ref, dt, rank, sizes, vals, L)};
    return p;
}
static inline xd_pair xd_pair_rand(gf_dtype dt, int rank, const int64_t *sizes, xd_values kind,
                                   xd_layout L) {
    double *v = xd_vals(dt, xd_numel(rank, sizes), kind);
    xd_pair p = xd_pair_make(dt, rank, sizes, v, L);
    free(v);
    return p;
}
static inline void xd_pair_release(xd_pair p) {
    gf_tensor_release(p.d);
    gf_tensor_release(p.r);
}

/* A half-precision pair: h is the f32 pair's device tensor converted to
 * half (f16 or bf16) on the device; r is what those half values are in f32,
 * on the reference, so the oracle computes on exactly the device's inputs. */
typedef struct xd_half {
    gf_tensor *h, *r;
} xd_half;

static inline xd_half xd_half_make(gf_dtype half, const xd_pair *f32) {
    xd_half out = {gf_to_dtype(f32->d, half), NULL};
    gf_tensor *back = out.h ? gf_to_dtype(out.h, GF_F32) : NULL;
    out.r = back ? gf_to_device(back, xd_ref) : NULL;
    gf_tensor_release(back);
    return out;
}
static inline void xd_half_release(xd_half p) {
    gf_tensor_release(p.h);
    gf_tensor_release(p.r);
}

/* ------------------------------------------------------------ comparison */
typedef struct xd_tol {
    double rtol, atol;
} xd_tol;

/* A few ulp of the dtype: CUDA's math functions are within 1-4 ulp of the
 * correctly rounded result, the C library's too. Exact for integers, bool. */
static inline xd_tol xd_default_tol(gf_dtype dt) {
    if (dt == GF_F32) return (xd_tol){4e-6, 1e-6};
    if (dt == GF_F64) return (xd_tol){1e-12, 1e-13};
    return (xd_tol){0, 0};
}
/* A sum of k products: rounding grows with k in f32 (cuBLAS and cuDNN sum in
 * f32, the reference in double). */
static inline xd_tol xd_sum_tol(gf_dtype dt, int64_t k) {
    if (dt == GF_F32) return (xd_tol){2e-5, 2e-6 * (double)(k > 0 ? k : 1)};
    if (dt == GF_F64) return (xd_tol){1e-12, 1e-13 * (double)(k > 0 ? k : 1)};
    return (xd_tol){0, 0};
}
/* One rounding to the half type, on top of f32 computation. */
static inline xd_tol xd_half_tol(gf_dtype half) {
    return half == GF_F16 ? (xd_tol){2e-3, 2e-3} : (xd_tol){1.6e-2, 1.6e-2};
}

/* Reads t (any dtype; half types through an f32 copy) into doubles. */
static inline double *xd_read(const gf_tensor *t, int64_t *n_out) {
    gf_tensor *c = NULL;
    gf_dtype dt = gf_tensor_dtype(t);
    if (dt == GF_F16 || dt == GF_BF16) {
        c = gf_to_dtype(t, GF_F32);
        t = c;
        dt = GF_F32;
    }
    int64_t n = t ? gf_tensor_numel(t) : 0;
    size_t es = gf_dtype_size(dt);
    char *raw = calloc((size_t)(n > 0 ? n : 1), es);
    double *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    if (!t || gf_tensor_to_host(t, raw, (size_t)n * es) != GF_OK) {
        free(raw);
        free(v);
        gf_tensor_release(c);
        return NULL;
    }
    for (int64_t i = 0; i < n; i++) {
        switch (dt) {
        case GF_F32: v[i] = ((float *)raw)[i]; break;
        case GF_F64: v[i] = ((double *)raw)[i]; break;
        case GF_I32: v[i] = ((int32_t *)raw)[i]; break;
        case GF_I64: v[i] = (double)((int64_t *)raw)[i]; break;
        default: v[i] = ((uint8_t *)raw)[i]; break;
        }
    }
    free(raw);
    gf_tensor_release(c);
    *n_out = n;
    return v;
}

/* got (device) against want (reference): dtype (half types compare as their
 * f32 values), shape and every element. */
static inline void xd_check_tol(const char *what, const gf_tensor *got, const gf_tensor *want,
                                xd_tol tol) {
    if (!got || !want) {
        CHECK_MSG(got && want, "%s: the %s result is NULL: %s", what, got ? "reference" : "device",
                  gf_last_error());
        return;
    }
    gf_dtype gd = gf_tensor_dtype(got), wd = gf_tensor_dtype(want);
    bool half = gd == GF_F16 || gd == GF_BF16;
    bool shape_ok = (gd == wd || (half && wd == GF_F32)) && gf_tensor_rank(got) == gf_tensor_rank(want);
    for (int i = 0; shape_ok && i < gf_tensor_rank(want); i++)
        shape_ok = gf_tensor_sizes(got)[i] == gf_tensor_sizes(want)[i];
    CHECK_MSG(shape_ok, "%s: the results differ in dtype (%s vs %s) or shape", what,
              gf_dtype_name(gd), gf_dtype_name(wd));
    if (!shape_ok) return;
    int64_t na = 0, nb = 0;
    double *a = xd_read(got, &na), *b = xd_read(want, &nb);
    CHECK_MSG(a && b, "%s: reading the results failed: %s", what, gf_last_error());
    int bad = 0;
    for (int64_t i = 0; a && b && i < nb; i++) {
        double x = a[i], y = b[i];
        bool ok;
        if (isnan(x) || isnan(y)) ok = isnan(x) && isnan(y);
        else if (isinf(x) || isinf(y)) ok = x == y;
        else ok = fabs(x - y) <= tol.atol + tol.rtol * fabs(y);
        if (!ok && bad++ < 5)
            fprintf(stderr, "  %s: element %lld: device %.17g, reference %.17g\n", what,
                    (long long)i, x, y);
    }
    CHECK_MSG(bad == 0, "%s: %d of %lld elements differ", what, bad, (long long)nb);
    free(a);
    free(b);
}

static inline void xd_check(const char *what, const gf_tensor *got, const gf_tensor *want) {
    xd_check_tol(what, got, want, xd_default_tol(want ? gf_tensor_dtype(want) : GF_F32));
}
/* Checks and releases a result pair. */
static inline void xd_check_pair(const char *what, gf_tensor *got, gf_tensor *want) {
    xd_check(what, got, want);
    gf_tensor_release(got);
    gf_tensor_release(want);
}
static inline void xd_check_pair_tol(const char *what, gf_tensor *got, gf_tensor *want, xd_tol t) {
    xd_check_tol(what, got, want, t);
    gf_tensor_release(got);
    gf_tensor_release(want);
}

/* Runs at the end of a program: nothing may leak (gf_shutdown refuses). */
static inline int xd_finish(void) {
    gf_status s = gf_shutdown();
    CHECK_MSG(s == GF_OK, "gf_shutdown: %s (a tensor leaked?)", gf_last_error());
    return CHECK_REPORT();
}

#endif
