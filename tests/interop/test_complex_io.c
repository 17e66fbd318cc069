/* SPDX-License-Identifier: BSD-3-Clause */
/* test_complex_io.c — complex tensors in files: .npy ('<c8', '<c16', and the
 * big-endian forms, whose two parts are swapped each on its own), .npz, and
 * safetensors (C64; c128 refused on save with what to do instead). Expected
 * bytes are written out here from the formats' descriptions. */
#include "interop_test.h"

static gf_device *cx;

/* t (complex) against n (re, im) pairs. */
static void expect_c(const gf_tensor *t, const double *want, int64_t n, gf_dtype dt) {
    CHECK_MSG(t != NULL, "%s", gf_last_error());
    if (!t) return;
    CHECK(gf_tensor_dtype(t) == dt && gf_tensor_numel(t) == n);
    for (int64_t k = 0; k < n && k < gf_tensor_numel(t); k++) {
        double re = NAN, im = NAN;
        CHECK(gf_tensor_get_complex(t, SZ(k), &re, &im) == GF_OK);
        CHECK_MSG(re == want[2 * k] && im == want[2 * k + 1], "[%lld] %g%+gi, want %g%+gi",
                  (long long)k, re, im, want[2 * k], want[2 * k + 1]);
    }
}

static void test_npy(void) {
    /* graft writes, graft reads: both dtypes, and a transposed view */
    const double v[8] = {1, 2, -0.5, 0.25, 3, -1, 1e300, -0.0};
    gf_tensor *z128 = gf_from_data(v, SZ(4), 1, GF_C128, cx);
    gf_tensor *z64 = gf_to_dtype(z128, GF_C64);
    CHECK(gf_save_npy(z128, it_path("c16.npy")) == GF_OK);
    CHECK(gf_save_npy(z64, it_path("c8.npy")) == GF_OK);
    gf_tensor *a = gf_load_npy(it_path("c16.npy"), cx);
    expect_c(a, v, 4, GF_C128);
    gf_tensor *b = gf_load_npy(it_path("c8.npy"), cx);
    const double v64[8] = {1, 2, -0.5, 0.25, 3, -1, INFINITY, -0.0}; /* 1e300 rounds to inf */
    expect_c(b, v64, 4, GF_C64);
    /* the header names NumPy's dtype */
    size_t n = 0;
    unsigned char *raw = it_read(it_path("c16.npy"), &n);
    CHECK(raw && strstr((const char *)raw + 10, "'descr': '<c16'"));
    free(raw);
    raw = it_read(it_path("c8.npy"), &n);
    CHECK(raw && strstr((const char *)raw + 10, "'descr': '<c8'"));
    CHECK(raw && n >= 32 && ((const float *)(raw + n - 32))[0] == 1.0f &&
          ((const float *)(raw + n - 32))[1] == 2.0f);
    free(raw);
    gf_tensor *m = gf_view(z128, SZ(2, 2), 2);
    gf_tensor *mt = gf_transpose(m, 0, 1);
    CHECK(gf_save_npy(mt, it_path("t.npy")) == GF_OK);
    gf_tensor *c = gf_load_npy(it_path("t.npy"), cx);
    const double vt[8] = {1, 2, 3, -1, -0.5, 0.25, 1e300, -0.0};
    gf_tensor *cf = c ? gf_flatten(c) : NULL;
    expect_c(cf, vt, 4, GF_C128);

    /* big-endian '>c8': each f32 part byte-swapped on its own */
    unsigned char file[256], data[16];
    const float parts[4] = {1.5f, -2.0f, 0.0f, 8.0f};
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < 4; i++) data[4 * k + i] = ((const unsigned char *)&parts[k])[3 - i];
    size_t len = it_npy(file, 1, "{'descr': '>c8', 'fortran_order': False, 'shape': (2,), }",
                        data, sizeof data);
    it_write(it_path("be.npy"), file, len);
    gf_tensor *be = gf_load_npy(it_path("be.npy"), cx);
    expect_c(be, (const double[]){1.5, -2, 0, 8}, 2, GF_C64);
    /* complex256 has no graft dtype */
    len = it_npy(file, 1, "{'descr': '<c32', 'fortran_order': False, 'shape': (1,), }", data,
                 sizeof data);
    it_write(it_path("c32.npy"), file, len);
    CHECK(gf_load_npy(it_path("c32.npy"), cx) == NULL);
    CHECK_FAILS(GF_ERR_DTYPE, "c64 (two f32) and c128 (two f64)");
    /* a device that does not store complex refuses with gf_empty's message */
    gf_device *plain = it_device_storing(GF_C64, 0);
    if (plain) {
        CHECK(gf_load_npy(it_path("c8.npy"), plain) == NULL);
        CHECK_FAILS(GF_ERR_DTYPE, "does not store dtype c64");
    }

    /* .npz: both dtypes by name */
    const char *names[2] = {"z64", "z128"};
    const gf_tensor *ts[2] = {z64, z128};
    CHECK(gf_save_npz(names, ts, 2, it_path("c.npz")) == GF_OK);
    gf_tensor_dict *d = gf_load_npz(it_path("c.npz"), cx);
    CHECK_MSG(d && gf_tensor_dict_size(d) == 2, "%s", gf_last_error());
    if (d) {
        expect_c(gf_tensor_dict_get(d, "z64"), v64, 4, GF_C64);
        expect_c(gf_tensor_dict_get(d, "z128"), v, 4, GF_C128);
    }
    gf_tensor_dict_destroy(d);
    gf_tensor *all[] = {z128, z64, a, b, m, mt, c, cf, be};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) gf_tensor_release(all[i]);
}

static void test_safetensors(void) {
    const float zf[4] = {1, 2, 3, -4};
    gf_tensor *z = gf_from_data(zf, SZ(2), 1, GF_C64, cx);
    const char *names[1] = {"z"};
    const gf_tensor *ts[1] = {z};
    CHECK(gf_save_safetensors(names, ts, 1, it_path("c.st")) == GF_OK);
    /* the bytes safetensors.torch.save_file writes for the same tensor */
    size_t n = 0;
    unsigned char *raw = it_read(it_path("c.st"), &n);
    const char *hdr = "{\"z\":{\"dtype\":\"C64\",\"shape\":[2],\"data_offsets\":[0,16]}}";
    CHECK(raw && n >= 8 + strlen(hdr) + 16 && !memcmp(raw + 8, hdr, strlen(hdr)));
    CHECK(raw && !memcmp(raw + n - 16, zf, 16));
    free(raw);
    gf_tensor_dict *d = gf_load_safetensors(it_path("c.st"), cx);
    CHECK_MSG(d != NULL, "%s", gf_last_error());
    if (d) expect_c(gf_tensor_dict_get(d, "z"), (const double[]){1, 2, 3, -4}, 2, GF_C64);
    gf_tensor_dict_destroy(d);
    /* c128: the format has no such dtype */
    gf_tensor *w = gf_to_dtype(z, GF_C128);
    ts[0] = w;
    CHECK(gf_save_safetensors(names, ts, 1, it_path("w.st")) == GF_ERR_DTYPE);
    CHECK_FAILS(GF_ERR_DTYPE, "no 128-bit complex");
    CHECK(!it_exists(it_path("w.st")));
    gf_tensor_release(w);
    gf_tensor_release(z);
}

int main(void) {
    it_setup("complex-io");
    cx = it_device_storing(GF_C64, 1);
    if (!cx) {
        fprintf(stderr, "no loaded device stores c64: load the reference plugin\n");
        return 1;
    }
    RUN(test_npy);
    RUN(test_safetensors);
    it_teardown();
    return CHECK_REPORT();
}
