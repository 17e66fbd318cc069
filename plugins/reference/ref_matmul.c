/* SPDX-License-Identifier: BSD-3-Clause */
/* ref_matmul.c — MATMUL: y[..., m, n] = sum_k a[..., m, k] * b[..., k, n].
 *
 * All three tensors have the same rank (>= 2) and the same batch sizes; the
 * core expresses broadcast batch dims as stride 0. Floating products are
 * accumulated in double and rounded once, which makes this the more accurate
 * answer that faster devices (accumulating in the input dtype) are compared
 * against. Complex products accumulate in double complex. Integer products wrap modulo 2^64 and narrow on store. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "ref_internal.h"

uint32_t ref_matmul_support(const gfp_op_query *q) {
    return pk_matmul_dtypes_ok(q->input_dtypes[0], q->input_dtypes[1], q->output_dtypes[0],
                               REF_DT_FLOAT | PK_DT_INT | PK_DT_COMPLEX)
               ? GFP_SUPPORT_STRIDED
               : GFP_SUPPORT_NONE;
}

gfp_status ref_matmul_launch(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                             const gfp_tensor *const *out, uint32_t n_out, const void *params) {
    const gfp_tensor *a = in[0], *b = in[1], *y = out[0];
    gfp_status st = pk_check_matmul(a, b, y, REF_DT_FLOAT | PK_DT_INT | PK_DT_COMPLEX);
    if (st != GFP_OK) return st;

    int r = a->rank;
    int64_t m_size = a->sizes[r - 2], k_size = a->sizes[r - 1], n_size = b->sizes[r - 1];
    int64_t a_m = a->strides[r - 2], a_k = a->strides[r - 1];
    int64_t b_k = b->strides[r - 2], b_n = b->strides[r - 1];
    int64_t y_m = y->strides[r - 2], y_n = y->strides[r - 1];
    if (pk_numel(y) == 0) return GFP_OK;
    bool is_float = ref_is_float(a->dtype), is_complex = ref_is_complex(a->dtype);
    /* Float operands: each batch's a [m, k] and b^T [n, k] as dense doubles
     * (the values ref_load gives), so the products below read arrays; the
     * sums are the same, in the same order. */
    double *ad = NULL, *bd = NULL;
    if (is_float) {
        size_t m = (size_t)m_size, n = (size_t)n_size, k = (size_t)k_size;
        if (k && (m > SIZE_MAX / sizeof(double) / k || n > SIZE_MAX / sizeof(double) / k))
            return pk_fail(GFP_ERR_OUT_OF_MEMORY, "matmul: operands too large for this host");
        ad = malloc(m * k > 0 ? m * k * sizeof(double) : 1);
        bd = malloc(n * k > 0 ? n * k * sizeof(double) : 1);
        if (!ad || !bd) {
            free(ad);
            free(bd);
            return pk_fail(GFP_ERR_OUT_OF_MEMORY,
                           "matmul: out of host memory for double copies of a [%lld, %lld] and "
                           "b [%lld, %lld]",
                           (long long)m_size, (long long)k_size, (long long)k_size,
                           (long long)n_size);
        }
    }

    /* idx walks the batch dims; its last two entries stay 0, so ref_offset
     * gives the offset of each operand's [0, 0] element in that batch. */
    int64_t idx[GFP_MAX_RANK] = {0};
    do {
        int64_t a0 = ref_offset(a, idx), b0 = ref_offset(b, idx), y0 = ref_offset(y, idx);
        if (is_float) {
            for (int64_t i = 0; i < m_size; i++)
                for (int64_t k = 0; k < k_size; k++)
                    ad[i * k_size + k] = ref_load(a, a0 + i * a_m + k * a_k);
            for (int64_t j = 0; j < n_size; j++)
                for (int64_t k = 0; k < k_size; k++)
                    bd[j * k_size + k] = ref_load(b, b0 + k * b_k + j * b_n);
        }
        for (int64_t i = 0; i < m_size; i++) {
            for (int64_t j = 0; j < n_size; j++) {
                int64_t yoff = y0 + i * y_m + j * y_n;
                if (is_complex) { /* plain products: no conjugation */
                    double complex acc = 0;
                    for (int64_t k = 0; k < k_size; k++)
                        acc += ref_load_c(a, a0 + i * a_m + k * a_k) *
                               ref_load_c(b, b0 + k * b_k + j * b_n);
                    ref_store_c(y, yoff, acc);
                } else if (is_float) {
                    const double *ar = ad + i * k_size, *bc = bd + j * k_size;
                    double acc = 0;
                    for (int64_t k = 0; k < k_size; k++) acc += ar[k] * bc[k];
                    ref_store(y, yoff, acc);
                } else {
                    uint64_t acc = 0;
                    for (int64_t k = 0; k < k_size; k++)
                        acc += (uint64_t)ref_load_i64(a, a0 + i * a_m + k * a_k) *
                               (uint64_t)ref_load_i64(b, b0 + k * b_k + j * b_n);
                    ref_store_i64(y, yoff, (int64_t)acc);
                }
            }
        }
    } while (ref_next_index(idx, y->sizes, r - 2));
    free(ad);
    free(bd);
    return GFP_OK;
}
