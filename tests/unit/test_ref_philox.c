/* SPDX-License-Identifier: BSD-3-Clause */
/* test_ref_philox.c — GFP_OP_RANDOM of the reference plugin against the ABI's
 * definition, through the ABI alone (the plugin is dlopen'ed, no core).
 *
 * The test carries its own Philox4x32-10, pinned by the published
 * known-answer vectors, and computes from it what every element must be.
 * Plugin path: argv[1], else $GRAFT_TEST_REFERENCE_PLUGIN; CTest runs it on
 * the cpu_onednn plugin too (its parallel kernel must give the same
 * numbers). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref_direct.h"

static const char *errtext(void) { return error_text(); }

/* A contiguous tensor of n elements in a fresh buffer, strides given. */
static gfp_tensor new_tensor(int32_t dtype, int rank, const int64_t *sizes,
                             const int64_t *strides, size_t bytes) {
    gfp_tensor t;
    memset(&t, 0, sizeof t);
    t.struct_size = sizeof t;
    t.dtype = dtype;
    t.rank = rank;
    for (int d = 0; d < rank; d++) {
        t.sizes[d] = sizes[d];
        t.strides[d] = strides[d];
    }
    void *host_ptr;
    if (P->buffer_alloc(dev, bytes, &t.buffer, &host_ptr) != GFP_OK) t.buffer = NULL;
    return t;
}

static gfp_status run_random(const gfp_tensor *y, uint32_t kind, uint64_t seed, uint64_t offset,
                             double a, double b) {
    gfp_random_params p = {.struct_size = sizeof p, .kind = kind, .seed = seed,
                           .offset = offset, .a = a, .b = b};
    const gfp_tensor *outs[1] = {y};
    last_error[0] = '\0';
    return P->launch(dev, GFP_OP_RANDOM, NULL, 0, outs, 1, &p);
}

/* ------------------------------------------------------------ the test's own Philox */
static void mulhilo32(uint32_t a, uint32_t b, uint32_t *hi, uint32_t *lo) {
    uint64_t p = (uint64_t)a * (uint64_t)b;
    *hi = (uint32_t)(p >> 32);
    *lo = (uint32_t)(p & 0xffffffffu);
}

static void philox_ref(const uint32_t key_in[2], const uint32_t ctr_in[4], uint32_t out[4]) {
    static const uint32_t mult[2] = {0xD2511F53u, 0xCD9E8D57u};
    static const uint32_t weyl[2] = {0x9E3779B9u, 0xBB67AE85u};
    uint32_t x[4] = {ctr_in[0], ctr_in[1], ctr_in[2], ctr_in[3]};
    uint32_t key[2] = {key_in[0], key_in[1]};
    for (int r = 0; r < 10; r++) {
        if (r > 0) { /* the key is bumped before every round but the first */
            key[0] = (uint32_t)(key[0] + weyl[0]);
            key[1] = (uint32_t)(key[1] + weyl[1]);
        }
        uint32_t hi0, lo0, hi1, lo1;
        mulhilo32(mult[0], x[0], &hi0, &lo0);
        mulhilo32(mult[1], x[2], &hi1, &lo1);
        uint32_t y[4] = {hi1 ^ x[1] ^ key[0], lo1, hi0 ^ x[3] ^ key[1], lo0};
        memcpy(x, y, sizeof x);
    }
    memcpy(out, x, sizeof x);
}

/* Element i of a stream, as the ABI defines it. */
static void stream_words(uint64_t seed, uint64_t offset, uint64_t i, uint32_t r[4]) {
    uint64_t c = offset + i;
    uint32_t key[2] = {(uint32_t)(seed & 0xffffffffu), (uint32_t)(seed >> 32)};
    uint32_t ctr[4] = {(uint32_t)(c & 0xffffffffu), (uint32_t)(c >> 32), 0, 0};
    philox_ref(key, ctr, r);
}

static double ab_u24(uint32_t w) { return ldexp((double)(w >> 8), -24); }
static double ab_u53(uint32_t w, uint32_t v) {
    return ldexp((double)(w >> 5) * 67108864.0 + (double)(v >> 6), -53);
}

static double expected(uint32_t kind, int32_t dtype, uint64_t seed, uint64_t offset, uint64_t i,
                       double a, double b) {
    uint32_t r[4];
    stream_words(seed, offset, i, r);
    const double pi = 3.14159265358979323846;
    int f32 = dtype == GFP_F32;
    double v;
    if (kind == GFP_RANDOM_UNIFORM) {
        v = a + (b - a) * (f32 ? ab_u24(r[0]) : ab_u53(r[0], r[1]));
    } else if (kind == GFP_RANDOM_NORMAL) {
        double u1 = 1.0 - (f32 ? ab_u24(r[0]) : ab_u53(r[0], r[1]));
        double u2 = f32 ? ab_u24(r[1]) : ab_u53(r[2], r[3]);
        v = a + b * sqrt(-2.0 * log(u1)) * cos(2.0 * pi * u2);
    } else {
        v = ab_u24(r[0]) < a ? 1.0 : 0.0;
    }
    return f32 ? (double)(float)v : v;
}

/* ------------------------------------------------------------ cases */
static void known_answers(void) {
    static const struct {
        uint32_t key[2], ctr[4], out[4];
    } kat[] = {
        {{0, 0}, {0, 0, 0, 0}, {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}},
        {{0xffffffffu, 0xffffffffu},
         {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
         {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}},
        {{0xa4093822u, 0x299f31d0u},
         {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
         {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}},
    };
    for (size_t k = 0; k < sizeof kat / sizeof kat[0]; k++) {
        uint32_t out[4];
        philox_ref(kat[k].key, kat[k].ctr, out);
        for (int j = 0; j < 4; j++)
            CHECK_MSG(out[j] == kat[k].out[j], "vector %zu word %d: %08x vs %08x", k, j, out[j],
                      kat[k].out[j]);
    }
}

/* The first known-answer vector through the plugin: seed 0, offset 0 gives
 * counter {0,0,0,0}; an f64 uniform on [0, 1) exposes r0 and r1. */
static void plugin_known_answer(void) {
    int64_t sz[1] = {1}, st[1] = {1};
    gfp_tensor y = new_tensor(GFP_F64, 1, sz, st, 8);
    CHECK(run_random(&y, GFP_RANDOM_UNIFORM, 0, 0, 0.0, 1.0) == GFP_OK);
    double v = -1;
    P->buffer_read(dev, y.buffer, 0, &v, 8);
    double want = ((double)(0x6627e8d5u >> 5) * 67108864.0 + (double)(0xe169c58du >> 6)) * 0x1p-53;
    CHECK(v == want);
    P->buffer_free(dev, y.buffer);
}

/* A bernoulli draw stored in bf16 or f16: 0 or 1 (NaN for any other bits). */
static double half01(int32_t dt, uint16_t bits) {
    if (bits == 0) return 0.0;
    return bits == (dt == GFP_BF16 ? 0x3F80 : 0x3C00) ? 1.0 : NAN;
}

/* Every kind and dtype, with a seed using both key words and offsets that
 * carry into the counter's high word and wrap around 2^64; n elements (a
 * long stream crosses the chunks a parallel kernel splits it into). */
static void streams_of(int64_t n) {
    static const struct {
        uint32_t kind;
        int32_t dtype;
        double a, b;
    } cases[] = {
        {GFP_RANDOM_UNIFORM, GFP_F32, -2.0, 3.0},  {GFP_RANDOM_UNIFORM, GFP_F64, -2.0, 3.0},
        {GFP_RANDOM_NORMAL, GFP_F32, 1.5, 0.25},   {GFP_RANDOM_NORMAL, GFP_F64, 1.5, 0.25},
        {GFP_RANDOM_BERNOULLI, GFP_F32, 0.3, 0},   {GFP_RANDOM_BERNOULLI, GFP_F64, 0.7, 0},
        {GFP_RANDOM_BERNOULLI, GFP_I32, 0.3, 0},   {GFP_RANDOM_BERNOULLI, GFP_I64, 0.5, 0},
        {GFP_RANDOM_BERNOULLI, GFP_BOOL, 0.5, 0},  {GFP_RANDOM_BERNOULLI, GFP_BF16, 0.4, 0},
        {GFP_RANDOM_BERNOULLI, GFP_F16, 0.6, 0},
    };
    static const uint64_t seeds[] = {0, 42, 0x0123456789abcdefull};
    static const uint64_t offsets[] = {0, 0xfffffffdull, UINT64_MAX - 2};
    int64_t N = n;
    unsigned char *raw = malloc((size_t)N * 8);
    if (!raw) {
        CHECK(0);
        return;
    }
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (size_t s = 0; s < 3; s++)
            for (size_t o = 0; o < 3; o++) {
                int32_t dt = cases[c].dtype;
                size_t es = dt == GFP_F64 || dt == GFP_I64 ? 8
                            : dt == GFP_BOOL                   ? 1
                            : dt == GFP_BF16 || dt == GFP_F16  ? 2
                                                               : 4;
                int64_t sz[1] = {N}, st[1] = {1};
                gfp_tensor y = new_tensor(dt, 1, sz, st, (size_t)N * es);
                CHECK(run_random(&y, cases[c].kind, seeds[s], offsets[o], cases[c].a,
                                 cases[c].b) == GFP_OK);
                P->buffer_read(dev, y.buffer, 0, raw, (uint64_t)N * es);
                int bad = 0;
                for (int64_t i = 0; i < N && bad < 5; i++) {
                    double got;
                    if (dt == GFP_F32) got = ((float *)raw)[i];
                    else if (dt == GFP_F64) got = ((double *)raw)[i];
                    else if (dt == GFP_I32) got = ((int32_t *)raw)[i];
                    else if (dt == GFP_I64) got = (double)((int64_t *)raw)[i];
                    else if (dt == GFP_BF16 || dt == GFP_F16) got = half01(dt, ((uint16_t *)raw)[i]);
                    else got = raw[i];
                    double want = expected(cases[c].kind, dt, seeds[s], offsets[o], (uint64_t)i,
                                           cases[c].a, cases[c].b);
                    /* normal goes through log/cos: allow the last bit of libm */
                    double tol = cases[c].kind == GFP_RANDOM_NORMAL ? 1e-15 : 0.0;
                    bool ok = check_close_(got, want, tol, tol);
                    bad += !ok;
                    CHECK_MSG(ok, "case %zu seed %zu offset %zu element %lld: %.17g vs %.17g", c,
                              s, o, (long long)i, got, want);
                }
                P->buffer_free(dev, y.buffer);
            }
    free(raw);
}

static void streams_match(void) { streams_of(7); }
/* Not a multiple of any vector length or chunk. */
static void long_streams_match(void) { streams_of(3 * 4096 + 1001); }

/* Element i is the i-th in row-major order of the shape, whatever the
 * strides: a [2, 3] output stored transposed. */
static void strided_output(void) {
    int64_t sz[2] = {2, 3}, st[2] = {1, 2};
    gfp_tensor y = new_tensor(GFP_F64, 2, sz, st, 6 * 8);
    CHECK(run_random(&y, GFP_RANDOM_UNIFORM, 7, 100, 0.0, 1.0) == GFP_OK);
    double raw[6];
    P->buffer_read(dev, y.buffer, 0, raw, sizeof raw);
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            CHECK(raw[i + 2 * j] ==
                  expected(GFP_RANDOM_UNIFORM, GFP_F64, 7, 100, (uint64_t)(i * 3 + j), 0.0, 1.0));
    P->buffer_free(dev, y.buffer);
}

/* Bernoulli at the edges of its comparison u < p: p equal to some
 * element's u exactly (that element draws 0), the next double above it (1)
 * and below it, p 0 and 1, p below 2^-24 and within 2^-30 of 1, and a NaN
 * p (nothing is below it); a length that ends in a partial vector. */
static void bernoulli_thresholds(void) {
    enum { N = 37 };
    static const int32_t dtypes[] = {GFP_F32, GFP_F64, GFP_BOOL, GFP_BF16, GFP_F16};
    int64_t sz[1] = {N}, st[1] = {1};
    uint32_t r[4];
    stream_words(11, 5, 9, r); /* element 9 of seed 11, offset 5 */
    double u9 = ab_u24(r[0]);
    const double ps[] = {u9, nextafter(u9, 2.0), nextafter(u9, -1.0), 0.0, 1.0, 0x1p-26,
                         1.0 - 0x1p-30, 0x1p-24, NAN};
    for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0]; d++) {
        int32_t dt = dtypes[d];
        size_t es = dt == GFP_F64 ? 8 : dt == GFP_BOOL ? 1 : dt == GFP_F32 ? 4 : 2;
        gfp_tensor y = new_tensor(dt, 1, sz, st, N * es);
        for (size_t k = 0; k < sizeof ps / sizeof ps[0]; k++) {
            unsigned char raw[N * 8];
            CHECK(run_random(&y, GFP_RANDOM_BERNOULLI, 11, 5, ps[k], 0) == GFP_OK);
            P->buffer_read(dev, y.buffer, 0, raw, (uint64_t)N * es);
            for (int i = 0; i < N; i++) {
                double got = dt == GFP_F32   ? ((float *)(void *)raw)[i]
                             : dt == GFP_F64 ? ((double *)(void *)raw)[i]
                             : dt == GFP_BOOL ? raw[i]
                                              : half01(dt, ((uint16_t *)(void *)raw)[i]);
                double want = expected(GFP_RANDOM_BERNOULLI, dt, 11, 5, (uint64_t)i, ps[k], 0);
                CHECK_MSG(got == want, "dtype %d p %.17g element %d: %g, want %g", dt, ps[k], i,
                          got, want);
            }
        }
        P->buffer_free(dev, y.buffer);
    }
    CHECK(expected(GFP_RANDOM_BERNOULLI, GFP_F32, 11, 5, 9, u9, 0) == 0.0);
    CHECK(expected(GFP_RANDOM_BERNOULLI, GFP_F32, 11, 5, 9, nextafter(u9, 2.0), 0) == 1.0);
}

/* Sample moments: the formulas produce the distributions they claim. */
static void distributions(void) {
    enum { N = 20000 };
    int64_t sz[1] = {N}, st[1] = {1};
    gfp_tensor y = new_tensor(GFP_F64, 1, sz, st, N * 8);
    double *v = malloc(N * sizeof *v);
    double sum = 0, sq = 0, lo = 1e9, hi = -1e9;

    CHECK(run_random(&y, GFP_RANDOM_UNIFORM, 1, 0, 0.0, 1.0) == GFP_OK);
    P->buffer_read(dev, y.buffer, 0, v, N * 8);
    for (int i = 0; i < N; i++) {
        sum += v[i];
        lo = v[i] < lo ? v[i] : lo;
        hi = v[i] > hi ? v[i] : hi;
    }
    CHECK(fabs(sum / N - 0.5) < 0.01); /* sd of the mean ~ 0.002 */
    CHECK(lo >= 0.0 && hi < 1.0);

    CHECK(run_random(&y, GFP_RANDOM_NORMAL, 2, 0, 3.0, 2.0) == GFP_OK);
    P->buffer_read(dev, y.buffer, 0, v, N * 8);
    sum = sq = 0;
    for (int i = 0; i < N; i++) sum += v[i];
    double mean = sum / N;
    for (int i = 0; i < N; i++) sq += (v[i] - mean) * (v[i] - mean);
    CHECK(fabs(mean - 3.0) < 0.1);               /* sd of the mean ~ 0.014 */
    CHECK(fabs(sqrt(sq / (N - 1)) - 2.0) < 0.1); /* sd of the sd ~ 0.01 */

    CHECK(run_random(&y, GFP_RANDOM_BERNOULLI, 3, 0, 0.25, 0) == GFP_OK);
    P->buffer_read(dev, y.buffer, 0, v, N * 8);
    sum = 0;
    int binary = 1;
    for (int i = 0; i < N; i++) {
        sum += v[i];
        binary &= v[i] == 0.0 || v[i] == 1.0;
    }
    CHECK(binary);
    CHECK(fabs(sum / N - 0.25) < 0.02);
    free(v);
    P->buffer_free(dev, y.buffer);
}

static void errors(void) {
    int64_t sz[1] = {4}, st[1] = {1};
    gfp_tensor yi = new_tensor(GFP_I32, 1, sz, st, 16);
    CHECK(run_random(&yi, GFP_RANDOM_UNIFORM, 0, 0, 0, 1) == GFP_ERR_UNSUPPORTED);
    CHECK_CONTAINS(errtext(), "uniform");
    CHECK(run_random(&yi, 7, 0, 0, 0, 1) == GFP_ERR_INVALID);
    CHECK_CONTAINS(errtext(), "kind 7");

    const gfp_tensor *outs[1] = {&yi};
    last_error[0] = '\0';
    CHECK(P->launch(dev, GFP_OP_RANDOM, NULL, 0, outs, 1, NULL) == GFP_ERR_INVALID);
    CHECK_CONTAINS(errtext(), "random");
    gfp_random_params small = {.struct_size = 8};
    CHECK(P->launch(dev, GFP_OP_RANDOM, NULL, 0, outs, 1, &small) == GFP_ERR_INVALID);
    CHECK_CONTAINS(errtext(), "struct_size");
    gfp_random_params p = {.struct_size = sizeof p, .kind = GFP_RANDOM_BERNOULLI, .a = 0.5};
    CHECK(P->launch(dev, GFP_OP_RANDOM, NULL, 0, outs, 0, &p) == GFP_ERR_INVALID);

    /* Capability: any stored dtype (bernoulli), never with inputs. */
    gfp_op_query q = {.struct_size = sizeof q, .op = GFP_OP_RANDOM, .layout = GFP_LAYOUT_STRIDED,
                      .n_inputs = 0, .n_outputs = 1, .output_dtypes = {GFP_F32}};
    uint32_t support = 99;
    CHECK(P->query_op(dev, &q, &support) == GFP_OK && support == GFP_SUPPORT_STRIDED);
    q.output_dtypes[0] = GFP_F16; /* a compute dtype since 1.3: drawn as f32, rounded */
    CHECK(P->query_op(dev, &q, &support) == GFP_OK && support == GFP_SUPPORT_STRIDED);
    q.output_dtypes[0] = GFP_F64;
    q.n_inputs = 1;
    CHECK(P->query_op(dev, &q, &support) == GFP_OK && support == GFP_SUPPORT_NONE);
    P->buffer_free(dev, yi.buffer);
}

int main(int argc, char **argv) {
    RUN(known_answers);
    if (!rd_open(argc, argv)) {
        CHECK(0);
        return CHECK_REPORT();
    }
    RUN(plugin_known_answer);
    RUN(streams_match);
    RUN(long_streams_match);
    RUN(strided_output);
    RUN(bernoulli_thresholds);
    RUN(distributions);
    RUN(errors);
    rd_close();
    return CHECK_REPORT();
}
