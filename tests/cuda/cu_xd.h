/* SPDX-License-Identifier: BSD-3-Clause */
/* cu_xd.h — the CUDA suite's part of the cross-device harness
 * (tests/xd_harness.h): cuda:0 is tested against the reference plugin.
 *
 * The programs run with GRAFT_PLUGINS=cuda,reference. Without a CUDA device
 * a program prints why (the plugin's own reason) and exits with 77, which
 * CTest reports as skipped.
 *
 * GRAFT_TEST_XD_DEVICE names another device to test instead of cuda:0 (with
 * GRAFT_PLUGINS widened to its plugin); it exists to try the suite itself on
 * a machine without a GPU. */
#ifndef GRAFT_TESTS_CU_XD_H
#define GRAFT_TESTS_CU_XD_H

#include "xd_harness.h"

static inline int xd_init(void) {
    const char *spec = getenv("GRAFT_TEST_XD_DEVICE");
    const xd_target cuda = {"cuda", "CUDA", spec && spec[0] ? spec : "cuda:0"};
    return xd_init_target(&cuda);
}

#endif
