/* graft-opencl-bench — the OpenCL plugin against the CPU plugins, in one run.
 *
 *   graft-opencl-bench [--quick] [--repeats N] [--warm]
 *
 * --quick: matmul 512 only (without CLBlast, whose first call compiles for
 * half a minute), a 1M add, the MLP step: a smoke test.
 * Workloads (f32; each timed run ends with a device synchronize):
 *   matmul N     N x N @ N x N for N = 512, 1024, 2048: GFLOP/s; on OpenCL
 *                with graft's tiled kernel and with CLBlast (when present),
 *                chosen through GRAFT_OPENCL_GEMM
 *   add 16M      elementwise add of two 16M-element tensors: GB/s moved
 *   mlp step     one training step of a 784-256-256-10 ReLU MLP, batch 256:
 *                forward, cross-entropy, backward, SGD update
 * Devices: opencl:0, the reference plugin (but not for matmul 2048: at its
 * 0.1 GFLOP/s a run takes minutes), and cpu_onednn when loaded.
 *
 * Each row gives the median of the timed runs ("kernel"), and the first
 * run's excess over it ("first run"): on OpenCL that is the kernels' compile
 * time. Unless --warm is given, the bench turns the kernel caches off before
 * the drivers load (GRAFT_OPENCL_CACHE=0, POCL_KERNEL_CACHE=0), so the first
 * run compiles from source as on a machine that never ran graft. Slow devices
 * get fewer runs: a row stops after N runs or 10 s of timed work.
 *
 * Exit status: 0 on success, 1 on a graft error, 2 for a bad command line. */
#define _POSIX_C_SOURCE 200809L /* setenv, clock_gettime */
#include <graft.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int g_repeats = 5;

/* ------------------------------------------------------------ workloads */
/* A workload: setup makes its tensors on dev, run does one step (and leaves
 * the device busy), teardown frees. */
typedef struct workload {
    const char *name;
    double work;      /* flops or bytes per run, for the rate */
    const char *unit; /* "GFLOP/s" or "GB/s" */
    gf_status (*setup)(struct workload *w, gf_device *dev);
    gf_status (*run)(struct workload *w);
    void (*teardown)(struct workload *w);
    int64_t n;
    gf_tensor *t[8];
} workload;

static void free_all(workload *w) {
    for (int i = 0; i < 8; i++) {
        gf_tensor_release(w->t[i]);
        w->t[i] = NULL;
    }
}

static gf_status mm_setup(workload *w, gf_device *dev) {
    int64_t s[2] = {w->n, w->n};
    gf_manual_seed(1);
    w->t[0] = gf_rand(s, 2, GF_F32, dev);
    w->t[1] = gf_rand(s, 2, GF_F32, dev);
    return w->t[0] && w->t[1] ? GF_OK : gf_last_status();
}
static gf_status mm_run(workload *w) {
    gf_tensor *y = gf_matmul(w->t[0], w->t[1]);
    gf_status s = y ? GF_OK : gf_last_status();
    gf_tensor_release(y);
    return s;
}

static gf_status add_setup(workload *w, gf_device *dev) {
    gf_manual_seed(2);
    w->t[0] = gf_rand(&w->n, 1, GF_F32, dev);
    w->t[1] = gf_rand(&w->n, 1, GF_F32, dev);
    return w->t[0] && w->t[1] ? GF_OK : gf_last_status();
}
static gf_status add_run(workload *w) {
    gf_tensor *y = gf_add(w->t[0], w->t[1]);
    gf_status s = y ? GF_OK : gf_last_status();
    gf_tensor_release(y);
    return s;
}

/* MLP: t[0] x [B, 784], t[1] labels [B], t[2..7] w1 b1 w2 b2 w3 b3. */
static const int64_t mlp_dims[4] = {784, 256, 256, 10};
static gf_status mlp_setup(workload *w, gf_device *dev) {
    gf_manual_seed(3);
    int64_t xs[2] = {w->n, mlp_dims[0]};
    w->t[0] = gf_randn(xs, 2, GF_F32, dev);
    gf_tensor *u = gf_rand(&w->n, 1, GF_F32, dev);
    gf_tensor *scaled = u ? gf_mul_scalar(u, 9.999) : NULL;
    w->t[1] = scaled ? gf_to_dtype(scaled, GF_I64) : NULL;
    gf_tensor_release(u);
    gf_tensor_release(scaled);
    for (int l = 0; l < 3; l++) {
        double bound = 1.0 / sqrt((double)mlp_dims[l]);
        int64_t ws[2] = {mlp_dims[l], mlp_dims[l + 1]};
        w->t[2 + 2 * l] = gf_rand_uniform(ws, 2, -bound, bound, GF_F32, dev);
        w->t[3 + 2 * l] = gf_rand_uniform(&ws[1], 1, -bound, bound, GF_F32, dev);
        if (!w->t[2 + 2 * l] || !w->t[3 + 2 * l]) return gf_last_status();
        gf_tensor_set_requires_grad(w->t[2 + 2 * l], true);
        gf_tensor_set_requires_grad(w->t[3 + 2 * l], true);
    }
    return w->t[0] && w->t[1] ? GF_OK : gf_last_status();
}
static gf_status mlp_run(workload *w) {
    gf_scope_begin();
    gf_tensor *h = w->t[0];
    for (int l = 0; l < 3; l++) {
        h = gf_add(gf_matmul(h, w->t[2 + 2 * l]), w->t[3 + 2 * l]);
        if (l < 2) h = gf_relu(h);
    }
    gf_tensor *loss = gf_cross_entropy(h, w->t[1], NULL, GF_REDUCTION_MEAN, -100, 0.0);
    gf_status s = loss ? gf_backward(loss, NULL, NULL) : gf_last_status();
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    for (int i = 2; i < 8 && s == GF_OK; i++) {
        gf_tensor *g = gf_tensor_grad(w->t[i]);
        gf_tensor *step = g ? gf_mul_scalar(g, 0.01) : NULL;
        s = step ? gf_sub_(w->t[i], step) : gf_last_status();
        if (s == GF_OK) s = gf_tensor_set_grad(w->t[i], NULL);
    }
    gf_grad_mode_set(prev);
    gf_scope_end();
    return s;
}

/* ------------------------------------------------------------ timing */
typedef struct result {
    double median, first;
    int runs;
    bool ok;
} result;

static result measure(workload *w, gf_device *dev) {
    result r = {0, 0, 0, false};
    if (w->setup(w, dev) != GF_OK || gf_device_synchronize(dev) != GF_OK) {
        fprintf(stderr, "  %s on %s: setup failed: %s\n", w->name, gf_device_spec(dev),
                gf_last_error());
        free_all(w);
        return r;
    }
    double t0 = now();
    gf_status s = w->run(w);
    if (s == GF_OK) s = gf_device_synchronize(dev);
    double first = now() - t0;
    double times[64];
    int n = 0;
    double spent = 0;
    while (s == GF_OK && n < g_repeats && n < 64 && spent < 10.0) {
        t0 = now();
        s = w->run(w);
        if (s == GF_OK) s = gf_device_synchronize(dev);
        times[n] = now() - t0;
        spent += times[n++];
    }
    if (s != GF_OK) {
        fprintf(stderr, "  %s on %s: %s\n", w->name, gf_device_spec(dev), gf_last_error());
    } else if (n > 0) {
        qsort(times, (size_t)n, sizeof times[0], cmp_double);
        r.median = n % 2 ? times[n / 2] : 0.5 * (times[n / 2 - 1] + times[n / 2]);
        r.first = first - r.median;
        r.runs = n;
        r.ok = true;
    }
    free_all(w);
    return r;
}

static void print_row(const workload *w, const char *label, const result *r) {
    if (!r->ok) {
        printf("%-12s %-24s %12s\n", w->name, label, "failed");
        return;
    }
    printf("%-12s %-24s %9.2f ms %9.2f %-7s %9.3f s %5d\n", w->name, label, r->median * 1e3,
           w->work / r->median * 1e-9, w->unit, r->first > 0 ? r->first : 0.0, r->runs);
    fflush(stdout);
}

/* ------------------------------------------------------------ main */
static gf_device *device_of_plugin(const char *plugin) {
    for (int i = 0; i < gf_device_count(); i++) {
        gf_device *d = gf_device_at(i);
        if (d && !strcmp(gf_device_plugin(d), plugin)) return d;
    }
    return NULL;
}

int main(int argc, char **argv) {
    bool quick = false, warm = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = true;
        else if (!strcmp(argv[i], "--warm")) warm = true;
        else if (!strcmp(argv[i], "--repeats") && i + 1 < argc) g_repeats = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--quick] [--repeats N] [--warm]\n", argv[0]);
            return 2;
        }
    }
    if (g_repeats < 1 || g_repeats > 64) {
        fprintf(stderr, "--repeats must be in [1, 64]\n");
        return 2;
    }
    if (!warm) {
        /* Before any driver is loaded: first runs then compile from source. */
        setenv("GRAFT_OPENCL_CACHE", "0", 1);
        setenv("POCL_KERNEL_CACHE", "0", 1);
    }
    if (gf_init() != GF_OK) {
        fprintf(stderr, "graft-opencl-bench: %s\n", gf_last_error());
        return 1;
    }
    gf_device *ocl = gf_device_find("opencl:0");
    if (!ocl) {
        fprintf(stderr, "graft-opencl-bench: no OpenCL device: %s\n", gf_last_error());
        return 1;
    }
    gf_device *ref = device_of_plugin("reference"), *dnn = device_of_plugin("cpu_onednn");
    gf_device_info info;
    gf_device_get_info(ocl, &info);
    printf("opencl:0 = %s (%s)\n", info.name, info.driver);
    printf("kernel caches: %s\n", warm ? "as configured (--warm)" : "off (first runs compile)");
    printf("%-12s %-24s %12s %17s %11s %5s\n", "workload", "device", "kernel", "rate",
           "first run", "runs");

    workload wl[5];
    int n_wl = 0;
    const int64_t sizes[3] = {512, 1024, 2048};
    for (int i = 0; i < (quick ? 1 : 3); i++) {
        static char names[3][16];
        snprintf(names[i], sizeof names[i], "matmul %lld", (long long)sizes[i]);
        wl[n_wl++] = (workload){names[i], 2.0 * (double)sizes[i] * (double)sizes[i] * (double)sizes[i],
                                "GFLOP/s", mm_setup, mm_run, NULL, sizes[i], {0}};
    }
    wl[n_wl++] = (workload){"add 16M", 3.0 * 4 * (16 << 20), "GB/s", add_setup, add_run, NULL,
                            quick ? 1 << 20 : 16 << 20, {0}};
    if (quick) wl[n_wl - 1].work = 3.0 * 4 * (1 << 20);
    wl[n_wl++] = (workload){"mlp step", 0, "-", mlp_setup, mlp_run, NULL, 256, {0}};
    /* One step: 3 matmuls forward, 5 backward (no grad for the input). */
    for (int l = 0; l < 3; l++)
        wl[n_wl - 1].work += (l ? 3.0 : 2.0) * 2.0 * 256 * (double)mlp_dims[l] * (double)mlp_dims[l + 1];
    wl[n_wl - 1].unit = "GFLOP/s";

    for (int i = 0; i < n_wl; i++) {
        workload *w = &wl[i];
        bool is_mm = !strncmp(w->name, "matmul", 6);
        setenv("GRAFT_OPENCL_GEMM", "graft", 1);
        result r = measure(w, ocl);
        print_row(w, is_mm ? "opencl:0 (graft GEMM)" : "opencl:0", &r);
        if (is_mm && !quick) {
            setenv("GRAFT_OPENCL_GEMM", "clblast", 1);
            r = measure(w, ocl);
            print_row(w, "opencl:0 (CLBlast GEMM)", &r);
            setenv("GRAFT_OPENCL_GEMM", "graft", 1);
        }
        if (dnn) {
            r = measure(w, dnn);
            print_row(w, "cpu_onednn", &r);
        }
        if (ref && is_mm && w->n > 1024) {
            /* About 3 minutes a run (0.1 GFLOP/s): not worth the wait. */
            printf("%-12s %-24s %12s\n", w->name, "reference", "skipped");
        } else if (ref) {
            /* The plain-C oracle is slow on big matmuls: one run. */
            int saved = g_repeats;
            if (is_mm && w->n >= 1024) g_repeats = 1;
            r = measure(w, ref);
            g_repeats = saved;
            print_row(w, "reference", &r);
        }
    }
    return 0;
}
