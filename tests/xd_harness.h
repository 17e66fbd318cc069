/* SPDX-License-Identifier: BSD-3-Clause */
/* xd_harness.h — the cross-device test harness: the same op on a device
 * under test and on the reference plugin, through libgraft's public API, with
 * the results compared on the host.
 *
 * Inputs are made on the host from a seeded generator (NaN, infinities,
 * -0.0 and extreme integers among them) and built on both devices through
 * the same layout recipe, so the device's kernels see real strided, offset
 * and broadcast views of device memory, not copies.
 *
 * Each device's suite has a small header of its own (tests/opencl/xd_test.h,
 * tests/cuda/cu_xd.h, tests/vulkan/vk_test.h, tests/cpu_onednn/onednn_xd.h)
 * whose init calls xd_init_target() with what is
 * particular to it: the plugin, the device to test, and the words used when
 * that device is missing. Without the device a program prints why (the
 * plugin's own reason) and exits with XD_SKIP, which CTest reports as
 * skipped. (tests/abi_pair.h is the same comparison one level down: one op
 * descriptor launched on two plugins through tests/abi_host.h, whole output
 * buffers compared, sentinels outside the views included, for what the
 * public API cannot express.) */
#ifndef GRAFT_TESTS_XD_HARNESS_H
#define GRAFT_TESTS_XD_HARNESS_H

#include <graft.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define SZ(...) ((const int64_t[]){__VA_ARGS__})
#define XD_SKIP 77

/* The device under test and the oracle (the reference plugin's device). */
static gf_device *xd_dev, *xd_ref;

/* What a device's suite tests. */
typedef struct xd_target {
    const char *plugin; /* the plugin's name, "opencl" */
    const char *kind;   /* the device in messages, "OpenCL" */
    const char *spec;   /* the device to test, "opencl:0" */
} xd_target;

/* Finds both devices: 0; XD_SKIP after printing why the device under test
 * is missing; 1 when the reference plugin has no device. */
static inline int xd_init_target(const xd_target *t) {
    gf_init();
    for (int i = 0; i < gf_device_count() && !xd_ref; i++) {
        gf_device *d = gf_device_at(i);
        if (d && !strcmp(gf_device_plugin(d), "reference")) xd_ref = d;
    }
    if (!xd_ref) {
        fprintf(stderr,
                "the reference plugin has no device (run with GRAFT_PLUGINS=%s,reference)\n",
                t->plugin);
        return 1;
    }
    xd_dev = gf_device_find(t->spec);
    if (!xd_dev) {
        const char *why = NULL;
        gf_plugin_info p;
        for (int i = 0; i < gf_plugin_count() && !why; i++)
            if (gf_plugin_get_info(i, &p) == GF_OK && !strcmp(p.name, t->plugin)) why = p.reason;
        if (!why)
            fprintf(stderr, "SKIPPED: no %s device: the %s plugin was not found\n", t->kind,
                    t->plugin);
        else if (!p.loaded)
            fprintf(stderr, "SKIPPED: no %s device: the %s plugin did not load (%s)\n", t->kind,
                    t->plugin, why);
        else
            fprintf(stderr, "SKIPPED: no %s device: %s\n", t->kind, why);
        return XD_SKIP;
    }
    fprintf(stderr, "testing %s (%s) against %s\n", gf_device_spec(xd_dev), gf_device_name(xd_dev),
            gf_device_spec(xd_ref));
    return 0;
}

/* Whether the device under test stores dtype dt. */
static inline bool xd_stores(gf_dtype dt) {
    gf_device_info info;
    return gf_device_get_info(xd_dev, &info) == GF_OK && (info.dtypes & (1u << dt));
}

/* A dtype's name, short for test labels. */
static inline const char *xd_dtn(gf_dtype dt) { return gf_dtype_name(dt); }

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
    XV_PLAIN     /* XV_GENERAL without NaN, infinities and extremes */
} xd_values;

static inline bool xd_is_float(gf_dtype dt) {
    return dt == GF_F32 || dt == GF_F64 || dt == GF_F16 || dt == GF_BF16;
}

/* n values for dtype dt, as doubles (integers exact up to 2^53). */
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

/* How a logical tensor lies in device memory. */
typedef enum xd_layout {
    XL_CONTIG,     /* row-major */
    XL_TRANSPOSED, /* the transpose of a row-major storage (rank >= 2) */
    XL_STEP,       /* every other element of a storage twice as wide (last dim) */
    XL_OFFSET,     /* a narrow of a larger storage: a nonzero offset */
    XL_COUNT
} xd_layout;
static const char *const xd_layout_name[XL_COUNT] = {"contiguous", "transposed", "step-2 slice",
                                                     "offset"};

/* The tensor of sizes holding vals (row-major) on dev, laid out as L. Gaps
 * hold a sentinel, so a kernel that reads them is caught. dt is f32, f64,
 * i32, i64 or bool (half types are made with xd_half_make). */
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
    xd_pair p = {xd_make(xd_dev, dt, rank, sizes, vals, L),
                 xd_make(xd_ref, dt, rank, sizes, vals, L)};
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

/* A half-precision pair: d is the f32 pair's device tensor converted to
 * half (f16 or bf16) on the device; r is what those half values are in f32,
 * on the reference, so the oracle computes on exactly the device's inputs. */
static inline xd_pair xd_half_make(gf_dtype half, const xd_pair *f32) {
    xd_pair out = {gf_to_dtype(f32->d, half), NULL};
    gf_tensor *back = out.d ? gf_to_dtype(out.d, GF_F32) : NULL;
    out.r = back ? gf_to_device(back, xd_ref) : NULL;
    gf_tensor_release(back);
    return out;
}

/* ------------------------------------------------------------ comparison */
typedef struct xd_tol {
    double rtol, atol;
} xd_tol;

/* A few ulp of the dtype: device math functions are within 1-4 ulp of the
 * correctly rounded result, the C library's too. Exact for integers, bool. */
static inline xd_tol xd_default_tol(gf_dtype dt) {
    if (dt == GF_F32) return (xd_tol){4e-6, 1e-6};
    if (dt == GF_F64) return (xd_tol){1e-12, 1e-13};
    return (xd_tol){0, 0};
}
/* A sum of k products: rounding grows with k in f32 (vendor libraries sum in
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

/* A tensor's elements on the host: the raw bytes of its dtype, half types
 * through an f32 copy. */
typedef struct xd_host {
    gf_dtype dt;
    int64_t n;
    char *raw;
} xd_host;

static inline bool xd_host_read(const gf_tensor *t, xd_host *h) {
    gf_tensor *c = NULL;
    h->dt = gf_tensor_dtype(t);
    if (h->dt == GF_F16 || h->dt == GF_BF16) {
        t = c = gf_to_dtype(t, GF_F32);
        h->dt = GF_F32;
    }
    h->n = t ? gf_tensor_numel(t) : 0;
    size_t es = gf_dtype_size(h->dt);
    h->raw = calloc((size_t)(h->n > 0 ? h->n : 1), es);
    bool ok = t && gf_tensor_to_host(t, h->raw, (size_t)h->n * es) == GF_OK;
    gf_tensor_release(c);
    return ok;
}

/* Element i as a double (for the float tolerance and for printing). */
static inline double xd_host_at(const xd_host *h, int64_t i) {
    switch (h->dt) {
    case GF_F32: return ((const float *)h->raw)[i];
    case GF_F64: return ((const double *)h->raw)[i];
    case GF_I32: return ((const int32_t *)h->raw)[i];
    case GF_I64: return (double)((const int64_t *)h->raw)[i];
    default: return ((const uint8_t *)h->raw)[i];
    }
}

/* Element i of an integer or bool tensor, exactly (i64 beyond 2^53 too). */
static inline int64_t xd_host_int(const xd_host *h, int64_t i) {
    switch (h->dt) {
    case GF_I32: return ((const int32_t *)h->raw)[i];
    case GF_I64: return ((const int64_t *)h->raw)[i];
    default: return ((const uint8_t *)h->raw)[i];
    }
}

/* The largest difference of got and want over every element (complex ones
 * through their real views), and the largest |want|: for errors relative
 * to a result's scale (a transform's bins). ok is false when either is
 * missing or unreadable, or they differ in size; a NaN difference is the
 * largest. Releases neither. */
typedef struct xd_err {
    bool ok;
    double err, top; /* max |got - want|, max |want| */
    int64_t at;      /* where err is */
} xd_err;

static inline xd_err xd_err_of(const gf_tensor *got, const gf_tensor *want) {
    xd_err r = {false, INFINITY, 0, 0};
    bool cx = got && want && gf_dtype_is_complex(gf_tensor_dtype(want));
    gf_tensor *g = cx ? gf_view_as_real(got) : NULL, *w = cx ? gf_view_as_real(want) : NULL;
    const gf_tensor *a = cx ? g : got, *b = cx ? w : want;
    xd_host ha = {0}, hb = {0};
    bool read_a = a && xd_host_read(a, &ha), read_b = b && xd_host_read(b, &hb);
    if (read_a && read_b && ha.n == hb.n) {
        r.ok = true;
        r.err = 0;
        for (int64_t i = 0; i < hb.n; i++) {
            double e = fabs(xd_host_at(&ha, i) - xd_host_at(&hb, i)), m = fabs(xd_host_at(&hb, i));
            if (!isnan(r.err) && (isnan(e) || e > r.err)) r.err = e, r.at = i;
            if (m > r.top) r.top = m;
        }
    }
    free(ha.raw);
    free(hb.raw);
    gf_tensor_release(g);
    gf_tensor_release(w);
    return r;
}

/* got (device) against want (reference): dtype, shape and every element,
 * floats within tol (NaN matches NaN, infinities themselves), integers and
 * bool exactly. A half-type result compares as its f32 values against an f32
 * oracle. Prints up to 5 mismatches under `what`. */
static inline void xd_check_tol(const char *what, const gf_tensor *got, const gf_tensor *want,
                                xd_tol tol) {
    if (!got || !want) {
        CHECK_MSG(got && want, "%s: the %s result is NULL: %s", what, got ? "reference" : "device",
                  gf_last_error());
        return;
    }
    gf_dtype gd = gf_tensor_dtype(got), wd = gf_tensor_dtype(want);
    bool half = gd == GF_F16 || gd == GF_BF16;
    bool shape_ok =
        (gd == wd || (half && wd == GF_F32)) && gf_tensor_rank(got) == gf_tensor_rank(want);
    for (int i = 0; shape_ok && i < gf_tensor_rank(want); i++)
        shape_ok = gf_tensor_sizes(got)[i] == gf_tensor_sizes(want)[i];
    CHECK_MSG(shape_ok, "%s: the results differ in dtype (%s vs %s) or shape", what,
              gf_dtype_name(gd), gf_dtype_name(wd));
    if (!shape_ok) return;
    xd_host a, b;
    bool read_a = xd_host_read(got, &a), read_b = xd_host_read(want, &b);
    CHECK_MSG(read_a && read_b, "%s: reading the results failed: %s", what, gf_last_error());
    int bad = 0;
    for (int64_t i = 0; read_a && read_b && i < b.n; i++) {
        double x = xd_host_at(&a, i), y = xd_host_at(&b, i);
        bool ok;
        if (!xd_is_float(b.dt)) ok = xd_host_int(&a, i) == xd_host_int(&b, i);
        else if (isnan(x) || isnan(y)) ok = isnan(x) && isnan(y);
        else if (isinf(x) || isinf(y)) ok = x == y;
        else ok = fabs(x - y) <= tol.atol + tol.rtol * fabs(y);
        if (!ok && bad++ < 5)
            fprintf(stderr, "  %s: element %lld: device %.17g, reference %.17g\n", what,
                    (long long)i, x, y);
    }
    CHECK_MSG(bad == 0, "%s: %d of %lld elements differ", what, bad, (long long)b.n);
    free(a.raw);
    free(b.raw);
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

/* Ends a program: nothing may leak (gf_shutdown refuses), then the report. */
static inline int xd_finish(void) {
    gf_status s = gf_shutdown();
    CHECK_MSG(s == GF_OK, "gf_shutdown: %s (a tensor leaked?)", gf_last_error());
    return CHECK_REPORT();
}

#endif
