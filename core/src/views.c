/* SPDX-License-Identifier: BSD-3-Clause */
/* views.c — views share their base's storage and copy nothing. */
#include <stdio.h>
#include <string.h>

#include "autograd/ag_internal.h"

/* Records the view's history and hands out the new reference. */
static gf_tensor *finish(const gf_tensor *in, gf_tensor *out, gf_view_kind kind, const int64_t *p,
                         int np) {
    if (!out) return NULL;
    if (gf__ag_record_view(in, out, kind, p, np, out->storage == in->storage) != GF_OK) {
        gf_tensor_release(out);
        return NULL;
    }
    return gf__ret(out);
}

#define NEED(t, op)                      \
    do {                                 \
        if (!(t)) {                      \
            gf__null_arg(op, "tensor");  \
            return NULL;                 \
        }                                \
    } while (0)

/* Resolves one -1 in sizes against numel; SHAPE error when it cannot fit. */
static bool infer_sizes(const gf_tensor *t, const int64_t *sizes, int rank, int64_t *out,
                        const char *op) {
    if (rank < 0 || rank > GF_MAX_RANK || (rank && !sizes)) {
        gf__error(GF_ERR_INVALID, "%s: rank %d is out of range [0, %d] or sizes is NULL", op, rank,
                  GF_MAX_RANK);
        return false;
    }
    int infer = -1;
    int64_t known = 1;
    for (int i = 0; i < rank; i++) {
        if (sizes[i] == -1) {
            if (infer >= 0) {
                gf__error(GF_ERR_SHAPE, "%s: only one dim can be -1", op);
                return false;
            }
            infer = i;
        } else if (sizes[i] < 0) {
            gf__error(GF_ERR_INVALID, "%s: size %lld of dim %d is negative", op,
                      (long long)sizes[i], i);
            return false;
        } else {
            if (sizes[i] && known > INT64_MAX / sizes[i]) {
                gf__error(GF_ERR_OVERFLOW, "%s: sizes overflow", op);
                return false;
            }
            known *= sizes[i];
        }
        out[i] = sizes[i];
    }
    int64_t n = gf__numel(t);
    if (infer >= 0) {
        if (known == 0 || n % known) goto bad;
        out[infer] = n / known;
    } else if (known != n) goto bad;
    return true;
bad : {
    char a[200], b[200];
    gf__error(GF_ERR_SHAPE, "%s: shape %s is invalid for a tensor of %lld elements (sizes %s)", op,
              gf__shape_str(sizes, rank, a, sizeof a), (long long)n,
              gf__shape_str(t->sizes, t->rank, b, sizeof b));
    return false;
}
}

/* Strides for viewing t as sizes without a copy, if possible (the rule
 * PyTorch uses: each run of merged dims must be contiguous in itself). */
static bool view_strides(const gf_tensor *t, const int64_t *sizes, int rank, int64_t *strides) {
    if (gf__numel(t) == 0 || t->rank == 0) {
        gf__contiguous_strides(sizes, rank, strides);
        return true;
    }
    /* Strides of size-1 dims are arbitrary (an adopted tensor's may be
     * huge): a product that overflows means the chunk cannot be viewed. */
    int view_d = rank - 1;
    int64_t chunk_base_stride = t->strides[t->rank - 1];
    int64_t tensor_numel = 1, view_numel = 1, want;
    for (int d = t->rank - 1; d >= 0; d--) {
        tensor_numel *= t->sizes[d];
        if (d == 0 || (t->sizes[d - 1] != 1 &&
                       (!gf__mul_ok(tensor_numel, chunk_base_stride, &want) ||
                        t->strides[d - 1] != want))) {
            while (view_d >= 0 && (view_numel < tensor_numel || sizes[view_d] == 1)) {
                if (!gf__mul_ok(view_numel, chunk_base_stride, &strides[view_d])) return false;
                view_numel *= sizes[view_d];
                view_d--;
            }
            if (view_numel != tensor_numel) return false;
            if (d > 0) {
                chunk_base_stride = t->strides[d - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    return view_d == -1;
}

static gf_tensor *view_impl(const gf_tensor *t, const int64_t *sizes, int rank, bool allow_copy,
                            const char *op) {
    int64_t s[GF_MAX_RANK], st[GF_MAX_RANK];
    if (!infer_sizes(t, sizes, rank, s, op) || gf__checked_numel(s, rank, op) < 0) return NULL;
    if (view_strides(t, s, rank, st)) return gf__view(t, s, st, rank, t->offset);
    if (!allow_copy) {
        char a[200];
        gf__error(GF_ERR_SHAPE, "%s: a tensor of sizes %s with these strides cannot be viewed as "
                  "the new shape without a copy; use gf_reshape (or gf_contiguous first)", op,
                  gf__shape_str(t->sizes, t->rank, a, sizeof a));
        return NULL;
    }
    gf_tensor *c = gf__contig(t);
    if (!c) return NULL;
    gf__contiguous_strides(s, rank, st);
    gf_tensor *r = gf__view(c, s, st, rank, c->offset);
    gf_tensor_release(c);
    return r;
}

gf_tensor *gf_view(const gf_tensor *t, const int64_t *sizes, int rank) {
    NEED(t, "gf_view");
    return finish(t, view_impl(t, sizes, rank, false, "gf_view"), GF_VIEW_KIND_RESHAPE, NULL, 0);
}

gf_tensor *gf_reshape(const gf_tensor *t, const int64_t *sizes, int rank) {
    NEED(t, "gf_reshape");
    return finish(t, view_impl(t, sizes, rank, true, "gf_reshape"), GF_VIEW_KIND_RESHAPE, NULL, 0);
}

gf_tensor *gf_flatten(const gf_tensor *t) {
    NEED(t, "gf_flatten");
    int64_t n = -1;
    return finish(t, view_impl(t, &n, 1, true, "gf_flatten"), GF_VIEW_KIND_RESHAPE, NULL, 0);
}

gf_tensor *gf_transpose(const gf_tensor *t, int dim0, int dim1) {
    NEED(t, "gf_transpose");
    int a = gf__norm_dim(dim0, t->rank, "gf_transpose"), b = a < 0 ? -1 : gf__norm_dim(dim1, t->rank, "gf_transpose");
    if (a < 0 || b < 0) return NULL;
    int64_t s[GF_MAX_RANK], st[GF_MAX_RANK];
    memcpy(s, t->sizes, sizeof s);
    memcpy(st, t->strides, sizeof st);
    if (t->rank) {
        s[a] = t->sizes[b], s[b] = t->sizes[a];
        st[a] = t->strides[b], st[b] = t->strides[a];
    }
    int64_t p[2] = {a, b};
    return finish(t, gf__view(t, s, st, t->rank, t->offset), GF_VIEW_KIND_TRANSPOSE, p, 2);
}

gf_tensor *gf_permute(const gf_tensor *t, const int *dims, int ndims) {
    NEED(t, "gf_permute");
    if (!dims && ndims) {
        gf__null_arg_of("gf_permute", "dims", GF__ARG_ARRAY);
        return NULL;
    }
    if (ndims != t->rank) {
        gf__error(GF_ERR_SHAPE, "gf_permute: %d dims given for a tensor of rank %d; give each dim "
                  "once", ndims, t->rank);
        return NULL;
    }
    int64_t s[GF_MAX_RANK], st[GF_MAX_RANK], p[GF_MAX_RANK];
    bool seen[GF_MAX_RANK] = {0};
    for (int i = 0; i < ndims; i++) {
        int d = gf__norm_dim(dims[i], t->rank, "gf_permute");
        if (d < 0) return NULL;
        if (seen[d]) {
            gf__error(GF_ERR_INVALID, "gf_permute: dim %d appears twice; give each dim once", d);
            return NULL;
        }
        seen[d] = true;
        s[i] = t->sizes[d];
        st[i] = t->strides[d];
        p[i] = d;
    }
    return finish(t, gf__view(t, s, st, t->rank, t->offset), GF_VIEW_KIND_PERMUTE, p, ndims);
}

gf_tensor *gf_slice(const gf_tensor *t, int dim, int64_t start, int64_t end, int64_t step) {
    NEED(t, "gf_slice");
    if (t->rank == 0) {
        gf__error(GF_ERR_INDEX, "gf_slice: cannot slice a 0-dim tensor");
        return NULL;
    }
    int d = gf__norm_dim(dim, t->rank, "gf_slice");
    if (d < 0) return NULL;
    if (step < 1) {
        gf__error(GF_ERR_INVALID, "gf_slice: step must be >= 1 (got %lld)", (long long)step);
        return NULL;
    }
    int64_t n = t->sizes[d];
    if (start < 0) start += n;
    if (end < 0) end += n;
    if (start < 0) start = 0;
    if (start > n) start = n;
    if (end > n) end = n;
    if (end < start) end = start;
    int64_t s[GF_MAX_RANK], st[GF_MAX_RANK];
    memcpy(s, t->sizes, sizeof s);
    memcpy(st, t->strides, sizeof st);
    /* 0 <= start <= end <= n here, so only step can be extreme. */
    s[d] = end == start ? 0 : 1 + (end - start - 1) / step;
    /* stride * step and start * stride overflow only when the result has at
     * most one element (resp. none), whose stride (resp. offset) addresses
     * nothing: the dim's own stride and t's offset stand in for them then. */
    int64_t off;
    if (!gf__mul_ok(t->strides[d], step, &st[d])) st[d] = t->strides[d];
    if (!gf__mul_ok(start, t->strides[d], &off) || !gf__add_ok(off, t->offset, &off))
        off = t->offset;
    int64_t p[4] = {d, start, end, step};
    return finish(t, gf__view(t, s, st, t->rank, off), GF_VIEW_KIND_SLICE, p, 4);
}

gf_tensor *gf_narrow(const gf_tensor *t, int dim, int64_t start, int64_t length) {
    NEED(t, "gf_narrow");
    int d = gf__norm_dim(dim, t->rank, "gf_narrow");
    if (d < 0) return NULL;
    if (t->rank == 0) {
        gf__error(GF_ERR_INDEX, "gf_narrow: cannot narrow a 0-dim tensor");
        return NULL;
    }
    int64_t n = t->sizes[d];
    if (start < -n || start > n) {
        gf__error(GF_ERR_INDEX, "gf_narrow: start %lld is out of range for dim %d of size %lld "
                  "(expected a start in [%lld, %lld]; a negative one counts from the end)",
                  (long long)start, d, (long long)n, (long long)-n, (long long)n);
        return NULL;
    }
    int64_t s0 = start < 0 ? start + n : start;
    if (length < 0 || length > n - s0) {
        gf__error(GF_ERR_INDEX, "gf_narrow: start %lld and length %lld exceed dim %d of size %lld",
                  (long long)start, (long long)length, d, (long long)n);
        return NULL;
    }
    start = s0;
    return gf_slice(t, d, start, start + length, 1);
}

gf_tensor *gf_select(const gf_tensor *t, int dim, int64_t index) {
    NEED(t, "gf_select");
    if (t->rank == 0) {
        gf__error(GF_ERR_INDEX, "gf_select: cannot select from a 0-dim tensor");
        return NULL;
    }
    int d = gf__norm_dim(dim, t->rank, "gf_select");
    if (d < 0) return NULL;
    int64_t n = t->sizes[d];
    if (index < -n || index >= n) {
        gf__error(GF_ERR_INDEX, "gf_select: index %lld is out of range for dim %d of size %lld",
                  (long long)index, d, (long long)n);
        return NULL;
    }
    if (index < 0) index += n;
    int64_t s[GF_MAX_RANK], st[GF_MAX_RANK];
    int r = 0;
    for (int i = 0; i < t->rank; i++)
        if (i != d) s[r] = t->sizes[i], st[r++] = t->strides[i];
    int64_t p[2] = {d, index};
    return finish(t, gf__view(t, s, st, r, t->offset + index * t->strides[d]), GF_VIEW_KIND_SELECT,
                  p, 2);
}

gf_tensor *gf_expand(const gf_tensor *t, const int64_t *sizes, int rank) {
    NEED(t, "gf_expand");
    if (rank < t->rank || rank > GF_MAX_RANK || (rank && !sizes)) {
        gf__error(GF_ERR_SHAPE, "gf_expand: the new rank %d must be >= the tensor's rank %d and "
                  "<= %d", rank, t->rank, GF_MAX_RANK);
        return NULL;
    }
    int64_t s[GF_MAX_RANK];
    for (int i = 0; i < rank; i++) {
        int j = t->rank - rank + i;
        if (sizes[i] == -1) {
            if (j < 0) {
                gf__error(GF_ERR_SHAPE, "gf_expand: -1 is not allowed for a new leading dim");
                return NULL;
            }
            s[i] = t->sizes[j];
        } else if (sizes[i] < 0) {
            gf__error(GF_ERR_INVALID, "gf_expand: size %lld is negative", (long long)sizes[i]);
            return NULL;
        } else s[i] = sizes[i];
    }
    if (gf__checked_numel(s, rank, "gf_expand") < 0) return NULL;
    return finish(t, gf__expand_to(t, s, rank), GF_VIEW_KIND_EXPAND, NULL, 0);
}

gf_tensor *gf_squeeze(const gf_tensor *t, int dim) {
    NEED(t, "gf_squeeze");
    int d = gf__norm_dim(dim, t->rank, "gf_squeeze");
    if (d < 0) return NULL;
    if (t->rank == 0 || t->sizes[d] != 1)
        return finish(t, gf__view(t, t->sizes, t->strides, t->rank, t->offset),
                      GF_VIEW_KIND_RESHAPE, NULL, 0);
    int64_t s[GF_MAX_RANK], st[GF_MAX_RANK];
    int r = 0;
    for (int i = 0; i < t->rank; i++)
        if (i != d) s[r] = t->sizes[i], st[r++] = t->strides[i];
    return finish(t, gf__view(t, s, st, r, t->offset), GF_VIEW_KIND_RESHAPE, NULL, 0);
}

gf_tensor *gf_squeeze_all(const gf_tensor *t) {
    NEED(t, "gf_squeeze_all");
    int64_t s[GF_MAX_RANK], st[GF_MAX_RANK];
    int r = 0;
    for (int i = 0; i < t->rank; i++)
        if (t->sizes[i] != 1) s[r] = t->sizes[i], st[r++] = t->strides[i];
    return finish(t, gf__view(t, s, st, r, t->offset), GF_VIEW_KIND_RESHAPE, NULL, 0);
}

gf_tensor *gf_unsqueeze(const gf_tensor *t, int dim) {
    NEED(t, "gf_unsqueeze");
    if (t->rank >= GF_MAX_RANK) {
        gf__error(GF_ERR_SHAPE, "gf_unsqueeze: rank would exceed %d", GF_MAX_RANK);
        return NULL;
    }
    int d = gf__norm_dim(dim, t->rank + 1, "gf_unsqueeze");
    if (d < 0) return NULL;
    int64_t s[GF_MAX_RANK], st[GF_MAX_RANK];
    for (int i = 0, j = 0; i <= t->rank; i++) {
        if (i == d) {
            s[i] = 1;
            /* size * stride of the next dim, as PyTorch; the new dim has
             * size 1, so when that overflows (a huge stride of adopted
             * memory) any stride serves: the next dim's. */
            if (d == t->rank) st[i] = 1;
            else if (!gf__mul_ok(t->sizes[d], t->strides[d], &st[i])) st[i] = t->strides[d];
        } else {
            s[i] = t->sizes[j];
            st[i] = t->strides[j++];
        }
    }
    return finish(t, gf__view(t, s, st, t->rank + 1, t->offset), GF_VIEW_KIND_RESHAPE, NULL, 0);
}

gf_tensor *gf_diagonal(const gf_tensor *t, int64_t offset, int dim1, int dim2) {
    NEED(t, "gf_diagonal");
    if (t->rank < 2) {
        gf__error(GF_ERR_SHAPE, "gf_diagonal: needs a tensor of rank >= 2 (got %d)", t->rank);
        return NULL;
    }
    int a = gf__norm_dim(dim1, t->rank, "gf_diagonal");
    int b = a < 0 ? -1 : gf__norm_dim(dim2, t->rank, "gf_diagonal");
    if (a < 0 || b < 0) return NULL;
    if (a == b) {
        gf__error(GF_ERR_INVALID, "gf_diagonal: dim1 and dim2 must differ (both are %d)", a);
        return NULL;
    }
    int64_t off = t->offset, len;
    if (offset >= 0) {
        len = t->sizes[b] - offset < t->sizes[a] ? t->sizes[b] - offset : t->sizes[a];
        if (len > 0) off += offset * t->strides[b];
    } else {
        len = t->sizes[a] + offset < t->sizes[b] ? t->sizes[a] + offset : t->sizes[b];
        if (len > 0) off -= offset * t->strides[a];
    }
    if (len < 0) len = 0;
    int64_t s[GF_MAX_RANK], st[GF_MAX_RANK];
    int r = 0;
    for (int i = 0; i < t->rank; i++)
        if (i != a && i != b) s[r] = t->sizes[i], st[r++] = t->strides[i];
    s[r] = len;
    /* The sum overflows only for huge strides of size-1 dims (adopted
     * memory): then len <= 1 and the stride addresses nothing. */
    if (!gf__add_ok(t->strides[a], t->strides[b], &st[r])) st[r] = t->strides[a];
    r++;
    int64_t p[3] = {offset, a, b};
    return finish(t, gf__view(t, s, st, r, len > 0 ? off : t->offset), GF_VIEW_KIND_DIAGONAL, p, 3);
}

gf_status gf_split(const gf_tensor *t, int64_t split_size, int dim, gf_tensor **out, int max_out,
                   int *n) {
    if (!t) return gf__null_arg("gf_split", "tensor");
    if (!out || !n) return gf__null_arg_of("gf_split", !out ? "out" : "n", GF__ARG_OUT);
    *n = 0;
    if (t->rank == 0) return gf__error(GF_ERR_INDEX, "gf_split: cannot split a 0-dim tensor");
    int d = gf__norm_dim(dim, t->rank, "gf_split");
    if (d < 0) return gf__status();
    int64_t len = t->sizes[d];
    if (split_size < 1 && !(split_size == 0 && len == 0))
        return gf__error(GF_ERR_INVALID, "gf_split: split_size must be >= 1 (got %lld)",
                         (long long)split_size);
    int64_t pieces = len == 0 ? 1 : 1 + (len - 1) / split_size; /* no overflow near INT64_MAX */
    if (pieces > max_out)
        return gf__error(GF_ERR_INVALID, "gf_split: %lld pieces do not fit in max_out %d",
                         (long long)pieces, max_out);
    int saved = gf__scope_suspend();
    for (int64_t i = 0; i < pieces; i++) {
        int64_t start = i * split_size;
        int64_t l = len - start < split_size ? len - start : split_size;
        out[i] = gf_narrow(t, d, start, l);
        /* In-place writes to one of several views of one op are refused
         * (their shared history could not be rebased consistently). */
        if (out[i] && out[i]->autograd) out[i]->autograd->view_creation = GF_VIEW_MULTI_OUTPUT;
        if (!out[i]) {
            for (int64_t k = 0; k < i; k++) gf_tensor_release(out[k]);
            gf__scope_resume(saved);
            return gf__status();
        }
    }
    gf__scope_resume(saved);
    for (int64_t i = 0; i < pieces; i++) gf__ret(out[i]);
    *n = (int)pieces;
    return GF_OK;
}

gf_status gf_chunk(const gf_tensor *t, int chunks, int dim, gf_tensor **out, int max_out, int *n) {
    if (!t) return gf__null_arg("gf_chunk", "tensor");
    if (chunks < 1) return gf__error(GF_ERR_INVALID, "gf_chunk: chunks must be >= 1 (got %d)", chunks);
    if (t->rank == 0) return gf__error(GF_ERR_INDEX, "gf_chunk: cannot chunk a 0-dim tensor");
    int d = gf__norm_dim(dim, t->rank, "gf_chunk");
    if (d < 0) return gf__status();
    int64_t len = t->sizes[d];
    int64_t size = (len + chunks - 1) / chunks;
    if (size == 0) size = len == 0 ? 0 : 1;
    return gf_split(t, size, d, out, max_out, n);
}
