/* cuda_reduce.c — host side of the reductions, softmax and the
 * normalisations: argument checks (the reference's, with its messages) and
 * the cuk_lines description each kernel walks (kernels/cu_reduce.cu,
 * kernels/cu_norm.cu). Size-1 dims are left out of the description: they
 * add nothing to a line or to the set of lines. */
#include <stdio.h>
#include <string.h>

#include "cuda_internal.h"

static void lines_init(cuk_lines *l) {
    memset(l, 0, sizeof *l);
    l->n_out = 1;
    l->n_line = 1;
}

/* Appends a dim of size n with the given strides per slot (the remaining
 * slots stride 0) to a list of dims. When the previous dim of the list steps
 * over exactly this one in every slot, the two are walked as one (a
 * contiguous line is then one dim, and the kernels divide less). */
static void add_dim(int32_t *count, int64_t *sizes, int64_t (*strides)[CUK_MAX_RANK], int64_t n,
                    const int64_t *str, int n_str) {
    if (n == 1) return;
    int k = *count;
    bool joins = k > 0;
    for (int s = 0; s < CUK_LINE_TENSORS && joins; s++) {
        int64_t st = s < n_str ? str[s] : 0;
        joins = strides[s][k - 1] == st * n;
    }
    if (joins) {
        sizes[k - 1] *= n;
        for (int s = 0; s < CUK_LINE_TENSORS; s++) strides[s][k - 1] = s < n_str ? str[s] : 0;
        return;
    }
    sizes[k] = n;
    for (int s = 0; s < CUK_LINE_TENSORS; s++) strides[s][k] = s < n_str ? str[s] : 0;
    (*count)++;
}

static void add_keep(cuk_lines *l, int64_t n, const int64_t *str, int n_str) {
    l->n_out *= n;
    add_dim(&l->n_keep, l->keep_sizes, l->keep_str, n, str, n_str);
}

static void add_red(cuk_lines *l, int64_t n, const int64_t *str, int n_str) {
    l->n_line *= n;
    add_dim(&l->n_red, l->red_sizes, l->red_str, n, str, n_str);
}

static void set_slot(cuk_lines *l, int slot, const gfp_tensor *t) {
    if (!t) return;
    cuk_tensor v = cu_view(t);
    l->data[slot] = v.data;
    l->dtype[slot] = v.dtype;
}

static bool has_sizes(const gfp_tensor *t, int rank, const int64_t *sizes) {
    if (t->rank != rank) return false;
    for (int d = 0; d < rank; d++)
        if (t->sizes[d] != sizes[d]) return false;
    return true;
}

/* ------------------------------------------------------------ reductions */
gfp_status cu_reduce_launch(cu_device *dev, uint32_t op, const gfp_tensor *const *in,
                            uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                            const void *params) {
    (void)n_in;
    const char *name = pk_op_name(op);
    gfp_status st = pk_check_params(params, GFP_REDUCE_PARAMS_SIZE_V1_0, name);
    if (st != GFP_OK) return st;
    const gfp_reduce_params *p = params;
    const gfp_tensor *x = in[0], *y = out[0], *ind = n_out == 2 ? out[1] : NULL;
    bool by_dim = op == GFP_OP_MAX_DIM || op == GFP_OP_MIN_DIM;
    uint32_t dims = p->dims;
    if ((uint64_t)dims >> x->rank != 0)
        return pk_fail(GFP_ERR_INVALID, "%s: dims mask 0x%x names a dim >= the input's rank %d",
                       name, (unsigned)dims, (int)x->rank);
    if (by_dim && (dims == 0 || (dims & (dims - 1)) != 0))
        return pk_fail(GFP_ERR_INVALID, "%s: dims mask 0x%x must have exactly one bit set", name,
                       (unsigned)dims);
    bool ok = y->rank == x->rank;
    for (int d = 0; ok && d < x->rank; d++) ok = y->sizes[d] == ((dims >> d) & 1u ? 1 : x->sizes[d]);
    if (!ok)
        return pk_fail(GFP_ERR_INVALID,
                       "%s: the output must have the input's rank (%d) and sizes, with size 1 in "
                       "each reduced dim (mask 0x%x)",
                       name, (int)x->rank, (unsigned)dims);
    if (ind && !has_sizes(ind, y->rank, y->sizes))
        return pk_fail(GFP_ERR_INVALID, "%s: the indices output must have the values' shape", name);

    cuk_lines l;
    lines_init(&l);
    for (int d = 0; d < x->rank; d++) {
        if ((dims >> d) & 1u) {
            add_red(&l, x->sizes[d], &x->strides[d], 1);
        } else {
            int64_t str[3] = {x->strides[d], y->strides[d], ind ? ind->strides[d] : 0};
            add_keep(&l, x->sizes[d], str, 3);
        }
    }
    bool extreme = op == GFP_OP_AMAX || op == GFP_OP_AMIN || by_dim;
    if (extreme && l.n_line == 0)
        return pk_fail(GFP_ERR_INVALID,
                       "%s: cannot reduce over zero elements (a reduced dim has size 0); the "
                       "operation has no identity",
                       name);
    if (l.n_out == 0) return GFP_OK;
    set_slot(&l, 0, x);
    set_slot(&l, 1, y);
    set_slot(&l, 2, ind);
    l.p0 = p->correction;
    return cu_check(cuk_reduce(dev->stream, op, &l), name, "the kernel launch");
}

/* ------------------------------------------------------------ softmax */
static gfp_status softmax_launch(cu_device *dev, uint32_t op, const gfp_tensor *x,
                                 const gfp_tensor *y, const void *params) {
    const char *name = pk_op_name(op);
    gfp_status st = pk_check_params(params, GFP_DIM_PARAMS_SIZE_V1_0, name);
    if (st != GFP_OK) return st;
    int dim = ((const gfp_dim_params *)params)->dim;
    int max_dim = x->rank > 0 ? x->rank : 1; /* a 0-dim tensor is one line of one */
    if (dim < 0 || dim >= max_dim)
        return pk_fail(GFP_ERR_INVALID, "%s: dim %d is out of range for a tensor of rank %d", name,
                       dim, (int)x->rank);
    if (!has_sizes(y, x->rank, x->sizes))
        return pk_fail(GFP_ERR_INVALID, "%s: the output must have the input's shape", name);
    if (pk_numel(x) == 0) return GFP_OK;
    cuk_lines l;
    lines_init(&l);
    for (int d = 0; d < x->rank; d++) {
        int64_t str[2] = {x->strides[d], y->strides[d]};
        if (d == dim) add_red(&l, x->sizes[d], str, 2);
        else add_keep(&l, x->sizes[d], str, 2);
    }
    set_slot(&l, 0, x);
    set_slot(&l, 1, y);
    return cu_check(cuk_softmax(dev->stream, op, &l), name, "the kernel launch");
}

/* ------------------------------------------------------------ layer norm */
static gfp_status layer_norm_launch(cu_device *dev, const gfp_tensor *const *in,
                                    const gfp_tensor *const *out, const void *params) {
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
    if (!has_sizes(y, x->rank, x->sizes))
        return pk_fail(GFP_ERR_INVALID, "layer_norm: y must have x's shape");
    if ((w && !has_sizes(w, nr, inner)) || (b && !has_sizes(b, nr, inner)))
        return pk_fail(GFP_ERR_INVALID,
                       "layer_norm: weight and bias must have the shape of x's last %d dim(s)",
                       nr);
    if (!has_sizes(mean, outer, x->sizes) || !has_sizes(rstd, outer, x->sizes))
        return pk_fail(GFP_ERR_INVALID,
                       "layer_norm: mean and rstd must have the shape of x's first %d dim(s)",
                       outer);
    cuk_lines l;
    lines_init(&l);
    for (int d = 0; d < outer; d++) {
        /* slots 0 x, 1 y, 2 w, 3 b (no kept dims), 4 mean, 5 rstd */
        int64_t str[6] = {x->strides[d], y->strides[d], 0, 0, mean->strides[d], rstd->strides[d]};
        add_keep(&l, x->sizes[d], str, 6);
    }
    for (int d = 0; d < nr; d++) {
        int64_t str[4] = {x->strides[outer + d], y->strides[outer + d], w ? w->strides[d] : 0,
                          b ? b->strides[d] : 0};
        add_red(&l, x->sizes[outer + d], str, 4);
    }
    if (l.n_out == 0) return GFP_OK;
    set_slot(&l, 0, x);
    set_slot(&l, 1, y);
    set_slot(&l, 2, w);
    set_slot(&l, 3, b);
    set_slot(&l, 4, mean);
    set_slot(&l, 5, rstd);
    l.p1 = p->eps;
    return cu_check(cuk_layer_norm(dev->stream, &l), "layer_norm", "the kernel launch");
}

/* ------------------------------------------------------------ batch norm */
static gfp_status batch_norm_launch(cu_device *dev, const gfp_tensor *const *in,
                                    const gfp_tensor *const *out, const void *params) {
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
    if (!has_sizes(y, x->rank, x->sizes))
        return pk_fail(GFP_ERR_INVALID, "batch_norm: y must have x's shape");
    /* Slots 2..7: weight, bias, running_mean, running_var, save_mean,
     * save_invstd; each 1-D with C elements. */
    const gfp_tensor *per_c[6] = {in[1], in[2], in[3], in[4], out[1], out[2]};
    static const char *const roles[6] = {"weight",      "bias",      "running_mean",
                                         "running_var", "save_mean", "save_invstd"};
    for (int i = 0; i < 6; i++)
        if (per_c[i] && !has_sizes(per_c[i], 1, &x->sizes[1]))
            return pk_fail(GFP_ERR_INVALID, "batch_norm: %s must be 1-D with C = %lld elements",
                           roles[i], (long long)x->sizes[1]);
    cuk_lines l;
    lines_init(&l);
    int64_t kstr[8] = {x->strides[1], y->strides[1]};
    for (int i = 0; i < 6; i++) kstr[2 + i] = per_c[i] ? per_c[i]->strides[0] : 0;
    /* The channel is kept even when C = 1: the per-channel slots index it. */
    l.n_out = x->sizes[1];
    l.n_keep = 1;
    l.keep_sizes[0] = x->sizes[1];
    for (int s = 0; s < 8; s++) l.keep_str[s][0] = kstr[s];
    for (int d = 0; d < x->rank; d++) {
        if (d == 1) continue;
        int64_t str[2] = {x->strides[d], y->strides[d]};
        add_red(&l, x->sizes[d], str, 2);
    }
    if (l.n_out == 0) return GFP_OK;
    set_slot(&l, 0, x);
    set_slot(&l, 1, y);
    for (int i = 0; i < 6; i++) set_slot(&l, 2 + i, per_c[i]);
    l.p1 = p->eps;
    l.p2 = p->momentum;
    l.flag = (int32_t)p->training;
    return cu_check(cuk_batch_norm(dev->stream, &l), "batch_norm", "the kernel launch");
}

gfp_status cu_norm_launch(cu_device *dev, uint32_t op, const gfp_tensor *const *in,
                          uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                          const void *params) {
    (void)n_in;
    (void)n_out;
    switch (op) {
    case GFP_OP_LAYER_NORM: return layer_norm_launch(dev, in, out, params);
    case GFP_OP_BATCH_NORM: return batch_norm_launch(dev, in, out, params);
    default: return softmax_launch(dev, op, in[0], out[0], params);
    }
}
