/* SPDX-License-Identifier: BSD-3-Clause */
#version 450
// graft: bindings 4
// 2-D max and average pooling and their gradients (NCHW), as the reference
// (plugins/reference/ref_pool.c). Params (vk_ops_conv.c):
//   0 items  1..16 n c h w ho wo kh kw sh sw ph pw dh dw ceil include_pad
//   17..28 strides [4] of the tensors at bindings 1, 2, 3
//   29..31 their element offsets  32 window known (max pool backward)
//   33 segment length  34 segments per row  35 max pool backward by planes
// An invocation per segment of a row (of outputs for the forward ops, of
// inputs for the backward ones): divisions once per segment.
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint OP = 163u;
layout(constant_id = 2) const uint DT = 0u;
TENSOR(1, o)
TENSOR(2, i1)
TENSOR(3, i2)
#define G(k) P.w[1u + (k)]
uint AT(uint t, uint a, uint b, uint c, uint d) {
    uint s = 17u + 4u * t;
    return P.w[29u + t] + a * P.w[s] + b * P.w[s + 1u] + c * P.w[s + 2u] + d * P.w[s + 3u];
}

// Output (oh, ow)'s window clipped to the real input and its divisor; 0 when
// the window holds no real element (ceil-mode windows clip at the padded edge).
int avg_window(int oh, int ow, out int h0, out int h1, out int w0, out int w1) {
    int H = int(G(2)), W = int(G(3)), KH = int(G(6)), KW = int(G(7));
    int hs = oh * int(G(8)) - int(G(10)), ws = ow * int(G(9)) - int(G(11));
    int he = min(hs + KH, H + int(G(10))), we = min(ws + KW, W + int(G(11)));
    int padded = (he - hs) * (we - ws);
    hs = max(hs, 0);
    ws = max(ws, 0);
    he = min(he, H);
    we = min(we, W);
    h0 = hs; h1 = he; w0 = ws; w1 = we;
    if (hs >= he || ws >= we) return 0;
    return G(15) != 0u ? padded : (he - hs) * (we - ws);
}

#define FT float
#define FN(n) n##_f32
#define L(t, i) t##_f32[i]
#define S(t, i, v) t##_f32[i] = (v)
#include "pool_body.glsl"
#undef FT
#undef FN
#undef L
#undef S
#if GF_F64
#define FT double
#define FN(n) n##_f64
#define L(t, i) t##_f64[i]
#define S(t, i, v) t##_f64[i] = (v)
#include "pool_body.glsl"
#endif

void main() {
    if (OP == 164u && P.w[35] != 0u) { // max pool backward, a plane per invocation
        FOR_EACH_ITEM(pl, P.w[0]) {
            if (DT == DT_F32) pool_scatter_f32(pl / G(1), pl % G(1));
            IF_F64(else pool_scatter_f64(pl / G(1), pl % G(1));)
        }
        return;
    }
    bool fwd = OP == 163u || OP == 165u;
    uint R = fwd ? G(4) : G(2), Q = fwd ? G(5) : G(3), seg = P.w[33], segs = P.w[34];
    FOR_EACH_ITEM(it, P.w[0]) {
        uint s = it % segs, row = it / segs;
        uint r = row % R, c = (row / R) % G(1), n = row / (R * G(1));
        uint q1 = min(Q, (s + 1u) * seg);
        for (uint q = s * seg; q < q1; q++) {
            if (DT == DT_F32) pool_f32(n, c, r, q);
            IF_F64(else pool_f64(n, c, r, q);)
        }
    }
}
