/* SPDX-License-Identifier: BSD-3-Clause */
/* optim_internal.h — the optimiser's record, shared by optim.c (the update
 * rules and the state dict) and optim_groups.c (param_groups in checkpoints). */
#ifndef GRAFT_OPTIM_INTERNAL_H
#define GRAFT_OPTIM_INTERNAL_H
#include "ag_internal.h"

typedef enum opt_kind {
    OPT_SGD, OPT_ADAM, OPT_RMSPROP, OPT_ADAGRAD, OPT_ADADELTA, OPT_NADAM, OPT_RADAM
} opt_kind;

/* Per-parameter state: SGD uses buf1 (momentum buffer); Adam uses buf1
 * (exp_avg), buf2 (exp_avg_sq) and step (its own count, as PyTorch keeps
 * one per parameter: a parameter skipped for lack of a gradient does not
 * advance its bias correction). RMSprop: buf1 square_avg, buf2 the momentum
 * buffer, buf3 grad_avg (centered). Adagrad: buf1 the sum of squares,
 * step its own count (for lr_decay). */
typedef struct param_state {
    gf_tensor *param; /* reference */
    gf_tensor *buf1, *buf2, *buf3;
    int64_t step;
    double mu_product; /* NAdam: the product of its mu over the steps so far */
    int group;         /* its parameter group */
} param_state;

/* A parameter group's own hyperparameters (torch's param_groups[g]):
 * they replace the create call's lr and weight_decay for its parameters.
 * initial_lr is NAN until a schedule records it (torch's "initial_lr"). */
typedef struct opt_group {
    double lr, weight_decay, initial_lr;
} opt_group;

struct gf_optimizer {
    opt_kind kind;
    gf_sgd_opts sgd;
    gf_adam_opts adam; /* defaults resolved */
    gf_rmsprop_opts rmsprop;
    gf_adagrad_opts adagrad;
    gf_adadelta_opts adadelta;
    gf_nadam_opts nadam;
    gf_radam_opts radam;
    int n;
    param_state *ps;
    int n_groups;
    opt_group *groups;
    int refs; /* the caller's handle, each schedule on it, each graph holding a step */
};

/* One more hold on opt (returned). gf_optimizer_destroy drops one; the
 * state goes with the last. Held by the caller's handle, by each schedule
 * and plateau made on opt (they step it), and by each graph that captured
 * one of its steps (replays step it): so destroying an optimiser before the
 * graphs or schedules that use it frees nothing they still need. */
gf_optimizer *gf__optim_retain(gf_optimizer *opt);
/* Group g's initial_lr (torch's "initial_lr"), its lr before any schedule
 * recorded one. */
double gf__optim_initial_lr(gf_optimizer *opt, int group);

/* param_groups (torch's optimizer.state_dict()["param_groups"]) as JSON in
 * the state dict's metadata, under "<prefix without a trailing 'state.'>param_groups"
 * (optim_groups.c). put writes it into d; parse reads and checks it against
 * opt (*out NULL when d has none) without changing anything; apply sets it. */
typedef struct gf__optim_groups gf__optim_groups;
gf_status gf__optim_groups_put(const gf_optimizer *opt, gf_tensor_dict *d, const char *prefix);
gf_status gf__optim_groups_parse(const gf_optimizer *opt, const gf_tensor_dict *d,
                                 const char *prefix, gf__optim_groups **out);
void gf__optim_groups_apply(gf_optimizer *opt, const gf__optim_groups *g);
void gf__optim_groups_free(gf__optim_groups *g);
#endif
