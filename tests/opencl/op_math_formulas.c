/* SPDX-License-Identifier: BSD-3-Clause */
/* op_math_formulas.c — the shared elementwise formulas (plugins/common/
 * op_math.def), generated as host C (graft-opgen c), give exactly what the
 * reference plugin computes, for every op and compute type: same bits, NaN
 * for NaN. The reference is loaded through the ABI alone (dlopen), fed the
 * same inputs - ordinary values, zeros of both signs, NaN, infinities,
 * integer extremes - and its outputs compared with the formulas'.
 *
 * This pins the table itself to the oracle on the host, independently of any
 * device; the device tests (test_ocl_*.c, graft-plugin-check) then pin each
 * device's rendering of the same table. Plugin path: argv[1], else
 * $GRAFT_TEST_REFERENCE_PLUGIN. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "op_math_c.h" /* generated from op_math.def */
#include "unit/ref_direct.h"

/* ------------------------------------------------------------ the oracle */
#define N 64 /* elements per case */

/* A 1-D contiguous tensor of N elements holding data. */
static gfp_tensor make(int32_t dt, const void *data) {
    gfp_tensor t = rd_desc(dt, 1, (const int64_t[]){N}, NULL);
    void *hp = NULL;
    if (P->buffer_alloc(dev, N * rd_esize(dt), &t.buffer, &hp) != GFP_OK) t.buffer = NULL;
    if (t.buffer && data) P->buffer_write(dev, t.buffer, 0, data, N * rd_esize(dt));
    return t;
}

/* Runs op on the oracle: inputs as host arrays, the output into out. */
static int oracle(uint32_t op, int n_in, const int32_t *in_dt, void *const *in, int32_t out_dt,
                  void *out, const void *params) {
    gfp_tensor t[3], y = make(out_dt, NULL);
    const gfp_tensor *ins[3];
    for (int i = 0; i < n_in; i++) {
        t[i] = make(in_dt[i], in[i]);
        ins[i] = &t[i];
    }
    const gfp_tensor *outs[1] = {&y};
    gfp_status st = rd_launch(op, ins, (uint32_t)n_in, outs, 1, params);
    if (st == GFP_OK) P->buffer_read(dev, y.buffer, 0, out, N * rd_esize(out_dt));
    for (int i = 0; i < n_in; i++) P->buffer_free(dev, t[i].buffer);
    P->buffer_free(dev, y.buffer);
    if (st != GFP_OK) fprintf(stderr, "oracle refused op %u: %s\n", (unsigned)op, last_error);
    return st == GFP_OK;
}

/* ------------------------------------------------------------ inputs */
static const double specials[] = {0.0, -0.0, NAN, INFINITY, -INFINITY, 1.0, -1.0, 0.5,
                                  -0.5, 2.5, -2.5, 1e30, -1e-30, 88.0, -88.0, 700.0};
static const int64_t ispecials[] = {0, 1, -1, 2, -2, 3, 7, -7, INT64_MAX, INT64_MIN,
                                    INT32_MAX, INT32_MIN, 62, 63, 64, -64};

/* Input k of a case: specials first, then a spread of ordinary values. */
static double fvalue(int i, int k) {
    if (i < 16) return specials[(i + 5 * k) % 16];
    return -6.0 + 12.0 * (double)((i * 37 + k * 11) % 97) / 96.0;
}
static int64_t ivalue(int i, int k) {
    if (i < 16) return ispecials[(i + 3 * k) % 16];
    return (int64_t)((i * 37 + k * 11) % 41) - 20;
}

static void fill(int32_t dt, void *buf, int k) {
    for (int i = 0; i < N; i++) {
        switch (dt) {
        case GFP_F32: ((float *)buf)[i] = (float)fvalue(i, k); break;
        case GFP_F64: ((double *)buf)[i] = fvalue(i, k); break;
        case GFP_I32: ((int32_t *)buf)[i] = (int32_t)(uint32_t)(uint64_t)ivalue(i, k); break;
        case GFP_I64: ((int64_t *)buf)[i] = ivalue(i, k); break;
        default: ((uint8_t *)buf)[i] = (uint8_t)((i + k) % 3 == 0); break;
        }
    }
}

/* The element as the formulas take it. */
static double ld_f(int32_t dt, const void *b, int i) {
    return dt == GFP_F32 ? ((const float *)b)[i] : ((const double *)b)[i];
}
static int64_t ld_i(int32_t dt, const void *b, int i) {
    switch (dt) {
    case GFP_I32: return ((const int32_t *)b)[i];
    case GFP_I64: return ((const int64_t *)b)[i];
    default: return ((const uint8_t *)b)[i] != 0;
    }
}
static int truth(int32_t dt, const void *b, int i) {
    switch (dt) {
    case GFP_F32: return ((const float *)b)[i] != 0;
    case GFP_F64: return ((const double *)b)[i] != 0;
    default: return ld_i(dt, b, i) != 0;
    }
}

/* Same bits, or both NaN. */
static int same(int32_t dt, const void *a, const void *b, int i) {
    size_t s = rd_esize(dt);
    if (dt == GFP_F32 && isnan(((const float *)a)[i])) return isnan(((const float *)b)[i]);
    if (dt == GFP_F64 && isnan(((const double *)a)[i])) return isnan(((const double *)b)[i]);
    return memcmp((const char *)a + i * s, (const char *)b + i * s, s) == 0;
}

/* ------------------------------------------------------------ the table */
typedef enum kind { FLOAT, NUMERIC, COMPARE, LOGICAL } kind;
typedef struct op_row {
    uint32_t op;
    const char *name;
    int arity;
    kind k;
} op_row;
static const op_row rows[] = {
#define GF_OP_MATH_UNARY(ID, name, kind, f, i) {GFP_OP_##ID, #name, 1, kind},
#define GF_OP_MATH_BINARY(ID, name, kind, f, i) {GFP_OP_##ID, #name, 2, kind},
#include "op_math.def"
};

/* The generated functions by name and compute type. */
typedef float (*uf32)(float, float, float, int, int);
typedef double (*uf64)(double, double, double, int, int);
typedef int64_t (*uint_)(int64_t, int64_t, int64_t, int, int);
typedef float (*bf32)(float, float);
typedef double (*bf64)(double, double);
typedef int64_t (*bint)(int64_t, int64_t);
typedef int (*cf32)(float, float);
typedef int (*cf64)(double, double);
typedef int (*cint)(int64_t, int64_t);
typedef int (*l1)(int);
typedef int (*l2)(int, int);
typedef struct fn_row {
    const char *name;
    void (*fn)(void);
} fn_row;
#define ROW(prefix, name) {#name, (void (*)(void))prefix##name},
#define UF32(name) ROW(gf_f32_, name)
#define UF64(name) ROW(gf_f64_, name)
#define UINT(name) ROW(gf_int_, name)
#define UBOOL(name) ROW(gf_bool_, name)
static const fn_row unary_f32[] = {GF_UNARY_FLOAT_OPS(UF32)}, unary_f64[] = {GF_UNARY_FLOAT_OPS(UF64)},
                    unary_int[] = {GF_UNARY_INT_OPS(UINT)}, binary_f32[] = {GF_BINARY_FLOAT_OPS(UF32)},
                    binary_f64[] = {GF_BINARY_FLOAT_OPS(UF64)}, binary_int[] = {GF_BINARY_INT_OPS(UINT)},
                    compare_f32[] = {GF_COMPARE_OPS(UF32)}, compare_f64[] = {GF_COMPARE_OPS(UF64)},
                    compare_int[] = {GF_COMPARE_OPS(UINT)}, logical1[] = {GF_LOGICAL_UNARY_OPS(UBOOL)},
                    logical2[] = {GF_LOGICAL_BINARY_OPS(UBOOL)};
#define FIND(table, name) find(table, sizeof table / sizeof table[0], name)
static void (*find(const fn_row *t, size_t n, const char *name))(void) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(t[i].name, name)) return t[i].fn;
    return NULL;
}

/* ------------------------------------------------------------ parameters */
typedef struct pcase {
    double a, b;
    int has_a, has_b; /* clamp */
} pcase;

static int64_t trunc_sat(double v) {
    if (v != v) return 0;
    if (v >= 9223372036854775808.0) return INT64_MAX;
    if (v <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)v;
}

/* Fills the op's params struct (NULL when it takes none). */
static const void *params_for(uint32_t op, const pcase *pc, gfp_scalar_params *sp,
                              gfp_clamp_params *cp) {
    if (op == GFP_OP_CLAMP) {
        *cp = (gfp_clamp_params){.struct_size = sizeof *cp, .has_min = (uint32_t)pc->has_a,
                                 .has_max = (uint32_t)pc->has_b, .min = pc->a, .max = pc->b};
        return cp;
    }
    if (op == GFP_OP_LEAKY_RELU || op == GFP_OP_ELU || op == GFP_OP_SOFTPLUS ||
        op == GFP_OP_POW_SCALAR) {
        *sp = (gfp_scalar_params){.struct_size = sizeof *sp, .a = pc->a, .b = pc->b};
        return sp;
    }
    return NULL;
}

/* ------------------------------------------------------------ one case */
static void check_case(const op_row *r, int32_t dt, int32_t dt_b, const pcase *pc) {
    int32_t out_dt = r->k == COMPARE || r->k == LOGICAL ? GFP_BOOL : dt;
    char a[N * 8], b[N * 8], want[N * 8], got[N * 8];
    fill(dt, a, 0);
    fill(dt_b, b, 1);
    gfp_scalar_params sp;
    gfp_clamp_params cp;
    const void *params = params_for(r->op, pc, &sp, &cp);
    int32_t in_dt[2] = {dt, dt_b};
    void *ins[2] = {a, b};
    if (!oracle(r->op, r->arity, in_dt, ins, out_dt, want, params)) {
        CHECK_MSG(0, "%s: the reference refused it", r->name);
        return;
    }
    bool is_f = dt == GFP_F32 || dt == GFP_F64;
    int has_a = pc->has_a && pc->a == pc->a, has_b = pc->has_b && pc->b == pc->b;
    for (int i = 0; i < N; i++) {
        switch (r->k) {
        case LOGICAL:
            if (r->arity == 1)
                ((uint8_t *)got)[i] = ((l1)FIND(logical1, r->name))(truth(dt, a, i)) != 0;
            else
                ((uint8_t *)got)[i] =
                    ((l2)FIND(logical2, r->name))(truth(dt, a, i), truth(dt_b, b, i)) != 0;
            break;
        case COMPARE:
            if (dt == GFP_F32)
                ((uint8_t *)got)[i] = ((cf32)FIND(compare_f32, r->name))(
                                          (float)ld_f(dt, a, i), (float)ld_f(dt, b, i)) != 0;
            else if (dt == GFP_F64)
                ((uint8_t *)got)[i] =
                    ((cf64)FIND(compare_f64, r->name))(ld_f(dt, a, i), ld_f(dt, b, i)) != 0;
            else
                ((uint8_t *)got)[i] =
                    ((cint)FIND(compare_int, r->name))(ld_i(dt, a, i), ld_i(dt, b, i)) != 0;
            break;
        default:
            if (dt == GFP_F32 && r->arity == 1)
                ((float *)got)[i] = ((uf32)FIND(unary_f32, r->name))(
                    (float)ld_f(dt, a, i), (float)pc->a, (float)pc->b, has_a, has_b);
            else if (dt == GFP_F64 && r->arity == 1)
                ((double *)got)[i] =
                    ((uf64)FIND(unary_f64, r->name))(ld_f(dt, a, i), pc->a, pc->b, has_a, has_b);
            else if (dt == GFP_F32)
                ((float *)got)[i] = ((bf32)FIND(binary_f32, r->name))((float)ld_f(dt, a, i),
                                                                      (float)ld_f(dt, b, i));
            else if (dt == GFP_F64)
                ((double *)got)[i] =
                    ((bf64)FIND(binary_f64, r->name))(ld_f(dt, a, i), ld_f(dt, b, i));
            else {
                int64_t v = r->arity == 1
                                ? ((uint_)FIND(unary_int, r->name))(
                                      ld_i(dt, a, i), has_a ? trunc_sat(pc->a) : 0,
                                      has_b ? trunc_sat(pc->b) : 0, has_a, has_b)
                                : ((bint)FIND(binary_int, r->name))(ld_i(dt, a, i), ld_i(dt, b, i));
                if (dt == GFP_I32) ((int32_t *)got)[i] = (int32_t)(uint32_t)(uint64_t)v;
                else ((int64_t *)got)[i] = v;
            }
            break;
        }
    }
    (void)is_f;
    int bad = 0;
    for (int i = 0; i < N; i++) {
        if (same(out_dt, got, want, i)) continue;
        if (bad++ < 3) {
            double x = dt == GFP_F32 || dt == GFP_F64 ? ld_f(dt, a, i) : (double)ld_i(dt, a, i);
            fprintf(stderr, "  %s (%s%s%s) input %d (a = %.17g): formula and reference differ\n",
                    r->name, dt == GFP_F32 ? "f32" : dt == GFP_F64 ? "f64" : dt == GFP_I32 ? "i32"
                             : dt == GFP_I64 ? "i64" : "bool",
                    r->arity == 2 ? ", " : "", r->arity == 2 ? "b" : "", i, x);
        }
    }
    CHECK_MSG(bad == 0, "%s: %d of %d elements differ", r->name, bad, N);
}

static void test_formulas(void) {
    const int32_t dts[] = {GFP_F32, GFP_F64, GFP_I32, GFP_I64, GFP_BOOL};
    for (size_t ri = 0; ri < sizeof rows / sizeof rows[0]; ri++) {
        const op_row *r = &rows[ri];
        for (int di = 0; di < 5; di++) {
            int32_t dt = dts[di];
            bool is_f = dt == GFP_F32 || dt == GFP_F64;
            if ((r->k == FLOAT && !is_f) || (r->k == NUMERIC && dt == GFP_BOOL)) continue;
            pcase cases[4] = {{0.125, 0, 0, 0}};
            int n_cases = 1;
            if (r->op == GFP_OP_ELU) cases[0].a = 1.3;
            if (r->op == GFP_OP_SOFTPLUS) {
                cases[0] = (pcase){2.0, 5.0, 0, 0};
                cases[1] = (pcase){0.5, 1.0, 0, 0};
                n_cases = 2;
            }
            if (r->op == GFP_OP_POW_SCALAR) {
                cases[0].a = 2.5;
                cases[1].a = -1.0;
                cases[2].a = 3.0;
                n_cases = 3;
            }
            if (r->op == GFP_OP_CLAMP) {
                cases[0] = (pcase){-1.5, 2.5, 1, 1};
                cases[1] = (pcase){-0.5, NAN, 1, 0};
                cases[2] = (pcase){NAN, 1.0, 1, 1};
                cases[3] = (pcase){2.0, -1.0, 1, 1};
                n_cases = 4;
            }
            for (int c = 0; c < n_cases; c++) check_case(r, dt, dt, &cases[c]);
            /* Logical ops mix dtypes. */
            if (r->k == LOGICAL && r->arity == 2)
                for (int dj = 0; dj < 5; dj++) check_case(r, dt, dts[dj], &cases[0]);
        }
    }
}

int main(int argc, char **argv) {
    if (!rd_open(argc, argv)) return 1;
    RUN(test_formulas);
    return CHECK_REPORT();
}
