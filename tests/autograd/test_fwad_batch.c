/* SPDX-License-Identifier: BSD-3-Clause */
/* test_fwad_batch.c — gf_jacfwd's batched pass (one forward pass per input
 * with a batched tangent) against its per-element loop and against
 * gf_jacrev, in f64, on the maps of fwad_maps.h (each op family whose jvp
 * rule batches, gradients taken with history, the FFTs); a map with an op
 * that does not batch (the loop is taken, same answer; in strict mode an
 * UNSUPPORTED error names the op); a report of which maps batch. The path is chosen with GRAFT_JACFWD (loop / batched / auto). */
#define _POSIX_C_SOURCE 200809L
#include "fwad_maps.h"

static gf_status jac_with(const char *mode, const map_case *c, gf_tensor **in, gf_tensor **jac) {
    setenv("GRAFT_JACFWD", mode, 1);
    gf_status s = gf_jacfwd(c->f, in, c->n_in, c->n_out, NULL, jac);
    unsetenv("GRAFT_JACFWD");
    return s;
}

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
        gf_tensor *in[4] = {0}, *jb[8] = {0}, *jl[8] = {0}, *ja[8] = {0}, *jr[8] = {0};
        int nb = c->n_in * c->n_out;
        inputs_of(c, in);
        gf_status sb = jac_with("batched", c, in, jb);
        if (c->fwd_batches) {
            CHECK_MSG(sb == GF_OK, "%s: batched: %s", c->name, gf_last_error());
        } else {
            CHECK_MSG(sb == GF_ERR_UNSUPPORTED && strstr(gf_last_error(), "batched"),
                      "%s: strict batched mode should refuse: %d %s", c->name, (int)sb,
                      gf_last_error());
        }
        batched += sb == GF_OK;
        printf("  %-30s %s\n", c->name, sb == GF_OK ? "batched" : "falls back to the loop");
        CHECK_MSG(jac_with("loop", c, in, jl) == GF_OK, "%s: loop: %s", c->name, gf_last_error());
        CHECK_MSG(jac_with("auto", c, in, ja) == GF_OK, "%s: auto: %s", c->name, gf_last_error());
        CHECK_MSG(gf_jacrev(c->f, in, c->n_in, c->n_out, NULL, jr) == GF_OK, "%s: jacrev: %s",
                  c->name, gf_last_error());
        for (int i = 0; i < nb; i++) {
            if (sb == GF_OK)
                CHECK_MSG(max_diff(jb[i], jl[i]) < 1e-12, "%s: block %d: batched vs loop %g",
                          c->name, i, max_diff(jb[i], jl[i]));
            CHECK_MSG(max_diff(ja[i], jl[i]) < 1e-12, "%s: block %d: auto vs loop %g", c->name, i,
                      max_diff(ja[i], jl[i]));
            CHECK_MSG(max_diff(jr[i], jl[i]) < 1e-10, "%s: block %d: jacrev vs loop %g", c->name,
                      i, max_diff(jr[i], jl[i]));
        }
        gf_scope_end();
    }
    printf("  %d of %d maps batch (%d skipped)\n", batched, N_MAPS, skipped);
}

/* hessian = jacfwd of a gradient: forward-over-reverse, batched. */
static gf_status rosen(gf_tensor *const *in, int n, gf_tensor **out, int no, void *u) {
    (void)n, (void)no, (void)u;
    gf_scope_begin();
    gf_tensor *x = in[0];
    gf_tensor *a = gf_narrow(x, 0, 0, 4), *b = gf_narrow(x, 0, 1, 4);
    gf_tensor *t = gf_add(gf_mul_scalar(gf_square(gf_sub(b, gf_square(a))), 100.0),
                          gf_square(gf_rsub_scalar(a, 1.0)));
    KEEP1(gf_sum(t, NULL, 0, false));
}

static void test_hessian(void) {
    gf_tensor *x = rnd(SZ(5), 1), *hb = NULL, *hl = NULL;
    setenv("GRAFT_JACFWD", "loop", 1);
    CHECK_MSG(gf_hessian(rosen, &x, 1, NULL, &hl) == GF_OK, "%s", gf_last_error());
    setenv("GRAFT_JACFWD", "batched", 1);
    CHECK_MSG(gf_hessian(rosen, &x, 1, NULL, &hb) == GF_OK, "%s", gf_last_error());
    unsetenv("GRAFT_JACFWD");
    CHECK_MSG(max_diff(hb, hl) < 1e-10, "hessian batched vs loop %g", max_diff(hb, hl));
}

/* Errors: the strict mode's message; a failing function is its own error
 * (not a fallback); no level stays open. */
static gf_status failing(gf_tensor *const *in, int n, gf_tensor **out, int no, void *u) {
    (void)n, (void)no, (void)u;
    out[0] = gf_matmul(in[0], in[0]); /* [2, 3] @ [2, 3]: a shape error */
    return out[0] ? GF_OK : gf_last_status();
}

/* An output of rank 5 from an input of rank 4: its Jacobian block would
 * have rank 9. */
static gf_status rank5(gf_tensor *const *in, int n, gf_tensor **out, int n_out, void *user) {
    (void)n, (void)n_out, (void)user;
    gf_tensor *m = gf_mul_scalar(in[0], 2.0);
    out[0] = m ? gf_reshape(m, SZ(1, 1, 2, 1, 1), 5) : NULL;
    gf_tensor_release(m);
    return out[0] ? GF_OK : gf_last_status();
}

static void test_errors(void) {
    /* A block past GF_MAX_RANK is SHAPE on every path, jacrev's too (the
     * batched path once wrote the block's sizes past a GF_MAX_RANK array). */
    static const char *const modes[3] = {"auto", "loop", "batched"};
    gf_tensor *x4 = rnd(SZ(1, 1, 2, 1), 4), *j4 = NULL;
    for (int m = 0; m < 3; m++) {
        setenv("GRAFT_JACFWD", modes[m], 1);
        setenv("GRAFT_JACREV", modes[m], 1);
        CHECK_MSG(gf_jacfwd(rank5, &x4, 1, 1, NULL, &j4) == GF_ERR_SHAPE && !j4, "%s: %s",
                  modes[m], gf_last_error());
        CHECK_MSG(strstr(gf_last_error(), "rank 9") != NULL, "%s", gf_last_error());
        CHECK_MSG(gf_jacrev(rank5, &x4, 1, 1, NULL, &j4) == GF_ERR_SHAPE && !j4, "%s: %s",
                  modes[m], gf_last_error());
        CHECK(gf_fwad_level_count() == 0);
    }
    unsetenv("GRAFT_JACFWD");
    unsetenv("GRAFT_JACREV");

    gf_tensor *x = rnd(SZ(2, 3), 2), *j = NULL;
    CHECK(gf_jacfwd(failing, &x, 1, 1, NULL, &j) == GF_ERR_SHAPE && !j);
    CHECK(gf_fwad_level_count() == 0);
    gf_tensor *xi = gf_zeros(SZ(3), 1, GF_I64, NULL);
    CHECK(gf_jacfwd(m_softmax, &xi, 1, 1, NULL, &j) == GF_ERR_DTYPE);
    const map_case *c = map_named("custom in-place (mixed)"); /* refused forward */
    gf_tensor *in = rnd(c->sizes[0], c->rank[0]);
    CHECK(jac_with("batched", c, &in, &j) == GF_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(gf_last_error(), "DoubleInPlace") != NULL, "%s", gf_last_error());
    CHECK(gf_fwad_level_count() == 0);
    /* an empty input: no pass to batch, an empty block */
    gf_tensor *e = gf_zeros(SZ(0), 1, GF_F64, NULL);
    CHECK_MSG(gf_jacfwd(m_softmax, &e, 1, 1, NULL, &j) != GF_OK || j, "%s", gf_last_error());
}

#define RUN_SCOPED(fn)    \
    do {                  \
        gf_scope_begin(); \
        RUN(fn);          \
        gf_scope_end();   \
    } while (0)

int main(void) {
    RUN_SCOPED(test_maps);
    RUN_SCOPED(test_hessian);
    RUN_SCOPED(test_errors);
    CHECK_MSG(gf_shutdown() == GF_OK, "every buffer released: %s", gf_last_error());
    return CHECK_REPORT();
}
