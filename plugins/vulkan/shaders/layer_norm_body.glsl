/* SPDX-License-Identifier: BSD-3-Clause */
// layer_norm_body.glsl — one group of layer_norm, per float type (FT, FN,
// XL/YL/WL/BL element access, ST_* stores, EPS). See layer_norm.comp.
void FN(layer_norm)(uint g) {
    uint xb = P.w[LN_XOFF], yb = P.w[LN_YOFF], mo = P.w[LN_MOFF], ro = P.w[LN_ROFF];
    uint rem = g;
    for (uint k = P.w[LN_OR]; k > 0u; k--) {
        uint d = k - 1u, s = P.w[LN_OSIZE + d], c = rem % s;
        rem /= s;
        xb += c * P.w[LN_OSTR + d];
        yb += c * P.w[LN_OSTR + 8u + d];
        mo += c * P.w[LN_OSTR + 16u + d];
        ro += c * P.w[LN_OSTR + 24u + d];
    }
    uint n = P.w[LN_N];
    FT mean, m2;
    FN(group_moments)(n, mean, m2);
    FT r = FT(1) / sqrt(m2 / FT(n) + EPS);
    if (gl_LocalInvocationID.x == 0u) {
        ST_M(mo, mean);
        ST_R(ro, r);
    }
    uint flags = P.w[LN_FLAGS];
    for (uint j = gl_LocalInvocationID.x; j < n; j += gl_WorkGroupSize.x) {
        uint ox, oy, ow, ob;
        inner_offsets(j, ox, oy, ow, ob);
        FT v = (XL(xb + ox) - mean) * r;
        if ((flags & 1u) != 0u) v *= WL(ow);
        if ((flags & 2u) != 0u) v += BL(ob);
        ST_Y(yb + oy, v);
    }
}
