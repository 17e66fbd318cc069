/* SPDX-License-Identifier: BSD-3-Clause */
/* test_onednn_reduce.c — cpu_onednn against the reference plugin for the
 * reductions (every op, every dims mask of a rank-3 tensor, rows, columns,
 * whole tensors, layouts), softmax / log_softmax along every dim, layer norm
 * and batch norm (training and evaluation, with and without affine and
 * running statistics), in f32 and f64, on odd, large, 0-size shapes and
 * special values. */
#include "abi_pair.h"

static const char *reduce_names[] = {"sum", "mean", "prod", "amax", "amin", "var", "logsumexp",
                                     "max_dim", "min_dim"};

static void run_reduce(uint32_t op, int32_t dt, int rank, const int64_t *sizes, uint32_t dims,
                       ap_layout lx, ap_layout ly, ap_domain dom) {
    bool by_dim = op == GFP_OP_MAX_DIM || op == GFP_OP_MIN_DIM;
    int64_t ysz[GFP_MAX_RANK];
    int64_t n_line = 1;
    for (int d = 0; d < rank; d++) {
        ysz[d] = (dims >> d) & 1u ? 1 : sizes[d];
        if ((dims >> d) & 1u) n_line *= sizes[d];
    }
    char what[160];
    snprintf(what, sizeof what, "%s dt%d rank %d dims 0x%x [%s -> %s]%s",
             reduce_names[op - GFP_OP_SUM], (int)dt, rank, (unsigned)dims, ap_layout_names[lx],
             ap_layout_names[ly], dom == AD_SPECIAL ? " specials" : "");
    ap_tensor x = ap_make(dt, rank, sizes, lx, op == GFP_OP_PROD ? AD_POS : dom);
    ap_tensor y = ap_make(dt, rank, ysz, ly, AD_ANY);
    ap_tensor ind = ap_make(GFP_I64, rank, ysz, ly, AD_INT);
    gfp_reduce_params p = {sizeof p, dims, 1.0};
    ap_tensor *in[1] = {&x}, *out[2] = {&y, &ind};
    /* f32 sums accumulate in double on both sides; the tolerance covers the
     * order of additions (and exp in logsumexp). */
    double tol = dt == GFP_F64 ? 1e-12 : 2e-6;
    double atol = tol * (n_line > 1 ? sqrt((double)n_line) : 1);
    ap_run(what, op, in, 1, out, by_dim ? 2 : 1, &p, atol, tol);
    ap_free(&x), ap_free(&y), ap_free(&ind);
}

static void test_reduce(void) {
    static const int64_t odd[3] = {5, 7, 9}, big[2] = {300, 257}, wide[2] = {3, 70001};
    static const ap_layout lxs[] = {AL_CONTIG,   AL_TRANSPOSED, AL_STEP,
                                    AL_PERMUTED, AL_BCAST,      AL_OFFSET};
    static const ap_layout lys[] = {AL_CONTIG, AL_CONTIG, AL_STEP,
                                    AL_OFFSET, AL_CONTIG, AL_TRANSPOSED};
    for (uint32_t op = GFP_OP_SUM; op <= GFP_OP_MIN_DIM; op++) {
        bool by_dim = op == GFP_OP_MAX_DIM || op == GFP_OP_MIN_DIM;
        for (int k = 0; k < 2; k++) {
            int32_t dt = k ? GFP_F64 : GFP_F32;
            for (uint32_t dims = by_dim ? 1 : 0; dims < 8; dims++) {
                if (by_dim && (dims & (dims - 1))) continue;
                for (int l = 0; l < 6; l++)
                    run_reduce(op, dt, 3, odd, dims, lxs[l], lys[l], AD_ANY);
            }
            for (uint32_t dims = 1; dims < 4; dims++) {
                if (by_dim && dims == 3) continue;
                run_reduce(op, dt, 2, big, dims, AL_CONTIG, AL_CONTIG, AD_ANY);
                run_reduce(op, dt, 2, big, dims, AL_TRANSPOSED, AL_CONTIG, AD_ANY);
                run_reduce(op, dt, 2, wide, dims, AL_CONTIG, AL_CONTIG, AD_ANY);
                run_reduce(op, dt, 2, big, dims, AL_CONTIG, AL_CONTIG, AD_SPECIAL);
            }
            /* 0-size: no outputs, and empty lines (the reference's identities) */
            run_reduce(op, dt, 2, SZ(0, 4), 2, AL_CONTIG, AL_CONTIG, AD_ANY);
            if (!by_dim && op != GFP_OP_AMAX && op != GFP_OP_AMIN)
                run_reduce(op, dt, 2, SZ(3, 0), 2, AL_CONTIG, AL_CONTIG, AD_ANY);
            /* rank 0 and size-1 dims */
            run_reduce(op, dt, 0, SZ(0), 0, AL_CONTIG, AL_CONTIG, AD_ANY);
            run_reduce(op, dt, 3, SZ(1, 6, 1), by_dim ? 4 : 5, AL_CONTIG, AL_CONTIG, AD_ANY);
        }
    }
    /* integers stay with the reference, through the same entry */
    for (uint32_t op = GFP_OP_SUM; op <= GFP_OP_AMIN; op++)
        if (op != GFP_OP_MEAN) run_reduce(op, GFP_I64, 3, odd, 5, AL_STEP, AL_CONTIG, AD_INT);
}

/* ------------------------------------------------------------------ softmax */
static void test_softmax(void) {
    static const int64_t shape3[3] = {4, 33, 7}, big[2] = {256, 1000};
    for (uint32_t op = GFP_OP_SOFTMAX; op <= GFP_OP_LOG_SOFTMAX; op++)
        for (int k = 0; k < 2; k++) {
            int32_t dt = k ? GFP_F64 : GFP_F32;
            double tol = dt == GFP_F64 ? 1e-13 : 2e-6;
            for (int dim = 0; dim < 3; dim++)
                for (int l = 0; l < 5; l++) {
                    static const ap_layout lx[] = {AL_CONTIG, AL_TRANSPOSED, AL_STEP, AL_PERMUTED,
                                                AL_BCAST};
                    static const ap_layout ly[] = {AL_CONTIG, AL_CONTIG, AL_STEP, AL_TRANSPOSED,
                                                AL_OFFSET};
                    ap_tensor x = ap_make(dt, 3, shape3, lx[l], AD_WIDE);
                    ap_tensor y = ap_make(dt, 3, shape3, ly[l], AD_ANY);
                    gfp_dim_params p = {sizeof p, dim};
                    ap_tensor *in[1] = {&x}, *out[1] = {&y};
                    ap_run(op == GFP_OP_SOFTMAX ? "softmax" : "log_softmax", op, in, 1, out, 1,
                             &p, tol, tol);
                    ap_free(&x), ap_free(&y);
                }
            for (int d = 0; d < 2; d++) {
                for (int spec = 0; spec < 2; spec++) {
                    ap_tensor x = ap_make(dt, 2, big, AL_CONTIG, spec ? AD_SPECIAL : AD_WIDE);
                    ap_tensor y = ap_make(dt, 2, big, AL_CONTIG, AD_ANY);
                    gfp_dim_params p = {sizeof p, d};
                    ap_tensor *in[1] = {&x}, *out[1] = {&y}, *io[1] = {&x};
                    ap_run("softmax large", op, in, 1, out, 1, &p, tol, tol);
                    ap_run("softmax in place", op, io, 1, io, 1, &p, tol, tol);
                    ap_free(&x), ap_free(&y);
                }
            }
            /* many short lines (f32: the block path of omp_softmax.c for rows
             * of at most 32, across its 256-line blocks), with specials */
            static const int64_t shorts[][2] = {{300, 8}, {513, 1}, {257, 32}, {40, 33}};
            for (int s = 0; s < 4; s++)
                for (int spec = 0; spec < 2; spec++) {
                    ap_tensor x = ap_make(dt, 2, shorts[s], AL_CONTIG, spec ? AD_SPECIAL : AD_WIDE);
                    ap_tensor y = ap_make(dt, 2, shorts[s], AL_CONTIG, AD_ANY);
                    gfp_dim_params p = {sizeof p, 1};
                    ap_tensor *in[1] = {&x}, *out[1] = {&y};
                    ap_run("softmax short lines", op, in, 1, out, 1, &p, tol, tol);
                    ap_free(&x), ap_free(&y);
                }
            /* a confident prediction: log_softmax near 0 keeps its digits */
            static const double logits[4] = {20, 0, -3, 1};
            ap_tensor x = ap_make(dt, 1, SZ(4), AL_CONTIG, AD_ANY);
            ap_tensor y = ap_make(dt, 1, SZ(4), AL_CONTIG, AD_ANY);
            for (int s = 0; s < 2; s++) {
                unsigned char bytes[32];
                for (int i = 0; i < 4; i++) ap_encode(dt, logits[i], bytes + i * abi_esize(dt));
                ap_write(&x, s, bytes, 4 * abi_esize(dt));
            }
            gfp_dim_params p = {sizeof p, 0};
            ap_tensor *in[1] = {&x}, *out[1] = {&y};
            ap_run("log_softmax confident", op, in, 1, out, 1, &p, 0, tol);
            ap_tensor z = ap_make(dt, 2, SZ(0, 5), AL_CONTIG, AD_ANY);
            ap_tensor zy = ap_make(dt, 2, SZ(0, 5), AL_CONTIG, AD_ANY);
            ap_tensor *zi[1] = {&z}, *zo[1] = {&zy};
            ap_run("softmax 0-size", op, zi, 1, zo, 1, &p, 0, 0);
            ap_free(&x), ap_free(&y), ap_free(&z), ap_free(&zy);
        }
}

/* ------------------------------------------------------------------ norms */
static void test_layer_norm(void) {
    struct {
        int rank, nr;
        int64_t sizes[4];
    } cases[] = {{2, 1, {64, 333}}, {3, 2, {4, 6, 5}}, {3, 1, {2, 3, 1024}},
                 {2, 2, {7, 9}},    {2, 1, {0, 8}},    {4, 1, {2, 1, 3, 5}},
                 /* a transformer's rows of 48 (blocks of eight rows, vectors and
                  * their tails); rows of 7, 13 of them */
                 {3, 1, {64, 8, 48}}, {2, 1, {13, 7}}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int k = 0; k < 2; k++)
            for (int affine = 0; affine < 4; affine++)
                for (int l = 0; l < 5; l++) {
                    /* l 4: x and y contiguous (the plugin's own loops), the
                     * shift and rstd strided */
                    static const ap_layout lx[] = {AL_CONTIG, AL_TRANSPOSED, AL_STEP, AL_PERMUTED,
                                                   AL_CONTIG};
                    static const ap_layout ly[] = {AL_CONTIG, AL_CONTIG, AL_STEP, AL_OFFSET,
                                                   AL_CONTIG};
                    int32_t dt = k ? GFP_F64 : GFP_F32;
                    int rank = cases[c].rank, nr = cases[c].nr;
                    const int64_t *sz = cases[c].sizes;
                    ap_tensor x = ap_make(dt, rank, sz, lx[l], AD_WIDE);
                    ap_tensor y = ap_make(dt, rank, sz, ly[l], AD_ANY);
                    ap_tensor w = ap_make(dt, nr, sz + rank - nr, AL_CONTIG, AD_ANY);
                    ap_tensor b =
                        ap_make(dt, nr, sz + rank - nr, l == 2 || l == 4 ? AL_STEP : AL_CONTIG,
                                AD_ANY);
                    ap_tensor m = ap_make(dt, rank - nr, sz, AL_CONTIG, AD_ANY);
                    ap_tensor r = ap_make(dt, rank - nr, sz, l >= 3 ? AL_STEP : AL_CONTIG, AD_ANY);
                    gfp_layer_norm_params p = {sizeof p, nr, 1e-5};
                    ap_tensor *in[3] = {&x, affine & 1 ? &w : NULL, affine & 2 ? &b : NULL};
                    ap_tensor *out[3] = {&y, &m, &r};
                    double tol = dt == GFP_F64 ? 1e-12 : 2e-5;
                    ap_run("layer_norm", GFP_OP_LAYER_NORM, in, 3, out, 3, &p, tol, tol);
                    ap_free(&x), ap_free(&y), ap_free(&w), ap_free(&b), ap_free(&m), ap_free(&r);
                }
}

static void test_batch_norm(void) {
    struct {
        int rank;
        int64_t sizes[5];
    } cases[] = {{4, {8, 16, 7, 9}}, {2, {64, 30}}, {3, {5, 4, 11}}, {5, {2, 3, 2, 4, 5}},
                 {4, {1, 3, 1, 1}},
                 /* contiguous planes of >= 64: the planar path (odd lengths: vector tails) */
                 {4, {3, 5, 9, 13}}, {3, {4, 3, 65}}, {5, {2, 3, 4, 4, 5}}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int k = 0; k < 2; k++)
            for (int training = 0; training < 2; training++)
                for (int opt = 0; opt < 4; opt++)
                    for (int l = 0; l < 4; l++) {
                        /* broadcast: channels of equal values over the batch */
                        static const ap_layout lx[] = {AL_CONTIG, AL_TRANSPOSED, AL_STEP, AL_BCAST};
                        int32_t dt = k ? GFP_F64 : GFP_F32;
                        int rank = cases[c].rank;
                        const int64_t *sz = cases[c].sizes, *ch = sz + 1;
                        ap_tensor x = ap_make(dt, rank, sz, lx[l], AD_WIDE);
                        ap_tensor y = ap_make(dt, rank, sz, l == 2 ? AL_STEP : AL_CONTIG, AD_ANY);
                        ap_tensor w = ap_make(dt, 1, ch, l == 1 ? AL_STEP : AL_CONTIG, AD_ANY);
                        ap_tensor b = ap_make(dt, 1, ch, AL_CONTIG, AD_ANY);
                        ap_tensor rm = ap_make(dt, 1, ch, AL_CONTIG, AD_ANY);
                        ap_tensor rv = ap_make(dt, 1, ch, l == 2 ? AL_STEP : AL_CONTIG, AD_POS);
                        ap_tensor sm = ap_make(dt, 1, ch, AL_CONTIG, AD_ANY);
                        ap_tensor si = ap_make(dt, 1, ch, AL_OFFSET, AD_ANY);
                        bool running = opt & 2 || !training;
                        gfp_batch_norm_params p = {sizeof p, (uint32_t)training, 0.1, 1e-5};
                        ap_tensor *in[5] = {&x, opt & 1 ? &w : NULL, opt & 1 ? &b : NULL,
                                          running ? &rm : NULL, running ? &rv : NULL};
                        ap_tensor *out[3] = {&y, &sm, &si};
                        double tol = dt == GFP_F64 ? 1e-12 : 3e-5;
                        ap_run("batch_norm", GFP_OP_BATCH_NORM, in, 5, out, 3, &p, tol, tol);
                        /* the running statistics were updated in place on both sides */
                        if (running) {
                            CHECK(ap_compare(&rm, tol, tol, "running_mean") == 0);
                            CHECK(ap_compare(&rv, tol, tol, "running_var") == 0);
                        }
                        ap_free(&x), ap_free(&y), ap_free(&w), ap_free(&b), ap_free(&rm);
                        ap_free(&rv), ap_free(&sm), ap_free(&si);
                    }
}

/* BATCH_NORM_BACKWARD against the reference: the planar path (contiguous
 * planes of >= 64 elements) and the channel walk (small planes, a
 * transposed x or grad_y), with and without weight, f32 and f64. */
static void test_batch_norm_backward(void) {
    struct {
        int rank;
        int64_t sizes[5];
    } cases[] = {{4, {3, 5, 9, 13}}, {3, {4, 3, 65}}, {4, {8, 16, 7, 9}}, {5, {2, 3, 4, 4, 5}}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int k = 0; k < 2; k++)
            for (int l = 0; l < 3; l++)
                for (int wt = 0; wt < 2; wt++) {
                    int32_t dt = k ? GFP_F64 : GFP_F32;
                    int rank = cases[c].rank;
                    const int64_t *sz = cases[c].sizes, *ch = sz + 1;
                    ap_tensor g = ap_make(dt, rank, sz, l == 2 ? AL_TRANSPOSED : AL_CONTIG, AD_ANY);
                    ap_tensor x = ap_make(dt, rank, sz, l == 1 ? AL_TRANSPOSED : AL_CONTIG, AD_WIDE);
                    ap_tensor m = ap_make(dt, 1, ch, AL_CONTIG, AD_ANY);
                    ap_tensor r = ap_make(dt, 1, ch, AL_CONTIG, AD_POS);
                    ap_tensor w = ap_make(dt, 1, ch, AL_CONTIG, AD_ANY);
                    ap_tensor gx = ap_make(dt, rank, sz, AL_CONTIG, AD_ANY);
                    ap_tensor gw = ap_make(dt, 1, ch, AL_CONTIG, AD_ANY);
                    ap_tensor gb = ap_make(dt, 1, ch, AL_CONTIG, AD_ANY);
                    ap_tensor *in[5] = {&g, &x, &m, &r, wt ? &w : NULL};
                    ap_tensor *out[3] = {&gx, &gw, &gb};
                    double tol = dt == GFP_F64 ? 1e-11 : 1e-4;
                    ap_run("batch_norm_backward", GFP_OP_BATCH_NORM_BACKWARD, in, 5, out, 3, NULL,
                           tol, tol);
                    ap_free(&g), ap_free(&x), ap_free(&m), ap_free(&r), ap_free(&w);
                    ap_free(&gx), ap_free(&gw), ap_free(&gb);
                }
}

/* Zero variance: rows and channels of equal values normalise to exactly 0
 * (plus the bias), however large 1/sqrt(eps) is. */
static void test_norm_constant(void) {
    ap_tensor x = ap_make(GFP_F32, 2, SZ(8, 300), AL_CONTIG, AD_WIDE);
    for (int k = 0; k < 2; k++) x.t[k].strides[1] = 0; /* every row one value */
    ap_tensor y = ap_make(GFP_F32, 2, SZ(8, 300), AL_CONTIG, AD_ANY);
    ap_tensor m = ap_make(GFP_F32, 1, SZ(8), AL_CONTIG, AD_ANY);
    ap_tensor r = ap_make(GFP_F32, 1, SZ(8), AL_CONTIG, AD_ANY);
    gfp_layer_norm_params lp = {sizeof lp, 1, 1e-5};
    ap_tensor *in[3] = {&x, NULL, NULL}, *out[3] = {&y, &m, &r};
    ap_run("layer_norm of constant rows", GFP_OP_LAYER_NORM, in, 3, out, 3, &lp, 0, 1e-6);
    ap_tensor xb = ap_make(GFP_F32, 4, SZ(4, 3, 5, 5), AL_CONTIG, AD_WIDE);
    for (int k = 0; k < 2; k++) xb.t[k].strides[0] = xb.t[k].strides[2] = xb.t[k].strides[3] = 0;
    ap_tensor yb = ap_make(GFP_F32, 4, SZ(4, 3, 5, 5), AL_CONTIG, AD_ANY);
    ap_tensor sm = ap_make(GFP_F32, 1, SZ(3), AL_CONTIG, AD_ANY);
    ap_tensor si = ap_make(GFP_F32, 1, SZ(3), AL_CONTIG, AD_ANY);
    gfp_batch_norm_params bp = {sizeof bp, 1, 0.1, 1e-5};
    ap_tensor *bin[5] = {&xb, NULL, NULL, NULL, NULL}, *bout[3] = {&yb, &sm, &si};
    ap_run("batch_norm of constant channels", GFP_OP_BATCH_NORM, bin, 5, bout, 3, &bp, 0, 1e-6);
    ap_free(&x), ap_free(&y), ap_free(&m), ap_free(&r);
    ap_free(&xb), ap_free(&yb), ap_free(&sm), ap_free(&si);
}

int main(void) {
    if (!ap_init()) return 1;
    RUN(test_reduce);
    RUN(test_softmax);
    RUN(test_layer_norm);
    RUN(test_batch_norm);
    RUN(test_batch_norm_backward);
    RUN(test_norm_constant);
    return CHECK_REPORT();
}
