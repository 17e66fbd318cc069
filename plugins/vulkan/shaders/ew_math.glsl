/* SPDX-License-Identifier: BSD-3-Clause */
// ew_math.glsl — the formulas of the unary, binary, comparison and logical
// ops come from plugins/common/op_math.def, generated into op_math.glsl by
// graft-opgen-glsl (the same table that gives the OpenCL and CUDA kernels
// theirs). This file only feeds them their parameters. Scalars at EW_SCALAR
// (vk_ops_elementwise.c): +0 a (f32), +1 b (f32), +2 a (f64 bits), +4 b (f64),
// +6 flags (bit 0 has min, bit 1 has max; clamp), +7 min (f32), +8 max (f32),
// +9 min (f64), +11 max (f64), +13 min (i64), +15 max (i64).
#include "op_math.glsl"

bool ew_has_pa() { return OP == OP_CLAMP && (P.w[EW_SCALAR + 6u] & 1u) != 0u; }
bool ew_has_pb() { return OP == OP_CLAMP && (P.w[EW_SCALAR + 6u] & 2u) != 0u; }

float ew_unary_f32(float x) {
    bool c = OP == OP_CLAMP;
    float pa = pwf(EW_SCALAR + (c ? 7u : 0u)), pb = pwf(EW_SCALAR + (c ? 8u : 1u));
    return gf_unary_f32(OP, x, pa, pb, ew_has_pa(), ew_has_pb());
}

#if GF_F64
double ew_unary_f64(double x) {
    bool c = OP == OP_CLAMP;
    double pa = pwd(EW_SCALAR + (c ? 9u : 2u)), pb = pwd(EW_SCALAR + (c ? 11u : 4u));
    return gf_unary_f64(OP, x, pa, pb, ew_has_pa(), ew_has_pb());
}
#endif

int64_t ew_unary_int(int64_t x) {
    int64_t pa = int64_t(pw64(EW_SCALAR + 13u)), pb = int64_t(pw64(EW_SCALAR + 15u));
    return gf_unary_int(OP, x, pa, pb, ew_has_pa(), ew_has_pb());
}

float ew_binary_f32(float a, float b) { return gf_binary_f32(OP, a, b); }
#if GF_F64
double ew_binary_f64(double a, double b) { return gf_binary_f64(OP, a, b); }
#endif
int64_t ew_binary_int(int64_t a, int64_t b) { return gf_binary_int(OP, a, b); }
