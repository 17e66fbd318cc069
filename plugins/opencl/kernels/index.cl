/* SPDX-License-Identifier: BSD-3-Clause */
/* index.cl — INDEX_SELECT, GATHER, SCATTER_ADD, INDEX_ADD, and the index
 * check that runs before them.
 *
 * check_index sets flag[0] and leaves the offending index in flag[1] when an
 * index lies outside [0, limit); the host reads the flag before launching the
 * op, so a bad index fails the launch and leaves the output untouched (as
 * the reference plugin does). The selecting ops move bits (b1, b2, b4, b8); the
 * accumulating ones add atomically, so duplicate indices accumulate: floats
 * through compare-and-swap loops, integers with atomic adds (which wrap). */

__kernel void check_index(__global const long *ix, long oi, long8 sz, long8 st, int rank, long n,
                          long limit, __global long *flag) {
    long j = get_global_id(0);
    if (j >= n) return;
    long v = ix[oi + gf_line_offset(j, sz, st, rank)];
    if (v < 0 || v >= limit) {
        flag[1] = v;
        flag[0] = 1;
    }
}

/* The position p of linear index j over sizes sz (row-major), into p. */
void gf_position(long j, long8 sizes, int rank, long *p) {
    long sz[8];
    vstore8(sizes, 0, sz);
    for (int d = rank - 1; d >= 0; d--) {
        p[d] = j % sz[d];
        j /= sz[d];
    }
}
/* p . strides, with p[dim] replaced by at. */
long gf_dot_at(const long *p, long8 strides, int rank, int dim, long at) {
    long st[8];
    vstore8(strides, 0, st);
    long r = 0;
    for (int d = 0; d < rank; d++) r += (d == dim ? at : p[d]) * st[d];
    return r;
}

/* INDEX_SELECT: y.select(dim, i) = x.select(dim, index[i]); over y's shape. */
#define GF_INDEX_SELECT(B, T)                                                              \
    __kernel void index_select_##B(__global T *y, long oy, __global const T *x, long ox,   \
                                   __global const long *ix, long oi, long is0, long8 ysz,  \
                                   long8 ys, long8 xs, int rank, int dim, long n) {        \
        long j = get_global_id(0);                                                         \
        if (j >= n) return;                                                                \
        long p[8];                                                                         \
        gf_position(j, ysz, rank, p);                                                      \
        long at = ix[oi + p[dim] * is0];                                                   \
        y[oy + gf_dot_at(p, ys, rank, -1, 0)] = x[ox + gf_dot_at(p, xs, rank, dim, at)];   \
    }
/* GATHER: y[p] = x[p with p[dim] = index[p]]; over index's (= y's) shape. */
#define GF_GATHER(B, T)                                                                    \
    __kernel void gather_##B(__global T *y, long oy, __global const T *x, long ox,         \
                             __global const long *ix, long oi, long8 isz, long8 ys,        \
                             long8 xs, long8 is, int rank, int dim, long n) {              \
        long j = get_global_id(0);                                                         \
        if (j >= n) return;                                                                \
        long p[8];                                                                         \
        gf_position(j, isz, rank, p);                                                      \
        long at = ix[oi + gf_dot_at(p, is, rank, -1, 0)];                                  \
        y[oy + gf_dot_at(p, ys, rank, -1, 0)] = x[ox + gf_dot_at(p, xs, rank, dim, at)];   \
    }
GF_INDEX_SELECT(b1, uchar)
GF_INDEX_SELECT(b2, ushort)
GF_INDEX_SELECT(b4, uint)
GF_INDEX_SELECT(b8, ulong)
GF_GATHER(b1, uchar)
GF_GATHER(b2, ushort)
GF_GATHER(b4, uint)
GF_GATHER(b8, ulong)
/* c128 elements (c64 moves as b8) */
GF_INDEX_SELECT(b16, ulong2)
GF_GATHER(b16, ulong2)

/* SCATTER_ADD: y[p with p[dim] = index[p]] += src[p]; over index's shape. */
#define GF_SCATTER_ADD(DT, T)                                                              \
    __kernel void scatter_add_##DT(__global T *y, long oy, __global const T *src, long os, \
                                   __global const long *ix, long oi, long8 isz, long8 ys,  \
                                   long8 ss, long8 is, int rank, int dim, long n) {        \
        long j = get_global_id(0);                                                         \
        if (j >= n) return;                                                                \
        long p[8];                                                                         \
        gf_position(j, isz, rank, p);                                                      \
        long at = ix[oi + gf_dot_at(p, is, rank, -1, 0)];                                  \
        gf_atomic_add_##DT(y + oy + gf_dot_at(p, ys, rank, dim, at),                       \
                           src[os + gf_dot_at(p, ss, rank, -1, 0)]);                       \
    }
/* INDEX_ADD: y.select(dim, index[i]) += src.select(dim, i); over src's shape. */
#define GF_INDEX_ADD(DT, T)                                                                \
    __kernel void index_add_##DT(__global T *y, long oy, __global const T *src, long os,   \
                                 __global const long *ix, long oi, long is0, long8 ssz,    \
                                 long8 ys, long8 ss, int rank, int dim, long n) {          \
        long j = get_global_id(0);                                                         \
        if (j >= n) return;                                                                \
        long p[8];                                                                         \
        gf_position(j, ssz, rank, p);                                                      \
        long at = ix[oi + p[dim] * is0];                                                   \
        gf_atomic_add_##DT(y + oy + gf_dot_at(p, ys, rank, dim, at),                       \
                           src[os + gf_dot_at(p, ss, rank, -1, 0)]);                       \
    }
GF_SCATTER_ADD(f32, float)
GF_SCATTER_ADD(i32, int)
GF_SCATTER_ADD(f16, ushort)
GF_SCATTER_ADD(bf16, ushort)
GF_INDEX_ADD(f32, float)
GF_INDEX_ADD(i32, int)
GF_INDEX_ADD(f16, ushort)
GF_INDEX_ADD(bf16, ushort)
#if GF_HAS_INT64_ATOMICS
GF_SCATTER_ADD(i64, long)
GF_INDEX_ADD(i64, long)
#if GF_HAS_FP64
GF_SCATTER_ADD(f64, double)
GF_INDEX_ADD(f64, double)
#endif
#endif
