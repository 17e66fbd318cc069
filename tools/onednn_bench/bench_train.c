/* bench_train.c — one training step of an MLP and of a small CNN in graft,
 * timed: the workloads that compare_torch.py runs in PyTorch as well.
 *
 *   MLP: x [256, 784] -> Linear(784, 1024) -> ReLU -> Linear(1024, 1024) -> ReLU
 *        -> Linear(1024, 10) -> cross entropy (mean)
 *   CNN: x [64, 1, 28, 28] -> Conv2d(1, 32, 3, pad 1) -> ReLU -> MaxPool 2
 *        -> Conv2d(32, 64, 3, pad 1) -> ReLU -> MaxPool 2 -> Linear(3136, 10)
 *        -> cross entropy (mean)
 * A step is forward, backward and an SGD update (lr 0.01), as torch.optim.SGD
 * with zero_grad(set_to_none=True). Linear weights are [out, in] and applied
 * through a transposed view (x @ W^T + b), as nn.Linear does. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "bench_train.h"
#include "graft.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static long minor_faults(void) {
    struct rusage r;
    return getrusage(RUSAGE_SELF, &r) == 0 ? r.ru_minflt : 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* PyTorch's default init bound for a layer of fan_in inputs. */
static gf_tensor *param(gf_device *dev, int rank, const int64_t *sizes, int64_t fan_in) {
    double bound = 1.0 / sqrt((double)fan_in);
    gf_tensor *t = gf_rand_uniform(sizes, rank, -bound, bound, GF_F32, dev);
    if (t && gf_tensor_set_requires_grad(t, true) != GF_OK) {
        gf_tensor_release(t);
        return NULL;
    }
    return t;
}

/* In a scope: intermediates go with it. */
static gf_tensor *linear(const gf_tensor *x, const gf_tensor *w, const gf_tensor *b) {
    return gf_add(gf_matmul(x, gf_transpose(w, 0, 1)), b);
}

typedef struct model {
    int n;
    gf_tensor *p[8];
} model;

static gf_tensor *forward(const model *m, bool cnn, const gf_tensor *x) {
    if (!cnn) {
        gf_tensor *h = gf_relu(linear(x, m->p[0], m->p[1]));
        h = gf_relu(linear(h, m->p[2], m->p[3]));
        return linear(h, m->p[4], m->p[5]);
    }
    gf_conv2d_opts pad = {.padding = {1, 1}};
    gf_pool2d_opts pool = {.kernel = {2, 2}};
    gf_tensor *h = gf_max_pool2d(gf_relu(gf_conv2d(x, m->p[0], m->p[1], &pad)), &pool, NULL);
    h = gf_max_pool2d(gf_relu(gf_conv2d(h, m->p[2], m->p[3], &pad)), &pool, NULL);
    int64_t rows = gf_tensor_size(x, 0);
    gf_tensor *flat = gf_reshape(h, (int64_t[]){rows, gf_tensor_numel(h) / rows}, 2);
    return linear(flat, m->p[4], m->p[5]);
}

static bool build(model *m, bool cnn, gf_device *dev) {
    m->n = 6;
    if (!cnn) {
        const int64_t d[4] = {784, 1024, 1024, 10};
        for (int l = 0; l < 3; l++) {
            m->p[2 * l] = param(dev, 2, (int64_t[]){d[l + 1], d[l]}, d[l]);
            m->p[2 * l + 1] = param(dev, 1, (int64_t[]){d[l + 1]}, d[l]);
        }
    } else {
        m->p[0] = param(dev, 4, (int64_t[]){32, 1, 3, 3}, 9);
        m->p[1] = param(dev, 1, (int64_t[]){32}, 9);
        m->p[2] = param(dev, 4, (int64_t[]){64, 32, 3, 3}, 288);
        m->p[3] = param(dev, 1, (int64_t[]){64}, 288);
        m->p[4] = param(dev, 2, (int64_t[]){10, 3136}, 3136);
        m->p[5] = param(dev, 1, (int64_t[]){10}, 3136);
    }
    for (int i = 0; i < m->n; i++)
        if (!m->p[i]) return false;
    return true;
}

int bench_train_step(gf_device *dev, bool cnn, int reps, train_result *out) {
    model m = {0};
    gf_tensor *x = NULL, *target = NULL;
    gf_optimizer *opt = NULL;
    double *t = malloc(sizeof(double) * (size_t)reps);
    double *tc = malloc(sizeof(double) * (size_t)reps);
    int ok = 0;
    gf_manual_seed(1234);
    if (!t || !tc || !build(&m, cnn, dev)) goto done;
    int64_t batch = cnn ? 64 : 256;
    x = cnn ? gf_randn((int64_t[]){batch, 1, 28, 28}, 4, GF_F32, dev)
            : gf_randn((int64_t[]){batch, 784}, 2, GF_F32, dev);
    int64_t labels[256];
    for (int i = 0; i < batch; i++) labels[i] = (i * 7) % 10;
    target = gf_from_data(labels, (int64_t[]){batch}, 1, GF_I64, dev);
    opt = gf_sgd_create(m.p, m.n, &(gf_sgd_opts){.lr = 0.01});
    if (!x || !target || !opt) goto done;
    double first_loss = 0, last_loss = 0;
    long faults = 0;
    for (int r = -2; r < reps; r++) { /* two warm-up steps: primitives made, memory cached */
        if (r == 0) faults = minor_faults();
        double t0 = now(), c0 = cpu_now();
        gf_scope_begin();
        gf_tensor *loss = gf_cross_entropy(forward(&m, cnn, x), target, NULL, GF_REDUCTION_MEAN,
                                           -100, 0.0);
        gf_status s = loss ? gf_optimizer_zero_grad(opt) : gf_last_status();
        if (s == GF_OK) s = gf_backward(loss, NULL, NULL);
        if (s == GF_OK) s = gf_optimizer_step(opt);
        if (s == GF_OK) s = gf_device_synchronize(dev);
        double v = 0;
        if (s == GF_OK) s = gf_tensor_item(loss, &v);
        gf_scope_end();
        if (s != GF_OK) goto done;
        if (r == -2) first_loss = v;
        last_loss = v;
        if (r >= 0) {
            t[r] = now() - t0;
            tc[r] = cpu_now() - c0;
        }
    }
    out->faults_per_step = (double)(minor_faults() - faults) / reps;
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    out->median = reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
    out->min = t[0];
    qsort(tc, (size_t)reps, sizeof *tc, cmp_double);
    out->cpu = reps % 2 ? tc[reps / 2] : 0.5 * (tc[reps / 2 - 1] + tc[reps / 2]);
    out->first_loss = first_loss;
    out->last_loss = last_loss;
    ok = 1;
done:
    if (!ok) fprintf(stderr, "graft-onednn-bench: training step failed: %s\n", gf_last_error());
    free(t);
    free(tc);
    gf_optimizer_destroy(opt);
    for (int i = 0; i < m.n; i++) gf_tensor_release(m.p[i]);
    gf_tensor_release(x), gf_tensor_release(target);
    return ok;
}
