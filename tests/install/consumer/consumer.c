/* SPDX-License-Identifier: BSD-3-Clause */
/* consumer.c — a program built against an installed graft, as a user would
 * build one: it creates a tensor on the cpu device, runs one op, reads the
 * result back and prints where the loaded plugins came from (the install
 * test checks they came from the installed prefix). */
#include <graft.h>
#include <stdio.h>

int main(void) {
    gf_device *dev = gf_device_find("cpu");
    if (!dev) {
        fprintf(stderr, "consumer: no cpu device: %s\n", gf_last_error());
        return 1;
    }
    const float data[6] = {1.5f, -2.0f, 3.25f, 0.0f, 4.0f, -0.5f};
    const int64_t sizes[2] = {2, 3};
    gf_tensor *t = gf_from_data(data, sizes, 2, GF_F32, dev);
    gf_tensor *twice = gf_add(t, t);
    float out[6] = {0};
    if (!twice || gf_tensor_to_host(twice, out, sizeof out) != GF_OK) {
        fprintf(stderr, "consumer: %s\n", gf_last_error());
        return 1;
    }
    /* t + t, written out by hand. */
    const float want[6] = {3.0f, -4.0f, 6.5f, 0.0f, 8.0f, -1.0f};
    for (int i = 0; i < 6; i++) {
        if (out[i] != want[i]) {
            fprintf(stderr, "consumer: element %d is %g, expected %g\n", i, out[i], want[i]);
            return 1;
        }
    }
    for (int i = 0; i < gf_plugin_count(); i++) {
        gf_plugin_info info;
        if (gf_plugin_get_info(i, &info) == GF_OK && info.loaded)
            printf("plugin %s at %s\n", info.name, info.path);
    }
    gf_tensor_release(twice);
    gf_tensor_release(t);
    printf("consumer ok: %s on %s\n", "t + t", gf_device_spec(dev));
    return 0;
}
