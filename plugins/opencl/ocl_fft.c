/* SPDX-License-Identifier: BSD-3-Clause */
/* ocl_fft.c — FFT (kernels/fft.cl): C2C, R2C and C2R over any dims, any
 * lengths and strides, forward or inverse, with a scale.
 *
 * As the reference does it: the input is loaded into a contiguous work
 * array of complex values in the compute type (c128 on a device with
 * doubles, else c64) by the complex copy kernels, each listed dim is
 * transformed in place, and the result is stored into y with the scale
 * (C2R: the real parts, after the onesided dim's lines were extended by
 * conjugate symmetry and transformed last). Power-of-two lines go through
 * work-groups holding them in local memory, or an item per line (the two
 * forms below), long ones through the four-step split; any other length
 * through Bluestein's algorithm with power-of-two transforms of
 * m >= 2n - 1, whose scratch lines are taken in chunks of at most
 * OCL_FFT_SCRATCH bytes. The work arrays are buffers of their own, released
 * once their kernels are queued (OpenCL frees them when those kernels are
 * done). */
#include <stdio.h>
#include <string.h>

#include "ocl_internal.h"

#define OCL_FFT_SCRATCH ((uint64_t)64 << 20)
/* Longest line: the chirp's k^2 mod 2n is computed in 64 bits. */
#define OCL_FFT_MAX_LENGTH ((int64_t)1 << 31)

/* The ABI's dtypes for the kind, and the device computes them (c128 and
 * f64 need doubles): plugins/common/pk_complex.c. */
static bool fft_dtypes_ok(const ocl_device *d, uint32_t kind, int32_t x, int32_t y) {
    return pk_fft_dtypes_ok(kind, x, y, PK_DT(GFP_C64) | (d->fp64 ? PK_DT(GFP_C128) : 0u));
}

uint32_t ocl_fft_support(const ocl_device *d, const gfp_op_query *q) {
    if (q->op != GFP_OP_FFT || q->n_inputs != 1 || q->n_outputs != 1) return GFP_SUPPORT_NONE;
    int32_t x = q->input_dtypes[0], y = q->output_dtypes[0];
    bool ok = fft_dtypes_ok(d, GFP_FFT_C2C, x, y) || fft_dtypes_ok(d, GFP_FFT_R2C, x, y) ||
              fft_dtypes_ok(d, GFP_FFT_C2R, x, y);
    return ok ? GFP_SUPPORT_STRIDED : GFP_SUPPORT_NONE;
}

/* The params against x and y (plugins/common's rules, the reference's),
 * then the longest line this plugin transforms; *dl: the last listed dim. */
static gfp_status check(const ocl_device *d, const gfp_fft_params *p, const gfp_tensor *x,
                        const gfp_tensor *y, int *dl) {
    uint32_t cx = PK_DT(GFP_C64) | (d->fp64 ? PK_DT(GFP_C128) : 0u);
    gfp_status st = pk_check_fft(p, x, y, cx,
                                 d->fp64 ? "" : " (this device has no doubles: c64 and f32 only)",
                                 dl);
    if (st != GFP_OK) return st;
    for (uint32_t i = 0; i < p->n_dims; i++) {
        int dd = p->dims[i];
        int64_t n = p->kind == GFP_FFT_C2R ? y->sizes[dd] : x->sizes[dd];
        if (n > OCL_FFT_MAX_LENGTH)
            return pk_fail(GFP_ERR_UNSUPPORTED, "fft: dim %d is %lld long; the opencl plugin "
                           "transforms lines of up to 2^31", dd, (long long)n);
    }
    return GFP_OK;
}

/* ------------------------------------------------------------ buffers */
static gfp_status make(ocl_device *d, uint64_t bytes, ocl_buffer *b) {
    memset(b, 0, sizeof *b);
    cl_int err = CL_SUCCESS;
    cl_mem m = ocl.CreateBuffer(d->ctx, CL_MEM_READ_WRITE, (size_t)bytes, NULL, &err);
    if (!m) return ocl_cl_fail(err, "fft", "clCreateBuffer (work array)");
    *b = (ocl_buffer){OCL_BUFFER_MAGIC, m, bytes, NULL, NULL};
    return GFP_OK;
}

static void drop(ocl_buffer *b) {
    if (b->mem) ocl.ReleaseMemObject(b->mem);
    b->mem = NULL;
}

/* A contiguous descriptor of shape in b, of the work dtype. */
static gfp_tensor view(ocl_buffer *b, int32_t dt, int rank, const int64_t *shape) {
    gfp_tensor t;
    memset(&t, 0, sizeof t);
    t.struct_size = sizeof t;
    t.dtype = dt;
    t.buffer = b;
    t.rank = rank;
    int64_t st = 1;
    for (int k = rank - 1; k >= 0; k--) {
        t.sizes[k] = shape[k];
        t.strides[k] = st;
        st *= shape[k];
    }
    return t;
}

/* ------------------------------------------------------------ 1-D transforms */
/* The first n / 2 roots of n of the sign, kept per device for the next
 * transform of the same length (computing them costs more than a radix-2
 * pass); *tw stays valid for the next OCL_FFT_ROOT_TABLES - 1 calls for
 * this sign (a table replaced while kernels that read it are queued lives
 * until they are done, as OpenCL keeps released buffers). */
static gfp_status roots(ocl_device *d, int64_t n, int sign, cl_mem *tw, size_t es) {
    int i = sign > 0, k = 0;
    for (int j = 0; j < OCL_FFT_ROOT_TABLES; j++) {
        if (d->fft_roots[i][j] && d->fft_roots_n[i][j] == n) {
            d->fft_roots_used[i][j] = ++d->fft_roots_clock;
            *tw = d->fft_roots[i][j];
            return GFP_OK;
        }
        if (d->fft_roots_used[i][j] < d->fft_roots_used[i][k]) k = j;
    }
    ocl_buffer b;
    gfp_status st = make(d, (uint64_t)(n / 2 > 0 ? n / 2 : 1) * es, &b);
    if (st != GFP_OK) return st;
    ocl_call c;
    ocl_call_begin(&c, d, OCL_PROG_FFT, "fx_roots", "fft");
    ocl_arg_mem(&c, b.mem);
    ocl_arg_i64(&c, n);
    ocl_arg_i32(&c, sign);
    if ((st = ocl_call_run1(&c, (uint64_t)(n / 2), 64)) != GFP_OK) {
        drop(&b);
        return st;
    }
    if (d->fft_roots[i][k]) ocl.ReleaseMemObject(d->fft_roots[i][k]);
    d->fft_roots[i][k] = *tw = b.mem;
    d->fft_roots_n[i][k] = n;
    d->fft_roots_used[i][k] = ++d->fft_roots_clock;
    return GFP_OK;
}

void ocl_fft_release(ocl_device *d) {
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < OCL_FFT_ROOT_TABLES; j++) {
            if (d->fft_roots[i][j]) ocl.ReleaseMemObject(d->fft_roots[i][j]);
            d->fft_roots[i][j] = NULL;
            d->fft_roots_n[i][j] = 0;
            d->fft_roots_used[i][j] = 0;
        }
}

/* Two forms (GRAFT_OPENCL_FFT=local|lines|auto):
 *   local  work-groups transform lines held in local memory (fx_block);
 *          longer contiguous lines through the four-step split, Bluestein
 *          as batched launches: the GPU form.
 *   lines  an item per line, through global memory (fx_lines_pow2,
 *          fx_lines_bluestein): on a CPU device each item's line stays in
 *          its core's cache, and the driver vectorises across items. On
 *          PoCL it measured 1.2-2x faster than local for 32 lines or more
 *          (docs/benchmarks.md), and slower for fewer.
 *   auto   lines on CPU devices for at least OCL_FFT_STAGED_LINES
 *          contiguous lines, local everywhere else (an item walking a
 *          strided line misses the cache at every element: 5x slower
 *          than local for 64 lines of 512 along dim 0). */
typedef enum fft_form { FFT_AUTO, FFT_LOCAL, FFT_LINES } fft_form;

static fft_form form_choice(void) {
    const char *v = ocl_getenv("GRAFT_OPENCL_FFT");
    if (v && !strcmp(v, "local")) return FFT_LOCAL;
    if (v && !strcmp(v, "lines")) return FFT_LINES;
    return FFT_AUTO;
}

/* Longer lines than a local block, fewer than this, each at least
 * OCL_FFT_STAGED_N long: a launch per stage with an item per butterfly
 * instead of an item per line. */
#define OCL_FFT_STAGED_LINES 32
#define OCL_FFT_STAGED_N 1024

static bool lines_form(const ocl_device *d, int64_t inner, int64_t lines) {
    fft_form f = form_choice();
    if (f != FFT_AUTO) return f == FFT_LINES;
    return (d->type & CL_DEVICE_TYPE_CPU) && inner == 1 && lines >= OCL_FFT_STAGED_LINES;
}

/* fx_block: lines of n = 2^p, 4 <= n <= block_max, in local memory, 2^lc
 * lines a group of 2^lc n / 4 items, at most OCL_FFT_BLOCK_ITEMS (and what
 * the device runs fx_block with), their lines in at most half the device's
 * local memory and OCL_FFT_BLOCK_BYTES (a GPU's groups then leave room for
 * others; a CPU device's block stays in its core's L1/L2). */
#define OCL_FFT_BLOCK_BYTES ((uint64_t)64 << 10)
#define OCL_FFT_BLOCK_ITEMS 256

/* The largest group the device runs kernel `name` with (its own limit, and
 * the device's), at most `most`, a power of two; 1 when it cannot say (a
 * failed build is then reported by the launch). */
static size_t kernel_wg(ocl_device *d, const char *name, size_t most) {
    cl_kernel k = NULL;
    size_t kwg = 0, wg = most;
    if (ocl_get_kernel(d, OCL_PROG_FFT, name, "fft", &k) != GFP_OK ||
        ocl.GetKernelWorkGroupInfo(k, d->id, CL_KERNEL_WORK_GROUP_SIZE, sizeof kwg, &kwg,
                                   NULL) != CL_SUCCESS)
        kwg = 1;
    while (wg > 1 && (wg > d->max_wg || wg > kwg)) wg /= 2;
    return wg;
}

static size_t block_items(ocl_device *d) {
    if (!d->fft_block_wg) d->fft_block_wg = kernel_wg(d, "fx_block", OCL_FFT_BLOCK_ITEMS);
    return d->fft_block_wg;
}

static int64_t block_max(ocl_device *d, size_t es) {
    uint64_t bytes = d->local_mem / 2 < OCL_FFT_BLOCK_BYTES ? d->local_mem / 2
                                                             : OCL_FFT_BLOCK_BYTES;
    int64_t n = 4 * (int64_t)block_items(d);
    while (n >= 4 && (uint64_t)n * es > bytes) n /= 2;
    return n >= 4 ? n : 0;
}

/* Lines of n (4 <= n <= block_max) of w along a dim of stride inner, in
 * place through fx_block; tw: the roots of n; with tn > 0 element i of
 * line l leaves times w_tn^(i (l % inner))
 * (twn: the roots of tn). */
static gfp_status block_lines(ocl_device *d, cl_mem w, int64_t n, int64_t inner, int64_t lines,
                              cl_mem tw, cl_mem twn, int64_t tn, size_t es) {
    int p = 0, lc = 0;
    while (((int64_t)1 << p) < n) p++;
    int64_t room = block_max(d, es) / n;
    while (lc < 6 && ((int64_t)2 << lc) <= room && ((int64_t)2 << lc) <= lines) lc++;
    int64_t cols = (int64_t)1 << lc, groups = (lines + cols - 1) / cols;
    size_t wg = (size_t)(cols * n / 4);
    ocl_call c;
    ocl_call_begin(&c, d, OCL_PROG_FFT, "fx_block", "fft");
    ocl_arg_mem(&c, w);
    ocl_arg_i64(&c, n);
    ocl_arg_i32(&c, p);
    ocl_arg_i64(&c, inner);
    ocl_arg_i64(&c, lines);
    ocl_arg_i32(&c, lc);
    ocl_arg_mem(&c, tw);
    ocl_arg_mem(&c, twn);
    ocl_arg_i64(&c, tn);
    ocl_arg_local(&c, (size_t)(cols * n) * es);
    size_t global = (size_t)groups * wg;
    return ocl_call_run(&c, 1, &global, &wg);
}

static gfp_status pow2_lines(ocl_device *d, cl_mem w, int64_t n, int64_t inner, int64_t lines,
                             cl_mem tw, size_t es, bool local);

/* Contiguous lines longer than a local block: the four-step split
 * (fft.cl), two passes of transforms in local memory (the twiddles ride on
 * the first's stores) and a transpose, instead of log2(n) passes through
 * global memory. */

static gfp_status split_lines(ocl_device *d, cl_mem w, int64_t n, int64_t lines, int sign,
                              cl_mem tw, size_t es) {
    int p = 0;
    while (((int64_t)1 << p) < n) p++;
    int p1 = p / 2, p2 = p - p1;
    int64_t n1 = (int64_t)1 << p1, n2 = (int64_t)1 << p2, total = lines * n;
    /* Each pass reads the roots of its own length: the roots of n at a
     * stride of n2 (or n1) would take a cache line per root. */
    cl_mem tw1 = NULL, tw2 = NULL;
    gfp_status st = roots(d, n1, sign, &tw1, es);
    if (st == GFP_OK) st = roots(d, n2, sign, &tw2, es);
    /* the columns, their twiddles on the way out; then the rows */
    if (st == GFP_OK) st = block_lines(d, w, n1, n2, lines * n2, tw1, tw, n, es);
    if (st == GFP_OK) st = pow2_lines(d, w, n2, 1, lines * n1, tw2, es, true);
    ocl_call c;
    ocl_buffer t;
    if (st != GFP_OK || (st = make(d, (uint64_t)total * es, &t)) != GFP_OK) return st;
    if (p1 >= 4 && kernel_wg(d, "fx_transpose_tiled", 256) == 256) {
        ocl_call_begin(&c, d, OCL_PROG_FFT, "fx_transpose_tiled", "fft");
        ocl_arg_mem(&c, t.mem);
        ocl_arg_mem(&c, w);
        ocl_arg_i32(&c, p1);
        ocl_arg_i32(&c, p2);
        size_t global[2] = {(size_t)n2, (size_t)(lines * n1)}, local[2] = {16, 16};
        st = ocl_call_run(&c, 2, global, local);
    } else {
        ocl_call_begin(&c, d, OCL_PROG_FFT, "fx_transpose", "fft");
        ocl_arg_mem(&c, t.mem);
        ocl_arg_mem(&c, w);
        ocl_arg_i64(&c, total);
        ocl_arg_i32(&c, p1);
        ocl_arg_i32(&c, p2);
        st = ocl_call_run1(&c, (uint64_t)total, 256);
    }
    if (st == GFP_OK) {
        cl_int err = ocl.EnqueueCopyBuffer(d->queue, t.mem, w, 0, 0, (size_t)total * es, 0, NULL,
                                           NULL);
        if (err != CL_SUCCESS) st = ocl_cl_fail(err, "fft", "clEnqueueCopyBuffer (work array)");
    }
    drop(&t);
    return st;
}

/* Lines of n = 2^p along a dim of stride inner; tw holds the roots of
 * n (its first half). In the local form
 * lines that fit a block go through fx_block; the others (and all in the
 * lines form) through a launch per stage when few and long, else an item
 * per line. */
static gfp_status pow2_lines(ocl_device *d, cl_mem w, int64_t n, int64_t inner, int64_t lines,
                             cl_mem tw, size_t es, bool local) {
    if (local && n >= 4 && n <= block_max(d, es))
        return block_lines(d, w, n, inner, lines, tw, tw, 0, es);
    ocl_call c;
    if (lines < OCL_FFT_STAGED_LINES && n >= OCL_FFT_STAGED_N) {
        int p = 0;
        while (((int64_t)1 << p) < n) p++;
        ocl_call_begin(&c, d, OCL_PROG_FFT, "fx_bitrev", "fft");
        ocl_arg_mem(&c, w);
        ocl_arg_i64(&c, n);
        ocl_arg_i32(&c, p);
        ocl_arg_i64(&c, inner);
        ocl_arg_i64(&c, lines);
        gfp_status st = ocl_call_run1(&c, (uint64_t)(lines * n), 1024);
        for (int s = 1; st == GFP_OK && s <= p; s++) {
            ocl_call_begin(&c, d, OCL_PROG_FFT, "fx_stage", "fft");
            ocl_arg_mem(&c, w);
            ocl_arg_i64(&c, n);
            ocl_arg_i32(&c, p);
            ocl_arg_i64(&c, inner);
            ocl_arg_i64(&c, lines);
            ocl_arg_i32(&c, s);
            ocl_arg_mem(&c, tw);
            st = ocl_call_run1(&c, (uint64_t)(lines * (n / 2)), 1024);
        }
        return st;
    }
    ocl_call_begin(&c, d, OCL_PROG_FFT, "fx_lines_pow2", "fft");
    ocl_arg_mem(&c, w);
    ocl_arg_i64(&c, n);
    ocl_arg_i64(&c, inner);
    ocl_arg_i64(&c, 0);
    ocl_arg_i64(&c, lines);
    ocl_arg_mem(&c, tw);
    return ocl_call_run1(&c, (uint64_t)lines, 16);
}

/* Lines of n = 2^p of the sign along a dim of stride inner, tw the roots
 * of n: in the local form contiguous lines longer than a block through the
 * four-step split (both its passes in blocks), the others through
 * pow2_lines. */
static gfp_status pow2_any(ocl_device *d, cl_mem w, int64_t n, int64_t inner, int64_t lines,
                           int sign, cl_mem tw, size_t es) {
    bool local = !lines_form(d, inner, lines);
    int64_t b = block_max(d, es);
    if (local && inner == 1 && n > b && (lines < OCL_FFT_STAGED_LINES || n <= b * b))
        return split_lines(d, w, n, lines, sign, tw, es);
    return pow2_lines(d, w, n, inner, lines, tw, es, local);
}

/* One Bluestein step over count lines (fx_bs_*): kernel name, then the
 * arguments in fft.cl's order. */
static gfp_status bs_step(ocl_device *d, const char *k, cl_mem w, int64_t n, int64_t inner,
                          int64_t first, int64_t count, int64_t m, cl_mem table, cl_mem t,
                          uint64_t items) {
    ocl_call c;
    ocl_call_begin(&c, d, OCL_PROG_FFT, k, "fft");
    ocl_arg_mem(&c, w);
    ocl_arg_i64(&c, n);
    ocl_arg_i64(&c, inner);
    ocl_arg_i64(&c, first);
    ocl_arg_i64(&c, count);
    ocl_arg_i64(&c, m);
    ocl_arg_mem(&c, table);
    ocl_arg_mem(&c, t);
    return ocl_call_run1(&c, items, 256);
}

/* Transforms the contiguous work array w of shape along dim. */
static gfp_status transform_dim(ocl_device *d, cl_mem w, const int64_t *shape, int rank, int dim,
                                int sign, size_t es) {
    int64_t n = shape[dim], inner = 1, lines = 1;
    if (n == 1) return GFP_OK;
    for (int k = 0; k < rank; k++)
        if (k != dim) lines *= shape[k];
    for (int k = dim + 1; k < rank; k++) inner *= shape[k];
    gfp_status st;
    cl_mem tw = NULL, twi = NULL;
    ocl_buffer chirp, bhat, scratch;
    memset(&chirp, 0, sizeof chirp);
    memset(&bhat, 0, sizeof bhat);
    memset(&scratch, 0, sizeof scratch);
    if ((n & (n - 1)) == 0) {
        if ((st = roots(d, n, sign, &tw, es)) != GFP_OK) return st;
        return pow2_any(d, w, n, inner, lines, sign, tw, es);
    }
    /* Bluestein, a chunk of lines at a time: each line times the chirp into
     * a scratch line of m, transformed, times bhat, transformed back, and
     * times the chirp and 1/m into place (the reference's operations), an
     * item per line in the lines form, as launches over the chunk (each
     * transform a batch of lines) in the local form. */
    int64_t m = 1;
    while (m < 2 * n - 1) m *= 2;
    int64_t chunk = (int64_t)(OCL_FFT_SCRATCH / ((uint64_t)m * es));
    if (chunk < 1) chunk = 1;
    if (chunk > lines) chunk = lines;
    if ((st = make(d, (uint64_t)n * es, &chirp)) == GFP_OK &&
        (st = make(d, (uint64_t)m * es, &bhat)) == GFP_OK &&
        (st = make(d, (uint64_t)(chunk * m) * es, &scratch)) == GFP_OK &&
        (st = roots(d, m, -1, &tw, es)) == GFP_OK && (st = roots(d, m, 1, &twi, es)) == GFP_OK) {
        ocl_call c;
        ocl_call_begin(&c, d, OCL_PROG_FFT, "fx_chirp", "fft");
        ocl_arg_mem(&c, chirp.mem);
        ocl_arg_i64(&c, n);
        ocl_arg_i32(&c, sign);
        st = ocl_call_run1(&c, (uint64_t)n, 64);
        if (st == GFP_OK) {
            ocl_call_begin(&c, d, OCL_PROG_FFT, "fx_chirp_wrap", "fft");
            ocl_arg_mem(&c, bhat.mem);
            ocl_arg_mem(&c, chirp.mem);
            ocl_arg_i64(&c, n);
            ocl_arg_i64(&c, m);
            st = ocl_call_run1(&c, (uint64_t)m, 64);
        }
        if (st == GFP_OK) st = pow2_any(d, bhat.mem, m, 1, 1, -1, tw, es);
        bool batched = !lines_form(d, inner, lines);
        for (int64_t first = 0; st == GFP_OK && !batched && first < lines; first += chunk) {
            int64_t count = lines - first < chunk ? lines - first : chunk;
            ocl_call_begin(&c, d, OCL_PROG_FFT, "fx_lines_bluestein", "fft");
            ocl_arg_mem(&c, w);
            ocl_arg_i64(&c, n);
            ocl_arg_i64(&c, inner);
            ocl_arg_i64(&c, first);
            ocl_arg_i64(&c, count);
            ocl_arg_i64(&c, m);
            ocl_arg_mem(&c, chirp.mem);
            ocl_arg_mem(&c, bhat.mem);
            ocl_arg_mem(&c, tw);
            ocl_arg_mem(&c, twi);
            ocl_arg_mem(&c, scratch.mem);
            st = ocl_call_run1(&c, (uint64_t)count, 16);
        }
        for (int64_t first = 0; st == GFP_OK && batched && first < lines; first += chunk) {
            int64_t count = lines - first < chunk ? lines - first : chunk;
            st = bs_step(d, "fx_bs_in", w, n, inner, first, count, m, chirp.mem, scratch.mem,
                         (uint64_t)(count * m));
            if (st == GFP_OK) st = pow2_any(d, scratch.mem, m, 1, count, -1, tw, es);
            if (st == GFP_OK)
                st = bs_step(d, "fx_bs_mul", w, n, inner, first, count, m, bhat.mem,
                             scratch.mem, (uint64_t)(count * m));
            if (st == GFP_OK) st = pow2_any(d, scratch.mem, m, 1, count, 1, twi, es);
            if (st == GFP_OK)
                st = bs_step(d, "fx_bs_out", w, n, inner, first, count, m, chirp.mem,
                             scratch.mem, (uint64_t)(count * n));
        }
    }
    drop(&chirp);
    drop(&bhat);
    drop(&scratch);
    return st;
}

/* ------------------------------------------------------------ launch */
gfp_status ocl_fft_launch(ocl_device *d, uint32_t op, const gfp_tensor *const *in,
                          uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                          const void *params) {
    if (op != GFP_OP_FFT)
        return pk_fail(GFP_ERR_INTERNAL, "fft: op %u is not a Fourier transform", (unsigned)op);
    gfp_status st = pk_expect_counts(n_in, 1, n_out, 1, "fft");
    if (st == GFP_OK) st = pk_check_params(params, GFP_FFT_PARAMS_SIZE_V1_3, "fft");
    if (st != GFP_OK) return st;
    const gfp_fft_params *p = params;
    const gfp_tensor *x = in[0], *y = out[0];
    int dl = 0;
    if ((st = check(d, p, x, y, &dl)) != GFP_OK) return st;
    if (pk_numel(x) == 0 || pk_numel(y) == 0) return GFP_OK; /* an empty batch */
    int rank = x->rank, sign = p->inverse ? 1 : -1;
    int32_t wdt = d->fp64 ? GFP_C128 : GFP_C64;
    size_t es = pk_dtype_size(wdt);

    ocl_buffer w1, w2;
    memset(&w2, 0, sizeof w2);
    if ((st = make(d, (uint64_t)pk_numel(x) * es, &w1)) != GFP_OK) return st;
    gfp_tensor wv = view(&w1, wdt, rank, x->sizes);
    st = ocl_complex_copy(d, &wv, x, "fft");
    for (uint32_t i = 0; i < p->n_dims && st == GFP_OK; i++)
        if (p->kind != GFP_FFT_C2R || p->dims[i] != dl)
            st = transform_dim(d, w1.mem, x->sizes, rank, p->dims[i], sign, es);
    const int64_t *wshape = x->sizes;
    ocl_buffer *res = &w1;
    if (st == GFP_OK && p->kind == GFP_FFT_C2R) {
        int64_t inner = 1;
        for (int k = dl + 1; k < rank; k++) inner *= y->sizes[k];
        st = make(d, (uint64_t)pk_numel(y) * es, &w2);
        if (st == GFP_OK) {
            ocl_call c;
            ocl_call_begin(&c, d, OCL_PROG_FFT, "fx_extend", "fft");
            ocl_arg_mem(&c, w2.mem);
            ocl_arg_mem(&c, w1.mem);
            ocl_arg_i64(&c, pk_numel(y));
            ocl_arg_i64(&c, y->sizes[dl]);
            ocl_arg_i64(&c, x->sizes[dl]);
            ocl_arg_i64(&c, inner);
            st = ocl_call_run1(&c, (uint64_t)pk_numel(y), 64);
        }
        if (st == GFP_OK) st = transform_dim(d, w2.mem, y->sizes, rank, dl, sign, es);
        wshape = y->sizes;
        res = &w2;
    }
    if (st == GFP_OK) {
        /* y's elements read through a view of the work array (R2C keeps
         * the first n/2 + 1 bins of each line of dl). */
        gfp_tensor rv = view(res, wdt, rank, wshape);
        for (int k = 0; k < rank; k++) rv.sizes[k] = y->sizes[k];
        const gfp_tensor *t[2] = {y, &rv};
        char stem[24], kname[64];
        snprintf(stem, sizeof stem, "fx_store_%s",
                 y->dtype == GFP_C64 ? "c64" : y->dtype == GFP_C128 ? "c128"
                                             : y->dtype == GFP_F32 ? "f32" : "f64");
        ocl_call c;
        ocl_geom g;
        ocl_complex_begin(&c, kname, sizeof kname, d, OCL_PROG_FFT, stem, "fft", &g, t, 2);
        if (d->fp64) ocl_arg_f64(&c, p->scale);
        else ocl_arg_f32(&c, (float)p->scale);
        st = ocl_geom_run(&c, &g);
    }
    drop(&w1);
    drop(&w2);
    return st;
}
