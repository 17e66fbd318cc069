/* SPDX-License-Identifier: BSD-3-Clause */
/* omp_fuse.c — runs of elementwise launches in a captured graph, fused.
 *
 * Eagerly, a chain such as x * y + z, exp, ... makes one pass over memory
 * per op: each op reads its inputs from memory and writes its output back
 * before the next op starts. A captured graph knows the whole chain, so
 * graph_create (onednn_plugin.c) finds maximal runs of consecutive launches
 * that the elementwise engine's C loops (odn_math_launch) would compute, and
 * a graph launch runs such a run chunk by chunk: every launch of the run over
 * elements [lo, lo + chunk), then the next chunk. A chunk of every tensor
 * the run touches fits in L2 (about 128 KiB in all), so what one launch
 * writes is read by the next from cache; threads take contiguous blocks of
 * chunks, as they take contiguous blocks of elements eagerly.
 *
 * Bit identity with the eager launches, and why it holds:
 *  - Each step calls the very kernel the eager launch calls (odn_math_kernel:
 *    the same function, clone and argument struct), on a sub-range. Those
 *    kernels compute each element from the same elements of the inputs alone,
 *    with IEEE operations (no FMA contraction in ISO C mode) or per-element
 *    libm calls, so the value does not depend on where the element falls in
 *    a call: in the vector body, the scalar tail or a peeled head. Chunks
 *    start at multiples of 64 elements from the tensors' first element
 *    anyway, as eager threads start at multiples of 16, so elements keep
 *    their position modulo the vector width.
 *  - oneDNN's eltwise primitives (f32 tanh, sigmoid, gelu, gelu_tanh, silu of
 *    1,024 elements or more: odn_eltwise_may_take) compute with other
 *    formulas than the C loops; such launches are never steps, they end a run.
 *  - Order: within a chunk the steps run in the graph's order, so an element
 *    is written by step i before step i + 1 reads it. That is the eager order
 *    under plugins/common/pk_fuse.h's rule, which odn_fuse_joins applies: a
 *    view at another offset, an overlapping slice or a broadcast element
 *    that the run writes ends the run.
 *  - A step's parameters are read at each launch, as the eager launch reads
 *    them (the core rewrites optimiser constants between replays). */
#define _GNU_SOURCE /* secure_getenv */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "onednn_internal.h"

/* The run's tensors' chunks together: about L2's share of one core. */
#define FUSE_CHUNK_BYTES (128 * 1024)
#define FUSE_CHUNK_MIN 256
#define FUSE_CHUNK_MAX 16384
/* A longer run is split (odn_fuse_joins is quadratic in the run's length). */
#define FUSE_MAX_STEPS 4096

static _Atomic uint64_t fused_runs, fused_launches;

uint64_t odn_fuse_runs(void) { return atomic_load(&fused_runs); }
uint64_t odn_fuse_launches(void) { return atomic_load(&fused_launches); }

bool odn_fuse_enabled(void) {
    const char *v = secure_getenv("GRAFT_ONEDNN_FUSE");
    return !v || strcmp(v, "0") != 0;
}

/* Tensor k of st as a range of host addresses; k = 0 (the output) is the
 * one written. Two ranges of a run may coexist by pk_fuse.h's rule. */
static pk_range range_of(const odn_fuse_step *st, int k) {
    size_t es = pk_dtype_size(st->dtype);
    int64_t n = st->s[k] ? st->n : 1;
    uintptr_t lo = (uintptr_t)st->base[k];
    pk_range r = {NULL, lo, lo + (uint64_t)n * es};
    return r;
}

bool odn_fuse_step_of(const gfp_graph_node *node, odn_fuse_step *st) {
    if (node->n_outputs != 1 || (node->n_inputs != 1 && node->n_inputs != 2) ||
        !node->outputs || !node->inputs || !node->outputs[0])
        return false;
    memset(st, 0, sizeof *st);
    const gfp_tensor *y = node->outputs[0];
    st->op = node->op;
    st->n_t = (int)node->n_inputs + 1;
    st->dtype = y->dtype;
    st->n = pk_numel(y);
    st->params = node->params;
    if (st->n <= 0 || !y->buffer || !pk_is_contiguous(y)) return false;
    /* what odn_elementwise_launch checks before odn_math_launch */
    const gfp_tensor *t[3] = {y, NULL, NULL};
    for (int k = 1; k < st->n_t; k++) {
        t[k] = node->inputs[k - 1];
        if (!t[k] || !t[k]->buffer || t[k]->dtype != y->dtype || !pk_same_shape(t[k], y))
            return false;
    }
    if (!odn_math_kernel(st->op, st->n_t, st->dtype, &st->fn, &st->cost)) return false;
    if (st->n_t == 2 && st->dtype == GFP_F32 && odn_eltwise_may_take(st->op, st->n))
        return false; /* oneDNN's formulas, not the loops' */
    if (st->n_t == 2 && !odn_math_args_read(st->op, st->params, &st->args)) return false;
    for (int k = 0; k < st->n_t; k++) {
        st->base[k] = (char *)t[k]->buffer + t[k]->offset;
        if (pk_is_contiguous(t[k])) st->s[k] = 1;
        else if (k > 0 && pk_fuse_broadcast_one(t[k])) st->s[k] = 0;
        else return false;
    }
    for (int k = 0; k < st->n_t; k++) st->r[k] = range_of(st, k);
    /* The launch's own output against its inputs: the same rule as a run's. */
    return pk_fuse_ranges_join(st->r, 1, st->r + 1, st->n_t - 1);
}

bool odn_fuse_joins(const odn_fuse_step *steps, uint32_t count, const odn_fuse_step *next) {
    if (count >= FUSE_MAX_STEPS || next->dtype != steps[0].dtype || next->n != steps[0].n)
        return false;
    for (uint32_t i = 0; i < count; i++)
        if (!pk_fuse_ranges_join(next->r, next->n_t, steps[i].r, steps[i].n_t)) return false;
    return true;
}

void odn_fuse_finish(odn_fuse_run *r) {
    /* Distinct streamed tensors of the run (the same range counted once). */
    int ranges = 0;
    for (uint32_t i = 0; i < r->count; i++)
        for (int k = 0; k < r->steps[i].n_t; k++) {
            if (!r->steps[i].s[k]) continue;
            bool seen = false;
            for (uint32_t j = 0; j <= i && !seen; j++)
                for (int m = 0; m < r->steps[j].n_t && !seen; m++)
                    seen = (j < i || m < k) && r->steps[j].s[m] &&
                           r->steps[j].base[m] == r->steps[i].base[k];
            ranges += !seen;
        }
    size_t es = pk_dtype_size(r->steps[0].dtype);
    int64_t chunk = (int64_t)(FUSE_CHUNK_BYTES / ((size_t)(ranges ? ranges : 1) * es));
    chunk &= ~(int64_t)63;
    r->chunk = chunk < FUSE_CHUNK_MIN ? FUSE_CHUNK_MIN : chunk > FUSE_CHUNK_MAX ? FUSE_CHUNK_MAX
                                                                                : chunk;
    atomic_fetch_add(&fused_runs, 1);
    atomic_fetch_add(&fused_launches, r->count);
}

/* Every step over elements [lo, lo + len). */
static void run_chunk(const odn_fuse_run *r, size_t es, int64_t lo, int64_t len) {
    static const int64_t os[4] = {0, 0, 0, 0};
    for (uint32_t i = 0; i < r->count; i++) {
        const odn_fuse_step *st = &r->steps[i];
        char *p[4] = {NULL, NULL, NULL, NULL};
        int64_t s[4] = {0, 0, 0, 0};
        for (int k = 0; k < st->n_t; k++) {
            s[k] = st->s[k];
            p[k] = st->base[k] + (st->s[k] ? (size_t)lo * es : 0);
        }
        st->fn(p, s, len, os, 1, st->n_t == 2 ? (const void *)&st->args : NULL);
    }
}

gfp_status odn_fuse_launch(odn_fuse_run *r) {
    int64_t cost = 0;
    for (uint32_t i = 0; i < r->count; i++) {
        odn_fuse_step *st = &r->steps[i];
        if (st->n_t == 2 && !odn_math_args_read(st->op, st->params, &st->args))
            return ODN_FALLBACK;
        cost += st->cost;
    }
    const int64_t n = r->steps[0].n;
    const size_t es = pk_dtype_size(r->steps[0].dtype);
    int nt = odn_threads(n * cost);
    int64_t chunk = r->chunk;
    if (nt > 1) { /* at least one chunk per thread */
        int64_t per = ((n + nt - 1) / nt + 63) & ~(int64_t)63;
        if (per < chunk) chunk = per;
    }
    const int64_t chunks = (n + chunk - 1) / chunk;
    if (chunks < nt) nt = (int)chunks; /* a long run of short tensors: no idle team */
    ODN_PARALLEL_FOR(nt, schedule(static), for (int64_t c = 0; c < chunks; c++) {
        int64_t lo = c * chunk;
        run_chunk(r, es, lo, n - lo < chunk ? n - lo : chunk);
    });
    return GFP_OK;
}
