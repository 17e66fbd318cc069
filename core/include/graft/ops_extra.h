/* SPDX-License-Identifier: BSD-3-Clause */
/* graft/ops_extra.h — more elementwise ops with PyTorch's names, semantics
 * and defaults: activations (hardtanh, relu6, hardsigmoid, mish, logsigmoid,
 * softsign, selu, celu), remainder / fmod, lerp, addcmul / addcdiv, clamp
 * with tensor bounds, the float predicates (isnan ...), nan_to_num, trunc /
 * frac, log2 / log10 / exp2 and tan / sinh / cosh / asinh / acosh / atanh.
 *
 * Conventions of graft/ops.h: new references, borrowed inputs, strided and
 * broadcast inputs, one device, NULL on error with a message naming the op
 * (gf_hardtanh: ...). Every op is composed in the core from ops of
 * graft/ops.h (no device kernel of its own), so it runs on every device those
 * run on; gradients of every order come from those ops' rules, except for
 * remainder, fmod and gf_clamp_tensor, whose backward (written with graft
 * ops, so double backward works) follows PyTorch's formula.
 *
 * Dtypes. "Float functions" compute integer and bool inputs in f32, as
 * PyTorch's torch.exp does (log2, log10, exp2, tan, sinh, cosh, asinh, acosh,
 * atanh, softsign). PyTorch refuses integer inputs of hardsigmoid, mish,
 * logsigmoid, selu and celu; graft computes them in f32, as it does for
 * gf_elu and gf_silu. Where an op keeps integer dtypes it says so. */
#ifndef GRAFT_OPS_EXTRA_H
#define GRAFT_OPS_EXTRA_H

#include "graft/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- activations */
/* torch.nn.functional.hardtanh (defaults min_val -1, max_val 1): x clamped
 * to [min_val, max_val]. The gradient is 0 at the bounds themselves and
 * outside, the incoming one strictly inside and at NaN (PyTorch's
 * hardtanh_backward; gf_clamp gives 0 at NaN). Integer x keeps its dtype with the
 * bounds truncated toward zero (as PyTorch); bool fails DTYPE. min_val >
 * max_val or a NaN bound fails INVALID. */
GF_API gf_tensor *gf_hardtanh(const gf_tensor *x, double min_val, double max_val);
/* torch.nn.functional.relu6: hardtanh(x, 0, 6), gradient 0 at 0 and 6. */
GF_API gf_tensor *gf_relu6(const gf_tensor *x);
/* torch.nn.functional.hardsigmoid: relu6(x + 3) / 6; gradient 1/6 strictly
 * inside (-3, 3), 0 elsewhere (at -3 and 3 too, as PyTorch). */
GF_API gf_tensor *gf_hardsigmoid(const gf_tensor *x);
/* torch.nn.functional.mish: x tanh(softplus(x)), softplus taken as
 * log1p(exp(x)) for x < 0 and x + log1p(exp(-x)) for x >= 0 (no overflow,
 * no threshold, smooth at 0). */
GF_API gf_tensor *gf_mish(const gf_tensor *x);
/* torch.nn.functional.logsigmoid: log(sigmoid(x)) = -softplus(-x), taken as
 * x - log1p(exp(x)) for x < 0 and -log1p(exp(-x)) for x >= 0: finite for
 * every finite x (x itself below about -37 in f64), smooth at 0. */
GF_API gf_tensor *gf_logsigmoid(const gf_tensor *x);
/* torch.nn.functional.softsign: x / (1 + |x|). */
GF_API gf_tensor *gf_softsign(const gf_tensor *x);
/* torch.selu: scale * elu(x, alpha) with PyTorch's alpha
 * 1.6732632423543772 and scale 1.0507009873554805 (gradient at 0: scale *
 * alpha, elu's left side, as PyTorch). */
GF_API gf_tensor *gf_selu(const gf_tensor *x);
/* torch.celu (default alpha 1.0): max(0, x) + min(0, alpha (exp(x / alpha)
 * - 1)) = alpha * elu(x / alpha, 1). alpha 0 or NaN fails INVALID. */
GF_API gf_tensor *gf_celu(const gf_tensor *x, double alpha);

/* ---- remainder and fmod. Operands broadcast and promote as gf_sub (two
 * bools fail DTYPE); the scalar forms follow the scalar rule of graft/ops.h
 * (a double divisor is floating, an int64_t one integer).
 * torch.remainder: Python's sign convention, the result has the sign of the
 * divisor (a - floor(a / b) b); torch.fmod: C's, the sign of the dividend
 * (a - trunc(a / b) b). Integers are exact (an integer division by zero
 * fails INVALID, PyTorch's ZeroDivisionError; INT_MIN by -1 gives 0).
 * Floats are exact, as C's fmod (results are exactly representable), over
 * the whole range: the quotient is taken in pieces of at most 2^48 when
 * |a / b| is larger (one device-to-host read of the largest ratio per call;
 * f32 is computed in f64 where the device stores f64). Division by zero,
 * an infinite dividend or a NaN gives NaN; an infinite divisor gives a for
 * fmod, and for remainder a, or b when a and b differ in sign (C's fmod then
 * PyTorch's sign fix). Gradients as PyTorch: d/da = 1, d/db = -trunc(a / b)
 * for fmod and -floor(a / b) for remainder. */
GF_API gf_tensor *gf_remainder(const gf_tensor *a, const gf_tensor *b);
GF_API gf_tensor *gf_remainder_scalar(const gf_tensor *a, double b);
GF_API gf_tensor *gf_remainder_scalar_int(const gf_tensor *a, int64_t b);
GF_API gf_tensor *gf_fmod(const gf_tensor *a, const gf_tensor *b);
GF_API gf_tensor *gf_fmod_scalar(const gf_tensor *a, double b);
GF_API gf_tensor *gf_fmod_scalar_int(const gf_tensor *a, int64_t b);

/* ---- lerp, addcmul, addcdiv, clamp with tensor bounds */
/* torch.lerp: start + weight (end - start), computed as PyTorch does
 * (end - (end - start)(1 - weight) where |weight| >= 0.5, so weight 1 gives
 * end exactly). start, end (and weight) must share one float dtype (DTYPE
 * otherwise, as PyTorch) and broadcast together. */
GF_API gf_tensor *gf_lerp(const gf_tensor *start, const gf_tensor *end, const gf_tensor *weight);
GF_API gf_tensor *gf_lerp_scalar(const gf_tensor *start, const gf_tensor *end, double weight);
/* torch.addcmul (default value 1): self + value * tensor1 * tensor2, the three
 * broadcast and promote together. Integer operands keep their dtype when
 * value is integral; a fractional value with only integer operands fails
 * INVALID (PyTorch refuses any float value there). */
GF_API gf_tensor *gf_addcmul(const gf_tensor *self, const gf_tensor *tensor1,
                             const gf_tensor *tensor2, double value);
/* torch.addcdiv (default value 1): self + value * tensor1 / tensor2 (true
 * division). tensor1 and tensor2 both integer fails DTYPE, as PyTorch. */
GF_API gf_tensor *gf_addcdiv(const gf_tensor *self, const gf_tensor *tensor1,
                             const gf_tensor *tensor2, double value);
/* torch.clamp(x, min=Tensor, max=Tensor): minimum(maximum(x, min), max);
 * either bound may be NULL (both NULL fails INVALID); all broadcast and
 * promote together (integers exact); NaN in any propagates; where min > max
 * the result is max. Gradients as PyTorch 2.x: x gets it where min < x <
 * max, min where x < min <= max, max where x > max >= min or max < min; a
 * tie x == min < max (or min < max == x) gives half to x and half to the
 * bound; x == min == max gives all to x. With one bound the tie splits too. */
GF_API gf_tensor *gf_clamp_tensor(const gf_tensor *x, const gf_tensor *min,
                                  const gf_tensor *max);

/* ---- predicates and nan_to_num. The predicates give bool, false for every
 * element of an integer or bool x (isfinite: true). */
GF_API gf_tensor *gf_isnan(const gf_tensor *x);
GF_API gf_tensor *gf_isinf(const gf_tensor *x);
GF_API gf_tensor *gf_isposinf(const gf_tensor *x);
GF_API gf_tensor *gf_isneginf(const gf_tensor *x);
GF_API gf_tensor *gf_isfinite(const gf_tensor *x);
/* torch.nan_to_num (defaults nan 0.0, posinf / neginf None): NaN becomes nan,
 * +inf posinf, -inf neginf; pass NAN for posinf / neginf for PyTorch's None
 * (the largest / lowest finite value of x's dtype). The values are cast to
 * x's dtype. Integer and bool x: a copy. Gradient: the incoming one where x
 * is finite, 0 where it was replaced (as PyTorch). */
GF_API gf_tensor *gf_nan_to_num(const gf_tensor *x, double nan, double posinf, double neginf);

/* ---- rounding */
/* torch.trunc: rounds toward zero (-0.5 gives -0.0); integers unchanged
 * (a copy, as PyTorch). Gradient 0. */
GF_API gf_tensor *gf_trunc(const gf_tensor *x);
/* torch.frac: x - trunc(x), the sign of x (inf gives NaN, as PyTorch's
 * CPU kernel). Float only (DTYPE otherwise, as PyTorch). Gradient 1. */
GF_API gf_tensor *gf_frac(const gf_tensor *x);

/* ---- exponentials, logarithms, trigonometric and hyperbolic. Float
 * functions (integer and bool inputs give f32). f32 is accurate to about
 * 1 ulp, f64 to a few ulp, with the exceptions noted. */
/* log(x) / ln 2, exact at powers of two (f32 computed in f64 where the
 * device stores f64). */
GF_API gf_tensor *gf_log2(const gf_tensor *x);
/* log(x) / ln 10, exact at powers of ten. */
GF_API gf_tensor *gf_log10(const gf_tensor *x);
/* 2^x: 2^round(x) exactly times exp((x - round(x)) ln 2), so the error
 * does not grow with |x|; exact at integers. */
GF_API gf_tensor *gf_exp2(const gf_tensor *x);
/* sin(x) / cos(x) (a few ulp wherever sin and cos are accurate). */
GF_API gf_tensor *gf_tan(const gf_tensor *x);
/* (expm1(x) - expm1(-x)) / 2, exp(|x| / 2)^2 / 2 with x's sign for |x| > 20
 * (so no cancellation at 0 and no early overflow). */
GF_API gf_tensor *gf_sinh(const gf_tensor *x);
/* (exp(x) + exp(-x)) / 2, exp(|x| / 2)^2 / 2 for |x| > 20. */
GF_API gf_tensor *gf_cosh(const gf_tensor *x);
/* sign(x) log1p(|x| + x^2 / (1 + sqrt(1 + x^2))), sign(x) (log|x| + ln 2)
 * for |x| > 2^28 (an odd function, gradient 1 at 0). */
GF_API gf_tensor *gf_asinh(const gf_tensor *x);
/* log1p(t + sqrt(t) sqrt(t + 2)) with t = x - 1, log(x) + ln 2 for x > 2^28:
 * NaN below 1, gradient inf at 1 (as PyTorch). */
GF_API gf_tensor *gf_acosh(const gf_tensor *x);
/* (log1p(x) - log1p(-x)) / 2: +-inf at +-1 (gradient inf), NaN beyond. */
GF_API gf_tensor *gf_atanh(const gf_tensor *x);

#ifdef __cplusplus
}
#endif
#endif
