/* vk_test.h — helpers of the Vulkan cross-device tests.
 *
 * Every case builds the same inputs on cpu:0 (the reference plugin) and on
 * vulkan:0 from one host array, through the same view operations (so strided
 * and broadcast layouts are identical on both), runs the op on both through
 * the public API, and compares the results on the host. Expected values are
 * the reference plugin's, never the code under test's. */
#ifndef GRAFT_TESTS_VK_TEST_H
#define GRAFT_TESTS_VK_TEST_H

#include <graft.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static gf_device *vt_cpu, *vt_vk;

/* Layouts an input is built in. */
enum { VT_CONTIG = 0, VT_TRANSPOSED = 1, VT_STEP2 = 2, VT_LAYOUTS = 3 };
static const char *const vt_layout_name[VT_LAYOUTS] = {"contiguous", "transposed", "step-2"};

/* Finds both devices; returns 77 (CTest's skip code) when there is no Vulkan
 * device, printing why. */
static inline int vt_setup(void) {
    vt_cpu = gf_device_find("cpu:0");
    vt_vk = gf_device_find("vulkan:0");
    if (!vt_cpu) {
        fprintf(stderr, "no cpu:0 device: %s\n", gf_last_error());
        return 1;
    }
    if (!vt_vk) {
        int n = gf_plugin_count();
        for (int i = 0; i < n; i++) {
            gf_plugin_info info;
            if (gf_plugin_get_info(i, &info) == GF_OK && !strcmp(info.name, "vulkan"))
                fprintf(stderr, "SKIP: the vulkan plugin has no device: %s\n", info.reason);
        }
        fprintf(stderr, "SKIP: no vulkan:0 device (%s)\n", gf_last_error());
        return 77;
    }
    return 0;
}

/* A deterministic value for element i of a tensor: floats in [lo, hi),
 * integers in [-9, 9] (i32/i64) and 0/1 (bool). */
static inline double vt_value(gf_dtype dt, int64_t i, uint32_t seed, double lo, double hi) {
    uint32_t h = (uint32_t)i * 2654435761u ^ (seed * 40503u + 0x9e3779b9u);
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    double u = (h & 0xffffff) / 16777216.0;
    switch (dt) {
    case GF_F32:
    case GF_F64: return lo + (hi - lo) * u;
    case GF_BOOL: return (h >> 7) & 1;
    default: return (double)((int)(h % 19) - 9);
    }
}

static inline void vt_store(gf_dtype dt, void *p, int64_t i, double v) {
    switch (dt) {
    case GF_F32: ((float *)p)[i] = (float)v; break;
    case GF_F64: ((double *)p)[i] = v; break;
    case GF_I32: ((int32_t *)p)[i] = (int32_t)v; break;
    case GF_I64: ((int64_t *)p)[i] = (int64_t)v; break;
    default: ((uint8_t *)p)[i] = v != 0; break;
    }
}

static inline int64_t vt_numel(int rank, const int64_t *sizes) {
    int64_t n = 1;
    for (int k = 0; k < rank; k++) n *= sizes[k];
    return n;
}

/* A pair of tensors (cpu, vulkan) of logical shape sizes, values from
 * vals[i] (row-major) or vt_value, in the given layout. */
typedef struct vt_pair {
    gf_tensor *c, *v;
} vt_pair;

static inline void vt_release(vt_pair p) {
    gf_tensor_release(p.c);
    gf_tensor_release(p.v);
}

static inline vt_pair vt_make(gf_dtype dt, int rank, const int64_t *sizes, const double *vals,
                       uint32_t seed, double lo, double hi, int layout) {
    vt_pair out = {NULL, NULL};
    if (layout == VT_TRANSPOSED && rank < 2) layout = VT_CONTIG;
    if (layout == VT_STEP2 && rank < 1) layout = VT_CONTIG;
    int64_t n = vt_numel(rank, sizes);
    int64_t store_sizes[GF_MAX_RANK];
    for (int k = 0; k < rank; k++) store_sizes[k] = sizes[k];
    if (layout == VT_TRANSPOSED) {
        store_sizes[rank - 2] = sizes[rank - 1];
        store_sizes[rank - 1] = sizes[rank - 2];
    }
    if (layout == VT_STEP2) store_sizes[rank - 1] = 2 * sizes[rank - 1];
    int64_t ns = vt_numel(rank, store_sizes);
    void *buf = calloc((size_t)(ns > 0 ? ns : 1), 8);
    if (!buf) return out;
    int64_t idx[GF_MAX_RANK] = {0};
    for (int64_t i = 0; i < ns; i++) vt_store(dt, buf, i, 77.0); /* sentinel in the gaps */
    for (int64_t i = 0; i < n; i++) {
        /* Position of logical element idx in the storage. */
        int64_t pos = 0;
        int64_t st[GF_MAX_RANK], acc = 1;
        for (int k = rank - 1; k >= 0; k--) {
            st[k] = acc;
            acc *= store_sizes[k];
        }
        for (int k = 0; k < rank; k++) {
            int64_t c = idx[k], s = st[k];
            if (layout == VT_TRANSPOSED && k == rank - 2) s = st[rank - 1];
            if (layout == VT_TRANSPOSED && k == rank - 1) s = st[rank - 2];
            if (layout == VT_STEP2 && k == rank - 1) c *= 2;
            pos += c * s;
        }
        vt_store(dt, buf, pos, vals ? vals[i] : vt_value(dt, i, seed, lo, hi));
        for (int k = rank - 1; k >= 0; k--) {
            if (++idx[k] < sizes[k]) break;
            idx[k] = 0;
        }
    }
    gf_device *devs[2] = {vt_cpu, vt_vk};
    gf_tensor *res[2] = {NULL, NULL};
    for (int d = 0; d < 2; d++) {
        gf_tensor *s = gf_from_data(buf, store_sizes, rank, dt, devs[d]);
        if (layout == VT_TRANSPOSED) {
            res[d] = gf_transpose(s, rank - 2, rank - 1);
            gf_tensor_release(s);
        } else if (layout == VT_STEP2) {
            res[d] = gf_slice(s, rank - 1, 0, store_sizes[rank - 1], 2);
            gf_tensor_release(s);
        } else {
            res[d] = s;
        }
    }
    free(buf);
    out.c = res[0];
    out.v = res[1];
    return out;
}

static inline vt_pair vt_rand(gf_dtype dt, int rank, const int64_t *sizes, uint32_t seed, double lo,
                       double hi, int layout) {
    return vt_make(dt, rank, sizes, NULL, seed, lo, hi, layout);
}

/* Reads t (any device, any dtype) into a new host array of doubles. */
static inline double *vt_fetch(const gf_tensor *t, int64_t *n) {
    *n = -1;
    if (!t) return NULL;
    gf_tensor *c = gf_to_device(t, vt_cpu);
    gf_tensor *d = gf_to_dtype(c, GF_F64);
    gf_tensor_release(c);
    if (!d) return NULL;
    *n = gf_tensor_numel(d);
    double *out = malloc((size_t)(*n > 0 ? *n : 1) * sizeof(double));
    if (out && gf_tensor_to_host(d, out, (size_t)*n * sizeof(double)) != GF_OK) {
        free(out);
        out = NULL;
    }
    gf_tensor_release(d);
    return out;
}

/* Compares the vulkan result with the reference's: same shape and dtype,
 * every element within atol + rtol |ref| (NaN equal to NaN, inf to inf). */
static inline void vt_compare_(const char *file, int line, const char *what, const gf_tensor *ref,
                        const gf_tensor *got, double atol, double rtol) {
    if (!ref || !got) {
        check_failed_++;
        check_case_failed_ = 1;
        fprintf(stderr, "%s:%d: %s: %s failed: %s\n", file, line, what,
                ref ? "the vulkan op" : "the reference op", gf_last_error());
        gf_clear_error();
        return;
    }
    bool same = gf_tensor_rank(ref) == gf_tensor_rank(got) &&
                gf_tensor_dtype(ref) == gf_tensor_dtype(got);
    for (int k = 0; same && k < gf_tensor_rank(ref); k++)
        same = gf_tensor_sizes(ref)[k] == gf_tensor_sizes(got)[k];
    if (!same) {
        check_failed_++;
        check_case_failed_ = 1;
        fprintf(stderr, "%s:%d: %s: shape or dtype differs\n", file, line, what);
        return;
    }
    int64_t n1, n2;
    double *a = vt_fetch(ref, &n1), *b = vt_fetch(got, &n2);
    int bad = 0;
    if (!a || !b || n1 != n2) {
        bad = 1;
        fprintf(stderr, "%s:%d: %s: could not read the results: %s\n", file, line, what,
                gf_last_error());
    }
    for (int64_t i = 0; !bad && i < n1; i++)
        if (!check_close_(b[i], a[i], atol, rtol)) {
            bad = 1;
            fprintf(stderr, "%s:%d: %s: element %lld is %.17g, the reference has %.17g\n", file,
                    line, what, (long long)i, b[i], a[i]);
        }
    free(a);
    free(b);
    if (bad) {
        check_failed_++;
        check_case_failed_ = 1;
    } else {
        check_passed_++;
    }
}
#define VT_COMPARE(what, ref, got, atol, rtol) vt_compare_(__FILE__, __LINE__, what, ref, got, atol, rtol)

static inline const char *vt_dtn(gf_dtype dt) { return gf_dtype_name(dt); }

#endif
