/* SPDX-License-Identifier: BSD-3-Clause */
/* onednn_conv.c — CONV2D and its two gradient ops (f32, bf16) on oneDNN.
 *
 * The primitives are created with "any" layouts, so oneDNN picks its blocked
 * formats, and each tensor is reordered between graft's strided NCHW view and
 * the chosen format around the call (skipped when they agree). Measured here
 * (one core, 64x32x14x14, 3x3 -> 64): the blocked kernels run at 155-175
 * GFLOP/s for forward and both gradients against 40-55 for the plain-layout
 * (im2col + gemm) kernels, and the reorders cost a few percent of that.
 *
 * Groups become oneDNN's 5-D weights [g, Co/g, Ci/g, kh, kw] over the same
 * memory. The reorder primitives live in the same cache entry as the
 * convolution: the entry's key holds every stride they depend on.
 * f64 goes to im2col and the C GEMM (omp_conv_f64.c). */
#include <string.h>

#include "omp_f64.h"

/* The three big tensors of every conv op, in oneDNN's roles. */
enum { ROLE_SRC, ROLE_WEI, ROLE_DST, N_ROLES };

typedef struct conv_plan {
    uint32_t op;
    int32_t dtype;
    int64_t groups;
    odc_conv_geom geom;
    /* graft's tensors in roles src (x), wei (w), dst (y), and their oneDNN
     * dims and strides; wei is 5-D when groups > 1. */
    const gfp_tensor *t[N_ROLES];
    int rank[N_ROLES];
    int64_t dims[N_ROLES][5], strides[N_ROLES][5];
    const gfp_tensor *bias;
} conv_plan;

/* Which roles are outputs, and their argument ids, per op. */
static bool role_is_output(uint32_t op, int role) {
    switch (op) {
    case GFP_OP_CONV2D: return role == ROLE_DST;
    case GFP_OP_CONV2D_BACKWARD_INPUT: return role == ROLE_SRC;
    default: return role == ROLE_WEI;
    }
}

static int role_arg(uint32_t op, int role) {
    switch (op) {
    case GFP_OP_CONV2D:
        return role == ROLE_SRC ? DNNL_ARG_SRC : role == ROLE_WEI ? DNNL_ARG_WEIGHTS : DNNL_ARG_DST;
    case GFP_OP_CONV2D_BACKWARD_INPUT:
        return role == ROLE_SRC ? DNNL_ARG_DIFF_SRC
                                : role == ROLE_WEI ? DNNL_ARG_WEIGHTS : DNNL_ARG_DIFF_DST;
    default:
        return role == ROLE_SRC ? DNNL_ARG_SRC
                                : role == ROLE_WEI ? DNNL_ARG_DIFF_WEIGHTS : DNNL_ARG_DIFF_DST;
    }
}

static bool is_rank4(const gfp_tensor *t) { return t && t->rank == 4; }

/* Checks everything the primitive relies on; false sends the launch to the
 * reference kernel (which explains what is wrong, if anything is). */
static bool make_plan(conv_plan *p, uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                      const gfp_tensor *const *out, uint32_t n_out, const void *params) {
    memset(p, 0, sizeof *p);
    p->op = op;
    if (n_out != 1) return false;
    if (op == GFP_OP_CONV2D) {
        if (n_in != 2 && n_in != 3) return false;
        p->t[ROLE_SRC] = in[0];
        p->t[ROLE_WEI] = in[1];
        p->t[ROLE_DST] = out[0];
        p->bias = n_in == 3 ? in[2] : NULL;
    } else if (op == GFP_OP_CONV2D_BACKWARD_INPUT) {
        if (n_in != 2) return false;
        p->t[ROLE_DST] = in[0];
        p->t[ROLE_WEI] = in[1];
        p->t[ROLE_SRC] = out[0];
    } else {
        if (n_in != 2) return false;
        p->t[ROLE_DST] = in[0];
        p->t[ROLE_SRC] = in[1];
        p->t[ROLE_WEI] = out[0];
    }
    for (int r = 0; r < N_ROLES; r++)
        if (!is_rank4(p->t[r])) return false;
    p->dtype = p->t[ROLE_SRC]->dtype;
    if (p->dtype != GFP_F32 && p->dtype != GFP_BF16) return false;
    for (int r = 0; r < N_ROLES; r++)
        if (p->t[r]->dtype != p->dtype) return false;
    const gfp_conv2d_params *cp = params;
    if (!cp || cp->struct_size < GFP_CONV2D_PARAMS_SIZE_V1_0 || cp->groups < 1) return false;
    for (int a = 0; a < 2; a++) {
        if (cp->stride[a] < 1 || cp->dilation[a] < 1 || cp->padding[a] < 0) return false;
        p->geom.stride[a] = cp->stride[a];
        p->geom.dilation[a] = cp->dilation[a];
        p->geom.pad_l[a] = p->geom.pad_r[a] = cp->padding[a];
    }
    const int64_t *xs = p->t[ROLE_SRC]->sizes, *ws = p->t[ROLE_WEI]->sizes,
                  *ys = p->t[ROLE_DST]->sizes;
    int64_t g = cp->groups;
    p->groups = g;
    if (xs[1] % g || ws[0] % g || ws[1] != xs[1] / g || ws[2] < 1 || ws[3] < 1) return false;
    if (ys[0] != xs[0] || ys[1] != ws[0]) return false;
    for (int a = 0; a < 2; a++) {
        /* A one-tap kernel has no gaps: its dilation changes nothing, but
         * oneDNN's JIT kernels still form offsets from it, which a huge
         * dilation (up to 2^31 - 1 is valid here) overflows. */
        if (ws[2 + a] == 1) p->geom.dilation[a] = 1;
        int64_t span = xs[2 + a] + 2 * cp->padding[a] - cp->dilation[a] * (ws[2 + a] - 1) - 1;
        if (span < 0 || ys[2 + a] != span / cp->stride[a] + 1) return false;
    }
    for (int r = 0; r < N_ROLES; r++)
        if (pk_numel(p->t[r]) == 0) return false; /* empty: the reference's */
    if (p->bias) {
        if (p->bias->rank != 1 || p->bias->sizes[0] != ws[0] || p->bias->dtype != p->dtype ||
            (p->bias->strides[0] == 0 && ws[0] > 1))
            return false;
    }
    for (int r = 0; r < N_ROLES; r++) {
        const gfp_tensor *t = p->t[r];
        if (r == ROLE_WEI && g > 1) {
            p->rank[r] = 5;
            int64_t d[5] = {g, t->sizes[0] / g, t->sizes[1], t->sizes[2], t->sizes[3]};
            int64_t s[5] = {t->strides[0] * (t->sizes[0] / g), t->strides[0], t->strides[1],
                            t->strides[2], t->strides[3]};
            memcpy(p->dims[r], d, sizeof d);
            memcpy(p->strides[r], s, sizeof s);
        } else {
            p->rank[r] = 4;
            memcpy(p->dims[r], t->sizes, 4 * sizeof(int64_t));
            memcpy(p->strides[r], t->strides, 4 * sizeof(int64_t));
        }
        /* A broadcast (stride 0) input is not a layout oneDNN describes. */
        for (int d = 0; d < p->rank[r]; d++)
            if (p->strides[r][d] == 0 && p->dims[r][d] > 1) return false;
    }
    return true;
}

/* Whether role r moves between graft's dense NCHW and the primitive's
 * nChw16c in 16 bits: then omp_layout.c's transposes do it (oneDNN 2.6's
 * generic reorder took 40% of a small bf16 convolution, omp_layout.c). */
static bool own_reorder(const conv_plan *p, int r, const odc_md *prim) {
    if (p->dtype != GFP_BF16 || p->rank[r] != 4 || r == ROLE_WEI) return false;
    int64_t dense[4];
    odn_contiguous_strides(p->dims[r], 4, dense);
    if (memcmp(dense, p->strides[r], sizeof dense) != 0) return false;
    return odc_md_is_nchw16c(prim, p->dims[r], odn_dnnl_dtype(p->dtype));
}

/* md[0..2]: graft's layouts; md[3..5]: the primitive's; md[6]: bias.
 * info[role]: 1 where own_reorder moves that role.
 * p[0]: the convolution; p[1 + role]: the reorder between the two layouts of
 * a role, when they differ. */
static dnnl_status_t build(odn_prim *e, const void *ctx) {
    const conv_plan *p = ctx;
    dnnl_data_type_t dt = odn_dnnl_dtype(p->dtype);
    dnnl_engine_t eng = odn_engine();
    dnnl_status_t st = dnnl_success;
    odc_md any[N_ROLES], bias;
    odc_md_zero(&bias);
    for (int r = 0; r < N_ROLES && st == dnnl_success; r++) {
        st = odc_md_strided(&e->md[r], p->rank[r], p->dims[r], p->strides[r], dt);
        if (st == dnnl_success) st = odc_md_any(&any[r], p->rank[r], p->dims[r], dt);
    }
    if (st == dnnl_success && p->bias) {
        /* Dense: oneDNN's kernels read the bias as a dense vector whatever
         * its descriptor says (run() packs a strided one). */
        int64_t n = p->bias->sizes[0], s = 1;
        st = odc_md_strided(&e->md[6], 1, &n, &s, dt);
        bias = e->md[6];
    }
    if (st != dnnl_success) return st;
    dnnl_primitive_desc_t pd = NULL, hint = NULL;
    if (p->op == GFP_OP_CONV2D) {
        /* Up to 128 channels either side, a forward_training descriptor: for
         * it oneDNN 2.6 picks its blocked (nChw16c) kernel, where for
         * forward_inference it picks brgconv on channels-last, whose output
         * goes back to NCHW through a slow reorder. Measured here, one
         * thread, with bias: [128, 32, 14, 14] -> 64 4.36 -> 4.01 ms, [64,
         * 16, 14, 14] -> 32 0.58 -> 0.51, [32, 64, 56, 56] -> 64 36.7 ->
         * 32.6, 1x1 [64, 128, 28, 28] -> 128 11.6 -> 10.6; but [32, 256,
         * 14, 14] -> 256 28.2 -> 29.7 and [8, 512, 7, 7] -> 512 6.8 -> 8.0,
         * so wider layers keep forward_inference. */
        const int64_t *wd = p->dims[ROLE_WEI] + (p->rank[ROLE_WEI] == 5 ? 1 : 0);
        bool blocked = wd[0] <= 128 && wd[1] <= 128;
        st = odc_conv_fwd_pd(&pd, eng, blocked, &any[ROLE_SRC], &any[ROLE_WEI], &bias,
                             &any[ROLE_DST], &p->geom);
    } else {
        odc_md none;
        odc_md_zero(&none);
        st = odc_conv_fwd_pd(&hint, eng, true, &any[ROLE_SRC], &any[ROLE_WEI], &none,
                             &any[ROLE_DST], &p->geom);
        if (st == dnnl_success && p->op == GFP_OP_CONV2D_BACKWARD_INPUT)
            st = odc_conv_bwd_data_pd(&pd, eng, &any[ROLE_SRC], &any[ROLE_WEI], &any[ROLE_DST],
                                      &p->geom, hint);
        else if (st == dnnl_success)
            st = odc_conv_bwd_weights_pd(&pd, eng, &any[ROLE_SRC], &any[ROLE_WEI], &none,
                                         &any[ROLE_DST], &p->geom, hint);
    }
    if (st == dnnl_success) st = odn_prim_set(e, 0, pd);
    for (int r = 0; r < N_ROLES && st == dnnl_success; r++) {
        if (!odc_pd_arg_md(pd, role_arg(p->op, r), &e->md[3 + r])) {
            st = dnnl_runtime_error;
            break;
        }
        if (odc_md_equal(&e->md[3 + r], &e->md[r])) continue;
        e->info[r] = own_reorder(p, r, &e->md[3 + r]);
        dnnl_primitive_desc_t rpd = NULL;
        bool out = role_is_output(p->op, r);
        st = out ? odc_reorder_pd(&rpd, eng, &e->md[3 + r], &e->md[r])
                 : odc_reorder_pd(&rpd, eng, &e->md[r], &e->md[3 + r]);
        if (st == dnnl_success) st = odn_prim_set(e, 1 + r, rpd);
        if (rpd) dnnl_primitive_desc_destroy(rpd);
    }
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (hint) dnnl_primitive_desc_destroy(hint);
    return st;
}

static gfp_status run(const conv_plan *p, const odn_prim *e, odn_ctx *c) {
    void *user[N_ROLES], *prim[N_ROLES];
    gfp_status st = GFP_OK;
    for (int r = 0; r < N_ROLES && st == GFP_OK; r++) {
        user[r] = (char *)p->t[r]->buffer + p->t[r]->offset;
        prim[r] = user[r];
        if (!e->p[1 + r]) continue;
        prim[r] = odn_arena_alloc(c, odc_md_bytes(&e->md[3 + r]));
        if (!prim[r]) return GFP_ERR_OUT_OF_MEMORY;
        if (!role_is_output(p->op, r) && e->info[r] == 1) {
            const int64_t *d = p->dims[r];
            odn_nchw16c_16bit(prim[r], user[r], d[0], d[1], d[2] * d[3], true);
        } else if (!role_is_output(p->op, r)) {
            odn_arg a[2] = {{DNNL_ARG_FROM, &e->md[r], user[r]},
                            {DNNL_ARG_TO, &e->md[3 + r], prim[r]}};
            st = odn_exec(c, e, 1 + r, a, 2, "conv2d (reorder in)");
        }
    }
    if (st != GFP_OK) return st;
    odn_arg a[4];
    int n = 0;
    for (int r = 0; r < N_ROLES; r++)
        a[n++] = (odn_arg){role_arg(p->op, r), &e->md[3 + r], prim[r]};
    if (p->bias) {
        void *bias = (char *)p->bias->buffer + p->bias->offset;
        if (p->bias->strides[0] != 1 && p->bias->sizes[0] > 1) {
            void *packed = odn_arena_alloc(c, odc_md_bytes(&e->md[6]));
            if (!packed) return GFP_ERR_OUT_OF_MEMORY;
            gfp_tensor dst = odn_temp_like(p->bias, p->dtype, packed);
            st = odn_copy(&dst, p->bias);
            if (st != GFP_OK) return st == ODN_FALLBACK ? GFP_ERR_INTERNAL : st;
            bias = packed;
        }
        a[n++] = (odn_arg){DNNL_ARG_BIAS, &e->md[6], bias};
    }
    st = odn_exec(c, e, 0, a, n, "conv2d");
    for (int r = 0; r < N_ROLES && st == GFP_OK; r++) {
        if (!e->p[1 + r] || !role_is_output(p->op, r)) continue;
        if (e->info[r] == 1) {
            const int64_t *d = p->dims[r];
            odn_nchw16c_16bit(prim[r], user[r], d[0], d[1], d[2] * d[3], false);
            continue;
        }
        odn_arg o[2] = {{DNNL_ARG_FROM, &e->md[3 + r], prim[r]},
                        {DNNL_ARG_TO, &e->md[r], user[r]}};
        st = odn_exec(c, e, 1 + r, o, 2, "conv2d (reorder out)");
    }
    return st;
}

gfp_status odn_conv_launch(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                           const gfp_tensor *const *out, uint32_t n_out, const void *params) {
    conv_plan p;
    for (uint32_t i = 0; i < n_in; i++)
        if (!in[i] && !(op == GFP_OP_CONV2D && i == 2)) return ODN_FALLBACK;
    if (n_out == 1 && out[0] && out[0]->dtype == GFP_F64) /* oneDNN 2.x has no f64 */
        return odn_conv_f64(op, in, n_in, out, n_out, params);
    if (n_out == 1 && out[0] && (out[0]->dtype == GFP_F32 || pk_is_half(out[0]->dtype))) {
        gfp_status st = odn_conv_thin(op, in, n_in, out, n_out, params);
        if (st != ODN_FALLBACK) return st;
    }
    if (!make_plan(&p, op, in, n_in, out, n_out, params)) return ODN_FALLBACK;
    odn_key key;
    odn_key_init(&key, op);
    odn_key_add(&key, p.dtype);
    odn_key_add(&key, p.groups);
    for (int a = 0; a < 2; a++) {
        odn_key_add(&key, p.geom.stride[a]);
        odn_key_add(&key, p.geom.dilation[a]);
        odn_key_add(&key, p.geom.pad_l[a]);
    }
    for (int r = 0; r < N_ROLES; r++) odn_key_tensor(&key, p.t[r]);
    odn_key_add(&key, p.bias != NULL);
    odn_ctx *c;
    gfp_status cst = odn_ctx_acquire(&c);
    if (cst != GFP_OK) return cst;
    const int64_t *ys = p.t[ROLE_DST]->sizes, *ws = p.t[ROLE_WEI]->sizes;
    int64_t flops = 2 * ys[0] * ys[1] * ys[2] * ys[3] * ws[1] * ws[2] * ws[3];
    odn_team team = odn_team_begin(flops / 32);
    const odn_prim *e = odn_cache_get(&key, build, &p);
    gfp_status st = e ? run(&p, e, c) : ODN_FALLBACK;
    odn_prim_release(e);
    odn_team_end(team);
    return st;
}
