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
#include <string.h>

#include "cuda_internal.h"

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
    K_LAYER_NORM,
    K_BATCH_NORM,
    K_INDEX,
    K_CONV,
    K_POOL
} op_kind;

/* Table kinds (op_math.def) to op kinds. COMPARE and LOGICAL unary ops do not
 * exist; they map to K_NONE should the table ever grow one without a kernel. */
#define UNARY_KIND_FLOAT K_UNARY_FLOAT
#define UNARY_KIND_NUMERIC K_UNARY_NUMERIC
#define UNARY_KIND_COMPARE K_NONE
#define UNARY_KIND_LOGICAL K_LOGICAL_NOT
#define BINARY_KIND_FLOAT K_BINARY_FLOAT
#define BINARY_KIND_NUMERIC K_BINARY_NUMERIC
#define BINARY_KIND_COMPARE K_COMPARE
#define BINARY_KIND_LOGICAL K_LOGICAL

static op_kind kind_of(uint32_t op) {
    switch (op) {
#define GF_OP_MATH_UNARY(ID, name, kind, f, i) \
    case GFP_OP_##ID: return UNARY_KIND_##kind;
#define GF_OP_MATH_BINARY(ID, name, kind, f, i) \
    case GFP_OP_##ID: return BINARY_KIND_##kind;
#include "op_math.def"
    case GFP_OP_COPY: return K_COPY;
    case GFP_OP_FILL: return K_FILL;
    case GFP_OP_ARANGE: return K_ARANGE;
    case GFP_OP_TRIL:
    case GFP_OP_TRIU: return K_TRI;
    case GFP_OP_WHERE: return K_WHERE;
    case GFP_OP_RANDOM: return K_RANDOM;
    case GFP_OP_SUM:
    case GFP_OP_MEAN:
    case GFP_OP_PROD:
    case GFP_OP_AMAX:
    case GFP_OP_AMIN:
    case GFP_OP_VAR:
    case GFP_OP_LOGSUMEXP:
    case GFP_OP_MAX_DIM:
    case GFP_OP_MIN_DIM: return K_REDUCE;
    case GFP_OP_MATMUL: return K_MATMUL;
    case GFP_OP_SOFTMAX:
    case GFP_OP_LOG_SOFTMAX: return K_SOFTMAX;
    case GFP_OP_LAYER_NORM: return K_LAYER_NORM;
    case GFP_OP_BATCH_NORM: return K_BATCH_NORM;
    case GFP_OP_INDEX_SELECT:
    case GFP_OP_GATHER:
    case GFP_OP_SCATTER_ADD:
    case GFP_OP_INDEX_ADD: return K_INDEX;
    case GFP_OP_CONV2D:
    case GFP_OP_CONV2D_BACKWARD_INPUT:
    case GFP_OP_CONV2D_BACKWARD_WEIGHT: return K_CONV;
    case GFP_OP_MAX_POOL2D:
    case GFP_OP_MAX_POOL2D_BACKWARD:
    case GFP_OP_AVG_POOL2D:
    case GFP_OP_AVG_POOL2D_BACKWARD: return K_POOL;
    default: return K_NONE;
    }
}

const char *cu_op_name(uint32_t op) {
    switch (op) {
#define GF_OP_MATH_UNARY(ID, name, kind, f, i) \
    case GFP_OP_##ID: return #name;
#define GF_OP_MATH_BINARY(ID, name, kind, f, i) \
    case GFP_OP_##ID: return #name;
#include "op_math.def"
    case GFP_OP_COPY: return "copy";
    case GFP_OP_FILL: return "fill";
    case GFP_OP_ARANGE: return "arange";
    case GFP_OP_TRIL: return "tril";
    case GFP_OP_TRIU: return "triu";
    case GFP_OP_WHERE: return "where";
    case GFP_OP_RANDOM: return "random";
    case GFP_OP_SUM: return "sum";
    case GFP_OP_MEAN: return "mean";
    case GFP_OP_PROD: return "prod";
    case GFP_OP_AMAX: return "amax";
    case GFP_OP_AMIN: return "amin";
    case GFP_OP_VAR: return "var";
    case GFP_OP_LOGSUMEXP: return "logsumexp";
    case GFP_OP_MAX_DIM: return "max_dim";
    case GFP_OP_MIN_DIM: return "min_dim";
    case GFP_OP_MATMUL: return "matmul";
    case GFP_OP_SOFTMAX: return "softmax";
    case GFP_OP_LOG_SOFTMAX: return "log_softmax";
    case GFP_OP_LAYER_NORM: return "layer_norm";
    case GFP_OP_BATCH_NORM: return "batch_norm";
    case GFP_OP_INDEX_SELECT: return "index_select";
    case GFP_OP_GATHER: return "gather";
    case GFP_OP_SCATTER_ADD: return "scatter_add";
    case GFP_OP_INDEX_ADD: return "index_add";
    case GFP_OP_CONV2D: return "conv2d";
    case GFP_OP_CONV2D_BACKWARD_INPUT: return "conv2d_backward_input";
    case GFP_OP_CONV2D_BACKWARD_WEIGHT: return "conv2d_backward_weight";
    case GFP_OP_MAX_POOL2D: return "max_pool2d";
    case GFP_OP_MAX_POOL2D_BACKWARD: return "max_pool2d_backward";
    case GFP_OP_AVG_POOL2D: return "avg_pool2d";
    case GFP_OP_AVG_POOL2D_BACKWARD: return "avg_pool2d_backward";
    default: return "unknown op";
    }
}

const char *cu_dtype_name(int32_t dtype) {
    switch (dtype) {
    case GFP_F32: return "f32";
    case GFP_F64: return "f64";
    case GFP_I32: return "i32";
    case GFP_I64: return "i64";
    case GFP_BOOL: return "bool";
    case GFP_F16: return "f16";
    case GFP_BF16: return "bf16";
    default: return "unknown";
    }
}

size_t cu_dtype_size(int32_t dtype) {
    switch (dtype) {
    case GFP_F32:
    case GFP_I32: return 4;
    case GFP_F64:
    case GFP_I64: return 8;
    case GFP_F16:
    case GFP_BF16: return 2;
    case GFP_BOOL: return 1;
    default: return 0;
    }
}

/* ------------------------------------------------------------ what is provided */
#define BIT(d) GFP_DTYPE_BIT(d)
#define S_FLOAT (BIT(GFP_F32) | BIT(GFP_F64))
#define S_HALF (BIT(GFP_F16) | BIT(GFP_BF16))
#define S_INT (BIT(GFP_I32) | BIT(GFP_I64))
#define S_ALL (S_FLOAT | S_HALF | S_INT | BIT(GFP_BOOL))

static bool in_set(int32_t d, uint32_t set) {
    return d >= 0 && d < GFP_DTYPE_COUNT && (set & BIT(d)) != 0;
}

/* Input count an op takes (-1: checked by its family) and output count. */
static bool counts_ok(uint32_t op, op_kind k, uint32_t n_in, uint32_t n_out) {
    switch (k) {
    case K_FILL:
    case K_ARANGE:
    case K_RANDOM: return n_in == 0 && n_out == 1;
    case K_COPY:
    case K_TRI:
    case K_UNARY_FLOAT:
    case K_UNARY_NUMERIC:
    case K_LOGICAL_NOT:
    case K_SOFTMAX: return n_in == 1 && n_out == 1;
    case K_BINARY_FLOAT:
    case K_BINARY_NUMERIC:
    case K_COMPARE:
    case K_LOGICAL:
    case K_MATMUL:
    case K_INDEX: return n_in == 2 && n_out == 1;
    case K_WHERE: return n_in == 3 && n_out == 1;
    case K_REDUCE:
        return n_in == 1 && n_out == (op == GFP_OP_MAX_DIM || op == GFP_OP_MIN_DIM ? 2u : 1u);
    case K_LAYER_NORM: return n_in == 3 && n_out == 3;
    case K_BATCH_NORM: return n_in == 5 && n_out == 3;
    case K_CONV: return (n_in == 2 || (op == GFP_OP_CONV2D && n_in == 3)) && n_out == 1;
    case K_POOL:
        return n_in == (op == GFP_OP_MAX_POOL2D_BACKWARD ? 2u : 1u) &&
               n_out == (op == GFP_OP_MAX_POOL2D ? 2u : 1u);
    default: return false;
    }
}

/* Every listed dtype equals dt; -1 entries (absent optional inputs) pass
 * when optional is set. */
static bool all_are(const int32_t *d, uint32_t n, int32_t dt, bool optional) {
    for (uint32_t i = 0; i < n; i++)
        if (d[i] != dt && !(optional && d[i] == -1)) return false;
    return true;
}

/* True when launch runs op with these dtypes (counts already checked). */
static bool accepts(uint32_t op, const int32_t *in, uint32_t n_in, const int32_t *out,
                    uint32_t n_out) {
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
    case K_REDUCE: {
        uint32_t set;
        switch (op) {
        case GFP_OP_MEAN:
        case GFP_OP_VAR:
        case GFP_OP_LOGSUMEXP: set = S_FLOAT; break;
        case GFP_OP_AMAX:
        case GFP_OP_AMIN: set = S_FLOAT | S_INT | BIT(GFP_BOOL); break;
        default: set = S_FLOAT | S_INT; break;
        }
        return in_set(in[0], set) && out[0] == in[0] && (n_out < 2 || out[1] == GFP_I64);
    }
    case K_MATMUL:
        return in_set(in[0], S_FLOAT | S_HALF | S_INT) && in[1] == in[0] && out[0] == in[0];
    case K_SOFTMAX:
    case K_LAYER_NORM:
    case K_BATCH_NORM:
        return in_set(in[0], S_FLOAT) && all_are(in + 1, n_in - 1, in[0], true) &&
               all_are(out, n_out, in[0], false);
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
    default: return false;
    }
}

/* The answer is the same for every device of the plugin (every device runs
 * the same kernels), so device is not used. */
gfp_status cu_query_op(void *device, const gfp_op_query *q, uint32_t *support) {
    (void)device;
    if (!support) return cu_fail(GFP_ERR_INVALID, "query_op: support is NULL");
    *support = GFP_SUPPORT_NONE;
    if (!q) return cu_fail(GFP_ERR_INVALID, "query_op: query is NULL");
    if (q->struct_size < GFP_OP_QUERY_SIZE_V1_0)
        return cu_fail(GFP_ERR_INVALID, "query_op: query struct_size is %u, at least %zu needed",
                       (unsigned)q->struct_size, (size_t)GFP_OP_QUERY_SIZE_V1_0);
    if (q->n_inputs > 8 || q->n_outputs > 4)
        return cu_fail(GFP_ERR_INVALID,
                       "query_op: %u inputs and %u outputs exceed the query's 8 and 4 slots",
                       (unsigned)q->n_inputs, (unsigned)q->n_outputs);
    op_kind k = kind_of(q->op);
    if (k != K_NONE && counts_ok(q->op, k, q->n_inputs, q->n_outputs) &&
        accepts(q->op, q->input_dtypes, q->n_inputs, q->output_dtypes, q->n_outputs))
        *support = GFP_SUPPORT_STRIDED;
    return GFP_OK;
}

/* ------------------------------------------------------------ descriptors */
int64_t cu_numel(const gfp_tensor *t) {
    int64_t n = 1;
    for (int d = 0; d < t->rank; d++) n *= t->sizes[d];
    return n;
}

bool cu_is_contiguous(const gfp_tensor *t) {
    int64_t expect = 1;
    for (int d = t->rank - 1; d >= 0; d--) {
        if (t->sizes[d] != 1 && t->strides[d] != expect) return false;
        expect *= t->sizes[d];
    }
    return true;
}

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

gfp_status cu_check_params(const void *params, size_t min_size, const char *op) {
    if (!params)
        return cu_fail(GFP_ERR_INVALID, "%s: the parameter struct is NULL; this op needs one", op);
    uint32_t size;
    memcpy(&size, params, sizeof size);
    if (size < min_size)
        return cu_fail(GFP_ERR_INVALID,
                       "%s: parameter struct_size is %u bytes, at least %zu are needed (set "
                       "struct_size = sizeof the struct)",
                       op, (unsigned)size, min_size);
    return GFP_OK;
}

static gfp_status check_tensor(const cu_device *dev, uint32_t op, const char *role, uint32_t i,
                               const gfp_tensor *t) {
    const char *name = cu_op_name(op);
    if (t->struct_size < GFP_TENSOR_SIZE_V1_0)
        return cu_fail(GFP_ERR_INVALID, "%s: %s %u has struct_size %u, at least %zu needed", name,
                       role, (unsigned)i, (unsigned)t->struct_size, (size_t)GFP_TENSOR_SIZE_V1_0);
    if (t->rank < 0 || t->rank > GFP_MAX_RANK)
        return cu_fail(GFP_ERR_INVALID, "%s: %s %u has rank %d, outside [0, %d]", name, role,
                       (unsigned)i, (int)t->rank, GFP_MAX_RANK);
    if (cu_dtype_size(t->dtype) == 0)
        return cu_fail(GFP_ERR_UNSUPPORTED, "%s: %s %u has unknown dtype %d", name, role,
                       (unsigned)i, (int)t->dtype);
    for (int d = 0; d < t->rank; d++)
        if (t->sizes[d] < 0 || t->strides[d] < 0)
            return cu_fail(GFP_ERR_INVALID,
                           "%s: %s %u has size %lld and stride %lld in dim %d; both must be >= 0",
                           name, role, (unsigned)i, (long long)t->sizes[d],
                           (long long)t->strides[d], d);
    const cu_buffer *b = t->buffer;
    if (cu_numel(t) == 0 && !b) return GFP_OK;
    if (!b) return cu_fail(GFP_ERR_INVALID, "%s: %s %u has a NULL buffer", name, role, (unsigned)i);
    if (b->magic != CU_BUFFER_MAGIC || b->dev != dev)
        return cu_fail(GFP_ERR_INVALID,
                       "%s: %s %u's buffer is not a live buffer of this cuda device (freed "
                       "already, or from another device or plugin)",
                       name, role, (unsigned)i);
    uint64_t esize = cu_dtype_size(t->dtype);
    if (t->offset % esize)
        return cu_fail(GFP_ERR_INVALID,
                       "%s: %s %u starts at byte offset %llu, not a multiple of its %llu-byte "
                       "elements (a misaligned access would end the CUDA context)",
                       name, role, (unsigned)i, (unsigned long long)t->offset,
                       (unsigned long long)esize);
    if (cu_numel(t) == 0) return GFP_OK;
    uint64_t last = 0; /* element offset of the last element reached */
    for (int d = 0; d < t->rank; d++) {
        uint64_t span = (uint64_t)(t->sizes[d] - 1), stride = (uint64_t)t->strides[d];
        if (stride && span > (UINT64_MAX / 2 - last) / stride) {
            last = UINT64_MAX / 2;
            break;
        }
        last += span * stride;
    }
    if (t->offset > b->nbytes || last >= (b->nbytes - t->offset) / esize)
        return cu_fail(GFP_ERR_INVALID,
                       "%s: %s %u reaches element %llu from byte offset %llu, past the end of its "
                       "%llu-byte buffer (check sizes, strides and offset)",
                       name, role, (unsigned)i, (unsigned long long)last,
                       (unsigned long long)t->offset, (unsigned long long)b->nbytes);
    return GFP_OK;
}

static gfp_status unsupported(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                              const gfp_tensor *const *out, uint32_t n_out) {
    char ins[96] = "", outs[64] = "";
    size_t a = 0, b = 0;
    for (uint32_t i = 0; i < n_in && a < sizeof ins; i++)
        a += (size_t)snprintf(ins + a, sizeof ins - a, i ? ", %s" : "%s",
                              in[i] ? cu_dtype_name(in[i]->dtype) : "-");
    for (uint32_t i = 0; i < n_out && b < sizeof outs; i++)
        b += (size_t)snprintf(outs + b, sizeof outs - b, i ? ", %s" : "%s",
                              cu_dtype_name(out[i]->dtype));
    return cu_fail(GFP_ERR_UNSUPPORTED,
                   "%s: the cuda plugin does not provide it for dtypes (%s) -> (%s) (see "
                   "query_op; convert with a COPY first)",
                   cu_op_name(op), ins, outs);
}

gfp_status cu_launch(void *device, uint32_t op, const gfp_tensor *const *inputs,
                     uint32_t n_inputs, const gfp_tensor *const *outputs, uint32_t n_outputs,
                     const void *params) {
    cu_device *dev = device;
    op_kind k = kind_of(op);
    const char *name = cu_op_name(op);
    if (k == K_NONE)
        return cu_fail(GFP_ERR_UNSUPPORTED,
                       "op id %u is not an op the cuda plugin knows (unknown or newer than ABI "
                       "%d.%d)",
                       (unsigned)op, GFP_ABI_MAJOR, GFP_ABI_MINOR);
    if (!counts_ok(op, k, n_inputs, n_outputs))
        return cu_fail(GFP_ERR_INVALID, "%s: got %u input(s) and %u output(s), which it does not "
                       "take (see abi/graft_plugin.h)", name, (unsigned)n_inputs,
                       (unsigned)n_outputs);
    if ((n_inputs && !inputs) || !outputs)
        return cu_fail(GFP_ERR_INVALID, "%s: the inputs or outputs array is NULL", name);
    int32_t in_dt[8], out_dt[4];
    gfp_status st = GFP_OK;
    for (uint32_t i = 0; i < n_inputs && st == GFP_OK; i++) {
        in_dt[i] = inputs[i] ? inputs[i]->dtype : -1;
        if (inputs[i]) st = check_tensor(dev, op, "input", i, inputs[i]);
    }
    for (uint32_t i = 0; i < n_outputs && st == GFP_OK; i++) {
        if (!outputs[i]) return cu_fail(GFP_ERR_INVALID, "%s: output %u is NULL", name, (unsigned)i);
        out_dt[i] = outputs[i]->dtype;
        st = check_tensor(dev, op, "output", i, outputs[i]);
    }
    if (st != GFP_OK) return st;
    /* Only layer_norm, batch_norm and conv2d's bias may be absent. */
    for (uint32_t i = 0; i < n_inputs; i++)
        if (!inputs[i] && !(i > 0 && (k == K_LAYER_NORM || k == K_BATCH_NORM)) &&
            !(k == K_CONV && op == GFP_OP_CONV2D && i == 2))
            return cu_fail(GFP_ERR_INVALID, "%s: input %u is NULL", name, (unsigned)i);
    if (!accepts(op, in_dt, n_inputs, out_dt, n_outputs))
        return unsupported(op, inputs, n_inputs, outputs, n_outputs);
    if ((st = cu_use(dev, name)) != GFP_OK) return st;

    switch (k) {
    case K_REDUCE: return cu_reduce_launch(dev, op, inputs, n_inputs, outputs, n_outputs, params);
    case K_SOFTMAX:
    case K_LAYER_NORM:
    case K_BATCH_NORM: return cu_norm_launch(dev, op, inputs, n_inputs, outputs, n_outputs, params);
    case K_INDEX: return cu_index_launch(dev, op, inputs, n_inputs, outputs, n_outputs, params);
    case K_MATMUL: return cu_matmul_launch(dev, inputs, n_inputs, outputs, n_outputs);
    case K_CONV: return cu_conv_launch(dev, op, inputs, n_inputs, outputs, n_outputs, params);
    case K_POOL: return cu_pool_launch(dev, op, inputs, n_inputs, outputs, n_outputs, params);
    default: return cu_elementwise_launch(dev, op, inputs, n_inputs, outputs[0], params);
    }
}

/* ------------------------------------------------------------ helpers for families */
/* An iterator over dst's shape for dst and (when given) src. */
static void iter_of(cuk_iter *it, const cuk_tensor *dst, const cuk_tensor *src) {
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
    iter_of(&it, dst, src);
    if (it.numel == 0) return GFP_OK;
    return cu_check(cuk_copy(dev->stream, &it), op, "the copy kernel launch");
}

gfp_status cu_zero_tensor(cu_device *dev, const cuk_tensor *t, const char *op) {
    cuk_iter it;
    iter_of(&it, t, NULL);
    if (it.numel == 0) return GFP_OK;
    return cu_check(cuk_fill(dev->stream, &it, 0.0, 0, 1), op, "the fill kernel launch");
}

gfp_status cu_contiguous_in(cu_device *dev, const gfp_tensor *t, cuk_tensor *out, void **owned,
                            const char *op) {
    *owned = NULL;
    *out = cu_view(t);
    if (cu_is_contiguous(t)) return GFP_OK;
    int64_t n = cu_numel(t);
    gfp_status st = cu_temp_alloc(dev, (uint64_t)n * cu_dtype_size(t->dtype), owned, op);
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
