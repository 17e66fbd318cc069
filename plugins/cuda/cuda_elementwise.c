/* SPDX-License-Identifier: BSD-3-Clause */
/* cuda_elementwise.c — host side of COPY, FILL, ARANGE, TRIL/TRIU, RANDOM,
 * the unary and binary elementwise ops, comparisons, logical ops and WHERE.
 *
 * Elementwise operands all have the output's sizes (the core broadcasts with
 * stride-0 dims). Before a launch the dims are simplified once for all
 * operands: size-1 dims are dropped and neighbours that every operand walks
 * as one are merged, so contiguous operands reach the kernel as rank 1 with
 * stride 1 and its index arithmetic is a single multiply. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cuda_internal.h"

/* Fills it from t[0..n) (t[0] the output). With merge, drops size-1 dims
 * and merges dims that every tensor walks contiguously. */
static void make_iter(cuk_iter *it, const gfp_tensor *const *t, int n, bool merge) {
    memset(it, 0, sizeof *it);
    it->n_tensors = n;
    it->numel = 1;
    const gfp_tensor *y = t[0];
    for (int k = 0; k < n; k++) {
        cuk_tensor v = cu_view(t[k]);
        it->data[k] = v.data;
        it->dtype[k] = v.dtype;
    }
    int r = 0;
    for (int d = 0; d < y->rank; d++) {
        it->numel *= y->sizes[d];
        if (merge && y->sizes[d] == 1) continue;
        bool joins = merge && r > 0;
        for (int k = 0; k < n && joins; k++)
            joins = t[k]->strides[d] * y->sizes[d] == it->strides[k][r - 1];
        if (joins) {
            /* dim r-1 steps exactly over dim d: one dim of their product */
            it->sizes[r - 1] *= y->sizes[d];
            for (int k = 0; k < n; k++) it->strides[k][r - 1] = t[k]->strides[d];
            continue;
        }
        it->sizes[r] = y->sizes[d];
        for (int k = 0; k < n; k++) it->strides[k][r] = t[k]->strides[d];
        r++;
    }
    if (r == 0) { /* a scalar, or all dims of size 1 */
        it->sizes[0] = 1;
        r = 1;
    }
    it->rank = r;
}

static bool is_integral(double v) {
    return v >= -9223372036854775808.0 && v < 9223372036854775808.0 && v == floor(v);
}

static bool is_float_dtype(int32_t dt) {
    return pk_dtype_in(dt, CU_FLOATS);
}

/* The parameters of a unary op, as the generated formulas take them. */
static gfp_status unary_params(uint32_t op, const void *params, int32_t dt, cuk_unary_params *p) {
    pk_unary_args u;
    pk_unary_args_of(op, params, dt, &u);
    memset(p, 0, sizeof *p);
    p->pa = u.a;
    p->pb = u.b;
    p->has_pa = u.has_a;
    p->has_pb = u.has_b;
    p->ia = u.ia;
    p->ib = u.ib;
    return GFP_OK;
}

static gfp_status run_random(cu_device *dev, const gfp_tensor *y, const void *params) {
    const gfp_random_params *p = params;
    gfp_status st = pk_check_random(params, y, CU_FLOATS);
    if (st != GFP_OK) return st;
    if (pk_numel(y) == 0) return GFP_OK;
    cuk_tensor v = cu_view(y);
    return cu_check(cuk_random(dev->stream, &v, p->kind, p->seed, p->offset, p->a, p->b),
                    "random", "the kernel launch");
}

/* An op with a complex operand (accepts() in cuda_ops.c took its dtypes):
 * the kernels of cu_complex.cu, except for what moves complex elements as
 * it moves the others (same-dtype COPY, FILL, TRIL/TRIU, WHERE). */
static bool complex_math(uint32_t op, const gfp_tensor *const *t, int n) {
    if (op == GFP_OP_TRIL || op == GFP_OP_TRIU || op == GFP_OP_WHERE || op == GFP_OP_FILL)
        return false;
    if (op == GFP_OP_COPY) return false; /* cuk_copy routes conversions into complex */
    for (int k = 0; k < n; k++)
        if (pk_is_complex(t[k]->dtype)) return true;
    return false;
}

static cudaError_t complex_launch(cu_device *dev, uint32_t op, const cuk_iter *it,
                                  const void *params) {
    switch (pk_ew_kind_of(op)) {
    case PK_EW_UNARY:
        if (op == GFP_OP_ABS) return cuk_cx_abs(dev->stream, it);
        return cuk_cx_unary(dev->stream, pk_complex_unary_code(op), it,
                            op == GFP_OP_POW_SCALAR ? ((const gfp_scalar_params *)params)->a : 0.0);
    case PK_EW_BINARY: return cuk_cx_binary(dev->stream, pk_complex_binary_code(op), it);
    default: return cuk_cx_compare(dev->stream, op == GFP_OP_NE, it); /* EQ, NE */
    }
}

gfp_status cu_elementwise_launch(cu_device *dev, uint32_t op, const gfp_tensor *const *in,
                                 uint32_t n_in, const gfp_tensor *y, const void *params) {
    const char *name = pk_op_name(op);
    gfp_status st = pk_check_elementwise(op, in, n_in, y);
    if (st != GFP_OK) return st;
    if (op == GFP_OP_RANDOM) return run_random(dev, y, params);
    if (pk_numel(y) == 0) return GFP_OK;

    const gfp_tensor *t[4] = {y, NULL, NULL, NULL};
    for (uint32_t i = 0; i < n_in; i++) t[i + 1] = in[i];
    cuk_iter it;
    /* TRIL/TRIU find rows and columns by position: keep every dim apart. */
    make_iter(&it, t, (int)n_in + 1, op != GFP_OP_TRIL && op != GFP_OP_TRIU);
    cudaError_t e;
    if (complex_math(op, t, (int)n_in + 1))
        return cu_check(complex_launch(dev, op, &it, params), name, "the kernel launch");
    switch (op) {
    case GFP_OP_COPY: e = cuk_copy(dev->stream, &it); break;
    case GFP_OP_FILL: {
        if ((st = pk_check_params(params, GFP_FILL_PARAMS_SIZE_V1_0, name)) != GFP_OK) return st;
        const gfp_fill_params *p = params;
        bool integer = y->dtype == GFP_I32 || y->dtype == GFP_I64;
        e = cuk_fill(dev->stream, &it, p->value, p->ivalue, integer);
        break;
    }
    case GFP_OP_ARANGE: {
        if ((st = pk_check_params(params, GFP_ARANGE_PARAMS_SIZE_V1_0, name)) != GFP_OK) return st;
        const gfp_arange_params *p = params;
        /* Integer outputs from integral start and step are exact in int64. */
        bool exact = !is_float_dtype(y->dtype) && is_integral(p->start) && is_integral(p->step);
        cuk_tensor v = cu_view(y);
        e = cuk_arange(dev->stream, &v, p->start, p->step, exact,
                       exact ? (int64_t)p->start : 0, exact ? (int64_t)p->step : 0);
        break;
    }
    case GFP_OP_TRIL:
    case GFP_OP_TRIU: {
        if ((st = pk_check_params(params, GFP_TRI_PARAMS_SIZE_V1_0, name)) != GFP_OK) return st;
        e = cuk_tri(dev->stream, &it, op == GFP_OP_TRIL,
                    ((const gfp_tri_params *)params)->diagonal);
        break;
    }
    case GFP_OP_WHERE: e = cuk_where(dev->stream, &it); break;
    case GFP_OP_LOGICAL_NOT:
    case GFP_OP_LOGICAL_AND:
    case GFP_OP_LOGICAL_OR: e = cuk_logical(dev->stream, op, &it); break;
    case GFP_OP_EQ:
    case GFP_OP_NE:
    case GFP_OP_LT:
    case GFP_OP_LE:
    case GFP_OP_GT:
    case GFP_OP_GE: e = cuk_compare(dev->stream, op, &it); break;
    default:
        if (n_in == 1) {
            cuk_unary_params up;
            if ((st = unary_params(op, params, y->dtype, &up)) != GFP_OK) return st;
            e = cuk_unary(dev->stream, op, &it, &up);
        } else {
            e = cuk_binary(dev->stream, op, &it);
        }
        break;
    }
    return cu_check(e, name, "the kernel launch");
}
