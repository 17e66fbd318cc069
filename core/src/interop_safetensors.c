/* SPDX-License-Identifier: BSD-3-Clause */
/* interop_safetensors.c — the safetensors format:
 *
 *   <N: u64 little-endian> <N bytes of JSON> <data>
 *   {"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}, ...,
 *    "__metadata__": {"key": "value"}}
 *
 * Offsets are relative to the start of the data; elements are little-endian
 * in C order. The header is padded with spaces so the data starts at a
 * multiple of 8 bytes. */
#define _FILE_OFFSET_BITS 64
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "interop_internal.h"
#include "json_internal.h"

/* The format's own limit on the header, which keeps a corrupt length from
 * allocating gigabytes. */
#define ST_MAX_HEADER ((uint64_t)100 << 20)
#define ST_MAX_NAME 4096

static const struct {
    const char *name;
    gf__fdtype fd;
} st_types[] = {
    {"BOOL", {'b', 1, false}}, {"U8", {'u', 1, false}},  {"I8", {'i', 1, false}},
    {"I16", {'i', 2, false}},  {"U16", {'u', 2, false}}, {"F16", {'f', 2, false}},
    {"BF16", {'B', 2, false}}, {"I32", {'i', 4, false}}, {"U32", {'u', 4, false}},
    {"F32", {'f', 4, false}},  {"F64", {'f', 8, false}}, {"I64", {'i', 8, false}},
    {"U64", {'u', 8, false}},  {"C64", {'c', 8, false}},
};
#define N_ST_TYPES ((int)(sizeof st_types / sizeof st_types[0]))

static const char *st_name_of(gf_dtype dt) {
    switch (dt) {
    case GF_BOOL: return "BOOL";
    case GF_F16: return "F16";
    case GF_BF16: return "BF16";
    case GF_F32: return "F32";
    case GF_F64: return "F64";
    case GF_I32: return "I32";
    case GF_I64: return "I64";
    case GF_C64: return "C64";
    case GF_C128: break; /* the format has C64 only */
    }
    return NULL;
}

/* ------------------------------------------------------------ reading */
typedef struct st_entry {
    char name[ST_MAX_NAME];
    size_t name_len;
    char dtype[32];
    int rank;
    int64_t sizes[GF_MAX_RANK];
    uint64_t begin, end;
} st_entry;

/* {"dtype": ..., "shape": [...], "data_offsets": [b, e]} into e. */
static bool parse_info(gf__jcur *c, st_entry *e) {
    bool has_dtype = false, has_shape = false, has_offsets = false;
    if (!gf__jlit(c, '{')) return gf__jfail(c, "expected '{' for a tensor's description");
    if (gf__jlit(c, '}')) return gf__jfail(c, "an empty tensor description");
    for (;;) {
        char key[64];
        size_t kl;
        if (!gf__jstring(c, key, sizeof key, &kl)) return false;
        if (!gf__jlit(c, ':')) return gf__jfail(c, "expected ':' after a key");
        if (!strcmp(key, "dtype")) {
            size_t dl;
            if (!gf__jstring(c, e->dtype, sizeof e->dtype, &dl)) return false;
            has_dtype = true;
        } else if (!strcmp(key, "shape")) {
            uint64_t v[GF_MAX_RANK];
            if (!gf__jints(c, v, GF_MAX_RANK, &e->rank)) return false;
            for (int i = 0; i < e->rank; i++) {
                if (v[i] > (uint64_t)INT64_MAX) return gf__jfail(c, "a size too large");
                e->sizes[i] = (int64_t)v[i];
            }
            has_shape = true;
        } else if (!strcmp(key, "data_offsets")) {
            uint64_t v[2];
            int n;
            if (!gf__jints(c, v, 2, &n)) return false;
            if (n != 2) return gf__jfail(c, "data_offsets must hold two integers");
            e->begin = v[0];
            e->end = v[1];
            has_offsets = true;
        } else if (!gf__jskip(c, 1)) {
            return false;
        }
        if (gf__jlit(c, '}')) break;
        if (!gf__jlit(c, ',')) return gf__jfail(c, "expected ',' or '}'");
    }
    if (!has_dtype || !has_shape || !has_offsets)
        return gf__jfail(c, "a tensor's description lacks 'dtype', 'shape' or 'data_offsets'");
    return true;
}

/* "__metadata__": {"key": "value", ...} into d's metadata. The format maps
 * strings to strings; a value of another kind (some writers nest objects)
 * is skipped, not kept. *s gets OUT_OF_MEMORY when storing fails. */
static bool parse_metadata(gf__jcur *c, gf_tensor_dict *d, gf_status *s) {
    if (!gf__jlit(c, '{')) return gf__jfail(c, "__metadata__ must be an object");
    if (gf__jlit(c, '}')) return true;
    for (;;) {
        char key[ST_MAX_NAME];
        size_t kl;
        char *value = NULL;
        if (!gf__jstring(c, key, sizeof key, &kl)) return false;
        if (!gf__jlit(c, ':')) return gf__jfail(c, "expected ':' after a key");
        gf__jws(c);
        if (c->p < c->end && *c->p != '"') {
            if (!gf__jskip(c, 2)) return false;
        } else {
            if (!gf__jstring_dup(c, &value)) return false;
            if ((*s = gf__dict_meta_put(d, key, value, true)) != GF_OK) return false;
        }
        if (gf__jlit(c, '}')) return true;
        if (!gf__jlit(c, ',')) return gf__jfail(c, "expected ',' or '}'");
    }
}

static gf_status load_entry(FILE *f, const st_entry *e, uint64_t data_start, uint64_t data_len,
                            const char *path, gf_device *dev, gf_tensor_dict *d) {
    const char *op = "gf_load_safetensors";
    char what[1400];
    snprintf(what, sizeof what, "'%.1000s' tensor '%.300s'", path, e->name);
    int k = 0;
    while (k < N_ST_TYPES && strcmp(st_types[k].name, e->dtype)) k++;
    if (k == N_ST_TYPES)
        return gf__error(GF_ERR_DTYPE, "%s: %s has dtype %s, which graft cannot load (it loads "
                         "BOOL, F16, BF16, F32, F64 and integers up to 64 bits)", op, what,
                         e->dtype);
    gf__fdtype fd = st_types[k].fd;
    gf_dtype target;
    gf_status s = gf__fdtype_target(&fd, op, what, e->dtype, &target);
    if (s != GF_OK) return s;
    int64_t numel = gf__checked_numel(e->sizes, e->rank, op);
    if (numel < 0) return gf__status();
    if (e->begin > e->end || e->end > data_len)
        return gf__error(GF_ERR_INVALID, "%s: %s has data_offsets [%llu, %llu] outside the %llu "
                         "data bytes of the file (truncated or corrupt)", op, what,
                         (unsigned long long)e->begin, (unsigned long long)e->end,
                         (unsigned long long)data_len);
    if (e->end - e->begin != (uint64_t)numel * (uint64_t)fd.size) {
        char shape[200];
        return gf__error(GF_ERR_INVALID, "%s: %s spans %llu bytes but its shape %s of %s needs "
                         "%llu", op, what, (unsigned long long)(e->end - e->begin),
                         gf__shape_str(e->sizes, e->rank, shape, sizeof shape), e->dtype,
                         (unsigned long long)numel * (uint64_t)fd.size);
    }
    if (fseeko(f, (off_t)(data_start + e->begin), SEEK_SET) != 0)
        return gf__io_error(op, "seek in", path, errno);
    gf__rd rd = {.f = f, .op = op, .what = what, .left = e->end - e->begin};
    gf_tensor *t = gf__read_tensor(&rd, &fd, target, e->sizes, e->rank, dev);
    if (!t) return gf__status();
    return gf__dict_add(d, e->name, e->name_len, t);
}

gf_tensor_dict *gf_load_safetensors(const char *path, gf_device *dev) {
    const char *op = "gf_load_safetensors";
    gf__ensure_init();
    if (!dev) dev = gf_device_default();
    if (!dev) return NULL;
    FILE *f;
    uint64_t fsize;
    if (gf__file_open_read(op, path, &f, &fsize) != GF_OK) return NULL;
    char what[1100];
    snprintf(what, sizeof what, "'%.1000s'", path);
    gf__rd rd = {.f = f, .op = op, .what = what, .left = fsize};
    unsigned char len8[8];
    char *text = NULL;
    st_entry *e = malloc(sizeof *e);
    gf_tensor_dict *d = gf__dict_new();
    gf_status s = (e && d) ? GF_OK : gf__error(GF_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    if (s == GF_OK) s = gf__rd_read(&rd, len8, 8, "the header length");
    uint64_t hlen = s == GF_OK ? gf__le64(len8) : 0;
    if (s == GF_OK && hlen > ST_MAX_HEADER)
        s = gf__error(GF_ERR_INVALID, "%s: %s declares a %llu-byte header, more than the "
                      "format's limit of 100 MB: it is not a safetensors file, or it is corrupt",
                      op, what, (unsigned long long)hlen);
    if (s == GF_OK && !(text = malloc((size_t)hlen + 1)))
        s = gf__error(GF_ERR_OUT_OF_MEMORY, "%s: out of host memory for the header", op);
    if (s == GF_OK) s = gf__rd_read(&rd, text, (size_t)hlen, "the header");
    gf__jcur c = {0};
    if (s == GF_OK) {
        c = (gf__jcur){.start = text, .p = text, .end = text + hlen};
        if (!gf__jlit(&c, '{')) {
            s = gf__error(GF_ERR_INVALID, "%s: %s is not a safetensors file: its header does not "
                          "start with '{'", op, what);
        } else if (gf__jlit(&c, '}')) {
            c.p = c.end; /* an empty file: no tensors */
        }
    }
    uint64_t data_start = 8 + hlen, data_len = fsize - data_start;
    int saved = gf__scope_suspend();
    while (s == GF_OK && c.p < c.end) {
        memset(e, 0, sizeof *e);
        bool ok = gf__jstring(&c, e->name, sizeof e->name, &e->name_len) &&
                  (gf__jlit(&c, ':') || gf__jfail(&c, "expected ':' after a tensor name"));
        if (ok && !strcmp(e->name, "__metadata__")) ok = parse_metadata(&c, d, &s);
        else if (ok) ok = parse_info(&c, e);
        if (ok && gf__jlit(&c, '}')) {
            gf__jws(&c);
            if (c.p != c.end) ok = gf__jfail(&c, "text after the closing '}'");
            c.p = c.end;
        } else if (ok && !gf__jlit(&c, ',')) {
            ok = gf__jfail(&c, "expected ',' or '}'");
        }
        if (!ok && s != GF_OK) break; /* out of memory storing the metadata */
        if (!ok) {
            s = gf__error(GF_ERR_INVALID, "%s: %s has a malformed JSON header (%s, at byte %d)",
                          op, what, c.problem ? c.problem : "?", (int)(c.p - c.start));
            break;
        }
        if (strcmp(e->name, "__metadata__") != 0)
            s = load_entry(f, e, data_start, data_len, path, dev, d);
    }
    gf__scope_resume(saved);
    free(text);
    free(e);
    fclose(f);
    if (s != GF_OK) {
        gf_tensor_dict_destroy(d);
        return NULL;
    }
    return d;
}

/* ------------------------------------------------------------ writing */
gf_status gf_save_safetensors(const char *const *names, const gf_tensor *const *tensors, int n,
                              const char *path) {
    return gf__save_safetensors("gf_save_safetensors", names, tensors, n, NULL, path);
}

gf_status gf__save_safetensors(const char *op, const char *const *names,
                               const gf_tensor *const *tensors, int n, const gf_tensor_dict *meta,
                               const char *path) {
    gf_status s = gf__check_names(op, names, tensors, n, "__metadata__");
    if (s != GF_OK) return s;
    if (!path) return gf__error(GF_ERR_INVALID, "%s: path is NULL", op);
    gf__sbuf b = {0};
    uint64_t offset = 0;
    gf__sb_str(&b, "{");
    for (int i = 0; s == GF_OK && i < n; i++) {
        const gf_tensor *t = tensors[i];
        const char *dt = st_name_of(t->dtype);
        uint64_t nbytes;
        if (!dt && t->dtype == GF_C128) {
            s = gf__error(GF_ERR_DTYPE, "%s: tensor '%s' is c128, and the safetensors format has "
                          "no 128-bit complex dtype (C64 only, as safetensors.torch refuses "
                          "complex128): save gf_to_dtype(t, GF_C64), or gf_view_as_real(t) as "
                          "F64 and gf_view_as_complex it after loading", op, names[i]);
            break;
        }
        if (!dt) {
            s = gf__error(GF_ERR_DTYPE, "%s: tensor '%s' has unknown dtype %d", op, names[i],
                          (int)t->dtype);
            break;
        }
        s = gf__tensor_nbytes(t, op, &nbytes);
        if (s != GF_OK) break;
        char num[64];
        gf__sb_str(&b, i ? "," : "");
        gf__sb_json_string(&b, names[i]);
        gf__sb_str(&b, ":{\"dtype\":\"");
        gf__sb_str(&b, dt);
        gf__sb_str(&b, "\",\"shape\":[");
        for (int k = 0; k < t->rank; k++) {
            snprintf(num, sizeof num, "%s%lld", k ? "," : "", (long long)t->sizes[k]);
            gf__sb_str(&b, num);
        }
        snprintf(num, sizeof num, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)offset,
                 (unsigned long long)(offset + nbytes));
        gf__sb_str(&b, num);
        offset += nbytes;
    }
    if (s == GF_OK && meta && meta->n_meta) {
        gf__sb_str(&b, n ? ",\"__metadata__\":{" : "\"__metadata__\":{");
        for (int i = 0; i < meta->n_meta; i++) {
            gf__sb_str(&b, i ? "," : "");
            gf__sb_json_string(&b, meta->meta_keys[i]);
            gf__sb_str(&b, ":");
            gf__sb_json_string(&b, meta->meta_values[i]);
        }
        gf__sb_str(&b, "}");
    }
    gf__sb_str(&b, "}");
    while (s == GF_OK && !b.oom && (8 + b.n) % 8) gf__sb_put(&b, " ", 1);
    if (s == GF_OK && b.oom)
        s = gf__error(GF_ERR_OUT_OF_MEMORY, "%s: out of host memory for the header", op);
    gf__wr wr;
    if (s == GF_OK) s = gf__wr_open(&wr, op, path);
    if (s != GF_OK) {
        free(b.p);
        return s;
    }
    unsigned char len8[8];
    gf__put64(len8, b.n);
    s = gf__wr_write(&wr, len8, 8);
    if (s == GF_OK) s = gf__wr_write(&wr, b.p, b.n);
    for (int i = 0; s == GF_OK && i < n; i++) s = gf__write_tensor(&wr, tensors[i]);
    free(b.p);
    return gf__wr_close(&wr, s);
}
