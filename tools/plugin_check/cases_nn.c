/* SPDX-License-Identifier: BSD-3-Clause */
/* cases_nn.c — the cases of MATMUL, the convolution ops and the pooling ops.
 *
 * Matmul: plain, batched (the broadcast layout gives stride-0 batch dims),
 * rank 4, odd sizes, a row times a column, an empty inner dim (the result is
 * zeros) and, for f32, a product with 2^20 outputs. Convolutions: groups,
 * depthwise, strides, padding, dilation, 1x1 kernels, with and without bias.
 * Pooling: overlapping windows, padding, dilation, ceil mode, both divisors
 * of average pooling, ties (the first maximum wins) and NaN (it wins). The
 * backward kernels get indices from the oracle's own forward max pool. */
#include <stdio.h>
#include <string.h>

#include "pc.h"

static bool f32_data(const pc_combo *cb) { return cb->in[0] == GFP_F32; }

/* ------------------------------------------------------------ matmul */
static int combos_same_2(const pc_op *op, uint32_t dtypes, pc_combo *out, int max) {
    int n = pc_combos_same(dtypes, 2, 1, out, max);
    if (op->id == GFP_OP_MATMUL) n += pc_combos_complex(dtypes, 2, 1, -1, out + n, max - n);
    return n;
}

static bool build_matmul(const pc_op *op, const pc_combo *cb, int k, bool quick, pc_case *c) {
    (void)op;
    static const struct {
        int rank;
        int64_t batch[2];
        int64_t m, kk, n;
        const char *what;
    } cases[] = {
        {2, {0}, 5, 7, 3, NULL},         {3, {3}, 4, 6, 5, "batched"},
        {4, {2, 3}, 4, 5, 2, "batched"}, {2, {0}, 7, 13, 11, "odd"},
        {2, {0}, 1, 64, 1, "row x column"}, {2, {0}, 4, 0, 5, "empty inner dim"},
        {2, {0}, 1024, 16, 1024, "large"},
    };
    int n = (int)(sizeof cases / sizeof cases[0]);
    if (quick || !f32_data(cb)) n--;
    if (k >= n) return false;
    int r = cases[k].rank;
    int64_t a[4], b[4], y[4];
    for (int d = 0; d < r - 2; d++) a[d] = b[d] = y[d] = cases[k].batch[d];
    a[r - 2] = y[r - 2] = cases[k].m;
    a[r - 1] = b[r - 2] = cases[k].kk;
    b[r - 1] = y[r - 1] = cases[k].n;
    bool is_float = pc_is_float(cb->in[0]) || pc_is_complex(cb->in[0]);
    double lim = is_float ? 1 : 10;
    pc_case_init(c, 2, 1);
    pc_arg_set(&c->in[0], cb->in[0], r, a, PC_GEN_UNIFORM, -lim, lim);
    pc_arg_set(&c->in[1], cb->in[1], r, b, PC_GEN_UNIFORM, -lim, lim);
    pc_arg_set(&c->out[0], cb->out[0], r, y, PC_GEN_ZEROS, 0, 0);
    c->out[0].tol = is_float ? PC_TOL_ACCUMULATE : PC_TOL_EXACT;
    c->large = k == 6;
    char as[48], bs[48];
    pc_label(c, "%s @ %s%s%s", pc_shape_text(as, sizeof as, r, a), pc_shape_text(bs, sizeof bs, r, b),
             cases[k].what ? " " : "", cases[k].what ? cases[k].what : "");
    return true;
}

/* ------------------------------------------------------------ convolution */
typedef struct conv_cfg {
    int64_t x[4], w[4];
    int groups, stride[2], pad[2], dil[2];
    const char *what;
} conv_cfg;

static const conv_cfg conv_cfgs[] = {
    {{2, 4, 9, 9}, {6, 2, 3, 3}, 2, {1, 1}, {1, 1}, {1, 1}, "groups 2"},
    {{1, 3, 7, 13}, {4, 3, 3, 5}, 1, {2, 1}, {0, 2}, {1, 2}, "odd, strided, dilated"},
    {{2, 3, 8, 8}, {5, 3, 1, 1}, 1, {1, 1}, {0, 0}, {1, 1}, "1x1"},
    {{1, 4, 6, 6}, {4, 1, 3, 3}, 4, {2, 2}, {1, 1}, {1, 1}, "depthwise"},
    {{1, 4, 512, 512}, {2, 4, 3, 3}, 1, {1, 1}, {1, 1}, {1, 1}, "large"},
};
#define N_CONV (sizeof conv_cfgs / sizeof conv_cfgs[0])

static void conv_out(const conv_cfg *g, int64_t *y) {
    y[0] = g->x[0];
    y[1] = g->w[0];
    for (int a = 0; a < 2; a++)
        y[2 + a] = (g->x[2 + a] + 2 * g->pad[a] - g->dil[a] * (g->w[2 + a] - 1) - 1) / g->stride[a] + 1;
}

static int combos_conv(const pc_op *op, uint32_t dtypes, pc_combo *out, int max) {
    if (op->id != GFP_OP_CONV2D) return pc_combos_same(dtypes, 2, 1, out, max);
    pc_combo tmp[PC_MAX_COMBOS];
    int n = pc_combos_same(dtypes, 3, 1, tmp, PC_MAX_COMBOS), m = 0;
    for (int i = 0; i < n && m + 1 < max; i++) {
        out[m++] = tmp[i];
        out[m] = tmp[i];
        out[m++].in[2] = -1; /* no bias */
    }
    return m;
}

static bool build_conv(const pc_op *op, const pc_combo *cb, int k, bool quick, pc_case *c) {
    int n = (int)N_CONV;
    if (quick || !f32_data(cb)) n--;
    if (k >= n) return false;
    const conv_cfg *g = &conv_cfgs[k];
    int64_t y[4];
    conv_out(g, y);
    int64_t co = g->w[0];
    switch (op->id) {
    case GFP_OP_CONV2D:
        pc_case_init(c, 3, 1);
        pc_arg_set(&c->in[0], cb->in[0], 4, g->x, PC_GEN_UNIFORM, -1, 1);
        pc_arg_set(&c->in[1], cb->in[1], 4, g->w, PC_GEN_UNIFORM, -1, 1);
        pc_arg_set(&c->in[2], cb->in[2], 1, &co, PC_GEN_UNIFORM, -1, 1);
        pc_arg_set(&c->out[0], cb->out[0], 4, y, PC_GEN_ZEROS, 0, 0);
        break;
    case GFP_OP_CONV2D_BACKWARD_INPUT:
        pc_case_init(c, 2, 1);
        pc_arg_set(&c->in[0], cb->in[0], 4, y, PC_GEN_UNIFORM, -1, 1);
        pc_arg_set(&c->in[1], cb->in[1], 4, g->w, PC_GEN_UNIFORM, -1, 1);
        pc_arg_set(&c->out[0], cb->out[0], 4, g->x, PC_GEN_ZEROS, 0, 0);
        break;
    default: /* GFP_OP_CONV2D_BACKWARD_WEIGHT */
        pc_case_init(c, 2, 1);
        pc_arg_set(&c->in[0], cb->in[0], 4, y, PC_GEN_UNIFORM, -1, 1);
        pc_arg_set(&c->in[1], cb->in[1], 4, g->x, PC_GEN_UNIFORM, -1, 1);
        pc_arg_set(&c->out[0], cb->out[0], 4, g->w, PC_GEN_ZEROS, 0, 0);
        break;
    }
    c->out[0].tol = PC_TOL_ACCUMULATE;
    gfp_conv2d_params *p = &c->params.conv;
    p->struct_size = sizeof *p;
    p->groups = g->groups;
    for (int a = 0; a < 2; a++) {
        p->stride[a] = g->stride[a];
        p->padding[a] = g->pad[a];
        p->dilation[a] = g->dil[a];
    }
    c->has_params = true;
    c->large = k == 4;
    char xs[48], ws[48];
    pc_label(c, "x %s w %s stride %d,%d pad %d,%d dil %d,%d groups %d (%s)%s",
             pc_shape_text(xs, sizeof xs, 4, g->x), pc_shape_text(ws, sizeof ws, 4, g->w),
             g->stride[0], g->stride[1], g->pad[0], g->pad[1], g->dil[0], g->dil[1], g->groups,
             g->what, op->id == GFP_OP_CONV2D && cb->in[2] < 0 ? " no bias" : "");
    return true;
}

/* ------------------------------------------------------------ pooling */
typedef struct pool_cfg {
    int64_t x[4];
    int k[2], s[2], p[2], d[2];
    int ceil_mode, include_pad;
    pc_gen gen;
    const char *what;
} pool_cfg;

static const pool_cfg pool_cfgs[] = {
    {{2, 3, 8, 8}, {2, 2}, {2, 2}, {0, 0}, {1, 1}, 0, 1, PC_GEN_UNIFORM, "2x2/2"},
    {{1, 2, 9, 9}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, 0, 1, PC_GEN_UNIFORM, "overlapping, padded"},
    {{1, 2, 9, 9}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, 0, 0, PC_GEN_UNIFORM, "pad not counted"},
    {{1, 2, 10, 11}, {3, 2}, {1, 2}, {1, 1}, {2, 1}, 1, 1, PC_GEN_UNIFORM, "dilated, ceil"},
    {{2, 3, 7, 13}, {3, 2}, {2, 1}, {1, 1}, {1, 1}, 1, 0, PC_GEN_UNIFORM, "odd, ceil"},
    {{1, 2, 6, 6}, {2, 2}, {1, 1}, {0, 0}, {1, 1}, 0, 1, PC_GEN_SMALLINT, "ties"},
    {{1, 2, 6, 8}, {2, 2}, {2, 2}, {0, 0}, {1, 1}, 0, 1, PC_GEN_NONFINITE, "NaN/inf/-0 inputs"},
    {{4, 16, 128, 128}, {2, 2}, {2, 2}, {0, 0}, {1, 1}, 0, 1, PC_GEN_UNIFORM, "large"},
};
#define N_POOL (sizeof pool_cfgs / sizeof pool_cfgs[0])

static int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* PyTorch's rule: in ceil mode the last window must start inside the input
 * or its left padding. */
static int64_t pool_out(int64_t in, int k, int s, int p, int d, int ceil_mode) {
    int64_t out = floor_div(in + 2 * p - (int64_t)d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0), s) + 1;
    if (ceil_mode && (out - 1) * s >= in + p) out--;
    return out;
}

static bool is_max(uint32_t op) { return op == GFP_OP_MAX_POOL2D || op == GFP_OP_MAX_POOL2D_BACKWARD; }

static int combos_pool(const pc_op *op, uint32_t dtypes, pc_combo *out, int max) {
    switch (op->id) {
    case GFP_OP_MAX_POOL2D: {
        int n = pc_combos_same(dtypes, 1, 2, out, max);
        for (int i = 0; i < n; i++) out[i].out[1] = GFP_I64;
        return n;
    }
    case GFP_OP_MAX_POOL2D_BACKWARD: {
        int n = pc_combos_same(dtypes, 2, 1, out, max);
        for (int i = 0; i < n; i++) out[i].in[1] = GFP_I64;
        return n;
    }
    default: return pc_combos_same(dtypes, 1, 1, out, max);
    }
}

/* Indices for MAX_POOL2D_BACKWARD from the oracle's forward pass over a
 * random input, so that they are what a forward kernel produces. */
static bool prepare_max_backward(const pc_case *c, pc_array *in, pc_ctx *ctx) {
    int32_t dt = pc_is_float(c->in[0].dtype) && c->in[0].dtype != GFP_F64 ? GFP_F32 : GFP_F64;
    pc_array x, outs[2];
    if (!pc_array_init(&x, dt, 4, c->out[0].sizes)) return false;
    pc_array_fill(&x, PC_GEN_UNIFORM, -1, 1, pc_hash(pc_opt.seed, 0x9001));
    bool ok = pc_array_init(&outs[0], dt, 4, c->in[0].sizes);
    if (ok && !pc_array_init(&outs[1], GFP_I64, 4, c->in[1].sizes)) {
        pc_array_free(&outs[0]);
        ok = false;
    }
    if (!ok) {
        pc_array_free(&x);
        return false;
    }
    char why[512];
    gfp_status st = pc_run_simple(ctx->oracle, GFP_OP_MAX_POOL2D, &x, NULL, 1, outs, 2,
                                  &c->params.pool, why, sizeof why);
    pc_array_free(&x);
    pc_array_free(&outs[0]);
    if (st != GFP_OK) {
        pc_array_free(&outs[1]);
        pc_report_note("max_pool2d_backward %s: the oracle's max_pool2d failed: %s", c->label, why);
        return false;
    }
    pc_array_free(&in[1]);
    in[1] = outs[1];
    return true;
}

static bool build_pool(const pc_op *op, const pc_combo *cb, int k, bool quick, pc_case *c) {
    uint32_t id = op->id;
    const pool_cfg *g = NULL;
    for (size_t i = 0; i < N_POOL; i++) {
        const pool_cfg *p = &pool_cfgs[i];
        bool ok = true;
        if (!strcmp(p->what, "large") && (quick || !f32_data(cb))) ok = false;
        /* Dilation is max pooling's; ties and NaN matter to the forward max. */
        if (!is_max(id) && p->d[0] * p->d[1] != 1) ok = false;
        if (id != GFP_OP_MAX_POOL2D && (p->gen == PC_GEN_SMALLINT || p->gen == PC_GEN_NONFINITE))
            ok = false;
        if (is_max(id) && !strcmp(p->what, "pad not counted")) ok = false;
        if (!ok) continue;
        if (k-- == 0) {
            g = p;
            break;
        }
    }
    if (!g) return false;
    int64_t y[4] = {g->x[0], g->x[1], 0, 0};
    for (int a = 0; a < 2; a++) y[2 + a] = pool_out(g->x[2 + a], g->k[a], g->s[a], g->p[a], g->d[a], g->ceil_mode);
    int32_t dt = cb->in[0];
    switch (id) {
    case GFP_OP_MAX_POOL2D:
        pc_case_init(c, 1, 2);
        pc_arg_set(&c->in[0], dt, 4, g->x, g->gen, g->gen == PC_GEN_SMALLINT ? -2 : -1,
                   g->gen == PC_GEN_SMALLINT ? 2 : 1);
        pc_arg_set(&c->out[0], cb->out[0], 4, y, PC_GEN_ZEROS, 0, 0);
        pc_arg_set(&c->out[1], GFP_I64, 4, y, PC_GEN_ZEROS, 0, 0);
        break;
    case GFP_OP_MAX_POOL2D_BACKWARD:
        pc_case_init(c, 2, 1);
        pc_arg_set(&c->in[0], dt, 4, y, PC_GEN_UNIFORM, -1, 1);
        pc_arg_set(&c->in[1], GFP_I64, 4, y, PC_GEN_ZEROS, 0, 0);
        pc_arg_set(&c->out[0], cb->out[0], 4, g->x, PC_GEN_ZEROS, 0, 0);
        c->out[0].tol = PC_TOL_ACCUMULATE;
        c->prepare = prepare_max_backward;
        break;
    case GFP_OP_AVG_POOL2D:
        pc_case_init(c, 1, 1);
        pc_arg_set(&c->in[0], dt, 4, g->x, PC_GEN_UNIFORM, -1, 1);
        pc_arg_set(&c->out[0], cb->out[0], 4, y, PC_GEN_ZEROS, 0, 0);
        c->out[0].tol = PC_TOL_ACCUMULATE;
        break;
    default: /* GFP_OP_AVG_POOL2D_BACKWARD */
        pc_case_init(c, 1, 1);
        pc_arg_set(&c->in[0], dt, 4, y, PC_GEN_UNIFORM, -1, 1);
        pc_arg_set(&c->out[0], cb->out[0], 4, g->x, PC_GEN_ZEROS, 0, 0);
        c->out[0].tol = PC_TOL_ACCUMULATE;
        break;
    }
    gfp_pool2d_params *p = &c->params.pool;
    p->struct_size = sizeof *p;
    for (int a = 0; a < 2; a++) {
        p->kernel[a] = g->k[a];
        p->stride[a] = g->s[a];
        p->padding[a] = g->p[a];
        p->dilation[a] = g->d[a];
    }
    p->ceil_mode = (uint32_t)g->ceil_mode;
    p->count_include_pad = (uint32_t)g->include_pad;
    c->has_params = true;
    c->large = !strcmp(g->what, "large");
    char xs[48];
    pc_label(c, "x %s kernel %d,%d stride %d,%d pad %d,%d%s%s (%s)", pc_shape_text(xs, sizeof xs, 4, g->x),
             g->k[0], g->k[1], g->s[0], g->s[1], g->p[0], g->p[1], g->ceil_mode ? " ceil" : "",
             !is_max(id) && !g->include_pad ? " exclude pad" : "", g->what);
    return true;
}

/* ------------------------------------------------------------ the table */
bool pc_cases_nn(const gfp_op_info *row, pc_op *op) {
    op->flags = 0;
    switch (row->family) {
    case GFP_FAMILY_MATMUL:
        op->combos = combos_same_2;
        op->build = build_matmul;
        return true;
    case GFP_FAMILY_CONV:
        op->combos = combos_conv;
        op->build = build_conv;
        return true;
    case GFP_FAMILY_POOL:
        op->combos = combos_pool;
        op->build = build_pool;
        return true;
    default: return false;
    }
}
