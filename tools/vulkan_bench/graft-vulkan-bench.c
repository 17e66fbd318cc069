/* graft-vulkan-bench — the Vulkan plugin against the CPU device, in one run.
 *
 *   graft-vulkan-bench [--quick] [--repeats N]
 *
 * Workloads (f32, medians of N runs, each ended by a device synchronize):
 *   dispatch   a chain of 1,000 dependent small adds (y = y + x, 256
 *              elements): the cost of one launch, in microseconds per op
 *   matmul     512, 1024, 2048 square: the tiled shader and the naive one
 *              (chosen through the plugin's "vulkan.stats" extension), GFLOP/s
 *   add 16M    elementwise add of two 16M-element tensors, GB/s moved
 * The devices are vulkan:0 and cpu:0 (whichever CPU plugin is loaded first;
 * GRAFT_PLUGINS picks). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <graft.h>
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

static double bench_matmul(gf_device *dev, int64_t n, int repeats) {
    int64_t s[2] = {n, n};
    gf_tensor *a = gf_rand(s, 2, GF_F32, dev), *b = gf_rand(s, 2, GF_F32, dev);
    double t[32];
    gf_tensor *w = gf_matmul(a, b); /* warm-up: pipeline creation */
    gf_tensor_release(w);
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

int main(int argc, char **argv) {
    int repeats = 5;
    bool quick = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = true;
        else if (!strcmp(argv[i], "--repeats") && i + 1 < argc) repeats = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--quick] [--repeats N]\n", argv[0]);
            return 2;
        }
    }
    if (repeats < 1) repeats = 1;
    if (repeats > 32) repeats = 32;
    gf_device *vk = gf_device_find("vulkan:0");
    gf_device *cpu = gf_device_find("cpu:0");
    if (!vk) {
        fprintf(stderr, "graft-vulkan-bench: no vulkan device: %s\n", gf_last_error());
        return 77;
    }
    const graft_vulkan_stats_ext *ext = vulkan_ext();
    if (!ext)
        fprintf(stderr, "graft-vulkan-bench: the vulkan.stats extension is not available: the "
                "naive matmul is not measured\n");
    gf_device_info vi, ci;
    gf_device_get_info(vk, &vi);
    printf("vulkan:0  %s  (%s)\n", vi.name, vi.driver);
    if (cpu && gf_device_get_info(cpu, &ci) == GF_OK)
        printf("cpu:0     %s  (plugin %s)\n", ci.name, gf_device_plugin(cpu));
    printf("medians of %d runs\n\n", repeats);

    int chain = 1000;
    printf("%-34s %14s %14s\n", "workload", "vulkan:0", "cpu:0");
    double dv = bench_dispatch(vk, chain, repeats);
    double dc = cpu ? bench_dispatch(cpu, chain, repeats) : 0;
    printf("%-34s %11.1f us %11.1f us\n", "dispatch: 1000 chained adds, per op", dv, dc);

    int64_t sizes[3] = {512, 1024, 2048};
    int n_sizes = quick ? 1 : 3;
    for (int i = 0; i < n_sizes; i++) {
        int rep = sizes[i] >= 2048 ? (repeats < 3 ? repeats : 3) : repeats;
        double tiled = 0, naive = 0;
        if (ext) ext->set_matmul_mode(2);
        tiled = bench_matmul(vk, sizes[i], rep);
        if (ext) {
            ext->set_matmul_mode(1);
            naive = bench_matmul(vk, sizes[i], rep);
            ext->set_matmul_mode(0);
        }
        /* The reference CPU plugin is slow at 2048: skip it there. */
        bool cpu_ok = cpu && (sizes[i] < 2048 || strcmp(gf_device_plugin(cpu), "reference"));
        double c = cpu_ok ? bench_matmul(cpu, sizes[i], rep) : 0;
        char label[64];
        snprintf(label, sizeof label, "matmul %lld tiled, GFLOP/s", (long long)sizes[i]);
        printf("%-34s %14.2f %14.2f\n", label, tiled, c);
        snprintf(label, sizeof label, "matmul %lld naive, GFLOP/s", (long long)sizes[i]);
        printf("%-34s %14.2f %14s\n", label, naive, "");
    }
    int64_t n16 = quick ? (1 << 20) : (16 << 20);
    double av = bench_add(vk, n16, repeats);
    double ac = cpu ? bench_add(cpu, n16, repeats) : 0;
    printf("%-34s %14.2f %14.2f\n", quick ? "add 1M f32, GB/s" : "add 16M f32, GB/s", av, ac);
    if (gf_last_status() != GF_OK) return fail("a workload");
    return 0;
}
