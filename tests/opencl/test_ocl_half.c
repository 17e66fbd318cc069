/* SPDX-License-Identifier: BSD-3-Clause */
/* test_ocl_half.c — f16 and bf16 on the OpenCL device (stored as 16-bit
 * patterns, computed in f32, rounded once) against the reference plugin:
 * every conversion bit for bit, over all 65,536 patterns and the rounding
 * edges of each source dtype; the float ops over signed zeros, infinities,
 * NaN and subnormals; long reductions (the work-group form) and max_dim;
 * matmul through the vector kernel's full and partial blocks, staged views
 * and broadcast batches; softmax over short and long lines; comparisons,
 * logical ops and where; convolutions, pooling and the norms (through f32
 * copies, batch norm's running statistics rounded back);
 * RANDOM, the reference's numbers for the same seed.
 *
 * CTest runs it with GRAFT_FALLBACK=off: an op the device did not run itself
 * fails instead of quietly running on the CPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xd_test.h"

static const gf_dtype halves[2] = {GF_F16, GF_BF16};
static bool have_f64;

/* got and want hold the same bits (both contiguous, one dtype). */
static void same_bits(const char *what, gf_tensor *got, gf_tensor *want) {
    CHECK_MSG(got && want, "%s: %s", what, gf_last_error());
    if (got && want) {
        int64_t n = gf_tensor_numel(want);
        size_t es = gf_dtype_size(gf_tensor_dtype(want));
        CHECK_MSG(gf_tensor_dtype(got) == gf_tensor_dtype(want) && gf_tensor_numel(got) == n,
                  "%s: dtype or size differs", what);
        size_t bytes = (size_t)n * es;
        unsigned char *a = malloc(bytes ? bytes : 1), *b = malloc(bytes ? bytes : 1);
        CHECK(a && b);
        if (a && b && gf_tensor_dtype(got) == gf_tensor_dtype(want) &&
            gf_tensor_numel(got) == n) {
            CHECK(gf_tensor_to_host(got, a, bytes) == GF_OK);
            CHECK(gf_tensor_to_host(want, b, bytes) == GF_OK);
            int64_t bad = 0, first = -1;
            for (int64_t i = 0; i < n; i++)
                if (memcmp(a + (size_t)i * es, b + (size_t)i * es, es) && bad++ == 0) first = i;
            if (bad) {
                uint64_t ga = 0, wb = 0;
                memcpy(&ga, a + (size_t)first * es, es);
                memcpy(&wb, b + (size_t)first * es, es);
                CHECK_MSG(false, "%s: %lld of %lld elements differ; first at %lld: 0x%llx, "
                          "expected 0x%llx", what, (long long)bad, (long long)n,
                          (long long)first, (unsigned long long)ga, (unsigned long long)wb);
            }
        }
        free(a);
        free(b);
    }
    gf_tensor_release(got);
    gf_tensor_release(want);
}

/* t moved to the reference device (t released). */
static gf_tensor *on_ref(gf_tensor *t) {
    gf_tensor *r = t ? gf_to_device(t, xd_ref) : NULL;
    gf_tensor_release(t);
    return r;
}

/* got, in a 16-bit dtype, widened to f32 and checked against the reference's
 * f32 result (got and want released). */
static void check_half(const char *what, gf_dtype half, gf_tensor *got, gf_tensor *want,
                       xd_tol t) {
    CHECK_MSG(!got || gf_tensor_dtype(got) == half, "%s: dtype %s", what,
              got ? gf_dtype_name(gf_tensor_dtype(got)) : "-");
    gf_tensor *g32 = got ? gf_to_dtype(got, GF_F32) : NULL;
    gf_tensor_release(got);
    xd_check_pair_tol(what, g32, want, t);
}

/* The same host values as a tensor on the device and on the reference. */
static xd_pair pair_of(const void *data, int64_t n, gf_dtype dt) {
    const int64_t sz[1] = {n};
    return (xd_pair){gf_from_data(data, sz, 1, dt, xd_dev), gf_from_data(data, sz, 1, dt, xd_ref)};
}

/* Converts p to dt on both devices; the results must have the same bits. */
static void convert_both(const char *from, xd_pair p, gf_dtype dt) {
    char what[96];
    snprintf(what, sizeof what, "copy %s -> %s", from, gf_dtype_name(dt));
    same_bits(what, on_ref(gf_to_dtype(p.d, dt)), gf_to_dtype(p.r, dt));
}

/* ------------------------------------------------------------ conversions */
static void test_all_patterns(void) {
    enum { N = 65536 };
    uint16_t *bits = malloc(N * sizeof *bits);
    CHECK(bits != NULL);
    if (!bits) return;
    for (int i = 0; i < N; i++) bits[i] = (uint16_t)i;
    const gf_dtype to[] = {GF_F32, GF_F64, GF_I32, GF_I64, GF_BOOL, GF_F16, GF_BF16};
    for (int h = 0; h < 2; h++) {
        xd_pair p = pair_of(bits, N, halves[h]);
        CHECK_MSG(p.d && p.r, "%s patterns: %s", gf_dtype_name(halves[h]), gf_last_error());
        for (size_t k = 0; k < sizeof to / sizeof to[0]; k++) {
            if (to[k] == GF_F64 && !have_f64) continue;
            convert_both(gf_dtype_name(halves[h]), p, to[k]);
        }
        xd_pair_release(p);
    }
    free(bits);
}

/* f32 values at every kind of rounding edge of f16 and bf16: ties either
 * way, just above and below them, the subnormal and overflow thresholds,
 * f32 subnormals, infinities, NaN with payloads. */
static void test_from_f32(void) {
    enum { N = 4096 };
    float *v = malloc(N * sizeof *v);
    CHECK(v != NULL);
    if (!v) return;
    int n = 0;
    const float fixed[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 65504.0f, 65519.99f,
                           65520.0f, -65520.0f, 6.1035156e-05f, 6.0975552e-05f, 5.9604645e-08f,
                           2.9802322e-08f, 2.9802326e-08f, 1e-45f, -1e-40f, 3.3895314e38f,
                           3.4028235e38f, 1.0f, -1.0f};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) v[n++] = fixed[i];
    uint32_t nan_payload = 0x7fa00001u; /* a signalling NaN with a payload */
    memcpy(&v[n++], &nan_payload, 4);
    xd_seed(7);
    while (n < N) {
        /* A random f16 or bf16 neighbourhood: the pattern's f32 value, the
         * tie above it, and one f32 ulp either side of the tie. */
        uint32_t u = (uint32_t)(xd_next() >> 32);
        int mode = n % 4;
        uint32_t low = u & 0xffff0000u; /* bf16 grid */
        uint32_t tie = low | 0x8000u;
        uint32_t pick = mode == 0 ? tie : mode == 1 ? tie + 1 : mode == 2 ? tie - 1 : u;
        if (n % 8 >= 4) { /* f16 grid: 13 low bits, exponents in f16's range */
            uint32_t e = 103u + (uint32_t)(xd_next() % 40u); /* 2^-24 .. 2^16 */
            uint32_t m = (uint32_t)(xd_next() & 0x7fffffu);
            uint32_t base = (u & 0x80000000u) | (e << 23) | (m & ~0x1fffu);
            pick = mode == 0 ? base | 0x1000u : mode == 1 ? (base | 0x1000u) + 1
                   : mode == 2 ? (base | 0x1000u) - 1 : base | (m & 0x1fffu);
        }
        memcpy(&v[n++], &pick, 4);
    }
    xd_pair p = pair_of(v, N, GF_F32);
    for (int h = 0; h < 2; h++) convert_both("f32", p, halves[h]);
    xd_pair_release(p);
    free(v);
}

/* Doubles, i32 and i64 round once to the 16-bit dtypes, as the reference
 * does (a double exactly between two bf16 values but not an f32 tie). */
static void test_from_wide(void) {
    enum { N = 2048 };
    double *d = malloc(N * sizeof *d);
    int32_t *i32 = malloc(N * sizeof *i32);
    int64_t *i64 = malloc(N * sizeof *i64);
    CHECK(d && i32 && i64);
    if (d && i32 && i64) {
        xd_seed(11);
        for (int i = 0; i < N; i++) {
            double x = ldexp(xd_uniform(-1.0, 1.0), (int)(xd_next() % 60) - 30);
            if (i % 5 == 0) x = 1.0 + ldexp(1.0, -8) + ldexp(1.0, -40); /* above a bf16 tie */
            if (i % 5 == 1) x = 65519.999999;
            if (i % 7 == 2) x = ldexp((double)(xd_next() % 4096), -36); /* f16 subnormals */
            d[i] = x;
            i32[i] = (int32_t)(uint32_t)(xd_next() >> (i % 3 ? 40 : 32));
            i64[i] = (int64_t)(xd_next() >> (i % 4 ? 50 : 1));
            if (i % 2) {
                i32[i] = -i32[i];
                i64[i] = -i64[i];
            }
        }
        xd_pair pi = pair_of(i32, N, GF_I32), pl = pair_of(i64, N, GF_I64);
        for (int h = 0; h < 2; h++) {
            convert_both("i32", pi, halves[h]);
            convert_both("i64", pl, halves[h]);
        }
        xd_pair_release(pi);
        xd_pair_release(pl);
        if (have_f64) {
            xd_pair pd = pair_of(d, N, GF_F64);
            for (int h = 0; h < 2; h++) convert_both("f64", pd, halves[h]);
            xd_pair_release(pd);
        }
        /* bool to each: 0 and 1 exactly */
        uint8_t b[4] = {0, 1, 1, 0};
        xd_pair pb = pair_of(b, 4, GF_BOOL);
        for (int h = 0; h < 2; h++) convert_both("bool", pb, halves[h]);
        xd_pair_release(pb);
    }
    free(d);
    free(i32);
    free(i64);
}

/* ------------------------------------------------------------ elementwise */
static gf_tensor *gelu(const gf_tensor *x) { return gf_gelu(x, false); }

/* The float ops on values with signed zeros, infinities, NaN and f16
 * subnormals: the f32 formula rounded once, so the bits equal the
 * reference's wherever the f32 math functions agree to the last bit; the
 * tolerance is one 16-bit rounding. */
static void test_elementwise(void) {
    const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-7f, -3e-6f, 65504.0f,
                              1.5f, -2.5f, 0.5f, 100.0f};
    for (int h = 0; h < 2; h++) {
        gf_dtype hd = halves[h];
        xd_seed(100 + (uint64_t)h);
        xd_pair a32 = xd_pair_rand(GF_F32, 2, SZ(37, 23), XV_GENERAL, XL_TRANSPOSED);
        xd_pair b32 = xd_pair_rand(GF_F32, 2, SZ(37, 23), XV_POSITIVE, XL_STEP);
        xd_pair a = xd_half_make(hd, &a32), b = xd_half_make(hd, &b32);
        xd_pair s = pair_of(specials, 12, GF_F32), sh = xd_half_make(hd, &s);
        xd_tol t = xd_half_tol(hd);
        char what[64];
        struct {
            const char *name;
            gf_tensor *(*fn)(const gf_tensor *);
        } un[] = {{"exp", gf_exp},   {"neg", gf_neg},     {"abs", gf_abs},   {"tanh", gf_tanh},
                  {"sigmoid", gf_sigmoid}, {"relu", gf_relu}, {"sqrt", gf_sqrt}, {"gelu", gelu}};
        for (size_t k = 0; k < sizeof un / sizeof un[0]; k++) {
            snprintf(what, sizeof what, "%s %s", un[k].name, gf_dtype_name(hd));
            check_half(what, hd, un[k].fn(a.d), un[k].fn(a.r), t);
            snprintf(what, sizeof what, "%s %s on specials", un[k].name, gf_dtype_name(hd));
            check_half(what, hd, un[k].fn(sh.d), un[k].fn(sh.r), t);
        }
        struct {
            const char *name;
            gf_tensor *(*fn)(const gf_tensor *, const gf_tensor *);
        } bin[] = {{"add", gf_add}, {"mul", gf_mul}, {"div", gf_div}, {"maximum", gf_maximum}};
        for (size_t k = 0; k < sizeof bin / sizeof bin[0]; k++) {
            snprintf(what, sizeof what, "%s %s", bin[k].name, gf_dtype_name(hd));
            check_half(what, hd, bin[k].fn(a.d, b.d), bin[k].fn(a.r, b.r), t);
        }
        /* A scalar keeps the 16-bit dtype and computes in f32. */
        snprintf(what, sizeof what, "mul_scalar %s", gf_dtype_name(hd));
        check_half(what, hd, gf_mul_scalar(a.d, 0.1), gf_mul_scalar(a.r, 0.1), t);
        /* Comparisons, logical ops and where on signed zeros and NaN: exact. */
        gf_tensor *rev = gf_flip(sh.d, (const int[]){0}, 1), *rev_r = gf_flip(sh.r, (const int[]){0}, 1);
        snprintf(what, sizeof what, "lt %s", gf_dtype_name(hd));
        same_bits(what, on_ref(gf_lt(sh.d, rev)), gf_lt(sh.r, rev_r));
        snprintf(what, sizeof what, "eq %s", gf_dtype_name(hd));
        same_bits(what, on_ref(gf_eq(sh.d, rev)), gf_eq(sh.r, rev_r));
        snprintf(what, sizeof what, "logical_and %s", gf_dtype_name(hd));
        same_bits(what, on_ref(gf_logical_and(sh.d, rev)), gf_logical_and(sh.r, rev_r));
        gf_tensor *c = gf_gt(sh.d, rev), *cr = gf_gt(sh.r, rev_r);
        gf_tensor *wr16 = gf_to_dtype(sh.r, hd), *rv16 = gf_to_dtype(rev_r, hd);
        snprintf(what, sizeof what, "where %s", gf_dtype_name(hd));
        same_bits(what, on_ref(gf_where(c, sh.d, rev)), gf_where(cr, wr16, rv16));
        gf_tensor_release(wr16);
        gf_tensor_release(rv16);
        gf_tensor_release(c);
        gf_tensor_release(cr);
        gf_tensor_release(rev);
        gf_tensor_release(rev_r);
        xd_pair_release(a32);
        xd_pair_release(b32);
        xd_pair_release(a);
        xd_pair_release(b);
        xd_pair_release(s);
        xd_pair_release(sh);
    }
}

/* ------------------------------------------------------------ reductions */
typedef gf_tensor *(*red_fn)(const gf_tensor *, const int *, int, bool);
static gf_tensor *var1(const gf_tensor *x, const int *d, int n, bool k) {
    return gf_var(x, d, n, 1.0, k);
}

static void test_reductions(void) {
    struct {
        const char *name;
        red_fn fn;
    } cases[] = {{"sum", gf_sum},   {"mean", gf_mean}, {"amax", gf_amax},
                 {"amin", gf_amin}, {"var", var1},     {"logsumexp", gf_logsumexp}};
    /* Long lines (the work-group form), many short ones (an item each),
     * a strided line over two dims. */
    struct {
        int rank;
        int64_t sizes[3];
        int ndims, dims[2];
        xd_layout L;
    } shapes[] = {{2, {3, 5000}, 1, {1}, XL_CONTIG},
                  {2, {5000, 3}, 1, {0}, XL_TRANSPOSED},
                  {2, {400, 9}, 1, {1}, XL_STEP},
                  {3, {4, 30, 50}, 2, {0, 2}, XL_OFFSET}};
    for (int h = 0; h < 2; h++)
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
            xd_seed(300 + si + 10 * (uint64_t)h);
            xd_pair x32 = xd_pair_rand(GF_F32, shapes[si].rank, shapes[si].sizes, XV_PLAIN,
                                       shapes[si].L);
            xd_pair x = xd_half_make(halves[h], &x32);
            int64_t len = 1;
            for (int k = 0; k < shapes[si].ndims; k++) len *= shapes[si].sizes[shapes[si].dims[k]];
            for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
                char what[96];
                snprintf(what, sizeof what, "%s %s shape %zu", cases[ci].name,
                         gf_dtype_name(halves[h]), si);
                xd_tol t = xd_half_tol(halves[h]);
                /* f32 accumulation against the reference's double: the sum of
                 * a long line of values up to ~10 differs in f32's last bits,
                 * then both round to 16 bits. */
                if (!strcmp(cases[ci].name, "sum")) t.atol *= (double)len / 50.0 + 1.0;
                check_half(what, halves[h],
                           cases[ci].fn(x.d, shapes[si].dims, shapes[si].ndims, false),
                           cases[ci].fn(x.r, shapes[si].dims, shapes[si].ndims, false), t);
            }
            /* max_dim: the values bit for bit, the indices exactly. */
            int dim = shapes[si].dims[0];
            gf_tensor *vd = NULL, *id = NULL, *vr = NULL, *ir = NULL;
            CHECK(gf_max_dim(x.d, dim, false, &vd, &id) == GF_OK);
            CHECK(gf_max_dim(x.r, dim, false, &vr, &ir) == GF_OK);
            gf_tensor *vr16 = vr ? gf_to_dtype(vr, halves[h]) : NULL;
            char what[64];
            snprintf(what, sizeof what, "max_dim %s values", gf_dtype_name(halves[h]));
            same_bits(what, on_ref(vd), vr16);
            snprintf(what, sizeof what, "max_dim %s indices", gf_dtype_name(halves[h]));
            same_bits(what, on_ref(id), ir);
            gf_tensor_release(vr);
            xd_pair_release(x32);
            xd_pair_release(x);
        }
}

/* ------------------------------------------------------------ matmul, softmax */
static void test_matmul(void) {
    struct {
        int ra;
        int64_t a[3];
        xd_layout la;
        int rb;
        int64_t b[3];
        xd_layout lb;
    } cases[] = {
        {2, {40, 64}, XL_CONTIG, 2, {64, 48}, XL_CONTIG},      /* full vector blocks */
        {2, {13, 70}, XL_TRANSPOSED, 2, {70, 37}, XL_CONTIG},  /* partial blocks */
        {2, {9, 33}, XL_CONTIG, 2, {33, 21}, XL_TRANSPOSED},   /* b staged */
        {3, {3, 17, 24}, XL_OFFSET, 3, {3, 24, 10}, XL_STEP},  /* batched, b staged */
        {3, {2, 37, 24}, XL_STEP, 2, {24, 140}, XL_CONTIG},   /* a packed, partial panel */
    };
    for (int h = 0; h < 2; h++)
        for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
            xd_seed(500 + ci + 10 * (uint64_t)h);
            xd_pair a32 = xd_pair_rand(GF_F32, cases[ci].ra, cases[ci].a, XV_SMALL, cases[ci].la);
            xd_pair b32 = xd_pair_rand(GF_F32, cases[ci].rb, cases[ci].b, XV_SMALL, cases[ci].lb);
            xd_pair a = xd_half_make(halves[h], &a32), b = xd_half_make(halves[h], &b32);
            int64_t k = cases[ci].a[cases[ci].ra - 1];
            xd_tol t = xd_half_tol(halves[h]);
            t.atol *= (double)k; /* products of values up to 2, summed k times, rounded once */
            char what[64];
            snprintf(what, sizeof what, "matmul %s case %zu", gf_dtype_name(halves[h]), ci);
            check_half(what, halves[h], gf_matmul(a.d, b.d), gf_matmul(a.r, b.r), t);
            xd_pair_release(a32);
            xd_pair_release(b32);
            xd_pair_release(a);
            xd_pair_release(b);
        }
}

/* f16 subnormals through the vector kernel's sixteen-lane widening of b's
 * rows: b's values lie below 2^-14, and the tolerance is relative. */
static void test_matmul_subnormal(void) {
    xd_seed(600);
    xd_pair a32 = xd_pair_rand(GF_F32, 2, SZ(16, 48), XV_SMALL, XL_CONTIG);
    xd_pair b0 = xd_pair_rand(GF_F32, 2, SZ(48, 32), XV_SMALL, XL_CONTIG);
    xd_pair b32 = {gf_mul_scalar(b0.d, 3e-5), gf_mul_scalar(b0.r, 3e-5)};
    xd_pair a = xd_half_make(GF_F16, &a32), b = xd_half_make(GF_F16, &b32);
    check_half("matmul f16 with subnormal operands", GF_F16, gf_matmul(a.d, b.d),
               gf_matmul(a.r, b.r), (xd_tol){2e-3, 1e-7});
    xd_pair_release(a32);
    xd_pair_release(b0);
    xd_pair_release(b32);
    xd_pair_release(a);
    xd_pair_release(b);
}

static void test_softmax(void) {
    for (int h = 0; h < 2; h++)
        for (int dim = 0; dim < 3; dim++) {
            xd_seed(700 + (uint64_t)dim + 10 * (uint64_t)h);
            int64_t len = dim == 2 ? 3000 : 9; /* 3000: a work-group a line */
            xd_pair x32 = xd_pair_rand(GF_F32, 3, SZ(4, 9, len), XV_PLAIN,
                                       dim == 1 ? XL_TRANSPOSED : XL_CONTIG);
            xd_pair x = xd_half_make(halves[h], &x32);
            xd_tol t = xd_half_tol(halves[h]);
            char what[64];
            for (int lg = 0; lg < 2; lg++) {
                snprintf(what, sizeof what, "%s %s dim %d", lg ? "log_softmax" : "softmax",
                         gf_dtype_name(halves[h]), dim);
                check_half(what, halves[h], lg ? gf_log_softmax(x.d, dim) : gf_softmax(x.d, dim),
                           lg ? gf_log_softmax(x.r, dim) : gf_softmax(x.r, dim), t);
            }
            xd_pair_release(x32);
            xd_pair_release(x);
        }
}

/* ------------------------------------------------------------ conv, pool, random */
/* Convolutions and pooling run on f32 copies (ocl_half.c): the f32 kernels'
 * result rounded once. A small direct case and one the GEMM form takes. */
static void test_conv_pool(void) {
    struct {
        int64_t x[4], w[4];
        gf_conv2d_opts o;
    } cc[] = {{{2, 3, 7, 6}, {4, 3, 3, 3}, {{1, 1}, {0, 0}, {1, 1}, 1}},
              {{3, 16, 9, 11}, {24, 8, 3, 3}, {{2, 1}, {1, 1}, {1, 2}, 2}}};
    for (int h = 0; h < 2; h++) {
        gf_dtype hd = halves[h];
        for (size_t ci = 0; ci < sizeof cc / sizeof cc[0]; ci++) {
            xd_seed(800 + ci + 10 * (uint64_t)h);
            xd_pair x32 = xd_pair_rand(GF_F32, 4, cc[ci].x, XV_SMALL, ci ? XL_TRANSPOSED : XL_CONTIG);
            xd_pair w32 = xd_pair_rand(GF_F32, 4, cc[ci].w, XV_SMALL, XL_STEP);
            xd_pair b32 = xd_pair_rand(GF_F32, 1, &cc[ci].w[0], XV_SMALL, XL_CONTIG);
            xd_pair x = xd_half_make(hd, &x32), w = xd_half_make(hd, &w32), b = xd_half_make(hd, &b32);
            int64_t taps = cc[ci].w[1] * cc[ci].w[2] * cc[ci].w[3];
            xd_tol t = xd_half_tol(hd);
            t.atol *= (double)taps; /* values up to 2, summed over the taps, rounded once */
            char what[80];
            snprintf(what, sizeof what, "conv2d %s case %zu", gf_dtype_name(hd), ci);
            gf_tensor *yr = gf_conv2d(x.r, w.r, b.r, &cc[ci].o);
            check_half(what, hd, gf_conv2d(x.d, w.d, b.d, &cc[ci].o),
                       yr ? gf_to_dtype(yr, GF_F32) : NULL, t);
            if (yr) {
                xd_pair gy32 = xd_pair_rand(GF_F32, 4, gf_tensor_sizes(yr), XV_SMALL, XL_CONTIG);
                xd_pair gy = xd_half_make(hd, &gy32);
                snprintf(what, sizeof what, "conv2d_backward_input %s case %zu", gf_dtype_name(hd),
                         ci);
                check_half(what, hd, gf_conv2d_backward_input(gy.d, w.d, cc[ci].x, &cc[ci].o),
                           gf_conv2d_backward_input(gy.r, w.r, cc[ci].x, &cc[ci].o), t);
                xd_tol tw = xd_half_tol(hd); /* summed over N and the output positions */
                tw.atol *= (double)(gf_tensor_numel(yr) / cc[ci].w[0]);
                snprintf(what, sizeof what, "conv2d_backward_weight %s case %zu",
                         gf_dtype_name(hd), ci);
                check_half(what, hd, gf_conv2d_backward_weight(gy.d, x.d, cc[ci].w, &cc[ci].o),
                           gf_conv2d_backward_weight(gy.r, x.r, cc[ci].w, &cc[ci].o), tw);
                xd_pair_release(gy32);
                xd_pair_release(gy);
            }
            gf_tensor_release(yr);
            xd_pair_release(x32);
            xd_pair_release(w32);
            xd_pair_release(b32);
            xd_pair_release(x);
            xd_pair_release(w);
            xd_pair_release(b);
        }
        /* Max pooling picks input values: bits and indices exact, and the
         * gradient scatters them back; average pooling rounds once. */
        const gf_pool2d_opts po = {{3, 3}, {2, 2}, {1, 1}, {1, 1}, true, false};
        xd_seed(900 + (uint64_t)h);
        xd_pair x32 = xd_pair_rand(GF_F32, 4, SZ(2, 3, 9, 10), XV_GENERAL, XL_OFFSET);
        xd_pair x = xd_half_make(hd, &x32);
        gf_tensor *id = NULL, *ir = NULL;
        gf_tensor *yd = gf_max_pool2d(x.d, &po, &id), *yr = gf_max_pool2d(x.r, &po, &ir);
        char what[64];
        snprintf(what, sizeof what, "max_pool2d %s values", gf_dtype_name(hd));
        same_bits(what, on_ref(yd ? gf_to_dtype(yd, hd) : NULL), yr ? gf_to_dtype(yr, hd) : NULL);
        snprintf(what, sizeof what, "max_pool2d %s indices", gf_dtype_name(hd));
        gf_tensor *ir2 = ir ? gf_to_dtype(ir, GF_I64) : NULL;
        same_bits(what, on_ref(id ? gf_to_dtype(id, GF_I64) : NULL), ir2);
        if (yr && id && ir) {
            xd_pair gy32 = xd_pair_rand(GF_F32, 4, gf_tensor_sizes(yr), XV_SMALL, XL_CONTIG);
            xd_pair gy = xd_half_make(hd, &gy32);
            snprintf(what, sizeof what, "max_pool2d_backward %s", gf_dtype_name(hd));
            /* overlapping windows add up to a few values per element */
            check_half(what, hd, gf_max_pool2d_backward(gy.d, id, x.d, &po),
                       gf_max_pool2d_backward(gy.r, ir, x.r, &po), xd_half_tol(hd));
            xd_pair_release(gy32);
            xd_pair_release(gy);
        }
        snprintf(what, sizeof what, "avg_pool2d %s", gf_dtype_name(hd));
        check_half(what, hd, gf_avg_pool2d(x.d, &po), gf_avg_pool2d(x.r, &po), xd_half_tol(hd));
        gf_tensor_release(yd);
        gf_tensor_release(yr);
        gf_tensor_release(id);
        gf_tensor_release(ir);
        xd_pair_release(x32);
        xd_pair_release(x);
    }
}

/* Layer norm and batch norm through f32 copies; batch norm's running
 * statistics, updated in place, are rounded back into their 16-bit tensors. */
static void test_norms(void) {
    for (int h = 0; h < 2; h++) {
        gf_dtype hd = halves[h];
        xd_seed(950 + (uint64_t)h);
        xd_pair x32 = xd_pair_rand(GF_F32, 4, SZ(4, 3, 5, 6), XV_PLAIN, XL_TRANSPOSED);
        xd_pair g32 = xd_pair_rand(GF_F32, 1, SZ(6), XV_POSITIVE, XL_CONTIG);
        xd_pair x = xd_half_make(hd, &x32), g = xd_half_make(hd, &g32);
        xd_tol t = xd_half_tol(hd);
        char what[64];
        snprintf(what, sizeof what, "layer_norm %s", gf_dtype_name(hd));
        check_half(what, hd, gf_layer_norm(x.d, 1, g.d, NULL, 1e-5, NULL, NULL),
                   gf_layer_norm(x.r, 1, g.r, NULL, 1e-5, NULL, NULL), t);
        /* running stats: 16-bit on the device, their f32 values on the reference */
        xd_pair m32 = xd_pair_rand(GF_F32, 1, SZ(3), XV_SMALL, XL_CONTIG);
        xd_pair v32 = xd_pair_rand(GF_F32, 1, SZ(3), XV_POSITIVE, XL_CONTIG);
        xd_pair m = xd_half_make(hd, &m32), v = xd_half_make(hd, &v32);
        snprintf(what, sizeof what, "batch_norm %s", gf_dtype_name(hd));
        check_half(what, hd, gf_batch_norm(x.d, m.d, v.d, NULL, NULL, true, 0.1, 1e-5, NULL, NULL),
                   gf_batch_norm(x.r, m.r, v.r, NULL, NULL, true, 0.1, 1e-5, NULL, NULL), t);
        snprintf(what, sizeof what, "batch_norm %s running_mean", gf_dtype_name(hd));
        check_half(what, hd, gf_to_dtype(m.d, hd), gf_to_dtype(m.r, GF_F32), t);
        snprintf(what, sizeof what, "batch_norm %s running_var", gf_dtype_name(hd));
        check_half(what, hd, gf_to_dtype(v.d, hd), gf_to_dtype(v.r, GF_F32), t);
        xd_pair_release(x32);
        xd_pair_release(g32);
        xd_pair_release(m32);
        xd_pair_release(v32);
        xd_pair_release(x);
        xd_pair_release(g);
        xd_pair_release(m);
        xd_pair_release(v);
    }
}

/* SCATTER_ADD and INDEX_ADD: each addition in f32, rounded once, through a
 * compare-and-swap on the 32-bit word holding the element. Many indices
 * collide, on an element and on both halves of one word; values are small
 * integers, whose sums every order gets exactly, so the result is bit for
 * bit the reference's. */
static void test_accumulate(void) {
    enum { ROWS = 6, COLS = 9, N = 40 };
    int64_t idx[N * COLS], idx1[N];
    for (int i = 0; i < N * COLS; i++) idx[i] = (i * 7 + i / 5) % ROWS;
    for (int i = 0; i < N; i++) idx1[i] = (i * 5) % ROWS;
    for (int h = 0; h < 2; h++) {
        gf_dtype hd = halves[h];
        xd_seed(990 + (uint64_t)h);
        /* integers -5..5: about 7 of them meet in each element, well inside
         * the integers bf16 holds exactly (256) */
        xd_pair base32 = xd_pair_rand(GF_I32, 2, SZ(ROWS, COLS), XV_SMALL, XL_CONTIG);
        xd_pair src32 = xd_pair_rand(GF_I32, 2, SZ(N, COLS), XV_SMALL, XL_TRANSPOSED);
        xd_pair base = xd_half_make(hd, &base32), src = xd_half_make(hd, &src32);
        xd_pair ix = pair_of(idx, N * COLS, GF_I64), ix1 = pair_of(idx1, N, GF_I64);
        gf_tensor *ixd = gf_reshape(ix.d, SZ(N, COLS), 2), *ixr = gf_reshape(ix.r, SZ(N, COLS), 2);
        gf_tensor *b16 = gf_to_dtype(base.r, hd), *s16 = gf_to_dtype(src.r, hd);
        char what[64];
        snprintf(what, sizeof what, "scatter_add %s", gf_dtype_name(hd));
        same_bits(what, on_ref(gf_scatter_add(base.d, 0, ixd, src.d)),
                  gf_scatter_add(b16, 0, ixr, s16));
        snprintf(what, sizeof what, "index_add %s", gf_dtype_name(hd));
        same_bits(what, on_ref(gf_index_add(base.d, 0, ix1.d, src.d)),
                  gf_index_add(b16, 0, ix1.r, s16));
        gf_tensor_release(ixd);
        gf_tensor_release(ixr);
        gf_tensor_release(b16);
        gf_tensor_release(s16);
        xd_pair_release(base32);
        xd_pair_release(src32);
        xd_pair_release(base);
        xd_pair_release(src);
        xd_pair_release(ix);
        xd_pair_release(ix1);
    }
}

/* RANDOM in 16 bits: the reference's numbers bit for bit (computed in
 * double, rounded once), for the same seed. */
static void test_random(void) {
    for (int h = 0; h < 2; h++)
        for (int kind = 0; kind < 3; kind++) {
            gf_dtype hd = halves[h];
            gf_manual_seed(4321 + (uint64_t)kind);
            gf_tensor *a = kind == 0 ? gf_rand_uniform(SZ(3, 1000), 2, -2.0, 3.0, hd, xd_dev)
                           : kind == 1 ? gf_rand_normal(SZ(3, 1000), 2, 0.5, 2.0, hd, xd_dev)
                                       : gf_bernoulli(SZ(3, 1000), 2, 0.3, hd, xd_dev);
            gf_manual_seed(4321 + (uint64_t)kind);
            gf_tensor *b = kind == 0 ? gf_rand_uniform(SZ(3, 1000), 2, -2.0, 3.0, hd, xd_ref)
                           : kind == 1 ? gf_rand_normal(SZ(3, 1000), 2, 0.5, 2.0, hd, xd_ref)
                                       : gf_bernoulli(SZ(3, 1000), 2, 0.3, hd, xd_ref);
            char what[64];
            snprintf(what, sizeof what, "%s %s", kind == 0 ? "uniform" : kind == 1 ? "normal"
                                                                                     : "bernoulli",
                     gf_dtype_name(hd));
            if (kind == 1) {
                /* Box-Muller's log and cos: the device's to the last bits of
                 * double, then one 16-bit rounding (a rare tie may differ). */
                gf_tensor *a32 = a ? gf_to_dtype(a, GF_F32) : NULL;
                gf_tensor *b32 = b ? gf_to_dtype(b, GF_F32) : NULL;
                gf_tensor_release(b);
                check_half(what, hd, a, b32, xd_half_tol(hd));
                gf_tensor_release(a32);
            } else {
                same_bits(what, on_ref(a), b);
            }
        }
}

/* A captured 16-bit step replays bit for bit as eager: the widened
 * convolution and pooling run eagerly inside the replay (their f32 copies
 * are per launch), the 16-bit kernels from the captured list. */
static void test_graph_replay(void) {
    const int64_t xs[4] = {2, 3, 8, 8}, ws[4] = {4, 3, 3, 3}, bs[1] = {4};
    const gf_conv2d_opts co = {{1, 1}, {1, 1}, {1, 1}, 1};
    const gf_pool2d_opts po = {{2, 2}, {2, 2}, {0, 0}, {1, 1}, false, false};
    for (int h = 0; h < 2; h++) {
        gf_dtype hd = halves[h];
        gf_manual_seed(55);
        gf_tensor *x = gf_rand_uniform(xs, 4, -1.0, 1.0, hd, xd_dev);
        gf_tensor *w = gf_rand_uniform(ws, 4, -0.5, 0.5, hd, xd_dev);
        gf_tensor *b = gf_rand_uniform(bs, 1, -0.5, 0.5, hd, xd_dev);
        CHECK_MSG(x && w && b, "%s", gf_last_error());
        if (!x || !w || !b) {
            gf_tensor_release(x);
            gf_tensor_release(w);
            gf_tensor_release(b);
            return;
        }
        size_t bytes = (size_t)gf_tensor_numel(x) * 2;
        uint16_t *host = malloc(bytes);
        uint16_t want[2 * 4 * 4 * 4], got[2 * 4 * 4 * 4];
        gf_tensor *y = NULL;
        gf_graph *graph = NULL;
        for (int step = 0; step < 3 && host; step++) {
            gf_tensor *fresh = gf_rand_uniform(xs, 4, -1.0, 1.0, hd, xd_dev);
            CHECK(fresh && gf_tensor_to_host(fresh, host, bytes) == GF_OK);
            gf_tensor_release(fresh);
            CHECK(gf_tensor_from_host(x, host, bytes) == GF_OK);
            gf_scope_begin();
            gf_tensor *e = gf_scope_keep(gf_sigmoid(
                gf_max_pool2d(gf_relu(gf_conv2d(x, w, b, &co)), &po, NULL)));
            gf_scope_end();
            CHECK_MSG(e && gf_tensor_to_host(e, want, sizeof want) == GF_OK, "eager: %s",
                      gf_last_error());
            gf_tensor_release(e);
            if (step == 0) {
                CHECK(gf_graph_capture_begin(xd_dev) == GF_OK);
                gf_scope_begin();
                y = gf_scope_keep(gf_sigmoid(
                    gf_max_pool2d(gf_relu(gf_conv2d(x, w, b, &co)), &po, NULL)));
                gf_scope_end();
                graph = gf_graph_capture_end();
                CHECK_MSG(graph && y, "capture: %s", gf_last_error());
                if (!graph || !y) break;
            } else {
                CHECK_MSG(gf_graph_replay(graph) == GF_OK, "replay: %s", gf_last_error());
            }
            CHECK(gf_tensor_to_host(y, got, sizeof got) == GF_OK);
            CHECK_MSG(!memcmp(got, want, sizeof got), "%s step %d: replay differs from eager",
                      gf_dtype_name(hd), step);
        }
        free(host);
        gf_tensor_release(y);
        gf_graph_destroy(graph);
        gf_tensor_release(x);
        gf_tensor_release(w);
        gf_tensor_release(b);
    }
}

int main(void) {
    int rc = xd_init();
    if (rc) return rc;
    if (!xd_stores(GF_F16) || !xd_stores(GF_BF16)) {
        printf("skipped: %s does not store f16 and bf16\n", gf_device_name(xd_dev));
        return XD_SKIP;
    }
    have_f64 = xd_stores(GF_F64);
    RUN(test_all_patterns);
    RUN(test_from_f32);
    RUN(test_from_wide);
    RUN(test_elementwise);
    RUN(test_reductions);
    RUN(test_matmul);
    RUN(test_matmul_subnormal);
    RUN(test_softmax);
    if (have_f64) RUN(test_random); /* 16-bit draws need doubles on the device */
    RUN(test_conv_pool);
    RUN(test_norms);
    RUN(test_accumulate);
    if (have_f64) RUN(test_graph_replay);
    return xd_finish();
}
