/* SPDX-License-Identifier: BSD-3-Clause */
/* cuda_ops.c — the capability query, launch routing and descriptor checks.
 *
 * Which (op, dtypes) the plugin runs is decided in one place, accepts(), used
 * both by query_op and by launch, so the answer and what launch takes never
 * disagree. The kinds of the elementwise ops come from op_math.def, the table
 * the kernels are generated from. Every kernel honours any strides, so every
 * supported op is GFP_SUPPORT_STRIDED.
 *
 * Before an op family sees a launch, every tensor is checked: struct_size,
 * rank, dtype, sizes and strides, a live buffer of this device, element
 * alignment, and that every element the view reaches lies inside the buffer.
 * A kernel that strayed outside would poison the device's CUDA context for
 * the rest of the process; a message here costs nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"
#include "pk_widen.h"

/* ------------------------------------------------------------ op kinds */
typedef enum op_kind {
    K_NONE,
    K_COPY,
    K_FILL,
    K_ARANGE,
    K_TRI,
    K_UNARY_FLOAT,   /* f32, f64, f16, bf16 */
    K_UNARY_NUMERIC, /* and i32, i64 */
    K_LOGICAL_NOT,
    K_BINARY_FLOAT,
    K_BINARY_NUMERIC,
    K_COMPARE,
    K_LOGICAL,
    K_WHERE,
    K_RANDOM,
    K_REDUCE,
    K_MATMUL,
    K_SOFTMAX,
    K_SOFTMAX_BACKWARD,
    K_NORM_BACKWARD,
    K_LAYER_NORM,
    K_BATCH_NORM,
    K_INDEX,
    K_CONV,
    K_POOL,
    K_FFT,
    K_OPTIM,
    K_RNN
} op_kind;

/* The elementwise math's kinds (plugin_kit.h) as op kinds. */
static op_kind math_kind_of(uint32_t op) {
    bool numeric = pk_ew_numeric(op);
    switch (pk_ew_kind_of(op)) {
    case PK_EW_UNARY: return numeric ? K_UNARY_NUMERIC : K_UNARY_FLOAT;
    case PK_EW_LOGICAL_NOT: return K_LOGICAL_NOT;
    case PK_EW_BINARY: return numeric ? K_BINARY_NUMERIC : K_BINARY_FLOAT;
    case PK_EW_COMPARE: return K_COMPARE;
    case PK_EW_LOGICAL: return K_LOGICAL;
    default: return K_NONE;
    }
}

/* From the op's family (graft_ops.def) and, for the elementwise math, its
 * kind in op_math.def. */
static op_kind kind_of(uint32_t op) {
    switch (gfp_op_family_of(op)) {
    case GFP_FAMILY_COPY: return K_COPY;
    case GFP_FAMILY_CREATE: return op == GFP_OP_FILL ? K_FILL : K_ARANGE;
    case GFP_FAMILY_RANDOM: return K_RANDOM;
    case GFP_FAMILY_TRI: return K_TRI;
    case GFP_FAMILY_UNARY:
    case GFP_FAMILY_BINARY: return math_kind_of(op);
    case GFP_FAMILY_WHERE: return K_WHERE;
    case GFP_FAMILY_REDUCE: return K_REDUCE;
    case GFP_FAMILY_MATMUL: return K_MATMUL;
    case GFP_FAMILY_NORM:
        if (op == GFP_OP_SOFTMAX_BACKWARD || op == GFP_OP_LOG_SOFTMAX_BACKWARD)
            return K_SOFTMAX_BACKWARD;
        if (op == GFP_OP_BATCH_NORM_BACKWARD || op == GFP_OP_LAYER_NORM_BACKWARD)
            return K_NORM_BACKWARD;
        return op == GFP_OP_LAYER_NORM   ? K_LAYER_NORM
               : op == GFP_OP_BATCH_NORM ? K_BATCH_NORM
                                         : K_SOFTMAX;
    case GFP_FAMILY_INDEX: return K_INDEX;
    case GFP_FAMILY_CONV: return K_CONV;
    case GFP_FAMILY_POOL: return K_POOL;
    case GFP_FAMILY_FFT: return K_FFT;
    case GFP_FAMILY_OPTIM: return op == GFP_OP_ADAM_UPDATE ? K_OPTIM : K_NONE;
    case GFP_FAMILY_RNN: return K_RNN;
    default: return K_NONE;
    }
}

/* ------------------------------------------------------------ what is provided */
#define BIT(d) GFP_DTYPE_BIT(d)
#define S_FLOAT (BIT(GFP_F32) | BIT(GFP_F64))
#define S_HALF (BIT(GFP_F16) | BIT(GFP_BF16))
#define S_INT (BIT(GFP_I32) | BIT(GFP_I64))
#define S_ALL (S_FLOAT | S_HALF | S_INT | BIT(GFP_BOOL))
/* The complex dtypes: every op that takes one is decided by
 * accepts_complex, with the rules of plugins/common/pk_complex.c. */
#define S_CX (BIT(GFP_C64) | BIT(GFP_C128))
#define S_STORED (S_ALL | S_CX)

static bool in_set(int32_t d, uint32_t set) {
    return d >= 0 && d < GFP_DTYPE_COUNT && (set & BIT(d)) != 0;
}

/* Every listed dtype equals dt; -1 entries (absent optional inputs) pass
 * when optional is set. */
static bool all_are(const int32_t *d, uint32_t n, int32_t dt, bool optional) {
    for (uint32_t i = 0; i < n; i++)
        if (d[i] != dt && !(optional && d[i] == -1)) return false;
    return true;
}

static bool any_complex(const int32_t *in, uint32_t n_in, const int32_t *out, uint32_t n_out) {
    for (uint32_t i = 0; i < n_in; i++)
        if (in_set(in[i], S_CX)) return true;
    for (uint32_t i = 0; i < n_out; i++)
        if (in_set(out[i], S_CX)) return true;
    return false;
}

/* An op with a complex operand: the reference's complex rules for the
 * elementwise ops, sums and matmul; TRIL/TRIU, WHERE and the index ops move
 * complex elements as they move the others; FFT takes its kinds' dtypes. */
static bool accepts_complex(uint32_t op, const int32_t *in, uint32_t n_in, const int32_t *out,
                            uint32_t n_out) {
    switch (kind_of(op)) {
    case K_COPY:
    case K_FILL:
    case K_UNARY_FLOAT:
    case K_UNARY_NUMERIC:
    case K_BINARY_FLOAT:
    case K_BINARY_NUMERIC:
    case K_COMPARE:
        return pk_complex_ew_accepts(op, in, out, S_CX, S_FLOAT | S_INT | BIT(GFP_BOOL));
    case K_TRI: return in_set(out[0], S_CX) && in[0] == out[0];
    case K_WHERE:
        return in[0] == GFP_BOOL && in_set(out[0], S_CX) && in[1] == out[0] && in[2] == out[0];
    case K_REDUCE: return n_out == 1 && pk_complex_reduce_ok(op, in[0], out[0], S_CX);
    case K_MATMUL: return pk_complex_matmul_ok(in[0], in[1], out[0], S_CX);
    case K_INDEX: return in_set(in[0], S_CX) && in[1] == GFP_I64 && out[0] == in[0];
    case K_FFT:
        return n_in == 1 && n_out == 1 &&
               (pk_fft_kind_dtypes(GFP_FFT_C2C, in[0], out[0]) ||
                pk_fft_kind_dtypes(GFP_FFT_R2C, in[0], out[0]) ||
                pk_fft_kind_dtypes(GFP_FFT_C2R, in[0], out[0]));
    default: return false;
    }
}

/* True when launch runs op with these dtypes (counts already checked). */
static bool accepts(uint32_t op, const int32_t *in, uint32_t n_in, const int32_t *out,
                    uint32_t n_out) {
    if (any_complex(in, n_in, out, n_out)) return accepts_complex(op, in, n_in, out, n_out);
    op_kind k = kind_of(op);
    switch (k) {
    case K_COPY: return in_set(in[0], S_ALL) && in_set(out[0], S_ALL);
    case K_FILL:
    case K_RANDOM: return in_set(out[0], S_ALL);
    case K_ARANGE: return in_set(out[0], S_FLOAT | S_HALF | S_INT);
    case K_TRI: return in_set(out[0], S_ALL) && in[0] == out[0];
    case K_UNARY_FLOAT: return in_set(out[0], S_FLOAT | S_HALF) && in[0] == out[0];
    case K_UNARY_NUMERIC: return in_set(out[0], S_FLOAT | S_HALF | S_INT) && in[0] == out[0];
    case K_LOGICAL_NOT: return in_set(in[0], S_ALL) && out[0] == GFP_BOOL;
    case K_BINARY_FLOAT:
        return in_set(out[0], S_FLOAT | S_HALF) && in[0] == out[0] && in[1] == out[0];
    case K_BINARY_NUMERIC:
        return in_set(out[0], S_FLOAT | S_HALF | S_INT) && in[0] == out[0] && in[1] == out[0];
    case K_COMPARE: return in_set(in[0], S_ALL) && in[1] == in[0] && out[0] == GFP_BOOL;
    case K_LOGICAL: return in_set(in[0], S_ALL) && in_set(in[1], S_ALL) && out[0] == GFP_BOOL;
    case K_WHERE:
        return in[0] == GFP_BOOL && in_set(out[0], S_ALL) && in[1] == out[0] && in[2] == out[0];
    case K_REDUCE:
        return pk_reduce_dtypes_ok(op, in[0], out[0], n_out < 2 ? GFP_I64 : out[1],
                                   CU_REDUCE_DTYPES, S_FLOAT);
    case K_MATMUL: return pk_matmul_dtypes_ok(in[0], in[1], out[0], S_FLOAT | S_HALF | S_INT);
    case K_SOFTMAX:
    case K_LAYER_NORM:
    case K_BATCH_NORM: return pk_norm_dtypes_ok(op, in, n_in, out, n_out, S_FLOAT);
    case K_INDEX: {
        bool selecting = op == GFP_OP_INDEX_SELECT || op == GFP_OP_GATHER;
        return in_set(in[0], selecting ? S_ALL : S_FLOAT | S_INT) && in[1] == GFP_I64 &&
               out[0] == in[0];
    }
    case K_CONV:
        return in_set(in[0], S_FLOAT) && all_are(in + 1, n_in - 1, in[0], op == GFP_OP_CONV2D) &&
               in[1] == in[0] && out[0] == in[0];
    case K_POOL:
        if (!in_set(in[0], S_FLOAT)) return false;
        if (op == GFP_OP_MAX_POOL2D) return out[0] == in[0] && out[1] == GFP_I64;
        if (op == GFP_OP_MAX_POOL2D_BACKWARD) return in[1] == GFP_I64 && out[0] == in[0];
        return out[0] == in[0];
    case K_SOFTMAX_BACKWARD: /* grad_y, y -> grad_x, one float dtype */
        return n_in == 2 && n_out == 1 && in_set(in[0], S_FLOAT) && in[1] == in[0] &&
               out[0] == in[0];
    case K_NORM_BACKWARD: /* grad_y, x, mean, rstd, weight|- -> 3, one float dtype */
        return n_in == 5 && n_out == 3 && in_set(in[0], S_FLOAT) && all_are(in, 4, in[0], false) &&
               (in[4] == in[0] || in[4] == -1) && all_are(out, 3, in[0], false);
    case K_RNN: /* LSTM_CELL (3 in, 4 out), _BACKWARD (5 or 6 in, dy optional, 2 out) */
        if (op == GFP_OP_LSTM_CELL && (n_in != 3 || n_out != 4)) return false;
        if (op == GFP_OP_LSTM_CELL_BACKWARD && (n_in < 5 || n_in > 6 || n_out != 2)) return false;
        return in_set(in[0], S_FLOAT) && all_are(in, n_in, in[0], op != GFP_OP_LSTM_CELL) &&
               (op == GFP_OP_LSTM_CELL || (in[1] == in[0] && in[2] == in[0] && in[3] == in[0] &&
                                           in[4] == in[0])) &&
               all_are(out, n_out, in[0], false);
    case K_OPTIM: /* ADAM_UPDATE: seven tensors of one float dtype */
        return n_in == 4 && n_out == 3 && in_set(in[0], S_FLOAT) && all_are(in, 4, in[0], false) &&
               all_are(out, 3, in[0], false);
    default: return false;
    }
}

/* Kinds whose kernels are f32 / f64 only: f16 and bf16 go through f32
 * copies (plugins/common/pk_widen.h), rounded once. Not INDEX: SCATTER_ADD
 * and INDEX_ADD accumulate into their output, which the copies would lose. */
static bool widens(op_kind k) {
    return k == K_REDUCE || k == K_SOFTMAX || k == K_SOFTMAX_BACKWARD || k == K_LAYER_NORM ||
           k == K_BATCH_NORM || k == K_NORM_BACKWARD || k == K_CONV || k == K_POOL;
}

/* The answer is the same for every device of the plugin (every device runs
 * the same kernels), so device is not used. */
gfp_status cu_query_op(void *device, const gfp_op_query *q, uint32_t *support) {
    (void)device;
    gfp_status st = pk_query_begin(q, support);
    if (st != GFP_OK) return st;
    gfp_op_query w = *q;
    if (widens(kind_of(q->op)) && !pk_widen_query(q, &w)) return GFP_OK;
    if (kind_of(q->op) != K_NONE && pk_query_fits(q, S_STORED) &&
        accepts(q->op, w.input_dtypes, w.n_inputs, w.output_dtypes, w.n_outputs))
        *support = GFP_SUPPORT_STRIDED;
    /* FFT needs cuFFT, opened here by the first FFT query. */
    if (*support != GFP_SUPPORT_NONE && kind_of(q->op) == K_FFT && !cu_fft_usable())
        *support = GFP_SUPPORT_NONE;
    return GFP_OK;
}

bool cu_is_contiguous(const gfp_tensor *t) { return pk_is_contiguous(t); }

cuk_tensor cu_view(const gfp_tensor *t) {
    cuk_tensor v;
    memset(&v, 0, sizeof v);
    v.data = (char *)((const cu_buffer *)t->buffer)->ptr + t->offset;
    v.dtype = t->dtype;
    v.rank = t->rank;
    for (int d = 0; d < t->rank; d++) {
        v.sizes[d] = t->sizes[d];
        v.strides[d] = t->strides[d];
    }
    return v;
}

/* A live buffer of device ctx: its size. */
static gfp_status buffer_size(const void *ctx, gfp_buffer buffer, uint64_t *size) {
    const cu_buffer *b = buffer;
    if (!b || b->magic != CU_BUFFER_MAGIC || b->dev != ctx) return GFP_ERR_INVALID;
    *size = b->nbytes;
    return GFP_OK;
}

static gfp_status unsupported(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                              const gfp_tensor *const *out, uint32_t n_out) {
    char ins[96], outs[64];
    pk_dtypes_text(in, n_in, ins, sizeof ins);
    pk_dtypes_text(out, n_out, outs, sizeof outs);
    return pk_fail(GFP_ERR_UNSUPPORTED,
                   "%s: the cuda plugin does not provide it for dtypes (%s) -> (%s) (see "
                   "query_op; convert with a COPY first)",
                   pk_op_name(op), ins, outs);
}

/* ------------------------------------------------------------ routing */
static gfp_status run_matmul(cu_device *dev, uint32_t op, const gfp_tensor *const *in,
                             uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                             const void *params) {
    (void)op;
    (void)params;
    return cu_matmul_launch(dev, in, n_in, out, n_out);
}

static gfp_status run_fft(cu_device *dev, uint32_t op, const gfp_tensor *const *in,
                          uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                          const void *params) {
    (void)op;
    (void)n_in;
    (void)n_out;
    return cu_fft_launch(dev, in[0], out[0], params);
}

static gfp_status run_elementwise(cu_device *dev, uint32_t op, const gfp_tensor *const *in,
                                  uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                                  const void *params) {
    (void)n_out;
    return cu_elementwise_launch(dev, op, in, n_in, out[0], params);
}

/* ------------------------------------------------------------ f16 / bf16 through f32 copies */
typedef struct widen_ctx {
    cu_device *dev;
    gfp_status (*launch)(cu_device *dev, uint32_t op, const gfp_tensor *const *in,
                         uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                         const void *params);
} widen_ctx;

static gfp_status widen_alloc(void *ctx, uint64_t bytes, gfp_buffer *buf, const char *op) {
    cu_device *dev = ((widen_ctx *)ctx)->dev;
    *buf = NULL;
    cu_buffer *b = malloc(sizeof *b);
    if (!b) return pk_fail(GFP_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    *b = (cu_buffer){CU_BUFFER_MAGIC, NULL, bytes, dev};
    gfp_status st = cu_temp_alloc(dev, bytes, &b->ptr, op);
    if (st != GFP_OK) {
        free(b);
        return st;
    }
    *buf = b;
    return GFP_OK;
}

/* Stream-ordered: the memory stays until the enqueued work that uses it ran. */
static void widen_free(void *ctx, gfp_buffer buf) {
    cu_buffer *b = buf;
    cu_temp_free(((widen_ctx *)ctx)->dev, b->ptr);
    free(b);
}

static gfp_status widen_copy(void *ctx, const gfp_tensor *dst, const gfp_tensor *src,
                             const char *op) {
    cuk_tensor d = cu_view(dst), s = cu_view(src);
    return cu_copy_tensor(((widen_ctx *)ctx)->dev, &d, &s, op);
}

static gfp_status widen_launch(void *ctx, uint32_t op, const gfp_tensor *const *in,
                               uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                               const void *params) {
    widen_ctx *w = ctx;
    return w->launch(w->dev, op, in, n_in, out, n_out, params);
}

typedef struct cu_family {
    uint32_t families; /* GFP_FAMILY_BIT()s it serves: the kit routes by it */
    gfp_status (*launch)(cu_device *dev, uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                         const gfp_tensor *const *out, uint32_t n_out, const void *params);
} cu_family;

static const cu_family families[] = {
    {GFP_FAMILIES_ELEMENTWISE | GFP_FAMILY_BIT(GFP_FAMILY_RANDOM), run_elementwise},
    {GFP_FAMILY_BIT(GFP_FAMILY_REDUCE), cu_reduce_launch},
    {GFP_FAMILY_BIT(GFP_FAMILY_NORM), cu_norm_launch},
    {GFP_FAMILY_BIT(GFP_FAMILY_INDEX), cu_index_launch},
    {GFP_FAMILY_BIT(GFP_FAMILY_MATMUL), run_matmul},
    {GFP_FAMILY_BIT(GFP_FAMILY_CONV), cu_conv_launch},
    {GFP_FAMILY_BIT(GFP_FAMILY_POOL), cu_pool_launch},
    {GFP_FAMILY_BIT(GFP_FAMILY_FFT), run_fft},
    {GFP_FAMILY_BIT(GFP_FAMILY_OPTIM), cu_optim_launch},
    {GFP_FAMILY_BIT(GFP_FAMILY_RNN), cu_rnn_launch},
};

gfp_status cu_launch(void *device, uint32_t op, const gfp_tensor *const *inputs,
                     uint32_t n_inputs, const gfp_tensor *const *outputs, uint32_t n_outputs,
                     const void *params) {
    cu_device *dev = device;
    const pk_device_rules rules = {"cuda", dev ? dev->name : "cuda", S_STORED, buffer_size, dev};
    gfp_status st = pk_launch_begin(&rules, op, inputs, n_inputs, outputs, n_outputs, params);
    if (st != GFP_OK) return st;
    const cu_family *f = PK_ROUTE(families, op);
    if (!f || kind_of(op) == K_NONE)
        return pk_fail(GFP_ERR_UNSUPPORTED, "%s: the cuda plugin does not provide it",
                       pk_op_name(op));
    int32_t in_dt[8], out_dt[4];
    bool widened = widens(kind_of(op)) && pk_widen_operands(inputs, n_inputs, outputs, n_outputs);
    for (uint32_t i = 0; i < n_inputs; i++)
        in_dt[i] = !inputs[i] ? -1 : widened && pk_is_half(inputs[i]->dtype) ? GFP_F32
                                                                             : inputs[i]->dtype;
    for (uint32_t i = 0; i < n_outputs; i++)
        out_dt[i] = widened && pk_is_half(outputs[i]->dtype) ? GFP_F32 : outputs[i]->dtype;
    if (!accepts(op, in_dt, n_inputs, out_dt, n_outputs))
        return unsupported(op, inputs, n_inputs, outputs, n_outputs);
    if ((st = cu_use(dev, pk_op_name(op))) != GFP_OK) return st;
    if (widened) {
        widen_ctx w = {dev, f->launch};
        const pk_widen_ops ops = {widen_alloc, widen_free, widen_copy, widen_launch, &w, 0,
                                  dev->name};
        return pk_widen_launch(&ops, op, inputs, n_inputs, outputs, n_outputs, params);
    }
    return f->launch(dev, op, inputs, n_inputs, outputs, n_outputs, params);
}

/* ------------------------------------------------------------ helpers for families */
void cu_iter_of(cuk_iter *it, const cuk_tensor *dst, const cuk_tensor *src) {
    memset(it, 0, sizeof *it);
    it->n_tensors = src ? 2 : 1;
    it->rank = dst->rank;
    it->numel = 1;
    for (int d = 0; d < dst->rank; d++) {
        it->sizes[d] = dst->sizes[d];
        it->strides[0][d] = dst->strides[d];
        if (src) it->strides[1][d] = src->strides[d];
        it->numel *= dst->sizes[d];
    }
    if (it->rank == 0) {
        it->rank = 1;
        it->sizes[0] = 1;
    }
    it->data[0] = dst->data;
    it->dtype[0] = dst->dtype;
    if (src) {
        it->data[1] = src->data;
        it->dtype[1] = src->dtype;
    }
}

gfp_status cu_copy_tensor(cu_device *dev, const cuk_tensor *dst, const cuk_tensor *src,
                          const char *op) {
    cuk_iter it;
    cu_iter_of(&it, dst, src);
    if (it.numel == 0) return GFP_OK;
    return cu_check(cuk_copy(dev->stream, &it), op, "the copy kernel launch");
}

gfp_status cu_zero_tensor(cu_device *dev, const cuk_tensor *t, const char *op) {
    cuk_iter it;
    cu_iter_of(&it, t, NULL);
    if (it.numel == 0) return GFP_OK;
    return cu_check(cuk_fill(dev->stream, &it, 0.0, 0, 1), op, "the fill kernel launch");
}

gfp_status cu_contiguous_in(cu_device *dev, const gfp_tensor *t, cuk_tensor *out, void **owned,
                            const char *op) {
    *owned = NULL;
    *out = cu_view(t);
    if (cu_is_contiguous(t)) return GFP_OK;
    int64_t n = pk_numel(t);
    gfp_status st = cu_temp_alloc(dev, (uint64_t)n * pk_dtype_size(t->dtype), owned, op);
    if (st != GFP_OK) return st;
    cuk_tensor c = *out;
    c.data = *owned;
    int64_t stride = 1;
    for (int d = t->rank - 1; d >= 0; d--) {
        c.strides[d] = stride;
        stride *= t->sizes[d];
    }
    st = cu_copy_tensor(dev, &c, out, op);
    if (st != GFP_OK) {
        cu_temp_free(dev, *owned);
        *owned = NULL;
        return st;
    }
    *out = c;
    return GFP_OK;
}
