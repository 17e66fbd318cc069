/* SPDX-License-Identifier: BSD-3-Clause */
/* test_fwad_api.c — dual tensors and the function transforms
 * (graft/forward_ad.h): levels and nesting, make/unpack, tangents through
 * in-place writes into views (PyTorch's rules), grad modes, custom
 * functions with and without a jvp, the error cases (each leaves graft
 * usable and no level open), jacfwd = jacrev on random small maps, the
 * Hessian of the Rosenbrock function (examples/hessian_vector.c) against
 * its analytic form, and hvp against double backward. Expected values are
 * computed by hand here, never by graft. */
#include <graft.h>
#include <math.h>
#include <stdint.h>

#include "test_rules_util.h"

static gf_tensor *vec(const double *v, int64_t n) { return ag_vec(v, n); }

static gf_tensor *tangent_of(const gf_tensor *t, int level) {
    gf_tensor *tan = NULL;
    if (gf_fwad_unpack_dual(t, level, NULL, &tan) != GF_OK) return NULL;
    return tan;
}

/* ------------------------------------------------------------ levels, make, unpack */
static void test_make_unpack(void) {
    int level = -7;
    CHECK(gf_fwad_level_enter(&level) == GF_OK && level == 0);
    CHECK(gf_fwad_level_count() == 1);
    gf_tensor *x = vec(DV(0.5, 1.0, 2.0), 3), *t = vec(DV(1, -1, 2), 3);
    gf_tensor *d = gf_fwad_make_dual(x, t, level);
    CHECK(d && gf_tensor_shares_storage(d, x));
    /* y = x * sin(x): dy = (sin x + x cos x) t */
    gf_tensor *y = gf_mul(d, gf_sin(d));
    gf_tensor *p = NULL, *ty = NULL;
    CHECK(gf_fwad_unpack_dual(y, level, &p, &ty) == GF_OK);
    double e[3], xv[3] = {0.5, 1.0, 2.0}, tv[3] = {1, -1, 2};
    for (int i = 0; i < 3; i++) e[i] = (sin(xv[i]) + xv[i] * cos(xv[i])) * tv[i];
    CHECK_VALS(ty, e, 3, 1e-12);
    /* the primal carries no tangent at that level */
    gf_tensor *tp = tangent_of(p, level);
    CHECK(tp == NULL);
    /* a tensor that never met a dual has no tangent */
    gf_tensor *tx = tangent_of(x, level);
    CHECK(tx == NULL);
    /* no_grad does not stop tangents (as in PyTorch) */
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    gf_tensor *z = gf_exp(d), *tz = tangent_of(z, level);
    gf_grad_mode_set(prev);
    for (int i = 0; i < 3; i++) e[i] = exp(xv[i]) * tv[i];
    CHECK_VALS(tz, e, 3, 1e-12);
    /* a tensor that is its own tangent: an in-place op scales both once */
    gf_tensor *w = vec(DV(1, 2), 2), *dw = gf_fwad_make_dual(w, w, level);
    CHECK(gf_mul_scalar_(dw, 3.0) == GF_OK);
    CHECK_VALS(w, DV(3, 6), 2, 0);
    CHECK_VALS(tangent_of(dw, level), DV(3, 6), 2, 0);
    CHECK(gf_fwad_level_exit(level) == GF_OK);
    CHECK(gf_fwad_level_count() == 0);
    /* after exit the tangents are gone: a new level sees none */
    CHECK(gf_fwad_level_enter(&level) == GF_OK);
    gf_tensor *ty2 = tangent_of(y, level);
    CHECK(ty2 == NULL);
    CHECK(gf_fwad_level_exit(level) == GF_OK);
}

/* A dual primal that requires grad: reverse mode flows through make_dual
 * to the primal, and the tangent has history of its own (forward-over-
 * reverse): d/dx <tangent of sin(x)*x, w> = w * (2 cos x - x sin x) t. */
static void test_forward_over_reverse(void) {
    int level;
    CHECK(gf_fwad_level_enter(&level) == GF_OK);
    double xv[2] = {0.3, -1.2}, tv[2] = {2.0, 0.5}, w[2] = {1.0, -3.0};
    gf_tensor *x = ag_leaf(xv, 2), *t = vec(tv, 2), *wt = vec(w, 2);
    gf_tensor *d = gf_fwad_make_dual(x, t, level);
    gf_tensor *y = gf_mul(gf_sin(d), d);
    gf_tensor *ty = tangent_of(y, level);
    CHECK(ty && gf_tensor_requires_grad(ty));
    gf_tensor *s = gf_sum(gf_mul(ty, wt), NULL, 0, false), *g = NULL;
    /* the tangent's graph shares y's nodes: keep them for the second grad */
    gf_grad_opts keep = {.retain_graph = 1};
    CHECK(s && gf_grad(&s, 1, NULL, &x, 1, &g, &keep) == GF_OK);
    double e[2];
    for (int i = 0; i < 2; i++) e[i] = w[i] * (2 * cos(xv[i]) - xv[i] * sin(xv[i])) * tv[i];
    CHECK_VALS(g, e, 2, 1e-12);
    /* the primal's own gradient through the dual view */
    gf_tensor *sy = gf_sum(y, NULL, 0, false), *gx = NULL;
    CHECK(gf_grad(&sy, 1, NULL, &x, 1, &gx, NULL) == GF_OK);
    for (int i = 0; i < 2; i++) e[i] = cos(xv[i]) * xv[i] + sin(xv[i]);
    CHECK_VALS(gx, e, 2, 1e-12);
    CHECK(gf_fwad_level_exit(level) == GF_OK);
}

/* Forward-over-forward: the inner level's tangent carries the outer
 * level's tangent of itself: f = x^3 sin(x) at level 1 over level 0 gives
 * f' at level 1 and f'' as that tangent's level-0 tangent. */
static void test_nested_levels(void) {
    int l0, l1;
    CHECK(gf_fwad_level_enter(&l0) == GF_OK && l0 == 0);
    CHECK(gf_fwad_level_enter(&l1) == GF_OK && l1 == 1);
    double xv[3] = {0.7, -0.4, 1.9};
    gf_tensor *x = vec(xv, 3), *one = gf_ones(SZ(3), 1, GF_F64, NULL);
    gf_tensor *d0 = gf_fwad_make_dual(x, one, l0);
    gf_tensor *d1 = gf_fwad_make_dual(d0, one, l1);
    gf_tensor *f = gf_mul(gf_pow_scalar(d1, 3.0), gf_sin(d1));
    gf_tensor *f1 = tangent_of(f, l1);      /* f'(x), with its level-0 tangent */
    gf_tensor *f0 = tangent_of(f, l0);      /* f'(x) too */
    gf_tensor *f11 = f1 ? tangent_of(f1, l0) : NULL; /* f''(x) */
    double e1[3], e2[3];
    for (int i = 0; i < 3; i++) {
        double a = xv[i];
        e1[i] = 3 * a * a * sin(a) + a * a * a * cos(a);
        e2[i] = 6 * a * sin(a) + 6 * a * a * cos(a) - a * a * a * sin(a);
    }
    CHECK_VALS(f1, e1, 3, 1e-12);
    CHECK_VALS(f0, e1, 3, 1e-12);
    CHECK_VALS(f11, e2, 3, 1e-11);
    /* levels close innermost first */
    CHECK(gf_fwad_level_exit(l0) == GF_ERR_INVALID);
    CHECK_CONTAINS(gf_last_error(), "innermost");
    CHECK(gf_fwad_level_exit(l1) == GF_OK);
    CHECK(gf_fwad_level_exit(l0) == GF_OK);
}

/* ------------------------------------------------------------ in-place */
static void test_inplace_views(void) {
    int level;
    CHECK(gf_fwad_level_enter(&level) == GF_OK);
    /* 1. A dual copied into a row of a plain base: the base gains a tangent,
     * zero outside that row (PyTorch's rule for views). */
    gf_tensor *base = gf_zeros(SZ(3, 2), 2, GF_F64, NULL);
    gf_tensor *row = gf_select(base, 0, 1);
    gf_tensor *src = gf_fwad_make_dual(vec(DV(4, 5), 2), vec(DV(0.5, -2), 2), level);
    CHECK(gf_copy_(row, src) == GF_OK);
    gf_tensor *tb = tangent_of(base, level), *trow = tangent_of(row, level);
    CHECK_VALS(tb, DV(0, 0, 0.5, -2, 0, 0), 6, 0);
    CHECK_VALS(trow, DV(0.5, -2), 2, 0);
    /* another view of the same base, made earlier, sees its region */
    /* 2. mul_ on a slice of a dual base: d(x*c) = t*c in the slice */
    double xv[4] = {1, 2, 3, 4}, tv[4] = {1, 1, 1, 1};
    gf_tensor *b = gf_fwad_make_dual(vec(xv, 4), vec(tv, 4), level);
    gf_tensor *other_view = gf_slice(b, 0, 0, 2, 1);
    gf_tensor *sl = gf_slice(b, 0, 1, 3, 1);
    gf_tensor *c = gf_fwad_make_dual(vec(DV(10, 20), 2), vec(DV(1, 2), 2), level);
    CHECK(gf_mul_(sl, c) == GF_OK);
    /* b = [1, 20, 60, 4]; tangent [1, 1*10 + 2*1, 1*20 + 3*2, 1] */
    gf_tensor *tbb = tangent_of(b, level), *tov = tangent_of(other_view, level);
    CHECK_VALS(b, DV(1, 20, 60, 4), 4, 0);
    CHECK_VALS(tbb, DV(1, 12, 26, 1), 4, 1e-14);
    CHECK_VALS(tov, DV(1, 12), 2, 1e-14);
    /* 3. in-place on a plain tensor with a dual operand, then a view */
    gf_tensor *p = vec(DV(1, 2, 3), 3);
    gf_tensor *dd = gf_fwad_make_dual(vec(DV(1, 1, 1), 3), vec(DV(3, 2, 1), 3), level);
    CHECK(gf_add_(p, dd) == GF_OK);
    gf_tensor *tp = tangent_of(p, level);
    CHECK_VALS(tp, DV(3, 2, 1), 3, 0);
    gf_tensor *pv = gf_slice(p, 0, 1, 3, 1), *tpv = tangent_of(pv, level);
    CHECK_VALS(tpv, DV(2, 1), 2, 0);
    /* 4. exp_ on a dual: the tangent becomes exp(x) t in place */
    gf_tensor *q = gf_fwad_make_dual(vec(DV(0.5, -1), 2), vec(DV(2, 3), 2), level);
    CHECK(gf_exp_(q) == GF_OK);
    gf_tensor *tq = tangent_of(q, level);
    CHECK_VALS(tq, DV(2 * exp(0.5), 3 * exp(-1)), 2, 1e-14);
    /* 5. fill_ zeroes the tangent */
    CHECK(gf_fill_(q, 2.0) == GF_OK);
    gf_tensor *tq2 = tangent_of(q, level);
    CHECK_VALS(tq2, DV(0, 0), 2, 0);
    CHECK(gf_fwad_level_exit(level) == GF_OK);
}

/* ------------------------------------------------------------ custom functions */
typedef struct { bool with_jvp; int jvp_calls; } cube_user;

static gf_status cube_jvp(gf_function_ctx *ctx, gf_tensor *const *in, gf_tensor *const *tin,
                          int n_in, gf_tensor *const *out, gf_tensor **tout, int n_out,
                          void *user) {
    ((cube_user *)user)->jvp_calls++;
    gf_scope_begin();
    gf_tensor *r = gf_mul(gf_mul_scalar(gf_square(in[0]), 3.0), tin[0]);
    tout[0] = gf_scope_keep(r);
    gf_scope_end();
    return tout[0] ? GF_OK : gf_last_status();
}

static gf_status cube_fwd(gf_function_ctx *ctx, gf_tensor *const *in, int n_in, gf_tensor **out,
                          int n_out, void *user) {
    cube_user *u = user;
    if (u->with_jvp && gf_ctx_set_jvp(ctx, cube_jvp, u) != GF_OK) return gf_last_status();
    out[0] = gf_pow_scalar(in[0], 3.0);
    return out[0] ? GF_OK : gf_last_status();
}

static gf_status cube_bwd(gf_function_ctx *ctx, gf_tensor *const *g, int n_out, gf_tensor **gin,
                          int n_in, void *user) {
    gin[0] = NULL;
    return GF_OK;
}

static void test_custom_function(void) {
    int level;
    CHECK(gf_fwad_level_enter(&level) == GF_OK);
    cube_user u = {true, 0};
    gf_function_def def = {.name = "Cube", .forward = cube_fwd, .backward = cube_bwd, .user = &u};
    gf_tensor *d = gf_fwad_make_dual(vec(DV(2, -1), 2), vec(DV(1, 4), 2), level), *y = NULL;
    CHECK(gf_function_apply(&def, &d, 1, &y, 1) == GF_OK);
    gf_tensor *ty = tangent_of(y, level);
    CHECK_VALS(ty, DV(12, 12), 2, 1e-14);
    CHECK(u.jvp_calls == 1);
    /* without a jvp: a clear error naming the function, nothing dropped */
    cube_user nu = {false, 0};
    gf_function_def nodef = {.name = "CubeNoJvp", .forward = cube_fwd, .backward = cube_bwd,
                             .user = &nu};
    gf_tensor *y2 = NULL;
    gf_status s = gf_function_apply(&nodef, &d, 1, &y2, 1);
    CHECK_ERR(s, GF_ERR_AUTOGRAD, "CubeNoJvp", "jvp", "gf_ctx_set_jvp");
    CHECK(y2 == NULL);
    /* graft stays usable, the level still open */
    gf_tensor *z = gf_exp(d), *tz = tangent_of(z, level);
    CHECK_VALS(tz, DV(exp(2), 4 * exp(-1)), 2, 1e-14);
    /* outside the dual level the same function without jvp works */
    CHECK(gf_fwad_level_exit(level) == GF_OK);
    gf_tensor *y3 = NULL;
    CHECK(gf_function_apply(&nodef, &d, 1, &y3, 1) == GF_OK);
    CHECK_VALS(y3, DV(8, -1), 2, 0);
}

/* ------------------------------------------------------------ errors */
static void test_errors(void) {
    gf_tensor *x = vec(DV(1, 2, 3), 3), *t2 = vec(DV(1, 2), 2);
    /* no level open */
    gf_tensor *d = gf_fwad_make_dual(x, x, GF_FWAD_LEVEL_CURRENT);
    CHECK(d == NULL);
    CHECK_ERR(gf_last_status(), GF_ERR_AUTOGRAD, "gf_fwad_make_dual", "gf_fwad_level_enter");
    CHECK(gf_fwad_level_exit(0) == GF_ERR_INVALID);
    CHECK_CONTAINS(gf_last_error(), "not open");
    int level;
    CHECK(gf_fwad_level_enter(&level) == GF_OK);
    /* a level not open */
    CHECK(gf_fwad_make_dual(x, x, 3) == NULL);
    CHECK_ERR(gf_last_status(), GF_ERR_AUTOGRAD, "level 3", "not open");
    CHECK(gf_fwad_unpack_dual(x, 5, NULL, NULL) == GF_ERR_AUTOGRAD);
    /* mismatched tangents */
    CHECK(gf_fwad_make_dual(x, t2, level) == NULL);
    CHECK_ERR(gf_last_status(), GF_ERR_SHAPE, "[2]", "[3]");
    gf_tensor *tf = gf_ones(SZ(3), 1, GF_F32, NULL);
    CHECK(gf_fwad_make_dual(x, tf, level) == NULL);
    CHECK_ERR(gf_last_status(), GF_ERR_DTYPE, "f32", "f64");
    gf_tensor *xi = gf_zeros(SZ(3), 1, GF_I64, NULL);
    CHECK(gf_fwad_make_dual(xi, xi, level) == NULL);
    CHECK_ERR(gf_last_status(), GF_ERR_DTYPE, "i64", "floating");
    /* a tangent on another device (where two are loaded) */
    gf_device *other = NULL;
    for (int i = 0; i < gf_device_count() && !other; i++)
        if (gf_device_at(i) != gf_tensor_device(x)) other = gf_device_at(i);
    if (other) {
        gf_tensor *to = gf_to_device(x, other);
        CHECK(to && gf_fwad_make_dual(x, to, level) == NULL);
        CHECK_ERR(gf_last_status(), GF_ERR_DEVICE, "gf_to_device");
    }
    gf_clear_error();
    CHECK(gf_fwad_make_dual(NULL, x, level) == NULL);
    CHECK(gf_last_status() == GF_ERR_INVALID);
    /* graft still usable: a dual works after the errors */
    gf_tensor *ok = gf_fwad_make_dual(x, x, level), *sq = gf_square(ok), *tsq = tangent_of(sq, level);
    CHECK_VALS(tsq, DV(2, 8, 18), 3, 0);
    CHECK(gf_fwad_level_exit(level) == GF_OK);
    /* too many levels */
    int lv[GF_FWAD_MAX_LEVELS + 1], opened = 0;
    for (int i = 0; i < GF_FWAD_MAX_LEVELS; i++) opened += gf_fwad_level_enter(&lv[i]) == GF_OK;
    CHECK(opened == GF_FWAD_MAX_LEVELS);
    CHECK(gf_fwad_level_enter(&lv[GF_FWAD_MAX_LEVELS]) == GF_ERR_INVALID);
    CHECK_CONTAINS(gf_last_error(), "GF_FWAD_MAX_LEVELS");
    for (int i = opened - 1; i >= 0; i--) CHECK(gf_fwad_level_exit(lv[i]) == GF_OK);
    CHECK(gf_fwad_level_count() == 0);
    CHECK(gf_fwad_level_enter(NULL) == GF_ERR_INVALID);
}

/* ------------------------------------------------------------ transforms */
static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static gf_tensor *rnd(const int64_t *sizes, int rank) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= sizes[i];
    double v[64];
    for (int64_t i = 0; i < n; i++) {
        g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
        v[i] = (double)(g_rng >> 11) / 9007199254740992.0 * 2 - 1;
    }
    return gf_from_data(v, sizes, rank, GF_F64, NULL);
}

/* Two outputs of (x [3], W [2, 3]): tanh(W x) and x * sum(x^2) + W^T 1. */
static gf_status small_map(gf_tensor *const *in, int n, gf_tensor **out, int n_out, void *user) {
    (void)n, (void)n_out, (void)user;
    gf_scope_begin();
    out[0] = gf_scope_keep(gf_tanh(gf_matmul(in[1], in[0])));
    gf_tensor *s = gf_sum(gf_square(in[0]), NULL, 0, false);
    out[1] = gf_scope_keep(gf_add(gf_mul(in[0], s), gf_sum(in[1], (const int[]){0}, 1, false)));
    gf_scope_end();
    return out[0] && out[1] ? GF_OK : gf_last_status();
}

static double max_abs_diff(const gf_tensor *a, const gf_tensor *b) {
    double va[256], vb[256];
    int64_t n = ag_read(a, va, 256), m = ag_read(b, vb, 256);
    if (n < 0 || n != m) return INFINITY;
    double e = 0;
    for (int64_t i = 0; i < n; i++) e = fmax(e, fabs(va[i] - vb[i]));
    return e;
}

static void test_jacfwd_jacrev(void) {
    for (int trial = 0; trial < 3; trial++) {
        gf_tensor *in[2] = {rnd(SZ(3), 1), rnd(SZ(2, 3), 2)};
        gf_tensor *jf[4] = {0}, *jr[4] = {0};
        CHECK_MSG(gf_jacfwd(small_map, in, 2, 2, NULL, jf) == GF_OK, "%s", gf_last_error());
        CHECK_MSG(gf_jacrev(small_map, in, 2, 2, NULL, jr) == GF_OK, "%s", gf_last_error());
        /* block shapes: out ++ in */
        CHECK(jf[0] && gf_tensor_rank(jf[0]) == 2 && gf_tensor_size(jf[0], 0) == 2 &&
              gf_tensor_size(jf[0], 1) == 3);
        CHECK(jf[1] && gf_tensor_rank(jf[1]) == 3);
        CHECK(jf[3] && gf_tensor_rank(jf[3]) == 3 && gf_tensor_size(jf[3], 0) == 3);
        for (int b = 0; b < 4; b++)
            CHECK_MSG(max_abs_diff(jf[b], jr[b]) < 1e-12, "block %d differs by %g", b,
                      max_abs_diff(jf[b], jr[b]));
        /* and one block by hand: d out1 / d x = sum(x^2) I + 2 x x^T */
        double x[3], e[9];
        ag_read(in[0], x, 3);
        double s = x[0] * x[0] + x[1] * x[1] + x[2] * x[2];
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) e[i * 3 + j] = (i == j ? s : 0) + 2 * x[i] * x[j];
        CHECK_VALS(jf[2], e, 9, 1e-12);
    }
}

#define RN 6
static gf_status rosenbrock(gf_tensor *const *in, int n, gf_tensor **out, int n_out, void *user) {
    (void)n, (void)n_out, (void)user;
    gf_tensor *x = in[0];
    gf_scope_begin();
    gf_tensor *head = gf_slice(x, 0, 0, RN - 1, 1), *tail = gf_slice(x, 0, 1, RN, 1);
    gf_tensor *a = gf_mul_scalar(gf_square(gf_sub(tail, gf_square(head))), 100.0);
    gf_tensor *b = gf_square(gf_rsub_scalar(head, 1.0));
    out[0] = gf_scope_keep(gf_sum(gf_add(a, b), NULL, 0, false));
    gf_scope_end();
    return out[0] ? GF_OK : gf_last_status();
}

static void rosenbrock_hessian(const double *x, double h[RN][RN]) {
    memset(h, 0, sizeof(double) * RN * RN);
    for (int i = 0; i < RN - 1; i++) {
        h[i][i] += 1200 * x[i] * x[i] - 400 * x[i + 1] + 2;
        h[i + 1][i + 1] += 200;
        h[i][i + 1] = h[i + 1][i] = -400 * x[i];
    }
}

static gf_status elementwise_exp(gf_tensor *const *in, int n, gf_tensor **out, int n_out,
                                 void *user) {
    (void)n, (void)n_out, (void)user;
    out[0] = gf_exp(in[0]);
    return out[0] ? GF_OK : gf_last_status();
}

static void test_hessian_hvp(void) {
    double xv[RN] = {0.3, -0.8, 1.1, 0.5, -0.2, 0.9}, h[RN][RN], vv[RN] = {1, -2, 0.5, 3, -1, 2};
    rosenbrock_hessian(xv, h);
    gf_tensor *x = vec(xv, RN), *H = NULL;
    CHECK_MSG(gf_hessian(rosenbrock, &x, 1, NULL, &H) == GF_OK, "%s", gf_last_error());
    CHECK(H && gf_tensor_rank(H) == 2 && gf_tensor_size(H, 0) == RN);
    CHECK_VALS(H, &h[0][0], RN * RN, 1e-10);
    /* H v by forward-over-reverse, against the analytic H v and against
     * double backward */
    gf_tensor *v = vec(vv, RN), *hv = NULL, *val = NULL;
    CHECK_MSG(gf_hvp(rosenbrock, &x, 1, &v, NULL, &val, &hv) == GF_OK, "%s", gf_last_error());
    double e[RN];
    for (int i = 0; i < RN; i++) {
        e[i] = 0;
        for (int j = 0; j < RN; j++) e[i] += h[i][j] * vv[j];
    }
    CHECK_VALS(hv, e, RN, 1e-10);
    gf_tensor *xl = ag_leaf(xv, RN), *f = NULL, *g = NULL, *hv2 = NULL;
    gf_grad_opts cg = {.retain_graph = -1, .create_graph = true};
    CHECK(rosenbrock(&xl, 1, &f, 1, NULL) == GF_OK);
    CHECK(gf_grad(&f, 1, NULL, &xl, 1, &g, &cg) == GF_OK);
    CHECK(gf_grad(&g, 1, &v, &xl, 1, &hv2, NULL) == GF_OK);
    gf_tensor_release(f); /* rosenbrock's result is a reference of ours, not the scope's */
    CHECK(max_abs_diff(hv, hv2) < 1e-10);
    double fv = 0;
    for (int i = 0; i < RN - 1; i++)
        fv += 100 * pow(xv[i + 1] - xv[i] * xv[i], 2) + pow(1 - xv[i], 2);
    CHECK_CLOSE(ag_item(val), fv, 1e-12);
    /* the Hessian needs a one-element output */
    gf_tensor *H2 = NULL;
    CHECK(gf_hessian(elementwise_exp, &x, 1, NULL, &H2) == GF_ERR_SHAPE);
    CHECK_CONTAINS(gf_last_error(), "one element");
    CHECK(H2 == NULL);
    CHECK(gf_fwad_level_count() == 0);
}

/* Forward-over-reverse through the fused gradient kernels (batch norm,
 * layer norm, (log_)softmax backward): with the direction zero in x and
 * nonzero in the weight w, x carries no tangent but the incoming gradient
 * does, so a kernel whose result has no tangent would lose H v's x part.
 * H v against double backward, for each kernel. */
typedef struct norm_user {
    int kind; /* 0 layer norm, 1 batch norm, 2 softmax, 3 log_softmax */
} norm_user;

static gf_status norm_map(gf_tensor *const *in, int n, gf_tensor **out, int n_out, void *user) {
    (void)n, (void)n_out;
    int kind = ((const norm_user *)user)->kind;
    gf_scope_begin();
    gf_tensor *x = in[0], *w = in[1], *y;
    if (kind == 0) y = gf_layer_norm(x, 1, w, NULL, 1e-5, NULL, NULL);
    else if (kind == 1) y = gf_batch_norm(x, NULL, NULL, w, NULL, true, 0.1, 1e-5, NULL, NULL);
    else y = gf_mul(kind == 2 ? gf_softmax(x, 1) : gf_log_softmax(x, 1), gf_square(w));
    out[0] = gf_scope_keep(gf_sum(gf_mul(gf_sin(y), gf_exp(w)), NULL, 0, false));
    gf_scope_end();
    return out[0] ? GF_OK : gf_last_status();
}

static void test_hvp_fused_norms(void) {
    static const char *const names[4] = {"layer_norm", "batch_norm", "softmax", "log_softmax"};
    double xv[12], wv[4], vw[4];
    for (int i = 0; i < 12; i++) xv[i] = sin(1.7 * i + 0.3) * 2;
    for (int i = 0; i < 4; i++) wv[i] = 0.5 + 0.25 * i, vw[i] = cos(0.9 * i);
    for (int kind = 0; kind < 4; kind++) {
        norm_user u = {kind};
        gf_tensor *x = gf_reshape(vec(xv, 12), (int64_t[]){3, 4}, 2), *w = vec(wv, 4);
        gf_tensor *in[2] = {x, w}, *v[2] = {NULL, vec(vw, 4)}, *hv[2] = {NULL, NULL};
        CHECK_MSG(gf_hvp(norm_map, in, 2, v, &u, NULL, hv) == GF_OK, "%s: %s", names[kind],
                  gf_last_error());
        gf_tensor *xl = gf_detach(x), *wl = gf_detach(w), *f = NULL, *g[2] = {NULL, NULL};
        gf_tensor_set_requires_grad(xl, true);
        gf_tensor_set_requires_grad(wl, true);
        gf_tensor *leaves[2] = {xl, wl}, *hv2[2] = {NULL, NULL};
        gf_grad_opts cg = {.retain_graph = -1, .create_graph = true};
        CHECK(norm_map(leaves, 2, &f, 1, &u) == GF_OK);
        CHECK(gf_grad(&f, 1, NULL, leaves, 2, g, &cg) == GF_OK);
        gf_tensor *dot = gf_sum(gf_mul(g[1], v[1]), NULL, 0, false);
        CHECK(dot && gf_grad(&dot, 1, NULL, leaves, 2, hv2, NULL) == GF_OK);
        for (int k = 0; k < 2; k++)
            CHECK_MSG(hv[k] && hv2[k] && max_abs_diff(hv[k], hv2[k]) < 1e-10,
                      "%s: H v part %d, forward-over-reverse vs double backward differ by %g",
                      names[kind], k, hv[k] && hv2[k] ? max_abs_diff(hv[k], hv2[k]) : -1.0);
        gf_tensor_release(f);
        CHECK(gf_fwad_level_count() == 0);
    }
}

/* Forward-over-reverse through in-place writes into views (CopySlices,
 * saved originals): the Hessian by gf_hessian against jacrev of the
 * gradient (double backward) and against central differences of it. */
static gf_status inplace_f(gf_tensor *const *in, int n, gf_tensor **out, int n_out, void *user) {
    (void)n, (void)n_out, (void)user;
    gf_scope_begin();
    gf_tensor *x = in[0], *y = gf_mul_scalar(x, 1.0);
    gf_status s = gf_mul_(gf_slice(y, 0, 1, 3, 1), gf_slice(x, 0, 0, 2, 1));
    if (s == GF_OK) s = gf_exp_(gf_slice(y, 0, 0, 1, 1));
    if (s == GF_OK) s = gf_add_(gf_select(y, 0, 3), gf_select(x, 0, 1));
    out[0] = s == GF_OK ? gf_scope_keep(gf_sum(gf_mul(gf_pow_scalar(y, 3.0), x), NULL, 0, false))
                        : NULL;
    gf_scope_end();
    return out[0] ? GF_OK : gf_last_status();
}

static gf_status inplace_grad(gf_tensor *const *in, int n, gf_tensor **out, int n_out, void *user) {
    gf_tensor *f = NULL;
    gf_status s = inplace_f(in, n, &f, 1, user);
    gf_grad_opts cg = {.retain_graph = -1, .create_graph = true};
    out[0] = NULL;
    if (s == GF_OK) s = gf_grad(&f, 1, NULL, in, 1, out, &cg);
    if (s == GF_OK) gf_scope_keep(out[0]); /* gf_grad records it in an open scope */
    gf_tensor_release(f);
    return s;
}

static void test_hessian_inplace_views(void) {
    double xv[4] = {0.3, -0.5, 0.8, 0.2};
    gf_tensor *x = vec(xv, 4), *H = NULL, *H2 = NULL;
    CHECK_MSG(gf_hessian(inplace_f, &x, 1, NULL, &H) == GF_OK, "%s", gf_last_error());
    CHECK_MSG(gf_jacrev(inplace_grad, &x, 1, 1, NULL, &H2) == GF_OK, "%s", gf_last_error());
    CHECK_MSG(max_abs_diff(H, H2) < 1e-12, "forward-over-reverse and double backward differ by %g",
              max_abs_diff(H, H2));
    /* central differences of the gradient, column by column */
    double hv[16], fd[16];
    CHECK(ag_read(H, hv, 16) == 16);
    for (int j = 0; j < 4; j++) {
        double g[2][4];
        for (int k = 0; k < 2; k++) {
            double w[4] = {xv[0], xv[1], xv[2], xv[3]};
            w[j] += k ? -1e-6 : 1e-6;
            gf_tensor *xw = ag_leaf(w, 4), *gw = NULL;
            CHECK(inplace_grad(&xw, 1, &gw, 1, NULL) == GF_OK);
            ag_read(gw, g[k], 4);
            gf_tensor_release(gw);
        }
        for (int i = 0; i < 4; i++) fd[i * 4 + j] = (g[0][i] - g[1][i]) / 2e-6;
    }
    for (int i = 0; i < 16; i++)
        CHECK_MSG(check_close_(hv[i], fd[i], 1e-5, 1e-5), "H[%d] = %.10g, differences %.10g", i,
                  hv[i], fd[i]);
}

/* jvp and vjp of one map, and their adjoint relation; an input the map
 * ignores gets a zero vjp; a NULL tangent is zero. */
static gf_status uses_first(gf_tensor *const *in, int n, gf_tensor **out, int n_out, void *user) {
    gf_scope_begin(); /* the transforms own no intermediate of f's */
    out[0] = gf_scope_keep(gf_mul(gf_exp(in[0]), in[0]));
    gf_scope_end();
    return out[0] ? GF_OK : gf_last_status();
}

static void test_jvp_vjp(void) {
    double xv[3] = {0.1, -0.5, 0.9};
    gf_tensor *in[2] = {vec(xv, 3), vec(DV(7, 8), 2)};
    gf_tensor *tan[2] = {vec(DV(1, 2, 3), 3), NULL}, *y = NULL, *jv = NULL;
    CHECK(gf_jvp(uses_first, in, 2, tan, 1, NULL, &y, &jv) == GF_OK);
    double e[3];
    for (int i = 0; i < 3; i++) e[i] = exp(xv[i]) * (1 + xv[i]) * (i + 1);
    CHECK_VALS(jv, e, 3, 1e-13);
    gf_tensor *u = vec(DV(2, 0, -1), 3), *vj[2] = {NULL, NULL};
    CHECK(gf_vjp(uses_first, in, 2, &u, 1, NULL, false, NULL, vj) == GF_OK);
    for (int i = 0; i < 3; i++) e[i] = exp(xv[i]) * (1 + xv[i]) * (i == 0 ? 2 : i == 1 ? 0 : -1);
    CHECK_VALS(vj[0], e, 3, 1e-13);
    CHECK_VALS(vj[1], DV(0, 0), 2, 0);
    /* a tangent of the wrong shape */
    gf_tensor *bad[2] = {vec(DV(1, 2), 2), NULL}, *jv2 = NULL;
    CHECK(gf_jvp(uses_first, in, 2, bad, 1, NULL, NULL, &jv2) == GF_ERR_SHAPE);
    CHECK(jv2 == NULL && gf_fwad_level_count() == 0);
}

/* Each case in a scope of its own: every tensor graft returns is released
 * at its end (a leak of graft's own shows under ASan's leak check). */
#define RUN_SCOPED(fn)  \
    do {                \
        gf_scope_begin(); \
        RUN(fn);        \
        gf_scope_end(); \
    } while (0)

int main(void) {
    RUN_SCOPED(test_make_unpack);
    RUN_SCOPED(test_forward_over_reverse);
    RUN_SCOPED(test_nested_levels);
    RUN_SCOPED(test_inplace_views);
    RUN_SCOPED(test_custom_function);
    RUN_SCOPED(test_errors);
    RUN_SCOPED(test_jacfwd_jacrev);
    RUN_SCOPED(test_hessian_hvp);
    RUN_SCOPED(test_hvp_fused_norms);
    RUN_SCOPED(test_hessian_inplace_views);
    RUN_SCOPED(test_jvp_vjp);
    CHECK_MSG(gf_shutdown() == GF_OK, "every buffer released: %s", gf_last_error());
    return CHECK_REPORT();
}
