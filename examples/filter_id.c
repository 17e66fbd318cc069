/* SPDX-License-Identifier: BSD-3-Clause */
/* filter_id — system identification of an audio filter in the frequency
 * domain: a complex frequency response H, learned by Adam, so that
 *     irfft(rfft(x) * H) matches the filtered signal y.
 *
 * The unknown system is a 31-tap windowed-sinc band-pass filter (pass band
 * 1-3 kHz at 16 kHz), applied to white noise by circular convolution. The
 * model is one complex parameter, H (c64, one value per rfft bin, started
 * at 0), and the loss the mean squared error of the time-domain output: a
 * real loss of a complex variable, whose gradient is the conjugate Wirtinger
 * derivative (docs/autograd.md, rule 26). Adam treats the real and
 * imaginary parts of H as separate coordinates, as PyTorch's does.
 *
 * It prints the loss relative to the signal's energy, and at the end the
 * largest error of the learned |H| against the filter's true response (and
 * the gain at the pass band's centre in dB). Exit status 0 when the final
 * relative loss is at most --max-rel-loss (default 1e-3), 1 otherwise.
 *
 *   filter_id [--steps N] [--lr LR] [--max-rel-loss R] [--seed S]
 * Runs on the device GRAFT_DEVICE names (one that stores complex dtypes:
 * the reference and cpu_onednn plugins). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graft.h"

#define RATE 16000.0
#define N 1024     /* samples per segment (circular convolution) */
#define BATCH 16   /* segments per step */
#define TAPS 31
#define BINS (N / 2 + 1)

/* The true filter: a Hamming-windowed sinc band-pass, 1-3 kHz, zero-padded
 * to N samples. */
static void design(float *h) {
    const double f1 = 1000.0 / RATE, f2 = 3000.0 / RATE, pi = acos(-1.0);
    memset(h, 0, N * sizeof *h);
    for (int k = 0; k < TAPS; k++) {
        double m = k - (TAPS - 1) / 2.0;
        double lp2 = m == 0 ? 2 * f2 : sin(2 * pi * f2 * m) / (pi * m);
        double lp1 = m == 0 ? 2 * f1 : sin(2 * pi * f1 * m) / (pi * m);
        double w = 0.54 - 0.46 * cos(2 * pi * k / (TAPS - 1));
        h[k] = (float)(w * (lp2 - lp1));
    }
}

/* irfft(rfft(x) * H, n = N) over the last dim. */
static gf_tensor *apply(const gf_tensor *x, const gf_tensor *H) {
    gf_scope_begin();
    gf_tensor *X = gf_rfft(x, GF_FFT_SIZE_DEFAULT, -1, GF_FFT_NORM_BACKWARD);
    gf_tensor *y = gf_irfft(gf_mul(X, H), N, -1, GF_FFT_NORM_BACKWARD);
    return gf_scope_end_return(y);
}

static double value(const gf_tensor *t) {
    double v = NAN;
    if (gf_tensor_item(t, &v) != GF_OK) fprintf(stderr, "filter_id: %s\n", gf_last_error());
    return v;
}

int main(int argc, char **argv) {
    int steps = 300;
    double lr = 0.02, max_rel = 1e-3;
    uint64_t seed = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--lr") && i + 1 < argc) lr = atof(argv[++i]);
        else if (!strcmp(argv[i], "--max-rel-loss") && i + 1 < argc) max_rel = atof(argv[++i]);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "usage: %s [--steps N] [--lr LR] [--max-rel-loss R] [--seed S]\n",
                    argv[0]);
            return 2;
        }
    }
    gf_device *dev = gf_device_default();
    if (!dev) {
        fprintf(stderr, "filter_id: %s\n", gf_last_error());
        return 1;
    }
    printf("filter_id on %s: %d taps band-pass 1-3 kHz at 16 kHz, segments of %d samples, "
           "batch %d, Adam lr %g\n", gf_device_spec(dev), TAPS, N, BATCH, lr);
    gf_manual_seed(seed);
    float h[N];
    design(h);
    gf_tensor *ht = gf_from_data(h, (const int64_t[]){N}, 1, GF_F32, dev);
    gf_tensor *H_true = ht ? gf_rfft(ht, GF_FFT_SIZE_DEFAULT, -1, GF_FFT_NORM_BACKWARD) : NULL;
    gf_tensor *H = gf_zeros((const int64_t[]){BINS}, 1, GF_C64, dev);
    if (!H_true || !H || gf_tensor_set_requires_grad(H, true) != GF_OK) {
        fprintf(stderr, "filter_id: %s\n", gf_last_error());
        return 1;
    }
    gf_adam_opts ao = GF_ADAM_OPTS_DEFAULT;
    ao.lr = lr;
    gf_optimizer *opt = gf_adam_create(&H, 1, &ao);
    if (!opt) {
        fprintf(stderr, "filter_id: %s\n", gf_last_error());
        return 1;
    }
    double rel = NAN;
    for (int s = 1; s <= steps; s++) {
        gf_scope_begin();
        /* a fresh batch of white noise through the unknown filter */
        gf_tensor *x = gf_randn((const int64_t[]){BATCH, N}, 2, GF_F32, dev);
        gf_tensor *y = apply(x, H_true);
        gf_tensor *loss = gf_mse_loss(apply(x, H), y, GF_REDUCTION_MEAN);
        gf_tensor *energy = gf_mean(gf_square(y), NULL, 0, false);
        gf_status st = gf_optimizer_zero_grad(opt);
        if (st == GF_OK) st = loss ? gf_backward(loss, NULL, NULL) : gf_last_status();
        if (st == GF_OK) st = gf_optimizer_step(opt);
        if (st == GF_OK) rel = value(loss) / value(energy);
        gf_scope_end();
        if (st != GF_OK) {
            fprintf(stderr, "filter_id: step %d: %s\n", s, gf_last_error());
            return 1;
        }
        if (s == 1 || s % 50 == 0 || s == steps)
            printf("step %4d  loss / signal energy %.3e\n", s, rel);
    }
    /* the learned response against the true one */
    gf_scope_begin();
    gf_tensor *err = gf_amax(gf_abs(gf_sub(gf_abs(H), gf_abs(H_true))), NULL, 0, false);
    double centre = NAN;
    gf_tensor *mag = gf_abs(H);
    gf_status gst = mag ? gf_tensor_get(mag, (const int64_t[]){(int64_t)(2000.0 / RATE * N)},
                                        &centre)
                        : gf_last_status();
    double max_err = err ? value(err) : NAN;
    gf_scope_end();
    if (gst == GF_OK)
        printf("learned |H|: largest error %.2e; gain at 2 kHz %.2f dB (true filter: about 0 dB)\n",
               max_err, 20 * log10(centre));
    bool ok = rel <= max_rel && isfinite(rel);
    printf("final loss / signal energy %.3e: %s (bound %g)\n", rel, ok ? "ok" : "FAILED",
           max_rel);
    gf_optimizer_destroy(opt);
    gf_tensor_set_grad(H, NULL);
    gf_tensor_release(H);
    gf_tensor_release(H_true);
    gf_tensor_release(ht);
    return ok ? 0 : 1;
}
