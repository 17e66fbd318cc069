/* SPDX-License-Identifier: BSD-3-Clause */
/* test_rules_memory.c — rule 25: intermediates are freed as soon as nothing
 * needs them, measured with the allocator's statistics.
 *
 * An MLP-like chain h <- relu(h @ W_i), i < N, loss = sum(h), in f32 with
 * B = D = 32, so every activation and every weight gradient is 4 KiB. The
 * expected byte counts are sums of the allocator's cost of the tensors the
 * test holds (the cost of one allocation is measured, not assumed). */
#include "test_rules_util.h"

#define B 32
#define D 32
#define N_LAYERS 12

static gf_device *dev(void) { return gf_device_default(); }

static uint64_t in_use(void) { return ag_bytes_in_use(); }
static uint64_t peak(void) {
    gf_memory_stats st = {0};
    gf_memory_get_stats(dev(), &st);
    return st.peak_bytes_in_use;
}

/* What the allocator charges for a tensor of nbytes (its size class). */
static uint64_t cost(int64_t nbytes) {
    uint64_t before = in_use();
    int64_t n = nbytes / 4;
    gf_tensor *t = gf_empty(&n, 1, GF_F32, NULL);
    uint64_t c = in_use() - before;
    gf_tensor_release(t);
    return c;
}

typedef struct mlp {
    gf_tensor *w[N_LAYERS];
    gf_tensor *x;
} mlp;

static void mlp_init(mlp *m) {
    gf_manual_seed(1234);
    for (int i = 0; i < N_LAYERS; i++) {
        m->w[i] = gf_rand_uniform(SZ(D, D), 2, -0.3, 0.3, GF_F32, NULL);
        gf_tensor_set_requires_grad(m->w[i], true);
    }
    m->x = gf_rand_uniform(SZ(B, D), 2, -1, 1, GF_F32, NULL);
}
static void mlp_free(mlp *m) {
    for (int i = 0; i < N_LAYERS; i++) gf_tensor_release(m->w[i]);
    gf_tensor_release(m->x);
}
static void mlp_clear_grads(mlp *m) {
    for (int i = 0; i < N_LAYERS; i++) gf_tensor_set_grad(m->w[i], NULL);
}

/* The forward pass, holding nothing but the loss. */
static gf_tensor *mlp_loss(mlp *m) {
    gf_tensor *h = gf_tensor_retain(m->x);
    for (int i = 0; i < N_LAYERS && h; i++) {
        gf_tensor *z = gf_matmul(h, m->w[i]);
        gf_tensor *r = z ? gf_relu(z) : NULL;
        gf_tensor_release(z);
        gf_tensor_release(h);
        h = r;
    }
    gf_tensor *loss = h ? gf_sum(h, NULL, 0, false) : NULL;
    gf_tensor_release(h);
    if (!loss) fprintf(stderr, "forward: %s\n", gf_last_error());
    return loss;
}

static void rule25_backward_releases_saved_tensors_and_peak_is_bounded(void) {
    uint64_t act = cost((int64_t)B * D * 4), wgt = cost((int64_t)D * D * 4), scal = cost(4);
    mlp m;
    mlp_init(&m);
    uint64_t base = in_use(); /* parameters + input */
    gf_tensor *loss = mlp_loss(&m);
    CHECK(loss != NULL);
    if (!loss) {
        mlp_free(&m);
        return;
    }
    uint64_t fwd = in_use();
    uint64_t activations = fwd - base - scal;
    /* Sanity: the graph keeps the activations it needs, no more than two
     * per layer (a matmul input and a relu input or output). */
    CHECK_MSG(activations >= (N_LAYERS - 1) * act && activations <= 2 * N_LAYERS * act,
              "forward holds %llu bytes of activations for %d layers of %llu",
              (unsigned long long)activations, N_LAYERS, (unsigned long long)act);

    CHECK_OK(gf_memory_reset_peak(dev()));
    CHECK(peak() == fwd);
    CHECK_OK(gf_backward(loss, NULL, NULL));
    uint64_t after = in_use(), pk = peak();
    /* Saved tensors were released: parameters, input, their gradients and
     * the loss are all that is left. */
    CHECK_MSG(after == base + N_LAYERS * wgt + scal, "after backward: %llu bytes in use, expected "
              "%llu (params + x + %d grads + loss)", (unsigned long long)after,
              (unsigned long long)(base + N_LAYERS * wgt + scal), N_LAYERS);
    /* The peak: the forward's activations plus one layer's gradients (the
     * weight's, and the activation gradient flowing in and out of it). A
     * backward that kept every saved tensor until the end would need
     * N_LAYERS weight gradients on top of the activations. */
    uint64_t bound = fwd + wgt + 2 * act;
    CHECK_MSG(pk <= bound, "peak during backward %llu bytes > forward %llu + one layer's "
              "gradients %llu (exceeds by %llu)", (unsigned long long)pk,
              (unsigned long long)fwd, (unsigned long long)(wgt + 2 * act),
              (unsigned long long)(pk - bound));
    fprintf(stderr, "  forward %llu, activations %llu, peak %llu (+%llu), after %llu\n",
            (unsigned long long)fwd, (unsigned long long)activations, (unsigned long long)pk,
            (unsigned long long)(pk - fwd), (unsigned long long)after);

    /* Dropping the output frees what is left of the graph. */
    gf_tensor_release(loss);
    CHECK(in_use() == base + N_LAYERS * wgt);
    mlp_clear_grads(&m);
    CHECK(in_use() == base);
    mlp_free(&m);
}

static void rule25_dropping_the_output_frees_the_whole_graph(void) {
    mlp m;
    mlp_init(&m);
    uint64_t base = in_use();
    gf_tensor *loss = mlp_loss(&m);
    CHECK(loss && in_use() > base);
    gf_tensor_release(loss); /* no backward: every saved activation goes */
    CHECK_MSG(in_use() == base, "%llu bytes in use after dropping the loss, expected %llu",
              (unsigned long long)in_use(), (unsigned long long)base);
    mlp_free(&m);
}

static void rule25_retain_graph_keeps_saved_tensors_until_dropped(void) {
    uint64_t wgt = cost((int64_t)D * D * 4);
    mlp m;
    mlp_init(&m);
    uint64_t base = in_use();
    gf_tensor *loss = mlp_loss(&m);
    uint64_t fwd = in_use();
    gf_backward_opts keep = {.retain_graph = 1, .create_graph = false};
    CHECK_OK(gf_backward(loss, NULL, &keep));
    CHECK_MSG(in_use() == fwd + N_LAYERS * wgt, "retain_graph: %llu in use, expected %llu",
              (unsigned long long)in_use(), (unsigned long long)(fwd + N_LAYERS * wgt));
    CHECK_OK(gf_backward(loss, NULL, NULL)); /* the last run frees them */
    gf_tensor_release(loss);
    CHECK(in_use() == base + N_LAYERS * wgt);
    mlp_clear_grads(&m);
    CHECK(in_use() == base);
    mlp_free(&m);
}

static void rule25_gradients_are_right(void) {
    /* The memory tests mean nothing if backward computes something else:
     * one layer, checked against the closed form dL/dW = x^T (relu'(xW)). */
    gf_tensor *x = ag_t(DV(1, -2, 3, 0.5), SZ(2, 2), 2);
    gf_tensor *w = ag_leaf_t(DV(1, 2, -1, 1), SZ(2, 2), 2);
    /* xW = [[1+2, 2-2], [3-0.5, 6+0.5]] = [[3, 0], [2.5, 6.5]]: relu' = [[1, 0], [1, 1]]. */
    gf_tensor *z = gf_matmul(x, w);
    gf_tensor *r = gf_relu(z);
    gf_tensor *l = gf_sum(r, NULL, 0, false);
    CHECK_OK(l ? gf_backward(l, NULL, NULL) : gf_last_status());
    /* x^T M with M = [[1, 0], [1, 1]]: [[1 + 3, 0 + 3], [-2 + 0.5, 0 + 0.5]]. */
    CHECK_GRAD(w, DV(4, 3, -1.5, 0.5), 4, 1e-12);
    gf_tensor_release(l);
    gf_tensor_release(r);
    gf_tensor_release(z);
    gf_tensor_release(w);
    gf_tensor_release(x);
}

/* A leaf's .grad made with create_graph carries history that reaches the
 * leaf's own accumulator (PyTorch warns of the cycle this makes there).
 * graft's accumulator refers to its leaf weakly: releasing the leaf frees
 * it, its .grad and that graph. Adopted memory shows it: its owner's release
 * runs exactly when graft drops the storage. */
static int adopted_released;
static void adopted_release(void *ctx) {
    (void)ctx;
    adopted_released++;
}
static void *pack_detached(const gf_tensor *t, void *user) {
    (void)user;
    return gf_scope_keep(gf_detach(t));
}
static gf_tensor *unpack_kept(void *pk, void *user) {
    (void)user;
    return gf_tensor_retain(pk);
}
static void release_kept(void *pk, void *user) {
    (void)user;
    gf_tensor_release(pk);
}

static void rule25_create_graph_grad_does_not_keep_its_leaf(void) {
    uint64_t base = ag_bytes_in_use();
    for (int mode = 0; mode < 3; mode++) {
        static double v[2];
        v[0] = 2;
        v[1] = -3;
        adopted_released = 0;
        /* case 1 as found: a 0-dim x */
        gf_tensor *x = mode == 1 ? gf_from_host_memory(v, NULL, NULL, 0, GF_F64, NULL, adopted_release, NULL)
                                 : gf_from_host_memory(v, SZ(2), NULL, 1, GF_F64, NULL, adopted_release, NULL);
        CHECK(x && gf_tensor_set_requires_grad(x, true) == GF_OK);
        gf_backward_opts o = {1, true};
        if (mode == 0) { /* x * x: .grad = 2x, with history */
            gf_tensor *y = gf_mul(x, x);
            CHECK_OK(ag_backward_ones(y, 1, true));
            CHECK_GRAD(x, DV(4, -6), 2, 0);
            gf_tensor_release(y);
        } else if (mode == 1) {
            /* sum(x) with x itself as grad_output, in a scope, with hooks
             * that keep what they pack in the scope (the sequence that
             * first showed the adopted buffer never released) */
            gf_saved_tensor_hooks h = {pack_detached, unpack_kept, release_kept, NULL};
            CHECK_OK(gf_saved_tensor_hooks_push(&h));
            gf_scope_begin();
            gf_tensor *root = gf_sum(x, NULL, 0, false);
            CHECK_OK(gf_backward(root, x, &o));
            gf_scope_end();
            CHECK_OK(gf_saved_tensor_hooks_pop());
            /* .grad is a copy of x, never x nor x's memory: accumulating
             * into it again leaves x as it was */
            CHECK_GRAD(x, DV(2), 1, 0);
            gf_tensor *r2 = gf_sum(x, NULL, 0, false);
            CHECK_OK(gf_backward(r2, x, NULL));
            gf_tensor_release(r2);
            CHECK_GRAD(x, DV(4), 1, 0);
            CHECK_VALS(x, DV(2), 1, 0);
        } else { /* the leaf released before backward: the others still get theirs */
            gf_tensor *w = ag_leaf(DV(1, 1), 2);
            gf_tensor *y = gf_mul(x, w);
            gf_tensor_release(x);
            x = NULL;
            CHECK(adopted_released == 0); /* the graph still reads x's values */
            CHECK_OK(ag_backward_ones(y, 0, false));
            CHECK_GRAD(w, DV(2, -3), 2, 0);
            gf_tensor_release(y);
            gf_tensor_release(w);
        }
        gf_tensor_release(x);
        CHECK_MSG(adopted_released == 1, "case %d: the adopted memory was released %d times",
                  mode, adopted_released);
        CHECK_MSG(ag_bytes_in_use() == base, "case %d", mode);
    }
}

int main(void) {
    gf_tensor *warm = gf_zeros(SZ(1), 1, GF_F32, NULL); /* load the plugin first */
    gf_tensor_release(warm);
    RUN(rule25_gradients_are_right);
    RUN(rule25_backward_releases_saved_tensors_and_peak_is_bounded);
    RUN(rule25_dropping_the_output_frees_the_whole_graph);
    RUN(rule25_retain_graph_keeps_saved_tensors_until_dropped);
    RUN(rule25_create_graph_grad_does_not_keep_its_leaf);
    return ag_finish();
}
