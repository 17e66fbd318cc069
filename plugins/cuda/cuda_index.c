/* SPDX-License-Identifier: BSD-3-Clause */
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
    return pk_index_out_of_range(op, verdict[1], dim, limit);
}

gfp_status cu_index_launch(cu_device *dev, uint32_t op, const gfp_tensor *const *in,
                           uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                           const void *params) {
    const char *name = pk_op_name(op);
    pk_index_geom g; /* dtypes checked by accepts() (cuda_ops.c) */
    gfp_status st = pk_check_index(op, params, in[0], in[1], out[0], ~0u, &g);
    if (st != GFP_OK) return st;
    cuk_tensor data = at_least_1d(in[0]), dst = at_least_1d(out[0]);
    int dim = g.dim;
    if (op == GFP_OP_INDEX_SELECT || op == GFP_OP_INDEX_ADD) {
        cuk_tensor index = cu_view(in[1]); /* rank 0 or 1: the kernel reads strides[0] */
        st = cu_check_indices(dev, &index, 0, g.limit, name, dim);
        if (st != GFP_OK || numel_of(op == GFP_OP_INDEX_SELECT ? &dst : &data) == 0) return st;
        return cu_check(cuk_index_op(dev->stream, op, &data, &index, &dst, dim), name,
                        "the kernel launch");
    }

    cuk_tensor index = at_least_1d(in[1]);
    st = cu_check_indices(dev, &index, 0, g.limit, name, dim);
    if (st != GFP_OK || numel_of(&index) == 0) return st;
    return cu_check(cuk_index_op(dev->stream, op, &data, &index, &dst, dim), name,
                    "the kernel launch");
}
