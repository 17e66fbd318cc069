/* SPDX-License-Identifier: BSD-3-Clause */
/* vk_pinned.c — runs a program pinned to the Vulkan device (GRAFT_DEVICE=
 * vulkan: the autograd suites, the training example) only when there is one.
 *
 * Those programs fail, rightly, when GRAFT_DEVICE names a device that is not
 * there. On a machine without a Vulkan driver that is not a failure of
 * graft, so this wrapper looks for the device GRAFT_DEVICE names first: when
 * it is missing it prints why (the vulkan plugin's reason) and exits 77,
 * CTest's skip code; otherwise it replaces itself with the program.
 *
 * Usage: vk_pinned PROGRAM [ARGS...] */
#define _GNU_SOURCE
#include <errno.h>
#include <graft.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: vk_pinned PROGRAM [ARGS...]\n");
        return 2;
    }
    const char *spec = getenv("GRAFT_DEVICE");
    if (!spec || !*spec) spec = "vulkan";
    gf_device *dev = gf_device_find(spec);
    if (!dev) {
        int n = gf_plugin_count();
        for (int i = 0; i < n; i++) {
            gf_plugin_info info;
            if (gf_plugin_get_info(i, &info) == GF_OK && !strcmp(info.name, "vulkan"))
                fprintf(stderr, "SKIP: the vulkan plugin has no device: %s\n",
                        info.reason[0] ? info.reason : "(no reason given)");
        }
        fprintf(stderr, "SKIP: %s is not run: no device '%s' (%s)\n", argv[1], spec,
                gf_last_error());
        return 77;
    }
    /* The program loads the plugins again itself: let go of them first. */
    gf_shutdown();
    execv(argv[1], argv + 1);
    fprintf(stderr, "vk_pinned: cannot run %s: %s\n", argv[1], strerror(errno));
    return 1;
}
