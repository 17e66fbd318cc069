/* SPDX-License-Identifier: BSD-3-Clause */
/* fw_rules_views.c — jvp rules of the view ops and the FFT primitives.
 *
 * A view's tangent is the same view of its input's tangent (so it shares
 * that tangent's storage, and an in-place write into the view's tangent
 * reaches the base's); a reshape that had to copy gets a copy. The FFT
 * primitives are linear: the tangent goes through the same transform (a
 * batched tangent along the dims shifted past its batch dim). */
#include <string.h>

#include "autograd/ag_internal.h"
#include "fft/fft_internal.h"
#include "fw_internal.h"

typedef struct view_p {
    gf_view_kind kind;
    bool is_view;
    int64_t p[GF_MAX_RANK];
} view_p;

static int nd(int64_t d, int rank) { return (int)(d < 0 ? d + rank : d); }

/* The same view of a batched tangent [B, *x]: dims shifted past the batch
 * dim. An output that is a view of x gets a view of the tangent (checked:
 * a reshape the batch dim forces to copy is refused). */
static gf_tensor *view_rule_batched(const view_p *p, gf_tensor *const *x, gf_tensor *t,
                                    gf_tensor *y, int64_t batch) {
    int xr = gf_tensor_rank(x[0]), yr = gf_tensor_rank(y);
    int64_t bs[GF_MAX_RANK + 1];
    bs[0] = batch;
    memcpy(bs + 1, gf_tensor_sizes(y), sizeof(int64_t) * (size_t)yr);
    gf_tensor *r = NULL;
    switch (p->kind) {
    case GF_VIEW_KIND_RESHAPE: r = gf_reshape(t, bs, yr + 1); break;
    case GF_VIEW_KIND_TRANSPOSE:
        r = gf_transpose(t, nd(p->p[0], xr) + 1, nd(p->p[1], xr) + 1);
        break;
    case GF_VIEW_KIND_PERMUTE: {
        int dims[GF_MAX_RANK + 1];
        dims[0] = 0;
        for (int i = 0; i < yr; i++) dims[i + 1] = nd(p->p[i], xr) + 1;
        r = gf_permute(t, dims, yr + 1);
        break;
    }
    case GF_VIEW_KIND_EXPAND: r = gf_expand(gf__fw_batch_align(t, yr), bs, yr + 1); break;
    case GF_VIEW_KIND_SLICE: r = gf_slice(t, nd(p->p[0], xr) + 1, p->p[1], p->p[2], p->p[3]); break;
    case GF_VIEW_KIND_SELECT: r = gf_select(t, nd(p->p[0], xr) + 1, p->p[1]); break;
    case GF_VIEW_KIND_DIAGONAL:
        r = gf_diagonal(t, p->p[0], nd(p->p[1], xr) + 1, nd(p->p[2], xr) + 1);
        break;
    }
    if (r && p->is_view && r->storage != t->storage) {
        gf__fw_batch_refuse(-1, "reshape (a view whose batched tangent would be a copy)");
        return NULL;
    }
    return r;
}

static gf_tensor *view_rule(const void *pv, gf_tensor *const *x, gf_tensor *const *t,
                            gf_tensor *const *y, int j) {
    const view_p *p = pv;
    (void)j;
    int64_t batch = gf__fw_rule_batch();
    if (batch) return view_rule_batched(p, x, t[0], y[0], batch);
    const int64_t *ys = gf_tensor_sizes(y[0]);
    int yr = gf_tensor_rank(y[0]);
    switch (p->kind) {
    case GF_VIEW_KIND_RESHAPE: return gf_reshape(t[0], ys, yr);
    case GF_VIEW_KIND_TRANSPOSE: return gf_transpose(t[0], (int)p->p[0], (int)p->p[1]);
    case GF_VIEW_KIND_PERMUTE: {
        int dims[GF_MAX_RANK];
        for (int i = 0; i < yr; i++) dims[i] = (int)p->p[i];
        return gf_permute(t[0], dims, yr);
    }
    case GF_VIEW_KIND_EXPAND: return gf_expand(t[0], ys, yr);
    case GF_VIEW_KIND_SLICE: return gf_slice(t[0], (int)p->p[0], p->p[1], p->p[2], p->p[3]);
    case GF_VIEW_KIND_SELECT: return gf_select(t[0], (int)p->p[0], p->p[1]);
    case GF_VIEW_KIND_DIAGONAL: return gf_diagonal(t[0], p->p[0], (int)p->p[1], (int)p->p[2]);
    }
    gf__error(GF_ERR_INVALID, "internal: view kind %d has no jvp rule", (int)p->kind);
    return NULL;
}

static const char *view_op_name(gf_view_kind k) {
    switch (k) {
    case GF_VIEW_KIND_RESHAPE: return "reshape";
    case GF_VIEW_KIND_TRANSPOSE: return "transpose";
    case GF_VIEW_KIND_PERMUTE: return "permute";
    case GF_VIEW_KIND_EXPAND: return "expand";
    case GF_VIEW_KIND_SLICE: return "slice";
    case GF_VIEW_KIND_SELECT: return "select";
    case GF_VIEW_KIND_DIAGONAL: return "diagonal";
    }
    return "view";
}

gf_status gf__fw_view(const gf_tensor *in, gf_tensor *out, int kind, const int64_t *params,
                      int n_params, bool is_view) {
    if (!gf__fw_enabled()) return GF_OK;
    view_p p;
    memset(&p, 0, sizeof p);
    p.kind = (gf_view_kind)kind;
    p.is_view = is_view;
    for (int i = 0; i < n_params && i < GF_MAX_RANK; i++) p.p[i] = params[i];
    const gf_tensor *xs[1] = {in};
    gf_tensor *ys[1] = {out};
    return gf__fw_apply_batched(view_op_name(p.kind), view_rule, &p, xs, 1, ys, 1, is_view);
}

/* ------------------------------------------------------------ FFT */
typedef enum { FK_C2C, FK_R2C, FK_C2R } fft_kind;
typedef struct fft_p {
    fft_kind kind;
    int nd;
    int dims[GF_MAX_RANK];
    bool inverse;
    double scale;
} fft_p;

static gf_tensor *fft_rule(const void *pv, gf_tensor *const *x, gf_tensor *const *t,
                           gf_tensor *const *y, int j) {
    const fft_p *p = pv;
    (void)x, (void)j;
    /* a batched tangent [B, *x]: the same transform over the dims shifted
     * past the batch dim (the batch is one more dim the FFT runs along) */
    int shift = gf__fw_rule_batch() ? 1 : 0, dims[GF_MAX_RANK];
    for (int i = 0; i < p->nd; i++) dims[i] = p->dims[i] + shift;
    switch (p->kind) {
    case FK_C2C: return gf__ret(gf__fft_c2c(t[0], dims, p->nd, p->inverse, p->scale));
    case FK_R2C: return gf__ret(gf__fft_r2c(t[0], dims, p->nd, p->scale));
    case FK_C2R: {
        int64_t last_n = gf_tensor_size(y[0], p->dims[p->nd - 1]);
        return gf__ret(gf__fft_c2r(t[0], dims, p->nd, last_n, p->scale));
    }
    }
    return NULL;
}

static gf_status fft_apply(const char *name, fft_kind kind, const gf_tensor *x, gf_tensor *y,
                           const int *dims, int nd, bool inverse, double scale) {
    fft_p p;
    memset(&p, 0, sizeof p);
    p.kind = kind;
    p.nd = nd;
    memcpy(p.dims, dims, (size_t)nd * sizeof dims[0]);
    p.inverse = inverse;
    p.scale = scale;
    const gf_tensor *xs[1] = {x};
    gf_tensor *ys[1] = {y};
    return gf__fw_apply_batched(name, fft_rule, &p, xs, 1, ys, 1, false);
}

gf_status gf__fw_fft_c2c(const gf_tensor *x, gf_tensor *y, const int *dims, int nd, bool inverse,
                         double scale) {
    if (!gf__fw_enabled()) return GF_OK;
    return fft_apply("fft (complex to complex)", FK_C2C, x, y, dims, nd, inverse, scale);
}

gf_status gf__fw_fft_r2c(const gf_tensor *x, gf_tensor *y, const int *dims, int nd, double scale) {
    if (!gf__fw_enabled()) return GF_OK;
    return fft_apply("fft (real to complex)", FK_R2C, x, y, dims, nd, false, scale);
}

gf_status gf__fw_fft_c2r(const gf_tensor *x, gf_tensor *y, const int *dims, int nd, double scale) {
    if (!gf__fw_enabled()) return GF_OK;
    return fft_apply("fft (complex to real)", FK_C2R, x, y, dims, nd, true, scale);
}
