/* SPDX-License-Identifier: BSD-3-Clause */
/* fft_grad.c — the backward rules of the three FFT primitives, PyTorch's
 * (torch/csrc/autograd/FunctionsManual.cpp), in its convention for complex
 * gradients (docs/autograd.md rule 26). Each is linear in the incoming
 * gradient g and written with the primitives themselves and graft ops, so
 * gradients of any order are transforms again.
 *
 *   c2c(x; dims, inverse, scale):  grad_x = c2c(g; dims, !inverse, scale)
 *       (the adjoint of a DFT with sign s is the DFT with sign -s, the
 *       scale unchanged)
 *   r2c(x; dims, scale), onesided:  grad_x = real(c2c(pad(g); dims, inverse,
 *       scale)), g zero-padded along the onesided dim from n/2 + 1 to x's n
 *       bins (the discarded half of the full transform had no gradient)
 *   c2r(x; dims, n, scale):  grad_x = r2c(g; dims, scale) * w, w = 2 at the
 *       bins 1 .. n - (n/2 + 1) of the onesided dim and 1 elsewhere: each
 *       of those bins also stands for its conjugate partner n - k of the
 *       Hermitian extension, which bin 0 and (even n) bin n/2 do not have. */
#include <stdlib.h>
#include <string.h>

#include "../autograd/ag_internal.h"
#include "fft_internal.h"

typedef struct fft_ctx {
    int nd;
    int dims[GF_MAX_RANK];
    bool inverse;
    double scale;
    int64_t last_n; /* r2c: x's length of the onesided dim; c2r: y's */
    int64_t half;   /* n/2 + 1 */
} fft_ctx;
GF_CTX_FITS(fft_ctx);

static fft_ctx *record(const char *name, gf_backward_fn fn, const gf_tensor *x, gf_tensor *y,
                       const int *dims, int nd, double scale) {
    const gf_tensor *ins[1] = {x};
    gf_tensor *outs[1] = {y};
    gf_node *n = gf__ag_record(name, fn, ins, 1, outs, 1);
    if (!n) return NULL;
    fft_ctx *c = GF_NODE_CTX(n, fft_ctx);
    memset(c, 0, sizeof *c);
    c->nd = nd;
    memcpy(c->dims, dims, (size_t)nd * sizeof dims[0]);
    c->scale = scale;
    return c;
}

/* ------------------------------------------------------------ c2c */
static gf_status c2c_backward(gf_node *n, gf_tensor *const *grads, gf_tensor **out) {
    const fft_ctx *c = GF_NODE_CTX(n, fft_ctx);
    gf_tensor *r = gf__fft_c2c(grads[0], c->dims, c->nd, !c->inverse, c->scale);
    if (!r) return gf__status();
    out[0] = r;
    return GF_OK;
}

gf_status gf__fft_record_c2c(const gf_tensor *x, gf_tensor *y, const int *dims, int nd,
                             bool inverse, double scale) {
    if (gf__fw_fft_c2c(x, y, dims, nd, inverse, scale) != GF_OK) return gf__status();
    fft_ctx *c = record("FftC2CBackward", c2c_backward, x, y, dims, nd, scale);
    if (c) c->inverse = inverse;
    return GF_OK;
}

/* ------------------------------------------------------------ r2c */
static gf_status r2c_backward(gf_node *n, gf_tensor *const *grads, gf_tensor **out) {
    const fft_ctx *c = GF_NODE_CTX(n, fft_ctx);
    gf_tensor *g = grads[0];
    int dl = c->dims[c->nd - 1];
    int saved = gf__scope_suspend();
    gf_tensor *full = gf_tensor_retain(g);
    int64_t extra = c->last_n - g->sizes[dl];
    if (extra > 0) {
        int64_t pad[2 * GF_MAX_RANK] = {0};
        int npad = 2 * (g->rank - dl);
        pad[npad - 1] = extra;
        gf_tensor *p = gf_pad(g, pad, npad, GF_PAD_CONSTANT, 0.0);
        gf_tensor_release(full);
        full = p;
    }
    gf_tensor *t = full ? gf__fft_c2c(full, c->dims, c->nd, true, c->scale) : NULL;
    gf_tensor *r = t ? gf_real(t) : NULL;
    gf_tensor_release(full);
    gf_tensor_release(t);
    gf__scope_resume(saved);
    if (!r) return gf__status();
    out[0] = r;
    return GF_OK;
}

gf_status gf__fft_record_r2c(const gf_tensor *x, gf_tensor *y, const int *dims, int nd,
                             double scale) {
    if (gf__fw_fft_r2c(x, y, dims, nd, scale) != GF_OK) return gf__status();
    fft_ctx *c = record("FftR2CBackward", r2c_backward, x, y, dims, nd, scale);
    if (c) {
        c->last_n = x->sizes[dims[nd - 1]];
        c->half = y->sizes[dims[nd - 1]];
    }
    return GF_OK;
}

/* ------------------------------------------------------------ c2r */
/* The weights w of the onesided dim dl (1, 2, .., 2, 1..) as a real tensor
 * of dtype dt shaped to broadcast against a tensor of the given rank. */
static gf_tensor *doubling_weights(int64_t half, int64_t n, int dl, int rank, gf_dtype dt,
                                   gf_device *dev) {
    double *w = malloc((size_t)half * sizeof *w);
    if (!w) {
        gf__error(GF_ERR_OUT_OF_MEMORY, "fft backward: no memory for %lld weights",
                  (long long)half);
        return NULL;
    }
    for (int64_t k = 0; k < half; k++) w[k] = k >= 1 && k <= n - half ? 2.0 : 1.0;
    int64_t sizes[GF_MAX_RANK];
    int r = rank - dl;
    sizes[0] = half;
    for (int i = 1; i < r; i++) sizes[i] = 1;
    gf_tensor *t = gf_from_data(w, sizes, r, GF_F64, dev);
    free(w);
    gf_tensor *c = t ? gf_to_dtype(t, dt) : NULL;
    gf_tensor_release(t);
    return c;
}

static gf_status c2r_backward(gf_node *n, gf_tensor *const *grads, gf_tensor **out) {
    const fft_ctx *c = GF_NODE_CTX(n, fft_ctx);
    gf_tensor *g = grads[0];
    int dl = c->dims[c->nd - 1];
    int saved = gf__scope_suspend();
    gf_tensor *gi = gf__fft_r2c(g, c->dims, c->nd, c->scale), *r = gi;
    if (gi && c->last_n > c->half) {
        gf_tensor *w = doubling_weights(c->half, c->last_n, dl, g->rank, g->dtype,
                                        gf_tensor_device(g));
        r = w ? gf_mul(gi, w) : NULL;
        gf_tensor_release(w);
        gf_tensor_release(gi);
    }
    gf__scope_resume(saved);
    if (!r) return gf__status();
    out[0] = r;
    return GF_OK;
}

gf_status gf__fft_record_c2r(const gf_tensor *x, gf_tensor *y, const int *dims, int nd,
                             double scale) {
    if (gf__fw_fft_c2r(x, y, dims, nd, scale) != GF_OK) return gf__status();
    fft_ctx *c = record("FftC2RBackward", c2r_backward, x, y, dims, nd, scale);
    if (c) {
        c->last_n = y->sizes[dims[nd - 1]];
        c->half = x->sizes[dims[nd - 1]];
    }
    return GF_OK;
}
