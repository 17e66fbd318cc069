/* SPDX-License-Identifier: BSD-3-Clause */
/* test_loader.c — plugin discovery, negotiation, defaults and failures.
 *
 * The loader initialises once per process, so each scenario is one run of
 * this program: `test_loader <scenario>`, with the environment that
 * tests/loader/CMakeLists.txt sets (GRAFT_PLUGIN_PATH pointing at a stub
 * variant, GRAFT_DEVICE, GRAFT_PLUGINS, fault injection...). The stub logs
 * every ABI call to STUB_LOG; the scenarios read that log back to check the
 * order of calls and that the core never broke the ABI's rules (lines
 * starting with STUB_LOG_VIOLATION). */
#define _POSIX_C_SOURCE 200809L

#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include(<dlpack/dlpack.h>)
#include <dlpack/dlpack.h>
#endif
#endif
#include "check.h"
#include "graft.h"
#include "graft_plugin.h"
#include "stub_messages.h"

/* ------------------------------------------------------------------ the stub's log */
typedef struct call_log {
    char *text;
    char **lines;
    int n;
} call_log;

static const char *log_path(void) {
    const char *p = getenv("STUB_LOG");
    return p && *p ? p : NULL;
}

/* Marks a point in the log, between the stub's own lines. */
static void log_mark(const char *marker) {
    const char *path = log_path();
    FILE *f = path ? fopen(path, "a") : NULL;
    if (!f) return;
    fprintf(f, "TEST %s\n", marker);
    fclose(f);
}

static call_log log_read(void) {
    call_log l = {0};
    const char *path = log_path();
    FILE *f = path ? fopen(path, "rb") : NULL;
    if (!f) return l;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    l.text = calloc((size_t)size + 1, 1);
    l.lines = calloc((size_t)size + 1, sizeof *l.lines);
    if (l.text && l.lines && fread(l.text, 1, (size_t)size, f) == (size_t)size) {
        for (char *s = l.text; *s;) {
            l.lines[l.n++] = s;
            char *e = strchr(s, '\n');
            if (!e) break;
            *e = '\0';
            s = e + 1;
        }
    }
    fclose(f);
    return l;
}

static void log_free(call_log *l) {
    free(l->text);
    free(l->lines);
    memset(l, 0, sizeof *l);
}

/* True when line is the call `word` (the word alone or followed by a space). */
static bool is_call(const char *line, const char *word) {
    size_t n = strlen(word);
    return !strncmp(line, word, n) && (line[n] == '\0' || line[n] == ' ');
}

/* First line at or after `from` that is the call `word`, or -1. */
static int log_find(const call_log *l, const char *word, int from) {
    for (int i = from < 0 ? 0 : from; i < l->n; i++)
        if (is_call(l->lines[i], word)) return i;
    return -1;
}

static int log_find_last(const call_log *l, const char *word) {
    for (int i = l->n - 1; i >= 0; i--)
        if (is_call(l->lines[i], word)) return i;
    return -1;
}

/* The line equal to `text`, or -1. */
static int log_find_line(const call_log *l, const char *text) {
    for (int i = 0; i < l->n; i++)
        if (!strcmp(l->lines[i], text)) return i;
    return -1;
}

static int log_count(const call_log *l, const char *word) {
    int c = 0;
    for (int i = 0; i < l->n; i++)
        c += is_call(l->lines[i], word);
    return c;
}

static int log_count_containing(const call_log *l, const char *word, const char *text) {
    int c = 0;
    for (int i = 0; i < l->n; i++)
        c += is_call(l->lines[i], word) && strstr(l->lines[i], text);
    return c;
}

/* The stub never saw the core break a rule. */
static void check_no_violation(void) {
    call_log l = log_read();
    for (int i = 0; i < l.n; i++)
        CHECK_MSG(!is_call(l.lines[i], STUB_LOG_VIOLATION), "stub log line %d: %s", i + 1,
                  l.lines[i]);
    log_free(&l);
}

/* Buffers the stub handed out that were not given back. */
static int live_stub_buffers(const call_log *l) {
    int live = 0;
    for (int i = 0; i < l->n; i++) {
        if (is_call(l->lines[i], "buffer_alloc") && strstr(l->lines[i], "-> id=")) live++;
        if (is_call(l->lines[i], "buffer_free")) live--;
    }
    return live;
}

/* ------------------------------------------------------------------ plugins and devices */
static bool ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

/* The record of the plugin file whose path ends with `suffix`; -1 if none. */
static int find_plugin_file(const char *suffix, gf_plugin_info *info) {
    int n = gf_plugin_count(), found = -1;
    for (int i = 0; i < n; i++) {
        gf_plugin_info tmp;
        if (gf_plugin_get_info(i, &tmp) != GF_OK) continue;
        if (ends_with(tmp.path, suffix)) {
            CHECK_MSG(found < 0, "%s listed twice", suffix);
            if (found < 0) *info = tmp;
            found = i;
        }
    }
    return found;
}

static int find_stub(gf_plugin_info *info) {
    return find_plugin_file("/libgraft-stub.so", info);
}

static bool plugin_loaded(const char *name) {
    for (int i = 0; i < gf_plugin_count(); i++) {
        gf_plugin_info info;
        if (gf_plugin_get_info(i, &info) == GF_OK && info.loaded && !strcmp(info.name, name))
            return true;
    }
    return false;
}

/* The reference plugin still provides a cpu device next to whatever a stub
 * did (cpu:0 unless an accelerated CPU plugin, found first, took it). */
static void check_reference_unharmed(void) {
    CHECK(plugin_loaded("reference"));
    gf_device *ref = NULL;
    for (int i = 0; i < gf_device_count(); i++) {
        gf_device *d = gf_device_at(i);
        if (!strcmp(gf_device_plugin(d), "reference")) ref = d;
    }
    CHECK(ref != NULL);
    if (ref) {
        CHECK(!strcmp(gf_device_type(ref), "cpu"));
        CHECK(gf_device_find(gf_device_spec(ref)) == ref);
    }
}

/* ------------------------------------------------------------------ arithmetic on a device */
static void check_values(const gf_tensor *t, const float *want, int n) {
    float got[16];
    CHECK_MSG(t != NULL, "%s", gf_last_error());
    if (!t || n > 16) return;
    CHECK(gf_tensor_numel(t) == n);
    gf_status st = gf_tensor_to_host(t, got, (size_t)n * sizeof(float));
    CHECK_MSG(st == GF_OK, "%s", gf_last_error());
    if (st != GF_OK) return;
    for (int i = 0; i < n; i++)
        CHECK_CLOSE(got[i], want[i], 0.0);
}

/* FILL, host writes, ADD with contiguous, broadcast (stride 0) and
 * transposed inputs, reads back. Every value is exact in f32. */
static void check_arithmetic_on(gf_device *dev) {
    CHECK_MSG(dev != NULL, "%s", gf_last_error());
    if (!dev) return;
    const int64_t shape[2] = {2, 3}, row_shape[1] = {3};
    const float data[6] = {0.25f, -1.0f, 2.0f, 3.5f, 10.0f, -0.5f};
    const float row[3] = {1.0f, 2.0f, 3.0f};
    gf_tensor *a = gf_full(shape, 2, 1.5, GF_F32, dev);
    gf_tensor *b = gf_from_data(data, shape, 2, GF_F32, dev);
    gf_tensor *r = gf_from_data(row, row_shape, 1, GF_F32, dev);
    gf_tensor *c = gf_add(a, b);
    gf_tensor *d = gf_add(c, r);
    gf_tensor *bt = gf_transpose(b, 0, 1);
    gf_tensor *e = gf_add(bt, bt);
    gf_tensor *f = gf_clone(bt);

    const float want_a[6] = {1.5f, 1.5f, 1.5f, 1.5f, 1.5f, 1.5f};
    const float want_c[6] = {1.75f, 0.5f, 3.5f, 5.0f, 11.5f, 1.0f};
    const float want_d[6] = {2.75f, 2.5f, 6.5f, 6.0f, 13.5f, 4.0f};
    const float want_e[6] = {0.5f, 7.0f, -2.0f, 20.0f, 4.0f, -1.0f};
    const float want_f[6] = {0.25f, 3.5f, -1.0f, 10.0f, 2.0f, -0.5f};
    check_values(a, want_a, 6);
    check_values(c, want_c, 6);
    check_values(d, want_d, 6);
    check_values(e, want_e, 6);
    check_values(f, want_f, 6);
    if (c) CHECK(gf_tensor_device(c) == dev);
    CHECK(gf_device_synchronize(dev) == GF_OK);
    gf_tensor *all[] = {a, b, r, c, d, bt, e, f};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        gf_tensor_release(all[i]);
}

static void check_no_bytes_in_use(gf_device *dev) {
    gf_memory_stats st;
    CHECK(gf_memory_get_stats(dev, &st) == GF_OK);
    CHECK_MSG(st.bytes_in_use == 0, "%llu bytes still in use", (unsigned long long)st.bytes_in_use);
}

/* ------------------------------------------------------------------ scenarios: skipped plugins */
static void scenario_wrong_major(void) {
    gf_plugin_info info;
    CHECK(find_stub(&info) >= 0);
    CHECK(!info.loaded);
    char plugin_ver[32], core_ver[32];
    snprintf(plugin_ver, sizeof plugin_ver, "2.%d", GFP_ABI_MINOR);
    snprintf(core_ver, sizeof core_ver, "%d.%d", GFP_ABI_MAJOR, GFP_ABI_MINOR);
    CHECK_CONTAINS(info.reason, plugin_ver);
    CHECK_CONTAINS(info.reason, core_ver);
    CHECK(info.abi_major == 2);
    CHECK(gf_device_find(STUB_DEVICE_TYPE) == NULL);
    check_reference_unharmed();
    /* The version is checked before anything else of the plugin runs. */
    call_log l = log_read();
    CHECK(log_count(&l, "negotiate") == 1);
    CHECK(log_count(&l, "init") == 0);
    CHECK(l.n == 1);
    log_free(&l);
    check_no_violation();
}

static void scenario_no_entry(void) {
    gf_plugin_info info;
    CHECK(find_stub(&info) >= 0);
    CHECK(!info.loaded);
    CHECK_CONTAINS(info.reason, GFP_ENTRY_SYMBOL);
    CHECK(info.device_count == 0);
    check_reference_unharmed();
    call_log l = log_read();
    CHECK_MSG(l.n == 0, "the stub was called: %s", l.n ? l.lines[0] : "");
    log_free(&l);
}

static void scenario_refused(void) {
    gf_plugin_info info;
    CHECK(find_stub(&info) >= 0);
    CHECK(!info.loaded);
    CHECK_CONTAINS(info.reason, STUB_MSG_REFUSE);
    check_reference_unharmed();
    call_log l = log_read();
    CHECK(log_count(&l, "negotiate") == 1);
    CHECK(l.n == 1);
    log_free(&l);
    check_no_violation();
}

static void scenario_init_fail(void) {
    gf_plugin_info info;
    CHECK(find_stub(&info) >= 0);
    CHECK(!info.loaded);
    CHECK_CONTAINS(info.reason, STUB_MSG_INIT_FAIL);
    CHECK(gf_device_find(STUB_DEVICE_TYPE) == NULL);
    check_reference_unharmed();
    /* The outcome stays: neither gf_init nor a later lookup tries again. */
    CHECK(gf_init() == GF_OK);
    CHECK(gf_device_find(STUB_DEVICE_TYPE) == NULL);
    call_log l = log_read();
    CHECK(log_count(&l, "init") == 1);
    log_free(&l);
    /* A plugin whose init failed is never shut down. */
    CHECK(gf_shutdown() == GF_OK);
    l = log_read();
    CHECK(log_find(&l, "negotiate", 0) == 0);
    CHECK(log_find(&l, "init", 0) == 1);
    CHECK(log_count(&l, "shutdown") == 0);
    CHECK(log_count(&l, "device_count") == 0);
    CHECK(l.n == 2);
    log_free(&l);
    /* gf_shutdown then gf_init loads the plugins afresh: init runs again. */
    CHECK(gf_init() == GF_OK);
    CHECK(find_stub(&info) >= 0 && !info.loaded);
    CHECK(gf_shutdown() == GF_OK);
    l = log_read();
    CHECK(log_count(&l, "negotiate") == 2);
    CHECK(log_count(&l, "init") == 2);
    CHECK(l.n == 4);
    log_free(&l);
    check_no_violation();
}

/* A table too short to hold the REQUIRED launch slot. */
static void scenario_truncated(void) {
    gf_plugin_info info;
    CHECK(find_stub(&info) >= 0);
    CHECK(!info.loaded);
    CHECK_MSG(info.reason[0] != '\0', "no reason recorded");
    check_reference_unharmed();
    call_log l = log_read();
    CHECK(log_count(&l, "negotiate") == 1);
    CHECK(log_count(&l, "init") == 0);
    log_free(&l);
    check_no_violation();
}

/* ------------------------------------------------------------------ scenarios: loaded plugins */
/* A table that ends with launch: no query_op, no query_extension. */
static void scenario_older_minor(void) {
    gf_plugin_info info;
    CHECK(find_stub(&info) >= 0);
    CHECK_MSG(info.loaded, "skipped: %s", info.reason);
    CHECK(info.abi_major == GFP_ABI_MAJOR);
    CHECK(info.device_count == 1);
    gf_device *dev = gf_device_default();
    CHECK_MSG(dev && !strcmp(gf_device_type(dev), STUB_DEVICE_TYPE), "default device: %s",
              dev ? gf_device_spec(dev) : gf_last_error());
    check_arithmetic_on(dev);
    if (dev) check_no_bytes_in_use(dev);
    /* No query_extension slot: NOT_FOUND, without calling the trap there. */
    void *ext = (void *)&info;
    CHECK(gf_device_query_extension(dev, "stub.answer", &ext) == GF_ERR_NOT_FOUND);
    CHECK(ext == NULL);
    CHECK_MSG(strstr(gf_last_error(), "no query_extension slot"), "%s", gf_last_error());
    gf_clear_error();
    check_no_violation(); /* the trap slots beyond struct_size were never called */
}

/* A longer table of a newer minor, with slots this core does not know. */
static void scenario_newer_minor(void) {
    gf_plugin_info info;
    CHECK(find_stub(&info) >= 0);
    CHECK_MSG(info.loaded, "skipped: %s", info.reason);
    CHECK(info.abi_major == GFP_ABI_MAJOR);
    CHECK(info.abi_minor == GFP_ABI_MINOR + 1);
    gf_device *dev = gf_device_default();
    CHECK_MSG(dev && !strcmp(gf_device_type(dev), STUB_DEVICE_TYPE), "default device: %s",
              dev ? gf_device_spec(dev) : gf_last_error());
    check_arithmetic_on(dev);
    call_log l = log_read();
    CHECK(log_count(&l, "query_op") > 0); /* a v1.0 slot, inside struct_size */
    log_free(&l);
    check_no_violation();
}

/* Every OPTIONAL slot NULL, buffers not host-addressable: the defaults. */
static void scenario_null_slots(void) {
    gf_plugin_info info;
    CHECK(find_stub(&info) >= 0);
    CHECK_MSG(info.loaded, "skipped: %s", info.reason);
    gf_device *dev = gf_device_default();
    CHECK_MSG(dev && !strcmp(gf_device_type(dev), STUB_DEVICE_TYPE), "default device: %s",
              dev ? gf_device_spec(dev) : gf_last_error());
    if (!dev) return;
    gf_device_info di;
    CHECK(gf_device_get_info(dev, &di) == GF_OK);
    CHECK(!di.host_addressable);
    CHECK(!di.thread_safe);
    CHECK(di.dtypes == (1u << GF_F32));

    /* New buffers hold 0xff bytes (NaN), so zeros must really be written. */
    const int64_t shape[1] = {5};
    gf_tensor *z = gf_zeros(shape, 1, GF_F32, dev);
    const float zeros[5] = {0};
    check_values(z, zeros, 5);
    const float data[5] = {1.0f, -2.0f, 0.5f, 8.0f, -0.25f};
    gf_tensor *x = gf_from_data(data, shape, 1, GF_F32, dev);
    gf_tensor *y = gf_clone(x);
    check_values(y, data, 5);
    if (x && y) CHECK(!gf_tensor_shares_storage(x, y));
    CHECK(gf_device_synchronize(dev) == GF_OK); /* NULL synchronize: nothing to wait for */
    check_arithmetic_on(dev);

    /* Through host memory to the reference device and back. */
    gf_device *cpu = gf_device_find("cpu");
    CHECK_MSG(cpu != NULL, "%s", gf_last_error());
    gf_tensor *on_cpu = cpu ? gf_to_device(y, cpu) : NULL;
    check_values(on_cpu, data, 5);
    gf_tensor *back = on_cpu ? gf_to_device(on_cpu, dev) : NULL;
    check_values(back, data, 5);

    /* query_op is NULL: the default answers from the dtypes the device stores. */
    gf_tensor *d64 = gf_zeros(shape, 1, GF_F64, dev);
    CHECK(d64 == NULL);
    gf_clear_error();
    gf_tensor *all[] = {z, x, y, on_cpu, back, d64};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        gf_tensor_release(all[i]);
    check_no_bytes_in_use(dev);

    /* query_extension is NULL: no extensions. */
    void *ext = (void *)&info;
    CHECK(gf_device_query_extension(dev, "stub.answer", &ext) == GF_ERR_NOT_FOUND);
    CHECK(ext == NULL);
    gf_clear_error();

    /* Not host-addressable: reads went through buffer_read. */
    call_log l = log_read();
    CHECK(log_count(&l, "buffer_read") > 0);
    log_free(&l);
    /* No device_close and no shutdown slot: shutting down must still work. */
    CHECK_MSG(gf_shutdown() == GF_OK, "%s", gf_last_error());
    check_no_violation();
}

static void scenario_alloc_fail(void) {
    gf_device *dev = gf_device_default();
    CHECK_MSG(dev && !strcmp(gf_device_type(dev), STUB_DEVICE_TYPE), "default device: %s",
              dev ? gf_device_spec(dev) : gf_last_error());
    if (!dev) return;
    /* STUB_FAIL_ALLOC_AT=3: a and b take calls 1 and 2, the sum the third. */
    const int64_t shape[2] = {2, 3};
    gf_tensor *a = gf_full(shape, 2, 1.5, GF_F32, dev);
    gf_tensor *b = gf_full(shape, 2, 2.0, GF_F32, dev);
    CHECK_MSG(a && b, "%s", gf_last_error());
    gf_tensor *c = gf_add(a, b);
    CHECK(c == NULL);
    gf_status st = gf_last_status();
    CHECK_MSG(st == GF_ERR_OUT_OF_MEMORY || st == GF_ERR_PLUGIN, "status %s", gf_status_name(st));
    CHECK_CONTAINS(gf_last_error(), "'" STUB_NAME "'");
    CHECK_CONTAINS(gf_last_error(), STUB_MSG_OOM);
    /* A failed op keeps the first error through a chain. */
    gf_tensor *chained = gf_add(c, a);
    CHECK(chained == NULL);
    CHECK_CONTAINS(gf_last_error(), STUB_MSG_OOM);
    gf_clear_error();

    /* The next allocation succeeds again. */
    gf_tensor *d = gf_add(a, b);
    const float want[6] = {3.5f, 3.5f, 3.5f, 3.5f, 3.5f, 3.5f};
    check_values(d, want, 6);
    gf_tensor_release(a);
    gf_tensor_release(b);
    gf_tensor_release(d);
    check_no_bytes_in_use(dev);
    gf_memory_stats ms;
    CHECK(gf_memory_get_stats(dev, &ms) == GF_OK);
    CHECK(ms.peak_bytes_in_use > 0);
    CHECK(gf_memory_empty_cache(dev) == GF_OK);
    CHECK(gf_memory_get_stats(dev, &ms) == GF_OK);
    CHECK(ms.bytes_cached == 0);
    CHECK(ms.plugin_allocations == ms.plugin_frees);

    call_log l = log_read();
    CHECK(log_count_containing(&l, "buffer_alloc", "call=3 ") == 1);
    CHECK(log_count_containing(&l, "buffer_alloc", "-> failed") == 1);
    CHECK_MSG(live_stub_buffers(&l) == 0, "%d stub buffers not freed", live_stub_buffers(&l));
    log_free(&l);
    check_no_violation();
}

/* An allocation that fails while blocks are cached: the cache is given back
 * to the plugin and the allocation tried once more. */
static void scenario_alloc_retry(void) {
    gf_device *dev = gf_device_default();
    CHECK_MSG(dev != NULL, "%s", gf_last_error());
    if (!dev) return;
    const int64_t small[1] = {4}, big[1] = {3000};
    gf_tensor *a = gf_full(small, 1, 1.0, GF_F32, dev);
    CHECK_MSG(a != NULL, "%s", gf_last_error());
    gf_tensor_release(a); /* cached now */
    gf_memory_stats ms;
    CHECK(gf_memory_get_stats(dev, &ms) == GF_OK);
    CHECK(ms.bytes_cached > 0);

    /* The stub reads its fault settings at every call: fail the next one. */
    call_log l = log_read();
    int calls = log_count(&l, "buffer_alloc");
    log_free(&l);
    char at[32];
    snprintf(at, sizeof at, "%d", calls + 1);
    setenv("STUB_FAIL_ALLOC_AT", at, 1);
    gf_tensor *b = gf_full(big, 1, 2.0, GF_F32, dev);
    unsetenv("STUB_FAIL_ALLOC_AT");
    CHECK_MSG(b != NULL, "no retry after giving the cache back: %s", gf_last_error());
    CHECK(gf_memory_get_stats(dev, &ms) == GF_OK);
    CHECK(ms.bytes_cached == 0);
    if (b) {
        double v = 0;
        const int64_t idx[1] = {2999};
        CHECK(gf_tensor_get(b, idx, &v) == GF_OK);
        CHECK_CLOSE(v, 2.0, 0.0);
    }
    gf_tensor_release(b);
    check_no_bytes_in_use(dev);
    check_no_violation();
}

static void scenario_kernel_error(void) {
    gf_device *dev = gf_device_default();
    CHECK_MSG(dev != NULL, "%s", gf_last_error());
    if (!dev) return;
    const int64_t shape[1] = {4};
    gf_tensor *a = gf_full(shape, 1, 1.0, GF_F32, dev);
    gf_tensor *b = gf_full(shape, 1, 2.0, GF_F32, dev);
    CHECK_MSG(a && b, "%s", gf_last_error());
    gf_tensor *c = gf_add(a, b);
    CHECK(c == NULL);
    CHECK_MSG(gf_last_status() == GF_ERR_PLUGIN, "status %s", gf_status_name(gf_last_status()));
    CHECK_CONTAINS(gf_last_error(), "'" STUB_NAME "'");
    CHECK_CONTAINS(gf_last_error(), STUB_MSG_KERNEL);
    CHECK_CONTAINS(gf_last_error(), "add");
    gf_clear_error();
    /* Other ops are unaffected, and the failed output was freed. */
    gf_tensor *d = gf_clone(a);
    const float ones[4] = {1.0f, 1.0f, 1.0f, 1.0f};
    check_values(d, ones, 4);
    gf_tensor_release(a);
    gf_tensor_release(b);
    gf_tensor_release(d);
    check_no_bytes_in_use(dev);
    check_no_violation();
}

/* query_op says no: a clear error before any launch, and the answer is cached. */
static void scenario_unsupported_op(void) {
    gf_device *dev = gf_device_default();
    CHECK_MSG(dev != NULL, "%s", gf_last_error());
    if (!dev) return;
    const int64_t shape[1] = {3};
    gf_tensor *a = gf_full(shape, 1, 3.0, GF_F32, dev);
    gf_tensor *p1 = gf_mul(a, a);
    CHECK(p1 == NULL);
    CHECK_MSG(gf_last_status() == GF_ERR_UNSUPPORTED, "status %s",
              gf_status_name(gf_last_status()));
    CHECK_CONTAINS(gf_last_error(), STUB_NAME);
    CHECK_CONTAINS(gf_last_error(), "mul");
    gf_tensor *p2 = gf_mul(a, a);
    CHECK(p2 == NULL);
    gf_clear_error();
    gf_tensor_release(a);
    char mul[32];
    snprintf(mul, sizeof mul, "op=%d ", GFP_OP_MUL);
    call_log l = log_read();
    CHECK(log_count_containing(&l, "launch", mul) == 0);
    CHECK(log_count_containing(&l, "query_op", mul) == 1);
    log_free(&l);
    check_no_bytes_in_use(dev);
    check_no_violation();
}

static void scenario_broken(void) {
    gf_plugin_info good, broken;
    CHECK(find_stub(&good) >= 0);
    CHECK_MSG(good.loaded, "skipped: %s", good.reason);
    CHECK(find_plugin_file("/libgraft-broken.so", &broken) >= 0);
    CHECK(!broken.loaded);
    CHECK_MSG(broken.reason[0] != '\0', "no reason recorded");
    CHECK(broken.device_count == 0);
    check_reference_unharmed();
    check_arithmetic_on(gf_device_find(STUB_DEVICE_TYPE));
    check_no_violation();
}

static void scenario_zero_devices(void) {
    gf_plugin_info info;
    CHECK(find_stub(&info) >= 0);
    CHECK_MSG(info.loaded, "skipped: %s", info.reason);
    CHECK(info.device_count == 0);
    CHECK_CONTAINS(info.reason, STUB_MSG_ZERO_DEVICES);
    CHECK(gf_device_find(STUB_DEVICE_TYPE) == NULL);
    CHECK(gf_last_status() == GF_ERR_NOT_FOUND);
    check_reference_unharmed();
    for (int i = 0; i < gf_device_count(); i++)
        CHECK(strcmp(gf_device_plugin(gf_device_at(i)), STUB_NAME) != 0);
    call_log l = log_read();
    CHECK(log_count(&l, "device_count") == 1);
    CHECK(log_count(&l, "device_props") == 0);
    log_free(&l);
    check_no_violation();
}

/* gf_device_query_extension: a plugin's extension by name, and every way
 * the question can fail. */
static void scenario_extension(void) {
    gf_device *dev = gf_device_default();
    CHECK_MSG(dev != NULL, "%s", gf_last_error());
    if (!dev) return;
    void *ext = NULL;
    CHECK_MSG(gf_device_query_extension(dev, "stub.answer", &ext) == GF_OK, "%s", gf_last_error());
    CHECK(ext != NULL && *(const int *)ext == 42);
    /* Unknown: NOT_FOUND, naming the extension and carrying the plugin's note. */
    ext = (void *)dev;
    CHECK(gf_device_query_extension(dev, "stub.nosuch", &ext) == GF_ERR_NOT_FOUND);
    CHECK(ext == NULL);
    CHECK(gf_last_status() == GF_ERR_NOT_FOUND);
    CHECK_MSG(strstr(gf_last_error(), "\"stub.nosuch\"") &&
              strstr(gf_last_error(), "the stub has stub.answer"), "%s", gf_last_error());
    /* Unknown without a message from the plugin: still says which. */
    CHECK(gf_device_query_extension(dev, "stub.quiet", &ext) == GF_ERR_NOT_FOUND);
    CHECK_MSG(strstr(gf_last_error(), "no extension \"stub.quiet\""), "%s", gf_last_error());
    /* The plugin fails, or answers OK without a pointer: PLUGIN. */
    ext = (void *)dev;
    CHECK(gf_device_query_extension(dev, "stub.broken", &ext) == GF_ERR_PLUGIN);
    CHECK(ext == NULL);
    CHECK_MSG(strstr(gf_last_error(), "stub.broken always fails"), "%s", gf_last_error());
    ext = (void *)dev;
    CHECK(gf_device_query_extension(dev, "stub.null", &ext) == GF_ERR_PLUGIN);
    CHECK(ext == NULL);
    CHECK_MSG(strstr(gf_last_error(), "without a pointer"), "%s", gf_last_error());
    /* Bad arguments: INVALID (with no earlier error pending: a NULL passes
     * an earlier failure's status on), and the plugin is not asked. */
    gf_clear_error();
    CHECK(gf_device_query_extension(NULL, "stub.answer", &ext) == GF_ERR_INVALID);
    CHECK(ext == NULL);
    gf_clear_error();
    CHECK(gf_device_query_extension(dev, NULL, &ext) == GF_ERR_INVALID);
    gf_clear_error();
    CHECK(gf_device_query_extension(dev, "", &ext) == GF_ERR_INVALID);
    CHECK_MSG(strstr(gf_last_error(), "empty"), "%s", gf_last_error());
    gf_clear_error();
    CHECK(gf_device_query_extension(dev, "stub.answer", NULL) == GF_ERR_INVALID);
    gf_clear_error();
    call_log l = log_read();
    CHECK(log_count(&l, "query_extension") == 5);
    log_free(&l);
    check_no_violation();
}

/* ------------------------------------------------------------------ scenarios: devices */
static void scenario_device_unknown(void) {
    /* GRAFT_DEVICE=nosuch:3 */
    CHECK(gf_device_default() == NULL);
    CHECK(gf_last_status() == GF_ERR_NOT_FOUND);
    CHECK_CONTAINS(gf_last_error(), "nosuch:3");
    CHECK_CONTAINS(gf_last_error(), "cpu:0");
    CHECK_CONTAINS(gf_last_error(), "stub:0");
    const int64_t shape[1] = {2};
    gf_clear_error();
    CHECK(gf_zeros(shape, 1, GF_F32, NULL) == NULL);
    CHECK(gf_last_status() != GF_OK);
    CHECK(gf_device_find("stub:abc") == NULL);
    CHECK(gf_last_status() == GF_ERR_INVALID);
    CHECK(gf_device_find("stub:0") != NULL);
}

static void scenario_device_priority(void) {
    /* GRAFT_DEVICE=nosuch:0,stub with two stub devices */
    gf_device *dev = gf_device_default();
    CHECK_MSG(dev != NULL, "%s", gf_last_error());
    if (dev) CHECK(!strcmp(gf_device_spec(dev), "stub:0"));
    gf_device *second = gf_device_find("stub:1");
    CHECK_MSG(second != NULL, "%s", gf_last_error());
    if (second) {
        CHECK(!strcmp(gf_device_name(second), "Stub Device 1"));
        CHECK(gf_device_index(second) == 1);
        CHECK(!strcmp(gf_device_plugin(second), STUB_NAME));
    }
    CHECK(gf_device_find("stub:2") == NULL);
    CHECK(gf_last_status() == GF_ERR_NOT_FOUND);
    gf_device *cpu = gf_device_find("nosuch, cpu");
    CHECK_MSG(cpu && !strcmp(gf_device_spec(cpu), "cpu:0"), "%s", gf_last_error());
    /* Tensors made without a device land on the default one. */
    const int64_t shape[1] = {2};
    gf_tensor *t = gf_zeros(shape, 1, GF_F32, NULL);
    CHECK_MSG(t && gf_tensor_device(t) == dev, "%s", gf_last_error());
    gf_tensor_release(t);
    check_arithmetic_on(second);
    call_log l = log_read();
    CHECK(log_count_containing(&l, "device_open", "index=1") == 1);
    log_free(&l);
    check_no_violation();
}

static void scenario_restrict(void) {
    /* GRAFT_PLUGINS=stub: the reference plugin is not loaded. */
    CHECK(!plugin_loaded("reference"));
    CHECK(plugin_loaded(STUB_NAME));
    CHECK(gf_device_find("cpu") == NULL);
    CHECK(gf_device_count() == 1);
    gf_device *only = gf_device_at(0);
    CHECK(only && !strcmp(gf_device_plugin(only), STUB_NAME));
    /* GRAFT_DEVICE unset means cpu, which is not there. */
    CHECK(gf_device_default() == NULL);
    CHECK(gf_last_status() == GF_ERR_NOT_FOUND);
    CHECK_CONTAINS(gf_last_error(), "stub:0");
    check_arithmetic_on(gf_device_find(STUB_DEVICE_TYPE));
    check_no_violation();
}

/* ------------------------------------------------------------------ scenarios: lifetime */
static void scenario_call_order(void) {
    log_mark("start");
    CHECK_MSG(gf_init() == GF_OK, "%s", gf_last_error());
    gf_device *dev = gf_device_find(STUB_DEVICE_TYPE);
    CHECK_MSG(dev != NULL, "%s", gf_last_error());
    if (!dev) return;
    log_mark("first-tensor");
    const int64_t shape[1] = {3};
    gf_tensor *a = gf_full(shape, 1, 1.0, GF_F32, dev);
    gf_tensor *b = gf_full(shape, 1, 2.0, GF_F32, dev);
    gf_tensor *s1 = gf_add(a, b);
    gf_tensor *s2 = gf_add(s1, b);
    gf_tensor *s3 = gf_add(s2, b);
    const float want[3] = {7.0f, 7.0f, 7.0f};
    check_values(s3, want, 3);
    CHECK(gf_device_synchronize(dev) == GF_OK);
    gf_tensor_release(b);
    gf_tensor_release(s1);
    gf_tensor_release(s2);
    gf_tensor_release(s3);

    /* A live tensor keeps the plugin loaded. */
    CHECK(gf_shutdown() == GF_ERR_INVALID);
    log_mark("shutdown-refused");
    gf_tensor_release(a);
    CHECK_MSG(gf_shutdown() == GF_OK, "%s", gf_last_error());
    log_mark("after-shutdown");

    call_log l = log_read();
    int start = log_find_line(&l, "TEST start"),
        first_tensor = log_find_line(&l, "TEST first-tensor");
    int refused = log_find_line(&l, "TEST shutdown-refused");
    int after = log_find_line(&l, "TEST after-shutdown");
    CHECK(start == 0);
    int negotiate = log_find(&l, "negotiate", 0), init = log_find(&l, "init", 0);
    int count = log_find(&l, "device_count", 0), props = log_find(&l, "device_props", 0);
    int open = log_find(&l, "device_open", 0), alloc = log_find(&l, "buffer_alloc", 0);
    int last_free = log_find_last(&l, "buffer_free"), close = log_find(&l, "device_close", 0);
    int shutdown = log_find(&l, "shutdown", 0);
    CHECK_MSG(negotiate == 1, "negotiate at line %d", negotiate);
    CHECK_MSG(init == negotiate + 1, "init at line %d", init);
    CHECK(count > init);
    CHECK(props > count);
    /* Devices are opened lazily, on first use. */
    CHECK_MSG(open > first_tensor, "device_open at line %d, first use at line %d", open,
              first_tensor);
    CHECK(alloc > open);
    CHECK(log_count(&l, "device_open") == 1);
    /* Nothing was shut down while a tensor was alive. */
    CHECK(shutdown > refused);
    CHECK(last_free > refused);
    /* Every buffer freed, then the device closed, then shutdown, last. */
    CHECK_MSG(live_stub_buffers(&l) == 0, "%d stub buffers not freed", live_stub_buffers(&l));
    CHECK(close > last_free);
    CHECK(shutdown > close);
    CHECK(log_count(&l, "shutdown") == 1);
    CHECK_MSG(after == shutdown + 1, "calls after shutdown: %s",
              shutdown + 1 < l.n ? l.lines[shutdown + 1] : "");
    CHECK(after == l.n - 1);
    /* Capability answers are cached: three adds, one question. */
    char add[32];
    snprintf(add, sizeof add, "op=%d ", GFP_OP_ADD);
    CHECK(log_count_containing(&l, "query_op", add) == 1);
    CHECK(log_count_containing(&l, "launch", add) == 3);
    log_free(&l);
    check_no_violation();
}

/* After gf_shutdown, the next call loads the plugins again. */
static void scenario_reinit(void) {
    for (int round = 0; round < 2; round++) {
        gf_device *dev = gf_device_find(STUB_DEVICE_TYPE);
        CHECK_MSG(dev != NULL, "round %d: %s", round, gf_last_error());
        if (!dev) return;
        const int64_t shape[1] = {2};
        gf_tensor *t = gf_full(shape, 1, 2.5 + round, GF_F32, dev);
        const float want[2][2] = {{2.5f, 2.5f}, {3.5f, 3.5f}};
        check_values(t, want[round], 2);
        gf_tensor_release(t);
        CHECK_MSG(gf_shutdown() == GF_OK, "round %d: %s", round, gf_last_error());
    }
    call_log l = log_read();
    CHECK(log_count(&l, "negotiate") == 2);
    CHECK(log_count(&l, "init") == 2);
    CHECK(log_count(&l, "shutdown") == 2);
    CHECK(live_stub_buffers(&l) == 0);
    log_free(&l);
    check_no_violation();
}

/* The stub's device is not thread-safe: the core serialises calls into it. */
#define THREADS 4
#define ROUNDS 25
static gf_device *g_serial_dev;
static void *serial_worker(void *arg) {
    int id = (int)(intptr_t)arg, bad = 0;
    for (int r = 0; r < ROUNDS; r++) {
        const int64_t shape[1] = {8};
        gf_tensor *a = gf_full(shape, 1, (double)id, GF_F32, g_serial_dev);
        gf_tensor *b = gf_full(shape, 1, (double)r, GF_F32, g_serial_dev);
        gf_tensor *c = gf_add(a, b);
        float out[8] = {0};
        if (!c || gf_tensor_to_host(c, out, sizeof out) != GF_OK) bad++;
        for (int i = 0; i < 8; i++)
            bad += out[i] != (float)(id + r);
        gf_tensor_release(a);
        gf_tensor_release(b);
        gf_tensor_release(c);
    }
    return (void *)(intptr_t)bad;
}

static void scenario_serialised(void) {
    g_serial_dev = gf_device_find(STUB_DEVICE_TYPE);
    CHECK_MSG(g_serial_dev != NULL, "%s", gf_last_error());
    if (!g_serial_dev) return;
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_create(&th[i], NULL, serial_worker, (void *)(intptr_t)i) == 0);
    for (int i = 0; i < THREADS; i++) {
        void *bad = NULL;
        pthread_join(th[i], &bad);
        CHECK_MSG(bad == NULL, "thread %d: %d wrong results", i, (int)(intptr_t)bad);
    }
    check_no_bytes_in_use(g_serial_dev);
    check_no_violation(); /* no two calls were in the stub's device at once */
}

/* ------------------------------------------------------------------ scenarios: discovery */
static void scenario_path_file(void) {
    /* GRAFT_PLUGIN_PATH=<missing dir>:<the stub's .so file>:<its directory> */
    gf_plugin_info info;
    CHECK(find_stub(&info) >= 0); /* and only once */
    CHECK_MSG(info.loaded, "skipped: %s", info.reason);
    CHECK(!strcmp(info.name, STUB_NAME));
    CHECK(info.abi_major == GFP_ABI_MAJOR);
    check_arithmetic_on(gf_device_find(STUB_DEVICE_TYPE));
    check_reference_unharmed();
    check_no_violation();
}

static void scenario_default_discovery(void) {
    /* Nothing set: the build tree's plugins only; cpu is the default device. */
    gf_plugin_info info;
    CHECK(find_stub(&info) < 0);
    check_reference_unharmed();
    gf_device *dev = gf_device_default();
    CHECK_MSG(dev && !strcmp(gf_device_spec(dev), "cpu:0"), "%s", gf_last_error());
    /* cpu:0 is the first cpu device in discovery order: the reference, or an
     * accelerated CPU plugin whose file sorts before it. */
    if (dev) CHECK(!strcmp(gf_device_type(dev), "cpu"));
    check_arithmetic_on(dev);
    call_log l = log_read();
    CHECK(l.n == 0);
    log_free(&l);
}

/* GRAFT_LOG=debug: the loader says what it skipped, on stderr. */
static void scenario_log_debug(void) {
    char path[1100];
    snprintf(path, sizeof path, "%s.stderr", log_path() ? log_path() : "loader_log_debug");
    fflush(stderr);
    int saved = dup(2);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(saved >= 0 && fd >= 0);
    if (saved < 0 || fd < 0) return;
    dup2(fd, 2);
    close(fd);
    gf_status st = gf_init();
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    CHECK(st == GF_OK);
    char text[16384] = {0};
    FILE *f = fopen(path, "rb");
    if (f) {
        size_t n = fread(text, 1, sizeof text - 1, f);
        text[n] = '\0';
        fclose(f);
    }
    fputs(text, stderr);
    const char *said = text;
    CHECK_CONTAINS(said, "libgraft-broken.so");
    CHECK_CONTAINS(said, STUB_NAME);
}

/* ------------------------------------------------------------------ adopting host memory */
static int released;
static void on_release(void *ctx) {
    (void)ctx;
    released++;
}

/* A device that cannot adopt memory (not host-addressable, no
 * buffer_wrap_host slot): gf_from_host_memory refuses and the caller keeps
 * the memory; importing DLPack copies instead. */
static void scenario_no_adopt(void) {
    gf_device *dev = gf_device_default();
    CHECK_MSG(dev && !strcmp(gf_device_type(dev), STUB_DEVICE_TYPE), "default device: %s",
              dev ? gf_device_spec(dev) : gf_last_error());
    if (!dev) return;
    static float mem[3] = {1, 2, 3};
    const int64_t n[1] = {3};
    gf_tensor *t = gf_from_host_memory(mem, n, NULL, 1, GF_F32, dev, on_release, NULL);
    CHECK(t == NULL && gf_last_status() == GF_ERR_UNSUPPORTED);
    CHECK_CONTAINS(gf_last_error(), "cannot adopt host memory");
    CHECK_CONTAINS(gf_last_error(), "gf_tensor_from_host");
    CHECK(released == 0);
    gf_clear_error();
#if defined(__has_include)
#if __has_include(<dlpack/dlpack.h>)
    DLManagedTensor m;
    memset(&m, 0, sizeof m);
    m.dl_tensor.data = mem;
    m.dl_tensor.device.device_type = kDLCPU;
    m.dl_tensor.ndim = 1;
    m.dl_tensor.shape = (int64_t *)n;
    m.dl_tensor.dtype.code = kDLFloat;
    m.dl_tensor.dtype.bits = 32;
    m.dl_tensor.dtype.lanes = 1;
    t = gf_from_dlpack(&m, dev);
    const float want[3] = {1, 2, 3};
    check_values(t, want, 3);
    gf_tensor_release(t);
#endif
#endif
    check_no_bytes_in_use(dev);
    check_no_violation();
}

/* ------------------------------------------------------------------ main */
static const struct {
    const char *name;
    void (*run)(void);
} scenarios[] = {
    {"wrong_major", scenario_wrong_major},
    {"no_entry", scenario_no_entry},
    {"refused", scenario_refused},
    {"init_fail", scenario_init_fail},
    {"truncated", scenario_truncated},
    {"older_minor", scenario_older_minor},
    {"newer_minor", scenario_newer_minor},
    {"null_slots", scenario_null_slots},
    {"alloc_fail", scenario_alloc_fail},
    {"alloc_retry", scenario_alloc_retry},
    {"kernel_error", scenario_kernel_error},
    {"unsupported_op", scenario_unsupported_op},
    {"broken", scenario_broken},
    {"zero_devices", scenario_zero_devices},
    {"device_unknown", scenario_device_unknown},
    {"device_priority", scenario_device_priority},
    {"restrict", scenario_restrict},
    {"call_order", scenario_call_order},
    {"reinit", scenario_reinit},
    {"serialised", scenario_serialised},
    {"path_file", scenario_path_file},
    {"default_discovery", scenario_default_discovery},
    {"log_debug", scenario_log_debug},
    {"no_adopt", scenario_no_adopt},
    {"extension", scenario_extension},
};

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s <scenario>\nscenarios:", argv[0]);
        for (size_t i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++)
            fprintf(stderr, " %s", scenarios[i].name);
        fputc('\n', stderr);
        return 2;
    }
    /* A fresh log: the loader has not run yet (it starts on the first call). */
    if (log_path()) remove(log_path());
    for (size_t i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++) {
        if (strcmp(argv[1], scenarios[i].name)) continue;
        check_case_failed_ = 0;
        scenarios[i].run();
        fprintf(stderr, "%s %s\n", check_case_failed_ ? "FAIL" : "ok  ", scenarios[i].name);
        return CHECK_REPORT();
    }
    fprintf(stderr, "unknown scenario '%s'\n", argv[1]);
    return 2;
}
