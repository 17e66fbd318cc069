/* SPDX-License-Identifier: BSD-3-Clause */
/* test_ocl_index.c — index_select, gather, scatter_add, index_add (and the
 * ops built on them: embedding, one_hot, cross_entropy; index_select and
 * gather on c64 and c128 too) on the OpenCL device
 * against the reference plugin, including duplicate indices (atomic
 * accumulation), strided operands, and out-of-range indices, which must fail
 * with an error and leave the output untouched. */
#include "xd_test.h"

static bool have_f64;

/* An i64 index tensor with values in [0, limit). */
static xd_pair indices(int rank, const int64_t *sizes, int64_t limit, xd_layout L) {
    int64_t n = xd_numel(rank, sizes);
    double *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++) v[i] = (double)(xd_next() % (uint64_t)limit);
    xd_pair p = xd_pair_make(GF_I64, rank, sizes, v, L);
    free(v);
    return p;
}

static void test_index_select(void) {
    const gf_dtype dts[] = {GF_F32, GF_F64, GF_I32, GF_I64, GF_BOOL};
    for (int di = 0; di < 5; di++) {
        if (dts[di] == GF_F64 && !have_f64) continue;
        for (int dim = 0; dim < 3; dim++) {
            xd_seed((uint64_t)(di * 10 + dim));
            int64_t sizes[3] = {4, 5, 6};
            xd_pair x = xd_pair_rand(dts[di], 3, sizes, XV_GENERAL, (xd_layout)(dim % 4));
            xd_pair ix = indices(1, SZ(7), sizes[dim], dim == 1 ? XL_STEP : XL_CONTIG);
            char what[80];
            snprintf(what, sizeof what, "index_select %s dim %d", xd_dtn(dts[di]), dim);
            xd_check_pair(what, gf_index_select(x.d, dim, ix.d), gf_index_select(x.r, dim, ix.r));
            xd_pair_release(x);
            xd_pair_release(ix);
        }
    }
    /* embedding: rows of a weight matrix picked by a 2-D index. */
    xd_pair w = xd_pair_rand(GF_F32, 2, SZ(50, 16), XV_PLAIN, XL_CONTIG);
    xd_pair ix = indices(2, SZ(3, 9), 50, XL_TRANSPOSED);
    xd_check_pair("embedding", gf_embedding(w.d, ix.d), gf_embedding(w.r, ix.r));
    xd_pair_release(w);
    xd_pair_release(ix);
}

static void test_gather(void) {
    const gf_dtype dts[] = {GF_F32, GF_F64, GF_I32, GF_I64, GF_BOOL};
    for (int di = 0; di < 5; di++) {
        if (dts[di] == GF_F64 && !have_f64) continue;
        for (int dim = 0; dim < 2; dim++) {
            xd_seed((uint64_t)(di * 10 + dim + 50));
            xd_pair x = xd_pair_rand(dts[di], 2, SZ(6, 7), XV_GENERAL, XL_TRANSPOSED);
            xd_pair ix = indices(2, SZ(5, 4), dim ? 7 : 6, XL_STEP);
            char what[80];
            snprintf(what, sizeof what, "gather %s dim %d", xd_dtn(dts[di]), dim);
            xd_check_pair(what, gf_gather(x.d, dim, ix.d), gf_gather(x.r, dim, ix.r));
            xd_pair_release(x);
            xd_pair_release(ix);
        }
    }
}

/* Duplicate indices accumulate: 40 sources into 3 slots. */
static void test_accumulate(void) {
    const gf_dtype dts[] = {GF_F32, GF_F64, GF_I32, GF_I64};
    for (int di = 0; di < 4; di++) {
        gf_dtype dt = dts[di];
        if (dt == GF_F64 && !have_f64) continue;
        xd_tol tol = dt == GF_F32 ? (xd_tol){1e-5, 1e-5} : xd_default_tol(dt);
        for (int dim = 0; dim < 2; dim++) {
            xd_seed((uint64_t)(di * 10 + dim + 100));
            const int64_t *xs = dim ? SZ(5, 3) : SZ(3, 5);
            const int64_t *ss = dim ? SZ(5, 40) : SZ(40, 5);
            xd_pair x = xd_pair_rand(dt, 2, xs, XV_SMALL, XL_CONTIG);
            xd_pair src = xd_pair_rand(dt, 2, ss, XV_SMALL, XL_TRANSPOSED);
            xd_pair ix = indices(1, SZ(40), 3, XL_CONTIG);
            char what[80];
            snprintf(what, sizeof what, "index_add %s dim %d", xd_dtn(dt), dim);
            xd_check_pair_tol(what, gf_index_add(x.d, dim, ix.d, src.d),
                              gf_index_add(x.r, dim, ix.r, src.r), tol);
            xd_pair ix2 = indices(2, dim ? SZ(5, 40) : SZ(40, 5), 3, XL_STEP);
            snprintf(what, sizeof what, "scatter_add %s dim %d", xd_dtn(dt), dim);
            xd_check_pair_tol(what, gf_scatter_add(x.d, dim, ix2.d, src.d),
                              gf_scatter_add(x.r, dim, ix2.r, src.r), tol);
            /* In place into a strided view. */
            xd_pair y = xd_pair_rand(dt, 2, xs, XV_SMALL, XL_STEP);
            CHECK(gf_index_add_(y.d, dim, ix.d, src.d) == GF_OK);
            CHECK(gf_index_add_(y.r, dim, ix.r, src.r) == GF_OK);
            snprintf(what, sizeof what, "index_add_ %s dim %d into a strided view", xd_dtn(dt), dim);
            xd_check_tol(what, y.d, y.r, tol);
            xd_pair_release(y);
            xd_pair_release(x);
            xd_pair_release(src);
            xd_pair_release(ix);
            xd_pair_release(ix2);
        }
    }
}

static void test_losses(void) {
    xd_pair logits = xd_pair_rand(GF_F32, 2, SZ(33, 10), XV_PLAIN, XL_TRANSPOSED);
    xd_pair target = indices(1, SZ(33), 10, XL_CONTIG);
    xd_check_pair("cross_entropy", gf_cross_entropy(logits.d, target.d, NULL, GF_REDUCTION_MEAN, -100, 0.0),
                  gf_cross_entropy(logits.r, target.r, NULL, GF_REDUCTION_MEAN, -100, 0.0));
    xd_check_pair("one_hot", gf_one_hot(target.d, 10), gf_one_hot(target.r, 10));
    xd_pair_release(logits);
    xd_pair_release(target);
}

/* An index out of range fails, names the index, and changes nothing. */
static void test_bad_index(void) {
    xd_pair x = xd_pair_rand(GF_F32, 2, SZ(4, 5), XV_PLAIN, XL_CONTIG);
    double bad[3] = {1, 9, 0};
    gf_tensor *ix = gf_from_data((const int64_t[]){1, 9, 0}, SZ(3), 1, GF_I64, xd_dev);
    (void)bad;
    gf_clear_error();
    CHECK(gf_index_select(x.d, 0, ix) == NULL);
    CHECK_CONTAINS(gf_last_error(), "9");
    CHECK(gf_last_status() == GF_ERR_INDEX || gf_last_status() == GF_ERR_PLUGIN);
    xd_pair src = xd_pair_rand(GF_F32, 2, SZ(3, 5), XV_PLAIN, XL_CONTIG);
    gf_clear_error();
    CHECK(gf_index_add_(x.d, 0, ix, src.d) != GF_OK);
    xd_check("x untouched by a failed index_add_", x.d, x.r);
    /* The device still works afterwards. */
    gf_tensor *ok_ix = gf_from_data((const int64_t[]){3, 0, 2}, SZ(3), 1, GF_I64, xd_dev);
    gf_tensor *ok_ixr = gf_from_data((const int64_t[]){3, 0, 2}, SZ(3), 1, GF_I64, xd_ref);
    xd_check_pair("index_select after an error", gf_index_select(x.d, 0, ok_ix),
                  gf_index_select(x.r, 0, ok_ixr));
    gf_tensor_release(ok_ix);
    gf_tensor_release(ok_ixr);
    gf_tensor_release(ix);
    xd_pair_release(x);
    xd_pair_release(src);
}

/* Two complex results, element for element: their real views, within tol
 * (exact for moves). */
static void check_complex_tol(const char *what, gf_tensor *got, gf_tensor *want, xd_tol tol) {
    gf_tensor *a = got ? gf_view_as_real(got) : NULL, *b = want ? gf_view_as_real(want) : NULL;
    CHECK_MSG(a && b, "%s: %s", what, gf_last_error());
    if (a && b) xd_check_tol(what, a, b, tol);
    gf_tensor_release(a);
    gf_tensor_release(b);
    gf_tensor_release(got);
    gf_tensor_release(want);
}
static void check_complex(const char *what, gf_tensor *got, gf_tensor *want) {
    check_complex_tol(what, got, want, (xd_tol){0, 0});
}

/* c64, and c128 where the device stores it, through the four index ops on
 * opencl:0 itself: strict mode (no fallback device) for the duration, so
 * an op the plugin left to the fallback would fail here. The sums (with
 * repeated indices) add in the part dtype atomically, the reference in
 * double: within a few ulp. */
static void test_complex_select(void) {
    gf_device *fallback = gf_fallback_device();
    CHECK(gf_fallback_set_device(NULL) == GF_OK);
    const gf_dtype cx[2] = {GF_C64, GF_C128};
    for (int c = 0; c < 2; c++) {
        if (!xd_stores(cx[c])) continue;
        gf_dtype part = cx[c] == GF_C64 ? GF_F32 : GF_F64;
        xd_seed((uint64_t)(40 + c));
        xd_pair re = xd_pair_rand(part, 3, SZ(6, 5, 4), XV_GENERAL, XL_CONTIG);
        xd_pair im = xd_pair_rand(part, 3, SZ(6, 5, 4), XV_GENERAL, XL_CONTIG);
        gf_tensor *zd = gf_complex(re.d, im.d), *zr = gf_complex(re.r, im.r);
        /* [4, 5, 6], strided */
        gf_tensor *td = zd ? gf_transpose(zd, 0, 2) : NULL, *tr = zr ? gf_transpose(zr, 0, 2) : NULL;
        CHECK_MSG(td && tr, "complex operands: %s", gf_last_error());
        const int64_t sizes[3] = {4, 5, 6};
        for (int dim = 0; dim < 3 && td && tr; dim++) {
            xd_pair ix = indices(1, SZ(7), sizes[dim], XL_CONTIG);
            char what[80];
            snprintf(what, sizeof what, "index_select %s dim %d", xd_dtn(cx[c]), dim);
            check_complex(what, gf_index_select(td, dim, ix.d), gf_index_select(tr, dim, ix.r));
            xd_pair_release(ix);
            xd_pair gx = indices(3, SZ(4, 3, 6), sizes[1], XL_CONTIG);
            snprintf(what, sizeof what, "gather %s dim 1", xd_dtn(cx[c]));
            check_complex(what, gf_gather(td, 1, gx.d), gf_gather(tr, 1, gx.r));
            /* scatter_add of td's first rows back into td's shape */
            gf_tensor *sd = gf_narrow(td, 1, 0, 3), *sr = gf_narrow(tr, 1, 0, 3);
            snprintf(what, sizeof what, "scatter_add %s dim 1", xd_dtn(cx[c]));
            check_complex_tol(what, gf_scatter_add(td, 1, gx.d, sd),
                              gf_scatter_add(tr, 1, gx.r, sr), xd_sum_tol(part, 4));
            gf_tensor_release(sd);
            gf_tensor_release(sr);
            xd_pair_release(gx);
            /* index_add of 7 slices along dim, indices repeating */
            xd_pair ia = indices(1, SZ(7), sizes[dim], XL_CONTIG);
            gf_tensor *srd = gf_index_select(td, dim, ia.d), *srr = gf_index_select(tr, dim, ia.r);
            snprintf(what, sizeof what, "index_add %s dim %d", xd_dtn(cx[c]), dim);
            check_complex_tol(what, srd ? gf_index_add(td, dim, ia.d, srd) : NULL,
                              srr ? gf_index_add(tr, dim, ia.r, srr) : NULL, xd_sum_tol(part, 8));
            gf_tensor_release(srd);
            gf_tensor_release(srr);
            xd_pair_release(ia);
        }
        gf_tensor_release(td);
        gf_tensor_release(tr);
        gf_tensor_release(zd);
        gf_tensor_release(zr);
        xd_pair_release(re);
        xd_pair_release(im);
    }
    gf_fallback_set_device(fallback);
}

int main(void) {
    int rc = xd_init();
    if (rc) return rc;
    have_f64 = xd_stores(GF_F64);
    RUN(test_index_select);
    RUN(test_gather);
    RUN(test_complex_select);
    RUN(test_accumulate);
    RUN(test_losses);
    RUN(test_bad_index);
    return CHECK_REPORT();
}
