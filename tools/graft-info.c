/* SPDX-License-Identifier: BSD-3-Clause */
/* graft-info — what graft finds on this machine: every plugin file (loaded,
 * or the reason it was skipped) and every device with its properties; for a
 * device that stores f16 or bf16, which ops of a mixed-precision step it
 * runs itself and which go to the fallback device.
 *
 *   graft-info          human-readable listing
 *   graft-info --json   the same as one JSON object
 *
 * Exit status: 0 when at least one device is available, 1 when none is (with
 * a message saying where graft looked), 2 for a bad command line. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "graft.h"

static void usage(FILE *out, const char *argv0) {
    fprintf(out,
            "usage: %s [--json] [--help]\n"
            "Lists the graft device plugins that were found (loaded, or why they were\n"
            "skipped) and the devices they provide.\n"
            "\n"
            "  --json   print the same information as one JSON object\n"
            "  --help   print this help\n"
            "\n"
            "Environment:\n"
            "  GRAFT_PLUGIN_PATH  extra plugin files or directories, ':'-separated, searched "
            "first\n"
            "  GRAFT_PLUGINS      comma list of the plugin names to load (others are skipped)\n"
            "  GRAFT_DEVICE       default device, e.g. cpu, opencl:1, or cuda:0,vulkan,cpu\n"
            "  GRAFT_LOG          error, warn, info or debug: loader diagnostics on stderr\n"
            "\n"
            "Exit status: 0 when at least one device is available, 1 otherwise.\n",
            argv0);
}

/* ------------------------------------------------------------------ text output */
static const char *yes_no(bool b) {
    return b ? "yes" : "no";
}

/* "16.0 GiB (17179869184 bytes)", or `none` for 0. */
static const char *bytes_text(uint64_t n, const char *none, char *buf, size_t len) {
    static const char *units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB"};
    if (n == 0) {
        snprintf(buf, len, "%s", none);
        return buf;
    }
    double v = (double)n;
    int u = 0;
    while (v >= 1024.0 && u < 5) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, len, "%llu bytes", (unsigned long long)n);
    else
        snprintf(buf, len, "%.1f %s (%llu bytes)", v, units[u], (unsigned long long)n);
    return buf;
}

static const char *dtypes_text(uint32_t bits, char *buf, size_t len) {
    size_t used = 0;
    buf[0] = '\0';
    for (int d = 0; d < 32 && used < len; d++) {
        if (!(bits & (1u << d))) continue;
        int w =
            snprintf(buf + used, len - used, "%s%s", used ? " " : "", gf_dtype_name((gf_dtype)d));
        if (w < 0) break;
        used += (size_t)w;
    }
    if (!buf[0]) snprintf(buf, len, "none");
    return buf;
}

/* ------------------------------------------------------------------ 16-bit ops */
/* The ops of a mixed-precision training step (autocast's low-precision ops,
 * their gradients, and what a model in f16 / bf16 runs), each with its
 * tensors' dtypes: H the 16-bit dtype asked about, else a fixed dtype. For
 * each device that stores f16 or bf16, graft-info says which of them it runs
 * itself (gf_device_supports_op) and what happens to the others: the fused
 * gradients (fused() below) are composed on the device, the rest go to the
 * fallback device. */
#define H (-2)
typedef struct op16 {
    const char *op;
    int n_in, n_out;
    int in[5], out[3];
} op16;
static const op16 ops16[] = {
    {"copy", 1, 1, {GF_F32}, {H}},          {"copy", 1, 1, {H}, {GF_F32}},
    {"add", 2, 1, {H, H}, {H}},             {"mul", 2, 1, {H, H}, {H}},
    {"relu", 1, 1, {H}, {H}},               {"relu_backward", 2, 1, {H, H}, {H}},
    {"gelu", 1, 1, {H}, {H}},               {"gelu_backward", 2, 1, {H, H}, {H}},
    {"sigmoid", 1, 1, {H}, {H}},            {"tanh", 1, 1, {H}, {H}},
    {"where", 3, 1, {GF_BOOL, H, H}, {H}},  {"random", 0, 1, {0}, {H}},
    {"sum", 1, 1, {H}, {H}},                {"mean", 1, 1, {H}, {H}},
    {"matmul", 2, 1, {H, H}, {H}},          {"conv2d", 3, 1, {H, H, H}, {H}},
    {"conv2d_backward_input", 2, 1, {H, H}, {H}},
    {"conv2d_backward_weight", 2, 1, {H, H}, {H}},
    {"max_pool2d", 1, 2, {H}, {H, GF_I64}}, {"max_pool2d_backward", 2, 1, {H, GF_I64}, {H}},
    {"avg_pool2d", 1, 1, {H}, {H}},         {"avg_pool2d_backward", 1, 1, {H}, {H}},
    {"softmax", 1, 1, {H}, {H}},            {"softmax_backward", 2, 1, {H, H}, {H}},
    {"log_softmax", 1, 1, {H}, {H}},        {"log_softmax_backward", 2, 1, {H, H}, {H}},
    {"layer_norm", 3, 3, {H, H, H}, {H, H, H}},
    {"layer_norm_backward", 5, 3, {H, H, H, H, H}, {H, H, H}},
    {"batch_norm", 5, 3, {H, H, H, H, H}, {H, H, H}},
    {"batch_norm_backward", 5, 3, {H, H, H, H, H}, {H, H, H}},
    {"index_select", 2, 1, {H, GF_I64}, {H}},
    {"scatter_add", 2, 1, {H, GF_I64}, {H}},
};
#define N_OPS16 ((int)(sizeof ops16 / sizeof ops16[0]))

/* The fused gradients: one kernel where the core can also compose the
 * gradient from other ops (graft_ops.def: added in 1.2 / 1.3, "the core then
 * composes"), which it does on the device when the device lacks the kernel. */
static bool fused(int k) {
    static const char *const names[] = {"softmax_backward", "log_softmax_backward",
                                        "layer_norm_backward", "batch_norm_backward"};
    for (int i = 0; i < 4; i++)
        if (!strcmp(ops16[k].op, names[i])) return true;
    return false;
}

/* Whether dev runs ops16[k] itself with H = half (for contiguous tensors:
 * the dispatcher makes strided ones contiguous on the device itself). */
static bool runs16(gf_device *dev, int k, gf_dtype half) {
    const op16 *o = &ops16[k];
    int in[5], out[3];
    for (int i = 0; i < o->n_in; i++) in[i] = o->in[i] == H ? (int)half : o->in[i];
    for (int i = 0; i < o->n_out; i++) out[i] = o->out[i] == H ? (int)half : o->out[i];
    bool yes; /* false when the query fails */
    gf_device_supports_op(dev, o->op, in, o->n_in, out, o->n_out, false, &yes);
    gf_clear_error();
    return yes;
}

/* An op's label in the lists: copy names its direction. */
static const char *op16_label(int k) {
    if (strcmp(ops16[k].op, "copy")) return ops16[k].op;
    return ops16[k].in[0] == H ? "copy to f32" : "copy from f32";
}

/* The ops of ops16 the device lacks with H = half, fused or not, after a
 * label, in lines of at most ~100 columns; nothing when there are none. */
static void print_lacking(gf_device *dev, gf_dtype half, bool composed, const char *label) {
    int col = 0;
    for (int k = 0; k < N_OPS16; k++) {
        if (fused(k) != composed || runs16(dev, k, half)) continue;
        const char *l = op16_label(k);
        if (!col) col = printf("                        %s:", label);
        if (col + 1 + (int)strlen(l) > 100) col = printf("\n                         ") - 1;
        col += printf(" %s", l);
    }
    if (col) printf("\n");
}

static void print_ops16(gf_device *dev, uint32_t dtypes) {
    static const gf_dtype halves[2] = {GF_F16, GF_BF16};
    for (int h = 0; h < 2; h++) {
        if (!(dtypes & (1u << halves[h]))) continue;
        int here = 0;
        for (int k = 0; k < N_OPS16; k++) here += runs16(dev, k, halves[h]);
        printf("      %-16s: %d of the %d ops of a mixed-precision step run here\n",
               gf_dtype_name(halves[h]), here, N_OPS16);
        print_lacking(dev, halves[h], false, "on the fallback device");
        print_lacking(dev, halves[h], true, "composed of other ops");
    }
}

static void print_text(int n_plugins, int n_devices) {
    int loaded = 0;
    for (int i = 0; i < n_plugins; i++) {
        gf_plugin_info p;
        if (gf_plugin_get_info(i, &p) == GF_OK && p.loaded) loaded++;
    }
    printf("graft-info: %d plugin file%s found, %d loaded, %d device%s\n", n_plugins,
           n_plugins == 1 ? "" : "s", loaded, n_devices, n_devices == 1 ? "" : "s");

    printf("\nPlugins\n");
    if (n_plugins == 0) printf("  (none found)\n");
    for (int i = 0; i < n_plugins; i++) {
        gf_plugin_info p;
        if (gf_plugin_get_info(i, &p) != GF_OK) continue;
        printf("  [%d] %s", i, p.name[0] ? p.name : "(unknown)");
        if (p.version[0]) printf(" %s", p.version);
        if (p.abi_major || p.abi_minor) printf("  ABI %u.%u", p.abi_major, p.abi_minor);
        if (p.loaded)
            printf("  loaded, %d device%s\n", p.device_count, p.device_count == 1 ? "" : "s");
        else
            printf("  skipped\n");
        printf("      path  : %s\n", p.path);
        if (p.reason[0]) printf("      %s: %s\n", p.loaded ? "note  " : "reason", p.reason);
    }

    printf("\nDevices\n");
    if (n_devices == 0) printf("  (none)\n");
    for (int i = 0; i < n_devices; i++) {
        gf_device *dev = gf_device_at(i);
        gf_device_info d;
        if (!dev || gf_device_get_info(dev, &d) != GF_OK) continue;
        char mem[64], maxa[64], dt[128];
        printf("  %s  %s  (plugin %s)\n", gf_device_spec(dev), d.name, gf_device_plugin(dev));
        printf("      type            : %s\n", d.type);
        printf("      memory          : %s\n",
               bytes_text(d.memory_bytes, "unknown", mem, sizeof mem));
        printf("      max allocation  : %s\n",
               bytes_text(d.max_alloc_bytes, "no limit", maxa, sizeof maxa));
        printf("      dtypes          : %s\n", dtypes_text(d.dtypes, dt, sizeof dt));
        print_ops16(dev, d.dtypes);
        printf("      host-addressable: %s\n", yes_no(d.host_addressable));
        printf("      thread-safe     : %s\n", yes_no(d.thread_safe));
        printf("      driver          : %s\n", d.driver[0] ? d.driver : "(not given)");
    }
    gf_device *def = gf_device_default();
    if (def)
        printf("\nDefault device (GRAFT_DEVICE): %s\n", gf_device_spec(def));
    else if (n_devices > 0)
        printf("\nDefault device (GRAFT_DEVICE): none: %s\n", gf_last_error());
    gf_clear_error();
    /* Where ops a device lacks run: what fell back, and how much, is counted
     * per process (gf_fallback_get_stats; GRAFT_LOG=info prints it at exit). */
    gf_device *fb = gf_fallback_device();
    if (fb)
        printf("Fallback device (GRAFT_FALLBACK): %s (ops other devices lack run there)\n",
               gf_device_spec(fb));
    else if (gf_last_status() != GF_OK)
        printf("Fallback device (GRAFT_FALLBACK): none: %s\n", gf_last_error());
    else if (n_devices > 0)
        printf("Fallback device (GRAFT_FALLBACK): none (strict mode: ops a device lacks fail)\n");
    gf_clear_error();
}

/* ------------------------------------------------------------------ JSON output */
/* Length of the valid UTF-8 sequence at s, or 0 when it is not one. */
static int utf8_len(const unsigned char *s) {
    unsigned char c = s[0];
    int n;
    uint32_t cp;
    if (c < 0x80) return 1;
    if (c >= 0xc2 && c <= 0xdf)
        n = 2, cp = c & 0x1f;
    else if (c >= 0xe0 && c <= 0xef)
        n = 3, cp = c & 0x0f;
    else if (c >= 0xf0 && c <= 0xf4)
        n = 4, cp = c & 0x07;
    else
        return 0;
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

/* The two-character escape JSON has for c, or NULL. */
static const char *json_escape(unsigned char c) {
    switch (c) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    case '\b': return "\\b";
    case '\f': return "\\f";
    default: return NULL;
    }
}

/* A JSON string: quotes, backslashes and control characters escaped; bytes
 * that are not UTF-8 (a plugin may hand over anything) become U+FFFD. */
static void json_string(const char *s) {
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        unsigned char c = *p;
        const char *esc = json_escape(c);
        if (esc) {
            fputs(esc, stdout);
            p++;
            continue;
        }
        if (c < 0x20 || c == 0x7f) {
            printf("\\u%04x", c);
            p++;
            continue;
        }
        int n = utf8_len(p);
        if (n == 0) {
            fputs("\\ufffd", stdout);
            p++;
            continue;
        }
        fwrite(p, 1, (size_t)n, stdout);
        p += n;
    }
    putchar('"');
}

static void json_key(const char *indent, const char *key) {
    printf("%s", indent);
    json_string(key);
    fputs(": ", stdout);
}

static void print_json(int n_plugins, int n_devices) {
    printf("{\n");
    json_key("  ", "plugins");
    printf("[");
    for (int i = 0, first = 1; i < n_plugins; i++) {
        gf_plugin_info p;
        if (gf_plugin_get_info(i, &p) != GF_OK) continue;
        printf("%s\n    {\n", first ? "" : ",");
        first = 0;
        json_key("      ", "path");
        json_string(p.path);
        printf(",\n");
        json_key("      ", "name");
        json_string(p.name);
        printf(",\n");
        json_key("      ", "version");
        json_string(p.version);
        printf(",\n");
        json_key("      ", "abi_version");
        if (p.abi_major || p.abi_minor) {
            char abi[32];
            snprintf(abi, sizeof abi, "%u.%u", p.abi_major, p.abi_minor);
            json_string(abi);
        } else {
            printf("null");
        }
        printf(",\n");
        json_key("      ", "loaded");
        printf("%s,\n", p.loaded ? "true" : "false");
        json_key("      ", "reason");
        json_string(p.reason);
        printf(",\n");
        json_key("      ", "device_count");
        printf("%d\n    }", p.device_count);
    }
    printf("%s],\n", n_plugins ? "\n  " : "");

    json_key("  ", "devices");
    printf("[");
    for (int i = 0, first = 1; i < n_devices; i++) {
        gf_device *dev = gf_device_at(i);
        gf_device_info d;
        if (!dev || gf_device_get_info(dev, &d) != GF_OK) continue;
        printf("%s\n    {\n", first ? "" : ",");
        first = 0;
        json_key("      ", "spec");
        json_string(gf_device_spec(dev));
        printf(",\n");
        json_key("      ", "name");
        json_string(d.name);
        printf(",\n");
        json_key("      ", "type");
        json_string(d.type);
        printf(",\n");
        json_key("      ", "index");
        printf("%d,\n", gf_device_index(dev));
        json_key("      ", "plugin");
        json_string(gf_device_plugin(dev));
        printf(",\n");
        json_key("      ", "memory_bytes");
        printf("%llu,\n", (unsigned long long)d.memory_bytes);
        json_key("      ", "max_alloc_bytes");
        printf("%llu,\n", (unsigned long long)d.max_alloc_bytes);
        json_key("      ", "dtypes");
        printf("[");
        for (int k = 0, firstd = 1; k < 32; k++) {
            if (!(d.dtypes & (1u << k))) continue;
            printf("%s", firstd ? "" : ", ");
            firstd = 0;
            json_string(gf_dtype_name((gf_dtype)k));
        }
        printf("],\n");
        /* per 16-bit dtype stored: the ops of ops16 that go to the fallback device
         * (the fused gradients a device lacks are composed there instead) */
        json_key("      ", "fallback_16bit");
        printf("{");
        for (int h = 0, firsth = 1; h < 2; h++) {
            gf_dtype half = h ? GF_BF16 : GF_F16;
            if (!(d.dtypes & (1u << half))) continue;
            printf("%s", firsth ? "" : ", ");
            firsth = 0;
            json_string(gf_dtype_name(half));
            printf(": [");
            for (int k = 0, firstk = 1; k < N_OPS16; k++) {
                if (fused(k) || runs16(dev, k, half)) continue;
                printf("%s", firstk ? "" : ", ");
                firstk = 0;
                json_string(op16_label(k));
            }
            printf("]");
        }
        printf("},\n");
        json_key("      ", "host_addressable");
        printf("%s,\n", d.host_addressable ? "true" : "false");
        json_key("      ", "thread_safe");
        printf("%s,\n", d.thread_safe ? "true" : "false");
        json_key("      ", "driver");
        json_string(d.driver);
        printf("\n    }");
    }
    printf("%s],\n", n_devices ? "\n  " : "");

    gf_device *def = n_devices ? gf_device_default() : NULL;
    json_key("  ", "default_device");
    if (def)
        json_string(gf_device_spec(def));
    else
        printf("null");
    gf_clear_error();
    gf_device *fb = n_devices ? gf_fallback_device() : NULL;
    printf(",\n");
    json_key("  ", "fallback_device"); /* null: strict mode, or none usable */
    if (fb)
        json_string(gf_device_spec(fb));
    else
        printf("null");
    gf_clear_error();
    printf("\n}\n");
}

/* ------------------------------------------------------------------ main */
int main(int argc, char **argv) {
    bool json = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) {
            json = true;
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout, argv[0]);
            return 0;
        } else {
            fprintf(stderr, "%s: unknown argument '%s'\n", argv[0], argv[i]);
            usage(stderr, argv[0]);
            return 2;
        }
    }
    /* gf_init fails only when no plugin loaded; the listing says why. */
    gf_init();
    gf_clear_error();
    int n_plugins = gf_plugin_count();
    int n_devices = gf_device_count();
    if (json)
        print_json(n_plugins, n_devices);
    else
        print_text(n_plugins, n_devices);
    fflush(stdout);
    if (n_devices == 0) {
        fprintf(stderr,
                "graft-info: no device is available (%d plugin file%s found, none with a "
                "device).\n"
                "  Build or install a plugin, or point GRAFT_PLUGIN_PATH at a plugin file or\n"
                "  directory; check that GRAFT_PLUGINS does not exclude it. Reasons for skipped\n"
                "  plugins are listed above.\n",
                n_plugins, n_plugins == 1 ? "" : "s");
        return 1;
    }
    return 0;
}
