/* SPDX-License-Identifier: BSD-3-Clause */
/* graft/fft.h — discrete Fourier transforms, as torch.fft.
 *
 * Every transform takes the arguments of its torch.fft namesake, and every
 * value torch accepts can be written:
 *   n      a signal length, or GF_FFT_SIZE_DEFAULT (torch's None): the
 *          input's size along dim (for irfft and hfft: 2 (m - 1), m the
 *          input's size). A length above the input's size pads with zeros,
 *          a shorter one trims, along that dim, before the transform.
 *   s, n_s the lengths of the n-D forms; s == NULL is torch's None (the
 *          input's sizes along dims); an entry GF_FFT_SIZE_DEFAULT is
 *          torch's -1 (that dim's input size). s != NULL with n_s == 0 is
 *          an empty list.
 *   dims, n_dims  the dims of the n-D forms; dims == NULL is torch's None:
 *          the last n_s dims when s is given, else every dim (fft2 and the
 *          other 2-D forms: the last two, {-2, -1}). Negative dims count
 *          from the end; they must be distinct.
 *   norm   GF_FFT_NORM_BACKWARD (torch's default), ORTHO or FORWARD.
 *
 * Dtypes: integer and bool inputs are converted to f32 first (torch's
 * default dtype), f16 and bf16 are refused. fft, ifft, fftn, ifftn, irfft,
 * hfft and their 2-D forms take real or complex inputs (a real input is
 * transformed as complex with zero imaginary parts); rfft and ihfft take
 * real inputs only. The results are c64 or c128 (f32 or f64 for irfft,
 * hfft and irfftn), of the input's precision.
 *
 * Autograd: every transform is differentiable (the gradients are
 * torch's, docs/autograd.md "Fourier transforms"), to any order.
 *
 * Devices: the transforms run as the device op FFT (abi/graft_ops.def); a
 * device whose plugin lacks it runs them on the fallback device, as for any
 * other op. Complex results need a device that stores complex dtypes
 * (graft/complex.h).
 *
 * Every function returns a new tensor (Returns a new reference) or NULL
 * with the error set. Fails: INVALID (n or an entry of s is 0 or below
 * other than GF_FFT_SIZE_DEFAULT, a bad norm, s and dims of different
 * lengths, repeated dims, NULL arrays with a nonzero count, a default length
 * of 0 for irfft / hfft), INDEX (a dim out of range), SHAPE (more lengths
 * than dims in the input, a 0-dim input to a 1-D form), DTYPE (a complex
 * input to rfft, ihfft or rfftn; f16, bf16), DEVICE. */
#ifndef GRAFT_FFT_H
#define GRAFT_FFT_H

#include "graft/shape.h"
#include "graft/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Which direction is scaled, and by what (n: the product of the signal
 * lengths): BACKWARD leaves the forward transforms (fft, rfft, hfft)
 * unscaled and divides the inverse ones (ifft, irfft, ihfft) by n; FORWARD
 * is the reverse; ORTHO scales both by 1/sqrt(n). */
typedef enum gf_fft_norm {
    GF_FFT_NORM_BACKWARD = 0,
    GF_FFT_NORM_ORTHO = 1,
    GF_FFT_NORM_FORWARD = 2
} gf_fft_norm;

/* As n, or an entry of s: the input's size (torch's None, or -1 in s). */
#define GF_FFT_SIZE_DEFAULT (-1)

/* ---- one dim (dim: which; -1 is the last) */
/* torch.fft.fft: y[k] = sum_j x[j] exp(-2 pi i jk / n), complex out. */
GF_API gf_tensor *gf_fft(const gf_tensor *x, int64_t n, int dim, gf_fft_norm norm);
/* torch.fft.ifft: the inverse of gf_fft (exp(+2 pi i jk / n), scaled). */
GF_API gf_tensor *gf_ifft(const gf_tensor *x, int64_t n, int dim, gf_fft_norm norm);
/* torch.fft.rfft: the fft of a real x, bins 0 .. n/2 only (the others are
 * their conjugates). Fails: DTYPE for a complex x (use gf_fft). */
GF_API gf_tensor *gf_rfft(const gf_tensor *x, int64_t n, int dim, gf_fft_norm norm);
/* torch.fft.irfft: the real signal of length n (default 2 (m - 1)) whose
 * rfft is x (bins 0 .. n/2; x is trimmed or padded to n/2 + 1 first). The
 * imaginary parts of bin 0 and, for an even n, of bin n/2 are ignored. */
GF_API gf_tensor *gf_irfft(const gf_tensor *x, int64_t n, int dim, gf_fft_norm norm);
/* torch.fft.hfft: the fft of a signal with Hermitian symmetry given by its
 * first half x; real out of length n (default 2 (m - 1)). */
GF_API gf_tensor *gf_hfft(const gf_tensor *x, int64_t n, int dim, gf_fft_norm norm);
/* torch.fft.ihfft: the inverse of gf_hfft; a real x, bins 0 .. n/2 out.
 * Fails: DTYPE for a complex x. */
GF_API gf_tensor *gf_ihfft(const gf_tensor *x, int64_t n, int dim, gf_fft_norm norm);

/* ---- several dims (s, dims: see the top of this file) */
GF_API gf_tensor *gf_fftn(const gf_tensor *x, const int64_t *s, int n_s, const int *dims,
                          int n_dims, gf_fft_norm norm);
GF_API gf_tensor *gf_ifftn(const gf_tensor *x, const int64_t *s, int n_s, const int *dims,
                           int n_dims, gf_fft_norm norm);
/* The last dim of dims is onesided (n/2 + 1 bins). Fails: DTYPE for a
 * complex x; INVALID when no dim is transformed (as torch). */
GF_API gf_tensor *gf_rfftn(const gf_tensor *x, const int64_t *s, int n_s, const int *dims,
                           int n_dims, gf_fft_norm norm);
/* The inverse of gf_rfftn: the last dim's length is the last entry of s,
 * by default 2 (m - 1). Fails: INVALID when no dim is transformed. */
GF_API gf_tensor *gf_irfftn(const gf_tensor *x, const int64_t *s, int n_s, const int *dims,
                            int n_dims, gf_fft_norm norm);
/* The 2-D forms: the n-D forms with dims == NULL meaning {-2, -1}. */
GF_API gf_tensor *gf_fft2(const gf_tensor *x, const int64_t *s, int n_s, const int *dims,
                          int n_dims, gf_fft_norm norm);
GF_API gf_tensor *gf_ifft2(const gf_tensor *x, const int64_t *s, int n_s, const int *dims,
                           int n_dims, gf_fft_norm norm);
GF_API gf_tensor *gf_rfft2(const gf_tensor *x, const int64_t *s, int n_s, const int *dims,
                           int n_dims, gf_fft_norm norm);
GF_API gf_tensor *gf_irfft2(const gf_tensor *x, const int64_t *s, int n_s, const int *dims,
                            int n_dims, gf_fft_norm norm);
/* torch.fft.hfftn: the n-D fft of a signal Hermitian in every dim of dims
 * given by its one-sided half in the last of them (m values; its output
 * length is the last entry of s, by default 2 (m - 1)); real out. The other
 * dims are full. Fails: INVALID when no dim is transformed. */
GF_API gf_tensor *gf_hfftn(const gf_tensor *x, const int64_t *s, int n_s, const int *dims,
                           int n_dims, gf_fft_norm norm);
/* torch.fft.ihfftn: the inverse of gf_hfftn: the n-D inverse fft of a real
 * x, one-sided (n/2 + 1 bins) in the last dim of dims. Fails: DTYPE for a
 * complex x (use gf_ifftn); INVALID when no dim is transformed. */
GF_API gf_tensor *gf_ihfftn(const gf_tensor *x, const int64_t *s, int n_s, const int *dims,
                            int n_dims, gf_fft_norm norm);
/* Their 2-D forms (dims == NULL meaning {-2, -1}). */
GF_API gf_tensor *gf_hfft2(const gf_tensor *x, const int64_t *s, int n_s, const int *dims,
                           int n_dims, gf_fft_norm norm);
GF_API gf_tensor *gf_ihfft2(const gf_tensor *x, const int64_t *s, int n_s, const int *dims,
                            int n_dims, gf_fft_norm norm);

/* ---- helpers */
/* torch.fft.fftfreq: the n sample frequencies of an fft of length n with
 * sample spacing d, [0, 1, .., (n - 1) / 2, -(n / 2), .., -1] / (d n), 1-D
 * of dtype (GF_F32 or GF_F64) on dev (NULL: the default device). Fails:
 * INVALID (n < 0), DTYPE. */
GF_API gf_tensor *gf_fftfreq(int64_t n, double d, gf_dtype dtype, gf_device *dev);
/* torch.fft.rfftfreq: the n / 2 + 1 frequencies of an rfft of length n. */
GF_API gf_tensor *gf_rfftfreq(int64_t n, double d, gf_dtype dtype, gf_device *dev);
/* torch.fft.fftshift: rolls each of dims (NULL: every dim) by half its size
 * (size / 2), so that frequency 0 is in the middle; gf_ifftshift undoes it
 * (rolls by (size + 1) / 2). A copy; differentiable. A dim listed twice is
 * rolled twice, as torch.roll does. Deviation: a 0-dim x gives a copy
 * (torch refuses it). Fails: INDEX (a dim out of range), INVALID (dims
 * NULL with n_dims > 0, n_dims above 8). */
GF_API gf_tensor *gf_fftshift(const gf_tensor *x, const int *dims, int n_dims);
GF_API gf_tensor *gf_ifftshift(const gf_tensor *x, const int *dims, int n_dims);

/* ---- short-time Fourier transform */
/* Options of gf_stft (torch.stft's keyword arguments). Start from
 * GF_STFT_OPTS_DEFAULT (GF_OPTS_INIT, graft/types.h) and change what
 * differs; NULL options are every default. */
typedef struct gf_stft_opts {
    uint32_t init;
    int64_t hop_length;      /* GF_FFT_SIZE_DEFAULT: n_fft / 4 */
    int64_t win_length;      /* GF_FFT_SIZE_DEFAULT: n_fft; at most n_fft */
    const gf_tensor *window; /* 1-D of win_length, centred in n_fft with
                                zeros; NULL: ones (a rectangular window) */
    bool center;             /* pad x by n_fft / 2 on both sides first */
    gf_pad_mode pad_mode;    /* how (center only): GF_PAD_REFLECT by default */
    bool normalized;         /* scale the frames' DFT by 1 / sqrt(n_fft) */
    int onesided;            /* -1: real x and window give bins 0 .. n_fft/2
                                only, complex ones every bin; 0 or 1 */
    bool return_complex;     /* false: view_as_real of the result */
} gf_stft_opts;
#define GF_STFT_OPTS_DEFAULT                                                                 \
    {.init = GF_OPTS_INIT, .hop_length = GF_FFT_SIZE_DEFAULT,                                \
     .win_length = GF_FFT_SIZE_DEFAULT, .window = NULL, .center = true,                      \
     .pad_mode = GF_PAD_REFLECT, .normalized = false, .onesided = -1, .return_complex = true}
/* torch.stft: x [L] or [B, L] (real or complex) cut into frames of n_fft
 * every hop_length, each multiplied by the window and transformed: out
 * [B?, n_freq, n_frames] complex (n_freq = n_fft / 2 + 1 onesided, else
 * n_fft; n_frames = 1 + (L' - n_fft) / hop, L' the padded length), or
 * [B?, n_freq, n_frames, 2] real without return_complex. Differentiable
 * in x and the window. Fails: SHAPE (x not 1-D or 2-D, n_fft above L',
 * a window of the wrong size), INVALID (n_fft, hop or win_length out of
 * range, onesided with a complex x or window, options not started from
 * GF_STFT_OPTS_DEFAULT; reflect padding of n_fft / 2 needs L > n_fft / 2),
 * DTYPE, DEVICE. */
GF_API gf_tensor *gf_stft(const gf_tensor *x, int64_t n_fft, const gf_stft_opts *opts);

/* Options of gf_istft (torch.istft's keyword arguments). */
typedef struct gf_istft_opts {
    uint32_t init;
    int64_t hop_length;      /* GF_FFT_SIZE_DEFAULT: n_fft / 4 */
    int64_t win_length;      /* GF_FFT_SIZE_DEFAULT: n_fft */
    const gf_tensor *window; /* as gf_stft's; NULL: ones */
    bool center;             /* the stft was centred: drop n_fft / 2 each side */
    bool normalized;         /* the stft was normalised */
    int onesided;            /* -1: from the bin count (n_fft / 2 + 1: onesided) */
    int64_t length;          /* GF_FFT_SIZE_DEFAULT: as the frames give; else
                                trimmed or zero-padded to it */
    bool return_complex;     /* a complex signal (the stft was not onesided) */
} gf_istft_opts;
#define GF_ISTFT_OPTS_DEFAULT                                                                \
    {.init = GF_OPTS_INIT, .hop_length = GF_FFT_SIZE_DEFAULT,                                \
     .win_length = GF_FFT_SIZE_DEFAULT, .window = NULL, .center = true, .normalized = false, \
     .onesided = -1, .length = GF_FFT_SIZE_DEFAULT, .return_complex = false}
/* torch.istft: the inverse of gf_stft by windowed overlap-add, divided by
 * the overlap-added squared window. X complex [B?, n_freq, n_frames]; out
 * real (complex with return_complex) [B?, length]. Differentiable in X and
 * the window. Fails: DTYPE (X real), SHAPE (X not 2-D or 3-D, a bin count
 * that fits neither onesided nor full, a window of the wrong size),
 * INVALID (as gf_stft; a window whose overlap-added square is below 1e-11
 * somewhere in the output: the nonzero overlap-add condition fails). */
GF_API gf_tensor *gf_istft(const gf_tensor *X, int64_t n_fft, const gf_istft_opts *opts);

#ifdef __cplusplus
}
#endif
#endif
