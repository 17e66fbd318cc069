/* SPDX-License-Identifier: BSD-3-Clause */
/* plugin_kit.h — the toolkit every graft plugin in this tree compiles in
 * (plugin_kit.c; graft_add_plugin adds it): plugins still link nothing of
 * graft.
 *
 * It holds what each plugin would otherwise write again: the host's error
 * and log slots behind printf-style helpers, the op table's names, the
 * checks of query_op and of every launch (counts, absent inputs and the
 * parameter struct from graft_ops.def; tensor descriptors and view extents),
 * the validation of the conv, pool, reduce and norm parameter structs, and
 * the router from an op to the plugin's handler of its family. Messages name
 * an op by its table name and read the same in every plugin. */
#ifndef GRAFT_PLUGIN_KIT_H
#define GRAFT_PLUGIN_KIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "graft_ops.h"
#include "pk_convert.h" /* pk_trunc_i64, pk_trunc_i32 */
#include "pk_half.h"    /* f16 / bf16 <-> f32 / f64, round to nearest even */

#if defined(__GNUC__)
#define PK_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define PK_PRINTF(f, a)
#endif

/* ------------------------------------------------------------ host */
/* The host table of the latest negotiation (NULL before it). */
extern const gfp_host *pk_host;
/* Attaches a printf-style message to the failure and returns status. */
gfp_status pk_fail(gfp_status status, const char *fmt, ...) PK_PRINTF(2, 3);
/* The message of the calling thread's last pk_fail ("" before any), for a
 * plugin that goes on after a failure and logs it instead (the host keeps
 * only the message of the call that fails). */
const char *pk_last_message(void);
/* A diagnostic through the host's log slot. */
void pk_log(gfp_log_level level, const char *fmt, ...) PK_PRINTF(2, 3);

/* The plugin's own table, once negotiation handed it out (for its name). */
extern const gfp_plugin *pk_self;
/* Defines the one exported symbol: the negotiation of plugin_negotiate.h,
 * keeping the host in pk_host and the table in pk_self. */
#define PK_DEFINE_NEGOTIATE(table)                                                        \
    GFP_EXPORT gfp_status graft_plugin_negotiate(const gfp_negotiate_request *request,    \
                                                 const gfp_plugin **out);                 \
    GFP_EXPORT gfp_status graft_plugin_negotiate(const gfp_negotiate_request *request,    \
                                                 const gfp_plugin **out) {                \
        pk_self = &(table);                                                               \
        return gfp_plugin_negotiate_common(request, out, &(table), &pk_host);             \
    }
/* The query_extension slot of a plugin without extensions: NOT_FOUND. */
gfp_status pk_no_extension(void *plugin_ctx, const char *name, void **out);
/* buffer_fill's pattern: 1, 2, 4 or 8 bytes, and n a multiple of it. */
gfp_status pk_check_fill_pattern(uint64_t n, const void *pattern, uint32_t pattern_size);

/* The n bytes at offset lie inside a buffer of size bytes; what: the slot,
 * for the message. */
gfp_status pk_check_range(const char *what, uint64_t size, uint64_t offset, uint64_t n);

/* A runtime library opened by the first of names that dlopen takes (now,
 * locally); NULL with *err the last dlerror() ("not found" without one). */
void *pk_dlopen_first(const char *const *names, size_t count, const char **err);

/* device_props: copies `full` into props as far as props->struct_size covers
 * (an older core passes a smaller struct); struct_size itself is kept. */
gfp_status pk_copy_props(gfp_device_props *props, const gfp_device_props *full);

/* ------------------------------------------------------------ names */
/* The table's name of op; "op N" for a number the table does not hold. */
const char *pk_op_name(uint32_t op);
/* "f32" ... "bf16"; "unknown" otherwise. */
const char *pk_dtype_name(int32_t dtype);
/* Bytes per element (0 for an unknown dtype). */
size_t pk_dtype_size(int32_t dtype);
bool pk_is_float(int32_t dtype); /* f32 or f64 */
bool pk_is_half(int32_t dtype);  /* f16 or bf16 */
int64_t pk_numel(const gfp_tensor *t);
bool pk_same_shape(const gfp_tensor *a, const gfp_tensor *b);

/* Every element of t in row-major order, one after the other (size-1 dims
 * may have any stride). */
bool pk_is_contiguous(const gfp_tensor *t);

/* ------------------------------------------------------------ routing */
/* A plugin's table of family handlers is an array of structs whose first
 * member is a uint32_t bit set of GFP_FAMILY_BIT()s. pk_route returns the
 * entry whose set holds op's family, or NULL (an op the table does not hold,
 * or one no entry serves). */
const void *pk_route(const void *entries, size_t entry_size, size_t count, uint32_t op);
/* The handlers of the plugins in this tree, one per file: ENTRY(stem, families). */
#define PK_FAMILIES(ENTRY)                                                                \
    ENTRY(elementwise, GFP_FAMILIES_ELEMENTWISE)                                          \
    ENTRY(random, GFP_FAMILY_BIT(GFP_FAMILY_RANDOM))                                      \
    ENTRY(reduce, GFP_FAMILY_BIT(GFP_FAMILY_REDUCE))                                      \
    ENTRY(matmul, GFP_FAMILY_BIT(GFP_FAMILY_MATMUL))                                      \
    ENTRY(norm, GFP_FAMILY_BIT(GFP_FAMILY_NORM))                                          \
    ENTRY(index, GFP_FAMILY_BIT(GFP_FAMILY_INDEX))                                        \
    ENTRY(conv, GFP_FAMILY_BIT(GFP_FAMILY_CONV))                                          \
    ENTRY(pool, GFP_FAMILY_BIT(GFP_FAMILY_POOL))
#define PK_ROUTE(array, op) pk_route((array), sizeof((array)[0]), sizeof(array) / sizeof((array)[0]), (op))

/* ------------------------------------------------------------ elementwise */
/* What an op of the elementwise families computes: from its family
 * (graft_ops.def) and, for the math, its kind column in op_math.def. */
typedef enum pk_ew_kind {
    PK_EW_NONE,
    PK_EW_COPY,
    PK_EW_FILL,
    PK_EW_ARANGE,
    PK_EW_TRI,
    PK_EW_UNARY,       /* same dtype in and out */
    PK_EW_LOGICAL_NOT, /* any in, bool out */
    PK_EW_BINARY,      /* a, b, out of one dtype */
    PK_EW_COMPARE,     /* a, b of one dtype, bool out */
    PK_EW_LOGICAL,     /* a, b of any dtypes, bool out */
    PK_EW_WHERE        /* bool cond, a, b, out of one dtype */
} pk_ew_kind;
pk_ew_kind pk_ew_kind_of(uint32_t op);
/* True for the UNARY and BINARY ops op_math.def gives an integer formula
 * (kind NUMERIC); the others compute in floats only. */
bool pk_ew_numeric(uint32_t op);

/* ------------------------------------------------------------ complex
 * pk_complex.c: the complex ops every plugin of this tree provides, by the
 * reference's rules (c64, c128; `cx_dtypes` arguments are the GFP_DTYPE_BIT
 * set of complex dtypes the calling plugin computes, `reals` the real
 * dtypes it stores, for COPY into complex). */
bool pk_is_complex(int32_t dtype);
/* The real dtype of a complex dtype's parts: f32 for c64, f64 for c128. */
int32_t pk_complex_part(int32_t dtype);
/* t's shape, dense row-major in buffer b at offset 0, as dtype dt (scratch
 * copies of t). */
gfp_tensor pk_dense_in(const gfp_tensor *t, int32_t dt, gfp_buffer b);
/* The real reading of complex t whose last dim has unit stride: the part
 * dtype, the last dim doubled, the other strides doubled. */
gfp_tensor pk_complex_real_view(const gfp_tensor *t);
/* The op's index in the complex unary (NEG EXP LOG LOG1P EXPM1 SQRT RSQRT
 * RECIPROCAL SQUARE SIN COS TANH SIGMOID POW_SCALAR ASIN ACOS ATAN) or binary
 * (ADD SUB MUL DIV POW) table, -1 for any other op: the op code device
 * kernels switch on. ABS is neither (its output is real). */
int pk_complex_unary_code(uint32_t op);
int pk_complex_binary_code(uint32_t op);
/* An input (in[0, n_in)) or the output is complex: the op is complex work. */
bool pk_complex_operands(const int32_t *in, uint32_t n_in, const int32_t *out);
/* An elementwise op on these dtypes is provided (COPY FILL, the unary and
 * binary tables, ABS, EQ NE); TRIL/TRIU and WHERE move bits and are the
 * plugin's own business. */
bool pk_complex_ew_accepts(uint32_t op, const int32_t *in, const int32_t *out,
                           uint32_t cx_dtypes, uint32_t reals);
/* What the rule above accepts for op, in words, for messages. */
const char *pk_complex_ew_rule(uint32_t op);
/* SUM MEAN PROD of a complex dtype of the set into the same dtype. */
bool pk_complex_reduce_ok(uint32_t op, int32_t in, int32_t out, uint32_t cx_dtypes);
/* MATMUL of one complex dtype of the set. */
bool pk_complex_matmul_ok(int32_t a, int32_t b, int32_t y, uint32_t cx_dtypes);
/* FFT: the dtypes graft_ops.def gives a kind (C2C one complex dtype, R2C
 * f32 -> c64 or f64 -> c128, C2R the reverse) ... */
bool pk_fft_kind_dtypes(uint32_t kind, int32_t x, int32_t y);
/* ... of which the complex one is in the set. */
bool pk_fft_dtypes_ok(uint32_t kind, int32_t x, int32_t y, uint32_t cx_dtypes);
/* The FFT params against x and y (the reference's rules): kind, inverse,
 * ranks, n_dims, distinct dims in range, dtypes (UNSUPPORTED with `note`
 * appended when only the set lacks them), sizes (the onesided dim's n/2 + 1
 * bins), no transformed dim of length 0. *dl: the last listed dim. */
gfp_status pk_check_fft(const gfp_fft_params *p, const gfp_tensor *x, const gfp_tensor *y,
                        uint32_t cx_dtypes, const char *note, int *dl);

/* ------------------------------------------------------------ checks */
/* What a device stores and how a buffer handle becomes a size. */
typedef struct pk_device_rules {
    const char *plugin;   /* "opencl": for messages */
    const char *device;   /* the device's name for messages */
    uint32_t dtypes;      /* GFP_DTYPE_BIT set the device stores */
    /* Byte size of a live buffer of this plugin; GFP_ERR_INVALID (without a
     * message: the kit writes it) for anything else. */
    gfp_status (*buffer_size)(const void *ctx, gfp_buffer buffer, uint64_t *size);
    const void *ctx;
} pk_device_rules;

/* The checks of query_op before any family is asked: support and query
 * non-NULL, struct_size, at most 8 inputs and 4 outputs. On GFP_OK *support
 * is GFP_SUPPORT_NONE. */
gfp_status pk_query_begin(const gfp_op_query *q, uint32_t *support);
/* True when every dtype q names (absent inputs are -1) is in `dtypes` and
 * the counts fit the op's row. */
bool pk_query_fits(const gfp_op_query *q, uint32_t dtypes);

/* The launch preamble: op in the table, arrays present, counts within the
 * op's row, absent (NULL) inputs only where the row allows, every output
 * present, every tensor checked by pk_check_tensor, and the parameter struct
 * the row names present and large enough. */
gfp_status pk_launch_begin(const pk_device_rules *r, uint32_t op, const gfp_tensor *const *in,
                           uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                           const void *params);
/* One descriptor: struct_size, rank, a stored dtype, sizes and strides >= 0,
 * a live buffer, an offset aligned to the element and every element reached
 * inside the buffer. role is "input" or "output". */
gfp_status pk_check_tensor(const pk_device_rules *r, uint32_t op, const char *role, uint32_t i,
                           const gfp_tensor *t);
/* The element offset of the last element a view reaches (saturating far
 * beyond any buffer on overflow). */
uint64_t pk_view_last(const gfp_tensor *t);
/* Counts as the op's row says them. */
gfp_status pk_check_counts(uint32_t op, uint32_t n_in, uint32_t n_out);
/* Counts a kernel wants (a narrower rule than the row's); name: the op's. */
gfp_status pk_expect_counts(uint32_t n_in, uint32_t want_in, uint32_t n_out, uint32_t want_out,
                            const char *name);
/* params non-NULL and struct_size >= min_size; name: the op's. */
gfp_status pk_check_params(const void *params, size_t min_size, const char *name);

/* ------------------------------------------------------------ routed slots */
/* query_op's common part: the checks of pk_query_begin, then the entry of
 * `entries` (see pk_route) serving q->op when q fits the op's row and the
 * device's dtypes; NULL otherwise (*support is then NONE, or *st a failure). */
const void *pk_query_route(const gfp_op_query *q, uint32_t *support, uint32_t dtypes,
                           const void *entries, size_t entry_size, size_t count,
                           gfp_status *st);
#define PK_QUERY_ROUTE(array, q, support, dtypes, st)                                     \
    pk_query_route((q), (support), (dtypes), (array), sizeof((array)[0]),                 \
                   sizeof(array) / sizeof((array)[0]), (st))
/* launch's common part: pk_launch_begin, then the entry serving op (NULL
 * with *st set when a check fails or no entry serves it). */
const void *pk_launch_route(const pk_device_rules *r, uint32_t op, const gfp_tensor *const *in,
                            uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                            const void *params, const void *entries, size_t entry_size,
                            size_t count, gfp_status *st);
#define PK_LAUNCH_ROUTE(array, r, op, in, n_in, out, n_out, params, st)                   \
    pk_launch_route((r), (op), (in), (n_in), (out), (n_out), (params), (array),           \
                    sizeof((array)[0]), sizeof(array) / sizeof((array)[0]), (st))

/* ------------------------------------------------------------ parameter structs */
/* The geometry of a conv2d op, validated (PyTorch's rules): with kernel k,
 * stride s, padding p, dilation d, out = (in + 2p - d(k-1) - 1) / s + 1. */
typedef struct pk_conv2d_geom {
    int64_t n, ci, co, h, w, kh, kw, ho, wo;
    int64_t groups, cig, cog; /* cig/cog: channels per group */
    int64_t sh, sw, ph, pw, dh, dw;
} pk_conv2d_geom;
/* The three tensors of every conv op by role: input-shaped x [N, Ci, H, W],
 * weight-shaped w [Co, Ci/g, kh, kw], output-shaped y [N, Co, Ho, Wo] (the
 * backward ops pass grad_y as y, grad_x as x, grad_w as w); names for
 * messages. */
typedef struct pk_conv2d_roles {
    const gfp_tensor *x, *w, *y;
    const char *xname, *wname, *yname;
} pk_conv2d_roles;
/* params (struct_size included): groups, strides and dilations >= 1,
 * padding >= 0; then ranks, channels against groups, and y's sizes against
 * the formula. Fills g. */
gfp_status pk_check_conv2d(uint32_t op, const void *params, const pk_conv2d_roles *r,
                           pk_conv2d_geom *g);

/* The geometry of a pool2d op, validated (PyTorch's rules, ceil_mode's last
 * window starting inside the input or its left padding). */
typedef struct pk_pool2d_geom {
    int64_t n, c, h, w, ho, wo;
    int64_t kh, kw, sh, sw, ph, pw, dh, dw;
    bool ceil_mode, include_pad;
} pk_pool2d_geom;
/* params: kernel and stride >= 1, 0 <= padding <= kernel/2, dilation >= 1
 * for max pooling (avg pooling has none: 1); x [N, C, H, W] input-shaped and
 * y output-shaped, both rank 4, y of the formula's sizes. Fills g. */
gfp_status pk_check_pool2d(uint32_t op, const void *params, const gfp_tensor *x,
                           const char *xname, const gfp_tensor *y, const char *yname,
                           pk_pool2d_geom *g);
/* t present, rank 4 [N, C, H, W], sizes >= 0; name for messages. */
gfp_status pk_check_nchw(const char *op, const gfp_tensor *t, const char *name);
/* max_pool2d_backward has no parameters: grad_y, indices (i64, grad_y's
 * sizes) and grad_x rank 4, N and C alike. Fills g's sizes (the rest 0). */
gfp_status pk_check_max_pool2d_backward(const gfp_tensor *gy, const gfp_tensor *ind,
                                        const gfp_tensor *gx, pk_pool2d_geom *g);
/* a / b rounded toward minus infinity. */
int64_t pk_floor_div(int64_t a, int64_t b);
/* One axis's output size: floor (or ceil) of (in + 2p - d(k-1) - 1) / s, plus
 * 1; in ceil mode the last window starts inside the input or its left
 * padding. */
int64_t pk_pool2d_out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d,
                           bool ceil_mode);

/* ------------------------------------------------------------ family shapes
 * plugin_kit_shapes.c: the dtype and shape rules of the norm, reduce, index,
 * matmul and random families, one copy for every plugin. `dtypes` arguments
 * are GFP_DTYPE_BIT sets: what the calling plugin computes the op in (a
 * plugin's own extra limits, a device feature for instance, stay with it).
 * The launch preamble has checked counts, absent inputs and params' size. */
#define PK_DT(d) GFP_DTYPE_BIT(d)
#define PK_DT_FLOAT (PK_DT(GFP_F32) | PK_DT(GFP_F64))
#define PK_DT_INT (PK_DT(GFP_I32) | PK_DT(GFP_I64))
#define PK_DT_COMPLEX (PK_DT(GFP_C64) | PK_DT(GFP_C128))
/* The 16-bit floats: a plugin that computes in them adds this set (the
 * reference: in double, rounded once on store). */
#define PK_DT_HALF (PK_DT(GFP_F16) | PK_DT(GFP_BF16))
/* dt is a dtype of the set. */
bool pk_dtype_in(int32_t dt, uint32_t dtypes);
/* t has rank `rank` and sizes[0, rank). */
bool pk_has_sizes(const gfp_tensor *t, int rank, const int64_t *sizes);
/* t itself, or for a 0-dim t a 1-D view of its one element. */
gfp_tensor pk_at_least_1d(const gfp_tensor *t);

/* NORM (softmax, log_softmax, layer_norm, batch_norm; not the backward):
 * input 0 of `dtypes`, every other tensor present of its dtype (-1: absent). */
bool pk_norm_dtypes_ok(uint32_t op, const int32_t *in, uint32_t n_in, const int32_t *out,
                       uint32_t n_out, uint32_t dtypes);
/* The launch's dtypes by that rule (UNSUPPORTED naming the first tensor
 * that breaks it), then the op's parameters and shapes. */
gfp_status pk_check_norm(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                         const gfp_tensor *const *out, uint32_t n_out, const void *params,
                         uint32_t dtypes);

/* LAYER_NORM_BACKWARD and BATCH_NORM_BACKWARD (graft_ops.def): every tensor
 * present (weight may be absent) and of one dtype of `dtypes` (UNSUPPORTED
 * otherwise), then the shapes: grad_y and grad_x x's; layer norm's mean and
 * rstd x's leading dims and weight, grad_weight, grad_bias its last
 * normalized_rank (params); batch norm's per-channel tensors [C] with x
 * [N, C, ...]. */
gfp_status pk_check_norm_backward(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                                  const gfp_tensor *const *out, uint32_t n_out,
                                  const void *params, uint32_t dtypes);

/* SOFTMAX_BACKWARD and LOG_SOFTMAX_BACKWARD: grad_y, y and grad_x present,
 * of one dtype of `dtypes` (UNSUPPORTED otherwise) and one shape, params.dim
 * in range (a 0-dim tensor has dim 0). */
gfp_status pk_check_softmax_backward(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                                     const gfp_tensor *const *out, uint32_t n_out,
                                     const void *params, uint32_t dtypes);

/* ADAM_UPDATE: 4 inputs (p, g, m, v) and 3 outputs (p, m, v), 1.3 params,
 * all seven of f32 or f64 (UNSUPPORTED for another dtype, INVALID for a
 * mix) and of p's shape. The arithmetic is pk_adam.h's. */
gfp_status pk_check_adam(const gfp_tensor *const *in, uint32_t n_in, const gfp_tensor *const *out,
                         uint32_t n_out, const void *params);

/* LSTM_CELL: in mm, p [N, 4H], c_prev [N, H]; out act [N, 4H], c, tc, h
 * [N, H]; every tensor present, all of f32 or f64. *n, *h: N and H. */
gfp_status pk_check_lstm_cell(const gfp_tensor *const *in, uint32_t n_in,
                              const gfp_tensor *const *out, uint32_t n_out, int64_t *n,
                              int64_t *h);
/* LSTM_CELL_BACKWARD: in act [N, 4H], c_prev, tc, dh, dc [N, H], dy [N, H]
 * or absent; out dgates [N, 4H], dc_prev [N, H]; one of f32 or f64.
 * *has_dy: dy given. */
gfp_status pk_check_lstm_cell_backward(const gfp_tensor *const *in, uint32_t n_in,
                                       const gfp_tensor *const *out, uint32_t n_out, int64_t *n,
                                       int64_t *h, bool *has_dy);

/* REDUCE: input of `dtypes` narrowed by the op (mean, var and logsumexp
 * floats only, amax and amin bool too, the others no bool); output alike;
 * indices i64. floats: the float dtypes of `dtypes`. */
bool pk_reduce_by_dim(uint32_t op); /* max_dim, min_dim */
bool pk_reduce_dtypes_ok(uint32_t op, int32_t in, int32_t out, int32_t indices, uint32_t dtypes,
                         uint32_t floats);
/* dtypes, the dims mask (one bit for max_dim and min_dim), y of x's rank
 * with size 1 in reduced dims, indices of y's shape, and no max or min over
 * zero elements. ind: out[1] of max_dim and min_dim, else NULL. */
gfp_status pk_check_reduce(uint32_t op, const void *params, const gfp_tensor *x,
                           const gfp_tensor *y, const gfp_tensor *ind, uint32_t dtypes,
                           uint32_t floats);

/* INDEX: data of `dtypes` (bool only for the selecting ops, index_select and
 * gather), index i64, output the data's dtype. */
bool pk_index_dtypes_ok(uint32_t op, int32_t data, int32_t index, int32_t out, uint32_t dtypes);
/* What an index op's checks found: dim, and the size of the dim the index
 * points into (every index must lie in [0, limit)). */
typedef struct pk_index_geom {
    int dim;
    int64_t limit;
} pk_index_geom;
/* dtypes, dim within the data's rank (a 0-dim tensor counts as 1-D), and
 * the shapes: index_select and index_add a 1-D index whose length is the
 * walked tensor's size in dim, data and y alike elsewhere; gather and
 * scatter_add one rank, the index no larger than the data (gather: y of the
 * index's shape). */
gfp_status pk_check_index(uint32_t op, const void *params, const gfp_tensor *data,
                          const gfp_tensor *index, const gfp_tensor *y, uint32_t dtypes,
                          pk_index_geom *g);
/* The message for an index outside [0, limit). */
gfp_status pk_index_out_of_range(const char *name, int64_t value, int dim, int64_t limit);

/* MATMUL: a, b, y of one dtype of `dtypes`, one rank >= 2, equal batch
 * sizes, [.., m, k] @ [.., k, n] -> [.., m, n]. */
bool pk_matmul_dtypes_ok(int32_t a, int32_t b, int32_t y, uint32_t dtypes);
gfp_status pk_check_matmul(const gfp_tensor *a, const gfp_tensor *b, const gfp_tensor *y,
                           uint32_t dtypes);

/* ELEMENTWISE: every input of the output's shape (the core broadcasts with
 * stride 0); tril and triu rank >= 2, arange 1-D. */
gfp_status pk_check_elementwise(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                                const gfp_tensor *y);
/* t[0] = y, t[1..] = the inputs (NULL past n_in <= 3): the order kernels
 * walk them in; in_dt: the inputs' dtypes, -1 past n_in. */
void pk_ew_operands(const gfp_tensor *const *in, uint32_t n_in, const gfp_tensor *y,
                    const gfp_tensor *t[4], int32_t in_dt[3]);
/* The parameters of a unary op as the formulas of op_math.def take them:
 * the scalar ops' a and b, or clamp's bounds (a NaN bound is none); ia, ib:
 * the bounds truncated, for an integer dtype. */
typedef struct pk_unary_args {
    double a, b;
    bool has_a, has_b;
    int64_t ia, ib;
} pk_unary_args;
void pk_unary_args_of(uint32_t op, const void *params, int32_t dtype, pk_unary_args *u);
/* "f32, i64, -": the dtypes of n tensors (NULL: "-"), for messages. */
const char *pk_dtypes_text(const gfp_tensor *const *t, uint32_t n, char *buf, size_t len);

/* CONV and POOL queries (counts checked by pk_query_fits): input 0 of
 * `floats`; conv: weight, bias (when present) and output alike; pool: the
 * output alike, max_pool2d's indices and max_pool2d_backward's i64. */
bool pk_conv_dtypes_ok(const gfp_op_query *q, uint32_t floats);
bool pk_pool_dtypes_ok(const gfp_op_query *q, uint32_t floats);

/* RANDOM: a known kind; uniform and normal into a dtype of `floats`. */
gfp_status pk_check_random(const void *params, const gfp_tensor *y, uint32_t floats);

#endif
