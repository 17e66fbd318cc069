/* SPDX-License-Identifier: BSD-3-Clause */
/* common.cl — the prelude of every graft OpenCL program.
 *
 * Build options give GF_HAS_FP64, GF_HAS_INT64_ATOMICS and GF_HAS_FMA (0 or 1). FP
 * contraction is off: a*b+c stays two roundings, as in the reference plugin
 * (kernels that want fused multiply-adds ask for them with mad()). Offsets
 * and sizes are in elements and 64-bit throughout. */
#pragma OPENCL FP_CONTRACT OFF
#if GF_HAS_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
#if GF_HAS_INT64_ATOMICS
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#endif

/* The vector GEMM kernels' multiply-add (matmul_vec, conv2d_igemm): fused
 * where the device does it in hardware (build option GF_HAS_FMA: a CPU
 * driver's mad() is a multiply and an add, twice the instructions), else
 * mad(). */
#if GF_HAS_FMA
#define GF_VMAD fma
#else
#define GF_VMAD mad
#endif

/* The multi-index of outer position o over dims [0, rank - 1) (row-major),
 * as the lanes of a long8 (the other lanes 0). The innermost dim is walked
 * by the launch's dim 0. Lanes, not a private array: copying the sizes and
 * strides into arrays cost a 64-byte store and load per array per element
 * (measured on PoCL: an attention head permute, [64, 8, 4, 12] to
 * (0, 2, 1, 3), took 250 us with the arrays and 64-bit divisions, 190 us
 * now). small: every outer size fits in 31 bits (outer does), so the
 * divisions are 32-bit. */
#define GF_UNRAVEL_LANE(L, R)                                                     \
    if (rank >= R) {                                                              \
        if (small) {                                                              \
            uint s_ = (uint)sz.L, q_ = u / s_;                                    \
            ix.L = (long)(u - q_ * s_);                                           \
            u = q_;                                                               \
        } else {                                                                  \
            ix.L = o % sz.L;                                                      \
            o /= sz.L;                                                            \
        }                                                                         \
    }
long8 gf_unravel(long o, long8 sz, int rank, bool small) {
    long8 ix = (long8)(0);
    uint u = (uint)o;
    GF_UNRAVEL_LANE(s6, 8)
    GF_UNRAVEL_LANE(s5, 7)
    GF_UNRAVEL_LANE(s4, 6)
    GF_UNRAVEL_LANE(s3, 5)
    GF_UNRAVEL_LANE(s2, 4)
    GF_UNRAVEL_LANE(s1, 3)
    GF_UNRAVEL_LANE(s0, 2)
    return ix;
}
#undef GF_UNRAVEL_LANE

/* Lane k of v (0 <= k < 8). */
long gf_lane(long8 v, int k) {
    switch (k) {
    case 0: return v.s0;
    case 1: return v.s1;
    case 2: return v.s2;
    case 3: return v.s3;
    case 4: return v.s4;
    case 5: return v.s5;
    case 6: return v.s6;
    default: return v.s7;
    }
}

/* base + ix . strides over dims [0, rank - 1) (ix's other lanes are 0),
 * plus i steps of the last dim. */
long gf_offset(long base, long8 ix, long8 strides, int rank, long i) {
    long8 p = ix * strides;
    return base + i * gf_lane(strides, rank - 1) +
           (((p.s0 + p.s1) + (p.s2 + p.s3)) + ((p.s4 + p.s5) + (p.s6 + p.s7)));
}

/* Element offset of row-major position j over the dims of (sizes, strides),
 * rank >= 0: for the "lines" of reductions and normalisations. */
long gf_line_offset(long j, long8 sizes, long8 strides, int rank) {
    if (rank == 1) return j * strides.s0;
    long sz[8], st[8];
    vstore8(sizes, 0, sz);
    vstore8(strides, 0, st);
    long r = 0;
    for (int d = rank - 1; d >= 0; d--) {
        r += (j % sz[d]) * st[d];
        j /= sz[d];
    }
    return r;
}

/* Elementwise kernels come in three forms, chosen by the host from the
 * geometry after merging dims:
 *   _c  contiguous: 1-D over n elements;
 *   _2  rank <= 2: 2-D, dim 0 along the innermost dim (inner elements), dim 1
 *       over the rows (outer); offsets are o * stride.s0 + i * stride.s1;
 *   _s  any rank: the same launch, the row index unravelled over the outer
 *       dims.
 * _c and _2 have no loop and index with the work-item ids directly: a CPU
 * driver (PoCL) vectorizes a kernel across work-items only then. With short
 * rows, the host swaps the two dims of a _2 geometry. _s takes `walk`
 * (ocl_launch.c): 0 an item per element, dim 0 along the rows; 1 the same
 * with dim 0 across rows (short rows); 2 an item per row, looping along it,
 * so that the row index is unravelled once a row (CPU devices). The body
 * after GF_STRIDED_BEGIN is that loop's body: one statement or a block. */
#define GF_STRIDED_ARGS long8 sizes, int rank, long inner, long outer, int walk
#define GF_2D_BEGIN                                                               \
    long i_ = get_global_id(0), o_ = get_global_id(1);                            \
    if (i_ >= inner || o_ >= outer) return;
#define GF_AT2(base, st) ((base) + o_ * (st).s0 + i_ * (st).s1)
#define GF_STRIDED_BEGIN                                                          \
    long i0_ = walk == 2 ? 0 : (long)get_global_id(walk ? 1 : 0);                 \
    long o_ = get_global_id(walk ? 0 : 1);                                        \
    if (i0_ >= inner || o_ >= outer) return;                                      \
    long8 ix_ = gf_unravel(o_, sizes, rank, outer <= 0x7fffffffL);                \
    for (long i_ = i0_, e_ = walk == 2 ? inner : i0_ + 1; i_ < e_; i_++)
#define GF_AT(base, strides) gf_offset((base), ix_, (strides), rank, i_)
#define GF_CONTIG_BEGIN              \
    long i_ = get_global_id(0);      \
    if (i_ >= n) return;

/* The three forms of an elementwise kernel NAME over 1 to 4 tensors (y first,
 * then the inputs), calling NAME##_el(inputs..., extras...) for each element.
 * XP: the extra parameters, XC: the same as call arguments, each written in
 * parentheses with a leading comma, "(, float pa, int flags)", or "()". */
#define GF_UNPAREN(...) __VA_ARGS__
#define GF_EW1(NAME, TY, XP, XC)                                                           \
    __kernel void NAME##_c(__global TY *y, long oy, long n GF_UNPAREN XP) {                \
        GF_CONTIG_BEGIN y[oy + i_] = NAME##_el(0 GF_UNPAREN XC);                           \
    }                                                                                      \
    __kernel void NAME##_2(__global TY *y, long oy, long8 sy, GF_STRIDED_ARGS GF_UNPAREN XP) { \
        GF_2D_BEGIN y[GF_AT2(oy, sy)] = NAME##_el(0 GF_UNPAREN XC);                        \
    }                                                                                      \
    __kernel void NAME##_s(__global TY *y, long oy, long8 sy, GF_STRIDED_ARGS GF_UNPAREN XP) { \
        GF_STRIDED_BEGIN y[GF_AT(oy, sy)] = NAME##_el(0 GF_UNPAREN XC);                    \
    }
#define GF_EW2(NAME, TY, TA, XP, XC)                                                       \
    __kernel void NAME##_c(__global TY *y, long oy, __global const TA *a, long oa,         \
                           long n GF_UNPAREN XP) {                                         \
        GF_CONTIG_BEGIN y[oy + i_] = NAME##_el(a[oa + i_] GF_UNPAREN XC);                  \
    }                                                                                      \
    __kernel void NAME##_2(__global TY *y, long oy, long8 sy, __global const TA *a, long oa, \
                           long8 sa, GF_STRIDED_ARGS GF_UNPAREN XP) {                      \
        GF_2D_BEGIN y[GF_AT2(oy, sy)] = NAME##_el(a[GF_AT2(oa, sa)] GF_UNPAREN XC);        \
    }                                                                                      \
    __kernel void NAME##_s(__global TY *y, long oy, long8 sy, __global const TA *a, long oa, \
                           long8 sa, GF_STRIDED_ARGS GF_UNPAREN XP) {                      \
        GF_STRIDED_BEGIN y[GF_AT(oy, sy)] = NAME##_el(a[GF_AT(oa, sa)] GF_UNPAREN XC);     \
    }
#define GF_EW3(NAME, TY, TA, TB, XP, XC)                                                   \
    __kernel void NAME##_c(__global TY *y, long oy, __global const TA *a, long oa,         \
                           __global const TB *b, long ob, long n GF_UNPAREN XP) {          \
        GF_CONTIG_BEGIN y[oy + i_] = NAME##_el(a[oa + i_], b[ob + i_] GF_UNPAREN XC);      \
    }                                                                                      \
    __kernel void NAME##_2(__global TY *y, long oy, long8 sy, __global const TA *a, long oa, \
                           long8 sa, __global const TB *b, long ob, long8 sb,              \
                           GF_STRIDED_ARGS GF_UNPAREN XP) {                                \
        GF_2D_BEGIN y[GF_AT2(oy, sy)] =                                                    \
            NAME##_el(a[GF_AT2(oa, sa)], b[GF_AT2(ob, sb)] GF_UNPAREN XC);                 \
    }                                                                                      \
    __kernel void NAME##_s(__global TY *y, long oy, long8 sy, __global const TA *a, long oa, \
                           long8 sa, __global const TB *b, long ob, long8 sb,              \
                           GF_STRIDED_ARGS GF_UNPAREN XP) {                                \
        GF_STRIDED_BEGIN y[GF_AT(oy, sy)] =                                                \
            NAME##_el(a[GF_AT(oa, sa)], b[GF_AT(ob, sb)] GF_UNPAREN XC);                   \
    }
#define GF_EW4(NAME, TY, TA, TB, TC, XP, XC)                                               \
    __kernel void NAME##_c(__global TY *y, long oy, __global const TA *a, long oa,         \
                           __global const TB *b, long ob, __global const TC *c, long oc,   \
                           long n GF_UNPAREN XP) {                                         \
        GF_CONTIG_BEGIN y[oy + i_] = NAME##_el(a[oa + i_], b[ob + i_], c[oc + i_] GF_UNPAREN XC); \
    }                                                                                      \
    __kernel void NAME##_2(__global TY *y, long oy, long8 sy, __global const TA *a, long oa, \
                           long8 sa, __global const TB *b, long ob, long8 sb,              \
                           __global const TC *c, long oc, long8 sc,                        \
                           GF_STRIDED_ARGS GF_UNPAREN XP) {                                \
        GF_2D_BEGIN y[GF_AT2(oy, sy)] = NAME##_el(a[GF_AT2(oa, sa)], b[GF_AT2(ob, sb)],    \
                                                  c[GF_AT2(oc, sc)] GF_UNPAREN XC);        \
    }                                                                                      \
    __kernel void NAME##_s(__global TY *y, long oy, long8 sy, __global const TA *a, long oa, \
                           long8 sa, __global const TB *b, long ob, long8 sb,              \
                           __global const TC *c, long oc, long8 sc,                        \
                           GF_STRIDED_ARGS GF_UNPAREN XP) {                                \
        GF_STRIDED_BEGIN y[GF_AT(oy, sy)] = NAME##_el(a[GF_AT(oa, sa)], b[GF_AT(ob, sb)],  \
                                                      c[GF_AT(oc, sc)] GF_UNPAREN XC);     \
    }

/* Narrowing an i64 result into a stored dtype: i32 wraps modulo 2^32. */
#define GF_NARROW_i32(v) as_int((uint)(v))
#define GF_NARROW_i64(v) (v)
#define GF_NARROW_f32(v) (v)
#define GF_NARROW_f64(v) (v)

/* f16 and bf16 are stored as ushort bits and computed in f32 (PyTorch's
 * half on GPUs): no cl_khr_fp16 needed, so every device has them. The
 * conversions are the reference plugin's (plugins/common/pk_half.h), bit for
 * bit: round to nearest even, NaN a quiet NaN with its sign (f16: the
 * canonical 0x7e00), overflow to inf, f16 subnormals kept. Widening is
 * exact, except that a signalling NaN comes out quiet (payload kept), as
 * the reference's widening through double makes it. From double (COPY from f64, i64) the value is rounded once. */
float gf_h2f(ushort h) {
    uint sign = (uint)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1fu) return as_float(sign | 0x7f800000u | (m << 13) | (m ? 0x400000u : 0u));
    if (e == 0) return as_float(sign | as_uint((float)m * 0x1p-24f)); /* exact */
    return as_float(sign | ((e + 112u) << 23) | (m << 13));
}
ushort gf_f2h(float f) {
    uint u = as_uint(f), a = u & 0x7fffffffu;
    ushort sign = (ushort)((u >> 16) & 0x8000u);
    if (a > 0x7f800000u) return sign | 0x7e00;         /* NaN */
    if (a >= 0x477ff000u) return sign | 0x7c00;        /* 65520 and above: inf */
    if (a < 0x38800000u)                               /* below 2^-14: units of 2^-24 */
        return sign | (ushort)rint(as_float(a) * 0x1p24f); /* exact product, ties to even */
    uint r = a - 0x38000000u;                          /* rebias 127 -> 15 */
    r += 0xfffu + ((r >> 13) & 1u);
    return sign | (ushort)(r >> 13);
}
float gf_b2f(ushort b) {
    uint u = (uint)b << 16;
    return as_float((u & 0x7fffffffu) > 0x7f800000u ? u | 0x400000u : u); /* NaN made quiet */
}
ushort gf_f2b(float f) {
    uint u = as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (ushort)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (ushort)(u >> 16);
}
#if GF_HAS_FP64
ushort gf_d2h(double v) {
    ushort sign = signbit(v) ? 0x8000 : 0;
    if (isnan(v)) return sign | 0x7e00;
    double a = fabs(v);
    if (a >= 65520.0) return sign | 0x7c00;
    if (a < 0x1p-14) return sign | (ushort)rint(a * 0x1p24);
    int e = ilogb(a);                      /* a = q * 2^(e - 10), q in [1024, 2048) */
    double q = rint(ldexp(a, 10 - e));
    if (q >= 2048.0) { q = 1024.0; e++; }
    if (e > 15) return sign | 0x7c00;
    return sign | (ushort)(((uint)(e + 15) << 10) | ((uint)q & 0x3ffu));
}
ushort gf_d2b(double v) {
    if (isnan(v)) return gf_f2b((float)v);
    float f = (float)v; /* nearest f32; where that tie-breaks wrongly, step toward v */
    uint u = as_uint(f);
    if ((u & 0xffffu) == 0x8000u && (double)f != v)
        u = (double)f < v ? (f > 0 ? u + 1 : u - 1) : (f > 0 ? u - 1 : u + 1);
    return gf_f2b(as_float(u));
}
#endif
/* LOAD / STORE of a 16-bit dtype's element as f32. */
#define GF_LD_f16(v) gf_h2f(v)
#define GF_ST_f16(v) gf_f2h(v)
#define GF_LD_bf16(v) gf_b2f(v)
#define GF_ST_bf16(v) gf_f2b(v)

/* Atomic adds into global memory (SCATTER_ADD, INDEX_ADD, pooling
 * gradients): floats through compare-and-swap loops, integers wrap. */
void gf_atomic_add_f32(volatile __global float *p, float v) {
    volatile __global uint *u = (volatile __global uint *)p;
    uint old = *u, seen;
    while ((seen = atomic_cmpxchg(u, old, as_uint(as_float(old) + v))) != old) old = seen;
}
void gf_atomic_add_i32(volatile __global int *p, int v) { atomic_add(p, v); }
/* f16 and bf16: compare-and-swap on the aligned 32-bit word that holds the
 * element (its other half may be another element, updated concurrently:
 * the swap keeps it), the sum computed in f32 and rounded once. */
#define GF_ATOMIC_ADD_HALF(DT)                                                             \
    void gf_atomic_add_##DT(volatile __global ushort *p, ushort v) {                       \
        volatile __global uint *w = (volatile __global uint *)((size_t)p & ~(size_t)3);    \
        uint shift = ((size_t)p & 2) ? 16u : 0u;                                          \
        if (!GF_LITTLE_ENDIAN) shift = 16u - shift;                                        \
        float add = GF_LD_##DT(v);                                                         \
        uint old = *w, seen;                                                               \
        for (;;) {                                                                         \
            ushort nv = GF_ST_##DT(GF_LD_##DT((ushort)(old >> shift)) + add);             \
            uint nw = (old & ~(0xffffu << shift)) | ((uint)nv << shift);                   \
            if ((seen = atomic_cmpxchg(w, old, nw)) == old) break;                         \
            old = seen;                                                                    \
        }                                                                                  \
    }
#ifdef __ENDIAN_LITTLE__
#define GF_LITTLE_ENDIAN 1
#else
#define GF_LITTLE_ENDIAN 0
#endif
GF_ATOMIC_ADD_HALF(f16)
GF_ATOMIC_ADD_HALF(bf16)
#if GF_HAS_INT64_ATOMICS
void gf_atomic_add_i64(volatile __global long *p, long v) { atom_add(p, v); }
#if GF_HAS_FP64
void gf_atomic_add_f64(volatile __global double *p, double v) {
    volatile __global ulong *u = (volatile __global ulong *)p;
    ulong old = *u, seen;
    while ((seen = atom_cmpxchg(u, old, as_ulong(as_double(old) + v))) != old) old = seen;
}
#endif
#endif

