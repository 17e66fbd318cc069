/* SPDX-License-Identifier: BSD-3-Clause */
/* ocl_fuse.c — runs of f32 unary and binary launches of a captured graph as
 * one kernel.
 *
 * A captured graph replays its kernels with their arguments set once
 * (ocl_graph.c), but each launch still costs the driver's enqueue (10-25 us
 * on PoCL) and a pass over memory. graph_create asks ocl_fuse_step_of
 * whether a node can join a run and ocl_fuse_joins whether it can join the
 * current one (pk_fuse.h's rule); ocl_fuse_build then writes a kernel for
 * each run of two or more, builds it (or finds it built: the device keeps
 * the programs by source) and sets its arguments.
 *
 * What a run computes is what the eager launches compute:
 *  - each step calls the element function the eager kernel calls
 *    (unary_<op>_f32_el / binary_<op>_f32_el, instantiated through
 *    kernels/ew_defs.cl's macros as ew_math.cl instantiates them, without
 *    their kernels), with the same scalars (pk_unary_args_of, as
 *    ocl_elementwise.c's run_math);
 *  - every step stores its output, and a step reads its inputs from memory,
 *    so every tensor ends as eagerly;
 *  - order: a work-item runs all steps on its element in the graph's order,
 *    and pk_fuse.h's rule (written ranges equal to or disjoint from every
 *    other range of the run) makes that the eager order.
 * The kernel's source depends only on the run's shape (ops, which operands
 * share a buffer, which are broadcast), not on offsets or sizes, which are
 * arguments: runs of one shape share a program (a model's layers; measured
 * on the transformer example's step on PoCL, ~0.03 s a build, 121 graphs),
 * and a driver's own cache of compiled programs finds it again. A unary step's scalars
 * are arguments too, set again when the core rewrites its parameters.
 *
 * GRAFT_OPENCL_FUSE=0 (read at graph_create) turns fusion off. */
#define _GNU_SOURCE /* secure_getenv */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl_internal.h"

static _Atomic uint64_t fused_runs, fused_launches;

uint64_t ocl_fuse_runs(void) { return atomic_load(&fused_runs); }
uint64_t ocl_fuse_launches(void) { return atomic_load(&fused_launches); }

bool ocl_fuse_enabled(void) {
    const char *v = ocl_getenv("GRAFT_OPENCL_FUSE");
    return !v || strcmp(v, "0") != 0;
}

/* Operand k of the step's node: 0 the output, then the inputs. */
static const gfp_tensor *operand(const gfp_graph_node *n, int k) {
    return k == 0 ? n->outputs[0] : n->inputs[k - 1];
}

bool ocl_fuse_step_of(const gfp_graph_node *node, ocl_fuse_step *s) {
    memset(s, 0, sizeof *s);
    int arity = 0;
    const char *name = ocl_math_f32_name(node->op, &arity);
    if (!name || node->n_inputs != (uint32_t)arity || node->n_outputs != 1 || !node->inputs ||
        !node->outputs)
        return false;
    const gfp_tensor *y = node->outputs[0];
    if (!y || y->dtype != GFP_F32 || !pk_is_contiguous(y)) return false;
    int64_t n = pk_numel(y);
    if (n <= 0) return false;
    s->node = node;
    s->name = name;
    s->n_t = arity + 1;
    s->n = n;
    for (int k = 0; k < s->n_t; k++) {
        const gfp_tensor *t = operand(node, k);
        if (!t || t->dtype != GFP_F32 || !pk_same_shape(t, y)) return false;
        if (pk_is_contiguous(t)) s->bcast[k] = false;
        else if (k > 0 && pk_fuse_broadcast_one(t)) s->bcast[k] = true;
        else return false;
        s->mem[k] = ocl_mem(t);
        s->off[k] = ocl_elem_offset(t);
        uint64_t lo = (uint64_t)s->off[k];
        s->r[k] = (pk_range){s->mem[k], lo, lo + (s->bcast[k] ? 1u : (uint64_t)n)};
    }
    if (arity == 1) {
        pk_unary_args_of(node->op, node->params, GFP_F32, &s->ua);
        s->has_params = node->params != NULL;
    }
    /* The launch's own output against its inputs: the same rule as a run's. */
    return pk_fuse_ranges_join(s->r, 1, s->r + 1, s->n_t - 1);
}

bool ocl_fuse_joins(const ocl_fuse_step *steps, uint32_t count, const ocl_fuse_step *next) {
    if (count >= OCL_FUSE_MAX_STEPS || next->n != steps[0].n) return false;
    for (uint32_t i = 0; i < count; i++)
        if (!pk_fuse_ranges_join(next->r, next->n_t, steps[i].r, steps[i].n_t)) return false;
    return true;
}

/* ------------------------------------------------------------ source */
typedef struct text {
    char *s;
    size_t n, cap;
    bool failed;
} text;

static void put(text *t, const char *fmt, ...) {
    if (t->failed) return;
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int w = vsnprintf(t->s ? t->s + t->n : NULL, t->s ? t->cap - t->n : 0, fmt, ap);
        va_end(ap);
        if (w < 0) {
            t->failed = true;
            return;
        }
        if (t->s && t->n + (size_t)w < t->cap) {
            t->n += (size_t)w;
            return;
        }
        size_t cap = t->cap ? 2 * t->cap : 4096;
        while (cap < t->n + (size_t)w + 1) cap *= 2;
        char *p = realloc(t->s, cap);
        if (!p) {
            t->failed = true;
            return;
        }
        t->s = p;
        t->cap = cap;
    }
}

/* The run's distinct buffers, in order of first use; slot[i][k] indexes them. */
static uint32_t buffers_of(const ocl_fuse_run *r, cl_mem *mems, uint8_t slot[][3]) {
    uint32_t nb = 0;
    for (uint32_t i = 0; i < r->count; i++)
        for (int k = 0; k < r->steps[i].n_t; k++) {
            uint32_t j = 0;
            while (j < nb && mems[j] != r->steps[i].mem[k]) j++;
            if (j == nb) mems[nb++] = r->steps[i].mem[k];
            slot[i][k] = (uint8_t)j;
        }
    return nb;
}

/* The run's source: the element functions its steps call, instantiated
 * through ew_defs.cl's macros (each op once), then kernel gf_fused, whose
 * arguments are n, the buffers, then per step its operands' element offsets
 * and, for a unary step, pa, pb and flags. */
static void kernel_source(text *t, const ocl_fuse_run *r) {
    cl_mem mems[3 * OCL_FUSE_MAX_STEPS];
    uint8_t slot[OCL_FUSE_MAX_STEPS][3];
    uint32_t nb = buffers_of(r, mems, slot);
    for (uint32_t i = 0; i < r->count; i++) {
        const ocl_fuse_step *s = &r->steps[i];
        bool seen = false;
        for (uint32_t j = 0; j < i && !seen; j++)
            seen = r->steps[j].n_t == s->n_t && !strcmp(r->steps[j].name, s->name);
        if (seen) continue;
        if (s->n_t == 2)
            put(t, "GF_UNARY(unary_%s_f32, gf_f32_%s, f32, float, float)\n", s->name, s->name);
        else
            put(t, "GF_BINARY(binary_%s_f32, gf_f32_%s, f32, float, float)\n", s->name, s->name);
    }
    put(t, "__kernel void gf_fused(long n");
    /* distinct buffers (no sub-buffers here): they never alias */
    for (uint32_t j = 0; j < nb; j++) put(t, ", __global float *restrict m%u", j);
    for (uint32_t i = 0; i < r->count; i++) {
        for (int k = 0; k < r->steps[i].n_t; k++) put(t, ", long o%u_%d", i, k);
        if (r->steps[i].n_t == 2) put(t, ", float pa%u, float pb%u, int fl%u", i, i, i);
    }
    put(t, ") {\n    long i_ = get_global_id(0);\n    if (i_ >= n) return;\n");
    for (uint32_t i = 0; i < r->count; i++) {
        const ocl_fuse_step *s = &r->steps[i];
        char in[2][64];
        for (int k = 1; k < s->n_t; k++) {
            /* An element an earlier step wrote (the same range: pk_fuse.h
             * allows no other overlap) is taken from its variable, the value
             * memory holds; the latest such step wrote it last. */
            int from = -1;
            for (uint32_t j = 0; j < i && !s->bcast[k]; j++)
                if (r->steps[j].mem[0] == s->mem[k] && r->steps[j].off[0] == s->off[k])
                    from = (int)j;
            if (from >= 0) snprintf(in[k - 1], sizeof in[k - 1], "v%d", from);
            else
                snprintf(in[k - 1], sizeof in[k - 1], "m%u[o%u_%d%s]", slot[i][k], i, k,
                         s->bcast[k] ? "" : " + i_");
        }
        if (s->n_t == 2)
            put(t, "    float v%u = unary_%s_f32_el(%s, pa%u, pb%u, fl%u);\n", i, s->name, in[0],
                i, i, i);
        else
            put(t, "    float v%u = binary_%s_f32_el(%s, %s);\n", i, s->name, in[0], in[1]);
        put(t, "    m%u[o%u_0 + i_] = v%u;\n", slot[i][0], i, i);
    }
    put(t, "}\n");
}

/* ------------------------------------------------------------ arguments */
static cl_int set_arg(cl_kernel k, cl_uint i, size_t size, const void *v) {
    return ocl.SetKernelArg(k, i, size, v);
}

/* The unary steps' scalars, from their parameter structs as they are now;
 * only those that changed (or all, first) are set. */
static cl_int set_scalars(ocl_fuse_run *r, bool all) {
    for (uint32_t i = 0; i < r->count; i++) {
        ocl_fuse_step *s = &r->steps[i];
        if (s->n_t != 2) continue;
        pk_unary_args ua = s->ua;
        if (!all) {
            if (!s->has_params) continue;
            pk_unary_args_of(s->node->op, s->node->params, GFP_F32, &ua);
            if (ua.a == s->ua.a && ua.b == s->ua.b && ua.has_a == s->ua.has_a &&
                ua.has_b == s->ua.has_b)
                continue;
        }
        float pa = (float)ua.a, pb = (float)ua.b;
        cl_int fl = (ua.has_a ? 1 : 0) | (ua.has_b ? 2 : 0);
        cl_int err = set_arg(r->k, s->arg, sizeof pa, &pa);
        if (err == CL_SUCCESS) err = set_arg(r->k, s->arg + 1, sizeof pb, &pb);
        if (err == CL_SUCCESS) err = set_arg(r->k, s->arg + 2, sizeof fl, &fl);
        if (err != CL_SUCCESS) return err;
        s->ua = ua;
    }
    return CL_SUCCESS;
}

static cl_int set_args(ocl_fuse_run *r) {
    cl_mem mems[3 * OCL_FUSE_MAX_STEPS];
    uint8_t slot[OCL_FUSE_MAX_STEPS][3];
    uint32_t nb = buffers_of(r, mems, slot);
    cl_uint a = 0;
    cl_long n = (cl_long)r->steps[0].n;
    cl_int err = set_arg(r->k, a++, sizeof n, &n);
    for (uint32_t j = 0; j < nb && err == CL_SUCCESS; j++)
        err = set_arg(r->k, a++, sizeof mems[j], &mems[j]);
    for (uint32_t i = 0; i < r->count && err == CL_SUCCESS; i++) {
        ocl_fuse_step *s = &r->steps[i];
        for (int k = 0; k < s->n_t && err == CL_SUCCESS; k++) {
            cl_long o = (cl_long)s->off[k];
            err = set_arg(r->k, a++, sizeof o, &o);
        }
        if (s->n_t == 2) {
            s->arg = a;
            a += 3;
        }
    }
    return err == CL_SUCCESS ? set_scalars(r, true) : err;
}

/* ------------------------------------------------------------ build, run */
/* The device's programs, by source. Past the cap the oldest is dropped
 * (kernels made from it keep it alive). */
#define FUSED_PROGS_MAX 256u

typedef struct ocl_fused_prog {
    char *source;
    cl_program prog;
} ocl_fused_prog;

static gfp_status program_of(ocl_device *d, const char *source, cl_program *out) {
    for (uint32_t i = 0; i < d->n_fused_progs; i++)
        if (!strcmp(d->fused_progs[i].source, source)) {
            *out = d->fused_progs[i].prog;
            return GFP_OK;
        }
    if (!d->fused_progs && !(d->fused_progs = calloc(FUSED_PROGS_MAX, sizeof *d->fused_progs)))
        return pk_fail(GFP_ERR_OUT_OF_MEMORY, "opencl: graph_create: out of host memory");
    char *copy = strdup(source);
    if (!copy) return pk_fail(GFP_ERR_OUT_OF_MEMORY, "opencl: graph_create: out of host memory");
    cl_program prog = NULL;
    gfp_status st = ocl_build_fused(d, source, &prog);
    if (st != GFP_OK) {
        free(copy);
        return st;
    }
    if (d->n_fused_progs == FUSED_PROGS_MAX) {
        ocl.ReleaseProgram(d->fused_progs[0].prog);
        free(d->fused_progs[0].source);
        memmove(d->fused_progs, d->fused_progs + 1,
                (FUSED_PROGS_MAX - 1) * sizeof *d->fused_progs);
        d->n_fused_progs--;
    }
    d->fused_progs[d->n_fused_progs++] = (ocl_fused_prog){copy, prog};
    *out = prog;
    return GFP_OK;
}

void ocl_fuse_programs_release(ocl_device *d) {
    for (uint32_t i = 0; i < d->n_fused_progs; i++) {
        ocl.ReleaseProgram(d->fused_progs[i].prog);
        free(d->fused_progs[i].source);
    }
    free(d->fused_progs);
    d->fused_progs = NULL;
    d->n_fused_progs = 0;
}

gfp_status ocl_fuse_build(ocl_device *d, ocl_fuse_run *runs, uint32_t n_runs) {
    gfp_status st = GFP_OK;
    for (uint32_t r = 0; r < n_runs && st == GFP_OK; r++) {
        text t = {0};
        kernel_source(&t, &runs[r]);
        if (t.failed || !t.s) {
            free(t.s);
            st = pk_fail(GFP_ERR_OUT_OF_MEMORY, "opencl: graph_create: out of host memory");
            break;
        }
        cl_program prog = NULL;
        st = program_of(d, t.s, &prog);
        free(t.s);
        if (st != GFP_OK) break;
        cl_int err = CL_SUCCESS;
        runs[r].k = ocl.CreateKernel(prog, "gf_fused", &err);
        if (!runs[r].k) st = ocl_cl_fail(err, "graph", "clCreateKernel (a fused run)");
        else if ((err = set_args(&runs[r])) != CL_SUCCESS)
            st = ocl_cl_fail(err, "graph", "clSetKernelArg (a fused run)");
    }
    if (st != GFP_OK) {
        ocl_fuse_release(runs, n_runs);
        return st;
    }
    for (uint32_t r = 0; r < n_runs; r++) {
        atomic_fetch_add(&fused_runs, 1);
        atomic_fetch_add(&fused_launches, runs[r].count);
    }
    return GFP_OK;
}

gfp_status ocl_fuse_enqueue(ocl_device *d, ocl_fuse_run *r) {
    cl_int err = set_scalars(r, false);
    if (err != CL_SUCCESS) return ocl_cl_fail(err, "graph", "clSetKernelArg (a fused run)");
    size_t l = 64 < d->max_wg ? 64 : d->max_wg;
    size_t g = ((size_t)r->steps[0].n + l - 1) / l * l;
    const char *why;
    err = ocl_fault_launch(d, &why)
              ? CL_OUT_OF_RESOURCES
              : ocl.EnqueueNDRangeKernel(d->queue, r->k, 1, NULL, &g, &l, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
        char what[160];
        snprintf(what, sizeof what, "clEnqueueNDRangeKernel (graph) of a fused run%s", why);
        return ocl_cl_fail(err, "graph", what);
    }
    return GFP_OK;
}

void ocl_fuse_release(ocl_fuse_run *runs, uint32_t n_runs) {
    for (uint32_t r = 0; runs && r < n_runs; r++)
        if (runs[r].k) {
            ocl.ReleaseKernel(runs[r].k);
            runs[r].k = NULL;
        }
}
