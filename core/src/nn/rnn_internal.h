/* SPDX-License-Identifier: BSD-3-Clause */
/* rnn_internal.h — one direction of one recurrent layer over a sequence,
 * shared by the modules (rnn.c) and the fused sequence node (rnn_seq.c).
 *
 * Both take the input side already projected for the whole sequence:
 * proj [T, N, G H] = x W_ih^T, and the bias of the input side b_x [G H]
 * (NULL: none), added to every step: b_ih + b_hh, but for the GRU b_ih
 * alone (its n gate multiplies W_hn h + b_hn by r, so b_hh stays apart and
 * is passed as b_hh; NULL otherwise). h0 and c0 (LSTM only, else NULL) are
 * [N, H]. Results: y [T, N, H] (the hidden state of every time step, in time
 * order also for the reverse direction), *h_n and *c_n (LSTM; [N, H]),
 * recorded in the caller's scope like returned tensors. T >= 1. */
#ifndef GRAFT_NN_RNN_INTERNAL_H
#define GRAFT_NN_RNN_INTERNAL_H

#include "../internal.h"

/* The layer composed of graft's ops step by step (rnn.c): every op records
 * its own node, so it carries forward-mode tangents, autocast and any
 * order of derivatives. */
gf_status gf__rnn_seq_composed(gf_rnn_mode mode, const gf_tensor *proj, const gf_tensor *b_x,
                               const gf_tensor *w_hh, const gf_tensor *b_hh, const gf_tensor *h0,
                               const gf_tensor *c0, bool reverse, gf_tensor **y, gf_tensor **h_n,
                               gf_tensor **c_n);

/* The same values through the fused sequence (rnn_seq.c): one node for the
 * whole sequence when gradients are recorded, the composed form where a
 * forward-mode tangent, autocast or mixed dtypes or devices ask for it. */
gf_status gf__rnn_seq(gf_rnn_mode mode, const gf_tensor *proj, const gf_tensor *b_x,
                      const gf_tensor *w_hh, const gf_tensor *b_hh, const gf_tensor *h0,
                      const gf_tensor *c0, bool reverse, gf_tensor **y, gf_tensor **h_n,
                      gf_tensor **c_n);

#endif
