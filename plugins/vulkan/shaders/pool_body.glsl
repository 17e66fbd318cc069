/* SPDX-License-Identifier: BSD-3-Clause */
// pool_body.glsl — pooling kernels per float type (FT, FN, L, S), gather form.
// Ops: 163 max pool (y o, indices i1, x i2), 164 its backward (grad_x o,
// grad_y i1, indices i2), 165 avg pool (y o, x i1), 166 its backward
// (grad_x o, grad_y i1).
// (n, c, r, q): the output element (n, c, oh = r, ow = q) of the forward ops,
// the input element (n, c, ih = r, iw = q) of the backward ones.
void FN(pool)(uint n, uint c, uint r, uint q) {
    uint H = G(2), W = G(3), HO = G(4), WO = G(5);
    int KH = int(G(6)), KW = int(G(7)), SH = int(G(8)), SW = int(G(9));
    int PH = int(G(10)), PW = int(G(11)), DH = int(G(12)), DW = int(G(13));
    if (OP == 163u) {
        uint ow = q, oh = r;
        FT best = FT(-1.0 / 0.0);
        int best_idx = -1;
        for (int i = 0; i < KH; i++) {
            int ih = int(oh) * SH - PH + i * DH;
            if (ih < 0 || ih >= int(H)) continue; // padding never wins
            for (int j = 0; j < KW; j++) {
                int iw = int(ow) * SW - PW + j * DW;
                if (iw < 0 || iw >= int(W)) continue;
                FT v = L(i2, AT(2u, n, c, uint(ih), uint(iw)));
                if (best_idx < 0 || v > best || isnan(v)) {
                    best = v;
                    best_idx = ih * int(W) + iw;
                }
            }
        }
        S(o, AT(0u, n, c, oh, ow), best);
        i1_i64[AT(1u, n, c, oh, ow)] = int64_t(best_idx);
    } else if (OP == 164u) {
        // Every grad_y element whose index names this input element, in
        // (oh, ow) order. The ABI gives this op no parameters; when the core
        // passes the forward's anyway (flag P.w[32]), only the windows that
        // can hold (ih, iw) are scanned, else the whole output plane.
        uint iw = q, ih = r;
        int64_t me = int64_t(ih * W + iw);
        int oh0 = 0, oh1 = int(HO) - 1, ow0 = 0, ow1 = int(WO) - 1;
        if (P.w[32] != 0u) {
            oh0 = max(0, (int(ih) + PH - (KH - 1) * DH + SH - 1) / SH);
            if (int(ih) + PH - (KH - 1) * DH < 0) oh0 = 0;
            oh1 = min(oh1, (int(ih) + PH) / SH);
            ow0 = max(0, (int(iw) + PW - (KW - 1) * DW + SW - 1) / SW);
            if (int(iw) + PW - (KW - 1) * DW < 0) ow0 = 0;
            ow1 = min(ow1, (int(iw) + PW) / SW);
        }
        FT acc = FT(0);
        for (int oh = oh0; oh <= oh1; oh++)
            for (int ow = ow0; ow <= ow1; ow++)
                if (i2_i64[AT(2u, n, c, uint(oh), uint(ow))] == me) acc += L(i1, AT(1u, n, c, uint(oh), uint(ow)));
        S(o, AT(0u, n, c, ih, iw), acc);
    } else if (OP == 165u) {
        uint ow = q, oh = r;
        int h0, h1, w0, w1;
        int div = avg_window(int(oh), int(ow), h0, h1, w0, w1);
        FT acc = FT(0);
        for (int ih = h0; ih < h1; ih++)
            for (int iw = w0; iw < w1; iw++) acc += L(i1, AT(1u, n, c, uint(ih), uint(iw)));
        S(o, AT(0u, n, c, oh, ow), div != 0 ? acc / FT(div) : FT(0));
    } else {
        uint iw = q, ih = r;
        // The outputs whose window start oh*s - p lies in (ih - k, ih].
        int oh_lo = max(0, (int(ih) + PH - KH + SH) / SH), oh_hi = min(int(HO) - 1, (int(ih) + PH) / SH);
        int ow_lo = max(0, (int(iw) + PW - KW + SW) / SW), ow_hi = min(int(WO) - 1, (int(iw) + PW) / SW);
        if (int(ih) + PH - KH + SH < 0) oh_lo = 0;
        if (int(iw) + PW - KW + SW < 0) ow_lo = 0;
        FT acc = FT(0);
        for (int oh = oh_lo; oh <= oh_hi; oh++)
            for (int ow = ow_lo; ow <= ow_hi; ow++) {
                int h0, h1, w0, w1;
                int div = avg_window(oh, ow, h0, h1, w0, w1);
                if (div == 0 || int(ih) < h0 || int(ih) >= h1 || int(iw) < w0 || int(iw) >= w1) continue;
                acc += L(i1, AT(1u, n, c, uint(oh), uint(ow))) / FT(div);
            }
        S(o, AT(0u, n, c, ih, iw), acc);
    }
}

// Max pool's backward for one (n, c) plane by one invocation: the plane of
// grad_x zeroed, then each grad_y element added where its index points, in
// (oh, ow) order: the sums of the gather form above, bit for bit, without
// scanning the output plane per input element. Indices outside the plane
// name no element (as in the gather form).
void FN(pool_scatter)(uint n, uint c) {
    uint H = G(2), W = G(3), HO = G(4), WO = G(5);
    for (uint ih = 0u; ih < H; ih++)
        for (uint iw = 0u; iw < W; iw++) S(o, AT(0u, n, c, ih, iw), FT(0));
    int64_t hw = int64_t(H) * int64_t(W);
    for (uint oh = 0u; oh < HO; oh++)
        for (uint ow = 0u; ow < WO; ow++) {
            int64_t k = i2_i64[AT(2u, n, c, oh, ow)];
            if (k < 0l || k >= hw) continue;
            uint ih = uint(k) / W, iw = uint(k) % W;
            uint at = AT(0u, n, c, ih, iw);
            S(o, at, L(o, at) + L(i1, AT(1u, n, c, oh, ow)));
        }
}
