/* SPDX-License-Identifier: BSD-3-Clause */
/* test_fft.c — the torch.fft transforms of graft/fft.h: values and
 * gradients against PyTorch's (fft_expected.h, written by
 * tools/expected/gen_fft.py), inverse(forward(x)) = x and Parseval for every
 * norm, gf_gradcheck and gf_gradgradcheck in c128/f64 for every transform,
 * the frequency and shift helpers, and every error the API reports.
 *
 * Run on the default device; one that does not store complex dtypes
 * (cpu_onednn, opencl, vulkan) refuses a transform with an error naming it,
 * and the checks then run on a device that stores them (the reference). */
#include <complex.h>
#include <graft.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fft_expected.h"

static gf_device *dev; /* where the transforms run */

/* ------------------------------------------------------------ helpers */
static const gf_dtype x_dtypes[5] = {GF_F64, GF_C128, GF_F32, GF_C64, GF_I64};

static int64_t numel_of(const int64_t *sizes, int rank) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= sizes[i];
    return n;
}

/* A tensor of dtype from row-major values (complex: (re, im) pairs). */
static gf_tensor *from_values(const double *v, const int64_t *sizes, int rank, gf_dtype dt) {
    int64_t n = numel_of(sizes, rank) * (gf_dtype_is_complex(dt) ? 2 : 1);
    void *buf = malloc((size_t)(n > 0 ? n : 1) * 8);
    for (int64_t i = 0; i < n; i++) {
        if (dt == GF_F32 || dt == GF_C64) ((float *)buf)[i] = (float)v[i];
        else if (dt == GF_I64) ((int64_t *)buf)[i] = (int64_t)v[i];
        else ((double *)buf)[i] = v[i];
    }
    gf_tensor *t = gf_from_data(buf, sizes, rank, dt, dev);
    free(buf);
    CHECK_MSG(t != NULL, "%s", gf_last_error());
    return t;
}

/* The same values as a transposed view of a contiguous tensor (rank 2). */
static gf_tensor *transposed_view(const double *v, const int64_t *sizes, gf_dtype dt) {
    int parts = gf_dtype_is_complex(dt) ? 2 : 1;
    int64_t a = sizes[0], b = sizes[1], ts[2] = {b, a};
    double *tv = malloc((size_t)(a * b * parts) * sizeof *tv);
    for (int64_t i = 0; i < a; i++)
        for (int64_t j = 0; j < b; j++)
            for (int p = 0; p < parts; p++) tv[(j * a + i) * parts + p] = v[(i * b + j) * parts + p];
    gf_tensor *base = from_values(tv, ts, 2, dt);
    free(tv);
    return base ? gf_transpose(base, 0, 1) : NULL; /* both in the caller's scope */
}

/* t's values as doubles, row-major, complex as (re, im) pairs; *n the count. */
static double *values_of(const gf_tensor *t, int64_t *n) {
    gf_scope_begin();
    gf_tensor *c = gf_contiguous(t);
    gf_tensor *r = c && gf_dtype_is_complex(gf_tensor_dtype(c)) ? gf_view_as_real(c) : c;
    gf_tensor *d = r ? gf_to_dtype(r, GF_F64) : NULL;
    double *v = NULL;
    *n = d ? gf_tensor_numel(d) : 0;
    if (d) {
        v = malloc((size_t)(*n > 0 ? *n : 1) * sizeof *v);
        CHECK(gf_tensor_to_host(d, v, (size_t)*n * sizeof *v) == GF_OK);
    }
    gf_scope_end();
    return v;
}

/* |got - want| <= tol (1 + max |want|) everywhere. */
static void check_values(const char *what, const char *name, const gf_tensor *t,
                         const double *want, int64_t n_want, double tol) {
    int64_t n;
    double *got = values_of(t, &n);
    CHECK_MSG(got && n == n_want, "%s %s: %lld values, expected %lld", name, what, (long long)n,
              (long long)n_want);
    if (got && n == n_want) {
        double scale = 1;
        for (int64_t i = 0; i < n; i++) scale = fmax(scale, fabs(want[i]));
        int64_t worst = 0;
        double err = 0;
        for (int64_t i = 0; i < n; i++)
            if (!(fabs(got[i] - want[i]) <= err)) err = fabs(got[i] - want[i]), worst = i;
        CHECK_MSG(err <= tol * scale, "%s %s[%lld]: %.17g vs torch %.17g (error %.3g, scale %g)",
                  name, what, (long long)worst, got[worst], want[worst], err, scale);
    }
    free(got);
}

static gf_tensor *call_case(const fft_case *c, gf_tensor *x) {
    const int64_t *s = c->has_s ? c->s : NULL;
    const int *d = c->has_dims ? c->dims : NULL;
    gf_fft_norm nm = (gf_fft_norm)c->norm;
    switch (c->fn) {
    case FFT_FN_FFT: return gf_fft(x, c->n, c->dim, nm);
    case FFT_FN_IFFT: return gf_ifft(x, c->n, c->dim, nm);
    case FFT_FN_RFFT: return gf_rfft(x, c->n, c->dim, nm);
    case FFT_FN_IRFFT: return gf_irfft(x, c->n, c->dim, nm);
    case FFT_FN_HFFT: return gf_hfft(x, c->n, c->dim, nm);
    case FFT_FN_IHFFT: return gf_ihfft(x, c->n, c->dim, nm);
    case FFT_FN_FFTN: return gf_fftn(x, s, c->n_s, d, c->n_dims, nm);
    case FFT_FN_IFFTN: return gf_ifftn(x, s, c->n_s, d, c->n_dims, nm);
    case FFT_FN_RFFTN: return gf_rfftn(x, s, c->n_s, d, c->n_dims, nm);
    case FFT_FN_IRFFTN: return gf_irfftn(x, s, c->n_s, d, c->n_dims, nm);
    case FFT_FN_FFT2: return gf_fft2(x, s, c->n_s, d, c->n_dims, nm);
    case FFT_FN_IFFT2: return gf_ifft2(x, s, c->n_s, d, c->n_dims, nm);
    case FFT_FN_RFFT2: return gf_rfft2(x, s, c->n_s, d, c->n_dims, nm);
    case FFT_FN_IRFFT2: return gf_irfft2(x, s, c->n_s, d, c->n_dims, nm);
    case FFT_FN_HFFTN: return gf_hfftn(x, s, c->n_s, d, c->n_dims, nm);
    case FFT_FN_IHFFTN: return gf_ihfftn(x, s, c->n_s, d, c->n_dims, nm);
    case FFT_FN_HFFT2: return gf_hfft2(x, s, c->n_s, d, c->n_dims, nm);
    case FFT_FN_IHFFT2: return gf_ihfft2(x, s, c->n_s, d, c->n_dims, nm);
    }
    return NULL;
}

/* ------------------------------------------------------------ against torch */
static void test_against_torch(void) {
    size_t n_cases = sizeof fft_cases / sizeof fft_cases[0];
    for (size_t k = 0; k < n_cases; k++) {
        const fft_case *c = &fft_cases[k];
        gf_dtype xdt = x_dtypes[c->x_dtype];
        bool single = xdt == GF_F32 || xdt == GF_C64 || xdt == GF_I64;
        double tol = single ? 3e-6 : 1e-12;
        gf_scope_begin();
        gf_tensor *x = c->transposed ? transposed_view(fft_data + c->x_off, c->x_sizes, xdt)
                                     : from_values(fft_data + c->x_off, c->x_sizes, c->x_rank, xdt);
        if (x && c->transposed) CHECK(!gf_tensor_is_contiguous(x));
        if (x && c->has_grad) CHECK(gf_tensor_set_requires_grad(x, true) == GF_OK);
        gf_tensor *y = x ? call_case(c, x) : NULL;
        CHECK_MSG(y != NULL, "%s: %s", c->name, gf_last_error());
        if (!y) {
            gf_scope_end();
            continue;
        }
        gf_dtype ydt = gf_tensor_dtype(y);
        CHECK_MSG(gf_dtype_is_complex(ydt) == c->y_complex, "%s: y is %s", c->name,
                  gf_dtype_name(ydt));
        CHECK_MSG((gf_dtype_to_real(ydt) == GF_F32) == single, "%s: y is %s", c->name,
                  gf_dtype_name(ydt));
        CHECK_MSG(gf_tensor_rank(y) == c->y_rank, "%s: rank %d", c->name, gf_tensor_rank(y));
        for (int d = 0; d < c->y_rank && d < gf_tensor_rank(y); d++)
            CHECK_MSG(gf_tensor_size(y, d) == c->y_sizes[d], "%s: size %d is %lld, torch %lld",
                      c->name, d, (long long)gf_tensor_size(y, d), (long long)c->y_sizes[d]);
        int64_t ny = numel_of(c->y_sizes, c->y_rank) * (c->y_complex ? 2 : 1);
        check_values("y", c->name, y, fft_data + c->y_off, ny, tol);
        if (c->has_grad) {
            /* L = sum(view_as_real(y) * w), w[j] = cos(0.45 j + 0.2) */
            double *w = malloc((size_t)ny * sizeof *w);
            for (int64_t j = 0; j < ny; j++) w[j] = cos(0.45 * (double)j + 0.2);
            int64_t flat = ny;
            gf_tensor *wt = gf_from_data(w, &flat, 1, GF_F64, dev);
            free(w);
            gf_tensor *yr = c->y_complex ? gf_view_as_real(y) : y;
            gf_tensor *yf = gf_reshape(gf_contiguous(yr), &flat, 1);
            gf_tensor *loss = gf_sum(gf_mul(yf, gf_to_dtype(wt, gf_dtype_to_real(ydt))), NULL,
                                     0, false);
            gf_tensor *g = NULL;
            gf_status s = gf_grad(&loss, 1, NULL, &x, 1, &g, NULL);
            CHECK_MSG(s == GF_OK, "%s: gf_grad: %s", c->name, gf_last_error());
            if (s == GF_OK) {
                CHECK_MSG(gf_tensor_dtype(g) == xdt, "%s: grad is %s", c->name,
                          gf_dtype_name(gf_tensor_dtype(g)));
                int64_t nx = numel_of(c->x_sizes, c->x_rank) * (gf_dtype_is_complex(xdt) ? 2 : 1);
                check_values("grad", c->name, g, fft_data + c->g_off, nx, tol * 10);
            }
        }
        gf_scope_end();
    }
}

/* ------------------------------------------------------------ identities */
static gf_tensor *rand_c(const int64_t *sizes, int rank) {
    gf_tensor *z = gf_randn_complex(sizes, rank, GF_C128, dev);
    CHECK_MSG(z != NULL, "%s", gf_last_error());
    return z;
}

static double max_abs_diff(gf_tensor *a, gf_tensor *b) {
    gf_scope_begin();
    gf_tensor *d = gf_abs(gf_sub(a, b));
    gf_tensor *m = d ? gf_amax(d, NULL, 0, false) : NULL;
    double v = INFINITY;
    if (!m || gf_tensor_item(m, &v) != GF_OK) v = INFINITY;
    gf_scope_end();
    return v;
}

static double sum_sq(gf_tensor *t) {
    gf_scope_begin();
    gf_tensor *a = gf_abs(t);
    gf_tensor *s = a ? gf_sum(gf_mul(a, a), NULL, 0, false) : NULL;
    double v = NAN;
    if (!s || gf_tensor_item(s, &v) != GF_OK) v = NAN;
    gf_scope_end();
    return v;
}

static void test_roundtrips(void) {
    static const gf_fft_norm norms[3] = {GF_FFT_NORM_BACKWARD, GF_FFT_NORM_ORTHO,
                                         GF_FFT_NORM_FORWARD};
    int64_t s1[2] = {3, 97}, s3[3] = {4, 6, 5};
    for (int k = 0; k < 3; k++) {
        gf_fft_norm nm = norms[k];
        gf_scope_begin();
        gf_tensor *z = rand_c(s1, 2), *z3 = rand_c(s3, 3), *x = gf_real(z);
        CHECK(max_abs_diff(gf_ifft(gf_fft(z, -1, -1, nm), -1, -1, nm), z) < 1e-13);
        CHECK(max_abs_diff(gf_ifftn(gf_fftn(z3, NULL, 0, NULL, 0, nm), NULL, 0, NULL, 0, nm),
                           z3) < 1e-13);
        CHECK(max_abs_diff(gf_irfft(gf_rfft(x, -1, 1, nm), 97, 1, nm), x) < 1e-13);
        gf_tensor *xe = gf_narrow(x, 1, 0, 96); /* an even length */
        CHECK(max_abs_diff(gf_irfft(gf_rfft(xe, -1, 1, nm), 96, 1, nm), xe) < 1e-13);
        CHECK(max_abs_diff(gf_hfft(gf_ihfft(x, -1, 1, nm), 97, 1, nm), x) < 1e-13);
        gf_tensor *x3 = gf_real(z3);
        CHECK(max_abs_diff(gf_irfftn(gf_rfftn(x3, NULL, 0, NULL, 0, nm), (int64_t[]){4, 6, 5},
                                     3, NULL, 0, nm), x3) < 1e-13);
        CHECK(max_abs_diff(gf_irfft2(gf_rfft2(x3, NULL, 0, NULL, 0, nm), (int64_t[]){6, 5}, 2,
                                     NULL, 0, nm), x3) < 1e-13);
        CHECK(max_abs_diff(gf_ifft2(gf_fft2(z3, NULL, 0, NULL, 0, nm), NULL, 0, NULL, 0, nm),
                           z3) < 1e-13);
        CHECK(max_abs_diff(gf_hfftn(gf_ihfftn(x3, NULL, 0, NULL, 0, nm), (int64_t[]){4, 6, 5},
                                    3, NULL, 0, nm), x3) < 1e-13);
        CHECK(max_abs_diff(gf_hfft2(gf_ihfft2(x3, NULL, 0, NULL, 0, nm), (int64_t[]){6, 5}, 2,
                                    NULL, 0, nm), x3) < 1e-13);
        /* Parseval: sum |X|^2 = n^a sum |x|^2, a = 1, 0, -1 for the norms */
        double ex = sum_sq(z), eX = sum_sq(gf_fft(z, -1, -1, nm));
        double want = ex * (nm == GF_FFT_NORM_BACKWARD ? 97.0 : nm == GF_FFT_NORM_ORTHO ? 1.0
                                                                                         : 1.0 / 97);
        CHECK_MSG(fabs(eX - want) <= 1e-12 * want, "Parseval norm %d: %.17g vs %.17g", k, eX,
                  want);
        gf_scope_end();
    }
    /* the zero-padded transform of a length-1 signal is constant */
    gf_scope_begin();
    int64_t one = 1;
    double v = 2.5;
    gf_tensor *t = gf_from_data(&v, &one, 1, GF_F64, dev);
    gf_tensor *y = gf_fft(t, 5, 0, GF_FFT_NORM_BACKWARD);
    double re = 0, im = 1;
    int64_t i4 = 4;
    CHECK(y && gf_tensor_get_complex(y, &i4, &re, &im) == GF_OK && re == 2.5 && im == 0);
    /* an empty batch: nothing to transform, an empty result */
    int64_t s04[2] = {0, 4};
    gf_tensor *e = gf_zeros(s04, 2, GF_C128, dev);
    gf_tensor *ye = gf_fft(e, -1, -1, GF_FFT_NORM_BACKWARD);
    CHECK_MSG(ye && gf_tensor_numel(ye) == 0 && gf_tensor_size(ye, 1) == 4, "%s", gf_last_error());
    gf_tensor *re2 = gf_rfft(gf_zeros(s04, 2, GF_F64, dev), -1, -1, GF_FFT_NORM_BACKWARD);
    CHECK_MSG(re2 && gf_tensor_size(re2, 1) == 3, "%s", gf_last_error());
    gf_scope_end();
}

/* ------------------------------------------------------------ gradchecks */
typedef struct gcase {
    const char *name;
    gf_tensor *(*fn)(gf_tensor *x);
    bool complex_in;
} gcase;

static gf_tensor *g_fft(gf_tensor *x) { return gf_fft(x, 6, -1, GF_FFT_NORM_BACKWARD); }
static gf_tensor *g_fft_trim(gf_tensor *x) { return gf_fft(x, 3, 0, GF_FFT_NORM_ORTHO); }
static gf_tensor *g_fft_real(gf_tensor *x) { return gf_fft(x, -1, -1, GF_FFT_NORM_FORWARD); }
static gf_tensor *g_ifft(gf_tensor *x) { return gf_ifft(x, 7, -1, GF_FFT_NORM_BACKWARD); }
static gf_tensor *g_rfft(gf_tensor *x) { return gf_rfft(x, -1, -1, GF_FFT_NORM_BACKWARD); }
static gf_tensor *g_rfft_pad(gf_tensor *x) { return gf_rfft(x, 8, 0, GF_FFT_NORM_ORTHO); }
static gf_tensor *g_irfft(gf_tensor *x) { return gf_irfft(x, -1, -1, GF_FFT_NORM_BACKWARD); }
static gf_tensor *g_irfft_odd(gf_tensor *x) { return gf_irfft(x, 7, -1, GF_FFT_NORM_ORTHO); }
static gf_tensor *g_irfft_dim0(gf_tensor *x) { return gf_irfft(x, 4, 0, GF_FFT_NORM_FORWARD); }
static gf_tensor *g_hfft(gf_tensor *x) { return gf_hfft(x, 9, -1, GF_FFT_NORM_BACKWARD); }
static gf_tensor *g_ihfft(gf_tensor *x) { return gf_ihfft(x, -1, -1, GF_FFT_NORM_ORTHO); }
static gf_tensor *g_fftn(gf_tensor *x) {
    return gf_fftn(x, (const int64_t[]){3, 5}, 2, (const int[]){1, 0}, 2, GF_FFT_NORM_BACKWARD);
}
static gf_tensor *g_ifft2(gf_tensor *x) { return gf_ifft2(x, NULL, 0, NULL, 0, GF_FFT_NORM_ORTHO); }
static gf_tensor *g_rfftn(gf_tensor *x) {
    return gf_rfftn(x, NULL, 0, (const int[]){1, 0}, 2, GF_FFT_NORM_BACKWARD);
}
static gf_tensor *g_rfft2(gf_tensor *x) {
    return gf_rfft2(x, (const int64_t[]){5, 3}, 2, NULL, 0, GF_FFT_NORM_FORWARD);
}
static gf_tensor *g_irfftn(gf_tensor *x) {
    return gf_irfftn(x, (const int64_t[]){3, 5}, 2, NULL, 0, GF_FFT_NORM_BACKWARD);
}
static gf_tensor *g_irfft2(gf_tensor *x) { return gf_irfft2(x, NULL, 0, NULL, 0, GF_FFT_NORM_ORTHO); }
static gf_tensor *g_hfftn(gf_tensor *x) {
    return gf_hfftn(x, (const int64_t[]){3, 6}, 2, (const int[]){1, 0}, 2, GF_FFT_NORM_ORTHO);
}
static gf_tensor *g_ihfft2(gf_tensor *x) {
    return gf_ihfft2(x, NULL, 0, NULL, 0, GF_FFT_NORM_BACKWARD);
}
static gf_tensor *g_shift(gf_tensor *x) {
    return gf_ifftshift(gf_fftshift(gf_fft(x, -1, 0, GF_FFT_NORM_BACKWARD), NULL, 0),
                        (const int[]){1}, 1);
}
/* A nonlinear loss after the transform, so that gradgradcheck sees a
 * gradient that depends on x. */
static gf_tensor *g_abs_rfft(gf_tensor *x) {
    gf_tensor *y = gf_rfft(x, -1, -1, GF_FFT_NORM_BACKWARD);
    return gf_mul(y, gf_conj(y));
}

static gf_tensor *run_gcase(gf_tensor *const *in, int n, void *user) {
    (void)n;
    const gcase *c = user;
    gf_scope_begin(); /* the intermediates of the composed cases */
    gf_tensor *r = gf_scope_keep(c->fn(c->complex_in ? in[0] : in[1]));
    gf_scope_end();
    return r;
}

static void test_gradchecks(void) {
    int64_t sizes[2] = {4, 5};
    gf_tensor *in[2] = {rand_c(sizes, 2), NULL};
    gf_tensor *zr = rand_c(sizes, 2);
    gf_tensor *re = zr ? gf_real(zr) : NULL;
    in[1] = re ? gf_clone(re) : NULL;
    gf_tensor_release(re);
    gf_tensor_release(zr);
    if (!in[0] || !in[1]) return;
    CHECK(gf_tensor_set_requires_grad(in[0], true) == GF_OK);
    CHECK(gf_tensor_set_requires_grad(in[1], true) == GF_OK);
    const gcase cases[] = {
        {"fft pad", g_fft, true},          {"fft trim dim0", g_fft_trim, true},
        {"fft of real", g_fft_real, false}, {"ifft", g_ifft, true},
        {"rfft", g_rfft, false},           {"rfft pad dim0", g_rfft_pad, false},
        {"irfft", g_irfft, true},          {"irfft odd", g_irfft_odd, true},
        {"irfft dim0", g_irfft_dim0, true}, {"hfft", g_hfft, true},
        {"ihfft", g_ihfft, false},         {"fftn", g_fftn, true},
        {"ifft2 of real", g_ifft2, false}, {"rfftn onesided dim0", g_rfftn, false},
        {"rfft2", g_rfft2, false},         {"irfftn", g_irfftn, true},
        {"irfft2", g_irfft2, true},        {"fftshift", g_shift, true},
        {"|rfft|^2", g_abs_rfft, false},   {"hfftn dims 1,0", g_hfftn, true},
        {"ihfft2", g_ihfft2, false},
    };
    gf_gradcheck_opts o = GF_GRADCHECK_OPTS_DEFAULT;
    o.eps = 1e-6, o.atol = 1e-7, o.rtol = 1e-5;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gf_status s = gf_gradcheck(run_gcase, in, 2, (void *)&cases[i], &o);
        CHECK_MSG(s == GF_OK, "gradcheck %s: %s", cases[i].name, gf_last_error());
        s = gf_gradgradcheck(run_gcase, in, 2, (void *)&cases[i], &o);
        CHECK_MSG(s == GF_OK, "gradgradcheck %s: %s", cases[i].name, gf_last_error());
    }
    gf_tensor_release(in[0]);
    gf_tensor_release(in[1]);
}

/* ------------------------------------------------------------ helpers */
static void test_freq_shift(void) {
    gf_scope_begin();
    size_t nf = sizeof fft_freq_cases / sizeof fft_freq_cases[0];
    for (size_t i = 0; i < nf; i++) {
        const fft_freq_case *c = &fft_freq_cases[i];
        gf_tensor *t = c->is_rfft ? gf_rfftfreq(c->n, c->d, GF_F64, dev)
                                  : gf_fftfreq(c->n, c->d, GF_F64, dev);
        CHECK_MSG(t && gf_tensor_numel(t) == c->count, "freq %zu: %s", i, gf_last_error());
        if (t) check_values("freq", c->is_rfft ? "rfftfreq" : "fftfreq", t, c->v, c->count, 0);
    }
    gf_tensor *f = gf_fftfreq(7, 0.3, GF_F32, NULL); /* the default device */
    float got[7];
    CHECK(f && gf_tensor_dtype(f) == GF_F32 && gf_tensor_to_host(f, got, sizeof got) == GF_OK);
    for (int i = 0; f && i < 7; i++) CHECK_MSG(got[i] == fft_freq_f32[i], "f32 freq %d", i);
    gf_tensor *e = gf_fftfreq(0, 1.0, GF_F64, dev);
    CHECK(e && gf_tensor_numel(e) == 0);

    int64_t s253[3] = {2, 5, 3};
    gf_tensor *base = gf_reshape(gf_arange(0, 30, 1, GF_F64, dev), s253, 3);
    static const int d1[1] = {1}, dm10[2] = {-1, 0};
    struct {
        bool inverse;
        const int *dims;
        int nd;
        const double *want;
    } sh[6] = {{false, NULL, 0, fft_fftshift_all},     {false, d1, 1, fft_fftshift_d1},
               {false, dm10, 2, fft_fftshift_dm1_0},   {true, NULL, 0, fft_ifftshift_all},
               {true, d1, 1, fft_ifftshift_d1},        {true, dm10, 2, fft_ifftshift_dm1_0}};
    for (int i = 0; i < 6; i++) {
        gf_tensor *r = sh[i].inverse ? gf_ifftshift(base, sh[i].dims, sh[i].nd)
                                     : gf_fftshift(base, sh[i].dims, sh[i].nd);
        CHECK_MSG(r != NULL, "shift %d: %s", i, gf_last_error());
        if (r) check_values("shift", sh[i].inverse ? "ifftshift" : "fftshift", r, sh[i].want, 30, 0);
        if (r) CHECK(max_abs_diff(sh[i].inverse ? gf_fftshift(r, sh[i].dims, sh[i].nd)
                                                : gf_ifftshift(r, sh[i].dims, sh[i].nd),
                                  base) == 0);
    }
    /* no dims to roll: a copy (a 0-dim x, or an empty dims list) */
    gf_tensor *sc = gf_scalar(3.0, GF_F64, dev);
    gf_tensor *sc2 = gf_fftshift(sc, NULL, 0);
    CHECK_MSG(sc2 && gf_tensor_rank(sc2) == 0, "%s", gf_last_error());
    gf_tensor *b2 = gf_ifftshift(base, d1, 0);
    CHECK(b2 && max_abs_diff(b2, base) == 0);
    gf_scope_end();
}

/* ------------------------------------------------------------ errors */
static void expect_error(gf_tensor *r, gf_status want, const char *needle, const char *what) {
    CHECK_MSG(r == NULL, "%s: expected an error", what);
    gf_tensor_release(r);
    gf_status s = gf_last_status();
    CHECK_MSG(s == want, "%s: status %s, expected %s (%s)", what, gf_status_name(s),
              gf_status_name(want), gf_last_error());
    CHECK_CONTAINS(gf_last_error(), needle);
}

static void test_errors(void) {
    int64_t s34[2] = {3, 4}, one = 1;
    gf_tensor *x = gf_zeros(s34, 2, GF_F64, dev), *z = gf_zeros(s34, 2, GF_C128, dev);
    gf_tensor *x1 = gf_zeros(&one, 1, GF_C128, dev), *sc = gf_scalar(1.0, GF_F64, dev);
    const gf_fft_norm N = GF_FFT_NORM_BACKWARD;
    expect_error(gf_fft(x, 0, -1, N), GF_ERR_INVALID, "n is 0; a signal length must be at least 1",
                 "n = 0");
    expect_error(gf_rfft(x, -2, -1, N), GF_ERR_INVALID, "GF_FFT_SIZE_DEFAULT", "n = -2");
    expect_error(gf_fft(x, -1, 2, N), GF_ERR_INDEX, "gf_fft", "dim 2 of rank 2");
    expect_error(gf_ifft(sc, -1, -1, N), GF_ERR_SHAPE, "0-dim", "1-D form of a 0-dim x");
    expect_error(gf_rfft(z, -1, -1, N), GF_ERR_DTYPE, "use gf_fft for a complex one", "rfft c128");
    expect_error(gf_ihfft(z, -1, -1, N), GF_ERR_DTYPE, "use gf_ifft", "ihfft c128");
    expect_error(gf_rfftn(z, NULL, 0, NULL, 0, N), GF_ERR_DTYPE, "gf_fftn", "rfftn c128");
    expect_error(gf_fft(x, -1, -1, (gf_fft_norm)7), GF_ERR_INVALID, "norm 7 is not",
                 "bad norm");
    expect_error(gf_irfft(x1, -1, -1, N), GF_ERR_INVALID, "default 2 (m - 1)",
                 "irfft default n of one bin");
    expect_error(gf_hfft(x1, -1, 0, N), GF_ERR_INVALID, "at least 1", "hfft default n");
    gf_tensor *e30 = gf_zeros((int64_t[]){3, 0}, 2, GF_C128, dev);
    expect_error(gf_fft(e30, -1, -1, N), GF_ERR_INVALID,
                 "the input's size", "fft of an empty signal");
    expect_error(gf_fftn(z, (const int64_t[]){4, 4}, 2, (const int[]){0}, 1, N), GF_ERR_INVALID,
                 "must have the same length", "s and dims lengths");
    expect_error(gf_fftn(z, NULL, 0, (const int[]){1, -1}, 2, N), GF_ERR_INVALID,
                 "given twice", "repeated dims");
    expect_error(gf_fftn(z, (const int64_t[]){2, 2, 2}, 3, NULL, 0, N), GF_ERR_SHAPE,
                 "s has 3 lengths but x has only 2 dims", "s too long");
    expect_error(gf_fftn(z, (const int64_t[]){2, 0}, 2, NULL, 0, N), GF_ERR_INVALID,
                 "s[1] is 0", "s entry 0");
    expect_error(gf_fftn(z, NULL, 2, NULL, 0, N), GF_ERR_INVALID, "s is NULL with n_s = 2",
                 "NULL s");
    expect_error(gf_fftn(z, NULL, 0, NULL, 3, N), GF_ERR_INVALID, "dims is NULL with n_dims = 3",
                 "NULL dims");
    expect_error(gf_fftn(z, NULL, 0, (const int[]){0, 1, 0}, 3, N), GF_ERR_INVALID,
                 "dim 0 is given twice", "more dims than the rank");
    expect_error(gf_fftn(z, NULL, 0, (const int[]){5}, 1, N), GF_ERR_INDEX, "gf_fftn",
                 "dim out of range");
    expect_error(gf_fftn(sc, NULL, 0, (const int[]){0}, 1, N), GF_ERR_INDEX, "0-dim",
                 "dim of a 0-dim input");
    expect_error(gf_fft2(x1, NULL, 0, NULL, 0, N), GF_ERR_INDEX, "gf_fft2", "fft2 of rank 1");
    expect_error(gf_rfftn(x, NULL, 0, (const int[]){0}, 0, N), GF_ERR_INVALID,
                 "at least one", "rfftn of no dims");
    expect_error(gf_ihfftn(z, NULL, 0, NULL, 0, N), GF_ERR_DTYPE, "gf_ifftn", "ihfftn c128");
    expect_error(gf_ihfft2(z, NULL, 0, NULL, 0, N), GF_ERR_DTYPE, "gf_ifft2", "ihfft2 c128");
    expect_error(gf_hfftn(z, NULL, 0, (const int[]){0}, 0, N), GF_ERR_INVALID,
                 "at least one", "hfftn of no dims");
    expect_error(gf_hfft2(x1, NULL, 0, NULL, 0, N), GF_ERR_INDEX, "gf_hfft2", "hfft2 of rank 1");
    expect_error(gf_irfftn(z, NULL, 0, (const int[]){0}, 0, N), GF_ERR_INVALID,
                 "at least one", "irfftn of no dims");
    expect_error(gf_fft(NULL, -1, -1, N), GF_ERR_INVALID, "gf_fft: x is NULL", "NULL x");
    gf_last_error(); /* read: the next NULL is a new mistake */
    expect_error(gf_fftfreq(-1, 1.0, GF_F64, dev), GF_ERR_INVALID, "n is -1", "fftfreq n < 0");
    expect_error(gf_rfftfreq(4, 1.0, GF_I64, dev), GF_ERR_DTYPE, "GF_F32 or GF_F64",
                 "rfftfreq dtype");
    expect_error(gf_fftshift(x, (const int[]){2}, 1), GF_ERR_INDEX, "gf_fftshift",
                 "fftshift dim");
    expect_error(gf_ifftshift(x, NULL, 1), GF_ERR_INVALID, "dims is NULL with n_dims = 1",
                 "ifftshift NULL dims");
    expect_error(gf_fftshift(sc, (const int[]){0}, 1), GF_ERR_INDEX, "0-dim", "shift 0-dim dim");
    /* integer and bool inputs become f32 (c64 out), as torch */
    gf_tensor *xi = gf_zeros(s34, 2, GF_BOOL, dev);
    gf_tensor *yi = gf_fft(xi, -1, -1, N);
    CHECK_MSG(yi && gf_tensor_dtype(yi) == GF_C64, "%s", gf_last_error());
    gf_tensor_release(yi);
    gf_tensor_release(xi);
    gf_tensor *arr[] = {x, z, x1, sc, e30};
    for (int i = 0; i < 5; i++) gf_tensor_release(arr[i]);
}

/* ------------------------------------------------------------ devices */
static void test_device(void) {
    gf_device *def = gf_device_default();
    gf_device_info info;
    CHECK(gf_device_get_info(def, &info) == GF_OK);
    for (int i = 0; i < gf_device_count() && !dev; i++) {
        gf_device_info di;
        if (gf_device_get_info(gf_device_at(i), &di) == GF_OK && (di.dtypes & (1u << GF_C128)))
            dev = gf_device_at(i);
    }
    if (info.dtypes & (1u << GF_C128)) dev = def;
    CHECK_MSG(dev != NULL, "no device stores c128 (the reference plugin does)");
    if (dev == def || !dev) return;
    /* the default device cannot hold the complex result: a clear error */
    int64_t n = 4;
    gf_tensor *x = gf_ones(&n, 1, GF_F64, def);
    gf_tensor *y = gf_rfft(x, -1, -1, GF_FFT_NORM_BACKWARD);
    CHECK(y == NULL && gf_last_status() == GF_ERR_DTYPE);
    CHECK_CONTAINS(gf_last_error(), gf_device_spec(def));
    CHECK_CONTAINS(gf_last_error(), "c128");
    gf_tensor_release(x);
}

int main(void) {
    /* A GRAFT_DEVICE that names no device here (cuda without a GPU): say so
     * and skip (77), as the other programs of the every-device list do. */
    gf_device_info info;
    if (gf_device_get_info(gf_device_default(), &info) != GF_OK) {
        printf("skipped: %s\n", gf_last_error());
        return 77;
    }
    RUN(test_device);
    if (!dev) return CHECK_REPORT();
    RUN(test_against_torch);
    RUN(test_roundtrips);
    RUN(test_gradchecks);
    RUN(test_freq_shift);
    RUN(test_errors);
    return CHECK_REPORT();
}
