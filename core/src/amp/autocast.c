/* SPDX-License-Identifier: BSD-3-Clause */
/* autocast.c — autocast regions (graft/amp.h): the per-thread stack of
 * regions, the casts the hooked ops ask for, and the cast cache.
 *
 * Each thread holds a stack of frames {device type, dtype, enabled}; an op on
 * a tensor of device type T follows the innermost frame naming T. The cache
 * holds, per (f32 leaf that requires grad, dtype), the cast made in the
 * outermost region (a reference to both the leaf and the cast, so an address
 * is never reused while cached); the outermost gf_autocast_end drops it. */
#include <stdlib.h>
#include <string.h>

#include "amp/amp_internal.h"

#define AMP_MAX_DEPTH 64
#define AMP_TYPE_LEN 16

typedef struct amp_frame {
    char type[AMP_TYPE_LEN];
    gf_dtype dtype;
    bool enabled;
} amp_frame;

typedef struct amp_cached {
    gf_tensor *src, *cast;
} amp_cached;

_Thread_local int gf__amp_live;
static _Thread_local amp_frame tl_frames[AMP_MAX_DEPTH];
static _Thread_local int tl_depth;
static _Thread_local int tl_suspended;
static _Thread_local amp_cached *tl_cache;
static _Thread_local int tl_cache_n, tl_cache_cap;

static const struct {
    const char *name;
    gf__amp_policy cpu, other;
} amp_ops[GF__AMP_OP_COUNT] = {
#define GF__AMP_ROW(id, name, cpu, other) [GF__AMP_##id] = {name, cpu, other},
    GF__AMP_OPS(GF__AMP_ROW)
#undef GF__AMP_ROW
};

static void update_live(void) { gf__amp_live = tl_depth > 0 && tl_suspended == 0; }

static gf_status check_type(const char *op, const char *device_type) {
    if (!device_type) return gf__null_arg(op, "device_type");
    size_t n = strlen(device_type);
    if (n == 0 || n >= AMP_TYPE_LEN)
        return gf__error(GF_ERR_INVALID, "%s: device_type \"%s\" should name a device type such "
                         "as \"cpu\" or \"cuda\" (1 to %d characters)", op, device_type,
                         AMP_TYPE_LEN - 1);
    return GF_OK;
}

gf_status gf_autocast_begin_ex(const char *device_type, gf_dtype dtype, bool enabled) {
    const char *op = "gf_autocast_begin";
    gf_status st = check_type(op, device_type);
    if (st != GF_OK) return st;
    if (dtype != GF_BF16 && dtype != GF_F16)
        return gf__error(GF_ERR_DTYPE, "%s: dtype %s is not a 16-bit float; autocast computes in "
                         "GF_BF16 or GF_F16 (to turn autocast off in a region pass enabled = "
                         "false)", op, gf_dtype_name(dtype));
    if (tl_depth >= AMP_MAX_DEPTH)
        return gf__error(GF_ERR_INVALID, "%s: %d regions are already open on this thread; close "
                         "some with gf_autocast_end", op, AMP_MAX_DEPTH);
    amp_frame *f = &tl_frames[tl_depth++];
    memcpy(f->type, device_type, strlen(device_type) + 1);
    f->dtype = dtype;
    f->enabled = enabled;
    update_live();
    return GF_OK;
}

gf_status gf_autocast_begin(const char *device_type, gf_dtype dtype) {
    return gf_autocast_begin_ex(device_type, dtype, true);
}

static void cache_clear(void) {
    for (int i = 0; i < tl_cache_n; i++) {
        gf_tensor_release(tl_cache[i].cast);
        gf_tensor_release(tl_cache[i].src);
    }
    free(tl_cache);
    tl_cache = NULL;
    tl_cache_n = tl_cache_cap = 0;
}

gf_status gf_autocast_end(void) {
    if (tl_depth == 0)
        return gf__error(GF_ERR_INVALID, "gf_autocast_end: no autocast region is open on this "
                         "thread (each gf_autocast_begin takes one gf_autocast_end)");
    tl_depth--;
    if (tl_depth == 0) cache_clear();
    update_live();
    return GF_OK;
}

static const amp_frame *frame_for(const char *type) {
    for (int i = tl_depth - 1; i >= 0; i--)
        if (!strcmp(tl_frames[i].type, type)) return &tl_frames[i];
    return NULL;
}

bool gf_autocast_is_enabled(const char *device_type) {
    if (!device_type) return false;
    const amp_frame *f = frame_for(device_type);
    return f && f->enabled;
}

gf_dtype gf_autocast_get_dtype(const char *device_type) {
    const amp_frame *f = device_type ? frame_for(device_type) : NULL;
    return f && f->enabled ? f->dtype : GF_F32;
}

int gf_autocast_cache_size(void) { return tl_cache_n; }

int gf__autocast_suspend(void) {
    int saved = tl_suspended++;
    update_live();
    return saved;
}

void gf__autocast_resume(int saved) {
    tl_suspended = saved;
    update_live();
}

/* ------------------------------------------------------------ casts */
static bool is_low(gf_dtype d) { return d == GF_F16 || d == GF_BF16; }

/* The cast of t to dtype: from the cache when t is an f32 leaf that requires
 * grad and a cast to a low dtype (PyTorch caches only those). */
static gf_tensor *cast(const gf_tensor *t, gf_dtype dtype) {
    bool cacheable = t->dtype == GF_F32 && is_low(dtype) && gf_tensor_requires_grad(t) &&
                     gf_tensor_is_leaf(t);
    if (cacheable)
        for (int i = 0; i < tl_cache_n; i++)
            if (tl_cache[i].src == t && tl_cache[i].cast->dtype == dtype)
                return gf_tensor_retain(tl_cache[i].cast);
    gf_tensor *c = gf_to_dtype(t, dtype);
    if (!c || !cacheable) return c;
    if (tl_cache_n == tl_cache_cap) {
        int cap = tl_cache_cap ? 2 * tl_cache_cap : 16;
        amp_cached *grown = realloc(tl_cache, (size_t)cap * sizeof *grown);
        if (!grown) return c; /* no room to cache: still a correct cast */
        tl_cache = grown;
        tl_cache_cap = cap;
    }
    tl_cache[tl_cache_n].src = gf_tensor_retain((gf_tensor *)t);
    tl_cache[tl_cache_n].cast = gf_tensor_retain(c);
    tl_cache_n++;
    return c;
}

void gf__autocast_release(gf_tensor **owned, int n) {
    for (int i = 0; i < n; i++) gf_tensor_release(owned[i]);
}

int gf__autocast_args(gf__amp_op op, const gf_tensor **args, int n, gf_tensor **owned) {
    for (int i = 0; i < n; i++) owned[i] = NULL;
    const gf_tensor *first = NULL;
    for (int i = 0; i < n && !first; i++)
        if (args[i]) first = args[i];
    if (!first || (unsigned)op >= GF__AMP_OP_COUNT) return 0;
    const char *type = gf_device_type(gf_tensor_device(first));
    const amp_frame *f = type ? frame_for(type) : NULL;
    if (!f || !f->enabled) return 0;
    gf__amp_policy pol = strcmp(type, "cpu") ? amp_ops[op].other : amp_ops[op].cpu;
    gf_dtype target = GF_F32;
    switch (pol) {
    case GF__AMP_KEEP: return 0;
    case GF__AMP_LOW: target = f->dtype; break;
    case GF__AMP_F32: target = GF_F32; break;
    case GF__AMP_PROMOTE: {
        /* The widest float input, starting from the region's dtype (PyTorch's
         * promote_type); only when the inputs disagree. */
        bool mixed = false;
        gf_dtype seen = GF_BOOL, wide = f->dtype;
        for (int i = 0; i < n; i++) {
            if (!args[i] || !gf_dtype_is_float(args[i]->dtype)) continue;
            if (seen != GF_BOOL && seen != args[i]->dtype) mixed = true;
            seen = args[i]->dtype;
            wide = gf__promote(wide, args[i]->dtype);
        }
        if (!mixed) return 0;
        target = wide;
        break;
    }
    }
    int saved = gf__scope_suspend(); /* the casts are the hook's, not the scope's */
    int changed = 0;
    for (int i = 0; i < n; i++) {
        const gf_tensor *t = args[i];
        if (!t || !gf_dtype_is_float(t->dtype) || t->dtype == target) continue;
        if (pol == GF__AMP_LOW && t->dtype == GF_F64) continue;   /* PyTorch leaves f64 */
        if (pol == GF__AMP_F32 && !is_low(t->dtype)) continue;     /* only f16/bf16 widen */
        owned[i] = cast(t, target);
        if (!owned[i]) {
            gf__autocast_release(owned, n);
            gf__scope_resume(saved);
            return -1;
        }
        args[i] = owned[i];
        changed = 1;
    }
    gf__scope_resume(saved);
    return changed;
}
