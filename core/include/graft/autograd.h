/* SPDX-License-Identifier: BSD-3-Clause */
/* graft/autograd.h — reverse-mode automatic differentiation.
 *
 * The semantics are PyTorch's (docs/autograd.md lists them rule by rule):
 * an op records a backward node when grad mode is on and an input requires
 * grad; gf_backward / gf_grad run the recorded graph. Same conventions as the
 * rest of graft: new references are documented, errors return NULL / a
 * status with a message (status GF_ERR_AUTOGRAD for broken autograd rules). */
#ifndef GRAFT_AUTOGRAD_H
#define GRAFT_AUTOGRAD_H

#include "graft/nn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- flags */
/* Fails: AUTOGRAD for a non-float tensor, for turning it off on a non-leaf
 * (use gf_detach), for an inference tensor outside inference mode. */
GF_API gf_status gf_tensor_set_requires_grad(gf_tensor *t, bool requires_grad);
GF_API bool gf_tensor_requires_grad(const gf_tensor *t);
/* A tensor without grad_fn (NULL counts as a leaf). */
GF_API bool gf_tensor_is_leaf(const gf_tensor *t);
/* The accumulated gradient: a new reference, or NULL (with no error) when none. */
GF_API gf_tensor *gf_tensor_grad(const gf_tensor *t);
/* Replaces the gradient (grad NULL clears it, as `t.grad = None`).
 * Fails: SHAPE / DTYPE / DEVICE when grad does not match t; INVALID when grad
 * shares t's memory (t itself or a view of it) or holds t through its own
 * .grad or base (a reference cycle that would never be freed). */
GF_API gf_status gf_tensor_set_grad(gf_tensor *t, const gf_tensor *grad);
/* Keep the gradient of a non-leaf in .grad too (no-op on a leaf).
 * Fails: AUTOGRAD when t does not require grad. */
GF_API gf_status gf_tensor_retain_grad(gf_tensor *t);
GF_API bool gf_tensor_retains_grad(const gf_tensor *t);
/* Name of the node that produced t ("MulBackward"), NULL for a leaf. */
GF_API const char *gf_tensor_grad_fn_name(const gf_tensor *t);
/* A new reference sharing t's storage (and version counter) with no history. */
GF_API gf_tensor *gf_detach(const gf_tensor *t);
GF_API bool gf_tensor_is_inference(const gf_tensor *t);

/* ---- grad modes (thread-local; a new thread starts in GF_GRAD_MODE_GRAD) */
typedef enum gf_grad_mode {
    GF_GRAD_MODE_GRAD = 0,     /* record (the default) */
    GF_GRAD_MODE_NO_GRAD = 1,  /* record nothing */
    GF_GRAD_MODE_INFERENCE = 2 /* record nothing; new tensors are inference tensors */
} gf_grad_mode;
/* Sets the mode and returns the previous one: restore it with another call,
 * so scopes nest: `gf_grad_mode prev = gf_grad_mode_set(NO_GRAD); ...;
 * gf_grad_mode_set(prev);`. */
GF_API gf_grad_mode gf_grad_mode_set(gf_grad_mode mode);
GF_API gf_grad_mode gf_grad_mode_get(void);
GF_API bool gf_is_grad_enabled(void);

/* ---- backward */
/* retain_graph: -1 = same as create_graph (the default), 0 = free saved
 * tensors as nodes run, 1 = keep them. Note that a designated initializer
 * such as {.create_graph = true} leaves retain_graph at 0: write
 * {.retain_graph = -1, .create_graph = true} for the default. */
typedef struct gf_backward_opts {
    int retain_graph;
    bool create_graph;
} gf_backward_opts;
/* Accumulates d(root)/d(leaf) into every leaf's .grad. grad_output may be NULL
 * for a one-element root. opts NULL = defaults. Fails: AUTOGRAD (root does not
 * require grad, graph freed, version mismatch...), SHAPE (grad_output). */
GF_API gf_status gf_backward(gf_tensor *root, const gf_tensor *grad_output,
                             const gf_backward_opts *opts);

typedef struct gf_grad_opts {
    int retain_graph;       /* as gf_backward_opts */
    bool create_graph;
    bool allow_unused;      /* an input the outputs do not depend on gives NULL */
    bool materialize_grads; /* ... or zeros, with allow_unused */
} gf_grad_opts;
/* Gradients of outputs w.r.t. inputs, written as new references to
 * results[0..n_inputs) (NULL for an unused input when allowed). .grad is left
 * untouched. grad_outputs may be NULL (all one-element outputs) or hold NULL
 * entries for one-element outputs. The results are recorded in an open scope
 * like a returned tensor (do not release them in the scope). */
GF_API gf_status gf_grad(gf_tensor *const *outputs, int n_outputs,
                         gf_tensor *const *grad_outputs, gf_tensor *const *inputs, int n_inputs,
                         gf_tensor **results, const gf_grad_opts *opts);

/* ---- hooks. Handles are positive ids; removing one twice is harmless. */
typedef uint64_t gf_hook_handle;
/* Called with the gradient flowing into t. Return NULL to keep it, or a new
 * reference to a replacement (same shape). */
typedef gf_tensor *(*gf_tensor_hook_fn)(const gf_tensor *grad, void *user);
/* Called after t.grad was updated (leaves only). */
typedef void (*gf_post_accumulate_hook_fn)(gf_tensor *t, void *user);
/* Node hooks: pre-hooks see (and may replace, by releasing and storing a new
 * reference) the gradients flowing into the node; post-hooks see both. A
 * hook that returns a failure stops the backward call, which returns that
 * status with the hook's message (say why with gf_set_error, types.h),
 * prefixed with the node's name: "MulBackward: a node pre-hook: ...". */
typedef gf_status (*gf_node_pre_hook_fn)(const char *node_name, gf_tensor **grad_outputs, int n,
                                         void *user);
typedef gf_status (*gf_node_post_hook_fn)(const char *node_name, gf_tensor **grad_inputs,
                                          int n_in, gf_tensor *const *grad_outputs, int n_out,
                                          void *user);
/* Returns 0 with an error when t does not require grad. */
GF_API gf_hook_handle gf_tensor_register_hook(gf_tensor *t, gf_tensor_hook_fn fn, void *user);
/* Leaves only: returns 0 with an error otherwise. */
GF_API gf_hook_handle gf_tensor_register_post_accumulate_hook(gf_tensor *t,
                                                              gf_post_accumulate_hook_fn fn,
                                                              void *user);
/* On t's grad_fn (for a leaf that requires grad: its accumulator node). */
GF_API gf_hook_handle gf_node_register_pre_hook(gf_tensor *t, gf_node_pre_hook_fn fn, void *user);
GF_API gf_hook_handle gf_node_register_post_hook(gf_tensor *t, gf_node_post_hook_fn fn,
                                                 void *user);
GF_API void gf_hook_remove(gf_hook_handle handle);

/* Saved-tensor hooks (thread-local stack, innermost wins): pack runs once
 * when an op saves a tensor for backward, unpack on every use. pack returns
 * an opaque pointer; unpack returns a new reference; release frees the packed
 * value when the graph is freed. Tensors saved this way skip the version check.
 * The hooks run with scope recording suspended: what they make is theirs. They
 * may keep the tensor pack is given: for an op's own output it is an alias
 * without history, so that makes no reference cycle. */
typedef struct gf_saved_tensor_hooks {
    void *(*pack)(const gf_tensor *t, void *user);
    gf_tensor *(*unpack)(void *packed, void *user);
    void (*release)(void *packed, void *user);
    void *user;
} gf_saved_tensor_hooks;
GF_API gf_status gf_saved_tensor_hooks_push(const gf_saved_tensor_hooks *hooks);
GF_API gf_status gf_saved_tensor_hooks_pop(void);

/* ---- custom functions */
typedef struct gf_function_ctx gf_function_ctx;
typedef struct gf_function_def {
    const char *name; /* used in errors and as the node's name */
    /* Runs with grad mode off; writes n_outputs new references. */
    gf_status (*forward)(gf_function_ctx *ctx, gf_tensor *const *inputs, int n_inputs,
                         gf_tensor **outputs, int n_outputs, void *user);
    /* Writes one gradient (new reference, or NULL for none) per input. Runs in
     * grad mode iff create_graph, so it may use graft's differentiable ops.
     * forward and backward fail by returning a failure status, after saying
     * why with gf_set_error (types.h): the call that ran them (gf_function_apply,
     * gf_backward, gf_grad) returns that status with that message, prefixed
     * "<name>: forward: " / "<name>: backward: ". */
    gf_status (*backward)(gf_function_ctx *ctx, gf_tensor *const *grad_outputs, int n_outputs,
                          gf_tensor **grad_inputs, int n_inputs, void *user);
    bool once_differentiable; /* its backward cannot itself be differentiated */
    void *user;
} gf_function_def;
/* Writes n_outputs new references, recorded in an open scope like a returned
 * tensor (do not release them in the scope). inputs may contain NULL (non-tensor
 * slots). */
GF_API gf_status gf_function_apply(const gf_function_def *def, gf_tensor *const *inputs,
                                   int n_inputs, gf_tensor **outputs, int n_outputs);
/* In forward: save tensors (inputs or outputs) for backward. */
GF_API gf_status gf_ctx_save_for_backward(gf_function_ctx *ctx, gf_tensor *const *tensors, int n);
/* In backward: saved tensor i as a new reference (version-checked). */
GF_API gf_tensor *gf_ctx_saved_tensor(gf_function_ctx *ctx, int i);
GF_API int gf_ctx_saved_count(const gf_function_ctx *ctx);
/* In forward: t (an input) was modified in place. */
GF_API gf_status gf_ctx_mark_dirty(gf_function_ctx *ctx, gf_tensor *t);
/* In forward: output t gets no gradient (its grad is always zero / none). */
GF_API gf_status gf_ctx_mark_non_differentiable(gf_function_ctx *ctx, gf_tensor *t);
GF_API bool gf_ctx_needs_input_grad(const gf_function_ctx *ctx, int i);
/* Free-form data for backward (owned by the caller; freed by `release` when
 * the node is freed, if given). */
GF_API void gf_ctx_set_data(gf_function_ctx *ctx, void *data, void (*release)(void *));
GF_API void *gf_ctx_data(const gf_function_ctx *ctx);
/* The optional forward-mode rule of a custom function (graft/forward_ad.h).
 * Called after forward, once per dual level at which some input carries a
 * tangent: input_tangents[i] is input i's tangent there (NULL: zero, or not
 * a tensor); it writes output_tangents[j] (a new reference of output j's
 * shape and dtype, or NULL for a zero tangent). It runs in the caller's
 * grad mode, so tangents made with graft's ops are differentiable; the
 * inputs and outputs it reads carry no tangent at that level. It fails by
 * returning a failure status after gf_set_error. */
typedef gf_status (*gf_function_jvp_fn)(gf_function_ctx *ctx, gf_tensor *const *inputs,
                                        gf_tensor *const *input_tangents, int n_inputs,
                                        gf_tensor *const *outputs, gf_tensor **output_tangents,
                                        int n_outputs, void *user);
/* In forward: gives the function its jvp rule (user is passed to it).
 * Without one, applying the function to an input that carries a tangent
 * fails (AUTOGRAD, naming the function) instead of dropping the tangent. */
GF_API gf_status gf_ctx_set_jvp(gf_function_ctx *ctx, gf_function_jvp_fn jvp, void *user);

/* ---- anomaly mode (process-wide) */
GF_API void gf_set_anomaly_enabled(bool enabled);
GF_API bool gf_is_anomaly_enabled(void);

/* ---- checking gradients numerically */
/* Start from GF_GRADCHECK_OPTS_DEFAULT (graft/types.h, GF_OPTS_INIT); opts
 * NULL = the defaults. eps > 0 (the finite-difference step), atol and rtol
 * >= 0 (0 is allowed: an exact comparison). Backward runs twice and the
 * two results must agree unless skip_determinism. */
typedef struct gf_gradcheck_opts {
    uint32_t init;
    double eps;
    double atol;
    double rtol;
    bool skip_determinism;
    /* Also check forward mode (graft/forward_ad.h): the tangent of the
     * output for a one-hot tangent of each input element, against the same
     * central differences (gf_gradgradcheck passes it on to its check of
     * the gradient, so the jvp of every backward formula is checked too). */
    bool check_forward_ad;
} gf_gradcheck_opts;
#define GF_GRADCHECK_OPTS_DEFAULT                                                          \
    {.init = GF_OPTS_INIT, .eps = 1e-6, .atol = 1e-5, .rtol = 1e-3, .skip_determinism = false, \
     .check_forward_ad = false}
/* The function under test: returns a new reference to one output (of any
 * shape) computed from inputs with graft ops; NULL on failure, after saying
 * why with gf_set_error (or a graft call inside it that failed). */
typedef gf_tensor *(*gf_check_fn)(gf_tensor *const *inputs, int n_inputs, void *user);
/* Compares the analytical Jacobian (backward of each output element) with
 * central differences of fn at inputs (those that require grad). Fails:
 * AUTOGRAD with a message naming the input, the element and both values. */
GF_API gf_status gf_gradcheck(gf_check_fn fn, gf_tensor *const *inputs, int n_inputs,
                              void *user, const gf_gradcheck_opts *opts);
/* The same for the gradient of fn (contracted with a fixed random grad_output):
 * checks second derivatives through create_graph. */
GF_API gf_status gf_gradgradcheck(gf_check_fn fn, gf_tensor *const *inputs, int n_inputs,
                                  void *user, const gf_gradcheck_opts *opts);

/* ---- in-place ops: modify self, bump its version, record history.
 * Fails additionally: AUTOGRAD for a leaf that requires grad or a view of one
 * (in grad mode; a view requiring grad whose base has no history counts),
 * inference tensors outside inference mode, views created in no-grad mode or
 * by split/chunk; SHAPE when the result would not fit self. */
GF_API gf_status gf_add_(gf_tensor *self, const gf_tensor *other);
GF_API gf_status gf_sub_(gf_tensor *self, const gf_tensor *other);
GF_API gf_status gf_mul_(gf_tensor *self, const gf_tensor *other);
GF_API gf_status gf_div_(gf_tensor *self, const gf_tensor *other);
/* self += alpha other / self -= alpha other (gf_add_alpha's rules; an
 * integer self refuses a float result, and a non-integral alpha). */
GF_API gf_status gf_add_alpha_(gf_tensor *self, const gf_tensor *other, double alpha);
GF_API gf_status gf_sub_alpha_(gf_tensor *self, const gf_tensor *other, double alpha);
/* Scalars follow ops.h's rule: a double scalar with an integer or bool self
 * gives an f32 result, which is refused (DTYPE); the _int forms keep an
 * integer self's dtype. */
GF_API gf_status gf_add_scalar_(gf_tensor *self, double s);
GF_API gf_status gf_add_scalar_int_(gf_tensor *self, int64_t s);
GF_API gf_status gf_mul_scalar_(gf_tensor *self, double s);
GF_API gf_status gf_mul_scalar_int_(gf_tensor *self, int64_t s);
GF_API gf_status gf_clamp_(gf_tensor *self, double min, double max);
GF_API gf_status gf_clamp_int_(gf_tensor *self, int64_t min, int64_t max);
GF_API gf_status gf_relu_(gf_tensor *self);
GF_API gf_status gf_sigmoid_(gf_tensor *self);
GF_API gf_status gf_tanh_(gf_tensor *self);
/* The activations PyTorch has in place (F.leaky_relu_, elu_, celu_, selu_,
 * hardtanh_, relu6/silu/gelu/hardsigmoid/hardswish/mish with inplace=True):
 * the out-of-place op's value (graft/ops.h, graft/ops_extra.h) written into
 * self, with the in-place rules above. A float result into an integer self
 * fails DTYPE. Deviation: PyTorch refuses the backward of leaky_relu_ with
 * a negative slope and of elu_ with a negative alpha (it keeps only the
 * result); graft keeps self's old value and differentiates them. */
GF_API gf_status gf_leaky_relu_(gf_tensor *self, double negative_slope);
GF_API gf_status gf_elu_(gf_tensor *self, double alpha);
GF_API gf_status gf_celu_(gf_tensor *self, double alpha);
GF_API gf_status gf_selu_(gf_tensor *self);
GF_API gf_status gf_hardtanh_(gf_tensor *self, double min_val, double max_val);
GF_API gf_status gf_relu6_(gf_tensor *self);
GF_API gf_status gf_silu_(gf_tensor *self);
GF_API gf_status gf_gelu_(gf_tensor *self, bool approximate);
GF_API gf_status gf_hardsigmoid_(gf_tensor *self);
GF_API gf_status gf_hardswish_(gf_tensor *self);
GF_API gf_status gf_mish_(gf_tensor *self);
GF_API gf_status gf_exp_(gf_tensor *self);
GF_API gf_status gf_fill_(gf_tensor *self, double value);
GF_API gf_status gf_zero_(gf_tensor *self);
/* src broadcast to self's shape and converted to its dtype. */
GF_API gf_status gf_copy_(gf_tensor *self, const gf_tensor *src);
GF_API gf_status gf_masked_fill_(gf_tensor *self, const gf_tensor *mask, double value);
GF_API gf_status gf_index_add_(gf_tensor *self, int dim, const gf_tensor *index,
                               const gf_tensor *src);
GF_API gf_status gf_scatter_add_(gf_tensor *self, int dim, const gf_tensor *index,
                                 const gf_tensor *src);

/* ---- optimisers: update parameters in place under no-grad. Parameters
 * are float or complex leaves; a complex one is updated as PyTorch does it,
 * through gf_view_as_real of it, its gradient and its state (the real and
 * imaginary parts are separate coordinates: Adam's second moment is per
 * part), and its state stays complex (as torch's state_dict). L-BFGS takes
 * real parameters only. */
typedef struct gf_optimizer gf_optimizer;
typedef struct gf_sgd_opts {
    double lr;
    double momentum;
    double dampening;
    double weight_decay;
    bool nesterov;
} gf_sgd_opts;
/* The next three start from their _DEFAULT initialiser (GF_OPTS_INIT in
 * graft/types.h: a field of 0 means 0); opts NULL = PyTorch's defaults.
 * Adam and AdamW (decoupled_weight_decay; GF_ADAMW_OPTS_DEFAULT has
 * torch.optim.AdamW's weight_decay 1e-2): lr >= 0, betas in [0, 1),
 * eps >= 0, weight_decay >= 0. */
typedef struct gf_adam_opts {
    uint32_t init;
    double lr;
    double beta1, beta2;
    double eps;
    double weight_decay;
    bool decoupled_weight_decay; /* true = AdamW */
} gf_adam_opts;
#define GF_ADAM_OPTS_DEFAULT                                                           \
    {.init = GF_OPTS_INIT, .lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8,      \
     .weight_decay = 0.0, .decoupled_weight_decay = false}
#define GF_ADAMW_OPTS_DEFAULT                                                          \
    {.init = GF_OPTS_INIT, .lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8,      \
     .weight_decay = 1e-2, .decoupled_weight_decay = true}
/* PyTorch's RMSprop. alpha in [0, 1]; centered: normalise by the variance
 * estimate (square_avg - grad_avg^2). */
typedef struct gf_rmsprop_opts {
    uint32_t init;
    double lr;
    double alpha;
    double eps;
    double weight_decay;
    double momentum;
    bool centered;
} gf_rmsprop_opts;
#define GF_RMSPROP_OPTS_DEFAULT                                                        \
    {.init = GF_OPTS_INIT, .lr = 1e-2, .alpha = 0.99, .eps = 1e-8, .weight_decay = 0.0, \
     .momentum = 0.0, .centered = false}
/* PyTorch's Adagrad: lr / (1 + (step - 1) lr_decay), the sum of squared
 * gradients starting at initial_accumulator_value. */
typedef struct gf_adagrad_opts {
    uint32_t init;
    double lr;
    double lr_decay;
    double weight_decay;
    double initial_accumulator_value;
    double eps;
} gf_adagrad_opts;
#define GF_ADAGRAD_OPTS_DEFAULT                                                        \
    {.init = GF_OPTS_INIT, .lr = 1e-2, .lr_decay = 0.0, .weight_decay = 0.0,           \
     .initial_accumulator_value = 0.0, .eps = 1e-10}
/* Retain the parameters until gf_optimizer_destroy. Fails: INVALID (bad
 * options, a parameter that is not a float leaf requiring grad). */
GF_API gf_optimizer *gf_sgd_create(gf_tensor *const *params, int n, const gf_sgd_opts *opts);
GF_API gf_optimizer *gf_adam_create(gf_tensor *const *params, int n, const gf_adam_opts *opts);
GF_API gf_optimizer *gf_rmsprop_create(gf_tensor *const *params, int n,
                                       const gf_rmsprop_opts *opts);
GF_API gf_optimizer *gf_adagrad_create(gf_tensor *const *params, int n,
                                       const gf_adagrad_opts *opts);
/* PyTorch's Adadelta: square_avg = rho sa + (1 - rho) g^2; delta =
 * sqrt(acc_delta + eps) / sqrt(sa + eps) g; acc_delta = rho ad + (1 - rho)
 * delta^2; p -= lr delta. rho in [0, 1]. */
typedef struct gf_adadelta_opts {
    uint32_t init;
    double lr, rho, eps, weight_decay;
} gf_adadelta_opts;
#define GF_ADADELTA_OPTS_DEFAULT \
    {.init = GF_OPTS_INIT, .lr = 1.0, .rho = 0.9, .eps = 1e-6, .weight_decay = 0.0}
/* PyTorch's NAdam (Nesterov momentum with momentum_decay's schedule of mu;
 * decoupled_weight_decay = NAdamW) and RAdam (the variance rectification
 * of Liu et al.; decoupled_weight_decay = RAdamW). betas in [0, 1). */
typedef struct gf_nadam_opts {
    uint32_t init;
    double lr, beta1, beta2, eps, weight_decay, momentum_decay;
    bool decoupled_weight_decay;
} gf_nadam_opts;
#define GF_NADAM_OPTS_DEFAULT                                                          \
    {.init = GF_OPTS_INIT, .lr = 2e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8,      \
     .weight_decay = 0.0, .momentum_decay = 4e-3, .decoupled_weight_decay = false}
typedef struct gf_radam_opts {
    uint32_t init;
    double lr, beta1, beta2, eps, weight_decay;
    bool decoupled_weight_decay;
} gf_radam_opts;
#define GF_RADAM_OPTS_DEFAULT                                                          \
    {.init = GF_OPTS_INIT, .lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8,      \
     .weight_decay = 0.0, .decoupled_weight_decay = false}
/* Options as the others (NULL = the defaults; from the _DEFAULT initialiser
 * or refused). State keys: Adadelta square_avg, acc_delta, step; NAdam
 * exp_avg, exp_avg_sq, mu_product (0-dim), step; RAdam exp_avg,
 * exp_avg_sq, step. */
GF_API gf_optimizer *gf_adadelta_create(gf_tensor *const *params, int n,
                                        const gf_adadelta_opts *opts);
GF_API gf_optimizer *gf_nadam_create(gf_tensor *const *params, int n, const gf_nadam_opts *opts);
GF_API gf_optimizer *gf_radam_create(gf_tensor *const *params, int n, const gf_radam_opts *opts);
GF_API gf_status gf_optimizer_step(gf_optimizer *opt);
/* Clears every parameter's .grad (set_to_none). */
GF_API gf_status gf_optimizer_zero_grad(gf_optimizer *opt);
/* Writes zeros into every existing .grad in place (set_to_none=False): the
 * gradients keep their memory, as a captured graph (graft/graph.h) needs
 * when they are its inputs. Fails: INVALID (opt NULL). */
GF_API gf_status gf_optimizer_zero_grad_keep(gf_optimizer *opt);
/* Ends the caller's use of opt (NULL: nothing). The schedules made on it
 * and the graphs that captured one of its steps hold it too: its state (and
 * its hold on the parameters) goes when the last of them is destroyed, so a
 * graph replays its captured steps whatever the order of the destroys. */
GF_API void gf_optimizer_destroy(gf_optimizer *opt);
/* The learning rate (torch's param_groups[g]["lr"]): set gives it to every
 * parameter group (graft/schedule.h), from the next step; get returns group
 * 0's. Fails: INVALID (opt NULL, lr negative or not finite). get returns -1
 * for NULL. */
/* The parameters, in the order given at creation (all groups): a borrowed
 * reference, valid until gf_optimizer_destroy (torch: param_groups' params).
 * gf_optimizer_param fails: INVALID (NULL), INDEX. num_params(NULL) is 0. */
GF_API int gf_optimizer_num_params(const gf_optimizer *opt);
GF_API gf_tensor *gf_optimizer_param(const gf_optimizer *opt, int i);
GF_API gf_status gf_optimizer_set_lr(gf_optimizer *opt, double lr);
GF_API double gf_optimizer_get_lr(const gf_optimizer *opt);

/* ---- L-BFGS (torch.optim.LBFGS): each step runs up to max_iter iterations,
 * calling the closure to re-evaluate; the closure zeroes the gradients,
 * computes the loss, runs backward and returns the loss (a one-element
 * tensor, a new reference, which graft releases) or NULL with an error.
 * strong_wolfe selects PyTorch's line_search_fn="strong_wolfe"; max_eval <
 * 0 means PyTorch's None (max_iter * 5 / 4). One parameter group. The
 * curvature history lives on the host in f64 (see core/src/autograd/
 * lbfgs.c). */
typedef struct gf_lbfgs_opts {
    uint32_t init;
    double lr;
    int64_t max_iter, max_eval;
    double tolerance_grad, tolerance_change;
    int64_t history_size;
    bool strong_wolfe;
    bool maximize;
} gf_lbfgs_opts;
#define GF_LBFGS_OPTS_DEFAULT                                                          \
    {.init = GF_OPTS_INIT, .lr = 1.0, .max_iter = 20, .max_eval = -1,                  \
     .tolerance_grad = 1e-7, .tolerance_change = 1e-9, .history_size = 100,            \
     .strong_wolfe = false, .maximize = false}
typedef struct gf_lbfgs gf_lbfgs;
typedef gf_tensor *(*gf_lbfgs_closure)(void *user);
/* Fails INVALID (options, parameters as gf_sgd_create's), OUT_OF_MEMORY. */
GF_API gf_lbfgs *gf_lbfgs_create(gf_tensor *const *params, int n, const gf_lbfgs_opts *opts);
/* One step; *loss (may be NULL) receives the first evaluation's loss, as
 * torch's step returns. Fails with the closure's errors (the parameters
 * are then wherever the iteration had put them). */
GF_API gf_status gf_lbfgs_step(gf_lbfgs *l, gf_lbfgs_closure fn, void *user, double *loss);
/* Evaluations and iterations since creation (torch's state func_evals,
 * n_iter); -1 for NULL. */
GF_API int64_t gf_lbfgs_func_evals(const gf_lbfgs *l);
GF_API int64_t gf_lbfgs_n_iter(const gf_lbfgs *l);
GF_API void gf_lbfgs_destroy(gf_lbfgs *l);

/* ---- optimiser state, for checkpoints (torch's optimizer.state_dict()).
 * The state of parameter i (its position in the create call, then in the
 * groups added, graft/schedule.h) is named as torch names it:
 *   "<prefix><i>.momentum_buffer"                  SGD with momentum
 *   "<prefix><i>.exp_avg", ".exp_avg_sq", ".step"  Adam / AdamW
 *   "<prefix><i>.square_avg", ".step", and ".momentum_buffer" (momentum > 0),
 *   ".grad_avg" (centered)                         RMSprop
 *   "<prefix><i>.sum", ".step"                     Adagrad
 * (the step count is a 0-dim i64 tensor). A parameter not stepped yet has
 * no entries. The hyperparameters are torch's param_groups: a JSON list,
 * as json.dumps(optimizer.state_dict()["param_groups"]) writes it, in the
 * dict's string metadata under "<P>param_groups", P the prefix without a
 * trailing "state." component (so a PyTorch optimizer's state dict flattened to
 * "state.<i>.<key>" tensors with metadata {"param_groups": json} loads
 * with prefix "state."). Loading replaces the hyperparameters with the
 * checkpoint's, as torch does: lr, weight_decay and initial_lr per group,
 * the others (one value for all groups in graft) the same in every group;
 * a value that decides which state is kept (momentum zero or not, centered)
 * must equal the optimiser's; amsgrad and maximize must be false; "params"
 * must number the parameters as graft does (core/src/autograd/
 * optim_groups.c). gf_tensor_dict and its functions are in graft/interop.h;
 * gf_save_safetensors_dict writes the tensors and the metadata,
 * gf_load_safetensors reads them. */
typedef struct gf_tensor_dict gf_tensor_dict;
/* A new dict of the state (prefix NULL = ""). Its moment and momentum
 * tensors are the optimiser's own (as in torch: later steps change them);
 * the step counts are new tensors. Fails: INVALID (opt NULL, a prefix over
 * 200 bytes), OUT_OF_MEMORY. */
GF_API gf_tensor_dict *gf_optimizer_state_dict(const gf_optimizer *opt, const char *prefix);
/* Replaces the state with copies of the entries of d whose names start with
 * prefix (NULL = ""); entries with other names are ignored, so one
 * checkpoint can hold the model and the optimiser. Each entry must be one
 * this optimiser has (by kind: an Adam entry in an SGD optimiser is an
 * error), for a parameter in range, with the parameter's sizes and dtype
 * (a step: a 0-dim integer >= 0); a parameter needs every entry its
 * optimiser's options keep, or none. A parameter without entries starts afresh. Values are
 * copied onto each parameter's device. Everything is checked before
 * anything changes: on failure the optimiser is as it was.
 * Fails: INVALID (naming the entry and what is wrong), and the device's
 * errors. */
GF_API gf_status gf_optimizer_load_state_dict(gf_optimizer *opt, const gf_tensor_dict *d,
                                              const char *prefix);

/* ---- gradient clipping (core/src/autograd/train_utils.c), in place on
 * each parameter's .grad under no-grad; parameters without a gradient are
 * skipped. Fails: INVALID (NULL list entry, bad option), and what the ops
 * fail with. */
/* PyTorch's torch.nn.utils.clip_grad_norm_: the total norm of order
 * norm_type (p > 0, INFINITY for the max norm; PyTorch's default 2) over
 * every gradient as if concatenated; each gradient is then multiplied by
 * min(max_norm / (total + 1e-6), 1). total_norm (may be NULL) receives the
 * norm before clipping (0 with no gradients). With error_if_nonfinite a
 * NaN or infinite total fails INVALID before anything is scaled; without
 * it the gradients are scaled anyway, as PyTorch. Deviation: the norm is
 * combined on the host in f64 (one device read per gradient), PyTorch
 * keeps it on the device in the gradients' dtype; norm_type <= 0 (PyTorch's
 * 0-"norm", -inf) fails INVALID. */
GF_API gf_status gf_clip_grad_norm_(gf_tensor *const *params, int n, double max_norm,
                                    double norm_type, bool error_if_nonfinite,
                                    double *total_norm);
/* PyTorch's clip_grad_value_: clamps every gradient to [-clip_value,
 * clip_value]. clip_value negative or NaN fails INVALID (PyTorch does not
 * check). */
GF_API gf_status gf_clip_grad_value_(gf_tensor *const *params, int n, double clip_value);

/* ---- parameter initialisers, as torch.nn.init (the _ marks in place).
 * t: a float tensor (DTYPE otherwise), usually a leaf parameter that
 * requires grad: it is written under no-grad (no history, version bumped).
 * Random ones draw from graft's generator (gf_manual_seed), so the
 * distribution is PyTorch's but not its numbers. A 0-element tensor is
 * left alone (PyTorch warns). PyTorch's default init of a linear/conv
 * weight is gf_init_kaiming_uniform_(w, sqrt(5), GF_FAN_IN,
 * GF_NONLIN_LEAKY_RELU) (bound 1 / sqrt(fan_in)), of its bias uniform in
 * +-1 / sqrt(fan_in). */
typedef enum gf_nonlinearity {
    GF_NONLIN_LINEAR = 0, /* also PyTorch's conv1d/2d/3d and transposed forms: gain 1 */
    GF_NONLIN_SIGMOID = 1,  /* 1 */
    GF_NONLIN_TANH = 2,     /* 5/3 */
    GF_NONLIN_RELU = 3,     /* sqrt(2) */
    GF_NONLIN_LEAKY_RELU = 4, /* sqrt(2 / (1 + slope^2)) */
    GF_NONLIN_SELU = 5      /* 3/4 */
} gf_nonlinearity;
typedef enum gf_fan_mode { GF_FAN_IN = 0, GF_FAN_OUT = 1 } gf_fan_mode;
/* torch.nn.init.calculate_gain. param: leaky_relu's negative slope (NAN
 * for PyTorch's default 0.01), ignored by the others. Fails INVALID for an
 * unknown nonlinearity or an infinite slope. */
GF_API gf_status gf_init_calculate_gain(gf_nonlinearity nonlinearity, double param,
                                        double *gain);
/* PyTorch's _calculate_fan_in_and_fan_out: with receptive = the product
 * of dims 2.., fan_in = size(1) * receptive, fan_out = size(0) * receptive.
 * Fails SHAPE for rank < 2. Either output may be NULL. */
GF_API gf_status gf_init_fans(const gf_tensor *t, int64_t *fan_in, int64_t *fan_out);
GF_API gf_status gf_init_constant_(gf_tensor *t, double value);
GF_API gf_status gf_init_zeros_(gf_tensor *t);
GF_API gf_status gf_init_ones_(gf_tensor *t);
/* U(a, b); INVALID unless a <= b, both finite (PyTorch defaults 0, 1). */
GF_API gf_status gf_init_uniform_(gf_tensor *t, double a, double b);
/* N(mean, std^2); INVALID unless finite and std >= 0 (defaults 0, 1). */
GF_API gf_status gf_init_normal_(gf_tensor *t, double mean, double std);
/* std = gain sqrt(2 / (fan_in + fan_out)); uniform in +-sqrt(3) std
 * (PyTorch's default gain 1). SHAPE for rank < 2. */
GF_API gf_status gf_init_xavier_uniform_(gf_tensor *t, double gain);
GF_API gf_status gf_init_xavier_normal_(gf_tensor *t, double gain);
/* std = calculate_gain(nonlinearity, a) / sqrt(fan), fan by mode; uniform
 * in +-sqrt(3) std. PyTorch's defaults: a = 0, GF_FAN_IN,
 * GF_NONLIN_LEAKY_RELU (gain sqrt(2) at a = 0). SHAPE for rank < 2. */
GF_API gf_status gf_init_kaiming_uniform_(gf_tensor *t, double a, gf_fan_mode mode,
                                          gf_nonlinearity nonlinearity);
GF_API gf_status gf_init_kaiming_normal_(gf_tensor *t, double a, gf_fan_mode mode,
                                         gf_nonlinearity nonlinearity);
/* PyTorch's orthogonal_: t viewed as rows = size(0) by cols = numel / rows;
 * a normal matrix of that shape (transposed when rows < cols) is QR
 * factored (Householder, on the host in f64), Q's columns multiplied by the
 * signs of R's diagonal, transposed back, times gain. The rows (rows <=
 * cols) or the columns (rows >= cols) come out orthonormal times gain
 * (PyTorch's default gain 1). Fails SHAPE for rank < 2, INVALID for a
 * gain that is not finite. */
GF_API gf_status gf_init_orthogonal_(gf_tensor *t, double gain);
/* PyTorch's trunc_normal_ (defaults mean 0, std 1, a -2, b 2): N(mean,
 * std^2) truncated to [a, b] by the inverse CDF (uniform in [2 cdf(a) - 1,
 * 2 cdf(b) - 1], erfinv, scaled, clamped to [a, b]), computed on the host
 * in f64 from uniforms of graft's generator. Fails INVALID unless mean and
 * std are finite, std >= 0 and a < b (either may be infinite). Unlike
 * PyTorch, no warning when mean is more than 2 std outside [a, b]. */
GF_API gf_status gf_init_trunc_normal_(gf_tensor *t, double mean, double std, double a,
                                       double b);

#ifdef __cplusplus
}
#endif
#endif
