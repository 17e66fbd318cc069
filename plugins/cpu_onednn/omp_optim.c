/* SPDX-License-Identifier: BSD-3-Clause */
/* omp_optim.c — ADAM_UPDATE as one pass over memory: read p, g, m, v and
 * write p, m, v once per element, where the composed update makes about 35
 * passes (measured: Adam took 41% of an MLP training step before this).
 *
 * The arithmetic is the reference's (ref_optim.c), operation for operation,
 * in the tensors' dtype; ISO C mode contracts no multiply-add, and the
 * vector division and square root are correctly rounded, so the results are
 * the reference's bit for bit. Taken: contiguous tensors, each output either
 * the very tensor of its input (the core's case: in place) or in a buffer of
 * its own; anything else (strides, partial overlaps) goes to the reference. */
#include <math.h>
#include <omp.h>

#include "onednn_internal.h"
#include "pk_adam.h"

/* The constants (plugins/common/pk_adam.h); the loops below spell its
 * element step out per decay mode, so that they have no branch. */
typedef pk_adam_consts adam_k;

/* The loops read p, g, m, v and write p, m, v through pointers that may be
 * the same (in place) or of distinct buffers (launch checks which): no
 * element's writes reach another element's reads, which is what ivdep
 * asserts, so the loops vectorise without runtime overlap checks. */
#if defined(__GNUC__) && !defined(__clang__)
#define ADAM_IVDEP _Pragma("GCC ivdep")
#else
#define ADAM_IVDEP
#endif

/* pin, g, min, vin -> pout, mout, vout over n elements, one step of the
 * formula per line: DECAY_P and DECAY_G are the decay of each mode. */
#define ADAM_LOOP(T, SQRT, DECAY_P, DECAY_G)                                              \
    ADAM_IVDEP                                                                            \
    for (int64_t i = 0; i < n; i++) {                                                     \
        T pi = DECAY_P(pin[i]);                                                           \
        T gi = DECAY_G(g[i], pin[i]);                                                     \
        T mi = min[i] * b1 + gi * c1;                                                     \
        T vi = vin[i] * b2 + (gi * gi) * c2;                                              \
        pout[i] = pi - (mi / (SQRT(vi) / s2 + eps)) * step;                               \
        mout[i] = mi;                                                                     \
        vout[i] = vi;                                                                     \
    }
#define ADAM_KEEP_P(p) (p)
#define ADAM_DECAY_P(p) ((p) * decay)
#define ADAM_KEEP_G(g, p) (g)
#define ADAM_L2_G(g, p) ((g) + (p) * decay)

/* One kernel per dtype, a loop per decay mode, so the loops have no branch. */
#define ADAM_KERNEL(NAME, T, SQRT)                                                        \
    ODN_CLONES static void NAME(const T *pin, const T *g, const T *min, const T *vin,     \
                                T *pout, T *mout, T *vout, int64_t n, const adam_k *k) {  \
        const T decay = (T)k->decay, b1 = (T)k->beta1, c1 = (T)k->one_minus_beta1;        \
        const T b2 = (T)k->beta2, c2 = (T)k->one_minus_beta2, s2 = (T)k->bc2_sqrt;        \
        const T eps = (T)k->eps, step = (T)k->step_size;                                  \
        if (k->mode == PK_ADAM_NO_DECAY) {                                                \
            ADAM_LOOP(T, SQRT, ADAM_KEEP_P, ADAM_KEEP_G)                                  \
        } else if (k->mode == PK_ADAM_L2) {                                               \
            ADAM_LOOP(T, SQRT, ADAM_KEEP_P, ADAM_L2_G)                                    \
        } else {                                                                          \
            ADAM_LOOP(T, SQRT, ADAM_DECAY_P, ADAM_KEEP_G)                                 \
        }                                                                                 \
    }
ADAM_KERNEL(adam_f32, float, sqrtf)
ADAM_KERNEL(adam_f64, double, sqrt)
#undef ADAM_KERNEL

/* out is exactly in (in place), or in a buffer no input or other output
 * uses: the two cases the loops above are written for. */
static bool writable_as(const gfp_tensor *const *in, const gfp_tensor *const *out, int o,
                        int alias) {
    const gfp_tensor *t = out[o];
    if (t->dtype != in[0]->dtype || !pk_same_shape(t, in[0]) || !pk_is_contiguous(t))
        return false;
    if (t->buffer == in[alias]->buffer && t->offset == in[alias]->offset) return true;
    for (int i = 0; i < 4; i++)
        if (t->buffer == in[i]->buffer) return false;
    for (int j = 0; j < 3; j++)
        if (j != o && t->buffer == out[j]->buffer) return false;
    return true;
}

static gfp_status adam_launch(const gfp_tensor *const *in, uint32_t n_in,
                              const gfp_tensor *const *out, uint32_t n_out, const void *params) {
    if (n_in != 4 || n_out != 3 || !params) return ODN_FALLBACK;
    const gfp_adam_params *a = params;
    if (a->struct_size < GFP_ADAM_PARAMS_SIZE_V1_3) return ODN_FALLBACK;
    int32_t dt = in[0]->dtype;
    if (dt != GFP_F32 && dt != GFP_F64) return ODN_FALLBACK;
    for (int i = 0; i < 4; i++)
        if (!in[i] || in[i]->dtype != dt || !pk_is_contiguous(in[i]) ||
            !pk_same_shape(in[i], in[0]))
            return ODN_FALLBACK;
    static const int alias_of[3] = {0, 2, 3}; /* outputs p, m, v */
    for (int o = 0; o < 3; o++)
        if (!writable_as(in, out, o, alias_of[o])) return ODN_FALLBACK;

    const adam_k k = pk_adam_consts_of(a);
    int64_t n = pk_numel(in[0]);
    if (n == 0) return GFP_OK;
    char *base[7];
    for (int i = 0; i < 7; i++) {
        const gfp_tensor *t = i < 4 ? in[i] : out[i - 4];
        base[i] = (char *)t->buffer + t->offset;
    }
    size_t es = pk_dtype_size(dt);
    /* A division and a square root per element: weigh it as a few copies. */
    int nt = odn_threads(n * 4);
    ODN_PARALLEL(nt, t, tn, {
        /* Chunks start on a 64-byte line, so no two threads share one. */
        int64_t align = 64 / (int64_t)es;
        int64_t lo = n / tn * t / align * align;
        int64_t hi = t + 1 == tn ? n : n / tn * (t + 1) / align * align;
        if (hi > lo) {
            size_t off = (size_t)lo * es;
            char *b[7];
            for (int i = 0; i < 7; i++) b[i] = base[i] + off;
            if (dt == GFP_F32)
                adam_f32((const float *)b[0], (const float *)b[1], (const float *)b[2],
                         (const float *)b[3], (float *)b[4], (float *)b[5], (float *)b[6],
                         hi - lo, &k);
            else
                adam_f64((const double *)b[0], (const double *)b[1], (const double *)b[2],
                         (const double *)b[3], (double *)b[4], (double *)b[5], (double *)b[6],
                         hi - lo, &k);
        }
    });
    return GFP_OK;
}

gfp_status odn_optim_launch(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                            const gfp_tensor *const *out, uint32_t n_out, const void *params) {
    if (op == GFP_OP_ADAM_UPDATE) return adam_launch(in, n_in, out, n_out, params);
    return ODN_FALLBACK;
}
