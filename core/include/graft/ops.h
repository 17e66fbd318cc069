/* SPDX-License-Identifier: BSD-3-Clause */
/* graft/ops.h — the forward op set. Every op returns a new reference (NULL on
 * error), takes borrowed inputs, accepts strided (non-contiguous) inputs, and
 * broadcasts binary inputs as NumPy/PyTorch do. Inputs must be on one device.
 * Common failures: INVALID (NULL), SHAPE, DTYPE, DEVICE, INDEX, UNSUPPORTED,
 * PLUGIN, OUT_OF_MEMORY.
 *
 * Type promotion of binary ops: bool < i32 < i64 < f32 < f64 (the result
 * takes the higher of the two).
 *
 * Scalars (PyTorch's rule for a tensor and a C++ Scalar). Every scalar
 * argument is either a `double` or an `int64_t` (the *_int forms), and its
 * C type, never its value, decides:
 *  - a double scalar is a floating scalar: with a float tensor the op runs
 *    in the tensor's dtype (f32 stays f32); with an integer or bool tensor
 *    it runs in f32, the default float dtype, whatever the value (i32 + 2.0
 *    is f32, bool * 3.0 is f32, clamp(i32, 0.0, 4.0) is f32);
 *  - an int64_t scalar is an integer scalar: it keeps an integer tensor's
 *    dtype (i32 + 2 is i32; a value that does not fit i32 fails OVERFLOW),
 *    gives i64 with a bool tensor (bool + 1 is i64), and takes a float
 *    tensor's dtype (f32 * 2 is f32);
 *  - comparisons (eq..ge) compare in that dtype and give bool: i64 x with
 *    the double 16777217.0 compares in f32 as PyTorch does; the _int forms
 *    compare integers exactly;
 *  - true division (div) of an integer result gives f32 either way.
 * In-place forms write into self only a result of self's kind or lower
 * (autograd.h): gf_add_scalar_(i32, 2.0) fails DTYPE (the result is f32),
 * gf_add_scalar_int_(i32, 2) works, gf_add_scalar_int_(bool, 1) fails (i64
 * into bool). Parameters that are not operands (leaky_relu's slope, elu's
 * alpha, softplus's beta) do not promote: those ops compute integer inputs in
 * f32 anyway. gf_masked_fill's value, gf_fill_ and gf_full take the tensor's
 * (or the given) dtype, as PyTorch's masked_fill/fill_/full. */
#ifndef GRAFT_OPS_H
#define GRAFT_OPS_H

#include "graft/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- unary elementwise. Integer and bool inputs of the float functions
 * (exp, log, sigmoid, ...) are computed in f32, as PyTorch does;
 * neg/abs/sign/square/clamp/relu are exact on i32/i64; floor/ceil/round
 * return integer inputs unchanged. */
GF_API gf_tensor *gf_neg(const gf_tensor *x);
GF_API gf_tensor *gf_abs(const gf_tensor *x);
GF_API gf_tensor *gf_sign(const gf_tensor *x);
GF_API gf_tensor *gf_exp(const gf_tensor *x);
GF_API gf_tensor *gf_log(const gf_tensor *x);
GF_API gf_tensor *gf_log1p(const gf_tensor *x);
GF_API gf_tensor *gf_expm1(const gf_tensor *x);
GF_API gf_tensor *gf_sqrt(const gf_tensor *x);
GF_API gf_tensor *gf_rsqrt(const gf_tensor *x);
GF_API gf_tensor *gf_reciprocal(const gf_tensor *x);
GF_API gf_tensor *gf_square(const gf_tensor *x);
GF_API gf_tensor *gf_sin(const gf_tensor *x);
GF_API gf_tensor *gf_cos(const gf_tensor *x);
/* Inverse trigonometry, as torch.asin / acos / atan: asin in [-pi/2, pi/2],
 * acos in [0, pi], NaN outside [-1, 1] for both; atan in [-pi/2, pi/2]
 * (+-pi/2 at +-inf). Integer and bool x give f32. Gradients as PyTorch's:
 * asin' = 1 / sqrt(1 - x^2) (inf at +-1, NaN beyond), acos' its negative,
 * atan' = 1 / (1 + x^2). */
GF_API gf_tensor *gf_asin(const gf_tensor *x);
GF_API gf_tensor *gf_acos(const gf_tensor *x);
GF_API gf_tensor *gf_atan(const gf_tensor *x);
GF_API gf_tensor *gf_tanh(const gf_tensor *x);
GF_API gf_tensor *gf_sigmoid(const gf_tensor *x);
GF_API gf_tensor *gf_relu(const gf_tensor *x);
GF_API gf_tensor *gf_leaky_relu(const gf_tensor *x, double negative_slope);
GF_API gf_tensor *gf_elu(const gf_tensor *x, double alpha);
/* approximate: false = erf form, true = tanh form. */
GF_API gf_tensor *gf_gelu(const gf_tensor *x, bool approximate);
GF_API gf_tensor *gf_silu(const gf_tensor *x);
/* x * relu6(x + 3) / 6 (PyTorch's hardswish); float dtypes. */
GF_API gf_tensor *gf_hardswish(const gf_tensor *x);
GF_API gf_tensor *gf_softplus(const gf_tensor *x, double beta, double threshold);
GF_API gf_tensor *gf_erf(const gf_tensor *x);
GF_API gf_tensor *gf_floor(const gf_tensor *x);
GF_API gf_tensor *gf_ceil(const gf_tensor *x);
GF_API gf_tensor *gf_round(const gf_tensor *x); /* half to even */
/* Either bound may be NAN for "none"; fails INVALID when both are NAN.
 * Double bounds: an integer or bool x gives f32 (see the scalar rule).
 * The gradient passes only where min < x < max: none on a bound, none for
 * min >= max (PyTorch 2.x; docs/autograd.md rule 24). */
GF_API gf_tensor *gf_clamp(const gf_tensor *x, double min, double max);
/* int64 bounds: an integer x keeps its dtype (bool gives i64), clamped
 * exactly; INT64_MIN / INT64_MAX mean "no bound" (a bound outside x's range
 * clamps nothing); a float x is clamped in its dtype. */
GF_API gf_tensor *gf_clamp_int(const gf_tensor *x, int64_t min, int64_t max);
/* A double exponent: integer and bool x are computed in f32. */
GF_API gf_tensor *gf_pow_scalar(const gf_tensor *x, double exponent);
/* An int64 exponent: an integer x stays integer (bool gives i64), exact;
 * a negative exponent of an integer x fails INVALID (as PyTorch); a float x
 * is gf_pow_scalar(x, exponent). */
GF_API gf_tensor *gf_pow_scalar_int(const gf_tensor *x, int64_t exponent);
GF_API gf_tensor *gf_logical_not(const gf_tensor *x); /* out bool */

/* ---- binary elementwise with broadcasting */
GF_API gf_tensor *gf_add(const gf_tensor *a, const gf_tensor *b);
GF_API gf_tensor *gf_sub(const gf_tensor *a, const gf_tensor *b);
/* torch.add(a, b, alpha=) / torch.sub(a, b, alpha=): a + alpha b and
 * a - alpha b, broadcast and promoted as gf_add; alpha does not promote. A
 * float result is computed in its dtype (b converted first); integer and
 * bool results need an integral alpha (INVALID otherwise, as PyTorch) and
 * compute exactly (alpha must fit b's dtype: OVERFLOW otherwise). alpha 1
 * is gf_add / gf_sub. The gradient of b is alpha (-alpha) times the
 * incoming one. */
GF_API gf_tensor *gf_add_alpha(const gf_tensor *a, const gf_tensor *b, double alpha);
GF_API gf_tensor *gf_sub_alpha(const gf_tensor *a, const gf_tensor *b, double alpha);
GF_API gf_tensor *gf_mul(const gf_tensor *a, const gf_tensor *b);
GF_API gf_tensor *gf_div(const gf_tensor *a, const gf_tensor *b); /* true division:
                                                     integer inputs give f32 */
GF_API gf_tensor *gf_pow(const gf_tensor *a, const gf_tensor *b);
GF_API gf_tensor *gf_maximum(const gf_tensor *a, const gf_tensor *b);
GF_API gf_tensor *gf_minimum(const gf_tensor *a, const gf_tensor *b);
/* torch.atan2(a, b): the angle of the point (b, a) in [-pi, pi], with C's
 * atan2 at signed zeros and infinities (atan2(+-0, -0) = +-pi, atan2(+-0,
 * +0) = +-0). Broadcasts; integer and bool inputs give f32. Gradients as
 * PyTorch's: g b / (a^2 + b^2) for a, -g a / (a^2 + b^2) for b (NaN at the
 * origin). */
GF_API gf_tensor *gf_atan2(const gf_tensor *a, const gf_tensor *b);
GF_API gf_tensor *gf_eq(const gf_tensor *a, const gf_tensor *b); /* comparisons: bool */
GF_API gf_tensor *gf_ne(const gf_tensor *a, const gf_tensor *b);
GF_API gf_tensor *gf_lt(const gf_tensor *a, const gf_tensor *b);
GF_API gf_tensor *gf_le(const gf_tensor *a, const gf_tensor *b);
GF_API gf_tensor *gf_gt(const gf_tensor *a, const gf_tensor *b);
GF_API gf_tensor *gf_ge(const gf_tensor *a, const gf_tensor *b);
GF_API gf_tensor *gf_logical_and(const gf_tensor *a, const gf_tensor *b);
GF_API gf_tensor *gf_logical_or(const gf_tensor *a, const gf_tensor *b);
/* cond must be bool; a and b are promoted together; all three broadcast. */
GF_API gf_tensor *gf_where(const gf_tensor *cond, const gf_tensor *a, const gf_tensor *b);
/* x where mask is false, value where it is true (mask bool, broadcast to x). */
GF_API gf_tensor *gf_masked_fill(const gf_tensor *x, const gf_tensor *mask, double value);

/* scalar forms (the scalar rule at the top of this file): a double scalar
 * is floating (an integer or bool x gives f32), an int64_t one is integer
 * (the _int forms: an integer x keeps its dtype, bool gives i64). rsub is
 * s - x; comparisons give bool. The gradient of maximum/minimum_scalar
 * where x equals s is half the incoming one, as torch.maximum's at ties
 * (docs/autograd.md rule 24); gf_clamp gives x none on its bounds. */
GF_API gf_tensor *gf_add_scalar(const gf_tensor *x, double s);
GF_API gf_tensor *gf_add_scalar_int(const gf_tensor *x, int64_t s);
GF_API gf_tensor *gf_sub_scalar(const gf_tensor *x, double s);
GF_API gf_tensor *gf_sub_scalar_int(const gf_tensor *x, int64_t s);
GF_API gf_tensor *gf_rsub_scalar(const gf_tensor *x, double s); /* s - x */
GF_API gf_tensor *gf_rsub_scalar_int(const gf_tensor *x, int64_t s);
GF_API gf_tensor *gf_mul_scalar(const gf_tensor *x, double s);
GF_API gf_tensor *gf_mul_scalar_int(const gf_tensor *x, int64_t s);
GF_API gf_tensor *gf_div_scalar(const gf_tensor *x, double s);
GF_API gf_tensor *gf_div_scalar_int(const gf_tensor *x, int64_t s);
GF_API gf_tensor *gf_maximum_scalar(const gf_tensor *x, double s);
GF_API gf_tensor *gf_maximum_scalar_int(const gf_tensor *x, int64_t s);
GF_API gf_tensor *gf_minimum_scalar(const gf_tensor *x, double s);
GF_API gf_tensor *gf_minimum_scalar_int(const gf_tensor *x, int64_t s);
GF_API gf_tensor *gf_eq_scalar(const gf_tensor *x, double s);
GF_API gf_tensor *gf_eq_scalar_int(const gf_tensor *x, int64_t s);
GF_API gf_tensor *gf_ne_scalar(const gf_tensor *x, double s);
GF_API gf_tensor *gf_ne_scalar_int(const gf_tensor *x, int64_t s);
GF_API gf_tensor *gf_lt_scalar(const gf_tensor *x, double s);
GF_API gf_tensor *gf_lt_scalar_int(const gf_tensor *x, int64_t s);
GF_API gf_tensor *gf_le_scalar(const gf_tensor *x, double s);
GF_API gf_tensor *gf_le_scalar_int(const gf_tensor *x, int64_t s);
GF_API gf_tensor *gf_gt_scalar(const gf_tensor *x, double s);
GF_API gf_tensor *gf_gt_scalar_int(const gf_tensor *x, int64_t s);
GF_API gf_tensor *gf_ge_scalar(const gf_tensor *x, double s);
GF_API gf_tensor *gf_ge_scalar_int(const gf_tensor *x, int64_t s);

/* ---- reductions. dims: ndims dims to reduce (negative allowed, no
 * repeats); dims NULL with ndims 0 reduces every dim. sum and prod of i32
 * and bool give i64 (as PyTorch); mean/var/std/logsumexp need float. */
GF_API gf_tensor *gf_sum(const gf_tensor *x, const int *dims, int ndims, bool keepdim);
GF_API gf_tensor *gf_mean(const gf_tensor *x, const int *dims, int ndims, bool keepdim);
GF_API gf_tensor *gf_prod(const gf_tensor *x, const int *dims, int ndims, bool keepdim);
/* Fail INDEX when a reduced dim has size 0. */
GF_API gf_tensor *gf_amax(const gf_tensor *x, const int *dims, int ndims, bool keepdim);
GF_API gf_tensor *gf_amin(const gf_tensor *x, const int *dims, int ndims, bool keepdim);
/* divisor N - correction (1 = Bessel's correction) */
GF_API gf_tensor *gf_var(const gf_tensor *x, const int *dims, int ndims, double correction,
                         bool keepdim);
GF_API gf_tensor *gf_std(const gf_tensor *x, const int *dims, int ndims, double correction,
                         bool keepdim);
GF_API gf_tensor *gf_logsumexp(const gf_tensor *x, const int *dims, int ndims, bool keepdim);
/* Values and i64 indices along one dim. Writes two new references, both
 * recorded in an open scope like a returned tensor (do not release them in
 * the scope). */
GF_API gf_status gf_max_dim(const gf_tensor *x, int dim, bool keepdim, gf_tensor **values,
                            gf_tensor **indices);
GF_API gf_status gf_min_dim(const gf_tensor *x, int dim, bool keepdim, gf_tensor **values,
                            gf_tensor **indices);
/* i64 indices along dim; GF_DIM_ALL = of the flattened tensor (0-dim result). */
#define GF_DIM_ALL (-1000)
GF_API gf_tensor *gf_argmax(const gf_tensor *x, int dim, bool keepdim);
GF_API gf_tensor *gf_argmin(const gf_tensor *x, int dim, bool keepdim);

/* ---- linear algebra, softmax */
/* As torch.matmul: 1-D operands are promoted and the added dim removed; batch
 * dims broadcast. */
GF_API gf_tensor *gf_matmul(const gf_tensor *a, const gf_tensor *b);
/* torch.dot(a, b): the 0-dim inner product of two 1-D tensors of one length
 * and one dtype (no promotion, as PyTorch; an integer dot keeps its dtype,
 * bool fails DTYPE). Fails: SHAPE (not 1-D, lengths differ), DTYPE. */
GF_API gf_tensor *gf_dot(const gf_tensor *a, const gf_tensor *b);
/* torch.vdot(a, b): sum(conj(a) b), the first vector conjugated when it is
 * complex; for real dtypes it is gf_dot exactly. */
GF_API gf_tensor *gf_vdot(const gf_tensor *a, const gf_tensor *b);
/* torch.outer(a, b): the [len(a), len(b)] matrix a_i b_j of two 1-D tensors
 * (promoted as gf_mul). Fails SHAPE unless both are 1-D. */
GF_API gf_tensor *gf_outer(const gf_tensor *a, const gf_tensor *b);
GF_API gf_tensor *gf_softmax(const gf_tensor *x, int dim);
GF_API gf_tensor *gf_log_softmax(const gf_tensor *x, int dim);

/* ---- indexing. index tensors are i64 (i32 accepted and converted). An
 * index value out of range fails with GF_ERR_INDEX naming the op. */
GF_API gf_tensor *gf_index_select(const gf_tensor *x, int dim, const gf_tensor *index);
GF_API gf_tensor *gf_gather(const gf_tensor *x, int dim, const gf_tensor *index);
/* A copy of x with src added at index along dim. */
GF_API gf_tensor *gf_scatter_add(const gf_tensor *x, int dim, const gf_tensor *index,
                                 const gf_tensor *src);
GF_API gf_tensor *gf_index_add(const gf_tensor *x, int dim, const gf_tensor *index,
                               const gf_tensor *src);
/* weight [num, dim] rows picked by indices of any shape. */
GF_API gf_tensor *gf_embedding(const gf_tensor *weight, const gf_tensor *indices);
GF_API gf_tensor *gf_cat(gf_tensor *const *tensors, int n, int dim);
GF_API gf_tensor *gf_stack(gf_tensor *const *tensors, int n, int dim);
GF_API gf_tensor *gf_tril(const gf_tensor *x, int64_t diagonal);
GF_API gf_tensor *gf_triu(const gf_tensor *x, int64_t diagonal);
/* i64 result of shape [..., num_classes]; num_classes -1 = max + 1. */
GF_API gf_tensor *gf_one_hot(const gf_tensor *indices, int64_t num_classes);

#ifdef __cplusplus
}
#endif
#endif
