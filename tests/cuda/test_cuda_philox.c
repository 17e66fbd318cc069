/* SPDX-License-Identifier: BSD-3-Clause */
/* test_cuda_philox.c — the CUDA RANDOM kernel's numbers are the reference's.
 *
 * The kernel computes every number with cu_philox.h, a header that is CUDA
 * C++ and host C alike. Compiled here on the host, it must give exactly the
 * reference plugin's RANDOM output, for every kind and float dtype, for
 * bernoulli into integer and bool outputs, across seeds whose high word
 * matters, across a counter that crosses 2^32, and across the 2^64 wrap.
 * Needs no GPU; with one, tests/cuda/test_cuda_xd_elementwise.c compares the
 * device's numbers too. */
#include <math.h>
#include <stdint.h>

#include "check.h"
#include "abi_host.h"
#include "cu_philox.h"

static abi_plugin ref;

/* The reference's RANDOM into a fresh 1-D tensor of n elements of dtype dt. */
static void *ref_random(uint32_t kind, int32_t dt, uint64_t seed, uint64_t offset, double a,
                        double b, int64_t n) {
    size_t es = dt == GFP_F64 || dt == GFP_I64 ? 8 : dt == GFP_BOOL ? 1 : 4;
    gfp_buffer buf;
    void *host;
    if (ref.t->buffer_alloc(ref.dev, (uint64_t)n * es, &buf, &host) != GFP_OK) return NULL;
    gfp_tensor t = abi_vec(buf, 0, dt, n);
    const gfp_tensor *outs[1] = {&t};
    gfp_random_params p = {.struct_size = sizeof p, .kind = kind, .seed = seed,
                           .offset = offset, .a = a, .b = b};
    void *result = NULL;
    if (ref.t->launch(ref.dev, GFP_OP_RANDOM, NULL, 0, outs, 1, &p) == GFP_OK) {
        result = malloc((size_t)n * es);
        memcpy(result, host, (size_t)n * es);
    } else {
        fprintf(stderr, "reference RANDOM failed: %s\n", ref.error);
    }
    ref.t->buffer_free(ref.dev, buf);
    return result;
}

static void test_streams(void) {
    static const uint64_t seeds[] = {0, 42, (1ull << 40) + 7, 0xFFFFFFFFFFFFFFFFull};
    static const uint64_t offsets[] = {0, 1000, (1ull << 32) - 100, 0xFFFFFFFFFFFFFF00ull};
    enum { N = 300 };
    for (size_t s = 0; s < 4; s++)
        for (size_t o = 0; o < 4; o++)
            for (uint32_t kind = 0; kind <= 2; kind++) {
                double a = kind == 0 ? -2.0 : kind == 1 ? 0.5 : 0.3;
                double b = kind == 0 ? 3.0 : kind == 1 ? 2.0 : 0.0;
                const int32_t dts[] = {GFP_F32, GFP_F64, GFP_I32, GFP_BOOL};
                for (int d = 0; d < (kind == 2 ? 4 : 2); d++) {
                    int32_t dt = dts[d];
                    void *r = ref_random(kind, dt, seeds[s], offsets[o], a, b, N);
                    int bad = 0;
                    for (int i = 0; r && i < N; i++) {
                        double v = cu_random_value(kind, dt == GFP_F32, seeds[s],
                                                   offsets[o] + (uint64_t)i, a, b);
                        bool ok;
                        switch (dt) {
                        case GFP_F32: {
                            float got = (float)v, want = ((float *)r)[i];
                            ok = memcmp(&got, &want, 4) == 0;
                            break;
                        }
                        case GFP_F64: ok = memcmp(&v, (double *)r + i, 8) == 0; break;
                        case GFP_I32: ok = ((int32_t *)r)[i] == (v != 0.0); break;
                        default: ok = ((uint8_t *)r)[i] == (v != 0.0); break;
                        }
                        if (!ok && bad++ < 3)
                            fprintf(stderr, "  kind %u dtype %d seed %llu offset %llu: element %d "
                                    "differs\n", (unsigned)kind, (int)dt,
                                    (unsigned long long)seeds[s], (unsigned long long)offsets[o], i);
                    }
                    CHECK_MSG(r && bad == 0, "kind %u dtype %d seed #%zu offset #%zu: %d differ",
                              (unsigned)kind, (int)dt, s, o, bad);
                    free(r);
                }
            }
}

/* Known values of Philox4x32-10 (the Random123 known-answer vectors), so the
 * shared code is right on its own and not merely equal to the reference. */
static void test_known_answers(void) {
    uint32_t c[4] = {0, 0, 0, 0};
    pk_philox4x32_10(c, 0, 0);
    CHECK(c[0] == 0x6627e8d5u && c[1] == 0xe169c58du && c[2] == 0xbc57ac4cu &&
          c[3] == 0x9b00dbd8u);
    uint32_t d[4] = {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu};
    pk_philox4x32_10(d, 0xffffffffu, 0xffffffffu);
    CHECK(d[0] == 0x408f276du && d[1] == 0x41c83b0eu && d[2] == 0xa20bc7c6u &&
          d[3] == 0x6d5451fdu);
    /* u24 and u53 stay in [0, 1). */
    CHECK(pk_u24(0xffffffffu) < 1.0 && pk_u24(0) == 0.0);
    CHECK(pk_u53(0xffffffffu, 0xffffffffu) < 1.0 && pk_u53(0, 0) == 0.0);
}

int main(void) {
    RUN(test_known_answers);
    if (abi_load_env(&ref, "GRAFT_TEST_REFERENCE_PLUGIN") != 0 || abi_open(&ref) != 0) {
        CHECK_MSG(0, "the reference plugin could not be loaded");
        return CHECK_REPORT();
    }
    RUN(test_streams);
    abi_close(&ref);
    return CHECK_REPORT();
}
