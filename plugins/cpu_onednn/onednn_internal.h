/* SPDX-License-Identifier: BSD-3-Clause */
/* onednn_internal.h — what the cpu_onednn plugin's files share.
 *
 * Reference first, then override: the plugin is built with the reference
 * plugin's op families (plugins/reference/ref_*.c) and routes every launch to
 * an accelerated kernel first. A kernel that does not take the case at hand
 * (a dtype, a layout, a parameter it does not cover, or anything malformed)
 * returns ODN_FALLBACK before touching memory, and the reference kernel runs
 * instead, which also produces the error message for malformed launches. So
 * an accelerated kernel only checks what it relies on, and the answers of
 * query_op are the reference's, plus bf16 where the CPU has it.
 *
 * Two kinds of accelerated kernels:
 *  - oneDNN primitives (onednn_*.c), created once per geometry and kept in a
 *    primitive cache (onednn_runtime.c) keyed by op, sizes, strides, dtypes
 *    and parameters, executed with a per-thread stream and scratch arena;
 *  - C loops parallelised with OpenMP (omp_*.c), for what oneDNN does not do,
 *    does not do faster, or does less accurately (measured; see README.md):
 *    copies, fills, elementwise arithmetic in every dtype (exp included),
 *    comparisons, reductions, softmax, max pooling with graft's indices,
 *    indexing, and f64 matmul, convolution and norms (omp_f64.h).
 * Buffers are host memory with the reference's layout (a 64-byte header in
 * front of byte 0), so the reference kernels read them unchanged. */
#ifndef GRAFT_ONEDNN_INTERNAL_H
#define GRAFT_ONEDNN_INTERNAL_H

#include <omp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pk_fuse.h"
#include "plugin_kit.h"
#include "onednn_compat.h"
#include "ref_internal.h"

/* A kernel's "not mine": the reference kernel runs instead. Positive, so it
 * is never confused with a gfp_status. */
#define ODN_FALLBACK 1

/* ---- plugin state (onednn_plugin.c) */
/* bf16 arithmetic declared (matmul, conv, copies), decided once at init. */
extern bool odn_bf16;

/* ---- runtime (onednn_runtime.c) */
/* Creates the engine on first use; GFP_ERR_DEVICE with a message on failure. */
gfp_status odn_runtime_open(void);
/* Destroys every cached primitive, stream and arena, then the engine. */
void odn_runtime_close(void);
dnnl_engine_t odn_engine(void);

/* Threads for an OpenMP loop over `work` elements: 1 for small work and
 * inside an enclosing parallel region (so oneDNN and the loops never nest),
 * else the OpenMP maximum (OMP_NUM_THREADS, default: the cores we may use).
 * "Small" follows the OpenMP wait policy (onednn_runtime.c). */
int odn_threads(int64_t work);

/* Parallel regions only where they pay. libgomp's region costs a futex wake
 * at its closing barrier even for a team of one (an if(0) clause included):
 * about 0.5 us, several times a tiny op's whole kernel. So a team of nt <= 1
 * runs no region at all: ODN_PARALLEL_FOR(nt, clauses, for-statement) runs
 * the loop under `omp parallel for num_threads(nt) clauses` when nt > 1 and
 * as a plain loop otherwise (the same iterations in the same order, so the
 * same results); ODN_PARALLEL(nt, t, k, block) runs block on each thread
 * of the team with t its index and k the team's size (0 and 1 without a
 * region). Inside either, odn_team_thread(nt) is the thread's index, 0
 * without a region (omp_get_thread_num() would be the index in an
 * enclosing team there). */
#define ODN_PRAGMA(x) _Pragma(#x)
#define ODN_PARALLEL_FOR(nt, clauses, ...)                                               \
    do {                                                                                 \
        if ((nt) > 1) {                                                                  \
            ODN_PRAGMA(omp parallel for num_threads(nt) clauses)                         \
            __VA_ARGS__                                                                  \
        } else {                                                                         \
            __VA_ARGS__                                                                  \
        }                                                                                \
    } while (0)
#define ODN_PARALLEL(nt, t, k, ...)                                                      \
    do {                                                                                 \
        if ((nt) > 1) {                                                                  \
            ODN_PRAGMA(omp parallel num_threads(nt))                                     \
            {                                                                            \
                const int t = omp_get_thread_num(), k = omp_get_num_threads();           \
                (void)t, (void)k;                                                        \
                __VA_ARGS__                                                              \
            }                                                                            \
        } else {                                                                         \
            const int t = 0, k = 1;                                                      \
            (void)t, (void)k;                                                            \
            __VA_ARGS__                                                                  \
        }                                                                                \
    } while (0)
static inline int odn_team_thread(int nt) { return nt > 1 ? omp_get_thread_num() : 0; }

/* oneDNN runs every primitive on all of OpenMP's threads, however small:
 * below odn_threads' grain a launch makes (and finds in the cache) a
 * single-thread primitive instead, by lowering the calling thread's OpenMP
 * threads around it. work is counted as for odn_threads (matmul and conv:
 * their flops / 32). Measured: a 2-64-64-3 MLP trains 40x slower on two
 * threads than on one without this when the machine is busy, every tiny
 * primitive waiting for a descheduled thread at its barrier. */
typedef struct odn_team {
    int saved; /* 0: unchanged */
} odn_team;
odn_team odn_team_begin(int64_t work);
void odn_team_end(odn_team t);

/* Per-thread state: a oneDNN stream and a scratch arena, reset per launch. */
typedef struct odn_ctx odn_ctx;
/* The calling thread's context; on failure a status with its message set. */
gfp_status odn_ctx_acquire(odn_ctx **out);
dnnl_stream_t odn_ctx_stream(odn_ctx *c);
/* 64-byte aligned scratch valid until odn_arena_reset; NULL when out of memory. */
void *odn_arena_alloc(odn_ctx *c, size_t bytes);
void odn_arena_reset(odn_ctx *c);
/* Resets the calling thread's arena, if it has one (after every launch). */
void odn_ctx_end_launch(void);

/* ---- primitive cache */
#define ODN_KEY_MAX 112
typedef struct odn_key {
    uint32_t kind; /* which builder: an op id, or an op id + 1000 * variant */
    uint32_t n;
    int64_t v[ODN_KEY_MAX];
} odn_key;
void odn_key_init(odn_key *k, uint32_t kind);
void odn_key_add(odn_key *k, int64_t v);
/* dtype, rank, sizes and strides (offsets are not part of a geometry). */
void odn_key_tensor(odn_key *k, const gfp_tensor *t);

#define ODN_PRIM_MAX 5
#define ODN_MD_MAX 8
/* One cached entry: up to five primitives (e.g. a convolution and the
 * reorders around it), the descriptors its builder wants to keep and a few
 * integers. */
typedef struct odn_prim {
    dnnl_primitive_t p[ODN_PRIM_MAX];
    odc_md scratch_md[ODN_PRIM_MAX];
    size_t scratch[ODN_PRIM_MAX];
    odc_md md[ODN_MD_MAX];
    int64_t info[8];
    bool temporary; /* not in the cache (it was full): released after use */
} odn_prim;

/* Fills *p from the caller's description; returns dnnl_success, or a failure
 * (unimplemented, ...) after which the caller falls back. */
typedef dnnl_status_t (*odn_build_fn)(odn_prim *p, const void *ctx);
/* The entry for key, built on first use. NULL when the build failed. */
const odn_prim *odn_cache_get(const odn_key *key, odn_build_fn build, const void *ctx);
void odn_prim_release(const odn_prim *p);
/* Creates slot's primitive from pd (and records its scratchpad); pd is not
 * consumed. */
dnnl_status_t odn_prim_set(odn_prim *p, int slot, const_dnnl_primitive_desc_t pd);
/* Number of primitives created since init (the tests check that a repeated
 * launch creates none). */
uint64_t odn_cache_builds(void);

/* One argument of an execution: DNNL_ARG_*, its descriptor, its memory. */
typedef struct odn_arg {
    int arg;
    const odc_md *md;
    void *ptr;
} odn_arg;
/* Runs slot of p on the calling thread's stream with its own scratchpad.
 * GFP_ERR_DEVICE / OUT_OF_MEMORY with a message naming what on failure. */
gfp_status odn_exec(odn_ctx *c, const odn_prim *p, int slot, const odn_arg *args, int n,
                    const char *what);

/* Element types of the complex dtypes (the ABI's layout: re, im), and a
 * 16-byte unit for copies of c128 elements. */
typedef struct odn_c64 {
    float re, im;
} odn_c64;
typedef struct odn_c128 {
    double re, im;
} odn_c128;
typedef struct odn_u128 {
    uint64_t lo, hi;
} odn_u128;

/* ---- the elementwise engine (omp_elementwise.c) */
/* Up to four tensors of one shape (t[0] the output), with dims of size 1
 * dropped and dims that are contiguous in every tensor merged, so that most
 * launches become one long run per thread. */
typedef struct odn_ew {
    int rank; /* >= 1 */
    int n;
    int64_t sizes[GFP_MAX_RANK];
    int64_t strides[4][GFP_MAX_RANK]; /* elements */
    char *base[4];
    size_t esize[4];
} odn_ew;
/* A kernel over `no` runs of n elements: p[k] points at tensor k's first
 * element of the first run, s[k] is its stride in elements along a run, and
 * run j starts j * os[k] bytes after the first (p and os have 4 entries;
 * unused ones are NULL and 0). One call covers a row block or a tile, so
 * the call costs nothing next to the elements. */
typedef void (*odn_ew_fn)(char *const *p, const int64_t *s, int64_t n, const int64_t *os,
                          int64_t no, const void *ctx);
void odn_ew_init(odn_ew *g, const gfp_tensor *const *t, int n);
/* Runs fn over every element, split across threads; cost is a rough weight
 * per element (1 for a copy, ~20 for a libm call) that sets the threads. */
void odn_ew_run(const odn_ew *g, odn_ew_fn fn, const void *ctx, int64_t cost);
/* The arguments of a unary kernel (the ctx odn_math_launch passes it): a
 * scalar op's a and b, clamp's bounds. */
typedef struct odn_math_args {
    double a, b;
    bool has_min, has_max;
    double min, max;
} odn_math_args;
/* Reads op's parameters as its unary kernel takes them; false when they are
 * missing or too short (the reference then takes the launch). */
bool odn_math_args_read(uint32_t op, const void *params, odn_math_args *args);
/* The kernel odn_math_launch runs for op on n_t tensors (the output first)
 * of dtype, and its cost; false when it runs none (the launch falls back).
 * Unary kernels take an odn_math_args as ctx, binary ones NULL. */
bool odn_math_kernel(uint32_t op, int n_t, int32_t dtype, odn_ew_fn *fn, int64_t *cost);
/* Unary and binary arithmetic in f32/f64 (and integer add/sub/mul/min/max):
 * t[0] = op(t[1] [, t[2]]); ODN_FALLBACK for what it does not do (omp_ew_math.c). */
gfp_status odn_math_launch(uint32_t op, const gfp_tensor *const *t, int n_t, const void *params);
/* A BINARY launch of a captured graph, prepared once (omp_ew_math.c). */
typedef struct odn_ew_prepared {
    odn_ew g;
    odn_ew_fn fn;
    int64_t cost;
} odn_ew_prepared;
bool odn_binary_prepare(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                        const gfp_tensor *const *out, uint32_t n_out, odn_ew_prepared *p);
void odn_prepared_run(const odn_ew_prepared *p);

/* The elementwise family on c64 / c128 (omp_complex.c): t[0] = op(t[1]
 * [, t[2]]), one shape; the reference's results; ODN_FALLBACK for what it
 * does not do. */
gfp_status odn_complex_launch(uint32_t op, const gfp_tensor *const *t, int n_t,
                              const void *params);

/* Vectorised builds of the hot loops for the CPUs that have wider units. */
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define ODN_CLONES __attribute__((target_clones("default", "avx2", "avx512f")))
#else
#define ODN_CLONES
#endif

/* Kernels are written as NAME##_1d over one run (ODN_EW_INLINE, so that it
 * is compiled into each vector width's build of the wrapper), and
 * ODN_EW_KERNEL_2D(NAME) makes the odn_ew_fn NAME looping over the runs. */
#define ODN_EW_INLINE static inline __attribute__((always_inline))
#define ODN_EW_KERNEL_2D(NAME)                                                           \
    ODN_CLONES static void NAME(char *const *p, const int64_t *s, int64_t n,             \
                                const int64_t *os, int64_t no, const void *ctx) {        \
        char *q[4] = {p[0], p[1], p[2], p[3]};                                           \
        for (int64_t o = 0; o < no; o++) {                                               \
            NAME##_1d(q, s, n, ctx);                                                     \
            for (int k = 0; k < 4; k++)                                                  \
                if (os[k]) q[k] += os[k];                                                \
        }                                                                                \
    }

/* ---- helpers (omp_elementwise.c) */
dnnl_data_type_t odn_dnnl_dtype(int32_t dtype); /* dnnl_data_type_undef when none */
/* Row-major contiguous. */
bool odn_is_contiguous(const gfp_tensor *t);
/* t's element 0 as f32, to read / to write. */
static inline const float *odn_f32(const gfp_tensor *t) {
    return (const float *)(const void *)((const char *)t->buffer + t->offset);
}
static inline float *odn_f32_mut(const gfp_tensor *t) {
    return (float *)(void *)((char *)t->buffer + t->offset);
}
/* Strides of a contiguous tensor of these sizes. */
void odn_contiguous_strides(const int64_t *sizes, int rank, int64_t *strides);
/* A contiguous tensor of t's shape and dtype over host memory at ptr (not a
 * plugin buffer: ref kernels must not receive it). */
gfp_tensor odn_temp_like(const gfp_tensor *t, int32_t dtype, void *ptr);
/* y = x converted (the reference's rules), same shape, any strides, between
 * any of f32 f64 i32 i64 bool, and f16 / bf16 with f32 / f64 / f16 / bf16;
 * OpenMP.
 * ODN_FALLBACK for the pairs it does not do. */
gfp_status odn_copy(const gfp_tensor *y, const gfp_tensor *x);
/* *out = t when t is contiguous, else a contiguous tensor of t's shape in the
 * arena, holding t's elements when copy is true (an input) or nothing yet (an
 * output, to be copied back with odn_copy). False when out of memory. */
bool odn_packed(odn_ctx *c, const gfp_tensor *t, bool copy, gfp_tensor *out);
/* Fills n bytes (a multiple of size, 1..8) with the pattern; OpenMP. */
void odn_fill_pattern(char *dst, uint64_t n, const void *pattern, uint32_t size);

/* ---- families. Each returns ODN_FALLBACK for what the reference must do. */

/* An output the kernels may write: no broadcast (stride-0) dim of size > 1,
 * whose elements would collide. */
static inline bool odn_writable(const gfp_tensor *t) {
    for (int d = 0; d < t->rank; d++)
        if (t->strides[d] == 0 && t->sizes[d] > 1) return false;
    return true;
}

/* LAYER_NORM's launch as the fast kernels take it: counts, params, x/y/mean/
 * rstd of `dtype` (w and b of it or absent) with the shapes the ABI defines,
 * writable outputs. Fills outer (rows) and inner (normalised elements per
 * row); false for anything else, which the reference then takes. */
bool odn_layer_norm_args(const gfp_tensor *const *in, uint32_t n_in, const gfp_tensor *const *out,
                         uint32_t n_out, const void *params, int32_t dtype, int64_t *outer,
                         int64_t *inner);

#define ODN_FAMILY(f)                                                                     \
    gfp_status odn_##f##_launch(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,  \
                                const gfp_tensor *const *out, uint32_t n_out,             \
                                const void *params);
/* f32 erf through libmvec's AVX-512 function where the system and the CPU
 * have it (omp_vecmath.c), else NULL. */
odn_ew_fn odn_vec_erf_f32(void);
/* GELU_BACKWARD f32 likewise (libmvec's erff and expf), else NULL. */
odn_ew_fn odn_vec_gelu_bw_f32(void);

ODN_FAMILY(elementwise) /* omp_elementwise.c, onednn_eltwise.c */
ODN_FAMILY(reduce)      /* omp_reduce.c */
ODN_FAMILY(matmul)      /* onednn_matmul.c */
ODN_FAMILY(norm)        /* onednn_norm.c */
ODN_FAMILY(conv)        /* onednn_conv.c */
ODN_FAMILY(pool)        /* onednn_pool.c */
ODN_FAMILY(index)       /* omp_index.c */
ODN_FAMILY(random)      /* omp_random.c */
ODN_FAMILY(optim)       /* omp_optim.c */
ODN_FAMILY(rnn)         /* omp_rnn.c */
#undef ODN_FAMILY

/* A family's accelerated kernel (the launch slot's signature). */
typedef gfp_status (*odn_launch_fn)(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                                    const gfp_tensor *const *out, uint32_t n_out,
                                    const void *params);

/* ---- f16 / bf16 without 16-bit arithmetic (omp_half.c) */
/* Unit-stride conversions with pk_half.h's results, vectorised where the
 * CPU has AVX-512; dtype is GFP_F16 or GFP_BF16. */
void odn_half_to_f32(float *y, const uint16_t *x, int64_t n, int32_t dtype);
void odn_f32_to_half(uint16_t *y, const float *x, int64_t n, int32_t dtype);
/* odn_copy's kernel between a 16-bit dtype and f32 / f64 / the other 16-bit
 * dtype; NULL for other pairs. */
odn_ew_fn odn_half_converter(int32_t from, int32_t to);
/* Whether op computes in f32 or wider and rounds once on store, so that its
 * 16-bit launches may run as f32 launches on widened copies. */
bool odn_half_widens(uint32_t op);
/* Runs fast on f32 copies of the 16-bit inputs (exact) into f32 scratch for
 * the 16-bit outputs, then rounds those once into the outputs. The copies
 * live in the calling thread's arena (reused across launches). ODN_FALLBACK
 * (nothing written to a 16-bit output) when fast does not take the case. */
gfp_status odn_half_widened(odn_launch_fn fast, uint32_t op, const gfp_tensor *const *in,
                            uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                            const void *params);
/* MATMUL f32 of many small matrices (omp_gemm_small.c): at most 64 x 64 @
 * 64 x 32 each, at least 4 of them; ODN_FALLBACK (nothing written) for the
 * rest. Shapes checked by the caller. */
gfp_status odn_matmul_small(const gfp_tensor *a, const gfp_tensor *b, const gfp_tensor *y);
/* 16-bit tensors between dense NCHW (plain: [n, c, hw]) and oneDNN's
 * nChw16c (blocked: channels past c zero), in the direction to_blocked says
 * (omp_layout.c). */
void odn_nchw16c_16bit(void *blocked, void *plain, int64_t n, int64_t c, int64_t hw,
                       bool to_blocked);
/* The 16-bit launches with kernels of their own that read and write 16-bit
 * storage (omp_half_native.c: RELU, RELU_BACKWARD; 2x2 max pooling; SUM and
 * MEAN), bit for bit the widened path's results; ODN_FALLBACK (nothing
 * written) for the rest. */
gfp_status odn_half_native(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                           const gfp_tensor *const *out, uint32_t n_out, const void *params);

/* SOFTMAX / LOG_SOFTMAX in C loops (omp_softmax.c). */
gfp_status odn_softmax_launch(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                              const gfp_tensor *const *out, uint32_t n_out, const void *params);
/* SOFTMAX_BACKWARD / LOG_SOFTMAX_BACKWARD, f32 lines along the last dim of
 * contiguous tensors (ODN_FALLBACK otherwise). */
gfp_status odn_softmax_backward_launch(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                                       const gfp_tensor *const *out, uint32_t n_out,
                                       const void *params);
/* oneDNN eltwise for contiguous f32 unary ops (onednn_eltwise.c). */
gfp_status odn_eltwise_launch(uint32_t op, const gfp_tensor *x, const gfp_tensor *y,
                              const void *params);
/* Whether odn_eltwise_launch may take op on contiguous f32 tensors of n
 * elements (then its vector code, not the C loops, computes the values). */
bool odn_eltwise_may_take(uint32_t op, int64_t n);

/* ---- fused elementwise runs of captured graphs (omp_fuse.c) */
/* One launch of a run: t[0] = op(t[1] [, t[2]]) by its odn_math_kernel, each
 * tensor n elements from base[k] (s[k] = 1) or one element broadcast
 * (s[k] = 0). */
typedef struct odn_fuse_step {
    uint32_t op;
    int n_t;
    int32_t dtype;
    int64_t n;
    odn_ew_fn fn;
    int64_t cost;
    const void *params; /* read at each launch (the core rewrites them) */
    odn_math_args args;
    char *base[3];
    int64_t s[3];
    pk_range r[3]; /* the tensors' address ranges (pk_fuse.h), r[0] written */
} odn_fuse_step;
/* Consecutive steps run chunk by chunk: every step over one chunk, then the
 * next chunk, so what a step writes is still in cache when the next reads. */
typedef struct odn_fuse_run {
    uint32_t count;
    int64_t chunk; /* elements, a multiple of 64 */
    odn_fuse_step *steps;
} odn_fuse_run;
/* Whether fusion is on: GRAFT_ONEDNN_FUSE=0 turns it off (read at each
 * graph_create). */
bool odn_fuse_enabled(void);
/* A captured launch as a step, when it can be one: the launch the
 * elementwise family would give odn_math_launch's C loops, on contiguous
 * (or one-element broadcast) f32 / f64 / i32 / i64 tensors. */
bool odn_fuse_step_of(const gfp_graph_node *node, odn_fuse_step *st);
/* Whether next may follow steps[0 .. count) in one run: same dtype and
 * element count, and every range one of them writes either equal to or
 * disjoint from every other range of the run. */
bool odn_fuse_joins(const odn_fuse_step *steps, uint32_t count, const odn_fuse_step *next);
/* Sets r's chunk and counts it (odn_fuse_counts). */
void odn_fuse_finish(odn_fuse_run *r);
/* Runs r; ODN_FALLBACK (nothing written) when a step's parameters can no
 * longer be read: the caller then launches the steps one by one. */
gfp_status odn_fuse_launch(odn_fuse_run *r);
/* Runs fused and the launches they cover, in the graphs created so far. */
uint64_t odn_fuse_runs(void);
uint64_t odn_fuse_launches(void);

#endif
