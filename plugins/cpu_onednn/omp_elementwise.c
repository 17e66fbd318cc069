/* SPDX-License-Identifier: BSD-3-Clause */
/* omp_elementwise.c — the elementwise engine (odn_ew), and the kernels on it
 * that are not arithmetic: COPY (every dtype pair, f16 / bf16 included), FILL,
 * comparisons and WHERE; then the routing of the elementwise family.
 *
 * Semantics are the reference's (ref_elementwise.c): float -> integer
 * truncates toward zero, saturates, NaN gives 0; integer narrowing wraps;
 * bool is x != 0. f16 / bf16 round to nearest even and keep NaN a NaN
 * (pk_half.h, vectorised in omp_half.c). */
#include <math.h>
#include <omp.h>
#include <string.h>

#include "onednn_internal.h"

/* ------------------------------------------------------------ helpers */
dnnl_data_type_t odn_dnnl_dtype(int32_t dtype) {
    switch (dtype) {
    case GFP_F32: return dnnl_f32;
    case GFP_BF16: return dnnl_bf16;
    case GFP_I32: return dnnl_s32;
    default: return dnnl_data_type_undef;
    }
}

void odn_contiguous_strides(const int64_t *sizes, int rank, int64_t *strides) {
    int64_t s = 1;
    for (int d = rank - 1; d >= 0; d--) {
        strides[d] = s;
        s *= sizes[d] > 0 ? sizes[d] : 1;
    }
}

bool odn_is_contiguous(const gfp_tensor *t) { return pk_is_contiguous(t); }

gfp_tensor odn_temp_like(const gfp_tensor *t, int32_t dtype, void *ptr) {
    gfp_tensor r = *t;
    r.dtype = dtype;
    r.buffer = ptr;
    r.offset = 0;
    odn_contiguous_strides(t->sizes, t->rank, r.strides);
    return r;
}

bool odn_packed(odn_ctx *c, const gfp_tensor *t, bool copy, gfp_tensor *out) {
    *out = *t;
    if (odn_is_contiguous(t)) return true;
    void *p = odn_arena_alloc(c, (size_t)pk_numel(t) * pk_dtype_size(t->dtype));
    if (!p) return false;
    *out = odn_temp_like(t, t->dtype, p);
    return !copy || odn_copy(out, t) == GFP_OK;
}

/* ------------------------------------------------------------ engine */
void odn_ew_init(odn_ew *g, const gfp_tensor *const *t, int n) {
    memset(g, 0, sizeof *g);
    g->n = n;
    for (int k = 0; k < n; k++) {
        g->base[k] = (char *)t[k]->buffer + t[k]->offset;
        g->esize[k] = pk_dtype_size(t[k]->dtype);
    }
    int r = 0;
    for (int d = 0; d < t[0]->rank; d++) {
        if (t[0]->sizes[d] == 1) continue; /* strides of size-1 dims mean nothing */
        g->sizes[r] = t[0]->sizes[d];
        for (int k = 0; k < n; k++) g->strides[k][r] = t[k]->strides[d];
        r++;
    }
    /* Merge dim i into i+1 when every tensor steps over i as one run. */
    int m = 0;
    for (int d = 0; d < r; d++) {
        bool merge = m > 0;
        for (int k = 0; k < n && merge; k++)
            merge = g->strides[k][m - 1] == g->strides[k][d] * g->sizes[d];
        if (merge) {
            g->sizes[m - 1] *= g->sizes[d];
            for (int k = 0; k < n; k++) g->strides[k][m - 1] = g->strides[k][d];
        } else {
            g->sizes[m] = g->sizes[d];
            for (int k = 0; k < n; k++) g->strides[k][m] = g->strides[k][d];
            m++;
        }
    }
    if (m == 0) { /* one element */
        g->sizes[0] = 1;
        for (int k = 0; k < n; k++) g->strides[k][0] = 1;
        m = 1;
    }
    g->rank = m;
}

/* Elements [lo, hi) in row-major order: a partial first row, blocks of whole
 * rows (one call each, up to the end of the second-innermost dim), and a
 * partial last row. */
static void run_range(const odn_ew *g, odn_ew_fn fn, const void *ctx, int64_t lo, int64_t hi) {
    int r = g->rank;
    int64_t idx[GFP_MAX_RANK], rem = lo, inner = g->sizes[r - 1];
    for (int d = r - 1; d >= 0; d--) {
        idx[d] = rem % g->sizes[d];
        rem /= g->sizes[d];
    }
    int64_t s[4] = {0, 0, 0, 0}, os[4] = {0, 0, 0, 0};
    for (int k = 0; k < g->n; k++) {
        s[k] = g->strides[k][r - 1];
        if (r >= 2) os[k] = g->strides[k][r - 2] * (int64_t)g->esize[k];
    }
    while (lo < hi) {
        int64_t count = inner - idx[r - 1], rows = 1;
        if (count > hi - lo) count = hi - lo;
        if (idx[r - 1] == 0 && count == inner && r >= 2) {
            rows = (hi - lo) / inner;
            if (rows > g->sizes[r - 2] - idx[r - 2]) rows = g->sizes[r - 2] - idx[r - 2];
        }
        char *p[4] = {NULL, NULL, NULL, NULL};
        for (int k = 0; k < g->n; k++) {
            int64_t off = 0;
            for (int d = 0; d < r; d++) off += idx[d] * g->strides[k][d];
            p[k] = g->base[k] + off * (int64_t)g->esize[k];
        }
        fn(p, s, count, os, rows, ctx);
        lo += count * rows;
        if (rows > 1) idx[r - 2] += rows - 1; /* the last row's carry follows */
        idx[r - 1] += count;
        for (int d = r - 1; d > 0 && idx[d] >= g->sizes[d]; d--) {
            idx[d] = 0;
            idx[d - 1]++;
        }
    }
}

/* Transposing patterns (an input whose unit-stride dim is not the output's):
 * walking output order would touch a new cache line of that input for every
 * element. Such launches go by TILE x TILE tiles: each transposed input's
 * tile is first copied, transposed, into a small buffer (every line of the
 * input read whole, once; 4-byte tiles are transposed in AVX-512 registers),
 * then the kernel runs on the tile's rows, writing whole lines of the output. Keeping the tile's lines cached instead fails
 * when rows are a power-of-two bytes apart: they all fall in one L1 set
 * (measured: a [1024, 1024] transposed update ran 4-5x slower than a
 * contiguous one that way). A weight used as W^T gets its gradient as a
 * transposed view: every optimiser update of it is such a launch. */
#define TILE 16

/* Input k is transposed: unit stride in the tile's row dim, a large one
 * along its columns (the output's unit-stride dim). */
static bool is_transposed(const odn_ew *g, int k) {
    int r = g->rank;
    return k > 0 && g->strides[k][r - 2] == 1 && g->strides[k][r - 1] >= TILE;
}

/* The dim (other than the innermost) in which some input has unit stride
 * while its innermost stride is large; -1 when there is none. */
static int transposed_dim(const odn_ew *g) {
    int r = g->rank;
    if (r < 2 || g->sizes[r - 1] < TILE) return -1;
    for (int k = 1; k < g->n; k++) {
        if (g->strides[k][r - 1] < TILE) continue;
        for (int d = r - 2; d >= 0; d--)
            if (g->strides[k][d] == 1 && g->sizes[d] >= TILE) return d;
    }
    return -1;
}

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>

#include "omp_transpose.h"
#define ODN_HAVE_T16 1
/* A full 16 x 16 tile of 4-byte elements transposed in registers: dst row i
 * (16 elements apart) = element i of src rows 0..15 (col elements apart). */
__attribute__((target("avx512f"))) static void transpose16(float *dst, const float *src,
                                                          int64_t col) {
    __m512 r[16];
    for (int j = 0; j < 16; j++) r[j] = _mm512_loadu_ps(src + j * col);
    odn_t16_f32(r);
    for (int i = 0; i < 16; i++) _mm512_storeu_ps(dst + i * 16, r[i]);
}
#endif

/* dst[i][j] = src[j * col + i] for an h x w tile, element size es (1 to 16). */
static void gather_tile(char *dst, const char *src, int64_t col, int64_t h, int64_t w, size_t es) {
#ifdef ODN_HAVE_T16
    if (es == 4 && h == TILE && w == TILE && __builtin_cpu_supports("avx512f")) {
        transpose16((float *)(void *)dst, (const float *)(const void *)src, col);
        return;
    }
#endif
#define GATHER(T)                                                                        \
    for (int64_t j = 0; j < w; j++) {                                                    \
        const T *c = (const T *)(const void *)src + j * col;                             \
        for (int64_t i = 0; i < h; i++) ((T *)(void *)dst)[i * TILE + j] = c[i];         \
    }
    switch (es) {
    case 1: GATHER(uint8_t) break;
    case 2: GATHER(uint16_t) break;
    case 4: GATHER(uint32_t) break;
    case 8: GATHER(uint64_t) break;
    default: GATHER(odn_u128) break;
    }
#undef GATHER
}

static void run_tiles(const odn_ew *g, odn_ew_fn fn, const void *ctx, int64_t lo, int64_t hi) {
    int r = g->rank;
    int64_t rows = g->sizes[r - 2], cols = g->sizes[r - 1];
    int64_t rb = (rows + TILE - 1) / TILE, cb = (cols + TILE - 1) / TILE;
    int64_t s[4] = {0, 0, 0, 0}, os[4] = {0, 0, 0, 0};
    _Alignas(64) char buf[3][TILE * TILE * 16]; /* up to c128 elements */
    for (int k = 0; k < g->n; k++) {
        s[k] = is_transposed(g, k) ? 1 : g->strides[k][r - 1];
        os[k] = is_transposed(g, k) ? TILE * (int64_t)g->esize[k]
                                    : g->strides[k][r - 2] * (int64_t)g->esize[k];
    }
    for (int64_t t = lo; t < hi; t++) { /* t: outer index, row block, column block */
        int64_t j0 = (t % cb) * TILE, i0 = (t / cb % rb) * TILE, outer = t / (cb * rb);
        int64_t off[4] = {0, 0, 0, 0};
        for (int d = r - 3; d >= 0; d--) {
            int64_t idx = outer % g->sizes[d];
            outer /= g->sizes[d];
            for (int k = 0; k < g->n; k++) off[k] += idx * g->strides[k][d];
        }
        int64_t w = cols - j0 < TILE ? cols - j0 : TILE;
        int64_t h = rows - i0 < TILE ? rows - i0 : TILE;
        char *p[4] = {NULL, NULL, NULL, NULL};
        for (int k = 0; k < g->n; k++) {
            p[k] = g->base[k] + (off[k] + i0 * g->strides[k][r - 2] +
                                 j0 * g->strides[k][r - 1]) * (int64_t)g->esize[k];
            if (is_transposed(g, k)) {
                gather_tile(buf[k - 1], p[k], g->strides[k][r - 1], h, w, g->esize[k]);
                p[k] = buf[k - 1];
            }
        }
        fn(p, s, w, os, h, ctx);
    }
}

void odn_ew_run(const odn_ew *g_in, odn_ew_fn fn, const void *ctx, int64_t cost) {
    int64_t total = 1;
    for (int d = 0; d < g_in->rank; d++) total *= g_in->sizes[d];
    if (total == 0) return;
    int nt = odn_threads(total * (cost > 0 ? cost : 1));
    int td = transposed_dim(g_in);
    if (td >= 0) {
        /* Loop order does not change an elementwise result: td goes second to last. */
        odn_ew g = *g_in;
        int r = g.rank;
        for (int k = 0; k < g.n; k++) {
            int64_t st = g.strides[k][td];
            for (int d = td; d < r - 2; d++) g.strides[k][d] = g.strides[k][d + 1];
            g.strides[k][r - 2] = st;
        }
        int64_t sz = g.sizes[td];
        for (int d = td; d < r - 2; d++) g.sizes[d] = g.sizes[d + 1];
        g.sizes[r - 2] = sz;
        int64_t tiles = total / (g.sizes[r - 2] * g.sizes[r - 1]) *
                        ((g.sizes[r - 2] + TILE - 1) / TILE) * ((g.sizes[r - 1] + TILE - 1) / TILE);
        ODN_PARALLEL(nt, ti, tn, {
            int64_t k = tn, t = ti;
            int64_t lo = tiles / k * t, hi = t + 1 == k ? tiles : tiles / k * (t + 1);
            run_tiles(&g, fn, ctx, lo, hi);
        });
        return;
    }
    if (nt <= 1 && g_in->rank == 1) { /* one run (every dense launch): run_range's call */
        char *p[4] = {NULL, NULL, NULL, NULL};
        int64_t s[4] = {0, 0, 0, 0}, os[4] = {0, 0, 0, 0};
        for (int k = 0; k < g_in->n; k++) {
            p[k] = g_in->base[k];
            s[k] = g_in->strides[k][0];
        }
        fn(p, s, total, os, 1, ctx);
        return;
    }
    if (nt <= 1) {
        run_range(g_in, fn, ctx, 0, total);
        return;
    }
#pragma omp parallel num_threads(nt)
    {
        int64_t k = omp_get_num_threads(), t = omp_get_thread_num();
        /* Chunks of whole cache lines of output, so threads never share one. */
        int64_t chunk = ((total + k - 1) / k + 15) & ~(int64_t)15;
        int64_t lo = chunk * t, hi = lo + chunk < total ? lo + chunk : total;
        if (lo < hi) run_range(g_in, fn, ctx, lo, hi);
    }
}

/* ------------------------------------------------------------ fill */
void odn_fill_pattern(char *dst, uint64_t n, const void *pattern, uint32_t size) {
    int nt = odn_threads((int64_t)(n / 16));
    uint64_t units = n / size;
    ODN_PARALLEL(nt, ti, tn, {
        uint64_t k = (uint64_t)tn, t = (uint64_t)ti;
        uint64_t lo = units / k * t, hi = t + 1 == k ? units : units / k * (t + 1);
        char *p = dst + lo * size;
        uint64_t len = (hi - lo) * size;
        if (size == 1) memset(p, *(const unsigned char *)pattern, len);
        else if (len) {
            /* Write the pattern once, then double the filled prefix. */
            memcpy(p, pattern, size);
            uint64_t done = size;
            while (done < len) {
                uint64_t c = done < len - done ? done : len - done;
                memcpy(p + done, p, c);
                done += c;
            }
        }
    });
}

#define STRIDED_STORE(T)                                                                 \
    ODN_EW_INLINE void fill_##T##_1d(char *const *p, const int64_t *s, int64_t n,        \
                                     const void *ctx) {                                  \
        T v;                                                                             \
        memcpy(&v, ctx, sizeof v);                                                       \
        T *y = (T *)p[0];                                                                \
        for (int64_t i = 0; i < n; i++) y[i * s[0]] = v;                                 \
    }                                                                                    \
    ODN_EW_KERNEL_2D(fill_##T)
STRIDED_STORE(uint8_t)
STRIDED_STORE(uint16_t)
STRIDED_STORE(uint32_t)
STRIDED_STORE(uint64_t)
STRIDED_STORE(odn_u128)

/* The element's bytes as the reference stores them (ref_store / ref_store_i64;
 * complex: value + 0i, ref_store_c). */
static void fill_value(int32_t dtype, const gfp_fill_params *p, unsigned char *bytes) {
    gfp_tensor one;
    memset(&one, 0, sizeof one);
    one.dtype = dtype;
    one.buffer = bytes;
    if (ref_is_complex(dtype)) {
        ref_store_c(&one, 0, CMPLX(p->value, 0.0));
    } else if (pk_is_float(dtype) || pk_is_half(dtype) || dtype == GFP_BOOL) {
        ref_store(&one, 0, p->value);
    } else {
        ref_store_i64(&one, 0, p->ivalue);
    }
}

static gfp_status run_fill(const gfp_tensor *y, const gfp_fill_params *p) {
    _Alignas(16) unsigned char bytes[16] = {0};
    fill_value(y->dtype, p, bytes);
    size_t es = pk_dtype_size(y->dtype);
    if (odn_is_contiguous(y)) {
        odn_fill_pattern((char *)y->buffer + y->offset, (uint64_t)pk_numel(y) * es, bytes,
                         (uint32_t)es);
        return GFP_OK;
    }
    odn_ew g;
    const gfp_tensor *t[1] = {y};
    odn_ew_init(&g, t, 1);
    odn_ew_fn fn = es == 1   ? fill_uint8_t
                   : es == 2 ? fill_uint16_t
                   : es == 4 ? fill_uint32_t
                   : es == 8 ? fill_uint64_t
                             : fill_odn_u128;
    odn_ew_run(&g, fn, bytes, 1);
    return GFP_OK;
}

/* ------------------------------------------------------------ conversions */
typedef uint8_t bool8;

/* CONVERT(name, source type, destination type, expression of v). Unit
 * strides get a loop the compiler vectorises. */
#define CONVERT(NAME, TS, TD, EXPR)                                                      \
    ODN_EW_INLINE void NAME##_1d(char *const *p, const int64_t *s, int64_t n,        \
                                const void *ctx) {                                       \
        (void)ctx;                                                                       \
        TD *y = (TD *)p[0];                                                              \
        const TS *x = (const TS *)p[1];                                                  \
        if (s[0] == 1 && s[1] == 1) {                                                    \
            for (int64_t i = 0; i < n; i++) {                                            \
                TS v = x[i];                                                             \
                y[i] = (TD)(EXPR);                                                       \
            }                                                                            \
        } else {                                                                         \
            for (int64_t i = 0; i < n; i++) {                                            \
                TS v = x[i * s[1]];                                                      \
                y[i * s[0]] = (TD)(EXPR);                                                \
            }                                                                            \
        }                                                                                \
    }                                                                                    \
    ODN_EW_KERNEL_2D(NAME)

CONVERT(cv_same2, uint16_t, uint16_t, v)
CONVERT(cv_same4, uint32_t, uint32_t, v)
CONVERT(cv_same8, uint64_t, uint64_t, v)
CONVERT(cv_f32_f64, float, double, v)
CONVERT(cv_f64_f32, double, float, v)
CONVERT(cv_i32_f32, int32_t, float, v)
CONVERT(cv_i64_f32, int64_t, float, v)
CONVERT(cv_b_f32, bool8, float, v != 0)
CONVERT(cv_i32_f64, int32_t, double, v)
CONVERT(cv_i64_f64, int64_t, double, v)
CONVERT(cv_b_f64, bool8, double, v != 0)
CONVERT(cv_f32_i32, float, int32_t, pk_trunc_i32(v))
CONVERT(cv_f64_i32, double, int32_t, pk_trunc_i32(v))
CONVERT(cv_i64_i32, int64_t, int32_t, (int32_t)(uint32_t)(uint64_t)v)
CONVERT(cv_b_i32, bool8, int32_t, v != 0)
CONVERT(cv_f32_i64, float, int64_t, pk_trunc_i64(v))
CONVERT(cv_f64_i64, double, int64_t, pk_trunc_i64(v))
CONVERT(cv_i32_i64, int32_t, int64_t, v)
CONVERT(cv_b_i64, bool8, int64_t, v != 0)
CONVERT(cv_f32_b, float, bool8, v != 0)
CONVERT(cv_f64_b, double, bool8, v != 0)
CONVERT(cv_i32_b, int32_t, bool8, v != 0)
CONVERT(cv_i64_b, int64_t, bool8, v != 0)
CONVERT(cv_b_b, bool8, bool8, v != 0)

/* Complex: the reference converts through double complex and rounds each
 * part once (ref_load_c / ref_store_c); a real x becomes x + 0i. */
#define CONVERT_C(NAME, TS, TD, RE, IM)                                                  \
    ODN_EW_INLINE void NAME##_1d(char *const *p, const int64_t *s, int64_t n,            \
                                 const void *ctx) {                                      \
        (void)ctx;                                                                       \
        TD *y = (TD *)p[0];                                                              \
        const TS *x = (const TS *)p[1];                                                  \
        for (int64_t i = 0; i < n; i++) {                                                \
            TS v = x[i * s[1]];                                                          \
            y[i * s[0]].re = (RE);                                                       \
            y[i * s[0]].im = (IM);                                                       \
        }                                                                                \
    }                                                                                    \
    ODN_EW_KERNEL_2D(NAME)
ODN_EW_INLINE void cv_same16_1d(char *const *p, const int64_t *s, int64_t n, const void *ctx) {
    (void)ctx;
    odn_u128 *y = (odn_u128 *)p[0];
    const odn_u128 *x = (const odn_u128 *)p[1];
    for (int64_t i = 0; i < n; i++) y[i * s[0]] = x[i * s[1]];
}
ODN_EW_KERNEL_2D(cv_same16)
CONVERT_C(cv_c64_c128, odn_c64, odn_c128, v.re, v.im)
CONVERT_C(cv_c128_c64, odn_c128, odn_c64, (float)v.re, (float)v.im)
CONVERT_C(cv_f32_c64, float, odn_c64, v, 0.0f)
CONVERT_C(cv_f32_c128, float, odn_c128, v, 0.0)
CONVERT_C(cv_f64_c64, double, odn_c64, (float)v, 0.0f)
CONVERT_C(cv_f64_c128, double, odn_c128, v, 0.0)

/* [source][destination] over f32 f64 i32 i64 bool f16 bf16 c64 c128; NULL:
 * not here (complex -> real is no copy: the reference refuses it). The
 * pairs with f16 / bf16 come from odn_half_converter (omp_half.c). */
static odn_ew_fn const converters[GFP_DTYPE_COUNT][GFP_DTYPE_COUNT] = {
    [GFP_F32] = {[GFP_F32] = cv_same4, [GFP_F64] = cv_f32_f64, [GFP_I32] = cv_f32_i32,
                 [GFP_I64] = cv_f32_i64, [GFP_BOOL] = cv_f32_b,
                 [GFP_C64] = cv_f32_c64, [GFP_C128] = cv_f32_c128},
    [GFP_F64] = {[GFP_F32] = cv_f64_f32, [GFP_F64] = cv_same8, [GFP_I32] = cv_f64_i32,
                 [GFP_I64] = cv_f64_i64, [GFP_BOOL] = cv_f64_b,
                 [GFP_C64] = cv_f64_c64, [GFP_C128] = cv_f64_c128},
    [GFP_I32] = {[GFP_F32] = cv_i32_f32, [GFP_F64] = cv_i32_f64, [GFP_I32] = cv_same4,
                 [GFP_I64] = cv_i32_i64, [GFP_BOOL] = cv_i32_b},
    [GFP_I64] = {[GFP_F32] = cv_i64_f32, [GFP_F64] = cv_i64_f64, [GFP_I32] = cv_i64_i32,
                 [GFP_I64] = cv_same8, [GFP_BOOL] = cv_i64_b},
    [GFP_BOOL] = {[GFP_F32] = cv_b_f32, [GFP_F64] = cv_b_f64, [GFP_I32] = cv_b_i32,
                  [GFP_I64] = cv_b_i64, [GFP_BOOL] = cv_b_b},
    [GFP_F16] = {[GFP_F16] = cv_same2},
    [GFP_BF16] = {[GFP_BF16] = cv_same2},
    [GFP_C64] = {[GFP_C64] = cv_same8, [GFP_C128] = cv_c64_c128},
    [GFP_C128] = {[GFP_C64] = cv_c128_c64, [GFP_C128] = cv_same16},
};

/* One contiguous same-dtype block: a plain parallel memcpy. */
static void copy_block(char *dst, const char *src, size_t n) {
    int nt = odn_threads((int64_t)(n / 16));
    ODN_PARALLEL(nt, ti, tn, {
        size_t t = (size_t)ti, k = (size_t)tn;
        size_t lo = n / k * t, hi = t + 1 == k ? n : n / k * (t + 1);
        memcpy(dst + lo, src + lo, hi - lo);
    });
}

gfp_status odn_copy(const gfp_tensor *y, const gfp_tensor *x) {
    if (x->dtype < 0 || x->dtype >= GFP_DTYPE_COUNT || y->dtype < 0 || y->dtype >= GFP_DTYPE_COUNT)
        return ODN_FALLBACK;
    odn_ew_fn fn = converters[x->dtype][y->dtype];
    if (!fn) fn = odn_half_converter(x->dtype, y->dtype);
    if (!fn) return ODN_FALLBACK;
    if (pk_numel(y) == 0) return GFP_OK;
    const gfp_tensor *t[2] = {y, x};
    odn_ew g;
    odn_ew_init(&g, t, 2);
    char *d = g.base[0], *s = g.base[1];
    if (x->dtype == y->dtype && d == s && !memcmp(g.strides[0], g.strides[1], sizeof g.strides[0]))
        return GFP_OK; /* exactly aliased: nothing to do */
    if (x->dtype == y->dtype && g.rank == 1 && g.strides[0][0] == 1 && g.strides[1][0] == 1) {
        copy_block(d, s, (size_t)g.sizes[0] * g.esize[0]);
        return GFP_OK;
    }
    odn_ew_run(&g, fn, NULL, 1);
    return GFP_OK;
}

/* ------------------------------------------------------------ comparisons, where */
#define COMPARE(NAME, T, OP)                                                             \
    ODN_EW_INLINE void NAME##_1d(char *const *p, const int64_t *s, int64_t n,        \
                                const void *ctx) {                                       \
        (void)ctx;                                                                       \
        bool8 *y = (bool8 *)p[0];                                                        \
        const T *a = (const T *)p[1], *b = (const T *)p[2];                              \
        if (s[0] == 1 && s[1] == 1 && s[2] == 1) {                                       \
            for (int64_t i = 0; i < n; i++) y[i] = a[i] OP b[i];                         \
        } else if (s[0] == 1 && s[1] == 1 && s[2] == 0) {                                \
            T bv = b[0];                                                                 \
            for (int64_t i = 0; i < n; i++) y[i] = a[i] OP bv;                           \
        } else {                                                                         \
            for (int64_t i = 0; i < n; i++) y[i * s[0]] = a[i * s[1]] OP b[i * s[2]];    \
        }                                                                                \
    }                                                                                    \
    ODN_EW_KERNEL_2D(NAME)
/* C's comparisons give the reference's NaN rules: only != holds for NaN. */
#define COMPARE_ALL(T, TAG)                                                              \
    COMPARE(eq_##TAG, T, ==)                                                             \
    COMPARE(ne_##TAG, T, !=)                                                             \
    COMPARE(lt_##TAG, T, <)                                                              \
    COMPARE(le_##TAG, T, <=)                                                             \
    COMPARE(gt_##TAG, T, >)                                                              \
    COMPARE(ge_##TAG, T, >=)
COMPARE_ALL(float, f32)
COMPARE_ALL(double, f64)
COMPARE_ALL(int32_t, i32)
COMPARE_ALL(int64_t, i64)

static odn_ew_fn compare_fn(uint32_t op, int32_t dt) {
    static odn_ew_fn const table[4][6] = {
        {eq_f32, ne_f32, lt_f32, le_f32, gt_f32, ge_f32},
        {eq_f64, ne_f64, lt_f64, le_f64, gt_f64, ge_f64},
        {eq_i32, ne_i32, lt_i32, le_i32, gt_i32, ge_i32},
        {eq_i64, ne_i64, lt_i64, le_i64, gt_i64, ge_i64},
    };
    int k;
    switch (op) {
    case GFP_OP_EQ: k = 0; break;
    case GFP_OP_NE: k = 1; break;
    case GFP_OP_LT: k = 2; break;
    case GFP_OP_LE: k = 3; break;
    case GFP_OP_GT: k = 4; break;
    case GFP_OP_GE: k = 5; break;
    default: return NULL;
    }
    if (dt < GFP_F32 || dt > GFP_I64) return NULL;
    return table[dt][k];
}

#define WHERE(NAME, T)                                                                   \
    ODN_EW_INLINE void NAME##_1d(char *const *p, const int64_t *s, int64_t n,        \
                                const void *ctx) {                                       \
        (void)ctx;                                                                       \
        T *y = (T *)p[0];                                                                \
        const bool8 *c = (const bool8 *)p[1];                                            \
        const T *a = (const T *)p[2], *b = (const T *)p[3];                              \
        if (s[0] == 1 && s[1] == 1 && s[2] == 1 && s[3] == 1) {                          \
            for (int64_t i = 0; i < n; i++) y[i] = c[i] ? a[i] : b[i];                   \
        } else if (s[0] == 1 && s[1] == 1 && s[2] == 1 && s[3] == 0) { /* keep or 0 */  \
            const T bv = b[0];                                                           \
            for (int64_t i = 0; i < n; i++) y[i] = c[i] ? a[i] : bv;                     \
        } else if (s[0] == 1 && s[1] == 1 && s[2] == 0 && s[3] == 1) {                   \
            const T av = a[0];                                                           \
            for (int64_t i = 0; i < n; i++) y[i] = c[i] ? av : b[i];                     \
        } else {                                                                         \
            for (int64_t i = 0; i < n; i++)                                              \
                y[i * s[0]] = c[i * s[1]] ? a[i * s[2]] : b[i * s[3]];                   \
        }                                                                                \
    }                                                                                    \
    ODN_EW_KERNEL_2D(NAME)
WHERE(where1, uint8_t)
WHERE(where2, uint16_t)
WHERE(where4, uint32_t)
WHERE(where8, uint64_t)
WHERE(where16, odn_u128)

/* ------------------------------------------------------------ routing */
static bool same_shapes(const gfp_tensor *const *t, int n) {
    for (int k = 1; k < n; k++)
        if (!pk_same_shape(t[0], t[k])) return false;
    return true;
}

static bool params_ok(const void *params, size_t size) {
    if (!params) return false;
    uint32_t s;
    memcpy(&s, params, sizeof s);
    return s >= size;
}

gfp_status odn_elementwise_launch(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                                  const gfp_tensor *const *out, uint32_t n_out,
                                  const void *params) {
    if (n_out != 1 || !out[0] || n_in > 3) return ODN_FALLBACK;
    const gfp_tensor *t[4] = {out[0], NULL, NULL, NULL};
    for (uint32_t i = 0; i < n_in; i++) {
        if (!in[i]) return ODN_FALLBACK;
        t[i + 1] = in[i];
    }
    if (!same_shapes(t, (int)n_in + 1)) return ODN_FALLBACK;
    const gfp_tensor *y = out[0];
    bool cx = false; /* complex arithmetic and comparisons: omp_complex.c */
    for (uint32_t k = 0; k <= n_in; k++) cx = cx || ref_is_complex(t[k]->dtype);
    if (cx && op != GFP_OP_COPY && op != GFP_OP_FILL && op != GFP_OP_WHERE &&
        gfp_op_family_of(op) != GFP_FAMILY_TRI)
        return odn_complex_launch(op, t, (int)n_in + 1, params);
    switch (op) {
    case GFP_OP_COPY:
        if (n_in != 1) return ODN_FALLBACK;
        return odn_copy(y, in[0]);
    case GFP_OP_FILL:
        if (n_in != 0 || !params_ok(params, GFP_FILL_PARAMS_SIZE_V1_0)) return ODN_FALLBACK;
        if (pk_numel(y) == 0) return GFP_OK;
        return run_fill(y, params);
    case GFP_OP_EQ:
    case GFP_OP_NE:
    case GFP_OP_LT:
    case GFP_OP_LE:
    case GFP_OP_GT:
    case GFP_OP_GE: {
        odn_ew_fn fn = n_in == 2 ? compare_fn(op, in[0]->dtype) : NULL;
        if (!fn || in[1]->dtype != in[0]->dtype || y->dtype != GFP_BOOL) return ODN_FALLBACK;
        odn_ew g;
        odn_ew_init(&g, t, 3);
        odn_ew_run(&g, fn, NULL, 1);
        return GFP_OK;
    }
    case GFP_OP_WHERE: {
        if (n_in != 3 || in[0]->dtype != GFP_BOOL || in[1]->dtype != y->dtype ||
            in[2]->dtype != y->dtype)
            return ODN_FALLBACK;
        size_t es = pk_dtype_size(y->dtype);
        odn_ew_fn fn = es == 1   ? where1
                       : es == 2 ? where2
                       : es == 4 ? where4
                       : es == 8 ? where8
                       : es == 16 ? where16
                                  : NULL;
        if (!fn) return ODN_FALLBACK;
        odn_ew g;
        odn_ew_init(&g, t, 4);
        odn_ew_run(&g, fn, NULL, 1);
        return GFP_OK;
    }
    default: break;
    }
    bool unary = gfp_op_family_of(op) == GFP_FAMILY_UNARY;
    bool binary = gfp_op_family_of(op) == GFP_FAMILY_BINARY;
    if ((unary && n_in != 1) || (binary && n_in != 2) || (!unary && !binary)) return ODN_FALLBACK;
    for (uint32_t i = 0; i < n_in; i++)
        if (in[i]->dtype != y->dtype) return ODN_FALLBACK;
    if (unary && y->dtype == GFP_F32) {
        gfp_status st = odn_eltwise_launch(op, in[0], y, params);
        if (st != ODN_FALLBACK) return st;
    }
    return odn_math_launch(op, t, (int)n_in + 1, params);
}
