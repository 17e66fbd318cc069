/* SPDX-License-Identifier: BSD-3-Clause */
// conv_body.glsl — the three convolution kernels in gather form (each output
// element one sum, as the reference), per float type: FT, FN, L(t, i), S(t, i, v).
// Roles: X input-shaped [N, Ci, H, W], W weight-shaped, Y output-shaped.
void FN(conv)(uint it) {
    uint N = G(0), CI = G(1), CO = G(2), H = G(3), W = G(4), KH = G(5), KW = G(6);
    uint HO = G(7), WO = G(8), CIG = G(10), COG = G(11);
    int SH = int(G(12)), SW = int(G(13)), PH = int(G(14)), PW = int(G(15));
    int DH = int(G(16)), DW = int(G(17));
    if (OP == 160u) { // y[n, co, oh, ow] from x (i1), w (i2), bias
        uint ow = it % WO, oh = (it / WO) % HO, co = (it / (WO * HO)) % CO, n = it / (WO * HO * CO);
        uint ci0 = (co / COG) * CIG;
        FT acc = (P.w[36] & 1u) != 0u ? L(bs, P.w[35] + co * P.w[31]) : FT(0);
        for (uint c = 0u; c < CIG; c++)
            for (uint i = 0u; i < KH; i++) {
                int ih = int(oh) * SH - PH + int(i) * DH;
                if (ih < 0 || ih >= int(H)) continue;
                for (uint j = 0u; j < KW; j++) {
                    int iw = int(ow) * SW - PW + int(j) * DW;
                    if (iw < 0 || iw >= int(W)) continue;
                    acc += L(i1, XAT(n, ci0 + c, uint(ih), uint(iw))) * L(i2, WAT(co, c, i, j));
                }
            }
        S(o, YAT(n, co, oh, ow), acc);
    } else if (OP == 161u) { // grad_x (o) from grad_y (i1), w (i2)
        uint iw = it % W, ih = (it / W) % H, ci = (it / (W * H)) % CI, n = it / (W * H * CI);
        uint grp = ci / CIG, c = ci % CIG;
        FT acc = FT(0);
        for (uint co = grp * COG; co < (grp + 1u) * COG; co++)
            for (uint i = 0u; i < KH; i++) {
                int th = int(ih) + PH - int(i) * DH;
                if (th < 0 || th % SH != 0 || th / SH >= int(HO)) continue;
                for (uint j = 0u; j < KW; j++) {
                    int tw = int(iw) + PW - int(j) * DW;
                    if (tw < 0 || tw % SW != 0 || tw / SW >= int(WO)) continue;
                    acc += L(i1, YAT(n, co, uint(th / SH), uint(tw / SW))) * L(i2, WAT(co, c, i, j));
                }
            }
        S(o, XAT(n, ci, ih, iw), acc);
    }
}

// grad_w (o) from grad_y (i1), x (i2): a workgroup per weight element, its
// invocations splitting the N * Ho * Wo terms, partial sums combined in
// shared memory (long serial loops are slow on GPUs, and lavapipe caps an
// invocation's loop iterations).
shared FT FN(sh_acc)[gl_WorkGroupSize.x];
void FN(conv_bw_weight)(uint it) {
    uint N = G(0), H = G(3), W = G(4), KH = G(5), KW = G(6), HO = G(7), WO = G(8);
    uint CIG = G(10), COG = G(11);
    int SH = int(G(12)), SW = int(G(13)), PH = int(G(14)), PW = int(G(15));
    int DH = int(G(16)), DW = int(G(17));
    uint j = it % KW, i = (it / KW) % KH, c = (it / (KW * KH)) % CIG, co = it / (KW * KH * CIG);
    uint ci0 = (co / COG) * CIG;
    FT acc = FT(0);
    uint lid = gl_LocalInvocationID.x, terms = N * HO * WO;
    for (uint t = lid; t < terms; t += gl_WorkGroupSize.x) {
        uint ow = t % WO, oh = (t / WO) % HO, n = t / (WO * HO);
        int ih = int(oh) * SH - PH + int(i) * DH, iw = int(ow) * SW - PW + int(j) * DW;
        if (ih < 0 || ih >= int(H) || iw < 0 || iw >= int(W)) continue;
        acc += L(i1, YAT(n, co, oh, ow)) * L(i2, XAT(n, ci0 + c, uint(ih), uint(iw)));
    }
    FN(sh_acc)[lid] = acc;
    for (uint h = gl_WorkGroupSize.x / 2u; h > 0u; h >>= 1) {
        barrier();
        if (lid < h) FN(sh_acc)[lid] += FN(sh_acc)[lid + h];
    }
    if (lid == 0u) S(o, WAT(co, c, i, j), FN(sh_acc)[0]);
}
