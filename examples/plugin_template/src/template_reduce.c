/* SPDX-License-Identifier: BSD-3-Clause */
/* template_reduce.c — SUM, MEAN, AMAX and MAX_DIM over a set of dims, and
 * SOFTMAX / LOG_SOFTMAX along one dim.
 *
 * The output of a reduction keeps the input's rank with size 1 in each
 * reduced dim. Each output element reduces one "line": the input elements
 * whose index matches the output's in the kept dims. Sums are accumulated in
 * double and rounded once; the largest value is copied as it is, and a NaN
 * wins (it is the largest). */
#include <math.h>
#include <string.h>

#include "template.h"

static float load(const gfp_tensor *t, const int64_t *idx) {
    float v;
    memcpy(&v, tp_at(t, idx), 4);
    return v;
}

static void store(const gfp_tensor *t, const int64_t *idx, float v) { memcpy(tp_at(t, idx), &v, 4); }

gfp_status tp_reduce(uint32_t op, const gfp_tensor *const *in, const gfp_tensor *const *out,
                     const void *params) {
    const char *name = op == GFP_OP_SUM ? "sum" : op == GFP_OP_MEAN ? "mean"
                       : op == GFP_OP_AMAX ? "amax" : "max_dim";
    gfp_status st = tp_params(params, GFP_REDUCE_PARAMS_SIZE_V1_0, name);
    if (st != GFP_OK) return st;
    const gfp_tensor *x = in[0], *y = out[0], *ind = op == GFP_OP_MAX_DIM ? out[1] : NULL;
    uint32_t dims = ((const gfp_reduce_params *)params)->dims;
    if ((uint64_t)dims >> x->rank)
        return tp_fail(GFP_ERR_INVALID, "%s: dims 0x%x names a dim past rank %d", name,
                       (unsigned)dims, (int)x->rank);
    if (ind && (dims == 0 || (dims & (dims - 1))))
        return tp_fail(GFP_ERR_INVALID, "max_dim: dims 0x%x must have exactly one bit", (unsigned)dims);
    int64_t line[GFP_MAX_RANK], n = 1; /* sizes of one line: x's in reduced dims */
    bool ok = y->rank == x->rank && (!ind || tp_same_shape(ind, y));
    for (int d = 0; d < x->rank; d++) {
        line[d] = (dims >> d) & 1u ? x->sizes[d] : 1;
        n *= line[d];
        ok = ok && y->sizes[d] == ((dims >> d) & 1u ? 1 : x->sizes[d]);
    }
    if (!ok)
        return tp_fail(GFP_ERR_INVALID, "%s: the output must have x's shape with 1 in each "
                       "reduced dim", name);
    if (n == 0 && (op == GFP_OP_AMAX || ind))
        return tp_fail(GFP_ERR_INVALID, "%s: no elements to take the largest of", name);
    if (tp_numel(y) == 0) return GFP_OK;

    int64_t o[GFP_MAX_RANK] = {0}; /* output index */
    do {
        int64_t j[GFP_MAX_RANK] = {0}, at[GFP_MAX_RANK];
        double acc = 0, best = 0;
        int64_t k = 0, best_k = 0;
        do { /* the line, in row-major order */
            for (int d = 0; d < x->rank; d++) at[d] = (dims >> d) & 1u ? j[d] : o[d];
            if (n == 0) break;
            double v = load(x, at);
            acc += v;
            if (k == 0 || (!isnan(best) && (isnan(v) || v > best))) {
                best = v;
                best_k = k;
            }
            k++;
        } while (tp_next(j, line, x->rank));
        if (op == GFP_OP_SUM) store(y, o, (float)acc);
        else if (op == GFP_OP_MEAN) store(y, o, (float)(acc / (double)n)); /* n = 0: NaN */
        else store(y, o, (float)best);
        if (ind) memcpy(tp_at(ind, o), &best_k, 8); /* k counts along the one reduced dim */
    } while (tp_next(o, y->sizes, y->rank));
    return GFP_OK;
}

gfp_status tp_softmax(uint32_t op, const gfp_tensor *const *in, const gfp_tensor *const *out,
                      const void *params) {
    const char *name = op == GFP_OP_SOFTMAX ? "softmax" : "log_softmax";
    gfp_status st = tp_params(params, GFP_DIM_PARAMS_SIZE_V1_0, name);
    if (st != GFP_OK) return st;
    const gfp_tensor *x = in[0], *y = out[0];
    int dim = ((const gfp_dim_params *)params)->dim;
    if (!tp_same_shape(x, y) || dim < 0 || dim >= (x->rank ? x->rank : 1))
        return tp_fail(GFP_ERR_INVALID, "%s: dim %d or the output's shape is wrong", name, dim);
    if (tp_numel(x) == 0) return GFP_OK;
    int64_t len = x->rank ? x->sizes[dim] : 1;
    int64_t lines[GFP_MAX_RANK], idx[GFP_MAX_RANK] = {0};
    for (int d = 0; d < x->rank; d++) lines[d] = d == dim ? 1 : x->sizes[d];
    do { /* idx[dim] runs along the line; it is 0 between lines */
        double m = -INFINITY, s = 0;
        for (int64_t i = 0; i < len && !isnan(m); i++) {
            if (x->rank) idx[dim] = i;
            double v = load(x, idx);
            if (i == 0 || isnan(v) || v > m) m = v;
        }
        for (int64_t i = 0; i < len; i++) {
            if (x->rank) idx[dim] = i;
            s += exp(load(x, idx) - m);
        }
        double log_s = log(s);
        for (int64_t i = 0; i < len; i++) {
            if (x->rank) idx[dim] = i;
            double z = load(x, idx) - m;
            store(y, idx, (float)(op == GFP_OP_LOG_SOFTMAX ? z - log_s : exp(z) / s));
        }
        if (x->rank) idx[dim] = 0;
    } while (tp_next(idx, lines, x->rank));
    return GFP_OK;
}
