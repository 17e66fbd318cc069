/* SPDX-License-Identifier: BSD-3-Clause */
// matmul_params.glsl — params of the matmul shaders (vk_ops_matmul.c):
//   0 M  1 N  2 K  3 batches  4 batch rank  5..7 offsets of a, b, y
//   8 a_m  9 a_k  10 b_k  11 b_n  12 y_m  13 y_n
//   14.. batch sizes[8], a / b / y batch strides[8] each
//   46 accumulate: add to y (the later chunks of a long K)
//   47 bias (matmul_reg only): 1 when y = a @ b + bias[row], the row of batch bi
//      being (bi % [50]) * M + m  48 bias offset  49 bias stride  50 bias groups
#define MM_M 0u
#define MM_N 1u
#define MM_K 2u
#define MM_NB 3u
#define MM_BR 4u
#define MM_OFF 5u
#define MM_AM 8u
#define MM_AK 9u
#define MM_BK 10u
#define MM_BN 11u
#define MM_YM 12u
#define MM_YN 13u
#define MM_BSIZE 14u
#define MM_BSTR 22u
#define MM_ACC 46u
#define MM_BIAS 47u

void batch_offsets(uint bi, out uint ao, out uint bo, out uint yo) {
    ao = P.w[MM_OFF];
    bo = P.w[MM_OFF + 1u];
    yo = P.w[MM_OFF + 2u];
    uint rem = bi;
    for (uint k = P.w[MM_BR]; k > 0u; k--) {
        uint d = k - 1u, s = P.w[MM_BSIZE + d];
        uint c = rem % s;
        rem /= s;
        ao += c * P.w[MM_BSTR + d];
        bo += c * P.w[MM_BSTR + 8u + d];
        yo += c * P.w[MM_BSTR + 16u + d];
    }
}
