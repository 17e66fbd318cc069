/* cuda_index.c — host side of INDEX_SELECT, GATHER, SCATTER_ADD, INDEX_ADD.
 *
 * The checks and messages are the reference's (plugins/reference/
 * ref_index.c). Index values are checked on the device before anything is
 * written: a small kernel finds the first index out of range, and the host
 * waits for its verdict. That costs one synchronisation per indexing launch,
 * the price of reporting the error from launch() with the output untouched,
 * as the ABI's error model wants. */
#include <stdio.h>
#include <string.h>

#include "cuda_internal.h"

/* t itself, or for a 0-dim t a 1-D view of its one element. */
static cuk_tensor at_least_1d(const gfp_tensor *t) {
    cuk_tensor v = cu_view(t);
    if (v.rank == 0) {
        v.rank = 1;
        v.sizes[0] = 1;
        v.strides[0] = 0;
    }
    return v;
}

static int64_t numel_of(const cuk_tensor *t) {
    int64_t n = 1;
    for (int d = 0; d < t->rank; d++) n *= t->sizes[d];
    return n;
}

gfp_status cu_check_indices(cu_device *dev, const cuk_tensor *index, int64_t lo, int64_t limit,
                            const char *op, int dim) {
    if (numel_of(index) == 0) return GFP_OK;
    gfp_status st = cu_check(cuk_index_check(dev->stream, index, lo, limit, dev->scratch), op,
                             "the index check kernel launch");
    int64_t verdict[2];
    if (st == GFP_OK) st = cu_read_scratch(dev, verdict, op);
    if (st != GFP_OK || verdict[0] == INT64_MAX) return st;
    if (dim < 0)
        return pk_fail(GFP_ERR_INVALID,
                       "%s: index %lld (at position %lld) is outside the input plane of %lld "
                       "elements (or -1)",
                       op, (long long)verdict[1], (long long)verdict[0], (long long)limit);
    return pk_fail(GFP_ERR_INVALID,
                   "%s: index %lld is out of range for dim %d of size %lld (valid range [0, "
                   "%lld))",
                   op, (long long)verdict[1], dim, (long long)limit, (long long)limit);
}

static bool same_but_dim(const cuk_tensor *a, const cuk_tensor *b, int dim) {
    if (a->rank != b->rank) return false;
    for (int d = 0; d < a->rank; d++)
        if (d != dim && a->sizes[d] != b->sizes[d]) return false;
    return true;
}

gfp_status cu_index_launch(cu_device *dev, uint32_t op, const gfp_tensor *const *in,
                           uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                           const void *params) {
    (void)n_in;
    (void)n_out;
    const char *name = pk_op_name(op);
    gfp_status st = pk_check_params(params, GFP_DIM_PARAMS_SIZE_V1_0, name);
    if (st != GFP_OK) return st;
    cuk_tensor data = at_least_1d(in[0]), dst = at_least_1d(out[0]);
    int dim = ((const gfp_dim_params *)params)->dim;
    if (dim < 0 || dim >= data.rank)
        return pk_fail(GFP_ERR_INVALID, "%s: dim %d is out of range for a tensor of rank %d", name,
                       dim, (int)in[0]->rank);
    bool selecting = op == GFP_OP_INDEX_SELECT || op == GFP_OP_GATHER;
    const cuk_tensor *indexed = selecting ? &data : &dst;
    const cuk_tensor *walked = selecting ? &dst : &data;

    if (op == GFP_OP_INDEX_SELECT || op == GFP_OP_INDEX_ADD) {
        if (in[1]->rank > 1)
            return pk_fail(GFP_ERR_INVALID, "%s: index must be 1-D; it has rank %d", name,
                           (int)in[1]->rank);
        cuk_tensor index = cu_view(in[1]); /* rank 0 or 1: the kernel reads strides[0] */
        int64_t n_index = pk_numel(in[1]);
        if (!same_but_dim(&data, &dst, dim) || walked->sizes[dim] != n_index)
            return pk_fail(GFP_ERR_INVALID,
                           "%s: %s must have %s's shape except in dim %d, where its size must be "
                           "the index's length %lld",
                           name, selecting ? "y" : "src", selecting ? "x" : "y", dim,
                           (long long)n_index);
        st = cu_check_indices(dev, &index, 0, indexed->sizes[dim], name, dim);
        if (st != GFP_OK || numel_of(walked) == 0) return st;
        return cu_check(cuk_index_op(dev->stream, op, &data, &index, &dst, dim), name,
                        "the kernel launch");
    }

    cuk_tensor index = at_least_1d(in[1]);
    bool gather = op == GFP_OP_GATHER;
    if (index.rank != data.rank || dst.rank != data.rank)
        return pk_fail(GFP_ERR_INVALID, "%s: %s, index and y must have the same rank (got %d, %d, %d)",
                       name, gather ? "x" : "src", (int)data.rank, (int)index.rank, (int)dst.rank);
    if (gather) {
        bool same = true;
        for (int d = 0; d < index.rank; d++) same = same && dst.sizes[d] == index.sizes[d];
        if (!same) return pk_fail(GFP_ERR_INVALID, "gather: y must have the index's shape");
    }
    for (int d = 0; d < index.rank; d++) {
        if (d != dim && index.sizes[d] > indexed->sizes[d])
            return pk_fail(GFP_ERR_INVALID, "%s: index has size %lld in dim %d, larger than %s's %lld",
                           name, (long long)index.sizes[d], d, gather ? "x" : "y",
                           (long long)indexed->sizes[d]);
        if (!gather && index.sizes[d] > walked->sizes[d])
            return pk_fail(GFP_ERR_INVALID,
                           "scatter_add: index has size %lld in dim %d, larger than src's %lld",
                           (long long)index.sizes[d], d, (long long)walked->sizes[d]);
    }
    st = cu_check_indices(dev, &index, 0, indexed->sizes[dim], name, dim);
    if (st != GFP_OK || numel_of(&index) == 0) return st;
    return cu_check(cuk_index_op(dev->stream, op, &data, &index, &dst, dim), name,
                    "the kernel launch");
}
