/* SPDX-License-Identifier: BSD-3-Clause */
/* tensor_util.c — promotion, broadcasting, casts and copies used by ops. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "complex/complex_internal.h"
#include "graph/graph_internal.h"
#include "internal.h"

static int promote_rank(gf_dtype d) {
    switch (d) {
    case GF_BOOL: return 0;
    case GF_I32: return 1;
    case GF_I64: return 2;
    case GF_F16: return 3;
    case GF_BF16: return 3;
    case GF_F32: return 4;
    case GF_F64: return 5;
    case GF_C64:
    case GF_C128: break; /* gf__promote_complex */
    }
    return 0;
}

gf_dtype gf__promote(gf_dtype a, gf_dtype b) {
    if (a == b) return a;
    if (gf_dtype_is_complex(a) || gf_dtype_is_complex(b)) return gf__promote_complex(a, b);
    if ((a == GF_F16 && b == GF_BF16) || (a == GF_BF16 && b == GF_F16)) return GF_F32;
    return promote_rank(a) >= promote_rank(b) ? a : b;
}

gf_status gf__broadcast_shapes(const int64_t *a, int ra, const int64_t *b, int rb, int64_t *out,
                               int *rank_out, const char *op) {
    int r = ra > rb ? ra : rb;
    for (int i = 0; i < r; i++) {
        int ia = ra - r + i, ib = rb - r + i;
        int64_t sa = ia >= 0 ? a[ia] : 1, sb = ib >= 0 ? b[ib] : 1;
        if (sa != sb && sa != 1 && sb != 1) {
            char x[200], y[200];
            return gf__error(GF_ERR_SHAPE, "%s: shapes %s and %s cannot be broadcast together "
                             "(dim %d: %lld vs %lld; sizes must match or one must be 1)", op,
                             gf__shape_str(a, ra, x, sizeof x), gf__shape_str(b, rb, y, sizeof y),
                             i, (long long)sa, (long long)sb);
        }
        out[i] = sa == 1 ? sb : sa;
    }
    *rank_out = r;
    return GF_OK;
}

gf_tensor *gf__expand_to(const gf_tensor *t, const int64_t *sizes, int rank) {
    if (rank < t->rank) {
        gf__error(GF_ERR_SHAPE, "expand: cannot expand rank %d to rank %d", t->rank, rank);
        return NULL;
    }
    int64_t strides[GF_MAX_RANK];
    for (int i = 0; i < rank; i++) {
        int j = t->rank - rank + i;
        if (j < 0) strides[i] = 0;
        else if (t->sizes[j] == sizes[i]) strides[i] = t->strides[j];
        else if (t->sizes[j] == 1) strides[i] = 0;
        else {
            char x[200], y[200];
            gf__error(GF_ERR_SHAPE, "expand: a tensor of sizes %s cannot be expanded to %s "
                      "(only dims of size 1 expand)", gf__shape_str(t->sizes, t->rank, x, sizeof x),
                      gf__shape_str(sizes, rank, y, sizeof y));
            return NULL;
        }
    }
    return gf__view(t, sizes, strides, rank, t->offset);
}

gf_status gf__copy_into(gf_tensor *dst, const gf_tensor *src) {
    if (gf_dtype_is_complex(src->dtype) && !gf_dtype_is_complex(dst->dtype))
        return gf__error(GF_ERR_DTYPE, "cannot convert %s to %s: a complex value does not fit a "
                         "real dtype; take its parts with gf_real / gf_imag or its modulus with "
                         "gf_abs", gf_dtype_name(src->dtype), gf_dtype_name(dst->dtype));
    /* Same dtype, same shape, both dense, different storages: a byte copy
     * (the plugin's buffer_copy, or its documented default). */
    if (src->dtype == dst->dtype && src->rank == dst->rank && src->storage != dst->storage &&
        src->storage->device == dst->storage->device &&
        !memcmp(src->sizes, dst->sizes, sizeof(int64_t) * (size_t)dst->rank) &&
        gf__is_contiguous(src) && gf__is_contiguous(dst)) {
        size_t es = gf_dtype_size(dst->dtype);
        gf__graph_note(src->storage);
        gf__graph_note(dst->storage);
        return gf__dev_copy(dst->storage->device, src->storage->buffer, (uint64_t)src->offset * es,
                            dst->storage->buffer, (uint64_t)dst->offset * es,
                            (uint64_t)gf__numel(dst) * es);
    }
    const gf_tensor *s = src;
    gf_tensor *tmp = NULL;
    if (src->rank != dst->rank || memcmp(src->sizes, dst->sizes, sizeof(int64_t) * (size_t)dst->rank)) {
        tmp = gf__expand_to(src, dst->sizes, dst->rank);
        if (!tmp) return gf__status();
        s = tmp;
    }
    const gf_tensor *in[1] = {s};
    gf_tensor *out[1] = {dst};
    gf_status st = gf__launch(GFP_OP_COPY, "copy", in, 1, out, 1, NULL);
    gf_tensor_release(tmp);
    return st;
}

gf_status gf__check_value(double value, gf_dtype dtype, const char *op) {
    bool fits = true;
    int64_t v;
    if (dtype == GF_I32) fits = value > -2147483649.0 && value < 2147483648.0;
    else if (dtype == GF_I64) fits = gf__double_to_i64(value, &v);
    if (fits) return GF_OK;
    return gf__error(GF_ERR_INVALID, "%s: value %.17g cannot be converted to dtype %s without "
                     "overflow; use a value in the dtype's range or a float dtype", op, value,
                     gf_dtype_name(dtype));
}

gf_status gf__fill(gf_tensor *t, double value) {
    gf_status chk = gf__check_value(value, t->dtype, "fill");
    if (chk != GF_OK) return chk;
    if (gf__is_contiguous(t) && t->dtype != GF_F16 && t->dtype != GF_BF16 &&
        !gf_dtype_is_complex(t->dtype)) {
        /* A dense fill is a byte pattern: the plugin's buffer_fill (or its
         * documented default). */
        unsigned char pat[8];
        size_t es = gf_dtype_size(t->dtype);
        switch (t->dtype) {
        case GF_F32: { float v = (float)value; memcpy(pat, &v, 4); break; }
        case GF_F64: memcpy(pat, &value, 8); break;
        case GF_I32: { int32_t v = (int32_t)value; memcpy(pat, &v, 4); break; }
        case GF_I64: { int64_t v = (int64_t)value; memcpy(pat, &v, 8); break; }
        default: pat[0] = value != 0; break;
        }
        if (isfinite(value) || gf_dtype_is_float(t->dtype)) {
            gf__graph_note(t->storage);
            return gf__dev_fill(t->storage->device, t->storage->buffer, (uint64_t)t->offset * es,
                                (uint64_t)gf__numel(t) * es, pat, (uint32_t)es);
        }
    }
    gfp_fill_params p = {.struct_size = sizeof p, .value = value};
    int64_t iv = 0;
    p.ivalue = gf__double_to_i64(value, &iv) ? iv : 0;
    gf_tensor *out[1] = {t};
    return gf__launch(GFP_OP_FILL, "fill", NULL, 0, out, 1, &p);
}

gf_tensor *gf__scalar(double value, gf_dtype dtype, gf_device *dev) {
    gf_tensor *t = gf__empty(NULL, 0, dtype, dev);
    if (t && gf__fill(t, value) != GF_OK) {
        gf_tensor_release(t);
        return NULL;
    }
    return t;
}

gf_tensor *gf__full_like_raw(const gf_tensor *t, double value) {
    gf_tensor *r = gf__empty(t->sizes, t->rank, t->dtype, t->storage->device);
    if (r && gf__fill(r, value) != GF_OK) {
        gf_tensor_release(r);
        return NULL;
    }
    return r;
}

gf_tensor *gf__cast(const gf_tensor *t, gf_dtype dtype) {
    if (t->dtype == dtype) return gf_tensor_retain((gf_tensor *)t);
    gf_tensor *r = gf__empty(t->sizes, t->rank, dtype, t->storage->device);
    if (r && gf__copy_into(r, t) != GF_OK) {
        gf_tensor_release(r);
        return NULL;
    }
    return r;
}

gf_tensor *gf__contig(const gf_tensor *t) {
    if (gf__is_contiguous(t)) return gf_tensor_retain((gf_tensor *)t);
    gf_tensor *r = gf__empty(t->sizes, t->rank, t->dtype, t->storage->device);
    if (r && gf__copy_into(r, t) != GF_OK) {
        gf_tensor_release(r);
        return NULL;
    }
    return r;
}

/* ------------------------------------------------------------ host copy */
/* Byte range [lo, hi) that a view touches. */
static void extent(const gf_tensor *t, uint64_t *lo, uint64_t *hi) {
    int64_t last = t->offset;
    for (int i = 0; i < t->rank; i++) last += (t->sizes[i] - 1) * t->strides[i];
    size_t es = gf_dtype_size(t->dtype);
    *lo = (uint64_t)t->offset * es;
    *hi = ((uint64_t)last + 1) * es;
}

static void convert(void *dst, gf_dtype dd, const void *src, gf_dtype sd) {
    if (sd == dd) { /* exact for every dtype */
        memcpy(dst, src, gf_dtype_size(dd));
        return;
    }
    if (gf_dtype_is_complex(dd)) { /* real or complex in: re, then im (0 for a real) */
        double re = 0, im = 0;
        if (sd == GF_C64) {
            float f[2];
            memcpy(f, src, 8);
            re = f[0];
            im = f[1];
        } else if (sd == GF_C128) {
            double d[2];
            memcpy(d, src, 16);
            re = d[0];
            im = d[1];
        } else {
            convert(&re, GF_F64, src, sd);
        }
        if (dd == GF_C64) {
            float f[2] = {(float)re, (float)im};
            memcpy(dst, f, 8);
        } else {
            double d[2] = {re, im};
            memcpy(dst, d, 16);
        }
        return;
    }
    bool s_int = sd == GF_I32 || sd == GF_I64 || sd == GF_BOOL;
    int64_t iv = 0;
    double fv = 0;
    switch (sd) {
    case GF_F32: fv = *(const float *)src; break;
    case GF_F64: fv = *(const double *)src; break;
    case GF_I32: iv = *(const int32_t *)src; break;
    case GF_I64: iv = *(const int64_t *)src; break;
    case GF_BOOL: iv = *(const uint8_t *)src != 0; break;
    default: break;
    }
    if (s_int) fv = (double)iv;
    else iv = (isfinite(fv) && fabs(fv) < 9.2e18) ? (int64_t)fv : 0;
    switch (dd) {
    case GF_F32: *(float *)dst = (float)fv; break;
    case GF_F64: *(double *)dst = fv; break;
    case GF_I32: *(int32_t *)dst = (int32_t)(uint32_t)(uint64_t)iv; break;
    case GF_I64: *(int64_t *)dst = iv; break;
    case GF_BOOL: *(uint8_t *)dst = s_int ? iv != 0 : fv != 0; break;
    default: break;
    }
}

gf_status gf__host_copy(gf_tensor *dst, const gf_tensor *src) {
    int64_t n = gf__numel(dst);
    if (n == 0) return GF_OK;
    if (gf_graph_capturing())
        return gf__graph_refuse(GF_ERR_UNSUPPORTED, "a strided copy through host memory (device "
                                "%s has no strided COPY for %s -> %s) inside a captured region: "
                                "it reads to the host, which a replay does not repeat; make the "
                                "tensors contiguous outside the region",
                                dst->storage->device->spec, gf_dtype_name(src->dtype),
                                gf_dtype_name(dst->dtype));
    uint64_t slo, shi, dlo, dhi;
    extent(src, &slo, &shi);
    extent(dst, &dlo, &dhi);
    unsigned char *sb = malloc(shi - slo), *db = malloc(dhi - dlo);
    gf_status st = GF_OK;
    if (!sb || !db) st = gf__error(GF_ERR_OUT_OF_MEMORY, "copy: out of host memory");
    gf_device *sd = src->storage->device, *dd = dst->storage->device;
    if (st == GF_OK) st = gf__dev_read(sd, src->storage->buffer, slo, sb, shi - slo);
    bool dense = gf__is_contiguous(dst);
    if (st == GF_OK && !dense) st = gf__dev_read(dd, dst->storage->buffer, dlo, db, dhi - dlo);
    if (st == GF_OK) {
        size_t ses = gf_dtype_size(src->dtype), des = gf_dtype_size(dst->dtype);
        int64_t idx[GF_MAX_RANK] = {0};
        for (int64_t k = 0; k < n; k++) {
            int64_t so = src->offset, dof = dst->offset;
            for (int i = 0; i < dst->rank; i++) {
                so += idx[i] * src->strides[i];
                dof += idx[i] * dst->strides[i];
            }
            convert(db + (uint64_t)dof * des - dlo, dst->dtype, sb + (uint64_t)so * ses - slo,
                    src->dtype);
            for (int i = dst->rank - 1; i >= 0; i--) {
                if (++idx[i] < dst->sizes[i]) break;
                idx[i] = 0;
            }
        }
        st = gf__dev_write(dd, dst->storage->buffer, dlo, db, dhi - dlo);
    }
    free(sb);
    free(db);
    return st;
}
