/* SPDX-License-Identifier: BSD-3-Clause */
/* test_graph_fusion.c — the plugins that fuse runs of elementwise
 * launches in captured graphs (cpu_onednn's omp_fuse.c, opencl's
 * ocl_fuse.c); a replay must still equal the eager ops bit for bit.
 *
 * Each case is a chain of ops on inputs made outside the region (and 0-dim
 * constants broadcast against them). It is captured on one set of inputs,
 * the inputs are rewritten in place with new values, the graph replayed;
 * the same ops run eagerly on a second set of inputs holding those new
 * values. Outputs and inputs (in-place ops write them) must have the same
 * bits, for f32 and f64 (and a chain of integer ops in i32 and i64) at
 * sizes 1, 15, 17, 4097 and 200,003, on the default device (GRAFT_DEVICE).
 * Where the plugin's rules are known here, its counters must have grown by
 * exactly the runs they allow:
 *  - in-place ops on the same elements fuse; a write to a view that another
 *    launch of the run reads or writes at another offset ends the run;
 *  - cpu_onednn (cpu_onednn.fused_runs / fused_launches): f32, f64, i32 and
 *    i64 runs of any length; oneDNN's eltwise primitives (f32 tanh and
 *    sigmoid from 1,024 elements) end a run;
 *  - opencl ("opencl.stats"): f32 runs, split every 8 launches;
 *  - GRAFT_ONEDNN_FUSE=0 / GRAFT_OPENCL_FUSE=0 fuse nothing.
 * Other devices: the replays are checked, not the counts. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "graft_opencl_ext.h"
#include <graft.h>
#include <graft/graph.h>

static gf_device *dev;

/* 0-dim constants of the case's dtype, made outside the regions. */
enum { K_HALF, K_C3, K_SQRT2PI, K_ONE, K_B1, K_1MB1, K_B2, K_1MB2, K_EPS, K_LR, K_COUNT };
static const double k_values[K_COUNT] = {0.5, 0.044715, 0.7978845608028654, 1.0, 0.9,
                                         0.1, 0.999, 0.001, 1e-8, 0.01};
static gf_tensor *K[K_COUNT];

#define MAXT 4

typedef struct fcase {
    const char *name;
    int n_in, extra; /* inputs of n + extra elements */
    bool positive;   /* inputs in (0.1, 2.1) instead of (-2, 2) */
    /* outputs as new references (n_out of them) */
    int n_out;
    void (*build)(gf_tensor **in, int64_t n, gf_tensor **out);
    /* the runs and launches the plugin must fuse at n elements of dt */
    /* the runs the ops form where every launch may fuse, at n elements of
     * dt: their lengths, in order (the plugin's rules split or drop them) */
    void (*expect)(int64_t n, gf_dtype dt, int *lens, int *n_lens);
} fcase;

/* What the device's plugin fuses (the file comment). */
typedef struct fuse_rules {
    const char *plugin; /* NULL: counts not checked */
    const char *env;    /* the variable that turns fusion off */
    bool f64, ints;     /* dtypes fused besides f32 */
    int max_steps;      /* a longer run is split; 0: any length */
    bool onednn_eltwise;
} fuse_rules;
static const fuse_rules known_rules[] = {
    {"cpu_onednn", "GRAFT_ONEDNN_FUSE", true, true, 0, true},
    {"opencl", "GRAFT_OPENCL_FUSE", false, false, 8, false},
};
static fuse_rules R;

static bool onednn_eltwise_size(int64_t n, gf_dtype dt) {
    return R.onednn_eltwise && dt == GF_F32 && n >= 1024;
}

/* x * w + z */
static void build_mad(gf_tensor **in, int64_t n, gf_tensor **out) {
    (void)n;
    gf_tensor *t = gf_mul(in[0], in[1]);
    out[0] = gf_add(t, in[2]);
    gf_tensor_release(t);
}
static void expect_mad(int64_t n, gf_dtype dt, int *lens, int *k) {
    (void)n, (void)dt;
    lens[(*k)++] = 2;
}

/* C-loop kernels only, with parameters: sqrt|log1p(exp(-x))|, clamped,
 * leaky, times w minus z. */
static void build_loops(gf_tensor **in, int64_t n, gf_tensor **out) {
    (void)n;
    gf_tensor *a = gf_neg(in[0]), *b = gf_exp(a), *c = gf_log1p(b), *d = gf_abs(c),
              *e = gf_sqrt(d), *f = gf_clamp(e, 0.2, 1.5), *g = gf_leaky_relu(f, 0.01),
              *h = gf_mul(g, in[1]);
    out[0] = gf_sub(h, in[2]);
    gf_tensor *t[8] = {a, b, c, d, e, f, g, h};
    for (int i = 0; i < 8; i++) gf_tensor_release(t[i]);
}
static void expect_loops(int64_t n, gf_dtype dt, int *lens, int *k) {
    (void)n, (void)dt;
    lens[(*k)++] = 9;
}

/* tanh, sigmoid, then a * b + w: oneDNN takes the activations of large f32
 * tensors, so only the last two launches fuse there. */
static void build_act(gf_tensor **in, int64_t n, gf_tensor **out) {
    (void)n;
    gf_tensor *a = gf_tanh(in[0]), *b = gf_sigmoid(a), *c = gf_mul(a, b);
    out[0] = gf_add(c, in[1]);
    gf_tensor_release(a);
    gf_tensor_release(b);
    gf_tensor_release(c);
}
static void expect_act(int64_t n, gf_dtype dt, int *lens, int *k) {
    lens[(*k)++] = onednn_eltwise_size(n, dt) ? 2 : 4;
}

/* GELU (tanh form) from primitives: 0.5 x (1 + tanh(k (x + c x^3))). */
static void build_gelu(gf_tensor **in, int64_t n, gf_tensor **out) {
    (void)n;
    gf_tensor *x = in[0];
    gf_tensor *x2 = gf_mul(x, x), *x3 = gf_mul(x2, x), *a = gf_mul(x3, K[K_C3]),
              *b = gf_add(x, a), *c = gf_mul(b, K[K_SQRT2PI]), *t = gf_tanh(c),
              *d = gf_add(t, K[K_ONE]), *e = gf_mul(x, d);
    out[0] = gf_mul(e, K[K_HALF]);
    gf_tensor *r[8] = {x2, x3, a, b, c, t, d, e};
    for (int i = 0; i < 8; i++) gf_tensor_release(r[i]);
}
static void expect_gelu(int64_t n, gf_dtype dt, int *lens, int *k) {
    if (onednn_eltwise_size(n, dt)) { /* tanh splits it */
        lens[(*k)++] = 5;
        lens[(*k)++] = 3;
    } else {
        lens[(*k)++] = 9;
    }
}

/* Adam's moments and update, in place: in = p, m, v, g. */
static void build_adam(gf_tensor **in, int64_t n, gf_tensor **out) {
    (void)n, (void)out;
    gf_tensor *p = in[0], *m = in[1], *v = in[2], *g = in[3];
    CHECK(gf_mul_(m, K[K_B1]) == GF_OK);
    gf_tensor *t1 = gf_mul(g, K[K_1MB1]);
    CHECK(gf_add_(m, t1) == GF_OK);
    CHECK(gf_mul_(v, K[K_B2]) == GF_OK);
    gf_tensor *t2 = gf_mul(g, g), *t3 = gf_mul(t2, K[K_1MB2]);
    CHECK(gf_add_(v, t3) == GF_OK);
    gf_tensor *t4 = gf_sqrt(v), *t5 = gf_add(t4, K[K_EPS]), *t6 = gf_div(m, t5),
              *t7 = gf_mul(t6, K[K_LR]);
    CHECK(gf_sub_(p, t7) == GF_OK);
    gf_tensor *r[7] = {t1, t2, t3, t4, t5, t6, t7};
    for (int i = 0; i < 7; i++) gf_tensor_release(r[i]);
}
static void expect_adam(int64_t n, gf_dtype dt, int *lens, int *k) {
    (void)n, (void)dt;
    lens[(*k)++] = 12;
}

/* x has n + 1 elements: x[0:n] += w in place, then x[1:n+1] * w reads what
 * the first wrote one element further on: no run. */
static void build_view_read(gf_tensor **in, int64_t n, gf_tensor **out) {
    gf_tensor *lo = gf_narrow(in[0], 0, 0, n), *hi = gf_narrow(in[0], 0, 1, n);
    gf_tensor *w = gf_narrow(in[1], 0, 0, n);
    CHECK(gf_add_(lo, w) == GF_OK);
    out[0] = gf_mul(hi, w);
    gf_tensor_release(lo);
    gf_tensor_release(hi);
    gf_tensor_release(w);
}
static void expect_view_read(int64_t n, gf_dtype dt, int *lens, int *k) {
    (void)dt;
    if (n == 1) lens[(*k)++] = 2; /* x[0] and x[1]: disjoint */
}

/* y = x[0:n] * w, then x[1:n+1] *= w overwrites what the first read one
 * element back: those two do not fuse, the third (y + w) joins the second. */
static void build_view_write(gf_tensor **in, int64_t n, gf_tensor **out) {
    gf_tensor *lo = gf_narrow(in[0], 0, 0, n), *hi = gf_narrow(in[0], 0, 1, n);
    gf_tensor *w = gf_narrow(in[1], 0, 0, n);
    gf_tensor *y = gf_mul(lo, w);
    CHECK(gf_mul_(hi, w) == GF_OK);
    out[0] = gf_add(y, w);
    gf_tensor *r[4] = {lo, hi, w, y};
    for (int i = 0; i < 4; i++) gf_tensor_release(r[i]);
}
static void expect_view_write(int64_t n, gf_dtype dt, int *lens, int *k) {
    (void)dt;
    lens[(*k)++] = n == 1 ? 3 : 2; /* n = 1: x[0] and x[1] are disjoint */
}

/* Integers (wrapping add, sub, mul; maximum): (x * w + z) max x, - w. */
static void build_int(gf_tensor **in, int64_t n, gf_tensor **out) {
    (void)n;
    gf_tensor *a = gf_mul(in[0], in[1]), *b = gf_add(a, in[2]), *c = gf_maximum(b, in[0]);
    out[0] = gf_sub(c, in[1]);
    gf_tensor_release(a);
    gf_tensor_release(b);
    gf_tensor_release(c);
}
static void expect_int(int64_t n, gf_dtype dt, int *lens, int *k) {
    (void)n, (void)dt;
    lens[(*k)++] = 4;
}
static const fcase int_case = {"integer chain", 3, 0, false, 1, build_int, expect_int};

static const fcase cases[] = {
    {"x*w+z", 3, 0, false, 1, build_mad, expect_mad},
    {"C-loop chain", 3, 0, false, 1, build_loops, expect_loops},
    {"tanh/sigmoid chain", 2, 0, false, 1, build_act, expect_act},
    {"GELU from primitives", 1, 0, false, 1, build_gelu, expect_gelu},
    {"Adam in place", 4, 0, true, 0, build_adam, expect_adam},
    {"view read after write", 2, 1, false, 1, build_view_read, expect_view_read},
    {"view write after read", 2, 1, false, 1, build_view_write, expect_view_write},
};

/* ------------------------------------------------------------ harness */
static uint64_t counter(const char *name) {
    void *fn = NULL;
    if (gf_device_query_extension(dev, name, &fn) != GF_OK || !fn) return UINT64_MAX;
    uint64_t (*c)(void);
    memcpy(&c, &fn, sizeof c);
    return c();
}

/* The plugin's fused runs and launches so far; false when it has no counters. */
static bool fused_counts(uint64_t *runs, uint64_t *launches) {
    *runs = *launches = 0;
    if (!R.plugin) return false;
    if (!strcmp(R.plugin, "opencl")) {
        const graft_opencl_stats_ext *ext = NULL;
        if (gf_device_query_extension(dev, "opencl.stats", (void **)&ext) != GF_OK || !ext ||
            ext->struct_size < sizeof *ext)
            return false;
        *runs = ext->fused_runs();
        *launches = ext->fused_launches();
        return true;
    }
    *runs = counter("cpu_onednn.fused_runs");
    *launches = counter("cpu_onednn.fused_launches");
    return *runs != UINT64_MAX && *launches != UINT64_MAX;
}

/* What the plugin's rules make of the runs c forms at n elements of dt. */
static void expected(const fcase *c, int64_t n, gf_dtype dt, int *runs, int *launches) {
    *runs = *launches = 0;
    if ((dt == GF_F64 && !R.f64) || ((dt == GF_I32 || dt == GF_I64) && !R.ints)) return;
    int lens[8], k = 0;
    c->expect(n, dt, lens, &k);
    for (int i = 0; i < k; i++) {
        int len = lens[i];
        if (R.max_steps) {
            *runs += len / R.max_steps;
            *launches += len / R.max_steps * R.max_steps;
            len %= R.max_steps;
        }
        if (len >= 2) {
            *runs += 1;
            *launches += len;
        }
    }
}

static void values(double *v, int64_t n, unsigned seed, bool positive) {
    for (int64_t i = 0; i < n; i++) {
        double s = sin(0.37 * (double)i + 1.7 * seed) * cos(0.013 * (double)i * (seed + 1));
        v[i] = positive ? 1.1 + s : 2.0 * s;
    }
}

/* v (doubles) into t in place, in t's dtype (integers: v * 1e5, which
 * wraps in the chain's products). */
static void write_values(gf_tensor *t, const double *v, int64_t n) {
    gf_dtype dt = gf_tensor_dtype(t);
    if (dt == GF_F64) {
        CHECK(gf_tensor_from_host(t, v, sizeof(double) * (size_t)n) == GF_OK);
        return;
    }
    if (dt == GF_I32 || dt == GF_I64) {
        size_t es = gf_dtype_size(dt);
        unsigned char *b = malloc(es * (size_t)n);
        for (int64_t i = 0; i < n; i++) {
            int64_t x = (int64_t)(v[i] * 1e5);
            int32_t x32 = (int32_t)x;
            memcpy(b + es * (size_t)i, dt == GF_I32 ? (const void *)&x32 : (const void *)&x, es);
        }
        CHECK(gf_tensor_from_host(t, b, es * (size_t)n) == GF_OK);
        free(b);
        return;
    }
    float *f = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++) f[i] = (float)v[i];
    CHECK(gf_tensor_from_host(t, f, sizeof(float) * (size_t)n) == GF_OK);
    free(f);
}

static int64_t differing(const gf_tensor *a, const gf_tensor *b) {
    size_t es = gf_dtype_size(gf_tensor_dtype(a));
    int64_t n = gf_tensor_numel(a);
    if (n != gf_tensor_numel(b)) return -1;
    unsigned char *va = malloc(es * (size_t)n), *vb = malloc(es * (size_t)n);
    int64_t bad = -1;
    if (gf_tensor_to_host(a, va, es * (size_t)n) == GF_OK &&
        gf_tensor_to_host(b, vb, es * (size_t)n) == GF_OK) {
        bad = 0;
        for (int64_t i = 0; i < n; i++) bad += memcmp(va + es * i, vb + es * i, es) != 0;
    }
    free(va);
    free(vb);
    return bad;
}

/* The inputs of c at n elements of dt holding values of seed. */
static void make_inputs(const fcase *c, int64_t n, gf_dtype dt, unsigned seed, gf_tensor **in) {
    int64_t len = n + c->extra;
    double *v = malloc(sizeof(double) * (size_t)len);
    for (int k = 0; k < c->n_in; k++) {
        in[k] = gf_zeros(&len, 1, dt, dev);
        CHECK(in[k] != NULL);
        values(v, len, seed + 7u * (unsigned)k, c->positive);
        write_values(in[k], v, len);
    }
    free(v);
}

static void run_case(const fcase *c, int64_t n, gf_dtype dt, bool fusion_on) {
    for (int k = 0; k < K_COUNT; k++) K[k] = gf_full(NULL, 0, k_values[k], dt, dev);
    gf_tensor *gin[MAXT] = {0}, *ein[MAXT] = {0}, *gout[MAXT] = {0}, *eout[MAXT] = {0};
    make_inputs(c, n, dt, 1, gin);
    make_inputs(c, n, dt, 2, ein); /* the values of the replay */

    uint64_t runs0, launches0;
    bool counted = fused_counts(&runs0, &launches0);
    CHECK(gf_graph_capture_begin(dev) == GF_OK);
    c->build(gin, n, gout);
    gf_graph *g = gf_graph_capture_end();
    CHECK_MSG(g != NULL, "%s: capture: %s", c->name, gf_last_error());
    int want_runs = 0, want_launches = 0;
    if (fusion_on) expected(c, n, dt, &want_runs, &want_launches);
    uint64_t runs1, launches1;
    const char *dn = gf_dtype_name(dt);
    if (counted && fused_counts(&runs1, &launches1)) {
        int runs = (int)(runs1 - runs0), launches = (int)(launches1 - launches0);
        CHECK_MSG(runs == want_runs && launches == want_launches,
                  "%s, %s[%lld]: fused %d run(s) of %d launch(es), expected %d of %d", c->name,
                  dn, (long long)n, runs, launches, want_runs, want_launches);
    }

    /* the replay on the second values, against the eager ops on them */
    int64_t len = n + c->extra;
    double *v = malloc(sizeof(double) * (size_t)len);
    for (int k = 0; k < c->n_in; k++) {
        values(v, len, 2 + 7u * (unsigned)k, c->positive);
        write_values(gin[k], v, len);
    }
    free(v);
    if (g) CHECK_MSG(gf_graph_replay(g) == GF_OK, "%s: replay: %s", c->name, gf_last_error());
    c->build(ein, n, eout);
    for (int k = 0; k < c->n_out; k++) {
        int64_t bad = differing(gout[k], eout[k]);
        CHECK_MSG(bad == 0, "%s, %s[%lld]: output %d: %lld element(s) differ from eager",
                  c->name, dn, (long long)n, k, (long long)bad);
    }
    for (int k = 0; k < c->n_in; k++) {
        int64_t bad = differing(gin[k], ein[k]);
        CHECK_MSG(bad == 0, "%s, %s[%lld]: input %d: %lld element(s) differ from eager",
                  c->name, dn, (long long)n, k, (long long)bad);
    }
    gf_graph_destroy(g);
    for (int k = 0; k < MAXT; k++) {
        gf_tensor_release(gin[k]);
        gf_tensor_release(ein[k]);
        gf_tensor_release(gout[k]);
        gf_tensor_release(eout[k]);
    }
    for (int k = 0; k < K_COUNT; k++) gf_tensor_release(K[k]);
}

/* 200,003: a dozen full chunks or more, split between threads, and a tail. */
static const int64_t sizes[] = {1, 15, 17, 4097, 200003};

static void test_counters(void) {
    uint64_t runs, launches;
    if (R.plugin) CHECK_MSG(fused_counts(&runs, &launches), "%s: no fusion counters", R.plugin);
}

static void test_cases(void) {
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int d = 0; d < 2; d++)
            for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
                run_case(&cases[c], sizes[s], d ? GF_F64 : GF_F32, true);
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        run_case(&int_case, sizes[s], GF_I32, true);
        run_case(&int_case, sizes[s], GF_I64, true);
    }
}

/* The plugin's switch at 0: nothing fused (read at each graph creation). */
static void test_switch_off(void) {
    if (!R.plugin) return;
    setenv(R.env, "0", 1);
    run_case(&cases[1], 4097, GF_F32, false);
    run_case(&cases[4], 17, GF_F32, false);
    unsetenv(R.env);
    run_case(&cases[1], 4097, GF_F32, true);
}

int main(void) {
    dev = gf_device_default();
    if (!dev) {
        printf("skipped: %s\n", gf_last_error());
        return 77;
    }
    const char *plugin = gf_device_plugin(dev);
    if (!plugin) plugin = "";
    for (size_t i = 0; i < sizeof known_rules / sizeof known_rules[0]; i++)
        if (!strcmp(plugin, known_rules[i].plugin)) R = known_rules[i];
    printf("device %s (plugin %s): %s\n", gf_device_spec(dev), plugin,
           R.plugin ? "fusion counted" : "replays checked, fusion not counted");
    if (R.plugin) unsetenv(R.env);
    RUN(test_counters);
    RUN(test_cases);
    RUN(test_switch_off);
    gf_status st = gf_shutdown();
    CHECK_MSG(st == GF_OK, "gf_shutdown: %s (a tensor leaked?)", gf_last_error());
    return CHECK_REPORT();
}
