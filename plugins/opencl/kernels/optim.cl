/* SPDX-License-Identifier: BSD-3-Clause */
/* optim.cl — ADAM_UPDATE over contiguous tensors: p, g, m, v in, p, m, v out
 * (each its buffer and element offset). The element step is pk_adam.h's
 * PK_ADAM_ELEMENT (embedded before this file), the arithmetic every plugin
 * shares; the host forms the constants in double and passes them rounded
 * once to the dtype, as pk_adam_consts_of and the casts of the C plugins
 * do. With common.cl's FP_CONTRACT OFF and the device's correctly rounded
 * division and square root (the build option where the device has them,
 * which the composed path's kernels use too), the op equals the update
 * composed of elementwise ops bit for bit. */

#define GF_ADAM_KERNEL(NAME, T)                                                            \
    typedef struct NAME##_consts {                                                         \
        T decay, beta1, one_minus_beta1, beta2, one_minus_beta2, bc2_sqrt, eps, step_size;  \
        int mode;                                                                          \
    } NAME##_consts;                                                                       \
    __kernel void NAME(__global T *p, long op, __global const T *g, long og,               \
                       __global T *m, long om, __global T *v, long ov, __global T *po,      \
                       long opo, __global T *mo, long omo, __global T *vo, long ovo,       \
                       long n, int mode, T decay, T beta1, T omb1, T beta2, T omb2,        \
                       T bc2_sqrt, T eps, T step_size) {                                   \
        long i = get_global_id(0);                                                         \
        if (i >= n) return;                                                                \
        NAME##_consts c = {decay, beta1, omb1, beta2, omb2, bc2_sqrt, eps, step_size, mode}; \
        T pp = p[op + i], gg = g[og + i], mm = m[om + i], vv = v[ov + i];                  \
        PK_ADAM_ELEMENT(T, sqrt, c, pp, gg, mm, vv);                                       \
        po[opo + i] = pp;                                                                  \
        mo[omo + i] = mm;                                                                  \
        vo[ovo + i] = vv;                                                                  \
    }

GF_ADAM_KERNEL(adam_update_f32, float)
#if GF_HAS_FP64
GF_ADAM_KERNEL(adam_update_f64, double)
#endif
