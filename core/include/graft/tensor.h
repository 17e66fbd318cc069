/* SPDX-License-Identifier: BSD-3-Clause */
/* graft/tensor.h — tensors: creation, data, views, scopes.
 *
 * Ownership: a function documented "Returns a new reference" hands the caller
 * one reference, to give back with gf_tensor_release (or to a scope, below).
 * New references written to out-parameters are the same: the caller's, and
 * recorded in an open scope like returned ones.
 * Tensor arguments are borrowed. A function that receives a NULL tensor returns
 * NULL and keeps the first error, so a chain of ops can be checked once at its
 * end. Sizes are int64_t; a size array may be NULL when rank is 0. */
#ifndef GRAFT_TENSOR_H
#define GRAFT_TENSOR_H

#include "graft/device.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gf_tensor gf_tensor;

GF_API gf_tensor *gf_tensor_retain(gf_tensor *t); /* returns t */
/* NULL is harmless. Releasing a reference that an open scope holds (the
 * scope would release it again), or one that would leave fewer references
 * than graft's own holds (a .grad released twice), is refused: INVALID
 * recorded for the thread and logged, the tensor left as it was. See
 * gf_scope_begin for the one case counts cannot tell. */
GF_API void gf_tensor_release(gf_tensor *t);

/* ---- creation. dev NULL = gf_device_default(). All return a new reference.
 * Fails: INVALID (negative size, rank > 8; for gf_full, a value an integer
 * dtype cannot hold: NaN, inf or outside its range, as PyTorch), OVERFLOW
 * (the product of the sizes, 0 read as 1, reaches 2^59), DTYPE (dtype the
 * device does not store), DEVICE, OUT_OF_MEMORY. */
GF_API gf_tensor *gf_empty(const int64_t *sizes, int rank, gf_dtype dtype, gf_device *dev);
GF_API gf_tensor *gf_zeros(const int64_t *sizes, int rank, gf_dtype dtype, gf_device *dev);
GF_API gf_tensor *gf_ones(const int64_t *sizes, int rank, gf_dtype dtype, gf_device *dev);
GF_API gf_tensor *gf_full(const int64_t *sizes, int rank, double value, gf_dtype dtype,
                          gf_device *dev);
/* Copies numel * dtype_size bytes of row-major data. */
GF_API gf_tensor *gf_from_data(const void *data, const int64_t *sizes, int rank,
                               gf_dtype dtype, gf_device *dev);
/* A 0-dim tensor. */
GF_API gf_tensor *gf_scalar(double value, gf_dtype dtype, gf_device *dev);
/* [start, end) by step (step != 0), as torch.arange. */
GF_API gf_tensor *gf_arange(double start, double end, double step, gf_dtype dtype,
                            gf_device *dev);
GF_API gf_tensor *gf_zeros_like(const gf_tensor *t);
GF_API gf_tensor *gf_ones_like(const gf_tensor *t);
GF_API gf_tensor *gf_full_like(const gf_tensor *t, double value);

/* ---- random numbers: one counter-based generator (Philox4x32-10, see the
 * ABI) so a seed gives the same numbers on every device. The global generator
 * is thread-safe; each call consumes numel counters. */
GF_API void gf_manual_seed(uint64_t seed);
/* The generator's state: the seed and the counters consumed since it was
 * set (either pointer may be NULL). Setting it back (for a checkpoint)
 * makes the numbers that follow the same as if the run had not stopped. */
GF_API void gf_rng_get_state(uint64_t *seed, uint64_t *offset);
GF_API void gf_rng_set_state(uint64_t seed, uint64_t offset);
GF_API gf_tensor *gf_rand(const int64_t *sizes, int rank, gf_dtype dtype, gf_device *dev);
GF_API gf_tensor *gf_randn(const int64_t *sizes, int rank, gf_dtype dtype, gf_device *dev);
GF_API gf_tensor *gf_rand_uniform(const int64_t *sizes, int rank, double low, double high,
                                  gf_dtype dtype, gf_device *dev);
GF_API gf_tensor *gf_rand_normal(const int64_t *sizes, int rank, double mean, double std,
                                 gf_dtype dtype, gf_device *dev);
/* Elements are 1 with probability p (0 <= p <= 1). */
GF_API gf_tensor *gf_bernoulli(const int64_t *sizes, int rank, double p, gf_dtype dtype,
                               gf_device *dev);
/* torch.rand_like / randn_like: x's sizes, dtype and device (a contiguous
 * tensor, no history). Fails DTYPE for an integer or bool x (as PyTorch). */
GF_API gf_tensor *gf_rand_like(const gf_tensor *x);
GF_API gf_tensor *gf_randn_like(const gf_tensor *x);
/* torch.randint_like(x, low, high): integers uniform in [low, high) with x's
 * sizes, dtype (integer, bool or float, as PyTorch) and device; computed as
 * floor(low + u (high - low)) from a uniform u of the generator (f64 where
 * the device stores it, else f32: uniform for ranges up to 2^53 resp. 2^24).
 * Fails INVALID for low >= high or a range x's dtype cannot hold exactly. */
GF_API gf_tensor *gf_randint_like(const gf_tensor *x, int64_t low, int64_t high);
/* torch.multinomial(probs, num_samples, replacement): i64 category indices
 * drawn from the rows of probs (1-D [n] gives [num_samples], 2-D [r, n]
 * gives [r, num_samples]); rows are non-negative, finite weights with a
 * positive sum (they need not sum to 1). Without replacement each row gives
 * distinct categories, in the order drawn. The weights are read back to the
 * host and the draws made there from num_samples uniforms per row of graft's
 * generator (so a seed repeats them on every device, but they are not
 * PyTorch's numbers). Not differentiable. Fails: SHAPE (rank not 1 or 2, no
 * category, more than 2^24), DTYPE (integer probs), INVALID (num_samples <=
 * 0; a negative, NaN or infinite weight; a zero row sum; without
 * replacement, num_samples above the number of categories or of nonzero
 * weights of a row). */
GF_API gf_tensor *gf_multinomial(const gf_tensor *probs, int64_t num_samples, bool replacement);

/* ---- properties (t must not be NULL; they return 0 / NULL for NULL) */
GF_API int gf_tensor_rank(const gf_tensor *t);
GF_API const int64_t *gf_tensor_sizes(const gf_tensor *t);
GF_API const int64_t *gf_tensor_strides(const gf_tensor *t); /* in elements */
/* Size of dim (negative counts from the end); -1 with INDEX error when out of range. */
GF_API int64_t gf_tensor_size(const gf_tensor *t, int dim);
GF_API int64_t gf_tensor_numel(const gf_tensor *t);
GF_API int64_t gf_tensor_offset(const gf_tensor *t); /* in elements */
GF_API gf_dtype gf_tensor_dtype(const gf_tensor *t);
GF_API gf_device *gf_tensor_device(const gf_tensor *t);
GF_API bool gf_tensor_is_contiguous(const gf_tensor *t);
/* True when both share one storage (a view of the other, or of one base). */
GF_API bool gf_tensor_shares_storage(const gf_tensor *a, const gf_tensor *b);
/* The storage's version counter: bumped by every in-place write. Inference
 * tensors (created in inference mode) have none: always 0. */
GF_API uint64_t gf_tensor_version(const gf_tensor *t);
/* Writes e.g. "f32[2, 3] on cpu:0" into buf (always terminated). */
GF_API const char *gf_tensor_describe(const gf_tensor *t, char *buf, size_t len);

/* ---- data */
/* Copies the elements, in row-major order of t's shape, to host memory.
 * Fails: INVALID when nbytes != numel * dtype size. */
GF_API gf_status gf_tensor_to_host(const gf_tensor *t, void *dst, size_t nbytes);
/* Copies row-major host data into t (in place; bumps the version). */
GF_API gf_status gf_tensor_from_host(gf_tensor *t, const void *src, size_t nbytes);
/* The value of a one-element tensor, converted to double. */
GF_API gf_status gf_tensor_item(const gf_tensor *t, double *value);
/* The element at a multi-index, converted to double (slow: for tests). */
GF_API gf_status gf_tensor_get(const gf_tensor *t, const int64_t *index, double *value);

/* ---- moves and copies. Return new references. */
GF_API gf_tensor *gf_to_device(const gf_tensor *t, gf_device *dev); /* same device: a new reference to t */
GF_API gf_tensor *gf_to_dtype(const gf_tensor *t, gf_dtype dtype);  /* same dtype: a new reference to t */
GF_API gf_tensor *gf_contiguous(const gf_tensor *t); /* already contiguous: new reference to t */
GF_API gf_tensor *gf_clone(const gf_tensor *t);      /* always a copy */

/* ---- views: share t's storage, copy nothing. Return new references.
 * Dims may be negative (counted from the end). Fails: INDEX, SHAPE. */
/* sizes may hold one -1 (inferred). Fails SHAPE when the strides do not allow
 * a view (use gf_reshape). */
GF_API gf_tensor *gf_view(const gf_tensor *t, const int64_t *sizes, int rank);
/* A view when possible, otherwise a contiguous copy. */
GF_API gf_tensor *gf_reshape(const gf_tensor *t, const int64_t *sizes, int rank);
GF_API gf_tensor *gf_flatten(const gf_tensor *t);
/* torch.flatten(t, start_dim, end_dim): dims start_dim..end_dim (negative
 * counted from the end) merged into one; a view when the strides allow it,
 * else a copy (as gf_reshape). A 0-dim t gives a 1-D tensor of size 1.
 * Fails: INDEX (a dim out of range), INVALID (start_dim after end_dim). */
GF_API gf_tensor *gf_flatten_dims(const gf_tensor *t, int start_dim, int end_dim);
/* torch.unflatten(t, dim, sizes): dim split into n dims of the given sizes,
 * one of which may be -1 (inferred); their product must be the size of
 * dim. A view (as gf_reshape). Fails: INDEX (dim out of range, 0-dim t),
 * INVALID (n == 0, two -1, a size below -1), SHAPE (the product differs,
 * the result's rank above 8). */
GF_API gf_tensor *gf_unflatten(const gf_tensor *t, int dim, const int64_t *sizes, int n);
GF_API gf_tensor *gf_transpose(const gf_tensor *t, int dim0, int dim1);
GF_API gf_tensor *gf_permute(const gf_tensor *t, const int *dims, int ndims);
/* Elements start, start+step, ... < end of dim (start/end clamped as Python
 * slices, negative counted from the end; step >= 1). */
GF_API gf_tensor *gf_slice(const gf_tensor *t, int dim, int64_t start, int64_t end,
                           int64_t step);
/* length elements of dim from start. start may be negative, counted from the
 * end as in PyTorch (-1 is the last element): start in [-size, size], then
 * 0 <= length <= size - start. Fails INDEX otherwise. */
GF_API gf_tensor *gf_narrow(const gf_tensor *t, int dim, int64_t start, int64_t length);
/* Element `index` of dim, that dim removed. index may be negative, counted
 * from the end as in PyTorch (-1 is the last): index in [-size, size).
 * Fails INDEX otherwise, and on a 0-dim t. */
GF_API gf_tensor *gf_select(const gf_tensor *t, int dim, int64_t index);
/* -1 keeps a size; new leading dims may be added. */
GF_API gf_tensor *gf_expand(const gf_tensor *t, const int64_t *sizes, int rank);
GF_API gf_tensor *gf_squeeze(const gf_tensor *t, int dim); /* no-op if size != 1 */
GF_API gf_tensor *gf_squeeze_all(const gf_tensor *t);
GF_API gf_tensor *gf_unsqueeze(const gf_tensor *t, int dim);
GF_API gf_tensor *gf_diagonal(const gf_tensor *t, int64_t offset, int dim1, int dim2);
/* Splits into pieces of split_size (the last may be smaller) / into `chunks`
 * pieces. Writes up to max_out new references into out, the count into *n.
 * The pieces are recorded in an open scope like a returned tensor (do not
 * release them in the scope).
 * Fails: INVALID when max_out is too small (nothing is returned then). */
GF_API gf_status gf_split(const gf_tensor *t, int64_t split_size, int dim, gf_tensor **out,
                          int max_out, int *n);
GF_API gf_status gf_chunk(const gf_tensor *t, int chunks, int dim, gf_tensor **out,
                          int max_out, int *n);

/* ---- scopes: an arena for the intermediates of a step.
 * While a scope is open on this thread, every tensor a graft function returns
 * as "a new reference" is also recorded in the scope, and gf_scope_end releases
 * those references. gf_scope_keep(t) takes t out of the open scope that
 * recorded it, the innermost or an enclosing one (the caller then owns that
 * reference for good: no scope releases it). Scopes nest. Tensors written to
 * out-parameters (gf_grad, gf_max_dim, gf_split, gf_layer_norm's statistics,
 * ...) are recorded too. Inside a scope, do not release what graft returned:
 * such a release is refused with an error (gf_tensor_release), also for
 * gf_tensor_grad's result, which the .grad slot holds too. What reference
 * counts cannot tell from a correct release: the caller also holds a
 * reference of its own to the same tensor (gf_tensor_grad called before the
 * scope and again inside it; a function that returns its own argument as a
 * new reference: gf_to_dtype or gf_to_device to what the tensor already is,
 * gf_dropout in eval mode). Releasing the scope's reference by hand then
 * spends the caller's own. */
GF_API void gf_scope_begin(void);
GF_API void gf_scope_end(void);
GF_API gf_tensor *gf_scope_keep(gf_tensor *t);
/* Ends the innermost scope but keeps t, which then belongs to the enclosing
 * scope (or to the caller when there is none), exactly like the result of a
 * graft function. For helpers that open their own scope:
 *   gf_tensor *layer(x) { gf_scope_begin(); ...; return gf_scope_end_return(y); } */
GF_API gf_tensor *gf_scope_end_return(gf_tensor *t);

#ifdef __cplusplus
}
#endif
#endif
