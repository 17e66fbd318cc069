/* SPDX-License-Identifier: BSD-3-Clause */
#version 450
// graft: bindings 4
// graft: parts 6
// The complex elementwise ops (vk_complex.c), by KIND:
//   0 COPY     y (complex) = x converted: a real x becomes x + 0i
//   1 FILL     y = a + 0i
//   2 UNARY    y = f(x), f by its code in pk_complex.c's table (CODE), a the
//              POW_SCALAR exponent
//   3 ABS      y (the part dtype) = |x|
//   4 BINARY   y = f(a, b), CODE in pk_complex.c's binary table
//   5 COMPARE  y (bool) = a == b (CODE 0) or a != b (CODE 1)
// Part CODE % 6 of the shader has the op of CODE (the unary and binary
// kinds; the others take any part: vk_complex.c picks part 0 or 1).
// Elements are walked as ew_index.glsl walks them (the header of
// vk_ops_elementwise.c's ew_header); the scalar at EW_SCALAR is a in f32,
// then in f64 bits at EW_SCALAR + 1.
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint KIND = 0u;
layout(constant_id = 2) const uint CODE = 0u;
layout(constant_id = 3) const uint DY = 7u;
layout(constant_id = 4) const uint DX = 7u; // the (first) input's dtype
#define DT_C64 7u
#define DT_C128 8u
TENSOR(1, y)
TENSOR(2, a)
TENSOR(3, b)
TENSOR_INT_IO(a)
#define CTENSOR(B, N)                                                                  \
    layout(std430, set = 0, binding = B) buffer N##C64_ { vec2 N##_c64[]; };          \
    IF_F64(layout(std430, set = 0, binding = B) buffer N##C128_ { dvec2 N##_c128[]; };)
CTENSOR(1, y)
CTENSOR(2, a)
CTENSOR(3, b)
#include "ew_index.glsl"
#include "cx_math.glsl"

// The compute type: double where the device has it, else float.
#if GF_F64
#define CC dvec2
#define CCR double
#define SCALAR pwd(EW_SCALAR + 1u)
#else
#define CC vec2
#define CCR float
#define SCALAR pwf(EW_SCALAR)
#endif

#define CX_LOAD(N)                                                                     \
    CC N##_ldc(uint dt, uint i) {                                                      \
        IF_F64(if (dt == DT_C128) return CC(N##_c128[i]);)                             \
        return CC(N##_c64[i]);                                                         \
    }
CX_LOAD(a)
CX_LOAD(b)

void y_stc(uint i, CC v) {
    IF_F64(if (DY == DT_C128) { y_c128[i] = dvec2(v); return; })
    y_c64[i] = vec2(v);
}

// COPY's source: complex, or a real dtype (f32, f64, i32, i64, bool).
CC load_any(uint i) {
    if (DX == DT_C64 || DX == DT_C128) return a_ldc(DX, i);
    if (DX == DT_F32) return CC(CCR(a_f32[i]), CCR(0));
    IF_F64(if (DX == DT_F64) return CC(CCR(a_f64[i]), CCR(0));)
    if (DX == DT_BOOL) return CC(a_u8[i] != uint8_t(0) ? CCR(1) : CCR(0), CCR(0));
    return CC(CCR(a_ldi(DX, i)), CCR(0)); // i32, i64: rounded once (to the compute type)
}

void main() {
    ew_setup();
    FOR_EACH_ITEM(i, P.w[EW_N]) {
        uint oy, oa, ob, o3;
        ew_offsets(i, oy, oa, ob, o3);
        if (KIND == 0u) {
            if (DX == DY) { // bits
                IF_F64(if (DY == DT_C128) y_c128[oy] = a_c128[oa]; else)
                y_i64[oy] = a_i64[oa];
            } else {
                y_stc(oy, load_any(oa));
            }
        } else if (KIND == 1u) {
            y_stc(oy, CC(SCALAR, CCR(0)));
        } else if (KIND == 2u) {
            y_stc(oy, cx_unary(CODE, a_ldc(DX, oa), SCALAR));
        } else if (KIND == 3u) {
            CC z = a_ldc(DX, oa);
            CCR m = r_hypot(z.x, z.y);
            IF_F64(if (DY == DT_F64) y_f64[oy] = double(m); else)
            y_f32[oy] = float(m);
        } else if (KIND == 4u) {
            y_stc(oy, cx_binary(CODE, a_ldc(DX, oa), b_ldc(DX, ob)));
        } else {
            CC u = a_ldc(DX, oa), v = b_ldc(DX, ob);
            bool eq = u.x == v.x && u.y == v.y;
            y_u8[oy] = uint8_t((CODE != 0u) != eq ? 1 : 0);
        }
    }
}
