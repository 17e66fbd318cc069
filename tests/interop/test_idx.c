/* SPDX-License-Identifier: BSD-3-Clause */
/* test_idx.c — gf_load_idx on IDX files laid out by hand from the format's
 * description (magic 00 00 <type> <rank>, big-endian u32 sizes, big-endian
 * data), plain and gzip-compressed, and on every kind of bad file. The gzip
 * files are built here too, from RFC 1952/1951: a header, "stored" deflate
 * blocks (uncompressed, at most 65535 bytes each), the CRC-32 and the length.
 * The real compressed files (Fashion-MNIST) are read by the example's test.
 *
 * GRAFT_TEST_HAVE_ZLIB says whether graft was built with zlib; without it
 * every gzip file must be refused with UNSUPPORTED. */
#include "interop_test.h"

static unsigned char buf[1 << 18];

/* ------------------------------------------------------------ file makers */
/* An IDX header for type code `type` and the given sizes, into out;
 * returns its length. */
static size_t idx_header(unsigned char *out, int type, int rank, const uint32_t *sizes) {
    out[0] = 0;
    out[1] = 0;
    out[2] = (unsigned char)type;
    out[3] = (unsigned char)rank;
    for (int i = 0; i < rank; i++)
        for (int b = 0; b < 4; b++) out[4 + 4 * i + b] = (unsigned char)(sizes[i] >> (24 - 8 * b));
    return 4 + 4 * (size_t)rank;
}

/* Header then data (already big-endian) into buf; its length. */
static size_t idx_file(int type, int rank, const uint32_t *sizes, const void *data, size_t n) {
    size_t h = idx_header(buf, type, rank, sizes);
    if (n) memcpy(buf + h, data, n);
    return h + n;
}

static uint32_t crc32_of(const unsigned char *p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    }
    return ~c;
}

static void le32(unsigned char *p, uint32_t v) {
    for (int b = 0; b < 4; b++) p[b] = (unsigned char)(v >> (8 * b));
}

/* A gzip file of raw[0..n) (stored blocks) at path; its length into *len
 * when len is not NULL. The returned bytes (static) can be corrupted and
 * written again by the caller. */
static unsigned char *write_gz(const char *path, const unsigned char *raw, size_t n, size_t *len) {
    static unsigned char gz[(1 << 18) + 1024];
    const unsigned char head[10] = {0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 0xFF};
    size_t o = 0;
    memcpy(gz, head, 10);
    o = 10;
    size_t done = 0;
    do {
        size_t k = n - done > 65535 ? 65535 : n - done;
        gz[o++] = done + k == n ? 1 : 0; /* BFINAL, BTYPE 00 (stored) */
        gz[o++] = (unsigned char)k;
        gz[o++] = (unsigned char)(k >> 8);
        gz[o++] = (unsigned char)~k;
        gz[o++] = (unsigned char)(~k >> 8);
        memcpy(gz + o, raw + done, k);
        o += k;
        done += k;
    } while (done < n);
    le32(gz + o, crc32_of(raw, n));
    le32(gz + o + 4, (uint32_t)n);
    o += 8;
    it_write(path, gz, o);
    if (len) *len = o;
    return gz;
}

/* ------------------------------------------------------------ checks */
/* Loads path: the expected dtype and sizes, and the values vals (as doubles). */
static void check_load(const char *path, gf_dtype dt, int rank, const int64_t *sizes,
                       const double *vals, int n) {
    gf_tensor *t = gf_load_idx(path, NULL);
    CHECK_MSG(t != NULL, "%s: %s", path, gf_last_error());
    if (!t) {
        gf_clear_error();
        return;
    }
    CHECK_MSG(gf_tensor_dtype(t) == dt, "dtype %s, expected %s", gf_dtype_name(gf_tensor_dtype(t)),
              gf_dtype_name(dt));
    CHECK(gf_tensor_rank(t) == rank && gf_tensor_is_contiguous(t));
    for (int d = 0; d < rank && d < gf_tensor_rank(t); d++) CHECK(gf_tensor_size(t, d) == sizes[d]);
    CHECK(gf_tensor_numel(t) == n);
    for (int i = 0; i < n && gf_tensor_numel(t) == n; i++)
        CHECK_MSG(it_get(t, i) == vals[i], "element %d: %.17g, expected %.17g", i, it_get(t, i),
                  vals[i]);
    gf_tensor_release(t);
}

/* The file at path fails to load with status and a message with text and
 * the path. */
static void check_fails(const char *path, gf_status status, const char *text) {
    gf_tensor *t = gf_load_idx(path, NULL);
    CHECK_MSG(t == NULL, "loading %s succeeded", path);
    gf_tensor_release(t);
    CHECK_CONTAINS(gf_last_error(), path);
    CHECK_FAILS(status, text);
}

/* The same bytes as a plain file and as a gzip file: both load alike. */
static void check_both(const char *name, size_t n, gf_dtype dt, int rank, const int64_t *sizes,
                       const double *vals, int count) {
    char gzname[64];
    snprintf(gzname, sizeof gzname, "%s.gz", name);
    it_write(it_path(name), buf, n);
    check_load(it_path(name), dt, rank, sizes, vals, count);
    write_gz(it_path(gzname), buf, n, NULL);
#ifdef GRAFT_TEST_HAVE_ZLIB
    check_load(it_path(gzname), dt, rank, sizes, vals, count);
#else
    check_fails(it_path(gzname), GF_ERR_UNSUPPORTED, "zlib1g-dev");
#endif
}

/* ------------------------------------------------------------ good files */
static void test_types(void) {
    /* 08 unsigned byte -> i32, [2, 3] */
    const unsigned char u8[6] = {0, 1, 127, 128, 254, 255};
    const double u8v[6] = {0, 1, 127, 128, 254, 255};
    size_t n = idx_file(0x08, 2, (const uint32_t[]){2, 3}, u8, 6);
    check_both("u8.idx", n, GF_I32, 2, SZ(2, 3), u8v, 6);
    /* 09 signed byte -> i32 */
    const unsigned char s8[4] = {0x80, 0xFF, 0x00, 0x7F};
    const double s8v[4] = {-128, -1, 0, 127};
    n = idx_file(0x09, 1, (const uint32_t[]){4}, s8, 4);
    check_both("s8.idx", n, GF_I32, 1, SZ(4), s8v, 4);
    /* 0B short (big-endian) -> i32 */
    const unsigned char s16[8] = {0x80, 0x00, 0xFF, 0xFE, 0x01, 0x02, 0x7F, 0xFF};
    const double s16v[4] = {-32768, -2, 258, 32767};
    n = idx_file(0x0B, 2, (const uint32_t[]){2, 2}, s16, 8);
    check_both("s16.idx", n, GF_I32, 2, SZ(2, 2), s16v, 4);
    /* 0C int -> i32 */
    const unsigned char s32[12] = {0x80, 0, 0, 0, 0, 1, 0, 0, 0xFF, 0xFF, 0xFF, 0xFD};
    const double s32v[3] = {-2147483648.0, 65536, -3};
    n = idx_file(0x0C, 1, (const uint32_t[]){3}, s32, 12);
    check_both("s32.idx", n, GF_I32, 1, SZ(3), s32v, 3);
    /* 0D float -> f32: 1.5, -2, 0.1f */
    const unsigned char f32[12] = {0x3F, 0xC0, 0, 0, 0xC0, 0, 0, 0, 0x3D, 0xCC, 0xCC, 0xCD};
    const double f32v[3] = {1.5, -2.0, (double)0.1f};
    n = idx_file(0x0D, 3, (const uint32_t[]){1, 3, 1}, f32, 12);
    check_both("f32.idx", n, GF_F32, 3, SZ(1, 3, 1), f32v, 3);
    /* 0E double -> f64: 0.1, -1e300 */
    const unsigned char f64[16] = {0x3F, 0xB9, 0x99, 0x99, 0x99, 0x99, 0x99, 0x9A,
                                   0xFE, 0x3C, 0x9E, 0x2D, 0x5A, 0xA6, 0xDE, 0x4C};
    double mbig;
    uint64_t bits = 0xFE3C9E2D5AA6DE4Cull;
    memcpy(&mbig, &bits, 8);
    const double f64v[2] = {0.1, mbig};
    n = idx_file(0x0E, 1, (const uint32_t[]){2}, f64, 16);
    check_both("f64.idx", n, GF_F64, 1, SZ(2), f64v, 2);
    CHECK(mbig < -9e299 && mbig > -2e300);
}

static void test_shapes(void) {
    /* rank 0: one element */
    const unsigned char one[1] = {42};
    size_t n = idx_file(0x08, 0, NULL, one, 1);
    check_both("r0.idx", n, GF_I32, 0, NULL, (const double[]){42}, 1);
    /* a zero-sized dimension: no data */
    n = idx_file(0x0D, 2, (const uint32_t[]){0, 5}, NULL, 0);
    check_both("empty.idx", n, GF_F32, 2, SZ(0, 5), NULL, 0);
    /* rank 8, graft's most */
    n = idx_file(0x08, 8, (const uint32_t[]){1, 1, 1, 1, 1, 1, 2, 1}, (const unsigned char[]){7, 9},
                 2);
    check_both("r8.idx", n, GF_I32, 8, SZ(1, 1, 1, 1, 1, 1, 2, 1), (const double[]){7, 9}, 2);
    /* MNIST's own layout, bigger than a read chunk and a deflate block:
     * 300 images of 28x28 bytes (235,200 bytes, four stored blocks). */
    static unsigned char px[300 * 28 * 28];
    static double pv[300 * 28 * 28];
    for (size_t i = 0; i < sizeof px; i++) {
        px[i] = (unsigned char)(i * 7 + i / 13);
        pv[i] = px[i];
    }
    n = idx_file(0x08, 3, (const uint32_t[]){300, 28, 28}, px, sizeof px);
    check_both("images-idx3-ubyte", n, GF_I32, 3, SZ(300, 28, 28), pv, (int)sizeof px);
}

static void test_device_and_scope(void) {
    /* An explicit device; the result belongs to the open scope, as every
     * new tensor does, and gf_scope_keep takes it out. */
    size_t n = idx_file(0x08, 1, (const uint32_t[]){2}, (const unsigned char[]){3, 4}, 2);
    it_write(it_path("d.idx"), buf, n);
    gf_device *cpu = gf_device_find("cpu");
    CHECK(cpu != NULL);
    gf_scope_begin();
    gf_tensor *t = gf_scope_keep(gf_load_idx(it_path("d.idx"), cpu));
    gf_scope_end();
    CHECK_MSG(t && gf_tensor_device(t) == cpu && it_get(t, 1) == 4, "%s", gf_last_error());
    gf_tensor_release(t);
}

/* ------------------------------------------------------------ bad files */
static void test_bad_plain(void) {
    check_fails(it_path("missing.idx"), GF_ERR_NOT_FOUND, "cannot open");
    check_fails(it_dir_, GF_ERR_INVALID, "is a directory");
    it_write(it_path("zero.idx"), "", 0);
    check_fails(it_path("zero.idx"), GF_ERR_INVALID, "truncated");
    it_write(it_path("three.idx"), "\0\0\x08", 3);
    check_fails(it_path("three.idx"), GF_ERR_INVALID, "the magic number");
    /* wrong magic: a first byte that is not 0, and another format */
    it_write(it_path("magic.idx"), "\x01\x00\x08\x01\x00\x00\x00\x01\x05", 9);
    check_fails(it_path("magic.idx"), GF_ERR_INVALID, "not an IDX file");
    unsigned char npy[256];
    size_t n = it_npy(npy, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }",
                      "\0\0\0\0", 4);
    it_write(it_path("a.npy"), npy, n);
    check_fails(it_path("a.npy"), GF_ERR_INVALID, "93 4E 55 4D");
    /* type codes IDX does not define */
    const int bad_types[] = {0x00, 0x07, 0x0A, 0x0F, 0xFF};
    for (size_t i = 0; i < sizeof bad_types / sizeof bad_types[0]; i++) {
        n = idx_file(bad_types[i], 1, (const uint32_t[]){1}, "\0\0\0\0\0\0\0\0", 8);
        it_write(it_path("type.idx"), buf, n);
        char want[32];
        snprintf(want, sizeof want, "type code 0x%02X", bad_types[i]);
        check_fails(it_path("type.idx"), GF_ERR_INVALID, want);
    }
    /* more dimensions than graft has */
    n = idx_file(0x08, 9, (const uint32_t[]){1, 1, 1, 1, 1, 1, 1, 1, 1}, "\0", 1);
    it_write(it_path("rank9.idx"), buf, n);
    check_fails(it_path("rank9.idx"), GF_ERR_INVALID, "declares 9 dimensions");
    it_write(it_path("rank255.idx"), "\0\0\x08\xFF", 4);
    check_fails(it_path("rank255.idx"), GF_ERR_INVALID, "declares 255 dimensions");
    /* the sizes cut short */
    n = idx_file(0x08, 3, (const uint32_t[]){2, 2, 2}, NULL, 0);
    it_write(it_path("dims.idx"), buf, n - 3);
    check_fails(it_path("dims.idx"), GF_ERR_INVALID, "the dimension sizes");
    /* data shorter and longer than the sizes say */
    n = idx_file(0x0C, 2, (const uint32_t[]){2, 3}, "\0\0\0\1\0\0\0\2", 8);
    it_write(it_path("short.idx"), buf, n);
    check_fails(it_path("short.idx"), GF_ERR_INVALID, "need 24 data bytes but 8 follow");
    check_fails(it_path("short.idx"), GF_ERR_INVALID, "truncated");
    n = idx_file(0x08, 1, (const uint32_t[]){2}, "\1\2\3", 3);
    it_write(it_path("long.idx"), buf, n);
    check_fails(it_path("long.idx"), GF_ERR_INVALID, "extra bytes at the end");
    /* sizes whose product overflows: each fits u32, together no tensor */
    n = idx_file(0x0E, 3, (const uint32_t[]){0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu}, NULL, 0);
    it_write(it_path("huge.idx"), buf, n);
    check_fails(it_path("huge.idx"), GF_ERR_OVERFLOW, "[4294967295, 4294967295, 4294967295]");
    /* large but representable: refused as truncated before any allocation */
    n = idx_file(0x08, 2, (const uint32_t[]){0xFFFFFFFFu, 0x10000u}, NULL, 0);
    it_write(it_path("big.idx"), buf, n);
    check_fails(it_path("big.idx"), GF_ERR_INVALID, "the file is truncated");
}

static void test_bad_gzip(void) {
    unsigned char raw[64];
    size_t n = idx_file(0x08, 2, (const uint32_t[]){2, 8}, "abcdefghijklmnop", 16);
    memcpy(raw, buf, n);
#ifndef GRAFT_TEST_HAVE_ZLIB
    write_gz(it_path("u.gz"), raw, n, NULL);
    check_fails(it_path("u.gz"), GF_ERR_UNSUPPORTED, "built without zlib");
#else
    size_t len;
    unsigned char *gz = write_gz(it_path("ok.gz"), raw, n, &len);
    check_load(it_path("ok.gz"), GF_I32, 2, SZ(2, 8),
               (const double[]){'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l', 'm',
                                'n', 'o', 'p'}, 16);
    /* cut inside the compressed data, and just before the trailer */
    it_write(it_path("cut.gz"), gz, len - 20);
    check_fails(it_path("cut.gz"), GF_ERR_INVALID, "truncated gzip file");
    it_write(it_path("notrailer.gz"), gz, len - 8);
    check_fails(it_path("notrailer.gz"), GF_ERR_INVALID, "truncated gzip file");
    it_write(it_path("magiconly.gz"), gz, 2);
    check_fails(it_path("magiconly.gz"), GF_ERR_INVALID, "gzip");
    /* a wrong CRC-32 in the trailer */
    gz[len - 8] ^= 0x55;
    it_write(it_path("crc.gz"), gz, len);
    check_fails(it_path("crc.gz"), GF_ERR_INVALID, "not a readable gzip file");
    check_fails(it_path("crc.gz"), GF_ERR_INVALID, "incorrect data check");
    gz[len - 8] ^= 0x55;
    /* a deflate block of the reserved type 3 */
    gz[10] = 0x07;
    it_write(it_path("btype.gz"), gz, len);
    check_fails(it_path("btype.gz"), GF_ERR_INVALID, "not a readable gzip file");
    /* a bad compression method in the gzip header */
    gz[10] = 0x01;
    gz[2] = 7;
    it_write(it_path("method.gz"), gz, len);
    check_fails(it_path("method.gz"), GF_ERR_INVALID, "not a readable gzip file");
    /* valid gzip of bad IDX content: not IDX, short data, extra data */
    write_gz(it_path("text.gz"), (const unsigned char *)"hello, world", 12, NULL);
    check_fails(it_path("text.gz"), GF_ERR_INVALID, "not an IDX file");
    write_gz(it_path("short.gz"), raw, n - 1, NULL);
    check_fails(it_path("short.gz"), GF_ERR_INVALID, "decompressed data ended");
    memcpy(raw + n, "qr", 2);
    write_gz(it_path("long.gz"), raw, n + 2, NULL);
    check_fails(it_path("long.gz"), GF_ERR_INVALID, "extra bytes at the end");
    write_gz(it_path("dims.gz"), raw, 6, NULL);
    check_fails(it_path("dims.gz"), GF_ERR_INVALID, "the dimension sizes");
    /* overflowing sizes inside a gzip file */
    size_t hn = idx_header(raw, 0x0E, 2, (const uint32_t[]){0xFFFFFFFFu, 0xFFFFFFFFu});
    write_gz(it_path("huge.gz"), raw, hn, NULL);
    check_fails(it_path("huge.gz"), GF_ERR_OVERFLOW, "more elements than a tensor can hold");
#endif
}

static void test_args(void) {
    CHECK(gf_load_idx(NULL, NULL) == NULL);
    CHECK_FAILS(GF_ERR_INVALID, "path is NULL");
}

int main(void) {
    it_setup("idx");
    RUN(test_types);
    RUN(test_shapes);
    RUN(test_device_and_scope);
    RUN(test_bad_plain);
    RUN(test_bad_gzip);
    RUN(test_args);
    it_teardown();
    CHECK(gf_shutdown() == GF_OK);
    return CHECK_REPORT();
}
