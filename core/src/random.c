/* SPDX-License-Identifier: BSD-3-Clause */
/* random.c — the global counter-based generator (Philox4x32-10 on every
 * device, as the ABI defines it): a seed plus a running counter offset. */
#include "internal.h"

static pthread_mutex_t g_rng_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t g_seed = 0x5eed5eedull;
static uint64_t g_offset;

void gf_manual_seed(uint64_t seed) {
    pthread_mutex_lock(&g_rng_lock);
    g_seed = seed;
    g_offset = 0;
    pthread_mutex_unlock(&g_rng_lock);
}

void gf_rng_get_state(uint64_t *seed, uint64_t *offset) {
    pthread_mutex_lock(&g_rng_lock);
    if (seed) *seed = g_seed;
    if (offset) *offset = g_offset;
    pthread_mutex_unlock(&g_rng_lock);
}

void gf_rng_set_state(uint64_t seed, uint64_t offset) {
    pthread_mutex_lock(&g_rng_lock);
    g_seed = seed;
    g_offset = offset;
    pthread_mutex_unlock(&g_rng_lock);
}

void gf__rng_next(uint64_t n, uint64_t *seed, uint64_t *offset) {
    pthread_mutex_lock(&g_rng_lock);
    *seed = g_seed;
    *offset = g_offset;
    g_offset += n;
    pthread_mutex_unlock(&g_rng_lock);
}
