/* SPDX-License-Identifier: BSD-3-Clause */
/* complex_device.h — the complex tests' guard against running somewhere
 * else than intended: tests/CMakeLists.txt sets GRAFT_TEST_COMPLEX_DEVICE
 * (a device spec, "cpu:0") and GRAFT_TEST_COMPLEX_DEVICE_NAME (a piece of
 * that device's name, "oneDNN") for each plugin whose complex kernels a run
 * checks, and the test fails when its complex tensors live on another
 * device (a plugin that stopped declaring c128 would otherwise send the
 * work to the reference device without a word). */
#ifndef GRAFT_TESTS_COMPLEX_DEVICE_H
#define GRAFT_TESTS_COMPLEX_DEVICE_H

#include <graft.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* True (after saying so) when GRAFT_TEST_COMPLEX_DEVICE names a device this
 * machine does not have (cuda:0 without a GPU): the program then exits 77,
 * which CTest shows as skipped. */
static inline bool complex_device_absent(void) {
    const char *spec = getenv("GRAFT_TEST_COMPLEX_DEVICE");
    if (!spec || !*spec || gf_device_find(spec)) return false;
    gf_clear_error();
    printf("skipped: no device %s here\n", spec);
    return true;
}

static inline void check_complex_device(const gf_device *d) {
    const char *spec = getenv("GRAFT_TEST_COMPLEX_DEVICE");
    const char *name = getenv("GRAFT_TEST_COMPLEX_DEVICE_NAME");
    if (spec && *spec)
        CHECK_MSG(d && !strcmp(gf_device_spec(d), spec), "complex tensors live on %s, not on %s",
                  d ? gf_device_spec(d) : "(no device)", spec);
    gf_device_info info;
    if (name && *name && d && gf_device_get_info(d, &info) == GF_OK)
        CHECK_MSG(strstr(info.name, name) != NULL, "complex tensors live on \"%s\", not on a %s "
                  "device", info.name, name);
}

#endif
