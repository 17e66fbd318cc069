/* ref_norm_bw.c — BATCH_NORM_BACKWARD (f32, f64): the gradients of batch norm
 * in training mode, as abi/graft_plugin.h defines them.
 *
 * Computed in double and rounded once on store; the per-channel sums are
 * compensated (ref_ksum), so this kernel is the oracle the fast ones and the
 * core's composed formula are checked against. */
#include <math.h>

#include "ref_internal.h"

#define OP_NAME "batch_norm_backward"

uint32_t ref_norm_bw_support(const gfp_op_query *q) {
    if (!GFP_HAS_FIELD(q->struct_size, gfp_op_query, output_dtypes) ||
        q->op != GFP_OP_BATCH_NORM_BACKWARD || q->n_inputs != 5 || q->n_outputs != 3)
        return GFP_SUPPORT_NONE;
    int32_t dt = q->input_dtypes[0];
    if (dt != GFP_F32 && dt != GFP_F64) return GFP_SUPPORT_NONE;
    for (uint32_t i = 1; i < 5; i++)
        if (q->input_dtypes[i] != dt && !(i == 4 && q->input_dtypes[i] == -1))
            return GFP_SUPPORT_NONE;
    for (uint32_t i = 0; i < 3; i++)
        if (q->output_dtypes[i] != dt) return GFP_SUPPORT_NONE;
    return GFP_SUPPORT_STRIDED;
}

static double load_c(const gfp_tensor *t, int64_t c) { return ref_load(t, c * t->strides[0]); }
static void store_c(const gfp_tensor *t, int64_t c, double v) {
    ref_store(t, c * t->strides[0], v);
}

/* Channel c of t [N, C, ...]: every dim, with dim 1 pinned to c. */
static gfp_tensor channel(const gfp_tensor *t, int64_t c) {
    gfp_tensor v = *t;
    v.offset = t->offset + (uint64_t)(c * t->strides[1]) * pk_dtype_size(t->dtype);
    v.sizes[1] = 1;
    return v;
}

static bool is_channel_vector(const gfp_tensor *t, int64_t ch) {
    return t->rank == 1 && t->sizes[0] == ch;
}

gfp_status ref_norm_bw_launch(const gfp_tensor *const *in, uint32_t n_in,
                              const gfp_tensor *const *out, uint32_t n_out) {
    gfp_status st = pk_expect_counts(n_in, 5, n_out, 3, OP_NAME);
    if (st != GFP_OK) return st;
    static const char *const roles[] = {"grad_y",      "x",      "save_mean",   "save_invstd",
                                        "weight",      "grad_x", "grad_weight", "grad_bias"};
    const gfp_tensor *t[8] = {in[0], in[1], in[2], in[3], in[4], out[0], out[1], out[2]};
    for (int i = 0; i < 8; i++)
        if (!t[i] && i != 4)
            return pk_fail(GFP_ERR_INVALID, "%s: the %s tensor is missing (NULL)", OP_NAME,
                            roles[i]);
    int32_t dt = t[0]->dtype;
    if (dt != GFP_F32 && dt != GFP_F64)
        return pk_fail(GFP_ERR_UNSUPPORTED, "%s: grad_y is %s; the reference takes f32 or f64",
                        OP_NAME, pk_dtype_name(dt));
    for (int i = 1; i < 8; i++)
        if (t[i] && t[i]->dtype != dt)
            return pk_fail(GFP_ERR_UNSUPPORTED, "%s: %s is %s but grad_y is %s; every tensor "
                            "must have one dtype", OP_NAME, roles[i], pk_dtype_name(t[i]->dtype),
                            pk_dtype_name(dt));
    const gfp_tensor *g = t[0], *x = t[1], *mean = t[2], *invstd = t[3], *w = t[4];
    const gfp_tensor *gx = t[5], *gw = t[6], *gb = t[7];
    if (x->rank < 2)
        return pk_fail(GFP_ERR_INVALID, "%s: x has rank %d; it must be [N, C, ...] (rank >= 2)",
                        OP_NAME, (int)x->rank);
    if (!pk_same_shape(x, g) || !pk_same_shape(x, gx))
        return pk_fail(GFP_ERR_INVALID, "%s: grad_y and grad_x must have x's shape", OP_NAME);
    int64_t ch = x->sizes[1];
    const gfp_tensor *per[5] = {w, mean, invstd, gw, gb};
    static const char *const per_role[] = {"weight", "save_mean", "save_invstd", "grad_weight",
                                           "grad_bias"};
    for (int i = 0; i < 5; i++)
        if (per[i] && !is_channel_vector(per[i], ch))
            return pk_fail(GFP_ERR_INVALID, "%s: %s must be 1-D with C = %lld elements", OP_NAME,
                            per_role[i], (long long)ch);
    int64_t count = ch ? pk_numel(x) / ch : 0;
    for (int64_t c = 0; c < ch; c++) {
        gfp_tensor gv = channel(g, c), xv = channel(x, c), gxv = channel(gx, c);
        double m = load_c(mean, c), rs = load_c(invstd, c), wc = w ? load_c(w, c) : 1.0;
        ref_ksum sg = {0, 0}, sgx = {0, 0};
        int64_t idx[GFP_MAX_RANK] = {0};
        if (count > 0) {
            do {
                double gi = ref_load(&gv, ref_offset(&gv, idx));
                ref_ksum_add(&sg, gi);
                ref_ksum_add(&sgx, gi * (ref_load(&xv, ref_offset(&xv, idx)) - m) * rs);
            } while (ref_next_index(idx, xv.sizes, xv.rank));
        }
        double db = ref_ksum_value(&sg), dw = ref_ksum_value(&sgx);
        store_c(gb, c, db);
        store_c(gw, c, dw);
        if (count == 0) continue;
        double mg = db / (double)count, mgx = dw / (double)count;
        for (int d = 0; d < GFP_MAX_RANK; d++) idx[d] = 0;
        do {
            double gi = ref_load(&gv, ref_offset(&gv, idx));
            double xhat = (ref_load(&xv, ref_offset(&xv, idx)) - m) * rs;
            ref_store(&gxv, ref_offset(&gxv, idx), wc * rs * (gi - mg - xhat * mgx));
        } while (ref_next_index(idx, xv.sizes, xv.rank));
    }
    return GFP_OK;
}
