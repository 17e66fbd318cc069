/* SPDX-License-Identifier: BSD-3-Clause */
/* ops_mask.c — scatter (reduce none), index_put, masked_scatter,
 * masked_select, nonzero (graft/shape.h).
 *
 * The positions these ops write or read depend on the values of an index or
 * a mask: they are read back and turned into row positions on the host
 * (where duplicates are resolved: the last write wins). The values move on
 * the device through index_select, index_add, masked_fill and where, whose
 * rules give the gradients of every order: an element overwritten gets no
 * gradient, a value written gets the gradient of where it landed. A device
 * kernel for scatter / index_put would spare the round trip: they want ABI
 * ops once the op table lands. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "shape_internal.h"

/* A bool tensor of v[0..numel(sizes)) on dev. */
static gf_tensor *bool_tensor(const uint8_t *v, const int64_t *sizes, int rank, gf_device *dev) {
    static const uint8_t z = 0;
    return gf_from_data(gf__checked_numel(sizes, rank, "mask") > 0 ? (const void *)v
                                                                  : (const void *)&z,
                        sizes, rank, GF_BOOL, dev);
}

/* xv [P, rest...] with rows lin[k] set to (accumulate: increased by) row k
 * of vals [M, rest...]; the last of duplicate rows wins without accumulate.
 * lin already checked to lie in [0, P). */
static gf_tensor *put_rows(sh_tmps *L, const char *op, gf_tensor *xv, const int64_t *lin,
                           int64_t M, gf_tensor *vals, bool accumulate) {
    if (!xv || !vals) return NULL;
    gf_device *dev = xv->storage->device;
    bool is_bool = xv->dtype == GF_BOOL;
    if (is_bool) { /* index_add adds numbers: through i32 */
        xv = T(gf_to_dtype(xv, GF_I32));
        vals = T(gf_to_dtype(vals, GF_I32));
        if (!xv || !vals) return NULL;
    }
    gf_tensor *lt = T(sh_i64_1d(lin, M, dev));
    gf_tensor *y = NULL;
    if (accumulate) {
        y = T(gf_index_add(xv, 0, lt, vals));
    } else {
        int64_t P = xv->sizes[0];
        int64_t *last = malloc(sizeof(int64_t) * (size_t)(P > 0 ? P : 1));
        uint8_t *drop = malloc((size_t)(M > 0 ? M : 1));
        uint8_t *hit = malloc((size_t)(P > 0 ? P : 1));
        if (!last || !drop || !hit) {
            gf__error(GF_ERR_OUT_OF_MEMORY, "%s: no host memory for %lld positions", op,
                      (long long)P);
            L->bad = true;
        } else {
            for (int64_t p = 0; p < P; p++) last[p] = -1;
            for (int64_t k = 0; k < M; k++) last[lin[k]] = k;
            for (int64_t k = 0; k < M; k++) drop[k] = last[lin[k]] != k;
            for (int64_t p = 0; p < P; p++) hit[p] = last[p] >= 0;
            int64_t ms[GF_MAX_RANK], hs[GF_MAX_RANK];
            for (int i = 0; i < vals->rank; i++) ms[i] = hs[i] = 1;
            ms[0] = M;
            hs[0] = P;
            gf_tensor *dt = T(bool_tensor(drop, ms, vals->rank, dev));
            gf_tensor *ht = T(bool_tensor(hit, hs, xv->rank, dev));
            gf_tensor *vk = dt ? T(gf_masked_fill(vals, dt, 0.0)) : NULL;
            gf_tensor *placed = vk ? T(gf_index_add(T(gf_zeros_like(xv)), 0, lt, vk)) : NULL;
            y = placed && ht ? T(gf_where(ht, placed, xv)) : NULL;
        }
        free(last);
        free(drop);
        free(hit);
    }
    if (y && is_bool) y = T(gf_to_dtype(y, GF_BOOL));
    return y;
}

static bool check_same_dtype(const char *op, const gf_tensor *x, const gf_tensor *v,
                             const char *vname) {
    if (x->dtype == v->dtype) return true;
    gf__error(GF_ERR_DTYPE, "%s: %s (%s) must have x's dtype (%s); convert it with gf_to_dtype",
              op, vname, gf_dtype_name(v->dtype), gf_dtype_name(x->dtype));
    return false;
}

static bool check_index_dtype(const char *op, const gf_tensor *i, const char *name) {
    if (i->dtype == GF_I64 || i->dtype == GF_I32) return true;
    gf__error(GF_ERR_DTYPE, "%s: %s must be i64 (or i32), got %s", op, name,
              gf_dtype_name(i->dtype));
    return false;
}

static bool check_mask_dtype(const char *op, const gf_tensor *m) {
    if (m->dtype == GF_BOOL) return true;
    gf__error(GF_ERR_DTYPE, "%s: mask must be bool, got %s; make one with a comparison "
              "(gf_gt_scalar...) or gf_to_dtype", op, gf_dtype_name(m->dtype));
    return false;
}

/* ------------------------------------------------------------ scatter */

static gf_tensor *scatter(const char *op, const gf_tensor *x, int dim, const gf_tensor *index,
                          const gf_tensor *src, double value) {
    if (sh_null(op, x, "x") || sh_null(op, index, "index") || !sh_check_dtype_moved(x, op) ||
        !check_index_dtype(op, index, "index") || !gf__same_device(x, index, op))
        return NULL;
    if (src && (!gf__same_device(x, src, op) || !check_same_dtype(op, x, src, "src")))
        return NULL;
    int d = gf__norm_dim(dim, x->rank, op);
    if (d < 0) return NULL;
    int xr = x->rank > 0 ? x->rank : 1, ir = index->rank > 0 ? index->rank : 1;
    const int64_t one = 1;
    const int64_t *xs = x->rank > 0 ? x->sizes : &one, *is = index->rank > 0 ? index->sizes : &one;
    char b1[128], b2[128];
    if (ir != xr || (src && (src->rank > 0 ? src->rank : 1) != ir)) {
        gf__error(GF_ERR_SHAPE, "%s: index %s must have as many dims as x %s%s", op,
                  gf__shape_str(index->sizes, index->rank, b1, sizeof b1),
                  gf__shape_str(x->sizes, x->rank, b2, sizeof b2), src ? " and src" : "");
        return NULL;
    }
    for (int i = 0; i < ir; i++) {
        int64_t ss = src ? (src->rank > 0 ? src->sizes[i] : 1) : INT64_MAX;
        if ((i != d && is[i] > xs[i]) || is[i] > ss) {
            gf__error(GF_ERR_SHAPE, "%s: index of shape %s is larger than %s at dim %d (index "
                      "may not be larger than src in any dim, nor than x but at dim %d)", op,
                      gf__shape_str(index->sizes, index->rank, b1, sizeof b1),
                      is[i] > ss ? "src" : "x", i, d);
            return NULL;
        }
    }
    int s = gf__scope_suspend();
    sh_tmps l = {0}, *L = &l;
    gf_tensor *y = NULL;
    int64_t M = gf__numel(index);
    int64_t *iv = gf__sh_read_i64(index, op);
    if (!iv) L->bad = true;
    /* linear positions in x (row-major) */
    int64_t xstr[GF_MAX_RANK], c[GF_MAX_RANK] = {0};
    gf__contiguous_strides(xs, xr, xstr);
    for (int64_t k = 0; !L->bad && k < M; k++) {
        int64_t v = iv[k];
        if (v < 0 || v >= xs[d]) {
            gf__error(GF_ERR_INDEX, "%s: index %lld is out of range for dim %d of size %lld",
                      op, (long long)v, d, (long long)xs[d]);
            L->bad = true;
            break;
        }
        int64_t p = 0;
        for (int i = 0; i < xr; i++) p += (i == d ? v : c[i]) * xstr[i];
        iv[k] = p;
        for (int i = xr - 1; i >= 0; i--) { /* next coordinate of index */
            if (++c[i] < is[i]) break;
            c[i] = 0;
        }
    }
    if (!L->bad) {
        gf_tensor *vals;
        if (src) {
            gf_tensor *cut = T(src->rank > 0 ? gf_tensor_retain((gf_tensor *)src)
                                             : gf_reshape(src, &one, 1));
            for (int i = 0; i < ir && cut; i++) cut = T(gf_narrow(cut, i, 0, is[i]));
            vals = cut ? T(gf_reshape(cut, (const int64_t[]){-1}, 1)) : NULL;
        } else {
            if (gf__check_value(value, x->dtype, op) != GF_OK) L->bad = true;
            vals = T(gf_full(&M, 1, value, x->dtype, x->storage->device));
        }
        gf_tensor *xf = T(gf_reshape(x, (const int64_t[]){-1}, 1));
        gf_tensor *yf = put_rows(L, op, xf, iv, M, vals, false);
        y = yf ? T(gf_reshape(yf, x->sizes, x->rank)) : NULL;
    }
    free(iv);
    y = sh_finish(L, y);
    gf__scope_resume(s);
    return sh_ret(y);
}

gf_tensor *gf_scatter(const gf_tensor *x, int dim, const gf_tensor *index, const gf_tensor *src) {
    if (!src) {
        gf__null_arg("scatter", "src");
        return NULL;
    }
    return scatter("scatter", x, dim, index, src, 0.0);
}

gf_tensor *gf_scatter_value(const gf_tensor *x, int dim, const gf_tensor *index, double value) {
    return scatter("scatter", x, dim, index, NULL, value);
}

/* ------------------------------------------------------------ nonzero, masked_select */

/* Row-major positions of the nonzero elements of t: malloc'ed, count in *n. */
static int64_t *nonzero_positions(const gf_tensor *t, const char *op, int64_t *n) {
    gf_tensor *nz = t->dtype == GF_BOOL ? gf_tensor_retain((gf_tensor *)t)
                    : gf_dtype_is_float(t->dtype) ? gf_ne_scalar(t, 0.0)
                                                  : gf_ne_scalar_int(t, 0);
    int64_t *v = nz ? gf__sh_read_i64(nz, op) : NULL;
    gf_tensor_release(nz);
    if (!v) return NULL;
    int64_t total = gf__numel(t), k = 0;
    for (int64_t i = 0; i < total; i++)
        if (v[i]) v[k++] = i;
    *n = k;
    return v;
}

gf_tensor *gf_nonzero(const gf_tensor *x) {
    const char *op = "nonzero";
    if (sh_null(op, x, "x") || !sh_check_dtype(x, op, false)) return NULL;
    int s = gf__scope_suspend();
    int64_t n = 0;
    int64_t *pos = nonzero_positions(x, op, &n);
    gf_tensor *y = NULL;
    int r = x->rank;
    int64_t cnt;
    int64_t *out = NULL;
    if (pos && gf__mul_ok(n, r, &cnt)) out = malloc(sizeof(int64_t) * (size_t)(cnt > 0 ? cnt : 1));
    if (pos && !out) gf__error(GF_ERR_OUT_OF_MEMORY, "nonzero: no host memory");
    if (out) {
        for (int64_t k = 0; k < n; k++) {
            int64_t p = pos[k];
            for (int i = r - 1; i >= 0; i--) {
                out[k * r + i] = p % x->sizes[i];
                p /= x->sizes[i];
            }
        }
        static const int64_t z = 0;
        y = gf_from_data(cnt > 0 ? (const void *)out : (const void *)&z, (const int64_t[]){n, r},
                         2, GF_I64, x->storage->device);
    }
    free(out);
    free(pos);
    gf__scope_resume(s);
    return sh_ret(y);
}

/* x and mask broadcast together (both expanded views written to xe, me). */
static bool broadcast_pair(sh_tmps *L, const char *op, const gf_tensor *x, const gf_tensor *m,
                           gf_tensor **xe, gf_tensor **me) {
    int64_t bs[GF_MAX_RANK];
    int r;
    if (gf__broadcast_shapes(x->sizes, x->rank, m->sizes, m->rank, bs, &r, op) != GF_OK)
        return false;
    *xe = T(gf_expand(x, bs, r));
    *me = T(gf_expand(m, bs, r));
    return *xe && *me;
}

gf_tensor *gf_masked_select(const gf_tensor *x, const gf_tensor *mask) {
    const char *op = "masked_select";
    if (sh_null(op, x, "x") || sh_null(op, mask, "mask") || !sh_check_dtype_moved(x, op) ||
        !check_mask_dtype(op, mask) || !gf__same_device(x, mask, op))
        return NULL;
    int s = gf__scope_suspend();
    sh_tmps l = {0}, *L = &l;
    gf_tensor *xe = NULL, *me = NULL, *y = NULL;
    if (broadcast_pair(L, op, x, mask, &xe, &me)) {
        int64_t n = 0;
        int64_t *pos = nonzero_positions(me, op, &n);
        if (pos) {
            gf_tensor *xf = T(gf_reshape(xe, (const int64_t[]){-1}, 1));
            gf_tensor *pt = T(sh_i64_1d(pos, n, x->storage->device));
            y = T(gf_index_select(xf, 0, pt));
            free(pos);
        } else {
            L->bad = true;
        }
    } else {
        L->bad = true;
    }
    y = sh_finish(L, y);
    gf__scope_resume(s);
    return sh_ret(y);
}

gf_tensor *gf_masked_scatter(const gf_tensor *x, const gf_tensor *mask, const gf_tensor *source) {
    const char *op = "masked_scatter";
    if (sh_null(op, x, "x") || sh_null(op, mask, "mask") || sh_null(op, source, "source") ||
        !sh_check_dtype_moved(x, op) || !check_mask_dtype(op, mask) ||
        !gf__same_device(x, mask, op) || !gf__same_device(x, source, op) ||
        !check_same_dtype(op, x, source, "source"))
        return NULL;
    int64_t bs[GF_MAX_RANK];
    int r;
    if (gf__broadcast_shapes(x->sizes, x->rank, mask->sizes, mask->rank, bs, &r, op) != GF_OK)
        return NULL;
    if (r != x->rank || memcmp(bs, x->sizes, sizeof(int64_t) * (size_t)r)) {
        char b1[128], b2[128];
        gf__error(GF_ERR_SHAPE, "masked_scatter: mask %s must broadcast to x's shape %s",
                  gf__shape_str(mask->sizes, mask->rank, b1, sizeof b1),
                  gf__shape_str(x->sizes, x->rank, b2, sizeof b2));
        return NULL;
    }
    int s = gf__scope_suspend();
    sh_tmps l = {0}, *L = &l;
    gf_tensor *y = NULL;
    gf_tensor *me = T(gf_expand(mask, x->sizes, x->rank));
    int64_t n = 0;
    int64_t *pos = me ? nonzero_positions(me, op, &n) : NULL;
    if (pos && n > gf__numel(source)) {
        gf__error(GF_ERR_SHAPE, "masked_scatter: mask has %lld true elements but source only "
                  "%lld", (long long)n, (long long)gf__numel(source));
        L->bad = true;
    }
    if (pos && !L->bad) {
        gf_tensor *sf = T(gf_reshape(source, (const int64_t[]){-1}, 1));
        gf_tensor *vals = sf ? T(gf_narrow(sf, 0, 0, n)) : NULL;
        gf_tensor *xf = T(gf_reshape(x, (const int64_t[]){-1}, 1));
        gf_tensor *yf = put_rows(L, op, xf, pos, n, vals, false);
        y = yf ? T(gf_reshape(yf, x->sizes, x->rank)) : NULL;
    } else {
        L->bad = true;
    }
    free(pos);
    y = sh_finish(L, y);
    gf__scope_resume(s);
    return sh_ret(y);
}

/* ------------------------------------------------------------ index_put */

gf_tensor *gf_index_put(const gf_tensor *x, gf_tensor *const *indices, int n,
                        const gf_tensor *values, bool accumulate) {
    const char *op = "index_put";
    if (sh_null(op, x, "x") || sh_null(op, values, "values") || !sh_check_dtype_moved(x, op) ||
        !gf__same_device(x, values, op) || !check_same_dtype(op, x, values, "values"))
        return NULL;
    if (n < 1 || !indices) {
        gf__error(GF_ERR_INVALID, "index_put: at least one index tensor is needed");
        return NULL;
    }
    for (int k = 0; k < n; k++) {
        if (sh_null(op, indices[k], "an index tensor") || !gf__same_device(x, indices[k], op))
            return NULL;
        bool mask = indices[k]->dtype == GF_BOOL;
        if (!mask && !check_index_dtype(op, indices[k], "an index tensor")) return NULL;
        if (mask && n != 1) {
            gf__error(GF_ERR_INVALID, "index_put: a bool mask must be the only index");
            return NULL;
        }
    }
    bool is_mask = indices[0]->dtype == GF_BOOL;
    int nd = is_mask ? indices[0]->rank : n; /* leading dims of x indexed */
    if (nd > x->rank) {
        gf__error(GF_ERR_INDEX, "index_put: %d indexed dims for x of rank %d", nd, x->rank);
        return NULL;
    }
    if (is_mask && memcmp(indices[0]->sizes, x->sizes, sizeof(int64_t) * (size_t)nd)) {
        char b1[128], b2[128];
        gf__error(GF_ERR_SHAPE, "index_put: the mask %s does not match the leading dims of x %s",
                  gf__shape_str(indices[0]->sizes, nd, b1, sizeof b1),
                  gf__shape_str(x->sizes, x->rank, b2, sizeof b2));
        return NULL;
    }
    int s = gf__scope_suspend();
    sh_tmps l = {0}, *L = &l;
    gf_tensor *y = NULL;
    int64_t M = 0, *lin = NULL;
    int64_t bs[GF_MAX_RANK];
    int br = 0;
    if (is_mask) {
        lin = nonzero_positions(indices[0], op, &M);
        br = 1;
        bs[0] = M;
    } else {
        br = indices[0]->rank;
        memcpy(bs, indices[0]->sizes, sizeof(int64_t) * (size_t)br);
        for (int k = 1; k < n && !L->bad; k++) {
            int64_t nb[GF_MAX_RANK];
            int nr;
            if (gf__broadcast_shapes(bs, br, indices[k]->sizes, indices[k]->rank, nb, &nr, op) !=
                GF_OK) {
                L->bad = true;
            } else {
                memcpy(bs, nb, sizeof(int64_t) * (size_t)nr);
                br = nr;
            }
        }
        M = L->bad ? 0 : gf__checked_numel(bs, br, op);
        lin = M >= 0 && !L->bad ? calloc((size_t)(M > 0 ? M : 1), sizeof(int64_t)) : NULL;
        for (int k = 0; lin && k < n; k++) {
            gf_tensor *e = T(gf_expand(indices[k], bs, br));
            int64_t *v = e ? gf__sh_read_i64(e, op) : NULL;
            if (!v) {
                free(lin);
                lin = NULL;
                break;
            }
            int64_t size = x->sizes[k];
            for (int64_t j = 0; j < M && lin; j++) {
                int64_t iv = v[j] < 0 ? v[j] + size : v[j];
                if (iv < 0 || iv >= size) {
                    gf__error(GF_ERR_INDEX, "index_put: index %lld is out of bounds for dim %d "
                              "of size %lld", (long long)v[j], k, (long long)size);
                    free(lin);
                    lin = NULL;
                } else {
                    lin[j] = lin[j] * size + iv;
                }
            }
            free(v);
        }
    }
    if (lin) {
        /* x as [P, rest...], values broadcast to [idx shape..., rest...] -> [M, rest...] */
        int64_t xv[GF_MAX_RANK], vs[GF_MAX_RANK + GF_MAX_RANK], flat[GF_MAX_RANK];
        int xr = 0, vr = 0, fr = 0;
        xv[xr++] = -1;
        for (int i = nd; i < x->rank; i++) xv[xr++] = x->sizes[i];
        for (int i = 0; i < br; i++) vs[vr++] = bs[i];
        for (int i = nd; i < x->rank; i++) vs[vr++] = x->sizes[i];
        flat[fr++] = M;
        for (int i = nd; i < x->rank; i++) flat[fr++] = x->sizes[i];
        if (vr > GF_MAX_RANK) {
            gf__error(GF_ERR_SHAPE, "index_put: the indexed shape has rank %d > %d", vr,
                      GF_MAX_RANK);
            L->bad = true;
        }
        int64_t chk[GF_MAX_RANK];
        int cr;
        if (!L->bad &&
            (gf__broadcast_shapes(vs, vr, values->sizes, values->rank, chk, &cr, op) != GF_OK ||
             cr != vr || memcmp(chk, vs, sizeof(int64_t) * (size_t)vr))) {
            char b1[128], b2[128];
            gf__error(GF_ERR_SHAPE, "index_put: values of shape %s do not broadcast to the "
                      "indexed shape %s", gf__shape_str(values->sizes, values->rank, b1, sizeof b1),
                      gf__shape_str(vs, vr, b2, sizeof b2));
            L->bad = true;
        }
        gf_tensor *xr2 = T(gf_reshape(x, xv, xr));
        gf_tensor *ve = T(gf_expand(values, vs, vr));
        gf_tensor *vf = ve ? T(gf_reshape(ve, flat, fr)) : NULL;
        gf_tensor *yv = put_rows(L, op, xr2, lin, M, vf, accumulate);
        y = yv ? T(gf_reshape(yv, x->sizes, x->rank)) : NULL;
    } else {
        L->bad = true;
    }
    free(lin);
    y = sh_finish(L, y);
    gf__scope_resume(s);
    return sh_ret(y);
}
