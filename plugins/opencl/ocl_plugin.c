/* SPDX-License-Identifier: BSD-3-Clause */
/* ocl_plugin.c — the OpenCL plugin's entry point, devices and memory.
 *
 * init() opens the ICD loader and lists every device of every platform
 * (platforms sorted by name, vendor and version, devices in the platform's
 * order, so indices are stable from run to run). A device's context, queue
 * and programs are created on device_open. With no loader or no platform the
 * plugin reports zero devices and says why (device_count's message).
 *
 * Launches are asynchronous on one in-order queue per device: nothing waits
 * but buffer_read (a blocking read, which waits for the work before it),
 * buffer_write (blocking, so the caller may reuse its memory) and
 * synchronize. Calls into one device are serialised by the core (the device
 * does not declare THREAD_SAFE): kernels are shared objects whose arguments
 * are set per launch. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graft_opencl_ext.h"
#include "ocl_internal.h"
#include "plugin_negotiate.h"

typedef struct ocl_plugin_ctx {
    ocl_device *devices;
    uint32_t n_devices;
    char why_none[400]; /* why there are no devices, when there are none */
} ocl_plugin_ctx;

static ocl_plugin_ctx *g_ctx;
/* Set by the atexit handler, which releases every OpenCL object while the
 * driver is still there: the core closes devices from its destructor, when
 * the driver may already be torn down, so nothing calls OpenCL after it. */
static bool g_exiting;

static void device_release(ocl_device *d);

/* ------------------------------------------------------------ families */
#define OCL_FAMILY_ENTRY(f, set) {set, ocl_##f##_support, ocl_##f##_launch},
static const ocl_family families[] = {PK_FAMILIES(OCL_FAMILY_ENTRY)
                                          OCL_FAMILY_ENTRY(fft, GFP_FAMILY_BIT(GFP_FAMILY_FFT))
                                              OCL_FAMILY_ENTRY(optim,
                                                               GFP_FAMILY_BIT(GFP_FAMILY_OPTIM))};
#undef OCL_FAMILY_ENTRY

/* The dtypes device d stores: c64 always (computed in double where the
 * device has doubles, else float), f64 and c128 with cl_khr_fp64, f16 and
 * bf16 always (as bits, computed in f32: no cl_khr_fp16 needed). */
static uint32_t stored_dtypes(const ocl_device *d) {
    return GFP_DTYPE_BIT(GFP_F32) | GFP_DTYPE_BIT(GFP_I32) | GFP_DTYPE_BIT(GFP_I64) |
           GFP_DTYPE_BIT(GFP_BOOL) | GFP_DTYPE_BIT(GFP_C64) | GFP_DTYPE_BIT(GFP_F16) |
           GFP_DTYPE_BIT(GFP_BF16) |
           (d->fp64 ? GFP_DTYPE_BIT(GFP_F64) | GFP_DTYPE_BIT(GFP_C128) : 0);
}

/* A live buffer of this plugin: its size. */
static gfp_status buffer_size(const void *ctx, gfp_buffer buffer, uint64_t *size) {
    (void)ctx;
    const ocl_buffer *b = buffer;
    if (!b || b->magic != OCL_BUFFER_MAGIC) return GFP_ERR_INVALID;
    *size = b->size;
    return GFP_OK;
}

/* ------------------------------------------------------------ discovery */
static void platform_text(cl_platform_id p, cl_platform_info what, char *buf, size_t len) {
    buf[0] = '\0';
    if (ocl.GetPlatformInfo(p, what, len, buf, NULL) != CL_SUCCESS) buf[0] = '\0';
    buf[len - 1] = '\0';
}

static void device_text(cl_device_id d, cl_device_info what, char *buf, size_t len) {
    buf[0] = '\0';
    if (ocl.GetDeviceInfo(d, what, len, buf, NULL) != CL_SUCCESS) buf[0] = '\0';
    buf[len - 1] = '\0';
}

typedef struct platform_rec {
    cl_platform_id id;
    char key[400]; /* name, vendor, version: the sort key */
    char name[96];
} platform_rec;

static int cmp_platform(const void *a, const void *b) {
    return strcmp(((const platform_rec *)a)->key, ((const platform_rec *)b)->key);
}

/* The properties of device id that init records. */
static void describe(ocl_device *d, cl_platform_id p, const char *platform_name, cl_device_id id) {
    memset(d, 0, sizeof *d);
    d->platform = p;
    d->id = id;
    snprintf(d->platform_name, sizeof d->platform_name, "%s", platform_name);
    device_text(id, CL_DEVICE_NAME, d->name, sizeof d->name);
    device_text(id, CL_DEVICE_VERSION, d->version, sizeof d->version);
    device_text(id, CL_DRIVER_VERSION, d->driver, sizeof d->driver);
    cl_ulong u = 0;
    if (ocl.GetDeviceInfo(id, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof u, &u, NULL) == CL_SUCCESS)
        d->memory_bytes = u;
    u = 0;
    if (ocl.GetDeviceInfo(id, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof u, &u, NULL) == CL_SUCCESS)
        d->max_alloc_bytes = u;
    u = 0;
    if (ocl.GetDeviceInfo(id, CL_DEVICE_LOCAL_MEM_SIZE, sizeof u, &u, NULL) == CL_SUCCESS)
        d->local_mem = u;
    size_t wg = 1;
    if (ocl.GetDeviceInfo(id, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof wg, &wg, NULL) == CL_SUCCESS)
        d->max_wg = wg;
    if (d->max_wg < 1) d->max_wg = 1;
    cl_device_type type = 0;
    if (ocl.GetDeviceInfo(id, CL_DEVICE_TYPE, sizeof type, &type, NULL) == CL_SUCCESS)
        d->type = type;
    char *ext = NULL;
    size_t ext_len = 0;
    if (ocl.GetDeviceInfo(id, CL_DEVICE_EXTENSIONS, 0, NULL, &ext_len) == CL_SUCCESS &&
        (ext = calloc(1, ext_len + 1)) &&
        ocl.GetDeviceInfo(id, CL_DEVICE_EXTENSIONS, ext_len, ext, NULL) == CL_SUCCESS) {
        d->fp64 = strstr(ext, "cl_khr_fp64") != NULL;
        d->int64_atomics = strstr(ext, "cl_khr_int64_base_atomics") != NULL;
    }
    free(ext);
    /* A device that reports a double FP config has doubles even without the
     * extension string (OpenCL 1.2 made fp64 optional but core). */
    cl_device_fp_config fp = 0;
    if (!d->fp64 &&
        ocl.GetDeviceInfo(id, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof fp, &fp, NULL) == CL_SUCCESS &&
        fp != 0)
        d->fp64 = true;
    const char *no64 = ocl_getenv("GRAFT_OPENCL_DISABLE_FP64");
    if (no64 && no64[0] && strcmp(no64, "0") != 0) d->fp64 = false;
    fp = 0;
    if (ocl.GetDeviceInfo(id, CL_DEVICE_SINGLE_FP_CONFIG, sizeof fp, &fp, NULL) == CL_SUCCESS)
    {
        d->cr_divide = (fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) != 0;
        d->fma = (fp & CL_FP_FMA) != 0;
    }
}

/* Lists every device; on none, leaves the reason in ctx->why_none. */
static void discover(ocl_plugin_ctx *ctx) {
    char why[300];
    if (!ocl_api_load(why, sizeof why)) {
        snprintf(ctx->why_none, sizeof ctx->why_none, "%s", why);
        return;
    }
    cl_uint n_platforms = 0;
    cl_int err = ocl.GetPlatformIDs(0, NULL, &n_platforms);
    if (err != CL_SUCCESS || n_platforms == 0) {
        snprintf(ctx->why_none, sizeof ctx->why_none,
                 "no OpenCL platform found (clGetPlatformIDs: %s): no OpenCL driver (ICD) is "
                 "installed or visible; install one (e.g. pocl-opencl-icd for the CPU) or check "
                 "OCL_ICD_VENDORS / OCL_ICD_FILENAMES",
                 err != CL_SUCCESS ? ocl_error_name(err) : "0 platforms");
        return;
    }
    cl_platform_id *ids = calloc(n_platforms, sizeof *ids);
    platform_rec *recs = calloc(n_platforms, sizeof *recs);
    if (!ids || !recs || ocl.GetPlatformIDs(n_platforms, ids, NULL) != CL_SUCCESS) {
        snprintf(ctx->why_none, sizeof ctx->why_none, "listing the OpenCL platforms failed");
        free(ids);
        free(recs);
        return;
    }
    for (cl_uint i = 0; i < n_platforms; i++) {
        char vendor[128], version[128];
        recs[i].id = ids[i];
        platform_text(ids[i], CL_PLATFORM_NAME, recs[i].name, sizeof recs[i].name);
        platform_text(ids[i], CL_PLATFORM_VENDOR, vendor, sizeof vendor);
        platform_text(ids[i], CL_PLATFORM_VERSION, version, sizeof version);
        snprintf(recs[i].key, sizeof recs[i].key, "%s|%s|%s", recs[i].name, vendor, version);
    }
    qsort(recs, n_platforms, sizeof *recs, cmp_platform);
    uint32_t total = 0, cap = 0;
    char errors[200] = "";
    for (cl_uint i = 0; i < n_platforms; i++) {
        cl_uint n = 0;
        err = ocl.GetDeviceIDs(recs[i].id, CL_DEVICE_TYPE_ALL, 0, NULL, &n);
        if (err != CL_SUCCESS || n == 0) {
            if (err != CL_SUCCESS && err != CL_DEVICE_NOT_FOUND && !errors[0])
                snprintf(errors, sizeof errors, " (platform '%s': clGetDeviceIDs: %s)",
                         recs[i].name, ocl_error_name(err));
            continue;
        }
        cl_device_id *devs = calloc(n, sizeof *devs);
        if (!devs) continue;
        if (ocl.GetDeviceIDs(recs[i].id, CL_DEVICE_TYPE_ALL, n, devs, NULL) == CL_SUCCESS) {
            if (total + n > cap) {
                uint32_t ncap = (total + n) * 2;
                ocl_device *grown = realloc(ctx->devices, ncap * sizeof *grown);
                if (!grown) {
                    free(devs);
                    continue;
                }
                ctx->devices = grown;
                cap = ncap;
            }
            for (cl_uint k = 0; k < n; k++)
                describe(&ctx->devices[total++], recs[i].id, recs[i].name, devs[k]);
        }
        free(devs);
    }
    ctx->n_devices = total;
    if (total == 0)
        snprintf(ctx->why_none, sizeof ctx->why_none,
                 "%u OpenCL platform(s) found, but none has a device%s", (unsigned)n_platforms,
                 errors);
    free(ids);
    free(recs);
}

/* ------------------------------------------------------------ plugin */
static void at_exit(void) {
    if (!g_ctx || g_exiting) return;
    /* Drivers are still alive here: keep what was compiled for next time
     * (ocl_programs_release writes the cache), and release every object,
     * including buffers the application never freed. */
    for (uint32_t i = 0; i < g_ctx->n_devices; i++) {
        ocl_device *d = &g_ctx->devices[i];
        if (!d->open) continue;
        ocl.Finish(d->queue);
        for (ocl_buffer *b = d->live; b; b = b->next) {
            ocl.ReleaseMemObject(b->mem);
            b->mem = NULL;
        }
        device_release(d);
    }
    g_exiting = true;
}

static gfp_status ocl_init(void **plugin_ctx) {
    if (!plugin_ctx) return pk_fail(GFP_ERR_INVALID, "init: plugin_ctx is NULL");
    ocl_plugin_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return pk_fail(GFP_ERR_OUT_OF_MEMORY, "init: out of host memory");
    discover(ctx);
    if (ctx->n_devices) pk_log(GFP_LOG_INFO, "%u OpenCL device(s)", (unsigned)ctx->n_devices);
    g_ctx = ctx;
    g_exiting = false;
    static bool registered;
    if (!registered) registered = atexit(at_exit) == 0;
    *plugin_ctx = ctx;
    return GFP_OK;
}

static void ocl_shutdown(void *plugin_ctx) {
    ocl_plugin_ctx *ctx = plugin_ctx;
    if (!ctx) return;
    free(ctx->devices);
    free(ctx);
    if (g_ctx == ctx) g_ctx = NULL;
}

static gfp_status ocl_device_count(void *plugin_ctx, uint32_t *count) {
    ocl_plugin_ctx *ctx = plugin_ctx;
    if (!count || !ctx) return pk_fail(GFP_ERR_INVALID, "device_count: NULL argument");
    *count = ctx->n_devices;
    if (ctx->n_devices == 0) pk_host->set_error(pk_host->host_ctx, ctx->why_none);
    return GFP_OK;
}

static gfp_status ocl_device_props(void *plugin_ctx, uint32_t index, gfp_device_props *props) {
    ocl_plugin_ctx *ctx = plugin_ctx;
    if (!props || !ctx) return pk_fail(GFP_ERR_INVALID, "device_props: NULL argument");
    if (index >= ctx->n_devices)
        return pk_fail(GFP_ERR_NOT_FOUND, "device_props: device %u does not exist (%u found)",
                        (unsigned)index, (unsigned)ctx->n_devices);
    const ocl_device *d = &ctx->devices[index];
    gfp_device_props full;
    memset(&full, 0, sizeof full);
    full.flags = 0; /* device memory; calls serialised by the core */
    snprintf(full.name, sizeof full.name, "%s", d->name);
    snprintf(full.type, sizeof full.type, "opencl");
    full.memory_bytes = d->memory_bytes;
    full.dtypes = stored_dtypes(d);
    full.max_rank = GFP_MAX_RANK;
    full.max_alloc_bytes = d->max_alloc_bytes;
    snprintf(full.driver, sizeof full.driver, "%.45s, driver %.28s (%.35s)", d->version,
             d->driver, d->platform_name);
    return pk_copy_props(props, &full);
}

static ocl_fault fault_from_env(void) {
    const char *f = ocl_getenv("GRAFT_OPENCL_FAULT");
    if (!f || !f[0]) return OCL_FAULT_NONE;
    if (!strcmp(f, "build")) return OCL_FAULT_BUILD;
    if (!strcmp(f, "enqueue")) return OCL_FAULT_ENQUEUE;
    if (!strcmp(f, "lost")) return OCL_FAULT_LOST;
    if (!strcmp(f, "enqueue-at")) return OCL_FAULT_ENQUEUE_AT;
    pk_log(GFP_LOG_WARN, "GRAFT_OPENCL_FAULT=%s is not build, enqueue, enqueue-at or lost; "
           "ignored", f);
    return OCL_FAULT_NONE;
}

static void device_release(ocl_device *d) {
    ocl_graphs_release(d);
    ocl_fuse_programs_release(d);
    ocl_programs_release(d);
    ocl_fft_release(d);
    if (d->scratch.mem) ocl.ReleaseMemObject(d->scratch.mem);
    d->scratch = (ocl_buffer){0, NULL, 0, NULL, NULL};
    if (d->pack.mem) ocl.ReleaseMemObject(d->pack.mem);
    d->pack = (ocl_buffer){0, NULL, 0, NULL, NULL};
    if (d->flag) ocl.ReleaseMemObject(d->flag);
    if (d->queue) ocl.ReleaseCommandQueue(d->queue);
    if (d->ctx) ocl.ReleaseContext(d->ctx);
    d->flag = NULL;
    d->queue = NULL;
    d->ctx = NULL;
    d->open = false;
}

static gfp_status ocl_device_open(void *plugin_ctx, uint32_t index, void **device) {
    ocl_plugin_ctx *ctx = plugin_ctx;
    if (!device || !ctx) return pk_fail(GFP_ERR_INVALID, "device_open: NULL argument");
    if (index >= ctx->n_devices)
        return pk_fail(GFP_ERR_NOT_FOUND, "device_open: device %u does not exist (%u found)",
                        (unsigned)index, (unsigned)ctx->n_devices);
    ocl_device *d = &ctx->devices[index];
    if (!d->open) {
        cl_context_properties cp[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)d->platform, 0};
        cl_int err = CL_SUCCESS;
        d->ctx = ocl.CreateContext(cp, 1, &d->id, NULL, NULL, &err);
        if (!d->ctx) return ocl_cl_fail(err, "device_open", "clCreateContext");
        d->queue = ocl.CreateCommandQueue(d->ctx, d->id, 0, &err); /* in order */
        if (!d->queue) {
            gfp_status st = ocl_cl_fail(err, "device_open", "clCreateCommandQueue");
            device_release(d);
            return st;
        }
        /* Two words, zeroed: kernels that find a bad index set [0] and
         * leave the index in [1]. */
        cl_long zero[2] = {0, 0};
        d->flag = ocl.CreateBuffer(d->ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof zero,
                                   zero, &err);
        if (!d->flag) {
            gfp_status st = ocl_cl_fail(err, "device_open", "clCreateBuffer (flag words)");
            device_release(d);
            return st;
        }
        d->fault = fault_from_env();
        d->open = true;
    }
    *device = d;
    return GFP_OK;
}

static void ocl_device_close(void *device) {
    ocl_device *d = device;
    if (!d || !d->open) return;
    if (g_exiting) {
        d->open = false; /* the driver may be gone: leave its objects to the exit */
        return;
    }
    device_release(d);
}

/* ------------------------------------------------------------ memory */
static ocl_buffer *buffer_of(gfp_buffer b) {
    ocl_buffer *ob = b;
    return ob && ob->magic == OCL_BUFFER_MAGIC ? ob : NULL;
}

static gfp_status ocl_buffer_alloc(void *device, uint64_t nbytes, gfp_buffer *buffer,
                                   void **host_ptr) {
    ocl_device *d = device;
    if (!buffer || !host_ptr)
        return pk_fail(GFP_ERR_INVALID, "buffer_alloc: buffer or host_ptr is NULL");
    *buffer = NULL;
    *host_ptr = NULL; /* device memory is not host-addressable */
    if (nbytes == 0) return pk_fail(GFP_ERR_INVALID, "buffer_alloc: nbytes is 0");
    if (d->max_alloc_bytes && nbytes > d->max_alloc_bytes)
        return pk_fail(GFP_ERR_OUT_OF_MEMORY,
                        "buffer_alloc: %llu bytes is more than device '%s' allows in one "
                        "buffer (CL_DEVICE_MAX_MEM_ALLOC_SIZE = %llu)",
                        (unsigned long long)nbytes, d->name,
                        (unsigned long long)d->max_alloc_bytes);
    ocl_buffer *ob = malloc(sizeof *ob);
    if (!ob) return pk_fail(GFP_ERR_OUT_OF_MEMORY, "buffer_alloc: out of host memory");
    cl_int err = CL_SUCCESS;
    ob->mem = ocl.CreateBuffer(d->ctx, CL_MEM_READ_WRITE, (size_t)nbytes, NULL, &err);
    if (!ob->mem) {
        free(ob);
        char what[96];
        snprintf(what, sizeof what, "clCreateBuffer of %llu bytes", (unsigned long long)nbytes);
        return ocl_cl_fail(err, "buffer_alloc", what);
    }
    ob->magic = OCL_BUFFER_MAGIC;
    ob->size = nbytes;
    ob->prev = NULL;
    ob->next = d->live;
    if (d->live) d->live->prev = ob;
    d->live = ob;
    *buffer = ob;
    return GFP_OK;
}

static void ocl_buffer_free(void *device, gfp_buffer buffer) {
    ocl_device *d = device;
    ocl_buffer *ob = buffer_of(buffer);
    if (!ob) {
        if (buffer) pk_log(GFP_LOG_ERROR, "buffer_free of a handle that is not a live buffer");
        return;
    }
    ob->magic = 0;
    if (ob->prev) ob->prev->next = ob->next;
    else d->live = ob->next;
    if (ob->next) ob->next->prev = ob->prev;
    /* Released when the commands that use it have finished (and already
     * released when the process is exiting). */
    if (ob->mem && !g_exiting) ocl.ReleaseMemObject(ob->mem);
    free(ob);
}

static gfp_status check_range(const char *what, gfp_buffer buffer, uint64_t offset, uint64_t n) {
    const ocl_buffer *ob = buffer_of(buffer);
    if (!ob)
        return pk_fail(GFP_ERR_INVALID, "%s: the buffer is not a live OpenCL buffer (freed "
                        "already, or from another plugin)", what);
    return pk_check_range(what, ob->size, offset, n);
}

static gfp_status ocl_buffer_write(void *device, gfp_buffer buffer, uint64_t offset,
                                   const void *src, uint64_t n) {
    ocl_device *d = device;
    gfp_status st = check_range("buffer_write", buffer, offset, n);
    if (st != GFP_OK || n == 0) return st;
    if (!src) return pk_fail(GFP_ERR_INVALID, "buffer_write: src is NULL");
    cl_int err = ocl.EnqueueWriteBuffer(d->queue, buffer_of(buffer)->mem, CL_TRUE, (size_t)offset,
                                        (size_t)n, src, 0, NULL, NULL);
    return err == CL_SUCCESS ? GFP_OK : ocl_cl_fail(err, "buffer_write", "clEnqueueWriteBuffer");
}

static gfp_status ocl_buffer_read(void *device, gfp_buffer buffer, uint64_t offset, void *dst,
                                  uint64_t n) {
    ocl_device *d = device;
    gfp_status st = check_range("buffer_read", buffer, offset, n);
    if (st != GFP_OK || n == 0) return st;
    if (!dst) return pk_fail(GFP_ERR_INVALID, "buffer_read: dst is NULL");
    if (d->fault == OCL_FAULT_LOST)
        return ocl_cl_fail(CL_DEVICE_NOT_AVAILABLE, "buffer_read",
                           "clEnqueueReadBuffer (fault injected by GRAFT_OPENCL_FAULT=lost)");
    /* Blocking: on an in-order queue it waits for every earlier command. */
    cl_int err = ocl.EnqueueReadBuffer(d->queue, buffer_of(buffer)->mem, CL_TRUE, (size_t)offset,
                                       (size_t)n, dst, 0, NULL, NULL);
    return err == CL_SUCCESS ? GFP_OK : ocl_cl_fail(err, "buffer_read", "clEnqueueReadBuffer");
}

static gfp_status ocl_buffer_copy(void *device, gfp_buffer src, uint64_t src_offset,
                                  gfp_buffer dst, uint64_t dst_offset, uint64_t n) {
    ocl_device *d = device;
    gfp_status st = check_range("buffer_copy (source)", src, src_offset, n);
    if (st == GFP_OK) st = check_range("buffer_copy (destination)", dst, dst_offset, n);
    if (st != GFP_OK || n == 0) return st;
    cl_int err = ocl.EnqueueCopyBuffer(d->queue, buffer_of(src)->mem, buffer_of(dst)->mem,
                                       (size_t)src_offset, (size_t)dst_offset, (size_t)n, 0, NULL,
                                       NULL);
    return err == CL_SUCCESS ? GFP_OK : ocl_cl_fail(err, "buffer_copy", "clEnqueueCopyBuffer");
}

static gfp_status ocl_buffer_fill(void *device, gfp_buffer buffer, uint64_t offset, uint64_t n,
                                  const void *pattern, uint32_t pattern_size) {
    ocl_device *d = device;
    gfp_status pst = pk_check_fill_pattern(n, pattern, pattern_size);
    if (pst != GFP_OK) return pst;
    gfp_status st = check_range("buffer_fill", buffer, offset, n);
    if (st != GFP_OK || n == 0) return st;
    cl_mem mem = buffer_of(buffer)->mem;
    cl_int err;
    if (offset % pattern_size == 0) {
        err = ocl.EnqueueFillBuffer(d->queue, mem, pattern, pattern_size, (size_t)offset, (size_t)n,
                                    0, NULL, NULL);
    } else {
        /* clEnqueueFillBuffer wants an offset aligned to the pattern. */
        unsigned char *tmp = malloc((size_t)n);
        if (!tmp) return pk_fail(GFP_ERR_OUT_OF_MEMORY, "buffer_fill: out of host memory");
        for (uint64_t i = 0; i < n; i += pattern_size) memcpy(tmp + i, pattern, pattern_size);
        err = ocl.EnqueueWriteBuffer(d->queue, mem, CL_TRUE, (size_t)offset, (size_t)n, tmp, 0,
                                     NULL, NULL);
        free(tmp);
    }
    return err == CL_SUCCESS ? GFP_OK : ocl_cl_fail(err, "buffer_fill", "clEnqueueFillBuffer");
}

static gfp_status ocl_synchronize(void *device) {
    ocl_device *d = device;
    cl_int err = ocl.Finish(d->queue);
    return err == CL_SUCCESS ? GFP_OK : ocl_cl_fail(err, "synchronize", "clFinish");
}

/* ------------------------------------------------------------ ops */
static gfp_status ocl_query_op(void *device, const gfp_op_query *q, uint32_t *support) {
    const ocl_device *d = device;
    gfp_status st;
    const ocl_family *f = PK_QUERY_ROUTE(families, q, support, stored_dtypes(d), &st);
    if (f) *support = f->support(d, q);
    return st;
}

const ocl_family *ocl_route(ocl_device *d, uint32_t op, const gfp_tensor *const *in,
                            uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                            const void *params, gfp_status *st) {
    const pk_device_rules rules = {"opencl", d->name, stored_dtypes(d), buffer_size, NULL};
    return PK_LAUNCH_ROUTE(families, &rules, op, in, n_in, out, n_out, params, st);
}

static gfp_status ocl_launch(void *device, uint32_t op, const gfp_tensor *const *inputs,
                             uint32_t n_inputs, const gfp_tensor *const *outputs,
                             uint32_t n_outputs, const void *params) {
    ocl_device *d = device;
    gfp_status st;
    const ocl_family *f = ocl_route(d, op, inputs, n_inputs, outputs, n_outputs, params, &st);
    if (f) st = f->launch(d, op, inputs, n_inputs, outputs, n_outputs, params);
    /* Submit now, so the device works while the host prepares the next op. */
    if (f && st == GFP_OK) ocl.Flush(d->queue);
    return st;
}

static int ext_clblast_available(void) { return ocl_clblast_available(); }

static const graft_opencl_gemm_ext gemm_ext = {
    .struct_size = sizeof(graft_opencl_gemm_ext),
    .set_gemm = ocl_matmul_force_gemm,
    .clblast_available = ext_clblast_available,
};

static const graft_opencl_stats_ext stats_ext = {
    .struct_size = sizeof(graft_opencl_stats_ext),
    .graph_launches = ocl_graph_launches,
    .fused_runs = ocl_fuse_runs,
    .fused_launches = ocl_fuse_launches,
};

static gfp_status ocl_query_extension(void *plugin_ctx, const char *name, void **out) {
    (void)plugin_ctx;
    if (out) *out = NULL;
    if (name && out && !strcmp(name, "opencl.gemm")) {
        *out = (void *)&gemm_ext;
        return GFP_OK;
    }
    if (name && out && !strcmp(name, "opencl.stats")) {
        *out = (void *)&stats_ext;
        return GFP_OK;
    }
    return pk_fail(GFP_ERR_NOT_FOUND, "the opencl plugin has no extension \"%s\" (it has "
                    "\"opencl.gemm\" and \"opencl.stats\")", name ? name : "(null)");
}

/* ------------------------------------------------------------ negotiation */
static const gfp_plugin ocl_table = {
    .struct_size = sizeof(gfp_plugin),
    .abi_major = GFP_ABI_MAJOR,
    .abi_minor = GFP_ABI_MINOR,
    .name = "opencl",
    .version = "1.0.0",
    .init = ocl_init,
    .shutdown = ocl_shutdown,
    .device_count = ocl_device_count,
    .device_props = ocl_device_props,
    .device_open = ocl_device_open,
    .device_close = ocl_device_close,
    .buffer_alloc = ocl_buffer_alloc,
    .buffer_free = ocl_buffer_free,
    .buffer_write = ocl_buffer_write,
    .buffer_read = ocl_buffer_read,
    .buffer_copy = ocl_buffer_copy,
    .buffer_fill = ocl_buffer_fill,
    .synchronize = ocl_synchronize,
    .query_op = ocl_query_op,
    .launch = ocl_launch,
    .query_extension = ocl_query_extension,
    .graph_create = ocl_graph_create,
    .graph_launch = ocl_graph_launch,
    .graph_destroy = ocl_graph_destroy,
};

PK_DEFINE_NEGOTIATE(ocl_table)
