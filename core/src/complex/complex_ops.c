/* SPDX-License-Identifier: BSD-3-Clause */
/* complex_ops.c — complex tensors: the views between complex and real
 * dtypes, construction, conjugate, modulus and argument, random numbers,
 * and the checks the rest of the core asks about complex dtypes.
 *
 * The views (view_as_real, view_as_complex, real, imag) are tensors over the
 * same storage with another dtype: an element of a c64 tensor at element
 * offset k is the two f32 at offsets 2k and 2k+1. Their backward rules are
 * in complex_grad.c. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../autograd/ag_internal.h"
#include "../profiler_internal.h"
#include "complex_internal.h"
#include "pk_half.h"

#define PI 3.14159265358979323846

/* ------------------------------------------------------------ checks */
bool gf__dtype_differentiable(gf_dtype d) { return gf_dtype_is_float(d) || gf_dtype_is_complex(d); }

/* The ops whose kernels take complex tensors (the reference plugin's set,
 * ref_complex.c); every other op is refused before it reaches a device. */
static bool complex_op(gfp_op op) {
    switch (op) {
    case GFP_OP_COPY:
    case GFP_OP_FILL:
    case GFP_OP_TRIL:
    case GFP_OP_TRIU:
    case GFP_OP_NEG:
    case GFP_OP_ABS:
    case GFP_OP_EXP:
    case GFP_OP_LOG:
    case GFP_OP_LOG1P:
    case GFP_OP_EXPM1:
    case GFP_OP_SQRT:
    case GFP_OP_RSQRT:
    case GFP_OP_RECIPROCAL:
    case GFP_OP_SQUARE:
    case GFP_OP_SIN:
    case GFP_OP_COS:
    case GFP_OP_TANH:
    case GFP_OP_SIGMOID:
    case GFP_OP_POW_SCALAR:
    case GFP_OP_ASIN:
    case GFP_OP_ACOS:
    case GFP_OP_ATAN:
    case GFP_OP_ADD:
    case GFP_OP_SUB:
    case GFP_OP_MUL:
    case GFP_OP_DIV:
    case GFP_OP_POW:
    case GFP_OP_EQ:
    case GFP_OP_NE:
    case GFP_OP_WHERE:
    case GFP_OP_SUM:
    case GFP_OP_MEAN:
    case GFP_OP_PROD:
    case GFP_OP_MATMUL:
    case GFP_OP_INDEX_SELECT:
    case GFP_OP_GATHER:
    case GFP_OP_SCATTER_ADD:
    case GFP_OP_INDEX_ADD:
    case GFP_OP_FFT: return true;
    default: return false;
    }
}

gf_status gf__complex_refused(const char *opname, gf_dtype dt) {
    return gf__error(GF_ERR_DTYPE, "%s: not defined for complex tensors (got %s): complex numbers "
                     "have no ordering, and this op compares values or is defined for real "
                     "numbers only (PyTorch refuses it too); apply it to gf_real, gf_imag or "
                     "gf_abs of the tensor", opname, gf_dtype_name(dt));
}

gf_status gf__complex_check_launch(gfp_op op, const char *opname, const gfp_op_query *q) {
    int32_t dt = -1;
    for (uint32_t i = 0; i < q->n_inputs && dt < 0; i++)
        if (gf_dtype_is_complex((gf_dtype)q->input_dtypes[i])) dt = q->input_dtypes[i];
    for (uint32_t i = 0; i < q->n_outputs && dt < 0; i++)
        if (gf_dtype_is_complex((gf_dtype)q->output_dtypes[i])) dt = q->output_dtypes[i];
    if (dt < 0 || complex_op(op)) return GF_OK;
    char api[160];
    gf__prof_api_name(api, sizeof api);
    char name[200];
    if (api[0] && strcmp(api, opname)) snprintf(name, sizeof name, "%s (op %s)", api, opname);
    else snprintf(name, sizeof name, "%s", opname);
    return gf__complex_refused(name, (gf_dtype)dt);
}

gf_status gf__refuse_complex(const gf_tensor *t, const char *opname) {
    if (t && gf_dtype_is_complex(t->dtype)) return gf__complex_refused(opname, t->dtype);
    return GF_OK;
}

gf_dtype gf__promote_complex(gf_dtype a, gf_dtype b) {
    gf_dtype r = gf__promote(gf_dtype_to_real(a), gf_dtype_to_real(b));
    return gf_dtype_to_complex(r); /* integers, bool, f16, bf16 -> c64 */
}

/* ------------------------------------------------------------ views */
/* A view of t's storage with dtype dt (the storage and version are t's). */
static gf_tensor *retyped_view(const gf_tensor *t, gf_dtype dt, const int64_t *sizes,
                               const int64_t *strides, int rank, int64_t offset) {
    gf_tensor *v = gf__view(t, sizes, strides, rank, offset);
    if (v) v->dtype = dt;
    return v;
}

/* Stride i of z counted in parts. A stride so large that doubling it
 * overflows can only sit on a dim of size 1 or in an empty tensor (no
 * element is that far away), where it addresses nothing: 0 then. */
static int64_t part_stride(const gf_tensor *z, int i) {
    int64_t d;
    return gf__mul_ok(z->strides[i], 2, &d) ? d : 0;
}

/* The parts view of complex z: sizes + [2], strides doubled + [1]. */
gf_tensor *gf__parts_view(const gf_tensor *z) {
    if (z->rank >= GF_MAX_RANK) {
        gf__error(GF_ERR_SHAPE, "a complex tensor of rank %d has no real view of its (re, im) "
                  "parts: the view adds a dim and graft allows rank %d at most; reshape it to "
                  "fewer dims first", z->rank, GF_MAX_RANK);
        return NULL;
    }
    int64_t sizes[GF_MAX_RANK], strides[GF_MAX_RANK];
    for (int i = 0; i < z->rank; i++) {
        sizes[i] = z->sizes[i];
        strides[i] = part_stride(z, i);
    }
    sizes[z->rank] = 2;
    strides[z->rank] = 1;
    return retyped_view(z, gf_dtype_to_real(z->dtype), sizes, strides, z->rank + 1, 2 * z->offset);
}

static bool need_complex(const gf_tensor *z, const char *op, const char *what) {
    if (!z) {
        gf__null_arg(op, what);
        return false;
    }
    if (!gf_dtype_is_complex(z->dtype)) {
        gf__error(GF_ERR_DTYPE, "%s: %s must be complex (c64 or c128), got %s; make one with "
                  "gf_complex or gf_to_dtype(t, GF_C64)", op, what, gf_dtype_name(z->dtype));
        return false;
    }
    return true;
}

gf_tensor *gf_view_as_real(const gf_tensor *z) {
    if (!need_complex(z, "gf_view_as_real", "z")) return NULL;
    if (z->rank >= GF_MAX_RANK) {
        gf__error(GF_ERR_SHAPE, "gf_view_as_real: z has rank %d; the view adds a dim and graft "
                  "allows rank %d at most", z->rank, GF_MAX_RANK);
        return NULL;
    }
    gf_tensor *v = gf__parts_view(z);
    if (v && gf__cx_record_view(z, v, GF_CX_VIEW_AS_REAL) != GF_OK) {
        gf_tensor_release(v);
        v = NULL;
    }
    return gf__ret(v);
}

gf_tensor *gf_view_as_complex(const gf_tensor *t) {
    if (!t) {
        gf__null_arg("gf_view_as_complex", "t");
        return NULL;
    }
    const char *op = "gf_view_as_complex";
    if (t->dtype != GF_F32 && t->dtype != GF_F64) {
        gf__error(GF_ERR_DTYPE, "%s: t must be f32 or f64 (got %s); convert it with gf_to_dtype",
                  op, gf_dtype_name(t->dtype));
        return NULL;
    }
    char s[200];
    int r = t->rank;
    if (r == 0 || t->sizes[r - 1] != 2) {
        gf__error(GF_ERR_SHAPE, "%s: t's last dim must have size 2 (re, im); t has sizes %s", op,
                  gf__shape_str(t->sizes, r, s, sizeof s));
        return NULL;
    }
    if (t->strides[r - 1] != 1) {
        gf__error(GF_ERR_SHAPE, "%s: t's last dim must have stride 1 (got %lld); make t "
                  "contiguous with gf_contiguous first", op, (long long)t->strides[r - 1]);
        return NULL;
    }
    for (int i = 0; i < r - 1; i++)
        if (t->strides[i] % 2 && t->sizes[i] != 1) {
            gf__error(GF_ERR_SHAPE, "%s: every stride but the last must be even (dim %d has "
                      "stride %lld); make t contiguous with gf_contiguous first", op, i,
                      (long long)t->strides[i]);
            return NULL;
        }
    gf_dtype cdt = t->dtype == GF_F32 ? GF_C64 : GF_C128;
    gf_device *dev = t->storage->device;
    if (!(dev->props.dtypes & GFP_DTYPE_BIT(cdt))) { /* no c64/c128 tensor where none can live */
        gf__dtype_not_stored(dev, cdt);
        return NULL;
    }
    if (t->offset % 2) {
        gf__error(GF_ERR_SHAPE, "%s: t's storage offset must be even (it is %lld): a complex "
                  "element starts at an even real element; make t contiguous with gf_contiguous "
                  "first", op, (long long)t->offset);
        return NULL;
    }
    int64_t strides[GF_MAX_RANK];
    for (int i = 0; i < r - 1; i++) strides[i] = t->strides[i] / 2;
    gf_tensor *v = retyped_view(t, gf_dtype_to_complex(t->dtype), t->sizes, strides, r - 1,
                                t->offset / 2);
    if (v && gf__cx_record_view(t, v, GF_CX_VIEW_AS_COMPLEX) != GF_OK) {
        gf_tensor_release(v);
        v = NULL;
    }
    return gf__ret(v);
}

/* One part (0: re, 1: im) of complex z as a view. */
static gf_tensor *part_view(const gf_tensor *z, int part) {
    int64_t strides[GF_MAX_RANK];
    for (int i = 0; i < z->rank; i++) strides[i] = part_stride(z, i);
    return retyped_view(z, gf_dtype_to_real(z->dtype), z->sizes, strides, z->rank,
                        2 * z->offset + part);
}

gf_tensor *gf_real(const gf_tensor *z) {
    if (!z) {
        gf__null_arg("gf_real", "z");
        return NULL;
    }
    if (!gf_dtype_is_complex(z->dtype)) return gf__ret(gf_tensor_retain((gf_tensor *)z));
    gf_tensor *v = part_view(z, 0);
    if (v && gf__cx_record_view(z, v, GF_CX_REAL) != GF_OK) {
        gf_tensor_release(v);
        v = NULL;
    }
    return gf__ret(v);
}

gf_tensor *gf_imag(const gf_tensor *z) {
    if (!z) {
        gf__null_arg("gf_imag", "z");
        return NULL;
    }
    if (!gf_dtype_is_complex(z->dtype)) {
        gf__error(GF_ERR_DTYPE, "gf_imag: z is %s, a real dtype, which has no imaginary part (as "
                  "in PyTorch); convert it to complex with gf_to_dtype first if you need zeros",
                  gf_dtype_name(z->dtype));
        return NULL;
    }
    gf_tensor *v = part_view(z, 1);
    if (v && gf__cx_record_view(z, v, GF_CX_IMAG) != GF_OK) {
        gf_tensor_release(v);
        v = NULL;
    }
    return gf__ret(v);
}

/* ------------------------------------------------------------ construction */
/* Writes re and im (real, broadcast to the result's shape) into the parts
 * of a new complex tensor. No autograd. */
static gf_tensor *assemble(const gf_tensor *re, const gf_tensor *im, gf_dtype cdt,
                           const char *op) {
    int64_t shape[GF_MAX_RANK];
    int rank;
    if (gf__broadcast_shapes(re->sizes, re->rank, im->sizes, im->rank, shape, &rank, op) != GF_OK)
        return NULL;
    gf_tensor *z = gf__empty(shape, rank, cdt, re->storage->device);
    if (!z) return NULL;
    gf_tensor *zr = part_view(z, 0), *zi = part_view(z, 1);
    gf_status s = zr && zi ? gf__copy_into(zr, re) : gf__status();
    if (s == GF_OK) s = gf__copy_into(zi, im);
    gf_tensor_release(zr);
    gf_tensor_release(zi);
    if (s != GF_OK) {
        gf_tensor_release(z);
        return NULL;
    }
    return z;
}

static bool real_float_pair(const gf_tensor *a, const gf_tensor *b, const char *op,
                            const char *an, const char *bn) {
    if (!a || !b) {
        gf__null_arg(op, !a ? an : bn);
        return false;
    }
    const gf_tensor *t[2] = {a, b};
    const char *n[2] = {an, bn};
    for (int i = 0; i < 2; i++)
        if (!gf_dtype_is_float(t[i]->dtype) || t[i]->dtype == GF_F16 || t[i]->dtype == GF_BF16) {
            gf__error(GF_ERR_DTYPE, "%s: %s must be f32 or f64 (got %s), as torch.complex and "
                      "torch.polar expect; convert it with gf_to_dtype", op, n[i],
                      gf_dtype_name(t[i]->dtype));
            return false;
        }
    return gf__same_device(a, b, op);
}

gf_tensor *gf_complex(const gf_tensor *re, const gf_tensor *im) {
    if (!real_float_pair(re, im, "gf_complex", "re", "im")) return NULL;
    gf_dtype cdt = gf_dtype_to_complex(gf__promote(re->dtype, im->dtype));
    gf_tensor *z = assemble(re, im, cdt, "gf_complex");
    if (z && gf__cx_record_complex(re, im, z) != GF_OK) {
        gf_tensor_release(z);
        z = NULL;
    }
    return gf__ret(z);
}

gf_tensor *gf_polar(const gf_tensor *abs, const gf_tensor *angle) {
    if (!real_float_pair(abs, angle, "gf_polar", "abs", "angle")) return NULL;
    int saved = gf__scope_suspend();
    gf_tensor *c = gf_cos(angle), *s = gf_sin(angle);
    gf_tensor *re = c ? gf_mul(abs, c) : NULL, *im = s ? gf_mul(abs, s) : NULL;
    gf_tensor *z = re && im ? gf_complex(re, im) : NULL;
    gf__scope_resume(saved);
    gf_tensor_release(c);
    gf_tensor_release(s);
    gf_tensor_release(re);
    gf_tensor_release(im);
    return gf__ret(z);
}

/* ------------------------------------------------------------ conj, abs, angle */
gf_tensor *gf_conj(const gf_tensor *z) {
    if (!z) {
        gf__null_arg("gf_conj", "z");
        return NULL;
    }
    if (!gf_dtype_is_complex(z->dtype)) return gf__ret(gf_tensor_retain((gf_tensor *)z));
    /* Copy, then negate the imaginary parts in place (no autograd here). */
    gf_tensor *y = gf__empty(z->sizes, z->rank, z->dtype, z->storage->device);
    gf_status s = y ? gf__copy_into(y, z) : gf__status();
    gf_tensor *yi = s == GF_OK ? part_view(y, 1) : NULL;
    if (s == GF_OK && !yi) s = gf__status();
    if (s == GF_OK) {
        const gf_tensor *in[1] = {yi};
        gf_tensor *out[1] = {yi};
        s = gf__launch(GFP_OP_NEG, "gf_conj", in, 1, out, 1, NULL);
    }
    gf_tensor_release(yi);
    if (s == GF_OK) s = gf__cx_record_conj(z, y);
    if (s != GF_OK) {
        gf_tensor_release(y);
        return NULL;
    }
    return gf__ret(y);
}

gf_tensor *gf__conj_if_complex(const gf_tensor *t) {
    if (!t) return NULL;
    if (!gf_dtype_is_complex(t->dtype)) return gf_tensor_retain((gf_tensor *)t);
    int saved = gf__scope_suspend();
    gf_tensor *r = gf_conj(t);
    gf__scope_resume(saved);
    return r;
}

gf_tensor *gf__complex_abs(const gf_tensor *z) {
    gf_tensor *y = gf__empty(z->sizes, z->rank, gf_dtype_to_real(z->dtype), z->storage->device);
    if (!y) return NULL;
    const gf_tensor *in[1] = {z};
    gf_tensor *out[1] = {y};
    if (gf__launch(GFP_OP_ABS, "gf_abs", in, 1, out, 1, NULL) != GF_OK ||
        gf__cx_record_abs(z, y) != GF_OK) {
        gf_tensor_release(y);
        return NULL;
    }
    return gf__ret(y);
}

gf_tensor *gf_angle(const gf_tensor *z) {
    if (!z) {
        gf__null_arg("gf_angle", "z");
        return NULL;
    }
    int saved = gf__scope_suspend();
    gf_tensor *r = NULL;
    if (gf_dtype_is_complex(z->dtype)) {
        gf_tensor *re = gf_real(z), *im = gf_imag(z);
        r = re && im ? gf_atan2(im, re) : NULL;
        gf_tensor_release(re);
        gf_tensor_release(im);
    } else {
        /* atan2(0, x): pi for x < 0, 0 otherwise; NaN stays NaN. */
        gf_tensor *x = gf_dtype_is_float(z->dtype) ? gf_tensor_retain((gf_tensor *)z)
                                                   : gf_to_dtype(z, GF_F32);
        gf_tensor *zero = x ? gf_zeros_like(x) : NULL;
        r = zero ? gf_atan2(zero, x) : NULL;
        gf_tensor_release(zero);
        gf_tensor_release(x);
    }
    gf__scope_resume(saved);
    return gf__ret(r);
}

/* ------------------------------------------------------------ random */
gf_tensor *gf_randn_complex(const int64_t *sizes, int rank, gf_dtype dtype, gf_device *dev) {
    if (dtype != GF_C64 && dtype != GF_C128) {
        gf__error(GF_ERR_DTYPE, "gf_randn_complex: dtype must be GF_C64 or GF_C128 (got %s); "
                  "use gf_randn for real dtypes", gf_dtype_name(dtype));
        return NULL;
    }
    if (rank < 0 || rank >= GF_MAX_RANK || (rank && !sizes)) {
        gf__error(GF_ERR_INVALID, "gf_randn_complex: rank %d must be in [0, %d) with sizes given",
                  rank, GF_MAX_RANK);
        return NULL;
    }
    int64_t s2[GF_MAX_RANK];
    for (int i = 0; i < rank; i++) s2[i] = sizes[i];
    s2[rank] = 2;
    int saved = gf__scope_suspend();
    gf_tensor *parts = gf_rand_normal(s2, rank + 1, 0.0, sqrt(0.5), gf_dtype_to_real(dtype), dev);
    gf_tensor *z = NULL;
    if (parts) {
        z = gf__view(parts, sizes, parts->strides, rank, 0);
        if (z) {
            z->dtype = dtype;
            for (int i = 0; i < rank; i++) z->strides[i] = parts->strides[i] / 2;
        }
    }
    gf__scope_resume(saved);
    gf_tensor_release(parts);
    return gf__ret(z);
}

/* ------------------------------------------------------------ reading */
static gf_status read_element(const gf_tensor *t, int64_t off, double *re, double *im,
                              const char *op) {
    size_t es = gf_dtype_size(t->dtype);
    unsigned char buf[16];
    gf_tensor *one = gf__view(t, NULL, NULL, 0, off);
    if (!one) return gf__status();
    gf_status s = gf_tensor_to_host(one, buf, es);
    gf_tensor_release(one);
    if (s != GF_OK) return s;
    double r = 0, i = 0;
    switch (t->dtype) {
    case GF_C64: {
        float f[2];
        memcpy(f, buf, 8);
        r = f[0];
        i = f[1];
        break;
    }
    case GF_C128: {
        double d[2];
        memcpy(d, buf, 16);
        r = d[0];
        i = d[1];
        break;
    }
    case GF_F32: {
        float f;
        memcpy(&f, buf, 4);
        r = f;
        break;
    }
    case GF_F64: memcpy(&r, buf, 8); break;
    case GF_I32: {
        int32_t v;
        memcpy(&v, buf, 4);
        r = v;
        break;
    }
    case GF_I64: {
        int64_t v;
        memcpy(&v, buf, 8);
        r = (double)v;
        break;
    }
    case GF_BOOL: r = buf[0] != 0; break;
    case GF_F16:
    case GF_BF16: {
        uint16_t h;
        memcpy(&h, buf, 2);
        r = t->dtype == GF_F16 ? pk_f16_to_f32(h) : pk_bf16_to_f32(h);
        break;
    }
    default:
        return gf__error(GF_ERR_DTYPE, "%s: dtype %s cannot be read as a number here; convert it "
                         "with gf_to_dtype(t, GF_F32) first", op, gf_dtype_name(t->dtype));
    }
    if (re) *re = r;
    if (im) *im = i;
    return GF_OK;
}

gf_status gf_tensor_item_complex(const gf_tensor *t, double *re, double *im) {
    if (!t) return gf__null_arg("gf_tensor_item_complex", "t");
    if (gf__numel(t) != 1)
        return gf__error(GF_ERR_INVALID, "gf_tensor_item_complex: the tensor has %lld elements; "
                         "only a one-element tensor has an item (use gf_tensor_get_complex)",
                         (long long)gf__numel(t));
    int64_t off = t->offset; /* the one element: every index is 0 */
    return read_element(t, off, re, im, "gf_tensor_item_complex");
}

gf_status gf_tensor_get_complex(const gf_tensor *t, const int64_t *index, double *re, double *im) {
    if (!t) return gf__null_arg("gf_tensor_get_complex", "t");
    if (t->rank && !index)
        return gf__error(GF_ERR_INVALID, "gf_tensor_get_complex: index is NULL for a tensor of "
                         "rank %d", t->rank);
    int64_t off = t->offset;
    for (int i = 0; i < t->rank; i++) {
        if (index[i] < 0 || index[i] >= t->sizes[i])
            return gf__error(GF_ERR_INDEX, "gf_tensor_get_complex: index %lld is out of range for "
                             "dim %d of size %lld", (long long)index[i], i,
                             (long long)t->sizes[i]);
        off += index[i] * t->strides[i];
    }
    return read_element(t, off, re, im, "gf_tensor_get_complex");
}

/* ------------------------------------------------------------ printing */
typedef struct outbuf {
    char *p;
    size_t len, n;
    bool full;
} outbuf;

static void put(outbuf *o, const char *s) {
    size_t k = strlen(s);
    if (o->full) return;
    if (o->n + k + 4 >= o->len) { /* keep room for "..." */
        memcpy(o->p + o->n, "...", 4);
        o->n += 3;
        o->full = true;
        return;
    }
    memcpy(o->p + o->n, s, k + 1);
    o->n += k;
}

/* "%g" of a value, as Python prints it ("inf", "nan", "-0"). */
static void put_real(outbuf *o, double v) {
    char b[40];
    snprintf(b, sizeof b, "%.6g", v);
    put(o, b);
}

static gf_status put_elems(outbuf *o, const gf_tensor *t, int dim, int64_t off) {
    if (dim == t->rank) {
        double re, im;
        gf_status s = read_element(t, off, &re, &im, "gf_tensor_format");
        if (s != GF_OK) return s;
        put_real(o, re);
        if (gf_dtype_is_complex(t->dtype)) {
            char b[48];
            if (isnan(im)) snprintf(b, sizeof b, "+nanj");
            else snprintf(b, sizeof b, "%s%.6gj", signbit(im) ? "-" : "+", fabs(im));
            put(o, b);
        }
        return GF_OK;
    }
    put(o, "[");
    for (int64_t i = 0; i < t->sizes[dim] && !o->full; i++) {
        if (i) put(o, ", ");
        gf_status s = put_elems(o, t, dim + 1, off + i * t->strides[dim]);
        if (s != GF_OK) return s;
    }
    put(o, "]");
    return GF_OK;
}

const char *gf_tensor_format(const gf_tensor *t, char *buf, size_t len) {
    if (!buf || len < 8) {
        gf__error(GF_ERR_INVALID, "gf_tensor_format: buf must hold at least 8 bytes (got %s, %zu)",
                  buf ? "a buffer" : "NULL", len);
        return NULL;
    }
    buf[0] = '\0';
    if (!t) {
        gf__null_arg("gf_tensor_format", "t");
        return NULL;
    }
    outbuf o = {buf, len, 0, false};
    if (put_elems(&o, t, 0, t->offset) != GF_OK) return NULL;
    char tail[32];
    snprintf(tail, sizeof tail, ", dtype=%s", gf_dtype_name(t->dtype));
    put(&o, tail);
    return buf;
}
