/* SPDX-License-Identifier: BSD-3-Clause */
/* ops_linalg.c — matmul (torch.matmul semantics), softmax, log_softmax.
 *
 * The MATMUL kernel only sees a [..., M, K] @ [..., K, N] with equal batch
 * dims; the core does 1-D promotion and batch broadcasting (stride-0 views),
 * and folds a batch against one matrix into one GEMM (launch_matmul). */
#include <string.h>

#include "autograd/ag_record.h"
#include "amp/amp_internal.h"
#include "internal.h"

static gf_tensor *ret_new(gf_tensor *t) { return t ? gf__ret(t) : NULL; }

/* The batched a [..., M, K] (expanded, nb batch dims) as one [rows, K]
 * matrix, rows = batch x M, when its batch dims and M step as rows after
 * rows (each dim's stride the next one's times its size; size-1 dims
 * aside). *row_stride receives the rows' stride. */
static bool rows_merge(const gf_tensor *ae, int nb, int64_t *rows, int64_t *row_stride) {
    int64_t n = 1, inner_stride = 0, inner_size = 1;
    bool seen = false;
    for (int d = nb; d >= 0; d--) {
        int64_t sz = ae->sizes[d], st = ae->strides[d];
        n *= sz;
        if (sz == 1) continue;
        if (seen && st != inner_stride * inner_size) return false;
        if (!seen) *row_stride = st;
        seen = true;
        inner_stride = st;
        inner_size = sz;
    }
    if (!seen) *row_stride = ae->sizes[nb + 1];
    *rows = n;
    return true;
}

/* MATMUL of the expanded operands into y. When b is one matrix for every
 * batch (a 2-D weight broadcast over a's batch dims, as in a linear layer on
 * [B, T, K]) and a's batch dims merge into its rows, it runs as one
 * [B x M, K] @ [K, N] GEMM instead of B small ones, as PyTorch's matmul
 * folds it: on a device whose GEMM tiles are larger than M, B small GEMMs
 * waste most of each tile (measured on lavapipe: a transformer's
 * [64, 8, 48] @ [48, 48] took 2.8 ms batched). Every output element is the
 * same dot product either way. */
static gf_status launch_matmul(gf_tensor *ae, gf_tensor *be, gf_tensor *y, int nb) {
    bool fold = nb > 0;
    for (int d = 0; d < nb && fold; d++) fold = be->sizes[d] == 1 || be->strides[d] == 0;
    int64_t rows = 0, row_stride = 0;
    fold = fold && rows_merge(ae, nb, &rows, &row_stride);
    if (!fold) {
        const gf_tensor *in[2] = {ae, be};
        gf_tensor *out[1] = {y};
        return gf__launch(GFP_OP_MATMUL, "matmul", in, 2, out, 1, NULL);
    }
    int64_t K = ae->sizes[nb + 1], N = be->sizes[nb + 1];
    int64_t asz[2] = {rows, K}, ast[2] = {row_stride, ae->strides[nb + 1]};
    int64_t bsz[2] = {K, N}, bst[2] = {be->strides[nb], be->strides[nb + 1]};
    int64_t ysz[2] = {rows, N}, yst[2] = {N, 1}; /* y is new, contiguous */
    gf_tensor *a2 = gf__view(ae, asz, ast, 2, ae->offset);
    gf_tensor *b2 = a2 ? gf__view(be, bsz, bst, 2, be->offset) : NULL;
    gf_tensor *y2 = b2 ? gf__view(y, ysz, yst, 2, y->offset) : NULL;
    gf_status st = GF_ERR_OUT_OF_MEMORY;
    if (y2) {
        const gf_tensor *in[2] = {a2, b2};
        gf_tensor *out[1] = {y2};
        st = gf__launch(GFP_OP_MATMUL, "matmul", in, 2, out, 1, NULL);
    }
    gf_tensor_release(a2);
    gf_tensor_release(b2);
    gf_tensor_release(y2);
    return st;
}

gf_tensor *gf_matmul(const gf_tensor *a, const gf_tensor *b) {
    GF__AMP_HOOK(MATMUL, 2, gf_matmul(amp_v[0], amp_v[1]), a, b);
    if (!a || !b) {
        gf__null_arg("matmul", !a ? "a" : "b");
        return NULL;
    }
    if (!gf__same_device(a, b, "matmul")) return NULL;
    /* The shapes are formatted for a message only: snprintf costs more than
     * a small matmul's whole launch. */
    char sa[128], sb[128];
#define SA gf__shape_str(a->sizes, a->rank, sa, sizeof sa)
#define SB gf__shape_str(b->sizes, b->rank, sb, sizeof sb)
    if (a->rank == 0 || b->rank == 0) {
        gf__error(GF_ERR_SHAPE,
                  "matmul: both arguments need at least 1 dim, got shapes %s and %s; use "
                  "gf_mul to multiply by a scalar", SA, SB);
        return NULL;
    }
    if (a->dtype != b->dtype) {
        gf__error(GF_ERR_DTYPE,
                  "matmul: both operands must have one dtype, got %s and %s; convert one "
                  "with gf_to_dtype", gf_dtype_name(a->dtype), gf_dtype_name(b->dtype));
        return NULL;
    }
    int ra = a->rank, rb = b->rank;
    int64_t M = ra == 1 ? 1 : a->sizes[ra - 2];
    int64_t K = a->sizes[ra - 1];
    int64_t Kb = rb == 1 ? b->sizes[0] : b->sizes[rb - 2];
    int64_t N = rb == 1 ? 1 : b->sizes[rb - 1];
    if (K != Kb) {
        gf__error(GF_ERR_SHAPE,
                  "matmul: shapes %s and %s cannot be multiplied (%lld != %lld): the last "
                  "dim of a must equal the %s dim of b",
                  SA, SB, (long long)K, (long long)Kb, rb == 1 ? "only" : "second-to-last");
        return NULL;
    }
    int64_t batch[GF_MAX_RANK];
    int nb = 0;
    if (gf__broadcast_shapes(a->sizes, ra > 2 ? ra - 2 : 0, b->sizes, rb > 2 ? rb - 2 : 0,
                             batch, &nb, "matmul") != GF_OK) {
        gf__error(GF_ERR_SHAPE,
                  "matmul: the batch dims (all but the last two) of shapes %s and %s cannot "
                  "be broadcast together; sizes must match or one must be 1", SA, SB);
        return NULL;
    }
#undef SA
#undef SB

    /* 2-D (or more) views of 1-D operands: a [K] -> [1, K], b [K] -> [K, 1]. */
    gf_tensor *a2 = NULL, *b2 = NULL, *ae = NULL, *be = NULL, *y = NULL, *res = NULL;
    if (ra == 1) {
        int64_t sz[2] = {1, K}, st[2] = {K * a->strides[0], a->strides[0]};
        a2 = gf__view(a, sz, st, 2, a->offset);
    } else {
        a2 = gf__view(a, a->sizes, a->strides, ra, a->offset);
    }
    if (rb == 1) {
        int64_t sz[2] = {K, 1}, st[2] = {b->strides[0], b->strides[0]};
        b2 = gf__view(b, sz, st, 2, b->offset);
    } else {
        b2 = gf__view(b, b->sizes, b->strides, rb, b->offset);
    }
    if (!a2 || !b2) goto done;

    int64_t ash[GF_MAX_RANK], bsh[GF_MAX_RANK], ysh[GF_MAX_RANK];
    memcpy(ash, batch, sizeof(int64_t) * (size_t)nb);
    memcpy(bsh, batch, sizeof(int64_t) * (size_t)nb);
    memcpy(ysh, batch, sizeof(int64_t) * (size_t)nb);
    ash[nb] = M, ash[nb + 1] = K;
    bsh[nb] = K, bsh[nb + 1] = N;
    ysh[nb] = M, ysh[nb + 1] = N;
    ae = gf__expand_to(a2, ash, nb + 2);
    be = ae ? gf__expand_to(b2, bsh, nb + 2) : NULL;
    y = be ? gf__empty(ysh, nb + 2, a->dtype, a->storage->device) : NULL;
    if (!y) goto done;
    if (gf__numel(y) > 0) {
        gf_status st;
        if (K == 0) {
            st = gf__fill(y, 0.0); /* an empty sum */
        } else {
            st = launch_matmul(ae, be, y, nb);
        }
        if (st != GF_OK) goto done;
    }
    if (ra == 1 || rb == 1) { /* drop the dims that promotion added */
        int64_t fsz[GF_MAX_RANK], fst[GF_MAX_RANK];
        int r = nb;
        memcpy(fsz, batch, sizeof(int64_t) * (size_t)nb);
        if (ra > 1) fsz[r++] = M;
        if (rb > 1) fsz[r++] = N;
        gf__contiguous_strides(fsz, r, fst);
        res = gf__view(y, fsz, fst, r, y->offset);
    } else {
        res = y;
        y = NULL;
    }
done:
    gf_tensor_release(a2);
    gf_tensor_release(b2);
    gf_tensor_release(ae);
    gf_tensor_release(be);
    gf_tensor_release(y);
    if (res && gf__ag_record_matmul(a, b, res) != GF_OK) {
        gf_tensor_release(res);
        res = NULL;
    }
    return ret_new(res);
}

static gf_tensor *softmax_op(gfp_op op, const char *name, const gf_tensor *x, int dim) {
    if (!x) {
        gf__null_arg(name, "x");
        return NULL;
    }
    if (!gf_dtype_is_float(x->dtype)) {
        gf__error(GF_ERR_DTYPE,
                  "%s: input must have a float dtype, got %s; convert it first with "
                  "gf_to_dtype(x, GF_F32)", name, gf_dtype_name(x->dtype));
        return NULL;
    }
    int d = gf__norm_dim(dim, x->rank, name);
    if (d < 0) return NULL;
    /* A 0-dim x runs as a [1] view: softmax 1, log_softmax 0, as PyTorch. */
    int64_t one = 1;
    int rank = x->rank > 0 ? x->rank : 1;
    const int64_t *sz = x->rank > 0 ? x->sizes : &one;
    const int64_t *xst = x->rank > 0 ? x->strides : &one;
    gf_tensor *x1 = gf__view(x, sz, xst, rank, x->offset);
    gf_tensor *y = x1 ? gf__empty(sz, rank, x->dtype, x->storage->device) : NULL;
    if (y && gf__numel(y) > 0) {
        gfp_dim_params p;
        memset(&p, 0, sizeof p);
        p.struct_size = sizeof p;
        p.dim = d;
        const gf_tensor *in[1] = {x1};
        gf_tensor *out[1] = {y};
        if (gf__launch(op, name, in, 1, out, 1, &p) != GF_OK) {
            gf_tensor_release(y);
            y = NULL;
        }
    }
    gf_tensor_release(x1);
    if (y && x->rank == 0) {
        int64_t none[1] = {1}; /* rank 0: sizes unused, but never pass NULL */
        gf_tensor *y0 = gf__view(y, none, none, 0, y->offset);
        gf_tensor_release(y);
        y = y0;
    }
    if (y && gf__ag_record_softmax(op, x, y, d) != GF_OK) {
        gf_tensor_release(y);
        y = NULL;
    }
    return ret_new(y);
}

gf_tensor *gf_softmax(const gf_tensor *x, int dim) {
    GF__AMP_HOOK(SOFTMAX, 1, gf_softmax(amp_v[0], dim), x);
    return softmax_op(GFP_OP_SOFTMAX, "softmax", x, dim);
}

gf_tensor *gf_log_softmax(const gf_tensor *x, int dim) {
    GF__AMP_HOOK(LOG_SOFTMAX, 1, gf_log_softmax(amp_v[0], dim), x);
    return softmax_op(GFP_OP_LOG_SOFTMAX, "log_softmax", x, dim);
}
