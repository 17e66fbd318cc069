/* SPDX-License-Identifier: BSD-3-Clause */
/* omp_half.c — f16 and bf16 on CPUs without 16-bit arithmetic.
 *
 * Conversions: the rules of pk_half.h (round to nearest even, NaN kept as
 * the reference keeps it, f16 subnormals and overflow), on unit-stride runs
 * sixteen elements a step with AVX-512 (bf16 by integer arithmetic on the
 * f32 bits; f16 by the F16C conversions, exact and correctly rounded, with
 * NaN lanes rewritten to pk_half.h's patterns) and element by element
 * otherwise. The exhaustive tests compare them with pk_half.h bit for bit.
 *
 * Widening: an op that computes in f32 (or wider) and rounds once on store
 * (elementwise, reductions, matmul, conv, pooling, softmax, layer norm) runs
 * on 16-bit tensors as its f32 kernel on exact f32 copies of the 16-bit
 * inputs, followed by one rounding of each 16-bit output. Measured on an
 * avx512_core CPU without avx512_bf16 (README.md, "Measured choices"):
 * oneDNN 2.6's own bf16 matmul and convolutions there emulate the dot
 * products and run 3-4x slower than its f32 primitives, and it has no f16
 * primitives at all, while the conversions cost a few percent of a matmul. */
#include <stdatomic.h>
#include <string.h>

#include "onednn_internal.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define ODN_HALF_X86 1
#include <immintrin.h>

#include "omp_half_vec.h"
#define ODN_AVX512 __attribute__((target("avx512f,f16c")))
#else
#define ODN_HALF_X86 0
#endif

/* ------------------------------------------------------------ unit-stride runs */
static void bf16_to_f32_c(float *y, const uint16_t *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = pk_bf16_to_f32(x[i]);
}
static void f32_to_bf16_c(uint16_t *y, const float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = pk_f32_to_bf16(x[i]);
}
static void f16_to_f32_c(float *y, const uint16_t *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = pk_f16_to_f32(x[i]);
}
static void f32_to_f16_c(uint16_t *y, const float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = pk_f32_to_f16(x[i]);
}

#if ODN_HALF_X86
/* Sixteen lanes a step (omp_half_vec.h), the C loops for the tail. */
#define HALF_RUNS(NAME, FROM, TO, LOAD, STORE, CONV)                                      \
    ODN_AVX512 static void NAME##_avx512(TO *y, const FROM *x, int64_t n) {              \
        int64_t i = 0;                                                                    \
        for (; i + 16 <= n; i += 16) STORE(y + i, CONV(LOAD(x + i)));                    \
        NAME##_c(y + i, x + i, n - i);                                                    \
    }
#define LOAD_H(p) _mm256_loadu_si256((const __m256i *)(const void *)(p))
#define LOAD_F(p) _mm512_loadu_ps(p)
#define STORE_H(p, v) _mm256_storeu_si256((__m256i *)(void *)(p), v)
#define STORE_F(p, v) _mm512_storeu_ps(p, v)
HALF_RUNS(bf16_to_f32, uint16_t, float, LOAD_H, STORE_F, odn_hv_bf16_to_f32)
HALF_RUNS(f32_to_bf16, float, uint16_t, LOAD_F, STORE_H, odn_hv_f32_to_bf16)
HALF_RUNS(f16_to_f32, uint16_t, float, LOAD_H, STORE_F, odn_hv_f16_to_f32)
HALF_RUNS(f32_to_f16, float, uint16_t, LOAD_F, STORE_H, odn_hv_f32_to_f16)

/* Every CPU with AVX-512F has F16C too (and clang's __builtin_cpu_supports
 * does not know the name "f16c"): AVX-512F alone is asked. */
static bool have_avx512(void) { return __builtin_cpu_supports("avx512f"); }
#define DISPATCH(NAME, ...)                                                                \
    do {                                                                                   \
        if (have_avx512()) NAME##_avx512(__VA_ARGS__);                                     \
        else NAME##_c(__VA_ARGS__);                                                        \
    } while (0)
#else
#define DISPATCH(NAME, ...) NAME##_c(__VA_ARGS__)
#endif

void odn_half_to_f32(float *y, const uint16_t *x, int64_t n, int32_t dtype) {
    if (dtype == GFP_BF16) DISPATCH(bf16_to_f32, y, x, n);
    else DISPATCH(f16_to_f32, y, x, n);
}

void odn_f32_to_half(uint16_t *y, const float *x, int64_t n, int32_t dtype) {
    if (dtype == GFP_BF16) DISPATCH(f32_to_bf16, y, x, n);
    else DISPATCH(f32_to_f16, y, x, n);
}

/* ------------------------------------------------------------ elementwise kernels */
/* HALF_CV(name, source type, destination type, element expression of v,
 * unit-stride run): an odn_ew_fn. */
#define HALF_CV(NAME, TS, TD, EXPR, RUN)                                                   \
    static void NAME(char *const *p, const int64_t *s, int64_t n, const int64_t *os,       \
                     int64_t no, const void *ctx) {                                        \
        (void)ctx;                                                                         \
        for (int64_t o = 0; o < no; o++) {                                                 \
            TD *y = (TD *)(void *)(p[0] + o * os[0]);                                      \
            const TS *x = (const TS *)(const void *)(p[1] + o * os[1]);                    \
            if (s[0] == 1 && s[1] == 1) {                                                  \
                RUN(y, x, n);                                                              \
                continue;                                                                  \
            }                                                                              \
            for (int64_t i = 0; i < n; i++) {                                              \
                TS v = x[i * s[1]];                                                        \
                y[i * s[0]] = (TD)(EXPR);                                                  \
            }                                                                              \
        }                                                                                  \
    }
/* Unit-stride runs of the conversions that have no vector form here. */
#define HALF_RUN(NAME, TS, TD, EXPR)                                                       \
    static void NAME(TD *y, const TS *x, int64_t n) {                                      \
        for (int64_t i = 0; i < n; i++) {                                                  \
            TS v = x[i];                                                                   \
            y[i] = (TD)(EXPR);                                                             \
        }                                                                                  \
    }
static void run_bf_f32(float *y, const uint16_t *x, int64_t n) { odn_half_to_f32(y, x, n, GFP_BF16); }
static void run_h_f32(float *y, const uint16_t *x, int64_t n) { odn_half_to_f32(y, x, n, GFP_F16); }
static void run_f32_bf(uint16_t *y, const float *x, int64_t n) { odn_f32_to_half(y, x, n, GFP_BF16); }
static void run_f32_h(uint16_t *y, const float *x, int64_t n) { odn_f32_to_half(y, x, n, GFP_F16); }
HALF_RUN(run_bf_f64, uint16_t, double, pk_bf16_to_f32(v))
HALF_RUN(run_h_f64, uint16_t, double, pk_f16_to_f32(v))
HALF_RUN(run_f64_bf, double, uint16_t, pk_f64_to_bf16(v))
HALF_RUN(run_f64_h, double, uint16_t, pk_f64_to_f16(v))
HALF_RUN(run_bf_h, uint16_t, uint16_t, pk_f32_to_f16(pk_bf16_to_f32(v)))
HALF_RUN(run_h_bf, uint16_t, uint16_t, pk_f32_to_bf16(pk_f16_to_f32(v)))
HALF_CV(cv_bf_f32, uint16_t, float, pk_bf16_to_f32(v), run_bf_f32)
HALF_CV(cv_h_f32, uint16_t, float, pk_f16_to_f32(v), run_h_f32)
HALF_CV(cv_f32_bf, float, uint16_t, pk_f32_to_bf16(v), run_f32_bf)
HALF_CV(cv_f32_h, float, uint16_t, pk_f32_to_f16(v), run_f32_h)
HALF_CV(cv_bf_f64, uint16_t, double, pk_bf16_to_f32(v), run_bf_f64)
HALF_CV(cv_h_f64, uint16_t, double, pk_f16_to_f32(v), run_h_f64)
HALF_CV(cv_f64_bf, double, uint16_t, pk_f64_to_bf16(v), run_f64_bf)
HALF_CV(cv_f64_h, double, uint16_t, pk_f64_to_f16(v), run_f64_h)
HALF_CV(cv_bf_h, uint16_t, uint16_t, pk_f32_to_f16(pk_bf16_to_f32(v)), run_bf_h)
HALF_CV(cv_h_bf, uint16_t, uint16_t, pk_f32_to_bf16(pk_f16_to_f32(v)), run_h_bf)

odn_ew_fn odn_half_converter(int32_t from, int32_t to) {
    bool fh = from == GFP_F16 || from == GFP_BF16, th = to == GFP_F16 || to == GFP_BF16;
    if (fh == th) {
        if (!fh || from == to) return NULL; /* the caller's same-dtype copies */
        return from == GFP_BF16 ? cv_bf_h : cv_h_bf;
    }
    bool bf = (fh ? from : to) == GFP_BF16;
    int32_t other = fh ? to : from;
    if (other == GFP_F32) return fh ? (bf ? cv_bf_f32 : cv_h_f32) : (bf ? cv_f32_bf : cv_f32_h);
    if (other == GFP_F64) return fh ? (bf ? cv_bf_f64 : cv_h_f64) : (bf ? cv_f64_bf : cv_f64_h);
    return NULL; /* integers and bool: the reference */
}

/* ------------------------------------------------------------ widening */
bool odn_half_widens(uint32_t op) {
    switch (gfp_op_family_of(op)) {
    case GFP_FAMILY_UNARY:
    case GFP_FAMILY_BINARY:
    case GFP_FAMILY_REDUCE:
    case GFP_FAMILY_MATMUL:
    case GFP_FAMILY_CONV:
    case GFP_FAMILY_POOL: return true;
    /* BATCH_NORM updates its running statistics in place: not here (the
     * core runs 16-bit batch norm in f32 anyway). */
    case GFP_FAMILY_NORM:
        return op == GFP_OP_SOFTMAX || op == GFP_OP_LOG_SOFTMAX || op == GFP_OP_LAYER_NORM;
    default: return false;
    }
}

/* numel * size bytes, false when that overflows a size_t. */
static bool scratch_bytes(const gfp_tensor *t, size_t size, size_t *bytes) {
    size_t n = size;
    for (int d = 0; d < t->rank; d++) {
        if (t->sizes[d] < 0) return false;
        size_t s = (size_t)t->sizes[d];
        if (s && n > SIZE_MAX / s) return false;
        n *= s;
    }
    *bytes = n;
    return true;
}

/* Whether t's elements fill numel consecutive elements in some order of
 * its dims (a contiguous tensor, its transpose, any permutation): then its
 * f32 copy keeps t's strides and the conversion is one linear pass, and
 * the f32 kernel sees the layout it would see for an f32 launch (a
 * transposed matmul operand stays transposed). */
static bool dense_any_order(const gfp_tensor *t) {
    int64_t expect = 1;
    bool used[GFP_MAX_RANK] = {false};
    for (;;) {
        int pick = -1;
        for (int d = 0; d < t->rank; d++)
            if (!used[d] && t->sizes[d] > 1 && (pick < 0 || t->strides[d] < t->strides[pick]))
                pick = d;
        if (pick < 0) return true;
        if (t->strides[pick] != expect) return false;
        used[pick] = true;
        expect *= t->sizes[pick];
    }
}

/* n elements between 16-bit (dtype) and f32 storage, both dense; OpenMP. */
static void convert_linear(void *dst, const void *src, int64_t n, int32_t dtype, bool to_f32) {
    int nt = odn_threads(n);
    ODN_PARALLEL(nt, t, k, {
        int64_t lo = n / k * t, hi = t + 1 == k ? n : n / k * (t + 1);
        if (to_f32)
            odn_half_to_f32((float *)dst + lo, (const uint16_t *)src + lo, hi - lo, dtype);
        else
            odn_f32_to_half((uint16_t *)dst + lo, (const float *)src + lo, hi - lo, dtype);
    });
}

/* t's f32 copy in the arena, with t's broadcast (stride-0) dims stored once
 * and kept broadcast; in t's own layout when t is dense in some order, else
 * compact. The f32 kernel sees t's geometry. */
static gfp_status widen(odn_ctx *c, const gfp_tensor *t, gfp_tensor *w) {
    gfp_tensor src = *t;
    for (int d = 0; d < src.rank; d++)
        if (src.strides[d] == 0) src.sizes[d] = 1;
    size_t bytes;
    if (!scratch_bytes(&src, sizeof(float), &bytes))
        return pk_fail(GFP_ERR_OUT_OF_MEMORY, "cpu_onednn: %s scratch size overflows",
                       pk_dtype_name(t->dtype));
    void *p = odn_arena_alloc(c, bytes);
    if (!p) return GFP_ERR_OUT_OF_MEMORY;
    if (dense_any_order(&src)) {
        *w = src;
        w->dtype = GFP_F32;
        w->buffer = p;
        w->offset = 0;
        convert_linear(p, (const char *)t->buffer + t->offset, pk_numel(&src), t->dtype, true);
    } else {
        *w = odn_temp_like(&src, GFP_F32, p);
        gfp_status st = odn_copy(w, &src);
        if (st != GFP_OK) return st == ODN_FALLBACK ? GFP_ERR_INTERNAL : st;
    }
    for (int d = 0; d < t->rank; d++) {
        if (t->strides[d] != 0) continue;
        w->sizes[d] = t->sizes[d];
        w->strides[d] = 0;
    }
    return GFP_OK;
}

/* ---- elementwise launches in chunks */
/* An elementwise launch whose tensors are all dense in the output's order
 * (or single elements broadcast) runs chunk by chunk: each chunk of the
 * 16-bit inputs widened into a small f32 buffer, the f32 kernel over the
 * chunk, the chunk rounded into the output while it is still in cache. The
 * whole-tensor form would read and write every 16-bit tensor once more in
 * f32 (measured: relu on 4M bf16 elements took 3.7x the f32 relu that way). */
#define CHUNK 16384
enum { EW_MAX_IN = 3 };

static bool all_broadcast(const gfp_tensor *t) {
    for (int d = 0; d < t->rank; d++)
        if (t->strides[d] != 0 && t->sizes[d] != 1) return false;
    return true;
}

static bool chunkable(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                      const gfp_tensor *const *out, uint32_t n_out) {
    int fam = gfp_op_family_of(op);
    if ((fam != GFP_FAMILY_UNARY && fam != GFP_FAMILY_BINARY) || n_out != 1 ||
        n_in > EW_MAX_IN || !odn_is_contiguous(out[0]) || pk_numel(out[0]) < 2 * CHUNK)
        return false;
    for (uint32_t i = 0; i < n_in; i++)
        if (!in[i] || !pk_same_shape(in[i], out[0]) ||
            !(odn_is_contiguous(in[i]) || all_broadcast(in[i])))
            return false;
    return true;
}

/* One 1-D view of t over elements [lo, lo + m) (every element its first,
 * when it is broadcast), widened into buf when t is 16-bit. */
static gfp_tensor chunk_view(const gfp_tensor *t, int64_t lo, int64_t m, float *buf, bool fill) {
    gfp_tensor v = *t;
    bool bc = all_broadcast(t);
    size_t es = pk_dtype_size(t->dtype);
    const char *base = (const char *)t->buffer + t->offset + (bc ? 0 : (size_t)lo * es);
    v.rank = 1;
    v.sizes[0] = m;
    v.strides[0] = bc ? 0 : 1;
    if (!pk_is_half(t->dtype)) {
        v.offset = t->offset + (bc ? 0 : (uint64_t)lo * es);
        return v;
    }
    if (fill) odn_half_to_f32(buf, (const uint16_t *)(const void *)base, bc ? 1 : m, t->dtype);
    v.dtype = GFP_F32;
    v.buffer = buf;
    v.offset = 0;
    return v;
}

static gfp_status run_chunk(odn_launch_fn fast, uint32_t op, const gfp_tensor *const *in,
                            uint32_t n_in, const gfp_tensor *y, const void *params, int64_t lo,
                            int64_t m, float *buf) {
    gfp_tensor v[EW_MAX_IN + 1];
    const gfp_tensor *pin[EW_MAX_IN], *pout[1];
    for (uint32_t i = 0; i < n_in; i++) {
        v[i] = chunk_view(in[i], lo, m, buf + (size_t)i * CHUNK, true);
        pin[i] = &v[i];
    }
    float *ybuf = buf + (size_t)n_in * CHUNK;
    v[n_in] = chunk_view(y, lo, m, ybuf, false);
    pout[0] = &v[n_in];
    gfp_status st = fast(op, pin, n_in, pout, 1, params);
    if (st == GFP_OK && pk_is_half(y->dtype))
        odn_f32_to_half((uint16_t *)(void *)((char *)y->buffer + y->offset) + lo, ybuf, m,
                        y->dtype);
    return st;
}

static gfp_status run_chunked(odn_ctx *c, odn_launch_fn fast, uint32_t op,
                              const gfp_tensor *const *in, uint32_t n_in, const gfp_tensor *y,
                              const void *params) {
    int64_t n = pk_numel(y), chunks = (n + CHUNK - 1) / CHUNK;
    int nt = odn_threads(n);
    size_t per = (size_t)(n_in + 1) * CHUNK;
    float *bufs = odn_arena_alloc(c, (size_t)nt * per * sizeof(float));
    if (!bufs) return GFP_ERR_OUT_OF_MEMORY;
    /* The first chunk alone: a kernel that does not take the case says so
     * there, before anything of the output was written. */
    gfp_status first = run_chunk(fast, op, in, n_in, y, params, 0, CHUNK, bufs);
    if (first != GFP_OK) return first;
    _Atomic int failed = 0;
    ODN_PARALLEL(nt, t, k, {
        for (int64_t j = 1 + t; j < chunks; j += k) {
            int64_t lo = j * CHUNK, m = n - lo < CHUNK ? n - lo : CHUNK;
            gfp_status st = run_chunk(fast, op, in, n_in, y, params, lo, m, bufs + (size_t)t * per);
            if (st != GFP_OK) {
                int none = 0;
                atomic_compare_exchange_strong(&failed, &none, st == ODN_FALLBACK ? GFP_ERR_INTERNAL
                                                                                    : st);
            }
        }
    });
    int st = atomic_load(&failed);
    if (st != 0 && st == GFP_ERR_INTERNAL)
        return pk_fail(GFP_ERR_INTERNAL, "cpu_onednn: %s on 16-bit chunks failed midway",
                       pk_op_name(op));
    return (gfp_status)st;
}

gfp_status odn_half_widened(odn_launch_fn fast, uint32_t op, const gfp_tensor *const *in,
                            uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                            const void *params) {
    enum { MAX_IN = 8, MAX_OUT = 4 };
    if (n_in > MAX_IN || n_out > MAX_OUT) return ODN_FALLBACK;
    if (chunkable(op, in, n_in, out, n_out)) {
        odn_ctx *c;
        gfp_status st = odn_ctx_acquire(&c);
        return st == GFP_OK ? run_chunked(c, fast, op, in, n_in, out[0], params) : st;
    }
    for (uint32_t k = 0; k < n_out; k++)
        if (!out[k] || (pk_is_half(out[k]->dtype) && !odn_writable(out[k]))) return ODN_FALLBACK;
    odn_ctx *c;
    gfp_status st = odn_ctx_acquire(&c);
    if (st != GFP_OK) return st;
    gfp_tensor win[MAX_IN], wout[MAX_OUT];
    const gfp_tensor *pin[MAX_IN], *pout[MAX_OUT];
    for (uint32_t i = 0; i < n_in; i++) {
        pin[i] = in[i];
        if (!in[i] || !pk_is_half(in[i]->dtype)) continue;
        st = widen(c, in[i], &win[i]);
        if (st != GFP_OK) return st;
        pin[i] = &win[i];
    }
    for (uint32_t k = 0; k < n_out; k++) {
        pout[k] = out[k];
        if (!pk_is_half(out[k]->dtype)) continue;
        size_t bytes;
        if (!scratch_bytes(out[k], sizeof(float), &bytes))
            return pk_fail(GFP_ERR_OUT_OF_MEMORY, "cpu_onednn: %s scratch size overflows",
                           pk_dtype_name(out[k]->dtype));
        void *p = odn_arena_alloc(c, bytes);
        if (!p) return GFP_ERR_OUT_OF_MEMORY;
        if (dense_any_order(out[k])) { /* its own layout, rounded in one linear pass */
            wout[k] = *out[k];
            wout[k].dtype = GFP_F32;
            wout[k].buffer = p;
            wout[k].offset = 0;
        } else {
            wout[k] = odn_temp_like(out[k], GFP_F32, p);
        }
        pout[k] = &wout[k];
    }
    st = fast(op, pin, n_in, pout, n_out, params);
    for (uint32_t k = 0; k < n_out && st == GFP_OK; k++) {
        if (pout[k] == out[k]) continue;
        if (dense_any_order(out[k])) { /* the one rounding */
            convert_linear((char *)out[k]->buffer + out[k]->offset, wout[k].buffer,
                           pk_numel(out[k]), out[k]->dtype, false);
            continue;
        }
        st = odn_copy(out[k], &wout[k]);
        if (st == ODN_FALLBACK) st = GFP_ERR_INTERNAL;
    }
    return st;
}
