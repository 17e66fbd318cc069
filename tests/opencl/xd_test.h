/* SPDX-License-Identifier: BSD-3-Clause */
/* xd_test.h — the OpenCL suite's part of the cross-device harness
 * (tests/xd_harness.h): opencl:0 is tested against the reference plugin.
 *
 * The tests run with GRAFT_PLUGINS=opencl,reference. A program exits with 77
 * (CTest: skipped) when there is no OpenCL device, printing why. */
#ifndef GRAFT_TESTS_XD_TEST_H
#define GRAFT_TESTS_XD_TEST_H

#include "xd_harness.h"

static inline int xd_init(void) {
    static const xd_target opencl = {"opencl", "OpenCL", "opencl:0"};
    return xd_init_target(&opencl);
}

#endif
