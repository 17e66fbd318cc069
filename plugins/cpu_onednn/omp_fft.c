/* SPDX-License-Identifier: BSD-3-Clause */
/* omp_fft.c — the FFT family's fast kernel: the launch split into one 1-D
 * job per transformed dim (omp_fft_kernels.c runs them), and the plan cache.
 *
 * c64 is computed in float and c128 in double, as torch computes them. The
 * dims go one after the other, intermediate values stored in the output's
 * dtype: C2C reads x for the first dim and works in y after; R2C takes the
 * onesided dim first (x to y), then the others in y; C2R transforms the
 * other dims into a contiguous scratch copy, then halves the onesided dim
 * into y. The scale is applied by the last job.
 *
 * ODN_FALLBACK (the reference, which also reports every malformed launch):
 * anything this file does not check as valid, a complex length above 2^16
 * with a prime factor above 13 (the reference's Bluestein; shorter ones take
 * Bluestein's algorithm in the lanes), odd real lengths beyond the
 * lane path's limit, outputs that share x's buffer (the reference reads x
 * whole first) and empty tensors. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "omp_fft.h"

/* ------------------------------------------------------------ plan cache */
#define FFT_CACHE_CAP 256

typedef struct plan_entry {
    odn_fft_plan_key key;
    void *plan;
    struct plan_entry *next;
} plan_entry;

static pthread_mutex_t plan_lock = PTHREAD_MUTEX_INITIALIZER;
static plan_entry *plans;
static int plan_count;

static bool key_eq(const odn_fft_plan_key *a, const odn_fft_plan_key *b) {
    return a->kind == b->kind && a->n == b->n && a->sign == b->sign && a->dtype == b->dtype;
}

static void *plan_find(const odn_fft_plan_key *key) {
    for (plan_entry *e = plans; e; e = e->next)
        if (key_eq(&e->key, key)) return e->plan;
    return NULL;
}

void *odn_fft_plan_get(const odn_fft_plan_key *key, odn_fft_plan_build build, bool *owned) {
    *owned = false;
    pthread_mutex_lock(&plan_lock);
    void *p = plan_find(key);
    pthread_mutex_unlock(&plan_lock);
    if (p) return p;
    /* Built outside the lock: a long plan does not hold up other launches.
     * Two threads may build the same plan; the second keeps its own. */
    p = build(key);
    if (!p) return NULL;
    plan_entry *e = malloc(sizeof *e);
    pthread_mutex_lock(&plan_lock);
    void *other = plan_find(key);
    if (!other && e && plan_count < FFT_CACHE_CAP) {
        e->key = *key;
        e->plan = p;
        e->next = plans;
        plans = e;
        plan_count++;
        e = NULL;
    } else {
        *owned = true;
    }
    pthread_mutex_unlock(&plan_lock);
    free(e);
    return p;
}

/* ------------------------------------------------------------ launch */
typedef struct side {
    char *base;
    bool real;
    const int64_t *strides;
} side;

/* The job along dim d of a tensor of `sizes` (rank), from src to dst. */
static void make_job(odn_fft_job *J, odn_fft_line line, int64_t n, int sign, double scale,
                     int rank, const int64_t *sizes, int d, side src, side dst) {
    memset(J, 0, sizeof *J);
    J->line = line;
    J->n = n;
    J->sign = sign;
    J->scale = scale;
    J->src = src.base, J->dst = dst.base;
    J->src_real = src.real, J->dst_real = dst.real;
    J->src_stride = src.strides[d], J->dst_stride = dst.strides[d];
    for (int i = 0; i < rank; i++) {
        if (i == d || sizes[i] == 1) continue;
        int k = J->batch_rank++;
        J->batch_sizes[k] = sizes[i];
        J->src_bstride[k] = src.strides[i];
        J->dst_bstride[k] = dst.strides[i];
    }
}

static bool takes(bool f32, odn_fft_line line, int64_t n) {
    return f32 ? odn_fft_takes_f32(line, n) : odn_fft_takes_f64(line, n);
}

static gfp_status run(bool f32, const odn_fft_job *J) {
    return f32 ? odn_fft_run_f32(J) : odn_fft_run_f64(J);
}

gfp_status odn_fft_launch(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                          const gfp_tensor *const *out, uint32_t n_out, const void *params) {
    if (op != GFP_OP_FFT || n_in != 1 || n_out != 1 || !in[0] || !out[0] || !params)
        return ODN_FALLBACK;
    const gfp_fft_params *prm = params;
    if (prm->struct_size < GFP_FFT_PARAMS_SIZE_V1_3 || prm->kind > GFP_FFT_C2R ||
        prm->inverse > 1)
        return ODN_FALLBACK;
    const gfp_tensor *x = in[0], *y = out[0];
    int rank = x->rank;
    if (y->rank != rank || prm->n_dims < 1 || prm->n_dims > (uint32_t)rank) return ODN_FALLBACK;
    bool seen[GFP_MAX_RANK] = {false};
    for (uint32_t i = 0; i < prm->n_dims; i++) {
        int32_t d = prm->dims[i];
        if (d < 0 || d >= rank || seen[d]) return ODN_FALLBACK;
        seen[d] = true;
    }
    const int dl = prm->dims[prm->n_dims - 1];
    const uint32_t kind = prm->kind;
    bool f32;
    switch (kind) {
    case GFP_FFT_C2C:
        if (x->dtype != y->dtype || (x->dtype != GFP_C64 && x->dtype != GFP_C128))
            return ODN_FALLBACK;
        f32 = x->dtype == GFP_C64;
        break;
    case GFP_FFT_R2C:
        if (!((x->dtype == GFP_F32 && y->dtype == GFP_C64) ||
              (x->dtype == GFP_F64 && y->dtype == GFP_C128)))
            return ODN_FALLBACK;
        f32 = x->dtype == GFP_F32;
        break;
    default:
        if (!((x->dtype == GFP_C64 && y->dtype == GFP_F32) ||
              (x->dtype == GFP_C128 && y->dtype == GFP_F64)))
            return ODN_FALLBACK;
        f32 = y->dtype == GFP_F32;
        break;
    }
    for (int d = 0; d < rank; d++) {
        int64_t xs = x->sizes[d], ys = y->sizes[d];
        if (xs < 0 || ys < 0) return ODN_FALLBACK;
        bool half = d == dl && kind != GFP_FFT_C2C;
        int64_t full = kind == GFP_FFT_C2R ? ys : xs, onesided = full / 2 + 1;
        if (half ? (kind == GFP_FFT_R2C ? ys : xs) != onesided : xs != ys) return ODN_FALLBACK;
        if (seen[d] && full == 0) return ODN_FALLBACK;
    }
    if (pk_numel(x) == 0 || pk_numel(y) == 0 || !odn_writable(y) || x->buffer == y->buffer)
        return ODN_FALLBACK;
    for (uint32_t i = 0; i < prm->n_dims; i++) {
        int d = prm->dims[i];
        odn_fft_line line = d != dl || kind == GFP_FFT_C2C ? ODN_FFT_LINE_C2C
                            : kind == GFP_FFT_R2C          ? ODN_FFT_LINE_R2C
                                                           : ODN_FFT_LINE_C2R;
        int64_t n = kind == GFP_FFT_C2R ? y->sizes[d] : x->sizes[d];
        if (!takes(f32, line, n)) return ODN_FALLBACK;
    }

    const int sign = prm->inverse ? 1 : -1;
    side sx = {(char *)x->buffer + x->offset, kind == GFP_FFT_R2C, x->strides};
    side sy = {(char *)y->buffer + y->offset, kind == GFP_FFT_C2R, y->strides};
    odn_fft_job J;
    gfp_status st = GFP_OK;
    if (kind == GFP_FFT_C2C) {
        for (uint32_t i = 0; i < prm->n_dims && st == GFP_OK; i++) {
            int d = prm->dims[i];
            bool last = i + 1 == prm->n_dims;
            make_job(&J, ODN_FFT_LINE_C2C, x->sizes[d], sign, last ? prm->scale : 1.0, rank,
                     x->sizes, d, i == 0 ? sx : sy, sy);
            st = run(f32, &J);
        }
        return st;
    }
    if (kind == GFP_FFT_R2C) {
        make_job(&J, ODN_FFT_LINE_R2C, x->sizes[dl], sign, prm->n_dims == 1 ? prm->scale : 1.0,
                 rank, x->sizes, dl, sx, sy);
        st = run(f32, &J);
        side cy = {sy.base, false, y->strides};
        for (uint32_t i = 0; i + 1 < prm->n_dims && st == GFP_OK; i++) {
            int d = prm->dims[i];
            make_job(&J, ODN_FFT_LINE_C2C, y->sizes[d], sign,
                     i + 2 == prm->n_dims ? prm->scale : 1.0, rank, y->sizes, d, cy, cy);
            st = run(f32, &J);
        }
        return st;
    }
    /* C2R: the other dims into a contiguous scratch copy of x first. */
    side src = {sx.base, false, x->strides};
    int64_t tstrides[GFP_MAX_RANK];
    if (prm->n_dims > 1) {
        odn_ctx *cx = NULL;
        st = odn_ctx_acquire(&cx);
        if (st != GFP_OK) return st;
        int64_t nx = pk_numel(x);
        size_t esize = f32 ? 8 : 16;
        if ((uint64_t)nx > SIZE_MAX / esize)
            return pk_fail(GFP_ERR_OUT_OF_MEMORY, "fft: %lld elements of scratch do not fit "
                           "in memory", (long long)nx);
        char *tmp = odn_arena_alloc(cx, (size_t)nx * esize);
        if (!tmp) return GFP_ERR_OUT_OF_MEMORY; /* the arena's message */
        odn_contiguous_strides(x->sizes, rank, tstrides);
        side ts = {tmp, false, tstrides};
        for (uint32_t i = 0; i + 1 < prm->n_dims && st == GFP_OK; i++) {
            int d = prm->dims[i];
            make_job(&J, ODN_FFT_LINE_C2C, x->sizes[d], sign, 1.0, rank, x->sizes, d,
                     i == 0 ? src : ts, ts);
            st = run(f32, &J);
        }
        src = ts;
    }
    if (st != GFP_OK) return st;
    make_job(&J, ODN_FFT_LINE_C2R, y->sizes[dl], sign, prm->scale, rank, x->sizes, dl, src, sy);
    return run(f32, &J);
}
