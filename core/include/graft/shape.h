/* SPDX-License-Identifier: BSD-3-Clause */
/* graft/shape.h — reductions, scans, sorting, shape and indexing ops with
 * PyTorch's names, semantics and defaults (torch.all, torch.cumsum,
 * torch.sort, torch.nn.functional.pad, torch.einsum, ...).
 *
 * Conventions are ops.h's: a new reference (NULL on error, the message naming
 * the op), borrowed and possibly strided inputs, negative dims counted from
 * the end, the scope rules of tensor.h for results and out-parameters.
 *
 * Every op here is composed in the core from existing differentiable device
 * ops (index_select, gather, index_add, where, cat, matmul, sum, ...): its
 * gradient, and every higher gradient, comes from those ops' rules. Ops whose
 * result depends on the order or the position of values (sort, argsort,
 * topk, median, quantile, nonzero, masked_select, masked_scatter, scatter,
 * index_put, repeat_interleave with a tensor of repeats) compute their
 * indices on the host: the input (or the index/mask) is read back, which
 * waits for the device; the values are then picked on the device by gather
 * or index_select, so the gradient flows as PyTorch's does. The host
 * side needs about 24 bytes per element read (OUT_OF_MEMORY otherwise) and
 * sorts in O(n log n) per slice on one thread. dims are int
 * arrays as in ops.h's reductions (NULL with ndims 0 = every dim). */
#ifndef GRAFT_SHAPE_H
#define GRAFT_SHAPE_H

#include "graft/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- reductions */
/* torch.all / torch.any: bool results (any dtype in; an element is true
 * when nonzero; NaN counts as true). Over no element: all true, any false. */
GF_API gf_tensor *gf_all(const gf_tensor *x, const int *dims, int ndims, bool keepdim);
GF_API gf_tensor *gf_any(const gf_tensor *x, const int *dims, int ndims, bool keepdim);
/* torch.count_nonzero: i64 count (no keepdim, as PyTorch). */
GF_API gf_tensor *gf_count_nonzero(const gf_tensor *x, const int *dims, int ndims);
/* torch.linalg.vector_norm(x, ord, dim, keepdim): ord any double: INFINITY
 * (max |x|), -INFINITY (min |x|), 0 (count of nonzeros), 1, 2 and any
 * other p: (sum |x|^p)^(1/p). Float x only (DTYPE otherwise, as PyTorch).
 * The gradient at a zero vector is 0 (PyTorch's subgradient); for ord inf
 * it is shared evenly by the elements that tie for the maximum; for ord 0
 * it is zero everywhere. */
GF_API gf_tensor *gf_vector_norm(const gf_tensor *x, double ord, const int *dims, int ndims,
                                 bool keepdim);
/* torch.norm(x, p, dim, keepdim) for vectors: p "fro" is p = 2
 * (GF_NORM_FRO); the same as gf_vector_norm. */
#define GF_NORM_FRO 2.0
GF_API gf_tensor *gf_norm(const gf_tensor *x, double p, const int *dims, int ndims,
                          bool keepdim);
/* torch.aminmax: the min and the max over dim (GF_DIM_ALL: every element,
 * 0-dim results). Fails INDEX over no element. Writes two new references. */
GF_API gf_status gf_aminmax(const gf_tensor *x, int dim, bool keepdim, gf_tensor **min,
                            gf_tensor **max);

/* ---- scans along one dim (0-dim x: dim 0 or -1, the result is x). i32
 * and bool x give i64 (as PyTorch); each runs in ceil(log2(n)) steps of
 * device ops. cumprod's gradient is right with zeros in x (no division). */
GF_API gf_tensor *gf_cumsum(const gf_tensor *x, int dim);
GF_API gf_tensor *gf_cumprod(const gf_tensor *x, int dim);
/* Float x only. Where every element up to a position is -inf the value is
 * -inf and the gradient of those elements NaN. */
GF_API gf_tensor *gf_logcumsumexp(const gf_tensor *x, int dim);

/* ---- sorting (host-computed indices, see the top of this file) */
/* torch.sort(x, dim, descending, stable=True): values and i64 indices.
 * Always stable (equal elements keep their order, either direction); NaN is
 * the largest value (last ascending, first descending), as PyTorch. f32,
 * f64, i32, i64, bool. 0-dim x: itself and index 0. */
GF_API gf_status gf_sort(const gf_tensor *x, int dim, bool descending, gf_tensor **values,
                         gf_tensor **indices);
GF_API gf_tensor *gf_argsort(const gf_tensor *x, int dim, bool descending);
/* torch.topk(x, k, dim, largest, sorted): the k largest (smallest) along
 * dim. Fails INDEX unless 0 <= k <= size of dim. Deviation: results are
 * always sorted and ties keep their order (sorted=false is accepted). */
GF_API gf_status gf_topk(const gf_tensor *x, int64_t k, int dim, bool largest, bool sorted,
                         gf_tensor **values, gf_tensor **indices);
/* torch.median(x): the lower median of all elements (element (n-1)/2 of
 * the sorted values), NaN when x holds a NaN or no element. 0-dim result. */
GF_API gf_tensor *gf_median(const gf_tensor *x);
/* torch.median(x, dim, keepdim): lower median and its index along dim;
 * a slice holding NaN gives NaN and the index of its first NaN. Fails INDEX
 * on a dim of size 0. */
GF_API gf_status gf_median_dim(const gf_tensor *x, int dim, bool keepdim, gf_tensor **values,
                               gf_tensor **indices);
typedef enum gf_quantile_interp {
    GF_QUANTILE_LINEAR = 0,
    GF_QUANTILE_LOWER = 1,
    GF_QUANTILE_HIGHER = 2,
    GF_QUANTILE_MIDPOINT = 3,
    GF_QUANTILE_NEAREST = 4 /* rank rounded half to even, as PyTorch */
} gf_quantile_interp;
/* torch.quantile(x, q, dim, keepdim, interpolation): q a 0-dim or 1-D float
 * tensor of values in [0, 1] (a 1-D q adds a leading dim of its size);
 * dim GF_DIM_ALL = of the flattened x. Float x only; a slice holding NaN
 * gives NaN. Fails INDEX on a reduced dim of size 0 (PyTorch fails too),
 * INVALID for q outside [0, 1]. */
GF_API gf_tensor *gf_quantile(const gf_tensor *x, const gf_tensor *q, int dim, bool keepdim,
                              gf_quantile_interp interpolation);
GF_API gf_tensor *gf_quantile_scalar(const gf_tensor *x, double q, int dim, bool keepdim,
                                     gf_quantile_interp interpolation);

/* ---- shape */
/* torch.nn.functional.pixel_shuffle(x, r): [..., C r^2, H, W] ->
 * [..., C, H r, W r] (any number of leading batch dims; a copy), and
 * pixel_unshuffle(x, r), its inverse: [..., C, H r, W r] -> [..., C r^2, H,
 * W]. Fails: SHAPE (rank < 3; the channels not divisible by r^2; height or
 * width not divisible by r), INVALID (r <= 0). */
GF_API gf_tensor *gf_pixel_shuffle(const gf_tensor *x, int64_t upscale_factor);
GF_API gf_tensor *gf_pixel_unshuffle(const gf_tensor *x, int64_t downscale_factor);
/* torch.flip: reverses the given dims (a copy). */
GF_API gf_tensor *gf_flip(const gf_tensor *x, const int *dims, int ndims);
/* torch.roll: shifts[i] along dims[i]; ndims 0 (dims NULL) rolls the
 * flattened tensor by shifts[0] (nshifts must then be 1). */
GF_API gf_tensor *gf_roll(const gf_tensor *x, const int64_t *shifts, int nshifts,
                          const int *dims, int ndims);
/* Tensor.repeat: nrep >= rank; leading extra repeats add dims. */
GF_API gf_tensor *gf_repeat(const gf_tensor *x, const int64_t *repeats, int nrep);
/* torch.tile: as repeat, fewer reps than dims are padded with 1 in front. */
GF_API gf_tensor *gf_tile(const gf_tensor *x, const int64_t *reps, int nrep);
/* torch.repeat_interleave(x, repeats, dim): each element repeated along dim
 * (GF_DIM_ALL: of the flattened x, 1-D result). The _tensor form takes a
 * 0-dim or 1-D integer tensor of per-element repeats (size 1 or size of
 * dim), read on the host. */
GF_API gf_tensor *gf_repeat_interleave(const gf_tensor *x, int64_t repeats, int dim);
GF_API gf_tensor *gf_repeat_interleave_tensor(const gf_tensor *x, const gf_tensor *repeats,
                                              int dim);
typedef enum gf_pad_mode {
    GF_PAD_CONSTANT = 0,
    GF_PAD_REFLECT = 1,
    GF_PAD_REPLICATE = 2,
    GF_PAD_CIRCULAR = 3
} gf_pad_mode;
/* torch.nn.functional.pad: pad holds (left, right) pairs from the last dim
 * backwards, npad even and npad / 2 <= rank. Constant pads may be negative
 * (cropping); reflect needs pad < size, circular pad <= size, replicate a
 * non-empty dim, all non-negative. value is for CONSTANT only. Deviation:
 * the non-constant modes pad any number of trailing dims (PyTorch: 1 to 3). */
GF_API gf_tensor *gf_pad(const gf_tensor *x, const int64_t *pad, int npad, gf_pad_mode mode,
                         double value);
/* torch.unbind: the slices along dim, as views (gf_select). Writes up to
 * max_out new references, the count into *n; INVALID when max_out is too
 * small. */
GF_API gf_status gf_unbind(const gf_tensor *x, int dim, gf_tensor **out, int max_out, int *n);
/* torch.split(x, split_sizes, dim): views of the given sizes (they must sum
 * to the size of dim). */
GF_API gf_status gf_split_with_sizes(const gf_tensor *x, const int64_t *sizes, int nsizes,
                                     int dim, gf_tensor **out, int max_out);
/* Tensor.unfold(dim, size, step): windows of `size` elements every `step`
 * along dim, a new last dim of size `size`. Deviation: a copy, not a view. */
GF_API gf_tensor *gf_unfold(const gf_tensor *x, int dim, int64_t size, int64_t step);

/* ---- indexing */
/* torch.take_along_dim(x, indices, dim): x and indices broadcast except at
 * dim, then gather; dim GF_DIM_ALL takes from the flattened x (indices
 * flattened too). */
GF_API gf_tensor *gf_take_along_dim(const gf_tensor *x, const gf_tensor *indices, int dim);
/* torch.scatter(x, dim, index, src) (reduce none) and its value form: a copy
 * of x with src[i][j].. written at index along dim. Deviation where
 * PyTorch leaves it unspecified: of duplicate targets, the last in index's
 * row-major order wins, and only it gets src's gradient. */
GF_API gf_tensor *gf_scatter(const gf_tensor *x, int dim, const gf_tensor *index,
                             const gf_tensor *src);
GF_API gf_tensor *gf_scatter_value(const gf_tensor *x, int dim, const gf_tensor *index,
                                   double value);
/* torch.nonzero: i64 [count, rank] of the indices of nonzero elements in
 * row-major order. */
GF_API gf_tensor *gf_nonzero(const gf_tensor *x);
/* torch.masked_select: 1-D, the elements of x where mask (bool, both
 * broadcast) is true. */
GF_API gf_tensor *gf_masked_select(const gf_tensor *x, const gf_tensor *mask);
/* Tensor.masked_scatter(mask, source): a copy of x with the first elements
 * of source (row-major) written where mask (bool, broadcast to x) is true;
 * source needs at least as many elements as mask has true values. */
GF_API gf_tensor *gf_masked_scatter(const gf_tensor *x, const gf_tensor *mask,
                                    const gf_tensor *source);
/* Tensor.index_put(indices, values, accumulate): x[indices[0], ...,
 * indices[n-1]] = values (+= with accumulate), as PyTorch's advanced
 * indexing: the n integer index tensors broadcast together and index the
 * first n dims (negative indices count from the end); values broadcast to
 * the indexed shape. A single bool index of x's leading shape is a mask.
 * Deviation: no "None" (full slice) entries. Duplicates without accumulate:
 * the last wins. */
GF_API gf_tensor *gf_index_put(const gf_tensor *x, gf_tensor *const *indices, int n,
                               const gf_tensor *values, bool accumulate);

/* ---- einsum */
/* torch.einsum(equation, operands): labels a-z and A-Z, "..." for
 * broadcast dims, an explicit "->" output or the implicit one (labels seen
 * once, in alphabetical order, after the "..." dims). Repeated labels in an
 * operand take its diagonal; labels absent from the output are summed.
 * Lowered to permutes, reshapes and batched matmuls, left to right.
 * 1 to 32 operands (INVALID otherwise). */
GF_API gf_tensor *gf_einsum(const char *equation, gf_tensor *const *operands, int n);

#ifdef __cplusplus
}
#endif
#endif
