/* SPDX-License-Identifier: BSD-3-Clause */
/* fashion_mnist — trains a convolutional network on Fashion-MNIST (Zalando's
 * 28x28 grayscale images of ten kinds of clothing: 60,000 to train, 10,000
 * to test), with checkpoints to save, resume and evaluate.
 *
 *   fashion_mnist [--epochs N] [--seed S] [--lr X] [--lr-decay G] [--batch B] [--limit N]
 *                 [--test-limit N] [--data DIR] [--save PATH] [--resume PATH]
 *                 [--eval PATH] [--min-accuracy A]
 *
 * The data are the four IDX files of the Debian package dataset-fashion-mnist
 * (/usr/share/datasets/fashion-mnist, gzip-compressed), read with gf_load_idx. Pixels are
 * scaled to [0, 1] and normalised with the training set's mean and standard
 * deviation (0.2860, 0.3530).
 *
 * The network, the "2 Conv + pooling + BN" kind of the data set's benchmark
 * table (NCHW, every layer as torch.nn names it, so a checkpoint loads into
 * the same PyTorch module: tools/fashion_mnist_torch.py):
 *   conv1 3x3 1->32 (pad 1, no bias), bn1, ReLU, max-pool 2   [N, 32, 14, 14]
 *   conv2 3x3 32->64 (pad 1, no bias), bn2, ReLU, max-pool 2  [N, 64, 7, 7]
 *   flatten, dropout 0.25, fc1 3136->512, ReLU, dropout 0.5, fc2 512->10
 * trained with cross-entropy and Adam (lr 1e-3,
 * annealed over the --epochs by a cosine: epoch e of E gets
 * lr (1 + cos(pi (e - 1) / E)) / 2, torch's CosineAnnealingLR stepped per
 * epoch; --lr-decay G instead multiplies it by G after each epoch), batch
 * 128, the training images shuffled every epoch by graft's seeded generator
 * (--seed: the same seed gives the same run), on the device GRAFT_DEVICE
 * names (default cpu). The rate of an epoch follows from its number and
 * --epochs, so a run resumed with the --epochs it was started with
 * continues its schedule.
 * Initialisation as PyTorch's defaults: U(-1/sqrt(fan_in), 1/sqrt(fan_in))
 * for weights and biases, batch norm weight 1 and bias 0.
 *
 * After every epoch: the test accuracy; with --save PATH, a safetensors
 * checkpoint (written to PATH.tmp, then renamed over PATH) holding the
 * weights, the batch-norm statistics, Adam's state ("optimizer.state.<i>.*"),
 * the generator's state and the epoch count. --resume PATH continues from
 * one up to --epochs epochs in all: 1 epoch then --resume for the 2nd gives
 * the same bits as 2 epochs straight (on cpu, with the same number of
 * threads: oneDNN's reductions, hence the last bits, depend on it).
 * --eval PATH prints the test accuracy of a checkpoint and exits.
 *
 * Progress: on a terminal a bar follows the batches (loss, images/s);
 * otherwise one plain line per epoch.
 *
 * Exit status: 0 on success; 1 on a graft error (its message is printed) or
 * when the final test accuracy is below --min-accuracy; 2 for a bad command
 * line or a missing data set (the message names the package to install). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, isatty */
#define TRAIN_PROG "fashion_mnist" /* in messages */

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "graft.h"
#include "train_util.h"

#define DATA_DIR "/usr/share/datasets/fashion-mnist"
#define PACKAGE "dataset-fashion-mnist"
#define SIDE 28
#define N_CLASSES 10
#define N_TRAIN_MAX 60000
#define N_TEST_MAX 10000
#define C1 32
#define C2 64
#define FC_IN (C2 * 7 * 7)
#define HIDDEN 512
#define DROPOUT_FEATURES 0.25 /* on the flattened conv features */
#define DROPOUT_HIDDEN 0.5    /* on fc1's output */
#define BN_MOMENTUM 0.1
#define BN_EPS 1e-5
#define PIXEL_MEAN 0.2860 /* of the training images, pixels scaled to [0, 1] */
#define PIXEL_STD 0.3530
#define OPT_PREFIX "optimizer.state."

static const char *const class_names[N_CLASSES] = {
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
    "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};

/* The learned parameters and the batch-norm statistics, under the names of
 * the equivalent torch.nn module's state_dict. */
enum { CONV1_W, BN1_W, BN1_B, CONV2_W, BN2_W, BN2_B, FC1_W, FC1_B, FC2_W, FC2_B, N_PARAMS };
enum { BN1_MEAN, BN1_VAR, BN2_MEAN, BN2_VAR, N_STATS };
static const char *const param_names[N_PARAMS] = {
    "conv1.weight", "bn1.weight", "bn1.bias", "conv2.weight", "bn2.weight",
    "bn2.bias",     "fc1.weight", "fc1.bias", "fc2.weight",   "fc2.bias"};
static const char *const stat_names[N_STATS] = {"bn1.running_mean", "bn1.running_var",
                                                "bn2.running_mean", "bn2.running_var"};

typedef struct model {
    gf_tensor *p[N_PARAMS];
    gf_tensor *stats[N_STATS];
    gf_device *dev; /* where it computes */
    bool training;  /* batch statistics and dropout, or running statistics */
} model;

/* The program's own options (beyond train_util's). */
typedef struct extra_options {
    int limit, test_limit;
    double lr_decay; /* 0: the cosine schedule */
    const char *data, *save, *resume, *eval;
} extra_options;

static progress bar; /* the progress display (TRY ends it before an error) */

static void usage(FILE *out, const char *argv0) {
    fprintf(out,
            "usage: %s [--epochs N] [--seed S] [--lr X] [--lr-decay G] [--batch B] [--limit N]\n"
            "          [--test-limit N] [--data DIR] [--save PATH] [--resume PATH]\n"
            "          [--eval PATH] [--min-accuracy A]\n"
            "Trains a CNN (two conv + batch norm + max-pool blocks, dropout, two linear\n"
            "layers) on Fashion-MNIST with Adam on the device GRAFT_DEVICE names (default\n"
            "cpu), printing the test accuracy after every epoch. 10 epochs reach about\n"
            "0.924, 15 about 0.930, 20 about 0.933 (docs/benchmarks.md).\n"
            "  --epochs N        epochs in all, counting those of a resumed checkpoint (default 3)\n"
            "  --seed S          seed of graft's generator: initialisation, shuffling, dropout\n"
            "                    (default 0)\n"
            "  --lr X            Adam learning rate of the first epoch (default 0.001),\n"
            "                    annealed to near 0 over the --epochs by a cosine; resume a\n"
            "                    run with the --epochs it was started with\n"
            "  --lr-decay G      instead of the cosine, multiply the rate by G after every\n"
            "                    epoch (1: constant)\n"
            "  --batch B         mini-batch size (default 128)\n"
            "  --limit N         train on the first N training images only (default all 60000)\n"
            "  --test-limit N    test on the first N test images only (default all 10000)\n"
            "  --data DIR        the directory of the IDX files (default " DATA_DIR ",\n"
            "                    where the Debian package " PACKAGE " puts them)\n"
            "  --save PATH       write a safetensors checkpoint after every epoch\n"
            "  --resume PATH     continue training from a checkpoint\n"
            "  --eval PATH       print the test accuracy of a checkpoint and exit\n"
            "  --min-accuracy A  exit with status 1 when the final test accuracy is below A\n",
            argv0);
}

static int take_option(const char *opt, const char *val, void *ctx) {
    extra_options *e = ctx;
    double v;
    if (!strcmp(opt, "--lr-decay")) {
        if (parse_num(val, 1e-6, 1, &v)) return -1;
        e->lr_decay = v;
        return 1;
    }
    if (!strcmp(opt, "--limit") || !strcmp(opt, "--test-limit")) {
        bool test = opt[2] == 't';
        if (parse_num(val, 1, test ? N_TEST_MAX : N_TRAIN_MAX, &v)) return -1;
        *(test ? &e->test_limit : &e->limit) = (int)v;
        return 1;
    }
    const char **slot = !strcmp(opt, "--data")     ? &e->data
                        : !strcmp(opt, "--save")   ? &e->save
                        : !strcmp(opt, "--resume") ? &e->resume
                        : !strcmp(opt, "--eval")   ? &e->eval
                                                   : NULL;
    if (!slot) return 0;
    if (!*val) return -1;
    *slot = val;
    return 1;
}

/* ------------------------------------------------------------ data */
static const char *const file_names[4] = {"train-images-idx3-ubyte.gz",
                                          "train-labels-idx1-ubyte.gz",
                                          "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"};

/* 0 when the four files are there; otherwise says which is missing and
 * what to install, and returns 2 (the exit status). */
static int check_data(const char *dir, char paths[4][1024]) {
    for (int i = 0; i < 4; i++) {
        snprintf(paths[i], sizeof paths[i], "%s/%s", dir, file_names[i]);
        if (access(paths[i], R_OK) == 0) continue;
        fprintf(stderr,
                "%s: the Fashion-MNIST data set is not there: %s is missing or unreadable.\n"
                "Install the Debian package %s (apt-get install %s, or bash scripts/graft.sh\n"
                "setup), or give the directory holding the four IDX files with --data DIR.\n",
                TRAIN_PROG, paths[i], PACKAGE, PACKAGE);
        return 2;
    }
    return 0;
}

/* Images [n, 1, 28, 28] f32, normalised, of the first n (<= 0: all) in the
 * IDX file path; *count gets n. The file must hold [N, 28, 28] bytes. At
 * most two copies of the images live at once (the file's and the f32 one,
 * normalised in place): the peak memory of loading. */
static gf_tensor *load_images(const char *path, int n, int *count, gf_device *dev) {
    gf_tensor *x = NULL;
    gf_scope_begin();
    gf_tensor *raw = gf_load_idx(path, dev);
    if (raw && (gf_tensor_rank(raw) != 3 || gf_tensor_size(raw, 1) != SIDE ||
                gf_tensor_size(raw, 2) != SIDE)) {
        fprintf(stderr, "%s: %s does not hold 28x28 images\n", TRAIN_PROG, path);
        raw = NULL;
    }
    if (raw) {
        int64_t all = gf_tensor_size(raw, 0);
        *count = n > 0 && n < all ? n : (int)all;
        gf_tensor *f = gf_scope_keep(gf_to_dtype(gf_narrow(raw, 0, 0, *count), GF_F32));
        gf_scope_end(); /* the file's copy goes */
        gf_scope_begin();
        if (f && gf_add_scalar_(f, -PIXEL_MEAN * 255.0) == GF_OK &&
            gf_mul_scalar_(f, 1.0 / (PIXEL_STD * 255.0)) == GF_OK)
            x = gf_scope_keep(gf_reshape(f, (const int64_t[]){*count, 1, SIDE, SIDE}, 4));
        gf_tensor_release(f);
    }
    gf_scope_end();
    return x;
}

/* Labels of the first n images as i64 on dev, and into host (n entries)
 * when host is not NULL. */
static gf_tensor *load_labels(const char *path, int n, gf_device *dev, int64_t *host) {
    gf_tensor *y = NULL;
    gf_scope_begin();
    gf_tensor *raw = gf_load_idx(path, dev);
    if (raw && (gf_tensor_rank(raw) != 1 || gf_tensor_size(raw, 0) < n)) {
        fprintf(stderr, "%s: %s does not hold %d labels\n", TRAIN_PROG, path, n);
        raw = NULL;
    }
    if (raw) y = gf_to_dtype(gf_narrow(raw, 0, 0, n), GF_I64);
    if (y && host && gf_tensor_to_host(y, host, (size_t)n * sizeof *host) != GF_OK) y = NULL;
    y = gf_scope_keep(gf_contiguous(y));
    gf_scope_end();
    return y;
}

/* The process's peak resident memory in KiB (VmHWM: of this program's own
 * memory map, from its exec on; getrusage's ru_maxrss would also count the
 * parent's pages before the exec), or -1 where /proc does not say. */
static long peak_resident_kb(void) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    long kb = -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "VmHWM:", 6)) kb = strtol(line + 6, NULL, 10);
    fclose(f);
    return kb;
}

/* ------------------------------------------------------------ model */
/* A parameter that requires grad: U(-bound, bound), or filled with `fill`
 * when bound is 0. */
static gf_tensor *param(const int64_t *sizes, int rank, double bound, double fill,
                        gf_device *dev) {
    gf_tensor *t = bound > 0 ? gf_rand_uniform(sizes, rank, -bound, bound, GF_F32, dev)
                             : gf_full(sizes, rank, fill, GF_F32, dev);
    if (t && gf_tensor_set_requires_grad(t, true) != GF_OK) {
        gf_tensor_release(t);
        return NULL;
    }
    return t;
}

static gf_status model_init(model *m, gf_device *dev) {
    m->dev = dev;
    const double k1 = 1.0 / sqrt(1 * 9), k2 = 1.0 / sqrt(C1 * 9);
    const double k3 = 1.0 / sqrt(FC_IN), k4 = 1.0 / sqrt(HIDDEN);
    m->p[CONV1_W] = param((const int64_t[]){C1, 1, 3, 3}, 4, k1, 0, dev);
    m->p[BN1_W] = param((const int64_t[]){C1}, 1, 0, 1, dev);
    m->p[BN1_B] = param((const int64_t[]){C1}, 1, 0, 0, dev);
    m->p[CONV2_W] = param((const int64_t[]){C2, C1, 3, 3}, 4, k2, 0, dev);
    m->p[BN2_W] = param((const int64_t[]){C2}, 1, 0, 1, dev);
    m->p[BN2_B] = param((const int64_t[]){C2}, 1, 0, 0, dev);
    m->p[FC1_W] = param((const int64_t[]){HIDDEN, FC_IN}, 2, k3, 0, dev);
    m->p[FC1_B] = param((const int64_t[]){HIDDEN}, 1, k3, 0, dev);
    m->p[FC2_W] = param((const int64_t[]){N_CLASSES, HIDDEN}, 2, k4, 0, dev);
    m->p[FC2_B] = param((const int64_t[]){N_CLASSES}, 1, k4, 0, dev);
    for (int i = 0; i < N_STATS; i++) {
        int64_t c = i < BN2_MEAN ? C1 : C2;
        m->stats[i] = gf_full(&c, 1, i % 2 ? 1.0 : 0.0, GF_F32, dev); /* mean 0, var 1 */
    }
    for (int i = 0; i < N_PARAMS; i++)
        if (!m->p[i]) return gf_last_status();
    for (int i = 0; i < N_STATS; i++)
        if (!m->stats[i]) return gf_last_status();
    return GF_OK;
}

static void model_free(model *m) {
    for (int i = 0; i < N_PARAMS; i++) gf_tensor_release(m->p[i]);
    for (int i = 0; i < N_STATS; i++) gf_tensor_release(m->stats[i]);
}

/* conv 3x3 (pad 1), batch norm, ReLU, max-pool 2. */
static gf_tensor *block(const model *m, const gf_tensor *x, int conv, gf_tensor *mean,
                        gf_tensor *var) {
    const gf_conv2d_opts same = {.padding = {1, 1}};
    const gf_pool2d_opts half = {.kernel = {2, 2}};
    gf_tensor *h = gf_conv2d(x, m->p[conv], NULL, &same);
    h = gf_batch_norm(h, mean, var, m->p[conv + 1], m->p[conv + 2], m->training, BN_MOMENTUM,
                      BN_EPS, NULL, NULL);
    return gf_max_pool2d(gf_relu(h), &half, NULL);
}

/* x W^T + b, W [out, in] as torch.nn.Linear keeps it. */
static gf_tensor *linear(const gf_tensor *x, const gf_tensor *w, const gf_tensor *b) {
    return gf_add(gf_matmul(x, gf_transpose(w, 0, 1)), b);
}

/* Logits [N, 10] of x [N, 1, 28, 28] (a train_forward_fn), x on the host or
 * on the model's device. */
static gf_tensor *model_forward(const void *mp, const gf_tensor *x) {
    const model *m = mp;
    gf_tensor *h = block(m, gf_to_device(x, m->dev), CONV1_W, m->stats[BN1_MEAN],
                         m->stats[BN1_VAR]);
    h = block(m, h, CONV2_W, m->stats[BN2_MEAN], m->stats[BN2_VAR]);
    h = gf_dropout(gf_reshape(h, (const int64_t[]){-1, FC_IN}, 2), DROPOUT_FEATURES,
                   m->training);
    h = gf_dropout(gf_relu(linear(h, m->p[FC1_W], m->p[FC1_B])), DROPOUT_HIDDEN, m->training);
    return linear(h, m->p[FC2_W], m->p[FC2_B]);
}

/* The test accuracy (per class too) of the n test images x, labels y. */
/* Test images go through in chunks of the training batch: the forward pass
 * then takes the blocks a training step freed (the same shapes), instead of
 * a second working set of other sizes that the caching allocator would keep
 * beside the first. */
static gf_status evaluate(model *m, const gf_tensor *x, const int64_t *labels, int n, int chunk,
                          int64_t *pred, double *acc, double *per_class) {
    m->training = false;
    for (int first = 0; first < n; first += chunk) {
        int len = n - first < chunk ? n - first : chunk;
        gf_status s = train_predict(model_forward, m, x, first, len, pred + first);
        if (s != GF_OK) return s;
    }
    m->training = true;
    *acc = train_accuracy(pred, labels, n, N_CLASSES, per_class);
    return GF_OK;
}

/* ------------------------------------------------------------ checkpoints */
/* Writes the model, the optimiser's state (opt may be NULL), the generator's
 * state and the epoch to path (through path.tmp, renamed when complete, so
 * a failure leaves the previous checkpoint whole). */
static gf_status save_checkpoint(const model *m, const gf_optimizer *opt, int epoch,
                                 const char *path) {
    enum { MAX_ENTRIES = N_PARAMS + N_STATS + 3 * N_PARAMS + 2 };
    const char *names[MAX_ENTRIES];
    const gf_tensor *ts[MAX_ENTRIES];
    int n = 0;
    for (int i = 0; i < N_PARAMS; i++, n++) {
        names[n] = param_names[i];
        ts[n] = m->p[i];
    }
    for (int i = 0; i < N_STATS; i++, n++) {
        names[n] = stat_names[i];
        ts[n] = m->stats[i];
    }
    uint64_t seed, offset;
    gf_rng_get_state(&seed, &offset);
    const int64_t rng[2] = {(int64_t)seed, (int64_t)offset}; /* the bits of the u64s */
    gf_status s = GF_OK;
    gf_scope_begin();
    gf_tensor_dict *od = opt ? gf_optimizer_state_dict(opt, OPT_PREFIX) : NULL;
    if (opt && !od) s = gf_last_status();
    for (int i = 0; s == GF_OK && i < gf_tensor_dict_size(od) && n < MAX_ENTRIES - 2; i++, n++) {
        names[n] = gf_tensor_dict_name(od, i);
        ts[n] = gf_tensor_dict_at(od, i);
    }
    names[n] = "rng.state";
    ts[n++] = gf_from_data(rng, (const int64_t[]){2}, 1, GF_I64, NULL);
    names[n] = "epoch";
    ts[n++] = gf_scalar(epoch, GF_I64, NULL);
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    if (s == GF_OK) s = gf_save_safetensors(names, ts, n, tmp);
    if (s == GF_OK && rename(tmp, path) != 0) {
        fprintf(stderr, "%s: cannot rename %s to %s\n", TRAIN_PROG, tmp, path);
        remove(tmp);
        s = GF_ERR_INVALID;
    }
    gf_tensor_dict_destroy(od);
    gf_scope_end();
    return s;
}

/* Copies src (from a checkpoint) into dst, which must have its sizes. */
static bool restore(gf_tensor *dst, const gf_tensor_dict *d, const char *name, const char *path) {
    gf_tensor *src = gf_tensor_dict_get(d, name);
    if (!src) return false;
    int rank = gf_tensor_rank(dst);
    bool same = gf_tensor_rank(src) == rank;
    for (int i = 0; same && i < rank; i++) same = gf_tensor_size(src, i) == gf_tensor_size(dst, i);
    if (!same) {
        fprintf(stderr, "%s: %s in %s has other sizes than this model's: not a checkpoint of "
                "this network\n", TRAIN_PROG, name, path);
        return false;
    }
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    gf_status s = gf_copy_(dst, src);
    gf_grad_mode_set(prev);
    return s == GF_OK;
}

/* Loads a checkpoint: the model always; with opt, the optimiser's state,
 * the generator's state and the epoch it was saved after (*epoch). */
static gf_status load_checkpoint(model *m, gf_optimizer *opt, int *epoch, const char *path,
                                 gf_device *dev) {
    gf_tensor_dict *d = gf_load_safetensors(path, dev);
    if (!d) return gf_last_status();
    gf_status s = GF_OK;
    for (int i = 0; s == GF_OK && i < N_PARAMS; i++)
        if (!restore(m->p[i], d, param_names[i], path)) s = GF_ERR_INVALID;
    for (int i = 0; s == GF_OK && i < N_STATS; i++)
        if (!restore(m->stats[i], d, stat_names[i], path)) s = GF_ERR_INVALID;
    if (s == GF_OK && opt) {
        s = gf_optimizer_load_state_dict(opt, d, OPT_PREFIX);
        gf_tensor *rng = s == GF_OK ? gf_tensor_dict_get(d, "rng.state") : NULL;
        gf_tensor *ep = rng ? gf_tensor_dict_get(d, "epoch") : NULL;
        int64_t st[2] = {0, 0}, e = 0;
        if (s == GF_OK && (!ep || gf_tensor_numel(rng) != 2 || gf_tensor_dtype(rng) != GF_I64 ||
                           gf_tensor_dtype(ep) != GF_I64 ||
                           gf_tensor_to_host(rng, st, sizeof st) != GF_OK ||
                           gf_tensor_to_host(ep, &e, sizeof e) != GF_OK || e < 0 || e > 100000)) {
            fprintf(stderr, "%s: %s has no valid rng.state and epoch: it cannot be resumed\n",
                    TRAIN_PROG, path);
            s = GF_ERR_INVALID;
        }
        if (s == GF_OK) {
            gf_rng_set_state((uint64_t)st[0], (uint64_t)st[1]);
            *epoch = (int)e;
        }
    }
    gf_tensor_dict_destroy(d);
    return s;
}

/* ------------------------------------------------------------ main */
int main(int argc, char **argv) {
    train_options opt = {.epochs = 3, .batch = 128, .lr = 1e-3, .seed = 0, .min_accuracy = -1};
    extra_options ex = {.data = DATA_DIR, .lr_decay = 0};
    int status = train_parse_args(argc, argv, TRAIN_PROG, N_TRAIN_MAX, usage, &opt, take_option,
                                  &ex);
    if (status >= 0) return status;
    char paths[4][1024];
    if (check_data(ex.data, paths)) return 2;

    static int64_t labels[N_TEST_MAX], pred[N_TEST_MAX], perm[N_TRAIN_MAX];
    static float u[N_TRAIN_MAX];
    int rc = 1, n_train = 0, n_test = 0, start_epoch = 0;
    model m = {.training = true};
    gf_tensor *x_train = NULL, *y_train = NULL, *x_test = NULL, *y_test = NULL;
    gf_optimizer *adam = NULL;
    double acc = 0, per_class[N_CLASSES] = {0};
    progress_init(&bar, opt.epochs);

    gf_device *dev = train_device();
    TRY(dev != NULL);
    /* The data stay on the host (188 MB of training images: more than some
     * devices allocate at once); each batch is copied to dev. */
    gf_device *host = gf_device_find("cpu");
    TRY(host != NULL);
    gf_manual_seed(opt.seed);
    double t_load = now_seconds();
    x_test = load_images(paths[2], ex.test_limit, &n_test, host);
    TRY(x_test != NULL);
    y_test = load_labels(paths[3], n_test, host, labels);
    TRY(y_test != NULL);
    if (!ex.eval) {
        x_train = load_images(paths[0], ex.limit, &n_train, host);
        TRY(x_train != NULL);
        y_train = load_labels(paths[1], n_train, host, NULL);
        TRY(y_train != NULL);
    }
    t_load = now_seconds() - t_load;
    TRY(model_init(&m, dev) == GF_OK);

    if (ex.eval) {
        TRY(load_checkpoint(&m, NULL, NULL, ex.eval, dev) == GF_OK);
        double t0 = now_seconds();
        TRY(evaluate(&m, x_test, labels, n_test, opt.batch, pred, &acc, per_class) == GF_OK);
        for (int k = 0; k < N_CLASSES; k++) printf("  %-12s %.4f\n", class_names[k], per_class[k]);
        printf("checkpoint %s: test accuracy %.4f (%ld of %d images), %.1f s\n", ex.eval, acc,
               lround(acc * n_test), n_test, now_seconds() - t0);
        rc = train_check_accuracy(TRAIN_PROG, "test accuracy", acc, opt.min_accuracy);
        goto fail;
    }

    gf_adam_opts ao = GF_ADAM_OPTS_DEFAULT;
    ao.lr = opt.lr;
    adam = gf_adam_create(m.p, N_PARAMS, &ao);
    TRY(adam != NULL);
    if (ex.resume) {
        TRY(load_checkpoint(&m, adam, &start_epoch, ex.resume, dev) == GF_OK);
        printf("resumed from %s after epoch %d\n", ex.resume, start_epoch);
    }
    char sched[64];
    if (ex.lr_decay > 0)
        snprintf(sched, sizeof sched, "x %g per epoch", ex.lr_decay);
    else
        snprintf(sched, sizeof sched, "cosine over %d epochs", opt.epochs);
    printf("data: %d training and %d test images 1x28x28 (read in %.1f s); conv %d, conv %d, "
           "linear %d->%d->%d; Adam lr %g, %s, batch %d, %d epochs\n",
           n_train, n_test, t_load, C1, C2, FC_IN, HIDDEN, N_CLASSES, opt.lr, sched,
           opt.batch, opt.epochs);

    train_loop loop = {.dev = dev, .x = x_train, .y = y_train, .n = n_train, .batch = opt.batch,
                       .forward = model_forward, .model = &m, .opt = adam,
                       .perm = perm, .u = u, .bar = &bar};
    double t0 = now_seconds(), train_time = 0;
    int trained = 0;
    for (int epoch = start_epoch + 1; epoch <= opt.epochs; epoch++) {
        double loss = 0, te = now_seconds();
        /* From the epoch's number (and --epochs) alone, so a resumed run
         * gets the same. */
        double lr = ex.lr_decay > 0
                        ? opt.lr * pow(ex.lr_decay, epoch - 1)
                        : opt.lr * (1 + cos(acos(-1.0) * (epoch - 1) / opt.epochs)) / 2;
        TRY(gf_optimizer_set_lr(adam, lr) == GF_OK);
        TRY(train_epoch(&loop, epoch, &loss) == GF_OK);
        te = now_seconds() - te;
        train_time += te;
        trained++;
        TRY(evaluate(&m, x_test, labels, n_test, opt.batch, pred, &acc, per_class) == GF_OK);
        progress_line(&bar, "epoch %3d  lr %.2e  loss %.4f  test accuracy %.4f  train %.1f s "
                      "(%.0f images/s)  total %.1f s", epoch, lr, loss, acc, te, n_train / te,
                      now_seconds() - t0);
        if (ex.save) TRY(save_checkpoint(&m, adam, epoch, ex.save) == GF_OK);
    }
    if (!trained) {
        TRY(evaluate(&m, x_test, labels, n_test, opt.batch, pred, &acc, per_class) == GF_OK);
        printf("the checkpoint has %d epochs already (--epochs %d): nothing to train\n",
               start_epoch, opt.epochs);
    }
    for (int k = 0; k < N_CLASSES; k++) printf("  %-12s %.4f\n", class_names[k], per_class[k]);
    printf("final test accuracy %.4f (%ld of %d images) after %d epochs, %.1f s (training "
           "%.1f s, %.0f images/s)\n",
           acc, lround(acc * n_test), n_test, opt.epochs > start_epoch ? opt.epochs : start_epoch,
           now_seconds() - t0, train_time,
           train_time > 0 ? (double)n_train * trained / train_time : 0.0);
    long peak_kb = peak_resident_kb();
    if (peak_kb > 0) printf("peak resident memory %.0f MB\n", peak_kb / 1024.0);
    rc = train_check_accuracy(TRAIN_PROG, "final test accuracy", acc, opt.min_accuracy);
fail:
    gf_optimizer_destroy(adam);
    model_free(&m);
    gf_tensor_release(x_train);
    gf_tensor_release(y_train);
    gf_tensor_release(x_test);
    gf_tensor_release(y_test);
    return train_shutdown(TRAIN_PROG, rc);
}
