/* SPDX-License-Identifier: BSD-3-Clause */
#version 450
// graft: bindings 10
// graft: parts 3
// A run of a captured graph's f32 unary and binary launches in one dispatch
// (vk_fuse.c): each invocation runs every step of the run, in order, on its
// elements. A step reads its operands from the bindings (what an earlier
// step wrote at the same element, this invocation wrote) and writes its
// output there too, so every tensor ends as the eager launches leave it.
// The formulas are op_math.glsl's, as in ew_unary.comp and ew_binary.comp.
// Each step's op and bindings are a specialisation constant, so that the
// driver compiles the run's formulas alone: with the op a runtime value,
// llvmpipe ran every formula of the switch on every element (masked SIMD),
// 100 times slower than the eager launches on large tensors.
// Constants: 0 local size, 1 steps (bits 0-7; bit 8: every contiguous
// operand starts at a multiple of 4 elements, so the body goes by vec4
// loads and stores, as the eager shaders do: llvmpipe gathers scalar
// loads lane by lane), 2 + k step k's code (k < 8):
//   bits 0-7 op, 8-11 output binding, 12-15 a binding, 16-19 b binding,
//   bit 20 a contiguous (else one element broadcast), 21 b contiguous,
//   22 binary.
// Params (words): 0 n, 1 zero (see opaque), then FUSE_WORDS a step at
//   2 + FUSE_WORDS k: +0 output offset,
//   +1 a offset, +2 b offset, +3 pa (f32 bits), +4 pb (f32 bits),
//   +5 flags (bit 0 has pa, bit 1 has pb: clamp's bounds).
// Built in three sizes (the "parts" of the build, here not a division of
// the ops): part k holds runs of up to FUSE_N = 2 << k steps. A pipeline is
// compiled for every distinct run, and lavapipe compiles the steps' code
// whether the run uses them or not: a 16-step build took 0.55 s for any
// run. Per run, lavapipe here: 2 steps 49 ms, 4 132 ms, 8 about 260 ms (16
// took 0.8 s: runs stop at 8).
#ifdef GF_PART
#if GF_PART == 0
#define FUSE_N 2
#elif GF_PART == 1
#define FUSE_N 4
#else
#define FUSE_N 8
#endif
#undef GF_PARTS
#undef GF_PART
#else
#define FUSE_N 8
#endif
#include "common.glsl"
#include "ops.glsl"
#include "op_math.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint STEPS_V4 = 1u;
const uint STEPS = STEPS_V4 & 255u;
const bool V4 = (STEPS_V4 & 256u) != 0u;
layout(constant_id = 2) const uint C0 = 0u;
layout(constant_id = 3) const uint C1 = 0u;
layout(constant_id = 4) const uint C2 = 0u;
layout(constant_id = 5) const uint C3 = 0u;
layout(constant_id = 6) const uint C4 = 0u;
layout(constant_id = 7) const uint C5 = 0u;
layout(constant_id = 8) const uint C6 = 0u;
layout(constant_id = 9) const uint C7 = 0u;
#define FUSE_WORDS 6u

// A step's result made opaque to the compiler (xor with a params word that
// is always 0): otherwise, once the store and the next step's load of the
// same element are forwarded, the driver may contract the last multiply of
// one formula with an add of the next into an fma, which the eager
// launches (a dispatch each, through memory) never do, and the bits differ.
float opaque(float y) { return uintBitsToFloat(floatBitsToUint(y) ^ P.w[1]); }
vec4 opaque4(vec4 y) { return uintBitsToFloat(floatBitsToUint(y) ^ uvec4(P.w[1])); }

layout(std430, set = 0, binding = 1) buffer B1_ { float b1[]; };
layout(std430, set = 0, binding = 2) buffer B2_ { float b2[]; };
layout(std430, set = 0, binding = 3) buffer B3_ { float b3[]; };
layout(std430, set = 0, binding = 4) buffer B4_ { float b4[]; };
layout(std430, set = 0, binding = 5) buffer B5_ { float b5[]; };
layout(std430, set = 0, binding = 6) buffer B6_ { float b6[]; };
layout(std430, set = 0, binding = 7) buffer B7_ { float b7[]; };
layout(std430, set = 0, binding = 8) buffer B8_ { float b8[]; };
layout(std430, set = 0, binding = 9) buffer B9_ { float b9[]; };

layout(std430, set = 0, binding = 1) buffer V1_ { vec4 v1[]; };
layout(std430, set = 0, binding = 2) buffer V2_ { vec4 v2[]; };
layout(std430, set = 0, binding = 3) buffer V3_ { vec4 v3[]; };
layout(std430, set = 0, binding = 4) buffer V4_ { vec4 v4[]; };
layout(std430, set = 0, binding = 5) buffer V5_ { vec4 v5[]; };
layout(std430, set = 0, binding = 6) buffer V6_ { vec4 v6[]; };
layout(std430, set = 0, binding = 7) buffer V7_ { vec4 v7[]; };
layout(std430, set = 0, binding = 8) buffer V8_ { vec4 v8[]; };
layout(std430, set = 0, binding = 9) buffer V9_ { vec4 v9[]; };

vec4 ld4(uint s, uint i) {
    switch (s) {
    case 1u: return v1[i];
    case 2u: return v2[i];
    case 3u: return v3[i];
    case 4u: return v4[i];
    case 5u: return v5[i];
    case 6u: return v6[i];
    case 7u: return v7[i];
    case 8u: return v8[i];
    default: return v9[i];
    }
}

void st4(uint s, uint i, vec4 v) {
    switch (s) {
    case 1u: v1[i] = v; break;
    case 2u: v2[i] = v; break;
    case 3u: v3[i] = v; break;
    case 4u: v4[i] = v; break;
    case 5u: v5[i] = v; break;
    case 6u: v6[i] = v; break;
    case 7u: v7[i] = v; break;
    case 8u: v8[i] = v; break;
    default: v9[i] = v; break;
    }
}

float ld(uint s, uint i) {
    switch (s) {
    case 1u: return b1[i];
    case 2u: return b2[i];
    case 3u: return b3[i];
    case 4u: return b4[i];
    case 5u: return b5[i];
    case 6u: return b6[i];
    case 7u: return b7[i];
    case 8u: return b8[i];
    default: return b9[i];
    }
}

void st(uint s, uint i, float v) {
    switch (s) {
    case 1u: b1[i] = v; break;
    case 2u: b2[i] = v; break;
    case 3u: b3[i] = v; break;
    case 4u: b4[i] = v; break;
    case 5u: b5[i] = v; break;
    case 6u: b6[i] = v; break;
    case 7u: b7[i] = v; break;
    case 8u: b8[i] = v; break;
    default: b9[i] = v; break;
    }
}

// Step k (code c): run_quad on the four elements 4 j .. 4 j + 3 by vec4
// loads and stores (V4: every contiguous operand 4-aligned), run_one on
// element e (the rest). Each has one call site of the formula (run_quad's
// lane loop): the driver inlines it once per site, folds its switch on the
// constant op, then unrolls the loop. With a call per lane, lavapipe took
// seconds to compile a run; with a single site shared by both paths (a
// runtime choice between vec4 and lane-by-lane access per quad) the large
// chains ran 1.5x slower.
float f4(uint c, uint q, float a, float b) {
    uint f = P.w[q + 5u];
    return (c & (1u << 22)) != 0u ? gf_binary_f32(c & 255u, a, b)
                                  : gf_unary_f32(c & 255u, a, pwf(q + 3u), pwf(q + 4u),
                                                 (f & 1u) != 0u, (f & 2u) != 0u);
}

void run_quad(uint c, uint k, uint j) {
    uint q = 2u + k * FUSE_WORDS;
    uint as = (c >> 12) & 15u, bs = (c >> 16) & 15u;
    vec4 a = (c & (1u << 20)) != 0u ? ld4(as, P.w[q + 1u] / 4u + j) : vec4(ld(as, P.w[q + 1u]));
    vec4 b = vec4(0.0);
    if ((c & (1u << 22)) != 0u)
        b = (c & (1u << 21)) != 0u ? ld4(bs, P.w[q + 2u] / 4u + j) : vec4(ld(bs, P.w[q + 2u]));
    vec4 y;
    for (uint l = 0u; l < 4u; l++) y[l] = f4(c, q, a[l], b[l]);
    st4((c >> 8) & 15u, P.w[q] / 4u + j, opaque4(y));
}

void run_one(uint c, uint k, uint e) {
    uint q = 2u + k * FUSE_WORDS;
    float a = ld((c >> 12) & 15u, P.w[q + 1u] + ((c & (1u << 20)) != 0u ? e : 0u));
    float b = 0.0;
    if ((c & (1u << 22)) != 0u)
        b = ld((c >> 16) & 15u, P.w[q + 2u] + ((c & (1u << 21)) != 0u ? e : 0u));
    st((c >> 8) & 15u, P.w[q] + e, opaque(f4(c, q, a, b)));
}

#if FUSE_N > 4
#define STEPS_FROM_4(RUN, i)                                                        \
    if (STEPS > 4u) RUN(C4, 4u, i);                                                 \
    if (STEPS > 5u) RUN(C5, 5u, i);                                                 \
    if (STEPS > 6u) RUN(C6, 6u, i);                                                 \
    if (STEPS > 7u) RUN(C7, 7u, i);
#else
#define STEPS_FROM_4(RUN, i)
#endif
#if FUSE_N > 2
#define STEPS_FROM_2(RUN, i)                                                        \
    if (STEPS > 2u) RUN(C2, 2u, i);                                                 \
    if (STEPS > 3u) RUN(C3, 3u, i);                                                 \
    STEPS_FROM_4(RUN, i)
#else
#define STEPS_FROM_2(RUN, i)
#endif
#define ALL_STEPS(RUN, i)                                                           \
    if (STEPS > 0u) RUN(C0, 0u, i);                                                 \
    if (STEPS > 1u) RUN(C1, 1u, i);                                                 \
    STEPS_FROM_2(RUN, i)

void main() {
    uint n = P.w[0], n4 = V4 ? n / 4u : 0u;
    FOR_EACH_ITEM(j, n4) { ALL_STEPS(run_quad, j) }
    FOR_EACH_ITEM(t, n - n4 * 4u) {
        uint e = n4 * 4u + t;
        ALL_STEPS(run_one, e)
    }
}
