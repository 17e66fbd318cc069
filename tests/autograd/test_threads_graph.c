/* SPDX-License-Identifier: BSD-3-Clause */
/* test_threads_graph.c — several threads capture and replay graphs at once.
 *
 * Each thread trains its own small MLP with SGD on its own data: first a
 * reference run of eager steps, then the same from the same initial weights
 * with the step captured once and replayed, while the other threads do the
 * same. Each thread's losses and final weights must equal its eager run's
 * bit for bit (no random ops: the generator is shared by the threads). Then
 * all threads replay one shared graph at once (replays of one graph take
 * turns): the count of its updates must be exact. */
#include <graft.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define THREADS 4
#define STEPS 12
#define IN 16
#define HID 32
#define OUT 4
#define BATCH 8

typedef struct worker {
    int id;
    int failures;
    double eager[STEPS], replayed[STEPS];
    float w_eager[HID * IN], w_replayed[HID * IN];
} worker;

static float val(int id, int s, int i) {
    uint32_t h = (uint32_t)(id * 7919 + s * 104729 + i * 2654435761u);
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    h ^= h >> 15;
    return (float)(h % 2001) / 1000.0f - 1.0f;
}

typedef struct net {
    gf_tensor *w1, *w2, *x, *y;
    gf_optimizer *opt;
} net;

static void fill(gf_tensor *t, int id, int s) {
    int64_t n = gf_tensor_numel(t);
    float *v = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++) v[i] = val(id, s, (int)i) * 0.3f;
    gf_tensor_from_host(t, v, sizeof(float) * (size_t)n);
    free(v);
}

static int net_init(net *n, int id) {
    n->w1 = gf_zeros((const int64_t[]){HID, IN}, 2, GF_F32, NULL);
    n->w2 = gf_zeros((const int64_t[]){OUT, HID}, 2, GF_F32, NULL);
    n->x = gf_zeros((const int64_t[]){BATCH, IN}, 2, GF_F32, NULL);
    n->y = gf_zeros((const int64_t[]){BATCH, OUT}, 2, GF_F32, NULL);
    if (!n->w1 || !n->w2 || !n->x || !n->y) return 1;
    fill(n->w1, id, -1);
    fill(n->w2, id, -2);
    gf_tensor_set_requires_grad(n->w1, true);
    gf_tensor_set_requires_grad(n->w2, true);
    gf_tensor *ps[2] = {n->w1, n->w2};
    gf_sgd_opts so = {.lr = 0.05, .momentum = 0.5};
    n->opt = gf_sgd_create(ps, 2, &so);
    return n->opt ? 0 : 1;
}

static void net_free(net *n) {
    gf_optimizer_destroy(n->opt);
    gf_tensor_release(n->w1);
    gf_tensor_release(n->w2);
    gf_tensor_release(n->x);
    gf_tensor_release(n->y);
}

static gf_tensor *net_step(net *n) {
    gf_scope_begin();
    gf_optimizer_zero_grad_keep(n->opt);
    gf_tensor *h = gf_tanh(gf_matmul(n->x, gf_transpose(n->w1, 0, 1)));
    gf_tensor *o = gf_matmul(h, gf_transpose(n->w2, 0, 1));
    gf_tensor *loss = gf_mse_loss(o, n->y, GF_REDUCTION_MEAN);
    gf_status s = loss ? gf_backward(loss, NULL, NULL) : GF_ERR_INVALID;
    if (s == GF_OK) s = gf_optimizer_step(n->opt);
    gf_tensor *keep = s == GF_OK ? gf_scope_keep(loss) : NULL;
    gf_scope_end();
    return keep;
}

static void batch(net *n, int id, int s) {
    fill(n->x, id + 100, s);
    fill(n->y, id + 200, s);
}

static double item(const gf_tensor *t) {
    double v = -1;
    if (!t || gf_tensor_item(t, &v) != GF_OK) return -1;
    return v;
}

static void *work(void *p) {
    worker *w = p;
    net e, r;
    if (net_init(&e, w->id) || net_init(&r, w->id)) {
        w->failures++;
        return NULL;
    }
    batch(&e, w->id, -1);
    gf_tensor_release(net_step(&e));
    for (int s = 0; s < STEPS; s++) {
        batch(&e, w->id, s);
        gf_tensor *l = net_step(&e);
        w->eager[s] = item(l);
        gf_tensor_release(l);
    }
    batch(&r, w->id, -1);
    gf_tensor_release(net_step(&r));
    batch(&r, w->id, 0);
    if (gf_graph_capture_begin(NULL) != GF_OK) {
        w->failures++;
        return NULL;
    }
    gf_tensor *loss = net_step(&r);
    gf_graph *g = gf_graph_capture_end();
    if (!g || !loss) w->failures++;
    w->replayed[0] = item(loss);
    for (int s = 1; s < STEPS && g; s++) {
        batch(&r, w->id, s);
        if (gf_graph_replay(g) != GF_OK) w->failures++;
        w->replayed[s] = item(loss);
    }
    gf_tensor_to_host(e.w1, w->w_eager, sizeof w->w_eager);
    gf_tensor_to_host(r.w1, w->w_replayed, sizeof w->w_replayed);
    gf_graph_destroy(g);
    gf_tensor_release(loss);
    net_free(&e);
    net_free(&r);
    return NULL;
}

static void test_threads_capture_replay(void) {
    pthread_t th[THREADS];
    worker w[THREADS];
    memset(w, 0, sizeof w);
    for (int i = 0; i < THREADS; i++) {
        w[i].id = i;
        CHECK(pthread_create(&th[i], NULL, work, &w[i]) == 0);
    }
    for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < THREADS; i++) {
        CHECK(w[i].failures == 0);
        CHECK_MSG(!memcmp(w[i].eager, w[i].replayed, sizeof w[i].eager),
                  "thread %d: losses differ (%.9g vs %.9g at step 1)", i, w[i].eager[1],
                  w[i].replayed[1]);
        CHECK(!memcmp(w[i].w_eager, w[i].w_replayed, sizeof w[i].w_eager));
        CHECK(w[i].eager[0] != w[i].eager[STEPS - 1]);
    }
}

/* One graph replayed from every thread: replays take turns. */
typedef struct shared {
    gf_graph *g;
    int failures;
} shared;

static void *replay_shared(void *p) {
    shared *s = p;
    for (int i = 0; i < 50; i++)
        if (gf_graph_replay(s->g) != GF_OK) __atomic_fetch_add(&s->failures, 1, __ATOMIC_RELAXED);
    return NULL;
}

static void test_one_graph_many_threads(void) {
    gf_tensor *acc = gf_zeros((const int64_t[]){4}, 1, GF_F32, NULL);
    CHECK(gf_graph_capture_begin(NULL) == GF_OK);
    CHECK(gf_add_scalar_(acc, 1.0) == GF_OK);
    shared s = {.g = gf_graph_capture_end()};
    CHECK(s.g != NULL);
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) CHECK(pthread_create(&th[i], NULL, replay_shared, &s) == 0);
    for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
    CHECK(s.failures == 0);
    float v[4];
    CHECK(gf_tensor_to_host(acc, v, sizeof v) == GF_OK);
    CHECK_MSG(v[0] == 1.0f + THREADS * 50 && v[3] == v[0], "acc %g", v[0]);
    gf_graph_destroy(s.g);
    gf_tensor_release(acc);
}

int main(void) {
    RUN(test_threads_capture_replay);
    RUN(test_one_graph_many_threads);
    return CHECK_REPORT();
}
