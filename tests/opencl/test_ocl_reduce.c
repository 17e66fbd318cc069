/* SPDX-License-Identifier: BSD-3-Clause */
/* test_ocl_reduce.c — reductions on the OpenCL device against the reference
 * plugin: every reduction and dtype, over one dim, several dims, all dims,
 * with keepdim, on contiguous and strided inputs, long lines (the work-group
 * form) and many short ones (the work-item form), 0-size and NaN cases. */
#include "xd_test.h"

static bool have_f64;

typedef gf_tensor *(*red_fn)(const gf_tensor *, const int *, int, bool);

static gf_tensor *var1(const gf_tensor *x, const int *d, int n, bool k) {
    return gf_var(x, d, n, 1.0, k);
}
static gf_tensor *var0(const gf_tensor *x, const int *d, int n, bool k) {
    return gf_var(x, d, n, 0.0, k);
}

typedef struct red_case {
    const char *name;
    red_fn fn;
    bool ints, bools, nonempty;
} red_case;

static const red_case cases[] = {
    {"sum", gf_sum, true, false, false},      {"mean", gf_mean, false, false, false},
    {"prod", gf_prod, true, false, false},    {"amax", gf_amax, true, true, true},
    {"amin", gf_amin, true, true, true},      {"var", var1, false, false, false},
    {"var (correction 0)", var0, false, false, false},
    {"logsumexp", gf_logsumexp, false, false, false},
};

typedef struct rshape {
    int rank;
    int64_t sizes[4];
    int ndims;
    int dims[3];
} rshape;
static const rshape rshapes[] = {
    {2, {5, 7}, 1, {1}},          {2, {5, 7}, 1, {0}},        {3, {3, 4, 5}, 2, {0, 2}},
    {3, {3, 4, 5}, 0, {0}},       {1, {1000}, 1, {0}},        {2, {3, 700}, 1, {1}},
    {2, {700, 3}, 1, {0}},        {3, {2, 300, 4}, 2, {1, 2}}, {2, {6, 0}, 1, {1}},
    {2, {0, 6}, 1, {1}},          {0, {0}, 0, {0}},           {4, {2, 3, 1, 5}, 2, {1, 2}},
};

static void test_reductions(void) {
    const gf_dtype dts[] = {GF_F32, GF_F64, GF_I32, GF_I64, GF_BOOL};
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const red_case *rc = &cases[ci];
        for (int di = 0; di < 5; di++) {
            gf_dtype dt = dts[di];
            if (dt == GF_F64 && !have_f64) continue;
            if ((dt == GF_I32 || dt == GF_I64) && !rc->ints) continue;
            if (dt == GF_BOOL && !rc->bools) continue;
            for (size_t si = 0; si < sizeof rshapes / sizeof rshapes[0]; si++) {
                const rshape *sh = &rshapes[si];
                bool empty_line = false;
                for (int k = 0; k < sh->ndims; k++)
                    if (sh->sizes[sh->dims[k]] == 0) empty_line = true;
                if (sh->ndims == 0 && sh->rank > 0)
                    for (int k = 0; k < sh->rank; k++) empty_line |= sh->sizes[k] == 0;
                if (rc->nonempty && empty_line) continue;
                xd_layout L = (xd_layout)((ci + si) % 4);
                xd_seed(ci * 1000 + (uint64_t)di * 100 + si);
                /* Products of many values overflow: keep them near 1. */
                xd_values kind = !strcmp(rc->name, "prod") ? XV_SMALL : XV_PLAIN;
                if (si % 3 == 0 && kind == XV_PLAIN) kind = XV_GENERAL;
                xd_pair x = xd_pair_rand(dt, sh->rank, sh->sizes, kind, L);
                if (!strcmp(rc->name, "prod") && (dt == GF_F32 || dt == GF_F64)) {
                    /* Values in [0.9, 1.1] keep a long product finite. */
                    gf_tensor *a = gf_mul_scalar(x.d, 0.05), *b = gf_mul_scalar(x.r, 0.05);
                    gf_tensor *ao = gf_add_scalar(a, 1.0), *br = gf_add_scalar(b, 1.0);
                    gf_tensor_release(a);
                    gf_tensor_release(b);
                    xd_pair_release(x);
                    x.d = ao;
                    x.r = br;
                }
                for (int keep = 0; keep < 2; keep++) {
                    char what[160];
                    snprintf(what, sizeof what, "%s %s shape %zu keepdim %d [%s]", rc->name,
                             xd_dtn(dt), si, keep, xd_layout_name[L]);
                    xd_tol tol = xd_default_tol(dt);
                    if (dt == GF_F32) tol = (xd_tol){2e-5, 2e-5};
                    xd_check_pair_tol(what, rc->fn(x.d, sh->dims, sh->ndims, keep),
                                      rc->fn(x.r, sh->dims, sh->ndims, keep), tol);
                }
                xd_pair_release(x);
            }
        }
    }
}

/* A long f32 sum is compensated: close to the exact value, not to a naive
 * float accumulation. 1e6 copies of 0.1f sum to 100000.0014901161 exactly. */
static void test_compensated_sum(void) {
    gf_tensor *x = gf_full(SZ(1000000), 1, 0.1, GF_F32, xd_dev);
    gf_tensor *s = gf_sum(x, NULL, 0, false);
    double v = 0;
    CHECK(gf_tensor_item(s, &v) == GF_OK);
    CHECK_MSG(fabs(v - 100000.0014901161) <= 0.01, "sum of 1e6 x 0.1f = %.10g", v);
    gf_tensor_release(s);
    gf_tensor_release(x);
}

/* Long contiguous lines take two passes (chunked partials, then a reduction
 * of the partials): several outputs, a line length no chunk divides, NaN in
 * one line, an offset view. */
static void test_long_lines(void) {
    const gf_dtype dts[] = {GF_F32, GF_F64};
    for (int di = 0; di < 2; di++) {
        gf_dtype dt = dts[di];
        if (dt == GF_F64 && !have_f64) continue;
        for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
            const red_case *rc = &cases[ci];
            xd_seed(ci + 500 * (uint64_t)di);
            xd_values kind = !strcmp(rc->name, "prod") ? XV_PLAIN : XV_GENERAL;
            xd_pair x = xd_pair_rand(dt, 2, SZ(3, 70001), kind, (xd_layout)(ci % 2 ? XL_OFFSET : XL_CONTIG));
            if (!strcmp(rc->name, "prod")) {
                gf_tensor *a = gf_mul_scalar(x.d, 1e-4), *b = gf_mul_scalar(x.r, 1e-4);
                gf_tensor *ao = gf_add_scalar(a, 1.0), *br = gf_add_scalar(b, 1.0);
                gf_tensor_release(a);
                gf_tensor_release(b);
                xd_pair_release(x);
                x.d = ao;
                x.r = br;
            }
            const int d1[1] = {1};
            char what[96];
            snprintf(what, sizeof what, "%s %s over a line of 70001", rc->name, xd_dtn(dt));
            xd_tol tol = dt == GF_F32 ? (xd_tol){2e-5, 2e-5} : (xd_tol){1e-11, 1e-11};
            /* A product of 70001 factors rounded in f32 at each step drifts
             * by about sqrt(n) ulp from the reference's double product. */
            if (!strcmp(rc->name, "prod") && dt == GF_F32) tol = (xd_tol){1e-3, 1e-3};
            xd_check_pair_tol(what, rc->fn(x.d, d1, 1, false), rc->fn(x.r, d1, 1, false), tol);
            xd_pair_release(x);
        }
        /* Rows: many outputs, each a contiguous line. */
        xd_pair m = xd_pair_rand(dt, 2, SZ(300, 1000), XV_PLAIN, XL_CONTIG);
        const int d1[1] = {1};
        xd_tol tol = dt == GF_F32 ? (xd_tol){2e-5, 2e-5} : (xd_tol){1e-11, 1e-11};
        xd_check_pair_tol("sum of 300 rows of 1000", gf_sum(m.d, d1, 1, false),
                          gf_sum(m.r, d1, 1, false), tol);
        xd_check_pair_tol("amax of 300 rows of 1000", gf_amax(m.d, d1, 1, true),
                          gf_amax(m.r, d1, 1, true), tol);
        /* Columns: the outputs contiguous, the lines strided. */
        const int d0[1] = {0};
        xd_check_pair_tol("sum of 1000 columns of 300", gf_sum(m.d, d0, 1, false),
                          gf_sum(m.r, d0, 1, false), tol);
        xd_check_pair_tol("mean of 1000 columns of 300", gf_mean(m.d, d0, 1, true),
                          gf_mean(m.r, d0, 1, true), tol);
        xd_pair c3 = xd_pair_rand(dt, 3, SZ(5, 7, 37), XV_GENERAL, XL_OFFSET);
        const int d01[2] = {0, 1};
        xd_check_pair_tol("sum of 37 columns over two dims", gf_sum(c3.d, d01, 2, false),
                          gf_sum(c3.r, d01, 2, false), tol);
        xd_pair_release(c3);
        xd_pair_release(m);
        /* Runs: the innermost reduced dims contiguous (merged: 3 x 100) with
         * reduced dims outside them and a kept dim between (a bias
         * gradient's sum over N, H, W), and runs long enough to be cut in
         * chunks; every op whose partials combine, NaN and infinities in
         * some lines, an offset view. */
        const int d023[3] = {0, 2, 3}, d02[2] = {0, 2};
        for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
            const red_case *rc = &cases[ci];
            bool prod = !strcmp(rc->name, "prod");
            xd_seed(ci + 900 * (uint64_t)di);
            xd_layout L = ci % 2 ? XL_OFFSET : XL_CONTIG;
            xd_pair r4 = xd_pair_rand(dt, 4, SZ(6, 5, 3, 100), prod ? XV_PLAIN : XV_GENERAL, L);
            xd_pair r3 = xd_pair_rand(dt, 3, SZ(3, 2, 5003), prod ? XV_PLAIN : XV_GENERAL, L);
            if (prod) { /* factors near 1: the products stay finite */
                xd_pair *ps[2] = {&r4, &r3};
                for (int k = 0; k < 2; k++) {
                    gf_tensor *a = gf_mul_scalar(ps[k]->d, 1e-4), *b = gf_mul_scalar(ps[k]->r, 1e-4);
                    gf_tensor *ao = gf_add_scalar(a, 1.0), *br = gf_add_scalar(b, 1.0);
                    gf_tensor_release(a);
                    gf_tensor_release(b);
                    xd_pair_release(*ps[k]);
                    ps[k]->d = ao;
                    ps[k]->r = br;
                }
            }
            char what[96];
            xd_tol tol4 = dt == GF_F32 ? (xd_tol){2e-5, 2e-5} : (xd_tol){1e-11, 1e-11};
            if (prod && dt == GF_F32) tol4 = (xd_tol){1e-3, 1e-3};
            snprintf(what, sizeof what, "%s %s over dims 0, 2, 3 of [6, 5, 3, 100]", rc->name,
                     xd_dtn(dt));
            xd_check_pair_tol(what, rc->fn(r4.d, d023, 3, true), rc->fn(r4.r, d023, 3, true),
                              tol4);
            snprintf(what, sizeof what, "%s %s over dims 0, 2 of [3, 2, 5003]", rc->name,
                     xd_dtn(dt));
            xd_check_pair_tol(what, rc->fn(r3.d, d02, 2, false), rc->fn(r3.r, d02, 2, false),
                              tol4);
            xd_pair_release(r4);
            xd_pair_release(r3);
        }
    }
}

static void test_max_min_dim(void) {
    const gf_dtype dts[] = {GF_F32, GF_F64, GF_I32, GF_I64};
    for (int di = 0; di < 4; di++) {
        gf_dtype dt = dts[di];
        if (dt == GF_F64 && !have_f64) continue;
        for (int dim = 0; dim < 3; dim++)
            for (int L = 0; L < 4; L++) {
                int64_t sizes[3] = {4, 6, 300};
                xd_seed((uint64_t)di * 77 + (uint64_t)dim * 7 + (uint64_t)L);
                /* Small integers: many ties, so the first-index rule matters. */
                xd_pair x = xd_pair_rand(dt, 3, sizes, L == 1 ? XV_GENERAL : XV_SMALL,
                                         (xd_layout)L);
                for (int which = 0; which < 2; which++) {
                    gf_tensor *vo = NULL, *io = NULL, *vr = NULL, *ir = NULL;
                    gf_status (*fn)(const gf_tensor *, int, bool, gf_tensor **, gf_tensor **) =
                        which ? gf_min_dim : gf_max_dim;
                    CHECK(fn(x.d, dim, false, &vo, &io) == GF_OK);
                    CHECK(fn(x.r, dim, false, &vr, &ir) == GF_OK);
                    char what[128];
                    snprintf(what, sizeof what, "%s %s dim %d [%s] values", which ? "min" : "max",
                             xd_dtn(dt), dim, xd_layout_name[L]);
                    xd_check_pair(what, vo, vr);
                    snprintf(what, sizeof what, "%s %s dim %d [%s] indices", which ? "min" : "max",
                             xd_dtn(dt), dim, xd_layout_name[L]);
                    xd_check_pair(what, io, ir);
                }
                xd_check_pair("argmax", gf_argmax(x.d, dim, true), gf_argmax(x.r, dim, true));
                xd_pair_release(x);
            }
    }
    /* Reducing an empty dim has no identity: an error on both devices. */
    gf_tensor *e = gf_zeros(SZ(3, 0), 2, GF_F32, xd_dev);
    CHECK(gf_amax(e, (const int[]){1}, 1, false) == NULL);
    CHECK(gf_last_status() != GF_OK);
    gf_tensor_release(e);
}

int main(void) {
    int rc = xd_init();
    if (rc) return rc;
    have_f64 = xd_stores(GF_F64);
    RUN(test_reductions);
    RUN(test_compensated_sum);
    RUN(test_long_lines);
    RUN(test_max_min_dim);
    return CHECK_REPORT();
}
