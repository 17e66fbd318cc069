/* SPDX-License-Identifier: BSD-3-Clause */
/* test_reduce.c — reductions over one dim, several dims and all dims, with
 * and without keepdim, negative dims, strided inputs, 0-size and 0-dim
 * inputs; max_dim/min_dim and argmax/argmin. Expected values come from a
 * plain host-side reducer written here. */
#include "ops_test.h"

enum { R_SUM, R_MEAN, R_PROD, R_AMAX, R_AMIN, R_VAR, R_STD, R_LSE };

/* Reduces v (shape sizes) over the dims in mask into out; returns the output
 * rank and writes its sizes (keepdim or not). */
static int host_reduce(int op, double corr, int rank, const int64_t *sizes, const double *v,
                       unsigned mask, bool keepdim, int64_t *osizes, double *out) {
    int64_t ks[GF_MAX_RANK], n = ot_numel(rank, sizes), no = 1;
    for (int d = 0; d < rank; d++) {
        ks[d] = (mask >> d) & 1 ? 1 : sizes[d];
        no *= ks[d];
    }
    for (int64_t o = 0; o < no; o++) {
        double acc[3] = {0, 0, 1}; /* sum, squared deviations, product */
        double mn = INFINITY, mx = -INFINITY;
        int64_t cnt = 0;
        bool has_nan = false;
        for (int pass = 0; pass < 2; pass++) {
            for (int64_t i = 0; i < n; i++) {
                int64_t rem = i, oi = 0, mul = 1;
                for (int d = rank - 1; d >= 0; d--) {
                    int64_t id = rem % sizes[d];
                    rem /= sizes[d];
                    if (!((mask >> d) & 1)) oi += id * mul;
                    mul *= ks[d];
                }
                if (oi != o) continue;
                double x = v[i];
                if (pass == 0) {
                    cnt++;
                    acc[0] += x;
                    acc[2] *= x;
                    if (isnan(x)) has_nan = true;
                    if (x < mn) mn = x;
                    if (x > mx) mx = x;
                } else {
                    double mean = acc[0] / (double)cnt;
                    acc[1] += (x - mean) * (x - mean);
                }
            }
        }
        double r;
        switch (op) {
        case R_SUM: r = acc[0]; break;
        case R_MEAN: r = cnt ? acc[0] / (double)cnt : NAN; break;
        case R_PROD: r = acc[2]; break;
        case R_AMAX: r = has_nan ? NAN : mx; break;
        case R_AMIN: r = has_nan ? NAN : mn; break;
        case R_VAR:
        case R_STD: {
            double div = (double)cnt - corr;
            r = cnt ? acc[1] / (div > 0 ? div : 0) : NAN;
            if (op == R_STD) r = sqrt(r);
            break;
        }
        default: { /* logsumexp = mx + log(sum exp(x - mx)) */
            if (cnt == 0) {
                r = -INFINITY;
                break;
            }
            double s = 0;
            for (int64_t i = 0; i < n; i++) {
                int64_t rem = i, oi = 0, mul = 1;
                for (int d = rank - 1; d >= 0; d--) {
                    int64_t id = rem % sizes[d];
                    rem /= sizes[d];
                    if (!((mask >> d) & 1)) oi += id * mul;
                    mul *= ks[d];
                }
                if (oi == o) s += exp(v[i] - mx);
            }
            r = mx + log(s);
        }
        }
        out[o] = r;
    }
    int orank = 0;
    for (int d = 0; d < rank; d++)
        if (keepdim || !((mask >> d) & 1)) osizes[orank++] = ks[d];
    return orank;
}

typedef gf_tensor *(*red_fn)(const gf_tensor *, const int *, int, bool);
static gf_tensor *w_var1(const gf_tensor *x, const int *d, int n, bool k) { return gf_var(x, d, n, 1, k); }
static gf_tensor *w_var0(const gf_tensor *x, const int *d, int n, bool k) { return gf_var(x, d, n, 0, k); }
static gf_tensor *w_std1(const gf_tensor *x, const int *d, int n, bool k) { return gf_std(x, d, n, 1, k); }
static gf_tensor *w_std0(const gf_tensor *x, const int *d, int n, bool k) { return gf_std(x, d, n, 0, k); }

static const struct {
    const char *name;
    red_fn fn;
    int op;
    double corr;
} red_cases[] = {
    {"sum", gf_sum, R_SUM, 0},       {"mean", gf_mean, R_MEAN, 0},
    {"prod", gf_prod, R_PROD, 0},    {"amax", gf_amax, R_AMAX, 0},
    {"amin", gf_amin, R_AMIN, 0},    {"var(correction 1)", w_var1, R_VAR, 1},
    {"var(correction 0)", w_var0, R_VAR, 0}, {"std(correction 1)", w_std1, R_STD, 1},
    {"std(correction 0)", w_std0, R_STD, 0}, {"logsumexp", gf_logsumexp, R_LSE, 0},
};
#define N_RED (int)(sizeof red_cases / sizeof red_cases[0])

static const struct {
    int dims[3];
    int n;
} dim_sets[] = {
    {{0}, 1}, {{1}, 1}, {{2}, 1}, {{-1}, 1}, {{-3}, 1}, {{0, 2}, 2},
    {{2, 0}, 2}, {{1, -1}, 2}, {{0, 1, 2}, 3}, {{0}, 0} /* n = 0: all dims */,
};
#define N_DIMSETS (int)(sizeof dim_sets / sizeof dim_sets[0])

static unsigned mask_of(const int *dims, int n, int rank) {
    if (n == 0) return (1u << rank) - 1;
    unsigned m = 0;
    for (int i = 0; i < n; i++) m |= 1u << (dims[i] < 0 ? dims[i] + rank : dims[i]);
    return m;
}

static void test_float_reductions(void) {
    double v[24], pv[24];
    for (int i = 0; i < 24; i++) {
        v[i] = ((i * 7) % 11) * 0.2 - 0.9;
        pv[i] = (0.8 + ((i * 5) % 7) * 0.08) * (i % 5 == 0 ? -1 : 1); /* prod: near 1 */
    }
    for (int c = 0; c < N_RED; c++) {
        const double *in = red_cases[c].op == R_PROD ? pv : v;
        for (int k = 0; k < 2; k++) {
            gf_dtype dt = k ? GF_F64 : GF_F32;
            double inr[24];
            for (int i = 0; i < 24; i++) inr[i] = dt == GF_F32 ? (double)(float)in[i] : in[i];
            for (int layout = 0; layout < OT_NLAYOUTS; layout++) {
                gf_tensor *x = ot_make_layout(layout, dt, 3, SZ(2, 3, 4), inr);
                for (int ds = 0; ds < N_DIMSETS; ds++) {
                    for (int keep = 0; keep < 2; keep++) {
                        const int *dims = dim_sets[ds].n ? dim_sets[ds].dims : NULL;
                        int nd = dim_sets[ds].n;
                        unsigned mask = mask_of(dims, nd, 3);
                        int64_t os[GF_MAX_RANK];
                        double want[24];
                        int orank = host_reduce(red_cases[c].op, red_cases[c].corr, 3,
                                                SZ(2, 3, 4), inr, mask, keep, os, want);
                        gf_tensor *y = red_cases[c].fn(x, dims, nd, keep);
                        int failed_before = check_failed_;
                        EXPECT_T(y, dt, orank, os, want, dt == GF_F32 ? 1e-5 : 1e-12);
                        if (check_failed_ != failed_before)
                            fprintf(stderr, "  (in %s %s %s, dims set %d, keepdim %d)\n",
                                    red_cases[c].name, gf_dtype_name(dt),
                                    ot_layout_names[layout], ds, keep);
                        gf_tensor_release(y);
                    }
                }
                gf_tensor_release(x);
            }
        }
    }
}

static void test_hand_values(void) {
    gf_tensor *x = ot_make(GF_F64, 2, SZ(2, 3), DV(1, 2, 3, 4, 5, 6));
    gf_tensor *r[10];
    r[0] = gf_sum(x, (const int[]){1}, 1, false);
    EXPECT_T(r[0], GF_F64, 1, SZ(2), DV(6, 15), 0);
    r[1] = gf_mean(x, (const int[]){0}, 1, true);
    EXPECT_T(r[1], GF_F64, 2, SZ(1, 3), DV(2.5, 3.5, 4.5), 0);
    r[2] = gf_prod(x, NULL, 0, false);
    EXPECT_T(r[2], GF_F64, 0, NULL, DV(720), 0);
    r[3] = gf_var(x, (const int[]){1}, 1, 1, false); /* rows: var 1 each */
    EXPECT_T(r[3], GF_F64, 1, SZ(2), DV(1, 1), 1e-15);
    r[4] = gf_var(x, NULL, 0, 0, false); /* population variance of 1..6 = 35/12 */
    EXPECT_T(r[4], GF_F64, 0, NULL, DV(35.0 / 12), 1e-15);
    r[5] = gf_std(x, NULL, 0, 1, true); /* sqrt(3.5) */
    EXPECT_T(r[5], GF_F64, 2, SZ(1, 1), DV(1.8708286933869707), 1e-15);
    r[6] = gf_logsumexp(x, (const int[]){-1}, 1, false);
    /* 3 + log(1 + e^-1 + e^-2) and 6 + the same */
    EXPECT_T(r[6], GF_F64, 1, SZ(2), DV(3.4076059644443806, 6.4076059644443806), 1e-15);
    r[7] = gf_amax(x, (const int[]){0, 1}, 2, false);
    EXPECT_T(r[7], GF_F64, 0, NULL, DV(6), 0);
    r[8] = gf_amin(x, (const int[]){1}, 1, true);
    EXPECT_T(r[8], GF_F64, 2, SZ(2, 1), DV(1, 4), 0);
    /* logsumexp stays finite where exp overflows */
    gf_tensor *big = ot_make(GF_F32, 1, SZ(2), DV(1000, 1000));
    r[9] = gf_logsumexp(big, NULL, 0, false);
    EXPECT_T(r[9], GF_F32, 0, NULL, DV(1000.6931471805599453), 1e-6);
    for (int i = 0; i < 10; i++) gf_tensor_release(r[i]);
    REL(x, big);
}

static void test_expanded_input(void) {
    gf_tensor *row = ot_make(GF_F32, 2, SZ(1, 3), DV(1, 2, 3));
    gf_tensor *e = gf_expand(row, SZ(4, 3), 2);
    gf_tensor *s0 = gf_sum(e, (const int[]){0}, 1, false);
    EXPECT_T(s0, GF_F32, 1, SZ(3), DV(4, 8, 12), 0);
    gf_tensor *s1 = gf_sum(e, (const int[]){1}, 1, false);
    EXPECT_T(s1, GF_F32, 1, SZ(4), DV(6, 6, 6, 6), 0);
    gf_tensor *v0 = gf_var(e, (const int[]){0}, 1, 1, false);
    EXPECT_T(v0, GF_F32, 1, SZ(3), DV(0, 0, 0), 1e-7);
    REL(row, e, s0, s1, v0);
}

static void test_integer_reductions(void) {
    /* as PyTorch: sum and prod of integers and bools give i64; amax/amin keep the dtype */
    gf_tensor *x = ot_make_transposed(GF_I32, 2, SZ(2, 3), DV(1, -2, 3, 4, 5, -6));
    gf_tensor *s = gf_sum(x, (const int[]){1}, 1, false);
    EXPECT_T(s, GF_I64, 1, SZ(2), DV(2, 3), 0);
    gf_tensor *p = gf_prod(x, NULL, 0, false);
    EXPECT_T(p, GF_I64, 0, NULL, DV(720), 0);
    gf_tensor *mx = gf_amax(x, (const int[]){0}, 1, false);
    EXPECT_T(mx, GF_I32, 1, SZ(3), DV(4, 5, 3), 0);
    gf_tensor *mn = gf_amin(x, NULL, 0, true);
    EXPECT_T(mn, GF_I32, 2, SZ(1, 1), DV(-6), 0);
    gf_tensor *b = ot_make(GF_BOOL, 2, SZ(2, 3), DV(1, 0, 1, 1, 1, 0));
    gf_tensor *bs = gf_sum(b, NULL, 0, false);
    EXPECT_T(bs, GF_I64, 0, NULL, DV(4), 0);
    gf_tensor *bs1 = gf_sum(b, (const int[]){0}, 1, false);
    EXPECT_T(bs1, GF_I64, 1, SZ(3), DV(2, 1, 1), 0);
    const int64_t big[2] = {INT64_C(1) << 60, 3};
    gf_tensor *bg = gf_from_data(big, SZ(2), 1, GF_I64, NULL);
    gf_tensor *bgs = gf_sum(bg, NULL, 0, false);
    int64_t got = 0;
    CHECK_OK(gf_tensor_to_host(bgs, &got, sizeof got));
    CHECK(got == (INT64_C(1) << 60) + 3); /* exact, not through double */
    REL(x, s, p, mx, mn, b, bs, bs1, bg, bgs);
}

static void test_empty_and_scalar(void) {
    for (int k = 0; k < 2; k++) {
        gf_dtype dt = k ? GF_F64 : GF_F32;
        gf_tensor *z = gf_zeros(SZ(0, 3), 2, dt, NULL);
        const int d0[1] = {0}, d1[1] = {1};
        gf_tensor *s = gf_sum(z, d0, 1, false);
        EXPECT_T(s, dt, 1, SZ(3), DV(0, 0, 0), 0);
        gf_tensor *p = gf_prod(z, d0, 1, true);
        EXPECT_T(p, dt, 2, SZ(1, 3), DV(1, 1, 1), 0);
        gf_tensor *m = gf_mean(z, d0, 1, false);
        EXPECT_T(m, dt, 1, SZ(3), DV(NAN, NAN, NAN), 0);
        gf_tensor *sa = gf_sum(z, NULL, 0, false);
        EXPECT_T(sa, dt, 0, NULL, DV(0), 0);
        gf_tensor *s1 = gf_sum(z, d1, 1, false); /* reduces size-3 rows of which there are none */
        EXPECT_T(s1, dt, 1, SZ(0), NULL, 0);
        gf_tensor *a1 = gf_amax(z, d1, 1, false);
        EXPECT_T(a1, dt, 1, SZ(0), NULL, 0);
        EXPECT_FAIL(gf_amax(z, d0, 1, false), GF_ERR_INDEX);
        EXPECT_FAIL(gf_amin(z, NULL, 0, false), GF_ERR_INDEX);
        /* as PyTorch: logsumexp of nothing is -inf, variance of nothing NaN */
        gf_tensor *l = gf_logsumexp(z, d0, 1, false);
        EXPECT_T(l, dt, 1, SZ(3), DV(-INFINITY, -INFINITY, -INFINITY), 0);
        gf_tensor *v = gf_var(z, d0, 1, 1, false);
        EXPECT_T(v, dt, 1, SZ(3), DV(NAN, NAN, NAN), 0);

        gf_tensor *x0 = gf_scalar(2.5, dt, NULL);
        gf_tensor *r0 = gf_sum(x0, NULL, 0, false);
        EXPECT_T(r0, dt, 0, NULL, DV(2.5), 0);
        gf_tensor *r1 = gf_mean(x0, (const int[]){0}, 1, true); /* a 0-dim has dim 0 / -1 */
        EXPECT_T(r1, dt, 0, NULL, DV(2.5), 0);
        gf_tensor *r2 = gf_amax(x0, (const int[]){-1}, 1, false);
        EXPECT_T(r2, dt, 0, NULL, DV(2.5), 0);
        gf_tensor *r3 = gf_var(x0, NULL, 0, 0, false);
        EXPECT_T(r3, dt, 0, NULL, DV(0), 0);
        gf_tensor *r4 = gf_logsumexp(x0, NULL, 0, false);
        EXPECT_T(r4, dt, 0, NULL, DV(2.5), ot_tol(dt));
        REL(z, s, p, m, sa, s1, a1, l, v, x0, r0, r1, r2, r3, r4);
    }
}

static void test_bad_dims(void) {
    gf_tensor *x = gf_zeros(SZ(2, 3), 2, GF_F32, NULL);
    EXPECT_FAIL(gf_sum(x, (const int[]){2}, 1, false), GF_ERR_INDEX);
    EXPECT_FAIL(gf_mean(x, (const int[]){-3}, 1, false), GF_ERR_INDEX);
    gf_clear_error();
    gf_tensor *rep = gf_sum(x, (const int[]){1, -1}, 2, false); /* a repeated dim */
    CHECK(rep == NULL && gf_last_status() != GF_OK);
    gf_tensor *s = gf_scalar(1, GF_F32, NULL);
    EXPECT_FAIL(gf_sum(s, (const int[]){1}, 1, false), GF_ERR_INDEX);
    REL(x, rep, s);
}

static void test_max_min_dim(void) {
    /* ties: the first index wins; NaN wins */
    gf_tensor *x = ot_make(GF_F32, 2, SZ(2, 4), DV(1, 3, 3, 0, NAN, 2, 5, NAN));
    gf_tensor *v = NULL, *i = NULL;
    CHECK_OK(gf_max_dim(x, 1, false, &v, &i));
    EXPECT_T(v, GF_F32, 1, SZ(2), DV(3, NAN), 0);
    EXPECT_T(i, GF_I64, 1, SZ(2), DV(1, 0), 0);
    REL(v, i);
    v = i = NULL;
    CHECK_OK(gf_min_dim(x, -1, true, &v, &i));
    EXPECT_T(v, GF_F32, 2, SZ(2, 1), DV(0, NAN), 0);
    EXPECT_T(i, GF_I64, 2, SZ(2, 1), DV(3, 0), 0);
    REL(v, i);
    v = i = NULL;
    CHECK_OK(gf_max_dim(x, 0, false, &v, &i));
    EXPECT_T(v, GF_F32, 1, SZ(4), DV(NAN, 3, 5, NAN), 0);
    EXPECT_T(i, GF_I64, 1, SZ(4), DV(1, 0, 1, 1), 0);
    REL(v, i);
    v = i = NULL;
    CHECK_OK(gf_min_dim(x, 0, false, &v, &i));
    EXPECT_T(v, GF_F32, 1, SZ(4), DV(NAN, 2, 3, NAN), 0);
    EXPECT_T(i, GF_I64, 1, SZ(4), DV(1, 1, 0, 1), 0);
    REL(v, i);

    /* strided f64 and i32 inputs */
    gf_tensor *t = ot_make_transposed(GF_F64, 2, SZ(3, 2), DV(1, 5, 5, 0, 2, -1));
    v = i = NULL;
    CHECK_OK(gf_max_dim(t, 0, true, &v, &i));
    EXPECT_T(v, GF_F64, 2, SZ(1, 2), DV(5, 5), 0);
    EXPECT_T(i, GF_I64, 2, SZ(1, 2), DV(1, 0), 0);
    REL(v, i);
    gf_tensor *n = ot_make_step(GF_I32, 2, SZ(2, 3), DV(4, -1, 4, -2, -2, 7));
    v = i = NULL;
    CHECK_OK(gf_min_dim(n, 1, false, &v, &i));
    EXPECT_T(v, GF_I32, 1, SZ(2), DV(-1, -2), 0);
    EXPECT_T(i, GF_I64, 1, SZ(2), DV(1, 0), 0);
    REL(v, i);
    /* 0-dim: the value and index 0 */
    gf_tensor *s = gf_scalar(3, GF_F32, NULL);
    v = i = NULL;
    CHECK_OK(gf_max_dim(s, 0, false, &v, &i));
    EXPECT_T(v, GF_F32, 0, NULL, DV(3), 0);
    EXPECT_T(i, GF_I64, 0, NULL, DV(0), 0);
    REL(v, i);
    /* empty reduced dim: INDEX; empty kept dim: empty results */
    gf_tensor *z = gf_zeros(SZ(0, 3), 2, GF_F32, NULL);
    v = i = NULL;
    gf_clear_error();
    CHECK(gf_max_dim(z, 0, false, &v, &i) == GF_ERR_INDEX);
    CHECK(v == NULL && i == NULL);
    CHECK_OK(gf_max_dim(z, 1, false, &v, &i));
    EXPECT_T(v, GF_F32, 1, SZ(0), NULL, 0);
    EXPECT_T(i, GF_I64, 1, SZ(0), NULL, 0);
    REL(v, i);
    gf_clear_error();
    CHECK(gf_max_dim(x, 2, false, &v, &i) == GF_ERR_INDEX);
    REL(x, t, n, s, z);
}

static void test_argmax_argmin(void) {
    gf_tensor *y = ot_make(GF_F32, 2, SZ(2, 3), DV(1, 5, 2, 5, 0, -1));
    gf_tensor *r[10];
    r[0] = gf_argmax(y, GF_DIM_ALL, false);
    EXPECT_T(r[0], GF_I64, 0, NULL, DV(1), 0);
    r[1] = gf_argmin(y, GF_DIM_ALL, false);
    EXPECT_T(r[1], GF_I64, 0, NULL, DV(5), 0);
    r[2] = gf_argmax(y, 0, false);
    EXPECT_T(r[2], GF_I64, 1, SZ(3), DV(1, 0, 0), 0);
    r[3] = gf_argmax(y, 0, true);
    EXPECT_T(r[3], GF_I64, 2, SZ(1, 3), DV(1, 0, 0), 0);
    r[4] = gf_argmin(y, -1, false);
    EXPECT_T(r[4], GF_I64, 1, SZ(2), DV(0, 2), 0);
    /* a transposed view: indices count in the view's row-major order */
    gf_tensor *yt = gf_transpose(y, 0, 1); /* [[1, 5], [5, 0], [2, -1]] */
    r[5] = gf_argmax(yt, GF_DIM_ALL, false);
    EXPECT_T(r[5], GF_I64, 0, NULL, DV(1), 0);
    r[6] = gf_argmin(yt, GF_DIM_ALL, false);
    EXPECT_T(r[6], GF_I64, 0, NULL, DV(5), 0);
    r[7] = gf_argmax(yt, 1, false);
    EXPECT_T(r[7], GF_I64, 1, SZ(3), DV(1, 0, 0), 0);
    gf_tensor *s = gf_scalar(-2, GF_F64, NULL);
    r[8] = gf_argmin(s, GF_DIM_ALL, false);
    EXPECT_T(r[8], GF_I64, 0, NULL, DV(0), 0);
    gf_tensor *iv = ot_make_step(GF_I64, 1, SZ(4), DV(3, 9, -4, 9));
    r[9] = gf_argmax(iv, 0, false);
    EXPECT_T(r[9], GF_I64, 0, NULL, DV(1), 0);
    for (int k = 0; k < 10; k++) gf_tensor_release(r[k]);
    gf_tensor *z = gf_zeros(SZ(0), 1, GF_F32, NULL);
    gf_clear_error();
    gf_tensor *bad = gf_argmax(z, GF_DIM_ALL, false);
    CHECK(bad == NULL && gf_last_status() != GF_OK);
    EXPECT_FAIL(gf_argmax(y, 2, false), GF_ERR_INDEX);
    REL(y, yt, s, iv, z, bad);
}

int main(void) {
    CHECK(gf_init() == GF_OK);
    RUN(test_float_reductions);
    RUN(test_hand_values);
    RUN(test_expanded_input);
    RUN(test_integer_reductions);
    RUN(test_empty_and_scalar);
    RUN(test_bad_dims);
    RUN(test_max_min_dim);
    RUN(test_argmax_argmin);
    return ot_finish();
}
