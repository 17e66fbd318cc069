/* SPDX-License-Identifier: BSD-3-Clause */
/* graft/complex.h — complex tensors (GF_C64, GF_C128), with PyTorch's
 * semantics.
 *
 * Storage: interleaved (re, im) pairs, as C99's float complex / double
 * complex, on devices whose plugin stores them (the reference and cpu_onednn
 * plugins do; on a device that does not, creating such a tensor fails with
 * GF_ERR_DTYPE naming the device and a device that stores the dtype).
 *
 * Promotion: a complex dtype with a real one gives the complex dtype whose
 * parts have the promoted real dtype (c64 with f64 -> c128; c64 with f32,
 * an integer or bool -> c64). The elementwise arithmetic ops (add, sub, mul,
 * div, pow, neg, reciprocal, square, exp, log, sqrt, rsqrt, sin, cos, tanh,
 * sinh, cosh, sigmoid, pow_scalar), sum / mean / prod, matmul, eq / ne,
 * isnan / isfinite, where, masked_fill, the views and the index ops take
 * complex tensors. Ops that need an ordering (lt, le, gt, ge, maximum,
 * minimum, max, min, argmax, sort, clamp, relu and the other activations
 * defined by comparisons) fail with GF_ERR_DTYPE naming the op and the
 * dtype, as PyTorch refuses them. gf_to_dtype from a complex to a real
 * dtype fails too: use gf_real, gf_imag or gf_abs.
 *
 * Autograd follows PyTorch's convention (docs/autograd.md, "Complex
 * numbers"): the gradient of a real loss L with respect to z is the
 * conjugate Wirtinger derivative scaled by 2, dL/dRe(z) + i dL/dIm(z), so
 * sum(|z|^2) gives 2z. Every function below is differentiable. */
#ifndef GRAFT_COMPLEX_H
#define GRAFT_COMPLEX_H

#include "graft/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* re + i im, broadcast, of the complex dtype of their promoted (real,
 * floating) dtype. Returns a new tensor. Fails: DTYPE (a complex or
 * non-floating input, as torch.complex), SHAPE, DEVICE. */
GF_API gf_tensor *gf_complex(const gf_tensor *re, const gf_tensor *im);
/* abs (cos angle + i sin angle), as torch.polar. Fails: as gf_complex. */
GF_API gf_tensor *gf_polar(const gf_tensor *abs, const gf_tensor *angle);

/* The views below share z's storage and version counter (an in-place write
 * through one is seen by the other) and copy nothing. Return new
 * references. In-place writes through them while their base requires grad
 * in grad mode fail with GF_ERR_AUTOGRAD (gf_clone first). */
/* z's sizes plus a last dim of 2 (re, im), of z's real dtype. Fails:
 * DTYPE (z not complex). */
GF_API gf_tensor *gf_view_as_real(const gf_tensor *z);
/* The inverse: t real (f32 or f64) with a last dim of size 2 and stride 1,
 * every other stride even and an even offset. Fails: DTYPE, SHAPE (the
 * message says which condition failed; gf_contiguous makes any t fit). */
GF_API gf_tensor *gf_view_as_complex(const gf_tensor *t);
/* The real / imaginary parts of z, as views of z's real dtype. gf_real of
 * a real tensor is t itself (a new reference); gf_imag of a real tensor
 * fails with DTYPE, as in PyTorch. */
GF_API gf_tensor *gf_real(const gf_tensor *z);
GF_API gf_tensor *gf_imag(const gf_tensor *z);

/* The complex conjugate, materialised: a new tensor (graft has no lazy
 * conjugate bit). A real t gives a new reference to t. Fails: only as any
 * op does (out of memory, the device). */
GF_API gf_tensor *gf_conj(const gf_tensor *z);
/* The argument atan2(im, re) in (-pi, pi], of z's real dtype; for a real
 * tensor, 0 for x >= 0 and pi for x < 0 (as torch.angle). Returns a new
 * tensor. Fails: as the elementwise ops (DEVICE, DTYPE for f16/bf16). */
GF_API gf_tensor *gf_angle(const gf_tensor *z);
/* gf_abs (ops.h) of a complex z is |z|, of z's real dtype; its gradient is
 * g z / |z|, 0 at z = 0. */

/* Complex standard normal: re and im each N(0, 1/2), so E|z|^2 = 1, as
 * torch.randn with a complex dtype. dtype: GF_C64 or GF_C128. */
GF_API gf_tensor *gf_randn_complex(const int64_t *sizes, int rank, gf_dtype dtype,
                                   gf_device *dev);

/* The value of a one-element tensor as re, im (a real tensor gives im = 0).
 * Either pointer may be NULL. Fails: INVALID (not one element). */
GF_API gf_status gf_tensor_item_complex(const gf_tensor *t, double *re, double *im);
/* The element at a multi-index as re, im (slow: for tests). */
GF_API gf_status gf_tensor_get_complex(const gf_tensor *t, const int64_t *index, double *re,
                                       double *im);

/* Writes the values of t, PyTorch-style, into buf (always terminated,
 * truncated with "..." when it does not fit): "[[1, 2], [3, 4]]" for a
 * real tensor, "[1+2j, -0.5-1j]" for a complex one, then ", dtype=c64".
 * Returns the text, buf. Fails (NULL, error set): INVALID (NULL buf or a
 * len < 8). */
GF_API const char *gf_tensor_format(const gf_tensor *t, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
