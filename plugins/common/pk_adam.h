/* SPDX-License-Identifier: BSD-3-Clause */
/* pk_adam.h — ADAM_UPDATE's arithmetic, written once for every plugin of the
 * tree (the reference's ref_optim.c, cpu_onednn's omp_optim.c, cuda's
 * kernels/cu_optim.cu, opencl's kernels/optim.cl, which embeds this file).
 * Valid C, CUDA C++ and, for the element step, OpenCL C.
 *
 * graft_ops.def defines the update: each constant formed in double from
 * gfp_adam_params and rounded once to the dtype, then, in the dtype, one
 * rounding per operation in the composed ops' order, so that the op equals
 * the composition it replaces bit for bit. No fused multiply-add: the C
 * plugins compile in ISO C mode (no contraction), the CUDA one with
 * --fmad=false. */
#ifndef GRAFT_PK_ADAM_H
#define GRAFT_PK_ADAM_H

#define PK_ADAM_NO_DECAY 0
#define PK_ADAM_L2 1        /* Adam: g = g + p * weight_decay */
#define PK_ADAM_DECOUPLED 2 /* AdamW: p = p * (1 - lr * weight_decay) */

#ifndef __OPENCL_VERSION__ /* the host's part: an OpenCL kernel gets the constants */
#include "graft_plugin.h"

/* The update's constants, in double, and which decay applies. */
typedef struct pk_adam_consts {
    double decay; /* L2: weight_decay; decoupled: 1 - lr * weight_decay */
    double beta1, one_minus_beta1, beta2, one_minus_beta2, bc2_sqrt, eps, step_size;
    int mode; /* PK_ADAM_NO_DECAY, PK_ADAM_L2, PK_ADAM_DECOUPLED */
} pk_adam_consts;

static inline pk_adam_consts pk_adam_consts_of(const gfp_adam_params *a) {
    int decoupled = (a->flags & GFP_ADAM_DECOUPLED_WEIGHT_DECAY) != 0;
    pk_adam_consts c;
    c.decay = decoupled ? 1.0 - a->lr * a->weight_decay : a->weight_decay;
    c.beta1 = a->beta1;
    c.one_minus_beta1 = 1.0 - a->beta1;
    c.beta2 = a->beta2;
    c.one_minus_beta2 = 1.0 - a->beta2;
    c.bc2_sqrt = a->bias_correction2_sqrt;
    c.eps = a->eps;
    c.step_size = a->lr / a->bias_correction1;
    c.mode = a->weight_decay == 0 ? PK_ADAM_NO_DECAY : decoupled ? PK_ADAM_DECOUPLED : PK_ADAM_L2;
    return c;
}
#endif

/* One element's step on the lvalues p, g, m, v of type T (read before this
 * runs, stored by the caller after): SQRT is T's correctly rounded square
 * root (sqrtf, sqrt). The decay is selected, not branched on: with an
 * if/else here PoCL ran the OpenCL kernel one element at a time (measured:
 * 12% of an MLP step on opencl:0, 9% vectorized). */
#define PK_ADAM_ELEMENT(T, SQRT, c, p, g, m, v)                                         \
    do {                                                                                \
        (p) = (c).mode == PK_ADAM_DECOUPLED ? (p) * (T)(c).decay : (p);                 \
        (g) = (c).mode == PK_ADAM_L2 ? (g) + (p) * (T)(c).decay : (g);                  \
        (m) = (m) * (T)(c).beta1 + (g) * (T)(c).one_minus_beta1;                        \
        (v) = (v) * (T)(c).beta2 + ((g) * (g)) * (T)(c).one_minus_beta2;                \
        (p) = (p) - ((m) / (SQRT(v) / (T)(c).bc2_sqrt + (T)(c).eps)) * (T)(c).step_size; \
    } while (0)

#endif
