/* SPDX-License-Identifier: BSD-3-Clause */
/* ew_copy.cl — COPY (with conversions), FILL, ARANGE, TRIL/TRIU and WHERE.
 *
 * Each kernel comes in the three forms of common.cl (_c, _2, _s), built by
 * GF_EW* around an element function NAME_el. Ops that move elements
 * unchanged work on their bits (b1, b4, b8: 1-, 4- and 8-byte elements),
 * which keeps -0.0 and NaN payloads; b2 moves f16 and bf16, b16 c128
 * elements (c64 is b8).
 *
 * Conversions follow the reference plugin: float to integer truncates toward
 * zero and saturates, NaN giving 0 (convert_*_sat_rtz); integer and f64 to
 * float round to nearest even; i64 to i32 wraps modulo 2^32; anything to bool
 * is x != 0 (NaN true); bool reads as 0 or 1. */

#define CV_BITS(v) (v)
#define CV_F32(v) convert_float_rte(v)
#define CV_F64(v) convert_double_rte(v)
#define CV_I32_SAT(v) convert_int_sat_rtz(v)
#define CV_I64_SAT(v) convert_long_sat_rtz(v)
#define CV_I32_WRAP(v) as_int((uint)(v))
#define CV_I64(v) ((long)(v))
#define CV_BOOL(v) ((uchar)((v) != 0))
#define CV_B2F32(v) ((float)((v) != 0))
#define CV_B2F64(v) ((double)((v) != 0))
#define CV_B2I32(v) ((int)((v) != 0))
#define CV_B2I64(v) ((long)((v) != 0))

#define GF_COPY(NAME, TS, TD, CONV)                                  \
    TD copy_##NAME##_el(TS x) { return CONV(x); }                    \
    GF_EW2(copy_##NAME, TD, TS, (), ())

GF_COPY(b1, uchar, uchar, CV_BITS)
GF_COPY(b4, uint, uint, CV_BITS)
GF_COPY(b8, ulong, ulong, CV_BITS)
GF_COPY(f32_i32, float, int, CV_I32_SAT)
GF_COPY(f32_i64, float, long, CV_I64_SAT)
GF_COPY(f32_b8, float, uchar, CV_BOOL)
GF_COPY(i32_f32, int, float, CV_F32)
GF_COPY(i32_i64, int, long, CV_I64)
GF_COPY(i32_b8, int, uchar, CV_BOOL)
GF_COPY(i64_f32, long, float, CV_F32)
GF_COPY(i64_i32, long, int, CV_I32_WRAP)
GF_COPY(i64_b8, long, uchar, CV_BOOL)
GF_COPY(b8_f32, uchar, float, CV_B2F32)
GF_COPY(b8_i32, uchar, int, CV_B2I32)
GF_COPY(b8_i64, uchar, long, CV_B2I64)
#if GF_HAS_FP64
GF_COPY(f32_f64, float, double, CV_F64)
GF_COPY(f64_f32, double, float, CV_F32)
GF_COPY(f64_i32, double, int, CV_I32_SAT)
GF_COPY(f64_i64, double, long, CV_I64_SAT)
GF_COPY(f64_b8, double, uchar, CV_BOOL)
GF_COPY(i32_f64, int, double, CV_F64)
GF_COPY(i64_f64, long, double, CV_F64)
GF_COPY(b8_f64, uchar, double, CV_B2F64)
#endif

/* f16 and bf16 (ushort bits, common.cl's conversions): to and from every
 * dtype, as the reference converts: through f32 where that is exact, from
 * f64, i32 and i64 in one rounding from double (on devices without doubles,
 * i32 / i64 to bf16 round through f32 first). b2 moves them as bits. */
#define CV_H2B(v) gf_f2b(gf_h2f(v))
#define CV_B2H(v) gf_f2h(gf_b2f(v))
#define CV_HALF_TRUTH(v) ((uchar)(((v) & 0x7fff) != 0)) /* +-0 false, NaN true */
#define CV_B8_F16(v) ((ushort)((v) ? 0x3c00 : 0))
#define CV_B8_BF16(v) ((ushort)((v) ? 0x3f80 : 0))
#define GF_COPY_HALF(DT)                                                               \
    GF_COPY(DT##_f32, ushort, float, GF_LD_##DT)                                       \
    GF_COPY(f32_##DT, float, ushort, GF_ST_##DT)                                       \
    GF_COPY(DT##_i32, ushort, int, CV_I32_SAT_##DT)                                    \
    GF_COPY(DT##_i64, ushort, long, CV_I64_SAT_##DT)                                   \
    GF_COPY(DT##_b8, ushort, uchar, CV_HALF_TRUTH)                                     \
    GF_COPY(b8_##DT, uchar, ushort, CV_B8_##DT)
#define CV_I32_SAT_f16(v) convert_int_sat_rtz(gf_h2f(v))
#define CV_I64_SAT_f16(v) convert_long_sat_rtz(gf_h2f(v))
#define CV_I32_SAT_bf16(v) convert_int_sat_rtz(gf_b2f(v))
#define CV_I64_SAT_bf16(v) convert_long_sat_rtz(gf_b2f(v))
#define CV_B8_f16 CV_B8_F16
#define CV_B8_bf16 CV_B8_BF16
GF_COPY(b2, ushort, ushort, CV_BITS)
GF_COPY_HALF(f16)
GF_COPY_HALF(bf16)
GF_COPY(f16_bf16, ushort, ushort, CV_H2B)
GF_COPY(bf16_f16, ushort, ushort, CV_B2H)
#if GF_HAS_FP64
#define CV_H2D(v) ((double)gf_h2f(v))
#define CV_B2D(v) ((double)gf_b2f(v))
#define CV_D2H_I(v) gf_d2h((double)(v))
#define CV_D2B_I(v) gf_d2b((double)(v))
GF_COPY(f16_f64, ushort, double, CV_H2D)
GF_COPY(bf16_f64, ushort, double, CV_B2D)
GF_COPY(f64_f16, double, ushort, gf_d2h)
GF_COPY(f64_bf16, double, ushort, gf_d2b)
GF_COPY(i32_f16, int, ushort, CV_D2H_I)
GF_COPY(i64_f16, long, ushort, CV_D2H_I)
GF_COPY(i32_bf16, int, ushort, CV_D2B_I)
GF_COPY(i64_bf16, long, ushort, CV_D2B_I)
#else
#define CV_F2H_I(v) gf_f2h(convert_float_rte(v)) /* exact: |v| < 65520 is an f32 */
#define CV_F2B_I(v) gf_f2b(convert_float_rte(v))
GF_COPY(i32_f16, int, ushort, CV_F2H_I)
GF_COPY(i64_f16, long, ushort, CV_F2H_I)
GF_COPY(i32_bf16, int, ushort, CV_F2B_I)
GF_COPY(i64_bf16, long, ushort, CV_F2B_I)
#endif

/* COPY of bits that transposes (CPU devices, ocl_elementwise.c): the host
 * has put x's unit-stride dim at rank - 2, so reading a row of y walks x
 * across lines. An item copies a GF_TILE x GF_TILE tile of the last two
 * dims, whose lines of x and y stay in the cache while it does (an item per
 * element, or per row, reads a new line of x for every element). Dim 2 of
 * the launch goes over the other dims. */
#define GF_TILE 16
#define GF_COPY_TILED(NAME, T)                                                             \
    __kernel void copy_##NAME##_t(__global T *y, long oy, long8 sy, __global const T *x,  \
                                  long ox, long8 sx, long8 sizes, int rank) {              \
        long inner = gf_lane(sizes, rank - 1), mid = gf_lane(sizes, rank - 2);             \
        long i0 = (long)get_global_id(0) * GF_TILE, m0 = (long)get_global_id(1) * GF_TILE; \
        long b = get_global_id(2), batch = 1;                                              \
        for (int d = 0; d < rank - 2; d++) batch *= gf_lane(sizes, d);                     \
        if (i0 >= inner || m0 >= mid || b >= batch) return;                                \
        long8 ix = gf_unravel(b, sizes, rank - 1, batch <= 0x7fffffffL);                   \
        long by = gf_offset(oy, ix, sy, rank - 1, 0), bx = gf_offset(ox, ix, sx, rank - 1, 0); \
        long ym = gf_lane(sy, rank - 2), yi = gf_lane(sy, rank - 1);                       \
        long xm = gf_lane(sx, rank - 2), xi = gf_lane(sx, rank - 1);                       \
        long me = min(m0 + GF_TILE, mid), ie = min(i0 + GF_TILE, inner);                   \
        for (long m = m0; m < me; m++)                                                     \
            for (long i = i0; i < ie; i++) y[by + m * ym + i * yi] = x[bx + m * xm + i * xi]; \
    }
GF_COPY_TILED(b1, uchar)
GF_COPY_TILED(b2, ushort)
GF_COPY_TILED(b4, uint)
GF_COPY_TILED(b8, ulong)

/* FILL with an element's bits (the contiguous case is a clEnqueueFillBuffer). */
#define GF_FILL(NAME, T)                                              \
    T fill_##NAME##_el(int unused, T value) { return value; }         \
    GF_EW1(fill_##NAME, T, (, T value), (, value))
GF_FILL(b1, uchar)
GF_FILL(b2, ushort)
GF_FILL(b4, uint)
GF_FILL(b8, ulong)

/* WHERE: y = cond ? a : b (cond a bool). */
#define GF_WHERE(NAME, T)                                                    \
    T where_##NAME##_el(uchar c, T a, T b) { return c ? a : b; }             \
    GF_EW4(where_##NAME, T, uchar, T, T, (), ())
GF_WHERE(b1, uchar)
GF_WHERE(b2, ushort)
GF_WHERE(b4, uint)
GF_WHERE(b8, ulong)
GF_WHERE(b16, ulong2)

/* TRIL / TRIU over the full (uncollapsed) shape, rank >= 2: the last dim is
 * the column, the one before the row. lower: keep col - row <= diag, else
 * col - row >= diag. */
#define GF_TRI(NAME, T)                                                                    \
    __kernel void tri_##NAME##_s(__global T *y, long oy, long8 sy, __global const T *x,   \
                                 long ox, long8 sx, GF_STRIDED_ARGS, long diag, int lower) { \
        GF_STRIDED_BEGIN {                                                                 \
            long d = i_ - gf_lane(ix_, rank - 2);                                          \
            bool keep = lower ? d <= diag : d >= diag;                                     \
            y[GF_AT(oy, sy)] = keep ? x[GF_AT(ox, sx)] : (T)0;                             \
        }                                                                                  \
    }
GF_TRI(b1, uchar)
GF_TRI(b2, ushort)
GF_TRI(b4, uint)
GF_TRI(b8, ulong)
GF_TRI(b16, ulong2)

/* ARANGE, y[i * s] = start + i * step. Integer outputs with integral start
 * and step are exact (wrapping i64 arithmetic, narrowed); the rest is
 * computed in double (float on devices without it) and converted. */
#define GF_ARANGE_INT(DT, T)                                                               \
    __kernel void arange_int_##DT(__global T *y, long oy, long sy, long n, long start,    \
                                  long step) {                                             \
        GF_CONTIG_BEGIN                                                                    \
        ulong v = as_ulong(start) + (ulong)i_ * as_ulong(step);                            \
        y[oy + i_ * sy] = GF_NARROW_##DT(as_long(v));                                      \
    }
GF_ARANGE_INT(i32, int)
GF_ARANGE_INT(i64, long)

#if GF_HAS_FP64
typedef double gf_real;
#else
typedef float gf_real;
#endif
#define GF_ARANGE_REAL(DT, T, CONV)                                                        \
    __kernel void arange_real_##DT(__global T *y, long oy, long sy, long n, gf_real start, \
                                   gf_real step) {                                         \
        GF_CONTIG_BEGIN                                                                    \
        gf_real v = start + (gf_real)i_ * step;                                            \
        y[oy + i_ * sy] = CONV(v);                                                         \
    }
GF_ARANGE_REAL(f32, float, CV_F32)
GF_ARANGE_REAL(i32, int, CV_I32_SAT)
GF_ARANGE_REAL(i64, long, CV_I64_SAT)
#if GF_HAS_FP64
GF_ARANGE_REAL(f64, double, CV_BITS)
#endif
