/* SPDX-License-Identifier: BSD-3-Clause */
/* fw_level.c — dual levels, tangent entries, make_dual / unpack_dual, and
 * the hook every op runs (gf__fw_apply).
 *
 * A level is a serial number on a process-wide stack; a tensor's entry names
 * the serial it belongs to, so closing a level makes its entries dead at
 * once (they are pruned whenever the tensor's entries are next written, and
 * freed with the tensor). A tangent is kept laid out like its primal over
 * the primal's storage where it can be (the same strides and offset): then
 * the tangent of any view of that storage is the same view of the tangent's
 * storage, which is how a write into a view reaches its base's tangent. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autograd/ag_internal.h"
#include "fw_internal.h"

atomic_int gf__fw_depth;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t g_ids[GF_FWAD_MAX_LEVELS];
static uint64_t g_next_id = 1;
static int64_t g_batch[GF_FWAD_MAX_LEVELS];
static atomic_bool g_refused[GF_FWAD_MAX_LEVELS];
/* The name of the op that refused a batched level first: a copy (the name
 * may be a custom function's, freed when its failed call returns). */
static char g_refused_op[GF_FWAD_MAX_LEVELS][96];
static _Thread_local uint64_t tl_mask;
static _Thread_local int tl_rule_level = -1; /* the level whose rule runs */

uint64_t gf__fw_level_id(int d) {
    if (d < 0 || d >= atomic_load(&gf__fw_depth)) return 0;
    return __atomic_load_n(&g_ids[d], __ATOMIC_ACQUIRE);
}

bool gf__fw_masked(int d) { return (tl_mask >> d) & 1u; }

uint64_t gf__fw_mask_push(int d) {
    uint64_t prev = tl_mask;
    tl_mask |= (uint64_t)1 << d;
    return prev;
}

void gf__fw_mask_pop(uint64_t prev) { tl_mask = prev; }

uint64_t gf__fw_mask_all(void) {
    uint64_t prev = tl_mask;
    tl_mask = ~(uint64_t)0;
    return prev;
}

/* ------------------------------------------------------------ levels */
static gf_status level_enter(int *level, int64_t batch) {
    if (!level) return gf__null_arg_of("gf_fwad_level_enter", "level", GF__ARG_OUT);
    pthread_mutex_lock(&g_lock);
    int d = atomic_load(&gf__fw_depth);
    if (d >= GF_FWAD_MAX_LEVELS) {
        pthread_mutex_unlock(&g_lock);
        return gf__error(GF_ERR_INVALID, "gf_fwad_level_enter: %d dual levels are open already, "
                         "the most that may nest (GF_FWAD_MAX_LEVELS); exit one first", d);
    }
    g_batch[d] = batch;
    atomic_store(&g_refused[d], false);
    g_refused_op[d][0] = '\0';
    __atomic_store_n(&g_ids[d], g_next_id++, __ATOMIC_RELEASE);
    atomic_store(&gf__fw_depth, d + 1);
    pthread_mutex_unlock(&g_lock);
    *level = d;
    return GF_OK;
}

gf_status gf_fwad_level_enter(int *level) { return level_enter(level, 0); }

gf_status gf__fw_level_enter_batched(int *level, int64_t batch) {
    if (batch < 1)
        return gf__error(GF_ERR_INVALID, "internal: a batched dual level needs a batch count "
                         ">= 1, not %lld", (long long)batch);
    return level_enter(level, batch);
}

int64_t gf__fw_batch(int d) {
    if (d < 0 || d >= atomic_load(&gf__fw_depth)) return 0;
    return g_batch[d];
}

int64_t gf__fw_rule_batch(void) { return gf__fw_batch(tl_rule_level); }

gf_status gf__fw_batch_refuse(int d, const char *op) {
    if (d < 0) d = tl_rule_level;
    if (d >= 0 && d < GF_FWAD_MAX_LEVELS) {
        pthread_mutex_lock(&g_lock);
        if (!atomic_load(&g_refused[d])) {
            snprintf(g_refused_op[d], sizeof g_refused_op[d], "%s", op ? op : "an op");
            atomic_store(&g_refused[d], true);
        }
        pthread_mutex_unlock(&g_lock);
    }
    return gf__error(GF_ERR_UNSUPPORTED, "%s: the jvp rule of this op does not handle batched "
                     "tangents (a Jacobian computed in batched passes); gf_jacfwd / gf_jacrev "
                     "compute it one basis vector at a time instead", op);
}

bool gf__fw_batch_refused(int d, const char **op) {
    if (d < 0 || d >= GF_FWAD_MAX_LEVELS || !atomic_load(&g_refused[d])) return false;
    if (op) *op = g_refused_op[d];
    return true;
}

gf_tensor *gf__fw_batch_align(gf_tensor *t, int to) {
    if (!t) return NULL;
    int r = t->rank - 1;
    if (r >= to) return gf__ret(gf_tensor_retain(t));
    if (to + 1 > GF_MAX_RANK) {
        gf__fw_batch_refuse(-1, "batched tangent (rank over GF_MAX_RANK)");
        return NULL;
    }
    int64_t s[GF_MAX_RANK];
    s[0] = t->sizes[0];
    for (int i = 0; i < to - r; i++) s[1 + i] = 1;
    memcpy(s + 1 + to - r, t->sizes + 1, sizeof(int64_t) * (size_t)r);
    return gf_reshape(t, s, to + 1);
}

gf_status gf_fwad_level_exit(int level) {
    pthread_mutex_lock(&g_lock);
    int d = atomic_load(&gf__fw_depth);
    if (d == 0 || level != d - 1) {
        pthread_mutex_unlock(&g_lock);
        if (d == 0)
            return gf__error(GF_ERR_INVALID, "gf_fwad_level_exit: level %d is not open (no dual "
                             "level is); enter one with gf_fwad_level_enter first", level);
        return gf__error(GF_ERR_INVALID, "gf_fwad_level_exit: level %d is not the innermost open "
                         "dual level (that is %d); exit levels in the reverse order of entering "
                         "them", level, d - 1);
    }
    atomic_store(&gf__fw_depth, d - 1);
    __atomic_store_n(&g_ids[d - 1], 0, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&g_lock);
    return GF_OK;
}

int gf_fwad_level_count(void) { return atomic_load(&gf__fw_depth); }

/* Resolves a public level argument to an open level, or -1 (error set). */
static int resolve_level(int level, const char *op) {
    int d = atomic_load(&gf__fw_depth);
    if (d == 0) {
        gf__error(GF_ERR_AUTOGRAD, "%s: no dual level is open; call gf_fwad_level_enter first", op);
        return -1;
    }
    if (level == GF_FWAD_LEVEL_CURRENT) return d - 1;
    if (level < 0 || level >= d) {
        gf__error(GF_ERR_AUTOGRAD, "%s: dual level %d is not open (levels 0 to %d are); pass an "
                  "index gf_fwad_level_enter returned, or GF_FWAD_LEVEL_CURRENT", op, level, d - 1);
        return -1;
    }
    return level;
}

/* ------------------------------------------------------------ entries */
static bool id_live(uint64_t id) {
    int d = atomic_load(&gf__fw_depth);
    for (int i = 0; i < d; i++)
        if (__atomic_load_n(&g_ids[i], __ATOMIC_ACQUIRE) == id) return true;
    return false;
}

void gf__fw_entries_free(gf_fw_entry *e) {
    while (e) {
        gf_fw_entry *next = e->next;
        gf_tensor_release(e->tangent);
        free(e);
        e = next;
    }
}

static gf_fw_entry *find_entry(const gf_tensor *t, uint64_t id) {
    const gf_autograd_meta *m = t ? t->autograd : NULL;
    for (gf_fw_entry *e = m ? m->fw : NULL; e; e = e->next)
        if (e->level_id == id) return e;
    return NULL;
}

gf_status gf__fw_set(gf_tensor *t, int d, gf_tensor *tangent) {
    uint64_t id = gf__fw_level_id(d);
    if (!id) return gf__error(GF_ERR_AUTOGRAD, "internal: dual level %d is not open", d);
    gf_autograd_meta *m = gf__ag_meta(t);
    if (!m) return gf__status();
    /* Prune the entries of closed levels while walking the list. */
    gf_fw_entry **pp = &m->fw, *found = NULL;
    while (*pp) {
        gf_fw_entry *e = *pp;
        if (e->level_id == id) found = e;
        if (e->level_id != id && !id_live(e->level_id)) {
            *pp = e->next;
            e->next = NULL;
            gf__fw_entries_free(e);
            continue;
        }
        pp = &e->next;
    }
    if (!found) {
        found = calloc(1, sizeof *found);
        if (!found) return gf__error(GF_ERR_OUT_OF_MEMORY, "forward AD: out of host memory for a tangent");
        found->level_id = id;
        found->next = m->fw;
        m->fw = found;
    }
    gf_tensor *old = found->tangent;
    found->tangent = tangent ? gf_tensor_retain(tangent) : NULL;
    gf_tensor_release(old);
    return GF_OK;
}

gf_status gf__fw_snapshot(const gf_tensor *t, gf_fw_entry **out) {
    *out = NULL;
    int depth = atomic_load(&gf__fw_depth);
    gf_fw_entry *head = NULL;
    for (int d = 0; d < depth; d++) {
        gf_tensor *tan = gf__fw_tangent(t, d);
        if (!tan) continue;
        gf_fw_entry *e = calloc(1, sizeof *e);
        gf_tensor *a = e ? gf__ag_alias(tan) : NULL;
        gf_tensor_release(tan);
        if (!a) {
            free(e);
            gf__fw_entries_free(head);
            return gf__error(GF_ERR_OUT_OF_MEMORY, "forward AD: out of host memory for a saved "
                             "tangent");
        }
        e->level_id = gf__fw_level_id(d);
        e->tangent = a;
        e->next = head;
        head = e;
    }
    *out = head;
    return GF_OK;
}

gf_status gf__fw_restore(gf_tensor *t, const gf_fw_entry *snap) {
    int depth = atomic_load(&gf__fw_depth);
    for (const gf_fw_entry *e = snap; e; e = e->next)
        for (int d = 0; d < depth; d++)
            if (gf__fw_level_id(d) == e->level_id) {
                gf_status s = gf__fw_set(t, d, e->tangent);
                if (s != GF_OK) return s;
            }
    return GF_OK;
}

static int64_t storage_numel(const gf_tensor *t) {
    return (int64_t)(t->storage->nbytes / gf_dtype_size(t->dtype));
}

/* One past the last element t reaches in its storage (0 when empty). */
static int64_t extent(const gf_tensor *t) {
    int64_t hi = t->offset;
    for (int i = 0; i < t->rank; i++) {
        if (t->sizes[i] == 0) return 0;
        if (t->strides[i] > 0) hi += (t->sizes[i] - 1) * t->strides[i];
    }
    return hi + 1;
}

/* tan is laid out like primal over a storage that holds primal's whole
 * storage: the same strides (where a dim has more than one element) and
 * offset, the same dtype. */
static bool same_layout(const gf_tensor *tan, const gf_tensor *primal) {
    if (tan->dtype != primal->dtype || tan->rank != primal->rank || tan->offset != primal->offset)
        return false;
    for (int i = 0; i < tan->rank; i++) {
        if (tan->sizes[i] != primal->sizes[i]) return false;
        if (tan->sizes[i] > 1 && tan->strides[i] != primal->strides[i]) return false;
    }
    return storage_numel(tan) >= storage_numel(primal);
}

/* tan ([B, *primal]) holds B tangents each laid out like primal over a
 * storage of primal's storage's size, S elements apart: the strides of
 * primal after a leading stride S (S >= the storage's size when B > 1), the
 * same offset. Then the tangents of any view of primal's storage are the
 * same view of each of them. */
static bool batched_like(const gf_tensor *tan, const gf_tensor *primal, int64_t batch) {
    if (tan->dtype != primal->dtype || tan->rank != primal->rank + 1 || tan->sizes[0] != batch ||
        tan->offset != primal->offset)
        return false;
    for (int i = 0; i < primal->rank; i++) {
        if (tan->sizes[i + 1] != primal->sizes[i]) return false;
        if (primal->sizes[i] > 1 && tan->strides[i + 1] != primal->strides[i]) return false;
    }
    int64_t n = storage_numel(primal), s0 = tan->strides[0];
    if (batch > 1 && s0 < n) return false;
    return storage_numel(tan) >= (batch - 1) * (batch > 1 ? s0 : 0) + n;
}

/* [batch, *t] over src: dim 0 of stride s0, then t's sizes, strides and
 * offset, registered as a view of src. New reference or NULL. */
static gf_tensor *batched_view_of(gf_tensor *src, const gf_tensor *t, int64_t batch, int64_t s0) {
    int64_t sizes[GF_MAX_RANK], strides[GF_MAX_RANK];
    sizes[0] = batch;
    strides[0] = s0;
    memcpy(sizes + 1, t->sizes, sizeof(int64_t) * (size_t)t->rank);
    memcpy(strides + 1, t->strides, sizeof(int64_t) * (size_t)t->rank);
    gf_tensor *v = gf__view(src, sizes, strides, t->rank + 1, t->offset);
    if (v && gf__ag_on_view(src, v, GF_VIEW_DEFAULT) != GF_OK) {
        gf_tensor_release(v);
        v = NULL;
    }
    return v;
}

/* View t's region of each of base's batched tangents tan: [B, *t]. New
 * reference (registered as a view of tan), or NULL when tan is not laid
 * out for it. */
static gf_tensor *batched_region(gf_tensor *tan, const gf_tensor *base, const gf_tensor *t,
                                 int64_t batch) {
    if (t->dtype != base->dtype || t->rank + 1 > GF_MAX_RANK || !batched_like(tan, base, batch) ||
        extent(t) > storage_numel(base))
        return NULL;
    return batched_view_of(tan, t, batch, tan->strides[0]);
}

/* B zero tangents of t laid out as batched_like wants, one storage of t's
 * storage's size each. New reference, no scope. */
static gf_tensor *batched_shadow_zeros(const gf_tensor *t, int64_t batch) {
    int64_t s0 = storage_numel(t), n;
    if (t->rank + 1 > GF_MAX_RANK || !gf__mul_ok(batch, s0, &n)) return NULL;
    gf_tensor *flat = gf__empty(&n, 1, t->dtype, t->storage->device);
    if (!flat || gf__fill(flat, 0.0) != GF_OK) {
        gf_tensor_release(flat);
        return NULL;
    }
    gf_tensor *v = batched_view_of(flat, t, batch, s0);
    gf_tensor_release(flat);
    return v;
}

gf_tensor *gf__fw_tangent(const gf_tensor *t, int d) {
    if (!t || !t->autograd || gf__fw_masked(d) || !gf__dtype_differentiable(t->dtype)) return NULL;
    uint64_t id = gf__fw_level_id(d);
    if (!id) return NULL;
    gf_fw_entry *e = find_entry(t, id);
    if (e) return e->tangent ? gf_tensor_retain(e->tangent) : NULL;
    /* A view without an entry of its own: its region of the base's
     * tangent, when that tangent is laid out like the base. */
    const gf_tensor *base = t->autograd->base;
    gf_fw_entry *be = base ? find_entry(base, id) : NULL;
    if (be && be->tangent && g_batch[d] > 0) {
        /* the same region of each of the base's B tangents, where they
         * are laid out like the base (batched_like); refused otherwise */
        gf_tensor *v = batched_region(be->tangent, base, t, g_batch[d]);
        if (!v) {
            gf__fw_batch_refuse(d, "a view of a tensor with a batched tangent");
            return NULL;
        }
        if (gf__fw_set((gf_tensor *)t, d, v) != GF_OK) {
            gf_tensor_release(v);
            return NULL;
        }
        return v;
    }
    if (!be || !be->tangent || base->dtype != t->dtype || !same_layout(be->tangent, base) ||
        extent(t) > storage_numel(be->tangent))
        return NULL;
    gf_tensor *v = gf__view(be->tangent, t->sizes, t->strides, t->rank, t->offset);
    if (!v) return NULL;
    if (gf__ag_on_view(be->tangent, v, GF_VIEW_DEFAULT) != GF_OK ||
        gf__fw_set((gf_tensor *)t, d, v) != GF_OK) {
        gf_tensor_release(v);
        return NULL;
    }
    return v;
}

bool gf__fw_any_tangent(const gf_tensor *const *ts, int n) {
    if (!gf__fw_enabled()) return false;
    int depth = atomic_load(&gf__fw_depth);
    for (int d = 0; d < depth; d++)
        for (int i = 0; i < n; i++) {
            gf_tensor *tt = ts[i] ? gf__fw_tangent(ts[i], d) : NULL;
            if (tt) {
                gf_tensor_release(tt);
                return true;
            }
        }
    return false;
}

/* Zeros laid out like t over a storage of t's storage's size (a view of a
 * new flat tensor, registered as its view). New reference, no scope. */
static gf_tensor *shadow_zeros(const gf_tensor *t) {
    int64_t n = storage_numel(t);
    gf_tensor *flat = gf__empty(&n, 1, t->dtype, t->storage->device);
    if (!flat || gf__fill(flat, 0.0) != GF_OK) {
        gf_tensor_release(flat);
        return NULL;
    }
    gf_tensor *v = gf__view(flat, t->sizes, t->strides, t->rank, t->offset);
    if (v && gf__ag_on_view(flat, v, GF_VIEW_DEFAULT) != GF_OK) {
        gf_tensor_release(v);
        v = NULL;
    }
    gf_tensor_release(flat);
    return v;
}

/* ------------------------------------------------------------ make / unpack */
/* A view of t with t's geometry, recorded as a view (so reverse mode flows
 * through it and its tangents are t's). New reference, no scope. */
static gf_tensor *alias_view(const gf_tensor *t) {
    gf_tensor *v = gf__view(t, t->sizes, t->strides, t->rank, t->offset);
    if (v && gf__ag_record_view(t, v, GF_VIEW_KIND_RESHAPE, NULL, 0, true) != GF_OK) {
        gf_tensor_release(v);
        v = NULL;
    }
    return v;
}

static gf_status check_tangent(const gf_tensor *primal, const gf_tensor *tangent, const char *op,
                               const char *what) {
    char a[200], b[200];
    if (tangent->rank != primal->rank ||
        memcmp(tangent->sizes, primal->sizes, sizeof(int64_t) * (size_t)primal->rank))
        return gf__error(GF_ERR_SHAPE, "%s: the %s has sizes %s but its primal has sizes %s; a "
                         "tangent must have its primal's shape", op, what,
                         gf__shape_str(tangent->sizes, tangent->rank, a, sizeof a),
                         gf__shape_str(primal->sizes, primal->rank, b, sizeof b));
    if (tangent->dtype != primal->dtype)
        return gf__error(GF_ERR_DTYPE, "%s: the %s is %s but its primal is %s; convert it with "
                         "gf_to_dtype", op, what, gf_dtype_name(tangent->dtype),
                         gf_dtype_name(primal->dtype));
    if (tangent->storage->device != primal->storage->device)
        return gf__error(GF_ERR_DEVICE, "%s: the %s is on %s but its primal is on %s; move it "
                         "with gf_to_device", op, what, tangent->storage->device->spec,
                         primal->storage->device->spec);
    return GF_OK;
}

gf_tensor *gf_fwad_make_dual(const gf_tensor *primal, const gf_tensor *tangent, int level) {
    static const char op[] = "gf_fwad_make_dual";
    if (!primal) {
        gf__null_arg(op, "primal");
        return NULL;
    }
    if (!tangent) {
        gf__null_arg(op, "tangent");
        return NULL;
    }
    int d = resolve_level(level, op);
    if (d < 0) return NULL;
    if (g_batch[d] > 0) {
        gf__fw_batch_refuse(d, op);
        return NULL;
    }
    if (!gf__dtype_differentiable(primal->dtype)) {
        gf__error(GF_ERR_DTYPE, "%s: the primal is %s; only floating-point and complex tensors "
                  "carry tangents (convert it with gf_to_dtype)", op, gf_dtype_name(primal->dtype));
        return NULL;
    }
    if (check_tangent(primal, tangent, op, "tangent") != GF_OK) return NULL;
    int sc = gf__scope_suspend();
    gf_tensor *tan = NULL;
    if (same_layout(tangent, primal) && tangent->storage != primal->storage) {
        tan = gf_tensor_retain((gf_tensor *)tangent);
    } else {
        /* Laid out like the primal, so views of the dual find theirs (and
         * never the primal's own memory: an in-place op writes both). */
        tan = shadow_zeros(primal);
        uint64_t prev = gf__fw_mask_push(d);
        if (tan && gf_copy_(tan, tangent) != GF_OK) {
            gf_tensor_release(tan);
            tan = NULL;
        }
        gf__fw_mask_pop(prev);
    }
    gf_tensor *dual = tan ? alias_view(primal) : NULL;
    if (dual && gf__fw_set(dual, d, tan) != GF_OK) {
        gf_tensor_release(dual);
        dual = NULL;
    }
    gf_tensor_release(tan);
    gf__scope_resume(sc);
    return gf__ret(dual);
}

gf_tensor *gf__fw_batched_dual(const gf_tensor *primal, gf_tensor *seed, int d) {
    int sc = gf__scope_suspend();
    gf_tensor *dual = alias_view(primal);
    if (dual && gf__fw_set(dual, d, seed) != GF_OK) {
        gf_tensor_release(dual);
        dual = NULL;
    }
    gf__scope_resume(sc);
    return dual;
}

gf_status gf_fwad_unpack_dual(const gf_tensor *dual, int level, gf_tensor **primal,
                              gf_tensor **tangent) {
    static const char op[] = "gf_fwad_unpack_dual";
    if (primal) *primal = NULL;
    if (tangent) *tangent = NULL;
    if (!dual) return gf__null_arg(op, "dual");
    int d = resolve_level(level, op);
    if (d < 0) return gf__status();
    int sc = gf__scope_suspend();
    gf_tensor *p = NULL, *t = gf__fw_tangent(dual, d);
    gf_status s = GF_OK;
    if (primal) {
        p = alias_view(dual);
        if (!p || gf__fw_set(p, d, NULL) != GF_OK) s = gf__status();
    }
    gf__scope_resume(sc);
    if (s != GF_OK) {
        gf_tensor_release(p);
        gf_tensor_release(t);
        return s;
    }
    if (primal) *primal = gf__ret(p);
    if (tangent) *tangent = gf__ret(t);
    else gf_tensor_release(t);
    return GF_OK;
}

/* ------------------------------------------------------------ the op hook */
static bool shares(const gf_tensor *a, const gf_tensor *b) {
    return a && b && a->storage == b->storage;
}

/* r fitted to y: converted to y's dtype, broadcast to its sizes; then, for
 * an output that is not a view, a tensor of its own laid out like y. In the
 * open scope. */
static gf_tensor *fit(gf_tensor *r, const gf_tensor *y, const gf_tensor *const *x,
                      gf_tensor *const *t, int nx, bool view, int64_t batch) {
    if (r && r->dtype != y->dtype) {
        if (gf_dtype_is_complex(r->dtype) && !gf_dtype_is_complex(y->dtype)) r = gf_real(r);
        r = gf_to_dtype(r, y->dtype);
    }
    if (r && batch > 0) {
        /* [B, *y]: a tensor of its own (views of it are never derived from
         * its layout at a batched level), unless the output is a view */
        if (y->rank + 1 > GF_MAX_RANK) {
            gf__fw_batch_refuse(-1, "batched tangent (rank over GF_MAX_RANK)");
            return NULL;
        }
        int64_t s[GF_MAX_RANK];
        s[0] = batch;
        memcpy(s + 1, y->sizes, sizeof(int64_t) * (size_t)y->rank);
        if (r->rank != y->rank + 1 || memcmp(r->sizes, s, sizeof(int64_t) * (size_t)(y->rank + 1)))
            r = gf_expand(r, s, y->rank + 1);
        if (!r || view) return r;
        bool copy = !gf__is_contiguous(r) || shares(r, y);
        for (int i = 0; i < nx && !copy; i++) copy = shares(r, x[i]) || shares(r, t[i]);
        return copy ? gf_clone(r) : r;
    }
    if (r && (r->rank != y->rank || memcmp(r->sizes, y->sizes, sizeof(int64_t) * (size_t)y->rank)))
        r = gf_expand(r, y->sizes, y->rank);
    if (!r || view) return r;
    bool copy = !same_layout(r, y) || shares(r, y);
    for (int i = 0; i < nx && !copy; i++) copy = shares(r, x[i]) || shares(r, t[i]);
    if (!copy) return r;
    if (gf__is_contiguous(y) && y->offset == 0) return gf_clone(r);
    gf_tensor *z = gf__ret(shadow_zeros(y));
    if (z && gf_copy_(z, r) != GF_OK) return NULL;
    return z;
}

/* Runs the rule of level d for every float output. */
static gf_status apply_level(const char *op, gf__fw_rule rule, const void *p,
                             const gf_tensor *const *x, gf_tensor **t, int nx,
                             gf_tensor *const *y, int ny, bool view, int d, bool batch_ok) {
    int64_t batch = g_batch[d];
    if (batch > 0 && !batch_ok) return gf__fw_batch_refuse(d, op);
    uint64_t prev = gf__fw_mask_push(d);
    int prev_level = tl_rule_level;
    tl_rule_level = d;
    gf_status s = GF_OK;
    gf_scope_begin();
    for (int j = 0; j < ny && s == GF_OK; j++) {
        if (!y[j] || !gf__dtype_differentiable(y[j]->dtype)) continue;
        uint64_t seq = gf__error_seq();
        gf_tensor *r = rule(p, (gf_tensor *const *)x, t, y, j);
        if (r) r = fit(r, y[j], x, t, nx, view, batch);
        if (!r) {
            if (gf__error_seq() != seq) s = gf__status();
            continue;
        }
        r = gf_scope_keep(r);
        s = gf__fw_set(y[j], d, r);
        gf_tensor_release(r);
    }
    gf_scope_end();
    tl_rule_level = prev_level;
    gf__fw_mask_pop(prev);
    return s;
}

static gf_status apply(const char *op, gf__fw_rule rule, const void *p, const gf_tensor *const *x,
                       int nx, gf_tensor *const *y, int ny, bool view, bool batch_ok) {
    if (!gf__fw_enabled()) return GF_OK;
    int depth = atomic_load(&gf__fw_depth);
    gf_tensor *small[8] = {NULL}, **t = nx <= 8 ? small : calloc((size_t)nx, sizeof *t);
    if (!t) return gf__error(GF_ERR_OUT_OF_MEMORY, "%s: out of host memory for tangents", op);
    gf_status s = GF_OK;
    int sc = gf__scope_suspend();
    for (int d = 0; d < depth && s == GF_OK; d++) {
        if (gf__fw_masked(d)) continue;
        bool any = false;
        for (int i = 0; i < nx; i++) {
            t[i] = gf__fw_tangent(x[i], d);
            any |= t[i] != NULL;
        }
        if (any && !rule)
            s = gf__error(GF_ERR_AUTOGRAD, "%s: forward-mode AD has no jvp rule for this op, and an "
                          "input carries a tangent at dual level %d; compute it outside the dual "
                          "level (on gf_fwad_unpack_dual's primal), or use reverse mode", op, d);
        else if (any)
            s = apply_level(op, rule, p, x, t, nx, y, ny, view, d, batch_ok);
        for (int i = 0; i < nx; i++) {
            gf_tensor_release(t[i]);
            t[i] = NULL;
        }
    }
    gf__scope_resume(sc);
    if (t != small) free(t);
    return s;
}

gf_status gf__fw_apply(const char *op, gf__fw_rule rule, const void *p, const gf_tensor *const *x,
                       int nx, gf_tensor *const *y, int ny, bool view) {
    return apply(op, rule, p, x, nx, y, ny, view, false);
}

gf_status gf__fw_apply_batched(const char *op, gf__fw_rule rule, const void *p,
                               const gf_tensor *const *x, int nx, gf_tensor *const *y, int ny,
                               bool view) {
    return apply(op, rule, p, x, nx, y, ny, view, true);
}

/* ------------------------------------------------------------ in-place */
gf_status gf__fw_commit_level(gf_tensor *self, int d, gf_tensor *nt, const char *op) {
    if (g_batch[d] > 0) {
        /* in-place at a batched level: into the tangent self has or
         * derives from its base's; where neither has one, the base (or
         * self) gets B zero tangents laid out like it first */
        uint64_t id = gf__fw_level_id(d);
        gf_fw_entry *e = find_entry(self, id);
        gf_tensor *old = e ? (e->tangent ? gf_tensor_retain(e->tangent) : NULL)
                           : gf__fw_tangent(self, d);
        if (gf__fw_batch_refused(d, NULL)) {
            gf_tensor_release(old);
            return gf__fw_batch_refuse(d, op);
        }
        if (!old && !nt) return GF_OK; /* a constant written where no tangent lives */
        gf_status s = GF_OK;
        if (!old) {
            gf_tensor *base = self->autograd ? self->autograd->base : NULL;
            gf_tensor *owner = base && base->dtype == self->dtype && !find_entry(base, id) ? base
                                                                                          : self;
            if (e || (owner == self && base)) return gf__fw_batch_refuse(d, op);
            gf_tensor *bt = batched_shadow_zeros(owner, g_batch[d]);
            s = bt ? gf__fw_set(owner, d, bt) : gf__fw_batch_refuse(d, op);
            gf_tensor_release(bt);
            if (s == GF_OK && !(old = gf__fw_tangent(self, d))) s = gf__fw_batch_refuse(d, op);
            if (s != GF_OK) return s;
        }
        uint64_t prev = gf__fw_mask_push(d);
        s = nt ? gf_copy_(old, nt) : gf_zero_(old);
        gf__fw_mask_pop(prev);
        gf_tensor_release(old);
        return s;
    }
    gf_tensor *old = gf__fw_tangent(self, d);
    if (!nt && !old) return GF_OK;
    gf_status s = GF_OK;
    gf_tensor *bt = NULL, *vt = NULL;
    if (!old) {
        gf_autograd_meta *m = self->autograd;
        gf_tensor *base = m ? m->base : NULL;
        if (base && base->dtype == self->dtype && !find_entry(base, gf__fw_level_id(d))) {
            /* The base gets a zero tangent laid out like it, and self (a
             * view) its region of it. */
            bt = shadow_zeros(base);
            s = bt ? gf__fw_set(base, d, bt) : gf__status();
            vt = s == GF_OK ? gf__fw_tangent(self, d) : NULL;
            if (s == GF_OK && !vt)
                s = gf__error(GF_ERR_AUTOGRAD, "internal: the view's tangent could not be "
                              "derived from its base's");
        } else {
            vt = shadow_zeros(self);
            s = vt ? gf__fw_set(self, d, vt) : gf__status();
        }
    }
    uint64_t prev = gf__fw_mask_push(d);
    if (s == GF_OK && old) /* written into the tangent it has: its views and base see it */
        s = nt ? gf_copy_(old, nt) : gf_zero_(old);
    else if (s == GF_OK)
        s = gf_copy_(vt, nt);
    gf__fw_mask_pop(prev);
    gf_tensor_release(bt);
    gf_tensor_release(vt);
    gf_tensor_release(old);
    if (s != GF_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", gf__message());
        s = gf__error(s, "%s: updating the tangent at dual level %d failed: %s", op, d, why);
    }
    return s;
}

gf_status gf__fw_commit_inplace(gf_tensor *self, const gf_tensor *result, const char *op) {
    if (!gf__fw_enabled()) return GF_OK;
    int depth = atomic_load(&gf__fw_depth);
    gf_status s = GF_OK;
    int sc = gf__scope_suspend();
    for (int d = 0; d < depth && s == GF_OK; d++) {
        if (gf__fw_masked(d)) continue;
        gf_tensor *nt = result != self ? gf__fw_tangent(result, d) : NULL;
        s = gf__fw_commit_level(self, d, nt, op);
        gf_tensor_release(nt);
    }
    gf__scope_resume(sc);
    return s;
}

gf_status gf__fw_store(gf_tensor *y, int d, gf_tensor *r, const gf_tensor *const *x,
                       gf_tensor *const *t, int nx) {
    gf_scope_begin();
    gf_tensor *f = gf_scope_keep(fit(gf__ret(gf_tensor_retain(r)), y, x, t, nx, false,
                                     g_batch[d]));
    gf_scope_end();
    if (!f) return gf__status();
    gf_status s = gf__fw_set(y, d, f);
    gf_tensor_release(f);
    return s;
}
