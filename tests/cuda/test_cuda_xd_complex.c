/* SPDX-License-Identifier: BSD-3-Clause */
/* test_cuda_xd_complex.c — c64 and c128 on cuda:0 against the reference
 * plugin: the complex kernels (copies, the unary and binary ops, abs, eq/ne,
 * where, tril, the index ops, sum/mean/prod), cuBLAS's cgemm/zgemm and
 * cuFFT's transforms, each over contiguous, transposed and step-sliced
 * operands, broadcasts and batches.
 *
 * CTest runs it with GRAFT_FALLBACK=off (strict mode): an op the plugin
 * does not run itself fails instead of quietly running on the fallback
 * device, so every comparison here is of the CUDA plugin's own work.
 * Skipped (exit 77) without a CUDA device; GRAFT_TEST_XD_DEVICE runs it on
 * another device (opencl:0 here, which has the same complex set but the
 * index ops, so without strict mode) to try the suite itself. */
#include "cu_xd.h"

/* ------------------------------------------------------------ pairs */
static gf_dtype part_of(gf_dtype c) { return c == GF_C64 ? GF_F32 : GF_F64; }

/* A complex pair of sizes in layout L (contiguous, transposed, step-sliced:
 * views of a larger complex tensor), parts from kind. */
static xd_pair cx_pair(gf_dtype c, int rank, const int64_t *sizes, xd_values kind, xd_layout L) {
    if (L == XL_OFFSET || (L == XL_TRANSPOSED && rank < 2)) L = XL_CONTIG;
    int64_t big[GF_MAX_RANK];
    for (int i = 0; i < rank; i++) big[i] = sizes[i];
    if (L == XL_STEP) big[rank - 1] *= 2;
    if (L == XL_TRANSPOSED) {
        big[rank - 2] = sizes[rank - 1];
        big[rank - 1] = sizes[rank - 2];
    }
    xd_pair re = xd_pair_rand(part_of(c), rank, big, kind, XL_CONTIG);
    xd_pair im = xd_pair_rand(part_of(c), rank, big, kind, XL_CONTIG);
    gf_tensor *zd = gf_complex(re.d, im.d), *zr = gf_complex(re.r, im.r);
    xd_pair_release(re);
    xd_pair_release(im);
    xd_pair p = {NULL, NULL};
    gf_tensor *z[2] = {zd, zr}, **out[2] = {&p.d, &p.r};
    for (int k = 0; k < 2; k++) {
        if (!z[k]) continue;
        if (L == XL_STEP) *out[k] = gf_slice(z[k], rank - 1, 0, big[rank - 1], 2);
        else if (L == XL_TRANSPOSED) *out[k] = gf_transpose(z[k], -2, -1);
        else *out[k] = gf_tensor_retain(z[k]);
        gf_tensor_release(z[k]);
    }
    CHECK_MSG(p.d && p.r, "complex operands: %s", gf_last_error());
    return p;
}

/* got against want, both complex: each element within atol + rtol |want|
 * (its modulus), or, with scaled, within rtol of the largest modulus (a
 * transform's bins, a product's sums). NaN parts must match. */
static void cx_check(const char *what, gf_tensor *got, gf_tensor *want, double rtol, double atol,
                     bool scaled) {
    if (!got || !want) {
        CHECK_MSG(got && want, "%s: the %s result is NULL: %s", what, got ? "reference" : "device",
                  gf_last_error());
        gf_tensor_release(got);
        gf_tensor_release(want);
        return;
    }
    CHECK_MSG(gf_tensor_dtype(got) == gf_tensor_dtype(want), "%s: dtype %s vs %s", what,
              gf_dtype_name(gf_tensor_dtype(got)), gf_dtype_name(gf_tensor_dtype(want)));
    gf_tensor *a = gf_view_as_real(got), *b = gf_view_as_real(want);
    xd_host ha = {0}, hb = {0};
    bool ok = a && b && xd_host_read(a, &ha) && xd_host_read(b, &hb) && ha.n == hb.n;
    CHECK_MSG(ok, "%s: the results could not be read or differ in size", what);
    double top = 0;
    for (int64_t i = 0; ok && i + 1 < hb.n; i += 2)
        top = fmax(top, hypot(xd_host_at(&hb, i), xd_host_at(&hb, i + 1)));
    int bad = 0;
    for (int64_t i = 0; ok && i + 1 < hb.n; i += 2) {
        double gr = xd_host_at(&ha, i), gi = xd_host_at(&ha, i + 1);
        double wr = xd_host_at(&hb, i), wi = xd_host_at(&hb, i + 1);
        bool good;
        if (isnan(wr) || isnan(wi) || isnan(gr) || isnan(gi))
            good = isnan(wr) == isnan(gr) && isnan(wi) == isnan(gi);
        else if (isinf(wr) || isinf(wi))
            good = (isinf(wr) ? gr == wr : true) && (isinf(wi) ? gi == wi : true);
        else
            good = hypot(gr - wr, gi - wi) <= atol + rtol * (scaled ? top : hypot(wr, wi));
        if (!good && bad++ < 5)
            fprintf(stderr, "  %s: element %lld: device %.17g%+.17gi, reference %.17g%+.17gi\n",
                    what, (long long)(i / 2), gr, gi, wr, wi);
    }
    CHECK_MSG(bad == 0, "%s: %d of %lld elements differ", what, bad, (long long)(hb.n / 2));
    free(ha.raw);
    free(hb.raw);
    gf_tensor_release(a);
    gf_tensor_release(b);
    gf_tensor_release(got);
    gf_tensor_release(want);
}

/* Both computed in double and rounded once per part (c64 too): a few ulp
 * of the part dtype apart, the device's math library against the C one. */
static double ew_tol(gf_dtype c) { return c == GF_C64 ? 4e-6 : 1e-12; }

static const gf_dtype cxs[2] = {GF_C64, GF_C128};
static const xd_layout lays[3] = {XL_CONTIG, XL_TRANSPOSED, XL_STEP};

/* ------------------------------------------------------------ elementwise */
typedef gf_tensor *(*un_fn)(const gf_tensor *);
static gf_tensor *pow_half(const gf_tensor *x) { return gf_pow_scalar(x, 0.5); }
static gf_tensor *pow_three(const gf_tensor *x) { return gf_pow_scalar(x, 3.0); }
static gf_tensor *pow_neg(const gf_tensor *x) { return gf_pow_scalar(x, -2.0); }

static void test_unary(void) {
    static const struct {
        const char *name;
        un_fn fn;
    } ops[] = {{"neg", gf_neg},         {"exp", gf_exp},         {"log", gf_log},
               {"log1p", gf_log1p},     {"expm1", gf_expm1},     {"sqrt", gf_sqrt},
               {"rsqrt", gf_rsqrt},     {"reciprocal", gf_reciprocal}, {"square", gf_square},
               {"sin", gf_sin},         {"cos", gf_cos},         {"tanh", gf_tanh},
               {"sigmoid", gf_sigmoid}, {"asin", gf_asin},       {"acos", gf_acos},
               {"atan", gf_atan},       {"pow 0.5", pow_half},   {"pow 3", pow_three},
               {"pow -2", pow_neg}};
    for (int c = 0; c < 2; c++)
        for (int l = 0; l < 3; l++) {
            xd_seed((uint64_t)(c * 3 + l));
            xd_pair z = cx_pair(cxs[c], 2, SZ(37, 29), XV_PLAIN, lays[l]);
            for (size_t i = 0; i < sizeof ops / sizeof ops[0] && z.d; i++) {
                char what[96];
                snprintf(what, sizeof what, "%s %s %s", ops[i].name, xd_dtn(cxs[c]),
                         xd_layout_name[lays[l]]);
                cx_check(what, ops[i].fn(z.d), ops[i].fn(z.r), ew_tol(cxs[c]), 0, false);
            }
            /* |z| into the part dtype */
            char what[64];
            snprintf(what, sizeof what, "abs %s %s", xd_dtn(cxs[c]), xd_layout_name[lays[l]]);
            xd_check_pair_tol(what, gf_abs(z.d), gf_abs(z.r), xd_default_tol(part_of(cxs[c])));
            xd_pair_release(z);
        }
}

typedef gf_tensor *(*bin_fn)(const gf_tensor *, const gf_tensor *);

static void test_binary(void) {
    static const struct {
        const char *name;
        bin_fn fn;
    } ops[] = {{"add", gf_add}, {"sub", gf_sub}, {"mul", gf_mul}, {"div", gf_div},
               {"pow", gf_pow}};
    for (int c = 0; c < 2; c++)
        for (int l = 0; l < 3; l++) {
            xd_seed((uint64_t)(10 + c * 3 + l));
            xd_pair a = cx_pair(cxs[c], 2, SZ(33, 40), XV_SMALL, lays[l]);
            xd_pair b = cx_pair(cxs[c], 2, SZ(33, 40), XV_SMALL, lays[(l + 1) % 3]);
            xd_pair row = cx_pair(cxs[c], 1, SZ(40), XV_SMALL, XL_CONTIG); /* broadcast */
            for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
                char what[96];
                snprintf(what, sizeof what, "%s %s %s", ops[i].name, xd_dtn(cxs[c]),
                         xd_layout_name[lays[l]]);
                cx_check(what, ops[i].fn(a.d, b.d), ops[i].fn(a.r, b.r), ew_tol(cxs[c]), 0, false);
                snprintf(what, sizeof what, "%s %s broadcast row", ops[i].name, xd_dtn(cxs[c]));
                cx_check(what, ops[i].fn(a.d, row.d), ops[i].fn(a.r, row.r), ew_tol(cxs[c]), 0,
                         false);
            }
            /* eq / ne: a against itself and against b */
            xd_check_pair("eq self", gf_eq(a.d, a.d), gf_eq(a.r, a.r));
            xd_check_pair("ne", gf_ne(a.d, b.d), gf_ne(a.r, b.r));
            xd_pair_release(a);
            xd_pair_release(b);
            xd_pair_release(row);
        }
}

/* Copies into complex (from the other complex dtype, from reals), where,
 * tril and the index ops move the elements exactly. */
static void test_moves(void) {
    for (int c = 0; c < 2; c++) {
        gf_dtype cd = cxs[c], other = cxs[1 - c];
        xd_seed((uint64_t)(20 + c));
        xd_pair z = cx_pair(cd, 2, SZ(9, 14), XV_PLAIN, XL_TRANSPOSED);
        cx_check("to the other complex dtype", gf_to_dtype(z.d, other), gf_to_dtype(z.r, other),
                 other == GF_C64 ? 1e-7 : 0, 0, false);
        xd_pair r = xd_pair_rand(part_of(cd), 2, SZ(9, 14), XV_PLAIN, XL_STEP);
        cx_check("from the part dtype", gf_to_dtype(r.d, cd), gf_to_dtype(r.r, cd), 0, 0, false);
        xd_pair i = xd_pair_rand(GF_I64, 2, SZ(9, 14), XV_GENERAL, XL_CONTIG);
        cx_check("from i64", gf_to_dtype(i.d, cd), gf_to_dtype(i.r, cd), 0, 0, false);
        xd_pair m = xd_pair_rand(GF_BOOL, 2, SZ(9, 14), XV_GENERAL, XL_CONTIG);
        xd_pair w = cx_pair(cd, 2, SZ(9, 14), XV_PLAIN, XL_CONTIG);
        cx_check("where", gf_where(m.d, z.d, w.d), gf_where(m.r, z.r, w.r), 0, 0, false);
        cx_check("tril", gf_tril(z.d, -1), gf_tril(z.r, -1), 0, 0, false);
        cx_check("triu", gf_triu(z.d, 2), gf_triu(z.r, 2), 0, 0, false);
        double iv[6] = {3, 0, 8, 8, 1, 5};
        xd_pair idx = xd_pair_make(GF_I64, 1, SZ(6), iv, XL_CONTIG);
        cx_check("index_select", gf_index_select(z.d, 0, idx.d), gf_index_select(z.r, 0, idx.r), 0,
                 0, false);
        double gv[18];
        for (int k = 0; k < 18; k++) gv[k] = (double)((k * 5) % 9);
        xd_pair gi = xd_pair_make(GF_I64, 2, SZ(2, 9), gv, XL_CONTIG);
        xd_pair zt = cx_pair(cd, 2, SZ(9, 9), XV_PLAIN, XL_CONTIG);
        cx_check("gather", gf_gather(zt.d, 0, gi.d), gf_gather(zt.r, 0, gi.r), 0, 0, false);
        xd_pair src = cx_pair(cd, 2, SZ(2, 9), XV_PLAIN, XL_CONTIG);
        /* repeated indices: the adds meet in one element */
        cx_check("scatter_add", gf_scatter_add(zt.d, 0, gi.d, src.d),
                 gf_scatter_add(zt.r, 0, gi.r, src.r), ew_tol(cd), 0, false);
        xd_pair rows = cx_pair(cd, 2, SZ(6, 14), XV_PLAIN, XL_CONTIG);
        cx_check("index_add", gf_index_add(z.d, 0, idx.d, rows.d),
                 gf_index_add(z.r, 0, idx.r, rows.r), ew_tol(cd), 0, false);
        xd_pair_release(z);
        xd_pair_release(r);
        xd_pair_release(i);
        xd_pair_release(m);
        xd_pair_release(w);
        xd_pair_release(idx);
        xd_pair_release(gi);
        xd_pair_release(zt);
        xd_pair_release(src);
        xd_pair_release(rows);
    }
}

/* ------------------------------------------------------------ reductions, matmul */
typedef gf_tensor *(*red_fn)(const gf_tensor *, const int *, int, bool);

static void test_reductions(void) {
    static const struct {
        const char *name;
        red_fn fn;
    } ops[] = {{"sum", gf_sum}, {"mean", gf_mean}, {"prod", gf_prod}};
    /* lines of one thread, a warp and a block */
    const int64_t lens[] = {5, 700, 5000};
    for (int c = 0; c < 2; c++)
        for (size_t li = 0; li < 3; li++)
            for (int mask = 1; mask < 4; mask++) {
                int dims[2], nd = 0;
                for (int d = 0; d < 2; d++)
                    if (mask >> d & 1) dims[nd++] = d;
                xd_seed((uint64_t)(30 + c * 100 + li * 10 + (size_t)mask));
                xd_layout L = lays[(li + (size_t)mask) % 3];
                xd_pair z = cx_pair(cxs[c], 2, SZ(6, lens[li]), XV_SMALL, L);
                for (size_t i = 0; i < 3; i++) {
                    char what[128];
                    snprintf(what, sizeof what, "%s %s [6, %lld] dims 0x%x %s", ops[i].name,
                             xd_dtn(cxs[c]), (long long)lens[li], mask, xd_layout_name[L]);
                    /* products of thousands of factors: compare in scale */
                    bool prod = ops[i].fn == gf_prod;
                    gf_tensor *zd = z.d, *zr = z.r, *sd = NULL, *sr = NULL;
                    if (prod) { /* factors near 1, so the products stay finite */
                        gf_tensor *k = gf_scalar(0.002, part_of(cxs[c]), xd_dev);
                        gf_tensor *kr = gf_scalar(0.002, part_of(cxs[c]), xd_ref);
                        gf_tensor *one = gf_scalar(1.0, part_of(cxs[c]), xd_dev);
                        gf_tensor *oner = gf_scalar(1.0, part_of(cxs[c]), xd_ref);
                        gf_tensor *t = gf_mul(z.d, k), *tr = gf_mul(z.r, kr);
                        zd = sd = gf_add(t, one);
                        zr = sr = gf_add(tr, oner);
                        gf_tensor_release(t);
                        gf_tensor_release(tr);
                        gf_tensor_release(k);
                        gf_tensor_release(kr);
                        gf_tensor_release(one);
                        gf_tensor_release(oner);
                    }
                    double tol = cxs[c] == GF_C64 ? 2e-5 : 1e-12;
                    cx_check(what, ops[i].fn(zd, dims, nd, false), ops[i].fn(zr, dims, nd, false),
                             tol, 0, true);
                    gf_tensor_release(sd);
                    gf_tensor_release(sr);
                }
                xd_pair_release(z);
            }
}

static void test_matmul(void) {
    for (int c = 0; c < 2; c++) {
        /* c64 accumulates in f32 (cgemm), the reference in double */
        double tol = cxs[c] == GF_C64 ? 3e-6 : 1e-12;
        for (int l = 0; l < 3; l++) {
            xd_seed((uint64_t)(40 + c * 3 + l));
            xd_pair a = cx_pair(cxs[c], 2, SZ(37, 53), XV_SMALL, lays[l]);
            xd_pair b = cx_pair(cxs[c], 2, SZ(53, 29), XV_SMALL, lays[(l + 2) % 3]);
            char what[96];
            snprintf(what, sizeof what, "matmul %s a %s", xd_dtn(cxs[c]), xd_layout_name[lays[l]]);
            cx_check(what, gf_matmul(a.d, b.d), gf_matmul(a.r, b.r), tol * 53, 0, true);
            xd_pair_release(a);
            xd_pair_release(b);
        }
        /* a batch against one broadcast matrix; vector operands */
        xd_pair a3 = cx_pair(cxs[c], 3, SZ(4, 17, 33), XV_SMALL, XL_CONTIG);
        xd_pair b2 = cx_pair(cxs[c], 2, SZ(33, 9), XV_SMALL, XL_TRANSPOSED);
        xd_pair v = cx_pair(cxs[c], 1, SZ(33), XV_SMALL, XL_CONTIG);
        cx_check("matmul batch @ broadcast", gf_matmul(a3.d, b2.d), gf_matmul(a3.r, b2.r),
                 tol * 33, 0, true);
        cx_check("matmul batch @ vector", gf_matmul(a3.d, v.d), gf_matmul(a3.r, v.r), tol * 33, 0,
                 true);
        xd_pair_release(a3);
        xd_pair_release(b2);
        xd_pair_release(v);
    }
}

/* ------------------------------------------------------------ FFT */
static double fft_tol(gf_dtype c, int64_t n) {
    double lg = log2((double)(n > 2 ? n : 2));
    return c == GF_C64 ? 3e-7 * lg + 1e-6 : 1e-14 * lg + 1e-14;
}

static void test_fft(void) {
    /* powers of two, smooth, odd, prime (cuFFT's Bluestein), a length of
     * one; batches of lines, strided and transposed */
    const int64_t lens[] = {1, 2, 7, 8, 12, 64, 1000, 1031, 4096};
    const gf_fft_norm norms[3] = {GF_FFT_NORM_BACKWARD, GF_FFT_NORM_ORTHO, GF_FFT_NORM_FORWARD};
    for (int c = 0; c < 2; c++)
        for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
            int64_t n = lens[li];
            xd_layout L = lays[li % 3];
            gf_fft_norm norm = norms[li % 3];
            xd_seed((uint64_t)(50 + c * 100 + li));
            xd_pair z = cx_pair(cxs[c], 2, SZ(5, n), XV_SMALL, L);
            char what[128];
            double tol = fft_tol(cxs[c], n);
            snprintf(what, sizeof what, "fft %s [5, %lld] %s", xd_dtn(cxs[c]), (long long)n,
                     xd_layout_name[L]);
            cx_check(what, gf_fft(z.d, GF_FFT_SIZE_DEFAULT, 1, norm),
                     gf_fft(z.r, GF_FFT_SIZE_DEFAULT, 1, norm), tol, 0, true);
            snprintf(what, sizeof what, "ifft %s [5, %lld] %s", xd_dtn(cxs[c]), (long long)n,
                     xd_layout_name[L]);
            cx_check(what, gf_ifft(z.d, GF_FFT_SIZE_DEFAULT, 1, norm),
                     gf_ifft(z.r, GF_FFT_SIZE_DEFAULT, 1, norm), tol, 0, true);
            /* along the first dim (strided lines), and both dims */
            snprintf(what, sizeof what, "fft dim 0 %s [5, %lld]", xd_dtn(cxs[c]), (long long)n);
            cx_check(what, gf_fft(z.d, GF_FFT_SIZE_DEFAULT, 0, norm),
                     gf_fft(z.r, GF_FFT_SIZE_DEFAULT, 0, norm), tol, 0, true);
            snprintf(what, sizeof what, "fftn %s [5, %lld]", xd_dtn(cxs[c]), (long long)n);
            cx_check(what, gf_fftn(z.d, NULL, 0, NULL, 0, norm), gf_fftn(z.r, NULL, 0, NULL, 0, norm),
                     tol * 2, 0, true);
            /* rfft of the real parts, irfft back to n */
            xd_pair x = xd_pair_rand(part_of(cxs[c]), 2, SZ(5, n), XV_SMALL, L);
            snprintf(what, sizeof what, "rfft %s [5, %lld] %s", xd_dtn(part_of(cxs[c])),
                     (long long)n, xd_layout_name[L]);
            gf_tensor *fd = gf_rfft(x.d, GF_FFT_SIZE_DEFAULT, 1, norm);
            gf_tensor *fr = gf_rfft(x.r, GF_FFT_SIZE_DEFAULT, 1, norm);
            cx_check(what, gf_tensor_retain(fd), gf_tensor_retain(fr), tol, 0, true);
            snprintf(what, sizeof what, "irfft %s to %lld", xd_dtn(cxs[c]), (long long)n);
            gf_tensor *bd = fd ? gf_irfft(fd, n, 1, norm) : NULL;
            gf_tensor *br = fr ? gf_irfft(fr, n, 1, norm) : NULL;
            xd_err e = xd_err_of(bd, br);
            CHECK_MSG(e.ok && e.err <= tol * (e.top > 0 ? e.top : 1), "%s: error %.3g of %.3g",
                      what, e.err, e.top);
            /* and back to x itself */
            e = xd_err_of(bd, x.r);
            CHECK_MSG(e.ok && e.err <= 4 * tol * (e.top > 0 ? e.top : 1),
                      "%s: irfft(rfft(x)) is %.3g from x", what, e.err);
            gf_tensor_release(fd);
            gf_tensor_release(fr);
            gf_tensor_release(bd);
            gf_tensor_release(br);
            /* rfftn over both dims (onesided last), irfftn back */
            snprintf(what, sizeof what, "rfftn %s [5, %lld]", xd_dtn(part_of(cxs[c])),
                     (long long)n);
            cx_check(what, gf_rfftn(x.d, NULL, 0, NULL, 0, norm),
                     gf_rfftn(x.r, NULL, 0, NULL, 0, norm), tol * 2, 0, true);
            xd_pair_release(x);
            xd_pair_release(z);
        }
    /* A rank-3 batch: the middle dim (inner and outer lines), and the first
     * with more than 16 outer blocks (the transposing form). */
    for (int c = 0; c < 2; c++) {
        xd_seed((uint64_t)(90 + c));
        xd_pair z = cx_pair(cxs[c], 3, SZ(20, 24, 6), XV_SMALL, XL_STEP);
        cx_check("fft rank 3 dim 1", gf_fft(z.d, GF_FFT_SIZE_DEFAULT, 1, GF_FFT_NORM_BACKWARD),
                 gf_fft(z.r, GF_FFT_SIZE_DEFAULT, 1, GF_FFT_NORM_BACKWARD), fft_tol(cxs[c], 24), 0,
                 true);
        int d01[2] = {2, 0};
        cx_check("fftn rank 3 dims (2, 0)", gf_fftn(z.d, NULL, 0, d01, 2, GF_FFT_NORM_ORTHO),
                 gf_fftn(z.r, NULL, 0, d01, 2, GF_FFT_NORM_ORTHO), 2 * fft_tol(cxs[c], 20), 0,
                 true);
        xd_pair_release(z);
    }
}

int main(void) {
    int rc = xd_init();
    if (rc) return rc;
    if (!xd_stores(GF_C64) || !xd_stores(GF_C128)) {
        fprintf(stderr, "SKIPPED: %s does not store c64 and c128\n", gf_device_spec(xd_dev));
        return XD_SKIP;
    }
    RUN(test_unary);
    RUN(test_binary);
    RUN(test_moves);
    RUN(test_reductions);
    RUN(test_matmul);
    RUN(test_fft);
    return xd_finish();
}
