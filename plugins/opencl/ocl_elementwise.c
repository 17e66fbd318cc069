/* SPDX-License-Identifier: BSD-3-Clause */
/* ocl_elementwise.c — COPY, FILL, ARANGE, TRIL/TRIU, the unary and binary
 * ops, comparisons, logical ops and WHERE (kernels/ew_copy.cl, ew_math.cl).
 *
 * Which ops exist, their names and which dtypes they compute in come from
 * the shared table plugins/common/op_math.def, the same one the kernels'
 * formulas are generated from. Which (op, dtypes) are provided is decided in
 * one place, accepts(), for the capability query and for launch alike; the
 * rules are the reference plugin's. Complex operands go to ocl_complex.c,
 * except TRIL/TRIU and WHERE, which move their bits here. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ocl_internal.h"

/* ------------------------------------------------------------ the math table */
typedef enum math_kind { MK_FLOAT, MK_NUMERIC, MK_COMPARE, MK_LOGICAL } math_kind;

typedef struct math_op {
    uint32_t op;
    const char *name;
    int arity;
    math_kind kind;
} math_op;

static const math_op math_ops[] = {
#define GF_OP_MATH_UNARY(ID, name, kind, f, i) {GFP_OP_##ID, #name, 1, MK_##kind},
#define GF_OP_MATH_BINARY(ID, name, kind, f, i) {GFP_OP_##ID, #name, 2, MK_##kind},
#include "op_math.def"
};

static const math_op *math_of(uint32_t op) {
    for (size_t i = 0; i < sizeof math_ops / sizeof math_ops[0]; i++)
        if (math_ops[i].op == op) return &math_ops[i];
    return NULL;
}

const char *ocl_math_f32_name(uint32_t op, int *arity) {
    const math_op *m = math_of(op);
    if (!m || (m->kind != MK_FLOAT && m->kind != MK_NUMERIC)) return NULL;
    *arity = m->arity;
    return m->name;
}

/* ------------------------------------------------------------ what is provided */
typedef enum ew_kind {
    EW_NONE,
    EW_COPY,
    EW_FILL,
    EW_ARANGE,
    EW_TRI,
    EW_MATH, /* everything of the table */
    EW_WHERE
} ew_kind;

static ew_kind kind_of(uint32_t op) {
    switch (op) {
    case GFP_OP_COPY: return EW_COPY;
    case GFP_OP_FILL: return EW_FILL;
    case GFP_OP_ARANGE: return EW_ARANGE;
    case GFP_OP_TRIL:
    case GFP_OP_TRIU: return EW_TRI;
    case GFP_OP_WHERE: return EW_WHERE;
    default: return math_of(op) ? EW_MATH : EW_NONE;
    }
}

static uint32_t inputs_of(uint32_t op) {
    switch (kind_of(op)) {
    case EW_FILL:
    case EW_ARANGE: return 0;
    case EW_WHERE: return 3;
    case EW_MATH: return (uint32_t)math_of(op)->arity;
    default: return 1;
    }
}

/* f16 and bf16 are stored as bits and computed in f32 (kernels/common.cl). */
static bool is_stored(int32_t d) { return (d >= GFP_F32 && d <= GFP_BOOL) || pk_is_half(d); }
static bool is_numeric(int32_t d) { return d >= GFP_F32 && d <= GFP_I64; }
static bool is_real_float(int32_t d) { return pk_is_float(d) || pk_is_half(d); }

/* TRIL/TRIU and WHERE move elements as bits: every stored dtype, complex
 * included; the other complex ops are ocl_complex.c's. */
static bool moves_bits(const ocl_device *d, int32_t dt) {
    return is_stored(dt) || dt == GFP_C64 || (dt == GFP_C128 && d->fp64);
}

static bool accepts(const ocl_device *d, uint32_t op, const int32_t *in, const int32_t *out) {
    switch (kind_of(op)) {
    case EW_TRI: return moves_bits(d, out[0]) && in[0] == out[0];
    case EW_WHERE:
        return in[0] == GFP_BOOL && moves_bits(d, out[0]) && in[1] == out[0] && in[2] == out[0];
    default: break;
    }
    if (pk_complex_operands(in, inputs_of(op), out)) return ocl_complex_ew_accepts(d, op, in, out);
    switch (kind_of(op)) {
    case EW_COPY: return is_stored(in[0]) && is_stored(out[0]);
    case EW_FILL: return is_stored(out[0]);
    case EW_ARANGE: return is_numeric(out[0]);
    case EW_MATH: break;
    default: return false;
    }
    const math_op *m = math_of(op);
    switch (m->kind) {
    case MK_FLOAT:
        return is_real_float(out[0]) && in[0] == out[0] && (m->arity == 1 || in[1] == out[0]);
    case MK_NUMERIC:
        return (is_numeric(out[0]) || pk_is_half(out[0])) && in[0] == out[0] &&
               (m->arity == 1 || in[1] == out[0]);
    case MK_COMPARE: return is_stored(in[0]) && in[1] == in[0] && out[0] == GFP_BOOL;
    case MK_LOGICAL:
        return is_stored(in[0]) && (m->arity == 1 || is_stored(in[1])) && out[0] == GFP_BOOL;
    }
    return false;
}

uint32_t ocl_elementwise_support(const ocl_device *d, const gfp_op_query *q) {
    if (q->n_inputs != inputs_of(q->op) || q->n_outputs != 1) return GFP_SUPPORT_NONE;
    return accepts(d, q->op, q->input_dtypes, q->output_dtypes) ? GFP_SUPPORT_STRIDED
                                                             : GFP_SUPPORT_NONE;
}

/* ------------------------------------------------------------ helpers */
/* The dtype's name in kernel names. */
static const char *kdt(int32_t dtype) {
    switch (dtype) {
    case GFP_F32: return "f32";
    case GFP_F64: return "f64";
    case GFP_I32: return "i32";
    case GFP_I64: return "i64";
    case GFP_F16: return "f16";
    case GFP_BF16: return "bf16";
    default: return "b8";
    }
}

/* "b1", "b2", "b4", "b8", "b16": kernels that move bits by element size. */
static const char *kbits(int32_t dtype) {
    switch (pk_dtype_size(dtype)) {
    case 1: return "b1";
    case 2: return "b2";
    case 4: return "b4";
    case 16: return "b16";
    default: return "b8";
    }
}

/* Adds tensor k of the launch: buffer, element offset and, for the strided
 * form, its strides. */
static void arg_tensor(ocl_call *c, const ocl_geom *g, const gfp_tensor *t, int k) {
    ocl_arg_mem(c, ocl_mem(t));
    ocl_arg_i64(c, ocl_elem_offset(t));
    if (!g->contiguous) ocl_geom_strides(c, g, k);
}

/* Adds every tensor and the geometry, in the kernels' order. */
static void arg_all(ocl_call *c, const ocl_geom *g, const gfp_tensor *const *t, int n) {
    for (int k = 0; k < n; k++) arg_tensor(c, g, t[k], k);
    if (g->contiguous) ocl_arg_i64(c, g->numel);
    else ocl_geom_args(c, g);
}

static void kernel_name(char *buf, size_t len, const char *stem, const ocl_geom *g) {
    snprintf(buf, len, "%s_%c", stem, ocl_geom_form(g));
}

/* ------------------------------------------------------------ kernels */
/* A copy of bits that transposes, on a device that walks strided tensors a
 * row at a time (ocl_walks_rows): x's innermost dim is strided and
 * another dim m has unit stride. Moves m to rank - 2 (an elementwise copy
 * may take its dims in any order) for copy_*_t, which copies tiles of the
 * last two dims (kernels/ew_copy.cl). Measured on PoCL, one thread: a
 * [1024, 1024] transpose made contiguous in 0.71 ms instead of 3.48. */
static bool tiled_transpose(const ocl_device *d, ocl_geom *g) {
    if (g->contiguous || g->rank < 2 || !ocl_walks_rows(d) || g->strides[1][g->rank - 1] == 1)
        return false;
    int m = -1;
    for (int k = 0; k < g->rank - 1 && m < 0; k++)
        if (g->strides[1][k] == 1) m = k;
    if (m < 0) return false;
    int64_t size = g->sizes[m], st[2] = {g->strides[0][m], g->strides[1][m]};
    for (int k = m; k < g->rank - 2; k++) {
        g->sizes[k] = g->sizes[k + 1];
        for (int t = 0; t < 2; t++) g->strides[t][k] = g->strides[t][k + 1];
    }
    g->sizes[g->rank - 2] = size;
    for (int t = 0; t < 2; t++) g->strides[t][g->rank - 2] = st[t];
    return true;
}

#define OCL_TILE 16 /* kernels/ew_copy.cl's GF_TILE */

static gfp_status run_copy_tiled(ocl_device *d, const gfp_tensor *const *t, const ocl_geom *g) {
    char name[32];
    snprintf(name, sizeof name, "copy_%s_t", kbits(t[0]->dtype));
    ocl_call c;
    ocl_call_begin(&c, d, OCL_PROG_COPY, name, "copy");
    for (int k = 0; k < 2; k++) {
        ocl_arg_mem(&c, ocl_mem(t[k]));
        ocl_arg_i64(&c, ocl_elem_offset(t[k]));
        ocl_geom_strides(&c, g, k);
    }
    ocl_arg_long8(&c, g->sizes, g->rank);
    ocl_arg_i32(&c, g->rank);
    int64_t inner = g->sizes[g->rank - 1], mid = g->sizes[g->rank - 2];
    size_t global[3] = {(size_t)((inner + OCL_TILE - 1) / OCL_TILE),
                        (size_t)((mid + OCL_TILE - 1) / OCL_TILE),
                        (size_t)(g->numel / (inner * mid))};
    size_t local[3] = {1, 1, 1};
    return ocl_call_run(&c, 3, global, local);
}

static gfp_status run_copy(ocl_device *d, const gfp_tensor *const *t) {
    const gfp_tensor *y = t[0], *x = t[1];
    ocl_geom g;
    ocl_geom_init(&g, t, 2);
    if (x->dtype == y->dtype && pk_dtype_size(y->dtype) <= 8 && tiled_transpose(d, &g))
        return run_copy_tiled(d, t, &g);
    char stem[32], name[40];
    if (x->dtype == y->dtype) snprintf(stem, sizeof stem, "copy_%s", kbits(y->dtype));
    else snprintf(stem, sizeof stem, "copy_%s_%s", kdt(x->dtype), kdt(y->dtype));
    kernel_name(name, sizeof name, stem, &g);
    ocl_call c;
    ocl_call_begin(&c, d, OCL_PROG_COPY, name, "copy");
    arg_all(&c, &g, t, 2);
    return ocl_geom_run(&c, &g);
}

gfp_status ocl_copy_tensor(ocl_device *d, const gfp_tensor *dst, const gfp_tensor *src,
                           const char *op) {
    (void)op; /* run_copy names "copy" in its messages */
    if (pk_numel(dst) == 0) return GFP_OK;
    const gfp_tensor *t[2] = {dst, src};
    return run_copy(d, t);
}

static gfp_status run_fill(ocl_device *d, const gfp_tensor *y, const gfp_fill_params *p) {
    /* The element's bits, made as the reference stores the value. */
    union {
        uint64_t u64;
        uint32_t u32;
        uint16_t u16;
        uint8_t u8;
        float f;
        double dbl;
        int32_t i32;
        int64_t i64;
    } e;
    memset(&e, 0, sizeof e);
    switch (y->dtype) {
    case GFP_F32: e.f = (float)p->value; break;
    case GFP_F64: e.dbl = p->value; break;
    case GFP_I32: e.i32 = (int32_t)(uint32_t)(uint64_t)p->ivalue; break;
    case GFP_I64: e.i64 = p->ivalue; break;
    case GFP_F16: e.u16 = pk_f64_to_f16(p->value); break; /* one rounding */
    case GFP_BF16: e.u16 = pk_f64_to_bf16(p->value); break;
    default: e.u8 = p->value != 0; break; /* NaN is true */
    }
    size_t es = pk_dtype_size(y->dtype);
    const gfp_tensor *t[1] = {y};
    ocl_geom g;
    ocl_geom_init(&g, t, 1);
    if (g.contiguous) {
        cl_int err = ocl.EnqueueFillBuffer(d->queue, ocl_mem(y), &e, es, (size_t)y->offset,
                                           (size_t)g.numel * es, 0, NULL, NULL);
        return err == CL_SUCCESS ? GFP_OK : ocl_cl_fail(err, "fill", "clEnqueueFillBuffer");
    }
    char stem[16], name[32];
    snprintf(stem, sizeof stem, "fill_%s", kbits(y->dtype));
    kernel_name(name, sizeof name, stem, &g);
    ocl_call c;
    ocl_call_begin(&c, d, OCL_PROG_COPY, name, "fill");
    arg_all(&c, &g, t, 1);
    ocl_arg_raw(&c, es, &e); /* the union's first es bytes: the element */
    return ocl_geom_run(&c, &g);
}

static bool is_integral(double v) {
    return v >= -9223372036854775808.0 && v < 9223372036854775808.0 && v == floor(v);
}

static gfp_status run_arange(ocl_device *d, const gfp_tensor *y, const gfp_arange_params *p) {
    bool exact = !pk_is_float(y->dtype) && is_integral(p->start) && is_integral(p->step);
    char name[32];
    snprintf(name, sizeof name, "arange_%s_%s", exact ? "int" : "real", kdt(y->dtype));
    ocl_call c;
    ocl_call_begin(&c, d, OCL_PROG_COPY, name, "arange");
    ocl_arg_mem(&c, ocl_mem(y));
    ocl_arg_i64(&c, ocl_elem_offset(y));
    ocl_arg_i64(&c, y->strides[0]);
    ocl_arg_i64(&c, y->sizes[0]);
    if (exact) {
        ocl_arg_i64(&c, pk_trunc_i64(p->start));
        ocl_arg_i64(&c, pk_trunc_i64(p->step));
    } else if (d->fp64) {
        ocl_arg_f64(&c, p->start);
        ocl_arg_f64(&c, p->step);
    } else {
        ocl_arg_f32(&c, (float)p->start);
        ocl_arg_f32(&c, (float)p->step);
    }
    return ocl_call_run1(&c, (uint64_t)y->sizes[0], 64);
}

static gfp_status run_tri(ocl_device *d, uint32_t op, const gfp_tensor *const *t,
                          int64_t diagonal) {
    /* Rows and columns must stay apart: the uncollapsed shape. */
    const gfp_tensor *y = t[0];
    ocl_geom g;
    memset(&g, 0, sizeof g);
    g.n = 2;
    g.rank = y->rank;
    g.numel = pk_numel(y);
    for (int dd = 0; dd < y->rank; dd++) {
        g.sizes[dd] = y->sizes[dd];
        g.strides[0][dd] = y->strides[dd];
        g.strides[1][dd] = t[1]->strides[dd];
    }
    char name[32];
    snprintf(name, sizeof name, "tri_%s_s", kbits(y->dtype));
    ocl_call c;
    const char *opname = op == GFP_OP_TRIL ? "tril" : "triu";
    ocl_call_begin(&c, d, OCL_PROG_COPY, name, opname);
    arg_all(&c, &g, t, 2);
    ocl_arg_i64(&c, diagonal);
    ocl_arg_i32(&c, op == GFP_OP_TRIL);
    return ocl_geom_run(&c, &g);
}

static gfp_status run_where(ocl_device *d, const gfp_tensor *const *t) {
    ocl_geom g;
    ocl_geom_init(&g, t, 4);
    char stem[24], name[32];
    snprintf(stem, sizeof stem, "where_%s", kbits(t[0]->dtype));
    kernel_name(name, sizeof name, stem, &g);
    ocl_call c;
    ocl_call_begin(&c, d, OCL_PROG_COPY, name, "where");
    arg_all(&c, &g, t, 4);
    return ocl_geom_run(&c, &g);
}

/* The mask whose bits make a value of dtype true: all of them, except a
 * float's sign (so -0.0 is false). */
static uint64_t truth_mask(int32_t dtype) {
    switch (dtype) {
    case GFP_F32: return 0x7fffffffull;
    case GFP_F64: return 0x7fffffffffffffffull;
    case GFP_I32: return 0xffffffffull;
    case GFP_I64: return ~0ull;
    case GFP_F16:
    case GFP_BF16: return 0x7fffull;
    default: return 0xffull;
    }
}

static gfp_status run_math(ocl_device *d, const math_op *m, const gfp_tensor *const *t,
                           const void *params) {
    int n = m->arity + 1;
    ocl_geom g;
    ocl_geom_init(&g, t, n);
    char stem[64], name[72];
    int32_t dt = t[1]->dtype;
    switch (m->kind) {
    case MK_COMPARE: snprintf(stem, sizeof stem, "compare_%s_%s", m->name, kdt(dt)); break;
    case MK_LOGICAL:
        if (m->arity == 1)
            snprintf(stem, sizeof stem, "logical_%s_%zu", m->name, pk_dtype_size(dt));
        else
            snprintf(stem, sizeof stem, "logical_%s_%zu%zu", m->name, pk_dtype_size(dt),
                     pk_dtype_size(t[2]->dtype));
        break;
    default:
        snprintf(stem, sizeof stem, "%s_%s_%s", m->arity == 1 ? "unary" : "binary", m->name,
                 kdt(dt));
        break;
    }
    kernel_name(name, sizeof name, stem, &g);
    pk_unary_args ua = {0};
    if (m->arity == 1 && m->kind != MK_LOGICAL) pk_unary_args_of(m->op, params, dt, &ua);
    ocl_call c;
    ocl_call_begin(&c, d, OCL_PROG_MATH, name, m->name);
    arg_all(&c, &g, t, n);
    if (m->kind == MK_LOGICAL) {
        for (int k = 1; k < n; k++) ocl_arg_u64(&c, truth_mask(t[k]->dtype));
    } else if (m->arity == 1) {
        ocl_arg_scalar(&c, dt, ua.a, ua.ia);
        ocl_arg_scalar(&c, dt, ua.b, ua.ib);
        ocl_arg_i32(&c, (ua.has_a ? 1 : 0) | (ua.has_b ? 2 : 0));
    }
    return ocl_geom_run(&c, &g);
}

/* ------------------------------------------------------------ launch */
gfp_status ocl_elementwise_launch(ocl_device *d, uint32_t op, const gfp_tensor *const *in,
                                  uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                                  const void *params) {
    ew_kind kind = kind_of(op);
    const char *name = pk_op_name(op);
    gfp_status st;
    const gfp_tensor *t[4];
    int32_t in_dt[3], out_dt[1] = {out[0]->dtype};
    pk_ew_operands(in, n_in, out[0], t, in_dt);
    if (kind != EW_TRI && kind != EW_WHERE && pk_complex_operands(in_dt, n_in, out_dt))
        return ocl_complex_ew_launch(d, op, in, n_in, out, params);
    if (!accepts(d, op, in_dt, out_dt)) {
        char ins[64];
        return pk_fail(GFP_ERR_UNSUPPORTED,
                        "%s: not provided for input dtype(s) (%s) and output dtype %s (the "
                        "reference plugin's dtype rules apply)",
                        name, pk_dtypes_text(in, n_in, ins, sizeof ins),
                        pk_dtype_name(out[0]->dtype));
    }
    if ((st = pk_check_elementwise(op, in, n_in, out[0])) != GFP_OK) return st;
    if (pk_numel(out[0]) == 0) return GFP_OK;
    switch (kind) {
    case EW_COPY: return run_copy(d, t);
    case EW_FILL:
        st = pk_check_params(params, GFP_FILL_PARAMS_SIZE_V1_0, name);
        return st == GFP_OK ? run_fill(d, out[0], params) : st;
    case EW_ARANGE:
        st = pk_check_params(params, GFP_ARANGE_PARAMS_SIZE_V1_0, name);
        return st == GFP_OK ? run_arange(d, out[0], params) : st;
    case EW_TRI:
        st = pk_check_params(params, GFP_TRI_PARAMS_SIZE_V1_0, name);
        return st == GFP_OK ? run_tri(d, op, t, ((const gfp_tri_params *)params)->diagonal) : st;
    case EW_WHERE: return run_where(d, t);
    case EW_MATH: return run_math(d, math_of(op), t, params);
    default: return pk_fail(GFP_ERR_INTERNAL, "%s: no kernel", name);
    }
}
