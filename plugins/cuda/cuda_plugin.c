/* SPDX-License-Identifier: BSD-3-Clause */
/* cuda_plugin.c — the CUDA plugin's entry point, devices and error reporting.
 *
 * negotiate() only checks the version and keeps the host table. init() asks
 * the runtime how many devices there are; that loads the driver (or finds it
 * missing) but creates no context. A machine without the driver, or without
 * a GPU, gets zero devices and the reason, shown by graft-info. Devices whose
 * compute capability this build has no code for are left out, with the
 * reason. device_open() creates the stream, the cuBLAS and cuDNN handles and
 * the staging memory; the first one also loads cuBLAS and cuDNN themselves
 * (cuda_libs.h). */
#define _GNU_SOURCE /* secure_getenv */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"
#include "plugin_negotiate.h"

#ifndef GRAFT_CUDA_VERSION_TEXT
#define GRAFT_CUDA_VERSION_TEXT "0.1.0"
#endif
/* The architectures this build holds code for, from CMake:
 * GRAFT_CUDA_SASS "80,86,89,90" (cubins) and GRAFT_CUDA_PTX "90" (PTX, which
 * the driver compiles for newer GPUs). Empty when CMake could not tell. */
#ifndef GRAFT_CUDA_SASS
#define GRAFT_CUDA_SASS ""
#endif
#ifndef GRAFT_CUDA_PTX
#define GRAFT_CUDA_PTX ""
#endif


/* Errors after which the CUDA context is unusable until the process ends. */
static bool is_sticky(cudaError_t e) {
    switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable: return true;
    default: return false;
    }
}

static gfp_status status_of(cudaError_t e) {
    switch (e) {
    case cudaErrorMemoryAllocation: return GFP_ERR_OUT_OF_MEMORY;
    case cudaErrorNotSupported:
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorInvalidDeviceFunction: return GFP_ERR_UNSUPPORTED;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver: return GFP_ERR_NOT_FOUND;
    default: return GFP_ERR_DEVICE;
    }
}

gfp_status cu_check(cudaError_t e, const char *op, const char *what) {
    if (e == cudaSuccess) return GFP_OK;
    (void)cudaGetLastError(); /* a non-sticky error must not leak into the next call */
    return pk_fail(status_of(e), "%s: %s failed: %s (%s)%s", op, what, cudaGetErrorName(e),
                   cudaGetErrorString(e),
                   is_sticky(e) ? "; the CUDA context is lost: no further work can run on this "
                                  "device in this process"
                                : "");
}

gfp_status cu_check_blas(cublasStatus_t s, const char *op, const char *what) {
    if (s == CUBLAS_STATUS_SUCCESS) return GFP_OK;
    gfp_status st = GFP_ERR_DEVICE;
    if (s == CUBLAS_STATUS_ALLOC_FAILED) st = GFP_ERR_OUT_OF_MEMORY;
    else if (s == CUBLAS_STATUS_NOT_SUPPORTED || s == CUBLAS_STATUS_ARCH_MISMATCH)
        st = GFP_ERR_UNSUPPORTED;
    else if (s == CUBLAS_STATUS_INVALID_VALUE) st = GFP_ERR_INVALID;
    return pk_fail(st, "%s: %s failed: %s (%s)", op, what, cu_blas.cublasGetStatusName(s),
                   cu_blas.cublasGetStatusString(s));
}

#ifdef GRAFT_CUDA_HAVE_CUDNN
gfp_status cu_check_dnn(cudnnStatus_t s, const char *op, const char *what) {
    if (s == CUDNN_STATUS_SUCCESS) return GFP_OK;
    gfp_status st = GFP_ERR_DEVICE;
    int category = ((int)s / 1000) * 1000;
    if (s == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED ||
        s == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED)
        st = GFP_ERR_OUT_OF_MEMORY;
    else if (category == 3000) st = GFP_ERR_UNSUPPORTED;
    else if (category == 2000) st = GFP_ERR_INVALID;
    return pk_fail(st, "%s: %s failed: %s", op, what, cu_dnn.cudnnGetErrorString(s));
}
#endif

bool cu_cudnn_wanted(void) {
    const char *v = secure_getenv("GRAFT_CUDA_CUDNN");
    return !(v && (!strcmp(v, "0") || !strcmp(v, "off") || !strcmp(v, "OFF")));
}

/* ------------------------------------------------------------ plugin state */
typedef struct cu_info {
    int ordinal;
    int cc_major, cc_minor;
    char name[128];
    uint64_t memory;
} cu_info;

static struct {
    int n;                      /* usable devices */
    cu_info dev[CU_MAX_DEVICES];
    char note[480];             /* why there are none, or which were left out */
    int runtime_version, driver_version;
} g;

static void version_text(int v, char *buf, size_t len) {
    if (v <= 0) snprintf(buf, len, "none");
    else snprintf(buf, len, "%d.%d", v / 1000, (v % 1000) / 10);
}

/* True when the comma list holds an architecture that runs on cc: a cubin of
 * the same major and no higher minor, or PTX of no higher version. */
static bool arch_in(const char *list, int cc, bool ptx) {
    const char *p = list;
    while (*p) {
        int a = atoi(p);
        if (a > 0 && (ptx ? a <= cc : (a / 10 == cc / 10 && a <= cc))) return true;
        const char *comma = strchr(p, ',');
        if (!comma) break;
        p = comma + 1;
    }
    return false;
}

static bool build_runs_on(int major, int minor) {
    if (!GRAFT_CUDA_SASS[0] && !GRAFT_CUDA_PTX[0]) return true; /* unknown: let open() probe */
    int cc = major * 10 + minor;
    return arch_in(GRAFT_CUDA_SASS, cc, false) || arch_in(GRAFT_CUDA_PTX, cc, true);
}

static const char *built_archs(void) {
    static char buf[160];
    snprintf(buf, sizeof buf, "sm %s%s%s", GRAFT_CUDA_SASS[0] ? GRAFT_CUDA_SASS : "?",
             GRAFT_CUDA_PTX[0] ? ", PTX " : "", GRAFT_CUDA_PTX);
    return buf;
}

static gfp_status cu_init(void **plugin_ctx) {
    if (plugin_ctx) *plugin_ctx = NULL;
    memset(&g, 0, sizeof g);
    cudaRuntimeGetVersion(&g.runtime_version);
    cudaDriverGetVersion(&g.driver_version); /* 0 when no driver could be loaded */
    char rt[16], drv[16];
    version_text(g.runtime_version, rt, sizeof rt);
    version_text(g.driver_version, drv, sizeof drv);

    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        const char *why;
        if (g.driver_version == 0)
            why = "CUDA driver not found (libcuda.so.1 could not be loaded; install the NVIDIA "
                  "driver)";
        else if (e == cudaErrorNoDevice)
            why = "no CUDA-capable device is present";
        else if (e == cudaErrorInsufficientDriver)
            why = "the NVIDIA driver is older than this plugin's CUDA runtime (update the "
                  "driver)";
        else
            why = "the CUDA runtime could not enumerate devices";
        snprintf(g.note, sizeof g.note, "%s: %s (%s); CUDA runtime %s, driver %s", why,
                 cudaGetErrorName(e), cudaGetErrorString(e), rt, drv);
        pk_log(GFP_LOG_INFO, "cuda: %s", g.note);
        return GFP_OK; /* zero devices is a valid answer */
    }
    size_t used = 0;
    for (int i = 0; i < count && i < CU_MAX_DEVICES; i++) {
        struct cudaDeviceProp prop;
        e = cudaGetDeviceProperties(&prop, i);
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            used += (size_t)snprintf(g.note + used, used < sizeof g.note ? sizeof g.note - used : 0,
                                     "%sdevice %d left out: %s", used ? "; " : "", i,
                                     cudaGetErrorName(e));
            continue;
        }
        if (!build_runs_on(prop.major, prop.minor)) {
            used += (size_t)snprintf(g.note + used, used < sizeof g.note ? sizeof g.note - used : 0,
                                     "%sdevice %d (%.60s, sm_%d%d) left out: this build has code "
                                     "for %s (rebuild with GRAFT_CUDA_ARCHITECTURES)",
                                     used ? "; " : "", i, prop.name, prop.major, prop.minor,
                                     built_archs());
            continue;
        }
        cu_info *d = &g.dev[g.n++];
        d->ordinal = i;
        d->cc_major = prop.major;
        d->cc_minor = prop.minor;
        d->memory = prop.totalGlobalMem;
        snprintf(d->name, sizeof d->name, "%.127s", prop.name);
    }
    if (count == 0 && !g.note[0])
        snprintf(g.note, sizeof g.note, "no CUDA-capable device is present (driver %s)", drv);
    return GFP_OK;
}

static void cu_shutdown(void *plugin_ctx) {
    (void)plugin_ctx;
    /* No cudaDeviceReset: other code in the process may use the same primary
     * contexts. Every device was closed before this call. */
}

static gfp_status cu_device_count(void *plugin_ctx, uint32_t *count) {
    (void)plugin_ctx;
    if (!count) return pk_fail(GFP_ERR_INVALID, "device_count: count is NULL");
    *count = (uint32_t)g.n;
    if (g.note[0]) pk_host->set_error(pk_host->host_ctx, g.note);
    return GFP_OK;
}

static gfp_status cu_device_props(void *plugin_ctx, uint32_t index, gfp_device_props *props) {
    (void)plugin_ctx;
    if (!props) return pk_fail(GFP_ERR_INVALID, "device_props: props is NULL");
    if (index >= (uint32_t)g.n)
        return pk_fail(GFP_ERR_NOT_FOUND, "device_props: device %u does not exist (%d devices)",
                       (unsigned)index, g.n);
    const cu_info *d = &g.dev[index];
    gfp_device_props full;
    memset(&full, 0, sizeof full);
    full.struct_size = props->struct_size;
    full.flags = 0; /* device memory; calls serialised by the core */
    snprintf(full.name, sizeof full.name, "%s", d->name);
    snprintf(full.type, sizeof full.type, "cuda");
    full.memory_bytes = d->memory;
    full.dtypes = GFP_DTYPE_BIT(GFP_F32) | GFP_DTYPE_BIT(GFP_F64) | GFP_DTYPE_BIT(GFP_I32) |
                  GFP_DTYPE_BIT(GFP_I64) | GFP_DTYPE_BIT(GFP_BOOL) | GFP_DTYPE_BIT(GFP_F16) |
                  GFP_DTYPE_BIT(GFP_BF16) | GFP_DTYPE_BIT(GFP_C64) | GFP_DTYPE_BIT(GFP_C128);
    full.max_rank = GFP_MAX_RANK;
    full.max_alloc_bytes = 0;
    char rt[16], drv[16];
    version_text(g.runtime_version, rt, sizeof rt);
    version_text(g.driver_version, drv, sizeof drv);
    snprintf(full.driver, sizeof full.driver,
             "compute capability %d.%d, %.1f GiB, CUDA driver %s, runtime %s", d->cc_major,
             d->cc_minor, (double)d->memory / (1024.0 * 1024.0 * 1024.0), drv, rt);
    return pk_copy_props(props, &full);
}

gfp_status cu_use(cu_device *dev, const char *op) {
    return cu_check(cudaSetDevice(dev->ordinal), op, "cudaSetDevice");
}

static void close_device(cu_device *dev) {
    cudaSetDevice(dev->ordinal);
    if (dev->stream) cudaStreamSynchronize(dev->stream);
#ifdef GRAFT_CUDA_HAVE_CUDNN
    if (dev->dnn) cu_dnn.cudnnDestroy(dev->dnn);
#endif
    cu_graphs_release(dev);
    if (dev->blas) cu_blas.cublasDestroy(dev->blas);
    cu_fft_close(dev);
    cu_memory_close(dev);
    if (dev->stream) cudaStreamDestroy(dev->stream);
    (void)cudaGetLastError();
    free(dev);
}

#ifdef GRAFT_CUDA_HAVE_CUDNN
/* dev's cuDNN handle; without one (no cuDNN library, or no handle) dev->dnn
 * stays NULL and convolutions run on the plugin's own kernels. */
static void open_dnn(cu_device *dev) {
    const char *why = cu_dnn_load();
    if (why) {
        pk_log(GFP_LOG_WARN, "cuda: %s: convolutions use the plugin's own kernels", why);
        return;
    }
    cudnnStatus_t ds = cu_dnn.cudnnCreate(&dev->dnn);
    if (ds == CUDNN_STATUS_SUCCESS) ds = cu_dnn.cudnnSetStream(dev->dnn, dev->stream);
    if (ds != CUDNN_STATUS_SUCCESS) {
        pk_log(GFP_LOG_WARN, "cuda: device %d: cuDNN unusable (%s): convolutions use the "
               "plugin's own kernels", dev->ordinal, cu_dnn.cudnnGetErrorString(ds));
        if (dev->dnn) cu_dnn.cudnnDestroy(dev->dnn);
        dev->dnn = NULL;
    }
}
#endif

static gfp_status cu_device_open(void *plugin_ctx, uint32_t index, void **device) {
    (void)plugin_ctx;
    if (!device) return pk_fail(GFP_ERR_INVALID, "device_open: device is NULL");
    *device = NULL;
    if (index >= (uint32_t)g.n)
        return pk_fail(GFP_ERR_NOT_FOUND, "device_open: device %u does not exist (%d devices)",
                       (unsigned)index, g.n);
    const cu_info *info = &g.dev[index];
    cu_device *dev = calloc(1, sizeof *dev);
    if (!dev) return pk_fail(GFP_ERR_OUT_OF_MEMORY, "device_open: out of host memory");
    dev->ordinal = info->ordinal;
    dev->cc_major = info->cc_major;
    dev->cc_minor = info->cc_minor;
    snprintf(dev->name, sizeof dev->name, "%s", info->name);

    gfp_status st = cu_use(dev, "device_open");
    if (st == GFP_OK) {
        cudaError_t e = cuk_probe();
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            st = pk_fail(status_of(e),
                         "device_open: %s (compute capability %d.%d) cannot run this build's "
                         "kernels: %s (%s); this build has code for %s (rebuild with "
                         "GRAFT_CUDA_ARCHITECTURES)",
                         dev->name, dev->cc_major, dev->cc_minor, cudaGetErrorName(e),
                         cudaGetErrorString(e), built_archs());
        }
    }
    if (st == GFP_OK)
        st = cu_check(cudaStreamCreateWithFlags(&dev->stream, cudaStreamNonBlocking),
                      "device_open", "cudaStreamCreateWithFlags");
    if (st == GFP_OK) {
        int pools = 0;
        cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, dev->ordinal);
        dev->async_alloc = pools != 0;
        cudaMemPool_t pool;
        if (dev->async_alloc && cudaDeviceGetDefaultMemPool(&pool, dev->ordinal) == cudaSuccess) {
            /* Keep some freed memory in the pool for the launches' scratch
             * (workspaces, contiguous copies); the core caches the rest. */
            uint64_t keep = 64u << 20;
            cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
        }
        (void)cudaGetLastError();
    }
    /* cuBLAS and cuDNN are opened here, by the first device_open, not when
     * the plugin loads (cuda_libs.h). */
    if (st == GFP_OK) st = cu_blas_load("device_open");
    if (st == GFP_OK)
        st = cu_check_blas(cu_blas.cublasCreate(&dev->blas), "device_open", "cublasCreate");
    if (st == GFP_OK)
        st = cu_check_blas(cu_blas.cublasSetStream(dev->blas, dev->stream), "device_open",
                           "cublasSetStream");
#ifdef GRAFT_CUDA_HAVE_CUDNN
    if (st == GFP_OK && cu_cudnn_wanted()) open_dnn(dev);
#endif
    if (st == GFP_OK) st = cu_memory_open(dev);
    if (st != GFP_OK) {
        close_device(dev);
        return st;
    }
    *device = dev;
    return GFP_OK;
}

static void cu_device_close(void *device) {
    if (device) close_device(device);
}

/* ------------------------------------------------------------ negotiation */
static const gfp_plugin cu_table = {
    .struct_size = sizeof(gfp_plugin),
    .abi_major = GFP_ABI_MAJOR,
    .abi_minor = GFP_ABI_MINOR,
    .name = "cuda",
    .version = GRAFT_CUDA_VERSION_TEXT,
    .init = cu_init,
    .shutdown = cu_shutdown,
    .device_count = cu_device_count,
    .device_props = cu_device_props,
    .device_open = cu_device_open,
    .device_close = cu_device_close,
    .buffer_alloc = cu_buffer_alloc,
    .buffer_free = cu_buffer_free,
    .buffer_write = cu_buffer_write,
    .buffer_read = cu_buffer_read,
    .buffer_copy = cu_buffer_copy,
    .buffer_fill = cu_buffer_fill,
    .synchronize = cu_synchronize,
    .query_op = cu_query_op,
    .launch = cu_launch,
    .query_extension = pk_no_extension,
    .graph_create = cu_graph_create,
    .graph_launch = cu_graph_launch,
    .graph_destroy = cu_graph_destroy,
};

PK_DEFINE_NEGOTIATE(cu_table)
