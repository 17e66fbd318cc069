/* SPDX-License-Identifier: BSD-3-Clause */
/* numpy_check.c — .npy / .npz / safetensors against NumPy itself.
 *
 *   numpy_check <work dir> <python3 with numpy, or "">
 *
 * NumPy writes files (gen.py below) that graft loads and checks against
 * values written out here by hand; graft writes files that NumPy loads and
 * checks (check.py) against values written out there. safetensors files are
 * written and read on the Python side from the format's description (json +
 * struct), and with the safetensors package too when it is installed.
 * Exits 77 (CTest: skipped) with the reason when no python3 with numpy is
 * available. Registered by tests/install/CMakeLists.txt. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <graft.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "check.h"

#define SZ(...) ((const int64_t[]){__VA_ARGS__})

static const char *dir, *python;

static const char *path_of(const char *name) {
    static char bufs[4][1024];
    static int k;
    char *b = bufs[k++ % 4];
    snprintf(b, sizeof bufs[0], "%s/%s", dir, name);
    return b;
}

/* ------------------------------------------------------------ the Python side */
static const char gen_py[] =
    "import os, sys, zipfile, json, struct\n"
    "import numpy as np\n"
    "d = sys.argv[1]\n"
    "p = lambda n: os.path.join(d, n)\n"
    "np.save(p('f32.npy'), (np.arange(6, dtype=np.float32) / 4).reshape(2, 3))\n"
    "np.save(p('f64.npy'), np.array([[1.5, -2.25], [1e300, -0.0]]))\n"
    "np.save(p('i32.npy'), np.array([-2147483648, 0, 2147483647], dtype=np.int32))\n"
    "np.save(p('i64.npy'), np.array([2**62 + 1, -(2**62) - 3], dtype=np.int64))\n"
    "np.save(p('bool.npy'), np.array([[True, False, True]]))\n"
    "np.save(p('scalar.npy'), np.float64(3.5))\n"
    "np.save(p('empty.npy'), np.zeros((0, 3), dtype=np.float32))\n"
    "np.save(p('fortran.npy'), np.asfortranarray(np.arange(24, dtype=np.int64).reshape(2, 3, 4)))\n"
    "np.save(p('be_i4.npy'), np.arange(-2, 3, dtype='>i4'))\n"
    "np.save(p('be_f8.npy'), np.array([0.1, -2.5], dtype='>f8'))\n"
    "np.save(p('u1.npy'), np.arange(250, 256, dtype=np.uint8))\n"
    "np.save(p('i2.npy'), np.array([-32768, 32767], dtype=np.int16))\n"
    "np.save(p('u2.npy'), np.array([65535], dtype=np.uint16))\n"
    "np.save(p('u4.npy'), np.array([4294967295], dtype=np.uint32))\n"
    "np.save(p('u8_ok.npy'), np.array([2**63 - 1], dtype=np.uint64))\n"
    "np.save(p('u8_big.npy'), np.array([2**64 - 1], dtype=np.uint64))\n"
    "np.save(p('f2.npy'), np.array([1.0, 0.5], dtype=np.float16))\n"
    "np.save(p('c8.npy'), np.array([1 + 2j, -0.5 - 0.25j], dtype=np.complex64))\n"
    "np.save(p('c16.npy'), np.array([[1e300 - 1j], [0.1 + 0.2j]], dtype=np.complex128))\n"
    "np.save(p('c32.npy'), np.array([1j], dtype=np.clongdouble))\n"
    "np.save(p('obj.npy'), np.array([{'a': 1}], dtype=object), allow_pickle=True)\n"
    "np.save(p('rec.npy'), np.zeros(2, dtype=[('x', '<f4'), ('y', '<i4')]))\n"
    "np.save(p('str.npy'), np.array(['ab', 'c']))\n"
    "np.save(p('view.npy'), np.arange(12, dtype=np.float64).reshape(3, 4)[:, ::2])\n"
    "for v in (2, 3):\n"
    "    with open(p('v%d.npy' % v), 'wb') as f:\n"
    "        np.lib.format.write_array(f, np.arange(5, dtype=np.int32), version=(v, 0))\n"
    "np.savez(p('plain.npz'), w=np.arange(6, dtype=np.float32).reshape(2, 3),\n"
    "         b=np.array([1, -1], dtype=np.int64), flag=np.array(True))\n"
    "np.savez(p('positional.npz'), np.arange(3, dtype=np.int32), np.ones((2, 2)))\n"
    "np.savez_compressed(p('compressed.npz'), w=np.arange(4.0))\n"
    "# zip64 records throughout, as written for archives over 4 GiB\n"
    "saved = zipfile.ZIP64_LIMIT, zipfile.ZIP_FILECOUNT_LIMIT\n"
    "zipfile.ZIP64_LIMIT, zipfile.ZIP_FILECOUNT_LIMIT = 1, 1\n"
    "try:\n"
    "    np.savez(p('zip64.npz'), a=np.arange(4, dtype=np.int64), b=np.array([2.5]))\n"
    "finally:\n"
    "    zipfile.ZIP64_LIMIT, zipfile.ZIP_FILECOUNT_LIMIT = saved\n"
    "np.savez(p('extra.npz'), x=np.array([7], dtype=np.int32))\n"
    "with zipfile.ZipFile(p('extra.npz'), 'a') as z:\n"
    "    z.writestr('README.txt', 'not an array')\n"
    "# safetensors from the format's description\n"
    "arrays = {'emb': (np.arange(6, dtype=np.float32) / 8).reshape(2, 3),\n"
    "          'ids': np.array([-1, 0, 2**40], dtype=np.int64),\n"
    "          'mask': np.array([True, False]), 'pix': np.array([0, 255], dtype=np.uint8)}\n"
    "codes = {'float32': 'F32', 'int64': 'I64', 'bool': 'BOOL', 'uint8': 'U8'}\n"
    "header, blob = {'__metadata__': {'source': 'numpy'}}, b''\n"
    "for name, a in arrays.items():\n"
    "    raw = a.astype(a.dtype.newbyteorder('<')).tobytes()\n"
    "    header[name] = {'dtype': codes[a.dtype.name], 'shape': list(a.shape),\n"
    "                    'data_offsets': [len(blob), len(blob) + len(raw)]}\n"
    "    blob += raw\n"
    "h = json.dumps(header).encode()\n"
    "h += b' ' * (-(8 + len(h)) % 8)\n"
    "with open(p('spec.safetensors'), 'wb') as f:\n"
    "    f.write(struct.pack('<Q', len(h)) + h + blob)\n"
    "try:\n"
    "    from safetensors.numpy import save_file\n"
    "    save_file(arrays, p('lib.safetensors'))\n"
    "except ImportError:\n"
    "    pass\n";

static const char check_py[] =
    "import os, sys, json, struct\n"
    "import numpy as np\n"
    "d = sys.argv[1]\n"
    "p = lambda n: os.path.join(d, n)\n"
    "fails = []\n"
    "def eq(what, got, want, dtype):\n"
    "    want = np.asarray(want, dtype=dtype)\n"
    "    if got.dtype != want.dtype or got.shape != want.shape or not np.array_equal(got, want):\n"
    "        fails.append('%s: got %r %s %s, want %r %s %s' % (what, got, got.dtype, got.shape,\n"
    "                     want, want.dtype, want.shape))\n"
    "eq('g_f32', np.load(p('g_f32.npy')), np.arange(6).reshape(2, 3) - 2.5, np.float32)\n"
    "eq('g_f64', np.load(p('g_f64.npy')), [0.1, -1e300, 0.0], np.float64)\n"
    "eq('g_i32', np.load(p('g_i32.npy')), [-2147483648, 7], np.int32)\n"
    "eq('g_i64', np.load(p('g_i64.npy')), [2**62 + 1, -3], np.int64)\n"
    "eq('g_bool', np.load(p('g_bool.npy')), [[True, False], [False, True]], np.bool_)\n"
    "eq('g_scalar', np.load(p('g_scalar.npy')), -0.5, np.float64)\n"
    "eq('g_empty', np.load(p('g_empty.npy')), np.zeros((0, 2)), np.int64)\n"
    "eq('g_view', np.load(p('g_view.npy')), [[0, 3], [1, 4], [2, 5]], np.float32)\n"
    "eq('g_slice', np.load(p('g_slice.npy')), [0, 3, 6, 9], np.int64)\n"
    "if os.path.exists(p('g_c64.npy')):\n"
    "    eq('g_c64', np.load(p('g_c64.npy')), [1 + 2j, -3.5 + 0j], np.complex64)\n"
    "    eq('g_c128', np.load(p('g_c128.npy')), [[1e300 - 0.5j], [-0.0 + 4j]], np.complex128)\n"
    "z = np.load(p('g.npz'))\n"
    "if list(z.files) != ['w', 'b', 'nested/name']:\n"
    "    fails.append('g.npz names: %r' % (z.files,))\n"
    "else:\n"
    "    eq('g.npz w', z['w'], [[1, 2], [3, 4]], np.float32)\n"
    "    eq('g.npz b', z['b'], [True, False, True], np.bool_)\n"
    "    eq('g.npz nested/name', z['nested/name'], 42, np.int32)\n"
    "with open(p('g.safetensors'), 'rb') as f:\n"
    "    n = struct.unpack('<Q', f.read(8))[0]\n"
    "    header = json.loads(f.read(n))\n"
    "    blob = f.read()\n"
    "if (8 + n) % 8:\n"
    "    fails.append('g.safetensors: data not aligned to 8 bytes (header %d bytes)' % n)\n"
    "types = {'F32': '<f4', 'F64': '<f8', 'I32': '<i4', 'I64': '<i8', 'BOOL': '?'}\n"
    "def st(name):\n"
    "    e = header[name]\n"
    "    b, end = e['data_offsets']\n"
    "    return np.frombuffer(blob[b:end], dtype=types[e['dtype']]).reshape(e['shape'])\n"
    "if list(header) != ['a', 'b', 'c', 's']:\n"
    "    fails.append('g.safetensors names: %r' % (list(header),))\n"
    "else:\n"
    "    eq('st a', st('a'), [[1, 2], [3, 4]], np.float32)\n"
    "    eq('st b', st('b'), [-1, 0, 2**40], np.int64)\n"
    "    eq('st c', st('c'), [True, False], np.bool_)\n"
    "    eq('st s', st('s'), 2.5, np.float64)\n"
    "try:\n"
    "    from safetensors.numpy import load_file\n"
    "    lib = load_file(p('g.safetensors'))\n"
    "    eq('safetensors a', lib['a'], [[1, 2], [3, 4]], np.float32)\n"
    "    eq('safetensors b', lib['b'], [-1, 0, 2**40], np.int64)\n"
    "except ImportError:\n"
    "    print('note: the safetensors package is not installed; checked the format by hand')\n"
    "for f in fails:\n"
    "    print('MISMATCH', f)\n"
    "sys.exit(1 if fails else 0)\n";

/* Runs `python script dir`; returns its exit status (-1 when it could not run). */
static int run_python(const char *script_name, const char *text) {
    const char *script = path_of(script_name);
    FILE *f = fopen(script, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s: %s\n", script, strerror(errno));
        return -1;
    }
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' '%s' '%s'", python, script, dir);
    int st = system(cmd);
    if (st == -1 || !WIFEXITED(st)) return -1;
    return WEXITSTATUS(st);
}

/* ------------------------------------------------------------ graft reads NumPy's files */
static gf_tensor *load(const char *name) {
    gf_tensor *t = gf_load_npy(path_of(name), NULL);
    CHECK_MSG(t != NULL, "%s: %s", name, gf_last_error());
    return t;
}

/* t has the shape and dtype given and, in row-major order, the values. */
static void expect(gf_tensor *t, const char *what, gf_dtype dt, int rank, const int64_t *sizes,
                   const double *values) {
    if (!t) return;
    CHECK_MSG(gf_tensor_dtype(t) == dt, "%s: dtype %s", what, gf_dtype_name(gf_tensor_dtype(t)));
    CHECK_MSG(gf_tensor_rank(t) == rank, "%s: rank %d", what, gf_tensor_rank(t));
    int64_t n = 1;
    for (int i = 0; i < rank && i < gf_tensor_rank(t); i++) {
        CHECK_MSG(gf_tensor_size(t, i) == sizes[i], "%s: size %d", what, i);
        n *= sizes[i];
    }
    double got[64];
    if (n > 64 || gf_tensor_numel(t) != n) return;
    gf_tensor *f = gf_to_dtype(t, GF_F64);
    if (n && (!f || gf_tensor_to_host(f, got, (size_t)n * sizeof(double)) != GF_OK)) {
        CHECK_MSG(0, "%s: %s", what, gf_last_error());
        gf_tensor_release(f);
        return;
    }
    for (int64_t i = 0; i < n; i++)
        CHECK_MSG(got[i] == values[i], "%s: element %lld is %.17g, expected %.17g", what,
                  (long long)i, got[i], values[i]);
    gf_tensor_release(f);
}

static void refused(const char *name, gf_status status, const char *text) {
    gf_tensor *t = gf_load_npy(path_of(name), NULL);
    CHECK_MSG(t == NULL, "%s loaded", name);
    gf_tensor_release(t);
    CHECK_MSG(gf_last_status() == status, "%s: %s", name, gf_status_name(gf_last_status()));
    CHECK_CONTAINS(gf_last_error(), text);
    gf_clear_error();
}

static void test_numpy_files(void) {
    gf_tensor *t;
    t = load("f32.npy");
    expect(t, "f32", GF_F32, 2, SZ(2, 3), (const double[]){0, 0.25, 0.5, 0.75, 1, 1.25});
    gf_tensor_release(t);
    t = load("f64.npy");
    expect(t, "f64", GF_F64, 2, SZ(2, 2), (const double[]){1.5, -2.25, 1e300, -0.0});
    double neg0 = 0;
    if (t) {
        CHECK(gf_tensor_get(t, SZ(1, 1), &neg0) == GF_OK && signbit(neg0));
    }
    gf_tensor_release(t);
    t = load("i32.npy");
    expect(t, "i32", GF_I32, 1, SZ(3), (const double[]){-2147483648.0, 0, 2147483647.0});
    gf_tensor_release(t);
    t = load("i64.npy");
    int64_t i64[2] = {0, 0};
    CHECK(t && gf_tensor_dtype(t) == GF_I64 && gf_tensor_to_host(t, i64, 16) == GF_OK);
    CHECK(i64[0] == (INT64_C(1) << 62) + 1 && i64[1] == -(INT64_C(1) << 62) - 3);
    gf_tensor_release(t);
    t = load("bool.npy");
    expect(t, "bool", GF_BOOL, 2, SZ(1, 3), (const double[]){1, 0, 1});
    gf_tensor_release(t);
    t = load("scalar.npy");
    expect(t, "scalar", GF_F64, 0, NULL, (const double[]){3.5});
    gf_tensor_release(t);
    t = load("empty.npy");
    expect(t, "empty", GF_F32, 2, SZ(0, 3), NULL);
    gf_tensor_release(t);
    t = load("fortran.npy");
    double fo[24];
    for (int i = 0; i < 24; i++) fo[i] = i; /* element (i, j, k) = 12 i + 4 j + k */
    expect(t, "fortran", GF_I64, 3, SZ(2, 3, 4), fo);
    CHECK(t && gf_tensor_is_contiguous(t));
    gf_tensor_release(t);
    t = load("be_i4.npy");
    expect(t, "be_i4", GF_I32, 1, SZ(5), (const double[]){-2, -1, 0, 1, 2});
    gf_tensor_release(t);
    t = load("be_f8.npy");
    expect(t, "be_f8", GF_F64, 1, SZ(2), (const double[]){0.1, -2.5});
    gf_tensor_release(t);
    t = load("u1.npy");
    expect(t, "u1", GF_I32, 1, SZ(6), (const double[]){250, 251, 252, 253, 254, 255});
    gf_tensor_release(t);
    t = load("i2.npy");
    expect(t, "i2", GF_I32, 1, SZ(2), (const double[]){-32768, 32767});
    gf_tensor_release(t);
    t = load("u2.npy");
    expect(t, "u2", GF_I32, 1, SZ(1), (const double[]){65535});
    gf_tensor_release(t);
    t = load("u4.npy");
    expect(t, "u4", GF_I64, 1, SZ(1), (const double[]){4294967295.0});
    gf_tensor_release(t);
    t = load("u8_ok.npy");
    int64_t big = 0;
    CHECK(t && gf_tensor_to_host(t, &big, 8) == GF_OK && big == INT64_MAX);
    gf_tensor_release(t);
    t = load("view.npy");
    expect(t, "view", GF_F64, 2, SZ(3, 2), (const double[]){0, 2, 4, 6, 8, 10});
    gf_tensor_release(t);
    t = load("v2.npy");
    expect(t, "v2", GF_I32, 1, SZ(5), (const double[]){0, 1, 2, 3, 4});
    gf_tensor_release(t);
    t = load("v3.npy");
    expect(t, "v3", GF_I32, 1, SZ(5), (const double[]){0, 1, 2, 3, 4});
    gf_tensor_release(t);

    refused("u8_big.npy", GF_ERR_OVERFLOW, "18446744073709551615");
    /* f16: the reference plugin stores and computes it (ABI 1.3) */
    t = gf_load_npy(path_of("f2.npy"), NULL);
    CHECK_MSG(t != NULL, "f2.npy: %s", gf_last_error());
    expect(t, "f2", GF_F16, 1, SZ(2), (const double[]){1.0, 0.5});
    gf_tensor_release(t);
    /* complex, where the device stores it (the reference plugin does) */
    gf_device_info info;
    gf_device *dev = gf_device_default();
    if (dev && gf_device_get_info(dev, &info) == GF_OK && ((info.dtypes >> GF_C64) & 1u)) {
        t = load("c8.npy");
        gf_tensor *re = t ? gf_real(t) : NULL, *im = t ? gf_imag(t) : NULL;
        CHECK(t && gf_tensor_dtype(t) == GF_C64);
        expect(re, "c8 re", GF_F32, 1, SZ(2), (const double[]){1, -0.5});
        expect(im, "c8 im", GF_F32, 1, SZ(2), (const double[]){2, -0.25});
        gf_tensor_release(re), gf_tensor_release(im), gf_tensor_release(t);
        t = load("c16.npy");
        re = t ? gf_real(t) : NULL, im = t ? gf_imag(t) : NULL;
        CHECK(t && gf_tensor_dtype(t) == GF_C128);
        expect(re, "c16 re", GF_F64, 2, SZ(2, 1), (const double[]){1e300, 0.1});
        expect(im, "c16 im", GF_F64, 2, SZ(2, 1), (const double[]){-1, 0.2});
        gf_tensor_release(re), gf_tensor_release(im), gf_tensor_release(t);
    } else {
        refused("c8.npy", GF_ERR_DTYPE, "does not store dtype c64");
    }
    refused("c32.npy", GF_ERR_DTYPE, "complex numbers");
    refused("obj.npy", GF_ERR_DTYPE, "pickled");
    refused("rec.npy", GF_ERR_DTYPE, "structured");
    refused("str.npy", GF_ERR_DTYPE, "'<U2'");
}

static void test_numpy_archives(void) {
    gf_tensor_dict *d = gf_load_npz(path_of("plain.npz"), NULL);
    CHECK_MSG(d && gf_tensor_dict_size(d) == 3, "plain.npz: %s", gf_last_error());
    if (d) {
        CHECK(!strcmp(gf_tensor_dict_name(d, 0), "w") && !strcmp(gf_tensor_dict_name(d, 1), "b") &&
              !strcmp(gf_tensor_dict_name(d, 2), "flag"));
        expect(gf_tensor_dict_get(d, "w"), "npz w", GF_F32, 2, SZ(2, 3),
               (const double[]){0, 1, 2, 3, 4, 5});
        expect(gf_tensor_dict_get(d, "b"), "npz b", GF_I64, 1, SZ(2), (const double[]){1, -1});
        expect(gf_tensor_dict_get(d, "flag"), "npz flag", GF_BOOL, 0, NULL, (const double[]){1});
    }
    gf_tensor_dict_destroy(d);
    d = gf_load_npz(path_of("positional.npz"), NULL);
    CHECK(d && gf_tensor_dict_size(d) == 2);
    if (d) {
        expect(gf_tensor_dict_get(d, "arr_0"), "arr_0", GF_I32, 1, SZ(3), (const double[]){0, 1, 2});
        expect(gf_tensor_dict_get(d, "arr_1"), "arr_1", GF_F64, 2, SZ(2, 2),
               (const double[]){1, 1, 1, 1});
    }
    gf_tensor_dict_destroy(d);
    d = gf_load_npz(path_of("zip64.npz"), NULL);
    CHECK_MSG(d && gf_tensor_dict_size(d) == 2, "zip64.npz: %s", gf_last_error());
    if (d) {
        expect(gf_tensor_dict_get(d, "a"), "zip64 a", GF_I64, 1, SZ(4), (const double[]){0, 1, 2, 3});
        expect(gf_tensor_dict_get(d, "b"), "zip64 b", GF_F64, 1, SZ(1), (const double[]){2.5});
    }
    gf_tensor_dict_destroy(d);
    /* The same archive with the classic end record saturated (0xFFFF entries,
     * 0xFFFFFFFF size and offset), as a writer may leave it: the directory
     * must then be taken from the zip64 end record. */
    FILE *zf = fopen(path_of("zip64.npz"), "rb");
    unsigned char zb[4096];
    size_t zn = zf ? fread(zb, 1, sizeof zb, zf) : 0;
    if (zf) fclose(zf);
    CHECK(zn > 22 && zn < sizeof zb && zb[zn - 22] == 'P' && zb[zn - 21] == 'K');
    if (zn > 22 && zn < sizeof zb) {
        memset(zb + zn - 22 + 8, 0xFF, 12); /* entries on disk, total, directory size, offset */
        zf = fopen(path_of("zip64_saturated.npz"), "wb");
        CHECK(zf && fwrite(zb, 1, zn, zf) == zn && fclose(zf) == 0);
        d = gf_load_npz(path_of("zip64_saturated.npz"), NULL);
        CHECK_MSG(d && gf_tensor_dict_size(d) == 2, "zip64_saturated.npz: %s", gf_last_error());
        if (d) expect(gf_tensor_dict_get(d, "b"), "zip64 b", GF_F64, 1, SZ(1), (const double[]){2.5});
        gf_tensor_dict_destroy(d);
    }
    d = gf_load_npz(path_of("extra.npz"), NULL);
    CHECK_MSG(d && gf_tensor_dict_size(d) == 1, "extra.npz: %s", gf_last_error());
    if (d) expect(gf_tensor_dict_get(d, "x"), "extra x", GF_I32, 1, SZ(1), (const double[]){7});
    gf_tensor_dict_destroy(d);
    d = gf_load_npz(path_of("compressed.npz"), NULL);
    CHECK(d == NULL);
    CHECK(gf_last_status() == GF_ERR_UNSUPPORTED);
    CHECK_CONTAINS(gf_last_error(), "savez_compressed");
    gf_clear_error();
    gf_tensor_dict_destroy(d);

    for (int k = 0; k < 2; k++) {
        const char *name = k ? "lib.safetensors" : "spec.safetensors";
        FILE *probe = fopen(path_of(name), "rb");
        if (!probe) {
            printf("note: %s not written (the safetensors package is not installed)\n", name);
            continue;
        }
        fclose(probe);
        d = gf_load_safetensors(path_of(name), NULL);
        CHECK_MSG(d && gf_tensor_dict_size(d) == 4, "%s: %s", name, gf_last_error());
        if (d) {
            expect(gf_tensor_dict_get(d, "emb"), "emb", GF_F32, 2, SZ(2, 3),
                   (const double[]){0, 0.125, 0.25, 0.375, 0.5, 0.625});
            expect(gf_tensor_dict_get(d, "ids"), "ids", GF_I64, 1, SZ(3),
                   (const double[]){-1, 0, 1099511627776.0});
            expect(gf_tensor_dict_get(d, "mask"), "mask", GF_BOOL, 1, SZ(2), (const double[]){1, 0});
            expect(gf_tensor_dict_get(d, "pix"), "pix", GF_I32, 1, SZ(2), (const double[]){0, 255});
        }
        gf_tensor_dict_destroy(d);
    }
}

/* ------------------------------------------------------------ NumPy reads graft's files */
static void save(const gf_tensor *t, const char *name) {
    CHECK_MSG(t && gf_save_npy(t, path_of(name)) == GF_OK, "%s: %s", name, gf_last_error());
}

static void write_graft_files(void) {
    gf_tensor *a = gf_arange(-2.5, 3.5, 1, GF_F32, NULL);
    gf_tensor *a23 = gf_view(a, SZ(2, 3), 2);
    save(a23, "g_f32.npy");
    const double f64[3] = {0.1, -1e300, 0.0};
    gf_tensor *b = gf_from_data(f64, SZ(3), 1, GF_F64, NULL);
    save(b, "g_f64.npy");
    const int32_t i32[2] = {INT32_MIN, 7};
    gf_tensor *c = gf_from_data(i32, SZ(2), 1, GF_I32, NULL);
    save(c, "g_i32.npy");
    const int64_t i64[2] = {(INT64_C(1) << 62) + 1, -3};
    gf_tensor *d = gf_from_data(i64, SZ(2), 1, GF_I64, NULL);
    save(d, "g_i64.npy");
    const uint8_t bo[4] = {1, 0, 0, 1};
    gf_tensor *e = gf_from_data(bo, SZ(2, 2), 2, GF_BOOL, NULL);
    save(e, "g_bool.npy");
    gf_tensor *s = gf_scalar(-0.5, GF_F64, NULL);
    save(s, "g_scalar.npy");
    gf_tensor *z = gf_zeros(SZ(0, 2), 2, GF_I64, NULL);
    save(z, "g_empty.npy");
    gf_tensor *r = gf_arange(0, 6, 1, GF_F32, NULL);
    gf_tensor *r23 = gf_view(r, SZ(2, 3), 2);
    gf_tensor *rt = gf_transpose(r23, 0, 1);
    save(rt, "g_view.npy");
    gf_tensor *q = gf_arange(0, 10, 1, GF_I64, NULL);
    gf_tensor *qs = gf_slice(q, 0, 0, 10, 3);
    save(qs, "g_slice.npy");

    gf_device_info info;
    gf_device *dev = gf_device_default();
    if (dev && gf_device_get_info(dev, &info) == GF_OK && ((info.dtypes >> GF_C64) & 1u)) {
        const float c64[4] = {1, 2, -3.5f, 0};
        const double c128[4] = {1e300, -0.5, -0.0, 4};
        gf_tensor *x = gf_from_data(c64, SZ(2), 1, GF_C64, NULL);
        gf_tensor *y = gf_from_data(c128, SZ(2, 1), 2, GF_C128, NULL);
        save(x, "g_c64.npy");
        save(y, "g_c128.npy");
        gf_tensor_release(x);
        gf_tensor_release(y);
    }

    const float w[4] = {1, 2, 3, 4};
    gf_tensor *tw = gf_from_data(w, SZ(2, 2), 2, GF_F32, NULL);
    const uint8_t wb[3] = {1, 0, 1};
    gf_tensor *tb = gf_from_data(wb, SZ(3), 1, GF_BOOL, NULL);
    gf_tensor *tn = gf_scalar(42, GF_I32, NULL);
    const char *names[] = {"w", "b", "nested/name"};
    const gf_tensor *ts[] = {tw, tb, tn};
    CHECK_MSG(gf_save_npz(names, ts, 3, path_of("g.npz")) == GF_OK, "%s", gf_last_error());

    const int64_t sb[3] = {-1, 0, INT64_C(1) << 40};
    gf_tensor *t2 = gf_from_data(sb, SZ(3), 1, GF_I64, NULL);
    const uint8_t sc[2] = {1, 0};
    gf_tensor *t3 = gf_from_data(sc, SZ(2), 1, GF_BOOL, NULL);
    gf_tensor *t4 = gf_scalar(2.5, GF_F64, NULL);
    const char *snames[] = {"a", "b", "c", "s"};
    const gf_tensor *sts[] = {tw, t2, t3, t4};
    CHECK_MSG(gf_save_safetensors(snames, sts, 4, path_of("g.safetensors")) == GF_OK, "%s",
              gf_last_error());

    gf_tensor *all[] = {a, a23, b, c, d, e, s, z, r, r23, rt, q, qs, tw, tb, tn, t2, t3, t4};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) gf_tensor_release(all[i]);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: numpy_check <work dir> <python3 with numpy>\n");
        return 2;
    }
    dir = argv[1];
    python = argv[2];
    if (!python[0]) {
        printf("SKIP: no python3 with numpy was found when the build was configured; install "
               "python3-numpy and re-run cmake\n");
        return 77;
    }
    if (strchr(python, '\'') || strchr(dir, '\'')) {
        fprintf(stderr, "paths with a single quote are not supported by this test\n");
        return 2;
    }
    char probe[2048];
    snprintf(probe, sizeof probe, "'%s' -c 'import numpy' 2>/dev/null", python);
    int st = system(probe);
    if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        printf("SKIP: %s cannot import numpy (any more); install python3-numpy\n", python);
        return 77;
    }
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "cannot create %s: %s\n", dir, strerror(errno));
        return 1;
    }
    int rc = run_python("gen.py", gen_py);
    CHECK_MSG(rc == 0, "gen.py exited with %d", rc);
    if (rc == 0) {
        RUN(test_numpy_files);
        RUN(test_numpy_archives);
    }
    RUN(write_graft_files);
    rc = run_python("check.py", check_py);
    CHECK_MSG(rc == 0, "NumPy found graft's files wrong (check.py exited with %d)", rc);
    return CHECK_REPORT();
}
