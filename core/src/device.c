/* SPDX-License-Identifier: BSD-3-Clause */
/* device.c — finding devices by string, device properties. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static gf_device *g_default; /* resolved GRAFT_DEVICE, reset by gf_shutdown */

void gf__device_reset_default(void) {
    g_default = NULL;
    gf__fallback_reset();
}

int gf_device_count(void) {
    gf__ensure_init();
    int n = 0;
    for (int i = 0; i < gf__plugin_count(); i++) n += (int)gf__plugin_at(i)->n_devices;
    return n;
}

gf_device *gf_device_at(int i) {
    gf__ensure_init();
    int k = i;
    if (i >= 0)
        for (int p = 0; p < gf__plugin_count(); p++) {
            gf_plugin_rec *rec = gf__plugin_at(p);
            if ((uint32_t)k < rec->n_devices) return &rec->devices[k];
            k -= (int)rec->n_devices;
        }
    gf__error(GF_ERR_INDEX, "gf_device_at: index %d out of range [0, %d)", i, gf_device_count());
    return NULL;
}

static void list_devices(char *buf, size_t len) {
    size_t used = 0;
    buf[0] = '\0';
    int n = gf_device_count();
    for (int i = 0; i < n && used + 2 < len; i++) {
        gf_device *d = gf_device_at(i);
        int w = snprintf(buf + used, len - used, "%s%s (%s)", i ? ", " : "", d->spec, d->props.name);
        if (w < 0) break;
        used += (size_t)w;
    }
    if (n == 0) snprintf(buf, len, "none: run graft-info to see which plugins were skipped and why");
}

/* One item "type" or "type:N". Returns 1 found, 0 not found, -1 malformed. */
static int find_one(const char *s, size_t len, gf_device **out) {
    while (len && isspace((unsigned char)*s)) s++, len--;
    while (len && isspace((unsigned char)s[len - 1])) len--;
    if (len == 0) return -1;
    const char *colon = memchr(s, ':', len);
    size_t tlen = colon ? (size_t)(colon - s) : len;
    long idx = 0;
    if (tlen == 0 || tlen >= 32) return -1;
    if (colon) {
        const char *d = colon + 1;
        size_t dlen = len - tlen - 1;
        if (dlen == 0 || dlen > 6) return -1;
        idx = 0;
        for (size_t i = 0; i < dlen; i++) {
            if (!isdigit((unsigned char)d[i])) return -1;
            idx = idx * 10 + (d[i] - '0');
        }
    }
    for (size_t i = 0; i < tlen; i++)
        if (!(isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == '-')) return -1;
    int n = gf_device_count();
    for (int i = 0; i < n; i++) {
        gf_device *dev = gf_device_at(i);
        if (strlen(dev->props.type) == tlen && !strncmp(dev->props.type, s, tlen) &&
            dev->type_index == idx) {
            *out = dev;
            return 1;
        }
    }
    return 0;
}

gf_device *gf_device_find(const char *spec) {
    gf__ensure_init();
    if (!spec) {
        gf__null_arg_of("gf_device_find", "spec", GF__ARG_STRING);
        return NULL;
    }
    const char *s = spec;
    for (;;) {
        const char *e = strchr(s, ',');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        gf_device *dev = NULL;
        int r = find_one(s, len, &dev);
        if (r < 0) {
            gf__error(GF_ERR_INVALID,
                      "device string '%s' is malformed: expected '<type>[:<index>]' items "
                      "separated by commas, e.g. 'cpu', 'opencl:1' or 'cuda:0,vulkan,cpu'",
                      spec);
            return NULL;
        }
        if (r == 1) return dev;
        if (!e) break;
        s = e + 1;
    }
    char avail[900];
    list_devices(avail, sizeof avail);
    gf__error(GF_ERR_NOT_FOUND, "no device matches '%s'; available devices: %s", spec, avail);
    return NULL;
}

gf_device *gf_device_default(void) {
    gf__ensure_init();
    gf_device *d = __atomic_load_n(&g_default, __ATOMIC_ACQUIRE);
    if (d) return d;
    const char *env = gf__getenv("GRAFT_DEVICE");
    d = gf_device_find(env && *env ? env : "cpu");
    if (!d) {
        /* Name the variable so the user knows where the string came from. */
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", gf__message());
        gf__error(gf__status(), "GRAFT_DEVICE: %s", msg);
        return NULL;
    }
    __atomic_store_n(&g_default, d, __ATOMIC_RELEASE);
    return d;
}

const char *gf_device_name(const gf_device *dev) { return dev ? dev->props.name : ""; }
const char *gf_device_type(const gf_device *dev) { return dev ? dev->props.type : ""; }
int gf_device_index(const gf_device *dev) { return dev ? dev->type_index : -1; }
const char *gf_device_plugin(const gf_device *dev) { return dev ? dev->plugin->name : ""; }
const char *gf_device_spec(const gf_device *dev) { return dev ? dev->spec : ""; }

gf_status gf_device_get_info(const gf_device *dev, gf_device_info *info) {
    if (!dev || !info) return gf__error(GF_ERR_INVALID, "gf_device_get_info: NULL argument");
    memset(info, 0, sizeof *info);
    const gfp_device_props *p = &dev->props;
    snprintf(info->name, sizeof info->name, "%s", p->name);
    snprintf(info->type, sizeof info->type, "%s", p->type);
    if (GFP_HAS_FIELD(p->struct_size, gfp_device_props, driver))
        snprintf(info->driver, sizeof info->driver, "%s", p->driver);
    info->memory_bytes = p->memory_bytes;
    info->max_alloc_bytes = p->max_alloc_bytes;
    info->dtypes = p->dtypes;
    info->host_addressable = (p->flags & GFP_DEVICE_FLAG_HOST_ADDRESSABLE) != 0;
    info->thread_safe = dev->thread_safe;
    return GF_OK;
}

gf_status gf_device_synchronize(gf_device *dev) {
    if (!dev) return gf__null_arg_of("gf_device_synchronize", "dev", GF__ARG_DEVICE);
    return gf__dev_sync(dev);
}
