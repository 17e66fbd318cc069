/* SPDX-License-Identifier: BSD-3-Clause */
/* pk_widen.c — f16 / bf16 through f32 copies (pk_widen.h). */
#include "pk_widen.h"

#include "plugin_kit.h"

#define PK_WIDEN_ALIGN 128u /* bytes between the copies in the temporary */

bool pk_widen_operands(const gfp_tensor *const *in, uint32_t n_in, const gfp_tensor *const *out,
                       uint32_t n_out) {
    for (uint32_t i = 0; i < n_in; i++)
        if (in[i] && pk_is_half(in[i]->dtype)) return true;
    for (uint32_t i = 0; i < n_out; i++)
        if (out[i] && pk_is_half(out[i]->dtype)) return true;
    return false;
}

bool pk_widen_query(const gfp_op_query *q, gfp_op_query *w) {
    *w = *q;
    int32_t half = -1;
    for (uint32_t i = 0; i < q->n_inputs && i < 8; i++)
        if (pk_is_half(q->input_dtypes[i])) {
            if (half >= 0 && q->input_dtypes[i] != half) return false;
            half = q->input_dtypes[i];
            w->input_dtypes[i] = GFP_F32;
        }
    for (uint32_t i = 0; i < q->n_outputs && i < 4; i++)
        if (pk_is_half(q->output_dtypes[i])) {
            if (half >= 0 && q->output_dtypes[i] != half) return false;
            half = q->output_dtypes[i];
            w->output_dtypes[i] = GFP_F32;
        }
    return true;
}

/* A contiguous f32 descriptor of t's sizes in buf at byte offset at. */
static gfp_tensor wide_view(const gfp_tensor *t, gfp_buffer buf, uint64_t at) {
    gfp_tensor v = *t;
    v.buffer = buf;
    v.offset = at;
    v.dtype = GFP_F32;
    int64_t st = 1;
    for (int k = t->rank - 1; k >= 0; k--) {
        v.strides[k] = st;
        st *= t->sizes[k];
    }
    return v;
}

/* Where each 16-bit operand's f32 copy starts (UINT64_MAX: none); the total
 * in *bytes. */
static gfp_status place(const gfp_tensor *const *t, uint32_t n, uint64_t *at, uint64_t *bytes,
                        const char *name) {
    for (uint32_t i = 0; i < n; i++) {
        at[i] = UINT64_MAX;
        if (!t[i] || !pk_is_half(t[i]->dtype)) continue;
        int64_t numel = pk_numel(t[i]);
        uint64_t size;
        if (numel < 0 || __builtin_mul_overflow((uint64_t)numel, 4u, &size) ||
            __builtin_add_overflow(size, PK_WIDEN_ALIGN - 1, &size))
            return pk_fail(GFP_ERR_INVALID, "%s: the f32 copy of a tensor of %lld elements "
                           "overflows", name, (long long)numel);
        size -= size % PK_WIDEN_ALIGN;
        at[i] = *bytes;
        if (__builtin_add_overflow(*bytes, size, bytes))
            return pk_fail(GFP_ERR_INVALID, "%s: the f32 copies overflow", name);
    }
    return GFP_OK;
}

/* Bit i: the op updates input i in place. */
static uint32_t written_inputs(uint32_t op) {
    return op == GFP_OP_BATCH_NORM ? 3u << 3 : 0; /* running_mean, running_var */
}

gfp_status pk_widen_launch(const pk_widen_ops *ops, uint32_t op, const gfp_tensor *const *in,
                           uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                           const void *params) {
    const char *name = pk_op_name(op);
    if (n_in > 8 || n_out > 4)
        return pk_fail(GFP_ERR_INVALID, "%s: %u inputs and %u outputs (at most 8 and 4)", name,
                       (unsigned)n_in, (unsigned)n_out);
    uint64_t at_in[8], at_out[4], bytes = 0;
    gfp_status st = place(in, n_in, at_in, &bytes, name);
    if (st == GFP_OK) st = place(out, n_out, at_out, &bytes, name);
    if (st != GFP_OK) return st;
    if (ops->max_alloc && bytes > ops->max_alloc)
        return pk_fail(GFP_ERR_OUT_OF_MEMORY, "%s: the f32 copies of its 16-bit tensors take "
                       "%llu bytes, more than device '%s' allocates at once (%llu); run it on "
                       "smaller tensors or in f32", name, (unsigned long long)bytes,
                       ops->device, (unsigned long long)ops->max_alloc);
    gfp_buffer tmp = NULL;
    if ((st = ops->temp_alloc(ops->ctx, bytes ? bytes : 1, &tmp, name)) != GFP_OK) return st;
    gfp_tensor wi[8], wo[4];
    const gfp_tensor *pi[8], *po[4];
    for (uint32_t i = 0; i < n_in; i++) {
        pi[i] = in[i];
        if (at_in[i] == UINT64_MAX) continue;
        wi[i] = wide_view(in[i], tmp, at_in[i]);
        pi[i] = &wi[i];
        if (st == GFP_OK) st = ops->copy(ops->ctx, &wi[i], in[i], name);
    }
    for (uint32_t i = 0; i < n_out; i++) {
        po[i] = out[i];
        if (at_out[i] == UINT64_MAX) continue;
        wo[i] = wide_view(out[i], tmp, at_out[i]);
        po[i] = &wo[i];
    }
    if (st == GFP_OK) st = ops->launch(ops->ctx, op, pi, n_in, po, n_out, params);
    for (uint32_t i = 0; i < n_out && st == GFP_OK; i++)
        if (at_out[i] != UINT64_MAX) st = ops->copy(ops->ctx, out[i], &wo[i], name);
    for (uint32_t i = 0; i < n_in && st == GFP_OK; i++)
        if (at_in[i] != UINT64_MAX && (written_inputs(op) >> i) & 1u)
            st = ops->copy(ops->ctx, in[i], &wi[i], name);
    ops->temp_free(ops->ctx, tmp);
    return st;
}
