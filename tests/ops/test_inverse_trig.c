/* SPDX-License-Identifier: BSD-3-Clause */
/* test_inverse_trig.c — gf_asin, gf_acos, gf_atan and gf_atan2, forward:
 * hand-computed values (multiples of pi), C's special values (signed zeros,
 * infinities, NaN, arguments outside [-1, 1]) with the sign of every zero
 * checked, integer and bool inputs (f32 results, as PyTorch), strided,
 * broadcast, 0-size and 0-dim operands, and the errors. Also run on every
 * device of the cross-device suites (GRAFT_DEVICE), f64 where the device
 * stores it; the wide sweeps against the reference are in each device's
 * elementwise suite. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ops_test.h"

#define PI OT_PI

static bool has_f64;
/* Relative tolerance: the C library's rounding on the reference device (and,
 * in f64, the rounding of inputs such as 2 - sqrt(3)), a few ulp elsewhere. */
static double rtol32 = 2.4e-7, rtol64 = 2e-15;

static double tol_of(gf_dtype dt) { return dt == GF_F32 ? rtol32 : rtol64; }

/* got within rtol of want, NaN for NaN, infinities exact, and a zero (of
 * either) with the sign of the other. */
static bool same(double got, double want, double rtol) {
    if (isnan(want) || isnan(got)) return isnan(want) && isnan(got);
    if (want == 0 || got == 0) return got == want && signbit(got) == signbit(want);
    if (isinf(want) || isinf(got)) return got == want;
    return fabs(got - want) <= rtol * fabs(want);
}

static void expect_vals(const char *what, const gf_tensor *t, gf_dtype dt, int rank,
                        const int64_t *sizes, const double *want) {
    if (!t) {
        FAILF("%s (%s): NULL: %s", what, gf_dtype_name(dt), gf_last_error());
        return;
    }
    if (gf_tensor_dtype(t) != dt || !ot_same_shape(t, rank, sizes)) {
        FAILF("%s: dtype %s rank %d, expected %s rank %d", what,
              gf_dtype_name(gf_tensor_dtype(t)), gf_tensor_rank(t), gf_dtype_name(dt), rank);
        return;
    }
    double *got = ot_read(t);
    int64_t n = ot_numel(rank, sizes);
    int bad = 0;
    for (int64_t i = 0; i < n && got; i++)
        if (!same(got[i], want[i], tol_of(dt)) && bad++ < 4)
            FAILF("%s (%s) element %lld: %.17g, expected %.17g", what, gf_dtype_name(dt),
                  (long long)i, got[i], want[i]);
    if (!got) FAILF("%s: to_host: %s", what, gf_last_error());
    else if (!bad) check_passed_++;
    free(got);
}

/* want[] as the dtype computes it: the value itself in f64, C's f32 function
 * of the float-rounded input in f32 (special values are the same in both). */
typedef double (*fn1)(double);
typedef double (*fn2)(double, double);
static double f_asin(double x) { return asin(x); }
static double f_acos(double x) { return acos(x); }
static double f_atan(double x) { return atan(x); }
static double f32_asin(double x) { return asinf((float)x); }
static double f32_acos(double x) { return acosf((float)x); }
static double f32_atan(double x) { return atanf((float)x); }
static double f32_atan2(double y, double x) { return atan2f((float)y, (float)x); }

typedef struct unary_op {
    const char *name;
    gf_tensor *(*f)(const gf_tensor *);
    fn1 ref64, ref32;
} unary_op;
static const unary_op UOPS[] = {
    {"asin", gf_asin, f_asin, f32_asin},
    {"acos", gf_acos, f_acos, f32_acos},
    {"atan", gf_atan, f_atan, f32_atan},
};

static gf_dtype dtype_at(int k) { return k ? GF_F64 : GF_F32; }

/* ------------------------------------------------------------ hand values */
static void test_hand_values(void) {
    const double r3 = sqrt(3.0), h = sqrt(0.5);
    for (int k = 0; k < 2; k++) {
        gf_dtype dt = dtype_at(k);
        if (dt == GF_F64 && !has_f64) continue;
        double xs[8] = {0.5, -0.5, h, -h, r3 / 2, 1, -1, 0};
        gf_tensor *x = ot_make(dt, 1, SZ(8), xs);
        gf_tensor *y[3] = {gf_asin(x), gf_acos(x), NULL};
        expect_vals("asin", y[0], dt, 1, SZ(8),
                    DV(PI / 6, -PI / 6, PI / 4, -PI / 4, PI / 3, PI / 2, -PI / 2, 0));
        expect_vals("acos", y[1], dt, 1, SZ(8),
                    DV(PI / 3, 2 * PI / 3, PI / 4, 3 * PI / 4, PI / 6, 0, PI, PI / 2));
        double ts[6] = {1, -1, r3, -1 / r3, 2 - r3, 2 + r3};
        gf_tensor *t = ot_make(dt, 1, SZ(6), ts);
        y[2] = gf_atan(t);
        expect_vals("atan", y[2], dt, 1, SZ(6),
                    DV(PI / 4, -PI / 4, PI / 3, -PI / 6, PI / 12, 5 * PI / 12));
        /* atan2 around the circle: (1, 1) ... and the axes */
        gf_tensor *ay = ot_make(dt, 1, SZ(8), DV(1, 1, -1, -1, 0, 1, 0, -1));
        gf_tensor *ax = ot_make(dt, 1, SZ(8), DV(1, -1, -1, 1, 2, 0, -2, 0));
        gf_tensor *a2 = gf_atan2(ay, ax);
        expect_vals("atan2", a2, dt, 1, SZ(8),
                    DV(PI / 4, 3 * PI / 4, -3 * PI / 4, -PI / 4, 0, PI / 2, PI, -PI / 2));
        /* atan2(y, x) = atan(y / x) for x > 0, at a sharper angle */
        gf_tensor *s3 = ot_make(dt, 0, NULL, DV(r3)), *three = ot_make(dt, 0, NULL, DV(3));
        gf_tensor *b2 = gf_atan2(s3, three);
        expect_vals("atan2 0-dim", b2, dt, 0, NULL, DV(PI / 6));
        REL(x, y[0], y[1], y[2], t, ay, ax, a2, s3, three, b2);
    }
}

/* ------------------------------------------------------------ special values */
static void test_special_values(void) {
    const double sv[10] = {0.0, -0.0, 1.0, -1.0, 1.0000001, -2.5, INFINITY, -INFINITY, NAN, 1e-30};
    for (int k = 0; k < 2; k++) {
        gf_dtype dt = dtype_at(k);
        if (dt == GF_F64 && !has_f64) continue;
        gf_tensor *x = ot_make(dt, 1, SZ(10), sv);
        for (size_t o = 0; o < sizeof UOPS / sizeof UOPS[0]; o++) {
            double want[10];
            for (int i = 0; i < 10; i++)
                want[i] = dt == GF_F32 ? UOPS[o].ref32(sv[i]) : UOPS[o].ref64(sv[i]);
            gf_tensor *y = UOPS[o].f(x);
            expect_vals(UOPS[o].name, y, dt, 1, SZ(10), want);
            gf_tensor_release(y);
        }
        /* asin, acos are NaN outside [-1, 1] (1.0000001 is above 1 in f32
         * too), atan is +-pi/2 at +-inf: the table above, pinned by hand. */
        gf_tensor *ya = gf_asin(x), *yt = gf_atan(x);
        double *va = ot_read(ya), *vt = ot_read(yt);
        CHECK(va && isnan(va[4]) && isnan(va[5]) && isnan(va[6]) && isnan(va[7]));
        CHECK(va && va[0] == 0 && !signbit(va[0]) && va[1] == 0 && signbit(va[1]));
        CHECK(vt && same(vt[6], PI / 2, tol_of(dt)) && same(vt[7], -PI / 2, tol_of(dt)));
        free(va), free(vt);
        REL(x, ya, yt);

        /* atan2 over every pair of special values: C's table (signed zeros
         * pick the half-plane: atan2(+-0, -0) = +-pi, atan2(+-0, +0) = +-0). */
        const double s2[9] = {0.0, -0.0, 1.5, -1.5, INFINITY, -INFINITY, NAN, 1e-30, -7e20};
        double ys[81], xs[81], want[81];
        for (int i = 0; i < 9; i++)
            for (int j = 0; j < 9; j++) {
                ys[i * 9 + j] = s2[i], xs[i * 9 + j] = s2[j];
                want[i * 9 + j] = dt == GF_F32 ? f32_atan2(s2[i], s2[j]) : atan2(s2[i], s2[j]);
            }
        gf_tensor *ty = ot_make(dt, 2, SZ(9, 9), ys), *tx = ot_make(dt, 2, SZ(9, 9), xs);
        gf_tensor *r = gf_atan2(ty, tx);
        expect_vals("atan2 specials", r, dt, 2, SZ(9, 9), want);
        /* the same through broadcasting: a column of y with a row of x */
        gf_tensor *cy = ot_make(dt, 2, SZ(9, 1), s2), *rx = ot_make(dt, 1, SZ(9), s2);
        gf_tensor *rb = gf_atan2(cy, rx);
        expect_vals("atan2 specials broadcast", rb, dt, 2, SZ(9, 9), want);
        REL(ty, tx, r, cy, rx, rb);
    }
}

/* ------------------------------------------------------------ layouts */
static void test_layouts(void) {
    const double in[6] = {-0.9, -0.3, 0.0, 0.2, 0.75, 1.0};
    const double tin[6] = {-40, -1.5, -0.1, 0.4, 3, 1e8};
    for (int k = 0; k < 2; k++) {
        gf_dtype dt = dtype_at(k);
        if (dt == GF_F64 && !has_f64) continue;
        for (size_t o = 0; o < sizeof UOPS / sizeof UOPS[0]; o++) {
            const double *v = UOPS[o].f == gf_atan ? tin : in;
            double want[6], w12[12], v12[12];
            for (int i = 0; i < 6; i++)
                want[i] = dt == GF_F32 ? UOPS[o].ref32(v[i]) : UOPS[o].ref64(v[i]);
            for (int i = 0; i < 12; i++) v12[i] = v[i % 6], w12[i] = want[i % 6];
            for (int lay = 0; lay < OT_NLAYOUTS; lay++) {
                gf_tensor *x = ot_make_layout(lay, dt, 2, SZ(2, 3), v);
                gf_tensor *y = UOPS[o].f(x);
                expect_vals(UOPS[o].name, y, dt, 2, SZ(2, 3), want);
                REL(x, y);
            }
            gf_tensor *row = ot_make(dt, 2, SZ(1, 6), v);
            gf_tensor *ex = gf_expand(row, SZ(2, 6), 2);
            gf_tensor *ye = UOPS[o].f(ex);
            expect_vals("expanded", ye, dt, 2, SZ(2, 6), w12);
            gf_tensor *x3 = ot_make_transposed(dt, 3, SZ(2, 3, 2), v12);
            gf_tensor *y3 = UOPS[o].f(x3);
            expect_vals("3-d transposed", y3, dt, 3, SZ(2, 3, 2), w12);
            gf_tensor *z = gf_zeros(SZ(0, 4), 2, dt, NULL);
            gf_tensor *yz = UOPS[o].f(z);
            EXPECT_T(yz, dt, 2, SZ(0, 4), NULL, 0);
            gf_tensor *s = ot_make(dt, 0, NULL, &v[4]);
            gf_tensor *ys = UOPS[o].f(s);
            expect_vals("0-dim", ys, dt, 0, NULL, &want[4]);
            REL(row, ex, ye, x3, y3, z, yz, s, ys);
        }
        /* atan2: strided operands, [3, 1] with [4], 0-dim with a tensor,
         * 0-size with a broadcast row */
        const double ay[6] = {-2, -0.5, 0, 0.5, 3, -1e-3};
        const double ax[6] = {1, -3, -1, 0.25, -0.5, 2};
        for (int la = 0; la < OT_NLAYOUTS; la++) {
            gf_tensor *a = ot_make_layout(la, dt, 2, SZ(2, 3), ay);
            gf_tensor *b = ot_make_layout((la + 1) % OT_NLAYOUTS, dt, 2, SZ(2, 3), ax);
            double want[6];
            for (int i = 0; i < 6; i++)
                want[i] = dt == GF_F32 ? f32_atan2(ay[i], ax[i]) : atan2(ay[i], ax[i]);
            gf_tensor *y = gf_atan2(a, b);
            expect_vals("atan2 strided", y, dt, 2, SZ(2, 3), want);
            REL(a, b, y);
        }
        gf_tensor *col = ot_make(dt, 2, SZ(3, 1), ay), *row = ot_make(dt, 1, SZ(4), ax);
        gf_tensor *y = gf_atan2(col, row);
        double want[12];
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 4; j++)
                want[i * 4 + j] = dt == GF_F32 ? f32_atan2(ay[i], ax[j]) : atan2(ay[i], ax[j]);
        expect_vals("atan2 [3,1] x [4]", y, dt, 2, SZ(3, 4), want);
        gf_tensor *s = ot_make(dt, 0, NULL, DV(-1));
        gf_tensor *ys = gf_atan2(s, row);
        for (int j = 0; j < 4; j++) want[j] = dt == GF_F32 ? f32_atan2(-1, ax[j]) : atan2(-1, ax[j]);
        expect_vals("atan2 0-dim x [4]", ys, dt, 1, SZ(4), want);
        gf_tensor *z = gf_zeros(SZ(0, 4), 2, dt, NULL);
        gf_tensor *yz = gf_atan2(z, row);
        EXPECT_T(yz, dt, 2, SZ(0, 4), NULL, 0);
        REL(col, row, y, s, ys, z, yz);
    }
}

/* ------------------------------------------------------------ dtypes */
/* Integer and bool inputs compute in f32 (torch.asin(int tensor) is float);
 * an f32 with an f64 operand of atan2 gives f64. */
static void test_dtypes(void) {
    const double iv[4] = {-1, 0, 1, 2};
    const gf_dtype idts[3] = {GF_I32, GF_I64, GF_BOOL};
    for (int d = 0; d < 3; d++) {
        gf_tensor *x = ot_make(idts[d], 1, SZ(4), iv);
        double in[4], wa[4], wc[4], wt[4], w2[4];
        for (int i = 0; i < 4; i++) in[i] = idts[d] == GF_BOOL ? iv[i] != 0 : iv[i];
        for (int i = 0; i < 4; i++) {
            wa[i] = asinf((float)in[i]), wc[i] = acosf((float)in[i]), wt[i] = atanf((float)in[i]);
            w2[i] = atan2f((float)in[i], (float)in[3 - i]);
        }
        gf_tensor *rev = gf_flip(x, (const int[]){0}, 1);
        gf_tensor *y[4] = {gf_asin(x), gf_acos(x), gf_atan(x), gf_atan2(x, rev)};
        expect_vals("asin int", y[0], GF_F32, 1, SZ(4), wa);
        expect_vals("acos int", y[1], GF_F32, 1, SZ(4), wc);
        expect_vals("atan int", y[2], GF_F32, 1, SZ(4), wt);
        expect_vals("atan2 int", y[3], GF_F32, 1, SZ(4), w2);
        REL(x, rev, y[0], y[1], y[2], y[3]);
    }
    if (has_f64) {
        gf_tensor *a = ot_make(GF_F32, 1, SZ(2), DV(1, -1));
        gf_tensor *b = ot_make(GF_F64, 1, SZ(2), DV(-1, -1));
        gf_tensor *i = ot_make(GF_I32, 1, SZ(2), DV(0, 0));
        gf_tensor *y = gf_atan2(a, b), *yi = gf_atan2(i, b);
        expect_vals("atan2 f32 x f64", y, GF_F64, 1, SZ(2), DV(3 * PI / 4, -3 * PI / 4));
        expect_vals("atan2 i32 x f64", yi, GF_F64, 1, SZ(2), DV(PI, PI));
        REL(a, b, i, y, yi);
    }
}

/* ------------------------------------------------------------ errors */
static void test_errors(void) {
    gf_tensor *a = ot_make(GF_F32, 2, SZ(2, 3), DV(1, 2, 3, 4, 5, 6));
    gf_tensor *b = ot_make(GF_F32, 1, SZ(4), DV(1, 2, 3, 4));
    EXPECT_ERR(gf_atan2(a, b), GF_ERR_SHAPE, "gf_atan2", "[2, 3]", "[4]");
    EXPECT_ERR(gf_atan2(NULL, b), GF_ERR_INVALID, "gf_atan2");
    EXPECT_ERR(gf_atan2(a, NULL), GF_ERR_INVALID, "gf_atan2");
    EXPECT_ERR(gf_asin(NULL), GF_ERR_INVALID, "gf_asin");
    EXPECT_ERR(gf_acos(NULL), GF_ERR_INVALID, "gf_acos");
    EXPECT_ERR(gf_atan(NULL), GF_ERR_INVALID, "gf_atan");
    gf_device *dev = gf_device_default(), *other = NULL;
    for (int i = 0; i < gf_device_count() && !other; i++)
        if (gf_device_at(i) != dev) other = gf_device_at(i);
    if (other) {
        gf_tensor *c = gf_to_device(a, other);
        CHECK_MSG(c != NULL, "%s", gf_last_error());
        EXPECT_ERR(gf_atan2(a, c), GF_ERR_DEVICE, "gf_atan2");
        gf_tensor_release(c);
    }
    REL(a, b);
}

int main(void) {
    gf_init();
    gf_device_info info;
    gf_device *dev = gf_device_default();
    has_f64 = dev && gf_device_get_info(dev, &info) == GF_OK && (info.dtypes & (1u << GF_F64));
    if (dev && strcmp(gf_device_plugin(dev), "reference") != 0) {
        rtol32 = 2e-6; /* OpenCL allows asin/acos/atan 4 ulp, atan2 6 ulp */
        rtol64 = 4e-15;
    }
    fprintf(stderr, "device %s, f64 %s\n", dev ? gf_device_spec(dev) : "?", has_f64 ? "yes" : "no");
    RUN(test_hand_values);
    RUN(test_special_values);
    RUN(test_layouts);
    RUN(test_dtypes);
    RUN(test_errors);
    return ot_finish();
}
