/* SPDX-License-Identifier: BSD-3-Clause */
/* transformer — trains a small transformer encoder to sort sequences of
 * digits, with AdamW and a warmup + cosine learning-rate schedule.
 *
 *   transformer [--steps N] [--batch B] [--lr X] [--seed S] [--min-accuracy A]
 *               [--capture]
 *
 * The task: a sequence of SEQ digits (0-9, drawn uniformly) in, the same
 * digits in ascending order out, one prediction per position. Sorting
 * needs every position to compare its digit with all the others, which is
 * what attention does; position i of the output is the i-th smallest
 * digit, so the model also has to count. Training batches are drawn fresh
 * each step from a seeded generator; 1000 other sequences measure it.
 *
 * The model, from graft's modules (graft/module.h), as torch.nn would write
 * it: nn.Embedding(10, D) + learned positions [SEQ, D], then
 * nn.TransformerEncoder of LAYERS nn.TransformerEncoderLayer(D, HEADS, FF,
 * dropout 0, GELU, batch_first, norm_first) with a final nn.LayerNorm, and
 * nn.Linear(D, 10): logits per position
 * trained with cross-entropy (mean over positions), AdamW (weight decay
 * 0.01 on the matrices, none on biases, norms and embeddings: two
 * parameter groups), lr warmed up linearly over the first 10% of the steps
 * and then annealed by a cosine (gf_lr_sequential_create).
 *
 * With --capture the training step is captured once (graft/graph.h) after
 * one eager warm-up step, and every later step is a replay of it: the batch
 * is written into the same input tensors, the step's launches run again
 * without dispatch, and AdamW's step counts and the schedule move on the
 * host, so the run trains exactly as the eager one.
 *
 * It prints the loss as it goes, then the per-digit and whole-sequence
 * accuracy on the held-out sequences and the time per training step.
 * Exit status: 0 on success; 1 on a graft error or a per-digit accuracy
 * below --min-accuracy; 2 for a bad command line. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "graft.h"

#define SEQ 8
#define VOCAB 10
#define D 48
#define HEADS 4
#define FF 96
#define LAYERS 2
#define N_EVAL 1000

typedef struct model {
    gf_module base; /* first: the model is a module */
    gf_tensor *pos; /* its learned positions (also registered) */
} model;

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A seeded generator for the sequences (the data are the same everywhere). */
static uint64_t rng = 1;
static int digit(void) {
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (int)((rng >> 33) % VOCAB);
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* n sequences into x [n, SEQ] and their sorted forms into y [n * SEQ]. */
static void make_batch(int64_t *x, int64_t *y, int n) {
    for (int i = 0; i < n; i++) {
        for (int t = 0; t < SEQ; t++) x[i * SEQ + t] = y[i * SEQ + t] = digit();
        qsort(y + i * SEQ, SEQ, sizeof(int64_t), cmp_i64);
    }
}

/* A parameter initialised as PyTorch's layer defaults: U(+-1/sqrt(fan_in))
 * for linear weights and biases (fan_in given), N(0, std) for embeddings,
 * ones/zeros for norms. */
/* Logits [B * SEQ, VOCAB] of x [B, SEQ] (i64). */
static gf_tensor *model_forward(gf_module *self, gf_tensor *const *in, int n) {
    (void)n;
    gf_tensor *x = in[0];
    int64_t b = gf_tensor_size(x, 0);
    gf_tensor *e = gf_module_forward(gf_module_get_submodule(self, "tok"), &x, 1);
    gf_tensor *h = e ? gf_add(e, gf_module_get_parameter(self, "pos")) : NULL;
    gf_tensor *z = h ? gf_module_forward(gf_module_get_submodule(self, "encoder"), &h, 1) : NULL;
    gf_tensor *o = z ? gf_module_forward(gf_module_get_submodule(self, "head"), &z, 1) : NULL;
    gf_tensor *y = o ? gf_reshape(o, (const int64_t[]){b * SEQ, VOCAB}, 2) : NULL;
    gf_tensor_release(e), gf_tensor_release(h), gf_tensor_release(z), gf_tensor_release(o);
    return y;
}
/* The model lives on main's stack: nothing to free when its last
 * reference goes (the class's default destroy would free it). */
static void model_destroy(gf_module *self) { (void)self; }
static const gf_module_class model_class = {"SortingTransformer", model_forward, model_destroy};

static bool add(gf_module *m, const char *name, gf_module *child) {
    gf_status s = child ? gf_module_register_module(m, name, child) : gf_last_status();
    gf_module_release(child);
    return s == GF_OK;
}

static bool model_init(model *m, gf_device *dev) {
    if (gf_module_init(&m->base, &model_class) != GF_OK) return false;
    gf_module *layers[LAYERS];
    for (int i = 0; i < LAYERS; i++)
        layers[i] = gf_nn_transformer_encoder_layer(D, HEADS, FF, 0.0, true, 1e-5, true, true,
                                                    GF_F32, dev);
    gf_module *norm = gf_nn_layer_norm((const int64_t[]){D}, 1, 1e-5, true, GF_F32, dev);
    gf_module *enc = layers[LAYERS - 1] && norm ? gf_nn_transformer_encoder(layers, LAYERS, norm)
                                                : NULL;
    for (int i = 0; i < LAYERS; i++) gf_module_release(layers[i]);
    gf_module_release(norm);
    m->pos = gf_rand_normal((const int64_t[]){SEQ, D}, 2, 0, 0.1, GF_F32, dev);
    return add(&m->base, "tok", gf_nn_embedding(VOCAB, D, GF_F32, dev)) && m->pos &&
           gf_module_register_parameter(&m->base, "pos", m->pos) == GF_OK &&
           add(&m->base, "encoder", enc) &&
           add(&m->base, "head", gf_nn_linear(D, VOCAB, true, GF_F32, dev));
}

/* AdamW's weight decay on the matrices of the linear maps (attention's
 * projections, the MLPs, the head), none on biases, norms, embeddings and
 * positions: torch's usual two parameter groups, split by name. */
static int split_params(const model *m, gf_tensor **decay, int *nd, gf_tensor **rest, int *nr) {
    gf_tensor_dict *named = gf_module_named_parameters(&m->base);
    *nd = *nr = 0;
    int total = gf_tensor_dict_size(named);
    for (int i = 0; i < total && *nd < 64 && *nr < 64; i++) {
        const char *name = gf_tensor_dict_name(named, i);
        bool matrix = (strstr(name, "weight") && !strstr(name, "norm") && strncmp(name, "tok", 3));
        if (matrix) decay[(*nd)++] = gf_tensor_dict_at(named, i);
        else rest[(*nr)++] = gf_tensor_dict_at(named, i);
    }
    gf_tensor_dict_destroy(named); /* the module keeps the tensors */
    return total;
}

/* Per-digit and whole-sequence accuracy on n sequences. */
static gf_status evaluate(const model *m, gf_device *dev, const int64_t *x, const int64_t *y,
                          int n, double *digit_acc, double *seq_acc) {
    static int64_t pred[N_EVAL * SEQ];
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    gf_status s = GF_OK;
    for (int at = 0; at < n && s == GF_OK; at += 250) {
        int cnt = n - at < 250 ? n - at : 250;
        gf_scope_begin();
        gf_tensor *tx = gf_from_data(x + at * SEQ, (const int64_t[]){cnt, SEQ}, 2, GF_I64, dev);
        gf_tensor *p = gf_argmax(gf_module_forward((gf_module *)&m->base, &tx, 1), -1, false);
        s = p ? gf_tensor_to_host(p, pred + at * SEQ, sizeof(int64_t) * (size_t)(cnt * SEQ))
              : gf_last_status();
        gf_scope_end();
    }
    gf_grad_mode_set(prev);
    if (s != GF_OK) return s;
    int good = 0, whole = 0;
    for (int i = 0; i < n; i++) {
        int ok = 0;
        for (int t = 0; t < SEQ; t++) ok += pred[i * SEQ + t] == y[i * SEQ + t];
        good += ok;
        whole += ok == SEQ;
    }
    *digit_acc = (double)good / (n * SEQ);
    *seq_acc = (double)whole / n;
    return GF_OK;
}

/* One training step for --capture, the same work as the eager loop's in
 * the order a graph needs: gradients zeroed in place first (they are the
 * graph's inputs), no host read. Returns the loss (a new reference). */
static gf_tensor *capture_step(gf_module *m, gf_tensor *x, gf_tensor *y, gf_optimizer *opt,
                               gf_lr_scheduler *sched) {
    gf_scope_begin();
    gf_status s = gf_optimizer_zero_grad_keep(opt);
    gf_tensor *loss = s == GF_OK ? gf_cross_entropy(gf_module_forward(m, &x, 1), y, NULL,
                                                    GF_REDUCTION_MEAN, -100, 0.0)
                                 : NULL;
    s = loss ? gf_backward(loss, NULL, NULL) : gf_last_status();
    if (s == GF_OK) s = gf_optimizer_step(opt);
    if (s == GF_OK) s = gf_lr_scheduler_step(sched);
    gf_tensor *keep = s == GF_OK ? gf_scope_keep(loss) : NULL;
    gf_scope_end();
    return keep;
}

static int usage(const char *argv0) {
    fprintf(stderr,
            "usage: %s [--steps N] [--batch B] [--lr X] [--seed S] [--min-accuracy A]\n"
            "          [--capture]\n"
            "Trains a %d-layer transformer encoder (d_model %d, %d heads, MLP %d) to sort %d\n"
            "digits, on the device GRAFT_DEVICE names (default cpu).\n"
            "  --steps N         training steps (default 400)\n"
            "  --batch B         sequences per step (default 64)\n"
            "  --lr X            peak AdamW learning rate (default 0.003)\n"
            "  --seed S          seed of the data and of graft's generator (default 0)\n"
            "  --min-accuracy A  exit with status 1 when the per-digit accuracy is below A\n"
            "  --capture         capture the training step once and replay it\n",
            argv0, LAYERS, D, HEADS, FF, SEQ);
    return 2;
}

int main(int argc, char **argv) {
    long steps = 400, batch = 64;
    double lr = 3e-3, min_acc = -1;
    unsigned long long seed = 0;
    bool capture = false;
    for (int i = 1; i < argc;) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(argv[0]);
            return 0;
        }
        if (!strcmp(a, "--capture")) { /* a flag: no value */
            capture = true;
            i++;
            continue;
        }
        if (!v) return usage(argv[0]);
        if (!strcmp(a, "--steps")) steps = strtol(v, &end, 10);
        else if (!strcmp(a, "--batch")) batch = strtol(v, &end, 10);
        else if (!strcmp(a, "--lr")) lr = strtod(v, &end);
        else if (!strcmp(a, "--seed")) seed = strtoull(v, &end, 10);
        else if (!strcmp(a, "--min-accuracy")) min_acc = strtod(v, &end);
        else return usage(argv[0]);
        if (!end || *end || end == v) return usage(argv[0]);
        i += 2; /* the option and its value */
    }
    if (steps < 10 || batch < 1 || batch > 4096 || !(lr > 0)) return usage(argv[0]);

    int rc = 1;
    model m = {0};
    gf_tensor *decay[64], *rest[64];
    int nd = 0, nr = 0;
    gf_optimizer *opt = NULL;
    gf_lr_scheduler *sched = NULL;
    gf_graph *graph = NULL;
    gf_tensor *gx = NULL, *gy = NULL, *gloss = NULL; /* --capture: the graph's inputs, output */
    int64_t *bx = malloc(sizeof(int64_t) * (size_t)(batch * SEQ));
    int64_t *by = malloc(sizeof(int64_t) * (size_t)(batch * SEQ));
    static int64_t ex[N_EVAL * SEQ], ey[N_EVAL * SEQ];
    if (gf_init() != GF_OK || !bx || !by) goto fail;
    const char *spec = getenv("GRAFT_DEVICE");
    gf_device *dev = gf_device_find(spec && *spec ? spec : "cpu");
    if (!dev) goto fail;
    gf_manual_seed(seed);
    rng = seed * 2654435761ULL + 1;
    make_batch(ex, ey, N_EVAL); /* held out: drawn first, never trained on */
    if (!model_init(&m, dev) || split_params(&m, decay, &nd, rest, &nr) != nd + nr) goto fail;
    gf_adam_opts aw = GF_ADAMW_OPTS_DEFAULT; /* weight_decay 0.01, as torch.optim.AdamW */
    aw.lr = lr;
    opt = gf_adam_create(decay, nd, &aw);
    if (!opt || gf_optimizer_add_param_group(opt, rest, nr, NAN, 0.0) != GF_OK) goto fail;
    int64_t warm = steps / 10;
    gf_lr_scheduler *parts[2] = {gf_lr_linear_create(opt, 0.01, 1.0, warm),
                                 gf_lr_cosine_create(opt, steps - warm, 0.0)};
    sched = gf_lr_sequential_create(opt, parts, 2, &warm);
    if (!sched) goto fail;
    int64_t n_params = 0;
    for (int i = 0; i < nd; i++) n_params += gf_tensor_numel(decay[i]);
    for (int i = 0; i < nr; i++) n_params += gf_tensor_numel(rest[i]);
    printf("sorting %d digits on %s: %d layers, d_model %d, %d heads, %lld parameters; "
           "AdamW lr %g, batch %ld, %ld steps\n", SEQ, gf_device_spec(dev), LAYERS, D, HEADS,
           (long long)n_params, lr, batch, steps);

    double t0 = now_seconds(), loss_sum = 0;
    if (capture) {
        gx = gf_empty((const int64_t[]){batch, SEQ}, 2, GF_I64, dev);
        gy = gf_empty((const int64_t[]){batch * SEQ}, 1, GF_I64, dev);
        if (!gx || !gy) goto fail;
    }
    for (long step = 1; step <= steps && capture; step++) {
        make_batch(bx, by, (int)batch);
        gf_status s = gf_tensor_from_host(gx, bx, sizeof(int64_t) * (size_t)(batch * SEQ));
        if (s == GF_OK) s = gf_tensor_from_host(gy, by, sizeof(int64_t) * (size_t)(batch * SEQ));
        if (s == GF_OK && graph) s = gf_graph_replay(graph);
        else if (s == GF_OK) {
            /* Step 1 eager (the gradients and AdamW's state come to exist),
             * step 2 captured: both run capture_step. */
            if (step == 2 && (s = gf_graph_capture_begin(dev)) != GF_OK) goto fail;
            gf_tensor_release(gloss);
            gloss = capture_step(&m.base, gx, gy, opt, sched);
            if (step == 2) {
                graph = gf_graph_capture_end();
                if (!graph || !gloss) goto fail;
            }
            s = gloss ? GF_OK : gf_last_status();
        }
        double lv = 0;
        if (s == GF_OK) s = gf_tensor_item(gloss, &lv);
        if (s != GF_OK) goto fail;
        loss_sum += lv;
        if (step % (steps / 10) == 0) {
            printf("step %5ld  loss %.4f  lr %.5f  (%.1f s)\n", step,
                   loss_sum / (double)(steps / 10), gf_optimizer_get_lr(opt), now_seconds() - t0);
            fflush(stdout);
            loss_sum = 0;
        }
    }
    for (long step = 1; step <= steps && !capture; step++) {
        make_batch(bx, by, (int)batch);
        gf_scope_begin();
        gf_tensor *x = gf_from_data(bx, (const int64_t[]){batch, SEQ}, 2, GF_I64, dev);
        gf_tensor *y = gf_from_data(by, (const int64_t[]){batch * SEQ}, 1, GF_I64, dev);
        gf_tensor *loss = gf_cross_entropy(gf_module_forward(&m.base, &x, 1), y, NULL,
                                           GF_REDUCTION_MEAN, -100, 0.0);
        double lv = 0;
        gf_status s = loss ? gf_backward(loss, NULL, NULL) : gf_last_status();
        if (s == GF_OK) s = gf_optimizer_step(opt);
        if (s == GF_OK) s = gf_optimizer_zero_grad(opt);
        if (s == GF_OK) s = gf_lr_scheduler_step(sched);
        if (s == GF_OK) s = gf_tensor_item(loss, &lv);
        gf_scope_end();
        if (s != GF_OK) goto fail;
        loss_sum += lv;
        if (step % (steps / 10) == 0) {
            printf("step %5ld  loss %.4f  lr %.5f  (%.1f s)\n", step,
                   loss_sum / (double)(steps / 10), gf_optimizer_get_lr(opt), now_seconds() - t0);
            fflush(stdout);
            loss_sum = 0;
        }
    }
    double train_s = now_seconds() - t0;
    double acc = 0, seq_acc = 0;
    if (evaluate(&m, dev, ex, ey, N_EVAL, &acc, &seq_acc) != GF_OK) goto fail;
    printf("held-out accuracy: %.4f per digit, %.4f whole sequences (%d sequences); "
           "%.2f ms per training step (batch %ld) on %s%s\n", acc, seq_acc, N_EVAL,
           1000.0 * train_s / (double)steps, batch, gf_device_spec(dev),
           capture ? ", captured and replayed" : "");
    rc = 0;
    if (min_acc >= 0 && acc < min_acc) {
        fprintf(stderr, "transformer: per-digit accuracy %.4f is below --min-accuracy %.4f\n",
                acc, min_acc);
        rc = 1;
    }
fail:
    if (rc == 1 && gf_last_status() != GF_OK) fprintf(stderr, "transformer: %s\n", gf_last_error());
    gf_graph_destroy(graph);
    gf_tensor_release(gloss);
    gf_tensor_release(gx);
    gf_tensor_release(gy);
    gf_lr_scheduler_destroy(sched);
    gf_optimizer_destroy(opt);
    gf_tensor_release(m.pos);
    if (m.base.state) gf_module_release(&m.base);
    free(bx);
    free(by);
    gf_shutdown();
    return rc;
}
