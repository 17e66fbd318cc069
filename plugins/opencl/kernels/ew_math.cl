/* SPDX-License-Identifier: BSD-3-Clause */
/* ew_math.cl — the unary, binary, comparison and logical ops, instantiated
 * from the generated op math (op_math.cl, from plugins/common/op_math.def).
 *
 * Kernel names: unary_<op>_<dtype>, binary_<op>_<dtype>, compare_<op>_<dtype>,
 * logical_<op>_<sizes>, each in the three forms of common.cl (_c, _2, _s).
 * f16 and bf16 compute in f32 through the f32 formulas (common.cl).
 * Integer ops compute in i64 (gf_int_*) and narrow on store; comparisons read
 * i32, i64 and bool as i64. Logical ops read each input's truth value from
 * its bits: (bits & mask) != 0, the mask dropping the sign of a float so -0.0
 * is false and NaN true; the host passes the masks.
 *
 * The instantiating macros (ew_defs.cl) paste OP at once: op names such as exp or abs are
 * macros in some OpenCL headers, and a parameter used without ## would be
 * expanded before it reached a kernel's name. */

#define U_F32(OP) GF_UNARY(unary_##OP##_f32, gf_f32_##OP, f32, float, float)
#define U_I32(OP) GF_UNARY(unary_##OP##_i32, gf_int_##OP, i32, int, long)
#define U_I64(OP) GF_UNARY(unary_##OP##_i64, gf_int_##OP, i64, long, long)
GF_UNARY_FLOAT_OPS(U_F32)
GF_UNARY_INT_OPS(U_I32)
GF_UNARY_INT_OPS(U_I64)

#define B_F32(OP) GF_BINARY(binary_##OP##_f32, gf_f32_##OP, f32, float, float)
#define B_I32(OP) GF_BINARY(binary_##OP##_i32, gf_int_##OP, i32, int, long)
#define B_I64(OP) GF_BINARY(binary_##OP##_i64, gf_int_##OP, i64, long, long)
GF_BINARY_FLOAT_OPS(B_F32)
GF_BINARY_INT_OPS(B_I32)
GF_BINARY_INT_OPS(B_I64)

#define C_F32(OP) GF_COMPARE(compare_##OP##_f32, gf_f32_##OP, f32, float)
#define C_I32(OP) GF_COMPARE(compare_##OP##_i32, gf_int_##OP, i32, int)
#define C_I64(OP) GF_COMPARE(compare_##OP##_i64, gf_int_##OP, i64, long)
#define C_B8(OP) GF_COMPARE(compare_##OP##_b8, gf_int_##OP, b8, uchar)
GF_COMPARE_OPS(C_F32)
GF_COMPARE_OPS(C_I32)
GF_COMPARE_OPS(C_I64)
GF_COMPARE_OPS(C_B8)

#if GF_HAS_FP64
#define U_F64(OP) GF_UNARY(unary_##OP##_f64, gf_f64_##OP, f64, double, double)
#define B_F64(OP) GF_BINARY(binary_##OP##_f64, gf_f64_##OP, f64, double, double)
#define C_F64(OP) GF_COMPARE(compare_##OP##_f64, gf_f64_##OP, f64, double)
GF_UNARY_FLOAT_OPS(U_F64)
GF_BINARY_FLOAT_OPS(B_F64)
GF_COMPARE_OPS(C_F64)
#endif

/* f16 and bf16: stored as ushort, computed in f32 (the f32 formula), one
 * rounding on store, as the reference. */
#define GF_UNARY_HALF(KN, FN, DT)                                                          \
    ushort KN##_el(ushort x, float pa, float pb, int flags) {                              \
        return GF_ST_##DT(FN(GF_LD_##DT(x), pa, pb, flags & 1, (flags >> 1) & 1));         \
    }                                                                                      \
    GF_EW2(KN, ushort, ushort, (, float pa, float pb, int flags), (, pa, pb, flags))
#define GF_BINARY_HALF(KN, FN, DT)                                                         \
    ushort KN##_el(ushort a, ushort b) { return GF_ST_##DT(FN(GF_LD_##DT(a), GF_LD_##DT(b))); } \
    GF_EW3(KN, ushort, ushort, ushort, (), ())
#define U_F16(OP) GF_UNARY_HALF(unary_##OP##_f16, gf_f32_##OP, f16)
#define U_BF16(OP) GF_UNARY_HALF(unary_##OP##_bf16, gf_f32_##OP, bf16)
#define B_F16(OP) GF_BINARY_HALF(binary_##OP##_f16, gf_f32_##OP, f16)
#define B_BF16(OP) GF_BINARY_HALF(binary_##OP##_bf16, gf_f32_##OP, bf16)
#define C_F16(OP) GF_COMPARE(compare_##OP##_f16, gf_f32_##OP, f16, ushort)
#define C_BF16(OP) GF_COMPARE(compare_##OP##_bf16, gf_f32_##OP, bf16, ushort)
GF_UNARY_FLOAT_OPS(U_F16)
GF_UNARY_FLOAT_OPS(U_BF16)
GF_BINARY_FLOAT_OPS(B_F16)
GF_BINARY_FLOAT_OPS(B_BF16)
GF_COMPARE_OPS(C_F16)
GF_COMPARE_OPS(C_BF16)

#define L1(OP)                                                 \
    GF_LOGICAL1(logical_##OP##_1, gf_bool_##OP, uchar)         \
    GF_LOGICAL1(logical_##OP##_2, gf_bool_##OP, ushort)        \
    GF_LOGICAL1(logical_##OP##_4, gf_bool_##OP, uint)          \
    GF_LOGICAL1(logical_##OP##_8, gf_bool_##OP, ulong)
#define L2(OP)                                                 \
    GF_LOGICAL2(logical_##OP##_12, gf_bool_##OP, uchar, ushort) \
    GF_LOGICAL2(logical_##OP##_21, gf_bool_##OP, ushort, uchar) \
    GF_LOGICAL2(logical_##OP##_22, gf_bool_##OP, ushort, ushort) \
    GF_LOGICAL2(logical_##OP##_24, gf_bool_##OP, ushort, uint) \
    GF_LOGICAL2(logical_##OP##_42, gf_bool_##OP, uint, ushort) \
    GF_LOGICAL2(logical_##OP##_28, gf_bool_##OP, ushort, ulong) \
    GF_LOGICAL2(logical_##OP##_82, gf_bool_##OP, ulong, ushort) \
    GF_LOGICAL2(logical_##OP##_11, gf_bool_##OP, uchar, uchar) \
    GF_LOGICAL2(logical_##OP##_14, gf_bool_##OP, uchar, uint)  \
    GF_LOGICAL2(logical_##OP##_18, gf_bool_##OP, uchar, ulong) \
    GF_LOGICAL2(logical_##OP##_41, gf_bool_##OP, uint, uchar)  \
    GF_LOGICAL2(logical_##OP##_44, gf_bool_##OP, uint, uint)   \
    GF_LOGICAL2(logical_##OP##_48, gf_bool_##OP, uint, ulong)  \
    GF_LOGICAL2(logical_##OP##_81, gf_bool_##OP, ulong, uchar) \
    GF_LOGICAL2(logical_##OP##_84, gf_bool_##OP, ulong, uint)  \
    GF_LOGICAL2(logical_##OP##_88, gf_bool_##OP, ulong, ulong)
GF_LOGICAL_UNARY_OPS(L1)
GF_LOGICAL_BINARY_OPS(L2)
