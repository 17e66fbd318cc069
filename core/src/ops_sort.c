/* SPDX-License-Identifier: BSD-3-Clause */
/* ops_sort.c — sort, argsort, topk, median, quantile (graft/shape.h).
 *
 * The order is computed on the host: x is read back (the dim to sort moved
 * last), each row is merge-sorted (stable, NaN the largest value as in
 * PyTorch), and the i64 indices go back to the device. Values are then
 * picked by gather from x, so gradients (of every order) are gather's:
 * each output's gradient goes to the element it came from, as PyTorch's.
 * A device kernel would avoid the round trip: these want an ABI op once
 * the op table lands. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "complex/complex_internal.h"
#include "shape_internal.h"

/* ------------------------------------------------------------ host sort */

typedef struct sort_keys {
    const double *f; /* keys as doubles (every dtype but i64) */
    const int64_t *i; /* i64 keys (exact) */
    bool descending;
} sort_keys;

/* Element a goes strictly before element b. */
static bool before(const sort_keys *k, int64_t a, int64_t b) {
    if (k->i) return k->descending ? k->i[a] > k->i[b] : k->i[a] < k->i[b];
    double x = k->f[a], y = k->f[b];
    if (k->descending) return !isnan(y) && (isnan(x) || x > y);
    return !isnan(x) && (isnan(y) || x < y);
}

/* Stable merge sort of idx[0..n) (positions into the keys), tmp of n. */
static void merge_sort(const sort_keys *k, int64_t *idx, int64_t *tmp, int64_t n) {
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int64_t a = lo, b = mid, o = lo;
            while (a < mid && b < hi) tmp[o++] = before(k, idx[b], idx[a]) ? idx[b++] : idx[a++];
            while (a < mid) tmp[o++] = idx[a++];
            while (b < hi) tmp[o++] = idx[b++];
        }
        memcpy(idx, tmp, sizeof *idx * (size_t)n);
        if (w > INT64_MAX / 2) break;
    }
}

/* x with dim d moved last (a view). */
static gf_tensor *move_last(const gf_tensor *x, int d) {
    if (x->rank == 0) return gf_reshape(x, (const int64_t[]){1}, 1);
    int perm[GF_MAX_RANK], j = 0;
    for (int i = 0; i < x->rank; i++)
        if (i != d) perm[j++] = i;
    perm[j] = d;
    return gf_permute(x, perm, x->rank);
}

/* The inverse: the last dim of t back to position d (rank of t). */
static gf_tensor *move_back(const gf_tensor *t, int d) {
    int perm[GF_MAX_RANK], r = t->rank;
    for (int i = 0, j = 0; i < r; i++) perm[i] = i == d ? r - 1 : j++;
    return gf_permute(t, perm, r);
}

/* Sorted positions, row by row, of x with dim d moved last: writes the
 * malloc'ed rows * n array (within-row positions) and the row geometry. */
typedef struct sorted_rows {
    int64_t *idx;
    double *f; /* the keys, kept for NaN checks (NULL for i64) */
    int64_t rows, n;
} sorted_rows;

static void sorted_free(sorted_rows *r) {
    free(r->idx);
    free(r->f);
}

static gf_status host_sort(const gf_tensor *x, int d, bool descending, const char *op,
                           sorted_rows *out) {
    memset(out, 0, sizeof *out);
    gf_tensor *xm = move_last(x, d);
    if (!xm) return gf__status();
    int64_t total = gf__numel(xm);
    out->n = xm->sizes[xm->rank - 1];
    out->rows = out->n > 0 ? total / out->n : 0;
    int64_t *ik = NULL;
    if (x->dtype == GF_I64)
        ik = gf__sh_read_i64(xm, op);
    else
        out->f = gf__sh_read_f64(xm, op);
    gf_tensor_release(xm);
    if (!ik && !out->f) return gf__status();
    out->idx = malloc(sizeof(int64_t) * (size_t)(total > 0 ? total : 1));
    int64_t *tmp = malloc(sizeof(int64_t) * (size_t)(out->n > 0 ? out->n : 1));
    if (!out->idx || !tmp) {
        free(ik);
        free(tmp);
        sorted_free(out);
        return gf__error(GF_ERR_OUT_OF_MEMORY, "%s: no host memory to sort %lld elements", op,
                         (long long)total);
    }
    for (int64_t r = 0; r < out->rows; r++) {
        sort_keys k = {out->f ? out->f + r * out->n : NULL, ik ? ik + r * out->n : NULL,
                       descending};
        int64_t *row = out->idx + r * out->n;
        for (int64_t j = 0; j < out->n; j++) row[j] = j;
        merge_sort(&k, row, tmp, out->n);
    }
    free(ik);
    free(tmp);
    return GF_OK;
}

/* An i64 tensor of v (rows * cols) shaped as x with dim d moved last and
 * its size set to cols, moved back to d (contiguous). */
static gf_tensor *index_tensor(const gf_tensor *x, int d, const int64_t *v, int64_t cols) {
    int64_t sz[GF_MAX_RANK];
    int r = 0;
    for (int i = 0; i < x->rank; i++)
        if (i != d) sz[r++] = x->sizes[i];
    sz[r++] = cols;
    const int64_t z = 0;
    gf_tensor *t = gf_from_data(gf__checked_numel(sz, r, "sort") > 0 ? (const void *)v
                                                                     : (const void *)&z,
                                sz, r, GF_I64, x->storage->device);
    if (!t) return NULL;
    if (x->rank == 0) {
        gf_tensor *s = gf_reshape(t, NULL, 0);
        gf_tensor_release(t);
        return s;
    }
    gf_tensor *m = move_back(t, d);
    gf_tensor_release(t);
    gf_tensor *c = m ? gf_contiguous(m) : NULL;
    gf_tensor_release(m);
    return c;
}

static bool sort_args(const char *op, const gf_tensor *x, int dim, int *d) {
    if (sh_null(op, x, "x") || gf__refuse_complex(x, op) != GF_OK || !sh_check_dtype(x, op, false))
        return false;
    *d = gf__norm_dim(dim, x->rank, op);
    return *d >= 0;
}

/* Values = gather(x, d, idx) (x 0-dim: idx is 0-dim too). */
static gf_tensor *pick(const gf_tensor *x, int d, const gf_tensor *idx) {
    if (x->rank == 0) return gf_clone(x);
    return gf_gather(x, d, idx);
}

/* Sorted (or top-k) indices, narrowed to the first k along d (k < 0: all). */
static gf_tensor *sorted_indices(const char *op, const gf_tensor *x, int d, bool descending,
                                 int64_t k) {
    sorted_rows r;
    if (host_sort(x, d, descending, op, &r) != GF_OK) return NULL;
    int64_t cols = k < 0 ? r.n : k;
    int64_t *v = r.idx;
    if (cols != r.n) { /* keep the first cols of each row */
        for (int64_t i = 0; i < r.rows; i++)
            memmove(v + i * cols, r.idx + i * r.n, sizeof(int64_t) * (size_t)cols);
    }
    gf_tensor *t = index_tensor(x, d, v, cols);
    sorted_free(&r);
    return t;
}

static gf_status two_out(gf_tensor *v, gf_tensor *i, gf_tensor **values, gf_tensor **indices) {
    if (!v || !i) {
        gf_tensor_release(v);
        gf_tensor_release(i);
        return gf__status();
    }
    if (values)
        *values = gf__ret(v);
    else
        gf_tensor_release(v);
    if (indices)
        *indices = gf__ret(i);
    else
        gf_tensor_release(i);
    return GF_OK;
}

gf_status gf_sort(const gf_tensor *x, int dim, bool descending, gf_tensor **values,
                  gf_tensor **indices) {
    int d;
    if (values) *values = NULL;
    if (indices) *indices = NULL;
    if (!values && !indices) return gf__error(GF_ERR_INVALID, "sort: values and indices are NULL");
    if (!sort_args("sort", x, dim, &d)) return gf__status();
    int s = gf__scope_suspend();
    gf_tensor *i = sorted_indices("sort", x, d, descending, -1);
    gf_tensor *v = i ? pick(x, d, i) : NULL;
    gf__scope_resume(s);
    return two_out(v, i, values, indices);
}

gf_tensor *gf_argsort(const gf_tensor *x, int dim, bool descending) {
    int d;
    if (!sort_args("argsort", x, dim, &d)) return NULL;
    int s = gf__scope_suspend();
    gf_tensor *i = sorted_indices("argsort", x, d, descending, -1);
    gf__scope_resume(s);
    return sh_ret(i);
}

gf_status gf_topk(const gf_tensor *x, int64_t k, int dim, bool largest, bool sorted,
                  gf_tensor **values, gf_tensor **indices) {
    (void)sorted;
    int d;
    if (values) *values = NULL;
    if (indices) *indices = NULL;
    if (!values && !indices) return gf__error(GF_ERR_INVALID, "topk: values and indices are NULL");
    if (!sort_args("topk", x, dim, &d)) return gf__status();
    int64_t n = x->rank > 0 ? x->sizes[d] : 1;
    if (k < 0 || k > n)
        return gf__error(GF_ERR_INDEX, "topk: k = %lld is out of range for dim %d of size %lld "
                         "(0 <= k <= %lld)", (long long)k, d, (long long)n, (long long)n);
    int s = gf__scope_suspend();
    gf_tensor *i = NULL, *v = NULL;
    if (x->rank == 0 && k == 0) {
        gf__error(GF_ERR_INDEX, "topk: k = 0 of a 0-dim tensor (its one element is the only "
                  "choice: k must be 1)");
    } else {
        i = sorted_indices("topk", x, d, largest, k);
        v = i ? pick(x, d, i) : NULL;
    }
    gf__scope_resume(s);
    return two_out(v, i, values, indices);
}

/* ------------------------------------------------------------ median */

/* The chosen position in a sorted row: the first NaN when there is one,
 * else the lower median. */
static int64_t median_pos(const sorted_rows *r, int64_t row) {
    const int64_t *ix = r->idx + row * r->n;
    if (r->f) {
        const double *f = r->f + row * r->n;
        if (isnan(f[ix[r->n - 1]])) {
            for (int64_t j = 0; j < r->n; j++)
                if (isnan(f[ix[j]])) return ix[j];
        }
    }
    return ix[(r->n - 1) / 2];
}

gf_status gf_median_dim(const gf_tensor *x, int dim, bool keepdim, gf_tensor **values,
                        gf_tensor **indices) {
    const char *op = "median";
    int d;
    if (values) *values = NULL;
    if (indices) *indices = NULL;
    if (!values && !indices) return gf__error(GF_ERR_INVALID, "median: values and indices are NULL");
    if (!sort_args(op, x, dim, &d)) return gf__status();
    if (x->rank > 0 && x->sizes[d] == 0)
        return gf__error(GF_ERR_INDEX, "median: dim %d has size 0 (the median of no element is "
                         "undefined)", d);
    int s = gf__scope_suspend();
    gf_tensor *v = NULL, *i = NULL;
    sorted_rows r;
    if (host_sort(x, d, false, op, &r) == GF_OK) {
        int64_t *pos = malloc(sizeof(int64_t) * (size_t)(r.rows > 0 ? r.rows : 1));
        if (!pos) {
            gf__error(GF_ERR_OUT_OF_MEMORY, "median: no host memory");
        } else {
            for (int64_t j = 0; j < r.rows; j++) pos[j] = median_pos(&r, j);
            gf_tensor *ik = index_tensor(x, d, pos, 1); /* keepdim shape */
            v = ik ? pick(x, d, ik) : NULL;
            if (v && !keepdim && x->rank > 0) {
                gf_tensor *a = gf_squeeze(v, d), *b = gf_squeeze(ik, d);
                gf_tensor_release(v);
                gf_tensor_release(ik);
                v = a;
                ik = b;
            }
            i = ik;
            free(pos);
        }
        sorted_free(&r);
    }
    gf__scope_resume(s);
    return two_out(v, i, values, indices);
}

gf_tensor *gf_median(const gf_tensor *x) {
    if (sh_null("median", x, "x") || !sh_check_dtype(x, "median", false)) return NULL;
    int s = gf__scope_suspend();
    gf_tensor *y = NULL;
    if (gf__numel(x) == 0) {
        /* PyTorch: NaN (f32 for integer x has no NaN: refuse). */
        if (gf_dtype_is_float(x->dtype))
            y = gf__scalar(NAN, x->dtype, x->storage->device);
        else
            gf__error(GF_ERR_INDEX, "median: x of dtype %s has no element (an integer median "
                      "of nothing is undefined)", gf_dtype_name(x->dtype));
    } else {
        gf_tensor *f = gf_reshape(x, (const int64_t[]){-1}, 1);
        gf_tensor *v = NULL;
        if (f && gf_median_dim(f, 0, false, &v, NULL) == GF_OK) y = v;
        gf_tensor_release(f);
    }
    gf__scope_resume(s);
    return sh_ret(y);
}

/* ------------------------------------------------------------ quantile */

gf_tensor *gf_quantile(const gf_tensor *x, const gf_tensor *q, int dim, bool keepdim,
                       gf_quantile_interp interp) {
    const char *op = "quantile";
    if (sh_null(op, x, "x") || sh_null(op, q, "q")) return NULL;
    if (!sh_check_dtype(x, op, true)) return NULL;
    if (!gf__same_device(x, q, op)) return NULL;
    if (q->dtype != x->dtype) {
        gf__error(GF_ERR_DTYPE, "quantile: q (%s) must have x's dtype (%s); convert it with "
                  "gf_to_dtype", gf_dtype_name(q->dtype), gf_dtype_name(x->dtype));
        return NULL;
    }
    if (q->rank > 1) {
        gf__error(GF_ERR_SHAPE, "quantile: q must be a 0-dim or 1-D tensor, got rank %d",
                  q->rank);
        return NULL;
    }
    if ((unsigned)interp > GF_QUANTILE_NEAREST) {
        gf__error(GF_ERR_INVALID, "quantile: interpolation %d is not one of GF_QUANTILE_LINEAR, "
                  "LOWER, HIGHER, MIDPOINT, NEAREST", (int)interp);
        return NULL;
    }
    int d = 0;
    if (dim != GF_DIM_ALL) {
        d = gf__norm_dim(dim, x->rank, op);
        if (d < 0) return NULL;
    }
    int64_t n = dim == GF_DIM_ALL ? gf__numel(x) : x->rank > 0 ? x->sizes[d] : 1;
    if (n == 0) {
        gf__error(GF_ERR_INDEX, "quantile: the reduced %s has no element (its quantiles are "
                  "undefined)", dim == GF_DIM_ALL ? "tensor" : "dim");
        return NULL;
    }
    int s = gf__scope_suspend();
    sh_tmps l = {0}, *L = &l;
    gf_tensor *y = NULL;
    int64_t nq = q->rank == 1 ? q->sizes[0] : 1;
    double *qv = gf__sh_read_f64(q, op);
    for (int64_t j = 0; qv && j < nq; j++)
        if (!(qv[j] >= 0.0 && qv[j] <= 1.0)) {
            gf__error(GF_ERR_INVALID, "quantile: q values must be in the range [0, 1], got %g",
                      qv[j]);
            free(qv);
            qv = NULL;
        }
    /* xs: the tensor whose dim ds is reduced. */
    const gf_tensor *xs = x;
    int ds = d;
    if (dim == GF_DIM_ALL || x->rank == 0) {
        xs = T(gf_reshape(x, (const int64_t[]){-1}, 1));
        ds = 0;
    }
    sorted_rows r = {0};
    int64_t *lo = NULL, *hi = NULL;
    double *w = NULL;
    if (qv && xs && host_sort(xs, ds, false, op, &r) == GF_OK) {
        lo = malloc(sizeof(int64_t) * (size_t)(r.rows * nq > 0 ? r.rows * nq : 1));
        hi = malloc(sizeof(int64_t) * (size_t)(r.rows * nq > 0 ? r.rows * nq : 1));
        w = malloc(sizeof(double) * (size_t)(nq > 0 ? nq : 1));
        if (!lo || !hi || !w) {
            gf__error(GF_ERR_OUT_OF_MEMORY, "quantile: no host memory");
            L->bad = true;
        }
        for (int64_t j = 0; !L->bad && j < nq; j++) {
            double rank = qv[j] * (double)(n - 1);
            double below = floor(rank), above = ceil(rank);
            double wt = rank - below;
            switch (interp) {
            case GF_QUANTILE_LOWER: above = below; wt = 0; break;
            case GF_QUANTILE_HIGHER: below = above; wt = 0; break;
            case GF_QUANTILE_MIDPOINT: wt = 0.5; break;
            case GF_QUANTILE_NEAREST: below = above = nearbyint(rank); wt = 0; break;
            default: break;
            }
            w[j] = wt;
            for (int64_t i = 0; i < r.rows; i++) {
                const int64_t *ix = r.idx + i * r.n;
                bool nan_row = isnan(r.f[i * r.n + ix[r.n - 1]]);
                lo[i * nq + j] = nan_row ? ix[r.n - 1] : ix[(int64_t)below];
                hi[i * nq + j] = nan_row ? ix[r.n - 1] : ix[(int64_t)above];
            }
        }
        if (!L->bad) {
            gf_tensor *il = T(index_tensor(xs, ds, lo, nq));
            gf_tensor *ih = T(index_tensor(xs, ds, hi, nq));
            gf_tensor *vl = T(gf_gather(xs, ds, il)), *vh = T(gf_gather(xs, ds, ih));
            /* weights along ds: shape [1.., nq at ds, ..1] */
            int64_t wsz[GF_MAX_RANK];
            for (int i = 0; i < xs->rank; i++) wsz[i] = i == ds ? nq : 1;
            gf_tensor *wt = T(gf_from_data(w, wsz, xs->rank, GF_F64, xs->storage->device));
            gf_tensor *wx = T(gf_to_dtype(wt, x->dtype));
            /* v = vl + w (vh - vl), q along ds */
            gf_tensor *v = T(gf_add(vl, T(gf_mul(wx, T(gf_sub(vh, vl))))));
            /* the q dim first, then keepdim / the scalar q */
            int perm[GF_MAX_RANK], k = 0;
            perm[k++] = ds;
            for (int i = 0; i < xs->rank; i++)
                if (i != ds) perm[k++] = i;
            gf_tensor *p = T(gf_permute(v, perm, xs->rank)); /* [nq, rest...] */
            if (p && keepdim) {
                int64_t ksz[GF_MAX_RANK + 1];
                int kr = 0;
                ksz[kr++] = nq;
                for (int i = 0; i < x->rank; i++)
                    ksz[kr++] = (dim == GF_DIM_ALL || i == d) ? 1 : x->sizes[i];
                if (kr > GF_MAX_RANK && q->rank == 1) {
                    gf__error(GF_ERR_SHAPE, "quantile: the result would have rank %d > %d", kr,
                              GF_MAX_RANK);
                    L->bad = true;
                } else {
                    p = q->rank == 1 ? T(gf_reshape(p, ksz, kr)) : T(gf_reshape(p, ksz + 1, kr - 1));
                }
            } else if (p && q->rank == 0) {
                p = T(gf_squeeze(p, 0));
            }
            y = p;
        }
    }
    sorted_free(&r);
    free(lo);
    free(hi);
    free(w);
    free(qv);
    y = sh_finish(L, y);
    gf__scope_resume(s);
    return sh_ret(y);
}

gf_tensor *gf_quantile_scalar(const gf_tensor *x, double q, int dim, bool keepdim,
                              gf_quantile_interp interp) {
    if (sh_null("quantile", x, "x") || !sh_check_dtype(x, "quantile", true)) return NULL;
    int s = gf__scope_suspend();
    gf_tensor *qt = gf__scalar(q, x->dtype, x->storage->device);
    gf__scope_resume(s);
    gf_tensor *y = qt ? gf_quantile(x, qt, dim, keepdim, interp) : NULL;
    gf_tensor_release(qt);
    return y;
}
