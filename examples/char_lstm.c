/* SPDX-License-Identifier: BSD-3-Clause */
/* char_lstm — a character-level language model on real text: an LSTM
 * trained to predict the next byte of a text file that every Debian system
 * ships, then sampled to write new text.
 *
 *   char_lstm [--text PATH] [--steps N] [--batch B] [--seq T] [--hidden H]
 *             [--layers L] [--lr X] [--seed S] [--generate N] [--prompt STR]
 *             [--temperature X] [--save PATH] [--load PATH] [--max-val-bpc X]
 *
 * The data: the bytes of the --text files, one after the other (by default
 * the licence texts of /usr/share/common-licenses that Debian's base-files
 * ships: GPL-3, GPL-2, LGPL-2.1, Apache-2.0, GFDL-1.3, MPL-2.0, Artistic,
 * about 240 KB), cut into blocks of 1 KB of which every tenth is held out
 * for validation. The vocabulary is the set of bytes that occur.
 *
 * The model, from graft's modules (graft/module.h) as torch.nn would write
 * it: nn.Embedding(V, 64) -> nn.LSTM(64, H, num_layers=L, batch_first=True)
 * -> nn.Linear(H, V), trained on random windows of T bytes (each position
 * predicts the next byte; cross-entropy, mean) with Adam and gradient-norm
 * clipping at 1. Every tenth of the run it prints the training loss; at the
 * end the validation loss in bits per character (the held-out text cut
 * into windows of T bytes, the state starting from zeros in each), the time
 * per step, and --generate bytes sampled from the model, fed one at a time
 * (the LSTM's state carried from byte to byte) after --prompt. --save
 * writes the model's state dict (safetensors, PyTorch's names:
 * emb.weight, lstm.weight_ih_l0, ..., head.bias) and --load starts from
 * one (the same sizes; the vocabulary of the same text).
 *
 * Exit status: 0 on success; 1 on a graft error or a validation loss above
 * --max-val-bpc; 2 for a bad command line or an unreadable text. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "graft.h"

#define EMB 64

typedef struct model {
    gf_module base; /* first: the model is a module */
    int64_t vocab;
} model;

#define MAX_TEXTS 16

typedef struct config {
    const char *texts[MAX_TEXTS];
    int n_texts;
    const char *prompt, *save, *load;
    long steps, batch, seq, hidden, layers, generate;
    double lr, temperature, max_bpc;
    unsigned long long seed;
} config;

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A seeded generator for the windows (the same everywhere). */
static uint64_t rng = 1;
static uint64_t next_u64(void) {
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return rng >> 11;
}

/* Logits [B, T, V] of x [B, T] (i64 byte ids). */
static gf_tensor *model_forward(gf_module *self, gf_tensor *const *in, int n) {
    (void)n;
    gf_tensor *x = in[0];
    gf_tensor *e = gf_module_forward(gf_module_get_submodule(self, "emb"), &x, 1);
    gf_tensor *h = e ? gf_module_forward(gf_module_get_submodule(self, "lstm"), &e, 1) : NULL;
    gf_tensor *y = h ? gf_module_forward(gf_module_get_submodule(self, "head"), &h, 1) : NULL;
    gf_tensor_release(e), gf_tensor_release(h);
    return y;
}
/* The model lives on main's stack: nothing to free when its last
 * reference goes (the class's default destroy would free it). */
static void model_destroy(gf_module *self) { (void)self; }
static const gf_module_class model_class = {"CharLSTM", model_forward, model_destroy};

static bool add(gf_module *m, const char *name, gf_module *child) {
    gf_status s = child ? gf_module_register_module(m, name, child) : gf_last_status();
    gf_module_release(child);
    return s == GF_OK;
}

static bool model_init(model *m, const config *c, int64_t vocab, gf_device *dev) {
    m->vocab = vocab;
    if (gf_module_init(&m->base, &model_class) != GF_OK) return false;
    return add(&m->base, "emb", gf_nn_embedding(vocab, EMB, GF_F32, dev)) &&
           add(&m->base, "lstm", gf_nn_rnn(GF_RNN_LSTM, EMB, c->hidden, (int)c->layers, true,
                                           true, 0.0, false, GF_F32, dev)) &&
           add(&m->base, "head", gf_nn_linear(c->hidden, vocab, true, GF_F32, dev));
}

/* Mean cross-entropy (nats) of the next-byte predictions of x [B, T]
 * against y [B, T]. */
static gf_tensor *window_loss(model *m, const int64_t *bx, const int64_t *by, int64_t b,
                              int64_t t, gf_device *dev) {
    gf_tensor *x = gf_from_data(bx, (const int64_t[]){b, t}, 2, GF_I64, dev);
    gf_tensor *y = gf_from_data(by, (const int64_t[]){b * t}, 1, GF_I64, dev);
    gf_tensor *logits = gf_module_forward(&m->base, &x, 1);
    gf_tensor *flat = logits ? gf_reshape(logits, (const int64_t[]){b * t, m->vocab}, 2) : NULL;
    return flat ? gf_cross_entropy(flat, y, NULL, GF_REDUCTION_MEAN, -100, 0.0) : NULL;
}

/* The held-out text in windows of t bytes, 64 windows a batch: the mean
 * loss in bits per character. */
static gf_status validate(model *m, const int64_t *ids, int64_t n, int64_t t, gf_device *dev,
                          double *bpc) {
    int64_t windows = (n - 1) / t, done = 0;
    double sum = 0;
    int64_t *bx = malloc(sizeof(int64_t) * (size_t)(64 * t));
    int64_t *by = malloc(sizeof(int64_t) * (size_t)(64 * t));
    gf_status s = bx && by ? GF_OK : GF_ERR_OUT_OF_MEMORY;
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    gf_module_train(&m->base, false);
    while (s == GF_OK && done < windows) {
        int64_t b = windows - done < 64 ? windows - done : 64;
        for (int64_t i = 0; i < b; i++)
            for (int64_t j = 0; j < t; j++) {
                bx[i * t + j] = ids[(done + i) * t + j];
                by[i * t + j] = ids[(done + i) * t + j + 1];
            }
        gf_scope_begin();
        gf_tensor *loss = window_loss(m, bx, by, b, t, dev);
        double v = 0;
        s = loss ? gf_tensor_item(loss, &v) : gf_last_status();
        gf_scope_end();
        sum += v * (double)b;
        done += b;
    }
    gf_module_train(&m->base, true);
    gf_grad_mode_set(prev);
    free(bx);
    free(by);
    if (s == GF_OK && windows < 1) {
        fprintf(stderr, "char_lstm: the held-out text is shorter than one window of %lld bytes; "
                "use a longer --text or a smaller --seq\n", (long long)t);
        return GF_ERR_INVALID;
    }
    *bpc = sum / (double)windows / log(2.0);
    return s;
}

/* Feeds the prompt, then samples n bytes one at a time from
 * softmax(logits / temperature), the LSTM's (h, c) carried along. */
static gf_status generate(model *m, const config *c, const int *to_id, const unsigned char *vocab,
                          gf_device *dev) {
    gf_module *emb = gf_module_get_submodule(&m->base, "emb");
    gf_module *lstm = gf_module_get_submodule(&m->base, "lstm");
    gf_module *head = gf_module_get_submodule(&m->base, "head");
    gf_tensor *h = NULL, *cs = NULL;
    gf_status s = GF_OK;
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    gf_module_train(&m->base, false);
    size_t plen = strlen(c->prompt);
    int64_t id = 0;
    printf("--- %ld bytes sampled at temperature %g after \"%s\":\n%s", c->generate,
           c->temperature, c->prompt, c->prompt);
    for (long k = 0; s == GF_OK && k < (long)plen + c->generate; k++) {
        if (k < (long)plen) {
            int v = to_id[(unsigned char)c->prompt[k]];
            id = v >= 0 ? v : 0; /* a byte the text never has: the first of the vocabulary */
        }
        gf_scope_begin();
        gf_tensor *x = gf_from_data(&id, (const int64_t[]){1, 1}, 2, GF_I64, dev);
        gf_tensor *e = gf_module_forward(emb, &x, 1);
        gf_tensor *hn = NULL, *cn = NULL;
        gf_tensor *o = e ? gf_nn_rnn_forward(lstm, e, h, cs, &hn, &cn) : NULL;
        gf_tensor_release(h), gf_tensor_release(cs);
        h = hn ? gf_tensor_retain(gf_scope_keep(hn)) : NULL;
        cs = cn ? gf_tensor_retain(gf_scope_keep(cn)) : NULL;
        gf_tensor_release(hn), gf_tensor_release(cn);
        if (k >= (long)plen - 1) { /* the prompt's last byte onwards: sample the next */
            gf_tensor *logits = o ? gf_module_forward(head, &o, 1) : NULL;
            gf_tensor *p = logits ? gf_softmax(gf_reshape(gf_div_scalar(logits, c->temperature),
                                                          (const int64_t[]){1, m->vocab}, 2),
                                               -1)
                                  : NULL;
            gf_tensor *pick = p ? gf_multinomial(p, 1, false) : NULL;
            s = pick ? gf_tensor_to_host(pick, &id, sizeof id) : gf_last_status();
            if (s == GF_OK && k >= (long)plen - 1 && k < (long)plen + c->generate - 1)
                putchar(vocab[id]);
        } else if (!o) {
            s = gf_last_status();
        }
        gf_scope_end();
    }
    printf("\n---\n");
    gf_tensor_release(h), gf_tensor_release(cs);
    gf_module_train(&m->base, true);
    gf_grad_mode_set(prev);
    return s;
}

/* Appends the bytes of path to *buf (*len bytes, *cap allocated). */
static bool read_text(const char *path, unsigned char **buf, size_t *len, size_t *cap) {
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    size_t got;
    do {
        if (*len == *cap) {
            size_t nc = *cap ? 2 * *cap : (size_t)1 << 16;
            unsigned char *nb = nc < (size_t)1 << 31 ? realloc(*buf, nc) : NULL;
            if (!nb) {
                fclose(f);
                return false;
            }
            *buf = nb, *cap = nc;
        }
        got = fread(*buf + *len, 1, *cap - *len, f);
        *len += got;
    } while (got > 0);
    fclose(f);
    return true;
}

static int usage(const char *argv0) {
    fprintf(stderr,
            "usage: %s [options]\n"
            "Trains a character-level LSTM language model on a text file and samples from it,\n"
            "on the device GRAFT_DEVICE names (default cpu).\n"
            "  --text PATH        a text file; repeat for several (default: licence texts of\n"
            "                     /usr/share/common-licenses)\n"
            "  --steps N          training steps (default 1000)\n"
            "  --batch B          windows per step (default 32)\n"
            "  --seq T            bytes per window (default 64)\n"
            "  --hidden H         LSTM hidden size (default 256)\n"
            "  --layers L         LSTM layers (default 2)\n"
            "  --lr X             Adam's learning rate (default 0.003)\n"
            "  --seed S           seed of the windows and of graft's generator (default 0)\n"
            "  --generate N       bytes to sample at the end (default 400)\n"
            "  --prompt STR       what the sample starts from (default \"The \")\n"
            "  --temperature X    sampling temperature (default 0.8)\n"
            "  --save PATH        write the model's state dict (safetensors) at the end\n"
            "  --load PATH        start from a state dict --save wrote\n"
            "  --max-val-bpc X    exit with status 1 when the held-out loss is above X bits\n",
            argv0);
    return 2;
}

static bool parse(int argc, char **argv, config *c) {
    for (int i = 1; i < argc; i += 2) { /* an option and its value */
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (!v) return false;
        if (!strcmp(a, "--text")) {
            if (c->n_texts == MAX_TEXTS) return false;
            c->texts[c->n_texts++] = v, end = "";
        }
        else if (!strcmp(a, "--prompt")) c->prompt = v, end = "";
        else if (!strcmp(a, "--save")) c->save = v, end = "";
        else if (!strcmp(a, "--load")) c->load = v, end = "";
        else if (!strcmp(a, "--steps")) c->steps = strtol(v, &end, 10);
        else if (!strcmp(a, "--batch")) c->batch = strtol(v, &end, 10);
        else if (!strcmp(a, "--seq")) c->seq = strtol(v, &end, 10);
        else if (!strcmp(a, "--hidden")) c->hidden = strtol(v, &end, 10);
        else if (!strcmp(a, "--layers")) c->layers = strtol(v, &end, 10);
        else if (!strcmp(a, "--generate")) c->generate = strtol(v, &end, 10);
        else if (!strcmp(a, "--lr")) c->lr = strtod(v, &end);
        else if (!strcmp(a, "--temperature")) c->temperature = strtod(v, &end);
        else if (!strcmp(a, "--max-val-bpc")) c->max_bpc = strtod(v, &end);
        else if (!strcmp(a, "--seed")) c->seed = strtoull(v, &end, 10);
        else return false;
        if (!end || *end || (end == v && *v)) return false;
    }
    return c->steps >= 10 && c->batch >= 1 && c->batch <= 4096 && c->seq >= 2 &&
           c->seq <= 4096 && c->hidden >= 1 && c->hidden <= 8192 && c->layers >= 1 &&
           c->layers <= 16 && c->generate >= 0 && c->lr > 0 && c->temperature > 0;
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(argv[0]);
            return 0;
        }
    config c = {.prompt = "The ", .steps = 1000, .batch = 32, .seq = 64, .hidden = 256,
                .layers = 2, .generate = 400, .lr = 3e-3, .temperature = 0.8, .max_bpc = -1};
    if (!parse(argc, argv, &c)) return usage(argv[0]);
    static const char *const defaults[] = {"GPL-3", "GPL-2", "LGPL-2.1", "Apache-2.0",
                                           "GFDL-1.3", "MPL-2.0", "Artistic"};
    unsigned char *text = NULL;
    size_t tlen = 0, tcap = 0;
    int n_read = 0;
    if (c.n_texts == 0) {
        char path[128];
        for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++) {
            snprintf(path, sizeof path, "/usr/share/common-licenses/%s", defaults[i]);
            n_read += read_text(path, &text, &tlen, &tcap); /* a missing one is skipped */
        }
    }
    for (int i = 0; i < c.n_texts; i++) {
        if (!read_text(c.texts[i], &text, &tlen, &tcap)) {
            fprintf(stderr, "char_lstm: cannot read %s; give a readable file with --text\n",
                    c.texts[i]);
            free(text);
            return 2;
        }
        n_read++;
    }
    int64_t len = (int64_t)tlen;
    if (n_read == 0 || len < 40 * c.seq || len < 20 * 1024) {
        fprintf(stderr, "char_lstm: %lld bytes of text is too little (%s); give at least "
                "%ld bytes (and 20 KB) with --text\n", (long long)len,
                n_read ? "too short" : "no default text under /usr/share/common-licenses",
                40 * c.seq);
        free(text);
        return 2;
    }
    /* the vocabulary: the bytes the text has, in byte order */
    int to_id[256];
    unsigned char vocab[256];
    int64_t v = 0;
    for (int i = 0; i < 256; i++) to_id[i] = -1;
    for (int64_t i = 0; i < len; i++) to_id[text[i]] = 0;
    for (int i = 0; i < 256; i++)
        if (to_id[i] == 0) to_id[i] = (int)v, vocab[v++] = (unsigned char)i;
    int64_t *ids = malloc(sizeof(int64_t) * (size_t)len);
    int64_t *bx = malloc(sizeof(int64_t) * (size_t)(c.batch * c.seq));
    int64_t *by = malloc(sizeof(int64_t) * (size_t)(c.batch * c.seq));
    int rc = 1;
    model m = {0};
    gf_optimizer *opt = NULL;
    gf_tensor *params[64];
    int np = 0;
    if (!ids || !bx || !by || gf_init() != GF_OK) goto fail;
    /* blocks of 1 KB: every tenth to the held-out part (at the end of ids) */
    int64_t n_train = 0, n_val = 0;
    for (int64_t b = 0; b * 1024 < len; b++)
        if (b % 10 != 9)
            for (int64_t i = b * 1024; i < len && i < (b + 1) * 1024; i++)
                ids[n_train++] = to_id[text[i]];
    for (int64_t b = 9; b * 1024 < len; b += 10)
        for (int64_t i = b * 1024; i < len && i < (b + 1) * 1024; i++)
            ids[n_train + n_val++] = to_id[text[i]];
    const char *spec = getenv("GRAFT_DEVICE");
    gf_device *dev = gf_device_find(spec && *spec ? spec : "cpu");
    if (!dev) goto fail;
    gf_manual_seed(c.seed);
    rng = c.seed * 2654435761ULL + 1;
    if (!model_init(&m, &c, v, dev)) goto fail;
    if (c.load) {
        gf_tensor_dict *d = gf_load_safetensors(c.load, dev);
        gf_status s = d ? gf_module_load_state_dict(&m.base, d, true, NULL) : gf_last_status();
        gf_tensor_dict_destroy(d);
        if (s != GF_OK) goto fail;
    }
    np = gf_module_parameters(&m.base, params, 64);
    if (np < 0) goto fail;
    gf_adam_opts ao = GF_ADAM_OPTS_DEFAULT;
    ao.lr = c.lr;
    opt = gf_adam_create(params, np, &ao);
    if (!opt) goto fail;
    int64_t n_params = 0;
    for (int i = 0; i < np; i++) n_params += gf_tensor_numel(params[i]);
    printf("%d text file%s: %lld bytes (%lld for training, %lld held out), %lld distinct; on "
           "%s: LSTM %ld x %ld, %lld parameters; Adam lr %g, batch %ld x %ld bytes, %ld steps\n",
           n_read, n_read == 1 ? "" : "s", (long long)len, (long long)n_train, (long long)n_val, (long long)v,
           gf_device_spec(dev), c.layers, c.hidden, (long long)n_params, c.lr, c.batch, c.seq,
           c.steps);
    fflush(stdout);

    double t0 = now_seconds(), loss_sum = 0;
    long every = c.steps / 10;
    for (long step = 1; step <= c.steps; step++) {
        for (long i = 0; i < c.batch; i++) {
            int64_t at = (int64_t)(next_u64() % (uint64_t)(n_train - c.seq - 1));
            for (long j = 0; j < c.seq; j++) {
                bx[i * c.seq + j] = ids[at + j];
                by[i * c.seq + j] = ids[at + j + 1];
            }
        }
        gf_scope_begin();
        gf_tensor *loss = window_loss(&m, bx, by, c.batch, c.seq, dev);
        double lv = 0;
        gf_status s = loss ? gf_backward(loss, NULL, NULL) : gf_last_status();
        if (s == GF_OK) s = gf_clip_grad_norm_(params, np, 1.0, 2.0, false, NULL);
        if (s == GF_OK) s = gf_optimizer_step(opt);
        if (s == GF_OK) s = gf_optimizer_zero_grad(opt);
        if (s == GF_OK) s = gf_tensor_item(loss, &lv);
        gf_scope_end();
        if (s != GF_OK) goto fail;
        loss_sum += lv;
        if (step % every == 0) {
            printf("step %5ld  loss %.4f nats (%.3f bits/char)  (%.1f s)\n", step,
                   loss_sum / (double)every, loss_sum / (double)every / log(2.0),
                   now_seconds() - t0);
            fflush(stdout);
            loss_sum = 0;
        }
    }
    double train_s = now_seconds() - t0, bpc = 0;
    if (validate(&m, ids + n_train, n_val, c.seq, dev, &bpc) != GF_OK) goto fail;
    printf("held-out loss: %.3f bits per character (%lld bytes; uniform over the vocabulary: "
           "%.3f); %.2f ms per training step on %s\n", bpc, (long long)n_val,
           log((double)v) / log(2.0), 1000.0 * train_s / (double)c.steps, gf_device_spec(dev));
    if (c.generate > 0 && generate(&m, &c, to_id, vocab, dev) != GF_OK) goto fail;
    if (c.save) {
        gf_tensor_dict *d = gf_module_state_dict(&m.base);
        gf_status s = d ? gf_save_safetensors_dict(d, c.save) : gf_last_status();
        gf_tensor_dict_destroy(d);
        if (s != GF_OK) goto fail;
        printf("state dict saved to %s\n", c.save);
    }
    rc = 0;
    if (c.max_bpc >= 0 && !(bpc <= c.max_bpc)) {
        fprintf(stderr, "char_lstm: held-out loss %.3f bits/char is above --max-val-bpc %.3f\n",
                bpc, c.max_bpc);
        rc = 1;
    }
fail:
    if (rc == 1 && gf_last_status() != GF_OK) fprintf(stderr, "char_lstm: %s\n", gf_last_error());
    gf_optimizer_destroy(opt);
    if (m.base.state) gf_module_release(&m.base);
    free(ids);
    free(bx);
    free(by);
    free(text);
    gf_shutdown();
    return rc;
}
