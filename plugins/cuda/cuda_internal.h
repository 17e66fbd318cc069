/* SPDX-License-Identifier: BSD-3-Clause */
/* cuda_internal.h — what the CUDA plugin's host files share.
 *
 * The plugin is host C (these files, compiled with the project's warnings)
 * plus CUDA kernels (kernels/ *.cu, behind cuda_kernels.h). It links the CUDA
 * runtime statically: the runtime opens the driver (libcuda.so.1) lazily, so
 * the plugin loads where there is no driver and reports zero devices with the
 * reason. cuBLAS and, when the build found it, cuDNN are opened at run time
 * by the first device_open (cuda_libs.h), so a process that opens no CUDA
 * device never loads them.
 *
 * One graft device per usable CUDA device, each with one non-blocking stream
 * on which everything is enqueued in order: kernels, cuBLAS and cuDNN calls,
 * copies, and stream-ordered allocations (cudaMallocAsync / cudaFreeAsync),
 * under the core's caching allocator. Host transfers go through two pinned
 * staging halves, each guarded by an event, so a write returns as soon as the
 * source is copied into pinned memory and a read overlaps the device-to-host
 * copy of one chunk with the host copy of the previous one.
 *
 * A gfp_buffer is a cu_buffer (a device address plus its size), so that every
 * view a launch receives is checked against its allocation before a kernel
 * could touch memory outside it (an illegal address would poison the whole
 * CUDA context). The core serialises calls into one device (the device is
 * not THREAD_SAFE); every device call first makes its device current on the
 * calling thread. */
#ifndef GRAFT_CUDA_INTERNAL_H
#define GRAFT_CUDA_INTERNAL_H

#include <cuda_runtime_api.h>
#include <stdbool.h>
#include <stdint.h>

#include "cuda_kernels.h"
#include "cuda_libs.h" /* cuBLAS and cuDNN: their headers, and the tables to call them by */
#include "plugin_kit.h"

#if defined(__GNUC__)
#define CU_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define CU_PRINTF(a, b)
#endif

#define CU_MAX_DEVICES 64
/* The float dtypes. */
#define CU_FLOATS (PK_DT_FLOAT | PK_DT(GFP_F16) | PK_DT(GFP_BF16))
/* The dtypes the reductions take (plugin_kit.h narrows them per op). */
#define CU_REDUCE_DTYPES (PK_DT_FLOAT | PK_DT_INT | PK_DT(GFP_BOOL))
#define CU_STAGE_BYTES (4u << 20) /* each of the two pinned staging halves */

typedef struct cu_device {
    int ordinal; /* the CUDA device number */
    int cc_major, cc_minor;
    char name[128];
    cudaStream_t stream;
    cublasHandle_t blas;
#ifdef GRAFT_CUDA_HAVE_CUDNN
    cudnnHandle_t dnn; /* NULL: cuDNN unusable here, own kernels instead */
#endif
    bool async_alloc; /* cudaMallocAsync is available (memory pools) */
    /* Pinned staging for host transfers; NULL when pinned memory was refused
     * (then transfers are synchronous from pageable memory). */
    unsigned char *stage[2];
    cudaEvent_t stage_done[2];
    int stage_next;
    /* Two device int64 for kernels that report back (index checks), and
     * their pinned host mirror. */
    int64_t *scratch;
    int64_t *scratch_host;
    /* cuFFT plans (cuda_fft.c), made by the first FFT; NULL until then. */
    struct cu_fft_cache *fft;
    /* Captured graphs (cuda_graph.c): the live ones, and while graph_create
     * captures the stream, whether a launch refused to be captured. */
    struct cu_graph *graphs;
    bool capturing, capture_refused;
} cu_device;

#define CU_BUFFER_MAGIC 0x6375646162756621ull /* "cudabuf!" */

typedef struct cu_buffer {
    uint64_t magic;
    void *ptr; /* device address of byte 0 */
    uint64_t nbytes;
    cu_device *dev;
} cu_buffer;

/* OK for cudaSuccess; otherwise a failure "<op>: <what>: cudaErrorX (text)"
 * with the status the error maps to. Clears the runtime's last error. */
gfp_status cu_check(cudaError_t e, const char *op, const char *what);
gfp_status cu_check_blas(cublasStatus_t s, const char *op, const char *what);
#ifdef GRAFT_CUDA_HAVE_CUDNN
gfp_status cu_check_dnn(cudnnStatus_t s, const char *op, const char *what);
#endif
/* Makes dev current on the calling thread. */
gfp_status cu_use(cu_device *dev, const char *op);
/* False when GRAFT_CUDA_CUDNN=0 asks for the plugin's own conv kernels. */
bool cu_cudnn_wanted(void);

/* ---- memory (cuda_memory.c) */
gfp_status cu_buffer_alloc(void *device, uint64_t nbytes, gfp_buffer *buffer, void **host_ptr);
void cu_buffer_free(void *device, gfp_buffer buffer);
gfp_status cu_buffer_write(void *device, gfp_buffer buffer, uint64_t offset, const void *src,
                           uint64_t n);
gfp_status cu_buffer_read(void *device, gfp_buffer buffer, uint64_t offset, void *dst,
                          uint64_t n);
gfp_status cu_buffer_copy(void *device, gfp_buffer src, uint64_t src_offset, gfp_buffer dst,
                          uint64_t dst_offset, uint64_t n);
gfp_status cu_buffer_fill(void *device, gfp_buffer buffer, uint64_t offset, uint64_t n,
                          const void *pattern, uint32_t pattern_size);
gfp_status cu_synchronize(void *device);
/* Stream-ordered scratch memory for one launch (freed with cu_temp_free on
 * the stream, so it may be released right after the work is enqueued). */
gfp_status cu_temp_alloc(cu_device *dev, uint64_t nbytes, void **ptr, const char *op);
void cu_temp_free(cu_device *dev, void *ptr);
/* Copies n host bytes to device memory at dst through the staging buffers. */
gfp_status cu_upload(cu_device *dev, void *dst, const void *src, uint64_t n, const char *op);
/* Waits for the stream and reads the two scratch values. */
gfp_status cu_read_scratch(cu_device *dev, int64_t out[2], const char *op);
/* Staging and scratch setup / teardown at device open / close. */
gfp_status cu_memory_open(cu_device *dev);
void cu_memory_close(cu_device *dev);

/* ---- ops (cuda_ops.c): query_op, launch, descriptor helpers */
gfp_status cu_query_op(void *device, const gfp_op_query *q, uint32_t *support);
gfp_status cu_launch(void *device, uint32_t op, const gfp_tensor *const *inputs,
                     uint32_t n_inputs, const gfp_tensor *const *outputs, uint32_t n_outputs,
                     const void *params);
bool cu_is_contiguous(const gfp_tensor *t);
/* The kernel view of a validated descriptor. */
cuk_tensor cu_view(const gfp_tensor *t);
/* t itself when contiguous, otherwise a contiguous copy in stream-ordered
 * scratch (*owned receives it, to free with cu_temp_free). */
gfp_status cu_contiguous_in(cu_device *dev, const gfp_tensor *t, cuk_tensor *out, void **owned,
                            const char *op);
/* An iterator over dst's shape for dst and (when given) src. */
void cu_iter_of(cuk_iter *it, const cuk_tensor *dst, const cuk_tensor *src);
/* Copies src into dst through the strided COPY kernel (same shape). */
gfp_status cu_copy_tensor(cu_device *dev, const cuk_tensor *dst, const cuk_tensor *src,
                          const char *op);
/* Writes zeros into every element of t. */
gfp_status cu_zero_tensor(cu_device *dev, const cuk_tensor *t, const char *op);
/* Waits for a device check that every value of index (i64) lies in
 * [lo, limit); the message names op and dim (dim < 0: a pooling plane). */
gfp_status cu_check_indices(cu_device *dev, const cuk_tensor *index, int64_t lo, int64_t limit,
                            const char *op, int dim);

/* ---- op families */
gfp_status cu_elementwise_launch(cu_device *dev, uint32_t op, const gfp_tensor *const *in,
                                 uint32_t n_in, const gfp_tensor *y, const void *params);
gfp_status cu_reduce_launch(cu_device *dev, uint32_t op, const gfp_tensor *const *in,
                            uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                            const void *params);
gfp_status cu_norm_launch(cu_device *dev, uint32_t op, const gfp_tensor *const *in,
                          uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                          const void *params);
gfp_status cu_index_launch(cu_device *dev, uint32_t op, const gfp_tensor *const *in,
                           uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                           const void *params);
gfp_status cu_matmul_launch(cu_device *dev, const gfp_tensor *const *in, uint32_t n_in,
                            const gfp_tensor *const *out, uint32_t n_out);
gfp_status cu_conv_launch(cu_device *dev, uint32_t op, const gfp_tensor *const *in,
                          uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                          const void *params);
gfp_status cu_pool_launch(cu_device *dev, uint32_t op, const gfp_tensor *const *in,
                          uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                          const void *params);
gfp_status cu_rnn_launch(cu_device *dev, uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                         const gfp_tensor *const *out, uint32_t n_out, const void *params);
gfp_status cu_optim_launch(cu_device *dev, uint32_t op, const gfp_tensor *const *in,
                           uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                           const void *params);
/* Captured graphs (cuda_graph.c): the ABI's three graph slots; the graphs
 * still alive at device close; and the refusal a launch gives while the
 * stream is being captured, for what cannot be (it sets
 * dev->capture_refused and fails UNSUPPORTED: the node then runs eagerly). */
gfp_status cu_graph_create(void *device, const gfp_graph_node *nodes, uint32_t n_nodes,
                           void **graph);
gfp_status cu_graph_launch(void *device, void *graph);
void cu_graph_destroy(void *device, void *graph);
void cu_graphs_release(cu_device *dev);
gfp_status cu_capture_refuse(cu_device *dev, const char *op, const char *what);
/* FFT (cuda_fft.c): cuFFT opened and usable (false, logged once, without
 * it); the launch; the device's plans released at close. */
bool cu_fft_usable(void);
gfp_status cu_fft_launch(cu_device *dev, const gfp_tensor *x, const gfp_tensor *y,
                         const void *params);
void cu_fft_close(cu_device *dev);

#endif
