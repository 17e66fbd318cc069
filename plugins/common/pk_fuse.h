/* SPDX-License-Identifier: BSD-3-Clause */
/* pk_fuse.h — the rule that lets a plugin run consecutive elementwise
 * launches of a captured graph as one (cpu_onednn's omp_fuse.c, vulkan's
 * vk_fuse.c).
 *
 * A fused run computes every launch of the run for element i before (or
 * without any order against) element j: chunk by chunk on the CPU, one
 * invocation per element on a GPU. That equals the eager order as long as
 * no launch reads or writes, at another element index, what another launch
 * of the run writes. So every range a launch writes must be the same
 * elements as (an in-place op, a reused pool block) or disjoint from every
 * other range of the run; read-only ranges may overlap at will. A range is
 * an element or byte interval [lo, hi) within one memory object (`space`:
 * a plugin's allocation, or NULL for host addresses). */
#ifndef GRAFT_PK_FUSE_H
#define GRAFT_PK_FUSE_H

#include <stdbool.h>
#include <stdint.h>

#include "graft_plugin.h"

typedef struct pk_range {
    const void *space;
    uint64_t lo, hi;
} pk_range;

static inline bool pk_fuse_compatible(pk_range a, bool a_written, pk_range b, bool b_written) {
    if (!a_written && !b_written) return true;
    if (a.space != b.space) return true;
    if (a.lo == b.lo && a.hi == b.hi) return true;
    return a.hi <= b.lo || b.hi <= a.lo;
}

/* One element broadcast to every position (each dim of size 1 or stride 0):
 * an operand a fused step may read at a fixed element. */
static inline bool pk_fuse_broadcast_one(const gfp_tensor *t) {
    for (int d = 0; d < t->rank; d++)
        if (t->sizes[d] != 1 && t->strides[d] != 0) return false;
    return true;
}

/* Whether a launch whose tensors are the ranges a[0 .. na) may join a run
 * beside one whose tensors are b[0 .. nb); each one's range 0 (its output)
 * is the one written. */
static inline bool pk_fuse_ranges_join(const pk_range *a, int na, const pk_range *b, int nb) {
    for (int i = 0; i < na; i++)
        for (int j = 0; j < nb; j++)
            if (!pk_fuse_compatible(a[i], i == 0, b[j], j == 0)) return false;
    return true;
}

#endif
