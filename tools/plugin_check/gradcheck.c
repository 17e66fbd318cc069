/* SPDX-License-Identifier: BSD-3-Clause */
/* gradcheck.c — the backward kernels against their forward ops, through the
 * plugin alone.
 *
 * The checker speaks the ABI, not libgraft, so it cannot run graft's
 * autograd gradcheck through a plugin. What the ABI does have are four
 * backward kernels, each the adjoint (transpose) of a linear map that a
 * forward kernel computes:
 *   <conv2d(x, w), g>   = <x, conv2d_backward_input(g, w)>
 *                       = <w, conv2d_backward_weight(g, x)>
 *   <avg_pool2d(x), g>  = <x, avg_pool2d_backward(g)>
 *   <max_pool2d(x), g>  = <x, max_pool2d_backward(g, indices of max_pool2d(x))>
 * Both sides are computed with the plugin's own kernels, for random x, w and
 * g. The identity is what a numerical gradient check of these ops verifies,
 * for every direction at once; it holds up to rounding. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "pc.h"

typedef struct adj {
    const char *name;
    uint32_t fwd, bwd;
    int64_t x[4], w[4];
    int groups, stride[2], pad[2], dil[2]; /* conv */
    int k[2], s[2], p[2], d[2], ceil_mode, include_pad; /* pool */
} adj;

static const adj cases[] = {
    {"conv2d / backward_input", GFP_OP_CONV2D, GFP_OP_CONV2D_BACKWARD_INPUT, {2, 4, 9, 9},
     {6, 2, 3, 3}, 2, {2, 1}, {1, 2}, {1, 2}, {0}, {0}, {0}, {0}, 0, 0},
    {"conv2d / backward_weight", GFP_OP_CONV2D, GFP_OP_CONV2D_BACKWARD_WEIGHT, {2, 4, 9, 9},
     {6, 2, 3, 3}, 2, {2, 1}, {1, 2}, {1, 2}, {0}, {0}, {0}, {0}, 0, 0},
    {"avg_pool2d / backward", GFP_OP_AVG_POOL2D, GFP_OP_AVG_POOL2D_BACKWARD, {2, 3, 9, 10},
     {0}, 0, {0}, {0}, {0}, {3, 2}, {2, 1}, {1, 1}, {1, 1}, 1, 0},
    {"max_pool2d / backward", GFP_OP_MAX_POOL2D, GFP_OP_MAX_POOL2D_BACKWARD, {2, 3, 9, 10},
     {0}, 0, {0}, {0}, {0}, {3, 2}, {2, 1}, {1, 1}, {2, 1}, 1, 0},
};

static bool declared(pc_ctx *ctx, uint32_t op, uint32_t n_in, const int32_t *in, uint32_t n_out,
                     const int32_t *out) {
    gfp_op_query q;
    memset(&q, 0, sizeof q);
    q.struct_size = sizeof q;
    q.op = op;
    q.layout = GFP_LAYOUT_CONTIGUOUS;
    q.n_inputs = n_in;
    q.n_outputs = n_out;
    memcpy(q.input_dtypes, in, n_in * sizeof *in);
    memcpy(q.output_dtypes, out, n_out * sizeof *out);
    uint32_t s = GFP_SUPPORT_NONE;
    return pc_query(ctx->dev, &q, &s) == GFP_OK && s != GFP_SUPPORT_NONE;
}

static double dot(const pc_array *a, const pc_array *b, double *scale) {
    double s = 0, aa = 0, bb = 0;
    for (int64_t i = 0; i < a->numel; i++) {
        double x = pc_load(a->data, a->dtype, i), y = pc_load(b->data, b->dtype, i);
        s += x * y;
        aa += x * x;
        bb += y * y;
    }
    *scale = sqrt(aa * bb); /* |<a, b>| <= |a| |b| */
    return s;
}

static void one(pc_ctx *ctx, const adj *c, int32_t dt) {
    bool conv = c->fwd == GFP_OP_CONV2D;
    bool maxp = c->fwd == GFP_OP_MAX_POOL2D;
    int32_t i64 = GFP_I64, none = -1;
    int32_t fin[3] = {dt, dt, none}, fout[2] = {dt, i64};
    int32_t bin[2] = {dt, maxp ? i64 : dt};
    uint32_t f_in = conv ? 3 : 1, f_out = maxp ? 2 : 1, b_in = conv || maxp ? 2 : 1;
    bool bias_absent = true;
    if (conv && !declared(ctx, c->fwd, 3, fin, 1, fout)) {
        fin[2] = dt; /* only the form with a bias: give it zeros */
        bias_absent = false;
    }
    char what[64];
    snprintf(what, sizeof what, "%s %s", c->name, pc_dtype_name(dt));
    if (!declared(ctx, c->fwd, f_in, fin, f_out, fout) ||
        !declared(ctx, c->bwd, b_in, bin, 1, &dt)) {
        pc_report_check(ctx->device_index, "gradcheck", what, PC_UNSUPPORTED,
                        "the forward or the backward kernel is not declared for %s",
                        pc_dtype_name(dt));
        return;
    }
    pc_progress("gradcheck %s", what);
    pc_params prm;
    memset(&prm, 0, sizeof prm);
    int64_t y[4] = {c->x[0], conv ? c->w[0] : c->x[1], 0, 0};
    if (conv) {
        prm.conv.struct_size = sizeof prm.conv;
        prm.conv.groups = c->groups;
        for (int a = 0; a < 2; a++) {
            prm.conv.stride[a] = c->stride[a];
            prm.conv.padding[a] = c->pad[a];
            prm.conv.dilation[a] = c->dil[a];
            y[2 + a] = (c->x[2 + a] + 2 * c->pad[a] - c->dil[a] * (c->w[2 + a] - 1) - 1) / c->stride[a] + 1;
        }
    } else {
        prm.pool.struct_size = sizeof prm.pool;
        for (int a = 0; a < 2; a++) {
            prm.pool.kernel[a] = c->k[a];
            prm.pool.stride[a] = c->s[a];
            prm.pool.padding[a] = c->p[a];
            prm.pool.dilation[a] = c->d[a];
            /* ceil mode, as cases_nn.c computes it */
            int64_t in = c->x[2 + a], num = in + 2 * c->p[a] - (int64_t)c->d[a] * (c->k[a] - 1) - 1 +
                                           (c->ceil_mode ? c->s[a] - 1 : 0);
            int64_t out = num / c->s[a] + 1;
            if (c->ceil_mode && (out - 1) * c->s[a] >= in + c->p[a]) out--;
            y[2 + a] = out;
        }
        prm.pool.ceil_mode = (uint32_t)c->ceil_mode;
        prm.pool.count_include_pad = (uint32_t)c->include_pad;
    }
    pc_array x, w, bias, g, yv[2], back;
    memset(&x, 0, sizeof x);
    memset(&w, 0, sizeof w);
    memset(&bias, 0, sizeof bias);
    memset(&g, 0, sizeof g);
    memset(yv, 0, sizeof yv);
    memset(&back, 0, sizeof back);
    bool ok = pc_array_init(&x, dt, 4, c->x) && pc_array_init(&g, dt, 4, y) &&
              pc_array_init(&yv[0], dt, 4, y) && (!maxp || pc_array_init(&yv[1], i64, 4, y)) &&
              (!conv || (pc_array_init(&w, dt, 4, c->w) && pc_array_init(&bias, dt, 1, c->w)));
    char why[512] = "the checker ran out of host memory";
    gfp_status st = GFP_ERR_OUT_OF_MEMORY;
    double lhs = 0, rhs = 0, scale = 0, s2 = 0;
    if (ok) {
        pc_array_fill(&x, PC_GEN_UNIFORM, -1, 1, pc_hash(pc_opt.seed, 1));
        pc_array_fill(&g, PC_GEN_UNIFORM, -1, 1, pc_hash(pc_opt.seed, 2));
        if (conv) pc_array_fill(&w, PC_GEN_UNIFORM, -1, 1, pc_hash(pc_opt.seed, 3));
        pc_array fwd_in[3] = {x, w, bias};
        bool absent[3] = {false, false, bias_absent};
        st = pc_run_simple(ctx->dev, c->fwd, fwd_in, absent, f_in, yv, f_out,
                           &prm, why, sizeof why);
    }
    const pc_array *other = &x; /* the argument the backward kernel is the adjoint for */
    if (st == GFP_OK) {
        lhs = dot(&yv[0], &g, &scale);
        pc_array bw_in[2] = {g, c->bwd == GFP_OP_CONV2D_BACKWARD_INPUT ? w : maxp ? yv[1] : x};
        const int64_t *bshape = c->bwd == GFP_OP_CONV2D_BACKWARD_WEIGHT ? c->w : c->x;
        if (c->bwd == GFP_OP_CONV2D_BACKWARD_WEIGHT) other = &w;
        if (!pc_array_init(&back, dt, 4, bshape))
            st = GFP_ERR_OUT_OF_MEMORY;
        else
            st = pc_run_simple(ctx->dev, c->bwd, bw_in, NULL, b_in, &back, 1, &prm, why,
                               sizeof why);
    }
    if (st == GFP_OK) rhs = dot(other, &back, &s2);
    double tol = dt == GFP_F64 ? 1e-12 : 1e-5;
    double err = fabs(lhs - rhs), bound = tol * (scale > s2 ? scale : s2) + 1e-300;
    if (st == GFP_ERR_UNSUPPORTED) /* declared (or query_op NULL), refused by launch */
        pc_report_check(ctx->device_index, "gradcheck", what, PC_UNSUPPORTED, "%s", why);
    else if (st != GFP_OK)
        pc_report_check(ctx->device_index, "gradcheck", what, PC_FAIL, "%s", why);
    else
        pc_report_check(ctx->device_index, "gradcheck", what, err <= bound ? PC_PASS : PC_FAIL,
                        "adjoint identity: <forward(x), g> = %.12g, <x, backward(g)> = %.12g, "
                        "difference %.3g (limit %.3g)",
                        lhs, rhs, err, bound);
    pc_array_free(&x);
    pc_array_free(&w);
    pc_array_free(&bias);
    pc_array_free(&g);
    pc_array_free(&yv[0]);
    pc_array_free(&yv[1]);
    pc_array_free(&back);
}

void pc_check_gradients(pc_ctx *ctx) {
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (!pc_op_selected(pc_op_name(cases[i].fwd)) && !pc_op_selected(pc_op_name(cases[i].bwd)))
            continue;
        for (int32_t dt = GFP_F32; dt <= GFP_F64; dt++)
            if (ctx->dev->props.dtypes & GFP_DTYPE_BIT(dt)) one(ctx, &cases[i], dt);
    }
}
