/* SPDX-License-Identifier: BSD-3-Clause */
/* pc.h — what the files of graft-plugin-check share.
 *
 * graft-plugin-check loads one plugin file through the ABI alone (dlopen,
 * negotiate with its own host table, like the ICD loader tests do) and checks
 * it against the reference plugin, which it loads the same way as the oracle.
 * It links nothing of graft. Files by concern:
 *   main.c        the command line, the order of the suites, the exit status
 *   plugin.c      loading, the host table, negotiation and struct checks, and
 *                 the wrappers through which every plugin call goes (they count
 *                 allocations and frees)
 *   tensor.c      dtypes, host arrays, random inputs, layouts, guarded buffers
 *   compare.c     NMSE and exact comparison, the thresholds
 *   runner.c      one op case on the plugin and on the oracle, per layout
 *   cases_*.c     the op catalogue: dtype combinations, shapes, parameters
 *   checks.c      memory slots, error paths, threads, allocation accounting
 *   gradcheck.c   adjoint identities of the backward kernels
 *   report.c      results, the text report and --json */
#ifndef GRAFT_PLUGIN_CHECK_PC_H
#define GRAFT_PLUGIN_CHECK_PC_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "graft_ops.h"

#define PC_VERSION "1.0"

#if defined(__GNUC__)
#define PC_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define PC_PRINTF(a, b)
#endif

/* ------------------------------------------------------------ options */
typedef struct pc_options {
    const char *plugin_path;
    const char *reference_path; /* NULL: searched (main.c) */
    const char *json_path;      /* "-" for stdout */
    const char *only_ops;       /* comma list of op names, or NULL */
    int only_device;            /* -1: every device */
    uint64_t seed;
    bool quick;
    bool brief;   /* text report: failures and summaries only */
    bool verbose; /* also the plugins' log messages */
    bool dump;    /* print the arrays of failing op cases */
} pc_options;

extern pc_options pc_opt;

/* ------------------------------------------------------------ plugins (plugin.c) */
typedef struct pc_plugin {
    const char *path;
    const char *role; /* "plugin" or "oracle", for messages */
    void *dl;
    const gfp_plugin *table; /* as negotiated */
    gfp_plugin slots;        /* the table up to its struct_size; the rest NULL */
    gfp_host host;
    void *ctx;
    bool initialised;
    char name[64], version[64];
    char null_optional[256]; /* the OPTIONAL slots left NULL, for a note */
    /* Accounting through the wrappers. */
    pthread_mutex_t lock;
    long allocs, frees, failed_allocs;
    long unknown_frees; /* handles freed that the checker never got from alloc */
    gfp_buffer *live;   /* handles allocated and not yet freed */
    size_t n_live, cap_live;
    /* Log messages at warning level or worse, and those during shutdown. */
    long warnings;
    bool in_shutdown;
    char shutdown_log[512];
} pc_plugin;

typedef struct pc_device {
    pc_plugin *plugin;
    uint32_t index;
    void *handle;
    gfp_device_props props;
    bool open;
} pc_device;

/* Loads and negotiates; records the negotiation checks when `checks` (the
 * plugin under test). Returns false with a message in why when it cannot go on. */
bool pc_plugin_load(pc_plugin *p, const char *path, const char *role, bool checks, char *why,
                    size_t why_len);
/* Runs init and device_count. */
bool pc_plugin_init(pc_plugin *p, uint32_t *count, char *why, size_t why_len);
/* device_props (checked when `checks`) and device_open. */
bool pc_device_open(pc_plugin *p, uint32_t index, pc_device *d, bool checks, char *why,
                    size_t why_len);
void pc_device_close(pc_device *d);
/* shutdown, then dlclose. Checks accounting when `checks`. */
void pc_plugin_unload(pc_plugin *p, bool checks);

/* The message the calling thread's last failing plugin call attached ("" if none). */
const char *pc_error_text(void);
void pc_error_clear(void);
const char *pc_status_name(gfp_status s);

/* Wrappers: the only callers of plugin slots outside plugin.c and checks.c.
 * Optional slots get the ABI's defaults. */
gfp_status pc_alloc(pc_device *d, uint64_t nbytes, gfp_buffer *buffer, void **host_ptr);
void pc_free(pc_device *d, gfp_buffer buffer);
gfp_status pc_write(pc_device *d, gfp_buffer b, uint64_t offset, const void *src, uint64_t n);
gfp_status pc_read(pc_device *d, gfp_buffer b, uint64_t offset, void *dst, uint64_t n);
gfp_status pc_sync(pc_device *d);
gfp_status pc_launch(pc_device *d, uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                     const gfp_tensor *const *out, uint32_t n_out, const void *params);
/* query_op, or its documented default when the slot is NULL. */
gfp_status pc_query(pc_device *d, const gfp_op_query *q, uint32_t *support);

/* ------------------------------------------------------------ dtypes and arrays (tensor.c) */
size_t pc_dtype_size(int32_t dt);
const char *pc_dtype_name(int32_t dt); /* "-" for an absent optional tensor (-1) */
bool pc_is_float(int32_t dt);          /* f32, f64, f16, bf16 */
bool pc_is_complex(int32_t dt);        /* c64, c128 */
int32_t pc_part_dtype(int32_t dt);     /* c64 -> f32, c128 -> f64; others unchanged */
double pc_load(const void *base, int32_t dt, int64_t i);
int64_t pc_load_i64(const void *base, int32_t dt, int64_t i);
void pc_store(void *base, int32_t dt, int64_t i, double v);
void pc_store_i64(void *base, int32_t dt, int64_t i, int64_t v);
uint16_t pc_f16_from_double(double v);
double pc_f16_to_double(uint16_t h);
uint16_t pc_bf16_from_double(double v);
double pc_bf16_to_double(uint16_t h);

/* A logical tensor on the host: row-major, numel elements of dtype. */
typedef struct pc_array {
    int32_t dtype;
    int rank;
    int64_t sizes[GFP_MAX_RANK];
    int64_t numel;
    unsigned char *data; /* at least one element's room, zeroed */
} pc_array;

bool pc_array_init(pc_array *a, int32_t dtype, int rank, const int64_t *sizes);
void pc_array_free(pc_array *a);
/* dst = src converted to dtype (exact for the reference's dtypes, rounding
 * to f16/bf16). */
bool pc_array_convert(pc_array *dst, const pc_array *src, int32_t dtype);
/* A complex array seen as its parts: the part dtype, one more dim of size 2
 * (re, im), the same data. */
pc_array pc_array_parts(const pc_array *a);
/* Makes a's values equal along dim (all copies of index 0): a broadcast source. */
void pc_array_collapse(pc_array *a, int dim);
/* "[7, 13]" */
char *pc_shape_text(char *buf, size_t len, int rank, const int64_t *sizes);

/* Deterministic random numbers (splitmix64). */
typedef struct pc_rng {
    uint64_t s;
} pc_rng;
uint64_t pc_rng_next(pc_rng *r);
double pc_rng_unit(pc_rng *r); /* [0, 1) */
uint64_t pc_hash(uint64_t a, uint64_t b);

typedef enum pc_gen {
    PC_GEN_UNIFORM,  /* floats uniform in [lo, hi); integers in [lo, hi]; bool 0/1 */
    PC_GEN_QUARTERS, /* multiples of 0.25 in [lo, hi]: exact halves for round */
    PC_GEN_SMALLINT, /* integers in [lo, hi] in any dtype: ties and zeros */
    PC_GEN_SPECIALS, /* uniform, with NaN, +-inf, +-0 and huge and tiny values mixed in */
    PC_GEN_NONFINITE, /* uniform, with NaN, +-inf and +-0 mixed in (for sums: no
                         huge finite values whose cancellation tests precision) */
    PC_GEN_INDEX,    /* integers in [0, hi) */
    PC_GEN_ZEROS
} pc_gen;
void pc_array_fill(pc_array *a, pc_gen gen, double lo, double hi, uint64_t seed);

/* ------------------------------------------------------------ layouts and guarded buffers */
typedef enum pc_layout {
    PC_CONTIGUOUS, /* row-major */
    PC_TRANSPOSED, /* dims stored in reverse order (rank >= 2) */
    PC_SLICED,     /* every other element of the last dim, starting at element 1 */
    PC_BROADCAST,  /* inputs: one dim of stride 0; outputs contiguous */
    PC_INPLACE,    /* output 0 is input 0 (elementwise ops) */
    PC_LAYOUT_COUNT
} pc_layout;
const char *pc_layout_name(pc_layout l);

#define PC_GUARD 256 /* bytes of sentinel before and after every view */

/* A tensor placed in a buffer of its own with sentinel bytes around it. */
typedef struct pc_dtensor {
    gfp_tensor t;
    gfp_buffer buffer;
    uint64_t bytes;
    unsigned char *image; /* what the buffer held before the launch */
    bool present;
} pc_dtensor;

/* Strides and placement of a logical shape in a layout. bdim: the dim of
 * stride 0 for PC_BROADCAST (-1: none). */
void pc_view_plan(int32_t dtype, int rank, const int64_t *sizes, pc_layout layout, int bdim,
                  int64_t *strides, uint64_t *offset, uint64_t *bytes);
/* Allocates, fills with sentinel bytes and writes a's values (a NULL: a
 * write-only output of the given dtype and shape). */
gfp_status pc_dtensor_make(pc_device *d, pc_dtensor *t, const pc_array *a, int32_t dtype,
                           int rank, const int64_t *sizes, pc_layout layout, int bdim,
                           uint64_t seed);
/* Reads the buffer back: the view's values into out (when non-NULL), and
 * checks that every byte outside the view (all bytes when whole_buffer)
 * still holds what was written. Returns false with the problem described. */
bool pc_dtensor_read(pc_device *d, const pc_dtensor *t, pc_array *out, bool whole_buffer,
                     char *problem, size_t len, gfp_status *st);
void pc_dtensor_free(pc_device *d, pc_dtensor *t);

/* ------------------------------------------------------------ comparison (compare.c) */
typedef enum pc_tol {
    PC_TOL_EXACT,          /* integers, bools, indices, copies and selections */
    PC_TOL_ELEMENTWISE,    /* correctly rounded arithmetic */
    PC_TOL_TRANSCENDENTAL, /* libm functions */
    PC_TOL_ACCUMULATE      /* sums: reductions, matmul, conv, norms, softmax */
} pc_tol;

typedef struct pc_cmp {
    bool ok;
    const char *metric; /* "nmse" or "mismatches" */
    double error, threshold;
    char detail[256];
} pc_cmp;

double pc_threshold(pc_tol tol, int32_t dtype);
/* got (the plugin's dtype) against want (the oracle's, maybe wider). */
void pc_compare(const pc_array *got, const pc_array *want, pc_tol tol, pc_cmp *r);

/* ------------------------------------------------------------ op cases */
typedef struct pc_arg {
    bool absent; /* an optional input passed as NULL */
    int32_t dtype;
    int rank;
    int64_t sizes[GFP_MAX_RANK];
    pc_gen gen;
    double lo, hi;
    bool inout;        /* input: updated in place; output: initial contents matter */
    bool no_broadcast; /* keep out of PC_BROADCAST */
    pc_tol tol;        /* outputs and inout inputs */
} pc_arg;

typedef union pc_params {
    gfp_scalar_params scalar;
    gfp_fill_params fill;
    gfp_arange_params arange;
    gfp_clamp_params clamp;
    gfp_tri_params tri;
    gfp_reduce_params reduce;
    gfp_dim_params dim;
    gfp_layer_norm_params layer_norm;
    gfp_batch_norm_params batch_norm;
    gfp_conv2d_params conv;
    gfp_pool2d_params pool;
    gfp_random_params random;
    gfp_adam_params adam;
    gfp_fft_params fft;
} pc_params;

struct pc_ctx;
typedef struct pc_case pc_case;
struct pc_case {
    char label[160]; /* shapes and parameters, for the report */
    uint32_t n_in, n_out;
    pc_arg in[8], out[4];
    pc_params params;
    bool has_params;
    bool large; /* contiguous layout only */
    bool contiguous_only;
    /* Called after the inputs are generated, to derive some from others
     * (max-pool indices from x through the oracle). false: skip the case. */
    bool (*prepare)(const pc_case *c, pc_array *in, struct pc_ctx *ctx);
};

typedef struct pc_combo {
    uint32_t n_in, n_out;
    int32_t in[8], out[4];
} pc_combo;

#define PC_OP_ELEMENTWISE 0x1u /* in-place layout applies; empty outputs never launched */

typedef struct pc_op {
    uint32_t id;
    const char *name;
    uint32_t flags;
    /* Candidate dtype combinations for a device storing `dtypes` (bit set). */
    int (*combos)(const struct pc_op *op, uint32_t dtypes, pc_combo *out, int max);
    /* The k-th case of a combination; false past the last. */
    bool (*build)(const struct pc_op *op, const pc_combo *cb, int k, bool quick, pc_case *c);
} pc_op;

#define PC_MAX_COMBOS 64

/* The catalogue: one entry per row of graft_ops.def, in the table's order,
 * with the name the table gives. Each cases file fills in the combinations
 * and the case builder of the families it covers (false: not one of them). */
bool pc_cases_elementwise(const gfp_op_info *row, pc_op *op);
bool pc_cases_reduce(const gfp_op_info *row, pc_op *op);
bool pc_cases_nn(const gfp_op_info *row, pc_op *op);
bool pc_cases_optim(const gfp_op_info *row, pc_op *op);
bool pc_cases_fft(const gfp_op_info *row, pc_op *op);
bool pc_cases_rnn(const gfp_op_info *row, pc_op *op);
/* Every op of the table with cases; *n receives the count. */
const pc_op *pc_catalogue(size_t *n);
/* The rows no cases file covers (a checker without cases for a new op says
 * so instead of passing it silently): their count, names in `names`. */
size_t pc_catalogue_missing(const char **names, size_t max);
const pc_op *pc_op_by_id(uint32_t id);
const char *pc_op_name(uint32_t id); /* "op N" for unknown ids */

/* Helpers for the case builders (runner.c). */
void pc_case_init(pc_case *c, uint32_t n_in, uint32_t n_out);
void pc_arg_set(pc_arg *a, int32_t dtype, int rank, const int64_t *sizes, pc_gen gen, double lo,
                double hi);
void pc_label(pc_case *c, const char *fmt, ...) PC_PRINTF(2, 3);
/* Appends each stored real dtype d as (d, ..., d) -> (d, ...) with n_in/n_out. */
int pc_combos_same(uint32_t dtypes, uint32_t n_in, uint32_t n_out, pc_combo *out, int max);
/* The same for each stored complex dtype (c64, c128), for the ops the
 * reference computes on them; out_dtype -1: d, PC_PART_DTYPE: d's part
 * dtype (ABS), else that dtype (bool for EQ / NE). */
#define PC_PART_DTYPE (-2)
int pc_combos_complex(uint32_t dtypes, uint32_t n_in, uint32_t n_out, int32_t out_dtype,
                      pc_combo *out, int max);
uint32_t pc_stored_dtypes(uint32_t dtypes); /* the known bits of props.dtypes */

/* ------------------------------------------------------------ the run */
typedef struct pc_ctx {
    pc_device *dev;    /* under test */
    pc_device *oracle; /* the reference's device 0 */
    int device_index;
} pc_ctx;

/* Runs one op on a device with host arrays, contiguous (the oracle's path,
 * also used by prepare hooks and gradcheck). outs must be initialised with
 * dtype and shape; inout outputs hold their initial contents. */
gfp_status pc_run_simple(pc_device *d, uint32_t op, const pc_array *in, const bool *absent,
                         uint32_t n_in, pc_array *out, uint32_t n_out, const void *params,
                         char *why, size_t why_len);

void pc_run_ops(pc_ctx *ctx);                    /* runner.c */
void pc_check_memory(pc_ctx *ctx);               /* checks.c */
void pc_check_errors(pc_ctx *ctx);               /* checks.c */
void pc_check_threads(pc_ctx *ctx);              /* checks.c */
void pc_check_graphs(pc_ctx *ctx);               /* checks.c: ABI 1.3 graph slots */
void pc_check_leaks(pc_ctx *ctx);                /* checks.c */
void pc_check_gradients(pc_ctx *ctx);            /* gradcheck.c */
bool pc_op_selected(const char *name);           /* main.c: --op filter */
void pc_progress(const char *fmt, ...) PC_PRINTF(1, 2); /* main.c: what runs now */

/* ------------------------------------------------------------ report (report.c) */
typedef enum pc_status { PC_PASS, PC_FAIL, PC_UNSUPPORTED, PC_SKIP } pc_status;

typedef struct pc_result {
    int device; /* -1: the plugin as a whole */
    const char *suite;
    char what[48];   /* op or check */
    char dtypes[64]; /* "f32,f32->f32" */
    char layout[16];
    pc_status status;
    int cases;
    const char *metric;
    double error, threshold;
    char shape[160];
    char message[512];
} pc_result;

void pc_report_begin(const char *plugin_path, const char *oracle_path);
void pc_report_plugin(const pc_plugin *p); /* after a successful load */
void pc_report_device(int index, const gfp_device_props *props);
void pc_report_add(const pc_result *r);
/* A check without numbers: status and a printf message. */
void pc_report_check(int device, const char *suite, const char *what, pc_status st,
                     const char *fmt, ...) PC_PRINTF(5, 6);
void pc_report_note(const char *fmt, ...) PC_PRINTF(1, 2); /* a line in the text report */
long pc_report_failures(void);
long pc_report_count(pc_status st);
/* Prints the summaries and writes --json. Returns false when the JSON file
 * cannot be written. */
bool pc_report_finish(void);

#endif
