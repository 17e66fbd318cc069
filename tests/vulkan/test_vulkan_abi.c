/* SPDX-License-Identifier: BSD-3-Clause */
/* test_vulkan_abi.c — the Vulkan plugin through the ABI alone (dlopen, its
 * own host table), for what the public API cannot see:
 *   run            buffers (write/read/copy/fill with odd patterns and
 *                  offsets), sub-allocation (many small buffers, one memory
 *                  block), the maxStorageBufferRange limit (refused with a
 *                  message), batching (1,000 chained adds, few submits), and
 *                  zero validation messages through the "vulkan.stats"
 *                  extension (with the layer on when it is installed), an
 *                  FFT whose scale no pass carries (dims of length 1).
 *   no_driver      VK_DRIVER_FILES points at nothing: the plugin negotiates,
 *                  initialises, reports zero devices with the reason.
 * The plugin's file comes from GRAFT_TEST_VULKAN_PLUGIN. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi_host.h"
#include "check.h"
#include "graft_vulkan_ext.h"

static abi_plugin vk;
static const char *last_error = vk.error;
static const gfp_plugin *T;
static void *ctx;

/* Loads the plugin and initialises it (devices are opened by the cases). */
static int load(void) {
    if (abi_load_env(&vk, "GRAFT_TEST_VULKAN_PLUGIN") != 0) return 1;
    vk.echo_logs = true;
    T = vk.t;
    if (T->init(&vk.ctx) != GFP_OK) return 1;
    ctx = vk.ctx;
    return 0;
}

static void *dev;
static const graft_vulkan_stats_ext *ext;

static void test_buffers(void) {
    gfp_buffer b = NULL, c = NULL;
    void *hp = (void *)1;
    CHECK(T->buffer_alloc(dev, 1000, &b, &hp) == GFP_OK && b && hp == NULL);
    CHECK(T->buffer_alloc(dev, 1000, &c, &hp) == GFP_OK && c);
    unsigned char src[1000], dst[1000];
    for (int i = 0; i < 1000; i++) src[i] = (unsigned char)(i * 7 + 1);
    CHECK(T->buffer_write(dev, b, 0, src, 1000) == GFP_OK);
    /* An odd offset and length; the copy is recorded, the read waits. */
    CHECK(T->buffer_copy(dev, b, 3, c, 5, 501) == GFP_OK);
    memset(dst, 0, sizeof dst);
    CHECK(T->buffer_read(dev, c, 5, dst, 501) == GFP_OK);
    CHECK(memcmp(dst, src + 3, 501) == 0);
    /* Fill patterns: 4-byte aligned (vkCmdFillBuffer), 1 byte at an odd
     * offset, 8 bytes that are not one repeated word (host-built). */
    uint32_t w = 0xdeadbeef;
    CHECK(T->buffer_fill(dev, c, 8, 16, &w, 4) == GFP_OK);
    unsigned char one = 0x5a;
    CHECK(T->buffer_fill(dev, c, 1, 3, &one, 1) == GFP_OK);
    uint64_t q = 0x0102030405060708ull;
    CHECK(T->buffer_fill(dev, c, 200, 24, &q, 8) == GFP_OK);
    CHECK(T->buffer_read(dev, c, 0, dst, 232) == GFP_OK);
    for (int i = 0; i < 4; i++) CHECK(memcmp(dst + 8 + 4 * i, &w, 4) == 0);
    CHECK(dst[1] == 0x5a && dst[2] == 0x5a && dst[3] == 0x5a);
    for (int i = 0; i < 3; i++) CHECK(memcmp(dst + 200 + 8 * i, &q, 8) == 0);
    /* Out of range is an error with a message, not a write. */
    vk.error[0] = '\0';
    CHECK(T->buffer_write(dev, b, 990, src, 20) == GFP_ERR_INVALID);
    CHECK_CONTAINS(last_error, "past the end");
    T->buffer_free(dev, b);
    T->buffer_free(dev, c);
}

static void test_suballocation(void) {
    enum { N = 500 };
    gfp_buffer bufs[N];
    void *hp;
    uint64_t before = ext->memory_blocks(dev);
    int ok = 1;
    for (int i = 0; i < N; i++) ok &= T->buffer_alloc(dev, 4096 + 64 * (uint64_t)i, &bufs[i], &hp) == GFP_OK;
    CHECK(ok);
    /* About 10 MiB in 500 tensors: carved from one or two blocks, never one
     * allocation per tensor. */
    uint64_t blocks = ext->memory_blocks(dev);
    CHECK_MSG(blocks <= before + 1, "%llu memory blocks for %d buffers", (unsigned long long)blocks, N);
    /* Each holds its own bytes. */
    for (int i = 0; i < N; i += 50) {
        uint32_t v = 0xabc00000u + (uint32_t)i;
        T->buffer_write(dev, bufs[i], 4092, &v, 4);
    }
    for (int i = 0; i < N; i += 50) {
        uint32_t v = 0;
        T->buffer_read(dev, bufs[i], 4092, &v, 4);
        CHECK(v == 0xabc00000u + (uint32_t)i);
    }
    for (int i = 0; i < N; i++) T->buffer_free(dev, bufs[i]);
}

static void test_size_limit(void) {
    gfp_device_props props = {.struct_size = sizeof props};
    CHECK(T->device_props(ctx, 0, &props) == GFP_OK);
    CHECK(props.max_alloc_bytes > 0);
    gfp_buffer b = NULL;
    void *hp;
    vk.error[0] = '\0';
    CHECK(T->buffer_alloc(dev, props.max_alloc_bytes + 1, &b, &hp) == GFP_ERR_OUT_OF_MEMORY);
    CHECK(b == NULL);
    CHECK_CONTAINS(last_error, "maxStorageBufferRange");
    /* The largest allowed one works, and its last bytes are addressable. */
    CHECK(T->buffer_alloc(dev, props.max_alloc_bytes, &b, &hp) == GFP_OK);
    if (b) {
        uint32_t v = 0x12345678, r = 0;
        CHECK(T->buffer_write(dev, b, props.max_alloc_bytes - 4, &v, 4) == GFP_OK);
        CHECK(T->buffer_read(dev, b, props.max_alloc_bytes - 4, &r, 4) == GFP_OK);
        CHECK(r == v);
        T->buffer_free(dev, b);
    }
}

/* 1,000 dependent adds: y = y + x, recorded into batches; the result proves
 * the barriers order them, the counters that they were batched. */
static void test_batching(void) {
    enum { N = 1000, LEN = 256 };
    gfp_buffer xb, yb;
    void *hp;
    CHECK(T->buffer_alloc(dev, LEN * 4, &xb, &hp) == GFP_OK);
    CHECK(T->buffer_alloc(dev, LEN * 4, &yb, &hp) == GFP_OK);
    float x[LEN], y[LEN];
    for (int i = 0; i < LEN; i++) {
        x[i] = (float)(i % 7) * 0.5f;
        y[i] = 0;
    }
    T->buffer_write(dev, xb, 0, x, sizeof x);
    T->buffer_write(dev, yb, 0, y, sizeof y);
    gfp_tensor tx = abi_vec(xb, 0, GFP_F32, LEN), ty = abi_vec(yb, 0, GFP_F32, LEN);
    const gfp_tensor *in[2] = {&ty, &tx}, *out[1] = {&ty};
    T->synchronize(dev);
    uint64_t d0 = ext->dispatches(dev), s0 = ext->submits(dev);
    int ok = 1;
    for (int i = 0; i < N; i++) ok &= T->launch(dev, GFP_OP_ADD, in, 2, out, 1, NULL) == GFP_OK;
    CHECK(ok);
    CHECK(T->buffer_read(dev, yb, 0, y, sizeof y) == GFP_OK);
    for (int i = 0; i < LEN; i++) CHECK_CLOSE(y[i], (double)N * x[i], 0);
    uint64_t disp = ext->dispatches(dev) - d0, subs = ext->submits(dev) - s0;
    CHECK_MSG(disp == N, "%llu dispatches", (unsigned long long)disp);
    CHECK_MSG(subs >= 1 && subs <= N / 100, "%llu submits for %d launches",
              (unsigned long long)subs, N);
    T->buffer_free(dev, xb);
    T->buffer_free(dev, yb);
}

static void test_errors(void) {
    gfp_buffer b;
    void *hp;
    CHECK(T->buffer_alloc(dev, 64, &b, &hp) == GFP_OK);
    gfp_tensor t = abi_vec(b, 0, GFP_F32, 100); /* runs past the buffer */
    const gfp_tensor *in[1] = {&t}, *out[1] = {&t};
    vk.error[0] = '\0';
    CHECK(T->launch(dev, GFP_OP_NEG, in, 1, out, 1, NULL) == GFP_ERR_INVALID);
    CHECK_CONTAINS(last_error, "past the end");
    gfp_tensor h = abi_vec(b, 0, GFP_BF16, 4);
    in[0] = &h;
    out[0] = &h;
    CHECK(T->launch(dev, GFP_OP_NEG, in, 1, out, 1, NULL) == GFP_ERR_UNSUPPORTED);
    /* The capability answers: bf16 is not stored; exp has no integer form;
     * f64 exp is provided (glsl_dmath.glsl) on a device with shaderFloat64;
     * f16 exp (computed in f32) on a device with f16 storage. */
    gfp_op_query q = {.struct_size = sizeof q, .op = GFP_OP_EXP, .n_inputs = 1, .n_outputs = 1,
                      .input_dtypes = {GFP_BF16}, .output_dtypes = {GFP_BF16}};
    uint32_t support = 99;
    CHECK(T->query_op(dev, &q, &support) == GFP_OK && support == GFP_SUPPORT_NONE);
    q.input_dtypes[0] = q.output_dtypes[0] = GFP_I32;
    CHECK(T->query_op(dev, &q, &support) == GFP_OK && support == GFP_SUPPORT_NONE);
    q.input_dtypes[0] = q.output_dtypes[0] = GFP_F32;
    CHECK(T->query_op(dev, &q, &support) == GFP_OK && support == GFP_SUPPORT_STRIDED);
    gfp_device_props props = {.struct_size = sizeof props};
    T->device_props(ctx, 0, &props);
    q.input_dtypes[0] = q.output_dtypes[0] = GFP_F64;
    CHECK(T->query_op(dev, &q, &support) == GFP_OK &&
          support == ((props.dtypes & GFP_DTYPE_BIT(GFP_F64)) ? GFP_SUPPORT_STRIDED
                                                              : GFP_SUPPORT_NONE));
    bool f16 = (props.dtypes & GFP_DTYPE_BIT(GFP_F16)) != 0;
    q.input_dtypes[0] = q.output_dtypes[0] = GFP_F16;
    CHECK(T->query_op(dev, &q, &support) == GFP_OK &&
          support == (f16 ? GFP_SUPPORT_STRIDED : GFP_SUPPORT_NONE));
    /* f16 is declared only where there are f16 paths: not for RANDOM,
     * ARANGE, layer_norm or conv2d. */
    gfp_op_query r = {.struct_size = sizeof r, .op = GFP_OP_RANDOM, .n_inputs = 0, .n_outputs = 1,
                      .output_dtypes = {GFP_F16}};
    CHECK(T->query_op(dev, &r, &support) == GFP_OK && support == GFP_SUPPORT_NONE);
    r.op = GFP_OP_ARANGE;
    CHECK(T->query_op(dev, &r, &support) == GFP_OK && support == GFP_SUPPORT_NONE);
    gfp_op_query ln = {.struct_size = sizeof ln, .op = GFP_OP_LAYER_NORM, .n_inputs = 3,
                       .n_outputs = 3, .input_dtypes = {GFP_F16, -1, -1},
                       .output_dtypes = {GFP_F16, GFP_F16, GFP_F16}};
    CHECK(T->query_op(dev, &ln, &support) == GFP_OK && support == GFP_SUPPORT_NONE);
    gfp_op_query cv = {.struct_size = sizeof cv, .op = GFP_OP_CONV2D, .n_inputs = 3,
                       .n_outputs = 1, .input_dtypes = {GFP_F16, GFP_F16, -1},
                       .output_dtypes = {GFP_F16}};
    CHECK(T->query_op(dev, &cv, &support) == GFP_OK && support == GFP_SUPPORT_NONE);
    /* The matmul, softmax and sum of f16 are declared. */
    gfp_op_query mm = {.struct_size = sizeof mm, .op = GFP_OP_MATMUL, .n_inputs = 2, .n_outputs = 1,
                       .input_dtypes = {GFP_F16, GFP_F16}, .output_dtypes = {GFP_F16}};
    CHECK(T->query_op(dev, &mm, &support) == GFP_OK &&
          support == (f16 ? GFP_SUPPORT_STRIDED : GFP_SUPPORT_NONE));
    void *none = (void *)1;
    CHECK(T->query_extension(ctx, "vulkan.nothing", &none) == GFP_ERR_NOT_FOUND && none == NULL);
    T->buffer_free(dev, b);
}

/* FFT over dims of length 1 with a scale: no pass runs, so the scale takes
 * a step of its own (the public API never asks it: its scales are 1/n). C2C
 * gives scale x, R2C scale (x + 0i), C2R scale re(x). */
static void test_fft_scale(void) {
    gfp_buffer xb, yb;
    void *hp;
    CHECK(T->buffer_alloc(dev, 64, &xb, &hp) == GFP_OK);
    CHECK(T->buffer_alloc(dev, 64, &yb, &hp) == GFP_OK);
    float x[6] = {1, -2, 3.5f, 4, -5, 0.25f}, y[6];
    CHECK(T->buffer_write(dev, xb, 0, x, sizeof x) == GFP_OK);
    int64_t s[2] = {3, 1};
    static const int32_t dts[3][2] = {{GFP_C64, GFP_C64}, {GFP_F32, GFP_C64}, {GFP_C64, GFP_F32}};
    for (uint32_t kind = 0; kind < 3; kind++) {
        gfp_tensor tx = abi_desc(dts[kind][0], 2, s, NULL), ty = abi_desc(dts[kind][1], 2, s, NULL);
        tx.buffer = xb;
        ty.buffer = yb;
        const gfp_tensor *in[1] = {&tx}, *out[1] = {&ty};
        gfp_fft_params p = {.struct_size = sizeof p, .kind = kind, .inverse = kind == 2,
                            .n_dims = 1, .dims = {1}, .scale = 2.5};
        CHECK_MSG(T->launch(dev, GFP_OP_FFT, in, 1, out, 1, &p) == GFP_OK, "kind %u: %s",
                  (unsigned)kind, last_error);
        memset(y, 0, sizeof y);
        size_t bytes = kind == 0 ? 24 : 12 + 12 * (kind == 1);
        CHECK(T->buffer_read(dev, yb, 0, y, bytes) == GFP_OK);
        for (int i = 0; i < 3; i++) {
            double re = kind == 1 ? x[i] : x[2 * i], im = kind == 0 ? x[2 * i + 1] : 0;
            if (kind == 2) CHECK_CLOSE(y[i], 2.5 * re, 0);
            else {
                CHECK_CLOSE(y[2 * i], 2.5 * re, 0);
                CHECK_CLOSE(y[2 * i + 1], 2.5 * im, 0);
            }
        }
    }
    T->buffer_free(dev, xb);
    T->buffer_free(dev, yb);
}

static int run_main(void) {
    uint32_t n = 0;
    CHECK(T->device_count(ctx, &n) == GFP_OK);
    if (n == 0) {
        fprintf(stderr, "SKIP: no vulkan device: %s\n", last_error);
        return 77;
    }
    CHECK(T->query_extension(ctx, "vulkan.stats", (void **)&ext) == GFP_OK && ext);
    if (!ext || ext->struct_size < sizeof *ext) return CHECK_REPORT();
    const char *expect = getenv("GRAFT_TEST_EXPECT_VALIDATION");
    if (expect && !strcmp(expect, "1"))
        CHECK_MSG(ext->validation_enabled() == 1,
                  "the validation layer is installed but was not enabled");
    CHECK(T->device_open(ctx, 0, &dev) == GFP_OK && dev);
    RUN(test_buffers);
    RUN(test_suballocation);
    RUN(test_size_limit);
    RUN(test_batching);
    RUN(test_errors);
    RUN(test_fft_scale);
    T->synchronize(dev);
    T->device_close(dev);
    long msgs = ext->validation_messages();
    CHECK_MSG(msgs == 0, "%ld validation messages", msgs);
    T->shutdown(ctx);
    CHECK(vk.errors_logged == 0);
    return CHECK_REPORT();
}

/* No driver: the plugin still loads and explains why it has no device. */
static int run_no_driver(void) {
    uint32_t n = 99;
    vk.error[0] = '\0';
    CHECK(T->device_count(ctx, &n) == GFP_OK);
    CHECK(n == 0);
    CHECK(strlen(last_error) > 0);
    CHECK_CONTAINS(last_error, "driver");
    fprintf(stderr, "reason: %s\n", last_error);
    gfp_device_props props = {.struct_size = sizeof props};
    CHECK(T->device_props(ctx, 0, &props) == GFP_ERR_NOT_FOUND);
    void *d = NULL;
    CHECK(T->device_open(ctx, 0, &d) == GFP_ERR_NOT_FOUND && d == NULL);
    T->shutdown(ctx);
    return CHECK_REPORT();
}

int main(int argc, char **argv) {
    if (load()) {
        fprintf(stderr, "the vulkan plugin did not load or initialise\n");
        return 1;
    }
    if (argc > 1 && !strcmp(argv[1], "no_driver")) return run_no_driver();
    return run_main();
}
