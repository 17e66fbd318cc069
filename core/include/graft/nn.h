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
    GF_REDUCTION_SUM = 2
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

#ifdef __cplusplus
}
#endif
#endif
