/* SPDX-License-Identifier: BSD-3-Clause */
/* omp_reduce.c — SUM MEAN PROD AMAX AMIN VAR LOGSUMEXP MAX_DIM MIN_DIM in
 * f32 and f64, and SUM MEAN in c64 and c128, with OpenMP (integer
 * reductions and complex PROD stay with the reference).
 *
 * The input's dims are split into kept and reduced groups (size-1 dims
 * dropped, dims contiguous in every tensor merged), so output element o
 * reduces a "line": the reduced group at o's offset. Three schedules:
 *  - columns: the reduced dims lead and the kept ones form one unit-stride
 *    run in input and output (a bias gradient: sum over the batch). Threads
 *    take blocks of columns and add whole rows into them, vectorised.
 *  - lines: enough outputs to share out: one thread per line, the line's
 *    innermost dim as a vectorised run.
 *  - split lines: few outputs with long lines (a loss, a norm): every thread
 *    takes a range of each line and the partial results are combined.
 * Sums accumulate in double (the reference uses a compensated double sum);
 * a complex sum is the two sums of its parts, read interleaved;
 * VAR is the reference's corrected two-pass formula; AMAX / AMIN / MAX_DIM
 * let a NaN win, as the reference does. */
#include <math.h>
#include <omp.h>
#include <string.h>

#include "onednn_internal.h"

typedef struct group {
    int rank;
    int64_t sizes[GFP_MAX_RANK], xs[GFP_MAX_RANK], ys[GFP_MAX_RANK];
} group;

/* Partial result of a range of a line. */
typedef struct partial {
    double sum, sq, ext; /* sum; sum of squares (var); extreme (NaN sticks) */
    int64_t at;          /* MAX_DIM / MIN_DIM: flat line index of ext */
} partial;

typedef struct red_plan {
    uint32_t op;
    int32_t dtype; /* f32 or f64: the part dtype when complex; f32 when 16-bit */
    int32_t half;  /* GFP_BF16 / GFP_F16: x and y are 16-bit (SUM, MEAN); else 0 */
    bool cx;       /* c64 / c128: elements are (re, im) pairs of dtype */
    size_t es;     /* bytes per element */
    group kept, red;
    int64_t outputs, len;
    const char *x;
    char *y, *ind;
    int64_t ind_strides[GFP_MAX_RANK]; /* indices' strides in the kept dims */
    double correction;
} red_plan;

static void add_dim(group *g, int64_t size, int64_t xs, int64_t ys) {
    /* Merge into the previous dim when both tensors step over it as one. */
    if (g->rank > 0 && g->xs[g->rank - 1] == xs * size && g->ys[g->rank - 1] == ys * size) {
        g->sizes[g->rank - 1] *= size;
        g->xs[g->rank - 1] = xs;
        g->ys[g->rank - 1] = ys;
        return;
    }
    g->sizes[g->rank] = size;
    g->xs[g->rank] = xs;
    g->ys[g->rank] = ys;
    g->rank++;
}

/* Element offset of flat index j of a group (row-major), in x or in y. */
static int64_t group_offset(const group *g, int64_t j, bool in_y) {
    int64_t off = 0;
    for (int d = g->rank - 1; d >= 0; d--) {
        off += (j % g->sizes[d]) * (in_y ? g->ys[d] : g->xs[d]);
        j /= g->sizes[d];
    }
    return off;
}

/* ------------------------------------------------------------ line kernels */
/* PASS1: sum, extreme (max or min), product folded into sum slot via *= . */
/* K_CSUM: complex elements, the real parts summed into sum, the imaginary
 * ones into sq. */
enum { K_SUM, K_PROD, K_MAX, K_MIN, K_SQDEV, K_SUMEXP, K_ARGMAX, K_ARGMIN, K_CSUM };

/* The sum of n unit-stride elements (f32, bf16 or f16, each widened exactly)
 * in double, in one fixed order: sixteen running sums (sum j takes elements
 * i + j of each block of 16: one sum is bound by the add's latency,
 * measured 2 cycles per element on a conv bias gradient), then the tail,
 * then the sixteen sums in order. The AVX-512 form keeps the sixteen in two
 * registers and adds exactly what the C form adds, so both give the same
 * bits, and the 16-bit sums equal the f32 kernel's on widened copies. */
static inline double widen_at(const void *x, int64_t i, int32_t dt) {
    if (dt == GFP_BF16) return pk_bf16_to_f32(((const uint16_t *)x)[i]);
    if (dt == GFP_F16) return pk_f16_to_f32(((const uint16_t *)x)[i]);
    return ((const float *)x)[i];
}

static double run_sum_c(const void *x, int64_t n, int32_t dt) {
    double part[16] = {0}, acc = 0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; j++) part[j] += widen_at(x, i + j, dt);
    for (; i < n; i++) acc += widen_at(x, i, dt);
    for (int j = 0; j < 16; j++) acc += part[j];
    return acc;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "omp_half_vec.h"
__attribute__((target("avx512f,f16c"))) static double run_sum_avx512(const void *x, int64_t n,
                                                                     int32_t dt) {
    __m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 f;
        if (dt == GFP_F32) {
            f = _mm512_loadu_ps((const float *)x + i);
        } else {
            const uint16_t *h = (const uint16_t *)x + i;
            f = odn_hv_to_f32(_mm256_loadu_si256((const __m256i *)(const void *)h), dt);
        }
        lo = _mm512_add_pd(lo, _mm512_cvtps_pd(_mm512_castps512_ps256(f)));
        hi = _mm512_add_pd(hi, _mm512_cvtps_pd(_mm256_castpd_ps(
                                   _mm512_extractf64x4_pd(_mm512_castps_pd(f), 1))));
    }
    double part[16], acc = 0;
    _mm512_storeu_pd(part, lo);
    _mm512_storeu_pd(part + 8, hi);
    for (; i < n; i++) acc += widen_at(x, i, dt);
    for (int j = 0; j < 16; j++) acc += part[j];
    return acc;
}
static double run_sum(const void *x, int64_t n, int32_t dt) {
    static int avx512 = -1;
    if (avx512 < 0) avx512 = __builtin_cpu_supports("avx512f") != 0;
    return avx512 ? run_sum_avx512(x, n, dt) : run_sum_c(x, n, dt);
}
#else
static double run_sum(const void *x, int64_t n, int32_t dt) { return run_sum_c(x, n, dt); }
#endif

#define LINE_KERNELS(T, TAG)                                                              \
    static void run_##TAG(const T *x, int64_t n, int64_t s, int kind, double c,           \
                          int64_t base_index, partial *p) {                               \
        switch (kind) {                                                                   \
        case K_SUM: {                                                                     \
            double acc = 0;                                                               \
            if (s == 1 && sizeof(T) == 4) { /* f32: run_sum */                            \
                acc = run_sum(x, n, GFP_F32);                                             \
            } else if (s == 1) {                                                          \
                double part[16] = {0}; /* run_sum's order */                              \
                int64_t i = 0;                                                            \
                for (; i + 16 <= n; i += 16)                                              \
                    for (int j = 0; j < 16; j++) part[j] += (double)x[i + j];             \
                for (; i < n; i++) acc += (double)x[i];                                   \
                for (int j = 0; j < 16; j++) acc += part[j];                              \
            } else {                                                                      \
                for (int64_t i = 0; i < n; i++) acc += (double)x[i * s];                  \
            }                                                                             \
            p->sum += acc;                                                                \
            break;                                                                        \
        }                                                                                 \
        case K_CSUM: {                                                                    \
            double re = 0, im = 0;                                                        \
            if (s == 1) { /* 8 running sums of each part, interleaved as stored */        \
                double part[16] = {0};                                                    \
                int64_t i = 0;                                                            \
                for (; i + 8 <= n; i += 8)                                                \
                    for (int j = 0; j < 16; j++) part[j] += (double)x[2 * i + j];         \
                for (; i < n; i++) {                                                      \
                    re += (double)x[2 * i];                                               \
                    im += (double)x[2 * i + 1];                                           \
                }                                                                         \
                for (int j = 0; j < 16; j += 2) {                                         \
                    re += part[j];                                                        \
                    im += part[j + 1];                                                    \
                }                                                                         \
            } else {                                                                      \
                for (int64_t i = 0; i < n; i++) {                                         \
                    re += (double)x[2 * i * s];                                           \
                    im += (double)x[2 * i * s + 1];                                       \
                }                                                                         \
            }                                                                             \
            p->sum += re;                                                                 \
            p->sq += im;                                                                  \
            break;                                                                        \
        }                                                                                 \
        case K_PROD:                                                                      \
            for (int64_t i = 0; i < n; i++) p->sum *= (double)x[i * s];                   \
            break;                                                                        \
        case K_MAX:                                                                       \
        case K_MIN: {                                                                     \
            T m = (T)p->ext;                                                              \
            bool mx = kind == K_MAX;                                                      \
            for (int64_t i = 0; i < n; i++) {                                             \
                T v = x[i * s];                                                           \
                if (v != v || (mx ? v > m : v < m)) m = v;                                \
                if (m != m) break;                                                        \
            }                                                                             \
            p->ext = (double)m;                                                           \
            break;                                                                        \
        }                                                                                 \
        case K_SQDEV: { /* c is the mean; sum of deviations in sum, squares in sq */      \
            double a = 0, b = 0;                                                          \
            if (s == 1) {                                                                 \
                _Pragma("omp simd reduction(+ : a, b)")                                   \
                for (int64_t i = 0; i < n; i++) {                                         \
                    double d = (double)x[i] - c;                                          \
                    a += d;                                                               \
                    b += d * d;                                                           \
                }                                                                         \
            } else {                                                                      \
                for (int64_t i = 0; i < n; i++) {                                         \
                    double d = (double)x[i * s] - c;                                      \
                    a += d;                                                               \
                    b += d * d;                                                           \
                }                                                                         \
            }                                                                             \
            p->sum += a;                                                                  \
            p->sq += b;                                                                   \
            break;                                                                        \
        }                                                                                 \
        case K_SUMEXP: { /* c is the max */                                               \
            double acc = 0;                                                               \
            for (int64_t i = 0; i < n; i++) acc += exp((double)x[i * s] - c);             \
            p->sum += acc;                                                                \
            break;                                                                        \
        }                                                                                 \
        default: { /* K_ARGMAX, K_ARGMIN: the first extreme; the first NaN wins */        \
            bool mx = kind == K_ARGMAX;                                                   \
            for (int64_t i = 0; i < n; i++) {                                             \
                double v = (double)x[i * s];                                              \
                if (p->at < 0 || (p->ext == p->ext &&                                     \
                                  (v != v || (mx ? v > p->ext : v < p->ext)))) {          \
                    p->ext = v;                                                           \
                    p->at = base_index + i;                                               \
                }                                                                         \
            }                                                                             \
            break;                                                                        \
        }                                                                                 \
        }                                                                                 \
    }
LINE_KERNELS(float, f32)
LINE_KERNELS(double, f64)

/* K_SUM on 16-bit elements (omp_half_native.c): run_sum on unit-stride runs,
 * the same order strided, so the result is the widened path's bit for bit. */
static void run_half(const uint16_t *x, int64_t n, int64_t s, int32_t dt, partial *p) {
    double acc = 0;
    if (s == 1) acc = run_sum(x, n, dt);
    else
        for (int64_t i = 0; i < n; i++) acc += widen_at(x, i * s, dt);
    p->sum += acc;
}

/* Runs kind over flat indices [lo, hi) of the line starting at x + base. */
static void line_range(const red_plan *p, int64_t base, int64_t lo, int64_t hi, int kind,
                       double c, partial *out) {
    const group *g = &p->red;
    int r = g->rank;
    int64_t inner = g->sizes[r - 1], s = g->xs[r - 1];
    size_t es = p->es;
    while (lo < hi) {
        int64_t in_run = lo % inner, n = inner - in_run;
        if (n > hi - lo) n = hi - lo;
        const char *at = p->x + (base + group_offset(g, lo, false)) * (int64_t)es;
        if (p->half) run_half((const uint16_t *)(const void *)at, n, s, p->half, out);
        else if (p->dtype == GFP_F32)
            run_f32((const float *)(const void *)at, n, s, kind, c, lo, out);
        else run_f64((const double *)(const void *)at, n, s, kind, c, lo, out);
        lo += n;
    }
}

static partial partial_init(int kind) {
    partial q = {0, 0, 0, -1};
    if (kind == K_PROD) q.sum = 1;
    if (kind == K_MAX) q.ext = -INFINITY;
    if (kind == K_MIN) q.ext = INFINITY;
    return q;
}

static void partial_merge(int kind, partial *a, const partial *b) {
    switch (kind) {
    case K_PROD: a->sum *= b->sum; break;
    case K_MAX:
        if (a->ext == a->ext && (b->ext != b->ext || b->ext > a->ext)) a->ext = b->ext;
        break;
    case K_MIN:
        if (a->ext == a->ext && (b->ext != b->ext || b->ext < a->ext)) a->ext = b->ext;
        break;
    default:
        a->sum += b->sum;
        a->sq += b->sq;
        break;
    }
}

/* One pass of kind over the whole line at base, on nt threads (nt > 1 only
 * when the caller is not already parallel). */
static partial line_pass(const red_plan *p, int64_t base, int kind, double c, int nt) {
    partial total = partial_init(kind);
    if (nt <= 1) {
        line_range(p, base, 0, p->len, kind, c, &total);
        return total;
    }
    partial parts[64];
    if (nt > 64) nt = 64;
#pragma omp parallel num_threads(nt)
    {
        int k = omp_get_num_threads(), t = omp_get_thread_num();
        int64_t lo = p->len / k * t, hi = t + 1 == k ? p->len : p->len / k * (t + 1);
        parts[t] = partial_init(kind);
        line_range(p, base, lo, hi, kind, c, &parts[t]);
    }
    for (int t = 0; t < nt; t++) partial_merge(kind, &total, &parts[t]);
    return total;
}

/* The value of output o (and its index for MAX_DIM / MIN_DIM; the
 * imaginary part of a complex sum or mean). */
static double reduce_line(const red_plan *p, int64_t base, int nt, int64_t *index, double *im) {
    double n = (double)p->len;
    if (p->cx) {
        partial q = line_pass(p, base, K_CSUM, 0, nt);
        double div = p->op == GFP_OP_MEAN ? n : 1.0;
        *im = q.sq / div;
        return q.sum / div;
    }
    switch (p->op) {
    case GFP_OP_SUM: return line_pass(p, base, K_SUM, 0, nt).sum;
    case GFP_OP_MEAN: return line_pass(p, base, K_SUM, 0, nt).sum / n;
    case GFP_OP_PROD: return line_pass(p, base, K_PROD, 0, nt).sum;
    case GFP_OP_AMAX: return line_pass(p, base, K_MAX, 0, nt).ext;
    case GFP_OP_AMIN: return line_pass(p, base, K_MIN, 0, nt).ext;
    case GFP_OP_VAR: {
        double mean = line_pass(p, base, K_SUM, 0, nt).sum / n;
        partial d = line_pass(p, base, K_SQDEV, mean, nt);
        double m2 = d.sq - d.sum * d.sum / n;
        if (m2 < 0) m2 = 0;
        double divisor = n - p->correction;
        if (divisor < 0) divisor = 0;
        return m2 / divisor;
    }
    case GFP_OP_LOGSUMEXP: {
        double m = line_pass(p, base, K_MAX, 0, nt).ext;
        if (isnan(m) || isinf(m)) return m;
        return m + log(line_pass(p, base, K_SUMEXP, m, nt).sum);
    }
    default: { /* MAX_DIM, MIN_DIM: one thread, first extreme */
        partial q = partial_init(K_ARGMAX);
        line_range(p, base, 0, p->len, p->op == GFP_OP_MAX_DIM ? K_ARGMAX : K_ARGMIN, 0, &q);
        *index = q.at;
        return q.ext;
    }
    }
}

static void store(const red_plan *p, int64_t o, double v, int64_t index, double im) {
    int64_t off = group_offset(&p->kept, o, true);
    if (p->cx) {
        if (p->dtype == GFP_F32) {
            ((float *)(void *)p->y)[2 * off] = (float)v;
            ((float *)(void *)p->y)[2 * off + 1] = (float)im;
        } else {
            ((double *)(void *)p->y)[2 * off] = v;
            ((double *)(void *)p->y)[2 * off + 1] = im;
        }
        return;
    }
    if (p->half == GFP_BF16) ((uint16_t *)(void *)p->y)[off] = pk_f32_to_bf16((float)v);
    else if (p->half) ((uint16_t *)(void *)p->y)[off] = pk_f32_to_f16((float)v);
    else if (p->dtype == GFP_F32) ((float *)(void *)p->y)[off] = (float)v;
    else ((double *)(void *)p->y)[off] = v;
    if (p->ind) {
        int64_t ioff = 0, j = o;
        for (int d = p->kept.rank - 1; d >= 0; d--) {
            ioff += (j % p->kept.sizes[d]) * p->ind_strides[d];
            j /= p->kept.sizes[d];
        }
        ((int64_t *)(void *)p->ind)[ioff] = index;
    }
}

/* ------------------------------------------------------------ columns */
/* Parts per block (a complex column is two parts, summed apart). */
#define COLUMN_BLOCK 512

#define COLUMNS(NAME, T)                                                                  \
    static void NAME(const red_plan *p, int64_t c0, int64_t c1) {                        \
        double acc[COLUMN_BLOCK];                                                         \
        bool ext = p->op == GFP_OP_AMAX || p->op == GFP_OP_AMIN;                          \
        bool mx = p->op == GFP_OP_AMAX;                                                   \
        int64_t parts = p->cx ? 2 : 1, w = (c1 - c0) * parts;                             \
        for (int64_t i = 0; i < w; i++) acc[i] = ext ? (mx ? -INFINITY : INFINITY) : 0;   \
        for (int64_t r = 0; r < p->len; r++) {                                            \
            const T *row = (const T *)(const void *)p->x +                                \
                           (group_offset(&p->red, r, false) + c0) * parts;                \
            if (!ext) {                                                                   \
                _Pragma("omp simd")                                                       \
                for (int64_t i = 0; i < w; i++) acc[i] += (double)row[i];                 \
            } else {                                                                      \
                for (int64_t i = 0; i < w; i++) {                                         \
                    double v = row[i];                                                    \
                    if (acc[i] == acc[i] && (v != v || (mx ? v > acc[i] : v < acc[i])))   \
                        acc[i] = v;                                                       \
                }                                                                         \
            }                                                                             \
        }                                                                                 \
        T *y = (T *)(void *)p->y + c0 * parts;                                            \
        double n = p->op == GFP_OP_MEAN ? (double)p->len : 1.0;                           \
        for (int64_t i = 0; i < w; i++) y[i] = (T)(acc[i] / n);                           \
    }
COLUMNS(columns_f32, float)
COLUMNS(columns_f64, double)

/* SUM / MEAN columns of 16-bit elements: the f32 form above with each
 * element widened as it is read and each result rounded once from f32. */
#define HALF_COLUMNS(NAME, CONV, ROUND)                                                   \
    ODN_CLONES static void NAME(const red_plan *p, int64_t c0, int64_t c1) {             \
        double acc[COLUMN_BLOCK];                                                         \
        int64_t w = c1 - c0;                                                              \
        for (int64_t i = 0; i < w; i++) acc[i] = 0;                                       \
        for (int64_t r = 0; r < p->len; r++) {                                            \
            const uint16_t *row = (const uint16_t *)(const void *)p->x +                  \
                                  group_offset(&p->red, r, false) + c0;                   \
            _Pragma("omp simd")                                                           \
            for (int64_t i = 0; i < w; i++) acc[i] += (double)CONV(row[i]);               \
        }                                                                                 \
        uint16_t *y = (uint16_t *)(void *)p->y + c0;                                      \
        double n = p->op == GFP_OP_MEAN ? (double)p->len : 1.0;                           \
        for (int64_t i = 0; i < w; i++) y[i] = ROUND((float)(acc[i] / n));                \
    }
HALF_COLUMNS(columns_bf16, pk_bf16_to_f32, pk_f32_to_bf16)
HALF_COLUMNS(columns_f16, pk_f16_to_f32, pk_f32_to_f16)

static bool columns_apply(const red_plan *p) {
    bool op_ok = p->op == GFP_OP_SUM || p->op == GFP_OP_MEAN || p->op == GFP_OP_AMAX ||
                 p->op == GFP_OP_AMIN;
    return op_ok && p->kept.rank == 1 && p->kept.xs[0] == 1 && p->kept.ys[0] == 1 &&
           p->red.rank >= 1 && p->outputs >= 16;
}

static void run_columns(const red_plan *p) {
    int64_t bw = p->cx ? COLUMN_BLOCK / 2 : COLUMN_BLOCK;
    int64_t blocks = (p->outputs + bw - 1) / bw;
    int nt = odn_threads(p->outputs * p->len);
    /* Narrow blocks when there are fewer blocks than threads. */
    if (nt > 1 && blocks < nt) {
        bw = ((p->outputs + nt - 1) / nt + 15) & ~(int64_t)15;
        blocks = (p->outputs + bw - 1) / bw;
    }
    ODN_PARALLEL_FOR(nt, schedule(static), for (int64_t b = 0; b < blocks; b++) {
        int64_t c0 = b * bw, c1 = c0 + bw < p->outputs ? c0 + bw : p->outputs;
        if (p->half == GFP_BF16) columns_bf16(p, c0, c1);
        else if (p->half) columns_f16(p, c0, c1);
        else if (p->dtype == GFP_F32) columns_f32(p, c0, c1);
        else columns_f64(p, c0, c1);
    });
}

/* ------------------------------------------------------------ launch */
static bool is_dim_op(uint32_t op) { return op == GFP_OP_MAX_DIM || op == GFP_OP_MIN_DIM; }

gfp_status odn_reduce_launch(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                             const gfp_tensor *const *out, uint32_t n_out, const void *params) {
    const gfp_reduce_params *rp = params;
    bool by_dim = is_dim_op(op);
    if (n_in != 1 || !in[0] || n_out != (by_dim ? 2u : 1u) || !rp ||
        rp->struct_size < GFP_REDUCE_PARAMS_SIZE_V1_0)
        return ODN_FALLBACK;
    const gfp_tensor *x = in[0], *y = out[0], *ind = by_dim ? out[1] : NULL;
    bool cx = x->dtype == GFP_C64 || x->dtype == GFP_C128;
    bool half = pk_is_half(x->dtype); /* omp_half_native.c: SUM and MEAN */
    if ((cx || half) && op != GFP_OP_SUM && op != GFP_OP_MEAN) return ODN_FALLBACK;
    if ((x->dtype != GFP_F32 && x->dtype != GFP_F64 && !cx && !half) || y->dtype != x->dtype ||
        (ind && ind->dtype != GFP_I64) || (half && !odn_writable(y)))
        return ODN_FALLBACK;
    uint32_t dims = rp->dims;
    if ((uint64_t)dims >> x->rank != 0 || y->rank != x->rank) return ODN_FALLBACK;
    if (by_dim && (dims == 0 || (dims & (dims - 1)) != 0)) return ODN_FALLBACK;
    if (ind && !pk_same_shape(ind, y)) return ODN_FALLBACK;
    red_plan p;
    memset(&p, 0, sizeof p);
    p.op = op;
    p.cx = cx;
    p.dtype = x->dtype == GFP_F32 || x->dtype == GFP_C64 || half ? GFP_F32 : GFP_F64;
    p.half = half ? x->dtype : 0;
    p.es = pk_dtype_size(x->dtype);
    p.correction = rp->correction;
    p.outputs = p.len = 1;
    int kept_dims[GFP_MAX_RANK], nk = 0;
    for (int d = 0; d < x->rank; d++) {
        bool reduced = (dims >> d) & 1u;
        if (y->sizes[d] != (reduced ? 1 : x->sizes[d])) return ODN_FALLBACK;
        if (reduced) p.len *= x->sizes[d];
        else p.outputs *= x->sizes[d];
        if (x->sizes[d] == 1) continue;
        if (reduced) add_dim(&p.red, x->sizes[d], x->strides[d], 0);
        else if (ind) { /* no merging: the indices have their own strides */
            p.kept.sizes[p.kept.rank] = x->sizes[d];
            p.kept.xs[p.kept.rank] = x->strides[d];
            p.kept.ys[p.kept.rank] = y->strides[d];
            kept_dims[nk++] = d;
            p.kept.rank++;
        } else add_dim(&p.kept, x->sizes[d], x->strides[d], y->strides[d]);
    }
    if (p.outputs == 0) return GFP_OK;
    if (p.len == 0) return ODN_FALLBACK; /* empty lines: the reference's identities */
    for (int k = 0; k < nk; k++) p.ind_strides[k] = ind->strides[kept_dims[k]];
    if (p.red.rank == 0) { /* reducing size-1 dims only: one element per line */
        p.red.rank = 1;
        p.red.sizes[0] = 1;
        p.red.xs[0] = 1;
    }
    if (p.kept.rank == 0) {
        p.kept.rank = 1;
        p.kept.sizes[0] = 1;
    }
    for (int d = 0; d < p.kept.rank; d++)
        if (p.kept.ys[d] == 0 && p.kept.sizes[d] > 1) return ODN_FALLBACK; /* overlapping */
    p.x = (const char *)x->buffer + x->offset;
    p.y = (char *)y->buffer + y->offset;
    p.ind = ind ? (char *)ind->buffer + ind->offset : NULL;

    if (columns_apply(&p)) {
        run_columns(&p);
        return GFP_OK;
    }
    int64_t cost = op == GFP_OP_LOGSUMEXP ? 16 : 1;
    int nt = odn_threads(p.outputs * p.len * cost);
    if (nt > 1 && p.outputs < 4 * nt && !by_dim) {
        for (int64_t o = 0; o < p.outputs; o++) { /* split every line */
            int64_t unused = 0;
            double im = 0;
            double v = reduce_line(&p, group_offset(&p.kept, o, false), nt, &unused, &im);
            store(&p, o, v, 0, im);
        }
        return GFP_OK;
    }
    ODN_PARALLEL_FOR(nt, schedule(static), for (int64_t o = 0; o < p.outputs; o++) {
        int64_t index = 0;
        double im = 0;
        double v = reduce_line(&p, group_offset(&p.kept, o, false), 1, &index, &im);
        store(&p, o, v, index, im);
    });
    return GFP_OK;
}
