/* SPDX-License-Identifier: BSD-3-Clause */
/* cases_reduce.c — the cases of the reductions, SOFTMAX and LOG_SOFTMAX,
 * LAYER_NORM and BATCH_NORM, and the indexing ops.
 *
 * Reductions run over the last, the first, several and all dims, over a
 * 0-dim tensor, over an empty dim (the header defines sum 0, prod 1, mean
 * NaN; amax, amin and the dim ops are refused by the core, so not asked),
 * with NaN and inf inputs, and for f32 over the columns of a 1024x1024
 * matrix. Extremes and their indices are exact; with many equal values the
 * first index must win. Index values are drawn inside their dim, with
 * repeats, so that SCATTER_ADD and INDEX_ADD accumulate. */
#include <string.h>

#include "pc.h"

static bool f32_data(const pc_combo *cb) { return cb->in[0] == GFP_F32; }

static void out_like(pc_arg *a, int32_t dt, int rank, const int64_t *sizes, uint32_t dims) {
    int64_t s[GFP_MAX_RANK];
    for (int d = 0; d < rank; d++) s[d] = (dims >> d) & 1u ? 1 : sizes[d];
    pc_arg_set(a, dt, rank, s, PC_GEN_ZEROS, 0, 0);
}

/* ------------------------------------------------------------ reductions */
static bool is_dim_op(uint32_t op) { return op == GFP_OP_MAX_DIM || op == GFP_OP_MIN_DIM; }
static bool is_extreme(uint32_t op) {
    return op == GFP_OP_AMAX || op == GFP_OP_AMIN || is_dim_op(op);
}

static int combos_reduce(const pc_op *op, uint32_t dtypes, pc_combo *out, int max) {
    int n = pc_combos_same(dtypes, 1, is_dim_op(op->id) ? 2 : 1, out, max);
    if (is_dim_op(op->id))
        for (int i = 0; i < n; i++) out[i].out[1] = GFP_I64;
    uint32_t id = op->id; /* complex: the sums and the product (no order) */
    if (id == GFP_OP_SUM || id == GFP_OP_MEAN || id == GFP_OP_PROD)
        n += pc_combos_complex(dtypes, 1, 1, -1, out + n, max - n);
    return n;
}

typedef struct reduce_case {
    int rank;
    int64_t sizes[3];
    uint32_t dims;
    const char *what;
    pc_gen gen; /* PC_GEN_UNIFORM: the op's own range */
    bool dim_op_ok, other_ok;
} reduce_case;

static const reduce_case reduce_cases[] = {
    {3, {4, 5, 6}, 0x4, NULL, PC_GEN_UNIFORM, true, true},
    {3, {4, 5, 6}, 0x1, NULL, PC_GEN_UNIFORM, true, true},
    {3, {4, 5, 6}, 0x2, NULL, PC_GEN_UNIFORM, true, false},
    {3, {4, 5, 6}, 0x6, NULL, PC_GEN_UNIFORM, false, true},
    {3, {4, 5, 6}, 0x7, NULL, PC_GEN_UNIFORM, false, true},
    {2, {7, 13}, 0x2, "odd", PC_GEN_UNIFORM, true, true},
    {0, {0}, 0x0, "0-dim", PC_GEN_UNIFORM, false, true},
    {3, {3, 0, 4}, 0x2, "empty dim", PC_GEN_UNIFORM, false, true},
    {2, {6, 9}, 0x2, "ties", PC_GEN_SMALLINT, true, true},
    {2, {4, 16}, 0x2, "NaN/inf/-0 inputs", PC_GEN_NONFINITE, true, true},
    {2, {1024, 1024}, 0x1, "large", PC_GEN_UNIFORM, true, true},
};
#define N_REDUCE_CASES (sizeof reduce_cases / sizeof reduce_cases[0])

static bool build_reduce(const pc_op *op, const pc_combo *cb, int k, bool quick, pc_case *c) {
    uint32_t id = op->id;
    int32_t dt = cb->in[0];
    bool is_float = pc_is_float(dt) || pc_is_complex(dt); /* complex: parts as floats */
    /* VAR also runs its first case with correction 0. */
    int extra = id == GFP_OP_VAR ? 1 : 0;
    double correction = 1;
    const reduce_case *rc = NULL;
    for (size_t i = 0; i < N_REDUCE_CASES; i++) {
        const reduce_case *r = &reduce_cases[i];
        bool ok = is_dim_op(id) ? r->dim_op_ok : r->other_ok;
        if (r->sizes[1] == 0 && r->rank && is_extreme(id)) ok = false;
        if (r->gen == PC_GEN_NONFINITE && !pc_is_float(dt)) ok = false;
        if (r->what && !strcmp(r->what, "large") && (quick || !f32_data(cb))) ok = false;
        if (!ok) continue;
        if (k == 0) {
            rc = r;
            break;
        }
        k--;
    }
    if (!rc) {
        if (k >= extra) return false;
        rc = &reduce_cases[0];
        correction = 0;
    }
    double lo = -10, hi = 10;
    if (!is_float) lo = -100, hi = 100;
    if (id == GFP_OP_VAR) lo = -3, hi = 5; /* away from zero mean */
    if (id == GFP_OP_PROD) {
        lo = is_float ? 0.5 : 1;
        hi = is_float ? 1.5 : 3; /* integer products wrap: exactly as two's complement */
    }
    if (rc->gen == PC_GEN_SMALLINT) lo = -2, hi = 2;
    pc_case_init(c, 1, is_dim_op(id) ? 2 : 1);
    pc_arg_set(&c->in[0], dt, rc->rank, rc->sizes, rc->gen, lo, hi);
    out_like(&c->out[0], cb->out[0], rc->rank, rc->sizes, rc->dims);
    bool sums = !is_extreme(id) && is_float;
    c->out[0].tol = sums ? PC_TOL_ACCUMULATE : PC_TOL_EXACT;
    if (is_dim_op(id)) out_like(&c->out[1], GFP_I64, rc->rank, rc->sizes, rc->dims);
    gfp_reduce_params *p = &c->params.reduce;
    p->struct_size = sizeof *p;
    p->dims = rc->dims;
    p->correction = correction;
    c->has_params = true;
    c->large = rc->what && !strcmp(rc->what, "large");
    char buf[48];
    pc_shape_text(buf, sizeof buf, rc->rank, rc->sizes);
    if (id == GFP_OP_VAR)
        pc_label(c, "%s%s%s dims 0x%x correction %g", buf, rc->what ? " " : "",
                 rc->what ? rc->what : "", (unsigned)rc->dims, correction);
    else
        pc_label(c, "%s%s%s dims 0x%x", buf, rc->what ? " " : "", rc->what ? rc->what : "",
                 (unsigned)rc->dims);
    return true;
}

/* ------------------------------------------------------------ softmax */
static int combos_same_1(const pc_op *op, uint32_t dtypes, pc_combo *out, int max) {
    (void)op;
    return pc_combos_same(dtypes, 1, 1, out, max);
}

/* SOFTMAX and LOG_SOFTMAX take x; their backward kernels grad_y and y (any
 * values: the ops are defined by their formulas) on the same shapes. */
static bool build_softmax(const pc_op *op, const pc_combo *cb, int k, bool quick, pc_case *c) {
    static const struct {
        int rank;
        int64_t sizes[3];
        int dim;
        const char *what;
        pc_gen gen;
    } cases[] = {
        {3, {4, 5, 6}, 2, NULL, PC_GEN_UNIFORM},
        {3, {4, 5, 6}, 0, NULL, PC_GEN_UNIFORM},
        {2, {7, 13}, 1, "odd", PC_GEN_UNIFORM},
        {0, {0}, 0, "0-dim", PC_GEN_UNIFORM},
        {2, {4, 16}, 1, "NaN/inf/-0 inputs", PC_GEN_NONFINITE},
        {2, {1024, 1024}, 1, "large", PC_GEN_UNIFORM},
    };
    bool backward = op->id == GFP_OP_SOFTMAX_BACKWARD || op->id == GFP_OP_LOG_SOFTMAX_BACKWARD;
    int n = (int)(sizeof cases / sizeof cases[0]);
    if (quick || !f32_data(cb)) n--;
    if (k >= n) return false;
    pc_case_init(c, backward ? 2 : 1, 1);
    pc_arg_set(&c->in[0], cb->in[0], cases[k].rank, cases[k].sizes, cases[k].gen, -10, 10);
    if (backward) /* y: probabilities, or log-probabilities */
        pc_arg_set(&c->in[1], cb->in[1], cases[k].rank, cases[k].sizes, cases[k].gen,
                   op->id == GFP_OP_SOFTMAX_BACKWARD ? 0 : -5, op->id == GFP_OP_SOFTMAX_BACKWARD ? 1 : 0);
    pc_arg_set(&c->out[0], cb->out[0], cases[k].rank, cases[k].sizes, PC_GEN_ZEROS, 0, 0);
    c->out[0].tol = PC_TOL_ACCUMULATE;
    c->params.dim.struct_size = sizeof c->params.dim;
    c->params.dim.dim = cases[k].dim;
    c->has_params = true;
    c->large = k == 5;
    char buf[48];
    pc_label(c, "%s%s%s dim %d", pc_shape_text(buf, sizeof buf, cases[k].rank, cases[k].sizes),
             cases[k].what ? " " : "", cases[k].what ? cases[k].what : "", cases[k].dim);
    return true;
}

static int combos_same_2(const pc_op *op, uint32_t dtypes, pc_combo *out, int max) {
    (void)op;
    return pc_combos_same(dtypes, 2, 1, out, max);
}

/* ------------------------------------------------------------ layer norm */
static int combos_layer_norm(const pc_op *op, uint32_t dtypes, pc_combo *out, int max) {
    (void)op;
    pc_combo tmp[PC_MAX_COMBOS];
    int n = pc_combos_same(dtypes, 3, 3, tmp, PC_MAX_COMBOS), m = 0;
    for (int i = 0; i < n && m + 1 < max; i++) {
        out[m++] = tmp[i];
        out[m] = tmp[i];
        out[m].in[1] = out[m].in[2] = -1; /* without weight and bias */
        m++;
    }
    return m;
}

static bool build_layer_norm(const pc_op *op, const pc_combo *cb, int k, bool quick, pc_case *c) {
    (void)op;
    static const struct {
        int rank;
        int64_t sizes[3];
        int nr;
        const char *what;
    } cases[] = {
        {3, {4, 5, 6}, 1, NULL},   {3, {4, 5, 6}, 2, NULL},      {3, {4, 5, 6}, 3, "0-dim stats"},
        {2, {7, 13}, 1, "odd"},    {2, {1024, 1024}, 1, "large"},
    };
    int n = (int)(sizeof cases / sizeof cases[0]);
    if (quick || !f32_data(cb)) n--;
    if (k >= n) return false;
    int rank = cases[k].rank, nr = cases[k].nr;
    const int64_t *sizes = cases[k].sizes;
    pc_case_init(c, 3, 3);
    pc_arg_set(&c->in[0], cb->in[0], rank, sizes, PC_GEN_UNIFORM, -3, 5);
    pc_arg_set(&c->in[1], cb->in[1], nr, sizes + rank - nr, PC_GEN_UNIFORM, 0.5, 1.5);
    pc_arg_set(&c->in[2], cb->in[2], nr, sizes + rank - nr, PC_GEN_UNIFORM, -1, 1);
    pc_arg_set(&c->out[0], cb->out[0], rank, sizes, PC_GEN_ZEROS, 0, 0);
    pc_arg_set(&c->out[1], cb->out[1], rank - nr, sizes, PC_GEN_ZEROS, 0, 0);
    pc_arg_set(&c->out[2], cb->out[2], rank - nr, sizes, PC_GEN_ZEROS, 0, 0);
    for (int o = 0; o < 3; o++) c->out[o].tol = PC_TOL_ACCUMULATE;
    c->params.layer_norm.struct_size = sizeof c->params.layer_norm;
    c->params.layer_norm.normalized_rank = nr;
    c->params.layer_norm.eps = 1e-5;
    c->has_params = true;
    c->large = k == 4;
    char buf[48];
    pc_label(c, "%s%s%s normalized_rank %d%s", pc_shape_text(buf, sizeof buf, rank, sizes),
             cases[k].what ? " " : "", cases[k].what ? cases[k].what : "", nr,
             cb->in[1] < 0 ? " no weight/bias" : "");
    return true;
}

/* ------------------------------------------------------------ batch norm */
static int combos_batch_norm(const pc_op *op, uint32_t dtypes, pc_combo *out, int max) {
    (void)op;
    pc_combo tmp[PC_MAX_COMBOS];
    int n = pc_combos_same(dtypes, 5, 3, tmp, PC_MAX_COMBOS), m = 0;
    for (int i = 0; i < n && m + 2 < max; i++) {
        out[m++] = tmp[i]; /* everything */
        out[m] = tmp[i];
        out[m].in[1] = out[m].in[2] = -1; /* no affine */
        m++;
        out[m] = tmp[i];
        out[m].in[3] = out[m].in[4] = -1; /* no running stats: training only */
        m++;
    }
    return m;
}

static bool build_batch_norm(const pc_op *op, const pc_combo *cb, int k, bool quick, pc_case *c) {
    (void)op;
    static const struct {
        int rank;
        int64_t sizes[4];
        const char *what;
    } shapes[] = {
        {4, {4, 3, 5, 5}, NULL}, {2, {6, 7}, NULL}, {3, {2, 5, 13}, "odd"},
        {4, {16, 64, 32, 32}, "large"},
    };
    bool have_stats = cb->in[3] >= 0;
    int n_modes = have_stats ? 2 : 1, n_shapes = quick || !f32_data(cb) ? 3 : 4;
    if (k >= n_shapes * n_modes) return false;
    int si = k / n_modes, training = have_stats ? k % n_modes == 0 : 1;
    if (si == 3 && !training) return false;
    int rank = shapes[si].rank;
    const int64_t *sizes = shapes[si].sizes;
    pc_case_init(c, 5, 3);
    pc_arg_set(&c->in[0], cb->in[0], rank, sizes, PC_GEN_UNIFORM, -3, 5);
    /* [N, C] broadcast along N would have no variance: y = 0 * 1/sqrt(eps),
     * which amplifies rounding and compares nothing. */
    c->in[0].no_broadcast = rank == 2;
    pc_arg_set(&c->in[1], cb->in[1], 1, &sizes[1], PC_GEN_UNIFORM, 0.5, 1.5);
    pc_arg_set(&c->in[2], cb->in[2], 1, &sizes[1], PC_GEN_UNIFORM, -1, 1);
    pc_arg_set(&c->in[3], cb->in[3], 1, &sizes[1], PC_GEN_UNIFORM, -1, 1);
    pc_arg_set(&c->in[4], cb->in[4], 1, &sizes[1], PC_GEN_UNIFORM, 0.5, 2);
    for (int i = 3; i < 5; i++) {
        c->in[i].inout = training; /* the running stats are updated in place */
        c->in[i].tol = PC_TOL_ACCUMULATE;
    }
    pc_arg_set(&c->out[0], cb->out[0], rank, sizes, PC_GEN_ZEROS, 0, 0);
    pc_arg_set(&c->out[1], cb->out[1], 1, &sizes[1], PC_GEN_ZEROS, 0, 0);
    pc_arg_set(&c->out[2], cb->out[2], 1, &sizes[1], PC_GEN_ZEROS, 0, 0);
    for (int o = 0; o < 3; o++) c->out[o].tol = PC_TOL_ACCUMULATE;
    gfp_batch_norm_params *p = &c->params.batch_norm;
    p->struct_size = sizeof *p;
    p->training = (uint32_t)training;
    p->momentum = 0.1;
    p->eps = 1e-5;
    c->has_params = true;
    c->large = si == 3;
    char buf[48];
    pc_label(c, "%s%s%s %s%s%s", pc_shape_text(buf, sizeof buf, rank, sizes),
             shapes[si].what ? " " : "", shapes[si].what ? shapes[si].what : "",
             training ? "training" : "eval", cb->in[1] < 0 ? " no weight/bias" : "",
             cb->in[3] < 0 ? " no running stats" : "");
    return true;
}

/* ------------------------------------------------------------ indexing */
/* Every stored dtype, complex ones too (the reference moves and adds them),
 * with an i64 index. */
static int combos_index(const pc_op *op, uint32_t dtypes, pc_combo *out, int max) {
    (void)op;
    int n = pc_combos_same(dtypes, 2, 1, out, max);
    n += pc_combos_complex(dtypes, 2, 1, -1, out + n, max - n);
    for (int i = 0; i < n; i++) out[i].in[1] = GFP_I64;
    return n;
}

typedef struct index_case {
    int rank;
    int64_t x[3];   /* the indexed tensor: x (select, gather) or y (the adds) */
    int64_t idx[3]; /* index shape (1-D for select and index_add: idx[0]) */
    int dim;
    const char *what;
} index_case;

static int combos_batch_norm_backward(const pc_op *op, uint32_t dtypes, pc_combo *out, int max) {
    (void)op;
    pc_combo tmp[PC_MAX_COMBOS];
    int n = pc_combos_same(dtypes, 5, 3, tmp, PC_MAX_COMBOS), m = 0;
    for (int i = 0; i < n && m + 1 < max; i++) {
        out[m++] = tmp[i];
        out[m] = tmp[i];
        out[m++].in[4] = -1; /* no weight */
    }
    return m;
}

/* BATCH_NORM_BACKWARD is defined for any given statistics: the mean and
 * invstd are drawn, not computed from x. */
static bool build_batch_norm_backward(const pc_op *op, const pc_combo *cb, int k, bool quick,
                                      pc_case *c) {
    (void)op;
    static const struct {
        int rank;
        int64_t sizes[4];
        const char *what;
    } shapes[] = {
        {4, {4, 3, 5, 5}, NULL}, {2, {6, 7}, NULL}, {3, {2, 5, 13}, "odd"},
        {4, {16, 64, 32, 32}, "large"},
    };
    int n_shapes = quick || !f32_data(cb) ? 3 : 4;
    if (k >= n_shapes) return false;
    int rank = shapes[k].rank;
    const int64_t *sizes = shapes[k].sizes;
    pc_case_init(c, 5, 3);
    pc_arg_set(&c->in[0], cb->in[0], rank, sizes, PC_GEN_UNIFORM, -1, 1);
    pc_arg_set(&c->in[1], cb->in[1], rank, sizes, PC_GEN_UNIFORM, -3, 5);
    pc_arg_set(&c->in[2], cb->in[2], 1, &sizes[1], PC_GEN_UNIFORM, 0, 2);     /* mean */
    pc_arg_set(&c->in[3], cb->in[3], 1, &sizes[1], PC_GEN_UNIFORM, 0.5, 2);   /* invstd */
    pc_arg_set(&c->in[4], cb->in[4], 1, &sizes[1], PC_GEN_UNIFORM, 0.5, 1.5); /* weight */
    pc_arg_set(&c->out[0], cb->out[0], rank, sizes, PC_GEN_ZEROS, 0, 0);
    pc_arg_set(&c->out[1], cb->out[1], 1, &sizes[1], PC_GEN_ZEROS, 0, 0);
    pc_arg_set(&c->out[2], cb->out[2], 1, &sizes[1], PC_GEN_ZEROS, 0, 0);
    for (int o = 0; o < 3; o++) c->out[o].tol = PC_TOL_ACCUMULATE;
    c->large = k == 3;
    char buf[48];
    pc_label(c, "%s%s%s%s", pc_shape_text(buf, sizeof buf, rank, sizes),
             shapes[k].what ? " " : "", shapes[k].what ? shapes[k].what : "",
             cb->in[4] < 0 ? " no weight" : "");
    return true;
}

/* LAYER_NORM_BACKWARD, like BATCH_NORM_BACKWARD, is defined for any given
 * statistics: mean and rstd are drawn (x's leading dims), not computed. The
 * combos are those of BATCH_NORM_BACKWARD (with and without weight). */
static bool build_layer_norm_backward(const pc_op *op, const pc_combo *cb, int k, bool quick,
                                      pc_case *c) {
    (void)op;
    static const struct {
        int rank;
        int64_t sizes[3];
        int nr;
        const char *what;
    } cases[] = {
        {3, {4, 5, 6}, 1, NULL}, {3, {4, 5, 6}, 2, NULL}, {3, {4, 5, 6}, 3, "0-dim stats"},
        {2, {7, 13}, 1, "odd"},  {3, {32, 64, 256}, 1, "large"},
    };
    int n = (int)(sizeof cases / sizeof cases[0]);
    if (quick || !f32_data(cb)) n--;
    if (k >= n) return false;
    int rank = cases[k].rank, nr = cases[k].nr;
    const int64_t *sizes = cases[k].sizes, *inner = sizes + rank - nr;
    pc_case_init(c, 5, 3);
    pc_arg_set(&c->in[0], cb->in[0], rank, sizes, PC_GEN_UNIFORM, -1, 1);       /* grad_y */
    pc_arg_set(&c->in[1], cb->in[1], rank, sizes, PC_GEN_UNIFORM, -3, 5);       /* x */
    pc_arg_set(&c->in[2], cb->in[2], rank - nr, sizes, PC_GEN_UNIFORM, 0, 2);   /* mean */
    pc_arg_set(&c->in[3], cb->in[3], rank - nr, sizes, PC_GEN_UNIFORM, 0.5, 2); /* rstd */
    pc_arg_set(&c->in[4], cb->in[4], nr, inner, PC_GEN_UNIFORM, 0.5, 1.5);     /* weight */
    pc_arg_set(&c->out[0], cb->out[0], rank, sizes, PC_GEN_ZEROS, 0, 0);
    pc_arg_set(&c->out[1], cb->out[1], nr, inner, PC_GEN_ZEROS, 0, 0);
    pc_arg_set(&c->out[2], cb->out[2], nr, inner, PC_GEN_ZEROS, 0, 0);
    for (int o = 0; o < 3; o++) c->out[o].tol = PC_TOL_ACCUMULATE;
    c->params.layer_norm.struct_size = sizeof c->params.layer_norm;
    c->params.layer_norm.normalized_rank = nr;
    c->params.layer_norm.eps = 1e-5;
    c->has_params = true;
    c->large = k == 4;
    char buf[48];
    pc_label(c, "%s%s%s normalized_rank %d%s", pc_shape_text(buf, sizeof buf, rank, sizes),
             cases[k].what ? " " : "", cases[k].what ? cases[k].what : "", nr,
             cb->in[4] < 0 ? " no weight" : "");
    return true;
}

static bool build_index(const pc_op *op, const pc_combo *cb, int k, bool quick, pc_case *c) {
    static const index_case one_d[] = {
        {3, {5, 6, 7}, {9}, 1, NULL},     {3, {5, 6, 7}, {8}, 0, NULL},
        {1, {13}, {20}, 0, NULL},         {2, {7, 13}, {11}, 1, "odd"},
        {3, {5, 6, 7}, {0}, 1, "empty index"}, {2, {1024, 1024}, {1024}, 0, "large"},
    };
    static const index_case same_rank[] = {
        {3, {5, 6, 7}, {5, 4, 7}, 1, NULL},   {3, {5, 6, 7}, {8, 6, 7}, 0, NULL},
        {2, {7, 13}, {5, 20}, 1, "odd"},      {3, {5, 6, 7}, {5, 0, 7}, 1, "empty index"},
        {2, {1024, 1024}, {1024, 1024}, 0, "large"},
    };
    uint32_t id = op->id;
    bool selecting = id == GFP_OP_INDEX_SELECT || id == GFP_OP_GATHER;
    bool vector = id == GFP_OP_INDEX_SELECT || id == GFP_OP_INDEX_ADD;
    const index_case *table = vector ? one_d : same_rank;
    int n = vector ? 6 : 5;
    int i = -1;
    for (int j = 0; j < n; j++) {
        const index_case *ic = &table[j];
        if (ic->what && !strcmp(ic->what, "large") && (quick || !f32_data(cb))) continue;
        if (selecting && ic->what && !strcmp(ic->what, "empty index")) continue; /* empty out */
        if (k-- == 0) {
            i = j;
            break;
        }
    }
    if (i < 0) return false;
    const index_case *ic = &table[i];
    int32_t dt = cb->in[0];
    bool fl = pc_is_float(dt) || pc_is_complex(dt); /* complex: parts in the float range */
    double lo = fl ? -10 : -100, hi = -lo;
    int rank = ic->rank;
    int64_t walked[3]; /* y of select/gather, src of the adds */
    for (int d = 0; d < rank; d++) walked[d] = vector ? ic->x[d] : ic->idx[d];
    if (vector) walked[ic->dim] = ic->idx[0];
    pc_case_init(c, 2, 1);
    pc_arg_set(&c->in[1], GFP_I64, vector ? 1 : rank, ic->idx, PC_GEN_INDEX, 0,
               (double)ic->x[ic->dim]);
    if (selecting) {
        pc_arg_set(&c->in[0], dt, rank, ic->x, PC_GEN_UNIFORM, lo, hi);
        pc_arg_set(&c->out[0], cb->out[0], rank, walked, PC_GEN_ZEROS, 0, 0);
    } else {
        pc_arg_set(&c->in[0], dt, rank, walked, PC_GEN_UNIFORM, lo, hi);
        pc_arg_set(&c->out[0], cb->out[0], rank, ic->x, PC_GEN_UNIFORM, lo, hi);
        c->out[0].inout = true; /* accumulated into */
        c->out[0].tol = fl ? PC_TOL_ACCUMULATE : PC_TOL_EXACT;
    }
    c->params.dim.struct_size = sizeof c->params.dim;
    c->params.dim.dim = ic->dim;
    c->has_params = true;
    c->large = ic->what && !strcmp(ic->what, "large");
    char xs[48], is[48];
    pc_label(c, "%s %s index %s dim %d%s%s", selecting ? "x" : "y",
             pc_shape_text(xs, sizeof xs, rank, ic->x),
             pc_shape_text(is, sizeof is, vector ? 1 : rank, ic->idx), ic->dim, ic->what ? " " : "",
             ic->what ? ic->what : "");
    return true;
}

/* ------------------------------------------------------------ the table */
bool pc_cases_reduce(const gfp_op_info *row, pc_op *op) {
    op->flags = 0;
    switch (row->family) {
    case GFP_FAMILY_REDUCE:
        op->combos = combos_reduce;
        op->build = build_reduce;
        return true;
    case GFP_FAMILY_NORM:
        op->combos = row->op == GFP_OP_LAYER_NORM            ? combos_layer_norm
                     : row->op == GFP_OP_BATCH_NORM          ? combos_batch_norm
                     : row->op == GFP_OP_BATCH_NORM_BACKWARD ? combos_batch_norm_backward
                     : row->op == GFP_OP_LAYER_NORM_BACKWARD ? combos_batch_norm_backward
                     : row->op == GFP_OP_SOFTMAX_BACKWARD ||
                             row->op == GFP_OP_LOG_SOFTMAX_BACKWARD
                         ? combos_same_2
                         : combos_same_1;
        op->build = row->op == GFP_OP_LAYER_NORM            ? build_layer_norm
                    : row->op == GFP_OP_BATCH_NORM          ? build_batch_norm
                    : row->op == GFP_OP_BATCH_NORM_BACKWARD ? build_batch_norm_backward
                    : row->op == GFP_OP_LAYER_NORM_BACKWARD ? build_layer_norm_backward
                                                            : build_softmax;
        return true;
    case GFP_FAMILY_INDEX:
        op->combos = combos_index;
        op->build = build_index;
        return true;
    default: return false;
    }
}
