/* SPDX-License-Identifier: BSD-3-Clause */
/* ops_test.h — helpers shared by the forward-op tests (tests/ops/test_*.c).
 *
 * Tensors are built from double literals converted on the host side, and
 * results are read back and compared on the host side, so no expected value
 * ever passes through graft. Layout helpers build the same logical tensor
 * through different storage layouts (transposed, sliced with step) so every
 * op is also run on non-contiguous inputs. */
#ifndef GRAFT_TESTS_OPS_TEST_H
#define GRAFT_TESTS_OPS_TEST_H

#include <graft.h>
#include <stdint.h>

#include "check.h"

#define SZ(...) ((const int64_t[]){__VA_ARGS__})
#define DV(...) ((const double[]){__VA_ARGS__})

#define OT_PI 3.14159265358979323846

#define TOL32 2e-6
#define TOL64 1e-12
static inline double ot_tol(gf_dtype dt) {
    return dt == GF_F32 ? TOL32 : dt == GF_F64 ? TOL64 : 0.0;
}

/* Marks a failure at the caller's line. */
static inline void ot_fail_(const char *file, int line, const char *what) {
    check_failed_++;
    check_case_failed_ = 1;
    fprintf(stderr, "%s:%d: %s\n", file, line, what);
}
#define FAILF(...)                                                  \
    do {                                                            \
        char ot_buf_[512];                                          \
        snprintf(ot_buf_, sizeof ot_buf_, __VA_ARGS__);             \
        ot_fail_(__FILE__, __LINE__, ot_buf_);                      \
    } while (0)

static inline int64_t ot_numel(int rank, const int64_t *sizes) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= sizes[i];
    return n;
}

static inline void ot_store(gf_dtype dt, void *dst, int64_t i, double v) {
    switch (dt) {
    case GF_F32: ((float *)dst)[i] = (float)v; break;
    case GF_F64: ((double *)dst)[i] = v; break;
    case GF_I32: ((int32_t *)dst)[i] = (int32_t)v; break;
    case GF_I64: ((int64_t *)dst)[i] = (int64_t)v; break;
    case GF_BOOL: ((uint8_t *)dst)[i] = v != 0.0; break;
    default: break;
    }
}

static inline double ot_load(gf_dtype dt, const void *src, int64_t i) {
    switch (dt) {
    case GF_F32: return ((const float *)src)[i];
    case GF_F64: return ((const double *)src)[i];
    case GF_I32: return ((const int32_t *)src)[i];
    case GF_I64: return (double)((const int64_t *)src)[i];
    case GF_BOOL: return ((const uint8_t *)src)[i];
    default: return NAN;
    }
}

/* A contiguous tensor of dtype dt holding vals (row-major). vals may be NULL
 * for a 0-size shape. */
static inline gf_tensor *ot_make(gf_dtype dt, int rank, const int64_t *sizes,
                                 const double *vals) {
    int64_t n = ot_numel(rank, sizes);
    void *buf = calloc((size_t)(n > 0 ? n : 1), 8);
    for (int64_t i = 0; i < n; i++) ot_store(dt, buf, i, vals[i]);
    gf_tensor *t = gf_from_data(buf, sizes, rank, dt, NULL);
    free(buf);
    return t;
}

/* A sentinel that differs from v, so a kernel that reads a gap is caught. */
static inline double ot_sentinel(gf_dtype dt, double v) {
    if (dt == GF_BOOL) return v != 0.0 ? 0.0 : 1.0;
    return -987.0;
}

/* The same logical tensor as ot_make, read through a step-2 slice of the last
 * dim of a storage twice as wide (gaps hold a sentinel). rank 0: contiguous. */
static inline gf_tensor *ot_make_step(gf_dtype dt, int rank, const int64_t *sizes,
                                      const double *vals) {
    if (rank == 0) return ot_make(dt, rank, sizes, vals);
    int64_t big[GF_MAX_RANK] = {0};
    for (int i = 0; i < rank; i++) big[i] = sizes[i];
    big[rank - 1] *= 2;
    int64_t n = ot_numel(rank, sizes);
    double *wide = malloc((size_t)(2 * n > 0 ? 2 * n : 1) * sizeof(double));
    for (int64_t i = 0; i < n; i++) {
        wide[2 * i] = vals[i];
        wide[2 * i + 1] = ot_sentinel(dt, vals[i]);
    }
    gf_tensor *base = ot_make(dt, rank, big, wide);
    free(wide);
    gf_tensor *v = gf_slice(base, rank - 1, 0, big[rank - 1], 2);
    gf_tensor_release(base);
    return v;
}

/* The same logical tensor read through gf_transpose(-2, -1) of a storage that
 * holds the transpose of its last two dims. rank < 2: contiguous. */
static inline gf_tensor *ot_make_transposed(gf_dtype dt, int rank, const int64_t *sizes,
                                            const double *vals) {
    if (rank < 2) return ot_make(dt, rank, sizes, vals);
    int64_t tsz[GF_MAX_RANK] = {0};
    for (int i = 0; i < rank; i++) tsz[i] = sizes[i];
    int64_t r = sizes[rank - 2], c = sizes[rank - 1];
    tsz[rank - 2] = c;
    tsz[rank - 1] = r;
    int64_t n = ot_numel(rank, sizes);
    double *tv = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    int64_t mats = (r != 0 && c != 0) ? n / (r * c) : 0;
    for (int64_t b = 0; b < mats; b++)
        for (int64_t i = 0; i < r; i++)
            for (int64_t j = 0; j < c; j++) tv[b * r * c + j * r + i] = vals[b * r * c + i * c + j];
    gf_tensor *base = ot_make(dt, rank, tsz, tv);
    free(tv);
    gf_tensor *v = gf_transpose(base, -2, -1);
    gf_tensor_release(base);
    return v;
}

enum { OT_CONTIG = 0, OT_STEP = 1, OT_TRANSPOSED = 2, OT_NLAYOUTS = 3 };
static const char *const ot_layout_names[OT_NLAYOUTS] = {"contiguous", "step-2 slice",
                                                         "transposed"};
static inline gf_tensor *ot_make_layout(int layout, gf_dtype dt, int rank,
                                        const int64_t *sizes, const double *vals) {
    if (layout == OT_STEP) return ot_make_step(dt, rank, sizes, vals);
    if (layout == OT_TRANSPOSED) return ot_make_transposed(dt, rank, sizes, vals);
    return ot_make(dt, rank, sizes, vals);
}

/* Reads t into a malloc'ed array of doubles (NULL on failure). */
static inline double *ot_read(const gf_tensor *t) {
    if (!t) return NULL;
    int64_t n = gf_tensor_numel(t);
    gf_dtype dt = gf_tensor_dtype(t);
    size_t es = gf_dtype_size(dt);
    void *raw = malloc((size_t)(n > 0 ? n : 1) * es);
    double *out = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    if (gf_tensor_to_host(t, raw, (size_t)n * es) != GF_OK) {
        free(raw);
        free(out);
        return NULL;
    }
    for (int64_t i = 0; i < n; i++) out[i] = ot_load(dt, raw, i);
    free(raw);
    return out;
}

/* The one value of a one-element tensor read through to_host (NAN on failure). */
static inline double ot_value(const gf_tensor *t) {
    double *v = ot_read(t);
    double r = v && gf_tensor_numel(t) == 1 ? v[0] : NAN;
    free(v);
    return r;
}

static inline int ot_same_shape(const gf_tensor *t, int rank, const int64_t *sizes) {
    if (gf_tensor_rank(t) != rank) return 0;
    const int64_t *s = gf_tensor_sizes(t);
    for (int i = 0; i < rank; i++)
        if (s[i] != sizes[i]) return 0;
    return 1;
}

static inline void ot_shape_str(int rank, const int64_t *sizes, char *buf, size_t len) {
    size_t k = 0;
    k += (size_t)snprintf(buf + k, len - k, "[");
    for (int i = 0; i < rank && k < len; i++)
        k += (size_t)snprintf(buf + k, len - k, i ? ", %lld" : "%lld", (long long)sizes[i]);
    if (k < len) snprintf(buf + k, len - k, "]");
}

/* Checks dtype, shape and every value of t (|got - want| <= tol + tol*|want|). */
static inline void ot_expect_(const char *file, int line, const char *expr, const gf_tensor *t,
                              gf_dtype dt, int rank, const int64_t *sizes, const double *vals,
                              double tol) {
    char msg[1024];
    if (!t) {
        snprintf(msg, sizeof msg, "%s is NULL: %s: %s", expr, gf_status_name(gf_last_status()),
                 gf_last_error());
        ot_fail_(file, line, msg);
        return;
    }
    if (gf_tensor_dtype(t) != dt) {
        snprintf(msg, sizeof msg, "%s: dtype %s, expected %s", expr,
                 gf_dtype_name(gf_tensor_dtype(t)), gf_dtype_name(dt));
        ot_fail_(file, line, msg);
        return;
    }
    if (!ot_same_shape(t, rank, sizes)) {
        char a[128], b[128];
        ot_shape_str(gf_tensor_rank(t), gf_tensor_sizes(t), a, sizeof a);
        ot_shape_str(rank, sizes, b, sizeof b);
        snprintf(msg, sizeof msg, "%s: shape %s, expected %s", expr, a, b);
        ot_fail_(file, line, msg);
        return;
    }
    int64_t n = ot_numel(rank, sizes);
    double *got = ot_read(t);
    if (!got) {
        snprintf(msg, sizeof msg, "%s: to_host failed: %s", expr, gf_last_error());
        ot_fail_(file, line, msg);
        return;
    }
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!check_close_(got[i], vals[i], tol, tol)) {
            if (bad < 4) {
                snprintf(msg, sizeof msg, "%s: element %lld is %.17g, expected %.17g", expr,
                         (long long)i, got[i], vals[i]);
                ot_fail_(file, line, msg);
            }
            bad++;
        }
    }
    free(got);
    if (bad) {
        if (bad > 4) fprintf(stderr, "%s:%d: ... %d mismatches in all\n", file, line, bad);
        return;
    }
    check_passed_++;
}
#define EXPECT_T(t, dt, rank, sizes, vals, tol) \
    ot_expect_(__FILE__, __LINE__, #t, (t), (dt), (rank), (sizes), (vals), (tol))

/* Checks that expr (a tensor expression) fails with status st; releases any
 * result. The thread's error is cleared first. */
#define EXPECT_FAIL(expr, st)                                                              \
    do {                                                                                   \
        gf_clear_error();                                                                  \
        gf_tensor *ot_r_ = (expr);                                                         \
        CHECK_MSG(ot_r_ == NULL && gf_last_status() == (st), "got %s (%s), expected %s",   \
                  ot_r_ ? "a tensor" : "NULL", gf_status_name(gf_last_status()),           \
                  gf_status_name(st));                                                     \
        gf_tensor_release(ot_r_);                                                          \
    } while (0)

/* Expects expr (a tensor expression) to fail with status st and a message
 * that contains each of the given words. */
#define EXPECT_ERR(expr, st, ...)                                                          \
    do {                                                                                   \
        gf_clear_error();                                                                  \
        gf_tensor *e_r_ = (expr);                                                          \
        CHECK_MSG(e_r_ == NULL && gf_last_status() == (st), "got %s (%s: %s), expected %s", \
                  e_r_ ? "a tensor" : "NULL", gf_status_name(gf_last_status()),            \
                  gf_last_error(), gf_status_name(st));                                    \
        const char *e_words_[] = {__VA_ARGS__};                                            \
        for (size_t e_i_ = 0; e_i_ < sizeof e_words_ / sizeof e_words_[0]; e_i_++)         \
            CHECK_CONTAINS(gf_last_error(), e_words_[e_i_]);                               \
        gf_tensor_release(e_r_);                                                           \
    } while (0)

/* Checks a status-returning call. */
#define CHECK_OK(expr)                                                                     \
    do {                                                                                   \
        gf_status ot_s_ = (expr);                                                          \
        CHECK_MSG(ot_s_ == GF_OK, "%s: %s", gf_status_name(ot_s_), gf_last_error());       \
    } while (0)

static inline void ot_release_n(gf_tensor *const *ts, size_t n) {
    for (size_t i = 0; i < n; i++) gf_tensor_release(ts[i]);
}
#define REL(...) \
    ot_release_n((gf_tensor *const[]){__VA_ARGS__}, sizeof((gf_tensor *const[]){__VA_ARGS__}) / sizeof(gf_tensor *))

/* End of a test program: every tensor must be gone, so shutdown succeeds. */
static inline int ot_finish(void) {
    gf_status s = gf_shutdown();
    CHECK_MSG(s == GF_OK, "gf_shutdown: %s: %s (a tensor leaked?)", gf_status_name(s),
              gf_last_error());
    return CHECK_REPORT();
}

#endif
