/* SPDX-License-Identifier: BSD-3-Clause */
/* collectives.c — all_reduce, broadcast, all_gather, reduce_scatter and
 * barrier on graft tensors, and the non-blocking all-reduce of host memory.
 *
 * Every collective first exchanges a descriptor (MPI_Allgather of a small
 * struct) so that all ranks decide together whether to go on: a bad argument
 * on one rank, or shapes / dtypes / roots that differ, fail the call on every
 * rank before any data moves. Data then goes to MPI in place when the tensor
 * is contiguous on a host-addressable device (through DLPack, which gives the
 * address of its memory), otherwise through a contiguous host buffer. */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist_internal.h"
#ifdef GRAFT_DIST_HAVE_DLPACK
#include "graft/dlpack.h"
#endif

/* Most elements handed to one MPI call (counts are ints in MPI 3). */
#define GD_CHUNK ((int64_t)1 << 30)

typedef enum kind {
    K_ALL_REDUCE = 1,
    K_BROADCAST,
    K_ALL_GATHER,
    K_REDUCE_SCATTER,
    K_BARRIER,
} kind;
static const char *const kind_fn[] = {"", "gf_dist_all_reduce", "gf_dist_broadcast",
                                      "gf_dist_all_gather", "gf_dist_reduce_scatter",
                                      "gf_dist_barrier"};

typedef struct desc {
    int32_t kind, op, root, dtype, rank, status;
    int64_t sizes[GF_MAX_RANK];
} desc;

static void shape_str(const desc *d, char *buf, size_t len) {
    size_t at = (size_t)snprintf(buf, len, "%s[", gf_dtype_name((gf_dtype)d->dtype));
    for (int i = 0; i < d->rank && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at, "%s%lld", i ? ", " : "",
                               (long long)d->sizes[i]);
    if (at < len) snprintf(buf + at, len - at, "]");
}

/* Exchanges `mine` with every rank and checks that all agree. On failure
 * every rank returns the same status. */
static gf_status agree(const desc *mine) {
    const char *fn = kind_fn[mine->kind];
    int n = gd_g.size;
    desc *all = calloc((size_t)n, sizeof *all);
    int rc;
    if (!all) /* cannot take part: the others wait in the exchange (see dist.h) */
        return gd_error(GF_ERR_OUT_OF_MEMORY, "%s: out of memory for %d descriptors; the other "
                        "ranks are left waiting: end the job", fn, n);
    rc = MPI_Allgather(mine, (int)sizeof *mine, MPI_BYTE, all, (int)sizeof *mine, MPI_BYTE,
                       gd_g.comm);
    gf_status s = gd_mpi_check(rc, fn);
    if (s != GF_OK) {
        free(all);
        return s;
    }
    /* A rank's own failure keeps its own message; the others name it. */
    if (mine->status != GF_OK) s = (gf_status)mine->status;
    for (int r = 0; r < n && s == GF_OK; r++)
        if (all[r].status != GF_OK)
            s = gd_error((gf_status)all[r].status, "%s failed on rank %d (%s, its message says "
                         "why); no data moved on any rank", fn, r,
                         gf_status_name((gf_status)all[r].status));
    for (int r = 1; r < n && s == GF_OK; r++) {
        const desc *a = &all[0], *b = &all[r];
        char sa[160], sb[160];
        shape_str(a, sa, sizeof sa);
        shape_str(b, sb, sizeof sb);
        if (a->kind != b->kind)
            s = gd_error(GF_ERR_INVALID, "%s: rank 0 called %s but rank %d called %s: every "
                         "rank must call the same collectives in the same order", fn,
                         kind_fn[a->kind], r, kind_fn[b->kind]);
        else if (a->dtype != b->dtype)
            s = gd_error(GF_ERR_DTYPE, "%s: rank 0 passed %s but rank %d passed %s: the dtypes "
                         "must be the same on every rank", fn, sa, r, sb);
        else if (a->rank != b->rank ||
                 memcmp(a->sizes, b->sizes, sizeof(int64_t) * (size_t)a->rank))
            s = gd_error(GF_ERR_SHAPE, "%s: rank 0 passed %s but rank %d passed %s: the shapes "
                         "must be the same on every rank", fn, sa, r, sb);
        else if (a->op != b->op)
            s = gd_error(GF_ERR_INVALID, "%s: rank 0 asked for reduction %d but rank %d for %d",
                         fn, a->op, r, b->op);
        else if (a->root != b->root)
            s = gd_error(GF_ERR_INVALID, "%s: rank 0 gave root %d but rank %d gave root %d: "
                         "every rank must give the same root", fn, a->root, r, b->root);
    }
    free(all);
    return s;
}

/* ------------------------------------------------------------ staging */

typedef struct stage {
    gf_tensor *t; /* detached (scope-owned) */
    void *data;   /* what MPI reads / writes */
    int64_t numel;
    size_t nbytes;
    bool in_place;
    void *host; /* the staging buffer, or NULL */
#ifdef GRAFT_DIST_HAVE_DLPACK
    DLManagedTensor *dl;
#endif
} stage;

/* Checks t and describes it into d; no MPI. */
static gf_status describe(const char *fn, const gf_tensor *t, desc *d) {
    if (!t) return gd_error(GF_ERR_INVALID, "%s: the tensor is NULL", fn);
    d->dtype = (int32_t)gf_tensor_dtype(t);
    d->rank = gf_tensor_rank(t);
    memcpy(d->sizes, gf_tensor_sizes(t), sizeof(int64_t) * (size_t)d->rank);
    if (gd_mpi_type(gf_tensor_dtype(t)) == MPI_DATATYPE_NULL)
        return gd_error(GF_ERR_DTYPE, "%s: dtype %s cannot be communicated", fn,
                        gf_dtype_name(gf_tensor_dtype(t)));
    return GF_OK;
}

/* Prepares t for MPI: in place when possible, else a host buffer (holding
 * t's elements when copy_in). Needs an open scope. */
static gf_status stage_open(const char *fn, const gf_tensor *t, bool copy_in, bool force_copy,
                            stage *st) {
    memset(st, 0, sizeof *st);
    st->t = gf_detach(t);
    if (!st->t) return gf_last_status();
    st->numel = gf_tensor_numel(t);
    size_t es = gf_dtype_size(gf_tensor_dtype(t));
    if (st->numel < 0 || (uint64_t)st->numel > SIZE_MAX / es)
        return gd_error(GF_ERR_OVERFLOW, "%s: %lld elements of %zu bytes overflow size_t", fn,
                        (long long)st->numel, es);
    st->nbytes = (size_t)st->numel * es;
    if (st->numel == 0) {
        static char dummy[16];
        st->data = dummy;
        return GF_OK;
    }
#ifdef GRAFT_DIST_HAVE_DLPACK
    gf_device_info info;
    if (!force_copy && gf_tensor_is_contiguous(t) &&
        gf_device_get_info(gf_tensor_device(t), &info) == GF_OK &&
        info.host_addressable) {
        st->dl = gf_to_dlpack(st->t);
        if (st->dl) {
            st->data = (char *)st->dl->dl_tensor.data + st->dl->dl_tensor.byte_offset;
            st->in_place = true;
            return GF_OK;
        }
        gf_clear_error(); /* not exportable: stage through the host */
    }
#endif
    st->host = malloc(st->nbytes);
    if (!st->host)
        return gd_error(GF_ERR_OUT_OF_MEMORY, "%s: no memory for a %zu-byte host buffer", fn,
                        st->nbytes);
    st->data = st->host;
    if (copy_in) return gf_tensor_to_host(st->t, st->host, st->nbytes);
    return GF_OK;
}

/* Writes the result back (when writeback and staged) and frees. */
static gf_status stage_close(stage *st, bool writeback, gf_status s) {
    if (s == GF_OK && writeback && st->host && st->numel > 0)
        s = gf_tensor_from_host(st->t, st->host, st->nbytes);
    free(st->host);
    st->host = NULL;
#ifdef GRAFT_DIST_HAVE_DLPACK
    if (st->dl && st->dl->deleter) st->dl->deleter(st->dl);
    st->dl = NULL;
#endif
    return s;
}

/* ------------------------------------------------------------ chunked MPI */

static gf_status allreduce_chunks(void *data, int64_t n, gf_dtype dtype, MPI_Op op,
                                  const char *fn) {
    size_t es = gf_dtype_size(dtype);
    for (int64_t at = 0; at < n; at += GD_CHUNK) {
        int c = (int)(n - at < GD_CHUNK ? n - at : GD_CHUNK);
        gf_status s = gd_mpi_check(MPI_Allreduce(MPI_IN_PLACE, (char *)data + (size_t)at * es, c,
                                                 gd_mpi_type(dtype), op, gd_g.comm),
                                   fn);
        if (s != GF_OK) return s;
    }
    return GF_OK;
}

static gf_status bcast_chunks(void *data, int64_t n, gf_dtype dtype, int root, const char *fn) {
    size_t es = gf_dtype_size(dtype);
    for (int64_t at = 0; at < n; at += GD_CHUNK) {
        int c = (int)(n - at < GD_CHUNK ? n - at : GD_CHUNK);
        gf_status s = gd_mpi_check(MPI_Bcast((char *)data + (size_t)at * es, c,
                                             gd_mpi_type(dtype), root, gd_g.comm),
                                   fn);
        if (s != GF_OK) return s;
    }
    return GF_OK;
}

/* ------------------------------------------------------------ entry points */

/* The common frame: checks, agreement, staging, the MPI call, write-back. */
static gf_status run(kind k, gf_tensor *out, const gf_tensor *in, gf_reduce_op op, int root) {
    const char *fn = kind_fn[k];
    gf_status s = gd_require_init(fn);
    if (s != GF_OK) return s; /* no group: nothing to agree with */
    desc d;
    memset(&d, 0, sizeof d);
    d.kind = (int32_t)k;
    d.op = k == K_ALL_REDUCE || k == K_REDUCE_SCATTER ? (int32_t)op : -1;
    d.root = k == K_BROADCAST ? root : -1;
    int W = gd_g.size;
    MPI_Op mop = MPI_OP_NULL;
    /* ---- local checks: their result travels in the descriptor */
    if (k != K_BARRIER) {
        const gf_tensor *shape_of = in ? in : out;
        s = describe(fn, shape_of, &d);
        if (s == GF_OK && (k == K_ALL_GATHER || k == K_REDUCE_SCATTER)) {
            s = out ? GF_OK : gd_error(GF_ERR_INVALID, "%s: out is NULL", fn);
            /* The big side is [W * n0, ...] or [W, n0, ...] of the small. */
            const gf_tensor *big = k == K_ALL_GATHER ? out : in;
            const gf_tensor *small = k == K_ALL_GATHER ? in : out;
            if (s == GF_OK && gf_tensor_dtype(out) != gf_tensor_dtype(in))
                s = gd_error(GF_ERR_DTYPE, "%s: out is %s but in is %s: they must match", fn,
                             gf_dtype_name(gf_tensor_dtype(out)),
                             gf_dtype_name(gf_tensor_dtype(in)));
            if (s == GF_OK) {
                int rs = gf_tensor_rank(small), rb = gf_tensor_rank(big);
                const int64_t *zs = gf_tensor_sizes(small), *zb = gf_tensor_sizes(big);
                bool cat = rs > 0 && rb == rs && zb[0] == (int64_t)W * zs[0] &&
                           !memcmp(zb + 1, zs + 1, sizeof(int64_t) * (size_t)(rs - 1));
                bool stack = rb == rs + 1 && zb[0] == W &&
                             !memcmp(zb + 1, zs, sizeof(int64_t) * (size_t)rs);
                if (!cat && !stack) {
                    char a[200], b[200];
                    gf_tensor_describe(big, a, sizeof a);
                    gf_tensor_describe(small, b, sizeof b);
                    s = gd_error(GF_ERR_SHAPE, "%s: %s %s does not fit %s %s over %d ranks: it "
                                 "must be [%d * n0, ...] or [%d, n0, ...] of [n0, ...]", fn,
                                 k == K_ALL_GATHER ? "out" : "in", a,
                                 k == K_ALL_GATHER ? "in" : "out", b, W, W, W);
                }
                if (s == GF_OK && gf_tensor_numel(small) > INT_MAX)
                    s = gd_error(GF_ERR_OVERFLOW, "%s: %lld elements per rank exceed MPI's "
                                 "int count; split the tensor", fn,
                                 (long long)gf_tensor_numel(small));
            }
        }
        if (s == GF_OK && (k == K_ALL_REDUCE || k == K_REDUCE_SCATTER)) {
            mop = gd_mpi_op((gf_dtype)d.dtype, op, fn);
            if (mop == MPI_OP_NULL) s = gf_last_status();
        }
        if (s == GF_OK && k == K_BROADCAST && (root < 0 || root >= W))
            s = gd_error(GF_ERR_INVALID, "%s: root %d is not a rank (0 to %d)", fn, root, W - 1);
    }
    d.status = (int32_t)s;
    /* ---- staging buffers before agreeing, so that no rank fails after */
    gf_scope_begin();
    stage a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    if (s == GF_OK && k != K_BARRIER) {
        bool two = k == K_ALL_GATHER || k == K_REDUCE_SCATTER;
        /* An input that overlaps the output is copied (MPI forbids aliasing). */
        bool alias = two && gf_tensor_shares_storage(in, out);
        s = stage_open(fn, two ? in : out, k != K_BROADCAST || gd_g.rank == root, alias, &a);
        if (s == GF_OK && two) s = stage_open(fn, out, false, false, &b);
        d.status = (int32_t)s;
    }
    pthread_mutex_lock(&gd_mpi_lock);
    gf_status agreed = agree(&d);
    if (s == GF_OK) s = agreed;
    if (s == GF_OK && k != K_BARRIER) {
        gf_dtype dt = (gf_dtype)d.dtype;
        MPI_Datatype mt = gd_mpi_type(dt);
        switch (k) {
        case K_ALL_REDUCE:
            s = allreduce_chunks(a.data, a.numel, dt, mop, fn);
            if (s == GF_OK && op == GF_REDUCE_MEAN) gd_scale_host(a.data, a.numel, dt, W);
            break;
        case K_BROADCAST: s = bcast_chunks(a.data, a.numel, dt, root, fn); break;
        case K_ALL_GATHER:
            s = gd_mpi_check(MPI_Allgather(a.data, (int)a.numel, mt, b.data, (int)a.numel, mt,
                                           gd_g.comm),
                             fn);
            break;
        case K_REDUCE_SCATTER:
            s = gd_mpi_check(MPI_Reduce_scatter_block(a.data, b.data, (int)b.numel, mt, mop,
                                                      gd_g.comm),
                             fn);
            if (s == GF_OK && op == GF_REDUCE_MEAN) gd_scale_host(b.data, b.numel, dt, W);
            break;
        default: break;
        }
    }
    pthread_mutex_unlock(&gd_mpi_lock);
    bool two = k == K_ALL_GATHER || k == K_REDUCE_SCATTER;
    s = stage_close(&a, !two, s);
    s = stage_close(&b, two, s);
    gf_scope_end();
    return s;
}

gf_status gf_dist_all_reduce(gf_tensor *t, gf_reduce_op op) {
    return run(K_ALL_REDUCE, t, NULL, op, 0);
}
gf_status gf_dist_broadcast(gf_tensor *t, int root) { return run(K_BROADCAST, t, NULL, 0, root); }
gf_status gf_dist_all_gather(gf_tensor *out, const gf_tensor *in) {
    return run(K_ALL_GATHER, out, in, 0, 0);
}
gf_status gf_dist_reduce_scatter(gf_tensor *out, const gf_tensor *in, gf_reduce_op op) {
    return run(K_REDUCE_SCATTER, out, in, op, 0);
}
gf_status gf_dist_barrier(void) { return run(K_BARRIER, NULL, NULL, 0, 0); }

/* ------------------------------------------------------------ async, host */

struct gf_dist_work {
    void *data;
    int64_t count;
    gf_dtype dtype;
    gf_reduce_op op;
    int n_req;
    MPI_Request *req;
    bool done;
    gf_dist_work *prev, *next; /* the pending list */
};
static gf_dist_work *pending; /* guarded by gd_mpi_lock */

static void unlink_work(gf_dist_work *w) {
    if (w->prev) w->prev->next = w->next;
    else if (pending == w) pending = w->next;
    if (w->next) w->next->prev = w->prev;
    w->prev = w->next = NULL;
}

gf_dist_work *gf_dist_all_reduce_host_async(void *data, int64_t count, gf_dtype dtype,
                                            gf_reduce_op op) {
    const char *fn = "gf_dist_all_reduce_host_async";
    if (gd_require_init(fn) != GF_OK) return NULL;
    if (count < 0 || (count > 0 && !data)) {
        gd_error(GF_ERR_INVALID, "%s: count %lld with data %p", fn, (long long)count, data);
        return NULL;
    }
    if (gd_mpi_type(dtype) == MPI_DATATYPE_NULL) {
        gd_error(GF_ERR_DTYPE, "%s: unknown dtype %d", fn, (int)dtype);
        return NULL;
    }
    MPI_Op mop = gd_mpi_op(dtype, op, fn);
    if (mop == MPI_OP_NULL) return NULL;
    gf_dist_work *w = calloc(1, sizeof *w);
    int n_req = count == 0 ? 1 : (int)((count + GD_CHUNK - 1) / GD_CHUNK);
    if (w) w->req = calloc((size_t)n_req, sizeof *w->req);
    if (!w || !w->req) {
        if (w) free(w);
        gd_error(GF_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
        return NULL;
    }
    *w = (gf_dist_work){.data = data, .count = count, .dtype = dtype, .op = op, .n_req = 0,
                        .req = w->req};
    size_t es = gf_dtype_size(dtype);
    gf_status s = GF_OK;
    pthread_mutex_lock(&gd_mpi_lock);
    for (int i = 0; i < n_req && s == GF_OK; i++) {
        int64_t at = (int64_t)i * GD_CHUNK;
        int c = (int)(count - at < GD_CHUNK ? count - at : GD_CHUNK);
        static char dummy[16];
        void *p = count ? (char *)data + (size_t)at * es : dummy;
        s = gd_mpi_check(MPI_Iallreduce(MPI_IN_PLACE, p, c, gd_mpi_type(dtype), mop, gd_g.comm,
                                        &w->req[i]),
                         "MPI_Iallreduce");
        if (s == GF_OK) w->n_req++;
    }
    if (s == GF_OK) {
        w->next = pending;
        if (pending) pending->prev = w;
        pending = w;
    } else {
        MPI_Waitall(w->n_req, w->req, MPI_STATUSES_IGNORE);
    }
    pthread_mutex_unlock(&gd_mpi_lock);
    if (s != GF_OK) {
        free(w->req);
        free(w);
        return NULL;
    }
    return w;
}

void gd_progress_locked(void) {
    for (gf_dist_work *w = pending; w; w = w->next) {
        int flag = 0;
        if (!w->done && MPI_Testall(w->n_req, w->req, &flag, MPI_STATUSES_IGNORE) == MPI_SUCCESS &&
            flag)
            w->done = true;
    }
}

gf_status gf_dist_work_test(gf_dist_work *w, bool *done) {
    if (!w) return gd_error(GF_ERR_INVALID, "gf_dist_work_test: work is NULL");
    pthread_mutex_lock(&gd_mpi_lock);
    int flag = w->done;
    gf_status s = GF_OK;
    if (!flag) {
        s = gd_mpi_check(MPI_Testall(w->n_req, w->req, &flag, MPI_STATUSES_IGNORE),
                         "MPI_Testall");
        if (s == GF_OK && flag) w->done = true;
    }
    gd_progress_locked();
    pthread_mutex_unlock(&gd_mpi_lock);
    if (done) *done = flag != 0;
    return s;
}

gf_status gf_dist_work_wait(gf_dist_work *w) {
    if (!w) return gd_error(GF_ERR_INVALID, "gf_dist_work_wait: work is NULL");
    pthread_mutex_lock(&gd_mpi_lock);
    gf_status s = GF_OK;
    if (!w->done) s = gd_mpi_check(MPI_Waitall(w->n_req, w->req, MPI_STATUSES_IGNORE),
                                   "MPI_Waitall");
    unlink_work(w);
    pthread_mutex_unlock(&gd_mpi_lock);
    if (s == GF_OK && w->op == GF_REDUCE_MEAN) gd_scale_host(w->data, w->count, w->dtype,
                                                            gd_g.size);
    free(w->req);
    free(w);
    return s;
}
