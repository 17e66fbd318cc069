/* SPDX-License-Identifier: BSD-3-Clause */
/* test_ocl_conv_pool.c — conv2d and its two gradients, max and average
 * pooling and theirs, on the OpenCL device against the reference plugin:
 * strides, padding, dilation, groups, bias, ceil mode, count_include_pad,
 * strided (transposed, sliced) inputs, f32 and f64. The convolution runs in
 * the form GRAFT_OPENCL_CONV picks (see tests/opencl/CMakeLists.txt). */
#include "xd_test.h"

static bool have_f64;

typedef struct conv_case {
    int64_t x[4], w[4];
    gf_conv2d_opts o;
    bool bias;
} conv_case;

static const conv_case conv_cases[] = {
    {{2, 3, 7, 6}, {4, 3, 3, 3}, {{1, 1}, {0, 0}, {1, 1}, 1}, true},
    {{1, 4, 9, 8}, {6, 2, 3, 2}, {{2, 1}, {1, 0}, {1, 2}, 2}, false},
    {{2, 2, 5, 5}, {2, 1, 3, 3}, {{1, 2}, {2, 1}, {2, 1}, 2}, true},
    {{1, 1, 4, 4}, {1, 1, 1, 1}, {{1, 1}, {0, 0}, {1, 1}, 1}, true},
    /* Large enough (>= 2^16 multiply-adds) for the GEMM forms the plugin
     * picks by shape (GRAFT_OPENCL_CONV=auto); CMake runs this suite again
     * with each form forced, and with tiny tiles. */
    {{3, 16, 9, 11}, {24, 16, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, 1}, true},
    {{2, 16, 10, 9}, {16, 8, 3, 3}, {{2, 1}, {1, 2}, {1, 2}, 2}, true},
    {{3, 1, 13, 15}, {16, 1, 5, 3}, {{1, 1}, {2, 1}, {2, 1}, 1}, false},
    {{3, 12, 7, 20}, {24, 4, 3, 3}, {{1, 3}, {0, 1}, {1, 1}, 3}, true},
    /* padding beyond the dilated kernel's reach, two vectors of outputs per row */
    {{2, 9, 6, 33}, {18, 9, 2, 4}, {{1, 1}, {3, 0}, {1, 3}, 1}, false},
};

static void test_conv(void) {
    for (int di = 0; di < 2; di++) {
        gf_dtype dt = di ? GF_F64 : GF_F32;
        if (dt == GF_F64 && !have_f64) continue;
        xd_tol tol = dt == GF_F32 ? (xd_tol){3e-5, 3e-5} : xd_default_tol(dt);
        for (size_t ci = 0; ci < sizeof conv_cases / sizeof conv_cases[0]; ci++) {
            const conv_case *cc = &conv_cases[ci];
            xd_layout L = (xd_layout)((ci + (size_t)di) % 4);
            xd_seed(ci * 3 + (uint64_t)di);
            xd_pair x = xd_pair_rand(dt, 4, cc->x, XV_SMALL, L);
            xd_pair w = xd_pair_rand(dt, 4, cc->w, XV_SMALL, XL_STEP);
            xd_pair b = xd_pair_rand(dt, 1, &cc->w[0], XV_SMALL, XL_CONTIG);
            char what[96];
            snprintf(what, sizeof what, "conv2d %s case %zu [%s]", xd_dtn(dt), ci, xd_layout_name[L]);
            gf_tensor *yo = gf_conv2d(x.d, w.d, cc->bias ? b.d : NULL, &cc->o);
            gf_tensor *yr = gf_conv2d(x.r, w.r, cc->bias ? b.r : NULL, &cc->o);
            xd_check_tol(what, yo, yr, tol);
            /* The gradients, from a grad_y of y's shape. */
            if (yo && yr) {
                xd_pair gy = xd_pair_rand(dt, 4, gf_tensor_sizes(yr), XV_SMALL, XL_TRANSPOSED);
                snprintf(what, sizeof what, "conv2d_backward_input %s case %zu", xd_dtn(dt), ci);
                xd_check_pair_tol(what, gf_conv2d_backward_input(gy.d, w.d, cc->x, &cc->o),
                                  gf_conv2d_backward_input(gy.r, w.r, cc->x, &cc->o), tol);
                snprintf(what, sizeof what, "conv2d_backward_weight %s case %zu", xd_dtn(dt), ci);
                xd_check_pair_tol(what, gf_conv2d_backward_weight(gy.d, x.d, cc->w, &cc->o),
                                  gf_conv2d_backward_weight(gy.r, x.r, cc->w, &cc->o), tol);
                xd_pair_release(gy);
            }
            gf_tensor_release(yo);
            gf_tensor_release(yr);
            xd_pair_release(x);
            xd_pair_release(w);
            xd_pair_release(b);
        }
    }
}

typedef struct pool_case {
    int64_t x[4];
    gf_pool2d_opts o;
} pool_case;

static const pool_case pool_cases[] = {
    {{2, 3, 8, 8}, {{2, 2}, {0, 0}, {0, 0}, {1, 1}, false, true}},
    {{1, 2, 7, 9}, {{3, 3}, {2, 2}, {1, 1}, {1, 1}, true, false}},
    {{2, 2, 9, 7}, {{3, 2}, {2, 1}, {1, 0}, {2, 1}, false, true}},
    {{1, 3, 6, 5}, {{3, 3}, {2, 2}, {1, 1}, {1, 1}, true, true}},
    {{1, 1, 5, 5}, {{2, 2}, {1, 1}, {1, 1}, {1, 1}, false, false}},
    /* 2x2 and 3x3 (their own kernels) dilated, unequal strides, ceil mode;
     * a 1x4 window (the row kernel) */
    {{2, 2, 9, 10}, {{2, 2}, {1, 2}, {1, 0}, {2, 3}, true, false}},
    {{1, 2, 11, 8}, {{3, 3}, {1, 3}, {1, 1}, {2, 2}, false, true}},
    {{1, 2, 6, 9}, {{1, 4}, {1, 3}, {0, 2}, {1, 1}, true, true}},
};

static void test_pool(void) {
    for (int di = 0; di < 2; di++) {
        gf_dtype dt = di ? GF_F64 : GF_F32;
        if (dt == GF_F64 && !have_f64) continue;
        xd_tol tol = dt == GF_F32 ? (xd_tol){1e-5, 1e-5} : xd_default_tol(dt);
        for (size_t pi = 0; pi < sizeof pool_cases / sizeof pool_cases[0]; pi++) {
            const pool_case *pc = &pool_cases[pi];
            xd_layout L = (xd_layout)((pi + (size_t)di) % 4);
            xd_seed(pi * 5 + (uint64_t)di);
            /* Small integers: ties, where the first maximum must win. */
            xd_pair x = xd_pair_rand(dt, 4, pc->x, pi % 2 ? XV_GENERAL : XV_SMALL, L);
            char what[96];
            gf_tensor *io = NULL, *ir = NULL;
            gf_tensor *yo = gf_max_pool2d(x.d, &pc->o, &io), *yr = gf_max_pool2d(x.r, &pc->o, &ir);
            snprintf(what, sizeof what, "max_pool2d %s case %zu [%s]", xd_dtn(dt), pi,
                     xd_layout_name[L]);
            xd_check_tol(what, yo, yr, tol);
            snprintf(what, sizeof what, "max_pool2d indices %s case %zu", xd_dtn(dt), pi);
            xd_check(what, io, ir);
            if (yo && yr && io && ir) {
                xd_pair gy = xd_pair_rand(dt, 4, gf_tensor_sizes(yr), XV_SMALL, XL_STEP);
                snprintf(what, sizeof what, "max_pool2d_backward %s case %zu", xd_dtn(dt), pi);
                xd_check_pair_tol(what, gf_max_pool2d_backward(gy.d, io, x.d, &pc->o),
                                  gf_max_pool2d_backward(gy.r, ir, x.r, &pc->o), tol);
                xd_pair_release(gy);
            }
            gf_tensor_release(yo);
            gf_tensor_release(yr);
            gf_tensor_release(io);
            gf_tensor_release(ir);
            gf_pool2d_opts ao = pc->o;
            ao.dilation[0] = ao.dilation[1] = 1;
            yo = gf_avg_pool2d(x.d, &ao);
            yr = gf_avg_pool2d(x.r, &ao);
            snprintf(what, sizeof what, "avg_pool2d %s case %zu [%s]", xd_dtn(dt), pi,
                     xd_layout_name[L]);
            xd_check_tol(what, yo, yr, tol);
            if (yo && yr) {
                xd_pair gy = xd_pair_rand(dt, 4, gf_tensor_sizes(yr), XV_SMALL, XL_TRANSPOSED);
                snprintf(what, sizeof what, "avg_pool2d_backward %s case %zu", xd_dtn(dt), pi);
                xd_check_pair_tol(what, gf_avg_pool2d_backward(gy.d, x.d, &ao),
                                  gf_avg_pool2d_backward(gy.r, x.r, &ao), tol);
                xd_pair_release(gy);
            }
            gf_tensor_release(yo);
            gf_tensor_release(yr);
            xd_pair_release(x);
        }
    }
}

int main(void) {
    int rc = xd_init();
    if (rc) return rc;
    have_f64 = xd_stores(GF_F64);
    RUN(test_conv);
    RUN(test_pool);
    return CHECK_REPORT();
}
