/* SPDX-License-Identifier: BSD-3-Clause */
/* ops_loss_extra.c — binary cross entropy (on probabilities and on logits),
 * l1 / smooth l1 / huber, kl_div, margin ranking, cosine similarity and
 * cosine embedding losses, as PyTorch computes them.
 *
 * Like ops_loss.c, every loss is a composite of public differentiable ops
 * (where, maximum, log, exp, sum...), so gradients of every order come from
 * those ops' rules: no kernel, no op id and no backward of their own. */
#include <math.h>
#include <string.h>

#include "amp/amp_internal.h"
#include "internal.h"

/* The temporaries of one composite: T(expr) evaluates expr only while every
 * earlier step succeeded and keeps its result for one release at the end. */
typedef struct tmps {
    gf_tensor *t[40];
    int n;
    bool bad;
} tmps;

static gf_tensor *keep(tmps *l, gf_tensor *t) {
    if (!t || l->n == (int)(sizeof l->t / sizeof l->t[0])) {
        if (t) {
            gf_tensor_release(t);
            gf__error(GF_ERR_INVALID, "loss: internal temporary list full");
        }
        l->bad = true;
        return NULL;
    }
    l->t[l->n++] = t;
    return t;
}
#define T(expr) (L.bad ? NULL : keep(&L, (expr)))

/* Releases the temporaries and returns a new reference to y (NULL when any
 * step failed). Scope still suspended; the caller resumes it. */
static gf_tensor *finish(tmps *l, gf_tensor *y) {
    gf_tensor *r = (!l->bad && y) ? gf_tensor_retain(y) : NULL;
    for (int i = 0; i < l->n; i++) gf_tensor_release(l->t[i]);
    return r;
}

static gf_tensor *ret_new(gf_tensor *t) { return t ? gf__ret(t) : NULL; }

static bool check_reduction(gf_reduction r, const char *op, bool batchmean) {
    if (r == GF_REDUCTION_NONE || r == GF_REDUCTION_MEAN || r == GF_REDUCTION_SUM ||
        (batchmean && r == GF_REDUCTION_BATCHMEAN))
        return true;
    gf__error(GF_ERR_INVALID,
              "%s: reduction %d is not one of GF_REDUCTION_NONE, GF_REDUCTION_MEAN, "
              "GF_REDUCTION_SUM%s", op, (int)r, batchmean ? ", GF_REDUCTION_BATCHMEAN" : "");
    return false;
}

/* Float dtype and one device for every non-NULL tensor of ts. */
static bool check_floats(const char *op, const gf_tensor *const *ts, const char *const *names,
                         int n) {
    const gf_tensor *first = NULL;
    for (int i = 0; i < n; i++) {
        if (!ts[i]) continue;
        if (!gf_dtype_is_float(ts[i]->dtype)) {
            gf__error(GF_ERR_DTYPE, "%s: %s must have a float dtype, got %s; convert it with "
                      "gf_to_dtype", op, names[i], gf_dtype_name(ts[i]->dtype));
            return false;
        }
        if (first && !gf__same_device(first, ts[i], op)) return false;
        if (!first) first = ts[i];
    }
    return true;
}

/* PyTorch's "target size must be the same as input size". */
static bool check_same_shape(const char *op, const gf_tensor *input, const gf_tensor *target) {
    if (target->rank == input->rank &&
        !memcmp(target->sizes, input->sizes, sizeof(int64_t) * (size_t)input->rank))
        return true;
    char bi[128], bt[128];
    gf__error(GF_ERR_SHAPE, "%s: target size %s must be the same as input size %s", op,
              gf__shape_str(target->sizes, target->rank, bt, sizeof bt),
              gf__shape_str(input->sizes, input->rank, bi, sizeof bi));
    return false;
}

/* An optional tensor (weight, pos_weight) must broadcast to input's shape
 * without growing it. */
static bool check_broadcasts_to(const char *op, const char *name, const gf_tensor *w,
                                const gf_tensor *input) {
    if (!w) return true;
    int64_t shape[GF_MAX_RANK];
    int rank = 0;
    if (gf__broadcast_shapes(input->sizes, input->rank, w->sizes, w->rank, shape, &rank, op) !=
        GF_OK)
        return false;
    if (rank == input->rank &&
        !memcmp(shape, input->sizes, sizeof(int64_t) * (size_t)input->rank))
        return true;
    char bi[128], bw[128];
    gf__error(GF_ERR_SHAPE, "%s: %s of shape %s must broadcast to the input's shape %s", op,
              name, gf__shape_str(w->sizes, w->rank, bw, sizeof bw),
              gf__shape_str(input->sizes, input->rank, bi, sizeof bi));
    return false;
}

/* none: loss; sum; mean: over every element (NaN for 0 elements, as
 * PyTorch); batchmean: sum / size of dim 0 (sum for a 0-dim loss). */
static gf_tensor *reduce(tmps *l, gf_tensor *loss, gf_reduction r) {
    tmps L = *l;
    gf_tensor *y = NULL;
    switch (r) {
    case GF_REDUCTION_NONE: y = loss; break;
    case GF_REDUCTION_SUM: y = T(gf_sum(loss, NULL, 0, false)); break;
    case GF_REDUCTION_MEAN: y = T(gf_mean(loss, NULL, 0, false)); break;
    case GF_REDUCTION_BATCHMEAN: {
        gf_tensor *s = T(gf_sum(loss, NULL, 0, false));
        y = loss && loss->rank > 0 ? T(gf_div_scalar(s, (double)loss->sizes[0])) : s;
        break;
    }
    }
    *l = L;
    return y;
}

gf_tensor *gf_binary_cross_entropy(const gf_tensor *input, const gf_tensor *target,
                                   const gf_tensor *weight, gf_reduction reduction) {
    GF__AMP_HOOK(BCE, 3, gf_binary_cross_entropy(amp_v[0], amp_v[1], amp_v[2], reduction), input, target, weight);
    const char *op = "binary_cross_entropy";
    if (!input || !target) {
        gf__null_arg(op, !input ? "input" : "target");
        return NULL;
    }
    const gf_tensor *ts[3] = {input, target, weight};
    const char *names[3] = {"input", "target", "weight"};
    if (!check_reduction(reduction, op, false) || !check_floats(op, ts, names, 3) ||
        !check_same_shape(op, input, target) || !check_broadcasts_to(op, "weight", weight, input))
        return NULL;
    int s = gf__scope_suspend();
    tmps L = {0};
    /* PyTorch refuses probabilities outside [0, 1]. */
    if (gf__numel(input) > 0) {
        gf_tensor *out = T(gf_logical_or(T(gf_lt_scalar(input, 0.0)),
                                         T(gf_gt_scalar(input, 1.0))));
        gf_tensor *any = T(gf_amax(T(gf_to_dtype(out, GF_F32)), NULL, 0, false));
        double v = 0;
        if (any && gf_tensor_item(any, &v) == GF_OK && v != 0) {
            gf__error(GF_ERR_INVALID, "%s: all elements of input should be between 0 and 1 "
                      "(probabilities); for logits use gf_binary_cross_entropy_with_logits", op);
            L.bad = true;
        }
    }
    /* -(t * max(log x, -100) + (1 - t) * max(log(1 - x), -100)) * w */
    gf_tensor *lx = T(gf_maximum_scalar(T(gf_log(input)), -100.0));
    gf_tensor *l1x = T(gf_maximum_scalar(T(gf_log(T(gf_rsub_scalar(input, 1.0)))), -100.0));
    gf_tensor *a = T(gf_mul(target, lx));
    gf_tensor *b = T(gf_mul(T(gf_rsub_scalar(target, 1.0)), l1x));
    gf_tensor *loss = T(gf_neg(T(gf_add(a, b))));
    if (weight) loss = T(gf_mul(loss, weight));
    gf_tensor *y = reduce(&L, loss, reduction);
    y = finish(&L, y);
    gf__scope_resume(s);
    return ret_new(y);
}

gf_tensor *gf_binary_cross_entropy_with_logits(const gf_tensor *input, const gf_tensor *target,
                                               const gf_tensor *weight,
                                               const gf_tensor *pos_weight,
                                               gf_reduction reduction) {
    GF__AMP_HOOK(BCE_WITH_LOGITS, 4, gf_binary_cross_entropy_with_logits(amp_v[0], amp_v[1], amp_v[2], amp_v[3], reduction), input, target, weight, pos_weight);
    const char *op = "binary_cross_entropy_with_logits";
    if (!input || !target) {
        gf__null_arg(op, !input ? "input" : "target");
        return NULL;
    }
    const gf_tensor *ts[4] = {input, target, weight, pos_weight};
    const char *names[4] = {"input", "target", "weight", "pos_weight"};
    if (!check_reduction(reduction, op, false) || !check_floats(op, ts, names, 4) ||
        !check_same_shape(op, input, target) ||
        !check_broadcasts_to(op, "weight", weight, input) ||
        !check_broadcasts_to(op, "pos_weight", pos_weight, input))
        return NULL;
    int s = gf__scope_suspend();
    tmps L = {0};
    /* softplus(-x) = log1p(exp(-x)) for x >= 0, -x + log1p(exp(x)) for
     * x < 0: stable for every x, and each branch reads x clipped to its own
     * side, so the branch where() drops has finite derivatives of every
     * order (no kink at 0, unlike max(-x, 0) + log1p(exp(-|x|))).
     * loss = (1 - t) x + (1 + (pw - 1) t) softplus(-x). */
    gf_tensor *zero = T(gf_zeros_like(input));
    gf_tensor *nonneg = T(gf_ge_scalar(input, 0.0));
    gf_tensor *xp = T(gf_where(nonneg, input, zero));
    gf_tensor *xn = T(gf_where(nonneg, zero, input));
    gf_tensor *sp_p = T(gf_log1p(T(gf_exp(T(gf_neg(xp))))));
    gf_tensor *sp_n = T(gf_sub(T(gf_log1p(T(gf_exp(xn)))), xn));
    gf_tensor *sp = T(gf_where(nonneg, sp_p, sp_n));
    gf_tensor *coef = NULL;
    if (pos_weight)
        coef = T(gf_add_scalar(T(gf_mul(T(gf_sub_scalar(pos_weight, 1.0)), target)), 1.0));
    gf_tensor *lin = T(gf_mul(T(gf_rsub_scalar(target, 1.0)), input));
    gf_tensor *loss = T(gf_add(lin, coef ? T(gf_mul(coef, sp)) : sp));
    if (weight) loss = T(gf_mul(loss, weight));
    gf_tensor *y = reduce(&L, loss, reduction);
    y = finish(&L, y);
    gf__scope_resume(s);
    return ret_new(y);
}

/* Checks shared by the pointwise regression losses: float operands that
 * broadcast together. */
static bool check_pair(const char *op, const gf_tensor *input, const gf_tensor *target,
                       gf_reduction reduction, bool batchmean) {
    if (!input || !target) {
        gf__null_arg(op, !input ? "input" : "target");
        return false;
    }
    const gf_tensor *ts[2] = {input, target};
    const char *names[2] = {"input", "target"};
    int64_t shape[GF_MAX_RANK];
    int rank = 0;
    return check_reduction(reduction, op, batchmean) && check_floats(op, ts, names, 2) &&
           gf__broadcast_shapes(input->sizes, input->rank, target->sizes, target->rank, shape,
                                &rank, op) == GF_OK;
}

gf_tensor *gf_l1_loss(const gf_tensor *input, const gf_tensor *target, gf_reduction reduction) {
    GF__AMP_HOOK(L1_LOSS, 2, gf_l1_loss(amp_v[0], amp_v[1], reduction), input, target);
    if (!check_pair("l1_loss", input, target, reduction, false)) return NULL;
    int s = gf__scope_suspend();
    tmps L = {0};
    gf_tensor *loss = T(gf_abs(T(gf_sub(input, target))));
    gf_tensor *y = finish(&L, reduce(&L, loss, reduction));
    gf__scope_resume(s);
    return ret_new(y);
}

/* where(|d| < beta, 0.5 d^2 * c2, c1 * (|d| - 0.5 * beta)): smooth l1 has
 * c2 = 1/beta, c1 = 1; huber has c2 = 1, c1 = delta (and beta = delta). */
static gf_tensor *piecewise(const gf_tensor *input, const gf_tensor *target,
                            gf_reduction reduction, double beta, double c2, double c1) {
    int s = gf__scope_suspend();
    tmps L = {0};
    gf_tensor *d = T(gf_sub(input, target));
    gf_tensor *z = T(gf_abs(d));
    gf_tensor *loss;
    if (beta == 0.0) {
        loss = z;
    } else {
        gf_tensor *quad = T(gf_mul_scalar(T(gf_square(d)), 0.5 * c2));
        gf_tensor *lin = T(gf_mul_scalar(T(gf_sub_scalar(z, 0.5 * beta)), c1));
        loss = T(gf_where(T(gf_lt_scalar(z, beta)), quad, lin));
    }
    gf_tensor *y = finish(&L, reduce(&L, loss, reduction));
    gf__scope_resume(s);
    return ret_new(y);
}

gf_tensor *gf_smooth_l1_loss(const gf_tensor *input, const gf_tensor *target,
                             gf_reduction reduction, double beta) {
    GF__AMP_HOOK(SMOOTH_L1_LOSS, 2, gf_smooth_l1_loss(amp_v[0], amp_v[1], reduction, beta), input, target);
    if (!check_pair("smooth_l1_loss", input, target, reduction, false)) return NULL;
    if (!(beta >= 0.0) || isinf(beta)) {
        gf__error(GF_ERR_INVALID, "smooth_l1_loss: beta must be finite and >= 0 "
                  "(PyTorch's default is 1.0), got %g", beta);
        return NULL;
    }
    return piecewise(input, target, reduction, beta, beta > 0 ? 1.0 / beta : 0.0, 1.0);
}

gf_tensor *gf_huber_loss(const gf_tensor *input, const gf_tensor *target,
                         gf_reduction reduction, double delta) {
    GF__AMP_HOOK(HUBER_LOSS, 2, gf_huber_loss(amp_v[0], amp_v[1], reduction, delta), input, target);
    if (!check_pair("huber_loss", input, target, reduction, false)) return NULL;
    if (!(delta > 0.0) || isinf(delta)) {
        gf__error(GF_ERR_INVALID, "huber_loss: delta must be finite and > 0 (PyTorch's default "
                  "is 1.0), got %g", delta);
        return NULL;
    }
    return piecewise(input, target, reduction, delta, 1.0, delta);
}

gf_tensor *gf_kl_div(const gf_tensor *input, const gf_tensor *target, gf_reduction reduction,
                     bool log_target) {
    GF__AMP_HOOK(KL_DIV, 2, gf_kl_div(amp_v[0], amp_v[1], reduction, log_target), input, target);
    if (!check_pair("kl_div", input, target, reduction, true)) return NULL;
    int s = gf__scope_suspend();
    tmps L = {0};
    gf_tensor *loss;
    if (log_target) {
        /* exp(t) * (t - input) */
        loss = T(gf_mul(T(gf_exp(target)), T(gf_sub(target, input))));
    } else {
        /* xlogy(t, t) - t * input: 0 where t == 0 (with a zero gradient
         * there), NaN for t < 0, as PyTorch. */
        gf_tensor *one = T(gf_scalar(1.0, target->dtype, target->storage->device));
        gf_tensor *safe = T(gf_where(T(gf_eq_scalar(target, 0.0)), one, target));
        gf_tensor *xlogy = T(gf_mul(target, T(gf_log(safe))));
        loss = T(gf_sub(xlogy, T(gf_mul(target, input))));
    }
    gf_tensor *y = finish(&L, reduce(&L, loss, reduction));
    gf__scope_resume(s);
    return ret_new(y);
}

gf_tensor *gf_margin_ranking_loss(const gf_tensor *input1, const gf_tensor *input2,
                                  const gf_tensor *target, double margin,
                                  gf_reduction reduction) {
    const char *op = "margin_ranking_loss";
    if (!input1 || !input2 || !target) {
        gf__null_arg(op, !input1 ? "input1" : !input2 ? "input2" : "target");
        return NULL;
    }
    const gf_tensor *ts[3] = {input1, input2, target};
    const char *names[3] = {"input1", "input2", "target"};
    if (!check_reduction(reduction, op, false) || !check_floats(op, ts, names, 3)) return NULL;
    if (input1->rank != input2->rank || input1->rank != target->rank) {
        gf__error(GF_ERR_SHAPE, "%s: all input tensors should have the same rank, got input1 "
                  "rank %d, input2 rank %d, target rank %d", op, input1->rank, input2->rank,
                  target->rank);
        return NULL;
    }
    int64_t s1[GF_MAX_RANK], s2[GF_MAX_RANK];
    int r1 = 0, r2 = 0;
    if (gf__broadcast_shapes(input1->sizes, input1->rank, input2->sizes, input2->rank, s1, &r1,
                             op) != GF_OK ||
        gf__broadcast_shapes(s1, r1, target->sizes, target->rank, s2, &r2, op) != GF_OK)
        return NULL;
    int s = gf__scope_suspend();
    tmps L = {0};
    /* clamp_min(-y * (x1 - x2) + margin, 0) */
    gf_tensor *v = T(gf_add_scalar(T(gf_neg(T(gf_mul(target, T(gf_sub(input1, input2)))))),
                                   margin));
    gf_tensor *loss = T(gf_clamp(v, 0.0, NAN));
    gf_tensor *y = finish(&L, reduce(&L, loss, reduction));
    gf__scope_resume(s);
    return ret_new(y);
}

/* sqrt(max(sum(x^2, dim), eps^2)) = max(||x||, eps), with a finite gradient
 * at x = 0. Keeps dim. */
static gf_tensor *clamped_norm(tmps *l, const gf_tensor *x, int dim, double eps) {
    tmps L = *l;
    gf_tensor *n = T(gf_sqrt(T(gf_maximum_scalar(T(gf_sum(T(gf_square(x)), &dim, 1, true)),
                                                 eps * eps))));
    *l = L;
    return n;
}

gf_tensor *gf_cosine_similarity(const gf_tensor *x1, const gf_tensor *x2, int dim, double eps) {
    const char *op = "cosine_similarity";
    if (!x1 || !x2) {
        gf__null_arg(op, !x1 ? "x1" : "x2");
        return NULL;
    }
    const gf_tensor *ts[2] = {x1, x2};
    const char *names[2] = {"x1", "x2"};
    if (!check_floats(op, ts, names, 2)) return NULL;
    int64_t shape[GF_MAX_RANK];
    int rank = 0;
    if (gf__broadcast_shapes(x1->sizes, x1->rank, x2->sizes, x2->rank, shape, &rank, op) !=
        GF_OK)
        return NULL;
    int r = rank > 0 ? rank : 1;
    if (dim < -r || dim >= r) {
        gf__error(GF_ERR_INDEX, "%s: dim %d is out of range for the broadcast shape of rank "
                  "%d (expected in [%d, %d])", op, dim, rank, -r, r - 1);
        return NULL;
    }
    if (rank == 0) {
        gf__error(GF_ERR_SHAPE, "%s: x1 and x2 are 0-dim; cosine similarity needs at least "
                  "one dim to reduce", op);
        return NULL;
    }
    if (!(eps >= 0.0)) {
        gf__error(GF_ERR_INVALID, "%s: eps must be >= 0 (PyTorch's default is 1e-8), got %g",
                  op, eps);
        return NULL;
    }
    if (dim < 0) dim += rank;
    int s = gf__scope_suspend();
    tmps L = {0};
    gf_tensor *a = T(gf_expand(x1, shape, rank));
    gf_tensor *b = T(gf_expand(x2, shape, rank));
    gf_tensor *an = T(gf_div(a, clamped_norm(&L, a, dim, eps)));
    gf_tensor *bn = T(gf_div(b, clamped_norm(&L, b, dim, eps)));
    gf_tensor *y = T(gf_sum(T(gf_mul(an, bn)), &dim, 1, false));
    y = finish(&L, y);
    gf__scope_resume(s);
    return ret_new(y);
}

gf_tensor *gf_cosine_embedding_loss(const gf_tensor *input1, const gf_tensor *input2,
                                    const gf_tensor *target, double margin,
                                    gf_reduction reduction) {
    const char *op = "cosine_embedding_loss";
    if (!input1 || !input2 || !target) {
        gf__null_arg(op, !input1 ? "input1" : !input2 ? "input2" : "target");
        return NULL;
    }
    const gf_tensor *ts[2] = {input1, input2};
    const char *names[2] = {"input1", "input2"};
    if (!check_reduction(reduction, op, false) || !check_floats(op, ts, names, 2) ||
        !gf__same_device(input1, target, op))
        return NULL;
    char b1[128], b2[128], bt[128];
    if (input1->rank != input2->rank || input1->rank < 1 || input1->rank > 2 ||
        memcmp(input1->sizes, input2->sizes, sizeof(int64_t) * (size_t)input1->rank)) {
        gf__error(GF_ERR_SHAPE, "%s: input1 and input2 must both be [D] or both [N, D] of one "
                  "shape, got %s and %s", op,
                  gf__shape_str(input1->sizes, input1->rank, b1, sizeof b1),
                  gf__shape_str(input2->sizes, input2->rank, b2, sizeof b2));
        return NULL;
    }
    if (target->rank != input1->rank - 1 ||
        (target->rank == 1 && target->sizes[0] != input1->sizes[0])) {
        gf__error(GF_ERR_SHAPE, "%s: target must be %s for inputs of shape %s, got %s", op,
                  input1->rank == 1 ? "0-dim" : "[N]",
                  gf__shape_str(input1->sizes, input1->rank, b1, sizeof b1),
                  gf__shape_str(target->sizes, target->rank, bt, sizeof bt));
        return NULL;
    }
    int dim = input1->rank - 1;
    const double EPSILON = 1e-12;
    int s = gf__scope_suspend();
    tmps L = {0};
    /* PyTorch's formula: cos = sum(x1 x2) / sqrt((|x1|^2 + 1e-12)(|x2|^2 + 1e-12));
     * loss = 1 - cos where y == 1, max(0, cos - margin) where y == -1, else 0. */
    gf_tensor *prod = T(gf_sum(T(gf_mul(input1, input2)), &dim, 1, false));
    gf_tensor *m1 = T(gf_add_scalar(T(gf_sum(T(gf_square(input1)), &dim, 1, false)), EPSILON));
    gf_tensor *m2 = T(gf_add_scalar(T(gf_sum(T(gf_square(input2)), &dim, 1, false)), EPSILON));
    gf_tensor *cos = T(gf_div(prod, T(gf_sqrt(T(gf_mul(m1, m2))))));
    gf_tensor *zero = T(gf_zeros_like(cos));
    gf_tensor *pos = T(gf_where(T(gf_eq_scalar(target, 1.0)), T(gf_rsub_scalar(cos, 1.0)),
                                zero));
    gf_tensor *neg = T(gf_where(T(gf_eq_scalar(target, -1.0)),
                                T(gf_clamp(T(gf_sub_scalar(cos, margin)), 0.0, NAN)), zero));
    gf_tensor *loss = T(gf_add(pos, neg));
    gf_tensor *y = finish(&L, reduce(&L, loss, reduction));
    gf__scope_resume(s);
    return ret_new(y);
}
