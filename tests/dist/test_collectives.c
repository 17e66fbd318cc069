/* SPDX-License-Identifier: BSD-3-Clause */
/* test_collectives — every collective of graft/dist.h on the device
 * GRAFT_DEVICE names, for every dtype it stores, sizes 0, 1, odd and large,
 * contiguous and strided tensors, against values computed on the host; the
 * errors every rank must agree on (mismatched shapes, dtypes, collectives,
 * roots, a bad argument on one rank) returned on both ranks, after which
 * the group still works. Run with 2 ranks (or more). */
#include <math.h>

#include "dist_test.h"

/* Small integers: exact in every dtype, sums included (bf16: < 256). */
static double val(int rank, int64_t i, gf_dtype dt) {
    if (dt == GF_BOOL) return (i + rank) % 3 == 0;
    return (double)((i * 7 + rank * 5) % 23) - 9;
}

static double expect_reduce(int64_t i, gf_dtype dt, gf_reduce_op op) {
    double acc = val(0, i, dt);
    for (int r = 1; r < dt_world; r++) {
        double v = val(r, i, dt);
        if (dt == GF_BOOL)
            acc = op == GF_REDUCE_MIN ? (acc && v) : (acc || v);
        else if (op == GF_REDUCE_SUM || op == GF_REDUCE_MEAN)
            acc += v;
        else if (op == GF_REDUCE_MAX)
            acc = v > acc ? v : acc;
        else
            acc = v < acc ? v : acc;
    }
    if (op == GF_REDUCE_MEAN) acc /= dt_world;
    return acc;
}

/* f16 / bf16 / f32 means round: compare with the rounding of the dtype. */
static double tol_of(gf_dtype dt) {
    return dt == GF_BF16 ? 1e-2 : dt == GF_F16 ? 1e-3 : dt == GF_F32 ? 1e-6 : 0;
}

static const int64_t sizes_1d[] = {0, 1, 7, (1 << 20) + 3};
static const char *const op_names[] = {"sum", "mean", "max", "min"};

static void all_reduce_case(gf_dtype dt, int64_t n, gf_reduce_op op) {
    gf_tensor *t = dt_make(&n, 1, dt, val, dt_rank);
    CHECK(t != NULL);
    if (!t) return;
    gf_status s = gf_dist_all_reduce(t, op);
    if (op == GF_REDUCE_MEAN && !gf_dtype_is_float(dt)) {
        CHECK_MSG(s == GF_ERR_DTYPE, "mean of %s: %s", gf_dtype_name(dt), gf_last_error());
    } else {
        CHECK_MSG(s == GF_OK, "all_reduce %s %s n=%lld: %s", op_names[op], gf_dtype_name(dt),
                  (long long)n, gf_last_error());
        double *got = dt_read(t);
        int bad = 0;
        for (int64_t i = 0; i < n && bad < 3; i++) {
            double e = expect_reduce(i, dt, op);
            if (!check_close_(got[i], e, tol_of(dt), tol_of(dt))) {
                bad++;
                CHECK_MSG(0, "all_reduce %s %s n=%lld [%lld]: %g, expected %g", op_names[op],
                          gf_dtype_name(dt), (long long)n, (long long)i, got[i], e);
            }
        }
        free(got);
    }
    gf_tensor_release(t);
}

static void broadcast_case(gf_dtype dt, int64_t n, int root) {
    gf_tensor *t = dt_make(&n, 1, dt, val, dt_rank);
    CHECK_MSG(gf_dist_broadcast(t, root) == GF_OK, "%s", gf_last_error());
    double *got = dt_read(t);
    int bad = 0;
    for (int64_t i = 0; i < n && bad < 3; i++)
        if (got[i] != val(root, i, dt)) {
            bad++;
            CHECK_MSG(0, "broadcast %s n=%lld [%lld]: %g, expected %g", gf_dtype_name(dt),
                      (long long)n, (long long)i, got[i], val(root, i, dt));
        }
    free(got);
    gf_tensor_release(t);
}

/* all_gather into [W * n] (cat) and [W, n] (stack); reduce_scatter back. */
static void gather_scatter_case(gf_dtype dt, int64_t n) {
    gf_tensor *in = dt_make(&n, 1, dt, val, dt_rank);
    int64_t cat = dt_world * n, stack[2] = {dt_world, n};
    gf_tensor *out_cat = gf_zeros(&cat, 1, dt, dt_dev), *out_stack = gf_zeros(stack, 2, dt, dt_dev);
    CHECK_MSG(gf_dist_all_gather(out_cat, in) == GF_OK, "%s", gf_last_error());
    CHECK_MSG(gf_dist_all_gather(out_stack, in) == GF_OK, "%s", gf_last_error());
    double *a = dt_read(out_cat), *b = dt_read(out_stack);
    int bad = 0;
    for (int r = 0; r < dt_world; r++)
        for (int64_t i = 0; i < n && bad < 3; i++)
            if (a[r * n + i] != val(r, i, dt) || b[r * n + i] != val(r, i, dt)) {
                bad++;
                CHECK_MSG(0, "all_gather %s n=%lld rank %d [%lld]: %g / %g, expected %g",
                          gf_dtype_name(dt), (long long)n, r, (long long)i, a[r * n + i],
                          b[r * n + i], val(r, i, dt));
            }
    free(a);
    free(b);
    /* reduce_scatter: rank r gets the sum over ranks of part r of `big`. */
    gf_tensor *big = dt_make(&cat, 1, dt, val, dt_rank);
    gf_tensor *part = gf_zeros(&n, 1, dt, dt_dev);
    gf_reduce_op op = dt == GF_BOOL ? GF_REDUCE_MAX : GF_REDUCE_SUM;
    CHECK_MSG(gf_dist_reduce_scatter(part, big, op) == GF_OK, "%s", gf_last_error());
    double *p = dt_read(part);
    bad = 0;
    for (int64_t i = 0; i < n && bad < 3; i++) {
        double e = expect_reduce(dt_rank * n + i, dt, op);
        if (!check_close_(p[i], e, tol_of(dt), tol_of(dt))) {
            bad++;
            CHECK_MSG(0, "reduce_scatter %s n=%lld [%lld]: %g, expected %g", gf_dtype_name(dt),
                      (long long)n, (long long)i, p[i], e);
        }
    }
    free(p);
    /* The stacked form [W, n] of the input too, with MIN. */
    gf_tensor *big2 = gf_reshape(big, stack, 2);
    CHECK_MSG(gf_dist_reduce_scatter(part, big2, GF_REDUCE_MIN) == GF_OK, "%s", gf_last_error());
    p = dt_read(part);
    for (int64_t i = 0; i < n && i < 50; i++)
        CHECK(p[i] == expect_reduce(dt_rank * n + i, dt, GF_REDUCE_MIN));
    free(p);
    gf_tensor_release(big2);
    gf_tensor_release(big);
    gf_tensor_release(part);
    gf_tensor_release(in);
    gf_tensor_release(out_cat);
    gf_tensor_release(out_stack);
}

static void test_every_dtype_and_size(void) {
    gf_device_info info;
    CHECK(gf_device_get_info(dt_dev, &info) == GF_OK);
    for (int dt = GF_F32; dt <= GF_BF16; dt++) {
        if (!(info.dtypes & (1u << dt))) continue;
        for (size_t k = 0; k < sizeof sizes_1d / sizeof sizes_1d[0]; k++) {
            int64_t n = sizes_1d[k];
            /* The large size once per op for f32 only: the rest is the same path. */
            if (n > 1000 && dt != GF_F32) continue;
            for (int op = GF_REDUCE_SUM; op <= GF_REDUCE_MIN; op++)
                all_reduce_case((gf_dtype)dt, n, (gf_reduce_op)op);
            broadcast_case((gf_dtype)dt, n, dt_world - 1);
            broadcast_case((gf_dtype)dt, n, 0);
            gather_scatter_case((gf_dtype)dt, n);
        }
    }
}

/* A 0-dim tensor: all_reduce and all_gather into [W]. */
static void test_scalar(void) {
    gf_tensor *t = gf_scalar(dt_rank + 1, GF_F32, dt_dev);
    CHECK(gf_dist_all_reduce(t, GF_REDUCE_SUM) == GF_OK);
    double v = 0;
    gf_tensor_item(t, &v);
    CHECK(v == dt_world * (dt_world + 1) / 2.0);
    int64_t w = dt_world;
    gf_tensor *out = gf_zeros(&w, 1, GF_F32, dt_dev), *s = gf_scalar(dt_rank, GF_F32, dt_dev);
    CHECK_MSG(gf_dist_all_gather(out, s) == GF_OK, "%s", gf_last_error());
    double *g = dt_read(out);
    for (int r = 0; r < dt_world; r++) CHECK(g[r] == r);
    free(g);
    gf_tensor_release(t);
    gf_tensor_release(out);
    gf_tensor_release(s);
}

/* Strided views: a transposed matrix and every other element of a vector.
 * The elements outside the view must stay untouched. */
static void test_strided(void) {
    int64_t sz[2] = {5, 3};
    gf_tensor *m = dt_make(sz, 2, GF_F32, val, dt_rank);
    gf_tensor *mt = gf_transpose(m, 0, 1); /* [3, 5], not contiguous */
    CHECK(!gf_tensor_is_contiguous(mt));
    CHECK_MSG(gf_dist_all_reduce(mt, GF_REDUCE_SUM) == GF_OK, "%s", gf_last_error());
    double *g = dt_read(m);
    for (int64_t i = 0; i < 15; i++) CHECK(g[i] == expect_reduce(i, GF_F32, GF_REDUCE_SUM));
    free(g);
    int64_t n = 21;
    gf_tensor *v = dt_make(&n, 1, GF_F64, val, dt_rank);
    gf_tensor *odd = gf_slice(v, 0, 1, 21, 2); /* 10 elements, stride 2 */
    CHECK_MSG(gf_dist_broadcast(odd, 1 % dt_world) == GF_OK, "%s", gf_last_error());
    g = dt_read(v);
    for (int64_t i = 0; i < n; i++)
        CHECK(g[i] == (i % 2 ? val(1 % dt_world, i, GF_F64) : val(dt_rank, i, GF_F64)));
    free(g);
    /* A strided input to all_gather, a strided output of reduce_scatter. */
    int64_t out_n = 10 * dt_world;
    gf_tensor *out = gf_zeros(&out_n, 1, GF_F64, dt_dev);
    CHECK_MSG(gf_dist_all_gather(out, odd) == GF_OK, "%s", gf_last_error());
    g = dt_read(out);
    for (int r = 0; r < dt_world; r++)
        for (int64_t i = 0; i < 10; i++) CHECK(g[r * 10 + i] == val(1 % dt_world, 2 * i + 1, GF_F64));
    free(g);
    gf_tensor *dst = gf_zeros(&n, 1, GF_F64, dt_dev);
    gf_tensor *dst_view = gf_slice(dst, 0, 0, 20, 2);
    CHECK_MSG(gf_dist_reduce_scatter(dst_view, out, GF_REDUCE_MAX) == GF_OK, "%s", gf_last_error());
    g = dt_read(dst);
    for (int64_t i = 0; i < n; i++)
        CHECK(g[i] == (i % 2 || i >= 20 ? 0 : val(1 % dt_world, i + 1, GF_F64)));
    free(g);
    /* A tensor that requires grad (a parameter) can be broadcast. */
    gf_tensor *p = dt_make(&n, 1, GF_F64, val, dt_rank);
    gf_tensor_set_requires_grad(p, true);
    CHECK_MSG(gf_dist_broadcast(p, 0) == GF_OK, "%s", gf_last_error());
    g = dt_read(p);
    for (int64_t i = 0; i < n; i++) CHECK(g[i] == val(0, i, GF_F64));
    free(g);
    gf_tensor *list[] = {m, mt, v, odd, out, dst, dst_view, p};
    for (size_t i = 0; i < sizeof list / sizeof list[0]; i++) gf_tensor_release(list[i]);
}

/* Both ranks get the same status; the message names the other rank. */
static void expect_everywhere(gf_status s, gf_status want, const char *what, const char *needle) {
    CHECK_MSG(s == want, "%s: %s instead of %s (%s)", what, gf_status_name(s),
              gf_status_name(want), gf_last_error());
    if (needle) CHECK_CONTAINS(gf_last_error(), needle);
    int mine = (int)s, all_same = 0;
    /* Cross-check with the other ranks through graft itself. */
    gf_tensor *t = gf_scalar(mine, GF_I32, dt_dev), *mx = gf_scalar(mine, GF_I32, dt_dev);
    CHECK(gf_dist_all_reduce(t, GF_REDUCE_MIN) == GF_OK);
    CHECK(gf_dist_all_reduce(mx, GF_REDUCE_MAX) == GF_OK);
    double a = 0, b = 0;
    gf_tensor_item(t, &a);
    gf_tensor_item(mx, &b);
    all_same = a == b && a == mine;
    CHECK_MSG(all_same, "%s: ranks disagree (min %g, max %g)", what, a, b);
    gf_tensor_release(t);
    gf_tensor_release(mx);
}

static void test_errors_agreed(void) {
    /* Shapes that differ: [3, 4] on rank 0, [3, 5] on the others. */
    int64_t sz[2] = {3, dt_rank == 0 ? 4 : 5};
    gf_tensor *t = gf_ones(sz, 2, GF_F32, dt_dev);
    expect_everywhere(gf_dist_all_reduce(t, GF_REDUCE_SUM), GF_ERR_SHAPE, "shape", "rank 1");
    double *g = dt_read(t);
    CHECK(g[0] == 1); /* nothing moved */
    free(g);
    gf_tensor_release(t);
    /* dtypes that differ. */
    int64_t n = 6;
    t = gf_ones(&n, 1, dt_rank == 0 ? GF_F32 : GF_I32, dt_dev);
    expect_everywhere(gf_dist_broadcast(t, 0), GF_ERR_DTYPE, "dtype", "dtype");
    gf_tensor_release(t);
    /* Different collectives. */
    t = gf_ones(&n, 1, GF_F32, dt_dev);
    expect_everywhere(dt_rank == 0 ? gf_dist_all_reduce(t, GF_REDUCE_SUM) : gf_dist_broadcast(t, 0),
                      GF_ERR_INVALID, "collective", "same collectives");
    /* Different roots, different ops. */
    expect_everywhere(gf_dist_broadcast(t, dt_rank == 0 ? 0 : 1), GF_ERR_INVALID, "root", "root");
    expect_everywhere(gf_dist_all_reduce(t, dt_rank == 0 ? GF_REDUCE_SUM : GF_REDUCE_MAX),
                      GF_ERR_INVALID, "op", "reduction");
    /* A bad argument on one rank only: the others fail too. */
    expect_everywhere(gf_dist_broadcast(t, dt_rank == 0 ? dt_world : 0), GF_ERR_INVALID,
                      "root out of range", dt_rank == 0 ? "is not a rank" : "failed on rank 0");
    int64_t wrong = dt_rank == 0 ? 5 : 6 * dt_world;
    gf_tensor *out = gf_zeros(&wrong, 1, GF_F32, dt_dev);
    expect_everywhere(gf_dist_all_gather(out, t), GF_ERR_SHAPE, "all_gather out on rank 0",
                      dt_rank == 0 ? "does not fit" : "failed on rank 0");
    gf_tensor_release(out);
    int64_t fine = 6 * dt_world;
    out = gf_zeros(&fine, 1, GF_I32, dt_dev);
    expect_everywhere(gf_dist_all_gather(out, t), GF_ERR_DTYPE, "all_gather dtype", "must match");
    gf_tensor_release(out);
    gf_tensor *i32 = gf_ones(&n, 1, GF_I32, dt_dev);
    expect_everywhere(gf_dist_all_reduce(i32, GF_REDUCE_MEAN), GF_ERR_DTYPE, "int mean",
                      "GF_REDUCE_SUM");
    expect_everywhere(gf_dist_all_reduce(t, (gf_reduce_op)9), GF_ERR_INVALID, "bad op", "unknown");
    expect_everywhere(gf_dist_all_reduce(dt_rank == 0 ? NULL : t, GF_REDUCE_SUM), GF_ERR_INVALID,
                      "NULL on rank 0", NULL);
    /* The group still works afterwards. */
    CHECK(gf_dist_all_reduce(t, GF_REDUCE_SUM) == GF_OK);
    g = dt_read(t);
    CHECK(g[5] == dt_world);
    free(g);
    CHECK(gf_dist_barrier() == GF_OK);
    gf_tensor_release(t);
    gf_tensor_release(i32);
}

/* The host-memory async all-reduce (the comm-hook building block). */
static void test_async_host(void) {
    double data[5];
    for (int i = 0; i < 5; i++) data[i] = dt_rank + i;
    gf_dist_work *w = gf_dist_all_reduce_host_async(data, 5, GF_F64, GF_REDUCE_MEAN);
    CHECK(w != NULL);
    bool done = false;
    CHECK(gf_dist_work_test(w, &done) == GF_OK);
    CHECK(gf_dist_work_wait(w) == GF_OK);
    for (int i = 0; i < 5; i++) CHECK(data[i] == (dt_world - 1) / 2.0 + i);
    CHECK(gf_dist_all_reduce_host_async(NULL, 3, GF_F32, GF_REDUCE_SUM) == NULL);
    CHECK(gf_last_status() == GF_ERR_INVALID);
    CHECK(gf_dist_all_reduce_host_async(data, 1, GF_I64, GF_REDUCE_MEAN) == NULL);
    CHECK(gf_last_status() == GF_ERR_DTYPE);
    CHECK(gf_dist_work_wait(NULL) == GF_ERR_INVALID);
}

static void test_group(void) {
    CHECK(gf_dist_is_initialized());
    CHECK(dt_world >= 2);
    CHECK(dt_rank >= 0 && dt_rank < dt_world);
    CHECK(gf_dist_local_size() >= 1 && gf_dist_local_rank() >= 0);
    const char *env = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    if (env) CHECK(atoi(env) == gf_dist_local_rank());
    CHECK(gf_dist_init(NULL, NULL) == GF_OK); /* idempotent */
    /* Host devices are shared by all ranks: "cpu" is cpu:0 everywhere. */
    gf_device *cpu = gf_dist_device("cpu");
    CHECK(cpu && gf_device_index(cpu) == 0);
    CHECK(gf_dist_device("nonesuch") == NULL);
    CHECK_CONTAINS(gf_last_error(), "nonesuch");
    CHECK(gf_dist_device("nonesuch,cpu") == cpu);
}

int main(int argc, char **argv) {
    /* Before init: INVALID, saying what to do. */
    CHECK(gf_dist_rank() == -1);
    CHECK_CONTAINS(gf_last_error(), "gf_dist_init");
    CHECK(gf_dist_barrier() == GF_ERR_INVALID);
    dt_start(&argc, &argv);
    RUN(test_group);
    RUN(test_every_dtype_and_size);
    RUN(test_scalar);
    RUN(test_strided);
    RUN(test_errors_agreed);
    RUN(test_async_host);
    return dt_finish();
}
