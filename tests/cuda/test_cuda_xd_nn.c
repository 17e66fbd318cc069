/* SPDX-License-Identifier: BSD-3-Clause */
/* test_cuda_xd_nn.c — convolution, pooling, batch_norm, the indexing ops and
 * a gradient through all of them, on cuda:0 against the reference plugin.
 *
 * CTest runs this program twice: once as is (cuDNN where the build has it)
 * and once with GRAFT_CUDA_CUDNN=0, so the plugin's own convolution kernels
 * are held to the same oracle. Skipped (exit 77) without a CUDA device. */
#include "cu_xd.h"

/* ------------------------------------------------------------ convolution */
typedef struct conv_case {
    int64_t n, ci, h, w, co, kh, kw;
    gf_conv2d_opts o;
    bool bias;
} conv_case;

static const conv_case conv_cases[] = {
    {2, 3, 9, 11, 4, 3, 3, {{1, 1}, {0, 0}, {1, 1}, 1}, true},
    {1, 4, 10, 8, 6, 3, 2, {{2, 1}, {1, 2}, {1, 1}, 2}, false},
    {2, 2, 12, 12, 2, 3, 3, {{1, 2}, {2, 1}, {2, 3}, 1}, true},
    {3, 6, 7, 9, 6, 1, 1, {{1, 1}, {0, 0}, {1, 1}, 6}, true},  /* depthwise 1x1 */
    {1, 3, 5, 5, 5, 5, 5, {{1, 1}, {2, 2}, {1, 1}, 1}, false}, /* kernel as large as x */
    {2, 8, 16, 16, 16, 3, 3, {{2, 2}, {1, 1}, {1, 1}, 4}, true},
};

static int64_t conv_out(int64_t in, int64_t k, int s, int p, int d) {
    return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}

static void test_conv(void) {
    const gf_dtype fl[] = {GF_F32, GF_F64};
    for (int f = 0; f < 2; f++)
        for (size_t c = 0; c < sizeof conv_cases / sizeof conv_cases[0]; c++) {
            const conv_case *cc = &conv_cases[c];
            gf_dtype dt = fl[f];
            xd_seed(c * 10 + (uint64_t)f);
            int64_t xs[4] = {cc->n, cc->ci, cc->h, cc->w};
            int64_t ws[4] = {cc->co, cc->ci / cc->o.groups, cc->kh, cc->kw};
            int64_t ho = conv_out(cc->h, cc->kh, cc->o.stride[0], cc->o.padding[0], cc->o.dilation[0]);
            int64_t wo = conv_out(cc->w, cc->kw, cc->o.stride[1], cc->o.padding[1], cc->o.dilation[1]);
            int64_t ys[4] = {cc->n, cc->co, ho, wo};
            /* x as a view (transposed H and W), w contiguous, grad_y step-sliced. */
            xd_pair x = xd_pair_rand(dt, 4, xs, XV_SMALL, c % 2 ? XL_TRANSPOSED : XL_CONTIG);
            xd_pair w = xd_pair_rand(dt, 4, ws, XV_SMALL, XL_CONTIG);
            xd_pair b = xd_pair_rand(dt, 1, SZ(cc->co), XV_SMALL, XL_OFFSET);
            xd_pair gy = xd_pair_rand(dt, 4, ys, XV_SMALL, XL_STEP);
            int64_t k = ws[1] * cc->kh * cc->kw;
            char what[128];
            snprintf(what, sizeof what, "conv2d %s case %zu", gf_dtype_name(dt), c);
            xd_check_pair_tol(what, gf_conv2d(x.d, w.d, cc->bias ? b.d : NULL, &cc->o),
                              gf_conv2d(x.r, w.r, cc->bias ? b.r : NULL, &cc->o), xd_sum_tol(dt, k));
            snprintf(what, sizeof what, "conv2d_backward_input %s case %zu", gf_dtype_name(dt), c);
            xd_check_pair_tol(what, gf_conv2d_backward_input(gy.d, w.d, xs, &cc->o),
                              gf_conv2d_backward_input(gy.r, w.r, xs, &cc->o),
                              xd_sum_tol(dt, cc->co * cc->kh * cc->kw));
            snprintf(what, sizeof what, "conv2d_backward_weight %s case %zu", gf_dtype_name(dt), c);
            xd_check_pair_tol(what, gf_conv2d_backward_weight(gy.d, x.d, ws, &cc->o),
                              gf_conv2d_backward_weight(gy.r, x.r, ws, &cc->o),
                              xd_sum_tol(dt, cc->n * ho * wo));
            xd_pair_release(x);
            xd_pair_release(w);
            xd_pair_release(b);
            xd_pair_release(gy);
        }
}

/* ------------------------------------------------------------ pooling */
typedef struct pool_case {
    int64_t n, c, h, w;
    gf_pool2d_opts o;
} pool_case;

static const pool_case pool_cases[] = {
    {2, 3, 8, 9, {{2, 2}, {2, 2}, {0, 0}, {1, 1}, false, true}},
    {1, 2, 9, 7, {{3, 3}, {2, 2}, {1, 1}, {1, 1}, true, true}},
    {2, 2, 10, 11, {{3, 2}, {1, 2}, {1, 1}, {2, 1}, false, false}},
    {1, 4, 7, 7, {{3, 3}, {3, 3}, {1, 0}, {1, 1}, true, false}},
};

static void test_pool(void) {
    const gf_dtype fl[] = {GF_F32, GF_F64};
    for (int f = 0; f < 2; f++)
        for (size_t c = 0; c < sizeof pool_cases / sizeof pool_cases[0]; c++) {
            const pool_case *pc = &pool_cases[c];
            gf_dtype dt = fl[f];
            xd_seed(c + 77 + (uint64_t)f);
            int64_t xs[4] = {pc->n, pc->c, pc->h, pc->w};
            /* Ties (a repeated value) and a NaN: first maximum wins, NaN wins. */
            double *v = xd_vals(dt, xd_numel(4, xs), XV_PLAIN);
            for (int64_t i = 0; i < xd_numel(4, xs); i += 5) v[i] = 3.25;
            v[7] = NAN;
            xd_pair x = xd_pair_make(dt, 4, xs, v, c % 2 ? XL_TRANSPOSED : XL_CONTIG);
            free(v);
            gf_tensor *id = NULL, *ir = NULL;
            gf_tensor *yd = gf_max_pool2d(x.d, &pc->o, &id), *yr = gf_max_pool2d(x.r, &pc->o, &ir);
            char what[96];
            snprintf(what, sizeof what, "max_pool2d %s case %zu", gf_dtype_name(dt), c);
            xd_check(what, yd, yr);
            xd_check(what, id, ir);
            if (yr) {
                xd_pair gy = xd_pair_rand(dt, gf_tensor_rank(yr), gf_tensor_sizes(yr), XV_SMALL,
                                          XL_STEP);
                snprintf(what, sizeof what, "max_pool2d_backward %s case %zu", gf_dtype_name(dt), c);
                xd_check_pair(what, gf_max_pool2d_backward(gy.d, id, x.d, &pc->o),
                              gf_max_pool2d_backward(gy.r, ir, x.r, &pc->o));
                xd_pair_release(gy);
            }
            gf_tensor_release(yd);
            gf_tensor_release(yr);
            gf_tensor_release(id);
            gf_tensor_release(ir);
            gf_pool2d_opts ao = pc->o;
            ao.dilation[0] = ao.dilation[1] = 1; /* avg pool has none */
            gf_tensor *ad = gf_avg_pool2d(x.d, &ao), *ar = gf_avg_pool2d(x.r, &ao);
            snprintf(what, sizeof what, "avg_pool2d %s case %zu", gf_dtype_name(dt), c);
            xd_check(what, ad, ar);
            if (ar) {
                xd_pair gy = xd_pair_rand(dt, gf_tensor_rank(ar), gf_tensor_sizes(ar), XV_SMALL,
                                          XL_OFFSET);
                snprintf(what, sizeof what, "avg_pool2d_backward %s case %zu", gf_dtype_name(dt), c);
                xd_check_pair(what, gf_avg_pool2d_backward(gy.d, x.d, &ao),
                              gf_avg_pool2d_backward(gy.r, x.r, &ao));
                xd_pair_release(gy);
            }
            gf_tensor_release(ad);
            gf_tensor_release(ar);
            xd_pair_release(x);
        }
}

/* ------------------------------------------------------------ batch norm */
static void test_batch_norm(void) {
    const gf_dtype fl[] = {GF_F32, GF_F64};
    for (int f = 0; f < 2; f++)
        for (int training = 0; training < 2; training++) {
            gf_dtype dt = fl[f];
            xd_seed((uint64_t)(f * 2 + training));
            xd_pair x = xd_pair_rand(dt, 4, SZ(4, 3, 5, 6), XV_PLAIN, XL_TRANSPOSED);
            xd_pair w = xd_pair_rand(dt, 1, SZ(3), XV_SMALL, XL_CONTIG);
            xd_pair b = xd_pair_rand(dt, 1, SZ(3), XV_SMALL, XL_STEP);
            xd_pair rm = xd_pair_rand(dt, 1, SZ(3), XV_SMALL, XL_CONTIG);
            xd_pair rv = xd_pair_rand(dt, 1, SZ(3), XV_POSITIVE, XL_OFFSET);
            gf_tensor *smd = NULL, *sid = NULL, *smr = NULL, *sir = NULL;
            gf_tensor *yd = gf_batch_norm(x.d, rm.d, rv.d, w.d, b.d, training, 0.1, 1e-5, &smd, &sid);
            gf_tensor *yr = gf_batch_norm(x.r, rm.r, rv.r, w.r, b.r, training, 0.1, 1e-5, &smr, &sir);
            const char *mode = training ? "training" : "eval";
            char what[96];
            snprintf(what, sizeof what, "batch_norm %s %s", gf_dtype_name(dt), mode);
            xd_check_pair_tol(what, yd, yr, xd_sum_tol(dt, 10));
            xd_check_pair_tol("batch_norm save_mean", smd, smr, xd_sum_tol(dt, 10));
            xd_check_pair_tol("batch_norm save_invstd", sid, sir, xd_sum_tol(dt, 10));
            xd_check_tol("batch_norm running_mean", rm.d, rm.r, xd_sum_tol(dt, 10));
            xd_check_tol("batch_norm running_var", rv.d, rv.r, xd_sum_tol(dt, 10));
            xd_pair_release(x);
            xd_pair_release(w);
            xd_pair_release(b);
            xd_pair_release(rm);
            xd_pair_release(rv);
        }
}

/* ------------------------------------------------------------ indexing */
static xd_pair index_pair(int rank, const int64_t *sizes, int64_t limit, xd_layout L) {
    int64_t n = xd_numel(rank, sizes);
    double *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++) v[i] = (double)(xd_next() % (uint64_t)limit);
    xd_pair p = xd_pair_make(GF_I64, rank, sizes, v, L);
    free(v);
    return p;
}

static void test_index(void) {
    const gf_dtype dts[] = {GF_F32, GF_F64, GF_I32, GF_I64, GF_BOOL};
    for (int di = 0; di < 5; di++) {
        gf_dtype dt = dts[di];
        for (int dim = 0; dim < 3; dim++) {
            xd_seed((uint64_t)(di * 10 + dim));
            const int64_t xs[3] = {4, 5, 6};
            xd_pair x = xd_pair_rand(dt, 3, xs, XV_GENERAL, (xd_layout)(dim + 1));
            xd_pair i1 = index_pair(1, SZ(7), xs[dim], XL_STEP); /* repeats: 7 > size */
            char what[96];
            snprintf(what, sizeof what, "index_select %s dim %d", gf_dtype_name(dt), dim);
            xd_check_pair(what, gf_index_select(x.d, dim, i1.d), gf_index_select(x.r, dim, i1.r));
            int64_t is[3] = {3, 4, 5};
            is[dim] = 8;
            xd_pair ig = index_pair(3, is, xs[dim], XL_TRANSPOSED);
            snprintf(what, sizeof what, "gather %s dim %d", gf_dtype_name(dt), dim);
            xd_check_pair(what, gf_gather(x.d, dim, ig.d), gf_gather(x.r, dim, ig.r));
            if (dt != GF_BOOL) {
                /* Duplicate indices accumulate; integers exactly, floats in
                 * some order (atomics). */
                xd_pair src = xd_pair_rand(dt, 3, is, XV_PLAIN, XL_OFFSET);
                snprintf(what, sizeof what, "scatter_add %s dim %d", gf_dtype_name(dt), dim);
                xd_check_pair_tol(what, gf_scatter_add(x.d, dim, ig.d, src.d),
                                  gf_scatter_add(x.r, dim, ig.r, src.r), xd_sum_tol(dt, 8));
                int64_t ss[3] = {4, 5, 6};
                ss[dim] = 7;
                xd_pair src2 = xd_pair_rand(dt, 3, ss, XV_PLAIN, XL_CONTIG);
                snprintf(what, sizeof what, "index_add %s dim %d", gf_dtype_name(dt), dim);
                xd_check_pair_tol(what, gf_index_add(x.d, dim, i1.d, src2.d),
                                  gf_index_add(x.r, dim, i1.r, src2.r), xd_sum_tol(dt, 7));
                xd_pair_release(src);
                xd_pair_release(src2);
            }
            xd_pair_release(x);
            xd_pair_release(i1);
            xd_pair_release(ig);
        }
    }
    xd_pair wt = xd_pair_rand(GF_F32, 2, SZ(10, 4), XV_GENERAL, XL_TRANSPOSED);
    xd_pair ids = index_pair(2, SZ(3, 5), 10, XL_CONTIG);
    xd_check_pair("embedding", gf_embedding(wt.d, ids.d), gf_embedding(wt.r, ids.r));
    xd_pair_release(wt);
    xd_pair_release(ids);
    /* An index out of range is an INDEX error, and the target is untouched. */
    xd_pair x = xd_pair_rand(GF_F32, 2, SZ(3, 4), XV_PLAIN, XL_CONTIG);
    double bad_v[3] = {0, 2, 3};
    xd_pair bad = xd_pair_make(GF_I64, 1, SZ(3), bad_v, XL_CONTIG);
    gf_clear_error();
    gf_tensor *r = gf_index_select(x.d, 0, bad.d);
    CHECK(r == NULL && gf_last_status() == GF_ERR_INDEX);
    CHECK_CONTAINS(gf_last_error(), "index_select");
    gf_tensor_release(r);
    xd_pair src = xd_pair_rand(GF_F32, 2, SZ(3, 4), XV_PLAIN, XL_CONTIG);
    CHECK(gf_index_add_(x.d, 0, bad.d, src.d) != GF_OK);
    xd_check("index_add_ with a bad index leaves the target untouched", x.d, x.r);
    xd_pair_release(src);
    xd_pair_release(x);
    xd_pair_release(bad);
}

/* ------------------------------------------------------------ a gradient */
/* loss = sum(max_pool(relu(conv(x, w) + b)) * t), through autograd on both
 * devices: the backward kernels in a real chain. */
static void test_gradient(void) {
    const gf_dtype fl[] = {GF_F32, GF_F64};
    for (int f = 0; f < 2; f++) {
        gf_dtype dt = fl[f];
        xd_seed(4242 + (uint64_t)f);
        xd_pair x = xd_pair_rand(dt, 4, SZ(2, 3, 8, 8), XV_SMALL, XL_CONTIG);
        xd_pair w = xd_pair_rand(dt, 4, SZ(4, 3, 3, 3), XV_SMALL, XL_CONTIG);
        xd_pair t = xd_pair_rand(dt, 4, SZ(2, 4, 2, 2), XV_SMALL, XL_CONTIG);
        gf_conv2d_opts co = {{1, 1}, {1, 1}, {1, 1}, 1};
        gf_pool2d_opts po = {{3, 3}, {3, 3}, {0, 0}, {1, 1}, false, true};
        gf_tensor *grads[2][2] = {{NULL, NULL}, {NULL, NULL}};
        for (int side = 0; side < 2; side++) {
            gf_tensor *xx = side ? x.r : x.d, *ww = side ? w.r : w.d, *tt = side ? t.r : t.d;
            gf_tensor_set_requires_grad(xx, true);
            gf_tensor_set_requires_grad(ww, true);
            gf_scope_begin();
            gf_tensor *loss = gf_sum(gf_mul(gf_max_pool2d(gf_relu(gf_conv2d(xx, ww, NULL, &co)), &po,
                                                          NULL), tt), NULL, 0, false);
            CHECK_MSG(loss && gf_backward(loss, NULL, NULL) == GF_OK, "backward: %s",
                      gf_last_error());
            gf_scope_end();
            grads[side][0] = gf_tensor_grad(xx);
            grads[side][1] = gf_tensor_grad(ww);
        }
        xd_check_pair_tol("grad x", grads[0][0], grads[1][0], xd_sum_tol(dt, 30));
        xd_check_pair_tol("grad w", grads[0][1], grads[1][1], xd_sum_tol(dt, 130));
        xd_pair_release(x);
        xd_pair_release(w);
        xd_pair_release(t);
    }
}

int main(void) {
    int st = xd_init();
    if (st != 0) return st;
    RUN(test_conv);
    RUN(test_pool);
    RUN(test_batch_norm);
    RUN(test_index);
    RUN(test_gradient);
    return xd_finish();
}
