/* SPDX-License-Identifier: BSD-3-Clause */
/* workloads_train.c — whole training steps: zero_grad, forward, cross-entropy,
 * backward and an Adam update, on one fixed batch.
 *
 *   mlp  784-1024-1024-10 with ReLU, batch 256 (the classic MNIST MLP);
 *   cnn  conv 1->16 3x3 + ReLU + max-pool 2, conv 16->32 3x3 + ReLU +
 *        max-pool 2, linear 1568->10, on 1x28x28 images, batch 64.
 *   lstm, gru  nn.LSTM / nn.GRU (graft/module.h) of 2 layers, hidden 256,
 *        over a sequence of 64 steps of 64 features, batch 32, the last
 *        layer's final hidden state through a linear 256->10.
 *   encoder  nn.TransformerEncoderLayer (d_model 256, 8 heads, feed-forward
 *        1024, ReLU, post-norm, dropout 0, batch_first) over 32 sequences of
 *        64 tokens, the first token's output through a linear 256->10.
 *
 * The parameters start from a fixed host formula (PyTorch's default bound
 * 1/sqrt(fan_in)), so every device trains the same model on the same data.
 * The check: the loss is finite and lower after the timed steps than at the
 * first step (training on one batch must fit it). h2d is writing the batch
 * (images and labels), d2h reading the loss. */
#include <math.h>
#include <stdlib.h>

#include "bench.h"

#define MAX_PARAMS 16

const bench_train_dist *bench_train_dist_active;
#define N_CLASSES 10

typedef struct train_case train_case;
struct train_case {
    gf_device *dev;
    int64_t batch;
    gf_tensor *param[MAX_PARAMS];
    int n_params;
    gf_optimizer *opt;
    gf_tensor *x, *y;    /* the batch on the device */
    float *host_x;       /* the batch on the host */
    int64_t *host_y;
    int64_t x_numel;
    gf_tensor *loss;     /* of the last step */
    double first_loss;   /* NAN until the first step ran */
    float loss_host;
    /* Logits [batch, N_CLASSES]; intermediates belong to the caller's scope. */
    gf_tensor *(*forward)(const train_case *t);
    gf_module *body, *head; /* the module workloads' modules */
    gf_dtype autocast;      /* GF_F32: none; else the forward and the loss run
                             * under gf_autocast_begin(device type, autocast) */
};

/* A parameter of the given shape, U(-bound, bound) from the host formula. */
static gf_tensor *param_init(const int64_t *sizes, int rank, double bound, uint32_t salt,
                             gf_device *dev) {
    int64_t n = 1;
    for (int d = 0; d < rank; d++) n *= sizes[d];
    float *v = bench_host_values(n, salt, (float)-bound, (float)bound);
    gf_tensor *t = v ? gf_from_data(v, sizes, rank, GF_F32, dev) : NULL;
    free(v);
    if (t && gf_tensor_set_requires_grad(t, true) != GF_OK) {
        gf_tensor_release(t);
        t = NULL;
    }
    return t;
}

static int step_train(void *state) {
    train_case *t = state;
    gf_scope_begin();
    gf_status s = gf_optimizer_zero_grad(t->opt);
    gf_tensor *loss = NULL;
    bool cast = s == GF_OK && t->autocast != GF_F32;
    if (cast) s = gf_autocast_begin(gf_device_type(t->dev), t->autocast);
    if (s == GF_OK) {
        loss = gf_cross_entropy(t->forward(t), t->y, NULL, GF_REDUCTION_MEAN, -100, 0.0);
        if (!loss) s = gf_last_status();
    }
    if (cast) {
        gf_status es = gf_autocast_end(); /* backward runs outside the region, as in PyTorch */
        if (s == GF_OK) s = es;
    }
    if (s == GF_OK) s = gf_backward(loss, NULL, NULL);
    /* Data parallel (graft-bench dist): the gradients' mean over ranks. */
    const bench_train_dist *dd = bench_train_dist_active;
    if (s == GF_OK && dd && dd->sync(dd->user) != 0) s = gf_last_status();
    if (s == GF_OK) s = gf_optimizer_step(t->opt);
    if (s == GF_OK) {
        gf_tensor_release(t->loss);
        t->loss = gf_scope_keep(loss);
    }
    gf_scope_end();
    /* The first step's loss is the check's reference; reading it waits for
     * the step, so it is taken in the warm-up, outside the timings. */
    if (s == GF_OK && isnan(t->first_loss)) s = gf_tensor_item(t->loss, &t->first_loss);
    return s == GF_OK ? 0 : -1;
}

static int step_upload(void *state) {
    train_case *t = state;
    if (gf_tensor_from_host(t->x, t->host_x, (size_t)t->x_numel * sizeof(float)) != GF_OK)
        return -1;
    return gf_tensor_from_host(t->y, t->host_y, (size_t)t->batch * sizeof(int64_t)) == GF_OK ? 0
                                                                                           : -1;
}

static int step_download(void *state) {
    train_case *t = state;
    return gf_tensor_to_host(t->loss, &t->loss_host, sizeof t->loss_host) == GF_OK ? 0 : -1;
}

static int step_replay(void *state) { return gf_graph_replay(state) == GF_OK ? 0 : -1; }

/* The "graph replay" variant of r: the same step captured once (after the
 * eager steps: gradients and Adam's state exist) and replayed; "replay
 * unfused" with fuse false (bench_capture_end). The check: the loss keeps
 * falling. */
static void run_train_replayed(bench_run *run, const bench_result *r, train_case *t, bool fuse) {
    bench_result *v = bench_result_variant(run, r, fuse ? "graph replay" : "replay unfused");
    if (!v) return;
    double before = t->loss_host;
    bench_progress(run, "capture");
    gf_graph *g = NULL;
    if (gf_graph_capture_begin(t->dev) == GF_OK) {
        int rc = step_train(t);
        g = bench_capture_end(t->dev, fuse, v);
        if (rc != 0 && g) {
            gf_graph_destroy(g);
            g = NULL;
        }
    }
    if (!g) {
        bench_result_graft_error(v, "capturing the step");
        return;
    }
    bench_progress(run, "replays");
    if (bench_measure(run, t->dev, step_replay, g, 1, &v->time) != 0)
        bench_result_graft_error(v, "replaying the step");
    else if (step_download(t) != 0)
        bench_result_graft_error(v, "reading the loss");
    else {
        v->has_loss = true;
        v->step_flops = r->step_flops;
        v->loss_first = before;
        v->loss_last = t->loss_host;
        if (!isfinite(t->loss_host) || !(t->loss_host < before))
            bench_result_wrong(v, "wrong result: the loss went from %.6g to %.6g over the "
                               "replays on one fixed batch; it must fall", before,
                               t->loss_host);
    }
    gf_graph_destroy(g);
}

/* Creates the batch and the optimizer (the parameters are made by the
 * caller), measures, checks, and frees everything. */
static void run_train(bench_run *run, bench_result *r, train_case *t, const int64_t *x_sizes,
                      int x_rank) {
    t->first_loss = NAN;
    t->x_numel = 1;
    for (int d = 0; d < x_rank; d++) t->x_numel *= x_sizes[d];
    t->host_x = bench_host_values(t->x_numel, 20, 0, 1); /* pixel-like values */
    t->host_y = malloc((size_t)t->batch * sizeof *t->host_y);
    if (!t->host_x || !t->host_y) {
        bench_result_wrong(r, "out of host memory for the batch");
        goto done;
    }
    for (int64_t i = 0; i < t->batch; i++)
        t->host_y[i] = (int64_t)(bench_value((uint64_t)i, 21, 0, 1) * N_CLASSES) % N_CLASSES;
    for (int i = 0; i < t->n_params; i++)
        if (!t->param[i]) {
            bench_result_graft_error(r, "creating the parameters");
            goto done;
        }
    t->x = gf_empty(x_sizes, x_rank, GF_F32, t->dev);
    t->y = gf_empty((const int64_t[]){t->batch}, 1, GF_I64, t->dev);
    t->opt = gf_adam_create(t->param, t->n_params, NULL); /* PyTorch's defaults, lr 1e-3 */
    if (!t->x || !t->y || !t->opt) {
        bench_result_graft_error(r, "creating the batch or the optimizer");
        goto done;
    }
    if (bench_train_dist_active &&
        bench_train_dist_active->attach(t->param, t->n_params, bench_train_dist_active->user)) {
        bench_result_graft_error(r, "data-parallel set-up");
        goto done;
    }
    r->has_transfer = true;
    r->h2d_bytes = (double)t->x_numel * sizeof(float) + (double)t->batch * sizeof(int64_t);
    r->d2h_bytes = sizeof(float);
    bench_progress(run, "batch to the device");
    if (bench_measure(run, t->dev, step_upload, t, 1, &r->h2d) != 0) {
        bench_result_graft_error(r, "writing the batch");
        goto done;
    }
    bench_progress(run, "training steps");
    if (bench_measure(run, t->dev, step_train, t, 1, &r->time) != 0) {
        bench_result_graft_error(r, "the training step");
        goto done;
    }
    bench_progress(run, "loss to the host");
    if (bench_measure(run, t->dev, step_download, t, 1, &r->d2h) != 0) {
        bench_result_graft_error(r, "reading the loss");
        goto done;
    }
    double first = t->first_loss, last = t->loss_host;
    r->has_loss = true;
    r->loss_first = first;
    r->loss_last = last;
    if (!isfinite(first) || !isfinite(last) || !(last < first))
        bench_result_wrong(r, "wrong result: the loss went from %.6g (first step) to %.6g "
                           "(step %d) on one fixed batch; it must fall", first, last,
                           run->opts.warmup + r->time.runs);
    if (!bench_train_dist_active && t->autocast == GF_F32) {
        run_train_replayed(run, r, t, false);
        run_train_replayed(run, r, t, true);
    }
done:
    if (bench_train_dist_active) bench_train_dist_active->detach(bench_train_dist_active->user);
    gf_tensor_release(t->loss);
    gf_optimizer_destroy(t->opt);
    for (int i = 0; i < t->n_params; i++) gf_tensor_release(t->param[i]);
    gf_tensor_release(t->x);
    gf_tensor_release(t->y);
    gf_module_release(t->body);
    gf_module_release(t->head);
    free(t->host_x);
    free(t->host_y);
}

/* ------------------------------------------------------------ MLP */
static gf_tensor *mlp_forward(const train_case *t) {
    gf_tensor *h = gf_relu(gf_add(gf_matmul(t->x, t->param[0]), t->param[1]));
    h = gf_relu(gf_add(gf_matmul(h, t->param[2]), t->param[3]));
    return gf_add(gf_matmul(h, t->param[4]), t->param[5]);
}

static void mlp_step(bench_run *run, int device, int64_t batch, gf_dtype cast) {
    /* The quick run keeps the shape of the model but not its width. */
    int hidden = run->opts.quick ? 128 : 1024;
    const int64_t dims[4] = {784, hidden, hidden, N_CLASSES};
    char detail[112];
    snprintf(detail, sizeof detail, "784-%d-%d-10 ReLU, batch %lld, %s, Adam", hidden, hidden,
             (long long)batch, cast == GF_F32 ? "f32" : "autocast bf16");
    bench_result *r = bench_result_add(run, device,
                                       cast == GF_F32 ? "mlp train step" : "mlp_bf16 step",
                                       detail);
    if (!r) return;
    r->per = "step";
    r->work = (double)batch;
    r->rate_unit = "samples/s";
    train_case t = {.dev = run->devices[device].dev,
                    .batch = batch,
                    .n_params = 6,
                    .forward = mlp_forward,
                    .autocast = cast};
    for (int l = 0; l < 3; l++) {
        double bound = 1.0 / sqrt((double)dims[l]);
        t.param[2 * l] = param_init((const int64_t[]){dims[l], dims[l + 1]}, 2, bound,
                                    (uint32_t)(30 + 2 * l), t.dev);
        t.param[2 * l + 1] = param_init((const int64_t[]){dims[l + 1]}, 1, bound,
                                        (uint32_t)(31 + 2 * l), t.dev);
    }
    /* Per layer 2 b i o forward, twice that backward (the first layer's
     * input gradient is not computed). */
    for (int l = 0; l < 3; l++)
        r->step_flops += (l ? 6.0 : 4.0) * (double)batch * (double)dims[l] * (double)dims[l + 1];
    run_train(run, r, &t, (const int64_t[]){batch, 784}, 2);
}

void bench_mlp_step(bench_run *run, int device, int64_t batch) {
    mlp_step(run, device, batch, GF_F32);
}
void bench_mlp_step_bf16(bench_run *run, int device, int64_t batch) {
    mlp_step(run, device, batch, GF_BF16);
}

/* ------------------------------------------------------------ CNN */
static gf_tensor *cnn_forward(const train_case *t) {
    const gf_conv2d_opts same = {.padding = {1, 1}};
    const gf_pool2d_opts pool = {.kernel = {2, 2}};
    gf_tensor *h = gf_max_pool2d(gf_relu(gf_conv2d(t->x, t->param[0], t->param[1], &same)),
                                 &pool, NULL);
    h = gf_max_pool2d(gf_relu(gf_conv2d(h, t->param[2], t->param[3], &same)), &pool, NULL);
    h = gf_reshape(h, (const int64_t[]){t->batch, 32 * 7 * 7}, 2);
    return gf_add(gf_matmul(h, t->param[4]), t->param[5]);
}

static void cnn_step(bench_run *run, int device, int64_t batch, gf_dtype cast) {
    char detail[112];
    snprintf(detail, sizeof detail,
             "1x28x28, conv16-pool-conv32-pool-linear10, batch %lld, %s, Adam", (long long)batch,
             cast == GF_F32 ? "f32" : "autocast bf16");
    bench_result *r = bench_result_add(run, device,
                                       cast == GF_F32 ? "cnn train step" : "cnn_bf16 step",
                                       detail);
    if (!r) return;
    r->per = "step";
    r->work = (double)batch;
    r->rate_unit = "samples/s";
    train_case t = {.dev = run->devices[device].dev,
                    .batch = batch,
                    .n_params = 6,
                    .forward = cnn_forward,
                    .autocast = cast};
    t.param[0] = param_init((const int64_t[]){16, 1, 3, 3}, 4, 1.0 / 3.0, 40, t.dev);
    t.param[1] = param_init((const int64_t[]){16}, 1, 1.0 / 3.0, 41, t.dev);
    double b2 = 1.0 / sqrt(16.0 * 9.0), b3 = 1.0 / sqrt(32.0 * 7 * 7);
    t.param[2] = param_init((const int64_t[]){32, 16, 3, 3}, 4, b2, 42, t.dev);
    t.param[3] = param_init((const int64_t[]){32}, 1, b2, 43, t.dev);
    t.param[4] = param_init((const int64_t[]){32 * 7 * 7, N_CLASSES}, 2, b3, 44, t.dev);
    t.param[5] = param_init((const int64_t[]){N_CLASSES}, 1, b3, 45, t.dev);
    /* conv1 (1->16 on 28x28; no input gradient), conv2 (16->32 on 14x14),
     * linear 1568->10: 2 MACs' flops forward, twice that backward. */
    double b = (double)batch;
    r->step_flops = 4.0 * b * 16 * 28 * 28 * 9 + 6.0 * b * 32 * 14 * 14 * 16 * 9 +
                    6.0 * b * 32 * 7 * 7 * N_CLASSES;
    run_train(run, r, &t, (const int64_t[]){batch, 1, 28, 28}, 4);
}

void bench_cnn_step(bench_run *run, int device, int64_t batch) {
    cnn_step(run, device, batch, GF_F32);
}
void bench_cnn_step_bf16(bench_run *run, int device, int64_t batch) {
    cnn_step(run, device, batch, GF_BF16);
}

/* ------------------------------------------------------------ LSTM, GRU */
static gf_tensor *rnn_forward(const train_case *t) {
    gf_tensor *h_n = NULL;
    gf_tensor *y = gf_nn_rnn_forward(t->body, t->x, NULL, NULL, &h_n, NULL);
    if (!y || !h_n) return NULL;
    gf_tensor *last = gf_select(h_n, 0, gf_tensor_size(h_n, 0) - 1);
    return last ? gf_module_forward(t->head, &last, 1) : NULL;
}

static void rnn_step(bench_run *run, int device, int64_t batch, gf_rnn_mode mode) {
    bool quick = run->opts.quick;
    int64_t hidden = quick ? 16 : 256, seq = quick ? 4 : 64, feat = quick ? 8 : 64;
    const char *name = mode == GF_RNN_LSTM ? "lstm train step" : "gru train step";
    char detail[112];
    snprintf(detail, sizeof detail, "%s 2 layers, hidden %lld, seq %lld x %lld, batch %lld, f32, "
             "Adam", mode == GF_RNN_LSTM ? "LSTM" : "GRU", (long long)hidden, (long long)seq,
             (long long)feat, (long long)batch);
    bench_result *r = bench_result_add(run, device, name, detail);
    if (!r) return;
    r->per = "step";
    r->work = (double)batch;
    r->rate_unit = "samples/s";
    train_case t = {.dev = run->devices[device].dev, .batch = batch, .forward = rnn_forward};
    gf_manual_seed(50); /* PyTorch's init, U(+-1/sqrt(hidden)), from one seed */
    t.body = gf_nn_rnn(mode, feat, hidden, 2, true, false, 0.0, false, GF_F32, t.dev);
    t.head = gf_nn_linear(hidden, N_CLASSES, true, GF_F32, t.dev);
    gf_tensor *ps[MAX_PARAMS];
    int n = t.body ? gf_module_parameters(t.body, ps, MAX_PARAMS) : -1;
    int k = t.head && n >= 0 ? gf_module_parameters(t.head, ps + n, MAX_PARAMS - n) : -1;
    t.n_params = n >= 0 && k >= 0 ? n + k : 1; /* one NULL parameter: reported below */
    for (int i = 0; i < t.n_params; i++) t.param[i] = n >= 0 && k >= 0 ? gf_tensor_retain(ps[i]) : NULL;
    run_train(run, r, &t, (const int64_t[]){seq, batch, feat}, 3);
}

void bench_lstm_step(bench_run *run, int device, int64_t batch) {
    rnn_step(run, device, batch, GF_RNN_LSTM);
}
void bench_gru_step(bench_run *run, int device, int64_t batch) {
    rnn_step(run, device, batch, GF_RNN_GRU);
}

/* ------------------------------------------------------------ Transformer encoder layer */
static gf_tensor *encoder_forward(const train_case *t) {
    gf_tensor *y = gf_nn_transformer_forward(t->body, t->x, NULL, NULL);
    gf_tensor *pooled = y ? gf_select(y, 1, 0) : NULL; /* the first token's output */
    return pooled ? gf_module_forward(t->head, &pooled, 1) : NULL;
}

void bench_encoder_step(bench_run *run, int device, int64_t batch) {
    bool quick = run->opts.quick;
    int64_t d_model = quick ? 32 : 256, heads = quick ? 4 : 8, ff = quick ? 64 : 1024,
            seq = quick ? 8 : 64;
    char detail[112];
    snprintf(detail, sizeof detail, "encoder layer d %lld, %lld heads, ff %lld, seq %lld, "
             "batch %lld, f32, Adam", (long long)d_model, (long long)heads, (long long)ff,
             (long long)seq, (long long)batch);
    bench_result *r = bench_result_add(run, device, "encoder train step", detail);
    if (!r) return;
    r->per = "step";
    r->work = (double)batch;
    r->rate_unit = "samples/s";
    train_case t = {.dev = run->devices[device].dev, .batch = batch, .forward = encoder_forward};
    gf_manual_seed(51);
    t.body = gf_nn_transformer_encoder_layer(d_model, heads, ff, 0.0, false, 1e-5, true, false,
                                             GF_F32, t.dev);
    t.head = gf_nn_linear(d_model, N_CLASSES, true, GF_F32, t.dev);
    gf_tensor *ps[MAX_PARAMS];
    int n = t.body ? gf_module_parameters(t.body, ps, MAX_PARAMS) : -1;
    int k = t.head && n >= 0 ? gf_module_parameters(t.head, ps + n, MAX_PARAMS - n) : -1;
    t.n_params = n >= 0 && k >= 0 ? n + k : 1; /* one NULL parameter: reported below */
    for (int i = 0; i < t.n_params; i++) t.param[i] = n >= 0 && k >= 0 ? gf_tensor_retain(ps[i]) : NULL;
    run_train(run, r, &t, (const int64_t[]){batch, seq, d_model}, 3);
}
