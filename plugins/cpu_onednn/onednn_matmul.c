/* SPDX-License-Identifier: BSD-3-Clause */
/* onednn_matmul.c — MATMUL (f32, bf16) on oneDNN's matmul primitive.
 *
 * The operands are handed over as they are, views included: oneDNN memory
 * descriptors take strides, so a transposed or sliced operand costs no copy.
 * The core broadcasts batch dims as stride 0; oneDNN broadcasts a batch dim
 * of size 1, so such dims become size 1 in that operand. What the fast
 * implementations refuse is packed into contiguous scratch first (measured:
 * oneDNN's reference matmul is ~1000x slower than its gemm/brgemm kernels):
 *  - an operand whose last two dims both have non-unit strides,
 *  - an output whose last dim is not unit-stride (computed into scratch),
 *  - a batch dim broadcast in both operands (a is expanded).
 * If oneDNN still picks its reference implementation, every operand is
 * packed (mode 1); that decision is cached with the geometry.
 * f64 goes to the C GEMM of omp_gemm.c, complex dtypes to omp_complex_gemm.c
 * (one real GEMM: c64 on oneDNN's f32 matmul here, c128 on the f64 GEMM). */
#include <string.h>

#include "omp_f64.h"

typedef struct operand {
    int rank;
    int64_t sizes[GFP_MAX_RANK], strides[GFP_MAX_RANK];
    bool pack; /* copied into contiguous scratch before the call */
} operand;

typedef struct mm_plan {
    int32_t dtype;
    int mode; /* 0: views where oneDNN takes them; 1: everything packed */
    operand a, b, y;
} mm_plan;

/* Last two dims usable as they are: one of them unit-stride (or size 1). */
static bool matrix_ok(const operand *o) {
    int r = o->rank;
    int64_t rows = o->sizes[r - 2], cols = o->sizes[r - 1];
    int64_t rs = o->strides[r - 2], cs = o->strides[r - 1];
    if (rows == 0 || cols == 0) return false;
    if (cs == 1 || cols == 1) return rs >= cols || rows == 1;
    if (rs == 1 || rows == 1) return cs >= rows || cols == 1;
    return false;
}

static void make_contiguous(operand *o) {
    odn_contiguous_strides(o->sizes, o->rank, o->strides);
    o->pack = true;
}

/* The batch dims of o (nb of them) and its rows as one dim, when its strides
 * chain (each dim's stride is the next one's extent): [B.., M, K] -> [B..M, K]. */
static bool rows_chain(const operand *o, int nb) {
    for (int d = 0; d < nb; d++)
        if (o->strides[d] != o->sizes[d + 1] * o->strides[d + 1]) return false;
    return true;
}

static void fold_operand(operand *o, int nb) {
    int64_t rows = 1;
    for (int d = 0; d <= nb; d++) rows *= o->sizes[d];
    o->sizes[0] = rows;
    o->strides[0] = o->strides[nb];
    o->sizes[1] = o->sizes[nb + 1];
    o->strides[1] = o->strides[nb + 1];
    o->rank = 2;
}

/* A batched product whose right operand is the same matrix for every batch
 * (a linear layer on [B, T, K] inputs: the weight broadcast with stride 0)
 * is one 2-D GEMM when the batch dims fold into the rows of a and y:
 * [B*T, K] @ [K, N] runs at the speed of one large GEMM (measured ~10%
 * faster at 1 thread for [32, 64, 256] @ [256, 1024]) instead of B small
 * ones. Kept only when no operand then needs packing (the packing copies
 * walk the unfolded geometry). */
static void fold_rows(mm_plan *p, int nb) {
    if (nb == 0) return;
    for (int d = 0; d < nb; d++)
        if (p->b.sizes[d] != 1 || p->a.sizes[d] != p->y.sizes[d]) return;
    if (!rows_chain(&p->a, nb) || !rows_chain(&p->y, nb)) return;
    mm_plan keep = *p;
    fold_operand(&p->a, nb);
    fold_operand(&p->y, nb);
    p->b.sizes[0] = p->b.sizes[nb], p->b.strides[0] = p->b.strides[nb];
    p->b.sizes[1] = p->b.sizes[nb + 1], p->b.strides[1] = p->b.strides[nb + 1];
    p->b.rank = 2;
    if (!matrix_ok(&p->a) || !matrix_ok(&p->b) || p->y.strides[1] != 1 ||
        p->y.strides[0] < p->y.sizes[1])
        *p = keep;
}

/* Builds the operands' oneDNN geometry from the launch's tensors. */
static bool plan(mm_plan *p, const gfp_tensor *a, const gfp_tensor *b, const gfp_tensor *y,
                 int mode) {
    memset(p, 0, sizeof *p);
    p->dtype = y->dtype;
    p->mode = mode;
    int r = y->rank, nb = 0;
    const gfp_tensor *t[3] = {a, b, y};
    operand *o[3] = {&p->a, &p->b, &p->y};
    bool a_expand = false;
    for (int d = 0; d < r - 2; d++) {
        int64_t size = y->sizes[d];
        if (size == 1) continue; /* size-1 batch dims say nothing */
        bool a0 = a->strides[d] == 0, b0 = b->strides[d] == 0;
        if (y->strides[d] == 0) return false; /* an output that overlaps itself */
        if (a0 && b0) a_expand = true;
        for (int k = 0; k < 3; k++) {
            bool bcast = k < 2 && t[k]->strides[d] == 0 && !(k == 0 && a0 && b0);
            o[k]->sizes[nb] = bcast ? 1 : size;
            o[k]->strides[nb] = bcast ? 1 : t[k]->strides[d];
        }
        nb++;
    }
    for (int k = 0; k < 3; k++) {
        o[k]->rank = nb + 2;
        for (int j = 0; j < 2; j++) {
            o[k]->sizes[nb + j] = t[k]->sizes[r - 2 + j];
            o[k]->strides[nb + j] = t[k]->strides[r - 2 + j];
        }
    }
    if (mode == 0 && !a_expand) fold_rows(p, nb);
    for (int k = 0; k < 2; k++)
        if (mode == 1 || !matrix_ok(o[k]) || (k == 0 && a_expand)) make_contiguous(o[k]);
    int yr = p->y.rank;
    if (mode == 1 || p->y.strides[yr - 1] != 1 || p->y.strides[yr - 2] < p->y.sizes[yr - 1])
        make_contiguous(&p->y);
    /* Zero strides left only in size-1 dims, where oneDNN wants them dense. */
    for (int k = 0; k < 3; k++) {
        int64_t dense[GFP_MAX_RANK];
        odn_contiguous_strides(o[k]->sizes, o[k]->rank, dense);
        for (int d = 0; d < o[k]->rank; d++)
            if (o[k]->sizes[d] == 1) o[k]->strides[d] = dense[d];
    }
    return true;
}

static dnnl_status_t build(odn_prim *p, const void *ctx) {
    const mm_plan *pl = ctx;
    dnnl_data_type_t dt = odn_dnnl_dtype(pl->dtype);
    const operand *o[3] = {&pl->a, &pl->b, &pl->y};
    dnnl_status_t st = dnnl_success;
    for (int k = 0; k < 3 && st == dnnl_success; k++)
        st = odc_md_strided(&p->md[k], o[k]->rank, o[k]->sizes, o[k]->strides, dt);
    odc_md none;
    odc_md_zero(&none);
    dnnl_primitive_desc_t pd = NULL;
    if (st == dnnl_success) st = odc_matmul_pd(&pd, odn_engine(), &p->md[0], &p->md[1], &none,
                                               &p->md[2]);
    if (st == dnnl_success && pl->mode == 0 && odc_pd_is_slow(pd)) {
        p->info[0] = 1; /* remembered: this geometry goes packed */
    } else if (st == dnnl_success) {
        st = odn_prim_set(p, 0, pd);
    }
    if (pd) dnnl_primitive_desc_destroy(pd);
    return st;
}

static void key_operand(odn_key *k, const operand *o) {
    odn_key_add(k, o->rank);
    for (int d = 0; d < o->rank; d++) {
        odn_key_add(k, o->sizes[d]);
        odn_key_add(k, o->strides[d]);
    }
}

/* A tensor over scratch (or over t's own memory) with o's geometry. */
static gfp_tensor view_of(const gfp_tensor *t, const operand *o, void *scratch) {
    gfp_tensor v = *t;
    v.rank = o->rank;
    memcpy(v.sizes, o->sizes, sizeof v.sizes);
    memcpy(v.strides, o->strides, sizeof v.strides);
    if (scratch) {
        v.buffer = scratch;
        v.offset = 0;
    }
    return v;
}

/* t's elements in o's (broadcast-reduced) shape: t's own strides in the
 * dims o keeps, any element in the dims o reduced to 1. */
static gfp_tensor source_view(const gfp_tensor *t, const gfp_tensor *y, const operand *o) {
    gfp_tensor v = *t;
    int nb = 0, r = t->rank;
    for (int d = 0; d < r - 2; d++) {
        if (y->sizes[d] == 1) continue;
        v.sizes[nb] = o->sizes[nb];
        v.strides[nb] = t->strides[d];
        nb++;
    }
    for (int j = 0; j < 2; j++) {
        v.sizes[nb + j] = t->sizes[r - 2 + j];
        v.strides[nb + j] = t->strides[r - 2 + j];
    }
    v.rank = nb + 2;
    return v;
}

static gfp_status run(const mm_plan *pl, const odn_prim *p, odn_ctx *c, const gfp_tensor *a,
                      const gfp_tensor *b, const gfp_tensor *y) {
    const gfp_tensor *t[3] = {a, b, y};
    const operand *o[3] = {&pl->a, &pl->b, &pl->y};
    void *ptr[3];
    gfp_status st = GFP_OK;
    for (int k = 0; k < 3 && st == GFP_OK; k++) {
        ptr[k] = (char *)t[k]->buffer + t[k]->offset;
        if (!o[k]->pack) continue;
        size_t bytes = 1;
        for (int d = 0; d < o[k]->rank; d++) bytes *= (size_t)o[k]->sizes[d];
        ptr[k] = odn_arena_alloc(c, bytes * pk_dtype_size(pl->dtype));
        if (!ptr[k]) return GFP_ERR_OUT_OF_MEMORY;
        if (k < 2) {
            gfp_tensor dst = view_of(t[k], o[k], ptr[k]), src = source_view(t[k], y, o[k]);
            st = odn_copy(&dst, &src);
        }
    }
    if (st != GFP_OK) return st == ODN_FALLBACK ? GFP_ERR_INTERNAL : st;
    odn_arg args[3] = {{DNNL_ARG_SRC, &p->md[0], ptr[0]},
                       {DNNL_ARG_WEIGHTS, &p->md[1], ptr[1]},
                       {DNNL_ARG_DST, &p->md[2], ptr[2]}};
    st = odn_exec(c, p, 0, args, 3, "matmul");
    if (st == GFP_OK && pl->y.pack) {
        gfp_tensor src = view_of(y, &pl->y, ptr[2]), dst = source_view(y, y, &pl->y);
        st = odn_copy(&dst, &src);
    }
    return st;
}

static bool shapes_ok(const gfp_tensor *a, const gfp_tensor *b, const gfp_tensor *y) {
    int r = y->rank;
    if (r < 2 || a->rank != r || b->rank != r) return false;
    for (int d = 0; d < r - 2; d++)
        if (a->sizes[d] != y->sizes[d] || b->sizes[d] != y->sizes[d]) return false;
    return a->sizes[r - 2] == y->sizes[r - 2] && b->sizes[r - 1] == y->sizes[r - 1] &&
           a->sizes[r - 1] == b->sizes[r - 2];
}

/* A product of few rows by a transposed weight, y [M, N] = a [M, K] @ b
 * where b is a column-major [K, N] (x @ W^T of a linear layer or of an
 * RNN's recurrent step, W [N, K] as stored): oneDNN runs the transposed
 * product y^T = W @ a^T faster, its wide operand W row-major as stored.
 * Measured at 1 thread (Zen 5, oneDNN 2.6, brgemm): M 32, K 256, N 1024
 * 84.6 -> 64.7 us; M 16..64 with N >= 256 1.1-1.35x; M 8 0.69x and M >= 128
 * no gain, so only 16 <= M <= 64. y^T is computed into scratch and
 * transposed into y (32K elements: a few us). f32, 2-D, y contiguous. */
static bool swap_pays(const gfp_tensor *a, const gfp_tensor *b, const gfp_tensor *y) {
    if (y->dtype != GFP_F32 || y->rank != 2 || !pk_is_contiguous(y)) return false;
    int64_t M = y->sizes[0], N = y->sizes[1], K = a->sizes[1];
    return M >= 16 && M <= 64 && N >= 256 && K >= 64 && a->strides[1] == 1 &&
           a->strides[0] >= K && b->strides[0] == 1 && b->strides[1] >= K;
}

static gfp_status odn_matmul_plain(const gfp_tensor *a, const gfp_tensor *b, const gfp_tensor *y);


static gfp_status matmul_swapped(odn_ctx *c, const gfp_tensor *a, const gfp_tensor *b,
                                 const gfp_tensor *y) {
    int64_t M = y->sizes[0], N = y->sizes[1], K = a->sizes[1];
    float *s = odn_arena_alloc(c, (size_t)(M * N) * sizeof(float));
    if (!s) return GFP_ERR_OUT_OF_MEMORY;
    gfp_tensor w = *b, xt = *a, yt = odn_temp_like(y, GFP_F32, s);
    w.sizes[0] = N, w.sizes[1] = K, w.strides[0] = b->strides[1], w.strides[1] = 1;
    xt.sizes[0] = K, xt.sizes[1] = M, xt.strides[0] = 1, xt.strides[1] = a->strides[0];
    yt.sizes[0] = N, yt.sizes[1] = M, yt.strides[0] = M, yt.strides[1] = 1;
    gfp_status st = odn_matmul_plain(&w, &xt, &yt);
    if (st != GFP_OK) return st;
    gfp_tensor back = yt; /* y's view of the scratch: [M, N], column-major */
    back.sizes[0] = M, back.sizes[1] = N, back.strides[0] = 1, back.strides[1] = M;
    st = odn_copy(y, &back);
    return st == ODN_FALLBACK ? GFP_ERR_INTERNAL : st;
}

/* MATMUL f32 / bf16 on oneDNN: shapes checked by the caller, k > 0. */
gfp_status odn_matmul_dnnl(const gfp_tensor *a, const gfp_tensor *b, const gfp_tensor *y) {
    if (swap_pays(a, b, y)) {
        odn_ctx *c;
        gfp_status cst = odn_ctx_acquire(&c);
        return cst == GFP_OK ? matmul_swapped(c, a, b, y) : cst;
    }
    return odn_matmul_plain(a, b, y);
}

static gfp_status odn_matmul_plain(const gfp_tensor *a, const gfp_tensor *b, const gfp_tensor *y) {
    odn_ctx *c;
    gfp_status cst = odn_ctx_acquire(&c);
    if (cst != GFP_OK) return cst;
    int64_t flops = 2 * pk_numel(y) * a->sizes[a->rank - 1];
    odn_team team = odn_team_begin(flops / 32);
    gfp_status st = ODN_FALLBACK;
    for (int mode = 0; mode < 2; mode++) {
        mm_plan pl;
        if (!plan(&pl, a, b, y, mode)) break;
        odn_key key;
        odn_key_init(&key, GFP_OP_MATMUL + 1000u * (uint32_t)mode);
        odn_key_add(&key, pl.dtype);
        key_operand(&key, &pl.a);
        key_operand(&key, &pl.b);
        key_operand(&key, &pl.y);
        odn_key_add(&key, pl.a.pack | pl.b.pack << 1 | pl.y.pack << 2);
        const odn_prim *p = odn_cache_get(&key, build, &pl);
        if (!p) break;
        if (p->info[0] == 1) { /* slow with views: try packed */
            odn_prim_release(p);
            continue;
        }
        st = run(&pl, p, c, a, b, y);
        odn_prim_release(p);
        break;
    }
    odn_team_end(team);
    return st;
}

gfp_status odn_matmul_launch(uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                             const gfp_tensor *const *out, uint32_t n_out, const void *params) {
    (void)params;
    if (op != GFP_OP_MATMUL || n_in != 2 || n_out != 1 || !in[0] || !in[1]) return ODN_FALLBACK;
    const gfp_tensor *a = in[0], *b = in[1], *y = out[0];
    bool cx = y->dtype == GFP_C64 || y->dtype == GFP_C128;
    if (y->dtype != GFP_F32 && y->dtype != GFP_BF16 && y->dtype != GFP_F64 && !cx)
        return ODN_FALLBACK;
    if (a->dtype != y->dtype || b->dtype != y->dtype || !shapes_ok(a, b, y)) return ODN_FALLBACK;
    if (pk_numel(y) == 0) return GFP_OK;
    if (a->sizes[a->rank - 1] == 0) return ODN_FALLBACK; /* an empty sum: the reference's zeros */
    if (y->dtype == GFP_F64 || cx) {
        for (int d = 0; d < y->rank; d++) /* an output that overlaps itself */
            if (y->strides[d] == 0 && y->sizes[d] > 1) return ODN_FALLBACK;
        if (cx) return odn_matmul_complex(a, b, y); /* omp_complex_gemm.c */
        return odn_matmul_f64(a, b, y); /* oneDNN 2.x has no f64 matmul */
    }
    gfp_status st = odn_matmul_small(a, b, y); /* attention's per-head products */
    if (st != ODN_FALLBACK) return st;
    return odn_matmul_dnnl(a, b, y);
}
