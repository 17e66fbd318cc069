/* SPDX-License-Identifier: BSD-3-Clause */
/* test_alloc_cache.c — the caching allocator's bound (gf_memory_set_cache_limit,
 * GRAFT_CACHE_LIMIT): blocks freed longest ago go back to the plugin first,
 * a step's blocks stay, and the limit's every value is usable (0 caches
 * nothing, UINT64_MAX sets no limit).
 *
 *   ops_test_alloc_cache               the default limit and the API
 *   ops_test_alloc_cache env <bytes>   GRAFT_CACHE_LIMIT was set: the limit
 *                                      is <bytes> (CTest sets the variable) */
#include <stdlib.h>
#include <string.h>

#include "ops_test.h"

#define MIB (UINT64_C(1) << 20)

static gf_device *dev;

static gf_memory_stats stats(void) {
    gf_memory_stats s;
    memset(&s, 0, sizeof s);
    CHECK_OK(gf_memory_get_stats(dev, &s));
    return s;
}

/* A tensor of exactly `bytes` bytes (a multiple of 4). */
static gf_tensor *block(uint64_t bytes) {
    gf_tensor *t = gf_empty(SZ((int64_t)(bytes / 4)), 1, GF_F32, dev);
    CHECK(t != NULL);
    return t;
}

static void default_limit_bounds_host_memory(void) {
    uint64_t limit = 0;
    CHECK_OK(gf_memory_get_cache_limit(dev, &limit));
    /* the reference device's memory is host memory */
    CHECK_MSG(limit == 256 * MIB, "default limit %llu", (unsigned long long)limit);
}

static void oldest_freed_goes_first(void) {
    CHECK_OK(gf_memory_empty_cache(dev));
    CHECK_OK(gf_memory_set_cache_limit(dev, 3 * MIB));
    /* three size classes: 1, 1.25 and 1.5 MiB */
    gf_tensor *a = block(MIB), *b = block(MIB + MIB / 4), *c = block(MIB + MIB / 2);
    gf_tensor_release(a); /* freed first */
    gf_tensor_release(b);
    gf_memory_stats s0 = stats();
    CHECK(s0.bytes_cached == 2 * MIB + MIB / 4);
    gf_tensor_release(c); /* 3.75 MiB: over the limit, a's block goes */
    gf_memory_stats s1 = stats();
    CHECK_MSG(s1.bytes_cached == 2 * MIB + 3 * MIB / 4, "cached %llu",
              (unsigned long long)s1.bytes_cached);
    CHECK(s1.plugin_frees == s0.plugin_frees + 1);
    /* b's and c's sizes come from the cache, a's from the plugin */
    gf_tensor *b2 = block(MIB + MIB / 4), *c2 = block(MIB + MIB / 2);
    gf_memory_stats s2 = stats();
    CHECK(s2.plugin_allocations == s1.plugin_allocations);
    CHECK(s2.bytes_cached == 0);
    gf_tensor *a2 = block(MIB);
    CHECK(stats().plugin_allocations == s1.plugin_allocations + 1);
    /* taking a block and giving it back keeps it newest: a step that frees
     * and takes the same sizes keeps them, while an older one goes */
    gf_tensor_release(a2);
    gf_tensor_release(b2);
    gf_tensor_release(c2); /* a2's block (oldest) goes again */
    for (int step = 0; step < 5; step++) {
        gf_memory_stats before = stats();
        gf_tensor *x = block(MIB + MIB / 4), *y = block(MIB + MIB / 2);
        gf_tensor_release(x);
        gf_tensor_release(y);
        gf_memory_stats after = stats();
        CHECK_MSG(after.plugin_allocations == before.plugin_allocations &&
                      after.plugin_frees == before.plugin_frees,
                  "step %d: %llu allocations, %llu frees", step,
                  (unsigned long long)(after.plugin_allocations - before.plugin_allocations),
                  (unsigned long long)(after.plugin_frees - before.plugin_frees));
    }
}

static void zero_caches_nothing_and_lowering_trims(void) {
    CHECK_OK(gf_memory_set_cache_limit(dev, UINT64_MAX));
    gf_tensor *a = block(MIB), *b = block(2 * MIB);
    gf_tensor_release(a);
    gf_tensor_release(b);
    gf_memory_stats s0 = stats();
    CHECK(s0.bytes_cached >= 3 * MIB);
    /* lowering the limit gives the excess back at once */
    CHECK_OK(gf_memory_set_cache_limit(dev, 0));
    gf_memory_stats s1 = stats();
    CHECK(s1.bytes_cached == 0);
    CHECK(s1.plugin_frees >= s0.plugin_frees + 2);
    uint64_t limit = 1;
    CHECK_OK(gf_memory_get_cache_limit(dev, &limit));
    CHECK(limit == 0);
    /* with 0 every freed block goes back to the plugin */
    gf_tensor *c = block(MIB);
    gf_tensor_release(c);
    gf_memory_stats s2 = stats();
    CHECK(s2.bytes_cached == 0 && s2.plugin_frees == s1.plugin_frees + 1);
    /* a block larger than the limit on its own is not kept either */
    CHECK_OK(gf_memory_set_cache_limit(dev, MIB));
    gf_tensor *d = block(2 * MIB);
    gf_tensor_release(d);
    CHECK(stats().bytes_cached == 0);
    gf_tensor *e = block(MIB);
    gf_tensor_release(e);
    CHECK(stats().bytes_cached == MIB);
    CHECK_OK(gf_memory_set_cache_limit(dev, 256 * MIB));
}

static void null_arguments(void) {
    uint64_t v;
    CHECK(gf_memory_set_cache_limit(NULL, 0) == GF_ERR_INVALID);
    CHECK(strstr(gf_last_error(), "dev is NULL") != NULL);
    CHECK(gf_memory_get_cache_limit(NULL, &v) == GF_ERR_INVALID);
    CHECK(gf_memory_get_cache_limit(dev, NULL) == GF_ERR_INVALID);
    CHECK(strstr(gf_last_error(), "bytes is NULL") != NULL);
    gf_clear_error();
}

int main(int argc, char **argv) {
    CHECK(gf_init() == GF_OK);
    dev = gf_device_default();
    if (!dev) {
        fprintf(stderr, "no device: %s\n", gf_last_error());
        return 1;
    }
    if (argc == 3 && !strcmp(argv[1], "env")) {
        uint64_t limit = 0;
        CHECK_OK(gf_memory_get_cache_limit(dev, &limit));
        uint64_t want = strcmp(argv[2], "none") ? strtoull(argv[2], NULL, 10) : UINT64_MAX;
        CHECK_MSG(limit == want, "GRAFT_CACHE_LIMIT='%s': limit %llu, expected %llu",
                  getenv("GRAFT_CACHE_LIMIT"), (unsigned long long)limit,
                  (unsigned long long)want);
        gf_shutdown();
        return CHECK_REPORT();
    }
    RUN(default_limit_bounds_host_memory);
    RUN(oldest_freed_goes_first);
    RUN(zero_caches_nothing_and_lowering_trims);
    RUN(null_arguments);
    CHECK(gf_shutdown() == GF_OK);
    return CHECK_REPORT();
}
