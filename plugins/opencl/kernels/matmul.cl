/* SPDX-License-Identifier: BSD-3-Clause */
/* matmul.cl — MATMUL: y[b, m, n] = sum_k a[b, m, k] * b[b, k, n].
 *
 * Operands are any strided views: (a_m, a_k), (b_k, b_n), (y_m, y_n) are the
 * strides of the matrix dims, and the batch dims (bsz, with each operand's
 * strides; stride 0 for a broadcast batch) are unravelled from the launch's
 * dim 2. Floats use a tiled kernel: a work-group of GF_RTS x GF_RTS items
 * computes a GF_TS x GF_TS block of y, each item a GF_WPT x GF_WPT register
 * block, over GF_TSK-deep slices of a and b staged in local memory. Local id
 * 0 runs along n, so on a CPU device neighbouring lanes read neighbouring b
 * and y elements and share their a element. Products accumulate with mad()
 * (a fused multiply-add where the device has one) in the dtype. Integers use
 * a simple kernel with exact wrapping (ulong) accumulation.
 *
 * CPU devices get matmul_vec instead: a CPU driver vectorizes across
 * work-items only when the kernel has no loop of its own, which a GEMM
 * always has, so the kernel uses vector types itself. Each item computes
 * GF_RB rows by one vector of columns (16 floats, 8 doubles): per k, one
 * vector load of b's row, GF_RB scalar loads of a, GF_RB vector mads. It
 * needs b and y with unit column stride (the host stages other views).
 * Measured on PoCL (2 cores, AVX-512), this runs several times faster than
 * the tiled kernel, whose per-item register blocks the driver cannot keep
 * in registers across barriers. For n >= 128 the host packs a first
 * (matmul_pack, matmul_vecp below). */
#define GF_TS 64
#define GF_TSK 16
#define GF_WPT 4
#define GF_RTS (GF_TS / GF_WPT) /* 16: the work-group is 16 x 16 */
#define GF_LOADS (GF_TS * GF_TSK / (GF_RTS * GF_RTS))

/* 16-bit storage with f32 arithmetic, as in reduce.cl: GF_SLOT(T) is the
 * element type in memory for compute type T, GF_LD widens a loaded element,
 * GF_ST rounds a stored result; redefined before the f16 / bf16 kernels at
 * the end of this file. */
#define GF_SLOT(T) T
#define GF_LD(v) (v)
#define GF_ST(v) (v)

#define GF_MATMUL_ARGS(T)                                                                  \
    __global const T *A, long oa, __global const T *B, long ob, __global T *Y, long oy,    \
        long M, long N, long K, long a_m, long a_k, long b_k, long b_n, long y_m, long y_n, \
        long8 bsz, long8 bsa, long8 bsb, long8 bsy, int brank

#define GF_MATMUL_BATCH                                        \
    long bi_ = get_global_id(2);                               \
    oa += gf_line_offset(bi_, bsz, bsa, brank);                \
    ob += gf_line_offset(bi_, bsz, bsb, brank);                \
    oy += gf_line_offset(bi_, bsz, bsy, brank);

#define GF_MATMUL_TILED(DT, T)                                                             \
    __kernel __attribute__((reqd_work_group_size(GF_RTS, GF_RTS, 1))) void                  \
    matmul_tiled_##DT(GF_MATMUL_ARGS(GF_SLOT(T))) {                                                 \
        __local T As[GF_TSK][GF_TS];                                                       \
        __local T Bs[GF_TSK][GF_TS];                                                       \
        GF_MATMUL_BATCH                                                                    \
        int tn = get_local_id(0), tm = get_local_id(1);                                    \
        int tid = tm * GF_RTS + tn;                                                        \
        long n0 = get_group_id(0) * GF_TS, m0 = get_group_id(1) * GF_TS;                   \
        T acc[GF_WPT][GF_WPT];                                                             \
        for (int i = 0; i < GF_WPT; i++)                                                   \
            for (int j = 0; j < GF_WPT; j++) acc[i][j] = 0;                                \
        for (long k0 = 0; k0 < K; k0 += GF_TSK) {                                          \
            for (int l = 0; l < GF_LOADS; l++) {                                           \
                int e = tid + l * GF_RTS * GF_RTS;                                         \
                int kk = e / GF_TS, xx = e % GF_TS;                                        \
                long k = k0 + kk, m = m0 + xx, n = n0 + xx;                                \
                As[kk][xx] = (m < M && k < K) ? GF_LD(A[oa + m * a_m + k * a_k]) : (T)0;   \
                Bs[kk][xx] = (n < N && k < K) ? GF_LD(B[ob + k * b_k + n * b_n]) : (T)0;   \
            }                                                                              \
            barrier(CLK_LOCAL_MEM_FENCE);                                                  \
            for (int kk = 0; kk < GF_TSK; kk++) {                                          \
                T ar[GF_WPT], br[GF_WPT];                                                  \
                for (int i = 0; i < GF_WPT; i++) ar[i] = As[kk][tm + i * GF_RTS];          \
                for (int j = 0; j < GF_WPT; j++) br[j] = Bs[kk][tn + j * GF_RTS];          \
                for (int i = 0; i < GF_WPT; i++)                                           \
                    for (int j = 0; j < GF_WPT; j++) acc[i][j] = mad(ar[i], br[j], acc[i][j]); \
            }                                                                              \
            barrier(CLK_LOCAL_MEM_FENCE);                                                  \
        }                                                                                  \
        for (int i = 0; i < GF_WPT; i++) {                                                 \
            long m = m0 + tm + i * GF_RTS;                                                 \
            for (int j = 0; j < GF_WPT; j++) {                                             \
                long n = n0 + tn + j * GF_RTS;                                             \
                if (m < M && n < N) Y[oy + m * y_m + n * y_n] = GF_ST(acc[i][j]);          \
            }                                                                              \
        }                                                                                  \
    }

GF_MATMUL_TILED(f32, float)
#if GF_HAS_FP64
GF_MATMUL_TILED(f64, double)
#endif

#define GF_RB 16
/* The k loop and the stores of matmul_vec and matmul_vecp:
 * acc[i] += a(m0 + i, k) * b[k][n0, n0 + VW) over k, AK(i, k) being a's
 * value, then acc[i] into y's row m0 + i. No barrier, and the loops over
 * the rows unrolled: a CPU driver then keeps the accumulators in registers
 * (across a barrier, or indexed by a loop, PoCL kept them in memory: a
 * load, an add and a store per multiply, 3x slower). */
#define GF_VEC_BODY(T, VW, VT, VLOAD, VSTORE, AK)                                          \
    const __global GF_SLOT(T) *b = B + ob + n0;                                            \
    VT acc[GF_RB];                                                                         \
    _Pragma("unroll") for (int i = 0; i < GF_RB; i++) acc[i] = (VT)0;                      \
    for (long k = 0; live && k < K; k++) {                                                 \
        VT bv;                                                                             \
        if (full) {                                                                        \
            bv = VLOAD(0, b + k * b_k);                                                    \
        } else {                                                                           \
            T part[VW];                                                                    \
            for (int c = 0; c < VW; c++) part[c] = n0 + c < N ? GF_LD(b[k * b_k + c]) : (T)0; \
            bv = vload##VW(0, part);                                                       \
        }                                                                                  \
        _Pragma("unroll") for (int i = 0; i < GF_RB; i++)                                  \
            acc[i] = GF_VMAD((VT)(AK(i, k)), bv, acc[i]);                                  \
    }                                                                                      \
    _Pragma("unroll") for (int i = 0; i < GF_RB; i++) {                                    \
        if (!live || m0 + i >= M) break;                                                   \
        __global GF_SLOT(T) *yr = Y + oy + (m0 + i) * y_m + n0;                            \
        if (full) {                                                                        \
            VSTORE(acc[i], 0, yr);                                                         \
        } else {                                                                           \
            T part[VW];                                                                    \
            vstore##VW(acc[i], 0, part);                                                   \
            for (int c = 0; n0 + c < N; c++) yr[c] = GF_ST(part[c]);                       \
        }                                                                                  \
    }
#define GF_AK_ROWS(i, k) GF_LD(ar[i][(k) * a_k])
#define GF_MATMUL_VEC(DT, T, VW, VT, VLOAD, VSTORE)                                        \
    __kernel void matmul_vec_##DT(GF_MATMUL_ARGS(GF_SLOT(T))) {                            \
        GF_MATMUL_BATCH                                                                    \
        long n0 = get_global_id(0) * VW, m0 = get_global_id(1) * GF_RB;                    \
        bool live = n0 < N && m0 < M, full = n0 + VW <= N;                                 \
        const __global GF_SLOT(T) *ar[GF_RB];                                              \
        _Pragma("unroll") for (int i = 0; i < GF_RB; i++)                                  \
            ar[i] = A + oa + max(min(m0 + i, M - 1), 0L) * a_m;                            \
        GF_VEC_BODY(T, VW, VT, VLOAD, VSTORE, GF_AK_ROWS)                                  \
    }
GF_MATMUL_VEC(f32, float, 16, float16, vload16, vstore16)
#if GF_HAS_FP64
GF_MATMUL_VEC(f64, double, 8, double8, vload8, vstore8)
#endif

/* a packed for matmul_vecp (CPU devices, ocl_matmul.c): panels of GF_RB
 * rows, P[((bi * np + p) * K + k) * GF_RB + i] = a[bi][p * GF_RB + i][k]
 * (0 past M), in the compute type. An item per (k, panel, batch). */
#define GF_MATMUL_PACK(DT, T)                                                              \
    __kernel void matmul_pack_##DT(__global const GF_SLOT(T) *A, long oa, long M, long K,  \
                                   long a_m, long a_k, long8 bsz, long8 bsa, int brank,    \
                                   __global T *P) {                                        \
        long k = get_global_id(0), p = get_global_id(1), bi = get_global_id(2);            \
        long np = (M + GF_RB - 1) / GF_RB;                                                 \
        if (k >= K || p >= np) return;                                                     \
        oa += gf_line_offset(bi, bsz, bsa, brank);                                         \
        __global T *out = P + ((bi * np + p) * K + k) * GF_RB;                             \
        _Pragma("unroll") for (int i = 0; i < GF_RB; i++) {                                \
            long m = p * GF_RB + i;                                                        \
            out[i] = m < M ? GF_LD(A[oa + m * a_m + k * a_k]) : (T)0;                      \
        }                                                                                  \
    }
/* matmul_vec over a packed a (matmul_pack): the GF_RB values of a that a
 * step of k multiplies are neighbours, each a broadcast at a constant
 * offset from one pointer. matmul_vec keeps a pointer per row, more than a
 * CPU has registers for, and indexes them with a's strides (measured on
 * PoCL: [1024, 1024] @ [1024, 1024] in 14.1 ms packed against 22). */
#define GF_AK_PACKED(i, k) ap[(k) * GF_RB + (i)]
#define GF_MATMUL_VECP(DT, T, VW, VT, VLOAD, VSTORE)                                       \
    __kernel void matmul_vecp_##DT(__global const T *P, __global const GF_SLOT(T) *B, long ob, \
                                   __global GF_SLOT(T) *Y, long oy, long M, long N, long K, \
                                   long b_k, long y_m, long8 bsz, long8 bsb, long8 bsy,    \
                                   int brank) {                                            \
        long bi_ = get_global_id(2);                                                       \
        ob += gf_line_offset(bi_, bsz, bsb, brank);                                        \
        oy += gf_line_offset(bi_, bsz, bsy, brank);                                        \
        long n0 = get_global_id(0) * VW, m0 = get_global_id(1) * GF_RB;                    \
        long np = (M + GF_RB - 1) / GF_RB;                                                 \
        bool live = n0 < N && m0 < M, full = n0 + VW <= N;                                 \
        const __global T *ap = P + (bi_ * np + m0 / GF_RB) * K * GF_RB;                    \
        GF_VEC_BODY(T, VW, VT, VLOAD, VSTORE, GF_AK_PACKED)                                \
    }
GF_MATMUL_PACK(f32, float)
GF_MATMUL_VECP(f32, float, 16, float16, vload16, vstore16)
#if GF_HAS_FP64
GF_MATMUL_PACK(f64, double)
GF_MATMUL_VECP(f64, double, 8, double8, vload8, vstore8)
#endif

/* One output per item: for devices whose work-groups are too small for the
 * tiled kernel. */
#define GF_MATMUL_NAIVE(DT, T)                                                             \
    __kernel void matmul_naive_##DT(GF_MATMUL_ARGS(GF_SLOT(T))) {                                   \
        GF_MATMUL_BATCH                                                                    \
        long n = get_global_id(0), m = get_global_id(1);                                   \
        if (m >= M || n >= N) return;                                                      \
        T acc = 0;                                                                         \
        for (long k = 0; k < K; k++)                                                       \
            acc = mad(GF_LD(A[oa + m * a_m + k * a_k]), GF_LD(B[ob + k * b_k + n * b_n]), acc); \
        Y[oy + m * y_m + n * y_n] = GF_ST(acc);                                            \
    }
GF_MATMUL_NAIVE(f32, float)
#if GF_HAS_FP64
GF_MATMUL_NAIVE(f64, double)
#endif

/* Integers: one output per item, wrapping i64 arithmetic, narrowed on store. */
#define GF_MATMUL_INT(DT, T)                                                               \
    __kernel void matmul_int_##DT(GF_MATMUL_ARGS(T)) {                                     \
        GF_MATMUL_BATCH                                                                    \
        long n = get_global_id(0), m = get_global_id(1);                                   \
        if (m >= M || n >= N) return;                                                      \
        ulong acc = 0;                                                                     \
        for (long k = 0; k < K; k++)                                                       \
            acc += as_ulong((long)A[oa + m * a_m + k * a_k]) *                             \
                   as_ulong((long)B[ob + k * b_k + n * b_n]);                              \
        Y[oy + m * y_m + n * y_n] = GF_NARROW_##DT(as_long(acc));                          \
    }
GF_MATMUL_INT(i32, int)
GF_MATMUL_INT(i64, long)

/* ---------------------------------------------------------------- f16, bf16 */
/* The float kernels over ushort storage: elements widen to f32 as they are
 * loaded, products accumulate in f32 and each result is rounded once. The
 * vector kernel's loads widen sixteen lanes at a time; its stores round lane
 * by lane (common.cl's conversions, bit for bit the reference's). */
float16 gf_vld16_bf16(size_t o, const __global ushort *p) {
    return as_float16(convert_uint16(vload16(o, p)) << 16);
}
float16 gf_vld16_f16(size_t o, const __global ushort *p) {
    uint16 h = convert_uint16(vload16(o, p));
    uint16 sign = (h & 0x8000u) << 16, em = h & 0x7fffu;
    uint16 normal = (em << 13) + (112u << 23);                 /* rebias 15 -> 127 */
    uint16 sub = as_uint16(convert_float16(em) * 0x1p-24f);    /* zero and subnormals */
    uint16 special = (em << 13) | 0x7f800000u;                 /* inf and NaN */
    uint16 r = select(normal, sub, em < 0x400u);
    r = select(r, special, em >= 0x7c00u);
    return as_float16(r | sign);
}
#define GF_VST16_HALF(DT)                                                                  \
    void gf_vst16_##DT(float16 v, size_t o, __global ushort *p) {                          \
        float f[16];                                                                       \
        vstore16(v, 0, f);                                                                 \
        for (int i = 0; i < 16; i++) p[o * 16 + i] = GF_ST_##DT(f[i]);                     \
    }
GF_VST16_HALF(f16)
GF_VST16_HALF(bf16)

#undef GF_SLOT
#undef GF_LD
#undef GF_ST
#define GF_SLOT(T) ushort
#define GF_LD(v) gf_h2f(v)
#define GF_ST(v) gf_f2h(v)
GF_MATMUL_TILED(f16, float)
GF_MATMUL_VEC(f16, float, 16, float16, gf_vld16_f16, gf_vst16_f16)
GF_MATMUL_PACK(f16, float)
GF_MATMUL_VECP(f16, float, 16, float16, gf_vld16_f16, gf_vst16_f16)
GF_MATMUL_NAIVE(f16, float)
#undef GF_LD
#undef GF_ST
#define GF_LD(v) gf_b2f(v)
#define GF_ST(v) gf_f2b(v)
GF_MATMUL_TILED(bf16, float)
GF_MATMUL_VEC(bf16, float, 16, float16, gf_vld16_bf16, gf_vst16_bf16)
GF_MATMUL_PACK(bf16, float)
GF_MATMUL_VECP(bf16, float, 16, float16, gf_vld16_bf16, gf_vst16_bf16)
GF_MATMUL_NAIVE(bf16, float)
