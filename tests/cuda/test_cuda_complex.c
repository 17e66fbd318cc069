/* SPDX-License-Identifier: BSD-3-Clause */
/* test_cuda_complex.c — the CUDA plugin's complex math and its FFT steps,
 * checked on the host against the reference plugin. Needs no GPU.
 *
 * 1. Formulas: kernels/cu_complex_math.h is valid host C (the text nvcc
 *    compiles for the GPU). Each op code computes the op that
 *    plugins/common/pk_complex.c's tables put at that position, and its
 *    values on a grid of complex numbers (both signs, zeros, small and large
 *    parts, the branch cuts) agree with the reference's C99 double complex
 *    within 1e-12 relative to the value's modulus (a few ulp: the formulas
 *    are the textbook ones, not glibc's). POW_SCALAR runs with integral,
 *    negative and fractional exponents. One difference is by design, as in
 *    the OpenCL kernels: a division by 0 + 0i (reciprocal, rsqrt, div, a
 *    negative integral power) gives NaN parts where C99's Annex G gives an
 *    infinity; the test pins that too.
 * 2. FFT steps: cuda_fft_plan.c's plan for a launch is run here, each MOVE
 *    as cuk_cx_move computes it and each EXEC as cuFFT defines its batched
 *    advanced layout (a plain DFT per line), with every access checked
 *    against its array's bounds and every C2R input checked for the zeroed
 *    imaginary parts of bins 0 and n/2. The result is compared with the
 *    reference plugin's FFT of the same strided tensors: C2C, R2C and C2R,
 *    either sign, every choice and order of dims of shapes up to rank 3
 *    (lines of length 1, odd and even lengths, a dim with more than
 *    CUF_MAX_REPS outer blocks, so the transposing form runs), strided and
 *    offset x and y, c64 and c128. */
#include <complex.h>
#include <math.h>
#include <stdint.h>

#include "abi_host.h"
#include "check.h"
#include "cu_complex_math.h"
#include "cuda_fft_plan.h"
#include "plugin_kit.h"

static abi_plugin ref;

/* A reference buffer of n elements of dt, with its host address. */
static gfp_buffer make_buf(int32_t dt, int64_t n, void **host) {
    gfp_buffer b = NULL;
    *host = NULL;
    if (ref.t->buffer_alloc(ref.dev, (uint64_t)(n > 0 ? n : 1) * abi_esize(dt), &b, host) !=
        GFP_OK)
        return NULL;
    return b;
}

/* ------------------------------------------------------------ formulas */
#define GRID 13
static const double grid[GRID] = {-30, -3, -1.5, -0.5, -1e-3, 0, 1e-3, 0.25, 0.9, 1, 2.5, 7, 30};

/* The op at code position of a table (unary or binary): the op whose
 * pk_complex_*_code is code; every code has exactly one. */
static uint32_t op_of_code(int code, bool binary, int *count) {
    uint32_t op = UINT32_MAX;
    *count = 0;
    for (size_t i = 0; i < GFP_OP_ROW_COUNT; i++) {
        uint32_t o = gfp_op_table[i].op;
        int c = binary ? pk_complex_binary_code(o) : pk_complex_unary_code(o);
        if (c == code) {
            op = o;
            (*count)++;
        }
    }
    return op;
}

/* |got - want| relative to |want| (absolute below 1e-300), NaN equal to NaN
 * and an infinite part equal to the same infinity. */
static double cx_err(cu_cx got, double complex want) {
    double wr = creal(want), wi = cimag(want);
    if (isnan(wr) || isnan(wi) || isinf(wr) || isinf(wi)) {
        bool same = (isnan(wr) ? isnan(got.re) : got.re == wr || !isinf(wr)) &&
                    (isnan(wi) ? isnan(got.im) : got.im == wi || !isinf(wi));
        return same ? 0 : INFINITY;
    }
    double d = hypot(got.re - wr, got.im - wi), m = cabs(want);
    return d / (m > 1e-300 ? m : 1e-300);
}

/* Runs the reference's op on n c128 values (one input, or two) into c128
 * (or f64 for ABS, bool for EQ/NE); the output bytes, or NULL. */
static void *ref_cx(uint32_t op, const double complex *a, const double complex *b, int64_t n,
                    int32_t out_dt, const void *params) {
    void *ha = NULL, *hb = NULL, *hy = NULL, *result = NULL;
    gfp_buffer ba = make_buf(GFP_C128, n, &ha), bb = b ? make_buf(GFP_C128, n, &hb) : NULL;
    gfp_buffer by = make_buf(out_dt, n, &hy);
    if (ba && (bb || !b) && by) {
        memcpy(ha, a, (size_t)n * 16);
        if (b) memcpy(hb, b, (size_t)n * 16);
        gfp_tensor ta = abi_vec(ba, 0, GFP_C128, n), tb = abi_vec(bb, 0, GFP_C128, n),
                   ty = abi_vec(by, 0, out_dt, n);
        const gfp_tensor *ins[2] = {&ta, &tb}, *outs[1] = {&ty};
        if (abi_launch(&ref, op, ins, b ? 2 : 1, outs, 1, params) == GFP_OK) {
            result = malloc((size_t)n * abi_esize(out_dt));
            if (result) memcpy(result, hy, (size_t)n * abi_esize(out_dt));
        } else {
            fprintf(stderr, "reference %s failed: %s\n", pk_op_name(op), ref.error);
        }
    }
    if (ba) ref.t->buffer_free(ref.dev, ba);
    if (bb) ref.t->buffer_free(ref.dev, bb);
    if (by) ref.t->buffer_free(ref.dev, by);
    return result;
}

static void test_codes(void) {
    int count;
    for (int c = 0; c < CU_CX_UNARY_COUNT; c++) {
        op_of_code(c, false, &count);
        CHECK_MSG(count == 1, "unary code %d names %d ops", c, count);
    }
    op_of_code(CU_CX_UNARY_COUNT, false, &count);
    CHECK_MSG(count == 0, "pk_complex.c has more unary ops than cu_complex_math.h's codes");
    for (int c = 0; c < CU_CX_BINARY_COUNT; c++) {
        op_of_code(c, true, &count);
        CHECK_MSG(count == 1, "binary code %d names %d ops", c, count);
    }
    op_of_code(CU_CX_BINARY_COUNT, true, &count);
    CHECK_MSG(count == 0, "pk_complex.c has more binary ops than cu_complex_math.h's codes");
    /* The codes are the positions the header's switch gives each op. */
    static const struct {
        int code;
        uint32_t op;
    } u[] = {{CU_CX_NEG, GFP_OP_NEG},       {CU_CX_EXP, GFP_OP_EXP},
             {CU_CX_LOG, GFP_OP_LOG},       {CU_CX_LOG1P, GFP_OP_LOG1P},
             {CU_CX_EXPM1, GFP_OP_EXPM1},   {CU_CX_SQRT, GFP_OP_SQRT},
             {CU_CX_RSQRT, GFP_OP_RSQRT},   {CU_CX_RECIPROCAL, GFP_OP_RECIPROCAL},
             {CU_CX_SQUARE, GFP_OP_SQUARE}, {CU_CX_SIN, GFP_OP_SIN},
             {CU_CX_COS, GFP_OP_COS},       {CU_CX_TANH, GFP_OP_TANH},
             {CU_CX_SIGMOID, GFP_OP_SIGMOID}, {CU_CX_POW_SCALAR, GFP_OP_POW_SCALAR},
             {CU_CX_ASIN, GFP_OP_ASIN},     {CU_CX_ACOS, GFP_OP_ACOS},
             {CU_CX_ATAN, GFP_OP_ATAN}};
    for (size_t i = 0; i < sizeof u / sizeof u[0]; i++)
        CHECK_MSG(pk_complex_unary_code(u[i].op) == u[i].code, "%s has code %d, not %d",
                  pk_op_name(u[i].op), pk_complex_unary_code(u[i].op), u[i].code);
    static const struct {
        int code;
        uint32_t op;
    } bn[] = {{CU_CX_ADD, GFP_OP_ADD}, {CU_CX_SUB, GFP_OP_SUB}, {CU_CX_MUL, GFP_OP_MUL},
              {CU_CX_DIV, GFP_OP_DIV}, {CU_CX_POW, GFP_OP_POW}};
    for (size_t i = 0; i < sizeof bn / sizeof bn[0]; i++)
        CHECK_MSG(pk_complex_binary_code(bn[i].op) == bn[i].code, "%s has code %d, not %d",
                  pk_op_name(bn[i].op), pk_complex_binary_code(bn[i].op), bn[i].code);
}

#define N_GRID (GRID * GRID)

static void grid_values(double complex *z) {
    for (int i = 0; i < GRID; i++)
        for (int j = 0; j < GRID; j++) z[i * GRID + j] = CMPLX(grid[i], grid[j]);
}

/* The unary ops that divide by their argument (1/0 differs, see below). */
static bool divides(uint32_t op, double a) {
    return op == GFP_OP_RECIPROCAL || op == GFP_OP_RSQRT ||
           (op == GFP_OP_POW_SCALAR && a < 0 && a == floor(a));
}

static void test_unary_values(void) {
    double complex z[N_GRID];
    grid_values(z);
    static const double exps[] = {2, -3, 0, 0.5, 2.7, -1.25};
    for (int c = 0; c < CU_CX_UNARY_COUNT; c++) {
        int count;
        uint32_t op = op_of_code(c, false, &count);
        int n_params = op == GFP_OP_POW_SCALAR ? (int)(sizeof exps / sizeof exps[0]) : 1;
        for (int k = 0; k < n_params; k++) {
            gfp_scalar_params sp = {.struct_size = sizeof sp, .a = exps[k]};
            double complex *want = ref_cx(op, z, NULL, N_GRID, GFP_C128, &sp);
            CHECK_MSG(want != NULL, "%s", pk_op_name(op));
            if (!want) continue;
            double worst = 0;
            int at = 0;
            for (int i = 0; i < N_GRID; i++) {
                /* exp/sin/cos/tanh/sigmoid of |part| = 30 overflow or lose
                 * everything: the ordinary range only for those. */
                cu_cx got = cu_cx_unary(c, cu_cx_of(creal(z[i]), cimag(z[i])), sp.a);
                if (z[i] == 0 && divides(op, sp.a)) {
                    /* 1/0: NaN parts here, C99's infinity in the reference */
                    CHECK_MSG(isnan(got.re) && isnan(got.im), "%s(0) is not NaN", pk_op_name(op));
                    continue;
                }
                double e = cx_err(got, want[i]);
                if (e > worst) worst = e, at = i;
            }
            CHECK_MSG(worst <= 1e-12, "%s (a = %g): error %.3g at %g%+gi (want %.17g%+.17gi, "
                      "got %.17g%+.17gi)",
                      pk_op_name(op), sp.a, worst, creal(z[at]), cimag(z[at]), creal(want[at]),
                      cimag(want[at]),
                      cu_cx_unary(c, cu_cx_of(creal(z[at]), cimag(z[at])), sp.a).re,
                      cu_cx_unary(c, cu_cx_of(creal(z[at]), cimag(z[at])), sp.a).im);
            free(want);
        }
    }
    /* ABS: hypot, as cabs. */
    double *abs_want = ref_cx(GFP_OP_ABS, z, NULL, N_GRID, GFP_F64, NULL);
    CHECK(abs_want != NULL);
    for (int i = 0; abs_want && i < N_GRID; i++)
        CHECK_MSG(hypot(creal(z[i]), cimag(z[i])) == abs_want[i], "abs at %d", i);
    free(abs_want);
}

static void test_binary_values(void) {
    static double complex a[N_GRID * N_GRID], b[N_GRID * N_GRID];
    double complex z[N_GRID];
    grid_values(z);
    for (int i = 0; i < N_GRID; i++)
        for (int j = 0; j < N_GRID; j++) {
            a[i * N_GRID + j] = z[i];
            b[i * N_GRID + j] = z[j];
        }
    int64_t n = (int64_t)N_GRID * N_GRID;
    for (int c = 0; c < CU_CX_BINARY_COUNT; c++) {
        int count;
        uint32_t op = op_of_code(c, true, &count);
        double complex *want = ref_cx(op, a, b, n, GFP_C128, NULL);
        CHECK_MSG(want != NULL, "%s", pk_op_name(op));
        if (!want) continue;
        double worst = 0;
        int64_t at = 0;
        for (int64_t i = 0; i < n; i++) {
            cu_cx got = cu_cx_binary(c, cu_cx_of(creal(a[i]), cimag(a[i])),
                                     cu_cx_of(creal(b[i]), cimag(b[i])));
            /* pow of a huge modulus to a large power over/underflows: the
             * reference's cpow and exp(b log a) then differ in how. */
            if (op == GFP_OP_POW && (cabs(want[i]) > 1e300 || cabs(want[i]) < 1e-300)) continue;
            if (op == GFP_OP_DIV && b[i] == 0) {
                CHECK_MSG(isnan(got.re) && isnan(got.im), "div by 0 is not NaN");
                continue;
            }
            double e = cx_err(got, want[i]);
            if (e > worst) worst = e, at = i;
        }
        CHECK_MSG(worst <= 1e-12, "%s: error %.3g at (%g%+gi, %g%+gi)", pk_op_name(op), worst,
                  creal(a[at]), cimag(a[at]), creal(b[at]), cimag(b[at]));
        free(want);
    }
}

/* ------------------------------------------------------------ FFT steps */
/* The arrays of one emulated launch: x and y in reference buffers (their
 * dtypes as stored), the work arrays as double complex (a real array uses
 * the real parts). */
typedef struct emu {
    const gfp_tensor *x, *y;
    void *xh, *yh; /* host address of each buffer's byte 0 */
    int64_t x_elems, y_elems; /* elements in each buffer */
    double complex *w[3];
    int64_t w_elems[3];
    int bad; /* an access out of bounds, or a C2R input not zeroed */
} emu;

static double complex *slot(emu *e, int32_t array, int64_t idx, int32_t *dt, char **raw) {
    *raw = NULL;
    if (array == CUF_X || array == CUF_Y) {
        const gfp_tensor *t = array == CUF_X ? e->x : e->y;
        int64_t el = (int64_t)(t->offset / abi_esize(t->dtype)) + idx;
        int64_t lim = array == CUF_X ? e->x_elems : e->y_elems;
        if (el < 0 || el >= lim) {
            if (!e->bad) fprintf(stderr, "  %s element %lld outside its buffer\n",
                                 array == CUF_X ? "x" : "y", (long long)el);
            e->bad = 1;
            return NULL;
        }
        *dt = t->dtype;
        *raw = (char *)(array == CUF_X ? e->xh : e->yh) + el * (int64_t)abi_esize(t->dtype);
        return NULL;
    }
    int k = array - CUF_W0;
    if (k < 0 || k > 2 || idx < 0 || idx >= e->w_elems[k]) {
        if (!e->bad) fprintf(stderr, "  work array %d element %lld outside its %lld\n", k,
                             (long long)idx, (long long)(k >= 0 && k <= 2 ? e->w_elems[k] : 0));
        e->bad = 1;
        return NULL;
    }
    return &e->w[k][idx];
}

static double complex load(emu *e, int32_t array, int64_t idx) {
    int32_t dt = 0;
    char *raw;
    double complex *w = slot(e, array, idx, &dt, &raw);
    if (w) return *w;
    if (!raw) return 0;
    switch (dt) {
    case GFP_F32: return *(float *)raw;
    case GFP_F64: return *(double *)raw;
    case GFP_C64: return CMPLX(((float *)raw)[0], ((float *)raw)[1]);
    default: return CMPLX(((double *)raw)[0], ((double *)raw)[1]);
    }
}

/* Stores v into an element of dtype dt (a work array of a real dtype keeps
 * the real part, as the device's real array would). */
static void store(emu *e, int32_t array, int32_t view_dt, int64_t idx, double complex v) {
    if (array == CUF_X) { /* x is the caller's input */
        if (!e->bad) fprintf(stderr, "  a step writes into x\n");
        e->bad = 1;
        return;
    }
    int32_t dt = 0;
    char *raw;
    double complex *w = slot(e, array, idx, &dt, &raw);
    if (w) {
        bool cx = view_dt == GFP_C64 || view_dt == GFP_C128;
        if (view_dt == GFP_C64 || view_dt == GFP_F32)
            v = CMPLX((float)creal(v), (float)cimag(v)); /* the single-precision array rounds */
        *w = cx ? v : CMPLX(creal(v), 0);
        return;
    }
    if (!raw) return;
    switch (dt) {
    case GFP_F32: *(float *)raw = (float)creal(v); break;
    case GFP_F64: *(double *)raw = creal(v); break;
    case GFP_C64:
        ((float *)raw)[0] = (float)creal(v);
        ((float *)raw)[1] = (float)cimag(v);
        break;
    default:
        ((double *)raw)[0] = creal(v);
        ((double *)raw)[1] = cimag(v);
        break;
    }
}

static int64_t view_off(const cuf_view *v, int64_t flat) {
    int64_t off = v->offset;
    for (int d = v->rank - 1; d >= 0; d--) {
        off += (flat % v->sizes[d]) * v->strides[d];
        flat /= v->sizes[d];
    }
    return off;
}

static bool is_cx(int32_t dt) { return dt == GFP_C64 || dt == GFP_C128; }

static void emu_move(emu *e, const cuf_step *s) {
    int64_t n = 1;
    CHECK_MSG(s->dst.rank == s->src.rank, "move ranks %d and %d", s->dst.rank, s->src.rank);
    for (int d = 0; d < s->dst.rank; d++) {
        CHECK_MSG(s->dst.sizes[d] == s->src.sizes[d], "move dim %d: %lld vs %lld", d,
                  (long long)s->dst.sizes[d], (long long)s->src.sizes[d]);
        n *= s->dst.sizes[d];
    }
    /* cuk_cx_move: x and y of one precision; the kernel reads each element
     * before writing its own position (in place only elementwise). */
    bool single_dst = s->dst.dtype == GFP_C64 || s->dst.dtype == GFP_F32;
    bool single_src = s->src.dtype == GFP_C64 || s->src.dtype == GFP_F32;
    CHECK(single_dst == single_src);
    for (int64_t i = 0; i < n && !e->bad; i++) {
        double complex z = load(e, s->src.array, view_off(&s->src, i));
        if (!is_cx(s->src.dtype)) z = creal(z);
        if (s->real_part) z = creal(z);
        if (s->conj) z = conj(z);
        z *= s->scale;
        store(e, s->dst.array, s->dst.dtype, view_off(&s->dst, i), z);
    }
}

static void emu_exec(emu *e, const cuf_step *s) {
    const cuf_exec *x = &s->ex;
    int64_t n = x->n, n_in = x->type == CUF_C2R ? n / 2 + 1 : n,
            n_out = x->type == CUF_R2C ? n / 2 + 1 : n;
    CHECK(x->n >= 2); /* a line of one is a MOVE */
    /* cuFFT's out-of-place C2R overwrites its input: never x's memory */
    CHECK(x->type != CUF_C2R || x->in != CUF_X);
    CHECK(x->type == CUF_C2C ? (x->sign == 1 || x->sign == -1)
                             : x->sign == (x->type == CUF_R2C ? -1 : 1));
    double complex *in = malloc((size_t)n * sizeof *in), *out = malloc((size_t)n * sizeof *out);
    if (!in || !out) {
        e->bad = 1;
        free(in);
        free(out);
        return;
    }
    for (int64_t r = 0; r < x->reps && !e->bad; r++)
        for (int64_t b = 0; b < x->batch && !e->bad; b++) {
            int64_t ib = x->in_offset + r * x->in_step + b * x->idist;
            int64_t ob = x->out_offset + r * x->out_step + b * x->odist;
            for (int64_t i = 0; i < n_in; i++) in[i] = load(e, x->in, ib + i * x->istride);
            if (x->type == CUF_C2R) {
                /* The plan zeroed these; cuFFT's handling of them is its own. */
                if (cimag(in[0]) != 0 || (n % 2 == 0 && cimag(in[n / 2]) != 0)) {
                    if (!e->bad) fprintf(stderr, "  C2R input with imaginary bin 0 or n/2\n");
                    e->bad = 1;
                }
                for (int64_t i = n_in; i < n; i++) in[i] = conj(in[n - i]);
            }
            if (x->type == CUF_R2C)
                for (int64_t i = 0; i < n; i++) in[i] = creal(in[i]);
            for (int64_t k = 0; k < n_out; k++) {
                double complex acc = 0;
                for (int64_t j = 0; j < n; j++) {
                    double ang = (double)x->sign * 6.283185307179586476925 * (double)((j * k) % n) / (double)n;
                    acc += in[j] * CMPLX(cos(ang), sin(ang));
                }
                out[k] = acc;
            }
            for (int64_t k = 0; k < n_out; k++)
                store(e, x->out, x->type == CUF_C2R ? (x->dbl ? GFP_F64 : GFP_F32)
                                                    : (x->dbl ? GFP_C128 : GFP_C64),
                      ob + k * x->ostride, out[k]);
        }
    free(in);
    free(out);
}

/* Elements a strided view may reach from its element 0 (offset in bytes
 * included), for the buffer's size: the largest offset plus one. */
static int64_t extent(const int64_t *sizes, const int64_t *strides, int rank, int64_t first) {
    int64_t hi = first;
    for (int d = 0; d < rank; d++) hi += (sizes[d] - 1) * strides[d];
    return hi + 1;
}

typedef struct fft_case {
    uint32_t kind, inverse, n_dims;
    int32_t dims[3];
    int rank;
    int64_t shape[3]; /* the full (real-side for R2C/C2R) signal shape */
    int32_t cdt;      /* c64 or c128 */
    int layout;       /* 0 contiguous, 1 x strided and offset, 2 y strided and offset */
    double scale;
} fft_case;

/* Strides of a padded, permuted layout: dims in reverse order, each padded
 * by one element, so that no dim is contiguous in the natural order. */
static void padded(int rank, const int64_t *sizes, int64_t *strides) {
    int64_t s = 1;
    for (int d = 0; d < rank; d++) {
        strides[d] = s;
        s *= sizes[d] + 1;
    }
}

static int run_case(const fft_case *c, double *err_out) {
    int rank = c->rank, dl = c->dims[c->n_dims - 1];
    int32_t rdt = c->cdt == GFP_C64 ? GFP_F32 : GFP_F64;
    int32_t xdt = c->kind == GFP_FFT_R2C ? rdt : c->cdt, ydt = c->kind == GFP_FFT_C2R ? rdt : c->cdt;
    int64_t xs[3], ys[3];
    for (int d = 0; d < rank; d++) xs[d] = ys[d] = c->shape[d];
    if (c->kind == GFP_FFT_R2C) ys[dl] = c->shape[dl] / 2 + 1;
    if (c->kind == GFP_FFT_C2R) xs[dl] = c->shape[dl] / 2 + 1;
    int64_t xst[3], yst[3];
    gfp_tensor x = abi_desc(xdt, rank, xs, NULL), y = abi_desc(ydt, rank, ys, NULL);
    if (c->layout == 1) {
        padded(rank, xs, xst);
        for (int d = 0; d < rank; d++) x.strides[d] = xst[d];
        x.offset = 3 * abi_esize(xdt);
    }
    if (c->layout == 2) {
        padded(rank, ys, yst);
        for (int d = 0; d < rank; d++) y.strides[d] = yst[d];
        y.offset = 5 * abi_esize(ydt);
    }
    int64_t xe = extent(xs, x.strides, rank, (int64_t)(x.offset / abi_esize(xdt)));
    int64_t ye = extent(ys, y.strides, rank, (int64_t)(y.offset / abi_esize(ydt)));
    void *xh, *yh, *yh2;
    gfp_buffer xb = make_buf(xdt, xe, &xh), yb = make_buf(ydt, ye, &yh), yb2 = make_buf(ydt, ye, &yh2);
    int rc = 1;
    if (!xb || !yb || !yb2) goto done;
    /* x: values from a fixed sequence; y's padding is a marker. */
    for (int64_t i = 0; i < xe * (is_cx(xdt) ? 2 : 1); i++) {
        double v = sin(0.7 * (double)i + 0.3) + 0.25 * cos(1.9 * (double)i);
        if (xdt == GFP_F32 || xdt == GFP_C64) ((float *)xh)[i] = (float)v;
        else ((double *)xh)[i] = v;
    }
    memset(yh, 0, (size_t)ye * abi_esize(ydt));
    memset(yh2, 0, (size_t)ye * abi_esize(ydt));
    x.buffer = xb;
    y.buffer = yb;
    gfp_fft_params p = {.struct_size = sizeof p, .kind = c->kind, .inverse = c->inverse,
                        .n_dims = c->n_dims, .scale = c->scale};
    for (uint32_t i = 0; i < c->n_dims; i++) p.dims[i] = c->dims[i];
    const gfp_tensor *ins[1] = {&x}, *outs[1] = {&y};
    if (abi_launch(&ref, GFP_OP_FFT, ins, 1, outs, 1, &p) != GFP_OK) {
        fprintf(stderr, "  reference fft failed: %s\n", ref.error);
        goto done;
    }
    cuf_plan plan;
    if (cuf_plan_make(&p, &x, &y, &plan) != 0) {
        fprintf(stderr, "  no plan\n");
        goto done;
    }
    gfp_tensor y2 = y;
    y2.buffer = yb2;
    emu e = {&x, &y2, xh, yh2, xe, ye, {NULL, NULL, NULL}, {0, 0, 0}, 0};
    for (int k = 0; k < 3; k++) {
        e.w_elems[k] = plan.work_elems[k];
        e.w[k] = calloc((size_t)(plan.work_elems[k] ? plan.work_elems[k] : 1), sizeof(double complex));
        /* a marker, so that reading an element no step wrote shows */
        for (int64_t i = 0; i < plan.work_elems[k]; i++) e.w[k][i] = CMPLX(NAN, NAN);
    }
    for (int s = 0; s < plan.n_steps && !e.bad; s++) {
        if (plan.steps[s].kind == CUF_MOVE) emu_move(&e, &plan.steps[s]);
        else emu_exec(&e, &plan.steps[s]);
    }
    for (int k = 0; k < 3; k++) free(e.w[k]);
    if (e.bad) goto done;
    /* Compare every element of y (and y's padding: both zero). */
    double num = 0, den = 0;
    int64_t ny = ye * (is_cx(ydt) ? 2 : 1);
    for (int64_t i = 0; i < ny; i++) {
        double a = ydt == GFP_F32 || ydt == GFP_C64 ? ((float *)yh2)[i] : ((double *)yh2)[i];
        double b = ydt == GFP_F32 || ydt == GFP_C64 ? ((float *)yh)[i] : ((double *)yh)[i];
        num += (a - b) * (a - b);
        den += b * b;
        if (a != a) num = INFINITY;
    }
    *err_out = sqrt(num) / (sqrt(den) > 0 ? sqrt(den) : 1);
    rc = 0;
done:
    if (xb) ref.t->buffer_free(ref.dev, xb);
    if (yb) ref.t->buffer_free(ref.dev, yb);
    if (yb2) ref.t->buffer_free(ref.dev, yb2);
    return rc;
}

static void test_fft_steps(void) {
    static const struct {
        int rank;
        int64_t shape[3];
    } shapes[] = {{1, {8}},       {1, {7}},       {1, {1}},       {1, {2}},
                  {2, {5, 6}},    {2, {1, 9}},    {2, {4, 1}},    {3, {3, 4, 5}},
                  {3, {17, 4, 3}}, {3, {2, 1, 6}}, {3, {20, 2, 1}}};
    int cases = 0, failed = 0;
    double worst[2] = {0, 0};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        int rank = shapes[si].rank;
        /* every ordered choice of 1 .. rank distinct dims */
        int32_t lists[64][3];
        int nl[64], count = 0;
        for (int a = 0; a < rank; a++) {
            lists[count][0] = a;
            nl[count++] = 1;
            for (int b = 0; b < rank; b++) {
                if (b == a) continue;
                lists[count][0] = a;
                lists[count][1] = b;
                nl[count++] = 2;
                for (int c = 0; c < rank; c++) {
                    if (c == a || c == b) continue;
                    lists[count][0] = a;
                    lists[count][1] = b;
                    lists[count][2] = c;
                    nl[count++] = 3;
                }
            }
        }
        for (int li = 0; li < count; li++)
            for (uint32_t kind = 0; kind < 3; kind++)
                for (uint32_t inv = 0; inv < 2; inv++)
                    for (int prec = 0; prec < 2; prec++)
                        for (int layout = 0; layout < 3; layout++) {
                            /* scale 1 and not: a contiguous y then needs no
                                             * pass of its own */
                            fft_case c = {kind, inv, (uint32_t)nl[li], {0, 0, 0}, rank,
                                          {0, 0, 0}, prec ? GFP_C128 : GFP_C64, layout,
                                          li % 2 ? 1.0 : 0.5};
                            for (int k = 0; k < nl[li]; k++) c.dims[k] = lists[li][k];
                            for (int d = 0; d < rank; d++) c.shape[d] = shapes[si].shape[d];
                            double err = INFINITY;
                            int rc = run_case(&c, &err);
                            double bar = prec ? 1e-12 : 2e-6;
                            cases++;
                            if (rc != 0 || !(err <= bar)) {
                                if (failed++ < 10)
                                    fprintf(stderr,
                                            "  FFT %s %s %s rank %d shape [%lld %lld %lld] "
                                            "dims %d%s%s layout %d: err %.3g\n",
                                            kind == 0 ? "C2C" : kind == 1 ? "R2C" : "C2R",
                                            inv ? "inverse" : "forward", prec ? "c128" : "c64",
                                            rank, (long long)c.shape[0], (long long)c.shape[1],
                                            (long long)c.shape[2], c.dims[0],
                                            nl[li] > 1 ? "," : "", nl[li] > 1 ? "..." : "",
                                            layout, err);
                            } else if (err > worst[prec]) {
                                worst[prec] = err;
                            }
                        }
    }
    fprintf(stderr, "  %d FFT launches emulated, %d failed; worst relative error c64 %.3g, "
            "c128 %.3g\n", cases, failed, worst[0], worst[1]);
    CHECK_MSG(failed == 0, "%d of %d FFT plans disagree with the reference", failed, cases);
    CHECK(cases > 1000);
}

/* The forms the plans take, and what they cost in passes: contiguous
 * tensors are transformed from x into y with no copies (fft, rfft), irfft
 * copies its input once (cuFFT's C2R overwrites it; the copy conjugates and
 * the two bins are zeroed in it); a dim with more than CUF_MAX_REPS outer
 * blocks and inner lines is transposed; strided tensors go through work
 * arrays. Sizes that overflow are refused. */
static void test_plan_forms(void) {
    int64_t s[3] = {17, 4, 3};
    gfp_tensor x = abi_desc(GFP_C128, 3, s, NULL), y = x;
    gfp_fft_params p = {.struct_size = sizeof p, .kind = GFP_FFT_C2C, .n_dims = 1, .scale = 1};
    p.dims[0] = 1;
    cuf_plan plan;
    CHECK(cuf_plan_make(&p, &x, &y, &plan) == 0);
    CHECK(plan.n_steps == 3); /* transpose from x, exec, transpose back into y */
    CHECK(plan.work_elems[0] == 0 && plan.work_elems[2] == 17 * 4 * 3);
    s[0] = 16;
    x = abi_desc(GFP_C128, 3, s, NULL);
    y = x;
    CHECK(cuf_plan_make(&p, &x, &y, &plan) == 0);
    CHECK(plan.n_steps == 1 && plan.steps[0].ex.reps == 16 && plan.steps[0].ex.in == CUF_X &&
          plan.steps[0].ex.out == CUF_Y);
    /* fft of 2^20 points, forward and unscaled: one cuFFT execution. */
    int64_t m = 1 << 20;
    x = abi_desc(GFP_C64, 1, &m, NULL);
    y = x;
    p.dims[0] = 0;
    CHECK(cuf_plan_make(&p, &x, &y, &plan) == 0);
    CHECK(plan.n_steps == 1 && plan.work_elems[0] == 0 && plan.work_elems[1] == 0);
    /* ifft with 1/n: the execution, then the scale in place. */
    p.inverse = 1;
    p.scale = 1.0 / (double)m;
    CHECK(cuf_plan_make(&p, &x, &y, &plan) == 0);
    CHECK(plan.n_steps == 2 && plan.steps[1].kind == CUF_MOVE && plan.steps[1].dst.array == CUF_Y);
    /* rfft of a [1024, 1024] batch: one R2C from x into y. */
    int64_t r[2] = {1024, 1024}, h[2] = {1024, 513};
    x = abi_desc(GFP_F32, 2, r, NULL);
    y = abi_desc(GFP_C64, 2, h, NULL);
    p = (gfp_fft_params){.struct_size = sizeof p, .kind = GFP_FFT_R2C, .n_dims = 1, .scale = 1};
    p.dims[0] = 1;
    CHECK(cuf_plan_make(&p, &x, &y, &plan) == 0);
    CHECK(plan.n_steps == 1 && plan.steps[0].ex.type == CUF_R2C && plan.steps[0].ex.batch == 1024);
    /* irfft back (even n: bins 0 and n/2 zeroed), scaled in place. */
    p.kind = GFP_FFT_C2R;
    p.inverse = 1;
    p.scale = 1.0 / 1024;
    CHECK(cuf_plan_make(&p, &y, &x, &plan) == 0);
    CHECK(plan.n_steps == 5 && plan.steps[3].ex.type == CUF_C2R && plan.steps[3].ex.out == CUF_Y);
    /* a strided x: through a work array */
    x.strides[0] = 2048;
    p.kind = GFP_FFT_R2C;
    p.inverse = 0;
    p.scale = 1;
    CHECK(cuf_plan_make(&p, &x, &y, &plan) == 0);
    CHECK(plan.n_steps == 2 && plan.work_elems[0] == 1024 * 1024);
    /* 2^40 x 2^40: the work array's size overflows (strides set by hand,
     * as the descriptor helper would overflow computing them) */
    memset(&x, 0, sizeof x);
    x.struct_size = sizeof x;
    x.dtype = GFP_C64;
    x.rank = 2;
    x.sizes[0] = x.sizes[1] = (int64_t)1 << 40;
    x.strides[0] = x.strides[1] = 1;
    y = x;
    p = (gfp_fft_params){.struct_size = sizeof p, .kind = GFP_FFT_C2C, .n_dims = 1, .scale = 1};
    CHECK(cuf_plan_make(&p, &x, &y, &plan) == -1);
}

int main(void) {
    if (abi_load_env(&ref, "GRAFT_TEST_REFERENCE_PLUGIN") != 0 || abi_open(&ref) != 0) {
        CHECK_MSG(0, "the reference plugin could not be loaded");
        return CHECK_REPORT();
    }
    RUN(test_codes);
    RUN(test_unary_values);
    RUN(test_binary_values);
    RUN(test_fft_steps);
    RUN(test_plan_forms);
    abi_close(&ref);
    return CHECK_REPORT();
}
