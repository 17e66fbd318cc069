/* SPDX-License-Identifier: BSD-3-Clause */
/* test_safetensors.c — safetensors save and load: exact bytes of a written
 * file, hand-made files (metadata, escapes, narrow integers, data out of
 * header order) and malformed ones. */
#include "interop_test.h"

/* A safetensors file: 8-byte little-endian header length, header, data. */
static const char *make_st(const char *json, const void *data, size_t n) {
    static unsigned char buf[4096];
    size_t hl = strlen(json);
    for (int i = 0; i < 8; i++) buf[i] = (unsigned char)((uint64_t)hl >> (8 * i));
    memcpy(buf + 8, json, hl);
    if (n) memcpy(buf + 8 + hl, data, n);
    const char *path = it_path("made.safetensors");
    it_write(path, buf, 8 + hl + n);
    return path;
}

static void test_roundtrip(void) {
    const float f[6] = {1.5f, -2.0f, 0.0f, 3.0f, 1e-3f, -1e3f};
    const double g[2] = {0.1, -7.25};
    const int32_t i32[3] = {-2147483647 - 1, 0, 2147483647};
    const int64_t i64[2] = {INT64_MIN, INT64_MAX};
    const uint8_t b[3] = {1, 0, 1};
    gf_tensor *ts[7] = {
        gf_from_data(f, SZ(2, 3), 2, GF_F32, NULL), gf_from_data(g, SZ(2), 1, GF_F64, NULL),
        gf_from_data(i32, SZ(3), 1, GF_I32, NULL),  gf_from_data(i64, SZ(2, 1), 2, GF_I64, NULL),
        gf_from_data(b, SZ(3), 1, GF_BOOL, NULL),   gf_scalar(4.5, GF_F32, NULL),
        gf_zeros(SZ(2, 0), 2, GF_I64, NULL)};
    /* names that need JSON escapes */
    const char *names[7] = {"f", "g\"quoted\"", "back\\slash", "new\nline", "bool", "scalar",
                            "empty"};
    CHECK(gf_save_safetensors(names, (const gf_tensor *const *)ts, 7, it_path("rt.st")) == GF_OK);
    gf_tensor_dict *d = gf_load_safetensors(it_path("rt.st"), NULL);
    CHECK_MSG(d && gf_tensor_dict_size(d) == 7, "%s", gf_last_error());
    for (int i = 0; d && i < 7; i++) {
        const char *nm = gf_tensor_dict_name(d, i);
        CHECK_MSG(nm && !strcmp(nm, names[i]), "name %d: '%s'", i, nm ? nm : "(null)");
        gf_tensor *u = gf_tensor_dict_at(d, i);
        CHECK(u && gf_tensor_dtype(u) == gf_tensor_dtype(ts[i]) &&
              gf_tensor_rank(u) == gf_tensor_rank(ts[i]));
        unsigned char x[64], y[64];
        size_t nb = (size_t)gf_tensor_numel(ts[i]) * gf_dtype_size(gf_tensor_dtype(ts[i]));
        CHECK(u && gf_tensor_to_host(u, x, nb) == GF_OK && gf_tensor_to_host(ts[i], y, nb) == GF_OK &&
              !memcmp(x, y, nb));
    }
    gf_tensor_dict_destroy(d);
    for (int i = 0; i < 7; i++) gf_tensor_release(ts[i]);
}

static void test_file_bytes(void) {
    const float f[2] = {1.0f, 2.0f};
    gf_tensor *t = gf_from_data(f, SZ(2), 1, GF_F32, NULL);
    const int32_t a[6] = {1, 2, 3, 4, 5, 6};
    gf_tensor *m = gf_from_data(a, SZ(2, 3), 2, GF_I32, NULL);
    gf_tensor *mt = gf_transpose(m, 0, 1); /* written in C order of [3, 2] */
    const char *names[] = {"w", "t"};
    const gf_tensor *ts[] = {t, mt};
    CHECK(gf_save_safetensors(names, ts, 2, it_path("b.st")) == GF_OK);
    const char *json = "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                       "\"t\":{\"dtype\":\"I32\",\"shape\":[3,2],\"data_offsets\":[8,32]}}";
    size_t hl = strlen(json), padded = (8 + hl + 7) / 8 * 8 - 8;
    unsigned char want[512];
    for (int i = 0; i < 8; i++) want[i] = (unsigned char)((uint64_t)padded >> (8 * i));
    memcpy(want + 8, json, hl);
    memset(want + 8 + hl, ' ', padded - hl);
    memcpy(want + 8 + padded, f, 8);
    const int32_t at[6] = {1, 4, 2, 5, 3, 6};
    memcpy(want + 8 + padded + 8, at, 24);
    size_t wn = 8 + padded + 32, n = 0;
    unsigned char *got = it_read(it_path("b.st"), &n);
    CHECK_MSG(got && n == wn && !memcmp(got, want, wn), "file differs (%zu vs %zu bytes): %.120s",
              n, wn, got ? (const char *)got + 8 : "");
    free(got);
    gf_tensor_release(t);
    gf_tensor_release(m);
    gf_tensor_release(mt);
}

static void test_load_made(void) {
    /* Data laid out out of header order; metadata first; whitespace and
     * escapes; narrow integers widen. */
    unsigned char data[64];
    size_t o = 0;
    const int16_t i16[2] = {-5, 300};
    memcpy(data + o, i16, 4); o += 4;                    /* b: [0, 4) */
    const uint8_t u8[3] = {0, 200, 255};
    memcpy(data + o, u8, 3); o += 3;                     /* a: [4, 7) */
    const int8_t i8[1] = {-1};
    memcpy(data + o, i8, 1); o += 1;                     /* g: [7, 8) */
    const uint64_t u64[1] = {UINT64_C(9223372036854775807)};
    memcpy(data + o, u64, 8); o += 8;                    /* c: [8, 16) */
    const double f64 = 0.5;
    memcpy(data + o, &f64, 8); o += 8;                   /* d: [16, 24) */
    const uint8_t bo[2] = {0, 3};
    memcpy(data + o, bo, 2); o += 2;                     /* e: [24, 26) */
    const uint16_t u16[1] = {65535};
    memcpy(data + o, u16, 2); o += 2;                    /* f: [26, 28) */
    const uint32_t u32[1] = {4000000000u};
    memcpy(data + o, u32, 4); o += 4;                    /* h: [28, 32) */
    const char *json =
        "{ \"__metadata__\" : {\"format\": \"pt\", \"nested\": {\"x\": [1, 2.5e3, true, null]}},\n"
        "  \"\\u00e9a\": {\"dtype\": \"U8\", \"shape\": [3], \"data_offsets\": [4, 7]},\n"
        "  \"b\": {\"shape\": [2], \"dtype\": \"I16\", \"data_offsets\": [0, 4]},\n"
        "  \"c\": {\"dtype\": \"U64\", \"shape\": [1], \"data_offsets\": [8, 16]},\n"
        "  \"d\": {\"dtype\": \"F64\", \"shape\": [], \"data_offsets\": [16, 24]},\n"
        "  \"e\": {\"dtype\": \"BOOL\", \"shape\": [2], \"data_offsets\": [24, 26]},\n"
        "  \"f\": {\"dtype\": \"U16\", \"shape\": [1, 1], \"data_offsets\": [26, 28]},\n"
        "  \"g\": {\"dtype\": \"I8\", \"shape\": [1], \"data_offsets\": [7, 8]},\n"
        "  \"h\": {\"dtype\": \"U32\", \"shape\": [1], \"data_offsets\": [28, 32]} }   ";
    gf_tensor_dict *d = gf_load_safetensors(make_st(json, data, o), NULL);
    CHECK_MSG(d && gf_tensor_dict_size(d) == 8, "%s", gf_last_error());
    if (!d) return;
    /* the string metadata is kept, a nested value (not str -> str) skipped */
    CHECK(gf_tensor_dict_metadata_count(d) == 1);
    CHECK(!strcmp(gf_tensor_dict_metadata_key(d, 0), "format"));
    CHECK(!strcmp(gf_tensor_dict_get_metadata(d, "format"), "pt"));
    CHECK(!strcmp(gf_tensor_dict_name(d, 0), "\xc3\xa9" "a"));
    CHECK(!strcmp(gf_tensor_dict_name(d, 1), "b"));
    gf_tensor *a = gf_tensor_dict_at(d, 0);
    CHECK(gf_tensor_dtype(a) == GF_I32 && it_get(a, 1) == 200 && it_get(a, 2) == 255);
    gf_tensor *b = gf_tensor_dict_get(d, "b");
    CHECK(gf_tensor_dtype(b) == GF_I32 && it_get(b, 0) == -5 && it_get(b, 1) == 300);
    gf_tensor *c = gf_tensor_dict_get(d, "c");
    int64_t cv = 0;
    CHECK(gf_tensor_dtype(c) == GF_I64 && gf_tensor_to_host(c, &cv, 8) == GF_OK && cv == INT64_MAX);
    gf_tensor *dd = gf_tensor_dict_get(d, "d");
    CHECK(gf_tensor_rank(dd) == 0 && it_get(dd, 0) == 0.5);
    gf_tensor *e = gf_tensor_dict_get(d, "e");
    uint8_t eb[2] = {9, 9};
    CHECK(gf_tensor_dtype(e) == GF_BOOL && gf_tensor_to_host(e, eb, 2) == GF_OK && eb[0] == 0 &&
          eb[1] == 1);
    gf_tensor *f = gf_tensor_dict_get(d, "f");
    CHECK(gf_tensor_rank(f) == 2 && it_get(f, 0) == 65535);
    CHECK(it_get(gf_tensor_dict_get(d, "g"), 0) == -1);
    gf_tensor *h = gf_tensor_dict_get(d, "h");
    CHECK(gf_tensor_dtype(h) == GF_I64 && it_get(h, 0) == 4000000000.0);
    gf_tensor_dict_destroy(d);

    /* An empty header: no tensors. */
    d = gf_load_safetensors(make_st("{}      ", NULL, 0), NULL);
    CHECK(d && gf_tensor_dict_size(d) == 0);
    gf_tensor_dict_destroy(d);
}

static void load_error(const char *json, const void *data, size_t n, gf_status status,
                       const char *text) {
    gf_tensor_dict *d = gf_load_safetensors(make_st(json, data, n), NULL);
    CHECK_MSG(d == NULL, "loading %s succeeded", json);
    gf_tensor_dict_destroy(d);
    CHECK_FAILS(status, text);
}

static void test_load_errors(void) {
    const float f[4] = {1, 2, 3, 4};
    load_error("{\"x\":{\"dtype\":\"F8_E4M3\",\"shape\":[4],\"data_offsets\":[0,4]}}", f, 4,
               GF_ERR_DTYPE, "F8_E4M3");
    /* (BF16 and F16 load on the reference plugin since it computes in them:
     * tests/amp/test_half_ops.c round-trips both) */
    load_error("{\"x\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,16]}}", f, 16,
               GF_ERR_INVALID, "needs 12");
    load_error("{\"x\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", f, 8,
               GF_ERR_INVALID, "outside the 8 data bytes");
    load_error("{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,4]}}", f, 16,
               GF_ERR_INVALID, "data_offsets [8, 4]");
    load_error("{\"x\":{\"dtype\":\"F32\",\"shape\":[4]}}", f, 16, GF_ERR_INVALID,
               "lacks 'dtype', 'shape' or 'data_offsets'");
    load_error("{\"x\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}", f, 16,
               GF_ERR_INVALID, "malformed JSON");
    load_error("{\"x\":{\"dtype\":\"F32\",\"shape\":[-4],\"data_offsets\":[0,16]}}", f, 16,
               GF_ERR_INVALID, "non-negative integer");
    load_error("{\"x\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}",
               f, 4, GF_ERR_INVALID, "at most 8 dims");
    load_error("{\"x\" \"y\"}", NULL, 0, GF_ERR_INVALID, "expected ':'");
    load_error("[1, 2]", NULL, 0, GF_ERR_INVALID, "does not start with '{'");
    load_error("{\"x\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}} trailing", f, 16,
               GF_ERR_INVALID, "after the closing");
    const uint64_t big[1] = {UINT64_C(18446744073709551615)};
    load_error("{\"x\":{\"dtype\":\"U64\",\"shape\":[1],\"data_offsets\":[0,8]}}", big, 8,
               GF_ERR_OVERFLOW, "18446744073709551615");

    /* header length damage */
    const char *path = it_path("len.safetensors");
    unsigned char hdr[12] = {0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, '{', '}', ' ', ' '};
    it_write(path, hdr, sizeof hdr);
    CHECK(gf_load_safetensors(path, NULL) == NULL);
    CHECK_FAILS(GF_ERR_INVALID, "limit of 100 MB");
    unsigned char hdr2[12] = {100, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' '};
    it_write(path, hdr2, sizeof hdr2);
    CHECK(gf_load_safetensors(path, NULL) == NULL);
    CHECK_FAILS(GF_ERR_INVALID, "truncated");
    it_write(path, hdr2, 5);
    CHECK(gf_load_safetensors(path, NULL) == NULL);
    CHECK_FAILS(GF_ERR_INVALID, "truncated");
    CHECK(gf_load_safetensors(it_path("missing.safetensors"), NULL) == NULL);
    CHECK_FAILS(GF_ERR_NOT_FOUND, "No such file or directory");
}

static void test_save_errors(void) {
    gf_tensor *t = gf_ones(SZ(2), 1, GF_F32, NULL);
    const gf_tensor *ts[] = {t};
    const char *meta[] = {"__metadata__"};
    CHECK(gf_save_safetensors(meta, ts, 1, it_path("m.st")) == GF_ERR_INVALID);
    CHECK_FAILS(GF_ERR_INVALID, "reserved");
    CHECK(!it_exists(it_path("m.st")));
    const char *ok[] = {"x"};
    CHECK(gf_save_safetensors(ok, ts, 1, it_path("none/x.st")) == GF_ERR_NOT_FOUND);
    CHECK_FAILS(GF_ERR_NOT_FOUND, "No such file or directory");
    CHECK(gf_save_safetensors(ok, ts, 1, NULL) == GF_ERR_INVALID);
    CHECK_FAILS(GF_ERR_INVALID, "path is NULL");
    if (it_exists("/dev/full")) {
        CHECK(gf_save_safetensors(ok, ts, 1, "/dev/full") == GF_ERR_INVALID);
        CHECK_FAILS(GF_ERR_INVALID, "No space left on device");
    }
    gf_tensor_release(t);
}

/* A state dict built in memory: set keeps a replaced name's position and
 * appends new ones, remove keeps the order, and the dict saves and loads
 * back as itself. */
static void test_dict_in_memory(void) {
    gf_tensor *a = gf_scalar(1, GF_F32, NULL), *b = gf_scalar(2, GF_F64, NULL);
    gf_tensor *c = gf_zeros(SZ(2, 3), 2, GF_I64, NULL);
    gf_tensor_dict *d = gf_tensor_dict_new();
    CHECK(d && gf_tensor_dict_size(d) == 0);
    CHECK(gf_tensor_dict_set(d, "layer1.0.weight", a) == GF_OK);
    CHECK(gf_tensor_dict_set(d, "bn1.num_batches_tracked", c) == GF_OK);
    CHECK(gf_tensor_dict_set(d, "fc.bias", b) == GF_OK);
    CHECK(gf_tensor_dict_set(d, "layer1.0.weight", b) == GF_OK); /* replaced in place */
    CHECK(gf_tensor_dict_size(d) == 3 && gf_tensor_dict_at(d, 0) == b &&
          !strcmp(gf_tensor_dict_name(d, 0), "layer1.0.weight"));
    CHECK(gf_tensor_dict_remove(d, "bn1.num_batches_tracked") == GF_OK);
    CHECK(gf_tensor_dict_size(d) == 2 && !strcmp(gf_tensor_dict_name(d, 1), "fc.bias"));
    CHECK(gf_tensor_dict_set(d, "bn1.num_batches_tracked", c) == GF_OK);
    CHECK(gf_save_safetensors_dict(d, it_path("dict.st")) == GF_OK);
    gf_tensor_dict *e = gf_load_safetensors(it_path("dict.st"), NULL);
    CHECK(e && gf_tensor_dict_size(e) == 3);
    for (int i = 0; e && i < 3; i++) {
        CHECK(!strcmp(gf_tensor_dict_name(e, i), gf_tensor_dict_name(d, i)));
        CHECK(gf_tensor_dtype(gf_tensor_dict_at(e, i)) == gf_tensor_dtype(gf_tensor_dict_at(d, i)));
    }
    /* the dict holds its own references */
    gf_tensor_release(a);
    gf_tensor_release(b);
    gf_tensor_release(c);
    CHECK(it_get(gf_tensor_dict_get(d, "fc.bias"), 0) == 2.0);
    /* errors */
    CHECK(gf_tensor_dict_remove(d, "nope") == GF_ERR_NOT_FOUND);
    CHECK_CONTAINS(gf_last_error(), "no tensor named 'nope'");
    CHECK(gf_tensor_dict_set(d, "", gf_tensor_dict_at(d, 0)) == GF_ERR_INVALID);
    CHECK_CONTAINS(gf_last_error(), "empty");
    CHECK(gf_tensor_dict_set(d, "x", NULL) == GF_ERR_INVALID);
    CHECK(gf_tensor_dict_set(NULL, "x", gf_tensor_dict_at(d, 0)) == GF_ERR_INVALID);
    CHECK(gf_tensor_dict_set(d, NULL, gf_tensor_dict_at(d, 0)) == GF_ERR_INVALID);
    CHECK(gf_tensor_dict_remove(NULL, "x") == GF_ERR_INVALID);
    CHECK(gf_save_safetensors_dict(NULL, it_path("x.st")) == GF_ERR_INVALID);
    char longname[5000];
    memset(longname, 'n', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    CHECK(gf_tensor_dict_set(d, longname, gf_tensor_dict_at(d, 0)) == GF_ERR_INVALID);
    CHECK(gf_tensor_dict_size(d) == 3);
    /* an empty dict saves and loads as empty */
    gf_tensor_dict *empty = gf_tensor_dict_new();
    CHECK(gf_save_safetensors_dict(empty, it_path("empty.st")) == GF_OK);
    gf_tensor_dict *f = gf_load_safetensors(it_path("empty.st"), NULL);
    CHECK(f && gf_tensor_dict_size(f) == 0);
    gf_tensor_dict_destroy(f);
    gf_tensor_dict_destroy(empty);
    gf_tensor_dict_destroy(e);
    gf_tensor_dict_destroy(d);
}

/* String metadata: set, replace, remove, escapes and long values through
 * a file, what safetensors' Python reader writes, and the errors. */
static void test_metadata(void) {
    gf_tensor *a = gf_scalar(1, GF_F32, NULL);
    gf_tensor_dict *d = gf_tensor_dict_new();
    CHECK(d && gf_tensor_dict_metadata_count(d) == 0);
    CHECK(gf_tensor_dict_set(d, "a", a) == GF_OK);
    static char big[20000];
    for (size_t i = 0; i + 1 < sizeof big; i++) big[i] = (char)('a' + i % 26);
    big[100] = '"', big[101] = '\\', big[102] = '\n', big[103] = '\x01';
    CHECK(gf_tensor_dict_set_metadata(d, "format", "pt") == GF_OK);
    CHECK(gf_tensor_dict_set_metadata(d, "big", big) == GF_OK);
    CHECK(gf_tensor_dict_set_metadata(d, "gone", "x") == GF_OK);
    CHECK(gf_tensor_dict_set_metadata(d, "format", "np") == GF_OK); /* replaced in place */
    CHECK(gf_tensor_dict_set_metadata(d, "gone", NULL) == GF_OK);   /* removed */
    CHECK(gf_tensor_dict_set_metadata(d, "never", NULL) == GF_OK);  /* absent: nothing */
    CHECK(gf_tensor_dict_metadata_count(d) == 2);
    CHECK(!strcmp(gf_tensor_dict_metadata_key(d, 0), "format"));
    CHECK(gf_save_safetensors_dict(d, it_path("meta.st")) == GF_OK);
    gf_tensor_dict *e = gf_load_safetensors(it_path("meta.st"), NULL);
    CHECK_MSG(e && gf_tensor_dict_size(e) == 1, "%s", gf_last_error());
    CHECK(e && gf_tensor_dict_metadata_count(e) == 2);
    const char *v = e ? gf_tensor_dict_get_metadata(e, "big") : NULL;
    CHECK(v && !strcmp(v, big));
    v = e ? gf_tensor_dict_get_metadata(e, "format") : NULL;
    CHECK(v && !strcmp(v, "np"));
    /* metadata only, no tensors */
    gf_tensor_dict *m = gf_tensor_dict_new();
    CHECK(gf_tensor_dict_set_metadata(m, "k", "v") == GF_OK);
    CHECK(gf_save_safetensors_dict(m, it_path("meta_only.st")) == GF_OK);
    gf_tensor_dict *mo = gf_load_safetensors(it_path("meta_only.st"), NULL);
    CHECK(mo && gf_tensor_dict_size(mo) == 0 && gf_tensor_dict_metadata_count(mo) == 1);
    /* errors */
    CHECK(gf_tensor_dict_get_metadata(d, "nope") == NULL);
    CHECK_FAILS(GF_ERR_NOT_FOUND, "no metadata key 'nope'");
    CHECK(gf_tensor_dict_set_metadata(NULL, "k", "v") == GF_ERR_INVALID);
    CHECK(gf_tensor_dict_set_metadata(d, NULL, "v") == GF_ERR_INVALID);
    CHECK_CONTAINS(gf_last_error(), "key is NULL");
    CHECK(gf_tensor_dict_set_metadata(d, "", "v") == GF_ERR_INVALID);
    gf_clear_error();
    CHECK(gf_tensor_dict_get_metadata(NULL, "k") == NULL && gf_last_status() == GF_ERR_INVALID);
    CHECK(gf_tensor_dict_get_metadata(d, NULL) == NULL && gf_last_status() == GF_ERR_INVALID);
    CHECK(gf_tensor_dict_metadata_key(d, 2) == NULL && gf_last_status() == GF_ERR_INDEX);
    gf_clear_error(); /* a NULL dict after an error reports that error (NULL propagation) */
    CHECK(gf_tensor_dict_metadata_key(NULL, 0) == NULL && gf_last_status() == GF_ERR_INVALID);
    CHECK(gf_tensor_dict_metadata_count(NULL) == 0);
    /* a malformed metadata string is a malformed header */
    load_error("{\"__metadata__\":{\"k\":\"v}}", NULL, 0, GF_ERR_INVALID, "malformed JSON");
    load_error("{\"__metadata__\":[1]}", NULL, 0, GF_ERR_INVALID, "must be an object");
    gf_tensor_dict_destroy(mo);
    gf_tensor_dict_destroy(m);
    gf_tensor_dict_destroy(e);
    gf_tensor_dict_destroy(d);
    gf_tensor_release(a);
}

int main(void) {
    it_setup("safetensors");
    RUN(test_roundtrip);
    RUN(test_file_bytes);
    RUN(test_load_made);
    RUN(test_load_errors);
    RUN(test_save_errors);
    RUN(test_dict_in_memory);
    RUN(test_metadata);
    it_teardown();
    return CHECK_REPORT();
}
