/* SPDX-License-Identifier: BSD-3-Clause */
// softmax_body.glsl — one line of softmax / log_softmax, per float type
// (FT, FN, L, S, EXPF, LOGF; group_sum.glsl included before).
shared FT FN(sh_max)[gl_WorkGroupSize.x];

void FN(softmax_line)(uint xb, uint yb) {
    uint len = P.w[1], xs = P.w[5], ys = P.w[6];
    uint lid = gl_LocalInvocationID.x;
    // The max; NaN wins (a line with a NaN is all NaN).
    FT m = FT(-1.0 / 0.0);
    for (uint j = lid; j < len; j += gl_WorkGroupSize.x) {
        FT v = L(xb + j * xs);
        if (!isnan(m) && (isnan(v) || v > m)) m = v;
    }
    FN(sh_max)[lid] = m;
    for (uint h = gl_WorkGroupSize.x / 2u; h > 0u; h >>= 1) {
        barrier();
        if (lid < h) {
            FT o = FN(sh_max)[lid + h], s = FN(sh_max)[lid];
            FN(sh_max)[lid] = isnan(s) ? s : isnan(o) || o > s ? o : s;
        }
    }
    barrier();
    m = FN(sh_max)[0];
    FT s = FT(0), c = FT(0);
    for (uint j = lid; j < len; j += gl_WorkGroupSize.x) FN(kadd)(s, c, EXPF(L(xb + j * xs) - m));
    s = FN(group_sum)(s, c);
    FT log_s = LOGF(s);
    for (uint j = lid; j < len; j += gl_WorkGroupSize.x) {
        FT z = L(xb + j * xs) - m;
        S(yb + j * ys, OP == OP_LOG_SOFTMAX ? z - log_s : EXPF(z) / s);
    }
}
