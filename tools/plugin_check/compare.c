/* SPDX-License-Identifier: BSD-3-Clause */
/* compare.c — a plugin's output against the oracle's.
 *
 * Floating outputs are compared by normalised mean squared error over the
 * positions where both are finite, NMSE = sum (got - want)^2 / sum want^2,
 * and NaN and inf must sit at the same positions (inf with the same sign).
 * Integer, bool and index outputs, and float outputs that only copy or
 * select elements, must be equal. Thresholds depend on the kind of op and the
 * dtype; they allow what a correct kernel on another device may differ by
 * (a few ulps, another summation order) and nothing like a wrong formula. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "pc.h"

double pc_threshold(pc_tol tol, int32_t dtype) {
    /* Rows: ELEMENTWISE, TRANSCENDENTAL, ACCUMULATE. A relative error e on
     * every element gives an NMSE of about e^2: 1e-10 allows ~1e-5, a few
     * hundred f32 ulps; the f64 rows allow ~1e-12 to ~1e-10. */
    static const double f32[3] = {1e-10, 1e-8, 1e-8};
    static const double f64[3] = {1e-24, 1e-22, 1e-20};
    static const double f16[3] = {1e-6, 1e-5, 1e-4};
    static const double bf16[3] = {1e-4, 1e-3, 1e-2};
    if (tol == PC_TOL_EXACT) return 0;
    int row = tol == PC_TOL_ELEMENTWISE ? 0 : tol == PC_TOL_TRANSCENDENTAL ? 1 : 2;
    switch (dtype) {
    case GFP_F64: return f64[row];
    case GFP_F16: return f16[row];
    case GFP_BF16: return bf16[row];
    default: return f32[row];
    }
}

/* "[1, 2]" for flat index i of a (row-major). */
static const char *index_text(const pc_array *a, int64_t i, char *buf, size_t len) {
    int64_t idx[GFP_MAX_RANK];
    for (int d = a->rank - 1; d >= 0; d--) {
        idx[d] = a->sizes[d] ? i % a->sizes[d] : 0;
        i = a->sizes[d] ? i / a->sizes[d] : 0;
    }
    return pc_shape_text(buf, len, a->rank, idx);
}

static void value_text(const pc_array *a, int64_t i, char *buf, size_t len) {
    if (pc_is_float(a->dtype))
        snprintf(buf, len, "%.9g", pc_load(a->data, a->dtype, i));
    else
        snprintf(buf, len, "%lld", (long long)pc_load_i64(a->data, a->dtype, i));
}

void pc_compare(const pc_array *got, const pc_array *want, pc_tol tol, pc_cmp *r) {
    memset(r, 0, sizeof *r);
    if (pc_is_complex(got->dtype) && got->dtype == want->dtype) {
        /* part by part, against the part dtype's thresholds; positions name
         * the part as a last index (0: re, 1: im) */
        pc_array g = pc_array_parts(got), w = pc_array_parts(want);
        pc_compare(&g, &w, tol, r);
        return;
    }
    char where[96], gv[48], wv[48];
    if (got->numel != want->numel) {
        r->metric = "shape";
        r->error = INFINITY;
        snprintf(r->detail, sizeof r->detail, "%lld elements, expected %lld",
                 (long long)got->numel, (long long)want->numel);
        return;
    }
    /* f16 and bf16 are computed by the oracle in f32: an exact result is the
     * oracle's rounded to the plugin's dtype (to nearest, ties to even). */
    bool narrower = (got->dtype == GFP_F16 || got->dtype == GFP_BF16) && want->dtype != got->dtype;
    r->threshold = pc_threshold(tol, got->dtype);
    bool floats = pc_is_float(got->dtype) && pc_is_float(want->dtype);

    if (tol == PC_TOL_EXACT || !floats) {
        int64_t count = 0, first = -1;
        for (int64_t i = 0; i < got->numel; i++) {
            bool same;
            if (floats) {
                double a = pc_load(got->data, got->dtype, i), b = pc_load(want->data, want->dtype, i);
                if (narrower) {
                    unsigned char one[8];
                    pc_store(one, got->dtype, 0, b);
                    b = pc_load(one, got->dtype, 0);
                }
                same = a == b || (isnan(a) && isnan(b));
            } else {
                same = pc_load_i64(got->data, got->dtype, i) ==
                       pc_load_i64(want->data, want->dtype, i);
            }
            if (!same && count++ == 0) first = i;
        }
        r->metric = "mismatches";
        r->error = (double)count;
        r->threshold = 0;
        r->ok = count == 0;
        if (!r->ok) {
            value_text(got, first, gv, sizeof gv);
            value_text(want, first, wv, sizeof wv);
            snprintf(r->detail, sizeof r->detail,
                     "%lld of %lld elements differ (exact match required); first at %s: got %s, "
                     "expected %s%s",
                     (long long)count, (long long)got->numel, index_text(want, first, where,
                                                                         sizeof where),
                     gv, wv, narrower ? " before rounding to the output dtype" : "");
        }
        return;
    }

    double err = 0, ref = 0, worst = -1;
    int64_t worst_i = -1, bad = 0, bad_first = -1;
    for (int64_t i = 0; i < got->numel; i++) {
        double a = pc_load(got->data, got->dtype, i), b = pc_load(want->data, want->dtype, i);
        if (narrower) {
            /* measured against what the output dtype can hold: a correctly
             * rounded f16 subnormal is not an error */
            unsigned char one[8];
            pc_store(one, got->dtype, 0, b);
            b = pc_load(one, got->dtype, 0);
        }
        if (isnan(a) || isnan(b) || isinf(a) || isinf(b)) {
            bool agree = (isnan(a) && isnan(b)) || (!isnan(a) && !isnan(b) && a == b);
            if (!agree && bad++ == 0) bad_first = i;
            continue;
        }
        double e = (a - b) * (a - b);
        err += e;
        ref += b * b;
        if (e > worst) {
            worst = e;
            worst_i = i;
        }
    }
    /* All-zero expectations: fall back to the absolute error. */
    double denom = ref > 1e-30 * (double)got->numel ? ref : 1e-30 * (double)(got->numel ? got->numel : 1);
    r->metric = "nmse";
    r->error = err / denom;
    r->ok = bad == 0 && r->error <= r->threshold;
    if (bad) {
        value_text(got, bad_first, gv, sizeof gv);
        value_text(want, bad_first, wv, sizeof wv);
        snprintf(r->detail, sizeof r->detail,
                 "NaN/inf positions differ at %lld of %lld elements; first at %s: got %s, "
                 "expected %s",
                 (long long)bad, (long long)got->numel,
                 index_text(want, bad_first, where, sizeof where), gv, wv);
    } else if (!r->ok && worst_i >= 0) {
        value_text(got, worst_i, gv, sizeof gv);
        value_text(want, worst_i, wv, sizeof wv);
        snprintf(r->detail, sizeof r->detail,
                 "nmse %.3g > %.3g; the largest difference at %s: got %s, expected %s",
                 r->error, r->threshold, index_text(want, worst_i, where, sizeof where), gv, wv);
    }
}
