/* SPDX-License-Identifier: BSD-3-Clause */
/* ocl_launch.c — building kernel launches, checking tensor descriptors, and
 * the elementwise geometry (dims collapsed so most launches are 1-D).
 *
 * A strided launch is 2-D: dim 0 walks the innermost dim (so neighbouring
 * work-items touch neighbouring elements), dim 1 the other dims flattened;
 * each work-item unravels its outer index once. A contiguous launch is 1-D
 * with one work-item per element: on a CPU device (PoCL) that is much faster
 * than a grid-stride loop, which defeats its work-group vectorizer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl_internal.h"

cl_mem ocl_mem(const gfp_tensor *t) { return ((const ocl_buffer *)t->buffer)->mem; }

int64_t ocl_elem_offset(const gfp_tensor *t) {
    return (int64_t)(t->offset / pk_dtype_size(t->dtype));
}

/* ------------------------------------------------------------ calls */
void ocl_call_begin(ocl_call *c, ocl_device *d, ocl_prog_id prog, const char *kname,
                    const char *op) {
    c->dev = d;
    c->op = op;
    c->kname = kname;
    c->k = NULL;
    c->nargs = 0;
    c->entry = 0;
    c->st = ocl_get_kernel(d, prog, kname, op, &c->k);
    if (c->st == GFP_OK && (d->recording || d->refreshing)) c->st = ocl_graph_kernel(c, prog);
}

void ocl_arg_raw(ocl_call *c, size_t size, const void *value) {
    if (c->st != GFP_OK) return;
    cl_int err = ocl.SetKernelArg(c->k, c->nargs, size, value);
    if (err != CL_SUCCESS) {
        char what[160];
        snprintf(what, sizeof what, "clSetKernelArg(%s, argument %u)", c->kname,
                 (unsigned)c->nargs);
        c->st = ocl_cl_fail(err, c->op, what);
    }
    c->nargs++;
}

void ocl_arg_mem(ocl_call *c, cl_mem m) { ocl_arg_raw(c, sizeof m, &m); }
void ocl_arg_i32(ocl_call *c, int32_t v) {
    cl_int x = v;
    ocl_arg_raw(c, sizeof x, &x);
}
void ocl_arg_i64(ocl_call *c, int64_t v) {
    cl_long x = v;
    ocl_arg_raw(c, sizeof x, &x);
}
void ocl_arg_u64(ocl_call *c, uint64_t v) {
    cl_ulong x = v;
    ocl_arg_raw(c, sizeof x, &x);
}
void ocl_arg_f32(ocl_call *c, float v) {
    cl_float x = v;
    ocl_arg_raw(c, sizeof x, &x);
}
void ocl_arg_f64(ocl_call *c, double v) {
    cl_double x = v;
    ocl_arg_raw(c, sizeof x, &x);
}
void ocl_arg_long8(ocl_call *c, const int64_t *v, int n) {
    cl_long8 x;
    memset(&x, 0, sizeof x);
    for (int i = 0; i < n && i < 8; i++) x.s[i] = v[i];
    ocl_arg_raw(c, sizeof x, &x);
}
void ocl_arg_local(ocl_call *c, size_t bytes) { ocl_arg_raw(c, bytes, NULL); }

void ocl_arg_scalar(ocl_call *c, int32_t dtype, double v, int64_t iv) {
    switch (dtype) {
    case GFP_F32:
    case GFP_F16: /* f16 and bf16 compute in f32 */
    case GFP_BF16: ocl_arg_f32(c, (float)v); break;
    case GFP_F64: ocl_arg_f64(c, v); break;
    default: ocl_arg_i64(c, iv); break;
    }
}

gfp_status ocl_call_run(ocl_call *c, cl_uint dims, const size_t *global, const size_t *local) {
    if (c->st != GFP_OK) return c->st;
    size_t g[3], l[3];
    for (cl_uint i = 0; i < dims; i++) {
        l[i] = local[i];
        g[i] = (global[i] + l[i] - 1) / l[i] * l[i];
        if (g[i] == 0) return GFP_OK; /* nothing to do */
    }
    ocl_device *d = c->dev;
    if (d->recording || d->refreshing) return ocl_graph_run(c, dims, g, l);
    const char *why = "";
    cl_int err = ocl_fault_launch(d, &why)
                     ? CL_OUT_OF_RESOURCES
                     : ocl.EnqueueNDRangeKernel(d->queue, c->k, dims, NULL, g, l, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
        char what[200];
        snprintf(what, sizeof what, "clEnqueueNDRangeKernel(%s)%s", c->kname, why);
        return ocl_cl_fail(err, c->op, what);
    }
    return GFP_OK;
}

bool ocl_fault_launch(ocl_device *d, const char **why) {
    *why = "";
    if (d->fault == OCL_FAULT_ENQUEUE) {
        *why = " (fault injected by GRAFT_OPENCL_FAULT=enqueue)";
        return true;
    }
    if (d->fault != OCL_FAULT_ENQUEUE_AT) return false;
    const char *v = ocl_getenv("GRAFT_OPENCL_FAULT_AT");
    if (!v) v = "";
    if (strncmp(v, d->fault_at, sizeof d->fault_at) != 0) {
        snprintf(d->fault_at, sizeof d->fault_at, "%s", v);
        d->fault_count = 0;
    }
    char *end = NULL;
    unsigned long long at = strtoull(v, &end, 10);
    if (!*v || !end || *end || at < 1) return false;
    if (++d->fault_count < at) return false;
    *why = " (fault injected by GRAFT_OPENCL_FAULT=enqueue-at)";
    return true;
}

gfp_status ocl_call_run1(ocl_call *c, uint64_t n, size_t group) {
    if (group > c->dev->max_wg) group = c->dev->max_wg;
    size_t g = (size_t)n, l = group;
    return ocl_call_run(c, 1, &g, &l);
}

gfp_status ocl_read_flag(ocl_device *d, const char *op, bool *set, int64_t *value) {
    cl_long v[2] = {0, 0};
    cl_int err = ocl.EnqueueReadBuffer(d->queue, d->flag, CL_TRUE, 0, sizeof v, v, 0, NULL, NULL);
    if (err != CL_SUCCESS) return ocl_cl_fail(err, op, "reading the index check flag");
    *set = v[0] != 0;
    *value = v[1];
    if (*set) {
        cl_long zero = 0;
        err = ocl.EnqueueFillBuffer(d->queue, d->flag, &zero, sizeof zero, 0, 2 * sizeof zero, 0,
                                    NULL, NULL);
        if (err != CL_SUCCESS) return ocl_cl_fail(err, op, "clearing the index check flag");
    }
    return GFP_OK;
}

static gfp_status grow_buffer(ocl_device *d, ocl_buffer *buf, uint64_t bytes, const char *op,
                              const char *what) {
    if (buf->mem && buf->size >= bytes) return GFP_OK;
    if (buf->mem) ocl.ReleaseMemObject(buf->mem);
    buf->mem = NULL;
    buf->size = 0;
    cl_int err = CL_SUCCESS;
    cl_mem m = ocl.CreateBuffer(d->ctx, CL_MEM_READ_WRITE, (size_t)bytes, NULL, &err);
    if (!m) return ocl_cl_fail(err, op, what);
    *buf = (ocl_buffer){OCL_BUFFER_MAGIC, m, bytes, NULL, NULL};
    return GFP_OK;
}

gfp_status ocl_scratch(ocl_device *d, uint64_t bytes, const char *op) {
    return grow_buffer(d, &d->scratch, bytes, op, "clCreateBuffer (scratch)");
}

gfp_status ocl_pack_buffer(ocl_device *d, uint64_t bytes, const char *op) {
    return grow_buffer(d, &d->pack, bytes, op, "clCreateBuffer (matmul's packed panels)");
}

gfp_tensor ocl_scratch_view(ocl_device *d, const gfp_tensor *t, uint64_t at) {
    gfp_tensor v = *t;
    v.buffer = &d->scratch;
    v.offset = at;
    int64_t st = 1;
    for (int k = t->rank - 1; k >= 0; k--) {
        v.strides[k] = st;
        st *= t->sizes[k];
    }
    return v;
}

/* ------------------------------------------------------------ geometry */
/* Rows shorter than this go across rows (the launch's dim 0 walks rows). */
#define OCL_SHORT_ROW 32

void ocl_geom_init(ocl_geom *g, const gfp_tensor *const *t, int n) {
    memset(g, 0, sizeof *g);
    g->n = n;
    g->numel = pk_numel(t[0]);
    /* Drop size-1 dims: their strides do not matter. */
    for (int d = 0; d < t[0]->rank; d++) {
        if (t[0]->sizes[d] == 1) continue;
        g->sizes[g->rank] = t[0]->sizes[d];
        for (int k = 0; k < n; k++) g->strides[k][g->rank] = t[k]->strides[d];
        g->rank++;
    }
    /* Merge dim d into d + 1 when every tensor steps over d as one run of
     * d + 1 (stride[d] == stride[d + 1] * size[d + 1]). */
    int r = g->rank;
    for (int d = r - 2; d >= 0; d--) {
        bool ok = true;
        for (int k = 0; k < n && ok; k++)
            ok = g->strides[k][d] == g->strides[k][d + 1] * g->sizes[d + 1];
        if (!ok) continue;
        g->sizes[d + 1] *= g->sizes[d];
        for (int e = d; e < g->rank - 1; e++) {
            g->sizes[e] = g->sizes[e + 1];
            for (int k = 0; k < n; k++) g->strides[k][e] = g->strides[k][e + 1];
        }
        g->rank--;
    }
    g->contiguous = g->rank == 0;
    if (g->rank == 1) {
        g->contiguous = true;
        for (int k = 0; k < n; k++) g->contiguous = g->contiguous && g->strides[k][0] == 1;
    }
    /* A strided 1-D geometry is one row of the 2-D form. */
    if (g->rank == 1 && !g->contiguous) {
        g->sizes[1] = g->sizes[0];
        g->sizes[0] = 1;
        for (int k = 0; k < n; k++) {
            g->strides[k][1] = g->strides[k][0];
            g->strides[k][0] = 0;
        }
        g->rank = 2;
    }
    /* Short rows of the 2-D form: walk the other dim along the launch's
     * dim 0 (the order of the elements does not matter). */
    if (g->rank == 2 && g->sizes[1] < OCL_SHORT_ROW && g->sizes[0] > g->sizes[1]) {
        int64_t tmp = g->sizes[0];
        g->sizes[0] = g->sizes[1];
        g->sizes[1] = tmp;
        for (int k = 0; k < n; k++) {
            tmp = g->strides[k][0];
            g->strides[k][0] = g->strides[k][1];
            g->strides[k][1] = tmp;
        }
    }
}

/* How a strided (_s) launch walks its elements, kernels/common.cl's
 * GF_STRIDED_BEGIN (GRAFT_OPENCL_STRIDED: rows, items or auto):
 *   0  an item per element, dim 0 along the rows (the work-group across a
 *      row's neighbouring elements: coalesced on a GPU);
 *   1  an item per element, dim 0 across rows (rows shorter than
 *      OCL_SHORT_ROW would leave most of a 64-wide group idle);
 *   2  an item per row, looping along it: the row index is unravelled once
 *      a row instead of once an element. auto takes it on CPU devices
 *      (measured on PoCL: an attention head permute, [64, 8, 4, 12] ->
 *      (0, 2, 1, 3), copied in ~40 us instead of ~160, the transformer
 *      example's eager step 16.6 ms instead of 28); a GPU keeps 0 and 1. */
typedef enum strided_walk { WALK_ALONG, WALK_ACROSS, WALK_ROWS } strided_walk;

bool ocl_walks_rows(const ocl_device *d) {
    const char *v = ocl_getenv("GRAFT_OPENCL_STRIDED");
    if (v && !strcmp(v, "rows")) return true;
    if (v && !strcmp(v, "items")) return false;
    return (d->type & CL_DEVICE_TYPE_CPU) != 0;
}

static strided_walk walk_of(const ocl_device *d, const ocl_geom *g) {
    if (g->rank <= 2) return WALK_ALONG; /* the _2 form: no row index to unravel */
    if (ocl_walks_rows(d)) return WALK_ROWS;
    return g->sizes[g->rank - 1] < OCL_SHORT_ROW ? WALK_ACROSS : WALK_ALONG;
}

char ocl_geom_form(const ocl_geom *g) { return g->contiguous ? 'c' : g->rank <= 2 ? '2' : 's'; }

void ocl_geom_args(ocl_call *c, const ocl_geom *g) {
    int64_t inner = g->rank ? g->sizes[g->rank - 1] : 1;
    ocl_arg_long8(c, g->sizes, g->rank);
    ocl_arg_i32(c, g->rank);
    ocl_arg_i64(c, inner);
    ocl_arg_i64(c, inner ? g->numel / inner : 0);
    ocl_arg_i32(c, (int32_t)walk_of(c->dev, g));
}

void ocl_geom_strides(ocl_call *c, const ocl_geom *g, int k) {
    ocl_arg_long8(c, g->strides[k], g->rank);
}

gfp_status ocl_geom_run(ocl_call *c, const ocl_geom *g) {
    if (g->contiguous) return ocl_call_run1(c, (uint64_t)g->numel, 64);
    int64_t inner = g->sizes[g->rank - 1], outer = g->numel / inner;
    /* (_2 geometries with short rows are already swapped by ocl_geom_init) */
    strided_walk w = walk_of(c->dev, g);
    size_t global[2] = {(size_t)(w == WALK_ALONG ? inner : outer),
                        (size_t)(w == WALK_ALONG ? outer : w == WALK_ACROSS ? inner : 1)};
    size_t local[2] = {64 < c->dev->max_wg ? 64 : c->dev->max_wg, 1};
    return ocl_call_run(c, 2, global, local);
}
