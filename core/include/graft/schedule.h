/* SPDX-License-Identifier: BSD-3-Clause */
/* graft/schedule.h — parameter groups and learning-rate schedules for every
 * optimiser of graft/autograd.h (SGD, Adam/AdamW, RMSprop, Adagrad), as
 * torch.optim's param_groups and torch.optim.lr_scheduler. */
#ifndef GRAFT_SCHEDULE_H
#define GRAFT_SCHEDULE_H

#include "graft/autograd.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- parameter groups (torch's optimizer.add_param_group). The create
 * call's parameters are group 0, with its lr and weight_decay; each added
 * group has its own lr and weight_decay (NAN = the create call's), the
 * other options are the optimiser's. Parameter indices in the state dict
 * continue across groups in the order they were added. Fails: INVALID
 * (opt NULL, bad lr / weight_decay, a parameter as gf_*_create refuses, or
 * one already in a group), OUT_OF_MEMORY. */
#define GF_OPTIMIZER_MAX_GROUPS 1024
GF_API gf_status gf_optimizer_add_param_group(gf_optimizer *opt, gf_tensor *const *params, int n,
                                              double lr, double weight_decay);
/* 0 for NULL. */
GF_API int gf_optimizer_group_count(const gf_optimizer *opt);
/* Per group; set fails INVALID (opt NULL, value negative or not finite),
 * INDEX (group out of range); get returns -1 for those. gf_optimizer_set_lr
 * sets every group's lr; gf_optimizer_get_lr is group 0's. */
GF_API gf_status gf_optimizer_set_group_lr(gf_optimizer *opt, int group, double lr);
GF_API double gf_optimizer_get_group_lr(const gf_optimizer *opt, int group);
GF_API gf_status gf_optimizer_set_group_weight_decay(gf_optimizer *opt, int group,
                                                     double weight_decay);
GF_API double gf_optimizer_get_group_weight_decay(const gf_optimizer *opt, int group);

/* ---- learning-rate schedules. A schedule drives the lr of every group of
 * one optimiser (which must outlive it). As in PyTorch, creating it records
 * each group's lr as that group's initial_lr (once per optimiser: later
 * schedules on it find the same base), sets the lr for step 0, and each
 * gf_lr_scheduler_step() (called after gf_optimizer_step, once per epoch
 * or per batch as the schedule is meant) advances last_epoch by one and
 * sets lr(last_epoch). Every lr is computed in closed form from initial_lr
 * and last_epoch (PyTorch's _get_closed_form_lr), so a schedule's state is
 * last_epoch and the base lrs. Deviation: a lr set by hand between steps
 * is overwritten by the next step (PyTorch's chainable forms would build on
 * it). Every create fails INVALID on a bad argument (the message names the
 * schedule) and OUT_OF_MEMORY. */
typedef struct gf_lr_scheduler gf_lr_scheduler;
/* StepLR: initial_lr gamma^floor(epoch / step_size); step_size >= 1
 * (PyTorch's gamma default 0.1). */
GF_API gf_lr_scheduler *gf_lr_step_create(gf_optimizer *opt, int64_t step_size, double gamma);
/* MultiStepLR: initial_lr gamma^(number of milestones <= epoch);
 * milestones increasing, >= 0 (PyTorch's gamma default 0.1). */
GF_API gf_lr_scheduler *gf_lr_multistep_create(gf_optimizer *opt, const int64_t *milestones,
                                               int n, double gamma);
/* ExponentialLR: initial_lr gamma^epoch. */
GF_API gf_lr_scheduler *gf_lr_exponential_create(gf_optimizer *opt, double gamma);
/* CosineAnnealingLR: eta_min + (initial_lr - eta_min) (1 + cos(pi epoch /
 * t_max)) / 2 (past t_max the cosine goes on, as PyTorch's); t_max >= 1
 * (PyTorch's eta_min default 0). */
GF_API gf_lr_scheduler *gf_lr_cosine_create(gf_optimizer *opt, int64_t t_max, double eta_min);
/* LinearLR (linear warmup): initial_lr (start + (end - start) min(epoch,
 * total_iters) / total_iters); start_factor in (0, 1], end_factor in
 * [0, 1], total_iters >= 1 (PyTorch's defaults 1/3, 1.0, 5). */
GF_API gf_lr_scheduler *gf_lr_linear_create(gf_optimizer *opt, double start_factor,
                                            double end_factor, int64_t total_iters);
/* OneCycleLR, stepped once per batch. From max_lr / div_factor up to
 * max_lr over the first pct_start of total_steps, then down to
 * max_lr / div_factor / final_div_factor (three_phase: down to the start
 * first, then to the minimum), by cosine or linear annealing. A step past
 * total_steps fails INVALID (as PyTorch). Deviation: one max_lr for every
 * group, and momentum is not cycled (PyTorch's cycle_momentum=False). */
/* Start from GF_ONECYCLE_OPTS_DEFAULT (GF_OPTS_INIT, graft/types.h) and set
 * max_lr and total_steps, which have no default. */
typedef struct gf_onecycle_opts {
    uint32_t init;
    double max_lr;           /* finite, >= 0 */
    int64_t total_steps;     /* >= 1 */
    double pct_start;        /* in [0, 1] */
    bool anneal_linear;      /* false = 'cos' (PyTorch's default) */
    double div_factor;       /* finite, > 0 */
    double final_div_factor; /* finite, > 0 */
    bool three_phase;
} gf_onecycle_opts;
#define GF_ONECYCLE_OPTS_DEFAULT                                                       \
    {.init = GF_OPTS_INIT, .max_lr = 0.0, .total_steps = 0, .pct_start = 0.3,          \
     .anneal_linear = false, .div_factor = 25.0, .final_div_factor = 1e4,              \
     .three_phase = false}
GF_API gf_lr_scheduler *gf_lr_onecycle_create(gf_optimizer *opt, const gf_onecycle_opts *o);
/* SequentialLR: schedule i runs from milestones[i - 1] (0 for the first)
 * on, seeing epoch - milestones[i - 1]; n - 1 increasing milestones >= 1.
 * Takes ownership of the n schedules (also on failure), which must drive
 * opt; they are destroyed with the result. The usual warmup:
 * sequential({linear(opt, 0.01, 1, w), cosine(opt, T - w, 0)}, {w}). */
GF_API gf_lr_scheduler *gf_lr_sequential_create(gf_optimizer *opt,
                                                gf_lr_scheduler *const *schedulers, int n,
                                                const int64_t *milestones);
/* The factor of a LambdaLR or MultiplicativeLR at epoch for group (the
 * user pointer given at creation). */
typedef double (*gf_lr_lambda)(int64_t epoch, int group, void *user);
/* LambdaLR: initial_lr fn(epoch). A factor that makes a lr negative or not
 * finite fails the step (or the create, for epoch 0) with INVALID. */
GF_API gf_lr_scheduler *gf_lr_lambda_create(gf_optimizer *opt, gf_lr_lambda fn, void *user);
/* MultiplicativeLR: initial_lr times the product of fn(1..epoch) (PyTorch's
 * lr = lr * fn(epoch) per step; fn is called once per step and group, and
 * once per epoch so far after a state dict is loaded). */
GF_API gf_lr_scheduler *gf_lr_multiplicative_create(gf_optimizer *opt, gf_lr_lambda fn,
                                                    void *user);
/* ConstantLR: initial_lr factor before total_iters, initial_lr from then
 * on; factor in [0, 1], total_iters >= 0 (PyTorch's defaults 1/3, 5). */
GF_API gf_lr_scheduler *gf_lr_constant_create(gf_optimizer *opt, double factor,
                                              int64_t total_iters);
/* Advances one step and sets every group's lr. Fails INVALID (NULL, a
 * OneCycle schedule past its total steps). */
GF_API gf_status gf_lr_scheduler_step(gf_lr_scheduler *s);
/* The lr last set for group (get_last_lr()[group]); -1 for NULL or a group
 * out of range. */
GF_API double gf_lr_scheduler_get_last_lr(const gf_lr_scheduler *s, int group);
/* -1 for NULL. */
GF_API int64_t gf_lr_scheduler_last_epoch(const gf_lr_scheduler *s);
/* State for checkpoints (gf_save_safetensors): "<prefix>last_epoch" (0-dim
 * i64) and "<prefix>base_lrs" (f64 [groups]). Loading checks both (a
 * base_lrs of another group count fails INVALID), restores them and sets
 * each group's lr to the schedule's value at last_epoch; entries without
 * the prefix are ignored. Fails INVALID naming what is missing or wrong. */
GF_API gf_tensor_dict *gf_lr_scheduler_state_dict(const gf_lr_scheduler *s, const char *prefix);
GF_API gf_status gf_lr_scheduler_load_state_dict(gf_lr_scheduler *s, const gf_tensor_dict *d,
                                                 const char *prefix);
/* Ends the caller's use of s (NULL: nothing). A schedule holds its
 * optimiser, and a graph that captured one of its steps holds the schedule:
 * each goes with its last holder, in whatever order they are destroyed. */
GF_API void gf_lr_scheduler_destroy(gf_lr_scheduler *s);

/* ---- ReduceLROnPlateau: lowers every group's lr by factor (not below
 * min_lr; a change of eps or less is skipped) once the metric has not
 * improved for more than patience steps, then waits cooldown steps.
 * Improvement: mode min (mode_max false) a < best (1 - threshold), or a <
 * best - threshold with threshold_abs; mode max the mirror. A NaN metric
 * never improves. Start from GF_PLATEAU_OPTS_DEFAULT (graft/types.h's
 * GF_OPTS_INIT; NULL = the defaults). Its state is not a closed form of a
 * step count: it has no state dict here. */
typedef struct gf_plateau_opts {
    uint32_t init;
    bool mode_max;      /* false = 'min' (PyTorch's default) */
    double factor;      /* in [0, 1) */
    int64_t patience;   /* >= 0 */
    double threshold;   /* >= 0 */
    bool threshold_abs; /* false = 'rel' (PyTorch's default) */
    int64_t cooldown;   /* >= 0 */
    double min_lr;      /* one for every group */
    double eps;
} gf_plateau_opts;
#define GF_PLATEAU_OPTS_DEFAULT                                                        \
    {.init = GF_OPTS_INIT, .mode_max = false, .factor = 0.1, .patience = 10,           \
     .threshold = 1e-4, .threshold_abs = false, .cooldown = 0, .min_lr = 0.0, .eps = 1e-8}
typedef struct gf_lr_plateau gf_lr_plateau;
/* Fails INVALID (opt NULL, a struct not from the initialiser, an option out
 * of range), OUT_OF_MEMORY. The optimiser must outlive the schedule. */
GF_API gf_lr_plateau *gf_lr_plateau_create(gf_optimizer *opt, const gf_plateau_opts *opts);
/* One step with this epoch's metric (validation loss, accuracy...). */
GF_API gf_status gf_lr_plateau_step(gf_lr_plateau *p, double metric);
GF_API double gf_lr_plateau_get_last_lr(const gf_lr_plateau *p, int group); /* -1: none */
GF_API int64_t gf_lr_plateau_num_bad_epochs(const gf_lr_plateau *p);        /* -1: NULL */
/* Frees p and drops its hold on the optimiser (NULL: nothing). */
GF_API void gf_lr_plateau_destroy(gf_lr_plateau *p);

#ifdef __cplusplus
}
#endif
#endif
