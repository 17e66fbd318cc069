/* SPDX-License-Identifier: BSD-3-Clause */
/* dist_test.h — what the MPI tests share: start-up on the device
 * GRAFT_DEVICE names, host values of every dtype (f16 / bf16 included),
 * tensors made from them, and the report of each rank.
 * Every program runs under mpirun with 2 ranks (tests/dist/CMakeLists.txt). */
#ifndef GRAFT_TESTS_DIST_TEST_H
#define GRAFT_TESTS_DIST_TEST_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "graft.h"
#include "graft/dist.h"

static int dt_rank, dt_world;
static gf_device *dt_dev;

/* Exit code 1 when MPI cannot start; 77 (skipped) when the plugin is built
 * but the machine has no such device, as the other device tests. */
static inline void dt_start(int *argc, char ***argv) {
    if (gf_dist_init(argc, argv) != GF_OK) {
        fprintf(stderr, "gf_dist_init: %s\n", gf_last_error());
        exit(1);
    }
    dt_rank = gf_dist_rank();
    dt_world = gf_dist_world_size();
    dt_dev = gf_dist_device(NULL);
    if (!dt_dev) {
        gf_status s = gf_last_status();
        fprintf(stderr, "rank %d: %s%s\n", dt_rank, gf_last_error(),
                s == GF_ERR_NOT_FOUND ? " (skipped)" : "");
        gf_dist_finalize();
        exit(s == GF_ERR_NOT_FOUND ? 77 : 1);
    }
    if (dt_rank == 0)
        fprintf(stderr, "%d ranks on %s (%s)\n", dt_world, gf_device_spec(dt_dev),
                gf_device_name(dt_dev));
}

static inline int dt_finish(void) {
    printf("rank %d: ", dt_rank);
    int rc = CHECK_REPORT();
    if (gf_dist_finalize() != GF_OK) {
        fprintf(stderr, "rank %d: gf_dist_finalize: %s\n", dt_rank, gf_last_error());
        rc = 1;
    }
    if (gf_shutdown() != GF_OK) {
        fprintf(stderr, "rank %d: gf_shutdown: %s\n", dt_rank, gf_last_error());
        rc = 1;
    }
    return rc;
}

/* Exact conversions for the small integers the tests use. */
static inline uint16_t dt_to_half(double v, gf_dtype dt) {
    float f = (float)v;
    uint32_t x;
    memcpy(&x, &f, 4);
    if (dt == GF_BF16) return (uint16_t)(x >> 16); /* exact for |v| < 256 integers */
    if (f == 0) return (uint16_t)((x >> 16) & 0x8000u);
    uint32_t sign = (x >> 16) & 0x8000u, e = ((x >> 23) & 0xffu) - 127 + 15;
    return (uint16_t)(sign | (e << 10) | ((x & 0x7fffffu) >> 13));
}

static inline double dt_from_half(uint16_t h, gf_dtype dt) {
    if (dt == GF_BF16) {
        uint32_t x = (uint32_t)h << 16;
        float f;
        memcpy(&f, &x, 4);
        return f;
    }
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v = e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25);
    return (h & 0x8000) ? -v : v;
}

static inline void dt_put(void *buf, gf_dtype dt, int64_t i, double v) {
    switch (dt) {
    case GF_F32: ((float *)buf)[i] = (float)v; break;
    case GF_F64: ((double *)buf)[i] = v; break;
    case GF_I32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case GF_I64: ((int64_t *)buf)[i] = (int64_t)v; break;
    case GF_BOOL: ((uint8_t *)buf)[i] = v != 0; break;
    case GF_F16:
    case GF_BF16: ((uint16_t *)buf)[i] = dt_to_half(v, dt); break;
    case GF_C64: /* v + 0i */
        ((float *)buf)[2 * i] = (float)v;
        ((float *)buf)[2 * i + 1] = 0;
        break;
    case GF_C128:
        ((double *)buf)[2 * i] = v;
        ((double *)buf)[2 * i + 1] = 0;
        break;
    }
}

static inline double dt_get(const void *buf, gf_dtype dt, int64_t i) {
    switch (dt) {
    case GF_F32: return ((const float *)buf)[i];
    case GF_F64: return ((const double *)buf)[i];
    case GF_I32: return ((const int32_t *)buf)[i];
    case GF_I64: return (double)((const int64_t *)buf)[i];
    case GF_BOOL: return ((const uint8_t *)buf)[i];
    case GF_F16:
    case GF_BF16: return dt_from_half(((const uint16_t *)buf)[i], dt);
    case GF_C64: return ((const float *)buf)[2 * i]; /* the real part */
    case GF_C128: return ((const double *)buf)[2 * i];
    }
    return 0;
}

/* A tensor of `sizes` whose element i (row-major) is f(rank, i). */
typedef double (*dt_value_fn)(int rank, int64_t i, gf_dtype dt);
static inline gf_tensor *dt_make(const int64_t *sizes, int rk, gf_dtype dt, dt_value_fn f,
                                 int rank) {
    int64_t n = 1;
    for (int d = 0; d < rk; d++) n *= sizes[d];
    void *buf = malloc(n ? (size_t)n * gf_dtype_size(dt) : 1);
    for (int64_t i = 0; i < n; i++) dt_put(buf, dt, i, f(rank, i, dt));
    gf_tensor *t = gf_from_data(buf, sizes, rk, dt, dt_dev);
    free(buf);
    return t;
}

/* The elements of t (row-major) as doubles; the caller frees. */
static inline double *dt_read(const gf_tensor *t) {
    int64_t n = gf_tensor_numel(t);
    gf_dtype dt = gf_tensor_dtype(t);
    void *buf = malloc(n ? (size_t)n * gf_dtype_size(dt) : 1);
    double *out = malloc(n ? (size_t)n * sizeof *out : sizeof *out);
    if (gf_tensor_to_host(t, buf, (size_t)n * gf_dtype_size(dt)) != GF_OK) {
        fprintf(stderr, "gf_tensor_to_host: %s\n", gf_last_error());
        for (int64_t i = 0; i < n; i++) out[i] = NAN;
    } else {
        for (int64_t i = 0; i < n; i++) out[i] = dt_get(buf, dt, i);
    }
    free(buf);
    return out;
}

#endif
