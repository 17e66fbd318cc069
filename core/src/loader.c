/* SPDX-License-Identifier: BSD-3-Clause */
/* loader.c — plugin discovery, negotiation and lifetime.
 *
 * Search order (ARCHITECTURE.md, rule 12): each entry of GRAFT_PLUGIN_PATH
 * (directories or .so files), the build tree's plugin directory (only for the
 * build tree's own libgraft.so), <directory of libgraft.so>/graft/plugins,
 * and the installed plugin directory of the configured prefix. A plugin that
 * fails to open, negotiate or initialise is recorded with its reason and
 * skipped; it never hides the others. */
#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"

#define MAX_PLUGINS 64

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static bool g_initialised;
static gf_plugin_rec *g_plugins[MAX_PLUGINS];
static int g_n_plugins;

/* Message a plugin attached to the call it is failing (host->set_error). */
static _Thread_local char tl_plugin_msg[512];

const char *gf__plugin_message(void) { return tl_plugin_msg; }
void gf__plugin_message_clear(void) { tl_plugin_msg[0] = '\0'; }

static void host_set_error(void *host_ctx, const char *message) {
    (void)host_ctx;
    snprintf(tl_plugin_msg, sizeof tl_plugin_msg, "%s", message ? message : "");
}

static void host_log(void *host_ctx, gfp_log_level level, const char *message) {
    const gf_plugin_rec *p = host_ctx;
    if ((int)level < GFP_LOG_ERROR || (int)level > GFP_LOG_DEBUG) level = GFP_LOG_DEBUG;
    gf__log(level, "plugin %s: %s", p && p->name[0] ? p->name : "?", message ? message : "");
}

int gf__plugin_count(void) { return g_n_plugins; }
gf_plugin_rec *gf__plugin_at(int i) { return (i >= 0 && i < g_n_plugins) ? g_plugins[i] : NULL; }


static bool name_allowed(const char *name) {
    const char *list = gf__getenv("GRAFT_PLUGINS");
    if (!list || !*list) return true;
    size_t n = strlen(name);
    for (const char *s = list; *s;) {
        while (*s == ',' || *s == ' ') s++;
        const char *e = s;
        while (*e && *e != ',') e++;
        const char *t = e;
        while (t > s && t[-1] == ' ') t--;
        if ((size_t)(t - s) == n && !strncmp(s, name, n)) return true;
        s = e;
    }
    return false;
}

static gf_plugin_rec *new_record(const char *path) {
    if (g_n_plugins >= MAX_PLUGINS) {
        gf__log(GFP_LOG_WARN, "more than %d plugin files; ignoring %s", MAX_PLUGINS, path);
        return NULL;
    }
    gf_plugin_rec *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    snprintf(p->path, sizeof p->path, "%.1000s", path);
    /* The host table lives with the record so its host_ctx can name the plugin. */
    g_plugins[g_n_plugins++] = p;
    return p;
}

static void skip(gf_plugin_rec *p, const char *fmt, const char *detail) {
    snprintf(p->reason, sizeof p->reason, fmt, detail ? detail : "");
    gf__log(GFP_LOG_WARN, "skipping plugin %s: %s", p->path, p->reason);
}

/* Host tables, one per record (host_ctx points back at the record). */
static gfp_host g_hosts[MAX_PLUGINS];

static void open_devices(gf_plugin_rec *p);

static void load_one(const char *path) {
    char real[PATH_MAX];
    if (!realpath(path, real)) snprintf(real, sizeof real, "%s", path);
    for (int i = 0; i < g_n_plugins; i++)
        if (!strcmp(g_plugins[i]->path, real)) return; /* found twice on the path */
    int slot = g_n_plugins;
    gf_plugin_rec *p = new_record(real);
    if (!p) return;

    /* A file named libgraft-<name>.so declares its plugin's name: when
     * GRAFT_PLUGINS leaves that name out, the file is not even opened (so an
     * unwanted plugin's libraries — a GPU runtime, oneDNN — never load). */
    const char *base = strrchr(real, '/');
    base = base ? base + 1 : real;
    size_t blen = strlen(base);
    if (blen > 12 && !strncmp(base, "libgraft-", 9) && !strcmp(base + blen - 3, ".so")) {
        char fname[64];
        snprintf(fname, sizeof fname, "%.*s", (int)(blen - 12), base + 9);
        if (!name_allowed(fname)) {
            snprintf(p->name, sizeof p->name, "%s", fname);
            skip(p, "not listed in GRAFT_PLUGINS (by its file name)%s", "");
            return;
        }
    }

    dlerror();
    p->dl = dlopen(real, RTLD_NOW | RTLD_LOCAL);
    if (!p->dl) {
        const char *e = dlerror();
        skip(p, "cannot open: %s", e ? e : "unknown dlopen error");
        return;
    }
    gfp_negotiate_fn entry;
    *(void **)&entry = dlsym(p->dl, GFP_ENTRY_SYMBOL);
    if (!entry) {
        skip(p, "no entry symbol '" GFP_ENTRY_SYMBOL "': not a graft plugin%s", "");
        return;
    }
    gfp_host *host = &g_hosts[slot];
    *host = (gfp_host){.struct_size = sizeof(gfp_host), .abi_major = GFP_ABI_MAJOR,
                       .abi_minor = GFP_ABI_MINOR, .host_ctx = p,
                       .set_error = host_set_error, .log = host_log};
    gfp_negotiate_request req = {.struct_size = sizeof req, .abi_major = GFP_ABI_MAJOR,
                                 .abi_minor = GFP_ABI_MINOR, .host = host};
    const gfp_plugin *table = NULL;
    gf__plugin_message_clear();
    gfp_status st = entry(&req, &table);
    if (st != GFP_OK || !table) {
        char buf[460];
        snprintf(buf, sizeof buf, "status %d%s%.400s (core speaks ABI %d.%d)", (int)st,
                 tl_plugin_msg[0] ? ": " : "", tl_plugin_msg, GFP_ABI_MAJOR, GFP_ABI_MINOR);
        skip(p, "negotiation refused: %s", buf);
        return;
    }
    /* Only struct_size and the version fields are common to every major:
     * check the major before reading anything else. */
    p->abi_major = table->abi_major;
    p->abi_minor = table->abi_minor;
    if (table->abi_major != GFP_ABI_MAJOR) {
        char buf[200];
        snprintf(buf, sizeof buf, "plugin table is ABI %u.%u, this core speaks ABI %d.%d",
                 table->abi_major, table->abi_minor, GFP_ABI_MAJOR, GFP_ABI_MINOR);
        skip(p, "ABI major version mismatch: %s", buf);
        return;
    }
    if (table->struct_size < GFP_PLUGIN_SIZE_MIN) {
        char buf[200];
        snprintf(buf, sizeof buf, "%u bytes, the v1 minimum is %u", table->struct_size,
                 (unsigned)GFP_PLUGIN_SIZE_MIN);
        skip(p, "plugin table too small: %s", buf);
        return;
    }
    if (table->name) snprintf(p->name, sizeof p->name, "%s", table->name);
    if (table->version) snprintf(p->version, sizeof p->version, "%s", table->version);
    if (!table->name || !table->name[0] || !table->version || !table->init ||
        !table->device_count || !table->device_props || !table->device_open ||
        !table->buffer_alloc || !table->buffer_free || !table->buffer_write ||
        !table->buffer_read || !table->launch) {
        skip(p, "plugin table lacks a REQUIRED slot (name, version, init, device_*, "
                "buffer_alloc/free/write/read or launch)%s", "");
        return;
    }
    p->table = table;
    p->table_size = table->struct_size;
    if (!name_allowed(p->name)) {
        skip(p, "not listed in GRAFT_PLUGINS%s", "");
        return;
    }
    for (int i = 0; i < slot; i++) {
        if (g_plugins[i]->loaded && !strcmp(g_plugins[i]->name, p->name)) {
            skip(p, "a plugin named '%s' was already loaded from an earlier path", p->name);
            return;
        }
    }
    gf__plugin_message_clear();
    st = table->init(&p->ctx);
    if (st != GFP_OK) {
        char buf[460];
        snprintf(buf, sizeof buf, "status %d%s%.400s", (int)st, tl_plugin_msg[0] ? ": " : "",
                 tl_plugin_msg);
        skip(p, "init failed: %s", buf);
        return;
    }
    p->loaded = true;
    open_devices(p);
    gf__log(GFP_LOG_INFO, "loaded plugin %s %s (ABI %u.%u) from %s: %u device(s)", p->name,
            p->version, p->abi_major, p->abi_minor, p->path, p->n_devices);
}

static void open_devices(gf_plugin_rec *p) {
    uint32_t n = 0;
    gf__plugin_message_clear();
    gfp_status st = p->table->device_count(p->ctx, &n);
    if (st != GFP_OK) {
        snprintf(p->reason, sizeof p->reason, "device_count failed (status %d)%s%.400s", (int)st,
                 tl_plugin_msg[0] ? ": " : "", tl_plugin_msg);
        n = 0;
    } else if (n == 0) {
        snprintf(p->reason, sizeof p->reason, "no devices%s%.480s", tl_plugin_msg[0] ? ": " : "",
                 tl_plugin_msg);
    }
    if (n > 64) n = 64;
    if (n == 0) return;
    p->devices = calloc(n, sizeof *p->devices);
    if (!p->devices) return;
    for (uint32_t i = 0; i < n; i++) {
        gf_device *d = &p->devices[p->n_devices];
        memset(d, 0, sizeof *d);
        d->props.struct_size = sizeof d->props;
        gf__plugin_message_clear();
        st = p->table->device_props(p->ctx, i, &d->props);
        if (st != GFP_OK || !d->props.type[0]) {
            gf__log(GFP_LOG_WARN, "plugin %s: device %u has no usable properties (status %d) %s",
                    p->name, i, (int)st, tl_plugin_msg);
            continue;
        }
        d->props.name[sizeof d->props.name - 1] = '\0';
        d->props.type[sizeof d->props.type - 1] = '\0';
        d->props.driver[sizeof d->props.driver - 1] = '\0';
        d->plugin = p;
        d->plugin_index = i;
        d->thread_safe = (d->props.flags & GFP_DEVICE_FLAG_THREAD_SAFE) != 0;
        pthread_mutex_init(&d->open_lock, NULL);
        pthread_mutex_init(&d->call_lock, NULL);
        pthread_mutex_init(&d->cap_lock, NULL);
        gf__allocator_init(&d->alloc, &d->props);
        p->n_devices++;
    }
}

static void scan_dir(const char *dir) {
    DIR *dh = opendir(dir);
    if (!dh) return;
    char *names[256];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(dh)) && n < 256) {
        size_t len = strlen(e->d_name);
        if (len > 3 && !strcmp(e->d_name + len - 3, ".so")) names[n++] = strdup(e->d_name);
    }
    closedir(dh);
    /* Sorted, so the order of devices is stable from run to run. */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && names[j] && names[j - 1] && strcmp(names[j - 1], names[j]) > 0;
             j--) {
            char *t = names[j];
            names[j] = names[j - 1];
            names[j - 1] = t;
        }
    for (int i = 0; i < n; i++) {
        if (names[i]) {
            char path[PATH_MAX];
            snprintf(path, sizeof path, "%s/%s", dir, names[i]);
            load_one(path);
        }
        free(names[i]);
    }
}

static void scan_entry(const char *entry) {
    struct stat st;
    if (stat(entry, &st) != 0) {
        gf__log(GFP_LOG_WARN, "plugin path entry '%s' does not exist", entry);
        return;
    }
    if (S_ISDIR(st.st_mode)) scan_dir(entry);
    else load_one(entry);
}

static void assign_type_indices(void) {
    for (int i = 0; i < g_n_plugins; i++) {
        gf_plugin_rec *p = g_plugins[i];
        for (uint32_t k = 0; k < p->n_devices; k++) {
            gf_device *d = &p->devices[k];
            int idx = 0;
            for (int j = 0; j <= i; j++) {
                gf_plugin_rec *q = g_plugins[j];
                uint32_t lim = (j == i) ? k : q->n_devices;
                for (uint32_t m = 0; m < lim; m++)
                    if (!strcmp(q->devices[m].props.type, d->props.type)) idx++;
            }
            d->type_index = idx;
            snprintf(d->spec, sizeof d->spec, "%.30s:%d", d->props.type, idx);
        }
    }
}

/* The directory of the libgraft.so this code runs from, resolved ("" when
 * unknown): an installed library finds its plugins relative to itself, so an
 * installation works under any prefix, not only the configured one. */
static void own_lib_dir(char *out, size_t len) {
    Dl_info info;
    char real[PATH_MAX];
    out[0] = '\0';
    if (!dladdr((const void *)&g_n_plugins, &info) || !info.dli_fname) return;
    if (!realpath(info.dli_fname, real)) return;
    char *slash = strrchr(real, '/');
    if (!slash) return;
    *slash = '\0';
    snprintf(out, len, "%s", real);
}

static bool same_dir(const char *a, const char *b) {
    char ra[PATH_MAX], rb[PATH_MAX];
    return realpath(a, ra) && realpath(b, rb) && !strcmp(ra, rb);
}

static void load_all(void) {
    const char *path = gf__getenv("GRAFT_PLUGIN_PATH");
    if (path && *path) {
        char *copy = strdup(path);
        if (copy) {
            char *save = NULL;
            for (char *tok = strtok_r(copy, ":", &save); tok; tok = strtok_r(NULL, ":", &save))
                if (*tok) scan_entry(tok);
            free(copy);
        }
    }
    char libdir[PATH_MAX];
    own_lib_dir(libdir, sizeof libdir);
    /* The build tree's plugins belong to the build tree's library: an
     * installed library must not load plugins of some (other) build. */
    if (!libdir[0] || same_dir(libdir, GRAFT_BUILD_LIB_DIR)) scan_dir(GRAFT_BUILD_PLUGIN_DIR);
    if (libdir[0]) {
        char next_to_lib[PATH_MAX + 64];
        snprintf(next_to_lib, sizeof next_to_lib, "%s/%s", libdir, GRAFT_PLUGIN_SUBDIR);
        scan_dir(next_to_lib); /* <libdir>/graft/plugins next to libgraft.so */
    }
    /* The configured prefix (the same directory after a normal install:
     * load_one skips files it has already seen). */
    scan_dir(GRAFT_INSTALL_PLUGIN_DIR);
    assign_type_indices();
}

gf_status gf__ensure_init(void) {
    if (__atomic_load_n(&g_initialised, __ATOMIC_ACQUIRE)) return GF_OK;
    pthread_mutex_lock(&g_lock);
    if (!g_initialised) {
        load_all();
        __atomic_store_n(&g_initialised, true, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&g_lock);
    return GF_OK;
}

gf_status gf_init(void) {
    gf__ensure_init();
    for (int i = 0; i < g_n_plugins; i++)
        if (g_plugins[i]->loaded) return GF_OK;
    return gf__error(GF_ERR_NOT_FOUND,
                     "no graft plugin could be loaded; run graft-info to see what was found and "
                     "why it was skipped, or set GRAFT_PLUGIN_PATH to a plugin directory");
}


static bool shutdown_locked(bool quiet) {
    for (int i = 0; i < g_n_plugins; i++)
        for (uint32_t k = 0; k < g_plugins[i]->n_devices; k++)
            if (g_plugins[i]->devices[k].alloc.live_blocks) {
                if (!quiet)
                    gf__error(GF_ERR_INVALID,
                              "gf_shutdown: device %s still has %llu live buffer(s); release "
                              "every tensor before shutting down",
                              g_plugins[i]->devices[k].spec,
                              (unsigned long long)g_plugins[i]->devices[k].alloc.live_blocks);
                return false;
            }
    for (int i = g_n_plugins - 1; i >= 0; i--) {
        gf_plugin_rec *p = g_plugins[i];
        for (uint32_t k = 0; k < p->n_devices; k++) {
            gf_device *d = &p->devices[k];
            gf__allocator_release_all(d);
            if (d->opened && GF_SLOT(p, device_close)) p->table->device_close(d->handle);
            pthread_mutex_destroy(&d->open_lock);
            pthread_mutex_destroy(&d->call_lock);
            pthread_mutex_destroy(&d->cap_lock);
            pthread_mutex_destroy(&d->alloc.lock);
        }
        if (p->loaded && GF_SLOT(p, shutdown)) p->table->shutdown(p->ctx);
        /* Sanitizer runtimes report leaks of unloaded modules poorly; keeping
         * the mapping costs nothing at exit. dlclose only on explicit shutdown. */
        if (p->dl && !quiet) dlclose(p->dl);
        free(p->devices);
        free(p);
        g_plugins[i] = NULL;
    }
    g_n_plugins = 0;
    gf__device_reset_default();
    __atomic_store_n(&g_initialised, false, __ATOMIC_RELEASE);
    return true;
}

gf_status gf_shutdown(void) {
    pthread_mutex_lock(&g_lock);
    bool ok = !g_initialised || shutdown_locked(false);
    pthread_mutex_unlock(&g_lock);
    return ok ? GF_OK : gf__status();
}

/* At exit, plugins are shut down when nothing is left alive (rule 13). */
__attribute__((destructor)) static void gf__at_exit(void) {
    pthread_mutex_lock(&g_lock);
    if (g_initialised) shutdown_locked(true);
    pthread_mutex_unlock(&g_lock);
}

int gf_plugin_count(void) {
    gf__ensure_init();
    return g_n_plugins;
}

gf_status gf_plugin_get_info(int i, gf_plugin_info *info) {
    gf__ensure_init();
    if (!info) return gf__error(GF_ERR_INVALID, "gf_plugin_get_info: info is NULL");
    if (i < 0 || i >= g_n_plugins)
        return gf__error(GF_ERR_INDEX, "gf_plugin_get_info: index %d out of range [0, %d)", i,
                         g_n_plugins);
    const gf_plugin_rec *p = g_plugins[i];
    memset(info, 0, sizeof *info);
    snprintf(info->path, sizeof info->path, "%s", p->path);
    snprintf(info->name, sizeof info->name, "%s", p->name);
    snprintf(info->version, sizeof info->version, "%s", p->version);
    snprintf(info->reason, sizeof info->reason, "%s", p->reason);
    info->abi_major = p->abi_major;
    info->abi_minor = p->abi_minor;
    info->loaded = p->loaded;
    info->device_count = (int)p->n_devices;
    return GF_OK;
}
