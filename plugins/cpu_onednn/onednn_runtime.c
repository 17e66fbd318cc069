/* SPDX-License-Identifier: BSD-3-Clause */
/* onednn_runtime.c — the engine, per-thread streams and scratch, the
 * primitive cache, and execution.
 *
 * Primitives are created with a user scratchpad (onednn_compat.c), so one
 * cached primitive may run on several threads at once: each thread executes
 * on its own stream with scratch memory from its own arena. The cache never
 * evicts: a training loop sees a bounded set of geometries, and once the
 * cache holds ODN_CACHE_CAP entries new geometries get a primitive that is
 * destroyed after its launch (correct, just slower). */
#define _POSIX_C_SOURCE 200809L

#include <omp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "onednn_internal.h"

/* ------------------------------------------------------------ engine */
static pthread_mutex_t engine_lock = PTHREAD_MUTEX_INITIALIZER;
static dnnl_engine_t engine;

gfp_status odn_runtime_open(void) {
    pthread_mutex_lock(&engine_lock);
    dnnl_status_t st = dnnl_success;
    if (!engine) st = dnnl_engine_create(&engine, dnnl_cpu, 0);
    pthread_mutex_unlock(&engine_lock);
    if (st != dnnl_success)
        return pk_fail(GFP_ERR_DEVICE, "cpu_onednn: oneDNN could not create its CPU engine "
                        "(dnnl status %d)", (int)st);
    return GFP_OK;
}

dnnl_engine_t odn_engine(void) { return engine; }

/* ------------------------------------------------------------ threads */
/* Below the grain (units of work: about one element of a simple loop) a
 * loop runs on one thread: waking the team costs more than it saves. What a
 * wake costs depends on how the runtime's idle threads wait. Spinning (the
 * default policy, OMP_WAIT_POLICY=active, a GOMP_SPINCOUNT above 0), a
 * thread that just left a region is back within a microsecond or two, and
 * 32768 units (~4 us of an add on one core) pay for it. Sleeping
 * (OMP_WAIT_POLICY=passive without a spin count, GOMP_SPINCOUNT=0, or LLVM
 * libomp's KMP_BLOCKTIME=0), every region wakes its threads from a futex:
 * measured at ~45 us a region on a 2-vCPU virtual machine, where at the
 * small grain a 2-thread LSTM step took 84 ms against 54 ms on one thread
 * (its [32, 1024] cell updates each woke the team). So asleep the grain is
 * 2M units (~250 us of an add): the same step took 42 ms, the MLP and CNN
 * steps no longer (docs/benchmarks.md). The runtime reads these variables
 * once, when it loads; so do we, at the first call. */
#define ODN_GRAIN_SPINNING INT64_C(32768)
#define ODN_GRAIN_SLEEPING INT64_C(2097152)

static bool env_is(const char *name, const char *value) {
    const char *v = getenv(name);
    if (!v) return false;
    while (*v == ' ') v++;
    size_t n = strlen(value);
    return strncasecmp(v, value, n) == 0 && (v[n] == '\0' || v[n] == ' ');
}

static int64_t grain;
static pthread_once_t grain_once = PTHREAD_ONCE_INIT;

static void grain_init(void) {
    bool passive = env_is("OMP_WAIT_POLICY", "passive") && !getenv("GOMP_SPINCOUNT");
    bool sleeping = passive || env_is("GOMP_SPINCOUNT", "0") || env_is("KMP_BLOCKTIME", "0");
    grain = sleeping ? ODN_GRAIN_SLEEPING : ODN_GRAIN_SPINNING;
}

static int64_t odn_grain(void) {
    pthread_once(&grain_once, grain_init);
    return grain;
}

int odn_threads(int64_t work) {
    int64_t g = odn_grain();
    if (work < g || omp_in_parallel()) return 1;
    int n = omp_get_max_threads();
    int64_t by_work = work / (g / 2);
    if (by_work < n) n = (int)by_work;
    return n < 1 ? 1 : n;
}

odn_team odn_team_begin(int64_t work) {
    odn_team t = {0};
    if (odn_threads(work) == 1 && !omp_in_parallel() && omp_get_max_threads() > 1) {
        t.saved = omp_get_max_threads();
        omp_set_num_threads(1); /* the calling thread's setting only */
    }
    return t;
}

void odn_team_end(odn_team t) {
    if (t.saved) omp_set_num_threads(t.saved);
}

/* ------------------------------------------------------------ per-thread context */
typedef struct arena_block {
    struct arena_block *next;
    size_t size, used;
    char *data; /* 64-byte aligned */
} arena_block;

/* Memory objects kept per thread, keyed by the descriptor they were made
 * for: creating and destroying one per argument per launch (an allocation
 * each) cost more than a small primitive's execution. */
#define ODN_MEM_SLOTS 64
#define ODN_MEM_WAYS 4

typedef struct mem_slot {
    const odc_md *md;  /* key: a descriptor of a primitive (checked by value on a hit) */
    dnnl_memory_t mem;
    uint64_t used;     /* the odn_exec call that last used it */
} mem_slot;

struct odn_ctx {
    dnnl_stream_t stream;
    mem_slot mems[ODN_MEM_SLOTS];
    uint64_t execs;
    arena_block *blocks; /* newest first */
    size_t peak;         /* largest total asked between two resets */
    size_t asked;
    struct odn_ctx *prev, *next; /* registry, for shutdown */
};

static pthread_key_t ctx_key;
static pthread_once_t ctx_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static odn_ctx *ctx_list;
static bool ctx_key_ok;

static void free_blocks(arena_block *b) {
    while (b) {
        arena_block *next = b->next;
        free(b->data);
        free(b);
        b = next;
    }
}

/* Drops what refers to the engine or holds memory; the struct itself stays
 * (the thread still points at it) until its thread exits. */
static void ctx_clear(odn_ctx *c) {
    for (int i = 0; i < ODN_MEM_SLOTS; i++) {
        if (c->mems[i].mem) dnnl_memory_destroy(c->mems[i].mem);
        c->mems[i] = (mem_slot){0};
    }
    if (c->stream) dnnl_stream_destroy(c->stream);
    c->stream = NULL;
    free_blocks(c->blocks);
    c->blocks = NULL;
    c->peak = c->asked = 0;
}

/* Thread exit: the context leaves the registry and is freed. */
static void ctx_thread_exit(void *p) {
    odn_ctx *c = p;
    pthread_mutex_lock(&ctx_lock);
    if (c->prev) c->prev->next = c->next;
    else ctx_list = c->next;
    if (c->next) c->next->prev = c->prev;
    ctx_clear(c);
    pthread_mutex_unlock(&ctx_lock);
    free(c);
}

static void ctx_key_create(void) { ctx_key_ok = pthread_key_create(&ctx_key, ctx_thread_exit) == 0; }

gfp_status odn_ctx_acquire(odn_ctx **out) {
    *out = NULL;
    pthread_once(&ctx_once, ctx_key_create);
    if (!ctx_key_ok)
        return pk_fail(GFP_ERR_INTERNAL, "cpu_onednn: no thread-local storage key available");
    odn_ctx *c = pthread_getspecific(ctx_key);
    if (c && c->stream) {
        *out = c;
        return GFP_OK;
    }
    if (!c) {
        c = calloc(1, sizeof *c);
        if (!c)
            return pk_fail(GFP_ERR_OUT_OF_MEMORY,
                            "cpu_onednn: out of host memory for a thread context");
        pthread_mutex_lock(&ctx_lock);
        c->next = ctx_list;
        if (ctx_list) ctx_list->prev = c;
        ctx_list = c;
        pthread_mutex_unlock(&ctx_lock);
        pthread_setspecific(ctx_key, c);
    }
    /* A new thread, or one whose stream went with a shut-down engine. */
    pthread_mutex_lock(&ctx_lock);
    dnnl_status_t st = dnnl_stream_create(&c->stream, engine, dnnl_stream_default_flags);
    if (st != dnnl_success) c->stream = NULL;
    pthread_mutex_unlock(&ctx_lock);
    if (st != dnnl_success)
        return pk_fail(st == dnnl_out_of_memory ? GFP_ERR_OUT_OF_MEMORY : GFP_ERR_DEVICE,
                        "cpu_onednn: oneDNN could not create a stream (status %d)", (int)st);
    *out = c;
    return GFP_OK;
}

dnnl_stream_t odn_ctx_stream(odn_ctx *c) { return c->stream; }

void *odn_arena_alloc(odn_ctx *c, size_t bytes) {
    bytes = (bytes + 63) & ~(size_t)63;
    if (bytes == 0) bytes = 64;
    c->asked += bytes;
    arena_block *b = c->blocks;
    if (!b || b->size - b->used < bytes) {
        size_t size = bytes > c->peak ? bytes : c->peak;
        b = calloc(1, sizeof *b);
        if (b) b->data = aligned_alloc(64, size);
        if (!b || !b->data) {
            free(b);
            pk_fail(GFP_ERR_OUT_OF_MEMORY,
                     "cpu_onednn: out of host memory for %zu bytes of scratch", bytes);
            return NULL;
        }
        b->size = size;
        b->next = c->blocks;
        c->blocks = b;
    }
    void *p = b->data + b->used;
    b->used += bytes;
    return p;
}

void odn_arena_reset(odn_ctx *c) {
    if (c->asked > c->peak) c->peak = c->asked;
    c->asked = 0;
    /* Several blocks: the next launch gets one block of the peak size. */
    if (c->blocks && c->blocks->next) {
        free_blocks(c->blocks);
        c->blocks = NULL;
    }
    if (c->blocks) c->blocks->used = 0;
}

void odn_ctx_end_launch(void) {
    pthread_once(&ctx_once, ctx_key_create);
    if (!ctx_key_ok) return;
    odn_ctx *c = pthread_getspecific(ctx_key);
    if (c) odn_arena_reset(c);
}

/* ------------------------------------------------------------ primitive cache */
#define ODN_CACHE_CAP 4096
#define ODN_CACHE_SLOTS 8192 /* open addressing, at most half full */

typedef struct cache_entry {
    odn_key key;
    odn_prim prim;
} cache_entry;

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static cache_entry *slots[ODN_CACHE_SLOTS];
static size_t cache_count;
static atomic_uint_fast64_t builds;

void odn_key_init(odn_key *k, uint32_t kind) {
    k->kind = kind;
    k->n = 0;
}

void odn_key_add(odn_key *k, int64_t v) {
    /* n keeps counting past the end: odn_cache_get refuses such a key and
     * the launch falls back. */
    if (k->n < ODN_KEY_MAX) k->v[k->n] = v;
    k->n++;
}

void odn_key_tensor(odn_key *k, const gfp_tensor *t) {
    odn_key_add(k, t->dtype);
    odn_key_add(k, t->rank);
    for (int d = 0; d < t->rank; d++) {
        odn_key_add(k, t->sizes[d]);
        odn_key_add(k, t->strides[d]);
    }
}

static uint64_t key_hash(const odn_key *k) {
    uint64_t h = 1469598103934665603ull ^ k->kind;
    for (uint32_t i = 0; i < k->n; i++) {
        h ^= (uint64_t)k->v[i];
        h *= 1099511628211ull;
        h ^= h >> 29;
    }
    return h;
}

static bool key_equal(const odn_key *a, const odn_key *b) {
    return a->kind == b->kind && a->n == b->n &&
           memcmp(a->v, b->v, sizeof(int64_t) * a->n) == 0;
}

static void prim_destroy(odn_prim *p) {
    for (int i = 0; i < ODN_PRIM_MAX; i++)
        if (p->p[i]) dnnl_primitive_destroy(p->p[i]);
    for (int i = 0; i < ODN_MD_MAX; i++) odc_md_release(&p->md[i]);
}

dnnl_status_t odn_prim_set(odn_prim *p, int slot, const_dnnl_primitive_desc_t pd) {
    dnnl_status_t st = dnnl_primitive_create(&p->p[slot], pd);
    if (st != dnnl_success) {
        p->p[slot] = NULL;
        return st;
    }
    p->scratch[slot] = odc_pd_scratchpad_bytes(pd);
    if (p->scratch[slot] && !odc_pd_arg_md(pd, DNNL_ARG_SCRATCHPAD, &p->scratch_md[slot]))
        p->scratch[slot] = 0;
    atomic_fetch_add(&builds, 1);
    return dnnl_success;
}

uint64_t odn_cache_builds(void) { return atomic_load(&builds); }

const odn_prim *odn_cache_get(const odn_key *key_in, odn_build_fn build, const void *ctx) {
    /* oneDNN sizes a primitive's work split for the threads of its creation
     * and runs it on that many: the thread count is part of the geometry. */
    odn_key full = *key_in;
    odn_key_add(&full, omp_in_parallel() ? 1 : omp_get_max_threads());
    const odn_key *key = &full;
    if (key->n > ODN_KEY_MAX) return NULL; /* too long to be a key: the caller falls back */
    uint64_t h = key_hash(key);
    size_t at = (size_t)(h % ODN_CACHE_SLOTS);
    pthread_mutex_lock(&cache_lock);
    for (size_t i = 0; i < ODN_CACHE_SLOTS; i++) {
        cache_entry *e = slots[(at + i) % ODN_CACHE_SLOTS];
        if (!e) break;
        if (key_equal(&e->key, key)) {
            pthread_mutex_unlock(&cache_lock);
            return &e->prim;
        }
    }
    pthread_mutex_unlock(&cache_lock);

    /* Build outside the lock: primitive creation may take milliseconds. */
    cache_entry *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    e->key = *key;
    if (build(&e->prim, ctx) != dnnl_success) {
        prim_destroy(&e->prim);
        free(e);
        return NULL;
    }
    pthread_mutex_lock(&cache_lock);
    for (size_t i = 0; i < ODN_CACHE_SLOTS; i++) {
        cache_entry **s = &slots[(at + i) % ODN_CACHE_SLOTS];
        if (*s && key_equal(&(*s)->key, key)) { /* another thread was first */
            pthread_mutex_unlock(&cache_lock);
            prim_destroy(&e->prim);
            free(e);
            return &(*s)->prim;
        }
        if (!*s) {
            if (cache_count >= ODN_CACHE_CAP) break;
            *s = e;
            cache_count++;
            pthread_mutex_unlock(&cache_lock);
            return &e->prim;
        }
    }
    pthread_mutex_unlock(&cache_lock);
    e->prim.temporary = true;
    return &e->prim;
}

void odn_prim_release(const odn_prim *p) {
    if (!p || !p->temporary) return;
    /* A temporary entry is the prim member of a cache_entry of its own. */
    cache_entry *e = (cache_entry *)((char *)p - offsetof(cache_entry, prim));
    prim_destroy(&e->prim);
    free(e);
}

/* ------------------------------------------------------------ execution */
/* A memory object for md at ptr: the thread's kept one for md when there is
 * one (*temp false), else a new one, kept when a slot of md's set is free of
 * this call's objects (*temp false) and destroyed after the call otherwise
 * (*temp true). A descriptor freed and another allocated at its address
 * fails the check by value, and its slot is remade. */
static dnnl_status_t exec_memory(odn_ctx *c, const odc_md *md, void *ptr, dnnl_memory_t *mem,
                                 bool *temp) {
    size_t set = ((uintptr_t)md >> 6) % (ODN_MEM_SLOTS / ODN_MEM_WAYS) * ODN_MEM_WAYS;
    mem_slot *victim = NULL;
    *temp = false;
    for (size_t w = 0; w < ODN_MEM_WAYS; w++) {
        mem_slot *s = &c->mems[set + w];
        if (s->md == md && s->used != c->execs && odc_memory_has_md(s->mem, md)) {
            dnnl_status_t st = odc_memory_set_ptr(s->mem, ptr, c->stream);
            if (st != dnnl_success) return st;
            s->used = c->execs;
            *mem = s->mem;
            return dnnl_success;
        }
        if (s->used != c->execs && (!victim || s->used < victim->used)) victim = s;
    }
    dnnl_status_t st = odc_memory(mem, md, odn_engine(), ptr);
    if (st != dnnl_success) return st;
    if (!victim) {
        *temp = true;
        return dnnl_success;
    }
    if (victim->mem) dnnl_memory_destroy(victim->mem);
    *victim = (mem_slot){md, *mem, c->execs};
    return dnnl_success;
}

gfp_status odn_exec(odn_ctx *c, const odn_prim *p, int slot, const odn_arg *args, int n,
                    const char *what) {
    dnnl_exec_arg_t ea[12];
    bool temp[12];
    int m = 0;
    gfp_status result = GFP_OK;
    dnnl_status_t st = dnnl_success;
    if (n > 11) return pk_fail(GFP_ERR_INTERNAL, "%s: too many arguments", what);
    c->execs++; /* slots used before this call may be taken; 0 marks a never-used slot */
    for (int i = 0; i < n && st == dnnl_success; i++) {
        st = exec_memory(c, args[i].md, args[i].ptr, &ea[m].memory, &temp[m]);
        if (st == dnnl_success) ea[m++].arg = args[i].arg;
    }
    if (st == dnnl_success && p->scratch[slot]) {
        void *sp = odn_arena_alloc(c, p->scratch[slot]);
        if (!sp) result = GFP_ERR_OUT_OF_MEMORY;
        else {
            st = exec_memory(c, &p->scratch_md[slot], sp, &ea[m].memory, &temp[m]);
            if (st == dnnl_success) ea[m++].arg = DNNL_ARG_SCRATCHPAD;
        }
    }
    if (st == dnnl_success && result == GFP_OK) {
        st = dnnl_primitive_execute(p->p[slot], c->stream, m, ea);
        if (st == dnnl_success) st = dnnl_stream_wait(c->stream);
    }
    for (int i = 0; i < m; i++)
        if (temp[i]) dnnl_memory_destroy(ea[i].memory);
    if (st != dnnl_success)
        return pk_fail(GFP_ERR_DEVICE, "%s: oneDNN failed to run its primitive (status %d)",
                        what, (int)st);
    return result;
}

/* ------------------------------------------------------------ shutdown */
void odn_runtime_close(void) {
    pthread_mutex_lock(&cache_lock);
    for (size_t i = 0; i < ODN_CACHE_SLOTS; i++) {
        if (!slots[i]) continue;
        prim_destroy(&slots[i]->prim);
        free(slots[i]);
        slots[i] = NULL;
    }
    cache_count = 0;
    pthread_mutex_unlock(&cache_lock);
    /* Streams refer to the engine: all go before it. A thread that calls
     * again after a re-init gets a new stream (odn_ctx_acquire). */
    pthread_mutex_lock(&ctx_lock);
    for (odn_ctx *c = ctx_list; c; c = c->next) ctx_clear(c);
    pthread_mutex_unlock(&ctx_lock);
    pthread_mutex_lock(&engine_lock);
    if (engine) dnnl_engine_destroy(engine);
    engine = NULL;
    pthread_mutex_unlock(&engine_lock);
}
