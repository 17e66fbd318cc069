/* SPDX-License-Identifier: BSD-3-Clause */
/* random.cl — GFP_OP_RANDOM: Philox4x32-10, exactly as abi/graft_plugin.h
 * defines it, so every device draws the reference plugin's numbers.
 *
 * Element i (row-major order of the output, whatever its strides) takes the
 * counter offset + i. Uniform and normal values are computed in double and
 * rounded once (devices without doubles draw them on the host instead).
 * Bernoulli needs no floating point: u24(r0) < p is (r0 >> 8) < thresh with
 * thresh = ceil(p * 2^24) clamped to [0, 2^24], computed by the host. */
#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

uint4 gf_philox(ulong c, uint k0, uint k1) {
    uint x0 = (uint)c, x1 = (uint)(c >> 32), x2 = 0, x3 = 0;
    for (int round = 0; round < 10; round++) {
        uint hi0 = mul_hi(PHILOX_M0, x0), lo0 = PHILOX_M0 * x0;
        uint hi1 = mul_hi(PHILOX_M1, x2), lo1 = PHILOX_M1 * x2;
        uint n0 = hi1 ^ x1 ^ k0, n2 = hi0 ^ x3 ^ k1;
        x0 = n0;
        x1 = lo1;
        x2 = n2;
        x3 = lo0;
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
    return (uint4)(x0, x1, x2, x3);
}

#define GF_RANDOM_BEGIN                                                              \
    long i = get_global_id(0);                                                       \
    if (i >= n) return;                                                              \
    uint4 r = gf_philox(offset + (ulong)i, (uint)seed, (uint)(seed >> 32));          \
    long at = oy + gf_line_offset(i, sizes, strides, rank);

#define GF_RANDOM_ARGS(T) \
    __global T *y, long oy, long8 sizes, long8 strides, int rank, long n, ulong seed, ulong offset

#define GF_BERNOULLI(DT, T)                                                          \
    __kernel void random_bernoulli_##DT(GF_RANDOM_ARGS(T), uint thresh) {            \
        GF_RANDOM_BEGIN                                                              \
        y[at] = (r.x >> 8) < thresh ? (T)1 : (T)0;                                   \
    }
GF_BERNOULLI(f32, float)
GF_BERNOULLI(i32, int)
GF_BERNOULLI(i64, long)
GF_BERNOULLI(b8, uchar)
/* f16 and bf16 (16-bit patterns): 1 is 0x3c00 and 0x3f80. */
#define GF_BERNOULLI_HALF(DT, ONE)                                                   \
    __kernel void random_bernoulli_##DT(GF_RANDOM_ARGS(ushort), uint thresh) {       \
        GF_RANDOM_BEGIN                                                              \
        y[at] = (r.x >> 8) < thresh ? (ushort)(ONE) : (ushort)0;                     \
    }
GF_BERNOULLI_HALF(f16, 0x3c00)
GF_BERNOULLI_HALF(bf16, 0x3f80)

#if GF_HAS_FP64
GF_BERNOULLI(f64, double)

double gf_u24(uint w) { return (double)(w >> 8) * 0x1p-24; }
double gf_u53(uint w, uint v) { return (double)((ulong)(w >> 5) * 67108864ul + (v >> 6)) * 0x1p-53; }
#define GF_TWO_PI 6.28318530717958647692

__kernel void random_uniform_f32(GF_RANDOM_ARGS(float), double a, double b) {
    GF_RANDOM_BEGIN
    y[at] = (float)(a + (b - a) * gf_u24(r.x));
}
__kernel void random_uniform_f64(GF_RANDOM_ARGS(double), double a, double b) {
    GF_RANDOM_BEGIN
    y[at] = a + (b - a) * gf_u53(r.x, r.y);
}
/* Box-Muller; u1 in (0, 1] keeps the log finite. */
__kernel void random_normal_f32(GF_RANDOM_ARGS(float), double a, double b) {
    GF_RANDOM_BEGIN
    double u1 = 1.0 - gf_u24(r.x), u2 = gf_u24(r.y);
    y[at] = (float)(a + b * sqrt(-2.0 * log(u1)) * cos(GF_TWO_PI * u2));
}
/* f16 and bf16 draw as f32 does (24 random bits), computed in double and
 * rounded once (common.cl's gf_d2h / gf_d2b), as the reference. */
#define GF_RANDOM_HALF(DT, ROUND)                                                    \
    __kernel void random_uniform_##DT(GF_RANDOM_ARGS(ushort), double a, double b) {  \
        GF_RANDOM_BEGIN                                                              \
        y[at] = ROUND(a + (b - a) * gf_u24(r.x));                                    \
    }                                                                                \
    __kernel void random_normal_##DT(GF_RANDOM_ARGS(ushort), double a, double b) {   \
        GF_RANDOM_BEGIN                                                              \
        double u1 = 1.0 - gf_u24(r.x), u2 = gf_u24(r.y);                             \
        y[at] = ROUND(a + b * sqrt(-2.0 * log(u1)) * cos(GF_TWO_PI * u2));           \
    }
GF_RANDOM_HALF(f16, gf_d2h)
GF_RANDOM_HALF(bf16, gf_d2b)
__kernel void random_normal_f64(GF_RANDOM_ARGS(double), double a, double b) {
    GF_RANDOM_BEGIN
    double u1 = 1.0 - gf_u53(r.x, r.y), u2 = gf_u53(r.z, r.w);
    y[at] = a + b * sqrt(-2.0 * log(u1)) * cos(GF_TWO_PI * u2);
}
#endif
