/* SPDX-License-Identifier: BSD-3-Clause */
/* test_threads_autograd.c — rule 21: backward from several threads, and
 * backward called from inside a hook or a custom backward. Also run under
 * ThreadSanitizer in CI (every tests/autograd/test_threads*.c is).
 *
 * Threads record their results; all CHECKs run in the main thread (the
 * harness's counters are not thread-safe). */
#define _POSIX_C_SOURCE 200809L /* pthread barriers */
#include <pthread.h>

#include "test_rules_util.h"

#define N_THREADS 4
#define ROUNDS 100
#define LEN 8

static pthread_barrier_t g_barrier;

/* f(x) = sum(exp(0.1 x) * x): df/dx = exp(0.1 x) (0.1 x + 1). */
static gf_status grad_of_f(const double *xv, double *gv) {
    gf_tensor *x = ag_leaf(xv, LEN);
    gf_tensor *a = gf_mul_scalar(x, 0.1);
    gf_tensor *ea = gf_exp(a);
    gf_tensor *p = gf_mul(ea, x);
    gf_tensor *f = gf_sum(p, NULL, 0, false);
    gf_status s = f ? gf_backward(f, NULL, NULL) : gf_last_status();
    gf_tensor_release(f);
    gf_tensor_release(p);
    gf_tensor_release(ea);
    gf_tensor_release(a);
    gf_tensor *g = s == GF_OK ? gf_tensor_grad(x) : NULL;
    if (s == GF_OK && ag_read(g, gv, LEN) != LEN) s = GF_ERR_INVALID;
    gf_tensor_release(g);
    gf_tensor_release(x);
    return s;
}

typedef struct indep {
    int id;
    int failures, mismatches;
    double serial[LEN];
} indep;

static void input_for(int id, int round, double *xv) {
    for (int i = 0; i < LEN; i++) xv[i] = 0.25 * (i + 1) - 0.5 * id + 0.01 * round;
}

static void *indep_thread(void *arg) {
    indep *t = arg;
    pthread_barrier_wait(&g_barrier);
    for (int r = 0; r < ROUNDS; r++) {
        double xv[LEN], gv[LEN];
        input_for(t->id, r, xv);
        if (grad_of_f(xv, gv) != GF_OK) {
            t->failures++;
            continue;
        }
        for (int i = 0; i < LEN; i++) {
            double want = exp(0.1 * xv[i]) * (0.1 * xv[i] + 1);
            if (!check_close_(gv[i], want, 1e-12, 1e-12)) t->mismatches++;
        }
        if (r == 0)
            for (int i = 0; i < LEN; i++)
                if (gv[i] != t->serial[i]) t->mismatches++; /* bit-identical to serial */
    }
    return NULL;
}

static void rule21_independent_graphs_match_serial(void) {
    indep t[N_THREADS];
    for (int k = 0; k < N_THREADS; k++) {
        memset(&t[k], 0, sizeof t[k]);
        t[k].id = k;
        double xv[LEN];
        input_for(k, 0, xv);
        CHECK_OK(grad_of_f(xv, t[k].serial)); /* the serial result first */
    }
    pthread_t th[N_THREADS];
    pthread_barrier_init(&g_barrier, NULL, N_THREADS);
    for (int k = 0; k < N_THREADS; k++) CHECK(pthread_create(&th[k], NULL, indep_thread, &t[k]) == 0);
    for (int k = 0; k < N_THREADS; k++) pthread_join(th[k], NULL);
    pthread_barrier_destroy(&g_barrier);
    for (int k = 0; k < N_THREADS; k++) {
        CHECK_MSG(t[k].failures == 0, "thread %d: %d backward failures", k, t[k].failures);
        CHECK_MSG(t[k].mismatches == 0, "thread %d: %d wrong gradients", k, t[k].mismatches);
    }
}

/* ------------------------------------------------------------ a shared leaf */
typedef struct shared_leaf {
    gf_tensor *x;
    int id;
    int failures;
} shared_leaf;

static void *shared_leaf_thread(void *arg) {
    shared_leaf *t = arg;
    gf_tensor *c = ag_vec(DV(t->id + 1, 10 * (t->id + 1)), 2);
    pthread_barrier_wait(&g_barrier);
    for (int r = 0; r < ROUNDS; r++) {
        gf_tensor *y = gf_mul(t->x, c); /* dy/dx = c */
        if (!y || ag_backward_ones(y, 0, false) != GF_OK) t->failures++;
        gf_tensor_release(y);
    }
    gf_tensor_release(c);
    return NULL;
}

static void rule21_shared_leaf_receives_every_gradient(void) {
    gf_tensor *x = ag_leaf(DV(1, 2), 2);
    shared_leaf t[N_THREADS];
    pthread_t th[N_THREADS];
    pthread_barrier_init(&g_barrier, NULL, N_THREADS);
    for (int k = 0; k < N_THREADS; k++) {
        t[k] = (shared_leaf){x, k, 0};
        CHECK(pthread_create(&th[k], NULL, shared_leaf_thread, &t[k]) == 0);
    }
    for (int k = 0; k < N_THREADS; k++) pthread_join(th[k], NULL);
    pthread_barrier_destroy(&g_barrier);
    int fails = 0;
    for (int k = 0; k < N_THREADS; k++) fails += t[k].failures;
    CHECK(fails == 0);
    /* ROUNDS * sum_k (k + 1) with N_THREADS = 4: ROUNDS * 10, and 10 times that. */
    CHECK_GRAD(x, DV(ROUNDS * 10.0, ROUNDS * 100.0), 2, 0);
    gf_tensor_release(x);
}

/* ------------------------------------------------------------ a shared subgraph */
typedef struct shared_sub {
    gf_tensor *h;
    int id;
    gf_status status;
    char msg[512];
} shared_sub;

static void *shared_sub_thread(void *arg) {
    shared_sub *t = arg;
    gf_tensor *c = ag_vec(DV(t->id + 1), 1);
    gf_tensor *y = gf_mul(t->h, c);
    pthread_barrier_wait(&g_barrier);
    t->status = y ? gf_backward(y, NULL, NULL) : gf_last_status();
    snprintf(t->msg, sizeof t->msg, "%s", t->status == GF_OK ? "" : gf_last_error());
    gf_tensor_release(y);
    gf_tensor_release(c);
    return NULL;
}

static void rule21_shared_subgraph_without_retain_graph_fails_in_all_but_one(void) {
    for (int round = 0; round < 50; round++) {
        gf_tensor *x = ag_leaf(DV(3), 1);
        gf_tensor *w = ag_vec(DV(5), 1);
        gf_tensor *h = gf_mul(x, w); /* saves w: runs once without retain_graph */
        shared_sub t[N_THREADS];
        pthread_t th[N_THREADS];
        pthread_barrier_init(&g_barrier, NULL, N_THREADS);
        for (int k = 0; k < N_THREADS; k++) {
            t[k] = (shared_sub){h, k, GF_ERR_INVALID, ""};
            CHECK(pthread_create(&th[k], NULL, shared_sub_thread, &t[k]) == 0);
        }
        for (int k = 0; k < N_THREADS; k++) pthread_join(th[k], NULL);
        pthread_barrier_destroy(&g_barrier);
        int ok = 0, winner = -1;
        for (int k = 0; k < N_THREADS; k++) {
            if (t[k].status == GF_OK) {
                ok++;
                winner = k;
            } else {
                CHECK_MSG(t[k].status == GF_ERR_AUTOGRAD && strstr(t[k].msg, "retain_graph") &&
                              strstr(t[k].msg, "MulBackward"),
                          "thread %d: %s: %s", k, gf_status_name(t[k].status), t[k].msg);
            }
        }
        CHECK_MSG(ok == 1, "round %d: %d threads succeeded", round, ok);
        /* x got exactly the winner's gradient: w * c = 5 (k + 1). */
        if (ok == 1) CHECK_GRAD(x, DV(5.0 * (winner + 1)), 1, 0);
        gf_tensor_release(h);
        gf_tensor_release(w);
        gf_tensor_release(x);
    }
}

/* ------------------------------------------------------------ modes stay per thread */
typedef struct mode_worker {
    gf_tensor *x;
    bool no_grad;
    int wrong;
} mode_worker;

static void *mode_thread(void *arg) {
    mode_worker *m = arg;
    if (m->no_grad) gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    pthread_barrier_wait(&g_barrier);
    for (int r = 0; r < ROUNDS * 5; r++) {
        gf_tensor *y = gf_mul(m->x, m->x);
        if (!y || gf_tensor_requires_grad(y) == m->no_grad) m->wrong++;
        gf_tensor_release(y);
    }
    return NULL;
}

static void rule21_grad_modes_do_not_leak_between_threads(void) {
    gf_tensor *x = ag_leaf(DV(1, 2), 2);
    mode_worker m[N_THREADS];
    pthread_t th[N_THREADS];
    pthread_barrier_init(&g_barrier, NULL, N_THREADS);
    for (int k = 0; k < N_THREADS; k++) {
        m[k] = (mode_worker){x, k % 2 == 1, 0};
        CHECK(pthread_create(&th[k], NULL, mode_thread, &m[k]) == 0);
    }
    for (int k = 0; k < N_THREADS; k++) pthread_join(th[k], NULL);
    pthread_barrier_destroy(&g_barrier);
    for (int k = 0; k < N_THREADS; k++) CHECK_MSG(m[k].wrong == 0, "thread %d: %d", k, m[k].wrong);
    CHECK(gf_is_grad_enabled());
    gf_tensor_release(x);
}

/* ------------------------------------------------------------ reentrant backward */
typedef struct reentrant {
    gf_tensor *z; /* a leaf of an independent graph */
    gf_status inner;
    double inner_grad;
} reentrant;

/* A hook that runs gf_grad and gf_backward on another graph, and scales
 * the gradient by the result (d(z^2)/dz = 2z = 8). */
static gf_tensor *reentrant_hook(const gf_tensor *g, void *user) {
    reentrant *r = user;
    /* Hooks run in no-grad mode (rule 9): record the inner graph explicitly. */
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_GRAD);
    gf_tensor *q = gf_mul(r->z, r->z);
    gf_tensor *dq = NULL;
    r->inner = q ? gf_grad(&q, 1, NULL, &r->z, 1, &dq, NULL) : gf_last_status();
    r->inner_grad = dq ? ag_item(dq) : NAN;
    gf_tensor *q2 = gf_mul(r->z, r->z);
    gf_grad_mode_set(prev);
    if (r->inner == GF_OK) r->inner = q2 ? gf_backward(q2, NULL, NULL) : gf_last_status();
    gf_tensor *out = (r->inner == GF_OK && dq) ? gf_mul(g, dq) : NULL;
    gf_tensor_release(q2);
    gf_tensor_release(dq);
    gf_tensor_release(q);
    return out;
}

static void rule21_backward_called_from_a_hook(void) {
    reentrant r = {ag_leaf(DV(4), 1), GF_ERR_INVALID, 0};
    gf_tensor *x = ag_leaf(DV(1, 2), 2);
    gf_tensor *y = gf_mul_scalar(x, 3.0);
    CHECK(gf_tensor_register_hook(y, reentrant_hook, &r) != 0);
    CHECK_OK(ag_backward_ones(y, -1, false));
    CHECK_OK(r.inner);
    CHECK_CLOSE(r.inner_grad, 8, 0);
    CHECK_GRAD(x, DV(24, 24), 2, 0);
    CHECK_GRAD(r.z, DV(8), 1, 0); /* the inner gf_backward accumulated into z */
    gf_tensor_release(y);
    gf_tensor_release(x);
    gf_tensor_release(r.z);
}

/* A custom function f(x) = x^2 whose backward differentiates an inner graph
 * (recomputation, as checkpointing does). */
static gf_status sq_fwd(gf_function_ctx *ctx, gf_tensor *const *in, int n_in, gf_tensor **out,
                        int n_out, void *user) {
    out[0] = gf_mul(in[0], in[0]);
    if (!out[0]) return gf_last_status();
    return gf_ctx_save_for_backward(ctx, in, 1);
}
static gf_status sq_bwd(gf_function_ctx *ctx, gf_tensor *const *go, int n_out, gf_tensor **gi,
                        int n_in, void *user) {
    gf_scope_begin();
    gf_tensor *x = gf_ctx_saved_tensor(ctx, 0);
    gf_tensor *u = x ? gf_clone(gf_detach(x)) : NULL;
    gf_status s = u ? gf_tensor_set_requires_grad(u, true) : gf_last_status();
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_GRAD);
    gf_tensor *v = s == GF_OK ? gf_mul(u, u) : NULL;
    gf_grad_mode_set(prev);
    gf_tensor *du = NULL;
    gf_tensor *gout[1] = {go[0]};
    if (v) s = gf_grad(&v, 1, gout, &u, 1, &du, NULL);
    else if (s == GF_OK) s = gf_last_status();
    if (s == GF_OK) gi[0] = gf_scope_keep(du); /* out of our scope: the engine owns it */
    gf_scope_end();
    return s;
}

static void rule21_backward_called_from_a_custom_backward(void) {
    gf_function_def def = {"Recompute", sq_fwd, sq_bwd, false, NULL};
    gf_tensor *x = ag_leaf(DV(1, -2, 3), 3);
    gf_tensor *y = NULL;
    CHECK_OK(gf_function_apply(&def, &x, 1, &y, 1));
    gf_tensor *go = ag_vec(DV(1, 10, 100), 3);
    CHECK_OK(gf_backward(y, go, NULL));
    CHECK_GRAD(x, DV(2, -40, 600), 3, 1e-12);
    gf_tensor_release(go);
    gf_tensor_release(y);
    gf_tensor_release(x);
}

/* Backward from inside a hook while other threads run their own backward. */
typedef struct hook_thread {
    int id;
    int failures;
} hook_thread;

static void *hook_thread_fn(void *arg) {
    hook_thread *t = arg;
    pthread_barrier_wait(&g_barrier);
    for (int r = 0; r < ROUNDS / 2; r++) {
        reentrant re = {ag_leaf(DV(4), 1), GF_ERR_INVALID, 0};
        gf_tensor *x = ag_leaf(DV(t->id + 1), 1);
        gf_tensor *y = gf_mul_scalar(x, 3.0);
        gf_tensor_register_hook(y, reentrant_hook, &re);
        gf_status s = gf_backward(y, NULL, NULL);
        gf_tensor *g = gf_tensor_grad(x);
        if (s != GF_OK || re.inner != GF_OK || !g || ag_item(g) != 24.0) t->failures++;
        gf_tensor_release(g);
        gf_tensor_release(y);
        gf_tensor_release(x);
        gf_tensor_release(re.z);
    }
    return NULL;
}

static void rule21_reentrant_backward_in_several_threads(void) {
    hook_thread t[N_THREADS];
    pthread_t th[N_THREADS];
    pthread_barrier_init(&g_barrier, NULL, N_THREADS);
    for (int k = 0; k < N_THREADS; k++) {
        t[k] = (hook_thread){k, 0};
        CHECK(pthread_create(&th[k], NULL, hook_thread_fn, &t[k]) == 0);
    }
    for (int k = 0; k < N_THREADS; k++) pthread_join(th[k], NULL);
    pthread_barrier_destroy(&g_barrier);
    for (int k = 0; k < N_THREADS; k++) CHECK_MSG(t[k].failures == 0, "thread %d: %d", k, t[k].failures);
}

/* ------------------------------------------------------------ a leaf released during backward */
/* A graph refers to its leaves weakly (docs/autograd.md section 7): one
 * thread releases the last reference to x while another runs backward
 * through x's accumulator. The accumulator either takes x for the time it
 * runs or finds it gone; never a freed x, and nothing is left behind. */
typedef struct leaf_race {
    gf_tensor *y, *w;
    gf_status status;
} leaf_race;

static void *leaf_race_backward(void *arg) {
    leaf_race *t = arg;
    pthread_barrier_wait(&g_barrier);
    t->status = ag_backward_ones(t->y, 0, true); /* .grad with history: no cycle */
    return NULL;
}

static void rule21_leaf_released_while_backward_runs(void) {
    uint64_t base = ag_bytes_in_use();
    for (int r = 0; r < ROUNDS; r++) {
        gf_tensor *x = ag_leaf(DV(1, 2), 2), *w = ag_leaf(DV(3, 4), 2);
        gf_tensor *h = gf_mul(x, w);
        leaf_race t = {gf_mul(h, x), w, GF_OK}; /* x * w * x */
        gf_tensor_release(h);
        pthread_t th;
        pthread_barrier_init(&g_barrier, NULL, 2);
        CHECK(pthread_create(&th, NULL, leaf_race_backward, &t) == 0);
        pthread_barrier_wait(&g_barrier);
        gf_tensor_release(x); /* the graph still reads x's values */
        pthread_join(th, NULL);
        pthread_barrier_destroy(&g_barrier);
        CHECK_MSG(t.status == GF_OK, "round %d: %s", r, gf_last_error());
        CHECK_GRAD(w, DV(1, 4), 2, 0); /* x^2, whatever became of x */
        gf_tensor_release(t.y);
        gf_tensor_release(w);
        CHECK_MSG(ag_bytes_in_use() == base, "round %d", r);
    }
}

int main(void) {
    RUN(rule21_independent_graphs_match_serial);
    RUN(rule21_shared_leaf_receives_every_gradient);
    RUN(rule21_leaf_released_while_backward_runs);
    RUN(rule21_shared_subgraph_without_retain_graph_fails_in_all_but_one);
    RUN(rule21_grad_modes_do_not_leak_between_threads);
    RUN(rule21_backward_called_from_a_hook);
    RUN(rule21_backward_called_from_a_custom_backward);
    RUN(rule21_reentrant_backward_in_several_threads);
    return ag_finish();
}
