/* SPDX-License-Identifier: BSD-3-Clause */
/* shape_internal.h — what the composed ops of graft/shape.h share
 * (ops_scan.c, ops_sort.c, ops_shape.c, ops_mask.c, ops_einsum.c).
 *
 * Each op is a composite of public differentiable ops. Its intermediates go
 * through a `tmps` list: T(expr) evaluates expr only while every earlier
 * step succeeded and keeps the result for one release at the end. */
#ifndef GRAFT_SHAPE_INTERNAL_H
#define GRAFT_SHAPE_INTERNAL_H

#include "internal.h"

#define SH_TMPS 512
typedef struct sh_tmps {
    gf_tensor *t[SH_TMPS];
    int n;
    bool bad;
} sh_tmps;

static inline gf_tensor *sh_keep(sh_tmps *l, gf_tensor *t) {
    if (!t || l->n == SH_TMPS) {
        if (t) {
            gf_tensor_release(t);
            gf__error(GF_ERR_INVALID, "internal temporary list full");
        }
        l->bad = true;
        return NULL;
    }
    l->t[l->n++] = t;
    return t;
}
/* Needs a local `sh_tmps *L`. */
#define T(expr) (L->bad ? NULL : sh_keep(L, (expr)))

/* Releases the temporaries; returns a new reference to y (NULL when any
 * step failed). */
static inline gf_tensor *sh_finish(sh_tmps *l, gf_tensor *y) {
    gf_tensor *r = (!l->bad && y) ? gf_tensor_retain(y) : NULL;
    for (int i = 0; i < l->n; i++) gf_tensor_release(l->t[i]);
    l->n = 0;
    return r;
}
/* Releases the temporaries (a flush between phases keeps the list short). */
static inline void sh_drop(sh_tmps *l) {
    for (int i = 0; i < l->n; i++) gf_tensor_release(l->t[i]);
    l->n = 0;
}

static inline gf_tensor *sh_ret(gf_tensor *t) { return t ? gf__ret(t) : NULL; }

/* The NULL check of a public op's tensor arguments. */
static inline bool sh_null(const char *op, const gf_tensor *t, const char *what) {
    if (t) return false;
    gf__null_arg(op, what);
    return true;
}

/* dtypes the composed ops take (every real dtype; float_only: the floats). */
static inline bool sh_check_dtype(const gf_tensor *x, const char *op, bool float_only) {
    gf_dtype dt = x->dtype;
    bool ok = float_only ? gf_dtype_is_float(dt)
                         : (gf_dtype_is_float(dt) || dt == GF_I32 || dt == GF_I64 ||
                            dt == GF_BOOL);
    if (ok) return true;
    gf__error(GF_ERR_DTYPE, "%s: x of dtype %s is not supported (%s); convert it with "
              "gf_to_dtype", op, gf_dtype_name(dt),
              float_only ? "it needs f32, f64, f16 or bf16" : "f32, f64, f16, bf16, i32, i64 or bool");
    return false;
}

/* sh_check_dtype for ops that only move or copy elements (flip, roll,
 * repeat, pad, unfold, scatter, masked_select...): complex dtypes too. */
static inline bool sh_check_dtype_moved(const gf_tensor *x, const char *op) {
    if (x->dtype == GF_C64 || x->dtype == GF_C128) return true;
    return sh_check_dtype(x, op, false);
}

/* A 1-D i64 tensor holding v[0..n) on dev. */
static inline gf_tensor *sh_i64_1d(const int64_t *v, int64_t n, gf_device *dev) {
    const int64_t z = 0;
    return gf_from_data(n > 0 ? (const void *)v : (const void *)&z, &n, 1, GF_I64, dev);
}

/* t's elements in row-major order as a malloc'ed host array of i64
 * (integer or bool t) or NULL with the error set. */
int64_t *gf__sh_read_i64(const gf_tensor *t, const char *op);
/* t's elements as doubles (any dtype but i64 beyond 2^53 exactly). */
double *gf__sh_read_f64(const gf_tensor *t, const char *op);
/* Validates dims (range, repeats) as the reductions do; fills red[rank]. */
bool gf__sh_dims(const int *dims, int ndims, int rank, const char *op, bool *red);

#endif
