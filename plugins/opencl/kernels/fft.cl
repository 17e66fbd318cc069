/* SPDX-License-Identifier: BSD-3-Clause */
/* fft.cl — the FFT's 1-D transforms on a contiguous work array of cx
 * (double2 on a device with doubles, else float2), a work-group per block
 * of lines in local memory or a work-item per line (ocl_fft.c picks the
 * form, loads the tensor into the work array and stores it back with the
 * complex copy kernels).
 *
 * A line of length n = 2^p is transformed in place by an iterative radix-2
 * decimation-in-time FFT reading a table of the n roots of its sign (in
 * local memory two stages at a time; long lines by the four-step split);
 * any other length by Bluestein's algorithm: the DFT as the convolution of
 * the line times a chirp with the conjugate chirp, through power-of-two
 * transforms of length m >= 2n - 1 in scratch lines, the conjugate chirp's
 * transform (bhat) computed once per dim. Roots and chirp
 * values come from exact integer angles reduced to [-n/2, n/2] and
 * cospi/sinpi, so the error stays near eps * log2(n). */

#if GF_HAS_FP64
typedef double cr;
typedef double2 cx;
#else
typedef float cr;
typedef float2 cx;
#endif

cx fx_mul(cx a, cx b) { return (cx)(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }

/* exp(sign 2 pi i k / n), 0 <= k. */
cx fx_root(long k, long n, int sign) {
    long r = k % n;
    if (2 * r > n) r -= n;
    cr t = (cr)(2 * r) / (cr)n;
    return (cx)(cospi(t), sign * sinpi(t));
}

/* tw[k] = exp(sign 2 pi i k / n), k < n / 2 (the radix-2 stages read no
 * more). */
__kernel void fx_roots(__global cx *tw, long n, int sign) {
    long k = get_global_id(0);
    if (k < n / 2) tw[k] = fx_root(k, n, sign);
}

/* chirp[k] = exp(sign pi i k^2 / n) = root(k^2 mod 2n, 2n), k < n. */
__kernel void fx_chirp(__global cx *chirp, long n, int sign) {
    long k = get_global_id(0);
    if (k >= n) return;
    ulong two_n = 2 * (ulong)n, kk = (ulong)k; /* n < 2^31: k^2 fits */
    chirp[k] = fx_root((long)((kk * kk) % two_n), 2 * n, sign);
}

/* bhat before its transform: conj(chirp) wrapped around a line of m. */
__kernel void fx_chirp_wrap(__global cx *bh, __global const cx *chirp, long n, long m) {
    long j = get_global_id(0);
    if (j >= m) return;
    cx v = (cx)(0, 0);
    if (j < n) v = chirp[j];
    else if (m - j < n) v = chirp[m - j];
    bh[j] = (cx)(v.x, -v.y);
}

/* i's lowest p bits in reverse order. */
long fx_rev(long i, int p) {
    long r = 0;
    for (int b = 0; b < p; b++, i >>= 1) r = (r << 1) | (i & 1);
    return r;
}

/* In place: the line a[0], a[s], .., a[(n-1)s], n = 2^p, tw the first
 * half of the roots of n. */
void fx_pow2(__global cx *a, long s, long n, __global const cx *tw) {
    for (long i = 1, j = 0; i < n; i++) { /* bit reversal */
        long bit = n >> 1;
        for (; j & bit; bit >>= 1) j ^= bit;
        j ^= bit;
        if (i < j) {
            cx t = a[i * s];
            a[i * s] = a[j * s];
            a[j * s] = t;
        }
    }
    for (long len = 2; len <= n; len <<= 1) {
        long hl = len >> 1, step = n / len;
        for (long i0 = 0; i0 < n; i0 += len)
            for (long j = 0; j < hl; j++) {
                cx u = a[(i0 + j) * s], v = fx_mul(a[(i0 + j + hl) * s], tw[j * step]);
                a[(i0 + j) * s] = u + v;
                a[(i0 + j + hl) * s] = u - v;
            }
    }
}

/* Lines first .. first + count - 1 of the work array w, one per work-item
 * (lines of n along a dim of stride `inner`: line l starts at
 * (l / inner) * n * inner + l % inner). */
#define FX_LINE                                                      \
    long g = get_global_id(0), l = first + g;                          \
    if (g >= count) return;                                            \
    __global cx *line = w + (l / inner) * n * inner + l % inner;

__kernel void fx_lines_pow2(__global cx *w, long n, long inner, long first, long count,
                            __global const cx *tw) {
    FX_LINE
    fx_pow2(line, inner, n, tw);
}

/* i's lowest p bits (p <= 32) reversed, by swaps. */
uint fx_rev32(uint i, int p) {
    i = ((i >> 1) & 0x55555555u) | ((i & 0x55555555u) << 1);
    i = ((i >> 2) & 0x33333333u) | ((i & 0x33333333u) << 2);
    i = ((i >> 4) & 0x0f0f0f0fu) | ((i & 0x0f0f0f0fu) << 4);
    i = ((i >> 8) & 0x00ff00ffu) | ((i & 0x00ff00ffu) << 8);
    i = (i >> 16) | (i << 16);
    return p == 0 ? 0u : i >> (32 - p);
}

/* Lines of n = 2^p held in local memory, 2^lc lines per work-group (the
 * launch's lines 0 .. lines - 1; consecutive lines of a dim of stride
 * inner > 1 are neighbours in memory, so a group's loads and stores take
 * whole cache lines): loaded in bit-reversed order, then the stages of
 * fx_pow2 two at a time (radix 4: the same butterflies with the same
 * twiddles), a barrier between pairs, and stored back. Every work-item
 * reaches every barrier; only the loads and stores of lines past the
 * launch's end are skipped. */
/* With tn > 0, element i of line l is stored times w_tn^(i (l % inner))
 * (twn: the first tn / 2 roots of tn, the others their negatives): the
 * four-step split's column pass with its twiddles (ocl_fft.c). */
__kernel void fx_block(__global cx *w, long n, int p, long inner, long lines, int lc,
                       __global const cx *tw, __global const cx *twn, long tn,
                       __local cx *buf) {
    /* 2^lc lines of n = 2^p >= 4 per group of exactly 2^lc n / 4 items, so
     * that every item does the same straight-line work between barriers
     * (which lets a CPU driver vectorise across items): item lid loads and
     * stores rows r, r + n/4, r + n/2, r + 3n/4 of line c, and does one
     * radix-4 butterfly of each pair of stages. */
    int lid = get_local_id(0), cols = 1 << lc, ni = (int)n, q = ni >> 2;
    int c = lid & (cols - 1), r = lid >> lc;
    long l = (long)get_group_id(0) * cols + c;
    bool live = l < lines;
    __global cx *line = w + (inner == 1 ? l * n : (l / inner) * n * inner + l % inner);
    __local cx *mine = buf + c * ni;
    if (live) {
        mine[fx_rev32((uint)r, p)] = line[r * inner];
        mine[fx_rev32((uint)(r + q), p)] = line[(r + q) * inner];
        mine[fx_rev32((uint)(r + 2 * q), p)] = line[(r + 2 * q) * inner];
        mine[fx_rev32((uint)(r + 3 * q), p)] = line[(r + 3 * q) * inner];
    }
    int s = 1, bc = lid >> (p - 2), bb = lid & (q - 1);
    for (; s + 1 <= p; s += 2) {
        barrier(CLK_LOCAL_MEM_FENCE);
        int hl = 1 << (s - 1), j = bb & (hl - 1);
        __local cx *a = buf + bc * ni + ((bb >> (s - 1)) << (s + 1)) + j;
        cx t1 = tw[j << (p - s)];
        cx u0 = a[0], v0 = fx_mul(a[hl], t1);
        cx u1 = a[2 * hl], v1 = fx_mul(a[3 * hl], t1);
        cx x0 = u0 + v0, x1 = u0 - v0, x2 = u1 + v1, x3 = u1 - v1;
        cx y2 = fx_mul(x2, tw[j << (p - s - 1)]);
        cx y3 = fx_mul(x3, tw[(j + hl) << (p - s - 1)]);
        a[0] = x0 + y2;
        a[2 * hl] = x0 - y2;
        a[hl] = x1 + y3;
        a[3 * hl] = x1 - y3;
    }
    if (s == p) { /* an odd count: the last stage alone, two butterflies an item */
        barrier(CLK_LOCAL_MEM_FENCE);
        int hl = 1 << (s - 1);
        for (int k = 0; k < 2; k++) {
            int b = lid + k * (cols * q), j = b & (hl - 1);
            __local cx *a = buf + (b >> (p - 1)) * ni + j;
            cx u = a[0], v = fx_mul(a[hl], tw[j << (p - s)]);
            a[0] = u + v;
            a[hl] = u - v;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (live && tn > 0) {
        long jc = l % inner;
        for (int k = 0; k < 4; k++) {
            long i = r + k * q, e = (i * jc) % tn;
            cx t = e < tn / 2 ? twn[e] : -twn[e - tn / 2];
            line[i * inner] = fx_mul(mine[i], t);
        }
    } else if (live) {
        line[r * inner] = mine[r];
        line[(r + q) * inner] = mine[r + q];
        line[(r + 2 * q) * inner] = mine[r + 2 * q];
        line[(r + 3 * q) * inner] = mine[r + 3 * q];
    }
}

/* The four-step split of long lines of n = n1 n2 = 2^(p1 + p2), each held
 * as [n1][n2]: the length-n1 column transforms leave element (k1, j2)
 * times the root k1 j2 of n (fx_block); after the length-n2 row transforms,
 * (k1, k2) is bin k1 + n1 k2, which fx_transpose puts in place. */
__kernel void fx_transpose(__global cx *dst, __global const cx *src, long total, int p1, int p2) {
    long e = get_global_id(0);
    if (e >= total) return;
    long n = (long)1 << (p1 + p2), r = e & (n - 1), b = e - r;
    long k1 = r >> p2, k2 = r & (((long)1 << p2) - 1);
    dst[b + k1 + (k2 << p1)] = src[e];
}

/* fx_transpose through 16 x 16 tiles in local memory: a group of 16 x 16
 * items reads 16 rows of 16 (k1, k2) and writes them as 16 runs of 16 bins
 * (n1, n2 >= 16; dim 0 walks k2, dim 1 the lines' rows l n1 + k1). */
__kernel void fx_transpose_tiled(__global cx *dst, __global const cx *src, int p1, int p2) {
    __local cx tile[16][17];
    int tx = get_local_id(0), ty = get_local_id(1);
    long row = get_global_id(1);
    tile[ty][tx] = src[(row << p2) + get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    long r0 = (long)get_group_id(1) * 16, l = r0 >> p1, k1 = (r0 & (((long)1 << p1) - 1)) + tx;
    long k2 = (long)get_group_id(0) * 16 + ty;
    dst[(l << (p1 + p2)) + (k2 << p1) + k1] = tile[tx][ty];
}

/* The same transform for few long lines: a bit-reversal launch, then one
 * launch per stage with an item per butterfly (the same operations in the
 * same order per element, so both forms give the same bits). */

__kernel void fx_bitrev(__global cx *w, long n, int p, long inner, long lines) {
    long e = get_global_id(0);
    if (e >= lines * n) return;
    long l = e >> p, i = e & (n - 1), j = fx_rev(i, p);
    if (i >= j) return;
    __global cx *line = w + (l / inner) * n * inner + l % inner;
    cx t = line[i * inner];
    line[i * inner] = line[j * inner];
    line[j * inner] = t;
}

/* Stage s (len = 2^s) of lines of n = 2^p: shifts and masks, no division
 * but the line's own. */
__kernel void fx_stage(__global cx *w, long n, int p, long inner, long lines, int s,
                       __global const cx *tw) {
    long e = get_global_id(0);
    if (e >= lines << (p - 1)) return;
    long l = e >> (p - 1), b = e & ((n >> 1) - 1), hl = (long)1 << (s - 1);
    long i0 = (b >> (s - 1)) << s, j = b & (hl - 1);
    __global cx *line = w + (inner == 1 ? l * n : (l / inner) * n * inner + l % inner);
    cx u = line[(i0 + j) * inner], v = fx_mul(line[(i0 + j + hl) * inner], tw[j << (p - s)]);
    line[(i0 + j) * inner] = u + v;
    line[(i0 + j + hl) * inner] = u - v;
}

/* Bluestein, an item per line (the lines form): scratch holds a line of m
 * per work-item of this launch;
 * twf and twi the roots of m of signs -1 and +1. */
__kernel void fx_lines_bluestein(__global cx *w, long n, long inner, long first, long count,
                                 long m, __global const cx *chirp, __global const cx *bhat,
                                 __global const cx *twf, __global const cx *twi,
                                 __global cx *scratch) {
    FX_LINE
    __global cx *t = scratch + g * m;
    for (long j = 0; j < m; j++) t[j] = j < n ? fx_mul(line[j * inner], chirp[j]) : (cx)(0, 0);
    fx_pow2(t, 1, m, twf);
    for (long j = 0; j < m; j++) t[j] = fx_mul(t[j], bhat[j]);
    fx_pow2(t, 1, m, twi);
    cr inv_m = (cr)1 / (cr)m; /* exact: m is a power of two */
    for (long k = 0; k < n; k++) line[k * inner] = fx_mul(chirp[k], t[k]) * inv_m;
}

/* Bluestein over lines first .. first + count - 1 of w (lines of n along a
 * dim of stride inner), scratch t holding a line of m for each: fx_bs_in
 * writes line times chirp, zero-padded to m; fx_bs_mul multiplies t's
 * transforms by bhat; fx_bs_out writes chirp times the inverse transform
 * over m back into the line (an item per element). */
#define FX_BS_LINE(e, len)                                                       \
    long e = get_global_id(0), g = e / len, j = e - g * len, l = first + g;       \
    if (g >= count) return;                                                      \
    __global cx *line = w + (l / inner) * n * inner + l % inner;

__kernel void fx_bs_in(__global cx *w, long n, long inner, long first, long count, long m,
                       __global const cx *chirp, __global cx *t) {
    FX_BS_LINE(e, m)
    t[e] = j < n ? fx_mul(line[j * inner], chirp[j]) : (cx)(0, 0);
}

__kernel void fx_bs_mul(__global cx *w, long n, long inner, long first, long count, long m,
                        __global const cx *bhat, __global cx *t) {
    long e = get_global_id(0);
    if (e >= count * m) return;
    t[e] = fx_mul(t[e], bhat[e % m]);
}

__kernel void fx_bs_out(__global cx *w, long n, long inner, long first, long count, long m,
                        __global const cx *chirp, __global const cx *t) {
    FX_BS_LINE(e, n)
    cr inv_m = (cr)1 / (cr)m; /* exact: m is a power of two */
    line[j * inner] = fx_mul(chirp[j], t[g * m + j]) * inv_m;
}

/* C2R: the full lines of dl (length n, from h = n/2 + 1 stored bins) by
 * conjugate symmetry, y-shaped w2 from x-shaped w (both contiguous). */
__kernel void fx_extend(__global cx *w2, __global const cx *w, long total, long n, long h,
                        long inner) {
    long e = get_global_id(0);
    if (e >= total) return;
    long i = e % inner, j = (e / inner) % n, o = e / (inner * n);
    long src = j < h ? j : n - j;
    cx v = w[(o * h + src) * inner + i];
    w2[e] = j < h ? v : (cx)(v.x, -v.y);
}

/* y = scale * w (strided y; w read through a strided view): the stores of
 * the result, complex or (C2R) real parts. */
#if GF_HAS_FP64
#define ST_c64(v) convert_float2_rte(v)
#define ST_c128(v) (v)
#define ST_f32(v) convert_float_rte((v).x)
#define ST_f64(v) ((v).x)
#else
#define ST_c64(v) (v)
#define ST_f32(v) ((v).x)
#endif
#define FX_STORE(DN, TD)                                                  \
    TD fx_store_##DN##_el(cx v, cr scale) { return ST_##DN(v * scale); }  \
    GF_EW2(fx_store_##DN, TD, cx, (, cr scale), (, scale))
FX_STORE(c64, float2)
FX_STORE(f32, float)
#if GF_HAS_FP64
FX_STORE(c128, double2)
FX_STORE(f64, double)
#endif
