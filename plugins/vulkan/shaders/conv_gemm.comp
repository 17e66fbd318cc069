/* SPDX-License-Identifier: BSD-3-Clause */
#version 450
// graft: bindings 3
// The data movement around the matmul that computes CONV2D and its
// gradients as GEMMs (vk_ops_conv_gemm.c), f32, NCHW, any strides, for a
// tile of images [n0, n0 + nb) and output positions [p0, p0 + pc) (p = oh *
// Wo + ow). K = Ci/groups * Kh * Kw, kk = (c * Kh + i) * Kw + j. MODE:
//   0 im2col:   o[((nl * G + g) * K + kk) * pc + pl] = x[n, g * Cig + c, ih, iw] (0 in the padding)
// Modes 0, 2, 3 and 4 run an invocation per row of output positions (a row
// is at most Wo long: the host keeps Wo within the device's loop budget).
//   1 col2im:   x[n, ci, ih, iw] (=, or += when ACC) = the sum of i1's im2col
//               entries that read it (gather form: no two invocations write one element)
//   2 bias:     y[n, co, oh, ow] += bias[co] (the tile's images and positions; where
//               the matmul did not add it)
//   3 pack dy:  o[(g * Cog + co) * (nb * pc) + nl * pc + pl] = dy[n, g * Cog + co, p]
//   4 im2colT:  o[(g * (nb * pc) + nl * pc + pl) * K + kk] = x[...] as in 0
// Params: 0 items  1..18 n ci co h w kh kw ho wo groups cig cog sh sw ph pw dh dw
//   19..22 X strides  23..26 -  27..30 Y strides  31 bias stride
//   32 n0  33 nb  34 p0  35 pc  36 o offset  37 i1 offset  38 ACC
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint MODE = 0u;
TENSOR(1, o)
TENSOR(2, i1)
#define G(k) P.w[1u + (k)]

uint x_at(uint n, uint c, uint h, uint w) {
    return n * P.w[19] + c * P.w[20] + h * P.w[21] + w * P.w[22];
}

void main() {
    uint items = P.w[0], n0 = P.w[32], nb = P.w[33], p0 = P.w[34], pc = P.w[35];
    uint oo = P.w[36], io = P.w[37];
    uint KH = G(5), KW = G(6), HO = G(7), WO = G(8), GR = G(9), CIG = G(10), COG = G(11);
    uint K = CIG * KH * KW;
    // Rows: the output rows (oh) the tile's positions [p0, p0 + pc) touch.
    uint r0 = p0 / WO, rows = (p0 + pc - 1u) / WO - r0 + 1u;
    FOR_EACH_ITEM(it, items) {
        if (MODE == 0u || MODE == 4u) {
            // An invocation per (image, group, kk, row): a run of positions,
            // divisions once per run.
            uint r = it % rows, q = it / rows;
            uint kk = q % K, g = (q / K) % GR, nl = q / (K * GR);
            uint oh = r0 + r;
            uint owa = oh * WO < p0 ? p0 - oh * WO : 0u, owb = min(WO, p0 + pc - oh * WO);
            uint j = kk % KW, i = (kk / KW) % KH, c = kk / (KW * KH);
            int ih = int(oh * G(12)) - int(G(14)) + int(i * G(16));
            int sw = int(G(13)), iw0 = int(j * G(17)) - int(G(15));
            bool row_in = ih >= 0 && ih < int(G(3));
            uint xb = io + (row_in ? x_at(n0 + nl, g * CIG + c, uint(ih), 0u) : 0u);
            uint xw = P.w[22], W = G(4);
            uint ob, ostep;
            if (MODE == 0u) {
                ob = oo + ((nl * GR + g) * K + kk) * pc + (oh * WO + owa - p0);
                ostep = 1u;
            } else {
                ob = oo + (g * (nb * pc) + nl * pc + (oh * WO + owa - p0)) * K + kk;
                ostep = K;
            }
            for (uint ow = owa; ow < owb; ow++) {
                int iw = int(ow) * sw + iw0;
                o_f32[ob] = row_in && iw >= 0 && iw < int(W) ? i1_f32[xb + uint(iw) * xw] : 0.0;
                ob += ostep;
            }
        } else if (MODE == 1u) {
            uint H = G(3), W = G(4), CI = G(1);
            uint iw = it % W, ih = (it / W) % H, ci = (it / (W * H)) % CI, nl = it / (W * H * CI);
            uint g = ci / CIG, c = ci % CIG;
            int SH = int(G(12)), SW = int(G(13)), PH = int(G(14)), PW = int(G(15));
            int DH = int(G(16)), DW = int(G(17));
            bool unit = SH == 1 && SW == 1;
            float acc = 0.0;
            uint base = (nl * GR + g) * K + c * KH * KW;
            for (uint i = 0u; i < KH; i++) {
                int th = int(ih) + PH - int(i) * DH;
                if (th < 0 || (!unit && th % SH != 0)) continue;
                uint oh = unit ? uint(th) : uint(th / SH);
                if (oh >= HO) continue;
                for (uint j = 0u; j < KW; j++) {
                    int tw = int(iw) + PW - int(j) * DW;
                    if (tw < 0 || (!unit && tw % SW != 0)) continue;
                    uint ow = unit ? uint(tw) : uint(tw / SW);
                    if (ow >= WO) continue;
                    uint p = oh * WO + ow;
                    if (p < p0 || p >= p0 + pc) continue;
                    acc += i1_f32[io + (base + i * KW + j) * pc + (p - p0)];
                }
            }
            uint xo = oo + x_at(n0 + nl, ci, ih, iw);
            o_f32[xo] = P.w[38] != 0u ? o_f32[xo] + acc : acc;
        } else if (MODE == 2u) {
            // An invocation per (image, channel, row) of the tile.
            uint CO = G(2);
            uint r = it % rows, co = (it / rows) % CO, nl = it / (rows * CO);
            uint oh = r0 + r;
            uint owa = oh * WO < p0 ? p0 - oh * WO : 0u, owb = min(WO, p0 + pc - oh * WO);
            uint yo = oo + (n0 + nl) * P.w[27] + co * P.w[28] + oh * P.w[29];
            float b = i1_f32[io + co * P.w[31]];
            for (uint ow = owa; ow < owb; ow++) o_f32[yo + ow * P.w[30]] += b;
        } else if (MODE == 3u) {
            // An invocation per (channel, image, row) of the tile.
            uint r = it % rows, nl = (it / rows) % nb, cg = it / (rows * nb); // cg = g * Cog + co
            uint oh = r0 + r;
            uint owa = oh * WO < p0 ? p0 - oh * WO : 0u, owb = min(WO, p0 + pc - oh * WO);
            uint src = io + (n0 + nl) * P.w[27] + cg * P.w[28] + oh * P.w[29];
            uint dst = oo + cg * (nb * pc) + nl * pc + (oh * WO + owa - p0);
            for (uint ow = owa; ow < owb; ow++) o_f32[dst + ow - owa] = i1_f32[src + ow * P.w[30]];
        }
    }
}
