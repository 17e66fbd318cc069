/* SPDX-License-Identifier: BSD-3-Clause */
/* ddp.c — data-parallel gradients: buckets filled by post-accumulate-grad
 * hooks during backward, each all-reduced without blocking as soon as it is
 * full (in bucket order, the same on every rank), finished and averaged by
 * gf_ddp_wait. See graft/dist.h for the contract. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist_internal.h"

#define DEFAULT_CAP ((size_t)25 << 20)  /* PyTorch's bucket_cap_mb = 25 */
#define DEFAULT_FIRST ((size_t)1 << 20) /* PyTorch's first bucket: 1 MiB */

typedef struct bucket {
    int n_params;
    int *params; /* indices into ddp->params, decreasing */
    int64_t numel;
    gf_dtype dtype;
    void *data; /* host memory: the gradients end to end */
    int ready;  /* parameters copied in this iteration */
    bool launched;
    gf_dist_work *work;  /* default reduction */
    void *hook_state;    /* a comm hook's */
    gf_ddp_bucket_info info;
} bucket;

typedef struct param_ctx {
    gf_ddp *ddp;
    int index;
} param_ctx;

struct gf_ddp {
    int n;
    gf_tensor **params;
    param_ctx *ctx;
    gf_hook_handle *handles;
    int *bucket_of;      /* per parameter */
    int64_t *offset;     /* per parameter, in elements within its bucket */
    bool *ready;         /* per parameter, this iteration */
    int n_buckets;
    bucket *buckets;
    int next_launch;     /* buckets start in order */
    int hooks_fired;     /* in this iteration */
    bool active;         /* a hook fired since the last wait */
    bool no_sync;
    bool has_hook;
    gf_ddp_comm_hook hook;
    gf_status error; /* the first failure inside a hook, returned by wait */
    char error_msg[512];
    pthread_mutex_t lock;
};

static void keep_error(gf_ddp *d, gf_status s) {
    if (s == GF_OK || d->error != GF_OK) return;
    d->error = s;
    snprintf(d->error_msg, sizeof d->error_msg, "%s", gf_last_error());
}

static gf_ddp_bucket view_of(const gf_ddp *d, int i) {
    const bucket *b = &d->buckets[i];
    return (gf_ddp_bucket){.index = i, .data = b->data, .numel = b->numel, .dtype = b->dtype,
                           .world_size = gd_g.size};
}

/* Starts bucket i's reduction (called in order). Never skipped, even after
 * a local failure, so that every rank starts the same reductions. */
static void launch(gf_ddp *d, int i, bool in_backward) {
    bucket *b = &d->buckets[i];
    b->launched = true;
    b->info.launched_in_backward = in_backward;
    b->info.hooks_before_launch = d->hooks_fired;
    b->info.launch_ns = gd_now_ns();
    b->info.finish_ns = 0;
    gf_status s;
    if (d->has_hook) {
        gf_ddp_bucket v = view_of(d, i);
        b->hook_state = NULL;
        s = d->hook.launch(&v, &b->hook_state, d->hook.user);
    } else {
        b->work = gf_dist_all_reduce_host_async(b->data, b->numel, b->dtype, GF_REDUCE_SUM);
        s = b->work ? GF_OK : gf_last_status();
    }
    keep_error(d, s);
}

static void launch_ready(gf_ddp *d, bool in_backward) {
    while (d->next_launch < d->n_buckets &&
           d->buckets[d->next_launch].ready == d->buckets[d->next_launch].n_params)
        launch(d, d->next_launch++, in_backward);
}

/* The post-accumulate-grad hook of parameter ctx->index. */
static void on_grad(gf_tensor *t, void *user) {
    param_ctx *c = user;
    gf_ddp *d = c->ddp;
    if (d->no_sync) return;
    pthread_mutex_lock(&d->lock);
    int i = c->index;
    bucket *b = &d->buckets[d->bucket_of[i]];
    if (d->ready[i] && b->launched) {
        keep_error(d, gd_error(GF_ERR_AUTOGRAD, "gf_ddp: parameter %d received a second "
                               "gradient after its bucket was sent: call gf_ddp_wait after "
                               "each backward (accumulate with gf_ddp_set_no_sync)", i));
        pthread_mutex_unlock(&d->lock);
        return;
    }
    gf_scope_begin();
    gf_tensor *g = gf_tensor_grad(t);
    size_t es = gf_dtype_size(b->dtype);
    size_t bytes = (size_t)gf_tensor_numel(t) * es;
    void *dst = (char *)b->data + (size_t)d->offset[i] * es;
    gf_status s = g ? gf_tensor_to_host(g, dst, bytes) : GF_OK;
    if (!g) memset(dst, 0, bytes);
    gf_scope_end();
    keep_error(d, s);
    d->active = true;
    if (!d->ready[i]) {
        d->ready[i] = true;
        d->hooks_fired++;
        b->ready++;
    }
    launch_ready(d, true);
    pthread_mutex_unlock(&d->lock);
    /* Lets the started reductions move while backward goes on (MPI
     * progresses non-blocking collectives inside MPI calls). */
    pthread_mutex_lock(&gd_mpi_lock);
    gd_progress_locked();
    pthread_mutex_unlock(&gd_mpi_lock);
}

/* ------------------------------------------------------------ creation */

typedef struct pdesc {
    int32_t dtype, rank;
    int64_t sizes[GF_MAX_RANK];
} pdesc;

/* Every rank has the same parameters: counts first, then shapes. */
static gf_status agree_params(gf_tensor *const *params, int n, gf_status local) {
    const char *fn = "gf_ddp_create";
    int W = gd_g.size;
    int32_t mine[2] = {local == GF_OK ? n : -1, (int32_t)local};
    int32_t *all = calloc((size_t)W * 2, sizeof *all);
    if (!all) return gd_error(GF_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    pthread_mutex_lock(&gd_mpi_lock);
    gf_status s = gd_mpi_check(MPI_Allgather(mine, 2, MPI_INT32_T, all, 2, MPI_INT32_T,
                                             gd_g.comm),
                               fn);
    pthread_mutex_unlock(&gd_mpi_lock);
    for (int r = 0; r < W && s == GF_OK; r++)
        if (all[2 * r + 1] != GF_OK)
            s = r == gd_g.rank ? (gf_status)all[2 * r + 1]
                               : gd_error((gf_status)all[2 * r + 1], "%s failed on rank %d (%s, "
                                          "its message says why)", fn, r,
                                          gf_status_name((gf_status)all[2 * r + 1]));
    for (int r = 1; r < W && s == GF_OK; r++)
        if (all[2 * r] != all[0])
            s = gd_error(GF_ERR_SHAPE, "%s: rank 0 passed %d parameters but rank %d passed %d: "
                         "every rank must pass the same model", fn, all[0], r, all[2 * r]);
    free(all);
    if (s != GF_OK || n == 0) return s;
    pdesc *pd = calloc((size_t)n * (size_t)(W + 1), sizeof *pd);
    if (!pd) return gd_error(GF_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    for (int i = 0; i < n; i++) {
        pd[i].dtype = gf_tensor_dtype(params[i]);
        pd[i].rank = gf_tensor_rank(params[i]);
        memcpy(pd[i].sizes, gf_tensor_sizes(params[i]), sizeof(int64_t) * (size_t)pd[i].rank);
    }
    pdesc *allp = pd + n;
    int bytes = n * (int)sizeof(pdesc);
    pthread_mutex_lock(&gd_mpi_lock);
    s = gd_mpi_check(MPI_Allgather(pd, bytes, MPI_BYTE, allp, bytes, MPI_BYTE, gd_g.comm), fn);
    pthread_mutex_unlock(&gd_mpi_lock);
    for (int r = 1; r < W && s == GF_OK; r++)
        for (int i = 0; i < n && s == GF_OK; i++) {
            const pdesc *a = &allp[i], *b = &allp[(size_t)r * (size_t)n + (size_t)i];
            if (a->dtype != b->dtype)
                s = gd_error(GF_ERR_DTYPE, "%s: parameter %d is %s on rank 0 but %s on rank %d",
                             fn, i, gf_dtype_name((gf_dtype)a->dtype),
                             gf_dtype_name((gf_dtype)b->dtype), r);
            else if (a->rank != b->rank ||
                     memcmp(a->sizes, b->sizes, sizeof(int64_t) * (size_t)a->rank))
                s = gd_error(GF_ERR_SHAPE, "%s: parameter %d has another shape on rank %d than "
                             "on rank 0 (rank %d against %d dims): every rank must build the "
                             "same model", fn, i, r, b->rank, a->rank);
        }
    free(pd);
    return s;
}

static gf_status check_local(gf_tensor *const *params, int n, const gf_ddp_opts *o) {
    const char *fn = "gf_ddp_create";
    if (n < 0 || (n > 0 && !params))
        return gd_error(GF_ERR_INVALID, "%s: %d parameters at %p", fn, n, (void *)params);
    if (o && o->comm_hook && (!o->comm_hook->launch || !o->comm_hook->finish))
        return gd_error(GF_ERR_INVALID, "%s: the comm hook needs both launch and finish", fn);
    for (int i = 0; i < n; i++) {
        gf_tensor *p = params[i];
        if (!p) return gd_error(GF_ERR_INVALID, "%s: parameter %d is NULL", fn, i);
        if (!gf_dtype_is_float(gf_tensor_dtype(p)) || !gf_tensor_is_leaf(p) ||
            !gf_tensor_requires_grad(p)) {
            char buf[160];
            return gd_error(GF_ERR_INVALID, "%s: parameter %d (%s) must be a float leaf that "
                            "requires grad", fn, i, gf_tensor_describe(p, buf, sizeof buf));
        }
        for (int j = 0; j < i; j++)
            if (params[j] == p)
                return gd_error(GF_ERR_INVALID, "%s: parameter %d is parameter %d again", fn,
                                i, j);
    }
    return GF_OK;
}

/* Buckets in reverse order of registration, one dtype each: the first
 * closes at first_cap bytes, the others at cap (a bucket closes once it
 * reaches its cap, as PyTorch's). */
static gf_status assign_buckets(gf_ddp *d, size_t first_cap, size_t cap) {
    d->buckets = calloc((size_t)d->n + 1, sizeof *d->buckets); /* at most one per parameter */
    if (!d->buckets) return gd_error(GF_ERR_OUT_OF_MEMORY, "gf_ddp_create: out of memory");
    int open[8]; /* per dtype: the open bucket, -1 */
    for (int k = 0; k < 8; k++) open[k] = -1;
    for (int i = d->n - 1; i >= 0; i--) {
        gf_dtype dt = gf_tensor_dtype(d->params[i]);
        int b = open[dt];
        if (b < 0) {
            b = open[dt] = d->n_buckets++;
            d->buckets[b].dtype = dt;
            d->buckets[b].params = calloc((size_t)d->n, sizeof(int));
            if (!d->buckets[b].params)
                return gd_error(GF_ERR_OUT_OF_MEMORY, "gf_ddp_create: out of memory");
        }
        bucket *bk = &d->buckets[b];
        int64_t numel = gf_tensor_numel(d->params[i]);
        if (bk->numel > INT64_MAX - numel)
            return gd_error(GF_ERR_OVERFLOW, "gf_ddp_create: bucket size overflows");
        d->bucket_of[i] = b;
        d->offset[i] = bk->numel;
        bk->params[bk->n_params++] = i;
        bk->numel += numel;
        size_t limit = b == 0 ? first_cap : cap;
        if ((uint64_t)bk->numel * gf_dtype_size(dt) >= limit) open[dt] = -1;
    }
    for (int b = 0; b < d->n_buckets; b++) {
        bucket *bk = &d->buckets[b];
        size_t es = gf_dtype_size(bk->dtype);
        if ((uint64_t)bk->numel > SIZE_MAX / es)
            return gd_error(GF_ERR_OVERFLOW, "gf_ddp_create: bucket %d of %lld elements "
                            "overflows", b, (long long)bk->numel);
        bk->data = malloc(bk->numel ? (size_t)bk->numel * es : 1);
        if (!bk->data)
            return gd_error(GF_ERR_OUT_OF_MEMORY, "gf_ddp_create: no memory for bucket %d "
                            "(%zu bytes)", b, (size_t)bk->numel * es);
        bk->info = (gf_ddp_bucket_info){.n_params = bk->n_params, .first_param = bk->params[0],
                                        .last_param = bk->params[bk->n_params - 1],
                                        .bytes = (size_t)bk->numel * es, .dtype = bk->dtype};
    }
    return GF_OK;
}

/* Rank 0's parameter values to every rank, one bucket buffer at a time. */
static gf_status broadcast_params(gf_ddp *d) {
    gf_status s = GF_OK;
    gf_scope_begin();
    for (int b = 0; b < d->n_buckets && s == GF_OK; b++) {
        bucket *bk = &d->buckets[b];
        size_t es = gf_dtype_size(bk->dtype);
        for (int k = 0; k < bk->n_params && s == GF_OK && gd_g.rank == 0; k++) {
            int i = bk->params[k];
            s = gf_tensor_to_host(gf_detach(d->params[i]),
                                  (char *)bk->data + (size_t)d->offset[i] * es,
                                  (size_t)gf_tensor_numel(d->params[i]) * es);
        }
        /* Rank 0 failing to read its values must not leave the others
         * waiting: the broadcast still runs, and wait-free ranks get
         * garbage only if rank 0 failed, which it reports. */
        pthread_mutex_lock(&gd_mpi_lock);
        gf_status m = GF_OK;
        for (int64_t at = 0; at < bk->numel && m == GF_OK; at += (int64_t)1 << 30) {
            int c = (int)(bk->numel - at < ((int64_t)1 << 30) ? bk->numel - at : (int64_t)1 << 30);
            m = gd_mpi_check(MPI_Bcast((char *)bk->data + (size_t)at * es, c,
                                       gd_mpi_type(bk->dtype), 0, gd_g.comm),
                             "gf_ddp_create (broadcast of rank 0's parameters)");
        }
        pthread_mutex_unlock(&gd_mpi_lock);
        if (s == GF_OK) s = m;
        for (int k = 0; k < bk->n_params && s == GF_OK && gd_g.rank != 0; k++) {
            int i = bk->params[k];
            s = gf_tensor_from_host(gf_detach(d->params[i]),
                                    (char *)bk->data + (size_t)d->offset[i] * es,
                                    (size_t)gf_tensor_numel(d->params[i]) * es);
        }
    }
    gf_scope_end();
    return s;
}

gf_ddp *gf_ddp_create(gf_tensor *const *params, int n, const gf_ddp_opts *opts) {
    if (gd_require_init("gf_ddp_create") != GF_OK) return NULL;
    gf_ddp_opts o = opts ? *opts : (gf_ddp_opts){0};
    size_t cap = o.bucket_cap_bytes ? o.bucket_cap_bytes : DEFAULT_CAP;
    size_t first = o.first_bucket_bytes ? o.first_bucket_bytes : DEFAULT_FIRST;
    gf_status s = check_local(params, n, &o);
    gf_ddp *d = NULL;
    if (s == GF_OK) {
        d = calloc(1, sizeof *d);
        size_t m = (size_t)(n ? n : 1);
        if (d) {
            d->n = n;
            d->params = calloc(m, sizeof *d->params);
            d->ctx = calloc(m, sizeof *d->ctx);
            d->handles = calloc(m, sizeof *d->handles);
            d->bucket_of = calloc(m, sizeof *d->bucket_of);
            d->offset = calloc(m, sizeof *d->offset);
            d->ready = calloc(m, sizeof *d->ready);
            pthread_mutex_init(&d->lock, NULL);
            gd_g.live_ddp++;
        }
        if (!d || !d->params || !d->ctx || !d->handles || !d->bucket_of || !d->offset ||
            !d->ready)
            s = gd_error(GF_ERR_OUT_OF_MEMORY, "gf_ddp_create: out of memory");
    }
    if (s == GF_OK) {
        for (int i = 0; i < n; i++) d->params[i] = gf_tensor_retain(params[i]);
        s = assign_buckets(d, first, cap);
    }
    gf_status agreed = agree_params(params, n, s);
    if (s == GF_OK) s = agreed;
    if (s == GF_OK && !o.skip_broadcast) s = broadcast_params(d);
    if (s == GF_OK && o.comm_hook) {
        d->has_hook = true;
        d->hook = *o.comm_hook;
    }
    for (int i = 0; i < n && s == GF_OK; i++) {
        d->ctx[i] = (param_ctx){.ddp = d, .index = i};
        d->handles[i] = gf_tensor_register_post_accumulate_hook(params[i], on_grad, &d->ctx[i]);
        if (!d->handles[i]) s = gf_last_status();
    }
    if (s != GF_OK) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", gf_last_error());
        gf_ddp_destroy(d);
        gf_set_error(s, "%s", msg);
        return NULL;
    }
    return d;
}

/* ------------------------------------------------------------ each step */

static gf_status finish(gf_ddp *d, int i) {
    bucket *b = &d->buckets[i];
    gf_status s;
    if (d->has_hook) {
        gf_ddp_bucket v = view_of(d, i);
        s = d->hook.finish(&v, b->hook_state, d->hook.user);
        b->hook_state = NULL;
    } else {
        s = gf_dist_work_wait(b->work);
        b->work = NULL;
        if (s == GF_OK) gd_scale_host(b->data, b->numel, b->dtype, gd_g.size);
    }
    b->info.finish_ns = gd_now_ns();
    return s;
}

/* Writes bucket b's averaged gradients into the parameters' .grad. */
static gf_status write_back(gf_ddp *d, int bi) {
    bucket *b = &d->buckets[bi];
    size_t es = gf_dtype_size(b->dtype);
    gf_status s = GF_OK;
    gf_scope_begin();
    for (int k = 0; k < b->n_params && s == GF_OK; k++) {
        int i = b->params[k];
        gf_tensor *p = d->params[i];
        gf_tensor *g = gf_tensor_grad(p);
        if (!g) { /* no gradient on this rank: it receives the others' mean */
            gf_tensor *z = gf_zeros_like(p);
            s = z ? gf_tensor_set_grad(p, z) : gf_last_status();
            g = s == GF_OK ? gf_tensor_grad(p) : NULL;
            if (s == GF_OK && !g) s = gf_last_status();
        }
        if (s == GF_OK)
            s = gf_tensor_from_host(g, (char *)b->data + (size_t)d->offset[i] * es,
                                    (size_t)gf_tensor_numel(p) * es);
    }
    gf_scope_end();
    return s;
}

static void reset_iteration(gf_ddp *d) {
    for (int i = 0; i < d->n; i++) d->ready[i] = false;
    for (int b = 0; b < d->n_buckets; b++) {
        d->buckets[b].ready = 0;
        d->buckets[b].launched = false;
    }
    d->next_launch = 0;
    d->hooks_fired = 0;
    d->active = false;
    d->error = GF_OK;
    d->error_msg[0] = '\0';
}

gf_status gf_ddp_wait(gf_ddp *d) {
    if (!d) return gd_error(GF_ERR_INVALID, "gf_ddp_wait: ddp is NULL");
    if (d->no_sync) return GF_OK;
    pthread_mutex_lock(&d->lock);
    if (!d->active) {
        pthread_mutex_unlock(&d->lock);
        return GF_OK;
    }
    /* Parameters that got no gradient in this backward send zeros. */
    for (int i = 0; i < d->n; i++) {
        if (d->ready[i]) continue;
        bucket *b = &d->buckets[d->bucket_of[i]];
        size_t es = gf_dtype_size(b->dtype);
        memset((char *)b->data + (size_t)d->offset[i] * es, 0,
               (size_t)gf_tensor_numel(d->params[i]) * es);
        d->ready[i] = true;
        b->ready++;
    }
    launch_ready(d, false);
    gf_status s = GF_OK;
    for (int b = 0; b < d->n_buckets; b++) {
        gf_status f = finish(d, b);
        if (s == GF_OK) s = f;
    }
    if (s == GF_OK && d->error != GF_OK) s = gf_set_error(d->error, "%s", d->error_msg);
    for (int b = 0; b < d->n_buckets && s == GF_OK; b++) s = write_back(d, b);
    reset_iteration(d);
    pthread_mutex_unlock(&d->lock);
    return s;
}

bool gf_ddp_set_no_sync(gf_ddp *d, bool no_sync) {
    if (!d) return false;
    bool prev = d->no_sync;
    d->no_sync = no_sync;
    return prev;
}

void gf_ddp_destroy(gf_ddp *d) {
    if (!d) return;
    /* Started reductions must end before their buffers go. */
    for (int b = 0; b < d->n_buckets; b++) {
        if (!d->buckets[b].launched) continue;
        if (d->has_hook) {
            gf_ddp_bucket v = view_of(d, b);
            d->hook.finish(&v, d->buckets[b].hook_state, d->hook.user);
        } else if (d->buckets[b].work) {
            gf_dist_work_wait(d->buckets[b].work);
        }
    }
    for (int i = 0; d->handles && i < d->n; i++)
        if (d->handles[i]) gf_hook_remove(d->handles[i]);
    for (int i = 0; d->params && i < d->n; i++) gf_tensor_release(d->params[i]);
    for (int b = 0; d->buckets && b < d->n_buckets; b++) {
        free(d->buckets[b].params);
        free(d->buckets[b].data);
    }
    free(d->buckets);
    free(d->params);
    free(d->ctx);
    free(d->handles);
    free(d->bucket_of);
    free(d->offset);
    free(d->ready);
    pthread_mutex_destroy(&d->lock);
    gd_g.live_ddp--;
    free(d);
}

int gf_ddp_bucket_count(const gf_ddp *d) { return d ? d->n_buckets : 0; }

gf_status gf_ddp_get_bucket_info(const gf_ddp *d, int i, gf_ddp_bucket_info *info) {
    if (!d || !info) return gd_error(GF_ERR_INVALID, "gf_ddp_get_bucket_info: NULL argument");
    if (i < 0 || i >= d->n_buckets)
        return gd_error(GF_ERR_INDEX, "gf_ddp_get_bucket_info: bucket %d of %d", i,
                        d->n_buckets);
    *info = d->buckets[i].info;
    return GF_OK;
}

/* ------------------------------------------------------------ f16 hook */

typedef struct f16_state {
    uint16_t *buf;
    gf_dist_work *work;
} f16_state;

static double get_f(const void *p, gf_dtype dt, int64_t i) {
    switch (dt) {
    case GF_F32: return ((const float *)p)[i];
    case GF_F64: return ((const double *)p)[i];
    case GF_F16: return gd_f16_to_f32(((const uint16_t *)p)[i]);
    case GF_BF16: return gd_bf16_to_f32(((const uint16_t *)p)[i]);
    default: return 0;
    }
}

static void set_f(void *p, gf_dtype dt, int64_t i, double v) {
    switch (dt) {
    case GF_F32: ((float *)p)[i] = (float)v; break;
    case GF_F64: ((double *)p)[i] = v; break;
    case GF_F16: ((uint16_t *)p)[i] = gd_f32_to_f16((float)v); break;
    case GF_BF16: ((uint16_t *)p)[i] = gd_f32_to_bf16((float)v); break;
    default: break;
    }
}

static gf_status f16_launch(const gf_ddp_bucket *b, void **state, void *user) {
    f16_state *st = calloc(1, sizeof *st);
    if (st) st->buf = malloc(b->numel ? (size_t)b->numel * 2 : 2);
    if (!st || !st->buf) {
        if (st) free(st);
        *state = NULL;
        return gd_error(GF_ERR_OUT_OF_MEMORY, "gf_ddp fp16 hook: out of memory");
    }
    for (int64_t i = 0; i < b->numel; i++)
        st->buf[i] = gd_f32_to_f16((float)(get_f(b->data, b->dtype, i) / b->world_size));
    st->work = gf_dist_all_reduce_host_async(st->buf, b->numel, GF_F16, GF_REDUCE_SUM);
    *state = st;
    return st->work ? GF_OK : gf_last_status();
}

static gf_status f16_finish(const gf_ddp_bucket *b, void *state, void *user) {
    f16_state *st = state;
    if (!st) return GF_OK; /* launch failed and said so */
    gf_status s = st->work ? gf_dist_work_wait(st->work) : GF_OK;
    for (int64_t i = 0; s == GF_OK && i < b->numel; i++)
        set_f(b->data, b->dtype, i, gd_f16_to_f32(st->buf[i]));
    free(st->buf);
    free(st);
    return s;
}

const gf_ddp_comm_hook *gf_ddp_fp16_compress_hook(void) {
    static const gf_ddp_comm_hook hook = {.launch = f16_launch, .finish = f16_finish};
    return &hook;
}
