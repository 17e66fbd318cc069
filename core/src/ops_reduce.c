/* SPDX-License-Identifier: BSD-3-Clause */
/* ops_reduce.c — reductions: sum, mean, prod, amax/amin, var/std, logsumexp,
 * max/min along a dim, argmax/argmin.
 *
 * Every kernel writes an output of the input's rank with size 1 in the
 * reduced dims; keepdim=false is then a view that drops those dims. A 0-dim
 * input is reduced as a one-element 1-D view (PyTorch accepts dim 0 / -1 on
 * it), and the result is 0-dim again. */
#include <math.h>
#include <string.h>

#include "autograd/ag_record.h"
#include "complex/complex_internal.h"
#include "amp/amp_internal.h"
#include "internal.h"

static gf_tensor *ret_new(gf_tensor *t) { return t ? gf__ret(t) : NULL; }

/* Turns a dims list into a bitmask over x's dims. An empty list means every
 * dim. For a 0-dim x the mask is 1: the caller reduces it as a [1] view. */
static gf_status dims_mask(const gf_tensor *x, const int *dims, int ndims, const char *op,
                           uint32_t *mask) {
    int rank = x->rank;
    if (ndims < 0)
        return gf__error(GF_ERR_INVALID,
                         "%s: ndims is %d; pass the length of the dims list (0 reduces "
                         "every dim)", op, ndims);
    if (ndims > 0 && !dims)
        return gf__error(GF_ERR_INVALID,
                         "%s: dims is NULL but ndims is %d; pass a list of ndims dims, or "
                         "NULL with ndims 0 to reduce every dim", op, ndims);
    if (ndims == 0) {
        *mask = rank == 0 ? 1u : (uint32_t)((1u << rank) - 1u);
        return GF_OK;
    }
    uint32_t m = 0;
    for (int i = 0; i < ndims; i++) {
        int d = gf__norm_dim(dims[i], rank, op);
        if (d < 0) return GF_ERR_INDEX;
        if (m & (1u << d))
            return gf__error(GF_ERR_INVALID,
                             "%s: dim %d appears more than once in the dims list; list each "
                             "dim once", op, d);
        m |= 1u << d;
    }
    *mask = rank == 0 ? 1u : m;
    return GF_OK;
}

/* Refuses reductions with no identity (amax, argmax...) over an empty dim. */
static gf_status check_nonempty(const gf_tensor *x, uint32_t mask, const char *op) {
    char buf[128];
    if (x->rank == 0) return GF_OK;
    for (int d = 0; d < x->rank; d++) {
        if ((mask & (1u << d)) && x->sizes[d] == 0)
            return gf__error(GF_ERR_INDEX,
                             "%s: cannot reduce over a zero-size dimension (dim %d of shape "
                             "%s): the result would have no value; reduce over other dims "
                             "or check the input is not empty",
                             op, d, gf__shape_str(x->sizes, x->rank, buf, sizeof buf));
    }
    return GF_OK;
}

/* x as a rank >= 1 tensor: a new reference (a [1] view for a 0-dim x). */
static gf_tensor *at_least_1d(const gf_tensor *x) {
    if (x->rank > 0) return gf__view(x, x->sizes, x->strides, x->rank, x->offset);
    int64_t one = 1, st = 1;
    return gf__view(x, &one, &st, 1, x->offset);
}

/* Consumes y (a keepdim result over x1, the rank >= 1 form of x) and returns
 * the final shape: 0-dim when x was 0-dim, otherwise reduced dims dropped
 * unless keepdim. */
static gf_tensor *finish_keepdim(gf_tensor *y, uint32_t mask, bool keepdim, int orig_rank) {
    if (!y) return NULL;
    int64_t sz[GF_MAX_RANK], st[GF_MAX_RANK];
    int r = 0;
    if (orig_rank == 0) {
        r = 0;
    } else if (keepdim) {
        return y;
    } else {
        for (int d = 0; d < y->rank; d++) {
            if (mask & (1u << d)) continue;
            sz[r] = y->sizes[d];
            st[r] = y->strides[d];
            r++;
        }
    }
    gf_tensor *v = gf__view(y, sz, st, r, y->offset);
    gf_tensor_release(y);
    return v;
}

/* Value of a reduction over zero elements (the ABI's rule, applied by the
 * core so no kernel sees an empty input). */
static double empty_value(gfp_op op) {
    switch (op) {
    case GFP_OP_SUM: return 0.0;
    case GFP_OP_PROD: return 1.0;
    case GFP_OP_LOGSUMEXP: return -INFINITY;
    default: return NAN; /* mean, var */
    }
}

/* Runs a single-output reduction over a validated x and mask. */
static gf_tensor *reduce_run(gfp_op op, const char *name, const gf_tensor *x, uint32_t mask,
                             bool keepdim, gf_dtype out_dtype, double correction) {
    gf_tensor *x1 = at_least_1d(x);
    if (!x1) return NULL;
    int64_t osz[GF_MAX_RANK];
    for (int d = 0; d < x1->rank; d++) osz[d] = (mask & (1u << d)) ? 1 : x1->sizes[d];
    gf_tensor *y = gf__empty(osz, x1->rank, out_dtype, x->storage->device);
    if (y && gf__numel(y) > 0) {
        gf_status st;
        if (gf__numel(x1) == 0) {
            st = gf__fill(y, empty_value(op));
        } else {
            gfp_reduce_params p;
            memset(&p, 0, sizeof p);
            p.struct_size = sizeof p;
            p.dims = mask;
            p.correction = correction;
            const gf_tensor *in[1] = {x1};
            gf_tensor *out[1] = {y};
            st = gf__launch(op, name, in, 1, out, 1, &p);
        }
        if (st != GF_OK) {
            gf_tensor_release(y);
            y = NULL;
        }
    }
    gf_tensor_release(x1);
    return finish_keepdim(y, mask, keepdim, x->rank);
}

static gf_status check_float(const gf_tensor *x, const char *op) {
    if (gf_dtype_is_float(x->dtype)) return GF_OK;
    if (gf_dtype_is_complex(x->dtype)) return gf__complex_refused(op, x->dtype);
    return gf__error(GF_ERR_DTYPE,
                     "%s: input must have a float dtype, got %s; convert it first with "
                     "gf_to_dtype(x, GF_F32)", op, gf_dtype_name(x->dtype));
}

/* The common front of the dims-list reductions. */
static gf_tensor *reduce_op(gfp_op op, const char *name, const gf_tensor *x, const int *dims,
                            int ndims, bool keepdim, double correction) {
    if (!x) {
        gf__null_arg(name, "x");
        return NULL;
    }
    uint32_t mask;
    if (dims_mask(x, dims, ndims, name, &mask) != GF_OK) return NULL;
    gf_dtype out_dtype = x->dtype;
    switch (op) {
    case GFP_OP_MEAN:
        if (gf_dtype_is_complex(x->dtype)) break; /* complex mean: as PyTorch */
        if (check_float(x, name) != GF_OK) return NULL;
        break;
    case GFP_OP_VAR:
    case GFP_OP_LOGSUMEXP:
        if (check_float(x, name) != GF_OK) return NULL;
        break;
    case GFP_OP_AMAX:
    case GFP_OP_AMIN:
        if (check_nonempty(x, mask, name) != GF_OK) return NULL;
        break;
    default: /* sum, prod: bool and i32 accumulate in i64, as PyTorch */
        if (x->dtype == GF_BOOL || x->dtype == GF_I32) {
            gf_tensor *xi = gf__cast(x, GF_I64);
            if (!xi) return NULL;
            gf_tensor *y = reduce_run(op, name, xi, mask, keepdim, GF_I64, correction);
            gf_tensor_release(xi);
            return ret_new(y);
        }
        break;
    }
    gf_tensor *y = reduce_run(op, name, x, mask, keepdim, out_dtype, correction);
    if (y && gf__ag_record_reduce(op, x, y, mask, keepdim, correction) != GF_OK) {
        gf_tensor_release(y);
        y = NULL;
    }
    return ret_new(y);
}

gf_tensor *gf_sum(const gf_tensor *x, const int *dims, int ndims, bool keepdim) {
    GF__AMP_HOOK(SUM, 1, gf_sum(amp_v[0], dims, ndims, keepdim), x);
    return reduce_op(GFP_OP_SUM, "sum", x, dims, ndims, keepdim, 0.0);
}

gf_tensor *gf_mean(const gf_tensor *x, const int *dims, int ndims, bool keepdim) {
    return reduce_op(GFP_OP_MEAN, "mean", x, dims, ndims, keepdim, 0.0);
}

gf_tensor *gf_prod(const gf_tensor *x, const int *dims, int ndims, bool keepdim) {
    GF__AMP_HOOK(PROD, 1, gf_prod(amp_v[0], dims, ndims, keepdim), x);
    return reduce_op(GFP_OP_PROD, "prod", x, dims, ndims, keepdim, 0.0);
}

gf_tensor *gf_amax(const gf_tensor *x, const int *dims, int ndims, bool keepdim) {
    return reduce_op(GFP_OP_AMAX, "amax", x, dims, ndims, keepdim, 0.0);
}

gf_tensor *gf_amin(const gf_tensor *x, const int *dims, int ndims, bool keepdim) {
    return reduce_op(GFP_OP_AMIN, "amin", x, dims, ndims, keepdim, 0.0);
}

static gf_status check_correction(double correction, const char *op) {
    if (isfinite(correction)) return GF_OK;
    return gf__error(GF_ERR_INVALID,
                     "%s: correction must be a finite number (0 = population variance, "
                     "1 = Bessel's correction), got %g", op, correction);
}

/* var composed of ops a device can split: the mean (kept dims), then the
 * sum of squared deviations over n - correction (clamped at 0, as VAR). */
static gf_tensor *var_composite(const gf_tensor *x, const int *dims, int ndims,
                                double correction, bool keepdim, uint32_t mask) {
    int64_t n = 1;
    int rank = x->rank ? x->rank : 1;
    for (int k = 0; k < rank; k++)
        if ((mask >> k) & 1u) n *= x->rank ? x->sizes[k] : 1;
    double divisor = (double)n - correction > 0 ? (double)n - correction : 0.0;
    int s = gf__scope_suspend();
    gf_tensor *m = gf_mean(x, dims, ndims, true);
    gf_tensor *d = m ? gf_sub(x, m) : NULL;
    gf_tensor *sq = d ? gf_mul(d, d) : NULL;
    gf_tensor *sum = sq ? gf_sum(sq, dims, ndims, keepdim) : NULL;
    gf_tensor *r = sum ? gf_div_scalar(sum, divisor) : NULL;
    gf_tensor_release(sum);
    gf_tensor_release(sq);
    gf_tensor_release(d);
    gf_tensor_release(m);
    gf__scope_resume(s);
    return r;
}

gf_tensor *gf_var(const gf_tensor *x, const int *dims, int ndims, double correction,
                  bool keepdim) {
    if (x && check_correction(correction, "var") != GF_OK) return NULL;
    gf_tensor *r = reduce_op(GFP_OP_VAR, "var", x, dims, ndims, keepdim, correction);
    if (r || !x || gf__status() != GF_ERR_UNSUPPORTED) return r;
    /* A device may refuse VAR for lines longer than its kernel can loop over
     * (Vulkan on lavapipe) while it splits the plain reductions: compose it.
     * A device that lacks the ops altogether fails again, with their error. */
    uint32_t mask;
    if (dims_mask(x, dims, ndims, "var", &mask) != GF_OK) return NULL;
    gf_clear_error();
    return ret_new(var_composite(x, dims, ndims, correction, keepdim, mask));
}

/* sqrt(var), computed without recording; its node (StdBackward) gives a
 * zero-variance slice the gradient 0, as PyTorch's std_backward does, where
 * the chain through sqrt would give 0 * inf = NaN. */
gf_tensor *gf_std(const gf_tensor *x, const int *dims, int ndims, double correction,
                  bool keepdim) {
    if (!x) {
        gf__null_arg("std", "x");
        return NULL;
    }
    uint32_t mask;
    if (dims_mask(x, dims, ndims, "std", &mask) != GF_OK || check_float(x, "std") != GF_OK ||
        check_correction(correction, "std") != GF_OK)
        return NULL;
    int s = gf__scope_suspend();
    gf_grad_mode prev = gf_grad_mode_get();
    if (prev == GF_GRAD_MODE_GRAD) gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    gf_tensor *v = gf_var(x, dims, ndims, correction, keepdim);
    gf_tensor *r = v ? gf_sqrt(v) : NULL;
    gf_grad_mode_set(prev);
    gf_tensor_release(v);
    gf__scope_resume(s);
    if (r && gf__ag_record_std(x, r, mask, keepdim, correction) != GF_OK) {
        gf_tensor_release(r);
        r = NULL;
    }
    return ret_new(r);
}

gf_tensor *gf_logsumexp(const gf_tensor *x, const int *dims, int ndims, bool keepdim) {
    GF__AMP_HOOK(LOGSUMEXP, 1, gf_logsumexp(amp_v[0], dims, ndims, keepdim), x);
    return reduce_op(GFP_OP_LOGSUMEXP, "logsumexp", x, dims, ndims, keepdim, 0.0);
}

/* MAX_DIM / MIN_DIM over dim d of x1 (rank >= 1, validated, non-empty along
 * d): writes keepdim-shaped values and indices (new references). */
static gf_status extreme_run(gfp_op op, const char *name, const gf_tensor *x1, int d,
                             gf_tensor **values, gf_tensor **indices) {
    int64_t osz[GF_MAX_RANK];
    for (int i = 0; i < x1->rank; i++) osz[i] = i == d ? 1 : x1->sizes[i];
    gf_device *dev = x1->storage->device;
    gf_tensor *v = gf__empty(osz, x1->rank, x1->dtype, dev);
    gf_tensor *ix = v ? gf__empty(osz, x1->rank, GF_I64, dev) : NULL;
    if (!ix) {
        gf_tensor_release(v);
        return gf__status();
    }
    if (gf__numel(v) > 0) {
        gfp_reduce_params p;
        memset(&p, 0, sizeof p);
        p.struct_size = sizeof p;
        p.dims = 1u << d;
        const gf_tensor *in[1] = {x1};
        gf_tensor *out[2] = {v, ix};
        gf_status st = gf__launch(op, name, in, 1, out, 2, &p);
        if (st != GF_OK) {
            gf_tensor_release(v);
            gf_tensor_release(ix);
            return st;
        }
    }
    *values = v;
    *indices = ix;
    return GF_OK;
}

/* max_dim / min_dim, and argmax / argmin along one dim (values may be NULL:
 * then only indices are produced). Results are not yet scope-registered. */
static gf_status extreme_dim(gfp_op op, const char *name, const gf_tensor *x, int dim,
                             bool keepdim, gf_tensor **values, gf_tensor **indices) {
    int d = gf__norm_dim(dim, x->rank, name);
    if (d < 0) return GF_ERR_INDEX;
    uint32_t mask = 1u << d;
    if (check_nonempty(x, mask, name) != GF_OK) return GF_ERR_INDEX;
    gf_tensor *x1 = at_least_1d(x);
    if (!x1) return gf__status();
    gf_tensor *v = NULL, *ix = NULL;
    gf_status st = extreme_run(op, name, x1, d, &v, &ix);
    gf_tensor_release(x1);
    if (st != GF_OK) return st;
    v = finish_keepdim(v, mask, keepdim, x->rank);
    ix = finish_keepdim(ix, mask, keepdim, x->rank);
    if (!v || !ix) {
        gf_tensor_release(v);
        gf_tensor_release(ix);
        return gf__status();
    }
    if (values)
        *values = v;
    else
        gf_tensor_release(v);
    *indices = ix;
    return GF_OK;
}

static gf_status max_min_dim(gfp_op op, const char *name, const gf_tensor *x, int dim,
                             bool keepdim, gf_tensor **values, gf_tensor **indices) {
    if (values) *values = NULL;
    if (indices) *indices = NULL;
    if (!values || !indices)
        return gf__error(GF_ERR_INVALID,
                         "%s: values and indices must both point to where the results go",
                         name);
    if (!x) return gf__null_arg(name, "x");
    gf_tensor *v = NULL, *ix = NULL;
    gf_status st = extreme_dim(op, name, x, dim, keepdim, &v, &ix);
    if (st != GF_OK) return st;
    /* extreme_dim validated dim, so it normalises without error here. */
    st = gf__ag_record_extreme_dim(op, x, v, ix, gf__norm_dim(dim, x->rank, name), keepdim);
    if (st != GF_OK) {
        gf_tensor_release(v);
        gf_tensor_release(ix);
        return st;
    }
    *values = gf__ret(v);
    *indices = gf__ret(ix);
    return GF_OK;
}

gf_status gf_max_dim(const gf_tensor *x, int dim, bool keepdim, gf_tensor **values,
                     gf_tensor **indices) {
    return max_min_dim(GFP_OP_MAX_DIM, "max_dim", x, dim, keepdim, values, indices);
}

gf_status gf_min_dim(const gf_tensor *x, int dim, bool keepdim, gf_tensor **values,
                     gf_tensor **indices) {
    return max_min_dim(GFP_OP_MIN_DIM, "min_dim", x, dim, keepdim, values, indices);
}

/* The flattened x as a contiguous 1-D tensor (a view when x is contiguous). */
static gf_tensor *flat_contiguous(const gf_tensor *x) {
    int64_t n = gf__numel(x), one = 1;
    if (gf__is_contiguous(x)) return gf__view(x, &n, &one, 1, x->offset);
    gf_tensor *c = gf__empty(x->sizes, x->rank, x->dtype, x->storage->device);
    if (!c) return NULL;
    if (gf__copy_into(c, x) != GF_OK) {
        gf_tensor_release(c);
        return NULL;
    }
    gf_tensor *f = gf__view(c, &n, &one, 1, c->offset);
    gf_tensor_release(c);
    return f;
}

static gf_tensor *arg_extreme(gfp_op op, const char *name, const gf_tensor *x, int dim,
                              bool keepdim) {
    if (!x) {
        gf__null_arg(name, "x");
        return NULL;
    }
    gf_tensor *ix = NULL;
    if (dim != GF_DIM_ALL) {
        if (extreme_dim(op, name, x, dim, keepdim, NULL, &ix) != GF_OK) return NULL;
        return gf__ret(ix);
    }
    if (gf__numel(x) == 0) {
        char buf[128];
        gf__error(GF_ERR_INDEX,
                  "%s: cannot reduce over a zero-size dimension: the input (shape %s) is "
                  "empty; pass a dim to reduce along instead of GF_DIM_ALL",
                  name, gf__shape_str(x->sizes, x->rank, buf, sizeof buf));
        return NULL;
    }
    gf_tensor *flat = flat_contiguous(x);
    if (!flat) return NULL;
    gf_tensor *v = NULL;
    gf_status st = extreme_run(op, name, flat, 0, &v, &ix);
    gf_tensor_release(flat);
    gf_tensor_release(v);
    if (st != GF_OK) return NULL;
    /* As PyTorch: 0-dim, or every dim kept with size 1 when keepdim. */
    int64_t sz[GF_MAX_RANK], str[GF_MAX_RANK];
    int r = keepdim ? x->rank : 0;
    for (int i = 0; i < r; i++) {
        sz[i] = 1;
        str[i] = 1;
    }
    gf_tensor *res = gf__view(ix, sz, str, r, ix->offset);
    gf_tensor_release(ix);
    return ret_new(res);
}

gf_tensor *gf_argmax(const gf_tensor *x, int dim, bool keepdim) {
    return arg_extreme(GFP_OP_MAX_DIM, "argmax", x, dim, keepdim);
}

gf_tensor *gf_argmin(const gf_tensor *x, int dim, bool keepdim) {
    return arg_extreme(GFP_OP_MIN_DIM, "argmin", x, dim, keepdim);
}
