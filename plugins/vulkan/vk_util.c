/* vk_util.c — tensor descriptors: sizes, checks against buffers, dim
 * coalescing, op names, and the params-word writer. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "vk_internal.h"

size_t vkp_dtype_size(int32_t dtype) {
    switch (dtype) {
    case GFP_F32:
    case GFP_I32: return 4;
    case GFP_F64:
    case GFP_I64: return 8;
    case GFP_BOOL: return 1;
    case GFP_F16:
    case GFP_BF16: return 2;
    default: return 0;
    }
}

const char *vkp_dtype_name(int32_t dtype) {
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

bool vkp_is_float(int32_t dtype) { return dtype == GFP_F32 || dtype == GFP_F64; }

/* Rounds to nearest even in one step: to f32 rounding to odd (enough bits
 * for the second rounding), then to f16 on the bits (as the shaders' f2h). */
uint16_t vkp_f64_to_f16(double v) {
    float f = (float)v;
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    if (!isnan(v) && !isinf(f) && (double)f != v) {
        if (fabs((double)f) > fabs(v)) x -= 1; /* toward zero */
        x |= 1;
    }
    uint32_t s = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(s | 0x7e00u | ((a >> 13) & 0x3ffu));
    if (a >= 0x477ff000u) return (uint16_t)(s | 0x7c00u);
    if (a >= 0x38800000u) return (uint16_t)(s | ((a - 0x38000000u + 0xfffu + ((a >> 13) & 1u)) >> 13));
    if (a < 0x33000000u) return (uint16_t)s;
    uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u, sh = 126u - e;
    uint32_t h = m >> sh, rem = m & ((1u << sh) - 1u), half = 1u << (sh - 1u);
    if (rem > half || (rem == half && (h & 1u))) h++;
    return (uint16_t)(s | h);
}

int64_t vkp_numel(const gfp_tensor *t) {
    int64_t n = 1;
    for (int d = 0; d < t->rank; d++) n *= t->sizes[d];
    return n;
}

bool vkp_same_shape(const gfp_tensor *a, const gfp_tensor *b) {
    if (a->rank != b->rank) return false;
    for (int d = 0; d < a->rank; d++)
        if (a->sizes[d] != b->sizes[d]) return false;
    return true;
}

uint32_t vkp_elem_offset(const gfp_tensor *t) {
    const vkp_buf *b = t->buffer;
    if (!b) return 0;
    return (uint32_t)((b->offset + t->offset) / vkp_dtype_size(t->dtype));
}

gfp_status vkp_check_tensor(vkp_device *d, uint32_t op, const char *role, uint32_t i,
                            const gfp_tensor *t) {
    const char *name = vkp_op_name(op);
    if (t->struct_size < GFP_TENSOR_SIZE_V1_0)
        return vkp_fail(GFP_ERR_INVALID, "%s: %s %u has struct_size %u, at least %zu needed", name,
                        role, (unsigned)i, (unsigned)t->struct_size, (size_t)GFP_TENSOR_SIZE_V1_0);
    if (t->rank < 0 || t->rank > GFP_MAX_RANK)
        return vkp_fail(GFP_ERR_INVALID, "%s: %s %u has rank %d, outside [0, %d]", name, role,
                        (unsigned)i, (int)t->rank, GFP_MAX_RANK);
    if (!vkp_dtype_ok(d, t->dtype))
        return vkp_fail(GFP_ERR_UNSUPPORTED, "%s: %s %u has dtype %s, which this vulkan device "
                        "does not store", name, role, (unsigned)i, vkp_dtype_name(t->dtype));
    for (int k = 0; k < t->rank; k++)
        if (t->sizes[k] < 0 || t->strides[k] < 0)
            return vkp_fail(GFP_ERR_INVALID,
                            "%s: %s %u has size %lld and stride %lld in dim %d; both must be >= 0",
                            name, role, (unsigned)i, (long long)t->sizes[k],
                            (long long)t->strides[k], k);
    if (vkp_numel(t) == 0) return GFP_OK;
    vkp_buf *b = vkp_buf_check(d, t->buffer, name);
    if (!b) return GFP_ERR_INVALID;
    uint64_t es = vkp_dtype_size(t->dtype);
    if (t->offset % es)
        return vkp_fail(GFP_ERR_INVALID, "%s: %s %u starts at byte offset %llu, not a multiple "
                        "of its %llu-byte elements", name, role, (unsigned)i,
                        (unsigned long long)t->offset, (unsigned long long)es);
    uint64_t last = 0;
    for (int k = 0; k < t->rank; k++) {
        uint64_t span = (uint64_t)(t->sizes[k] - 1), stride = (uint64_t)t->strides[k];
        if (stride && span > (UINT64_MAX / 2 - last) / stride) {
            last = UINT64_MAX / 2;
            break;
        }
        last += span * stride;
    }
    if (t->offset > b->size || last >= (b->size - t->offset) / es)
        return vkp_fail(GFP_ERR_INVALID,
                        "%s: %s %u reaches element %llu from byte offset %llu, past the end of "
                        "its %llu-byte buffer (check sizes, strides and offset)",
                        name, role, (unsigned)i, (unsigned long long)last,
                        (unsigned long long)t->offset, (unsigned long long)b->size);
    return GFP_OK;
}

gfp_status vkp_check_params(const void *params, size_t min_size, const char *op) {
    if (!params)
        return vkp_fail(GFP_ERR_INVALID, "%s: the parameter struct is NULL; this op needs one", op);
    uint32_t size;
    memcpy(&size, params, sizeof size);
    if (size < min_size)
        return vkp_fail(GFP_ERR_INVALID,
                        "%s: parameter struct_size is %u bytes, at least %zu are needed", op,
                        (unsigned)size, min_size);
    return GFP_OK;
}

gfp_status vkp_check_counts(uint32_t n_in, uint32_t want_in, uint32_t n_out, uint32_t want_out,
                            const char *op) {
    if (n_in != want_in || n_out != want_out)
        return vkp_fail(GFP_ERR_INVALID, "%s: takes %u input(s) and %u output(s), got %u and %u",
                        op, (unsigned)want_in, (unsigned)want_out, (unsigned)n_in, (unsigned)n_out);
    return GFP_OK;
}

void vkp_coalesce(int *rank, int64_t *sizes, int64_t (*strides)[GFP_MAX_RANK], int n) {
    int r = 0;
    for (int d = 0; d < *rank; d++) {
        if (sizes[d] == 1) continue; /* contributes nothing to any offset */
        if (r > 0) {
            bool joins = true; /* dim r-1 continues through dim d in every tensor */
            for (int k = 0; k < n && joins; k++)
                joins = strides[k][r - 1] == strides[k][d] * sizes[d];
            if (joins) {
                sizes[r - 1] *= sizes[d];
                for (int k = 0; k < n; k++) strides[k][r - 1] = strides[k][d];
                continue;
            }
        }
        sizes[r] = sizes[d];
        for (int k = 0; k < n; k++) strides[k][r] = strides[k][d];
        r++;
    }
    *rank = r;
}

void vkp_put_u64(vkp_words *p, uint64_t v) {
    vkp_put(p, (uint32_t)v);
    vkp_put(p, (uint32_t)(v >> 32));
}

void vkp_put_f64(vkp_words *p, double v) {
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    vkp_put_u64(p, bits);
}

void vkp_put_f32(vkp_words *p, float v) {
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    vkp_put(p, bits);
}

const char *vkp_op_name(uint32_t op) {
    switch (op) {
#define N(id, s) \
    case GFP_OP_##id: return s;
        N(COPY, "copy") N(FILL, "fill") N(ARANGE, "arange") N(RANDOM, "random") N(TRIL, "tril")
        N(TRIU, "triu") N(NEG, "neg") N(ABS, "abs") N(SIGN, "sign") N(EXP, "exp") N(LOG, "log")
        N(LOG1P, "log1p") N(EXPM1, "expm1") N(SQRT, "sqrt") N(RSQRT, "rsqrt")
        N(RECIPROCAL, "reciprocal") N(SQUARE, "square") N(SIN, "sin") N(COS, "cos")
        N(TANH, "tanh") N(SIGMOID, "sigmoid") N(RELU, "relu") N(LEAKY_RELU, "leaky_relu")
        N(ELU, "elu") N(GELU, "gelu") N(GELU_TANH, "gelu_tanh") N(SILU, "silu")
        N(SOFTPLUS, "softplus") N(ERF, "erf") N(FLOOR, "floor") N(CEIL, "ceil")
        N(ROUND, "round") N(CLAMP, "clamp") N(POW_SCALAR, "pow_scalar")
        N(LOGICAL_NOT, "logical_not") N(ADD, "add") N(SUB, "sub") N(MUL, "mul") N(DIV, "div")
        N(POW, "pow") N(MAXIMUM, "maximum") N(MINIMUM, "minimum") N(EQ, "eq") N(NE, "ne")
        N(LT, "lt") N(LE, "le") N(GT, "gt") N(GE, "ge") N(LOGICAL_AND, "logical_and")
        N(LOGICAL_OR, "logical_or") N(WHERE, "where") N(SUM, "sum") N(MEAN, "mean")
        N(PROD, "prod") N(AMAX, "amax") N(AMIN, "amin") N(VAR, "var")
        N(LOGSUMEXP, "logsumexp") N(MAX_DIM, "max_dim") N(MIN_DIM, "min_dim")
        N(MATMUL, "matmul") N(SOFTMAX, "softmax") N(LOG_SOFTMAX, "log_softmax")
        N(LAYER_NORM, "layer_norm") N(BATCH_NORM, "batch_norm")
        N(INDEX_SELECT, "index_select") N(GATHER, "gather") N(SCATTER_ADD, "scatter_add")
        N(INDEX_ADD, "index_add") N(CONV2D, "conv2d")
        N(CONV2D_BACKWARD_INPUT, "conv2d_backward_input")
        N(CONV2D_BACKWARD_WEIGHT, "conv2d_backward_weight") N(MAX_POOL2D, "max_pool2d")
        N(MAX_POOL2D_BACKWARD, "max_pool2d_backward") N(AVG_POOL2D, "avg_pool2d")
        N(AVG_POOL2D_BACKWARD, "avg_pool2d_backward")
#undef N
    default: return "op";
    }
}
