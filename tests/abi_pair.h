/* SPDX-License-Identifier: BSD-3-Clause */
/* abi_pair.h — the ABI level of the cross-device harness: a plugin under
 * test against the reference plugin, both loaded through the tests' one ABI
 * host (abi_host.h) and driven through the ABI alone, with no core in
 * between. It is for what libgraft's public API cannot express (that level
 * is tests/xd_harness.h): outputs that are views into larger buffers, a
 * kernel's every input and output layout, in-place launches, parameter
 * structs the core never builds.
 *
 * A pair tensor (ap_tensor) is one logical tensor laid out identically on
 * both plugins: same geometry (sizes, strides, byte offset) over same-sized
 * buffers holding the same bytes. A launch runs on both; then every output's
 * whole buffer is read back: elements the output view covers must agree with
 * the reference within a tolerance (NaN matching NaN, infinities matching
 * exactly), and every other element must still hold its initial value
 * (catching writes outside the view, as ggml's test-backend-ops does with
 * sentinels: every layout leaves at least 3 elements after the view).
 *
 * Layouts: contiguous, transposed (storage holds the transpose of the last two
 * dims), step (the last dim sliced with step 2 from a storage twice as wide),
 * offset (contiguous after 5 unused elements), permuted (dims reversed),
 * broadcast (inputs only: dim 0 read with stride 0).
 *
 *   if (!ap_init()) return 1;
 *   ap_tensor x = ap_make(GFP_F32, 2, SZ(3, 5), AL_TRANSPOSED, AD_ANY), y = ...;
 *   ap_run("exp", GFP_OP_EXP, AP_TS(&x), 1, AP_TS(&y), 1, NULL, 4e-6, 4e-6);
 *   ap_free(&x), ap_free(&y);
 *
 * Plugin paths: GRAFT_TEST_PLUGIN (the plugin under test) and
 * GRAFT_TEST_REFERENCE_PLUGIN. Users: tests/cpu_onednn/test_onednn_*.c.
 * (tools/plugin_check is the installed form of this comparison, for any
 * plugin and every op of the table, linking nothing of graft or its tests.) */
#ifndef GRAFT_TESTS_ABI_PAIR_H
#define GRAFT_TESTS_ABI_PAIR_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi_host.h"
#include "check.h"

/* ------------------------------------------------------------------ plugins */
enum { AP_TEST = 0, AP_REF = 1 }; /* the plugin under test, the reference */

static abi_plugin ap_side[2];

/* Loads both plugins and opens their device 0: 1, or 0 after printing why not. */
static inline int ap_init(void) {
    return abi_load_env(&ap_side[AP_TEST], "GRAFT_TEST_PLUGIN") == 0 &&
           abi_open(&ap_side[AP_TEST]) == 0 &&
           abi_load_env(&ap_side[AP_REF], "GRAFT_TEST_REFERENCE_PLUGIN") == 0 &&
           abi_open(&ap_side[AP_REF]) == 0;
}

/* The plugin under test's name, for messages. */
static inline const char *ap_name(void) { return ap_side[AP_TEST].t->name; }

/* ------------------------------------------------------------------ values */
/* Element values in a dtype's bytes (bf16 rounded to nearest even); sizes
 * are abi_esize's. */
static inline void ap_encode(int32_t dt, double v, unsigned char *out) {
    switch (dt) {
    case GFP_F32: { float f = (float)v; memcpy(out, &f, 4); break; }
    case GFP_F64: memcpy(out, &v, 8); break;
    case GFP_I32: { int32_t i = (int32_t)v; memcpy(out, &i, 4); break; }
    case GFP_I64: { int64_t i = (int64_t)v; memcpy(out, &i, 8); break; }
    case GFP_BOOL: out[0] = v != 0; break;
    case GFP_BF16: { /* round to nearest even */
        float f = (float)v;
        uint32_t u;
        memcpy(&u, &f, 4);
        u += 0x7fffu + ((u >> 16) & 1u);
        uint16_t b = (uint16_t)(u >> 16);
        memcpy(out, &b, 2);
        break;
    }
    default: break;
    }
}

static inline double ap_decode(int32_t dt, const unsigned char *in) {
    switch (dt) {
    case GFP_F32: { float f; memcpy(&f, in, 4); return f; }
    case GFP_F64: { double d; memcpy(&d, in, 8); return d; }
    case GFP_I32: { int32_t i; memcpy(&i, in, 4); return i; }
    case GFP_I64: { int64_t i; memcpy(&i, in, 8); return (double)i; }
    case GFP_BOOL: return in[0];
    case GFP_BF16: {
        uint16_t b;
        memcpy(&b, in, 2);
        uint32_t u = (uint32_t)b << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    default: return 0;
    }
}

/* Complex dtypes are handled as their parts: an element of c64 is two f32
 * values (re, im), each drawn, encoded and compared on its own. */
static inline int ap_parts(int32_t dt) { return dt == GFP_C64 || dt == GFP_C128 ? 2 : 1; }
static inline int32_t ap_part_dtype(int32_t dt) {
    return dt == GFP_C64 ? GFP_F32 : dt == GFP_C128 ? GFP_F64 : dt;
}

/* Deterministic values (splitmix64). */
static uint64_t ap_rng = 0x9E3779B97F4A7C15ull;
static inline double ap_uniform(void) {
    uint64_t z = (ap_rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-53;
}

typedef enum ap_domain {
    AD_ANY,      /* [-2, 2] */
    AD_POS,      /* [0.1, 3] */
    AD_INT,      /* integers in [-5, 5] */
    AD_BOOL,     /* 0 or 1 */
    AD_SPECIAL,  /* mostly [-3, 3], with NaN, +-inf, +-0 and large values */
    AD_WIDE,     /* [-20, 20] */
    AD_SMALL,    /* [-1e-3, 1e-3] */
    AD_NEAR1     /* [0.999, 1.001] */
} ap_domain;

static inline double ap_value(ap_domain d) {
    double u = ap_uniform();
    switch (d) {
    case AD_POS: return 0.1 + 2.9 * u;
    case AD_INT: return floor(u * 11) - 5;
    case AD_BOOL: return u < 0.5 ? 0 : 1;
    case AD_WIDE: return -20 + 40 * u;
    case AD_SMALL: return -1e-3 + 2e-3 * u;
    case AD_NEAR1: return 0.999 + 2e-3 * u;
    case AD_SPECIAL: {
        static const double specials[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 1e30, -1e30,
                                          88.5, -88.5, 1.0};
        double k = ap_uniform();
        if (k < 0.3) return specials[(int)(ap_uniform() * 10) % 10];
        return -3 + 6 * u;
    }
    default: return -2 + 4 * u;
    }
}

/* ------------------------------------------------------------------ pair tensors */
typedef enum ap_layout {
    AL_CONTIG,
    AL_TRANSPOSED,
    AL_STEP,
    AL_OFFSET,
    AL_PERMUTED,
    AL_BCAST,
    AL_COUNT
} ap_layout;
static const char *const ap_layout_names[AL_COUNT] = {"contiguous", "transposed", "step-2",
                                                      "offset",     "permuted",   "broadcast"};

typedef struct ap_tensor {
    gfp_tensor t[2];
    int64_t storage;       /* elements in the buffer */
    unsigned char *init;   /* the buffer's initial bytes */
    int32_t dtype;
    ap_layout layout;
} ap_tensor;

/* Strides and storage size of layout L for sizes; returns false when L does
 * not apply to this rank (the caller then uses contiguous). */
static inline int ap_geometry(ap_layout L, int rank, const int64_t *sizes, int64_t *strides,
                              int64_t *offset, int64_t *storage) {
    int64_t order[GFP_MAX_RANK]; /* storage dim order, outermost first */
    for (int d = 0; d < rank; d++) order[d] = d;
    *offset = 0;
    int64_t inner_step = 1;
    if (L == AL_TRANSPOSED && rank >= 2) {
        order[rank - 2] = rank - 1;
        order[rank - 1] = rank - 2;
    } else if (L == AL_PERMUTED && rank >= 2) {
        for (int d = 0; d < rank; d++) order[d] = rank - 1 - d;
    } else if (L == AL_STEP && rank >= 1) {
        inner_step = 2;
    } else if (L == AL_OFFSET) {
        *offset = 5;
    } else if (L != AL_CONTIG && L != AL_BCAST) {
        return 0;
    }
    int64_t s = inner_step;
    for (int k = rank - 1; k >= 0; k--) {
        int d = (int)order[k];
        strides[d] = s;
        s *= sizes[d] > 0 ? sizes[d] : 1;
    }
    if (L == AL_BCAST && rank >= 1) strides[0] = 0;
    *storage = *offset + s + 3; /* a few trailing elements catch overruns */
    return 1;
}

/* A pair tensor of these sizes in layout L (contiguous where L does not
 * apply to the rank), its whole buffer filled with values from dom. */
static inline ap_tensor ap_make(int32_t dtype, int rank, const int64_t *sizes, ap_layout L,
                                ap_domain dom) {
    ap_tensor p;
    memset(&p, 0, sizeof p);
    p.dtype = dtype;
    p.layout = L;
    int64_t strides[GFP_MAX_RANK] = {0}, offset = 0;
    if (!ap_geometry(L, rank, sizes, strides, &offset, &p.storage)) {
        p.layout = AL_CONTIG;
        ap_geometry(AL_CONTIG, rank, sizes, strides, &offset, &p.storage);
    }
    size_t es = abi_esize(dtype), bytes = (size_t)p.storage * es;
    int32_t pd = ap_part_dtype(dtype);
    size_t pes = abi_esize(pd);
    p.init = malloc(bytes);
    for (int64_t i = 0; i < p.storage * ap_parts(dtype); i++)
        ap_encode(pd, ap_value(dom), p.init + i * pes);
    for (int k = 0; k < 2; k++) {
        gfp_tensor *t = &p.t[k];
        t->struct_size = sizeof *t;
        t->dtype = dtype;
        t->rank = rank;
        t->offset = (uint64_t)offset * es;
        for (int d = 0; d < rank; d++) {
            t->sizes[d] = sizes[d];
            t->strides[d] = strides[d];
        }
        void *host;
        if (ap_side[k].t->buffer_alloc(ap_side[k].dev, bytes, &t->buffer, &host) != GFP_OK) {
            fprintf(stderr, "buffer_alloc of %zu bytes failed\n", bytes);
            t->buffer = NULL;
            continue;
        }
        ap_side[k].t->buffer_write(ap_side[k].dev, t->buffer, 0, p.init, bytes);
    }
    return p;
}

static inline void ap_free(ap_tensor *p) {
    for (int k = 0; k < 2; k++)
        if (p->t[k].buffer) ap_side[k].t->buffer_free(ap_side[k].dev, p->t[k].buffer);
    free(p->init);
    memset(p, 0, sizeof *p);
}

/* Writes n bytes at the start of side k's buffer of p (p->init is not
 * updated: use it for inputs only). */
static inline gfp_status ap_write(const ap_tensor *p, int k, const void *src, size_t n) {
    return ap_side[k].t->buffer_write(ap_side[k].dev, p->t[k].buffer, 0, src, n);
}

/* Reads n bytes from the start of side k's buffer of p. */
static inline gfp_status ap_read(const ap_tensor *p, int k, void *dst, size_t n) {
    return ap_side[k].t->buffer_read(ap_side[k].dev, p->t[k].buffer, 0, dst, n);
}

/* Runs op on one side (AP_TEST or AP_REF); absent inputs are NULL. */
static inline gfp_status ap_launch_side(int k, uint32_t op, ap_tensor *const *in, int n_in,
                                        ap_tensor *const *out, int n_out, const void *params) {
    const gfp_tensor *ti[8] = {NULL}, *to[4] = {NULL};
    for (int i = 0; i < n_in; i++) ti[i] = in[i] ? &in[i]->t[k] : NULL;
    for (int i = 0; i < n_out; i++) to[i] = &out[i]->t[k];
    ap_side[k].error[0] = '\0';
    return ap_side[k].t->launch(ap_side[k].dev, op, ti, (uint32_t)n_in, to, (uint32_t)n_out,
                                params);
}

static inline int ap_close(double a, double b, double atol, double rtol) {
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    if (isinf(a) || isinf(b)) return a == b;
    return fabs(a - b) <= atol + rtol * fabs(b);
}

/* Compares output p of the two sides (see the file comment). Returns the
 * number of mismatches (reported, at most 4 of them). */
static inline int ap_compare(const ap_tensor *p, double atol, double rtol, const char *what) {
    size_t es = abi_esize(p->dtype), bytes = (size_t)p->storage * es;
    unsigned char *got = malloc(bytes), *want = malloc(bytes);
    char *covered = calloc((size_t)p->storage, 1);
    ap_read(p, AP_TEST, got, bytes);
    ap_read(p, AP_REF, want, bytes);
    const gfp_tensor *t = &p->t[AP_TEST];
    int64_t n = 1, idx[GFP_MAX_RANK] = {0};
    for (int d = 0; d < t->rank; d++) n *= t->sizes[d];
    for (int64_t i = 0; i < n; i++) {
        int64_t off = (int64_t)(t->offset / es);
        for (int d = 0; d < t->rank; d++) off += idx[d] * t->strides[d];
        covered[off] = 1;
        for (int d = t->rank - 1; d >= 0; d--) {
            if (++idx[d] < t->sizes[d]) break;
            idx[d] = 0;
        }
    }
    int bad = 0;
    int32_t pd = ap_part_dtype(p->dtype);
    size_t pes = abi_esize(pd);
    for (int64_t i = 0; i < p->storage; i++) {
        for (int q = 0; q < ap_parts(p->dtype); q++) {
            const unsigned char *gp = got + i * es + q * pes, *wp = want + i * es + q * pes;
            double g = ap_decode(pd, gp), w = ap_decode(pd, wp);
            int ok = covered[i] ? ap_close(g, w, atol, rtol)
                                : memcmp(gp, p->init + i * es + q * pes, pes) == 0;
            if (!ok && bad++ < 4)
                fprintf(stderr, "  %s: %s element %lld%s: %s %.9g, reference %.9g\n", what,
                        covered[i] ? "output" : "untouched", (long long)i,
                        ap_parts(p->dtype) == 1 ? "" : q ? " (im)" : " (re)", ap_name(), g, w);
        }
    }
    free(got), free(want), free(covered);
    return bad;
}

/* Launches on both sides: both must succeed, then every output is compared,
 * or both must fail. */
static inline void ap_run(const char *what, uint32_t op, ap_tensor *const *in, int n_in,
                          ap_tensor *const *out, int n_out, const void *params, double atol,
                          double rtol) {
    gfp_status sf = ap_launch_side(AP_TEST, op, in, n_in, out, n_out, params);
    gfp_status sr = ap_launch_side(AP_REF, op, in, n_in, out, n_out, params);
    CHECK_MSG(sf == sr, "%s: %s status %d (%s), reference %d (%s)", what, ap_name(), (int)sf,
              ap_side[AP_TEST].error, (int)sr, ap_side[AP_REF].error);
    if (sf != GFP_OK || sr != GFP_OK) return;
    int bad = 0;
    for (int i = 0; i < n_out; i++) bad += ap_compare(out[i], atol, rtol, what);
    CHECK_MSG(bad == 0, "%s: %d element(s) differ", what, bad);
}

/* Side k's answer to query_op for op on these dtypes in layout_kind
 * (GFP_SUPPORT_NONE when the query itself fails). */
static inline uint32_t ap_support(int k, uint32_t op, const int32_t *in, int n_in,
                                  const int32_t *out, int n_out, uint32_t layout_kind) {
    gfp_op_query q;
    memset(&q, 0, sizeof q);
    q.struct_size = sizeof q;
    q.op = op;
    q.layout = layout_kind;
    q.n_inputs = (uint32_t)n_in;
    q.n_outputs = (uint32_t)n_out;
    for (int i = 0; i < n_in; i++) q.input_dtypes[i] = in[i];
    for (int i = 0; i < n_out; i++) q.output_dtypes[i] = out[i];
    uint32_t s = GFP_SUPPORT_NONE;
    if (ap_side[k].t->query_op(ap_side[k].dev, &q, &s) != GFP_OK) return GFP_SUPPORT_NONE;
    return s;
}

/* A counter the plugin under test offers as the extension `name`, a
 * function uint64_t (void) ("cpu_onednn.primitive_builds"): its value, or
 * UINT64_MAX when the plugin has no such extension. */
static inline uint64_t ap_counter(const char *name) {
    const abi_plugin *p = &ap_side[AP_TEST];
    void *fn = NULL;
    if (!p->t->query_extension || p->t->query_extension(p->ctx, name, &fn) != GFP_OK || !fn)
        return UINT64_MAX;
    uint64_t (*counter)(void);
    memcpy(&counter, &fn, sizeof counter);
    return counter();
}

#define SZ(...) ((const int64_t[]){__VA_ARGS__})
#define AP_TS(...) ((ap_tensor *const[]){__VA_ARGS__})

#endif
