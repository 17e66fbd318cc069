/* SPDX-License-Identifier: BSD-3-Clause */
/* graft/layers.h — the layers of PyTorch's torch.nn.functional beyond
 * graft/nn.h: conv1d, transposed convolutions, group and instance norm,
 * adaptive pooling, interpolate, embedding with padding_idx, scaled
 * dot-product attention, linear. Same conventions as graft/ops.h: new
 * references, borrowed (possibly strided) inputs, NULL on error with a
 * message naming the op; float inputs (f32, f64) on one device.
 *
 * Every op here is composed in the core (core/src/ops_layers.c) from public
 * differentiable ops, so gradients of every order come from those ops' rules
 * and every device that runs them runs these. The transposed convolution is
 * the device's conv2d backward-input kernel (its gradients are conv2d and
 * the backward-weight kernel). */
#ifndef GRAFT_LAYERS_H
#define GRAFT_LAYERS_H

#include "graft/nn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- convolutions. As gf_conv2d_opts, 0 in stride, dilation and groups
 * means 1 (PyTorch's defaults); negative values fail INVALID. Deviation:
 * padding is a number only (PyTorch's padding='same'/'valid' strings and
 * padding_mode are absent). */
typedef struct gf_conv1d_opts {
    int stride;
    int padding;
    int dilation;
    int groups;
} gf_conv1d_opts;

/* PyTorch's conv1d: x [N, Ci, L] (or unbatched [Ci, L]), weight
 * [Co, Ci/groups, k], bias [Co] or NULL; y [N, Co, Lo] with
 * Lo = (L + 2 padding - dilation (k - 1) - 1) / stride + 1. Runs as conv2d
 * on an added axis of size 1. */
GF_API gf_tensor *gf_conv1d(const gf_tensor *x, const gf_tensor *weight, const gf_tensor *bias,
                            const gf_conv1d_opts *opts);

typedef struct gf_conv_transpose2d_opts {
    int stride[2];         /* 0 is read as 1 */
    int padding[2];
    int output_padding[2]; /* each < stride or < dilation (PyTorch's rule) */
    int dilation[2];       /* 0 is read as 1 */
    int groups;            /* 0 is read as 1 */
} gf_conv_transpose2d_opts;

/* PyTorch's conv_transpose2d: x [N, Ci, H, W] (or unbatched [Ci, H, W]),
 * weight [Ci, Co/groups, kh, kw] (PyTorch's layout), bias [Co] or NULL;
 * Ho = (H - 1) stride - 2 padding + dilation (kh - 1) + output_padding + 1
 * (likewise Wo). The adjoint of conv2d with the same options. x with zero
 * channels or spatial size, or an output size below 1, fails SHAPE (as
 * PyTorch). opts NULL = stride 1, no padding, dilation 1, groups 1. */
GF_API gf_tensor *gf_conv_transpose2d(const gf_tensor *x, const gf_tensor *weight,
                                      const gf_tensor *bias,
                                      const gf_conv_transpose2d_opts *opts);

typedef struct gf_conv_transpose1d_opts {
    int stride;
    int padding;
    int output_padding;
    int dilation;
    int groups;
} gf_conv_transpose1d_opts;
/* PyTorch's conv_transpose1d: x [N, Ci, L] (or [Ci, L]), weight
 * [Ci, Co/groups, k], bias [Co] or NULL. */
GF_API gf_tensor *gf_conv_transpose1d(const gf_tensor *x, const gf_tensor *weight,
                                      const gf_tensor *bias,
                                      const gf_conv_transpose1d_opts *opts);

/* ---- normalisation */
/* PyTorch's group_norm (default eps 1e-5): x [N, C, *] (rank >= 2),
 * normalised over each group of C / num_groups channels and the spatial
 * dims (biased variance), then weight and bias ([C] each, or NULL) applied
 * per channel. C not divisible by num_groups fails SHAPE; num_groups < 1 or
 * eps < 0 INVALID. */
GF_API gf_tensor *gf_group_norm(const gf_tensor *x, int64_t num_groups, const gf_tensor *weight,
                                const gf_tensor *bias, double eps);
/* PyTorch's instance_norm (defaults use_input_stats true, momentum 0.1,
 * eps 1e-5): x [N, C, *] (rank >= 3), each (n, c) plane normalised over its
 * spatial dims. With use_input_stats the plane's own statistics are used
 * (more than one spatial element needed, SHAPE otherwise) and running_mean /
 * running_var ([C] each, both or neither) are updated in place, without
 * history: r = (1 - momentum) r + momentum s, s the batch mean of the plane
 * means and of the unbiased plane variances. Without it the running
 * statistics normalise (both required, INVALID otherwise). weight, bias
 * [C] or NULL. */
GF_API gf_tensor *gf_instance_norm(const gf_tensor *x, gf_tensor *running_mean,
                                   gf_tensor *running_var, const gf_tensor *weight,
                                   const gf_tensor *bias, bool use_input_stats,
                                   double momentum, double eps);

/* ---- adaptive pooling. x [N, C, H, W] or [C, H, W]; output_size[i] < 0
 * keeps that input size (PyTorch's None). Output cell i of a dim of size n
 * pools the input range [floor(i n / o), ceil((i + 1) n / o)). An input
 * with a 0 spatial or channel size fails SHAPE (as PyTorch). */
GF_API gf_tensor *gf_adaptive_avg_pool2d(const gf_tensor *x, const int64_t output_size[2]);
/* indices (may be NULL) receives a new reference to the i64 argmax
 * positions (flat h * W + w per plane, the first maximum in row-major
 * order), recorded in an open scope like a returned tensor. */
GF_API gf_tensor *gf_adaptive_max_pool2d(const gf_tensor *x, const int64_t output_size[2],
                                         gf_tensor **indices);

/* ---- interpolate (PyTorch's F.interpolate / upsample) */
typedef enum gf_interp_mode {
    GF_INTERP_NEAREST = 0,       /* 'nearest' (PyTorch's default) */
    GF_INTERP_NEAREST_EXACT = 1, /* 'nearest-exact' */
    GF_INTERP_LINEAR = 2,        /* 'linear': 3-D input only */
    GF_INTERP_BILINEAR = 3,      /* 'bilinear': 4-D input only */
    GF_INTERP_AREA = 4           /* 'area': adaptive average pooling */
} gf_interp_mode;
typedef struct gf_interpolate_opts {
    gf_interp_mode mode;
    /* Exactly one of size and scale_factor, for each spatial dim (dim 0
     * only for a 3-D input): size > 0, or scale_factor > 0 (finite) giving
     * floor(in * scale_factor). 0 = not given. */
    int64_t size[2];
    double scale_factor[2];
    /* linear/bilinear only (true with another mode fails INVALID, as
     * PyTorch): corner pixels' centres aligned, src = dst (in - 1) /
     * (out - 1); false (the default): src = (dst + 0.5) / scale - 0.5,
     * clamped at 0. */
    bool align_corners;
    /* With scale_factor: false (PyTorch's default) passes scale_factor to
     * the index computation; true recomputes it as out / in. */
    bool recompute_scale_factor;
} gf_interpolate_opts;
/* x [N, C, L] or [N, C, H, W]. Nearest: src = min(floor(dst s), in - 1)
 * with s = 1 / scale_factor or in / out, in f32 as PyTorch (nearest-exact:
 * floor((dst + 0.5) s)). The result has x's dtype. Deviation: bicubic,
 * trilinear and antialias are absent (INVALID); 5-D input fails SHAPE. */
GF_API gf_tensor *gf_interpolate(const gf_tensor *x, const gf_interpolate_opts *opts);

/* ---- embedding with padding_idx: gf_embedding (ops.h) whose result rows
 * at padding_idx pass no gradient to weight (PyTorch's padding_idx; the
 * row itself is returned as it is). padding_idx negative counts from the
 * end; out of [-num_embeddings, num_embeddings) fails INDEX. Deviation:
 * max_norm, scale_grad_by_freq and sparse are absent. */
GF_API gf_tensor *gf_embedding_padding_idx(const gf_tensor *weight, const gf_tensor *indices,
                                           int64_t padding_idx);

/* ---- attention. PyTorch's scaled_dot_product_attention (the math form):
 * q [..., L, E], k [..., S, E], v [..., S, Ev], batch dims broadcast;
 * softmax(q k^T scale + mask) v with scale NAN = 1 / sqrt(E).
 * attn_mask (NULL or broadcastable to [..., L, S]): bool (true = may
 * attend) or of q's dtype (added). is_causal: a lower-triangular bool mask
 * (top-left aligned, as PyTorch); with attn_mask too fails INVALID.
 * dropout_p in [0, 1) drops attention weights (always, as the functional
 * form does: pass 0 in evaluation). A query row that may attend to nothing
 * gives zeros (PyTorch's math backend from 2.5), with zero gradient.
 * Deviation: enable_gqa is absent (repeat k, v along the head dim). */
GF_API gf_tensor *gf_scaled_dot_product_attention(const gf_tensor *q, const gf_tensor *k,
                                                  const gf_tensor *v,
                                                  const gf_tensor *attn_mask, double dropout_p,
                                                  bool is_causal, double scale);

/* PyTorch's linear: x [..., in] (rank >= 1), weight [out, in], bias [out]
 * or NULL; y = x weight^T + bias. Complex (c64, c128) too: no conjugation,
 * as torch. */
GF_API gf_tensor *gf_linear(const gf_tensor *x, const gf_tensor *weight, const gf_tensor *bias);

#ifdef __cplusplus
}
#endif
#endif
