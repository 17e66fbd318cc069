/* SPDX-License-Identifier: BSD-3-Clause */
/* ocl_matmul.c — MATMUL (kernels/matmul.cl, or CLBlast).
 *
 * y[..., m, n] = sum_k a[..., m, k] * b[..., k, n] for any strides; batch
 * dims come equal in all three (broadcast as stride 0). Floats go to graft's
 * tiled kernel, or to CLBlast's GEMM: GRAFT_OPENCL_GEMM=graft|clblast|auto
 * picks (read at every launch), and so does the "opencl.gemm" extension
 * (graft_opencl_ext.h), with which graft-bench compares both in one
 * process. auto, the default, uses CLBlast on GPUs and graft's kernel on
 * CPU devices: measured on PoCL (graft-bench --only matmul), graft's kernel is
 * several times faster there and needs no multi-second first compile.
 * CLBlast takes only operands with a unit stride in one matrix dim (row- or
 * column-major); other views use graft's kernel. Complex operands go to
 * ocl_complex.c, which turns them into one real GEMM through this file. */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "ocl_internal.h"

uint32_t ocl_matmul_support(const ocl_device *d, const gfp_op_query *q) {
    if (ocl_is_complex(q->input_dtypes[0])) return ocl_complex_matmul_support(d, q);
    return pk_matmul_dtypes_ok(q->input_dtypes[0], q->input_dtypes[1], q->output_dtypes[0],
                               PK_DT_FLOAT | PK_DT_HALF | PK_DT_INT)
               ? GFP_SUPPORT_STRIDED
               : GFP_SUPPORT_NONE;
}

/* Rows an item of matmul_vec / matmul_vecp computes: kernels/matmul.cl's
 * GF_RB. */
#define OCL_VEC_RB 16
/* The most bytes of packed panels of a (ocl_matmul_launch). */
#define OCL_PACK_MAX_BYTES ((uint64_t)64 << 20)

/* The "opencl.gemm" extension's choice (graft_opencl_ext.h): -2 none, else
 * as gemm_choice answers. */
static _Atomic int gemm_forced = -2;

void ocl_matmul_force_gemm(int mode) {
    atomic_store(&gemm_forced, mode == 1 ? 0 : mode == 2 ? 1 : -2);
}

/* Which GEMM the user asked for: 0 graft, 1 CLBlast, -1 auto. */
static int gemm_choice(void) {
    int forced = atomic_load(&gemm_forced);
    if (forced != -2) return forced;
    const char *v = ocl_getenv("GRAFT_OPENCL_GEMM");
    if (v && !strcmp(v, "graft")) return 0;
    if (v && !strcmp(v, "clblast")) return 1;
    return -1;
}

bool ocl_matmul_may_use_clblast(const ocl_device *d) {
    int choice = gemm_choice();
    return choice == 1 || (choice == -1 && (d->type & CL_DEVICE_TYPE_GPU) && ocl_clblast_available());
}

/* A matrix view as CLBlast takes it: row-major, maybe transposed. */
static bool blas_view(int64_t rows, int64_t cols, int64_t s_row, int64_t s_col, bool *trans,
                      uint64_t *ld) {
    if (s_col == 1 && s_row >= cols && s_row >= 1) {
        *trans = false;
        *ld = (uint64_t)s_row;
        return true;
    }
    if (s_row == 1 && s_col >= rows && s_col >= 1) {
        *trans = true;
        *ld = (uint64_t)s_col;
        return true;
    }
    return false;
}

/* CLBlast, batch by batch; UNSUPPORTED (no message) when the views do not fit. */
static gfp_status via_clblast(ocl_device *d, const gfp_tensor *a, const gfp_tensor *b,
                              const gfp_tensor *y, int64_t batches) {
    int r = a->rank;
    int64_t m = a->sizes[r - 2], k = a->sizes[r - 1], n = b->sizes[r - 1];
    bool ta, tb, ty;
    uint64_t lda, ldb, ldy;
    if (!blas_view(m, k, a->strides[r - 2], a->strides[r - 1], &ta, &lda) ||
        !blas_view(k, n, b->strides[r - 2], b->strides[r - 1], &tb, &ldb) ||
        !blas_view(m, n, y->strides[r - 2], y->strides[r - 1], &ty, &ldy) || ty || k == 0)
        return GFP_ERR_UNSUPPORTED;
    int64_t idx[GFP_MAX_RANK] = {0};
    for (int64_t bi = 0; bi < batches; bi++) {
        int64_t rem = bi, oa = ocl_elem_offset(a), ob = ocl_elem_offset(b), oy = ocl_elem_offset(y);
        for (int dd = r - 3; dd >= 0; dd--) {
            idx[dd] = rem % a->sizes[dd];
            rem /= a->sizes[dd];
            oa += idx[dd] * a->strides[dd];
            ob += idx[dd] * b->strides[dd];
            oy += idx[dd] * y->strides[dd];
        }
        gfp_status st = ocl_clblast_gemm(d, a->dtype, ta, tb, (uint64_t)m, (uint64_t)n,
                                         (uint64_t)k, ocl_mem(a), (uint64_t)oa, lda, ocl_mem(b),
                                         (uint64_t)ob, ldb, ocl_mem(y), (uint64_t)oy, ldy);
        if (st != GFP_OK) return st;
    }
    return GFP_OK;
}

/* matmul_vec / matmul_vecp: an item per OCL_VEC_RB rows by vw columns, in
 * work-groups of 4 x 8 items; then y from where it was staged, if it was. */
static gfp_status run_vec(ocl_device *d, ocl_call *c, int64_t n, int64_t panels,
                          int64_t batches, int64_t vw, const gfp_tensor *y, const gfp_tensor *yk) {
    size_t global[3] = {(size_t)((n + vw - 1) / vw), (size_t)panels, (size_t)batches};
    size_t local[3] = {4, 8, 1};
    if (d->max_wg < 32) local[0] = local[1] = 1;
    gfp_status st = ocl_call_run(c, 3, global, local);
    if (st == GFP_OK && yk != y) st = ocl_copy_tensor(d, y, yk, "matmul");
    return st;
}

gfp_status ocl_matmul_launch(ocl_device *d, uint32_t op, const gfp_tensor *const *in,
                             uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                             const void *params) {
    const gfp_tensor *a = in[0], *b = in[1], *y = out[0];
    if (ocl_is_complex(a->dtype)) return ocl_complex_matmul_launch(d, a, b, y);
    gfp_status st = pk_check_matmul(a, b, y, PK_DT_FLOAT | PK_DT_HALF | PK_DT_INT);
    if (st != GFP_OK) return st;
    int r = a->rank;
    int64_t m = a->sizes[r - 2], k = a->sizes[r - 1], n = b->sizes[r - 1], batches = 1;
    for (int dd = 0; dd < r - 2; dd++) batches *= a->sizes[dd];
    if (m == 0 || n == 0 || batches == 0) return GFP_OK;

    /* f16 and bf16 take the float kernels over 16-bit storage, f32
     * accumulation (kernels/matmul.cl); CLBlast gets f32 / f64 only. */
    bool half = pk_is_half(a->dtype), is_float = pk_is_float(a->dtype) || half;
    int choice = gemm_choice();
    bool gpu = (d->type & CL_DEVICE_TYPE_GPU) != 0;
    if (!half && is_float && (choice == 1 || (choice == -1 && gpu && ocl_clblast_available()))) {
        st = via_clblast(d, a, b, y, batches);
        if (st == GFP_OK) return st;
        if (choice == 1) {
            if (st == GFP_ERR_UNSUPPORTED)
                return pk_fail(st, "matmul: CLBlast was asked for (GRAFT_OPENCL_GEMM=clblast or the opencl.gemm extension), but it cannot take "
                                "these views (each matrix needs a unit stride in one dim and y "
                                "must be row-major), or CLBlast is missing");
            return st;
        }
        /* auto: graft's kernel does what CLBlast could not. */
        if (st != GFP_ERR_UNSUPPORTED)
            pk_log(GFP_LOG_WARN, "CLBlast GEMM failed on '%s'; using graft's kernel", d->name);
    }
    /* CPU devices: the explicitly vectorized kernel, which wants b and y with
     * unit column strides; other views are staged through scratch memory. */
    bool vec = is_float && (d->type & CL_DEVICE_TYPE_CPU) != 0;
    bool tiled = is_float && !vec && d->max_wg >= 256 && d->local_mem >= 2 * 16 * 64 * sizeof(double);
    gfp_tensor bs, ys;
    const gfp_tensor *yk = y;
    if (vec && (b->strides[r - 1] != 1 || y->strides[r - 1] != 1)) {
        size_t es = pk_dtype_size(a->dtype);
        uint64_t b_bytes = b->strides[r - 1] != 1 ? (uint64_t)(pk_numel(b) * (int64_t)es) : 0;
        uint64_t y_at = (b_bytes + 127) / 128 * 128;
        uint64_t y_bytes = y->strides[r - 1] != 1 ? (uint64_t)(pk_numel(y) * (int64_t)es) : 0;
        if ((st = ocl_scratch(d, y_at + y_bytes + 1, "matmul")) != GFP_OK) return st;
        if (b_bytes) {
            bs = ocl_scratch_view(d, b, 0);
            if ((st = ocl_copy_tensor(d, &bs, b, "matmul")) != GFP_OK) return st;
            b = &bs;
        }
        if (y_bytes) {
            ys = ocl_scratch_view(d, y, y_at);
            yk = &ys;
        }
    }
    const char *dt = a->dtype == GFP_F32 ? "f32" : a->dtype == GFP_F64 ? "f64"
                   : a->dtype == GFP_F16 ? "f16" : a->dtype == GFP_BF16 ? "bf16"
                   : a->dtype == GFP_I32 ? "i32" : "i64";
    char kname[40];
    snprintf(kname, sizeof kname, "matmul_%s_%s",
             vec ? "vec" : tiled ? "tiled" : is_float ? "naive" : "int", dt);
    int64_t bsz[GFP_MAX_RANK], bsa[GFP_MAX_RANK], bsb[GFP_MAX_RANK], bsy[GFP_MAX_RANK];
    for (int dd = 0; dd < r - 2; dd++) {
        bsz[dd] = a->sizes[dd];
        bsa[dd] = a->strides[dd];
        bsb[dd] = b->strides[dd];
        bsy[dd] = yk->strides[dd];
    }
    /* a packed into panels of rows (kernels/matmul.cl), in the device's pack
     * buffer (scratch may hold a conv's tile, or b and y staged), when the
     * panels take at most OCL_PACK_MAX_BYTES and half the largest allocation;
     * larger ones, and small products, take matmul_vec. */
    int64_t np = (m + OCL_VEC_RB - 1) / OCL_VEC_RB;
    uint64_t p_bytes = UINT64_MAX, rows = 0, elems = 0;
    if (!__builtin_mul_overflow((uint64_t)batches, (uint64_t)np * OCL_VEC_RB, &rows) &&
        !__builtin_mul_overflow(rows, (uint64_t)k, &elems) && elems <= OCL_PACK_MAX_BYTES)
        p_bytes = elems * (a->dtype == GFP_F64 ? 8u : 4u); /* the compute type's size */
    /* (a pack buffer the device cannot allocate: the unpacked kernel) */
    if (vec && m >= 2 * OCL_VEC_RB && n >= 128 && k > 0 && p_bytes <= OCL_PACK_MAX_BYTES &&
        p_bytes <= d->max_alloc_bytes / 2 && ocl_pack_buffer(d, p_bytes, "matmul") == GFP_OK) {
        char pname[40];
        snprintf(pname, sizeof pname, "matmul_pack_%s", dt);
        ocl_call pc;
        ocl_call_begin(&pc, d, OCL_PROG_MATMUL, pname, "matmul");
        ocl_arg_mem(&pc, ocl_mem(a));
        ocl_arg_i64(&pc, ocl_elem_offset(a));
        ocl_arg_i64(&pc, m);
        ocl_arg_i64(&pc, k);
        ocl_arg_i64(&pc, a->strides[r - 2]);
        ocl_arg_i64(&pc, a->strides[r - 1]);
        ocl_arg_long8(&pc, bsz, r - 2);
        ocl_arg_long8(&pc, bsa, r - 2);
        ocl_arg_i32(&pc, r - 2);
        ocl_arg_mem(&pc, d->pack.mem);
        size_t pg[3] = {(size_t)k, (size_t)np, (size_t)batches}, pl[3] = {1, 1, 1};
        if ((st = ocl_call_run(&pc, 3, pg, pl)) != GFP_OK) return st;
        snprintf(pname, sizeof pname, "matmul_vecp_%s", dt);
        ocl_call vc;
        ocl_call_begin(&vc, d, OCL_PROG_MATMUL, pname, "matmul");
        ocl_arg_mem(&vc, d->pack.mem);
        ocl_arg_mem(&vc, ocl_mem(b));
        ocl_arg_i64(&vc, ocl_elem_offset(b));
        ocl_arg_mem(&vc, ocl_mem(yk));
        ocl_arg_i64(&vc, ocl_elem_offset(yk));
        ocl_arg_i64(&vc, m);
        ocl_arg_i64(&vc, n);
        ocl_arg_i64(&vc, k);
        ocl_arg_i64(&vc, b->strides[r - 2]);
        ocl_arg_i64(&vc, yk->strides[r - 2]);
        ocl_arg_long8(&vc, bsz, r - 2);
        ocl_arg_long8(&vc, bsb, r - 2);
        ocl_arg_long8(&vc, bsy, r - 2);
        ocl_arg_i32(&vc, r - 2);
        return run_vec(d, &vc, n, np, batches, a->dtype == GFP_F64 ? 8 : 16, y, yk);
    }
    ocl_call c;
    ocl_call_begin(&c, d, OCL_PROG_MATMUL, kname, "matmul");
    ocl_arg_mem(&c, ocl_mem(a));
    ocl_arg_i64(&c, ocl_elem_offset(a));
    ocl_arg_mem(&c, ocl_mem(b));
    ocl_arg_i64(&c, ocl_elem_offset(b));
    ocl_arg_mem(&c, ocl_mem(yk));
    ocl_arg_i64(&c, ocl_elem_offset(yk));
    ocl_arg_i64(&c, m);
    ocl_arg_i64(&c, n);
    ocl_arg_i64(&c, k);
    ocl_arg_i64(&c, a->strides[r - 2]);
    ocl_arg_i64(&c, a->strides[r - 1]);
    ocl_arg_i64(&c, b->strides[r - 2]);
    ocl_arg_i64(&c, b->strides[r - 1]);
    ocl_arg_i64(&c, yk->strides[r - 2]);
    ocl_arg_i64(&c, yk->strides[r - 1]);
    ocl_arg_long8(&c, bsz, r - 2);
    ocl_arg_long8(&c, bsa, r - 2);
    ocl_arg_long8(&c, bsb, r - 2);
    ocl_arg_long8(&c, bsy, r - 2);
    ocl_arg_i32(&c, r - 2);
    if (vec) return run_vec(d, &c, n, np, batches, a->dtype == GFP_F64 ? 8 : 16, y, yk);
    if (tiled) {
        size_t global[3] = {(size_t)((n + 63) / 64 * 16), (size_t)((m + 63) / 64 * 16),
                            (size_t)batches};
        size_t local[3] = {16, 16, 1};
        return ocl_call_run(&c, 3, global, local);
    }
    size_t global[3] = {(size_t)n, (size_t)m, (size_t)batches};
    size_t local[3] = {16, 4, 1};
    if (d->max_wg < 64) local[0] = local[1] = 1;
    return ocl_call_run(&c, 3, global, local);
}
