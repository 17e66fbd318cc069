/* SPDX-License-Identifier: BSD-3-Clause */
/* variants.c — a plugin's own variants of a workload, reached through
 * gf_device_query_extension: the bench asks the device's plugin for an
 * extension it knows, and each variant becomes a row of its own next to
 * graft's default choice.
 *
 *   "vulkan.stats" (plugins/vulkan/graft_vulkan_ext.h), family matmul: the
 *       naive, the tiled (shared memory) and the register-blocked shader,
 *       each forced;
 *   "opencl.gemm" (plugins/opencl/graft_opencl_ext.h), families matmul and
 *       matmul64: graft's GEMM kernel and CLBlast's (when libclblast loads).
 * A plugin without the extension has no variants (NOT_FOUND is expected
 * and cleared).
 *
 * bench_fused_counts reads the plugins' counters of fused elementwise runs
 * in captured graphs ("cpu_onednn.fused_runs" / "cpu_onednn.fused_launches",
 * "vulkan.stats", "opencl.stats"), so that replay rows can say how many launches a graph's
 * fusion saved. */
#include <string.h>

#include "bench.h"
#include "graft_opencl_ext.h"
#include "graft_vulkan_ext.h"

static void vulkan_select(void *ext, int mode) {
    ((const graft_vulkan_stats_ext *)ext)->set_matmul_mode(mode);
}

static void opencl_select(void *ext, int mode) {
    ((const graft_opencl_gemm_ext *)ext)->set_gemm(mode);
}

/* The extension of that name, or NULL (its error cleared). */
static void *extension(gf_device *dev, const char *name, uint32_t min_size) {
    void *ext = NULL;
    if (gf_device_query_extension(dev, name, &ext) != GF_OK) {
        gf_clear_error();
        return NULL;
    }
    return *(const uint32_t *)ext >= min_size ? ext : NULL; /* struct_size comes first */
}

static int add(bench_variant *out, int n, int max, const char *label, void *ext,
               void (*select)(void *, int), int mode) {
    if (n >= max) return n;
    bench_variant *v = &out[n];
    snprintf(v->label, sizeof v->label, "%s", label);
    v->ext = ext;
    v->select = select;
    v->mode = mode;
    return n + 1;
}

int bench_variants(gf_device *dev, const char *family, bench_variant *out, int max) {
    if (!dev) return 0;
    const char *plugin = gf_device_plugin(dev);
    int n = 0;
    if (!strcmp(plugin, "vulkan") && !strcmp(family, "matmul")) {
        void *ext = extension(dev, "vulkan.stats", sizeof(graft_vulkan_stats_ext));
        if (ext) {
            n = add(out, n, max, "shader naive", ext, vulkan_select, 1);
            n = add(out, n, max, "shader tiled", ext, vulkan_select, 2);
            n = add(out, n, max, "shader reg-blocked", ext, vulkan_select, 3);
        }
    }
    if (!strcmp(plugin, "opencl") && (!strcmp(family, "matmul") || !strcmp(family, "matmul64"))) {
        graft_opencl_gemm_ext *ext = extension(dev, "opencl.gemm", sizeof(graft_opencl_gemm_ext));
        if (ext) {
            n = add(out, n, max, "graft GEMM", ext, opencl_select, 1);
            if (ext->clblast_available()) n = add(out, n, max, "CLBlast GEMM", ext, opencl_select, 2);
        }
    }
    return n;
}

void bench_variant_select(const bench_variant *v, bool on) { v->select(v->ext, on ? v->mode : 0); }

bool bench_fused_counts(gf_device *dev, uint64_t *runs, uint64_t *launches) {
    *runs = *launches = 0;
    if (!dev) return false;
    const char *plugin = gf_device_plugin(dev);
    if (!strcmp(plugin, "vulkan")) {
        const graft_vulkan_stats_ext *v = NULL;
        if (gf_device_query_extension(dev, "vulkan.stats", (void **)&v) != GF_OK) {
            gf_clear_error();
            return false;
        }
        if (v->struct_size < sizeof *v) return false; /* an older plugin: no counters */
        *runs = v->fused_runs();
        *launches = v->fused_launches();
        return true;
    }
    if (!strcmp(plugin, "opencl")) {
        const graft_opencl_stats_ext *o = NULL;
        if (gf_device_query_extension(dev, "opencl.stats", (void **)&o) != GF_OK) {
            gf_clear_error();
            return false;
        }
        if (o->struct_size < sizeof *o) return false; /* an older plugin: no counters */
        *runs = o->fused_runs();
        *launches = o->fused_launches();
        return true;
    }
    if (!strcmp(plugin, "cpu_onednn")) {
        void *fr = NULL, *fl = NULL;
        if (gf_device_query_extension(dev, "cpu_onednn.fused_runs", &fr) != GF_OK ||
            gf_device_query_extension(dev, "cpu_onednn.fused_launches", &fl) != GF_OK) {
            gf_clear_error();
            return false;
        }
        uint64_t (*f)(void);
        memcpy(&f, &fr, sizeof f);
        *runs = f();
        memcpy(&f, &fl, sizeof f);
        *launches = f();
        return true;
    }
    return false;
}
