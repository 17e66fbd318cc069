/* SPDX-License-Identifier: BSD-3-Clause */
/* test_fallback.c — ops a device lacks run on the fallback device.
 *
 * The partial device is acme (acme_plugin.c: not host-addressable, 15 f32
 * ops); the oracle is the same computation on cpu (the reference plugin).
 * Each scenario runs in a process of its own with its own environment
 * (CMakeLists.txt): the fallback setting is read once per process. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "graft.h"

static gf_device *acme, *cpu;
static uint64_t base_acme, base_cpu;

static uint64_t in_use(gf_device *d) {
    gf_memory_stats st;
    gf_memory_get_stats(d, &st);
    return st.bytes_in_use;
}

static bool setup(void) {
    acme = gf_device_find("acme:0");
    cpu = gf_device_find("cpu");
    CHECK_MSG(acme && cpu, "%s", gf_last_error());
    if (!acme || !cpu) return false;
    base_acme = in_use(acme);
    base_cpu = in_use(cpu);
    return true;
}

/* Nothing left behind: every temporary of a fallback was released. */
static void check_no_leak(void) {
    CHECK_MSG(in_use(acme) == base_acme, "acme holds %llu bytes, %llu before",
              (unsigned long long)in_use(acme), (unsigned long long)base_acme);
    CHECK_MSG(in_use(cpu) == base_cpu, "cpu holds %llu bytes, %llu before",
              (unsigned long long)in_use(cpu), (unsigned long long)base_cpu);
}

/* Values of t (any device, any dtype) as doubles, read through cpu. */
static double *values(const gf_tensor *t, int64_t *n) {
    gf_scope_begin();
    gf_tensor *c = gf_to_dtype(gf_to_device(t, cpu), GF_F64);
    *n = gf_tensor_numel(c);
    double *v = malloc(sizeof(double) * (size_t)(*n ? *n : 1));
    if (!c || !v || gf_tensor_to_host(c, v, sizeof(double) * (size_t)*n) != GF_OK) {
        free(v);
        v = NULL;
    }
    gf_scope_end();
    return v;
}

/* a (on acme) equals b (on cpu) within rtol relative (and 1e-6 absolute). */
static void check_same(const gf_tensor *a, const gf_tensor *b, double rtol, const char *what) {
    CHECK_MSG(a && b, "%s: %s", what, gf_last_error());
    if (!a || !b) return;
    CHECK_MSG(gf_tensor_device(a) == acme, "%s: result on %s, expected acme:0", what,
              gf_device_spec(gf_tensor_device(a)));
    CHECK(gf_tensor_dtype(a) == gf_tensor_dtype(b));
    CHECK(gf_tensor_rank(a) == gf_tensor_rank(b));
    int64_t na, nb;
    double *va = values(a, &na), *vb = values(b, &nb);
    CHECK_MSG(va && vb && na == nb, "%s: %s", what, gf_last_error());
    int bad = 0;
    for (int64_t i = 0; va && vb && na == nb && i < na; i++)
        if (!check_close_(va[i], vb[i], 1e-6, rtol) && bad++ < 3)
            fprintf(stderr, "%s: element %lld: %.9g vs cpu %.9g\n", what, (long long)i, va[i], vb[i]);
    CHECK_MSG(bad == 0, "%s: %d elements differ", what, bad);
    free(va);
    free(vb);
}

/* The same f32 data on both devices. */
static void pair(const int64_t *sizes, int rank, double lo, double hi, uint64_t seed,
                 gf_tensor **on_acme, gf_tensor **on_cpu) {
    gf_manual_seed(seed);
    *on_cpu = gf_rand_uniform(sizes, rank, lo, hi, GF_F32, cpu);
    *on_acme = gf_to_device(*on_cpu, acme);
}

static bool fell_back(const char *op, const char *reason) {
    for (int i = 0; i < gf_fallback_op_count(acme); i++) {
        gf_fallback_op_info oi;
        if (gf_fallback_get_op(acme, i, &oi) == GF_OK && !strcmp(oi.op, op) &&
            (!reason || !strcmp(oi.reason, reason)))
            return true;
    }
    return false;
}

/* ------------------------------------------------------------ default fallback */
static void forward_ops(void) {
    gf_scope_begin();
    gf_tensor *a, *c;
    pair((int64_t[]){4, 5, 6}, 3, -2, 2, 1, &a, &c);
    check_same(gf_softmax(a, -1), gf_softmax(c, -1), 1e-6, "softmax");
    check_same(gf_sin(a), gf_sin(c), 1e-6, "sin");
    check_same(gf_exp(a), gf_exp(c), 1e-6, "exp (native)");
    /* SUM over two dims: acme's launch refuses it after query_op said yes. */
    check_same(gf_sum(a, (int[]){0, 2}, 2, false), gf_sum(c, (int[]){0, 2}, 2, false), 1e-5,
               "sum over two dims");
    CHECK(fell_back("sum", "launch refused"));
    CHECK(fell_back("softmax", "not provided"));
    CHECK(!fell_back("exp", NULL));
    /* A conversion acme lacks (i64 -> f32) and an i64 op. */
    gf_tensor *ia = gf_to_dtype(gf_mul_scalar(a, 10.0), GF_I64),
              *ic = gf_to_dtype(gf_mul_scalar(c, 10.0), GF_I64);
    check_same(ia, ic, 0, "to i64");
    check_same(gf_to_dtype(ia, GF_F32), gf_to_dtype(ic, GF_F32), 0, "i64 to f32");
    /* matmul is contiguous-only on acme: a transposed operand is copied by
     * acme's strided COPY, and matmul itself runs there. */
    gf_tensor *m, *mc, *w, *wc;
    pair((int64_t[]){7, 3}, 2, -1, 1, 2, &m, &mc);
    pair((int64_t[]){7, 4}, 2, -1, 1, 3, &w, &wc);
    check_same(gf_matmul(gf_transpose(m, 0, 1), w), gf_matmul(gf_transpose(mc, 0, 1), wc), 1e-5,
               "matmul of a transpose");
    CHECK(!fell_back("matmul", NULL));
    /* conv2d, whole. */
    gf_tensor *x, *xc, *k, *kc;
    pair((int64_t[]){2, 3, 8, 8}, 4, -1, 1, 4, &x, &xc);
    pair((int64_t[]){4, 3, 3, 3}, 4, -1, 1, 5, &k, &kc);
    gf_conv2d_opts same = {.padding = {1, 1}};
    check_same(gf_conv2d(x, k, NULL, &same), gf_conv2d(xc, kc, NULL, &same), 1e-5, "conv2d");
    gf_scope_end();
    check_no_leak();
}

static void inplace_and_accumulating(void) {
    gf_scope_begin();
    gf_tensor *a, *c;
    pair((int64_t[]){5, 6}, 2, -2, 2, 11, &a, &c);
    /* In place on a strided view: only the view's elements change. */
    gf_tensor *va = gf_transpose(gf_narrow(a, 1, 1, 3), 0, 1);
    gf_tensor *vc = gf_transpose(gf_narrow(c, 1, 1, 3), 0, 1);
    CHECK_MSG(gf_sigmoid_(va) == GF_OK, "%s", gf_last_error());
    CHECK(gf_sigmoid_(vc) == GF_OK);
    check_same(a, c, 1e-6, "sigmoid_ on a strided view");
    CHECK(fell_back("sigmoid", NULL));
    /* scatter_add_ / index_add_ accumulate into self. */
    int64_t idx[6] = {0, 2, 2, 4, 1, 0};
    gf_tensor *ia = gf_from_data(idx, (int64_t[]){6}, 1, GF_I64, acme),
              *ic = gf_from_data(idx, (int64_t[]){6}, 1, GF_I64, cpu);
    gf_tensor *s, *sc;
    pair((int64_t[]){6, 6}, 2, 0, 1, 12, &s, &sc);
    CHECK_MSG(gf_index_add_(a, 0, ia, s) == GF_OK, "%s", gf_last_error());
    CHECK(gf_index_add_(c, 0, ic, sc) == GF_OK);
    check_same(a, c, 1e-6, "index_add_");
    int64_t sidx[30];
    for (int i = 0; i < 30; i++) sidx[i] = (i * 7) % 5;
    gf_tensor *sa = gf_from_data(sidx, (int64_t[]){5, 6}, 2, GF_I64, acme),
              *sac = gf_from_data(sidx, (int64_t[]){5, 6}, 2, GF_I64, cpu);
    gf_tensor *src, *srcc;
    pair((int64_t[]){5, 6}, 2, 0, 1, 13, &src, &srcc);
    CHECK_MSG(gf_scatter_add_(a, 0, sa, src) == GF_OK, "%s", gf_last_error());
    CHECK(gf_scatter_add_(c, 0, sac, srcc) == GF_OK);
    check_same(a, c, 1e-6, "scatter_add_");
    check_same(gf_scatter_add(a, 0, sa, src), gf_scatter_add(c, 0, sac, srcc), 1e-6,
               "scatter_add");
    /* batch_norm in training updates the running statistics in place. */
    gf_tensor *x, *xc, *rm, *rmc, *rv, *rvc;
    pair((int64_t[]){4, 3, 5, 5}, 4, -1, 3, 14, &x, &xc);
    rm = gf_zeros((int64_t[]){3}, 1, GF_F32, acme);
    rmc = gf_zeros((int64_t[]){3}, 1, GF_F32, cpu);
    rv = gf_ones((int64_t[]){3}, 1, GF_F32, acme);
    rvc = gf_ones((int64_t[]){3}, 1, GF_F32, cpu);
    check_same(gf_batch_norm(x, rm, rv, NULL, NULL, true, 0.1, 1e-5, NULL, NULL),
               gf_batch_norm(xc, rmc, rvc, NULL, NULL, true, 0.1, 1e-5, NULL, NULL), 1e-5,
               "batch_norm");
    check_same(rm, rmc, 1e-5, "batch_norm running_mean");
    check_same(rv, rvc, 1e-5, "batch_norm running_var");
    /* max_pool2d and its backward, which zeroes and accumulates grad_x. */
    gf_pool2d_opts pool = {.kernel = {2, 2}};
    gf_tensor *ind = NULL, *indc = NULL;
    gf_tensor *p = gf_max_pool2d(x, &pool, &ind), *pc = gf_max_pool2d(xc, &pool, &indc);
    check_same(p, pc, 0, "max_pool2d");
    check_same(ind, indc, 0, "max_pool2d indices");
    gf_tensor *g, *gc;
    pair((int64_t[]){4, 3, 2, 2}, 4, -1, 1, 15, &g, &gc);
    check_same(gf_max_pool2d_backward(g, ind, x, &pool), gf_max_pool2d_backward(gc, indc, xc, &pool),
               0, "max_pool2d_backward");
    gf_scope_end(); /* releases the indices too: they were made in the scope */
    check_no_leak();
}

static void random_same_numbers(void) {
    gf_scope_begin();
    const int64_t shape[2] = {33, 17};
    gf_manual_seed(42);
    gf_tensor *na = gf_rand_normal(shape, 2, 0.5, 2.0, GF_F32, acme);
    gf_tensor *ua = gf_rand_uniform(shape, 2, -1, 1, GF_F64, acme);
    gf_tensor *da = gf_dropout(gf_ones(shape, 2, GF_F32, acme), 0.3, true);
    gf_manual_seed(42);
    gf_tensor *nc = gf_rand_normal(shape, 2, 0.5, 2.0, GF_F32, cpu);
    gf_tensor *uc = gf_rand_uniform(shape, 2, -1, 1, GF_F64, cpu);
    gf_tensor *dc = gf_dropout(gf_ones(shape, 2, GF_F32, cpu), 0.3, true);
    check_same(na, nc, 0, "rand_normal");
    check_same(ua, uc, 0, "rand_uniform f64");
    check_same(da, dc, 0, "dropout");
    CHECK(fell_back("random", NULL));
    gf_scope_end();
    check_no_leak();
}

/* d/dx of sum(softmax(x) * w) and of a conv2d + log_softmax + cross-entropy. */
static void backward(void) {
    gf_scope_begin();
    gf_tensor *x, *xc, *w, *wc;
    pair((int64_t[]){3, 7}, 2, -2, 2, 21, &x, &xc);
    pair((int64_t[]){3, 7}, 2, -1, 1, 22, &w, &wc);
    gf_tensor_set_requires_grad(x, true);
    gf_tensor_set_requires_grad(xc, true);
    CHECK_MSG(gf_backward(gf_sum(gf_mul(gf_softmax(x, 1), w), NULL, 0, false), NULL, NULL) == GF_OK,
              "%s", gf_last_error());
    CHECK(gf_backward(gf_sum(gf_mul(gf_softmax(xc, 1), wc), NULL, 0, false), NULL, NULL) == GF_OK);
    check_same(gf_tensor_grad(x), gf_tensor_grad(xc), 1e-5, "softmax backward");

    gf_tensor *im, *imc, *k, *kc;
    pair((int64_t[]){2, 1, 6, 6}, 4, -1, 1, 23, &im, &imc);
    pair((int64_t[]){3, 1, 3, 3}, 4, -1, 1, 24, &k, &kc);
    gf_tensor_set_requires_grad(k, true);
    gf_tensor_set_requires_grad(kc, true);
    int64_t t[2] = {1, 2};
    gf_tensor *ta = gf_from_data(t, (int64_t[]){2}, 1, GF_I64, acme),
              *tc = gf_from_data(t, (int64_t[]){2}, 1, GF_I64, cpu);
    gf_tensor *la = gf_cross_entropy(gf_sum(gf_conv2d(im, k, NULL, NULL), (int[]){2, 3}, 2, false),
                                     ta, NULL, GF_REDUCTION_MEAN, -100, 0.0);
    gf_tensor *lc = gf_cross_entropy(gf_sum(gf_conv2d(imc, kc, NULL, NULL), (int[]){2, 3}, 2, false),
                                     tc, NULL, GF_REDUCTION_MEAN, -100, 0.0);
    check_same(la, lc, 1e-5, "cross_entropy");
    CHECK_MSG(gf_backward(la, NULL, NULL) == GF_OK, "%s", gf_last_error());
    CHECK(gf_backward(lc, NULL, NULL) == GF_OK);
    check_same(gf_tensor_grad(k), gf_tensor_grad(kc), 1e-4, "conv2d weight grad");
    CHECK(fell_back("conv2d_backward_weight", NULL));
    gf_scope_end();
    check_no_leak();
}

/* Second derivatives through ops acme lacks (sin, cos). */
static void double_backward(void) {
    gf_scope_begin();
    gf_tensor *x, *xc;
    pair((int64_t[]){9}, 1, -2, 2, 31, &x, &xc);
    gf_tensor *gg[2];
    gf_tensor *xs[2] = {x, xc};
    for (int k = 0; k < 2; k++) {
        gf_tensor_set_requires_grad(xs[k], true);
        gf_tensor *y = gf_sum(gf_mul(gf_sin(xs[k]), gf_mul(xs[k], xs[k])), NULL, 0, false);
        gf_tensor *g = NULL;
        gf_grad_opts o = {.create_graph = true, .retain_graph = 1};
        CHECK_MSG(gf_grad(&y, 1, NULL, &xs[k], 1, &g, &o) == GF_OK, "%s", gf_last_error());
        gf_tensor *z = gf_sum(gf_mul(g, g), NULL, 0, false);
        gg[k] = NULL;
        CHECK_MSG(gf_grad(&z, 1, NULL, &xs[k], 1, &gg[k], NULL) == GF_OK, "%s", gf_last_error());
    }
    check_same(gg[0], gg[1], 1e-4, "double backward through sin");
    CHECK(fell_back("cos", NULL));
    gf_scope_end(); /* gradients from gf_grad belong to the scope too */
    check_no_leak();
}

/* A fallback keeps an error pending from an earlier call, as any op does. */
static void keeps_pending_error(void) {
    CHECK(gf_device_find("nosuch:7") == NULL);
    gf_scope_begin();
    gf_tensor *a = gf_ones((int64_t[]){4}, 1, GF_F32, acme);
    CHECK(gf_sin(a) != NULL); /* falls back */
    gf_scope_end();
    CHECK_MSG(gf_last_status() == GF_ERR_NOT_FOUND, "%s", gf_status_name(gf_last_status()));
    CHECK_CONTAINS(gf_last_error(), "nosuch:7");
    gf_clear_error();
}

static void counters(void) {
    gf_fallback_stats st;
    CHECK(gf_fallback_get_stats(acme, &st) == GF_OK);
    CHECK(st.ops > 10);
    CHECK(st.bytes_to_fallback > 0 && st.bytes_from_fallback > 0);
    CHECK(st.seconds > 0);
    CHECK(st.distinct_ops == gf_fallback_op_count(acme) && st.distinct_ops > 5);
    gf_fallback_op_info oi;
    CHECK(gf_fallback_get_op(acme, 0, &oi) == GF_OK);
    CHECK(oi.calls > 0 && !strcmp(oi.fallback, "cpu:0") && oi.signature[0] == '(');
    CHECK(gf_fallback_get_op(acme, st.distinct_ops, &oi) == GF_ERR_INDEX);
    CHECK(gf_fallback_get_stats(NULL, &st) == GF_ERR_INVALID);
    gf_clear_error();
    /* cpu itself is the fallback device: nothing falls back from it. */
    CHECK(gf_fallback_get_stats(cpu, &st) == GF_OK && st.ops == 0);
    CHECK(gf_fallback_reset_stats(acme) == GF_OK);
    CHECK(gf_fallback_get_stats(acme, &st) == GF_OK && st.ops == 0 && st.bytes_to_fallback == 0);
    CHECK(gf_fallback_device() == cpu);
}

/* GRAFT_LOG=warn: one warning per (device, op, dtypes), however many calls. */
static void warns_once(void) {
    char path[] = "/tmp/graft_fallback_warnXXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd < 0) return;
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    gf_scope_begin();
    gf_tensor *a = gf_ones((int64_t[]){4}, 1, GF_F32, acme);
    for (int i = 0; i < 3; i++) gf_abs(a);
    gf_abs(gf_to_dtype(a, GF_F64)); /* another dtype: another warning */
    gf_scope_end();
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    FILE *f = fopen(path, "r");
    char line[2048];
    int f32 = 0, f64 = 0;
    while (f && fgets(line, sizeof line, f)) {
        fputs(line, stderr);
        if (strstr(line, "op 'abs' (f32) -> (f32)") && strstr(line, "acme:0")) f32++;
        if (strstr(line, "op 'abs' (f64) -> (f64)")) f64++;
        if (strstr(line, "'abs'")) CHECK_MSG(strstr(line, "gf_abs") != NULL, "%s", line);
    }
    if (f) fclose(f);
    close(fd);
    unlink(path);
    CHECK_MSG(f32 == 1 && f64 == 1, "warnings: %d for f32, %d for f64", f32, f64);
}

/* gf_device_supports_op: the plugin's answer per op, dtypes and layout
 * (acme: ADD f32 any strides, MATMUL f32 contiguous only, nothing in f64,
 * no CONV2D), and every argument it refuses. */
static void supports_op(void) {
    const int f2[2] = {GF_F32, GF_F32}, f1[1] = {GF_F32}, d2[2] = {GF_F64, GF_F64},
              d1[1] = {GF_F64};
    bool yes = true;
    CHECK(gf_device_supports_op(acme, "add", f2, 2, f1, 1, true, &yes) == GF_OK && yes);
    CHECK(gf_device_supports_op(acme, "add", d2, 2, d1, 1, false, &yes) == GF_OK && !yes);
    CHECK(gf_device_supports_op(acme, "matmul", f2, 2, f1, 1, false, &yes) == GF_OK && yes);
    CHECK(gf_device_supports_op(acme, "matmul", f2, 2, f1, 1, true, &yes) == GF_OK && !yes);
    CHECK(gf_device_supports_op(cpu, "matmul", f2, 2, f1, 1, true, &yes) == GF_OK && yes);
    /* conv2d without its optional bias (-1), and the f32 one acme lacks */
    const int conv_in[3] = {GF_F32, GF_F32, -1};
    CHECK(gf_device_supports_op(acme, "conv2d", conv_in, 3, f1, 1, false, &yes) == GF_OK && !yes);
    CHECK(gf_device_supports_op(cpu, "conv2d", conv_in, 3, f1, 1, false, &yes) == GF_OK && yes);
    /* refused: each with its message, *provided false */
    struct {
        gf_status st;
        const char *says;
        gf_device *dev;
        const char *op;
        const int *in;
        int n_in;
        const int *out;
        int n_out;
        bool *provided;
    } bad[] = {
        {GF_ERR_NOT_FOUND, "no op is named", acme, "no_such_op", f2, 2, f1, 1, &yes},
        {GF_ERR_INVALID, "takes 2 to 2 input", acme, "add", f1, 1, f1, 1, &yes},
        {GF_ERR_INVALID, "output(s); got 2 and 2", acme, "add", f2, 2, f2, 2, &yes},
        {GF_ERR_INVALID, "in_dtypes[0] is -1", acme, "add", (const int[]){-1, GF_F32}, 2, f1, 1,
         &yes},
        {GF_ERR_INVALID, "out_dtypes[0] is 99", acme, "add", f2, 2, (const int[]){99}, 1, &yes},
        {GF_ERR_INVALID, "dev", NULL, "add", f2, 2, f1, 1, &yes},
        {GF_ERR_INVALID, "op", acme, NULL, f2, 2, f1, 1, &yes},
        {GF_ERR_INVALID, "in_dtypes", acme, "add", NULL, 2, f1, 1, &yes},
        {GF_ERR_INVALID, "out_dtypes", acme, "add", f2, 2, NULL, 1, &yes},
        {GF_ERR_INVALID, "provided", acme, "add", f2, 2, f1, 1, NULL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        yes = true;
        gf_clear_error();
        gf_status st = gf_device_supports_op(bad[i].dev, bad[i].op, bad[i].in, bad[i].n_in,
                                             bad[i].out, bad[i].n_out, true, bad[i].provided);
        CHECK_MSG(st == bad[i].st && strstr(gf_last_error(), bad[i].says) &&
                      (!yes || !bad[i].provided),
                  "case %zu: status %d, \"%s\"", i, (int)st, gf_last_error());
    }
    gf_clear_error();
}

static int scenario_default(void) {
    if (!setup()) return CHECK_REPORT();
    RUN(forward_ops);
    RUN(inplace_and_accumulating);
    RUN(random_same_numbers);
    RUN(backward);
    RUN(double_backward);
    RUN(keeps_pending_error);
    RUN(counters);
    RUN(warns_once);
    RUN(supports_op);
    CHECK_MSG(gf_shutdown() == GF_OK, "%s", gf_last_error());
    return CHECK_REPORT();
}

/* ------------------------------------------------------------ strict mode */
static int scenario_strict(void) {
    if (!setup()) return CHECK_REPORT();
    CHECK(gf_fallback_device() == NULL && gf_last_status() == GF_OK);
    gf_tensor *a = gf_ones((int64_t[]){2, 3}, 2, GF_F32, acme);
    gf_tensor *e = gf_exp(a); /* provided */
    CHECK(e != NULL);
    gf_tensor_release(e);
    gf_tensor *s = gf_softmax(a, 1);
    CHECK(s == NULL && gf_last_status() == GF_ERR_UNSUPPORTED);
    const char *m = gf_last_error();
    CHECK_CONTAINS(m, "gf_softmax");
    CHECK_CONTAINS(m, "op 'softmax'");
    CHECK_CONTAINS(m, "acme:0");
    CHECK_CONTAINS(m, "(f32) -> (f32)");
    CHECK_CONTAINS(m, "GRAFT_FALLBACK=off");
    CHECK_CONTAINS(m, "gf_to_dtype");
    /* randn has no inputs: the remedy says so, and nothing of conversions. */
    gf_clear_error();
    CHECK(gf_rand_normal((int64_t[]){3}, 1, 0, 1, GF_F32, acme) == NULL);
    m = gf_last_error();
    CHECK_CONTAINS(m, "op 'random'");
    CHECK_CONTAINS(m, "gf_rand_normal");
    CHECK_CONTAINS(m, "create the tensor on a device");
    CHECK(!strstr(m, "gf_to_dtype"));
    /* gf_to_dtype's own failure does not advise gf_to_dtype. */
    gf_clear_error();
    CHECK(gf_to_dtype(a, GF_I64) == NULL);
    m = gf_last_error();
    CHECK_CONTAINS(m, "gf_to_dtype");
    CHECK_CONTAINS(m, "op 'copy'");
    CHECK(!strstr(m, "convert the inputs with gf_to_dtype"));
    /* The API turns fallback on and off again. */
    gf_clear_error();
    CHECK(gf_fallback_set_device(cpu) == GF_OK && gf_fallback_device() == cpu);
    s = gf_softmax(a, 1);
    CHECK_MSG(s != NULL, "%s", gf_last_error());
    gf_tensor_release(s);
    CHECK(gf_fallback_set_device(NULL) == GF_OK && gf_fallback_device() == NULL);
    s = gf_log_softmax(a, 1);
    CHECK(s == NULL && gf_last_status() == GF_ERR_UNSUPPORTED);
    gf_clear_error();
    gf_tensor_release(a);
    check_no_leak();
    CHECK_MSG(gf_shutdown() == GF_OK, "%s", gf_last_error());
    return CHECK_REPORT();
}

/* ------------------------------------------------------------ failing fallback */
/* GRAFT_FALLBACK names acme:1, which fails (its launches, or its
 * allocations): a clear error naming both devices, and nothing leaked. */
static int scenario_fallback_fails(gf_status expect, const char *says) {
    if (!setup()) return CHECK_REPORT();
    gf_device *fb = gf_device_find("acme:1");
    CHECK(fb != NULL && gf_fallback_device() == fb);
    uint64_t base_fb = in_use(fb);
    gf_tensor *a = gf_ones((int64_t[]){2, 3}, 2, GF_F32, acme);
    gf_tensor *s = gf_softmax(a, 1);
    CHECK(s == NULL);
    CHECK_MSG(gf_last_status() == expect, "status %s: %s", gf_status_name(gf_last_status()),
              gf_last_error());
    const char *m = gf_last_error();
    CHECK_CONTAINS(m, "op 'softmax' ran on the fallback device acme:1");
    CHECK_CONTAINS(m, "device acme:0 lacks it");
    CHECK_CONTAINS(m, says);
    gf_clear_error();
    /* The device keeps working for what it provides. */
    gf_tensor *e = gf_exp(a);
    CHECK_MSG(e != NULL, "%s", gf_last_error());
    gf_tensor_release(e);
    gf_tensor_release(a);
    check_no_leak();
    CHECK(in_use(fb) == base_fb);
    gf_fallback_stats st;
    CHECK(gf_fallback_get_stats(acme, &st) == GF_OK && st.ops == 0);
    CHECK_MSG(gf_shutdown() == GF_OK, "%s", gf_last_error());
    return CHECK_REPORT();
}

/* GRAFT_FALLBACK names no device: an op that needs it fails as in strict
 * mode; asking for the fallback device says what is wrong. */
static int scenario_bad_env(void) {
    if (!setup()) return CHECK_REPORT();
    gf_tensor *a = gf_ones((int64_t[]){3}, 1, GF_F32, acme);
    CHECK(gf_sin(a) == NULL && gf_last_status() == GF_ERR_UNSUPPORTED);
    CHECK_CONTAINS(gf_last_error(), "op 'sin'");
    gf_clear_error();
    CHECK(gf_fallback_device() == NULL && gf_last_status() == GF_ERR_NOT_FOUND);
    CHECK_CONTAINS(gf_last_error(), "GRAFT_FALLBACK");
    CHECK_CONTAINS(gf_last_error(), "nosuch:3");
    gf_clear_error();
    gf_tensor_release(a);
    CHECK_MSG(gf_shutdown() == GF_OK, "%s", gf_last_error());
    return CHECK_REPORT();
}

/* acme stores f32 only: an op that needs an i64 tensor there fails at its
 * creation, naming the public call. */
static int scenario_dtype_not_stored(void) {
    if (!setup()) return CHECK_REPORT();
    gf_tensor *x = gf_ones((int64_t[]){1, 1, 4, 4}, 4, GF_F32, acme);
    gf_tensor *ind = NULL;
    gf_pool2d_opts pool = {.kernel = {2, 2}};
    gf_tensor *p = gf_max_pool2d(x, &pool, &ind);
    CHECK(p == NULL && ind == NULL && gf_last_status() == GF_ERR_DTYPE);
    const char *m = gf_last_error();
    CHECK_CONTAINS(m, "gf_max_pool2d");
    CHECK_CONTAINS(m, "device acme:0 (plugin 'acme') does not store dtype i64");
    CHECK_CONTAINS(m, "(e.g. cpu:0)");
    gf_clear_error();
    int64_t t[1] = {0};
    CHECK(gf_from_data(t, (int64_t[]){1}, 1, GF_I64, acme) == NULL);
    CHECK_CONTAINS(gf_last_error(), "gf_from_data");
    gf_clear_error();
    gf_tensor_release(x);
    check_no_leak();
    CHECK_MSG(gf_shutdown() == GF_OK, "%s", gf_last_error());
    return CHECK_REPORT();
}

/* ------------------------------------------------------------ threads */
/* Threads falling back at once (acme is not thread-safe: the core serialises
 * calls into it), each checking its own results; the counters add up. */
#define N_THREADS 4
#define N_STEPS 20

static void *worker(void *arg) {
    int *bad = arg;
    for (int i = 0; i < N_STEPS; i++) {
        gf_scope_begin();
        gf_tensor *x = gf_full((int64_t[]){3, 5}, 2, (double)i, GF_F32, acme);
        gf_tensor *y = gf_sum(gf_softmax(x, 1), NULL, 0, false); /* softmax falls back */
        double v = 0;
        if (!y || gf_tensor_item(y, &v) != GF_OK || fabs(v - 3.0) > 1e-5) (*bad)++;
        gf_scope_end();
    }
    return NULL;
}

static int scenario_threads(void) {
    if (!setup()) return CHECK_REPORT();
    pthread_t th[N_THREADS];
    int bad[N_THREADS] = {0};
    for (int i = 0; i < N_THREADS; i++) CHECK(pthread_create(&th[i], NULL, worker, &bad[i]) == 0);
    for (int i = 0; i < N_THREADS; i++) {
        pthread_join(th[i], NULL);
        CHECK_MSG(bad[i] == 0, "thread %d: %d wrong results", i, bad[i]);
    }
    gf_fallback_stats st;
    CHECK(gf_fallback_get_stats(acme, &st) == GF_OK);
    /* softmax, and the sum over two dims that acme refuses at launch */
    CHECK_MSG(st.ops == 2 * N_THREADS * N_STEPS, "%llu ops fell back", (unsigned long long)st.ops);
    check_no_leak();
    CHECK_MSG(gf_shutdown() == GF_OK, "%s", gf_last_error());
    return CHECK_REPORT();
}

/* compare A B RTOL: two loss logs of train_util.h (TRAIN_LOSS_LOG), the same
 * batches in the same order, every loss within RTOL relative. */
static int compare_losses(const char *pa, const char *pb, double rtol) {
    FILE *a = fopen(pa, "r"), *b = fopen(pb, "r");
    if (!a || !b) {
        fprintf(stderr, "cannot read %s or %s\n", pa, pb);
        return 1;
    }
    int ea, ba, eb, bb, n = 0, bad = 0;
    double la, lb, worst = 0;
    for (;;) {
        int ra = fscanf(a, "%d %d %lf", &ea, &ba, &la), rb = fscanf(b, "%d %d %lf", &eb, &bb, &lb);
        if (ra != 3 || rb != 3) {
            if (ra != rb) bad++, fprintf(stderr, "the logs have different lengths\n");
            break;
        }
        n++;
        double rel = fabs(la - lb) / fmax(fabs(lb), 1e-30);
        if (rel > worst) worst = rel;
        if (ea != eb || ba != bb || !(rel <= rtol)) {
            if (bad++ < 5)
                fprintf(stderr, "epoch %d batch %d: loss %.9g vs %.9g (relative %.3g)\n", ea, ba,
                        la, lb, rel);
        }
    }
    fclose(a);
    fclose(b);
    printf("%d losses compared, largest relative difference %.3g (allowed %.3g)\n", n, worst, rtol);
    return bad || n == 0;
}

/* ------------------------------------------------------------ captured graphs */
/* A region on acme whose ops acme lacks: the fallback's transfers and the
 * cpu launches are recorded with acme's, and replayed. */
static void graph_replays_fallback(void) {
    const int64_t sz[1] = {6};
    const float a[6] = {-2, -1, 0, 0.5f, 1, 3}, b[6] = {4, -3, 0.25f, 2, -0.5f, 1};
    gf_tensor *x = gf_from_data(a, sz, 1, GF_F32, acme);
    CHECK(gf_graph_capture_begin(acme) == GF_OK);
    gf_scope_begin();
    gf_tensor *y = gf_scope_keep(gf_mul(gf_sigmoid(x), x)); /* sigmoid: on cpu */
    gf_scope_end();
    gf_manual_seed(99);
    gf_tensor *r = gf_rand_uniform(sz, 1, 0, 1, GF_F32, acme); /* RANDOM: on cpu */
    gf_graph *g = gf_graph_capture_end();
    CHECK_MSG(g != NULL, "%s", gf_last_error());
    CHECK(fell_back("sigmoid", NULL));
    CHECK(gf_tensor_from_host(x, b, sizeof b) == GF_OK);
    CHECK(g && gf_graph_replay(g) == GF_OK);
    gf_scope_begin();
    gf_tensor *xc = gf_from_data(b, sz, 1, GF_F32, cpu);
    check_same(y, gf_mul(gf_sigmoid(xc), xc), 1e-6, "replayed sigmoid * x");
    gf_manual_seed(99);
    gf_tensor *r1 = gf_rand_uniform(sz, 1, 0, 1, GF_F32, cpu);
    gf_tensor *r2 = gf_rand_uniform(sz, 1, 0, 1, GF_F32, cpu);
    (void)r1;
    check_same(r, r2, 0, "the replay's draw is the second eager draw");
    gf_scope_end();
    gf_graph_destroy(g);
    gf_tensor_release(r);
    gf_tensor_release(y);
    gf_tensor_release(x);
    check_no_leak();
}

static int scenario_graph(void) {
    if (!setup()) return CHECK_REPORT();
    RUN(graph_replays_fallback);
    CHECK_MSG(gf_shutdown() == GF_OK, "%s", gf_last_error());
    return CHECK_REPORT();
}

int main(int argc, char **argv) {
    const char *sc = argc > 1 ? argv[1] : "";
    if (!strcmp(sc, "compare") && argc == 5) return compare_losses(argv[2], argv[3], atof(argv[4]));
    if (!strcmp(sc, "default")) return scenario_default();
    if (!strcmp(sc, "strict")) return scenario_strict();
    if (!strcmp(sc, "fallback_launch_fails"))
        return scenario_fallback_fails(GF_ERR_PLUGIN, "simulated device fault");
    if (!strcmp(sc, "fallback_alloc_fails"))
        return scenario_fallback_fails(GF_ERR_OUT_OF_MEMORY, "simulated out of device memory");
    if (!strcmp(sc, "bad_env")) return scenario_bad_env();
    if (!strcmp(sc, "threads")) return scenario_threads();
    if (!strcmp(sc, "dtype_not_stored")) return scenario_dtype_not_stored();
    if (!strcmp(sc, "graph")) return scenario_graph();
    fprintf(stderr, "usage: %s default|strict|fallback_launch_fails|fallback_alloc_fails|"
                    "bad_env|dtype_not_stored|graph\n", argv[0]);
    return 2;
}
