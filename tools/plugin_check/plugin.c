/* SPDX-License-Identifier: BSD-3-Clause */
/* plugin.c — loading a plugin through the ABI alone, the host table the
 * checker offers it, the negotiation and struct checks, and the wrappers
 * through which every later call goes.
 *
 * The checker is its own host: it negotiates, initialises and opens devices
 * the way the core does, so a plugin is checked in isolation, without
 * libgraft. The wrappers keep the books (every buffer allocated, every buffer
 * freed) so that the accounting check at shutdown knows what the plugin has
 * been given back. */
#define _GNU_SOURCE /* dlerror, RTLD_* */

#include <ctype.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pc.h"

/* ------------------------------------------------------------ host table */
static _Thread_local char tl_error[1024];

const char *pc_error_text(void) { return tl_error; }
void pc_error_clear(void) { tl_error[0] = '\0'; }

static void host_set_error(void *host_ctx, const char *message) {
    (void)host_ctx;
    snprintf(tl_error, sizeof tl_error, "%s", message ? message : "(NULL message)");
}

static void host_log(void *host_ctx, gfp_log_level level, const char *message) {
    pc_plugin *p = host_ctx;
    static const char *const names[] = {"error", "warn", "info", "debug"};
    const char *text = message ? message : "(NULL message)";
    if (level <= GFP_LOG_WARN) {
        pthread_mutex_lock(&p->lock);
        p->warnings++;
        if (p->in_shutdown && !p->shutdown_log[0])
            snprintf(p->shutdown_log, sizeof p->shutdown_log, "%s", text);
        pthread_mutex_unlock(&p->lock);
    }
    if (pc_opt.verbose || (p->in_shutdown && level <= GFP_LOG_WARN))
        fprintf(stderr, "[%s %s] %s: %s\n", p->role, p->name[0] ? p->name : "?",
                (unsigned)level < 4 ? names[level] : "?", text);
}

const char *pc_status_name(gfp_status s) {
    switch (s) {
    case GFP_OK: return "OK";
    case GFP_ERR_INVALID: return "INVALID";
    case GFP_ERR_OUT_OF_MEMORY: return "OUT_OF_MEMORY";
    case GFP_ERR_UNSUPPORTED: return "UNSUPPORTED";
    case GFP_ERR_NOT_FOUND: return "NOT_FOUND";
    case GFP_ERR_DEVICE: return "DEVICE";
    case GFP_ERR_VERSION: return "VERSION";
    case GFP_ERR_INTERNAL: return "INTERNAL";
    default: return "(not a gfp_status)";
    }
}

/* ------------------------------------------------------------ checks of what was negotiated */
static void abi_check(bool checks, bool ok, const char *what, const char *fmt, ...)
    PC_PRINTF(4, 5);
static void abi_check(bool checks, bool ok, const char *what, const char *fmt, ...) {
    if (!checks) return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pc_report_check(-1, "abi", what, ok ? PC_PASS : PC_FAIL, "%s", msg);
}

/* A plugin or device type name: what GRAFT_PLUGINS and GRAFT_DEVICE can spell. */
static bool is_identifier(const char *s, size_t max, const char *extra) {
    size_t n = 0;
    for (; n < max && s[n]; n++) {
        unsigned char c = (unsigned char)s[n];
        if (!(islower(c) || isdigit(c) || c == '_' || (extra && strchr(extra, c)))) return false;
    }
    return n > 0 && n < max;
}

static bool nul_terminated(const char *s, size_t max) { return memchr(s, '\0', max) != NULL; }

typedef struct slot_info {
    const char *name;
    size_t offset;
    bool required;
} slot_info;

#define SLOT(f, req) {#f, offsetof(gfp_plugin, f), req}
static const slot_info slot_table[] = {
    SLOT(init, true),          SLOT(shutdown, false),     SLOT(device_count, true),
    SLOT(device_props, true),  SLOT(device_open, true),   SLOT(device_close, false),
    SLOT(buffer_alloc, true),  SLOT(buffer_free, true),   SLOT(buffer_write, true),
    SLOT(buffer_read, true),   SLOT(buffer_copy, false),  SLOT(buffer_fill, false),
    SLOT(synchronize, false),  SLOT(launch, true),        SLOT(query_op, false),
    SLOT(query_extension, false),
};
#undef SLOT

static bool slot_set(const gfp_plugin *t, size_t offset) {
    void (*fn)(void);
    memcpy(&fn, (const char *)t + offset, sizeof fn);
    return fn != NULL;
}

/* One negotiate call with the given version. */
/* The table size of an older minor of this major. */
/* The table of an older minor ends at that minor's last slot. 1.2 and 1.3
 * appended op ids (and 1.3 a parameter struct) only, so a 1.1 or 1.2 table
 * is as large as a 1.3 one. */
static size_t older_table_size(uint32_t minor) {
    return minor == 0 ? (size_t)GFP_PLUGIN_SIZE_V1_0 : (size_t)GFP_PLUGIN_SIZE_V1_1;
}

static gfp_status negotiate_with(gfp_negotiate_fn fn, pc_plugin *p, uint32_t major,
                                 uint32_t minor, const gfp_plugin **table) {
    gfp_negotiate_request req;
    memset(&req, 0, sizeof req);
    req.struct_size = sizeof req;
    req.abi_major = major;
    req.abi_minor = minor;
    req.host = &p->host;
    *table = NULL;
    pc_error_clear();
    return fn(&req, table);
}

bool pc_plugin_load(pc_plugin *p, const char *path, const char *role, bool checks, char *why,
                    size_t why_len) {
    memset(p, 0, sizeof *p);
    pthread_mutex_init(&p->lock, NULL);
    p->path = path;
    p->role = role;
    p->host.struct_size = sizeof p->host;
    p->host.abi_major = GFP_ABI_MAJOR;
    p->host.abi_minor = GFP_ABI_MINOR;
    p->host.host_ctx = p;
    p->host.set_error = host_set_error;
    p->host.log = host_log;

    dlerror();
    p->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!p->dl) {
        const char *e = dlerror();
        snprintf(why, why_len, "cannot open %s: %s", path, e ? e : "unknown error");
        abi_check(checks, false, "dlopen", "%s", why);
        return false;
    }
    void *sym = dlsym(p->dl, GFP_ENTRY_SYMBOL);
    gfp_negotiate_fn negotiate;
    memcpy(&negotiate, &sym, sizeof negotiate);
    if (!negotiate) {
        snprintf(why, why_len,
                 "%s exports no symbol %s: it is not a graft plugin, or the symbol is hidden "
                 "(mark it GFP_EXPORT)",
                 path, GFP_ENTRY_SYMBOL);
        abi_check(checks, false, "entry symbol", "%s", why);
        return false;
    }
    abi_check(checks, true, "entry symbol", "%s found", GFP_ENTRY_SYMBOL);

    const gfp_plugin *t = NULL;
    if (checks) {
        /* A core of a future major must be refused, with a message. */
        gfp_status st = negotiate_with(negotiate, p, GFP_ABI_MAJOR + 1, 0, &t);
        const char *why_not = st != GFP_ERR_VERSION
                                  ? " (expected VERSION: a plugin serves only its own major)"
                              : !tl_error[0] ? " but attached no message (call host->set_error)"
                                             : "";
        abi_check(checks, st == GFP_ERR_VERSION && tl_error[0], "future major refused",
                  "negotiate with ABI %d.0 returned %s%s", GFP_ABI_MAJOR + 1, pc_status_name(st),
                  why_not);
        /* A core of a newer minor of the same major must be served. */
        st = negotiate_with(negotiate, p, GFP_ABI_MAJOR, GFP_ABI_MINOR + 7, &t);
        abi_check(checks, st == GFP_OK && t, "newer minor accepted",
                  "negotiate with ABI %d.%d returned %s%s", GFP_ABI_MAJOR, GFP_ABI_MINOR + 7,
                  pc_status_name(st),
                  st == GFP_OK && t ? "" : ": a plugin must serve every minor of its major (the "
                                           "core ignores the slots it does not know)");
    }
    gfp_status st = negotiate_with(negotiate, p, GFP_ABI_MAJOR, GFP_ABI_MINOR, &t);
    if (st != GFP_OK || !t) {
        snprintf(why, why_len, "negotiate with ABI %d.%d returned %s with %s: %s", GFP_ABI_MAJOR,
                 GFP_ABI_MINOR, pc_status_name(st), t ? "a table" : "no table",
                 tl_error[0] ? tl_error : "(no message)");
        abi_check(checks, false, "negotiation", "%s", why);
        return false;
    }
    p->table = t;
    abi_check(checks, t->abi_major == GFP_ABI_MAJOR, "table version",
              "the table says ABI %u.%u (requested %d.%d)", (unsigned)t->abi_major,
              (unsigned)t->abi_minor, GFP_ABI_MAJOR, GFP_ABI_MINOR);
    if (t->abi_major != GFP_ABI_MAJOR) {
        snprintf(why, why_len, "the table's abi_major is %u, not %d", (unsigned)t->abi_major,
                 GFP_ABI_MAJOR);
        return false;
    }

    /* struct_size: at least every REQUIRED slot, and exactly the size of the
     * table's own minor when that is one this header knows. */
    uint32_t size = t->struct_size;
    bool size_ok;
    char size_msg[256];
    if (size < GFP_PLUGIN_SIZE_MIN) {
        size_ok = false;
        snprintf(size_msg, sizeof size_msg,
                 "struct_size %u is smaller than %zu bytes (every REQUIRED slot through launch)",
                 (unsigned)size, (size_t)GFP_PLUGIN_SIZE_MIN);
    } else if (size % sizeof(void *) != 0 || size > 65536) {
        size_ok = false;
        snprintf(size_msg, sizeof size_msg,
                 "struct_size %u is not a plausible table size (set it to sizeof(gfp_plugin))",
                 (unsigned)size);
    } else if (t->abi_minor == GFP_ABI_MINOR && size != sizeof(gfp_plugin) &&
               size != GFP_PLUGIN_SIZE_V1_1) {
        /* A 1.3 table is 192 bytes with the graph slots, or 168 when it was
         * built before they were appended (the core then replays its
         * graphs launch by launch). */
        size_ok = false;
        snprintf(size_msg, sizeof size_msg,
                 "struct_size is %u but an ABI %d.%d table is %zu bytes: the core would read "
                 "%s (set struct_size = sizeof(gfp_plugin))",
                 (unsigned)size, GFP_ABI_MAJOR, GFP_ABI_MINOR, sizeof(gfp_plugin),
                 size > sizeof(gfp_plugin) ? "slots past the end of the table"
                                           : "NULL for slots the table has");
    } else if (t->abi_minor > GFP_ABI_MINOR && size < sizeof(gfp_plugin)) {
        size_ok = false;
        snprintf(size_msg, sizeof size_msg,
                 "struct_size %u is smaller than a %d.%d table (%zu bytes) although the table "
                 "says the newer minor %u (fields are only appended)",
                 (unsigned)size, GFP_ABI_MAJOR, GFP_ABI_MINOR, sizeof(gfp_plugin),
                 (unsigned)t->abi_minor);
    } else if (t->abi_minor < GFP_ABI_MINOR && size != older_table_size(t->abi_minor)) {
        /* An older minor: its table ends at that minor's last slot. */
        size_ok = false;
        snprintf(size_msg, sizeof size_msg,
                 "struct_size %u but an ABI %d.%u table is %zu bytes (set struct_size = "
                 "sizeof(gfp_plugin) of the header the plugin was built with)",
                 (unsigned)size, GFP_ABI_MAJOR, (unsigned)t->abi_minor,
                 older_table_size(t->abi_minor));
    } else {
        size_ok = true;
        snprintf(size_msg, sizeof size_msg, "struct_size %u for ABI %u.%u", (unsigned)size,
                 (unsigned)t->abi_major, (unsigned)t->abi_minor);
    }
    abi_check(checks, size_ok, "table struct_size", "%s", size_msg);
    if (size < GFP_PLUGIN_SIZE_MIN) {
        snprintf(why, why_len, "%s", size_msg);
        return false;
    }
    /* Slots beyond struct_size read as NULL, as the core reads them. */
    memset(&p->slots, 0, sizeof p->slots);
    memcpy(&p->slots, t, size < sizeof p->slots ? size : sizeof p->slots);

    bool names_ok = t->name && t->version && is_identifier(t->name, 64, "-") &&
                    nul_terminated(t->version, 64) && t->version[0];
    abi_check(checks, names_ok, "name and version",
              "name \"%s\", version \"%s\"%s", t->name ? t->name : "(NULL)",
              t->version ? (nul_terminated(t->version, 64) ? t->version : "(too long)") : "(NULL)",
              names_ok ? ""
                       : ": both are REQUIRED; the name is lower case letters, digits, '_' "
                         "and '-' (it is what GRAFT_PLUGINS lists), the version non-empty; "
                         "each under 64 characters");
    snprintf(p->name, sizeof p->name, "%s", t->name && nul_terminated(t->name, 64) ? t->name : "?");
    snprintf(p->version, sizeof p->version, "%s",
             t->version && nul_terminated(t->version, 64) ? t->version : "?");

    char missing[256] = "";
    size_t used = 0;
    for (size_t i = 0; i < sizeof slot_table / sizeof slot_table[0]; i++)
        if (slot_table[i].required && !slot_set(&p->slots, slot_table[i].offset))
            used += (size_t)snprintf(missing + used, used < sizeof missing ? sizeof missing - used : 0,
                                     "%s%s", used ? ", " : "", slot_table[i].name);
    abi_check(checks, !missing[0], "required slots",
              missing[0] ? "REQUIRED slots are NULL: %s" : "every REQUIRED slot is set%s",
              missing[0] ? missing : "");
    if (missing[0]) {
        snprintf(why, why_len, "REQUIRED slots are NULL: %s", missing);
        return false;
    }
    used = 0;
    for (size_t i = 0; i < sizeof slot_table / sizeof slot_table[0]; i++)
        if (!slot_table[i].required && !slot_set(&p->slots, slot_table[i].offset))
            used += (size_t)snprintf(p->null_optional + used,
                                     used < sizeof p->null_optional ? sizeof p->null_optional - used : 0,
                                     "%s%s", used ? ", " : "", slot_table[i].name);
    return true;
}

bool pc_plugin_init(pc_plugin *p, uint32_t *count, char *why, size_t why_len) {
    pc_error_clear();
    gfp_status st = p->slots.init(&p->ctx);
    if (st != GFP_OK) {
        snprintf(why, why_len, "init returned %s: %s", pc_status_name(st),
                 tl_error[0] ? tl_error : "(no message)");
        return false;
    }
    p->initialised = true;
    *count = 0;
    pc_error_clear();
    st = p->slots.device_count(p->ctx, count);
    if (st != GFP_OK) {
        snprintf(why, why_len, "device_count returned %s: %s", pc_status_name(st),
                 tl_error[0] ? tl_error : "(no message)");
        return false;
    }
    if (*count == 0) snprintf(why, why_len, "%s", tl_error[0] ? tl_error : "(no reason given)");
    return true;
}

bool pc_device_open(pc_plugin *p, uint32_t index, pc_device *d, bool checks, char *why,
                    size_t why_len) {
    memset(d, 0, sizeof *d);
    d->plugin = p;
    d->index = index;
    /* props in a larger block whose tail is a sentinel: a plugin must write
     * no more than the struct_size the core gives. */
    union {
        gfp_device_props props;
        unsigned char bytes[sizeof(gfp_device_props) + 64];
    } block;
    memset(&block, 0xCD, sizeof block);
    memset(&block.props, 0, sizeof block.props);
    block.props.struct_size = sizeof block.props;
    pc_error_clear();
    gfp_status st = p->slots.device_props(p->ctx, index, &block.props);
    if (st != GFP_OK) {
        snprintf(why, why_len, "device_props(%u) returned %s: %s", (unsigned)index,
                 pc_status_name(st), tl_error[0] ? tl_error : "(no message)");
        if (checks) pc_report_check((int)index, "abi", "device_props", PC_FAIL, "%s", why);
        return false;
    }
    d->props = block.props;
    if (checks) {
        bool tail_ok = true;
        for (size_t i = sizeof block.props; i < sizeof block; i++)
            if (block.bytes[i] != 0xCD) tail_ok = false;
        const gfp_device_props *pr = &d->props;
        char problems[512] = "";
        size_t n = 0;
#define PROBLEM(...) \
    n += (size_t)snprintf(problems + n, n < sizeof problems ? sizeof problems - n : 0, __VA_ARGS__)
        if (!tail_ok) PROBLEM("wrote past props->struct_size (%zu bytes); ", sizeof block.props);
        if (pr->struct_size != sizeof block.props)
            PROBLEM("changed props->struct_size to %u (the core sets it); ",
                    (unsigned)pr->struct_size);
        if (!nul_terminated(pr->name, sizeof pr->name) || !pr->name[0])
            PROBLEM("name is empty or not NUL-terminated; ");
        if (!is_identifier(pr->type, sizeof pr->type, NULL))
            PROBLEM("type \"%.31s\" must be lower case letters, digits and '_' (GRAFT_DEVICE "
                    "spells it); ",
                    nul_terminated(pr->type, sizeof pr->type) ? pr->type : "(not terminated)");
        if (!nul_terminated(pr->driver, sizeof pr->driver))
            PROBLEM("driver is not NUL-terminated; ");
        if (pr->dtypes == 0 || (pr->dtypes >> GFP_DTYPE_COUNT) != 0)
            PROBLEM("dtypes 0x%x must be a non-empty set of GFP_DTYPE_BIT()s; ",
                    (unsigned)pr->dtypes);
        if (pr->max_rank < 1 || pr->max_rank > GFP_MAX_RANK)
            PROBLEM("max_rank %u is outside [1, %d]; ", (unsigned)pr->max_rank, GFP_MAX_RANK);
        if (pr->flags & ~(uint32_t)(GFP_DEVICE_FLAG_HOST_ADDRESSABLE | GFP_DEVICE_FLAG_THREAD_SAFE))
            PROBLEM("flags 0x%x has bits ABI %d.%d does not define; ", (unsigned)pr->flags,
                    GFP_ABI_MAJOR, GFP_ABI_MINOR);
#undef PROBLEM
        if (n >= 2 && n < sizeof problems) problems[n - 2] = '\0';
        pc_report_check((int)index, "abi", "device_props", problems[0] ? PC_FAIL : PC_PASS,
                        "%s", problems[0] ? problems : "fields sane, nothing written past "
                                                       "struct_size");
    }
    pc_error_clear();
    st = p->slots.device_open(p->ctx, index, &d->handle);
    if (st != GFP_OK) {
        snprintf(why, why_len, "device_open(%u) returned %s: %s", (unsigned)index,
                 pc_status_name(st), tl_error[0] ? tl_error : "(no message)");
        if (checks) pc_report_check((int)index, "abi", "device_open", PC_FAIL, "%s", why);
        return false;
    }
    d->open = true;
    return true;
}

void pc_device_close(pc_device *d) {
    if (!d->open) return;
    if (d->plugin->slots.device_close) d->plugin->slots.device_close(d->handle);
    d->open = false;
}

void pc_plugin_unload(pc_plugin *p, bool checks) {
    if (p->initialised) {
        if (checks) {
            /* The books first: everything the checker allocated went back. */
            bool ok = p->n_live == 0 && p->allocs == p->frees && p->unknown_frees == 0;
            pc_report_check(-1, "accounting", "buffers", ok ? PC_PASS : PC_FAIL,
                            "%ld buffer_alloc, %ld buffer_free through the checker%s; %ld "
                            "allocations refused as asked",
                            p->allocs, p->frees,
                            ok ? ", every buffer freed before device_close and shutdown"
                               : " (NOT balanced: a checker bug, please report it)",
                            p->failed_allocs);
        }
        p->in_shutdown = true;
        if (p->slots.shutdown) p->slots.shutdown(p->ctx);
        p->in_shutdown = false;
        if (checks)
            pc_report_check(-1, "accounting", "shutdown",
                            p->shutdown_log[0] ? PC_FAIL : PC_PASS, "%s%s",
                            p->shutdown_log[0] ? "shutdown, called last, reported a problem "
                                                 "(leaked resources?): "
                                               : "called last, after every buffer was freed and "
                                                 "every device closed; it reported nothing",
                            p->shutdown_log);
    }
    free(p->live);
    p->live = NULL;
    p->n_live = p->cap_live = 0;
    /* The table and its strings live in the library: forget them first. */
    p->table = NULL;
    memset(&p->slots, 0, sizeof p->slots);
    if (p->dl) dlclose(p->dl);
    p->dl = NULL;
    pthread_mutex_destroy(&p->lock);
}

/* ------------------------------------------------------------ wrappers */
gfp_status pc_alloc(pc_device *d, uint64_t nbytes, gfp_buffer *buffer, void **host_ptr) {
    pc_plugin *p = d->plugin;
    void *hp = NULL;
    *buffer = NULL;
    pc_error_clear();
    gfp_status st = p->slots.buffer_alloc(d->handle, nbytes, buffer, &hp);
    if (host_ptr) *host_ptr = hp;
    pthread_mutex_lock(&p->lock);
    if (st != GFP_OK) {
        p->failed_allocs++;
        pthread_mutex_unlock(&p->lock);
        *buffer = NULL;
        return st;
    }
    if (p->n_live == p->cap_live) {
        size_t cap = p->cap_live ? p->cap_live * 2 : 64;
        gfp_buffer *grown = realloc(p->live, cap * sizeof *grown);
        if (!grown) {
            /* Out of host memory in the checker: give the buffer back. */
            pthread_mutex_unlock(&p->lock);
            p->slots.buffer_free(d->handle, *buffer);
            *buffer = NULL;
            snprintf(tl_error, sizeof tl_error, "the checker ran out of host memory");
            return GFP_ERR_OUT_OF_MEMORY;
        }
        p->live = grown;
        p->cap_live = cap;
    }
    p->live[p->n_live++] = *buffer;
    p->allocs++;
    pthread_mutex_unlock(&p->lock);
    return GFP_OK;
}

void pc_free(pc_device *d, gfp_buffer buffer) {
    pc_plugin *p = d->plugin;
    pthread_mutex_lock(&p->lock);
    bool found = false;
    for (size_t i = p->n_live; i-- > 0;)
        if (p->live[i] == buffer) {
            p->live[i] = p->live[--p->n_live];
            found = true;
            break;
        }
    if (found)
        p->frees++;
    else
        p->unknown_frees++;
    pthread_mutex_unlock(&p->lock);
    if (found) p->slots.buffer_free(d->handle, buffer);
}

gfp_status pc_write(pc_device *d, gfp_buffer b, uint64_t offset, const void *src, uint64_t n) {
    pc_error_clear();
    return d->plugin->slots.buffer_write(d->handle, b, offset, src, n);
}

gfp_status pc_read(pc_device *d, gfp_buffer b, uint64_t offset, void *dst, uint64_t n) {
    pc_error_clear();
    return d->plugin->slots.buffer_read(d->handle, b, offset, dst, n);
}

gfp_status pc_sync(pc_device *d) {
    pc_error_clear();
    return d->plugin->slots.synchronize ? d->plugin->slots.synchronize(d->handle) : GFP_OK;
}

gfp_status pc_launch(pc_device *d, uint32_t op, const gfp_tensor *const *in, uint32_t n_in,
                     const gfp_tensor *const *out, uint32_t n_out, const void *params) {
    pc_error_clear();
    return d->plugin->slots.launch(d->handle, op, in, n_in, out, n_out, params);
}

gfp_status pc_query(pc_device *d, const gfp_op_query *q, uint32_t *support) {
    pc_error_clear();
    if (d->plugin->slots.query_op) {
        *support = GFP_SUPPORT_NONE;
        return d->plugin->slots.query_op(d->handle, q, support);
    }
    /* The documented default: every op, any strides, every stored dtype. */
    uint32_t s = GFP_SUPPORT_STRIDED;
    for (uint32_t i = 0; i < q->n_inputs; i++)
        if (q->input_dtypes[i] >= 0 && !(d->props.dtypes & GFP_DTYPE_BIT(q->input_dtypes[i])))
            s = GFP_SUPPORT_NONE;
    for (uint32_t i = 0; i < q->n_outputs; i++)
        if (q->output_dtypes[i] < 0 || !(d->props.dtypes & GFP_DTYPE_BIT(q->output_dtypes[i])))
            s = GFP_SUPPORT_NONE;
    *support = s;
    return GFP_OK;
}
