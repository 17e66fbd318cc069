/* SPDX-License-Identifier: BSD-3-Clause */
/* amp_internal.h — the autocast hooks the ops call (autocast.c).
 *
 * The one list of autocast ops and their policies: GF__AMP_OPS. A hooked
 * public op starts with GF__AMP_HOOK(op id, n, call, args...): inside an
 * enabled region it casts its tensor arguments by the op's policy and, when
 * any changed, calls itself again on the cast tensors (which then need no
 * cast: the recursion ends there). Outside a region the hook costs one test
 * of a thread-local. */
#ifndef GRAFT_AMP_INTERNAL_H
#define GRAFT_AMP_INTERNAL_H

#include "internal.h"

typedef enum gf__amp_policy {
    GF__AMP_KEEP = 0, /* inputs' dtype, as outside a region */
    GF__AMP_LOW,      /* the region's dtype (f64 inputs left alone) */
    GF__AMP_F32,      /* f16/bf16 inputs to f32 */
    GF__AMP_PROMOTE,  /* the widest float input */
} gf__amp_policy;

/* X(id, name, policy on "cpu", policy on other device types (PyTorch's CUDA list)) */
#define GF__AMP_OPS(X)                                                                      \
    X(MATMUL, "matmul", GF__AMP_LOW, GF__AMP_LOW)                                           \
    X(LINEAR, "linear", GF__AMP_LOW, GF__AMP_LOW)                                           \
    X(CONV1D, "conv1d", GF__AMP_LOW, GF__AMP_LOW)                                           \
    X(CONV2D, "conv2d", GF__AMP_LOW, GF__AMP_LOW)                                           \
    X(CONV_TRANSPOSE2D, "conv_transpose2d", GF__AMP_LOW, GF__AMP_LOW)                       \
    X(EINSUM, "einsum", GF__AMP_LOW, GF__AMP_LOW)                                           \
    X(SDPA, "scaled_dot_product_attention", GF__AMP_LOW, GF__AMP_LOW)                       \
    X(SOFTMAX, "softmax", GF__AMP_KEEP, GF__AMP_F32)                                        \
    X(LOG_SOFTMAX, "log_softmax", GF__AMP_KEEP, GF__AMP_F32)                                \
    X(SUM, "sum", GF__AMP_KEEP, GF__AMP_F32)                                                \
    X(CUMSUM, "cumsum", GF__AMP_KEEP, GF__AMP_F32)                                          \
    X(LAYER_NORM, "layer_norm", GF__AMP_KEEP, GF__AMP_F32)                                  \
    X(GROUP_NORM, "group_norm", GF__AMP_KEEP, GF__AMP_F32)                                  \
    X(LOGSUMEXP, "logsumexp", GF__AMP_KEEP, GF__AMP_F32)                                    \
    X(PROD, "prod", GF__AMP_F32, GF__AMP_F32)                                               \
    X(MSE_LOSS, "mse_loss", GF__AMP_F32, GF__AMP_F32)                                       \
    X(L1_LOSS, "l1_loss", GF__AMP_F32, GF__AMP_F32)                                         \
    X(SMOOTH_L1_LOSS, "smooth_l1_loss", GF__AMP_F32, GF__AMP_F32)                           \
    X(HUBER_LOSS, "huber_loss", GF__AMP_F32, GF__AMP_F32)                                   \
    X(CROSS_ENTROPY, "cross_entropy", GF__AMP_F32, GF__AMP_F32)                             \
    X(NLL_LOSS, "nll_loss", GF__AMP_F32, GF__AMP_F32)                                       \
    X(KL_DIV, "kl_div", GF__AMP_F32, GF__AMP_F32)                                           \
    X(BCE, "binary_cross_entropy", GF__AMP_F32, GF__AMP_F32)                                \
    X(BCE_WITH_LOGITS, "binary_cross_entropy_with_logits", GF__AMP_F32, GF__AMP_F32)        \
    X(CAT, "cat", GF__AMP_PROMOTE, GF__AMP_PROMOTE)                                         \
    X(STACK, "stack", GF__AMP_PROMOTE, GF__AMP_PROMOTE)

typedef enum gf__amp_op {
#define GF__AMP_ENUM(id, name, cpu, other) GF__AMP_##id,
    GF__AMP_OPS(GF__AMP_ENUM)
#undef GF__AMP_ENUM
        GF__AMP_OP_COUNT
} gf__amp_op;

/* Non-zero while this thread has an open region and is not inside backward. */
extern _Thread_local int gf__amp_live;

/* Casts args[0..n) (NULL and non-float entries are skipped) for op in place:
 * a replaced entry points to a new reference also stored in owned[i] (NULL
 * where unchanged). Returns 1 when any changed, 0 when none, -1 on error
 * (owned released, error set). */
int gf__autocast_args(gf__amp_op op, const gf_tensor **args, int n, gf_tensor **owned);
void gf__autocast_release(gf_tensor **owned, int n);
/* Backward runs with autocast off: the engine brackets it. */
int gf__autocast_suspend(void);
void gf__autocast_resume(int saved);

#define GF__AMP_HOOK(op, n, call, ...)                                                      \
    do {                                                                                    \
        if (gf__amp_live) {                                                                 \
            const gf_tensor *amp_v[n] = {__VA_ARGS__};                                      \
            gf_tensor *amp_own[n];                                                          \
            int amp_r = gf__autocast_args(GF__AMP_##op, amp_v, n, amp_own);                 \
            if (amp_r < 0) return NULL;                                                     \
            if (amp_r > 0) {                                                                \
                gf_tensor *amp_y = (call);                                                  \
                gf__autocast_release(amp_own, n);                                           \
                return amp_y;                                                               \
            }                                                                               \
        }                                                                                   \
    } while (0)

/* The same for ops taking an array of n tensors (cat, stack, einsum):
 * `call` uses amp_list. At most 64 entries are autocast (more run as given). */
#define GF__AMP_HOOK_LIST(op, list, n, call)                                                \
    do {                                                                                    \
        if (gf__amp_live && (list) && (n) > 0 && (n) <= 64) {                               \
            const gf_tensor *amp_v[64];                                                     \
            gf_tensor *amp_own[64];                                                         \
            for (int amp_i = 0; amp_i < (n); amp_i++) amp_v[amp_i] = (list)[amp_i];         \
            int amp_r = gf__autocast_args(GF__AMP_##op, amp_v, (n), amp_own);               \
            if (amp_r < 0) return NULL;                                                     \
            if (amp_r > 0) {                                                                \
                gf_tensor *const *amp_list = (gf_tensor *const *)(void *)amp_v;             \
                gf_tensor *amp_y = (call);                                                  \
                gf__autocast_release(amp_own, (n));                                         \
                return amp_y;                                                               \
            }                                                                               \
        }                                                                                   \
    } while (0)

#endif
