/* SPDX-License-Identifier: BSD-3-Clause */
/* transformer — trains a small transformer encoder to sort sequences of
 * digits, with AdamW and a warmup + cosine learning-rate schedule.
 *
 *   transformer [--steps N] [--batch B] [--lr X] [--seed S] [--min-accuracy A]
 *
 * The task: a sequence of SEQ digits (0-9, drawn uniformly) in, the same
 * digits in ascending order out, one prediction per position. Sorting
 * needs every position to compare its digit with all the others, which is
 * what attention does; position i of the output is the i-th smallest
 * digit, so the model also has to count. Training batches are drawn fresh
 * each step from a seeded generator; 1000 other sequences measure it.
 *
 * The model (pre-norm, as torch.nn.TransformerEncoderLayer(norm_first=True)
 * with GELU):
 *   token embedding [10, D] + learned positions [SEQ, D]
 *   LAYERS x { h += Wo MHA(layer_norm(h))   (HEADS heads, through
 *                                            gf_scaled_dot_product_attention)
 *              h += W2 gelu(W1 layer_norm(h)) }
 *   layer_norm, linear D -> 10: logits per position
 * trained with cross-entropy (mean over positions), AdamW (weight decay
 * 0.01 on the matrices, none on biases, norms and embeddings: two
 * parameter groups), lr warmed up linearly over the first 10% of the steps
 * and then annealed by a cosine (gf_lr_sequential_create).
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

typedef struct layer {
    gf_tensor *ln1_w, *ln1_b, *wqkv, *bqkv, *wo, *bo, *ln2_w, *ln2_b, *w1, *b1, *w2, *b2;
} layer;

typedef struct model {
    gf_tensor *tok, *pos, *lnf_w, *lnf_b, *head_w, *head_b;
    layer l[LAYERS];
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
static gf_tensor *new_param(const int64_t *sizes, int rank, int kind, double arg, gf_device *dev) {
    gf_tensor *t = kind == 0   ? gf_rand_uniform(sizes, rank, -1 / sqrt(arg), 1 / sqrt(arg),
                                                 GF_F32, dev)
                   : kind == 1 ? gf_rand_normal(sizes, rank, 0, arg, GF_F32, dev)
                               : gf_full(sizes, rank, arg, GF_F32, dev);
    if (t && gf_tensor_set_requires_grad(t, true) != GF_OK) {
        gf_tensor_release(t);
        return NULL;
    }
    return t;
}
#define LIN 0
#define NORMAL 1
#define CONST 2
#define S1(a) ((const int64_t[]){a}), 1
#define S2(a, b) ((const int64_t[]){a, b}), 2

/* Collects the parameters: decayed (matrices) and not (the rest). */
static bool model_init(model *m, gf_device *dev, gf_tensor **decay, int *nd, gf_tensor **rest,
                       int *nr) {
    *nd = *nr = 0;
#define P(field, sizes, kind, arg, list, n) \
    do {                                     \
        field = new_param(sizes, kind, arg, dev); \
        if (!field) return false;            \
        list[(*n)++] = field;                \
    } while (0)
    P(m->tok, S2(VOCAB, D), NORMAL, 1.0, rest, nr);
    P(m->pos, S2(SEQ, D), NORMAL, 0.1, rest, nr);
    for (int i = 0; i < LAYERS; i++) {
        layer *l = &m->l[i];
        P(l->ln1_w, S1(D), CONST, 1.0, rest, nr);
        P(l->ln1_b, S1(D), CONST, 0.0, rest, nr);
        P(l->wqkv, S2(3 * D, D), LIN, D, decay, nd);
        P(l->bqkv, S1(3 * D), LIN, D, rest, nr);
        P(l->wo, S2(D, D), LIN, D, decay, nd);
        P(l->bo, S1(D), LIN, D, rest, nr);
        P(l->ln2_w, S1(D), CONST, 1.0, rest, nr);
        P(l->ln2_b, S1(D), CONST, 0.0, rest, nr);
        P(l->w1, S2(FF, D), LIN, D, decay, nd);
        P(l->b1, S1(FF), LIN, D, rest, nr);
        P(l->w2, S2(D, FF), LIN, FF, decay, nd);
        P(l->b2, S1(D), LIN, FF, rest, nr);
    }
    P(m->lnf_w, S1(D), CONST, 1.0, rest, nr);
    P(m->lnf_b, S1(D), CONST, 0.0, rest, nr);
    P(m->head_w, S2(VOCAB, D), LIN, D, decay, nd);
    P(m->head_b, S1(VOCAB), LIN, D, rest, nr);
#undef P
    return true;
}

/* [B, T, D] -> [B, HEADS, T, D / HEADS] */
static gf_tensor *split_heads(gf_tensor *t, int64_t b) {
    return gf_transpose(gf_reshape(t, (const int64_t[]){b, SEQ, HEADS, D / HEADS}, 4), 1, 2);
}

/* Logits [B * SEQ, VOCAB] of x [B, SEQ] (i64). Intermediates belong to the
 * caller's scope. */
static gf_tensor *forward(const model *m, const gf_tensor *x) {
    int64_t b = gf_tensor_size(x, 0);
    gf_tensor *h = gf_add(gf_embedding(m->tok, x), m->pos);
    for (int i = 0; i < LAYERS; i++) {
        const layer *l = &m->l[i];
        gf_tensor *a = gf_layer_norm(h, 1, l->ln1_w, l->ln1_b, 1e-5, NULL, NULL);
        gf_tensor *qkv = gf_linear(a, l->wqkv, l->bqkv);
        gf_tensor *q = split_heads(gf_narrow(qkv, 2, 0, D), b);
        gf_tensor *k = split_heads(gf_narrow(qkv, 2, D, D), b);
        gf_tensor *v = split_heads(gf_narrow(qkv, 2, 2 * D, D), b);
        gf_tensor *o = gf_scaled_dot_product_attention(q, k, v, NULL, 0.0, false, NAN);
        o = gf_reshape(gf_transpose(o, 1, 2), (const int64_t[]){b, SEQ, D}, 3);
        h = gf_add(h, gf_linear(o, l->wo, l->bo));
        gf_tensor *f = gf_layer_norm(h, 1, l->ln2_w, l->ln2_b, 1e-5, NULL, NULL);
        f = gf_linear(gf_gelu(gf_linear(f, l->w1, l->b1), false), l->w2, l->b2);
        h = gf_add(h, f);
    }
    h = gf_layer_norm(h, 1, m->lnf_w, m->lnf_b, 1e-5, NULL, NULL);
    return gf_reshape(gf_linear(h, m->head_w, m->head_b), (const int64_t[]){b * SEQ, VOCAB}, 2);
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
        gf_tensor *p = gf_argmax(forward(m, tx), -1, false);
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

static int usage(const char *argv0) {
    fprintf(stderr,
            "usage: %s [--steps N] [--batch B] [--lr X] [--seed S] [--min-accuracy A]\n"
            "Trains a %d-layer transformer encoder (d_model %d, %d heads, MLP %d) to sort %d\n"
            "digits, on the device GRAFT_DEVICE names (default cpu).\n"
            "  --steps N         training steps (default 400)\n"
            "  --batch B         sequences per step (default 64)\n"
            "  --lr X            peak AdamW learning rate (default 0.003)\n"
            "  --seed S          seed of the data and of graft's generator (default 0)\n"
            "  --min-accuracy A  exit with status 1 when the per-digit accuracy is below A\n",
            argv0, LAYERS, D, HEADS, FF, SEQ);
    return 2;
}

int main(int argc, char **argv) {
    long steps = 400, batch = 64;
    double lr = 3e-3, min_acc = -1;
    unsigned long long seed = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(argv[0]);
            return 0;
        }
        if (!v) return usage(argv[0]);
        if (!strcmp(a, "--steps")) steps = strtol(v, &end, 10);
        else if (!strcmp(a, "--batch")) batch = strtol(v, &end, 10);
        else if (!strcmp(a, "--lr")) lr = strtod(v, &end);
        else if (!strcmp(a, "--seed")) seed = strtoull(v, &end, 10);
        else if (!strcmp(a, "--min-accuracy")) min_acc = strtod(v, &end);
        else return usage(argv[0]);
        if (!end || *end || end == v) return usage(argv[0]);
        i++;
    }
    if (steps < 10 || batch < 1 || batch > 4096 || !(lr > 0)) return usage(argv[0]);

    int rc = 1;
    model m;
    memset(&m, 0, sizeof m);
    gf_tensor *decay[64], *rest[64];
    int nd = 0, nr = 0;
    gf_optimizer *opt = NULL;
    gf_lr_scheduler *sched = NULL;
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
    if (!model_init(&m, dev, decay, &nd, rest, &nr)) goto fail;
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
    for (long step = 1; step <= steps; step++) {
        make_batch(bx, by, (int)batch);
        gf_scope_begin();
        gf_tensor *x = gf_from_data(bx, (const int64_t[]){batch, SEQ}, 2, GF_I64, dev);
        gf_tensor *y = gf_from_data(by, (const int64_t[]){batch * SEQ}, 1, GF_I64, dev);
        gf_tensor *loss = gf_cross_entropy(forward(&m, x), y, NULL, GF_REDUCTION_MEAN, -100, 0.0);
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
           "%.2f ms per training step (batch %ld) on %s\n", acc, seq_acc, N_EVAL,
           1000.0 * train_s / (double)steps, batch, gf_device_spec(dev));
    rc = 0;
    if (min_acc >= 0 && acc < min_acc) {
        fprintf(stderr, "transformer: per-digit accuracy %.4f is below --min-accuracy %.4f\n",
                acc, min_acc);
        rc = 1;
    }
fail:
    if (rc == 1 && gf_last_status() != GF_OK) fprintf(stderr, "transformer: %s\n", gf_last_error());
    gf_lr_scheduler_destroy(sched);
    gf_optimizer_destroy(opt);
    for (int i = 0; i < nd; i++) gf_tensor_release(decay[i]);
    for (int i = 0; i < nr; i++) gf_tensor_release(rest[i]);
    free(bx);
    free(by);
    gf_shutdown();
    return rc;
}
