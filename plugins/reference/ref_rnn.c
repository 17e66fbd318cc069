/* SPDX-License-Identifier: BSD-3-Clause */
/* ref_rnn.c — LSTM_CELL and LSTM_CELL_BACKWARD (f32, f64, any strides): the
 * pointwise parts of one LSTM step and of its backward.
 *
 * As ref_optim.c, these kernels compute in the tensors' own dtype, one
 * rounding per operation in the order graft_ops.def gives: the ops'
 * contract is to equal the composed elementwise ops they replace, so the
 * oracle is that composition written out element by element, with this
 * plugin's own SIGMOID and TANH kernels for the activations. The
 * cpu_onednn plugin serves both with vectorised loops of the same
 * arithmetic (omp_rnn.c). */
#include <stddef.h>

#include "ref_internal.h"

/* The inputs and outputs in the op's order. */
enum { A_ACT, A_CP, A_TC, A_DH, A_DC, A_DY, A_IN };
enum { O_DG, O_DCP, O_OUT };

uint32_t ref_rnn_support(const gfp_op_query *q) {
    bool bw = q->op == GFP_OP_LSTM_CELL_BACKWARD, fw = q->op == GFP_OP_LSTM_CELL;
    if (bw && (q->n_inputs < 5 || q->n_inputs > 6 || q->n_outputs != 2)) return GFP_SUPPORT_NONE;
    if (fw && (q->n_inputs != 3 || q->n_outputs != 4)) return GFP_SUPPORT_NONE;
    if (!bw && !fw) return GFP_SUPPORT_NONE;
    int32_t dt = q->input_dtypes[0];
    if (dt != GFP_F32 && dt != GFP_F64) return GFP_SUPPORT_NONE;
    for (uint32_t i = 0; i < q->n_inputs; i++)
        if (q->input_dtypes[i] != dt && !(bw && i == A_DY && q->input_dtypes[i] < 0))
            return GFP_SUPPORT_NONE;
    for (uint32_t i = 0; i < q->n_outputs; i++)
        if (q->output_dtypes[i] != dt) return GFP_SUPPORT_NONE;
    return GFP_SUPPORT_STRIDED;
}

/* Element (n, j) of a rank-2 tensor, in bytes from its base. */
#define AT(t, n, j) (((n) * (t)->strides[0] + (j) * (t)->strides[1]) * (int64_t)sizeof(T))
#define LD(k, n, j) (*(const T *)(b[k] + AT(in[k], n, j)))

/* One element (n, j) of the formula: every step rounds to T, no wider
 * intermediate, no fused multiply-add (ISO C mode: the compiler contracts
 * nothing). */
#define CELL_ELEMENT(T)                                                                  \
    do {                                                                                 \
        T i = LD(A_ACT, n, j), f = LD(A_ACT, n, j + H), g = LD(A_ACT, n, j + 2 * H);     \
        T o = LD(A_ACT, n, j + 3 * H);                                                   \
        T cp = LD(A_CP, n, j), tc = LD(A_TC, n, j), dh = LD(A_DH, n, j);                 \
        T dc = LD(A_DC, n, j);                                                           \
        if (has_dy) dh = dh + LD(A_DY, n, j);                                            \
        T u = dh * o;                                                                    \
        T q = tc * tc;                                                                   \
        q = (T)1 - q;                                                                    \
        u = u * q;                                                                       \
        u = u + dc;                                                                      \
        T di = i * i, df = f * f, dg = g * g, dO = o * o;                                \
        di = i - di, df = f - df, dg = (T)1 - dg, dO = o - dO;                           \
        T gi = u * g, gf = u * cp, gg = u * i, go = dh * tc;                             \
        gi = gi * di, gf = gf * df, gg = gg * dg, go = go * dO;                          \
        char *y = yb[O_DG];                                                              \
        *(T *)(y + AT(out[O_DG], n, j)) = gi;                                            \
        *(T *)(y + AT(out[O_DG], n, j + H)) = gf;                                        \
        *(T *)(y + AT(out[O_DG], n, j + 2 * H)) = gg;                                    \
        *(T *)(y + AT(out[O_DG], n, j + 3 * H)) = go;                                    \
        *(T *)(yb[O_DCP] + AT(out[O_DCP], n, j)) = u * f;                                \
    } while (0)

static void cell_f32(const gfp_tensor *const *in, const gfp_tensor *const *out,
                     char *const *b, char *const *yb, bool has_dy, int64_t N, int64_t H) {
    typedef float T;
    for (int64_t n = 0; n < N; n++)
        for (int64_t j = 0; j < H; j++) CELL_ELEMENT(T);
}

static void cell_f64(const gfp_tensor *const *in, const gfp_tensor *const *out,
                     char *const *b, char *const *yb, bool has_dy, int64_t N, int64_t H) {
    typedef double T;
    for (int64_t n = 0; n < N; n++)
        for (int64_t j = 0; j < H; j++) CELL_ELEMENT(T);
}
#undef CELL_ELEMENT
#undef LD
#undef AT

/* ------------------------------------------------------------ LSTM_CELL */
enum { F_MM, F_P, F_CP, F_IN };
enum { F_ACT, F_C, F_TC, F_H, F_OUT };

/* Column block k (of width h) of a [N, 4H] tensor. */
static gfp_tensor block_of(const gfp_tensor *t, int k, int64_t h) {
    gfp_tensor v = *t;
    v.sizes[1] = h;
    v.offset += (uint64_t)(k * h * t->strides[1]) * pk_dtype_size(t->dtype);
    return v;
}

/* The pointwise steps between the activations, one rounding each: 0: y =
 * a + b; 1: y = a (a copy); 2: y = (a * b) + (c * d); 3: y = a * b. */
#define FW_LOOP(T, KIND)                                                                     for (int64_t n = 0; n < N; n++)                                                              for (int64_t j = 0; j < W; j++) {                                                            T a = *(const T *)(ba + AT(ta, n, j));                                                   T r = a;                                                                                 if (KIND == 0 || KIND == 3) {                                                                T b2 = *(const T *)(bb + AT(tb, n, j));                                                  r = KIND == 0 ? a + b2 : a * b2;                                                     } else if (KIND == 2) {                                                                      T b2 = *(const T *)(bb + AT(tb, n, j));                                                  T c2 = *(const T *)(bc + AT(tc, n, j));                                                  T d2 = *(const T *)(bd + AT(td, n, j));                                                  T ab = a * b2, cd = c2 * d2;                                                             r = ab + cd;                                                                         }                                                                                        *(T *)(by + AT(ty, n, j)) = r;                                                       }

static void fw_step(int kind, int32_t dt, const gfp_tensor *ty, const gfp_tensor *ta,
                    const gfp_tensor *tb, const gfp_tensor *tc, const gfp_tensor *td) {
    int64_t N = ty->sizes[0], W = ty->sizes[1];
    char *by = ref_base(ty);
    const char *ba = ref_base(ta), *bb = tb ? ref_base(tb) : NULL;
    const char *bc = tc ? ref_base(tc) : NULL, *bd = td ? ref_base(td) : NULL;
#define AT(t, n, j) (((n) * (t)->strides[0] + (j) * (t)->strides[1]) * (int64_t)sizeof(T))
    if (dt == GFP_F32) {
        typedef float T;
        switch (kind) {
        case 0: FW_LOOP(T, 0) break;
        case 1: FW_LOOP(T, 1) break;
        case 2: FW_LOOP(T, 2) break;
        default: FW_LOOP(T, 3) break;
        }
    } else {
        typedef double T;
        switch (kind) {
        case 0: FW_LOOP(T, 0) break;
        case 1: FW_LOOP(T, 1) break;
        case 2: FW_LOOP(T, 2) break;
        default: FW_LOOP(T, 3) break;
        }
    }
#undef AT
}
#undef FW_LOOP

/* This plugin's own unary kernel (SIGMOID, TANH) from x into y. */
static gfp_status unary(uint32_t op, const gfp_tensor *x, const gfp_tensor *y) {
    const gfp_tensor *in[1] = {x}, *out[1] = {y};
    return ref_elementwise_launch(op, in, 1, out, 1, NULL);
}

static gfp_status cell_forward(const gfp_tensor *const *in, uint32_t n_in,
                               const gfp_tensor *const *out, uint32_t n_out) {
    int64_t N, H;
    gfp_status st = pk_check_lstm_cell(in, n_in, out, n_out, &N, &H);
    if (st != GFP_OK || N == 0 || H == 0) return st;
    int32_t dt = in[F_MM]->dtype;
    const gfp_tensor *act = out[F_ACT], *c = out[F_C], *tc = out[F_TC], *h = out[F_H];
    gfp_tensor gi = block_of(act, 0, H), gf = block_of(act, 1, H), gg = block_of(act, 2, H),
               go = block_of(act, 3, H);
    /* z = mm + p into act; tanh of the g block in tc (a contiguous copy
     * first, as the composed step takes it); sigmoid of all of act; the g
     * block back; then c, tanh(c) and h. */
    fw_step(0, dt, act, in[F_MM], in[F_P], NULL, NULL);
    fw_step(1, dt, tc, &gg, NULL, NULL, NULL);
    st = unary(GFP_OP_TANH, tc, tc);
    if (st == GFP_OK) st = unary(GFP_OP_SIGMOID, act, act);
    if (st != GFP_OK) return st;
    fw_step(1, dt, &gg, tc, NULL, NULL, NULL);
    fw_step(2, dt, c, &gf, in[F_CP], &gi, &gg);
    st = unary(GFP_OP_TANH, c, tc);
    if (st == GFP_OK) fw_step(3, dt, h, &go, tc, NULL, NULL);
    return st;
}

/* ------------------------------------------------------------ launch */
gfp_status ref_rnn_launch(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                          const gfp_tensor *const *out, uint32_t n_out, const void *params) {
    (void)params;
    if (op == GFP_OP_LSTM_CELL) return cell_forward(in, n_in, out, n_out);
    if (op != GFP_OP_LSTM_CELL_BACKWARD)
        return pk_fail(GFP_ERR_INTERNAL, "rnn: op %u is not a recurrent cell's", (unsigned)op);
    int64_t N, H;
    bool has_dy;
    gfp_status st = pk_check_lstm_cell_backward(in, n_in, out, n_out, &N, &H, &has_dy);
    if (st != GFP_OK || N == 0 || H == 0) return st;
    int32_t dt = in[A_ACT]->dtype;
    char *b[A_IN] = {NULL}, *yb[O_OUT];
    for (uint32_t i = 0; i < n_in; i++) b[i] = in[i] ? ref_base(in[i]) : NULL;
    for (uint32_t i = 0; i < O_OUT; i++) yb[i] = ref_base(out[i]);
    if (dt == GFP_F32) cell_f32(in, out, b, yb, has_dy, N, H);
    else cell_f64(in, out, b, yb, has_dy, N, H);
    return GFP_OK;
}
