/* SPDX-License-Identifier: BSD-3-Clause */
/* tensor.c — dtypes, host arrays, random inputs, layouts and guarded buffers.
 *
 * Every tensor the checker gives a plugin lives alone in a buffer that is
 * larger than the view: PC_GUARD sentinel bytes before the first element and
 * after the last, and sentinel bytes in the gaps of strided views. After the
 * launch the whole buffer is read back; any sentinel byte that changed is an
 * out-of-bounds write, and an input whose bytes changed was written to. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pc.h"

/* ------------------------------------------------------------ dtypes */
size_t pc_dtype_size(int32_t dt) {
    switch (dt) {
    case GFP_F32:
    case GFP_I32: return 4;
    case GFP_F64:
    case GFP_I64:
    case GFP_C64: return 8;
    case GFP_C128: return 16;
    case GFP_BOOL: return 1;
    case GFP_F16:
    case GFP_BF16: return 2;
    default: return 0;
    }
}

const char *pc_dtype_name(int32_t dt) {
    static const char *const names[] = {"f32", "f64", "i32", "i64", "bool", "f16", "bf16",
                                          "c64", "c128"};
    _Static_assert(sizeof names / sizeof names[0] == GFP_DTYPE_COUNT, "a name per dtype");
    if (dt == -1) return "-";
    return dt >= 0 && dt < GFP_DTYPE_COUNT ? names[dt] : "?";
}

bool pc_is_float(int32_t dt) {
    return dt == GFP_F32 || dt == GFP_F64 || dt == GFP_F16 || dt == GFP_BF16;
}

bool pc_is_complex(int32_t dt) { return dt == GFP_C64 || dt == GFP_C128; }

int32_t pc_part_dtype(int32_t dt) {
    return dt == GFP_C64 ? GFP_F32 : dt == GFP_C128 ? GFP_F64 : dt;
}

pc_array pc_array_parts(const pc_array *a) {
    pc_array p = *a;
    p.dtype = pc_part_dtype(a->dtype);
    if (a->rank < GFP_MAX_RANK) {
        p.sizes[a->rank] = 2;
        p.rank = a->rank + 1;
    } else { /* no room for the parts' dim: one flat dim */
        p.rank = 1;
        p.sizes[0] = 2 * a->numel;
    }
    p.numel = 2 * a->numel;
    return p;
}

/* IEEE binary16, round to nearest even. */
uint16_t pc_f16_from_double(double v) {
    float f = (float)v;
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint32_t sign = (x >> 16) & 0x8000u, exp = (x >> 23) & 0xffu, mant = x & 0x7fffffu;
    if (exp == 0xff) return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0u));
    int e = (int)exp - 127 + 15;
    if (e >= 31) return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) { /* subnormal half */
        if (e < -10) return (uint16_t)sign;
        mant |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - e), h = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1u))) h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((uint32_t)e << 10) | (mant >> 13), rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++; /* a carry rounds into the exponent */
    return (uint16_t)(sign | h);
}

double pc_f16_to_double(uint16_t h) {
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
    return (h & 0x8000u) ? -v : v;
}

uint16_t pc_bf16_from_double(double v) {
    float f = (float)v;
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u); /* quiet NaN */
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

double pc_bf16_to_double(uint16_t h) {
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

/* float -> integer as the reference converts: truncate, saturate, NaN -> 0. */
static int64_t trunc_i64(double v) {
    if (v != v) return 0;
    if (v >= 9223372036854775808.0) return INT64_MAX;
    if (v <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)v;
}

double pc_load(const void *base, int32_t dt, int64_t i) {
    const unsigned char *p = base;
    switch (dt) {
    case GFP_F32: {
        float v;
        memcpy(&v, p + i * 4, 4);
        return v;
    }
    case GFP_F64: {
        double v;
        memcpy(&v, p + i * 8, 8);
        return v;
    }
    case GFP_F16:
    case GFP_BF16: {
        uint16_t v;
        memcpy(&v, p + i * 2, 2);
        return dt == GFP_F16 ? pc_f16_to_double(v) : pc_bf16_to_double(v);
    }
    default: return (double)pc_load_i64(base, dt, i);
    }
}

int64_t pc_load_i64(const void *base, int32_t dt, int64_t i) {
    const unsigned char *p = base;
    switch (dt) {
    case GFP_I32: {
        int32_t v;
        memcpy(&v, p + i * 4, 4);
        return v;
    }
    case GFP_I64: {
        int64_t v;
        memcpy(&v, p + i * 8, 8);
        return v;
    }
    case GFP_BOOL: return p[i] != 0;
    default: return trunc_i64(pc_load(base, dt, i));
    }
}

void pc_store(void *base, int32_t dt, int64_t i, double v) {
    unsigned char *p = base;
    switch (dt) {
    case GFP_F32: {
        float f = (float)v;
        memcpy(p + i * 4, &f, 4);
        break;
    }
    case GFP_F64: memcpy(p + i * 8, &v, 8); break;
    case GFP_F16:
    case GFP_BF16: {
        uint16_t h = dt == GFP_F16 ? pc_f16_from_double(v) : pc_bf16_from_double(v);
        memcpy(p + i * 2, &h, 2);
        break;
    }
    case GFP_BOOL: p[i] = v != 0; break;
    default: pc_store_i64(base, dt, i, trunc_i64(v)); break;
    }
}

void pc_store_i64(void *base, int32_t dt, int64_t i, int64_t v) {
    unsigned char *p = base;
    switch (dt) {
    case GFP_I32: {
        int32_t w = (int32_t)(uint32_t)(uint64_t)v;
        memcpy(p + i * 4, &w, 4);
        break;
    }
    case GFP_I64: memcpy(p + i * 8, &v, 8); break;
    case GFP_BOOL: p[i] = v != 0; break;
    default: pc_store(base, dt, i, (double)v); break;
    }
}

/* ------------------------------------------------------------ arrays */
bool pc_array_init(pc_array *a, int32_t dtype, int rank, const int64_t *sizes) {
    memset(a, 0, sizeof *a);
    a->dtype = dtype;
    a->rank = rank;
    a->numel = 1;
    for (int d = 0; d < rank; d++) {
        a->sizes[d] = sizes[d];
        a->numel *= sizes[d];
    }
    size_t es = pc_dtype_size(dtype);
    a->data = calloc((size_t)(a->numel ? a->numel : 1), es ? es : 1);
    return a->data != NULL;
}

void pc_array_free(pc_array *a) {
    free(a->data);
    a->data = NULL;
    a->numel = 0;
}

bool pc_array_convert(pc_array *dst, const pc_array *src, int32_t dtype) {
    if (!pc_array_init(dst, dtype, src->rank, src->sizes)) return false;
    if (pc_is_complex(src->dtype) || pc_is_complex(dtype)) { /* complex copies: bytes */
        if (dtype == src->dtype && src->numel)
            memcpy(dst->data, src->data, (size_t)src->numel * pc_dtype_size(dtype));
        return dtype == src->dtype;
    }
    bool via_float = pc_is_float(src->dtype) || pc_is_float(dtype);
    for (int64_t i = 0; i < src->numel; i++) {
        if (via_float)
            pc_store(dst->data, dtype, i, pc_load(src->data, src->dtype, i));
        else
            pc_store_i64(dst->data, dtype, i, pc_load_i64(src->data, src->dtype, i));
    }
    return true;
}

void pc_array_collapse(pc_array *a, int dim) {
    if (dim < 0 || dim >= a->rank || a->numel == 0) return;
    int64_t inner = 1;
    for (int d = dim + 1; d < a->rank; d++) inner *= a->sizes[d];
    int64_t n = a->sizes[dim], outer = a->numel / (n * inner);
    size_t es = pc_dtype_size(a->dtype), row = (size_t)inner * es;
    for (int64_t o = 0; o < outer; o++) {
        unsigned char *first = a->data + (size_t)(o * n * inner) * es;
        for (int64_t k = 1; k < n; k++) memcpy(first + (size_t)k * row, first, row);
    }
}

char *pc_shape_text(char *buf, size_t len, int rank, const int64_t *sizes) {
    size_t n = (size_t)snprintf(buf, len, "[");
    for (int d = 0; d < rank && n < len; d++)
        n += (size_t)snprintf(buf + n, len - n, d ? ", %lld" : "%lld", (long long)sizes[d]);
    if (n < len) snprintf(buf + n, len - n, "]");
    return buf;
}

/* ------------------------------------------------------------ random inputs */
uint64_t pc_rng_next(pc_rng *r) {
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double pc_rng_unit(pc_rng *r) { return (double)(pc_rng_next(r) >> 11) * 0x1p-53; }

uint64_t pc_hash(uint64_t a, uint64_t b) {
    pc_rng r = {a * 0x2545F4914F6CDD1Dull ^ b};
    return pc_rng_next(&r);
}

/* The special values mixed into PC_GEN_SPECIALS inputs; the first five
 * into PC_GEN_NONFINITE ones. */
static double special_value(int k, int n) {
    static const double v[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 1e30, -1e30, 1e-30};
    return v[k % n];
}

void pc_array_fill(pc_array *a, pc_gen gen, double lo, double hi, uint64_t seed) {
    if (pc_is_complex(a->dtype)) { /* each part from the range */
        pc_array parts = pc_array_parts(a);
        pc_array_fill(&parts, gen, lo, hi, seed);
        return;
    }
    pc_rng r = {seed};
    bool is_float = pc_is_float(a->dtype);
    for (int64_t i = 0; i < a->numel; i++) {
        double u = pc_rng_unit(&r);
        if (gen == PC_GEN_ZEROS) {
            pc_store_i64(a->data, a->dtype, i, 0);
        } else if (gen == PC_GEN_INDEX) {
            int64_t n = (int64_t)hi;
            pc_store_i64(a->data, a->dtype, i, n > 0 ? (int64_t)(u * (double)n) % n : 0);
        } else if (a->dtype == GFP_BOOL) {
            pc_store_i64(a->data, a->dtype, i, u < 0.5);
        } else if (!is_float || gen == PC_GEN_SMALLINT) {
            int64_t l = (int64_t)ceil(lo), h = (int64_t)floor(hi);
            int64_t v = h >= l ? l + (int64_t)(u * (double)(h - l + 1)) : l;
            if (v > h) v = h;
            pc_store_i64(a->data, a->dtype, i, v);
        } else if (gen == PC_GEN_QUARTERS) {
            pc_store(a->data, a->dtype, i, round((lo + (hi - lo) * u) * 4.0) / 4.0);
        } else {
            double v = lo + (hi - lo) * u;
            /* Every special at least once (the first ones), then one in six. */
            bool special = gen == PC_GEN_SPECIALS || gen == PC_GEN_NONFINITE;
            int n = gen == PC_GEN_SPECIALS ? 8 : 5;
            if (special && a->numel >= 16 && i < n) v = special_value((int)i, n);
            else if (special && pc_rng_next(&r) % 6 == 0)
                v = special_value((int)(pc_rng_next(&r) % (uint64_t)n), n);
            pc_store(a->data, a->dtype, i, v);
        }
    }
}

/* ------------------------------------------------------------ layouts */
const char *pc_layout_name(pc_layout l) {
    static const char *const names[] = {"contiguous", "transposed", "sliced", "broadcast",
                                        "in-place"};
    return (unsigned)l < PC_LAYOUT_COUNT ? names[l] : "?";
}

void pc_view_plan(int32_t dtype, int rank, const int64_t *sizes, pc_layout layout, int bdim,
                  int64_t *strides, uint64_t *offset, uint64_t *bytes) {
    size_t es = pc_dtype_size(dtype);
    int64_t start = 0, numel = 1;
    for (int d = 0; d < rank; d++) numel *= sizes[d];
    if (layout == PC_TRANSPOSED && rank >= 2) {
        /* Stored with the dims reversed: dim 0 varies fastest. */
        int64_t s = 1;
        for (int d = 0; d < rank; d++) {
            strides[d] = s;
            s *= sizes[d] > 0 ? sizes[d] : 1;
        }
    } else {
        int64_t s = 1;
        for (int d = rank - 1; d >= 0; d--) {
            int64_t extent = sizes[d] > 0 ? sizes[d] : 1;
            if (layout == PC_SLICED && d == rank - 1) {
                strides[d] = 2; /* every other element ... */
                s = 2 * extent + 1;
            } else if (layout == PC_BROADCAST && d == bdim) {
                strides[d] = 0; /* one element repeated */
            } else {
                strides[d] = s;
                s *= extent;
            }
        }
        if (layout == PC_SLICED) start = 1; /* ... starting at element 1: unaligned */
    }
    int64_t reach = 0; /* elements from the first to one past the last */
    if (numel > 0) {
        reach = 1;
        for (int d = 0; d < rank; d++) reach += (sizes[d] - 1) * strides[d];
    }
    *offset = PC_GUARD + (uint64_t)start * es;
    *bytes = PC_GUARD + (uint64_t)(start + reach) * es + PC_GUARD;
}

/* Byte position of logical element i (row-major) in the view. */
typedef struct view_walk {
    const gfp_tensor *t;
    int64_t idx[GFP_MAX_RANK];
    uint64_t pos;
    size_t es;
} view_walk;

static void walk_init(view_walk *w, const gfp_tensor *t) {
    memset(w, 0, sizeof *w);
    w->t = t;
    w->es = pc_dtype_size(t->dtype);
    w->pos = t->offset;
}

static void walk_next(view_walk *w) {
    const gfp_tensor *t = w->t;
    for (int d = t->rank - 1; d >= 0; d--) {
        w->pos += (uint64_t)(t->strides[d] * (int64_t)w->es);
        if (++w->idx[d] < t->sizes[d]) return;
        w->pos -= (uint64_t)(t->strides[d] * t->sizes[d] * (int64_t)w->es);
        w->idx[d] = 0;
    }
}

static int64_t numel_of(const gfp_tensor *t) {
    int64_t n = 1;
    for (int d = 0; d < t->rank; d++) n *= t->sizes[d];
    return n;
}

gfp_status pc_dtensor_make(pc_device *d, pc_dtensor *t, const pc_array *a, int32_t dtype,
                           int rank, const int64_t *sizes, pc_layout layout, int bdim,
                           uint64_t seed) {
    memset(t, 0, sizeof *t);
    t->present = true;
    if (a) {
        dtype = a->dtype;
        rank = a->rank;
        sizes = a->sizes;
    }
    gfp_tensor *g = &t->t;
    g->struct_size = sizeof *g;
    g->dtype = dtype;
    g->rank = rank;
    for (int i = 0; i < rank; i++) g->sizes[i] = sizes[i];
    pc_view_plan(dtype, rank, sizes, layout, bdim, g->strides, &g->offset, &t->bytes);
    t->image = malloc((size_t)t->bytes);
    if (!t->image) return GFP_ERR_OUT_OF_MEMORY;
    pc_rng r = {seed ^ 0x5e7e1e55ull};
    for (uint64_t j = 0; j < t->bytes; j += 8) {
        uint64_t v = pc_rng_next(&r);
        memcpy(t->image + j, &v, t->bytes - j < 8 ? (size_t)(t->bytes - j) : 8);
    }
    if (a && a->numel > 0) {
        view_walk w;
        walk_init(&w, g);
        for (int64_t i = 0; i < a->numel; i++, walk_next(&w))
            memcpy(t->image + w.pos, a->data + (size_t)i * w.es, w.es);
    }
    gfp_status st = pc_alloc(d, t->bytes, &t->buffer, NULL);
    if (st != GFP_OK) return st;
    g->buffer = t->buffer;
    return pc_write(d, t->buffer, 0, t->image, t->bytes);
}

/* Where a changed byte lies relative to the view, for the message. */
static void describe_outside(const gfp_tensor *t, uint64_t first, uint64_t count, char *buf,
                             size_t len) {
    size_t es = pc_dtype_size(t->dtype);
    uint64_t lo = t->offset, hi = t->offset;
    int64_t n = numel_of(t);
    if (n > 0) {
        hi = t->offset + es;
        for (int d = 0; d < t->rank; d++) hi += (uint64_t)((t->sizes[d] - 1) * t->strides[d]) * es;
    }
    if (n == 0)
        snprintf(buf, len, "%llu byte(s) changed although the view has no elements",
                 (unsigned long long)count);
    else if (first >= hi)
        snprintf(buf, len,
                 "%llu byte(s) changed outside the view, the first %llu byte(s) after its last "
                 "element%s",
                 (unsigned long long)count, (unsigned long long)(first - hi),
                 first - hi < es ? " (one element past the end)" : "");
    else if (first < lo)
        snprintf(buf, len, "%llu byte(s) changed outside the view, the first %llu byte(s) "
                 "before its first element",
                 (unsigned long long)count, (unsigned long long)(lo - first));
    else
        snprintf(buf, len, "%llu byte(s) changed in the gaps between the view's elements "
                 "(strides ignored?), the first at byte %llu of the view",
                 (unsigned long long)count, (unsigned long long)(first - lo));
}

bool pc_dtensor_read(pc_device *d, const pc_dtensor *t, pc_array *out, bool whole_buffer,
                     char *problem, size_t len, gfp_status *st) {
    problem[0] = '\0';
    unsigned char *got = malloc((size_t)t->bytes);
    unsigned char *covered = whole_buffer ? NULL : calloc((size_t)t->bytes, 1);
    if (!got || (!whole_buffer && !covered)) {
        free(got);
        free(covered);
        *st = GFP_ERR_OUT_OF_MEMORY;
        snprintf(problem, len, "the checker ran out of host memory");
        return false;
    }
    *st = pc_read(d, t->buffer, 0, got, t->bytes);
    if (*st != GFP_OK) {
        snprintf(problem, len, "buffer_read returned %s: %s", pc_status_name(*st),
                 pc_error_text());
        free(got);
        free(covered);
        return false;
    }
    bool ok = true;
    if (whole_buffer) {
        uint64_t first = 0, count = 0;
        for (uint64_t j = 0; j < t->bytes; j++)
            if (got[j] != t->image[j] && count++ == 0) first = j;
        if (count) {
            ok = false;
            snprintf(problem, len, "%llu byte(s) of the buffer changed, the first at byte %llu "
                     "(the view starts at byte %llu)",
                     (unsigned long long)count, (unsigned long long)first,
                     (unsigned long long)t->t.offset);
        }
    } else {
        const gfp_tensor *g = &t->t;
        int64_t n = numel_of(g);
        if (out && !pc_array_init(out, g->dtype, g->rank, g->sizes)) {
            free(got);
            free(covered);
            *st = GFP_ERR_OUT_OF_MEMORY;
            snprintf(problem, len, "the checker ran out of host memory");
            return false;
        }
        view_walk w;
        walk_init(&w, g);
        for (int64_t i = 0; i < n; i++, walk_next(&w)) {
            memset(covered + w.pos, 1, w.es);
            if (out) memcpy(out->data + (size_t)i * w.es, got + w.pos, w.es);
        }
        uint64_t first = 0, count = 0;
        for (uint64_t j = 0; j < t->bytes; j++)
            if (!covered[j] && got[j] != t->image[j] && count++ == 0) first = j;
        if (count) {
            ok = false;
            describe_outside(g, first, count, problem, len);
        }
    }
    free(got);
    free(covered);
    return ok;
}

void pc_dtensor_free(pc_device *d, pc_dtensor *t) {
    if (t->buffer) pc_free(d, t->buffer);
    t->buffer = NULL;
    free(t->image);
    t->image = NULL;
}
