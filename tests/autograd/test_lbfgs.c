/* SPDX-License-Identifier: BSD-3-Clause */
/* test_lbfgs.c — L-BFGS against torch.optim.LBFGS on the Rosenbrock
 * function (tools/expected/gen_lbfgs.py): the loss of each step, the point,
 * the evaluation and iteration counts, with and without the strong-Wolfe
 * line search, a short history and a max_eval; then the errors. */
#include <graft.h>
#include <math.h>
#include <string.h>

#include "autograd/lbfgs_expected.h"
#include "check.h"

typedef struct problem {
    gf_tensor *x;
    int calls;
    bool fail;
} problem;

/* (1 - x0)^2 + 100 (x1 - x0^2)^2, gradients zeroed and backward run. */
static gf_tensor *rosenbrock(void *user) {
    problem *p = user;
    p->calls++;
    if (p->fail) {
        gf_set_error(GF_ERR_INVALID, "the closure failed on purpose");
        return NULL;
    }
    CHECK(gf_tensor_set_grad(p->x, NULL) == GF_OK);
    gf_tensor *x0 = gf_select(p->x, 0, 0), *x1 = gf_select(p->x, 0, 1);
    gf_tensor *a = gf_square(gf_add_scalar(gf_neg(x0), 1.0));
    gf_tensor *b = gf_mul_scalar(gf_square(gf_sub(x1, gf_square(x0))), 100.0);
    gf_tensor *f = gf_add(a, b);
    CHECK(f && gf_backward(f, NULL, NULL) == GF_OK);
    return f;
}

static uint64_t in_use(void) {
    gf_memory_stats st = {0};
    CHECK(gf_memory_get_stats(gf_device_default(), &st) == GF_OK);
    return st.bytes_in_use;
}

/* Each step inside a scope of the caller's (the closure's intermediates
 * belong to it), or without one (the closure releases its own). */
static void run(const char *what, const gf_lbfgs_opts *o, const lb_row *want) {
    uint64_t before = in_use();
    const double x0[2] = {-1.5, 2.0};
    problem p = {gf_from_data(x0, (const int64_t[]){2}, 1, GF_F64, NULL), 0, false};
    CHECK(gf_tensor_set_requires_grad(p.x, true) == GF_OK);
    gf_lbfgs *l = gf_lbfgs_create(&p.x, 1, o);
    CHECK_MSG(l != NULL, "%s: %s", what, gf_last_error());
    for (int s = 0; l && s < LB_STEPS; s++) {
        gf_scope_begin(); /* the closure's intermediates */
        double loss = NAN;
        gf_clear_error();
        CHECK_MSG(gf_lbfgs_step(l, rosenbrock, &p, &loss) == GF_OK, "%s: %s", what, gf_last_error());
        CHECK_MSG(gf_last_status() == GF_OK, "%s: an error was recorded: %s", what, gf_last_error());
        gf_scope_end();
        double x[2];
        CHECK(gf_tensor_to_host(p.x, x, sizeof x) == GF_OK);
        CHECK_MSG(fabs(loss - want[s].loss) <= 1e-9 * (1 + fabs(want[s].loss)),
                  "%s step %d: loss %.17g, torch %.17g", what, s, loss, want[s].loss);
        CHECK_MSG(fabs(x[0] - want[s].x0) <= 1e-9 && fabs(x[1] - want[s].x1) <= 1e-9,
                  "%s step %d: x (%.17g, %.17g), torch (%.17g, %.17g)", what, s, x[0], x[1],
                  want[s].x0, want[s].x1);
        CHECK_MSG(gf_lbfgs_func_evals(l) == want[s].evals && gf_lbfgs_n_iter(l) == want[s].iters,
                  "%s step %d: %lld evaluations, %lld iterations; torch %lld, %lld", what, s,
                  (long long)gf_lbfgs_func_evals(l), (long long)gf_lbfgs_n_iter(l),
                  (long long)want[s].evals, (long long)want[s].iters);
    }
    CHECK(l == NULL || p.calls == gf_lbfgs_func_evals(l));
    gf_lbfgs_destroy(l);
    gf_tensor_release(p.x);
    CHECK_MSG(in_use() == before, "%s: %llu bytes in use after, %llu before", what,
              (unsigned long long)in_use(), (unsigned long long)before);
}

static void test_against_torch(void) {
    gf_lbfgs_opts o = GF_LBFGS_OPTS_DEFAULT;
    o.strong_wolfe = true;
    run("strong_wolfe", &o, lb_wolfe);
    o.history_size = 2, o.max_iter = 7, o.max_eval = 9;
    run("strong_wolfe, history 2, max_eval 9", &o, lb_wolfe_h2);
    o = (gf_lbfgs_opts)GF_LBFGS_OPTS_DEFAULT;
    o.lr = 0.02, o.max_iter = 10;
    run("no line search", &o, lb_plain);
}

static void test_errors(void) {
    const double x0[2] = {-1.5, 2.0};
    problem p = {gf_from_data(x0, (const int64_t[]){2}, 1, GF_F64, NULL), 0, true};
    CHECK(gf_lbfgs_create(&p.x, 1, NULL) == NULL); /* does not require grad */
    CHECK(gf_tensor_set_requires_grad(p.x, true) == GF_OK);
    gf_lbfgs *l = gf_lbfgs_create(&p.x, 1, NULL);
    CHECK(l != NULL);
    CHECK(gf_lbfgs_step(l, rosenbrock, &p, NULL) == GF_ERR_INVALID);
    CHECK_CONTAINS(gf_last_error(), "on purpose");
    CHECK(gf_lbfgs_step(l, NULL, &p, NULL) == GF_ERR_INVALID);
    CHECK(gf_lbfgs_step(NULL, rosenbrock, &p, NULL) == GF_ERR_INVALID);
    gf_lbfgs_opts o = GF_LBFGS_OPTS_DEFAULT;
    o.history_size = 0;
    CHECK(gf_lbfgs_create(&p.x, 1, &o) == NULL);
    CHECK_CONTAINS(gf_last_error(), "history_size");
    CHECK(gf_lbfgs_create(&p.x, 1, &(gf_lbfgs_opts){.lr = 1}) == NULL);
    CHECK_CONTAINS(gf_last_error(), "GF_LBFGS_OPTS_DEFAULT");
    CHECK(gf_lbfgs_create(NULL, 1, NULL) == NULL);
    CHECK(gf_lbfgs_func_evals(NULL) == -1 && gf_lbfgs_n_iter(NULL) == -1);
    gf_lbfgs_destroy(l);
    gf_lbfgs_destroy(NULL);
    gf_tensor_release(p.x);
}

int main(void) {
    RUN(test_against_torch);
    RUN(test_errors);
    return CHECK_REPORT();
}
