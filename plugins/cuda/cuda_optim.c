/* SPDX-License-Identifier: BSD-3-Clause */
/* cuda_optim.c — host side of ADAM_UPDATE (kernels/cu_optim.cu): the
 * reference's checks (pk_check_adam), the constants formed in double
 * (pk_adam.h), one kernel over the seven tensors. Without it the core
 * composes the update from about a dozen elementwise launches per
 * parameter. */
#include <string.h>

#include "cuda_internal.h"

gfp_status cu_optim_launch(cu_device *dev, uint32_t op, const gfp_tensor *const *in,
                           uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                           const void *params) {
    if (op != GFP_OP_ADAM_UPDATE)
        return pk_fail(GFP_ERR_UNSUPPORTED, "%s: the cuda plugin does not provide it",
                       pk_op_name(op));
    gfp_status st = pk_check_adam(in, n_in, out, n_out, params);
    if (st != GFP_OK || pk_numel(in[0]) == 0) return st;
    cuk_adam a;
    memset(&a, 0, sizeof a);
    a.rank = in[0]->rank;
    a.dtype = in[0]->dtype;
    a.numel = pk_numel(in[0]);
    a.contiguous = 1;
    for (int d = 0; d < a.rank; d++) a.sizes[d] = in[0]->sizes[d];
    for (int k = 0; k < 7; k++) {
        const gfp_tensor *t = k < 4 ? in[k] : out[k - 4];
        cuk_tensor v = cu_view(t);
        a.data[k] = v.data;
        for (int d = 0; d < a.rank; d++) a.strides[k][d] = t->strides[d];
        if (!cu_is_contiguous(t)) a.contiguous = 0;
    }
    a.c = pk_adam_consts_of(params);
    return cu_check(cuk_adam_update(dev->stream, &a), "adam_update", "the kernel launch");
}
