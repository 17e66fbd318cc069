/* SPDX-License-Identifier: BSD-3-Clause */
/* interop_io.c — file streams, element conversion between file dtypes and
 * graft dtypes, chunked transfer between files and tensors, and the tensor
 * dictionary returned by the multi-tensor loaders. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifdef GRAFT_HAVE_ZLIB
#include <zlib.h>
#endif

#include "interop_internal.h"

/* Elements moved per chunk: bounds the host memory a load or save uses
 * whatever the tensor's size (2 MiB at 8 bytes per element). */
#define CHUNK_ELEMS ((size_t)1 << 18)

/* ------------------------------------------------------------ errors */
gf_status gf__io_error(const char *op, const char *doing, const char *path, int errnum) {
    return gf__error(errnum == ENOENT ? GF_ERR_NOT_FOUND : GF_ERR_INVALID, "%s: cannot %s '%s': %s",
                     op, doing, path, strerror(errnum));
}

/* ------------------------------------------------------------ CRC-32 (ZIP) */
static uint32_t crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[i] = c;
    }
}

uint32_t gf__crc32_update(uint32_t crc, const void *data, size_t n) {
    pthread_once(&crc_once, crc_init);
    const unsigned char *p = data;
    crc = ~crc;
    for (size_t i = 0; i < n; i++) crc = crc_table[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

/* ------------------------------------------------------------ reading */
gf_status gf__file_open_read(const char *op, const char *path, FILE **f, uint64_t *size) {
    *f = NULL;
    if (!path) return gf__error(GF_ERR_INVALID, "%s: path is NULL", op);
    FILE *fh = fopen(path, "rb");
    if (!fh) return gf__io_error(op, "open", path, errno);
    struct stat st;
    if (fstat(fileno(fh), &st) != 0) {
        int e = errno;
        fclose(fh);
        return gf__io_error(op, "stat", path, e);
    }
    if (S_ISDIR(st.st_mode)) {
        fclose(fh);
        return gf__error(GF_ERR_INVALID, "%s: '%s' is a directory, not a file", op, path);
    }
    *f = fh;
    *size = (uint64_t)st.st_size;
    return GF_OK;
}

#ifdef GRAFT_HAVE_ZLIB
/* gf__rd_read from a gzip stream: its length is known only at its end. */
static gf_status gz_read(gf__rd *rd, void *dst, size_t n, const char *part) {
    size_t got = 0;
    int err = Z_OK;
    while (got < n) {
        unsigned want = n - got > (1u << 30) ? 1u << 30 : (unsigned)(n - got);
        int k = gzread((gzFile)rd->gz, (unsigned char *)dst + got, want);
        if (k <= 0) break;
        got += (size_t)k;
    }
    const char *why = got < n ? gzerror((gzFile)rd->gz, &err) : "";
    if (err == Z_ERRNO)
        return gf__error(GF_ERR_INVALID, "%s: reading %s of %s failed: %s", rd->op, part,
                         rd->what, strerror(errno));
    if (err == Z_BUF_ERROR) /* zlib's "unexpected end of file" */
        return gf__error(GF_ERR_INVALID, "%s: %s is a truncated gzip file: it ends inside the "
                         "compressed data, in %s (zlib: %s)", rd->op, rd->what, part, why);
    if (err != Z_OK)
        return gf__error(GF_ERR_INVALID, "%s: %s is not a readable gzip file: decompressing %s "
                         "failed (zlib: %s)", rd->op, rd->what, part, why);
    if (got < n)
        return gf__error(GF_ERR_INVALID, "%s: %s is truncated: %s needs %zu bytes but the "
                         "decompressed data ended after %zu", rd->op, rd->what, part, n, got);
    return GF_OK; /* zlib checks the stream's own CRC-32: rd->crc is not kept */
}
#endif

gf_status gf__rd_read(gf__rd *rd, void *dst, size_t n, const char *part) {
#ifdef GRAFT_HAVE_ZLIB
    if (rd->gz) return gz_read(rd, dst, n, part);
#endif
    if (n > rd->left)
        return gf__error(GF_ERR_INVALID, "%s: %s is truncated: %s needs %zu bytes but only %llu "
                         "remain", rd->op, rd->what, part, n, (unsigned long long)rd->left);
    size_t got = n ? fread(dst, 1, n, rd->f) : 0;
    if (got != n) {
        if (ferror(rd->f))
            return gf__error(GF_ERR_INVALID, "%s: reading %s of %s failed: %s", rd->op, part,
                             rd->what, strerror(errno));
        return gf__error(GF_ERR_INVALID, "%s: %s is truncated: %s ended after %zu of %zu bytes",
                         rd->op, rd->what, part, got, n);
    }
    rd->left -= n;
    rd->crc = gf__crc32_update(rd->crc, dst, n);
    return GF_OK;
}

gf_status gf__rd_skip(gf__rd *rd, uint64_t n, const char *part) {
    unsigned char buf[4096];
    while (n) {
        size_t k = n < sizeof buf ? (size_t)n : sizeof buf;
        gf_status s = gf__rd_read(rd, buf, k, part);
        if (s != GF_OK) return s;
        n -= k;
    }
    return GF_OK;
}

/* ------------------------------------------------------------ writing */
gf_status gf__wr_open(gf__wr *wr, const char *op, const char *path) {
    memset(wr, 0, sizeof *wr);
    wr->op = op;
    wr->path = path;
    if (!path) return gf__error(GF_ERR_INVALID, "%s: path is NULL", op);
    wr->f = fopen(path, "wb");
    if (!wr->f) return gf__io_error(op, "create", path, errno);
    struct stat st;
    wr->regular = fstat(fileno(wr->f), &st) == 0 && S_ISREG(st.st_mode);
    return GF_OK;
}

gf_status gf__wr_write(gf__wr *wr, const void *src, size_t n) {
    if (n && fwrite(src, 1, n, wr->f) != n)
        return gf__error(GF_ERR_INVALID, "%s: writing '%s' failed after %llu bytes: %s", wr->op,
                         wr->path, (unsigned long long)wr->written, strerror(errno));
    wr->written += n;
    wr->crc = gf__crc32_update(wr->crc, src, n);
    return GF_OK;
}

gf_status gf__wr_close(gf__wr *wr, gf_status status) {
    if (!wr->f) return status;
    /* fclose flushes: a full disk often shows only here. */
    if (fclose(wr->f) != 0 && status == GF_OK)
        status = gf__error(GF_ERR_INVALID, "%s: writing '%s' failed when closing it: %s", wr->op,
                           wr->path, strerror(errno));
    wr->f = NULL;
    /* A half-written file would load as garbage or as truncated later. */
    if (status != GF_OK && wr->regular) remove(wr->path);
    return status;
}

/* ------------------------------------------------------------ dtypes */
gf_status gf__fdtype_target(const gf__fdtype *fd, const char *op, const char *what,
                            const char *name, gf_dtype *out) {
    switch (fd->kind) {
    case 'b':
        if (fd->size == 1) { *out = GF_BOOL; return GF_OK; }
        break;
    case 'f':
        if (fd->size == 2) { *out = GF_F16; return GF_OK; }
        if (fd->size == 4) { *out = GF_F32; return GF_OK; }
        if (fd->size == 8) { *out = GF_F64; return GF_OK; }
        return gf__error(GF_ERR_DTYPE, "%s: %s holds %d-byte floats (%s); graft has f16, f32 and "
                         "f64: convert it first (e.g. astype(numpy.float64))", op, what, fd->size,
                         name);
    case 'B':
        if (fd->size == 2) { *out = GF_BF16; return GF_OK; }
        break;
    case 'c': /* size: the whole (re, im) pair */
        if (fd->size == 8) { *out = GF_C64; return GF_OK; }
        if (fd->size == 16) { *out = GF_C128; return GF_OK; }
        return gf__error(GF_ERR_DTYPE, "%s: %s holds %d-byte complex numbers (%s); graft has c64 "
                         "(two f32) and c128 (two f64): convert it first (e.g. "
                         "astype(numpy.complex128))", op, what, fd->size, name);
    case 'i':
        if (fd->size == 1 || fd->size == 2 || fd->size == 4) { *out = GF_I32; return GF_OK; }
        if (fd->size == 8) { *out = GF_I64; return GF_OK; }
        break;
    case 'u':
        if (fd->size == 1 || fd->size == 2) { *out = GF_I32; return GF_OK; }
        if (fd->size == 4 || fd->size == 8) { *out = GF_I64; return GF_OK; }
        break;
    default:
        break;
    }
    return gf__error(GF_ERR_DTYPE, "%s: %s has element type %s, which graft cannot load (it has "
                     "bool, f16, bf16, f32, f64, c64, c128 and integers up to 64 bits)", op, what, name);
}

static bool host_big_endian(void) {
    const uint16_t one = 1;
    return *(const unsigned char *)&one == 0;
}

static void swap_bytes(unsigned char *p, size_t n, int size) {
    for (size_t i = 0; i < n; i++, p += size)
        for (int a = 0, b = size - 1; a < b; a++, b--) {
            unsigned char t = p[a];
            p[a] = p[b];
            p[b] = t;
        }
}

/* Converts n elements of fd (already in host byte order) into dtype dst.
 * Returns false when a u64 value does not fit in i64 (*bad gets it). */
static bool convert_chunk(const gf__fdtype *fd, const unsigned char *src, gf_dtype dst_dt,
                          unsigned char *dst, size_t n, uint64_t *bad) {
    if (fd->kind == 'b') {
        for (size_t i = 0; i < n; i++) dst[i] = src[i] != 0;
        return true;
    }
    if ((size_t)fd->size == gf_dtype_size(dst_dt) && fd->kind != 'u') {
        memcpy(dst, src, n * (size_t)fd->size);
        return true;
    }
    for (size_t i = 0; i < n; i++) {
        const unsigned char *p = src + i * (size_t)fd->size;
        int64_t v = 0;
        if (fd->kind == 'i') {
            if (fd->size == 1) { int8_t x; memcpy(&x, p, 1); v = x; }
            else if (fd->size == 2) { int16_t x; memcpy(&x, p, 2); v = x; }
            else if (fd->size == 4) { int32_t x; memcpy(&x, p, 4); v = x; }
            else { memcpy(&v, p, 8); }
        } else {
            if (fd->size == 1) v = p[0];
            else if (fd->size == 2) { uint16_t x; memcpy(&x, p, 2); v = x; }
            else if (fd->size == 4) { uint32_t x; memcpy(&x, p, 4); v = x; }
            else {
                uint64_t x;
                memcpy(&x, p, 8);
                if (x > (uint64_t)INT64_MAX) {
                    *bad = x;
                    return false;
                }
                v = (int64_t)x;
            }
        }
        if (dst_dt == GF_I32) {
            int32_t y = (int32_t)v;
            memcpy(dst + i * 4, &y, 4);
        } else {
            memcpy(dst + i * 8, &v, 8);
        }
    }
    return true;
}

gf_tensor *gf__read_tensor(gf__rd *rd, const gf__fdtype *fd, gf_dtype target,
                           const int64_t *sizes, int rank, gf_device *dev) {
    int64_t numel = gf__checked_numel(sizes, rank, rd->op);
    if (numel < 0) return NULL;
    uint64_t need = (uint64_t)numel * (uint64_t)fd->size;
    if (need > rd->left) {
        char shape[200];
        gf__error(GF_ERR_INVALID, "%s: %s is truncated: sizes %s need %llu data bytes but only "
                  "%llu follow the header", rd->op, rd->what,
                  gf__shape_str(sizes, rank, shape, sizeof shape), (unsigned long long)need,
                  (unsigned long long)rd->left);
        return NULL;
    }
    gf_tensor *t = gf__empty(sizes, rank, target, dev);
    if (!t || numel == 0) return t;
    size_t es = gf_dtype_size(target);
    size_t chunk = (size_t)numel < CHUNK_ELEMS ? (size_t)numel : CHUNK_ELEMS;
    unsigned char *src = malloc(chunk * (size_t)fd->size);
    unsigned char *dst = malloc(chunk * es);
    gf_status s = GF_OK;
    if (!src || !dst)
        s = gf__error(GF_ERR_OUT_OF_MEMORY, "%s: out of host memory for a read buffer", rd->op);
    bool swap = fd->size > 1 && fd->big_endian != host_big_endian();
    for (int64_t done = 0; s == GF_OK && done < numel;) {
        size_t k = (size_t)(numel - done) < chunk ? (size_t)(numel - done) : chunk;
        s = gf__rd_read(rd, src, k * (size_t)fd->size, "the data");
        if (s != GF_OK) break;
        if (swap && fd->kind == 'c') swap_bytes(src, 2 * k, fd->size / 2); /* each part */
        else if (swap) swap_bytes(src, k, fd->size);
        uint64_t bad = 0;
        if (!convert_chunk(fd, src, target, dst, k, &bad)) {
            s = gf__error(GF_ERR_OVERFLOW, "%s: %s holds the unsigned 64-bit value %llu, beyond "
                          "the range of i64 (graft's widest integer)", rd->op, rd->what,
                          (unsigned long long)bad);
            break;
        }
        s = gf__dev_write(dev, t->storage->buffer, (uint64_t)done * es, dst, k * es);
        done += (int64_t)k;
    }
    free(src);
    free(dst);
    if (s != GF_OK) {
        gf_tensor_release(t);
        return NULL;
    }
    return t;
}

gf_status gf__tensor_nbytes(const gf_tensor *t, const char *op, uint64_t *out) {
    int64_t numel = gf__checked_numel(t->sizes, t->rank, op);
    if (numel < 0) return gf__status();
    *out = (uint64_t)numel * gf_dtype_size(t->dtype);
    return GF_OK;
}

gf_status gf__write_tensor(gf__wr *wr, const gf_tensor *t) {
    int64_t numel = gf__numel(t);
    if (numel == 0) return GF_OK;
    /* Row-major order: a view is written through a contiguous copy. */
    gf_tensor *c = gf__contig(t);
    if (!c) return gf__status();
    size_t es = gf_dtype_size(c->dtype);
    size_t chunk = (size_t)numel < CHUNK_ELEMS ? (size_t)numel : CHUNK_ELEMS;
    unsigned char *buf = malloc(chunk * es);
    gf_status s = buf ? GF_OK
                      : gf__error(GF_ERR_OUT_OF_MEMORY, "%s: out of host memory for a write "
                                  "buffer", wr->op);
    bool swap = es > 1 && host_big_endian();
    uint64_t base = (uint64_t)c->offset * es;
    for (int64_t done = 0; s == GF_OK && done < numel;) {
        size_t k = (size_t)(numel - done) < chunk ? (size_t)(numel - done) : chunk;
        s = gf__dev_read(c->storage->device, c->storage->buffer, base + (uint64_t)done * es, buf,
                         k * es);
        if (s != GF_OK) break;
        if (swap && gf_dtype_is_complex(c->dtype)) swap_bytes(buf, 2 * k, (int)es / 2);
        else if (swap) swap_bytes(buf, k, (int)es);
        s = gf__wr_write(wr, buf, k * es);
        done += (int64_t)k;
    }
    free(buf);
    gf_tensor_release(c);
    return s;
}

gf_status gf__check_names(const char *op, const char *const *names,
                          const gf_tensor *const *tensors, int n, const char *reserved) {
    /* reserved: safetensors, whose empty file ({}) is what PyTorch's
     * save_file({}) writes; an empty .npz is refused */
    if (n == 0 && reserved) return GF_OK;
    if (!names || !tensors) return gf__error(GF_ERR_INVALID, "%s: names or tensors is NULL", op);
    if (n < 1) return gf__error(GF_ERR_INVALID, "%s: n is %d; save at least one tensor", op, n);
    for (int i = 0; i < n; i++) {
        if (!tensors[i]) return gf__null_arg(op, "a tensor");
        if (!names[i] || !names[i][0])
            return gf__error(GF_ERR_INVALID, "%s: name %d is %s; every tensor needs a non-empty "
                             "name", op, i, names[i] ? "empty" : "NULL");
        if (reserved && !strcmp(names[i], reserved))
            return gf__error(GF_ERR_INVALID, "%s: the name '%s' is reserved by the format; choose "
                             "another", op, reserved);
        for (int j = 0; j < i; j++)
            if (!strcmp(names[i], names[j]))
                return gf__error(GF_ERR_INVALID, "%s: the name '%s' is given twice (tensors %d and "
                                 "%d); names must be distinct", op, names[i], j, i);
    }
    return GF_OK;
}

/* ------------------------------------------------------------ dictionaries */
gf_tensor_dict *gf__dict_new(void) {
    gf_tensor_dict *d = calloc(1, sizeof *d);
    if (!d) gf__error(GF_ERR_OUT_OF_MEMORY, "out of host memory for a tensor dictionary");
    return d;
}

gf_status gf__dict_add(gf_tensor_dict *d, const char *name, size_t name_len, gf_tensor *t) {
    if (d->n == d->cap) {
        int cap = d->cap ? d->cap * 2 : 8;
        char **nn = realloc(d->names, (size_t)cap * sizeof *nn);
        if (nn) d->names = nn;
        gf_tensor **nt = nn ? realloc(d->tensors, (size_t)cap * sizeof *nt) : NULL;
        if (nt) d->tensors = nt;
        if (!nn || !nt) {
            gf_tensor_release(t);
            return gf__error(GF_ERR_OUT_OF_MEMORY, "out of host memory growing a tensor "
                             "dictionary");
        }
        d->cap = cap;
    }
    char *copy = malloc(name_len + 1);
    if (!copy) {
        gf_tensor_release(t);
        return gf__error(GF_ERR_OUT_OF_MEMORY, "out of host memory for a tensor name");
    }
    memcpy(copy, name, name_len);
    copy[name_len] = '\0';
    d->names[d->n] = copy;
    d->tensors[d->n] = t;
    d->n++;
    return GF_OK;
}

int gf_tensor_dict_size(const gf_tensor_dict *d) { return d ? d->n : 0; }

static bool dict_index_ok(const gf_tensor_dict *d, int i, const char *op) {
    if (!d) {
        gf__null_arg_of(op, "d", GF__ARG_DICT);
        return false;
    }
    if (i < 0 || i >= d->n) {
        gf__error(GF_ERR_INDEX, "%s: index %d is out of range [0, %d)", op, i, d->n);
        return false;
    }
    return true;
}

const char *gf_tensor_dict_name(const gf_tensor_dict *d, int i) {
    return dict_index_ok(d, i, "gf_tensor_dict_name") ? d->names[i] : NULL;
}

gf_tensor *gf_tensor_dict_at(const gf_tensor_dict *d, int i) {
    return dict_index_ok(d, i, "gf_tensor_dict_at") ? d->tensors[i] : NULL;
}

gf_tensor *gf_tensor_dict_get(const gf_tensor_dict *d, const char *name) {
    if (!d) {
        gf__null_arg_of("gf_tensor_dict_get", "d", GF__ARG_DICT);
        return NULL;
    }
    if (!name) {
        gf__error(GF_ERR_INVALID, "gf_tensor_dict_get: name is NULL");
        return NULL;
    }
    for (int i = 0; i < d->n; i++)
        if (!strcmp(d->names[i], name)) return d->tensors[i];
    char list[600];
    size_t used = 0;
    list[0] = '\0';
    for (int i = 0; i < d->n && used + 8 < sizeof list; i++) {
        int w = snprintf(list + used, sizeof list - used, "%s'%s'", i ? ", " : "", d->names[i]);
        if (w < 0) break;
        used += (size_t)w;
    }
    if (used >= sizeof list) snprintf(list + sizeof list - 5, 5, "...");
    gf__error(GF_ERR_NOT_FOUND, "gf_tensor_dict_get: no tensor named '%s'; the names are: %s",
              name, d->n ? list : "(none)");
    return NULL;
}

gf_tensor_dict *gf_tensor_dict_new(void) { return gf__dict_new(); }

static int dict_find(const gf_tensor_dict *d, const char *name) {
    for (int i = 0; i < d->n; i++)
        if (!strcmp(d->names[i], name)) return i;
    return -1;
}

gf_status gf_tensor_dict_set(gf_tensor_dict *d, const char *name, gf_tensor *t) {
    const char *op = "gf_tensor_dict_set";
    if (!d) return gf__null_arg_of(op, "d", GF__ARG_DICT);
    if (!name) return gf__error(GF_ERR_INVALID, "%s: name is NULL", op);
    if (!t) return gf__null_arg(op, "t");
    size_t len = strnlen(name, 4097);
    if (len == 0 || len > 4096)
        return gf__error(GF_ERR_INVALID, "%s: the name is %s; give a name of 1 to 4096 bytes", op,
                         len ? "over 4096 bytes" : "empty");
    int i = dict_find(d, name);
    if (i >= 0) {
        gf_tensor *old = d->tensors[i];
        d->tensors[i] = gf_tensor_retain(t);
        gf_tensor_release(old);
        return GF_OK;
    }
    return gf__dict_add(d, name, len, gf_tensor_retain(t));
}

gf_status gf_tensor_dict_remove(gf_tensor_dict *d, const char *name) {
    const char *op = "gf_tensor_dict_remove";
    if (!d) return gf__null_arg_of(op, "d", GF__ARG_DICT);
    if (!name) return gf__error(GF_ERR_INVALID, "%s: name is NULL", op);
    int i = dict_find(d, name);
    if (i < 0) return gf__error(GF_ERR_NOT_FOUND, "%s: no tensor named '%s'", op, name);
    free(d->names[i]);
    gf_tensor_release(d->tensors[i]);
    memmove(d->names + i, d->names + i + 1, (size_t)(d->n - i - 1) * sizeof *d->names);
    memmove(d->tensors + i, d->tensors + i + 1, (size_t)(d->n - i - 1) * sizeof *d->tensors);
    d->n--;
    return GF_OK;
}

gf_status gf_save_safetensors_dict(const gf_tensor_dict *d, const char *path) {
    if (!d) return gf__null_arg_of("gf_save_safetensors_dict", "d", GF__ARG_DICT);
    return gf__save_safetensors("gf_save_safetensors_dict", (const char *const *)d->names,
                                (const gf_tensor *const *)d->tensors, d->n, d, path);
}

void gf_tensor_dict_destroy(gf_tensor_dict *d) {
    if (!d) return;
    for (int i = 0; i < d->n; i++) {
        free(d->names[i]);
        gf_tensor_release(d->tensors[i]);
    }
    free(d->names);
    free(d->tensors);
    gf__dict_clear_metadata(d);
    free(d);
}
