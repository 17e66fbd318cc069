/* SPDX-License-Identifier: BSD-3-Clause */
/* autoencoder — a small convolutional autoencoder on Fashion-MNIST, with a
 * decoder made of a transposed convolution and bilinear upsampling.
 *
 *   autoencoder [--data DIR] [--limit N] [--epochs E] [--batch B] [--lr X]
 *               [--seed S] [--max-loss-ratio R]
 *
 * The data are the IDX files of the Debian package dataset-fashion-mnist
 * (/usr/share/datasets/fashion-mnist), read with gf_load_idx; pixels are
 * scaled to [0, 1]. The network (NCHW):
 *   conv 3x3 stride 2 1->16, ReLU                       [N, 16, 14, 14]
 *   conv 3x3 stride 2 16->32, ReLU                      [N, 32, 7, 7]   the code
 *   conv_transpose 3x3 stride 2 (output_padding 1)
 *     32->16, group_norm (4 groups), ReLU               [N, 16, 14, 14]
 *   interpolate bilinear x2                             [N, 16, 28, 28]
 *   conv 3x3 16->1, sigmoid                             [N, 1, 28, 28]
 * trained with the mean squared error against the input and Adam, on the
 * device GRAFT_DEVICE names (default cpu). It prints the reconstruction
 * loss on 1000 test images before training and after each epoch.
 *
 * Exit status: 0 on success; 1 on a graft error, or when the final test
 * loss is above --max-loss-ratio times the first; 2 for a bad command line
 * or a missing data set (the message says which package to install). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "graft.h"

#define DATA_DIR "/usr/share/datasets/fashion-mnist"
#define PACKAGE "dataset-fashion-mnist"
#define N_TEST 1000

typedef struct model {
    gf_tensor *c1_w, *c1_b, *c2_w, *c2_b, *t1_w, *t1_b, *gn_w, *gn_b, *c3_w, *c3_b;
} model;

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* PyTorch's default conv init: U(+-1/sqrt(fan_in)) for weight and bias. */
static gf_tensor *param(const int64_t *sizes, int rank, double fan_in, double fill,
                        gf_device *dev) {
    gf_tensor *t = isnan(fill) ? gf_rand_uniform(sizes, rank, -1 / sqrt(fan_in),
                                                 1 / sqrt(fan_in), GF_F32, dev)
                               : gf_full(sizes, rank, fill, GF_F32, dev);
    if (t && gf_tensor_set_requires_grad(t, true) != GF_OK) {
        gf_tensor_release(t);
        t = NULL;
    }
    return t;
}
#define S1(a) ((const int64_t[]){a}), 1
#define S4(a, b, c, d) ((const int64_t[]){a, b, c, d}), 4

static bool model_init(model *m, gf_device *dev, gf_tensor **list) {
    /* transposed conv: weight [Ci, Co, kh, kw], PyTorch's fan_in is dim 1 x k x k */
    gf_tensor **f[10] = {&m->c1_w, &m->c1_b, &m->c2_w, &m->c2_b, &m->t1_w,
                         &m->t1_b, &m->gn_w, &m->gn_b, &m->c3_w, &m->c3_b};
    *f[0] = param(S4(16, 1, 3, 3), 9, NAN, dev);
    *f[1] = param(S1(16), 9, NAN, dev);
    *f[2] = param(S4(32, 16, 3, 3), 144, NAN, dev);
    *f[3] = param(S1(32), 144, NAN, dev);
    *f[4] = param(S4(32, 16, 3, 3), 144, NAN, dev);
    *f[5] = param(S1(16), 144, NAN, dev);
    *f[6] = param(S1(16), 1, 1.0, dev);
    *f[7] = param(S1(16), 1, 0.0, dev);
    *f[8] = param(S4(1, 16, 3, 3), 144, NAN, dev);
    *f[9] = param(S1(1), 144, NAN, dev);
    for (int i = 0; i < 10; i++) {
        list[i] = *f[i];
        if (!list[i]) return false;
    }
    return true;
}

/* Reconstruction [N, 1, 28, 28] of x; intermediates in the caller's scope. */
static gf_tensor *forward(const model *m, const gf_tensor *x) {
    gf_conv2d_opts down = {.stride = {2, 2}, .padding = {1, 1}}, same = {.padding = {1, 1}};
    gf_tensor *h = gf_relu(gf_conv2d(x, m->c1_w, m->c1_b, &down));
    h = gf_relu(gf_conv2d(h, m->c2_w, m->c2_b, &down));
    gf_conv_transpose2d_opts up = {.stride = {2, 2}, .padding = {1, 1}, .output_padding = {1, 1}};
    h = gf_conv_transpose2d(h, m->t1_w, m->t1_b, &up);
    h = gf_relu(gf_group_norm(h, 4, m->gn_w, m->gn_b, 1e-5));
    h = gf_interpolate(h, &(gf_interpolate_opts){.mode = GF_INTERP_BILINEAR,
                                                 .scale_factor = {2, 2}});
    return gf_sigmoid(gf_conv2d(h, m->c3_w, m->c3_b, &same));
}

/* Images [n, 1, 28, 28] in [0, 1] of the first n in the IDX file. */
static gf_tensor *load_images(const char *path, int n, gf_device *dev) {
    gf_scope_begin();
    gf_tensor *raw = gf_load_idx(path, dev), *x = NULL;
    if (raw && (gf_tensor_rank(raw) != 3 || gf_tensor_size(raw, 1) != 28 ||
                gf_tensor_size(raw, 2) != 28)) {
        fprintf(stderr, "autoencoder: %s does not hold 28x28 images\n", path);
    } else if (raw) {
        int64_t all = gf_tensor_size(raw, 0), cnt = n < all ? n : all;
        gf_tensor *f = gf_div_scalar(gf_to_dtype(gf_narrow(raw, 0, 0, cnt), GF_F32), 255.0);
        x = gf_scope_keep(gf_reshape(f, (const int64_t[]){cnt, 1, 28, 28}, 4));
    }
    gf_scope_end();
    return x;
}

static gf_status test_loss(const model *m, const gf_tensor *x, double *loss) {
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    double sum = 0;
    int64_t n = gf_tensor_size(x, 0);
    gf_status s = GF_OK;
    for (int64_t at = 0; at < n && s == GF_OK; at += 250) {
        int64_t cnt = n - at < 250 ? n - at : 250;
        gf_scope_begin();
        gf_tensor *b = gf_narrow(x, 0, at, cnt);
        double v = 0;
        s = gf_tensor_item(gf_mse_loss(forward(m, b), b, GF_REDUCTION_SUM), &v);
        sum += v;
        gf_scope_end();
    }
    gf_grad_mode_set(prev);
    *loss = sum / (double)(n * 28 * 28);
    return s;
}

static int usage(const char *argv0) {
    fprintf(stderr,
            "usage: %s [--data DIR] [--limit N] [--epochs E] [--batch B] [--lr X] [--seed S]\n"
            "          [--max-loss-ratio R]\n"
            "Trains a convolutional autoencoder (conv_transpose2d, bilinear interpolate) on\n"
            "Fashion-MNIST and prints the test reconstruction loss per epoch.\n"
            "  --data DIR          the IDX files (default " DATA_DIR ")\n"
            "  --limit N           training images used (default 4000)\n"
            "  --epochs E          passes over them (default 2)\n"
            "  --batch B           images per step (default 32)\n"
            "  --lr X              Adam learning rate (default 0.002)\n"
            "  --seed S            seed of graft's generator (default 0)\n"
            "  --max-loss-ratio R  exit with status 1 when the final test loss is above R\n"
            "                      times the loss before training\n",
            argv0);
    return 2;
}

int main(int argc, char **argv) {
    const char *dir = DATA_DIR;
    long limit = 4000, epochs = 2, batch = 32;
    double lr = 2e-3, max_ratio = -1;
    unsigned long long seed = 0;
    for (int i = 1; i < argc; i += 2) { /* an option and its value */
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(argv[0]);
            return 0;
        }
        if (!v) return usage(argv[0]);
        if (!strcmp(a, "--data")) dir = v, end = (char *)v + strlen(v);
        else if (!strcmp(a, "--limit")) limit = strtol(v, &end, 10);
        else if (!strcmp(a, "--epochs")) epochs = strtol(v, &end, 10);
        else if (!strcmp(a, "--batch")) batch = strtol(v, &end, 10);
        else if (!strcmp(a, "--lr")) lr = strtod(v, &end);
        else if (!strcmp(a, "--seed")) seed = strtoull(v, &end, 10);
        else if (!strcmp(a, "--max-loss-ratio")) max_ratio = strtod(v, &end);
        else return usage(argv[0]);
        if (!end || *end || !*v) return usage(argv[0]);
    }
    if (limit < 1 || epochs < 1 || batch < 1 || !(lr > 0)) return usage(argv[0]);
    char train_path[1024], test_path[1024];
    snprintf(train_path, sizeof train_path, "%s/train-images-idx3-ubyte.gz", dir);
    snprintf(test_path, sizeof test_path, "%s/t10k-images-idx3-ubyte.gz", dir);
    for (int i = 0; i < 2; i++) {
        const char *p = i ? test_path : train_path;
        if (access(p, R_OK) == 0) continue;
        fprintf(stderr, "autoencoder: the Fashion-MNIST data set is not there: %s is missing or "
                "unreadable.\nInstall the Debian package %s (apt-get install %s, or bash "
                "scripts/graft.sh setup), or give the directory with --data DIR.\n", p, PACKAGE,
                PACKAGE);
        return 2;
    }

    int rc = 1;
    model m;
    memset(&m, 0, sizeof m);
    gf_tensor *params[10] = {NULL}, *train = NULL, *test = NULL;
    gf_optimizer *opt = NULL;
    int64_t *perm = NULL;
    if (gf_init() != GF_OK) goto fail;
    const char *spec = getenv("GRAFT_DEVICE");
    gf_device *dev = gf_device_find(spec && *spec ? spec : "cpu");
    if (!dev) goto fail;
    gf_manual_seed(seed);
    train = load_images(train_path, (int)limit, dev);
    test = load_images(test_path, N_TEST, dev);
    if (!train || !test || !model_init(&m, dev, params)) goto fail;
    gf_adam_opts ao = GF_ADAM_OPTS_DEFAULT;
    ao.lr = lr;
    opt = gf_adam_create(params, 10, &ao);
    if (!opt) goto fail;
    int64_t n = gf_tensor_size(train, 0);
    perm = malloc(sizeof *perm * (size_t)n);
    if (!perm) goto fail;
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    uint64_t rng = seed * 2654435761ULL + 1;
    double first = 0, loss = 0;
    if (test_loss(&m, test, &first) != GF_OK) goto fail;
    printf("autoencoder on %s: %lld training images, batch %ld, Adam lr %g; test loss before "
           "training %.5f\n", gf_device_spec(dev), (long long)n, batch, lr, first);
    double t0 = now_seconds();
    long steps = 0;
    for (long e = 1; e <= epochs; e++) {
        /* a fresh shuffle each epoch (Fisher-Yates, seeded) */
        for (int64_t i = n - 1; i > 0; i--) {
            rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
            int64_t j = (int64_t)((rng >> 33) % (uint64_t)(i + 1)), t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
        for (int64_t at = 0; at < n; at += batch) {
            int64_t cnt = n - at < batch ? n - at : batch;
            gf_scope_begin();
            gf_tensor *b = gf_index_select(train, 0, gf_from_data(perm + at, &cnt, 1, GF_I64, dev));
            gf_tensor *l = gf_mse_loss(forward(&m, b), b, GF_REDUCTION_MEAN);
            gf_status s = l ? gf_backward(l, NULL, NULL) : gf_last_status();
            if (s == GF_OK) s = gf_optimizer_step(opt);
            if (s == GF_OK) s = gf_optimizer_zero_grad(opt);
            gf_scope_end();
            if (s != GF_OK) goto fail;
            steps++;
        }
        if (test_loss(&m, test, &loss) != GF_OK) goto fail;
        printf("epoch %ld  test loss %.5f  (%.1f s)\n", e, loss, now_seconds() - t0);
        fflush(stdout);
    }
    printf("test reconstruction loss %.5f -> %.5f (ratio %.3f) after %ld steps, %.1f ms per "
           "step\n", first, loss, loss / first, steps, 1000 * (now_seconds() - t0) / (double)steps);
    rc = 0;
    if (max_ratio >= 0 && !(loss <= max_ratio * first)) {
        fprintf(stderr, "autoencoder: the test loss fell only to %.3f of its first value (the "
                "most allowed is %.3f)\n", loss / first, max_ratio);
        rc = 1;
    }
fail:
    if (rc == 1 && gf_last_status() != GF_OK) fprintf(stderr, "autoencoder: %s\n", gf_last_error());
    gf_optimizer_destroy(opt);
    for (int i = 0; i < 10; i++) gf_tensor_release(params[i]);
    gf_tensor_release(train);
    gf_tensor_release(test);
    free(perm);
    gf_shutdown();
    return rc;
}
