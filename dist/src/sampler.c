/* SPDX-License-Identifier: BSD-3-Clause */
/* sampler.c — each rank's shard of a data set for an epoch, as PyTorch's
 * DistributedSampler (see graft/dist.h). Pure computation: no MPI. */
#include <stdlib.h>

#include "dist_internal.h"

/* splitmix64: a small, well-mixed generator; the permutation depends only
 * on (seed, epoch), so every rank draws the same one. */
static uint64_t next_u64(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* Uniform in [0, bound) without modulo bias (rejection). */
static uint64_t below(uint64_t *s, uint64_t bound) {
    uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
    uint64_t x;
    do x = next_u64(s);
    while (x >= limit);
    return x % bound;
}

int64_t gf_dist_shard_size(int64_t n, int world, bool drop_last) {
    if (n < 0 || world < 1) {
        gd_error(GF_ERR_INVALID, "gf_dist_shard_size: n %lld, world %d (need n >= 0, world >= 1)",
                 (long long)n, world);
        return -1;
    }
    return drop_last ? n / world : n / world + (n % world != 0);
}

gf_status gf_dist_shard_indices(int64_t n, uint64_t seed, int64_t epoch, bool shuffle,
                                bool drop_last, int rank, int world, int64_t *out, int64_t cap,
                                int64_t *count) {
    const char *fn = "gf_dist_shard_indices";
    int64_t per = gf_dist_shard_size(n, world, drop_last);
    if (per < 0) return gf_last_status();
    if (rank < 0 || rank >= world)
        return gd_error(GF_ERR_INVALID, "%s: rank %d outside [0, %d)", fn, rank, world);
    if (!count || (per > 0 && !out))
        return gd_error(GF_ERR_INVALID, "%s: out or count is NULL", fn);
    if (cap < per)
        return gd_error(GF_ERR_INVALID, "%s: out holds %lld indices but the shard has %lld "
                        "(size it with gf_dist_shard_size)", fn, (long long)cap, (long long)per);
    if ((uint64_t)n > SIZE_MAX / sizeof(int64_t))
        return gd_error(GF_ERR_OVERFLOW, "%s: %lld indices overflow size_t", fn, (long long)n);
    int64_t *perm = malloc(n ? (size_t)n * sizeof *perm : 1);
    if (!perm) return gd_error(GF_ERR_OUT_OF_MEMORY, "%s: no memory for %lld indices", fn,
                               (long long)n);
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    if (shuffle) {
        uint64_t st = seed ^ ((uint64_t)epoch * 0xd1b54a32d192ed03u);
        for (int64_t i = n - 1; i > 0; i--) {
            int64_t j = (int64_t)below(&st, (uint64_t)i + 1);
            int64_t t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
    }
    /* The list of per * world entries: padded by wrapping around, or cut. */
    for (int64_t k = 0; k < per; k++) {
        int64_t at = k * world + rank;
        out[k] = perm[at % n];
    }
    *count = per;
    free(perm);
    return GF_OK;
}
