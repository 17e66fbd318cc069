/* SPDX-License-Identifier: BSD-3-Clause */
/* cases_elementwise.c — the cases of COPY, FILL, ARANGE, RANDOM, TRIL/TRIU,
 * the unary and binary elementwise ops and WHERE.
 *
 * Shapes: a rank-3 block, an odd 7x13 matrix, a 0-dim scalar and, for f32
 * data, a large 1024x1024 matrix (2^20 elements); float ops also get a case
 * whose inputs mix NaN, infinities, signed zeros and huge and tiny values, so
 * that their positions in the output are compared. Empty outputs are left
 * out: the ABI says the core never launches an elementwise op with one.
 * Input ranges keep each formula in its interesting domain (negative inputs
 * of log must give NaN at the same places; round gets exact halves). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "pc.h"

typedef struct shape {
    int rank;
    int64_t sizes[3];
    const char *what;
} shape;

static const shape ew_shapes[] = {
    {3, {4, 5, 6}, NULL}, {2, {7, 13}, "odd"}, {0, {0}, "0-dim"}, {2, {1024, 1024}, "large"},
};
#define N_EW_SHAPES 4
#define SHAPE_LARGE 3

/* Large shapes run for f32 data only: they test launch geometry, not dtypes. */
static bool large_ok(const pc_combo *cb) {
    bool f32 = false;
    for (uint32_t i = 0; i < cb->n_in; i++) {
        if (cb->in[i] == GFP_F32) f32 = true;
        else if (cb->in[i] != GFP_BOOL && cb->in[i] != -1) return false;
    }
    for (uint32_t i = 0; i < cb->n_out; i++) {
        if (cb->out[i] == GFP_F32) f32 = true;
        else if (cb->out[i] != GFP_BOOL) return false;
    }
    return f32;
}

/* Case k of (shape, variant) pairs; the shape index comes back in *s, the
 * variant in *v. Returns false past the end. */
static bool pick(int k, int n_variants, bool quick, const pc_combo *cb, bool allow_0dim, int *s,
                 int *v) {
    for (int si = 0; si < N_EW_SHAPES; si++) {
        if (si == SHAPE_LARGE && (quick || !large_ok(cb))) continue;
        if (!allow_0dim && ew_shapes[si].rank == 0) continue;
        int nv = si == SHAPE_LARGE || si == 2 ? 1 : n_variants;
        if (k < nv) {
            *s = si;
            *v = k;
            return true;
        }
        k -= nv;
    }
    return false;
}

static void label_shape(pc_case *c, const shape *s, const char *extra) {
    char buf[64];
    pc_shape_text(buf, sizeof buf, s->rank, s->sizes);
    pc_label(c, "%s%s%s%s%s", buf, s->what ? " " : "", s->what ? s->what : "",
             extra && extra[0] ? " " : "", extra ? extra : "");
}

/* ------------------------------------------------------------ unary */
typedef struct unary_info {
    uint32_t op;
    pc_gen gen;
    double lo, hi;   /* float inputs */
    double ilo, ihi; /* integer inputs */
    pc_tol tol;
} unary_info;

static const unary_info unary_table[] = {
    {GFP_OP_NEG, PC_GEN_UNIFORM, -10, 10, -100, 100, PC_TOL_ELEMENTWISE},
    {GFP_OP_ABS, PC_GEN_UNIFORM, -10, 10, -100, 100, PC_TOL_ELEMENTWISE},
    {GFP_OP_SIGN, PC_GEN_QUARTERS, -1, 1, -3, 3, PC_TOL_ELEMENTWISE},
    {GFP_OP_EXP, PC_GEN_UNIFORM, -10, 10, 0, 0, PC_TOL_TRANSCENDENTAL},
    {GFP_OP_LOG, PC_GEN_UNIFORM, -1, 10, 0, 0, PC_TOL_TRANSCENDENTAL},
    {GFP_OP_LOG1P, PC_GEN_UNIFORM, -1.5, 5, 0, 0, PC_TOL_TRANSCENDENTAL},
    {GFP_OP_EXPM1, PC_GEN_UNIFORM, -5, 5, 0, 0, PC_TOL_TRANSCENDENTAL},
    {GFP_OP_SQRT, PC_GEN_UNIFORM, -1, 10, 0, 0, PC_TOL_TRANSCENDENTAL},
    {GFP_OP_RSQRT, PC_GEN_UNIFORM, -1, 10, 0, 0, PC_TOL_TRANSCENDENTAL},
    {GFP_OP_RECIPROCAL, PC_GEN_UNIFORM, -4, 4, 0, 0, PC_TOL_ELEMENTWISE},
    {GFP_OP_SQUARE, PC_GEN_UNIFORM, -10, 10, -1000, 1000, PC_TOL_ELEMENTWISE},
    {GFP_OP_SIN, PC_GEN_UNIFORM, -10, 10, 0, 0, PC_TOL_TRANSCENDENTAL},
    {GFP_OP_COS, PC_GEN_UNIFORM, -10, 10, 0, 0, PC_TOL_TRANSCENDENTAL},
    {GFP_OP_TANH, PC_GEN_UNIFORM, -6, 6, 0, 0, PC_TOL_TRANSCENDENTAL},
    {GFP_OP_SIGMOID, PC_GEN_UNIFORM, -10, 10, 0, 0, PC_TOL_TRANSCENDENTAL},
    {GFP_OP_RELU, PC_GEN_UNIFORM, -5, 5, -100, 100, PC_TOL_ELEMENTWISE},
    {GFP_OP_LEAKY_RELU, PC_GEN_UNIFORM, -5, 5, 0, 0, PC_TOL_ELEMENTWISE},
    {GFP_OP_ELU, PC_GEN_UNIFORM, -5, 5, 0, 0, PC_TOL_TRANSCENDENTAL},
    {GFP_OP_GELU, PC_GEN_UNIFORM, -5, 5, 0, 0, PC_TOL_TRANSCENDENTAL},
    {GFP_OP_GELU_TANH, PC_GEN_UNIFORM, -5, 5, 0, 0, PC_TOL_TRANSCENDENTAL},
    {GFP_OP_SILU, PC_GEN_UNIFORM, -8, 8, 0, 0, PC_TOL_TRANSCENDENTAL},
    {GFP_OP_SOFTPLUS, PC_GEN_UNIFORM, -6, 6, 0, 0, PC_TOL_TRANSCENDENTAL},
    {GFP_OP_ERF, PC_GEN_UNIFORM, -3, 3, 0, 0, PC_TOL_TRANSCENDENTAL},
    {GFP_OP_FLOOR, PC_GEN_QUARTERS, -10, 10, 0, 0, PC_TOL_EXACT},
    {GFP_OP_CEIL, PC_GEN_QUARTERS, -10, 10, 0, 0, PC_TOL_EXACT},
    {GFP_OP_ROUND, PC_GEN_QUARTERS, -10, 10, 0, 0, PC_TOL_EXACT},
    {GFP_OP_CLAMP, PC_GEN_UNIFORM, -2, 2, -30, 30, PC_TOL_ELEMENTWISE},
    {GFP_OP_POW_SCALAR, PC_GEN_UNIFORM, -3, 3, 0, 0, PC_TOL_TRANSCENDENTAL},
    /* mostly inside [-1, 1], a little beyond (NaN there) */
    {GFP_OP_ASIN, PC_GEN_UNIFORM, -1.2, 1.2, 0, 0, PC_TOL_TRANSCENDENTAL},
    {GFP_OP_ACOS, PC_GEN_UNIFORM, -1.2, 1.2, 0, 0, PC_TOL_TRANSCENDENTAL},
    {GFP_OP_ATAN, PC_GEN_UNIFORM, -20, 20, 0, 0, PC_TOL_TRANSCENDENTAL},
};
#define N_UNARY (sizeof unary_table / sizeof unary_table[0])

/* An op of the table without a row here gets a domain that covers the
 * breakpoints of the usual activations and the transcendental tolerance. */
static const unary_info *unary_of(uint32_t op) {
    static const unary_info other = {0, PC_GEN_UNIFORM, -5, 5, -100, 100, PC_TOL_TRANSCENDENTAL};
    for (size_t i = 0; i < N_UNARY; i++)
        if (unary_table[i].op == op) return &unary_table[i];
    return &other;
}

/* Parameter variants of the unary ops that take parameters. */
static int unary_variants(uint32_t op) {
    switch (op) {
    case GFP_OP_ELU:
    case GFP_OP_SOFTPLUS: return 2;
    case GFP_OP_CLAMP: return 3;
    case GFP_OP_POW_SCALAR: return 4;
    default: return 1;
    }
}

/* Sets the params of variant v; may narrow the input range. */
static void unary_params(uint32_t op, int v, bool is_int, pc_case *c, double *lo, double *hi,
                         char *text, size_t len) {
    text[0] = '\0';
    gfp_scalar_params *s = &c->params.scalar;
    switch (op) {
    case GFP_OP_LEAKY_RELU:
        s->struct_size = sizeof *s;
        s->a = 0.1;
        snprintf(text, len, "slope 0.1");
        break;
    case GFP_OP_ELU:
        s->struct_size = sizeof *s;
        s->a = v ? 0.5 : 1.0;
        snprintf(text, len, "alpha %g", s->a);
        break;
    case GFP_OP_SOFTPLUS:
        s->struct_size = sizeof *s;
        s->a = v ? 2.0 : 1.0;
        s->b = v ? 3.0 : 20.0;
        snprintf(text, len, "beta %g threshold %g", s->a, s->b);
        break;
    case GFP_OP_POW_SCALAR: {
        static const double exps[] = {2.0, 0.5, -1.5, 3.0};
        static const double los[] = {-3, -1, 0.1, -2}, his[] = {3, 4, 4, 2};
        s->struct_size = sizeof *s;
        s->a = exps[v];
        *lo = los[v];
        *hi = his[v];
        snprintf(text, len, "exponent %g", s->a);
        break;
    }
    case GFP_OP_CLAMP: {
        gfp_clamp_params *p = &c->params.clamp;
        p->struct_size = sizeof *p;
        p->has_min = v != 2;
        p->has_max = v != 1;
        p->min = v == 0 ? (is_int ? -10 : -0.5) : 0;
        p->max = v == 0 ? (is_int ? 20 : 0.5) : (is_int ? 5 : 1.25);
        if (p->has_min && p->has_max)
            snprintf(text, len, "min %g max %g", p->min, p->max);
        else if (p->has_min)
            snprintf(text, len, "min %g", p->min);
        else
            snprintf(text, len, "max %g", p->max);
        break;
    }
    default: return;
    }
    c->has_params = true;
}

/* The unary ops the reference computes on c64 / c128 (ref_complex.c); ABS
 * gives the part dtype. */
static bool complex_unary(uint32_t op) {
    switch (op) {
    case GFP_OP_NEG:
    case GFP_OP_EXP:
    case GFP_OP_LOG:
    case GFP_OP_LOG1P:
    case GFP_OP_EXPM1:
    case GFP_OP_SQRT:
    case GFP_OP_RSQRT:
    case GFP_OP_RECIPROCAL:
    case GFP_OP_SQUARE:
    case GFP_OP_SIN:
    case GFP_OP_COS:
    case GFP_OP_TANH:
    case GFP_OP_SIGMOID:
    case GFP_OP_POW_SCALAR:
    case GFP_OP_ASIN:
    case GFP_OP_ACOS:
    case GFP_OP_ATAN:
    case GFP_OP_ABS: return true;
    default: return false;
    }
}

static int combos_unary(const pc_op *op, uint32_t dtypes, pc_combo *out, int max) {
    int n = pc_combos_same(dtypes, 1, 1, out, max);
    if (complex_unary(op->id))
        n += pc_combos_complex(dtypes, 1, 1, op->id == GFP_OP_ABS ? PC_PART_DTYPE : -1, out + n,
                               max - n);
    return n;
}

static bool build_unary(const pc_op *op, const pc_combo *cb, int k, bool quick, pc_case *c) {
    const unary_info *u = unary_of(op->id);
    if (!u) return false;
    int32_t dt = cb->in[0];
    bool is_float = pc_is_float(dt) || pc_is_complex(dt); /* complex: parts in the float range */
    int nv = unary_variants(op->id), s, v;
    pc_case_init(c, 1, 1);
    char ptext[64];
    double lo = is_float ? u->lo : u->ilo, hi = is_float ? u->hi : u->ihi;
    if (pick(k, nv, quick, cb, true, &s, &v)) {
        unary_params(op->id, v, !is_float, c, &lo, &hi, ptext, sizeof ptext);
        const shape *sh = &ew_shapes[s];
        pc_arg_set(&c->in[0], dt, sh->rank, sh->sizes, is_float ? u->gen : PC_GEN_UNIFORM, lo, hi);
        pc_arg_set(&c->out[0], cb->out[0], sh->rank, sh->sizes, PC_GEN_ZEROS, 0, 0);
        c->out[0].tol = u->tol;
        c->large = s == SHAPE_LARGE;
        label_shape(c, sh, ptext);
        return true;
    }
    /* One more for floats: special values, the first parameter variant. */
    int n = 0;
    while (pick(n, nv, quick, cb, true, &s, &v)) n++;
    if (k != n || !pc_is_float(dt)) return false; /* complex: Annex G's corners are not checked */
    static const int64_t sizes[2] = {4, 16};
    unary_params(op->id, 0, false, c, &lo, &hi, ptext, sizeof ptext);
    /* sin(1e30) needs an exact argument reduction, which GPU APIs do not
     * promise and no model needs: periodic functions get no huge inputs. */
    bool periodic = op->id == GFP_OP_SIN || op->id == GFP_OP_COS;
    pc_arg_set(&c->in[0], dt, 2, sizes, periodic ? PC_GEN_NONFINITE : PC_GEN_SPECIALS, lo, hi);
    pc_arg_set(&c->out[0], cb->out[0], 2, sizes, PC_GEN_ZEROS, 0, 0);
    c->out[0].tol = u->tol;
    pc_label(c, "[4, 16] NaN/inf/-0 inputs%s%s", ptext[0] ? " " : "", ptext);
    return true;
}

static int combos_to_bool(const pc_op *op, uint32_t dtypes, pc_combo *out, int max) {
    (void)op;
    int n = pc_combos_same(dtypes, 1, 1, out, max);
    for (int i = 0; i < n; i++) out[i].out[0] = GFP_BOOL;
    return n;
}

static bool build_logical_not(const pc_op *op, const pc_combo *cb, int k, bool quick,
                              pc_case *c) {
    (void)op;
    int s, v;
    pc_case_init(c, 1, 1);
    if (!pick(k, 1, quick, cb, true, &s, &v)) {
        int n = 0;
        while (pick(n, 1, quick, cb, true, &s, &v)) n++;
        if (k != n || !pc_is_float(cb->in[0])) return false;
        static const int64_t sizes[2] = {4, 16};
        pc_arg_set(&c->in[0], cb->in[0], 2, sizes, PC_GEN_SPECIALS, -1, 1);
        pc_arg_set(&c->out[0], GFP_BOOL, 2, sizes, PC_GEN_ZEROS, 0, 0);
        pc_label(c, "[4, 16] NaN/inf/-0 inputs");
        return true;
    }
    const shape *sh = &ew_shapes[s];
    pc_arg_set(&c->in[0], cb->in[0], sh->rank, sh->sizes, PC_GEN_SMALLINT, -1, 1);
    pc_arg_set(&c->out[0], GFP_BOOL, sh->rank, sh->sizes, PC_GEN_ZEROS, 0, 0);
    c->large = s == SHAPE_LARGE;
    label_shape(c, sh, NULL);
    return true;
}

/* ------------------------------------------------------------ binary */
static bool is_compare(uint32_t op) {
    switch (op) {
    case GFP_OP_EQ:
    case GFP_OP_NE:
    case GFP_OP_LT:
    case GFP_OP_LE:
    case GFP_OP_GT:
    case GFP_OP_GE: return true;
    default: return false;
    }
}
static bool is_logical(uint32_t op) { return op == GFP_OP_LOGICAL_AND || op == GFP_OP_LOGICAL_OR; }

static int combos_binary(const pc_op *op, uint32_t dtypes, pc_combo *out, int max) {
    if (is_logical(op->id)) { /* any two stored dtypes */
        int n = 0;
        for (int32_t a = 0; a < GFP_DTYPE_COUNT; a++)
            for (int32_t b = 0; b < GFP_DTYPE_COUNT && n < max; b++) {
                if (!(dtypes & GFP_DTYPE_BIT(a)) || !(dtypes & GFP_DTYPE_BIT(b))) continue;
                pc_combo *c = &out[n++];
                memset(c, 0, sizeof *c);
                c->n_in = 2;
                c->n_out = 1;
                c->in[0] = a;
                c->in[1] = b;
                c->out[0] = GFP_BOOL;
            }
        return n;
    }
    int n = pc_combos_same(dtypes, 2, 1, out, max);
    if (is_compare(op->id))
        for (int i = 0; i < n; i++) out[i].out[0] = GFP_BOOL;
    /* complex: the arithmetic, and equality (no order) */
    uint32_t id = op->id;
    if (id == GFP_OP_ADD || id == GFP_OP_SUB || id == GFP_OP_MUL || id == GFP_OP_DIV ||
        id == GFP_OP_POW)
        n += pc_combos_complex(dtypes, 2, 1, -1, out + n, max - n);
    else if (id == GFP_OP_EQ || id == GFP_OP_NE)
        n += pc_combos_complex(dtypes, 2, 1, GFP_BOOL, out + n, max - n);
    return n;
}

static void binary_ranges(uint32_t op, bool is_float, pc_gen *gen, double r[4], pc_tol *tol) {
    *gen = PC_GEN_UNIFORM;
    *tol = PC_TOL_ELEMENTWISE;
    double f[4] = {-10, 10, -10, 10}, i[4] = {-1000, 1000, -1000, 1000};
    switch (op) {
    case GFP_OP_DIV:
        f[2] = -4, f[3] = 4;
        i[2] = -10, i[3] = 10; /* zero divisors: the ABI says the result is 0 */
        break;
    case GFP_OP_POW:
        f[0] = 0.1, f[1] = 3, f[2] = -2, f[3] = 3;
        i[0] = -5, i[1] = 5, i[2] = 0, i[3] = 6;
        *tol = PC_TOL_TRANSCENDENTAL;
        break;
    case GFP_OP_MAXIMUM:
    case GFP_OP_MINIMUM: *tol = PC_TOL_EXACT; break;
    case GFP_OP_ATAN2: *tol = PC_TOL_TRANSCENDENTAL; break; /* all four quadrants */
    default:
        if (is_compare(op) || is_logical(op)) {
            /* Small integers in every dtype: ties and zeros. */
            *gen = PC_GEN_SMALLINT;
            *tol = PC_TOL_EXACT;
            f[0] = f[2] = i[0] = i[2] = is_logical(op) ? -1 : -2;
            f[1] = f[3] = i[1] = i[3] = is_logical(op) ? 1 : 2;
        }
        break;
    }
    memcpy(r, is_float ? f : i, sizeof f);
}

static bool build_binary(const pc_op *op, const pc_combo *cb, int k, bool quick, pc_case *c) {
    int s, v;
    pc_gen gen;
    double r[4];
    pc_tol tol;
    /* complex: parts in the float ranges; no NaN/inf case (Annex G's corners) */
    bool is_float = pc_is_float(cb->in[0]) && pc_is_float(cb->in[1]);
    binary_ranges(op->id, pc_is_float(cb->in[0]) || pc_is_complex(cb->in[0]), &gen, r, &tol);
    pc_case_init(c, 2, 1);
    if (pick(k, 1, quick, cb, true, &s, &v)) {
        const shape *sh = &ew_shapes[s];
        pc_arg_set(&c->in[0], cb->in[0], sh->rank, sh->sizes, gen, r[0], r[1]);
        pc_arg_set(&c->in[1], cb->in[1], sh->rank, sh->sizes, gen, r[2], r[3]);
        pc_arg_set(&c->out[0], cb->out[0], sh->rank, sh->sizes, PC_GEN_ZEROS, 0, 0);
        c->out[0].tol = tol;
        c->large = s == SHAPE_LARGE;
        label_shape(c, sh, NULL);
        return true;
    }
    int n = 0;
    while (pick(n, 1, quick, cb, true, &s, &v)) n++;
    if (k != n || !is_float) return false;
    static const int64_t sizes[2] = {4, 16};
    pc_arg_set(&c->in[0], cb->in[0], 2, sizes, PC_GEN_SPECIALS, r[0], r[1]);
    pc_arg_set(&c->in[1], cb->in[1], 2, sizes, PC_GEN_SPECIALS, r[2], r[3]);
    pc_arg_set(&c->out[0], cb->out[0], 2, sizes, PC_GEN_ZEROS, 0, 0);
    c->out[0].tol = tol;
    pc_label(c, "[4, 16] NaN/inf/-0 inputs");
    return true;
}

static int combos_where(const pc_op *op, uint32_t dtypes, pc_combo *out, int max) {
    (void)op;
    int n = pc_combos_same(dtypes, 3, 1, out, max);
    for (int i = 0; i < n; i++) out[i].in[0] = GFP_BOOL;
    return n;
}

static bool build_where(const pc_op *op, const pc_combo *cb, int k, bool quick, pc_case *c) {
    (void)op;
    int s, v;
    if (!pick(k, 1, quick, cb, true, &s, &v)) return false;
    const shape *sh = &ew_shapes[s];
    pc_case_init(c, 3, 1);
    pc_arg_set(&c->in[0], GFP_BOOL, sh->rank, sh->sizes, PC_GEN_UNIFORM, 0, 1);
    pc_arg_set(&c->in[1], cb->in[1], sh->rank, sh->sizes, PC_GEN_UNIFORM, -10, 10);
    pc_arg_set(&c->in[2], cb->in[2], sh->rank, sh->sizes, PC_GEN_UNIFORM, -10, 10);
    pc_arg_set(&c->out[0], cb->out[0], sh->rank, sh->sizes, PC_GEN_ZEROS, 0, 0);
    c->large = s == SHAPE_LARGE;
    label_shape(c, sh, NULL);
    return true;
}

/* ------------------------------------------------------------ copy and creation */
static int combos_copy(const pc_op *op, uint32_t dtypes, pc_combo *out, int max) {
    (void)op;
    int n = 0;
    for (int32_t a = 0; a < GFP_DTYPE_COUNT; a++)
        for (int32_t b = 0; b < GFP_DTYPE_COUNT && n < max; b++) {
            if (!(dtypes & GFP_DTYPE_BIT(a)) || !(dtypes & GFP_DTYPE_BIT(b))) continue;
            pc_combo *c = &out[n++];
            memset(c, 0, sizeof *c);
            c->n_in = c->n_out = 1;
            c->in[0] = a;
            c->out[0] = b;
        }
    return n;
}

static bool build_copy(const pc_op *op, const pc_combo *cb, int k, bool quick, pc_case *c) {
    (void)op;
    int s, v;
    int32_t x = cb->in[0], y = cb->out[0];
    bool xf = pc_is_float(x);
    pc_gen gen = PC_GEN_UNIFORM;
    double lo = -100, hi = 100;
    if (y == GFP_BOOL) gen = PC_GEN_SMALLINT, lo = -1, hi = 1; /* zeros among them */
    else if (x == GFP_I64 || x == GFP_I32) lo = -100000, hi = 100000;
    pc_case_init(c, 1, 1);
    if (pick(k, 1, quick, cb, true, &s, &v)) {
        const shape *sh = &ew_shapes[s];
        pc_arg_set(&c->in[0], x, sh->rank, sh->sizes, gen, lo, hi);
        pc_arg_set(&c->out[0], y, sh->rank, sh->sizes, PC_GEN_ZEROS, 0, 0);
        c->large = s == SHAPE_LARGE;
        label_shape(c, sh, NULL);
        return true;
    }
    /* Special values where the conversion defines them: to a float or to bool. */
    int n = 0;
    while (pick(n, 1, quick, cb, true, &s, &v)) n++;
    if (k != n || !xf || !(pc_is_float(y) || y == GFP_BOOL)) return false;
    static const int64_t sizes[2] = {4, 16};
    pc_arg_set(&c->in[0], x, 2, sizes, PC_GEN_SPECIALS, -100, 100);
    pc_arg_set(&c->out[0], y, 2, sizes, PC_GEN_ZEROS, 0, 0);
    pc_label(c, "[4, 16] NaN/inf/-0 inputs");
    return true;
}

static int combos_out_only(const pc_op *op, uint32_t dtypes, pc_combo *out, int max) {
    if (op->id == GFP_OP_ARANGE) dtypes &= ~(uint32_t)GFP_DTYPE_BIT(GFP_BOOL);
    return pc_combos_same(dtypes, 0, 1, out, max);
}

static bool build_fill(const pc_op *op, const pc_combo *cb, int k, bool quick, pc_case *c) {
    (void)op;
    int s, v;
    if (!pick(k, 2, quick, cb, true, &s, &v)) return false;
    const shape *sh = &ew_shapes[s];
    pc_case_init(c, 0, 1);
    pc_arg_set(&c->out[0], cb->out[0], sh->rank, sh->sizes, PC_GEN_ZEROS, 0, 0);
    gfp_fill_params *p = &c->params.fill;
    p->struct_size = sizeof *p;
    p->value = v ? 0.1 : -2.5;
    p->ivalue = v ? 1234567 : -3;
    c->has_params = true;
    c->large = s == SHAPE_LARGE;
    char text[64];
    snprintf(text, sizeof text, "value %g ivalue %lld", p->value, (long long)p->ivalue);
    label_shape(c, sh, text);
    return true;
}

static bool build_arange(const pc_op *op, const pc_combo *cb, int k, bool quick, pc_case *c) {
    (void)op;
    static const int64_t lengths[3] = {37, 1, 1 << 20};
    int n_len = quick || cb->out[0] != GFP_F32 ? 2 : 3;
    if (k >= n_len * 2) return false;
    int li = k / 2, v = k % 2;
    pc_case_init(c, 0, 1);
    pc_arg_set(&c->out[0], cb->out[0], 1, &lengths[li], PC_GEN_ZEROS, 0, 0);
    bool is_float = pc_is_float(cb->out[0]);
    c->out[0].tol = is_float ? PC_TOL_ELEMENTWISE : PC_TOL_EXACT;
    gfp_arange_params *p = &c->params.arange;
    p->struct_size = sizeof *p;
    p->start = v ? 10 : -3;
    p->step = is_float ? (v ? -0.25 : 0.5) : (v ? -3 : 2);
    c->has_params = true;
    c->large = li == 2;
    pc_label(c, "[%lld] start %g step %g", (long long)lengths[li], p->start, p->step);
    return true;
}

static bool build_random(const pc_op *op, const pc_combo *cb, int k, bool quick, pc_case *c) {
    (void)op;
    static const int64_t sizes[4][2] = {{1000, 0}, {7, 13}, {0, 0}, {1024, 1024}};
    static const int ranks[4] = {1, 2, 0, 2};
    bool is_float = cb->out[0] == GFP_F32 || cb->out[0] == GFP_F64;
    int n_kinds = is_float ? 3 : 1, n_shapes = quick || cb->out[0] != GFP_F32 ? 3 : 4;
    if (k >= n_kinds * n_shapes) return false;
    int si = k / n_kinds, kind = is_float ? k % n_kinds : GFP_RANDOM_BERNOULLI;
    pc_case_init(c, 0, 1);
    pc_arg_set(&c->out[0], cb->out[0], ranks[si], sizes[si], PC_GEN_ZEROS, 0, 0);
    gfp_random_params *p = &c->params.random;
    p->struct_size = sizeof *p;
    p->kind = (uint32_t)kind;
    p->seed = kind == GFP_RANDOM_NORMAL ? 42 : 0x0123456789abcdefull;
    /* Near 2^32: the counter carries into its second word within the case. */
    p->offset = kind == GFP_RANDOM_NORMAL ? 0xfffffffbull : 0;
    p->a = kind == GFP_RANDOM_UNIFORM ? -1 : kind == GFP_RANDOM_NORMAL ? 0.5 : 0.3;
    p->b = kind == GFP_RANDOM_UNIFORM ? 2 : kind == GFP_RANDOM_NORMAL ? 2 : 0;
    c->has_params = true;
    c->out[0].tol = kind == GFP_RANDOM_BERNOULLI  ? PC_TOL_EXACT
                    : kind == GFP_RANDOM_UNIFORM ? PC_TOL_ELEMENTWISE
                                                 : PC_TOL_TRANSCENDENTAL;
    c->contiguous_only = true; /* the ABI: RANDOM writes a contiguous output */
    c->large = si == 3;
    char buf[48];
    static const char *const kinds[] = {"uniform", "normal", "bernoulli"};
    pc_label(c, "%s %s seed 0x%llx offset 0x%llx", pc_shape_text(buf, sizeof buf, ranks[si], sizes[si]),
             kinds[kind], (unsigned long long)p->seed, (unsigned long long)p->offset);
    return true;
}

static bool build_tri(const pc_op *op, const pc_combo *cb, int k, bool quick, pc_case *c) {
    (void)op;
    static const shape shapes[] = {
        {2, {5, 7}, NULL}, {3, {3, 4, 6}, NULL}, {2, {7, 13}, "odd"}, {2, {1024, 1024}, "large"}};
    static const int64_t diags[3] = {0, -1, 2};
    int n_small = 3 * 3;
    bool large = !quick && large_ok(cb);
    if (k >= n_small + (large ? 1 : 0)) return false;
    int si = k < n_small ? k / 3 : 3;
    int64_t diag = k < n_small ? diags[k % 3] : 0;
    const shape *sh = &shapes[si];
    pc_case_init(c, 1, 1);
    pc_arg_set(&c->in[0], cb->in[0], sh->rank, sh->sizes, PC_GEN_UNIFORM, -10, 10);
    pc_arg_set(&c->out[0], cb->out[0], sh->rank, sh->sizes, PC_GEN_ZEROS, 0, 0);
    gfp_tri_params *p = &c->params.tri;
    p->struct_size = sizeof *p;
    p->diagonal = diag;
    c->has_params = true;
    c->large = si == 3;
    char text[32];
    snprintf(text, sizeof text, "diagonal %lld", (long long)diag);
    label_shape(c, sh, text);
    return true;
}

/* ------------------------------------------------------------ the families */
bool pc_cases_elementwise(const gfp_op_info *row, pc_op *op) {
    op->flags = PC_OP_ELEMENTWISE;
    switch (row->family) {
    case GFP_FAMILY_COPY:
        op->combos = combos_copy;
        op->build = build_copy;
        return true;
    case GFP_FAMILY_CREATE:
        op->combos = combos_out_only;
        op->build = row->op == GFP_OP_FILL ? build_fill : build_arange;
        if (row->op != GFP_OP_FILL) op->flags = 0;
        return true;
    case GFP_FAMILY_RANDOM:
        op->flags = 0;
        op->combos = combos_out_only;
        op->build = build_random;
        return true;
    case GFP_FAMILY_TRI:
        op->combos = combos_unary;
        op->build = build_tri;
        return true;
    case GFP_FAMILY_UNARY:
        op->combos = row->op == GFP_OP_LOGICAL_NOT ? combos_to_bool : combos_unary;
        op->build = row->op == GFP_OP_LOGICAL_NOT ? build_logical_not : build_unary;
        return true;
    case GFP_FAMILY_BINARY:
        op->combos = combos_binary;
        op->build = build_binary;
        return true;
    case GFP_FAMILY_WHERE:
        op->combos = combos_where;
        op->build = build_where;
        return true;
    default: return false;
    }
}
