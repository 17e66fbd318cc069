/* SPDX-License-Identifier: BSD-3-Clause */
/* ocl_norm.c — SOFTMAX, LOG_SOFTMAX, LAYER_NORM, BATCH_NORM and their gradients
 * (kernels/norm.cl), f32 and f64, every tensor of one dtype; SOFTMAX and
 * LOG_SOFTMAX also f16 and bf16 (computed in f32, rounded once), the norms
 * in f16 and bf16 through f32 copies (ocl_half.c).
 *
 * The host describes lines and their index spaces as (sizes, strides, rank)
 * triples, so any view works without a copy. Checks and dtype rules are the
 * reference plugin's. */
#include <stdio.h>
#include <string.h>

#include "ocl_internal.h"

#define OCL_NG 64 /* GF_NG of norm.cl */

static bool is_softmax(uint32_t op) { return op == GFP_OP_SOFTMAX || op == GFP_OP_LOG_SOFTMAX; }
static bool is_softmax_bw(uint32_t op) {
    return op == GFP_OP_SOFTMAX_BACKWARD || op == GFP_OP_LOG_SOFTMAX_BACKWARD;
}

bool ocl_norm_widens(uint32_t op) { return op == GFP_OP_LAYER_NORM || op == GFP_OP_BATCH_NORM; }

/* The dtypes op takes here. */
static uint32_t dtypes_of(uint32_t op) { return PK_DT_FLOAT | (is_softmax(op) ? PK_DT_HALF : 0); }

static uint32_t support_native(const ocl_device *d, const gfp_op_query *q) {
    if (d->max_wg < OCL_NG) return GFP_SUPPORT_NONE;
    return pk_norm_dtypes_ok(q->op, q->input_dtypes, q->n_inputs, q->output_dtypes, q->n_outputs,
                             dtypes_of(q->op))
               ? GFP_SUPPORT_STRIDED
               : GFP_SUPPORT_NONE;
}

/* Layer and batch norm take f16 / bf16 through f32 copies (ocl_half.c);
 * the softmax gradients: grad_y, y and grad_x of one float dtype, 16-bit
 * included. */
uint32_t ocl_norm_support(const ocl_device *d, const gfp_op_query *q) {
    if (q->op == GFP_OP_LAYER_NORM_BACKWARD || q->op == GFP_OP_BATCH_NORM_BACKWARD) {
        /* contiguous tensors: the core makes contiguous copies of others */
        int32_t dt = q->input_dtypes[0];
        bool ok = d->max_wg >= OCL_NG && q->n_inputs == 5 && q->n_outputs == 3 &&
                  pk_dtype_in(dt, PK_DT_FLOAT | PK_DT_HALF);
        for (uint32_t i = 1; ok && i < 5; i++)
            ok = q->input_dtypes[i] == dt || (i == 4 && q->input_dtypes[i] == -1);
        for (uint32_t i = 0; ok && i < 3; i++) ok = q->output_dtypes[i] == dt;
        return ok ? GFP_SUPPORT_CONTIGUOUS : GFP_SUPPORT_NONE;
    }
    if (is_softmax_bw(q->op)) {
        int32_t dt = q->input_dtypes[0];
        bool ok = d->max_wg >= OCL_NG && q->n_inputs == 2 && q->n_outputs == 1 &&
                  pk_dtype_in(dt, PK_DT_FLOAT | PK_DT_HALF) && q->input_dtypes[1] == dt &&
                  q->output_dtypes[0] == dt;
        return ok ? GFP_SUPPORT_STRIDED : GFP_SUPPORT_NONE;
    }
    return ocl_norm_widens(q->op) ? ocl_half_widened_support(d, q, support_native)
                                  : support_native(d, q);
}

static const char *kdt(int32_t dt) {
    return dt == GFP_F64 ? "f64" : dt == GFP_F16 ? "f16" : dt == GFP_BF16 ? "bf16" : "f32";
}

/* (mem, offset) of an optional tensor, and whether it is there: absent ones
 * pass the device's flag buffer, which the kernel does not touch. */
static void arg_optional(ocl_call *c, const ocl_device *d, const gfp_tensor *t) {
    ocl_arg_mem(c, t ? ocl_mem(t) : d->flag);
    ocl_arg_i64(c, t ? ocl_elem_offset(t) : 0);
}

/* Runs (norm.cl's "_r" kernels): the trailing dims of (sz, xs, ys), rank
 * n and no size-1 dims, that walk x and y as one contiguous run; returns
 * its length L and leaves the dims before it in (rsz, rxs, rys, rrank).
 * L is 1 when the last dim is not contiguous in both. */
static int64_t runs_of(const int64_t *sz, const int64_t *xs, const int64_t *ys, int n,
                       int64_t *rsz, int64_t *rxs, int64_t *rys, int *rrank) {
    int64_t L = 1;
    int k = n - 1;
    for (; k >= 0 && xs[k] == L && ys[k] == L; k--) L *= sz[k];
    for (int i = 0; i <= k; i++) {
        rsz[i] = sz[i];
        rxs[i] = xs[i];
        rys[i] = ys[i];
    }
    *rrank = k + 1;
    return L;
}

/* The run form pays off from a few vectors per run. */
#define OCL_RUN_MIN 32

/* ------------------------------------------------------------------ softmax */
/* The lines along dim of the n tensors t (of one shape): the other dims,
 * size-1 ones dropped, as sizes sz and each tensor's strides st[i], in
 * *rank dims; returns how many lines there are. */
static int64_t lines_of(const gfp_tensor *const *t, int n, int dim, int64_t *sz,
                        int64_t (*st)[GFP_MAX_RANK], int *rank) {
    int64_t nlines = 1;
    *rank = 0;
    for (int k = 0; k < t[0]->rank; k++) {
        if (k == dim || t[0]->sizes[k] == 1) continue;
        sz[*rank] = t[0]->sizes[k];
        for (int i = 0; i < n; i++) st[i][*rank] = t[i]->strides[k];
        nlines *= t[0]->sizes[k];
        (*rank)++;
    }
    return nlines;
}

/* Checked by pk_check_norm (plugin_kit.h), as are the ops below. */
static gfp_status softmax(ocl_device *d, uint32_t op, const gfp_tensor *x, const gfp_tensor *y,
                          const void *params) {
    const char *name = pk_op_name(op);
    int dim = ((const gfp_dim_params *)params)->dim;
    if (pk_numel(x) == 0) return GFP_OK;
    int64_t len = x->rank ? x->sizes[dim] : 1;
    int64_t xs = x->rank ? x->strides[dim] : 0, ys = y->rank ? y->strides[dim] : 0;
    int64_t lsz[GFP_MAX_RANK], ls[2][GFP_MAX_RANK];
    int lrank;
    int64_t nlines = lines_of((const gfp_tensor *const[]){x, y}, 2, dim, lsz, ls, &lrank);
    /* Contiguous lines, enough of them: vectorized by hand, an item each;
     * few long lines: a work-group each; else an item each. */
    bool vec = xs == 1 && ys == 1 && len >= 16 && nlines >= 8 && !pk_is_half(x->dtype);
    bool group = !vec && len >= 256 && d->max_wg >= OCL_NG;
    char kname[32];
    snprintf(kname, sizeof kname, "softmax_%s_%c", kdt(x->dtype), vec ? 'v' : group ? 'g' : 'i');
    ocl_call c;
    ocl_call_begin(&c, d, OCL_PROG_NORM, kname, name);
    ocl_arg_mem(&c, ocl_mem(x));
    ocl_arg_i64(&c, ocl_elem_offset(x));
    ocl_arg_mem(&c, ocl_mem(y));
    ocl_arg_i64(&c, ocl_elem_offset(y));
    ocl_arg_long8(&c, lsz, lrank);
    ocl_arg_long8(&c, ls[0], lrank);
    ocl_arg_long8(&c, ls[1], lrank);
    ocl_arg_i32(&c, lrank);
    ocl_arg_i64(&c, nlines);
    ocl_arg_i64(&c, len);
    ocl_arg_i64(&c, xs);
    ocl_arg_i64(&c, ys);
    ocl_arg_i32(&c, op == GFP_OP_LOG_SOFTMAX);
    if (group) {
        size_t global = (size_t)nlines * OCL_NG, local = OCL_NG;
        return ocl_call_run(&c, 1, &global, &local);
    }
    return ocl_call_run1(&c, (uint64_t)nlines, vec ? 1 : 64);
}

/* ------------------------------------------------------------------ softmax gradients */
static gfp_status softmax_bw(ocl_device *d, uint32_t op, const gfp_tensor *const *in,
                             uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                             const void *params) {
    const char *name = pk_op_name(op);
    gfp_status st = pk_check_softmax_backward(op, in, n_in, out, n_out, params,
                                              PK_DT_FLOAT | PK_DT_HALF);
    if (st != GFP_OK) return st;
    const gfp_tensor *g = in[0], *y = in[1], *gx = out[0];
    int dim = ((const gfp_dim_params *)params)->dim;
    if (pk_numel(y) == 0) return GFP_OK;
    int64_t len = y->rank ? y->sizes[dim] : 1;
    int64_t lsz[GFP_MAX_RANK], ls[3][GFP_MAX_RANK];
    int lrank;
    int64_t nlines = lines_of((const gfp_tensor *const[]){g, y, gx}, 3, dim, lsz, ls, &lrank);
    bool group = len >= 256;
    char kname[32];
    snprintf(kname, sizeof kname, "softmax_bw_%s_%c", kdt(y->dtype), group ? 'g' : 'i');
    ocl_call c;
    ocl_call_begin(&c, d, OCL_PROG_NORM, kname, name);
    ocl_arg_mem(&c, ocl_mem(g));
    ocl_arg_i64(&c, ocl_elem_offset(g));
    ocl_arg_mem(&c, ocl_mem(y));
    ocl_arg_i64(&c, ocl_elem_offset(y));
    ocl_arg_mem(&c, ocl_mem(gx));
    ocl_arg_i64(&c, ocl_elem_offset(gx));
    ocl_arg_long8(&c, lsz, lrank);
    for (int i = 0; i < 3; i++) ocl_arg_long8(&c, ls[i], lrank);
    ocl_arg_i32(&c, lrank);
    ocl_arg_i64(&c, nlines);
    ocl_arg_i64(&c, len);
    ocl_arg_i64(&c, y->rank ? g->strides[dim] : 0);
    ocl_arg_i64(&c, y->rank ? y->strides[dim] : 0);
    ocl_arg_i64(&c, y->rank ? gx->strides[dim] : 0);
    ocl_arg_i32(&c, op == GFP_OP_SOFTMAX_BACKWARD);
    if (group) {
        size_t global = (size_t)nlines * OCL_NG, local = OCL_NG;
        return ocl_call_run(&c, 1, &global, &local);
    }
    return ocl_call_run1(&c, (uint64_t)nlines, 64);
}

/* ------------------------------------------------------------------ norm gradients */
/* LAYER_NORM_BACKWARD and BATCH_NORM_BACKWARD on contiguous tensors (the
 * support query says so, and the core makes contiguous copies). */
static gfp_status norm_bw(ocl_device *d, uint32_t op, const gfp_tensor *const *in,
                          uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                          const void *params) {
    const char *name = pk_op_name(op);
    gfp_status st = pk_check_norm_backward(op, in, n_in, out, n_out, params,
                                           PK_DT_FLOAT | PK_DT_HALF);
    if (st != GFP_OK) return st;
    for (int i = 0; i < 8; i++) {
        const gfp_tensor *t = i < 5 ? in[i] : out[i - 5];
        if (t && !pk_is_contiguous(t))
            return pk_fail(GFP_ERR_UNSUPPORTED, "%s: takes contiguous tensors here (query_op "
                           "says so; the core makes contiguous copies)", name);
    }
    const gfp_tensor *g = in[0], *x = in[1], *mu = in[2], *rs = in[3], *w = in[4];
    const gfp_tensor *gx = out[0], *gw = out[1], *gb = out[2];
    const char *dt = kdt(x->dtype);
    char kname[40];
    ocl_call c;
    if (op == GFP_OP_BATCH_NORM_BACKWARD) {
        int64_t nb = x->sizes[0], ch = x->sizes[1], sp = 1;
        for (int k = 2; k < x->rank; k++) sp *= x->sizes[k];
        if (ch == 0) return GFP_OK;
        snprintf(kname, sizeof kname, "bn_bw_%s", dt);
        ocl_call_begin(&c, d, OCL_PROG_NORM, kname, name);
        const gfp_tensor *t[5] = {g, x, mu, rs, w};
        for (int i = 0; i < 5; i++) {
            ocl_arg_mem(&c, t[i] ? ocl_mem(t[i]) : d->flag);
            ocl_arg_i64(&c, t[i] ? ocl_elem_offset(t[i]) : 0);
        }
        ocl_arg_i32(&c, w != NULL);
        const gfp_tensor *o[3] = {gx, gw, gb};
        for (int i = 0; i < 3; i++) {
            ocl_arg_mem(&c, ocl_mem(o[i]));
            ocl_arg_i64(&c, ocl_elem_offset(o[i]));
        }
        ocl_arg_i64(&c, nb);
        ocl_arg_i64(&c, ch);
        ocl_arg_i64(&c, sp);
        size_t global = (size_t)ch * OCL_NG, local = OCL_NG;
        return ocl_call_run(&c, 1, &global, &local);
    }
    int nr = ((const gfp_layer_norm_params *)params)->normalized_rank;
    int64_t rows = 1, n = 1;
    for (int k = 0; k < x->rank; k++) {
        if (k < x->rank - nr) rows *= x->sizes[k];
        else n *= x->sizes[k];
    }
    if (n == 0) return GFP_OK;
    /* grad_weight, grad_bias: an item per normalised element */
    snprintf(kname, sizeof kname, "ln_bw_cols_%s", dt);
    ocl_call_begin(&c, d, OCL_PROG_NORM, kname, name);
    const gfp_tensor *tc[6] = {g, x, mu, rs, gw, gb};
    for (int i = 0; i < 6; i++) {
        ocl_arg_mem(&c, ocl_mem(tc[i]));
        ocl_arg_i64(&c, ocl_elem_offset(tc[i]));
    }
    ocl_arg_i64(&c, rows);
    ocl_arg_i64(&c, n);
    if ((st = ocl_call_run1(&c, (uint64_t)n, 64)) != GFP_OK || rows == 0) return st;
    /* grad_x: an item per row, or a work-group per long row */
    bool group = n >= 256;
    snprintf(kname, sizeof kname, "ln_bw_rows_%s_%c", dt, group ? 'g' : 'i');
    ocl_call_begin(&c, d, OCL_PROG_NORM, kname, name);
    const gfp_tensor *tr[5] = {g, x, mu, rs, w};
    for (int i = 0; i < 5; i++) {
        ocl_arg_mem(&c, tr[i] ? ocl_mem(tr[i]) : d->flag);
        ocl_arg_i64(&c, tr[i] ? ocl_elem_offset(tr[i]) : 0);
    }
    ocl_arg_i32(&c, w != NULL);
    ocl_arg_mem(&c, ocl_mem(gx));
    ocl_arg_i64(&c, ocl_elem_offset(gx));
    ocl_arg_i64(&c, rows);
    ocl_arg_i64(&c, n);
    if (group) {
        size_t global = (size_t)rows * OCL_NG, local = OCL_NG;
        return ocl_call_run(&c, 1, &global, &local);
    }
    return ocl_call_run1(&c, (uint64_t)rows, 64);
}

/* ------------------------------------------------------------------ layer norm */
/* Begins a call of a layer-norm kernel and passes the arguments every form
 * takes first: x, y, the optional weight and bias, mean, rstd, and the
 * geometry of the leading (row-indexing) dims. */
static void layer_norm_begin(ocl_call *c, ocl_device *d, const char *kname, const gfp_tensor *x,
                             const gfp_tensor *y, const gfp_tensor *w, const gfp_tensor *b,
                             const gfp_tensor *mean, const gfp_tensor *rstd, int orank) {
    ocl_call_begin(c, d, OCL_PROG_NORM, kname, "layer_norm");
    ocl_arg_mem(c, ocl_mem(x));
    ocl_arg_i64(c, ocl_elem_offset(x));
    ocl_arg_mem(c, ocl_mem(y));
    ocl_arg_i64(c, ocl_elem_offset(y));
    arg_optional(c, d, w);
    ocl_arg_i32(c, w != NULL);
    arg_optional(c, d, b);
    ocl_arg_i32(c, b != NULL);
    ocl_arg_mem(c, ocl_mem(mean));
    ocl_arg_i64(c, ocl_elem_offset(mean));
    ocl_arg_mem(c, ocl_mem(rstd));
    ocl_arg_i64(c, ocl_elem_offset(rstd));
    ocl_arg_long8(c, x->sizes, orank);
    ocl_arg_long8(c, x->strides, orank);
    ocl_arg_long8(c, y->strides, orank);
    ocl_arg_long8(c, mean->strides, orank);
    ocl_arg_long8(c, rstd->strides, orank);
    ocl_arg_i32(c, orank);
}

static gfp_status layer_norm(ocl_device *d, const gfp_tensor *const *in,
                             const gfp_tensor *const *out, const void *params) {
    const gfp_layer_norm_params *p = params;
    const gfp_tensor *x = in[0], *w = in[1], *b = in[2], *y = out[0], *mean = out[1],
                     *rstd = out[2];
    int nr = p->normalized_rank, orank = x->rank - nr;
    const int64_t *inner = x->sizes + orank;
    int64_t nouter = 1, ninner = 1;
    for (int k = 0; k < orank; k++) nouter *= x->sizes[k];
    for (int k = orank; k < x->rank; k++) ninner *= x->sizes[k];
    if (nouter == 0) return GFP_OK;
    int64_t zero[GFP_MAX_RANK] = {0};
    ocl_call c;
    char kname[32];
    /* The row's dims without size-1 ones; the weight and bias (when there)
     * contiguous over the row, as the run form reads them. */
    int64_t isz[GFP_MAX_RANK] = {0}, ixs[GFP_MAX_RANK] = {0}, iys[GFP_MAX_RANK] = {0}, span = 1;
    int irank = 0;
    bool wb_flat = true;
    for (int k = x->rank - 1; k >= orank; k--) {
        if (x->sizes[k] == 1) continue;
        wb_flat = wb_flat && (!w || w->strides[k - orank] == span) &&
                  (!b || b->strides[k - orank] == span);
        span *= x->sizes[k];
    }
    for (int k = orank; k < x->rank; k++) {
        if (x->sizes[k] == 1) continue;
        isz[irank] = x->sizes[k];
        ixs[irank] = x->strides[k];
        iys[irank] = y->strides[k];
        irank++;
    }
    int64_t rsz[GFP_MAX_RANK], rxs[GFP_MAX_RANK], rys[GFP_MAX_RANK];
    int rrank = 0;
    int64_t L = runs_of(isz, ixs, iys, irank, rsz, rxs, rys, &rrank);
    /* Many rows, each one run, on a CPU: an item per row (no barriers). */
    bool per_item = (d->type & CL_DEVICE_TYPE_CPU) && rrank == 0 && nouter >= 16;
    if (wb_flat && L >= OCL_RUN_MIN) {
        snprintf(kname, sizeof kname, "layer_norm_%s_%c", kdt(x->dtype), per_item ? 'v' : 'r');
        layer_norm_begin(&c, d, kname, x, y, w, b, mean, rstd, orank);
        if (per_item) {
            ocl_arg_i64(&c, nouter);
            ocl_arg_i64(&c, L);
            ocl_arg_scalar(&c, x->dtype, p->eps, 0);
            return ocl_call_run1(&c, (uint64_t)nouter, 1);
        }
        ocl_arg_long8(&c, rsz, rrank);
        ocl_arg_long8(&c, rxs, rrank);
        ocl_arg_long8(&c, rys, rrank);
        ocl_arg_i32(&c, rrank);
        ocl_arg_i64(&c, ninner / L);
        ocl_arg_i64(&c, L);
        ocl_arg_scalar(&c, x->dtype, p->eps, 0);
        size_t global = (size_t)nouter * OCL_NG, local = OCL_NG;
        return ocl_call_run(&c, 1, &global, &local);
    }
    snprintf(kname, sizeof kname, "layer_norm_%s", kdt(x->dtype));
    layer_norm_begin(&c, d, kname, x, y, w, b, mean, rstd, orank);
    ocl_arg_long8(&c, inner, nr);
    ocl_arg_long8(&c, x->strides + orank, nr);
    ocl_arg_long8(&c, y->strides + orank, nr);
    ocl_arg_long8(&c, w ? w->strides : zero, nr);
    ocl_arg_long8(&c, b ? b->strides : zero, nr);
    ocl_arg_i32(&c, nr);
    ocl_arg_i64(&c, ninner);
    ocl_arg_scalar(&c, x->dtype, p->eps, 0);
    size_t global = (size_t)nouter * OCL_NG, local = OCL_NG;
    return ocl_call_run(&c, 1, &global, &local);
}

/* ------------------------------------------------------------------ batch norm */
static void arg_channel(ocl_call *c, const ocl_device *d, const gfp_tensor *t, bool with_flag) {
    arg_optional(c, d, t);
    ocl_arg_i64(c, t ? t->strides[0] : 0);
    if (with_flag) ocl_arg_i32(c, t != NULL);
}

static gfp_status batch_norm(ocl_device *d, const gfp_tensor *const *in,
                             const gfp_tensor *const *out, const void *params) {
    const gfp_batch_norm_params *p = params;
    const gfp_tensor *x = in[0], *w = in[1], *b = in[2], *rm = in[3], *rv = in[4];
    const gfp_tensor *y = out[0], *sm = out[1], *si = out[2];
    const int64_t *chans = &x->sizes[1];
    if (*chans == 0) return GFP_OK;
    int64_t lsz[GFP_MAX_RANK], lxs[GFP_MAX_RANK], lys[GFP_MAX_RANK], nline = 1;
    int lrank = 0;
    for (int k = 0; k < x->rank; k++) {
        if (k == 1) continue;
        nline *= x->sizes[k];
        if (x->sizes[k] == 1) continue;
        lsz[lrank] = x->sizes[k];
        lxs[lrank] = x->strides[k];
        lys[lrank] = y->strides[k];
        lrank++;
    }
    /* A channel's elements in runs long enough: the run form. */
    int64_t rsz[GFP_MAX_RANK], rxs[GFP_MAX_RANK], rys[GFP_MAX_RANK];
    int rrank = 0;
    int64_t L = runs_of(lsz, lxs, lys, lrank, rsz, rxs, rys, &rrank);
    bool by_runs = L >= OCL_RUN_MIN;
    if (by_runs) {
        memcpy(lsz, rsz, sizeof lsz);
        memcpy(lxs, rxs, sizeof lxs);
        memcpy(lys, rys, sizeof lys);
        lrank = rrank;
        nline /= L;
    }
    ocl_call c;
    char kname[32];
    snprintf(kname, sizeof kname, "batch_norm_%s_%s%s", p->training ? "train" : "eval",
             kdt(x->dtype), by_runs ? "_r" : "");
    ocl_call_begin(&c, d, OCL_PROG_NORM, kname, "batch_norm");
    ocl_arg_mem(&c, ocl_mem(x));
    ocl_arg_i64(&c, ocl_elem_offset(x));
    ocl_arg_i64(&c, x->strides[1]);
    ocl_arg_mem(&c, ocl_mem(y));
    ocl_arg_i64(&c, ocl_elem_offset(y));
    ocl_arg_i64(&c, y->strides[1]);
    arg_channel(&c, d, w, true);
    arg_channel(&c, d, b, true);
    arg_channel(&c, d, rm, true);
    arg_channel(&c, d, rv, true);
    arg_channel(&c, d, sm, false);
    arg_channel(&c, d, si, false);
    ocl_arg_long8(&c, lsz, lrank);
    ocl_arg_long8(&c, lxs, lrank);
    ocl_arg_long8(&c, lys, lrank);
    ocl_arg_i32(&c, lrank);
    ocl_arg_i64(&c, nline);
    ocl_arg_scalar(&c, x->dtype, p->momentum, 0);
    ocl_arg_scalar(&c, x->dtype, p->eps, 0);
    if (by_runs) ocl_arg_i64(&c, L);
    size_t global = (size_t)*chans * OCL_NG, local = OCL_NG;
    return ocl_call_run(&c, 1, &global, &local);
}

/* The kernels' work-groups of OCL_NG items, which the device does not allow
 * (query_op said NONE). */
static gfp_status groups_too_small(const ocl_device *d, const char *name) {
    return pk_fail(GFP_ERR_UNSUPPORTED, "%s: needs work-groups of %d items; device '%s' allows %zu",
                   name, OCL_NG, d->name, d->max_wg);
}

gfp_status ocl_norm_launch(ocl_device *d, uint32_t op, const gfp_tensor *const *in,
                           uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                           const void *params) {
    const char *name = pk_op_name(op);
    if (op == GFP_OP_LAYER_NORM_BACKWARD || op == GFP_OP_BATCH_NORM_BACKWARD)
        return d->max_wg < OCL_NG ? groups_too_small(d, name)
                                  : norm_bw(d, op, in, n_in, out, n_out, params);
    if (is_softmax_bw(op))
        return d->max_wg < OCL_NG ? groups_too_small(d, name)
                                  : softmax_bw(d, op, in, n_in, out, n_out, params);
    if (ocl_norm_widens(op) && pk_widen_operands(in, n_in, out, n_out))
        return ocl_half_widened_launch(d, op, in, n_in, out, n_out, params, ocl_norm_launch);
    gfp_status st = pk_check_norm(op, in, n_in, out, n_out, params, dtypes_of(op));
    if (st != GFP_OK) return st;
    if (d->max_wg < OCL_NG) return groups_too_small(d, name);
    switch (op) {
    case GFP_OP_LAYER_NORM: return layer_norm(d, in, out, params);
    case GFP_OP_BATCH_NORM: return batch_norm(d, in, out, params);
    default: return softmax(d, op, in[0], out[0], params);
    }
}
