/* SPDX-License-Identifier: BSD-3-Clause */
/* test_vulkan_reduce_linalg.c — vulkan:0 against cpu:0 (the reference) for
 * reductions (every op, dims sets, keepdim, strided inputs, long and short
 * lines, 0-size lines), max/min along a dim, matmul (naive and tiled sizes,
 * batched with broadcast batch dims, transposed operands, integers) and the
 * normalisations (softmax, log_softmax, layer_norm, batch_norm). f32 results
 * accumulate in f32 on the device and in double in the reference, so they
 * agree to a relative 1e-5 (sums) rather than exactly. */
#include "graft_vulkan_ext.h"
#include "vk_test.h"

typedef gf_tensor *(*reduce_fn)(const gf_tensor *, const int *, int, bool);
static gf_tensor *var1(const gf_tensor *x, const int *d, int n, bool k) { return gf_var(x, d, n, 1.0, k); }
static gf_tensor *var0(const gf_tensor *x, const int *d, int n, bool k) { return gf_var(x, d, n, 0.0, k); }

static void test_reductions(void) {
    struct { const char *n; reduce_fn f; bool ints; bool f64; } ops[] = {
        {"sum", gf_sum, true, true},   {"mean", gf_mean, false, true}, {"prod", gf_prod, true, true},
        {"amax", gf_amax, true, true}, {"amin", gf_amin, true, true},  {"var", var1, false, true},
        {"var0", var0, false, true},   {"logsumexp", gf_logsumexp, false, true},
    };
    /* (shape, dims) cases: short lines, long lines (workgroup mode), all dims. */
    static const int64_t shapes[][3] = {{6, 7, 5}, {3, 2000, 2}, {4097, 3, 1}, {2, 3, 4}};
    static const int dims[][2] = {{1, -1}, {1, -1}, {0, -1}, {0, 2}};
    static const int nd[] = {1, 1, 1, 2};
    gf_dtype dts[] = {GF_F32, GF_F64, GF_I32, GF_I64};
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++)
        for (int t = 0; t < 4; t++) {
            if (t >= 2 && !ops[o].ints) continue;
            if (t == 1 && !ops[o].f64) continue;
            for (int s = 0; s < 4; s++)
                for (int l = 0; l < VT_LAYOUTS; l++) {
                    bool prod = ops[o].f == gf_prod;
                    vt_pair x = vt_rand(dts[t], 3, shapes[s], 5u + s, prod ? 0.9 : -3,
                                        prod ? 1.1 : 3, l);
                    for (int keep = 0; keep < 2; keep++) {
                        gf_tensor *r = ops[o].f(x.c, dims[s], nd[s], keep);
                        gf_tensor *g = ops[o].f(x.v, dims[s], nd[s], keep);
                        gf_tensor *ra = ops[o].f(x.c, NULL, 0, keep);
                        gf_tensor *ga = ops[o].f(x.v, NULL, 0, keep);
                        char what[128];
                        snprintf(what, sizeof what, "%s %s shape#%d %s", ops[o].n, vt_dtn(dts[t]), s,
                                 vt_layout_name[l]);
                        double tol = dts[t] == GF_F32 ? 2e-5 : dts[t] == GF_F64 ? 1e-12 : 0;
                        VT_COMPARE(what, r, g, tol, tol);
                        VT_COMPARE(what, ra, ga, tol, tol);
                        gf_tensor_release(r);
                        gf_tensor_release(g);
                        gf_tensor_release(ra);
                        gf_tensor_release(ga);
                    }
                    vt_release(x);
                }
        }
    /* bool amax / amin are any / all. */
    int64_t bs[2] = {5, 300};
    vt_pair b = vt_rand(GF_BOOL, 2, bs, 9, 0, 0, VT_TRANSPOSED);
    int d1 = 1;
    gf_tensor *r = gf_amax(b.c, &d1, 1, false), *g = gf_amax(b.v, &d1, 1, false);
    VT_COMPARE("amax bool", r, g, 0, 0);
    gf_tensor_release(r);
    gf_tensor_release(g);
    r = gf_amin(b.c, NULL, 0, false);
    g = gf_amin(b.v, NULL, 0, false);
    VT_COMPARE("amin bool", r, g, 0, 0);
    gf_tensor_release(r);
    gf_tensor_release(g);
    vt_release(b);
    /* Zero-length lines: sum 0, mean NaN, prod 1. */
    int64_t zs[2] = {4, 0};
    vt_pair z = vt_rand(GF_F32, 2, zs, 1, 0, 1, VT_CONTIG);
    reduce_fn zf[] = {gf_sum, gf_mean, gf_prod};
    for (int i = 0; i < 3; i++) {
        r = zf[i](z.c, &d1, 1, false);
        g = zf[i](z.v, &d1, 1, false);
        VT_COMPARE("empty lines", r, g, 0, 0);
        gf_tensor_release(r);
        gf_tensor_release(g);
    }
    vt_release(z);
}

static void test_max_min_dim(void) {
    /* Ties and NaN: the first extreme wins, NaN wins. */
    double v[] = {3, 1, 3, NAN, 2, 2, -1, 5, 5, 0, 0, 0};
    int64_t s[2] = {3, 4};
    vt_pair x = vt_make(GF_F32, 2, s, v, 0, 0, 0, VT_CONTIG);
    for (int dim = 0; dim < 2; dim++) {
        gf_tensor *rv, *ri, *gv, *gi;
        gf_max_dim(x.c, dim, false, &rv, &ri);
        gf_max_dim(x.v, dim, false, &gv, &gi);
        VT_COMPARE("max_dim values", rv, gv, 0, 0);
        VT_COMPARE("max_dim indices", ri, gi, 0, 0);
        gf_tensor_release(rv);
        gf_tensor_release(ri);
        gf_tensor_release(gv);
        gf_tensor_release(gi);
        gf_min_dim(x.c, dim, true, &rv, &ri);
        gf_min_dim(x.v, dim, true, &gv, &gi);
        VT_COMPARE("min_dim values", rv, gv, 0, 0);
        VT_COMPARE("min_dim indices", ri, gi, 0, 0);
        gf_tensor_release(rv);
        gf_tensor_release(ri);
        gf_tensor_release(gv);
        gf_tensor_release(gi);
    }
    vt_release(x);
    gf_dtype dts[] = {GF_F32, GF_F64, GF_I32, GF_I64};
    int64_t big[2] = {3, 3000};
    for (int t = 0; t < 4; t++)
        for (int l = 0; l < VT_LAYOUTS; l++) {
            vt_pair y = vt_rand(dts[t], 2, big, 4, -100, 100, l);
            gf_tensor *ra = gf_argmax(y.c, 1, false), *ga = gf_argmax(y.v, 1, false);
            VT_COMPARE("argmax long lines", ra, ga, 0, 0);
            gf_tensor_release(ra);
            gf_tensor_release(ga);
            ra = gf_argmin(y.c, 0, false);
            ga = gf_argmin(y.v, 0, false);
            VT_COMPARE("argmin short lines", ra, ga, 0, 0);
            gf_tensor_release(ra);
            gf_tensor_release(ga);
            vt_release(y);
        }
}

static void test_matmul(void) {
    struct { int ra, rb; int64_t a[3], b[3]; } c[] = {
        {2, 2, {7, 5}, {5, 3}},            {2, 2, {65, 70}, {70, 129}},
        {2, 2, {128, 256}, {256, 64}},     {3, 3, {4, 33, 17}, {4, 17, 9}},
        {3, 2, {3, 70, 40}, {40, 66}},     {2, 2, {1, 1}, {1, 1}},
        {2, 2, {0, 4}, {4, 5}},            {2, 2, {5, 0}, {0, 6}},
    };
    gf_dtype dts[] = {GF_F32, GF_F64, GF_I32, GF_I64};
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        for (int t = 0; t < 4; t++)
            for (int l = 0; l < VT_LAYOUTS; l++) {
                if (t >= 2 && c[i].a[c[i].ra - 1] > 64) continue; /* integer: small cases */
                vt_pair a = vt_rand(dts[t], c[i].ra, c[i].a, 3, -1, 1, l);
                vt_pair b = vt_rand(dts[t], c[i].rb, c[i].b, 4, -1, 1, (l + 1) % VT_LAYOUTS);
                gf_tensor *r = gf_matmul(a.c, b.c), *g = gf_matmul(a.v, b.v);
                char what[96];
                snprintf(what, sizeof what, "matmul case#%zu %s %s", i, vt_dtn(dts[t]), vt_layout_name[l]);
                double tol = dts[t] == GF_F32 ? 1e-5 : dts[t] == GF_F64 ? 1e-13 : 0;
                VT_COMPARE(what, r, g, tol, tol);
                gf_tensor_release(r);
                gf_tensor_release(g);
                vt_release(a);
                vt_release(b);
            }
}

/* Each matmul shader, forced through the plugin's "vulkan.stats" extension
 * reached by the public gf_device_query_extension, against the reference. */
static void test_matmul_shaders(void) {
    const graft_vulkan_stats_ext *ext = NULL;
    CHECK_MSG(gf_device_query_extension(vt_vk, "vulkan.stats", (void **)&ext) == GF_OK && ext,
              "%s", gf_last_error());
    if (!ext || ext->struct_size < sizeof *ext) return;
    void *none = NULL;
    CHECK(gf_device_query_extension(vt_vk, "vulkan.nosuch", &none) == GF_ERR_NOT_FOUND && !none);
    CHECK_MSG(strstr(gf_last_error(), "vulkan.stats"), "%s", gf_last_error());
    gf_clear_error();
    const int64_t sa[2] = {65, 70}, sb[2] = {70, 129};
    for (int mode = 1; mode <= 3; mode++)
        for (int l = 0; l < VT_LAYOUTS; l++) {
            vt_pair a = vt_rand(GF_F32, 2, sa, 5, -1, 1, l);
            vt_pair b = vt_rand(GF_F32, 2, sb, 6, -1, 1, (l + 1) % VT_LAYOUTS);
            ext->set_matmul_mode(mode);
            gf_tensor *r = gf_matmul(a.c, b.c), *g = gf_matmul(a.v, b.v);
            ext->set_matmul_mode(0);
            char what[64];
            snprintf(what, sizeof what, "matmul shader %d %s", mode, vt_layout_name[l]);
            VT_COMPARE(what, r, g, 1e-5, 1e-5);
            gf_tensor_release(r);
            gf_tensor_release(g);
            vt_release(a);
            vt_release(b);
        }
}

static void test_softmax(void) {
    static const int64_t s[][3] = {{4, 9}, {3, 2000}, {5, 1, 7}};
    static const int r[] = {2, 2, 3};
    gf_dtype dts[] = {GF_F32, GF_F64};
    for (int t = 0; t < 2; t++)
    for (int i = 0; i < 3; i++)
        for (int dim = 0; dim < r[i]; dim++)
            for (int l = 0; l < VT_LAYOUTS; l++) {
                vt_pair x = vt_rand(dts[t], r[i], s[i], 6, -20, 20, l);
                double tol = t ? 1e-13 : 2e-5;
                gf_tensor *rr = gf_softmax(x.c, dim), *g = gf_softmax(x.v, dim);
                VT_COMPARE("softmax", rr, g, t ? 1e-15 : 1e-6, tol);
                gf_tensor_release(rr);
                gf_tensor_release(g);
                rr = gf_log_softmax(x.c, dim);
                g = gf_log_softmax(x.v, dim);
                VT_COMPARE("log_softmax", rr, g, tol, tol);
                gf_tensor_release(rr);
                gf_tensor_release(g);
                vt_release(x);
            }
}

static void test_layer_norm(void) {
    gf_dtype dts[] = {GF_F32, GF_F64};
    int64_t s[3] = {4, 6, 300};
    for (int t = 0; t < 2; t++)
        for (int nr = 1; nr <= 2; nr++)
            for (int l = 0; l < VT_LAYOUTS; l++) {
                vt_pair x = vt_rand(dts[t], 3, s, 2, 50, 60, l); /* far from 0: the variance matters */
                vt_pair w = vt_rand(dts[t], nr, s + 3 - nr, 3, 0.5, 2, VT_CONTIG);
                vt_pair b = vt_rand(dts[t], nr, s + 3 - nr, 4, -1, 1, VT_STEP2);
                gf_tensor *rm, *rr, *gm, *gr;
                gf_tensor *ry = gf_layer_norm(x.c, nr, w.c, b.c, 1e-5, &rm, &rr);
                gf_tensor *gy = gf_layer_norm(x.v, nr, w.v, b.v, 1e-5, &gm, &gr);
                double tol = dts[t] == GF_F32 ? 5e-5 : 1e-11;
                VT_COMPARE("layer_norm y", ry, gy, tol, tol);
                VT_COMPARE("layer_norm mean", rm, gm, tol, tol);
                VT_COMPARE("layer_norm rstd", rr, gr, tol, tol);
                gf_tensor *ry2 = gf_layer_norm(x.c, nr, NULL, NULL, 1e-5, NULL, NULL);
                gf_tensor *gy2 = gf_layer_norm(x.v, nr, NULL, NULL, 1e-5, NULL, NULL);
                VT_COMPARE("layer_norm no affine", ry2, gy2, tol, tol);
                gf_tensor *all[] = {ry, rm, rr, gy, gm, gr, ry2, gy2};
                for (int k = 0; k < 8; k++) gf_tensor_release(all[k]);
                vt_release(x);
                vt_release(w);
                vt_release(b);
            }
}

static void test_batch_norm(void) {
    gf_dtype dts[] = {GF_F32, GF_F64};
    int64_t s[4] = {3, 5, 7, 9}, c = 5;
    for (int t = 0; t < 2; t++)
        for (int training = 0; training < 2; training++)
            for (int l = 0; l < VT_LAYOUTS; l++) {
                vt_pair x = vt_rand(dts[t], 4, s, 7, -2, 5, l);
                vt_pair w = vt_rand(dts[t], 1, &c, 8, 0.5, 2, VT_CONTIG);
                vt_pair b = vt_rand(dts[t], 1, &c, 9, -1, 1, VT_STEP2);
                vt_pair rm = vt_rand(dts[t], 1, &c, 10, -1, 1, VT_CONTIG);
                vt_pair rv = vt_rand(dts[t], 1, &c, 11, 0.5, 2, VT_CONTIG);
                gf_tensor *rsm, *rsi, *gsm, *gsi;
                gf_tensor *ry = gf_batch_norm(x.c, rm.c, rv.c, w.c, b.c, training, 0.1, 1e-5, &rsm, &rsi);
                gf_tensor *gy = gf_batch_norm(x.v, rm.v, rv.v, w.v, b.v, training, 0.1, 1e-5, &gsm, &gsi);
                double tol = dts[t] == GF_F32 ? 5e-5 : 1e-11;
                VT_COMPARE("batch_norm y", ry, gy, tol, tol);
                VT_COMPARE("batch_norm save_mean", rsm, gsm, tol, tol);
                VT_COMPARE("batch_norm save_invstd", rsi, gsi, tol, tol);
                VT_COMPARE("batch_norm running_mean", rm.c, rm.v, tol, tol);
                VT_COMPARE("batch_norm running_var", rv.c, rv.v, tol, tol);
                gf_tensor *all[] = {ry, gy, rsm, rsi, gsm, gsi};
                for (int k = 0; k < 6; k++) gf_tensor_release(all[k]);
                vt_release(x);
                vt_release(w);
                vt_release(b);
                vt_release(rm);
                vt_release(rv);
            }
}

/* A K longer than one lavapipe invocation may loop over is split into
 * dispatches that add into y: ones(64, K) @ ones(K, 64) is K everywhere
 * (exact in f32, and in f16 for K = 40000, a multiple of its spacing 32), a
 * lost or repeated chunk would show. Each of the shaders, forced. */
static void test_matmul_long_k(void) {
    static const struct {
        gf_dtype dt;
        int64_t k;
    } cases[] = {{GF_F32, 70000}, {GF_F16, 40000}};
    gf_device_info info;
    CHECK(gf_device_get_info(vt_vk, &info) == GF_OK);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        if (!(info.dtypes & (1u << cases[c].dt))) continue;
        int64_t sa[2] = {64, cases[c].k}, sb[2] = {cases[c].k, 64};
        gf_tensor *a = gf_ones(sa, 2, cases[c].dt, vt_vk), *b = gf_ones(sb, 2, cases[c].dt, vt_vk);
        gf_tensor *y = a && b ? gf_matmul(a, b) : NULL;
        gf_tensor *y32 = y ? gf_to_dtype(y, GF_F32) : NULL;
        float got[64 * 64];
        CHECK_MSG(y32 && gf_tensor_to_host(y32, got, sizeof got) == GF_OK, "%s", gf_last_error());
        int bad = 0;
        for (int i = 0; i < 64 * 64; i++) bad += got[i] != (float)cases[c].k;
        CHECK_MSG(bad == 0, "%s ones(64, %lld) @ ones(%lld, 64): %d elements differ from K (first %g)",
                  gf_dtype_name(cases[c].dt), (long long)cases[c].k, (long long)cases[c].k, bad,
                  got[0]);
        gf_tensor_release(y32);
        gf_tensor_release(y);
        gf_tensor_release(a);
        gf_tensor_release(b);
    }
}

static double scalar_of(gf_tensor *t) {
    double v = NAN;
    if (!t || gf_tensor_item(t, &v) != GF_OK) fprintf(stderr, "  %s\n", gf_last_error());
    gf_tensor_release(t);
    return v;
}

/* Lines longer than one workgroup may loop over (16.7M elements for a sum
 * on lavapipe, half that for two-pass ops) are reduced in two stages. */
static void test_long_lines(void) {
    const int64_t n = INT64_C(1) << 24; /* 16,777,216: one over the single-pass limit */
    gf_tensor *x = gf_ones(&n, 1, GF_F32, vt_vk);
    CHECK_MSG(x != NULL, "%s", gf_last_error());
    CHECK(scalar_of(gf_sum(x, NULL, 0, false)) == (double)n); /* exact: integers < 2^25 */
    CHECK(scalar_of(gf_mean(x, NULL, 0, false)) == 1.0);
    /* one extreme element far into the line */
    int64_t at = 12345678;
    gf_tensor *e = gf_narrow(x, 0, at, 1);
    CHECK(e && gf_fill_(e, 5.0) == GF_OK);
    CHECK(scalar_of(gf_amax(x, NULL, 0, false)) == 5.0);
    CHECK(e && gf_fill_(e, -3.0) == GF_OK);
    CHECK(scalar_of(gf_amin(x, NULL, 0, false)) == -3.0);
    /* var does not compose from chunks: the plugin refuses the line and the
     * core composes it from mean and sum. Ones with one 5 and one -3: the
     * mean is exactly 1, the squared deviations 16 + 16. */
    CHECK(e && gf_fill_(e, 5.0) == GF_OK);
    gf_tensor *e2 = gf_narrow(x, 0, 99, 1);
    CHECK(e2 && gf_fill_(e2, -3.0) == GF_OK);
    gf_tensor_release(e2);
    for (int corr = 0; corr <= 1; corr++) {
        double want = 32.0 / (double)(n - corr), got = scalar_of(gf_var(x, NULL, 0, corr, false));
        CHECK_MSG(fabs(got - want) <= 1e-5 * want, "var (correction %d): %.9g, expected %.9g",
                  corr, got, want);
    }
    gf_tensor_release(e);
    gf_tensor_release(x);
    /* two-pass logsumexp over rows of 10,485,760 with a kept dim: zeros give
     * log(n); the second row shifted by 2 gives log(n) + 2 */
    int64_t sz[2] = {2, 10485760};
    gf_tensor *z = gf_zeros(sz, 2, GF_F32, vt_vk);
    gf_tensor *row = z ? gf_select(z, 0, 1) : NULL;
    CHECK(row && gf_fill_(row, 2.0) == GF_OK);
    int dim = 1;
    gf_tensor *l = z ? gf_logsumexp(z, &dim, 1, false) : NULL;
    float got[2] = {0, 0};
    CHECK_MSG(l && gf_tensor_to_host(l, got, sizeof got) == GF_OK, "%s", gf_last_error());
    CHECK_CLOSE(got[0], log(10485760.0), 1e-6);
    CHECK_CLOSE(got[1], log(10485760.0) + 2, 1e-6);
    gf_tensor_release(l);
    gf_tensor_release(row);
    gf_tensor_release(z);
}

int main(void) {
    int rc = vt_setup();
    if (rc) return rc;
    RUN(test_reductions);
    RUN(test_max_min_dim);
    RUN(test_matmul);
    RUN(test_matmul_long_k);
    RUN(test_matmul_shaders);
    RUN(test_long_lines);
    RUN(test_softmax);
    RUN(test_layer_norm);
    RUN(test_batch_norm);
    /* Everything released: the plugins shut down (device, instance) cleanly. */
    CHECK_MSG(gf_shutdown() == GF_OK, "gf_shutdown: %s", gf_last_error());
    return CHECK_REPORT();
}
