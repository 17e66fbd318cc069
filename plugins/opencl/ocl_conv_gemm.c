/* ocl_conv_gemm.c — CONV2D and its two gradients as GEMMs through the
 * plugin's own matmul (ocl_matmul.c: graft's kernels, or CLBlast where the
 * plugin uses it), in tiles that fit the device's allocation limit.
 *
 * Per group g, with K = Ci/groups * kh * kw and P = Ho * Wo:
 *   forward       y[n, g]  (cog x P)  = W[g] (cog x K)   @ col[n, g] (K x P)
 *   grad input    dcol[n, g] (K x P)  = W[g]^T (K x cog) @ gy[n, g] (cog x P),
 *                 then col2im gathers grad_x from dcol
 *   grad weight   gw[g] (cog x K)     = gy[g] (cog x nP) @ col^T[g] (nP x K),
 *                 the images of a tile folded into the reduction
 * col holds the input taps (im2col, kernels/conv.cl). A tile is a run of
 * whole images, or of output positions of one image when one image's
 * matrices do not fit; its matrices live in the device's scratch buffer,
 * within GRAFT_OPENCL_CONV_TILE_BYTES (default 64 MiB, at most half the
 * largest allocation). The tiles of the weight gradient add up in grad_w;
 * those of the input gradient add up in grad_x when an image is split.
 *
 * Operands the matmul takes as they are: the weight when its last three
 * dims merge into one run, the output-shaped tensor when its plane is
 * row-major with unit stride. Others are staged (copied) in scratch memory;
 * a staged output-shaped tensor needs tiles of whole images. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl_conv.h"

/* GRAFT_OPENCL_CONV=direct|gemm|auto: 0, 1, -1. */
static int conv_choice(void) {
    const char *v = ocl_getenv("GRAFT_OPENCL_CONV");
    if (v && !strcmp(v, "direct")) return 0;
    if (v && !strcmp(v, "gemm")) return 1;
    return -1;
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
    bool stage_w;          /* the weight (or grad_w) is copied to/from a contiguous [Co, K] */
    bool stage_y;          /* the output-shaped tensor is staged whole images at a time */
    uint64_t es;
    /* Byte offsets in the scratch buffer, and its size. */
    uint64_t w_at, col_at, stg_at, part_at, total;
} plan;

static uint64_t align128(uint64_t v) { return (v + 127) / 128 * 128; }

/* Whether the GEMM form beats the direct kernel for this shape. Measured on
 * PoCL (2 cores, AVX-512) with the shapes of tools/bench: see the comment at
 * DIRECT_BELOW. */
#define DIRECT_BELOW 16

static bool gemm_wins(uint32_t op, const conv_geom *g) {
    (void)op;
    return g->cig * g->kh * g->kw >= DIRECT_BELOW && g->cog >= 8;
}

/* Chooses the tiles; false when no tile fits (the direct kernel runs). */
static bool make_plan(const ocl_device *d, uint32_t op, const gfp_tensor *w, const gfp_tensor *y,
                      const conv_geom *g, plan *p) {
    memset(p, 0, sizeof *p);
    p->es = ocl_dtype_size(y->dtype);
    int64_t es = (int64_t)p->es, col_pos, stg_pos, wbytes;
    p->KK = g->kh * g->kw;
    if (!mul_ok(g->cig, p->KK, &p->K) || !mul_ok(g->ho, g->wo, &p->P) ||
        !mul_ok(g->ci * p->KK, es, &col_pos) || !mul_ok(g->co, es, &stg_pos) ||
        !mul_ok(g->co, p->K * es, &wbytes))
        return false;
    p->stage_w = run_stride(w->sizes + 1, w->strides + 1, 3) != 1;
    p->stage_y = run_stride(y->sizes + 2, y->strides + 2, 2) != 1;
    /* The weight gradient always stages grad_y as [groups, cog, images, positions]. */
    bool stg = p->stage_y || op == GFP_OP_CONV2D_BACKWARD_WEIGHT;
    int64_t per_pos = col_pos + (stg ? stg_pos : 0), per_img;
    if (!mul_ok(per_pos, p->P, &per_img)) return false;
    uint64_t budget = tile_budget(d);
    if ((uint64_t)per_img <= budget) {
        p->nb = (int64_t)(budget / (uint64_t)per_img);
        if (p->nb > g->n) p->nb = g->n;
        p->np = p->P;
    } else {
        if (p->stage_y) return false; /* staging takes whole images */
        p->nb = 1;
        p->np = (int64_t)(budget / (uint64_t)per_pos);
        if (p->np < 1) p->np = 1;
    }
    uint64_t w_bytes = p->stage_w ? align128((uint64_t)wbytes) : 0;
    uint64_t col_bytes = align128((uint64_t)(col_pos * p->nb) * (uint64_t)p->np);
    uint64_t stg_bytes = stg ? align128((uint64_t)(stg_pos * p->nb) * (uint64_t)p->np) : 0;
    uint64_t part_bytes = op == GFP_OP_CONV2D_BACKWARD_WEIGHT ? (uint64_t)wbytes : 0;
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

/* The tile's taps of x into the scratch buffer at col_at: [nb, groups, K,
 * np] (trans false) or [groups, nb, np, K] (trans true). */
static gfp_status im2col(ocl_device *d, const char *op, const gfp_tensor *x, const conv_geom *g,
                         const plan *p, int64_t n0, int64_t nb, int64_t p0, bool trans) {
    char kname[32];
    snprintf(kname, sizeof kname, "conv_im2col_%s", dts(x->dtype));
    int64_t np = p->np < p->P - p0 ? p->np : p->P - p0;
    /* [nb, groups, K, np] or [groups, nb, np, K] */
    int64_t t[8] = {n0, p0, np, trans ? np * p->K : g->ci * p->KK * np,
                    trans ? nb * np * p->K : p->K * np, trans ? 1 : np, trans ? p->K : 1, nb};
    ocl_call c;
    ocl_call_begin(&c, d, OCL_PROG_CONV, kname, op);
    arg_t4(&c, x);
    ocl_arg_mem(&c, d->scratch.mem);
    ocl_arg_i64(&c, (int64_t)(p->col_at / p->es));
    arg_geom(&c, g);
    ocl_arg_long8(&c, t, 8);
    size_t rows = (size_t)((p0 + np - 1) / g->wo - p0 / g->wo + 1);
    size_t global[2] = {rows, (size_t)(nb * g->ci * p->KK)};
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

/* y += bias over channels (kernel conv_bias) or y += part for grad_w tiles
 * after the first (conv_acc); part is contiguous in the scratch buffer. */
static gfp_status add_into(ocl_device *d, const char *op, const char *stem, const gfp_tensor *y,
                           cl_mem src, int64_t src_off, int64_t src_stride) {
    char kname[32];
    snprintf(kname, sizeof kname, "%s_%s", stem, dts(y->dtype));
    ocl_call c;
    ocl_call_begin(&c, d, OCL_PROG_CONV, kname, op);
    arg_t4(&c, y);
    ocl_arg_mem(&c, src);
    ocl_arg_i64(&c, src_off);
    if (src_stride >= 0) ocl_arg_i64(&c, src_stride);
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
            if ((st = im2col(d, op, x, g, p, n0, nb, p0, false)) != GFP_OK) break;
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
        st = add_into(d, op, "conv_bias", y, ocl_mem(bias), ocl_elem_offset(bias),
                      bias->strides[0]);
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

static gfp_status backward_weight(ocl_device *d, const char *op, const gfp_tensor *x,
                                  const gfp_tensor *gw, const gfp_tensor *gy,
                                  const conv_geom *g, const plan *p) {
    gfp_status st = GFP_OK;
    /* grad_w as [groups, cog, K]: itself, or the contiguous part buffer. */
    int64_t s_k = p->stage_w ? 1 : run_stride(gw->sizes + 1, gw->strides + 1, 3);
    bool direct_out = !p->stage_w && s_k == 1;
    bool first = true;
    for (int64_t n0 = 0; n0 < g->n && st == GFP_OK; n0 += p->nb) {
        int64_t nb = g->n - n0 < p->nb ? g->n - n0 : p->nb;
        for (int64_t p0 = 0; p0 < p->P && st == GFP_OK; p0 += p->np) {
            int64_t np = p->P - p0 < p->np ? p->P - p0 : p->np;
            if ((st = im2col(d, op, x, g, p, n0, nb, p0, true)) != GFP_OK) break;
            /* grad_y's tile as [groups, cog, nb, np] (dst) from [nb, groups, cog, np]. */
            int64_t rows = nb * np;
            if (p->stage_y) {
                int64_t sz[5] = {nb, g->groups, g->cog, g->ho, g->wo};
                int64_t dst_st[5] = {np, g->cog * rows, rows, g->wo, 1};
                int64_t src_st[5] = {gy->strides[0], g->cog * gy->strides[1], gy->strides[1],
                                     gy->strides[2], gy->strides[3]};
                gfp_tensor src = view(gy->dtype, gy->buffer,
                                      gy->offset + (uint64_t)(n0 * gy->strides[0]) * p->es, 5,
                                      sz, src_st);
                gfp_tensor dst = view(gy->dtype, &d->scratch, p->stg_at, 5, sz, dst_st);
                st = ocl_copy_tensor(d, &dst, &src, op);
            } else {
                int64_t sz[4] = {nb, g->groups, g->cog, np};
                int64_t dst_st[4] = {np, g->cog * rows, rows, 1};
                int64_t src_st[4] = {gy->strides[0], g->cog * gy->strides[1], gy->strides[1], 1};
                gfp_tensor src = view(gy->dtype, gy->buffer,
                                      gy->offset +
                                          (uint64_t)(n0 * gy->strides[0] + p0) * p->es,
                                      4, sz, src_st);
                gfp_tensor dst = view(gy->dtype, &d->scratch, p->stg_at, 4, sz, dst_st);
                st = ocl_copy_tensor(d, &dst, &src, op);
            }
            if (st != GFP_OK) break;
            int64_t asz[3] = {g->groups, g->cog, rows}, ast[3] = {g->cog * rows, rows, 1};
            int64_t bsz[3] = {g->groups, rows, p->K}, bst[3] = {rows * p->K, p->K, 1};
            int64_t ysz[3] = {g->groups, g->cog, p->K};
            gfp_tensor a = view(gy->dtype, &d->scratch, p->stg_at, 3, asz, ast);
            gfp_tensor b = view(gy->dtype, &d->scratch, p->col_at, 3, bsz, bst);
            gfp_tensor yt;
            bool to_gw = first && direct_out;
            if (to_gw) {
                int64_t yst[3] = {g->cog * gw->strides[0], gw->strides[0], 1};
                yt = view(gw->dtype, gw->buffer, gw->offset, 3, ysz, yst);
            } else {
                int64_t yst[3] = {g->cog * p->K, p->K, 1};
                yt = view(gw->dtype, &d->scratch, p->part_at, 3, ysz, yst);
            }
            if ((st = matmul(d, &a, &b, &yt)) != GFP_OK) break;
            if (!to_gw) {
                if (first) {
                    gfp_tensor part = ocl_scratch_view(d, gw, p->part_at);
                    st = ocl_copy_tensor(d, gw, &part, op);
                } else {
                    st = add_into(d, op, "conv_acc", gw, d->scratch.mem,
                                  (int64_t)(p->part_at / p->es), -1);
                }
            }
            first = false;
        }
    }
    return st;
}

gfp_status ocl_conv_gemm(ocl_device *d, uint32_t op, const gfp_tensor *x, const gfp_tensor *w,
                         const gfp_tensor *y, const gfp_tensor *bias, const conv_geom *g,
                         bool *taken) {
    *taken = false;
    int choice = conv_choice();
    if (choice == 0 || (choice < 0 && !gemm_wins(op, g))) return GFP_OK;
    if (g->n == 0 || g->co == 0 || g->ci == 0) return GFP_OK; /* the direct kernel's no-ops */
    plan p;
    if (!make_plan(d, op, w, y, g, &p)) return GFP_OK;
    *taken = true;
    if (getenv("DBGC")) fprintf(stderr, "plan op %u nb %lld np %lld P %lld K %lld sw %d sy %d total %llu y strides %lld %lld %lld %lld\n", op, (long long)p.nb, (long long)p.np, (long long)p.P, (long long)p.K, p.stage_w, p.stage_y, (unsigned long long)p.total, (long long)y->strides[0], (long long)y->strides[1], (long long)y->strides[2], (long long)y->strides[3]);
    const char *name = ocl_op_name(op);
    gfp_status st = ocl_scratch(d, p.total, name);
    if (st != GFP_OK) return st;
    switch (op) {
    case GFP_OP_CONV2D: return forward(d, name, x, w, y, bias, g, &p);
    case GFP_OP_CONV2D_BACKWARD_INPUT: return backward_input(d, name, x, w, y, g, &p);
    default: return backward_weight(d, name, x, w, y, g, &p);
    }
}
