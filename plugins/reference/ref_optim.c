/* SPDX-License-Identifier: BSD-3-Clause */
/* ref_optim.c — ADAM_UPDATE (f32, f64, any strides): one step of
 * torch.optim.Adam / AdamW for one parameter.
 *
 * Unlike the other reference kernels, this one computes in the tensors' own
 * dtype, one rounding per operation in the order graft_ops.def gives: the
 * op's contract is to equal the composed elementwise ops it replaces, so the
 * oracle is that composition written out element by element. */
#include <math.h>
#include <stddef.h>

#include "pk_adam.h"
#include "ref_internal.h"

uint32_t ref_optim_support(const gfp_op_query *q) {
    if (q->op != GFP_OP_ADAM_UPDATE || q->n_inputs != 4 || q->n_outputs != 3)
        return GFP_SUPPORT_NONE;
    int32_t dt = q->input_dtypes[0];
    if (dt != GFP_F32 && dt != GFP_F64) return GFP_SUPPORT_NONE;
    for (uint32_t i = 0; i < 4; i++)
        if (q->input_dtypes[i] != dt) return GFP_SUPPORT_NONE;
    for (uint32_t i = 0; i < 3; i++)
        if (q->output_dtypes[i] != dt) return GFP_SUPPORT_NONE;
    return GFP_SUPPORT_STRIDED;
}

/* Every step of the formula rounds to T: no wider intermediate, no fused
 * multiply-add (ISO C mode: the compiler contracts nothing). The arithmetic
 * is plugins/common/pk_adam.h's. */
#define ADAM_ELEMENT(T, SQRT)                                                            \
    do {                                                                                 \
        T p = *(const T *)(bp + op_ * (int64_t)sizeof(T));                               \
        T g = *(const T *)(bg + og_ * (int64_t)sizeof(T));                               \
        T m = *(const T *)(bm + om_ * (int64_t)sizeof(T));                               \
        T v = *(const T *)(bv + ov_ * (int64_t)sizeof(T));                               \
        PK_ADAM_ELEMENT(T, SQRT, c, p, g, m, v);                                         \
        *(T *)(yp + oyp_ * (int64_t)sizeof(T)) = p;                                      \
        *(T *)(ym + oym_ * (int64_t)sizeof(T)) = m;                                      \
        *(T *)(yv + oyv_ * (int64_t)sizeof(T)) = v;                                      \
    } while (0)

gfp_status ref_optim_launch(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                            const gfp_tensor *const *out, uint32_t n_out, const void *params) {
    if (op != GFP_OP_ADAM_UPDATE)
        return pk_fail(GFP_ERR_INTERNAL, "optim: op %u is not an optimiser update", (unsigned)op);
    gfp_status st = pk_check_adam(in, n_in, out, n_out, params);
    if (st != GFP_OK) return st;
    int32_t dt = in[0]->dtype;
    /* each constant formed in double, as the core's scalars are */
    const pk_adam_consts c = pk_adam_consts_of(params);

    const gfp_tensor *tp = in[0], *tg = in[1], *tm = in[2], *tv = in[3];
    const gfp_tensor *typ = out[0], *tym = out[1], *tyv = out[2];
    const char *bp = ref_base(tp), *bg = ref_base(tg), *bm = ref_base(tm), *bv = ref_base(tv);
    char *yp = ref_base(typ), *ym = ref_base(tym), *yv = ref_base(tyv);
    if (pk_numel(tp) == 0) return GFP_OK;
    int64_t idx[GFP_MAX_RANK] = {0};
    do {
        int64_t op_ = ref_offset(tp, idx), og_ = ref_offset(tg, idx), om_ = ref_offset(tm, idx),
                ov_ = ref_offset(tv, idx), oyp_ = ref_offset(typ, idx),
                oym_ = ref_offset(tym, idx), oyv_ = ref_offset(tyv, idx);
        if (dt == GFP_F32) ADAM_ELEMENT(float, sqrtf);
        else ADAM_ELEMENT(double, sqrt);
    } while (ref_next_index(idx, tp->sizes, tp->rank));
    return GFP_OK;
}
