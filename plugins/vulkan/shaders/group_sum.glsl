/* SPDX-License-Identifier: BSD-3-Clause */
// group_sum.glsl — a workgroup's compensated sum, included once per float
// type (FT, FN as in reduce_float.glsl). Every invocation gets the total.
shared FT FN(gs_s)[gl_WorkGroupSize.x];
shared FT FN(gs_c)[gl_WorkGroupSize.x];

void FN(kadd)(inout FT s, inout FT c, FT v) {
    // precise: an optimiser may not fold (s - t) + v to 0 by reassociation.
    precise FT t = s + v;
    precise FT e = abs(s) >= abs(v) ? (s - t) + v : (v - t) + s;
    c += e;
    s = t;
}

FT FN(group_sum)(FT s, FT c) {
    uint lid = gl_LocalInvocationID.x;
    FN(gs_s)[lid] = s;
    FN(gs_c)[lid] = c;
    for (uint h = gl_WorkGroupSize.x / 2u; h > 0u; h >>= 1) {
        barrier();
        if (lid < h) {
            FT a = FN(gs_s)[lid], ac = FN(gs_c)[lid] + FN(gs_c)[lid + h];
            FN(kadd)(a, ac, FN(gs_s)[lid + h]);
            FN(gs_s)[lid] = a;
            FN(gs_c)[lid] = ac;
        }
    }
    barrier();
    FT total = FN(gs_s)[0], comp = FN(gs_c)[0];
    barrier(); // everyone has read before the next use overwrites
    return isinf(total) || isnan(total) ? total : total + comp;
}

// Mean and m2 (sum of squared deviations, corrected two-pass) of the n
// values LOADV(j) in a workgroup.
void FN(group_moments)(uint n, out FT mean, out FT m2) {
    uint lid = gl_LocalInvocationID.x;
    FT s = FT(0), c = FT(0);
    for (uint j = lid; j < n; j += gl_WorkGroupSize.x) FN(kadd)(s, c, LOADV(j));
    mean = FN(group_sum)(s, c) / FT(n);
    FT q = FT(0), qc = FT(0), dv = FT(0), dvc = FT(0);
    for (uint j = lid; j < n; j += gl_WorkGroupSize.x) {
        FT dl = LOADV(j) - mean;
        FN(kadd)(q, qc, dl * dl);
        FN(kadd)(dv, dvc, dl);
    }
    FT sq = FN(group_sum)(q, qc), dsum = FN(group_sum)(dv, dvc);
    m2 = sq - dsum * dsum / FT(n);
    if (m2 < FT(0)) m2 = FT(0);
}
