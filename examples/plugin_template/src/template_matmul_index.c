/* SPDX-License-Identifier: BSD-3-Clause */
/* template_matmul_index.c — MATMUL, and INDEX_SELECT, GATHER, SCATTER_ADD,
 * INDEX_ADD.
 *
 * MATMUL is declared GFP_SUPPORT_CONTIGUOUS: the core hands it row-major
 * tensors only (it copies transposed or broadcast operands first), which
 * keeps the kernel a plain loop. Products are accumulated in double.
 * The index kernels check every index before they write anything, so a bad
 * index leaves the output as it was. */
#include <string.h>

#include "template.h"

static bool row_major(const gfp_tensor *t) {
    if (tp_numel(t) == 0) return true; /* no element to misplace */
    int64_t expect = 1;
    for (int d = t->rank - 1; d >= 0; d--) {
        if (t->sizes[d] > 1 && t->strides[d] != expect) return false;
        expect *= t->sizes[d];
    }
    return true;
}

gfp_status tp_matmul(uint32_t op, const gfp_tensor *const *in, const gfp_tensor *const *out,
                     const void *params) {
    (void)op;
    (void)params;
    const gfp_tensor *a = in[0], *b = in[1], *y = out[0];
    int r = a->rank;
    if (r < 2 || b->rank != r || y->rank != r)
        return tp_fail(GFP_ERR_INVALID, "matmul: a, b and y need one rank >= 2");
    int64_t m = a->sizes[r - 2], k = a->sizes[r - 1], n = b->sizes[r - 1], batch = 1;
    bool ok = b->sizes[r - 2] == k && y->sizes[r - 2] == m && y->sizes[r - 1] == n;
    for (int d = 0; d < r - 2; d++) {
        ok = ok && b->sizes[d] == a->sizes[d] && y->sizes[d] == a->sizes[d];
        batch *= a->sizes[d];
    }
    if (!ok) return tp_fail(GFP_ERR_INVALID, "matmul: the shapes do not fit [..., m, k] @ [..., k, n]");
    if (!row_major(a) || !row_major(b) || !row_major(y))
        return tp_fail(GFP_ERR_INVALID, "matmul: declared for contiguous tensors only");
    const int64_t zero[GFP_MAX_RANK] = {0};
    const float *pa = (const float *)tp_at(a, zero), *pb = (const float *)tp_at(b, zero);
    float *py = (float *)tp_at(y, zero);
    for (int64_t s = 0; s < batch; s++)
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double acc = 0;
                for (int64_t t = 0; t < k; t++)
                    acc += (double)pa[(s * m + i) * k + t] * pb[(s * k + t) * n + j];
                py[(s * m + i) * n + j] = (float)acc;
            }
    return GFP_OK;
}

/* t itself, or a 0-dim t as 1-D of one element. */
static gfp_tensor at_least_1d(const gfp_tensor *t) {
    gfp_tensor v = *t;
    if (v.rank == 0) {
        v.rank = 1;
        v.sizes[0] = 1;
        v.strides[0] = 0;
    }
    return v;
}

static int64_t index_at(const gfp_tensor *index, const int64_t *idx) {
    int64_t v;
    memcpy(&v, tp_at(index, idx), 8);
    return v;
}

/* Every index lies in [0, limit). */
static gfp_status check_indices(const char *op, const gfp_tensor *index, int64_t limit) {
    if (tp_numel(index) == 0) return GFP_OK;
    int64_t idx[GFP_MAX_RANK] = {0};
    do {
        int64_t v = index_at(index, idx);
        if (v < 0 || v >= limit)
            return tp_fail(GFP_ERR_INVALID, "%s: index %lld is outside [0, %lld)", op, (long long)v,
                           (long long)limit);
    } while (tp_next(idx, index->sizes, index->rank));
    return GFP_OK;
}

/* Copies (select, gather) or adds (the others) one element. */
static void move(uint32_t op, char *dst, const char *src, int32_t dtype) {
    if (op == GFP_OP_INDEX_SELECT || op == GFP_OP_GATHER) {
        memcpy(dst, src, dtype == GFP_I64 ? 8 : 4);
    } else {
        float a, b;
        memcpy(&a, dst, 4);
        memcpy(&b, src, 4);
        a += b;
        memcpy(dst, &a, 4);
    }
}

gfp_status tp_index(uint32_t op, const gfp_tensor *const *in, const gfp_tensor *const *out,
                    const void *params) {
    const char *name = op == GFP_OP_INDEX_SELECT ? "index_select" : op == GFP_OP_GATHER ? "gather"
                       : op == GFP_OP_SCATTER_ADD ? "scatter_add" : "index_add";
    gfp_status st = tp_params(params, GFP_DIM_PARAMS_SIZE_V1_0, name);
    if (st != GFP_OK) return st;
    bool selecting = op == GFP_OP_INDEX_SELECT || op == GFP_OP_GATHER;
    bool vector = op == GFP_OP_INDEX_SELECT || op == GFP_OP_INDEX_ADD; /* 1-D index */
    gfp_tensor data = at_least_1d(in[0]), index = at_least_1d(in[1]), y = at_least_1d(out[0]);
    /* `indexed` is what the index points into, `walked` what runs position by position. */
    const gfp_tensor *indexed = selecting ? &data : &y, *walked = selecting ? &y : &data;
    int dim = ((const gfp_dim_params *)params)->dim, r = data.rank;
    bool ok = dim >= 0 && dim < r && y.rank == r;
    if (ok && vector) {
        ok = index.rank == 1 && walked->sizes[dim] == index.sizes[0];
        for (int d = 0; d < r; d++) ok = ok && (d == dim || data.sizes[d] == y.sizes[d]);
    } else if (ok) {
        ok = index.rank == r && (!selecting || tp_same_shape(&y, &index));
        for (int d = 0; d < r; d++)
            ok = ok && (d == dim || index.sizes[d] <= indexed->sizes[d]) &&
                 (selecting || index.sizes[d] <= walked->sizes[d]);
    }
    if (!ok) return tp_fail(GFP_ERR_INVALID, "%s: dim %d or the shapes do not fit", name, dim);
    if ((st = check_indices(name, &index, indexed->sizes[dim])) != GFP_OK) return st;
    const gfp_tensor *space = vector ? walked : &index; /* the positions to visit */
    if (tp_numel(space) == 0) return GFP_OK;
    int64_t p[GFP_MAX_RANK] = {0};
    do {
        int64_t q[GFP_MAX_RANK];
        memcpy(q, p, sizeof q);
        q[dim] = vector ? index_at(&index, &p[dim]) : index_at(&index, p);
        char *dst = selecting ? tp_at(&y, p) : tp_at(&y, q);
        const char *src = selecting ? tp_at(&data, q) : tp_at(&data, p);
        move(op, dst, src, y.dtype);
    } while (tp_next(p, space->sizes, space->rank));
    return GFP_OK;
}
