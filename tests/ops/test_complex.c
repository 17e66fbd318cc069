/* SPDX-License-Identifier: BSD-3-Clause */
/* test_complex.c — complex tensors (c64, c128) on the reference device:
 * creation, the views between complex and real (storage and version
 * shared), promotion, the elementwise ops, reductions, matmul, index and
 * selection ops, reading elements, printing, and the errors of what
 * complex tensors refuse (ordering ops, complex -> real conversion). */
#include <complex.h>
#include <graft.h>
#include <math.h>
#include <stdint.h>

#include "check.h"
#include "complex_device.h"

/* A c128 tensor of n values. */
static gf_tensor *c128s(const double complex *v, const int64_t *sizes, int rank) {
    gf_tensor *t = gf_from_data(v, sizes, rank, GF_C128, NULL);
    CHECK_MSG(t != NULL, "%s", gf_last_error());
    return t;
}

static double complex get_c(const gf_tensor *t, const int64_t *idx) {
    double re = NAN, im = NAN;
    gf_status s = gf_tensor_get_complex(t, idx, &re, &im);
    CHECK_MSG(s == GF_OK, "%s", gf_last_error());
    return CMPLX(re, im);
}

/* t (any layout, complex or real) against want[n], row-major. */
static void check_c(const char *what, const gf_tensor *t, const double complex *want, int64_t n,
                    double tol) {
    CHECK_MSG(t != NULL, "%s: %s", what, gf_last_error());
    if (!t) return;
    CHECK_MSG(gf_tensor_numel(t) == n, "%s: %lld elements", what, (long long)gf_tensor_numel(t));
    int rank = gf_tensor_rank(t);
    const int64_t *sz = gf_tensor_sizes(t);
    int64_t idx[8] = {0};
    for (int64_t k = 0; k < n && k < gf_tensor_numel(t); k++) {
        double complex g = get_c(t, idx);
        CHECK_MSG(check_close_(creal(g), creal(want[k]), tol, tol) &&
                      check_close_(cimag(g), cimag(want[k]), tol, tol),
                  "%s[%lld]: %.17g%+.17gi vs %.17g%+.17gi", what, (long long)k, creal(g), cimag(g),
                  creal(want[k]), cimag(want[k]));
        for (int d = rank - 1; d >= 0; d--) {
            if (++idx[d] < sz[d]) break;
            idx[d] = 0;
        }
    }
}

static const double complex Z3[3] = {CMPLX(1, 2), CMPLX(-0.5, 0.25), CMPLX(3, -1)};

static void test_dtypes(void) {
    CHECK(gf_dtype_size(GF_C64) == 8 && gf_dtype_size(GF_C128) == 16);
    CHECK(!strcmp(gf_dtype_name(GF_C64), "c64") && !strcmp(gf_dtype_name(GF_C128), "c128"));
    CHECK(gf_dtype_is_complex(GF_C64) && gf_dtype_is_complex(GF_C128));
    CHECK(!gf_dtype_is_float(GF_C64) && !gf_dtype_is_complex(GF_F64));
    CHECK(gf_dtype_to_real(GF_C64) == GF_F32 && gf_dtype_to_real(GF_C128) == GF_F64);
    CHECK(gf_dtype_to_complex(GF_F64) == GF_C128 && gf_dtype_to_complex(GF_I64) == GF_C64);
}

static void test_creation_and_read(void) {
    int64_t n = 3;
    gf_tensor *z = c128s(Z3, &n, 1);
    check_c("from_data", z, Z3, 3, 0);
    double re, im;
    gf_tensor *one = gf_select(z, 0, 2);
    CHECK(gf_tensor_item_complex(one, &re, &im) == GF_OK && re == 3 && im == -1);
    double v;
    CHECK(gf_tensor_item(one, &v) == GF_ERR_DTYPE);
    CHECK_CONTAINS(gf_last_error(), "gf_tensor_item_complex");
    gf_tensor *zeros = gf_zeros(&n, 1, GF_C64, NULL);
    const double complex z0[3] = {0};
    check_c("zeros c64", zeros, z0, 3, 0);
    gf_tensor *full = gf_full(&n, 1, 2.5, GF_C128, NULL);
    const double complex f[3] = {2.5, 2.5, 2.5};
    check_c("full", full, f, 3, 0);
    /* real -> complex conversion: x + 0i */
    const double r[3] = {1, -2, 0.5};
    gf_tensor *x = gf_from_data(r, &n, 1, GF_F64, NULL);
    gf_tensor *xc = gf_to_dtype(x, GF_C64);
    const double complex xw[3] = {1, -2, 0.5};
    check_c("f64 -> c64", xc, xw, 3, 0);
    gf_tensor *back = gf_to_dtype(xc, GF_C128);
    check_c("c64 -> c128", back, xw, 3, 0);
    /* complex -> real is refused, naming the way to do it */
    CHECK(gf_to_dtype(z, GF_F64) == NULL && gf_last_status() == GF_ERR_DTYPE);
    CHECK_CONTAINS(gf_last_error(), "gf_real");
    CHECK_CONTAINS(gf_last_error(), "gf_abs");
    gf_tensor *ts[] = {z, one, zeros, full, x, xc, back};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) gf_tensor_release(ts[i]);
}

/* A slice with a huge step has one element and a stride near INT64_MAX:
 * the parts views of it must not double that stride into an overflow
 * (found by fuzzing). */
static void test_views_of_huge_strides(void) {
    int64_t n = 3;
    gf_tensor *z = c128s(Z3, &n, 1);
    gf_tensor *s = gf_slice(z, 0, 0, 3, INT64_MAX - 1);
    CHECK(s && gf_tensor_numel(s) == 1);
    gf_tensor *re = gf_real(s), *im = gf_imag(s), *vr = gf_view_as_real(s);
    double v = 0;
    CHECK(re && gf_tensor_get(re, (const int64_t[]){0}, &v) == GF_OK && v == creal(Z3[0]));
    CHECK(im && gf_tensor_get(im, (const int64_t[]){0}, &v) == GF_OK && v == cimag(Z3[0]));
    CHECK(vr && gf_tensor_get(vr, (const int64_t[]){0, 1}, &v) == GF_OK && v == cimag(Z3[0]));
    gf_tensor *ts[] = {z, s, re, im, vr};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) gf_tensor_release(ts[i]);
}

static void test_views(void) {
    int64_t n = 3;
    gf_tensor *z = c128s(Z3, &n, 1);
    gf_tensor *r = gf_view_as_real(z);
    CHECK(r && gf_tensor_dtype(r) == GF_F64 && gf_tensor_rank(r) == 2 &&
          gf_tensor_sizes(r)[0] == 3 && gf_tensor_sizes(r)[1] == 2);
    CHECK(gf_tensor_shares_storage(r, z));
    double v;
    int64_t i21[2] = {2, 1};
    CHECK(gf_tensor_get(r, i21, &v) == GF_OK && v == -1);
    /* written through the real view, seen through z; one version counter */
    uint64_t ver = gf_tensor_version(z);
    gf_tensor *col = gf_select(r, 1, 0); /* the real parts */
    CHECK(gf_mul_scalar_(col, 10.0) == GF_OK);
    CHECK(gf_tensor_version(z) == ver + 1);
    int64_t i0 = 0;
    CHECK(creal(get_c(z, &i0)) == 10 && cimag(get_c(z, &i0)) == 2);
    /* and back */
    gf_tensor *zc = gf_view_as_complex(r);
    CHECK(zc && gf_tensor_dtype(zc) == GF_C128 && gf_tensor_shares_storage(zc, z));
    gf_tensor *re = gf_real(z), *im = gf_imag(z);
    const double complex rw[3] = {10, -5, 30}, iw[3] = {2, 0.25, -1};
    check_c("real", re, rw, 3, 0);
    check_c("imag", im, iw, 3, 0);
    CHECK(gf_tensor_shares_storage(re, z) && gf_tensor_shares_storage(im, z));
    CHECK(gf_mul_scalar_(im, -1.0) == GF_OK); /* conj in place through imag */
    CHECK(cimag(get_c(z, &i0)) == -2);
    /* view_as_complex needs a last dim of 2 with stride 1 */
    int64_t s23[2] = {2, 3};
    gf_tensor *bad = gf_zeros(s23, 2, GF_F64, NULL);
    CHECK(gf_view_as_complex(bad) == NULL && gf_last_status() == GF_ERR_SHAPE);
    CHECK_CONTAINS(gf_last_error(), "size 2");
    gf_tensor *t32 = gf_transpose(bad, 0, 1);
    CHECK(gf_view_as_complex(t32) == NULL && gf_last_status() == GF_ERR_SHAPE);
    CHECK_CONTAINS(gf_last_error(), "stride 1");
    CHECK(gf_view_as_real(bad) == NULL && gf_last_status() == GF_ERR_DTYPE);
    CHECK(gf_imag(bad) == NULL && gf_last_status() == GF_ERR_DTYPE);
    gf_tensor *rr = gf_real(bad); /* a real tensor is its own real part */
    CHECK(rr == bad);
    /* views of views: a transposed complex matrix */
    const double complex m[4] = {CMPLX(1, 1), CMPLX(2, 0), CMPLX(0, 3), CMPLX(4, -4)};
    int64_t s22[2] = {2, 2};
    gf_tensor *zm = c128s(m, s22, 2);
    gf_tensor *zt = gf_transpose(zm, 0, 1);
    gf_tensor *zti = gf_imag(zt);
    const double complex tw[4] = {1, 3, 0, -4};
    check_c("imag of transpose", zti, tw, 4, 0);
    gf_tensor *ts[] = {z, r, col, zc, re, im, bad, t32, rr, zm, zt, zti};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) gf_tensor_release(ts[i]);
}

static void test_promotion(void) {
    int64_t n = 3;
    gf_tensor *z64 = gf_zeros(&n, 1, GF_C64, NULL), *f64 = gf_ones(&n, 1, GF_F64, NULL);
    gf_tensor *f32 = gf_ones(&n, 1, GF_F32, NULL), *i64 = gf_ones(&n, 1, GF_I64, NULL);
    gf_tensor *a = gf_add(z64, f64), *b = gf_add(z64, f32), *c = gf_mul(i64, z64);
    gf_tensor *d = gf_add_scalar(z64, 0.5), *e = gf_div(i64, z64);
    CHECK(a && gf_tensor_dtype(a) == GF_C128);
    CHECK(b && gf_tensor_dtype(b) == GF_C64);
    CHECK(c && gf_tensor_dtype(c) == GF_C64);
    CHECK(d && gf_tensor_dtype(d) == GF_C64);
    CHECK(e && gf_tensor_dtype(e) == GF_C64);
    gf_tensor *z = gf_complex(f32, f64);
    CHECK(z && gf_tensor_dtype(z) == GF_C128);
    CHECK(gf_complex(i64, f64) == NULL && gf_last_status() == GF_ERR_DTYPE);
    CHECK(gf_complex(z64, f64) == NULL && gf_last_status() == GF_ERR_DTYPE);
    gf_tensor *ts[] = {z64, f64, f32, i64, a, b, c, d, e, z};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) gf_tensor_release(ts[i]);
}

static void test_elementwise(void) {
    int64_t n = 3;
    gf_tensor *z = c128s(Z3, &n, 1);
    const double complex w3[3] = {CMPLX(0.5, -1), CMPLX(2, 2), CMPLX(-1, 0.5)};
    gf_tensor *w = c128s(w3, &n, 1);
    double complex want[3];
#define UN(call, f)                                                          \
    do {                                                                     \
        gf_tensor *y_ = (call);                                              \
        for (int k_ = 0; k_ < 3; k_++) want[k_] = f(Z3[k_]);                 \
        check_c(#call, y_, want, 3, 1e-12);                                  \
        gf_tensor_release(y_);                                               \
    } while (0)
#define BIN(call, expr)                                                      \
    do {                                                                     \
        gf_tensor *y_ = (call);                                              \
        for (int k_ = 0; k_ < 3; k_++) {                                     \
            double complex a = Z3[k_], b = w3[k_];                           \
            (void)b;                                                         \
            want[k_] = (expr);                                               \
        }                                                                    \
        check_c(#call, y_, want, 3, 1e-12);                                  \
        gf_tensor_release(y_);                                               \
    } while (0)
    UN(gf_exp(z), cexp);
    UN(gf_log(z), clog);
    UN(gf_sqrt(z), csqrt);
    UN(gf_sin(z), csin);
    UN(gf_cos(z), ccos);
    UN(gf_tanh(z), ctanh);
    UN(gf_sinh(z), csinh);
    UN(gf_cosh(z), ccosh);
    UN(gf_conj(z), conj);
#define NEG(v) (-(v))
#define SQ(v) ((v) * (v))
#define RECIP(v) (1.0 / (v))
#define SIGM(v) (1.0 / (1.0 + cexp(-(v))))
#define CUBE(v) ((v) * (v) * (v))
    UN(gf_neg(z), NEG);
    UN(gf_square(z), SQ);
    UN(gf_reciprocal(z), RECIP);
    UN(gf_sigmoid(z), SIGM);
    UN(gf_pow_scalar(z, 3.0), CUBE);
    BIN(gf_add(z, w), a + b);
    BIN(gf_sub(z, w), a - b);
    BIN(gf_mul(z, w), a * b);
    BIN(gf_div(z, w), a / b);
    BIN(gf_pow(z, w), cpow(a, b));
    BIN(gf_mul_scalar(z, 0.1), a * 0.1);
    /* abs and angle: real results */
    gf_tensor *ab = gf_abs(z), *an = gf_angle(z);
    CHECK(ab && gf_tensor_dtype(ab) == GF_F64 && an && gf_tensor_dtype(an) == GF_F64);
    for (int k = 0; k < 3; k++) want[k] = cabs(Z3[k]);
    check_c("abs", ab, want, 3, 1e-14);
    for (int k = 0; k < 3; k++) want[k] = carg(Z3[k]);
    check_c("angle", an, want, 3, 1e-14);
    /* polar */
    gf_tensor *p = gf_polar(ab, an);
    check_c("polar", p, Z3, 3, 1e-14);
    /* comparisons that complex allows, and the predicates */
    gf_tensor *eq = gf_eq(z, z), *ne = gf_ne(z, w);
    const double complex ones[3] = {1, 1, 1};
    check_c("eq", eq, ones, 3, 0);
    check_c("ne", ne, ones, 3, 0);
    const double complex nanv[3] = {CMPLX(1, NAN), CMPLX(INFINITY, 0), CMPLX(2, 3)};
    gf_tensor *zn = c128s(nanv, &n, 1);
    gf_tensor *isn = gf_isnan(zn), *isf = gf_isfinite(zn), *isi = gf_isinf(zn);
    const double complex wn[3] = {1, 0, 0}, wf[3] = {0, 0, 1}, wi[3] = {0, 1, 0};
    check_c("isnan", isn, wn, 3, 0);
    check_c("isfinite", isf, wf, 3, 0);
    check_c("isinf", isi, wi, 3, 0);
    gf_tensor *ts[] = {z, w, ab, an, p, eq, ne, zn, isn, isf, isi};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) gf_tensor_release(ts[i]);
}

static void test_reduce_matmul_index(void) {
    const double complex m[6] = {CMPLX(1, 1), CMPLX(2, 0), CMPLX(0, 3),
                                 CMPLX(4, -4), CMPLX(-1, 0.5), CMPLX(0.5, 2)};
    int64_t s23[2] = {2, 3}, s32[2] = {3, 2};
    gf_tensor *a = c128s(m, s23, 2), *b = c128s(m, s32, 2);
    gf_tensor *s = gf_sum(a, NULL, 0, false), *mn = gf_mean(a, NULL, 0, false);
    gf_tensor *pr = gf_prod(a, NULL, 0, false);
    double complex sum = 0, prod = 1;
    for (int k = 0; k < 6; k++) {
        sum += m[k];
        prod *= m[k];
    }
    double complex mean = sum / 6.0;
    check_c("sum", s, &sum, 1, 1e-14);
    check_c("mean", mn, &mean, 1, 1e-14);
    check_c("prod", pr, &prod, 1, 1e-12);
    int d1 = 1;
    gf_tensor *s1 = gf_sum(a, &d1, 1, false);
    double complex rows[2] = {m[0] + m[1] + m[2], m[3] + m[4] + m[5]};
    check_c("sum dim 1", s1, rows, 2, 1e-14);
    gf_tensor *mm = gf_matmul(a, b);
    double complex mw[4];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            mw[i * 2 + j] = 0;
            for (int k = 0; k < 3; k++) mw[i * 2 + j] += m[i * 3 + k] * m[k * 2 + j];
        }
    check_c("matmul", mm, mw, 4, 1e-13);
    gf_tensor *ops2[2] = {a, b};
    gf_tensor *es = gf_einsum("ij,jk->ik", ops2, 2);
    check_c("einsum", es, mw, 4, 1e-13);
    /* index and selection ops copy complex elements whole */
    const int64_t iv[2] = {2, 0};
    int64_t n2 = 2;
    gf_tensor *idx = gf_from_data(iv, &n2, 1, GF_I64, NULL);
    gf_tensor *sel = gf_index_select(a, 1, idx);
    double complex sw[4] = {m[2], m[0], m[5], m[3]};
    check_c("index_select", sel, sw, 4, 0);
    gf_tensor *ts2[2] = {a, a};
    gf_tensor *cat = gf_cat(ts2, 2, 0);
    CHECK(cat && gf_tensor_size(cat, 0) == 4 && gf_tensor_dtype(cat) == GF_C128);
    int fd = 1;
    gf_tensor *fl = gf_flip(a, &fd, 1);
    double complex fw[6] = {m[2], m[1], m[0], m[5], m[4], m[3]};
    check_c("flip", fl, fw, 6, 0);
    gf_tensor *are = gf_real(a), *ac = gf_conj(a);
    gf_tensor *mask = gf_ne_scalar(are, 0.0); /* the real parts are not 0 */
    gf_tensor *wh = gf_where(mask, a, ac);
    double complex ww[6] = {m[0], m[1], conj(m[2]), m[3], m[4], m[5]};
    check_c("where", wh, ww, 6, 0);
    gf_tensor *mf = gf_masked_fill(a, mask, 7.0);
    double complex mfw[6] = {7, 7, m[2], 7, 7, 7};
    check_c("masked_fill", mf, mfw, 6, 0);
    gf_tensor *ts[] = {a, b, s, mn, pr, s1, mm, es, idx, sel, cat, fl, are, ac, mask, wh, mf};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) gf_tensor_release(ts[i]);
}

/* dot, vdot (which conjugates its first vector, as torch.vdot) and outer. */
static void test_dot_vdot_outer(void) {
    const double complex w3[3] = {CMPLX(0.5, -1), CMPLX(2, 2), CMPLX(-1, 0.5)};
    int64_t n = 3;
    gf_tensor *a = c128s(Z3, &n, 1), *b = c128s(w3, &n, 1);
    gf_tensor *d = gf_dot(a, b), *vd = gf_vdot(a, b), *o = gf_outer(a, b);
    double complex dw = 0, vw = 0, ow[9];
    for (int k = 0; k < 3; k++) {
        dw += Z3[k] * w3[k];
        vw += conj(Z3[k]) * w3[k];
        for (int j = 0; j < 3; j++) ow[k * 3 + j] = Z3[k] * w3[j];
    }
    check_c("dot", d, &dw, 1, 1e-14);
    check_c("vdot", vd, &vw, 1, 1e-14);
    check_c("outer", o, ow, 9, 0);
    CHECK(d && gf_tensor_dtype(d) == GF_C128 && vd && gf_tensor_dtype(vd) == GF_C128);
    gf_tensor *ts[] = {a, b, d, vd, o};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) gf_tensor_release(ts[i]);
}

static void test_randn(void) {
    gf_manual_seed(7);
    int64_t n = 4000;
    gf_tensor *z = gf_randn(&n, 1, GF_C128, NULL);
    CHECK(z && gf_tensor_dtype(z) == GF_C128);
    gf_tensor *re = gf_real(z), *im = gf_imag(z);
    double vr = 0, vi = 0, mr = 0;
    gf_tensor *var_r = gf_var(re, NULL, 0, 1.0, false), *var_i = gf_var(im, NULL, 0, 1.0, false);
    gf_tensor *mean_r = gf_mean(re, NULL, 0, false);
    CHECK(gf_tensor_item(var_r, &vr) == GF_OK && gf_tensor_item(var_i, &vi) == GF_OK &&
          gf_tensor_item(mean_r, &mr) == GF_OK);
    CHECK_MSG(fabs(vr - 0.5) < 0.05 && fabs(vi - 0.5) < 0.05 && fabs(mr) < 0.05,
              "var re %g, var im %g, mean re %g", vr, vi, mr);
    gf_tensor *z64 = gf_randn_complex(&n, 1, GF_C64, NULL);
    CHECK(z64 && gf_tensor_dtype(z64) == GF_C64);
    CHECK(gf_randn_complex(&n, 1, GF_F32, NULL) == NULL && gf_last_status() == GF_ERR_DTYPE);
    gf_tensor *ts[] = {z, re, im, var_r, var_i, mean_r, z64};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) gf_tensor_release(ts[i]);
}

static void test_format(void) {
    int64_t s[2] = {1, 3};
    gf_tensor *z = c128s(Z3, s, 2);
    char buf[200];
    CHECK(gf_tensor_format(z, buf, sizeof buf) == buf);
    CHECK_MSG(!strcmp(buf, "[[1+2j, -0.5+0.25j, 3-1j]], dtype=c128"), "%s", buf);
    const float r[2] = {1.5f, -2.0f};
    int64_t n = 2;
    gf_tensor *x = gf_from_data(r, &n, 1, GF_F32, NULL);
    CHECK(gf_tensor_format(x, buf, sizeof buf) == buf);
    CHECK_MSG(!strcmp(buf, "[1.5, -2], dtype=f32"), "%s", buf);
    char small[12];
    CHECK(gf_tensor_format(z, small, sizeof small) && strstr(small, "..."));
    CHECK(gf_tensor_format(z, NULL, 0) == NULL && gf_last_status() == GF_ERR_INVALID);
    gf_tensor_release(z);
    gf_tensor_release(x);
}

/* What PyTorch refuses on complex is refused, naming the op and the dtype. */
static void test_refusals(void) {
    int64_t n = 3;
    gf_tensor *z = c128s(Z3, &n, 1);
#define REFUSED(call, name)                                                                  \
    do {                                                                                     \
        gf_tensor *y_ = (call);                                                              \
        CHECK_MSG(y_ == NULL && gf_last_status() == GF_ERR_DTYPE, "%s: %s", #call,           \
                  gf_last_error());                                                          \
        CHECK_CONTAINS(gf_last_error(), name);                                               \
        CHECK_CONTAINS(gf_last_error(), "c128");                                             \
        gf_tensor_release(y_);                                                               \
    } while (0)
    REFUSED(gf_lt(z, z), "gf_lt");
    REFUSED(gf_ge_scalar(z, 0.0), "gf_ge");
    REFUSED(gf_maximum(z, z), "gf_maximum");
    REFUSED(gf_relu(z), "gf_relu");
    REFUSED(gf_clamp(z, 0.0, 1.0), "gf_clamp");
    REFUSED(gf_amax(z, NULL, 0, false), "amax");
    REFUSED(gf_argmax(z, 0, false), "argmax");
    REFUSED(gf_floor(z), "gf_floor");
    REFUSED(gf_sign(z), "gf_sign");
    REFUSED(gf_atan2(z, z), "gf_atan2");
    REFUSED(gf_var(z, NULL, 0, 1.0, false), "var");
    gf_tensor *v = NULL, *i = NULL;
    CHECK(gf_sort(z, 0, false, &v, &i) == GF_ERR_DTYPE);
    CHECK_CONTAINS(gf_last_error(), "sort");
    gf_tensor *mx = NULL, *ix = NULL;
    CHECK(gf_max_dim(z, 0, false, &mx, &ix) != GF_OK && gf_last_status() == GF_ERR_DTYPE);
    CHECK_CONTAINS(gf_last_error(), "c128");
    gf_tensor_release(z);
}

/* The default device does the work (see complex_device.h). */
static void test_device(void) {
    int64_t n = 2;
    gf_tensor *z = gf_zeros(&n, 1, GF_C128, NULL);
    CHECK_MSG(z != NULL, "%s", gf_last_error());
    if (z) check_complex_device(gf_tensor_device(z));
    gf_tensor_release(z);
}

int main(void) {
    if (complex_device_absent()) return 77;
    RUN(test_device);
    RUN(test_dtypes);
    RUN(test_creation_and_read);
    RUN(test_views);
    RUN(test_views_of_huge_strides);
    RUN(test_promotion);
    RUN(test_elementwise);
    RUN(test_reduce_matmul_index);
    RUN(test_dot_vdot_outer);
    RUN(test_randn);
    RUN(test_format);
    RUN(test_refusals);
    return CHECK_REPORT();
}
