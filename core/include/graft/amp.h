/* SPDX-License-Identifier: BSD-3-Clause */
/* graft/amp.h — mixed precision: autocast regions and loss scaling, as
 * torch.autocast and torch.amp.GradScaler.
 *
 * Autocast. Inside a region opened by gf_autocast_begin(device_type, dtype)
 * the ops on tensors of that device type pick their compute dtype from
 * PyTorch's lists for that device type (docs/user-guide.md, "Mixed
 * precision"):
 *  - low: matmul, linear, conv1d, conv2d, conv_transpose2d, einsum,
 *    scaled_dot_product_attention cast their f32/f16/bf16 inputs to `dtype`
 *    (f64 inputs are left alone, as PyTorch);
 *  - f32: the losses and prod (every device type); on device types other
 *    than "cpu" (PyTorch's CUDA list) also softmax, log_softmax, exp, log,
 *    pow, sum, cumsum, layer_norm, group_norm, logsumexp: f16/bf16 inputs
 *    are cast to f32;
 *  - promote: cat and stack cast every float input to the widest of them;
 *  - every other op runs in its inputs' dtype, as outside a region.
 * The casts are recorded by autograd like gf_to_dtype, so backward runs each
 * op in the dtype its forward chose and an f32 leaf gets an f32 gradient.
 * The engine runs backward with autocast off (PyTorch's backward formulas sit
 * below autocast). Within the outermost region each f32 leaf that requires
 * grad is cast once per dtype (the autocast cache; torch.autocast(...,
 * cache_enabled=True)), dropped when the outermost region ends.
 * The state is per thread: a region never affects another thread. Regions
 * nest; gf_autocast_begin_ex(device_type, dtype, false) opens a region in
 * which autocast is off for that device type (torch.autocast(enabled=False)).
 * Every begin needs one end on the same thread. */
#ifndef GRAFT_AMP_H
#define GRAFT_AMP_H

#include "graft/autograd.h"

#ifdef __cplusplus
extern "C" {
#endif

/* device_type: "cpu", "cuda", "vulkan", "opencl" (gf_device_type's names;
 * any name up to 15 characters). dtype: GF_BF16 or GF_F16.
 * Fails: INVALID (NULL or too long a name, nesting deeper than 64),
 * DTYPE (another dtype). */
GF_API gf_status gf_autocast_begin(const char *device_type, gf_dtype dtype);
/* As gf_autocast_begin; enabled = false turns autocast off for device_type
 * inside the region (dtype is then not used but still checked). */
GF_API gf_status gf_autocast_begin_ex(const char *device_type, gf_dtype dtype, bool enabled);
/* Closes the innermost region of this thread. Fails: INVALID when none is open. */
GF_API gf_status gf_autocast_end(void);
/* Whether ops on device_type are autocast here, and to which dtype (GF_F32
 * when not). */
GF_API bool gf_autocast_is_enabled(const char *device_type);
GF_API gf_dtype gf_autocast_get_dtype(const char *device_type);
/* Number of cached casts on this thread (for tests and diagnostics). */
GF_API int gf_autocast_cache_size(void);

/* ---- loss scaling (torch.amp.GradScaler) */
typedef struct gf_grad_scaler gf_grad_scaler;
typedef struct gf_grad_scaler_opts {
    double init_scale;      /* 65536 (2^16) */
    double growth_factor;   /* 2.0; must be > 1 */
    double backoff_factor;  /* 0.5; must be in (0, 1) */
    int64_t growth_interval; /* 2000; must be > 0 */
    bool enabled;           /* true; false: every call is a pass-through */
} gf_grad_scaler_opts;
/* PyTorch's defaults (init 2^16, growth 2, backoff 0.5, interval 2000, enabled). */
GF_API gf_grad_scaler_opts gf_grad_scaler_default_opts(void);
/* opts NULL: the defaults. Fails: INVALID (a value PyTorch refuses). */
GF_API gf_grad_scaler *gf_grad_scaler_create(const gf_grad_scaler_opts *opts);
GF_API void gf_grad_scaler_destroy(gf_grad_scaler *s);
/* loss * scale, in loss's dtype (a new reference; autograd records it).
 * Disabled: a new reference to loss. */
GF_API gf_tensor *gf_grad_scaler_scale(gf_grad_scaler *s, const gf_tensor *loss);
/* Divides every gradient of opt's parameters by the scale in place and notes
 * whether any is inf or NaN. Once per step: INVALID when called twice before
 * gf_grad_scaler_update, or after gf_grad_scaler_step. */
GF_API gf_status gf_grad_scaler_unscale_(gf_grad_scaler *s, gf_optimizer *opt);
/* Unscales (unless done) and runs gf_optimizer_step unless a gradient was
 * inf or NaN. *stepped (may be NULL) says whether the step ran. */
GF_API gf_status gf_grad_scaler_step(gf_grad_scaler *s, gf_optimizer *opt, bool *stepped);
/* After the step(s) of an iteration: an inf/NaN seen multiplies the scale by
 * backoff_factor and restarts the count; otherwise growth_interval good
 * steps in a row multiply it by growth_factor. new_scale > 0 (not NaN, not
 * inf) replaces the scale instead (torch: update(new_scale)); pass 0 for
 * none. Fails: INVALID (new_scale negative, inf or NaN). */
GF_API gf_status gf_grad_scaler_update(gf_grad_scaler *s, double new_scale);
GF_API double gf_grad_scaler_get_scale(const gf_grad_scaler *s); /* 1.0 when disabled */
GF_API int64_t gf_grad_scaler_get_growth_tracker(const gf_grad_scaler *s);
GF_API bool gf_grad_scaler_is_enabled(const gf_grad_scaler *s);
/* State for checkpoints (torch: scaler.state_dict()): "<prefix>scale",
 * "<prefix>growth_factor", "<prefix>backoff_factor",
 * "<prefix>growth_interval", "<prefix>growth_tracker" as 0-dim f64 tensors on
 * the default device. Loading checks every key and value first and changes
 * nothing on failure. Fails: INVALID, NOT_FOUND (a missing key). */
GF_API gf_tensor_dict *gf_grad_scaler_state_dict(const gf_grad_scaler *s, const char *prefix);
GF_API gf_status gf_grad_scaler_load_state_dict(gf_grad_scaler *s, const gf_tensor_dict *d,
                                                const char *prefix);

#ifdef __cplusplus
}
#endif

#endif
