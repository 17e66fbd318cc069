/* SPDX-License-Identifier: BSD-3-Clause */
/* test_stft.c — gf_stft and gf_istft (graft/fft.h): values and gradients
 * (with respect to the signal and the window) against PyTorch's
 * (stft_expected.h, written by tools/expected/gen_fft.py stft), the round
 * trip istft(stft(x)) = x, gf_gradcheck and gf_gradgradcheck in f64/c128,
 * and the errors. Run on a device that stores complex dtypes. */
#include <graft.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "stft_expected.h"

static gf_device *dev;

static int64_t numel_of(const int64_t *sizes, int rank) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= sizes[i];
    return n;
}

static void check_values(const char *what, const char *name, const gf_tensor *t,
                         const double *want, int64_t n_want, double tol) {
    CHECK_MSG(t != NULL, "%s %s: %s", name, what, gf_last_error());
    if (!t) return;
    gf_scope_begin();
    gf_tensor *c = gf_contiguous(t);
    gf_tensor *r = gf_dtype_is_complex(gf_tensor_dtype(c)) ? gf_view_as_real(c) : c;
    int64_t n = gf_tensor_numel(r);
    CHECK_MSG(n == n_want, "%s %s: %lld values, expected %lld", name, what, (long long)n,
              (long long)n_want);
    double *got = malloc((size_t)(n > 0 ? n : 1) * sizeof *got);
    if (n == n_want && gf_tensor_to_host(r, got, (size_t)n * sizeof *got) == GF_OK) {
        double scale = 1, err = 0;
        int64_t worst = 0;
        for (int64_t i = 0; i < n; i++) scale = fmax(scale, fabs(want[i]));
        for (int64_t i = 0; i < n; i++)
            if (!(fabs(got[i] - want[i]) <= err)) err = fabs(got[i] - want[i]), worst = i;
        CHECK_MSG(err <= tol * scale, "%s %s[%lld]: %.17g vs torch %.17g", name, what,
                  (long long)worst, got[worst], want[worst]);
    }
    free(got);
    gf_scope_end();
}

static gf_tensor *run(const stft_case *c, gf_tensor *x, gf_tensor *w) {
    if (!c->inverse) {
        gf_stft_opts o = GF_STFT_OPTS_DEFAULT;
        o.hop_length = c->hop, o.win_length = c->win, o.window = w, o.center = c->center;
        o.pad_mode = (gf_pad_mode)c->pad_mode, o.normalized = c->normalized;
        o.onesided = c->onesided, o.return_complex = c->return_complex;
        return gf_stft(x, c->n_fft, &o);
    }
    gf_istft_opts o = GF_ISTFT_OPTS_DEFAULT;
    o.hop_length = c->hop, o.win_length = c->win, o.window = w, o.center = c->center;
    o.normalized = c->normalized, o.onesided = c->onesided, o.length = c->length;
    o.return_complex = c->return_complex;
    return gf_istft(x, c->n_fft, &o);
}

static void test_against_torch(void) {
    for (size_t k = 0; k < sizeof stft_cases / sizeof stft_cases[0]; k++) {
        const stft_case *c = &stft_cases[k];
        gf_scope_begin();
        gf_tensor *x = gf_from_data(stft_data + c->x_off, c->x_sizes, c->x_rank,
                                    c->x_complex ? GF_C128 : GF_F64, dev);
        int64_t wl = c->win == -1 ? c->n_fft : c->win;
        gf_tensor *w = c->has_window ? gf_from_data(stft_data + c->w_off, &wl, 1, GF_F64, dev)
                                     : NULL;
        CHECK(x && gf_tensor_set_requires_grad(x, true) == GF_OK);
        if (w) CHECK(gf_tensor_set_requires_grad(w, true) == GF_OK);
        gf_tensor *y = run(c, x, w);
        CHECK_MSG(y != NULL, "%s: %s", c->name, gf_last_error());
        if (!y) {
            gf_scope_end();
            continue;
        }
        CHECK_MSG(gf_tensor_rank(y) == c->y_rank, "%s: rank %d", c->name, gf_tensor_rank(y));
        for (int d = 0; d < c->y_rank && d < gf_tensor_rank(y); d++)
            CHECK_MSG(gf_tensor_size(y, d) == c->y_sizes[d], "%s: size %d is %lld, torch %lld",
                      c->name, d, (long long)gf_tensor_size(y, d), (long long)c->y_sizes[d]);
        CHECK(gf_dtype_is_complex(gf_tensor_dtype(y)) == (bool)c->y_complex);
        int64_t ny = numel_of(c->y_sizes, c->y_rank) * (c->y_complex ? 2 : 1);
        check_values("y", c->name, y, stft_data + c->y_off, ny, 1e-12);
        /* L = sum(view_as_real(y) * cos(0.45 j + 0.2)) */
        double *wt = malloc((size_t)ny * sizeof *wt);
        for (int64_t j = 0; j < ny; j++) wt[j] = cos(0.45 * (double)j + 0.2);
        gf_tensor *weights = gf_from_data(wt, &ny, 1, GF_F64, dev);
        free(wt);
        gf_tensor *yr = c->y_complex ? gf_view_as_real(gf_contiguous(y)) : y;
        gf_tensor *loss = gf_sum(gf_mul(gf_reshape(gf_contiguous(yr), &ny, 1), weights), NULL, 0,
                                 false);
        gf_tensor *wrt[2] = {x, w}, *g[2] = {NULL, NULL};
        gf_status s = gf_grad(&loss, 1, NULL, wrt, w ? 2 : 1, g, NULL);
        CHECK_MSG(s == GF_OK, "%s: gf_grad: %s", c->name, gf_last_error());
        if (s == GF_OK) {
            check_values("grad x", c->name, g[0], stft_data + c->gx_off,
                         numel_of(c->x_sizes, c->x_rank) * (c->x_complex ? 2 : 1), 1e-11);
            if (w) check_values("grad window", c->name, g[1], stft_data + c->gw_off, wl, 1e-11);
        }
        gf_scope_end();
    }
}

static gf_tensor *hann(int64_t n) {
    gf_tensor *t = gf_mul_scalar(gf_arange(0, (double)n, 1, GF_F64, dev), 2 * 3.14159265358979323846 / (double)n);
    return gf_mul_scalar(gf_add_scalar(gf_neg(gf_cos(t)), 1.0), 0.5);
}

static void test_roundtrip(void) {
    gf_scope_begin();
    int64_t s[2] = {3, 50};
    gf_tensor *x = gf_rand_normal(s, 2, 0, 1, GF_F64, dev);
    gf_stft_opts so = GF_STFT_OPTS_DEFAULT;
    so.hop_length = 4, so.window = hann(16);
    gf_istft_opts io = GF_ISTFT_OPTS_DEFAULT;
    io.hop_length = 4, io.window = so.window, io.length = 50;
    gf_tensor *back = gf_istft(gf_stft(x, 16, &so), 16, &io);
    CHECK_MSG(back && gf_tensor_size(back, 1) == 50, "%s", gf_last_error());
    gf_tensor *err = back ? gf_amax(gf_abs(gf_sub(back, x)), NULL, 0, false) : NULL;
    double e = 1;
    CHECK(err && gf_tensor_item(err, &e) == GF_OK && e < 1e-12);
    gf_scope_end();
}

typedef struct gstft {
    int kind; /* 0 stft, 1 istft */
} gstft;

static gf_tensor *gfn(gf_tensor *const *in, int n, void *user) {
    (void)n;
    const gstft *g = user;
    gf_scope_begin();
    gf_tensor *r;
    if (g->kind == 0) {
        gf_stft_opts o = GF_STFT_OPTS_DEFAULT;
        o.hop_length = 3, o.window = in[1];
        r = gf_stft(in[0], 8, &o);
    } else {
        gf_istft_opts o = GF_ISTFT_OPTS_DEFAULT;
        o.hop_length = 2, o.window = gf_add_scalar(in[1], 0.5); /* NOLA everywhere */
        r = gf_istft(in[2], 8, &o);
    }
    r = gf_scope_keep(r);
    gf_scope_end();
    return r;
}

static void test_gradchecks(void) {
    int64_t n = 20, w = 8, sX[2] = {5, 4};
    gf_tensor *in[3] = {gf_rand_normal(&n, 1, 0, 1, GF_F64, dev),
                        gf_rand_uniform(&w, 1, 0.2, 1.0, GF_F64, dev),
                        gf_randn_complex(sX, 2, GF_C128, dev)};
    for (int i = 0; i < 3; i++) {
        CHECK_MSG(in[i] != NULL, "%s", gf_last_error());
        if (!in[i]) return;
        CHECK(gf_tensor_set_requires_grad(in[i], true) == GF_OK);
    }
    gf_gradcheck_opts o = GF_GRADCHECK_OPTS_DEFAULT;
    o.atol = 1e-7, o.rtol = 1e-5;
    for (int k = 0; k < 2; k++) {
        gstft g = {k};
        CHECK_MSG(gf_gradcheck(gfn, in, 3, &g, &o) == GF_OK, "gradcheck %s: %s",
                  k ? "istft" : "stft", gf_last_error());
        CHECK_MSG(gf_gradgradcheck(gfn, in, 3, &g, &o) == GF_OK, "gradgradcheck %s: %s",
                  k ? "istft" : "stft", gf_last_error());
    }
    for (int i = 0; i < 3; i++) gf_tensor_release(in[i]);
}

static void expect_error(gf_tensor *r, gf_status want, const char *needle, const char *what) {
    CHECK_MSG(r == NULL, "%s: expected an error", what);
    gf_status s = gf_last_status();
    CHECK_MSG(s == want, "%s: status %s, expected %s (%s)", what, gf_status_name(s),
              gf_status_name(want), gf_last_error());
    CHECK_CONTAINS(gf_last_error(), needle);
}

static void test_errors(void) {
    gf_scope_begin();
    int64_t n = 20, s3[3] = {1, 2, 20}, sX[2] = {5, 4};
    gf_tensor *x = gf_zeros(&n, 1, GF_F64, dev), *x3 = gf_zeros(s3, 3, GF_F64, dev);
    gf_tensor *X = gf_zeros(sX, 2, GF_C128, dev), *Xr = gf_zeros(sX, 2, GF_F64, dev);
    gf_stft_opts so = GF_STFT_OPTS_DEFAULT;
    gf_istft_opts io = GF_ISTFT_OPTS_DEFAULT;
    expect_error(gf_stft(x, 0, NULL), GF_ERR_INVALID, "n_fft is 0", "n_fft 0");
    expect_error(gf_stft(x, 2, NULL), GF_ERR_INVALID, "give hop_length", "default hop 0");
    so.win_length = 9;
    expect_error(gf_stft(x, 8, &so), GF_ERR_INVALID, "win_length is 9", "win > n_fft");
    so = (gf_stft_opts)GF_STFT_OPTS_DEFAULT;
    so.window = gf_ones(&n, 1, GF_F64, dev);
    expect_error(gf_stft(x, 8, &so), GF_ERR_SHAPE, "1-D of win_length = 8", "window size");
    so = (gf_stft_opts)GF_STFT_OPTS_DEFAULT;
    so.onesided = 1;
    expect_error(gf_stft(X, 4, &so), GF_ERR_INVALID, "onesided = 0", "onesided complex");
    so.onesided = 3;
    expect_error(gf_stft(x, 4, &so), GF_ERR_INVALID, "onesided is 3", "onesided 3");
    expect_error(gf_stft(x3, 4, NULL), GF_ERR_SHAPE, "rank 3", "stft rank 3");
    so = (gf_stft_opts)GF_STFT_OPTS_DEFAULT;
    so.center = false;
    expect_error(gf_stft(x, 32, &so), GF_ERR_SHAPE, "has only 20 samples", "n_fft too long");
    expect_error(gf_stft(x, 64, NULL), GF_ERR_INVALID, "pad", "reflect pad too long");
    gf_stft_opts zero = {0};
    expect_error(gf_stft(x, 8, &zero), GF_ERR_INVALID, "GF_STFT_OPTS_DEFAULT", "opts init");
    expect_error(gf_stft(NULL, 8, NULL), GF_ERR_INVALID, "x is NULL", "NULL x");
    gf_last_error();
    expect_error(gf_istft(Xr, 8, NULL), GF_ERR_DTYPE, "gf_view_as_complex", "istft real");
    expect_error(gf_istft(x, 8, NULL), GF_ERR_DTYPE, "must be complex", "istft 1-D real");
    expect_error(gf_istft(X, 6, NULL), GF_ERR_SHAPE, "5 frequency bins", "istft bins");
    io.return_complex = true;
    expect_error(gf_istft(X, 8, &io), GF_ERR_INVALID, "all n_fft bins", "complex out onesided");
    io = (gf_istft_opts)GF_ISTFT_OPTS_DEFAULT;
    io.length = -3;
    expect_error(gf_istft(X, 8, &io), GF_ERR_INVALID, "length is -3", "length -3");
    io = (gf_istft_opts)GF_ISTFT_OPTS_DEFAULT;
    io.center = false, io.hop_length = 2, io.window = hann(8); /* hann(8)[0] = 0: NOLA fails */
    expect_error(gf_istft(X, 8, &io), GF_ERR_INVALID, "nonzero overlap-add", "NOLA");
    io = (gf_istft_opts)GF_ISTFT_OPTS_DEFAULT;
    io.onesided = 2;
    expect_error(gf_istft(X, 8, &io), GF_ERR_INVALID, "onesided is 2", "istft onesided 2");
    gf_istft_opts izero = {0};
    expect_error(gf_istft(X, 8, &izero), GF_ERR_INVALID, "GF_ISTFT_OPTS_DEFAULT", "istft init");
    expect_error(gf_istft(gf_zeros((int64_t[]){5, 0}, 2, GF_C128, dev), 8, NULL), GF_ERR_SHAPE,
                 "no frames", "istft no frames");
    gf_scope_end();
}

int main(void) {
    for (int i = 0; i < gf_device_count() && !dev; i++) {
        gf_device_info di;
        if (gf_device_get_info(gf_device_at(i), &di) == GF_OK && (di.dtypes & (1u << GF_C128)))
            dev = gf_device_at(i);
    }
    CHECK_MSG(dev != NULL, "no device stores c128 (the reference plugin does)");
    if (!dev) return CHECK_REPORT();
    RUN(test_against_torch);
    RUN(test_roundtrip);
    RUN(test_gradchecks);
    RUN(test_errors);
    return CHECK_REPORT();
}
