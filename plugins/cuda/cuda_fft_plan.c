/* SPDX-License-Identifier: BSD-3-Clause */
/* cuda_fft_plan.c — the steps of one FFT launch (see cuda_fft_plan.h). */
#include "cuda_fft_plan.h"

#include <stdbool.h>
#include <string.h>

static int32_t part_of(int32_t cdt) { return cdt == GFP_C64 ? GFP_F32 : GFP_F64; }

typedef struct builder {
    cuf_plan *p;
    int bad; /* a size overflowed, or more steps than the plan holds */
} builder;

static int64_t mul(builder *b, int64_t x, int64_t y) {
    int64_t r;
    if (__builtin_mul_overflow(x, y, &r)) {
        b->bad = 1;
        return 0;
    }
    return r;
}

static int64_t numel(builder *b, int rank, const int64_t *sizes) {
    int64_t n = 1;
    for (int d = 0; d < rank; d++) n = mul(b, n, sizes[d]);
    return n;
}

static void contiguous(builder *b, int rank, const int64_t *sizes, int64_t *strides) {
    int64_t s = 1;
    for (int d = rank - 1; d >= 0; d--) {
        strides[d] = s;
        s = mul(b, s, sizes[d]);
    }
}

static cuf_view view(int32_t array, int32_t dtype, int rank, const int64_t *sizes,
                     const int64_t *strides, int64_t offset) {
    cuf_view v;
    memset(&v, 0, sizeof v);
    v.array = array;
    v.dtype = dtype;
    v.rank = rank;
    v.offset = offset;
    for (int d = 0; d < rank; d++) {
        v.sizes[d] = sizes[d];
        v.strides[d] = strides[d];
    }
    return v;
}

/* x or y as the launch gave it (offsets are relative to its element 0). */
static cuf_view view_of(int32_t array, const gfp_tensor *t) {
    return view(array, t->dtype, t->rank, t->sizes, t->strides, 0);
}

/* Work array w of dtype dt, at least n elements long. */
static void use_work(cuf_plan *p, int32_t w, int32_t dt, int64_t n) {
    int k = w - CUF_W0;
    if (p->work_elems[k] < n) p->work_elems[k] = n;
    p->work_dtype[k] = dt;
}

static cuf_step *add(builder *b, int32_t kind) {
    if (b->p->n_steps >= CUF_MAX_STEPS) {
        b->bad = 1;
        return &b->p->steps[CUF_MAX_STEPS - 1];
    }
    cuf_step *s = &b->p->steps[b->p->n_steps++];
    memset(s, 0, sizeof *s);
    s->kind = kind;
    return s;
}

static void move(builder *b, cuf_view dst, cuf_view src, double scale, int conj, int real_part) {
    cuf_step *s = add(b, CUF_MOVE);
    s->dst = dst;
    s->src = src;
    s->scale = scale;
    s->conj = conj;
    s->real_part = real_part;
}

static void exec(builder *b, const cuf_exec *e) {
    cuf_step *s = add(b, CUF_EXEC);
    s->ex = *e;
    if (s->ex.reps == 0) s->ex.reps = 1;
}

/* True when t's elements lie row-major and contiguous (a size-1 dim may
 * have any stride): the work array can then be t itself. */
static bool dense(const gfp_tensor *t) {
    int64_t s = 1;
    for (int d = t->rank - 1; d >= 0; d--) {
        if (t->sizes[d] != 1 && t->strides[d] != s) return false;
        if (__builtin_mul_overflow(s, t->sizes[d], &s)) return false;
    }
    return true;
}

/* The C2C transform along dim q of the contiguous complex array in of shape
 * sizes (total elements), into out of the same layout (in place when they
 * are one). False when there is nothing to do (a dim of one point). */
static bool transform_dim(builder *b, int32_t in, int32_t out, int32_t cdt, int rank,
                          const int64_t *sizes, int q, int sign, int64_t total) {
    int64_t n = sizes[q], inner = 1, outer = 1;
    if (n == 1) return false; /* a transform of one point is the identity */
    for (int d = q + 1; d < rank; d++) inner = mul(b, inner, sizes[d]);
    for (int d = 0; d < q; d++) outer = mul(b, outer, sizes[d]);
    cuf_exec e;
    memset(&e, 0, sizeof e);
    e.type = CUF_C2C;
    e.sign = sign;
    e.dbl = cdt == GFP_C128;
    e.n = n;
    e.in = in;
    e.out = out;
    e.reps = 1;
    if (inner == 1) { /* contiguous lines, one after the other */
        e.batch = outer;
        e.istride = e.ostride = 1;
        e.idist = e.odist = n;
    } else if (outer <= CUF_MAX_REPS) { /* lines at stride inner, one plan per outer block */
        e.batch = inner;
        e.istride = e.ostride = inner;
        e.idist = e.odist = 1;
        e.reps = outer;
        e.in_step = e.out_step = mul(b, n, inner);
    } else { /* transpose the dim last through w2, transform, transpose back */
        const int64_t sz[3] = {outer, n, inner};
        const int64_t sa[3] = {mul(b, n, inner), inner, 1};
        const int64_t sw[3] = {mul(b, n, inner), 1, n};
        use_work(b->p, CUF_W2, cdt, total);
        move(b, view(CUF_W2, cdt, 3, sz, sw, 0), view(in, cdt, 3, sz, sa, 0), 1.0, 0, 0);
        e.in = e.out = CUF_W2;
        e.batch = mul(b, outer, inner);
        e.istride = e.ostride = 1;
        e.idist = e.odist = n;
        exec(b, &e);
        move(b, view(out, cdt, 3, sz, sa, 0), view(CUF_W2, cdt, 3, sz, sw, 0), 1.0, 0, 0);
        return true;
    }
    exec(b, &e);
    return true;
}

/* The end of a plan whose last work array is y itself: the scale and
 * conjugation in place, when there are any. */
static void finish_in_y(builder *b, const gfp_tensor *y, const int64_t *st, double scale,
                        int conj) {
    if (scale == 1.0 && !conj) return;
    cuf_view v = view(CUF_Y, y->dtype, y->rank, y->sizes, st, 0);
    move(b, v, v, scale, conj, 0);
}

/* C2C: with x and y both contiguous, the first transform reads x and
 * writes y, the others work in y; otherwise through work array 0. */
static void plan_c2c(builder *b, const gfp_fft_params *p, const gfp_tensor *x,
                     const gfp_tensor *y) {
    int rank = x->rank;
    int32_t cdt = x->dtype;
    int64_t st[GFP_MAX_RANK], total = numel(b, rank, x->sizes);
    contiguous(b, rank, x->sizes, st);
    bool direct = dense(x) && dense(y);
    int32_t work = direct ? CUF_Y : CUF_W0, cur = direct ? CUF_X : CUF_W0;
    if (!direct) {
        use_work(b->p, CUF_W0, cdt, total);
        move(b, view(CUF_W0, cdt, rank, x->sizes, st, 0), view_of(CUF_X, x), 1.0, 0, 0);
    }
    for (uint32_t i = 0; i < p->n_dims; i++)
        if (transform_dim(b, cur, work, cdt, rank, x->sizes, p->dims[i], p->inverse ? 1 : -1,
                          total))
            cur = work;
    if (!direct) {
        move(b, view_of(CUF_Y, y), view(CUF_W0, cdt, rank, y->sizes, st, 0), p->scale, 0, 0);
    } else if (cur == CUF_X) { /* every listed dim has one point */
        move(b, view(CUF_Y, cdt, rank, y->sizes, st, 0), view(CUF_X, cdt, rank, x->sizes, st, 0),
             p->scale, 0, 0);
    } else {
        finish_in_y(b, y, st, p->scale, 0);
    }
}

/* R2C and C2R: the work arrays hold the dims in the order perm (the
 * onesided dim dl last), contiguous; a view of one in the launch's dim
 * order has the permuted strides. */
static void plan_half(builder *b, const gfp_fft_params *p, const gfp_tensor *x,
                      const gfp_tensor *y) {
    int rank = x->rank, dl = p->dims[p->n_dims - 1];
    bool r2c = p->kind == GFP_FFT_R2C;
    int32_t cdt = r2c ? y->dtype : x->dtype, rdt = part_of(cdt);
    const int64_t *csz = r2c ? y->sizes : x->sizes; /* the complex side, onesided */
    const int64_t *rsz = r2c ? x->sizes : y->sizes; /* the real side */
    int64_t n = rsz[dl], h = csz[dl];
    int perm[GFP_MAX_RANK], pos[GFP_MAX_RANK], k = 0;
    for (int d = 0; d < rank; d++)
        if (d != dl) perm[k++] = d;
    perm[rank - 1] = dl;
    for (k = 0; k < rank; k++) pos[perm[k]] = k;
    int64_t cp[GFP_MAX_RANK] = {0}, rp[GFP_MAX_RANK] = {0}, cps[GFP_MAX_RANK] = {0},
            rps[GFP_MAX_RANK] = {0}, co[GFP_MAX_RANK] = {0}, ro[GFP_MAX_RANK] = {0};
    for (k = 0; k < rank; k++) {
        cp[k] = csz[perm[k]];
        rp[k] = rsz[perm[k]];
    }
    contiguous(b, rank, cp, cps);
    contiguous(b, rank, rp, rps);
    for (int d = 0; d < rank; d++) {
        co[d] = cps[pos[d]];
        ro[d] = rps[pos[d]];
    }
    int64_t nc = numel(b, rank, cp), nr = numel(b, rank, rp);
    /* With dl the last dim the work arrays' order is the launch's: a
     * contiguous x (R2C) is read in place of work array 0, a contiguous y
     * is written in place of the last one. */
    bool last = dl == rank - 1;
    bool x_in_place = last && r2c && dense(x), y_in_place = last && dense(y);
    cuf_exec e;
    memset(&e, 0, sizeof e);
    e.dbl = cdt == GFP_C128;
    e.n = n;
    e.batch = n ? nr / n : 0;
    e.istride = e.ostride = 1;
    e.reps = 1;
    if (r2c) {
        /* Forward transforms throughout; the inverse's +1 is the conjugate. */
        int32_t rin = x_in_place ? CUF_X : CUF_W0, cout = y_in_place ? CUF_Y : CUF_W1;
        if (!x_in_place) {
            use_work(b->p, CUF_W0, rdt, nr);
            move(b, view(CUF_W0, rdt, rank, rsz, ro, 0), view_of(CUF_X, x), 1.0, 0, 0);
        }
        if (!y_in_place) use_work(b->p, CUF_W1, cdt, nc);
        if (n == 1) {
            move(b, view(cout, cdt, rank, cp, cps, 0), view(rin, rdt, rank, rp, rps, 0), 1.0, 0, 0);
        } else {
            e.type = CUF_R2C;
            e.sign = -1;
            e.idist = n;
            e.odist = h;
            e.in = rin;
            e.out = cout;
            exec(b, &e);
        }
        for (uint32_t i = 0; i + 1 < p->n_dims; i++)
            transform_dim(b, cout, cout, cdt, rank, cp, pos[p->dims[i]], -1, nc);
        if (y_in_place)
            finish_in_y(b, y, cps, p->scale, p->inverse ? 1 : 0);
        else
            move(b, view_of(CUF_Y, y), view(CUF_W1, cdt, rank, csz, co, 0), p->scale,
                 p->inverse ? 1 : 0, 0);
        return;
    }
    /* C2R: inverse transforms throughout; the forward's -1 conjugates x. */
    int32_t rout = y_in_place ? CUF_Y : CUF_W1;
    use_work(b->p, CUF_W0, cdt, nc);
    if (!y_in_place) use_work(b->p, CUF_W1, rdt, nr);
    move(b, view(CUF_W0, cdt, rank, csz, co, 0), view_of(CUF_X, x), 1.0, p->inverse ? 0 : 1, 0);
    for (uint32_t i = 0; i + 1 < p->n_dims; i++)
        transform_dim(b, CUF_W0, CUF_W0, cdt, rank, cp, pos[p->dims[i]], 1, nc);
    /* Bin 0 and, for even n, bin n/2 (the last, h - 1) keep their real parts. */
    int64_t bin[GFP_MAX_RANK];
    memcpy(bin, cp, sizeof bin);
    bin[rank - 1] = 1;
    cuf_view dc = view(CUF_W0, cdt, rank, bin, cps, 0);
    move(b, dc, dc, 1.0, 0, 1);
    if (n % 2 == 0 && h > 1) {
        cuf_view ny = view(CUF_W0, cdt, rank, bin, cps, h - 1);
        move(b, ny, ny, 1.0, 0, 1);
    }
    if (n == 1) {
        move(b, view(rout, rdt, rank, rp, rps, 0), view(CUF_W0, cdt, rank, cp, cps, 0), 1.0, 0, 1);
    } else {
        e.type = CUF_C2R;
        e.sign = 1;
        e.idist = h;
        e.odist = n;
        e.in = CUF_W0;
        e.out = rout;
        exec(b, &e);
    }
    if (y_in_place) finish_in_y(b, y, rps, p->scale, 0);
    else move(b, view_of(CUF_Y, y), view(CUF_W1, rdt, rank, rsz, ro, 0), p->scale, 0, 0);
}

int cuf_plan_make(const gfp_fft_params *p, const gfp_tensor *x, const gfp_tensor *y,
                  cuf_plan *plan) {
    memset(plan, 0, sizeof *plan);
    builder b = {plan, 0};
    if (p->kind == GFP_FFT_C2C) plan_c2c(&b, p, x, y);
    else plan_half(&b, p, x, y);
    return b.bad ? -1 : 0;
}
