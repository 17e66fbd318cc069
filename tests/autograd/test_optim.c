/* SPDX-License-Identifier: BSD-3-Clause */
/* test_optim.c — SGD and Adam/AdamW against the update equations of
 * torch.optim, evaluated here in plain C doubles (the reference values never
 * pass through graft), plus option validation, zero_grad, skipping of
 * parameters without gradients, and the version counter. */
#include <graft.h>
#include <math.h>
#include <stdint.h>

#include "autograd/test_rules_util.h"
#include "check.h"

#define N 3
static const double P0[N] = {1.0, -2.0, 0.5};
static const double G[N] = {0.5, -1.0, 2.0};

/* A leaf parameter requiring grad, with .grad set to G. */
static gf_tensor *make_param(gf_dtype dt, const double *p, const double *g) {
    const int64_t sz[1] = {N};
    gf_tensor *x = gf_from_data(p, sz, 1, GF_F64, NULL);
    gf_tensor *xt = gf_to_dtype(x, dt);
    gf_tensor_release(x);
    CHECK(xt != NULL);
    if (!xt) return NULL;
    CHECK(gf_tensor_set_requires_grad(xt, true) == GF_OK);
    if (g) {
        gf_tensor *gr = gf_from_data(g, sz, 1, GF_F64, NULL);
        gf_tensor *grt = gf_to_dtype(gr, dt);
        CHECK(gf_tensor_set_grad(xt, grt) == GF_OK);
        gf_tensor_release(gr);
        gf_tensor_release(grt);
    }
    return xt;
}

static void read3(const gf_tensor *t, double *out) {
    gf_tensor *d = gf_to_dtype(t, GF_F64);
    CHECK(d && gf_tensor_to_host(d, out, N * sizeof(double)) == GF_OK);
    gf_tensor_release(d);
}

static void check_vals(const gf_tensor *t, const double *want, double tol) {
    double got[N];
    read3(t, got);
    for (int i = 0; i < N; i++) CHECK_CLOSE(got[i], want[i], tol);
}

/* ------------------------------------------------------------ SGD */
/* PyTorch's SGD, element by element. */
static void sgd_ref(double *p, double *buf, bool *has_buf, const gf_sgd_opts *o) {
    for (int i = 0; i < N; i++) {
        double d = G[i] + o->weight_decay * p[i];
        if (o->momentum != 0) {
            if (!*has_buf) buf[i] = d;
            else buf[i] = o->momentum * buf[i] + (1 - o->dampening) * d;
            d = o->nesterov ? d + o->momentum * buf[i] : buf[i];
        }
        p[i] -= o->lr * d;
    }
    *has_buf = true;
}

static void run_sgd_case(const gf_sgd_opts *o, int steps) {
    gf_tensor *p = make_param(GF_F64, P0, G);
    gf_optimizer *opt = gf_sgd_create(&p, 1, o);
    CHECK_MSG(opt != NULL, "%s", gf_last_error());
    double ref[N], buf[N];
    bool has_buf = false;
    memcpy(ref, P0, sizeof ref);
    for (int s = 0; s < steps; s++) {
        CHECK_MSG(gf_optimizer_step(opt) == GF_OK, "%s", gf_last_error());
        sgd_ref(ref, buf, &has_buf, o);
        check_vals(p, ref, 1e-12);
    }
    /* The gradient is read, never written. */
    gf_tensor *g = gf_tensor_grad(p);
    check_vals(g, G, 0);
    gf_tensor_release(g);
    CHECK(gf_tensor_is_leaf(p) && gf_tensor_requires_grad(p));
    gf_optimizer_destroy(opt);
    gf_tensor_release(p);
}

static void test_sgd_plain(void) {
    /* Closed form: p - steps * lr * g. */
    gf_tensor *p = make_param(GF_F64, P0, G);
    gf_optimizer *opt = gf_sgd_create(&p, 1, &(gf_sgd_opts){.lr = 0.1});
    CHECK(opt != NULL);
    for (int s = 0; s < 3; s++) CHECK(gf_optimizer_step(opt) == GF_OK);
    check_vals(p, (const double[]){1.0 - 0.15, -2.0 + 0.3, 0.5 - 0.6}, 1e-12);
    gf_optimizer_destroy(opt);
    gf_tensor_release(p);
    run_sgd_case(&(gf_sgd_opts){.lr = 0.1}, 3);
}

static void test_sgd_momentum(void) {
    /* Hand-computed for element 0 (p 1, g 0.5, lr 0.1, momentum 0.9):
     * step 1: buf 0.5, p 0.95; step 2: buf 0.95, p 0.855;
     * step 3: buf 1.355, p 0.7195. */
    gf_tensor *p = make_param(GF_F64, P0, G);
    gf_optimizer *opt = gf_sgd_create(&p, 1, &(gf_sgd_opts){.lr = 0.1, .momentum = 0.9});
    for (int s = 0; s < 3; s++) CHECK(gf_optimizer_step(opt) == GF_OK);
    double got[N];
    read3(p, got);
    CHECK_CLOSE(got[0], 0.7195, 1e-12);
    gf_optimizer_destroy(opt);
    gf_tensor_release(p);
    run_sgd_case(&(gf_sgd_opts){.lr = 0.1, .momentum = 0.9}, 3);
    /* Dampening applies from the second step on (the first initialises buf to d). */
    run_sgd_case(&(gf_sgd_opts){.lr = 0.05, .momentum = 0.8, .dampening = 0.3}, 3);
}

static void test_sgd_nesterov(void) {
    /* Element 0, lr 0.1, momentum 0.9: step 1: buf 0.5, d 0.5 + 0.45 = 0.95,
     * p 0.905; step 2: buf 0.95, d 0.5 + 0.855 = 1.355, p 0.7695. */
    gf_tensor *p = make_param(GF_F64, P0, G);
    gf_optimizer *opt =
        gf_sgd_create(&p, 1, &(gf_sgd_opts){.lr = 0.1, .momentum = 0.9, .nesterov = true});
    CHECK(opt != NULL);
    for (int s = 0; s < 2; s++) CHECK(gf_optimizer_step(opt) == GF_OK);
    double got[N];
    read3(p, got);
    CHECK_CLOSE(got[0], 0.7695, 1e-12);
    gf_optimizer_destroy(opt);
    gf_tensor_release(p);
    run_sgd_case(&(gf_sgd_opts){.lr = 0.1, .momentum = 0.9, .nesterov = true}, 3);
}

static void test_sgd_weight_decay(void) {
    /* Element 0, lr 0.1, wd 0.1, no momentum: d = 0.5 + 0.1 = 0.6, p 0.94. */
    gf_tensor *p = make_param(GF_F64, P0, G);
    gf_optimizer *opt = gf_sgd_create(&p, 1, &(gf_sgd_opts){.lr = 0.1, .weight_decay = 0.1});
    CHECK(gf_optimizer_step(opt) == GF_OK);
    double got[N];
    read3(p, got);
    CHECK_CLOSE(got[0], 0.94, 1e-12);
    gf_optimizer_destroy(opt);
    gf_tensor_release(p);
    run_sgd_case(&(gf_sgd_opts){.lr = 0.1, .weight_decay = 0.1}, 3);
    run_sgd_case(&(gf_sgd_opts){.lr = 0.1, .momentum = 0.9, .weight_decay = 0.01}, 3);
    run_sgd_case(
        &(gf_sgd_opts){.lr = 0.1, .momentum = 0.5, .weight_decay = 0.2, .nesterov = true}, 3);
}

/* ------------------------------------------------------------ Adam */
static void adam_ref(double *p, double *m, double *v, int t, const gf_adam_opts *o) {
    for (int i = 0; i < N; i++) {
        double g = G[i];
        if (o->weight_decay != 0) {
            if (o->decoupled_weight_decay) p[i] *= 1 - o->lr * o->weight_decay;
            else g += o->weight_decay * p[i];
        }
        m[i] = o->beta1 * m[i] + (1 - o->beta1) * g;
        v[i] = o->beta2 * v[i] + (1 - o->beta2) * g * g;
        double mhat = m[i] / (1 - pow(o->beta1, t));
        double denom = sqrt(v[i]) / sqrt(1 - pow(o->beta2, t)) + o->eps;
        p[i] -= o->lr * mhat / denom;
    }
}

/* Every field as given (0 means 0). */
static gf_adam_opts adam(double lr, double beta1, double beta2, double eps, double wd,
                         bool decoupled) {
    gf_adam_opts o = GF_ADAM_OPTS_DEFAULT;
    o.lr = lr, o.beta1 = beta1, o.beta2 = beta2, o.eps = eps, o.weight_decay = wd;
    o.decoupled_weight_decay = decoupled;
    return o;
}
static gf_adam_opts adam_lr(double lr) { return adam(lr, 0.9, 0.999, 1e-8, 0, false); }

static void run_adam_case(const gf_adam_opts *o, int steps, gf_dtype dt, double tol) {
    gf_tensor *p = make_param(dt, P0, G);
    gf_optimizer *opt = gf_adam_create(&p, 1, o);
    CHECK_MSG(opt != NULL, "%s", gf_last_error());
    double ref[N], m[N] = {0}, v[N] = {0};
    memcpy(ref, P0, sizeof ref);
    for (int s = 1; s <= steps; s++) {
        CHECK_MSG(gf_optimizer_step(opt) == GF_OK, "%s", gf_last_error());
        adam_ref(ref, m, v, s, o);
        check_vals(p, ref, tol);
    }
    gf_optimizer_destroy(opt);
    gf_tensor_release(p);
}

static void test_adam(void) {
    /* Step 1 of Adam moves every element by lr * g / (|g| + eps') = lr * sign(g)
     * up to eps: m_hat = g, sqrt(v_hat) = |g|. */
    gf_tensor *p = make_param(GF_F64, P0, G);
    gf_adam_opts o = adam_lr(0.01);
    gf_optimizer *opt = gf_adam_create(&p, 1, &o);
    CHECK(opt != NULL);
    CHECK(gf_optimizer_step(opt) == GF_OK);
    check_vals(p, (const double[]){0.99, -1.99, 0.49}, 1e-7);
    gf_optimizer_destroy(opt);
    gf_tensor_release(p);

    o = adam(0.1, 0.9, 0.999, 1e-8, 0, false);
    run_adam_case(&o, 3, GF_F64, 1e-12);
    o = adam(0.05, 0.5, 0.75, 0.1, 0, false);
    run_adam_case(&o, 3, GF_F64, 1e-12);
    /* f32 parameters: the same equations, single-precision rounding. */
    o = adam(0.1, 0.9, 0.999, 1e-8, 0, false);
    run_adam_case(&o, 3, GF_F32, 1e-5);
}

static void test_adam_defaults(void) {
    /* NULL and GF_ADAM_OPTS_DEFAULT select lr 1e-3, betas (0.9, 0.999), eps 1e-8. */
    gf_tensor *a = make_param(GF_F64, P0, G), *b = make_param(GF_F64, P0, G);
    gf_optimizer *oa = gf_adam_create(&a, 1, NULL);
    const gf_adam_opts dflt = GF_ADAM_OPTS_DEFAULT;
    gf_optimizer *ob = gf_adam_create(&b, 1, &dflt);
    CHECK(oa && ob);
    double ref[N], m[N] = {0}, v[N] = {0};
    memcpy(ref, P0, sizeof ref);
    const gf_adam_opts d = adam(1e-3, 0.9, 0.999, 1e-8, 0, false);
    for (int s = 1; s <= 2; s++) {
        CHECK(gf_optimizer_step(oa) == GF_OK && gf_optimizer_step(ob) == GF_OK);
        adam_ref(ref, m, v, s, &d);
    }
    check_vals(a, ref, 1e-12);
    check_vals(b, ref, 1e-12);
    gf_optimizer_destroy(oa);
    gf_optimizer_destroy(ob);
    gf_tensor_release(a);
    gf_tensor_release(b);
}

static void test_adam_weight_decay(void) {
    /* Adam (L2): one step changes element 0 by lr * (g + wd p) / |g + wd p|:
     * still lr * sign at step 1, so compare over 3 steps where they differ. */
    gf_adam_opts o = adam(0.1, 0.9, 0.999, 1e-8, 0.5, false);
    run_adam_case(&o, 3, GF_F64, 1e-12);
    /* AdamW: step 1 on element 0 (p 1, g 0.5, lr 0.1, wd 0.5): p = 1 * 0.95 - 0.1 = 0.85. */
    o.decoupled_weight_decay = true;
    gf_tensor *p = make_param(GF_F64, P0, G);
    gf_optimizer *opt = gf_adam_create(&p, 1, &o);
    CHECK(gf_optimizer_step(opt) == GF_OK);
    double got[N];
    read3(p, got);
    CHECK_CLOSE(got[0], 0.85, 1e-7);
    gf_optimizer_destroy(opt);
    gf_tensor_release(p);
    run_adam_case(&o, 3, GF_F64, 1e-12);
    /* The two forms differ. */
    double p_l2[N], p_w[N], m1[N] = {0}, v1[N] = {0}, m2[N] = {0}, v2[N] = {0};
    memcpy(p_l2, P0, sizeof p_l2);
    memcpy(p_w, P0, sizeof p_w);
    gf_adam_opts l2 = o;
    l2.decoupled_weight_decay = false;
    for (int s = 1; s <= 3; s++) {
        adam_ref(p_l2, m1, v1, s, &l2);
        adam_ref(p_w, m2, v2, s, &o);
    }
    CHECK(fabs(p_l2[0] - p_w[0]) > 1e-3);
}

/* ------------------------------------------------------------ behaviour */
static void test_skip_and_zero_grad(void) {
    gf_tensor *a = make_param(GF_F64, P0, G);
    gf_tensor *b = make_param(GF_F64, P0, NULL); /* no .grad */
    gf_tensor *ps[2] = {a, b};
    gf_adam_opts o = adam_lr(0.1);
    gf_optimizer *opt = gf_adam_create(ps, 2, &o);
    CHECK(opt != NULL);
    uint64_t va = gf_tensor_version(a), vb = gf_tensor_version(b);
    CHECK(gf_optimizer_step(opt) == GF_OK);
    CHECK(gf_tensor_version(a) > va);
    CHECK(gf_tensor_version(b) == vb); /* skipped: not written at all */
    check_vals(b, P0, 0);
    /* b gets a gradient now: its first step must use bias correction of
     * step 1 (its own count), i.e. move by lr * sign(g). */
    const int64_t sz[1] = {N};
    gf_tensor *gb = gf_from_data(G, sz, 1, GF_F64, NULL);
    CHECK(gf_tensor_set_grad(b, gb) == GF_OK);
    gf_tensor_release(gb);
    CHECK(gf_optimizer_step(opt) == GF_OK);
    check_vals(b, (const double[]){0.9, -1.9, 0.4}, 1e-7);

    CHECK(gf_optimizer_zero_grad(opt) == GF_OK);
    gf_tensor *g = gf_tensor_grad(a);
    CHECK(g == NULL);
    g = gf_tensor_grad(b);
    CHECK(g == NULL);
    double before[N];
    read3(a, before);
    va = gf_tensor_version(a);
    CHECK(gf_optimizer_step(opt) == GF_OK); /* nothing has a gradient */
    CHECK(gf_tensor_version(a) == va);
    check_vals(a, before, 0);
    gf_optimizer_destroy(opt);
    gf_tensor_release(a);
    gf_tensor_release(b);
}

static void test_version_and_modes(void) {
    gf_tensor *p = make_param(GF_F32, P0, G);
    gf_optimizer *opt = gf_sgd_create(&p, 1, &(gf_sgd_opts){.lr = 0.1, .momentum = 0.9});
    uint64_t v0 = gf_tensor_version(p);
    CHECK(gf_grad_mode_get() == GF_GRAD_MODE_GRAD);
    CHECK(gf_optimizer_step(opt) == GF_OK);
    uint64_t v1 = gf_tensor_version(p);
    CHECK(v1 > v0);
    CHECK(gf_grad_mode_get() == GF_GRAD_MODE_GRAD); /* restored */
    CHECK(gf_tensor_is_leaf(p) && gf_tensor_requires_grad(p));
    CHECK(gf_tensor_grad_fn_name(p) == NULL);
    /* A step inside the caller's scope: the momentum buffer must survive
     * the scope, and nothing the step made may leak into it. */
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    gf_scope_begin();
    CHECK(gf_optimizer_step(opt) == GF_OK);
    gf_scope_end();
    gf_grad_mode_set(prev);
    CHECK(gf_tensor_version(p) > v1);
    CHECK(gf_optimizer_step(opt) == GF_OK);
    /* Element 0 after 3 momentum steps (see test_sgd_momentum): 0.7195. */
    double got[N];
    read3(p, got);
    CHECK_CLOSE(got[0], 0.7195, 1e-6);
    gf_optimizer_destroy(opt);
    gf_tensor_release(p);
}

static void test_errors(void) {
    gf_tensor *p = make_param(GF_F64, P0, G);
    gf_tensor *ps[2] = {p, p};
    struct {
        gf_sgd_opts o;
        const char *msg;
    } bad_sgd[] = {
        {{.lr = -0.1}, "learning rate"},
        {{.lr = NAN}, "learning rate"},
        {{.lr = 0.1, .momentum = -0.5}, "momentum"},
        {{.lr = 0.1, .weight_decay = -1}, "weight_decay"},
        {{.lr = 0.1, .nesterov = true}, "nesterov"},
        {{.lr = 0.1, .momentum = 0.9, .dampening = 0.1, .nesterov = true}, "nesterov"},
    };
    for (size_t i = 0; i < sizeof bad_sgd / sizeof bad_sgd[0]; i++) {
        gf_clear_error();
        CHECK(gf_sgd_create(&p, 1, &bad_sgd[i].o) == NULL);
        CHECK(gf_last_status() == GF_ERR_INVALID);
        CHECK_CONTAINS(gf_last_error(), bad_sgd[i].msg);
    }
    const struct {
        gf_adam_opts o;
        const char *msg;
    } bad_adam[] = {
        {adam(-1e-3, 0.9, 0.999, 1e-8, 0, false), "learning rate"},
        {adam(1e-3, 1.0, 0.999, 1e-8, 0, false), "beta1"},
        {adam(1e-3, -0.1, 0.999, 1e-8, 0, false), "beta1"},
        {adam(1e-3, 0.9, 1.5, 1e-8, 0, false), "beta2"},
        {adam(1e-3, 0.9, NAN, 1e-8, 0, false), "beta2"},
        {adam(1e-3, 0.9, 0.999, -1e-8, 0, false), "eps"},
        {adam(1e-3, 0.9, 0.999, 1e-8, -0.1, false), "weight_decay"},
        /* not started from GF_ADAM_OPTS_DEFAULT: a 0 would now mean 0 */
        {(gf_adam_opts){.lr = 1e-2}, "GF_ADAM_OPTS_DEFAULT"},
    };
    for (size_t i = 0; i < sizeof bad_adam / sizeof bad_adam[0]; i++) {
        gf_clear_error();
        CHECK(gf_adam_create(&p, 1, &bad_adam[i].o) == NULL);
        CHECK(gf_last_status() == GF_ERR_INVALID);
        CHECK_CONTAINS(gf_last_error(), bad_adam[i].msg);
    }
    const gf_sgd_opts ok = {.lr = 0.1};
    gf_clear_error();
    CHECK(gf_sgd_create(&p, 1, NULL) == NULL);
    CHECK_CONTAINS(gf_last_error(), "opts is NULL");
    CHECK(gf_sgd_create(&p, 0, &ok) == NULL);
    CHECK_CONTAINS(gf_last_error(), "empty parameter list");
    CHECK(gf_sgd_create(NULL, 1, &ok) == NULL);
    CHECK_CONTAINS(gf_last_error(), "params is NULL");
    CHECK(gf_sgd_create(ps, 2, &ok) == NULL);
    CHECK_CONTAINS(gf_last_error(), "same tensor");

    const int64_t sz[1] = {N};
    gf_tensor *no_rg = gf_zeros(sz, 1, GF_F64, NULL);
    CHECK(gf_sgd_create(&no_rg, 1, &ok) == NULL);
    CHECK_CONTAINS(gf_last_error(), "does not require grad");
    gf_tensor *ints = gf_zeros(sz, 1, GF_I64, NULL);
    CHECK(gf_adam_create(&ints, 1, NULL) == NULL);
    CHECK_CONTAINS(gf_last_error(), "floating-point");
    gf_tensor *nonleaf = gf_mul_scalar(p, 2.0);
    CHECK(nonleaf && !gf_tensor_is_leaf(nonleaf));
    CHECK(gf_sgd_create(&nonleaf, 1, &ok) == NULL);
    CHECK(gf_last_status() == GF_ERR_INVALID);
    CHECK_CONTAINS(gf_last_error(), "not a leaf");
    gf_tensor *with_null[1] = {NULL};
    CHECK(gf_sgd_create(with_null, 1, &ok) == NULL);
    CHECK_CONTAINS(gf_last_error(), "parameter 0 is NULL");

    CHECK(gf_optimizer_step(NULL) == GF_ERR_INVALID);
    CHECK(gf_optimizer_zero_grad(NULL) == GF_ERR_INVALID);
    gf_optimizer_destroy(NULL); /* harmless */

    /* lr 0 is a valid SGD learning rate: the step leaves p where it was. */
    gf_optimizer *o1 = gf_sgd_create(&p, 1, &(gf_sgd_opts){.lr = 0});
    CHECK(o1 != NULL);
    double before[N];
    read3(p, before);
    CHECK(gf_optimizer_step(o1) == GF_OK);
    check_vals(p, before, 0); /* lr 0: no movement */
    gf_optimizer_destroy(o1);

    gf_tensor_release(nonleaf);
    gf_tensor_release(ints);
    gf_tensor_release(no_rg);
    gf_tensor_release(p);
}

/* End to end with autograd: minimise sum((w - t)^2) with gradients from
 * gf_backward (elementwise ops only), every optimiser must converge. */
static void test_converges(void) {
    const double target[N] = {0.25, -0.75, 1.5}, neg_target[N] = {-0.25, 0.75, -1.5};
    const int64_t sz[1] = {N};
    gf_tensor *t = gf_from_data(neg_target, sz, 1, GF_F64, NULL);
    const gf_adam_opts a1 = adam_lr(0.05), a2 = adam(0.05, 0.9, 0.999, 1e-8, 1e-4, true);
    for (int kind = 0; kind < 3; kind++) {
        gf_tensor *w = make_param(GF_F64, P0, NULL);
        gf_optimizer *opt =
            kind == 0 ? gf_sgd_create(&w, 1, &(gf_sgd_opts){.lr = 0.1, .momentum = 0.5})
            : kind == 1 ? gf_adam_create(&w, 1, &a1)
                        : gf_adam_create(&w, 1, &a2);
        CHECK(opt != NULL);
        for (int it = 0; it < 300; it++) {
            gf_scope_begin();
            CHECK(gf_optimizer_zero_grad(opt) == GF_OK);
            gf_tensor *d = gf_add(w, t);
            gf_tensor *l = gf_mul(d, d);
            gf_tensor *ones = gf_ones_like(l);
            gf_status s = gf_backward(l, ones, NULL);
            if (s != GF_OK) {
                CHECK_MSG(s == GF_OK, "%s", gf_last_error());
                gf_scope_end();
                break;
            }
            CHECK(gf_optimizer_step(opt) == GF_OK);
            gf_scope_end();
        }
        check_vals(w, target, 1e-2);
        gf_optimizer_destroy(opt);
        gf_tensor_release(w);
    }
    gf_tensor_release(t);
}

int main(void) {
    int missing = ag_device_check(); /* 77: a GPU named by GRAFT_DEVICE is not here */
    if (missing) return missing;
    RUN(test_sgd_plain);
    RUN(test_sgd_momentum);
    RUN(test_sgd_nesterov);
    RUN(test_sgd_weight_decay);
    RUN(test_adam);
    RUN(test_adam_defaults);
    RUN(test_adam_weight_decay);
    RUN(test_skip_and_zero_grad);
    RUN(test_version_and_modes);
    RUN(test_errors);
    RUN(test_converges);
    return CHECK_REPORT();
}
