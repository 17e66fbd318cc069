/* SPDX-License-Identifier: BSD-3-Clause */
/* interop_internal.h — what the interop files (interop_*.c) share: byte
 * streams over files with error reporting, the conversion of file dtypes to
 * graft dtypes, chunked transfer between files and tensors, and the tensor
 * dictionary. Not installed. */
#ifndef GRAFT_INTEROP_INTERNAL_H
#define GRAFT_INTEROP_INTERNAL_H

#include <stdio.h>

#include "graft/interop.h"
#include "internal.h"

/* ------------------------------------------------------------ adopted memory */
/* gf_from_host_memory without gf__ret; `op` names the caller in errors. */
gf_tensor *gf__adopt_host(void *data, const int64_t *sizes, const int64_t *strides, int rank,
                          gf_dtype dtype, gf_device *dev, void (*release)(void *ctx), void *ctx,
                          const char *op);

/* ------------------------------------------------------------ streams */
/* Reading: every read is bounded by `left` (the bytes that belong to the
 * object being read: the rest of a file, or one ZIP member), so a truncated
 * file is reported as such instead of running into the next member. */
typedef struct gf__rd {
    FILE *f;
    const char *op;   /* "gf_load_npy" */
    const char *what; /* "'a.npz' member 'w.npy'": names the source in errors */
    uint64_t left;
    uint32_t crc;     /* CRC-32 of the bytes read so far (plain files only) */
    void *gz;         /* a zlib gzFile to decompress from instead of f (left then
                       * bounds nothing: UINT64_MAX); NULL for plain files */
} gf__rd;

/* Reads n bytes. Fails: INVALID "truncated" when fewer remain (or the
 * decompressed stream ends), INVALID naming zlib's reason for a corrupt
 * gzip stream, or the system's error. `part` names what was being read
 * ("the header"). */
gf_status gf__rd_read(gf__rd *rd, void *dst, size_t n, const char *part);
/* Reads and discards n bytes (they still count in the CRC). */
gf_status gf__rd_skip(gf__rd *rd, uint64_t n, const char *part);

typedef struct gf__wr {
    FILE *f;
    const char *op;
    const char *path;
    uint64_t written;
    uint32_t crc;
    bool regular; /* a regular file: removed when the write fails */
} gf__wr;

/* Opens path for writing ("wb"): NOT_FOUND for a missing directory, INVALID
 * with the system's reason otherwise. */
gf_status gf__wr_open(gf__wr *wr, const char *op, const char *path);
gf_status gf__wr_write(gf__wr *wr, const void *src, size_t n);
/* Closes the file; on failure (status not OK, or fclose failing) removes it
 * when it is a regular file (never a device such as /dev/full).
 * Returns the first error: `status` when not OK, else fclose's. */
gf_status gf__wr_close(gf__wr *wr, gf_status status);

/* Opens path for reading, its size into *size. NOT_FOUND for a missing file. */
gf_status gf__file_open_read(const char *op, const char *path, FILE **f, uint64_t *size);
/* INVALID (NOT_FOUND for ENOENT) naming op, what and strerror(errnum). */
gf_status gf__io_error(const char *op, const char *doing, const char *path, int errnum);

uint32_t gf__crc32_update(uint32_t crc, const void *data, size_t n);

/* ------------------------------------------------------------ file dtypes */
/* An element type as a file declares it. */
typedef struct gf__fdtype {
    char kind;       /* 'b' bool, 'i' signed, 'u' unsigned, 'f' IEEE float, 'B' bfloat16 */
    int size;        /* bytes */
    bool big_endian;
} gf__fdtype;

/* The graft dtype a file dtype loads as (see interop.h), or DTYPE naming
 * `name` (the file's spelling, "'<c8'") and saying why. */
gf_status gf__fdtype_target(const gf__fdtype *fd, const char *op, const char *what,
                            const char *name, gf_dtype *out);

/* Reads numel elements of type fd in row-major order into a new contiguous
 * tensor of the given sizes and dtype `target` on dev, converting and
 * swapping bytes per chunk (memory use is bounded). Bool values are
 * normalised to 0/1. Returns a new reference (not recorded in a scope). */
gf_tensor *gf__read_tensor(gf__rd *rd, const gf__fdtype *fd, gf_dtype target,
                           const int64_t *sizes, int rank, gf_device *dev);

/* Writes t's elements in row-major order, little-endian, per chunk. */
gf_status gf__write_tensor(gf__wr *wr, const gf_tensor *t);

/* Bytes numel * dtype size of t, or OVERFLOW. */
gf_status gf__tensor_nbytes(const gf_tensor *t, const char *op, uint64_t *out);

/* Checks a list of names for saving: non-NULL, non-empty, distinct, each
 * tensor non-NULL. `reserved` (may be NULL) is a name that is refused. */
gf_status gf__check_names(const char *op, const char *const *names,
                          const gf_tensor *const *tensors, int n, const char *reserved);

/* ------------------------------------------------------------ .npy pieces */
/* Reads an .npy stream (header and data) into a new tensor (no scope). */
gf_tensor *gf__npy_read(gf__rd *rd, gf_device *dev);
/* The header (magic to the final newline) for t into buf; its length into
 * *len. Fails: DTYPE (bf16). */
gf_status gf__npy_header(const gf_tensor *t, const char *op, char *buf, size_t cap, size_t *len);

/* ------------------------------------------------------------ dictionaries */
struct gf_tensor_dict {
    int n, cap;
    char **names;
    gf_tensor **tensors;
    /* String metadata (interop_dict_meta.c), in insertion order. */
    int n_meta, cap_meta;
    char **meta_keys, **meta_values;
};
gf_tensor_dict *gf__dict_new(void);
/* The value of key, or NULL (no error set). */
const char *gf__dict_meta(const gf_tensor_dict *d, const char *key);
/* Sets key to value (copies both); takes value over when own_value (freed
 * on failure too). Fails: OUT_OF_MEMORY (d unchanged). */
gf_status gf__dict_meta_put(gf_tensor_dict *d, const char *key, char *value, bool own_value);
void gf__dict_clear_metadata(gf_tensor_dict *d);
/* The safetensors writer: names/tensors as gf_save_safetensors takes them,
 * and the metadata of meta (may be NULL) as "__metadata__". */
gf_status gf__save_safetensors(const char *op, const char *const *names,
                               const gf_tensor *const *tensors, int n, const gf_tensor_dict *meta,
                               const char *path);
/* Takes over the reference t; copies name. Fails: OUT_OF_MEMORY (t is then
 * released). */
gf_status gf__dict_add(gf_tensor_dict *d, const char *name, size_t name_len, gf_tensor *t);

/* Little-endian integers in byte buffers. */
static inline uint16_t gf__le16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t gf__le32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t gf__le64(const unsigned char *p) {
    return (uint64_t)gf__le32(p) | (uint64_t)gf__le32(p + 4) << 32;
}
static inline void gf__put16(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}
static inline void gf__put32(unsigned char *p, uint32_t v) {
    gf__put16(p, v);
    gf__put16(p + 2, v >> 16);
}
static inline void gf__put64(unsigned char *p, uint64_t v) {
    gf__put32(p, (uint32_t)v);
    gf__put32(p + 4, (uint32_t)(v >> 32));
}

#endif
