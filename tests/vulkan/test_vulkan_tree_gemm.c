/* SPDX-License-Identifier: BSD-3-Clause */
/* test_vulkan_tree_gemm.c — vulkan:0 against cpu:0 (the reference) for the
 * tree reductions (f32 sum, mean, amax, amin, var, logsumexp: a workgroup
 * per line, lines in chunks combined by a second dispatch, vec4 and strided
 * reads, NaN and inf, empty dims), softmax / log_softmax (a workgroup per
 * line, and lines longer than one workgroup's loop budget in chunks after
 * a tree logsumexp), layer_norm by lines, batch_norm by channels, and the
 * convolutions as GEMMs, and the vec4 form of the f32 elementwise ops (every stride, padding,
 * dilation and group setting; im2col tiles split across images and across
 * the positions of one image; the direct kernels too). CTest runs it twice:
 * with the device's subgroup arithmetic and with GRAFT_VULKAN_NO_SUBGROUPS=1. */
#define _POSIX_C_SOURCE 200112L /* setenv */
#include "vk_test.h"

typedef gf_tensor *(*reduce_fn)(const gf_tensor *, const int *, int, bool);
static gf_tensor *var1(const gf_tensor *x, const int *d, int n, bool k) { return gf_var(x, d, n, 1.0, k); }
static gf_tensor *var0(const gf_tensor *x, const int *d, int n, bool k) { return gf_var(x, d, n, 0.0, k); }

/* x: a [rows, cols] pair in a layout; layout 3: contiguous but starting one
 * element in (a slice of [rows, cols + 1]), so rows are not 16-byte aligned. */
static vt_pair make2(int64_t rows, int64_t cols, uint32_t seed, double lo, double hi, int layout) {
    if (layout < VT_LAYOUTS) return vt_rand(GF_F32, 2, (int64_t[]){rows, cols}, seed, lo, hi, layout);
    vt_pair w = vt_rand(GF_F32, 2, (int64_t[]){rows, cols + 1}, seed, lo, hi, VT_CONTIG);
    vt_pair s = {gf_slice(w.c, 1, 1, cols + 1, 1), gf_slice(w.v, 1, 1, cols + 1, 1)};
    vt_release(w);
    return s;
}
static const char *const layout_names[4] = {"contiguous", "transposed", "step-2", "offset-1"};

static void test_tree_reductions(void) {
    struct { const char *n; reduce_fn f; } ops[] = {
        {"sum", gf_sum}, {"mean", gf_mean}, {"amax", gf_amax}, {"amin", gf_amin},
        {"var", var1},   {"var0", var0},    {"logsumexp", gf_logsumexp},
    };
    /* Lines of one element to lines cut into many chunks (non-powers of two,
     * a prime), few and many lines. */
    static const int64_t shapes[][2] = {{1, 1},    {3, 63},     {5, 64},  {2, 65},   {7, 1000},
                                        {3, 4097}, {1, 100003}, {2, 300001}, {600, 257}};
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int l = 0; l < 4; l++) {
                if (shapes[s][1] > 100000 && l == 1) continue; /* transposed long lines: slow on the reference */
                vt_pair x = make2(shapes[s][0], shapes[s][1], 11u + (uint32_t)s, 0.5, 1.5, l);
                int d1 = 1, d0 = 0;
                gf_tensor *r[3] = {ops[o].f(x.c, &d1, 1, false), ops[o].f(x.c, NULL, 0, false),
                                   ops[o].f(x.c, &d0, 1, true)};
                gf_tensor *g[3] = {ops[o].f(x.v, &d1, 1, false), ops[o].f(x.v, NULL, 0, false),
                                   ops[o].f(x.v, &d0, 1, true)};
                for (int k = 0; k < 3; k++) {
                    char what[128];
                    snprintf(what, sizeof what, "%s [%lld, %lld] %s %s", ops[o].n,
                             (long long)shapes[s][0], (long long)shapes[s][1], layout_names[l],
                             k == 0 ? "dim 1" : k == 1 ? "all" : "dim 0");
                    VT_COMPARE(what, r[k], g[k], 1e-6, 2e-5);
                    gf_tensor_release(r[k]);
                    gf_tensor_release(g[k]);
                }
                vt_release(x);
            }
}

/* NaN, inf and -inf in some lines, short and chunked; empty dims. */
static void test_tree_special(void) {
    struct { const char *n; reduce_fn f; } ops[] = {
        {"sum", gf_sum}, {"mean", gf_mean}, {"amax", gf_amax}, {"amin", gf_amin},
        {"var", var1},   {"logsumexp", gf_logsumexp},
    };
    static const int64_t lens[] = {100, 20000};
    for (int li = 0; li < 2; li++) {
        int64_t n = lens[li], sz[2] = {5, n};
        double *v = malloc((size_t)(5 * n) * sizeof(double));
        for (int64_t i = 0; i < 5 * n; i++) v[i] = vt_value(GF_F32, i, 3, -2, 2);
        v[0 * n + n / 3] = NAN;                                  /* row 0: a NaN */
        v[1 * n + n - 1] = INFINITY;                             /* row 1: +inf */
        v[2 * n + 7] = -INFINITY;                                /* row 2: -inf */
        for (int64_t j = 0; j < n; j++) v[3 * n + j] = -INFINITY; /* row 3: all -inf */
        vt_pair x = vt_make(GF_F32, 2, sz, v, 0, 0, 0, VT_CONTIG);
        free(v);
        for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
            int d1 = 1;
            gf_tensor *r = ops[o].f(x.c, &d1, 1, false), *g = ops[o].f(x.v, &d1, 1, false);
            char what[96];
            snprintf(what, sizeof what, "%s with NaN / inf, lines of %lld", ops[o].n, (long long)n);
            VT_COMPARE(what, r, g, 1e-6, 2e-5);
            gf_tensor_release(r);
            gf_tensor_release(g);
        }
        vt_release(x);
    }
    /* Empty: lines of zero elements, and zero lines. */
    static const int64_t empty[][2] = {{3, 0}, {0, 5000}};
    for (int e = 0; e < 2; e++) {
        vt_pair x = make2(empty[e][0], empty[e][1], 5, 0, 1, VT_CONTIG);
        reduce_fn fs[] = {gf_sum, gf_mean, var1, gf_logsumexp};
        for (int k = 0; k < 4; k++) {
            int d1 = 1;
            gf_tensor *r = fs[k](x.c, &d1, 1, false), *g = fs[k](x.v, &d1, 1, false);
            VT_COMPARE("reduction over an empty shape", r, g, 0, 0);
            gf_tensor_release(r);
            gf_tensor_release(g);
        }
        vt_release(x);
    }
}

static void test_softmax_lines(void) {
    /* The long ones exceed one workgroup's loop budget on lavapipe (vec4
     * reads: 2.6M elements; strided: 700k) and go in chunks. */
    static const int64_t shapes[][2] = {{4, 1}, {3, 5}, {8, 1024}, {5, 1023}, {1, 2600001}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int l = 0; l < 4; l++) {
            int64_t cols = shapes[s][1];
            if (cols > 1000000 && l == 1) continue;
            if (cols > 1000000 && l == 2) cols = 700001;
            vt_pair x = make2(shapes[s][0], cols, 21u + (uint32_t)s, -4, 4, l);
            for (int dim = 0; dim < 2; dim++) {
                if (dim == 0 && cols > 1000000) continue;
                gf_tensor *r = gf_softmax(x.c, dim), *g = gf_softmax(x.v, dim);
                gf_tensor *rl = gf_log_softmax(x.c, dim), *gl = gf_log_softmax(x.v, dim);
                char what[128];
                snprintf(what, sizeof what, "softmax [%lld, %lld] %s dim %d",
                         (long long)shapes[s][0], (long long)cols, layout_names[l], dim);
                VT_COMPARE(what, r, g, 1e-9, 2e-5);
                snprintf(what, sizeof what, "log_softmax [%lld, %lld] %s dim %d",
                         (long long)shapes[s][0], (long long)cols, layout_names[l], dim);
                VT_COMPARE(what, rl, gl, 1e-6, 2e-5);
                gf_tensor *all[] = {r, g, rl, gl};
                for (int k = 0; k < 4; k++) gf_tensor_release(all[k]);
            }
            vt_release(x);
        }
    /* A NaN line, a line with -inf, an all -inf line: lines kept in
     * registers (1,000) and lines in three passes (3,000). */
    for (int64_t len = 1000; len <= 3000; len += 2000) {
        int64_t sz[2] = {3, len};
        double *v = malloc((size_t)(3 * len) * sizeof(double));
        for (int64_t i = 0; i < 3 * len; i++) v[i] = vt_value(GF_F32, i, 4, -3, 3);
        v[17] = NAN;
        v[len + 5] = -INFINITY;
        for (int64_t j = 0; j < len; j++) v[2 * len + j] = -INFINITY;
        vt_pair x = vt_make(GF_F32, 2, sz, v, 0, 0, 0, VT_CONTIG);
        free(v);
        gf_tensor *r = gf_softmax(x.c, 1), *g = gf_softmax(x.v, 1);
        gf_tensor *rl = gf_log_softmax(x.c, 1), *gl = gf_log_softmax(x.v, 1);
        VT_COMPARE("softmax with NaN / -inf", r, g, 1e-9, 2e-5);
        VT_COMPARE("log_softmax with NaN / -inf", rl, gl, 1e-6, 2e-5);
        gf_tensor *all[] = {r, g, rl, gl};
        for (int k = 0; k < 4; k++) gf_tensor_release(all[k]);
        vt_release(x);
    }
}

/* layer_norm by lines: vec4 with weight and bias, strided, offset by one,
 * long lines. */
static void test_layer_norm_lines(void) {
    static const int64_t shapes[][2] = {{6, 5}, {5, 1024}, {3, 5001}, {2, 70001}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int l = 0; l < 4; l++) {
            vt_pair x = make2(shapes[s][0], shapes[s][1], 31u + (uint32_t)s, 40, 50, l);
            vt_pair w = vt_rand(GF_F32, 1, &shapes[s][1], 3, 0.5, 2, l == 2 ? VT_STEP2 : VT_CONTIG);
            vt_pair b = vt_rand(GF_F32, 1, &shapes[s][1], 4, -1, 1, VT_CONTIG);
            gf_tensor *rm, *rr, *gm, *gr;
            gf_tensor *ry = gf_layer_norm(x.c, 1, w.c, b.c, 1e-5, &rm, &rr);
            gf_tensor *gy = gf_layer_norm(x.v, 1, w.v, b.v, 1e-5, &gm, &gr);
            char what[128];
            snprintf(what, sizeof what, "layer_norm [%lld, %lld] %s", (long long)shapes[s][0],
                     (long long)shapes[s][1], layout_names[l]);
            VT_COMPARE(what, ry, gy, 5e-5, 5e-5);
            VT_COMPARE(what, rm, gm, 5e-5, 5e-5);
            VT_COMPARE(what, rr, gr, 5e-5, 5e-5);
            gf_tensor *all[] = {ry, gy, rm, rr, gm, gr};
            for (int k = 0; k < 6; k++) gf_tensor_release(all[k]);
            vt_release(x);
            vt_release(w);
            vt_release(b);
        }
}

/* batch_norm by channels: vec4 runs (planes of 64), odd planes, [N, C],
 * transposed; training (running stats updated) and evaluation. */
static void test_batch_norm_channels(void) {
    static const int64_t shapes[][4] = {{4, 3, 8, 8}, {2, 5, 7, 9}, {16, 6, 1, 1}, {3, 4, 20, 36}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int l = 0; l < 2; l++)
            for (int training = 0; training < 2; training++) {
                int64_t c = shapes[s][1];
                vt_pair x = vt_rand(GF_F32, 4, shapes[s], 41u + (uint32_t)s, -2, 5, l);
                vt_pair w = vt_rand(GF_F32, 1, &c, 8, 0.5, 2, VT_CONTIG);
                vt_pair b = vt_rand(GF_F32, 1, &c, 9, -1, 1, VT_CONTIG);
                vt_pair rm = vt_rand(GF_F32, 1, &c, 10, -1, 1, VT_CONTIG);
                vt_pair rv = vt_rand(GF_F32, 1, &c, 11, 0.5, 2, VT_CONTIG);
                gf_tensor *rsm, *rsi, *gsm, *gsi;
                gf_tensor *ry = gf_batch_norm(x.c, rm.c, rv.c, w.c, b.c, training, 0.1, 1e-5, &rsm, &rsi);
                gf_tensor *gy = gf_batch_norm(x.v, rm.v, rv.v, w.v, b.v, training, 0.1, 1e-5, &gsm, &gsi);
                char what[128];
                snprintf(what, sizeof what, "batch_norm case %zu %s %s", s, vt_layout_name[l],
                         training ? "training" : "evaluation");
                VT_COMPARE(what, ry, gy, 5e-5, 5e-5);
                VT_COMPARE(what, rsm, gsm, 5e-5, 5e-5);
                VT_COMPARE(what, rsi, gsi, 5e-5, 5e-5);
                VT_COMPARE(what, rm.c, rm.v, 5e-5, 5e-5);
                VT_COMPARE(what, rv.c, rv.v, 5e-5, 5e-5);
                gf_tensor *all[] = {ry, gy, rsm, rsi, gsm, gsi};
                for (int k = 0; k < 6; k++) gf_tensor_release(all[k]);
                vt_pair ps[] = {x, w, b, rm, rv};
                for (int k = 0; k < 5; k++) vt_release(ps[k]);
            }
}

/* Unary and binary f32 ops on contiguous tensors (vec4 with a tail of 0 to
 * 3), and on ones starting one element in (one by one). */
static void test_elementwise_vec4(void) {
    static const int64_t lens[] = {1, 4, 7, 1026, 100003};
    for (int i = 0; i < 5; i++)
        for (int l = 0; l < 4; l += 3) {
            vt_pair a = make2(1, lens[i], 51u + (uint32_t)i, -2, 2, l);
            vt_pair b = make2(1, lens[i], 61u + (uint32_t)i, 0.5, 2, l);
            gf_tensor *r[3] = {gf_exp(a.c), gf_mul(a.c, b.c), gf_div(a.c, b.c)};
            gf_tensor *g[3] = {gf_exp(a.v), gf_mul(a.v, b.v), gf_div(a.v, b.v)};
            for (int k = 0; k < 3; k++) {
                char what[96];
                snprintf(what, sizeof what, "%s of %lld %s", k == 0 ? "exp" : k == 1 ? "mul" : "div",
                         (long long)lens[i], layout_names[l]);
                VT_COMPARE(what, r[k], g[k], 1e-6, 1e-6);
                gf_tensor_release(r[k]);
                gf_tensor_release(g[k]);
            }
            vt_release(a);
            vt_release(b);
        }
}

static void test_conv_gemm(void) {
    struct { int64_t x[4], w[4]; gf_conv2d_opts o; bool bias; } c[] = {
        {{2, 3, 9, 8}, {4, 3, 3, 3}, {{1, 1}, {0, 0}, {1, 1}, 1}, true},
        {{1, 4, 11, 10}, {6, 2, 3, 2}, {{2, 1}, {1, 2}, {1, 2}, 2}, false},
        {{2, 2, 7, 7}, {2, 1, 3, 3}, {{2, 2}, {1, 1}, {2, 1}, 2}, true},
        {{3, 6, 12, 9}, {6, 1, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, 6}, true},  /* depthwise */
        {{2, 4, 10, 13}, {8, 4, 1, 1}, {{1, 1}, {0, 0}, {1, 1}, 1}, false}, /* 1x1 */
        {{2, 5, 17, 15}, {7, 5, 5, 3}, {{3, 2}, {2, 1}, {1, 3}, 1}, true},
        {{3, 8, 30, 30}, {16, 8, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, 1}, true},
        {{2, 6, 13, 11}, {9, 2, 2, 4}, {{1, 3}, {0, 3}, {3, 1}, 3}, false},
    };
    /* GEMM with the default tile, with tiles of a few images, with tiles
     * of part of one image (4 KiB), and the direct kernels. */
    static const char *const modes[][2] = {{"gemm", ""}, {"gemm", "65536"}, {"gemm", "4096"},
                                           {"direct", ""}};
    for (int m = 0; m < 4; m++) {
        setenv("GRAFT_VULKAN_CONV", modes[m][0], 1);
        if (modes[m][1][0]) setenv("GRAFT_VULKAN_CONV_TILE", modes[m][1], 1);
        else unsetenv("GRAFT_VULKAN_CONV_TILE");
        for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
            for (int l = 0; l < 2; l++) {
                vt_pair x = vt_rand(GF_F32, 4, c[i].x, 1 + (uint32_t)i, -1, 1, l);
                vt_pair w = vt_rand(GF_F32, 4, c[i].w, 2, -1, 1, VT_CONTIG);
                vt_pair b = vt_rand(GF_F32, 1, c[i].w, 3, -1, 1, VT_CONTIG);
                char what[160];
                snprintf(what, sizeof what, "case %zu (%s, tile %s, x %s)", i, modes[m][0],
                         modes[m][1][0] ? modes[m][1] : "default", vt_layout_name[l]);
                gf_tensor *ry = gf_conv2d(x.c, w.c, c[i].bias ? b.c : NULL, &c[i].o);
                gf_tensor *gy = gf_conv2d(x.v, w.v, c[i].bias ? b.v : NULL, &c[i].o);
                char w2[200];
                snprintf(w2, sizeof w2, "conv2d %s", what);
                VT_COMPARE(w2, ry, gy, 1e-4, 1e-4);
                int64_t ys[4];
                for (int k = 0; k < 4; k++) ys[k] = ry ? gf_tensor_sizes(ry)[k] : 1;
                vt_pair gyp = vt_rand(GF_F32, 4, ys, 4, -1, 1, l);
                gf_tensor *rx = gf_conv2d_backward_input(gyp.c, w.c, c[i].x, &c[i].o);
                gf_tensor *gx = gf_conv2d_backward_input(gyp.v, w.v, c[i].x, &c[i].o);
                snprintf(w2, sizeof w2, "conv2d_backward_input %s", what);
                VT_COMPARE(w2, rx, gx, 1e-4, 1e-4);
                gf_tensor *rw = gf_conv2d_backward_weight(gyp.c, x.c, c[i].w, &c[i].o);
                gf_tensor *gw = gf_conv2d_backward_weight(gyp.v, x.v, c[i].w, &c[i].o);
                snprintf(w2, sizeof w2, "conv2d_backward_weight %s", what);
                VT_COMPARE(w2, rw, gw, 1e-4, 1e-4);
                gf_tensor *all[] = {ry, gy, rx, gx, rw, gw};
                for (int k = 0; k < 6; k++) gf_tensor_release(all[k]);
                vt_release(gyp);
                vt_release(x);
                vt_release(w);
                vt_release(b);
            }
    }
    unsetenv("GRAFT_VULKAN_CONV");
    unsetenv("GRAFT_VULKAN_CONV_TILE");
}

int main(void) {
    int rc = vt_setup();
    if (rc) return rc;
    RUN(test_tree_reductions);
    RUN(test_tree_special);
    RUN(test_softmax_lines);
    RUN(test_layer_norm_lines);
    RUN(test_batch_norm_channels);
    RUN(test_elementwise_vec4);
    RUN(test_conv_gemm);
    CHECK_MSG(gf_shutdown() == GF_OK, "gf_shutdown: %s", gf_last_error());
    return CHECK_REPORT();
}
