/* SPDX-License-Identifier: BSD-3-Clause */
/* interop_npz.c — .npz: a ZIP archive whose members are .npy files, stored
 * uncompressed (np.savez). The reader goes through the central directory
 * (the sizes in local headers may be placeholders: NumPy writes members with
 * zip64 local headers), reads zip64 directories, and checks every member's
 * CRC-32. The writer writes plain ZIP (no zip64), stored members with a fixed
 * timestamp (1980-01-01) so that the same tensors give the same bytes. */
#define _FILE_OFFSET_BITS 64
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "interop_internal.h"

#define SIG_LOCAL 0x04034b50u
#define SIG_CENTRAL 0x02014b50u
#define SIG_EOCD 0x06054b50u
#define SIG_EOCD64 0x06064b50u
#define SIG_LOCATOR64 0x07064b50u
#define EOCD_LEN 22
#define CENTRAL_LEN 46
#define LOCAL_LEN 30
#define MAX_COMMENT 65535u
/* A directory bigger than this is a corrupt size, not a real archive. */
#define MAX_CENTRAL ((uint64_t)256 << 20)
#define DOS_DATE_1980 0x21u /* 1980-01-01 */
#define ZIP_VERSION 20u     /* 2.0: what stored members need */
#define FLAG_UTF8 0x800u

static gf_status seek_to(FILE *f, uint64_t off, const char *op, const char *path) {
    if (fseeko(f, (off_t)off, SEEK_SET) != 0) return gf__io_error(op, "seek in", path, errno);
    return GF_OK;
}

/* Reads n bytes at off, exactly. */
static gf_status read_at(FILE *f, uint64_t off, void *dst, size_t n, const char *op,
                         const char *path, const char *part) {
    gf_status s = seek_to(f, off, op, path);
    if (s != GF_OK) return s;
    if (fread(dst, 1, n, f) != n) {
        if (ferror(f))
            return gf__error(GF_ERR_INVALID, "%s: reading %s of '%s' failed: %s", op, part, path,
                             strerror(errno));
        return gf__error(GF_ERR_INVALID, "%s: '%s' is truncated: %s lies past the end of the "
                         "file", op, path, part);
    }
    return GF_OK;
}

/* ------------------------------------------------------------ reading */
typedef struct zip_dir {
    uint64_t entries, offset, size;
} zip_dir;

static gf_status find_directory(FILE *f, uint64_t fsize, const char *op, const char *path,
                                zip_dir *dir) {
    uint64_t tail = fsize < EOCD_LEN + MAX_COMMENT ? fsize : EOCD_LEN + MAX_COMMENT;
    if (tail < EOCD_LEN)
        return gf__error(GF_ERR_INVALID, "%s: '%s' is not an .npz (ZIP) archive: it is only %llu "
                         "bytes long", op, path, (unsigned long long)fsize);
    unsigned char *buf = malloc((size_t)tail);
    if (!buf) return gf__error(GF_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    gf_status s = read_at(f, fsize - tail, buf, (size_t)tail, op, path, "the end of the archive");
    int64_t at = -1;
    /* The record ends the file, after a comment whose length it states. */
    for (int64_t i = (int64_t)tail - EOCD_LEN; s == GF_OK && i >= 0; i--) {
        const unsigned char *p = buf + i;
        if (gf__le32(p) == SIG_EOCD && (uint64_t)i + EOCD_LEN + gf__le16(p + 20) == tail) {
            at = i;
            break;
        }
    }
    if (s == GF_OK && at < 0)
        s = gf__error(GF_ERR_INVALID, "%s: '%s' is not an .npz (ZIP) archive: no end of central "
                      "directory record found", op, path);
    if (s != GF_OK) {
        free(buf);
        return s;
    }
    const unsigned char *e = buf + at;
    uint64_t eocd_pos = fsize - tail + (uint64_t)at;
    unsigned disk = gf__le16(e + 4), cd_disk = gf__le16(e + 6);
    dir->entries = gf__le16(e + 10);
    dir->size = gf__le32(e + 12);
    dir->offset = gf__le32(e + 16);
    bool zip64 = dir->entries == 0xFFFF || dir->size == 0xFFFFFFFFu ||
                 dir->offset == 0xFFFFFFFFu;
    bool locator = at >= 20 && gf__le32(e - 20) == SIG_LOCATOR64;
    uint64_t rec64 = locator ? gf__le64(e - 20 + 8) : 0;
    free(buf);
    if (!zip64 && (disk != 0 || cd_disk != 0))
        return gf__error(GF_ERR_UNSUPPORTED, "%s: '%s' is a multi-part (spanned) ZIP archive, "
                         "which graft does not read", op, path);
    if (zip64) {
        if (!locator)
            return gf__error(GF_ERR_INVALID, "%s: '%s' is a corrupt ZIP archive: zip64 fields "
                             "without a zip64 locator", op, path);
        unsigned char r[56];
        s = read_at(f, rec64, r, sizeof r, op, path, "the zip64 directory record");
        if (s != GF_OK) return s;
        if (gf__le32(r) != SIG_EOCD64 || rec64 >= eocd_pos)
            return gf__error(GF_ERR_INVALID, "%s: '%s' is a corrupt ZIP archive: bad zip64 "
                             "directory record", op, path);
        if (gf__le32(r + 16) != 0 || gf__le32(r + 20) != 0)
            return gf__error(GF_ERR_UNSUPPORTED, "%s: '%s' is a multi-part (spanned) ZIP "
                             "archive, which graft does not read", op, path);
        dir->entries = gf__le64(r + 32);
        dir->size = gf__le64(r + 40);
        dir->offset = gf__le64(r + 48);
    }
    if (dir->offset > eocd_pos || dir->size > eocd_pos - dir->offset || dir->size > MAX_CENTRAL)
        return gf__error(GF_ERR_INVALID, "%s: '%s' is a corrupt ZIP archive: the central "
                         "directory (%llu bytes at %llu) does not fit in the file", op, path,
                         (unsigned long long)dir->size, (unsigned long long)dir->offset);
    return GF_OK;
}

typedef struct zip_entry {
    const char *name;
    size_t name_len;
    unsigned flags, method;
    uint32_t crc;
    uint64_t csize, usize, local;
} zip_entry;

/* Parses the central entry at p (n bytes left); *used gets its length. */
static gf_status parse_entry(const unsigned char *p, uint64_t n, zip_entry *z, uint64_t *used,
                             const char *op, const char *path) {
    if (n < CENTRAL_LEN || gf__le32(p) != SIG_CENTRAL)
        return gf__error(GF_ERR_INVALID, "%s: '%s' is a corrupt ZIP archive: bad central "
                         "directory entry", op, path);
    z->flags = gf__le16(p + 8);
    z->method = gf__le16(p + 10);
    z->crc = gf__le32(p + 16);
    z->csize = gf__le32(p + 20);
    z->usize = gf__le32(p + 24);
    size_t nl = gf__le16(p + 28), xl = gf__le16(p + 30), cl = gf__le16(p + 32);
    z->local = gf__le32(p + 42);
    if (CENTRAL_LEN + nl + xl + cl > n)
        return gf__error(GF_ERR_INVALID, "%s: '%s' is a corrupt ZIP archive: a central "
                         "directory entry overruns the directory", op, path);
    z->name = (const char *)p + CENTRAL_LEN;
    z->name_len = nl;
    /* zip64 extra field: the 8-byte values of the fields that are all ones,
     * in the order usize, csize, offset. */
    const unsigned char *x = p + CENTRAL_LEN + nl, *xend = x + xl;
    while (xend - x >= 4) {
        unsigned id = gf__le16(x), sz = gf__le16(x + 2);
        if ((size_t)(xend - x - 4) < sz) break;
        if (id == 0x0001) {
            const unsigned char *v = x + 4, *vend = v + sz;
            uint64_t *fields[3] = {&z->usize, &z->csize, &z->local};
            for (int k = 0; k < 3; k++) {
                if (*fields[k] != 0xFFFFFFFFu) continue;
                if (vend - v < 8)
                    return gf__error(GF_ERR_INVALID, "%s: '%s' is a corrupt ZIP archive: a "
                                     "zip64 extra field is too short", op, path);
                *fields[k] = gf__le64(v);
                v += 8;
            }
        }
        x += 4 + sz;
    }
    *used = CENTRAL_LEN + nl + xl + cl;
    return GF_OK;
}

/* Loads one member into d, or skips it when it is not an array. */
static gf_status load_member(FILE *f, uint64_t fsize, const zip_entry *z, const char *path,
                             gf_device *dev, gf_tensor_dict *d) {
    const char *op = "gf_load_npz";
    char what[1400];
    snprintf(what, sizeof what, "'%.1000s' member '%.*s'", path, (int)(z->name_len > 300 ? 300 : z->name_len),
             z->name);
    if (z->name_len < 5 || memcmp(z->name + z->name_len - 4, ".npy", 4) != 0) {
        gf__log(GFP_LOG_WARN, "%s: skipping %s: not a .npy array", op, what);
        return GF_OK;
    }
    if (z->flags & 1u)
        return gf__error(GF_ERR_UNSUPPORTED, "%s: %s is encrypted, which graft does not read",
                         op, what);
    if (z->method != 0)
        return gf__error(GF_ERR_UNSUPPORTED, "%s: %s is compressed (ZIP method %u%s); graft "
                         "reads uncompressed archives: save with numpy.savez, not "
                         "numpy.savez_compressed", op, what, z->method,
                         z->method == 8 ? ", deflate" : "");
    if (z->csize != z->usize)
        return gf__error(GF_ERR_INVALID, "%s: %s is corrupt: a stored member whose sizes differ "
                         "(%llu and %llu)", op, what, (unsigned long long)z->csize,
                         (unsigned long long)z->usize);
    unsigned char lh[LOCAL_LEN];
    gf_status s = GF_OK;
    if (z->local > fsize || fsize - z->local < LOCAL_LEN)
        s = gf__error(GF_ERR_INVALID, "%s: %s is corrupt: its local header lies past the end of "
                      "the file", op, what);
    if (s == GF_OK) s = read_at(f, z->local, lh, sizeof lh, op, path, "a local header");
    if (s != GF_OK) return s;
    if (gf__le32(lh) != SIG_LOCAL)
        return gf__error(GF_ERR_INVALID, "%s: %s is corrupt: bad local header signature", op,
                         what);
    uint64_t data = z->local + LOCAL_LEN + gf__le16(lh + 26) + gf__le16(lh + 28);
    if (data > fsize || fsize - data < z->csize)
        return gf__error(GF_ERR_INVALID, "%s: %s is truncated: its %llu bytes run past the end "
                         "of the file", op, what, (unsigned long long)z->csize);
    s = seek_to(f, data, op, path);
    if (s != GF_OK) return s;
    gf__rd rd = {.f = f, .op = op, .what = what, .left = z->csize};
    gf_tensor *t = gf__npy_read(&rd, dev);
    if (!t) return gf__status();
    s = gf__rd_skip(&rd, rd.left, "the rest of the member");
    if (s == GF_OK && rd.crc != z->crc)
        s = gf__error(GF_ERR_INVALID, "%s: %s is corrupt: its CRC-32 is %08x, the archive "
                      "records %08x", op, what, (unsigned)rd.crc, (unsigned)z->crc);
    if (s != GF_OK) {
        gf_tensor_release(t);
        return s;
    }
    return gf__dict_add(d, z->name, z->name_len - 4, t);
}

gf_tensor_dict *gf_load_npz(const char *path, gf_device *dev) {
    const char *op = "gf_load_npz";
    gf__ensure_init();
    if (!dev) dev = gf_device_default();
    if (!dev) return NULL;
    FILE *f;
    uint64_t fsize;
    if (gf__file_open_read(op, path, &f, &fsize) != GF_OK) return NULL;
    zip_dir dir = {0, 0, 0};
    unsigned char *cd = NULL;
    gf_tensor_dict *d = NULL;
    gf_status s = find_directory(f, fsize, op, path, &dir);
    if (s == GF_OK) {
        cd = malloc(dir.size ? (size_t)dir.size : 1);
        d = gf__dict_new();
        if (!cd || !d) s = gf__error(GF_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    }
    if (s == GF_OK) s = read_at(f, dir.offset, cd, (size_t)dir.size, op, path, "the directory");
    int saved = gf__scope_suspend();
    uint64_t pos = 0;
    for (uint64_t i = 0; s == GF_OK && i < dir.entries; i++) {
        zip_entry z;
        uint64_t used = 0;
        s = parse_entry(cd + pos, dir.size - pos, &z, &used, op, path);
        if (s != GF_OK) break;
        pos += used;
        if (z.name_len && z.name[z.name_len - 1] == '/') continue; /* a directory */
        s = load_member(f, fsize, &z, path, dev, d);
    }
    gf__scope_resume(saved);
    free(cd);
    fclose(f);
    if (s != GF_OK) {
        gf_tensor_dict_destroy(d);
        return NULL;
    }
    return d;
}

/* ------------------------------------------------------------ writing */
typedef struct member {
    char header[512];
    size_t hlen;
    uint64_t size; /* header + data */
    uint64_t local;
    uint32_t crc;
} member;

static void local_header(unsigned char *h, const member *m, size_t name_len, unsigned flags) {
    gf__put32(h, SIG_LOCAL);
    gf__put16(h + 4, ZIP_VERSION);
    gf__put16(h + 6, flags);
    gf__put16(h + 8, 0); /* stored */
    gf__put16(h + 10, 0);
    gf__put16(h + 12, DOS_DATE_1980);
    gf__put32(h + 14, m->crc);
    gf__put32(h + 18, (uint32_t)m->size);
    gf__put32(h + 22, (uint32_t)m->size);
    gf__put16(h + 26, (uint32_t)name_len);
    gf__put16(h + 28, 0);
}

static unsigned name_flags(const char *name) {
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        if (*p >= 0x80) return FLAG_UTF8;
    return 0;
}

/* Writes one member and patches its CRC into the local header. */
static gf_status write_member(gf__wr *wr, member *m, const char *name, const gf_tensor *t) {
    char mname[1100];
    size_t nl = (size_t)snprintf(mname, sizeof mname, "%s.npy", name);
    unsigned char lh[LOCAL_LEN];
    m->local = wr->written;
    m->crc = 0;
    local_header(lh, m, nl, name_flags(name));
    gf_status s = gf__wr_write(wr, lh, sizeof lh);
    if (s == GF_OK) s = gf__wr_write(wr, mname, nl);
    if (s != GF_OK) return s;
    wr->crc = 0;
    s = gf__wr_write(wr, m->header, m->hlen);
    if (s == GF_OK) s = gf__write_tensor(wr, t);
    if (s != GF_OK) return s;
    m->crc = wr->crc;
    unsigned char crc[4];
    gf__put32(crc, m->crc);
    off_t end = ftello(wr->f);
    if (end < 0 || fseeko(wr->f, (off_t)(m->local + 14), SEEK_SET) != 0 ||
        fwrite(crc, 1, 4, wr->f) != 4 || fseeko(wr->f, end, SEEK_SET) != 0)
        return gf__error(GF_ERR_INVALID, "%s: cannot update the header of member '%s' in '%s' "
                         "(the path must be a regular, seekable file): %s", wr->op, mname,
                         wr->path, strerror(errno));
    return GF_OK;
}

gf_status gf_save_npz(const char *const *names, const gf_tensor *const *tensors, int n,
                      const char *path) {
    const char *op = "gf_save_npz";
    gf_status s = gf__check_names(op, names, tensors, n, NULL);
    if (s != GF_OK) return s;
    if (!path) return gf__error(GF_ERR_INVALID, "%s: path is NULL", op);
    if (n > 65535)
        return gf__error(GF_ERR_INVALID, "%s: %d tensors is more than a ZIP without zip64 holds "
                         "(65535)", op, n);
    member *m = calloc((size_t)n, sizeof *m);
    if (!m) return gf__error(GF_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    /* Everything that can be refused is checked before the file is created. */
    uint64_t offset = 0, central = 0;
    for (int i = 0; s == GF_OK && i < n; i++) {
        size_t nl = strlen(names[i]);
        if (nl > 1000) {
            s = gf__error(GF_ERR_INVALID, "%s: name %d is %zu bytes long; the limit is 1000", op,
                          i, nl);
            break;
        }
        uint64_t nbytes;
        s = gf__npy_header(tensors[i], op, m[i].header, sizeof m[i].header, &m[i].hlen);
        if (s == GF_OK) s = gf__tensor_nbytes(tensors[i], op, &nbytes);
        if (s != GF_OK) break;
        m[i].size = m[i].hlen + nbytes;
        offset += LOCAL_LEN + nl + 4 + m[i].size;
        central += CENTRAL_LEN + nl + 4;
        if (m[i].size >= 0xFFFFFFFFu || offset + central >= 0xFFFFFFFFu)
            s = gf__error(GF_ERR_INVALID, "%s: the archive would exceed 4 GiB, which needs zip64 "
                          "(not written by graft); save large tensors with gf_save_npy or "
                          "gf_save_safetensors", op);
    }
    gf__wr wr;
    if (s == GF_OK) s = gf__wr_open(&wr, op, path);
    if (s != GF_OK) {
        free(m);
        return s;
    }
    for (int i = 0; s == GF_OK && i < n; i++) s = write_member(&wr, &m[i], names[i], tensors[i]);
    uint64_t cd_start = wr.written;
    for (int i = 0; s == GF_OK && i < n; i++) {
        char mname[1100];
        size_t nl = (size_t)snprintf(mname, sizeof mname, "%s.npy", names[i]);
        unsigned char c[CENTRAL_LEN];
        memset(c, 0, sizeof c);
        gf__put32(c, SIG_CENTRAL);
        gf__put16(c + 4, ZIP_VERSION);
        gf__put16(c + 6, ZIP_VERSION);
        gf__put16(c + 8, name_flags(names[i]));
        gf__put16(c + 14, DOS_DATE_1980);
        gf__put32(c + 16, m[i].crc);
        gf__put32(c + 20, (uint32_t)m[i].size);
        gf__put32(c + 24, (uint32_t)m[i].size);
        gf__put16(c + 28, (uint32_t)nl);
        gf__put32(c + 42, (uint32_t)m[i].local);
        s = gf__wr_write(&wr, c, sizeof c);
        if (s == GF_OK) s = gf__wr_write(&wr, mname, nl);
    }
    if (s == GF_OK) {
        unsigned char e[EOCD_LEN];
        memset(e, 0, sizeof e);
        gf__put32(e, SIG_EOCD);
        gf__put16(e + 8, (uint32_t)n);
        gf__put16(e + 10, (uint32_t)n);
        gf__put32(e + 12, (uint32_t)(wr.written - cd_start));
        gf__put32(e + 16, (uint32_t)cd_start);
        s = gf__wr_write(&wr, e, sizeof e);
    }
    free(m);
    return gf__wr_close(&wr, s);
}
