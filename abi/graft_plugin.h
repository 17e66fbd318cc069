/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * graft_plugin.h — the graft device plugin ABI, version 1.3.
 *
 * 1.1 appended one OPTIONAL slot to gfp_plugin: buffer_wrap_host.
 * 1.2 appended op ids only (abi/graft_ops.def): HARDSWISH 49, ASIN 50,
 *     ACOS 51, ATAN 52, ATAN2 76 and BATCH_NORM_BACKWARD 125. No struct,
 *     slot or field changed, so a 1.2 table is exactly as large as a 1.1
 *     one; a plugin of an older minor answers NONE from query_op for the new
 *     ids and the core composes or falls back.
 * 1.3 appended the op ADAM_UPDATE 167 with its parameter struct
 *     gfp_adam_params and the flag GFP_ADAM_DECOUPLED_WEIGHT_DECAY. No
 *     existing struct, slot or field changed: a 1.3 table is as large as a
 *     1.1 one, and a plugin of an older minor answers NONE from query_op for
 *     the op (or refuses its launch as UNSUPPORTED), after which the core
 *     composes the update from other ops on the same device.
 *     Also in 1.3: the op FFT 168 with its parameter struct gfp_fft_params
 *     and the constants GFP_FFT_C2C, GFP_FFT_R2C, GFP_FFT_C2R; a plugin
 *     that predates it answers NONE and the core runs the transform on its
 *     fallback device.
 *     Also in 1.3: three OPTIONAL slots appended to gfp_plugin, graph_create,
 *     graph_launch and graph_destroy (a captured run of launches taken as a
 *     whole), with the struct gfp_graph_node: a 1.3 table that has them is
 *     GFP_PLUGIN_SIZE_V1_3 bytes; a plugin without them keeps its 1.1 size
 *     and its graphs are replayed launch by launch.
 *     Also in 1.3: the ops LAYER_NORM_BACKWARD 126 (gfp_layer_norm_params),
 *     SOFTMAX_BACKWARD 127 and LOG_SOFTMAX_BACKWARD 128 (gfp_dim_params);
 *     a plugin that predates them answers NONE and the core composes the
 *     gradients from other ops. Likewise the op RELU_BACKWARD 77 (no
 *     parameters), GELU_BACKWARD 78 (no parameters), and the ops
 *     LSTM_CELL_BACKWARD 169 and LSTM_CELL 170
 *     (no parameters) of the family RNN appended to graft_ops.h's families.
 *
 * This header is the whole contract between the graft core and a device
 * plugin. A plugin includes this file only and links nothing of graft: every
 * service it may use in the core comes through the host table (gfp_host).
 *
 * Rules (see docs/plugin-authors.md for the walk-through):
 *  - Versions. GFP_ABI_MAJOR changes on any break of layout or meaning.
 *    GFP_ABI_MINOR grows when fields, slots or op ids are appended. The core loads any
 *    plugin of its own major, whatever the minor: it reads only the fields that
 *    the plugin's struct_size covers, and ignores fields it does not know.
 *  - Every struct that crosses the boundary starts with `uint32_t struct_size`.
 *    Fields are only ever appended. A reader checks that struct_size covers a
 *    field (GFP_HAS_FIELD) before it reads it.
 *  - Op ids (enum gfp_op) are explicit numbers, never renumbered or reused.
 *  - Every call returns a gfp_status: 0 = OK, negative = failure. A plugin may
 *    attach a message with host->set_error() before returning a failure. No
 *    abort(), exit(), longjmp or C++ exception may cross the boundary.
 *  - Function slots are marked REQUIRED or OPTIONAL. An OPTIONAL slot may be
 *    NULL; the core then applies the default documented beside the slot.
 *  - Threads: the core serialises all calls into one device unless the device
 *    reports GFP_DEVICE_FLAG_THREAD_SAFE. Calls into different devices may run
 *    concurrently. negotiate() may be called from any thread.
 */
#ifndef GRAFT_PLUGIN_H
#define GRAFT_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GFP_ABI_MAJOR 1
#define GFP_ABI_MINOR 3

/* The one symbol a plugin exports (type gfp_negotiate_fn). */
#define GFP_ENTRY_SYMBOL "graft_plugin_negotiate"

/* Size of a struct up to and including FIELD: what a v1 reader may rely on. */
#define GFP_SIZE_THROUGH(type, field) \
    (offsetof(type, field) + sizeof(((type *)0)->field))
/* True when an instance whose struct_size is `size` contains FIELD. */
#define GFP_HAS_FIELD(size, type, field) ((size) >= GFP_SIZE_THROUGH(type, field))

#define GFP_MAX_RANK 8

#if defined(_WIN32)
#define GFP_EXPORT __declspec(dllexport)
#else
#define GFP_EXPORT __attribute__((visibility("default")))
#endif

/* ------------------------------------------------------------------ status */
typedef enum gfp_status {
    GFP_OK = 0,
    GFP_ERR_INVALID = -1,      /* a bad argument or parameter */
    GFP_ERR_OUT_OF_MEMORY = -2,
    GFP_ERR_UNSUPPORTED = -3,  /* op, dtype or layout not provided */
    GFP_ERR_NOT_FOUND = -4,    /* extension or device not present */
    GFP_ERR_DEVICE = -5,       /* the driver or device failed */
    GFP_ERR_VERSION = -6,      /* negotiation refused */
    GFP_ERR_INTERNAL = -7
} gfp_status;

/* ------------------------------------------------------------------ dtypes */
typedef enum gfp_dtype {
    GFP_F32 = 0,
    GFP_F64 = 1,
    GFP_I32 = 2,
    GFP_I64 = 3,
    GFP_BOOL = 4, /* one byte, 0 or 1 */
    GFP_F16 = 5,  /* reserved: for plugins that have it */
    GFP_BF16 = 6, /* reserved: for plugins that have it */
    /* Appended in 1.3. Interleaved (re, im) pairs, the layout of C99's
     * float complex / double complex. Stored only by plugins that set their
     * bits in gfp_device_props.dtypes; a plugin of an older minor never does,
     * so the core never gives it such a tensor. */
    GFP_C64 = 7,  /* two f32: re, im */
    GFP_C128 = 8, /* two f64: re, im */
    GFP_DTYPE_COUNT = 9
} gfp_dtype;

#define GFP_DTYPE_BIT(d) (1u << (unsigned)(d))

/* Device memory: an opaque handle (a pointer, a cl_mem, a VkBuffer wrapper,
 * a CUDA pointer) plus byte offsets. The core never dereferences it, never
 * compares it with NULL and never invents one: any value buffer_alloc
 * returns, 0 included, is a valid handle, passed back exactly as given. */
typedef void *gfp_buffer;

/* ------------------------------------------------------------------ host */
typedef enum gfp_log_level {
    GFP_LOG_ERROR = 0,
    GFP_LOG_WARN = 1,
    GFP_LOG_INFO = 2,
    GFP_LOG_DEBUG = 3
} gfp_log_level;

/* Services the core offers to a plugin. Valid from negotiate() until the
 * plugin's shutdown() returns. All slots are always non-NULL. negotiate()
 * runs once per load of the plugin's library; should it run again (the core
 * loaded again after gf_shutdown), keep the host table of the latest call. */
typedef struct gfp_host {
    uint32_t struct_size;
    uint32_t abi_major; /* the core's ABI version */
    uint32_t abi_minor;
    uint32_t reserved0;
    void *host_ctx; /* pass back as the first argument of every slot */
    /* Attach a message to the failure the calling thread is about to return.
     * The text is copied. */
    void (*set_error)(void *host_ctx, const char *message);
    /* Diagnostics, shown according to GRAFT_LOG. The text is copied. */
    void (*log)(void *host_ctx, gfp_log_level level, const char *message);
} gfp_host;
#define GFP_HOST_SIZE_V1_0 GFP_SIZE_THROUGH(gfp_host, log)

/* ------------------------------------------------------------------ tensors */
/* A tensor as a kernel sees it. sizes and strides (in elements, never bytes)
 * are always given for dims [0, rank); strides may be zero (broadcast) or
 * anything else a view produces, but never negative. rank 0 is a scalar. */
typedef struct gfp_tensor {
    uint32_t struct_size;
    int32_t dtype; /* gfp_dtype */
    gfp_buffer buffer;
    uint64_t offset; /* bytes from the start of buffer; a multiple of the
                        dtype's size (not of 64: views start anywhere) */
    int32_t rank;
    int32_t reserved0;
    int64_t sizes[GFP_MAX_RANK];
    int64_t strides[GFP_MAX_RANK];
} gfp_tensor;
#define GFP_TENSOR_SIZE_V1_0 GFP_SIZE_THROUGH(gfp_tensor, strides)

/* ------------------------------------------------------------------ devices */
#define GFP_DEVICE_FLAG_HOST_ADDRESSABLE 0x1u /* host_ptr from alloc is valid */
#define GFP_DEVICE_FLAG_THREAD_SAFE 0x2u      /* calls may come concurrently */

typedef struct gfp_device_props {
    uint32_t struct_size;
    uint32_t flags;          /* GFP_DEVICE_FLAG_* */
    char name[128];          /* e.g. "Reference CPU (plain C)" */
    char type[32];           /* device type used in GRAFT_DEVICE: "cpu" ... */
    uint64_t memory_bytes;   /* total memory, 0 if unknown */
    uint32_t dtypes;         /* GFP_DTYPE_BIT set of dtypes it stores */
    uint32_t max_rank;       /* <= GFP_MAX_RANK */
    uint64_t max_alloc_bytes; /* largest single allocation, 0 = no limit */
    char driver[128];        /* driver / runtime version text, may be "" */
} gfp_device_props;
#define GFP_DEVICE_PROPS_SIZE_V1_0 GFP_SIZE_THROUGH(gfp_device_props, driver)

/* ------------------------------------------------------------------ ops */
/* Stable op ids. Never renumber, never reuse a retired number.
 *
 * Conventions for launch():
 *  - Elementwise ops: every input and output has the same rank and sizes;
 *    the core broadcasts by passing stride-0 dims. An output may alias an
 *    input exactly (same buffer, offset and strides): that is an in-place op.
 *    Outputs never partially overlap inputs.
 *  - Reductions: the output has the input's rank, with size 1 in reduced
 *    dims (the core squeezes them afterwards when keepdim is false).
 *    Reducing zero elements: sum 0, prod 1, mean NaN, amax/amin: the core
 *    refuses it before launch. Accuracy: any summation order is allowed;
 *    graft-plugin-check accepts a normalised mean squared error against the
 *    reference of 1e-8 in f32 (about 1e-4 relative) and 1e-20 in f64, so f32
 *    sums of many terms need a wider accumulator or pairwise/tree order.
 *  - A launch whose output has zero elements is never made for elementwise ops.
 *  - Inputs listed as "in:", outputs as "out:" (in graft_ops.def).
 */
typedef enum gfp_op {
    /* One member per row of graft_ops.def (installed beside this header),
     * which gives each op its number, name, family, arity and parameter
     * struct, with the op's own semantics beside its row. */
#define GFP_OP_ROW(ID, number, name, family, in_min, in_max, in_optional, n_out, params) \
    GFP_OP_##ID = number,
#include "graft_ops.def"
} gfp_op;

/* Parameter structs. Each starts with struct_size; the core passes the
 * struct of the op's kind (NULL for ops that take none). */
typedef struct gfp_scalar_params {
    uint32_t struct_size;
    uint32_t reserved0;
    double a;
    double b;
} gfp_scalar_params;
#define GFP_SCALAR_PARAMS_SIZE_V1_0 GFP_SIZE_THROUGH(gfp_scalar_params, b)

typedef struct gfp_fill_params {
    uint32_t struct_size;
    uint32_t reserved0;
    double value;    /* for float, bool (value != 0) dtypes */
    int64_t ivalue;  /* exact value for integer dtypes */
} gfp_fill_params;
#define GFP_FILL_PARAMS_SIZE_V1_0 GFP_SIZE_THROUGH(gfp_fill_params, ivalue)

typedef struct gfp_arange_params {
    uint32_t struct_size;
    uint32_t reserved0;
    double start;
    double step;
} gfp_arange_params;
#define GFP_ARANGE_PARAMS_SIZE_V1_0 GFP_SIZE_THROUGH(gfp_arange_params, step)

typedef struct gfp_clamp_params {
    uint32_t struct_size;
    uint32_t has_min; /* 0 or 1 */
    uint32_t has_max;
    uint32_t reserved0;
    double min;
    double max;
} gfp_clamp_params;
#define GFP_CLAMP_PARAMS_SIZE_V1_0 GFP_SIZE_THROUGH(gfp_clamp_params, max)

typedef struct gfp_tri_params {
    uint32_t struct_size;
    uint32_t reserved0;
    int64_t diagonal;
} gfp_tri_params;
#define GFP_TRI_PARAMS_SIZE_V1_0 GFP_SIZE_THROUGH(gfp_tri_params, diagonal)

typedef struct gfp_reduce_params {
    uint32_t struct_size;
    uint32_t dims;       /* bit d set: dim d is reduced */
    double correction;   /* VAR only: divisor is n - correction (clamped at 0) */
} gfp_reduce_params;
#define GFP_REDUCE_PARAMS_SIZE_V1_0 GFP_SIZE_THROUGH(gfp_reduce_params, correction)

typedef struct gfp_dim_params {
    uint32_t struct_size;
    int32_t dim; /* already normalised to [0, rank) */
} gfp_dim_params;
#define GFP_DIM_PARAMS_SIZE_V1_0 GFP_SIZE_THROUGH(gfp_dim_params, dim)

typedef struct gfp_layer_norm_params {
    uint32_t struct_size;
    int32_t normalized_rank; /* how many trailing dims are normalised */
    double eps;
} gfp_layer_norm_params;
#define GFP_LAYER_NORM_PARAMS_SIZE_V1_0 GFP_SIZE_THROUGH(gfp_layer_norm_params, eps)

typedef struct gfp_batch_norm_params {
    uint32_t struct_size;
    uint32_t training; /* 1: batch statistics (and update running stats) */
    double momentum;
    double eps;
} gfp_batch_norm_params;
#define GFP_BATCH_NORM_PARAMS_SIZE_V1_0 GFP_SIZE_THROUGH(gfp_batch_norm_params, eps)

typedef struct gfp_conv2d_params {
    uint32_t struct_size;
    int32_t groups;
    int32_t stride[2];
    int32_t padding[2];
    int32_t dilation[2];
} gfp_conv2d_params;
#define GFP_CONV2D_PARAMS_SIZE_V1_0 GFP_SIZE_THROUGH(gfp_conv2d_params, dilation)

typedef struct gfp_pool2d_params {
    uint32_t struct_size;
    int32_t kernel[2];
    int32_t stride[2];
    int32_t padding[2];
    int32_t dilation[2];    /* max pool only */
    uint32_t ceil_mode;
    uint32_t count_include_pad; /* avg pool only */
} gfp_pool2d_params;
#define GFP_POOL2D_PARAMS_SIZE_V1_0 GFP_SIZE_THROUGH(gfp_pool2d_params, count_include_pad)

/* Random numbers, the same on every device for the same seed and offset.
 * Element i (row-major order of the output, which is contiguous) takes
 *   r[0..3] = Philox4x32-10(key = {seed & 0xffffffff, seed >> 32},
 *                           counter = {c & 0xffffffff, c >> 32, 0, 0}),  c = offset + i
 * (constants 0xD2511F53, 0xCD9E8D57; key bumps 0x9E3779B9, 0xBB67AE85), and
 *   u24(w)     = (w >> 8) * 2^-24                                 in [0, 1)
 *   u53(w, v)  = ((uint64_t)(w >> 5) * 2^26 + (v >> 6)) * 2^-53   in [0, 1)
 *   UNIFORM:   f32: a + (b - a) * u24(r0);  f64: a + (b - a) * u53(r0, r1)
 *   NORMAL:    f32: u1 = 1 - u24(r0), u2 = u24(r1);
 *              f64: u1 = 1 - u53(r0, r1), u2 = u53(r2, r3);
 *              y = a + b * sqrt(-2 ln u1) * cos(2 pi u2)
 *   BERNOULLI: y = (u24(r0) < a) ? 1 : 0, for any output dtype.
 * f32 results are computed in double and rounded once. */
typedef enum gfp_random_kind {
    GFP_RANDOM_UNIFORM = 0,
    GFP_RANDOM_NORMAL = 1,
    GFP_RANDOM_BERNOULLI = 2
} gfp_random_kind;

typedef struct gfp_random_params {
    uint32_t struct_size;
    uint32_t kind; /* gfp_random_kind */
    uint64_t seed;
    uint64_t offset;
    double a; /* uniform: low;  normal: mean; bernoulli: p */
    double b; /* uniform: high; normal: std */
} gfp_random_params;
#define GFP_RANDOM_PARAMS_SIZE_V1_0 GFP_SIZE_THROUGH(gfp_random_params, b)

/* ADAM_UPDATE (1.3): one step of torch.optim.Adam / AdamW (not amsgrad, not
 * maximize) for one parameter. The core computes the bias corrections in
 * double from the parameter's step count t: bias_correction1 = 1 - beta1^t,
 * bias_correction2_sqrt = sqrt(1 - beta2^t). The formula, the rounding of
 * each constant and the order of operations are in graft_ops.def. */
#define GFP_ADAM_DECOUPLED_WEIGHT_DECAY 0x1u /* flags: AdamW's decay */
typedef struct gfp_adam_params {
    uint32_t struct_size;
    uint32_t flags; /* GFP_ADAM_* */
    double lr;
    double beta1;
    double beta2;
    double eps;
    double weight_decay; /* 0: no decay of either kind */
    double bias_correction1;
    double bias_correction2_sqrt;
} gfp_adam_params;
#define GFP_ADAM_PARAMS_SIZE_V1_3 GFP_SIZE_THROUGH(gfp_adam_params, bias_correction2_sqrt)

/* FFT (1.3): which dtypes a transform takes and gives (graft_ops.def says
 * what each computes). */
typedef enum gfp_fft_kind {
    GFP_FFT_C2C = 0, /* complex to complex */
    GFP_FFT_R2C = 1, /* real to complex, the last listed dim onesided */
    GFP_FFT_C2R = 2  /* onesided complex to real, the inverse of R2C's halving */
} gfp_fft_kind;

typedef struct gfp_fft_params {
    uint32_t struct_size;
    uint32_t kind;    /* gfp_fft_kind */
    uint32_t inverse; /* 0: exponent sign -1 (a forward DFT); 1: +1 (unscaled inverse) */
    uint32_t n_dims;  /* how many dims are transformed, 1 .. rank */
    /* The transformed dims, distinct, in [0, rank) of the complex-side
     * tensor's rank (x and y have one rank). For R2C and C2R the last one
     * listed, dims[n_dims - 1], is the onesided dim; the order of the others
     * does not matter. Entries past n_dims are not read. */
    int32_t dims[GFP_MAX_RANK];
    double scale; /* every output element is multiplied by it (1, 1/n, 1/sqrt(n)) */
} gfp_fft_params;
#define GFP_FFT_PARAMS_SIZE_V1_3 GFP_SIZE_THROUGH(gfp_fft_params, scale)

/* ------------------------------------------------------------------ captured graphs */
/* One launch of a captured sequence (1.3): what launch() would receive. */
typedef struct gfp_graph_node {
    uint32_t struct_size;
    uint32_t op;
    uint32_t n_inputs;
    uint32_t n_outputs;
    const gfp_tensor *const *inputs; /* entries may be NULL (absent optional inputs) */
    const gfp_tensor *const *outputs;
    const void *params;              /* the op's parameter struct or NULL */
} gfp_graph_node;
#define GFP_GRAPH_NODE_SIZE_V1_3 GFP_SIZE_THROUGH(gfp_graph_node, params)

/* ------------------------------------------------------------------ capability */
/* What the core asks before the first launch of an (op, dtypes, layout). */
#define GFP_LAYOUT_CONTIGUOUS 0u /* every tensor row-major contiguous */
#define GFP_LAYOUT_STRIDED 1u    /* some tensor has other strides */

typedef struct gfp_op_query {
    uint32_t struct_size;
    uint32_t op;       /* gfp_op */
    uint32_t layout;   /* GFP_LAYOUT_* */
    uint32_t n_inputs;
    uint32_t n_outputs;
    int32_t input_dtypes[8];  /* -1 for an absent optional input */
    int32_t output_dtypes[4];
} gfp_op_query;
#define GFP_OP_QUERY_SIZE_V1_0 GFP_SIZE_THROUGH(gfp_op_query, output_dtypes)

/* Answers of query_op. For GFP_LAYOUT_CONTIGUOUS the answer says whether the
 * op is provided at all; for GFP_LAYOUT_STRIDED, whether strided tensors are
 * taken as they are. A kernel for row-major tensors only answers
 * GFP_SUPPORT_CONTIGUOUS to both (the core then makes contiguous copies on
 * the device); GFP_SUPPORT_NONE sends the op to the core's fallback device
 * (or, in strict mode, fails with UNSUPPORTED). */
#define GFP_SUPPORT_NONE 0u       /* not provided: the core runs it elsewhere */
#define GFP_SUPPORT_CONTIGUOUS 1u /* provided when every tensor is contiguous:
                                     the core makes copies first */
#define GFP_SUPPORT_STRIDED 3u    /* provided for any strides (implies contiguous) */

/* ------------------------------------------------------------------ the table */
typedef struct gfp_plugin {
    uint32_t struct_size;
    uint32_t abi_major;      /* the version this table follows */
    uint32_t abi_minor;
    uint32_t reserved0;
    const char *name;        /* REQUIRED: unique plugin name, e.g. "reference" */
    const char *version;     /* REQUIRED: the plugin's own version text */

    /* REQUIRED. Called once after a successful negotiation, before any other
     * slot. May enumerate drivers but should not create device contexts.
     * *plugin_ctx receives the plugin's state (may be NULL). On failure the
     * plugin is skipped and shutdown() is not called. */
    gfp_status (*init)(void **plugin_ctx);

    /* OPTIONAL (default: nothing). Called once, last, after every buffer of
     * the plugin has been freed and every device closed. */
    void (*shutdown)(void *plugin_ctx);

    /* REQUIRED. Number of devices. Zero is valid: the plugin may then explain
     * why through host->set_error before returning GFP_OK (shown by graft-info). */
    gfp_status (*device_count)(void *plugin_ctx, uint32_t *count);

    /* REQUIRED. Fill props (the core sets props->struct_size first). The core
     * passes indices below device_count's answer only; a plugin that gets
     * another answers GFP_ERR_NOT_FOUND (as device_open does). */
    gfp_status (*device_props)(void *plugin_ctx, uint32_t index, gfp_device_props *props);

    /* REQUIRED. Create the device context on first use. */
    gfp_status (*device_open)(void *plugin_ctx, uint32_t index, void **device);

    /* OPTIONAL (default: nothing). After all of the device's buffers are freed. */
    void (*device_close)(void *device);

    /* REQUIRED. Allocate nbytes (> 0) aligned to at least 64 bytes. When the
     * device is HOST_ADDRESSABLE, *host_ptr receives the address of byte 0,
     * otherwise the plugin sets it to NULL. Out of memory is
     * GFP_ERR_OUT_OF_MEMORY, never a crash. */
    gfp_status (*buffer_alloc)(void *device, uint64_t nbytes, gfp_buffer *buffer,
                               void **host_ptr);

    /* REQUIRED. Free a buffer from buffer_alloc. Never fails. */
    void (*buffer_free)(void *device, gfp_buffer buffer);

    /* REQUIRED. Host to device: copy n bytes from src to buffer+offset.
     * Returns when src may be reused. */
    gfp_status (*buffer_write)(void *device, gfp_buffer buffer, uint64_t offset,
                               const void *src, uint64_t n);

    /* REQUIRED. Device to host: waits for earlier work on the device. */
    gfp_status (*buffer_read)(void *device, gfp_buffer buffer, uint64_t offset,
                              void *dst, uint64_t n);

    /* OPTIONAL (default: buffer_read into host memory, then buffer_write).
     * Device to device within one device; regions do not overlap. */
    gfp_status (*buffer_copy)(void *device, gfp_buffer src, uint64_t src_offset,
                              gfp_buffer dst, uint64_t dst_offset, uint64_t n);

    /* OPTIONAL (default: write a host block holding the pattern repeated).
     * Fill n bytes (a multiple of pattern_size; pattern_size is 1, 2, 4 or 8). */
    gfp_status (*buffer_fill)(void *device, gfp_buffer buffer, uint64_t offset, uint64_t n,
                              const void *pattern, uint32_t pattern_size);

    /* OPTIONAL (default: nothing, for devices that run synchronously).
     * Wait until all launched work has finished. */
    gfp_status (*synchronize)(void *device);

    /* REQUIRED. Run one op, in order with earlier launches on the device
     * (possibly asynchronously). inputs[i] may be NULL for an absent optional
     * input. params is the op's parameter struct or NULL. A launch that
     * returns GFP_ERR_UNSUPPORTED must not have written any output: the core
     * may run the op on its fallback device from the same inputs. */
    gfp_status (*launch)(void *device, uint32_t op, const gfp_tensor *const *inputs,
                         uint32_t n_inputs, const gfp_tensor *const *outputs,
                         uint32_t n_outputs, const void *params);

    /* OPTIONAL (default: every op is GFP_SUPPORT_STRIDED for every dtype the
     * device stores; launch may still refuse with GFP_ERR_UNSUPPORTED).
     * *support receives a GFP_SUPPORT_* value. The core caches the answer. */
    gfp_status (*query_op)(void *device, const gfp_op_query *query, uint32_t *support);

    /* OPTIONAL (default: GFP_ERR_NOT_FOUND). Device-specific features by name
     * without an ABI bump; *out receives a pointer whose type the extension's
     * own documentation defines. */
    gfp_status (*query_extension)(void *plugin_ctx, const char *name, void **out);

    /* ---- appended in 1.1 ---- */

    /* OPTIONAL (default: the core copies such memory into a buffer from
     * buffer_alloc). Only for HOST_ADDRESSABLE devices. Adopt nbytes (> 0) of
     * host memory at host_ptr, which the caller owns and keeps valid until
     * buffer_free of the returned handle, as a buffer of the device, without
     * copying: *buffer receives a handle that every slot (launch, read,
     * write, copy, fill) accepts like one from buffer_alloc, with byte 0 at
     * host_ptr. The memory may be less aligned than buffer_alloc's 64 bytes:
     * at least to the element size of the tensors the core places in it.
     * buffer_free of such a handle forgets it and never frees the memory.
     * GFP_ERR_UNSUPPORTED when the plugin cannot use this memory (the core
     * then copies). This is how DLPack imports and gf_from_host_memory share
     * memory with other libraries. */
    gfp_status (*buffer_wrap_host)(void *device, void *host_ptr, uint64_t nbytes,
                                   gfp_buffer *buffer);

    /* OPTIONAL, 1.3 (the three graph slots come together; default: the core
     * replays a captured graph launch by launch through launch()). The core
     * hands over a run of launches it captured on this device (graft/graph.h),
     * in order; graph_create validates them once and prepares what it can,
     * so that graph_launch runs them all, in order, as launch() would each,
     * without per-launch checks. The nodes, the descriptors and parameter
     * structs they point to stay valid until graph_destroy; the core may
     * rewrite the parameter structs between graph_launch calls (the Philox
     * offsets of RANDOM, an optimiser's per-step constants), so values taken
     * from params are read at launch. *graph receives the plugin's handle.
     * GFP_ERR_UNSUPPORTED from graph_create: the core launches the nodes one
     * by one instead. A failing graph_launch returns the failing node's
     * status; nodes before it ran. graph_destroy may be called while other
     * graphs of the device live, never while graph_launch runs. */
    gfp_status (*graph_create)(void *device, const gfp_graph_node *nodes, uint32_t n_nodes,
                               void **graph);
    /* OPTIONAL, 1.3: runs the nodes of a graph from graph_create, in order. */
    gfp_status (*graph_launch)(void *device, void *graph);
    /* OPTIONAL, 1.3: frees a graph from graph_create. */
    void (*graph_destroy)(void *device, void *graph);
} gfp_plugin;
#define GFP_PLUGIN_SIZE_V1_0 GFP_SIZE_THROUGH(gfp_plugin, query_extension)
#define GFP_PLUGIN_SIZE_V1_1 GFP_SIZE_THROUGH(gfp_plugin, buffer_wrap_host)
#define GFP_PLUGIN_SIZE_V1_3 GFP_SIZE_THROUGH(gfp_plugin, graph_destroy)
/* The smallest table the core accepts: every REQUIRED slot. Slots beyond a
 * table's struct_size are read as NULL (their documented defaults apply). */
#define GFP_PLUGIN_SIZE_MIN GFP_SIZE_THROUGH(gfp_plugin, launch)

/* What the core passes to negotiate(). */
typedef struct gfp_negotiate_request {
    uint32_t struct_size;
    uint32_t abi_major; /* the core's version */
    uint32_t abi_minor;
    uint32_t reserved0;
    const gfp_host *host; /* valid until the plugin's shutdown returns */
} gfp_negotiate_request;
#define GFP_NEGOTIATE_REQUEST_SIZE_V1_0 GFP_SIZE_THROUGH(gfp_negotiate_request, host)

/* The entry point, exported as GFP_ENTRY_SYMBOL. It must have no side effects
 * beyond remembering `host`: no device or driver initialisation. It returns
 * GFP_OK and a table whose abi_major equals request->abi_major, or
 * GFP_ERR_VERSION when it cannot serve that major (with a message). The table
 * stays valid until the library is unloaded. */
typedef gfp_status (*gfp_negotiate_fn)(const gfp_negotiate_request *request,
                                       const gfp_plugin **table);

/* ------------------------------------------------------------------ layout pins */
#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define GFP_STATIC_ASSERT _Static_assert
#else
#define GFP_STATIC_ASSERT static_assert
#endif
#if UINTPTR_MAX == 0xFFFFFFFFFFFFFFFFu
GFP_STATIC_ASSERT(GFP_HOST_SIZE_V1_0 == 40, "gfp_host v1.0 layout moved");
GFP_STATIC_ASSERT(GFP_TENSOR_SIZE_V1_0 == 160, "gfp_tensor v1.0 layout moved");
GFP_STATIC_ASSERT(GFP_DEVICE_PROPS_SIZE_V1_0 == 320, "gfp_device_props v1.0 layout moved");
GFP_STATIC_ASSERT(GFP_OP_QUERY_SIZE_V1_0 == 68, "gfp_op_query v1.0 layout moved");
GFP_STATIC_ASSERT(GFP_PLUGIN_SIZE_V1_0 == 160, "gfp_plugin v1.0 layout moved");
GFP_STATIC_ASSERT(GFP_PLUGIN_SIZE_V1_1 == 168, "gfp_plugin v1.1 layout moved");
GFP_STATIC_ASSERT(GFP_PLUGIN_SIZE_V1_3 == 192, "gfp_plugin v1.3 layout moved");
GFP_STATIC_ASSERT(GFP_GRAPH_NODE_SIZE_V1_3 == 40, "gfp_graph_node v1.3 layout moved");
GFP_STATIC_ASSERT(GFP_NEGOTIATE_REQUEST_SIZE_V1_0 == 24, "gfp_negotiate_request v1.0 layout moved");
GFP_STATIC_ASSERT(GFP_RANDOM_PARAMS_SIZE_V1_0 == 40, "gfp_random_params v1.0 layout moved");
GFP_STATIC_ASSERT(GFP_CONV2D_PARAMS_SIZE_V1_0 == 32, "gfp_conv2d_params v1.0 layout moved");
GFP_STATIC_ASSERT(GFP_POOL2D_PARAMS_SIZE_V1_0 == 44, "gfp_pool2d_params v1.0 layout moved");
GFP_STATIC_ASSERT(GFP_ADAM_PARAMS_SIZE_V1_3 == 64, "gfp_adam_params v1.3 layout moved");
GFP_STATIC_ASSERT(GFP_FFT_PARAMS_SIZE_V1_3 == 56, "gfp_fft_params v1.3 layout moved");
#endif

#ifdef __cplusplus
}
#endif
#endif /* GRAFT_PLUGIN_H */
