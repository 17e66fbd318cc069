/* SPDX-License-Identifier: BSD-3-Clause */
/* ref_random.c — GFP_OP_RANDOM: counter-based random numbers (Philox4x32-10).
 *
 * Element i of the output (row-major order of its shape) depends only on
 * (seed, offset + i), exactly as abi/graft_plugin.h defines it, so every
 * device produces the same numbers and any slice of a stream can be drawn
 * without generating what comes before it (the generator: pk_philox.h). */
#include <math.h>

#include "ref_internal.h"
#include "pk_philox.h"

#define TWO_PI 6.28318530717958647692

uint32_t ref_random_support(const gfp_op_query *q) {
    /* The kit checked op, counts and a stored output dtype. The query carries
     * no params: i32/i64/bool serve bernoulli only, and a uniform or normal
     * launch into them is refused with UNSUPPORTED. */
    return GFP_SUPPORT_STRIDED; /* any strides: element i is the i-th in row-major order */
}

gfp_status ref_random_launch(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                             const gfp_tensor *const *out, uint32_t n_out, const void *params) {
    const gfp_random_params *p = params;
    const gfp_tensor *y = out[0];
    gfp_status st = pk_check_random(params, y, REF_DT_FLOAT);
    if (st != GFP_OK) return st;
    bool is_f32 = y->dtype != GFP_F64; /* f32, f16, bf16: 24 random bits */
    if (pk_numel(y) == 0) return GFP_OK;

    uint32_t k0 = (uint32_t)p->seed, k1 = (uint32_t)(p->seed >> 32);
    int64_t idx[GFP_MAX_RANK] = {0};
    uint64_t i = 0;
    do {
        uint64_t c = p->offset + i++; /* wraps modulo 2^64 */
        uint32_t r[4] = {(uint32_t)c, (uint32_t)(c >> 32), 0, 0};
        pk_philox4x32_10(r, k0, k1);
        int64_t off = ref_offset(y, idx);
        double v;
        switch (p->kind) {
        case GFP_RANDOM_UNIFORM:
            v = p->a + (p->b - p->a) * (is_f32 ? pk_u24(r[0]) : pk_u53(r[0], r[1]));
            break;
        case GFP_RANDOM_NORMAL: {
            /* Box-Muller; u1 in (0, 1] keeps the log finite. */
            double u1 = 1.0 - (is_f32 ? pk_u24(r[0]) : pk_u53(r[0], r[1]));
            double u2 = is_f32 ? pk_u24(r[1]) : pk_u53(r[2], r[3]);
            v = p->a + p->b * sqrt(-2.0 * log(u1)) * cos(TWO_PI * u2);
            break;
        }
        default:
            ref_store_i64(y, off, pk_u24(r[0]) < p->a ? 1 : 0);
            continue;
        }
        ref_store(y, off, v); /* f32: computed in double, rounded once */
    } while (ref_next_index(idx, y->sizes, y->rank));
    return GFP_OK;
}
