/* graft-vulkan-bench — the Vulkan plugin against the CPU plugins, in one run.
 *
 *   graft-vulkan-bench [--quick] [--repeats N] [--ref-repeats N] [--matmul N]
 *
 * Workloads (f32, medians of N runs, each ended by a device synchronize):
 *   dispatch   a chain of 1,000 dependent small adds (y = y + x, 256
 *              elements): the cost of one launch, in microseconds per op
 *   matmul     512, 1024, 2048 square, GFLOP/s; on Vulkan the shader the
 *              plugin picks, then each of its three forced (through the
 *              "vulkan.stats" extension): naive, tiled, register-blocked
 *   add 16M    elementwise add of two 16M-element tensors, GB/s moved
 *   mlp step   one training step of a 784-1024-1024-10 ReLU MLP, batch 256:
 *              forward, cross-entropy, backward, SGD update, in ms
 * Columns: vulkan:0, the cpu_onednn plugin's CPU device and the reference
 * plugin's, whichever of them GRAFT_PLUGINS loads (unset: all). The
 * reference is slow at the large sizes: it runs --ref-repeats times there
 * (default 1). --quick: matmul 512 only, add 1M, a 784-128-128-10 MLP with
 * batch 64 (a smoke run). --matmul N: only the matmul rows, at size N. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <graft.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "graft_plugin.h"
#include "graft_vulkan_ext.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void quiet_set_error(void *ctx, const char *m) {
    (void)ctx;
    (void)m;
}
static void quiet_log(void *ctx, gfp_log_level level, const char *m) {
    (void)ctx;
    (void)level;
    (void)m;
}

/* The plugin's extension: the library is already loaded by libgraft, so
 * dlopen returns the same instance, and negotiate (side-effect free; the
 * plugin keeps the core's host table) hands back its table. */
static const graft_vulkan_stats_ext *vulkan_ext(void) {
    for (int i = 0; i < gf_plugin_count(); i++) {
        gf_plugin_info info;
        if (gf_plugin_get_info(i, &info) != GF_OK || strcmp(info.name, "vulkan") || !info.loaded)
            continue;
        void *dl = dlopen(info.path, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
        if (!dl) return NULL;
        gfp_negotiate_fn neg = (gfp_negotiate_fn)dlsym(dl, GFP_ENTRY_SYMBOL);
        static const gfp_host host = {.struct_size = sizeof(gfp_host),
                                      .abi_major = GFP_ABI_MAJOR,
                                      .abi_minor = GFP_ABI_MINOR,
                                      .set_error = quiet_set_error,
                                      .log = quiet_log};
        gfp_negotiate_request req = {.struct_size = sizeof req, .abi_major = GFP_ABI_MAJOR,
                                     .abi_minor = GFP_ABI_MINOR, .host = &host};
        const gfp_plugin *t = NULL;
        void *out = NULL;
        if (!neg || neg(&req, &t) != GFP_OK || !t->query_extension ||
            t->query_extension(NULL, "vulkan.stats", &out) != GFP_OK)
            return NULL;
        return out;
    }
    return NULL;
}

static int fail(const char *what) {
    fprintf(stderr, "graft-vulkan-bench: %s failed: %s\n", what, gf_last_error());
    return 1;
}

/* Microseconds per op of a chain of n dependent adds. */
static double bench_dispatch(gf_device *dev, int n, int repeats) {
    int64_t s = 256;
    double t[32];
    for (int r = 0; r < repeats; r++) {
        gf_tensor *x = gf_ones(&s, 1, GF_F32, dev), *y = gf_zeros(&s, 1, GF_F32, dev);
        gf_device_synchronize(dev);
        double t0 = now();
        for (int i = 0; i < n; i++) {
            gf_tensor *z = gf_add(y, x);
            gf_tensor_release(y);
            y = z;
        }
        gf_device_synchronize(dev);
        t[r] = (now() - t0) / n * 1e6;
        double v = 0;
        int64_t zero = 0;
        if (!y || gf_tensor_get(y, &zero, &v) != GF_OK || v != n) {
            fprintf(stderr, "dispatch chain: wrong result %g (expected %d)\n", v, n);
            t[r] = -1;
        }
        gf_tensor_release(x);
        gf_tensor_release(y);
    }
    return median(t, repeats);
}

/* warm_up: one run first, not timed (pipeline creation, caches); the slow
 * reference goes without at the large sizes. */
static double bench_matmul(gf_device *dev, int64_t n, int repeats, bool warm_up) {
    int64_t s[2] = {n, n};
    gf_tensor *a = gf_rand(s, 2, GF_F32, dev), *b = gf_rand(s, 2, GF_F32, dev);
    double t[32];
    if (warm_up) {
        gf_tensor *w = gf_matmul(a, b);
        gf_tensor_release(w);
    }
    gf_device_synchronize(dev);
    for (int r = 0; r < repeats; r++) {
        double t0 = now();
        gf_tensor *c = gf_matmul(a, b);
        gf_device_synchronize(dev);
        t[r] = now() - t0;
        if (!c) t[r] = 1e30;
        gf_tensor_release(c);
    }
    gf_tensor_release(a);
    gf_tensor_release(b);
    return 2.0 * (double)n * n * n / median(t, repeats) * 1e-9;
}

static double bench_add(gf_device *dev, int64_t n, int repeats) {
    gf_tensor *a = gf_rand(&n, 1, GF_F32, dev), *b = gf_rand(&n, 1, GF_F32, dev);
    double t[32];
    gf_tensor *w = gf_add(a, b);
    gf_tensor_release(w);
    gf_device_synchronize(dev);
    for (int r = 0; r < repeats; r++) {
        double t0 = now();
        gf_tensor *c = gf_add(a, b);
        gf_device_synchronize(dev);
        t[r] = now() - t0;
        gf_tensor_release(c);
    }
    gf_tensor_release(a);
    gf_tensor_release(b);
    return 3.0 * 4.0 * (double)n / median(t, repeats) * 1e-9; /* two reads, one write */
}

/* A leaf parameter: randn * scale, requiring grad. */
static gf_tensor *param(gf_device *dev, int64_t rows, int64_t cols, double scale) {
    int64_t sz[2] = {rows, cols};
    int rank = rows > 0 ? 2 : 1;
    gf_tensor *r = gf_randn(rank == 2 ? sz : sz + 1, rank, GF_F32, dev);
    gf_tensor *p = r ? gf_mul_scalar(r, scale) : NULL;
    gf_tensor_release(r);
    if (p) gf_tensor_set_requires_grad(p, true);
    return p;
}

/* Milliseconds per training step (median of `repeats`, after one warm-up):
 * sizes[0] inputs, two hidden layers, sizes[3] classes. *loss_out: the loss
 * of the last step (finite when the step works). */
static double bench_mlp(gf_device *dev, const int64_t sizes[4], int64_t batch, int repeats,
                        double *loss_out) {
    *loss_out = NAN;
    gf_manual_seed(7);
    gf_tensor *p[6];
    for (int l = 0; l < 3; l++) {
        p[2 * l] = param(dev, sizes[l], sizes[l + 1], 1.0 / sqrt((double)sizes[l]));
        p[2 * l + 1] = param(dev, 0, sizes[l + 1], 0.01);
    }
    int64_t xs[2] = {batch, sizes[0]};
    gf_tensor *x = gf_randn(xs, 2, GF_F32, dev);
    int64_t *labels = malloc((size_t)batch * sizeof *labels);
    for (int64_t i = 0; labels && i < batch; i++) labels[i] = (i * 7 + 3) % sizes[3];
    gf_tensor *target = labels ? gf_from_data(labels, &batch, 1, GF_I64, dev) : NULL;
    free(labels);
    gf_sgd_opts so = {.lr = 0.01};
    gf_optimizer *opt = gf_sgd_create(p, 6, &so);
    double t[32];
    int ok = opt && x && target;
    for (int r = 0; ok && r <= repeats; r++) {
        gf_device_synchronize(dev);
        double t0 = now();
        gf_tensor *h = x;
        gf_tensor_retain(h);
        for (int l = 0; l < 3 && h; l++) {
            gf_tensor *m = gf_matmul(h, p[2 * l]);
            gf_tensor *a = m ? gf_add(m, p[2 * l + 1]) : NULL;
            gf_tensor_release(m);
            gf_tensor_release(h);
            h = a;
            if (l < 2 && h) {
                gf_tensor *z = gf_relu(h);
                gf_tensor_release(h);
                h = z;
            }
        }
        gf_tensor *loss = h ? gf_cross_entropy(h, target, NULL, GF_REDUCTION_MEAN, -100, 0.0) : NULL;
        gf_tensor_release(h);
        ok = loss && gf_backward(loss, NULL, NULL) == GF_OK && gf_optimizer_step(opt) == GF_OK &&
             gf_optimizer_zero_grad(opt) == GF_OK && gf_tensor_item(loss, loss_out) == GF_OK;
        gf_device_synchronize(dev);
        if (r > 0) t[r - 1] = (now() - t0) * 1e3; /* the first is the warm-up */
        gf_tensor_release(loss);
    }
    gf_optimizer_destroy(opt);
    for (int i = 0; i < 6; i++) gf_tensor_release(p[i]);
    gf_tensor_release(x);
    gf_tensor_release(target);
    if (!ok) {
        fprintf(stderr, "mlp step on %s failed: %s\n", gf_device_spec(dev), gf_last_error());
        *loss_out = NAN;
        return 0;
    }
    return median(t, repeats);
}

/* The first device of a plugin, or NULL. */
static gf_device *device_of(const char *plugin) {
    for (int i = 0; i < gf_device_count(); i++) {
        gf_device *d = gf_device_at(i);
        if (d && !strcmp(gf_device_plugin(d), plugin)) return d;
    }
    return NULL;
}

enum { N_DEV = 3 };
static const char *const col_name[N_DEV] = {"vulkan", "cpu_onednn", "reference"};

static void print_row(const char *label, const double *v, const char *unit) {
    printf("%-30s", label);
    for (int k = 0; k < N_DEV; k++) {
        if (v[k] > 0) printf(" %11.2f%-3s", v[k], unit);
        else printf(" %14s", "-");
    }
    printf("\n");
}

int main(int argc, char **argv) {
    int repeats = 5, ref_repeats = 1;
    int64_t only_matmul = 0; /* --matmul N: only the matmul of size N */
    bool quick = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = true;
        else if (!strcmp(argv[i], "--repeats") && i + 1 < argc) repeats = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--ref-repeats") && i + 1 < argc) ref_repeats = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--matmul") && i + 1 < argc) only_matmul = atoll(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--quick] [--repeats N] [--ref-repeats N] [--matmul N]\n",
                    argv[0]);
            return 2;
        }
    }
    if (repeats < 1) repeats = 1;
    if (repeats > 32) repeats = 32;
    if (ref_repeats < 1) ref_repeats = 1;
    if (ref_repeats > repeats) ref_repeats = repeats;
    gf_device *vk = gf_device_find("vulkan:0");
    if (!vk) {
        fprintf(stderr, "graft-vulkan-bench: no vulkan device: %s\n", gf_last_error());
        return 77;
    }
    gf_device *dev[N_DEV] = {vk, device_of("cpu_onednn"), device_of("reference")};
    const graft_vulkan_stats_ext *ext = vulkan_ext();
    if (!ext)
        fprintf(stderr, "graft-vulkan-bench: the vulkan.stats extension is not available: the "
                "naive matmul is not measured\n");
    for (int k = 0; k < N_DEV; k++) {
        gf_device_info info;
        if (dev[k] && gf_device_get_info(dev[k], &info) == GF_OK)
            printf("%-11s %-8s %s (%s)\n", col_name[k], gf_device_spec(dev[k]), info.name,
                   info.driver);
        else
            printf("%-11s not loaded (GRAFT_PLUGINS)\n", col_name[k]);
    }
    printf("medians of %d runs (reference: %d at the large sizes)\n\n", repeats, ref_repeats);
    printf("%-30s", "workload");
    for (int k = 0; k < N_DEV; k++) printf(" %14s", col_name[k]);
    printf("\n");

    double v[N_DEV];
    int chain = 1000;
    if (!only_matmul) {
        for (int k = 0; k < N_DEV; k++) v[k] = dev[k] ? bench_dispatch(dev[k], chain, repeats) : 0;
        print_row("dispatch: 1000 adds, per op", v, " us");
    }

    int64_t sizes[3] = {512, 1024, 2048};
    int n_sizes = quick ? 1 : 3;
    if (only_matmul) {
        sizes[0] = only_matmul;
        n_sizes = 1;
    }
    for (int i = 0; i < n_sizes; i++) {
        int rep = sizes[i] >= 2048 ? (repeats < 3 ? repeats : 3) : repeats;
        /* Vulkan: the shader chosen by default, then each one forced. */
        double forced[3][N_DEV] = {{0}};
        v[0] = bench_matmul(vk, sizes[i], rep, true);
        for (int mode = 1; ext && mode <= 3; mode++) {
            ext->set_matmul_mode(mode);
            /* The naive shader is slow at 2048: one run. */
            forced[mode - 1][0] = bench_matmul(vk, sizes[i], mode == 1 && sizes[i] >= 2048 ? 1 : rep,
                                               mode != 1 || sizes[i] < 2048);
            ext->set_matmul_mode(0);
        }
        v[1] = dev[1] ? bench_matmul(dev[1], sizes[i], rep, true) : 0;
        bool big = sizes[i] >= 1024;
        v[2] = dev[2] ? bench_matmul(dev[2], sizes[i], big ? ref_repeats : rep, !big) : 0;
        char label[64];
        snprintf(label, sizeof label, "matmul %lld, GFLOP/s", (long long)sizes[i]);
        print_row(label, v, "");
        static const char *const mode_name[3] = {"naive", "tiled (shared)", "register-blocked"};
        for (int mode = 0; ext && mode < 3; mode++) {
            snprintf(label, sizeof label, "  %s", mode_name[mode]);
            print_row(label, forced[mode], "");
        }
    }
    if (only_matmul) return gf_last_status() != GF_OK ? fail("a workload") : 0;
    int64_t n16 = quick ? (1 << 20) : (16 << 20);
    for (int k = 0; k < N_DEV; k++) v[k] = dev[k] ? bench_add(dev[k], n16, repeats) : 0;
    print_row(quick ? "add 1M f32, GB/s" : "add 16M f32, GB/s", v, "");

    int64_t big[4] = {784, 1024, 1024, 10}, small[4] = {784, 128, 128, 10};
    int64_t batch = quick ? 64 : 256;
    double loss[N_DEV] = {0, 0, 0};
    for (int k = 0; k < N_DEV; k++)
        v[k] = dev[k] ? bench_mlp(dev[k], quick ? small : big, batch, k == 2 ? ref_repeats : repeats,
                                  &loss[k])
                      : 0;
    char label[64];
    snprintf(label, sizeof label, "mlp %s step, ms", quick ? "784-128-128-10 b64" : "784-1024-1024-10 b256");
    print_row(label, v, " ms");
    int bad = 0;
    for (int k = 0; k < N_DEV; k++)
        if (dev[k] && !isfinite(loss[k])) {
            fprintf(stderr, "mlp step on %s: loss %g, wrong result\n", col_name[k], loss[k]);
            bad = 1;
        }
    if (bad) return 1;
    if (gf_last_status() != GF_OK) return fail("a workload");
    return 0;
}
