/* SPDX-License-Identifier: BSD-3-Clause */
/* vk_complex.c — the complex dtypes c64 and c128 (c128 needs
 * shaderFloat64): COPY into complex, FILL, the reference's complex unary
 * and binary ops, ABS into the part dtype, EQ/NE to bool
 * (shaders/cx_ew.comp), TRIL/TRIU and WHERE as bit moves through the real
 * shaders, SUM MEAN PROD over dims (shaders/cx_reduce.comp) and MATMUL as
 * one real GEMM through vk_ops_matmul.c (shaders/cx_expand.comp). Which ops
 * and dtypes are provided is plugins/common/pk_complex.c's rule, shared with
 * the reference and OpenCL plugins, and the four index ops part by part
 * through vk_ops_index.c; the FFT is vk_fft.c's; every other complex op
 * answers NONE and runs on the fallback device.
 *
 * Values are computed in double where the device has it (c64 too, rounded
 * once on store, as the reference), in float otherwise (shaders/cx_math.glsl). */
#include <string.h>

#include "vk_internal.h"

#define CX_GROUP 256u

uint32_t vkp_complex_dtypes(const vkp_device *d) {
    return vkp_device_dtypes(d) & PK_DT_COMPLEX; /* vk_plugin.c decides */
}

/* The real dtypes COPY converts from (as the reference: no f16). */
static uint32_t real_sources(const vkp_device *d) {
    return (PK_DT_FLOAT | PK_DT_INT | PK_DT(GFP_BOOL)) & vkp_device_dtypes(d);
}

static const char *c128_note(const vkp_device *d) {
    return d->has_f64 ? "" : "; c128 needs a device with shaderFloat64, which this one lacks";
}

/* ------------------------------------------------------------ elementwise */
bool vkp_complex_ew_accepts(const vkp_device *d, uint32_t op, const int32_t *in,
                            const int32_t *out) {
    pk_ew_kind k = pk_ew_kind_of(op);
    if (k == PK_EW_TRI) return pk_dtype_in(out[0], vkp_complex_dtypes(d)) && in[0] == out[0];
    if (k == PK_EW_WHERE)
        return in[0] == GFP_BOOL && pk_dtype_in(out[0], vkp_complex_dtypes(d)) &&
               in[1] == out[0] && in[2] == out[0];
    return pk_complex_ew_accepts(op, in, out, vkp_complex_dtypes(d), real_sources(d));
}

/* t as the real tensor of its part k (0: re, 1: im), or for c64 with k < 0
 * as i64 (one element per complex value: bits). */
static gfp_tensor part_view(const gfp_tensor *t, int k) {
    gfp_tensor v = *t;
    if (k < 0) {
        v.dtype = GFP_I64;
        return v;
    }
    v.dtype = pk_complex_part(t->dtype);
    v.offset = t->offset + (uint64_t)k * pk_dtype_size(v.dtype);
    for (int dd = 0; dd < t->rank; dd++) v.strides[dd] = 2 * t->strides[dd];
    return v;
}

/* TRIL/TRIU and WHERE copy elements: c64 as i64 bits in one launch, c128
 * part by part (two launches of the f64 paths, which copy bits too). */
static gfp_status move_bits(vkp_device *d, uint32_t op, const gfp_tensor *const *in,
                            uint32_t n_in, const gfp_tensor *const *out, const void *params) {
    bool c64 = out[0]->dtype == GFP_C64;
    gfp_status st = GFP_OK;
    for (int k = 0; k < (c64 ? 1 : 2) && st == GFP_OK; k++) {
        gfp_tensor iv[3], ov = part_view(out[0], c64 ? -1 : k);
        const gfp_tensor *ins[3] = {NULL, NULL, NULL}, *outs[1] = {&ov};
        for (uint32_t i = 0; i < n_in && i < 3; i++) {
            if (!in[i] || !pk_is_complex(in[i]->dtype)) {
                ins[i] = in[i]; /* WHERE's condition */
                continue;
            }
            iv[i] = part_view(in[i], c64 ? -1 : k);
            ins[i] = &iv[i];
        }
        st = vkp_elementwise_launch(d, op, ins, n_in, outs, 1, params);
    }
    return st;
}

gfp_status vkp_complex_ew_launch(vkp_device *d, uint32_t op, const gfp_tensor *const *in,
                                 uint32_t n_in, const gfp_tensor *const *out,
                                 const void *params) {
    const char *name = pk_op_name(op);
    const gfp_tensor *t[4];
    int32_t in_dt[3], out_dt[1] = {out[0]->dtype};
    pk_ew_operands(in, n_in, out[0], t, in_dt);
    if (!vkp_complex_ew_accepts(d, op, in_dt, out_dt)) {
        char ins[64];
        return pk_fail(GFP_ERR_UNSUPPORTED,
                       "%s: the vulkan plugin does not provide it for input dtype(s) (%s) and "
                       "output dtype %s: complex takes %s%s",
                       name, pk_dtypes_text(in, n_in, ins, sizeof ins),
                       pk_dtype_name(out[0]->dtype), pk_complex_ew_rule(op), c128_note(d));
    }
    pk_ew_kind kind = pk_ew_kind_of(op);
    if (kind == PK_EW_TRI || kind == PK_EW_WHERE) return move_bits(d, op, in, n_in, out, params);
    gfp_status st = pk_check_elementwise(op, in, n_in, out[0]);
    if (st == GFP_OK && kind == PK_EW_FILL)
        st = pk_check_params(params, GFP_FILL_PARAMS_SIZE_V1_0, name);
    if (st != GFP_OK || pk_numel(out[0]) == 0) return st;
    int nt = (int)n_in + 1;
    vkp_words p;
    if ((st = vkp_ew_header(&p, t, nt, true, name)) != GFP_OK) return st;
    double a = 0;
    if (kind == PK_EW_FILL) a = ((const gfp_fill_params *)params)->value;
    else if (op == GFP_OP_POW_SCALAR) a = ((const gfp_scalar_params *)params)->a;
    vkp_put_f32(&p, (float)a);
    vkp_put_f64(&p, a);
    uint32_t spec[4] = {0, 0, (uint32_t)out_dt[0], n_in ? (uint32_t)in_dt[0] : (uint32_t)out_dt[0]};
    switch (kind) {
    case PK_EW_COPY: spec[0] = 0; break;
    case PK_EW_FILL: spec[0] = 1; break;
    case PK_EW_UNARY:
        if (op == GFP_OP_ABS) {
            spec[0] = 3;
        } else {
            spec[0] = 2;
            spec[1] = (uint32_t)pk_complex_unary_code(op);
        }
        break;
    case PK_EW_BINARY:
        spec[0] = 4;
        spec[1] = (uint32_t)pk_complex_binary_code(op);
        break;
    default: /* EQ, NE */
        spec[0] = 5;
        spec[1] = op == GFP_OP_NE ? 1u : 0u;
        break;
    }
    const gfp_tensor *tt[3] = {t[0], nt > 1 ? t[1] : NULL, nt > 2 ? t[2] : NULL};
    return vkp_ew_run(d, VKP_SH_CX_EW_P0 + spec[1] % VKP_SH_CX_EW_PARTS, spec, 4, &p, tt, 3);
}

/* y = x converted (x complex or real, y complex; any strides). */
static gfp_status complex_copy(vkp_device *d, const gfp_tensor *y, const gfp_tensor *x) {
    const gfp_tensor *in[1] = {x}, *out[1] = {y};
    return vkp_complex_ew_launch(d, GFP_OP_COPY, in, 1, out, NULL);
}

static gfp_status complex_zero(vkp_device *d, const gfp_tensor *y) {
    gfp_fill_params fp = {.struct_size = sizeof fp};
    const gfp_tensor *out[1] = {y};
    return vkp_complex_ew_launch(d, GFP_OP_FILL, NULL, 0, out, &fp);
}

/* ------------------------------------------------------------ reductions */
/* Elements a pass's invocation reduces: lavapipe ends an invocation's loops
 * after 65535 iterations, so long lines take several passes. */
#define CX_CHUNK 1024

uint32_t vkp_complex_reduce_support(const vkp_device *d, const gfp_op_query *q) {
    return pk_complex_reduce_ok(q->op, q->input_dtypes[0], q->output_dtypes[0],
                                vkp_complex_dtypes(d))
               ? GFP_SUPPORT_STRIDED
               : GFP_SUPPORT_NONE;
}

/* A contiguous scratch tensor of n complex elements of dtype dt. */
static gfp_status scratch(vkp_device *d, int32_t dt, int64_t n, gfp_buffer *buf, gfp_tensor *t) {
    void *host = NULL;
    uint64_t bytes = (uint64_t)(n > 0 ? n : 1) * pk_dtype_size(dt);
    gfp_status st = vkp_buffer_alloc(d, bytes, buf, &host);
    if (st != GFP_OK) return st;
    memset(t, 0, sizeof *t);
    t->struct_size = sizeof *t;
    t->dtype = dt;
    t->buffer = *buf;
    t->rank = 1;
    t->sizes[0] = n;
    t->strides[0] = 1;
    return GFP_OK;
}

/* One pass of cx_reduce.comp (its params are described there). */
typedef struct cx_pass {
    int kr, rr;
    int64_t ks[GFP_MAX_RANK], kx[GFP_MAX_RANK], ky[GFP_MAX_RANK];
    int64_t rs[GFP_MAX_RANK], rx[GFP_MAX_RANK];
    int64_t nout, nred;
} cx_pass;

static gfp_status run_pass(vkp_device *d, uint32_t opcode, const gfp_tensor *x,
                           const gfp_tensor *y, const cx_pass *ps, int64_t nchunks, int64_t ycs,
                           double scale) {
    uint64_t items = (uint64_t)ps->nout * (uint64_t)nchunks;
    if (items > UINT32_MAX)
        return pk_fail(GFP_ERR_UNSUPPORTED, "%s: %llu partial results are more than a vulkan "
                       "launch indexes", opcode == 2 ? "prod" : "sum", (unsigned long long)items);
    vkp_words p = {.n = 0};
    vkp_put(&p, (uint32_t)items);
    vkp_put(&p, (uint32_t)nchunks);
    vkp_put(&p, CX_CHUNK);
    vkp_put(&p, (uint32_t)ps->nred);
    vkp_put(&p, (uint32_t)ps->kr);
    vkp_put(&p, (uint32_t)ps->rr);
    vkp_put(&p, vkp_elem_offset(x));
    vkp_put(&p, vkp_elem_offset(y));
    vkp_put(&p, (uint32_t)ycs);
    for (int k = 0; k < 8; k++) vkp_put(&p, k < ps->kr ? (uint32_t)ps->ks[k] : 1);
    for (int k = 0; k < 8; k++) vkp_put(&p, k < ps->kr ? (uint32_t)ps->kx[k] : 0);
    for (int k = 0; k < 8; k++) vkp_put(&p, k < ps->kr ? (uint32_t)ps->ky[k] : 0);
    for (int k = 0; k < 8; k++) vkp_put(&p, k < ps->rr ? (uint32_t)ps->rs[k] : 1);
    for (int k = 0; k < 8; k++) vkp_put(&p, k < ps->rr ? (uint32_t)ps->rx[k] : 0);
    vkp_put_f32(&p, (float)scale);
    vkp_put_f64(&p, scale);
    vkp_dispatch dp = {.shader = VKP_SH_CX_REDUCE, .n_spec = 3, .params = p.w,
                       .n_params = p.n, .n_tensors = 2, .tensors = {y, x}};
    dp.spec[0] = 64;
    dp.spec[1] = opcode;
    dp.spec[2] = (uint32_t)x->dtype;
    dp.groups[0] = vkp_groups(d, items, 64);
    return vkp_dispatch_run(d, &dp);
}

gfp_status vkp_complex_reduce_launch(vkp_device *d, uint32_t op, const gfp_tensor *x,
                                     const gfp_tensor *y, const void *params) {
    const char *name = pk_op_name(op);
    if (!pk_complex_reduce_ok(op, x->dtype, y->dtype, vkp_complex_dtypes(d)))
        return pk_fail(GFP_ERR_UNSUPPORTED,
                       "%s: the vulkan plugin reduces complex dtypes by sum, mean and prod "
                       "only, into the input's dtype (got %s to %s)%s",
                       name, pk_dtype_name(x->dtype), pk_dtype_name(y->dtype), c128_note(d));
    gfp_status st = pk_check_reduce(op, params, x, y, NULL, PK_DT_COMPLEX, PK_DT_COMPLEX);
    if (st != GFP_OK) return st;
    uint32_t dims = ((const gfp_reduce_params *)params)->dims;
    cx_pass ps = {.nout = 1, .nred = 1};
    for (int dd = 0; dd < x->rank; dd++) {
        int64_t s = x->sizes[dd];
        if ((dims >> dd) & 1u) {
            ps.nred *= s;
            if (s == 1) continue;
            ps.rs[ps.rr] = s;
            ps.rx[ps.rr++] = x->strides[dd];
        } else {
            ps.nout *= s;
            if (s == 1) continue;
            ps.ks[ps.kr] = s;
            ps.kx[ps.kr] = x->strides[dd];
            ps.ky[ps.kr++] = y->strides[dd];
        }
    }
    if (ps.nout == 0) return GFP_OK;
    if (ps.nred > UINT32_MAX || ps.nout > UINT32_MAX)
        return pk_fail(GFP_ERR_UNSUPPORTED, "%s: more elements than a vulkan launch indexes", name);
    uint32_t opcode = op == GFP_OP_PROD ? 2u : 0u;
    double last_scale = op == GFP_OP_MEAN ? 1.0 / (double)ps.nred : 1.0;
    /* Passes: chunks of CX_CHUNK into dense scratch [kept..., chunks], until
     * one chunk per output is left, which goes to y. */
    int64_t yk[GFP_MAX_RANK];
    memcpy(yk, ps.ky, sizeof yk);
    gfp_tensor src = *x;
    gfp_buffer held = NULL;
    while (st == GFP_OK) {
        int64_t chunks = ps.nred > CX_CHUNK ? (ps.nred + CX_CHUNK - 1) / CX_CHUNK : 1;
        if (chunks == 1) {
            memcpy(ps.ky, yk, sizeof yk);
            st = run_pass(d, opcode, &src, y, &ps, 1, 0, last_scale);
            break;
        }
        gfp_buffer buf;
        gfp_tensor part;
        if ((st = scratch(d, x->dtype, ps.nout * chunks, &buf, &part)) != GFP_OK) break;
        int64_t stride = chunks;
        for (int k = ps.kr - 1; k >= 0; k--) {
            ps.ky[k] = stride;
            stride *= ps.ks[k];
        }
        st = run_pass(d, opcode, &src, &part, &ps, chunks, 1, 1.0);
        /* Freed at once: later work is queued behind the dispatches reading it. */
        if (held) vkp_buffer_free(d, held);
        held = buf;
        /* Next: the partials, kept dims as laid out, one reduced dim of chunks. */
        src = part;
        memcpy(ps.kx, ps.ky, sizeof ps.kx);
        ps.rr = 1;
        ps.rs[0] = chunks;
        ps.rx[0] = 1;
        ps.nred = chunks;
    }
    if (held) vkp_buffer_free(d, held);
    return st;
}

/* ------------------------------------------------------------ matmul */
/* One real GEMM through vk_ops_matmul.c: a read as the real [m, 2k] matrix
 * of interleaved parts, times b expanded to the real [2k, 2n] matrix
 * (cx_expand.comp), is y read as the real [m, 2n] one; the GEMM does 8mkn
 * real flops, as the complex products do. a and y need a unit column stride
 * for those readings: other views go through contiguous copies. c64
 * accumulates in float (the f32 GEMM), c128 in double. */
uint32_t vkp_complex_matmul_support(const vkp_device *d, const gfp_op_query *q) {
    return pk_complex_matmul_ok(q->input_dtypes[0], q->input_dtypes[1], q->output_dtypes[0],
                                vkp_complex_dtypes(d))
               ? GFP_SUPPORT_STRIDED
               : GFP_SUPPORT_NONE;
}

static gfp_status expand(vkp_device *d, const gfp_tensor *b, const gfp_tensor *e, int64_t k,
                         int64_t n, int64_t batches) {
    int r = b->rank, br = r - 2;
    int64_t bs[GFP_MAX_RANK], bst[1][GFP_MAX_RANK];
    for (int dd = 0; dd < br; dd++) {
        bs[dd] = b->sizes[dd];
        bst[0][dd] = b->strides[dd];
    }
    vkp_coalesce(&br, bs, bst, 1);
    uint64_t items = (uint64_t)(batches * k * n);
    vkp_words p = {.n = 0};
    vkp_put(&p, (uint32_t)items);
    vkp_put(&p, (uint32_t)k);
    vkp_put(&p, (uint32_t)n);
    vkp_put(&p, vkp_elem_offset(b));
    vkp_put(&p, vkp_elem_offset(e));
    vkp_put(&p, (uint32_t)b->strides[r - 2]);
    vkp_put(&p, (uint32_t)b->strides[r - 1]);
    vkp_put(&p, (uint32_t)br);
    for (int dd = 0; dd < 8; dd++) vkp_put(&p, dd < br ? (uint32_t)bs[dd] : 1);
    for (int dd = 0; dd < 8; dd++) vkp_put(&p, dd < br ? (uint32_t)bst[0][dd] : 0);
    vkp_dispatch dp = {.shader = VKP_SH_CX_EXPAND, .n_spec = 2, .params = p.w,
                       .n_params = p.n, .n_tensors = 2, .tensors = {e, b}};
    dp.spec[0] = CX_GROUP;
    dp.spec[1] = (uint32_t)b->dtype;
    dp.groups[0] = vkp_groups(d, items, CX_GROUP);
    return vkp_dispatch_run(d, &dp);
}

gfp_status vkp_complex_matmul_launch(vkp_device *d, const gfp_tensor *a, const gfp_tensor *b,
                                     const gfp_tensor *y) {
    gfp_status st = pk_check_matmul(a, b, y, vkp_complex_dtypes(d));
    if (st != GFP_OK) return st;
    int r = a->rank, br = r - 2;
    int64_t m = a->sizes[r - 2], k = a->sizes[r - 1], n = b->sizes[r - 1], batches = 1;
    for (int dd = 0; dd < br; dd++) batches *= a->sizes[dd];
    if (m == 0 || n == 0 || batches == 0) return GFP_OK;
    if (k == 0) return complex_zero(d, y);
    if ((uint64_t)(batches * 4 * k * n) > UINT32_MAX)
        return pk_fail(GFP_ERR_UNSUPPORTED, "matmul: the expanded operand of %lld x %lld complex "
                       "elements is more than a vulkan launch indexes", (long long)(batches * k),
                       (long long)n);
    size_t es = pk_dtype_size(a->dtype);
    gfp_buffer ab = NULL, eb = NULL, yb = NULL;
    void *host = NULL;
    gfp_tensor ac = *a, yc = *y, e;
    if (a->strides[r - 1] != 1 && m * k > 0) {
        if ((st = vkp_buffer_alloc(d, (uint64_t)pk_numel(a) * es, &ab, &host)) != GFP_OK) return st;
        ac = pk_dense_in(a, a->dtype, ab);
        st = complex_copy(d, &ac, a);
    }
    if (st == GFP_OK && y->strides[r - 1] != 1) {
        if ((st = vkp_buffer_alloc(d, (uint64_t)pk_numel(y) * es, &yb, &host)) == GFP_OK)
            yc = pk_dense_in(y, y->dtype, yb);
    }
    if (st == GFP_OK)
        st = vkp_buffer_alloc(d, (uint64_t)(batches * 4 * k * n) * (es / 2), &eb, &host);
    if (st == GFP_OK) {
        e = *b;
        e.sizes[r - 2] = 2 * k;
        e.sizes[r - 1] = 2 * n;
        e.dtype = pk_complex_part(a->dtype);
        /* dense, with batch dims of a's sizes (b's may broadcast with stride 0) */
        for (int dd = 0; dd < br; dd++) e.sizes[dd] = a->sizes[dd];
        e = pk_dense_in(&e, e.dtype, eb);
        st = expand(d, b, &e, k, n, batches);
    }
    if (st == GFP_OK) {
        gfp_tensor ar = pk_complex_real_view(&ac), yr = pk_complex_real_view(&yc);
        const gfp_tensor *ins[2] = {&ar, &e}, *outs[1] = {&yr};
        st = vkp_matmul_launch(d, GFP_OP_MATMUL, ins, 2, outs, 1, NULL);
    }
    if (st == GFP_OK && yb) st = complex_copy(d, y, &yc);
    /* Freed at once: later work is queued behind the dispatches reading them. */
    if (ab) vkp_buffer_free(d, ab);
    if (eb) vkp_buffer_free(d, eb);
    if (yb) vkp_buffer_free(d, yb);
    return st;
}

/* ------------------------------------------------------------ indexing */
/* INDEX_SELECT GATHER SCATTER_ADD INDEX_ADD on complex data: the real op
 * on the real part, then on the imaginary part (views with doubled strides,
 * the index shared), so the adds sum each part in the reference's order. */
uint32_t vkp_complex_index_support(const vkp_device *d, const gfp_op_query *q) {
    return pk_index_dtypes_ok(q->op, q->input_dtypes[0], q->input_dtypes[1], q->output_dtypes[0],
                              vkp_complex_dtypes(d))
               ? GFP_SUPPORT_STRIDED
               : GFP_SUPPORT_NONE;
}

gfp_status vkp_complex_index_launch(vkp_device *d, uint32_t op, const gfp_tensor *const *in,
                                    uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                                    const void *params) {
    if (!pk_index_dtypes_ok(op, in[0]->dtype, in[1]->dtype, out[0]->dtype,
                            vkp_complex_dtypes(d)))
        return pk_fail(GFP_ERR_UNSUPPORTED, "%s: complex data (%s) needs an i64 index and an "
                       "output of the data's dtype (got %s, %s)%s", pk_op_name(op),
                       pk_dtype_name(in[0]->dtype), pk_dtype_name(in[1]->dtype),
                       pk_dtype_name(out[0]->dtype), c128_note(d));
    gfp_status st = GFP_OK;
    for (int k = 0; k < 2 && st == GFP_OK; k++) {
        gfp_tensor xv = part_view(in[0], k), yv = part_view(out[0], k);
        const gfp_tensor *ins[2] = {&xv, in[1]}, *outs[1] = {&yv};
        st = vkp_index_launch(d, op, ins, n_in, outs, n_out, params);
    }
    return st;
}
