// common.glsl — what every shader shares: extensions, dtype codes, the
// params block (binding 0, raw 32-bit words) and typed views of a tensor
// binding. A tensor binding is the whole buffer of a memory block; the
// params carry each tensor's element offset into it. Shaders pick a view by
// a dtype specialisation constant, so the untaken views fold away.
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_control_flow_attributes : enable

#define DT_F32 0u
#define DT_F64 1u
#define DT_I32 2u
#define DT_I64 3u
#define DT_BOOL 4u

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

#define TENSOR(B, N)                                                                  \
    layout(std430, set = 0, binding = B) buffer N##F32_ { float N##_f32[]; };        \
    layout(std430, set = 0, binding = B) buffer N##I32_ { int N##_i32[]; };          \
    layout(std430, set = 0, binding = B) buffer N##I64_ { int64_t N##_i64[]; };      \
    layout(std430, set = 0, binding = B) buffer N##U8_ { uint8_t N##_u8[]; };        \
    IF_F64(layout(std430, set = 0, binding = B) buffer N##F64_ { double N##_f64[]; };)

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
        return 0l;                                                                    \
    }                                                                                 \
    void N##_sti(uint dt, uint i, int64_t v) {                                        \
        if (dt == DT_I32) N##_i32[i] = int(v);                                        \
        else if (dt == DT_I64) N##_i64[i] = v;                                        \
        else if (dt == DT_BOOL) N##_u8[i] = uint8_t(v != 0l ? 1 : 0);                 \
        else if (dt == DT_F32) N##_f32[i] = float(v);                                 \
        IF_F64(else if (dt == DT_F64) N##_f64[i] = double(v);)                        \
    }                                                                                 \
    bool N##_truth(uint dt, uint i) {                                                 \
        if (dt == DT_F32) return N##_f32[i] != 0.0;                                   \
        IF_F64(if (dt == DT_F64) return N##_f64[i] != 0.0lf;)                         \
        if (dt == DT_I32) return N##_i32[i] != 0;                                     \
        if (dt == DT_I64) return N##_i64[i] != 0l;                                    \
        return N##_u8[i] != uint8_t(0);                                               \
    }                                                                                 \
    /* Bit-exact copy of one element between two tensors of one dtype. */            \
    void N##_copy_from_self(uint dt, uint dst, uint src) {                            \
        if (dt == DT_BOOL) N##_u8[dst] = N##_u8[src];                                 \
        else if (dt == DT_I64 || dt == DT_F64) N##_i64[dst] = N##_i64[src];           \
        else N##_i32[dst] = N##_i32[src];                                             \
    }

#define COPY_ELEM(Y, X, dt, dst, src)                                                 \
    if (dt == DT_BOOL) Y##_u8[dst] = X##_u8[src];                                     \
    else if (dt == DT_I64 || dt == DT_F64) Y##_i64[dst] = X##_i64[src];               \
    else Y##_i32[dst] = X##_i32[src];

// Grid-stride loop over [0, n): the dispatch may have fewer groups than n needs.
#define FOR_EACH_ITEM(i, n) \
    for (uint i = gl_GlobalInvocationID.x; i < (n); i += gl_NumWorkGroups.x * gl_WorkGroupSize.x)

// Linear workgroup id over a 2-D grid (more than 65535 groups).
uint group_linear() { return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x; }
