/* SPDX-License-Identifier: BSD-3-Clause */
/* ops_scan.c — all, any, count_nonzero, vector_norm / norm, aminmax and the
 * scans cumsum, cumprod, logcumsumexp (graft/shape.h), composed from
 * differentiable device ops so their gradients of every order come from
 * those ops' rules.
 *
 * A scan runs Hillis-Steele: at step k (1, 2, 4, ...) every element from k
 * on combines with the one k before it: y = cat(y[:k], op(y[k:], y[:-k])).
 * ceil(log2 n) steps of narrow/op/cat; cumprod's gradient is then a chain of
 * products, right with zeros in x, as PyTorch's. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "amp/amp_internal.h"
#include "shape_internal.h"

/* ------------------------------------------------------------ shared helpers */

int64_t *gf__sh_read_i64(const gf_tensor *t, const char *op) {
    int64_t n = gf__numel(t);
    int64_t *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    if (!v) {
        gf__error(GF_ERR_OUT_OF_MEMORY, "%s: no host memory for %lld indices", op, (long long)n);
        return NULL;
    }
    gf_tensor *c = gf__cast(t, GF_I64);
    if (!c || gf_tensor_to_host(c, v, (size_t)n * sizeof *v) != GF_OK) {
        gf_tensor_release(c);
        free(v);
        return NULL;
    }
    gf_tensor_release(c);
    return v;
}

double *gf__sh_read_f64(const gf_tensor *t, const char *op) {
    int64_t n = gf__numel(t);
    double *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    if (!v) {
        gf__error(GF_ERR_OUT_OF_MEMORY, "%s: no host memory for %lld values", op, (long long)n);
        return NULL;
    }
    gf_tensor *c = gf__cast(t, GF_F64);
    if (!c || gf_tensor_to_host(c, v, (size_t)n * sizeof *v) != GF_OK) {
        gf_tensor_release(c);
        free(v);
        return NULL;
    }
    gf_tensor_release(c);
    return v;
}

bool gf__sh_dims(const int *dims, int ndims, int rank, const char *op, bool *red) {
    for (int i = 0; i < GF_MAX_RANK; i++) red[i] = ndims == 0;
    if (ndims < 0 || ndims > (rank > 0 ? rank : 1) || (ndims > 0 && !dims)) {
        gf__error(GF_ERR_INVALID, "%s: %d dims given for a tensor of rank %d%s", op, ndims,
                  rank, ndims > 0 && !dims ? " (dims is NULL)" : "");
        return false;
    }
    for (int i = 0; i < ndims; i++) {
        int d = gf__norm_dim(dims[i], rank, op);
        if (d < 0) return false;
        if (red[d]) {
            gf__error(GF_ERR_INVALID, "%s: dim %d appears twice in dims", op, d);
            return false;
        }
        red[d] = true;
    }
    return true;
}

/* ------------------------------------------------------------ all, any, count_nonzero */

/* x != 0 as bool (x itself when bool). */
static gf_tensor *nonzero_mask(const gf_tensor *x) {
    if (x->dtype == GF_BOOL) return gf_tensor_retain((gf_tensor *)x);
    return gf_dtype_is_float(x->dtype) ? gf_ne_scalar(x, 0.0) : gf_ne_scalar_int(x, 0);
}

static gf_tensor *all_any(const char *op, const gf_tensor *x, const int *dims, int ndims,
                          bool keepdim, bool is_all) {
    bool red[GF_MAX_RANK];
    if (sh_null(op, x, "x") || !sh_check_dtype(x, op, false) ||
        !gf__sh_dims(dims, ndims, x->rank, op, red))
        return NULL;
    int s = gf__scope_suspend();
    sh_tmps l = {0}, *L = &l;
    gf_tensor *nz = T(nonzero_mask(x));
    gf_tensor *y;
    if (is_all) {
        gf_tensor *cz = T(gf_sum(T(gf_logical_not(nz)), dims, ndims, keepdim));
        y = T(gf_eq_scalar_int(cz, 0));
    } else {
        y = T(gf_gt_scalar_int(T(gf_sum(nz, dims, ndims, keepdim)), 0));
    }
    y = sh_finish(L, y);
    gf__scope_resume(s);
    return sh_ret(y);
}

gf_tensor *gf_all(const gf_tensor *x, const int *dims, int ndims, bool keepdim) {
    return all_any("all", x, dims, ndims, keepdim, true);
}

gf_tensor *gf_any(const gf_tensor *x, const int *dims, int ndims, bool keepdim) {
    return all_any("any", x, dims, ndims, keepdim, false);
}

gf_tensor *gf_count_nonzero(const gf_tensor *x, const int *dims, int ndims) {
    const char *op = "count_nonzero";
    bool red[GF_MAX_RANK];
    if (sh_null(op, x, "x") || !sh_check_dtype(x, op, false) ||
        !gf__sh_dims(dims, ndims, x->rank, op, red))
        return NULL;
    int s = gf__scope_suspend();
    sh_tmps l = {0}, *L = &l;
    gf_tensor *y = T(gf_sum(T(nonzero_mask(x)), dims, ndims, false));
    y = sh_finish(L, y);
    gf__scope_resume(s);
    return sh_ret(y);
}

/* ------------------------------------------------------------ norms */

/* Fails INDEX naming op when a reduced dim has size 0 (max/min of nothing). */
static bool check_nonempty(const gf_tensor *x, const bool *red, const char *op,
                           const char *what) {
    for (int d = 0; d < x->rank; d++)
        if (red[d] && x->sizes[d] == 0) {
            gf__error(GF_ERR_INDEX, "%s: %s over dim %d of size 0 is undefined (no element to "
                      "reduce)", op, what, d);
            return false;
        }
    return true;
}

/* root(s) with s >= 0 and a gradient of 0 where s is 0 (the subgradient
 * PyTorch's norm backward gives): where(s == 0, 0, root(where(s == 0, 1, s))). */
static gf_tensor *safe_root(sh_tmps *L, gf_tensor *s, double p) {
    gf_tensor *z = T(gf_eq_scalar(s, 0.0));
    gf_tensor *safe = T(gf_masked_fill(s, z, 1.0));
    gf_tensor *r = p == 2.0 ? T(gf_sqrt(safe)) : T(gf_pow_scalar(safe, 1.0 / p));
    return T(gf_masked_fill(r, z, 0.0));
}

static gf_tensor *vector_norm(const char *op, const gf_tensor *x, double ord, const int *dims,
                              int ndims, bool keepdim) {
    bool red[GF_MAX_RANK];
    if (sh_null(op, x, "x")) return NULL;
    if (!gf_dtype_is_float(x->dtype)) {
        gf__error(GF_ERR_DTYPE, "%s: expected a float (f32, f64, f16 or bf16) x, got %s; convert "
                  "it with gf_to_dtype", op, gf_dtype_name(x->dtype));
        return NULL;
    }
    if (x->dtype == GF_F16 || x->dtype == GF_BF16) {
        /* Accumulated in f32 (as PyTorch), the result rounded to x's dtype. */
        gf_tensor *x32 = gf_to_dtype(x, GF_F32);
        gf_tensor *r32 = x32 ? vector_norm(op, x32, ord, dims, ndims, keepdim) : NULL;
        gf_tensor *r = r32 ? gf_to_dtype(r32, x->dtype) : NULL;
        gf_tensor_release(x32);
        gf_tensor_release(r32);
        return r;
    }
    if (isnan(ord)) {
        gf__error(GF_ERR_INVALID, "%s: ord is NaN", op);
        return NULL;
    }
    if (!gf__sh_dims(dims, ndims, x->rank, op, red)) return NULL;
    if (isinf(ord) && !check_nonempty(x, red, op, ord > 0 ? "the inf norm" : "the -inf norm"))
        return NULL;
    int s = gf__scope_suspend();
    sh_tmps l = {0}, *L = &l;
    gf_tensor *y;
    if (ord == 0.0) {
        gf_tensor *nz = T(gf_ne_scalar(x, 0.0));
        y = T(gf_sum(T(gf_to_dtype(nz, x->dtype)), dims, ndims, keepdim));
        /* + a sum of zeros taken from x: the count keeps x's history with
         * a zero gradient, as PyTorch's (exact zeros even where x is inf). */
        gf_tensor *all = T(gf__scalar(1.0, GF_BOOL, x->storage->device));
        gf_tensor *z = T(gf_masked_fill(x, all, 0.0));
        y = T(gf_add(y, T(gf_sum(z, dims, ndims, keepdim))));
    } else if (isinf(ord)) {
        gf_tensor *a = T(gf_abs(x));
        y = ord > 0 ? T(gf_amax(a, dims, ndims, keepdim)) : T(gf_amin(a, dims, ndims, keepdim));
    } else if (ord == 1.0) {
        y = T(gf_sum(T(gf_abs(x)), dims, ndims, keepdim));
    } else if (ord == 2.0) {
        y = safe_root(L, T(gf_sum(T(gf_square(x)), dims, ndims, keepdim)), 2.0);
    } else {
        gf_tensor *a = T(gf_pow_scalar(T(gf_abs(x)), ord));
        y = safe_root(L, T(gf_sum(a, dims, ndims, keepdim)), ord);
    }
    y = sh_finish(L, y);
    gf__scope_resume(s);
    return sh_ret(y);
}

gf_tensor *gf_vector_norm(const gf_tensor *x, double ord, const int *dims, int ndims,
                          bool keepdim) {
    return vector_norm("vector_norm", x, ord, dims, ndims, keepdim);
}

gf_tensor *gf_norm(const gf_tensor *x, double p, const int *dims, int ndims, bool keepdim) {
    return vector_norm("norm", x, p, dims, ndims, keepdim);
}

gf_status gf_aminmax(const gf_tensor *x, int dim, bool keepdim, gf_tensor **min,
                     gf_tensor **max) {
    const char *op = "aminmax";
    if (!min || !max) return gf__error(GF_ERR_INVALID, "aminmax: min or max is NULL");
    *min = *max = NULL;
    if (sh_null(op, x, "x")) return gf__status();
    if (!sh_check_dtype(x, op, false)) return GF_ERR_DTYPE;
    int d = 0, nd = 0;
    if (dim != GF_DIM_ALL) {
        d = gf__norm_dim(dim, x->rank, op);
        if (d < 0) return GF_ERR_INDEX;
        nd = x->rank > 0 ? 1 : 0;
    }
    bool red[GF_MAX_RANK];
    for (int i = 0; i < GF_MAX_RANK; i++) red[i] = nd == 0 || i == d;
    if (!check_nonempty(x, red, op, "the min and max") ||
        (dim == GF_DIM_ALL && gf__numel(x) == 0 &&
         gf__error(GF_ERR_INDEX, "aminmax: x has no element (the min and max of nothing are "
                   "undefined)")))
        return GF_ERR_INDEX;
    int s = gf__scope_suspend();
    gf_tensor *mn = gf_amin(x, nd ? &d : NULL, nd, keepdim);
    gf_tensor *mx = mn ? gf_amax(x, nd ? &d : NULL, nd, keepdim) : NULL;
    gf__scope_resume(s);
    if (!mn || !mx) {
        gf_tensor_release(mn);
        return gf__status();
    }
    *min = gf__ret(mn);
    *max = gf__ret(mx);
    return GF_OK;
}

/* ------------------------------------------------------------ scans */

typedef enum { SCAN_SUM, SCAN_PROD, SCAN_LSE } scan_kind;

static gf_tensor *combine(scan_kind k, gf_tensor *a, gf_tensor *b) {
    if (k == SCAN_SUM) return gf_add(a, b);
    if (k == SCAN_PROD) return gf_mul(a, b);
    /* log(exp a + exp b), through logsumexp of the pair (stable, and its
     * gradient is softmax of the pair). */
    gf_tensor *pair[2] = {a, b};
    gf_tensor *st = gf_stack(pair, 2, 0);
    int zero = 0;
    gf_tensor *r = st ? gf_logsumexp(st, &zero, 1, false) : NULL;
    gf_tensor_release(st);
    return r;
}

static gf_tensor *scan(const char *op, scan_kind kind, const gf_tensor *x, int dim) {
    if (sh_null(op, x, "x") || !sh_check_dtype(x, op, kind == SCAN_LSE)) return NULL;
    int d = gf__norm_dim(dim, x->rank, op);
    if (d < 0) return NULL;
    int s = gf__scope_suspend();
    bool half = x->dtype == GF_F16 || x->dtype == GF_BF16;
    /* Integers scan in i64; f16/bf16 accumulate in f32 and round once at the
     * end (PyTorch's accumulate type). */
    gf_dtype dt = (x->dtype == GF_I32 || x->dtype == GF_BOOL) ? GF_I64 : half ? GF_F32 : x->dtype;
    gf_tensor *y = gf_to_dtype(x, dt);
    int64_t n = x->rank > 0 ? x->sizes[d] : 1;
    /* The scanned dim first and contiguous: every narrow of a step is then
     * one contiguous block, which the devices' kernels run fastest. */
    bool moved = y && d != 0 && n > 1;
    if (moved) {
        gf_tensor *t = gf_transpose(y, 0, d);
        gf_tensor *c = t ? gf_contiguous(t) : NULL;
        gf_tensor_release(t);
        gf_tensor_release(y);
        y = c;
    }
    int sd = d;
    if (moved) d = 0;
    if (y && n <= 1) { /* a new tensor, as PyTorch returns */
        gf_tensor *c = gf_clone(y);
        gf_tensor_release(y);
        y = c;
    }
    for (int64_t k = 1; y && k < n; k *= 2) {
        gf_tensor *head = gf_narrow(y, d, 0, k);
        gf_tensor *tail = gf_narrow(y, d, k, n - k);
        gf_tensor *prev = gf_narrow(y, d, 0, n - k);
        gf_tensor *m = (tail && prev) ? combine(kind, tail, prev) : NULL;
        gf_tensor *parts[2] = {head, m};
        gf_tensor *ny = (head && m) ? gf_cat(parts, 2, d) : NULL;
        gf_tensor_release(head);
        gf_tensor_release(tail);
        gf_tensor_release(prev);
        gf_tensor_release(m);
        gf_tensor_release(y);
        y = ny;
        if (k > INT64_MAX / 2) break;
    }
    if (y && moved) {
        gf_tensor *t = gf_transpose(y, 0, sd);
        gf_tensor *c = t ? gf_contiguous(t) : NULL;
        gf_tensor_release(t);
        gf_tensor_release(y);
        y = c;
    }
    if (y && half) {
        gf_tensor *r = gf_to_dtype(y, x->dtype);
        gf_tensor_release(y);
        y = r;
    }
    gf__scope_resume(s);
    return sh_ret(y);
}

gf_tensor *gf_cumsum(const gf_tensor *x, int dim) {
    GF__AMP_HOOK(CUMSUM, 1, gf_cumsum(amp_v[0], dim), x);
    return scan("cumsum", SCAN_SUM, x, dim);
}

gf_tensor *gf_cumprod(const gf_tensor *x, int dim) { return scan("cumprod", SCAN_PROD, x, dim); }

gf_tensor *gf_logcumsumexp(const gf_tensor *x, int dim) {
    return scan("logcumsumexp", SCAN_LSE, x, dim);
}
