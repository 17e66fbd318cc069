/* SPDX-License-Identifier: BSD-3-Clause */
/* ref_rnn.c — LSTM_CELL_BACKWARD (f32, f64, any strides): the pointwise part
 * of one LSTM step's backward.
 *
 * As ref_optim.c, this kernel computes in the tensors' own dtype, one
 * rounding per operation in the order graft_ops.def gives: the op's
 * contract is to equal the composed elementwise ops it replaces, so the
 * oracle is that composition written out element by element. The
 * cpu_onednn plugin serves it with a vectorised loop of the same
 * arithmetic (omp_rnn.c). */
#include <stddef.h>

#include "ref_internal.h"

/* The inputs and outputs in the op's order. */
enum { A_ACT, A_CP, A_TC, A_DH, A_DC, A_DY, A_IN };
enum { O_DG, O_DCP, O_OUT };

uint32_t ref_rnn_support(const gfp_op_query *q) {
    if (q->op != GFP_OP_LSTM_CELL_BACKWARD || q->n_inputs < 5 || q->n_inputs > 6 ||
        q->n_outputs != 2)
        return GFP_SUPPORT_NONE;
    int32_t dt = q->input_dtypes[0];
    if (dt != GFP_F32 && dt != GFP_F64) return GFP_SUPPORT_NONE;
    for (uint32_t i = 0; i < q->n_inputs; i++)
        if (q->input_dtypes[i] != dt && !(i == A_DY && q->input_dtypes[i] < 0))
            return GFP_SUPPORT_NONE;
    for (uint32_t i = 0; i < 2; i++)
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

static bool sized(const gfp_tensor *t, int64_t n, int64_t h) {
    return t->rank == 2 && t->sizes[0] == n && t->sizes[1] == h;
}

gfp_status ref_rnn_launch(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                          const gfp_tensor *const *out, uint32_t n_out, const void *params) {
    (void)params;
    if (op != GFP_OP_LSTM_CELL_BACKWARD)
        return pk_fail(GFP_ERR_INTERNAL, "rnn: op %u is not a recurrent cell's", (unsigned)op);
    const char *name = pk_op_name(op);
    if (n_in < 5 || n_in > 6 || n_out != 2)
        return pk_fail(GFP_ERR_INVALID, "%s: %u inputs and %u outputs; it takes act, c_prev, "
                       "tc, dh, dc (and dy) and gives dgates, dc_prev", name, (unsigned)n_in,
                       (unsigned)n_out);
    static const char *const in_names[A_IN] = {"act", "c_prev", "tc", "dh", "dc", "dy"};
    static const char *const out_names[O_OUT] = {"dgates", "dc_prev"};
    for (uint32_t i = 0; i < n_in; i++)
        if (!in[i] && i != A_DY)
            return pk_fail(GFP_ERR_INVALID, "%s: input %s is NULL", name, in_names[i]);
    for (uint32_t i = 0; i < n_out; i++)
        if (!out[i]) return pk_fail(GFP_ERR_INVALID, "%s: output %s is NULL", name, out_names[i]);
    const gfp_tensor *act = in[A_ACT];
    int32_t dt = act->dtype;
    if (dt != GFP_F32 && dt != GFP_F64)
        return pk_fail(GFP_ERR_UNSUPPORTED, "%s: dtype %s; the cell takes f32 or f64", name,
                       pk_dtype_name(dt));
    if (act->rank != 2 || act->sizes[1] % 4 != 0)
        return pk_fail(GFP_ERR_INVALID, "%s: act must be [N, 4H] (rank %d given)", name,
                       (int)act->rank);
    int64_t N = act->sizes[0], H = act->sizes[1] / 4;
    bool has_dy = n_in == 6 && in[A_DY];
    for (uint32_t i = 0; i < A_IN + O_OUT; i++) {
        bool is_in = i < A_IN;
        const gfp_tensor *t = is_in ? (i < n_in ? in[i] : NULL) : out[i - A_IN];
        if (!t) continue;
        const char *what = is_in ? in_names[i] : out_names[i - A_IN];
        int64_t w = (i == A_ACT || i == A_IN + O_DG) ? 4 * H : H;
        if (t->dtype != dt)
            return pk_fail(GFP_ERR_INVALID, "%s: %s is %s, act is %s; all must be one dtype",
                           name, what, pk_dtype_name(t->dtype), pk_dtype_name(dt));
        if (!sized(t, N, w))
            return pk_fail(GFP_ERR_INVALID, "%s: %s must be [%lld, %lld] for act [%lld, %lld]",
                           name, what, (long long)N, (long long)w, (long long)N,
                           (long long)(4 * H));
    }
    if (N == 0 || H == 0) return GFP_OK;
    char *b[A_IN] = {NULL}, *yb[O_OUT];
    for (uint32_t i = 0; i < n_in; i++) b[i] = in[i] ? ref_base(in[i]) : NULL;
    for (uint32_t i = 0; i < O_OUT; i++) yb[i] = ref_base(out[i]);
    if (dt == GFP_F32) cell_f32(in, out, b, yb, has_dy, N, H);
    else cell_f64(in, out, b, yb, has_dy, N, H);
    return GFP_OK;
}
