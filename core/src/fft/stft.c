/* SPDX-License-Identifier: BSD-3-Clause */
/* stft.c — torch.stft and torch.istft (graft/fft.h), composed of graft ops:
 *   stft:  pad (center), unfold into frames, multiply by the window, rfft
 *          or fft of each frame, transpose to [B, n_freq, n_frames];
 *   istft: irfft or ifft of each frame, multiply by the window,
 *          overlap-add (index_add), divide by the overlap-added squared
 *          window, trim or pad to the length.
 * Every step is a differentiable op, so both are differentiable in the
 * signal and the window, to any order. The arguments follow
 * aten/src/ATen/native/SpectralOps.cpp, messages say what to change. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../autograd/ag_internal.h"
#include "fft_internal.h"

/* hop and win defaults and ranges, and the window's shape and device. */
static bool frame_args(int64_t n_fft, int64_t *hop, int64_t *win, const gf_tensor *window,
                       const gf_tensor *x, const char *op) {
    if (n_fft <= 0) {
        gf__error(GF_ERR_INVALID, "%s: n_fft is %lld; it must be at least 1", op,
                  (long long)n_fft);
        return false;
    }
    if (*hop == GF_FFT_SIZE_DEFAULT) *hop = n_fft / 4;
    if (*hop <= 0) {
        gf__error(GF_ERR_INVALID, "%s: hop_length is %lld; it must be at least 1 (the default "
                  "n_fft / 4 is 0 for n_fft below 4: give hop_length)", op, (long long)*hop);
        return false;
    }
    if (*win == GF_FFT_SIZE_DEFAULT) *win = n_fft;
    if (*win <= 0 || *win > n_fft) {
        gf__error(GF_ERR_INVALID, "%s: win_length is %lld; it must be in [1, n_fft = %lld]", op,
                  (long long)*win, (long long)n_fft);
        return false;
    }
    if (window) {
        if (window->rank != 1 || window->sizes[0] != *win) {
            char s[96];
            gf__error(GF_ERR_SHAPE, "%s: the window has sizes %s; it must be 1-D of win_length "
                      "= %lld elements", op, gf__shape_str(window->sizes, window->rank, s,
                                                           sizeof s), (long long)*win);
            return false;
        }
        if (!gf__same_device(x, window, op)) return false;
        if (!gf__dtype_differentiable(window->dtype) || window->dtype == GF_F16 ||
            window->dtype == GF_BF16) {
            gf__error(GF_ERR_DTYPE, "%s: the window is %s; it must be f32, f64, c64 or c128", op,
                      gf_dtype_name(window->dtype));
            return false;
        }
    }
    return true;
}

/* The window centred in n_fft samples with zeros, ones when window is NULL
 * (dtype dt then); NULL with no error when no window is needed (none given,
 * win = n_fft, and !always). In the open scope. */
static gf_tensor *full_window(const gf_tensor *window, int64_t win, int64_t n_fft, gf_dtype dt,
                              gf_device *dev, bool always) {
    if (!window && win == n_fft && !always) return NULL;
    gf_tensor *w = window ? (gf_tensor *)window : gf_ones(&win, 1, dt, dev);
    if (w && win < n_fft) {
        int64_t left = (n_fft - win) / 2, pad[2] = {left, n_fft - win - left};
        w = gf_pad(w, pad, 2, GF_PAD_CONSTANT, 0.0);
    }
    return w;
}

gf_tensor *gf_stft(const gf_tensor *x, int64_t n_fft, const gf_stft_opts *opts) {
    const char *op = "gf_stft";
    gf_stft_opts o = GF_STFT_OPTS_DEFAULT;
    if (opts) {
        if (gf__opts_check(op, "gf_stft_opts", "GF_STFT_OPTS_DEFAULT", opts->init) != GF_OK)
            return NULL;
        o = *opts;
    }
    if (!x) {
        gf__null_arg(op, "x");
        return NULL;
    }
    if (x->rank != 1 && x->rank != 2) {
        gf__error(GF_ERR_SHAPE, "%s: x has rank %d; it must be 1-D [L] or 2-D [B, L]", op,
                  x->rank);
        return NULL;
    }
    int64_t hop = o.hop_length, win = o.win_length;
    if (!frame_args(n_fft, &hop, &win, o.window, x, op)) return NULL;
    bool cx = gf_dtype_is_complex(x->dtype) || (o.window && gf_dtype_is_complex(o.window->dtype));
    if (o.onesided < -1 || o.onesided > 1) {
        gf__error(GF_ERR_INVALID, "%s: onesided is %d; it must be -1 (the default), 0 or 1", op,
                  o.onesided);
        return NULL;
    }
    bool onesided = o.onesided == -1 ? !cx : o.onesided == 1;
    if (onesided && cx) {
        gf__error(GF_ERR_INVALID, "%s: onesided output needs a real x and window (this x or "
                  "window is complex): set onesided = 0", op);
        return NULL;
    }
    gf_scope_begin();
    gf_tensor *xf = gf__fft_to_float(x, op), *y = NULL;
    gf_tensor *xb = xf ? gf_reshape(xf, (const int64_t[]){x->rank == 1 ? 1 : x->sizes[0], -1}, 2)
                       : NULL;
    gf_tensor_release(xf);
    bool grads = gf_is_grad_enabled() && (gf_tensor_requires_grad(x) ||
                                          (o.window && gf_tensor_requires_grad(o.window)));
    if (xb && o.center) {
        int64_t p = n_fft / 2, pad[2] = {p, p}, L = xb->sizes[1];
        if (!grads && o.pad_mode == GF_PAD_REFLECT && p > 0 && L > p) {
            /* the two mirrored ends around x: one copy of x, not a gather
             * through an index of every padded sample */
            const int d1[1] = {1};
            gf_tensor *lo = gf_narrow(xb, 1, 1, p), *hi = gf_narrow(xb, 1, L - 1 - p, p);
            lo = lo ? gf_flip(lo, d1, 1) : NULL;
            hi = hi ? gf_flip(hi, d1, 1) : NULL;
            gf_tensor *parts[3] = {lo, xb, hi};
            xb = lo && hi ? gf_cat(parts, 3, 1) : NULL;
        } else {
            xb = gf_pad(xb, pad, 2, o.pad_mode, 0.0);
        }
    }
    if (xb && xb->sizes[1] < n_fft) {
        gf__error(GF_ERR_SHAPE, "%s: n_fft is %lld but the %ssignal has only %lld samples; "
                  "n_fft must be at most its length", op, (long long)n_fft,
                  o.center ? "padded " : "", (long long)xb->sizes[1]);
        xb = NULL;
    }
    /* [B, T, n_fft]: without gradients, a view whose frames overlap (as
     * torch's unfold is), read once by the window's product; with them,
     * gf_unfold's copy, which has its rule. */
    gf_tensor *frames = NULL, *view = NULL;
    if (xb && !grads && (o.window || win < n_fft)) {
        int64_t nw = (xb->sizes[1] - n_fft) / hop + 1;
        const int64_t vs[3] = {xb->sizes[0], nw, n_fft};
        const int64_t vst[3] = {xb->strides[0], hop * xb->strides[1], xb->strides[1]};
        frames = view = gf__view(xb, vs, vst, 3, xb->offset);
    } else if (xb) {
        frames = gf_unfold(xb, 1, n_fft, hop);
    }
    if (frames) {
        gf_dtype wdt = gf_dtype_to_real(frames->dtype);
        gf_tensor *w = full_window(o.window, win, n_fft, wdt, frames->storage->device, false);
        if (w) frames = gf_mul(frames, w);
        else if (o.window || win < n_fft) frames = NULL;
    }
    gf_fft_norm norm = o.normalized ? GF_FFT_NORM_ORTHO : GF_FFT_NORM_BACKWARD;
    if (frames)
        y = onesided ? gf_rfft(frames, -1, -1, norm) : gf_fft(frames, -1, -1, norm);
    if (y) y = gf_transpose(y, 1, 2);
    if (y && x->rank == 1) y = gf_squeeze(y, 0);
    if (y && !o.return_complex) y = gf_view_as_real(y);
    gf_tensor_release(view); /* not in the scope; the product holds nothing of it */
    y = gf_scope_keep(y);
    gf_scope_end();
    return gf__ret(y);
}

gf_tensor *gf_istft(const gf_tensor *X, int64_t n_fft, const gf_istft_opts *opts) {
    const char *op = "gf_istft";
    gf_istft_opts o = GF_ISTFT_OPTS_DEFAULT;
    if (opts) {
        if (gf__opts_check(op, "gf_istft_opts", "GF_ISTFT_OPTS_DEFAULT", opts->init) != GF_OK)
            return NULL;
        o = *opts;
    }
    if (!X) {
        gf__null_arg(op, "X");
        return NULL;
    }
    if (!gf_dtype_is_complex(X->dtype)) {
        gf__error(GF_ERR_DTYPE, "%s: X is %s; it must be complex, as gf_stft returns it (a "
                  "[..., 2] real tensor of parts becomes complex with gf_view_as_complex)", op,
                  gf_dtype_name(X->dtype));
        return NULL;
    }
    if (X->rank != 2 && X->rank != 3) {
        gf__error(GF_ERR_SHAPE, "%s: X has rank %d; it must be [n_freq, n_frames] or [B, n_freq, "
                  "n_frames]", op, X->rank);
        return NULL;
    }
    int64_t hop = o.hop_length, win = o.win_length;
    if (!frame_args(n_fft, &hop, &win, o.window, X, op)) return NULL;
    int64_t nfreq = X->sizes[X->rank - 2], nframes = X->sizes[X->rank - 1];
    if (o.onesided < -1 || o.onesided > 1) {
        gf__error(GF_ERR_INVALID, "%s: onesided is %d; it must be -1 (the default), 0 or 1", op,
                  o.onesided);
        return NULL;
    }
    bool onesided = o.onesided == -1 ? nfreq != n_fft : o.onesided == 1;
    int64_t want = onesided ? n_fft / 2 + 1 : n_fft;
    if (nfreq != want) {
        gf__error(GF_ERR_SHAPE, "%s: X has %lld frequency bins; a %s stft of n_fft = %lld has "
                  "%lld", op, (long long)nfreq, onesided ? "onesided" : "full",
                  (long long)n_fft, (long long)want);
        return NULL;
    }
    if (o.return_complex && onesided) {
        gf__error(GF_ERR_INVALID, "%s: a complex output needs all n_fft bins; a onesided X "
                  "gives a real signal (return_complex = false)", op);
        return NULL;
    }
    if (!o.return_complex && o.window && gf_dtype_is_complex(o.window->dtype)) {
        gf__error(GF_ERR_INVALID, "%s: a complex window gives a complex signal: set "
                  "return_complex = true", op);
        return NULL;
    }
    if (o.length < 0 && o.length != GF_FFT_SIZE_DEFAULT) {
        gf__error(GF_ERR_INVALID, "%s: length is %lld; it must be >= 0, or GF_FFT_SIZE_DEFAULT",
                  op, (long long)o.length);
        return NULL;
    }
    int64_t span, expected;
    if (nframes < 1) {
        gf__error(GF_ERR_SHAPE, "%s: X has no frames (n_frames is 0)", op);
        return NULL;
    }
    if (!gf__mul_ok(hop, nframes - 1, &span) || !gf__add_ok(span, n_fft, &expected)) {
        gf__error(GF_ERR_OVERFLOW, "%s: the signal length overflows", op);
        return NULL;
    }
    int64_t start = o.center ? n_fft / 2 : 0;
    int64_t end = o.length != GF_FFT_SIZE_DEFAULT ? start + o.length
                  : o.center                      ? expected - n_fft / 2
                                                  : expected;
    int64_t stop = end < expected ? end : expected;
    int64_t count;
    if (!gf__mul_ok(nframes, n_fft, &count)) {
        gf__error(GF_ERR_OVERFLOW, "%s: n_frames * n_fft overflows", op);
        return NULL;
    }
    int64_t *idx = malloc((size_t)count * sizeof *idx);
    if (!idx) {
        gf__error(GF_ERR_OUT_OF_MEMORY, "%s: no memory for %lld indices", op, (long long)count);
        return NULL;
    }
    for (int64_t t = 0; t < nframes; t++)
        for (int64_t j = 0; j < n_fft; j++) idx[t * n_fft + j] = t * hop + j;

    gf_scope_begin();
    gf_device *dev = X->storage->device;
    gf_tensor *index = gf_from_data(idx, &count, 1, GF_I64, dev);
    free(idx);
    int64_t B = X->rank == 3 ? X->sizes[0] : 1;
    gf_tensor *xb = gf_reshape(X, (const int64_t[]){B, nfreq, nframes}, 3);
    if (xb && o.normalized) xb = gf_mul_scalar(xb, sqrt((double)n_fft));
    if (xb && !onesided && !o.return_complex) { /* a real signal: its onesided half */
        xb = gf_narrow(xb, 1, 0, n_fft / 2 + 1);
        onesided = true;
    }
    gf_tensor *xt = xb ? gf_transpose(xb, 1, 2) : NULL; /* [B, T, n_freq] */
    gf_tensor *frames = !xt              ? NULL
                        : o.return_complex ? gf_ifft(xt, n_fft, -1, GF_FFT_NORM_BACKWARD)
                                           : gf_irfft(xt, n_fft, -1, GF_FFT_NORM_BACKWARD);
    gf_tensor *w = frames ? full_window(o.window, win, n_fft, gf_dtype_to_real(frames->dtype),
                                        dev, true)
                          : NULL;
    gf_tensor *y = NULL, *env = NULL;
    if (w && index) {
        frames = gf_mul(frames, w);
        gf_tensor *zy = gf_zeros((const int64_t[]){B, expected}, 2, frames ? frames->dtype : GF_F32,
                                 dev);
        gf_tensor *flat = frames ? gf_reshape(frames, (const int64_t[]){B, count}, 2) : NULL;
        y = zy && flat ? gf_index_add(zy, 1, index, flat) : NULL;
        gf_tensor *w2 = gf_mul(w, w);
        gf_tensor *w2t = w2 ? gf_expand(w2, (const int64_t[]){nframes, n_fft}, 2) : NULL;
        gf_tensor *w2f = w2t ? gf_reshape(w2t, &count, 1) : NULL;
        gf_tensor *ze = w2 ? gf_zeros(&expected, 1, w2->dtype, dev) : NULL;
        env = ze && w2f ? gf_index_add(ze, 0, index, w2f) : NULL;
    }
    if (y && env) {
        y = gf_narrow(y, 1, start, stop - start);
        env = gf_narrow(env, 0, start, stop - start);
    }
    if (y && env && stop > start) {
        /* the nonzero overlap-add condition, as torch checks it */
        gf_tensor *lo = gf_amin(gf_abs(env), NULL, 0, false);
        double m = 0;
        if (!lo || gf_tensor_item(lo, &m) != GF_OK) {
            y = NULL;
        } else if (!(m >= 1e-11)) {
            gf__error(GF_ERR_INVALID, "%s: the overlap-added squared window is %g somewhere in "
                      "the output (below 1e-11), so the signal cannot be recovered there (the "
                      "nonzero overlap-add condition); use a window and hop_length whose frames "
                      "overlap everywhere, e.g. a Hann window with hop_length <= win_length / 2",
                      op, m);
            y = NULL;
        }
    }
    if (y && env) y = gf_div(y, env);
    if (y && end > expected) {
        int64_t pad[2] = {0, end - expected};
        y = gf_pad(y, pad, 2, GF_PAD_CONSTANT, 0.0);
    }
    if (y && X->rank == 2) y = gf_squeeze(y, 0);
    y = gf_scope_keep(y);
    gf_scope_end();
    return gf__ret(y);
}
