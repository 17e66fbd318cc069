/* SPDX-License-Identifier: BSD-3-Clause */
/* ocl_optim.c — ADAM_UPDATE (kernels/optim.cl): the reference's checks
 * (pk_check_adam), the constants formed in double (pk_adam.h) and passed in
 * the dtype, one kernel over the seven tensors. Without it the core composes
 * the update from about a dozen elementwise launches and as many fills of
 * constants per parameter; on PoCL each launch costs 10-25 us. Contiguous
 * tensors only: the core composes the update for any other, as it does for
 * every plugin whose answer is GFP_SUPPORT_CONTIGUOUS. */
#include <string.h>

#include "ocl_internal.h"
#include "pk_adam.h"

static bool float_dtype(const ocl_device *d, int32_t dt) {
    return dt == GFP_F32 || (dt == GFP_F64 && d->fp64);
}

uint32_t ocl_optim_support(const ocl_device *d, const gfp_op_query *q) {
    if (q->op != GFP_OP_ADAM_UPDATE || q->n_inputs != 4 || q->n_outputs != 3)
        return GFP_SUPPORT_NONE;
    int32_t dt = q->input_dtypes[0];
    if (!float_dtype(d, dt)) return GFP_SUPPORT_NONE;
    for (uint32_t i = 0; i < 4; i++)
        if (q->input_dtypes[i] != dt) return GFP_SUPPORT_NONE;
    for (uint32_t i = 0; i < 3; i++)
        if (q->output_dtypes[i] != dt) return GFP_SUPPORT_NONE;
    return GFP_SUPPORT_CONTIGUOUS;
}

gfp_status ocl_optim_launch(ocl_device *d, uint32_t op, const gfp_tensor *const *in,
                            uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                            const void *params) {
    const char *name = pk_op_name(op);
    if (op != GFP_OP_ADAM_UPDATE)
        return pk_fail(GFP_ERR_UNSUPPORTED, "%s: the opencl plugin does not provide it", name);
    gfp_status st = pk_check_adam(in, n_in, out, n_out, params);
    if (st != GFP_OK) return st;
    int32_t dt = in[0]->dtype;
    if (!float_dtype(d, dt))
        return pk_fail(GFP_ERR_UNSUPPORTED, "%s: %s needs doubles, which device '%s' lacks",
                       name, pk_dtype_name(dt), d->name);
    const gfp_tensor *t[7] = {in[0], in[1], in[2], in[3], out[0], out[1], out[2]};
    for (int k = 0; k < 7; k++)
        if (!pk_is_contiguous(t[k]))
            return pk_fail(GFP_ERR_UNSUPPORTED, "%s: the opencl plugin takes contiguous "
                           "tensors only (its query says so); make them contiguous", name);
    int64_t n = pk_numel(in[0]);
    if (n == 0) return GFP_OK;
    pk_adam_consts c = pk_adam_consts_of(params);
    const double k8[8] = {c.decay, c.beta1, c.one_minus_beta1, c.beta2,
                          c.one_minus_beta2, c.bc2_sqrt, c.eps, c.step_size};
    ocl_call call;
    ocl_call_begin(&call, d, OCL_PROG_OPTIM, dt == GFP_F32 ? "adam_update_f32" : "adam_update_f64",
                   name);
    for (int k = 0; k < 7; k++) {
        ocl_arg_mem(&call, ocl_mem(t[k]));
        ocl_arg_i64(&call, ocl_elem_offset(t[k]));
    }
    ocl_arg_i64(&call, n);
    ocl_arg_i32(&call, c.mode);
    for (int k = 0; k < 8; k++) {
        if (dt == GFP_F32) ocl_arg_f32(&call, (float)k8[k]);
        else ocl_arg_f64(&call, k8[k]);
    }
    return ocl_call_run1(&call, (uint64_t)n, 64);
}
