/* xd_test.h — cross-device test helpers: the same op on the OpenCL device and
 * on the reference plugin, through libgraft's public API, results compared on
 * the host.
 *
 * The tests run with GRAFT_PLUGINS=opencl,reference: the OpenCL device is
 * opencl:0 and the oracle cpu:0. Inputs are made on the host from a seeded
 * generator (with NaN, infinities, -0.0 and extreme integers among them), then
 * built on both devices through the same layout recipe, so the OpenCL kernels
 * see real views (transposed, sliced with a step, broadcast) of device memory,
 * not copies. A program exits with 77 (CTest: skipped) when there is no
 * OpenCL device, printing why. */
#ifndef GRAFT_TESTS_XD_TEST_H
#define GRAFT_TESTS_XD_TEST_H

#include <graft.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define SZ(...) ((const int64_t[]){__VA_ARGS__})

static gf_device *xd_ocl, *xd_ref;

/* Finds both devices; returns 0, or 77 after printing why there is no OpenCL
 * device (the test is then skipped), or 1 when the reference is missing. */
static inline int xd_init(void) {
    gf_init();
    xd_ref = gf_device_find("cpu:0");
    if (!xd_ref || strcmp(gf_device_plugin(xd_ref), "reference") != 0) {
        fprintf(stderr, "the reference plugin is not cpu:0 (run with GRAFT_PLUGINS=opencl,reference)\n");
        return 1;
    }
    xd_ocl = gf_device_find("opencl:0");
    if (!xd_ocl) {
        for (int i = 0; i < gf_plugin_count(); i++) {
            gf_plugin_info p;
            if (gf_plugin_get_info(i, &p) == GF_OK && !strcmp(p.name, "opencl"))
                fprintf(stderr, "skipped: no OpenCL device: %s\n", p.reason);
        }
        return 77;
    }
    return 0;
}

static inline bool xd_has_f64(void) {
    gf_device_info info;
    return gf_device_get_info(xd_ocl, &info) == GF_OK && (info.dtypes & (1u << GF_F64));
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
/* Uniform in [lo, hi). */
static inline double xd_uniform(double lo, double hi) {
    return lo + (hi - lo) * (double)(xd_next() >> 11) * 0x1p-53;
}

typedef enum xd_values {
    XV_GENERAL,  /* floats in [-4, 4] with specials; integers in [-50, 50] with extremes */
    XV_POSITIVE, /* floats in (0, 8]; integers in [1, 50] */
    XV_SMALL,    /* floats in [-2, 2], no specials; integers in [-5, 5] */
    XV_NOSPECIAL /* XV_GENERAL without NaN, inf and extremes */
} xd_values;

/* n values for dtype dt (as doubles; integers exact up to 2^53). */
static inline double *xd_vals(gf_dtype dt, int64_t n, xd_values kind) {
    double *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    static const double fspecial[] = {0.0, -0.0, NAN, INFINITY, -INFINITY, 1e30, -1e-30, 0.5};
    static const double ispecial[] = {0, 1, -1, 2147483647.0, -2147483648.0, 1e15, -1e15};
    bool is_f = dt == GF_F32 || dt == GF_F64;
    for (int64_t i = 0; i < n; i++) {
        double x;
        if (dt == GF_BOOL) {
            x = (double)(xd_next() & 1);
        } else if (is_f) {
            switch (kind) {
            case XV_POSITIVE: x = xd_uniform(1e-3, 8.0); break;
            case XV_SMALL: x = xd_uniform(-2.0, 2.0); break;
            default: x = xd_uniform(-4.0, 4.0); break;
            }
            if (kind == XV_GENERAL && i % 11 == 3) x = fspecial[(i / 11) % 8];
        } else {
            switch (kind) {
            case XV_POSITIVE: x = (double)(1 + (int64_t)(xd_next() % 50)); break;
            case XV_SMALL: x = (double)((int64_t)(xd_next() % 11) - 5); break;
            default: x = (double)((int64_t)(xd_next() % 101) - 50); break;
            }
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

/* How a logical tensor is laid out in device memory. */
typedef enum xd_layout {
    XL_CONTIG,     /* row-major */
    XL_TRANSPOSED, /* the transpose of a row-major storage (rank >= 2) */
    XL_STEP,       /* every other element of a storage twice as wide (last dim) */
    XL_OFFSET      /* a narrow of a larger storage: a nonzero offset */
} xd_layout;
static const char *const xd_layout_name[] = {"contiguous", "transposed", "step-2 slice",
                                             "offset"};

/* The tensor of sizes holding vals (row-major) on dev, laid out as L. Gaps of
 * the storage hold a sentinel, so a kernel that reads them is caught. */
static inline gf_tensor *xd_make(gf_device *dev, gf_dtype dt, int rank, const int64_t *sizes,
                                 const double *vals, xd_layout L) {
    if (rank == 0 || (L == XL_TRANSPOSED && rank < 2)) L = XL_CONTIG;
    int64_t n = xd_numel(rank, sizes), big[GF_MAX_RANK] = {0};
    for (int i = 0; i < rank; i++) big[i] = sizes[i];
    int64_t extra = 0;
    if (L == XL_STEP) big[rank - 1] *= 2;
    if (L == XL_OFFSET) extra = 3;
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
            int64_t b = i / mat, rr = (i % mat) / c, cc = i % c;
            at = b * mat + cc * r + rr;
        }
        xd_store(dt, buf, at, vals[i]);
    }
    gf_tensor *base;
    if (L == XL_OFFSET) {
        int64_t flat = bn;
        base = gf_from_data(buf, &flat, 1, dt, dev);
    } else {
        base = gf_from_data(buf, big, rank, dt, dev);
    }
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

/* A pair: the same tensor on the OpenCL device (o) and on the reference (r). */
typedef struct xd_pair {
    gf_tensor *o, *r;
} xd_pair;

static inline xd_pair xd_pair_make(gf_dtype dt, int rank, const int64_t *sizes, const double *vals,
                                   xd_layout L) {
    xd_pair p = {xd_make(xd_ocl, dt, rank, sizes, vals, L), xd_make(xd_ref, dt, rank, sizes, vals, L)};
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
    gf_tensor_release(p.o);
    gf_tensor_release(p.r);
}

/* ------------------------------------------------------------ comparison */
typedef struct xd_tol {
    double rtol, atol;
} xd_tol;
/* Defaults: a few ulp of f32 (device math functions may differ from the C
 * library by that much), tighter for f64, exact for integers and bool. */
static inline xd_tol xd_default_tol(gf_dtype dt) {
    xd_tol t = {0, 0};
    if (dt == GF_F32) t = (xd_tol){4e-6, 1e-6};
    if (dt == GF_F64) t = (xd_tol){1e-12, 1e-13};
    return t;
}

/* Compares got (on the OpenCL device) with want (the reference): shapes,
 * dtypes and every element. Prints up to 5 mismatches under `what`. */
static inline void xd_check_tol(const char *what, const gf_tensor *got, const gf_tensor *want,
                                xd_tol tol) {
    if (!got || !want) {
        CHECK_MSG(got && want, "%s: %s result is NULL: %s", what, got ? "reference" : "opencl",
                  gf_last_error());
        return;
    }
    gf_dtype dt = gf_tensor_dtype(want);
    int rank = gf_tensor_rank(want);
    bool shape_ok = gf_tensor_dtype(got) == dt && gf_tensor_rank(got) == rank;
    for (int i = 0; shape_ok && i < rank; i++)
        shape_ok = gf_tensor_sizes(got)[i] == gf_tensor_sizes(want)[i];
    CHECK_MSG(shape_ok, "%s: the results differ in dtype or shape", what);
    if (!shape_ok) return;
    int64_t n = gf_tensor_numel(want);
    size_t es = gf_dtype_size(dt);
    char *a = calloc((size_t)(n > 0 ? n : 1), es), *b = calloc((size_t)(n > 0 ? n : 1), es);
    gf_status sa = gf_tensor_to_host(got, a, (size_t)n * es);
    gf_status sb = gf_tensor_to_host(want, b, (size_t)n * es);
    CHECK_MSG(sa == GF_OK && sb == GF_OK, "%s: reading results: %s", what, gf_last_error());
    int bad = 0;
    for (int64_t i = 0; i < n && sa == GF_OK && sb == GF_OK; i++) {
        bool ok;
        double x = 0, y = 0;
        switch (dt) {
        case GF_F32:
        case GF_F64:
            x = dt == GF_F32 ? ((float *)a)[i] : ((double *)a)[i];
            y = dt == GF_F32 ? ((float *)b)[i] : ((double *)b)[i];
            if (isnan(x) || isnan(y)) ok = isnan(x) && isnan(y);
            else if (isinf(x) || isinf(y)) ok = x == y;
            else ok = fabs(x - y) <= tol.atol + tol.rtol * fabs(y);
            break;
        case GF_I32: ok = ((int32_t *)a)[i] == ((int32_t *)b)[i];
            x = ((int32_t *)a)[i];
            y = ((int32_t *)b)[i];
            break;
        case GF_I64: ok = ((int64_t *)a)[i] == ((int64_t *)b)[i];
            x = (double)((int64_t *)a)[i];
            y = (double)((int64_t *)b)[i];
            break;
        default: ok = ((uint8_t *)a)[i] == ((uint8_t *)b)[i];
            x = ((uint8_t *)a)[i];
            y = ((uint8_t *)b)[i];
            break;
        }
        if (!ok && bad++ < 5)
            fprintf(stderr, "  %s: element %lld: opencl %.17g, reference %.17g\n", what,
                    (long long)i, x, y);
    }
    CHECK_MSG(bad == 0, "%s: %d of %lld elements differ", what, bad, (long long)n);
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

static inline const char *xd_dtn(gf_dtype dt) { return gf_dtype_name(dt); }

#endif
