/* SPDX-License-Identifier: BSD-3-Clause */
/* omp_graph_par.c — a captured graph's small launches run side by side.
 *
 * Eagerly, each launch runs on its own, on one thread when it is small
 * (odn_threads): a step of small launches (the transformer example's, an
 * RNN's time steps) leaves every other core idle. A captured graph knows
 * every launch and the memory each one reads and writes, so its replay can
 * run independent small launches at once, one per thread, the way a CUDA
 * graph runs independent branches.
 *
 * Units. graph_create (onednn_plugin.c) cuts the graph into units, each a
 * fused run (omp_fuse.c) or one launch, and this file records what each
 * unit reads and writes as ranges of host addresses (pk_fuse.h's pk_range).
 * Two units conflict when one writes a range the other reads or writes
 * (pk_fuse_compatible's rule, with equal ranges conflicting too).
 *
 * Which units may share the cores. The first replay after graph_create
 * (and again whenever OpenMP's maximum threads changed) runs the units one
 * by one, as before, and watches each: a unit any of whose kernels chose
 * more than one thread (odn_threads, or a oneDNN primitive run on the
 * team: odn_team_watch) is "solo", and so is every unit whose launch may
 * fail on the data (the index ops: an index out of range; FFT, which builds
 * plans). Later replays run each stretch of two or more consecutive
 * non-solo units in one parallel region and the solo units alone, on the
 * whole team, as eagerly.
 *
 * Why the results stay the eager ones, bit for bit. A non-solo unit's
 * kernels chose one thread eagerly; inside the region odn_threads answers 1
 * and oneDNN runs a primitive on the calling thread (its cache keys the
 * primitive by one thread in both cases, onednn_runtime.c), so each unit
 * computes what it computed eagerly. Units are taken in the graph's order
 * (an atomic counter) and a unit starts only when every earlier unit it
 * conflicts with has finished (their done marks are release stores, read
 * with acquire), so each one reads what it read eagerly and writes land in
 * the eager order; units that do not conflict touch disjoint memory, so
 * their order does not matter.
 *
 * Waiting. A thread that takes unit j looks at the earlier units not yet
 * done: at most one per other thread (each thread holds one unit at a
 * time), found by scanning from the first unit it has not seen done. It
 * spins (pause, then yield) until those that conflict are done.
 *
 * Failure. A unit that fails stops the region from taking new units; units
 * already taken finish. The first failure's status and message are
 * returned on the calling thread (the message is copied from the failing
 * thread's pk_last_message). Units taken after the failing one may have
 * run: a graph whose replay failed holds partial results either way.
 *
 * When. Each region wakes the team's other threads and ends at a barrier
 * that waits for them. With OpenMP's threads spinning (the default wait
 * policy) that costs about a microsecond; with sleeping threads
 * (OMP_WAIT_POLICY=passive) a futex wake-up, and the barrier waits for the
 * woken thread to be scheduled: measured here, ~30 us a region, more than
 * the regions of the transformer example's step save (1.10 ms a replayed
 * step one by one, 1.28 ms side by side). So by default the units share
 * the cores only when OpenMP's threads spin; GRAFT_ONEDNN_CONCURRENT=1
 * turns it on whatever the policy, =0 off (read at graph_create).
 *
 * Tests: GRAFT_ONEDNN_FAULT=helper (read at graph_create) makes every unit
 * a helper thread (not the caller) takes fail, to check that its message
 * reaches the caller. */
#define _GNU_SOURCE

#include <omp.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onednn_internal.h"

typedef struct par_unit {
    uint32_t first, end; /* nodes [first, end) */
    uint32_t r0, nr;     /* ranges [r0, r0 + nr) */
    bool never_shared;   /* may fail on the data (solo whatever the probe says) */
    bool solo;           /* from the probe */
} par_unit;

typedef struct par_range {
    pk_range r;
    bool written;
} par_range;

struct odn_par {
    uint32_t n_units;
    par_unit *units;
    par_range *ranges;
    _Atomic uint64_t *done; /* per unit: the epoch it last finished in */
    uint64_t epoch;
    int probed_threads;     /* OpenMP's maximum at the probe; 0: no probe yet */
    bool shares;            /* a stretch of two or more non-solo units exists */
    bool fault_helper;      /* GRAFT_ONEDNN_FAULT=helper at graph_create */
};

static _Atomic uint64_t shared_units, helper_units;

uint64_t odn_par_shared_units(void) { return atomic_load(&shared_units); }
uint64_t odn_par_helper_units(void) { return atomic_load(&helper_units); }

bool odn_par_enabled(void) {
    const char *v = secure_getenv("GRAFT_ONEDNN_CONCURRENT");
    if (v && !strcmp(v, "0")) return false;
    if (v && !strcmp(v, "1")) return true;
    return !odn_omp_sleeps();
}

/* Launches that may fail on the values they read, or keep shared state. */
static bool never_shared(uint32_t op) {
    switch (op) {
    case GFP_OP_INDEX_SELECT:
    case GFP_OP_GATHER:
    case GFP_OP_SCATTER_ADD:
    case GFP_OP_INDEX_ADD:
    case GFP_OP_MAX_POOL2D_BACKWARD:
    case GFP_OP_FFT: return true;
    default: return false;
    }
}

/* t's host addresses; false when it has no elements. */
static bool range_of_tensor(const gfp_tensor *t, pk_range *r) {
    for (int d = 0; d < t->rank; d++)
        if (t->sizes[d] <= 0) return false;
    uint64_t es = pk_dtype_size(t->dtype);
    uint64_t lo = (uint64_t)(uintptr_t)t->buffer + t->offset;
    /* graph_create checked every launch: the view lies inside its buffer. */
    *r = (pk_range){NULL, lo, lo + (pk_view_last(t) + 1) * es};
    return true;
}

static uint32_t count_ranges(const gfp_graph_node *nodes, uint32_t first, uint32_t end) {
    uint32_t c = 0;
    for (uint32_t i = first; i < end; i++) c += nodes[i].n_inputs + nodes[i].n_outputs;
    return c;
}

odn_par *odn_par_make(const gfp_graph_node *nodes, const uint32_t *starts, uint32_t n_units) {
    if (n_units < 2) return NULL;
    uint32_t total = 0;
    for (uint32_t u = 0; u < n_units; u++) {
        uint32_t c = count_ranges(nodes, starts[u], starts[u + 1]);
        if (c > UINT32_MAX - total) return NULL;
        total += c;
    }
    odn_par *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->units = calloc(n_units, sizeof *p->units);
    p->ranges = calloc(total ? total : 1, sizeof *p->ranges);
    p->done = calloc(n_units, sizeof *p->done);
    if (!p->units || !p->ranges || !p->done) {
        odn_par_free(p);
        return NULL; /* one by one: the same results */
    }
    p->n_units = n_units;
    const char *fault = secure_getenv("GRAFT_ONEDNN_FAULT");
    p->fault_helper = fault && !strcmp(fault, "helper");
    uint32_t at = 0;
    for (uint32_t u = 0; u < n_units; u++) {
        par_unit *un = &p->units[u];
        un->first = starts[u];
        un->end = starts[u + 1];
        un->r0 = at;
        for (uint32_t i = un->first; i < un->end; i++) {
            const gfp_graph_node *n = &nodes[i];
            un->never_shared |= never_shared(n->op);
            for (uint32_t k = 0; k < n->n_inputs + n->n_outputs; k++) {
                bool out = k >= n->n_inputs;
                const gfp_tensor *t = out ? n->outputs[k - n->n_inputs] : n->inputs[k];
                if (t && range_of_tensor(t, &p->ranges[at].r)) p->ranges[at++].written = out;
            }
        }
        un->nr = at - un->r0;
    }
    return p;
}

void odn_par_free(odn_par *p) {
    if (!p) return;
    free(p->units);
    free(p->ranges);
    free((void *)p->done);
    free(p);
}

static bool conflict(const odn_par *p, const par_unit *a, const par_unit *b) {
    for (uint32_t i = 0; i < a->nr; i++) {
        const par_range *x = &p->ranges[a->r0 + i];
        for (uint32_t j = 0; j < b->nr; j++) {
            const par_range *y = &p->ranges[b->r0 + j];
            if ((x->written || y->written) && x->r.lo < y->r.hi && y->r.lo < x->r.hi) return true;
        }
    }
    return false;
}

static void relax(unsigned *spins) {
    if (++*spins < 2048) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    } else {
        sched_yield(); /* more threads than cores, or a descheduled peer */
    }
}

typedef struct region {
    odn_par *p;
    odn_par_fn run;
    void *ctx;
    uint32_t end;
    _Atomic uint32_t next;
    _Atomic int failed;
    gfp_status status;
    char message[512];
} region;

static void fail_once(region *g, gfp_status st) {
    int expected = 0;
    if (atomic_compare_exchange_strong(&g->failed, &expected, 1)) {
        g->status = st;
        snprintf(g->message, sizeof g->message, "%s", pk_last_message());
    }
}

/* One thread of a region over units [start, g->end). */
static void region_thread(region *g, uint32_t start) {
    odn_par *p = g->p;
    const uint64_t epoch = p->epoch;
    uint32_t low = start; /* every unit in [start, low) is done */
    for (;;) {
        if (atomic_load_explicit(&g->failed, memory_order_relaxed)) return;
        uint32_t j = atomic_fetch_add_explicit(&g->next, 1, memory_order_relaxed);
        if (j >= g->end) return;
        while (low < j && atomic_load_explicit(&p->done[low], memory_order_acquire) == epoch) low++;
        for (uint32_t k = low; k < j; k++) {
            if (atomic_load_explicit(&p->done[k], memory_order_acquire) == epoch) continue;
            if (!conflict(p, &p->units[k], &p->units[j])) continue;
            unsigned spins = 0;
            while (atomic_load_explicit(&p->done[k], memory_order_acquire) != epoch) relax(&spins);
        }
        gfp_status st = GFP_OK;
        int self = omp_get_thread_num();
        if (atomic_load_explicit(&g->failed, memory_order_relaxed)) {
            /* a unit before it failed: it does not run */
        } else if (self != 0 && p->fault_helper) {
            st = pk_fail(GFP_ERR_DEVICE, "cpu_onednn: fault injected by GRAFT_ONEDNN_FAULT=helper "
                         "(unit %u of a captured graph, taken by helper thread %d)", j, self);
        } else {
            st = g->run(g->ctx, p->units[j].first, p->units[j].end);
            if (self != 0) atomic_fetch_add_explicit(&helper_units, 1, memory_order_relaxed);
        }
        if (st != GFP_OK) fail_once(g, st);
        atomic_store_explicit(&p->done[j], epoch, memory_order_release);
    }
}

static gfp_status run_region(odn_par *p, odn_par_fn run, void *ctx, uint32_t u, uint32_t v,
                             int threads) {
    region g = {.p = p, .run = run, .ctx = ctx, .end = v, .status = GFP_OK};
    atomic_init(&g.next, u);
    atomic_init(&g.failed, 0);
    int nt = threads < (int)(v - u) ? threads : (int)(v - u);
#pragma omp parallel num_threads(nt)
    region_thread(&g, u);
    atomic_fetch_add(&shared_units, v - u);
    if (atomic_load(&g.failed)) return pk_fail(g.status, "%s", g.message);
    return GFP_OK;
}

/* The first replay: one by one, each unit watched. */
/* The first replay: one by one, each unit watched. */
static gfp_status probe(odn_par *p, odn_par_fn run, void *ctx, int threads) {
    for (uint32_t u = 0; u < p->n_units; u++) {
        par_unit *un = &p->units[u];
        odn_team_watch_begin();
        gfp_status st = run(ctx, un->first, un->end);
        un->solo = odn_team_watch_end() || un->never_shared;
        if (st != GFP_OK) {
            p->probed_threads = 0; /* probe again next time */
            return st;
        }
    }
    p->shares = false;
    for (uint32_t u = 0; u + 1 < p->n_units; u++)
        if (!p->units[u].solo && !p->units[u + 1].solo) p->shares = true;
    p->probed_threads = threads;
    return GFP_OK;
}

gfp_status odn_par_launch(odn_par *p, odn_par_fn run, void *ctx) {
    int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
    if (threads != p->probed_threads) return probe(p, run, ctx, threads);
    if (threads < 2 || !p->shares) {
        for (uint32_t u = 0; u < p->n_units; u++) {
            gfp_status st = run(ctx, p->units[u].first, p->units[u].end);
            if (st != GFP_OK) return st;
        }
        return GFP_OK;
    }
    p->epoch++;
    for (uint32_t u = 0; u < p->n_units;) {
        uint32_t v = u;
        while (v < p->n_units && !p->units[v].solo) v++;
        gfp_status st = GFP_OK;
        if (v - u >= 2) {
            st = run_region(p, run, ctx, u, v, threads);
        } else {
            if (v == u) v = u + 1; /* a solo unit */
            st = run(ctx, p->units[u].first, p->units[u].end);
        }
        if (st != GFP_OK) return st;
        u = v;
    }
    return GFP_OK;
}
