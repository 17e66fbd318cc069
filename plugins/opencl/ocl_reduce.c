/* SPDX-License-Identifier: BSD-3-Clause */
/* ocl_reduce.c — reductions (kernels/reduce.cl): SUM MEAN PROD AMAX AMIN VAR
 * LOGSUMEXP over a set of dims, MAX_DIM / MIN_DIM along one.
 *
 * The output has the input's rank with size 1 in reduced dims. The host
 * splits the dims into kept ones (which index the outputs) and reduced ones
 * (which index the line each output reduces), dropping size-1 dims and
 * merging reduced dims that are contiguous in x, then picks the kernel form:
 * one work-item per output when there are many outputs, one work-group per
 * output when lines are long and outputs few. Dtype rules are the reference
 * plugin's: the output has the input's dtype; MEAN, VAR and LOGSUMEXP take
 * floats; AMAX / AMIN also bool. */
#include <stdio.h>
#include <string.h>

#include "ocl_internal.h"

#define OCL_RG 64 /* GF_RG of reduce.cl */

/* f16 and bf16 reduce in f32 and round once (kernels/reduce.cl). */
#define REDUCE_DTYPES (PK_DT_FLOAT | PK_DT_HALF | PK_DT_INT | PK_DT(GFP_BOOL))
#define REDUCE_FLOATS (PK_DT_FLOAT | PK_DT_HALF)

uint32_t ocl_reduce_support(const ocl_device *d, const gfp_op_query *q) {
    if (ocl_is_complex(q->input_dtypes[0]) || ocl_is_complex(q->output_dtypes[0]))
        return ocl_complex_reduce_support(d, q);
    int32_t indices = pk_reduce_by_dim(q->op) ? q->output_dtypes[1] : GFP_I64;
    return pk_reduce_dtypes_ok(q->op, q->input_dtypes[0], q->output_dtypes[0], indices,
                               REDUCE_DTYPES, REDUCE_FLOATS)
               ? GFP_SUPPORT_STRIDED
               : GFP_SUPPORT_NONE;
}

static const char *kdt(int32_t dt) {
    switch (dt) {
    case GFP_F32: return "f32";
    case GFP_F64: return "f64";
    case GFP_I32: return "i32";
    case GFP_I64: return "i64";
    case GFP_F16: return "f16";
    case GFP_BF16: return "bf16";
    default: return "b8";
    }
}

/* A set of dims as the kernels read them. */
typedef struct dimset {
    int rank;
    int64_t sizes[GFP_MAX_RANK];
    int64_t xs[GFP_MAX_RANK], ys[GFP_MAX_RANK], is[GFP_MAX_RANK]; /* x, y, indices strides */
    int64_t count;
} dimset;

static void add_dim(dimset *s, int64_t size, int64_t xs, int64_t ys, int64_t is) {
    s->sizes[s->rank] = size;
    s->xs[s->rank] = xs;
    s->ys[s->rank] = ys;
    s->is[s->rank] = is;
    s->rank++;
}

/* Launches the reduction kernel of op: x's lines (red) into y (and ind) at
 * the kept positions. The x, y and ind descriptors give buffers and offsets;
 * the geometry comes from the dimsets. */
static gfp_status launch(ocl_device *d, uint32_t op, int32_t dtype, cl_mem xm, int64_t xo,
                         cl_mem ym, int64_t yo, const gfp_tensor *ind, const dimset *kept,
                         const dimset *red, double correction) {
    const char *name = pk_op_name(op);
    bool by_dim = pk_reduce_by_dim(op);
    /* Long lines and few outputs: a group per output; else an item each. */
    bool group = d->max_wg >= OCL_RG && red->count >= 128 && kept->count < 4096;
    char kname[48];
    snprintf(kname, sizeof kname, "reduce_%s_%s_%c", name, kdt(dtype), group ? 'g' : 'i');
    ocl_call c;
    ocl_call_begin(&c, d, OCL_PROG_REDUCE, kname, name);
    ocl_arg_mem(&c, xm);
    ocl_arg_i64(&c, xo);
    ocl_arg_mem(&c, ym);
    ocl_arg_i64(&c, yo);
    ocl_arg_long8(&c, kept->sizes, kept->rank);
    ocl_arg_long8(&c, kept->xs, kept->rank);
    ocl_arg_long8(&c, kept->ys, kept->rank);
    ocl_arg_i32(&c, kept->rank);
    ocl_arg_i64(&c, kept->count);
    ocl_arg_long8(&c, red->sizes, red->rank);
    ocl_arg_long8(&c, red->xs, red->rank);
    ocl_arg_i32(&c, red->rank);
    ocl_arg_i64(&c, red->count);
    if (op == GFP_OP_VAR) ocl_arg_scalar(&c, dtype, correction, 0);
    if (by_dim) {
        ocl_arg_mem(&c, ocl_mem(ind));
        ocl_arg_i64(&c, ocl_elem_offset(ind));
        ocl_arg_long8(&c, kept->is, kept->rank);
    }
    if (group) {
        size_t global = (size_t)kept->count * OCL_RG, local = OCL_RG;
        return ocl_call_run(&c, 1, &global, &local);
    }
    return ocl_call_run1(&c, (uint64_t)kept->count, 64);
}

/* Contiguous lines in chunks (kernels/reduce.cl, "long lines"): for the ops
 * whose partial results combine with an ordinary reduction. Enough chunks
 * that the first pass has OCL_SPLIT_ITEMS work-items, none shorter than
 * OCL_SPLIT_MIN elements (lines shorter than that: one pass). */
#define OCL_SPLIT_MIN 256
#define OCL_SPLIT_ITEMS 128
#define OCL_SPLIT_CHUNKS 64

static bool split_op(uint32_t op, int32_t dtype) {
    bool op_ok = op == GFP_OP_SUM || op == GFP_OP_MEAN || op == GFP_OP_PROD ||
                 op == GFP_OP_AMAX || op == GFP_OP_AMIN;
    return op_ok && pk_is_float(dtype);
}

static bool splittable(uint32_t op, int32_t dtype, const dimset *red) {
    return split_op(op, dtype) && red->rank == 1 && red->xs[0] == 1 &&
           red->count >= OCL_SPLIT_MIN;
}

/* Runs: the innermost reduced dim is contiguous and long enough to fill
 * vectors, and there are other reduced dims (a bias gradient's sum over N,
 * H and W of [N, C, H, W]: 784-element runs of 64 images per channel). The
 * first pass reduces each run (the outer reduced dims join the kept ones),
 * the second the runs' partials of each output. */
#define OCL_RUN_MIN 64

static bool runs(uint32_t op, int32_t dtype, const dimset *red) {
    return split_op(op, dtype) && red->rank >= 2 && red->count > 0 &&
           red->xs[red->rank - 1] == 1 && red->sizes[red->rank - 1] >= OCL_RUN_MIN;
}

static gfp_status run_split(ocl_device *d, uint32_t op, const gfp_tensor *x, const gfp_tensor *y,
                            const dimset *kept_in, const dimset *red) {
    const char *name = pk_op_name(op);
    /* The lines of the first pass: kept (the outputs), then the outer
     * reduced dims when red is a set of runs; each line is contiguous. */
    dimset kept = *kept_in;
    int64_t outer = 1;
    for (int i = 0; i < red->rank - 1; i++) {
        add_dim(&kept, red->sizes[i], red->xs[i], 0, 0);
        outer *= red->sizes[i];
    }
    kept.count *= outer;
    int64_t len = red->sizes[red->rank - 1], total = red->count;
    int64_t chunks = (OCL_SPLIT_ITEMS + kept.count - 1) / kept.count;
    if (chunks > OCL_SPLIT_CHUNKS) chunks = OCL_SPLIT_CHUNKS;
    if (chunks > len / OCL_SPLIT_MIN) chunks = len / OCL_SPLIT_MIN;
    if (chunks < 1) chunks = 1;
    int64_t q = (len + chunks - 1) / chunks;
    chunks = (len + q - 1) / q;
    size_t es = pk_dtype_size(x->dtype);
    gfp_status st = ocl_scratch(d, (uint64_t)(kept.count * chunks) * es, name);
    if (st != GFP_OK) return st;
    uint32_t part_op = op == GFP_OP_MEAN ? GFP_OP_SUM : op;
    char kname[48];
    snprintf(kname, sizeof kname, "reduce_part_%s_%s", pk_op_name(part_op), kdt(x->dtype));
    ocl_call c;
    ocl_call_begin(&c, d, OCL_PROG_REDUCE, kname, name);
    ocl_arg_mem(&c, ocl_mem(x));
    ocl_arg_i64(&c, ocl_elem_offset(x));
    ocl_arg_long8(&c, kept.sizes, kept.rank);
    ocl_arg_long8(&c, kept.xs, kept.rank);
    ocl_arg_i32(&c, kept.rank);
    ocl_arg_i64(&c, kept.count);
    ocl_arg_i64(&c, len);
    ocl_arg_i64(&c, q);
    ocl_arg_i64(&c, chunks);
    ocl_arg_mem(&c, d->scratch.mem);
    ocl_arg_i64(&c, 0);
    ocl_arg_scalar(&c, x->dtype, op == GFP_OP_MEAN ? 1.0 / (double)total : 1.0, 0);
    st = ocl_call_run1(&c, (uint64_t)(kept.count * chunks), 1);
    if (st != GFP_OK) return st;
    /* The partials, [kept..., outer..., chunks] row-major, reduced along
     * their last outer * chunks. */
    dimset k2 = *kept_in, r2 = {0};
    int64_t stride = outer * chunks;
    for (int i = k2.rank - 1; i >= 0; i--) {
        k2.xs[i] = stride;
        stride *= k2.sizes[i];
    }
    r2.rank = 1;
    r2.sizes[0] = outer * chunks;
    r2.xs[0] = 1;
    r2.count = outer * chunks;
    return launch(d, part_op, x->dtype, d->scratch.mem, 0, ocl_mem(y), ocl_elem_offset(y), NULL,
                  &k2, &r2, 0.0);
}

/* Column sums: one kept dim, contiguous in x, over lines of any layout. */
static bool columns(uint32_t op, int32_t dtype, const dimset *kept, const dimset *red) {
    return (op == GFP_OP_SUM || op == GFP_OP_MEAN) && pk_is_float(dtype) && kept->rank == 1 &&
           kept->xs[0] == 1 && kept->count >= 16 && red->count >= 2;
}

static gfp_status run_columns(ocl_device *d, uint32_t op, const gfp_tensor *x,
                              const gfp_tensor *y, const dimset *kept, const dimset *red) {
    const char *name = pk_op_name(op);
    int64_t vw = x->dtype == GFP_F32 ? 16 : 8;
    char kname[40];
    snprintf(kname, sizeof kname, "reduce_cols_sum_%s", kdt(x->dtype));
    ocl_call c;
    ocl_call_begin(&c, d, OCL_PROG_REDUCE, kname, name);
    ocl_arg_mem(&c, ocl_mem(x));
    ocl_arg_i64(&c, ocl_elem_offset(x));
    ocl_arg_i64(&c, kept->count);
    ocl_arg_mem(&c, ocl_mem(y));
    ocl_arg_i64(&c, ocl_elem_offset(y));
    ocl_arg_i64(&c, kept->ys[0]);
    ocl_arg_long8(&c, red->sizes, red->rank);
    ocl_arg_long8(&c, red->xs, red->rank);
    ocl_arg_i32(&c, red->rank);
    ocl_arg_i64(&c, red->count);
    ocl_arg_scalar(&c, x->dtype, op == GFP_OP_MEAN ? 1.0 / (double)red->count : 1.0, 0);
    return ocl_call_run1(&c, (uint64_t)((kept->count + vw - 1) / vw), 1);
}

static gfp_status run_reduce(ocl_device *d, uint32_t op, const gfp_tensor *x, const gfp_tensor *y,
                             const gfp_tensor *ind, const dimset *kept, const dimset *red,
                             double correction) {
    if (splittable(op, x->dtype, red) || runs(op, x->dtype, red))
        return run_split(d, op, x, y, kept, red);
    if (columns(op, x->dtype, kept, red)) return run_columns(d, op, x, y, kept, red);
    return launch(d, op, x->dtype, ocl_mem(x), ocl_elem_offset(x), ocl_mem(y), ocl_elem_offset(y),
                  ind, kept, red, correction);
}

gfp_status ocl_reduce_launch(ocl_device *d, uint32_t op, const gfp_tensor *const *in,
                             uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                             const void *params) {
    const gfp_reduce_params *p = params;
    const gfp_tensor *x = in[0], *y = out[0], *ind = pk_reduce_by_dim(op) ? out[1] : NULL;
    if (ocl_is_complex(x->dtype) || ocl_is_complex(y->dtype))
        return ocl_complex_reduce_launch(d, op, x, y, params);
    gfp_status st = pk_check_reduce(op, params, x, y, ind, REDUCE_DTYPES, REDUCE_FLOATS);
    if (st != GFP_OK) return st;
    uint32_t dims = p->dims;
    dimset kept = {0}, red = {0};
    kept.count = red.count = 1;
    for (int k = 0; k < x->rank; k++) {
        bool reduced = (dims >> k) & 1u;
        (reduced ? &red : &kept)->count *= x->sizes[k];
        if (x->sizes[k] == 1) continue;
        if (!reduced) {
            add_dim(&kept, x->sizes[k], x->strides[k], y->strides[k], ind ? ind->strides[k] : 0);
        } else if (red.rank > 0 && (dims >> (k - 1)) & 1u && x->sizes[k - 1] != 1 &&
                   red.xs[red.rank - 1] == x->strides[k] * x->sizes[k]) {
            /* Contiguous with the previous reduced dim: one longer dim. */
            red.sizes[red.rank - 1] *= x->sizes[k];
            red.xs[red.rank - 1] = x->strides[k];
        } else {
            add_dim(&red, x->sizes[k], x->strides[k], 0, 0);
        }
    }
    if (kept.count == 0) return GFP_OK;

    return run_reduce(d, op, x, y, ind, &kept, &red, p->correction);
}

