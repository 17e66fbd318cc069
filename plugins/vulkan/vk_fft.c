/* SPDX-License-Identifier: BSD-3-Clause */
/* vk_fft.c — FFT: complex to complex (C2C), real to complex onesided (R2C)
 * and its inverse halving (C2R), over any listed dims of any lengths, any
 * strides, forward or inverse, with a scale (shaders/cx_fft.comp,
 * shaders/cx_fft_line.comp). The plugin reference (plugins/reference/
 * ref_fft.c) is the oracle; this file computes what it computes:
 *
 *   - x is copied into a contiguous complex work array (c128 where the
 *     device has doubles and the arrays fit one allocation, else the c64 of
 *     x or y), a real x with zero imaginary parts (R2C; packed R2C below
 *     copies the reals as they are);
 *   - each listed dim is transformed along its lines. A power-of-two length
 *     n takes log2(n) radix-2 Stockham passes ping-ponging between two work
 *     arrays (a dispatch per pass, an invocation per butterfly, the roots
 *     from a table computed once per length). Any other length takes
 *     Bluestein's algorithm: the DFT as the convolution
 *       X[k] = c[k] sum_j (x[j] c[j]) conj(c[k - j]),
 *       c[k] = exp(sign i pi k^2 / n),
 *     computed as a product of power-of-two transforms of length
 *     m >= 2n - 1: the lines multiplied by the chirp and zero padded to m,
 *     transformed, multiplied by the transform of the wrapped conjugate
 *     chirp (computed once per length, 1/m folded in), transformed back,
 *     multiplied by the chirp. The chirp's angle comes from k^2 mod 2n in
 *     integers, so it is rounded once, in the work dtype;
 *   - C2R transforms the dims before the onesided one on the onesided
 *     array, extends each onesided line to n bins by conjugate symmetry
 *     (bin j >= n/2 + 1 is conj(bin n - j); the imaginary parts of bins 0
 *     and n/2 stay and drop out with the real part), transforms it and keeps
 *     the real part. R2C whose onesided dim is the tensor's last, of an
 *     even length n, reads each real line as n/2 complex values
 *     z[j] = x[2j] + i x[2j + 1], transforms them at length n/2, unpacks
 *     bins 0 .. n/2 from that (the transforms of the even and odd samples,
 *     combined with the roots exp(sign i pi k / (n/2))), then transforms the
 *     other dims on the onesided array: half the work. Any other R2C
 *     transforms the real signal as complex and keeps bins 0 .. n/2;
 *   - the scale is applied by the last step that writes the array (a pass
 *     of its own when every listed dim has length 1), and the result is
 *     copied into y. */
#include <string.h>

#include "vk_internal.h"

#define FFT_GROUP 64u

uint32_t vkp_fft_support(vkp_device *d, const gfp_op_query *q) {
    if (q->op != GFP_OP_FFT || q->n_inputs != 1 || q->n_outputs != 1 || !d->phys->has_fft)
        return GFP_SUPPORT_NONE;
    int32_t x = q->input_dtypes[0], y = q->output_dtypes[0];
    uint32_t cx = vkp_complex_dtypes(d);
    bool ok = pk_fft_dtypes_ok(GFP_FFT_C2C, x, y, cx) || pk_fft_dtypes_ok(GFP_FFT_R2C, x, y, cx) ||
              pk_fft_dtypes_ok(GFP_FFT_C2R, x, y, cx);
    return ok ? GFP_SUPPORT_STRIDED : GFP_SUPPORT_NONE;
}

/* The state of one launch: the work dtype, the two work arrays and the
 * scratch of the power-of-two passes and of Bluestein's algorithm. */
typedef struct fft_run {
    vkp_device *d;
    int32_t wt;        /* work dtype, c64 or c128 */
    gfp_buffer w[2];   /* the signal, ping-ponged; w[cur] holds it */
    int cur;
    gfp_buffer roots;  /* n/2 roots of the power-of-two length roots_n; after
                        * them, at split_at, the four-step's two tables */
    int64_t roots_n, split_at;
    int64_t split_n;   /* the length whose two tables are at split_at (0: none) */
    gfp_buffer a[2];   /* Bluestein: the padded lines, ping-ponged */
    gfp_buffer chirp;  /* Bluestein: the chirp of length chirp_n */
    gfp_buffer bhat;   /* Bluestein: the transform of its wrapped conjugate, / m */
    int64_t chirp_n;
    bool inverse;
} fft_run;

/* A flat work tensor of `count` elements of the work dtype in b. */
static gfp_tensor flat(const fft_run *r, gfp_buffer b, int64_t count) {
    gfp_tensor t;
    memset(&t, 0, sizeof t);
    t.struct_size = sizeof t;
    t.dtype = r->wt;
    t.buffer = b;
    t.rank = 1;
    t.sizes[0] = count;
    t.strides[0] = 1;
    return t;
}

/* One dispatch of cx_fft.comp: mode 0 writes the table of n/2 roots into
 * dst, mode 1 is the pass Ns from src to dst. */
static gfp_status fft_dispatch(vkp_device *d, uint32_t mode, const gfp_tensor *dst,
                               const gfp_tensor *src, const gfp_tensor *table, uint64_t items,
                               int64_t n, int64_t ns, int64_t inner, bool inverse, double scale) {
    vkp_words p = {.n = 0};
    vkp_put(&p, (uint32_t)items);
    vkp_put(&p, (uint32_t)n);
    vkp_put(&p, (uint32_t)ns);
    vkp_put(&p, (uint32_t)inner);
    vkp_put(&p, src ? vkp_elem_offset(src) : 0);
    vkp_put(&p, vkp_elem_offset(dst));
    vkp_put(&p, inverse ? 1u : 0u);
    vkp_put_f32(&p, (float)scale);
    vkp_put_f64(&p, scale);
    vkp_put(&p, table ? vkp_elem_offset(table) : 0);
    uint32_t lg = 0; /* log2(n / 2) */
    while (((int64_t)2 << lg) < n) lg++;
    vkp_put(&p, lg);
    vkp_dispatch dp = {.shader = VKP_SH_CX_FFT, .n_spec = 3, .params = p.w, .n_params = p.n,
                       .n_tensors = 3, .tensors = {dst, src, table}};
    dp.spec[0] = FFT_GROUP;
    dp.spec[1] = (uint32_t)dst->dtype;
    dp.spec[2] = mode;
    dp.groups[0] = vkp_groups(d, items, FFT_GROUP);
    return vkp_dispatch_run(d, &dp);
}

/* One dispatch of cx_fft_line.comp (its header says what each mode does). */
static gfp_status line_dispatch(const fft_run *r, uint32_t mode, const gfp_tensor *dst,
                                const gfp_tensor *src, const gfp_tensor *table, uint64_t items,
                                int64_t ld, int64_t ls, int64_t inner, uint32_t flags,
                                double scale) {
    vkp_words p = {.n = 0};
    vkp_put(&p, (uint32_t)items);
    vkp_put(&p, (uint32_t)ld);
    vkp_put(&p, (uint32_t)ls);
    vkp_put(&p, (uint32_t)inner);
    vkp_put(&p, src ? vkp_elem_offset(src) : 0);
    vkp_put(&p, vkp_elem_offset(dst));
    vkp_put(&p, flags | (table ? 0u : 1u));
    vkp_put_f32(&p, (float)scale);
    vkp_put_f64(&p, scale);
    vkp_put(&p, table ? vkp_elem_offset(table) : 0);
    vkp_dispatch dp = {.shader = VKP_SH_CX_FFT_LINE, .n_spec = 3, .params = p.w,
                       .n_params = p.n, .n_tensors = 3, .tensors = {dst, src ? src : dst,
                                                                    table ? table : dst}};
    dp.spec[0] = FFT_GROUP;
    dp.spec[1] = (uint32_t)r->wt;
    dp.spec[2] = mode;
    dp.groups[0] = vkp_groups(r->d, items, FFT_GROUP);
    return vkp_dispatch_run(r->d, &dp);
}

static bool power_of_two(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

/* The power-of-two length Bluestein's algorithm convolves a length n at. */
static int64_t conv_length(int64_t n) {
    int64_t m = 1;
    while (m < 2 * n - 1) m *= 2;
    return m;
}

/* The n/2 roots exp(2 pi i m / n) into t (cx_fft.comp's mode 0). */
static gfp_status write_roots(fft_run *r, const gfp_tensor *t, int64_t n) {
    return fft_dispatch(r->d, 0, t, NULL, NULL, (uint64_t)(n / 2), n, 1, 1, false, 1.0);
}

/* *t: the table of the roots of n at the start of r->roots, written unless
 * it already holds them. */
static gfp_status roots_of(fft_run *r, int64_t n, gfp_tensor *t) {
    *t = flat(r, r->roots, n / 2);
    if (r->roots_n == n) return GFP_OK;
    r->roots_n = n;
    return write_roots(r, t, n);
}

/* Lines of up to this many points go through cx_fft_block.comp (its shared
 * array: 16 KiB of c128, the least every Vulkan device has). */
#define FFT_BLOCK 1024u

/* How cx_fft_block.comp takes `count` elements in lines of n: 2^lc lines a
 * group, `groups` groups on `launched` workgroups; false when the groups
 * would loop more than the device allows (lavapipe). */
typedef struct block_plan {
    uint32_t p, lc, launched;
    int64_t lines, groups;
} block_plan;

static bool block_fits(const fft_run *r, int64_t count, int64_t n, block_plan *bp) {
    memset(bp, 0, sizeof *bp);
    while (((int64_t)1 << bp->p) < n) bp->p++;
    bp->lines = count / n;
    while (bp->lc < 8 && (n << (bp->lc + 1)) <= (int64_t)FFT_BLOCK &&
           ((int64_t)2 << bp->lc) <= bp->lines)
        bp->lc++;
    bp->groups = (bp->lines + ((int64_t)1 << bp->lc) - 1) >> bp->lc;
    bp->launched = vkp_groups(r->d, (uint64_t)bp->groups, 1);
    /* per group: the loads and stores (tot / FFT_GROUP each), the butterflies
     * of each pair of stages; two counts per iteration as on lavapipe */
    uint64_t tot = (uint64_t)n << bp->lc;
    uint64_t per = 2 * tot / FFT_GROUP + (bp->p / 2 + 1) * (tot / 4 / FFT_GROUP + 1);
    uint64_t rounds = ((uint64_t)bp->groups + bp->launched - 1) / bp->launched;
    return rounds * (2 * per + 8) + 64 <= r->d->loop_budget;
}

/* The lines of length n (4 <= n <= FFT_BLOCK, a power of two) of src, each
 * element `inner` apart, in shared memory, into dst times scale
 * (cx_fft_block.comp, planned by block_fits); roots: the table of n. */
static gfp_status block_pass(fft_run *r, const block_plan *bp, const gfp_tensor *dst,
                             const gfp_tensor *src, const gfp_tensor *roots, int64_t n,
                             int64_t inner, bool inverse, double scale) {
    vkp_words w = {.n = 0};
    vkp_put(&w, (uint32_t)bp->lines);
    vkp_put(&w, (uint32_t)n);
    vkp_put(&w, bp->p);
    vkp_put(&w, (uint32_t)inner);
    vkp_put(&w, vkp_elem_offset(src));
    vkp_put(&w, vkp_elem_offset(dst));
    vkp_put(&w, inverse ? 1u : 0u);
    vkp_put_f32(&w, (float)scale);
    vkp_put_f64(&w, scale);
    vkp_put(&w, vkp_elem_offset(roots));
    vkp_put(&w, bp->lc);
    vkp_put(&w, (uint32_t)bp->groups);
    vkp_dispatch dp = {.shader = VKP_SH_CX_FFT_BLOCK, .n_spec = 2, .params = w.w,
                       .n_params = w.n, .n_tensors = 3, .tensors = {dst, src, roots}};
    dp.spec[0] = FFT_GROUP;
    dp.spec[1] = (uint32_t)r->wt;
    dp.groups[0] = bp->launched;
    return vkp_dispatch_run(r->d, &dp);
}

/* Contiguous lines of n = n1 n2 (FFT_BLOCK < n <= FFT_BLOCK^2, n1 <= n2):
 * the four-step split, both its transforms through shared memory: the
 * columns (n1 points, n2 apart) from bufs[*cur], the twiddles w_n^(k1 j2),
 * the rows (n2 contiguous points), and a transpose that puts bin k1 + n1 k2
 * in place with the scale, back into bufs[*cur]. *done false (nothing
 * dispatched) when a pass would not fit the device's loop budget. */
static gfp_status split_passes(fft_run *r, gfp_buffer *bufs, int *cur, int64_t count, int64_t n,
                               bool inverse, double scale, bool *done) {
    int p = 0;
    while (((int64_t)1 << p) < n) p++;
    int64_t n1 = (int64_t)1 << (p / 2), n2 = n / n1;
    block_plan b1, b2;
    *done = false;
    if (!block_fits(r, count, n1, &b1) || !block_fits(r, count, n2, &b2)) return GFP_OK;
    *done = true;
    uint64_t es = pk_dtype_size(r->wt);
    gfp_tensor t1 = flat(r, r->roots, n1 / 2), t2 = flat(r, r->roots, n2 / 2);
    t1.offset = (uint64_t)r->split_at * es;
    t2.offset = (uint64_t)(r->split_at + FFT_BLOCK / 2) * es;
    gfp_status st = GFP_OK;
    if (r->split_n != n) { /* both signs read the same tables */
        st = write_roots(r, &t1, n1);
        if (st == GFP_OK) st = write_roots(r, &t2, n2);
        r->split_n = st == GFP_OK ? n : 0;
    }
    gfp_tensor a = flat(r, bufs[*cur], count), b = flat(r, bufs[1 - *cur], count);
    if (st == GFP_OK) st = block_pass(r, &b1, &b, &a, &t1, n1, n2, inverse, 1.0);
    gfp_tensor tn; /* the roots of n, for the twiddles */
    if (st == GFP_OK) st = roots_of(r, n, &tn);
    if (st == GFP_OK)
        st = line_dispatch(r, 5, &a, &b, &tn, (uint64_t)count, n, n2, 1, inverse ? 2u : 0u, 1.0);
    if (st == GFP_OK) st = block_pass(r, &b2, &b, &a, &t2, n2, 1, inverse, 1.0);
    if (st == GFP_OK) st = line_dispatch(r, 6, &a, &b, NULL, (uint64_t)count, n, n2, 1, 0, scale);
    return st;
}

/* The radix-2 passes over the lines of length n (a power of two, > 1) of
 * the array pair bufs holding `count` elements, bufs[*cur] in and out; the
 * last pass applies scale. Lines that fit a block take one pass through
 * shared memory instead, longer contiguous ones (up to FFT_BLOCK^2) the
 * four-step split over blocks (GRAFT_VULKAN_FFT_BLOCK=0: neither, for
 * tests). */
static gfp_status pow2_passes(fft_run *r, gfp_buffer *bufs, int *cur, int64_t count, int64_t n,
                              int64_t inner, bool inverse, double scale) {
    gfp_status st = GFP_OK;
    if (inner == 1 && n > (int64_t)FFT_BLOCK && n <= (int64_t)FFT_BLOCK * FFT_BLOCK &&
        r->d->fft_block) {
        bool done = false;
        st = split_passes(r, bufs, cur, count, n, inverse, scale, &done);
        if (done || st != GFP_OK) return st;
    }
    gfp_tensor roots;
    st = roots_of(r, n, &roots);
    block_plan bp;
    if (st == GFP_OK && n >= 4 && n <= (int64_t)FFT_BLOCK && r->d->fft_block &&
        block_fits(r, count, n, &bp)) {
        gfp_tensor src = flat(r, bufs[*cur], count), dst = flat(r, bufs[1 - *cur], count);
        *cur = 1 - *cur;
        return block_pass(r, &bp, &dst, &src, &roots, n, inner, inverse, scale);
    }
    for (int64_t ns = 1; ns < n && st == GFP_OK; ns *= 2) {
        gfp_tensor src = flat(r, bufs[*cur], count), dst = flat(r, bufs[1 - *cur], count);
        st = fft_dispatch(r->d, 1, &dst, &src, &roots, (uint64_t)count / 2, n, ns, inner,
                          inverse, 2 * ns == n ? scale : 1.0);
        *cur = 1 - *cur;
    }
    return st;
}

/* Bluestein's algorithm over the lines of length n of w[cur] (count
 * elements, inner apart), in place; the last step applies scale. */
static gfp_status bluestein(fft_run *r, int64_t count, int64_t n, int64_t inner, double scale) {
    int64_t m = conv_length(n), outer = count / (n * inner), big = outer * m * inner;
    gfp_tensor chirp = flat(r, r->chirp, n), bhat = flat(r, r->bhat, m);
    gfp_status st = GFP_OK;
    int ac = 0;
    if (r->chirp_n != n) {
        /* The chirp, then the transform of its wrapped conjugate, / m (exact). */
        gfp_tensor a0 = flat(r, r->a[0], m);
        st = line_dispatch(r, 2, &chirp, NULL, NULL, (uint64_t)n, n, 0, 1,
                           r->inverse ? 2u : 0u, 1.0);
        if (st == GFP_OK)
            st = line_dispatch(r, 3, &a0, NULL, &chirp, (uint64_t)m, m, n, 1, 0, 1.0);
        if (st == GFP_OK) st = pow2_passes(r, r->a, &ac, m, m, 1, false, 1.0);
        if (st == GFP_OK) {
            gfp_tensor src = flat(r, r->a[ac], m);
            st = line_dispatch(r, 0, &bhat, &src, NULL, (uint64_t)m, m, m, 1, 0,
                               1.0 / (double)m);
        }
        r->chirp_n = st == GFP_OK ? n : 0;
        ac = 0;
    }
    gfp_tensor w = flat(r, r->w[r->cur], count);
    if (st == GFP_OK) { /* the lines times the chirp, zero padded to m */
        gfp_tensor dst = flat(r, r->a[ac], big);
        st = line_dispatch(r, 0, &dst, &w, &chirp, (uint64_t)big, m, n, inner, 0, 1.0);
    }
    if (st == GFP_OK) st = pow2_passes(r, r->a, &ac, big, m, inner, false, 1.0);
    if (st == GFP_OK) {
        gfp_tensor src = flat(r, r->a[ac], big), dst = flat(r, r->a[1 - ac], big);
        st = line_dispatch(r, 0, &dst, &src, &bhat, (uint64_t)big, m, m, inner, 0, 1.0);
        ac = 1 - ac;
    }
    if (st == GFP_OK) st = pow2_passes(r, r->a, &ac, big, m, inner, true, 1.0);
    if (st == GFP_OK) { /* times the chirp, the first n of each line */
        gfp_tensor src = flat(r, r->a[ac], big);
        st = line_dispatch(r, 0, &w, &src, &chirp, (uint64_t)count, n, m, inner, 0, scale);
    }
    return st;
}

/* Transforms dim dd of the contiguous array w[cur] of shape sizes. */
static gfp_status transform_dim(fft_run *r, const int64_t *sizes, int rank, int dd,
                                double scale) {
    int64_t n = sizes[dd], inner = 1, count = 1;
    for (int k = 0; k < rank; k++) count *= sizes[k];
    for (int k = dd + 1; k < rank; k++) inner *= sizes[k];
    if (power_of_two(n)) return pow2_passes(r, r->w, &r->cur, count, n, inner, r->inverse, scale);
    return bluestein(r, count, n, inner, scale);
}

/* Bytes of `count` elements of dtype dt, 0 when they do not fit a launch:
 * more elements than the shaders index, or more bytes than one allocation
 * (as device_props reports it). */
static uint64_t array_bytes(const vkp_device *d, int64_t count, int32_t dt) {
    uint64_t max_bytes = d->max_range & ~(d->align - 1);
    uint64_t bytes = (uint64_t)count * pk_dtype_size(dt);
    return count > (int64_t)UINT32_MAX || bytes > max_bytes ? 0 : bytes;
}

gfp_status vkp_fft_launch(vkp_device *d, uint32_t op, const gfp_tensor *const *in,
                          uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                          const void *params) {
    (void)op;
    (void)n_in;
    (void)n_out;
    const gfp_fft_params *p = params;
    const gfp_tensor *x = in[0], *y = out[0];
    int dl;
    gfp_status st = pk_check_fft(p, x, y, vkp_complex_dtypes(d),
                                 d->has_f64 ? "" : " (this device has no shaderFloat64: c64 only)",
                                 &dl);
    if (st != GFP_OK) return st;
    if (!d->phys->has_fft)
        return pk_fail(GFP_ERR_UNSUPPORTED, "fft: off on this CPU-type Vulkan device, where the "
                       "fallback device is faster (GRAFT_VULKAN_FFT=1 turns it on)");
    int64_t nx = pk_numel(x), ny = pk_numel(y);
    if (nx == 0 || ny == 0) return GFP_OK;
    int rank = x->rank;
    /* The sizes of the signal (C2R: y's, the full lengths). */
    const int64_t *full = p->kind == GFP_FFT_C2R ? y->sizes : x->sizes;
    /* R2C along the tensor's last dim, of an even length n: each real line
     * is read as n/2 complex values, transformed at length n/2 and unpacked
     * into bins 0 .. n/2 (half the work of the full-length transform). */
    bool packed = p->kind == GFP_FFT_R2C && dl == rank - 1 && x->sizes[dl] % 2 == 0;
    int64_t work = nx > ny ? nx : ny, big = 0, longest_m = 1, roots = 1, chirp = 1;
    for (uint32_t i = 0; i < p->n_dims; i++) {
        int dd = p->dims[i];
        int64_t n = packed && dd == dl ? full[dd] / 2 : full[dd];
        if (power_of_two(n)) {
            if (n / 2 > roots) roots = n / 2;
            continue;
        }
        if (n >= ((int64_t)1 << 30)) /* k^2 mod 2n in the shader's 32-bit words */
            return pk_fail(GFP_ERR_UNSUPPORTED, "fft: dim %d has length %lld; the vulkan plugin "
                           "transforms lengths that are not powers of two below 2^30", dd,
                           (long long)n);
        int64_t m = conv_length(n), lines = (p->kind == GFP_FFT_C2R ? ny : nx) / n;
        if (m / 2 > roots) roots = m / 2;
        if (m > longest_m) longest_m = m;
        if (n > chirp) chirp = n;
        if (lines > INT64_MAX / m) big = INT64_MAX;
        else if (lines * m > big) big = lines * m;
    }
    /* The work dtype: c128 where the device has it and the arrays fit, else
     * the complex dtype of x and y. */
    int32_t cx = pk_is_complex(x->dtype) ? x->dtype : y->dtype;
    int32_t wt = (vkp_complex_dtypes(d) & PK_DT(GFP_C128)) ? GFP_C128 : cx;
    for (int pass = 0; pass < 2; pass++) {
        bool fits = array_bytes(d, work, wt) && (!big || array_bytes(d, big, wt));
        if (fits) break;
        if (wt == cx || pass == 1)
            return pk_fail(GFP_ERR_UNSUPPORTED, "fft: the work arrays (%lld and %lld elements) "
                           "are larger than a vulkan launch indexes", (long long)work,
                           (long long)big);
        wt = cx;
    }
    fft_run r = {.d = d, .wt = wt, .inverse = p->inverse != 0};
    uint64_t es = pk_dtype_size(wt);
    void *host = NULL;
    for (int k = 0; k < 2 && st == GFP_OK; k++)
        st = vkp_buffer_alloc(d, (uint64_t)work * es, &r.w[k], &host);
    /* the roots of the longest power of two, then the four-step's tables */
    r.split_at = roots;
    if (st == GFP_OK)
        st = vkp_buffer_alloc(d, (uint64_t)(roots + FFT_BLOCK) * es, &r.roots, &host);
    for (int k = 0; k < 2 && st == GFP_OK && big; k++)
        st = vkp_buffer_alloc(d, (uint64_t)(big > longest_m ? big : longest_m) * es, &r.a[k],
                              &host);
    if (st == GFP_OK && big) st = vkp_buffer_alloc(d, (uint64_t)chirp * es, &r.chirp, &host);
    if (st == GFP_OK && big) st = vkp_buffer_alloc(d, (uint64_t)longest_m * es, &r.bhat, &host);

    /* The dim the scale goes with: the last one transformed of length > 1
     * (C2R: dl, transformed last; packed R2C: dl's unpacking when no other
     * dim is transformed after it). */
    bool apart = p->kind == GFP_FFT_C2R || packed; /* dl is transformed on its own */
    int scaled = -1;
    for (uint32_t i = 0; i < p->n_dims; i++)
        if (full[p->dims[i]] > 1 && (!apart || p->dims[i] != dl)) scaled = (int)i;
    if (p->kind == GFP_FFT_C2R && full[dl] > 1) scaled = INT32_MAX;
    /* x into w[0], in x's shape: complex, or the reals of packed R2C. */
    if (st == GFP_OK) {
        gfp_tensor w0 = pk_dense_in(x, packed ? pk_complex_part(wt) : wt, r.w[0]);
        const gfp_tensor *ins[1] = {x}, *outs[1] = {&w0};
        st = vkp_elementwise_launch(d, GFP_OP_COPY, ins, 1, outs, 1, NULL);
    }
    if (st == GFP_OK && packed) {
        int64_t h = x->sizes[dl] / 2, half[GFP_MAX_RANK];
        memcpy(half, x->sizes, sizeof half);
        half[dl] = h;
        if (h > 1) st = transform_dim(&r, half, rank, dl, 1.0);
        gfp_tensor src = flat(&r, r.w[r.cur], nx / 2), dst = flat(&r, r.w[1 - r.cur], ny);
        if (st == GFP_OK)
            st = line_dispatch(&r, 4, &dst, &src, NULL, (uint64_t)ny, h + 1, h, 1,
                               r.inverse ? 2u : 0u, scaled < 0 ? p->scale : 1.0);
        r.cur = 1 - r.cur;
    }
    for (uint32_t i = 0; i < p->n_dims && st == GFP_OK; i++) {
        int dd = p->dims[i];
        if (x->sizes[dd] == 1 || (apart && dd == dl)) continue;
        st = transform_dim(&r, packed ? y->sizes : x->sizes, rank, dd,
                           (int)i == scaled ? p->scale : 1.0);
    }
    if (st == GFP_OK && p->kind == GFP_FFT_C2R) {
        int64_t n = y->sizes[dl], h = x->sizes[dl], inner = 1;
        for (int k = dl + 1; k < rank; k++) inner *= y->sizes[k];
        gfp_tensor src = flat(&r, r.w[r.cur], nx), dst = flat(&r, r.w[1 - r.cur], ny);
        st = line_dispatch(&r, 1, &dst, &src, NULL, (uint64_t)ny, n, h, inner, 0, 1.0);
        r.cur = 1 - r.cur;
        if (st == GFP_OK && n > 1) st = transform_dim(&r, y->sizes, rank, dl, p->scale);
    }
    if (st == GFP_OK && scaled < 0 && p->scale != 1.0 && !packed) { /* every listed dim has length 1 */
        gfp_tensor src = flat(&r, r.w[r.cur], work), dst = flat(&r, r.w[1 - r.cur], work);
        st = line_dispatch(&r, 0, &dst, &src, NULL, (uint64_t)work, work, work, 1, 0, p->scale);
        r.cur = 1 - r.cur;
    }
    if (st == GFP_OK) {
        /* The result, in the transform's shape (x's; C2R: y's), into y:
         * R2C keeps the first n/2 + 1 bins of dl (a view with y's sizes
         * and x's strides), C2R the real parts (a real view). */
        gfp_tensor res = pk_dense_in(apart ? y : x, wt, r.w[r.cur]);
        if (p->kind == GFP_FFT_R2C && !packed) memcpy(res.sizes, y->sizes, sizeof res.sizes);
        if (p->kind == GFP_FFT_C2R) {
            res.dtype = pk_complex_part(wt);
            for (int k = 0; k < rank; k++) res.strides[k] *= 2;
        }
        const gfp_tensor *ins[1] = {&res}, *outs[1] = {y};
        st = vkp_elementwise_launch(d, GFP_OP_COPY, ins, 1, outs, 1, NULL);
    }
    /* Freed at once: later work is queued behind the dispatches reading them. */
    gfp_buffer all[7] = {r.w[0], r.w[1], r.roots, r.a[0], r.a[1], r.chirp, r.bhat};
    for (int k = 0; k < 7; k++)
        if (all[k]) vkp_buffer_free(d, all[k]);
    return st;
}
