#version 450
// graft: bindings 3
// y = x converted to y's dtype: bit-exact when the dtypes agree; float to
// integer truncates and saturates (NaN -> 0); to bool is x != 0.
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint DY = 0u;
layout(constant_id = 2) const uint DX = 0u;
TENSOR(1, y)
TENSOR(2, x)
TENSOR_INT_IO(x)
TENSOR_INT_IO(y)
#include "ew_index.glsl"

void main() {
    ew_setup();
    FOR_EACH_ITEM(i, P.w[EW_N]) {
        uint oy, ox, o2, o3;
        ew_offsets(i, oy, ox, o2, o3);
        if (DY == DX) {
            COPY_ELEM(y, x, DY, oy, ox)
        } else if (DY == DT_BOOL) {
            y_u8[oy] = uint8_t(x_truth(DX, ox) ? 1 : 0);
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
