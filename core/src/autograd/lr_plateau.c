/* SPDX-License-Identifier: BSD-3-Clause */
/* lr_plateau.c — ReduceLROnPlateau (graft/schedule.h): the one schedule
 * that is not a closed form of the step count, since it follows a metric. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph_internal.h"
#include "internal.h"
#include "interop_internal.h"
#include "optim_internal.h"

struct gf_lr_plateau {
    gf_optimizer *opt;
    gf_plateau_opts o;
    int n_groups;
    double best;
    int64_t num_bad_epochs, cooldown_counter, last_epoch;
};

static const char *K = "ReduceLROnPlateau";

gf_lr_plateau *gf_lr_plateau_create(gf_optimizer *opt, const gf_plateau_opts *opts) {
    if (!opt) {
        gf__error(GF_ERR_INVALID, "%s: opt is NULL", K);
        return NULL;
    }
    gf_plateau_opts o = GF_PLATEAU_OPTS_DEFAULT;
    if (opts) o = *opts;
    if (gf__opts_check(K, "gf_plateau_opts", "GF_PLATEAU_OPTS_DEFAULT", o.init) != GF_OK)
        return NULL;
    const char *why = !(o.factor >= 0 && o.factor < 1) ? "factor must be in [0, 1)"
                    : o.patience < 0                    ? "patience must be >= 0"
                    : !(o.threshold >= 0) || isinf(o.threshold) ? "threshold must be finite and >= 0"
                    : o.cooldown < 0                    ? "cooldown must be >= 0"
                    : !(o.min_lr >= 0) || isinf(o.min_lr) ? "min_lr must be finite and >= 0"
                    : !(o.eps >= 0) || isinf(o.eps)     ? "eps must be finite and >= 0"
                                                        : NULL;
    if (why) {
        gf__error(GF_ERR_INVALID, "%s: %s (factor %g, patience %lld, threshold %g, cooldown %lld, "
                  "min_lr %g, eps %g)", K, why, o.factor, (long long)o.patience, o.threshold,
                  (long long)o.cooldown, o.min_lr, o.eps);
        return NULL;
    }
    gf_lr_plateau *p = calloc(1, sizeof *p);
    if (!p) {
        gf__error(GF_ERR_OUT_OF_MEMORY, "%s: out of host memory", K);
        return NULL;
    }
    p->opt = gf__optim_retain(opt); /* it steps the optimiser's lr: held */
    p->o = o;
    p->n_groups = gf_optimizer_group_count(opt);
    p->best = o.mode_max ? -INFINITY : INFINITY;
    return p;
}

static bool better(const gf_lr_plateau *p, double a) {
    const gf_plateau_opts *o = &p->o;
    if (!o->mode_max)
        return o->threshold_abs ? a < p->best - o->threshold : a < p->best * (1 - o->threshold);
    return o->threshold_abs ? a > p->best + o->threshold : a > p->best * (o->threshold + 1);
}

gf_status gf_lr_plateau_step(gf_lr_plateau *p, double metric) {
    if (!p) return gf__error(GF_ERR_INVALID, "gf_lr_plateau_step: the schedule is NULL");
    if (gf__capturing())
        return gf__graph_refuse(GF_ERR_INVALID, "gf_lr_plateau_step inside a captured region: "
                                "it follows a metric read on the host, which a replay cannot "
                                "read again; step it between replays");
    p->last_epoch++;
    if (better(p, metric)) {
        p->best = metric;
        p->num_bad_epochs = 0;
    } else {
        p->num_bad_epochs++;
    }
    if (p->cooldown_counter > 0) {
        p->cooldown_counter--;
        p->num_bad_epochs = 0;
    }
    if (p->num_bad_epochs <= p->o.patience) return GF_OK;
    for (int g = 0; g < p->n_groups; g++) {
        double old = gf_optimizer_get_group_lr(p->opt, g);
        double lr = fmax(old * p->o.factor, p->o.min_lr);
        if (old - lr > p->o.eps) {
            gf_status st = gf_optimizer_set_group_lr(p->opt, g, lr);
            if (st != GF_OK) return st;
        }
    }
    p->cooldown_counter = p->o.cooldown;
    p->num_bad_epochs = 0;
    return GF_OK;
}

double gf_lr_plateau_get_last_lr(const gf_lr_plateau *p, int group) {
    if (!p || group < 0 || group >= p->n_groups) return -1;
    return gf_optimizer_get_group_lr(p->opt, group);
}

int64_t gf_lr_plateau_num_bad_epochs(const gf_lr_plateau *p) { return p ? p->num_bad_epochs : -1; }

void gf_lr_plateau_destroy(gf_lr_plateau *p) {
    if (!p) return;
    gf_optimizer_destroy(p->opt);
    free(p);
}
