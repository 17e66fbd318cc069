/* SPDX-License-Identifier: BSD-3-Clause */
/* rnn_seq.c — one direction of one recurrent layer over the whole sequence
 * as one autograd node (LSTMSequenceBackward, GRUSequenceBackward,
 * RNNSequenceBackward), where the composed form (rnn.c) records a dozen
 * nodes per time step.
 *
 * Forward, per step: one GEMM (h_{t-1} W_hh^T) added onto the step's slab of
 * the projected input and the input side's bias, then the cell's pointwise
 * update on whole [N, G H]
 * and [N, H] tensors, written into buffers for the whole sequence: the gate
 * activations, the hidden states (and for an LSTM the cell states and
 * tanh(c); for a GRU W_hn h + b_hn). That is all backward reads.
 * Backward (BPTT) runs the steps in reverse: per step the pointwise
 * derivatives into the gate gradients dG_t and one GEMM for dh_{t-1} =
 * dG_t W_hh; W_hh's gradient is then ONE GEMM over the whole sequence,
 * dG^T [G H, T N] @ H_prev [T N, H], the bias's one reduction of dG, and
 * the gradient of the projection is dG itself (the projection's own node
 * gives W_ih's and the input's, one GEMM each over the sequence too).
 *
 * Every operation is a graft op on whole tensors (a few launches per step,
 * no per-element host code), so the node runs on every device. Where the
 * device has them, an LSTM's pointwise step is one LSTM_CELL launch and its
 * backward one LSTM_CELL_BACKWARD launch (the same bits as the ops they
 * replace; GRAFT_LSTM_CELL=composed asks for the ops). The
 * pointwise work is plain op calls under no-grad: when backward runs with
 * create_graph the node recomputes the layer composed (rnn.c) from its
 * saved inputs, with their history, and differentiates that (a double
 * backward); forward-mode tangents, autocast and mixed dtypes or devices
 * take the composed form from the start. */
#include <stdlib.h>
#include <string.h>

#include "../amp/amp_internal.h"
#include "../autograd/ag_internal.h"
#include "../fwad/fw_internal.h"
#include "rnn_internal.h"

/* The node's inputs (edges) in this order; saved slots 0..4 hold them. */
enum { IN_PROJ, IN_BX, IN_WHH, IN_BHH, IN_H0, IN_C0, IN_COUNT };
/* Saved buffers after the inputs. */
enum { SV_GATES = IN_COUNT, SV_HS, SV_CS, SV_TC, SV_HN };

typedef struct seq_ctx {
    gf_rnn_mode mode;
    bool reverse;
    int64_t t_len, hs;
} seq_ctx;
GF_CTX_FITS(seq_ctx);

/* The buffers of one run. hs (and cs) [T + 1, N, H]: the states, the
 * initial one first in processing order (slot 0 forward, slot T for the
 * reverse direction, so step t reads slot prev_slot and writes slot
 * next_slot and y is slots [1, T] or [0, T) in time order either way);
 * gates [T, N, G H]: LSTM i, f, tanh(g), o; GRU r, z, n; tc [T, N, H]:
 * tanh(c_t) (LSTM); hn [T, N, H]: W_hn h_{t-1} + b_hn (GRU). */
typedef struct seq_bufs {
    gf_tensor *gates, *hs, *cs, *tc, *hn;
} seq_bufs;

static int64_t prev_slot(bool rev, int64_t t) { return rev ? t + 1 : t; }
static int64_t next_slot(bool rev, int64_t t) { return rev ? t : t + 1; }

/* Column block k of width h of a [N, K] tensor (a view). */
static gf_tensor *cols(gf_tensor *t, int k, int64_t h) { return gf_narrow(t, 1, k * h, h); }

/* r is the result of an _into op meant for dst: true when it is dst. An
 * _into op writes into a new tensor when dst does not fit (an input
 * overlaps it); that result is copied over. */
static bool put(gf_tensor *r, gf_tensor *dst) {
    if (!r || !dst) return false;
    return r == dst || gf__copy_into(dst, r) == GF_OK;
}

static bool copy_to(gf_tensor *dst, const gf_tensor *src) {
    return dst && src && gf__copy_into(dst, src) == GF_OK;
}

/* ------------------------------------------------------------ forward */
/* Step t: pt = the projection's slab [N, G H] (b_x added here, unless the
 * caller added it to the whole projection: b_x NULL), wt = W_hh^T [H, G H].
 * Inside the caller's scope, under no-grad. */
static bool forward_step(const seq_ctx *c, const seq_bufs *b, gf_tensor *pt, const gf_tensor *b_x,
                         gf_tensor *wt, const gf_tensor *b_hh, int64_t t, bool *cell) {
    int64_t H = c->hs;
    if (b_x) pt = gf_add(pt, b_x);
    gf_tensor *h = gf_select(b->hs, 0, prev_slot(c->reverse, t));
    gf_tensor *h_new = gf_select(b->hs, 0, next_slot(c->reverse, t));
    gf_tensor *mm = gf_matmul(h, wt);
    switch (c->mode) {
    case GF_RNN_LSTM: {
        gf_tensor *a = gf_select(b->gates, 0, t);
        if (*cell && mm && pt) { /* one LSTM_CELL launch (b_x is in pt) */
            const gf_tensor *in[3] = {mm, pt, gf_select(b->cs, 0, prev_slot(c->reverse, t))};
            gf_tensor *out[4] = {a, gf_select(b->cs, 0, next_slot(c->reverse, t)),
                                 gf_select(b->tc, 0, t), h_new};
            gf_status s = in[2] && out[1] && out[2]
                              ? gf__launch_own(GFP_OP_LSTM_CELL, "lstm_cell", in, 3, out, 4, NULL)
                              : gf__status();
            if (s == GF_OK) return true;
            if (s != GF_ERR_UNSUPPORTED) return false;
            *cell = false; /* the device refused it: composed from here on */
        }
        bool ok = put(gf__add_into(mm, mm, pt), mm) && put(gf__sigmoid_into(a, mm), a);
        /* tanh of the g block on a contiguous copy: the activations of
         * the CPU plugins are vectorised on contiguous tensors only */
        gf_tensor *g = ok ? gf_contiguous(cols(mm, 2, H)) : NULL;
        ok = ok && put(gf__tanh_into(g, g), g) && copy_to(cols(a, 2, H), g);
        gf_tensor *cp = gf_select(b->cs, 0, prev_slot(c->reverse, t));
        gf_tensor *cn = gf_select(b->cs, 0, next_slot(c->reverse, t));
        gf_tensor *tc = gf_select(b->tc, 0, t);
        /* (c_{t-1} and c_t share a buffer: f c_{t-1} into one of its own) */
        gf_tensor *fc = ok ? gf_mul(cols(a, 1, H), cp) : NULL;
        gf_tensor *ig = fc ? gf_mul(cols(a, 0, H), g) : NULL;
        return ig && put(gf__add_into(cn, fc, ig), cn) && put(gf__tanh_into(tc, cn), tc) &&
               put(gf__mul_into(h_new, cols(a, 3, H), tc), h_new);
    }
    case GF_RNN_GRU: {
        gf_tensor *a = gf_select(b->gates, 0, t), *hn = gf_select(b->hn, 0, t);
        bool ok = mm && (!b_hh || put(gf__add_into(mm, mm, b_hh), mm)) &&
                  copy_to(hn, cols(mm, 2, H)) && put(gf__add_into(a, pt, mm), a) &&
                  put(gf__sigmoid_into(a, a), a); /* the n block is replaced below */
        gf_tensor *n = ok ? gf_mul(cols(a, 0, H), hn) : NULL;
        ok = ok && put(gf__add_into(n, n, cols(pt, 2, H)), n) && put(gf__tanh_into(n, n), n) &&
             copy_to(cols(a, 2, H), n);
        gf_tensor *d = ok ? gf_sub(h, n) : NULL; /* h' = n + z (h - n) */
        return ok && put(gf__mul_into(d, d, cols(a, 1, H)), d) &&
               put(gf__add_into(h_new, n, d), h_new);
    }
    default:
        return put(gf__add_into(mm, mm, pt), mm) &&
               put(c->mode == GF_RNN_RELU ? gf__relu_into(h_new, mm) : gf__tanh_into(h_new, mm),
                   h_new);
    }
}

/* Whether the LSTM's steps may run as LSTM_CELL launches: unless
 * GRAFT_LSTM_CELL=composed asks for the composed steps (read at each call;
 * both give the same bits, test_module_rnn_fused checks it), whether the
 * device runs the op on the step tensors (asked once, with one step's:
 * every step's have the same layout). In the caller's scope. */
static bool cell_wanted(void) {
    const char *env = getenv("GRAFT_LSTM_CELL");
    return !(env && !strcmp(env, "composed"));
}

static bool cell_fits(const seq_bufs *b, gf_tensor *pc, int64_t slot) {
    if (!cell_wanted()) return false;
    gf_tensor *p0 = gf_select(pc, 0, 0), *cp = gf_select(b->cs, 0, slot);
    gf_tensor *out[4] = {gf_select(b->gates, 0, 0), cp, gf_select(b->tc, 0, 0),
                         gf_select(b->hs, 0, slot)};
    const gf_tensor *in[3] = {out[0], p0, cp}; /* mm: a contiguous [N, 4H] as the gates' */
    for (int i = 0; i < 4; i++)
        if (!out[i]) return false;
    return p0 && gf__dev_has_op(GFP_OP_LSTM_CELL, in, 3, out, 4);
}

/* The buffers, the initial states in place, and every step. Inside the
 * caller's scope, under no-grad. */
static bool forward_run(const seq_ctx *c, seq_bufs *b, const gf_tensor *proj,
                        const gf_tensor *b_x, const gf_tensor *w_hh, const gf_tensor *b_hh, const gf_tensor *h0,
                        const gf_tensor *c0) {
    int64_t T = c->t_len, N = gf_tensor_size(proj, 1), H = c->hs, G = gf_tensor_size(proj, 2);
    gf_dtype dt = proj->dtype;
    gf_device *dev = proj->storage->device;
    const int64_t st[3] = {T + 1, N, H}, gs[3] = {T, N, G}, hs[3] = {T, N, H};
    bool lstm = c->mode == GF_RNN_LSTM, gru = c->mode == GF_RNN_GRU;
    b->hs = gf_empty(st, 3, dt, dev);
    if (lstm || gru) b->gates = gf_empty(gs, 3, dt, dev);
    if (lstm) b->cs = gf_empty(st, 3, dt, dev), b->tc = gf_empty(hs, 3, dt, dev);
    if (gru) b->hn = gf_empty(hs, 3, dt, dev);
    int64_t first = prev_slot(c->reverse, c->reverse ? T - 1 : 0);
    bool ok = b->hs && (!(lstm || gru) || b->gates) && (!lstm || (b->cs && b->tc)) &&
              (!gru || b->hn) && copy_to(gf_select(b->hs, 0, first), h0) &&
              (!lstm || copy_to(gf_select(b->cs, 0, first), c0));
    /* An LSTM's input-side bias is added to the whole projection at once
     * (the same sums: p + b, element by element), one launch instead of one
     * a step. */
    bool whole = lstm && b_x;
    gf_tensor *pc = !ok ? NULL : whole ? gf_add(proj, b_x) : gf_contiguous(proj);
    gf_tensor *wt = ok ? gf_transpose(w_hh, 0, 1) : NULL;
    ok = ok && pc && wt;
    bool cell = ok && lstm && T > 0 && cell_fits(b, pc, first);
    for (int64_t k = 0; ok && k < T; k++) {
        int64_t t = c->reverse ? T - 1 - k : k;
        gf_scope_begin();
        ok = forward_step(c, b, gf_select(pc, 0, t), whole ? NULL : b_x, wt, b_hh, t, &cell);
        gf_scope_end();
    }
    return ok;
}

/* ------------------------------------------------------------ backward */
/* Step t of BPTT. dh, dc: the gradients reaching h_t and c_t from later
 * steps and the outputs (dh includes dy_t); writes dG_t (dp) and, for a
 * GRU, the hidden side's gate gradients (dq: r and z as dp, n times r);
 * returns the gradients of h_{t-1} (and *dc_prev of c_{t-1}), recorded in
 * the caller's scope. w: W_hh [G H, H]. */
static gf_tensor *backward_step(const seq_ctx *c, const seq_bufs *b, gf_tensor *w,
                                gf_tensor *one, gf_tensor *dh, gf_tensor *dc, gf_tensor *dp,
                                gf_tensor *dq, int64_t t, gf_tensor **dc_prev) {
    int64_t H = c->hs;
    gf_tensor *hp = gf_select(b->hs, 0, prev_slot(c->reverse, t));
    switch (c->mode) {
    case GF_RNN_LSTM: {
        gf_tensor *a = gf_select(b->gates, 0, t), *tc = gf_select(b->tc, 0, t);
        gf_tensor *cp = gf_select(b->cs, 0, prev_slot(c->reverse, t));
        gf_tensor *i = cols(a, 0, H), *f = cols(a, 1, H), *g = cols(a, 2, H), *o = cols(a, 3, H);
        /* the activations' derivatives: s (1 - s) for the sigmoid gates,
         * 1 - g^2 for the tanh gate */
        gf_tensor *d = gf_mul(a, a);
        bool ok = put(gf__sub_into(d, a, d), d);
        gf_tensor *dg = ok ? cols(d, 2, H) : NULL;
        ok = ok && put(gf__mul_into(dg, g, g), dg) && put(gf__sub_into(dg, one, dg), dg);
        gf_tensor *dpo = cols(dp, 3, H); /* do = dh tanh(c) */
        ok = ok && put(gf__mul_into(dpo, dh, tc), dpo) &&
             put(gf__mul_into(dpo, dpo, cols(d, 3, H)), dpo);
        /* dc += dh o (1 - tanh(c)^2) */
        gf_tensor *u = ok ? gf_mul(dh, o) : NULL, *q = ok ? gf_mul(tc, tc) : NULL;
        ok = ok && put(gf__sub_into(q, one, q), q) && put(gf__mul_into(u, u, q), u) &&
             put(gf__add_into(u, u, dc), u);
        gf_tensor *dpi = cols(dp, 0, H), *dpf = cols(dp, 1, H), *dpg = cols(dp, 2, H);
        ok = ok && put(gf__mul_into(dpi, u, g), dpi) &&
             put(gf__mul_into(dpi, dpi, cols(d, 0, H)), dpi) && put(gf__mul_into(dpf, u, cp), dpf) &&
             put(gf__mul_into(dpf, dpf, cols(d, 1, H)), dpf) && put(gf__mul_into(dpg, u, i), dpg) &&
             put(gf__mul_into(dpg, dpg, dg), dpg);
        if (!ok) return NULL;
        *dc_prev = gf_mul(u, f);
        return gf_matmul(dp, w);
    }
    case GF_RNN_GRU: {
        gf_tensor *a = gf_select(b->gates, 0, t), *hn = gf_select(b->hn, 0, t);
        gf_tensor *r = cols(a, 0, H), *z = cols(a, 1, H), *n = cols(a, 2, H);
        gf_tensor *d = gf_mul(a, a); /* s (1 - s) for r and z */
        bool ok = put(gf__sub_into(d, a, d), d);
        gf_tensor *w1 = ok ? gf_sub(hp, n) : NULL, *dpz = cols(dp, 1, H); /* dz = dh (h - n) */
        ok = ok && put(gf__mul_into(dpz, dh, w1), dpz) &&
             put(gf__mul_into(dpz, dpz, cols(d, 1, H)), dpz);
        gf_tensor *dhz = ok ? gf_mul(dh, z) : NULL, *dn = dhz ? gf_sub(dh, dhz) : NULL;
        gf_tensor *n2 = dn ? gf_mul(n, n) : NULL; /* dn (1 - n^2) */
        ok = ok && put(gf__sub_into(n2, one, n2), n2) && put(gf__mul_into(n2, n2, dn), n2) &&
             copy_to(cols(dp, 2, H), n2);
        gf_tensor *dpr = cols(dp, 0, H); /* dr = dpn hn */
        ok = ok && put(gf__mul_into(dpr, n2, hn), dpr) &&
             put(gf__mul_into(dpr, dpr, cols(d, 0, H)), dpr) &&
             copy_to(gf_narrow(dq, 1, 0, 2 * H), gf_narrow(dp, 1, 0, 2 * H));
        gf_tensor *dqn = cols(dq, 2, H);
        ok = ok && put(gf__mul_into(dqn, n2, r), dqn);
        gf_tensor *dhp = ok ? gf_matmul(dq, w) : NULL;
        return put(gf__add_into(dhp, dhp, dhz), dhp) ? dhp : NULL;
    }
    default: {
        gf_tensor *hy = gf_select(b->hs, 0, next_slot(c->reverse, t)), *dd;
        bool ok;
        if (c->mode == GF_RNN_RELU) {
            dd = gf_sign(hy); /* relu'(0) = 0 */
            ok = put(gf__mul_into(dp, dh, dd), dp);
        } else {
            dd = gf_mul(hy, hy);
            ok = put(gf__sub_into(dd, one, dd), dd) && put(gf__mul_into(dp, dh, dd), dp);
        }
        return ok ? gf_matmul(dp, w) : NULL;
    }
    }
}

/* An LSTM step's pointwise part as one LSTM_CELL_BACKWARD launch (the
 * formula of backward_step's LSTM case, operation for operation): writes
 * dp, sets *dc_prev and returns GF_OK; GF_ERR_UNSUPPORTED when the device
 * refuses the launch (the caller composes), or another error. dy: the
 * step's output gradient, added onto dh inside. In the caller's scope. */
static gf_status cell_launch(const seq_ctx *c, const seq_bufs *b, gf_tensor *dh, gf_tensor *dc,
                             gf_tensor *dy, gf_tensor *dp, int64_t t, gf_tensor **dc_prev) {
    const gf_tensor *in[6] = {gf_select(b->gates, 0, t),
                              gf_select(b->cs, 0, prev_slot(c->reverse, t)),
                              gf_select(b->tc, 0, t), dh, dc, dy};
    for (int i = 0; i < 6; i++)
        if (!in[i]) return gf__status();
    gf_tensor *out[2] = {dp, gf_empty(dh->sizes, dh->rank, dh->dtype, dh->storage->device)};
    if (!out[1]) return gf__status();
    gf_status s = gf__launch_own(GFP_OP_LSTM_CELL_BACKWARD, "lstm_cell_backward", in, 6, out, 2,
                                 NULL);
    if (s == GF_OK) *dc_prev = out[1];
    return s;
}

/* Whether the device runs LSTM_CELL_BACKWARD on the step tensors (asked
 * once, with step 0's: every step's have the same layout), unless
 * GRAFT_LSTM_CELL=composed asks for the composed step (read at each
 * backward; the two give the same bits, test_module_rnn_fused checks it).
 * In the caller's scope. */
static bool cell_op_fits(const seq_bufs *b, const gf_tensor *dh, const gf_tensor *dc,
                         const gf_tensor *dy_all, gf_tensor *dp) {
    if (!cell_wanted()) return false;
    const gf_tensor *in[6] = {gf_select(b->gates, 0, 0), gf_select(b->cs, 0, 0),
                              gf_select(b->tc, 0, 0), dh, dc, gf_select(dy_all, 0, 0)};
    gf_tensor *out[2] = {gf_select(dp, 0, 0), (gf_tensor *)dh};
    for (int i = 0; i < 6; i++)
        if (!in[i] || in[i]->dtype != dh->dtype) return false;
    return out[0] && gf__dev_has_op(GFP_OP_LSTM_CELL_BACKWARD, in, 6, out, 2);
}

/* Unpacks the saved buffers into b (new references). */
static gf_status unpack_bufs(gf_node *n, seq_bufs *b) {
    gf_tensor **slots[5] = {&b->gates, &b->hs, &b->cs, &b->tc, &b->hn};
    gf_status s = GF_OK;
    for (int i = 0; s == GF_OK && i < 5; i++) s = gf__ag_unpack(n, SV_GATES + i, slots[i]);
    return s;
}

static void release_bufs(seq_bufs *b) {
    gf_tensor *ts[5] = {b->gates, b->hs, b->cs, b->tc, b->hn};
    for (int i = 0; i < 5; i++) gf_tensor_release(ts[i]);
}

/* create_graph: the layer recomputed composed from the saved inputs (with
 * their history), differentiated with gf_grad so that the gradients carry
 * a graph of their own. */
static gf_status backward_composed(gf_node *n, gf_tensor *const *grads, gf_tensor **out) {
    const seq_ctx *c = GF_NODE_CTX(n, seq_ctx);
    gf_tensor *in[IN_COUNT] = {NULL};
    gf_status s = GF_OK;
    /* recorded (the saved inputs unpacked with their history) even where
     * backward runs without create_graph: an incoming tangent brought it */
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_GRAD);
    for (int i = 0; s == GF_OK && i < IN_COUNT; i++) s = gf__ag_unpack(n, i, &in[i]);
    if (s == GF_OK) {
        gf_scope_begin();
        gf_tensor *y = NULL, *h_n = NULL, *c_n = NULL;
        bool lstm = c->mode == GF_RNN_LSTM;
        s = gf__rnn_seq_composed(c->mode, in[IN_PROJ], in[IN_BX], in[IN_WHH], in[IN_BHH],
                                 in[IN_H0], in[IN_C0], c->reverse, &y, &h_n, lstm ? &c_n : NULL);
        gf_tensor *outs[3] = {y, h_n, c_n}, *wrt[IN_COUNT], *res[IN_COUNT] = {NULL};
        int idx[IN_COUNT], m = 0;
        for (int i = 0; i < IN_COUNT; i++)
            if (n->next[i].node && in[i]) wrt[m] = in[i], idx[m++] = i;
        gf_grad_opts o = {.retain_graph = 1, .create_graph = true, .allow_unused = true};
        if (s == GF_OK && m)
            s = gf_grad(outs, lstm ? 3 : 2, (gf_tensor *const *)grads, wrt, m, res, &o);
        for (int j = 0; s == GF_OK && j < m; j++)
            out[idx[j]] = res[j] ? gf_scope_keep(res[j]) : NULL;
        gf_scope_end();
    }
    gf_grad_mode_set(prev);
    for (int i = 0; i < IN_COUNT; i++) gf_tensor_release(in[i]);
    return s;
}

static gf_status seq_backward(gf_node *n, gf_tensor *const *grads, gf_tensor **out) {
    /* Composed also when an incoming gradient carries a tangent (a vjp
     * whose cotangent is dual, as gf_jacrev's batched passes make): the
     * steps below write through kernels that carry no tangent. */
    if (gf__ag_grad_enabled() ||
        gf__fw_any_tangent((const gf_tensor *const *)grads, n->n_outputs))
        return backward_composed(n, grads, out);
    const seq_ctx *c = GF_NODE_CTX(n, seq_ctx);
    seq_bufs b = {0};
    gf_tensor *w = NULL;
    gf_status s = gf__ag_unpack(n, IN_WHH, &w);
    if (s == GF_OK) s = unpack_bufs(n, &b);
    if (s != GF_OK) {
        gf_tensor_release(w);
        release_bufs(&b);
        return s;
    }
    int64_t T = c->t_len, N = gf_tensor_size(b.hs, 1), H = c->hs, G = gf_tensor_size(w, 0);
    bool lstm = c->mode == GF_RNN_LSTM, gru = c->mode == GF_RNN_GRU;
    gf_scope_begin();
    const int64_t gs[3] = {T, N, G};
    gf_tensor *dp = gf_empty(gs, 3, w->dtype, w->storage->device);
    gf_tensor *dq = gru ? gf_empty(gs, 3, w->dtype, w->storage->device) : NULL;
    gf_tensor *one = gf__ret(gf__scalar(1.0, w->dtype, w->storage->device));
    /* the carried gradients: owned here, outside the steps' scopes */
    gf_tensor *dh = gf_tensor_retain(grads[1]), *dc = lstm ? gf_tensor_retain(grads[2]) : NULL;
    bool ok = dp && (!gru || dq) && one;
    /* an LSTM's pointwise step in one launch where the device has it */
    /* (y's gradient dense: where the loss does not use y it is an expanded
     * zero, whose strided steps would send the kernel to a slow path) */
    gf_tensor *dy_all = ok && lstm ? gf_contiguous(grads[0]) : grads[0];
    bool cell = ok && lstm && T > 0 && dh && dc && dy_all &&
                cell_op_fits(&b, dh, dc, dy_all, dp);
    for (int64_t k = T - 1; ok && k >= 0; k--) {
        int64_t t = c->reverse ? T - 1 - k : k;
        gf_scope_begin();
        gf_tensor *dcp = NULL, *dhp = NULL, *dpt = gf_select(dp, 0, t);
        if (cell) {
            gf_status cs = cell_launch(c, &b, dh, dc, gf_select(dy_all, 0, t), dpt, t, &dcp);
            cell = cs == GF_OK;
            if (cell) dhp = gf_matmul(dpt, w);
            else if (cs != GF_ERR_UNSUPPORTED) ok = false;
        }
        if (ok && !cell) {
            gf_tensor *dhs = gf_add(dh, gf_select(grads[0], 0, t));
            dhp = dhs ? backward_step(c, &b, w, one, dhs, dc, dpt,
                                      gru ? gf_select(dq, 0, t) : NULL, t, &dcp)
                      : NULL;
        }
        ok = ok && dhp && (!lstm || dcp);
        gf_tensor_release(dh), gf_tensor_release(dc);
        dh = ok ? gf_scope_keep(dhp) : NULL;
        dc = ok && lstm ? gf_scope_keep(dcp) : NULL;
        gf_scope_end();
    }
    gf_tensor *q = gru ? dq : dp;
    if (ok && n->next[IN_WHH].node) {
        /* W_hh's gradient, one GEMM over every step: dG^T @ H_prev */
        gf_tensor *hprev = gf_narrow(b.hs, 0, c->reverse ? 1 : 0, T);
        gf_tensor *q2 = gf_reshape(q, (const int64_t[]){T * N, G}, 2);
        gf_tensor *h2 = gf_reshape(hprev, (const int64_t[]){T * N, H}, 2);
        out[IN_WHH] = gf_scope_keep(gf_matmul(gf_transpose(q2, 0, 1), h2));
        ok = out[IN_WHH] != NULL;
    }
    if (ok && gru && n->next[IN_BHH].node) {
        out[IN_BHH] = gf_scope_keep(gf_sum(q, (const int[]){0, 1}, 2, false));
        ok = out[IN_BHH] != NULL;
    }
    if (ok && n->next[IN_BX].node) {
        out[IN_BX] = gf_scope_keep(gf_sum(dp, (const int[]){0, 1}, 2, false));
        ok = out[IN_BX] != NULL;
    }
    if (ok && n->next[IN_PROJ].node) out[IN_PROJ] = gf_scope_keep(dp);
    gf_scope_end();
    if (ok && n->next[IN_H0].node) out[IN_H0] = gf_tensor_retain(dh);
    if (ok && lstm && n->next[IN_C0].node) out[IN_C0] = gf_tensor_retain(dc);
    gf_tensor_release(dh), gf_tensor_release(dc), gf_tensor_release(w);
    release_bufs(&b);
    if (ok) return GF_OK;
    for (int i = 0; i < IN_COUNT; i++) gf_tensor_release(out[i]), out[i] = NULL;
    return gf__status() != GF_OK ? gf__status()
                                 : gf__error(GF_ERR_AUTOGRAD, "%s: backward failed", n->name);
}

/* ------------------------------------------------------------ entry */
static bool fused_fits(const gf_tensor *const *in) {
    const gf_tensor *p = in[IN_PROJ];
    if (gf__amp_live || p->rank != 3 || p->sizes[0] < 1 || !gf_dtype_is_float(p->dtype))
        return false;
    for (int i = 1; i < IN_COUNT; i++)
        if (in[i] && (in[i]->dtype != p->dtype || in[i]->storage->device != p->storage->device))
            return false;
    return !(gf__fw_enabled() && gf__fw_any_tangent(in, IN_COUNT));
}

static const char *node_name(gf_rnn_mode m) {
    return m == GF_RNN_LSTM ? "LSTMSequenceBackward"
         : m == GF_RNN_GRU  ? "GRUSequenceBackward" : "RNNSequenceBackward";
}

gf_status gf__rnn_seq(gf_rnn_mode mode, const gf_tensor *proj, const gf_tensor *b_x,
                      const gf_tensor *w_hh, const gf_tensor *b_hh, const gf_tensor *h0,
                      const gf_tensor *c0, bool reverse, gf_tensor **y, gf_tensor **h_n,
                      gf_tensor **c_n) {
    const gf_tensor *in[IN_COUNT] = {proj, b_x, w_hh, b_hh, h0, c0};
    if (!fused_fits(in))
        return gf__rnn_seq_composed(mode, proj, b_x, w_hh, b_hh, h0, c0, reverse, y, h_n, c_n);
    *y = *h_n = NULL;
    if (c_n) *c_n = NULL;
    bool lstm = mode == GF_RNN_LSTM;
    seq_ctx c = {mode, reverse, proj->sizes[0], gf_tensor_size(w_hh, 1)};
    seq_bufs b = {0};
    int64_t last = next_slot(reverse, reverse ? 0 : c.t_len - 1);
    gf_grad_mode prev = gf_grad_mode_get();
    if (prev == GF_GRAD_MODE_GRAD) gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    gf_scope_begin();
    bool ok = forward_run(&c, &b, proj, b_x, w_hh, b_hh, h0, c0);
    gf_tensor *outs[3] = {NULL, NULL, NULL};
    if (ok) {
        /* y apart from the saved states: the caller may write into it */
        outs[0] = gf_scope_keep(gf_clone(gf_narrow(b.hs, 0, reverse ? 0 : 1, c.t_len)));
        outs[1] = gf_scope_keep(gf_clone(gf_select(b.hs, 0, last)));
        if (lstm) outs[2] = gf_scope_keep(gf_clone(gf_select(b.cs, 0, last)));
        ok = outs[0] && outs[1] && (!lstm || outs[2]);
    }
    gf_tensor *bufs[5] = {b.gates, b.hs, b.cs, b.tc, b.hn};
    for (int i = 0; ok && i < 5; i++) gf_tensor_retain(bufs[i]); /* past the scope */
    gf_scope_end();
    if (prev == GF_GRAD_MODE_GRAD) gf_grad_mode_set(prev);
    gf_status s = ok ? GF_OK : gf__status();
    if (ok) {
        gf_node *n = gf__ag_record(node_name(mode), seq_backward, in, IN_COUNT, outs, lstm ? 3 : 2);
        if (n) {
            *GF_NODE_CTX(n, seq_ctx) = c;
            for (int i = 0; s == GF_OK && i < IN_COUNT; i++) s = gf__ag_save(n, i, in[i], false);
            for (int i = 0; s == GF_OK && i < 5; i++) s = gf__ag_save(n, SV_GATES + i, bufs[i], false);
        }
        for (int i = 0; i < 5; i++) gf_tensor_release(bufs[i]);
    }
    if (s != GF_OK) {
        for (int i = 0; i < 3; i++) gf_tensor_release(outs[i]);
        return s;
    }
    *y = gf__ret(outs[0]);
    *h_n = gf__ret(outs[1]);
    if (c_n) *c_n = gf__ret(outs[2]);
    return GF_OK;
}
