/* SPDX-License-Identifier: BSD-3-Clause */
/* test_npy.c — .npy save and load. The bytes graft writes are compared with
 * files laid out by hand from NumPy's format description, and hand-made files
 * (other versions, byte orders, Fortran order, narrower integers, malformed
 * ones) are loaded. tests/interop/numpy_check.c checks against NumPy itself. */
#include "interop_test.h"

static const gf_dtype dtypes[] = {GF_F32, GF_F64, GF_I32, GF_I64, GF_BOOL};

/* Six values of dtype dt in host memory (the same logical values for all). */
static size_t fill6(gf_dtype dt, void *buf) {
    const double v[6] = {0, 1, -2, 3, 100, -7};
    for (int i = 0; i < 6; i++) {
        switch (dt) {
        case GF_F32: ((float *)buf)[i] = (float)v[i] + 0.5f; break;
        case GF_F64: ((double *)buf)[i] = v[i] + 0.25; break;
        case GF_I32: ((int32_t *)buf)[i] = (int32_t)v[i] * 1000003; break;
        case GF_I64: ((int64_t *)buf)[i] = (int64_t)v[i] * (INT64_C(1) << 40) + 1; break;
        case GF_BOOL: ((uint8_t *)buf)[i] = v[i] != 0; break;
        default: break;
        }
    }
    return 6 * gf_dtype_size(dt);
}

static void test_roundtrip_dtypes(void) {
    for (size_t k = 0; k < sizeof dtypes / sizeof dtypes[0]; k++) {
        gf_dtype dt = dtypes[k];
        unsigned char src[48], back[48];
        size_t n = fill6(dt, src);
        gf_tensor *t = gf_from_data(src, SZ(2, 3), 2, dt, NULL);
        const char *path = it_path("rt.npy");
        CHECK(gf_save_npy(t, path) == GF_OK);
        gf_tensor *u = gf_load_npy(path, NULL);
        CHECK_MSG(u != NULL, "%s: %s", gf_dtype_name(dt), gf_last_error());
        if (u) {
            CHECK(gf_tensor_dtype(u) == dt);
            CHECK(gf_tensor_rank(u) == 2 && gf_tensor_size(u, 0) == 2 && gf_tensor_size(u, 1) == 3);
            CHECK(gf_tensor_is_contiguous(u));
            CHECK(gf_tensor_to_host(u, back, n) == GF_OK);
            CHECK_MSG(!memcmp(src, back, n), "dtype %s changed in the round trip", gf_dtype_name(dt));
            CHECK(!gf_tensor_shares_storage(t, u));
        }
        gf_tensor_release(t);
        gf_tensor_release(u);
    }
}

static void test_roundtrip_shapes(void) {
    /* 0-dim */
    gf_tensor *s = gf_scalar(3.25, GF_F64, NULL);
    CHECK(gf_save_npy(s, it_path("s.npy")) == GF_OK);
    gf_tensor *s2 = gf_load_npy(it_path("s.npy"), NULL);
    CHECK(s2 && gf_tensor_rank(s2) == 0 && gf_tensor_numel(s2) == 1);
    double v = 0;
    CHECK(s2 && gf_tensor_item(s2, &v) == GF_OK && v == 3.25);
    /* empty */
    gf_tensor *e = gf_zeros(SZ(0, 3), 2, GF_I32, NULL);
    CHECK(gf_save_npy(e, it_path("e.npy")) == GF_OK);
    gf_tensor *e2 = gf_load_npy(it_path("e.npy"), NULL);
    CHECK(e2 && gf_tensor_rank(e2) == 2 && gf_tensor_size(e2, 0) == 0 && gf_tensor_size(e2, 1) == 3);
    CHECK(e2 && gf_tensor_dtype(e2) == GF_I32);
    /* rank 8, the most graft has */
    gf_tensor *r8 = gf_ones(SZ(1, 2, 1, 2, 1, 2, 1, 2), 8, GF_F32, NULL);
    CHECK(gf_save_npy(r8, it_path("r8.npy")) == GF_OK);
    gf_tensor *r8b = gf_load_npy(it_path("r8.npy"), NULL);
    CHECK(r8b && gf_tensor_rank(r8b) == 8 && gf_tensor_numel(r8b) == 16);
    CHECK(r8b && it_get(r8b, 15) == 1.0);
    gf_tensor_release(s);
    gf_tensor_release(s2);
    gf_tensor_release(e);
    gf_tensor_release(e2);
    gf_tensor_release(r8);
    gf_tensor_release(r8b);
}

/* The whole file equals the hand-laid-out one. */
static void check_file(const char *path, const char *dict, const void *data, size_t n) {
    unsigned char want[1024];
    size_t wn = it_npy(want, 1, dict, data, n);
    size_t got_n = 0;
    unsigned char *got = it_read(path, &got_n);
    CHECK_MSG(got && got_n == wn && !memcmp(got, want, wn), "%s differs from the expected bytes "
              "(%zu vs %zu bytes); header written: %.80s", path, got_n, wn,
              got ? (const char *)got + 10 : "(none)");
    free(got);
}

static void test_file_bytes(void) {
    /* A transposed view is written in C order of its own shape. */
    const float a[6] = {0, 1, 2, 3, 4, 5};
    gf_tensor *t = gf_from_data(a, SZ(2, 3), 2, GF_F32, NULL);
    gf_tensor *tt = gf_transpose(t, 0, 1);
    CHECK(tt && !gf_tensor_is_contiguous(tt));
    CHECK(gf_save_npy(tt, it_path("tt.npy")) == GF_OK);
    const float at[6] = {0, 3, 1, 4, 2, 5};
    check_file(it_path("tt.npy"), "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }",
               at, sizeof at);
    /* A slice with a step and an offset. */
    gf_tensor *r = gf_arange(0, 10, 1, GF_I32, NULL);
    gf_tensor *sl = gf_slice(r, 0, 1, 10, 3);
    CHECK(gf_save_npy(sl, it_path("sl.npy")) == GF_OK);
    const int32_t want_sl[3] = {1, 4, 7};
    check_file(it_path("sl.npy"), "{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }",
               want_sl, sizeof want_sl);
    /* 0-dim i64 and bool */
    gf_tensor *z = gf_scalar(-5, GF_I64, NULL);
    CHECK(gf_save_npy(z, it_path("z.npy")) == GF_OK);
    const int64_t m5 = -5;
    check_file(it_path("z.npy"), "{'descr': '<i8', 'fortran_order': False, 'shape': (), }", &m5, 8);
    const uint8_t bd[4] = {1, 0, 0, 1};
    gf_tensor *b = gf_from_data(bd, SZ(2, 2), 2, GF_BOOL, NULL);
    CHECK(gf_save_npy(b, it_path("b.npy")) == GF_OK);
    check_file(it_path("b.npy"), "{'descr': '|b1', 'fortran_order': False, 'shape': (2, 2), }",
               bd, 4);
    const double d1 = 0.1;
    gf_tensor *d = gf_from_data(&d1, SZ(1), 1, GF_F64, NULL);
    CHECK(gf_save_npy(d, it_path("d.npy")) == GF_OK);
    check_file(it_path("d.npy"), "{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }", &d1, 8);
    gf_tensor_release(t);
    gf_tensor_release(tt);
    gf_tensor_release(r);
    gf_tensor_release(sl);
    gf_tensor_release(z);
    gf_tensor_release(b);
    gf_tensor_release(d);
}

/* Writes a hand-made .npy and loads it. */
static gf_tensor *load_made(int major, const char *dict, const void *data, size_t n) {
    static unsigned char buf[8192];
    size_t len = it_npy(buf, major, dict, data, n);
    const char *path = it_path("made.npy");
    it_write(path, buf, len);
    return gf_load_npy(path, NULL);
}

static void test_load_versions_and_spellings(void) {
    const float f[3] = {1.5f, -2.5f, 8.0f};
    const char *dicts[] = {
        "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }",
        "{'shape': (3,), 'fortran_order': False, 'descr': '<f4'}",   /* order, no trailing comma */
        "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (3L,)}", /* quotes, Python 2 */
        "{ 'descr' : '<f4' ,\n 'fortran_order' : False , 'shape' : ( 3 , ) , }",
    };
    for (int major = 1; major <= 3; major++) {
        for (size_t k = 0; k < sizeof dicts / sizeof dicts[0]; k++) {
            gf_tensor *t = load_made(major, dicts[k], f, sizeof f);
            CHECK_MSG(t && gf_tensor_dtype(t) == GF_F32 && gf_tensor_rank(t) == 1 &&
                      gf_tensor_size(t, 0) == 3, "version %d.0, header %zu: %s", major, k,
                      gf_last_error());
            if (t) {
                CHECK(it_get(t, 0) == 1.5 && it_get(t, 1) == -2.5 && it_get(t, 2) == 8.0);
            }
            gf_clear_error();
            gf_tensor_release(t);
        }
    }
}

static void test_load_fortran(void) {
    /* [[1, 2, 3], [4, 5, 6]] stored column by column. */
    const double fd[6] = {1, 4, 2, 5, 3, 6};
    gf_tensor *t = load_made(1, "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }", fd,
                             sizeof fd);
    CHECK(t && gf_tensor_rank(t) == 2 && gf_tensor_size(t, 0) == 2 && gf_tensor_size(t, 1) == 3);
    CHECK(t && gf_tensor_is_contiguous(t));
    for (int i = 0; t && i < 6; i++) CHECK_CLOSE(it_get(t, i), (double)(i + 1), 0);
    gf_tensor_release(t);
    /* 3-D: element (i, j, k) = 100 i + 10 j + k sits at i + 2 (j + 3 k). */
    int32_t d3[24];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++) d3[i + 2 * (j + 3 * k)] = 100 * i + 10 * j + k;
    t = load_made(1, "{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3, 4), }", d3, sizeof d3);
    CHECK(t && gf_tensor_rank(t) == 3 && gf_tensor_is_contiguous(t));
    for (int n = 0; t && n < 24; n++) {
        int i = n / 12, j = n / 4 % 3, k = n % 4;
        CHECK_CLOSE(it_get(t, n), 100.0 * i + 10.0 * j + k, 0);
    }
    gf_tensor_release(t);
    /* Fortran order of a 1-D array is C order. */
    const int64_t d1[3] = {7, 8, 9};
    t = load_made(1, "{'descr': '<i8', 'fortran_order': True, 'shape': (3,), }", d1, sizeof d1);
    CHECK(t && it_get(t, 0) == 7 && it_get(t, 2) == 9);
    gf_tensor_release(t);
}

static void test_load_conversions(void) {
    /* big-endian int32: 1, -2, 65536 */
    const unsigned char be[12] = {0, 0, 0, 1, 0xFF, 0xFF, 0xFF, 0xFE, 0, 1, 0, 0};
    gf_tensor *t = load_made(1, "{'descr': '>i4', 'fortran_order': False, 'shape': (3,), }", be, 12);
    CHECK(t && gf_tensor_dtype(t) == GF_I32);
    CHECK(t && it_get(t, 0) == 1 && it_get(t, 1) == -2 && it_get(t, 2) == 65536);
    gf_tensor_release(t);
    /* big-endian double 1.5 = 0x3FF8000000000000 */
    const unsigned char bd[8] = {0x3F, 0xF8, 0, 0, 0, 0, 0, 0};
    t = load_made(1, "{'descr': '>f8', 'fortran_order': False, 'shape': (), }", bd, 8);
    CHECK(t && gf_tensor_dtype(t) == GF_F64 && it_get(t, 0) == 1.5);
    gf_tensor_release(t);
    /* uint8 widens to i32 */
    const uint8_t u1[3] = {0, 200, 255};
    t = load_made(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (3,), }", u1, 3);
    CHECK(t && gf_tensor_dtype(t) == GF_I32 && it_get(t, 1) == 200 && it_get(t, 2) == 255);
    gf_tensor_release(t);
    const int8_t i1[2] = {-128, 127};
    t = load_made(1, "{'descr': '|i1', 'fortran_order': False, 'shape': (2,), }", i1, 2);
    CHECK(t && gf_tensor_dtype(t) == GF_I32 && it_get(t, 0) == -128 && it_get(t, 1) == 127);
    gf_tensor_release(t);
    const int16_t i2[2] = {-32768, 5};
    t = load_made(1, "{'descr': '<i2', 'fortran_order': False, 'shape': (2,), }", i2, 4);
    CHECK(t && gf_tensor_dtype(t) == GF_I32 && it_get(t, 0) == -32768 && it_get(t, 1) == 5);
    gf_tensor_release(t);
    const uint16_t u2[1] = {65535};
    t = load_made(1, "{'descr': '<u2', 'fortran_order': False, 'shape': (1,), }", u2, 2);
    CHECK(t && gf_tensor_dtype(t) == GF_I32 && it_get(t, 0) == 65535);
    gf_tensor_release(t);
    /* uint32 widens to i64 */
    const uint32_t u4[1] = {4294967295u};
    t = load_made(1, "{'descr': '<u4', 'fortran_order': False, 'shape': (1,), }", u4, 4);
    CHECK(t && gf_tensor_dtype(t) == GF_I64 && it_get(t, 0) == 4294967295.0);
    gf_tensor_release(t);
    /* uint64 fits in i64 ... */
    const uint64_t u8ok[1] = {UINT64_C(9223372036854775807)};
    t = load_made(1, "{'descr': '<u8', 'fortran_order': False, 'shape': (1,), }", u8ok, 8);
    int64_t got = 0;
    CHECK(t && gf_tensor_dtype(t) == GF_I64 && gf_tensor_to_host(t, &got, 8) == GF_OK &&
          got == INT64_MAX);
    gf_tensor_release(t);
    /* ... or not */
    const uint64_t u8bad[2] = {1, UINT64_C(9223372036854775808)};
    t = load_made(1, "{'descr': '<u8', 'fortran_order': False, 'shape': (2,), }", u8bad, 16);
    CHECK(t == NULL);
    CHECK_FAILS(GF_ERR_OVERFLOW, "9223372036854775808");
    /* bool bytes other than 0/1 read as true */
    const uint8_t b3[3] = {0, 2, 1};
    t = load_made(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", b3, 3);
    uint8_t bb[3] = {9, 9, 9};
    CHECK(t && gf_tensor_to_host(t, bb, 3) == GF_OK && bb[0] == 0 && bb[1] == 1 && bb[2] == 1);
    gf_tensor_release(t);
    /* '=' is the machine's order (little-endian here or swapped consistently) */
    const int32_t ne[2] = {11, -12};
    t = load_made(1, "{'descr': '=i4', 'fortran_order': False, 'shape': (2,), }", ne, 8);
    CHECK(t && it_get(t, 0) == 11 && it_get(t, 1) == -12);
    gf_tensor_release(t);
}

static void check_load_error(int major, const char *dict, const void *data, size_t n,
                             gf_status status, const char *text) {
    gf_tensor *t = load_made(major, dict, data, n);
    CHECK_MSG(t == NULL, "loading %s succeeded", dict);
    gf_tensor_release(t);
    CHECK_FAILS(status, text);
}

static void test_load_errors(void) {
    const float f[4] = {1, 2, 3, 4};
    check_load_error(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (10,), }", f, sizeof f,
                     GF_ERR_INVALID, "truncated");
    check_load_error(1, "{'descr': '<c32', 'fortran_order': False, 'shape': (1,), }", f, sizeof f,
                     GF_ERR_DTYPE, "complex numbers ('<c32')");
    check_load_error(1, "{'descr': '|O', 'fortran_order': False, 'shape': (2,), }", f, sizeof f,
                     GF_ERR_DTYPE, "pickled");
    check_load_error(1, "{'descr': [('a', '<f4'), ('b', '<i4')], 'fortran_order': False, "
                     "'shape': (2,), }", f, sizeof f, GF_ERR_DTYPE, "structured");
    check_load_error(1, "{'descr': '<U1', 'fortran_order': False, 'shape': (2,), }", f, sizeof f,
                     GF_ERR_DTYPE, "'<U1'");
    check_load_error(1, "{'descr': '<M8[ns]', 'fortran_order': False, 'shape': (2,), }", f,
                     sizeof f, GF_ERR_DTYPE, "'<M8[ns]'");
    check_load_error(1, "{'descr': '<f16', 'fortran_order': False, 'shape': (1,), }", f, 16,
                     GF_ERR_DTYPE, "16-byte floats");
    check_load_error(1, "{'descr': '<f4' 'fortran_order': False, 'shape': (2,), }", f, sizeof f,
                     GF_ERR_INVALID, "malformed header");
    check_load_error(1, "{'descr': '<f4', 'shape': (2,), }", f, sizeof f, GF_ERR_INVALID,
                     "missing");
    check_load_error(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", f,
                     sizeof f, GF_ERR_INVALID, "malformed header");
    check_load_error(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", f,
                     sizeof f, GF_ERR_INVALID, "non-negative integer");
    check_load_error(1, "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,), }", f,
                     sizeof f, GF_ERR_INVALID, "fortran_order");
    check_load_error(1, "{'descr': '<f4', 'fortran_order': False, 'shape': "
                     "(1, 1, 1, 1, 1, 1, 1, 1, 1), }", f, 4, GF_ERR_INVALID, "more than 8 dims");
    /* (f16 loads on the reference plugin since it computes in 16-bit floats:
     * tests/amp/test_half_ops.c round-trips it) */

    /* Byte-level damage. */
    const char *path = it_path("bad.npy");
    it_write(path, "PK\3\4 not numpy at all", 22);
    CHECK(gf_load_npy(path, NULL) == NULL);
    CHECK_FAILS(GF_ERR_INVALID, "magic");
    it_write(path, "\x93NUMPY\x01", 7); /* ends inside the magic string */
    CHECK(gf_load_npy(path, NULL) == NULL);
    CHECK_FAILS(GF_ERR_INVALID, "truncated");
    it_write(path, "\x93NUMPY\x04\x00\x10\x00", 10);
    CHECK(gf_load_npy(path, NULL) == NULL);
    CHECK_FAILS(GF_ERR_INVALID, "version 4.0");
    it_write(path, "\x93NUMPY\x01\x00\x76\x00{'descr'", 19); /* header cut short */
    CHECK(gf_load_npy(path, NULL) == NULL);
    CHECK_FAILS(GF_ERR_INVALID, "truncated: the header needs 118 bytes");
    it_write(path, "\x93NUMPY\x02\x00\xff\xff\xff\x7f", 12); /* absurd header length */
    CHECK(gf_load_npy(path, NULL) == NULL);
    CHECK_FAILS(GF_ERR_INVALID, "corrupt");
    it_write(path, "", 0);
    CHECK(gf_load_npy(path, NULL) == NULL);
    CHECK_FAILS(GF_ERR_INVALID, "truncated");

    /* System errors carry the system's words. */
    CHECK(gf_load_npy(it_path("no-such-file.npy"), NULL) == NULL);
    CHECK_FAILS(GF_ERR_NOT_FOUND, "No such file or directory");
    CHECK(gf_load_npy(it_path(""), NULL) == NULL); /* the directory itself */
    CHECK_FAILS(GF_ERR_INVALID, "is a directory");
    CHECK(gf_load_npy(NULL, NULL) == NULL);
    CHECK_FAILS(GF_ERR_INVALID, "path is NULL");
}

static void test_save_errors(void) {
    gf_tensor *t = gf_ones(SZ(4), 1, GF_F32, NULL);
    CHECK(gf_save_npy(NULL, it_path("x.npy")) == GF_ERR_INVALID);
    CHECK_FAILS(GF_ERR_INVALID, "is NULL");
    CHECK(gf_save_npy(t, NULL) == GF_ERR_INVALID);
    CHECK_FAILS(GF_ERR_INVALID, "path is NULL");
    const char *missing = it_path("no-such-dir/x.npy");
    CHECK(gf_save_npy(t, missing) == GF_ERR_NOT_FOUND);
    CHECK_FAILS(GF_ERR_NOT_FOUND, "No such file or directory");
    CHECK(!it_exists(missing));
    CHECK(gf_save_npy(t, it_path("")) == GF_ERR_INVALID);
    CHECK_FAILS(GF_ERR_INVALID, "Is a directory");
    /* A full disk: the error names it, and the device is left alone. */
    if (it_exists("/dev/full")) {
        CHECK(gf_save_npy(t, "/dev/full") == GF_ERR_INVALID);
        CHECK_FAILS(GF_ERR_INVALID, "No space left on device");
        CHECK(it_exists("/dev/full"));
    }
    /* A NULL tensor from an earlier failure keeps that failure's message. */
    gf_tensor *bad = gf_reshape(t, SZ(3), 1);
    CHECK(bad == NULL);
    gf_status first = gf_last_status();
    CHECK(gf_save_npy(bad, it_path("y.npy")) == first);
    CHECK(!it_exists(it_path("y.npy")));
    gf_clear_error();
    gf_tensor_release(t);
}

static void test_scope_and_device(void) {
    gf_device *cpu = gf_device_find("cpu");
    gf_tensor *t = gf_full(SZ(3), 1, 2.5, GF_F32, NULL);
    CHECK(gf_save_npy(t, it_path("sc.npy")) == GF_OK);
    gf_scope_begin();
    gf_tensor *u = gf_load_npy(it_path("sc.npy"), cpu);
    CHECK(u && gf_tensor_device(u) == cpu && it_get(u, 2) == 2.5);
    gf_tensor *kept = gf_scope_keep(u);
    gf_scope_end();
    CHECK(kept == u && it_get(kept, 0) == 2.5); /* kept out of the scope: still alive */
    gf_tensor_release(kept);
    gf_tensor_release(t);
}

int main(void) {
    it_setup("npy");
    RUN(test_roundtrip_dtypes);
    RUN(test_roundtrip_shapes);
    RUN(test_file_bytes);
    RUN(test_load_versions_and_spellings);
    RUN(test_load_fortran);
    RUN(test_load_conversions);
    RUN(test_load_errors);
    RUN(test_save_errors);
    RUN(test_scope_and_device);
    it_teardown();
    return CHECK_REPORT();
}
