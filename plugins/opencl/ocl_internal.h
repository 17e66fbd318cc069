/* SPDX-License-Identifier: BSD-3-Clause */
/* ocl_internal.h — what the OpenCL plugin's files share.
 *
 * The plugin links nothing: the ICD loader (libOpenCL.so.1) is opened at
 * init() and its entry points land in `ocl` (ocl_runtime.c). Without it, or
 * without any platform, the plugin still loads and reports zero devices with
 * the reason.
 *
 * One graft device per OpenCL device of every platform, each with its own
 * context and in-order queue. A gfp_buffer is an ocl_buffer (a cl_mem plus its
 * size, so that every view is checked against its buffer); kernels take the
 * cl_mem and an element offset, so no sub-buffer (and no base-address
 * alignment rule) is involved.
 *
 * Kernels are OpenCL C sources embedded in the plugin (kernels/ *.cl), one
 * program per op family, built on first use per device and cached in memory
 * and on disk (ocl_program.c). Each op family lives in its own file and
 * exports
 *   uint32_t   ocl_<family>_support(const ocl_device *d, const gfp_op_query *q);
 *   gfp_status ocl_<family>_launch(ocl_device *d, uint32_t op, const gfp_tensor *const *in,
 *                                  uint32_t n_in, const gfp_tensor *const *out,
 *                                  uint32_t n_out, const void *params);
 * ocl_plugin.c routes query_op and launch to them by the op's family
 * (graft_ops.def), after the kit's launch preamble (plugin_kit.h) has checked
 * the counts, the params struct and every tensor descriptor. */
#ifndef GRAFT_OCL_INTERNAL_H
#define GRAFT_OCL_INTERNAL_H

#define CL_TARGET_OPENCL_VERSION 120
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <stdbool.h>
#include <stdint.h>

#include "pk_fuse.h"
#include "pk_widen.h"
#include "plugin_kit.h"

#if defined(__GNUC__)
#define OCL_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define OCL_PRINTF(a, b)
#endif

/* ------------------------------------------------------------------ runtime */
/* The OpenCL 1.2 entry points the plugin uses (ocl_runtime.c). */
typedef struct ocl_api {
    cl_int (*GetPlatformIDs)(cl_uint, cl_platform_id *, cl_uint *);
    cl_int (*GetPlatformInfo)(cl_platform_id, cl_platform_info, size_t, void *, size_t *);
    cl_int (*GetDeviceIDs)(cl_platform_id, cl_device_type, cl_uint, cl_device_id *, cl_uint *);
    cl_int (*GetDeviceInfo)(cl_device_id, cl_device_info, size_t, void *, size_t *);
    cl_context (*CreateContext)(const cl_context_properties *, cl_uint, const cl_device_id *,
                                void(CL_CALLBACK *)(const char *, const void *, size_t, void *),
                                void *, cl_int *);
    cl_int (*ReleaseContext)(cl_context);
    cl_command_queue (*CreateCommandQueue)(cl_context, cl_device_id, cl_command_queue_properties,
                                           cl_int *);
    cl_int (*ReleaseCommandQueue)(cl_command_queue);
    cl_mem (*CreateBuffer)(cl_context, cl_mem_flags, size_t, void *, cl_int *);
    cl_int (*ReleaseMemObject)(cl_mem);
    cl_int (*RetainMemObject)(cl_mem);
    cl_program (*CreateProgramWithSource)(cl_context, cl_uint, const char **, const size_t *,
                                          cl_int *);
    cl_program (*CreateProgramWithBinary)(cl_context, cl_uint, const cl_device_id *,
                                          const size_t *, const unsigned char **, cl_int *,
                                          cl_int *);
    cl_int (*BuildProgram)(cl_program, cl_uint, const cl_device_id *, const char *,
                           void(CL_CALLBACK *)(cl_program, void *), void *);
    cl_int (*GetProgramBuildInfo)(cl_program, cl_device_id, cl_program_build_info, size_t, void *,
                                  size_t *);
    cl_int (*GetProgramInfo)(cl_program, cl_program_info, size_t, void *, size_t *);
    cl_int (*ReleaseProgram)(cl_program);
    cl_kernel (*CreateKernel)(cl_program, const char *, cl_int *);
    cl_int (*ReleaseKernel)(cl_kernel);
    cl_int (*GetKernelWorkGroupInfo)(cl_kernel, cl_device_id, cl_kernel_work_group_info, size_t,
                                     void *, size_t *);
    cl_int (*SetKernelArg)(cl_kernel, cl_uint, size_t, const void *);
    cl_int (*EnqueueNDRangeKernel)(cl_command_queue, cl_kernel, cl_uint, const size_t *,
                                   const size_t *, const size_t *, cl_uint, const cl_event *,
                                   cl_event *);
    cl_int (*EnqueueReadBuffer)(cl_command_queue, cl_mem, cl_bool, size_t, size_t, void *,
                                cl_uint, const cl_event *, cl_event *);
    cl_int (*EnqueueWriteBuffer)(cl_command_queue, cl_mem, cl_bool, size_t, size_t, const void *,
                                 cl_uint, const cl_event *, cl_event *);
    cl_int (*EnqueueCopyBuffer)(cl_command_queue, cl_mem, cl_mem, size_t, size_t, size_t, cl_uint,
                                const cl_event *, cl_event *);
    cl_int (*EnqueueFillBuffer)(cl_command_queue, cl_mem, const void *, size_t, size_t, size_t,
                                cl_uint, const cl_event *, cl_event *);
    cl_int (*Finish)(cl_command_queue);
    cl_int (*Flush)(cl_command_queue);
    cl_int (*WaitForEvents)(cl_uint, const cl_event *);
    cl_int (*ReleaseEvent)(cl_event);
} ocl_api;

extern ocl_api ocl;
/* Opens the ICD loader and fills `ocl`. On failure writes why into `why`. */
bool ocl_api_load(char *why, size_t len);
/* "CL_OUT_OF_RESOURCES" for -5, "CL error -1234" for unknown codes (static
 * buffer per thread). */
const char *ocl_error_name(cl_int err);
/* The graft status a CL error maps to (allocation failures are OUT_OF_MEMORY,
 * a lost device DEVICE, ...). */
gfp_status ocl_status_of(cl_int err);

/* secure_getenv where the C library has it. */
const char *ocl_getenv(const char *name);

/* ------------------------------------------------------------------ buffers */
#define OCL_BUFFER_MAGIC 0x6f636c6275666621ull /* "oclbuff!" */
typedef struct ocl_buffer {
    uint64_t magic;
    cl_mem mem;
    uint64_t size;
    /* The device's live buffers (from buffer_alloc), so that they can all be
     * released while the driver is still there at process exit. */
    struct ocl_buffer *prev, *next;
} ocl_buffer;

/* ------------------------------------------------------------------ devices */
/* Op families, each one program (kernels/<file>.cl). */
typedef enum ocl_prog_id {
    OCL_PROG_COPY,   /* copy, fill, arange, tril/triu, where */
    OCL_PROG_MATH,   /* unary, binary, compare, logical (generated op math) */
    OCL_PROG_RANDOM,
    OCL_PROG_REDUCE,
    OCL_PROG_MATMUL,
    OCL_PROG_NORM,
    OCL_PROG_INDEX,
    OCL_PROG_CONV,
    OCL_PROG_POOL,
    OCL_PROG_COMPLEX, /* c64 / c128: elementwise, sum/mean/prod, matmul */
    OCL_PROG_FFT,
    OCL_PROG_OPTIM,   /* ADAM_UPDATE */
    OCL_PROG_COUNT
} ocl_prog_id;

typedef struct ocl_kernel_slot {
    char *name;
    int prog;
    cl_kernel kernel;
} ocl_kernel_slot;

#define OCL_KERNEL_SLOTS 2048

/* Faults injected on request (GRAFT_OPENCL_FAULT), so that tests can see the
 * error paths a working device never takes. */
typedef enum ocl_fault {
    OCL_FAULT_NONE = 0,
    OCL_FAULT_BUILD,   /* kernel sources fail to compile */
    OCL_FAULT_ENQUEUE, /* kernel launches fail with CL_OUT_OF_RESOURCES */
    OCL_FAULT_LOST,    /* reads fail as from a lost device */
    /* "enqueue-at": the N-th kernel launch (and each later one) fails, N
     * read from GRAFT_OPENCL_FAULT_AT at each launch; the count restarts
     * when its value changes (a test fails each launch of an op in turn) */
    OCL_FAULT_ENQUEUE_AT
} ocl_fault;

typedef struct ocl_graph ocl_graph;

/* Tables of roots of unity the FFT keeps per sign: a long transform's
 * four-step split reads three (n and its two factors). */
#define OCL_FFT_ROOT_TABLES 4

typedef struct ocl_device {
    /* Identity, from init() (no context yet). */
    cl_platform_id platform;
    cl_device_id id;
    char name[128];      /* the device's name */
    char platform_name[96];
    char version[96];    /* CL_DEVICE_VERSION */
    char driver[96];     /* CL_DRIVER_VERSION */
    cl_device_type type;
    uint64_t memory_bytes, max_alloc_bytes;
    size_t max_wg;       /* CL_DEVICE_MAX_WORK_GROUP_SIZE */
    uint64_t local_mem;  /* CL_DEVICE_LOCAL_MEM_SIZE */
    bool fp64;           /* cl_khr_fp64 (and not disabled by GRAFT_OPENCL_DISABLE_FP64) */
    bool int64_atomics;  /* cl_khr_int64_base_atomics */
    bool cr_divide;      /* correctly rounded f32 divide/sqrt can be requested */
    bool fma;            /* f32 fused multiply-add in hardware (CL_FP_FMA) */

    /* Opened state. */
    bool open;
    cl_context ctx;
    cl_command_queue queue;
    cl_program progs[OCL_PROG_COUNT];
    /* Size of each program's binary as last read from or written to the disk
     * cache: a larger one holds kernels compiled since (PoCL keeps compiled
     * kernels in its binaries), worth writing back. */
    uint64_t prog_cached_size[OCL_PROG_COUNT];
    /* A program that failed to build fails again at once with the same
     * message, instead of compiling again on every launch. */
    gfp_status prog_status[OCL_PROG_COUNT];
    char *prog_error[OCL_PROG_COUNT];
    ocl_kernel_slot kernels[OCL_KERNEL_SLOTS];
    cl_mem flag;          /* 2 words: index checks report a bad index here */
    ocl_fault fault;
    uint64_t fault_count;   /* OCL_FAULT_ENQUEUE_AT: launches since the value changed */
    char fault_at[24];      /* ... and the value they were counted for */
    double compile_seconds; /* building or loading programs (logged at close) */
    ocl_buffer scratch;     /* staging for kernels that need other layouts (matmul) */
    ocl_buffer pack;        /* matmul's packed panels of a (CPU devices), apart from
                             * scratch, which a conv's GEMM tiles occupy */
    ocl_buffer *live;       /* buffers from buffer_alloc not yet freed */
    /* The FFT's last tables of roots of each sign (ocl_fft.c): [0] sign -1,
     * [1] sign +1, of length fft_roots_n[][], the least recently used
     * replaced first; released with the device. */
    cl_mem fft_roots[2][OCL_FFT_ROOT_TABLES];
    int64_t fft_roots_n[2][OCL_FFT_ROOT_TABLES];
    uint64_t fft_roots_used[2][OCL_FFT_ROOT_TABLES];
    uint64_t fft_roots_clock;
    /* fx_block's largest work-group on this device (a power of two), 0
     * until asked (ocl_fft.c). */
    size_t fft_block_wg;
    /* Captured graphs (ocl_graph.c). */
    ocl_graph *recording;  /* graph_create running: kernel calls are recorded */
    ocl_graph *refreshing; /* graph_launch setting a node's arguments anew */
    ocl_graph *graphs;     /* live graphs, released with the device */
    /* The fused runs' programs (ocl_fuse.c), by their generated source: runs
     * of the same shape share one build (a model's layers, its parameters'
     * updates). Released with the device; a kernel keeps its program. */
    struct ocl_fused_prog *fused_progs;
    uint32_t n_fused_progs;
} ocl_device;

/* ------------------------------------------------------------------ programs (ocl_program.c) */
/* The kernel `name` of program `prog`, built (and cached) on first use. */
gfp_status ocl_get_kernel(ocl_device *d, ocl_prog_id prog, const char *name, const char *op,
                          cl_kernel *out);
/* Writes the binaries of programs that compiled kernels since they were
 * cached (PoCL keeps compiled kernels in its binaries) and releases them. */
void ocl_programs_release(ocl_device *d);
/* Build options every program of d gets ("-DGF_HAS_FP64=1 ..."). */
void ocl_build_options(const ocl_device *d, char *buf, size_t len);

/* ------------------------------------------------------------------ kernel calls (ocl_launch.c) */
/* Building one kernel launch: the first failing step keeps its status, so
 * arguments can be added unchecked and the result read once at the end. */
typedef struct ocl_call {
    ocl_device *dev;
    const char *op;     /* the op, for messages */
    const char *kname;  /* the kernel */
    cl_kernel k;
    cl_uint nargs;
    gfp_status st;
    uint32_t entry; /* recording or refreshing a graph: its kernel entry */
} ocl_call;

void ocl_call_begin(ocl_call *c, ocl_device *d, ocl_prog_id prog, const char *kname,
                    const char *op);
void ocl_arg_raw(ocl_call *c, size_t size, const void *value);
void ocl_arg_mem(ocl_call *c, cl_mem m);
void ocl_arg_i32(ocl_call *c, int32_t v);
void ocl_arg_i64(ocl_call *c, int64_t v);
void ocl_arg_u64(ocl_call *c, uint64_t v);
void ocl_arg_f32(ocl_call *c, float v);
void ocl_arg_f64(ocl_call *c, double v);
void ocl_arg_long8(ocl_call *c, const int64_t *v, int n); /* n <= 8, rest 0 */
void ocl_arg_local(ocl_call *c, size_t bytes);
/* A scalar parameter in the compute type of dtype (f32 float, f64 double,
 * integers and bool long). */
void ocl_arg_scalar(ocl_call *c, int32_t dtype, double v, int64_t iv);
/* Enqueues the kernel; global sizes are rounded up to the local sizes. */
gfp_status ocl_call_run(ocl_call *c, cl_uint dims, const size_t *global, const size_t *local);
/* Whether this kernel launch is to fail by an injected fault (counting it
 * for OCL_FAULT_ENQUEUE_AT); the words to add to the error message. */
bool ocl_fault_launch(ocl_device *d, const char **why);
/* 1-D launch of n work-items in groups of `group` (rounded up). */
gfp_status ocl_call_run1(ocl_call *c, uint64_t n, size_t group);

/* A CL failure of op: the message names plugin op, what failed and the
 * error's name. */
gfp_status ocl_cl_fail(cl_int err, const char *op, const char *what);

/* The tensor's cl_mem and its element offset (the offset is a multiple of
 * the element size: checked by ocl_check_tensor). */
cl_mem ocl_mem(const gfp_tensor *t);
int64_t ocl_elem_offset(const gfp_tensor *t);

/* Elementwise geometry of up to four tensors of one shape (t[0] the output):
 * size-1 dims dropped and dims merged where every tensor allows, so a
 * contiguous launch has rank 1 and unit strides. */
typedef struct ocl_geom {
    int n, rank;
    int64_t numel;
    int64_t sizes[GFP_MAX_RANK];
    int64_t strides[4][GFP_MAX_RANK];
    bool contiguous;
} ocl_geom;
void ocl_geom_init(ocl_geom *g, const gfp_tensor *const *t, int n);
/* The kernel form the geometry takes (kernels/common.cl): 'c' contiguous,
 * '2' rank <= 2 (no loop in the kernel), 's' any rank. */
char ocl_geom_form(const ocl_geom *g);
/* True when kernels walk rows, tiles or planes per item on this device
 * (strided elementwise, transposing copies, max_pool2d's gradient): CPU
 * devices, or as GRAFT_OPENCL_STRIDED says (ocl_launch.c). */
bool ocl_walks_rows(const ocl_device *d);
/* Arguments of the strided form for tensor k: (mem, offset) are the caller's;
 * these are the shared ones: sizes, rank, inner, outer. */
void ocl_geom_args(ocl_call *c, const ocl_geom *g);
void ocl_geom_strides(ocl_call *c, const ocl_geom *g, int k);
/* Runs a kernel in the contiguous (1-D, n items) or strided (2-D, inner x
 * outer) form the geometry calls for. */
gfp_status ocl_geom_run(ocl_call *c, const ocl_geom *g);

/* Grows the device's scratch buffer to at least `bytes` (its contents are
 * not kept). Work already queued keeps the old buffer alive. */
gfp_status ocl_scratch(ocl_device *d, uint64_t bytes, const char *op);
/* The same for the device's pack buffer (ocl_matmul.c). */
gfp_status ocl_pack_buffer(ocl_device *d, uint64_t bytes, const char *op);
/* A contiguous descriptor of t's dtype and sizes in the scratch buffer, at
 * byte offset `at`. */
gfp_tensor ocl_scratch_view(ocl_device *d, const gfp_tensor *t, uint64_t at);
/* dst = src, element by element (same sizes, any strides; a dtype that
 * differs is converted as COPY converts). */
gfp_status ocl_copy_tensor(ocl_device *d, const gfp_tensor *dst, const gfp_tensor *src,
                           const char *op);

/* Reads the device's flag words (waiting for earlier work): *set when a
 * kernel reported something, with its value; then clears them. */
gfp_status ocl_read_flag(ocl_device *d, const char *op, bool *set, int64_t *value);

/* ------------------------------------------------------------------ families */
/* One handler per family (PK_FAMILIES in plugin_kit.h). */
#define OCL_FAMILY(f, set)                                                                 \
    uint32_t ocl_##f##_support(const ocl_device *d, const gfp_op_query *q);                                                        \
    gfp_status ocl_##f##_launch(ocl_device *d, uint32_t op, const gfp_tensor *const *in, uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out, const void *params);
PK_FAMILIES(OCL_FAMILY)
#undef OCL_FAMILY

/* f16 / bf16 for the families with f32 kernels only (ocl_half.c): widened
 * into f32 temporaries, run by the family's f32 launch, rounded once. */
typedef gfp_status (*ocl_launch_fn)(ocl_device *d, uint32_t op, const gfp_tensor *const *in,
                                    uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                                    const void *params);
/* support's answer for q with its 16-bit dtypes (one of them per query) read
 * as f32. Whether a launch needs the copies: pk_widen_operands. */
uint32_t ocl_half_widened_support(const ocl_device *d, const gfp_op_query *q,
                                  uint32_t (*support)(const ocl_device *, const gfp_op_query *));
gfp_status ocl_half_widened_launch(ocl_device *d, uint32_t op, const gfp_tensor *const *in,
                                   uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                                   const void *params, ocl_launch_fn launch);

/* Whether the norm family's op takes 16-bit tensors through f32 copies
 * (LAYER_NORM, BATCH_NORM; the softmaxes have 16-bit kernels). */
bool ocl_norm_widens(uint32_t op);

/* FFT (ocl_fft.c), routed by ocl_plugin.c beside the kit's families. */
uint32_t ocl_fft_support(const ocl_device *d, const gfp_op_query *q);
gfp_status ocl_fft_launch(ocl_device *d, uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                          const gfp_tensor *const *out, uint32_t n_out, const void *params);

/* ADAM_UPDATE (ocl_optim.c), routed by ocl_plugin.c beside the kit's families. */
uint32_t ocl_optim_support(const ocl_device *d, const gfp_op_query *q);
gfp_status ocl_optim_launch(ocl_device *d, uint32_t op, const gfp_tensor *const *in,
                            uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                            const void *params);

/* Releases the FFT's cached tables (at device close). */
void ocl_fft_release(ocl_device *d);

/* The complex dtypes (ocl_complex.c): c64 always, c128 with doubles. The
 * elementwise, reduce and matmul families hand complex operands here. */
bool ocl_is_complex(int32_t dt);
bool ocl_complex_ew_accepts(const ocl_device *d, uint32_t op, const int32_t *in,
                            const int32_t *out);
gfp_status ocl_complex_ew_launch(ocl_device *d, uint32_t op, const gfp_tensor *const *in,
                                 uint32_t n_in, const gfp_tensor *const *out, const void *params);
uint32_t ocl_complex_reduce_support(const ocl_device *d, const gfp_op_query *q);
gfp_status ocl_complex_reduce_launch(ocl_device *d, uint32_t op, const gfp_tensor *x,
                                     const gfp_tensor *y, const void *params);
uint32_t ocl_complex_matmul_support(const ocl_device *d, const gfp_op_query *q);
gfp_status ocl_complex_matmul_launch(ocl_device *d, const gfp_tensor *a, const gfp_tensor *b,
                                     const gfp_tensor *y);
/* y = x converted (x complex or real, y complex; any strides). */
gfp_status ocl_complex_copy(ocl_device *d, const gfp_tensor *y, const gfp_tensor *x,
                            const char *op);
/* Begins the elementwise kernel stem_<form> of program prog over t[0..n)
 * (t[0] the output): geometry, then every tensor's arguments. The kernel's
 * name is written into name[len], which must outlive the call (c refers to
 * it). */
void ocl_complex_begin(ocl_call *c, char *name, size_t len, ocl_device *d, ocl_prog_id prog,
                       const char *stem, const char *op, ocl_geom *g, const gfp_tensor *const *t,
                       int n);

/* The "opencl.gemm" extension: 0 GRAFT_OPENCL_GEMM decides, 1 graft, 2 CLBlast. */
void ocl_matmul_force_gemm(int mode);
/* CLBlast GEMM (ocl_clblast.c): loaded on first use; false when absent. */
bool ocl_clblast_available(void);
/* y = a @ b for row-major views described by (offset, leading dim, transposed);
 * returns GFP_ERR_UNSUPPORTED when CLBlast is absent or refuses. */
gfp_status ocl_clblast_gemm(ocl_device *d, int32_t dtype, bool ta, bool tb, uint64_t m,
                            uint64_t n, uint64_t k, cl_mem a, uint64_t a_off, uint64_t lda,
                            cl_mem b, uint64_t b_off, uint64_t ldb, cl_mem y, uint64_t y_off,
                            uint64_t ldy);

/* ------------------------------------------------------------------ graphs (ocl_graph.c) */
/* The ABI's graph slots. graph_create runs each node's family once with the
 * device in recording mode: every kernel call gets a cl_kernel of its own
 * (created from the program, not the shared one of ocl_get_kernel), its
 * arguments are set on it once, and ocl_call_run notes the geometry instead
 * of enqueueing. graph_launch enqueues the list. A node whose parameter
 * struct changed (the optimisers' constants) is run through its family
 * again in refresh mode: the arguments are set again on its own kernels,
 * nothing is enqueued. Nodes whose launch enqueues other than kernels (host
 * writes, fills, index checks read back, CLBlast) are launched eagerly in
 * their place. */
gfp_status ocl_graph_create(void *device, const gfp_graph_node *nodes, uint32_t n_nodes,
                            void **graph);
gfp_status ocl_graph_launch(void *device, void *graph);
void ocl_graph_destroy(void *device, void *graph);
/* Graph launches on every device since load ("opencl.stats"). */
uint64_t ocl_graph_launches(void);
/* Releases every graph of d (the device closes). */
void ocl_graphs_release(ocl_device *d);
/* While recording or refreshing: the kernel of call c (c->k on entry is the
 * shared one of ocl_get_kernel, the program built). */
gfp_status ocl_graph_kernel(ocl_call *c, ocl_prog_id prog);
/* While recording: notes c's geometry. Refreshing: checks it is the one
 * recorded. */
gfp_status ocl_graph_run(ocl_call *c, cl_uint dims, const size_t *global, const size_t *local);
/* ---- fused runs of captured graphs (ocl_fuse.c) */
#define OCL_FUSE_MAX_STEPS 8 /* a longer run is split (the arguments' size) */
/* One launch of a run: y = op(a [, b]) in f32, y contiguous, each input
 * contiguous or one element broadcast. */
typedef struct ocl_fuse_step {
    const gfp_graph_node *node; /* the graph's copy: its params are read at launch */
    const char *name;           /* the op's name in the element functions */
    int n_t;                    /* 2 (unary) or 3 (binary) */
    int64_t n;
    cl_mem mem[3];
    int64_t off[3];             /* elements */
    bool bcast[3];
    pk_range r[3];              /* pk_fuse.h's ranges, r[0] written */
    bool has_params;
    pk_unary_args ua;           /* the scalars last set */
    cl_uint arg;                /* a unary step's first scalar argument */
} ocl_fuse_step;
typedef struct ocl_fuse_run {
    uint32_t count;
    ocl_fuse_step *steps;
    cl_kernel k;
} ocl_fuse_run;
/* GRAFT_OPENCL_FUSE=0 turns fusion off (read at each graph_create). */
bool ocl_fuse_enabled(void);
/* Whether node can be a step of a run (*s filled). */
bool ocl_fuse_step_of(const gfp_graph_node *node, ocl_fuse_step *s);
/* Whether next may follow steps[0 .. count): same length, pk_fuse.h's rule,
 * at most OCL_FUSE_MAX_STEPS steps. */
bool ocl_fuse_joins(const ocl_fuse_step *steps, uint32_t count, const ocl_fuse_step *next);
/* A kernel per run, its arguments set (programs from d's cache, built
 * where missing); on failure nothing is left to release. */
gfp_status ocl_fuse_build(ocl_device *d, ocl_fuse_run *runs, uint32_t n_runs);
/* Enqueues run r (its unary scalars set again where the params changed). */
gfp_status ocl_fuse_enqueue(ocl_device *d, ocl_fuse_run *r);
void ocl_fuse_release(ocl_fuse_run *runs, uint32_t n_runs);
/* Drops d's cache of fused programs (the device closes). */
void ocl_fuse_programs_release(ocl_device *d);
/* Runs fused and the launches they cover, graphs created so far ("opencl.stats"). */
uint64_t ocl_fuse_runs(void);
uint64_t ocl_fuse_launches(void);
/* The name of an op computed by an f32 element function of kernels/ew_math.cl
 * (unary_<name>_f32_el / binary_<name>_f32_el) and its arity; NULL for
 * others (ocl_elementwise.c). */
const char *ocl_math_f32_name(uint32_t op, int *arity);
/* Builds source (element functions instantiated through ew_defs.cl's
 * macros, kernels calling them) after the prelude, the op math and those
 * macros, the kernel macros emptied, for d (ocl_program.c). */
gfp_status ocl_build_fused(ocl_device *d, const char *source, cl_program *out);

/* The family serving a launch, after the kit's checks (ocl_plugin.c). */
typedef struct ocl_family {
    uint32_t families; /* GFP_FAMILY_BIT()s it serves: the kit routes by it */
    uint32_t (*support)(const ocl_device *d, const gfp_op_query *q);
    gfp_status (*launch)(ocl_device *d, uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                         const gfp_tensor *const *out, uint32_t n_out, const void *params);
} ocl_family;
const ocl_family *ocl_route(ocl_device *d, uint32_t op, const gfp_tensor *const *in,
                            uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                            const void *params, gfp_status *st);
/* Whether a matmul of d may go to CLBlast (which enqueues its own kernels). */
bool ocl_matmul_may_use_clblast(const ocl_device *d);

#endif
