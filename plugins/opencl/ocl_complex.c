/* SPDX-License-Identifier: BSD-3-Clause */
/* ocl_complex.c — the complex dtypes c64 and c128 (kernels/complex.cl):
 * COPY into complex, FILL, the unary ops the reference computes on complex,
 * ABS to the part dtype, ADD SUB MUL DIV POW, EQ NE to bool, SUM MEAN PROD
 * over dims and MATMUL. TRIL/TRIU and WHERE move complex elements as bits
 * (ocl_elementwise.c); FFT is ocl_fft.c.
 *
 * c128 needs a device with doubles (cl_khr_fp64); c64 is computed in
 * double there too, in float elsewhere. What is provided is decided here
 * for the capability query and the launch alike: the rules every plugin of
 * the tree shares (plugins/common/pk_complex.c, with the op codes of the
 * kernels); the rest of the complex ops answer NONE. */
#include <stdio.h>
#include <string.h>

#include "ocl_internal.h"

bool ocl_is_complex(int32_t dt) { return pk_is_complex(dt); }

/* The complex dtypes the device computes: c128 needs doubles. */
static uint32_t cx_set(const ocl_device *d) {
    return PK_DT(GFP_C64) | (d->fp64 ? PK_DT(GFP_C128) : 0u);
}

static const char *cdt(int32_t dt) {
    switch (dt) {
    case GFP_F32: return "f32";
    case GFP_F64: return "f64";
    case GFP_I32: return "i32";
    case GFP_I64: return "i64";
    case GFP_C64: return "c64";
    case GFP_C128: return "c128";
    default: return "b8";
    }
}

static int32_t part_of(int32_t dt) { return pk_complex_part(dt); }

/* The op codes of complex.cl: the tables of pk_complex.c. */
#define UNARY_CODE(op) pk_complex_unary_code(op)
#define BINARY_CODE(op) pk_complex_binary_code(op)

/* The real dtypes COPY converts from. */
static uint32_t real_set(const ocl_device *d) {
    return PK_DT(GFP_F32) | PK_DT_INT | PK_DT(GFP_BOOL) | (d->fp64 ? PK_DT(GFP_F64) : 0u);
}

/* ------------------------------------------------------------ elementwise */
bool ocl_complex_ew_accepts(const ocl_device *d, uint32_t op, const int32_t *in,
                            const int32_t *out) {
    return pk_complex_ew_accepts(op, in, out, cx_set(d), real_set(d));
}

static void arg_tensors(ocl_call *c, const ocl_geom *g, const gfp_tensor *const *t, int n) {
    for (int k = 0; k < n; k++) {
        ocl_arg_mem(c, ocl_mem(t[k]));
        ocl_arg_i64(c, ocl_elem_offset(t[k]));
        if (!g->contiguous) ocl_geom_strides(c, g, k);
    }
    if (g->contiguous) ocl_arg_i64(c, g->numel);
    else ocl_geom_args(c, g);
}

/* A real parameter in the kernels' compute type. */
static void arg_real(ocl_call *c, const ocl_device *d, double v) {
    if (d->fp64) ocl_arg_f64(c, v);
    else ocl_arg_f32(c, (float)v);
}

void ocl_complex_begin(ocl_call *c, char *name, size_t len, ocl_device *d, ocl_prog_id prog,
                       const char *stem, const char *op, ocl_geom *g, const gfp_tensor *const *t,
                       int n) {
    ocl_geom_init(g, t, n);
    snprintf(name, len, "%s_%c", stem, ocl_geom_form(g));
    ocl_call_begin(c, d, prog, name, op);
    arg_tensors(c, g, t, n);
}

gfp_status ocl_complex_copy(ocl_device *d, const gfp_tensor *y, const gfp_tensor *x,
                            const char *op) {
    if (pk_numel(y) == 0) return GFP_OK;
    const gfp_tensor *t[2] = {y, x};
    char stem[40];
    snprintf(stem, sizeof stem, "cx_copy_%s_%s", cdt(x->dtype), cdt(y->dtype));
    ocl_call c;
    ocl_geom g;
    char kname[64]; /* outlives the call: c refers to it */
    ocl_complex_begin(&c, kname, sizeof kname, d, OCL_PROG_COMPLEX, stem, op, &g, t, 2);
    return ocl_geom_run(&c, &g);
}

static gfp_status run_fill(ocl_device *d, const gfp_tensor *y, double value) {
    union {
        float f[2];
        double dbl[2];
    } e;
    memset(&e, 0, sizeof e);
    if (y->dtype == GFP_C64) e.f[0] = (float)value;
    else e.dbl[0] = value;
    size_t es = pk_dtype_size(y->dtype);
    const gfp_tensor *t[1] = {y};
    ocl_geom g;
    ocl_geom_init(&g, t, 1);
    if (g.contiguous) {
        cl_int err = ocl.EnqueueFillBuffer(d->queue, ocl_mem(y), &e, es, (size_t)y->offset,
                                           (size_t)g.numel * es, 0, NULL, NULL);
        return err == CL_SUCCESS ? GFP_OK : ocl_cl_fail(err, "fill", "clEnqueueFillBuffer");
    }
    char stem[24], kname[64];
    snprintf(stem, sizeof stem, "cx_fill_%s", cdt(y->dtype));
    ocl_call c;
    ocl_complex_begin(&c, kname, sizeof kname, d, OCL_PROG_COMPLEX, stem, "fill", &g, t, 1);
    ocl_arg_raw(&c, es, &e);
    return ocl_geom_run(&c, &g);
}

gfp_status ocl_complex_ew_launch(ocl_device *d, uint32_t op, const gfp_tensor *const *in,
                                 uint32_t n_in, const gfp_tensor *const *out,
                                 const void *params) {
    const char *name = pk_op_name(op);
    const gfp_tensor *t[4];
    int32_t in_dt[3], out_dt[1] = {out[0]->dtype};
    pk_ew_operands(in, n_in, out[0], t, in_dt);
    if (!ocl_complex_ew_accepts(d, op, in_dt, out_dt)) {
        char ins[64];
        return pk_fail(GFP_ERR_UNSUPPORTED,
                       "%s: not provided for input dtype(s) (%s) and output dtype %s (the "
                       "reference plugin's complex rules apply%s)",
                       name, pk_dtypes_text(in, n_in, ins, sizeof ins),
                       pk_dtype_name(out[0]->dtype),
                       d->fp64 ? "" : "; c128 needs a device with cl_khr_fp64");
    }
    gfp_status st = pk_check_elementwise(op, in, n_in, out[0]);
    if (st != GFP_OK || pk_numel(out[0]) == 0) return st;
    pk_ew_kind kind = pk_ew_kind_of(op);
    if (kind == PK_EW_COPY) return ocl_complex_copy(d, t[0], t[1], name);
    if (kind == PK_EW_FILL) return run_fill(d, out[0], ((const gfp_fill_params *)params)->value);
    char stem[40], kname[64];
    const char *dn = cdt(t[1]->dtype);
    ocl_call c;
    ocl_geom g;
    if (op == GFP_OP_ABS) {
        snprintf(stem, sizeof stem, "cx_abs_%s", dn);
        ocl_complex_begin(&c, kname, sizeof kname, d, OCL_PROG_COMPLEX, stem, name, &g, t, 2);
    } else if (kind == PK_EW_UNARY) {
        double a = op == GFP_OP_POW_SCALAR ? ((const gfp_scalar_params *)params)->a : 0;
        snprintf(stem, sizeof stem, "cx_unary_%s", dn);
        ocl_complex_begin(&c, kname, sizeof kname, d, OCL_PROG_COMPLEX, stem, name, &g, t, 2);
        ocl_arg_i32(&c, UNARY_CODE(op));
        arg_real(&c, d, a);
    } else if (kind == PK_EW_BINARY) {
        snprintf(stem, sizeof stem, "cx_binary_%s", dn);
        ocl_complex_begin(&c, kname, sizeof kname, d, OCL_PROG_COMPLEX, stem, name, &g, t, 3);
        ocl_arg_i32(&c, BINARY_CODE(op));
    } else {
        snprintf(stem, sizeof stem, "cx_compare_%s", dn);
        ocl_complex_begin(&c, kname, sizeof kname, d, OCL_PROG_COMPLEX, stem, name, &g, t, 3);
        ocl_arg_i32(&c, op == GFP_OP_NE);
    }
    return ocl_geom_run(&c, &g);
}

/* ------------------------------------------------------------ reductions */
static bool reduce_ok(const ocl_device *d, uint32_t op, int32_t in, int32_t out) {
    return pk_complex_reduce_ok(op, in, out, cx_set(d));
}

uint32_t ocl_complex_reduce_support(const ocl_device *d, const gfp_op_query *q) {
    return reduce_ok(d, q->op, q->input_dtypes[0], q->output_dtypes[0]) ? GFP_SUPPORT_STRIDED
                                                                        : GFP_SUPPORT_NONE;
}

gfp_status ocl_complex_reduce_launch(ocl_device *d, uint32_t op, const gfp_tensor *x,
                                     const gfp_tensor *y, const void *params) {
    const char *name = pk_op_name(op);
    if (!reduce_ok(d, op, x->dtype, y->dtype))
        return pk_fail(GFP_ERR_UNSUPPORTED,
                       "%s: the opencl plugin reduces complex dtypes by sum, mean and prod "
                       "only, into the input's dtype (got %s to %s)",
                       name, pk_dtype_name(x->dtype), pk_dtype_name(y->dtype));
    gfp_status st = pk_check_reduce(op, params, x, y, NULL, PK_DT_COMPLEX, PK_DT_COMPLEX);
    if (st != GFP_OK) return st;
    uint32_t dims = ((const gfp_reduce_params *)params)->dims;
    int64_t ksz[GFP_MAX_RANK], kx[GFP_MAX_RANK], ky[GFP_MAX_RANK], rsz[GFP_MAX_RANK],
        rx[GFP_MAX_RANK], nout = 1, nred = 1;
    int kr = 0, rr = 0;
    for (int dd = 0; dd < x->rank; dd++) {
        int64_t s = x->sizes[dd];
        if ((dims >> dd) & 1u) {
            nred *= s;
            if (s != 1) rsz[rr] = s, rx[rr++] = x->strides[dd];
        } else {
            nout *= s;
            if (s != 1) ksz[kr] = s, kx[kr] = x->strides[dd], ky[kr++] = y->strides[dd];
        }
    }
    if (nout == 0) return GFP_OK;
    char kname[32];
    snprintf(kname, sizeof kname, "cx_reduce_%s", cdt(x->dtype));
    ocl_call c;
    ocl_call_begin(&c, d, OCL_PROG_COMPLEX, kname, name);
    ocl_arg_mem(&c, ocl_mem(y));
    ocl_arg_i64(&c, ocl_elem_offset(y));
    ocl_arg_mem(&c, ocl_mem(x));
    ocl_arg_i64(&c, ocl_elem_offset(x));
    ocl_arg_i64(&c, nout);
    ocl_arg_long8(&c, ksz, kr);
    ocl_arg_long8(&c, kx, kr);
    ocl_arg_long8(&c, ky, kr);
    ocl_arg_i32(&c, kr);
    ocl_arg_i64(&c, nred);
    ocl_arg_long8(&c, rsz, rr);
    ocl_arg_long8(&c, rx, rr);
    ocl_arg_i32(&c, rr);
    ocl_arg_i32(&c, op == GFP_OP_SUM ? 0 : op == GFP_OP_MEAN ? 1 : 2);
    return ocl_call_run1(&c, (uint64_t)nout, 64);
}

/* ------------------------------------------------------------ matmul */
/* One real GEMM through the plugin's own (ocl_matmul.c, so graft's kernel or
 * CLBlast, as for the real dtypes): a read as the real [m, 2k] matrix of
 * interleaved parts, times b expanded to a real [2k, 2n] one
 * (complex.cl), is y read as the real [m, 2n] one; the GEMM does 8mkn real
 * flops, as the complex products do. a and y need a unit column stride for
 * those readings: other views go through contiguous copies. c64 therefore
 * accumulates in float (the f32 GEMM), c128 in double. */
uint32_t ocl_complex_matmul_support(const ocl_device *d, const gfp_op_query *q) {
    return pk_complex_matmul_ok(q->input_dtypes[0], q->input_dtypes[1], q->output_dtypes[0],
                                cx_set(d))
               ? GFP_SUPPORT_STRIDED
               : GFP_SUPPORT_NONE;
}

static gfp_status make(ocl_device *d, uint64_t bytes, ocl_buffer *b) {
    memset(b, 0, sizeof *b);
    cl_int err = CL_SUCCESS;
    cl_mem m = ocl.CreateBuffer(d->ctx, CL_MEM_READ_WRITE, (size_t)bytes, NULL, &err);
    if (!m) return ocl_cl_fail(err, "matmul", "clCreateBuffer (complex operand)");
    *b = (ocl_buffer){OCL_BUFFER_MAGIC, m, bytes, NULL, NULL};
    return GFP_OK;
}

static void drop(ocl_buffer *b) {
    if (b->mem) ocl.ReleaseMemObject(b->mem);
    b->mem = NULL;
}

gfp_status ocl_complex_matmul_launch(ocl_device *d, const gfp_tensor *a, const gfp_tensor *b,
                                     const gfp_tensor *y) {
    gfp_status st = pk_check_matmul(a, b, y, cx_set(d));
    if (st != GFP_OK) return st;
    int r = a->rank, br = r - 2;
    int64_t m = a->sizes[r - 2], k = a->sizes[r - 1], n = b->sizes[r - 1], batches = 1;
    for (int dd = 0; dd < br; dd++) batches *= a->sizes[dd];
    if (m == 0 || n == 0 || batches == 0) return GFP_OK;
    if (k == 0) return run_fill(d, y, 0);
    size_t es = pk_dtype_size(a->dtype);
    ocl_buffer ab, eb, yb;
    memset(&ab, 0, sizeof ab);
    memset(&yb, 0, sizeof yb);
    gfp_tensor ac = *a, yc = *y, e;
    if (a->strides[r - 1] != 1 && m * k > 0) {
        if ((st = make(d, (uint64_t)pk_numel(a) * es, &ab)) != GFP_OK) return st;
        ac = pk_dense_in(a, a->dtype, &ab);
        st = ocl_complex_copy(d, &ac, a, "matmul");
    }
    if (st == GFP_OK && y->strides[r - 1] != 1) {
        if ((st = make(d, (uint64_t)pk_numel(y) * es, &yb)) == GFP_OK)
            yc = pk_dense_in(y, y->dtype, &yb);
    }
    if (st == GFP_OK) st = make(d, (uint64_t)(batches * 4 * k * n) * (es / 2), &eb);
    if (st == GFP_OK) {
        char kname[32];
        snprintf(kname, sizeof kname, "cx_expand_%s", cdt(a->dtype));
        ocl_call c;
        ocl_call_begin(&c, d, OCL_PROG_COMPLEX, kname, "matmul");
        ocl_arg_mem(&c, eb.mem);
        ocl_arg_mem(&c, ocl_mem(b));
        ocl_arg_i64(&c, ocl_elem_offset(b));
        ocl_arg_i64(&c, k);
        ocl_arg_i64(&c, n);
        ocl_arg_i64(&c, b->strides[r - 2]);
        ocl_arg_i64(&c, b->strides[r - 1]);
        ocl_arg_long8(&c, b->sizes, br);
        ocl_arg_long8(&c, b->strides, br);
        ocl_arg_i32(&c, br);
        size_t global[3] = {(size_t)n, (size_t)k, (size_t)batches}, local[3] = {16, 1, 1};
        st = ocl_call_run(&c, 3, global, local);
    }
    if (st == GFP_OK) {
        e = *b;
        e.sizes[r - 2] = 2 * k;
        e.sizes[r - 1] = 2 * n;
        e.dtype = part_of(a->dtype);
        e = pk_dense_in(&e, e.dtype, &eb);
        gfp_tensor ar = pk_complex_real_view(&ac), yr = pk_complex_real_view(&yc);
        const gfp_tensor *ins[2] = {&ar, &e}, *outs[1] = {&yr};
        st = ocl_matmul_launch(d, GFP_OP_MATMUL, ins, 2, outs, 1, NULL);
    }
    if (st == GFP_OK && yb.mem) st = ocl_complex_copy(d, y, &yc, "matmul");
    drop(&ab);
    drop(&eb);
    drop(&yb);
    return st;
}
