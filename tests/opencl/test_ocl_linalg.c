/* SPDX-License-Identifier: BSD-3-Clause */
/* test_ocl_linalg.c — matmul, softmax, log_softmax, layer_norm and
 * batch_norm on the OpenCL device against the reference plugin: sizes that
 * fill no tile evenly, transposed and sliced operands, batches with a
 * broadcast batch dim, every dtype matmul takes, and both GEMM paths
 * (graft's kernel and, where present, CLBlast). */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include "graft_opencl_ext.h"
#include "xd_test.h"

static bool have_f64;

/* Sums of many products in f32 differ from the reference's double sums by
 * a few ulp per term. */
static xd_tol mm_tol(gf_dtype dt, int64_t k) {
    if (dt == GF_F32) return (xd_tol){2e-5 * (1 + (double)k / 64), 2e-5 * (1 + (double)k / 64)};
    if (dt == GF_F64) return (xd_tol){1e-12, 1e-12};
    return (xd_tol){0, 0};
}

typedef struct mm_shape {
    int ra, rb;
    int64_t a[4], b[4];
} mm_shape;
static const mm_shape mm_shapes[] = {
    {2, 2, {1, 1}, {1, 1}},          {2, 2, {3, 5}, {5, 7}},
    {2, 2, {65, 130}, {130, 67}},    {2, 2, {64, 64}, {64, 64}},
    {3, 3, {2, 33, 17}, {2, 17, 9}}, {4, 3, {2, 3, 4, 5}, {3, 5, 6}},
    {3, 2, {4, 7, 0}, {0, 3}},       {2, 2, {0, 4}, {4, 5}},
    {1, 2, {20}, {20, 3}},           {2, 1, {6, 20}, {20}},
    {1, 1, {40}, {40}},              {2, 2, {300, 8}, {8, 1}},
    /* a packed into panels (ocl_matmul.c: m >= 32, n >= 128): a partial
     * panel and a partial vector, batched and broadcast */
    {3, 2, {2, 37, 29}, {29, 130}},  {3, 3, {3, 48, 20}, {1, 20, 144}},
};

static void test_matmul(const char *gemm) {
    setenv("GRAFT_OPENCL_GEMM", gemm, 1);
    const gf_dtype dts[] = {GF_F32, GF_F64, GF_I32, GF_I64};
    for (int di = 0; di < 4; di++) {
        gf_dtype dt = dts[di];
        if (dt == GF_F64 && !have_f64) continue;
        if (strcmp(gemm, "graft") != 0 && dt != GF_F32 && dt != GF_F64) continue;
        for (size_t si = 0; si < sizeof mm_shapes / sizeof mm_shapes[0]; si++) {
            const mm_shape *s = &mm_shapes[si];
            xd_layout La = (xd_layout)((si + (size_t)di) % 4), Lb = (xd_layout)((si + 2) % 4);
            xd_seed(si * 10 + (uint64_t)di);
            xd_pair a = xd_pair_rand(dt, s->ra, s->a, XV_SMALL, La);
            xd_pair b = xd_pair_rand(dt, s->rb, s->b, XV_SMALL, Lb);
            char what[128];
            snprintf(what, sizeof what, "matmul (%s) %s shapes %zu [%s @ %s]", gemm, xd_dtn(dt), si,
                     xd_layout_name[La], xd_layout_name[Lb]);
            int64_t k = s->a[s->ra - 1];
            xd_check_pair_tol(what, gf_matmul(a.d, b.d), gf_matmul(a.r, b.r), mm_tol(dt, k));
            xd_pair_release(a);
            xd_pair_release(b);
        }
    }
    /* A batch operand broadcast (stride 0). */
    xd_pair a = xd_pair_rand(GF_F32, 2, SZ(9, 11), XV_SMALL, XL_CONTIG);
    xd_pair b = xd_pair_rand(GF_F32, 3, SZ(5, 11, 13), XV_SMALL, XL_TRANSPOSED);
    xd_check_pair_tol("matmul with a broadcast batch", gf_matmul(a.d, b.d), gf_matmul(a.r, b.r),
                      mm_tol(GF_F32, 11));
    xd_pair_release(a);
    xd_pair_release(b);
    unsetenv("GRAFT_OPENCL_GEMM");
}

static void test_matmul_graft(void) { test_matmul("graft"); }
static void test_matmul_auto(void) { test_matmul("auto"); }

/* CLBlast's GEMM (its first call compiles for a long while on a CPU device,
 * so a few cases only): row-major and transposed operands, a batch. */
static void test_matmul_clblast(void) {
    setenv("GRAFT_OPENCL_GEMM", "clblast", 1);
    for (int di = 0; di < 2; di++) {
        gf_dtype dt = di ? GF_F64 : GF_F32;
        if (dt == GF_F64 && !have_f64) continue;
        for (int L = 0; L < 2; L++) {
            xd_pair a = xd_pair_rand(dt, 3, SZ(2, 33, 40), XV_SMALL, L ? XL_TRANSPOSED : XL_CONTIG);
            xd_pair b = xd_pair_rand(dt, 3, SZ(2, 40, 17), XV_SMALL, L ? XL_CONTIG : XL_TRANSPOSED);
            gf_clear_error();
            gf_tensor *o = gf_matmul(a.d, b.d);
            if (!o && strstr(gf_last_error(), "CLBlast") && strstr(gf_last_error(), "missing")) {
                fprintf(stderr, "CLBlast is not installed: its cases are skipped\n");
                xd_pair_release(a);
                xd_pair_release(b);
                unsetenv("GRAFT_OPENCL_GEMM");
                return;
            }
            char what[64];
            snprintf(what, sizeof what, "matmul (CLBlast) %s layout %d", xd_dtn(dt), L);
            xd_check_pair_tol(what, o, gf_matmul(a.r, b.r), mm_tol(dt, 40));
            xd_pair_release(a);
            xd_pair_release(b);
        }
    }
    unsetenv("GRAFT_OPENCL_GEMM");
}

/* d(softmax or log_softmax of x along dim)/dx applied to gy, into *out (a
 * new reference; NULL on failure). */
static void softmax_grad(const gf_tensor *x, const gf_tensor *gy, int dim, int lg,
                         gf_tensor **out) {
    *out = NULL;
    gf_tensor *xl = gf_detach(x);
    if (!xl || gf_tensor_set_requires_grad(xl, true) != GF_OK) {
        gf_tensor_release(xl);
        return;
    }
    gf_scope_begin();
    gf_tensor *y = lg ? gf_log_softmax(xl, dim) : gf_softmax(xl, dim);
    gf_tensor *res = NULL;
    if (y && gf_grad(&y, 1, (gf_tensor *const[]){(gf_tensor *)gy}, &xl, 1, &res, NULL) == GF_OK)
        *out = gf_scope_keep(res);
    gf_scope_end();
    gf_tensor_release(xl);
}

static void test_softmax(void) {
    const gf_dtype dts[] = {GF_F32, GF_F64};
    typedef struct {
        int rank;
        int64_t s[3];
    } sh;
    const sh shapes[] = {{2, {4, 7}}, {3, {3, 5, 300}}, {1, {1000}}, {0, {0}}, {2, {0, 5}},
                         {2, {33, 1}}, {2, {40, 93}}};
    for (int di = 0; di < 2; di++) {
        if (dts[di] == GF_F64 && !have_f64) continue;
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
            for (int dim = 0; dim < (shapes[si].rank ? shapes[si].rank : 1); dim++) {
                xd_layout L = (xd_layout)((si + (size_t)dim) % 4);
                xd_seed(si * 7 + (uint64_t)dim + (uint64_t)di * 100);
                xd_pair x = xd_pair_rand(dts[di], shapes[si].rank, shapes[si].s,
                                         si == 0 ? XV_GENERAL : XV_PLAIN, L);
                char what[128];
                snprintf(what, sizeof what, "softmax %s shape %zu dim %d [%s]", xd_dtn(dts[di]),
                         si, dim, xd_layout_name[L]);
                xd_check_pair(what, gf_softmax(x.d, dim), gf_softmax(x.r, dim));
                snprintf(what, sizeof what, "log_softmax %s shape %zu dim %d [%s]",
                         xd_dtn(dts[di]), si, dim, xd_layout_name[L]);
                xd_check_pair(what, gf_log_softmax(x.d, dim), gf_log_softmax(x.r, dim));
                /* The gradients: the device's SOFTMAX_BACKWARD kernels (an item a
                 * line, a work-group a line of 300 or more), from a strided grad_y. */
                xd_pair gy = xd_pair_rand(dts[di], shapes[si].rank, shapes[si].s, XV_SMALL,
                                          (xd_layout)((si + 1) % 4));
                for (int lg = 0; lg < 2; lg++) {
                    gf_tensor *gd = NULL, *gr = NULL;
                    softmax_grad(x.d, gy.d, dim, lg, &gd);
                    softmax_grad(x.r, gy.r, dim, lg, &gr);
                    snprintf(what, sizeof what, "%s backward %s shape %zu dim %d [%s]",
                             lg ? "log_softmax" : "softmax", xd_dtn(dts[di]), si, dim,
                             xd_layout_name[L]);
                    xd_check_pair_tol(what, gd, gr, xd_sum_tol(dts[di], 4));
                }
                xd_pair_release(gy);
                xd_pair_release(x);
            }
    }
}

static void test_layer_norm(void) {
    for (int di = 0; di < 2; di++) {
        gf_dtype dt = di ? GF_F64 : GF_F32;
        if (dt == GF_F64 && !have_f64) continue;
        for (int nr = 1; nr <= 2; nr++)
            for (int affine = 0; affine < 2; affine++) {
                xd_layout L = (xd_layout)((nr + affine * 2 + di) % 4);
                xd_seed((uint64_t)(nr * 10 + affine + di * 100));
                xd_pair x = xd_pair_rand(dt, 3, SZ(6, 5, 90), XV_PLAIN, L);
                const int64_t *wsz = nr == 1 ? SZ(90) : SZ(5, 90);
                xd_pair w = xd_pair_rand(dt, nr, wsz, XV_SMALL, XL_STEP);
                xd_pair b = xd_pair_rand(dt, nr, wsz, XV_SMALL, XL_CONTIG);
                gf_tensor *mo = NULL, *ro = NULL, *mr = NULL, *rr = NULL;
                gf_tensor *yo = gf_layer_norm(x.d, nr, affine ? w.d : NULL, affine ? b.d : NULL,
                                              1e-5, &mo, &ro);
                gf_tensor *yr = gf_layer_norm(x.r, nr, affine ? w.r : NULL, affine ? b.r : NULL,
                                              1e-5, &mr, &rr);
                char what[96];
                snprintf(what, sizeof what, "layer_norm %s rank %d affine %d [%s]", xd_dtn(dt), nr,
                         affine, xd_layout_name[L]);
                xd_tol tol = dt == GF_F32 ? (xd_tol){2e-5, 2e-5} : xd_default_tol(dt);
                xd_check_pair_tol(what, yo, yr, tol);
                xd_check_pair_tol("layer_norm mean", mo, mr, tol);
                xd_check_pair_tol("layer_norm rstd", ro, rr, tol);
                xd_pair_release(x);
                xd_pair_release(w);
                xd_pair_release(b);
            }
    }
}

/* The run forms (norm.cl "_r", "_v"): rows of contiguous runs with a weight
 * and bias contiguous over the row: an item per row (many rows), a
 * work-group per row (few), a row of several runs (a narrowed last dim),
 * run lengths with and without a tail after the vectors, NaN in a row. */
static void test_layer_norm_runs(void) {
    for (int di = 0; di < 2; di++) {
        gf_dtype dt = di ? GF_F64 : GF_F32;
        if (dt == GF_F64 && !have_f64) continue;
        xd_tol tol = dt == GF_F32 ? (xd_tol){2e-5, 2e-5} : xd_default_tol(dt);
        const struct {
            int64_t s[3];
            int nr;
            int64_t narrow; /* > 0: the last dim narrowed to this */
        } cases[] = {{{40, 3, 64}, 1, 0}, {{40, 3, 77}, 1, 0}, {{4, 3, 300}, 2, 0},
                     {{5, 7, 80}, 2, 67}, {{30, 2, 50}, 2, 37}};
        for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
            for (int affine = 0; affine < 2; affine++) {
                xd_seed((uint64_t)(ci * 10 + (size_t)affine + (size_t)di * 100 + 7000));
                xd_pair full = xd_pair_rand(dt, 3, cases[ci].s, ci == 1 ? XV_GENERAL : XV_PLAIN,
                                            ci % 2 ? XL_OFFSET : XL_CONTIG);
                xd_pair x = full;
                if (cases[ci].narrow) {
                    x.d = gf_narrow(full.d, 2, 5, cases[ci].narrow);
                    x.r = gf_narrow(full.r, 2, 5, cases[ci].narrow);
                }
                int nr = cases[ci].nr;
                const int64_t *xs = gf_tensor_sizes(x.r);
                const int64_t *wsz = nr == 1 ? xs + 2 : xs + 1;
                xd_pair w = xd_pair_rand(dt, nr, wsz, XV_SMALL, XL_CONTIG);
                xd_pair b = xd_pair_rand(dt, nr, wsz, XV_SMALL, XL_OFFSET);
                gf_tensor *mo = NULL, *ro = NULL, *mr = NULL, *rr = NULL;
                gf_tensor *yo = gf_layer_norm(x.d, nr, affine ? w.d : NULL, affine ? b.d : NULL,
                                              1e-5, &mo, &ro);
                gf_tensor *yr = gf_layer_norm(x.r, nr, affine ? w.r : NULL, affine ? b.r : NULL,
                                              1e-5, &mr, &rr);
                char what[96];
                snprintf(what, sizeof what, "layer_norm runs %s case %zu affine %d",
                         xd_dtn(dt), ci, affine);
                xd_check_pair_tol(what, yo, yr, tol);
                xd_check_pair_tol("layer_norm runs mean", mo, mr, tol);
                xd_check_pair_tol("layer_norm runs rstd", ro, rr, tol);
                if (cases[ci].narrow) xd_pair_release(x);
                xd_pair_release(full);
                xd_pair_release(w);
                xd_pair_release(b);
            }
    }
}

static void test_batch_norm(void) {
    for (int di = 0; di < 2; di++) {
        gf_dtype dt = di ? GF_F64 : GF_F32;
        if (dt == GF_F64 && !have_f64) continue;
        xd_tol tol = dt == GF_F32 ? (xd_tol){2e-5, 2e-5} : xd_default_tol(dt);
        /* and a plane wider than a work-group (70 x 5), and more images than
         * a work-group has items (each item takes whole planes) */
        for (int training = 0; training < 6; training++)
            for (int L = 0; L < 4; L++) {
                xd_seed((uint64_t)(training * 10 + L + di * 100));
                xd_pair x = xd_pair_rand(dt, 4, training < 2   ? SZ(4, 3, 6, 7)
                                                : training < 4 ? SZ(3, 3, 5, 70)
                                                               : SZ(70, 3, 5, 9),
                                         XV_PLAIN, (xd_layout)L);
                xd_pair w = xd_pair_rand(dt, 1, SZ(3), XV_SMALL, XL_STEP);
                xd_pair b = xd_pair_rand(dt, 1, SZ(3), XV_SMALL, XL_CONTIG);
                xd_pair rm = xd_pair_rand(dt, 1, SZ(3), XV_SMALL, XL_OFFSET);
                xd_pair rv = xd_pair_rand(dt, 1, SZ(3), XV_POSITIVE, XL_CONTIG);
                gf_tensor *smo = NULL, *sio = NULL, *smr = NULL, *sir = NULL;
                gf_tensor *yo = gf_batch_norm(x.d, rm.d, rv.d, L % 2 ? w.d : NULL,
                                              L % 2 ? b.d : NULL, training % 2, 0.1, 1e-5, &smo, &sio);
                gf_tensor *yr = gf_batch_norm(x.r, rm.r, rv.r, L % 2 ? w.r : NULL,
                                              L % 2 ? b.r : NULL, training % 2, 0.1, 1e-5, &smr, &sir);
                char what[96];
                snprintf(what, sizeof what, "batch_norm %s training %d [%s]", xd_dtn(dt), training % 2,
                         xd_layout_name[L]);
                xd_check_pair_tol(what, yo, yr, tol);
                xd_check_pair_tol("batch_norm save_mean", smo, smr, tol);
                xd_check_pair_tol("batch_norm save_invstd", sio, sir, tol);
                xd_check_tol("batch_norm running_mean", rm.d, rm.r, tol);
                xd_check_tol("batch_norm running_var", rv.d, rv.r, tol);
                xd_pair_release(x);
                xd_pair_release(w);
                xd_pair_release(b);
                xd_pair_release(rm);
                xd_pair_release(rv);
            }
    }
}

/* The "opencl.gemm" extension, reached through gf_device_query_extension,
 * overrides GRAFT_OPENCL_GEMM in both directions. Forced CLBlast on a view
 * it cannot take (unit stride in neither dim) is refused, so the op falls back to
 * cpu:0; forced graft takes it on the device even with the variable saying
 * clblast. */
/* The norms' fused gradients (LAYER_NORM_BACKWARD, BATCH_NORM_BACKWARD on
 * the device: contiguous, so a strided grad_y is copied first) against the
 * reference: rows shorter and longer than a work-group, with and without
 * weight, for x, weight and bias. */
static void norm_grads(bool layer, const gf_tensor *x, const gf_tensor *w, const gf_tensor *b,
                       const gf_tensor *gy, int nr, gf_tensor **out) {
    gf_tensor *leaf[3] = {gf_detach(x), w ? gf_detach(w) : NULL, b ? gf_detach(b) : NULL};
    int n = w ? 3 : 1;
    for (int i = 0; i < n; i++) gf_tensor_set_requires_grad(leaf[i], true);
    gf_scope_begin();
    gf_tensor *y = layer ? gf_layer_norm(leaf[0], nr, leaf[1], leaf[2], 1e-5, NULL, NULL)
                         : gf_batch_norm(leaf[0], NULL, NULL, leaf[1], leaf[2], true, 0.1, 1e-5,
                                         NULL, NULL);
    gf_tensor *res[3] = {NULL, NULL, NULL};
    if (y && gf_grad(&y, 1, (gf_tensor *const[]){(gf_tensor *)gy}, leaf, n, res, NULL) == GF_OK)
        for (int i = 0; i < n; i++) out[i] = gf_scope_keep(res[i]);
    gf_scope_end();
    for (int i = 0; i < 3; i++) gf_tensor_release(leaf[i]);
}

static void test_norm_gradients(void) {
    struct {
        bool layer;
        int rank, nr;
        int64_t s[4];
    } cases[] = {{true, 3, 1, {6, 5, 90}},   {true, 2, 1, {3, 300}},    {true, 3, 2, {4, 5, 60}},
                 {false, 4, 0, {4, 3, 6, 7}}, {false, 4, 0, {70, 3, 5, 9}}, {false, 2, 0, {9, 5}}};
    for (int di = 0; di < 2; di++) {
        gf_dtype dt = di ? GF_F64 : GF_F32;
        if (dt == GF_F64 && !have_f64) continue;
        for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
            for (int affine = 0; affine < 2; affine++) {
                xd_seed(ci * 10 + (uint64_t)affine + 700 * (uint64_t)di);
                int r = cases[ci].rank, nr = cases[ci].nr;
                const int64_t *ws = cases[ci].layer ? cases[ci].s + r - nr : cases[ci].s + 1;
                int wr = cases[ci].layer ? nr : 1;
                xd_pair x = xd_pair_rand(dt, r, cases[ci].s, XV_PLAIN, XL_CONTIG);
                xd_pair gy = xd_pair_rand(dt, r, cases[ci].s, XV_SMALL, XL_TRANSPOSED);
                xd_pair w = xd_pair_rand(dt, wr, ws, XV_SMALL, XL_CONTIG);
                xd_pair b = xd_pair_rand(dt, wr, ws, XV_SMALL, XL_CONTIG);
                gf_tensor *gd[3] = {NULL, NULL, NULL}, *gr[3] = {NULL, NULL, NULL};
                norm_grads(cases[ci].layer, x.d, affine ? w.d : NULL, affine ? b.d : NULL, gy.d,
                           nr, gd);
                norm_grads(cases[ci].layer, x.r, affine ? w.r : NULL, affine ? b.r : NULL, gy.r,
                           nr, gr);
                static const char *const names[3] = {"x", "weight", "bias"};
                for (int i = 0; i < (affine ? 3 : 1); i++) {
                    char what[96];
                    snprintf(what, sizeof what, "%s backward %s case %zu affine %d: grad %s",
                             cases[ci].layer ? "layer_norm" : "batch_norm", xd_dtn(dt), ci, affine,
                             names[i]);
                    xd_check_pair_tol(what, gd[i], gr[i], xd_sum_tol(dt, 64));
                }
                xd_pair_release(x);
                xd_pair_release(gy);
                xd_pair_release(w);
                xd_pair_release(b);
            }
    }
}

static void test_matmul_extension(void) {
    const graft_opencl_gemm_ext *ext = NULL;
    CHECK_MSG(gf_device_query_extension(xd_dev, "opencl.gemm", (void **)&ext) == GF_OK && ext,
              "%s", gf_last_error());
    if (!ext || ext->struct_size < sizeof *ext) return;
    void *none = NULL;
    CHECK(gf_device_query_extension(xd_dev, "opencl.nosuch", &none) == GF_ERR_NOT_FOUND && !none);
    CHECK_MSG(strstr(gf_last_error(), "opencl.gemm"), "%s", gf_last_error());
    gf_clear_error();
    xd_pair a = xd_pair_rand(GF_F32, 2, SZ(9, 14), XV_SMALL, XL_STEP);
    xd_pair b = xd_pair_rand(GF_F32, 2, SZ(14, 6), XV_SMALL, XL_STEP);
    for (int mode = 1; mode <= 2; mode++) {
        if (mode == 2 && !ext->clblast_available()) continue;
        setenv("GRAFT_OPENCL_GEMM", mode == 1 ? "clblast" : "graft", 1);
        ext->set_gemm(mode);
        CHECK(gf_fallback_reset_stats(xd_dev) == GF_OK);
        char what[64];
        snprintf(what, sizeof what, "matmul, GEMM forced to %s", mode == 1 ? "graft" : "CLBlast");
        xd_check_pair_tol(what, gf_matmul(a.d, b.d), gf_matmul(a.r, b.r), mm_tol(GF_F32, 14));
        gf_fallback_stats fs;
        CHECK(gf_fallback_get_stats(xd_dev, &fs) == GF_OK);
        CHECK_MSG(mode == 1 ? fs.ops == 0 : fs.ops > 0, "%s: %llu ops fell back", what,
                  (unsigned long long)fs.ops);
        ext->set_gemm(0);
    }
    unsetenv("GRAFT_OPENCL_GEMM");
    xd_pair_release(a);
    xd_pair_release(b);
}

int main(void) {
    int rc = xd_init();
    if (rc) return rc;
    have_f64 = xd_stores(GF_F64);
    RUN(test_matmul_graft);
    RUN(test_matmul_auto);
    RUN(test_matmul_clblast);
    RUN(test_matmul_extension);
    RUN(test_softmax);
    RUN(test_layer_norm);
    RUN(test_layer_norm_runs);
    RUN(test_batch_norm);
    RUN(test_norm_gradients);
    return CHECK_REPORT();
}
