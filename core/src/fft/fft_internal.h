/* SPDX-License-Identifier: BSD-3-Clause */
/* fft_internal.h — the three transforms every torch.fft function is made
 * of (fft_ops.c), and their backward rules (fft_grad.c). Not installed.
 *
 * Each primitive launches the device op FFT once and records its node; the
 * backward rules call the primitives again, so gradients of any order are
 * transforms too. dims are normalised ([0, rank)), distinct, nd >= 1; for
 * r2c and c2r the last one is the onesided dim. */
#ifndef GRAFT_FFT_INTERNAL_H
#define GRAFT_FFT_INTERNAL_H

#include "../internal.h"

/* The DFT of complex x over dims, exponent sign + when inverse, every
 * element times scale. New reference, not in any scope; recorded. */
gf_tensor *gf__fft_c2c(const gf_tensor *x, const int *dims, int nd, bool inverse, double scale);
/* The forward DFT of real (f32, f64) x over dims, bins 0 .. n/2 of the
 * last dim listed. */
gf_tensor *gf__fft_r2c(const gf_tensor *x, const int *dims, int nd, double scale);
/* The inverse (sign +) DFT of complex x holding bins 0 .. last_n/2 of the
 * last dim listed, real out of length last_n there. */
gf_tensor *gf__fft_c2r(const gf_tensor *x, const int *dims, int nd, int64_t last_n,
                       double scale);

/* x as a floating or complex tensor: integers and bool to f32 (torch's
 * default dtype); f16 and bf16 are refused (DTYPE naming op). New
 * reference, not in any scope. */
gf_tensor *gf__fft_to_float(const gf_tensor *x, const char *op);

/* ---- autograd (fft_grad.c): record the node of each primitive; y is its
 * output, x its input. */
gf_status gf__fft_record_c2c(const gf_tensor *x, gf_tensor *y, const int *dims, int nd,
                             bool inverse, double scale);
gf_status gf__fft_record_r2c(const gf_tensor *x, gf_tensor *y, const int *dims, int nd,
                             double scale);
gf_status gf__fft_record_c2r(const gf_tensor *x, gf_tensor *y, const int *dims, int nd,
                             double scale);

#endif
