/* SPDX-License-Identifier: BSD-3-Clause */
/* test_linalg.c — matmul in all its shapes (1-D and 2-D operands, batched
 * with broadcast batch dims, transposed and expanded inputs, 0-size), and
 * softmax/log_softmax along each dim. A plain host matmul is the reference. */
#include "ops_test.h"

/* torch.matmul semantics on the host: writes the result shape and values. */
static int host_matmul(int ra, const int64_t *sa, const double *va, int rb, const int64_t *sb,
                       const double *vb, int64_t *so, double **out) {
    int64_t A[GF_MAX_RANK] = {0}, B[GF_MAX_RANK] = {0};
    int na = ra, nb = rb;
    if (ra == 1) A[0] = 1, A[1] = sa[0], na = 2;
    else for (int i = 0; i < ra; i++) A[i] = sa[i];
    if (rb == 1) B[0] = sb[0], B[1] = 1, nb = 2;
    else for (int i = 0; i < rb; i++) B[i] = sb[i];
    int64_t M = A[na - 2], K = A[na - 1], N = B[nb - 1];
    int bra = na - 2, brb = nb - 2, br = bra > brb ? bra : brb;
    int64_t bs[GF_MAX_RANK];
    for (int d = 0; d < br; d++) {
        int da = d - (br - bra), db = d - (br - brb);
        int64_t x = da >= 0 ? A[da] : 1, y = db >= 0 ? B[db] : 1;
        bs[d] = x == 1 ? y : x;
    }
    int64_t nbatch = ot_numel(br, bs);
    double *o = calloc((size_t)(nbatch * M * N > 0 ? nbatch * M * N : 1), sizeof(double));
    for (int64_t bi = 0; bi < nbatch; bi++) {
        int64_t idx[GF_MAX_RANK], rem = bi, ia = 0, ib = 0;
        for (int d = br - 1; d >= 0; d--) idx[d] = rem % bs[d], rem /= bs[d];
        for (int d = 0; d < bra; d++) ia = ia * A[d] + (A[d] == 1 ? 0 : idx[d + br - bra]);
        for (int d = 0; d < brb; d++) ib = ib * B[d] + (B[d] == 1 ? 0 : idx[d + br - brb]);
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++) {
                double s = 0;
                for (int64_t k = 0; k < K; k++)
                    s += va[ia * M * K + m * K + k] * vb[ib * K * N + k * N + n];
                o[bi * M * N + m * N + n] = s;
            }
    }
    int ro = 0;
    for (int d = 0; d < br; d++) so[ro++] = bs[d];
    if (ra > 1) so[ro++] = M;
    if (rb > 1) so[ro++] = N;
    *out = o;
    return ro;
}

static void fill(double *v, int64_t n, double a, double b) {
    for (int64_t i = 0; i < n; i++) v[i] = (double)((i * 5 + 3) % 9) * a + b;
}

static void run_matmul(gf_dtype dt, int ra, const int64_t *sa, int la, int rb,
                       const int64_t *sb, int lb) {
    double va[256], vb[256];
    int64_t na = ot_numel(ra, sa), nbv = ot_numel(rb, sb);
    fill(va, na, 0.25, -1);
    fill(vb, nbv, -0.5, 1.25);
    int64_t so[GF_MAX_RANK];
    double *want = NULL;
    int ro = host_matmul(ra, sa, va, rb, sb, vb, so, &want);
    gf_tensor *a = ot_make_layout(la, dt, ra, sa, va);
    gf_tensor *b = ot_make_layout(lb, dt, rb, sb, vb);
    gf_tensor *y = gf_matmul(a, b);
    int failed_before = check_failed_;
    EXPECT_T(y, dt, ro, so, want, dt == GF_F32 ? 1e-5 : 1e-12);
    if (check_failed_ != failed_before) {
        char s1[64], s2[64];
        ot_shape_str(ra, sa, s1, sizeof s1);
        ot_shape_str(rb, sb, s2, sizeof s2);
        fprintf(stderr, "  (in matmul %s %s %s @ %s %s)\n", gf_dtype_name(dt), s1,
                ot_layout_names[la], s2, ot_layout_names[lb]);
    }
    free(want);
    REL(a, b, y);
}

static void test_matmul_hand(void) {
    gf_tensor *a = ot_make(GF_F32, 2, SZ(2, 3), DV(1, 2, 3, 4, 5, 6));
    gf_tensor *b = ot_make(GF_F32, 2, SZ(3, 4), DV(1, 0, -1, 2, 0, 1, 1, 0, 2, -1, 0, 1));
    gf_tensor *v3 = ot_make(GF_F32, 1, SZ(3), DV(1, 2, 3));
    gf_tensor *w3 = ot_make(GF_F32, 1, SZ(3), DV(1, 0, -1));
    gf_tensor *u3 = ot_make(GF_F32, 1, SZ(3), DV(4, 5, 6));
    gf_tensor *r[4];
    r[0] = gf_matmul(a, b);
    EXPECT_T(r[0], GF_F32, 2, SZ(2, 4), DV(7, -1, 1, 5, 16, -1, 1, 14), 0);
    r[1] = gf_matmul(v3, b); /* 1-D @ 2-D */
    EXPECT_T(r[1], GF_F32, 1, SZ(4), DV(7, -1, 1, 5), 0);
    r[2] = gf_matmul(a, w3); /* 2-D @ 1-D */
    EXPECT_T(r[2], GF_F32, 1, SZ(2), DV(-2, -2), 0);
    r[3] = gf_matmul(v3, u3); /* 1-D @ 1-D: 0-dim */
    EXPECT_T(r[3], GF_F32, 0, NULL, DV(32), 0);
    for (int i = 0; i < 4; i++) gf_tensor_release(r[i]);
    REL(a, b, v3, w3, u3);
}

static void test_matmul_shapes(void) {
    static const struct {
        int ra;
        int64_t sa[4];
        int rb;
        int64_t sb[4];
    } shapes[] = {
        {2, {2, 3}, 2, {3, 4}},
        {1, {3}, 2, {3, 4}},
        {2, {2, 3}, 1, {3}},
        {1, {5}, 1, {5}},
        {4, {2, 1, 3, 4}, 3, {5, 4, 2}}, /* -> [2, 5, 3, 2] */
        {3, {5, 4, 2}, 2, {2, 3}},
        {2, {4, 2}, 3, {3, 2, 5}},
        {1, {4}, 3, {2, 4, 3}},
        {3, {2, 3, 4}, 1, {4}},
        {3, {1, 2, 3}, 3, {4, 3, 1}},
        {2, {1, 1}, 2, {1, 1}},
    };
    for (int k = 0; k < 2; k++) {
        gf_dtype dt = k ? GF_F64 : GF_F32;
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int la = 0; la < OT_NLAYOUTS; la++)
                for (int lb = 0; lb < OT_NLAYOUTS; lb++)
                    run_matmul(dt, shapes[s].ra, shapes[s].sa, la, shapes[s].rb, shapes[s].sb,
                               lb);
    }
    /* the documented example's output shape */
    gf_tensor *a = gf_ones(SZ(2, 1, 3, 4), 4, GF_F32, NULL);
    gf_tensor *b = gf_ones(SZ(5, 4, 2), 3, GF_F32, NULL);
    gf_tensor *y = gf_matmul(a, b);
    CHECK(y && ot_same_shape(y, 4, SZ(2, 5, 3, 2)));
    REL(a, b, y);
}

static void test_matmul_expanded_and_transposed(void) {
    /* a transposed through gf_transpose of a contiguous [3, 2]: a = [[1, 3, 5], [2, 4, 6]] */
    gf_tensor *at0 = ot_make(GF_F64, 2, SZ(3, 2), DV(1, 2, 3, 4, 5, 6));
    gf_tensor *a = gf_transpose(at0, 0, 1);
    gf_tensor *b = ot_make(GF_F64, 2, SZ(3, 1), DV(1, 1, 1));
    gf_tensor *y = gf_matmul(a, b);
    EXPECT_T(y, GF_F64, 2, SZ(2, 1), DV(9, 12), 0);
    /* batch dim with stride 0 */
    gf_tensor *bb = ot_make(GF_F64, 3, SZ(1, 2, 2), DV(1, 2, 3, 4));
    gf_tensor *be = gf_expand(bb, SZ(3, 2, 2), 3);
    gf_tensor *aa = ot_make(GF_F64, 3, SZ(3, 1, 2), DV(1, 0, 0, 1, 1, 1));
    gf_tensor *ye = gf_matmul(aa, be);
    EXPECT_T(ye, GF_F64, 3, SZ(3, 1, 2), DV(1, 2, 3, 4, 4, 6), 0);
    /* an expanded matrix with stride 0 inside the matrix dims */
    gf_tensor *col = ot_make(GF_F32, 2, SZ(2, 1), DV(2, 3));
    gf_tensor *ce = gf_expand(col, SZ(2, 3), 2); /* [[2, 2, 2], [3, 3, 3]] */
    gf_tensor *v = ot_make(GF_F32, 1, SZ(3), DV(1, 2, 3));
    gf_tensor *yc = gf_matmul(ce, v);
    EXPECT_T(yc, GF_F32, 1, SZ(2), DV(12, 18), 0);
    REL(at0, a, b, y, bb, be, aa, ye, col, ce, v, yc);
}

static void test_matmul_empty_and_errors(void) {
    gf_tensor *a = gf_ones(SZ(2, 0), 2, GF_F32, NULL);
    gf_tensor *b = gf_ones(SZ(0, 3), 2, GF_F32, NULL);
    gf_tensor *y = gf_matmul(a, b); /* an empty sum: zeros */
    EXPECT_T(y, GF_F32, 2, SZ(2, 3), DV(0, 0, 0, 0, 0, 0), 0);
    gf_tensor *c = gf_ones(SZ(0, 3), 2, GF_F64, NULL);
    gf_tensor *d = gf_ones(SZ(3, 2), 2, GF_F64, NULL);
    gf_tensor *y2 = gf_matmul(c, d);
    EXPECT_T(y2, GF_F64, 2, SZ(0, 2), NULL, 0);
    gf_tensor *e = gf_ones(SZ(0, 2, 3), 3, GF_F64, NULL);
    gf_tensor *y3 = gf_matmul(e, d);
    EXPECT_T(y3, GF_F64, 3, SZ(0, 2, 2), NULL, 0);
    gf_tensor *z1 = gf_ones(SZ(0), 1, GF_F64, NULL);
    gf_tensor *y4 = gf_matmul(z1, z1); /* empty dot product */
    EXPECT_T(y4, GF_F64, 0, NULL, DV(0), 0);

    gf_tensor *p = gf_ones(SZ(2, 3), 2, GF_F32, NULL);
    gf_tensor *q = gf_ones(SZ(4, 2), 2, GF_F32, NULL);
    EXPECT_FAIL(gf_matmul(p, q), GF_ERR_SHAPE);
    gf_tensor *bp = gf_ones(SZ(2, 2, 3), 3, GF_F32, NULL);
    gf_tensor *bq = gf_ones(SZ(3, 3, 2), 3, GF_F32, NULL);
    EXPECT_FAIL(gf_matmul(bp, bq), GF_ERR_SHAPE); /* batch 2 vs 3 */
    gf_tensor *s = gf_scalar(1, GF_F32, NULL);
    gf_clear_error();
    gf_tensor *bad = gf_matmul(s, p); /* as torch: 0-dim operands are refused */
    CHECK(bad == NULL && gf_last_status() != GF_OK);
    gf_tensor *pd = gf_ones(SZ(3, 2), 2, GF_F64, NULL);
    EXPECT_FAIL(gf_matmul(p, pd), GF_ERR_DTYPE);
    REL(a, b, y, c, d, y2, e, y3, z1, y4, p, q, bp, bq, s, bad, pd);
}

/* Host softmax of v (shape sizes) along dim. */
static void host_softmax(int rank, const int64_t *sizes, const double *v, int dim, bool logv,
                         double *out) {
    int64_t n = ot_numel(rank, sizes), inner = 1;
    for (int d = dim + 1; d < rank; d++) inner *= sizes[d];
    int64_t len = rank ? sizes[dim] : 1;
    for (int64_t i = 0; i < n; i++) {
        int64_t outer = i / (inner * len), in = i % inner;
        double mx = -INFINITY, s = 0;
        for (int64_t k = 0; k < len; k++) {
            double x = v[outer * len * inner + k * inner + in];
            if (x > mx) mx = x;
        }
        for (int64_t k = 0; k < len; k++) s += exp(v[outer * len * inner + k * inner + in] - mx);
        out[i] = logv ? v[i] - mx - log(s) : exp(v[i] - mx) / s;
    }
}

static void test_softmax(void) {
    double v[24];
    for (int i = 0; i < 24; i++) v[i] = ((i * 7) % 13) * 0.5 - 3;
    for (int lg = 0; lg < 2; lg++) {
        for (int k = 0; k < 2; k++) {
            gf_dtype dt = k ? GF_F64 : GF_F32;
            double in[24], want[24];
            for (int i = 0; i < 24; i++) in[i] = dt == GF_F32 ? (double)(float)v[i] : v[i];
            for (int layout = 0; layout < OT_NLAYOUTS; layout++) {
                gf_tensor *x = ot_make_layout(layout, dt, 3, SZ(2, 3, 4), in);
                for (int dim = -3; dim < 3; dim++) {
                    host_softmax(3, SZ(2, 3, 4), in, dim < 0 ? dim + 3 : dim, lg, want);
                    gf_tensor *y = lg ? gf_log_softmax(x, dim) : gf_softmax(x, dim);
                    int failed_before = check_failed_;
                    EXPECT_T(y, dt, 3, SZ(2, 3, 4), want, dt == GF_F32 ? 1e-5 : 1e-12);
                    if (check_failed_ != failed_before)
                        fprintf(stderr, "  (in %s %s %s dim %d)\n",
                                lg ? "log_softmax" : "softmax", gf_dtype_name(dt),
                                ot_layout_names[layout], dim);
                    gf_tensor_release(y);
                }
                gf_tensor_release(x);
            }
            /* expanded input: every row equal */
            gf_tensor *row = ot_make(dt, 2, SZ(1, 3), DV(0, 1, 2));
            gf_tensor *ex = gf_expand(row, SZ(2, 3), 2);
            gf_tensor *y = lg ? gf_log_softmax(ex, 1) : gf_softmax(ex, 1);
            double w3[3];
            host_softmax(1, SZ(3), DV(0, 1, 2), 0, lg, w3);
            EXPECT_T(y, dt, 2, SZ(2, 3), DV(w3[0], w3[1], w3[2], w3[0], w3[1], w3[2]),
                     ot_tol(dt) * 4);
            gf_tensor *y0 = lg ? gf_log_softmax(ex, 0) : gf_softmax(ex, 0);
            double h = lg ? -0.6931471805599453 : 0.5;
            EXPECT_T(y0, dt, 2, SZ(2, 3), DV(h, h, h, h, h, h), ot_tol(dt));
            REL(row, ex, y, y0);
        }
    }
}

static void test_softmax_special(void) {
    for (int k = 0; k < 2; k++) {
        gf_dtype dt = k ? GF_F64 : GF_F32;
        /* large logits: no overflow */
        gf_tensor *big = ot_make(dt, 1, SZ(2), DV(1000, 1001));
        gf_tensor *s = gf_softmax(big, 0);
        EXPECT_T(s, dt, 1, SZ(2), DV(0.2689414213699951, 0.7310585786300049), ot_tol(dt));
        gf_tensor *ls = gf_log_softmax(big, -1);
        EXPECT_T(ls, dt, 1, SZ(2), DV(-1.3132616875182228, -0.31326168751822286), ot_tol(dt));
        /* -inf logits get probability 0 */
        gf_tensor *mi = ot_make(dt, 1, SZ(3), DV(-INFINITY, 0, 0));
        gf_tensor *sm = gf_softmax(mi, 0);
        EXPECT_T(sm, dt, 1, SZ(3), DV(0, 0.5, 0.5), ot_tol(dt));
        gf_tensor *lsm = gf_log_softmax(mi, 0);
        EXPECT_T(lsm, dt, 1, SZ(3), DV(-INFINITY, -0.6931471805599453, -0.6931471805599453),
                 ot_tol(dt));
        /* 0-dim: softmax 1, log_softmax 0 (as PyTorch) */
        gf_tensor *s0 = gf_scalar(3.5, dt, NULL);
        gf_tensor *ys0 = gf_softmax(s0, 0), *yl0 = gf_log_softmax(s0, -1);
        EXPECT_T(ys0, dt, 0, NULL, DV(1), 0);
        EXPECT_T(yl0, dt, 0, NULL, DV(0), 0);
        /* 0-size */
        gf_tensor *z = gf_zeros(SZ(0, 3), 2, dt, NULL);
        gf_tensor *yz = gf_softmax(z, 1), *yz0 = gf_log_softmax(z, 0);
        EXPECT_T(yz, dt, 2, SZ(0, 3), NULL, 0);
        EXPECT_T(yz0, dt, 2, SZ(0, 3), NULL, 0);
        gf_tensor *z2 = gf_zeros(SZ(2, 0), 2, dt, NULL);
        gf_tensor *yz2 = gf_softmax(z2, 1);
        EXPECT_T(yz2, dt, 2, SZ(2, 0), NULL, 0);
        EXPECT_FAIL(gf_softmax(z, 2), GF_ERR_INDEX);
        EXPECT_FAIL(gf_log_softmax(z, -3), GF_ERR_INDEX);
        REL(big, s, ls, mi, sm, lsm, s0, ys0, yl0, z, yz, yz0, z2, yz2);
    }
}

int main(void) {
    CHECK(gf_init() == GF_OK);
    RUN(test_matmul_hand);
    RUN(test_matmul_shapes);
    RUN(test_matmul_expanded_and_transposed);
    RUN(test_matmul_empty_and_errors);
    RUN(test_softmax);
    RUN(test_softmax_special);
    return ot_finish();
}
