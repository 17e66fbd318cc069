/* SPDX-License-Identifier: BSD-3-Clause */
// reduce_float.glsl — the float reductions, included once per float type:
// FT the type, FN(name) a per-type name, LD(i) loads x element i, ST(i, v)
// stores y element i. A line is reduced by the whole workgroup (WG mode) or
// by one invocation (thread mode); partial results combine in shared memory.
shared FT FN(sh_a)[gl_WorkGroupSize.x];
shared FT FN(sh_b)[gl_WorkGroupSize.x];
shared uint FN(sh_i)[gl_WorkGroupSize.x];

// Neumaier's compensated sum: s, c.
void FN(ksum)(inout FT s, inout FT c, FT v) {
    // precise: an optimiser may not fold (s - t) + v to 0 by reassociation.
    precise FT t = s + v;
    precise FT e = abs(s) >= abs(v) ? (s - t) + v : (v - t) + s;
    c += e;
    s = t;
}
FT FN(kvalue)(FT s, FT c) { return isinf(s) || isnan(s) ? s : s + c; }

// a wins over b (both with indices): NaN first, then the more extreme, then
// the lower index.
bool FN(wins)(FT a, uint ia, FT b, uint ib, bool largest) {
    if (isnan(a) || isnan(b)) return isnan(a) && (!isnan(b) || ia < ib);
    if (a == b) return ia < ib;
    return largest ? a > b : a < b;
}

// Combines the partial (a, b, i) of every invocation into invocation 0's:
// kind 0 compensated sum, 1 product, 2 extreme (largest when ext_max).
void FN(combine)(uint lid, uint kind, bool ext_max) {
    for (uint s = gl_WorkGroupSize.x / 2u; s > 0u; s >>= 1) {
        barrier();
        if (lid < s) {
            uint o = lid + s;
            if (kind == 0u) {
                FT a = FN(sh_a)[lid], c = FN(sh_b)[lid] + FN(sh_b)[o];
                FN(ksum)(a, c, FN(sh_a)[o]);
                FN(sh_a)[lid] = a;
                FN(sh_b)[lid] = c;
            } else if (kind == 1u) {
                FN(sh_a)[lid] *= FN(sh_a)[o];
            } else if (FN(wins)(FN(sh_a)[o], FN(sh_i)[o], FN(sh_a)[lid], FN(sh_i)[lid], ext_max)) {
                FN(sh_a)[lid] = FN(sh_a)[o];
                FN(sh_i)[lid] = FN(sh_i)[o];
            }
        }
    }
    barrier();
}

// Reduces the line at xb; j0/step: this invocation's share. In thread mode
// (step 1, one invocation) the shared combine is skipped.
void FN(reduce_line)(uint xb, uint yo, uint io, uint lid, uint j0, uint step, bool group) {
    uint n = P.w[R_LEN];
    bool ext = OP == OP_AMAX || OP == OP_AMIN || OP == OP_MAX_DIM || OP == OP_MIN_DIM ||
               OP == OP_LOGSUMEXP;
    bool largest = OP == OP_AMAX || OP == OP_MAX_DIM || OP == OP_LOGSUMEXP;
    // Pass 1: sum (SUM MEAN VAR), product (PROD) or extreme (the others).
    FT a = OP == OP_PROD ? FT(1) : FT(0), c = FT(0);
    uint ai = 0xffffffffu;
    bool first = true;
    for (uint j = j0; j < n; j += step) {
        FT v = LD(line_offset(xb, j));
        if (OP == OP_PROD) a *= v;
        else if (ext) {
            if (first || FN(wins)(v, j, a, ai, largest)) { a = v; ai = j; }
            first = false;
        } else FN(ksum)(a, c, v);
    }
    uint kind = OP == OP_PROD ? 1u : ext ? 2u : 0u;
    if (group) {
        if (ext && first) ai = 0xffffffffu; // an empty share never wins
        FN(sh_a)[lid] = ext && first ? (largest ? FT(-1.0 / 0.0) : FT(1.0 / 0.0)) : a;
        FN(sh_b)[lid] = c;
        FN(sh_i)[lid] = ai;
        FN(combine)(lid, kind, largest);
        a = FN(sh_a)[0];
        c = FN(sh_b)[0];
        ai = FN(sh_i)[0];
    }
    FT nf = FT(n);
    FT result;
    if (OP == OP_SUM) result = FN(kvalue)(a, c);
    else if (OP == OP_MEAN) result = FN(kvalue)(a, c) / nf; // n = 0: NaN
    else if (OP == OP_PROD || OP == OP_AMAX || OP == OP_AMIN) result = a;
    else if (OP == OP_MAX_DIM || OP == OP_MIN_DIM) {
        result = a;
        if (lid == 0u) i_i64[io] = int64_t(ai);
    } else if (OP == OP_VAR) {
        // Corrected two-pass: squared deviations, minus the square of the
        // plain deviations' sum (the rounding error of the mean).
        FT mean = FN(kvalue)(a, c) / nf;
        FT sq = FT(0), sqc = FT(0), dv = FT(0), dvc = FT(0);
        if (group) barrier(); // everyone has read the shared result
        for (uint j = j0; j < n; j += step) {
            FT dlt = LD(line_offset(xb, j)) - mean;
            FN(ksum)(sq, sqc, dlt * dlt);
            FN(ksum)(dv, dvc, dlt);
        }
        if (group) {
            FN(sh_a)[lid] = sq;
            FN(sh_b)[lid] = sqc;
            FN(combine)(lid, 0u, false);
            sq = FN(sh_a)[0];
            sqc = FN(sh_b)[0];
            barrier();
            FN(sh_a)[lid] = dv;
            FN(sh_b)[lid] = dvc;
            FN(combine)(lid, 0u, false);
            dv = FN(sh_a)[0];
            dvc = FN(sh_b)[0];
        }
        FT dsum = FN(kvalue)(dv, dvc);
        FT m2 = FN(kvalue)(sq, sqc) - dsum * dsum / nf;
        if (m2 < FT(0)) m2 = FT(0);
        FT div = nf - CORR;
        if (div < FT(0)) div = FT(0);
        result = n == 0u ? FT(0.0 / 0.0) : m2 / div;
    } else { // LOGSUMEXP: the max, then the sum of exp(x - max)
        FT m = a;
        if (n == 0u) result = FT(-1.0 / 0.0);
        else if (isnan(m) || isinf(m)) result = m;
        else {
            FT s = FT(0), sc = FT(0);
            if (group) barrier();
            for (uint j = j0; j < n; j += step) FN(ksum)(s, sc, EXPF(LD(line_offset(xb, j)) - m));
            if (group) {
                FN(sh_a)[lid] = s;
                FN(sh_b)[lid] = sc;
                FN(combine)(lid, 0u, false);
                s = FN(sh_a)[0];
                sc = FN(sh_b)[0];
            }
            result = m + LOGF(FN(kvalue)(s, sc));
        }
    }
    if (lid == 0u || !group) ST(yo, result);
}
