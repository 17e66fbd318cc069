/* SPDX-License-Identifier: BSD-3-Clause */
/* graft/nn.h — neural-network ops (NCHW) and losses. Same conventions as
 * graft/ops.h: new references, borrowed inputs, NULL on error. */
#ifndef GRAFT_NN_H
#define GRAFT_NN_H

#include "graft/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gf_conv2d_opts {
    int stride[2];   /* 0 is read as 1 */
    int padding[2];
    int dilation[2]; /* 0 is read as 1 */
    int groups;      /* 0 is read as 1 */
} gf_conv2d_opts;

/* A zero-initialised struct (with the kernel set) is PyTorch's default for
 * every field: stride = kernel, no padding, dilation 1, floor mode, and for
 * avg pool count_include_pad = True (see exclude_pad). */
typedef struct gf_pool2d_opts {
    int kernel[2];
    int stride[2];   /* 0 = kernel size, as PyTorch's default */
    int padding[2];
    int dilation[2]; /* max pool only; 0 is read as 1 */
    bool ceil_mode;
    /* avg pool only. false (the zero value, PyTorch's default
     * count_include_pad = True): the divisor counts the zero padding of the
     * window (clipped to the padded input in ceil mode); true (PyTorch's
     * count_include_pad = False): the divisor is the number of input
     * elements in the window. */
    bool exclude_pad;
} gf_pool2d_opts;

typedef enum gf_reduction {
    GF_REDUCTION_NONE = 0,
    GF_REDUCTION_MEAN = 1,
    GF_REDUCTION_SUM = 2,
    /* kl_div only (PyTorch's reduction='batchmean'): the sum divided by
     * the size of dim 0 (the sum itself for a 0-dim loss). Every other
     * loss refuses it (INVALID). */
    GF_REDUCTION_BATCHMEAN = 3
} gf_reduction;

/* x [N, Ci, H, W], weight [Co, Ci/groups, kh, kw], bias [Co] or NULL.
 * opts NULL = stride 1, no padding, dilation 1, groups 1. */
GF_API gf_tensor *gf_conv2d(const gf_tensor *x, const gf_tensor *weight,
                            const gf_tensor *bias, const gf_conv2d_opts *opts);
/* The gradient kernels that backward uses (devices accelerate them). */
GF_API gf_tensor *gf_conv2d_backward_input(const gf_tensor *grad_y, const gf_tensor *weight,
                                           const int64_t input_sizes[4],
                                           const gf_conv2d_opts *opts);
GF_API gf_tensor *gf_conv2d_backward_weight(const gf_tensor *grad_y, const gf_tensor *x,
                                            const int64_t weight_sizes[4],
                                            const gf_conv2d_opts *opts);

/* x [N, C, H, W] (or [C, H, W]). indices (may be NULL) receives a new
 * reference to the i64 argmax positions (flat h * W + w per plane), recorded
 * in an open scope like a returned tensor (do not release it in the scope). */
GF_API gf_tensor *gf_max_pool2d(const gf_tensor *x, const gf_pool2d_opts *opts,
                                gf_tensor **indices);
GF_API gf_tensor *gf_max_pool2d_backward(const gf_tensor *grad_y, const gf_tensor *indices,
                                         const gf_tensor *x, const gf_pool2d_opts *opts);
GF_API gf_tensor *gf_avg_pool2d(const gf_tensor *x, const gf_pool2d_opts *opts);
GF_API gf_tensor *gf_avg_pool2d_backward(const gf_tensor *grad_y, const gf_tensor *x,
                                         const gf_pool2d_opts *opts);

/* Normalises over the last normalized_rank dims. weight/bias may be NULL.
 * mean/rstd (may be NULL) receive new references to the statistics, shaped
 * as x's leading (not normalised) dims: [N] for x [N, D] and rank 1. They are
 * recorded in an open scope like a returned tensor (do not release them in
 * the scope). */
GF_API gf_tensor *gf_layer_norm(const gf_tensor *x, int normalized_rank,
                                const gf_tensor *weight, const gf_tensor *bias, double eps,
                                gf_tensor **mean, gf_tensor **rstd);
/* x [N, C, ...]. running_mean/var may be NULL (then training must be true);
 * in training they are updated in place with momentum (unbiased variance).
 * save_mean/save_invstd may be NULL; they receive new references, recorded in
 * an open scope like a returned tensor (do not release them in the scope). */
GF_API gf_tensor *gf_batch_norm(const gf_tensor *x, gf_tensor *running_mean,
                                gf_tensor *running_var, const gf_tensor *weight,
                                const gf_tensor *bias, bool training, double momentum,
                                double eps, gf_tensor **save_mean, gf_tensor **save_invstd);
/* Zeroes elements with probability p and scales the rest by 1/(1-p) when
 * training; otherwise returns a new reference to x. */
GF_API gf_tensor *gf_dropout(const gf_tensor *x, double p, bool training);

/* logits [N, C] (or [N, C, d...]), target i64 [N] (or [N, d...]) class ids.
 * weight [C] or NULL. Targets equal to ignore_index count for nothing. */
GF_API gf_tensor *gf_cross_entropy(const gf_tensor *logits, const gf_tensor *target,
                                   const gf_tensor *weight, gf_reduction reduction,
                                   int64_t ignore_index, double label_smoothing);
GF_API gf_tensor *gf_nll_loss(const gf_tensor *log_probs, const gf_tensor *target,
                              const gf_tensor *weight, gf_reduction reduction,
                              int64_t ignore_index);
GF_API gf_tensor *gf_mse_loss(const gf_tensor *input, const gf_tensor *target,
                              gf_reduction reduction);

/* ---- more losses (core/src/ops_loss_extra.c), composed from public ops,
 * so gradients of every order come from those ops (no device kernel).
 * Every loss: new reference, borrowed inputs, NULL on error; float inputs
 * (DTYPE otherwise) on one device (DEVICE); reduction NONE gives the
 * elementwise loss, SUM its sum, MEAN its mean over every element (NaN for
 * 0 elements, as PyTorch); any other reduction fails INVALID. Errors name
 * the op. */

/* PyTorch's binary_cross_entropy: input holds probabilities, target has
 * input's shape exactly (SHAPE otherwise), weight (NULL or broadcastable to
 * input's shape) scales each element. loss = -w (t max(log x, -100) +
 * (1 - t) max(log(1 - x), -100)). An input element outside [0, 1] fails
 * INVALID (one device-to-host read of a flag per call). Deviation: at a
 * clamped log (x exactly 0 or 1) the gradient is that of the clamp (0 from
 * that term), where PyTorch's fused backward divides by max(x (1 - x), 1e-12). */
GF_API gf_tensor *gf_binary_cross_entropy(const gf_tensor *input, const gf_tensor *target,
                                          const gf_tensor *weight, gf_reduction reduction);
/* PyTorch's binary_cross_entropy_with_logits, in the stable form
 * loss = w ((1 - t) x + (1 + (pw - 1) t) softplus(-x)), softplus(-x) taken
 * as log1p(exp(-x)) for x >= 0 and -x + log1p(exp(x)) below (smooth at 0).
 * target has input's shape exactly; weight and pos_weight (each NULL or
 * broadcastable to input's shape, pos_weight typically [C] for the last
 * dim) as PyTorch. */
GF_API gf_tensor *gf_binary_cross_entropy_with_logits(const gf_tensor *input,
                                                      const gf_tensor *target,
                                                      const gf_tensor *weight,
                                                      const gf_tensor *pos_weight,
                                                      gf_reduction reduction);
/* PyTorch's l1_loss: |input - target|; input and target broadcast (PyTorch
 * warns there, graft does not). */
GF_API gf_tensor *gf_l1_loss(const gf_tensor *input, const gf_tensor *target,
                             gf_reduction reduction);
/* PyTorch's smooth_l1_loss (PyTorch's default beta is 1.0): with z =
 * |input - target|, 0.5 z^2 / beta where z < beta, else z - 0.5 beta;
 * beta 0 is l1_loss. beta negative, NaN or infinite fails INVALID. */
GF_API gf_tensor *gf_smooth_l1_loss(const gf_tensor *input, const gf_tensor *target,
                                    gf_reduction reduction, double beta);
/* PyTorch's huber_loss (default delta 1.0): 0.5 z^2 where z < delta, else
 * delta (z - 0.5 delta). delta <= 0, NaN or infinite fails INVALID. */
GF_API gf_tensor *gf_huber_loss(const gf_tensor *input, const gf_tensor *target,
                                gf_reduction reduction, double delta);
/* PyTorch's kl_div: input holds log-probabilities; target probabilities
 * (loss = xlogy(t, t) - t input: 0 where t == 0, NaN where t < 0) or, with
 * log_target, log-probabilities (loss = exp(t) (t - input)). Broadcasts.
 * Also takes GF_REDUCTION_BATCHMEAN (the reduction that matches the KL
 * divergence; MEAN divides by every element, as PyTorch). */
GF_API gf_tensor *gf_kl_div(const gf_tensor *input, const gf_tensor *target,
                            gf_reduction reduction, bool log_target);
/* PyTorch's margin_ranking_loss: max(0, -target (input1 - input2) +
 * margin). The three must have one rank (SHAPE otherwise, as PyTorch) and
 * broadcast together; target holds 1 or -1 (not checked, as PyTorch). */
GF_API gf_tensor *gf_margin_ranking_loss(const gf_tensor *input1, const gf_tensor *input2,
                                         const gf_tensor *target, double margin,
                                         gf_reduction reduction);
/* PyTorch's cosine_similarity (defaults dim 1, eps 1e-8): sum over dim of
 * (x1 / max(||x1||, eps)) (x2 / max(||x2||, eps)), x1 and x2 broadcast
 * together, dim indexes the broadcast shape (negative counts from the end;
 * out of range fails INDEX). 0-dim inputs fail SHAPE; eps < 0 INVALID.
 * A zero vector gives 0 with a finite gradient. */
GF_API gf_tensor *gf_cosine_similarity(const gf_tensor *x1, const gf_tensor *x2, int dim,
                                       double eps);
/* PyTorch's cosine_embedding_loss: input1, input2 both [N, D] with target
 * [N], or both [D] with a 0-dim target (SHAPE otherwise). With PyTorch's
 * cos = sum(x1 x2) / sqrt((|x1|^2 + 1e-12) (|x2|^2 + 1e-12)): loss is
 * 1 - cos where target == 1, max(0, cos - margin) where target == -1,
 * 0 for any other target value. target may be of any dtype. */
GF_API gf_tensor *gf_cosine_embedding_loss(const gf_tensor *input1, const gf_tensor *input2,
                                           const gf_tensor *target, double margin,
                                           gf_reduction reduction);

#ifdef __cplusplus
}
#endif
#endif
