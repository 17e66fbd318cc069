/* SPDX-License-Identifier: BSD-3-Clause */
/* test_abi_layout.c — freezes the v1 plugin ABI (abi/graft_plugin.h): 1.0 to 1.3.
 *
 * A plugin built against v1.0 keeps working only while every offset, size,
 * field type, slot signature and enum value it was compiled with stays put.
 * Every number below is written out by hand for x86-64 LP64: a change to the
 * header that would break an old plugin makes this test fail. Appending a
 * field bumps GFP_ABI_MINOR and leaves every *_SIZE_V1_0 and offset unchanged,
 * so it passes. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "graft.h"
#include "graft_plugin.h"

/* 1 when EXPR has exactly type T (after lvalue conversion: arrays decay). */
#define HAS_TYPE(expr, T) _Generic((expr), T: 1, default: 0)
#define FIELD(type, f) (((type *)0)->f)

/* offset, sizeof and type of one field */
#define CHECK_FIELD(type, f, off, size, T)                                              \
    do {                                                                                \
        CHECK_MSG(offsetof(type, f) == (off), #type "." #f " offset %zu, frozen at %d", \
                  offsetof(type, f), (int)(off));                                       \
        CHECK_MSG(sizeof(FIELD(type, f)) == (size), #type "." #f " size %zu, frozen at %d", \
                  sizeof(FIELD(type, f)), (int)(size));                                 \
        CHECK_MSG(HAS_TYPE(FIELD(type, f), T), #type "." #f " changed type, frozen as " #T); \
    } while (0)

static void test_version_and_entry(void) {
    CHECK(GFP_ABI_MAJOR == 1);
    CHECK(strcmp(GFP_ENTRY_SYMBOL, "graft_plugin_negotiate") == 0);
    CHECK(GFP_MAX_RANK == 8);
    CHECK(GF_MAX_RANK == GFP_MAX_RANK);
    /* The entry's signature. */
    CHECK(HAS_TYPE((gfp_negotiate_fn)0,
                   gfp_status (*)(const gfp_negotiate_request *, const gfp_plugin **)));
}

static void test_status_values(void) {
    CHECK(GFP_OK == 0);
    CHECK(GFP_ERR_INVALID == -1);
    CHECK(GFP_ERR_OUT_OF_MEMORY == -2);
    CHECK(GFP_ERR_UNSUPPORTED == -3);
    CHECK(GFP_ERR_NOT_FOUND == -4);
    CHECK(GFP_ERR_DEVICE == -5);
    CHECK(GFP_ERR_VERSION == -6);
    CHECK(GFP_ERR_INTERNAL == -7);
    CHECK(sizeof(gfp_status) == 4);
}

static void test_dtype_values(void) {
    CHECK(GFP_F32 == 0);
    CHECK(GFP_F64 == 1);
    CHECK(GFP_I32 == 2);
    CHECK(GFP_I64 == 3);
    CHECK(GFP_BOOL == 4);
    CHECK(GFP_F16 == 5);
    CHECK(GFP_BF16 == 6);
    CHECK(GFP_C64 == 7);
    CHECK(GFP_C128 == 8);
    CHECK(GFP_DTYPE_COUNT == 9);
    CHECK(GFP_DTYPE_BIT(GFP_F32) == 0x1u);
    CHECK(GFP_DTYPE_BIT(GFP_BOOL) == 0x10u);
    CHECK(GFP_DTYPE_BIT(GFP_BF16) == 0x40u);
    /* The public dtypes promise the same numbers. */
    CHECK((int)GF_F32 == (int)GFP_F32);
    CHECK((int)GF_F64 == (int)GFP_F64);
    CHECK((int)GF_I32 == (int)GFP_I32);
    CHECK((int)GF_I64 == (int)GFP_I64);
    CHECK((int)GF_BOOL == (int)GFP_BOOL);
    CHECK((int)GF_F16 == (int)GFP_F16);
    CHECK((int)GF_BF16 == (int)GFP_BF16);
    CHECK((int)GF_C64 == (int)GFP_C64);
    CHECK((int)GF_C128 == (int)GFP_C128);
}

static void test_other_constants(void) {
    CHECK(GFP_LOG_ERROR == 0);
    CHECK(GFP_LOG_WARN == 1);
    CHECK(GFP_LOG_INFO == 2);
    CHECK(GFP_LOG_DEBUG == 3);
    CHECK(GFP_DEVICE_FLAG_HOST_ADDRESSABLE == 0x1u);
    CHECK(GFP_DEVICE_FLAG_THREAD_SAFE == 0x2u);
    CHECK(GFP_LAYOUT_CONTIGUOUS == 0u);
    CHECK(GFP_LAYOUT_STRIDED == 1u);
    CHECK(GFP_SUPPORT_NONE == 0u);
    CHECK(GFP_SUPPORT_CONTIGUOUS == 1u);
    CHECK(GFP_SUPPORT_STRIDED == 3u);
    CHECK(GFP_RANDOM_UNIFORM == 0);
    CHECK(GFP_RANDOM_NORMAL == 1);
    CHECK(GFP_RANDOM_BERNOULLI == 2);
}

/* The op table, frozen. A retired op keeps its number forever. */
static void test_op_ids(void) {
    static const struct {
        int value, frozen;
        const char *name;
    } ops[] = {
#define OP(id, n) {GFP_OP_##id, n, #id}
        OP(COPY, 1), OP(FILL, 2), OP(ARANGE, 3), OP(RANDOM, 4), OP(TRIL, 5), OP(TRIU, 6),
        OP(NEG, 20), OP(ABS, 21), OP(SIGN, 22), OP(EXP, 23), OP(LOG, 24), OP(LOG1P, 25),
        OP(EXPM1, 26), OP(SQRT, 27), OP(RSQRT, 28), OP(RECIPROCAL, 29), OP(SQUARE, 30),
        OP(SIN, 31), OP(COS, 32), OP(TANH, 33), OP(SIGMOID, 34), OP(RELU, 35),
        OP(LEAKY_RELU, 36), OP(ELU, 37), OP(GELU, 38), OP(GELU_TANH, 39), OP(SILU, 40),
        OP(SOFTPLUS, 41), OP(ERF, 42), OP(FLOOR, 43), OP(CEIL, 44), OP(ROUND, 45),
        OP(CLAMP, 46), OP(POW_SCALAR, 47), OP(LOGICAL_NOT, 48),
        OP(ADD, 60), OP(SUB, 61), OP(MUL, 62), OP(DIV, 63), OP(POW, 64), OP(MAXIMUM, 65),
        OP(MINIMUM, 66), OP(EQ, 67), OP(NE, 68), OP(LT, 69), OP(LE, 70), OP(GT, 71),
        OP(GE, 72), OP(LOGICAL_AND, 73), OP(LOGICAL_OR, 74), OP(WHERE, 75),
        OP(SUM, 100), OP(MEAN, 101), OP(PROD, 102), OP(AMAX, 103), OP(AMIN, 104),
        OP(VAR, 105), OP(LOGSUMEXP, 106), OP(MAX_DIM, 107), OP(MIN_DIM, 108),
        OP(MATMUL, 120), OP(SOFTMAX, 121), OP(LOG_SOFTMAX, 122), OP(LAYER_NORM, 123),
        OP(BATCH_NORM, 124),
        OP(INDEX_SELECT, 140), OP(GATHER, 141), OP(SCATTER_ADD, 142), OP(INDEX_ADD, 143),
        OP(CONV2D, 160), OP(CONV2D_BACKWARD_INPUT, 161), OP(CONV2D_BACKWARD_WEIGHT, 162),
        OP(MAX_POOL2D, 163), OP(MAX_POOL2D_BACKWARD, 164), OP(AVG_POOL2D, 165),
        OP(AVG_POOL2D_BACKWARD, 166),
        /* 1.2 */
        OP(HARDSWISH, 49), OP(ASIN, 50), OP(ACOS, 51), OP(ATAN, 52), OP(ATAN2, 76),
        OP(BATCH_NORM_BACKWARD, 125),
        /* 1.3 */
        OP(ADAM_UPDATE, 167), OP(FFT, 168), OP(LAYER_NORM_BACKWARD, 126),
        OP(SOFTMAX_BACKWARD, 127), OP(LOG_SOFTMAX_BACKWARD, 128), OP(RELU_BACKWARD, 77),
        OP(GELU_BACKWARD, 78), OP(LSTM_CELL_BACKWARD, 169), OP(LSTM_CELL, 170),
#undef OP
    };
    size_t n = sizeof ops / sizeof ops[0];
    for (size_t i = 0; i < n; i++) {
        CHECK_MSG(ops[i].value == ops[i].frozen, "GFP_OP_%s is %d, frozen at %d", ops[i].name,
                  ops[i].value, ops[i].frozen);
        for (size_t j = 0; j < i; j++)
            CHECK_MSG(ops[i].value != ops[j].value, "GFP_OP_%s reuses the number of GFP_OP_%s",
                      ops[i].name, ops[j].name);
    }
}

static void test_host_layout(void) {
    CHECK(GFP_HOST_SIZE_V1_0 == 40);
    CHECK_FIELD(gfp_host, struct_size, 0, 4, uint32_t);
    CHECK_FIELD(gfp_host, abi_major, 4, 4, uint32_t);
    CHECK_FIELD(gfp_host, abi_minor, 8, 4, uint32_t);
    CHECK_FIELD(gfp_host, reserved0, 12, 4, uint32_t);
    CHECK_FIELD(gfp_host, host_ctx, 16, 8, void *);
    CHECK_FIELD(gfp_host, set_error, 24, 8, void (*)(void *, const char *));
    CHECK_FIELD(gfp_host, log, 32, 8, void (*)(void *, gfp_log_level, const char *));
}

static void test_tensor_layout(void) {
    CHECK(GFP_TENSOR_SIZE_V1_0 == 160);
    CHECK_FIELD(gfp_tensor, struct_size, 0, 4, uint32_t);
    CHECK_FIELD(gfp_tensor, dtype, 4, 4, int32_t);
    CHECK_FIELD(gfp_tensor, buffer, 8, 8, gfp_buffer);
    CHECK_FIELD(gfp_tensor, offset, 16, 8, uint64_t);
    CHECK_FIELD(gfp_tensor, rank, 24, 4, int32_t);
    CHECK_FIELD(gfp_tensor, reserved0, 28, 4, int32_t);
    CHECK_FIELD(gfp_tensor, sizes, 32, 64, int64_t *);
    CHECK_FIELD(gfp_tensor, strides, 96, 64, int64_t *);
    CHECK(HAS_TYPE((gfp_buffer)0, void *));
}

static void test_device_props_layout(void) {
    CHECK(GFP_DEVICE_PROPS_SIZE_V1_0 == 320);
    CHECK_FIELD(gfp_device_props, struct_size, 0, 4, uint32_t);
    CHECK_FIELD(gfp_device_props, flags, 4, 4, uint32_t);
    CHECK_FIELD(gfp_device_props, name, 8, 128, char *);
    CHECK_FIELD(gfp_device_props, type, 136, 32, char *);
    CHECK_FIELD(gfp_device_props, memory_bytes, 168, 8, uint64_t);
    CHECK_FIELD(gfp_device_props, dtypes, 176, 4, uint32_t);
    CHECK_FIELD(gfp_device_props, max_rank, 180, 4, uint32_t);
    CHECK_FIELD(gfp_device_props, max_alloc_bytes, 184, 8, uint64_t);
    CHECK_FIELD(gfp_device_props, driver, 192, 128, char *);
}

static void test_params_layout(void) {
    CHECK(GFP_SCALAR_PARAMS_SIZE_V1_0 == 24);
    CHECK_FIELD(gfp_scalar_params, struct_size, 0, 4, uint32_t);
    CHECK_FIELD(gfp_scalar_params, reserved0, 4, 4, uint32_t);
    CHECK_FIELD(gfp_scalar_params, a, 8, 8, double);
    CHECK_FIELD(gfp_scalar_params, b, 16, 8, double);

    CHECK(GFP_FILL_PARAMS_SIZE_V1_0 == 24);
    CHECK_FIELD(gfp_fill_params, struct_size, 0, 4, uint32_t);
    CHECK_FIELD(gfp_fill_params, reserved0, 4, 4, uint32_t);
    CHECK_FIELD(gfp_fill_params, value, 8, 8, double);
    CHECK_FIELD(gfp_fill_params, ivalue, 16, 8, int64_t);

    CHECK(GFP_ARANGE_PARAMS_SIZE_V1_0 == 24);
    CHECK_FIELD(gfp_arange_params, struct_size, 0, 4, uint32_t);
    CHECK_FIELD(gfp_arange_params, reserved0, 4, 4, uint32_t);
    CHECK_FIELD(gfp_arange_params, start, 8, 8, double);
    CHECK_FIELD(gfp_arange_params, step, 16, 8, double);

    CHECK(GFP_CLAMP_PARAMS_SIZE_V1_0 == 32);
    CHECK_FIELD(gfp_clamp_params, struct_size, 0, 4, uint32_t);
    CHECK_FIELD(gfp_clamp_params, has_min, 4, 4, uint32_t);
    CHECK_FIELD(gfp_clamp_params, has_max, 8, 4, uint32_t);
    CHECK_FIELD(gfp_clamp_params, reserved0, 12, 4, uint32_t);
    CHECK_FIELD(gfp_clamp_params, min, 16, 8, double);
    CHECK_FIELD(gfp_clamp_params, max, 24, 8, double);

    CHECK(GFP_TRI_PARAMS_SIZE_V1_0 == 16);
    CHECK_FIELD(gfp_tri_params, struct_size, 0, 4, uint32_t);
    CHECK_FIELD(gfp_tri_params, reserved0, 4, 4, uint32_t);
    CHECK_FIELD(gfp_tri_params, diagonal, 8, 8, int64_t);

    CHECK(GFP_REDUCE_PARAMS_SIZE_V1_0 == 16);
    CHECK_FIELD(gfp_reduce_params, struct_size, 0, 4, uint32_t);
    CHECK_FIELD(gfp_reduce_params, dims, 4, 4, uint32_t);
    CHECK_FIELD(gfp_reduce_params, correction, 8, 8, double);

    CHECK(GFP_DIM_PARAMS_SIZE_V1_0 == 8);
    CHECK_FIELD(gfp_dim_params, struct_size, 0, 4, uint32_t);
    CHECK_FIELD(gfp_dim_params, dim, 4, 4, int32_t);

    CHECK(GFP_LAYER_NORM_PARAMS_SIZE_V1_0 == 16);
    CHECK_FIELD(gfp_layer_norm_params, struct_size, 0, 4, uint32_t);
    CHECK_FIELD(gfp_layer_norm_params, normalized_rank, 4, 4, int32_t);
    CHECK_FIELD(gfp_layer_norm_params, eps, 8, 8, double);

    CHECK(GFP_BATCH_NORM_PARAMS_SIZE_V1_0 == 24);
    CHECK_FIELD(gfp_batch_norm_params, struct_size, 0, 4, uint32_t);
    CHECK_FIELD(gfp_batch_norm_params, training, 4, 4, uint32_t);
    CHECK_FIELD(gfp_batch_norm_params, momentum, 8, 8, double);
    CHECK_FIELD(gfp_batch_norm_params, eps, 16, 8, double);

    CHECK(GFP_CONV2D_PARAMS_SIZE_V1_0 == 32);
    CHECK_FIELD(gfp_conv2d_params, struct_size, 0, 4, uint32_t);
    CHECK_FIELD(gfp_conv2d_params, groups, 4, 4, int32_t);
    CHECK_FIELD(gfp_conv2d_params, stride, 8, 8, int32_t *);
    CHECK_FIELD(gfp_conv2d_params, padding, 16, 8, int32_t *);
    CHECK_FIELD(gfp_conv2d_params, dilation, 24, 8, int32_t *);

    CHECK(GFP_POOL2D_PARAMS_SIZE_V1_0 == 44);
    CHECK_FIELD(gfp_pool2d_params, struct_size, 0, 4, uint32_t);
    CHECK_FIELD(gfp_pool2d_params, kernel, 4, 8, int32_t *);
    CHECK_FIELD(gfp_pool2d_params, stride, 12, 8, int32_t *);
    CHECK_FIELD(gfp_pool2d_params, padding, 20, 8, int32_t *);
    CHECK_FIELD(gfp_pool2d_params, dilation, 28, 8, int32_t *);
    CHECK_FIELD(gfp_pool2d_params, ceil_mode, 36, 4, uint32_t);
    CHECK_FIELD(gfp_pool2d_params, count_include_pad, 40, 4, uint32_t);

    CHECK(GFP_RANDOM_PARAMS_SIZE_V1_0 == 40);
    CHECK_FIELD(gfp_random_params, struct_size, 0, 4, uint32_t);
    CHECK_FIELD(gfp_random_params, kind, 4, 4, uint32_t);
    CHECK_FIELD(gfp_random_params, seed, 8, 8, uint64_t);
    CHECK_FIELD(gfp_random_params, offset, 16, 8, uint64_t);
    CHECK_FIELD(gfp_random_params, a, 24, 8, double);
    CHECK_FIELD(gfp_random_params, b, 32, 8, double);

    /* 1.3 */
    CHECK(GFP_ADAM_PARAMS_SIZE_V1_3 == 64);
    CHECK(sizeof(gfp_adam_params) == 64);
    CHECK_FIELD(gfp_adam_params, struct_size, 0, 4, uint32_t);
    CHECK_FIELD(gfp_adam_params, flags, 4, 4, uint32_t);
    CHECK_FIELD(gfp_adam_params, lr, 8, 8, double);
    CHECK_FIELD(gfp_adam_params, beta1, 16, 8, double);
    CHECK_FIELD(gfp_adam_params, beta2, 24, 8, double);
    CHECK_FIELD(gfp_adam_params, eps, 32, 8, double);
    CHECK_FIELD(gfp_adam_params, weight_decay, 40, 8, double);
    CHECK_FIELD(gfp_adam_params, bias_correction1, 48, 8, double);
    CHECK_FIELD(gfp_adam_params, bias_correction2_sqrt, 56, 8, double);
    CHECK(GFP_ADAM_DECOUPLED_WEIGHT_DECAY == 0x1u);

    CHECK(GFP_FFT_PARAMS_SIZE_V1_3 == 56);
    CHECK(sizeof(gfp_fft_params) == 56);
    CHECK_FIELD(gfp_fft_params, struct_size, 0, 4, uint32_t);
    CHECK_FIELD(gfp_fft_params, kind, 4, 4, uint32_t);
    CHECK_FIELD(gfp_fft_params, inverse, 8, 4, uint32_t);
    CHECK_FIELD(gfp_fft_params, n_dims, 12, 4, uint32_t);
    CHECK_FIELD(gfp_fft_params, dims, 16, 32, int32_t *);
    CHECK_FIELD(gfp_fft_params, scale, 48, 8, double);
    CHECK(GFP_FFT_C2C == 0 && GFP_FFT_R2C == 1 && GFP_FFT_C2R == 2);
}

static void test_op_query_layout(void) {
    CHECK(GFP_OP_QUERY_SIZE_V1_0 == 68);
    CHECK_FIELD(gfp_op_query, struct_size, 0, 4, uint32_t);
    CHECK_FIELD(gfp_op_query, op, 4, 4, uint32_t);
    CHECK_FIELD(gfp_op_query, layout, 8, 4, uint32_t);
    CHECK_FIELD(gfp_op_query, n_inputs, 12, 4, uint32_t);
    CHECK_FIELD(gfp_op_query, n_outputs, 16, 4, uint32_t);
    CHECK_FIELD(gfp_op_query, input_dtypes, 20, 32, int32_t *);
    CHECK_FIELD(gfp_op_query, output_dtypes, 52, 16, int32_t *);
}

static void test_plugin_table_layout(void) {
    CHECK(GFP_PLUGIN_SIZE_V1_0 == 160);
    CHECK_FIELD(gfp_plugin, struct_size, 0, 4, uint32_t);
    CHECK_FIELD(gfp_plugin, abi_major, 4, 4, uint32_t);
    CHECK_FIELD(gfp_plugin, abi_minor, 8, 4, uint32_t);
    CHECK_FIELD(gfp_plugin, reserved0, 12, 4, uint32_t);
    CHECK_FIELD(gfp_plugin, name, 16, 8, const char *);
    CHECK_FIELD(gfp_plugin, version, 24, 8, const char *);
    CHECK_FIELD(gfp_plugin, init, 32, 8, gfp_status (*)(void **));
    CHECK_FIELD(gfp_plugin, shutdown, 40, 8, void (*)(void *));
    CHECK_FIELD(gfp_plugin, device_count, 48, 8, gfp_status (*)(void *, uint32_t *));
    CHECK_FIELD(gfp_plugin, device_props, 56, 8,
                gfp_status (*)(void *, uint32_t, gfp_device_props *));
    CHECK_FIELD(gfp_plugin, device_open, 64, 8, gfp_status (*)(void *, uint32_t, void **));
    CHECK_FIELD(gfp_plugin, device_close, 72, 8, void (*)(void *));
    CHECK_FIELD(gfp_plugin, buffer_alloc, 80, 8,
                gfp_status (*)(void *, uint64_t, gfp_buffer *, void **));
    CHECK_FIELD(gfp_plugin, buffer_free, 88, 8, void (*)(void *, gfp_buffer));
    CHECK_FIELD(gfp_plugin, buffer_write, 96, 8,
                gfp_status (*)(void *, gfp_buffer, uint64_t, const void *, uint64_t));
    CHECK_FIELD(gfp_plugin, buffer_read, 104, 8,
                gfp_status (*)(void *, gfp_buffer, uint64_t, void *, uint64_t));
    CHECK_FIELD(gfp_plugin, buffer_copy, 112, 8,
                gfp_status (*)(void *, gfp_buffer, uint64_t, gfp_buffer, uint64_t, uint64_t));
    CHECK_FIELD(gfp_plugin, buffer_fill, 120, 8,
                gfp_status (*)(void *, gfp_buffer, uint64_t, uint64_t, const void *, uint32_t));
    CHECK_FIELD(gfp_plugin, synchronize, 128, 8, gfp_status (*)(void *));
    CHECK_FIELD(gfp_plugin, launch, 136, 8,
                gfp_status (*)(void *, uint32_t, const gfp_tensor *const *, uint32_t,
                               const gfp_tensor *const *, uint32_t, const void *));
    CHECK_FIELD(gfp_plugin, query_op, 144, 8,
                gfp_status (*)(void *, const gfp_op_query *, uint32_t *));
    CHECK_FIELD(gfp_plugin, query_extension, 152, 8,
                gfp_status (*)(void *, const char *, void **));
    /* 1.1 */
    CHECK(GFP_PLUGIN_SIZE_V1_1 == 168);
    CHECK_FIELD(gfp_plugin, buffer_wrap_host, 160, 8,
                gfp_status (*)(void *, void *, uint64_t, gfp_buffer *));
    /* 1.2 appended op ids only; 1.3 ops with their own parameter structs,
     * and the three OPTIONAL graph slots after buffer_wrap_host. */
    CHECK(GFP_PLUGIN_SIZE_V1_3 == 192);
    CHECK_FIELD(gfp_plugin, graph_create, 168, 8,
                gfp_status (*)(void *, const gfp_graph_node *, uint32_t, void **));
    CHECK_FIELD(gfp_plugin, graph_launch, 176, 8, gfp_status (*)(void *, void *));
    CHECK_FIELD(gfp_plugin, graph_destroy, 184, 8, void (*)(void *, void *));
    CHECK(sizeof(gfp_plugin) == GFP_PLUGIN_SIZE_V1_3);
    /* A 1.1-sized table (a plugin without the slots) does not cover them. */
    CHECK(!GFP_HAS_FIELD(GFP_PLUGIN_SIZE_V1_1, gfp_plugin, graph_create));
    CHECK(GFP_HAS_FIELD(GFP_PLUGIN_SIZE_V1_3, gfp_plugin, graph_destroy));
    CHECK(GFP_ABI_MAJOR == 1 && GFP_ABI_MINOR == 3);
}

static void test_graph_node_layout(void) {
    CHECK(GFP_GRAPH_NODE_SIZE_V1_3 == 40);
    CHECK(sizeof(gfp_graph_node) == 40);
    CHECK_FIELD(gfp_graph_node, struct_size, 0, 4, uint32_t);
    CHECK_FIELD(gfp_graph_node, op, 4, 4, uint32_t);
    CHECK_FIELD(gfp_graph_node, n_inputs, 8, 4, uint32_t);
    CHECK_FIELD(gfp_graph_node, n_outputs, 12, 4, uint32_t);
    CHECK_FIELD(gfp_graph_node, inputs, 16, 8, const gfp_tensor *const *);
    CHECK_FIELD(gfp_graph_node, outputs, 24, 8, const gfp_tensor *const *);
    CHECK_FIELD(gfp_graph_node, params, 32, 8, const void *);
}

static void test_negotiate_request_layout(void) {
    CHECK(GFP_NEGOTIATE_REQUEST_SIZE_V1_0 == 24);
    CHECK_FIELD(gfp_negotiate_request, struct_size, 0, 4, uint32_t);
    CHECK_FIELD(gfp_negotiate_request, abi_major, 4, 4, uint32_t);
    CHECK_FIELD(gfp_negotiate_request, abi_minor, 8, 4, uint32_t);
    CHECK_FIELD(gfp_negotiate_request, reserved0, 12, 4, uint32_t);
    CHECK_FIELD(gfp_negotiate_request, host, 16, 8, const gfp_host *);
}

/* The helper macros a reader uses to honour struct_size. */
static void test_size_macros(void) {
    CHECK(GFP_SIZE_THROUGH(gfp_plugin, init) == 40);
    CHECK(GFP_HAS_FIELD(GFP_PLUGIN_SIZE_V1_0, gfp_plugin, query_extension));
    CHECK(!GFP_HAS_FIELD(152u, gfp_plugin, query_extension));
    CHECK(GFP_HAS_FIELD(152u, gfp_plugin, query_op));
    CHECK(!GFP_HAS_FIELD(151u, gfp_plugin, query_op));
    CHECK(GFP_HAS_FIELD(144u, gfp_plugin, launch));
    CHECK(!GFP_HAS_FIELD(143u, gfp_plugin, launch));
    /* The smallest table the core accepts ends with the last REQUIRED slot. */
    CHECK(GFP_PLUGIN_SIZE_MIN == 144);
    CHECK(GFP_HAS_FIELD(GFP_PLUGIN_SIZE_V1_0 + 16, gfp_plugin, query_extension));
}

int main(void) {
    RUN(test_version_and_entry);
    RUN(test_graph_node_layout);
    RUN(test_status_values);
    RUN(test_dtype_values);
    RUN(test_other_constants);
    RUN(test_op_ids);
    RUN(test_host_layout);
    RUN(test_tensor_layout);
    RUN(test_device_props_layout);
    RUN(test_params_layout);
    RUN(test_op_query_layout);
    RUN(test_plugin_table_layout);
    RUN(test_negotiate_request_layout);
    RUN(test_size_macros);
    return CHECK_REPORT();
}
