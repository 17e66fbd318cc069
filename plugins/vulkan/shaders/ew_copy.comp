/* SPDX-License-Identifier: BSD-3-Clause */
#version 450
// graft: bindings 3
// graft: f16
// y = x converted to y's dtype: bit-exact when the dtypes agree; float to
// integer truncates and saturates (NaN -> 0); to bool is x != 0; to f16
// rounds to nearest even (f64 through a round-to-odd f32: one rounding).
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint DY = 0u;
layout(constant_id = 2) const uint DX = 0u;
TENSOR(1, y)
TENSOR(2, x)
TENSOR_INT_IO(x)
TENSOR_INT_IO(y)
#include "ew_index.glsl"

#if GF_F16 && GF_F64
// f64 -> f16 in one rounding: f64 -> f32 rounding to odd keeps enough bits
// (24 > 11 + 2) for the f32 -> f16 rounding to be that of the f64 value.
float16_t d2h(double v) {
    float f = float(v);
    if (!isnan(v) && !isinf(f) && double(f) != v) {
        uint b = floatBitsToUint(f);
        if (abs(double(f)) > abs(v)) b -= 1u; // toward zero: the truncation
        f = uintBitsToFloat(b | 1u);
    }
    return f2h(f);
}
#endif

void main() {
    ew_setup();
    FOR_EACH_ITEM(i, P.w[EW_N]) {
        uint oy, ox, o2, o3;
        ew_offsets(i, oy, ox, o2, o3);
        if (DY == DX) {
            COPY_ELEM(y, x, DY, oy, ox)
        } else if (DY == DT_BOOL) {
            y_u8[oy] = uint8_t(x_truth(DX, ox) ? 1 : 0);
#if GF_F16
        } else if (DX == DT_F16) {
            float v = h2f(x_f16[ox]);
            if (DY == DT_F32) y_f32[oy] = v;
            else if (DY == DT_I32) y_i32[oy] = f32_to_i32(v);
            else if (DY == DT_I64) y_i64[oy] = f32_to_i64(v);
            IF_F64(else if (DY == DT_F64) y_f64[oy] = double(v);)
        } else if (DY == DT_F16) {
            if (DX == DT_F32) y_f16[oy] = f2h(x_f32[ox]);
            IF_F64(else if (DX == DT_F64) y_f16[oy] = d2h(x_f64[ox]);)
            else y_f16[oy] = f2h(float(x_ldi(DX, ox))); // |ints| > 2^24 are inf in f16 anyway
#endif
        } else if (DX == DT_F32) {
            float v = x_f32[ox];
            if (DY == DT_I32) y_i32[oy] = f32_to_i32(v);
            else if (DY == DT_I64) y_i64[oy] = f32_to_i64(v);
            IF_F64(else if (DY == DT_F64) y_f64[oy] = double(v);)
#if GF_F64
        } else if (DX == DT_F64) {
            double v = x_f64[ox];
            if (DY == DT_I32) y_i32[oy] = f64_to_i32(v);
            else if (DY == DT_I64) y_i64[oy] = f64_to_i64(v);
            else if (DY == DT_F32) y_f32[oy] = float(v);
#endif
        } else {
            y_sti(DY, oy, x_ldi(DX, ox)); // integers stay exact, i64 -> f32 rounds once
        }
    }
}
