/* SPDX-License-Identifier: BSD-3-Clause */
/* ref_util.c — element access and argument checks shared by the reference
 * plugin's kernels. Everything here is dtype-generic and slow on purpose:
 * kernels that need speed convert once per element, not once per op. */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref_internal.h"

char *ref_base(const gfp_tensor *t) { return (char *)t->buffer + t->offset; }

int64_t ref_offset(const gfp_tensor *t, const int64_t *idx) {
    int64_t off = 0;
    for (int d = 0; d < t->rank; d++) off += idx[d] * t->strides[d];
    return off;
}

bool ref_next_index(int64_t *idx, const int64_t *sizes, int rank) {
    for (int d = rank - 1; d >= 0; d--) {
        if (++idx[d] < sizes[d]) return true;
        idx[d] = 0;
    }
    return false;
}

/* float -> integer conversion (C leaves out-of-range and NaN undefined):
 * pk_trunc_i64 / pk_trunc_i32 of plugin_kit.h, as the ABI defines it. */
double ref_load(const gfp_tensor *t, int64_t off) {
    const char *p = ref_base(t);
    switch (t->dtype) {
    case GFP_F32: return ((const float *)p)[off];
    case GFP_F64: return ((const double *)p)[off];
    case GFP_F16: return pk_f16_to_f32(((const uint16_t *)p)[off]);
    case GFP_BF16: return pk_bf16_to_f32(((const uint16_t *)p)[off]);
    case GFP_I32: return ((const int32_t *)p)[off];
    case GFP_I64: return (double)((const int64_t *)p)[off];
    case GFP_BOOL: return ((const uint8_t *)p)[off] != 0;
    default: return 0.0;
    }
}

void ref_store(const gfp_tensor *t, int64_t off, double v) {
    char *p = ref_base(t);
    switch (t->dtype) {
    case GFP_F32: ((float *)p)[off] = (float)v; break;
    case GFP_F64: ((double *)p)[off] = v; break;
    case GFP_F16: ((uint16_t *)p)[off] = pk_f64_to_f16(v); break; /* one rounding */
    case GFP_BF16: ((uint16_t *)p)[off] = pk_f64_to_bf16(v); break;
    case GFP_I32: ((int32_t *)p)[off] = pk_trunc_i32(v); break;
    case GFP_I64: ((int64_t *)p)[off] = pk_trunc_i64(v); break;
    case GFP_BOOL: ((uint8_t *)p)[off] = v != 0; break; /* NaN is true */
    default: break;
    }
}

double *ref_dense_f64(const gfp_tensor *t) {
    int64_t n = pk_numel(t);
    if (n < 0 || (uint64_t)n > SIZE_MAX / sizeof(double)) return NULL;
    double *d = malloc(n ? (size_t)n * sizeof(double) : sizeof(double));
    if (!d || n == 0) return d;
    int64_t idx[GFP_MAX_RANK] = {0};
    int64_t i = 0;
    do {
        d[i++] = ref_load(t, ref_offset(t, idx));
    } while (ref_next_index(idx, t->sizes, t->rank));
    return d;
}

int64_t ref_load_i64(const gfp_tensor *t, int64_t off) {
    const char *p = ref_base(t);
    switch (t->dtype) {
    case GFP_F32: return pk_trunc_i64(((const float *)p)[off]);
    case GFP_F64: return pk_trunc_i64(((const double *)p)[off]);
    case GFP_F16:
    case GFP_BF16: return pk_trunc_i64(ref_load(t, off));
    case GFP_I32: return ((const int32_t *)p)[off];
    case GFP_I64: return ((const int64_t *)p)[off];
    case GFP_BOOL: return ((const uint8_t *)p)[off] != 0;
    default: return 0;
    }
}

void ref_store_i64(const gfp_tensor *t, int64_t off, int64_t v) {
    char *p = ref_base(t);
    switch (t->dtype) {
    case GFP_F32: ((float *)p)[off] = (float)v; break; /* one rounding */
    case GFP_F64: ((double *)p)[off] = (double)v; break;
    case GFP_F16: ((uint16_t *)p)[off] = pk_f64_to_f16((double)v); break; /* |v| < 2^53 or inf anyway */
    case GFP_BF16: ((uint16_t *)p)[off] = pk_f64_to_bf16((double)v); break;
    /* Narrowing wraps modulo 2^32, as two's complement hardware does. */
    case GFP_I32: ((int32_t *)p)[off] = (int32_t)(uint32_t)(uint64_t)v; break;
    case GFP_I64: ((int64_t *)p)[off] = v; break;
    case GFP_BOOL: ((uint8_t *)p)[off] = v != 0; break;
    default: break;
    }
}

void ref_ksum_add(ref_ksum *k, double v) {
    double t = k->s + v;
    if (fabs(k->s) >= fabs(v))
        k->c += (k->s - t) + v;
    else
        k->c += (v - t) + k->s;
    k->s = t;
}

double ref_ksum_value(const ref_ksum *k) { return isfinite(k->s) ? k->s + k->c : k->s; }
