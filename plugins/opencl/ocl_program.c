/* SPDX-License-Identifier: BSD-3-Clause */
/* ocl_program.c — kernel programs: built on first use, cached in memory and
 * on disk.
 *
 * Each op family is one program: the shared prelude (kernels/common.cl), for
 * the elementwise math the code generated from plugins/common/op_math.def,
 * and the family's own source. A program is built the first time one of its
 * kernels is needed on a device; its kernels are created once and kept.
 *
 * Disk cache: <dir>/opencl/<program>-<hash>.bin holds the program binary of
 * one device, where <dir> is $GRAFT_CACHE_DIR, else $XDG_CACHE_HOME/graft,
 * else ~/.cache/graft, and the hash covers the platform, device, device and
 * driver versions, build options and the sources, so a driver update or a
 * changed kernel never loads a stale binary (the file also stores the text it
 * was keyed by, compared on load). GRAFT_OPENCL_CACHE=0 turns the cache off.
 * A binary is written after a build from source and again when the device is
 * closed if it has grown: PoCL adds the kernels it compiled on first launch
 * to its binaries, so the next run compiles nothing. Files are written to a
 * temporary name and renamed, so concurrent processes never read half a file.
 * A cache that cannot be read or written costs a rebuild, never an error. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ocl_internal.h"
#include "ocl_kernels.h" /* generated: the embedded .cl sources */

typedef struct prog_def {
    const char *name;
    const char *parts[5]; /* sources, NULL-terminated */
} prog_def;

static const prog_def programs[OCL_PROG_COUNT] = {
    [OCL_PROG_COPY] = {"copy", {ocl_src_common, ocl_src_ew_copy, NULL}},
    [OCL_PROG_MATH] = {"math", {ocl_src_common, ocl_src_op_math, ocl_src_ew_defs, ocl_src_ew_math,
                                NULL}},
    [OCL_PROG_RANDOM] = {"random", {ocl_src_common, ocl_src_random, NULL}},
    [OCL_PROG_REDUCE] = {"reduce", {ocl_src_common, ocl_src_reduce, NULL}},
    [OCL_PROG_MATMUL] = {"matmul", {ocl_src_common, ocl_src_matmul, NULL}},
    [OCL_PROG_NORM] = {"norm", {ocl_src_common, ocl_src_norm, NULL}},
    [OCL_PROG_INDEX] = {"index", {ocl_src_common, ocl_src_index, NULL}},
    [OCL_PROG_CONV] = {"conv", {ocl_src_common, ocl_src_conv, NULL}},
    [OCL_PROG_POOL] = {"pool", {ocl_src_common, ocl_src_pool, NULL}},
    [OCL_PROG_COMPLEX] = {"complex", {ocl_src_common, ocl_src_complex, NULL}},
    [OCL_PROG_FFT] = {"fft", {ocl_src_common, ocl_src_fft, NULL}},
    [OCL_PROG_OPTIM] = {"optim", {ocl_src_common, ocl_src_pk_adam, ocl_src_optim, NULL}},
};

static const char fault_source[] = "\n#error fault injected by GRAFT_OPENCL_FAULT=build\n";

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------ hashing */
static uint64_t fnv1a(uint64_t h, const void *data, size_t n) {
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}
#define FNV_START 0xcbf29ce484222325ull

void ocl_build_options(const ocl_device *d, char *buf, size_t len) {
    snprintf(buf, len, "-cl-std=CL1.2 -DGF_HAS_FP64=%d -DGF_HAS_INT64_ATOMICS=%d -DGF_HAS_FMA=%d%s",
             d->fp64 ? 1 : 0, d->int64_atomics ? 1 : 0, d->fma ? 1 : 0,
             d->cr_divide ? " -cl-fp32-correctly-rounded-divide-sqrt" : "");
}

/* The text a cached binary is keyed by: everything that changes the binary. */
static void describe(const ocl_device *d, ocl_prog_id p, const char *options, char *buf,
                     size_t len) {
    uint64_t h = FNV_START;
    for (int i = 0; programs[p].parts[i]; i++)
        h = fnv1a(h, programs[p].parts[i], strlen(programs[p].parts[i]));
    snprintf(buf, len, "graft-opencl-cache 1\nprogram %s\nplatform %s\ndevice %s\nversion %s\n"
                       "driver %s\noptions %s\nsources %016llx\n",
             programs[p].name, d->platform_name, d->name, d->version, d->driver, options,
             (unsigned long long)h);
}

/* ------------------------------------------------------------ the cache directory */
/* Whether d's programs go to the disk cache: GRAFT_OPENCL_CACHE=0 turns it
 * off, =1 on. By default it is on, except on PoCL: PoCL keeps the kernels it
 * compiles in a persistent cache of its own (POCL_CACHE_DIR, by default
 * ~/.cache/pocl), and asking it for a program binary makes it first compile
 * every kernel of the program for arbitrary work-group sizes (measured here:
 * about 0.06 s of CPU per kernel, so tens of seconds for the math program),
 * which costs more than the cache saves. */
static bool cache_enabled(const ocl_device *d) {
    const char *v = ocl_getenv("GRAFT_OPENCL_CACHE");
    if (v && (!strcmp(v, "0") || !strcmp(v, "off") || !strcmp(v, "no"))) return false;
    if (v && (!strcmp(v, "1") || !strcmp(v, "on") || !strcmp(v, "yes"))) return true;
    return !strstr(d->platform_name, "Portable Computing Language") && !strstr(d->version, "PoCL");
}

/* mkdir -p; true when the directory exists afterwards. */
static bool make_dirs(char *path) {
    for (char *p = path + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        mkdir(path, 0755);
        *p = '/';
    }
    if (mkdir(path, 0755) != 0 && errno != EEXIST) return false;
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The cache file of program p on d for descriptor desc; false when there is
 * no usable cache directory. */
static bool cache_path(const ocl_device *d, ocl_prog_id p, const char *desc, char *buf,
                       size_t len) {
    if (!cache_enabled(d)) return false;
    char dir[3072];
    const char *base = ocl_getenv("GRAFT_CACHE_DIR"), *xdg = ocl_getenv("XDG_CACHE_HOME"),
               *home = ocl_getenv("HOME");
    if (base && base[0]) snprintf(dir, sizeof dir, "%s/opencl", base);
    else if (xdg && xdg[0]) snprintf(dir, sizeof dir, "%s/graft/opencl", xdg);
    else if (home && home[0]) snprintf(dir, sizeof dir, "%s/.cache/graft/opencl", home);
    else return false;
    if (!make_dirs(dir)) {
        pk_log(GFP_LOG_DEBUG, "kernel cache directory %s cannot be created; not caching", dir);
        return false;
    }
    uint64_t h = fnv1a(FNV_START, desc, strlen(desc));
    int n = snprintf(buf, len, "%s/%s-%016llx.bin", dir, programs[p].name, (unsigned long long)h);
    return n > 0 && (size_t)n < len;
}

static const char magic[8] = {'G', 'R', 'A', 'F', 'T', 'C', 'L', '1'};

/* The binary stored for desc, or NULL (malloc'ed; *size set). */
static unsigned char *cache_read(const char *path, const char *desc, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    unsigned char *bin = NULL;
    char head[8];
    uint32_t dlen = 0;
    uint64_t blen = 0;
    size_t want = strlen(desc);
    char *stored = NULL;
    if (fread(head, 1, 8, f) != 8 || memcmp(head, magic, 8) != 0) goto done;
    if (fread(&dlen, sizeof dlen, 1, f) != 1 || dlen != want) goto done;
    stored = malloc(dlen);
    if (!stored || fread(stored, 1, dlen, f) != dlen || memcmp(stored, desc, dlen) != 0) goto done;
    if (fread(&blen, sizeof blen, 1, f) != 1 || blen == 0 || blen > ((uint64_t)1 << 32)) goto done;
    bin = malloc((size_t)blen);
    if (bin && fread(bin, 1, (size_t)blen, f) != blen) {
        free(bin);
        bin = NULL;
    }
    if (bin) *size = (size_t)blen;
done:
    if (!bin)
        pk_log(GFP_LOG_DEBUG, "kernel cache: %s is damaged or keyed differently; rebuilding", path);
    free(stored);
    fclose(f);
    return bin;
}

static void cache_write(const char *path, const char *desc, const unsigned char *bin, size_t size) {
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        pk_log(GFP_LOG_DEBUG, "cannot write the kernel cache file %s: %s", tmp, strerror(errno));
        return;
    }
    uint32_t dlen = (uint32_t)strlen(desc);
    uint64_t blen = size;
    bool ok = fwrite(magic, 1, 8, f) == 8 && fwrite(&dlen, sizeof dlen, 1, f) == 1 &&
              fwrite(desc, 1, dlen, f) == dlen && fwrite(&blen, sizeof blen, 1, f) == 1 &&
              fwrite(bin, 1, size, f) == size;
    if (fclose(f) != 0) ok = false;
    if (!ok || rename(tmp, path) != 0) {
        remove(tmp);
        pk_log(GFP_LOG_DEBUG, "writing the kernel cache file %s failed", path);
        return;
    }
    pk_log(GFP_LOG_DEBUG, "kernel cache: wrote %s (%zu bytes)", path, size);
}

/* The binary of a built program (malloc'ed), or NULL. */
static unsigned char *program_binary(cl_program prog, size_t *size) {
    size_t n = 0;
    cl_uint devices = 0;
    if (ocl.GetProgramInfo(prog, CL_PROGRAM_NUM_DEVICES, sizeof devices, &devices, NULL) !=
            CL_SUCCESS ||
        devices != 1)
        return NULL;
    if (ocl.GetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof n, &n, NULL) != CL_SUCCESS ||
        n == 0)
        return NULL;
    unsigned char *bin = malloc(n);
    if (!bin) return NULL;
    if (ocl.GetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL) != CL_SUCCESS) {
        free(bin);
        return NULL;
    }
    *size = n;
    return bin;
}

/* ------------------------------------------------------------ building */
static cl_program from_cache(ocl_device *d, ocl_prog_id p, const char *path, const char *desc,
                             const char *options) {
    size_t size = 0;
    unsigned char *bin = cache_read(path, desc, &size);
    if (!bin) return NULL;
    const unsigned char *bp = bin; /* a damaged binary is refused below */
    cl_int status = CL_SUCCESS, err = CL_SUCCESS;
    cl_program prog = ocl.CreateProgramWithBinary(d->ctx, 1, &d->id, &size, &bp, &status, &err);
    free(bin);
    if (prog && (err != CL_SUCCESS || status != CL_SUCCESS)) {
        ocl.ReleaseProgram(prog);
        prog = NULL;
    }
    if (prog && ocl.BuildProgram(prog, 1, &d->id, options, NULL, NULL) != CL_SUCCESS) {
        ocl.ReleaseProgram(prog);
        prog = NULL;
    }
    if (prog) {
        d->prog_cached_size[p] = size;
        pk_log(GFP_LOG_DEBUG, "kernel cache: loaded the %s kernels for '%s' from %s",
                programs[p].name, d->name, path);
    } else {
        pk_log(GFP_LOG_DEBUG, "kernel cache: %s was not usable; building from source", path);
    }
    return prog;
}

static gfp_status build_failed(ocl_device *d, cl_program prog, const char *name, cl_int err,
                               const char *op, char **why) {
    char *log = NULL;
    size_t n = 0;
    if (ocl.GetProgramBuildInfo(prog, d->id, CL_PROGRAM_BUILD_LOG, 0, NULL, &n) == CL_SUCCESS &&
        n > 0 && (log = calloc(1, n + 1)))
        ocl.GetProgramBuildInfo(prog, d->id, CL_PROGRAM_BUILD_LOG, n, log, NULL);
    const char *text = log && log[0] ? log : "(the driver gave no build log)";
    pk_log(GFP_LOG_ERROR, "building the %s kernels for device '%s' failed (%s); build log:\n%s",
            name, d->name, ocl_error_name(err), text);
    char msg[600];
    snprintf(msg, sizeof msg, "building the %s kernels for device '%s' failed: %s (%d); build "
             "log: %.300s", name, d->name, ocl_error_name(err), (int)err, text);
    free(log);
    if (why) *why = strdup(msg);
    return pk_fail(GFP_ERR_DEVICE, "%s: %s", op, msg);
}

/* Builds the program of sources parts[0 .. n) (the fault's source added
 * under GRAFT_OPENCL_FAULT=build), counting the time; name and op are for
 * the messages (*why, when why is not NULL, gets a copy). */
static gfp_status compile(ocl_device *d, const char *name, const char *const *parts, cl_uint n,
                          const char *options, const char *op, cl_program *out, char **why) {
    *out = NULL;
    const char *all[8];
    if (n > 7) return pk_fail(GFP_ERR_INTERNAL, "%s: a program of %u sources", op, (unsigned)n);
    memcpy(all, parts, n * sizeof *parts);
    if (d->fault == OCL_FAULT_BUILD) all[n++] = fault_source;
    double t0 = now_s();
    cl_int err = CL_SUCCESS;
    cl_program prog = ocl.CreateProgramWithSource(d->ctx, n, all, NULL, &err);
    if (!prog) return ocl_cl_fail(err, op, "clCreateProgramWithSource");
    err = ocl.BuildProgram(prog, 1, &d->id, options, NULL, NULL);
    d->compile_seconds += now_s() - t0;
    if (err != CL_SUCCESS) {
        gfp_status st = build_failed(d, prog, name, err, op, why);
        ocl.ReleaseProgram(prog);
        return st;
    }
    *out = prog;
    return GFP_OK;
}

static gfp_status build(ocl_device *d, ocl_prog_id p, const char *op, char **why) {
    char options[256], desc[1024], path[4096];
    ocl_build_options(d, options, sizeof options);
    describe(d, p, options, desc, sizeof desc);
    bool cached = d->fault != OCL_FAULT_BUILD && cache_path(d, p, desc, path, sizeof path);
    double t0 = now_s();
    cl_program prog = cached ? from_cache(d, p, path, desc, options) : NULL;
    if (prog) {
        d->progs[p] = prog;
        d->compile_seconds += now_s() - t0;
        return GFP_OK;
    }
    d->compile_seconds += now_s() - t0; /* a cache file tried and refused */
    cl_uint n = 0;
    while (programs[p].parts[n]) n++;
    gfp_status st = compile(d, programs[p].name, programs[p].parts, n, options, op, &prog, why);
    if (st != GFP_OK) return st;
    pk_log(GFP_LOG_INFO, "built the %s kernels for '%s' in %.2f s", programs[p].name, d->name,
           now_s() - t0);
    d->progs[p] = prog;
    if (cached) {
        size_t size = 0;
        unsigned char *bin = program_binary(prog, &size);
        if (bin) {
            cache_write(path, desc, bin, size);
            d->prog_cached_size[p] = size;
            free(bin);
        }
    }
    return GFP_OK;
}

/* ------------------------------------------------------------ fused runs */
/* ew_defs.cl's macros make element functions alone: the elementwise
 * kernel macros of common.cl emptied. */
static const char fused_prelude[] = "\n#undef GF_EW1\n#define GF_EW1(...)\n#undef GF_EW2\n"
                                    "#define GF_EW2(...)\n#undef GF_EW3\n#define GF_EW3(...)\n";

gfp_status ocl_build_fused(ocl_device *d, const char *source, cl_program *out) {
    const char *parts[5] = {ocl_src_common, ocl_src_op_math, ocl_src_ew_defs, fused_prelude,
                            source};
    char options[256];
    ocl_build_options(d, options, sizeof options);
    return compile(d, "fused-run", parts, 5, options, "graph", out, NULL);
}

/* ------------------------------------------------------------ kernels */
static uint64_t slot_hash(ocl_prog_id p, const char *name) {
    return fnv1a(FNV_START ^ (uint64_t)p, name, strlen(name));
}

gfp_status ocl_get_kernel(ocl_device *d, ocl_prog_id p, const char *name, const char *op,
                          cl_kernel *out) {
    *out = NULL;
    size_t h = (size_t)(slot_hash(p, name) % OCL_KERNEL_SLOTS);
    ocl_kernel_slot *slot = NULL;
    for (size_t i = 0; i < OCL_KERNEL_SLOTS; i++) {
        ocl_kernel_slot *s = &d->kernels[(h + i) % OCL_KERNEL_SLOTS];
        if (!s->name) {
            slot = s;
            break;
        }
        if (s->prog == (int)p && !strcmp(s->name, name)) {
            *out = s->kernel;
            return GFP_OK;
        }
    }
    if (!slot)
        return pk_fail(GFP_ERR_INTERNAL, "%s: the kernel table of device '%s' is full", op,
                        d->name);
    if (d->prog_status[p] != GFP_OK)
        return pk_fail(d->prog_status[p], "%s: %s", op,
                        d->prog_error[p] ? d->prog_error[p] : "the kernels failed to build");
    if (!d->progs[p]) {
        char *why = NULL;
        gfp_status st = build(d, p, op, &why);
        if (st != GFP_OK) {
            d->prog_status[p] = st;
            d->prog_error[p] = why;
            return st;
        }
    }
    cl_int err = CL_SUCCESS;
    cl_kernel k = ocl.CreateKernel(d->progs[p], name, &err);
    if (!k) {
        char what[160];
        snprintf(what, sizeof what, "clCreateKernel(%s) in the %s program", name,
                 programs[p].name);
        return ocl_cl_fail(err, op, what);
    }
    slot->name = strdup(name);
    if (!slot->name) {
        ocl.ReleaseKernel(k);
        return pk_fail(GFP_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    }
    slot->prog = (int)p;
    slot->kernel = k;
    *out = k;
    return GFP_OK;
}

void ocl_programs_release(ocl_device *d) {
    if (d->compile_seconds > 0)
        pk_log(GFP_LOG_INFO, "'%s': %.2f s spent building or loading kernel programs", d->name,
                d->compile_seconds);
    d->compile_seconds = 0;
    for (size_t i = 0; i < OCL_KERNEL_SLOTS; i++) {
        ocl_kernel_slot *s = &d->kernels[i];
        if (!s->name) continue;
        ocl.ReleaseKernel(s->kernel);
        free(s->name);
        s->name = NULL;
        s->kernel = NULL;
    }
    char options[256], desc[1024], path[4096];
    ocl_build_options(d, options, sizeof options);
    for (int p = 0; p < OCL_PROG_COUNT; p++) {
        if (!d->progs[p]) continue;
        describe(d, (ocl_prog_id)p, options, desc, sizeof desc);
        if (d->fault != OCL_FAULT_BUILD && cache_path(d, (ocl_prog_id)p, desc, path, sizeof path)) {
            size_t size = 0;
            unsigned char *bin = program_binary(d->progs[p], &size);
            if (bin && size > d->prog_cached_size[p]) cache_write(path, desc, bin, size);
            free(bin);
        }
        ocl.ReleaseProgram(d->progs[p]);
        d->progs[p] = NULL;
        d->prog_cached_size[p] = 0;
    }
    for (int p = 0; p < OCL_PROG_COUNT; p++) {
        free(d->prog_error[p]);
        d->prog_error[p] = NULL;
        d->prog_status[p] = GFP_OK;
    }
}
