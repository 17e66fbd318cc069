/* SPDX-License-Identifier: BSD-3-Clause */
// group_fast.glsl — a workgroup's sum and max of one f32 per invocation,
// every invocation getting the result (the same value in each: every one
// combines the same partials in the same order). With GF_SG (subgroup
// arithmetic): subgroupAdd / subgroupMax inside each subgroup, then the
// subgroups' partials through shared memory with one barrier; without: a
// shared-memory tree. Callers pass NaN-free values to gf_group_max (they
// carry NaN apart).
#if GF_SG
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
shared float gf_sh[gl_WorkGroupSize.x];
float gf_group_sum(float v) {
    v = subgroupAdd(v);
    if (subgroupElect()) gf_sh[gl_SubgroupID] = v;
    barrier();
    float t = 0.0;
    for (uint s = 0u; s < gl_NumSubgroups; s++) t += gf_sh[s];
    barrier(); // everyone has read before the next call writes
    return t;
}
float gf_group_max(float v) {
    v = subgroupMax(v);
    if (subgroupElect()) gf_sh[gl_SubgroupID] = v;
    barrier();
    float t = gf_sh[0];
    for (uint s = 1u; s < gl_NumSubgroups; s++) t = max(t, gf_sh[s]);
    barrier();
    return t;
}
#else
shared float gf_sh[gl_WorkGroupSize.x];
float gf_group_op(float v, bool is_max) {
    uint lid = gl_LocalInvocationID.x;
    gf_sh[lid] = v;
    for (uint h = gl_WorkGroupSize.x / 2u; h > 0u; h >>= 1) {
        barrier();
        if (lid < h) gf_sh[lid] = is_max ? max(gf_sh[lid], gf_sh[lid + h]) : gf_sh[lid] + gf_sh[lid + h];
    }
    barrier();
    float t = gf_sh[0];
    barrier();
    return t;
}
float gf_group_sum(float v) { return gf_group_op(v, false); }
float gf_group_max(float v) { return gf_group_op(v, true); }
#endif

// Neumaier's compensated sum on four lanes at once: s, c.
void gf_ksum4(inout vec4 s, inout vec4 c, vec4 v) {
    // precise: an optimiser may not fold (s - t) + v to 0 by reassociation.
    precise vec4 t = s + v;
    precise vec4 e1 = (s - t) + v;
    precise vec4 e2 = (v - t) + s;
    c += mix(e2, e1, greaterThanEqual(abs(s), abs(v)));
    s = t;
}
// The compensated value of one invocation's four sums.
float gf_kfold4(vec4 s, vec4 c) {
    vec4 k = mix(s + c, s, isinf(s)); // inf + NaN compensation: inf
    return (k.x + k.y) + (k.z + k.w);
}
