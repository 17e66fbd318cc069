/* SPDX-License-Identifier: BSD-3-Clause */
/* omp_index.c — INDEX_SELECT, GATHER, SCATTER_ADD and INDEX_ADD in C loops
 * parallelised with OpenMP (oneDNN has no indexing).
 *
 * The semantics are the reference's (ref_index.c); anything it would refuse
 * (shapes, ranks, dtypes, an index out of range: every index is checked
 * before anything is written) goes to it, which names the problem.
 *
 * The accumulating ops are split so that no two threads write one element:
 * an element of y only receives from positions that share its coordinates
 * outside `dim`, so threads take disjoint sets of those coordinates and walk
 * `dim` in order inside. The additions then happen in the reference's order
 * and round as its do (in double, once per addition), so results agree to
 * the bit. Work is cut into units of (coordinates outside `dim` and the run,
 * a chunk of the run), the run being the last dim other than `dim`
 * (unit-stride in contiguous tensors); the selecting ops also split `dim`. */
#include <string.h>

#include "onednn_internal.h"

#define CHUNK 512

typedef struct ix_plan {
    uint32_t op;
    int dim, rank;
    const gfp_tensor *data, *index, *dst; /* data: x or src; dst: y */
    /* the walk: dims of the walked shape other than dim and the run dim */
    int run_dim;         /* -1: no dim besides `dim` (rank 1) */
    int64_t run_len, n_chunks, positions;
} ix_plan;

static char *base(const gfp_tensor *t) { return (char *)t->buffer + t->offset; }

/* Every index in [0, limit): a parallel pass before anything is written. */
static bool indices_ok(const gfp_tensor *index, int64_t limit) {
    const int64_t *ib = (const int64_t *)(const void *)base(index);
    int64_t n = pk_numel(index), bad = 0;
    int r = index->rank;
    int nt = odn_threads(n);
    if (r == 1) { /* no divisions (they cost more than the gather itself) */
        int64_t s = index->strides[0];
        ODN_PARALLEL_FOR(nt, reduction(+ : bad) schedule(static), for (int64_t i = 0; i < n; i++)
            bad += ib[i * s] < 0 || ib[i * s] >= limit;);
        return bad == 0;
    }
    ODN_PARALLEL_FOR(nt, reduction(+ : bad) schedule(static), for (int64_t i = 0; i < n; i++) {
        int64_t off = 0, j = i;
        for (int d = r - 1; d >= 0; d--) {
            off += (j % index->sizes[d]) * index->strides[d];
            j /= index->sizes[d];
        }
        int64_t v = ib[off];
        bad += v < 0 || v >= limit;
    });
    return bad == 0;
}

/* n elements: y[yo + j * ys] (+)= x[xo + j * xs]. Floats add in double and
 * round once per addition, integers wrap: the reference's arithmetic. */
#define ROW(T, ADD)                                                                      \
    do {                                                                                 \
        T *d = (T *)(void *)y + yo;                                                      \
        const T *s = (const T *)(const void *)x + xo;                                    \
        if (!add)                                                                        \
            for (int64_t j = 0; j < n; j++) d[j * ys] = s[j * xs];                       \
        else                                                                             \
            for (int64_t j = 0; j < n; j++) d[j * ys] = ADD(d[j * ys], s[j * xs]);       \
    } while (0)
#define ADD_F32(a, b) ((float)((double)(a) + (double)(b)))
#define ADD_F64(a, b) ((a) + (b))
#define ADD_I32(a, b) ((int32_t)(uint32_t)((uint64_t)(int64_t)(a) + (uint64_t)(int64_t)(b)))
#define ADD_I64(a, b) ((int64_t)((uint64_t)(a) + (uint64_t)(b)))
#define ADD_NONE(a, b) (b)

static void row(int32_t dtype, char *y, int64_t yo, int64_t ys, const char *x, int64_t xo,
                int64_t xs, int64_t n, bool add) {
    switch (dtype) {
    case GFP_F32: ROW(float, ADD_F32); break;
    case GFP_F64: ROW(double, ADD_F64); break;
    case GFP_I32: ROW(int32_t, ADD_I32); break;
    case GFP_I64: ROW(int64_t, ADD_I64); break;
    default: ROW(uint8_t, ADD_NONE); break; /* bool: selecting ops only */
    }
}

/* Offsets in t of walk position `pos` (the dims other than dim and run_dim,
 * flattened in order over the walked tensor's sizes). */
static int64_t pos_offset(const ix_plan *p, const gfp_tensor *walked, const gfp_tensor *t,
                          int64_t pos) {
    int64_t off = 0;
    for (int d = p->rank - 1; d >= 0; d--) {
        if (d == p->dim || d == p->run_dim) continue;
        off += (pos % walked->sizes[d]) * t->strides[d];
        pos /= walked->sizes[d];
    }
    return off;
}

/* INDEX_SELECT (y.select(dim, i) = x.select(dim, index[i])) and INDEX_ADD
 * (y.select(dim, index[i]) += src.select(dim, i)): `walked` is y or src. */
static void run_select(const ix_plan *p) {
    bool add = p->op == GFP_OP_INDEX_ADD;
    const gfp_tensor *x = p->data, *y = p->dst, *ix = p->index;
    const gfp_tensor *walked = add ? x : y;
    const int64_t *ib = (const int64_t *)(const void *)base(ix);
    int64_t is = ix->rank ? ix->strides[0] : 0, n_index = ix->rank ? ix->sizes[0] : 1;
    const char *xb = base(x);
    char *yb = base(y);
    /* Selecting single elements (a 1-D x, or [1, n] as stft's framing and
     * reflect padding make it): one plain gather, without the per-unit walk
     * (divisions and a call per element, 30x slower). */
    size_t es = pk_dtype_size(x->dtype);
    if (!add && p->positions == 1 && p->run_len == 1 && (es == 4 || es == 8)) {
        int64_t xd = x->strides[p->dim], yd = y->strides[p->dim];
        int nt = odn_threads(n_index);
        if (es == 4) {
            const uint32_t *s = (const uint32_t *)(const void *)xb;
            uint32_t *d = (uint32_t *)(void *)yb;
            ODN_PARALLEL_FOR(nt, schedule(static), for (int64_t i = 0; i < n_index; i++)
                d[i * yd] = s[ib[i * is] * xd];);
        } else {
            const uint64_t *s = (const uint64_t *)(const void *)xb;
            uint64_t *d = (uint64_t *)(void *)yb;
            ODN_PARALLEL_FOR(nt, schedule(static), for (int64_t i = 0; i < n_index; i++)
                d[i * yd] = s[ib[i * is] * xd];);
        }
        return;
    }
    /* selecting: every (position, chunk, i) is a unit; adding: i in order */
    int64_t per = add ? 1 : n_index, units = p->positions * p->n_chunks * per;
    int nt = odn_threads(p->positions * p->run_len * n_index);
    ODN_PARALLEL_FOR(nt, schedule(static), for (int64_t u = 0; u < units; u++) {
        int64_t pos = u / (p->n_chunks * per), c = u / per % p->n_chunks, i0 = u % per;
        int64_t lo = c * CHUNK, hi = lo + CHUNK < p->run_len ? lo + CHUNK : p->run_len;
        int64_t xo = pos_offset(p, walked, x, pos), yo = pos_offset(p, walked, y, pos);
        int64_t xr = p->run_dim >= 0 ? x->strides[p->run_dim] : 0;
        int64_t yr = p->run_dim >= 0 ? y->strides[p->run_dim] : 0;
        for (int64_t i = i0; i < (add ? n_index : i0 + 1); i++) {
            int64_t k = ib[i * is]; /* y's (add) or x's (select) position along dim */
            int64_t xd = (add ? i : k) * x->strides[p->dim], yd = (add ? k : i) * y->strides[p->dim];
            row(p->dst->dtype, yb, yo + yd + lo * yr, yr, xb, xo + xd + lo * xr, xr, hi - lo, add);
        }
    });
}

/* GATHER (y[q] = x[q with q[dim] = index[q]]) and SCATTER_ADD
 * (y[q with q[dim] = index[q]] += src[q]), q over index's shape. */
static void run_gather(const ix_plan *p) {
    bool add = p->op == GFP_OP_SCATTER_ADD;
    const gfp_tensor *x = p->data, *y = p->dst, *ix = p->index;
    const int64_t *ib = (const int64_t *)(const void *)base(ix);
    const char *xb = base(x);
    char *yb = base(y);
    int64_t n_dim = ix->sizes[p->dim], per = add ? 1 : n_dim;
    int64_t units = p->positions * p->n_chunks * per;
    int nt = odn_threads(pk_numel(ix));
    ODN_PARALLEL_FOR(nt, schedule(static), for (int64_t u = 0; u < units; u++) {
        int64_t pos = u / (p->n_chunks * per), c = u / per % p->n_chunks, i0 = u % per;
        int64_t lo = c * CHUNK, hi = lo + CHUNK < p->run_len ? lo + CHUNK : p->run_len;
        int64_t xo = pos_offset(p, ix, x, pos), yo = pos_offset(p, ix, y, pos);
        int64_t io = pos_offset(p, ix, ix, pos);
        int64_t xr = p->run_dim >= 0 ? x->strides[p->run_dim] : 0;
        int64_t yr = p->run_dim >= 0 ? y->strides[p->run_dim] : 0;
        int64_t ir = p->run_dim >= 0 ? ix->strides[p->run_dim] : 0;
        for (int64_t i = i0; i < (add ? n_dim : i0 + 1); i++) /* adding: in order */
            for (int64_t j = lo; j < hi; j++) {
                int64_t k = ib[io + i * ix->strides[p->dim] + j * ir];
                int64_t xd = (add ? i : k) * x->strides[p->dim];
                int64_t yd = (add ? k : i) * y->strides[p->dim];
                row(p->dst->dtype, yb, yo + yd + j * yr, 0, xb, xo + xd + j * xr, 0, 1, add);
            }
    });
}

/* The walk over `walked` (y for the selecting ops, src / index for the
 * accumulating ones): the run is the last dim other than dim. */
static void plan_walk(ix_plan *p, const gfp_tensor *walked) {
    p->run_dim = -1;
    for (int d = p->rank - 1; d >= 0; d--)
        if (d != p->dim) {
            p->run_dim = d;
            break;
        }
    p->run_len = p->run_dim >= 0 ? walked->sizes[p->run_dim] : 1;
    p->n_chunks = (p->run_len + CHUNK - 1) / CHUNK;
    p->positions = 1;
    for (int d = 0; d < p->rank; d++)
        if (d != p->dim && d != p->run_dim) p->positions *= walked->sizes[d];
}

static bool same_but_dim(const gfp_tensor *a, const gfp_tensor *b, int dim) {
    if (a->rank != b->rank) return false;
    for (int d = 0; d < a->rank; d++)
        if (d != dim && a->sizes[d] != b->sizes[d]) return false;
    return true;
}

gfp_status odn_index_launch(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                            const gfp_tensor *const *out, uint32_t n_out, const void *params) {
    const gfp_dim_params *dp = params;
    if (n_in != 2 || n_out != 1 || !in[0] || !in[1] || !out[0] || !dp ||
        dp->struct_size < GFP_DIM_PARAMS_SIZE_V1_0)
        return ODN_FALLBACK;
    ix_plan p = {.op = op, .dim = dp->dim, .data = in[0], .index = in[1], .dst = out[0]};
    const gfp_tensor *x = in[0], *ix = in[1], *y = out[0];
    bool selecting = op == GFP_OP_INDEX_SELECT || op == GFP_OP_GATHER;
    int32_t dt = x->dtype;
    bool number = dt == GFP_F32 || dt == GFP_F64 || dt == GFP_I32 || dt == GFP_I64;
    if (!(number || (selecting && dt == GFP_BOOL)) || y->dtype != dt || ix->dtype != GFP_I64)
        return ODN_FALLBACK;
    /* 0-dim tensors, empty ones, overlapping outputs: the reference's */
    if (x->rank == 0 || y->rank != x->rank || ix->rank == 0 || p.dim < 0 || p.dim >= x->rank ||
        pk_numel(x) == 0 || pk_numel(y) == 0 || pk_numel(ix) == 0 || !odn_writable(y))
        return ODN_FALLBACK;
    p.rank = x->rank;
    const gfp_tensor *indexed = selecting ? x : y; /* what index points into */
    if (op == GFP_OP_INDEX_SELECT || op == GFP_OP_INDEX_ADD) {
        const gfp_tensor *walked = op == GFP_OP_INDEX_SELECT ? y : x;
        if (ix->rank != 1 || !same_but_dim(x, y, p.dim) || walked->sizes[p.dim] != ix->sizes[0])
            return ODN_FALLBACK;
        plan_walk(&p, walked);
    } else {
        if (ix->rank != x->rank) return ODN_FALLBACK;
        if (op == GFP_OP_GATHER && !pk_same_shape(y, ix)) return ODN_FALLBACK;
        for (int d = 0; d < ix->rank; d++) {
            if (d != p.dim && ix->sizes[d] > indexed->sizes[d]) return ODN_FALLBACK;
            if (op == GFP_OP_SCATTER_ADD && ix->sizes[d] > x->sizes[d]) return ODN_FALLBACK;
        }
        plan_walk(&p, ix);
    }
    if (!indices_ok(ix, indexed->sizes[p.dim])) return ODN_FALLBACK;
    if (op == GFP_OP_INDEX_SELECT || op == GFP_OP_INDEX_ADD) run_select(&p);
    else run_gather(&p);
    return GFP_OK;
}
