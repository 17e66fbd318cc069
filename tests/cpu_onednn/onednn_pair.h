/* onednn_pair.h — the cpu_onednn plugin against the reference plugin, both
 * dlopen'ed and driven through the ABI alone (no core in between).
 *
 * A "pair tensor" is one logical tensor laid out identically on both plugins:
 * same geometry (sizes, strides, byte offset) over same-sized buffers holding
 * the same bytes. A launch runs on both; then every output's whole buffer is
 * read back: elements the output view covers must agree with the reference
 * within a tolerance (NaN matching NaN, infinities matching exactly), and
 * every other element must still hold its initial value (catching writes
 * outside the view, as ggml's test-backend-ops does with sentinels).
 *
 * Layouts: contiguous, transposed (storage holds the transpose of the last two
 * dims), step (the last dim sliced with step 2 from a storage twice as wide),
 * offset (contiguous after 5 unused elements), permuted (dims reversed),
 * broadcast (inputs only: dim 0 read with stride 0).
 *
 * Plugin paths: GRAFT_TEST_ONEDNN_PLUGIN and GRAFT_TEST_REFERENCE_PLUGIN. */
#ifndef GRAFT_TEST_ONEDNN_PAIR_H
#define GRAFT_TEST_ONEDNN_PAIR_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi_host.h"
#include "check.h"

/* ------------------------------------------------------------------ plugins */
enum { FAST = 0, REF = 1 };

typedef struct side {
    abi_plugin abi; /* the plugin through the tests' ABI host (abi_host.h) */
    const gfp_plugin *P;
    void *ctx, *dev;
} side;

static side sides[2];

static int pair_load(int which, const char *path) {
    side *s = &sides[which];
    if (!path) {
        fprintf(stderr, "plugin path not set (GRAFT_TEST_ONEDNN_PLUGIN / "
                        "GRAFT_TEST_REFERENCE_PLUGIN)\n");
        return 0;
    }
    if (abi_load(&s->abi, path) != 0 || abi_open(&s->abi) != 0) return 0;
    s->P = s->abi.t;
    s->ctx = s->abi.ctx;
    s->dev = s->abi.dev;
    return 1;
}

static inline int pair_init(void) {
    return pair_load(FAST, getenv("GRAFT_TEST_ONEDNN_PLUGIN")) &&
           pair_load(REF, getenv("GRAFT_TEST_REFERENCE_PLUGIN"));
}

/* ------------------------------------------------------------------ values */
static size_t pair_esize(int32_t dt) {
    switch (dt) {
    case GFP_F64:
    case GFP_I64: return 8;
    case GFP_BOOL: return 1;
    case GFP_BF16: return 2;
    default: return 4;
    }
}

static void pair_encode(int32_t dt, double v, unsigned char *out) {
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

static double pair_decode(int32_t dt, const unsigned char *in) {
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

/* Deterministic values (splitmix64). */
static uint64_t pair_rng = 0x9E3779B97F4A7C15ull;
static double pair_uniform(void) {
    uint64_t z = (pair_rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-53;
}

typedef enum domain {
    D_ANY,      /* [-2, 2] */
    D_POS,      /* [0.1, 3] */
    D_INT,      /* integers in [-5, 5] */
    D_BOOL,     /* 0 or 1 */
    D_SPECIAL,  /* mostly [-3, 3], with NaN, +-inf, +-0 and large values */
    D_WIDE,     /* [-20, 20] */
    D_SMALL,    /* [-1e-3, 1e-3] */
    D_NEAR1     /* [0.999, 1.001] */
} domain;

static double pair_value(domain d) {
    double u = pair_uniform();
    switch (d) {
    case D_POS: return 0.1 + 2.9 * u;
    case D_INT: return floor(u * 11) - 5;
    case D_BOOL: return u < 0.5 ? 0 : 1;
    case D_WIDE: return -20 + 40 * u;
    case D_SMALL: return -1e-3 + 2e-3 * u;
    case D_NEAR1: return 0.999 + 2e-3 * u;
    case D_SPECIAL: {
        static const double specials[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 1e30, -1e30,
                                          88.5, -88.5, 1.0};
        double k = pair_uniform();
        if (k < 0.3) return specials[(int)(pair_uniform() * 10) % 10];
        return -3 + 6 * u;
    }
    default: return -2 + 4 * u;
    }
}

/* ------------------------------------------------------------------ pair tensors */
typedef enum layout { L_CONTIG, L_TRANSPOSED, L_STEP, L_OFFSET, L_PERMUTED, L_BCAST, L_COUNT } layout;
static const char *const layout_names[L_COUNT] = {"contiguous", "transposed", "step-2",
                                                  "offset", "permuted", "broadcast"};

typedef struct ptensor {
    gfp_tensor t[2];
    int64_t storage;       /* elements in the buffer */
    unsigned char *init;   /* the buffer's initial bytes */
    int32_t dtype;
    layout layout;
} ptensor;

/* Strides and storage size of layout L for sizes; returns false when L does
 * not apply to this rank (the caller then uses contiguous). */
static int pair_geometry(layout L, int rank, const int64_t *sizes, int64_t *strides,
                         int64_t *offset, int64_t *storage) {
    int64_t order[GFP_MAX_RANK]; /* storage dim order, outermost first */
    for (int d = 0; d < rank; d++) order[d] = d;
    *offset = 0;
    int64_t inner_step = 1;
    if (L == L_TRANSPOSED && rank >= 2) {
        order[rank - 2] = rank - 1;
        order[rank - 1] = rank - 2;
    } else if (L == L_PERMUTED && rank >= 2) {
        for (int d = 0; d < rank; d++) order[d] = rank - 1 - d;
    } else if (L == L_STEP && rank >= 1) {
        inner_step = 2;
    } else if (L == L_OFFSET) {
        *offset = 5;
    } else if (L != L_CONTIG && L != L_BCAST) {
        return 0;
    }
    int64_t s = inner_step;
    for (int k = rank - 1; k >= 0; k--) {
        int d = (int)order[k];
        strides[d] = s;
        s *= sizes[d] > 0 ? sizes[d] : 1;
    }
    if (L == L_BCAST && rank >= 1) strides[0] = 0;
    *storage = *offset + s + 3; /* a few trailing elements catch overruns */
    return 1;
}

static ptensor pt_make(int32_t dtype, int rank, const int64_t *sizes, layout L, domain dom) {
    ptensor p;
    memset(&p, 0, sizeof p);
    p.dtype = dtype;
    p.layout = L;
    int64_t strides[GFP_MAX_RANK] = {0}, offset = 0;
    if (!pair_geometry(L, rank, sizes, strides, &offset, &p.storage)) {
        p.layout = L_CONTIG;
        pair_geometry(L_CONTIG, rank, sizes, strides, &offset, &p.storage);
    }
    size_t es = pair_esize(dtype), bytes = (size_t)p.storage * es;
    p.init = malloc(bytes);
    for (int64_t i = 0; i < p.storage; i++) pair_encode(dtype, pair_value(dom), p.init + i * es);
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
        if (sides[k].P->buffer_alloc(sides[k].dev, bytes, &t->buffer, &host) != GFP_OK) {
            fprintf(stderr, "buffer_alloc of %zu bytes failed\n", bytes);
            t->buffer = NULL;
            continue;
        }
        sides[k].P->buffer_write(sides[k].dev, t->buffer, 0, p.init, bytes);
    }
    return p;
}

static void pt_free(ptensor *p) {
    for (int k = 0; k < 2; k++)
        if (p->t[k].buffer) sides[k].P->buffer_free(sides[k].dev, p->t[k].buffer);
    free(p->init);
    memset(p, 0, sizeof *p);
}

/* Runs op on one side; absent inputs are NULL. */
static gfp_status pt_launch_side(int k, uint32_t op, ptensor *const *in, int n_in,
                                 ptensor *const *out, int n_out, const void *params) {
    const gfp_tensor *ti[8], *to[4];
    for (int i = 0; i < n_in; i++) ti[i] = in[i] ? &in[i]->t[k] : NULL;
    for (int i = 0; i < n_out; i++) to[i] = &out[i]->t[k];
    sides[k].abi.error[0] = '\0';
    return sides[k].P->launch(sides[k].dev, op, ti, (uint32_t)n_in, to, (uint32_t)n_out, params);
}

static int pair_close(double a, double b, double atol, double rtol) {
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    if (isinf(a) || isinf(b)) return a == b;
    return fabs(a - b) <= atol + rtol * fabs(b);
}

/* Compares output p of the two sides (see the file comment). Returns the
 * number of mismatches (reported, at most 4 of them). */
static int pt_compare(const ptensor *p, double atol, double rtol, const char *what) {
    size_t es = pair_esize(p->dtype), bytes = (size_t)p->storage * es;
    unsigned char *got = malloc(bytes), *want = malloc(bytes);
    char *covered = calloc((size_t)p->storage, 1);
    sides[FAST].P->buffer_read(sides[FAST].dev, p->t[FAST].buffer, 0, got, bytes);
    sides[REF].P->buffer_read(sides[REF].dev, p->t[REF].buffer, 0, want, bytes);
    const gfp_tensor *t = &p->t[FAST];
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
    for (int64_t i = 0; i < p->storage; i++) {
        double g = pair_decode(p->dtype, got + i * es), w = pair_decode(p->dtype, want + i * es);
        int ok = covered[i] ? pair_close(g, w, atol, rtol)
                            : memcmp(got + i * es, p->init + i * es, es) == 0;
        if (!ok && bad++ < 4)
            fprintf(stderr, "  %s: %s element %lld: cpu_onednn %.9g, reference %.9g\n", what,
                    covered[i] ? "output" : "untouched", (long long)i, g, w);
    }
    free(got), free(want), free(covered);
    return bad;
}

/* Launches on both sides; both must succeed (or, when expect_ok is 0, both
 * fail), then every output is compared. */
static void pair_run(const char *what, uint32_t op, ptensor *const *in, int n_in,
                     ptensor *const *out, int n_out, const void *params, double atol,
                     double rtol) {
    gfp_status sf = pt_launch_side(FAST, op, in, n_in, out, n_out, params);
    gfp_status sr = pt_launch_side(REF, op, in, n_in, out, n_out, params);
    CHECK_MSG(sf == sr, "%s: cpu_onednn status %d (%s), reference %d (%s)", what, (int)sf,
              sides[FAST].abi.error, (int)sr, sides[REF].abi.error);
    if (sf != GFP_OK || sr != GFP_OK) return;
    int bad = 0;
    for (int i = 0; i < n_out; i++) bad += pt_compare(out[i], atol, rtol, what);
    CHECK_MSG(bad == 0, "%s: %d element(s) differ", what, bad);
}

static inline uint32_t pair_support(int k, uint32_t op, const int32_t *in, int n_in, const int32_t *out,
                             int n_out, uint32_t layout_kind) {
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
    if (sides[k].P->query_op(sides[k].dev, &q, &s) != GFP_OK) return GFP_SUPPORT_NONE;
    return s;
}

/* The number of oneDNN primitives the fast plugin has created so far. */
static inline uint64_t pair_builds(void) {
    void *fn = NULL;
    if (!sides[FAST].P->query_extension ||
        sides[FAST].P->query_extension(sides[FAST].ctx, "cpu_onednn.primitive_builds", &fn) !=
            GFP_OK || !fn)
        return UINT64_MAX;
    uint64_t (*builds)(void);
    memcpy(&builds, &fn, sizeof builds);
    return builds();
}

#define SZ(...) ((const int64_t[]){__VA_ARGS__})

#endif
