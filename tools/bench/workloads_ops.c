/* SPDX-License-Identifier: BSD-3-Clause */
/* workloads_ops.c — single-op workloads: matmul (f32, f64, bf16 and c64),
 * elementwise (add, mul, exp; mul in c64), permutes made contiguous, reductions (sum over the last dim and over all), softmax,
 * conv2d and its two gradient kernels, batch_norm, layer_norm, max_pool2d.
 *
 * Each one times three things separately on one device:
 *   - h2d: writing its inputs from host memory into device tensors
 *     (gf_tensor_from_host), each run ending with gf_device_synchronize;
 *   - the kernel: the op on inputs already on the device, with a synchronize;
 *   - d2h: reading the output back (gf_tensor_to_host).
 * Inputs are generated on the host from a fixed formula, so the host can
 * recompute sampled outputs in double precision: a wrong result fails the
 * row (and the exit status) instead of being timed. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "pk_half.h"

/* splitmix64 of (i, salt): decorrelated values without state, the same on
 * every run and device; 24 bits make the result exact in f32. */
float bench_value(uint64_t i, uint32_t salt, float lo, float hi) {
    uint64_t z = i * 0x9E3779B97F4A7C15ull + (uint64_t)salt * 0xD1B54A32D192ED03ull;
    z ^= z >> 30;
    z *= 0xBF58476D1CE4E5B9ull;
    z ^= z >> 27;
    z *= 0x94D049BB133111EBull;
    z ^= z >> 31;
    return lo + (hi - lo) * (float)((double)(z >> 40) * 0x1p-24);
}

float *bench_host_values(int64_t n, uint32_t salt, float lo, float hi) {
    float *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    if (v)
        for (int64_t i = 0; i < n; i++) v[i] = bench_value((uint64_t)i, salt, lo, hi);
    return v;
}

/* "16M", "64K" or the plain count. */
static const char *fmt_count(int64_t n, char *buf, size_t len) {
    if (n >= (1 << 20) && n % (1 << 20) == 0) snprintf(buf, len, "%lldM", (long long)(n >> 20));
    else if (n >= 1024 && n % 1024 == 0) snprintf(buf, len, "%lldK", (long long)(n >> 10));
    else snprintf(buf, len, "%lld", (long long)n);
    return buf;
}

/* ------------------------------------------------------------ the common frame */
#define MAX_IN 3

typedef struct op_case op_case;
struct op_case {
    bench_result *r;
    gf_device *dev;
    int n_in;
    int64_t in_sizes[MAX_IN][4];
    int in_rank[MAX_IN];
    float *host_in[MAX_IN];
    gf_tensor *in[MAX_IN];
    gf_tensor *out;
    float *host_out;
    size_t out_bytes;
    /* GF_F32 (0 is taken as f32), or GF_F64: the inputs are host_in widened
     * (host_in64), the output is read into host_out64 and narrowed into
     * host_out for the check; or GF_C64: host_in and host_out hold the
     * parts (re, im) of each element, twice the floats; or
     * GF_BF16: the inputs are host_in rounded to bf16 (host_in16; host_in is
     * overwritten with the rounded values, which the check then uses), the
     * output is read into host_out16 and widened into host_out. */
    gf_dtype dtype;
    uint16_t *host_in16[MAX_IN];
    uint16_t *host_out16;
    double *host_in64[MAX_IN];
    double *host_out64;
    const char *family; /* for the plugin's variants */
    int op_arg; /* a dim, for the ops that take one */
    gf_tensor *(*op)(const op_case *c);
    /* 0, or -1 after bench_result_wrong. */
    int (*check)(op_case *c);
};

static bool is_f64(const op_case *c) { return c->dtype == GF_F64; }
static bool is_bf16(const op_case *c) { return c->dtype == GF_BF16; }
static size_t elem_bytes(const op_case *c) {
    return c->dtype == GF_F64 || c->dtype == GF_C64 ? 8 : is_bf16(c) ? 2 : 4;
}

static int64_t in_numel(const op_case *c, int i) {
    int64_t n = 1;
    for (int d = 0; d < c->in_rank[i]; d++) n *= c->in_sizes[i][d];
    return n;
}

static size_t in_bytes(const op_case *c, int i) {
    return (size_t)in_numel(c, i) * elem_bytes(c);
}

static int step_upload(void *state) {
    op_case *c = state;
    for (int i = 0; i < c->n_in; i++) {
        const void *src = is_f64(c)    ? (const void *)c->host_in64[i]
                          : is_bf16(c) ? (const void *)c->host_in16[i]
                                       : (const void *)c->host_in[i];
        if (gf_tensor_from_host(c->in[i], src, in_bytes(c, i)) != GF_OK) return -1;
    }
    return 0;
}

static int step_kernel(void *state) {
    op_case *c = state;
    gf_tensor_release(c->out);
    c->out = c->op(c);
    return c->out ? 0 : -1;
}

static int step_download(void *state) {
    op_case *c = state;
    if (is_bf16(c)) {
        if (gf_tensor_to_host(c->out, c->host_out16, c->out_bytes) != GF_OK) return -1;
        for (size_t i = 0; i < c->out_bytes / 2; i++) c->host_out[i] = pk_bf16_to_f32(c->host_out16[i]);
        return 0;
    }
    if (!is_f64(c)) return gf_tensor_to_host(c->out, c->host_out, c->out_bytes) == GF_OK ? 0 : -1;
    if (gf_tensor_to_host(c->out, c->host_out64, c->out_bytes) != GF_OK) return -1;
    for (size_t i = 0; i < c->out_bytes / sizeof(double); i++) c->host_out[i] = (float)c->host_out64[i];
    return 0;
}

/* The output of the last kernel run into host_out (no timing), then the check. */
static void download_and_check(op_case *c) {
    if (step_download(c) != 0) bench_result_graft_error(c->r, "reading the output");
    else c->check(c);
}

/* The variants the device's plugin offers for the case's family: each one's
 * kernel time in a row of its own, and its result checked. */
static void run_variants(bench_run *run, op_case *c) {
    if (run->opts.no_variants || !c->family) return;
    bench_variant v[4];
    int n = bench_variants(c->dev, c->family, v, 4);
    bench_result *base = c->r;
    for (int k = 0; k < n; k++) {
        bench_result *vr = bench_result_variant(run, base, v[k].label);
        if (!vr) break;
        c->r = vr;
        bench_progress(run, v[k].label);
        bench_variant_select(&v[k], true);
        if (bench_measure(run, c->dev, step_kernel, c, 1, &vr->time) != 0)
            bench_result_graft_error(vr, "the kernel");
        else download_and_check(c);
        bench_variant_select(&v[k], false);
    }
    c->r = base;
}

/* Runs the three measurements and the check; fills c->r, and a row per
 * variant of the plugin's. Frees everything. */
static void run_case(bench_run *run, op_case *c) {
    bench_result *r = c->r;
    gf_dtype dt = c->dtype == GF_F64 || c->dtype == GF_C64 || c->dtype == GF_BF16 ? c->dtype : GF_F32;
    for (int i = 0; i < c->n_in; i++) {
        if (!c->host_in[i]) {
            bench_result_wrong(r, "out of host memory for the inputs");
            goto done;
        }
        if (is_f64(c)) {
            int64_t n = in_numel(c, i);
            c->host_in64[i] = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
            if (!c->host_in64[i]) {
                bench_result_wrong(r, "out of host memory for the inputs");
                goto done;
            }
            for (int64_t k = 0; k < n; k++) c->host_in64[i][k] = c->host_in[i][k];
        }
        if (is_bf16(c)) {
            int64_t n = in_numel(c, i);
            c->host_in16[i] = malloc((size_t)(n > 0 ? n : 1) * sizeof(uint16_t));
            if (!c->host_in16[i]) {
                bench_result_wrong(r, "out of host memory for the inputs");
                goto done;
            }
            for (int64_t k = 0; k < n; k++) {
                c->host_in16[i][k] = pk_f32_to_bf16(c->host_in[i][k]);
                c->host_in[i][k] = pk_bf16_to_f32(c->host_in16[i][k]);
            }
        }
        c->in[i] = gf_empty(c->in_sizes[i], c->in_rank[i], dt, c->dev);
        if (!c->in[i]) {
            bench_result_graft_error(r, "allocating the inputs");
            goto done;
        }
        r->h2d_bytes += (double)in_bytes(c, i);
    }
    r->has_transfer = true;
    bench_progress(run, "inputs to the device");
    if (bench_measure(run, c->dev, step_upload, c, 1, &r->h2d) != 0) {
        bench_result_graft_error(r, "writing the inputs");
        goto done;
    }
    bench_progress(run, "kernel");
    if (bench_measure(run, c->dev, step_kernel, c, 1, &r->time) != 0) {
        bench_result_graft_error(r, "the kernel");
        goto done;
    }
    c->out_bytes = (size_t)gf_tensor_numel(c->out) * elem_bytes(c);
    r->d2h_bytes = (double)c->out_bytes;
    c->host_out = malloc(c->out_bytes ? (is_bf16(c) ? 2 * c->out_bytes : c->out_bytes) : 1);
    if (is_f64(c)) c->host_out64 = malloc(c->out_bytes ? c->out_bytes : 1);
    if (is_bf16(c)) c->host_out16 = malloc(c->out_bytes ? c->out_bytes : 1);
    if (!c->host_out || (is_f64(c) && !c->host_out64) || (is_bf16(c) && !c->host_out16)) {
        bench_result_wrong(r, "out of host memory for the output");
        goto done;
    }
    bench_progress(run, "output to the host");
    if (bench_measure(run, c->dev, step_download, c, 1, &r->d2h) != 0) {
        bench_result_graft_error(r, "reading the output");
        goto done;
    }
    if (c->check(c) == 0) run_variants(run, c);
done:
    for (int i = 0; i < c->n_in; i++) {
        gf_tensor_release(c->in[i]);
        free(c->host_in[i]);
        free(c->host_in64[i]);
        free(c->host_in16[i]);
    }
    free(c->host_out16);
    gf_tensor_release(c->out);
    free(c->host_out);
    free(c->host_out64);
}

/* |got - want| within atol + rtol |want| (NaN fails). */
static bool close_to(double got, double want, double atol, double rtol) {
    return fabs(got - want) <= atol + rtol * fabs(want);
}

/* ------------------------------------------------------------ matmul */
static gf_tensor *op_matmul(const op_case *c) { return gf_matmul(c->in[0], c->in[1]); }

/* Sampled entries against a double-precision dot product; the tolerance is
 * relative to sum |a_ik b_kj|, which bounds any f32 summation order. */
static int check_matmul(op_case *c) {
    int64_t m = c->in_sizes[0][0], k = c->in_sizes[0][1], n = c->in_sizes[1][1];
    const float *a = c->host_in[0], *b = c->host_in[1];
    for (int s = 0; s < 64; s++) {
        int64_t i = (s * 37 + 3) % m, j = (s * 101 + 7) % n;
        double want = 0, mag = 0;
        for (int64_t q = 0; q < k; q++) {
            double t = (double)a[i * k + q] * b[q * n + j];
            want += t;
            mag += fabs(t);
        }
        double got = c->host_out[i * n + j];
        /* bf16 output: one rounding of the f32 sum, 2^-9 relative */
        double rtol = is_bf16(c) ? 0x1p-8 : 0;
        if (!close_to(got, want, 1e-4 * mag + 1e-6, rtol)) {
            bench_result_wrong(c->r, "wrong result: y[%lld][%lld] = %.7g, expected %.7g",
                               (long long)i, (long long)j, got, want);
            return -1;
        }
    }
    return 0;
}

static void matmul(bench_run *run, int device, int64_t n, bool f64) {
    char name[40], detail[112];
    snprintf(name, sizeof name, "%s %lld", f64 ? "matmul64" : "matmul", (long long)n);
    snprintf(detail, sizeof detail, "%s [%lld,%lld] @ [%lld,%lld]", f64 ? "f64" : "f32",
             (long long)n, (long long)n, (long long)n, (long long)n);
    op_case c = {.r = bench_result_add(run, device, name, detail),
                 .dev = run->devices[device].dev,
                 .n_in = 2,
                 .in_sizes = {{n, n}, {n, n}},
                 .in_rank = {2, 2},
                 .op = op_matmul,
                 .check = check_matmul,
                 .dtype = f64 ? GF_F64 : GF_F32,
                 .family = f64 ? "matmul64" : "matmul"};
    if (!c.r) return;
    c.r->work = 2.0 * (double)n * (double)n * (double)n;
    c.r->rate_unit = "GFLOP/s";
    c.r->peak_share = f64 ? 0.5 : 1.0;
    c.host_in[0] = bench_host_values(n * n, 1, -1, 1);
    c.host_in[1] = bench_host_values(n * n, 2, -1, 1);
    run_case(run, &c);
}

void bench_matmul(bench_run *run, int device, int64_t n) { matmul(run, device, n, false); }
void bench_matmul64(bench_run *run, int device, int64_t n) { matmul(run, device, n, true); }

/* bf16 [n, n] @ [n, n] -> bf16 (products summed in f32 by the device): the
 * same inputs as matmul's, rounded to bf16. Compare with "matmul n" of the
 * same run for the speed-up over f32. */
void bench_matmul_bf16(bench_run *run, int device, int64_t n) {
    char name[40], detail[112];
    snprintf(name, sizeof name, "matmul_bf16 %lld", (long long)n);
    snprintf(detail, sizeof detail, "bf16 [%lld,%lld] @ [%lld,%lld], f32 accumulation",
             (long long)n, (long long)n, (long long)n, (long long)n);
    op_case c = {.r = bench_result_add(run, device, name, detail),
                 .dev = run->devices[device].dev,
                 .n_in = 2,
                 .in_sizes = {{n, n}, {n, n}},
                 .in_rank = {2, 2},
                 .op = op_matmul,
                 .check = check_matmul,
                 .dtype = GF_BF16,
                 .family = "matmul_bf16"};
    if (!c.r) return;
    c.r->work = 2.0 * (double)n * (double)n * (double)n;
    c.r->rate_unit = "GFLOP/s";
    c.r->peak_bf16 = true;
    c.host_in[0] = bench_host_values(n * n, 1, -1, 1);
    c.host_in[1] = bench_host_values(n * n, 2, -1, 1);
    run_case(run, &c);
}

/* c64: sampled entries against a double complex dot product, the tolerance
 * relative to the sum of |a_ik| |b_kj|. */
static int check_cmatmul(op_case *c) {
    int64_t m = c->in_sizes[0][0], k = c->in_sizes[0][1], n = c->in_sizes[1][1];
    const float *a = c->host_in[0], *b = c->host_in[1];
    for (int s = 0; s < 64; s++) {
        int64_t i = (s * 37 + 3) % m, j = (s * 101 + 7) % n;
        double re = 0, im = 0, mag = 0;
        for (int64_t q = 0; q < k; q++) {
            double ar = a[2 * (i * k + q)], ai = a[2 * (i * k + q) + 1];
            double br = b[2 * (q * n + j)], bi = b[2 * (q * n + j) + 1];
            re += ar * br - ai * bi;
            im += ar * bi + ai * br;
            mag += hypot(ar, ai) * hypot(br, bi);
        }
        double gr = c->host_out[2 * (i * n + j)], gi = c->host_out[2 * (i * n + j) + 1];
        if (!close_to(gr, re, 1e-4 * mag + 1e-6, 0) || !close_to(gi, im, 1e-4 * mag + 1e-6, 0)) {
            bench_result_wrong(c->r, "wrong result: y[%lld][%lld] = %.7g%+.7gi, expected %.7g%+.7gi",
                               (long long)i, (long long)j, gr, gi, re, im);
            return -1;
        }
    }
    return 0;
}

/* c64 [n, n] @ [n, n]: rated in real flops, 8n^3 (each complex multiply-add
 * is four real multiplies and four adds), so the row compares with matmul's
 * 2n^3 directly. */
void bench_cmatmul(bench_run *run, int device, int64_t n) {
    char name[40], detail[112];
    snprintf(name, sizeof name, "cmatmul %lld", (long long)n);
    snprintf(detail, sizeof detail, "c64 [%lld,%lld] @ [%lld,%lld], 8n^3 real flops",
             (long long)n, (long long)n, (long long)n, (long long)n);
    op_case c = {.r = bench_result_add(run, device, name, detail),
                 .dev = run->devices[device].dev,
                 .n_in = 2,
                 .in_sizes = {{n, n}, {n, n}},
                 .in_rank = {2, 2},
                 .op = op_matmul,
                 .check = check_cmatmul,
                 .dtype = GF_C64,
                 .family = "cmatmul"};
    if (!c.r) return;
    c.r->work = 8.0 * (double)n * (double)n * (double)n;
    c.r->rate_unit = "GFLOP/s";
    c.r->peak_share = 1.0;
    c.host_in[0] = bench_host_values(2 * n * n, 11, -1, 1);
    c.host_in[1] = bench_host_values(2 * n * n, 12, -1, 1);
    run_case(run, &c);
}

/* ------------------------------------------------------------ elementwise */
static gf_tensor *op_add(const op_case *c) { return gf_add(c->in[0], c->in[1]); }
static gf_tensor *op_mul(const op_case *c) { return gf_mul(c->in[0], c->in[1]); }
static gf_tensor *op_exp(const op_case *c) { return gf_exp(c->in[0]); }

/* Every 61st element (a stride prime to the vector widths, so every lane and
 * the tail are sampled) against the host's value. */
static int check_elementwise(op_case *c, int kind) {
    int64_t n = c->in_sizes[0][0];
    const float *a = c->host_in[0], *b = c->host_in[1];
    for (int64_t i = 0; i < n; i = i == n - 1 ? n : i + 61 < n ? i + 61 : n - 1) {
        double want, rtol = 1e-6;
        if (kind == 0) want = (double)(a[i] + b[i]);
        else if (kind == 1) want = (double)(a[i] * b[i]);
        else {
            want = exp((double)a[i]);
            rtol = 1e-5; /* device exp may be a few ulp off */
        }
        double got = c->host_out[i];
        if (!close_to(got, want, 1e-7, rtol)) {
            bench_result_wrong(c->r, "wrong result: y[%lld] = %.9g, expected %.9g", (long long)i,
                               got, want);
            return -1;
        }
    }
    return 0;
}
static int check_add(op_case *c) { return check_elementwise(c, 0); }
static int check_mul(op_case *c) { return check_elementwise(c, 1); }
static int check_exp(op_case *c) { return check_elementwise(c, 2); }

static void elementwise(bench_run *run, int device, int64_t n, int kind) {
    static const char *names[] = {"add", "mul", "exp"};
    char name[40], detail[112], cnt[24];
    snprintf(name, sizeof name, "%s %s", names[kind], fmt_count(n, cnt, sizeof cnt));
    snprintf(detail, sizeof detail, kind == 2 ? "f32 [%lld]" : "f32 [%lld] and [%lld]",
             (long long)n, (long long)n);
    op_case c = {.r = bench_result_add(run, device, name, detail),
                 .dev = run->devices[device].dev,
                 .n_in = kind == 2 ? 1 : 2,
                 .in_sizes = {{n}, {n}},
                 .in_rank = {1, 1}};
    if (!c.r) return;
    c.op = kind == 0 ? op_add : kind == 1 ? op_mul : op_exp;
    c.check = kind == 0 ? check_add : kind == 1 ? check_mul : check_exp;
    /* Bytes a kernel must move at least: each input read once, y written once. */
    c.r->work = (double)(c.n_in + 1) * (double)n * sizeof(float);
    c.r->rate_unit = "GB/s";
    c.host_in[0] = bench_host_values(n, 3, -1, 1);
    if (c.n_in == 2) c.host_in[1] = bench_host_values(n, 4, -1, 1);
    run_case(run, &c);
}

/* c64 products: every 61st element and the last against the host's double
 * complex product (rounded to f32 once per part on the device). */
static int check_cmul(op_case *c) {
    int64_t n = c->in_sizes[0][0];
    const float *a = c->host_in[0], *b = c->host_in[1];
    for (int64_t i = 0; i < n; i = i == n - 1 ? n : i + 61 < n ? i + 61 : n - 1) {
        double ar = a[2 * i], ai = a[2 * i + 1], br = b[2 * i], bi = b[2 * i + 1];
        double re = ar * br - ai * bi, im = ar * bi + ai * br;
        double gr = c->host_out[2 * i], gi = c->host_out[2 * i + 1];
        if (!close_to(gr, re, 1e-7, 1e-6) || !close_to(gi, im, 1e-7, 1e-6)) {
            bench_result_wrong(c->r, "wrong result: y[%lld] = %.9g%+.9gi, expected %.9g%+.9gi",
                               (long long)i, gr, gi, re, im);
            return -1;
        }
    }
    return 0;
}

/* gf_mul of two c64 vectors: GB/s counts 3 x 8 bytes per element, so the
 * row compares with add's f32 3 x 4 bytes per element. */
void bench_cmul(bench_run *run, int device, int64_t n) {
    char name[40], detail[112], cnt[24];
    snprintf(name, sizeof name, "cmul %s", fmt_count(n, cnt, sizeof cnt));
    snprintf(detail, sizeof detail, "c64 [%lld] and [%lld]", (long long)n, (long long)n);
    op_case c = {.r = bench_result_add(run, device, name, detail),
                 .dev = run->devices[device].dev,
                 .n_in = 2,
                 .in_sizes = {{n}, {n}},
                 .in_rank = {1, 1},
                 .op = op_mul,
                 .check = check_cmul,
                 .dtype = GF_C64};
    if (!c.r) return;
    c.r->work = 3.0 * (double)n * 8.0;
    c.r->rate_unit = "GB/s";
    c.host_in[0] = bench_host_values(2 * n, 13, -1, 1);
    c.host_in[1] = bench_host_values(2 * n, 14, -1, 1);
    run_case(run, &c);
}

void bench_add(bench_run *run, int device, int64_t n) { elementwise(run, device, n, 0); }
void bench_mul(bench_run *run, int device, int64_t n) { elementwise(run, device, n, 1); }
void bench_exp(bench_run *run, int device, int64_t n) { elementwise(run, device, n, 2); }

/* ------------------------------------------------------------ permutes */
/* gf_contiguous of a permuted view: the strided copy every backend runs for
 * attention heads and transposes. Each case: the input's shape per size n,
 * and the permutation. */
typedef struct permute_case {
    const char *name;
    int rank;
    int64_t sizes[4]; /* a 0 is replaced by n */
    int perm[4];
} permute_case;
static const permute_case PERMUTES[] = {
    {"permute heads", 4, {0, 8, 4, 12}, {0, 2, 1, 3}}, /* [B, T, H, D] -> [B, H, T, D] */
    {"permute rows", 3, {0, 64, 256}, {0, 2, 1}},      /* a batch of 64 x 256 transposes */
    {"transpose", 2, {0, 0}, {1, 0}},
};

static gf_tensor *op_permute(const op_case *c) {
    const permute_case *p = &PERMUTES[c->op_arg];
    gf_tensor *v = gf_permute(c->in[0], p->perm, p->rank);
    gf_tensor *y = v ? gf_contiguous(v) : NULL;
    gf_tensor_release(v);
    return y;
}

/* Every element: the copy is exact. */
static int check_permute(op_case *c) {
    const permute_case *p = &PERMUTES[c->op_arg];
    int rank = p->rank;
    int64_t out[4], ix[4] = {0, 0, 0, 0}, st[4], numel = in_numel(c, 0);
    for (int d = rank - 1, s = 1; d >= 0; d--) {
        st[d] = s;
        s *= (int)c->in_sizes[0][d];
    }
    for (int d = 0; d < rank; d++) out[d] = c->in_sizes[0][p->perm[d]];
    for (int64_t i = 0; i < numel; i++) {
        int64_t src = 0;
        for (int d = 0; d < rank; d++) src += ix[d] * st[p->perm[d]];
        if (c->host_out[i] != c->host_in[0][src]) {
            bench_result_wrong(c->r, "wrong result: y[%lld] = %.7g, expected x[%lld] = %.7g",
                               (long long)i, c->host_out[i], (long long)src, c->host_in[0][src]);
            return -1;
        }
        for (int d = rank - 1; d >= 0 && ++ix[d] == out[d]; d--) ix[d] = 0;
    }
    return 0;
}

static void permute(bench_run *run, int device, int64_t n, int which) {
    const permute_case *p = &PERMUTES[which];
    op_case c = {.dev = run->devices[device].dev, .n_in = 1, .in_rank = {p->rank},
                 .op = op_permute, .check = check_permute, .op_arg = which};
    char name[40], detail[112];
    int len = snprintf(detail, sizeof detail, "f32 [");
    for (int d = 0; d < p->rank; d++) {
        c.in_sizes[0][d] = p->sizes[d] ? p->sizes[d] : n;
        len += snprintf(detail + len, sizeof detail - (size_t)len, "%s%lld", d ? ", " : "",
                        (long long)c.in_sizes[0][d]);
    }
    len += snprintf(detail + len, sizeof detail - (size_t)len, "] permuted (");
    for (int d = 0; d < p->rank; d++)
        len += snprintf(detail + len, sizeof detail - (size_t)len, "%s%d", d ? ", " : "", p->perm[d]);
    snprintf(detail + len, sizeof detail - (size_t)len, "), made contiguous");
    snprintf(name, sizeof name, "%s %lld", p->name, (long long)n);
    c.r = bench_result_add(run, device, name, detail);
    if (!c.r) return;
    int64_t numel = in_numel(&c, 0);
    c.r->work = 2.0 * (double)numel * sizeof(float); /* read once, written once */
    c.r->rate_unit = "GB/s";
    c.host_in[0] = bench_host_values(numel, 17, -1, 1);
    run_case(run, &c);
}
void bench_permute_heads(bench_run *run, int device, int64_t n) { permute(run, device, n, 0); }
void bench_permute_rows(bench_run *run, int device, int64_t n) { permute(run, device, n, 1); }
void bench_transpose(bench_run *run, int device, int64_t n) { permute(run, device, n, 2); }

/* ------------------------------------------------------------ reductions */
static gf_tensor *op_sum_lastdim(const op_case *c) {
    return gf_sum(c->in[0], (const int[]){-1}, 1, false);
}
static gf_tensor *op_sum_all(const op_case *c) { return gf_sum(c->in[0], NULL, 0, false); }

/* Sums of values in [0, 1): every term positive, so a relative tolerance of
 * 1e-4 (rows) or 1e-3 (16M elements) admits any reasonable summation order
 * and still rejects a dropped or doubled block. */
static double host_sum(const float *v, int64_t n) {
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += v[i];
    return s;
}

static int check_sum_lastdim(op_case *c) {
    int64_t rows = c->in_sizes[0][0], cols = c->in_sizes[0][1];
    for (int64_t i = 0; i < rows; i += (rows > 64 ? rows / 64 : 1)) {
        double want = host_sum(c->host_in[0] + i * cols, cols), got = c->host_out[i];
        if (!close_to(got, want, 1e-6, 1e-4)) {
            bench_result_wrong(c->r, "wrong result: row %lld sums to %.9g, expected %.9g",
                               (long long)i, got, want);
            return -1;
        }
    }
    return 0;
}

static int check_sum_all(op_case *c) {
    int64_t n = c->in_sizes[0][0] * c->in_sizes[0][1];
    double want = host_sum(c->host_in[0], n), got = c->host_out[0];
    if (!close_to(got, want, 1e-6, 1e-3)) {
        bench_result_wrong(c->r, "wrong result: the sum is %.9g, expected %.9g", got, want);
        return -1;
    }
    return 0;
}

static void reduction(bench_run *run, int device, int64_t side, bool all) {
    char name[40], detail[112], cnt[24];
    snprintf(name, sizeof name, "sum %s %s", all ? "all" : "lastdim",
             fmt_count(side * side, cnt, sizeof cnt));
    snprintf(detail, sizeof detail, "f32 [%lld,%lld] -> %s", (long long)side, (long long)side,
             all ? "[] (every element)" : "[rows] (over the last dim)");
    op_case c = {.r = bench_result_add(run, device, name, detail),
                 .dev = run->devices[device].dev,
                 .n_in = 1,
                 .in_sizes = {{side, side}},
                 .in_rank = {2},
                 .op = all ? op_sum_all : op_sum_lastdim,
                 .check = all ? check_sum_all : check_sum_lastdim};
    if (!c.r) return;
    c.r->work = (double)side * (double)side * sizeof(float);
    c.r->rate_unit = "GB/s";
    c.host_in[0] = bench_host_values(side * side, 5, 0, 1);
    run_case(run, &c);
}

void bench_sum_lastdim(bench_run *run, int device, int64_t side) {
    reduction(run, device, side, false);
}
void bench_sum_all(bench_run *run, int device, int64_t side) { reduction(run, device, side, true); }

/* ------------------------------------------------------------ softmax */
#define SOFTMAX_COLS 1024

static gf_tensor *op_softmax(const op_case *c) { return gf_softmax(c->in[0], -1); }

static int check_softmax(op_case *c) {
    int64_t rows = c->in_sizes[0][0], cols = c->in_sizes[0][1];
    for (int64_t i = 0; i < rows; i += (rows > 32 ? rows / 32 : 1)) {
        const float *x = c->host_in[0] + i * cols;
        double mx = x[0], z = 0;
        for (int64_t j = 1; j < cols; j++) mx = x[j] > mx ? x[j] : mx;
        for (int64_t j = 0; j < cols; j++) z += exp(x[j] - mx);
        for (int64_t j = 0; j < cols; j++) {
            double want = exp(x[j] - mx) / z, got = c->host_out[i * cols + j];
            if (!close_to(got, want, 1e-7, 1e-4)) {
                bench_result_wrong(c->r, "wrong result: y[%lld][%lld] = %.7g, expected %.7g",
                                   (long long)i, (long long)j, got, want);
                return -1;
            }
        }
    }
    return 0;
}

void bench_softmax(bench_run *run, int device, int64_t rows) {
    char name[40], detail[112];
    snprintf(name, sizeof name, "softmax %lldx%d", (long long)rows, SOFTMAX_COLS);
    snprintf(detail, sizeof detail, "f32 [%lld,%d], over the last dim", (long long)rows,
             SOFTMAX_COLS);
    op_case c = {.r = bench_result_add(run, device, name, detail),
                 .dev = run->devices[device].dev,
                 .n_in = 1,
                 .in_sizes = {{rows, SOFTMAX_COLS}},
                 .in_rank = {2},
                 .op = op_softmax,
                 .check = check_softmax};
    if (!c.r) return;
    c.r->work = 2.0 * (double)rows * SOFTMAX_COLS * sizeof(float);
    c.r->rate_unit = "GB/s";
    c.host_in[0] = bench_host_values(rows * SOFTMAX_COLS, 6, -4, 4);
    run_case(run, &c);
}

/* ------------------------------------------------------------ conv2d */
/* A middle layer of a small CNN: 16 -> 32 channels, 3x3, padding 1, 28x28. */
enum { CONV_CI = 16, CONV_CO = 32, CONV_HW = 28, CONV_K = 3 };

static gf_tensor *op_conv2d(const op_case *c) {
    const gf_conv2d_opts o = {.padding = {1, 1}};
    return gf_conv2d(c->in[0], c->in[1], c->in[2], &o);
}

static int check_conv2d(op_case *c) {
    int64_t nb = c->in_sizes[0][0];
    const float *x = c->host_in[0], *w = c->host_in[1], *b = c->host_in[2];
    for (int s = 0; s < 64; s++) {
        int64_t n = s % nb, co = (s * 7 + 1) % CONV_CO;
        int64_t oh = (s * 13) % CONV_HW, ow = (s * 29 + 5) % CONV_HW;
        if (s < 4) oh = s & 1 ? CONV_HW - 1 : 0; /* the padded border too */
        double want = b[co], mag = fabs(b[co]);
        for (int ci = 0; ci < CONV_CI; ci++)
            for (int kh = 0; kh < CONV_K; kh++)
                for (int kw = 0; kw < CONV_K; kw++) {
                    int64_t ih = oh + kh - 1, iw = ow + kw - 1;
                    if (ih < 0 || iw < 0 || ih >= CONV_HW || iw >= CONV_HW) continue;
                    double t = (double)x[((n * CONV_CI + ci) * CONV_HW + ih) * CONV_HW + iw] *
                               w[((co * CONV_CI + ci) * CONV_K + kh) * CONV_K + kw];
                    want += t;
                    mag += fabs(t);
                }
        double got = c->host_out[((n * CONV_CO + co) * CONV_HW + oh) * CONV_HW + ow];
        double rtol = is_bf16(c) ? 0x1p-8 : 0; /* bf16: one rounding of the f32 sum */
        if (!close_to(got, want, 1e-4 * mag + 1e-6, rtol)) {
            bench_result_wrong(c->r, "wrong result: y[%lld][%lld][%lld][%lld] = %.7g, expected "
                               "%.7g", (long long)n, (long long)co, (long long)oh, (long long)ow,
                               got, want);
            return -1;
        }
    }
    return 0;
}

static void conv2d(bench_run *run, int device, int64_t batch, gf_dtype dt) {
    char name[40], detail[112];
    bool bf = dt == GF_BF16;
    snprintf(name, sizeof name, "%s b%lld", bf ? "conv2d_bf16" : "conv2d", (long long)batch);
    snprintf(detail, sizeof detail, "%s x [%lld,%d,%d,%d] w [%d,%d,%d,%d] + bias, padding 1",
             bf ? "bf16" : "f32", (long long)batch, CONV_CI, CONV_HW, CONV_HW, CONV_CO, CONV_CI,
             CONV_K, CONV_K);
    op_case c = {.r = bench_result_add(run, device, name, detail),
                 .dev = run->devices[device].dev,
                 .n_in = 3,
                 .in_sizes = {{batch, CONV_CI, CONV_HW, CONV_HW},
                              {CONV_CO, CONV_CI, CONV_K, CONV_K},
                              {CONV_CO}},
                 .in_rank = {4, 4, 1},
                 .op = op_conv2d,
                 .check = check_conv2d,
                 .dtype = dt};
    if (!c.r) return;
    c.r->work = 2.0 * (double)batch * CONV_CO * CONV_HW * CONV_HW * CONV_CI * CONV_K * CONV_K;
    c.r->rate_unit = "GFLOP/s";
    c.r->peak_bf16 = bf;
    c.host_in[0] = bench_host_values(batch * CONV_CI * CONV_HW * CONV_HW, 7, -1, 1);
    c.host_in[1] = bench_host_values(CONV_CO * CONV_CI * CONV_K * CONV_K, 8, -0.3f, 0.3f);
    c.host_in[2] = bench_host_values(CONV_CO, 9, -0.1f, 0.1f);
    run_case(run, &c);
}

void bench_conv2d(bench_run *run, int device, int64_t batch) { conv2d(run, device, batch, GF_F32); }
/* The same layer in bf16 (inputs rounded, a bf16 result, f32 sums):
 * compare with "conv2d b<N>" of the same run. */
void bench_conv2d_bf16(bench_run *run, int device, int64_t batch) {
    conv2d(run, device, batch, GF_BF16);
}

/* The two gradient kernels of that layer, as backward runs them: grad_x from
 * grad_y [N, 32, 28, 28] and w, grad_w from grad_y and x. Each does the
 * forward's multiply-adds, so GFLOP/s counts the same 2·N·Co·H·W·Ci·9. */
static const gf_conv2d_opts conv_same = {.padding = {1, 1}};

static gf_tensor *op_conv2d_bwd_input(const op_case *c) {
    const int64_t xs[4] = {c->in_sizes[0][0], CONV_CI, CONV_HW, CONV_HW};
    return gf_conv2d_backward_input(c->in[0], c->in[1], xs, &conv_same);
}

static gf_tensor *op_conv2d_bwd_weight(const op_case *c) {
    const int64_t ws[4] = {CONV_CO, CONV_CI, CONV_K, CONV_K};
    return gf_conv2d_backward_weight(c->in[0], c->in[1], ws, &conv_same);
}

/* grad_x[n][ci][ih][iw] = sum over co, kh, kw of gy[n][co][ih-kh+1][iw-kw+1] w[co][ci][kh][kw]. */
static int check_conv2d_bwd_input(op_case *c) {
    int64_t nb = c->in_sizes[0][0];
    const float *gy = c->host_in[0], *w = c->host_in[1];
    for (int s = 0; s < 64; s++) {
        int64_t n = s % nb, ci = (s * 5 + 3) % CONV_CI;
        int64_t ih = (s * 13) % CONV_HW, iw = (s * 29 + 5) % CONV_HW;
        if (s < 4) ih = s & 1 ? CONV_HW - 1 : 0;
        double want = 0, mag = 0;
        for (int co = 0; co < CONV_CO; co++)
            for (int kh = 0; kh < CONV_K; kh++)
                for (int kw = 0; kw < CONV_K; kw++) {
                    int64_t oh = ih - kh + 1, ow = iw - kw + 1;
                    if (oh < 0 || ow < 0 || oh >= CONV_HW || ow >= CONV_HW) continue;
                    double t = (double)gy[((n * CONV_CO + co) * CONV_HW + oh) * CONV_HW + ow] *
                               w[((co * CONV_CI + ci) * CONV_K + kh) * CONV_K + kw];
                    want += t;
                    mag += fabs(t);
                }
        double got = c->host_out[((n * CONV_CI + ci) * CONV_HW + ih) * CONV_HW + iw];
        if (!close_to(got, want, 1e-4 * mag + 1e-6, 0)) {
            bench_result_wrong(c->r, "wrong result: grad_x[%lld][%lld][%lld][%lld] = %.7g, expected "
                               "%.7g", (long long)n, (long long)ci, (long long)ih, (long long)iw,
                               got, want);
            return -1;
        }
    }
    return 0;
}

/* grad_w[co][ci][kh][kw] = sum over n, oh, ow of gy[n][co][oh][ow] x[n][ci][oh+kh-1][ow+kw-1]. */
static int check_conv2d_bwd_weight(op_case *c) {
    int64_t nb = c->in_sizes[0][0];
    const float *gy = c->host_in[0], *x = c->host_in[1];
    for (int s = 0; s < 16; s++) {
        int co = (s * 7 + 1) % CONV_CO, ci = (s * 5 + 3) % CONV_CI;
        int kh = s % CONV_K, kw = (s / CONV_K) % CONV_K;
        double want = 0, mag = 0;
        for (int64_t n = 0; n < nb; n++)
            for (int64_t oh = 0; oh < CONV_HW; oh++)
                for (int64_t ow = 0; ow < CONV_HW; ow++) {
                    int64_t ih = oh + kh - 1, iw = ow + kw - 1;
                    if (ih < 0 || iw < 0 || ih >= CONV_HW || iw >= CONV_HW) continue;
                    double t = (double)gy[((n * CONV_CO + co) * CONV_HW + oh) * CONV_HW + ow] *
                               x[((n * CONV_CI + ci) * CONV_HW + ih) * CONV_HW + iw];
                    want += t;
                    mag += fabs(t);
                }
        double got = c->host_out[((co * CONV_CI + ci) * CONV_K + kh) * CONV_K + kw];
        if (!close_to(got, want, 1e-4 * mag + 1e-6, 0)) {
            bench_result_wrong(c->r, "wrong result: grad_w[%d][%d][%d][%d] = %.7g, expected %.7g",
                               co, ci, kh, kw, got, want);
            return -1;
        }
    }
    return 0;
}

void bench_conv2d_bwd(bench_run *run, int device, int64_t batch) {
    for (int which = 0; which < 2; which++) {
        char name[48], detail[112];
        snprintf(name, sizeof name, "conv2d backward %s b%lld", which ? "weight" : "input",
                 (long long)batch);
        snprintf(detail, sizeof detail, "f32 grad_y [%lld,%d,%d,%d], %s, x [%lld,%d,%d,%d] "
                 "w [%d,%d,%d,%d], padding 1", (long long)batch, CONV_CO, CONV_HW, CONV_HW,
                 which ? "x" : "w", (long long)batch, CONV_CI, CONV_HW, CONV_HW, CONV_CO,
                 CONV_CI, CONV_K, CONV_K);
        op_case c = {.r = bench_result_add(run, device, name, detail),
                     .dev = run->devices[device].dev,
                     .n_in = 2,
                     .in_sizes = {{batch, CONV_CO, CONV_HW, CONV_HW},
                                  {which ? batch : CONV_CO, CONV_CI, which ? CONV_HW : CONV_K,
                                   which ? CONV_HW : CONV_K}},
                     .in_rank = {4, 4},
                     .op = which ? op_conv2d_bwd_weight : op_conv2d_bwd_input,
                     .check = which ? check_conv2d_bwd_weight : check_conv2d_bwd_input};
        if (!c.r) return;
        c.r->work = 2.0 * (double)batch * CONV_CO * CONV_HW * CONV_HW * CONV_CI * CONV_K * CONV_K;
        c.r->rate_unit = "GFLOP/s";
        c.host_in[0] = bench_host_values(batch * CONV_CO * CONV_HW * CONV_HW, 10, -1, 1);
        c.host_in[1] = which ? bench_host_values(batch * CONV_CI * CONV_HW * CONV_HW, 7, -1, 1)
                             : bench_host_values(CONV_CO * CONV_CI * CONV_K * CONV_K, 8, -0.3f, 0.3f);
        run_case(run, &c);
    }
}

/* ------------------------------------------------------------ normalizations */
/* batch_norm in training over [N, 64, 28, 28] (no affine, no running
 * statistics) and layer_norm over the last dim of [rows, 1024]: GB/s counts
 * the one read and one write an ideal kernel needs. The check recomputes a
 * few whole channels / rows in double. */
enum { BN_C = 64, BN_HW = 28, LN_COLS = 1024 };

static gf_tensor *op_batch_norm(const op_case *c) {
    return gf_batch_norm(c->in[0], NULL, NULL, NULL, NULL, true, 0.1, 1e-5, NULL, NULL);
}
static gf_tensor *op_layer_norm(const op_case *c) {
    return gf_layer_norm(c->in[0], 1, NULL, NULL, 1e-5, NULL, NULL);
}

/* The n values at x[i * stride + j * inner + k] (i < outer, k < inner, j
 * fixed by the caller through x) normalized: checks y the same way. */
static int check_norm(op_case *c, const char *what, int64_t at, int64_t outer, int64_t stride,
                      int64_t inner) {
    const float *x = c->host_in[0], *y = c->host_out;
    double s = 0, q = 0, n = (double)(outer * inner);
    for (int64_t i = 0; i < outer; i++)
        for (int64_t k = 0; k < inner; k++) s += x[at + i * stride + k];
    double mean = s / n;
    for (int64_t i = 0; i < outer; i++)
        for (int64_t k = 0; k < inner; k++) {
            double d = x[at + i * stride + k] - mean;
            q += d * d;
        }
    double rstd = 1.0 / sqrt(q / n + 1e-5);
    for (int64_t i = 0; i < outer; i++)
        for (int64_t k = 0; k < inner; k += 7) {
            int64_t e = at + i * stride + k;
            double want = (x[e] - mean) * rstd;
            if (!close_to(y[e], want, 1e-4, 1e-4)) {
                bench_result_wrong(c->r, "wrong result: %s element %lld = %.7g, expected %.7g",
                                   what, (long long)e, y[e], want);
                return -1;
            }
        }
    return 0;
}

static int check_batch_norm(op_case *c) {
    int64_t nb = c->in_sizes[0][0], plane = BN_HW * BN_HW;
    for (int64_t ch = 0; ch < BN_C; ch += 21)
        if (check_norm(c, "batch_norm", ch * plane, nb, BN_C * plane, plane)) return -1;
    return 0;
}

static int check_layer_norm(op_case *c) {
    int64_t rows = c->in_sizes[0][0];
    for (int64_t i = 0; i < rows; i += (rows > 8 ? rows / 8 : 1))
        if (check_norm(c, "layer_norm", i * LN_COLS, 1, LN_COLS, LN_COLS)) return -1;
    return 0;
}

void bench_batch_norm(bench_run *run, int device, int64_t batch) {
    char name[40], detail[112];
    snprintf(name, sizeof name, "batch_norm b%lld", (long long)batch);
    snprintf(detail, sizeof detail, "f32 [%lld,%d,%d,%d], training, no affine",
             (long long)batch, BN_C, BN_HW, BN_HW);
    op_case c = {.r = bench_result_add(run, device, name, detail),
                 .dev = run->devices[device].dev,
                 .n_in = 1,
                 .in_sizes = {{batch, BN_C, BN_HW, BN_HW}},
                 .in_rank = {4},
                 .op = op_batch_norm,
                 .check = check_batch_norm};
    if (!c.r) return;
    c.r->work = 2.0 * (double)batch * BN_C * BN_HW * BN_HW * sizeof(float);
    c.r->rate_unit = "GB/s";
    c.host_in[0] = bench_host_values(batch * BN_C * BN_HW * BN_HW, 10, -2, 3);
    run_case(run, &c);
}

void bench_layer_norm(bench_run *run, int device, int64_t rows) {
    char name[40], detail[112];
    snprintf(name, sizeof name, "layer_norm %lld", (long long)rows);
    snprintf(detail, sizeof detail, "f32 [%lld,%d], over the last dim, no affine",
             (long long)rows, LN_COLS);
    op_case c = {.r = bench_result_add(run, device, name, detail),
                 .dev = run->devices[device].dev,
                 .n_in = 1,
                 .in_sizes = {{rows, LN_COLS}},
                 .in_rank = {2},
                 .op = op_layer_norm,
                 .check = check_layer_norm};
    if (!c.r) return;
    c.r->work = 2.0 * (double)rows * LN_COLS * sizeof(float);
    c.r->rate_unit = "GB/s";
    c.host_in[0] = bench_host_values(rows * LN_COLS, 11, -2, 3);
    run_case(run, &c);
}

/* ------------------------------------------------------------ max_pool2d */
/* 2x2 windows, stride 2, over [N, 32, 56, 56]: GB/s counts reading x and
 * writing y and the i64 indices. */
enum { MP_C = 32, MP_HW = 56 };

static gf_tensor *op_max_pool2d(const op_case *c) {
    const gf_pool2d_opts o = {.kernel = {2, 2}};
    gf_tensor *ind = NULL;
    gf_tensor *y = gf_max_pool2d(c->in[0], &o, &ind);
    gf_tensor_release(ind);
    return y;
}

static int check_max_pool2d(op_case *c) {
    int64_t nb = c->in_sizes[0][0], ho = MP_HW / 2;
    const float *x = c->host_in[0];
    for (int s = 0; s < 64; s++) {
        int64_t n = s % nb, ch = (s * 7 + 3) % MP_C, oh = (s * 13) % ho, ow = (s * 29 + 5) % ho;
        const float *p = x + ((n * MP_C + ch) * MP_HW + 2 * oh) * MP_HW + 2 * ow;
        double want = fmax(fmax(p[0], p[1]), fmax(p[MP_HW], p[MP_HW + 1]));
        double got = c->host_out[((n * MP_C + ch) * ho + oh) * ho + ow];
        if (got != want) {
            bench_result_wrong(c->r, "wrong result: y[%lld][%lld][%lld][%lld] = %.7g, expected "
                               "%.7g", (long long)n, (long long)ch, (long long)oh, (long long)ow,
                               got, want);
            return -1;
        }
    }
    return 0;
}

void bench_max_pool2d(bench_run *run, int device, int64_t batch) {
    char name[40], detail[112];
    snprintf(name, sizeof name, "max_pool2d b%lld", (long long)batch);
    snprintf(detail, sizeof detail, "f32 [%lld,%d,%d,%d], 2x2 windows, stride 2, with indices",
             (long long)batch, MP_C, MP_HW, MP_HW);
    op_case c = {.r = bench_result_add(run, device, name, detail),
                 .dev = run->devices[device].dev,
                 .n_in = 1,
                 .in_sizes = {{batch, MP_C, MP_HW, MP_HW}},
                 .in_rank = {4},
                 .op = op_max_pool2d,
                 .check = check_max_pool2d};
    if (!c.r) return;
    double n_in = (double)batch * MP_C * MP_HW * MP_HW;
    c.r->work = n_in * sizeof(float) + n_in / 4 * (sizeof(float) + sizeof(int64_t));
    c.r->rate_unit = "GB/s";
    c.host_in[0] = bench_host_values(batch * MP_C * MP_HW * MP_HW, 12, -1, 1);
    run_case(run, &c);
}
