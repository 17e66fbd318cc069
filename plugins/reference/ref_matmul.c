/* ref_matmul.c — MATMUL: y[..., m, n] = sum_k a[..., m, k] * b[..., k, n].
 *
 * All three tensors have the same rank (>= 2) and the same batch sizes; the
 * core expresses broadcast batch dims as stride 0. Floating products are
 * accumulated in double and rounded once, which makes this the more accurate
 * answer that faster devices (accumulating in the input dtype) are compared
 * against. Integer products wrap modulo 2^64 and narrow on store. */
#include <stddef.h>

#include "ref_internal.h"

static bool dtypes_ok(int32_t a, int32_t b, int32_t y) {
    bool known = a == GFP_F32 || a == GFP_F64 || a == GFP_I32 || a == GFP_I64;
    return known && b == a && y == a;
}

uint32_t ref_matmul_support(const gfp_op_query *q) {
    if (!GFP_HAS_FIELD(q->struct_size, gfp_op_query, output_dtypes) || q->op != GFP_OP_MATMUL ||
        q->n_inputs != 2 || q->n_outputs != 1)
        return GFP_SUPPORT_NONE;
    return dtypes_ok(q->input_dtypes[0], q->input_dtypes[1], q->output_dtypes[0])
               ? GFP_SUPPORT_STRIDED
               : GFP_SUPPORT_NONE;
}

/* Descriptors were validated by the router (ref_plugin.c: rank, sizes,
 * strides, buffer bounds); presence and the rank matmul needs remain. */
static gfp_status require(const gfp_tensor *t, const char *role) {
    if (!t) return pk_fail(GFP_ERR_INVALID, "matmul: the %s tensor is missing (NULL)", role);
    if (t->rank < 2)
        return pk_fail(GFP_ERR_INVALID,
                        "matmul: %s has rank %d; it must be >= 2 (the core promotes "
                        "1-D operands)",
                        role, (int)t->rank);
    return GFP_OK;
}

static gfp_status check_shapes(const gfp_tensor *a, const gfp_tensor *b, const gfp_tensor *y) {
    int r = a->rank;
    if (b->rank != r || y->rank != r)
        return pk_fail(GFP_ERR_INVALID,
                        "matmul: a, b and y must have the same rank (got %d, %d, %d); "
                        "the core broadcasts batch dims before launch",
                        r, (int)b->rank, (int)y->rank);
    for (int d = 0; d < r - 2; d++)
        if (b->sizes[d] != a->sizes[d] || y->sizes[d] != a->sizes[d])
            return pk_fail(GFP_ERR_INVALID,
                            "matmul: batch dim %d differs (a %lld, b %lld, y %lld); "
                            "broadcast batch dims must come as equal sizes with stride 0",
                            d, (long long)a->sizes[d], (long long)b->sizes[d],
                            (long long)y->sizes[d]);
    int64_t m = a->sizes[r - 2], k = a->sizes[r - 1], n = b->sizes[r - 1];
    if (b->sizes[r - 2] != k)
        return pk_fail(GFP_ERR_INVALID,
                        "matmul: a is [..., %lld, %lld] but b is [..., %lld, %lld]; "
                        "a's last dim must equal b's second to last",
                        (long long)m, (long long)k, (long long)b->sizes[r - 2], (long long)n);
    if (y->sizes[r - 2] != m || y->sizes[r - 1] != n)
        return pk_fail(
            GFP_ERR_INVALID, "matmul: y is [..., %lld, %lld]; it must be [..., %lld, %lld]",
            (long long)y->sizes[r - 2], (long long)y->sizes[r - 1], (long long)m, (long long)n);
    return GFP_OK;
}

gfp_status ref_matmul_launch(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                             const gfp_tensor *const *out, uint32_t n_out, const void *params) {
    (void)params; /* MATMUL takes none */
    if (op != GFP_OP_MATMUL)
        return pk_fail(GFP_ERR_INTERNAL, "matmul: op %u is not MATMUL", (unsigned)op);
    gfp_status st = pk_expect_counts(n_in, 2, n_out, 1, "matmul");
    if (st != GFP_OK) return st;
    const gfp_tensor *a = in[0], *b = in[1], *y = out[0];
    if ((st = require(a, "a")) != GFP_OK || (st = require(b, "b")) != GFP_OK ||
        (st = require(y, "y")) != GFP_OK)
        return st;
    if (!dtypes_ok(a->dtype, b->dtype, y->dtype))
        return pk_fail(GFP_ERR_UNSUPPORTED,
                        "matmul: the reference plugin does not multiply %s by %s into "
                        "%s (it takes f32, f64, i32 or i64, all three alike)",
                        pk_dtype_name(a->dtype), pk_dtype_name(b->dtype), pk_dtype_name(y->dtype));
    if ((st = check_shapes(a, b, y)) != GFP_OK) return st;

    int r = a->rank;
    int64_t m_size = a->sizes[r - 2], k_size = a->sizes[r - 1], n_size = b->sizes[r - 1];
    int64_t a_m = a->strides[r - 2], a_k = a->strides[r - 1];
    int64_t b_k = b->strides[r - 2], b_n = b->strides[r - 1];
    int64_t y_m = y->strides[r - 2], y_n = y->strides[r - 1];
    if (pk_numel(y) == 0) return GFP_OK;
    bool is_float = pk_is_float(a->dtype);

    /* idx walks the batch dims; its last two entries stay 0, so ref_offset
     * gives the offset of each operand's [0, 0] element in that batch. */
    int64_t idx[GFP_MAX_RANK] = {0};
    do {
        int64_t a0 = ref_offset(a, idx), b0 = ref_offset(b, idx), y0 = ref_offset(y, idx);
        for (int64_t i = 0; i < m_size; i++) {
            for (int64_t j = 0; j < n_size; j++) {
                int64_t yoff = y0 + i * y_m + j * y_n;
                if (is_float) {
                    double acc = 0;
                    for (int64_t k = 0; k < k_size; k++)
                        acc += ref_load(a, a0 + i * a_m + k * a_k) *
                               ref_load(b, b0 + k * b_k + j * b_n);
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
    return GFP_OK;
}
