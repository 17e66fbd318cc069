/* ref_util.c — element access and argument checks shared by the reference
 * plugin's kernels. Everything here is dtype-generic and slow on purpose:
 * kernels that need speed convert once per element, not once per op. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ref_internal.h"

gfp_status ref_fail(gfp_status status, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* ref_host is set by negotiation, which precedes every other call. */
    if (ref_host && ref_host->set_error) ref_host->set_error(ref_host->host_ctx, msg);
    return status;
}

char *ref_base(const gfp_tensor *t) { return (char *)t->buffer + t->offset; }

size_t ref_dtype_size(int32_t dtype) {
    switch (dtype) {
    case GFP_F32: return 4;
    case GFP_F64: return 8;
    case GFP_I32: return 4;
    case GFP_I64: return 8;
    case GFP_BOOL: return 1;
    case GFP_F16: return 2;
    case GFP_BF16: return 2;
    default: return 0;
    }
}

/* Only the float dtypes this plugin computes in: F16/BF16 are not stored by
 * the reference device, so kernels may treat "float" as "F32 or F64". */
bool ref_is_float(int32_t dtype) { return dtype == GFP_F32 || dtype == GFP_F64; }

int64_t ref_numel(const gfp_tensor *t) {
    int64_t n = 1;
    for (int d = 0; d < t->rank; d++) n *= t->sizes[d];
    return n;
}

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

/* float -> integer conversion. C leaves out-of-range and NaN undefined, and
 * hardware disagrees (x86 gives INT_MIN, CUDA and ARM saturate), so the
 * reference defines it: truncate toward zero, saturate, NaN -> 0. */
static int64_t to_i64_trunc(double v) {
    if (v != v) return 0;
    if (v >= 9223372036854775808.0) return INT64_MAX; /* 2^63 */
    if (v <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)v;
}

static int32_t to_i32_trunc(double v) {
    if (v != v) return 0;
    if (v >= 2147483648.0) return INT32_MAX;
    if (v <= -2147483649.0) return INT32_MIN;
    return (int32_t)v;
}

double ref_load(const gfp_tensor *t, int64_t off) {
    const char *p = ref_base(t);
    switch (t->dtype) {
    case GFP_F32: return ((const float *)p)[off];
    case GFP_F64: return ((const double *)p)[off];
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
    case GFP_I32: ((int32_t *)p)[off] = to_i32_trunc(v); break;
    case GFP_I64: ((int64_t *)p)[off] = to_i64_trunc(v); break;
    case GFP_BOOL: ((uint8_t *)p)[off] = v != 0; break; /* NaN is true */
    default: break;
    }
}

int64_t ref_load_i64(const gfp_tensor *t, int64_t off) {
    const char *p = ref_base(t);
    switch (t->dtype) {
    case GFP_F32: return to_i64_trunc(((const float *)p)[off]);
    case GFP_F64: return to_i64_trunc(((const double *)p)[off]);
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
    /* Narrowing wraps modulo 2^32, as two's complement hardware does. */
    case GFP_I32: ((int32_t *)p)[off] = (int32_t)(uint32_t)(uint64_t)v; break;
    case GFP_I64: ((int64_t *)p)[off] = v; break;
    case GFP_BOOL: ((uint8_t *)p)[off] = v != 0; break;
    default: break;
    }
}

gfp_status ref_check_params(const void *params, size_t min_size, const char *op) {
    if (!params)
        return ref_fail(GFP_ERR_INVALID, "%s: the parameter struct is NULL; this op needs one",
                        op);
    uint32_t size;
    memcpy(&size, params, sizeof size); /* every params struct starts with it */
    if (size < min_size)
        return ref_fail(GFP_ERR_INVALID,
                        "%s: parameter struct_size is %u bytes, at least %zu are needed "
                        "(set struct_size = sizeof the struct)",
                        op, (unsigned)size, min_size);
    return GFP_OK;
}

gfp_status ref_check_counts(uint32_t n_in, uint32_t want_in, uint32_t n_out, uint32_t want_out,
                            const char *op) {
    if (n_in != want_in || n_out != want_out)
        return ref_fail(GFP_ERR_INVALID, "%s: takes %u input(s) and %u output(s), got %u and %u",
                        op, (unsigned)want_in, (unsigned)want_out, (unsigned)n_in,
                        (unsigned)n_out);
    return GFP_OK;
}

bool ref_same_shape(const gfp_tensor *a, const gfp_tensor *b) {
    if (a->rank != b->rank) return false;
    for (int d = 0; d < a->rank; d++)
        if (a->sizes[d] != b->sizes[d]) return false;
    return true;
}

const char *ref_dtype_name(int32_t dtype) {
    switch (dtype) {
    case GFP_F32: return "f32";
    case GFP_F64: return "f64";
    case GFP_I32: return "i32";
    case GFP_I64: return "i64";
    case GFP_BOOL: return "bool";
    case GFP_F16: return "f16";
    case GFP_BF16: return "bf16";
    default: return "unknown";
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
