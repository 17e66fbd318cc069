/* SPDX-License-Identifier: BSD-3-Clause */
/* test_npz.c — .npz save and load: round trips, the archive's structure read
 * by the test's own ZIP walker (members are exactly the .npy files, stored,
 * with correct CRC-32s), damaged archives and argument errors. */
#include "interop_test.h"

/* Bitwise CRC-32 (ZIP's polynomial), independent of graft's table version. */
static uint32_t crc32_bitwise(const unsigned char *p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return ~c;
}

static uint32_t rd32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static unsigned rd16(const unsigned char *p) { return (unsigned)(p[0] | p[1] << 8); }
static void wr32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static void test_crc_reference_value(void) {
    /* The check value of CRC-32 from its specification. */
    CHECK(crc32_bitwise((const unsigned char *)"123456789", 9) == 0xCBF43926u);
}

static void test_roundtrip(void) {
    const float a[6] = {0.5f, -1.0f, 2.0f, 3.5f, -4.25f, 6.0f};
    const int64_t b[3] = {INT64_C(1) << 62, -1, 42};
    gf_tensor *ta = gf_from_data(a, SZ(2, 3), 2, GF_F32, NULL);
    gf_tensor *tb = gf_from_data(b, SZ(3), 1, GF_I64, NULL);
    gf_tensor *tc = gf_full(NULL, 0, 1, GF_BOOL, NULL);
    gf_tensor *td = gf_zeros(SZ(0), 1, GF_F64, NULL);
    const char *names[] = {"w", "layer/bias", "w\xc3\xa9ight", "empty"};
    const gf_tensor *ts[] = {ta, tb, tc, td};
    const char *path = it_path("rt.npz");
    CHECK(gf_save_npz(names, ts, 4, path) == GF_OK);
    gf_tensor_dict *d = gf_load_npz(path, NULL);
    CHECK_MSG(d != NULL, "%s", gf_last_error());
    CHECK(gf_tensor_dict_size(d) == 4);
    for (int i = 0; d && i < 4; i++) {
        const char *nm = gf_tensor_dict_name(d, i);
        CHECK_MSG(nm && !strcmp(nm, names[i]), "name %d is '%s'", i, nm ? nm : "(null)");
    }
    float ga[6];
    int64_t gb[3];
    gf_tensor *la = gf_tensor_dict_get(d, "w");
    CHECK(la && gf_tensor_dtype(la) == GF_F32 && gf_tensor_size(la, 1) == 3 &&
          gf_tensor_to_host(la, ga, sizeof ga) == GF_OK && !memcmp(a, ga, sizeof a));
    gf_tensor *lb = gf_tensor_dict_get(d, "layer/bias");
    CHECK(lb && lb == gf_tensor_dict_at(d, 1) && gf_tensor_dtype(lb) == GF_I64 &&
          gf_tensor_to_host(lb, gb, sizeof gb) == GF_OK && !memcmp(b, gb, sizeof b));
    gf_tensor *lc = gf_tensor_dict_at(d, 2);
    CHECK(lc && gf_tensor_rank(lc) == 0 && gf_tensor_dtype(lc) == GF_BOOL && it_get(lc, 0) == 1);
    gf_tensor *ld = gf_tensor_dict_get(d, "empty");
    CHECK(ld && gf_tensor_numel(ld) == 0 && gf_tensor_dtype(ld) == GF_F64);
    /* lookups that fail */
    CHECK(gf_tensor_dict_get(d, "nope") == NULL);
    CHECK_FAILS(GF_ERR_NOT_FOUND, "'w', 'layer/bias'");
    CHECK(gf_tensor_dict_at(d, 4) == NULL);
    CHECK_FAILS(GF_ERR_INDEX, "out of range");
    CHECK(gf_tensor_dict_name(d, -1) == NULL);
    CHECK_FAILS(GF_ERR_INDEX, "out of range");
    CHECK(gf_tensor_dict_size(NULL) == 0);
    /* a borrowed tensor retained outlives the dict */
    gf_tensor *keep = gf_tensor_retain(la);
    gf_tensor_dict_destroy(d);
    gf_tensor_dict_destroy(NULL);
    CHECK(it_get(keep, 5) == 6.0);
    gf_tensor_release(keep);
    gf_tensor_release(ta);
    gf_tensor_release(tb);
    gf_tensor_release(tc);
    gf_tensor_release(td);
}

/* Walks the archive as a ZIP reader would and compares each member with the
 * .npy file gf_save_npy writes for the same tensor. */
static void test_structure(void) {
    const int32_t a[6] = {1, 2, 3, 4, 5, 6};
    gf_tensor *t = gf_from_data(a, SZ(2, 3), 2, GF_I32, NULL);
    gf_tensor *tt = gf_transpose(t, 0, 1);
    gf_tensor *s = gf_scalar(-1.5, GF_F64, NULL);
    const char *names[] = {"first", "second"};
    const gf_tensor *ts[] = {tt, s};
    CHECK(gf_save_npz(names, ts, 2, it_path("s.npz")) == GF_OK);
    CHECK(gf_save_npy(tt, it_path("first.npy")) == GF_OK);
    CHECK(gf_save_npy(s, it_path("second.npy")) == GF_OK);
    size_t n = 0;
    unsigned char *z = it_read(it_path("s.npz"), &n);
    CHECK(z != NULL && n > 22);
    if (!z || n <= 22) return;
    size_t pos = 0;
    uint32_t crcs[2] = {0, 0};
    for (int m = 0; m < 2; m++) {
        CHECK(rd32(z + pos) == 0x04034b50u);
        CHECK(rd16(z + pos + 8) == 0); /* stored */
        uint32_t size = rd32(z + pos + 18);
        CHECK(size == rd32(z + pos + 22));
        unsigned nl = rd16(z + pos + 26), xl = rd16(z + pos + 28);
        char want_name[32];
        snprintf(want_name, sizeof want_name, "%s.npy", names[m]);
        CHECK(nl == strlen(want_name) && !memcmp(z + pos + 30, want_name, nl));
        const unsigned char *data = z + pos + 30 + nl + xl;
        size_t fn = 0;
        unsigned char *npy = it_read(it_path(want_name), &fn);
        CHECK_MSG(npy && fn == size && !memcmp(npy, data, fn), "member %s differs from the .npy file",
                  want_name);
        crcs[m] = crc32_bitwise(data, size);
        CHECK(rd32(z + pos + 14) == crcs[m]);
        free(npy);
        pos = (size_t)(data - z) + size;
    }
    /* central directory and its end record */
    const unsigned char *e = z + n - 22;
    CHECK(rd32(e) == 0x06054b50u && rd16(e + 8) == 2 && rd16(e + 10) == 2);
    CHECK(rd32(e + 16) == pos && rd32(e + 12) == n - 22 - pos);
    const unsigned char *c = z + pos;
    for (int m = 0; m < 2; m++) {
        CHECK(rd32(c) == 0x02014b50u && rd16(c + 10) == 0 && rd32(c + 16) == crcs[m]);
        c += 46 + rd16(c + 28) + rd16(c + 30) + rd16(c + 32);
    }
    /* The same tensors give the same bytes (a fixed timestamp). */
    CHECK(gf_save_npz(names, ts, 2, it_path("s2.npz")) == GF_OK);
    size_t n2 = 0;
    unsigned char *z2 = it_read(it_path("s2.npz"), &n2);
    CHECK(z2 && n2 == n && !memcmp(z, z2, n));
    free(z2);
    free(z);
    gf_tensor_release(t);
    gf_tensor_release(tt);
    gf_tensor_release(s);
}

/* The archive's bytes, the offset of the central directory entry of member
 * `which` (0-based) and of the data of member `which`. */
static unsigned char *damaged_base(size_t *n, size_t *central, size_t *data, int which) {
    const float a[4] = {1, 2, 3, 4};
    gf_tensor *t = gf_from_data(a, SZ(4), 1, GF_F32, NULL);
    const char *names[] = {"a", "b"};
    const gf_tensor *ts[] = {t, t};
    CHECK(gf_save_npz(names, ts, 2, it_path("base.npz")) == GF_OK);
    gf_tensor_release(t);
    unsigned char *z = it_read(it_path("base.npz"), n);
    if (!z) return NULL;
    size_t c = rd32(z + *n - 22 + 16);
    for (int m = 0; m < which; m++) c += 46 + rd16(z + c + 28) + rd16(z + c + 30) + rd16(z + c + 32);
    *central = c;
    size_t local = rd32(z + c + 42);
    *data = local + 30 + rd16(z + local + 26) + rd16(z + local + 28);
    return z;
}

static void load_damaged(const unsigned char *z, size_t n, gf_status status, const char *text) {
    it_write(it_path("bad.npz"), z, n);
    gf_tensor_dict *d = gf_load_npz(it_path("bad.npz"), NULL);
    CHECK(d == NULL);
    gf_tensor_dict_destroy(d);
    CHECK_FAILS(status, text);
}

static void test_damaged(void) {
    size_t n, central, data;
    unsigned char *z = damaged_base(&n, &central, &data, 1);
    if (!z) return;
    /* sanity: the undamaged copy loads */
    it_write(it_path("ok.npz"), z, n);
    gf_tensor_dict *ok = gf_load_npz(it_path("ok.npz"), NULL);
    CHECK(gf_tensor_dict_size(ok) == 2);
    gf_tensor_dict_destroy(ok);

    unsigned char *w = malloc(n);
    memcpy(w, z, n);
    w[data + rd32(z + central + 20) - 1] ^= 0x40; /* the last byte of member b's elements */
    load_damaged(w, n, GF_ERR_INVALID, "CRC-32");

    memcpy(w, z, n);
    w[central + 10] = 8; /* method: deflate */
    load_damaged(w, n, GF_ERR_UNSUPPORTED, "savez_compressed");

    memcpy(w, z, n);
    w[central + 8] |= 1; /* encrypted */
    load_damaged(w, n, GF_ERR_UNSUPPORTED, "encrypted");

    memcpy(w, z, n);
    wr32(w + central + 20, 0x7FFFFFF0u);
    wr32(w + central + 24, 0x7FFFFFF0u);
    load_damaged(w, n, GF_ERR_INVALID, "past the end of the file");

    memcpy(w, z, n);
    wr32(w + rd32(w + central + 42), 0x12345678u); /* local header signature */
    load_damaged(w, n, GF_ERR_INVALID, "local header");

    memcpy(w, z, n);
    wr32(w + n - 22 + 16, (uint32_t)n); /* directory offset beyond the file */
    load_damaged(w, n, GF_ERR_INVALID, "central directory");

    load_damaged(z, n - 10, GF_ERR_INVALID, "not an .npz");  /* end record cut off */
    load_damaged(z, 0, GF_ERR_INVALID, "only 0 bytes");
    /* member b's array itself is truncated: its size shrinks below the data */
    memcpy(w, z, n);
    uint32_t small = rd32(z + central + 20) - 4;
    wr32(w + central + 20, small);
    wr32(w + central + 24, small);
    load_damaged(w, n, GF_ERR_INVALID, "member 'b.npy' is truncated");
    free(w);
    free(z);

    /* a .npy is not an archive */
    gf_tensor *t = gf_ones(SZ(2), 1, GF_F32, NULL);
    CHECK(gf_save_npy(t, it_path("plain.npy")) == GF_OK);
    CHECK(gf_load_npz(it_path("plain.npy"), NULL) == NULL);
    CHECK_FAILS(GF_ERR_INVALID, "not an .npz");
    CHECK(gf_load_npz(it_path("missing.npz"), NULL) == NULL);
    CHECK_FAILS(GF_ERR_NOT_FOUND, "No such file or directory");
    gf_tensor_release(t);
}

static void test_save_errors(void) {
    gf_tensor *t = gf_ones(SZ(2), 1, GF_F32, NULL);
    const gf_tensor *ts[] = {t, t};
    const char *dup[] = {"x", "x"};
    const char *path = it_path("never.npz");
    CHECK(gf_save_npz(dup, ts, 2, path) == GF_ERR_INVALID);
    CHECK_FAILS(GF_ERR_INVALID, "given twice");
    const char *empty[] = {"x", ""};
    CHECK(gf_save_npz(empty, ts, 2, path) == GF_ERR_INVALID);
    CHECK_FAILS(GF_ERR_INVALID, "non-empty name");
    const char *nul[] = {"x", NULL};
    CHECK(gf_save_npz(nul, ts, 2, path) == GF_ERR_INVALID);
    CHECK_FAILS(GF_ERR_INVALID, "NULL");
    const char *ok[] = {"x", "y"};
    CHECK(gf_save_npz(ok, ts, 0, path) == GF_ERR_INVALID);
    CHECK_FAILS(GF_ERR_INVALID, "at least one");
    CHECK(gf_save_npz(NULL, ts, 2, path) == GF_ERR_INVALID);
    CHECK_FAILS(GF_ERR_INVALID, "NULL");
    const gf_tensor *withnull[] = {t, NULL};
    CHECK(gf_save_npz(ok, withnull, 2, path) == GF_ERR_INVALID);
    CHECK_FAILS(GF_ERR_INVALID, "NULL");
    CHECK(!it_exists(path));
    CHECK(gf_save_npz(ok, ts, 2, it_path("no/such/dir.npz")) == GF_ERR_NOT_FOUND);
    CHECK_FAILS(GF_ERR_NOT_FOUND, "No such file or directory");
    if (it_exists("/dev/full")) {
        CHECK(gf_save_npz(ok, ts, 2, "/dev/full") == GF_ERR_INVALID);
        CHECK_FAILS(GF_ERR_INVALID, "No space left on device");
        CHECK(it_exists("/dev/full"));
    }
    gf_tensor_release(t);
}

int main(void) {
    it_setup("npz");
    RUN(test_crc_reference_value);
    RUN(test_roundtrip);
    RUN(test_structure);
    RUN(test_damaged);
    RUN(test_save_errors);
    it_teardown();
    return CHECK_REPORT();
}
