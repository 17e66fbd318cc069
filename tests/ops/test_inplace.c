/* SPDX-License-Identifier: BSD-3-Clause */
/* test_inplace.c — in-place elementwise ops that record nothing write into
 * self directly: no new memory, the same values as out of place, for every
 * aliasing case (self with itself, broadcast operands, a transposed self,
 * an operand that overlaps self only in part, which must not be written
 * through while it is read). Recorded ones (grad mode, something requires
 * grad) still see self's old value. */
#include "ops_test.h"

static gf_device *dev;

static uint64_t peak_since_reset(void) {
    gf_memory_stats st;
    gf_memory_get_stats(dev, &st);
    return st.peak_bytes_in_use;
}

static uint64_t in_use(void) {
    gf_memory_stats st;
    gf_memory_get_stats(dev, &st);
    return st.bytes_in_use;
}

static void test_no_new_memory(void) {
    gf_tensor *x = ot_make(GF_F32, 2, SZ(2, 3), DV(1, 2, 3, 4, 5, 6));
    gf_tensor *row = ot_make(GF_F32, 1, SZ(3), DV(10, 20, 30));
    CHECK_OK(gf_memory_reset_peak(dev));
    uint64_t before = in_use();
    CHECK_OK(gf_add_(x, row)); /* broadcast operand */
    CHECK_OK(gf_mul_(x, x));   /* self with itself */
    CHECK_OK(gf_relu_(x));
    CHECK_OK(gf_clamp_(x, NAN, 1000));
    CHECK(peak_since_reset() == before); /* not one byte more at any point */
    EXPECT_T(x, GF_F32, 2, SZ(2, 3), DV(121, 484, 1000, 196, 625, 1000), 0);
    CHECK(gf_tensor_version(x) == 4);
    REL(x, row);
}

/* Every in-place form with a direct path writes into self: the tensor ops
 * allocate nothing, the scalar forms only their 0-dim scalar (far less than
 * a copy of self), and the values are those of the out-of-place ops. */
static void test_every_direct_form(void) {
    enum { N = 4096 };
    float v[N], m[N];
    bool mask[N];
    for (int i = 0; i < N; i++) {
        v[i] = 0.25f + (float)(i % 7) * 0.125f;
        m[i] = 1.5f;
        mask[i] = i % 3 == 0;
    }
    int64_t n = N;
    gf_tensor *x = gf_from_data(v, &n, 1, GF_F32, dev), *y = gf_from_data(m, &n, 1, GF_F32, dev);
    gf_tensor *mk = gf_from_data(mask, &n, 1, GF_BOOL, dev);
    gf_tensor *want = x ? gf_clone(x) : NULL;
    CHECK(x && y && mk && want);
    if (!x || !y || !mk || !want) return;
    CHECK_OK(gf_memory_reset_peak(dev));
    uint64_t before = in_use();
    CHECK_OK(gf_sub_(x, y));
    CHECK_OK(gf_div_(x, y));
    CHECK_OK(gf_sigmoid_(x));
    CHECK_OK(gf_tanh_(x));
    CHECK_OK(gf_exp_(x));
    CHECK_MSG(peak_since_reset() == before, "peak %llu, before %llu",
              (unsigned long long)peak_since_reset(), (unsigned long long)before);
    CHECK_OK(gf_masked_fill_(x, mk, 2.0)); /* the value is a scalar tensor */
    CHECK_OK(gf_add_scalar_(x, 1.0));
    CHECK_OK(gf_mul_scalar_(x, 0.5));
    CHECK_MSG(peak_since_reset() - before < sizeof v / 4, "peak grew by %llu bytes",
              (unsigned long long)(peak_since_reset() - before));
    /* the same ops out of place */
    gf_tensor *w = want;
    gf_tensor *steps[8];
    steps[0] = w = gf_sub(w, y);
    steps[1] = w = gf_div(w, y);
    steps[2] = w = gf_sigmoid(w);
    steps[3] = w = gf_tanh(w);
    steps[4] = w = gf_exp(w);
    steps[5] = w = gf_masked_fill(w, mk, 2.0);
    steps[6] = w = gf_add_scalar(w, 1.0);
    steps[7] = w = gf_mul_scalar(w, 0.5);
    float got[N], exp_[N];
    CHECK(w && gf_tensor_to_host(x, got, sizeof got) == GF_OK &&
          gf_tensor_to_host(w, exp_, sizeof exp_) == GF_OK);
    int bad = 0;
    for (int i = 0; i < N; i++) bad += got[i] != exp_[i];
    CHECK_MSG(bad == 0, "%d elements differ from the out-of-place ops", bad);
    for (int i = 0; i < 8; i++) gf_tensor_release(steps[i]);
    /* integers: clamp_int_ and the int scalar forms */
    int64_t iv[N];
    for (int i = 0; i < N; i++) iv[i] = i % 50 - 25;
    gf_tensor *xi = gf_from_data(iv, &n, 1, GF_I64, dev);
    CHECK(xi != NULL);
    CHECK_OK(gf_memory_reset_peak(dev));
    before = in_use();
    CHECK_OK(gf_add_scalar_int_(xi, 3));
    CHECK_OK(gf_mul_scalar_int_(xi, 2));
    CHECK_MSG(peak_since_reset() - before < sizeof iv / 4, "peak grew by %llu bytes",
              (unsigned long long)(peak_since_reset() - before));
    CHECK_OK(gf_clamp_int_(xi, -10, 20));
    CHECK_MSG(peak_since_reset() - before < sizeof iv / 4, "clamp_int_: peak grew by %llu bytes",
              (unsigned long long)(peak_since_reset() - before));
    int64_t gi[N];
    CHECK(xi && gf_tensor_to_host(xi, gi, sizeof gi) == GF_OK);
    bad = 0;
    for (int i = 0; i < N; i++) {
        int64_t e = (iv[i] + 3) * 2;
        e = e < -10 ? -10 : e > 20 ? 20 : e;
        bad += gi[i] != e;
    }
    CHECK_MSG(bad == 0, "clamp_int_ and the int scalar forms: %d elements wrong", bad);
    gf_tensor_release(xi);
    REL(x, y);
    REL(mk, want);
}

static void test_strided_self(void) {
    /* self is a transposed view: written through its strides */
    gf_tensor *base = ot_make(GF_F64, 2, SZ(2, 3), DV(1, 2, 3, 4, 5, 6));
    gf_tensor *t = gf_transpose(base, 0, 1); /* [3, 2]: 1 4 / 2 5 / 3 6 */
    gf_tensor *col = ot_make(GF_F64, 2, SZ(3, 1), DV(100, 200, 300));
    CHECK_OK(gf_sub_(t, col));
    EXPECT_T(base, GF_F64, 2, SZ(2, 3), DV(-99, -198, -297, -96, -195, -294), 0);
    /* a step-2 slice */
    gf_tensor *v = ot_make(GF_F32, 1, SZ(6), DV(1, 2, 3, 4, 5, 6));
    gf_tensor *odd = gf_slice(v, 0, 1, 6, 2);
    CHECK_OK(gf_exp_(odd));
    CHECK_OK(gf_mul_scalar_(odd, 0));
    EXPECT_T(v, GF_F32, 1, SZ(6), DV(1, 0, 3, 0, 5, 0), 0);
    REL(base, t, col, v, odd);
}

static void test_partial_overlap(void) {
    /* x[1:] += x[:-1]: the operand overlaps self shifted by one. Written
     * through while read, it would give running sums (1, 3, 6, 10); the
     * answer is the sum of the old values: 1, 3, 5, 7. */
    gf_tensor *x = ot_make(GF_F32, 1, SZ(5), DV(1, 2, 3, 4, 0));
    gf_tensor *head = gf_slice(x, 0, 0, 4, 1);
    gf_tensor *tail = gf_slice(x, 0, 1, 5, 1);
    CHECK_OK(gf_add_(tail, head));
    EXPECT_T(x, GF_F32, 1, SZ(5), DV(1, 3, 5, 7, 4), 0);
    /* the transpose of a square matrix added to itself in place */
    gf_tensor *m = ot_make(GF_F64, 2, SZ(2, 2), DV(1, 2, 3, 4));
    gf_tensor *mt = gf_transpose(m, 0, 1);
    CHECK_OK(gf_add_(m, mt));
    EXPECT_T(m, GF_F64, 2, SZ(2, 2), DV(2, 5, 5, 8), 0);
    /* a broadcast view of self's own first row */
    gf_tensor *s = ot_make(GF_F32, 2, SZ(2, 2), DV(1, 2, 3, 4));
    gf_tensor *r0 = gf_select(s, 0, 0);
    CHECK_OK(gf_mul_(s, r0));
    EXPECT_T(s, GF_F32, 2, SZ(2, 2), DV(1, 4, 3, 8), 0);
    REL(x, head, tail, m, mt, s, r0);
}

static void test_dtypes(void) {
    /* a float result is not written into an integer tensor (PyTorch's
     * rule): refused before anything is written */
    gf_tensor *i = ot_make(GF_I32, 1, SZ(3), DV(1, 2, 3));
    gf_tensor *h = ot_make(GF_F32, 1, SZ(3), DV(0.5, 0.5, 0.5));
    CHECK(gf_mul_(i, h) == GF_ERR_DTYPE);
    CHECK_CONTAINS(gf_last_error(), "f32");
    CHECK_CONTAINS(gf_last_error(), "gf_to_dtype");
    gf_clear_error();
    CHECK(gf_exp_(i) == GF_ERR_DTYPE);
    gf_clear_error();
    EXPECT_T(i, GF_I32, 1, SZ(3), DV(1, 2, 3), 0);
    CHECK(gf_tensor_version(i) == 0);
    /* the other way is fine: an integer operand into a float tensor, and a
     * narrower float width */
    gf_tensor *f = ot_make(GF_F32, 1, SZ(3), DV(0.5, 0.5, 0.5));
    gf_tensor *d = ot_make(GF_F64, 1, SZ(3), DV(1, 1, 1));
    CHECK_OK(gf_add_(f, i));
    CHECK_OK(gf_add_(f, d));
    EXPECT_T(f, GF_F32, 1, SZ(3), DV(2.5, 3.5, 4.5), 0);
    CHECK_OK(gf_add_scalar_int_(i, 2)); /* an int64 scalar keeps the integer kind */
    EXPECT_T(i, GF_I32, 1, SZ(3), DV(3, 4, 5), 0);
    REL(f, d);
    /* a mask */
    gf_tensor *y = ot_make(GF_F32, 1, SZ(3), DV(1, 2, 3));
    gf_tensor *mask = gf_gt_scalar(y, 1.5);
    CHECK_OK(gf_masked_fill_(y, mask, -1));
    EXPECT_T(y, GF_F32, 1, SZ(3), DV(1, -1, -1), 0);
    REL(i, h, y, mask);
}

static void test_recorded_sees_old_value(void) {
    /* grad mode with an operand that requires grad: y = x * w in place on x
     * (x does not require grad); dy/dw is x's OLD value */
    gf_tensor *x = ot_make(GF_F64, 1, SZ(2), DV(3, 5));
    gf_tensor *w = ot_make(GF_F64, 1, SZ(2), DV(2, 7));
    CHECK_OK(gf_tensor_set_requires_grad(w, true));
    CHECK_OK(gf_mul_(x, w));
    EXPECT_T(x, GF_F64, 1, SZ(2), DV(6, 35), 0);
    gf_tensor *s = gf_sum(x, NULL, 0, false);
    CHECK_OK(gf_backward(s, NULL, NULL));
    gf_tensor *g = gf_tensor_grad(w);
    EXPECT_T(g, GF_F64, 1, SZ(2), DV(3, 5), 0);
    REL(x, w, s, g);
    /* no-grad: an optimiser-style update of a parameter that requires grad */
    gf_tensor *p = ot_make(GF_F32, 1, SZ(2), DV(1, 1));
    gf_tensor *gr = ot_make(GF_F32, 1, SZ(2), DV(0.5, -0.5));
    CHECK_OK(gf_tensor_set_requires_grad(p, true));
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    CHECK_OK(gf_sub_(p, gr));
    gf_grad_mode_set(prev);
    EXPECT_T(p, GF_F32, 1, SZ(2), DV(0.5, 1.5), 0);
    CHECK(gf_tensor_is_leaf(p) && gf_tensor_requires_grad(p));
    REL(p, gr);
}

int main(void) {
    dev = gf_device_default(); /* GRAFT_DEVICE: any device runs these */
    if (!dev) {
        /* A GPU device named by the test's environment may be absent here. */
        const char *want = getenv("GRAFT_DEVICE");
        bool gpu = want && strncmp(want, "cpu", 3) != 0;
        fprintf(stderr, "%s: no device: %s\n", gpu ? "SKIPPED" : "FAILED", gf_last_error());
        return gpu ? 77 : 1;
    }
    RUN(test_no_new_memory);
    RUN(test_every_direct_form);
    RUN(test_strided_self);
    RUN(test_partial_overlap);
    RUN(test_dtypes);
    RUN(test_recorded_sees_old_value);
    return ot_finish();
}
