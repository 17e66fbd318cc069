/* SPDX-License-Identifier: BSD-3-Clause */
/* vk_ops_index.c — INDEX_SELECT, GATHER, SCATTER_ADD, INDEX_ADD
 * (shaders/index.comp). Index tensors are i64. Index values are checked on
 * the device before the launch, which fails with a message naming the bad
 * one; the shader also skips any index outside the indexed dim, so a bad
 * index can never touch memory outside the tensor. The
 * accumulating ops give each invocation a whole line along dim, in index
 * order: race-free, deterministic, and summed in the reference's order. */
#include "vk_internal.h"

static uint32_t index_dtypes(const vkp_device *d) {
    return (PK_DT_FLOAT | PK_DT_INT | PK_DT(GFP_BOOL)) & vkp_device_dtypes(d);
}

uint32_t vkp_index_support(vkp_device *d, const gfp_op_query *q) {
    if (pk_is_complex(q->input_dtypes[0])) return vkp_complex_index_support(d, q);
    return pk_index_dtypes_ok(q->op, q->input_dtypes[0], q->input_dtypes[1], q->output_dtypes[0],
                              index_dtypes(d))
               ? GFP_SUPPORT_STRIDED
               : GFP_SUPPORT_NONE;
}

/* Every index must lie in [0, limit): the core relies on the kernel's
 * failure to report a bad index (then it names the value). The device finds
 * the smallest and largest index (two reductions into a scratch buffer) and
 * the host reads them, a wait per indexing launch: the price of failing at
 * launch, as the ABI wants, on an asynchronous device. */
static gfp_status check_index_range(vkp_device *d, const gfp_tensor *index, int64_t limit,
                                    const char *name, int dim) {
    if (pk_numel(index) == 0) return GFP_OK;
    gfp_buffer scratch = NULL;
    void *host_ptr;
    gfp_status st = vkp_buffer_alloc(d, 16, &scratch, &host_ptr);
    if (st != GFP_OK) return st;
    gfp_tensor ext[2];
    for (int k = 0; k < 2; k++) {
        ext[k] = (gfp_tensor){.struct_size = sizeof(gfp_tensor), .dtype = GFP_I64,
                              .buffer = scratch, .offset = 8u * (uint64_t)k, .rank = index->rank};
        for (int r = 0; r < index->rank; r++) {
            ext[k].sizes[r] = 1;
            ext[k].strides[r] = 0;
        }
    }
    gfp_reduce_params rp = {.struct_size = sizeof rp,
                            .dims = index->rank ? (uint32_t)((1u << index->rank) - 1u) : 0u};
    const gfp_tensor *in[1] = {index}, *o0[1] = {&ext[0]}, *o1[1] = {&ext[1]};
    st = vkp_reduce_launch(d, GFP_OP_AMIN, in, 1, o0, 1, &rp);
    if (st == GFP_OK) st = vkp_reduce_launch(d, GFP_OP_AMAX, in, 1, o1, 1, &rp);
    int64_t v[2] = {0, 0};
    if (st == GFP_OK) st = vkp_buffer_read(d, scratch, 0, v, sizeof v);
    vkp_buffer_free(d, scratch);
    if (st != GFP_OK) return st;
    if (v[0] < 0 || v[1] >= limit)
        return pk_index_out_of_range(name, v[0] < 0 ? v[0] : v[1], dim, limit);
    return GFP_OK;
}

gfp_status vkp_index_launch(vkp_device *d, uint32_t op, const gfp_tensor *const *in,
                            uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                            const void *params) {
    const char *name = pk_op_name(op);
    /* Complex data: part by part through this function (vk_complex.c). */
    if (pk_is_complex(in[0]->dtype))
        return vkp_complex_index_launch(d, op, in, n_in, out, n_out, params);
    pk_index_geom g;
    gfp_status st = pk_check_index(op, params, in[0], in[1], out[0], index_dtypes(d), &g);
    if (st != GFP_OK) return st;
    gfp_tensor data = pk_at_least_1d(in[0]), y = pk_at_least_1d(out[0]);
    gfp_tensor index = pk_at_least_1d(in[1]);
    int dim = g.dim;
    bool select = op == GFP_OP_INDEX_SELECT || op == GFP_OP_INDEX_ADD;
    bool add = op == GFP_OP_SCATTER_ADD || op == GFP_OP_INDEX_ADD;
    const gfp_tensor *indexed = add ? &y : &data; /* the tensor index points into */
    /* The walk: y's shape for the selecting ops, the index's (gather,
     * scatter) or src's (index_add) with dim folded into the loop for adds. */
    const gfp_tensor *shape = op == GFP_OP_INDEX_SELECT ? &y : op == GFP_OP_INDEX_ADD ? &data : &index;
    int64_t sizes[GFP_MAX_RANK], items = 1;
    for (int k = 0; k < shape->rank; k++) {
        sizes[k] = add && k == dim ? 1 : shape->sizes[k];
        items *= sizes[k];
    }
    if ((st = check_index_range(d, in[1], indexed->sizes[dim], name, dim)) != GFP_OK) return st;
    if (items == 0 || pk_numel(&index) == 0) return GFP_OK;
    uint64_t loop = add ? (uint64_t)(select ? index.sizes[0] : index.sizes[dim]) : 1;
    if (loop * 2 + 16 > d->loop_budget)
        return pk_fail(GFP_ERR_UNSUPPORTED, "%s: %llu additions into one line are more loop "
                        "iterations than this vulkan device runs in one invocation", name,
                        (unsigned long long)loop);
    vkp_words p = {.n = 0};
    vkp_put(&p, (uint32_t)items);
    vkp_put(&p, (uint32_t)shape->rank);
    vkp_put(&p, (uint32_t)dim);
    vkp_put(&p, vkp_elem_offset(&y));
    vkp_put(&p, vkp_elem_offset(&data));
    vkp_put(&p, vkp_elem_offset(&index));
    vkp_put(&p, (uint32_t)indexed->sizes[dim]);
    vkp_put(&p, (uint32_t)(select ? index.sizes[0] : index.sizes[dim]));
    vkp_put(&p, (uint32_t)y.strides[dim]);
    vkp_put(&p, (uint32_t)data.strides[dim]);
    vkp_put(&p, (uint32_t)(select ? index.strides[0] : index.strides[dim]));
    for (int k = 0; k < 8; k++) vkp_put(&p, k < shape->rank ? (uint32_t)sizes[k] : 1);
    for (int k = 0; k < 8; k++) vkp_put(&p, k < y.rank ? (uint32_t)y.strides[k] : 0);
    for (int k = 0; k < 8; k++) vkp_put(&p, k < data.rank ? (uint32_t)data.strides[k] : 0);
    for (int k = 0; k < 8; k++) vkp_put(&p, !select && k < index.rank ? (uint32_t)index.strides[k] : 0);
    vkp_dispatch dp = {.shader = VKP_SH_INDEX, .n_spec = 3, .params = p.w, .n_params = p.n,
                       .n_tensors = 3, .tensors = {out[0], in[0], in[1]}};
    dp.spec[0] = 64;
    dp.spec[1] = (uint32_t)data.dtype;
    dp.spec[2] = add ? 1u : 0u;
    dp.groups[0] = vkp_groups(d, (uint64_t)items, 64);
    return vkp_dispatch_run(d, &dp);
}
