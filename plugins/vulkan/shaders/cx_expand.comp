/* SPDX-License-Identifier: BSD-3-Clause */
#version 450
// graft: bindings 3
// The operand of the complex MATMUL's real GEMM (vk_complex.c): b
// [.., k, n] (complex, any strides) becomes the real [.., 2k, 2n] matrix e
// (contiguous, the part dtype) with, for each (q, j) and b = br + i bi,
//   e[2q][2j] = br     e[2q][2j+1] = bi
//   e[2q+1][2j] = -bi  e[2q+1][2j+1] = br
// so that a read as the real [m, 2k] matrix (re, im interleaved) times e is
// y read as the real [m, 2n] one. Params (words): 0 items (batches k n),
// 1 k, 2 n, 3 b offset, 4 e offset, 5 b row stride, 6 b column stride,
// 7 batch rank, 8.. batch sizes, 16.. b's batch strides.
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint DT = 7u;
#define DT_C128 8u
layout(std430, set = 0, binding = 1) writeonly buffer EF32_ { float e_f32[]; };
layout(std430, set = 0, binding = 2) readonly buffer BC64_ { vec2 b_c64[]; };
#if GF_F64
layout(std430, set = 0, binding = 1) writeonly buffer EF64_ { double e_f64[]; };
layout(std430, set = 0, binding = 2) readonly buffer BC128_ { dvec2 b_c128[]; };
#endif

void main() {
    uint k = P.w[1], n = P.w[2], brank = P.w[7];
    FOR_EACH_ITEM(g, P.w[0]) {
        uint j = g % n, q = (g / n) % k, bt = g / (n * k);
        uint ob = P.w[3] + q * P.w[5] + j * P.w[6], idx = bt;
        [[unroll]] for (int d = 7; d >= 0; d--) {
            if (uint(d) < brank) {
                uint s = P.w[8u + uint(d)];
                ob += (idx % s) * P.w[16u + uint(d)];
                idx /= s;
            }
        }
        uint row = P.w[4] + (bt * 2u * k + 2u * q) * 2u * n + 2u * j;
#if GF_F64
        if (DT == DT_C128) {
            dvec2 v = b_c128[ob];
            e_f64[row] = v.x;
            e_f64[row + 1u] = v.y;
            e_f64[row + 2u * n] = -v.y;
            e_f64[row + 2u * n + 1u] = v.x;
            continue;
        }
#endif
        vec2 v = b_c64[ob];
        e_f32[row] = v.x;
        e_f32[row + 1u] = v.y;
        e_f32[row + 2u * n] = -v.y;
        e_f32[row + 2u * n + 1u] = v.x;
    }
}
