/* SPDX-License-Identifier: BSD-3-Clause */
/* cuda_matmul.c — MATMUL through cuBLAS (f32, f64, f16, bf16, and c64 and
 * c128 as cgemm and zgemm do) and the plugin's own kernel for i32 and i64.
 *
 * cuBLAS is column-major. A row-major matrix is the column-major view of its
 * transpose, so each operand is classified by which of its two strides is 1
 * (row- or column-major, with the other stride as the leading dimension) and
 * the call is set up so that no data moves:
 *   y row-major:    y^T = b^T a^T   (C = y^T, N x M)
 *   y column-major: y   = a b       (C = y,   M x N)
 * Operands with neither unit stride (or a zero stride in a matrix dim) are
 * copied to contiguous scratch first; so is y, which is then copied back.
 *
 * Batch dims (the core broadcasts them with stride 0) are merged where all
 * three tensors allow it. One dim left: cublasGemmStridedBatchedEx with its
 * three strides (a stride of 0 reuses one matrix across the batch). More:
 * cublasGemmBatchedEx with pointer arrays built on the host.
 *
 * f32 computes in f32 without TF32 (CUBLAS_COMPUTE_32F, the default math
 * mode), f64 in f64, f16 and bf16 accumulate in f32; c64 in f32 and c128 in
 * f64. A transposed complex operand is CUBLAS_OP_T, never the conjugating
 * OP_C: MATMUL multiplies the values as stored. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

/* How cuBLAS sees one operand. */
typedef struct blas_mat {
    cuk_tensor t;   /* the (possibly copied) tensor */
    bool col_major; /* stored column-major: its cuBLAS view is the matrix itself */
    int64_t ld;
} blas_mat;

/* Classifies the matrix in t's last two dims; false when cuBLAS cannot read
 * it as it is. Size-1 dims have no meaningful stride and are set to fit. */
static bool classify(const cuk_tensor *t, blas_mat *m) {
    int r = t->rank;
    int64_t rows = t->sizes[r - 2], cols = t->sizes[r - 1];
    int64_t sr = t->strides[r - 2], sc = t->strides[r - 1];
    int64_t rs = rows == 1 ? (cols > 1 ? cols : 1) : sr, cs = cols == 1 ? 1 : sc;
    if (cs == 1 && rs >= (cols > 1 ? cols : 1)) {
        m->col_major = false;
        m->ld = rs;
        return m->ld <= INT_MAX;
    }
    rs = rows == 1 ? 1 : sr;
    cs = cols == 1 ? (rows > 1 ? rows : 1) : sc;
    if (rs == 1 && cs >= (rows > 1 ? rows : 1)) {
        m->col_major = true;
        m->ld = cs;
        return m->ld <= INT_MAX;
    }
    return false;
}

/* A contiguous copy of t in scratch (its address in *owned). */
static gfp_status make_contiguous(cu_device *dev, const cuk_tensor *t, cuk_tensor *out,
                                  void **owned) {
    int64_t n = 1;
    for (int d = 0; d < t->rank; d++) n *= t->sizes[d];
    gfp_status st = cu_temp_alloc(dev, (uint64_t)n * pk_dtype_size(t->dtype), owned, "matmul");
    if (st != GFP_OK) return st;
    *out = *t;
    out->data = *owned;
    int64_t stride = 1;
    for (int d = t->rank - 1; d >= 0; d--) {
        out->strides[d] = stride;
        stride *= t->sizes[d];
    }
    return GFP_OK;
}

/* Merged batch dims: sizes and the three tensors' strides. */
typedef struct batch_dims {
    int n;
    int64_t size[GFP_MAX_RANK];
    int64_t str[3][GFP_MAX_RANK];
    int64_t count;
} batch_dims;

static void merge_batch(const cuk_tensor *const t[3], int nb, batch_dims *b) {
    memset(b, 0, sizeof *b);
    b->count = 1;
    for (int d = 0; d < nb; d++) {
        int64_t s = t[2]->sizes[d];
        b->count *= s;
        if (s == 1) continue;
        bool joins = b->n > 0;
        for (int k = 0; k < 3 && joins; k++) joins = t[k]->strides[d] * s == b->str[k][b->n - 1];
        if (joins) {
            b->size[b->n - 1] *= s;
            for (int k = 0; k < 3; k++) b->str[k][b->n - 1] = t[k]->strides[d];
            continue;
        }
        b->size[b->n] = s;
        for (int k = 0; k < 3; k++) b->str[k][b->n] = t[k]->strides[d];
        b->n++;
    }
}

static cudaDataType_t blas_type(int32_t dt) {
    switch (dt) {
    case GFP_F64: return CUDA_R_64F;
    case GFP_F16: return CUDA_R_16F;
    case GFP_BF16: return CUDA_R_16BF;
    case GFP_C64: return CUDA_C_32F;
    case GFP_C128: return CUDA_C_64F;
    default: return CUDA_R_32F;
    }
}

/* The gemm on prepared operands: a, b, y classified (y's layout decides the
 * formulation), batch merged. */
static gfp_status run_gemm(cu_device *dev, const blas_mat *a, const blas_mat *b, const blas_mat *y,
                           const batch_dims *bd, int64_t M, int64_t N, int64_t K) {
    /* y row-major: C = y^T = b^T a^T; A' = b, B' = a. Column-major: C = y = a b. */
    const blas_mat *p = y->col_major ? a : b, *q = y->col_major ? b : a;
    int64_t m = y->col_major ? M : N, n = y->col_major ? N : M;
    /* op(A') must be the m x K matrix: A' as stored is that matrix when its
     * storage order equals y's, its transpose otherwise. */
    cublasOperation_t ta = p->col_major == y->col_major ? CUBLAS_OP_N : CUBLAS_OP_T;
    cublasOperation_t tb = q->col_major == y->col_major ? CUBLAS_OP_N : CUBLAS_OP_T;
    int kp = y->col_major ? 0 : 1, kq = y->col_major ? 1 : 0; /* batch stride slots of p, q */
    if (m > INT_MAX || n > INT_MAX || K > INT_MAX || bd->count > INT_MAX)
        return pk_fail(GFP_ERR_UNSUPPORTED,
                       "matmul: sizes %lld x %lld x %lld in %lld batches exceed cuBLAS's 32-bit "
                       "dimensions",
                       (long long)M, (long long)K, (long long)N, (long long)bd->count);
    int32_t dt = y->t.dtype;
    cudaDataType_t type = blas_type(dt);
    /* alpha = 1 and beta = 0 in the scale type: float or double, complex
     * (1 + 0i) for c64 and c128, whose first part is the real value. */
    bool dbl = dt == GFP_F64 || dt == GFP_C128;
    cublasComputeType_t compute = dbl ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F;
    const double one64[2] = {1.0, 0.0}, zero64[2] = {0.0, 0.0};
    const float one32[2] = {1.0f, 0.0f}, zero32[2] = {0.0f, 0.0f};
    const void *alpha = dbl ? (const void *)one64 : (const void *)one32;
    const void *beta = dbl ? (const void *)zero64 : (const void *)zero32;
    size_t es = pk_dtype_size(dt);

    if (bd->n <= 1) {
        long long sp = bd->n ? bd->str[kp][0] : 0, sq = bd->n ? bd->str[kq][0] : 0;
        long long sy = bd->n ? bd->str[2][0] : 0;
        return cu_check_blas(
            cu_blas.cublasGemmStridedBatchedEx(dev->blas, ta, tb, (int)m, (int)n, (int)K, alpha,
                                               p->t.data, type, (int)p->ld, sp, q->t.data, type,
                                               (int)q->ld, sq, beta, y->t.data, type, (int)y->ld,
                                               sy, (int)bd->count, compute, CUBLAS_GEMM_DEFAULT),
            "matmul", "cublasGemmStridedBatchedEx");
    }
    /* Several batch dims that do not merge: one pointer per matrix. */
    size_t count = (size_t)bd->count;
    void **host = malloc(3 * count * sizeof(void *));
    if (!host) return pk_fail(GFP_ERR_OUT_OF_MEMORY, "matmul: out of host memory for %zu "
                              "batch pointers", 3 * count);
    int64_t idx[GFP_MAX_RANK] = {0};
    for (size_t i = 0; i < count; i++) {
        int64_t off[3] = {0, 0, 0};
        for (int d = 0; d < bd->n; d++)
            for (int k = 0; k < 3; k++) off[k] += idx[d] * bd->str[k][d];
        host[i] = (char *)p->t.data + off[kp] * (int64_t)es;
        host[count + i] = (char *)q->t.data + off[kq] * (int64_t)es;
        host[2 * count + i] = (char *)y->t.data + off[2] * (int64_t)es;
        for (int d = bd->n - 1; d >= 0; d--) {
            if (++idx[d] < bd->size[d]) break;
            idx[d] = 0;
        }
    }
    void *ptrs = NULL;
    gfp_status st = cu_temp_alloc(dev, 3 * count * sizeof(void *), &ptrs, "matmul");
    if (st == GFP_OK) st = cu_upload(dev, ptrs, host, 3 * count * sizeof(void *), "matmul");
    free(host);
    if (st == GFP_OK) {
        void **dp = ptrs;
        st = cu_check_blas(
            cu_blas.cublasGemmBatchedEx(
                dev->blas, ta, tb, (int)m, (int)n, (int)K, alpha, (const void *const *)dp, type,
                (int)p->ld, (const void *const *)(dp + count), type, (int)q->ld, beta,
                dp + 2 * count, type, (int)y->ld, (int)count, compute, CUBLAS_GEMM_DEFAULT),
            "matmul", "cublasGemmBatchedEx");
    }
    cu_temp_free(dev, ptrs); /* stream-ordered: after the gemm has read it */
    return st;
}

gfp_status cu_matmul_launch(cu_device *dev, const gfp_tensor *const *in, uint32_t n_in,
                            const gfp_tensor *const *out, uint32_t n_out) {
    (void)n_in;
    (void)n_out;
    const gfp_tensor *a = in[0], *b = in[1], *y = out[0];
    gfp_status st = pk_check_matmul(a, b, y, ~0u); /* dtypes: accepts() in cuda_ops.c */
    if (st != GFP_OK || pk_numel(y) == 0) return st;
    int r = a->rank;
    int64_t M = a->sizes[r - 2], K = a->sizes[r - 1], N = b->sizes[r - 1];
    cuk_tensor va = cu_view(a), vb = cu_view(b), vy = cu_view(y);
    if (a->dtype == GFP_I32 || a->dtype == GFP_I64)
        return cu_check(cuk_matmul(dev->stream, &va, &vb, &vy), "matmul", "the kernel launch");
    if (K == 0) return cu_zero_tensor(dev, &vy, "matmul"); /* an empty sum */

    blas_mat ma = {.t = va}, mb = {.t = vb}, my = {.t = vy};
    void *owned[3] = {NULL, NULL, NULL};
    blas_mat *mats[3] = {&ma, &mb, &my};
    for (int i = 0; i < 3 && st == GFP_OK; i++) {
        if (classify(&mats[i]->t, mats[i])) continue;
        cuk_tensor c;
        st = make_contiguous(dev, &mats[i]->t, &c, &owned[i]);
        if (st != GFP_OK) break;
        if (i < 2) st = cu_copy_tensor(dev, &c, &mats[i]->t, "matmul");
        mats[i]->t = c;
        classify(&c, mats[i]); /* contiguous: row-major, always representable */
    }
    if (st == GFP_OK) {
        const cuk_tensor *t3[3] = {&ma.t, &mb.t, &my.t};
        batch_dims bd;
        merge_batch(t3, r - 2, &bd);
        st = run_gemm(dev, &ma, &mb, &my, &bd, M, N, K);
    }
    if (st == GFP_OK && owned[2]) st = cu_copy_tensor(dev, &vy, &my.t, "matmul");
    for (int i = 0; i < 3; i++) cu_temp_free(dev, owned[i]);
    return st;
}
