/* SPDX-License-Identifier: BSD-3-Clause */
/* vk_test.h — the Vulkan suite's part of the cross-device harness
 * (tests/xd_harness.h): vulkan:0 is tested against the reference plugin
 * (cpu:0), in the names the Vulkan tests use.
 *
 * Every case builds the same inputs on cpu:0 and on vulkan:0 from one host
 * array, through the same view operations (so strided and broadcast layouts
 * are identical on both), runs the op on both through the public API, and
 * compares the results on the host. Expected values are the reference
 * plugin's, never the code under test's. The programs run with
 * GRAFT_PLUGINS=vulkan,reference; without a Vulkan device they print why
 * and exit with 77 (CTest: skipped). */
#ifndef GRAFT_TESTS_VK_TEST_H
#define GRAFT_TESTS_VK_TEST_H

#include "xd_harness.h"

#define vt_cpu xd_ref /* the reference device */
#define vt_vk xd_dev  /* the device under test */

/* Layouts an input is built in: the harness's. */
enum { VT_CONTIG = 0, VT_TRANSPOSED = 1, VT_STEP2 = 2, VT_LAYOUTS = 3 };
static const char *const vt_layout_name[VT_LAYOUTS] = {"contiguous", "transposed", "step-2"};
static const xd_layout vt_xd_layout[VT_LAYOUTS] = {XL_CONTIG, XL_TRANSPOSED, XL_STEP};

/* Finds both devices: 0; 77 after printing why there is no Vulkan device. */
static inline int vt_setup(void) {
    static const xd_target vulkan = {"vulkan", "Vulkan", "vulkan:0"};
    return xd_init_target(&vulkan);
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

#define vt_store xd_store
#define vt_numel xd_numel

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
    int64_t n = xd_numel(rank, sizes);
    double *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    if (!v) return out;
    for (int64_t i = 0; i < n; i++) v[i] = vals ? vals[i] : vt_value(dt, i, seed, lo, hi);
    xd_layout L = layout >= 0 && layout < VT_LAYOUTS ? vt_xd_layout[layout] : XL_CONTIG;
    xd_pair p = xd_pair_make(dt, rank, sizes, v, L);
    free(v);
    out.c = p.r;
    out.v = p.d;
    return out;
}

static inline vt_pair vt_rand(gf_dtype dt, int rank, const int64_t *sizes, uint32_t seed, double lo,
                              double hi, int layout) {
    return vt_make(dt, rank, sizes, NULL, seed, lo, hi, layout);
}

/* The vulkan result against the reference's: same shape and dtype, every
 * element within atol + rtol |ref| (NaN equal to NaN, inf to inf). */
static inline void vt_compare(const char *what, const gf_tensor *ref, const gf_tensor *got,
                              double atol, double rtol) {
    xd_check_tol(what, got, ref, (xd_tol){rtol, atol});
    if (!ref || !got) gf_clear_error();
}
#define VT_COMPARE(what, ref, got, atol, rtol) vt_compare(what, ref, got, atol, rtol)

static inline const char *vt_dtn(gf_dtype dt) { return gf_dtype_name(dt); }

#endif
