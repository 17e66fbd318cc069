/* SPDX-License-Identifier: BSD-3-Clause */
/* test_vulkan_index_conv.c — vulkan:0 against cpu:0 (the reference) for the
 * indexing ops (index_select, gather, scatter_add, index_add, embedding,
 * with repeated indices so accumulation order matters), convolution and its
 * gradients (stride, padding, dilation, groups, bias), and max / average
 * pooling and their gradients (ceil mode, padding, count_include_pad). */
#include "vk_test.h"

static vt_pair indices(int rank, const int64_t *sizes, const double *v) {
    return vt_make(GF_I64, rank, sizes, v, 0, 0, 0, VT_CONTIG);
}

static void test_index(void) {
    gf_dtype dts[] = {GF_F32, GF_F64, GF_I32, GF_I64, GF_BOOL};
    int64_t xs[3] = {5, 6, 4};
    double iv[] = {4, 0, 2, 2, 1, 4, 3};
    int64_t ni = 7;
    vt_pair idx = indices(1, &ni, iv);
    for (int t = 0; t < 5; t++)
        for (int l = 0; l < VT_LAYOUTS; l++)
            for (int dim = 0; dim < 3; dim++) {
                vt_pair x = vt_rand(dts[t], 3, xs, 3, -5, 5, l);
                /* index_select: indices valid for every dim (< 4). */
                double iv2[] = {3, 0, 2, 2, 1, 3, 3};
                vt_pair i2 = indices(1, &ni, iv2);
                gf_tensor *r = gf_index_select(x.c, dim, i2.c), *g = gf_index_select(x.v, dim, i2.v);
                VT_COMPARE("index_select", r, g, 0, 0);
                gf_tensor_release(r);
                gf_tensor_release(g);
                /* gather: an index tensor of x's rank, smaller in other dims. */
                int64_t gs[3] = {4, 5, 3};
                double gv[60];
                for (int k = 0; k < 60; k++) gv[k] = (k * 7 + 3) % (dim == 2 ? 4 : dim == 1 ? 6 : 5);
                vt_pair gi = indices(3, gs, gv);
                r = gf_gather(x.c, dim, gi.c);
                g = gf_gather(x.v, dim, gi.v);
                VT_COMPARE("gather", r, g, 0, 0);
                gf_tensor_release(r);
                gf_tensor_release(g);
                if (dts[t] != GF_BOOL) {
                    vt_pair src = vt_rand(dts[t], 3, gs, 4, -2, 2, (l + 1) % VT_LAYOUTS);
                    r = gf_scatter_add(x.c, dim, gi.c, src.c);
                    g = gf_scatter_add(x.v, dim, gi.v, src.v);
                    VT_COMPARE("scatter_add", r, g, 1e-6, 1e-6);
                    gf_tensor_release(r);
                    gf_tensor_release(g);
                    int64_t ss[3] = {5, 6, 4};
                    ss[dim] = 7;
                    vt_pair s2 = vt_rand(dts[t], 3, ss, 5, -2, 2, l);
                    r = gf_index_add(x.c, dim, i2.c, s2.c);
                    g = gf_index_add(x.v, dim, i2.v, s2.v);
                    VT_COMPARE("index_add", r, g, 1e-6, 1e-6);
                    gf_tensor_release(r);
                    gf_tensor_release(g);
                    vt_release(src);
                    vt_release(s2);
                }
                vt_release(gi);
                vt_release(i2);
                vt_release(x);
            }
    int64_t ws[2] = {5, 8};
    vt_pair w = vt_rand(GF_F32, 2, ws, 6, -1, 1, VT_TRANSPOSED);
    gf_tensor *r = gf_embedding(w.c, idx.c), *g = gf_embedding(w.v, idx.v);
    VT_COMPARE("embedding", r, g, 0, 0);
    gf_tensor_release(r);
    gf_tensor_release(g);
    vt_release(w);
    vt_release(idx);
}

/* An index outside its dim fails the launch (INDEX, naming the op and the
 * value), and the output is left untouched, on the device as on the host. */
static void test_index_errors(void) {
    int64_t xs[2] = {4, 3}, n3 = 3;
    vt_pair x = vt_rand(GF_F32, 2, xs, 1, -1, 1, VT_CONTIG);
    double bad[] = {0, 9, 1}, neg[] = {2, -1, 0};
    vt_pair i1 = indices(1, &n3, bad), i2 = indices(1, &n3, neg);
    gf_tensor *r = gf_index_select(x.v, 0, i1.v);
    CHECK(r == NULL && gf_last_status() == GF_ERR_INDEX);
    CHECK_CONTAINS(gf_last_error(), "index_select");
    CHECK_CONTAINS(gf_last_error(), "9");
    gf_clear_error();
    gf_tensor_release(r);
    r = gf_index_add(x.v, 1, i2.v, x.v);
    CHECK(r == NULL && gf_last_status() == GF_ERR_INDEX);
    CHECK_CONTAINS(gf_last_error(), "-1");
    gf_clear_error();
    gf_tensor_release(r);
    int64_t gs[2] = {1, 3};
    double gv[] = {0, 4, 1}; /* dim 0 has 4 rows: 4 is one past the end */
    vt_pair gi = indices(2, gs, gv);
    r = gf_gather(x.v, 0, gi.v);
    CHECK(r == NULL && gf_last_status() == GF_ERR_INDEX);
    gf_clear_error();
    gf_tensor_release(r);
    /* The device still works afterwards. */
    double ok[] = {3, 0, 3};
    vt_pair i3 = indices(1, &n3, ok);
    gf_tensor *rc = gf_index_select(x.c, 0, i3.c), *rv = gf_index_select(x.v, 0, i3.v);
    VT_COMPARE("index_select after errors", rc, rv, 0, 0);
    gf_tensor_release(rc);
    gf_tensor_release(rv);
    vt_release(x);
    vt_release(i1);
    vt_release(i2);
    vt_release(i3);
    vt_release(gi);
}

static void test_conv(void) {
    struct { int64_t x[4], w[4]; gf_conv2d_opts o; bool bias; } c[] = {
        {{2, 3, 9, 8}, {4, 3, 3, 3}, {{1, 1}, {0, 0}, {1, 1}, 1}, true},
        {{1, 4, 11, 10}, {6, 2, 3, 2}, {{2, 1}, {1, 2}, {1, 2}, 2}, false},
        {{2, 2, 7, 7}, {2, 1, 3, 3}, {{2, 2}, {1, 1}, {2, 1}, 2}, true},
        {{1, 1, 5, 5}, {1, 1, 1, 1}, {{1, 1}, {0, 0}, {1, 1}, 1}, false},
    };
    gf_dtype dts[] = {GF_F32, GF_F64};
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        for (int t = 0; t < 2; t++)
            for (int l = 0; l < VT_LAYOUTS; l++) {
                vt_pair x = vt_rand(dts[t], 4, c[i].x, 1, -1, 1, l);
                vt_pair w = vt_rand(dts[t], 4, c[i].w, 2, -1, 1, (l + 2) % VT_LAYOUTS);
                vt_pair b = vt_rand(dts[t], 1, c[i].w, 3, -1, 1, VT_CONTIG);
                gf_tensor *ry = gf_conv2d(x.c, w.c, c[i].bias ? b.c : NULL, &c[i].o);
                gf_tensor *gy = gf_conv2d(x.v, w.v, c[i].bias ? b.v : NULL, &c[i].o);
                double tol = dts[t] == GF_F32 ? 2e-5 : 1e-12;
                VT_COMPARE("conv2d", ry, gy, tol, tol);
                /* Gradients, from a grad_y of y's shape. */
                int64_t ys[4];
                for (int k = 0; k < 4; k++) ys[k] = ry ? gf_tensor_sizes(ry)[k] : 1;
                vt_pair gyp = vt_rand(dts[t], 4, ys, 4, -1, 1, l);
                gf_tensor *rx = gf_conv2d_backward_input(gyp.c, w.c, c[i].x, &c[i].o);
                gf_tensor *gx = gf_conv2d_backward_input(gyp.v, w.v, c[i].x, &c[i].o);
                VT_COMPARE("conv2d_backward_input", rx, gx, tol, tol);
                gf_tensor *rw = gf_conv2d_backward_weight(gyp.c, x.c, c[i].w, &c[i].o);
                gf_tensor *gw = gf_conv2d_backward_weight(gyp.v, x.v, c[i].w, &c[i].o);
                VT_COMPARE("conv2d_backward_weight", rw, gw, tol, tol);
                gf_tensor *all[] = {ry, gy, rx, gx, rw, gw};
                for (int k = 0; k < 6; k++) gf_tensor_release(all[k]);
                vt_release(gyp);
                vt_release(x);
                vt_release(w);
                vt_release(b);
            }
}

static void test_pool(void) {
    struct { int64_t x[4]; gf_pool2d_opts o; } c[] = {
        {{2, 3, 8, 8}, {{2, 2}, {2, 2}, {0, 0}, {1, 1}, false, true}},
        {{1, 2, 9, 7}, {{3, 3}, {2, 2}, {1, 1}, {1, 1}, true, true}},
        {{1, 2, 9, 7}, {{3, 2}, {2, 1}, {1, 1}, {1, 1}, false, false}},
        {{2, 1, 10, 10}, {{3, 3}, {3, 3}, {1, 0}, {2, 2}, true, false}},
    };
    gf_dtype dts[] = {GF_F32, GF_F64};
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        for (int t = 0; t < 2; t++)
            for (int l = 0; l < VT_LAYOUTS; l++) {
                vt_pair x = vt_rand(dts[t], 4, c[i].x, 8, -3, 3, l);
                gf_tensor *ri, *gi;
                gf_tensor *ry = gf_max_pool2d(x.c, &c[i].o, &ri), *gy = gf_max_pool2d(x.v, &c[i].o, &gi);
                VT_COMPARE("max_pool2d", ry, gy, 0, 0);
                VT_COMPARE("max_pool2d indices", ri, gi, 0, 0);
                int64_t ys[4];
                for (int k = 0; k < 4; k++) ys[k] = ry ? gf_tensor_sizes(ry)[k] : 1;
                vt_pair gyp = vt_rand(dts[t], 4, ys, 9, -1, 1, l);
                gf_tensor *rb = gf_max_pool2d_backward(gyp.c, ri, x.c, &c[i].o);
                gf_tensor *gb = gf_max_pool2d_backward(gyp.v, gi, x.v, &c[i].o);
                double tol = dts[t] == GF_F32 ? 1e-6 : 1e-14;
                VT_COMPARE("max_pool2d_backward", rb, gb, tol, tol);
                gf_tensor *ra = gf_avg_pool2d(x.c, &c[i].o), *ga = gf_avg_pool2d(x.v, &c[i].o);
                VT_COMPARE("avg_pool2d", ra, ga, tol, tol);
                /* Average pooling has no dilation: its own output shape. */
                int64_t as[4];
                for (int k = 0; k < 4; k++) as[k] = ra ? gf_tensor_sizes(ra)[k] : 1;
                vt_pair gap = vt_rand(dts[t], 4, as, 10, -1, 1, l);
                gf_tensor *rab = gf_avg_pool2d_backward(gap.c, x.c, &c[i].o);
                gf_tensor *gab = gf_avg_pool2d_backward(gap.v, x.v, &c[i].o);
                VT_COMPARE("avg_pool2d_backward", rab, gab, tol, tol);
                vt_release(gap);
                gf_tensor *all[] = {ry, gy, ri, gi, rb, gb, ra, ga, rab, gab};
                for (int k = 0; k < 10; k++) gf_tensor_release(all[k]);
                vt_release(gyp);
                vt_release(x);
            }
}

int main(void) {
    int rc = vt_setup();
    if (rc) return rc;
    RUN(test_index);
    RUN(test_index_errors);
    RUN(test_conv);
    RUN(test_pool);
    /* Everything released: the plugins shut down (device, instance) cleanly. */
    CHECK_MSG(gf_shutdown() == GF_OK, "gf_shutdown: %s", gf_last_error());
    return CHECK_REPORT();
}
