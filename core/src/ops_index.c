/* SPDX-License-Identifier: BSD-3-Clause */
/* ops_index.c — index_select, gather, scatter_add, index_add, embedding,
 * cat, stack, tril, triu, one_hot (PyTorch semantics).
 *
 * Index kernels take i64 indices; i32 is converted here. Index values are
 * range-checked by the kernels (their message comes back as a PLUGIN error);
 * the core only refuses what it can see without reading device memory.
 * Each op records its backward node (autograd/bw_index.c) once its output
 * is complete. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autograd/ag_record.h"
#include "amp/amp_internal.h"
#include "internal.h"

static gf_tensor *ret_new(gf_tensor *t) { return t ? gf__ret(t) : NULL; }

/* Consumes y: NULL (y released) when recording its history failed. */
static gf_tensor *recorded(gf_tensor *y, gf_status st) {
    if (st == GF_OK) return y;
    gf_tensor_release(y);
    return NULL;
}

/* idx as i64 (a new reference); DTYPE error for non-integer indices. */
static gf_tensor *index_i64(const gf_tensor *idx, const char *op, const char *what) {
    if (idx->dtype == GF_I64 || idx->dtype == GF_I32) return gf__cast(idx, GF_I64);
    gf__error(GF_ERR_DTYPE,
              "%s: %s must be an i64 (or i32) tensor of positions, got %s; convert it with "
              "gf_to_dtype(%s, GF_I64)", op, what, gf_dtype_name(idx->dtype), what);
    return NULL;
}

/* t as a rank >= 1 view (a [1] view of a 0-dim t). New reference. */
static gf_tensor *view_1d(const gf_tensor *t) {
    if (t->rank > 0) return gf__view(t, t->sizes, t->strides, t->rank, t->offset);
    int64_t one = 1;
    return gf__view(t, &one, &one, 1, t->offset);
}

/* Consumes t (one element) and returns its 0-dim view. */
static gf_tensor *to_0d(gf_tensor *t) {
    if (!t) return NULL;
    int64_t none[1] = {1};
    gf_tensor *v = gf__view(t, none, none, 0, t->offset);
    gf_tensor_release(t);
    return v;
}

static gf_tensor *empty_like_shape(const gf_tensor *like, const int64_t *sizes, int rank,
                                   gf_dtype dtype) {
    return gf__empty(sizes, rank, dtype, like->storage->device);
}

/* A new tensor holding a copy of x's elements. */
static gf_tensor *copy_of(const gf_tensor *x) {
    gf_tensor *y = empty_like_shape(x, x->sizes, x->rank, x->dtype);
    if (y && gf__numel(y) > 0 && gf__copy_into(y, x) != GF_OK) {
        gf_tensor_release(y);
        return NULL;
    }
    return y;
}

static gf_status launch_dim(gfp_op op, const char *name, const gf_tensor *a, const gf_tensor *b,
                            gf_tensor *y, int dim) {
    gfp_dim_params p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    p.dim = dim;
    const gf_tensor *in[2] = {a, b};
    gf_tensor *out[1] = {y};
    return gf__launch(op, name, in, 2, out, 1, &p);
}

/* The min or max of a non-empty i32/i64 tensor, exactly (a small reduction
 * read back as raw bytes: a double would round indices near 2^63, and
 * converting those back is undefined). */
static gf_status extreme_value(const gf_tensor *t, bool max, int64_t *out) {
    gf_tensor *m = max ? gf_amax(t, NULL, 0, false) : gf_amin(t, NULL, 0, false);
    if (!m) return gf__status();
    unsigned char buf[8] = {0};
    gf_dtype dt = m->dtype;
    size_t es = gf_dtype_size(dt);
    gf_status st = gf__dev_read(m->storage->device, m->storage->buffer,
                                (uint64_t)m->offset * es, buf, es);
    gf_tensor_release(m);
    if (dt == GF_I32) {
        int32_t v;
        memcpy(&v, buf, 4);
        *out = v;
    } else {
        memcpy(out, buf, 8);
    }
    return st;
}

/* Min and max of an integer tensor. */
static gf_status index_extremes(const gf_tensor *idx, int64_t *mn, int64_t *mx) {
    gf_status st = extreme_value(idx, false, mn);
    return st == GF_OK ? extreme_value(idx, true, mx) : st;
}

/* Kernels check index ranges, but their failure reaches the core as a PLUGIN
 * error. Only on that failure path (so success costs nothing) the indices are
 * read back: an index outside [0, size) turns the error into an INDEX error
 * naming the public op; otherwise the kernel's error stands. */
static gf_status diagnose_index(gf_status st, const gf_tensor *idx, int64_t size, int dim,
                                const char *op) {
    if (st != GF_ERR_PLUGIN || gf__numel(idx) == 0) return st;
    char saved[1024];
    snprintf(saved, sizeof saved, "%s", gf__message());
    int64_t mn = 0, mx = 0;
    int s = gf__scope_suspend();
    gf_status rs = index_extremes(idx, &mn, &mx);
    gf__scope_resume(s);
    if (rs == GF_OK && (mn < 0 || mx >= size))
        return gf__error(GF_ERR_INDEX,
                         "%s: index %lld is out of range for dim %d of size %lld (valid indices "
                         "are [0, %lld))", op, (long long)(mn < 0 ? mn : mx), dim,
                         (long long)size, (long long)size);
    return gf__error(st, "%s", saved);
}

/* ------------------------------------------------------------ index_select */

gf_tensor *gf_index_select(const gf_tensor *x, int dim, const gf_tensor *index) {
    const char *op = "index_select";
    if (!x || !index) {
        gf__null_arg(op, !x ? "x" : "index");
        return NULL;
    }
    if (!gf__same_device(x, index, op)) return NULL;
    int d = gf__norm_dim(dim, x->rank, op);
    if (d < 0) return NULL;
    if (index->rank > 1) {
        char buf[128];
        gf__error(GF_ERR_SHAPE,
                  "index_select: index must be 1-D (or 0-dim), got shape %s; flatten it "
                  "with gf_flatten", gf__shape_str(index->sizes, index->rank, buf, sizeof buf));
        return NULL;
    }
    gf_tensor *idx = index_i64(index, op, "index");
    if (!idx) return NULL;
    gf_tensor *idx1 = view_1d(idx), *x1 = view_1d(x), *y = NULL;
    gf_tensor_release(idx);
    if (!idx1 || !x1) goto done;
    int64_t n = idx1->sizes[0];
    if (n > 0 && x1->sizes[d] == 0) {
        gf__error(GF_ERR_INDEX,
                  "index_select: index out of range: dim %d of x has size 0, so no index "
                  "is valid", d);
        goto done;
    }
    int64_t sz[GF_MAX_RANK];
    memcpy(sz, x1->sizes, sizeof(int64_t) * (size_t)x1->rank);
    sz[d] = n;
    y = empty_like_shape(x, sz, x1->rank, x->dtype);
    if (y && gf__numel(y) > 0) {
        gf_status st = launch_dim(GFP_OP_INDEX_SELECT, op, x1, idx1, y, d);
        if (st != GF_OK) {
            diagnose_index(st, idx1, x1->sizes[d], d, op);
            gf_tensor_release(y);
            y = NULL;
        }
    }
    if (y && x->rank == 0) y = to_0d(y);
    if (y) y = recorded(y, gf__ag_record_index_select(x, d, index, y));
done:
    gf_tensor_release(idx1);
    gf_tensor_release(x1);
    return ret_new(y);
}

/* ------------------------------------------------------------ gather, scatter_add */

/* PyTorch's rule: index.size(d) <= other.size(d) for every d (but `skip`). */
static gf_status check_index_fits(const gf_tensor *index, const gf_tensor *other, int skip,
                                  const char *op, const char *other_name) {
    char bi[128], bo[128], rule[64] = "";
    if (skip >= 0) snprintf(rule, sizeof rule, " (dim %d excepted)", skip);
    for (int d = 0; d < index->rank; d++) {
        if (d == skip || index->sizes[d] <= other->sizes[d]) continue;
        return gf__error(GF_ERR_SHAPE,
                         "%s: index of shape %s is larger than %s of shape %s at dim %d; "
                         "index may not be larger than %s in any dim%s",
                         op, gf__shape_str(index->sizes, index->rank, bi, sizeof bi),
                         other_name, gf__shape_str(other->sizes, other->rank, bo, sizeof bo),
                         d, other_name, rule);
    }
    return GF_OK;
}

static gf_status check_same_rank(const gf_tensor *index, const gf_tensor *other,
                                 const char *op, const char *other_name) {
    if (index->rank == other->rank) return GF_OK;
    char bi[128], bo[128];
    return gf__error(GF_ERR_SHAPE,
                     "%s: index must have as many dims as %s, got index %s and %s %s", op,
                     other_name, gf__shape_str(index->sizes, index->rank, bi, sizeof bi),
                     other_name, gf__shape_str(other->sizes, other->rank, bo, sizeof bo));
}

gf_tensor *gf_gather(const gf_tensor *x, int dim, const gf_tensor *index) {
    const char *op = "gather";
    if (!x || !index) {
        gf__null_arg(op, !x ? "x" : "index");
        return NULL;
    }
    if (!gf__same_device(x, index, op)) return NULL;
    int d = gf__norm_dim(dim, x->rank, op);
    if (d < 0) return NULL;
    if (check_same_rank(index, x, op, "x") != GF_OK) return NULL;
    if (check_index_fits(index, x, d, op, "x") != GF_OK) return NULL;
    gf_tensor *idx = index_i64(index, op, "index");
    if (!idx) return NULL;
    gf_tensor *idx1 = view_1d(idx), *x1 = view_1d(x), *y = NULL;
    gf_tensor_release(idx);
    if (!idx1 || !x1) goto done;
    if (gf__numel(idx1) > 0 && x1->sizes[d] == 0) {
        gf__error(GF_ERR_INDEX,
                  "gather: index out of range: dim %d of x has size 0, so no index is valid",
                  d);
        goto done;
    }
    y = empty_like_shape(x, idx1->sizes, idx1->rank, x->dtype);
    if (y && gf__numel(y) > 0) {
        gf_status st = launch_dim(GFP_OP_GATHER, op, x1, idx1, y, d);
        if (st != GF_OK) {
            diagnose_index(st, idx1, x1->sizes[d], d, op);
            gf_tensor_release(y);
            y = NULL;
        }
    }
    if (y && x->rank == 0) y = to_0d(y);
    if (y) y = recorded(y, gf__ag_record_gather(x, d, index, y));
done:
    gf_tensor_release(idx1);
    gf_tensor_release(x1);
    return ret_new(y);
}

static gf_status check_src_dtype(const gf_tensor *x, const gf_tensor *src, const char *op) {
    if (x->dtype == src->dtype) return GF_OK;
    return gf__error(GF_ERR_DTYPE,
                     "%s: src must have x's dtype, got src %s and x %s; convert src with "
                     "gf_to_dtype", op, gf_dtype_name(src->dtype), gf_dtype_name(x->dtype));
}

gf_tensor *gf_scatter_add(const gf_tensor *x, int dim, const gf_tensor *index,
                          const gf_tensor *src) {
    const char *op = "scatter_add";
    if (!x || !index || !src) {
        gf__null_arg(op, !x ? "x" : !index ? "index" : "src");
        return NULL;
    }
    if (!gf__same_device(x, index, op) || !gf__same_device(x, src, op)) return NULL;
    int d = gf__norm_dim(dim, x->rank, op);
    if (d < 0) return NULL;
    if (check_same_rank(index, x, op, "x") != GF_OK ||
        check_same_rank(index, src, op, "src") != GF_OK ||
        check_index_fits(index, src, -1, op, "src") != GF_OK ||
        check_index_fits(index, x, d, op, "x") != GF_OK || check_src_dtype(x, src, op) != GF_OK)
        return NULL;
    gf_tensor *idx = index_i64(index, op, "index");
    if (!idx) return NULL;
    gf_tensor *idx1 = view_1d(idx), *src1 = NULL, *y = NULL, *y1 = NULL;
    gf_tensor_release(idx);
    if (!idx1) goto done;
    /* The kernel walks index's shape: give it src cut to that shape. */
    {
        gf_tensor *s1 = view_1d(src);
        if (!s1) goto done;
        src1 = gf__view(s1, idx1->sizes, s1->strides, idx1->rank, s1->offset);
        gf_tensor_release(s1);
    }
    y = src1 ? copy_of(x) : NULL;
    if (!y) goto done;
    if (gf__numel(idx1) > 0) {
        y1 = view_1d(y);
        if (!y1) goto fail;
        if (y1->sizes[d] == 0) {
            gf__error(GF_ERR_INDEX,
                      "scatter_add: index out of range: dim %d of x has size 0, so no index "
                      "is valid", d);
            goto fail;
        }
        gf_status st = launch_dim(GFP_OP_SCATTER_ADD, op, src1, idx1, y1, d);
        if (st != GF_OK) {
            diagnose_index(st, idx1, y1->sizes[d], d, op);
            goto fail;
        }
    }
    if (gf__ag_record_scatter_add(x, d, index, src, y) == GF_OK) goto done;
fail:
    gf_tensor_release(y);
    y = NULL;
done:
    gf_tensor_release(idx1);
    gf_tensor_release(src1);
    gf_tensor_release(y1);
    return ret_new(y);
}

gf_tensor *gf_index_add(const gf_tensor *x, int dim, const gf_tensor *index,
                        const gf_tensor *src) {
    const char *op = "index_add";
    if (!x || !index || !src) {
        gf__null_arg(op, !x ? "x" : !index ? "index" : "src");
        return NULL;
    }
    if (!gf__same_device(x, index, op) || !gf__same_device(x, src, op)) return NULL;
    int d = gf__norm_dim(dim, x->rank, op);
    if (d < 0) return NULL;
    char bi[128], bx[128], bs[128];
    if (index->rank > 1) {
        gf__error(GF_ERR_SHAPE,
                  "index_add: index must be 1-D (or 0-dim), got shape %s; flatten it with "
                  "gf_flatten", gf__shape_str(index->sizes, index->rank, bi, sizeof bi));
        return NULL;
    }
    if (check_src_dtype(x, src, op) != GF_OK) return NULL;
    int64_t n = index->rank == 0 ? 1 : index->sizes[0];
    /* src has x's shape but n along dim (a 0-dim x takes a 0-dim or [1] src). */
    bool ok = true;
    if (x->rank == 0) {
        ok = src->rank == 0 || (src->rank == 1 && src->sizes[0] == n);
    } else if (src->rank != x->rank) {
        ok = false;
    } else {
        for (int i = 0; i < x->rank; i++)
            if (src->sizes[i] != (i == d ? n : x->sizes[i])) ok = false;
    }
    if (!ok) {
        gf__error(GF_ERR_SHAPE,
                  "index_add: src must have x's shape except along dim %d, where its size "
                  "must be the number of indices (%lld); got x %s, src %s, index %s", d,
                  (long long)n, gf__shape_str(x->sizes, x->rank, bx, sizeof bx),
                  gf__shape_str(src->sizes, src->rank, bs, sizeof bs),
                  gf__shape_str(index->sizes, index->rank, bi, sizeof bi));
        return NULL;
    }
    gf_tensor *idx = index_i64(index, op, "index");
    if (!idx) return NULL;
    gf_tensor *idx1 = view_1d(idx), *src1 = view_1d(src), *y = copy_of(x), *y1 = NULL;
    gf_tensor_release(idx);
    if (!idx1 || !src1 || !y) goto fail;
    if (n > 0) {
        y1 = view_1d(y);
        if (!y1) goto fail;
        if (y1->sizes[d] == 0) {
            gf__error(GF_ERR_INDEX,
                      "index_add: index out of range: dim %d of x has size 0, so no index "
                      "is valid", d);
            goto fail;
        }
        gf_status st = gf__numel(src1) > 0
                           ? launch_dim(GFP_OP_INDEX_ADD, op, src1, idx1, y1, d)
                           : GF_OK;
        if (st != GF_OK) {
            diagnose_index(st, idx1, y1->sizes[d], d, op);
            goto fail;
        }
    }
    if (gf__ag_record_index_add(x, d, index, src, y) == GF_OK) goto done;
fail:
    gf_tensor_release(y);
    y = NULL;
done:
    gf_tensor_release(idx1);
    gf_tensor_release(src1);
    gf_tensor_release(y1);
    return ret_new(y);
}

/* ------------------------------------------------------------ embedding */

/* index_select of rows, built from public ops so it is differentiable
 * wherever index_select is. */
gf_tensor *gf_embedding(const gf_tensor *weight, const gf_tensor *indices) {
    const char *op = "embedding";
    if (!weight || !indices) {
        gf__null_arg(op, !weight ? "weight" : "indices");
        return NULL;
    }
    char buf[128];
    if (weight->rank != 2) {
        gf__error(GF_ERR_SHAPE,
                  "embedding: weight must be 2-D [num_embeddings, embedding_dim], got shape "
                  "%s", gf__shape_str(weight->sizes, weight->rank, buf, sizeof buf));
        return NULL;
    }
    if (!gf__same_device(weight, indices, op)) return NULL;
    if (indices->dtype != GF_I64 && indices->dtype != GF_I32) {
        gf__error(GF_ERR_DTYPE,
                  "embedding: indices must be i64 (or i32), got %s; convert them with "
                  "gf_to_dtype(indices, GF_I64)", gf_dtype_name(indices->dtype));
        return NULL;
    }
    if (indices->rank + 1 > GF_MAX_RANK) {
        gf__error(GF_ERR_SHAPE,
                  "embedding: indices of rank %d would give a result of rank %d (at most "
                  "%d)", indices->rank, indices->rank + 1, GF_MAX_RANK);
        return NULL;
    }
    int64_t flat = -1, sz[GF_MAX_RANK];
    memcpy(sz, indices->sizes, sizeof(int64_t) * (size_t)indices->rank);
    sz[indices->rank] = weight->sizes[1];
    int s = gf__scope_suspend();
    gf_tensor *f = gf_reshape(indices, &flat, 1);
    gf_tensor *rows = f ? gf_index_select(weight, 0, f) : NULL;
    gf_tensor *y = rows ? gf_reshape(rows, sz, indices->rank + 1) : NULL;
    if (!rows && gf__status() == GF_ERR_INDEX) {
        /* Name this op: "embedding: index -1 is out of range ..." */
        const char *msg = gf__message(), *prefix = "index_select: ";
        char saved[1024];
        snprintf(saved, sizeof saved, "%s",
                 strncmp(msg, prefix, strlen(prefix)) ? msg : msg + strlen(prefix));
        gf__error(GF_ERR_INDEX, "embedding: %s (weight has %lld rows)", saved,
                  (long long)weight->sizes[0]);
    }
    gf_tensor_release(f);
    gf_tensor_release(rows);
    gf__scope_resume(s);
    return ret_new(y);
}

/* ------------------------------------------------------------ cat, stack */

/* PyTorch still skips 1-D tensors of size 0 in cat (a legacy rule). */
static bool legacy_empty(const gf_tensor *t) { return t->rank == 1 && t->sizes[0] == 0; }

gf_tensor *gf_cat(gf_tensor *const *tensors, int n, int dim) {
    GF__AMP_HOOK_LIST(CAT, tensors, n, gf_cat(amp_list, n, dim));
    const char *op = "cat";
    if (!tensors) {
        gf__null_arg_of(op, "tensors", GF__ARG_ARRAY);
        return NULL;
    }
    if (n <= 0) {
        gf__error(GF_ERR_INVALID, "cat: expected a non-empty list of tensors, got n = %d", n);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        if (!tensors[i]) {
            char what[48];
            snprintf(what, sizeof what, "tensors[%d]", i);
            gf__null_arg(op, what);
            return NULL;
        }
    }
    const gf_tensor *ref = NULL; /* the first tensor that is not skipped */
    gf_dtype dtype = tensors[0]->dtype;
    for (int i = 0; i < n; i++) {
        const gf_tensor *t = tensors[i];
        if (!gf__same_device(tensors[0], t, op)) return NULL;
        if (i > 0) dtype = gf__promote(dtype, t->dtype);
        if (t->rank == 0) {
            gf__error(GF_ERR_SHAPE,
                      "cat: zero-dimensional tensor (at position %d) cannot be "
                      "concatenated; give it a dim with gf_unsqueeze or use gf_stack", i);
            return NULL;
        }
        if (!ref && !legacy_empty(t)) ref = t;
    }
    if (!ref) ref = tensors[0]; /* all are [0]: the result is [0] */
    int rank = ref->rank;
    int d = gf__norm_dim(dim, rank, op);
    if (d < 0) return NULL;
    int64_t sz[GF_MAX_RANK];
    memcpy(sz, ref->sizes, sizeof(int64_t) * (size_t)rank);
    sz[d] = 0;
    for (int i = 0; i < n; i++) {
        const gf_tensor *t = tensors[i];
        if (legacy_empty(t) && ref != t) continue;
        if (t->rank != rank) {
            gf__error(GF_ERR_SHAPE,
                      "cat: tensors must have the same number of dims: got %d and %d (tensor "
                      "number %d in the list)", rank, t->rank, i);
            return NULL;
        }
        for (int k = 0; k < rank; k++) {
            if (k == d || t->sizes[k] == ref->sizes[k]) continue;
            gf__error(GF_ERR_SHAPE,
                      "cat: sizes of tensors must match except in dim %d. Expected size "
                      "%lld but got size %lld for tensor number %d in the list", d,
                      (long long)ref->sizes[k], (long long)t->sizes[k], i);
            return NULL;
        }
        if (!gf__add_ok(sz[d], t->sizes[d], &sz[d])) {
            gf__error(GF_ERR_OVERFLOW, "cat: the sizes of dim %d add up to more than graft can "
                      "address (at tensor number %d in the list)", d, i);
            return NULL;
        }
    }
    gf_tensor *y = empty_like_shape(ref, sz, rank, dtype);
    if (!y) return NULL;
    int64_t start = 0;
    for (int i = 0; i < n; i++) {
        const gf_tensor *t = tensors[i];
        if (legacy_empty(t) && ref != t) continue;
        int64_t len = t->sizes[d];
        if (len > 0 && gf__numel(t) > 0) {
            int64_t psz[GF_MAX_RANK];
            memcpy(psz, y->sizes, sizeof(int64_t) * (size_t)rank);
            psz[d] = len;
            gf_tensor *part = gf__view(y, psz, y->strides, rank, y->offset + start * y->strides[d]);
            gf_status st = part ? gf__copy_into(part, t) : GF_ERR_OUT_OF_MEMORY;
            gf_tensor_release(part);
            if (st != GF_OK) {
                gf_tensor_release(y);
                return NULL;
            }
        }
        start += len;
    }
    /* cat writes its output by copies, so it records one node for all inputs. */
    y = recorded(y, gf__ag_record_cat(tensors, n, d, y));
    return ret_new(y);
}

gf_tensor *gf_stack(gf_tensor *const *tensors, int n, int dim) {
    GF__AMP_HOOK_LIST(STACK, tensors, n, gf_stack(amp_list, n, dim));
    const char *op = "stack";
    if (!tensors) {
        gf__null_arg_of(op, "tensors", GF__ARG_ARRAY);
        return NULL;
    }
    if (n <= 0) {
        gf__error(GF_ERR_INVALID, "stack: expected a non-empty list of tensors, got n = %d",
                  n);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        if (!tensors[i]) {
            char what[48];
            snprintf(what, sizeof what, "tensors[%d]", i);
            gf__null_arg(op, what);
            return NULL;
        }
    }
    const gf_tensor *t0 = tensors[0];
    for (int i = 1; i < n; i++) {
        const gf_tensor *t = tensors[i];
        bool same = t->rank == t0->rank;
        for (int k = 0; same && k < t0->rank; k++) same = t->sizes[k] == t0->sizes[k];
        if (!same) {
            char b0[128], bi[128];
            gf__error(GF_ERR_SHAPE,
                      "stack: expects each tensor to be equal size, but got %s at entry 0 "
                      "and %s at entry %d",
                      gf__shape_str(t0->sizes, t0->rank, b0, sizeof b0),
                      gf__shape_str(t->sizes, t->rank, bi, sizeof bi), i);
            return NULL;
        }
    }
    if (t0->rank + 1 > GF_MAX_RANK) {
        gf__error(GF_ERR_SHAPE, "stack: the result would have rank %d (at most %d)",
                  t0->rank + 1, GF_MAX_RANK);
        return NULL;
    }
    int d = gf__norm_dim(dim, t0->rank + 1, op);
    if (d < 0) return NULL;
    gf_tensor **parts = calloc((size_t)n, sizeof *parts);
    if (!parts) {
        gf__error(GF_ERR_OUT_OF_MEMORY, "stack: out of host memory for %d tensors", n);
        return NULL;
    }
    int s = gf__scope_suspend();
    gf_tensor *y = NULL;
    int i = 0;
    for (; i < n; i++)
        if (!(parts[i] = gf_unsqueeze(tensors[i], d))) break;
    if (i == n) y = gf_cat(parts, n, d);
    for (int k = 0; k < n; k++) gf_tensor_release(parts[k]);
    free(parts);
    gf__scope_resume(s);
    return ret_new(y);
}

/* ------------------------------------------------------------ tril, triu */

static gf_tensor *tri_op(gfp_op op, const char *name, const gf_tensor *x, int64_t diagonal) {
    if (!x) {
        gf__null_arg(name, "x");
        return NULL;
    }
    if (x->rank < 2) {
        char buf[128];
        gf__error(GF_ERR_SHAPE,
                  "%s: input must have at least 2 dims, got shape %s; the matrices are the "
                  "last two dims", name, gf__shape_str(x->sizes, x->rank, buf, sizeof buf));
        return NULL;
    }
    gf_tensor *y = empty_like_shape(x, x->sizes, x->rank, x->dtype);
    if (y && gf__numel(y) > 0) {
        gfp_tri_params p;
        memset(&p, 0, sizeof p);
        p.struct_size = sizeof p;
        p.diagonal = diagonal;
        const gf_tensor *in[1] = {x};
        gf_tensor *out[1] = {y};
        if (gf__launch(op, name, in, 1, out, 1, &p) != GF_OK) {
            gf_tensor_release(y);
            y = NULL;
        }
    }
    if (y) y = recorded(y, gf__ag_record_tri(op == GFP_OP_TRIU, x, diagonal, y));
    return ret_new(y);
}

gf_tensor *gf_tril(const gf_tensor *x, int64_t diagonal) {
    return tri_op(GFP_OP_TRIL, "tril", x, diagonal);
}

gf_tensor *gf_triu(const gf_tensor *x, int64_t diagonal) {
    return tri_op(GFP_OP_TRIU, "triu", x, diagonal);
}

/* ------------------------------------------------------------ one_hot */

/* Reads amax or amin of all of t as an integer. */
gf_tensor *gf_one_hot(const gf_tensor *indices, int64_t num_classes) {
    const char *op = "one_hot";
    if (!indices) {
        gf__null_arg(op, "indices");
        return NULL;
    }
    if (indices->dtype != GF_I64 && indices->dtype != GF_I32) {
        gf__error(GF_ERR_DTYPE,
                  "one_hot: indices must be class ids of dtype i64 (or i32), got %s; "
                  "convert them with gf_to_dtype(indices, GF_I64)",
                  gf_dtype_name(indices->dtype));
        return NULL;
    }
    if (num_classes < -1) {
        gf__error(GF_ERR_INVALID,
                  "one_hot: num_classes must be -1 (infer max + 1) or >= 0, got %lld",
                  (long long)num_classes);
        return NULL;
    }
    if (indices->rank + 1 > GF_MAX_RANK) {
        gf__error(GF_ERR_SHAPE, "one_hot: indices of rank %d would give a result of rank %d "
                  "(at most %d)", indices->rank, indices->rank + 1, GF_MAX_RANK);
        return NULL;
    }
    int64_t numel = gf__numel(indices);
    if (numel == 0 && num_classes == -1) {
        gf__error(GF_ERR_INVALID,
                  "one_hot: cannot infer the number of classes from an empty tensor; pass "
                  "num_classes");
        return NULL;
    }
    int s = gf__scope_suspend();
    gf_tensor *y = NULL, *col = NULL, *classes = NULL, *eq = NULL;
    if (numel > 0) {
        int64_t mn = 0, mx = 0;
        if (extreme_value(indices, false, &mn) != GF_OK ||
            extreme_value(indices, true, &mx) != GF_OK)
            goto done;
        if (mn < 0) {
            gf__error(GF_ERR_INDEX,
                      "one_hot: class values must be non-negative, got %lld", (long long)mn);
            goto done;
        }
        if (num_classes == -1) {
            if (!gf__add_ok(mx, 1, &num_classes)) {
                gf__error(GF_ERR_INDEX, "one_hot: class value %lld would need %lld + 1 "
                          "classes, more than graft can address", (long long)mx, (long long)mx);
                goto done;
            }
        } else if (mx >= num_classes) {
            gf__error(GF_ERR_INDEX,
                      "one_hot: class values must be smaller than num_classes (%lld), got "
                      "%lld", (long long)num_classes, (long long)mx);
            goto done;
        }
    }
    col = gf_unsqueeze(indices, -1);
    classes = col ? gf_arange(0.0, (double)num_classes, 1.0, GF_I64,
                              indices->storage->device) : NULL;
    eq = classes ? gf_eq(col, classes) : NULL;
    y = eq ? gf__cast(eq, GF_I64) : NULL;
done:
    gf_tensor_release(col);
    gf_tensor_release(classes);
    gf_tensor_release(eq);
    gf__scope_resume(s);
    return ret_new(y);
}
