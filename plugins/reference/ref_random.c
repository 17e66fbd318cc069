/* ref_random.c — GFP_OP_RANDOM: counter-based random numbers (Philox4x32-10).
 *
 * Element i of the output (row-major order of its shape) depends only on
 * (seed, offset + i), exactly as abi/graft_plugin.h defines it, so every
 * device produces the same numbers and any slice of a stream can be drawn
 * without generating what comes before it (the generator: ref_philox.h). */
#include <math.h>

#include "ref_internal.h"
#include "ref_philox.h"

#define TWO_PI 6.28318530717958647692

uint32_t ref_random_support(const gfp_op_query *q) {
    if (q->op != GFP_OP_RANDOM || q->n_inputs != 0 || q->n_outputs != 1) return GFP_SUPPORT_NONE;
    int32_t d = q->output_dtypes[0];
    /* The query carries no params: i32/i64/bool serve bernoulli only, and a
     * uniform or normal launch into them is refused with UNSUPPORTED. */
    if (d < 0 || d > GFP_BOOL) return GFP_SUPPORT_NONE;
    return GFP_SUPPORT_STRIDED; /* any strides: element i is the i-th in row-major order */
}

gfp_status ref_random_launch(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                             const gfp_tensor *const *out, uint32_t n_out, const void *params) {
    (void)in;
    if (op != GFP_OP_RANDOM)
        return pk_fail(GFP_ERR_UNSUPPORTED, "op %u is not RANDOM", (unsigned)op);
    gfp_status st = pk_expect_counts(n_in, 0, n_out, 1, "random");
    if (st == GFP_OK) st = pk_check_params(params, GFP_RANDOM_PARAMS_SIZE_V1_0, "random");
    if (st != GFP_OK) return st;
    const gfp_random_params *p = params;
    const gfp_tensor *y = out[0];
    if (p->kind > GFP_RANDOM_BERNOULLI)
        return pk_fail(GFP_ERR_INVALID,
                        "random: kind %u is not uniform (0), normal (1) or bernoulli (2)",
                        (unsigned)p->kind);
    bool is_f32 = y->dtype == GFP_F32;
    if (p->kind != GFP_RANDOM_BERNOULLI && !pk_is_float(y->dtype))
        return pk_fail(GFP_ERR_UNSUPPORTED,
                        "random: %s numbers need an f32 or f64 output, got dtype %d "
                        "(only bernoulli fills integer and bool outputs)",
                        p->kind == GFP_RANDOM_UNIFORM ? "uniform" : "normal", (int)y->dtype);
    if (y->dtype < 0 || y->dtype > GFP_BOOL)
        return pk_fail(GFP_ERR_UNSUPPORTED, "random: output dtype %d is not stored here",
                        (int)y->dtype);
    if (pk_numel(y) == 0) return GFP_OK;

    uint32_t k0 = (uint32_t)p->seed, k1 = (uint32_t)(p->seed >> 32);
    int64_t idx[GFP_MAX_RANK] = {0};
    uint64_t i = 0;
    do {
        uint64_t c = p->offset + i++; /* wraps modulo 2^64 */
        uint32_t r[4] = {(uint32_t)c, (uint32_t)(c >> 32), 0, 0};
        ref_philox4x32_10(r, k0, k1);
        int64_t off = ref_offset(y, idx);
        double v;
        switch (p->kind) {
        case GFP_RANDOM_UNIFORM:
            v = p->a + (p->b - p->a) * (is_f32 ? ref_u24(r[0]) : ref_u53(r[0], r[1]));
            break;
        case GFP_RANDOM_NORMAL: {
            /* Box-Muller; u1 in (0, 1] keeps the log finite. */
            double u1 = 1.0 - (is_f32 ? ref_u24(r[0]) : ref_u53(r[0], r[1]));
            double u2 = is_f32 ? ref_u24(r[1]) : ref_u53(r[2], r[3]);
            v = p->a + p->b * sqrt(-2.0 * log(u1)) * cos(TWO_PI * u2);
            break;
        }
        default:
            ref_store_i64(y, off, ref_u24(r[0]) < p->a ? 1 : 0);
            continue;
        }
        ref_store(y, off, v); /* f32: computed in double, rounded once */
    } while (ref_next_index(idx, y->sizes, y->rank));
    return GFP_OK;
}
