/* SPDX-License-Identifier: BSD-3-Clause */
/* test_cuda_xd_reduce_linalg.c — reductions, matmul, softmax and layer_norm
 * on cuda:0 against the reference plugin.
 *
 * Reductions run over every subset of dims of rank-3 tensors in every layout,
 * over short lines (one thread each), medium ones (a warp) and long ones (a
 * block), with NaN and infinities among the values. Matmul covers odd sizes,
 * transposed operands (cuBLAS's transposed modes), step-sliced ones (copied
 * to contiguous first), batches that merge into one stride, broadcast batch
 * dims that do not (cuBLAS's pointer-array path), 1-D operands, K = 0, the
 * integer kernel and f16/bf16. Skipped (exit 77) without a CUDA device. */
#include "cu_xd.h"

/* ------------------------------------------------------------ reductions */
typedef gf_tensor *(*reduce_fn)(const gf_tensor *, const int *, int, bool);
static gf_tensor *var1(const gf_tensor *x, const int *d, int n, bool k) {
    return gf_var(x, d, n, 1.0, k);
}
static gf_tensor *var0(const gf_tensor *x, const int *d, int n, bool k) {
    return gf_var(x, d, n, 0.0, k);
}
static gf_tensor *std1(const gf_tensor *x, const int *d, int n, bool k) {
    return gf_std(x, d, n, 1.0, k);
}

typedef struct reduce_case {
    const char *name;
    reduce_fn fn;
    bool ints, bools; /* also on i32/i64, on bool */
    bool specials;    /* NaN and infinities among the inputs */
} reduce_case;

static const reduce_case reduce_cases[] = {
    {"sum", gf_sum, true, false, true},       {"mean", gf_mean, false, false, true},
    {"prod", gf_prod, true, false, false},    {"amax", gf_amax, true, true, true},
    {"amin", gf_amin, true, true, true},      {"var", var1, false, false, false},
    {"var (correction 0)", var0, false, false, false}, {"std", std1, false, false, false},
    {"logsumexp", gf_logsumexp, false, false, true},
};

static void test_reductions(void) {
    const gf_dtype dts[] = {GF_F32, GF_F64, GF_I32, GF_I64, GF_BOOL};
    const int64_t sizes[3] = {3, 37, 5};
    for (size_t c = 0; c < sizeof reduce_cases / sizeof reduce_cases[0]; c++) {
        const reduce_case *rc = &reduce_cases[c];
        for (int di = 0; di < 5; di++) {
            gf_dtype dt = dts[di];
            if ((dt == GF_I32 || dt == GF_I64) && !rc->ints) continue;
            if (dt == GF_BOOL && !rc->bools) continue;
            for (int mask = 0; mask < 8; mask++) {
                int dims[3], nd = 0;
                for (int d = 0; d < 3; d++)
                    if (mask >> d & 1) dims[nd++] = d;
                xd_layout L = (xd_layout)((mask + di) % XL_COUNT);
                xd_seed(c * 100 + (uint64_t)di * 10 + (uint64_t)mask);
                xd_pair x = xd_pair_rand(dt, 3, sizes, rc->specials ? XV_GENERAL
                                         : rc->fn == gf_prod ? XV_SMALL : XV_PLAIN, L);
                for (int keep = 0; keep < 2; keep++) {
                    char what[160];
                    snprintf(what, sizeof what, "%s %s dims 0x%x keepdim %d %s", rc->name,
                             gf_dtype_name(dt), mask, keep, xd_layout_name[L]);
                    /* mask 0 with ndims 0 reduces every dim (the API's rule) */
                    xd_check_pair_tol(what, rc->fn(x.d, dims, nd, keep), rc->fn(x.r, dims, nd, keep),
                                      xd_sum_tol(dt, 37 * 5));
                }
                xd_pair_release(x);
            }
        }
    }
    /* Line lengths for each group size: 1 thread, a warp, a block. */
    const int64_t lens[] = {5, 16, 17, 700, 2048, 2049, 100003};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        const gf_dtype fl[] = {GF_F32, GF_F64};
        for (int f = 0; f < 2; f++) {
            xd_seed(i * 3 + (uint64_t)f);
            xd_pair x = xd_pair_rand(fl[f], 2, SZ(3, lens[i]), XV_PLAIN, XL_STEP);
            int d1 = 1;
            char what[96];
            snprintf(what, sizeof what, "sum of lines of %lld %s", (long long)lens[i],
                     gf_dtype_name(fl[f]));
            xd_check_pair_tol(what, gf_sum(x.d, &d1, 1, false), gf_sum(x.r, &d1, 1, false),
                              xd_sum_tol(fl[f], lens[i]));
            snprintf(what, sizeof what, "var of lines of %lld %s", (long long)lens[i],
                     gf_dtype_name(fl[f]));
            xd_check_pair_tol(what, var1(x.d, &d1, 1, false), var1(x.r, &d1, 1, false),
                              xd_sum_tol(fl[f], 1));
            snprintf(what, sizeof what, "logsumexp of lines of %lld %s", (long long)lens[i],
                     gf_dtype_name(fl[f]));
            xd_check_pair_tol(what, gf_logsumexp(x.d, &d1, 1, false),
                              gf_logsumexp(x.r, &d1, 1, false), xd_sum_tol(fl[f], 1));
            gf_tensor *vd = NULL, *id = NULL, *vr = NULL, *ir = NULL;
            CHECK(gf_max_dim(x.d, 1, false, &vd, &id) == GF_OK);
            CHECK(gf_max_dim(x.r, 1, false, &vr, &ir) == GF_OK);
            xd_check_pair("max_dim values of long lines", vd, vr);
            xd_check_pair("max_dim indices of long lines", id, ir);
            xd_pair_release(x);
        }
    }
    /* Values far from zero: the corrected two-pass variance keeps them. */
    double v[64];
    for (int i = 0; i < 64; i++) v[i] = 1e8 + (i % 7) * 0.25;
    xd_pair x = xd_pair_make(GF_F64, 1, SZ(64), v, XL_CONTIG);
    xd_check_pair("var of values near 1e8", var1(x.d, NULL, 0, false), var1(x.r, NULL, 0, false));
    xd_pair_release(x);
    /* Empty reductions: sum 0, prod 1, mean NaN. */
    xd_pair e = xd_pair_rand(GF_F32, 2, SZ(0, 3), XV_GENERAL, XL_CONTIG);
    int d0 = 0;
    xd_check_pair("sum over an empty dim", gf_sum(e.d, &d0, 1, false), gf_sum(e.r, &d0, 1, false));
    xd_check_pair("prod over an empty dim", gf_prod(e.d, &d0, 1, false),
                  gf_prod(e.r, &d0, 1, false));
    xd_check_pair("mean over an empty dim", gf_mean(e.d, &d0, 1, false),
                  gf_mean(e.r, &d0, 1, false));
    xd_pair_release(e);
}

static void test_max_min_dim(void) {
    const gf_dtype dts[] = {GF_F32, GF_F64, GF_I32, GF_I64};
    for (int di = 0; di < 4; di++)
        for (int dim = 0; dim < 3; dim++) {
            /* Ties and NaNs: the first index of the extreme wins, NaN wins. */
            xd_seed((uint64_t)di * 10 + (uint64_t)dim);
            double *v = xd_vals(dts[di], 4 * 6 * 5, XV_GENERAL);
            for (int i = 0; i < 120; i += 9) v[i] = v[(i + 3) % 120];
            xd_pair x = xd_pair_make(dts[di], 3, SZ(4, 6, 5), v, (xd_layout)(dim + 1));
            free(v);
            for (int mx = 0; mx < 2; mx++) {
                gf_tensor *vd = NULL, *id = NULL, *vr = NULL, *ir = NULL;
                gf_status sd = mx ? gf_max_dim(x.d, dim, dim == 1, &vd, &id)
                                  : gf_min_dim(x.d, dim, dim == 1, &vd, &id);
                gf_status sr = mx ? gf_max_dim(x.r, dim, dim == 1, &vr, &ir)
                                  : gf_min_dim(x.r, dim, dim == 1, &vr, &ir);
                CHECK(sd == GF_OK && sr == GF_OK);
                char what[96];
                snprintf(what, sizeof what, "%s_dim %s dim %d", mx ? "max" : "min",
                         gf_dtype_name(dts[di]), dim);
                xd_check_pair(what, vd, vr);
                xd_check_pair(what, id, ir);
            }
            xd_check_pair("argmax", gf_argmax(x.d, dim, false), gf_argmax(x.r, dim, false));
            xd_check_pair("argmin (flattened)", gf_argmin(x.d, GF_DIM_ALL, false),
                          gf_argmin(x.r, GF_DIM_ALL, false));
            xd_pair_release(x);
        }
}

/* ------------------------------------------------------------ matmul */
static void mm_case(const char *name, gf_dtype dt, int ra, const int64_t *sa, xd_layout la, int rb,
                    const int64_t *sb, xd_layout lb, int64_t k) {
    xd_pair a = xd_pair_rand(dt, ra, sa, XV_SMALL, la);
    xd_pair b = xd_pair_rand(dt, rb, sb, XV_SMALL, lb);
    char what[160];
    snprintf(what, sizeof what, "matmul %s %s (%s x %s)", name, gf_dtype_name(dt),
             xd_layout_name[la], xd_layout_name[lb]);
    xd_check_pair_tol(what, gf_matmul(a.d, b.d), gf_matmul(a.r, b.r), xd_sum_tol(dt, k));
    xd_pair_release(a);
    xd_pair_release(b);
}

static void test_matmul(void) {
    const gf_dtype dts[] = {GF_F32, GF_F64, GF_I32, GF_I64};
    for (int di = 0; di < 4; di++) {
        gf_dtype dt = dts[di];
        xd_seed(50 + (uint64_t)di);
        for (int la = 0; la < XL_COUNT; la++)
            for (int lb = 0; lb < XL_COUNT; lb++)
                mm_case("7x13 @ 13x5", dt, 2, SZ(7, 13), (xd_layout)la, 2, SZ(13, 5),
                        (xd_layout)lb, 13);
        mm_case("batched 4x[6x9 @ 9x3]", dt, 3, SZ(4, 6, 9), XL_CONTIG, 3, SZ(4, 9, 3),
                XL_TRANSPOSED, 9);
        mm_case("broadcast batch [2,1] x [1,3]", dt, 4, SZ(2, 1, 5, 4), XL_TRANSPOSED, 4,
                SZ(1, 3, 4, 6), XL_CONTIG, 4);
        mm_case("one matrix against a batch", dt, 2, SZ(5, 8), XL_CONTIG, 3, SZ(3, 8, 2), XL_STEP, 8);
        mm_case("vector @ matrix", dt, 1, SZ(11), XL_CONTIG, 2, SZ(11, 4), XL_TRANSPOSED, 11);
        mm_case("matrix @ vector", dt, 2, SZ(4, 11), XL_STEP, 1, SZ(11), XL_OFFSET, 11);
        mm_case("K = 0", dt, 2, SZ(3, 0), XL_CONTIG, 2, SZ(0, 4), XL_CONTIG, 0);
        mm_case("1x1 rows and columns", dt, 3, SZ(2, 1, 7), XL_CONTIG, 3, SZ(2, 7, 1), XL_STEP, 7);
    }
    mm_case("large 130x257 @ 257x66", GF_F32, 2, SZ(130, 257), XL_TRANSPOSED, 2, SZ(257, 66),
            XL_CONTIG, 257);
    /* f16 / bf16 through cuBLAS, accumulating in f32. */
    const gf_dtype halves[] = {GF_F16, GF_BF16};
    for (int h = 0; h < 2; h++) {
        if (!xd_stores(halves[h])) continue;
        xd_pair a = xd_pair_rand(GF_F32, 3, SZ(3, 17, 24), XV_SMALL, XL_CONTIG);
        xd_pair b = xd_pair_rand(GF_F32, 3, SZ(3, 24, 10), XV_SMALL, XL_TRANSPOSED);
        xd_pair ah = xd_half_make(halves[h], &a), bh = xd_half_make(halves[h], &b);
        xd_tol t = xd_half_tol(halves[h]);
        t.atol *= 24; /* products of values up to 2, summed 24 times, rounded once */
        xd_check_pair_tol(halves[h] == GF_F16 ? "matmul f16" : "matmul bf16",
                          gf_matmul(ah.d, bh.d), gf_matmul(ah.r, bh.r), t);
        xd_pair_release(ah);
        xd_pair_release(bh);
        xd_pair_release(a);
        xd_pair_release(b);
    }
}

/* ------------------------------------------------------------ softmax, layer norm */
static void test_softmax(void) {
    const gf_dtype fl[] = {GF_F32, GF_F64};
    for (int f = 0; f < 2; f++)
        for (int dim = 0; dim < 3; dim++)
            for (int L = 0; L < XL_COUNT; L++) {
                xd_seed((uint64_t)(f * 100 + dim * 10 + L));
                int64_t len = dim == 2 ? 3000 : 9;
                xd_pair x = xd_pair_rand(fl[f], 3, SZ(4, 9, len), L == 0 ? XV_GENERAL : XV_PLAIN,
                                         (xd_layout)L);
                char what[96];
                snprintf(what, sizeof what, "softmax %s dim %d %s", gf_dtype_name(fl[f]), dim,
                         xd_layout_name[L]);
                xd_check_pair_tol(what, gf_softmax(x.d, dim), gf_softmax(x.r, dim),
                                  xd_sum_tol(fl[f], 4));
                snprintf(what, sizeof what, "log_softmax %s dim %d %s", gf_dtype_name(fl[f]), dim,
                         xd_layout_name[L]);
                xd_check_pair_tol(what, gf_log_softmax(x.d, dim), gf_log_softmax(x.r, dim),
                                  xd_sum_tol(fl[f], 4));
                xd_pair_release(x);
            }
    /* A row of -inf and large values (the max subtraction matters). */
    double v[6] = {-INFINITY, -INFINITY, 1000.0, 999.0, -1000.0, 0.0};
    xd_pair x = xd_pair_make(GF_F32, 2, SZ(2, 3), v, XL_CONTIG);
    xd_check_pair("softmax with -inf and 1000", gf_softmax(x.d, 1), gf_softmax(x.r, 1));
    xd_pair_release(x);
}

static void test_layer_norm(void) {
    const gf_dtype fl[] = {GF_F32, GF_F64};
    for (int f = 0; f < 2; f++)
        for (int nr = 1; nr <= 2; nr++)
            for (int affine = 0; affine < 2; affine++) {
                xd_seed((uint64_t)(f * 10 + nr * 2 + affine));
                int64_t inner = nr == 1 ? 300 : 12;
                xd_pair x = xd_pair_rand(fl[f], 3, SZ(5, 7, inner), XV_PLAIN, XL_STEP);
                const int64_t *wsz = nr == 1 ? SZ(inner) : SZ(7, inner);
                xd_pair w = xd_pair_rand(fl[f], nr, wsz, XV_SMALL, nr == 2 ? XL_TRANSPOSED : XL_CONTIG);
                xd_pair b = xd_pair_rand(fl[f], nr, wsz, XV_SMALL, XL_OFFSET);
                gf_tensor *md = NULL, *rd = NULL, *mr = NULL, *rr = NULL;
                gf_tensor *yd = gf_layer_norm(x.d, nr, affine ? w.d : NULL, affine ? b.d : NULL,
                                              1e-5, &md, &rd);
                gf_tensor *yr = gf_layer_norm(x.r, nr, affine ? w.r : NULL, affine ? b.r : NULL,
                                              1e-5, &mr, &rr);
                char what[96];
                snprintf(what, sizeof what, "layer_norm %s rank %d%s", gf_dtype_name(fl[f]), nr,
                         affine ? " affine" : "");
                xd_check_pair_tol(what, yd, yr, xd_sum_tol(fl[f], 10));
                xd_check_pair_tol("layer_norm mean", md, mr, xd_sum_tol(fl[f], 10));
                xd_check_pair_tol("layer_norm rstd", rd, rr, xd_sum_tol(fl[f], 10));
                xd_pair_release(x);
                xd_pair_release(w);
                xd_pair_release(b);
            }
}

int main(void) {
    int st = xd_init();
    if (st != 0) return st;
    RUN(test_reductions);
    RUN(test_max_min_dim);
    RUN(test_matmul);
    RUN(test_softmax);
    RUN(test_layer_norm);
    return xd_finish();
}
