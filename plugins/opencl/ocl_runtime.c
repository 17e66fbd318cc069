/* SPDX-License-Identifier: BSD-3-Clause */
/* ocl_runtime.c — the OpenCL ICD loader, opened at run time, and CL error names.
 *
 * Opening libOpenCL.so.1 with dlopen (instead of linking it) keeps the plugin
 * loadable on a machine without OpenCL: it then reports zero devices and says
 * why, and the other plugins are unaffected. The library stays loaded until
 * the process exits: vendor drivers keep threads that must not lose their
 * code under them. */
#define _GNU_SOURCE /* secure_getenv */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl_internal.h"

ocl_api ocl;

const char *ocl_getenv(const char *name) { return secure_getenv(name); }

/* Each entry point by name, into its slot of `ocl`. */
#define OCL_ENTRY(name) {"cl" #name, (void **)&ocl.name}
static const struct {
    const char *symbol;
    void **slot;
} entries[] = {
    OCL_ENTRY(GetPlatformIDs),       OCL_ENTRY(GetPlatformInfo),
    OCL_ENTRY(GetDeviceIDs),         OCL_ENTRY(GetDeviceInfo),
    OCL_ENTRY(CreateContext),        OCL_ENTRY(ReleaseContext),
    OCL_ENTRY(CreateCommandQueue),   OCL_ENTRY(ReleaseCommandQueue),
    OCL_ENTRY(CreateBuffer),         OCL_ENTRY(ReleaseMemObject),
    OCL_ENTRY(RetainMemObject),
    OCL_ENTRY(CreateProgramWithSource), OCL_ENTRY(CreateProgramWithBinary),
    OCL_ENTRY(BuildProgram),         OCL_ENTRY(GetProgramBuildInfo),
    OCL_ENTRY(GetProgramInfo),       OCL_ENTRY(ReleaseProgram),
    OCL_ENTRY(CreateKernel),         OCL_ENTRY(ReleaseKernel),
    OCL_ENTRY(GetKernelWorkGroupInfo),
    OCL_ENTRY(SetKernelArg),         OCL_ENTRY(EnqueueNDRangeKernel),
    OCL_ENTRY(EnqueueReadBuffer),    OCL_ENTRY(EnqueueWriteBuffer),
    OCL_ENTRY(EnqueueCopyBuffer),    OCL_ENTRY(EnqueueFillBuffer),
    OCL_ENTRY(Finish),               OCL_ENTRY(Flush),
    OCL_ENTRY(WaitForEvents),        OCL_ENTRY(ReleaseEvent),
};
#undef OCL_ENTRY

bool ocl_api_load(char *why, size_t len) {
    static const char *const names[] = {"libOpenCL.so.1", "libOpenCL.so"};
    const char *err;
    void *lib = pk_dlopen_first(names, sizeof names / sizeof names[0], &err);
    if (!lib) {
        snprintf(why, len,
                 "cannot load the OpenCL ICD loader libOpenCL.so.1 (%s); install one "
                 "(Debian: ocl-icd-libopencl1) and a driver for your device",
                 err);
        return false;
    }
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
        *entries[i].slot = dlsym(lib, entries[i].symbol);
        if (!*entries[i].slot) {
            snprintf(why, len,
                     "the OpenCL ICD loader lacks %s: it is older than OpenCL 1.2, which "
                     "graft needs",
                     entries[i].symbol);
            return false;
        }
    }
    return true;
}

const char *ocl_error_name(cl_int err) {
    switch (err) {
#define N(e) \
    case e: return #e;
        N(CL_SUCCESS)
        N(CL_DEVICE_NOT_FOUND)
        N(CL_DEVICE_NOT_AVAILABLE)
        N(CL_COMPILER_NOT_AVAILABLE)
        N(CL_MEM_OBJECT_ALLOCATION_FAILURE)
        N(CL_OUT_OF_RESOURCES)
        N(CL_OUT_OF_HOST_MEMORY)
        N(CL_PROFILING_INFO_NOT_AVAILABLE)
        N(CL_MEM_COPY_OVERLAP)
        N(CL_IMAGE_FORMAT_MISMATCH)
        N(CL_IMAGE_FORMAT_NOT_SUPPORTED)
        N(CL_BUILD_PROGRAM_FAILURE)
        N(CL_MAP_FAILURE)
        N(CL_MISALIGNED_SUB_BUFFER_OFFSET)
        N(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
        N(CL_COMPILE_PROGRAM_FAILURE)
        N(CL_LINKER_NOT_AVAILABLE)
        N(CL_LINK_PROGRAM_FAILURE)
        N(CL_DEVICE_PARTITION_FAILED)
        N(CL_KERNEL_ARG_INFO_NOT_AVAILABLE)
        N(CL_INVALID_VALUE)
        N(CL_INVALID_DEVICE_TYPE)
        N(CL_INVALID_PLATFORM)
        N(CL_INVALID_DEVICE)
        N(CL_INVALID_CONTEXT)
        N(CL_INVALID_QUEUE_PROPERTIES)
        N(CL_INVALID_COMMAND_QUEUE)
        N(CL_INVALID_HOST_PTR)
        N(CL_INVALID_MEM_OBJECT)
        N(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR)
        N(CL_INVALID_IMAGE_SIZE)
        N(CL_INVALID_SAMPLER)
        N(CL_INVALID_BINARY)
        N(CL_INVALID_BUILD_OPTIONS)
        N(CL_INVALID_PROGRAM)
        N(CL_INVALID_PROGRAM_EXECUTABLE)
        N(CL_INVALID_KERNEL_NAME)
        N(CL_INVALID_KERNEL_DEFINITION)
        N(CL_INVALID_KERNEL)
        N(CL_INVALID_ARG_INDEX)
        N(CL_INVALID_ARG_VALUE)
        N(CL_INVALID_ARG_SIZE)
        N(CL_INVALID_KERNEL_ARGS)
        N(CL_INVALID_WORK_DIMENSION)
        N(CL_INVALID_WORK_GROUP_SIZE)
        N(CL_INVALID_WORK_ITEM_SIZE)
        N(CL_INVALID_GLOBAL_OFFSET)
        N(CL_INVALID_EVENT_WAIT_LIST)
        N(CL_INVALID_EVENT)
        N(CL_INVALID_OPERATION)
        N(CL_INVALID_GL_OBJECT)
        N(CL_INVALID_BUFFER_SIZE)
        N(CL_INVALID_MIP_LEVEL)
        N(CL_INVALID_GLOBAL_WORK_SIZE)
        N(CL_INVALID_PROPERTY)
        N(CL_INVALID_IMAGE_DESCRIPTOR)
        N(CL_INVALID_COMPILER_OPTIONS)
        N(CL_INVALID_LINKER_OPTIONS)
        N(CL_INVALID_DEVICE_PARTITION_COUNT)
#undef N
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
    default: break;
    }
    static _Thread_local char buf[32];
    snprintf(buf, sizeof buf, "CL error %d", (int)err);
    return buf;
}

gfp_status ocl_status_of(cl_int err) {
    switch (err) {
    case CL_SUCCESS: return GFP_OK;
    case CL_MEM_OBJECT_ALLOCATION_FAILURE:
    case CL_OUT_OF_HOST_MEMORY:
    case CL_INVALID_BUFFER_SIZE: return GFP_ERR_OUT_OF_MEMORY;
    case CL_INVALID_VALUE:
    case CL_INVALID_ARG_VALUE:
    case CL_INVALID_ARG_SIZE:
    case CL_INVALID_KERNEL_ARGS:
    case CL_INVALID_WORK_GROUP_SIZE:
    case CL_INVALID_GLOBAL_WORK_SIZE: return GFP_ERR_INTERNAL;
    default: return GFP_ERR_DEVICE; /* CL_OUT_OF_RESOURCES, a lost device, ... */
    }
}

gfp_status ocl_cl_fail(cl_int err, const char *op, const char *what) {
    const char *hint = "";
    if (err == CL_OUT_OF_RESOURCES)
        hint = " (the device ran out of resources: try smaller tensors, or free memory)";
    else if (err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_HOST_MEMORY)
        hint = " (out of memory)";
    else if (err == CL_DEVICE_NOT_AVAILABLE || err == CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
        hint = " (the device was lost or an earlier kernel failed; its results are undefined)";
    return pk_fail(ocl_status_of(err), "%s: %s failed: %s (%d)%s", op, what, ocl_error_name(err),
                    (int)err, hint);
}
