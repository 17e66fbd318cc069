/* SPDX-License-Identifier: BSD-3-Clause */
/* workloads_fft.c — the Fourier transforms of graft/fft.h as workloads:
 *   fft   gf_fft of a c64 vector of n points (2^20), and of c64 [128, n]
 *         along the last dim for lengths that are not powers of two (1000 =
 *         2^3 5^3, mixed radix; 1031, a prime);
 *   rfft  gf_rfft of f32 [rows, n] along the last dim (1024 x 1024);
 *   stft  gf_stft of a f32 signal of n samples (10 s at 16 kHz): n_fft 512,
 *         hop 128, a periodic Hann window, centred with reflect padding,
 *         complex out (torch.stft's defaults otherwise).
 * Rated in the customary 5 N log2 N flops of a complex transform of N
 * points (2.5 N log2 N for a real one); h2d and d2h are timed as in
 * workloads_ops.c. Sampled bins are checked against the host's DFT in
 * double, relative to the bin's magnitude bound sum |x| (1e-5). A device
 * that does not store c64 gives n/a. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define PI 3.14159265358979323846

typedef enum fft_kind { FK_FFT, FK_RFFT, FK_STFT } fft_kind;

typedef struct fft_case {
    fft_kind kind;
    bench_result *r;
    gf_device *dev;
    int64_t n, rows; /* fft: n points; rfft: rows x n; stft: n samples */
    float *host_in;  /* fft: (re, im) pairs */
    float *host_win; /* stft */
    gf_tensor *in, *win, *out;
    float *host_out; /* (re, im) pairs */
    size_t in_bytes, out_bytes;
} fft_case;

enum { STFT_NFFT = 512, STFT_HOP = 128 };

static int step_upload(void *state) {
    fft_case *c = state;
    if (gf_tensor_from_host(c->in, c->host_in, c->in_bytes) != GF_OK) return -1;
    if (c->win && gf_tensor_from_host(c->win, c->host_win, STFT_NFFT * sizeof(float)) != GF_OK)
        return -1;
    return 0;
}

static int step_kernel(void *state) {
    fft_case *c = state;
    gf_tensor_release(c->out);
    if (c->kind == FK_FFT) {
        c->out = gf_fft(c->in, GF_FFT_SIZE_DEFAULT, -1, GF_FFT_NORM_BACKWARD);
    } else if (c->kind == FK_RFFT) {
        c->out = gf_rfft(c->in, GF_FFT_SIZE_DEFAULT, -1, GF_FFT_NORM_BACKWARD);
    } else {
        gf_stft_opts o = GF_STFT_OPTS_DEFAULT;
        o.hop_length = STFT_HOP;
        o.window = c->win;
        c->out = gf_stft(c->in, STFT_NFFT, &o);
    }
    return c->out ? 0 : -1;
}

static int step_download(void *state) {
    fft_case *c = state;
    return gf_tensor_to_host(c->out, c->host_out, c->out_bytes) == GF_OK ? 0 : -1;
}

/* Bin k of the DFT of n samples (real, or complex pairs when cplx) read at
 * v[j * step], in double; *mag = sum |x|, the bound of any bin. */
static void host_bin(const float *v, int64_t step, int64_t n, bool cplx, int64_t k, double *re,
                     double *im, double *mag) {
    double sr = 0, si = 0, m = 0;
    for (int64_t j = 0; j < n; j++) {
        double a = -2.0 * PI * (double)((j * k) % n) / (double)n, ca = cos(a), sa = sin(a);
        double xr = cplx ? v[2 * j * step] : v[j * step], xi = cplx ? v[2 * j * step + 1] : 0;
        sr += xr * ca - xi * sa;
        si += xr * sa + xi * ca;
        m += sqrt(xr * xr + xi * xi);
    }
    *re = sr, *im = si, *mag = m;
}

static int check_bin(fft_case *c, const char *where, double gr, double gi, double re, double im,
                     double mag) {
    double tol = 1e-5 * (mag > 1 ? mag : 1);
    if (fabs(gr - re) <= tol && fabs(gi - im) <= tol) return 0;
    bench_result_wrong(c->r, "wrong result: %s = %.9g%+.9gi, expected %.9g%+.9gi", where, gr, gi,
                       re, im);
    return -1;
}

static int check(fft_case *c) {
    char where[64];
    double re, im, mag;
    if (c->kind == FK_FFT) {
        for (int s = 0; s < 8; s++) {
            int64_t k = s == 7 ? c->n - 1 : (s * 131071 + 3) % c->n;
            int64_t row = s == 7 ? c->rows - 1 : (s * 37) % c->rows, at = row * c->n + k;
            host_bin(c->host_in + 2 * row * c->n, 1, c->n, true, k, &re, &im, &mag);
            snprintf(where, sizeof where, "y[%lld, %lld]", (long long)row, (long long)k);
            if (check_bin(c, where, c->host_out[2 * at], c->host_out[2 * at + 1], re, im, mag))
                return -1;
        }
        return 0;
    }
    if (c->kind == FK_RFFT) {
        int64_t h = c->n / 2 + 1;
        for (int s = 0; s < 16; s++) {
            int64_t row = (s * 389 + 1) % c->rows, k = s == 15 ? h - 1 : (s * 97 + 5) % h;
            host_bin(c->host_in + row * c->n, 1, c->n, false, k, &re, &im, &mag);
            snprintf(where, sizeof where, "y[%lld, %lld]", (long long)row, (long long)k);
            const float *o = c->host_out + 2 * (row * h + k);
            if (check_bin(c, where, o[0], o[1], re, im, mag)) return -1;
        }
        return 0;
    }
    /* stft: out [n_freq, n_frames]; frame f covers padded samples
     * f hop .. + n_fft, padded index p = sample p - n_fft/2 reflected. */
    int64_t nf = STFT_NFFT / 2 + 1, frames = 1 + c->n / STFT_HOP;
    float frame[STFT_NFFT];
    for (int s = 0; s < 12; s++) {
        int64_t f = s == 0 ? 0 : s == 11 ? frames - 1 : (s * 173 + 9) % frames;
        int64_t k = (s * 61 + 2) % nf;
        for (int j = 0; j < STFT_NFFT; j++) {
            int64_t p = f * STFT_HOP + j - STFT_NFFT / 2;
            if (p < 0) p = -p;
            if (p >= c->n) p = 2 * (c->n - 1) - p;
            frame[j] = c->host_in[p] * c->host_win[j];
        }
        host_bin(frame, 1, STFT_NFFT, false, k, &re, &im, &mag);
        snprintf(where, sizeof where, "y[%lld, %lld]", (long long)k, (long long)f);
        const float *o = c->host_out + 2 * (k * frames + f);
        if (check_bin(c, where, o[0], o[1], re, im, mag)) return -1;
    }
    return 0;
}

static void run_fft_case(bench_run *run, fft_case *c) {
    bench_result *r = c->r;
    int64_t sizes[2], rank = 1, out_numel;
    if (c->kind == FK_FFT) {
        sizes[0] = c->rows, sizes[1] = c->n;
        rank = c->rows > 1 ? 2 : 1;
        if (rank == 1) sizes[0] = c->n;
        out_numel = c->rows * c->n;
        c->in_bytes = (size_t)out_numel * 8;
        c->host_in = bench_host_values(2 * out_numel, 21, -1, 1);
    } else if (c->kind == FK_RFFT) {
        sizes[0] = c->rows, sizes[1] = c->n, rank = 2;
        out_numel = c->rows * (c->n / 2 + 1);
        c->in_bytes = (size_t)(c->rows * c->n) * 4;
        c->host_in = bench_host_values(c->rows * c->n, 22, -1, 1);
    } else {
        sizes[0] = c->n;
        out_numel = (STFT_NFFT / 2 + 1) * (1 + c->n / STFT_HOP);
        c->in_bytes = (size_t)c->n * 4;
        c->host_in = bench_host_values(c->n, 23, -1, 1);
        c->host_win = malloc(STFT_NFFT * sizeof(float));
        if (c->host_win)
            for (int j = 0; j < STFT_NFFT; j++)
                c->host_win[j] = (float)(0.5 - 0.5 * cos(2.0 * PI * j / STFT_NFFT));
    }
    c->out_bytes = (size_t)out_numel * 8;
    c->host_out = malloc(c->out_bytes);
    if (!c->host_in || !c->host_out || (c->kind == FK_STFT && !c->host_win)) {
        bench_result_wrong(r, "out of host memory");
        goto done;
    }
    c->in = gf_empty(sizes, (int)rank, c->kind == FK_FFT ? GF_C64 : GF_F32, c->dev);
    if (c->kind == FK_STFT) c->win = gf_empty((const int64_t[]){STFT_NFFT}, 1, GF_F32, c->dev);
    if (!c->in || (c->kind == FK_STFT && !c->win)) {
        bench_result_graft_error(r, "allocating the inputs");
        goto done;
    }
    r->h2d_bytes = (double)c->in_bytes;
    r->d2h_bytes = (double)c->out_bytes;
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
    bench_progress(run, "output to the host");
    if (bench_measure(run, c->dev, step_download, c, 1, &r->d2h) != 0) {
        bench_result_graft_error(r, "reading the output");
        goto done;
    }
    check(c);
done:
    gf_tensor_release(c->in);
    gf_tensor_release(c->win);
    gf_tensor_release(c->out);
    free(c->host_in);
    free(c->host_win);
    free(c->host_out);
}

static const char *count(int64_t n, char *buf, size_t len) {
    if (n >= (1 << 20) && n % (1 << 20) == 0) snprintf(buf, len, "%lldM", (long long)(n >> 20));
    else if (n >= 1024 && n % 1024 == 0) snprintf(buf, len, "%lldK", (long long)(n >> 10));
    else snprintf(buf, len, "%lld", (long long)n);
    return buf;
}

void bench_fft(bench_run *run, int device, int64_t n) {
    char name[40], detail[112], cnt[24];
    snprintf(name, sizeof name, "fft %s", count(n, cnt, sizeof cnt));
    snprintf(detail, sizeof detail, "c64 [%lld], 5n log2 n flops", (long long)n);
    fft_case c = {.kind = FK_FFT, .r = bench_result_add(run, device, name, detail),
                  .dev = run->devices[device].dev, .n = n, .rows = 1};
    if (!c.r) return;
    c.r->work = 5.0 * (double)n * log2((double)n);
    c.r->rate_unit = "GFLOP/s";
    run_fft_case(run, &c);
}

/* FFT_ROWS lines of n points along the last dim. */
enum { FFT_ROWS = 128 };
void bench_fft_rows(bench_run *run, int device, int64_t n) {
    char name[40], detail[112];
    snprintf(name, sizeof name, "fft %dx%lld", FFT_ROWS, (long long)n);
    snprintf(detail, sizeof detail, "c64 [%d,%lld] last dim, 5n log2 n flops per row", FFT_ROWS,
             (long long)n);
    fft_case c = {.kind = FK_FFT, .r = bench_result_add(run, device, name, detail),
                  .dev = run->devices[device].dev, .n = n, .rows = FFT_ROWS};
    if (!c.r) return;
    c.r->work = 5.0 * FFT_ROWS * (double)n * log2((double)n);
    c.r->rate_unit = "GFLOP/s";
    run_fft_case(run, &c);
}

/* n rows of n samples. */
void bench_rfft(bench_run *run, int device, int64_t n) {
    char name[40], detail[112];
    snprintf(name, sizeof name, "rfft %lldx%lld", (long long)n, (long long)n);
    snprintf(detail, sizeof detail, "f32 [%lld,%lld] last dim, 2.5n log2 n flops per row",
             (long long)n, (long long)n);
    fft_case c = {.kind = FK_RFFT, .r = bench_result_add(run, device, name, detail),
                  .dev = run->devices[device].dev, .n = n, .rows = n};
    if (!c.r) return;
    c.r->work = 2.5 * (double)n * (double)n * log2((double)n);
    c.r->rate_unit = "GFLOP/s";
    run_fft_case(run, &c);
}

/* n samples (160000: 10 s at 16 kHz). */
void bench_stft(bench_run *run, int device, int64_t n) {
    char name[40], detail[112], cnt[24];
    snprintf(name, sizeof name, "stft %s", count(n, cnt, sizeof cnt));
    snprintf(detail, sizeof detail, "f32 [%lld], n_fft %d hop %d hann, centred, complex",
             (long long)n, STFT_NFFT, STFT_HOP);
    fft_case c = {.kind = FK_STFT, .r = bench_result_add(run, device, name, detail),
                  .dev = run->devices[device].dev, .n = n, .rows = 1};
    if (!c.r) return;
    double frames = (double)(1 + n / STFT_HOP);
    c.r->work = frames * 2.5 * STFT_NFFT * log2((double)STFT_NFFT);
    c.r->rate_unit = "GFLOP/s";
    run_fft_case(run, &c);
}
