/* SPDX-License-Identifier: BSD-3-Clause */
/* interop_idx.c — the IDX format of the MNIST family of data sets (MNIST,
 * Fashion-MNIST, EMNIST, KMNIST), plain or gzip-compressed:
 *
 *   00 00 <type> <rank>       the magic: two zero bytes, the element type,
 *                             the number of dimensions
 *   <rank> x u32, big-endian  the sizes, outermost first
 *   the elements, row-major, big-endian
 *
 * Type codes: 08 unsigned byte, 09 signed byte, 0B i16, 0C i32, 0D f32,
 * 0E f64. A gzip file is recognised by its own magic (1F 8B), whatever its
 * name, and decompressed as it is read (zlib), so memory use stays bounded
 * by one chunk besides the tensor. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef GRAFT_HAVE_ZLIB
#include <zlib.h>
#endif

#include "interop_internal.h"

#define OP "gf_load_idx"

/* The file dtype of a type code; false for a code IDX does not define. */
static bool idx_fdtype(unsigned code, gf__fdtype *fd, const char **name) {
    switch (code) {
    case 0x08: *fd = (gf__fdtype){'u', 1, true}; *name = "unsigned byte"; return true;
    case 0x09: *fd = (gf__fdtype){'i', 1, true}; *name = "signed byte"; return true;
    case 0x0B: *fd = (gf__fdtype){'i', 2, true}; *name = "short"; return true;
    case 0x0C: *fd = (gf__fdtype){'i', 4, true}; *name = "int"; return true;
    case 0x0D: *fd = (gf__fdtype){'f', 4, true}; *name = "float"; return true;
    case 0x0E: *fd = (gf__fdtype){'f', 8, true}; *name = "double"; return true;
    default: return false;
    }
}

static uint32_t be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* Header and data from rd (positioned at the magic). plain: a plain file,
 * whose rd->left is the size of the rest; otherwise a gzip stream, whose
 * length is known only at its end. */
static gf_tensor *idx_read(gf__rd *rd, gf_device *dev, bool plain) {
    unsigned char magic[4];
    if (gf__rd_read(rd, magic, 4, "the magic number") != GF_OK) return NULL;
    if (magic[0] != 0 || magic[1] != 0) {
        gf__error(GF_ERR_INVALID, "%s: %s is not an IDX file: it starts with the bytes "
                  "%02X %02X %02X %02X, where an IDX file starts with 00 00, a type code "
                  "(08, 09, 0B, 0C, 0D or 0E) and the number of dimensions", rd->op, rd->what,
                  magic[0], magic[1], magic[2], magic[3]);
        return NULL;
    }
    gf__fdtype fd;
    const char *type_name;
    if (!idx_fdtype(magic[2], &fd, &type_name)) {
        gf__error(GF_ERR_INVALID, "%s: %s has the element type code 0x%02X, which IDX does not "
                  "define (08 unsigned byte, 09 signed byte, 0B short, 0C int, 0D float, "
                  "0E double): the file is corrupt or not an IDX file", rd->op, rd->what,
                  magic[2]);
        return NULL;
    }
    int rank = magic[3];
    if (rank > GF_MAX_RANK) {
        gf__error(GF_ERR_INVALID, "%s: %s declares %d dimensions; graft tensors have at most %d",
                  rd->op, rd->what, rank, GF_MAX_RANK);
        return NULL;
    }
    unsigned char dims[4 * GF_MAX_RANK];
    if (gf__rd_read(rd, dims, 4 * (size_t)rank, "the dimension sizes") != GF_OK) return NULL;
    int64_t sizes[GF_MAX_RANK];
    uint64_t numel = 1;
    bool overflow = false;
    for (int i = 0; i < rank; i++) {
        sizes[i] = be32(dims + 4 * i);
        /* Each size is below 2^32; the product must leave room for the
         * element size (at most 8) within int64. */
        if (sizes[i] && numel > (uint64_t)INT64_MAX / 16 / (uint64_t)sizes[i]) overflow = true;
        else numel *= (uint64_t)sizes[i];
    }
    char shape[200];
    gf__shape_str(sizes, rank, shape, sizeof shape);
    if (overflow) {
        gf__error(GF_ERR_OVERFLOW, "%s: %s declares sizes %s, more elements than a tensor can "
                  "hold: the header is corrupt", rd->op, rd->what, shape);
        return NULL;
    }
    uint64_t need = numel * (uint64_t)fd.size;
    if (plain && need != rd->left) {
        gf__error(GF_ERR_INVALID, "%s: %s does not match its header: sizes %s of %s (%d bytes "
                  "each) need %llu data bytes but %llu follow the header (%s)", rd->op, rd->what,
                  shape, type_name, fd.size, (unsigned long long)need,
                  (unsigned long long)rd->left,
                  need > rd->left ? "the file is truncated" : "extra bytes at the end");
        return NULL;
    }
    gf_dtype target;
    if (gf__fdtype_target(&fd, rd->op, rd->what, type_name, &target) != GF_OK) return NULL;
    gf_tensor *t = gf__read_tensor(rd, &fd, target, sizes, rank, dev);
    if (!t || plain) return t;
    /* A gzip stream: the data must end where the header says (reading on
     * also checks the gzip trailer's CRC and length). */
    size_t n_extra = 0;
#ifdef GRAFT_HAVE_ZLIB
    unsigned char extra[64];
    int k = gzread((gzFile)rd->gz, extra, sizeof extra);
    int err = Z_OK;
    const char *why = gzerror((gzFile)rd->gz, &err);
    if (err != Z_OK) {
        gf_tensor_release(t);
        gf__error(GF_ERR_INVALID, "%s: %s is %s gzip file: %s (zlib: %s)", rd->op, rd->what,
                  err == Z_BUF_ERROR ? "a truncated" : "not a readable",
                  err == Z_BUF_ERROR ? "it ends before the gzip trailer"
                                     : "its end (the CRC-32 and length check) is corrupt",
                  why);
        return NULL;
    }
    n_extra = k > 0 ? (size_t)k : 0;
#endif
    if (n_extra) {
        gf_tensor_release(t);
        gf__error(GF_ERR_INVALID, "%s: %s does not match its header: sizes %s of %s need %llu "
                  "data bytes but more follow when decompressed (extra bytes at the end)",
                  rd->op, rd->what, shape, type_name, (unsigned long long)need);
        return NULL;
    }
    return t;
}

gf_tensor *gf_load_idx(const char *path, gf_device *dev) {
    gf__ensure_init();
    if (!dev) dev = gf_device_default();
    if (!dev) return NULL;
    FILE *f;
    uint64_t size;
    if (gf__file_open_read(OP, path, &f, &size) != GF_OK) return NULL;
    char what[1100];
    snprintf(what, sizeof what, "'%.1000s'", path);
    gf__rd rd = {.f = f, .op = OP, .what = what, .left = size};
    unsigned char head[2] = {0, 0};
    bool gzip = size >= 2 && fread(head, 1, 2, f) == 2 && head[0] == 0x1F && head[1] == 0x8B;
    if (fseek(f, 0, SEEK_SET) != 0) {
        int e = errno;
        fclose(f);
        gf__io_error(OP, "seek in", path, e);
        return NULL;
    }
    gf_tensor *t = NULL;
    int saved = gf__scope_suspend();
    if (!gzip) {
        t = idx_read(&rd, dev, true);
        fclose(f);
    } else {
#ifdef GRAFT_HAVE_ZLIB
        int fd = dup(fileno(f));
        int e = errno;
        fclose(f);
        gzFile gz = fd >= 0 ? gzdopen(fd, "rb") : NULL;
        if (!gz) {
            if (fd >= 0) {
                e = errno ? errno : ENOMEM;
                close(fd);
            }
            gf__io_error(OP, "open the gzip stream of", path, e);
        } else {
            gzbuffer(gz, 1u << 17);
            rd.gz = gz;
            rd.f = NULL;
            rd.left = UINT64_MAX;
            t = idx_read(&rd, dev, false);
            gzclose(gz);
        }
#else
        fclose(f);
        gf__error(GF_ERR_UNSUPPORTED, "%s: %s is gzip-compressed, and this graft was built "
                  "without zlib: install zlib (Debian: zlib1g-dev) and rebuild graft, or "
                  "decompress the file first (gunzip -k)", OP, what);
#endif
    }
    gf__scope_resume(saved);
    return gf__ret(t);
}
