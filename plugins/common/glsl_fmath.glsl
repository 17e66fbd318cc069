/* SPDX-License-Identifier: BSD-3-Clause */
// glsl_fmath.glsl — f32 exp, log, sin and cos within 1 ulp, for the shaders.
// The GLSL built-ins are not: Vulkan allows exp and log about 3 ulp (or an
// absolute error near 1, where log's relative error is unbounded), sin and
// cos an absolute error of 2^-11 on [-pi, pi] only. Measured on lavapipe:
// exp 3.0 ulp, log 2.1e5 ulp near 1, sin and cos 1.5 ulp after an exact
// argument reduction (tests/vulkan/test_vulkan_ulp.c has the sweeps).
// Plain f32 and 32/64-bit integer arithmetic (GL_EXT_shader_explicit_
// arithmetic_types_int64), no f64: GPUs without fast f64 get the same
// results. No fma either (Vulkan lets an fma round twice): the constants are
// split so that the products that must be exact are. Temporaries are
// `precise`: no contraction into fma, no reassociation.
// Exhaustive checks of a C transcription over all f32: exp 0.65 ulp (0.77
// where the result is subnormal), log 0.84, sin 0.82, cos 0.82.
// A device that flushes subnormals (lavapipe does) flushes them here too.

// exp(x) = 2^n exp(r): n = rint(x / ln2), r = x - n ln2 in two floats from a
// three-part ln2 (L1 and L2 have 16 significant bits, so n L1 and n L2 are
// exact for |n| <= 150), exp(r) = 1 + r + r^2 P(r) (P: Cephes expf's, within
// 2^-29.7 on |r| <= ln2 / 2), and 2^n in two factors, so that the result
// rounds once even when it is subnormal.
float gf_exp(float x) {
    if (isnan(x)) return x;
    if (x > 88.8) return uintBitsToFloat(0x7f800000u);
    if (x < -104.0) return 0.0;
    const float L1 = 0.693145751953125, L2 = 1.4286197256296873e-06, L3 = -1.29053200418e-11;
    float n = roundEven(x * 1.44269504);
    precise float r1 = x - n * L1; // exact
    precise float p2 = n * L2;     // exact
    precise float rh = r1 - p2;
    precise float rl = ((r1 - rh) - p2) - n * L3;
    precise float p = 1.9875691500e-4;
    p = p * rh + 1.3981999507e-3;
    p = p * rh + 8.3334519073e-3;
    p = p * rh + 4.1665795894e-2;
    p = p * rh + 1.6666665459e-1;
    p = p * rh + 5.0000001201e-1;
    precise float c = rh * rh * p + (rl + rl * rh);
    precise float s1 = 1.0 + rh;
    precise float s0 = (1.0 - s1) + rh; // 1 + rh = s1 + s0 exactly
    precise float e = s1 + (s0 + c);
    int ni = int(n), n1 = ni / 2;
    return e * uintBitsToFloat(uint(n1 + 127) << 23) * uintBitsToFloat(uint(ni - n1 + 127) << 23);
}
vec4 gf_exp(vec4 x) { return vec4(gf_exp(x.x), gf_exp(x.y), gf_exp(x.z), gf_exp(x.w)); }

// log(x) = k ln2 + log(1 + f), 1 + f in [sqrt(2)/2, sqrt(2)): fdlibm's
// e_logf.c (s = f / (2 + f), log(1 + f) = f - f^2/2 + s (f^2/2 + R(s^2)),
// FreeBSD's degree-8 R), with ln2 in two parts.
float gf_log(float x) {
    if (isnan(x) || x < 0.0) return uintBitsToFloat(0x7fc00000u);
    if (x == 0.0) return -uintBitsToFloat(0x7f800000u);
    if (isinf(x)) return x;
    const float ln2_hi = 6.9313812256e-01, ln2_lo = 9.0580006145e-06;
    int k = 0;
    if (x < 1.17549435e-38) { // subnormal: scale up by 2^25
        x *= 33554432.0;
        k = -25;
    }
    uint ix = floatBitsToUint(x);
    k += int(ix >> 23) - 127;
    ix &= 0x007fffffu;
    uint i = (ix + 0x4afb20u) & 0x800000u; // 0x4afb20: the mantissa of sqrt(2)
    precise float f = uintBitsToFloat(ix | (i ^ 0x3f800000u)) - 1.0; // exact
    k += int(i >> 23);
    precise float dk = float(k);
    precise float s = f / (2.0 + f);
    precise float z = s * s;
    precise float w = z * z;
    precise float R = z * (0.66666662693 + w * 0.28498786688) + w * (0.40000972152 + w * 0.24279078841);
    precise float hfsq = 0.5 * f * f;
    precise float y = dk * ln2_hi - ((hfsq - (s * (hfsq + R) + dk * ln2_lo)) - f);
    return y;
}
vec4 gf_log(vec4 x) { return vec4(gf_log(x.x), gf_log(x.y), gf_log(x.z), gf_log(x.w)); }

// Argument reduction for sin and cos: x = q pi/2 + rh + rl, |rh + rl| <=
// pi/4, exact for every finite x (Payne-Hanek): x's 24-bit mantissa times
// the bits of 2/pi that matter at x's exponent, in 64-bit fixed point (2
// bits of quadrant, 62 of fraction), then that fraction times pi/2 in fixed
// point again (units of 2^-60), split into two floats. Since no f32 lies
// closer than about 2^-30 to a multiple of pi/2, 2^-60 leaves the remainder
// 30 bits beyond f32's.
const uint GF_2_OVER_PI[10] = uint[10](0x00000000u, 0x28be60dbu, 0x9391054au, 0x7f09d5f4u,
    0x7d4d3770u, 0x36d8a566u, 0x4f10e410u, 0x7f9458eau, 0xf7aef158u, 0x6dc91b8eu); // 2/pi / 4
float gf_reduce_pio2(float a, out float rl, out int quadrant) {
    int e;
    float m = frexp(a, e);
    uint ia = uint(abs(m) * 4294967296.0);
    uint i = uint(max(e, 0)) >> 5, sh = uint(max(e, 0)) & 31u;
    uint hi, mid, lo;
    if (sh != 0u) {
        hi = (GF_2_OVER_PI[i] << sh) | (GF_2_OVER_PI[i + 1u] >> (32u - sh));
        mid = (GF_2_OVER_PI[i + 1u] << sh) | (GF_2_OVER_PI[i + 2u] >> (32u - sh));
        lo = (GF_2_OVER_PI[i + 2u] << sh) | (GF_2_OVER_PI[i + 3u] >> (32u - sh));
    } else {
        hi = GF_2_OVER_PI[i];
        mid = GF_2_OVER_PI[i + 1u];
        lo = GF_2_OVER_PI[i + 2u];
    }
    uint64_t p = uint64_t(ia) * uint64_t(lo);
    p = uint64_t(ia) * uint64_t(mid) + (p >> 32);
    p = (uint64_t(ia * hi) << 32) + p;
    int q = int(p >> 62);
    p &= 0x3ffffffffffffffful;
    bool neg = (p & 0x2000000000000000ul) != 0ul; // fraction >= 1/2: the next quadrant, minus
    if (neg) {
        p = 0x4000000000000000ul - p;
        q += 1;
    }
    // |fraction| (< 2^61 units of 2^-62) times pi/2 * 2^62 = 0x6487ed5110b4611a, >> 64
    uint64_t a1 = p >> 32, a0 = p & 0xfffffffful;
    const uint64_t c1 = 0x6487ed51ul, c0 = 0x10b4611aul;
    uint64_t r = a1 * c1 + ((a1 * c0 + a0 * c1 + ((a0 * c0) >> 32)) >> 32);
    float h = float(r);
    // h as an integer from its bits (on lavapipe, uint64_t(h) gave r itself)
    uint hb = floatBitsToUint(h);
    uint64_t hv = h < 16777216.0 ? r : uint64_t((hb & 0x7fffffu) | 0x800000u) << ((hb >> 23) - 150u);
    float l = r >= hv ? float(r - hv) : -float(hv - r);
    const float two_m60 = 8.67361737988403547e-19;
    bool flip = neg != (a < 0.0);
    quadrant = a < 0.0 ? -q : q;
    rl = flip ? -l * two_m60 : l * two_m60;
    return flip ? -h * two_m60 : h * two_m60;
}

// sin(x + y) and cos(x + y) for |x + y| <= pi/4, y tiny: FreeBSD's
// k_sinf.c and k_cosf.c minimax polynomials (within 2^-37.5 and 2^-34.1),
// fdlibm's k_cos.c way of adding 1 - x^2/2.
float gf_ksin(float x, float y) {
    precise float z = x * x;
    precise float r = 0.0083333293858894631756 + z * (-0.000198393348360966317347 +
                                                      z * 0.0000027183114939898219064);
    precise float s = x + (x * z * (-0.166666666416265235595 + z * r) + y * (1.0 - 0.5 * z));
    return s;
}
float gf_kcos(float x, float y) {
    precise float z = x * x;
    precise float hz = 0.5 * z;
    precise float w = 1.0 - hz;
    precise float r = z * z * (0.0416666233237390631894 + z * (-0.00138867637746099294692 +
                                                              z * 0.0000243904487962774090654));
    // -0.49999999725 = -1/2 + 2.749e-9
    precise float c = w + (((1.0 - w) - hz) + (z * 2.748968997e-9 + r - x * y));
    return c;
}

float gf_sin(float x) {
    if (isnan(x) || isinf(x)) return isnan(x) ? x : uintBitsToFloat(0x7fc00000u);
    if (abs(x) < 0.785398) return gf_ksin(x, 0.0);
    int q;
    float rl, r = gf_reduce_pio2(x, rl, q);
    switch (q & 3) {
    case 0: return gf_ksin(r, rl);
    case 1: return gf_kcos(r, rl);
    case 2: return -gf_ksin(r, rl);
    default: return -gf_kcos(r, rl);
    }
}
float gf_cos(float x) {
    if (isnan(x) || isinf(x)) return isnan(x) ? x : uintBitsToFloat(0x7fc00000u);
    if (abs(x) < 0.785398) return gf_kcos(x, 0.0);
    int q;
    float rl, r = gf_reduce_pio2(x, rl, q);
    switch (q & 3) {
    case 0: return gf_kcos(r, rl);
    case 1: return -gf_ksin(r, rl);
    case 2: return -gf_kcos(r, rl);
    default: return gf_ksin(r, rl);
    }
}
