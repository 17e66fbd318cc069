/* SPDX-License-Identifier: BSD-3-Clause */
/* ocl_random.c — GFP_OP_RANDOM (kernels/random.cl): the ABI's Philox4x32-10
 * stream, the same numbers as the reference plugin for the same seed and
 * offset.
 *
 * Uniform and normal values are defined as computed in double and rounded
 * once. On a device without doubles they are drawn here on the host (the
 * same arithmetic as the reference) and written to the device, so the
 * numbers never depend on the device's precision. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl_internal.h"

uint32_t ocl_random_support(const ocl_device *d, const gfp_op_query *q) {
    if (q->n_inputs != 0 || q->n_outputs != 1) return GFP_SUPPORT_NONE;
    int32_t dt = q->output_dtypes[0];
    /* The query has no params: integer and bool outputs serve bernoulli
     * only, and launch refuses the other kinds for them. f16 and bf16 are
     * drawn on devices with doubles (computed in double, rounded once). */
    bool ok = (dt >= GFP_F32 && dt <= GFP_BOOL) || (pk_is_half(dt) && d->fp64);
    return ok ? GFP_SUPPORT_STRIDED : GFP_SUPPORT_NONE;
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

/* ------------------------------------------------------------ host draws */
#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u

static void philox(uint32_t ctr[4], uint32_t k0, uint32_t k1) {
    for (int round = 0; round < 10; round++) {
        uint64_t p0 = (uint64_t)PHILOX_M0 * ctr[0], p1 = (uint64_t)PHILOX_M1 * ctr[2];
        uint32_t c1 = ctr[1], c3 = ctr[3];
        ctr[0] = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        ctr[1] = (uint32_t)p1;
        ctr[2] = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        ctr[3] = (uint32_t)p0;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
}

static double u24(uint32_t w) { return (double)(w >> 8) * 0x1p-24; }

/* f32 uniform / normal values of output elements [0, n), on the host. */
static float *host_draw(const gfp_random_params *p, int64_t n) {
    float *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    if (!v) return NULL;
    uint32_t k0 = (uint32_t)p->seed, k1 = (uint32_t)(p->seed >> 32);
    for (int64_t i = 0; i < n; i++) {
        uint64_t c = p->offset + (uint64_t)i;
        uint32_t r[4] = {(uint32_t)c, (uint32_t)(c >> 32), 0, 0};
        philox(r, k0, k1);
        double x;
        if (p->kind == GFP_RANDOM_UNIFORM) {
            x = p->a + (p->b - p->a) * u24(r[0]);
        } else {
            double u1 = 1.0 - u24(r[0]), u2 = u24(r[1]);
            x = p->a + p->b * sqrt(-2.0 * log(u1)) * cos(6.28318530717958647692 * u2);
        }
        v[i] = (float)x;
    }
    return v;
}

/* Writes host values (row-major) into y, through a contiguous staging buffer
 * and a strided copy when y is not contiguous. */
static gfp_status write_rowmajor(ocl_device *d, const gfp_tensor *y, const void *host, size_t bytes) {
    const gfp_tensor *t1[1] = {y};
    ocl_geom g;
    ocl_geom_init(&g, t1, 1);
    cl_int err;
    if (g.contiguous) {
        err = ocl.EnqueueWriteBuffer(d->queue, ocl_mem(y), CL_TRUE, (size_t)y->offset, bytes, host,
                                     0, NULL, NULL);
        return err == CL_SUCCESS ? GFP_OK : ocl_cl_fail(err, "random", "clEnqueueWriteBuffer");
    }
    gfp_status st = ocl_scratch(d, bytes, "random");
    if (st != GFP_OK) return st;
    gfp_tensor src = ocl_scratch_view(d, y, 0);
    err = ocl.EnqueueWriteBuffer(d->queue, d->scratch.mem, CL_TRUE, 0, bytes, host, 0, NULL, NULL);
    if (err != CL_SUCCESS) return ocl_cl_fail(err, "random", "clEnqueueWriteBuffer (staging)");
    return ocl_copy_tensor(d, y, &src, "random");
}

/* ------------------------------------------------------------ launch */
gfp_status ocl_random_launch(ocl_device *d, uint32_t op, const gfp_tensor *const *in,
                             uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                             const void *params) {
    const gfp_random_params *p = params;
    const gfp_tensor *y = out[0];
    gfp_status st = pk_check_random(params, y, PK_DT_FLOAT | PK_DT_HALF);
    if (st != GFP_OK) return st;
    if (pk_is_half(y->dtype) && !d->fp64)
        return pk_fail(GFP_ERR_UNSUPPORTED, "random: %s values are drawn in double, which "
                       "device '%s' lacks; draw f32 and convert", pk_dtype_name(y->dtype),
                       d->name);
    int64_t n = pk_numel(y);
    if (n == 0) return GFP_OK;
    if (p->kind != GFP_RANDOM_BERNOULLI && !d->fp64) {
        float *v = host_draw(p, n);
        if (!v) return pk_fail(GFP_ERR_OUT_OF_MEMORY, "random: out of host memory");
        st = write_rowmajor(d, y, v, (size_t)n * sizeof *v);
        free(v);
        return st;
    }
    char kname[48];
    static const char *const kinds[] = {"uniform", "normal", "bernoulli"};
    snprintf(kname, sizeof kname, "random_%s_%s", kinds[p->kind], kdt(y->dtype));
    ocl_call c;
    ocl_call_begin(&c, d, OCL_PROG_RANDOM, kname, "random");
    ocl_arg_mem(&c, ocl_mem(y));
    ocl_arg_i64(&c, ocl_elem_offset(y));
    ocl_arg_long8(&c, y->sizes, y->rank);
    ocl_arg_long8(&c, y->strides, y->rank);
    ocl_arg_i32(&c, y->rank);
    ocl_arg_i64(&c, n);
    ocl_arg_u64(&c, p->seed);
    ocl_arg_u64(&c, p->offset);
    if (p->kind == GFP_RANDOM_BERNOULLI) {
        /* u24 < p  <=>  (r >> 8) < p * 2^24  <=>  (r >> 8) < ceil(p * 2^24). */
        double t = ceil(p->a * 16777216.0);
        uint32_t thresh = !(t > 0) ? 0u : t >= 16777216.0 ? 16777216u : (uint32_t)t;
        ocl_arg_raw(&c, sizeof(cl_uint), &thresh);
    } else {
        ocl_arg_f64(&c, p->a);
        ocl_arg_f64(&c, p->b);
    }
    return ocl_call_run1(&c, (uint64_t)n, 64);
}
