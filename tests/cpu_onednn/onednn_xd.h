/* SPDX-License-Identifier: BSD-3-Clause */
/* onednn_xd.h — the cpu_onednn suite's part of the cross-device harness
 * (tests/xd_harness.h): cpu:0, the cpu_onednn plugin's device, is tested
 * against the reference plugin through libgraft.
 *
 * The programs run with GRAFT_PLUGINS=cpu_onednn,reference, where cpu:0 is
 * cpu_onednn and cpu:1 the reference. (tests/abi_pair.h compares the
 * two plugins one level down, through the ABI alone.) */
#ifndef GRAFT_TESTS_ONEDNN_XD_H
#define GRAFT_TESTS_ONEDNN_XD_H

#include "xd_harness.h"

static inline int xd_init(void) {
    static const xd_target onednn = {"cpu_onednn", "oneDNN CPU", "cpu:0"};
    return xd_init_target(&onednn);
}

#endif
