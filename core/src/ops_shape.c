/* SPDX-License-Identifier: BSD-3-Clause */
/* ops_shape.c — flip, roll, repeat, tile, repeat_interleave, pad, unbind,
 * split_with_sizes, unfold, take_along_dim (graft/shape.h).
 *
 * Composites of views (narrow, select, expand, reshape, permute) and of the
 * differentiable copies index_select, gather and cat: their gradients of
 * every order are those ops' rules (index_select's is index_add, so
 * overlapping windows of unfold and the reflected borders of pad sum their
 * gradients). Index lists (flip, pad, unfold, repeat_interleave) are built
 * on the host from sizes alone, except the repeats tensor of
 * repeat_interleave_tensor, which is read back. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autograd/ag_internal.h"
#include "shape_internal.h"

/* index_select of x along d with the host list idx[0..n). */
static gf_tensor *select_list(sh_tmps *L, const gf_tensor *x, int d, const int64_t *idx,
                              int64_t n) {
    gf_tensor *it = T(sh_i64_1d(idx, n, x->storage->device));
    return T(gf_index_select(x, d, it));
}

static int64_t *alloc_idx(int64_t n, const char *op) {
    int64_t *v = malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
    if (!v) gf__error(GF_ERR_OUT_OF_MEMORY, "%s: no host memory for %lld indices", op, (long long)n);
    return v;
}

/* ------------------------------------------------------------ flip */

gf_tensor *gf_flip(const gf_tensor *x, const int *dims, int ndims) {
    const char *op = "flip";
    bool red[GF_MAX_RANK];
    if (sh_null(op, x, "x") || !sh_check_dtype_moved(x, op)) return NULL;
    if (ndims > 0 && !dims) {
        gf__error(GF_ERR_INVALID, "flip: dims is NULL with ndims %d", ndims);
        return NULL;
    }
    if (ndims == 0) { /* torch.flip(x, []) is a copy */
        for (int i = 0; i < GF_MAX_RANK; i++) red[i] = false;
    } else if (!gf__sh_dims(dims, ndims, x->rank, op, red)) {
        return NULL;
    }
    int s = gf__scope_suspend();
    sh_tmps l = {0}, *L = &l;
    gf_tensor *y = T(gf_clone(x));
    for (int d = 0; d < x->rank && y; d++) {
        if (!red[d]) continue;
        int64_t n = x->sizes[d];
        int64_t *v = alloc_idx(n, op);
        if (!v) {
            L->bad = true;
            break;
        }
        for (int64_t i = 0; i < n; i++) v[i] = n - 1 - i;
        y = select_list(L, y, d, v, n);
        free(v);
    }
    y = sh_finish(L, y);
    gf__scope_resume(s);
    return sh_ret(y);
}

/* ------------------------------------------------------------ roll */

/* cat(x[n - k:], x[:n - k]) along d, k = shift mod n. */
static gf_tensor *roll1(sh_tmps *L, gf_tensor *x, int d, int64_t shift) {
    int64_t n = x->sizes[d];
    if (n == 0) return x;
    int64_t k = shift % n;
    if (k < 0) k += n;
    if (k == 0) return x;
    gf_tensor *parts[2] = {T(gf_narrow(x, d, n - k, k)), T(gf_narrow(x, d, 0, n - k))};
    return parts[0] && parts[1] ? T(gf_cat(parts, 2, d)) : NULL;
}

gf_tensor *gf_roll(const gf_tensor *x, const int64_t *shifts, int nshifts, const int *dims,
                   int ndims) {
    const char *op = "roll";
    if (sh_null(op, x, "x") || !sh_check_dtype_moved(x, op)) return NULL;
    if (!shifts || nshifts < 1) {
        gf__error(GF_ERR_INVALID, "roll: shifts must hold at least one shift");
        return NULL;
    }
    if (ndims == 0 ? nshifts != 1 : (nshifts != ndims || !dims)) {
        gf__error(GF_ERR_INVALID, "roll: shifts and dims must have the same length (got %d "
                  "shifts and %d dims; with no dims, exactly one shift)", nshifts, ndims);
        return NULL;
    }
    int nd[GF_MAX_RANK];
    for (int i = 0; i < ndims; i++) {
        nd[i] = gf__norm_dim(dims[i], x->rank, op);
        if (nd[i] < 0) return NULL;
    }
    int s = gf__scope_suspend();
    sh_tmps l = {0}, *L = &l;
    gf_tensor *y = T(gf_clone(x));
    if (ndims == 0) {
        gf_tensor *f = T(gf_reshape(y, (const int64_t[]){-1}, 1));
        gf_tensor *r = f ? roll1(L, f, 0, shifts[0]) : NULL;
        y = r ? T(gf_reshape(r, x->sizes, x->rank)) : NULL;
    } else if (x->rank > 0) {
        for (int i = 0; i < ndims && y; i++) y = roll1(L, y, nd[i], shifts[i]);
    }
    y = sh_finish(L, y);
    gf__scope_resume(s);
    return sh_ret(y);
}

/* ------------------------------------------------------------ repeat, tile */

gf_tensor *gf_repeat(const gf_tensor *x, const int64_t *repeats, int nrep) {
    const char *op = "repeat";
    if (sh_null(op, x, "x") || !sh_check_dtype_moved(x, op)) return NULL;
    if (nrep < x->rank || nrep > GF_MAX_RANK || (nrep > 0 && !repeats)) {
        gf__error(GF_ERR_INVALID, "repeat: the number of repeats (%d) must be at least the rank "
                  "of x (%d) and at most %d", nrep, x->rank, GF_MAX_RANK);
        return NULL;
    }
    int64_t out[GF_MAX_RANK], cur[GF_MAX_RANK];
    int lead = nrep - x->rank;
    for (int i = 0; i < nrep; i++) {
        if (repeats[i] < 0) {
            gf__error(GF_ERR_INVALID, "repeat: repeats must be >= 0, got %lld at %d",
                      (long long)repeats[i], i);
            return NULL;
        }
        cur[i] = i < lead ? 1 : x->sizes[i - lead];
        if (!gf__mul_ok(cur[i], repeats[i], &out[i])) {
            gf__error(GF_ERR_OVERFLOW, "repeat: size %lld times %lld repeats overflows",
                      (long long)cur[i], (long long)repeats[i]);
            return NULL;
        }
    }
    if (gf__checked_numel(out, nrep, op) < 0) return NULL;
    int s = gf__scope_suspend();
    sh_tmps l = {0}, *L = &l;
    gf_tensor *y = T(gf_reshape(x, cur, nrep));
    /* Each dim in turn: [.., s, ..] -> unsqueeze [.., 1, s, ..] -> expand
     * [.., r, s, ..] -> reshape [.., r * s, ..]: rank + 1 at most. */
    for (int d = 0; d < nrep && y; d++) {
        if (repeats[d] == 1) continue;
        int64_t es[GF_MAX_RANK + 1], rs[GF_MAX_RANK];
        int k = 0;
        for (int i = 0; i < nrep; i++) {
            if (i == d) es[k++] = repeats[d];
            es[k++] = i < d ? out[i] : cur[i];
            rs[i] = i <= d ? out[i] : cur[i];
        }
        if (nrep + 1 > GF_MAX_RANK) {
            /* rank 8: use cat of copies instead of the extra dim */
            gf_tensor **parts = malloc(sizeof *parts * (size_t)(repeats[d] > 0 ? repeats[d] : 1));
            if (!parts || repeats[d] > INT32_MAX) {
                free(parts);
                gf__error(GF_ERR_INVALID, "repeat: too many repeats of a rank-8 tensor");
                L->bad = true;
                break;
            }
            for (int64_t i = 0; i < repeats[d]; i++) parts[i] = y;
            y = repeats[d] > 0 ? T(gf_cat(parts, (int)repeats[d], d)) : T(gf_narrow(y, d, 0, 0));
            free(parts);
            continue;
        }
        gf_tensor *u = T(gf_unsqueeze(y, d));
        gf_tensor *e = T(gf_expand(u, es, nrep + 1));
        y = T(gf_reshape(e, rs, nrep));
    }
    if (y && gf_tensor_shares_storage(y, x))
        y = T(gf_clone(y)); /* all repeats 1: still a copy, as PyTorch */
    y = sh_finish(L, y);
    gf__scope_resume(s);
    return sh_ret(y);
}

gf_tensor *gf_tile(const gf_tensor *x, const int64_t *reps, int nrep) {
    if (sh_null("tile", x, "x")) return NULL;
    if (nrep < 0 || nrep > GF_MAX_RANK || (nrep > 0 && !reps)) {
        gf__error(GF_ERR_INVALID, "tile: %d reps (at most %d)%s", nrep, GF_MAX_RANK,
                  nrep > 0 && !reps ? ", reps is NULL" : "");
        return NULL;
    }
    int64_t r[GF_MAX_RANK];
    int n = nrep > x->rank ? nrep : x->rank;
    for (int i = 0; i < n; i++) r[i] = i < n - nrep ? 1 : reps[i - (n - nrep)];
    return gf_repeat(x, r, n);
}

/* ------------------------------------------------------------ repeat_interleave */

static gf_tensor *interleave(const char *op, const gf_tensor *x, const int64_t *reps,
                             int64_t nreps, int dim) {
    int s = gf__scope_suspend();
    sh_tmps l = {0}, *L = &l;
    const gf_tensor *xs = x;
    int d = 0;
    if (dim == GF_DIM_ALL || x->rank == 0)
        xs = T(gf_reshape(x, (const int64_t[]){-1}, 1));
    else
        d = gf__norm_dim(dim, x->rank, op);
    gf_tensor *y = NULL;
    if (xs && d >= 0) {
        int64_t n = xs->sizes[d], total = 0;
        if (nreps != 1 && nreps != n) {
            gf__error(GF_ERR_SHAPE, "%s: repeats must have 1 or %lld elements (the size of dim "
                      "%d), got %lld", op, (long long)n, d, (long long)nreps);
            L->bad = true;
        }
        for (int64_t i = 0; !L->bad && i < n; i++) {
            int64_t r = reps[nreps == 1 ? 0 : i];
            if (r < 0) {
                gf__error(GF_ERR_INVALID, "%s: repeats must be >= 0, got %lld", op, (long long)r);
                L->bad = true;
            } else if (!gf__add_ok(total, r, &total) || total >= ((int64_t)1 << 59)) {
                gf__error(GF_ERR_OVERFLOW, "%s: the result's size overflows", op);
                L->bad = true;
            }
        }
        int64_t *v = L->bad ? NULL : alloc_idx(total, op);
        if (v) {
            int64_t k = 0;
            for (int64_t i = 0; i < n; i++)
                for (int64_t j = 0; j < reps[nreps == 1 ? 0 : i]; j++) v[k++] = i;
            y = select_list(L, xs, d, v, total);
            free(v);
        }
    }
    y = sh_finish(L, y);
    gf__scope_resume(s);
    return sh_ret(y);
}

gf_tensor *gf_repeat_interleave(const gf_tensor *x, int64_t repeats, int dim) {
    const char *op = "repeat_interleave";
    if (sh_null(op, x, "x") || !sh_check_dtype_moved(x, op)) return NULL;
    if (dim != GF_DIM_ALL && gf__norm_dim(dim, x->rank, op) < 0) return NULL;
    return interleave(op, x, &repeats, 1, dim);
}

gf_tensor *gf_repeat_interleave_tensor(const gf_tensor *x, const gf_tensor *repeats, int dim) {
    const char *op = "repeat_interleave";
    if (sh_null(op, x, "x") || sh_null(op, repeats, "repeats") || !sh_check_dtype_moved(x, op))
        return NULL;
    if (dim != GF_DIM_ALL && gf__norm_dim(dim, x->rank, op) < 0) return NULL;
    if ((repeats->dtype != GF_I64 && repeats->dtype != GF_I32) || repeats->rank > 1) {
        gf__error(GF_ERR_DTYPE, "repeat_interleave: repeats must be a 0-dim or 1-D i64 (or i32) "
                  "tensor, got %s of rank %d", gf_dtype_name(repeats->dtype), repeats->rank);
        return NULL;
    }
    int s = gf__scope_suspend();
    int64_t *r = gf__sh_read_i64(repeats, op);
    gf__scope_resume(s);
    if (!r) return NULL;
    gf_tensor *y = interleave(op, x, r, gf__numel(repeats), dim);
    free(r);
    return y;
}

/* ------------------------------------------------------------ pad */

/* The source index of output position o (in [-lo, n + hi)) of a dim of
 * size n. */
static int64_t pad_src(gf_pad_mode m, int64_t j, int64_t n) {
    if (j >= 0 && j < n) return j;
    switch (m) {
    case GF_PAD_REFLECT: return j < 0 ? -j : 2 * (n - 1) - j;
    case GF_PAD_REPLICATE: return j < 0 ? 0 : n - 1;
    default: return ((j % n) + n) % n; /* circular */
    }
}

gf_tensor *gf_pad(const gf_tensor *x, const int64_t *pad, int npad, gf_pad_mode mode,
                  double value) {
    const char *op = "pad";
    if (sh_null(op, x, "x") || !sh_check_dtype_moved(x, op)) return NULL;
    if ((unsigned)mode > GF_PAD_CIRCULAR) {
        gf__error(GF_ERR_INVALID, "pad: mode %d is not one of GF_PAD_CONSTANT, REFLECT, "
                  "REPLICATE, CIRCULAR", (int)mode);
        return NULL;
    }
    if (npad < 0 || npad % 2 || npad / 2 > x->rank || (npad > 0 && !pad)) {
        gf__error(GF_ERR_INVALID, "pad: the padding length must be even and at most twice the "
                  "rank of x (%d), got %d", x->rank, npad);
        return NULL;
    }
    static const char *names[] = {"constant", "reflect", "replicate", "circular"};
    int64_t out[GF_MAX_RANK];
    for (int d = 0; d < x->rank; d++) out[d] = x->sizes[d];
    for (int i = 0; i < npad / 2; i++) {
        int d = x->rank - 1 - i;
        int64_t lo = pad[2 * i], hi = pad[2 * i + 1], n = x->sizes[d];
        if (mode != GF_PAD_CONSTANT) {
            bool bad = lo < 0 || hi < 0 ||
                       (mode == GF_PAD_REFLECT && (lo >= n || hi >= n)) ||
                       (mode == GF_PAD_CIRCULAR && (lo > n || hi > n)) ||
                       (mode == GF_PAD_REPLICATE && n == 0 && (lo > 0 || hi > 0));
            if (bad) {
                gf__error(GF_ERR_INVALID, "pad: %s padding (%lld, %lld) of dim %d of size %lld is "
                          "invalid (needs 0 <= pad %s)", names[mode], (long long)lo,
                          (long long)hi, d, (long long)n,
                          mode == GF_PAD_REFLECT ? "< size" : mode == GF_PAD_CIRCULAR
                                                                ? "<= size"
                                                                : "and a non-empty dim");
                return NULL;
            }
        }
        int64_t t;
        if (!gf__add_ok(n, lo, &t) || !gf__add_ok(t, hi, &out[d])) {
            gf__error(GF_ERR_OVERFLOW, "pad: size %lld padded by (%lld, %lld) overflows",
                      (long long)n, (long long)lo, (long long)hi);
            return NULL;
        }
        if (out[d] < 0) {
            gf__error(GF_ERR_SHAPE, "pad: padding (%lld, %lld) leaves dim %d of size %lld with "
                      "a negative size", (long long)lo, (long long)hi, d, (long long)n);
            return NULL;
        }
    }
    if (gf__checked_numel(out, x->rank, op) < 0) return NULL;
    if (mode == GF_PAD_CONSTANT && gf__check_value(value, x->dtype, op) != GF_OK) return NULL;
    int s = gf__scope_suspend();
    sh_tmps l = {0}, *L = &l;
    gf_tensor *y = T(gf_clone(x));
    for (int i = 0; i < npad / 2 && y; i++) {
        int d = x->rank - 1 - i;
        int64_t lo = pad[2 * i], hi = pad[2 * i + 1], n = x->sizes[d];
        if (mode == GF_PAD_CONSTANT) {
            /* crop the negative sides, then cat constant blocks */
            int64_t a = lo < 0 ? -lo : 0, b = hi < 0 ? -hi : 0;
            if (a || b) y = T(gf_narrow(y, d, a, n - a - b));
            gf_tensor *parts[3];
            int np = 0;
            int64_t sz[GF_MAX_RANK];
            memcpy(sz, y ? y->sizes : x->sizes, sizeof(int64_t) * (size_t)x->rank);
            if (lo > 0) {
                sz[d] = lo;
                parts[np++] = T(gf_full(sz, x->rank, value, x->dtype, x->storage->device));
            }
            parts[np++] = y;
            if (hi > 0) {
                sz[d] = hi;
                parts[np++] = T(gf_full(sz, x->rank, value, x->dtype, x->storage->device));
            }
            if (np > 1 && !L->bad) y = T(gf_cat(parts, np, d));
        } else if (lo || hi) {
            int64_t m = out[d];
            int64_t *v = alloc_idx(m, op);
            if (!v) {
                L->bad = true;
                break;
            }
            for (int64_t j = 0; j < m; j++) v[j] = pad_src(mode, j - lo, n);
            y = select_list(L, y, d, v, m);
            free(v);
        }
    }
    y = sh_finish(L, y);
    gf__scope_resume(s);
    return sh_ret(y);
}

/* ------------------------------------------------------------ unbind, split_with_sizes */

static gf_status pieces_out(gf_tensor **parts, int n, gf_tensor **out, int saved) {
    for (int i = 0; i < n; i++)
        if (!parts[i]) {
            for (int k = 0; k < n; k++) gf_tensor_release(parts[k]);
            gf__scope_resume(saved);
            return gf__status();
        }
    gf__scope_resume(saved);
    for (int i = 0; i < n; i++) {
        if (parts[i]->autograd) parts[i]->autograd->view_creation = GF_VIEW_MULTI_OUTPUT;
        out[i] = gf__ret(parts[i]);
    }
    return GF_OK;
}

gf_status gf_unbind(const gf_tensor *x, int dim, gf_tensor **out, int max_out, int *n) {
    const char *op = "unbind";
    if (n) *n = 0;
    if (sh_null(op, x, "x")) return gf__status();
    if (!out || !n) return gf__error(GF_ERR_INVALID, "unbind: out or n is NULL");
    if (x->rank == 0) return gf__error(GF_ERR_INDEX, "unbind: cannot unbind a 0-dim tensor");
    int d = gf__norm_dim(dim, x->rank, op);
    if (d < 0) return gf__status();
    if (x->sizes[d] > max_out)
        return gf__error(GF_ERR_INVALID, "unbind: %lld slices do not fit in max_out %d",
                         (long long)x->sizes[d], max_out);
    int cnt = (int)x->sizes[d];
    int saved = gf__scope_suspend();
    for (int i = 0; i < cnt; i++) out[i] = gf_select(x, d, i);
    gf_status st = pieces_out(out, cnt, out, saved);
    if (st == GF_OK) *n = cnt;
    return st;
}

/* out[0..size(0)) new tensors holding copies of x's slices along dim 0, with
 * one autograd node for all of them (UnbindBackward: their gradients
 * stacked), where gf_unbind's views would each send a gradient of x's full
 * size back. For the recurrent layers' per-step inputs (core/src/nn/rnn.c).
 * On failure every out[i] is NULL and the error is set. */
gf_status gf__unbind_copies(const gf_tensor *x, gf_tensor **out) {
    int cnt = (int)x->sizes[0];
    for (int i = 0; i < cnt; i++) out[i] = NULL;
    int saved = gf__scope_suspend();
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    bool ok = true;
    for (int i = 0; ok && i < cnt; i++) {
        gf_tensor *v = gf_select(x, 0, i);
        out[i] = v ? gf_clone(v) : NULL;
        gf_tensor_release(v);
        ok = out[i] != NULL;
    }
    gf_grad_mode_set(prev);
    gf__scope_resume(saved);
    if (ok) ok = gf__ag_record_unbind_copies(x, out, cnt) == GF_OK;
    if (!ok) {
        for (int i = 0; i < cnt; i++) gf_tensor_release(out[i]), out[i] = NULL;
        return gf__status();
    }
    return GF_OK;
}

gf_status gf_split_with_sizes(const gf_tensor *x, const int64_t *sizes, int nsizes, int dim,
                              gf_tensor **out, int max_out) {
    const char *op = "split_with_sizes";
    if (sh_null(op, x, "x")) return gf__status();
    if (!out || (nsizes > 0 && !sizes) || nsizes < 0)
        return gf__error(GF_ERR_INVALID, "split_with_sizes: out or sizes is NULL");
    if (x->rank == 0) return gf__error(GF_ERR_INDEX, "split_with_sizes: cannot split a 0-dim tensor");
    int d = gf__norm_dim(dim, x->rank, op);
    if (d < 0) return gf__status();
    if (nsizes > max_out)
        return gf__error(GF_ERR_INVALID, "split_with_sizes: %d pieces do not fit in max_out %d",
                         nsizes, max_out);
    int64_t total = 0;
    for (int i = 0; i < nsizes; i++) {
        if (sizes[i] < 0)
            return gf__error(GF_ERR_INVALID, "split_with_sizes: split_sizes[%d] = %lld is "
                             "negative", i, (long long)sizes[i]);
        if (!gf__add_ok(total, sizes[i], &total))
            return gf__error(GF_ERR_OVERFLOW, "split_with_sizes: the sizes' sum overflows");
    }
    if (total != x->sizes[d])
        return gf__error(GF_ERR_SHAPE, "split_with_sizes: split_sizes sum to %lld, not to the "
                         "size %lld of dim %d", (long long)total, (long long)x->sizes[d], d);
    int saved = gf__scope_suspend();
    int64_t start = 0;
    for (int i = 0; i < nsizes; i++) {
        out[i] = gf_narrow(x, d, start, sizes[i]);
        start += sizes[i];
    }
    return pieces_out(out, nsizes, out, saved);
}

/* ------------------------------------------------------------ unfold */

gf_tensor *gf_unfold(const gf_tensor *x, int dim, int64_t size, int64_t step) {
    const char *op = "unfold";
    if (sh_null(op, x, "x") || !sh_check_dtype_moved(x, op)) return NULL;
    int d = gf__norm_dim(dim, x->rank, op);
    if (d < 0) return NULL;
    int64_t n = x->rank > 0 ? x->sizes[d] : 1;
    if (size < 0 || size > n) {
        gf__error(GF_ERR_INVALID, "unfold: size %lld must be in [0, %lld] (the size of dim %d)",
                  (long long)size, (long long)n, d);
        return NULL;
    }
    if (step <= 0) {
        gf__error(GF_ERR_INVALID, "unfold: step must be > 0, got %lld", (long long)step);
        return NULL;
    }
    if (x->rank >= GF_MAX_RANK) {
        gf__error(GF_ERR_SHAPE, "unfold: the result would have rank %d > %d", x->rank + 1,
                  GF_MAX_RANK);
        return NULL;
    }
    int64_t nw = (n - size) / step + 1, total;
    if (!gf__mul_ok(nw, size, &total)) {
        gf__error(GF_ERR_OVERFLOW, "unfold: %lld windows of %lld overflow", (long long)nw,
                  (long long)size);
        return NULL;
    }
    int s = gf__scope_suspend();
    sh_tmps l = {0}, *L = &l;
    const gf_tensor *xs = x->rank == 0 ? T(gf_reshape(x, (const int64_t[]){1}, 1)) : x;
    gf_tensor *y = NULL;
    int64_t *v = xs ? alloc_idx(total, op) : NULL;
    if (v) {
        for (int64_t w = 0; w < nw; w++)
            for (int64_t j = 0; j < size; j++) v[w * size + j] = w * step + j;
        gf_tensor *g = select_list(L, xs, d, v, total); /* [.., nw * size, ..] */
        free(v);
        int64_t sz[GF_MAX_RANK];
        int r = 0;
        for (int i = 0; i < xs->rank; i++) {
            if (i == d) {
                sz[r++] = nw;
                sz[r++] = size;
            } else {
                sz[r++] = xs->sizes[i];
            }
        }
        gf_tensor *g2 = g ? T(gf_reshape(g, sz, r)) : NULL;
        /* the window dim (d + 1) last */
        int perm[GF_MAX_RANK], k = 0;
        for (int i = 0; i < r; i++)
            if (i != d + 1) perm[k++] = i;
        perm[k] = d + 1;
        y = g2 ? T(gf_permute(g2, perm, r)) : NULL;
        if (y && x->rank == 0) y = T(gf_reshape(y, (const int64_t[]){size}, 1));
        if (y) y = T(gf_contiguous(y));
    } else {
        L->bad = true;
    }
    y = sh_finish(L, y);
    gf__scope_resume(s);
    return sh_ret(y);
}

/* ------------------------------------------------------------ take_along_dim */

gf_tensor *gf_take_along_dim(const gf_tensor *x, const gf_tensor *indices, int dim) {
    const char *op = "take_along_dim";
    if (sh_null(op, x, "x") || sh_null(op, indices, "indices")) return NULL;
    if (!gf__same_device(x, indices, op)) return NULL;
    if (indices->dtype != GF_I64 && indices->dtype != GF_I32) {
        gf__error(GF_ERR_DTYPE, "take_along_dim: indices must be i64 (or i32), got %s",
                  gf_dtype_name(indices->dtype));
        return NULL;
    }
    int s = gf__scope_suspend();
    sh_tmps l = {0}, *L = &l;
    gf_tensor *y = NULL;
    if (dim == GF_DIM_ALL) {
        gf_tensor *xf = T(gf_reshape(x, (const int64_t[]){-1}, 1));
        gf_tensor *ifl = T(gf_reshape(indices, (const int64_t[]){-1}, 1));
        y = xf && ifl ? T(gf_gather(xf, 0, ifl)) : NULL;
    } else if (x->rank != indices->rank) {
        gf__error(GF_ERR_SHAPE, "take_along_dim: x (rank %d) and indices (rank %d) must have "
                  "the same number of dims", x->rank, indices->rank);
        L->bad = true;
    } else {
        int d = gf__norm_dim(dim, x->rank, op);
        if (d < 0) {
            L->bad = true;
        } else if (x->rank == 0) {
            y = T(gf_gather(x, 0, indices));
        } else {
            int64_t a[GF_MAX_RANK], b[GF_MAX_RANK], bs[GF_MAX_RANK];
            memcpy(a, x->sizes, sizeof(int64_t) * (size_t)x->rank);
            memcpy(b, indices->sizes, sizeof(int64_t) * (size_t)x->rank);
            a[d] = b[d] = 1;
            int rr;
            if (gf__broadcast_shapes(a, x->rank, b, x->rank, bs, &rr, op) != GF_OK) {
                L->bad = true;
            } else {
                bs[d] = x->sizes[d];
                gf_tensor *xe = T(gf_expand(x, bs, x->rank));
                bs[d] = indices->sizes[d];
                gf_tensor *ie = T(gf_expand(indices, bs, x->rank));
                y = xe && ie ? T(gf_gather(xe, d, ie)) : NULL;
            }
        }
    }
    y = sh_finish(L, y);
    gf__scope_resume(s);
    return sh_ret(y);
}
