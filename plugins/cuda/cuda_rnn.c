/* SPDX-License-Identifier: BSD-3-Clause */
/* cuda_rnn.c — host side of LSTM_CELL and LSTM_CELL_BACKWARD
 * (kernels/cu_rnn.cu): the checks every plugin of the tree shares
 * (pk_check_lstm_cell, pk_check_lstm_cell_backward), then one kernel over
 * the N x H elements. Without them the core composes each step from about
 * ten elementwise launches. */
#include <string.h>

#include "cuda_internal.h"

static void slot(cuk_lstm *l, int k, const gfp_tensor *t) {
    if (!t) return;
    l->data[k] = cu_view(t).data;
    l->s0[k] = t->strides[0];
    l->s1[k] = t->strides[1];
}

gfp_status cu_rnn_launch(cu_device *dev, uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                         const gfp_tensor *const *out, uint32_t n_out, const void *params) {
    (void)params;
    cuk_lstm l;
    memset(&l, 0, sizeof l);
    gfp_status st;
    if (op == GFP_OP_LSTM_CELL) {
        st = pk_check_lstm_cell(in, n_in, out, n_out, &l.n, &l.h);
        if (st != GFP_OK || l.n == 0 || l.h == 0) return st;
        for (int k = 0; k < 3; k++) slot(&l, k, in[k]);
        for (int k = 0; k < 4; k++) slot(&l, 3 + k, out[k]);
    } else if (op == GFP_OP_LSTM_CELL_BACKWARD) {
        bool has_dy;
        st = pk_check_lstm_cell_backward(in, n_in, out, n_out, &l.n, &l.h, &has_dy);
        if (st != GFP_OK || l.n == 0 || l.h == 0) return st;
        for (uint32_t k = 0; k < 5; k++) slot(&l, (int)k, in[k]);
        if (has_dy) slot(&l, 5, in[5]);
        for (int k = 0; k < 2; k++) slot(&l, 6 + k, out[k]);
    } else {
        return pk_fail(GFP_ERR_UNSUPPORTED, "%s: the cuda plugin does not provide it",
                       pk_op_name(op));
    }
    l.dtype = in[0]->dtype;
    cudaError_t e = op == GFP_OP_LSTM_CELL ? cuk_lstm_cell(dev->stream, &l)
                                           : cuk_lstm_cell_backward(dev->stream, &l);
    return cu_check(e, pk_op_name(op), "the kernel launch");
}
