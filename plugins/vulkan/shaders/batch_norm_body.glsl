/* SPDX-License-Identifier: BSD-3-Clause */
// batch_norm_body.glsl — one channel of batch_norm, per float type (FT, FN,
// L(tensor, i) loads, S(tensor, i, v) stores, PF(f32 word, f64 word)).
void FN(batch_norm)(uint c) {
    uint n = P.w[BN_N], flags = P.w[BN_FLAGS];
    FT eps = PF(BN_EPS32, BN_EPS64), mom = PF(BN_MOM32, BN_MOM64);
    uint wo = P.w[BN_TOFF] + c * P.w[BN_TSTR], bo = P.w[BN_TOFF + 1u] + c * P.w[BN_TSTR + 1u];
    uint rmo = P.w[BN_TOFF + 2u] + c * P.w[BN_TSTR + 2u];
    uint rvo = P.w[BN_TOFF + 3u] + c * P.w[BN_TSTR + 3u];
    uint smo = P.w[BN_TOFF + 4u] + c * P.w[BN_TSTR + 4u];
    uint sio = P.w[BN_TOFF + 5u] + c * P.w[BN_TSTR + 5u];
    FT mean, invstd;
    if ((flags & 16u) != 0u) {
        FT m2;
        FN(group_moments)(n, mean, m2);
        invstd = FT(1) / sqrt(m2 / FT(n) + eps); // the biased variance normalises
        if (gl_LocalInvocationID.x == 0u && n > 0u) {
            if ((flags & 4u) != 0u) S(rm, rmo, (FT(1) - mom) * L(rm, rmo) + mom * mean);
            if ((flags & 8u) != 0u)
                S(rv, rvo, (FT(1) - mom) * L(rv, rvo) + mom * (m2 / FT(n - 1u)));
        }
    } else {
        mean = L(rm, rmo);
        invstd = FT(1) / sqrt(L(rv, rvo) + eps);
    }
    if (gl_LocalInvocationID.x == 0u) {
        S(sm, smo, mean);
        S(si, sio, invstd);
    }
    FT scale = (flags & 1u) != 0u ? L(w, wo) : FT(1);
    FT shift = (flags & 2u) != 0u ? L(b, bo) : FT(0);
    uint xb = P.w[BN_XOFF] + c * P.w[BN_XCS], yb = P.w[BN_YOFF] + c * P.w[BN_YCS];
    for (uint j = gl_LocalInvocationID.x; j < n; j += gl_WorkGroupSize.x) {
        uint ox, oy;
        elem_offsets(j, ox, oy);
        S(y, yb + oy, (L(x, xb + ox) - mean) * invstd * scale + shift);
    }
}
