/* SPDX-License-Identifier: BSD-3-Clause */
/* shape_test.h — what the tests of graft/shape.h share: layout makers that
 * can run inside a scope (ops_test.h's release their base tensor, which an
 * open scope refuses), and the device's f64 support. */
#ifndef GRAFT_TESTS_SHAPE_TEST_H
#define GRAFT_TESTS_SHAPE_TEST_H

#include "ops_test.h"

/* ot_make_layout's tensors, their base left to the open scope. */
static inline gf_tensor *st_make(int layout, gf_dtype dt, int rank, const int64_t *sizes,
                                 const double *vals) {
    if (layout == OT_CONTIG || rank == 0 || (layout == OT_TRANSPOSED && rank < 2))
        return ot_make(dt, rank, sizes, vals);
    int64_t n = ot_numel(rank, sizes), big[GF_MAX_RANK];
    double *w = malloc((size_t)(2 * n > 0 ? 2 * n : 1) * sizeof(double));
    for (int i = 0; i < rank; i++) big[i] = sizes[i];
    gf_tensor *v;
    if (layout == OT_STEP) {
        big[rank - 1] *= 2;
        for (int64_t i = 0; i < n; i++) {
            w[2 * i] = vals[i];
            w[2 * i + 1] = ot_sentinel(dt, vals[i]);
        }
        v = gf_slice(ot_make(dt, rank, big, w), rank - 1, 0, big[rank - 1], 2);
    } else {
        int64_t r = sizes[rank - 2], c = sizes[rank - 1];
        big[rank - 2] = c;
        big[rank - 1] = r;
        int64_t mats = (r != 0 && c != 0) ? n / (r * c) : 0;
        for (int64_t b = 0; b < mats; b++)
            for (int64_t i = 0; i < r; i++)
                for (int64_t j = 0; j < c; j++) w[b * r * c + j * r + i] = vals[b * r * c + i * c + j];
        v = gf_transpose(ot_make(dt, rank, big, w), -2, -1);
    }
    free(w);
    return v;
}
#define st_step(...) st_make(OT_STEP, __VA_ARGS__)
#define st_tr(...) st_make(OT_TRANSPOSED, __VA_ARGS__)

static bool has_f64;
static const gf_dtype FLOATS[2] = {GF_F32, GF_F64};
#define NFLOATS (has_f64 ? 2 : 1)

/* gf_init and the default device's f64 support. */
static inline void st_init(void) {
    gf_init();
    gf_device_info info;
    has_f64 = gf_device_get_info(gf_device_default(), &info) == GF_OK &&
              (info.dtypes & (1u << GF_F64));
    fprintf(stderr, "device %s%s\n", gf_device_spec(gf_device_default()),
            has_f64 ? "" : " (no f64: f32 only)");
}

#endif
