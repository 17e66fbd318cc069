/* SPDX-License-Identifier: BSD-3-Clause */
/* test_optim_fused.c — Adam and AdamW through the device's ADAM_UPDATE op
 * against the same update composed of elementwise ops, on the default device
 * (GRAFT_DEVICE).
 *
 * The core uses the op for contiguous parameters and composes the update for
 * any other (the op's row takes contiguous tensors only), so the same values
 * in a contiguous parameter and in a transposed one take the two paths side
 * by side. Both compute in the dtype in the same order of operations, so on
 * the plugins with the op (reference, cpu_onednn, opencl, cuda) they agree
 * bit for bit; elsewhere (vulkan) both paths are composed, and a GPU's
 * strided and contiguous kernels may round differently, hence a tolerance
 * there. Also: the profiler shows which path ran, no step of
 * either path counts as a fallback, a gradient that is a broadcast view takes
 * the composed path, and the version counter moves. */
#include <graft.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "autograd/test_rules_util.h"
#include "check.h"

#define ROWS 37
#define COLS 29
#define NEL (ROWS * COLS)
#define STEPS 6

/* A deterministic value in about [-1, 1) for element i of stream s. */
static double wave(int s, int i) { return sin(0.37 * i + 1.3 * s) * cos(0.011 * i * (s + 1)); }

static gf_tensor *host_tensor(const double *v, int rows, int cols, gf_dtype dt) {
    const int64_t sz[2] = {rows, cols};
    gf_tensor *x = gf_from_data(v, sz, 2, GF_F64, NULL);
    gf_tensor *y = x ? gf_to_dtype(x, dt) : NULL;
    gf_tensor_release(x);
    return y;
}

/* The values of t (any layout) as doubles, row-major. */
static void read_all(const gf_tensor *t, double *out) {
    gf_tensor *c = gf_contiguous(t);
    gf_tensor *d = c ? gf_to_dtype(c, GF_F64) : NULL;
    CHECK(d && gf_tensor_to_host(d, out, NEL * sizeof(double)) == GF_OK);
    gf_tensor_release(d);
    gf_tensor_release(c);
}

/* p0 as a contiguous leaf, or as the transpose of a contiguous [COLS, ROWS]
 * tensor (same values, not contiguous). */
static gf_tensor *make_param(const double *p0, gf_dtype dt, bool transposed) {
    gf_tensor *p;
    if (!transposed) {
        p = host_tensor(p0, ROWS, COLS, dt);
    } else {
        double *t = malloc(NEL * sizeof(double));
        for (int r = 0; r < ROWS; r++)
            for (int c = 0; c < COLS; c++) t[c * ROWS + r] = p0[r * COLS + c];
        gf_tensor *base = host_tensor(t, COLS, ROWS, dt);
        free(t);
        gf_tensor *view = base ? gf_transpose(base, 0, 1) : NULL;
        p = view ? gf_detach(view) : NULL;
        gf_tensor_release(view);
        gf_tensor_release(base);
        CHECK(p && !gf_tensor_is_contiguous(p));
    }
    CHECK(p && gf_tensor_set_requires_grad(p, true) == GF_OK);
    return p;
}

typedef struct config {
    const char *what;
    gf_adam_opts o;
} config;

/* Every field given (GF_OPTS_INIT: each value means itself, 0 included). */
#define ADAM(lr_, b1, b2, eps_, wd, dec)                                                \
    {.init = GF_OPTS_INIT, .lr = lr_, .beta1 = b1, .beta2 = b2, .eps = eps_, .weight_decay = wd, \
     .decoupled_weight_decay = dec}
static const config configs[] = {
    {"Adam", ADAM(1e-2, 0.9, 0.999, 1e-8, 0.0, false)},
    {"Adam, L2 weight decay", ADAM(1e-2, 0.9, 0.999, 1e-8, 0.05, false)},
    {"AdamW", ADAM(1e-2, 0.9, 0.999, 1e-8, 0.05, true)},
    {"Adam, betas 0.5 0.9, eps 1e-3", ADAM(3e-3, 0.5, 0.9, 1e-3, 0.0, false)},
    {"AdamW, betas 0 0.5", ADAM(1e-3, 0.0, 0.5, 1e-8, 0.5, true)},
    {"Adam, eps 0", ADAM(1e-3, 0.9, 0.999, 0.0, 0.0, false)},
};

/* Whether the profiled step of opt ran ADAM_UPDATE. */
static bool step_used_op(gf_optimizer *opt, gf_status *s) {
    CHECK(gf_profiler_start(NULL) == GF_OK);
    *s = gf_optimizer_step(opt);
    CHECK(gf_profiler_stop() == GF_OK);
    size_t n = gf_profiler_summary(NULL, 0) + 1;
    char *buf = malloc(n);
    gf_profiler_summary(buf, n);
    bool used = strstr(buf, "adam_update") != NULL;
    free(buf);
    return used;
}

/* The device's plugins in this tree that provide ADAM_UPDATE. */
static bool device_has_op(void) {
    static const char *const with_op[] = {"reference", "cpu_onednn", "opencl", "cuda"};
    const char *plugin = gf_device_plugin(gf_device_default());
    for (size_t i = 0; plugin && i < sizeof with_op / sizeof with_op[0]; i++)
        if (!strcmp(plugin, with_op[i])) return true;
    return false;
}

/* Largest |a - b| / (|b| + tiny) over the elements. */
static double max_rel(const double *a, const double *b) {
    double worst = 0;
    for (int i = 0; i < NEL; i++) {
        double e = fabs(a[i] - b[i]) / (fabs(b[i]) + 1e-30);
        if (!(e <= worst)) worst = e; /* NaN wins */
    }
    return worst;
}

static void run_config(const config *cf, gf_dtype dt, double tol) {
    double p0[NEL], pa[NEL], pb[NEL];
    for (int i = 0; i < NEL; i++) p0[i] = wave(0, i);
    gf_tensor *a = make_param(p0, dt, false), *b = make_param(p0, dt, true);
    gf_optimizer *oa = gf_adam_create(&a, 1, &cf->o), *ob = gf_adam_create(&b, 1, &cf->o);
    CHECK(oa && ob);
    gf_device *dev = gf_device_default();
    CHECK(gf_fallback_reset_stats(dev) == GF_OK);
    bool expect_op = device_has_op();
    for (int t = 1; t <= STEPS && oa && ob; t++) {
        double g[NEL];
        /* Gradients of changing sign and scale, a few exact zeros. */
        for (int i = 0; i < NEL; i++) g[i] = i % 17 == 0 ? 0.0 : wave(t, i) * pow(3.0, t % 3 - 1);
        gf_tensor *gt = host_tensor(g, ROWS, COLS, dt);
        CHECK(gf_tensor_set_grad(a, gt) == GF_OK && gf_tensor_set_grad(b, gt) == GF_OK);
        gf_tensor_release(gt);
        gf_status sa, sb;
        bool used_a = step_used_op(oa, &sa), used_b = step_used_op(ob, &sb);
        CHECK_MSG(sa == GF_OK && sb == GF_OK, "%s: %s", cf->what, gf_last_error());
        CHECK_MSG(used_a == expect_op, "%s step %d: ADAM_UPDATE %s", cf->what, t,
                  used_a ? "ran on a device without it" : "did not run");
        CHECK_MSG(!used_b, "%s step %d: a transposed parameter took the op", cf->what, t);
        read_all(a, pa);
        read_all(b, pb);
        double e = max_rel(pa, pb);
        CHECK_MSG(e <= tol, "%s, %s, step %d: op vs composed differ by %g (relative), limit %g",
                  cf->what, gf_dtype_name(dt), t, e, tol);
    }
    gf_fallback_stats fs;
    CHECK(gf_fallback_get_stats(dev, &fs) == GF_OK);
    CHECK_MSG(fs.ops == 0, "%s: %llu launches fell back", cf->what, (unsigned long long)fs.ops);
    /* The parameters moved (the comparison is not of two untouched tensors). */
    CHECK(fabs(pa[1] - p0[1]) > 0);
    gf_optimizer_destroy(oa);
    gf_optimizer_destroy(ob);
    gf_tensor_release(a);
    gf_tensor_release(b);
}

/* Bit for bit where the device has the op; elsewhere (both paths composed there)
 * the strided and contiguous kernels of a GPU may round differently. */
static double tolerance(gf_dtype dt) {
    if (device_has_op()) return 0.0;
    return dt == GF_F32 ? 1e-5 : 1e-12;
}

static void test_fused_equals_composed(void) {
    for (size_t c = 0; c < sizeof configs / sizeof configs[0]; c++) {
        run_config(&configs[c], GF_F32, tolerance(GF_F32));
        gf_tensor *probe = gf_zeros((int64_t[]){1}, 1, GF_F64, NULL);
        if (probe) run_config(&configs[c], GF_F64, tolerance(GF_F64));
        else gf_clear_error(); /* a device without f64 */
        gf_tensor_release(probe);
    }
}

/* A gradient that is a broadcast view (stride 0) is not the op's case: the
 * composed update runs, with the same result as a dense gradient's. */
static void test_broadcast_grad(void) {
    double p0[NEL], row[COLS], dense[NEL], pa[NEL], pb[NEL];
    for (int i = 0; i < NEL; i++) p0[i] = wave(5, i);
    for (int c = 0; c < COLS; c++) row[c] = wave(6, c);
    for (int i = 0; i < NEL; i++) dense[i] = row[i % COLS];
    const gf_adam_opts o = ADAM(1e-2, 0.9, 0.999, 1e-8, 0.1, true);
    gf_tensor *a = make_param(p0, GF_F32, false), *b = make_param(p0, GF_F32, false);
    gf_optimizer *oa = gf_adam_create(&a, 1, &o), *ob = gf_adam_create(&b, 1, &o);
    gf_tensor *gd = host_tensor(dense, ROWS, COLS, GF_F32);
    gf_tensor *gr = host_tensor(row, 1, COLS, GF_F32);
    gf_tensor *gx = gr ? gf_expand(gr, (int64_t[]){ROWS, COLS}, 2) : NULL;
    CHECK(gx && !gf_tensor_is_contiguous(gx));
    for (int t = 0; t < 3; t++) {
        CHECK(gf_tensor_set_grad(a, gd) == GF_OK && gf_tensor_set_grad(b, gx) == GF_OK);
        gf_status sb;
        CHECK(gf_optimizer_step(oa) == GF_OK);
        CHECK_MSG(!step_used_op(ob, &sb), "a broadcast gradient took the op");
        CHECK_MSG(sb == GF_OK, "%s", gf_last_error());
    }
    read_all(a, pa);
    read_all(b, pb);
    CHECK_MSG(max_rel(pa, pb) <= tolerance(GF_F32), "dense vs broadcast gradient: %g",
              max_rel(pa, pb));
    gf_tensor_release(gx);
    gf_tensor_release(gr);
    gf_tensor_release(gd);
    gf_optimizer_destroy(oa);
    gf_optimizer_destroy(ob);
    gf_tensor_release(a);
    gf_tensor_release(b);
}

/* The version counter moves once per in-place write, as the composed
 * update's: a tensor saved for backward before the step is caught. */
static void test_version_bumped(void) {
    double p0[NEL];
    for (int i = 0; i < NEL; i++) p0[i] = wave(7, i);
    gf_tensor *a = make_param(p0, GF_F32, false);
    gf_optimizer *opt = gf_adam_create(&a, 1, NULL);
    gf_tensor *sq = gf_mul(a, a); /* saves a */
    gf_tensor *y = gf_sum(sq, NULL, 0, false);
    gf_tensor *g = host_tensor(p0, ROWS, COLS, GF_F32);
    CHECK(y && gf_tensor_set_grad(a, g) == GF_OK);
    CHECK(gf_optimizer_step(opt) == GF_OK);
    CHECK(gf_backward(y, NULL, NULL) != GF_OK); /* a moved since it was saved */
    gf_clear_error();
    gf_tensor_release(y);
    gf_tensor_release(sq);
    gf_tensor_release(g);
    gf_optimizer_destroy(opt);
    gf_tensor_release(a);
}

int main(void) {
    int missing = ag_device_check(); /* 77: a GPU named by GRAFT_DEVICE is not here */
    if (missing) return missing;
    RUN(test_fused_equals_composed);
    RUN(test_broadcast_grad);
    RUN(test_version_bumped);
    return CHECK_REPORT();
}
