/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_api.c — a libFuzzer target over graft's public API.
 *
 * The input is a little program: each byte group picks an action (create a
 * tensor, take a view, run an op, write in place, differentiate, register a
 * hook, open or close a scope) and its arguments (pool slots, dims, sizes,
 * dtypes, scalars; sizes and indices include the int64 and dtype extremes).
 * Results go into a small pool of tensors the target owns. Every call must
 * either work or fail with an error: the sanitizers catch memory and
 * undefined-behaviour errors, and after each input the target checks that
 * the device's bytes in use are back at their baseline (graft keeps leaked
 * storage reachable, so LeakSanitizer cannot see a leaked tensor).
 *
 * The device is the default one: run with GRAFT_PLUGINS / GRAFT_DEVICE set
 * (scripts/graft.sh fuzz runs it on the reference and cpu_onednn plugins).
 *
 * Sizes are kept small where they would be materialised: a pooled tensor
 * spans at most CAP elements (sizes with 0 read as 1), so no op on pooled
 * tensors can allocate more than a few MiB; arguments that would make a
 * larger tensor are still passed where graft must refuse them (products past
 * 2^59), and the result is not kept.
 *
 * Saved-tensor hooks of four kinds (keeping the very tensor they get, a
 * copy, a detached alias kept in the open scope, and one whose pack fails)
 * are pushed and popped by the input, so every op and in-place op may run
 * under them, inside a scope or not; after each input every pack must have
 * been released. Memory adopted from the host (gf_from_host_memory, with a
 * release callback) must be given back by the end of each input, and
 * Autocast regions open and close between ops (all closed after each
 * input, so no cached cast outlives it), and a GradScaler drives the
 * optimisers now and then. The Jacobian transforms (jacrev, jacfwd, their
 * chunked _ex forms, hessian) run on small pooled tensors on each path.
 * Graph captures open and close between actions
 * (every other action may run inside one, including what a region must
 * refuse); two captured graphs are replayed, fed new values in place,
 * destroyed, or outlived by their outputs; after each input every graph's
 * pool must be given back.
 * gf_gradcheck / gf_gradgradcheck run on pooled tensors with functions that
 * work, fail, or return an integer output. Optimisers (SGD, Adam/AdamW,
 * RMSprop, Adagrad, Adadelta, NAdam, RAdam) step pooled tensors with
 * whatever gradients they hold, and load their state dicts back with the
 * param_groups metadata replaced or cut short.
 * Inside a scope, results (gf_tensor_grad's too) are released by hand, which
 * graft must refuse. Modules (Linear, Sequential) run on pooled tensors and
 * load their own state dicts, altered; recurrent, attention and encoder
 * layers run on them with pooled states and masks.
 *
 * Patterns left out, each a known defect fixed separately:
 *  - gf_scope_keep of a tensor recorded in an enclosing scope (a nested scope
 *    keeping an outer tensor): scopes here are never nested.
 *  - custom functions (once_differentiable name): not used.
 *  - gf_tensor_set_grad(t, t or a view of t): not used.
 *  - in-place ops on a view that was itself made a requires-grad leaf:
 *    requires_grad is set only on tensors made by a creation function. */
#define _POSIX_C_SOURCE 200809L
#include <graft.h>
#if defined(__has_include)
#if __has_include(<dlpack/dlpack.h>)
#include <graft/dlpack.h>
#define FUZZ_HAVE_DLPACK 1
#endif
#endif
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define POOL 8
#define CAP 256

typedef struct reader {
    const uint8_t *p;
    size_t n;
} reader;

/* FUZZ_TRACE=1 in the environment prints every choice (to read a finding). */
static bool trace;

static uint8_t u8(reader *r) {
    if (!r->n) return 0;
    r->n--;
    return *r->p++;
}
static int pick(reader *r, int n) {
    int v = n > 0 ? u8(r) % n : 0;
    if (trace) fprintf(stderr, " %d/%d", v, n);
    return v;
}

static const int64_t k_ints[] = {0, 1, 2, 3, 4, 5, -1, -2, -3, 1, 2,
                                 INT64_MAX, INT64_MIN, INT64_MAX - 1, INT64_MIN + 1,
                                 INT32_MAX, INT32_MIN, INT64_C(1) << 40, -(INT64_C(1) << 40),
                                 INT64_C(1) << 62, INT64_C(1) << 31};
static const double k_dbls[] = {0.0, 1.0, -1.0, 0.5, 2.0, -2.5, 3.0, 1e-3, 100.0,
                                NAN, INFINITY, -INFINITY, 1e10, -1e10, 3e9, 9.3e18,
                                -9.3e18, 1e300, 2147483647.0, -2147483648.0, 4e-320};

/* Small non-negative sizes mostly; sometimes an extreme. */
static int64_t size_arg(reader *r) {
    uint8_t b = u8(r);
    if (b < 200) return b % 5;
    return k_ints[b % (sizeof k_ints / sizeof k_ints[0])];
}
static int64_t int_arg(reader *r) { return k_ints[pick(r, sizeof k_ints / sizeof k_ints[0])]; }
static double dbl_arg(reader *r) { return k_dbls[pick(r, sizeof k_dbls / sizeof k_dbls[0])]; }
static int dim_arg(reader *r) { return pick(r, 11) - 5; }
static gf_dtype dtype_arg(reader *r) {
    static const gf_dtype d[] = {GF_F32, GF_F64, GF_I32, GF_I64, GF_BOOL, GF_F32, GF_F64,
                                 GF_F16, GF_BF16};
    /* the 16-bit floats rarely: where the device does not store them every
     * call must refuse them */
    int i = pick(r, 32);
    if (i == 9) return GF_C64; /* the complex dtypes as rarely as the 16-bit ones */
    if (i == 10) return GF_C128;
    return i < 7 ? d[i] : i == 7 ? GF_F16 : i == 8 ? GF_BF16 : d[i % 7];
}

static gf_tensor *pool[POOL];
static bool fresh[POOL]; /* made by a creation function: owns its storage */
static int scope_depth;
static gf_device *dev;
static uint64_t baseline;

/* Saturating product of the sizes with 0 read as 1 (what graft bounds). */
static uint64_t span_of(const int64_t *s, int rank) {
    uint64_t p = 1;
    for (int i = 0; i < rank; i++) {
        uint64_t v = s[i] > 1 ? (uint64_t)s[i] : 1;
        if (s[i] < 0) return 0; /* an error: fine to pass */
        if (p > (UINT64_C(1) << 62) / v) return UINT64_C(1) << 62;
        p *= v;
    }
    return p;
}
/* Sizes graft may be asked to build: small, or certainly refused. */
static bool sizes_ok(const int64_t *s, int rank) {
    uint64_t sp = span_of(s, rank);
    return sp <= CAP || sp >= (UINT64_C(1) << 59);
}

/* Tensors that may get a .grad (made leaves requiring grad, retain_grad, or
 * given one): a .grad made with create_graph refers to a graph that refers
 * to its tensor (the reference cycle PyTorch warns about), so, as
 * docs/autograd.md asks, the target clears them after each input, even when
 * the pool no longer holds them. */
#define TRACKED 32
static gf_tensor *tracked[TRACKED];
static int n_tracked;

/* False when t cannot be tracked (then the caller does not give it a .grad). */
static bool track(gf_tensor *t) {
    for (int i = 0; i < n_tracked; i++)
        if (tracked[i] == t) return true;
    if (n_tracked == TRACKED) return false;
    tracked[n_tracked++] = gf_tensor_retain(t);
    return true;
}

/* Whether the pool or the tracked list holds t. */
static bool held_by_target(const gf_tensor *t) {
    for (int i = 0; i < POOL; i++)
        if (pool[i] == t) return true;
    for (int i = 0; i < n_tracked; i++)
        if (tracked[i] == t) return true;
    return false;
}

static void drop(gf_tensor *t) {
    if (t) gf_tensor_set_grad(t, NULL);
    gf_tensor_release(t);
}

static void put_as(gf_tensor *t, bool is_fresh) {
    if (!t) return;
    if (scope_depth) gf_scope_keep(t); /* from the (only) scope: the pool owns it */
    if (span_of(gf_tensor_sizes(t), gf_tensor_rank(t)) > CAP) {
        gf_tensor_release(t);
        return;
    }
    int i = 0;
    while (i < POOL && pool[i]) i++;
    if (i == POOL) {
        i = (int)(gf_tensor_numel(t) % POOL);
        drop(pool[i]);
    }
    pool[i] = t;
    fresh[i] = is_fresh;
}
static void put(gf_tensor *t) { put_as(t, false); }
static void put_fresh(gf_tensor *t) { put_as(t, true); }
static int slot(reader *r) { return pick(r, POOL); }
static gf_tensor *get(reader *r) { return pool[slot(r)]; }

/* ------------------------------------------------------------ hooks */
static gf_tensor *hook_scale(const gf_tensor *grad, void *user) {
    (void)user;
    gf_tensor *g = gf_mul_scalar(grad, 2.0);
    return gf_scope_keep(g);
}
static gf_tensor *hook_none(const gf_tensor *grad, void *user) {
    (void)grad, (void)user;
    return NULL;
}
static void hook_post(gf_tensor *t, void *user) {
    (void)user;
    gf_tensor_release(gf_scope_keep(gf_tensor_grad(t)));
}
static gf_status hook_pre(const char *name, gf_tensor **g, int n, void *user) {
    (void)name;
    if (user) return GF_ERR_INVALID; /* a failing hook: backward must fail cleanly */
    if (n > 0 && g[0]) {
        gf_tensor *z = gf_zeros_like(g[0]);
        if (z) {
            gf_scope_keep(z);
            gf_tensor_release(g[0]);
            g[0] = z;
        }
    }
    return GF_OK;
}

/* Saved-tensor hooks: every pack must be released by the end of an input. */
static long packs, pack_releases;
static void *pack_keep(const gf_tensor *t, void *user) {
    (void)user;
    packs++;
    return gf_tensor_retain((gf_tensor *)t);
}
static void *pack_copy(const gf_tensor *t, void *user) {
    (void)user;
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    gf_tensor *c = gf_clone(t);
    gf_grad_mode_set(prev);
    if (c) packs++;
    return c;
}
static void *pack_detach_kept(const gf_tensor *t, void *user) {
    (void)user;
    gf_tensor *d = gf_scope_keep(gf_detach(t));
    if (d) packs++;
    return d;
}
static void *pack_fail(const gf_tensor *t, void *user) {
    (void)t, (void)user;
    return NULL; /* the op that saves must fail cleanly */
}
static gf_tensor *unpack_tensor(void *p, void *user) {
    (void)user;
    return gf_tensor_retain((gf_tensor *)p);
}
static gf_tensor *unpack_detached(void *p, void *user) {
    (void)user;
    return gf_detach((gf_tensor *)p);
}
static void release_tensor(void *p, void *user) {
    (void)user;
    pack_releases++;
    gf_tensor_release((gf_tensor *)p);
}
static int hooks_depth;

/* Host memory adopted by graft: each buffer is freed by its release. */
static long adopted, adopted_released;
static void adopt_release(void *ctx) {
    adopted_released++;
    free(ctx);
}

/* ------------------------------------------------------------ actions */
static void act_create(reader *r) {
    int rank = pick(r, 5);
    int64_t s[GF_MAX_RANK];
    for (int i = 0; i < rank; i++) s[i] = size_arg(r);
    gf_dtype dt = dtype_arg(r);
    if (!sizes_ok(s, rank)) return;
    switch (pick(r, 7)) {
    case 0: put_fresh(gf_zeros(s, rank, dt, NULL)); break;
    case 1: put_fresh(gf_ones(s, rank, dt, NULL)); break;
    case 2: put_fresh(gf_full(s, rank, dbl_arg(r), dt, NULL)); break;
    case 3: put_fresh(gf_rand(s, rank, dt, NULL)); break;
    case 4: put_fresh(gf_randn(s, rank, dt, NULL)); break;
    case 5: {
        double a = pick(r, 4), b = a + pick(r, 40), st = 1 + pick(r, 3);
        put_fresh(gf_arange(a, b, st, dt, NULL));
        break;
    }
    default: {
        /* from host data, through the copying and the adopting paths */
        uint64_t n = span_of(s, rank);
        if (n > CAP) {
            put_fresh(gf_from_data(NULL, s, rank, dt, NULL));
            break;
        }
        double buf[2 * CAP]; /* c128: two doubles per element */
        for (uint64_t i = 0; i < n; i++) buf[i] = (double)(int8_t)u8(r) / 4.0;
        if (dt == GF_C128 || dt == GF_C64) /* (re, im) pairs: im from more bytes */
            for (uint64_t i = n; i-- > 0;) buf[2 * i] = buf[i], buf[2 * i + 1] = (double)(int8_t)u8(r) / 8.0;
        if (dt == GF_BOOL)
            for (uint64_t i = 0; i < n; i++) ((uint8_t *)buf)[i] = buf[i] > 0;
        else if (dt == GF_I32)
            for (uint64_t i = 0; i < n; i++) ((int32_t *)buf)[i] = (int32_t)buf[i];
        else if (dt == GF_I64)
            for (uint64_t i = 0; i < n; i++) ((int64_t *)buf)[i] = (int64_t)buf[i];
        else if (dt == GF_F32)
            for (uint64_t i = 0; i < n; i++) ((float *)buf)[i] = (float)buf[i];
        else if (dt == GF_C64)
            for (uint64_t i = 0; i < 2 * n; i++) ((float *)buf)[i] = (float)buf[i];
        if (pick(r, 2)) {
            put_fresh(gf_from_data(buf, s, rank, dt, NULL));
            break;
        }
        /* adopted: graft shares the memory and calls release when done */
        size_t es = gf_dtype_size(dt), nb = (size_t)(n ? n : 1) * (es ? es : 1);
        void *mem = malloc(nb);
        if (!mem) break;
        memcpy(mem, buf, nb < sizeof buf ? nb : sizeof buf);
        gf_tensor *t = gf_from_host_memory(mem, s, NULL, rank, dt, NULL, adopt_release, mem);
        if (t) adopted++;
        else free(mem); /* on failure the memory stays the caller's */
        put_fresh(t);
    }
    }
}

static void act_view(reader *r) {
    gf_tensor *t = get(r);
    if (!t) return;
    int64_t s[GF_MAX_RANK];
    int rank = pick(r, 5);
    for (int i = 0; i < rank; i++) s[i] = pick(r, 8) == 0 ? -1 : size_arg(r);
    switch (pick(r, 19)) {
    case 0: put(gf_reshape(t, s, rank)); break;
    case 1: put(gf_view(t, s, rank)); break;
    case 2:
        if (sizes_ok(s, rank)) put(gf_expand(t, s, rank));
        break;
    case 3: put(gf_transpose(t, dim_arg(r), dim_arg(r))); break;
    case 4: {
        int d[GF_MAX_RANK];
        for (int i = 0; i < gf_tensor_rank(t); i++) d[i] = dim_arg(r);
        if (pick(r, 2))
            for (int i = 0; i < gf_tensor_rank(t); i++) d[i] = gf_tensor_rank(t) - 1 - i;
        put(gf_permute(t, d, gf_tensor_rank(t)));
        break;
    }
    case 5: put(gf_slice(t, dim_arg(r), int_arg(r), int_arg(r), int_arg(r))); break;
    case 6: put(gf_narrow(t, dim_arg(r), int_arg(r), int_arg(r))); break;
    case 7: put(gf_select(t, dim_arg(r), int_arg(r))); break;
    case 8: put(gf_squeeze(t, dim_arg(r))); break;
    case 9: put(gf_unsqueeze(t, dim_arg(r))); break;
    case 10: put(gf_diagonal(t, int_arg(r), dim_arg(r), dim_arg(r))); break;
    case 11: put(gf_flatten(t)); break;
    case 12: put(gf_squeeze_all(t)); break;
    case 13: {
        gf_tensor *out[4] = {0};
        int n = 0;
        gf_status st = pick(r, 2) ? gf_split(t, int_arg(r), dim_arg(r), out, 4, &n)
                                  : gf_chunk(t, (int)int_arg(r), dim_arg(r), out, 4, &n);
        if (st == GF_OK && (n < 0 || n > 4)) abort(); /* a count outside the array */
        for (int i = 0; st == GF_OK && i < n; i++) put(out[i]);
        break;
    }
    case 14: put(gf_contiguous(t)); break;
    case 15: put(gf_flatten_dims(t, dim_arg(r), dim_arg(r))); break;
    case 16: put(gf_unflatten(t, dim_arg(r), s, rank)); break;
    case 17:
        put(pick(r, 2) ? gf_pixel_shuffle(t, pick(r, 4) ? pick(r, 4) : int_arg(r))
                       : gf_pixel_unshuffle(t, pick(r, 4) ? pick(r, 4) : int_arg(r)));
        break;
    default: put(gf_detach(t)); break;
    }
}

static void act_unary(reader *r) {
    gf_tensor *t = get(r);
    if (!t) return;
    switch (pick(r, 27)) {
    case 0: put(gf_neg(t)); break;
    case 1: put(gf_abs(t)); break;
    case 2: put(gf_exp(t)); break;
    case 3: put(gf_log(t)); break;
    case 4: put(gf_sqrt(t)); break;
    case 5: put(gf_tanh(t)); break;
    case 6: put(gf_sigmoid(t)); break;
    case 7: put(gf_relu(t)); break;
    case 8: put(gf_gelu(t, pick(r, 2))); break;
    case 9: put(gf_clamp(t, dbl_arg(r), dbl_arg(r))); break;
    case 10: put(gf_pow_scalar(t, dbl_arg(r))); break;
    case 11: put(gf_round(t)); break;
    case 12: put(gf_sign(t)); break;
    case 13: put(gf_square(t)); break;
    case 14: put(gf_to_dtype(t, dtype_arg(r))); break;
    case 15: put(gf_softplus(t, dbl_arg(r), dbl_arg(r))); break;
    case 16: put(gf_leaky_relu(t, dbl_arg(r))); break;
    case 17: put(gf_logical_not(t)); break;
    case 18: put(gf_dropout(t, dbl_arg(r), pick(r, 2))); break;
    case 19: put(gf_clone(t)); break;
    case 20: put(gf_tril(t, int_arg(r))); break;
    case 21: put(gf_triu(t, int_arg(r))); break;
    case 22: put(gf_elu(t, dbl_arg(r))); break;
    case 23: put(pick(r, 2) ? gf_rand_like(t) : gf_randn_like(t)); break;
    case 24: put(gf_randint_like(t, int_arg(r), int_arg(r))); break;
    case 25: {
        /* num_samples small, or an extreme graft must refuse (not 2^31
         * samples with replacement: a legal 16 GB request) */
        int64_t ns = pick(r, 2) ? 1 + pick(r, 4) : int_arg(r);
        if (sizes_ok(&ns, 1)) put(gf_multinomial(t, ns, pick(r, 2)));
        break;
    }
    default: put(gf_reciprocal(t)); break;
    }
}

static void act_binary(reader *r) {
    gf_tensor *a = get(r), *b = get(r);
    if (!a) return;
    switch (pick(r, 25)) {
    case 0: put(gf_add(a, b)); break;
    case 1: put(gf_sub(a, b)); break;
    case 2: put(gf_mul(a, b)); break;
    case 3: put(gf_div(a, b)); break;
    case 4: put(gf_pow(a, b)); break;
    case 5: put(gf_maximum(a, b)); break;
    case 6: put(gf_lt(a, b)); break;
    case 7: put(gf_eq(a, b)); break;
    case 8: put(gf_logical_and(a, b)); break;
    case 9: put(gf_where(a, b, get(r))); break;
    case 10: put(gf_masked_fill(a, b, dbl_arg(r))); break;
    case 11: put(gf_matmul(a, b)); break;
    case 12: put(gf_add_scalar(a, dbl_arg(r))); break;
    case 13: put(gf_mul_scalar(a, dbl_arg(r))); break;
    case 14: put(gf_rsub_scalar(a, dbl_arg(r))); break;
    case 15: put(gf_div_scalar(a, dbl_arg(r))); break;
    case 16: put(gf_lt_scalar(a, dbl_arg(r))); break;
    case 17: put(gf_mse_loss(a, b, (gf_reduction)pick(r, 4))); break;
    case 19: put(gf_add_alpha(a, b, dbl_arg(r))); break;
    case 20: put(gf_sub_alpha(a, b, dbl_arg(r))); break;
    case 21: put(gf_dot(a, b)); break;
    case 22: put(gf_vdot(a, b)); break;
    case 23: put(gf_outer(a, b)); break;
    case 18: {
        gf_tensor *ts[3] = {a, b, get(r)};
        put(gf_cat(ts, 1 + pick(r, 3), dim_arg(r)));
        break;
    }
    default: {
        gf_tensor *ts[3] = {a, b, get(r)};
        put(gf_stack(ts, 1 + pick(r, 3), dim_arg(r)));
    }
    }
}

static void act_reduce(reader *r) {
    gf_tensor *t = get(r);
    if (!t) return;
    int dims[3] = {dim_arg(r), dim_arg(r), dim_arg(r)};
    int nd = pick(r, 4);
    bool keep = pick(r, 2);
    const int *dp = pick(r, 4) ? dims : NULL;
    switch (pick(r, 14)) {
    case 0: put(gf_sum(t, dp, nd, keep)); break;
    case 1: put(gf_mean(t, dp, nd, keep)); break;
    case 2: put(gf_prod(t, dp, nd, keep)); break;
    case 3: put(gf_amax(t, dp, nd, keep)); break;
    case 4: put(gf_amin(t, dp, nd, keep)); break;
    case 5: put(gf_var(t, dp, nd, dbl_arg(r), keep)); break;
    case 6: put(gf_std(t, dp, nd, dbl_arg(r), keep)); break;
    case 7: put(gf_logsumexp(t, dp, nd, keep)); break;
    case 8: put(gf_softmax(t, dims[0])); break;
    case 9: put(gf_log_softmax(t, dims[0])); break;
    case 10: put(gf_argmax(t, pick(r, 3) ? dims[0] : GF_DIM_ALL, keep)); break;
    case 11: {
        gf_tensor *v = NULL, *i = NULL;
        if ((pick(r, 2) ? gf_max_dim(t, dims[0], keep, &v, &i)
                        : gf_min_dim(t, dims[0], keep, &v, &i)) == GF_OK) {
            put(v);
            put(i);
        }
        break;
    }
    case 12: {
        double v;
        int64_t idx[GF_MAX_RANK];
        for (int k = 0; k < GF_MAX_RANK; k++) idx[k] = pick(r, 3) ? pick(r, 3) : int_arg(r);
        gf_tensor_get(t, idx, &v);
        gf_tensor_item(t, &v);
        break;
    }
    default: {
        unsigned char host[CAP * 8];
        gf_tensor_to_host(t, host, sizeof host);
        break;
    }
    }
}

static void act_index(reader *r) {
    gf_tensor *x = get(r), *i = get(r);
    if (!x) return;
    switch (pick(r, 8)) {
    case 0: put(gf_index_select(x, dim_arg(r), i)); break;
    case 1: put(gf_gather(x, dim_arg(r), i)); break;
    case 2: put(gf_scatter_add(x, dim_arg(r), i, get(r))); break;
    case 3: put(gf_index_add(x, dim_arg(r), i, get(r))); break;
    case 4: put(gf_embedding(x, i)); break;
    case 5: {
        /* num_classes: small, inferred (when the values are small) or extreme */
        int64_t nc = pick(r, 3) ? pick(r, 6) - 1 : int_arg(r);
        if (nc > CAP && nc < (INT64_C(1) << 53)) break;
        if (nc == -1 && i) {
            gf_tensor *m = gf_amax(i, NULL, 0, false);
            double v = 1e300;
            if (m) gf_tensor_item(m, &v);
            if (scope_depth) gf_scope_keep(m);
            gf_tensor_release(m);
            if (v > CAP && v < 9e15) break;
        }
        put(gf_one_hot(i, nc));
        break;
    }
    case 6: put(gf_cross_entropy(x, i, pick(r, 2) ? get(r) : NULL, (gf_reduction)pick(r, 4),
                                 int_arg(r), pick(r, 2) ? 0.0 : dbl_arg(r)));
        break;
    default: put(gf_nll_loss(x, i, NULL, (gf_reduction)pick(r, 3), int_arg(r))); break;
    }
}

static int small_or_max(reader *r) {
    int b = pick(r, 8);
    return b < 7 ? b % 4 : INT32_MAX;
}

static void act_nn(reader *r) {
    gf_tensor *x = get(r), *w = get(r);
    if (!x) return;
    switch (pick(r, 7)) {
    case 0: {
        /* small geometry, or one extreme that graft must refuse: padding
         * 2^31 - 1 (an output past 2^59 elements) or dilation 2^31 - 1 (a
         * kernel past the input, unless it is 1x1); never a mix that would
         * make a real tensor of gigabytes */
        int mode = pick(r, 8), pad = pick(r, 3), dil = pick(r, 3), str = pick(r, 3);
        if (mode == 0) pad = INT32_MAX, dil = 1, str = 1;
        if (mode == 1) dil = INT32_MAX;
        gf_conv2d_opts o = {.stride = {str, str}, .padding = {pad, pad},
                            .dilation = {dil, dil}, .groups = pick(r, 3)};
        put(gf_conv2d(x, w, pick(r, 2) ? get(r) : NULL, pick(r, 4) ? &o : NULL));
        break;
    }
    case 1: {
        int64_t s[4];
        for (int i = 0; i < 4; i++) s[i] = size_arg(r);
        gf_conv2d_opts o = {.stride = {1 + pick(r, 2), 1}, .padding = {pick(r, 2), 0}};
        if (sizes_ok(s, 4))
            put(pick(r, 2) ? gf_conv2d_backward_input(x, w, s, &o)
                           : gf_conv2d_backward_weight(x, w, s, &o));
        break;
    }
    case 2: {
        int k = pick(r, 8) ? 1 + pick(r, 3) : INT32_MAX;
        gf_pool2d_opts o = {.kernel = {k, k}, .stride = {small_or_max(r), pick(r, 3)},
                            .padding = {pick(r, 2), 0}, .dilation = {pick(r, 3), pick(r, 3)},
                            .ceil_mode = pick(r, 2), .exclude_pad = pick(r, 2)};
        if (pick(r, 2)) {
            gf_tensor *idx = NULL;
            gf_tensor *y = gf_max_pool2d(x, &o, pick(r, 2) ? &idx : NULL);
            put(y);
            put(idx);
        } else {
            put(gf_avg_pool2d(x, &o));
        }
        break;
    }
    case 3: {
        gf_tensor *mean = NULL, *rstd = NULL;
        put(gf_layer_norm(x, pick(r, 4), pick(r, 2) ? w : NULL, pick(r, 2) ? get(r) : NULL,
                          pick(r, 2) ? 1e-5 : dbl_arg(r), pick(r, 2) ? &mean : NULL,
                          pick(r, 2) ? &rstd : NULL));
        put(mean);
        put(rstd);
        break;
    }
    case 4: {
        gf_tensor *sm = NULL, *si = NULL;
        put(gf_batch_norm(x, NULL, NULL, pick(r, 2) ? w : NULL, NULL, true, 0.1, 1e-5,
                          pick(r, 2) ? &sm : NULL, pick(r, 2) ? &si : NULL));
        put(sm);
        put(si);
        break;
    }
    case 5: put(gf_silu(x)); break;
    default: put(gf_erf(x)); break;
    }
}

static void act_inplace(reader *r) {
    gf_tensor *t = get(r), *o = get(r);
    if (!t) return;
    switch (pick(r, 32)) {
    case 17: gf_leaky_relu_(t, dbl_arg(r)); break;
    case 18: gf_elu_(t, dbl_arg(r)); break;
    case 19: gf_celu_(t, dbl_arg(r)); break;
    case 20: gf_selu_(t); break;
    case 21: gf_hardtanh_(t, dbl_arg(r), dbl_arg(r)); break;
    case 22: gf_relu6_(t); break;
    case 23: gf_silu_(t); break;
    case 24: gf_gelu_(t, pick(r, 2)); break;
    case 25: gf_hardsigmoid_(t); break;
    case 26: gf_hardswish_(t); break;
    case 27: gf_mish_(t); break;
    case 28: gf_add_alpha_(t, o, dbl_arg(r)); break;
    case 29: gf_sub_alpha_(t, o, dbl_arg(r)); break;
    case 30:
        if (pick(r, 2)) gf_init_orthogonal_(t, dbl_arg(r));
        else gf_init_trunc_normal_(t, dbl_arg(r), dbl_arg(r), dbl_arg(r), dbl_arg(r));
        break;
    case 12: gf_sigmoid_(t); break;
    case 13: gf_tanh_(t); break;
    case 14: gf_mul_scalar_(t, dbl_arg(r)); break;
    case 15: gf_index_add_(t, dim_arg(r), o, get(r)); break;
    case 16: gf_scatter_add_(t, dim_arg(r), o, get(r)); break;
    case 0: gf_add_(t, o); break;
    case 1: gf_mul_(t, o); break;
    case 2: gf_sub_(t, o); break;
    case 3: gf_div_(t, o); break;
    case 4: gf_add_scalar_(t, dbl_arg(r)); break;
    case 5: gf_clamp_(t, dbl_arg(r), dbl_arg(r)); break;
    case 6: gf_relu_(t); break;
    case 7: gf_fill_(t, dbl_arg(r)); break;
    case 8: gf_zero_(t); break;
    case 9: gf_copy_(t, o); break;
    case 10: gf_masked_fill_(t, o, dbl_arg(r)); break;
    default: gf_exp_(t); break;
    }
}

static void act_autograd(reader *r) {
    int k = slot(r);
    gf_tensor *t = pool[k];
    if (!t) return;
    switch (pick(r, 12)) {
    case 10: {
        /* forward mode: levels opened and closed (the wrong one too),
         * duals of pooled tensors with pooled tangents of any shape */
        int lv = -1;
        switch (pick(r, 4)) {
        case 0: gf_fwad_level_enter(pick(r, 8) ? &lv : NULL); break;
        case 1: gf_fwad_level_exit(gf_fwad_level_count() - 1); break;
        case 2: gf_fwad_level_exit(pick(r, 4) - 1); break;
        default:
            put(gf_fwad_make_dual(t, get(r), pick(r, 2) ? GF_FWAD_LEVEL_CURRENT : pick(r, 3)));
            break;
        }
        break;
    }
    case 11: {
        gf_tensor *p = NULL, *tg = NULL;
        if (gf_fwad_unpack_dual(t, pick(r, 2) ? GF_FWAD_LEVEL_CURRENT : pick(r, 3),
                                pick(r, 4) ? &p : NULL, &tg) == GF_OK) {
            put(p);
            put(tg);
        }
        break;
    }
    case 0:
        /* leaves only on tensors a creation function made; turned off
         * again now and then (then used in place with operands from its
         * old graph: x.div_(x.sum())) */
        if (fresh[k] && track(t)) gf_tensor_set_requires_grad(t, pick(r, 4) != 0);
        break;
    case 1: {
        gf_backward_opts o = {.retain_graph = pick(r, 3) - 1, .create_graph = pick(r, 2)};
        gf_tensor *s = gf_sum(t, NULL, 0, false);
        /* grad_output: none, or a pooled tensor (t itself included) */
        gf_tensor *go = pick(r, 3) ? NULL : get(r);
        gf_backward(pick(r, 2) ? s : t, go, &o);
        if (scope_depth) gf_scope_keep(s);
        gf_tensor_release(s);
        break;
    }
    case 2: {
        gf_tensor *in = get(r);
        gf_tensor *res[2] = {0};
        gf_tensor *ins[2] = {in, get(r)};
        gf_grad_opts o = {.retain_graph = pick(r, 3) - 1, .create_graph = pick(r, 2),
                          .allow_unused = pick(r, 2), .materialize_grads = pick(r, 2)};
        if (gf_grad(&t, 1, NULL, ins, 1 + pick(r, 2), res, &o) == GF_OK) {
            put(res[0]);
            put(res[1]);
        }
        break;
    }
    case 3: {
        gf_tensor *g = gf_tensor_grad(t);
        /* inside a scope, the reflex of a C programmer: releasing what graft
         * returned (the .grad slot holds it too); graft must refuse it. Not
         * when the target holds a reference of its own to that tensor (in
         * the pool or tracked): a release then cannot be told from the
         * release of that reference (graft/tensor.h), and the target would
         * go on using both. */
        if (g && scope_depth && !held_by_target(g) && pick(r, 2)) gf_tensor_release(g);
        put(g);
        break;
    }
    case 4:
        switch (pick(r, 5)) {
        case 0: gf_tensor_register_hook(t, hook_scale, NULL); break;
        case 1: gf_tensor_register_hook(t, hook_none, NULL); break;
        case 2: gf_tensor_register_post_accumulate_hook(t, hook_post, NULL); break;
        case 3: gf_node_register_pre_hook(t, hook_pre, pick(r, 4) ? NULL : (void *)1); break;
        default: gf_hook_remove((gf_hook_handle)pick(r, 40)); break;
        }
        break;
    case 5:
        if (track(t)) gf_tensor_retain_grad(t);
        break;
    case 6: gf_grad_mode_set((gf_grad_mode)pick(r, 3)); break;
    case 7: {
        /* a grad of another (non-aliasing) pooled tensor */
        gf_tensor *g = get(r);
        if (g && !gf_tensor_shares_storage(g, t) && track(t))
            gf_tensor_set_grad(t, pick(r, 4) ? g : NULL);
        break;
    }
    case 8: put(gf_detach(t)); break;
    default: gf_tensor_is_leaf(t); gf_tensor_grad_fn_name(t); gf_tensor_version(t); break;
    }
}

static void act_hooks(reader *r) {
    static const gf_saved_tensor_hooks kinds[] = {
        {pack_keep, unpack_tensor, release_tensor, NULL},
        {pack_copy, unpack_detached, release_tensor, NULL},
        {pack_detach_kept, unpack_tensor, release_tensor, NULL},
        {pack_fail, unpack_tensor, release_tensor, NULL},
    };
    if (hooks_depth && pick(r, 2)) {
        if (gf_saved_tensor_hooks_pop() == GF_OK) hooks_depth--;
        return;
    }
    if (gf_saved_tensor_hooks_push(&kinds[pick(r, 4)]) == GF_OK) hooks_depth++;
}

/* Functions for gradcheck: a smooth one, one that fails, one with an
 * integer output (refused, naming its dtype), one of two inputs. */
static gf_tensor *check_exp_sum(gf_tensor *const *in, int n, void *user) {
    (void)n, (void)user;
    gf_tensor *e = gf_exp(in[0]);
    gf_tensor *s = e ? gf_sum(e, NULL, 0, false) : NULL;
    gf_tensor_release(e);
    return s;
}
static gf_tensor *check_fails(gf_tensor *const *in, int n, void *user) {
    (void)in, (void)n, (void)user;
    gf_set_error(GF_ERR_INVALID, "fuzz: the function under test fails");
    return NULL;
}
static gf_tensor *check_integer(gf_tensor *const *in, int n, void *user) {
    (void)n, (void)user;
    return gf_to_dtype(in[0], GF_I64);
}
static gf_tensor *check_mul(gf_tensor *const *in, int n, void *user) {
    (void)user;
    return gf_mul(in[0], in[n > 1 ? 1 : 0]);
}

/* The complex API: construction from parts, the views between complex and
 * real (sharing storage and version counter, refused for in-place writes
 * that autograd cannot follow), the parts, conjugation, reading elements. */
static void act_complex(reader *r) {
    gf_tensor *a = get(r);
    /* FFT lengths: torch's None, small, or ones graft must refuse (never a
     * legal zero-padding to gigabytes) */
    static const int64_t fl[] = {GF_FFT_SIZE_DEFAULT, 1, 2, 3, 5, 7, 8, 0, -2, INT64_MAX,
                                 INT64_MIN};
    switch (pick(r, 17)) {
    case 14: {
        int64_t n = fl[pick(r, 11)];
        int dim = dim_arg(r);
        gf_fft_norm norm = (gf_fft_norm)pick(r, 4);
        switch (pick(r, 6)) {
        case 0: put(gf_fft(a, n, dim, norm)); break;
        case 1: put(gf_ifft(a, n, dim, norm)); break;
        case 2: put(gf_rfft(a, n, dim, norm)); break;
        case 3: put(gf_irfft(a, n, dim, norm)); break;
        case 4: put(gf_hfft(a, n, dim, norm)); break;
        default: put(gf_ihfft(a, n, dim, norm)); break;
        }
        break;
    }
    case 15: {
        int64_t sz[3] = {fl[pick(r, 11)], fl[pick(r, 11)], fl[pick(r, 11)]};
        int dims[3] = {dim_arg(r), dim_arg(r), dim_arg(r)};
        int ns = pick(r, 4), nd = pick(r, 4);
        const int64_t *sp = pick(r, 3) ? sz : NULL;
        const int *dp = pick(r, 3) ? dims : NULL;
        gf_fft_norm norm = (gf_fft_norm)pick(r, 3);
        switch (pick(r, 9)) {
        case 7:
            put(pick(r, 2) ? gf_hfftn(a, sp, ns, dp, nd, norm) : gf_hfft2(a, sp, ns, dp, nd, norm));
            break;
        case 8:
            put(pick(r, 2) ? gf_ihfftn(a, sp, ns, dp, nd, norm)
                           : gf_ihfft2(a, sp, ns, dp, nd, norm));
            break;
        case 0: put(gf_fftn(a, sp, ns, dp, nd, norm)); break;
        case 1: put(gf_ifftn(a, sp, ns, dp, nd, norm)); break;
        case 2: put(gf_rfftn(a, sp, ns, dp, nd, norm)); break;
        case 3: put(gf_irfftn(a, sp, ns, dp, nd, norm)); break;
        case 4: put(gf_fftshift(a, dp, nd)); break;
        case 5: put(gf_ifftshift(a, dp, nd)); break;
        default:
            put_fresh(pick(r, 2) ? gf_fftfreq(fl[pick(r, 11)], dbl_arg(r), dtype_arg(r), NULL)
                                 : gf_rfftfreq(fl[pick(r, 11)], dbl_arg(r), dtype_arg(r), NULL));
            break;
        }
        break;
    }
    case 16: {
        /* stft of a, and istft of what it gave */
        static const int64_t nf[] = {1, 2, 4, 5, 8, 0, -1, INT64_MAX};
        int64_t n_fft = nf[pick(r, 8)];
        gf_stft_opts so = GF_STFT_OPTS_DEFAULT;
        if (pick(r, 2)) {
            so.hop_length = fl[pick(r, 11)], so.win_length = fl[pick(r, 11)];
            so.window = pick(r, 2) ? get(r) : NULL;
            so.center = pick(r, 2), so.pad_mode = (gf_pad_mode)pick(r, 4);
            so.normalized = pick(r, 2), so.onesided = pick(r, 3) - 1;
            so.return_complex = pick(r, 2);
            if (pick(r, 8) == 0) so.init = 0;
        }
        gf_tensor *sp = gf_stft(a, n_fft, &so);
        gf_tensor *mine = gf_tensor_retain(sp); /* put() drops what is too large */
        put(sp);
        if (mine && pick(r, 2)) {
            gf_istft_opts io = GF_ISTFT_OPTS_DEFAULT;
            io.center = so.center, io.normalized = so.normalized, io.onesided = so.onesided;
            put(gf_istft(mine, n_fft, &io));
        }
        gf_tensor_release(mine);
        break;
    }
    case 12: {
        /* a round trip through a file: .npy, .npz or safetensors (what a
         * format cannot hold is refused; a file graft wrote loads back) */
        static char path[64];
        if (!path[0]) snprintf(path, sizeof path, "/tmp/graft-fuzz-%ld", (long)getpid());
        if (!a) break;
        const char *nm[1] = {"t"};
        const gf_tensor *ts[1] = {a};
        gf_tensor_dict *d = NULL;
        switch (pick(r, 3)) {
        case 0:
            if (gf_save_npy(a, path) == GF_OK) put(gf_load_npy(path, NULL));
            break;
        case 1:
            if (gf_save_npz(nm, ts, 1, path) == GF_OK) d = gf_load_npz(path, NULL);
            break;
        default:
            if (gf_save_safetensors(nm, ts, 1, path) == GF_OK) d = gf_load_safetensors(path, NULL);
            break;
        }
        if (d) put(gf_tensor_retain(gf_tensor_dict_at(d, 0)));
        gf_tensor_dict_destroy(d);
        remove(path);
        break;
    }
    case 13: {
#if FUZZ_HAVE_DLPACK
        /* DLPack: exported and imported back (a view of the same memory) */
        DLManagedTensor *m = gf_to_dlpack(a);
        if (!m) break;
        gf_tensor *u = gf_from_dlpack(m, pick(r, 2) ? NULL : dev);
        if (!u) m->deleter(m); /* on failure the caller still owns it */
        put(u);
#endif
        break;
    }
    case 0: put(gf_complex(a, get(r))); break;
    case 1: put(gf_polar(a, get(r))); break;
    case 2: put(gf_view_as_real(a)); break;
    case 3: put(gf_view_as_complex(a)); break;
    case 4: put(gf_real(a)); break;
    case 5: put(gf_imag(a)); break;
    case 6: put(gf_conj(a)); break;
    case 7: put(gf_angle(a)); break;
    case 8: {
        int rank = pick(r, 4);
        int64_t s[GF_MAX_RANK];
        for (int i = 0; i < rank; i++) s[i] = size_arg(r);
        gf_dtype dt = pick(r, 4) ? (pick(r, 2) ? GF_C64 : GF_C128) : dtype_arg(r);
        if (sizes_ok(s, rank)) put_fresh(gf_randn_complex(s, rank, dt, NULL));
        break;
    }
    case 9: {
        double re, im;
        int64_t idx[GF_MAX_RANK] = {0};
        if (pick(r, 2)) gf_tensor_item_complex(a, pick(r, 2) ? &re : NULL, &im);
        else if (a && gf_tensor_numel(a) > 0) gf_tensor_get_complex(a, idx, &re, &im);
        break;
    }
    case 10: put(gf_to_dtype(a, pick(r, 2) ? GF_C64 : GF_C128)); break;
    default: {
        /* a real loss of a complex tensor: |z|^2 summed, backward through it */
        gf_tensor *ab = gf_abs(a), *sq = ab ? gf_square(ab) : NULL;
        gf_tensor *l = sq ? gf_sum(sq, NULL, 0, false) : NULL;
        if (l && gf_tensor_requires_grad(l)) gf_backward(l, NULL, NULL);
        put(l);
        if (!scope_depth) gf_tensor_release(ab), gf_tensor_release(sq);
    }
    }
}

static void act_check(reader *r) {
    static const gf_check_fn fns[] = {check_exp_sum, check_fails, check_integer, check_mul};
    gf_tensor *in[2] = {get(r), get(r)};
    if (!in[0] || !in[1]) return;
    /* gradcheck evaluates fn once per element and input: small tensors only */
    if (gf_tensor_numel(in[0]) > 16 || gf_tensor_numel(in[1]) > 16) return;
    gf_check_fn fn = fns[pick(r, 4)];
    int n = 1 + pick(r, 2);
    /* the defaults, or tolerances (0 included) and steps of any value */
    gf_gradcheck_opts o = GF_GRADCHECK_OPTS_DEFAULT;
    const gf_gradcheck_opts *op = NULL;
    if (pick(r, 4) == 0) {
        o.eps = dbl_arg(r), o.atol = dbl_arg(r), o.rtol = dbl_arg(r);
        o.skip_determinism = pick(r, 2);
        if (pick(r, 8) == 0) o.init = 0;
        op = &o;
    }
    if (pick(r, 2)) gf_gradcheck(fn, in, n, NULL, op);
    else gf_gradgradcheck(fn, in, n, NULL, op);
}

/* Functions for the Jacobian transforms (gf_func_fn): a smooth map of one
 * or two inputs with one or two outputs, one that fails, one that leaves
 * its output NULL, one that writes in place into a view of a fresh tensor
 * (the batched passes refuse it and the loop runs), one through pooling. */
/* GF_OK when every output was made (s GF_OK), else s or the last error,
 * with the outputs that were made released. */
static gf_status jac_done(gf_status s, gf_tensor **out, int no) {
    for (int j = 0; j < no && s == GF_OK; j++)
        if (!out[j]) s = gf_last_status();
    for (int j = 0; j < no && s != GF_OK; j++) gf_tensor_release(out[j]), out[j] = NULL;
    return s;
}
static gf_status jac_smooth(gf_tensor *const *in, int n, gf_tensor **out, int no, void *user) {
    (void)user;
    gf_scope_begin();
    out[0] = gf_scope_keep(gf_tanh(gf_mul(in[0], in[n > 1 ? 1 : 0])));
    if (no > 1) out[1] = gf_scope_keep(gf_sum(gf_exp(in[0]), NULL, 0, false));
    gf_scope_end();
    return jac_done(GF_OK, out, no);
}
static gf_status jac_fails(gf_tensor *const *in, int n, gf_tensor **out, int no, void *user) {
    (void)in, (void)n, (void)out, (void)no, (void)user;
    return gf_set_error(GF_ERR_INVALID, "fuzz: the transformed function fails");
}
static gf_status jac_null(gf_tensor *const *in, int n, gf_tensor **out, int no, void *user) {
    (void)in, (void)n, (void)out, (void)no, (void)user;
    return GF_OK;
}
static gf_status jac_inplace(gf_tensor *const *in, int n, gf_tensor **out, int no, void *user) {
    (void)n, (void)user;
    gf_scope_begin();
    gf_tensor *z = gf_zeros_like(in[0]);
    gf_tensor *v = z && gf_tensor_rank(z) > 0 ? gf_select(z, 0, 0) : z;
    gf_tensor *e = v ? gf_exp(gf_select(in[0], 0, 0)) : NULL;
    gf_status s = e ? gf_add_(v, e) : gf_last_status();
    for (int j = 0; j < no; j++) out[j] = s == GF_OK ? gf_scope_keep(gf_mul(z, in[0])) : NULL;
    gf_scope_end();
    return jac_done(s, out, no);
}
static gf_status jac_pool(gf_tensor *const *in, int n, gf_tensor **out, int no, void *user) {
    (void)n, (void)user;
    gf_pool2d_opts o = {.kernel = {2, 2}, .stride = {1, 1}};
    gf_scope_begin();
    for (int j = 0; j < no; j++)
        out[j] = gf_scope_keep(j ? gf_avg_pool2d(in[0], &o) : gf_max_pool2d(in[0], &o, NULL));
    gf_scope_end();
    return jac_done(GF_OK, out, no);
}

/* The Jacobian transforms on small pooled tensors: jacrev, jacfwd (plain
 * and with gf_jac_opts: chunk sizes of any value, 0 and the int64 extremes
 * included, or options not started from the defaults), hessian, on each
 * path (GRAFT_JACREV / GRAFT_JACFWD = auto, loop or batched). */
static void act_jacobian(reader *r) {
    static const gf_func_fn fns[] = {jac_smooth, jac_fails, jac_null, jac_inplace, jac_pool};
    static const char *const modes[] = {"auto", "loop", "batched"};
    gf_tensor *in[2] = {get(r), get(r)};
    if (!in[0] || !in[1]) return;
    /* one pass per basis vector on the loop: small tensors only */
    if (gf_tensor_numel(in[0]) > 16 || gf_tensor_numel(in[1]) > 16) return;
    gf_func_fn fn = fns[pick(r, 5)];
    int n_in = 1 + pick(r, 2), n_out = 1 + pick(r, 2);
    const char *var = pick(r, 2) ? "GRAFT_JACREV" : "GRAFT_JACFWD";
    setenv(var, modes[pick(r, 3)], 1);
    gf_jac_opts o = GF_JAC_OPTS_DEFAULT;
    const gf_jac_opts *op = NULL;
    if (pick(r, 2)) {
        o.chunk_size = pick(r, 4) ? 1 + pick(r, 8) : int_arg(r);
        if (pick(r, 8) == 0) o.init = 0;
        op = &o;
    }
    gf_tensor *jac[4] = {0};
    int levels = gf_fwad_level_count();
    gf_status s;
    switch (pick(r, 5)) {
    case 0: s = gf_jacrev(fn, in, n_in, n_out, NULL, jac); break;
    case 1: s = gf_jacfwd(fn, in, n_in, n_out, NULL, jac); break;
    case 2: s = gf_jacrev_ex(fn, in, n_in, n_out, NULL, op, jac); break;
    case 3: s = gf_jacfwd_ex(fn, in, n_in, n_out, NULL, op, jac); break;
    default:
        n_out = n_in;
        s = gf_hessian(fn, in, n_in, NULL, jac);
        break;
    }
    unsetenv(var);
    /* a transform leaves the dual levels as it found them */
    if (gf_fwad_level_count() != levels) {
        fprintf(stderr, "fuzz_api: a Jacobian transform left %d dual levels open, %d before\n",
                gf_fwad_level_count(), levels);
        abort();
    }
    for (int i = 0; s == GF_OK && i < n_in * n_out; i++) put(jac[i]);
}

/* An optimiser over one or two pooled tensors (refused unless they are
 * float leaves requiring grad), stepped with whatever .grad they have (none,
 * broadcast, another dtype, from create_graph), its state saved and loaded
 * back, then destroyed: Adam and AdamW take the device's fused update where
 * it has one. */
/* L-BFGS's closure: sum(p^2) (or a failure), p's .grad cleared first. */
static gf_tensor *lbfgs_param;
static bool lbfgs_fail;
static gf_tensor *lbfgs_closure(void *user) {
    (void)user;
    if (lbfgs_fail) {
        gf_set_error(GF_ERR_INVALID, "fuzz: the closure fails");
        return NULL;
    }
    gf_tensor_set_grad(lbfgs_param, NULL);
    gf_tensor *sq = gf_square(lbfgs_param);
    gf_tensor *s = sq ? gf_sum(sq, NULL, 0, false) : NULL;
    if (s) gf_backward(s, NULL, NULL);
    if (!scope_depth) gf_tensor_release(sq);
    return s;
}

static void act_optim(reader *r) {
    gf_tensor *p[2] = {get(r), get(r)};
    int n = 1 + pick(r, 2);
    if (!p[0] || (n == 2 && !p[1])) return;
    if (pick(r, 8) == 0) {
        gf_lbfgs_opts o = GF_LBFGS_OPTS_DEFAULT;
        o.lr = dbl_arg(r), o.max_iter = pick(r, 30) - 1, o.max_eval = pick(r, 40) - 2;
        o.history_size = size_arg(r), o.strong_wolfe = pick(r, 2);
        o.tolerance_grad = dbl_arg(r);
        gf_lbfgs *l = gf_lbfgs_create(p, 1, &o);
        lbfgs_param = p[0];
        lbfgs_fail = pick(r, 4) == 0;
        double loss;
        if (l && track(p[0])) gf_lbfgs_step(l, lbfgs_closure, NULL, &loss);
        gf_lbfgs_destroy(l);
        return;
    }
    gf_optimizer *opt = NULL;
    switch (pick(r, 7)) {
    case 0: {
        /* from the defaults or not (refused), then any value in each field */
        gf_adam_opts o = GF_ADAM_OPTS_DEFAULT;
        if (pick(r, 8) == 0) o.init = 0;
        o.lr = dbl_arg(r), o.beta1 = dbl_arg(r), o.beta2 = dbl_arg(r), o.eps = dbl_arg(r);
        o.weight_decay = dbl_arg(r), o.decoupled_weight_decay = pick(r, 2);
        opt = gf_adam_create(p, n, pick(r, 8) ? &o : NULL);
        break;
    }
    case 1: {
        gf_sgd_opts o = {.lr = dbl_arg(r), .momentum = dbl_arg(r), .dampening = dbl_arg(r),
                         .weight_decay = dbl_arg(r), .nesterov = pick(r, 2)};
        opt = gf_sgd_create(p, n, &o);
        break;
    }
    case 2: {
        gf_rmsprop_opts o = GF_RMSPROP_OPTS_DEFAULT;
        o.lr = dbl_arg(r), o.alpha = dbl_arg(r), o.momentum = dbl_arg(r), o.eps = dbl_arg(r);
        o.centered = pick(r, 2);
        opt = gf_rmsprop_create(p, n, &o);
        break;
    }
    case 3: {
        gf_adagrad_opts o = GF_ADAGRAD_OPTS_DEFAULT;
        o.lr = dbl_arg(r), o.lr_decay = dbl_arg(r), o.eps = dbl_arg(r);
        opt = gf_adagrad_create(p, n, &o);
        break;
    }
    case 4: {
        gf_adadelta_opts o = GF_ADADELTA_OPTS_DEFAULT;
        o.lr = dbl_arg(r), o.rho = dbl_arg(r), o.eps = dbl_arg(r);
        opt = gf_adadelta_create(p, n, &o);
        break;
    }
    case 5: {
        gf_nadam_opts o = GF_NADAM_OPTS_DEFAULT;
        o.lr = dbl_arg(r), o.beta1 = dbl_arg(r), o.momentum_decay = dbl_arg(r);
        o.decoupled_weight_decay = pick(r, 2), o.weight_decay = dbl_arg(r);
        opt = gf_nadam_create(p, n, &o);
        break;
    }
    default: {
        gf_radam_opts o = GF_RADAM_OPTS_DEFAULT;
        o.lr = dbl_arg(r), o.beta2 = dbl_arg(r), o.eps = dbl_arg(r);
        opt = gf_radam_create(p, n, &o);
        break;
    }
    }
    if (!opt) return;
    if (pick(r, 3) == 0) {
        /* loss scaling: any option values (refused or not), steps through the
         * scaler in any order (the order errors are the scaler's to report) */
        gf_grad_scaler_opts so = gf_grad_scaler_default_opts();
        so.init_scale = pick(r, 2) ? dbl_arg(r) : so.init_scale;
        so.growth_factor = pick(r, 2) ? dbl_arg(r) : so.growth_factor;
        so.backoff_factor = pick(r, 2) ? dbl_arg(r) : so.backoff_factor;
        so.growth_interval = pick(r, 2) ? (int64_t)pick(r, 4) - 1 : so.growth_interval;
        so.enabled = pick(r, 4) != 0;
        gf_grad_scaler *sc = gf_grad_scaler_create(&so);
        for (int k = pick(r, 6); sc && k > 0; k--) {
            switch (pick(r, 5)) {
            case 0: gf_grad_scaler_unscale_(sc, opt); break;
            case 1: gf_grad_scaler_step(sc, opt, NULL); break;
            case 2: gf_grad_scaler_update(sc, pick(r, 2) ? 0 : dbl_arg(r)); break;
            case 3: put(gf_grad_scaler_scale(sc, get(r))); break;
            default: {
                gf_tensor_dict *d = gf_grad_scaler_state_dict(sc, pick(r, 2) ? "s." : NULL);
                if (d) gf_grad_scaler_load_state_dict(sc, d, pick(r, 4) ? "s." : NULL);
                gf_tensor_dict_destroy(d);
            }
            }
        }
        gf_grad_scaler_destroy(sc);
    }
    for (int steps = 1 + pick(r, 3); steps > 0; steps--) gf_optimizer_step(opt);
    if (pick(r, 2)) {
        gf_tensor_dict *d = gf_optimizer_state_dict(opt, pick(r, 2) ? "o." : NULL);
        if (d && pick(r, 2)) {
            /* its param_groups (JSON metadata) replaced: by a pooled-up
             * variant of torch's, or cut short at a fuzzed length */
            static const char *const groups[] = {
                ("[{\"lr\": 0.1, \"betas\": [0.5, 0.9], \"momentum\": 0.5, \"eps\": 1e-6, "
                 "\"weight_decay\": 0, \"amsgrad\": false, \"foreach\": null, \"params\": [0]}]"),
                "[{\"lr\": -1, \"params\": [0, 1]}, {\"lr\": 1e308, \"params\": []}]",
                "[{\"lr\": NaN, \"centered\": true, \"rho\": 2, \"x\": {\"y\": [1]}}]",
                "[{\"params\": [0], \"lr\": 0.5, \"initial_lr\": Infinity, \"alpha\": 0.9}]"};
            char buf[200];
            snprintf(buf, sizeof buf, "%s", groups[pick(r, 4)]);
            size_t len = strlen(buf), cut = (size_t)pick(r, 64);
            if (cut && cut < len) buf[len - cut] = '\0';
            const char *key = gf_tensor_dict_metadata_count(d) > 0
                                  ? gf_tensor_dict_metadata_key(d, 0) : "param_groups";
            char k[64];
            snprintf(k, sizeof k, "%s", key ? key : "param_groups");
            gf_tensor_dict_set_metadata(d, k, pick(r, 8) ? buf : NULL);
        }
        if (d) gf_optimizer_load_state_dict(opt, d, pick(r, 4) ? "o." : NULL);
        gf_tensor_dict_destroy(d);
        gf_optimizer_step(opt);
    }
    if (pick(r, 4) == 0) gf_optimizer_zero_grad(opt);
    gf_optimizer_destroy(opt);
}

/* Modules: a Linear sized from a pooled tensor (or not), run on it, its
 * state dict saved and loaded back (strict or not, with an entry removed or
 * replaced by a pooled tensor), a pooled leaf registered as a parameter, a
 * Sequential around it, train/eval, zero_grad, freezing. */
/* Sequence layers on a pooled tensor taken as [T or N, N or T, features]:
 * an RNN/LSTM/GRU (with or without the pooled h0), or self-attention with
 * a pooled mask, or an encoder layer. */
static void act_seq_module(reader *r, gf_tensor *x) {
    int64_t e = gf_tensor_rank(x) > 0 ? gf_tensor_size(x, -1) : 1, h = 1 + pick(r, 3);
    const int64_t ws[2] = {4 * h, e > h ? e : h};
    if (!sizes_ok(ws, 2)) return;
    gf_module *m = NULL;
    gf_tensor *y = NULL, *hn = NULL, *cn = NULL, *w = NULL;
    switch (pick(r, 4)) {
    case 3: {
        /* a decoder layer over x as both target and memory (or another
         * pooled tensor as memory), masks from the pool */
        m = gf_nn_transformer_decoder_layer(e, 1, 1 + pick(r, 4), 0.0, pick(r, 2), 1e-5,
                                            pick(r, 2), pick(r, 2), dtype_arg(r), NULL);
        if (m && pick(r, 2)) {
            gf_module *one[1] = {m};
            gf_module *dec = gf_nn_transformer_decoder(one, 1, NULL);
            gf_module_release(m);
            m = dec;
        }
        if (m)
            y = gf_nn_transformer_decoder_forward(m, x, pick(r, 2) ? x : get(r),
                                                  pick(r, 2) ? get(r) : NULL,
                                                  pick(r, 2) ? get(r) : NULL,
                                                  pick(r, 2) ? get(r) : NULL,
                                                  pick(r, 2) ? get(r) : NULL);
        break;
    }
    case 0:
        m = gf_nn_rnn((gf_rnn_mode)pick(r, 4), e, h, 1 + pick(r, 2), pick(r, 2), pick(r, 2),
                      0.0, pick(r, 2), dtype_arg(r), NULL);
        if (m) y = gf_nn_rnn_forward(m, x, pick(r, 2) ? get(r) : NULL, pick(r, 2) ? get(r) : NULL,
                                     &hn, pick(r, 2) ? &cn : NULL);
        break;
    case 1:
        m = gf_nn_mha(e, 1, 0.0, pick(r, 2), pick(r, 2), dtype_arg(r), NULL);
        if (m) y = gf_nn_mha_forward(m, x, x, x, pick(r, 2) ? get(r) : NULL,
                                     pick(r, 2) ? get(r) : NULL, pick(r, 2), pick(r, 2) ? &w : NULL);
        break;
    default:
        m = gf_nn_transformer_encoder_layer(e, 1, 1 + pick(r, 4), 0.0, pick(r, 2), 1e-5,
                                            pick(r, 2), pick(r, 2), dtype_arg(r), NULL);
        if (m) y = gf_nn_transformer_forward(m, x, pick(r, 2) ? get(r) : NULL, NULL);
        break;
    }
    put(y), put(hn), put(cn), put(w);
    gf_module_release(m);
}

static void act_module(reader *r) {
    gf_tensor *x = gf_tensor_retain(get(r)); /* put() may drop its slot */
    if (x && pick(r, 4) == 0) {
        act_seq_module(r, x);
        gf_tensor_release(x);
        return;
    }
    int64_t in = x && gf_tensor_rank(x) > 0 ? gf_tensor_size(x, -1) : size_arg(r);
    int64_t out = size_arg(r);
    const int64_t ws[2] = {out, in};
    /* weights graft fills: small, or certainly refused */
    gf_module *lin = sizes_ok(ws, 2) ? gf_nn_linear(in, out, pick(r, 2), dtype_arg(r), NULL)
                                     : NULL;
    gf_module *parts[2] = {lin, lin ? gf_nn_relu() : NULL};
    gf_module *seq = lin ? gf_nn_sequential(parts, pick(r, 3)) : NULL;
    gf_module *m = seq ? seq : lin;
    if (m) {
        if (x) put(gf_module_forward(m, &x, 1));
        gf_tensor_dict *d = gf_module_state_dict(m);
        if (d && pick(r, 2)) gf_tensor_dict_remove(d, gf_tensor_dict_name(d, 0));
        gf_tensor *t = get(r);
        if (d && t && pick(r, 2)) gf_tensor_dict_set(d, pick(r, 2) ? "0.weight" : "weight", t);
        gf_load_report rep = {0};
        gf_module_load_state_dict(m, d, pick(r, 2), pick(r, 2) ? &rep : NULL);
        gf_load_report_clear(&rep);
        gf_tensor_dict_destroy(d);
        int k = slot(r);
        if (pool[k] && fresh[k] && track(pool[k]))
            gf_module_register_parameter(lin, "extra", pool[k]);
        switch (pick(r, 5)) {
        case 0: gf_module_train(m, pick(r, 2)); break;
        case 1: gf_module_zero_grad(m); break;
        case 3: {
            /* moved or cast in place: a device that exists or not, a dtype
             * graft stores there or not, or kept */
            static const char *const devs[] = {NULL, "cpu", "cpu:1", "cpu:7", "nodevice", ""};
            gf_module_to(m, devs[pick(r, 6)], pick(r, 3) ? dtype_arg(r) : GF_MODULE_KEEP_DTYPE);
            break;
        }
        case 4: {
            /* a ModuleList around it, appended to and indexed */
            gf_module *list = gf_nn_module_list(&m, pick(r, 2));
            if (list) {
                gf_module_list_append(list, pick(r, 2) ? m : NULL);
                gf_module_list_get(list, (int)int_arg(r));
                gf_module_list_len(list);
            }
            gf_module_release(list);
            break;
        }
        default: gf_module_requires_grad_(m, pick(r, 2)); break;
        }
        if (x) put(gf_module_forward(m, &x, 1));
    }
    if (x && pick(r, 4) == 0) {
        /* the stateless shape modules on x */
        gf_module *sm = NULL;
        int64_t f = pick(r, 2) ? 1 + pick(r, 3) : int_arg(r);
        switch (pick(r, 5)) {
        case 0: sm = gf_nn_pixel_shuffle(f); break;
        case 1: sm = gf_nn_pixel_unshuffle(f); break;
        case 2: sm = gf_nn_flatten_dims(dim_arg(r), dim_arg(r)); break;
        case 3: {
            const int64_t us[2] = {f, -1};
            sm = gf_nn_unflatten(dim_arg(r), us, 1 + pick(r, 2));
            break;
        }
        default: {
            /* small outputs, or sizes and scales graft must refuse (not a
             * legal 3e9x upsampling: gigabytes) */
            static const int64_t us[] = {1, 2, 3, 0, -1, INT64_MAX, INT64_C(1) << 62};
            static const double uf[] = {0.5, 1.0, 2.0, 2.5, 0.0, -1.0, NAN, INFINITY, 1e300};
            gf_interpolate_opts io = {.mode = (gf_interp_mode)pick(r, 6)};
            if (pick(r, 2)) io.size[0] = io.size[1] = us[pick(r, 7)];
            else io.scale_factor[0] = io.scale_factor[1] = uf[pick(r, 9)];
            io.align_corners = pick(r, 2);
            sm = gf_nn_upsample(&io);
        }
        }
        if (sm) put(gf_module_forward(sm, &x, 1));
        gf_module_release(sm);
    }
    gf_tensor_release(x);
    gf_module_release(parts[1]);
    gf_module_release(seq);
    gf_module_release(lin);
}

static int autocast_depth;

/* Graph capture and replay: a capture opens (on the device or the default
 * one), the actions that follow run inside it until the next graph action
 * ends it; the graphs made are replayed (several times, after writing new
 * values into a pooled tensor that may be one of their inputs), measured and
 * destroyed while pooled tensors may still hold outputs from their pools. */
static gf_graph *graphs[2];
static bool capturing;
static void act_graph(reader *r) {
    if (capturing) {
        gf_graph *g = gf_graph_capture_end(); /* NULL when the region was refused */
        capturing = false;
        int i = pick(r, 2);
        gf_graph_destroy(graphs[i]);
        graphs[i] = g;
        return;
    }
    gf_graph *g = graphs[pick(r, 2)];
    switch (pick(r, 5)) {
    case 0:
        if (gf_graph_capture_begin(pick(r, 4) ? dev : NULL) == GF_OK) capturing = true;
        break;
    case 1:
        for (int n = 1 + pick(r, 3); n > 0; n--)
            if (gf_graph_replay(g) != GF_OK) break;
        break;
    case 2: {
        gf_tensor *t = get(r), *s = get(r);
        if (t && s) (void)gf_copy_(t, s);
        (void)gf_graph_replay(g);
        break;
    }
    case 3: {
        int i = pick(r, 2);
        gf_graph_destroy(graphs[i]);
        graphs[i] = NULL;
        break;
    }
    default:
        if (trace)
            fprintf(stderr, " [graph: %zu nodes, %zu inputs, %llu pool bytes]",
                    gf_graph_node_count(g), gf_graph_input_count(g),
                    (unsigned long long)gf_graph_pool_bytes(g));
        break;
    }
}

/* Autocast regions: opened (cpu or the device's type, bf16 / f16 / refused
 * f32, enabled or not) or closed; the ops that follow run inside them;
 * cleanup() closes what is left. */
static void act_autocast(reader *r) {
    if (!pick(r, 4)) { /* what the device runs itself (gf_device_supports_op): any counts, dtypes */
        static const char *const ops[4] = {"matmul", "conv2d", "batch_norm", "no_such_op"};
        int in[6], out[4], n_in = pick(r, 7) - 1, n_out = pick(r, 5) - 1;
        for (int i = 0; i < 6; i++) in[i] = pick(r, 12) - 2;
        for (int i = 0; i < 4; i++) out[i] = pick(r, 12) - 2;
        bool ok;
        gf_device_supports_op(pick(r, 8) ? dev : NULL, ops[pick(r, 4)], pick(r, 8) ? in : NULL,
                              n_in, out, n_out, pick(r, 2), pick(r, 8) ? &ok : NULL);
        return;
    }
    if (autocast_depth && pick(r, 2)) {
        if (gf_autocast_end() == GF_OK) autocast_depth--;
        return;
    }
    static const gf_dtype dts[3] = {GF_BF16, GF_F16, GF_F32};
    const char *type = pick(r, 2) ? "cpu" : gf_device_type(dev);
    if (gf_autocast_begin_ex(type, dts[pick(r, 3)], pick(r, 4) != 0) == GF_OK) autocast_depth++;
}

static void act_scope(reader *r) {
    if (scope_depth && pick(r, 2)) {
        /* a result released by hand inside its scope (refused), then used */
        gf_tensor *t = get(r);
        gf_tensor *y = t ? gf_neg(t) : NULL;
        gf_tensor_release(y);
        put(y);
        return;
    }
    if (scope_depth) {
        gf_scope_end();
        scope_depth = 0;
    } else {
        gf_scope_begin();
        scope_depth = 1;
    }
}

static void cleanup(void) {
    for (int i = 0; i < POOL; i++) {
        drop(pool[i]);
        pool[i] = NULL;
    }
    for (int i = 0; i < n_tracked; i++) drop(tracked[i]);
    n_tracked = 0;
    if (scope_depth) gf_scope_end();
    scope_depth = 0;
    for (; hooks_depth; hooks_depth--) gf_saved_tensor_hooks_pop();
    while (gf_fwad_level_count() > 0) gf_fwad_level_exit(gf_fwad_level_count() - 1);
    for (; autocast_depth; autocast_depth--) gf_autocast_end(); /* drops its cast cache too */
    if (capturing) gf_graph_destroy(gf_graph_capture_end());
    capturing = false;
    gf_graph_destroy(graphs[0]);
    gf_graph_destroy(graphs[1]);
    graphs[0] = graphs[1] = NULL;
    gf_grad_mode_set(GF_GRAD_MODE_GRAD);
    gf_clear_error();
}

static uint64_t in_use(void) {
    gf_memory_stats st;
    if (gf_memory_get_stats(dev, &st) != GF_OK) abort();
    return st.bytes_in_use;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    if (gf_init() != GF_OK) {
        fprintf(stderr, "fuzz_api: gf_init failed: %s\n", gf_last_error());
        abort();
    }
    dev = gf_device_default();
    if (!dev) abort();
    fprintf(stderr, "fuzz_api: device %s (plugin %s)\n", gf_device_spec(dev),
            gf_device_plugin(dev));
    baseline = in_use();
    trace = getenv("FUZZ_TRACE") != NULL;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    reader r = {data, size};
    for (int steps = 0; r.n && steps < 64; steps++) {
        if (trace) fprintf(stderr, "\n[%ld packs, %ld released] step %d:", packs, pack_releases, steps);
        /* byte % 12 as before the optimisers came (the seeds keep their programs); the
         * top 16 values for optimisers and modules, the 8 below for the complex API, 4
         * each below those for autocast, graph capture, the Jacobian transforms */
        uint8_t b = u8(&r);
        int act = b >= 248 ? 13 : b >= 240 ? 12 : b >= 232 ? 14 : b >= 228 ? 15 : b >= 224 ? 16
                  : b >= 220 ? 17 : b % 12;
        if (trace) fprintf(stderr, " %d/18", act);
        switch (act) {
        case 17: act_jacobian(&r); break;
        case 16: act_graph(&r); break;
        case 15: act_autocast(&r); break;
        case 14: act_complex(&r); break;
        case 13: act_module(&r); break;
        case 12: act_optim(&r); break;
        case 10: act_hooks(&r); break;
        case 11: act_check(&r); break;
        case 0: act_create(&r); break;
        case 1: act_view(&r); break;
        case 2: act_unary(&r); break;
        case 3: act_binary(&r); break;
        case 4: act_reduce(&r); break;
        case 5: act_index(&r); break;
        case 6: act_nn(&r); break;
        case 7: act_inplace(&r); break;
        case 8: act_autograd(&r); break;
        default: act_scope(&r); break;
        }
    }
    cleanup();
    if (packs != pack_releases) {
        fprintf(stderr, "fuzz_api: %ld saved-tensor packs, %ld released: a node (and what its "
                "hooks keep) leaked\n", packs, pack_releases);
        abort();
    }
    if (adopted != adopted_released) {
        fprintf(stderr, "fuzz_api: %ld host buffers adopted, %ld released: a tensor over "
                "adopted memory leaked\n", adopted, adopted_released);
        abort();
    }
    uint64_t now = in_use();
    if (now != baseline) {
        fprintf(stderr, "fuzz_api: %llu device bytes in use after the input, %llu before: a "
                "tensor or storage leaked\n", (unsigned long long)now,
                (unsigned long long)baseline);
        abort();
    }
    return 0;
}
