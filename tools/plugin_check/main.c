/* SPDX-License-Identifier: BSD-3-Clause */
/* graft-plugin-check — the conformance checker for graft device plugins.
 *
 *   graft-plugin-check [options] PATH.so
 *
 * Loads one plugin file in isolation through the plugin ABI (no libgraft)
 * and, for each of its devices, checks negotiation and struct sizes, the
 * memory slots, every op and dtype combination it declares against the
 * reference plugin (the oracle) in contiguous, strided, broadcast and
 * in-place layouts with guard bytes around every tensor, the backward
 * kernels by their adjoint identities, error paths, two threads at once and
 * allocation accounting. See docs/plugin-authors.md.
 *
 * Exit status: 0 when every check passed; 1 when one failed; 2 for a bad
 * command line or when the checker cannot start (no reference plugin);
 * 77 when the plugin loads but has no device to check. */
#define _GNU_SOURCE /* readlink, sigaltstack */

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pc.h"

pc_options pc_opt = {.only_device = -1, .seed = 20240607};

/* ------------------------------------------------------------ progress and crashes */
static char current[256] = "loading the plugin";
static bool progress_tty;

void pc_progress(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(current, sizeof current, fmt, ap);
    va_end(ap);
    if (progress_tty) {
        fprintf(stderr, "\r\033[K%.100s", current);
        fflush(stderr);
    }
}

static void progress_done(void) {
    if (progress_tty) fputs("\r\033[K", stderr);
}

/* A crash inside the plugin ends the run; say where before dying. */
static void on_crash(int sig) {
    static const char head[] = "\ngraft-plugin-check: CRASHED (signal ";
    static const char mid[] = ") while running: ";
    char num[4] = {(char)('0' + sig / 10 % 10), (char)('0' + sig % 10), 0, 0};
    ssize_t r = write(2, head, sizeof head - 1);
    r = write(2, num[0] == '0' ? num + 1 : num, num[0] == '0' ? 1 : 2);
    r = write(2, mid, sizeof mid - 1);
    r = write(2, current, strnlen(current, sizeof current));
    r = write(2, "\n", 1);
    (void)r;
    signal(sig, SIG_DFL);
    raise(sig);
}

static void install_crash_handler(void) {
    static char stack[64 * 1024];
    stack_t ss = {.ss_sp = stack, .ss_size = sizeof stack, .ss_flags = 0};
    sigaltstack(&ss, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_crash;
    sa.sa_flags = SA_ONSTACK | SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) sigaction(sigs[i], &sa, NULL);
}

/* ------------------------------------------------------------ options */
bool pc_op_selected(const char *name) {
    if (!pc_opt.only_ops) return true;
    size_t n = strlen(name);
    for (const char *p = pc_opt.only_ops; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && !strncmp(p, name, n)) return true;
        p += len + (end ? 1 : 0);
    }
    return false;
}

static void usage(FILE *out) {
    fprintf(out,
            "usage: graft-plugin-check [options] PATH.so\n"
            "Checks one graft device plugin against the reference plugin through the plugin\n"
            "ABI alone: negotiation and struct sizes, memory slots, every op and dtype it\n"
            "declares (contiguous, strided, broadcast, 0-size, 0-dim, odd and large shapes,\n"
            "guard bytes around every tensor), backward kernels, error paths, two threads,\n"
            "allocation accounting.\n"
            "  --reference PATH  the oracle (default: libgraft-reference.so next to graft's\n"
            "                    build or installed plugin directory)\n"
            "  --json[=FILE]     write the results as JSON to FILE, or to stdout (the text\n"
            "                    report then goes to stderr)\n"
            "  --quick           fewer shapes and parameters (no large shapes)\n"
            "  --brief           text report: failures and summaries only\n"
            "  --op NAME[,NAME]  only these ops (see --list-ops)\n"
            "  --device N        only device N\n"
            "  --seed N          seed of the random inputs (default %llu)\n"
            "  --verbose         also show the plugins' log messages\n"
            "  --dump            print inputs, result and expected values of failing cases\n"
            "  --list-ops        print the op ids and names the checker covers, and exit\n"
            "  --version, --help\n"
            "Exit status: 0 all passed, 1 a check failed, 2 bad usage or no oracle,\n"
            "77 the plugin has no device.\n",
            (unsigned long long)pc_opt.seed);
}

static bool parse_u64(const char *s, unsigned long long *v) {
    char *end;
    errno = 0;
    *v = strtoull(s, &end, 0);
    return !errno && end != s && !*end && s[0] != '-';
}

/* Returns -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        unsigned long long v;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--version")) {
            printf("graft-plugin-check %s (plugin ABI %d.%d)\n", PC_VERSION, GFP_ABI_MAJOR,
                   GFP_ABI_MINOR);
            return 0;
        } else if (!strcmp(a, "--list-ops")) {
            size_t n;
            const pc_op *ops = pc_catalogue(&n);
            for (size_t k = 0; k < n; k++) printf("%u %s\n", (unsigned)ops[k].id, ops[k].name);
            const char *gaps[GFP_OP_ROW_COUNT];
            size_t n_gaps = pc_catalogue_missing(gaps, GFP_OP_ROW_COUNT);
            for (size_t k = 0; k < n_gaps; k++)
                fprintf(stderr, "graft-plugin-check: op %s of graft_ops.def has no cases\n",
                        gaps[k]);
            return n_gaps ? 1 : 0;
        } else if (!strcmp(a, "--quick")) {
            pc_opt.quick = true;
        } else if (!strcmp(a, "--brief")) {
            pc_opt.brief = true;
        } else if (!strcmp(a, "--dump")) {
            pc_opt.dump = true;
        } else if (!strcmp(a, "--verbose")) {
            pc_opt.verbose = true;
        } else if (!strcmp(a, "--json")) {
            pc_opt.json_path = "-";
        } else if (!strncmp(a, "--json=", 7) && a[7]) {
            pc_opt.json_path = a + 7;
        } else if (!strcmp(a, "--reference") && val) {
            pc_opt.reference_path = val;
            i++;
        } else if (!strcmp(a, "--op") && val) {
            pc_opt.only_ops = val;
            i++;
        } else if (!strcmp(a, "--device") && val && parse_u64(val, &v) && v < 1024) {
            pc_opt.only_device = (int)v;
            i++;
        } else if (!strcmp(a, "--seed") && val && parse_u64(val, &v)) {
            pc_opt.seed = v;
            i++;
        } else if (a[0] == '-') {
            fprintf(stderr, "graft-plugin-check: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            return 2;
        } else if (pc_opt.plugin_path) {
            fprintf(stderr, "graft-plugin-check: one plugin at a time ('%s' and '%s')\n",
                    pc_opt.plugin_path, a);
            return 2;
        } else {
            pc_opt.plugin_path = a;
        }
    }
    if (!pc_opt.plugin_path) {
        fprintf(stderr, "graft-plugin-check: no plugin given\n");
        usage(stderr);
        return 2;
    }
    if (pc_opt.only_ops) {
        /* Every name must be an op the checker knows: a typo must not pass silently. */
        char buf[64];
        for (const char *p = pc_opt.only_ops; *p;) {
            const char *end = strchr(p, ',');
            size_t len = end ? (size_t)(end - p) : strlen(p);
            snprintf(buf, sizeof buf, "%.*s", (int)(len < 63 ? len : 63), p);
            bool known = pc_op_by_id(gfp_op_by_name(buf)) != NULL;
            if (!known) {
                fprintf(stderr, "graft-plugin-check: --op: no op named '%s' (see --list-ops)\n", buf);
                return 2;
            }
            p += len + (end ? 1 : 0);
        }
    }
    return -1;
}

/* ------------------------------------------------------------ the oracle */
#ifndef GRAFT_BUILD_PLUGIN_DIR
#define GRAFT_BUILD_PLUGIN_DIR ""
#endif
#ifndef GRAFT_INSTALL_PLUGIN_DIR
#define GRAFT_INSTALL_PLUGIN_DIR ""
#endif
#ifndef GRAFT_INSTALL_LIBDIR
#define GRAFT_INSTALL_LIBDIR "lib"
#endif
#define REF_FILE "libgraft-reference.so"

static bool exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Next to this executable first (a build tree, or a moved installation),
 * then the directories this build was configured with. */
static bool find_reference(char *out, size_t len, char *tried, size_t tried_len) {
    char exe[1024];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    char cands[4][1200];
    int nc = 0;
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) *slash = '\0';
        snprintf(cands[nc++], sizeof cands[0], "%s/../plugins/%s", exe, REF_FILE);
        snprintf(cands[nc++], sizeof cands[0], "%s/../%s/graft/plugins/%s", exe, GRAFT_INSTALL_LIBDIR,
                 REF_FILE);
    }
    if (GRAFT_BUILD_PLUGIN_DIR[0])
        snprintf(cands[nc++], sizeof cands[0], "%s/%s", GRAFT_BUILD_PLUGIN_DIR, REF_FILE);
    if (GRAFT_INSTALL_PLUGIN_DIR[0])
        snprintf(cands[nc++], sizeof cands[0], "%s/%s", GRAFT_INSTALL_PLUGIN_DIR, REF_FILE);
    size_t used = 0;
    tried[0] = '\0';
    for (int i = 0; i < nc; i++) {
        if (exists(cands[i])) {
            char real[4096];
            snprintf(out, len, "%.1199s", realpath(cands[i], real) ? real : cands[i]);
            return true;
        }
        used += (size_t)snprintf(tried + used, used < tried_len ? tried_len - used : 0, "%s%s",
                                 used ? ", " : "", cands[i]);
    }
    return false;
}

/* The same file cannot be loaded twice: a copy gives the oracle its own
 * instance (its own host table and counters). */
static bool same_file(const char *a, const char *b) {
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static bool copy_file(const char *from, const char *to) {
    int in = open(from, O_RDONLY), out = in >= 0 ? open(to, O_WRONLY | O_CREAT | O_EXCL, 0700) : -1;
    bool ok = in >= 0 && out >= 0;
    char buf[65536];
    ssize_t r;
    while (ok && (r = read(in, buf, sizeof buf)) != 0) {
        if (r < 0 || write(out, buf, (size_t)r) != r) ok = false;
    }
    if (in >= 0) close(in);
    if (out >= 0 && close(out) != 0) ok = false;
    return ok;
}

/* ------------------------------------------------------------ main */
int main(int argc, char **argv) {
    int rc = parse_args(argc, argv);
    if (rc >= 0) return rc;
    progress_tty = isatty(2) && !pc_opt.verbose;
    install_crash_handler();

    char ref[1200], tried[4096];
    if (pc_opt.reference_path) {
        snprintf(ref, sizeof ref, "%s", pc_opt.reference_path);
        if (!exists(ref)) {
            fprintf(stderr, "graft-plugin-check: --reference %s: no such file\n", ref);
            return 2;
        }
    } else if (!find_reference(ref, sizeof ref, tried, sizeof tried)) {
        fprintf(stderr,
                "graft-plugin-check: cannot find the reference plugin (%s), the oracle every "
                "plugin is compared with; looked in: %s. Pass --reference PATH.\n",
                REF_FILE, tried);
        return 2;
    }
    if (!exists(pc_opt.plugin_path)) {
        fprintf(stderr, "graft-plugin-check: %s: no such file\n", pc_opt.plugin_path);
        return 2;
    }

    /* The oracle first: without it nothing can be compared. */
    pc_plugin oracle, plugin;
    char why[1024], tmpdir[] = "/tmp/graft-plugin-check-XXXXXX", copy[1200] = "";
    const char *oracle_path = ref;
    if (same_file(ref, pc_opt.plugin_path)) {
        if (!mkdtemp(tmpdir)) {
            fprintf(stderr, "graft-plugin-check: cannot create a temporary directory: %s\n",
                    strerror(errno));
            return 2;
        }
        snprintf(copy, sizeof copy, "%s/%s", tmpdir, REF_FILE);
        if (!copy_file(ref, copy)) {
            fprintf(stderr, "graft-plugin-check: cannot copy %s to %s\n", ref, copy);
            rmdir(tmpdir);
            return 2;
        }
        oracle_path = copy;
    }
    bool oracle_ok = pc_plugin_load(&oracle, oracle_path, "oracle", false, why, sizeof why);
    uint32_t oracle_devices = 0;
    if (copy[0]) { /* mapped now; the file is no longer needed */
        unlink(copy);
        rmdir(tmpdir);
    }
    if (oracle_ok) oracle_ok = pc_plugin_init(&oracle, &oracle_devices, why, sizeof why);
    pc_device oracle_dev;
    if (oracle_ok && oracle_devices == 0) {
        snprintf(why, sizeof why, "it has no device");
        oracle_ok = false;
    }
    if (oracle_ok) oracle_ok = pc_device_open(&oracle, 0, &oracle_dev, false, why, sizeof why);
    if (!oracle_ok) {
        fprintf(stderr, "graft-plugin-check: the reference plugin %s cannot serve as the oracle: %s\n",
                ref, why);
        pc_plugin_unload(&oracle, false);
        return 2;
    }

    pc_progress("loading %s", pc_opt.plugin_path);
    pc_report_begin(pc_opt.plugin_path, ref);
    bool loaded = pc_plugin_load(&plugin, pc_opt.plugin_path, "plugin", true, why, sizeof why);
    if (loaded) {
        pc_report_plugin(&plugin);
        if (plugin.null_optional[0])
            pc_report_note("optional slots left NULL (the core applies their defaults): %s",
                           plugin.null_optional);
    }
    uint32_t count = 0;
    bool inited = loaded && pc_plugin_init(&plugin, &count, why, sizeof why);
    if (loaded && !inited) pc_report_check(-1, "abi", "init", PC_FAIL, "%s", why);
    if (inited)
        pc_report_check(-1, "abi", "init", PC_PASS, "init and device_count: %u device(s)%s%s",
                        (unsigned)count, count ? "" : ": ", count ? "" : why);
    if (!loaded) pc_report_note("cannot go on: %s", why);

    for (uint32_t i = 0; inited && i < count; i++) {
        if (pc_opt.only_device >= 0 && (uint32_t)pc_opt.only_device != i) continue;
        pc_device dev;
        pc_progress("device %u", (unsigned)i);
        if (!pc_device_open(&plugin, i, &dev, true, why, sizeof why)) continue;
        pc_report_device((int)i, &dev.props);
        pc_ctx ctx = {.dev = &dev, .oracle = &oracle_dev, .device_index = (int)i};
        pc_check_memory(&ctx);
        pc_run_ops(&ctx);
        pc_check_gradients(&ctx);
        pc_check_errors(&ctx);
        pc_check_threads(&ctx);
        pc_check_graphs(&ctx);
        pc_check_leaks(&ctx);
        pc_progress("closing device %u", (unsigned)i);
        pc_device_close(&dev);
    }
    pc_progress("shutting down");
    pc_plugin_unload(&plugin, inited);
    pc_device_close(&oracle_dev);
    pc_plugin_unload(&oracle, false);
    progress_done();

    long failures = pc_report_failures();
    bool written = pc_report_finish();
    if (failures || !loaded) return 1;
    if (!written) return 2;
    if (inited && count == 0) {
        fprintf(stderr, "graft-plugin-check: the plugin has no device here, nothing was checked "
                        "beyond loading it\n");
        return 77;
    }
    return 0;
}
