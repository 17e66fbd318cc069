/* SPDX-License-Identifier: BSD-3-Clause */
/* test_module_extra.c — gf_module_to (module.to(dtype) against torch's
 * model.double() and against an f64 model built with the same values; a
 * device move where a second device exists; gradients moved; identity
 * kept; every error path leaving the module unchanged), the shape layers
 * (PixelShuffle, PixelUnshuffle, Upsample, Flatten(start, end), Unflatten)
 * against torch's outputs and input gradients, and ModuleList
 * (tools/expected/gen_module_extra.py). */
#include <graft.h>
#include <math.h>
#include <string.h>

#include "autograd/module_extra_expected.h"
#include "autograd/test_rules_util.h"
#include "check.h"

/* Compares any float tensor (read as f64) with torch's values. */
static void near(const char *what, const gf_tensor *t, const double *want, int64_t n, double tol) {
    gf_tensor *d = t ? gf_to_dtype(t, GF_F64) : NULL;
    gf_tensor *h = d ? gf_to_device(d, gf_device_find("cpu")) : NULL;
    ag_near(what, h, want, n, tol);
    gf_tensor_release(d);
    gf_tensor_release(h);
}

/* nn.Sequential(Linear(4, 6), BatchNorm1d(6), ReLU(), Linear(6, 3)) with
 * torch's values (num_batches_tracked as i64). */
static gf_module *to_model(gf_dtype dt) {
    gf_module *parts[4] = {gf_nn_linear(4, 6, true, dt, NULL),
                           gf_nn_batch_norm(6, 1e-5, 0.1, true, true, dt, NULL), gf_nn_relu(),
                           gf_nn_linear(6, 3, true, dt, NULL)};
    gf_module *m = gf_nn_sequential(parts, 4);
    for (int i = 0; i < 4; i++) gf_module_release(parts[i]);
    CHECK_MSG(m != NULL, "%s", gf_last_error());
    gf_tensor_dict *d = gf_tensor_dict_new();
    for (int i = 0; i < MX_TO_N; i++) {
        const mx_entry *e = &mx_to_state[i];
        gf_tensor *f = gf_from_data(e->v, e->sizes, e->rank, GF_F64, NULL);
        gf_tensor *t = strstr(e->name, "num_batches") ? gf_to_dtype(f, GF_I64) : gf_tensor_retain(f);
        CHECK(t && gf_tensor_dict_set(d, e->name, t) == GF_OK);
        gf_tensor_release(f);
        gf_tensor_release(t);
    }
    CHECK_MSG(m && gf_module_load_state_dict(m, d, true, NULL) == GF_OK, "%s", gf_last_error());
    gf_tensor_dict_destroy(d);
    CHECK(gf_module_train(m, false) == GF_OK);
    return m;
}

static gf_tensor *to_input(gf_dtype dt, gf_device *dev) {
    gf_tensor *x = gf_from_data(mx_to_x, SZ(3, 4), 2, GF_F64, NULL);
    gf_tensor *c = gf_to_dtype(x, dt);
    gf_tensor *r = c && dev ? gf_to_device(c, dev) : gf_tensor_retain(c);
    gf_tensor_release(x);
    gf_tensor_release(c);
    return r;
}

/* Forward of sum(m(x)) and backward; returns the output. */
static gf_tensor *run_backward(gf_module *m, gf_tensor *x) {
    gf_tensor *y = gf_module_forward(m, &x, 1);
    gf_tensor *s = y ? gf_sum(y, NULL, 0, false) : NULL;
    CHECK_MSG(s && gf_backward(s, NULL, NULL) == GF_OK, "%s", gf_last_error());
    gf_tensor_release(s);
    return y;
}

static void test_to_dtype(void) {
    gf_module *m = to_model(GF_F32);
    gf_tensor *w0 = gf_module_get_parameter(m, "0.weight");
    gf_tensor *nbt = gf_module_get_buffer(m, "1.num_batches_tracked");
    /* an f32 gradient first: module.to moves it too */
    gf_tensor *x32 = to_input(GF_F32, NULL);
    gf_tensor_release(run_backward(m, x32));
    gf_tensor *g32 = gf_tensor_grad(w0);
    double before[24];
    CHECK(ag_read(g32, before, 24) == 24);
    CHECK_OK(gf_module_to(m, NULL, GF_F64));
    /* the same tensors (identity), now f64, still parameters requiring grad */
    CHECK(gf_module_get_parameter(m, "0.weight") == w0);
    CHECK(gf_tensor_dtype(w0) == GF_F64 && gf_tensor_requires_grad(w0) && gf_tensor_is_leaf(w0));
    CHECK(gf_tensor_dtype(gf_module_get_parameter(m, "1.bias")) == GF_F64);
    CHECK(gf_tensor_dtype(gf_module_get_buffer(m, "1.running_var")) == GF_F64);
    /* integer buffers keep their dtype (PyTorch casts floating-point ones) */
    CHECK(gf_module_get_buffer(m, "1.num_batches_tracked") == nbt);
    CHECK(gf_tensor_dtype(nbt) == GF_I64 && ag_item(nbt) == 1.0);
    gf_tensor *g64 = gf_tensor_grad(w0);
    CHECK(g64 == g32 && gf_tensor_dtype(g64) == GF_F64);
    ag_near("moved 0.weight.grad", g64, before, 24, 0);
    gf_tensor_release(g64);
    gf_tensor_release(g32);
    /* the state dict has the new dtypes */
    gf_tensor_dict *sd = gf_module_state_dict(m);
    for (int i = 0; sd && i < gf_tensor_dict_size(sd); i++) {
        gf_tensor *t = gf_tensor_dict_get(sd, gf_tensor_dict_name(sd, i));
        bool nb = strstr(gf_tensor_dict_name(sd, i), "num_batches") != NULL;
        CHECK_MSG(gf_tensor_dtype(t) == (nb ? GF_I64 : GF_F64), "%s", gf_tensor_dict_name(sd, i));
    }
    gf_tensor_dict_destroy(sd);
    /* torch's model.double(): output and gradients */
    CHECK_OK(gf_module_zero_grad(m));
    gf_tensor *x = to_input(GF_F64, NULL);
    gf_tensor *y = run_backward(m, x);
    ag_near("to(f64) output", y, mx_to_y, 9, 1e-12);
    gf_tensor *gw = gf_tensor_grad(w0);
    gf_tensor *gb = gf_tensor_grad(gf_module_get_parameter(m, "1.weight"));
    ag_near("to(f64) 0.weight.grad", gw, mx_to_grad_w0, 24, 1e-12);
    ag_near("to(f64) 1.weight.grad", gb, mx_to_grad_bn_w, 6, 1e-12);
    /* the same as an f64 model made with those values (bit for bit on the CPU;
     * 1e-14 leaves room for a GPU library that picks another kernel) */
    gf_module *ref = to_model(GF_F64);
    gf_tensor *yr = gf_module_forward(ref, &x, 1);
    double want[9];
    CHECK(ag_read(yr, want, 9) == 9);
    ag_near("to(f64) against an f64 model", y, want, 9, 1e-14);
    /* and back to f32: the f32 values again */
    CHECK_OK(gf_module_to(m, NULL, GF_F32));
    CHECK(gf_tensor_dtype(w0) == GF_F32 && gf_tensor_dtype(nbt) == GF_I64);
    near("to(f32) 0.weight", w0, mx_to_v0, 24, 0);
    /* keeping both is a no-op */
    CHECK_OK(gf_module_to(m, NULL, GF_MODULE_KEEP_DTYPE));
    CHECK(gf_tensor_dtype(w0) == GF_F32);
    gf_tensor *items[] = {x32, x, y, gw, gb, yr};
    for (size_t i = 0; i < sizeof items / sizeof items[0]; i++) gf_tensor_release(items[i]);
    gf_module_release(ref);
    gf_module_release(m);
}

/* A child shared by two parents (tied): converted once. */
static void test_to_shared(void) {
    gf_module *lin = gf_nn_linear(2, 2, true, GF_F32, NULL);
    gf_module *m = gf_module_new("Module");
    CHECK_OK(gf_module_register_module(m, "a", lin));
    CHECK_OK(gf_module_register_module(m, "b", lin));
    gf_tensor *buf = gf_ones(SZ(2), 1, GF_F32, NULL);
    CHECK_OK(gf_module_register_buffer(m, "buf", buf, true));
    CHECK_OK(gf_module_register_buffer(lin, "same_buf", buf, false));
    CHECK_OK(gf_module_to(m, NULL, GF_F64));
    CHECK(gf_module_get_parameter(m, "a.weight") == gf_module_get_parameter(m, "b.weight"));
    CHECK(gf_tensor_dtype(gf_module_get_parameter(m, "b.weight")) == GF_F64);
    CHECK(gf_module_get_buffer(m, "a.same_buf") == buf && gf_tensor_dtype(buf) == GF_F64);
    gf_tensor *s = gf_sum(buf, NULL, 0, false);
    CHECK(ag_item(s) == 2.0);
    gf_tensor_release(s);
    gf_tensor_release(buf);
    gf_module_release(lin);
    gf_module_release(m);
}

/* Default device -> another device (cpu:0 <-> cpu:1 with cpu_onednn and
 * the reference, a GPU <-> cpu) and back, with the gradients. */
static void test_to_device(void) {
    gf_device *d0 = gf_device_default(), *d1 = NULL;
    for (int i = 0; i < gf_device_count() && !d1; i++)
        if (gf_device_at(i) != d0) d1 = gf_device_at(i);
    if (!d1) {
        fprintf(stderr, "one device only: no device move to check here\n");
        return;
    }
    fprintf(stderr, "moving %s -> %s -> %s\n", gf_device_spec(d0), gf_device_spec(d1),
            gf_device_spec(d0));
    gf_module *m = to_model(GF_F64);
    gf_tensor *w0 = gf_module_get_parameter(m, "0.weight");
    gf_tensor *x = to_input(GF_F64, NULL);
    gf_tensor_release(run_backward(m, x));
    CHECK_OK(gf_module_to(m, gf_device_spec(d1), GF_MODULE_KEEP_DTYPE));
    CHECK(gf_module_get_parameter(m, "0.weight") == w0 && gf_tensor_device(w0) == d1);
    gf_tensor *g = gf_tensor_grad(w0);
    CHECK(g && gf_tensor_device(g) == d1);
    near("moved 0.weight.grad", g, mx_to_grad_w0, 24, 1e-10);
    gf_tensor_release(g);
    gf_tensor *nbt = gf_module_get_buffer(m, "1.num_batches_tracked");
    CHECK(gf_tensor_device(nbt) == d1 && gf_tensor_dtype(nbt) == GF_I64);
    CHECK(gf_tensor_device(gf_module_get_buffer(m, "1.running_mean")) == d1);
    CHECK_OK(gf_module_zero_grad(m));
    gf_tensor *x1 = gf_to_device(x, d1);
    gf_tensor *y1 = run_backward(m, x1);
    CHECK(y1 && gf_tensor_device(y1) == d1);
    near("output on the other device", y1, mx_to_y, 9, 1e-10);
    /* device and dtype at once, back to the default device */
    CHECK_OK(gf_module_to(m, gf_device_spec(d0), GF_F32));
    CHECK(gf_tensor_device(w0) == d0 && gf_tensor_dtype(w0) == GF_F32);
    g = gf_tensor_grad(w0);
    CHECK(g && gf_tensor_device(g) == d0 && gf_tensor_dtype(g) == GF_F32);
    near("moved back 0.weight.grad", g, mx_to_grad_w0, 24, 1e-6);
    gf_tensor_release(g);
    gf_tensor *items[] = {x, x1, y1};
    for (size_t i = 0; i < sizeof items / sizeof items[0]; i++) gf_tensor_release(items[i]);
    gf_module_release(m);
}

static void test_to_errors(void) {
    gf_module *m = to_model(GF_F32);
    gf_tensor *w0 = gf_module_get_parameter(m, "0.weight");
    gf_device *dev = gf_tensor_device(w0);
    CHECK_ERR(gf_module_to(NULL, NULL, GF_F64), GF_ERR_INVALID, "gf_module_to", "NULL");
    CHECK_ERR(gf_module_to(m, NULL, GF_I64), GF_ERR_DTYPE, "gf_module_to", "i64",
              "floating-point or complex", "GF_MODULE_KEEP_DTYPE");
    CHECK_ERR(gf_module_to(m, NULL, (gf_dtype)42), GF_ERR_DTYPE, "(unknown)");
    CHECK_ERR(gf_module_to(m, "nosuchdevice:3", GF_F64), GF_ERR_NOT_FOUND, "gf_module_to",
              "nosuchdevice", "graft-info", "unchanged");
    CHECK(gf_module_to(m, "cpu:x", GF_F64) != GF_OK);
    CHECK_CONTAINS(gf_last_error(), "unchanged");
    /* a dtype the device does not store: the conversion fails, nothing moves */
    gf_device_info info;
    CHECK_OK(gf_device_get_info(dev, &info));
    if (!(info.dtypes & (1u << GF_F16))) {
        CHECK_ERR(gf_module_to(m, NULL, GF_F16), GF_ERR_DTYPE, "gf_module_to",
                  "parameter '0.weight'", "unchanged");
    }
    CHECK(gf_module_get_parameter(m, "0.weight") == w0 && gf_tensor_dtype(w0) == GF_F32 &&
          gf_tensor_device(w0) == dev);
    near("unchanged 0.weight", w0, mx_to_v0, 24, 0);
    gf_module_release(m);
}

/* module.to(complex dtype), as torch's model.to(torch.complex128): the
 * floating-point parameters become complex (imaginary parts zero) and a
 * complex input then goes through the layer (linear: x W^T + b, no
 * conjugation); a complex module to a real dtype fails and leaves it as it
 * was (graft never drops an imaginary part). Devices that do not store
 * c128 refuse the move with DTYPE, the module unchanged. */
static void test_to_complex(void) {
    gf_module *m = gf_nn_linear(4, 3, true, GF_F64, NULL);
    CHECK_MSG(m != NULL, "%s", gf_last_error());
    if (!m) return;
    gf_tensor *w = gf_module_get_parameter(m, "weight"), *b = gf_module_get_parameter(m, "bias");
    double wv[12], bv[3];
    CHECK(ag_read(w, wv, 12) == 12 && ag_read(b, bv, 3) == 3);
    gf_device_info info;
    CHECK_OK(gf_device_get_info(gf_tensor_device(w), &info));
    if (!(info.dtypes & (1u << GF_C128))) {
        CHECK_ERR(gf_module_to(m, NULL, GF_C128), GF_ERR_DTYPE, "gf_module_to", "c128",
                  "unchanged");
        CHECK(gf_tensor_dtype(w) == GF_F64);
        gf_module_release(m);
        return;
    }
    CHECK_OK(gf_module_to(m, NULL, GF_C128));
    CHECK(gf_module_get_parameter(m, "weight") == w && gf_tensor_dtype(w) == GF_C128 &&
          gf_tensor_dtype(b) == GF_C128 && gf_tensor_requires_grad(w));
    /* x [2, 4] complex; y = x W^T + b against the same sum on the host */
    double xr[8], xi[8];
    for (int i = 0; i < 8; i++) xr[i] = 0.3 * i - 1.0, xi[i] = 0.7 - 0.2 * i;
    gf_tensor *re = gf_from_data(xr, SZ(2, 4), 2, GF_F64, gf_tensor_device(w));
    gf_tensor *im = gf_from_data(xi, SZ(2, 4), 2, GF_F64, gf_tensor_device(w));
    gf_tensor *x = gf_complex(re, im);
    gf_tensor *y = gf_module_forward(m, &x, 1);
    CHECK_MSG(y && gf_tensor_dtype(y) == GF_C128, "%s", gf_last_error());
    for (int64_t r = 0; y && r < 2; r++)
        for (int64_t o = 0; o < 3; o++) {
            double wr = bv[o], wi = 0;
            for (int k = 0; k < 4; k++) {
                wr += xr[r * 4 + k] * wv[o * 4 + k];
                wi += xi[r * 4 + k] * wv[o * 4 + k];
            }
            double gr = NAN, gi = NAN;
            CHECK(gf_tensor_get_complex(y, (const int64_t[]){r, o}, &gr, &gi) == GF_OK);
            CHECK_MSG(fabs(gr - wr) < 1e-12 && fabs(gi - wi) < 1e-12,
                      "y[%lld,%lld] %g%+gi vs %g%+gi", (long long)r, (long long)o, gr, gi, wr, wi);
        }
    /* back to a real dtype: refused, nothing changed */
    CHECK_ERR(gf_module_to(m, NULL, GF_F64), GF_ERR_DTYPE, "gf_module_to", "parameter 'weight'",
              "gf_real", "unchanged");
    CHECK(gf_tensor_dtype(w) == GF_C128 && gf_tensor_dtype(b) == GF_C128);
    gf_tensor *items[] = {re, im, x, y};
    for (size_t i = 0; i < sizeof items / sizeof items[0]; i++) gf_tensor_release(items[i]);
    gf_module_release(m);
}

/* ------------------------------------------------------------ shape layers */
static void layer_case(const char *what, gf_module *m, const double *xv, const int64_t *xs,
                       const double *yv, const int64_t *ys, const double *gx) {
    CHECK_MSG(m != NULL, "%s: %s", what, gf_last_error());
    if (!m) return;
    int xr = 0, yr = 0;
    int64_t xn = 1, yn = 1;
    while (xr < 4 && xs[xr]) xn *= xs[xr++];
    while (yr < 8 && ys[yr]) yn *= ys[yr++];
    gf_tensor *x = ag_leaf_t(xv, xs, xr);
    gf_tensor *y = gf_module_forward(m, &x, 1);
    CHECK_MSG(y && gf_tensor_rank(y) == yr, "%s: rank %d, torch %d (%s)", what,
              gf_tensor_rank(y), yr, gf_last_error());
    for (int d = 0; y && d < yr && d < gf_tensor_rank(y); d++)
        CHECK_MSG(gf_tensor_size(y, d) == ys[d], "%s: size %d is %lld, torch %lld", what, d,
                  (long long)gf_tensor_size(y, d), (long long)ys[d]);
    ag_near(what, y, yv, yn, 1e-12);
    /* d/dx sum(y * w), w = linspace(-1, 1, numel) as torch */
    double *w = malloc(sizeof(double) * (size_t)yn);
    for (int64_t i = 0; i < yn; i++)
        w[i] = yn > 1 ? -1.0 + 2.0 * (double)i / (double)(yn - 1) : -1.0;
    gf_tensor *wt = y ? gf_from_data(w, gf_tensor_sizes(y), yr, GF_F64, NULL) : NULL;
    gf_tensor *p = wt ? gf_mul(y, wt) : NULL;
    gf_tensor *s = p ? gf_sum(p, NULL, 0, false) : NULL;
    CHECK_MSG(s && gf_backward(s, NULL, NULL) == GF_OK, "%s: %s", what, gf_last_error());
    gf_tensor *g = gf_tensor_grad(x);
    char gname[96];
    snprintf(gname, sizeof gname, "%s input grad", what);
    ag_near(gname, g, gx, xn, 1e-12);
    gf_tensor *items[] = {x, y, wt, p, s, g};
    for (size_t i = 0; i < sizeof items / sizeof items[0]; i++) gf_tensor_release(items[i]);
    free(w);
    gf_module_release(m);
}

#define CASE(what, m, tag) \
    layer_case(what, m, mx_##tag##_x, mx_##tag##_xs, mx_##tag##_y, mx_##tag##_ys, mx_##tag##_gx)

static void test_shape_layers(void) {
    CASE("PixelShuffle(2)", gf_nn_pixel_shuffle(2), shuffle);
    CASE("PixelUnshuffle(2)", gf_nn_pixel_unshuffle(2), unshuffle);
    gf_interpolate_opts o = {.mode = GF_INTERP_NEAREST, .scale_factor = {2, 2}};
    CASE("Upsample(scale_factor=2, nearest)", gf_nn_upsample(&o), up_nearest);
    o = (gf_interpolate_opts){.mode = GF_INTERP_BILINEAR, .size = {5, 7}, .align_corners = true};
    CASE("Upsample(size=(5, 7), bilinear, align_corners)", gf_nn_upsample(&o), up_bilinear_ac);
    o = (gf_interpolate_opts){.mode = GF_INTERP_BILINEAR, .scale_factor = {1.5, 1.5}};
    CASE("Upsample(scale_factor=1.5, bilinear)", gf_nn_upsample(&o), up_bilinear);
    o = (gf_interpolate_opts){.mode = GF_INTERP_LINEAR, .size = {7}};
    CASE("Upsample(size=7, linear)", gf_nn_upsample(&o), up_linear);
    CASE("Flatten(0, 2)", gf_nn_flatten_dims(0, 2), flatten);
    CASE("Flatten(-2, -1)", gf_nn_flatten_dims(-2, -1), flatten_neg);
    CASE("Unflatten(1, (2, -1))", gf_nn_unflatten(1, SZ(2, -1), 2), unflatten);
    /* the type names PyTorch prints */
    const char *names[][2] = {{"PixelShuffle", "PixelUnshuffle"}, {"Upsample", "Unflatten"}};
    gf_module *ms[] = {gf_nn_pixel_shuffle(3), gf_nn_pixel_unshuffle(3), gf_nn_upsample(&o),
                       gf_nn_unflatten(0, SZ(1), 1)};
    for (int i = 0; i < 4; i++) {
        CHECK(!strcmp(gf_module_type_name(ms[i]), names[i / 2][i % 2]));
        CHECK(gf_module_child_count(ms[i]) == 0 && gf_module_parameters(ms[i], NULL, 0) == 0);
    }
    /* errors: at construction, and a wrong input through the op's error */
    CHECK_ERR_NULL(gf_nn_pixel_shuffle(0), GF_ERR_INVALID, "upscale_factor 0", ">= 1");
    CHECK_ERR_NULL(gf_nn_pixel_unshuffle(-2), GF_ERR_INVALID, "downscale_factor -2");
    CHECK_ERR_NULL(gf_nn_upsample(NULL), GF_ERR_INVALID, "gf_nn_upsample", "NULL");
    gf_interpolate_opts bad = {.mode = (gf_interp_mode)9, .scale_factor = {2, 2}};
    CHECK_ERR_NULL(gf_nn_upsample(&bad), GF_ERR_INVALID, "unknown mode 9");
    bad = (gf_interpolate_opts){.mode = GF_INTERP_NEAREST};
    CHECK_ERR_NULL(gf_nn_upsample(&bad), GF_ERR_INVALID, "give one of size and scale_factor");
    bad = (gf_interpolate_opts){.mode = GF_INTERP_NEAREST, .size = {2, 2}, .scale_factor = {2, 2}};
    CHECK_ERR_NULL(gf_nn_upsample(&bad), GF_ERR_INVALID, "only one");
    bad = (gf_interpolate_opts){.mode = GF_INTERP_NEAREST, .size = {2, 2}, .align_corners = true};
    CHECK_ERR_NULL(gf_nn_upsample(&bad), GF_ERR_INVALID, "align_corners", "linear and bilinear");
    CHECK_ERR_NULL(gf_nn_unflatten(1, SZ(2), 0), GF_ERR_INVALID, "0 sizes");
    CHECK_ERR_NULL(gf_nn_unflatten(1, NULL, 2), GF_ERR_INVALID, "NULL");
    CHECK_ERR_NULL(gf_nn_unflatten(1, SZ(2, -2), 2), GF_ERR_INVALID, "size 1 is -2");
    gf_tensor *v = gf_zeros(SZ(3), 1, GF_F64, NULL);
    CHECK_ERR_NULL(gf_module_forward(ms[0], &v, 1), GF_ERR_SHAPE, "");
    gf_tensor *two[2] = {v, v};
    CHECK_ERR_NULL(gf_module_forward(ms[2], two, 2), GF_ERR_INVALID, "Upsample.forward",
                   "takes 1 input");
    gf_module *fl = gf_nn_flatten();
    CHECK_ERR_NULL(gf_module_forward(fl, &v, 1), GF_ERR_INDEX, "");
    gf_module_release(fl);
    gf_tensor_release(v);
    for (int i = 0; i < 4; i++) gf_module_release(ms[i]);
}

/* ------------------------------------------------------------ ModuleList */
static void test_module_list(void) {
    gf_module *a = gf_nn_relu(), *b = gf_nn_tanh(), *c = gf_nn_linear(2, 2, true, GF_F64, NULL);
    gf_module *l = gf_nn_module_list((gf_module *const[]){a, b}, 2);
    CHECK_MSG(l && !strcmp(gf_module_type_name(l), "ModuleList"), "%s", gf_last_error());
    CHECK(gf_module_list_len(l) == 2);
    CHECK_OK(gf_module_list_append(l, c));
    CHECK(gf_module_list_len(l) == 3);
    CHECK(gf_module_list_get(l, 0) == a && gf_module_list_get(l, 2) == c);
    CHECK(gf_module_list_get(l, -1) == c && gf_module_list_get(l, -3) == a);
    CHECK(!strcmp(gf_module_child_name(l, 2), "2"));
    CHECK(gf_module_get_parameter(l, "2.weight") == gf_module_get_parameter(c, "weight"));
    gf_tensor_dict *sd = gf_module_state_dict(l);
    CHECK(sd && gf_tensor_dict_size(sd) == 2 && !strcmp(gf_tensor_dict_name(sd, 0), "2.weight"));
    gf_tensor_dict_destroy(sd);
    /* a ModuleList has no forward; a Sequential appends and indexes too */
    gf_tensor *x = gf_ones(SZ(1, 2), 2, GF_F64, NULL);
    CHECK_ERR_NULL(gf_module_forward(l, &x, 1), GF_ERR_INVALID, "");
    gf_module *seq = gf_nn_sequential(NULL, 0);
    CHECK_OK(gf_module_list_append(seq, c));
    CHECK_OK(gf_module_list_append(seq, b));
    CHECK(gf_module_list_len(seq) == 2 && gf_module_list_get(seq, 1) == b);
    gf_tensor *y = gf_module_forward(seq, &x, 1);
    CHECK(y && gf_tensor_size(y, 1) == 2);
    gf_tensor_release(y);
    gf_module *empty = gf_nn_module_list(NULL, 0);
    CHECK(empty && gf_module_list_len(empty) == 0);
    /* errors */
    CHECK_ERR_NULL(gf_module_list_get(l, 3), GF_ERR_INDEX, "index 3", "3 modules");
    CHECK_ERR_NULL(gf_module_list_get(l, -4), GF_ERR_INDEX, "index -4");
    CHECK_ERR_NULL(gf_module_list_get(empty, 0), GF_ERR_INDEX, "0 modules");
    CHECK_ERR(gf_module_list_append(a, b), GF_ERR_INVALID, "ReLU", "not a ModuleList");
    CHECK_ERR(gf_module_list_append(NULL, b), GF_ERR_INVALID, "NULL");
    CHECK_ERR(gf_module_list_append(l, NULL), GF_ERR_INVALID, "NULL");
    CHECK(gf_module_list_len(l) == 3);
    CHECK_ERR(gf_module_list_append(l, l), GF_ERR_INVALID, "cycle");
    CHECK(gf_module_list_len(a) == -1);
    CHECK_ERR_NULL(gf_nn_module_list(NULL, 2), GF_ERR_INVALID, "NULL");
    CHECK_ERR_NULL(gf_nn_module_list((gf_module *const[]){a, NULL}, 2), GF_ERR_INVALID, "NULL");
    CHECK_ERR_NULL(gf_nn_module_list(NULL, -1), GF_ERR_INVALID, "n >= 0");
    gf_tensor_release(x);
    gf_module *ms[] = {a, b, c, l, seq, empty};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) gf_module_release(ms[i]);
}

int main(void) {
    int missing = ag_device_check();
    if (missing) return missing;
    RUN(test_to_dtype);
    RUN(test_to_shared);
    RUN(test_to_device);
    RUN(test_to_errors);
    RUN(test_to_complex);
    RUN(test_shape_layers);
    RUN(test_module_list);
    return ag_finish();
}
