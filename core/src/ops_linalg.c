/* SPDX-License-Identifier: BSD-3-Clause */
/* ops_linalg.c — matmul (torch.matmul semantics), softmax, log_softmax.
 *
 * The MATMUL kernel only sees a [..., M, K] @ [..., K, N] with equal batch
 * dims; the core does 1-D promotion and batch broadcasting (stride-0 views). */
#include <string.h>

#include "autograd/ag_record.h"
#include "amp/amp_internal.h"
#include "internal.h"

static gf_tensor *ret_new(gf_tensor *t) { return t ? gf__ret(t) : NULL; }

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
            const gf_tensor *in[2] = {ae, be};
            gf_tensor *out[1] = {y};
            st = gf__launch(GFP_OP_MATMUL, "matmul", in, 2, out, 1, NULL);
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
