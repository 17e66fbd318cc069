/* SPDX-License-Identifier: BSD-3-Clause */
/* test_graph_replay.c — a captured training step replayed equals the eager
 * steps bit for bit, on the default device (GRAFT_DEVICE).
 *
 * For an MLP, a CNN and a small transformer encoder, each with dropout, an
 * optimiser (Adam, AdamW, SGD with momentum) and a learning-rate schedule:
 * one eager warm-up step, then ten steps, each on its own batch written into
 * the input tensors in place. The eager run takes the ten steps eagerly; the
 * graph run captures the first and replays the other nine. Same seed, same
 * initial weights: every loss and every parameter at the end must have the
 * same bits (dropout's masks differ per step, as the Philox offsets move on
 * each replay as they do eagerly). The schedule and the step counts must
 * end where the eager run's do. On vulkan and opencl the replays must have
 * gone through the plugin's graph slots (the "vulkan.stats" and
 * "opencl.stats" counters). */
#include <graft.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "graft_opencl_ext.h"
#include "graft_vulkan_ext.h"

#define STEPS 10
#define MAXP 32

typedef enum model_kind { MLP, CNN, TRANSFORMER } model_kind;
typedef enum opt_kind { ADAM, ADAMW, SGD_MOMENTUM } opt_kind;

typedef struct run {
    gf_module *net;
    gf_tensor *params[MAXP];
    int n_params;
    gf_optimizer *opt;
    gf_lr_scheduler *sched;
    gf_tensor *x, *y; /* inputs, rewritten in place each step */
    model_kind kind;
} run;

static double wave(int s, int i) { return sin(0.37 * i + 1.3 * s) * cos(0.011 * i * (s + 1)); }

static gf_module *build(model_kind k, gf_device *dev) {
    if (k == MLP) {
        gf_module *layers[5] = {gf_nn_linear(12, 24, true, GF_F32, dev), gf_nn_relu(),
                                gf_nn_dropout(0.25), gf_nn_linear(24, 24, true, GF_F32, dev),
                                gf_nn_linear(24, 3, true, GF_F32, dev)};
        gf_module *m = gf_nn_sequential(layers, 5);
        for (int i = 0; i < 5; i++) gf_module_release(layers[i]);
        return m;
    }
    if (k == CNN) {
        const int kern[2] = {3, 3};
        gf_conv2d_opts co = {.stride = {1, 1}, .padding = {1, 1}, .dilation = {1, 1}, .groups = 1};
        gf_pool2d_opts po = {.kernel = {2, 2}, .stride = {2, 2}};
        gf_module *layers[7] = {gf_nn_conv2d(1, 4, kern, &co, true, GF_F32, dev), gf_nn_relu(),
                                gf_nn_max_pool2d(&po), gf_nn_dropout(0.2), gf_nn_flatten(),
                                gf_nn_linear(4 * 4 * 4, 3, true, GF_F32, dev), gf_nn_tanh()};
        gf_module *m = gf_nn_sequential(layers, 7);
        for (int i = 0; i < 7; i++) gf_module_release(layers[i]);
        return m;
    }
    gf_module *layer = gf_nn_transformer_encoder_layer(8, 2, 16, 0.1, false, 1e-5, true, false,
                                                       GF_F32, dev);
    gf_module *enc = gf_nn_transformer_encoder(&layer, 1, NULL);
    gf_module_release(layer);
    return enc;
}

/* The batch of step s into x and y (in place: the graph's inputs). */
static void write_batch(run *r, int s) {
    int64_t nx = gf_tensor_numel(r->x), ny = gf_tensor_numel(r->y);
    float *vx = malloc(sizeof(float) * (size_t)nx), *vy = malloc(sizeof(float) * (size_t)ny);
    for (int64_t i = 0; i < nx; i++) vx[i] = (float)wave(s, (int)i);
    for (int64_t i = 0; i < ny; i++) vy[i] = (float)wave(s + 100, (int)i);
    CHECK(gf_tensor_from_host(r->x, vx, sizeof(float) * (size_t)nx) == GF_OK);
    CHECK(gf_tensor_from_host(r->y, vy, sizeof(float) * (size_t)ny) == GF_OK);
    free(vx);
    free(vy);
}

static void setup(run *r, model_kind k, opt_kind o) {
    memset(r, 0, sizeof *r);
    gf_device *dev = gf_device_default();
    r->kind = k;
    gf_manual_seed(1234);
    r->net = build(k, dev);
    CHECK(r->net != NULL);
    gf_module_train(r->net, true);
    r->n_params = gf_module_parameters(r->net, r->params, MAXP);
    CHECK(r->n_params > 0 && r->n_params <= MAXP);
    if (o == SGD_MOMENTUM) {
        gf_sgd_opts so = {.lr = 0.05, .momentum = 0.9, .weight_decay = 1e-3};
        r->opt = gf_sgd_create(r->params, r->n_params, &so);
        r->sched = gf_lr_cosine_create(r->opt, 7, 0.001);
    } else {
        gf_adam_opts ao = GF_ADAM_OPTS_DEFAULT;
        if (o == ADAMW) {
            gf_adam_opts w = GF_ADAMW_OPTS_DEFAULT;
            ao = w;
            ao.weight_decay = 0.05;
        }
        ao.lr = 0.01;
        r->opt = gf_adam_create(r->params, r->n_params, &ao);
        r->sched = gf_lr_step_create(r->opt, 3, 0.5);
    }
    CHECK(r->opt && r->sched);
    int64_t xs_mlp[2] = {6, 12}, ys_mlp[2] = {6, 3};
    int64_t xs_cnn[4] = {5, 1, 8, 8}, ys_cnn[2] = {5, 3};
    int64_t xs_tr[3] = {3, 5, 8}, ys_tr[3] = {3, 5, 8};
    const int64_t *xs = k == MLP ? xs_mlp : k == CNN ? xs_cnn : xs_tr;
    const int64_t *ys = k == MLP ? ys_mlp : k == CNN ? ys_cnn : ys_tr;
    int xr = k == MLP ? 2 : k == CNN ? 4 : 3, yr = k == TRANSFORMER ? 3 : 2;
    r->x = gf_zeros(xs, xr, GF_F32, dev);
    r->y = gf_zeros(ys, yr, GF_F32, dev);
    CHECK(r->x && r->y);
}

static void teardown(run *r) {
    gf_lr_scheduler_destroy(r->sched);
    gf_optimizer_destroy(r->opt);
    gf_module_release(r->net);
    gf_tensor_release(r->x);
    gf_tensor_release(r->y);
}

/* One training step; returns the loss (a new reference). */
static gf_tensor *step(run *r) {
    gf_scope_begin();
    CHECK(gf_optimizer_zero_grad_keep(r->opt) == GF_OK);
    gf_tensor *out = gf_module_forward(r->net, &r->x, 1);
    gf_tensor *loss = gf_mse_loss(out, r->y, GF_REDUCTION_MEAN);
    gf_status s = loss ? gf_backward(loss, NULL, NULL) : gf_last_status();
    CHECK_MSG(s == GF_OK, "backward: %s", gf_last_error());
    s = gf_optimizer_step(r->opt);
    CHECK_MSG(s == GF_OK, "step: %s", gf_last_error());
    CHECK(gf_lr_scheduler_step(r->sched) == GF_OK);
    gf_tensor *keep = loss ? gf_scope_keep(loss) : NULL;
    gf_scope_end();
    return keep;
}

static double item(const gf_tensor *t) {
    double v = NAN;
    CHECK(t && gf_tensor_item(t, &v) == GF_OK);
    return v;
}

static bool same_bits(const gf_tensor *a, const gf_tensor *b) {
    size_t n = (size_t)gf_tensor_numel(a) * sizeof(float);
    if (n != (size_t)gf_tensor_numel(b) * sizeof(float)) return false;
    float *va = malloc(n), *vb = malloc(n);
    bool ok = gf_tensor_to_host(a, va, n) == GF_OK && gf_tensor_to_host(b, vb, n) == GF_OK &&
              !memcmp(va, vb, n);
    free(va);
    free(vb);
    return ok;
}

/* Runs of plugin graphs so far where the device's plugin counts them
 * (vulkan, opencl); UINT64_MAX elsewhere. */
static uint64_t plugin_graph_launches(void) {
    gf_device *dev = gf_device_default();
    if (!strcmp(gf_device_type(dev), "vulkan")) {
        const graft_vulkan_stats_ext *ext = NULL;
        bool ok = gf_device_query_extension(dev, "vulkan.stats", (void **)&ext) == GF_OK &&
                  ext && ext->struct_size >= sizeof *ext;
        CHECK_MSG(ok, "vulkan.stats: %s", gf_last_error());
        return ok ? ext->graph_launches() : UINT64_MAX;
    }
    if (!strcmp(gf_device_type(dev), "opencl")) {
        const graft_opencl_stats_ext *ext = NULL;
        bool ok = gf_device_query_extension(dev, "opencl.stats", (void **)&ext) == GF_OK &&
                  ext && ext->struct_size >= sizeof *ext;
        CHECK_MSG(ok, "opencl.stats: %s", gf_last_error());
        return ok ? ext->graph_launches() : UINT64_MAX;
    }
    return UINT64_MAX;
}

static void compare(model_kind k, opt_kind o) {
    run e, g;
    double le[STEPS], lg[STEPS];
    /* eager */
    setup(&e, k, o);
    write_batch(&e, -1);
    gf_tensor_release(step(&e)); /* warm-up: gradients and state exist */
    gf_manual_seed(77);
    for (int s = 0; s < STEPS; s++) {
        write_batch(&e, s);
        gf_tensor *l = step(&e);
        le[s] = item(l);
        gf_tensor_release(l);
    }
    /* captured once, replayed */
    setup(&g, k, o);
    write_batch(&g, -1);
    gf_tensor_release(step(&g));
    gf_manual_seed(77);
    write_batch(&g, 0);
    CHECK(gf_graph_capture_begin(NULL) == GF_OK);
    gf_tensor *loss = step(&g);
    gf_graph *graph = gf_graph_capture_end();
    CHECK_MSG(graph != NULL, "capture: %s", gf_last_error());
    if (!graph) {
        gf_tensor_release(loss);
        teardown(&e);
        teardown(&g);
        return;
    }
    CHECK(gf_graph_node_count(graph) > 20);
    CHECK(gf_graph_input_count(graph) >= (size_t)g.n_params + 2);
    lg[0] = item(loss);
    uint64_t slot_runs = plugin_graph_launches();
    for (int s = 1; s < STEPS; s++) {
        write_batch(&g, s);
        gf_status st = gf_graph_replay(graph);
        CHECK_MSG(st == GF_OK, "replay %d: %s", s, gf_last_error());
        lg[s] = item(loss);
    }
    if (slot_runs != UINT64_MAX)
        CHECK_MSG(plugin_graph_launches() >= slot_runs + STEPS - 1,
                  "model %d: the replays did not go through the plugin's graph slots", (int)k);
    for (int s = 0; s < STEPS; s++)
        CHECK_MSG(!memcmp(&le[s], &lg[s], sizeof(double)),
                  "model %d opt %d step %d: eager loss %.9g, replayed %.9g", (int)k, (int)o, s,
                  le[s], lg[s]);
    /* the losses moved: dropout and the updates did something */
    CHECK(le[0] != le[STEPS - 1]);
    for (int i = 0; i < e.n_params; i++)
        CHECK_MSG(same_bits(e.params[i], g.params[i]), "model %d opt %d: parameter %d differs",
                  (int)k, (int)o, i);
    CHECK(gf_lr_scheduler_last_epoch(e.sched) == gf_lr_scheduler_last_epoch(g.sched));
    CHECK(gf_optimizer_get_lr(e.opt) == gf_optimizer_get_lr(g.opt));
    gf_tensor_release(loss);
    gf_graph_destroy(graph);
    teardown(&e);
    teardown(&g);
}

static void test_mlp_adam(void) { compare(MLP, ADAM); }
static void test_mlp_sgd(void) { compare(MLP, SGD_MOMENTUM); }
static void test_cnn_adamw(void) { compare(CNN, ADAMW); }
static void test_transformer_adam(void) { compare(TRANSFORMER, ADAM); }

/* The optimiser and its schedule destroyed while a graph that captured
 * their steps lives: the graph holds both, replays go on stepping them (the
 * parameters still move), and destroying the graph frees the rest (each
 * order once ran a replay on freed memory). */
static void test_destroy_before_graph(void) {
    for (int order = 0; order < 2; order++) {
        run g;
        setup(&g, MLP, ADAM);
        write_batch(&g, -1);
        gf_tensor_release(step(&g));
        CHECK(gf_graph_capture_begin(NULL) == GF_OK);
        gf_tensor *loss = step(&g);
        gf_graph *graph = gf_graph_capture_end();
        CHECK_MSG(graph != NULL, "capture: %s", gf_last_error());
        if (order == 0) {
            gf_optimizer_destroy(g.opt);
            gf_lr_scheduler_destroy(g.sched);
        } else {
            gf_lr_scheduler_destroy(g.sched);
            gf_optimizer_destroy(g.opt);
        }
        g.opt = NULL;
        g.sched = NULL;
        size_t nb = (size_t)gf_tensor_numel(g.params[0]) * sizeof(float);
        float *before = calloc(1, nb), *after = calloc(1, nb);
        CHECK(before && after && gf_tensor_to_host(g.params[0], before, nb) == GF_OK);
        for (int s = 1; graph && s < 4; s++) {
            write_batch(&g, s);
            CHECK_MSG(gf_graph_replay(graph) == GF_OK, "replay %d: %s", s, gf_last_error());
        }
        CHECK(after && gf_tensor_to_host(g.params[0], after, nb) == GF_OK);
        CHECK(before && after && memcmp(before, after, nb) != 0); /* the updates went on */
        free(before);
        free(after);
        gf_tensor_release(loss);
        gf_graph_destroy(graph);
        teardown(&g);
    }
}

/* A region's input that a scope owns, released by the caller by mistake:
 * the graph's hold is graft's own, so the release is refused (INVALID, the
 * scope-release message) instead of taking the graph's reference; after the
 * scope's end a replay refuses (the input's owners all gave it up) and the
 * graph goes without touching freed memory (it once released the input
 * again after the scope had freed it). */
static void test_input_over_release(void) {
    gf_scope_begin();
    gf_tensor *x = gf_ones((const int64_t[]){4}, 1, GF_F32, NULL);
    CHECK(gf_graph_capture_begin(NULL) == GF_OK);
    gf_tensor *y = gf_mul_scalar(x, 2.0);
    gf_graph *graph = gf_graph_capture_end();
    CHECK_MSG(graph != NULL && y != NULL, "capture: %s", gf_last_error());
    gf_clear_error();
    gf_tensor_release(x); /* not the caller's: the scope's */
    CHECK_MSG(gf_last_status() == GF_ERR_INVALID, "%s", gf_last_error());
    CHECK_CONTAINS(gf_last_error(), "belongs to the open scope");
    gf_scope_end();
    /* now only the graph holds x: a replay refuses, naming it */
    CHECK(!graph || gf_graph_replay(graph) != GF_OK);
    CHECK_CONTAINS(gf_last_error(), "released by everything but the graph");
    gf_graph_destroy(graph);
}

/* A spectral filter, irfft(rfft(x) * rfft(x)) (a circular autocorrelation
 * with itself), captured once and replayed on new inputs: each replay equals
 * the eager result bit for bit. Plugins whose FFT launches use buffers of
 * their own run those nodes eagerly inside the graph; a length of 48 takes
 * the mixed-radix or Bluestein paths, 64 the power-of-two ones. */
static void test_fft_replay(void) {
    for (int k = 0; k < 2; k++) {
        int64_t n = k ? 64 : 48, xs[2] = {3, n};
        gf_tensor *x = gf_zeros(xs, 2, GF_F32, NULL);
        CHECK(x != NULL);
        if (!x) return;
        float host[3 * 64], got[3 * 64], want[3 * 64];
        gf_tensor *y = NULL;
        gf_graph *graph = NULL;
        for (int s = 0; s < 4; s++) {
            for (int64_t i = 0; i < 3 * n; i++) host[i] = (float)wave(s, (int)i);
            CHECK(gf_tensor_from_host(x, host, sizeof(float) * (size_t)(3 * n)) == GF_OK);
            gf_scope_begin();
            gf_tensor *f = gf_rfft(x, -1, 1, GF_FFT_NORM_BACKWARD);
            gf_tensor *e = gf_scope_keep(gf_irfft(gf_mul(f, f), n, 1, GF_FFT_NORM_BACKWARD));
            gf_scope_end();
            CHECK_MSG(e != NULL, "eager: %s", gf_last_error());
            if (!e) break;
            CHECK(gf_tensor_to_host(e, want, sizeof(float) * (size_t)(3 * n)) == GF_OK);
            gf_tensor_release(e);
            if (s == 0) {
                CHECK(gf_graph_capture_begin(NULL) == GF_OK);
                gf_scope_begin();
                gf_tensor *fc = gf_rfft(x, -1, 1, GF_FFT_NORM_BACKWARD);
                y = gf_scope_keep(gf_irfft(gf_mul(fc, fc), n, 1, GF_FFT_NORM_BACKWARD));
                gf_scope_end();
                graph = gf_graph_capture_end();
                CHECK_MSG(graph != NULL && y != NULL, "capture: %s", gf_last_error());
                if (!graph || !y) break;
            } else {
                gf_status st = gf_graph_replay(graph);
                CHECK_MSG(st == GF_OK, "replay: %s", gf_last_error());
            }
            CHECK(gf_tensor_to_host(y, got, sizeof(float) * (size_t)(3 * n)) == GF_OK);
            CHECK_MSG(!memcmp(got, want, sizeof(float) * (size_t)(3 * n)),
                      "fft of length %lld: replay %d differs from eager", (long long)n, s);
        }
        gf_tensor_release(y);
        gf_graph_destroy(graph);
        gf_tensor_release(x);
    }
}

int main(void) {
    /* A GRAFT_DEVICE that names no device here (cuda without a GPU): say so
     * and skip (77), as the other programs of the every-device list do. */
    gf_device_info info;
    if (gf_device_get_info(gf_device_default(), &info) != GF_OK) {
        printf("skipped: %s\n", gf_last_error());
        return 77;
    }
    RUN(test_mlp_adam);
    RUN(test_mlp_sgd);
    RUN(test_cnn_adamw);
    RUN(test_transformer_adam);
    RUN(test_fft_replay);
    RUN(test_destroy_before_graph);
    RUN(test_input_over_release);
    return CHECK_REPORT();
}
