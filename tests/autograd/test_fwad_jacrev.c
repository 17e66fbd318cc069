/* SPDX-License-Identifier: BSD-3-Clause */
/* test_fwad_jacrev.c — gf_jacrev's batched backward passes (grad_output
 * carrying the output's basis as a batched tangent) against its per-element
 * loop and against gf_jacfwd, in f64, on the maps of fwad_maps.h (each op
 * family, gradients with history, the FFTs); the chunked forms
 * (gf_jacrev_ex / gf_jacfwd_ex) against the unchunked ones for chunk sizes
 * that divide the basis and sizes that do not; the errors (chunk_size 0,
 * options not started from GF_JAC_OPTS_DEFAULT); a refusal (a tensor of
 * rank 8, with no room for the batch dim) falling back to the loop (same
 * answer), or an UNSUPPORTED error saying why with GRAFT_JACREV=batched; recurrent layers and the fused gradient kernels
 * (layer_norm, batch_norm, softmax backward), which compose when the
 * incoming gradient carries a batched tangent. */
#define _POSIX_C_SOURCE 200809L
#include "fwad_maps.h"

/* gf_jacrev (chunk 0: gf_jacrev itself; otherwise gf_jacrev_ex with that
 * chunk size) on the path mode pins. */
static gf_status rev_with(const char *mode, int64_t chunk, const map_case *c, gf_tensor **in,
                          gf_tensor **jac) {
    setenv("GRAFT_JACREV", mode, 1);
    gf_jac_opts o = GF_JAC_OPTS_DEFAULT;
    o.chunk_size = chunk;
    gf_status s = chunk ? gf_jacrev_ex(c->f, in, c->n_in, c->n_out, NULL, &o, jac)
                        : gf_jacrev(c->f, in, c->n_in, c->n_out, NULL, jac);
    unsetenv("GRAFT_JACREV");
    return s;
}

static gf_status fwd_with(const char *mode, int64_t chunk, const map_case *c, gf_tensor **in,
                          gf_tensor **jac) {
    setenv("GRAFT_JACFWD", mode, 1);
    gf_jac_opts o = GF_JAC_OPTS_DEFAULT;
    o.chunk_size = chunk;
    gf_status s = chunk ? gf_jacfwd_ex(c->f, in, c->n_in, c->n_out, NULL, &o, jac)
                        : gf_jacfwd(c->f, in, c->n_in, c->n_out, NULL, jac);
    unsetenv("GRAFT_JACFWD");
    return s;
}

/* Batched jacrev = looped jacrev = jacfwd, on every map. */
static void test_maps(void) {
    int batched = 0, skipped = 0;
    bool c128 = device_has_c128();
    for (int k = 0; k < N_MAPS; k++) {
        const map_case *c = &cases[k];
        if (c->cx && !c128) {
            printf("  %-30s skipped here (the device stores no c128)\n", c->name);
            skipped++;
            continue;
        }
        gf_scope_begin();
        gf_tensor *in[4] = {0}, *jb[8] = {0}, *jl[8] = {0}, *ja[8] = {0}, *jf[8] = {0};
        int nb = c->n_in * c->n_out;
        inputs_of(c, in);
        gf_status sb = rev_with("batched", 0, c, in, jb);
        if (c->rev_batches) {
            CHECK_MSG(sb == GF_OK, "%s: batched: %s", c->name, gf_last_error());
        } else {
            CHECK_MSG(sb == GF_ERR_UNSUPPORTED && strstr(gf_last_error(), "batched"),
                      "%s: strict batched mode should refuse: %d %s", c->name, (int)sb,
                      gf_last_error());
        }
        CHECK(gf_fwad_level_count() == 0);
        batched += sb == GF_OK;
        printf("  %-30s %s\n", c->name, sb == GF_OK ? "batched" : "falls back to the loop");
        CHECK_MSG(rev_with("loop", 0, c, in, jl) == GF_OK, "%s: loop: %s", c->name,
                  gf_last_error());
        CHECK_MSG(rev_with("auto", 0, c, in, ja) == GF_OK, "%s: auto: %s", c->name,
                  gf_last_error());
        CHECK_MSG(fwd_with("auto", 0, c, in, jf) == GF_OK, "%s: jacfwd: %s", c->name,
                  gf_last_error());
        for (int i = 0; i < nb; i++) {
            if (sb == GF_OK)
                CHECK_MSG(max_diff(jb[i], jl[i]) < 1e-12, "%s: block %d: batched vs loop %g",
                          c->name, i, max_diff(jb[i], jl[i]));
            CHECK_MSG(max_diff(ja[i], jl[i]) < 1e-12, "%s: block %d: auto vs loop %g", c->name, i,
                      max_diff(ja[i], jl[i]));
            CHECK_MSG(max_diff(jf[i], jl[i]) < 1e-10, "%s: block %d: jacfwd vs jacrev %g",
                      c->name, i, max_diff(jf[i], jl[i]));
        }
        gf_scope_end();
    }
    printf("  %d of %d maps batch backward (%d skipped)\n", batched, N_MAPS, skipped);
}

/* Chunked = unchunked, for sizes that divide the basis and sizes that do
 * not, 1 (a batch of one per pass) and more than the basis. */
static void test_chunks(void) {
    static const char *const names[] = {"elementwise", "matmul", "conv2d", "max_pool2d",
                                        "conv2d gradient", "fft family"};
    static const int64_t chunks[] = {1, 2, 3, 5, 7, 1000, GF_JAC_CHUNK_ALL};
    bool c128 = device_has_c128();
    int runs = 0;
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        const map_case *c = map_named(names[k]);
        CHECK_MSG(c != NULL, "no map %s", names[k]);
        if (!c || (c->cx && !c128)) continue;
        gf_scope_begin();
        gf_tensor *in[4] = {0}, *rl[8] = {0}, *fl[8] = {0};
        int nb = c->n_in * c->n_out;
        inputs_of(c, in);
        CHECK_MSG(rev_with("loop", 0, c, in, rl) == GF_OK, "%s: %s", c->name, gf_last_error());
        CHECK_MSG(fwd_with("loop", 0, c, in, fl) == GF_OK, "%s: %s", c->name, gf_last_error());
        for (size_t q = 0; q < sizeof chunks / sizeof chunks[0]; q++) {
            gf_tensor *rb[8] = {0}, *fb[8] = {0};
            int64_t ch = chunks[q];
            CHECK_MSG(rev_with("batched", ch, c, in, rb) == GF_OK, "%s: chunk %lld: jacrev: %s",
                      c->name, (long long)ch, gf_last_error());
            CHECK_MSG(fwd_with("batched", ch, c, in, fb) == GF_OK, "%s: chunk %lld: jacfwd: %s",
                      c->name, (long long)ch, gf_last_error());
            for (int i = 0; i < nb; i++) {
                CHECK_MSG(max_diff(rb[i], rl[i]) < 1e-12, "%s: chunk %lld, block %d: jacrev %g",
                          c->name, (long long)ch, i, max_diff(rb[i], rl[i]));
                CHECK_MSG(max_diff(fb[i], fl[i]) < 1e-12, "%s: chunk %lld, block %d: jacfwd %g",
                          c->name, (long long)ch, i, max_diff(fb[i], fl[i]));
            }
            runs++;
        }
        gf_scope_end();
    }
    /* auto with chunks on a map that refuses: the loop's answer */
    const map_case *c = map_named("rank 8 (mixed)");
    gf_tensor *in[1] = {0}, *rl[1] = {0}, *ra[1] = {0}, *fa[1] = {0};
    inputs_of(c, in);
    CHECK(rev_with("loop", 0, c, in, rl) == GF_OK);
    CHECK_MSG(rev_with("auto", 2, c, in, ra) == GF_OK, "%s", gf_last_error());
    CHECK_MSG(fwd_with("auto", 2, c, in, fa) == GF_OK, "%s", gf_last_error());
    CHECK_MSG(max_diff(ra[0], rl[0]) < 1e-12, "refused, chunked: %g", max_diff(ra[0], rl[0]));
    CHECK_MSG(max_diff(fa[0], rl[0]) < 1e-10, "refused, chunked: %g", max_diff(fa[0], rl[0]));
    printf("  %d chunked runs of jacrev and jacfwd\n", runs);
}

/* A map of two outputs, one of them without a graph (a constant), and one
 * input it does not use. */
static gf_status two_out(gf_tensor *const *in, int n, gf_tensor **out, int no, void *u) {
    (void)n, (void)no, (void)u;
    gf_scope_begin();
    out[0] = gf_scope_keep(gf_mul(gf_exp(in[0]), gf_sum(in[0], NULL, 0, true)));
    out[1] = gf_scope_keep(gf_ones(SZ(2, 2), 2, GF_F64, NULL));
    gf_scope_end();
    return out[0] && out[1] ? GF_OK : gf_last_status();
}

static gf_status failing(gf_tensor *const *in, int n, gf_tensor **out, int no, void *u) {
    (void)n, (void)no, (void)u;
    out[0] = gf_matmul(in[0], in[0]); /* [2, 3] @ [2, 3]: a shape error */
    return out[0] ? GF_OK : gf_last_status();
}

static void test_errors(void) {
    const map_case *c = map_named("softmax");
    gf_tensor *in[1] = {0}, *j[1] = {0};
    inputs_of(c, in);
    /* chunk_size 0 and below -1: INVALID naming the field, nothing written */
    int64_t bad[] = {0, -2, INT64_MIN};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        gf_jac_opts o = GF_JAC_OPTS_DEFAULT;
        o.chunk_size = bad[k];
        CHECK(gf_jacrev_ex(c->f, in, 1, 1, NULL, &o, j) == GF_ERR_INVALID && !j[0]);
        CHECK_MSG(strstr(gf_last_error(), "chunk_size") &&
                      strstr(gf_last_error(), "GF_JAC_CHUNK_ALL"),
                  "%s", gf_last_error());
        CHECK(gf_jacfwd_ex(c->f, in, 1, 1, NULL, &o, j) == GF_ERR_INVALID && !j[0]);
        CHECK_MSG(strstr(gf_last_error(), "gf_jacfwd_ex"), "%s", gf_last_error());
    }
    /* a zero-initialised struct is not the defaults */
    gf_jac_opts z = {0};
    CHECK(gf_jacrev_ex(c->f, in, 1, 1, NULL, &z, j) == GF_ERR_INVALID);
    CHECK_MSG(strstr(gf_last_error(), "GF_JAC_OPTS_DEFAULT"), "%s", gf_last_error());
    /* NULL options: the defaults */
    CHECK_MSG(gf_jacrev_ex(c->f, in, 1, 1, NULL, NULL, j) == GF_OK && j[0], "%s", gf_last_error());
    j[0] = NULL; /* the scope's */
    /* strict batched mode names the op that refused; no level stays open */
    const map_case *ip = map_named("rank 8 (mixed)");
    gf_tensor *x[1] = {0};
    inputs_of(ip, x);
    CHECK(rev_with("batched", 0, ip, x, j) == GF_ERR_UNSUPPORTED && !j[0]);
    CHECK_MSG(strstr(gf_last_error(), "GF_MAX_RANK") != NULL, "%s", gf_last_error());
    CHECK(gf_fwad_level_count() == 0);
    /* a failing function is its own error, on every path */
    gf_tensor *m = rnd(SZ(2, 3), 2);
    const char *modes[] = {"auto", "loop", "batched"};
    for (int k = 0; k < 3; k++) {
        setenv("GRAFT_JACREV", modes[k], 1);
        CHECK(gf_jacrev(failing, &m, 1, 1, NULL, j) == GF_ERR_SHAPE && !j[0]);
        unsetenv("GRAFT_JACREV");
    }
    CHECK(gf_fwad_level_count() == 0);
    /* an output without a graph and an unused input: zero blocks, batched */
    gf_tensor *two[2] = {rnd(SZ(3), 1), rnd(SZ(2), 1)}, *jb[4] = {0}, *jl[4] = {0};
    setenv("GRAFT_JACREV", "batched", 1);
    CHECK_MSG(gf_jacrev(two_out, two, 2, 2, NULL, jb) == GF_OK, "%s", gf_last_error());
    setenv("GRAFT_JACREV", "loop", 1);
    CHECK_MSG(gf_jacrev(two_out, two, 2, 2, NULL, jl) == GF_OK, "%s", gf_last_error());
    unsetenv("GRAFT_JACREV");
    for (int i = 0; i < 4; i++)
        CHECK_MSG(max_diff(jb[i], jl[i]) == 0, "two outputs, block %d: %g", i,
                  max_diff(jb[i], jl[i]));
    double v[16];
    CHECK(ag_read(jb[1], v, 16) == 6 && v[0] == 0 && v[5] == 0); /* [3] x [2]: unused */
    CHECK(ag_read(jb[2], v, 16) == 12 && v[0] == 0);             /* [2, 2] x [3]: constant */
    /* an empty output: an empty block */
    gf_tensor *e = gf_zeros(SZ(0), 1, GF_F64, NULL), *je[1] = {0};
    CHECK_MSG(gf_jacrev(m_softmax, &e, 1, 1, NULL, je) != GF_OK || je[0], "%s", gf_last_error());
}

/* The Hessian of a convolution's loss two ways: jacrev of the gradient
 * (backward through the backward kernels, batched) and gf_hessian
 * (forward-over-reverse, batched through the same kernels). */
static void test_hessian(void) {
    const map_case *c = map_named("conv2d gradient");
    gf_tensor *in[2] = {0}, *jr[4] = {0}, *h[4] = {0};
    inputs_of(c, in);
    setenv("GRAFT_JACREV", "batched", 1);
    setenv("GRAFT_JACFWD", "batched", 1);
    gf_jac_opts o = GF_JAC_OPTS_DEFAULT;
    o.chunk_size = 5;
    CHECK_MSG(gf_jacrev_ex(c->f, in, 2, 2, NULL, &o, jr) == GF_OK, "%s", gf_last_error());
    CHECK_MSG(gf_hessian(loss_conv, in, 2, NULL, h) == GF_OK, "%s", gf_last_error());
    unsetenv("GRAFT_JACREV");
    unsetenv("GRAFT_JACFWD");
    for (int i = 0; i < 4; i++)
        CHECK_MSG(max_diff(jr[i], h[i]) < 1e-10, "block %d: %g", i, max_diff(jr[i], h[i]));
}

/* Whether the profiler saw kernel while jacrev ran on map c on the path
 * mode pins. */
static bool kernel_ran(const map_case *c, const char *mode, const char *kernel) {
    gf_scope_begin();
    gf_tensor *in[4] = {0}, *j[4] = {0};
    inputs_of(c, in);
    CHECK(gf_profiler_start(NULL) == GF_OK);
    CHECK_MSG(rev_with(mode, 0, c, in, j) == GF_OK, "%s: %s", c->name, gf_last_error());
    CHECK(gf_profiler_stop() == GF_OK);
    gf_scope_end();
    size_t n = gf_profiler_summary(NULL, 0) + 1;
    char *buf = malloc(n);
    bool ran = buf && gf_profiler_summary(buf, n) && strstr(buf, kernel) != NULL;
    free(buf);
    return ran;
}

/* The fused gradient kernels see the batched tangent of the incoming
 * gradient and compose (their outputs would carry no tangent: rows of
 * zeros); the loop, whose gradients carry none, takes them where the
 * device has them. */
static void test_fused_kernels(void) {
    static const struct {
        const char *map, *kernel;
    } k[] = {{"layer_norm", "layer_norm_backward"}, {"batch_norm", "batch_norm_backward"},
             {"softmax", "softmax_backward"}, {"mlp", "layer_norm_backward"}};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        const map_case *c = map_named(k[i].map);
        bool loop = kernel_ran(c, "loop", k[i].kernel);
        bool batched = kernel_ran(c, "batched", k[i].kernel);
        CHECK_MSG(!batched, "%s: the batched passes ran %s", k[i].map, k[i].kernel);
        printf("  %-12s %s: the loop %s, the batched passes compose\n", k[i].map, k[i].kernel,
               loop ? "runs the fused kernel" : "composes too (the device lacks it)");
    }
}

/* A recurrent layer (RNN, LSTM, GRU) of f64: its backward is one fused
 * node that recomputes the layer composed when the incoming gradient
 * carries a tangent (the batched passes' case). */
static gf_module *g_rnn;
static gf_status m_rnn(gf_tensor *const *in, int n, gf_tensor **out, int no, void *u) {
    (void)n, (void)no, (void)u;
    gf_scope_begin();
    KEEP1(gf_tanh(gf_module_forward(g_rnn, in, 1)));
}

static void test_rnn(void) {
    static const gf_rnn_mode modes[3] = {GF_RNN_TANH, GF_RNN_LSTM, GF_RNN_GRU};
    for (int m = 0; m < 3; m++) {
        g_rnn = gf_nn_rnn(modes[m], 2, 3, 1, true, true, 0.0, false, GF_F64, NULL);
        CHECK_MSG(g_rnn != NULL, "%s", gf_last_error());
        if (!g_rnn) return;
        gf_scope_begin();
        gf_tensor *x = rnd(SZ(1, 3, 2), 3), *jb = NULL, *jl = NULL, *jc = NULL, *jf = NULL;
        map_case c = {"rnn", m_rnn, 1, 1, {{1, 3, 2}}, {3}, true, true, false};
        CHECK_MSG(rev_with("batched", 0, &c, &x, &jb) == GF_OK, "mode %d: %s", m,
                  gf_last_error());
        CHECK_MSG(rev_with("batched", 4, &c, &x, &jc) == GF_OK, "mode %d: %s", m,
                  gf_last_error());
        CHECK_MSG(rev_with("loop", 0, &c, &x, &jl) == GF_OK, "mode %d: %s", m, gf_last_error());
        CHECK_MSG(fwd_with("auto", 0, &c, &x, &jf) == GF_OK, "mode %d: %s", m, gf_last_error());
        CHECK_MSG(max_diff(jb, jl) < 1e-12, "mode %d: batched vs loop %g", m, max_diff(jb, jl));
        CHECK_MSG(max_diff(jc, jl) < 1e-12, "mode %d: chunked vs loop %g", m, max_diff(jc, jl));
        CHECK_MSG(max_diff(jf, jl) < 1e-10, "mode %d: jacfwd vs jacrev %g", m, max_diff(jf, jl));
        CHECK_MSG(!gf_tensor_requires_grad(jb), "mode %d: the Jacobian carries a graph", m);
        gf_scope_end();
        gf_module_release(g_rnn);
        g_rnn = NULL;
    }
}

#define RUN_SCOPED(fn)    \
    do {                  \
        gf_scope_begin(); \
        RUN(fn);          \
        gf_scope_end();   \
    } while (0)

int main(void) {
    RUN_SCOPED(test_maps);
    RUN_SCOPED(test_chunks);
    RUN_SCOPED(test_errors);
    RUN_SCOPED(test_hessian);
    RUN_SCOPED(test_rnn);
    RUN_SCOPED(test_fused_kernels);
    CHECK_MSG(gf_shutdown() == GF_OK, "every buffer released: %s", gf_last_error());
    return CHECK_REPORT();
}
