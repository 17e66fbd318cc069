/* SPDX-License-Identifier: BSD-3-Clause */
/* graft_opencl_ext.h — the OpenCL plugin's extension, by name through the
 * ABI's query_extension slot, or gf_device_query_extension in the public API:
 *
 *   const graft_opencl_gemm_ext *ext;
 *   gf_device_query_extension(dev, "opencl.gemm", (void **)&ext);
 *
 * Check ext->struct_size before reading a field (fields are only appended).
 * It lets a benchmark compare graft's GEMM kernels with CLBlast's in one
 * process, which GRAFT_OPENCL_GEMM can only do before the run. A second
 * extension, "opencl.stats", counts the launches of captured graphs and
 * their fused runs. */
#ifndef GRAFT_OPENCL_EXT_H
#define GRAFT_OPENCL_EXT_H

#include <stdint.h>

typedef struct graft_opencl_gemm_ext {
    uint32_t struct_size;
    uint32_t reserved0;
    /* Which GEMM float matmuls use, for every device of the plugin, over
     * GRAFT_OPENCL_GEMM: 0 back to the variable (auto when unset), 1 graft's
     * kernels, 2 CLBlast (a launch fails with UNSUPPORTED where CLBlast is
     * missing or cannot take the views). */
    void (*set_gemm)(int mode);
    int (*clblast_available)(void); /* 1 when libclblast loads */
} graft_opencl_gemm_ext;

/* "opencl.stats": counters for tests and benchmarks. */
typedef struct graft_opencl_stats_ext {
    uint32_t struct_size;
    uint32_t reserved0;
    /* Launches of captured graphs through the graph slots, every device,
     * since load (each enqueues kernels whose arguments were set at
     * graph_create). */
    uint64_t (*graph_launches)(void);
    /* Runs of elementwise launches the graphs created so far fuse into one
     * kernel each (ocl_fuse.c), and the launches those runs cover: each
     * replay then enqueues fused_launches - fused_runs fewer kernels. */
    uint64_t (*fused_runs)(void);
    uint64_t (*fused_launches)(void);
} graft_opencl_stats_ext;

#endif
