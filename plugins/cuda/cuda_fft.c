/* SPDX-License-Identifier: BSD-3-Clause */
/* cuda_fft.c — FFT through cuFFT: C2C, R2C and C2R over any dims, lengths
 * and strides, either sign, with a scale.
 *
 * cuda_fft_plan.c decides the steps (which moves, which batched 1-D cuFFT
 * plans, which work arrays); this file runs them: the moves through the
 * cuk_cx_move kernel, the transforms through cuFFT plans kept in a small
 * per-device cache, all on the device's stream, the work arrays in
 * stream-ordered scratch. Lengths are any: cuFFT itself takes primes and
 * other awkward lengths (Bluestein inside). c64 and f32 transform in single
 * precision (cuFFT's C2C, R2C, C2R), c128 and f64 in double (Z2Z, D2Z, Z2D).
 *
 * cuFFT is opened by the first FFT query (cuda_libs.c), not by
 * device_open: a process that transforms nothing never loads it. Without it
 * the query answers NONE and the core runs FFT on its fallback device. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_fft_plan.h"
#include "cuda_internal.h"

#ifdef GRAFT_CUDA_HAVE_CUFFT

/* Plans kept per device, least recently used replaced first. A plan holds
 * its cuFFT work area (device memory) until it is replaced or the device
 * closes. */
#define CU_FFT_CACHE 8

typedef struct fft_key {
    int32_t type, dbl;
    int64_t n, batch, istride, idist, ostride, odist;
} fft_key;

typedef struct fft_entry {
    fft_key key;
    cufftHandle handle;
    uint64_t used; /* 0: empty */
} fft_entry;

struct cu_fft_cache {
    fft_entry e[CU_FFT_CACHE];
    uint64_t clock;
};

static const char *result_name(cufftResult r) {
    switch (r) {
    case CUFFT_SUCCESS: return "CUFFT_SUCCESS";
    case CUFFT_INVALID_PLAN: return "CUFFT_INVALID_PLAN";
    case CUFFT_ALLOC_FAILED: return "CUFFT_ALLOC_FAILED";
    case CUFFT_INVALID_TYPE: return "CUFFT_INVALID_TYPE";
    case CUFFT_INVALID_VALUE: return "CUFFT_INVALID_VALUE";
    case CUFFT_INTERNAL_ERROR: return "CUFFT_INTERNAL_ERROR";
    case CUFFT_EXEC_FAILED: return "CUFFT_EXEC_FAILED";
    case CUFFT_SETUP_FAILED: return "CUFFT_SETUP_FAILED";
    case CUFFT_INVALID_SIZE: return "CUFFT_INVALID_SIZE";
    case CUFFT_UNALIGNED_DATA: return "CUFFT_UNALIGNED_DATA";
    case CUFFT_INVALID_DEVICE: return "CUFFT_INVALID_DEVICE";
    case CUFFT_NO_WORKSPACE: return "CUFFT_NO_WORKSPACE";
    case CUFFT_NOT_IMPLEMENTED: return "CUFFT_NOT_IMPLEMENTED";
    case CUFFT_NOT_SUPPORTED: return "CUFFT_NOT_SUPPORTED";
    default: return "a cuFFT status";
    }
}

/* OK, or "fft: <what>: CUFFT_X (n)" with OUT_OF_MEMORY for an allocation. */
static gfp_status fft_check(cufftResult r, const char *what) {
    if (r == CUFFT_SUCCESS) return GFP_OK;
    (void)cudaGetLastError(); /* a failed plan may leave a runtime error behind */
    return pk_fail(r == CUFFT_ALLOC_FAILED ? GFP_ERR_OUT_OF_MEMORY : GFP_ERR_DEVICE,
                   "fft: %s: %s (%d)", what, result_name(r), (int)r);
}

bool cu_fft_usable(void) {
    const char *why = cu_fft_load();
    static atomic_bool told; /* once per process: the query asks for every FFT */
    if (why && !atomic_exchange(&told, true)) {
        pk_log(GFP_LOG_WARN, "cuda: %s: FFT runs on the fallback device", why);
    }
    return why == NULL;
}

void cu_fft_close(cu_device *dev) {
    struct cu_fft_cache *c = dev->fft;
    if (!c) return;
    for (int i = 0; i < CU_FFT_CACHE; i++)
        if (c->e[i].used) cu_fft.cufftDestroy(c->e[i].handle);
    free(c);
    dev->fft = NULL;
}

static cufftType type_of(const cuf_exec *e) {
    switch (e->type) {
    case CUF_R2C: return e->dbl ? CUFFT_D2Z : CUFFT_R2C;
    case CUF_C2R: return e->dbl ? CUFFT_Z2D : CUFFT_C2R;
    default: return e->dbl ? CUFFT_Z2Z : CUFFT_C2C;
    }
}

/* The cached plan for e's layout, made on a miss (evicting the least
 * recently used). */
static gfp_status plan_for(cu_device *dev, const cuf_exec *e, cufftHandle *out) {
    if (!dev->fft) {
        dev->fft = calloc(1, sizeof *dev->fft);
        if (!dev->fft) return pk_fail(GFP_ERR_OUT_OF_MEMORY, "fft: out of host memory");
    }
    struct cu_fft_cache *c = dev->fft;
    fft_key k; /* compared with memcmp: every byte set */
    memset(&k, 0, sizeof k);
    k.type = e->type;
    k.dbl = e->dbl;
    k.n = e->n;
    k.batch = e->batch;
    k.istride = e->istride;
    k.idist = e->idist;
    k.ostride = e->ostride;
    k.odist = e->odist;
    int victim = 0;
    for (int i = 0; i < CU_FFT_CACHE; i++) {
        if (c->e[i].used && !memcmp(&c->e[i].key, &k, sizeof k)) {
            c->e[i].used = ++c->clock;
            *out = c->e[i].handle;
            return GFP_OK;
        }
        if (c->e[i].used < c->e[victim].used) victim = i;
    }
    fft_entry *v = &c->e[victim];
    if (v->used) {
        cu_fft.cufftDestroy(v->handle);
        v->used = 0;
    }
    cufftHandle h = 0;
    gfp_status st = fft_check(cu_fft.cufftCreate(&h), "cufftCreate");
    if (st != GFP_OK) return st;
    /* The advanced layout: one embedding length per side, each line at its
     * stride, the lines at their distance. */
    long long n = e->n;
    long long in_len = e->type == CUF_C2R ? e->n / 2 + 1 : e->n;
    long long out_len = e->type == CUF_R2C ? e->n / 2 + 1 : e->n;
    size_t work = 0;
    st = fft_check(cu_fft.cufftMakePlanMany64(h, 1, &n, &in_len, e->istride, e->idist, &out_len,
                                              e->ostride, e->odist, type_of(e), e->batch, &work),
                   "cufftMakePlanMany64");
    if (st != GFP_OK) {
        cu_fft.cufftDestroy(h);
        return st;
    }
    v->key = k;
    v->handle = h;
    v->used = ++c->clock;
    *out = h;
    return GFP_OK;
}

static gfp_status run_exec(cu_device *dev, const cuf_exec *e, void *const arrays[CUF_ARRAYS]) {
    cufftHandle h = 0;
    gfp_status st = plan_for(dev, e, &h);
    if (st != GFP_OK) return st;
    if ((st = fft_check(cu_fft.cufftSetStream(h, dev->stream), "cufftSetStream")) != GFP_OK)
        return st;
    int32_t in_dt = e->type == CUF_R2C ? (e->dbl ? GFP_F64 : GFP_F32) : (e->dbl ? GFP_C128 : GFP_C64);
    int32_t out_dt = e->type == CUF_C2R ? (e->dbl ? GFP_F64 : GFP_F32) : (e->dbl ? GFP_C128 : GFP_C64);
    int dir = e->sign < 0 ? CUFFT_FORWARD : CUFFT_INVERSE;
    for (int64_t r = 0; r < e->reps && st == GFP_OK; r++) {
        char *in = (char *)arrays[e->in] +
                   (e->in_offset + r * e->in_step) * (int64_t)pk_dtype_size(in_dt);
        char *out = (char *)arrays[e->out] +
                    (e->out_offset + r * e->out_step) * (int64_t)pk_dtype_size(out_dt);
        cufftResult res;
        switch (type_of(e)) {
        case CUFFT_C2C:
            res = cu_fft.cufftExecC2C(h, (cufftComplex *)in, (cufftComplex *)out, dir);
            break;
        case CUFFT_Z2Z:
            res = cu_fft.cufftExecZ2Z(h, (cufftDoubleComplex *)in, (cufftDoubleComplex *)out, dir);
            break;
        case CUFFT_R2C: res = cu_fft.cufftExecR2C(h, (cufftReal *)in, (cufftComplex *)out); break;
        case CUFFT_D2Z:
            res = cu_fft.cufftExecD2Z(h, (cufftDoubleReal *)in, (cufftDoubleComplex *)out);
            break;
        case CUFFT_C2R: res = cu_fft.cufftExecC2R(h, (cufftComplex *)in, (cufftReal *)out); break;
        default:
            res = cu_fft.cufftExecZ2D(h, (cufftDoubleComplex *)in, (cufftDoubleReal *)out);
            break;
        }
        st = fft_check(res, "the cuFFT execution");
    }
    return st;
}

static cuk_tensor kview(void *const arrays[CUF_ARRAYS], const cuf_view *v) {
    cuk_tensor t;
    memset(&t, 0, sizeof t);
    t.data = (char *)arrays[v->array] + v->offset * (int64_t)pk_dtype_size(v->dtype);
    t.dtype = v->dtype;
    t.rank = v->rank;
    for (int d = 0; d < v->rank; d++) {
        t.sizes[d] = v->sizes[d];
        t.strides[d] = v->strides[d];
    }
    return t;
}

static gfp_status run_move(cu_device *dev, const cuf_step *s, void *const arrays[CUF_ARRAYS]) {
    cuk_tensor dst = kview(arrays, &s->dst), src = kview(arrays, &s->src);
    cuk_iter it;
    cu_iter_of(&it, &dst, &src);
    if (it.numel == 0) return GFP_OK;
    return cu_check(cuk_cx_move(dev->stream, &it, s->scale, s->conj, s->real_part), "fft",
                    "the move kernel launch");
}

gfp_status cu_fft_launch(cu_device *dev, const gfp_tensor *x, const gfp_tensor *y,
                         const void *params) {
    const gfp_fft_params *p = params;
    int dl = 0;
    gfp_status st = pk_check_fft(p, x, y, PK_DT_COMPLEX, "", &dl);
    if (st != GFP_OK || pk_numel(x) == 0 || pk_numel(y) == 0) return st;
    /* A cached plan may be replaced while a graph would use its work area. */
    if (dev->capturing) return cu_capture_refuse(dev, "fft", "a cuFFT transform");
    const char *why = cu_fft_load();
    if (why) return pk_fail(GFP_ERR_UNSUPPORTED, "fft: %s", why);
    cuf_plan *plan = malloc(sizeof *plan);
    if (!plan) return pk_fail(GFP_ERR_OUT_OF_MEMORY, "fft: out of host memory");
    if (cuf_plan_make(p, x, y, plan) != 0) {
        free(plan);
        return pk_fail(GFP_ERR_INVALID, "fft: the work arrays' sizes overflow 64 bits");
    }
    void *arrays[CUF_ARRAYS] = {cu_view(x).data, cu_view(y).data, NULL, NULL, NULL};
    for (int k = 0; k < 3 && st == GFP_OK; k++) {
        uint64_t bytes;
        if (!plan->work_elems[k]) continue;
        if (__builtin_mul_overflow((uint64_t)plan->work_elems[k],
                                   (uint64_t)pk_dtype_size(plan->work_dtype[k]), &bytes))
            st = pk_fail(GFP_ERR_INVALID, "fft: a work array's size overflows 64 bits");
        else
            st = cu_temp_alloc(dev, bytes, &arrays[CUF_W0 + k], "fft");
    }
    for (int i = 0; i < plan->n_steps && st == GFP_OK; i++) {
        const cuf_step *s = &plan->steps[i];
        st = s->kind == CUF_MOVE ? run_move(dev, s, arrays) : run_exec(dev, &s->ex, arrays);
    }
    for (int k = 0; k < 3; k++) cu_temp_free(dev, arrays[CUF_W0 + k]); /* stream-ordered */
    free(plan);
    return st;
}

#else /* no cuFFT in this build */

bool cu_fft_usable(void) { return false; }

void cu_fft_close(cu_device *dev) { (void)dev; }

gfp_status cu_fft_launch(cu_device *dev, const gfp_tensor *x, const gfp_tensor *y,
                         const void *params) {
    (void)dev;
    (void)x;
    (void)y;
    (void)params;
    return pk_fail(GFP_ERR_UNSUPPORTED, "fft: this cuda plugin was built without cuFFT");
}

#endif
