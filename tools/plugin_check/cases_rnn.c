/* SPDX-License-Identifier: BSD-3-Clause */
/* cases_rnn.c — the catalogue of the recurrent cells' pointwise steps
 * (LSTM_CELL, LSTM_CELL_BACKWARD).
 *
 * Each case is one step, with hidden sizes that are a vector's tail only,
 * whole vectors, and both. LSTM_CELL: mm and p drawn in [-3, 3], c_prev in
 * [-2, 2]; its outputs go through sigmoid and tanh, so they are compared
 * with the transcendental tolerance. LSTM_CELL_BACKWARD: act drawn in
 * [0, 1] (the gates' activations: sigmoids, and tanh(g) in [-1, 1]),
 * tanh(c) in [-1, 1], c_prev and the incoming gradients in [-2, 2]; with
 * and without dy. */
#include <stdio.h>

#include "pc.h"

/* [N, H] of the cases: a vector's tail only, whole vectors, both; the last
 * one large (skipped by --quick). */
static const int64_t shapes[][2] = {{1, 3}, {4, 16}, {5, 37}, {32, 256}};
enum { N_SHAPES = (int)(sizeof shapes / sizeof shapes[0]) };

/* Both ops take one float dtype throughout: 6 in, 2 out (the backward),
 * 3 in, 4 out (the forward). */
static int combos_lstm(const pc_op *op, uint32_t dtypes, pc_combo *out, int max) {
    bool bw = op->id == GFP_OP_LSTM_CELL_BACKWARD;
    uint32_t floats = dtypes & (GFP_DTYPE_BIT(GFP_F32) | GFP_DTYPE_BIT(GFP_F64));
    return pc_combos_same(floats, bw ? 6 : 3, bw ? 2 : 4, out, max);
}

static bool build_cell(const pc_op *op, const pc_combo *cb, int k, bool quick, pc_case *c) {
    (void)op;
    bool large = k == 2 * N_SHAPES - 1;
    if (k >= 2 * N_SHAPES || (large && quick)) return false;
    int64_t n = shapes[k / 2][0], h = shapes[k / 2][1];
    bool dy = k % 2 == 0;
    const int64_t wide[2] = {n, 4 * h}, narrow[2] = {n, h};
    pc_case_init(c, 6, 2);
    pc_arg_set(&c->in[0], cb->in[0], 2, wide, PC_GEN_UNIFORM, 0, 1);    /* act */
    pc_arg_set(&c->in[1], cb->in[1], 2, narrow, PC_GEN_UNIFORM, -2, 2); /* c_prev */
    pc_arg_set(&c->in[2], cb->in[2], 2, narrow, PC_GEN_UNIFORM, -1, 1); /* tanh(c) */
    pc_arg_set(&c->in[3], cb->in[3], 2, narrow, PC_GEN_UNIFORM, -2, 2); /* dh */
    pc_arg_set(&c->in[4], cb->in[4], 2, narrow, PC_GEN_UNIFORM, -2, 2); /* dc */
    pc_arg_set(&c->in[5], dy ? cb->in[5] : -1, 2, narrow, PC_GEN_UNIFORM, -2, 2);
    pc_arg_set(&c->out[0], cb->out[0], 2, wide, PC_GEN_ZEROS, 0, 0);  /* dgates */
    pc_arg_set(&c->out[1], cb->out[1], 2, narrow, PC_GEN_ZEROS, 0, 0); /* dc_prev */
    for (int o = 0; o < 2; o++) c->out[o].tol = PC_TOL_ELEMENTWISE;
    c->large = large;
    char buf[48];
    pc_label(c, "act %s, %s dy", pc_shape_text(buf, sizeof buf, 2, wide), dy ? "with" : "without");
    return true;
}

static bool build_fwd(const pc_op *op, const pc_combo *cb, int k, bool quick, pc_case *c) {
    (void)op;
    bool large = k == N_SHAPES - 1;
    if (k >= N_SHAPES || (large && quick)) return false;
    int64_t n = shapes[k][0], h = shapes[k][1];
    const int64_t wide[2] = {n, 4 * h}, narrow[2] = {n, h};
    pc_case_init(c, 3, 4);
    pc_arg_set(&c->in[0], cb->in[0], 2, wide, PC_GEN_UNIFORM, -3, 3);   /* mm */
    pc_arg_set(&c->in[1], cb->in[1], 2, wide, PC_GEN_UNIFORM, -3, 3);   /* p */
    pc_arg_set(&c->in[2], cb->in[2], 2, narrow, PC_GEN_UNIFORM, -2, 2); /* c_prev */
    for (int o = 0; o < 4; o++) {
        pc_arg_set(&c->out[o], cb->out[o], 2, o == 0 ? wide : narrow, PC_GEN_ZEROS, 0, 0);
        c->out[o].tol = PC_TOL_TRANSCENDENTAL;
    }
    c->large = large;
    char buf[48];
    pc_label(c, "mm %s", pc_shape_text(buf, sizeof buf, 2, wide));
    return true;
}

/* ------------------------------------------------------------ the table */
bool pc_cases_rnn(const gfp_op_info *row, pc_op *op) {
    if (row->family != GFP_FAMILY_RNN) return false;
    if (row->op == GFP_OP_LSTM_CELL_BACKWARD) {
        op->combos = combos_lstm;
        op->build = build_cell;
        return true;
    }
    if (row->op == GFP_OP_LSTM_CELL) {
        op->combos = combos_lstm;
        op->build = build_fwd;
        return true;
    }
    return false;
}
