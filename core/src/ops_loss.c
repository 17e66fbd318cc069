/* SPDX-License-Identifier: BSD-3-Clause */
/* ops_loss.c — nll_loss, cross_entropy, mse_loss, as PyTorch computes them.
 *
 * Losses are composites of public differentiable ops (gather, where, sum,
 * div...), so their gradients come from those ops' rules and no loss needs
 * a kernel or a backward of its own. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "amp/amp_internal.h"
#include "internal.h"

static gf_tensor *ret_new(gf_tensor *t) { return t ? gf__ret(t) : NULL; }

static gf_status check_reduction(gf_reduction r, const char *op) {
    if (r == GF_REDUCTION_NONE || r == GF_REDUCTION_MEAN || r == GF_REDUCTION_SUM) return GF_OK;
    return gf__error(GF_ERR_INVALID,
                     "%s: reduction %d is not one of GF_REDUCTION_NONE, GF_REDUCTION_MEAN, "
                     "GF_REDUCTION_SUM", op, (int)r);
}

/* Checks (scores, class-index target, weight) as nll_loss and cross_entropy
 * take them: scores [C] with a 0-dim target, or [N, C, d...] with a target
 * [N, d...]. Sets the class dim. */
static gf_status check_class_target(const gf_tensor *x, const gf_tensor *target,
                                    const gf_tensor *weight, const char *op, const char *xname,
                                    int *class_dim) {
    char bx[128], bt[128], bw[128];
    gf__shape_str(x->sizes, x->rank, bx, sizeof bx);
    gf__shape_str(target->sizes, target->rank, bt, sizeof bt);
    if (!gf__same_device(x, target, op) || (weight && !gf__same_device(x, weight, op)))
        return GF_ERR_DEVICE;
    if (!gf_dtype_is_float(x->dtype))
        return gf__error(GF_ERR_DTYPE, "%s: %s must have a float dtype, got %s", op, xname,
                         gf_dtype_name(x->dtype));
    if (target->dtype != GF_I64 && target->dtype != GF_I32)
        return gf__error(GF_ERR_DTYPE,
                         "%s: target must hold class indices of dtype i64 (or i32), got %s; "
                         "convert it with gf_to_dtype(target, GF_I64)", op,
                         gf_dtype_name(target->dtype));
    if (x->rank == 0)
        return gf__error(GF_ERR_SHAPE, "%s: %s must be [C] or [N, C, ...], got a 0-dim tensor",
                         op, xname);
    if (x->rank == 1) {
        if (target->rank != 0)
            return gf__error(GF_ERR_SHAPE,
                             "%s: %s of shape %s (one sample) needs a 0-dim target, got target "
                             "of shape %s", op, xname, bx, bt);
        *class_dim = 0;
    } else {
        if (target->rank != x->rank - 1)
            return gf__error(GF_ERR_SHAPE,
                             "%s: %s of shape %s needs a target of rank %d ([N, d...] without "
                             "the class dim), got target of shape %s", op, xname, bx,
                             x->rank - 1, bt);
        if (target->sizes[0] != x->sizes[0])
            return gf__error(GF_ERR_SHAPE,
                             "%s: expected %s batch_size (%lld) to match target batch_size "
                             "(%lld)", op, xname, (long long)x->sizes[0],
                             (long long)target->sizes[0]);
        for (int d = 1; d < target->rank; d++) {
            if (target->sizes[d] == x->sizes[d + 1]) continue;
            int64_t want[GF_MAX_RANK];
            want[0] = x->sizes[0];
            for (int k = 2; k < x->rank; k++) want[k - 1] = x->sizes[k];
            char bwant[128];
            return gf__error(GF_ERR_SHAPE, "%s: expected target of shape %s (for %s %s), got "
                             "%s", op, gf__shape_str(want, x->rank - 1, bwant, sizeof bwant),
                             xname, bx, bt);
        }
        *class_dim = 1;
    }
    int64_t c = x->sizes[*class_dim];
    if (weight && (weight->rank != 1 || weight->sizes[0] != c))
        return gf__error(GF_ERR_SHAPE,
                         "%s: weight should be defined either for all %lld classes or no "
                         "classes (NULL), but got weight of shape %s", op, (long long)c,
                         gf__shape_str(weight->sizes, weight->rank, bw, sizeof bw));
    if (weight && weight->dtype != x->dtype)
        return gf__error(GF_ERR_DTYPE, "%s: weight has dtype %s but %s has %s; they must be "
                         "the same", op, gf_dtype_name(weight->dtype), xname,
                         gf_dtype_name(x->dtype));
    return GF_OK;
}

/* What nll_loss and cross_entropy share, per target element. */
typedef struct nll_parts {
    gf_tensor *valid; /* bool: target != ignore_index */
    gf_tensor *loss;  /* -w[t] * logp[t], 0 where ignored; target's shape */
    gf_tensor *wsum;  /* 0-dim: sum of w[t] over the positions not ignored */
    gf_tensor *zero;  /* 0-dim 0 of the scores' dtype */
} nll_parts;

static void nll_parts_release(nll_parts *p) {
    gf_tensor_release(p->valid);
    gf_tensor_release(p->loss);
    gf_tensor_release(p->wsum);
    gf_tensor_release(p->zero);
    memset(p, 0, sizeof *p);
}

/* After gather refused a class id: restate the error for the loss, naming
 * the offending target as PyTorch does ("Target 5 is out of bounds"). Runs
 * only on that failure path. Scope suspended. */
static void target_range_error(const gf_tensor *safe, int64_t classes, int64_t ignore_index,
                               const char *op) {
    gf_tensor *a = gf_amin(safe, NULL, 0, false);
    gf_tensor *b = a ? gf_amax(safe, NULL, 0, false) : NULL;
    double mn = 0, mx = 0;
    bool ok = b && gf_tensor_item(a, &mn) == GF_OK && gf_tensor_item(b, &mx) == GF_OK;
    /* An i64 id is read exactly: as a double, INT64_MAX rounds to 2^63,
     * which no long long holds. */
    int64_t exact = 0;
    bool have_exact = ok && safe->dtype == GF_I64 &&
                      gf_tensor_to_host(mn < 0 ? a : b, &exact, sizeof exact) == GF_OK;
    gf_tensor_release(a);
    gf_tensor_release(b);
    if (!ok || (mn >= 0 && mx < (double)classes)) return; /* keep gather's error */
    char bad[32];
    if (have_exact) snprintf(bad, sizeof bad, "%lld", (long long)exact);
    else snprintf(bad, sizeof bad, "%.0f", mn < 0 ? mn : mx);
    gf__error(GF_ERR_INDEX,
              "%s: target %s is out of bounds: class ids must be in [0, %lld) or equal "
              "ignore_index (%lld)", op, bad, (long long)classes, (long long)ignore_index);
}

/* Call with the scope suspended. Ignored positions read class 0 (a safe
 * target) and are then masked with where, so -inf there cannot leak. */
static gf_status nll_compute(const gf_tensor *lp, const gf_tensor *target,
                             const gf_tensor *weight, int cd, int64_t ignore_index,
                             const char *op, nll_parts *out) {
    memset(out, 0, sizeof *out);
    gf_device *dev = lp->storage->device;
    gf_tensor *t64 = NULL, *zero_i = NULL, *safe = NULL, *idx = NULL, *pk = NULL, *picked = NULL;
    gf_tensor *flat = NULL, *wflat = NULL, *wt = NULL, *wp = NULL, *wvalid = NULL, *neg = NULL;
    int64_t minus1 = -1;
    gf_status st = GF_OK;
#define STEP(var, expr)                    \
    do {                                   \
        if (!((var) = (expr))) goto fail;  \
    } while (0)
    STEP(t64, gf_to_dtype(target, GF_I64));
    STEP(out->valid, gf_ne_scalar_int(t64, ignore_index));
    STEP(zero_i, gf_scalar(0.0, GF_I64, dev));
    STEP(out->zero, gf_scalar(0.0, lp->dtype, dev));
    STEP(safe, gf_where(out->valid, t64, zero_i));
    STEP(idx, gf_unsqueeze(safe, cd));
    if (!(pk = gf_gather(lp, cd, idx))) {
        if (gf__status() == GF_ERR_INDEX)
            target_range_error(safe, lp->sizes[cd], ignore_index, op);
        goto fail;
    }
    STEP(picked, gf_squeeze(pk, cd));
    if (weight) {
        STEP(flat, gf_reshape(safe, &minus1, 1));
        STEP(wflat, gf_index_select(weight, 0, flat));
        STEP(wt, gf_reshape(wflat, target->sizes, target->rank));
        STEP(wp, gf_mul(picked, wt));
        STEP(wvalid, gf_where(out->valid, wt, out->zero));
    } else {
        wp = gf_tensor_retain(picked);
        STEP(wvalid, gf_to_dtype(out->valid, lp->dtype));
    }
    STEP(neg, gf_neg(wp));
    STEP(out->loss, gf_where(out->valid, neg, out->zero));
    STEP(out->wsum, gf_sum(wvalid, NULL, 0, false));
#undef STEP
    goto done;
fail:
    st = gf__status();
    if (st == GF_OK) st = GF_ERR_INVALID;
    nll_parts_release(out);
done:
    gf_tensor_release(t64);
    gf_tensor_release(zero_i);
    gf_tensor_release(safe);
    gf_tensor_release(idx);
    gf_tensor_release(pk);
    gf_tensor_release(picked);
    gf_tensor_release(flat);
    gf_tensor_release(wflat);
    gf_tensor_release(wt);
    gf_tensor_release(wp);
    gf_tensor_release(wvalid);
    gf_tensor_release(neg);
    return st;
}

/* none: loss itself; sum; mean: sum / denom (PyTorch divides by the summed
 * target weights, not by the element count). New reference. */
static gf_tensor *reduce_loss(gf_tensor *loss, const gf_tensor *denom, gf_reduction r) {
    if (r == GF_REDUCTION_NONE) return gf_tensor_retain(loss);
    gf_tensor *s = gf_sum(loss, NULL, 0, false);
    if (!s || r == GF_REDUCTION_SUM) return s;
    gf_tensor *m = gf_div(s, denom);
    gf_tensor_release(s);
    return m;
}

gf_tensor *gf_nll_loss(const gf_tensor *log_probs, const gf_tensor *target,
                       const gf_tensor *weight, gf_reduction reduction, int64_t ignore_index) {
    GF__AMP_HOOK(NLL_LOSS, 3, gf_nll_loss(amp_v[0], amp_v[1], amp_v[2], reduction, ignore_index), log_probs, target, weight);
    const char *op = "nll_loss";
    if (!log_probs || !target) {
        gf__null_arg(op, !log_probs ? "log_probs" : "target");
        return NULL;
    }
    int cd = 0;
    if (check_reduction(reduction, op) != GF_OK ||
        check_class_target(log_probs, target, weight, op, "log_probs", &cd) != GF_OK)
        return NULL;
    int s = gf__scope_suspend();
    nll_parts parts;
    gf_tensor *y = NULL;
    if (nll_compute(log_probs, target, weight, cd, ignore_index, op, &parts) == GF_OK) {
        y = reduce_loss(parts.loss, parts.wsum, reduction);
        nll_parts_release(&parts);
    }
    gf__scope_resume(s);
    return ret_new(y);
}

/* A view of weight [C] shaped to broadcast along dim cd of a rank-`rank`
 * tensor (public op, so weight's gradient flows). */
static gf_tensor *weight_along(const gf_tensor *weight, int rank, int cd) {
    int64_t sz[GF_MAX_RANK];
    for (int i = 0; i < rank; i++) sz[i] = 1;
    sz[cd] = weight->sizes[0];
    return gf_reshape(weight, sz, rank);
}

/* Soft targets: loss_i = -sum_c w_c * t_ic * logp_ic; mean divides by the
 * number of samples (numel / C), as PyTorch. Scope suspended. */
static gf_tensor *cross_entropy_probs(const gf_tensor *logits, const gf_tensor *target,
                                      const gf_tensor *weight, gf_reduction reduction,
                                      double eps, int cd) {
    int64_t c = logits->sizes[cd];
    gf_tensor *lp = NULL, *t = NULL, *ts = NULL, *prod = NULL, *wv = NULL, *wprod = NULL;
    gf_tensor *sum_c = NULL, *loss = NULL, *y = NULL;
    lp = gf_log_softmax(logits, cd);
    if (!lp) goto done;
    if (eps > 0) {
        ts = gf_mul_scalar(target, 1.0 - eps);
        t = ts ? gf_add_scalar(ts, eps / (double)c) : NULL;
    } else {
        t = gf_tensor_retain((gf_tensor *)target);
    }
    prod = t ? gf_mul(lp, t) : NULL;
    if (!prod) goto done;
    if (weight) {
        wv = weight_along(weight, logits->rank, cd);
        wprod = wv ? gf_mul(prod, wv) : NULL;
    } else {
        wprod = gf_tensor_retain(prod);
    }
    sum_c = wprod ? gf_sum(wprod, &cd, 1, false) : NULL;
    loss = sum_c ? gf_neg(sum_c) : NULL;
    if (!loss) goto done;
    if (reduction == GF_REDUCTION_MEAN) {
        gf_tensor *s = gf_sum(loss, NULL, 0, false);
        int64_t samples = c > 0 ? gf__numel(logits) / c : 0;
        y = s ? gf_div_scalar(s, (double)samples) : NULL;
        gf_tensor_release(s);
    } else {
        y = reduce_loss(loss, NULL, reduction);
    }
done:
    gf_tensor_release(lp);
    gf_tensor_release(t);
    gf_tensor_release(ts);
    gf_tensor_release(prod);
    gf_tensor_release(wv);
    gf_tensor_release(wprod);
    gf_tensor_release(sum_c);
    gf_tensor_release(loss);
    return y;
}

/* Class-index targets: (1 - eps) * nll + eps / C * smooth, where smooth_i =
 * -sum_c w_c logp_ic, masked and reduced as the nll term. Scope suspended. */
static gf_tensor *cross_entropy_classes(const gf_tensor *logits, const gf_tensor *target,
                                        const gf_tensor *weight, gf_reduction reduction,
                                        int64_t ignore_index, double eps, int cd) {
    int64_t c = logits->sizes[cd];
    nll_parts parts = {0};
    gf_tensor *lp = NULL, *nll = NULL, *wv = NULL, *prod = NULL, *sum_c = NULL, *neg = NULL;
    gf_tensor *smooth = NULL, *smooth_r = NULL, *a = NULL, *b = NULL, *y = NULL;
    lp = gf_log_softmax(logits, cd);
    if (!lp || nll_compute(lp, target, weight, cd, ignore_index, "cross_entropy", &parts) != GF_OK)
        goto done;
    nll = reduce_loss(parts.loss, parts.wsum, reduction);
    if (!nll || eps == 0.0) {
        y = nll;
        nll = NULL;
        goto done;
    }
    if (weight) {
        wv = weight_along(weight, logits->rank, cd);
        prod = wv ? gf_mul(lp, wv) : NULL;
    } else {
        prod = gf_tensor_retain(lp);
    }
    sum_c = prod ? gf_sum(prod, &cd, 1, false) : NULL;
    neg = sum_c ? gf_neg(sum_c) : NULL;
    smooth = neg ? gf_where(parts.valid, neg, parts.zero) : NULL;
    smooth_r = smooth ? reduce_loss(smooth, parts.wsum, reduction) : NULL;
    a = smooth_r ? gf_mul_scalar(nll, 1.0 - eps) : NULL;
    b = a ? gf_mul_scalar(smooth_r, eps / (double)c) : NULL;
    y = b ? gf_add(a, b) : NULL;
done:
    nll_parts_release(&parts);
    gf_tensor_release(lp);
    gf_tensor_release(nll);
    gf_tensor_release(wv);
    gf_tensor_release(prod);
    gf_tensor_release(sum_c);
    gf_tensor_release(neg);
    gf_tensor_release(smooth);
    gf_tensor_release(smooth_r);
    gf_tensor_release(a);
    gf_tensor_release(b);
    return y;
}

gf_tensor *gf_cross_entropy(const gf_tensor *logits, const gf_tensor *target,
                            const gf_tensor *weight, gf_reduction reduction,
                            int64_t ignore_index, double label_smoothing) {
    GF__AMP_HOOK(CROSS_ENTROPY, 3, gf_cross_entropy(amp_v[0], amp_v[1], amp_v[2], reduction, ignore_index, label_smoothing), logits, target, weight);
    const char *op = "cross_entropy";
    if (!logits || !target) {
        gf__null_arg(op, !logits ? "logits" : "target");
        return NULL;
    }
    if (check_reduction(reduction, op) != GF_OK) return NULL;
    if (!(label_smoothing >= 0.0 && label_smoothing <= 1.0)) {
        gf__error(GF_ERR_INVALID, "cross_entropy: label_smoothing must be between 0.0 and 1.0, "
                  "got %g", label_smoothing);
        return NULL;
    }
    int cd = 0;
    gf_tensor *y = NULL;
    if (gf_dtype_is_float(target->dtype)) {
        /* Class probabilities of the logits' shape, as PyTorch accepts. */
        char bl[128], bt[128];
        if (!gf__same_device(logits, target, op) ||
            (weight && !gf__same_device(logits, weight, op)))
            return NULL;
        if (target->rank != logits->rank || logits->rank == 0 ||
            memcmp(target->sizes, logits->sizes, sizeof(int64_t) * (size_t)logits->rank)) {
            gf__error(GF_ERR_SHAPE,
                      "cross_entropy: a float target holds class probabilities and must have "
                      "the logits' shape %s, got %s; class indices must be i64",
                      gf__shape_str(logits->sizes, logits->rank, bl, sizeof bl),
                      gf__shape_str(target->sizes, target->rank, bt, sizeof bt));
            return NULL;
        }
        if (target->dtype != logits->dtype) {
            gf__error(GF_ERR_DTYPE, "cross_entropy: probability target has dtype %s but logits "
                      "have %s; they must be the same", gf_dtype_name(target->dtype),
                      gf_dtype_name(logits->dtype));
            return NULL;
        }
        if (ignore_index >= 0) {
            gf__error(GF_ERR_INVALID, "cross_entropy: ignore_index is not supported for "
                      "probability (float) targets; pass a negative ignore_index such as -100");
            return NULL;
        }
        cd = logits->rank == 1 ? 0 : 1;
        if (weight && (weight->rank != 1 || weight->sizes[0] != logits->sizes[cd] ||
                       weight->dtype != logits->dtype)) {
            gf__error(GF_ERR_SHAPE, "cross_entropy: weight must be [%lld] of the logits' dtype, "
                      "got %s %s", (long long)logits->sizes[cd], gf_dtype_name(weight->dtype),
                      gf__shape_str(weight->sizes, weight->rank, bt, sizeof bt));
            return NULL;
        }
        int s = gf__scope_suspend();
        y = cross_entropy_probs(logits, target, weight, reduction, label_smoothing, cd);
        gf__scope_resume(s);
        return ret_new(y);
    }
    if (check_class_target(logits, target, weight, op, "logits", &cd) != GF_OK) return NULL;
    int s = gf__scope_suspend();
    y = cross_entropy_classes(logits, target, weight, reduction, ignore_index, label_smoothing,
                              cd);
    gf__scope_resume(s);
    return ret_new(y);
}

gf_tensor *gf_mse_loss(const gf_tensor *input, const gf_tensor *target, gf_reduction reduction) {
    GF__AMP_HOOK(MSE_LOSS, 2, gf_mse_loss(amp_v[0], amp_v[1], reduction), input, target);
    const char *op = "mse_loss";
    if (!input || !target) {
        gf__null_arg(op, !input ? "input" : "target");
        return NULL;
    }
    if (check_reduction(reduction, op) != GF_OK || !gf__same_device(input, target, op))
        return NULL;
    if (!gf_dtype_is_float(input->dtype) || !gf_dtype_is_float(target->dtype)) {
        gf__error(GF_ERR_DTYPE, "mse_loss: input and target must have float dtypes, got %s and "
                  "%s; convert with gf_to_dtype", gf_dtype_name(input->dtype),
                  gf_dtype_name(target->dtype));
        return NULL;
    }
    int64_t shape[GF_MAX_RANK];
    int rank = 0;
    if (gf__broadcast_shapes(input->sizes, input->rank, target->sizes, target->rank, shape,
                             &rank, op) != GF_OK)
        return NULL;
    int s = gf__scope_suspend();
    gf_tensor *d = gf_sub(input, target);
    gf_tensor *sq = d ? gf_square(d) : NULL;
    gf_tensor *y = NULL;
    if (sq) {
        if (reduction == GF_REDUCTION_MEAN)
            y = gf_mean(sq, NULL, 0, false);
        else
            y = reduce_loss(sq, NULL, reduction);
    }
    gf_tensor_release(d);
    gf_tensor_release(sq);
    gf__scope_resume(s);
    return ret_new(y);
}
