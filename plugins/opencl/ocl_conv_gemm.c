/* SPDX-License-Identifier: BSD-3-Clause */
/* ocl_conv_gemm.c — CONV2D and its two gradients as GEMMs, in the form that
 * measured fastest (auto_form below; GRAFT_OPENCL_CONV=direct|gemm|igemm
 * forces one, for tests and measurements):
 *
 * implicit GEMM (CPU devices): kernels/conv.cl's conv2d_igemm, the matmul_vec
 * inner loop with the taps read from x in place: the forward op, and the
 * input gradient at stride 1 and groups 1 (a forward convolution of grad_y).
 *
 * im2col + GEMM through the plugin's own matmul (ocl_matmul.c: graft's
 * kernels, or CLBlast where the plugin uses it), in tiles that fit the
 * device's allocation limit. Per group g, with K = Ci/groups * kh * kw and
 * P = Ho * Wo:
 *   forward       y[n, g]  (cog x P)   = W[g] (cog x K)    @ col[n, g] (K x P)
 *   grad input    dcol[n, g] (K x P)   = W[g]^T (K x cog)  @ gy[n, g] (cog x P),
 *                 then col2im gathers grad_x from dcol
 *   grad weight   part[n, g] (K x cog) = col[n, g] (K x P) @ gt[n, g] (P x cog),
 *                 gt grad_y transposed; conv_wsum adds the images' parts
 *                 into grad_w
 * col holds the input taps (im2col, kernels/conv.cl). A tile is a run of
 * whole images, or of output positions of one image when one image's
 * matrices do not fit; its matrices live in the device's scratch buffer,
 * within GRAFT_OPENCL_CONV_TILE_BYTES (default 64 MiB, at most half the
 * largest allocation). The tiles add up in grad_w, and in grad_x when an
 * image is split. When no tile fits, the direct kernel runs.
 *
 * Operands the matmul takes as they are: the weight when its last three
 * dims merge into one run, the output-shaped tensor when its plane is
 * row-major with unit stride. Others are staged (copied) in scratch memory;
 * a staged output-shaped tensor needs tiles of whole images. The matmul
 * itself then never stages (its operands have unit column strides), so the
 * scratch buffer is the tile's alone. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl_conv.h"

/* GRAFT_OPENCL_CONV=direct|gemm|igemm|auto. */
typedef enum conv_form { FORM_AUTO, FORM_DIRECT, FORM_GEMM, FORM_IGEMM } conv_form;

static conv_form conv_choice(void) {
    const char *v = ocl_getenv("GRAFT_OPENCL_CONV");
    if (v && !strcmp(v, "direct")) return FORM_DIRECT;
    if (v && !strcmp(v, "gemm")) return FORM_GEMM;
    if (v && !strcmp(v, "igemm")) return FORM_IGEMM;
    return FORM_AUTO;
}

#define TILE_DEFAULT (64ull << 20)

static uint64_t tile_budget(const ocl_device *d) {
    uint64_t b = TILE_DEFAULT;
    const char *v = ocl_getenv("GRAFT_OPENCL_CONV_TILE_BYTES");
    if (v && *v) {
        char *end = NULL;
        unsigned long long u = strtoull(v, &end, 10);
        if (end && !*end && u > 0) b = u;
    }
    if (d->max_alloc_bytes && b > d->max_alloc_bytes / 2) b = d->max_alloc_bytes / 2;
    return b;
}

static bool mul_ok(int64_t a, int64_t b, int64_t *r) { return !__builtin_mul_overflow(a, b, r); }

/* The one stride that walks dims [0, n) of (sizes, strides) as a single
 * row-major run, or -1 when they do not form one. Size-1 dims do not count;
 * all of them size 1 gives 1. */
static int64_t run_stride(const int64_t *sizes, const int64_t *strides, int n) {
    int64_t st = -1, span = 1;
    for (int k = n - 1; k >= 0; k--) {
        if (sizes[k] == 1) continue;
        if (st < 0) {
            st = strides[k];
            span = sizes[k];
            continue;
        }
        int64_t want;
        if (!mul_ok(st, span, &want) || strides[k] != want || !mul_ok(span, sizes[k], &span))
            return -1;
    }
    return st < 0 ? 1 : st;
}

static gfp_tensor view(int32_t dt, void *buf, uint64_t byte_off, int rank, const int64_t *sizes,
                       const int64_t *strides) {
    gfp_tensor t;
    memset(&t, 0, sizeof t);
    t.struct_size = (uint32_t)sizeof t;
    t.dtype = dt;
    t.buffer = buf;
    t.offset = byte_off;
    t.rank = rank;
    for (int k = 0; k < rank; k++) {
        t.sizes[k] = sizes[k];
        t.strides[k] = strides[k];
    }
    return t;
}

static gfp_status matmul(ocl_device *d, const gfp_tensor *a, const gfp_tensor *b,
                         const gfp_tensor *y) {
    const gfp_tensor *in[2] = {a, b}, *out[1] = {y};
    return ocl_matmul_launch(d, GFP_OP_MATMUL, in, 2, out, 1, NULL);
}

/* ------------------------------------------------------------ plan */
typedef struct plan {
    int64_t K, P, KK;      /* per-group reduction, positions per image, taps per channel */
    int64_t nb, np;        /* images per tile; positions per tile (P, or fewer with nb 1) */
    bool stage_w;          /* the weight is copied to a contiguous [Co, K] */
    bool stage_y;          /* the output-shaped tensor is staged, whole images at a time */
    uint64_t es;
    /* Byte offsets in the scratch buffer, and its size. */
    uint64_t w_at, col_at, stg_at, part_at, total;
} plan;

static uint64_t align128(uint64_t v) { return (v + 127) / 128 * 128; }

/* Chooses the tiles; false when no tile fits (the direct kernel runs).
 * Per image: col (Ci * kh * kw x P), a staged output-shaped tile or, for the
 * weight gradient, grad_y transposed (Co x P each), and the weight
 * gradient's partial product (Co x K). */
static bool make_plan(const ocl_device *d, uint32_t op, const gfp_tensor *w, const gfp_tensor *y,
                      const conv_geom *g, plan *p) {
    memset(p, 0, sizeof *p);
    p->es = pk_dtype_size(y->dtype);
    bool bw = op == GFP_OP_CONV2D_BACKWARD_WEIGHT;
    int64_t es = (int64_t)p->es, col_pos, stg_pos, wbytes;
    p->KK = g->kh * g->kw;
    if (!mul_ok(g->cig, p->KK, &p->K) || !mul_ok(g->ho, g->wo, &p->P) ||
        !mul_ok(g->ci * p->KK, es, &col_pos) || !mul_ok(g->co, es, &stg_pos) ||
        !mul_ok(g->co, p->K * es, &wbytes))
        return false;
    /* (grad_w is written by conv_wsum and grad_y read by conv_gy_t, any strides) */
    p->stage_w = !bw && run_stride(w->sizes + 1, w->strides + 1, 3) != 1;
    p->stage_y = !bw && run_stride(y->sizes + 2, y->strides + 2, 2) != 1;
    bool stg = p->stage_y || bw;
    int64_t per_pos = col_pos + (stg ? stg_pos : 0), per_img, part_img = bw ? wbytes : 0;
    if (!mul_ok(per_pos, p->P, &per_img) || __builtin_add_overflow(per_img, part_img, &per_img))
        return false;
    uint64_t budget = tile_budget(d);
    if ((uint64_t)per_img <= budget) {
        p->nb = (int64_t)(budget / (uint64_t)per_img);
        if (p->nb > g->n) p->nb = g->n;
        p->np = p->P;
    } else {
        if (p->stage_y) return false; /* staging takes whole images */
        p->nb = 1;
        uint64_t room = budget > (uint64_t)part_img ? budget - (uint64_t)part_img : 0;
        p->np = (int64_t)(room / (uint64_t)per_pos);
        if (p->np < 1) p->np = 1;
    }
    uint64_t w_bytes = p->stage_w ? align128((uint64_t)wbytes) : 0;
    uint64_t col_bytes = align128((uint64_t)(col_pos * p->nb) * (uint64_t)p->np);
    uint64_t stg_bytes = stg ? align128((uint64_t)(stg_pos * p->nb) * (uint64_t)p->np) : 0;
    uint64_t part_bytes = (uint64_t)(part_img * p->nb);
    p->w_at = 0;
    p->col_at = w_bytes;
    p->stg_at = p->col_at + col_bytes;
    p->part_at = p->stg_at + stg_bytes;
    p->total = p->part_at + part_bytes + 1;
    if (d->max_alloc_bytes && p->total > d->max_alloc_bytes) return false;
    return true;
}

/* ------------------------------------------------------------ kernels */
static void arg_t4(ocl_call *c, const gfp_tensor *t) {
    ocl_arg_mem(c, ocl_mem(t));
    ocl_arg_i64(c, ocl_elem_offset(t));
    cl_long4 s = {{t->strides[0], t->strides[1], t->strides[2], t->strides[3]}};
    ocl_arg_raw(c, sizeof s, &s);
}

static void arg_geom(ocl_call *c, const conv_geom *g) {
    int64_t g0[8] = {g->n, g->ci, g->h, g->w, g->co, g->kh, g->kw, g->ho};
    int64_t g1[8] = {g->wo, g->cig, g->cog, g->sh, g->sw, g->ph, g->pw, g->dh};
    ocl_arg_long8(c, g0, 8);
    ocl_arg_long8(c, g1, 8);
    ocl_arg_i64(c, g->dw);
}

static const char *dts(int32_t dt) { return dt == GFP_F64 ? "f64" : "f32"; }

/* A kernel with one item per (output row of the tile [p0, p0 + np), line):
 * dim 0 the rows, dim 1 the lines. */
static gfp_status run_rows(ocl_device *d, ocl_call *c, const conv_geom *g, int64_t p0,
                           int64_t np, int64_t lines) {
    size_t rows = (size_t)((p0 + np - 1) / g->wo - p0 / g->wo + 1);
    size_t global[2] = {rows, (size_t)lines}, local[2] = {1, 64 < d->max_wg ? 64 : d->max_wg};
    return ocl_call_run(c, 2, global, local);
}

/* The tile's taps of x into the scratch buffer at col_at, [nb, groups, K, np]. */
static gfp_status im2col(ocl_device *d, const char *op, const gfp_tensor *x, const conv_geom *g,
                         const plan *p, int64_t n0, int64_t nb, int64_t p0, int64_t np) {
    char kname[32];
    snprintf(kname, sizeof kname, "conv_im2col_%s", dts(x->dtype));
    int64_t t[8] = {n0, p0, np, g->ci * p->KK * np, p->K * np, np, 1, nb};
    ocl_call c;
    ocl_call_begin(&c, d, OCL_PROG_CONV, kname, op);
    arg_t4(&c, x);
    ocl_arg_mem(&c, d->scratch.mem);
    ocl_arg_i64(&c, (int64_t)(p->col_at / p->es));
    arg_geom(&c, g);
    ocl_arg_long8(&c, t, 8);
    /* Rows per item: all the tile's while that leaves 2048 items or more. */
    int64_t rows = (p0 + np - 1) / g->wo - p0 / g->wo + 1, lines = nb * g->ci * p->KK;
    int64_t rpi = lines >= 2048 ? rows : rows * lines / 2048;
    if (rpi < 1) rpi = 1;
    ocl_arg_i64(&c, rpi);
    size_t global[2] = {(size_t)((rows + rpi - 1) / rpi), (size_t)lines};
    size_t local[2] = {1, 64 < d->max_wg ? 64 : d->max_wg};
    return ocl_call_run(&c, 2, global, local);
}

static gfp_status col2im(ocl_device *d, const char *op, const gfp_tensor *gx, const conv_geom *g,
                         const plan *p, int64_t n0, int64_t nb, int64_t p0, int64_t np) {
    char kname[32];
    snprintf(kname, sizeof kname, "conv_col2im_%s", dts(gx->dtype));
    int64_t t[8] = {n0, p0, np, g->ci * p->KK * np, p->K * np, np, 1, nb};
    ocl_call c;
    ocl_call_begin(&c, d, OCL_PROG_CONV, kname, op);
    ocl_arg_mem(&c, d->scratch.mem);
    ocl_arg_i64(&c, (int64_t)(p->col_at / p->es));
    arg_t4(&c, gx);
    arg_geom(&c, g);
    ocl_arg_long8(&c, t, 8);
    ocl_arg_i32(&c, p0 > 0);
    size_t global[2] = {(size_t)g->h, (size_t)(nb * g->ci)};
    size_t local[2] = {1, 64 < d->max_wg ? 64 : d->max_wg};
    return ocl_call_run(&c, 2, global, local);
}

/* y[n, co, oh, ow] += bias[co] */
static gfp_status add_bias(ocl_device *d, const char *op, const gfp_tensor *y,
                           const gfp_tensor *bias) {
    char kname[32];
    snprintf(kname, sizeof kname, "conv_bias_%s", dts(y->dtype));
    ocl_call c;
    ocl_call_begin(&c, d, OCL_PROG_CONV, kname, op);
    arg_t4(&c, y);
    ocl_arg_mem(&c, ocl_mem(bias));
    ocl_arg_i64(&c, ocl_elem_offset(bias));
    ocl_arg_i64(&c, bias->strides[0]);
    cl_long4 sz = {{y->sizes[0], y->sizes[1], y->sizes[2], y->sizes[3]}};
    ocl_arg_raw(&c, sizeof sz, &sz);
    size_t global[2] = {(size_t)(y->sizes[2] * y->sizes[3]), (size_t)(y->sizes[0] * y->sizes[1])};
    size_t local[2] = {64 < d->max_wg ? 64 : d->max_wg, 1};
    return ocl_call_run(&c, 2, global, local);
}

/* ------------------------------------------------------------ the three ops */
/* The output-shaped tensor's tile [n0, n0 + nb) x positions [p0, p0 + np) as
 * [nb, groups, cog, np]: t itself (its plane merges with unit stride) or its
 * staged copy, [nb, Co, np] contiguous at stg_at. */
static gfp_tensor y_tile(ocl_device *d, const gfp_tensor *t, const conv_geom *g, const plan *p,
                         int64_t n0, int64_t nb, int64_t p0, int64_t np) {
    int64_t sz[4] = {nb, g->groups, g->cog, np};
    if (p->stage_y) {
        int64_t st[4] = {g->co * np, g->cog * np, np, 1};
        return view(t->dtype, &d->scratch, p->stg_at, 4, sz, st);
    }
    int64_t st[4] = {t->strides[0], g->cog * t->strides[1], t->strides[1], 1};
    uint64_t off = t->offset + (uint64_t)(n0 * t->strides[0] + p0) * p->es;
    return view(t->dtype, t->buffer, off, 4, sz, st);
}

/* Whole images [n0, n0 + nb) of t, and the same in the staging area. */
static void y_images(ocl_device *d, const gfp_tensor *t, const plan *p, int64_t n0, int64_t nb,
                     gfp_tensor *real, gfp_tensor *staged) {
    *real = *t;
    real->sizes[0] = nb;
    real->offset = t->offset + (uint64_t)(n0 * t->strides[0]) * p->es;
    *staged = ocl_scratch_view(d, real, p->stg_at);
}

/* The weight as [groups, cog, K] strides (co stride, k stride) and where. */
static void w_layout(ocl_device *d, const gfp_tensor *w, const plan *p, void **buf,
                     uint64_t *off, int64_t *s_co, int64_t *s_k) {
    if (p->stage_w) {
        *buf = &d->scratch;
        *off = p->w_at;
        *s_co = p->K;
        *s_k = 1;
    } else {
        *buf = w->buffer;
        *off = w->offset;
        *s_co = w->strides[0];
        *s_k = run_stride(w->sizes + 1, w->strides + 1, 3);
    }
}

static gfp_status forward(ocl_device *d, const char *op, const gfp_tensor *x,
                          const gfp_tensor *w, const gfp_tensor *y, const gfp_tensor *bias,
                          const conv_geom *g, const plan *p) {
    gfp_status st = GFP_OK;
    void *wbuf;
    uint64_t woff;
    int64_t s_co, s_k;
    if (p->stage_w) {
        gfp_tensor ws = ocl_scratch_view(d, w, p->w_at);
        if ((st = ocl_copy_tensor(d, &ws, w, op)) != GFP_OK) return st;
    }
    w_layout(d, w, p, &wbuf, &woff, &s_co, &s_k);
    for (int64_t n0 = 0; n0 < g->n && st == GFP_OK; n0 += p->nb) {
        int64_t nb = g->n - n0 < p->nb ? g->n - n0 : p->nb;
        for (int64_t p0 = 0; p0 < p->P && st == GFP_OK; p0 += p->np) {
            int64_t np = p->P - p0 < p->np ? p->P - p0 : p->np;
            if ((st = im2col(d, op, x, g, p, n0, nb, p0, np)) != GFP_OK) break;
            int64_t asz[4] = {nb, g->groups, g->cog, p->K}, ast[4] = {0, g->cog * s_co, s_co, s_k};
            int64_t bsz[4] = {nb, g->groups, p->K, np},
                    bst[4] = {g->ci * p->KK * np, p->K * np, np, 1};
            gfp_tensor a = view(y->dtype, wbuf, woff, 4, asz, ast);
            gfp_tensor b = view(y->dtype, &d->scratch, p->col_at, 4, bsz, bst);
            gfp_tensor yt = y_tile(d, y, g, p, n0, nb, p0, np);
            if ((st = matmul(d, &a, &b, &yt)) != GFP_OK) break;
            if (p->stage_y) {
                gfp_tensor real, staged;
                y_images(d, y, p, n0, nb, &real, &staged);
                st = ocl_copy_tensor(d, &real, &staged, op);
            }
        }
    }
    if (st == GFP_OK && bias)
        st = add_bias(d, op, y, bias);
    return st;
}

static gfp_status backward_input(ocl_device *d, const char *op, const gfp_tensor *gx,
                                 const gfp_tensor *w, const gfp_tensor *gy, const conv_geom *g,
                                 const plan *p) {
    gfp_status st = GFP_OK;
    void *wbuf;
    uint64_t woff;
    int64_t s_co, s_k;
    if (p->stage_w) {
        gfp_tensor ws = ocl_scratch_view(d, w, p->w_at);
        if ((st = ocl_copy_tensor(d, &ws, w, op)) != GFP_OK) return st;
    }
    w_layout(d, w, p, &wbuf, &woff, &s_co, &s_k);
    for (int64_t n0 = 0; n0 < g->n && st == GFP_OK; n0 += p->nb) {
        int64_t nb = g->n - n0 < p->nb ? g->n - n0 : p->nb;
        for (int64_t p0 = 0; p0 < p->P && st == GFP_OK; p0 += p->np) {
            int64_t np = p->P - p0 < p->np ? p->P - p0 : p->np;
            if (p->stage_y) {
                gfp_tensor real, staged;
                y_images(d, gy, p, n0, nb, &real, &staged);
                if ((st = ocl_copy_tensor(d, &staged, &real, op)) != GFP_OK) break;
            }
            int64_t asz[4] = {nb, g->groups, p->K, g->cog}, ast[4] = {0, g->cog * s_co, s_k, s_co};
            int64_t ysz[4] = {nb, g->groups, p->K, np},
                    yst[4] = {g->ci * p->KK * np, p->K * np, np, 1};
            gfp_tensor a = view(gy->dtype, wbuf, woff, 4, asz, ast);
            gfp_tensor b = y_tile(d, gy, g, p, n0, nb, p0, np);
            gfp_tensor dcol = view(gy->dtype, &d->scratch, p->col_at, 4, ysz, yst);
            if ((st = matmul(d, &a, &b, &dcol)) != GFP_OK) break;
            st = col2im(d, op, gx, g, p, n0, nb, p0, np);
        }
    }
    return st;
}

static gfp_status wsum(ocl_device *d, const char *op, const gfp_tensor *gw, const conv_geom *g,
                       const plan *p, int64_t parts, bool acc_in) {
    char kname[32];
    snprintf(kname, sizeof kname, "conv_wsum_%s", dts(gw->dtype));
    ocl_call c;
    ocl_call_begin(&c, d, OCL_PROG_CONV, kname, op);
    arg_t4(&c, gw);
    ocl_arg_mem(&c, d->scratch.mem);
    ocl_arg_i64(&c, (int64_t)(p->part_at / p->es));
    ocl_arg_i64(&c, parts);
    ocl_arg_i32(&c, acc_in);
    cl_long4 sz = {{g->co, g->cig, g->kh, g->kw}};
    ocl_arg_raw(&c, sizeof sz, &sz);
    ocl_arg_i64(&c, g->cog);
    size_t global[2] = {(size_t)p->K, (size_t)g->co};
    size_t local[2] = {64 < d->max_wg ? 64 : d->max_wg, 1};
    return ocl_call_run(&c, 2, global, local);
}

/* Per image n of a tile, per group: part[n, g] (K x cog) = col[n, g] (K x np)
 * @ gt[n, :, g] (np x cog), gt being grad_y's tile transposed; conv_wsum adds
 * the images' products into grad_w. */
static gfp_status backward_weight(ocl_device *d, const char *op, const gfp_tensor *x,
                                  const gfp_tensor *gw, const gfp_tensor *gy,
                                  const conv_geom *g, const plan *p) {
    gfp_status st = GFP_OK;
    bool first = true;
    for (int64_t n0 = 0; n0 < g->n && st == GFP_OK; n0 += p->nb) {
        int64_t nb = g->n - n0 < p->nb ? g->n - n0 : p->nb;
        for (int64_t p0 = 0; p0 < p->P && st == GFP_OK; p0 += p->np) {
            int64_t np = p->P - p0 < p->np ? p->P - p0 : p->np;
            if ((st = im2col(d, op, x, g, p, n0, nb, p0, np)) != GFP_OK) break;
            char kname[32];
            snprintf(kname, sizeof kname, "conv_gy_t_%s", dts(gy->dtype));
            int64_t t[8] = {n0, p0, np, 0, 0, 0, 0, nb};
            ocl_call c;
            ocl_call_begin(&c, d, OCL_PROG_CONV, kname, op);
            arg_t4(&c, gy);
            ocl_arg_mem(&c, d->scratch.mem);
            ocl_arg_i64(&c, (int64_t)(p->stg_at / p->es));
            arg_geom(&c, g);
            ocl_arg_long8(&c, t, 8);
            if ((st = run_rows(d, &c, g, p0, np, nb * g->co)) != GFP_OK) break;
            int64_t asz[4] = {nb, g->groups, p->K, np},
                    ast[4] = {g->ci * p->KK * np, p->K * np, np, 1};
            int64_t bsz[4] = {nb, g->groups, np, g->cog}, bst[4] = {np * g->co, g->cog, g->co, 1};
            int64_t ysz[4] = {nb, g->groups, p->K, g->cog},
                    yst[4] = {g->co * p->K, p->K * g->cog, g->cog, 1};
            gfp_tensor a = view(gy->dtype, &d->scratch, p->col_at, 4, asz, ast);
            gfp_tensor b = view(gy->dtype, &d->scratch, p->stg_at, 4, bsz, bst);
            gfp_tensor yt = view(gy->dtype, &d->scratch, p->part_at, 4, ysz, yst);
            if ((st = matmul(d, &a, &b, &yt)) != GFP_OK) break;
            st = wsum(d, op, gw, g, p, nb, !first);
            first = false;
        }
    }
    return st;
}

/* ------------------------------------------------------------ implicit GEMM */
/* Whether conv2d_igemm can run op: CPU devices (the kernel is written for
 * their vector units), the forward op, and the input gradient at stride 1
 * and groups 1 (a forward convolution of grad_y); planes below 2^30 (the
 * kernel's lane masks are ints). */
static bool igemm_fits(const ocl_device *d, uint32_t op, const conv_geom *g) {
    if (!(d->type & CL_DEVICE_TYPE_CPU) || d->max_wg < 1) return false;
    if (g->h >= (1 << 30) || g->w >= (1 << 30) || g->ho >= (1 << 30) || g->wo >= (1 << 30))
        return false;
    if (op == GFP_OP_CONV2D) return true;
    return op == GFP_OP_CONV2D_BACKWARD_INPUT && g->sh == 1 && g->sw == 1 && g->groups == 1;
}

static gfp_status igemm(ocl_device *d, uint32_t op, const gfp_tensor *x, const gfp_tensor *w,
                        const gfp_tensor *y, const gfp_tensor *bias, const conv_geom *g) {
    const char *name = pk_op_name(op);
    char kname[32];
    snprintf(kname, sizeof kname, "conv2d_igemm_%s", dts(x->dtype));
    int64_t vw = x->dtype == GFP_F64 ? 8 : 16;
    /* The convolution the kernel runs: in (the input), wt (the weight, as
     * [out channels, in channels / groups, kh, kw]), out, and its geometry. */
    const gfp_tensor *in = x, *out = y;
    conv_geom k = *g;
    uint64_t w_off = w->offset / pk_dtype_size(w->dtype);
    cl_long4 ws = {{w->strides[0], w->strides[1], w->strides[2], w->strides[3]}};
    if (op == GFP_OP_CONV2D_BACKWARD_INPUT) {
        /* grad_x = grad_y convolved with w[co, ci, kh-1-i, kw-1-j] over co, at
         * padding d(k-1) - p (which may be negative). */
        in = y;
        out = x;
        k.ci = g->co;
        k.co = g->ci;
        k.h = g->ho;
        k.w = g->wo;
        k.ho = g->h;
        k.wo = g->w;
        k.cig = g->co;
        k.cog = g->ci;
        k.ph = g->dh * (g->kh - 1) - g->ph;
        k.pw = g->dw * (g->kw - 1) - g->pw;
        w_off += (uint64_t)((g->kh - 1) * w->strides[2] + (g->kw - 1) * w->strides[3]);
        ws = (cl_long4){{w->strides[1], w->strides[0], -w->strides[2], -w->strides[3]}};
        bias = NULL;
    }
    const ocl_buffer *xb = in->buffer;
    ocl_call c;
    ocl_call_begin(&c, d, OCL_PROG_CONV, kname, name);
    arg_t4(&c, in);
    ocl_arg_i64(&c, (int64_t)(xb->size / pk_dtype_size(in->dtype)));
    ocl_arg_mem(&c, ocl_mem(w));
    ocl_arg_i64(&c, (int64_t)w_off);
    ocl_arg_raw(&c, sizeof ws, &ws);
    ocl_arg_mem(&c, bias ? ocl_mem(bias) : d->flag);
    ocl_arg_i64(&c, bias ? ocl_elem_offset(bias) : 0);
    ocl_arg_i64(&c, bias ? bias->strides[0] : 0);
    ocl_arg_i32(&c, bias != NULL);
    arg_t4(&c, out);
    arg_geom(&c, &k);
    int64_t nblk = (k.cog + 7) / 8; /* GF_CRB of conv.cl */
    size_t global[3] = {(size_t)((k.wo + vw - 1) / vw), (size_t)(k.n * k.ho),
                        (size_t)(k.groups * nblk)};
    size_t local[3] = {1, 1, (size_t)(k.groups * nblk < 8 ? k.groups * nblk : 8)};
    if (local[2] > d->max_wg) local[2] = 1;
    return ocl_call_run(&c, 3, global, local);
}

/* The form that runs op fastest, as measured on PoCL (2 cores, AVX-512;
 * median times, x 16 channels 3x3 padding 1 unless said):
 *   - below 2^16 multiply-adds the direct kernel's single launch wins (8 x
 *     1->1 channels 28x28: weight gradient 0.06 ms direct, 0.34 ms GEMM);
 *   - forward: the implicit GEMM wins at every size tried, 1->1 channels
 *     included (0.063 vs 0.12 ms direct); 16->32 channels 28x28 batch 16:
 *     4.4 ms implicit, 36 ms im2col + GEMM, 241 ms direct;
 *   - input gradient at stride 1, groups 1: implicit GEMM (16->32, 14x14,
 *     batch 64: 18 ms, im2col + GEMM 39 ms, direct 469 ms), except where
 *     the input has far fewer channels than the output (1<-16: implicit
 *     16.3 ms, im2col + GEMM 11.8 ms, direct 68 ms): its items compute 8
 *     input channels at once;
 *   - weight gradient: im2col + GEMM from 8 output channels per group
 *     (16->32 14x14 batch 64: 36 ms vs 164 ms direct; 1->16 28x28: 4.8 vs
 *     16.8 ms), the direct kernel below (4->4 28x28 batch 64: 20 ms direct,
 *     28 ms GEMM), whose GEMM fills a fraction of each 16-lane vector.
 * On other devices (GPUs) the im2col form runs where PoCL found it faster
 * than the direct kernel; that crossover is not measured on a GPU here. */
#define DIRECT_MACS (1 << 16)

static int auto_form(const ocl_device *d, uint32_t op, const conv_geom *g) {
    double macs = (double)g->n * (double)g->co * (double)g->ho * (double)g->wo *
                  (double)g->cig * (double)g->kh * (double)g->kw;
    if (macs < DIRECT_MACS) return FORM_DIRECT;
    switch (op) {
    case GFP_OP_CONV2D: return igemm_fits(d, op, g) ? FORM_IGEMM : FORM_GEMM;
    case GFP_OP_CONV2D_BACKWARD_INPUT:
        return igemm_fits(d, op, g) && 8 * g->ci >= g->co ? FORM_IGEMM : FORM_GEMM;
    default: return g->cog >= 8 ? FORM_GEMM : FORM_DIRECT;
    }
}

gfp_status ocl_conv_gemm(ocl_device *d, uint32_t op, const gfp_tensor *x, const gfp_tensor *w,
                         const gfp_tensor *y, const gfp_tensor *bias, const conv_geom *g,
                         bool *taken) {
    *taken = false;
    conv_form form = conv_choice();
    if (form == FORM_DIRECT || g->n == 0 || g->co == 0 || g->ci == 0) return GFP_OK;
    bool use_igemm = form != FORM_GEMM && igemm_fits(d, op, g);
    if (form == FORM_AUTO) {
        int best = auto_form(d, op, g);
        if (best == FORM_DIRECT) return GFP_OK;
        use_igemm = use_igemm && best == FORM_IGEMM;
    }
    if (use_igemm) {
        *taken = true;
        return igemm(d, op, x, w, y, bias, g);
    }
    plan p;
    if (!make_plan(d, op, w, y, g, &p)) return GFP_OK;
    *taken = true;
    const char *name = pk_op_name(op);
    gfp_status st = ocl_scratch(d, p.total, name);
    if (st != GFP_OK) return st;
    switch (op) {
    case GFP_OP_CONV2D: return forward(d, name, x, w, y, bias, g, &p);
    case GFP_OP_CONV2D_BACKWARD_INPUT: return backward_input(d, name, x, w, y, g, &p);
    default: return backward_weight(d, name, x, w, y, g, &p);
    }
}
