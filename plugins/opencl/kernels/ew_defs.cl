/* SPDX-License-Identifier: BSD-3-Clause */
/* ew_defs.cl — how ew_math.cl instantiates an op: each macro defines the
 * element function KN##_el (what one element of the op computes, from the
 * generated formula FN of op_math.cl) and the kernels of common.cl's three
 * forms around it. A captured graph's fused runs (ocl_fuse.c) instantiate
 * the element functions they call through these macros too, with the
 * kernel macros emptied: the same functions as the eager kernels'. */

#define GF_UNARY(KN, FN, DT, T, CTYPE)                                                     \
    T KN##_el(T x, CTYPE pa, CTYPE pb, int flags) {                                        \
        return GF_NARROW_##DT(FN((CTYPE)x, pa, pb, flags & 1, (flags >> 1) & 1));          \
    }                                                                                      \
    GF_EW2(KN, T, T, (, CTYPE pa, CTYPE pb, int flags), (, pa, pb, flags))

#define GF_BINARY(KN, FN, DT, T, CTYPE)                                                    \
    T KN##_el(T a, T b) { return GF_NARROW_##DT(FN((CTYPE)a, (CTYPE)b)); }                \
    GF_EW3(KN, T, T, T, (), ())

/* LOAD widens a stored element to the compute type of the comparison. */
#define GF_LOAD_f32(v) (v)
#define GF_LOAD_f64(v) (v)
#define GF_LOAD_i32(v) ((long)(v))
#define GF_LOAD_i64(v) (v)
#define GF_LOAD_b8(v) ((long)((v) != 0))
#define GF_LOAD_f16(v) gf_h2f(v)
#define GF_LOAD_bf16(v) gf_b2f(v)
#define GF_COMPARE(KN, FN, DT, T)                                                          \
    uchar KN##_el(T a, T b) { return FN(GF_LOAD_##DT(a), GF_LOAD_##DT(b)) != 0; }          \
    GF_EW3(KN, uchar, T, T, (), ())

#define GF_TRUTH(v, mask) ((((ulong)(v)) & (mask)) != 0)
#define GF_LOGICAL1(KN, FN, TA)                                                            \
    uchar KN##_el(TA x, ulong mx) { return FN(GF_TRUTH(x, mx)) != 0; }                     \
    GF_EW2(KN, uchar, TA, (, ulong mx), (, mx))
#define GF_LOGICAL2(KN, FN, TA, TB)                                                        \
    uchar KN##_el(TA a, TB b, ulong ma, ulong mb) {                                        \
        return FN(GF_TRUTH(a, ma), GF_TRUTH(b, mb)) != 0;                                  \
    }                                                                                      \
    GF_EW3(KN, uchar, TA, TB, (, ulong ma, ulong mb), (, ma, mb))
