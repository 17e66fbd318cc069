/* SPDX-License-Identifier: BSD-3-Clause */
/* interop_test.h — helpers shared by the interop tests: a private temporary
 * directory, raw file bytes, and checks of a failed call's status and
 * message. Expected file contents are written out by hand from the format
 * specifications, never produced by the code under test. */
#ifndef GRAFT_TESTS_INTEROP_TEST_H
#define GRAFT_TESTS_INTEROP_TEST_H

#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <graft.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

#define SZ(...) ((const int64_t[]){__VA_ARGS__})

static char it_dir_[512];

/* Creates the test's temporary directory (under TMPDIR or /tmp). */
static inline void it_setup(const char *name) {
    const char *base = getenv("TMPDIR");
    snprintf(it_dir_, sizeof it_dir_, "%s/graft-%s-XXXXXX", base && *base ? base : "/tmp", name);
    if (!mkdtemp(it_dir_)) {
        perror("mkdtemp");
        exit(1);
    }
}

static inline int it_rm_(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* Removes the directory unless GRAFT_TEST_KEEP is set (to inspect files). */
static inline void it_teardown(void) {
    if (getenv("GRAFT_TEST_KEEP")) {
        fprintf(stderr, "files kept in %s\n", it_dir_);
        return;
    }
    nftw(it_dir_, it_rm_, 16, FTW_DEPTH | FTW_PHYS);
}

/* dir/name, in one of a few rotating buffers. */
static inline const char *it_path(const char *name) {
    static char bufs[8][640];
    static int k;
    char *b = bufs[k++ % 8];
    snprintf(b, sizeof bufs[0], "%s/%s", it_dir_, name);
    return b;
}

static inline void it_write(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
}

/* The whole file (malloc'ed, NUL-terminated), its size into *n; NULL when
 * it cannot be read. */
static inline unsigned char *it_read(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)len + 1);
    if (b && fread(b, 1, (size_t)len, f) != (size_t)len) {
        free(b);
        b = NULL;
    }
    fclose(f);
    if (b) b[len] = 0;
    *n = (size_t)len;
    return b;
}

static inline int it_exists(const char *path) { return access(path, F_OK) == 0; }

/* The first device that stores dtype dt, or else one that does not (want
 * false): NULL when there is none. */
static inline gf_device *it_device_storing(gf_dtype dt, int want) {
    for (int i = 0; i < gf_device_count(); i++) {
        gf_device_info info;
        gf_device *d = gf_device_at(i);
        if (d && gf_device_get_info(d, &info) == GF_OK &&
            (((info.dtypes >> (unsigned)dt) & 1u) != 0) == (want != 0))
            return d;
    }
    return NULL;
}

/* CHECK_FAILS(status, text): check.h. */

/* A .npy file from a header dict and raw data, per the format: magic,
 * version, little-endian header length (2 bytes for 1.x, 4 for 2.x/3.x), the
 * dict padded with spaces and '\n' to a multiple of 64 bytes, the data. */
static inline size_t it_npy(unsigned char *out, int major, const char *dict, const void *data,
                            size_t n) {
    size_t lenbytes = major == 1 ? 2 : 4;
    size_t pre = 8 + lenbytes, dl = strlen(dict);
    size_t total = (pre + dl + 1 + 63) / 64 * 64;
    size_t hlen = total - pre;
    memcpy(out, "\x93NUMPY", 6);
    out[6] = (unsigned char)major;
    out[7] = 0;
    for (size_t i = 0; i < lenbytes; i++) out[8 + i] = (unsigned char)(hlen >> (8 * i));
    memcpy(out + pre, dict, dl);
    memset(out + pre + dl, ' ', total - pre - dl - 1);
    out[total - 1] = '\n';
    if (n) memcpy(out + total, data, n);
    return total + n;
}

/* Element i of t as a double (t any dtype graft reads as double). */
static inline double it_get(const gf_tensor *t, int64_t i) {
    int rank = gf_tensor_rank(t);
    const int64_t *sizes = gf_tensor_sizes(t);
    int64_t idx[8] = {0};
    for (int d = rank - 1; d >= 0; d--) {
        idx[d] = i % sizes[d];
        i /= sizes[d];
    }
    double v = NAN;
    if (gf_tensor_get(t, idx, &v) != GF_OK) {
        fprintf(stderr, "gf_tensor_get: %s\n", gf_last_error());
        gf_clear_error();
    }
    return v;
}

#endif
