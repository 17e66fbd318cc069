/* SPDX-License-Identifier: BSD-3-Clause */
// ew_index.glsl — offsets of up to four tensors sharing one shape, from a
// row-major linear index. Params layout (words), written by vk_ops_elementwise.c:
//   0 n   1 rank   2..5 element offsets   6..13 sizes   14..45 strides[4][8]
//   46.. op scalars (EW_SCALAR)
#define EW_N 0u
#define EW_RANK 1u
#define EW_OFF 2u
#define EW_SIZE 6u
#define EW_STRIDE 14u
#define EW_SCALAR 46u

// The header, read once per invocation: the common cases (every tensor
// walked with one dim, after the host merged dims) then need no params load
// per element.
uint ew_rank, ew_o0, ew_o1, ew_o2, ew_o3, ew_s0, ew_s1, ew_s2, ew_s3;
void ew_setup() {
    ew_rank = P.w[EW_RANK];
    ew_o0 = P.w[EW_OFF];
    ew_o1 = P.w[EW_OFF + 1u];
    ew_o2 = P.w[EW_OFF + 2u];
    ew_o3 = P.w[EW_OFF + 3u];
    ew_s0 = P.w[EW_STRIDE];
    ew_s1 = P.w[EW_STRIDE + 8u];
    ew_s2 = P.w[EW_STRIDE + 16u];
    ew_s3 = P.w[EW_STRIDE + 24u];
}

void ew_offsets(uint i, out uint o0, out uint o1, out uint o2, out uint o3) {
    if (ew_rank <= 1u) {
        uint c = ew_rank == 0u ? 0u : i;
        o0 = ew_o0 + c * ew_s0;
        o1 = ew_o1 + c * ew_s1;
        o2 = ew_o2 + c * ew_s2;
        o3 = ew_o3 + c * ew_s3;
        return;
    }
    o0 = ew_o0;
    o1 = ew_o1;
    o2 = ew_o2;
    o3 = ew_o3;
    uint rem = i;
    for (uint k = ew_rank; k > 0u; k--) {
        uint d = k - 1u;
        uint c = rem;
        if (d > 0u) {
            uint s = P.w[EW_SIZE + d];
            c = rem % s;
            rem /= s;
        }
        o0 += c * P.w[EW_STRIDE + d];
        o1 += c * P.w[EW_STRIDE + 8u + d];
        o2 += c * P.w[EW_STRIDE + 16u + d];
        o3 += c * P.w[EW_STRIDE + 24u + d];
    }
}
