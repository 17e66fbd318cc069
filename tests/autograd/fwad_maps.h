/* SPDX-License-Identifier: BSD-3-Clause */
/* fwad_maps.h — the small maps the batched Jacobian tests differentiate
 * (test_fwad_batch.c: gf_jacfwd; test_fwad_jacrev.c: gf_jacrev and the
 * chunked forms), in f64: one or more per op family, each marked with
 * whether it batches forward (jacfwd) and backward (jacrev). */
#ifndef GRAFT_TESTS_FWAD_MAPS_H
#define GRAFT_TESTS_FWAD_MAPS_H

#include <graft.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_rules_util.h"

static uint64_t g_rng = 0x2545F4914F6CDD1Dull;
static inline gf_tensor *rnd(const int64_t *sizes, int rank) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= sizes[i];
    double v[256];
    for (int64_t i = 0; i < n; i++) {
        g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
        v[i] = (double)(g_rng >> 11) / 9007199254740992.0 * 2 - 1;
    }
    return gf_from_data(v, sizes, rank, GF_F64, NULL);
}

#define KEEP1(e)                          \
    do {                                  \
        out[0] = gf_scope_keep(e);        \
        gf_scope_end();                   \
        return out[0] ? GF_OK : gf_last_status(); \
    } while (0)

/* ---- the maps: each reads in[0..n) and writes out[0] */
static gf_status m_elementwise(gf_tensor *const *in, int n, gf_tensor **out, int no, void *u) {
    (void)n, (void)no, (void)u;
    gf_scope_begin();
    /* a [3] against b [2, 3]: broadcasting both ways */
    gf_tensor *a = in[0], *b = in[1];
    gf_tensor *y = gf_add(gf_mul(gf_sin(a), b), gf_div(gf_exp(b), gf_add_scalar(gf_square(a), 2)));
    y = gf_sub(gf_pow(gf_sigmoid(y), gf_add_scalar(gf_abs(b), 1)), gf_tanh(a));
    y = gf_add(gf_maximum(y, b), gf_where(gf_gt_scalar(b, 0), gf_relu(a), gf_log1p(gf_square(b))));
    KEEP1(gf_clamp(y, -0.7, 5.0));
}

static gf_status m_reduce(gf_tensor *const *in, int n, gf_tensor **out, int no, void *u) {
    (void)n, (void)no, (void)u;
    gf_scope_begin();
    gf_tensor *x = in[0]; /* [2, 3, 2] */
    gf_tensor *s = gf_sum(x, (const int[]){1}, 1, false);
    gf_tensor *m = gf_mean(gf_square(x), (const int[]){0, 2}, 2, true);
    gf_tensor *a = gf_amax(x, (const int[]){1}, 1, false);
    gf_tensor *v = gf_var(x, (const int[]){1}, 1, 1.0, false);
    gf_tensor *vals = NULL, *idx = NULL;
    gf_max_dim(x, 1, false, &vals, &idx);
    gf_tensor *y = gf_add(gf_add(s, a), gf_add(v, vals));
    y = gf_add(gf_mul(y, gf_sum(m, NULL, 0, false)), gf_logsumexp(x, (const int[]){1}, 1, false));
    KEEP1(y);
}

static gf_status m_softmax(gf_tensor *const *in, int n, gf_tensor **out, int no, void *u) {
    (void)n, (void)no, (void)u;
    gf_scope_begin();
    gf_tensor *x = in[0]; /* [2, 4] */
    KEEP1(gf_add(gf_softmax(x, 1), gf_mul(gf_log_softmax(x, 0), gf_softmax(x, -1))));
}

static gf_status m_views(gf_tensor *const *in, int n, gf_tensor **out, int no, void *u) {
    (void)n, (void)no, (void)u;
    gf_scope_begin();
    gf_tensor *x = in[0], *w = in[1]; /* [2, 3, 4], [4] */
    gf_tensor *t = gf_transpose(x, 0, 2);                       /* [4, 3, 2] */
    gf_tensor *p = gf_permute(x, (const int[]){1, 2, 0}, 3);    /* [3, 4, 2] */
    gf_tensor *r = gf_reshape(gf_contiguous(p), SZ(4, 3, 2), 3);
    gf_tensor *e = gf_expand(gf_reshape(w, SZ(4, 1, 1), 3), SZ(4, 3, 2), 3);
    gf_tensor *y = gf_mul(gf_add(t, r), e);
    gf_tensor *parts[3] = {gf_narrow(y, 0, 1, 2), gf_select(y, 0, 0), gf_slice(y, 0, 0, 4, 2)};
    parts[1] = gf_unsqueeze(parts[1], 0);
    gf_tensor *c = gf_cat(parts, 3, 0); /* [5, 3, 2] */
    gf_tensor *d = gf_diagonal(c, 0, 0, 1);
    KEEP1(gf_add(gf_sum(c, (const int[]){2}, 1, false), gf_sum(d, NULL, 0, false)));
}

static gf_status m_matmul(gf_tensor *const *in, int n, gf_tensor **out, int no, void *u) {
    (void)n, (void)no, (void)u;
    gf_scope_begin();
    gf_tensor *v = in[0], *a = in[1], *b = in[2]; /* [3], [2, 3], [4, 3, 2] */
    gf_tensor *s = gf_matmul(v, v);                 /* dot */
    gf_tensor *av = gf_matmul(a, v);                /* [2] */
    gf_tensor *va = gf_matmul(av, a);               /* [3] */
    gf_tensor *ab = gf_matmul(a, b);                /* [4, 2, 2] */
    gf_tensor *bv = gf_matmul(va, b);               /* [4, 2] */
    gf_tensor *ba = gf_matmul(b, a);                /* [4, 3, 3] */
    gf_tensor *y = gf_add(gf_sum(ab, (const int[]){2}, 1, false), gf_mul_scalar(bv, 0.5));
    y = gf_add(gf_mul(y, s), gf_sum(gf_matmul(ba, v), (const int[]){1}, 1, true));
    KEEP1(y); /* [4, 2] */
}

static gf_status m_mlp(gf_tensor *const *in, int n, gf_tensor **out, int no, void *u) {
    (void)n, (void)no, (void)u;
    gf_scope_begin();
    /* x [2, 4], W1 [5, 4], b1 [5], W2 [3, 5]; layer norm, gelu, cross entropy */
    gf_tensor *h = gf_gelu(gf_linear(in[0], in[1], in[2]), false);
    h = gf_layer_norm(h, 1, NULL, NULL, 1e-5, NULL, NULL);
    gf_tensor *logits = gf_linear(h, in[3], NULL);
    gf_tensor *target = gf_from_data((const int64_t[]){2, 0}, SZ(2), 1, GF_I64, NULL);
    gf_tensor *ce = gf_cross_entropy(logits, target, NULL, GF_REDUCTION_MEAN, -100, 0.1);
    gf_tensor *mse = gf_mse_loss(logits, gf_zeros_like(logits), GF_REDUCTION_SUM);
    KEEP1(gf_add(gf_reshape(ce, SZ(1), 1), gf_reshape(mse, SZ(1), 1)));
}

static gf_status m_norm(gf_tensor *const *in, int n, gf_tensor **out, int no, void *u) {
    (void)n, (void)no, (void)u;
    gf_scope_begin();
    /* x [2, 3, 4], w [3, 4], b [3, 4] */
    KEEP1(gf_layer_norm(in[0], 2, in[1], in[2], 1e-5, NULL, NULL));
}

static gf_status m_bnorm(gf_tensor *const *in, int n, gf_tensor **out, int no, void *u) {
    (void)n, (void)no, (void)u;
    gf_scope_begin();
    /* x [3, 2, 2, 2], w [2], b [2], training statistics */
    gf_tensor *y = gf_batch_norm(in[0], NULL, NULL, in[1], in[2], true, 0.1, 1e-5, NULL, NULL);
    KEEP1(gf_mul(y, gf_prod(in[0], (const int[]){0}, 1, false)));
}

static gf_status m_conv(gf_tensor *const *in, int n, gf_tensor **out, int no, void *u) {
    (void)n, (void)no, (void)u;
    gf_scope_begin();
    /* x [2, 2, 4, 4], w [3, 2, 2, 2], b [3]; stride 2, padding 1 */
    gf_conv2d_opts o = {.stride = {2, 2}, .padding = {1, 1}};
    gf_tensor *y = gf_conv2d(in[0], in[1], in[2], &o);
    KEEP1(gf_tanh(gf_sum(y, (const int[]){3}, 1, false)));
}

/* max_pool2d of a 4-D input, its tangent gathered at the argmax */
static gf_status m_pool(gf_tensor *const *in, int n, gf_tensor **out, int no, void *u) {
    (void)n, (void)no, (void)u;
    gf_scope_begin();
    gf_pool2d_opts o = {.kernel = {2, 2}};
    gf_tensor *y = gf_max_pool2d(gf_tanh(in[0]), &o, NULL); /* [1, 2, 2, 2] */
    KEEP1(gf_mul(y, gf_sum(in[0], NULL, 0, false)));
}

/* an in-place write into a view of a fresh tensor (the fresh tensor gets
 * zero batched tangents laid out like it, the view its region of them;
 * the backward is a scatter into the region) */
static gf_status m_inplace(gf_tensor *const *in, int n, gf_tensor **out, int no, void *u) {
    (void)n, (void)no, (void)u;
    gf_scope_begin();
    gf_tensor *z = gf_zeros(SZ(2, 3), 2, GF_F64, NULL);
    gf_tensor *row = gf_select(z, 0, 1);
    if (gf_add_(row, gf_exp(in[0])) != GF_OK) {
        gf_scope_end();
        return gf_last_status();
    }
    KEEP1(gf_mul(z, in[0]));
}

/* avg_pool2d (stride, padding) of a 4-D input and max_pool2d (stride 1)
 * of a 3-D one */
static gf_status m_pools(gf_tensor *const *in, int n, gf_tensor **out, int no, void *u) {
    (void)n, (void)no, (void)u;
    gf_scope_begin();
    gf_tensor *x = in[0]; /* [2, 2, 5, 5] */
    gf_pool2d_opts a = {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}};
    gf_pool2d_opts m = {.kernel = {2, 2}, .stride = {1, 1}};
    gf_tensor *ya = gf_avg_pool2d(gf_square(x), &a);                    /* [2, 2, 3, 3] */
    gf_tensor *ym = gf_max_pool2d(gf_sin(gf_select(x, 0, 1)), &m, NULL); /* [2, 4, 4] */
    gf_tensor *s = gf_sum(ym, (const int[]){0}, 1, false);
    KEEP1(gf_add(gf_sum(ya, (const int[]){0, 1}, 2, false),
                 gf_narrow(gf_narrow(s, 0, 0, 3), 1, 1, 3))); /* [3, 3] */
}

/* a grouped convolution: x [1, 4, 4, 4], w [4, 2, 3, 3], b [4], 2 groups */
static gf_status m_conv_group(gf_tensor *const *in, int n, gf_tensor **out, int no, void *u) {
    (void)n, (void)no, (void)u;
    gf_scope_begin();
    gf_conv2d_opts o = {.padding = {1, 1}, .groups = 2};
    gf_tensor *y = gf_conv2d(in[0], in[1], in[2], &o);
    KEEP1(gf_tanh(gf_sum(y, (const int[]){0, 3}, 2, false))); /* [4, 4] */
}

static gf_status loss_conv(gf_tensor *const *in, int n, gf_tensor **out, int no, void *u) {
    (void)n, (void)no, (void)u;
    gf_scope_begin();
    /* x [1, 2, 4, 4], w [3, 2, 2, 2]; padding 1 */
    gf_conv2d_opts o = {.padding = {1, 1}};
    KEEP1(gf_sum(gf_square(gf_tanh(gf_conv2d(in[0], in[1], NULL, &o))), NULL, 0, false));
}

static gf_status loss_pool(gf_tensor *const *in, int n, gf_tensor **out, int no, void *u) {
    (void)n, (void)no, (void)u;
    gf_scope_begin();
    /* x [1, 2, 4, 4] */
    gf_pool2d_opts m = {.kernel = {2, 2}}, a = {.kernel = {2, 2}, .stride = {1, 1}};
    gf_tensor *p = gf_max_pool2d(gf_tanh(in[0]), &m, NULL), *q = gf_avg_pool2d(in[0], &a);
    KEEP1(gf_add(gf_sum(gf_square(p), NULL, 0, false), gf_sum(gf_exp(q), NULL, 0, false)));
}

/* The gradient of f, with history (create_graph): its Jacobian goes back
 * through the backward kernels (double backward), its jacfwd carries
 * tangents forward through them. */
static gf_status grad_of(gf_func_fn f, gf_tensor *const *in, int n, gf_tensor **out) {
    gf_tensor *g[2] = {NULL, NULL};
    gf_scope_begin();
    gf_status s = gf_vjp(f, in, n, NULL, 1, NULL, true, NULL, g);
    for (int i = 0; i < n; i++) out[i] = s == GF_OK ? gf_scope_keep(g[i]) : NULL;
    gf_scope_end();
    return s;
}

static gf_status m_conv_grad(gf_tensor *const *in, int n, gf_tensor **out, int no, void *u) {
    (void)no, (void)u;
    return grad_of(loss_conv, in, n, out);
}

static gf_status m_pool_grad(gf_tensor *const *in, int n, gf_tensor **out, int no, void *u) {
    (void)no, (void)u;
    return grad_of(loss_pool, in, n, out);
}

/* the FFT family on a real x [2, 6]: rfft and its magnitude, irfft of an
 * rfft, the real part of a 2-D fft of complex(x, sin x) */
static gf_status m_fft(gf_tensor *const *in, int n, gf_tensor **out, int no, void *u) {
    (void)n, (void)no, (void)u;
    gf_scope_begin();
    gf_tensor *x = in[0];
    gf_tensor *a = gf_abs(gf_rfft(x, -1, -1, GF_FFT_NORM_BACKWARD));                   /* [2, 4] */
    gf_tensor *b = gf_irfft(gf_rfft(gf_tanh(x), -1, -1, GF_FFT_NORM_ORTHO), 6, -1,
                            GF_FFT_NORM_ORTHO); /* [2, 6] */
    gf_tensor *c = gf_real(gf_fftn(gf_complex(x, gf_sin(x)), NULL, 0, (const int[]){0, 1}, 2,
                                   GF_FFT_NORM_FORWARD));                              /* [2, 6] */
    gf_tensor *parts[2] = {a, gf_mul(b, c)};
    KEEP1(gf_cat(parts, 2, 1)); /* [2, 10] */
}

/* A custom function y = 3 x whose backward writes its gradient in place
 * into a fresh tensor (which gets zero batched tangents to write into) and
 * whose jvp callback sees unbatched tangents only (jacfwd's batched pass
 * calls it once per basis vector). */
static gf_status triple_fwd(gf_function_ctx *ctx, gf_tensor *const *in, int n, gf_tensor **out,
                            int no, void *user);
static gf_status triple_jvp(gf_function_ctx *ctx, gf_tensor *const *in, gf_tensor *const *ti,
                            int n, gf_tensor *const *out, gf_tensor **to, int no, void *user) {
    (void)ctx, (void)in, (void)n, (void)out, (void)no, (void)user;
    to[0] = ti[0] ? gf_mul_scalar(ti[0], 3.0) : NULL;
    return !ti[0] || to[0] ? GF_OK : gf_last_status();
}
static gf_status triple_fwd(gf_function_ctx *ctx, gf_tensor *const *in, int n, gf_tensor **out,
                            int no, void *user) {
    (void)n, (void)no, (void)user;
    out[0] = gf_mul_scalar(in[0], 3.0);
    if (!out[0]) return gf_last_status();
    return gf_ctx_set_jvp(ctx, triple_jvp, NULL);
}
static gf_status triple_bwd(gf_function_ctx *ctx, gf_tensor *const *g, int no, gf_tensor **gi,
                            int n, void *user) {
    (void)ctx, (void)no, (void)n, (void)user;
    gf_tensor *z = gf_zeros_like(g[0]), *t = z ? gf_mul_scalar(g[0], 3.0) : NULL;
    gf_status s = t ? gf_copy_(z, t) : gf_last_status();
    gf_tensor_release(t);
    if (s != GF_OK) {
        gf_tensor_release(z);
        return s;
    }
    gi[0] = z;
    return GF_OK;
}
static gf_status m_custom(gf_tensor *const *in, int n, gf_tensor **out, int no, void *u) {
    (void)n, (void)no, (void)u;
    static const gf_function_def def = {.name = "Triple", .forward = triple_fwd,
                                        .backward = triple_bwd};
    gf_scope_begin();
    gf_tensor *y = NULL;
    gf_status s = gf_function_apply(&def, in, 1, &y, 1);
    if (s != GF_OK) {
        gf_scope_end();
        return s;
    }
    KEEP1(gf_tanh(gf_mul(y, in[0])));
}

/* A custom function that doubles its input in place (marks it dirty): at a
 * batched level it refuses (the loop writes each tangent into the input's
 * own), applied to a fresh intermediate; its backward batches. */
static gf_status double_jvp(gf_function_ctx *ctx, gf_tensor *const *in, gf_tensor *const *ti,
                            int n, gf_tensor *const *out, gf_tensor **to, int no, void *user) {
    (void)ctx, (void)in, (void)n, (void)out, (void)no, (void)user;
    to[0] = ti[0] ? gf_mul_scalar(ti[0], 2.0) : NULL;
    return !ti[0] || to[0] ? GF_OK : gf_last_status();
}
static gf_status double_fwd(gf_function_ctx *ctx, gf_tensor *const *in, int n, gf_tensor **out,
                            int no, void *user) {
    (void)n, (void)no, (void)user;
    gf_status s = gf_mul_scalar_(in[0], 2.0);
    if (s == GF_OK) s = gf_ctx_mark_dirty(ctx, in[0]);
    if (s == GF_OK) s = gf_ctx_set_jvp(ctx, double_jvp, NULL);
    out[0] = s == GF_OK ? gf_tensor_retain(in[0]) : NULL;
    return s;
}
static gf_status double_bwd(gf_function_ctx *ctx, gf_tensor *const *g, int no, gf_tensor **gi,
                            int n, void *user) {
    (void)ctx, (void)no, (void)n, (void)user;
    gi[0] = gf_mul_scalar(g[0], 2.0);
    return gi[0] ? GF_OK : gf_last_status();
}
static gf_status m_custom_inplace(gf_tensor *const *in, int n, gf_tensor **out, int no, void *u) {
    (void)n, (void)no, (void)u;
    static const gf_function_def def = {.name = "DoubleInPlace", .forward = double_fwd,
                                        .backward = double_bwd};
    gf_scope_begin();
    gf_tensor *h = gf_add_scalar(in[0], 1.0), *y = NULL; /* saved by nothing */
    gf_status s = h ? gf_function_apply(&def, &h, 1, &y, 1) : gf_last_status();
    if (s != GF_OK) {
        gf_scope_end();
        return s;
    }
    KEEP1(gf_mul(y, in[0]));
}

/* reductions of 0-d tensors (the tangent passes through) */
static gf_status m_reduce0(gf_tensor *const *in, int n, gf_tensor **out, int no, void *u) {
    (void)n, (void)no, (void)u;
    gf_scope_begin();
    gf_tensor *s = gf_sum(gf_square(in[0]), NULL, 0, false); /* 0-d */
    gf_tensor *a = gf_sum(s, NULL, 0, false), *m = gf_mean(gf_exp(s), NULL, 0, false);
    gf_tensor *p = gf_prod(gf_sin(s), NULL, 0, false), *x = gf_amax(s, NULL, 0, false);
    KEEP1(gf_mul(in[0], gf_add(gf_add(a, m), gf_add(p, x))));
}

/* an input of rank 8: a batched tangent would need a ninth dim (both
 * transforms take the loop) */
static gf_status m_rank8(gf_tensor *const *in, int n, gf_tensor **out, int no, void *u) {
    (void)n, (void)no, (void)u;
    gf_scope_begin();
    KEEP1(gf_sum(gf_mul(gf_tanh(in[0]), in[0]), NULL, 0, false));
}

typedef struct map_case {
    const char *name;
    gf_func_fn f;
    int n_in, n_out;
    int64_t sizes[4][8];
    int rank[4];
    bool fwd_batches; /* every op on its path batches forward (jacfwd) */
    bool rev_batches; /* ... and its backward (jacrev) */
    bool cx;          /* makes complex tensors (c128) on the way */
} map_case;

/* Random inputs of map c's shapes into in (new references). */
static inline void inputs_of(const map_case *c, gf_tensor **in) {
    for (int i = 0; i < c->n_in; i++) in[i] = rnd(c->sizes[i], c->rank[i]);
}

static const map_case cases[] = {
    {"elementwise", m_elementwise, 2, 1, {{3}, {2, 3}}, {1, 2}, true, true, false},
    {"reduce", m_reduce, 1, 1, {{2, 3, 2}}, {3}, true, true, false},
    {"softmax", m_softmax, 1, 1, {{2, 4}}, {2}, true, true, false},
    {"views", m_views, 2, 1, {{2, 3, 4}, {4}}, {3, 1}, true, true, false},
    {"matmul", m_matmul, 3, 1, {{3}, {2, 3}, {4, 3, 2}}, {1, 2, 3}, true, true, false},
    {"mlp", m_mlp, 4, 1, {{2, 4}, {5, 4}, {5}, {3, 5}}, {2, 2, 1, 2}, true, true, false},
    {"layer_norm", m_norm, 3, 1, {{2, 3, 4}, {3, 4}, {3, 4}}, {3, 2, 2}, true, true, false},
    {"batch_norm", m_bnorm, 3, 1, {{3, 2, 2, 2}, {2}, {2}}, {4, 1, 1}, true, true, false},
    {"conv2d", m_conv, 3, 1, {{2, 2, 4, 4}, {3, 2, 2, 2}, {3}}, {4, 4, 1}, true, true, false},
    {"max_pool2d", m_pool, 1, 1, {{1, 2, 4, 4}}, {4}, true, true, false},
    {"in-place into a view", m_inplace, 1, 1, {{3}}, {1}, true, true, false},
    {"avg_pool2d, max_pool2d 3-D", m_pools, 1, 1, {{2, 2, 5, 5}}, {4}, true, true, false},
    {"conv2d grouped", m_conv_group, 3, 1, {{1, 4, 4, 4}, {4, 2, 3, 3}, {4}}, {4, 4, 1}, true,
     true, false},
    {"conv2d gradient", m_conv_grad, 2, 2, {{1, 2, 4, 4}, {3, 2, 2, 2}}, {4, 4}, true, true, false},
    {"pooling gradient", m_pool_grad, 1, 1, {{1, 2, 4, 4}}, {4}, true, true, false},
    {"fft family", m_fft, 1, 1, {{2, 6}}, {2}, true, true, true},
    {"custom function", m_custom, 1, 1, {{2, 3}}, {2}, true, true, false},
    {"custom in-place (mixed)", m_custom_inplace, 1, 1, {{2, 3}}, {2}, false, true, false},
    {"0-d reductions", m_reduce0, 1, 1, {{3}}, {1}, true, true, false},
    {"rank 8 (mixed)", m_rank8, 1, 1, {{2, 1, 1, 1, 1, 1, 1, 2}}, {8}, false, false, false},
};
#define N_MAPS ((int)(sizeof cases / sizeof cases[0]))

/* The case of that name (the tests pick some by name). */
static inline const map_case *map_named(const char *name) {
    for (int k = 0; k < N_MAPS; k++)
        if (!strcmp(cases[k].name, name)) return &cases[k];
    return NULL;
}

/* Whether the default device stores c128 (the FFT maps need it; where it
 * does not, the runs on the devices that do check them). */
static inline bool device_has_c128(void) {
    gf_device_info info;
    return gf_device_get_info(gf_device_default(), &info) == GF_OK &&
           (info.dtypes & (1u << GF_C128));
}


static inline double max_diff(const gf_tensor *a, const gf_tensor *b) {
    if (!a || !b || gf_tensor_rank(a) != gf_tensor_rank(b)) return INFINITY;
    for (int i = 0; i < gf_tensor_rank(a); i++)
        if (gf_tensor_size(a, i) != gf_tensor_size(b, i)) return INFINITY;
    gf_tensor *d = gf_amax(gf_abs(gf_sub(a, b)), NULL, 0, false);
    double v = INFINITY;
    if (d) ag_read(d, &v, 1);
    return v;
}


#endif
