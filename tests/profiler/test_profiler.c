/* SPDX-License-Identifier: BSD-3-Clause */
/* test_profiler.c — the profiler's API: what it records, the summary, the
 * trace file (whose JSON check_trace.py parses), and that nothing is
 * recorded when it is off. Usage: test_profiler TRACE.json */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "graft.h"

static const char *g_trace;

static gf_tensor *filled(gf_device *dev, double v, bool grad) {
    gf_tensor *t = gf_full((int64_t[]){4, 3}, 2, v, GF_F32, dev);
    if (t && grad) gf_tensor_set_requires_grad(t, true);
    return t;
}

static void records_a_step(void) {
    gf_device *dev = gf_device_default();
    CHECK(dev != NULL);
    gf_tensor *x = filled(dev, 0.5, true), *t = filled(dev, 2.0, false);
    gf_optimizer *sgd = gf_sgd_create(&x, 1, &(gf_sgd_opts){.lr = 0.1});
    CHECK(!gf_profiler_active());
    /* Off: nothing is recorded. */
    gf_tensor *off = gf_add(x, t);
    gf_tensor_release(off);
    CHECK(gf_profiler_event_count() == 0);

    CHECK(gf_profiler_start(NULL) == GF_OK && gf_profiler_active());
    gf_tensor *loss = gf_mse_loss(x, t, GF_REDUCTION_MEAN);
    CHECK_MSG(loss && gf_backward(loss, NULL, NULL) == GF_OK, "%s", gf_last_error());
    CHECK(gf_optimizer_step(sgd) == GF_OK);
    double v;
    CHECK(gf_tensor_item(loss, &v) == GF_OK); /* a device-to-host transfer */
    CHECK(gf_profiler_stop() == GF_OK && !gf_profiler_active());
    size_t n = gf_profiler_event_count();
    CHECK(n > 5);
    gf_tensor *after = gf_add(x, t);
    CHECK(gf_profiler_event_count() == n);
    gf_tensor_release(after);

    size_t need = gf_profiler_summary(NULL, 0);
    char *text = malloc(need + 1);
    CHECK(text && gf_profiler_summary(text, need + 1) == need && strlen(text) == need);
    if (text) {
        fputs(text, stdout);
        CHECK_CONTAINS(text, "graft profile:");
        CHECK_CONTAINS(text, "calls");
        CHECK_CONTAINS(text, "sub ");
        CHECK_CONTAINS(text, gf_device_spec(dev));
        CHECK_CONTAINS(text, "device->host");
    }
    char small[16];
    CHECK(gf_profiler_summary(small, sizeof small) == need && strlen(small) == sizeof small - 1);
    free(text);
    CHECK_MSG(gf_profiler_write(g_trace) == GF_OK, "%s", gf_last_error());
    CHECK(gf_profiler_write("/nonexistent-dir/trace.json") == GF_ERR_INVALID);
    CHECK_CONTAINS(gf_last_error(), "/nonexistent-dir/trace.json");
    gf_clear_error();
    CHECK(gf_profiler_write(NULL) == GF_ERR_INVALID);
    gf_clear_error();
    /* A new start drops the old events. */
    CHECK(gf_profiler_start(&(gf_profiler_opts){.sync_each_op = true}) == GF_OK);
    CHECK(gf_profiler_event_count() == 0);
    gf_tensor *s = gf_add(x, t);
    CHECK(gf_profiler_event_count() >= 1);
    CHECK(gf_profiler_stop() == GF_OK);
    gf_tensor_release(s);
    gf_tensor_release(loss);
    gf_optimizer_destroy(sgd);
    gf_tensor_release(x);
    gf_tensor_release(t);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s TRACE.json\n", argv[0]);
        return 2;
    }
    g_trace = argv[1];
    RUN(records_a_step);
    CHECK_MSG(gf_shutdown() == GF_OK, "%s", gf_last_error());
    return CHECK_REPORT();
}
