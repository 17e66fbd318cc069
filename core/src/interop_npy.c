/* SPDX-License-Identifier: BSD-3-Clause */
/* interop_npy.c — NumPy's .npy format: the header (a Python dict literal
 * after a magic string and a length), then the raw elements.
 *
 *   \x93NUMPY <major> <minor> <header length: 2 bytes (1.0) or 4 (2.0, 3.0)>
 *   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }   + spaces, '\n'
 *
 * The magic, length and header together are padded to a multiple of 64
 * bytes, so the data that follows is aligned. */
#include <stdlib.h>
#include <string.h>

#include "interop_internal.h"

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6
#define NPY_ALIGN 64
/* NumPy itself refuses headers over 10,000 bytes unless told otherwise; a
 * larger bound still keeps a corrupt length from allocating gigabytes. */
#define NPY_MAX_HEADER ((uint32_t)1 << 20)

/* ------------------------------------------------------------ header parsing */
typedef struct npy_hdr {
    char descr[64];
    bool descr_is_list; /* a structured dtype */
    bool fortran;
    int rank;
    int64_t sizes[GF_MAX_RANK];
    bool has_descr, has_fortran, has_shape;
} npy_hdr;

typedef struct pcur {
    const char *start, *p, *end;
    const char *problem; /* set on the first error */
} pcur;

static void ws(pcur *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static bool fail(pcur *c, const char *problem) {
    if (!c->problem) c->problem = problem;
    return false;
}

static bool expect(pcur *c, char ch, const char *problem) {
    ws(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return true;
    }
    return fail(c, problem);
}

/* A Python string literal in ' or " (escapes are kept as their character). */
static bool parse_str(pcur *c, char *out, size_t cap) {
    ws(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return fail(c, "expected a string");
    char q = *c->p++;
    size_t n = 0;
    while (c->p < c->end && *c->p != q) {
        if (*c->p == '\\' && c->p + 1 < c->end) c->p++;
        if (n + 1 >= cap) return fail(c, "a string is too long");
        out[n++] = *c->p++;
    }
    if (c->p >= c->end) return fail(c, "unterminated string");
    c->p++;
    out[n] = '\0';
    return true;
}

static bool parse_int(pcur *c, int64_t *v) {
    ws(c);
    const char *s = c->p;
    int64_t x = 0;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
        int d = *c->p - '0';
        if (x > (INT64_MAX - d) / 10) return fail(c, "a size is too large");
        x = x * 10 + d;
        c->p++;
    }
    if (c->p == s) return fail(c, "expected a non-negative integer in the shape");
    if (c->p < c->end && (*c->p == 'L' || *c->p == 'l')) c->p++; /* Python 2 long */
    *v = x;
    return true;
}

static bool parse_shape(pcur *c, npy_hdr *h) {
    if (!expect(c, '(', "expected '(' for the shape")) return false;
    h->rank = 0;
    for (;;) {
        ws(c);
        if (c->p < c->end && *c->p == ')') {
            c->p++;
            return true;
        }
        int64_t v;
        if (!parse_int(c, &v)) return false;
        if (h->rank == GF_MAX_RANK) return fail(c, "the shape has more than 8 dims (graft's limit)");
        h->sizes[h->rank++] = v;
        ws(c);
        if (c->p < c->end && *c->p == ',') c->p++;
        else if (c->p < c->end && *c->p == ')') continue;
        else return fail(c, "expected ',' or ')' in the shape");
    }
}

/* Skips a bracketed value (the field list of a structured dtype). */
static bool skip_list(pcur *c) {
    int depth = 0;
    for (; c->p < c->end; c->p++) {
        if (*c->p == '[' || *c->p == '(') depth++;
        else if (*c->p == ']' || *c->p == ')') {
            if (--depth == 0) {
                c->p++;
                return true;
            }
        }
    }
    return fail(c, "unterminated list");
}

static bool parse_header(pcur *c, npy_hdr *h) {
    if (!expect(c, '{', "expected '{'")) return false;
    for (;;) {
        ws(c);
        if (c->p < c->end && *c->p == '}') {
            c->p++;
            break;
        }
        char key[32];
        if (!parse_str(c, key, sizeof key)) return false;
        if (!expect(c, ':', "expected ':' after a key")) return false;
        ws(c);
        if (!strcmp(key, "descr") && !h->has_descr) {
            h->has_descr = true;
            if (c->p < c->end && *c->p == '[') {
                h->descr_is_list = true;
                if (!skip_list(c)) return false;
            } else if (!parse_str(c, h->descr, sizeof h->descr)) {
                return false;
            }
        } else if (!strcmp(key, "fortran_order") && !h->has_fortran) {
            h->has_fortran = true;
            if ((size_t)(c->end - c->p) >= 4 && !memcmp(c->p, "True", 4)) {
                h->fortran = true;
                c->p += 4;
            } else if ((size_t)(c->end - c->p) >= 5 && !memcmp(c->p, "False", 5)) {
                c->p += 5;
            } else {
                return fail(c, "fortran_order is neither True nor False");
            }
        } else if (!strcmp(key, "shape") && !h->has_shape) {
            h->has_shape = true;
            if (!parse_shape(c, h)) return false;
        } else {
            return fail(c, "a key other than 'descr', 'fortran_order' and 'shape', or one "
                           "given twice");
        }
        ws(c);
        if (c->p < c->end && *c->p == ',') c->p++;
        else if (!(c->p < c->end && *c->p == '}')) return fail(c, "expected ',' or '}'");
    }
    if (!h->has_descr || !h->has_fortran || !h->has_shape)
        return fail(c, "one of the keys 'descr', 'fortran_order', 'shape' is missing");
    ws(c);
    if (c->p != c->end) return fail(c, "text after the closing '}'");
    return true;
}

/* '<f4' -> fd, or DTYPE / INVALID with a message naming the type. */
static gf_status parse_descr(const npy_hdr *h, const char *op, const char *what, gf__fdtype *fd,
                             gf_dtype *target) {
    if (h->descr_is_list)
        return gf__error(GF_ERR_DTYPE, "%s: %s holds a structured array (a list of named "
                         "fields); graft loads plain numeric arrays: save each field as its own "
                         "array", op, what);
    const char *d = h->descr;
    char quoted[80];
    snprintf(quoted, sizeof quoted, "'%s'", d);
    fd->big_endian = false;
    const uint16_t one = 1;
    bool native_big = *(const unsigned char *)&one == 0;
    if (*d == '<' || *d == '>' || *d == '|' || *d == '=') {
        fd->big_endian = *d == '>' || ((*d == '=' || *d == '|') && native_big);
        d++;
    } else {
        fd->big_endian = native_big;
    }
    char kind = *d ? *d++ : '\0';
    int size = 0;
    while (*d >= '0' && *d <= '9' && size < 1000) size = size * 10 + (*d++ - '0');
    if (kind == 'O')
        return gf__error(GF_ERR_DTYPE, "%s: %s holds pickled Python objects (dtype %s); graft "
                         "loads numeric arrays only", op, what, quoted);
    if (*d || size == 0 || !strchr("bfiuc", kind))
        return gf__error(GF_ERR_DTYPE, "%s: %s has dtype %s, which graft cannot load (it loads "
                         "bool, float, complex and integer arrays)", op, what, quoted);
    fd->kind = kind;
    fd->size = size;
    return gf__fdtype_target(fd, op, what, quoted, target);
}

/* ------------------------------------------------------------ reading */
gf_tensor *gf__npy_read(gf__rd *rd, gf_device *dev) {
    unsigned char pre[12];
    if (gf__rd_read(rd, pre, 8, "the magic string") != GF_OK) return NULL;
    if (memcmp(pre, NPY_MAGIC, NPY_MAGIC_LEN) != 0) {
        gf__error(GF_ERR_INVALID, "%s: %s is not a .npy file: it does not start with the magic "
                  "bytes \\x93NUMPY", rd->op, rd->what);
        return NULL;
    }
    int major = pre[6], minor = pre[7];
    uint32_t hlen;
    if (major == 1) {
        if (gf__rd_read(rd, pre + 8, 2, "the header length") != GF_OK) return NULL;
        hlen = gf__le16(pre + 8);
    } else if (major == 2 || major == 3) {
        if (gf__rd_read(rd, pre + 8, 4, "the header length") != GF_OK) return NULL;
        hlen = gf__le32(pre + 8);
    } else {
        gf__error(GF_ERR_INVALID, "%s: %s is .npy format version %d.%d; graft reads versions "
                  "1.0, 2.0 and 3.0", rd->op, rd->what, major, minor);
        return NULL;
    }
    if (hlen > NPY_MAX_HEADER) {
        gf__error(GF_ERR_INVALID, "%s: %s declares a %u-byte header (more than %u): the file is "
                  "corrupt", rd->op, rd->what, hlen, NPY_MAX_HEADER);
        return NULL;
    }
    char *text = malloc((size_t)hlen + 1);
    if (!text) {
        gf__error(GF_ERR_OUT_OF_MEMORY, "%s: out of host memory for the header", rd->op);
        return NULL;
    }
    if (gf__rd_read(rd, text, hlen, "the header") != GF_OK) {
        free(text);
        return NULL;
    }
    text[hlen] = '\0';
    npy_hdr h;
    memset(&h, 0, sizeof h);
    pcur c = {.start = text, .p = text, .end = text + hlen};
    if (!parse_header(&c, &h)) {
        gf__error(GF_ERR_INVALID, "%s: %s has a malformed header (%s, at byte %d of: %.120s)",
                  rd->op, rd->what, c.problem, (int)(c.p - c.start), text);
        free(text);
        return NULL;
    }
    free(text);
    gf__fdtype fd;
    gf_dtype target;
    if (parse_descr(&h, rd->op, rd->what, &fd, &target) != GF_OK) return NULL;
    if (!h.fortran || h.rank < 2) return gf__read_tensor(rd, &fd, target, h.sizes, h.rank, dev);

    /* Fortran order is the C order of the reversed shape: read that, then
     * view it with the dims reversed and make it contiguous. */
    int64_t rsizes[GF_MAX_RANK], vstrides[GF_MAX_RANK];
    for (int i = 0; i < h.rank; i++) rsizes[i] = h.sizes[h.rank - 1 - i];
    gf_tensor *r = gf__read_tensor(rd, &fd, target, rsizes, h.rank, dev);
    if (!r) return NULL;
    for (int i = 0; i < h.rank; i++) vstrides[i] = r->strides[h.rank - 1 - i];
    gf_tensor *v = gf__view(r, h.sizes, vstrides, h.rank, 0);
    gf_tensor_release(r);
    if (!v) return NULL;
    gf_tensor *out = gf__contig(v);
    gf_tensor_release(v);
    return out;
}

static gf_device *pick_device(gf_device *dev) {
    gf__ensure_init();
    return dev ? dev : gf_device_default();
}

gf_tensor *gf_load_npy(const char *path, gf_device *dev) {
    dev = pick_device(dev);
    if (!dev) return NULL;
    FILE *f;
    uint64_t size;
    if (gf__file_open_read("gf_load_npy", path, &f, &size) != GF_OK) return NULL;
    char what[1100];
    snprintf(what, sizeof what, "'%.1000s'", path);
    gf__rd rd = {.f = f, .op = "gf_load_npy", .what = what, .left = size};
    int saved = gf__scope_suspend();
    gf_tensor *t = gf__npy_read(&rd, dev);
    gf__scope_resume(saved);
    fclose(f);
    return gf__ret(t);
}

/* ------------------------------------------------------------ writing */
static const char *npy_descr(gf_dtype dt) {
    switch (dt) {
    case GF_F32: return "<f4";
    case GF_F64: return "<f8";
    case GF_I32: return "<i4";
    case GF_I64: return "<i8";
    case GF_BOOL: return "|b1";
    case GF_F16: return "<f2";
    case GF_C64: return "<c8";
    case GF_C128: return "<c16";
    default: return NULL;
    }
}

gf_status gf__npy_header(const gf_tensor *t, const char *op, char *buf, size_t cap, size_t *len) {
    const char *descr = npy_descr(t->dtype);
    if (!descr)
        return gf__error(GF_ERR_DTYPE, "%s: NumPy has no %s dtype; convert the tensor first "
                         "(gf_to_dtype(t, GF_F32)) or save it with gf_save_safetensors, which "
                         "stores bf16", op, gf_dtype_name(t->dtype));
    char dict[400];
    int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                     descr);
    for (int i = 0; i < t->rank; i++)
        n += snprintf(dict + n, sizeof dict - (size_t)n, "%s%lld", i ? ", " : "",
                      (long long)t->sizes[i]);
    n += snprintf(dict + n, sizeof dict - (size_t)n, "%s), }", t->rank == 1 ? "," : "");
    /* Version 1.0 holds up to 65535 header bytes: always enough for rank <= 8. */
    size_t prefix = NPY_MAGIC_LEN + 2 + 2;
    size_t total = prefix + (size_t)n + 1;
    size_t padded = (total + NPY_ALIGN - 1) / NPY_ALIGN * NPY_ALIGN;
    if (padded > cap) return gf__error(GF_ERR_INVALID, "%s: header buffer too small", op);
    size_t hlen = padded - prefix;
    memcpy(buf, NPY_MAGIC, NPY_MAGIC_LEN);
    buf[6] = 1;
    buf[7] = 0;
    gf__put16((unsigned char *)buf + 8, (uint32_t)hlen);
    memcpy(buf + prefix, dict, (size_t)n);
    memset(buf + prefix + n, ' ', padded - prefix - (size_t)n - 1);
    buf[padded - 1] = '\n';
    *len = padded;
    return GF_OK;
}

gf_status gf_save_npy(const gf_tensor *t, const char *path) {
    if (!t) return gf__null_arg("gf_save_npy", "t");
    if (!path) return gf__error(GF_ERR_INVALID, "gf_save_npy: path is NULL");
    char header[512];
    size_t hlen;
    uint64_t nbytes;
    gf_status s = gf__npy_header(t, "gf_save_npy", header, sizeof header, &hlen);
    if (s == GF_OK) s = gf__tensor_nbytes(t, "gf_save_npy", &nbytes);
    if (s != GF_OK) return s;
    gf__wr wr;
    s = gf__wr_open(&wr, "gf_save_npy", path);
    if (s != GF_OK) return s;
    s = gf__wr_write(&wr, header, hlen);
    if (s == GF_OK) s = gf__write_tensor(&wr, t);
    return gf__wr_close(&wr, s);
}
