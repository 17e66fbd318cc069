/* SPDX-License-Identifier: BSD-3-Clause */
// common.glsl — what every shader shares: extensions, dtype codes, the
// params block (binding 0, raw 32-bit words) and typed views of a tensor
// binding. A tensor binding is the whole buffer of a memory block; the
// params carry each tensor's element offset into it. Shaders pick a view by
// a dtype specialisation constant, so the untaken views fold away.
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_control_flow_attributes : enable
#ifndef GF_F16
#define GF_F16 0
#endif
#if GF_F16
// f16 is storage only: every f16 value is converted to f32 on load and
// rounded back on store, arithmetic is f32 (as PyTorch's half on GPUs).
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif

// A shader built in parts ("// graft: parts N" in its source; the plugin's
// CMakeLists.txt) is compiled once per part k with GF_PARTS=N, GF_PART=k, and
// keeps of its switches over op codes only the cases GF_IN_PART(code).
#ifdef GF_PARTS
#define GF_IN_PART(code) ((code) % GF_PARTS == GF_PART)
#else
#define GF_IN_PART(code) 1
#endif

#define DT_F32 0u
#define DT_F64 1u
#define DT_I32 2u
#define DT_I64 3u
#define DT_BOOL 4u
#define DT_F16 5u

layout(std430, set = 0, binding = 0) readonly buffer Params_ { uint w[]; } P;

uint pw(uint i) { return P.w[i]; }
int pwi(uint i) { return int(P.w[i]); }
uint64_t pw64(uint i) { return uint64_t(P.w[i]) | (uint64_t(P.w[i + 1]) << 32); }
float pwf(uint i) { return uintBitsToFloat(P.w[i]); }
#if GF_F64
double pwd(uint i) { return packDouble2x32(uvec2(P.w[i], P.w[i + 1])); }
#define IF_F64(x) x
#else
#define IF_F64(x)
#endif

#if GF_F16
#define IF_F16(x) x
// Conversions done on the bits, so that they are exact whatever the
// device's f16 denormal and rounding modes: f16 -> f32 is exact, f32 -> f16
// rounds to nearest even (NaN stays NaN, overflow gives inf), as the CPU.
float h2f(float16_t h) {
    uint b = packFloat2x16(f16vec2(h, float16_t(0.0))) & 0xffffu;
    uint s = (b & 0x8000u) << 16, e = (b >> 10) & 0x1fu, m = b & 0x3ffu;
    if (e == 0u) return uintBitsToFloat(s | floatBitsToUint(float(m) * 5.9604644775390625e-8));
    if (e == 31u) return uintBitsToFloat(s | 0x7f800000u | (m << 13));
    return uintBitsToFloat(s | ((e + 112u) << 23) | (m << 13));
}
uint f2h_bits(float f) {
    uint x = floatBitsToUint(f);
    uint s = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;
    if (a > 0x7f800000u) return s | 0x7e00u | ((a >> 13) & 0x3ffu);   // NaN
    if (a >= 0x477ff000u) return s | 0x7c00u;                          // inf, or rounds to it
    if (a >= 0x38800000u) return s | ((a - 0x38000000u + 0xfffu + ((a >> 13) & 1u)) >> 13);
    if (a < 0x33000000u) return s;                                     // below half the least denormal
    uint e = a >> 23, m = (a & 0x7fffffu) | 0x800000u, sh = 126u - e;  // a denormal: m >> sh
    uint h = m >> sh, rem = m & ((1u << sh) - 1u), half_ = 1u << (sh - 1u);
    if (rem > half_ || (rem == half_ && (h & 1u) != 0u)) h++;
    return s | h;
}
float16_t f2h(float f) { return unpackFloat2x16(f2h_bits(f)).x; }
#else
#define IF_F16(x)
#endif

#define TENSOR(B, N)                                                                  \
    layout(std430, set = 0, binding = B) buffer N##F32_ { float N##_f32[]; };        \
    layout(std430, set = 0, binding = B) buffer N##I32_ { int N##_i32[]; };          \
    layout(std430, set = 0, binding = B) buffer N##I64_ { int64_t N##_i64[]; };      \
    layout(std430, set = 0, binding = B) buffer N##U8_ { uint8_t N##_u8[]; };        \
    IF_F64(layout(std430, set = 0, binding = B) buffer N##F64_ { double N##_f64[]; };) \
    IF_F16(layout(std430, set = 0, binding = B) buffer N##F16_ { float16_t N##_f16[]; };)

// f32 and f16 tensors through f32 (DT a constant: the other branch folds).
#if GF_F16
#define TENSOR_F32_IO(N)                                                              \
    float N##_ldf(uint dt, uint i) { return dt == DT_F16 ? h2f(N##_f16[i]) : N##_f32[i]; } \
    void N##_stf(uint dt, uint i, float v) {                                          \
        if (dt == DT_F16) N##_f16[i] = f2h(v);                                        \
        else N##_f32[i] = v;                                                          \
    }
#else
#define TENSOR_F32_IO(N)                                                              \
    float N##_ldf(uint dt, uint i) { return N##_f32[i]; }                             \
    void N##_stf(uint dt, uint i, float v) { N##_f32[i] = v; }
#endif

// i32 -> i64 from the two words: lavapipe (LLVM 15) miscompiles compares of
// an OpSConvert'ed value in some shaders, and this form needs no conversion.
int64_t i64_of(int x) { return pack64(ivec2(x, x >> 31)); }

// float -> integer: truncate toward zero, saturate, NaN -> 0 (the ABI's rule).
int64_t f32_to_i64(float v) {
    if (isnan(v)) return 0l;
    if (v >= 9223372036854775808.0) return 9223372036854775807l;
    if (v <= -9223372036854775808.0) return -9223372036854775807l - 1l;
    return int64_t(v);
}
int f32_to_i32(float v) {
    if (isnan(v)) return 0;
    if (v >= 2147483648.0) return 2147483647;
    if (v <= -2147483648.0) return -2147483647 - 1;
    return int(v);
}
#if GF_F64
int64_t f64_to_i64(double v) {
    if (isnan(v)) return 0l;
    if (v >= 9223372036854775808.0lf) return 9223372036854775807l;
    if (v <= -9223372036854775808.0lf) return -9223372036854775807l - 1l;
    return int64_t(v);
}
int f64_to_i32(double v) {
    if (isnan(v)) return 0;
    if (v >= 2147483648.0lf) return 2147483647;
    if (v <= -2147483649.0lf) return -2147483647 - 1;
    return int(v);
}
#endif

// Loads and stores of a tensor N of dtype DT (a constant) through int64:
// exact for every integer and bool; floats truncate (as ref_load_i64).
#define TENSOR_INT_IO(N)                                                             \
    int64_t N##_ldi(uint dt, uint i) {                                               \
        if (dt == DT_I32) return i64_of(N##_i32[i]);                                  \
        if (dt == DT_I64) return N##_i64[i];                                          \
        if (dt == DT_BOOL) return N##_u8[i] != uint8_t(0) ? 1l : 0l;                  \
        if (dt == DT_F32) return f32_to_i64(N##_f32[i]);                              \
        IF_F64(if (dt == DT_F64) return f64_to_i64(N##_f64[i]);)                      \
        IF_F16(if (dt == DT_F16) return f32_to_i64(h2f(N##_f16[i]));)                 \
        return 0l;                                                                    \
    }                                                                                 \
    void N##_sti(uint dt, uint i, int64_t v) {                                        \
        if (dt == DT_I32) N##_i32[i] = int(v);                                        \
        else if (dt == DT_I64) N##_i64[i] = v;                                        \
        else if (dt == DT_BOOL) N##_u8[i] = uint8_t(v != 0l ? 1 : 0);                 \
        else if (dt == DT_F32) N##_f32[i] = float(v);                                 \
        IF_F64(else if (dt == DT_F64) N##_f64[i] = double(v);)                        \
        IF_F16(else if (dt == DT_F16) N##_f16[i] = f2h(float(v));)                    \
    }                                                                                 \
    bool N##_truth(uint dt, uint i) {                                                 \
        if (dt == DT_F32) return N##_f32[i] != 0.0;                                   \
        IF_F64(if (dt == DT_F64) return N##_f64[i] != 0.0lf;)                         \
        IF_F16(if (dt == DT_F16) return h2f(N##_f16[i]) != 0.0;)                      \
        if (dt == DT_I32) return N##_i32[i] != 0;                                     \
        if (dt == DT_I64) return N##_i64[i] != 0l;                                    \
        return N##_u8[i] != uint8_t(0);                                               \
    }                                                                                 \
    /* Bit-exact copy of one element between two tensors of one dtype. */            \
    void N##_copy_from_self(uint dt, uint dst, uint src) {                            \
        if (dt == DT_BOOL) N##_u8[dst] = N##_u8[src];                                 \
        else if (dt == DT_I64 || dt == DT_F64) N##_i64[dst] = N##_i64[src];           \
        IF_F16(else if (dt == DT_F16) N##_f16[dst] = N##_f16[src];)                   \
        else N##_i32[dst] = N##_i32[src];                                             \
    }

#define COPY_ELEM(Y, X, dt, dst, src)                                                 \
    if (dt == DT_BOOL) Y##_u8[dst] = X##_u8[src];                                     \
    else if (dt == DT_I64 || dt == DT_F64) Y##_i64[dst] = X##_i64[src];               \
    IF_F16(else if (dt == DT_F16) Y##_f16[dst] = X##_f16[src];)                       \
    else Y##_i32[dst] = X##_i32[src];

// Grid-stride loop over [0, n): the dispatch may have fewer groups than n needs.
#define FOR_EACH_ITEM(i, n) \
    for (uint i = gl_GlobalInvocationID.x; i < (n); i += gl_NumWorkGroups.x * gl_WorkGroupSize.x)

// Linear workgroup id over a 2-D grid (more than 65535 groups).
uint group_linear() { return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x; }
