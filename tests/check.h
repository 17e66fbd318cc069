/* SPDX-License-Identifier: BSD-3-Clause */
/* check.h — the tests' tiny harness. Each test program runs its cases and
 * ends with the line "N passed, N failed" (exit status 1 on any failure). */
#ifndef GRAFT_TESTS_CHECK_H
#define GRAFT_TESTS_CHECK_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* A test that includes <complex.h> first: glibc defines CMPLX for GCC only,
 * clang has the builtin. */
#if defined(_COMPLEX_H) && !defined(CMPLX)
#define CMPLX(x, y) __builtin_complex((double)(x), (double)(y))
#endif
#include <string.h>

static int check_passed_, check_failed_, check_case_failed_;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (cond) {                                                                  \
            check_passed_++;                                                         \
        } else {                                                                     \
            check_failed_++;                                                         \
            check_case_failed_ = 1;                                                  \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                            \
    } while (0)

#define CHECK_MSG(cond, ...)                                                         \
    do {                                                                             \
        if (cond) {                                                                  \
            check_passed_++;                                                         \
        } else {                                                                     \
            check_failed_++;                                                         \
            check_case_failed_ = 1;                                                  \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                            \
            fputc('\n', stderr);                                                     \
        }                                                                            \
    } while (0)

/* |a - b| <= atol + rtol * |b|, NaN equal to NaN, inf equal to same inf. */
static inline int check_close_(double a, double b, double atol, double rtol) {
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    if (isinf(a) || isinf(b)) return a == b;
    return fabs(a - b) <= atol + rtol * fabs(b);
}
#define CHECK_CLOSE(a, b, tol) \
    CHECK_MSG(check_close_((a), (b), (tol), (tol)), "%.17g vs expected %.17g", (double)(a), (double)(b))

/* Error message contains the text. */
#define CHECK_CONTAINS(hay, needle) \
    CHECK_MSG((hay) && strstr((hay), (needle)), "\"%s\" does not contain \"%s\"", (hay) ? (hay) : "(null)", (needle))

/* The last call failed with status and a message containing text; clears it. */
#ifndef CHECK_FAILS
#define CHECK_FAILS(status, text)                                            \
    do {                                                                     \
        CHECK_MSG(gf_last_status() == (status), "status %s, expected %s",   \
                  gf_status_name(gf_last_status()), gf_status_name(status)); \
        CHECK_CONTAINS(gf_last_error(), text);                               \
        gf_clear_error();                                                    \
    } while (0)
#endif

#define RUN(fn)                                                                  \
    do {                                                                         \
        check_case_failed_ = 0;                                                  \
        fn();                                                                    \
        fprintf(stderr, "%s %s\n", check_case_failed_ ? "FAIL" : "ok  ", #fn); \
    } while (0)

static inline int check_report_(void) {
    printf("%d passed, %d failed\n", check_passed_, check_failed_);
    return check_failed_ ? 1 : 0;
}
#define CHECK_REPORT() check_report_()

#endif
