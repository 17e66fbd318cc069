/* SPDX-License-Identifier: BSD-3-Clause */
/* bw_util.c — helpers shared by backward formulas. */
#include <string.h>

#include "ag_internal.h"

gf_tensor *gf__ag_sum_to(const gf_tensor *g, const int64_t *sizes, int rank) {
    if (g->rank == rank && !memcmp(g->sizes, sizes, sizeof(int64_t) * (size_t)rank))
        return gf_tensor_retain((gf_tensor *)g);
    /* Sum the leading dims broadcasting added, then the dims that were 1. */
    int dims[GF_MAX_RANK], nd = 0;
    int lead = g->rank - rank;
    for (int i = 0; i < g->rank; i++) {
        if (i < lead) dims[nd++] = i;
        else if (sizes[i - lead] == 1 && g->sizes[i] != 1) dims[nd++] = i;
    }
    int saved = gf__scope_suspend();
    gf_tensor *s = gf_sum(g, dims, nd, true);
    gf_tensor *r = s ? gf_reshape(s, sizes, rank) : NULL;
    gf__scope_resume(saved);
    gf_tensor_release(s);
    return r;
}

gf_tensor *gf__ag_zeros_meta(const gf_output_meta *m) {
    gf_tensor *t = gf__empty(m->sizes, m->rank, m->dtype, m->device);
    if (t && gf__fill(t, 0.0) != GF_OK) {
        gf_tensor_release(t);
        return NULL;
    }
    return t;
}
