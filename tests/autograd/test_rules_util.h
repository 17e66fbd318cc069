/* SPDX-License-Identifier: BSD-3-Clause */
/* test_rules_util.h — helpers shared by the autograd rule tests
 * (tests/autograd/test_rules_*.c, test_threads_autograd.c).
 *
 * Tensors are built from double literals and read back to the host as
 * doubles, so every expected value is computed by hand in the test, never
 * by graft. Errors are checked by status and by words of the message. */
#ifndef GRAFT_TESTS_RULES_UTIL_H
#define GRAFT_TESTS_RULES_UTIL_H

#include <graft.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"

#define SZ(...) ((const int64_t[]){__VA_ARGS__})
#define DV(...) ((const double[]){__VA_ARGS__})
#define AG_N(arr) ((int)(sizeof(arr) / sizeof((arr)[0])))

/* An f64 tensor of the given shape from row-major data. */
static inline gf_tensor *ag_t(const double *v, const int64_t *sizes, int rank) {
    gf_tensor *t = gf_from_data(v, sizes, rank, GF_F64, NULL);
    if (!t) fprintf(stderr, "ag_t: %s\n", gf_last_error());
    return t;
}
static inline gf_tensor *ag_vec(const double *v, int64_t n) { return ag_t(v, &n, 1); }
/* The same with requires_grad set (a leaf). */
static inline gf_tensor *ag_leaf_t(const double *v, const int64_t *sizes, int rank) {
    gf_tensor *t = ag_t(v, sizes, rank);
    if (t && gf_tensor_set_requires_grad(t, true) != GF_OK) {
        fprintf(stderr, "ag_leaf: %s\n", gf_last_error());
        gf_tensor_release(t);
        return NULL;
    }
    return t;
}
static inline gf_tensor *ag_leaf(const double *v, int64_t n) { return ag_leaf_t(v, &n, 1); }

/* Reads up to n elements of t (any dtype, any layout) as doubles. Returns
 * the number of elements of t, or -1 on failure. Nothing is recorded. */
static inline int64_t ag_read(const gf_tensor *t, double *out, int64_t n) {
    if (!t) return -1;
    int64_t numel = gf_tensor_numel(t);
    if (numel > n) return -1;
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    /* A scope of our own: callers may run inside a scope (custom backward). */
    gf_scope_begin();
    gf_tensor *c = gf_scope_keep(gf_to_dtype(t, GF_F64));
    gf_scope_end();
    gf_status s = c ? gf_tensor_to_host(c, out, (size_t)numel * sizeof(double)) : gf_last_status();
    gf_tensor_release(c);
    gf_grad_mode_set(prev);
    return s == GF_OK ? numel : -1;
}

static inline double ag_item(const gf_tensor *t) {
    double v = NAN;
    if (!t || gf_tensor_item(t, &v) != GF_OK) return NAN;
    return v;
}

/* Every element of t close to expected[i] (NaN matches NaN, inf the same inf). */
static inline void ag_check_vals_(const char *file, int line, const gf_tensor *t,
                                  const double *expected, int64_t n, double tol) {
    double got[256];
    if (!t) {
        check_failed_++;
        check_case_failed_ = 1;
        fprintf(stderr, "%s:%d: tensor is NULL (last error: %s)\n", file, line, gf_last_error());
        return;
    }
    int64_t m = ag_read(t, got, 256);
    if (m != n) {
        check_failed_++;
        check_case_failed_ = 1;
        fprintf(stderr, "%s:%d: tensor has %lld elements, expected %lld\n", file, line,
                (long long)m, (long long)n);
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        if (check_close_(got[i], expected[i], tol, tol)) {
            check_passed_++;
        } else {
            check_failed_++;
            check_case_failed_ = 1;
            fprintf(stderr, "%s:%d: element %lld is %.17g, expected %.17g\n", file, line,
                    (long long)i, got[i], expected[i]);
        }
    }
}
#define CHECK_VALS(t, expected, n, tol) ag_check_vals_(__FILE__, __LINE__, (t), (expected), (n), (tol))

/* The gradient of a leaf (or retained non-leaf), checked and released. */
static inline void ag_check_grad_(const char *file, int line, const gf_tensor *t,
                                  const double *expected, int64_t n, double tol) {
    gf_tensor *g = gf_tensor_grad(t);
    ag_check_vals_(file, line, g, expected, n, tol);
    gf_tensor_release(g);
}
#define CHECK_GRAD(t, expected, n, tol) ag_check_grad_(__FILE__, __LINE__, (t), (expected), (n), (tol))

/* A failing call: its status, the thread's last status, and each word of
 * the message (what happened, how to fix it, which op or node). */
static inline void ag_check_err_(const char *file, int line, gf_status got, gf_status want,
                                 const char *const *words) {
    const char *msg = gf_last_error();
    if (got == want && gf_last_status() == want) {
        check_passed_++;
    } else {
        check_failed_++;
        check_case_failed_ = 1;
        fprintf(stderr, "%s:%d: status %s (last %s), expected %s; message: \"%s\"\n", file, line,
                gf_status_name(got), gf_status_name(gf_last_status()), gf_status_name(want), msg);
    }
    for (int i = 0; words[i]; i++) {
        if (strstr(msg, words[i])) {
            check_passed_++;
        } else {
            check_failed_++;
            check_case_failed_ = 1;
            fprintf(stderr, "%s:%d: error message \"%s\" does not contain \"%s\"\n", file, line,
                    msg, words[i]);
        }
    }
}
#define CHECK_ERR(got, want, ...) \
    ag_check_err_(__FILE__, __LINE__, (got), (want), (const char *const[]){__VA_ARGS__, NULL})

/* For calls that return a pointer or a handle: NULL / 0 means failure with
 * the thread's last status. */
#define CHECK_ERR_NULL(ptr, want, ...)                                                     \
    do {                                                                                   \
        CHECK_MSG((ptr) == 0, "expected a failure");                                       \
        ag_check_err_(__FILE__, __LINE__, gf_last_status(), (want),                        \
                      (const char *const[]){__VA_ARGS__, NULL});                           \
    } while (0)

#define CHECK_OK(expr)                                                                     \
    do {                                                                                   \
        gf_status ag_s_ = (expr);                                                          \
        CHECK_MSG(ag_s_ == GF_OK, "%s: %s", gf_status_name(ag_s_), gf_last_error());       \
    } while (0)

/* backward with a grad_output of ones (so no reduction op is involved). */
static inline gf_status ag_backward_ones(gf_tensor *y, int retain_graph, bool create_graph) {
    gf_tensor *ones = gf_ones_like(y);
    if (!ones) return gf_last_status();
    gf_backward_opts o = {.retain_graph = retain_graph, .create_graph = create_graph};
    gf_status s = gf_backward(y, ones, &o);
    gf_tensor_release(ones);
    return s;
}

/* gf_grad of one output w.r.t. one input with a grad_output of ones (or g). */
static inline gf_tensor *ag_grad1(gf_tensor *y, gf_tensor *x, const gf_tensor *g, bool create_graph) {
    gf_tensor *ones = g ? NULL : gf_ones_like(y);
    gf_tensor *go = g ? (gf_tensor *)g : ones;
    gf_tensor *r = NULL;
    gf_grad_opts o = {.retain_graph = -1, .create_graph = create_graph};
    gf_status s = go ? gf_grad(&y, 1, &go, &x, 1, &r, &o) : gf_last_status();
    gf_tensor_release(ones);
    if (s != GF_OK) {
        fprintf(stderr, "ag_grad1: %s\n", gf_last_error());
        return NULL;
    }
    return r;
}

/* Saved-tensor hooks (rule 19) that count their calls: pack_counts is their
 * user pointer. The keep hooks are the simplest there are: pack keeps a
 * reference to the very tensor it is given, unpack returns it, release lets
 * it go. */
typedef struct pack_counts {
    int packs, unpacks, releases;
} pack_counts;
static inline void *ag_pack_keep(const gf_tensor *t, void *user) {
    ((pack_counts *)user)->packs++;
    return gf_tensor_retain((gf_tensor *)t);
}
static inline gf_tensor *ag_unpack_keep(void *pk, void *user) {
    ((pack_counts *)user)->unpacks++;
    return gf_tensor_retain(pk);
}
static inline void ag_release_keep(void *pk, void *user) {
    ((pack_counts *)user)->releases++;
    gf_tensor_release(pk);
}

/* Bytes the device's allocator holds for live storages. */
static inline uint64_t ag_bytes_in_use(void) {
    gf_memory_stats st = {0};
    if (gf_memory_get_stats(gf_device_default(), &st) != GF_OK) return UINT64_MAX;
    return st.bytes_in_use;
}

/* Compares t (any strides) with the n values want, each within tol * (1 +
 * |want|): the torch-expected comparisons of the module tests. */
static inline void ag_near(const char *what, const gf_tensor *t, const double *want, int64_t n,
                           double tol) {
    gf_tensor *c = t ? gf_contiguous(t) : NULL;
    double *got = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    CHECK_MSG(c && got && gf_tensor_numel(c) == n &&
                  gf_tensor_to_host(c, got, (size_t)n * sizeof(double)) == GF_OK,
              "%s: %s", what, gf_last_error());
    for (int64_t i = 0; c && got && gf_tensor_numel(c) == n && i < n; i++)
        CHECK_MSG(fabs(got[i] - want[i]) <= tol * (1 + fabs(want[i])),
                  "%s[%lld]: %.17g, torch %.17g", what, (long long)i, got[i], want[i]);
    free(got);
    gf_tensor_release(c);
}

/* The device the program runs on (GRAFT_DEVICE; the programs that also run
 * on the other devices, see tests/CMakeLists.txt): 0 when it is there; 77,
 * CTest's skip code, after saying why when a non-CPU device named by the
 * environment is missing from this machine; 1 otherwise. */
static inline int ag_device_check(void) {
    gf_device *dev = gf_device_default();
    if (dev) {
        fprintf(stderr, "device %s (%s)\n", gf_device_spec(dev), gf_device_name(dev));
        return 0;
    }
    const char *want = getenv("GRAFT_DEVICE");
    bool gpu = want && strncmp(want, "cpu", 3) != 0;
    fprintf(stderr, "%s: no device: %s\n", gpu ? "SKIPPED" : "FAILED", gf_last_error());
    return gpu ? 77 : 1;
}

/* Ends a test program: every tensor must have been released by now (a
 * graph that outlived its outputs would keep tensors alive). */
static inline int ag_finish(void) {
    gf_status s = gf_shutdown();
    CHECK_MSG(s == GF_OK, "gf_shutdown: %s (a tensor or graph was not freed)", gf_last_error());
    return CHECK_REPORT();
}

#endif
