/* SPDX-License-Identifier: BSD-3-Clause */
/* cases_optim.c — the catalogue of the optimiser updates (ADAM_UPDATE).
 *
 * Each case is one step with drawn p, g, m and v >= 0 and one set of
 * hyperparameters: Adam with and without L2 decay, AdamW, beta1 = 0 (m is
 * then g), beta2 = 0, early and late steps (the bias corrections far from
 * and close to 1). The outputs are tensors of their own in the usual
 * layouts; the in-place layout passes output p as input p (the core passes
 * m and v in place as well). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "pc.h"

static int combos_adam(const pc_op *op, uint32_t dtypes, pc_combo *out, int max) {
    (void)op;
    uint32_t floats = dtypes & (GFP_DTYPE_BIT(GFP_F32) | GFP_DTYPE_BIT(GFP_F64));
    return pc_combos_same(floats, 4, 3, out, max);
}

typedef struct adam_case {
    double lr, beta1, beta2, eps, weight_decay;
    bool decoupled;
    int step;
    const char *what;
} adam_case;

static const adam_case adam_cases[] = {
    {1e-3, 0.9, 0.999, 1e-8, 0, false, 1, "Adam"},
    {1e-2, 0.9, 0.999, 1e-8, 0.01, false, 3, "Adam, L2 decay"},
    {1e-3, 0.9, 0.999, 1e-8, 0.05, true, 10, "AdamW"},
    {5e-3, 0.0, 0.99, 1e-6, 0, false, 2, "beta1 0"},
    {1e-3, 0.8, 0.0, 1e-8, 0.1, true, 4, "beta2 0, AdamW"},
    {1e-3, 0.9, 0.999, 1e-8, 0, false, 1000, "step 1000"},
};
#define N_ADAM_CASES (int)(sizeof adam_cases / sizeof adam_cases[0])

static bool build_adam(const pc_op *op, const pc_combo *cb, int k, bool quick, pc_case *c) {
    (void)op;
    static const struct {
        int rank;
        int64_t sizes[3];
    } shapes[] = {{1, {1000}}, {2, {7, 13}}, {3, {2, 5, 9}}, {2, {1024, 1024}}};
    bool large = k == N_ADAM_CASES;
    if (k > N_ADAM_CASES || (large && (quick || cb->in[0] != GFP_F32))) return false;
    const adam_case *a = &adam_cases[large ? 2 : k];
    int si = large ? 3 : k % 3;
    int rank = shapes[si].rank;
    const int64_t *sizes = shapes[si].sizes;
    pc_case_init(c, 4, 3);
    pc_arg_set(&c->in[0], cb->in[0], rank, sizes, PC_GEN_UNIFORM, -1, 1);    /* p */
    pc_arg_set(&c->in[1], cb->in[1], rank, sizes, PC_GEN_UNIFORM, -1, 1);    /* g */
    pc_arg_set(&c->in[2], cb->in[2], rank, sizes, PC_GEN_UNIFORM, -0.1, 0.1); /* m */
    pc_arg_set(&c->in[3], cb->in[3], rank, sizes, PC_GEN_UNIFORM, 0, 0.01);  /* v */
    for (int o = 0; o < 3; o++) {
        pc_arg_set(&c->out[o], cb->out[o], rank, sizes, PC_GEN_ZEROS, 0, 0);
        c->out[o].tol = PC_TOL_ELEMENTWISE;
    }
    gfp_adam_params *p = &c->params.adam;
    memset(p, 0, sizeof *p);
    p->struct_size = sizeof *p;
    p->flags = a->decoupled ? GFP_ADAM_DECOUPLED_WEIGHT_DECAY : 0u;
    p->lr = a->lr;
    p->beta1 = a->beta1;
    p->beta2 = a->beta2;
    p->eps = a->eps;
    p->weight_decay = a->weight_decay;
    p->bias_correction1 = 1.0 - pow(a->beta1, a->step);
    p->bias_correction2_sqrt = sqrt(1.0 - pow(a->beta2, a->step));
    c->has_params = true;
    c->large = large;
    char buf[48];
    pc_label(c, "%s %s, step %d", pc_shape_text(buf, sizeof buf, rank, sizes), a->what, a->step);
    return true;
}

/* ------------------------------------------------------------ the table */
bool pc_cases_optim(const gfp_op_info *row, pc_op *op) {
    if (row->family != GFP_FAMILY_OPTIM || row->op != GFP_OP_ADAM_UPDATE) return false;
    op->flags = PC_OP_ELEMENTWISE;
    op->combos = combos_adam;
    op->build = build_adam;
    return true;
}
