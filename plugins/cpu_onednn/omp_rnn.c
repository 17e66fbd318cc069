/* SPDX-License-Identifier: BSD-3-Clause */
/* omp_rnn.c — LSTM_CELL and LSTM_CELL_BACKWARD.
 *
 * LSTM_CELL: the step's pointwise work in one launch where the composed
 * step makes ten: vectorised row loops for the sums and products, and for
 * the activations this plugin's own SIGMOID and TANH launches on the
 * tensors the composed step gives them (sigmoid on the whole contiguous
 * [N, 4H] block, tanh on a contiguous [N, H] copy of the g block and on c),
 * so that the results are the composed step's bit for bit.
 *
 * LSTM_CELL_BACKWARD as one vectorised pass: per element, read
 * the four gate activations, c_prev, tanh(c), dh, dc (and dy) and write the
 * four gate gradients and dc_prev once, where the composed step makes 18
 * launches over [N, H] and [N, 4H] views (measured: they took ~40 us of
 * each step of a [32, 256] LSTM's backward, 5 ms of a 2-layer, 64-step
 * training step).
 *
 * The arithmetic is the reference's (ref_rnn.c), operation for operation,
 * in the tensors' dtype; ISO C mode contracts no multiply-add, so the
 * results are the reference's bit for bit. Taken: every tensor's rows
 * unit-stride (any row stride: the core passes slices of [T, N, H]
 * buffers and column blocks), outputs in buffers no input uses; anything
 * else goes to the reference. */
#include <omp.h>

#include "onednn_internal.h"

enum { A_ACT, A_CP, A_TC, A_DH, A_DC, A_DY, A_IN };
enum { O_DG, O_DCP, O_OUT };

/* Outputs and inputs never share a buffer here (launch checks it), which is
 * what ivdep asserts: the loops vectorise without overlap checks. */
#if defined(__GNUC__) && !defined(__clang__)
#define CELL_IVDEP _Pragma("GCC ivdep")
#else
#define CELL_IVDEP
#endif

/* One row of H elements: p[k] points at the row of input k, y[k] of output
 * k (act and dgates: the row's first block; the others at H, 2H, 3H). */
#define CELL_ROW(NAME, T)                                                                 \
    ODN_CLONES static void NAME(const T *act, const T *cp, const T *tc, const T *dhin,     \
                                const T *dc, const T *dy, T *dg, T *dcp, int64_t H) {     \
        CELL_IVDEP                                                                        \
        for (int64_t j = 0; j < H; j++) {                                                 \
            T i = act[j], f = act[j + H], g = act[j + 2 * H], o = act[j + 3 * H];         \
            T dh = dy ? dhin[j] + dy[j] : dhin[j];                                        \
            T u = dh * o;                                                                 \
            T q = tc[j] * tc[j];                                                          \
            q = (T)1 - q;                                                                 \
            u = u * q;                                                                    \
            u = u + dc[j];                                                                \
            T di = i * i, df = f * f, dgg = g * g, dO = o * o;                            \
            di = i - di, df = f - df, dgg = (T)1 - dgg, dO = o - dO;                      \
            T gi = u * g, gf = u * cp[j], gg = u * i, go = dh * tc[j];                    \
            dg[j] = gi * di;                                                              \
            dg[j + H] = gf * df;                                                          \
            dg[j + 2 * H] = gg * dgg;                                                     \
            dg[j + 3 * H] = go * dO;                                                      \
            dcp[j] = u * f;                                                               \
        }                                                                                 \
    }
CELL_ROW(cell_row_f32, float)
CELL_ROW(cell_row_f64, double)
#undef CELL_ROW

/* Rank 2, [N, w], unit-stride rows. */
static bool rows_ok(const gfp_tensor *t, int32_t dt, int64_t n, int64_t w) {
    return t->dtype == dt && t->rank == 2 && t->sizes[0] == n && t->sizes[1] == w &&
           (t->strides[1] == 1 || w == 1) && (t->strides[0] >= w || n == 1);
}

static gfp_status cell_backward(const gfp_tensor *const *in, uint32_t n_in,
                                const gfp_tensor *const *out, uint32_t n_out) {
    if (n_in < 5 || n_in > 6 || n_out != 2) return ODN_FALLBACK;
    for (uint32_t i = 0; i < 5; i++)
        if (!in[i]) return ODN_FALLBACK;
    if (!out[O_DG] || !out[O_DCP]) return ODN_FALLBACK;
    const gfp_tensor *act = in[A_ACT];
    int32_t dt = act->dtype;
    if ((dt != GFP_F32 && dt != GFP_F64) || act->rank != 2 || act->sizes[1] % 4 != 0)
        return ODN_FALLBACK;
    int64_t N = act->sizes[0], H = act->sizes[1] / 4;
    const gfp_tensor *dy = n_in == 6 ? in[A_DY] : NULL;
    const gfp_tensor *ts[A_IN + O_OUT] = {act, in[A_CP], in[A_TC], in[A_DH], in[A_DC], dy,
                                          out[O_DG], out[O_DCP]};
    for (int k = 0; k < A_IN + O_OUT; k++) {
        if (!ts[k]) continue;
        int64_t w = (k == A_ACT || k == A_IN + O_DG) ? 4 * H : H;
        if (!rows_ok(ts[k], dt, N, w)) return ODN_FALLBACK;
    }
    for (int o = A_IN; o < A_IN + O_OUT; o++)
        for (int k = 0; k < A_IN + O_OUT; k++)
            if (k != o && ts[k] && ts[k]->buffer == ts[o]->buffer) return ODN_FALLBACK;
    if (N == 0 || H == 0) return GFP_OK;
    size_t es = pk_dtype_size(dt);
    char *base[A_IN + O_OUT];
    int64_t rs[A_IN + O_OUT]; /* row strides in bytes */
    for (int k = 0; k < A_IN + O_OUT; k++) {
        base[k] = ts[k] ? (char *)ts[k]->buffer + ts[k]->offset : NULL;
        rs[k] = ts[k] ? ts[k]->strides[0] * (int64_t)es : 0;
    }
    /* about twenty operations an element: weigh it as a few copies */
    int nt = odn_threads(N * H * 8);
    ODN_PARALLEL(nt, t, tn, {
        int64_t lo = N * t / tn, hi = N * (t + 1) / tn;
        for (int64_t n = lo; n < hi; n++) {
            char *p[A_IN + O_OUT];
            for (int k = 0; k < A_IN + O_OUT; k++) p[k] = base[k] ? base[k] + n * rs[k] : NULL;
            if (dt == GFP_F32)
                cell_row_f32((const float *)p[0], (const float *)p[1], (const float *)p[2],
                             (const float *)p[3], (const float *)p[4], (const float *)p[5],
                             (float *)p[6], (float *)p[7], H);
            else
                cell_row_f64((const double *)p[0], (const double *)p[1], (const double *)p[2],
                             (const double *)p[3], (const double *)p[4], (const double *)p[5],
                             (double *)p[6], (double *)p[7], H);
        }
    });
    return GFP_OK;
}

/* ------------------------------------------------------------ LSTM_CELL */
/* Row loops between the activations, one rounding per operation: ADD y =
 * a + b, COPY y = a, FMA2 y = (a * b) + (c * d), MUL y = a * b. Each
 * pointer is its row's first element. */
enum { K_ADD, K_COPY, K_FMA2, K_MUL };
#define FW_ROW(NAME, T)                                                                   \
    ODN_CLONES static void NAME(int kind, T *y, const T *a, const T *b, const T *c,        \
                                const T *d, int64_t w) {                                  \
        switch (kind) {                                                                   \
        case K_ADD:                                                                       \
            CELL_IVDEP for (int64_t j = 0; j < w; j++) y[j] = a[j] + b[j];                \
            break;                                                                        \
        case K_COPY:                                                                      \
            CELL_IVDEP for (int64_t j = 0; j < w; j++) y[j] = a[j];                       \
            break;                                                                        \
        case K_FMA2:                                                                      \
            CELL_IVDEP for (int64_t j = 0; j < w; j++) {                                  \
                T ab = a[j] * b[j], cd = c[j] * d[j];                                     \
                y[j] = ab + cd;                                                           \
            }                                                                             \
            break;                                                                        \
        default:                                                                          \
            CELL_IVDEP for (int64_t j = 0; j < w; j++) y[j] = a[j] * b[j];                \
            break;                                                                        \
        }                                                                                 \
    }
FW_ROW(fw_row_f32, float)
FW_ROW(fw_row_f64, double)
#undef FW_ROW

/* A rank-2 operand of a row loop: its first element and row stride, in
 * bytes; col: the column block's start (elements). */
typedef struct rowt {
    char *p;
    int64_t rs;
} rowt;

static rowt row_of(const gfp_tensor *t, int64_t col, size_t es) {
    rowt r = {(char *)t->buffer + t->offset + (size_t)col * es, t->strides[0] * (int64_t)es};
    return r;
}

/* kind over N rows of w elements; b, c, d may be unused (p NULL). */
static void fw_rows(int kind, int32_t dt, int64_t N, int64_t w, rowt y, rowt a, rowt b, rowt c,
                    rowt d) {
    int nt = odn_threads(N * w);
    ODN_PARALLEL(nt, t, tn, {
        int64_t lo = N * t / tn, hi = N * (t + 1) / tn;
        for (int64_t n = lo; n < hi; n++) {
            char *py = y.p + n * y.rs, *pa = a.p + n * a.rs;
            char *pb = b.p ? b.p + n * b.rs : NULL, *pc = c.p ? c.p + n * c.rs : NULL;
            char *pd = d.p ? d.p + n * d.rs : NULL;
            if (dt == GFP_F32)
                fw_row_f32(kind, (float *)py, (const float *)pa, (const float *)pb,
                           (const float *)pc, (const float *)pd, w);
            else
                fw_row_f64(kind, (double *)py, (const double *)pa, (const double *)pb,
                           (const double *)pc, (const double *)pd, w);
        }
    });
}

/* This plugin's unary kernel, routed as a launch of the op would be: the
 * accelerated one, else the reference. */
static gfp_status unary(uint32_t op, const gfp_tensor *x, const gfp_tensor *y) {
    const gfp_tensor *in[1] = {x}, *out[1] = {y};
    gfp_status st = odn_elementwise_launch(op, in, 1, out, 1, NULL);
    return st == ODN_FALLBACK ? ref_elementwise_launch(op, in, 1, out, 1, NULL) : st;
}

/* The byte range t covers in its buffer (rank 2, strides >= 0). */
static bool overlaps(const gfp_tensor *a, const gfp_tensor *b) {
    if (a->buffer != b->buffer) return false;
    size_t es = pk_dtype_size(a->dtype);
    uint64_t a0 = a->offset, b0 = b->offset;
    uint64_t a1 = a0 + (uint64_t)(((a->sizes[0] - 1) * a->strides[0] +
                                   (a->sizes[1] - 1) * a->strides[1]) + 1) * es;
    uint64_t b1 = b0 + (uint64_t)(((b->sizes[0] - 1) * b->strides[0] +
                                   (b->sizes[1] - 1) * b->strides[1]) + 1) * es;
    return a0 < b1 && b0 < a1;
}

enum { F_MM, F_P, F_CP, F_IN };
enum { F_ACT, F_C, F_TC, F_H, F_OUT };

static gfp_status cell_forward(const gfp_tensor *const *in, uint32_t n_in,
                               const gfp_tensor *const *out, uint32_t n_out) {
    if (n_in != F_IN || n_out != F_OUT) return ODN_FALLBACK;
    const gfp_tensor *ts[F_IN + F_OUT];
    for (int k = 0; k < F_IN + F_OUT; k++) {
        ts[k] = k < F_IN ? in[k] : out[k - F_IN];
        if (!ts[k]) return ODN_FALLBACK;
    }
    const gfp_tensor *mm = in[F_MM];
    int32_t dt = mm->dtype;
    if ((dt != GFP_F32 && dt != GFP_F64) || mm->rank != 2 || mm->sizes[1] % 4 != 0)
        return ODN_FALLBACK;
    int64_t N = mm->sizes[0], H = mm->sizes[1] / 4;
    for (int k = 0; k < F_IN + F_OUT; k++) {
        int64_t w = (k == F_MM || k == F_P || k == F_IN + F_ACT) ? 4 * H : H;
        if (!rows_ok(ts[k], dt, N, w)) return ODN_FALLBACK;
    }
    /* the activations run on contiguous tensors, as in the composed step */
    const gfp_tensor *act = out[F_ACT], *c = out[F_C], *tc = out[F_TC], *h = out[F_H];
    if (!pk_is_contiguous(act) || !pk_is_contiguous(c) || !pk_is_contiguous(tc))
        return ODN_FALLBACK;
    if (N == 0 || H == 0) return GFP_OK;
    for (int o = F_IN; o < F_IN + F_OUT; o++)
        for (int k = 0; k < F_IN + F_OUT; k++)
            if (k != o && overlaps(ts[k], ts[o])) return ODN_FALLBACK;
    size_t es = pk_dtype_size(dt);
    rowt none = {NULL, 0};
    rowt ra = row_of(act, 0, es), rtc = row_of(tc, 0, es), rc = row_of(c, 0, es);
    rowt ri = ra, rf = row_of(act, H, es), rg = row_of(act, 2 * H, es), ro = row_of(act, 3 * H, es);
    /* z = mm + p into act; the g block copied into tc and tanh'd there;
     * sigmoid over all of act; the g block back; c, tanh(c), h */
    fw_rows(K_ADD, dt, N, 4 * H, ra, row_of(mm, 0, es), row_of(in[F_P], 0, es), none, none);
    fw_rows(K_COPY, dt, N, H, rtc, rg, none, none, none);
    gfp_status st = unary(GFP_OP_TANH, tc, tc);
    if (st == GFP_OK) st = unary(GFP_OP_SIGMOID, act, act);
    if (st != GFP_OK) return st;
    fw_rows(K_COPY, dt, N, H, rg, rtc, none, none, none);
    fw_rows(K_FMA2, dt, N, H, rc, rf, row_of(in[F_CP], 0, es), ri, rg);
    st = unary(GFP_OP_TANH, c, tc);
    if (st == GFP_OK) fw_rows(K_MUL, dt, N, H, row_of(h, 0, es), ro, rtc, none, none);
    return st;
}

/* ------------------------------------------------------------ launch */
gfp_status odn_rnn_launch(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                          const gfp_tensor *const *out, uint32_t n_out, const void *params) {
    (void)params;
    if (op == GFP_OP_LSTM_CELL_BACKWARD) return cell_backward(in, n_in, out, n_out);
    if (op == GFP_OP_LSTM_CELL) return cell_forward(in, n_in, out, n_out);
    return ODN_FALLBACK;
}
