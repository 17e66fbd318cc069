/* SPDX-License-Identifier: BSD-3-Clause */
/* fashion_mnist — trains a convolutional network on Fashion-MNIST (Zalando's
 * 28x28 grayscale images of ten kinds of clothing: 60,000 to train, 10,000
 * to test), with checkpoints to save, resume and evaluate.
 *
 *   fashion_mnist [--epochs N] [--seed S] [--lr X] [--lr-decay G] [--batch B] [--limit N]
 *                 [--test-limit N] [--data DIR] [--save PATH] [--resume PATH]
 *                 [--eval PATH] [--min-accuracy A] [--autocast bf16|f16] [--capture]
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
 * With --capture the training step is captured once (graft/graph.h) after
 * one eager warm-up step, and every later full batch is a replay of it: the
 * batch is copied into the graph's input tensors in place, the step's
 * launches run again without dispatch, and Adam's step counts, the
 * learning rate and dropout's random offsets move on as in the eager run,
 * which it follows loss for loss. A last, shorter batch of an epoch runs
 * eagerly (a graph replays the shapes it was captured with).
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

/* The network as torch.nn modules (graft/module.h), under the names of the
 * equivalent torch.nn model's state_dict: conv1, bn1, conv2, bn2, fc1, fc2
 * (the checkpoint's keys, num_batches_tracked included). */
typedef struct model {
    gf_module base; /* first: a model is a module */
    gf_device *dev; /* where it computes */
} model;

/* The program's own options (beyond train_util's). */
typedef struct extra_options {
    int limit, test_limit;
    double lr_decay; /* 0: the cosine schedule */
    const char *data, *save, *resume, *eval;
} extra_options;

/* --capture: the training step captured once, replayed per batch. */
static bool capture_step_graph = false;

/* --autocast: the forward pass runs in an autocast region of this dtype
 * (GF_F32: none). The weights, Adam's state and the checkpoints stay f32. */
static gf_dtype autocast_dtype = GF_F32;

static progress bar; /* the progress display (TRY ends it before an error) */

static void usage(FILE *out, const char *argv0) {
    fprintf(out,
            "usage: %s [--epochs N] [--seed S] [--lr X] [--lr-decay G] [--batch B] [--limit N]\n"
            "          [--test-limit N] [--data DIR] [--save PATH] [--resume PATH]\n"
            "          [--eval PATH] [--min-accuracy A] [--autocast bf16|f16] [--capture]\n"
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
            "  --min-accuracy A  exit with status 1 when the final test accuracy is below A\n"
            "  --autocast D      mixed precision: the forward pass in an autocast region of\n"
            "                    dtype D (bf16 or f16), f32 weights and loss\n"
            "  --capture         capture the training step once (after a warm-up step) and\n"
            "                    replay it for every later full batch\n",
            argv0);
}

static int take_option(const char *opt, const char *val, void *ctx) {
    extra_options *e = ctx;
    double v;
    if (!strcmp(opt, "--autocast")) {
        if (!strcmp(val, "bf16")) autocast_dtype = GF_BF16;
        else if (!strcmp(val, "f16")) autocast_dtype = GF_F16;
        else return -1;
        return 1;
    }
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
static gf_tensor *call(const model *m, const char *child, gf_tensor *x) {
    return x ? gf_module_forward(gf_module_get_submodule(&m->base, child), &x, 1) : NULL;
}

/* conv 3x3 (pad 1), batch norm, ReLU, max-pool 2 (inside gf_module_forward:
 * the intermediates are ours to release). */
static gf_tensor *block(const model *m, gf_tensor *x, const char *conv, const char *bn) {
    gf_tensor *c = call(m, conv, x), *b = call(m, bn, c), *r = b ? gf_relu(b) : NULL;
    gf_tensor *y = call(m, "pool", r);
    gf_tensor_release(c), gf_tensor_release(b), gf_tensor_release(r);
    return y;
}

/* Logits [N, 10] of x [N, 1, 28, 28] on the model's device. */
static gf_tensor *net_forward(gf_module *self, gf_tensor *const *in, int n) {
    (void)n;
    const model *m = (const model *)self;
    gf_tensor *h1 = block(m, in[0], "conv1", "bn1"), *h2 = h1 ? block(m, h1, "conv2", "bn2") : NULL;
    gf_tensor *f = call(m, "flatten", h2), *d1 = call(m, "drop1", f), *a = call(m, "fc1", d1);
    gf_tensor *r = a ? gf_relu(a) : NULL, *d2 = call(m, "drop2", r), *y = call(m, "fc2", d2);
    gf_tensor *tmp[] = {h1, h2, f, d1, a, r, d2};
    for (size_t i = 0; i < sizeof tmp / sizeof tmp[0]; i++) gf_tensor_release(tmp[i]);
    return y;
}
static const gf_module_class net_class = {"FashionNet", net_forward, NULL};

static gf_status add(model *m, const char *name, gf_module *child) {
    gf_status s = child ? gf_module_register_module(&m->base, name, child) : gf_last_status();
    gf_module_release(child);
    return s;
}

/* PyTorch's initialisation (nn.Conv2d, nn.BatchNorm2d, nn.Linear). */
static model *model_new(gf_device *dev) {
    model *m = calloc(1, sizeof *m);
    if (!m || gf_module_init(&m->base, &net_class) != GF_OK) {
        free(m);
        return NULL;
    }
    m->dev = dev;
    const int k3[2] = {3, 3};
    const gf_conv2d_opts same = {.stride = {1, 1}, .padding = {1, 1}, .dilation = {1, 1}, .groups = 1};
    const gf_pool2d_opts half = {.kernel = {2, 2}};
    gf_status s = add(m, "conv1", gf_nn_conv2d(1, C1, k3, &same, false, GF_F32, dev));
    if (s == GF_OK) s = add(m, "bn1", gf_nn_batch_norm(C1, BN_EPS, BN_MOMENTUM, true, true, GF_F32, dev));
    if (s == GF_OK) s = add(m, "conv2", gf_nn_conv2d(C1, C2, k3, &same, false, GF_F32, dev));
    if (s == GF_OK) s = add(m, "bn2", gf_nn_batch_norm(C2, BN_EPS, BN_MOMENTUM, true, true, GF_F32, dev));
    if (s == GF_OK) s = add(m, "pool", gf_nn_max_pool2d(&half));
    if (s == GF_OK) s = add(m, "flatten", gf_nn_flatten());
    if (s == GF_OK) s = add(m, "drop1", gf_nn_dropout(DROPOUT_FEATURES));
    if (s == GF_OK) s = add(m, "fc1", gf_nn_linear(FC_IN, HIDDEN, true, GF_F32, dev));
    if (s == GF_OK) s = add(m, "drop2", gf_nn_dropout(DROPOUT_HIDDEN));
    if (s == GF_OK) s = add(m, "fc2", gf_nn_linear(HIDDEN, N_CLASSES, true, GF_F32, dev));
    if (s != GF_OK) {
        gf_module_release(&m->base);
        return NULL;
    }
    return m;
}

/* A train_forward_fn: x on the host or on the model's device. */
static gf_tensor *model_forward(const void *mp, const gf_tensor *x) {
    const model *m = mp;
    gf_tensor *xd = gf_to_device(x, m->dev);
    if (!xd || autocast_dtype == GF_F32) return xd ? gf_module_forward((gf_module *)&m->base, &xd, 1) : NULL;
    /* Mixed precision: the layers in the region's dtype (PyTorch's CPU
     * lists), the logits back to f32 for the loss. */
    if (gf_autocast_begin(gf_device_type(m->dev), autocast_dtype) != GF_OK) return NULL;
    gf_tensor *y = gf_module_forward((gf_module *)&m->base, &xd, 1);
    gf_autocast_end();
    return y ? gf_to_dtype(y, GF_F32) : NULL;
}

/* The test accuracy (per class too) of the n test images x, labels y. */
/* Test images go through in chunks of the training batch: the forward pass
 * then takes the blocks a training step freed (the same shapes), instead of
 * a second working set of other sizes that the caching allocator would keep
 * beside the first. */
static gf_status evaluate(model *m, const gf_tensor *x, const int64_t *labels, int n, int chunk,
                          int64_t *pred, double *acc, double *per_class) {
    gf_module_train(&m->base, false);
    for (int first = 0; first < n; first += chunk) {
        int len = n - first < chunk ? n - first : chunk;
        gf_status s = train_predict(model_forward, m, x, first, len, pred + first);
        if (s != GF_OK) return s;
    }
    gf_module_train(&m->base, true);
    *acc = train_accuracy(pred, labels, n, N_CLASSES, per_class);
    return GF_OK;
}

/* ------------------------------------------------------------ --capture */
/* The graph of the training step and its inputs, across epochs. */
typedef struct captured {
    gf_tensor *x, *y; /* a full batch, written in place before each step */
    gf_tensor *loss;  /* the step's loss: an output of the graph */
    gf_graph *graph;
    int steps;        /* full-batch steps so far: 1 eager warm-up, then the captured one */
} captured;

/* One training step in the form a graph needs: gradients zeroed in place
 * first (they are the graph's inputs), no host read. Returns the loss (a
 * new reference). The same work as train_epoch's step. */
static gf_tensor *graph_step(const train_loop *t, gf_tensor *x, gf_tensor *y) {
    gf_scope_begin();
    gf_status s = gf_optimizer_zero_grad_keep(t->opt);
    gf_tensor *loss = s == GF_OK ? gf_cross_entropy(t->forward(t->model, x), y, NULL,
                                                    GF_REDUCTION_MEAN, -100, 0.0)
                                 : NULL;
    s = loss ? gf_backward(loss, NULL, NULL) : gf_last_status();
    if (s == GF_OK) s = gf_optimizer_step(t->opt);
    gf_tensor *keep = s == GF_OK ? gf_scope_keep(loss) : NULL;
    gf_scope_end();
    return keep;
}

/* train_epoch with the step captured and replayed: the same shuffle, the
 * same batches, the same random draws in the same order. */
static gf_status train_epoch_captured(const train_loop *t, captured *c, int epoch,
                                      double *mean_loss) {
    double t0 = now_seconds();
    gf_tensor *order = shuffled_index(gf_tensor_device(t->x), t->perm, t->u, t->n);
    if (!order) return gf_last_status();
    if (!c->x) {
        c->x = gf_empty((const int64_t[]){t->batch, 1, SIDE, SIDE}, 4, GF_F32, t->dev);
        c->y = gf_empty((const int64_t[]){t->batch}, 1, GF_I64, t->dev);
    }
    int n = t->n, n_batches = (n + t->batch - 1) / t->batch, batches = 0;
    double loss_sum = 0;
    gf_status s = c->x && c->y ? GF_OK : gf_last_status();
    for (int start = 0; start < n && s == GF_OK; start += t->batch) {
        int len = n - start < t->batch ? n - start : t->batch;
        gf_scope_begin();
        gf_tensor *idx = gf_narrow(order, 0, start, len);
        gf_tensor *xb = gf_index_select(t->x, 0, idx), *yb = gf_index_select(t->y, 0, idx);
        gf_tensor *loss = NULL, *own = NULL; /* loss: c's, or own (released below) */
        s = xb && yb ? GF_OK : gf_last_status();
        if (s == GF_OK && len < t->batch) { /* a shorter last batch: eagerly */
            loss = own = graph_step(t, gf_to_device(xb, t->dev), gf_to_device(yb, t->dev));
            s = loss ? GF_OK : gf_last_status();
        } else if (s == GF_OK) {
            s = gf_copy_(c->x, xb);
            if (s == GF_OK) s = gf_copy_(c->y, yb);
            if (s == GF_OK && c->graph) {
                s = gf_graph_replay(c->graph);
            } else if (s == GF_OK) {
                bool capture = c->steps == 1; /* after the warm-up step */
                if (capture) s = gf_graph_capture_begin(t->dev);
                gf_tensor_release(c->loss);
                c->loss = s == GF_OK ? graph_step(t, c->x, c->y) : NULL;
                if (capture) {
                    c->graph = gf_graph_capture_end();
                    if (!c->graph && s == GF_OK) s = gf_last_status();
                }
                if (s == GF_OK && !c->loss) s = gf_last_status();
                c->steps++;
            }
            loss = c->loss;
        }
        double lv = 0;
        if (s == GF_OK) s = gf_tensor_item(loss, &lv);
        gf_scope_end();
        gf_tensor_release(own);
        if (s != GF_OK) break;
        loss_sum += lv;
        batches++;
        train_log_loss(epoch, batches, lv);
        progress_update(t->bar, epoch, batches, n_batches, loss_sum / batches,
                        (start + len) / (now_seconds() - t0 + 1e-9));
    }
    gf_tensor_release(order);
    *mean_loss = batches ? loss_sum / batches : 0;
    return s;
}

static void captured_free(captured *c) {
    gf_graph_destroy(c->graph);
    gf_tensor_release(c->loss);
    gf_tensor_release(c->x);
    gf_tensor_release(c->y);
}

/* ------------------------------------------------------------ checkpoints */
/* Writes the model's state dict, the optimiser's state (opt may be NULL),
 * the generator's state and the epoch to path (through path.tmp, renamed
 * when complete, so a failure leaves the previous checkpoint whole). */
static gf_status save_checkpoint(const model *m, const gf_optimizer *opt, int epoch,
                                 const char *path) {
    uint64_t seed, offset;
    gf_rng_get_state(&seed, &offset);
    const int64_t rng[2] = {(int64_t)seed, (int64_t)offset}; /* the bits of the u64s */
    gf_scope_begin();
    gf_tensor_dict *d = gf_module_state_dict(&m->base);
    gf_tensor_dict *od = opt ? gf_optimizer_state_dict(opt, OPT_PREFIX) : NULL;
    gf_status s = d && (od || !opt) ? GF_OK : gf_last_status();
    for (int i = 0; s == GF_OK && i < gf_tensor_dict_size(od); i++)
        s = gf_tensor_dict_set(d, gf_tensor_dict_name(od, i), gf_tensor_dict_at(od, i));
    if (s == GF_OK) s = gf_tensor_dict_set(d, "rng.state", gf_from_data(rng, (const int64_t[]){2}, 1, GF_I64, NULL));
    if (s == GF_OK) s = gf_tensor_dict_set(d, "epoch", gf_scalar(epoch, GF_I64, NULL));
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    if (s == GF_OK) s = gf_save_safetensors_dict(d, tmp);
    if (s == GF_OK && rename(tmp, path) != 0) {
        fprintf(stderr, "%s: cannot rename %s to %s\n", TRAIN_PROG, tmp, path);
        remove(tmp);
        s = GF_ERR_INVALID;
    }
    gf_tensor_dict_destroy(od);
    gf_tensor_dict_destroy(d);
    gf_scope_end();
    return s;
}

/* Loads a checkpoint: the model always (by name; the other entries are the
 * optimiser's and the run's); with opt, the optimiser's state, the
 * generator's state and the epoch it was saved after (*epoch). */
static gf_status load_checkpoint(model *m, gf_optimizer *opt, int *epoch, const char *path,
                                 gf_device *dev) {
    gf_tensor_dict *d = gf_load_safetensors(path, dev);
    if (!d) return gf_last_status();
    gf_load_report rep;
    gf_status s = gf_module_load_state_dict(&m->base, d, false, &rep);
    if (s == GF_OK && rep.n_missing) {
        fprintf(stderr, "%s: %s lacks %d of this model's entries (%s...): not a checkpoint of "
                "this network\n", TRAIN_PROG, path, rep.n_missing, rep.missing[0]);
        s = GF_ERR_INVALID;
    }
    gf_load_report_clear(&rep);
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
    /* --capture takes no value: taken out before the common parser. */
    char *args[64];
    int n_args = 0;
    for (int i = 0; i < argc && n_args < 64; i++) {
        if (i > 0 && !strcmp(argv[i], "--capture")) capture_step_graph = true;
        else args[n_args++] = argv[i];
    }
    int status = train_parse_args(n_args, args, TRAIN_PROG, N_TRAIN_MAX, usage, &opt,
                                  take_option, &ex);
    if (status >= 0) return status;
    char paths[4][1024];
    if (check_data(ex.data, paths)) return 2;

    static int64_t labels[N_TEST_MAX], pred[N_TEST_MAX], perm[N_TRAIN_MAX];
    static float u[N_TRAIN_MAX];
    int rc = 1, n_train = 0, n_test = 0, start_epoch = 0;
    model *m = NULL;
    gf_tensor *x_train = NULL, *y_train = NULL, *x_test = NULL, *y_test = NULL;
    gf_optimizer *adam = NULL;
    captured cap = {0};
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
    m = model_new(dev);
    TRY(m != NULL);

    if (ex.eval) {
        TRY(load_checkpoint(m, NULL, NULL, ex.eval, dev) == GF_OK);
        double t0 = now_seconds();
        TRY(evaluate(m, x_test, labels, n_test, opt.batch, pred, &acc, per_class) == GF_OK);
        for (int k = 0; k < N_CLASSES; k++) printf("  %-12s %.4f\n", class_names[k], per_class[k]);
        printf("checkpoint %s: test accuracy %.4f (%ld of %d images), %.1f s\n", ex.eval, acc,
               lround(acc * n_test), n_test, now_seconds() - t0);
        rc = train_check_accuracy(TRAIN_PROG, "test accuracy", acc, opt.min_accuracy);
        goto fail;
    }

    gf_adam_opts ao = GF_ADAM_OPTS_DEFAULT;
    ao.lr = opt.lr;
    gf_tensor *params[16];
    int n_params = gf_module_parameters(&m->base, params, 16);
    TRY(n_params > 0 && n_params <= 16);
    adam = gf_adam_create(params, n_params, &ao);
    TRY(adam != NULL);
    if (ex.resume) {
        TRY(load_checkpoint(m, adam, &start_epoch, ex.resume, dev) == GF_OK);
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
                       .forward = model_forward, .model = m, .opt = adam,
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
        if (capture_step_graph) TRY(train_epoch_captured(&loop, &cap, epoch, &loss) == GF_OK);
        else TRY(train_epoch(&loop, epoch, &loss) == GF_OK);
        te = now_seconds() - te;
        train_time += te;
        trained++;
        TRY(evaluate(m, x_test, labels, n_test, opt.batch, pred, &acc, per_class) == GF_OK);
        progress_line(&bar, "epoch %3d  lr %.2e  loss %.4f  test accuracy %.4f  train %.1f s "
                      "(%.0f images/s)  total %.1f s", epoch, lr, loss, acc, te, n_train / te,
                      now_seconds() - t0);
        if (ex.save) TRY(save_checkpoint(m, adam, epoch, ex.save) == GF_OK);
    }
    if (!trained) {
        TRY(evaluate(m, x_test, labels, n_test, opt.batch, pred, &acc, per_class) == GF_OK);
        printf("the checkpoint has %d epochs already (--epochs %d): nothing to train\n",
               start_epoch, opt.epochs);
    }
    for (int k = 0; k < N_CLASSES; k++) printf("  %-12s %.4f\n", class_names[k], per_class[k]);
    printf("final test accuracy %.4f (%ld of %d images) after %d epochs, %.1f s (training "
           "%.1f s, %.0f images/s%s)\n",
           acc, lround(acc * n_test), n_test, opt.epochs > start_epoch ? opt.epochs : start_epoch,
           now_seconds() - t0, train_time,
           train_time > 0 ? (double)n_train * trained / train_time : 0.0,
           capture_step_graph ? "; the step captured and replayed" : "");
    long peak_kb = peak_resident_kb();
    if (peak_kb > 0) printf("peak resident memory %.0f MB\n", peak_kb / 1024.0);
    rc = train_check_accuracy(TRAIN_PROG, "final test accuracy", acc, opt.min_accuracy);
fail:
    captured_free(&cap);
    gf_optimizer_destroy(adam);
    if (m) gf_module_release(&m->base);
    gf_tensor_release(x_train);
    gf_tensor_release(y_train);
    gf_tensor_release(x_test);
    gf_tensor_release(y_test);
    return train_shutdown(TRAIN_PROG, rc);
}
