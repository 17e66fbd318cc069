/* SPDX-License-Identifier: BSD-3-Clause */
// reduce_params.glsl — the params of reduce.comp, written by vk_ops_reduce.c:
//   0 outputs   1 line length   2 kept rank   3 reduced rank
//   4 x offset  5 y offset  6 indices offset
//   7.. kept sizes[8], kept x strides[8], kept y strides[8], kept idx strides[8]
//   39.. reduced sizes[8], reduced x strides[8]
//   55 correction (f64, 2 words)  57 correction (f32)
#define R_NOUT 0u
#define R_LEN 1u
#define R_KR 2u
#define R_RR 3u
#define R_XOFF 4u
#define R_YOFF 5u
#define R_IOFF 6u
#define R_KSIZE 7u
#define R_KXS 15u
#define R_KYS 23u
#define R_KIS 31u
#define R_RSIZE 39u
#define R_RXS 47u
#define R_CORR 55u
#define R_CORR32 57u

// Offsets of output o in x (line base), y and indices.
void out_offsets(uint o, out uint xb, out uint yo, out uint io) {
    xb = P.w[R_XOFF];
    yo = P.w[R_YOFF];
    io = P.w[R_IOFF];
    uint rem = o;
    for (uint k = P.w[R_KR]; k > 0u; k--) {
        uint d = k - 1u, s = P.w[R_KSIZE + d];
        uint c = d > 0u ? rem % s : rem;
        rem /= s;
        xb += c * P.w[R_KXS + d];
        yo += c * P.w[R_KYS + d];
        io += c * P.w[R_KIS + d];
    }
}

// Offset in x of element j of a line.
uint line_offset(uint xb, uint j) {
    uint rr = P.w[R_RR];
    if (rr == 1u) return xb + j * P.w[R_RXS];
    uint off = xb, rem = j;
    for (uint k = rr; k > 0u; k--) {
        uint d = k - 1u, s = P.w[R_RSIZE + d];
        uint c = d > 0u ? rem % s : rem;
        rem /= s;
        off += c * P.w[R_RXS + d];
    }
    return off;
}
