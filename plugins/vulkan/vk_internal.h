/* SPDX-License-Identifier: BSD-3-Clause */
/* vk_internal.h — what the Vulkan plugin's files share.
 *
 * The plugin loads the Vulkan loader (libvulkan.so.1) at run time, so it
 * builds against the headers only and loads on machines without Vulkan (it
 * then reports zero devices and why). Files by concern:
 *   vk_loader.c     dlopen, the function table, VkResult names
 *   vk_instance.c   instance, validation layer and its messages, physical devices
 *   vk_plugin.c     negotiation, the gfp_plugin table, devices, op routing
 *   vk_memory.c     device-memory blocks, sub-allocation, host transfers
 *   vk_batch.c      command buffers recorded in batches, submission, waiting
 *   vk_pipeline.c   embedded SPIR-V, descriptor-set layouts, pipeline cache,
 *                   the one function that records a dispatch
 *   vk_ops_*.c      op families: parameters, checks, dispatch geometry
 *   vk_complex.c    the complex dtypes of the elementwise, reduce, matmul
 *                   and index families; vk_fft.c the FFT
 *   vk_graph.c      captured graphs (the ABI's graph slots): launches recorded
 *                   once into command buffers of their own, resubmitted
 * Every launch is recorded into the open command buffer with a barrier in
 * front of it; the buffer is submitted when full or when the host needs a
 * result, so a chain of small ops costs one dispatch each, not one submit. */
#ifndef GRAFT_VK_INTERNAL_H
#define GRAFT_VK_INTERNAL_H

#define VK_NO_PROTOTYPES
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <vulkan/vulkan.h>

#include "pk_fuse.h"
#include "plugin_kit.h"

#if defined(__GNUC__)
#define VKP_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define VKP_PRINTF(a, b)
#endif

/* ------------------------------------------------------------ loader (vk_loader.c) */
/* Every Vulkan entry point the plugin calls, loaded through
 * vkGetInstanceProcAddr (device functions through the instance: one table). */
#define VKP_GLOBAL_FNS(X)                 \
    X(EnumerateInstanceExtensionProperties) \
    X(EnumerateInstanceLayerProperties)   \
    X(EnumerateInstanceVersion)           \
    X(CreateInstance)

#define VKP_INSTANCE_FNS(X)                   \
    X(DestroyInstance)                        \
    X(EnumeratePhysicalDevices)               \
    X(GetPhysicalDeviceProperties)            \
    X(GetPhysicalDeviceFeatures)              \
    X(GetPhysicalDeviceFeatures2)             \
    X(GetPhysicalDeviceProperties2)           \
    X(GetPhysicalDeviceMemoryProperties)      \
    X(GetPhysicalDeviceQueueFamilyProperties) \
    X(EnumerateDeviceExtensionProperties)     \
    X(CreateDebugUtilsMessengerEXT)           \
    X(DestroyDebugUtilsMessengerEXT)          \
    X(CreateDevice)                           \
    X(DestroyDevice)                          \
    X(GetDeviceQueue)                         \
    X(DeviceWaitIdle)                         \
    X(AllocateMemory)                         \
    X(FreeMemory)                             \
    X(MapMemory)                              \
    X(UnmapMemory)                            \
    X(CreateBuffer)                           \
    X(DestroyBuffer)                          \
    X(GetBufferMemoryRequirements)            \
    X(BindBufferMemory)                       \
    X(CreateCommandPool)                      \
    X(DestroyCommandPool)                     \
    X(AllocateCommandBuffers)                 \
    X(FreeCommandBuffers)                     \
    X(ResetCommandBuffer)                     \
    X(BeginCommandBuffer)                     \
    X(EndCommandBuffer)                       \
    X(QueueSubmit)                            \
    X(CreateFence)                            \
    X(DestroyFence)                           \
    X(WaitForFences)                          \
    X(ResetFences)                            \
    X(GetFenceStatus)                         \
    X(CreateDescriptorPool)                   \
    X(DestroyDescriptorPool)                  \
    X(ResetDescriptorPool)                    \
    X(AllocateDescriptorSets)                 \
    X(UpdateDescriptorSets)                   \
    X(CreateDescriptorSetLayout)              \
    X(DestroyDescriptorSetLayout)             \
    X(CreatePipelineLayout)                   \
    X(DestroyPipelineLayout)                  \
    X(CreateShaderModule)                     \
    X(DestroyShaderModule)                    \
    X(CreatePipelineCache)                    \
    X(DestroyPipelineCache)                   \
    X(CreateComputePipelines)                 \
    X(DestroyPipeline)                        \
    X(CmdBindPipeline)                        \
    X(CmdBindDescriptorSets)                  \
    X(CmdDispatch)                            \
    X(CmdPipelineBarrier)                     \
    X(CmdCopyBuffer)                          \
    X(CmdFillBuffer)

typedef struct vkp_fns {
    PFN_vkGetInstanceProcAddr GetInstanceProcAddr;
#define VKP_DECLARE(name) PFN_vk##name name;
    VKP_GLOBAL_FNS(VKP_DECLARE)
    VKP_INSTANCE_FNS(VKP_DECLARE)
#undef VKP_DECLARE
} vkp_fns;

extern vkp_fns vk; /* loaded by vkp_loader_open / vkp_loader_instance */

/* Opens the loader; false with a reason (what to install) otherwise. */
bool vkp_loader_open(char *reason, size_t len);
/* Loads the instance-level (and device) functions. */
void vkp_loader_instance(VkInstance instance);
void vkp_loader_close(void);
const char *vkp_result_name(VkResult r);

/* GFP_ERR_OUT_OF_MEMORY for the two out-of-memory results, DEVICE otherwise;
 * the message names the call and the VkResult. */
gfp_status vkp_fail_vk(VkResult r, const char *what);

/* ------------------------------------------------------------ devices */
#define VKP_MAX_PHYS 16

typedef struct vkp_physical {
    VkPhysicalDevice pd;
    VkPhysicalDeviceProperties props;
    VkPhysicalDeviceMemoryProperties mem;
    uint32_t queue_family;
    bool has_f64;        /* shaderFloat64 */
    bool has_f16;        /* shaderFloat16 and storageBuffer16BitAccess */
    /* The FFT shaders are declared (vk_fft.c): not on CPU-type devices
     * unless GRAFT_VULKAN_FFT=1 (vk_instance.c says why). */
    bool has_fft;
    /* Subgroup arithmetic in compute shaders (the tree reductions use
     * subgroupAdd / subgroupMax; GRAFT_VULKAN_NO_SUBGROUPS=1 turns it off). */
    bool has_subgroups;
    uint32_t subgroup_size;
    bool usable;         /* has what every shader needs (int64, 8-bit storage) */
    char missing[160];   /* what it lacks, when !usable */
    struct vkp_device *open;
} vkp_physical;

typedef struct vkp_plugin {
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    bool validation; /* the Khronos validation layer is enabled */
    bool loader_open;
    char reason[400]; /* why there are zero devices, "" otherwise */
    uint32_t n_phys;
    vkp_physical phys[VKP_MAX_PHYS];
} vkp_plugin;

extern vkp_plugin vkp_ctx;
/* Validation and driver messages at warning level or worse since init. */
extern atomic_long vkp_validation_count;
/* Set once the process is exiting (vk_plugin.c), after the exit handler
 * destroyed the devices and the instance: entry points then touch neither
 * Vulkan nor the freed devices. */
extern atomic_bool vkp_exiting;
/* The error of an entry point called once vkp_exiting is set. */
gfp_status vkp_exiting_error(const char *what);
/* Registers the exit handler (vk_plugin.c) once per occasion: after the
 * device is created, the first submit, the first fence wait. */
enum { VKP_AT_EXIT_DEVICE = 1, VKP_AT_EXIT_SUBMIT = 2, VKP_AT_EXIT_WAIT = 4 };
void vkp_register_at_exit(unsigned which);

/* Creates the instance and lists devices (vk_instance.c). Never fails the
 * plugin: with no driver it leaves zero devices and a reason. */
void vkp_instance_init(void);
void vkp_instance_shutdown(void);

/* ------------------------------------------------------------ memory (vk_memory.c) */
typedef struct vkp_range {
    uint64_t offset, size;
    struct vkp_range *next;
} vkp_range;

typedef struct vkp_block {
    VkDeviceMemory memory;
    VkBuffer buffer; /* spans the whole block; bound whole in descriptors */
    uint64_t size;
    void *map;       /* persistent mapping when host-visible, else NULL */
    bool dedicated;  /* one allocation of its own (large tensors) */
    uint64_t used;
    vkp_range *free; /* sorted by offset, coalesced */
    struct vkp_block *next;
} vkp_block;

#define VKP_BUF_MAGIC 0x766b627566666572ull
typedef struct vkp_buf {
    uint64_t magic;
    vkp_block *block;
    uint64_t offset; /* in the block */
    uint64_t size;   /* as requested */
} vkp_buf;

/* ------------------------------------------------------------ batches (vk_batch.c) */
#define VKP_BATCHES 4
#define VKP_SETS_PER_BATCH 512
#define VKP_PARAMS_BYTES (256u * 1024u)
#define VKP_STAGING_BYTES (4u * 1024u * 1024u)

/* A host-visible buffer of its own (params ring, staging). */
typedef struct vkp_hostbuf {
    VkBuffer buffer;
    VkDeviceMemory memory;
    void *map;
    uint64_t size;
} vkp_hostbuf;

typedef struct vkp_batch {
    VkCommandBuffer cb;
    VkFence fence;
    VkDescriptorPool pool;
    uint32_t sets_used;
    vkp_hostbuf params, staging;
    uint64_t params_used, staging_used;
    vkp_hostbuf *temps; /* large staging buffers freed when the batch completes */
    uint32_t n_temps, cap_temps;
    uint32_t n_cmds;
    bool recording, submitted;
} vkp_batch;

/* ------------------------------------------------------------ pipelines (vk_pipeline.c) */
#include "vk_shaders.h" /* generated: enum vkp_shader, the embedded SPIR-V */

#define VKP_MAX_SPEC 10 /* ew_fused: local size, steps, 8 step codes */
#define VKP_MAX_BINDINGS 10 /* params + up to 9 tensors */
#define VKP_PIPE_SLOTS 1024

typedef struct vkp_pipe_entry {
    bool used;
    uint32_t shader;
    uint32_t spec[VKP_MAX_SPEC];
    VkPipeline pipeline;
} vkp_pipe_entry;

typedef struct vkp_graph vkp_graph;

typedef struct vkp_device {
    vkp_physical *phys;
    uint32_t index;
    VkDevice dev;
    VkQueue queue;
    uint32_t mem_type;     /* device memory for tensors */
    bool tensors_mapped;   /* tensor memory is host-visible and coherent */
    uint32_t host_type;    /* host-visible coherent memory for params/staging */
    uint64_t max_range;    /* largest buffer a descriptor may cover */
    uint64_t block_size;   /* size of a shared memory block */
    uint64_t align;        /* sub-allocation and params alignment */
    uint32_t max_groups[3];
    bool has_f64;
    bool has_f16; /* f16 storage; arithmetic on it is done in f32 */
    /* Loop iterations one invocation may run: lavapipe (llvmpipe) silently
     * stops every loop of an invocation after 65535 iterations in total, so
     * kernels there size their workgroups to stay below, or refuse. */
    uint32_t loop_budget;
    bool fft_block; /* FFT lines of up to 1024 in shared memory (GRAFT_VULKAN_FFT_BLOCK) */
    /* memory */
    vkp_block *blocks;
    uint64_t bytes_in_blocks;
    long live_buffers;
    /* batches */
    VkCommandPool cmd_pool;
    vkp_batch batches[VKP_BATCHES];
    uint32_t current; /* the batch recording, or the next one to use */
    uint32_t batch_limit; /* dispatches per submission */
    /* pipelines */
    VkPipelineCache cache;
    VkShaderModule modules[VKP_SHADER_COUNT];
    VkDescriptorSetLayout set_layouts[VKP_MAX_BINDINGS + 1];
    VkPipelineLayout pipe_layouts[VKP_MAX_BINDINGS + 1];
    vkp_pipe_entry *pipes; /* VKP_PIPE_SLOTS, open addressing */
    uint64_t dispatches;   /* since open: for the bench and tests */
    uint64_t submits;
    /* captured graphs (vk_graph.c) */
    vkp_graph *recording;  /* graph_create running: commands go to its segment */
    vkp_graph *refreshing; /* graph_launch rewriting a node's params words */
    vkp_graph *graphs;     /* live graphs: finish and idle wait for their runs */
    uint64_t graph_launches;
} vkp_device;

/* vk_memory.c */
gfp_status vkp_memory_init(vkp_device *d);
void vkp_memory_shutdown(vkp_device *d);
gfp_status vkp_buffer_alloc(void *device, uint64_t nbytes, gfp_buffer *buffer, void **host_ptr);
void vkp_buffer_free(void *device, gfp_buffer buffer);
gfp_status vkp_buffer_write(void *device, gfp_buffer buffer, uint64_t offset, const void *src,
                            uint64_t n);
gfp_status vkp_buffer_read(void *device, gfp_buffer buffer, uint64_t offset, void *dst,
                           uint64_t n);
gfp_status vkp_buffer_copy(void *device, gfp_buffer src, uint64_t src_offset, gfp_buffer dst,
                           uint64_t dst_offset, uint64_t n);
gfp_status vkp_buffer_fill(void *device, gfp_buffer buffer, uint64_t offset, uint64_t n,
                           const void *pattern, uint32_t pattern_size);
/* A live buffer of this device, or NULL (with a message naming `what`). */
vkp_buf *vkp_buf_check(vkp_device *d, gfp_buffer buffer, const char *what);
gfp_status vkp_hostbuf_create(vkp_device *d, uint64_t size, vkp_hostbuf *hb);
void vkp_hostbuf_destroy(vkp_device *d, vkp_hostbuf *hb);

/* vk_batch.c */
gfp_status vkp_batch_init(vkp_device *d);
void vkp_batch_shutdown(vkp_device *d);
/* The batch being recorded (begun when none is). */
gfp_status vkp_batch_open(vkp_device *d, vkp_batch **out);
/* A global barrier: earlier transfers and dispatches before later ones. */
void vkp_batch_barrier(vkp_batch *b);
/* Counts a recorded command; submits the batch once it holds enough. */
gfp_status vkp_batch_recorded(vkp_device *d);
/* Submits the recording batch, if any. */
gfp_status vkp_batch_submit(vkp_device *d);
/* Submits, then waits for every submitted batch. */
gfp_status vkp_batch_finish(vkp_device *d);
/* True when nothing is recorded or running. */
bool vkp_batch_idle(vkp_device *d);
/* Space in the open batch's params ring / staging buffer (aligned); a full
 * batch is submitted and the space taken from the next one. */
gfp_status vkp_batch_params(vkp_device *d, uint32_t bytes, vkp_batch **b, uint64_t *offset);
gfp_status vkp_batch_staging(vkp_device *d, uint64_t bytes, vkp_batch **b, VkBuffer *buffer,
                             uint64_t *offset, void **map);

/* vk_pipeline.c */
gfp_status vkp_pipeline_init(vkp_device *d);
void vkp_pipeline_shutdown(vkp_device *d);

/* One dispatch: shader with spec constants spec[0..n_spec) (spec[0] is the
 * workgroup size), params words copied into the params ring (binding 0) and
 * the tensors' buffers at bindings 1.. (NULL: bound to the first tensor's
 * buffer, unused by the shader). groups may exceed the device's limit in x:
 * callers use vkp_groups() and loop in the shader. */
typedef struct vkp_dispatch {
    uint32_t shader;
    uint32_t spec[VKP_MAX_SPEC];
    uint32_t n_spec;
    const uint32_t *params;
    uint32_t n_params; /* words */
    const gfp_tensor *tensors[VKP_MAX_BINDINGS - 1];
    uint32_t n_tensors;
    uint32_t groups[3];
} vkp_dispatch;
gfp_status vkp_dispatch_run(vkp_device *d, const vkp_dispatch *dp);
/* Workgroups for n items at `per_group` items each, capped at the device's
 * x limit (shaders loop over the rest). */
uint32_t vkp_groups(const vkp_device *d, uint64_t n, uint32_t per_group);
/* The workgroup size (64, 256 or 1024, within [least, most]) whose
 * invocations each run at most loop_budget loop iterations when `iterations`
 * are shared among them; 0 when even the largest is not enough. */
uint32_t vkp_pick_wg(const vkp_device *d, uint64_t iterations, uint32_t least, uint32_t most);

bool vkp_same_shape(const gfp_tensor *a, const gfp_tensor *b);
/* IEEE binary16 bits of v, rounded to nearest even (NaN stays NaN). */
uint16_t vkp_f64_to_f16(double v);
/* Element offset of t's element 0 in its block's buffer. */
uint32_t vkp_elem_offset(const gfp_tensor *t);

/* Merges dims so that every one of n tensors (sharing sizes) is walked with
 * fewer dims: drops size-1 dims, joins dims contiguous in every tensor.
 * sizes/strides are rewritten, *rank updated. Rank 0 stays 0. */
void vkp_coalesce(int *rank, int64_t *sizes, int64_t (*strides)[GFP_MAX_RANK], int n);

/* Params words: a little writer. */
typedef struct vkp_words {
    uint32_t w[256];
    uint32_t n;
} vkp_words;
static inline void vkp_put(vkp_words *p, uint32_t v) {
    if (p->n < 256) p->w[p->n++] = v;
}
void vkp_put_u64(vkp_words *p, uint64_t v);
void vkp_put_f64(vkp_words *p, double v);
void vkp_put_f32(vkp_words *p, float v);

/* ------------------------------------------------------------ graphs (vk_graph.c) */
/* The ABI's graph slots. A graph is a run of launches recorded once, at
 * graph_create, into command buffers of its own ("segments", vkp_batch
 * structs that are never reset), with their descriptor sets written and
 * their params words in the segment's params buffer; graph_launch submits
 * the segments again. Nodes whose parameter structs changed since (the
 * Philox offsets, the optimisers' step constants) are run through their
 * family again in refresh mode: the dispatches are not recorded, their
 * params words are written where the recorded dispatches read them. */
gfp_status vkp_graph_create(void *device, const gfp_graph_node *nodes, uint32_t n_nodes,
                            void **graph);
gfp_status vkp_graph_launch(void *device, void *graph);
void vkp_graph_destroy(void *device, void *graph);
/* While recording: the segment and params space for a dispatch (a new
 * segment when the open one is full). */
gfp_status vkp_graph_params(vkp_device *d, uint32_t bytes, vkp_batch **b, uint64_t *offset);
/* While recording: notes the dispatch just recorded (params at poff of b). */
gfp_status vkp_graph_dispatched(vkp_device *d, const vkp_dispatch *dp, uint64_t poff);
/* While refreshing: writes dp's params words where the recorded dispatch
 * reads them (fails when the family recorded other dispatches). */
gfp_status vkp_graph_refresh(vkp_device *d, const vkp_dispatch *dp);
/* While recording: whether the graph keeps a buffer a launch frees (its
 * scratch, allocated while recording: the recorded commands use it on every
 * run, so the free is skipped). */
bool vkp_graph_keep(vkp_device *d, gfp_buffer buffer);
/* While recording: notes a buffer a launch allocated (kept by the graph). */
gfp_status vkp_graph_note_alloc(vkp_device *d, gfp_buffer buffer);
/* While refreshing: the scratch buffer the node's recording allocated. */
gfp_status vkp_graph_scratch(vkp_device *d, uint64_t nbytes, gfp_buffer *buffer);
/* Waits for the graphs' submitted runs / whether none is running. */
gfp_status vkp_graph_wait(vkp_device *d);
bool vkp_graph_idle(vkp_device *d);

/* ------------------------------------------------------------ fused runs (vk_fuse.c) */
#define VKP_FUSE_SLOTS (VKP_MAX_BINDINGS - 1)
#define VKP_FUSE_MAX_STEPS 8 /* ew_fused's step constants (shaders/ew_fused.comp) */
/* Tensors of at most this many elements: where a dispatch costs more than
 * the work. Each step still writes its output and reads its operands back,
 * so fusing saves dispatches, not memory traffic; on lavapipe an 8-op chain
 * ran 2x faster fused at 16K elements and 0.9x at 256K and 4M. */
#define VKP_FUSE_MAX_ELEMENTS 65536
typedef struct vkp_fuse_step {
    const gfp_graph_node *node;
    int n_t;                    /* output + inputs */
    int64_t n;                  /* elements */
    const void *block[3];       /* the tensors' memory blocks: y, a, b */
    uint32_t offset[3], stride[3];
    float pa, pb;               /* a unary op's scalars, as its eager launch */
    uint32_t flags;
    pk_range r[3];              /* the tensors' element ranges (pk_fuse.h), r[0] written */
} vkp_fuse_step;
/* GRAFT_VULKAN_FUSE=0 turns fusion off (read at graph_create). */
bool vkp_fuse_enabled(void);
/* Whether node can be a step of a fused run (an f32 unary or binary op on
 * same-shaped contiguous tensors, inputs possibly one broadcast element). */
bool vkp_fuse_step_of(const gfp_graph_node *node, vkp_fuse_step *s);
/* Whether next may follow the run steps[0 .. count - 1]. */
bool vkp_fuse_joins(const vkp_fuse_step *steps, uint32_t count, const vkp_fuse_step *next);
/* Fused runs recorded and the launches they cover, since the plugin loaded
 * (vk_graph.c). */
uint64_t vkp_fused_runs(void);
uint64_t vkp_fused_launches(void);
/* Records (or, refreshing, rewrites the params of) the run's one dispatch. */
gfp_status vkp_fuse_dispatch(vkp_device *d, const vkp_fuse_step *steps, uint32_t count);
/* A unary op's f32 scalars pa, pb and has-flags as its eager shader reads
 * them (vk_ops_elementwise.c). */
gfp_status vkp_ew_unary_f32_scalars(uint32_t op, const void *params, float *pa, float *pb,
                                    uint32_t *flags);

/* The family serving a launch, after the kit's checks (vk_plugin.c). */
typedef struct vkp_family {
    uint32_t families; /* GFP_FAMILY_BIT()s it serves: the kit routes by it */
    uint32_t (*support)(vkp_device *d, const gfp_op_query *q);
    gfp_status (*launch)(vkp_device *d, uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                         const gfp_tensor *const *out, uint32_t n_out, const void *params);
} vkp_family;
const vkp_family *vkp_route(vkp_device *d, uint32_t op, const gfp_tensor *const *in,
                            uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                            const void *params, gfp_status *st);

/* ------------------------------------------------------------ op families */
/* One handler per family (PK_FAMILIES in plugin_kit.h); vk_ops_conv.c serves
 * pooling too. */
#define vkp_pool_support vkp_conv_support
#define vkp_pool_launch vkp_conv_launch
#define VKP_FAMILY(f, set)                                                                \
    uint32_t vkp_##f##_support(vkp_device *d, const gfp_op_query *q);                     \
    gfp_status vkp_##f##_launch(vkp_device *d, uint32_t op, const gfp_tensor *const *in,  \
                                uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out, \
                                const void *params);
PK_FAMILIES(VKP_FAMILY)
VKP_FAMILY(fft, GFP_FAMILY_BIT(GFP_FAMILY_FFT)) /* vk_fft.c: C2C, R2C, C2R, any length */
#undef VKP_FAMILY

/* Dtype bit sets. */
#define VKP_BIT(d) GFP_DTYPE_BIT(d)
#define VKP_DT_ALL                                                                \
    (VKP_BIT(GFP_F32) | VKP_BIT(GFP_F64) | VKP_BIT(GFP_I32) | VKP_BIT(GFP_I64) | \
     VKP_BIT(GFP_BOOL))
/* The dtypes a device stores: f64 only with shaderFloat64, f16 only with
 * shaderFloat16 and storageBuffer16BitAccess. Families declare f16 for the
 * ops that have f16 paths only (VKP_F16_OPS in vk_ops_elementwise.c...). */
uint32_t vkp_device_dtypes(const vkp_device *d);
bool vkp_dtype_ok(const vkp_device *d, int32_t dtype);

/* The workgroup size of the tree reductions and softmax (vk_ops_reduce.c). */
uint32_t vkp_tree_wg(const vkp_device *d);
/* y += a @ b (vk_ops_matmul.c; the convolutions' GEMMs accumulate tiles). */
gfp_status vkp_matmul_accumulate(vkp_device *d, const gfp_tensor *a, const gfp_tensor *b,
                                 const gfp_tensor *y);
/* y = a @ b + bias[(batch % bias_groups) * M + m] (f32; the convolution's
 * bias): *bias_done false when the chosen shader took no bias (the caller
 * adds it). */
gfp_status vkp_matmul_bias(vkp_device *d, const gfp_tensor *a, const gfp_tensor *b,
                           const gfp_tensor *y, const gfp_tensor *bias, uint32_t bias_groups,
                           bool *bias_done);
/* CONV2D and its gradients as GEMMs through the matmul (vk_ops_conv_gemm.c):
 * *done false (and GFP_OK) when the shapes or layouts are not for it, and
 * the direct kernels run. */
gfp_status vkp_conv_gemm(vkp_device *d, uint32_t op, const gfp_tensor *x, const gfp_tensor *w,
                         const gfp_tensor *y, const gfp_tensor *bias, const int64_t *geo,
                         bool *done);
/* Whether the GEMM form is chosen over the direct kernels for this geometry
 * ({N, Ci, Co, H, W, Kh, Kw, Ho, Wo, groups, Ci/g, Co/g, ...}). */
bool vkp_conv_gemm_wins(uint32_t op, const int64_t *geo);

/* The elementwise shaders' shared header (shaders/ew_index.glsl) for t[0]
 * (the output) and the inputs t[1..nt), and one dispatch of such a shader
 * (vk_ops_elementwise.c; vk_complex.c uses both). */
gfp_status vkp_ew_header(vkp_words *p, const gfp_tensor *const *t, int nt, bool coalesce,
                         const char *name);
gfp_status vkp_ew_run(vkp_device *d, uint32_t shader, const uint32_t *spec, uint32_t n_spec,
                      const vkp_words *p, const gfp_tensor *const *t, uint32_t nt);

/* The complex dtypes (vk_complex.c): c64 on every device, c128 with
 * shaderFloat64; the elementwise, reduce and matmul families hand complex
 * operands here (the rules are plugins/common/pk_complex.c's). */
uint32_t vkp_complex_dtypes(const vkp_device *d);
bool vkp_complex_ew_accepts(const vkp_device *d, uint32_t op, const int32_t *in,
                            const int32_t *out);
gfp_status vkp_complex_ew_launch(vkp_device *d, uint32_t op, const gfp_tensor *const *in,
                                 uint32_t n_in, const gfp_tensor *const *out,
                                 const void *params);
uint32_t vkp_complex_reduce_support(const vkp_device *d, const gfp_op_query *q);
gfp_status vkp_complex_reduce_launch(vkp_device *d, uint32_t op, const gfp_tensor *x,
                                     const gfp_tensor *y, const void *params);
uint32_t vkp_complex_matmul_support(const vkp_device *d, const gfp_op_query *q);
uint32_t vkp_complex_index_support(const vkp_device *d, const gfp_op_query *q);
gfp_status vkp_complex_index_launch(vkp_device *d, uint32_t op, const gfp_tensor *const *in,
                                    uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                                    const void *params);
gfp_status vkp_complex_matmul_launch(vkp_device *d, const gfp_tensor *a, const gfp_tensor *b,
                                     const gfp_tensor *y);

/* Matmul shader choice, for the bench: 0 = by size and device, 1 = naive,
 * 2 = tiled (shared memory), 3 = register-blocked. */
extern int vkp_matmul_mode;

#endif
