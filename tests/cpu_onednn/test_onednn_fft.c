/* SPDX-License-Identifier: BSD-3-Clause */
/* test_onednn_fft.c — cpu_onednn's FFT (omp_fft.c) against the reference
 * plugin's (in double, the oracle), through the ABI: C2C forward and
 * inverse, R2C and C2R, in c64 and c128, over the lengths 1..64, primes
 * and other lengths with a prime factor above 13 (Bluestein's algorithm in
 * both, the plugin's in its lanes up to 65521), 2^k up to 2^16
 * (and 2^20 in c64), 3 2^k, 5^k, 7 11 13 and other odd lengths, batches
 * that fill the lanes partly and several times, every layout of
 * tests/abi_pair.h for x and y (transposed, step-2, offset, permuted,
 * broadcast), several dims in any order, and the scales 1, 1/n, 1/sqrt(n).
 *
 * Tolerance, relative to the signal's norm: ||y - y_ref||_2 / ||y_ref||_2
 * <= 2 eps log2(N + 1), eps = 2^-24 (c64) or 2^-53 (c128), N the number of
 * points of the transform; the worst ratio err / (eps log2(N + 1)) is
 * printed. Elements of y's buffer outside y must be left as they were. */
#include "graft_ops.h"
#include "abi_pair.h"

static double worst[2]; /* err / (eps log2(N + 1)) per precision: c64, c128 */
static int cases;

typedef struct fcase {
    uint32_t kind, inverse;
    bool f32;
    int rank;
    int64_t sizes[GFP_MAX_RANK]; /* the signal's shape (the real side's for R2C/C2R) */
    int n_dims;
    int32_t dims[GFP_MAX_RANK];
    ap_layout lx, ly;
    int norm; /* 0: 1, 1: 1/n, 2: 1/sqrt(n) */
} fcase;

static const char *const kind_names[3] = {"C2C", "R2C", "C2R"};

static void run_case(const fcase *c) {
    int dl = c->dims[c->n_dims - 1];
    int64_t xs[GFP_MAX_RANK], ys[GFP_MAX_RANK], npts = 1;
    for (int d = 0; d < c->rank; d++) xs[d] = ys[d] = c->sizes[d];
    for (int i = 0; i < c->n_dims; i++) npts *= c->sizes[c->dims[i]];
    if (c->kind == GFP_FFT_R2C) ys[dl] = c->sizes[dl] / 2 + 1;
    if (c->kind == GFP_FFT_C2R) xs[dl] = c->sizes[dl] / 2 + 1;
    int32_t cx = c->f32 ? GFP_C64 : GFP_C128, re = c->f32 ? GFP_F32 : GFP_F64;
    int32_t xdt = c->kind == GFP_FFT_R2C ? re : cx, ydt = c->kind == GFP_FFT_C2R ? re : cx;
    ap_tensor x = ap_make(xdt, c->rank, xs, c->lx, AD_ANY);
    ap_tensor y = ap_make(ydt, c->rank, ys, c->ly, AD_ANY);
    gfp_fft_params prm;
    memset(&prm, 0, sizeof prm);
    prm.struct_size = sizeof prm;
    prm.kind = c->kind;
    prm.inverse = c->inverse;
    prm.n_dims = (uint32_t)c->n_dims;
    for (int i = 0; i < c->n_dims; i++) prm.dims[i] = c->dims[i];
    prm.scale = c->norm == 0 ? 1.0 : c->norm == 1 ? 1.0 / (double)npts : 1.0 / sqrt((double)npts);

    char what[200];
    int k = snprintf(what, sizeof what, "%s%s %s [", kind_names[c->kind],
                     c->inverse ? " inverse" : "", c->f32 ? "c64" : "c128");
    for (int d = 0; d < c->rank && k < 150; d++)
        k += snprintf(what + k, sizeof what - (size_t)k, "%s%lld", d ? ", " : "",
                      (long long)c->sizes[d]);
    k += snprintf(what + k, sizeof what - (size_t)k, "] dims");
    for (int i = 0; i < c->n_dims && k < 180; i++)
        k += snprintf(what + k, sizeof what - (size_t)k, " %d", (int)c->dims[i]);
    snprintf(what + k, sizeof what - (size_t)k, " x %s y %s", ap_layout_names[x.layout],
             ap_layout_names[y.layout]);

    gfp_status sf = ap_launch_side(AP_TEST, GFP_OP_FFT, AP_TS(&x), 1, AP_TS(&y), 1, &prm);
    gfp_status sr = ap_launch_side(AP_REF, GFP_OP_FFT, AP_TS(&x), 1, AP_TS(&y), 1, &prm);
    CHECK_MSG(sf == GFP_OK && sr == GFP_OK, "%s: %s status %d (%s), reference %d (%s)", what,
              ap_name(), (int)sf, ap_side[AP_TEST].error, (int)sr, ap_side[AP_REF].error);
    if (sf == GFP_OK && sr == GFP_OK) {
        /* untouched elements (and NaN agreement) by the harness; values here */
        CHECK_MSG(ap_compare(&y, 1e300, 0, what) == 0, "%s: elements outside y changed", what);
        size_t es = abi_esize(ydt), bytes = (size_t)y.storage * es;
        unsigned char *got = malloc(bytes), *want = malloc(bytes);
        ap_read(&y, AP_TEST, got, bytes);
        ap_read(&y, AP_REF, want, bytes);
        const gfp_tensor *t = &y.t[AP_TEST];
        int32_t pd = ap_part_dtype(ydt);
        size_t pes = abi_esize(pd);
        int64_t idx[GFP_MAX_RANK] = {0}, n = 1;
        for (int d = 0; d < t->rank; d++) n *= t->sizes[d];
        double e2 = 0, r2 = 0;
        for (int64_t i = 0; i < n; i++) {
            int64_t off = (int64_t)(t->offset / es);
            for (int d = 0; d < t->rank; d++) off += idx[d] * t->strides[d];
            for (int q = 0; q < ap_parts(ydt); q++) {
                double g = ap_decode(pd, got + off * es + q * pes);
                double w = ap_decode(pd, want + off * es + q * pes);
                e2 += (g - w) * (g - w);
                r2 += w * w;
            }
            for (int d = t->rank - 1; d >= 0; d--) {
                if (++idx[d] < t->sizes[d]) break;
                idx[d] = 0;
            }
        }
        free(got), free(want);
        double eps = c->f32 ? 0x1p-24 : 0x1p-53, lg = log2((double)npts + 1);
        double rel = r2 > 0 ? sqrt(e2 / r2) : sqrt(e2);
        double ratio = rel / (eps * lg);
        if (ratio > worst[c->f32 ? 0 : 1]) worst[c->f32 ? 0 : 1] = ratio;
        CHECK_MSG(ratio <= 2.0, "%s: relative error %.3g is %.2f eps log2(N + 1) (bar 2)", what,
                  rel, ratio);
    }
    cases++;
    ap_free(&x);
    ap_free(&y);
}

/* Every kind and precision on [batch, n] along the last dim. */
static void lengths_1d(int64_t n, int64_t batch) {
    for (int f = 0; f < 2; f++)
        for (int kk = 0; kk < 4; kk++) {
            fcase c = {0};
            c.kind = kk < 2 ? GFP_FFT_C2C : (uint32_t)(kk - 1);
            c.inverse = kk == 1 || kk == 3;
            c.f32 = f == 0;
            c.rank = 2;
            c.sizes[0] = batch, c.sizes[1] = n;
            c.n_dims = 1;
            c.dims[0] = 1;
            c.lx = c.ly = AL_CONTIG;
            c.norm = (int)(n % 3);
            run_case(&c);
        }
}

static void test_lengths(void) {
    for (int64_t n = 1; n <= 64; n++) lengths_1d(n, 3);
    static const int64_t primes[] = {67, 97, 101, 127, 251, 257, 509, 1021};
    for (int i = 0; i < 8; i++) lengths_1d(primes[i], 2);
    /* Bluestein in the lanes: long primes (up to the lane path's limit),
     * a real length whose half is prime, a prime times smooth factors, and
     * a batch over whole and partial lane sets */
    static const int64_t blue[] = {1031, 4099, 8191, 65521, 2 * 1031, 6 * 1031, 17 * 64};
    for (int i = 0; i < 7; i++) lengths_1d(blue[i], blue[i] < 10000 ? 2 : 1);
    lengths_1d(1031, 37);
    for (int k = 7; k <= 16; k++) lengths_1d((int64_t)1 << k, k <= 12 ? 3 : 1);
    for (int k = 5; k <= 14; k++) lengths_1d((int64_t)3 << k, k <= 10 ? 2 : 1);
    static const int64_t odd[] = {75, 81, 99, 105, 125, 225, 243, 343, 625, 1001, 2197, 3125,
                                  15625, 59049};
    for (int i = 0; i < 14; i++) lengths_1d(odd[i], odd[i] < 10000 ? 2 : 1);
    /* whole lane sets and a partial one, parallel chunks */
    lengths_1d(512, 37);
    lengths_1d(1024, 20);
    lengths_1d(96, 100);
    /* the four-step path at the size of the benchmark */
    fcase c = {.kind = GFP_FFT_C2C, .f32 = true, .rank = 1, .sizes = {1 << 20}, .n_dims = 1,
               .dims = {0}, .lx = AL_CONTIG, .ly = AL_CONTIG};
    run_case(&c);
    c.kind = GFP_FFT_R2C;
    run_case(&c);
}

static void test_layouts(void) {
    static const int64_t shapes[][3] = {{5, 12, 8}, {6, 16, 17}, {3, 40, 64}, {33, 4, 10}};
    static const int32_t dimsets[][4] = {{1, 2}, {1, 0}, {1, 1}, {2, 2, 0}, {3, 0, 1, 2},
                                         {3, 2, 0, 1}, {1, 1}};
    static const ap_layout lys[] = {AL_CONTIG, AL_STEP, AL_PERMUTED, AL_OFFSET, AL_TRANSPOSED};
    int sel = 0;
    for (int s = 0; s < 4; s++)
        for (int ds = 0; ds < 7; ds++)
            for (uint32_t kind = 0; kind < 3; kind++)
                for (int lx = 0; lx < AL_COUNT; lx++) {
                    fcase c = {0};
                    c.kind = kind;
                    c.inverse = (uint32_t)((lx + ds) % 2);
                    c.f32 = (s + lx + (int)kind) % 2 == 0;
                    c.rank = 3;
                    for (int d = 0; d < 3; d++) c.sizes[d] = shapes[s][d];
                    c.n_dims = dimsets[ds][0];
                    for (int i = 0; i < c.n_dims; i++) c.dims[i] = dimsets[ds][1 + i];
                    if (ds == 6) c.dims[0] = 0; /* along the outer dim: adjacent lanes */
                    c.lx = (ap_layout)lx;
                    c.ly = lys[sel++ % 5];
                    c.norm = sel % 3;
                    run_case(&c);
                }
    /* rank 1 and rank 4 */
    fcase c = {.kind = GFP_FFT_C2C, .f32 = true, .rank = 1, .sizes = {48}, .n_dims = 1,
               .dims = {0}, .lx = AL_STEP, .ly = AL_OFFSET};
    run_case(&c);
    fcase d = {.kind = GFP_FFT_R2C, .f32 = false, .rank = 4, .sizes = {2, 6, 5, 18},
               .n_dims = 3, .dims = {0, 3, 1}, .lx = AL_PERMUTED, .ly = AL_STEP, .norm = 2};
    run_case(&d);
    d.kind = GFP_FFT_C2R;
    d.f32 = true;
    run_case(&d);
}

/* A plan made by one launch is found by the next (and by several threads). */
static void test_repeat(void) {
    for (int r = 0; r < 3; r++) lengths_1d(4096, 17);
}

int main(void) {
    if (!ap_init()) return 1;
    RUN(test_lengths);
    RUN(test_layouts);
    RUN(test_repeat);
    printf("%d cases; worst error / (eps log2(N + 1)): c64 %.3f, c128 %.3f\n", cases, worst[0],
           worst[1]);
    return CHECK_REPORT();
}
