/* SPDX-License-Identifier: BSD-3-Clause */
/* workloads_fwad.c — forward mode against reverse mode.
 *
 * Jacobians of y = tanh(W x) (W fixed) five ways: gf_jacfwd batched (one
 * forward pass with a batched tangent, GRAFT_JACFWD=batched), gf_jacfwd
 * looped (one forward pass per input element, GRAFT_JACFWD=loop), gf_jacrev
 * batched (one backward pass whose grad_output carries the output's basis
 * as a batched tangent, GRAFT_JACREV=batched), gf_jacrev looped (one
 * backward pass per output element, GRAFT_JACREV=loop) and gf_jacrev_ex in
 * batched passes of at most 64 basis vectors; on a map with few inputs and
 * many outputs (4 -> n) and the reverse (n -> 4); the check: every
 * Jacobian agrees with the looped jacrev's.
 *
 * And a Hessian-vector product of an MLP's loss with respect to its
 * parameters, two ways, in the same run:
 *
 *   hvp fwd-over-rev  gf_hvp: the gradient computed from dual parameters
 *                     (one forward and one backward pass carrying tangents);
 *   hvp double-bwd    gf_grad with create_graph, then gf_grad of <g, v>
 *                     (Pearlmutter's trick, examples/hessian_vector.c).
 *
 * The MLP is 256-256-256-10 with tanh (a nonzero second derivative),
 * cross-entropy on a fixed batch, f32. The check: the two products agree
 * (relative error below 1e-3 of their norm). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>

#include "bench.h"

#define HV_LAYERS 3
#define HV_PARAMS (2 * HV_LAYERS)

typedef struct hvp_case {
    gf_device *dev;
    gf_tensor *x, *y;          /* the batch */
    gf_tensor *p[HV_PARAMS];   /* w0, b0, w1, b1, w2, b2 */
    gf_tensor *v[HV_PARAMS];   /* the direction */
    gf_tensor *out[HV_PARAMS]; /* the last product */
} hvp_case;

static const int64_t DIMS[HV_LAYERS + 1] = {256, 256, 256, 10};

/* The loss of the MLP with parameters in[], a new reference. */
static gf_status mlp_loss(gf_tensor *const *in, int n, gf_tensor **out, int n_out, void *user) {
    (void)n, (void)n_out;
    const hvp_case *c = user;
    gf_scope_begin();
    gf_tensor *h = c->x;
    for (int l = 0; l < HV_LAYERS; l++) {
        h = gf_linear(h, in[2 * l], in[2 * l + 1]);
        if (l + 1 < HV_LAYERS) h = gf_tanh(h);
    }
    out[0] = gf_scope_keep(gf_cross_entropy(h, c->y, NULL, GF_REDUCTION_MEAN, -100, 0.0));
    gf_scope_end();
    return out[0] ? GF_OK : gf_last_status();
}

static void release_out(hvp_case *c) {
    for (int i = 0; i < HV_PARAMS; i++) {
        gf_tensor_release(c->out[i]);
        c->out[i] = NULL;
    }
}

static int step_fwd_over_rev(void *state) {
    hvp_case *c = state;
    release_out(c);
    return gf_hvp(mlp_loss, c->p, HV_PARAMS, c->v, c, NULL, c->out) == GF_OK ? 0 : -1;
}

static int step_double_backward(void *state) {
    hvp_case *c = state;
    release_out(c);
    gf_tensor *loss = NULL, *g[HV_PARAMS] = {NULL};
    gf_status s = mlp_loss(c->p, HV_PARAMS, &loss, 1, c);
    gf_grad_opts cg = {.retain_graph = -1, .create_graph = true};
    if (s == GF_OK) s = gf_grad(&loss, 1, NULL, c->p, HV_PARAMS, g, &cg);
    gf_scope_begin();
    gf_tensor *dot = NULL;
    for (int i = 0; s == GF_OK && i < HV_PARAMS; i++) {
        gf_tensor *term = gf_sum(gf_mul(g[i], c->v[i]), NULL, 0, false);
        dot = dot ? gf_add(dot, term) : term;
        if (!dot) s = gf_last_status();
    }
    if (s == GF_OK) s = gf_grad(&dot, 1, NULL, c->p, HV_PARAMS, c->out, NULL);
    for (int i = 0; s == GF_OK && i < HV_PARAMS; i++) gf_scope_keep(c->out[i]);
    gf_scope_end();
    for (int i = 0; i < HV_PARAMS; i++) gf_tensor_release(g[i]);
    gf_tensor_release(loss);
    return s == GF_OK ? 0 : -1;
}

/* The products of the two ways, flattened to the host; NULL on failure. */
static float *host_products(hvp_case *c, int64_t *n_out) {
    int64_t n = 0;
    for (int i = 0; i < HV_PARAMS; i++) n += gf_tensor_numel(c->p[i]);
    float *h = malloc((size_t)n * sizeof *h);
    int64_t at = 0;
    for (int i = 0; h && i < HV_PARAMS; i++) {
        int64_t k = gf_tensor_numel(c->out[i]);
        if (!c->out[i] || gf_tensor_to_host(c->out[i], h + at, (size_t)k * sizeof *h) != GF_OK) {
            free(h);
            return NULL;
        }
        at += k;
    }
    *n_out = n;
    return h;
}

/* ------------------------------------------------------------ Jacobians */
enum { JK_FWD, JK_FWD_EL, JK_REV, JK_REV_EL, JK_REV_CHUNK, JK_COUNT };
/* chunk size of the chunked jacrev row (basis vectors per backward pass) */
#define JAC_CHUNK 64

typedef struct jac_case {
    gf_tensor *w, *x;
    gf_tensor *jac; /* of the last run */
    int kind;
} jac_case;

static const char *const jac_kind[JK_COUNT] = {"jacfwd batched", "jacfwd loop", "jacrev batched",
                                               "jacrev loop", "jacrev chunked"};
/* row names fit the table's first column: jacfwd / jacrev (batched, the
 * default paths), -el (one pass per element), jacrev/64 (batched passes of
 * at most 64 basis vectors) */
static const char *const jac_row[JK_COUNT] = {"jacfwd", "jacfwd-el", "jacrev", "jacrev-el",
                                              "jacrev/64"};
/* the path each row pins: its variable and value */
static const char *const jac_var[JK_COUNT] = {"GRAFT_JACFWD", "GRAFT_JACFWD", "GRAFT_JACREV",
                                              "GRAFT_JACREV", "GRAFT_JACREV"};
static const char *const jac_mode[JK_COUNT] = {"batched", "loop", "batched", "loop", "batched"};

static gf_status tanh_map(gf_tensor *const *in, int n, gf_tensor **out, int n_out, void *user) {
    (void)n, (void)n_out;
    const jac_case *c = user;
    gf_scope_begin();
    out[0] = gf_scope_keep(gf_tanh(gf_matmul(c->w, in[0])));
    gf_scope_end();
    return out[0] ? GF_OK : gf_last_status();
}

static int step_jac(void *state) {
    jac_case *c = state;
    gf_tensor_release(c->jac);
    c->jac = NULL;
    gf_jac_opts o = GF_JAC_OPTS_DEFAULT;
    o.chunk_size = JAC_CHUNK;
    gf_status s = c->kind < JK_REV         ? gf_jacfwd(tanh_map, &c->x, 1, 1, c, &c->jac)
                  : c->kind < JK_REV_CHUNK ? gf_jacrev(tanh_map, &c->x, 1, 1, c, &c->jac)
                                           : gf_jacrev_ex(tanh_map, &c->x, 1, 1, c, &o, &c->jac);
    return s == GF_OK ? 0 : -1;
}

/* Rows "jacfwd I->O", "jacfwd-el I->O", "jacrev I->O", "jacrev-el I->O"
 * and "jacrev/64 I->O" for a map of in inputs and out outputs; each
 * Jacobian is checked against the per-element jacrev's. */
static void bench_jac_pair(bench_run *run, int device, int64_t in, int64_t out) {
    char name[JK_COUNT][40], detail[112];
    bench_result *r[JK_COUNT];
    snprintf(detail, sizeof detail, "Jacobian of tanh(W x), W [%lld, %lld], f32", (long long)out,
             (long long)in);
    for (int k = 0; k < JK_COUNT; k++) {
        snprintf(name[k], sizeof name[k], "%s %lld->%lld", jac_row[k], (long long)in,
                 (long long)out);
        if (!(r[k] = bench_result_add(run, device, name[k], detail))) return;
        r[k]->per = "run";
    }
    gf_device *dev = run->devices[device].dev;
    int64_t ws[2] = {out, in};
    float *hw = bench_host_values(out * in, 301, -0.5f, 0.5f), *hx = bench_host_values(in, 302, -1, 1);
    jac_case c = {0};
    c.w = hw ? gf_from_data(hw, ws, 2, GF_F32, dev) : NULL;
    c.x = hx ? gf_from_data(hx, &in, 1, GF_F32, dev) : NULL;
    float *j[JK_COUNT] = {NULL};
    int64_t n = out * in;
    for (int k = 0; k < JK_COUNT; k++) {
        if (!c.w || !c.x) {
            bench_result_graft_error(r[k], "creating the map");
            continue;
        }
        c.kind = k;
        bench_progress(run, jac_kind[k]);
        setenv(jac_var[k], jac_mode[k], 1);
        int rc = bench_measure(run, dev, step_jac, &c, 1, &r[k]->time);
        unsetenv(jac_var[k]);
        if (rc != 0) {
            bench_result_graft_error(r[k], k < JK_REV ? "gf_jacfwd" : "gf_jacrev");
            continue;
        }
        j[k] = malloc((size_t)n * sizeof *j[k]);
        if (j[k] && gf_tensor_to_host(c.jac, j[k], (size_t)n * sizeof *j[k]) != GF_OK) {
            free(j[k]);
            j[k] = NULL;
        }
    }
    for (int k = 0; k < JK_COUNT; k++) {
        if (k == JK_REV_EL || !j[k] || !j[JK_REV_EL]) continue;
        double diff = 0;
        for (int64_t i = 0; i < n; i++) diff = fmax(diff, fabs((double)j[k][i] - j[JK_REV_EL][i]));
        if (!(diff <= 1e-5)) bench_result_wrong(r[k], "%s and jacrev loop differ by up to %.3g",
                                                jac_kind[k], diff);
    }
    for (int k = 0; k < JK_COUNT; k++) free(j[k]);
    free(hw);
    free(hx);
    gf_tensor_release(c.jac);
    gf_tensor_release(c.w);
    gf_tensor_release(c.x);
}

void bench_jacobians(bench_run *run, int device, int64_t n) {
    bench_jac_pair(run, device, 4, n);
    bench_jac_pair(run, device, n, 4);
}

/* ------------------------------------------------------------ Hessian-vector products */
void bench_hvp(bench_run *run, int device, int64_t batch) {
    char detail[112];
    snprintf(detail, sizeof detail, "MLP 256-256-256-10 tanh, cross-entropy, batch %lld, f32",
             (long long)batch);
    bench_result *rf = bench_result_add(run, device, "hvp fwd-over-rev", detail);
    bench_result *rd = bench_result_add(run, device, "hvp double-bwd", detail);
    if (!rf || !rd) return;
    rf->per = rd->per = "run";
    hvp_case c = {.dev = run->devices[device].dev};
    float *a = NULL, *b = NULL;
    int64_t xs[2] = {batch, DIMS[0]};
    float *hx = bench_host_values(batch * DIMS[0], 71, -1, 1);
    int64_t *hy = malloc((size_t)batch * sizeof *hy);
    for (int64_t i = 0; hy && i < batch; i++) hy[i] = (int64_t)((i * 7 + 3) % DIMS[HV_LAYERS]);
    c.x = hx ? gf_from_data(hx, xs, 2, GF_F32, c.dev) : NULL;
    c.y = hy ? gf_from_data(hy, &batch, 1, GF_I64, c.dev) : NULL;
    bool ok = c.x && c.y;
    for (int l = 0; ok && l < HV_LAYERS; l++) {
        int64_t ws[2] = {DIMS[l + 1], DIMS[l]}, bs[1] = {DIMS[l + 1]};
        float bound = 1.0f / sqrtf((float)DIMS[l]);
        for (int k = 0; k < 2 && ok; k++) {
            int64_t n = k ? bs[0] : ws[0] * ws[1];
            float *hp = bench_host_values(n, (uint32_t)(100 + 2 * l + k), -bound, bound);
            float *hv = bench_host_values(n, (uint32_t)(200 + 2 * l + k), -1, 1);
            c.p[2 * l + k] = hp ? gf_from_data(hp, k ? bs : ws, k ? 1 : 2, GF_F32, c.dev) : NULL;
            c.v[2 * l + k] = hv ? gf_from_data(hv, k ? bs : ws, k ? 1 : 2, GF_F32, c.dev) : NULL;
            ok = c.p[2 * l + k] && c.v[2 * l + k] &&
                 gf_tensor_set_requires_grad(c.p[2 * l + k], true) == GF_OK;
            free(hp);
            free(hv);
        }
    }
    if (!ok) {
        bench_result_graft_error(rf, "creating the MLP");
        bench_result_graft_error(rd, "creating the MLP");
        goto done;
    }
    bench_progress(run, "forward-over-reverse");
    if (bench_measure(run, c.dev, step_fwd_over_rev, &c, 1, &rf->time) != 0) {
        bench_result_graft_error(rf, "gf_hvp");
        goto done;
    }
    int64_t n = 0;
    a = host_products(&c, &n);
    bench_progress(run, "double backward");
    if (bench_measure(run, c.dev, step_double_backward, &c, 1, &rd->time) != 0) {
        bench_result_graft_error(rd, "double backward");
        goto done;
    }
    b = host_products(&c, &n);
    if (!a || !b) {
        bench_result_graft_error(rf, "reading the products");
        goto done;
    }
    double diff = 0, norm = 0;
    for (int64_t i = 0; i < n; i++) {
        diff += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        norm += (double)b[i] * b[i];
    }
    if (!(sqrt(diff) <= 1e-3 * sqrt(norm))) {
        bench_result_wrong(rf, "the two Hessian-vector products differ: |a - b| = %.3g, |b| = "
                           "%.3g", sqrt(diff), sqrt(norm));
        rd->state = rf->state;
    }
done:
    free(a);
    free(b);
    free(hx);
    free(hy);
    release_out(&c);
    for (int i = 0; i < HV_PARAMS; i++) {
        gf_tensor_release(c.p[i]);
        gf_tensor_release(c.v[i]);
    }
    gf_tensor_release(c.x);
    gf_tensor_release(c.y);
}
