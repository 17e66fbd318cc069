/* SPDX-License-Identifier: BSD-3-Clause */
/* vk_ops_conv.c — CONV2D and its two gradients, MAX/AVG_POOL2D and their
 * gradients (NCHW, f32 and f64), in gather form: an invocation per output
 * element computes one sum (shaders/conv.comp, shaders/pool.comp), so no two
 * invocations write one element. Geometry and checks follow the reference
 * (plugins/reference/ref_conv.c, ref_pool.c). */
#include "vk_internal.h"

static bool is_conv(uint32_t op) {
    return op == GFP_OP_CONV2D || op == GFP_OP_CONV2D_BACKWARD_INPUT ||
           op == GFP_OP_CONV2D_BACKWARD_WEIGHT;
}

uint32_t vkp_conv_support(vkp_device *d, const gfp_op_query *q) {
    uint32_t floats = PK_DT_FLOAT & vkp_device_dtypes(d);
    bool ok = gfp_op_family_of(q->op) == GFP_FAMILY_CONV ? pk_conv_dtypes_ok(q, floats)
                                                          : pk_pool_dtypes_ok(q, floats);
    return ok ? GFP_SUPPORT_STRIDED : GFP_SUPPORT_NONE;
}

static gfp_status rank4(const char *op, const gfp_tensor *t, const char *role) {
    if (!t) return pk_fail(GFP_ERR_INVALID, "%s: %s is NULL", op, role);
    if (t->rank != 4)
        return pk_fail(GFP_ERR_INVALID, "%s: %s must be rank 4 (NCHW), got rank %d", op, role,
                        (int)t->rank);
    return GFP_OK;
}

static gfp_status float_alike(const char *op, const gfp_tensor *const *ts, int n) {
    int32_t dt = ts[0]->dtype;
    for (int i = 0; i < n; i++)
        if (ts[i] && ts[i]->dtype != dt)
            return pk_fail(GFP_ERR_UNSUPPORTED, "%s: all tensors must share one dtype (f32 or "
                            "f64); got %s and %s", op, pk_dtype_name(dt),
                            pk_dtype_name(ts[i]->dtype));
    if (dt != GFP_F32 && dt != GFP_F64)
        return pk_fail(GFP_ERR_UNSUPPORTED, "%s: dtype %s; the vulkan plugin computes it in f32 "
                        "and f64", op, pk_dtype_name(dt));
    return GFP_OK;
}

static void put4(vkp_words *p, const gfp_tensor *t) {
    for (int k = 0; k < 4; k++) vkp_put(p, (uint32_t)t->strides[k]);
}

static gfp_status run(vkp_device *d, uint32_t shader, uint32_t op, int32_t dt, vkp_words *p,
                      const gfp_tensor *const *t, uint32_t nt, int64_t items) {
    if (items == 0) return GFP_OK;
    if (items > (int64_t)UINT32_MAX)
        return pk_fail(GFP_ERR_UNSUPPORTED, "%s: %lld outputs are too many for one launch",
                        pk_op_name(op), (long long)items);
    p->w[0] = (uint32_t)items;
    vkp_dispatch dp = {.shader = shader, .n_spec = 3, .params = p->w, .n_params = p->n,
                       .n_tensors = nt};
    for (uint32_t i = 0; i < nt; i++) dp.tensors[i] = t[i];
    dp.spec[0] = 64;
    dp.spec[1] = op;
    dp.spec[2] = (uint32_t)dt;
    dp.groups[0] = vkp_groups(d, (uint64_t)items, 64);
    return vkp_dispatch_run(d, &dp);
}

static gfp_status conv_launch(vkp_device *d, uint32_t op, const gfp_tensor *const *in,
                              uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                              const void *params) {
    const char *name = pk_op_name(op);
    if (op == GFP_OP_CONV2D ? ((n_in != 2 && n_in != 3) || n_out != 1) : (n_in != 2 || n_out != 1))
        return pk_fail(GFP_ERR_INVALID, "%s: takes %s inputs and 1 output, got %u and %u", name,
                        op == GFP_OP_CONV2D ? "2 or 3" : "2", (unsigned)n_in, (unsigned)n_out);
    gfp_status st = pk_check_params(params, GFP_CONV2D_PARAMS_SIZE_V1_0, name);
    if (st != GFP_OK) return st;
    const gfp_conv2d_params *cp = params;
    const gfp_tensor *x, *w, *y, *bias = NULL;
    if (op == GFP_OP_CONV2D) {
        x = in[0];
        w = in[1];
        y = out[0];
        bias = n_in == 3 ? in[2] : NULL;
    } else if (op == GFP_OP_CONV2D_BACKWARD_INPUT) {
        y = in[0];
        w = in[1];
        x = out[0];
    } else {
        y = in[0];
        x = in[1];
        w = out[0];
    }
    if ((st = rank4(name, x, "the input-shaped tensor")) != GFP_OK ||
        (st = rank4(name, w, "the weight")) != GFP_OK ||
        (st = rank4(name, y, "the output-shaped tensor")) != GFP_OK)
        return st;
    const gfp_tensor *all[4] = {x, w, y, bias};
    if ((st = float_alike(name, all, 4)) != GFP_OK) return st;
    if (cp->groups < 1 || cp->stride[0] < 1 || cp->stride[1] < 1 || cp->dilation[0] < 1 ||
        cp->dilation[1] < 1 || cp->padding[0] < 0 || cp->padding[1] < 0)
        return pk_fail(GFP_ERR_INVALID, "%s: groups, strides and dilations must be >= 1 and "
                        "paddings >= 0", name);
    int64_t N = x->sizes[0], CI = x->sizes[1], H = x->sizes[2], W = x->sizes[3];
    int64_t CO = w->sizes[0], KH = w->sizes[2], KW = w->sizes[3], G = cp->groups;
    if (CI % G || CO % G || w->sizes[1] != CI / G || KH < 1 || KW < 1)
        return pk_fail(GFP_ERR_INVALID, "%s: channels %lld -> %lld do not fit groups %lld and "
                        "weight [%lld, %lld, %lld, %lld]", name, (long long)CI, (long long)CO,
                        (long long)G, (long long)CO, (long long)w->sizes[1], (long long)KH,
                        (long long)KW);
    int64_t span_h = H + 2 * cp->padding[0] - cp->dilation[0] * (KH - 1) - 1;
    int64_t span_w = W + 2 * cp->padding[1] - cp->dilation[1] * (KW - 1) - 1;
    if (span_h < 0 || span_w < 0)
        return pk_fail(GFP_ERR_INVALID, "%s: the dilated kernel is larger than the padded input",
                        name);
    int64_t HO = span_h / cp->stride[0] + 1, WO = span_w / cp->stride[1] + 1;
    if (y->sizes[0] != N || y->sizes[1] != CO || y->sizes[2] != HO || y->sizes[3] != WO)
        return pk_fail(GFP_ERR_INVALID, "%s: the output-shaped tensor must be [%lld, %lld, %lld, "
                        "%lld]", name, (long long)N, (long long)CO, (long long)HO, (long long)WO);
    if (bias && (bias->rank != 1 || bias->sizes[0] != CO))
        return pk_fail(GFP_ERR_INVALID, "%s: bias must be rank 1 with %lld elements", name,
                        (long long)CO);
    vkp_words p = {.n = 0};
    vkp_put(&p, 0); /* items, set by run() */
    int64_t geo[18] = {N, CI, CO, H, W, KH, KW, HO, WO, G, CI / G, CO / G, cp->stride[0],
                       cp->stride[1], cp->padding[0], cp->padding[1], cp->dilation[0],
                       cp->dilation[1]};
    for (int i = 0; i < 18; i++) vkp_put(&p, (uint32_t)geo[i]);
    put4(&p, x);
    put4(&p, w);
    put4(&p, y);
    vkp_put(&p, bias ? (uint32_t)bias->strides[0] : 0);
    vkp_put(&p, vkp_elem_offset(x));
    vkp_put(&p, vkp_elem_offset(w));
    vkp_put(&p, vkp_elem_offset(y));
    vkp_put(&p, bias ? vkp_elem_offset(bias) : 0);
    vkp_put(&p, bias ? 1u : 0u);
    if (vkp_conv_gemm_wins(op, geo)) {
        bool done = false;
        st = vkp_conv_gemm(d, op, x, w, y, bias, geo, &done);
        if (st != GFP_OK || done) return st;
    }
    /* The terms of one output of the forward and input-gradient kernels. */
    int64_t per_out = op == GFP_OP_CONV2D ? (CI / G) * KH * KW : (CO / G) * KH * KW;
    if (op != GFP_OP_CONV2D_BACKWARD_WEIGHT && per_out > (int64_t)d->loop_budget / 2)
        return pk_fail(GFP_ERR_UNSUPPORTED, "%s: %lld terms per output are more loop iterations "
                        "than this vulkan device runs in one invocation", name,
                        (long long)per_out);
    const gfp_tensor *t[4];
    int64_t items;
    if (op == GFP_OP_CONV2D) {
        t[0] = y; t[1] = x; t[2] = w; t[3] = bias;
        items = N * CO * HO * WO;
    } else if (op == GFP_OP_CONV2D_BACKWARD_INPUT) {
        t[0] = x; t[1] = y; t[2] = w; t[3] = NULL;
        items = N * CI * H * W;
    } else {
        t[0] = w; t[1] = y; t[2] = x; t[3] = NULL;
        items = CO * (CI / G) * KH * KW;
    }
    if (op == GFP_OP_CONV2D_BACKWARD_WEIGHT) {
        /* A workgroup per grad_w element sums its N * Ho * Wo terms. */
        int64_t terms = N * HO * WO;
        uint32_t wg = terms >= 4096 ? 256 : 64;
        if (terms / wg > (int64_t)d->loop_budget)
            return pk_fail(GFP_ERR_UNSUPPORTED, "%s: %lld terms per weight are more than this "
                            "device sums in one workgroup", name, (long long)terms);
        if (items == 0) return GFP_OK;
        p.w[0] = (uint32_t)items;
        vkp_dispatch dp = {.shader = VKP_SH_CONV, .n_spec = 3, .params = p.w, .n_params = p.n,
                           .n_tensors = 4, .tensors = {t[0], t[1], t[2], t[3]}};
        dp.spec[0] = wg;
        dp.spec[1] = op;
        dp.spec[2] = (uint32_t)x->dtype;
        uint64_t gx = (uint64_t)items < 65535 ? (uint64_t)items : 65535;
        dp.groups[0] = (uint32_t)gx;
        dp.groups[1] = (uint32_t)(((uint64_t)items + gx - 1) / gx);
        return vkp_dispatch_run(d, &dp);
    }
    return run(d, VKP_SH_CONV, op, x->dtype, &p, t, 4, items);
}

static gfp_status pool_launch(vkp_device *d, uint32_t op, const gfp_tensor *const *in,
                              uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                              const void *params) {
    const char *name = pk_op_name(op);
    uint32_t want_in = op == GFP_OP_MAX_POOL2D_BACKWARD ? 2 : 1;
    uint32_t want_out = op == GFP_OP_MAX_POOL2D ? 2 : 1;
    gfp_status st = pk_expect_counts(n_in, want_in, n_out, want_out, name);
    if (st != GFP_OK) return st;
    /* big: the input-shaped tensor; small: the output-shaped one. */
    const gfp_tensor *big, *small, *ind = NULL;
    const gfp_tensor *t[3];
    switch (op) {
    case GFP_OP_MAX_POOL2D:
        big = in[0]; small = out[0]; ind = out[1];
        t[0] = small; t[1] = ind; t[2] = big;
        break;
    case GFP_OP_MAX_POOL2D_BACKWARD:
        big = out[0]; small = in[0]; ind = in[1];
        t[0] = big; t[1] = small; t[2] = ind;
        break;
    case GFP_OP_AVG_POOL2D:
        big = in[0]; small = out[0];
        t[0] = small; t[1] = big; t[2] = NULL;
        break;
    default:
        big = out[0]; small = in[0];
        t[0] = big; t[1] = small; t[2] = NULL;
        break;
    }
    if ((st = rank4(name, big, "the input-shaped tensor")) != GFP_OK ||
        (st = rank4(name, small, "the output-shaped tensor")) != GFP_OK ||
        (ind && (st = rank4(name, ind, "indices")) != GFP_OK))
        return st;
    const gfp_tensor *fl[2] = {big, small};
    if ((st = float_alike(name, fl, 2)) != GFP_OK) return st;
    if (ind && (ind->dtype != GFP_I64 || !vkp_same_shape(ind, small)))
        return pk_fail(GFP_ERR_INVALID, "%s: indices must be i64 with the output's sizes", name);
    int64_t geo[16] = {big->sizes[0], big->sizes[1], big->sizes[2], big->sizes[3],
                       small->sizes[2], small->sizes[3], 1, 1, 1, 1, 0, 0, 1, 1, 0, 0};
    if (small->sizes[0] != big->sizes[0] || small->sizes[1] != big->sizes[1])
        return pk_fail(GFP_ERR_INVALID, "%s: N and C of input and output differ", name);
    /* Max pool's backward takes no parameters (the indices say where each
     * gradient goes), so each grad_x element scans the whole output plane for
     * the indices naming it: right for any indices. On large planes that
     * costs too much; when the core passes the forward's parameters anyway
     * and they fit the shapes, only the windows that can hold the element
     * are scanned, which is right for indices of the forward op (each lies
     * in its own window: how the core calls it). */
    bool window_known = op != GFP_OP_MAX_POOL2D_BACKWARD;
    bool small_plane = geo[4] * geo[5] <= 4096;
    if (!window_known && params && !small_plane) {
        const gfp_pool2d_params *pp = params;
        window_known = pp->struct_size >= GFP_POOL2D_PARAMS_SIZE_V1_0;
        for (int a = 0; a < 2 && window_known; a++)
            window_known = pp->kernel[a] >= 1 && pp->stride[a] >= 1 && pp->padding[a] >= 0 &&
                           pp->padding[a] <= pp->kernel[a] / 2 && pp->dilation[a] >= 1;
        if (window_known)
            window_known =
                pk_pool2d_out_size(geo[2], pp->kernel[0], pp->stride[0], pp->padding[0],
                                   pp->dilation[0], pp->ceil_mode) == small->sizes[2] &&
                pk_pool2d_out_size(geo[3], pp->kernel[1], pp->stride[1], pp->padding[1],
                                   pp->dilation[1], pp->ceil_mode) == small->sizes[3];
    }
    if (!window_known && geo[4] * geo[5] > (int64_t)d->loop_budget)
        return pk_fail(GFP_ERR_UNSUPPORTED,
                        "%s: without the forward's parameters every element scans the %lldx%lld "
                        "output plane, more loop iterations than this device runs in one "
                        "invocation (%u); pass the pooling parameters",
                        name, (long long)geo[4], (long long)geo[5], (unsigned)d->loop_budget);
    if (window_known) {
        pk_pool2d_geom g; /* the kit's checks of params and shapes */
        if ((st = pk_check_pool2d(op, params, big, "the input-shaped tensor", small,
                                  "the output-shaped tensor", &g)) != GFP_OK)
            return st;
        int64_t rest[10] = {g.kh, g.kw, g.sh, g.sw, g.ph, g.pw, g.dh, g.dw, g.ceil_mode,
                            g.include_pad};
        for (int i = 0; i < 10; i++) geo[6 + i] = rest[i];
    }
    vkp_words p = {.n = 0};
    vkp_put(&p, 0);
    for (int i = 0; i < 16; i++) vkp_put(&p, (uint32_t)geo[i]);
    for (int i = 0; i < 3; i++) {
        if (t[i]) put4(&p, t[i]);
        else for (int k = 0; k < 4; k++) vkp_put(&p, 0);
    }
    for (int i = 0; i < 3; i++) vkp_put(&p, t[i] ? vkp_elem_offset(t[i]) : 0);
    vkp_put(&p, window_known ? 1u : 0u);
    /* An invocation per segment of a row (outputs forward, inputs backward),
     * as long as the loop budget allows with the window loops inside. */
    bool fwd = op == GFP_OP_MAX_POOL2D || op == GFP_OP_AVG_POOL2D;
    int64_t rows = geo[0] * geo[1] * (fwd ? geo[4] : geo[2]), q = fwd ? geo[5] : geo[3];
    uint64_t per_el = window_known ? (uint64_t)(geo[6] * geo[12] / geo[8] + 2) *
                                         (uint64_t)(geo[7] * geo[13] / geo[9] + 2)
                                   : (uint64_t)(geo[4] * geo[5]);
    if (fwd) per_el = (uint64_t)(geo[6] * geo[7]);
    uint64_t seg = d->loop_budget > 128 ? (d->loop_budget - 128) / (2 * per_el + 2) : 1;
    if (seg < 1) seg = 1;
    if (seg > (uint64_t)q) seg = (uint64_t)(q > 0 ? q : 1);
    uint64_t segs = ((uint64_t)q + seg - 1) / seg;
    vkp_put(&p, (uint32_t)seg);
    vkp_put(&p, (uint32_t)(segs ? segs : 1));
    /* Max pool's backward by planes (an invocation zeroes its plane of
     * grad_x and adds each grad_y element where its index points) when a
     * plane fits the loop budget: right for any indices, and no scan of the
     * output plane per input element (64x16 planes of 28x28 <- 14x14 took
     * 8.2 s scanning on lavapipe under load). */
    uint64_t plane_loops = (uint64_t)(geo[2] * geo[3] + geo[2] + geo[4] * geo[5] + geo[4]);
    bool planes = op == GFP_OP_MAX_POOL2D_BACKWARD && plane_loops * 2 + 64 <= d->loop_budget;
    vkp_put(&p, planes ? 1u : 0u);
    if (planes) return run(d, VKP_SH_POOL, op, big->dtype, &p, t, 3, geo[0] * geo[1]);
    return run(d, VKP_SH_POOL, op, big->dtype, &p, t, 3, rows * (int64_t)segs);
}

gfp_status vkp_conv_launch(vkp_device *d, uint32_t op, const gfp_tensor *const *in,
                           uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                           const void *params) {
    if (!in || !out) return pk_fail(GFP_ERR_INVALID, "%s: the tensor arrays are NULL", pk_op_name(op));
    return is_conv(op) ? conv_launch(d, op, in, n_in, out, n_out, params)
                       : pool_launch(d, op, in, n_in, out, n_out, params);
}
