/* SPDX-License-Identifier: BSD-3-Clause */
/* creation.c — public constructors, random tensors, moves and copies. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autograd/ag_record.h"
#include "graph/graph_internal.h"
#include "internal.h"

/* Records out as a copy of in (out may be in itself: then nothing). */
static gf_tensor *copied(const gf_tensor *in, gf_tensor *out, const char *name) {
    if (out) gf__ag_record_copy(in, out, name);
    return gf__ret(out);
}

static gf_device *pick_device(gf_device *dev) {
    gf__ensure_init();
    return dev ? dev : gf_device_default();
}

gf_tensor *gf_empty(const int64_t *sizes, int rank, gf_dtype dtype, gf_device *dev) {
    dev = pick_device(dev);
    if (!dev) return NULL;
    return gf__ret(gf__empty(sizes, rank, dtype, dev));
}

gf_tensor *gf_full(const int64_t *sizes, int rank, double value, gf_dtype dtype, gf_device *dev) {
    dev = pick_device(dev);
    if (!dev || gf__check_value(value, dtype, "gf_full") != GF_OK) return NULL;
    gf_tensor *t = gf__empty(sizes, rank, dtype, dev);
    if (t && gf__fill(t, value) != GF_OK) {
        gf_tensor_release(t);
        return NULL;
    }
    return gf__ret(t);
}

gf_tensor *gf_zeros(const int64_t *sizes, int rank, gf_dtype dtype, gf_device *dev) {
    return gf_full(sizes, rank, 0.0, dtype, dev);
}
gf_tensor *gf_ones(const int64_t *sizes, int rank, gf_dtype dtype, gf_device *dev) {
    return gf_full(sizes, rank, 1.0, dtype, dev);
}
gf_tensor *gf_scalar(double value, gf_dtype dtype, gf_device *dev) {
    return gf_full(NULL, 0, value, dtype, dev);
}

gf_tensor *gf_from_data(const void *data, const int64_t *sizes, int rank, gf_dtype dtype,
                        gf_device *dev) {
    dev = pick_device(dev);
    if (!dev) return NULL;
    gf_tensor *t = gf__empty(sizes, rank, dtype, dev);
    if (!t) return NULL;
    size_t n = (size_t)gf__numel(t) * gf_dtype_size(dtype);
    if (n && !data) {
        gf_tensor_release(t);
        gf__null_arg_of("gf_from_data", "data", GF__ARG_HOST);
        return NULL;
    }
    gf__graph_note(t->storage);
    if (gf__dev_write(dev, t->storage->buffer, 0, data, n) != GF_OK) {
        gf_tensor_release(t);
        return NULL;
    }
    return gf__ret(t);
}

gf_tensor *gf_arange(double start, double end, double step, gf_dtype dtype, gf_device *dev) {
    if (step == 0 || !isfinite(start) || !isfinite(end) || !isfinite(step)) {
        gf__error(GF_ERR_INVALID, "gf_arange: step must be non-zero and bounds finite (got "
                  "start %g, end %g, step %g)", start, end, step);
        return NULL;
    }
    if ((step > 0 && end < start) || (step < 0 && end > start)) {
        gf__error(GF_ERR_INVALID, "gf_arange: the sign of step %g does not lead from %g to %g",
                  step, start, end);
        return NULL;
    }
    double count = ceil((end - start) / step);
    if (count > 9e15) {
        gf__error(GF_ERR_OVERFLOW, "gf_arange: %g elements is too many", count);
        return NULL;
    }
    dev = pick_device(dev);
    if (!dev) return NULL;
    int64_t n = (int64_t)count;
    gf_tensor *t = gf__empty(&n, 1, dtype, dev);
    if (!t) return NULL;
    gfp_arange_params p = {.struct_size = sizeof p, .start = start, .step = step};
    gf_tensor *out[1] = {t};
    if (gf__launch(GFP_OP_ARANGE, "arange", NULL, 0, out, 1, &p) != GF_OK) {
        gf_tensor_release(t);
        return NULL;
    }
    return gf__ret(t);
}

gf_tensor *gf_full_like(const gf_tensor *t, double value) {
    if (!t) {
        gf__null_arg("gf_full_like", "t");
        return NULL;
    }
    return gf_full(t->sizes, t->rank, value, t->dtype, t->storage->device);
}
gf_tensor *gf_zeros_like(const gf_tensor *t) { return gf_full_like(t, 0.0); }
gf_tensor *gf_ones_like(const gf_tensor *t) { return gf_full_like(t, 1.0); }

/* ------------------------------------------------------------ random */
static gf_tensor *random_tensor(const int64_t *sizes, int rank, uint32_t kind, double a, double b,
                                gf_dtype dtype, gf_device *dev, const char *op) {
    /* f16 and bf16 as PyTorch's torch.rand / randn take them: drawn as f32
     * (24 random bits), computed in double, rounded once (the ABI's RANDOM). */
    if (kind != GFP_RANDOM_BERNOULLI && dtype != GF_F32 && dtype != GF_F64 && dtype != GF_F16 &&
        dtype != GF_BF16) {
        gf__error(GF_ERR_DTYPE, "%s: dtype %s is not a real floating-point dtype; use f32, f64, "
                  "f16 or bf16", op, gf_dtype_name(dtype));
        return NULL;
    }
    dev = pick_device(dev);
    if (!dev) return NULL;
    gf_tensor *t = gf__empty(sizes, rank, dtype, dev);
    if (!t) return NULL;
    gfp_random_params p = {.struct_size = sizeof p, .kind = kind, .a = a, .b = b};
    gf__rng_next((uint64_t)gf__numel(t), &p.seed, &p.offset);
    gf_tensor *out[1] = {t};
    if (gf__launch(GFP_OP_RANDOM, op, NULL, 0, out, 1, &p) != GF_OK) {
        gf_tensor_release(t);
        return NULL;
    }
    return gf__ret(t);
}

gf_tensor *gf_rand_uniform(const int64_t *sizes, int rank, double low, double high, gf_dtype dtype,
                           gf_device *dev) {
    if (!(low <= high) || !isfinite(low) || !isfinite(high)) {
        gf__error(GF_ERR_INVALID, "gf_rand_uniform: need finite low <= high (got %g, %g)", low, high);
        return NULL;
    }
    return random_tensor(sizes, rank, GFP_RANDOM_UNIFORM, low, high, dtype, dev, "rand_uniform");
}
gf_tensor *gf_rand(const int64_t *sizes, int rank, gf_dtype dtype, gf_device *dev) {
    return gf_rand_uniform(sizes, rank, 0.0, 1.0, dtype, dev);
}
gf_tensor *gf_rand_normal(const int64_t *sizes, int rank, double mean, double std, gf_dtype dtype,
                          gf_device *dev) {
    if (!(std >= 0) || !isfinite(mean) || !isfinite(std)) {
        gf__error(GF_ERR_INVALID, "gf_rand_normal: need finite mean and std >= 0 (got %g, %g)",
                  mean, std);
        return NULL;
    }
    return random_tensor(sizes, rank, GFP_RANDOM_NORMAL, mean, std, dtype, dev, "rand_normal");
}
gf_tensor *gf_randn(const int64_t *sizes, int rank, gf_dtype dtype, gf_device *dev) {
    if (gf_dtype_is_complex(dtype)) return gf_randn_complex(sizes, rank, dtype, dev);
    return gf_rand_normal(sizes, rank, 0.0, 1.0, dtype, dev);
}
gf_tensor *gf_bernoulli(const int64_t *sizes, int rank, double p, gf_dtype dtype, gf_device *dev) {
    if (!(p >= 0 && p <= 1)) {
        gf__error(GF_ERR_INVALID, "gf_bernoulli: p must be in [0, 1] (got %g)", p);
        return NULL;
    }
    return random_tensor(sizes, rank, GFP_RANDOM_BERNOULLI, p, 0, dtype, dev, "bernoulli");
}

/* ------------------------------------------------------------ moves and copies */
gf_tensor *gf_contiguous(const gf_tensor *t) {
    if (!t) {
        gf__null_arg("gf_contiguous", "t");
        return NULL;
    }
    return copied(t, gf__contig(t), "CloneBackward");
}

gf_tensor *gf_clone(const gf_tensor *t) {
    if (!t) {
        gf__null_arg("gf_clone", "t");
        return NULL;
    }
    gf_tensor *r = gf__empty(t->sizes, t->rank, t->dtype, t->storage->device);
    if (r && gf__copy_into(r, t) != GF_OK) {
        gf_tensor_release(r);
        return NULL;
    }
    return copied(t, r, "CloneBackward");
}

gf_tensor *gf_to_dtype(const gf_tensor *t, gf_dtype dtype) {
    if (!t) {
        gf__null_arg("gf_to_dtype", "t");
        return NULL;
    }
    if (gf_dtype_size(dtype) == 0) {
        gf__error(GF_ERR_DTYPE, "gf_to_dtype: unknown dtype %d", (int)dtype);
        return NULL;
    }
    if (t->dtype == dtype) return gf__ret(gf_tensor_retain((gf_tensor *)t));
    return copied(t, gf__cast(t, dtype), "ToCopyBackward");
}

gf_tensor *gf_to_device(const gf_tensor *t, gf_device *dev) {
    if (!t) {
        gf__null_arg("gf_to_device", "t");
        return NULL;
    }
    if (!dev) {
        gf__null_arg_of("gf_to_device", "dev", GF__ARG_DEVICE);
        return NULL;
    }
    if (t->storage->device == dev) return gf__ret(gf_tensor_retain((gf_tensor *)t));
    /* Across devices: through host memory, in the source's row-major order. */
    gf_tensor *c = gf__contig(t);
    if (!c) return NULL;
    gf_tensor *r = gf__empty(t->sizes, t->rank, t->dtype, dev);
    size_t n = (size_t)gf__numel(t) * gf_dtype_size(t->dtype);
    gf_status s = r ? GF_OK : gf__status();
    if (s == GF_OK && n) {
        void *host = c->storage->host_ptr;
        void *tmp = NULL;
        if (!host) {
            tmp = malloc(n);
            if (!tmp) s = gf__error(GF_ERR_OUT_OF_MEMORY, "gf_to_device: out of host memory");
            else s = gf__dev_read(c->storage->device, c->storage->buffer,
                                  (uint64_t)c->offset * gf_dtype_size(c->dtype), tmp, n);
            host = tmp;
        } else {
            /* Host-addressable source: write straight from its memory. */
            gf__dev_sync(c->storage->device);
            host = (char *)host + (uint64_t)c->offset * gf_dtype_size(c->dtype);
        }
        gf__graph_note(r->storage);
        if (s == GF_OK) s = gf__dev_write(dev, r->storage->buffer, 0, host, n);
        free(tmp);
    }
    gf_tensor_release(c);
    if (s != GF_OK) {
        gf_tensor_release(r);
        return NULL;
    }
    return copied(t, r, "ToCopyBackward");
}
