/* SPDX-License-Identifier: BSD-3-Clause */
/* internal.h — what the core's files share. Not installed.
 *
 * Conventions inside the core:
 *  - gf__error() records the thread's error and returns its status.
 *  - Functions returning a tensor return a new reference or NULL (error set).
 *  - gf__ret() is applied by every public function to the new reference it
 *    returns: it records the reference in the open scope (gf_scope_begin).
 *    A public function that calls other public functions for intermediates
 *    brackets that work with gf__scope_suspend()/gf__scope_resume() so the
 *    intermediates are not recorded.
 *  - dispatch.c is the only file that calls plugin function pointers. */
#ifndef GRAFT_INTERNAL_H
#define GRAFT_INTERNAL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>

#include "graft.h"
#include "graft_plugin.h"

#if defined(__GNUC__)
#define GF_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define GF_PRINTF(a, b)
#endif

/* ------------------------------------------------------------ checked arithmetic */
/* The one home of overflow-checked size and index arithmetic: each returns
 * true when the exact result fits in *r (and stores it), false on overflow
 * (then *r is unspecified). Every size, stride, offset or index computation
 * on values a caller can choose goes through these. */
static inline bool gf__add_ok(int64_t a, int64_t b, int64_t *r) {
    return !__builtin_add_overflow(a, b, r);
}
static inline bool gf__sub_ok(int64_t a, int64_t b, int64_t *r) {
    return !__builtin_sub_overflow(a, b, r);
}
static inline bool gf__mul_ok(int64_t a, int64_t b, int64_t *r) {
    return !__builtin_mul_overflow(a, b, r);
}
/* A double as int64 when it is an exact integer-valued number in range
 * (the cast itself is undefined outside [-2^63, 2^63)). */
static inline bool gf__double_to_i64(double v, int64_t *r) {
    if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0)) return false;
    *r = (int64_t)v;
    return true;
}

/* ------------------------------------------------------------ errors, log */
gf_status gf__error(gf_status status, const char *fmt, ...) GF_PRINTF(2, 3);
/* Records INVALID "<op>: <what> is NULL" unless an error is already pending
 * from an earlier failed call (NULL propagation keeps the first error). */
gf_status gf__null_arg(const char *op, const char *what);
/* INVALID unless init is GF_OPTS_INIT (graft/types.h): the struct was not
 * started from its _DEFAULT initialiser (macro, e.g. "GF_ADAM_OPTS_DEFAULT"). */
gf_status gf__opts_check(const char *op, const char *type, const char *macro, uint32_t init);
/* What a NULL argument should have been: picks the remedy of its message. */
typedef enum gf__arg_kind {
    GF__ARG_TENSOR,   /* a tensor: gf__null_arg's kind */
    GF__ARG_DEVICE,   /* a gf_device */
    GF__ARG_DICT,     /* a gf_tensor_dict */
    GF__ARG_ARRAY,    /* an array (sizes, dims, a list of tensors) */
    GF__ARG_FUNCTION, /* a callback */
    GF__ARG_OUT,      /* where a result is written */
    GF__ARG_STRING,   /* a NUL-terminated string */
    GF__ARG_HOST,     /* host memory that is read */
    GF__ARG_OPTIONS,  /* an options struct */
} gf__arg_kind;
/* gf__null_arg for an argument of the given kind. A NULL tensor, device or
 * dict may be the result of an earlier failed call (whose unread error is
 * kept); the other kinds are always the caller's mistake. */
gf_status gf__null_arg_of(const char *op, const char *what, gf__arg_kind kind);
/* The thread's error as gf_last_status / gf_last_error give it, without
 * marking it read (the library's own uses must not end NULL propagation). */
gf_status gf__status(void);
const char *gf__message(void);
/* The thread's error state: a failed call since the last public entry keeps
 * priority. */
bool gf__error_pending(void);
/* Code that graft calls back (custom functions, hooks, gradcheck functions):
 * take gf__error_seq() before the call; when it returns a failure s, pass
 * both to gf__callback_failed with where it ran ("MyFn: backward"). The
 * error recorded during the call is kept, prefixed with `where`, under
 * status s; with none recorded, the message says so (an older error of the
 * thread never stands in). Returns s. */
uint64_t gf__error_seq(void);
gf_status gf__callback_failed(gf_status s, uint64_t seq, const char *where_fmt, ...) GF_PRINTF(3, 4);
void gf__log(gfp_log_level level, const char *fmt, ...) GF_PRINTF(2, 3);
int gf__log_level(void);
/* secure_getenv where available. */
const char *gf__getenv(const char *name);

/* ------------------------------------------------------------ plugins, devices */
typedef struct gf_plugin_rec gf_plugin_rec;

typedef struct gf_cap_entry {
    uint64_t key;
    uint32_t support; /* GFP_SUPPORT_* */
    bool used;
} gf_cap_entry;

typedef struct gf_block gf_block; /* allocator block, alloc.c */

#define GF_ALLOC_BUCKETS 64
typedef struct gf_allocator {
    pthread_mutex_t lock;
    gf_block *free_lists[GF_ALLOC_BUCKETS]; /* cached blocks, hashed by size class */
    gf_block *lru_newest, *lru_oldest;      /* the same blocks, by the time they were freed */
    uint64_t bytes_in_use, peak, bytes_cached, plugin_allocs, plugin_frees;
    uint64_t live_blocks; /* blocks handed out and not yet returned */
    uint64_t cache_limit; /* bytes_cached never exceeds it (UINT64_MAX: no limit) */
} gf_allocator;

struct gf_device {
    gf_plugin_rec *plugin;
    uint32_t plugin_index; /* index among the plugin's devices */
    int type_index;        /* index among devices of the same type */
    char spec[48];         /* "cpu:0" */
    gfp_device_props props;
    void *handle;          /* the plugin's device, opened lazily */
    bool opened;
    pthread_mutex_t open_lock;
    pthread_mutex_t call_lock; /* serialises calls when not thread-safe */
    bool thread_safe;
    gf_allocator alloc;
    pthread_mutex_t cap_lock;
    gf_cap_entry caps[512];
    struct gf_fallback_rec *fallback; /* what fell back from it (fallback.c) */
};

struct gf_plugin_rec {
    char path[1024];
    void *dl;
    const gfp_plugin *table;
    size_t table_size; /* table->struct_size as the plugin declared it */
    void *ctx;
    bool loaded;
    char name[64];
    char version[64];
    uint32_t abi_major, abi_minor;
    char reason[512];
    gf_device *devices;
    uint32_t n_devices;
};

/* A plugin slot, or NULL when the plugin's table is too short to hold it. */
#define GF_SLOT(p, field) \
    (GFP_HAS_FIELD((p)->table_size, gfp_plugin, field) ? (p)->table->field : NULL)

/* The message a plugin attached (host->set_error) to its current failure. */
const char *gf__plugin_message(void);
void gf__plugin_message_clear(void);

/* Ensures plugins are loaded (thread-safe, idempotent). */
gf_status gf__ensure_init(void);
/* Access to loader results (loader.c). */
int gf__plugin_count(void);
gf_plugin_rec *gf__plugin_at(int i);

/* ------------------------------------------------------------ dispatch (dispatch.c) */
/* Every call into a plugin goes through these. They open the device lazily,
 * lock when the device is not thread-safe, apply the documented defaults of
 * optional slots and turn a failure into a graft error naming the plugin. */
gf_status gf__dev_open(gf_device *dev);
gf_status gf__dev_alloc(gf_device *dev, uint64_t nbytes, gfp_buffer *buf, void **host_ptr);
void gf__dev_free(gf_device *dev, gfp_buffer buf);
/* Adopts host memory as a buffer (ABI 1.1 buffer_wrap_host). UNSUPPORTED
 * when the device is not host-addressable or its plugin lacks the slot. */
gf_status gf__dev_wrap_host(gf_device *dev, void *host_ptr, uint64_t nbytes, gfp_buffer *buf);
bool gf__dev_can_adopt(const gf_device *dev);
gf_status gf__dev_write(gf_device *dev, gfp_buffer buf, uint64_t off, const void *src, uint64_t n);
gf_status gf__dev_read(gf_device *dev, gfp_buffer buf, uint64_t off, void *dst, uint64_t n);
gf_status gf__dev_copy(gf_device *dev, gfp_buffer src, uint64_t soff, gfp_buffer dst,
                       uint64_t doff, uint64_t n);
gf_status gf__dev_fill(gf_device *dev, gfp_buffer buf, uint64_t off, uint64_t n,
                       const void *pattern, uint32_t pattern_size);
gf_status gf__dev_sync(gf_device *dev);
/* Captured graphs (graph/): a launch prepared at capture, without checks
 * or capability queries; and the plugin's optional graph slots (ABI 1.3).
 * gf__dev_graph_create returns GF_ERR_UNSUPPORTED without recording an
 * error when the plugin has no slots or declines the nodes. */
gf_status gf__dev_launch_prepared(gf_device *dev, uint32_t op, const gfp_tensor *const *in,
                                  uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                                  const void *params);
bool gf__dev_has_graphs(const gf_device *dev);
gf_status gf__dev_graph_create(gf_device *dev, const gfp_graph_node *nodes, uint32_t n,
                               void **graph);
gf_status gf__dev_graph_launch(gf_device *dev, void *graph);
void gf__dev_graph_destroy(gf_device *dev, void *graph);

/* Runs one op on the device of the tensors (all on one device). Inputs may
 * contain NULL (absent optional inputs). Asks and caches the capability;
 * makes contiguous copies when the device needs them. opname names the op
 * in errors ("add"). */
gf_status gf__launch(gfp_op op, const char *opname, const gf_tensor *const *inputs, int n_in,
                     gf_tensor *const *outputs, int n_out, const void *params);

/* Whether the device of outputs[0] runs op itself on these tensors (their
 * dtypes and layout), for a core choosing between a device op and a formula
 * composed of other ops: false means compose, never fall back. A plugin that
 * predates the op answers its query_op with NONE. A failing query reads as
 * false (its error stays the thread's last, as a message for whatever fails
 * next). */
bool gf__dev_has_op(gfp_op op, const gf_tensor *const *inputs, int n_in,
                    gf_tensor *const *outputs, int n_out);
/* gf__launch on the tensors' own device only: where that device lacks the
 * op or its launch refuses it, GF_ERR_UNSUPPORTED (with its message), and
 * no fallback device runs it, nothing is counted as a fallback. For a core
 * that has a composed formula to run instead on the same device. */
gf_status gf__launch_own(gfp_op op, const char *opname, const gf_tensor *const *inputs, int n_in,
                         gf_tensor *const *outputs, int n_out, const void *params);

/* ------------------------------------------------------------ fallback (fallback.c) */
/* The device that runs an op d lacks, or NULL: strict mode, d is itself the
 * fallback device, or the thread is already inside a fallback. Never sets
 * an error (an unusable GRAFT_FALLBACK is reported by fallback_run). */
gf_device *gf__fallback_for(gf_device *d);
/* Runs the op on fb for tensors of d, as gf__launch documents; why is the
 * UNSUPPORTED error d gave (its message is kept for the error when fb lacks
 * the op too); refused_at_launch says which of the two ways d refused. */
gf_status gf__fallback_run(gf_device *d, gf_device *fb, gfp_op op, const char *opname,
                           const gf_tensor *const *in, int n_in, gf_tensor *const *out,
                           int n_out, const void *params, bool refused_at_launch);
/* The op's name in messages, profiles and counters: the caller's name
 * without a "gf_" prefix ("sin"), "random" for RANDOM. */
const char *gf__op_display(gfp_op op, const char *opname);
/* Records the UNSUPPORTED error of a device that lacks an (op, dtypes,
 * layout): names the public call, the op, the dtypes and a remedy that fits;
 * why (may be "") is appended after the dtypes. */
gf_status gf__unsupported_error(gf_device *d, gfp_op op, const char *opname,
                                const gf_tensor *const *in, int n_in, gf_tensor *const *out,
                                int n_out, bool strided, const char *why);
/* Records the DTYPE error of a tensor of dtype on a device that does not
 * store it, naming the public call that asked for it and what to do. */
gf_status gf__dtype_not_stored(gf_device *dev, gf_dtype dtype);
/* Forgets the fallback setting and what fell back (gf_shutdown). */
void gf__fallback_reset(void);
/* Forgets the default device (GRAFT_DEVICE is read again): the loader at
 * shutdown (device.c). */
void gf__device_reset_default(void);

/* In-place fast path (ops_elementwise.c): the elementwise ops that have an
 * in-place form, with a destination: the result is written into dst when it
 * fits (same sizes, dtype and device; no input overlapping dst other than
 * exactly), else into a new tensor; dst NULL is the public op. Returns the
 * result (dst retained, or the new tensor), NULL on failure. */
gf_tensor *gf__add_into(gf_tensor *dst, const gf_tensor *a, const gf_tensor *b);
gf_tensor *gf__sub_into(gf_tensor *dst, const gf_tensor *a, const gf_tensor *b);
gf_tensor *gf__mul_into(gf_tensor *dst, const gf_tensor *a, const gf_tensor *b);
gf_tensor *gf__div_into(gf_tensor *dst, const gf_tensor *a, const gf_tensor *b);
gf_tensor *gf__add_scalar_into(gf_tensor *dst, const gf_tensor *x, double s);
gf_tensor *gf__mul_scalar_into(gf_tensor *dst, const gf_tensor *x, double s);
gf_tensor *gf__add_scalar_int_into(gf_tensor *dst, const gf_tensor *x, int64_t s);
gf_tensor *gf__mul_scalar_int_into(gf_tensor *dst, const gf_tensor *x, int64_t s);
gf_tensor *gf__clamp_into(gf_tensor *dst, const gf_tensor *x, double min, double max);
gf_tensor *gf__clamp_int_into(gf_tensor *dst, const gf_tensor *x, int64_t min, int64_t max);
gf_tensor *gf__exp_into(gf_tensor *dst, const gf_tensor *x);
gf_tensor *gf__tanh_into(gf_tensor *dst, const gf_tensor *x);
gf_tensor *gf__sigmoid_into(gf_tensor *dst, const gf_tensor *x);
gf_tensor *gf__relu_into(gf_tensor *dst, const gf_tensor *x);
gf_tensor *gf__masked_fill_into(gf_tensor *dst, const gf_tensor *x, const gf_tensor *mask,
                                double value);

/* ------------------------------------------------------------ memory (alloc.c) */
typedef struct gf_storage {
    atomic_long refcount;
    gf_device *device;
    gfp_buffer buffer;
    void *host_ptr; /* non-NULL on host-addressable devices */
    uint64_t nbytes;
    gf_block *block; /* NULL for adopted memory */
    atomic_uint_fast64_t version;
    bool inference; /* allocated in inference mode: an inference tensor */
    /* Adopted memory (gf__storage_adopt): its owner's release, called once
     * after the plugin let go of the buffer. */
    void (*release)(void *ctx);
    void *release_ctx;
} gf_storage;

gf_storage *gf__storage_new(gf_device *dev, uint64_t nbytes);
/* A storage over nbytes of host memory the caller owns, without a copy;
 * release(ctx) (may be NULL) runs when the last reference goes. NULL with
 * the error set on failure (release is then not called). */
gf_storage *gf__storage_adopt(gf_device *dev, void *host_ptr, uint64_t nbytes,
                              void (*release)(void *ctx), void *ctx);
void gf__storage_retain(gf_storage *s);
void gf__storage_release(gf_storage *s);
gf_status gf__alloc_block(gf_device *dev, uint64_t nbytes, gf_block **out, gfp_buffer *buf,
                          void **host_ptr);
void gf__free_block(gf_device *dev, gf_block *b);
void gf__allocator_init(gf_allocator *a, const gfp_device_props *props);
void gf__allocator_release_all(gf_device *dev); /* empty cache */
/* Graph pools (alloc.c; used by graph/): see gf_graph_pool there. */
typedef struct gf_graph_pool gf_graph_pool;
gf_graph_pool *gf__pool_create(void);
/* The graph lets go: its returned blocks go back to their devices now, the
 * blocks outputs still hold when they are freed. */
void gf__pool_close(gf_graph_pool *gp);
uint64_t gf__pool_bytes(gf_graph_pool *gp);
/* The pool that owns the storage's memory, or NULL. */
gf_graph_pool *gf__storage_pool(const gf_storage *s);

/* ------------------------------------------------------------ tensors (tensor.c) */
struct gf_autograd_meta; /* autograd, defined by the autograd sources */

struct gf_tensor {
    atomic_long refcount;
    /* How many of those references open scopes hold (scope.c): a release
     * that would leave fewer references than the scopes hold is an
     * over-release, refused with an error (tensor.c). */
    atomic_long scope_refs;
    /* How many are graft's own long-lived holds that a caller can also be
     * handed a reference to (a leaf's .grad slot): counted like the scopes'
     * in that check, so releasing gf_tensor_grad's result inside a scope is
     * refused rather than freeing the gradient under its slot. Taken and
     * given back only through gf__hold_adopt / gf__hold_release. */
    atomic_long held_refs;
    gf_storage *storage;
    gf_dtype dtype;
    int rank;
    int64_t sizes[GF_MAX_RANK];
    int64_t strides[GF_MAX_RANK]; /* elements */
    int64_t offset;               /* elements */
    struct gf_autograd_meta *autograd;
    /* The capture that made this record (graph/), 0 outside any: a tensor
     * a region reads that it did not make is one of its inputs. */
    uint64_t capture_id;
};

/* New contiguous tensor (uninitialised). dev must not be NULL. */
gf_tensor *gf__empty(const int64_t *sizes, int rank, gf_dtype dtype, gf_device *dev);
/* A view of t's storage with the given geometry (no checks beyond rank). */
gf_tensor *gf__view(const gf_tensor *t, const int64_t *sizes, const int64_t *strides, int rank,
                    int64_t offset);
/* A tensor over a storage no tensor record stands for (adopted memory, a
 * DLPack import of graft's own storage): as gf__view, but with no base to
 * note as a captured region's input. */
gf_tensor *gf__view_storage(gf_storage *s, gf_dtype dtype, const int64_t *sizes,
                            const int64_t *strides, int rank, int64_t offset);
/* Makes t take src's storage, dtype and geometry (PyTorch's t.data = src):
 * t keeps its identity, references and autograd metadata; what viewed t's
 * old storage keeps it. Cannot fail. */
void gf__tensor_set_data(gf_tensor *t, const gf_tensor *src);
/* Checks sizes (non-negative, rank <= 8) and returns numel, or -1 with error. */
int64_t gf__checked_numel(const int64_t *sizes, int rank, const char *op);
int64_t gf__numel(const gf_tensor *t);
bool gf__is_contiguous(const gf_tensor *t);
void gf__contiguous_strides(const int64_t *sizes, int rank, int64_t *strides);
void gf__desc(const gf_tensor *t, gfp_tensor *d);
void gf__bump_version(gf_tensor *t);
/* The caller's reference to t becomes one of graft's holds (held_refs);
 * returns t (NULL passes). */
gf_tensor *gf__hold_adopt(gf_tensor *t);
/* Gives back a hold taken by gf__hold_adopt: the count first, then the
 * reference (NULL passes). */
void gf__hold_release(gf_tensor *t);
/* Normalises a possibly negative dim for a tensor of rank `rank`; returns -1
 * with an INDEX error naming op when out of range. rank 0 accepts 0 and -1. */
int gf__norm_dim(int dim, int rank, const char *op);
/* "[2, 3]" into buf. */
const char *gf__shape_str(const int64_t *sizes, int rank, char *buf, size_t len);
/* Same device check; records DEVICE naming op and both devices. */
bool gf__same_device(const gf_tensor *a, const gf_tensor *b, const char *op);

/* ------------------------------------------------------------ helpers (tensor_util.c) */
gf_dtype gf__promote(gf_dtype a, gf_dtype b);
/* Broadcast shape of two shapes; SHAPE error naming op and both shapes. */
gf_status gf__broadcast_shapes(const int64_t *a, int ra, const int64_t *b, int rb,
                               int64_t *out, int *rank_out, const char *op);
/* An expanded view of t with the given (broadcast-compatible) shape. */
gf_tensor *gf__expand_to(const gf_tensor *t, const int64_t *sizes, int rank);
/* t converted to dtype (a new reference to t when already of it). */
gf_tensor *gf__cast(const gf_tensor *t, gf_dtype dtype);
/* Writes src (broadcastable to dst's shape, any dtype) into dst, in place
 * through the COPY op. Does not bump the version. */
gf_status gf__copy_into(gf_tensor *dst, const gf_tensor *src);
/* INVALID naming op unless value converts to dtype without overflow: an
 * integer dtype takes finite values within its range (truncated toward
 * zero, as PyTorch), bool and floats take any value. */
gf_status gf__check_value(double value, gf_dtype dtype, const char *op);
/* Fills t with value (checked with gf__check_value first). */
gf_status gf__fill(gf_tensor *t, double value);
/* t itself (new reference) when contiguous, else a contiguous copy. */
gf_tensor *gf__contig(const gf_tensor *t);
/* Host-side strided copy with conversion: the fallback for devices whose
 * COPY kernel needs contiguous tensors. */
gf_status gf__host_copy(gf_tensor *dst, const gf_tensor *src);
/* New tensor of t's sizes, dtype and device filled with value (no scope). */
gf_tensor *gf__full_like_raw(const gf_tensor *t, double value);
#define gf__ones_like_raw(t) gf__full_like_raw((t), 1.0)
/* A 0-dim tensor of dtype on dev. */
gf_tensor *gf__scalar(double value, gf_dtype dtype, gf_device *dev);
/* Copies of x's slices along dim 0 into out[0 .. size(0)), one autograd
 * node for all (ops_shape.c; no scope). */
gf_status gf__unbind_copies(const gf_tensor *x, gf_tensor **out);

/* ------------------------------------------------------------ scopes (scope.c) */
gf_tensor *gf__ret(gf_tensor *t);
int gf__scope_suspend(void);
void gf__scope_resume(int saved);

/* ------------------------------------------------------------ random (random.c) */
/* Reserves n counters of the global generator: seed and first offset. */
void gf__rng_next(uint64_t n, uint64_t *seed, uint64_t *offset);

#endif
