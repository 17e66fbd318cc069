/* SPDX-License-Identifier: BSD-3-Clause */
/* test_ocl_random.c — the OpenCL device draws the reference plugin's random
 * numbers: the same seed gives the same values (uniform and bernoulli bit for
 * bit; normal to the last bits of the device's log and cos), for every dtype,
 * a long stream, an offset into the stream, and a strided output. */
#include "xd_test.h"

typedef gf_tensor *(*draw_fn)(gf_dtype dt, gf_device *dev, const int64_t *sizes, int rank);

static gf_tensor *uniform(gf_dtype dt, gf_device *dev, const int64_t *s, int r) {
    return gf_rand_uniform(s, r, -2.0, 3.0, dt, dev);
}
static gf_tensor *normal(gf_dtype dt, gf_device *dev, const int64_t *s, int r) {
    return gf_rand_normal(s, r, 0.5, 2.0, dt, dev);
}
static gf_tensor *bernoulli(gf_dtype dt, gf_device *dev, const int64_t *s, int r) {
    return gf_bernoulli(s, r, 0.3, dt, dev);
}

/* Draws with the same seed on both devices; the second draw of a seed starts
 * at a later offset of the stream. */
static void same_numbers(const char *name, draw_fn fn, gf_dtype dt, xd_tol tol) {
    const int64_t sizes[2] = {37, 1001};
    for (int draw = 0; draw < 2; draw++) {
        gf_manual_seed(1234);
        gf_tensor *skip_o = draw ? fn(dt, xd_dev, sizes, 1) : NULL;
        gf_tensor *o = fn(dt, xd_dev, sizes, 2);
        gf_manual_seed(1234);
        gf_tensor *skip_r = draw ? fn(dt, xd_ref, sizes, 1) : NULL;
        gf_tensor *r = fn(dt, xd_ref, sizes, 2);
        char what[96];
        snprintf(what, sizeof what, "%s %s (draw %d)", name, xd_dtn(dt), draw);
        xd_check_pair_tol(what, o, r, tol);
        gf_tensor_release(skip_o);
        gf_tensor_release(skip_r);
    }
}

static void test_same_numbers(void) {
    xd_tol exact = {0, 0};
    same_numbers("uniform", uniform, GF_F32, exact);
    same_numbers("normal", normal, GF_F32, exact);
    same_numbers("bernoulli", bernoulli, GF_F32, exact);
    same_numbers("bernoulli", bernoulli, GF_I32, exact);
    same_numbers("bernoulli", bernoulli, GF_I64, exact);
    same_numbers("bernoulli", bernoulli, GF_BOOL, exact);
    if (xd_stores(GF_F64)) {
        same_numbers("uniform", uniform, GF_F64, exact);
        /* log and cos of the device may differ from the C library's in the
         * last bit or two. */
        same_numbers("normal", normal, GF_F64, (xd_tol){1e-14, 1e-14});
        same_numbers("bernoulli", bernoulli, GF_F64, exact);
    }
}

/* Dropout draws into a fresh tensor and scales: the same mask on both. */
static void test_dropout(void) {
    xd_pair x = xd_pair_rand(GF_F32, 2, SZ(64, 50), XV_PLAIN, XL_TRANSPOSED);
    gf_manual_seed(99);
    gf_tensor *o = gf_dropout(x.d, 0.25, true);
    gf_manual_seed(99);
    gf_tensor *r = gf_dropout(x.r, 0.25, true);
    xd_check_pair("dropout", o, r);
    xd_pair_release(x);
}

/* Bernoulli at p = 0 and 1, and a probability that is not a multiple of
 * 2^-24, where the threshold must round the right way. */
static void test_bernoulli_edges(void) {
    const double ps[] = {0.0, 1.0, 0.5, 1.0 / 3.0, 1e-9};
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
        gf_manual_seed(7 + i);
        gf_tensor *o = gf_bernoulli(SZ(5000), 1, ps[i], GF_F32, xd_dev);
        gf_manual_seed(7 + i);
        gf_tensor *r = gf_bernoulli(SZ(5000), 1, ps[i], GF_F32, xd_ref);
        char what[64];
        snprintf(what, sizeof what, "bernoulli p = %g", ps[i]);
        xd_check_pair_tol(what, o, r, (xd_tol){0, 0});
    }
}

int main(void) {
    int rc = xd_init();
    if (rc) return rc;
    RUN(test_same_numbers);
    RUN(test_dropout);
    RUN(test_bernoulli_edges);
    return CHECK_REPORT();
}
