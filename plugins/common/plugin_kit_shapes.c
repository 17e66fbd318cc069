/* SPDX-License-Identifier: BSD-3-Clause */
/* plugin_kit_shapes.c — the dtype and shape rules of the norm, reduce,
 * index, matmul and random families (see plugin_kit.h), with the messages
 * every plugin gives. Compiled into each plugin beside plugin_kit.c. */
#include <stdio.h>
#include <string.h>

#include "plugin_kit.h"

static const char *plugin_name(void) { return pk_self ? pk_self->name : "this"; }

/* "f32, f64 or f16": the dtypes of a set, for messages. */
static const char *dtype_list(uint32_t dtypes, char *buf, size_t cap) {
    size_t n = 0, count = 0, total = 0;
    buf[0] = '\0';
    for (int32_t d = 0; d < GFP_DTYPE_COUNT; d++) total += pk_dtype_in(d, dtypes);
    for (int32_t d = 0; d < GFP_DTYPE_COUNT && n < cap; d++) {
        if (!pk_dtype_in(d, dtypes)) continue;
        const char *sep = count == 0 ? "" : count + 1 == total ? " or " : ", ";
        n += (size_t)snprintf(buf + n, cap - n, "%s%s", sep, pk_dtype_name(d));
        count++;
    }
    return buf;
}

bool pk_dtype_in(int32_t dt, uint32_t dtypes) {
    return dt >= 0 && dt < GFP_DTYPE_COUNT && (dtypes & GFP_DTYPE_BIT(dt)) != 0;
}

bool pk_has_sizes(const gfp_tensor *t, int rank, const int64_t *sizes) {
    if (t->rank != rank) return false;
    for (int d = 0; d < rank; d++)
        if (t->sizes[d] != sizes[d]) return false;
    return true;
}

gfp_tensor pk_at_least_1d(const gfp_tensor *t) {
    gfp_tensor v = *t;
    if (v.rank == 0) {
        v.rank = 1;
        v.sizes[0] = 1;
        v.strides[0] = 0;
    }
    return v;
}

/* ------------------------------------------------------------ norm */
static bool is_norm_forward(uint32_t op) {
    return op == GFP_OP_SOFTMAX || op == GFP_OP_LOG_SOFTMAX || op == GFP_OP_LAYER_NORM ||
           op == GFP_OP_BATCH_NORM;
}

bool pk_norm_dtypes_ok(uint32_t op, const int32_t *in, uint32_t n_in, const int32_t *out,
                       uint32_t n_out, uint32_t dtypes) {
    if (!is_norm_forward(op) || n_in == 0 || !pk_dtype_in(in[0], dtypes)) return false;
    for (uint32_t i = 1; i < n_in; i++)
        if (in[i] != -1 && in[i] != in[0]) return false;
    for (uint32_t i = 0; i < n_out; i++)
        if (out[i] != in[0]) return false;
    return true;
}

static const char *const softmax_roles[] = {"input", "output"};
static const char *const layer_norm_roles[] = {"x", "weight", "bias", "y", "mean", "rstd"};
static const char *const batch_norm_roles[] = {"x",           "weight", "bias",      "running_mean",
                                               "running_var", "y",      "save_mean", "save_invstd"};

static gfp_status check_softmax(uint32_t op, const void *params, const gfp_tensor *x,
                                const gfp_tensor *y) {
    const char *name = pk_op_name(op);
    gfp_status st = pk_check_params(params, GFP_DIM_PARAMS_SIZE_V1_0, name);
    if (st != GFP_OK) return st;
    int dim = ((const gfp_dim_params *)params)->dim;
    int max_dim = x->rank > 0 ? x->rank : 1; /* a 0-dim tensor is one line of one */
    if (dim < 0 || dim >= max_dim)
        return pk_fail(GFP_ERR_INVALID, "%s: dim %d is out of range for a tensor of rank %d", name,
                       dim, (int)x->rank);
    if (!pk_same_shape(x, y))
        return pk_fail(GFP_ERR_INVALID, "%s: the output must have the input's shape", name);
    return GFP_OK;
}

static gfp_status check_layer_norm(const void *params, const gfp_tensor *const *in,
                                   const gfp_tensor *const *out) {
    gfp_status st = pk_check_params(params, GFP_LAYER_NORM_PARAMS_SIZE_V1_0, "layer_norm");
    if (st != GFP_OK) return st;
    const gfp_layer_norm_params *p = params;
    const gfp_tensor *x = in[0], *w = in[1], *b = in[2], *y = out[0], *mean = out[1],
                     *rstd = out[2];
    int nr = p->normalized_rank, outer = x->rank - nr;
    if (nr < 1 || nr > x->rank)
        return pk_fail(GFP_ERR_INVALID,
                       "layer_norm: normalized_rank %d must be in [1, %d] (the rank of x)", nr,
                       (int)x->rank);
    const int64_t *inner = x->sizes + outer;
    if (!pk_same_shape(x, y)) return pk_fail(GFP_ERR_INVALID, "layer_norm: y must have x's shape");
    if ((w && !pk_has_sizes(w, nr, inner)) || (b && !pk_has_sizes(b, nr, inner)))
        return pk_fail(GFP_ERR_INVALID,
                       "layer_norm: weight and bias must have the shape of x's last %d dim(s)",
                       nr);
    if (!pk_has_sizes(mean, outer, x->sizes) || !pk_has_sizes(rstd, outer, x->sizes))
        return pk_fail(GFP_ERR_INVALID,
                       "layer_norm: mean and rstd must have the shape of x's first %d dim(s)",
                       outer);
    return GFP_OK;
}

static gfp_status check_batch_norm(const void *params, const gfp_tensor *const *in,
                                   const gfp_tensor *const *out) {
    gfp_status st = pk_check_params(params, GFP_BATCH_NORM_PARAMS_SIZE_V1_0, "batch_norm");
    if (st != GFP_OK) return st;
    const gfp_batch_norm_params *p = params;
    const gfp_tensor *x = in[0], *y = out[0];
    if (x->rank < 2)
        return pk_fail(GFP_ERR_INVALID,
                       "batch_norm: x has rank %d; it must be [N, C, ...] (rank >= 2)",
                       (int)x->rank);
    if (p->training > 1)
        return pk_fail(GFP_ERR_INVALID, "batch_norm: training is %u; it must be 0 or 1",
                       (unsigned)p->training);
    if (!p->training && (!in[3] || !in[4]))
        return pk_fail(GFP_ERR_INVALID,
                       "batch_norm: evaluation mode (training = 0) needs running_mean and "
                       "running_var");
    if (!pk_same_shape(x, y)) return pk_fail(GFP_ERR_INVALID, "batch_norm: y must have x's shape");
    /* weight, bias, running_mean, running_var, save_mean, save_invstd */
    const gfp_tensor *per_c[6] = {in[1], in[2], in[3], in[4], out[1], out[2]};
    static const int role[6] = {1, 2, 3, 4, 6, 7};
    for (int i = 0; i < 6; i++)
        if (per_c[i] && !pk_has_sizes(per_c[i], 1, &x->sizes[1]))
            return pk_fail(GFP_ERR_INVALID, "batch_norm: %s must be 1-D with C = %lld elements",
                           batch_norm_roles[role[i]], (long long)x->sizes[1]);
    return GFP_OK;
}

gfp_status pk_check_norm(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                         const gfp_tensor *const *out, uint32_t n_out, const void *params,
                         uint32_t dtypes) {
    const char *name = pk_op_name(op);
    const char *const *roles = op == GFP_OP_LAYER_NORM   ? layer_norm_roles
                               : op == GFP_OP_BATCH_NORM ? batch_norm_roles
                                                         : softmax_roles;
    if (!is_norm_forward(op) || n_in == 0 || n_out == 0 || n_in > 8 || n_out > 4)
        return pk_fail(GFP_ERR_UNSUPPORTED, "%s: not a forward op of the norm family", name);
    int32_t in_dt[8], out_dt[4];
    for (uint32_t i = 0; i < n_in; i++) in_dt[i] = in[i] ? in[i]->dtype : -1;
    for (uint32_t i = 0; i < n_out; i++) out_dt[i] = out[i]->dtype;
    if (!pk_norm_dtypes_ok(op, in_dt, n_in, out_dt, n_out, dtypes)) {
        /* Name the first tensor that breaks the rule. */
        uint32_t bad = 0;
        if (pk_dtype_in(in_dt[0], dtypes))
            for (bad = 1; bad < n_in + n_out; bad++) {
                int32_t dt = bad < n_in ? in_dt[bad] : out_dt[bad - n_in];
                if (dt != -1 && dt != in_dt[0]) break;
            }
        int32_t bad_dt = bad < n_in ? in_dt[bad] : out_dt[bad - n_in];
        char list[64];
        return pk_fail(GFP_ERR_UNSUPPORTED,
                       "%s: the %s plugin takes %s, every tensor alike; %s is %s (%s is %s)", name,
                       plugin_name(), dtype_list(dtypes, list, sizeof list), roles[bad],
                       pk_dtype_name(bad_dt), roles[0], pk_dtype_name(in_dt[0]));
    }
    switch (op) {
    case GFP_OP_LAYER_NORM: return check_layer_norm(params, in, out);
    case GFP_OP_BATCH_NORM: return check_batch_norm(params, in, out);
    default: return check_softmax(op, params, in[0], out[0]);
    }
}

/* ------------------------------------------------------------ reduce */
bool pk_reduce_by_dim(uint32_t op) { return op == GFP_OP_MAX_DIM || op == GFP_OP_MIN_DIM; }

bool pk_reduce_dtypes_ok(uint32_t op, int32_t in, int32_t out, int32_t indices, uint32_t dtypes,
                         uint32_t floats) {
    uint32_t takes;
    switch (op) {
    case GFP_OP_MEAN:
    case GFP_OP_VAR:
    case GFP_OP_LOGSUMEXP: takes = floats; break;
    case GFP_OP_AMAX:
    case GFP_OP_AMIN: takes = dtypes; break;
    default: takes = dtypes & ~PK_DT(GFP_BOOL); break;
    }
    if (gfp_op_family_of(op) != GFP_FAMILY_REDUCE || !pk_dtype_in(in, dtypes & takes) || out != in)
        return false;
    return !pk_reduce_by_dim(op) || indices == GFP_I64;
}

gfp_status pk_check_reduce(uint32_t op, const void *params, const gfp_tensor *x,
                           const gfp_tensor *y, const gfp_tensor *ind, uint32_t dtypes,
                           uint32_t floats) {
    const char *name = pk_op_name(op);
    bool by_dim = pk_reduce_by_dim(op);
    gfp_status st = pk_check_params(params, GFP_REDUCE_PARAMS_SIZE_V1_0, name);
    if (st != GFP_OK) return st;
    if (by_dim && !ind)
        return pk_fail(GFP_ERR_INVALID, "%s: the indices output is missing (NULL)", name);
    if (!pk_reduce_dtypes_ok(op, x->dtype, y->dtype, by_dim ? ind->dtype : GFP_I64, dtypes,
                             floats))
        return pk_fail(GFP_ERR_UNSUPPORTED, "%s: the %s plugin does not reduce %s to %s%s%s", name,
                       plugin_name(), pk_dtype_name(x->dtype), pk_dtype_name(y->dtype),
                       by_dim ? " with indices " : "", by_dim ? pk_dtype_name(ind->dtype) : "");
    uint32_t dims = ((const gfp_reduce_params *)params)->dims;
    if ((uint64_t)dims >> x->rank != 0)
        return pk_fail(GFP_ERR_INVALID, "%s: dims mask 0x%x names a dim >= the input's rank %d",
                       name, (unsigned)dims, (int)x->rank);
    if (by_dim && (dims == 0 || (dims & (dims - 1)) != 0))
        return pk_fail(GFP_ERR_INVALID, "%s: dims mask 0x%x must have exactly one bit set", name,
                       (unsigned)dims);
    bool ok = y->rank == x->rank;
    int64_t line = 1;
    for (int d = 0; d < x->rank; d++) {
        bool reduced = (dims >> d) & 1u;
        if (reduced) line *= x->sizes[d];
        ok = ok && y->sizes[d] == (reduced ? 1 : x->sizes[d]);
    }
    if (!ok)
        return pk_fail(GFP_ERR_INVALID,
                       "%s: the output must have the input's rank (%d) and sizes, with size 1 in "
                       "each reduced dim (mask 0x%x)",
                       name, (int)x->rank, (unsigned)dims);
    if (ind && !pk_same_shape(ind, y))
        return pk_fail(GFP_ERR_INVALID, "%s: the indices output must have the values' shape", name);
    bool extreme = op == GFP_OP_AMAX || op == GFP_OP_AMIN || by_dim;
    if (extreme && line == 0)
        return pk_fail(GFP_ERR_INVALID,
                       "%s: cannot reduce over zero elements (a reduced dim has size 0); the "
                       "operation has no identity",
                       name);
    return GFP_OK;
}

/* ------------------------------------------------------------ index */
static bool index_selecting(uint32_t op) {
    return op == GFP_OP_INDEX_SELECT || op == GFP_OP_GATHER;
}

bool pk_index_dtypes_ok(uint32_t op, int32_t data, int32_t index, int32_t out, uint32_t dtypes) {
    uint32_t takes = dtypes & (index_selecting(op) ? ~0u : ~PK_DT(GFP_BOOL));
    return gfp_op_family_of(op) == GFP_FAMILY_INDEX && pk_dtype_in(data, takes) &&
           index == GFP_I64 && out == data;
}

static bool same_but_dim(const gfp_tensor *a, const gfp_tensor *b, int dim) {
    if (a->rank != b->rank) return false;
    for (int d = 0; d < a->rank; d++)
        if (d != dim && a->sizes[d] != b->sizes[d]) return false;
    return true;
}

gfp_status pk_index_out_of_range(const char *name, int64_t value, int dim, int64_t limit) {
    return pk_fail(GFP_ERR_INVALID,
                   "%s: index %lld is out of range for dim %d of size %lld (valid range [0, "
                   "%lld))",
                   name, (long long)value, dim, (long long)limit, (long long)limit);
}

gfp_status pk_check_index(uint32_t op, const void *params, const gfp_tensor *data_in,
                          const gfp_tensor *index_in, const gfp_tensor *y_in, uint32_t dtypes,
                          pk_index_geom *g) {
    const char *name = pk_op_name(op);
    bool selecting = index_selecting(op);
    gfp_status st = pk_check_params(params, GFP_DIM_PARAMS_SIZE_V1_0, name);
    if (st != GFP_OK) return st;
    if (!pk_index_dtypes_ok(op, data_in->dtype, index_in->dtype, y_in->dtype, dtypes)) {
        char list[64];
        return pk_fail(GFP_ERR_UNSUPPORTED,
                       "%s: the %s plugin does not take data %s -> %s with index %s (data %s, "
                       "the same in and out; index i64)",
                       name, plugin_name(), pk_dtype_name(data_in->dtype),
                       pk_dtype_name(y_in->dtype), pk_dtype_name(index_in->dtype),
                       dtype_list(dtypes & (selecting ? ~0u : ~PK_DT(GFP_BOOL)), list,
                                  sizeof list));
    }
    gfp_tensor data = pk_at_least_1d(data_in), y = pk_at_least_1d(y_in);
    gfp_tensor index = pk_at_least_1d(index_in);
    int dim = ((const gfp_dim_params *)params)->dim;
    if (dim < 0 || dim >= data.rank)
        return pk_fail(GFP_ERR_INVALID, "%s: dim %d is out of range for a tensor of rank %d", name,
                       dim, (int)data_in->rank);
    const gfp_tensor *indexed = selecting ? &data : &y; /* the tensor index points into */
    const gfp_tensor *walked = selecting ? &y : &data;
    g->dim = dim;
    g->limit = indexed->sizes[dim];
    if (op == GFP_OP_INDEX_SELECT || op == GFP_OP_INDEX_ADD) {
        if (index_in->rank > 1)
            return pk_fail(GFP_ERR_INVALID, "%s: index must be 1-D; it has rank %d", name,
                           (int)index_in->rank);
        int64_t n_index = pk_numel(index_in);
        if (!same_but_dim(&data, &y, dim) || walked->sizes[dim] != n_index)
            return pk_fail(GFP_ERR_INVALID,
                           "%s: %s must have %s's shape except in dim %d, where its size must be "
                           "the index's length %lld",
                           name, selecting ? "y" : "src", selecting ? "x" : "y", dim,
                           (long long)n_index);
        return GFP_OK;
    }
    if (index.rank != data.rank || y.rank != data.rank)
        return pk_fail(GFP_ERR_INVALID,
                       "%s: %s, index and y must have the same rank (got %d, %d, %d)", name,
                       selecting ? "x" : "src", (int)data.rank, (int)index.rank, (int)y.rank);
    if (selecting && !pk_same_shape(&y, &index))
        return pk_fail(GFP_ERR_INVALID, "%s: y must have the index's shape", name);
    for (int d = 0; d < index.rank; d++) {
        if (d != dim && index.sizes[d] > indexed->sizes[d])
            return pk_fail(GFP_ERR_INVALID,
                           "%s: index has size %lld in dim %d, larger than %s's %lld", name,
                           (long long)index.sizes[d], d, selecting ? "x" : "y",
                           (long long)indexed->sizes[d]);
        if (!selecting && index.sizes[d] > walked->sizes[d])
            return pk_fail(GFP_ERR_INVALID,
                           "%s: index has size %lld in dim %d, larger than src's %lld", name,
                           (long long)index.sizes[d], d, (long long)walked->sizes[d]);
    }
    return GFP_OK;
}

/* ------------------------------------------------------------ matmul */
bool pk_matmul_dtypes_ok(int32_t a, int32_t b, int32_t y, uint32_t dtypes) {
    return pk_dtype_in(a, dtypes & ~PK_DT(GFP_BOOL)) && b == a && y == a;
}

gfp_status pk_check_matmul(const gfp_tensor *a, const gfp_tensor *b, const gfp_tensor *y,
                           uint32_t dtypes) {
    if (!pk_matmul_dtypes_ok(a->dtype, b->dtype, y->dtype, dtypes)) {
        char list[64];
        return pk_fail(GFP_ERR_UNSUPPORTED,
                       "matmul: the %s plugin does not multiply %s by %s into %s (it takes %s, "
                       "all three alike)",
                       plugin_name(), pk_dtype_name(a->dtype), pk_dtype_name(b->dtype),
                       pk_dtype_name(y->dtype),
                       dtype_list(dtypes & ~PK_DT(GFP_BOOL), list, sizeof list));
    }
    int r = a->rank;
    if (r < 2)
        return pk_fail(GFP_ERR_INVALID,
                       "matmul: a has rank %d; it must be >= 2 (the core promotes 1-D operands)",
                       r);
    if (b->rank != r || y->rank != r)
        return pk_fail(GFP_ERR_INVALID,
                       "matmul: a, b and y must have the same rank (got %d, %d, %d); the core "
                       "broadcasts batch dims before launch",
                       r, (int)b->rank, (int)y->rank);
    for (int d = 0; d < r - 2; d++)
        if (b->sizes[d] != a->sizes[d] || y->sizes[d] != a->sizes[d])
            return pk_fail(GFP_ERR_INVALID,
                           "matmul: batch dim %d differs (a %lld, b %lld, y %lld); broadcast "
                           "batch dims must come as equal sizes with stride 0",
                           d, (long long)a->sizes[d], (long long)b->sizes[d],
                           (long long)y->sizes[d]);
    int64_t m = a->sizes[r - 2], k = a->sizes[r - 1], n = b->sizes[r - 1];
    if (b->sizes[r - 2] != k)
        return pk_fail(GFP_ERR_INVALID,
                       "matmul: a is [..., %lld, %lld] but b is [..., %lld, %lld]; a's last dim "
                       "must equal b's second to last",
                       (long long)m, (long long)k, (long long)b->sizes[r - 2], (long long)n);
    if (y->sizes[r - 2] != m || y->sizes[r - 1] != n)
        return pk_fail(GFP_ERR_INVALID,
                       "matmul: y is [..., %lld, %lld]; it must be [..., %lld, %lld]",
                       (long long)y->sizes[r - 2], (long long)y->sizes[r - 1], (long long)m,
                       (long long)n);
    return GFP_OK;
}

/* ------------------------------------------------------------ random */
gfp_status pk_check_random(const void *params, const gfp_tensor *y, uint32_t floats) {
    gfp_status st = pk_check_params(params, GFP_RANDOM_PARAMS_SIZE_V1_0, "random");
    if (st != GFP_OK) return st;
    const gfp_random_params *p = params;
    if (p->kind > GFP_RANDOM_BERNOULLI)
        return pk_fail(GFP_ERR_INVALID,
                       "random: kind %u is not uniform (0), normal (1) or bernoulli (2)",
                       (unsigned)p->kind);
    if (p->kind != GFP_RANDOM_BERNOULLI && !pk_dtype_in(y->dtype, floats)) {
        char list[64];
        return pk_fail(GFP_ERR_UNSUPPORTED,
                       "random: %s numbers need an output of %s, got %s (only bernoulli fills "
                       "integer and bool outputs)",
                       p->kind == GFP_RANDOM_UNIFORM ? "uniform" : "normal",
                       dtype_list(floats, list, sizeof list), pk_dtype_name(y->dtype));
    }
    return GFP_OK;
}

/* ------------------------------------------------------------ elementwise */
static const char *shape_text(const gfp_tensor *t, char *buf, size_t len) {
    size_t n = (size_t)snprintf(buf, len, "[");
    for (int d = 0; d < t->rank && n < len; d++)
        n += (size_t)snprintf(buf + n, len - n, d ? ", %lld" : "%lld", (long long)t->sizes[d]);
    if (n < len) snprintf(buf + n, len - n, "]");
    return buf;
}

const char *pk_dtypes_text(const gfp_tensor *const *t, uint32_t n, char *buf, size_t len) {
    size_t used = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; i < n && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, i ? ", %s" : "%s",
                                 t[i] ? pk_dtype_name(t[i]->dtype) : "-");
    return buf;
}

gfp_status pk_check_elementwise(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                                const gfp_tensor *y) {
    const char *name = pk_op_name(op);
    for (uint32_t k = 0; k < n_in; k++) {
        if (pk_same_shape(in[k], y)) continue;
        char a[160], b[160];
        return pk_fail(GFP_ERR_INVALID,
                       "%s: input %u has shape %s but the output has shape %s; elementwise "
                       "operands must have the output's sizes (broadcast with stride 0)",
                       name, (unsigned)k, shape_text(in[k], a, sizeof a),
                       shape_text(y, b, sizeof b));
    }
    gfp_op_family f = gfp_op_family_of(op);
    if (f == GFP_FAMILY_TRI && y->rank < 2)
        return pk_fail(GFP_ERR_INVALID, "%s: needs rank >= 2, got rank %d", name, (int)y->rank);
    if (op == GFP_OP_ARANGE && y->rank != 1)
        return pk_fail(GFP_ERR_INVALID, "%s: the output must be 1-D, got rank %d", name,
                       (int)y->rank);
    return GFP_OK;
}

void pk_ew_operands(const gfp_tensor *const *in, uint32_t n_in, const gfp_tensor *y,
                    const gfp_tensor *t[4], int32_t in_dt[3]) {
    t[0] = y;
    for (uint32_t i = 0; i < 3; i++) {
        t[i + 1] = i < n_in ? in[i] : NULL;
        in_dt[i] = i < n_in ? in[i]->dtype : -1;
    }
}

/* ------------------------------------------------------------ conv and pool */
bool pk_conv_dtypes_ok(const gfp_op_query *q, uint32_t floats) {
    int32_t dt = q->input_dtypes[0];
    if (gfp_op_family_of(q->op) != GFP_FAMILY_CONV || !pk_dtype_in(dt, floats)) return false;
    bool bias_ok = q->op == GFP_OP_CONV2D &&
                   (q->n_inputs < 3 || q->input_dtypes[2] == -1 || q->input_dtypes[2] == dt);
    return q->input_dtypes[1] == dt && q->output_dtypes[0] == dt &&
           (q->n_inputs < 3 || bias_ok);
}

bool pk_pool_dtypes_ok(const gfp_op_query *q, uint32_t floats) {
    int32_t dt = q->input_dtypes[0];
    if (gfp_op_family_of(q->op) != GFP_FAMILY_POOL || !pk_dtype_in(dt, floats)) return false;
    switch (q->op) {
    case GFP_OP_MAX_POOL2D: /* x -> y, indices */
        return q->output_dtypes[0] == dt && q->output_dtypes[1] == GFP_I64;
    case GFP_OP_MAX_POOL2D_BACKWARD: /* grad_y, indices -> grad_x */
        return q->input_dtypes[1] == GFP_I64 && q->output_dtypes[0] == dt;
    default: return q->output_dtypes[0] == dt; /* avg pool and its backward */
    }
}

void pk_unary_args_of(uint32_t op, const void *params, int32_t dtype, pk_unary_args *u) {
    memset(u, 0, sizeof *u);
    /* The params struct the table names was checked by the launch preamble. */
    gfp_params_kind kind = (gfp_params_kind)gfp_op_lookup(op)->params;
    if (kind == GFP_PARAMS_scalar) {
        const gfp_scalar_params *p = params;
        u->a = p->a;
        u->b = p->b;
    } else if (kind == GFP_PARAMS_clamp) {
        const gfp_clamp_params *p = params;
        /* A NaN bound compares false with everything: it bounds nothing. */
        u->has_a = p->has_min && p->min == p->min;
        u->has_b = p->has_max && p->max == p->max;
        u->a = p->min;
        u->b = p->max;
        if (!pk_dtype_in(dtype, PK_DT_FLOAT | PK_DT(GFP_F16) | PK_DT(GFP_BF16))) {
            u->ia = u->has_a ? pk_trunc_i64(p->min) : 0;
            u->ib = u->has_b ? pk_trunc_i64(p->max) : 0;
        }
    }
}

gfp_status pk_check_norm_backward(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                                  const gfp_tensor *const *out, uint32_t n_out,
                                  const void *params, uint32_t dtypes) {
    bool layer = op == GFP_OP_LAYER_NORM_BACKWARD;
    const char *name = pk_op_name(op);
    gfp_status st = pk_expect_counts(n_in, 5, n_out, 3, name);
    if (st == GFP_OK && layer) st = pk_check_params(params, GFP_LAYER_NORM_PARAMS_SIZE_V1_0, name);
    if (st != GFP_OK) return st;
    static const char *const lroles[] = {"grad_y", "x",      "mean",        "rstd",
                                         "weight", "grad_x", "grad_weight", "grad_bias"};
    static const char *const broles[] = {"grad_y", "x",      "save_mean",   "save_invstd",
                                         "weight", "grad_x", "grad_weight", "grad_bias"};
    const char *const *roles = layer ? lroles : broles;
    const gfp_tensor *t[8] = {in[0], in[1], in[2], in[3], in[4], out[0], out[1], out[2]};
    for (int i = 0; i < 8; i++)
        if (!t[i] && i != 4)
            return pk_fail(GFP_ERR_INVALID, "%s: the %s tensor is missing (NULL)", name, roles[i]);
    int32_t dt = t[0]->dtype;
    if (!pk_dtype_in(dt, dtypes)) {
        char list[64];
        return pk_fail(GFP_ERR_UNSUPPORTED, "%s: grad_y is %s; this plugin takes %s", name,
                       pk_dtype_name(dt), dtype_list(dtypes, list, sizeof list));
    }
    for (int i = 1; i < 8; i++)
        if (t[i] && t[i]->dtype != dt)
            return pk_fail(GFP_ERR_UNSUPPORTED, "%s: %s is %s but grad_y is %s; every tensor must "
                           "have one dtype", name, roles[i], pk_dtype_name(t[i]->dtype),
                           pk_dtype_name(dt));
    const gfp_tensor *x = t[1];
    if (!pk_same_shape(x, t[0]) || !pk_same_shape(x, t[5]))
        return pk_fail(GFP_ERR_INVALID, "%s: grad_y and grad_x must have x's shape", name);
    if (!layer) {
        if (x->rank < 2)
            return pk_fail(GFP_ERR_INVALID, "%s: x has rank %d; it must be [N, C, ...] (rank >= "
                           "2)", name, (int)x->rank);
        const int idx[5] = {4, 2, 3, 6, 7};
        for (int i = 0; i < 5; i++)
            if (t[idx[i]] && !pk_has_sizes(t[idx[i]], 1, &x->sizes[1]))
                return pk_fail(GFP_ERR_INVALID, "%s: %s must be 1-D with C = %lld elements",
                               name, roles[idx[i]], (long long)x->sizes[1]);
        return GFP_OK;
    }
    int nr = ((const gfp_layer_norm_params *)params)->normalized_rank;
    if (nr < 1 || nr > x->rank)
        return pk_fail(GFP_ERR_INVALID, "%s: normalized_rank %d is out of range for x of rank %d "
                       "(1..rank)", name, nr, (int)x->rank);
    int outer = x->rank - nr;
    if (!pk_has_sizes(t[2], outer, x->sizes) || !pk_has_sizes(t[3], outer, x->sizes))
        return pk_fail(GFP_ERR_INVALID, "%s: mean and rstd must have x's %d leading dims", name,
                       outer);
    const int idx[3] = {4, 6, 7};
    for (int i = 0; i < 3; i++)
        if (t[idx[i]] && !pk_has_sizes(t[idx[i]], nr, x->sizes + outer))
            return pk_fail(GFP_ERR_INVALID, "%s: %s must have x's last %d dims", name,
                           roles[idx[i]], nr);
    return GFP_OK;
}

gfp_status pk_check_softmax_backward(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                                     const gfp_tensor *const *out, uint32_t n_out,
                                     const void *params, uint32_t dtypes) {
    const char *name = pk_op_name(op);
    gfp_status st = pk_expect_counts(n_in, 2, n_out, 1, name);
    if (st == GFP_OK) st = pk_check_params(params, GFP_DIM_PARAMS_SIZE_V1_0, name);
    if (st != GFP_OK) return st;
    const gfp_tensor *g = in[0], *y = in[1], *gx = out[0];
    if (!g || !y || !gx)
        return pk_fail(GFP_ERR_INVALID, "%s: grad_y, y and grad_x must all be given", name);
    if (!pk_dtype_in(g->dtype, dtypes) || y->dtype != g->dtype || gx->dtype != g->dtype)
        return pk_fail(GFP_ERR_UNSUPPORTED, "%s: grad_y, y and grad_x must have one float dtype "
                       "(got %s, %s, %s)", name, pk_dtype_name(g->dtype), pk_dtype_name(y->dtype),
                       pk_dtype_name(gx->dtype));
    if (!pk_same_shape(g, y) || !pk_same_shape(g, gx))
        return pk_fail(GFP_ERR_INVALID, "%s: grad_y, y and grad_x must have one shape", name);
    int dim = ((const gfp_dim_params *)params)->dim, max_dim = y->rank > 0 ? y->rank : 1;
    if (dim < 0 || dim >= max_dim)
        return pk_fail(GFP_ERR_INVALID, "%s: dim %d is out of range for a tensor of rank %d", name,
                       dim, (int)y->rank);
    return GFP_OK;
}

/* ------------------------------------------------------------ ADAM_UPDATE */
gfp_status pk_check_adam(const gfp_tensor *const *in, uint32_t n_in, const gfp_tensor *const *out,
                         uint32_t n_out, const void *params) {
    const char *name = pk_op_name(GFP_OP_ADAM_UPDATE);
    gfp_status st = pk_expect_counts(n_in, 4, n_out, 3, name);
    if (st == GFP_OK) st = pk_check_params(params, GFP_ADAM_PARAMS_SIZE_V1_3, name);
    if (st != GFP_OK) return st;
    static const char *const names[4] = {"p", "g", "m", "v"};
    int32_t dt = in[0]->dtype;
    if (dt != GFP_F32 && dt != GFP_F64)
        return pk_fail(GFP_ERR_UNSUPPORTED, "%s: dtype %s; the update takes f32 or f64", name,
                       pk_dtype_name(dt));
    for (uint32_t i = 0; i < 4 + 3; i++) {
        const gfp_tensor *t = i < 4 ? in[i] : out[i - 4];
        const char *role = i < 4 ? "input" : "output";
        const char *what = i < 4 ? names[i] : names[i == 4 ? 0 : i - 3];
        if (t->dtype != dt)
            return pk_fail(GFP_ERR_INVALID, "%s: %s %s is %s, p is %s; all must be one dtype",
                           name, role, what, pk_dtype_name(t->dtype), pk_dtype_name(dt));
        if (!pk_same_shape(t, in[0]))
            return pk_fail(GFP_ERR_INVALID, "%s: %s %s's shape differs from p's", name, role,
                           what);
    }
    return GFP_OK;
}

/* ------------------------------------------------------------ LSTM cells */
static bool sized_2d(const gfp_tensor *t, int64_t n, int64_t w) {
    return t->rank == 2 && t->sizes[0] == n && t->sizes[1] == w;
}

/* The cells' dtype (f32 or f64) and N, H from the [N, 4H] tensor t, named
 * what. */
static gfp_status cell_lead(const char *name, const char *what, const gfp_tensor *t, int64_t *N,
                            int64_t *H) {
    if (t->dtype != GFP_F32 && t->dtype != GFP_F64)
        return pk_fail(GFP_ERR_UNSUPPORTED, "%s: dtype %s; the cell takes f32 or f64", name,
                       pk_dtype_name(t->dtype));
    if (t->rank != 2 || t->sizes[1] % 4 != 0)
        return pk_fail(GFP_ERR_INVALID, "%s: %s must be [N, 4H] (rank %d given)", name, what,
                       (int)t->rank);
    *N = t->sizes[0];
    *H = t->sizes[1] / 4;
    return GFP_OK;
}

/* Operand t (named what) of a cell whose lead tensor (named lead) is
 * [N, 4H] of dtype dt: dt, and [N, w]. */
static gfp_status cell_operand(const char *name, const char *what, const gfp_tensor *t,
                               const char *lead, int32_t dt, int64_t N, int64_t H, int64_t w) {
    if (t->dtype != dt)
        return pk_fail(GFP_ERR_INVALID, "%s: %s is %s, %s is %s; all must be one dtype", name,
                       what, pk_dtype_name(t->dtype), lead, pk_dtype_name(dt));
    if (!sized_2d(t, N, w))
        return pk_fail(GFP_ERR_INVALID, "%s: %s must be [%lld, %lld] for %s [%lld, %lld]", name,
                       what, (long long)N, (long long)w, lead, (long long)N, (long long)(4 * H));
    return GFP_OK;
}

gfp_status pk_check_lstm_cell(const gfp_tensor *const *in, uint32_t n_in,
                              const gfp_tensor *const *out, uint32_t n_out, int64_t *n,
                              int64_t *h) {
    const char *name = pk_op_name(GFP_OP_LSTM_CELL);
    if (n_in != 3 || n_out != 4)
        return pk_fail(GFP_ERR_INVALID, "%s: %u inputs and %u outputs; it takes mm, p, c_prev "
                       "and gives act, c, tc, h", name, (unsigned)n_in, (unsigned)n_out);
    static const char *const names[7] = {"mm", "p", "c_prev", "act", "c", "tc", "h"};
    for (uint32_t k = 0; k < 7; k++)
        if (!(k < 3 ? in[k] : out[k - 3]))
            return pk_fail(GFP_ERR_INVALID, "%s: %s is NULL", name, names[k]);
    int64_t N = 0, H = 0;
    gfp_status st = cell_lead(name, "mm", in[0], &N, &H);
    for (uint32_t k = 0; k < 7 && st == GFP_OK; k++) {
        const gfp_tensor *t = k < 3 ? in[k] : out[k - 3];
        int64_t w = (k == 0 || k == 1 || k == 3) ? 4 * H : H;
        st = cell_operand(name, names[k], t, "mm", in[0]->dtype, N, H, w);
    }
    if (st != GFP_OK) return st;
    *n = N;
    *h = H;
    return GFP_OK;
}

gfp_status pk_check_lstm_cell_backward(const gfp_tensor *const *in, uint32_t n_in,
                                       const gfp_tensor *const *out, uint32_t n_out, int64_t *n,
                                       int64_t *h, bool *has_dy) {
    const char *name = pk_op_name(GFP_OP_LSTM_CELL_BACKWARD);
    if (n_in < 5 || n_in > 6 || n_out != 2)
        return pk_fail(GFP_ERR_INVALID, "%s: %u inputs and %u outputs; it takes act, c_prev, "
                       "tc, dh, dc (and dy) and gives dgates, dc_prev", name, (unsigned)n_in,
                       (unsigned)n_out);
    static const char *const in_names[6] = {"act", "c_prev", "tc", "dh", "dc", "dy"};
    static const char *const out_names[2] = {"dgates", "dc_prev"};
    for (uint32_t i = 0; i < n_in; i++)
        if (!in[i] && i != 5)
            return pk_fail(GFP_ERR_INVALID, "%s: input %s is NULL", name, in_names[i]);
    for (uint32_t i = 0; i < n_out; i++)
        if (!out[i]) return pk_fail(GFP_ERR_INVALID, "%s: output %s is NULL", name, out_names[i]);
    int64_t N = 0, H = 0;
    gfp_status st = cell_lead(name, "act", in[0], &N, &H);
    for (uint32_t i = 0; i < 6 + 2 && st == GFP_OK; i++) {
        bool is_in = i < 6;
        const gfp_tensor *t = is_in ? (i < n_in ? in[i] : NULL) : out[i - 6];
        if (!t) continue;
        const char *what = is_in ? in_names[i] : out_names[i - 6];
        int64_t w = (i == 0 || i == 6) ? 4 * H : H;
        st = cell_operand(name, what, t, "act", in[0]->dtype, N, H, w);
    }
    if (st != GFP_OK) return st;
    *n = N;
    *h = H;
    *has_dy = n_in == 6 && in[5];
    return GFP_OK;
}
