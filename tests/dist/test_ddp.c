/* SPDX-License-Identifier: BSD-3-Clause */
/* test_ddp — data-parallel gradients (gf_ddp) on the device GRAFT_DEVICE
 * names, with 2 ranks: each rank runs backward on its half of a global
 * batch; after gf_ddp_wait every .grad must equal the gradient of the whole
 * batch computed by one process (gf_grad on every rank: f64 to 1e-12, f32 to
 * 1e-5). Also: rank 0's parameters broadcast at creation, bucket order and
 * an all-reduce started while backward still runs, no_sync accumulation,
 * the f16 communication hook, parameters that differ across ranks failing
 * on both, and the shard sampler. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <time.h>

#include "dist_test.h"

#define B 8 /* global batch */

typedef struct model {
    int in, hid, out;
    gf_dtype dt;
    gf_tensor *p[5]; /* unused [3], W1 [in, hid], b1 [hid], W2 [hid, out], b2 [out] */
} model;

static double init_val(int rank, int64_t i, gf_dtype dt) {
    return 0.3 * sin(0.37 * (double)i + 1.3 * rank) + 0.01 * rank;
}

static void model_init(model *m, int in, int hid, int out, gf_dtype dt, int as_rank) {
    m->in = in, m->hid = hid, m->out = out, m->dt = dt;
    int64_t s[5][2] = {{3, 0}, {in, hid}, {hid, 0}, {hid, out}, {out, 0}};
    int rk[5] = {1, 2, 1, 2, 1};
    for (int k = 0; k < 5; k++) {
        m->p[k] = dt_make(s[k], rk[k], dt, init_val, as_rank + k);
        CHECK(gf_tensor_set_requires_grad(m->p[k], true) == GF_OK);
    }
}

static void model_free(model *m) {
    for (int k = 0; k < 5; k++) gf_tensor_release(m->p[k]);
}

/* The data of micro-batch `mb`: rows of X [B, in] and targets Y [B, out]. */
static double x_val(int mb, int64_t i, gf_dtype dt) { return cos(0.11 * (double)i + mb); }
static double y_val(int mb, int64_t i, gf_dtype dt) { return sin(0.07 * (double)i - mb); }

/* mean((tanh(X W1 + b1) W2 + b2 - Y)^2) over rows [first, first + n) of
 * micro-batch mb, scaled by scale. A new reference. */
static gf_tensor *loss_of(const model *m, int mb, int first, int n) {
    gf_scope_begin();
    int64_t xs[2] = {B, m->in}, ys[2] = {B, m->out};
    gf_tensor *x = gf_narrow(dt_make(xs, 2, m->dt, x_val, mb), 0, first, n);
    gf_tensor *y = gf_narrow(dt_make(ys, 2, m->dt, y_val, mb), 0, first, n);
    gf_tensor *h = gf_tanh(gf_add(gf_matmul(x, m->p[1]), m->p[2]));
    gf_tensor *d = gf_sub(gf_add(gf_matmul(h, m->p[3]), m->p[4]), y);
    return gf_scope_end_return(gf_mean(gf_mul(d, d), NULL, 0, false));
}

/* This rank's rows of a global batch. */
static int my_first(void) { return dt_rank * (B / dt_world); }
static int my_rows(void) { return B / dt_world; }

/* Gradients of the whole batch (micro-batches 0 .. n_mb-1 summed) by one
 * process, for parameters 1..4; into ref[1..4]. */
static void reference_grads(const model *m, int n_mb, gf_tensor **ref) {
    gf_tensor *total = NULL;
    for (int mb = 0; mb < n_mb; mb++) {
        gf_tensor *l = loss_of(m, mb, 0, B);
        gf_tensor *t = total ? gf_add(total, l) : gf_tensor_retain(l);
        gf_tensor_release(total);
        gf_tensor_release(l);
        total = t;
    }
    CHECK_MSG(gf_grad(&total, 1, NULL, m->p + 1, 4, ref + 1, NULL) == GF_OK, "%s",
              gf_last_error());
    gf_tensor_release(total);
}

static double max_rel_diff(const gf_tensor *a, const gf_tensor *b) {
    double *x = dt_read(a), *y = dt_read(b), worst = 0;
    for (int64_t i = 0; i < gf_tensor_numel(a); i++) {
        double d = fabs(x[i] - y[i]) / (1e-3 + fabs(y[i]));
        if (!(d <= worst)) worst = d; /* NaN wins */
    }
    free(x);
    free(y);
    return worst;
}

static void check_grads(const model *m, gf_tensor **ref, double tol, const char *what) {
    for (int k = 1; k < 5; k++) {
        gf_tensor *g = gf_tensor_grad(m->p[k]);
        CHECK_MSG(g != NULL, "%s: parameter %d has no grad", what, k);
        if (!g) continue;
        double d = max_rel_diff(g, ref[k]);
        CHECK_MSG(d <= tol, "%s: parameter %d differs from one process by %.3g (tol %.0e)",
                  what, k, d, tol);
        gf_tensor_release(g);
    }
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One synchronised step on every rank against one process on the whole batch. */
static void step_case(gf_dtype dt, int in, int hid, int out, const gf_ddp_opts *opts,
                      double tol, const char *what, int expect_min_buckets) {
    model m;
    model_init(&m, in, hid, out, dt, dt_rank * 10); /* different on each rank */
    gf_ddp *ddp = gf_ddp_create(m.p, 5, opts);
    CHECK_MSG(ddp != NULL, "%s: %s", what, gf_last_error());
    if (!ddp) {
        model_free(&m);
        return;
    }
    /* Every rank now holds rank 0's values. */
    for (int k = 0; k < 5; k++) {
        gf_tensor *r0 = dt_make(gf_tensor_sizes(m.p[k]), gf_tensor_rank(m.p[k]), dt, init_val, k);
        CHECK_MSG(max_rel_diff(m.p[k], r0) == 0, "%s: parameter %d not broadcast", what, k);
        gf_tensor_release(r0);
    }
    gf_tensor *ref[5] = {0};
    reference_grads(&m, 1, ref); /* gf_grad: no .grad, no hooks */
    for (int k = 0; k < 5; k++) {
        gf_tensor *g = gf_tensor_grad(m.p[k]);
        CHECK(g == NULL);
        gf_tensor_release(g);
    }
    gf_tensor *loss = loss_of(&m, 0, my_first(), my_rows());
    CHECK_MSG(gf_backward(loss, NULL, NULL) == GF_OK, "%s", gf_last_error());
    uint64_t backward_end = now_ns();
    CHECK_MSG(gf_ddp_wait(ddp) == GF_OK, "%s: %s", what, gf_last_error());
    check_grads(&m, ref, tol, what);
    /* The unused parameter gets zeros (the mean of nothing but zeros). */
    double *u = NULL;
    gf_tensor *ug = gf_tensor_grad(m.p[0]);
    CHECK(ug != NULL);
    if (ug) {
        u = dt_read(ug);
        CHECK(u[0] == 0 && u[1] == 0 && u[2] == 0);
        free(u);
    }
    gf_tensor_release(ug);
    /* Buckets: reverse registration order, the first bucket started during
     * backward (before its last hook), each all-reduce before backward ended. */
    int nb = gf_ddp_bucket_count(ddp);
    CHECK_MSG(nb >= expect_min_buckets, "%s: %d buckets, expected at least %d", what, nb,
              expect_min_buckets);
    int prev_first = 5;
    for (int b = 0; b < nb; b++) {
        gf_ddp_bucket_info bi;
        CHECK(gf_ddp_get_bucket_info(ddp, b, &bi) == GF_OK);
        CHECK_MSG(bi.first_param < prev_first, "%s: bucket %d starts at parameter %d after %d",
                  what, b, bi.first_param, prev_first);
        CHECK(bi.first_param >= bi.last_param);
        prev_first = bi.last_param;
        CHECK(bi.finish_ns >= bi.launch_ns);
        if (bi.last_param > 0) { /* buckets without the unused parameter */
            CHECK_MSG(bi.launched_in_backward, "%s: bucket %d started after backward", what, b);
            CHECK_MSG(bi.launch_ns < backward_end, "%s: bucket %d", what, b);
        }
        if (dt_rank == 0)
            fprintf(stderr, "  %s: bucket %d: parameters %d..%d, %zu bytes, started after %d of 4 "
                    "hooks%s\n", what, b, bi.first_param, bi.last_param, bi.bytes,
                    bi.hooks_before_launch, bi.launched_in_backward ? " (in backward)" : " (by wait)");
    }
    gf_ddp_bucket_info b0;
    CHECK(gf_ddp_get_bucket_info(ddp, 0, &b0) == GF_OK);
    CHECK(b0.first_param == 4);
    CHECK_MSG(b0.hooks_before_launch < 4, "%s: the first all-reduce started after every hook",
              what);
    CHECK(gf_ddp_get_bucket_info(ddp, nb, &b0) == GF_ERR_INDEX);
    /* A second step: .grad accumulates (2x the reference) as in one process. */
    gf_tensor_release(loss);
    loss = loss_of(&m, 0, my_first(), my_rows());
    CHECK(gf_backward(loss, NULL, NULL) == GF_OK);
    CHECK(gf_ddp_wait(ddp) == GF_OK);
    for (int k = 1; k < 5; k++) {
        gf_tensor *twice = gf_mul_scalar(ref[k], 2.0);
        gf_tensor_release(ref[k]);
        ref[k] = twice;
    }
    check_grads(&m, ref, tol, what);
    CHECK(gf_ddp_wait(ddp) == GF_OK); /* nothing pending: a no-op */
    gf_tensor_release(loss);
    for (int k = 0; k < 5; k++) gf_tensor_release(ref[k]);
    gf_ddp_destroy(ddp);
    model_free(&m);
}

static bool stores(gf_dtype dt) {
    gf_device_info info;
    return gf_device_get_info(dt_dev, &info) == GF_OK && (info.dtypes & (1u << dt));
}

static void test_matches_one_process(void) {
    /* Small buckets: one parameter each (a bucket closes once it reaches its cap). */
    gf_ddp_opts small = {.first_bucket_bytes = 8, .bucket_cap_bytes = 8};
    if (stores(GF_F64)) step_case(GF_F64, 5, 7, 3, &small, 1e-12, "f64 small buckets", 5);
    step_case(GF_F32, 5, 7, 3, &small, 1e-5, "f32 small buckets", 5);
    /* Default caps (1 MiB first, 25 MiB): 1.1 MB weights, so 2 buckets. */
    step_case(GF_F32, 400, 700, 400, NULL, 1e-5, "f32 default buckets", 2);
}

/* Gradient accumulation: micro-batch 0 under no_sync (local only), then
 * micro-batch 1 synchronised: the sum of both global batches' gradients. */
static void test_no_sync(void) {
    gf_dtype dt = stores(GF_F64) ? GF_F64 : GF_F32;
    double tol = dt == GF_F64 ? 1e-12 : 1e-5;
    model m;
    model_init(&m, 5, 7, 3, dt, dt_rank);
    gf_ddp *ddp = gf_ddp_create(m.p, 5, &(gf_ddp_opts){.first_bucket_bytes = 8,
                                                        .bucket_cap_bytes = 8});
    CHECK(ddp != NULL);
    if (!ddp) return;
    gf_tensor *ref[5] = {0}, *local[5] = {0};
    reference_grads(&m, 2, ref);
    CHECK(gf_ddp_set_no_sync(ddp, true) == false);
    gf_tensor *l0 = loss_of(&m, 0, my_first(), my_rows());
    CHECK(gf_grad(&l0, 1, NULL, m.p + 1, 4, local + 1, &(gf_grad_opts){.retain_graph = 1}) ==
          GF_OK);
    CHECK(gf_backward(l0, NULL, NULL) == GF_OK);
    CHECK(gf_ddp_wait(ddp) == GF_OK); /* no_sync: nothing to do */
    check_grads(&m, local, tol, "no_sync: local gradients kept");
    CHECK(gf_ddp_set_no_sync(ddp, false) == true);
    gf_tensor *l1 = loss_of(&m, 1, my_first(), my_rows());
    CHECK(gf_backward(l1, NULL, NULL) == GF_OK);
    CHECK(gf_ddp_wait(ddp) == GF_OK);
    check_grads(&m, ref, tol, "no_sync accumulation");
    gf_tensor_release(l0);
    gf_tensor_release(l1);
    for (int k = 0; k < 5; k++) {
        gf_tensor_release(ref[k]);
        gf_tensor_release(local[k]);
    }
    gf_ddp_destroy(ddp);
    model_free(&m);
}

/* Two backward passes without gf_ddp_wait between them: an error on every
 * rank (not a hang), and the next iteration works. */
static void test_twice_without_wait(void) {
    model m;
    model_init(&m, 5, 7, 3, GF_F32, 0);
    gf_ddp *ddp = gf_ddp_create(m.p, 5, &(gf_ddp_opts){.first_bucket_bytes = 8,
                                                        .bucket_cap_bytes = 8});
    CHECK(ddp != NULL);
    if (!ddp) return;
    for (int k = 0; k < 2; k++) {
        gf_tensor *l = loss_of(&m, 0, my_first(), my_rows());
        CHECK(gf_backward(l, NULL, NULL) == GF_OK);
        gf_tensor_release(l);
    }
    CHECK(gf_ddp_wait(ddp) == GF_ERR_AUTOGRAD);
    CHECK_CONTAINS(gf_last_error(), "gf_ddp_wait after each backward");
    gf_tensor *l = loss_of(&m, 0, my_first(), my_rows());
    CHECK(gf_backward(l, NULL, NULL) == GF_OK);
    CHECK(gf_ddp_wait(ddp) == GF_OK);
    gf_tensor_release(l);
    gf_ddp_destroy(ddp);
    model_free(&m);
}

/* The f16 hook: the same gradients to f16 precision. */
static void test_fp16_hook(void) {
    model m;
    model_init(&m, 5, 7, 3, GF_F32, dt_rank);
    gf_ddp *ddp = gf_ddp_create(m.p, 5, &(gf_ddp_opts){.comm_hook = gf_ddp_fp16_compress_hook()});
    CHECK_MSG(ddp != NULL, "%s", gf_last_error());
    if (!ddp) return;
    gf_tensor *ref[5] = {0};
    reference_grads(&m, 1, ref);
    gf_tensor *l = loss_of(&m, 0, my_first(), my_rows());
    CHECK(gf_backward(l, NULL, NULL) == GF_OK);
    CHECK_MSG(gf_ddp_wait(ddp) == GF_OK, "%s", gf_last_error());
    check_grads(&m, ref, 2e-3, "fp16 hook");
    gf_tensor_release(l);
    for (int k = 0; k < 5; k++) gf_tensor_release(ref[k]);
    gf_ddp_destroy(ddp);
    model_free(&m);
}

/* Models that differ across ranks fail on every rank. */
static void test_mismatched_models(void) {
    model a, b;
    model_init(&a, 5, 7, 3, GF_F32, 0);
    model_init(&b, 5, dt_rank == 0 ? 7 : 8, 3, GF_F32, 0);
    gf_ddp *d = gf_ddp_create(b.p, 5, NULL);
    CHECK(d == NULL);
    CHECK_MSG(gf_last_status() == GF_ERR_SHAPE, "%s", gf_last_error());
    CHECK_CONTAINS(gf_last_error(), "parameter 1");
    d = gf_ddp_create(a.p, dt_rank == 0 ? 5 : 4, NULL);
    CHECK(d == NULL && gf_last_status() == GF_ERR_SHAPE);
    CHECK_CONTAINS(gf_last_error(), "parameters");
    /* A bad parameter on rank 0 only: INVALID on both. */
    gf_tensor *plain = gf_ones((const int64_t[]){3}, 1, GF_F32, dt_dev);
    gf_tensor *ps[5] = {a.p[0], a.p[1], a.p[2], a.p[3], dt_rank == 0 ? plain : a.p[4]};
    d = gf_ddp_create(ps, 5, NULL);
    CHECK(d == NULL && gf_last_status() == GF_ERR_INVALID);
    CHECK_CONTAINS(gf_last_error(), dt_rank == 0 ? "requires grad" : "failed on rank 0");
    gf_tensor *dup[2] = {a.p[1], a.p[1]};
    CHECK(gf_ddp_create(dup, 2, NULL) == NULL && gf_last_status() == GF_ERR_INVALID);
    CHECK(gf_ddp_create(a.p, 5, &(gf_ddp_opts){.comm_hook = &(gf_ddp_comm_hook){0}}) == NULL);
    CHECK(gf_last_status() == GF_ERR_INVALID);
    CHECK(gf_ddp_wait(NULL) == GF_ERR_INVALID);
    gf_tensor_release(plain);
    model_free(&a);
    model_free(&b);
    CHECK(gf_dist_barrier() == GF_OK); /* still in step */
}

/* The shard sampler: PyTorch's DistributedSampler rules. */
static void test_sampler(void) {
    enum { N = 10, W = 3 };
    int64_t per = gf_dist_shard_size(N, W, false), shards[W][4], cnt = 0;
    CHECK(per == 4);
    int seen[N] = {0};
    for (int r = 0; r < W; r++) {
        CHECK(gf_dist_shard_indices(N, 42, 5, true, false, r, W, shards[r], 4, &cnt) == GF_OK);
        CHECK(cnt == 4);
        for (int k = 0; k < 4; k++) seen[shards[r][k]]++;
    }
    int twice = 0;
    for (int i = 0; i < N; i++) {
        CHECK(seen[i] >= 1); /* every example, 2 of them twice (padding) */
        twice += seen[i] == 2;
    }
    CHECK(twice == 2);
    /* drop_last: disjoint, 3 each. */
    int64_t again[4], other[4];
    memset(seen, 0, sizeof seen);
    for (int r = 0; r < W; r++) {
        CHECK(gf_dist_shard_indices(N, 42, 5, true, true, r, W, again, 4, &cnt) == GF_OK);
        CHECK(cnt == 3);
        for (int k = 0; k < 3; k++) seen[again[k]]++;
    }
    for (int i = 0, tot = 0; i < N; i++) {
        CHECK(seen[i] <= 1);
        tot += seen[i];
        if (i == N - 1) CHECK(tot == 9);
    }
    /* Same (seed, epoch): same shard; another epoch: another order. */
    CHECK(gf_dist_shard_indices(N, 42, 5, true, false, 1, W, again, 4, &cnt) == GF_OK);
    CHECK(!memcmp(again, shards[1], sizeof again));
    int64_t big_a[500], big_b[500];
    CHECK(gf_dist_shard_indices(1000, 42, 0, true, false, 0, 2, big_a, 500, &cnt) == GF_OK);
    CHECK(gf_dist_shard_indices(1000, 42, 1, true, false, 0, 2, big_b, 500, &cnt) == GF_OK);
    CHECK(memcmp(big_a, big_b, sizeof big_a) != 0);
    /* No shuffle: rank r takes r, r + W, ... */
    CHECK(gf_dist_shard_indices(N, 0, 0, false, false, 2, W, other, 4, &cnt) == GF_OK);
    CHECK(other[0] == 2 && other[1] == 5 && other[2] == 8 && other[3] == 1);
    CHECK(gf_dist_shard_indices(0, 0, 0, true, false, 0, W, NULL, 0, &cnt) == GF_OK && cnt == 0);
    /* Errors. */
    CHECK(gf_dist_shard_indices(N, 0, 0, true, false, 3, W, other, 4, &cnt) == GF_ERR_INVALID);
    CHECK(gf_dist_shard_indices(N, 0, 0, true, false, 0, W, other, 3, &cnt) == GF_ERR_INVALID);
    CHECK_CONTAINS(gf_last_error(), "gf_dist_shard_size");
    CHECK(gf_dist_shard_size(-1, W, false) == -1);
    CHECK(gf_dist_shard_size(5, 0, false) == -1);
}

int main(int argc, char **argv) {
    CHECK(gf_ddp_create(NULL, 0, NULL) == NULL); /* before init */
    CHECK_CONTAINS(gf_last_error(), "gf_dist_init");
    dt_start(&argc, &argv);
    if (dt_world * (B / dt_world) != B) {
        fprintf(stderr, "test_ddp: run with a world size dividing %d\n", B);
        return 1;
    }
    RUN(test_matches_one_process);
    RUN(test_no_sync);
    RUN(test_twice_without_wait);
    RUN(test_fp16_hook);
    RUN(test_mismatched_models);
    RUN(test_sampler);
    return dt_finish();
}
