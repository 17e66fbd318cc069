/* SPDX-License-Identifier: BSD-3-Clause */
/* test_onednn_index.c — cpu_onednn against the reference plugin for the
 * indexing ops (INDEX_SELECT, GATHER, SCATTER_ADD, INDEX_ADD): every data
 * dtype, every dim, transposed / sliced / offset layouts, repeated indices
 * (the accumulating ops must add in the reference's order: results are
 * compared exactly), runs longer than the plugin's chunks, and out-of-range
 * indices, refused with the output untouched. */
#include "abi_pair.h"

/* An i64 index tensor whose every storage element is in [0, limit). */
static ap_tensor index_make(int rank, const int64_t *sizes, ap_layout L, int64_t limit) {
    ap_tensor p = ap_make(GFP_I64, rank, sizes, L, AD_ANY);
    for (int64_t i = 0; i < p.storage; i++) {
        int64_t v = (int64_t)(ap_uniform() * (double)limit);
        if (v >= limit) v = limit - 1;
        memcpy(p.init + i * 8, &v, 8);
    }
    for (int k = 0; k < 2; k++)
        ap_write(&p, k, p.init, (size_t)p.storage * 8);
    return p;
}

static ap_domain dom_of(int32_t dt) {
    return dt == GFP_BOOL ? AD_BOOL : dt == GFP_I32 || dt == GFP_I64 ? AD_INT : AD_ANY;
}

static const int32_t dtypes[] = {GFP_F32, GFP_F64, GFP_I32, GFP_I64, GFP_BOOL};
static const ap_layout layouts[] = {AL_CONTIG, AL_TRANSPOSED, AL_STEP, AL_OFFSET};

/* x [sizes] -> y with sizes[dim] = n_index (select), or src -> y (add). */
static void run_select(uint32_t op, int32_t dt, int rank, const int64_t *sizes, int dim,
                       int64_t n_index, int l) {
    int64_t other[GFP_MAX_RANK];
    memcpy(other, sizes, sizeof(int64_t) * (size_t)rank);
    other[dim] = n_index;
    bool select = op == GFP_OP_INDEX_SELECT;
    /* select: x is `sizes`, y `other`; add: src is `other`, y `sizes` */
    ap_tensor data = ap_make(dt, rank, select ? sizes : other, layouts[l], dom_of(dt));
    ap_tensor y = ap_make(dt, rank, select ? other : sizes, layouts[(l + 1) % 4], dom_of(dt));
    ap_tensor ix = index_make(1, &n_index, l == 2 ? AL_STEP : AL_CONTIG, sizes[dim]);
    gfp_dim_params p = {sizeof p, dim};
    ap_tensor *in[2] = {&data, &ix}, *out[1] = {&y};
    char what[120];
    snprintf(what, sizeof what, "op %u dt%d rank %d dim %d n %lld layout %d", (unsigned)op,
             (int)dt, rank, dim, (long long)n_index, l);
    ap_run(what, op, in, 2, out, 1, &p, 0, 0);
    ap_free(&data), ap_free(&y), ap_free(&ix);
}

/* index [isizes] (each <= sizes but in dim) into / from x or y [sizes]. */
static void run_gather(uint32_t op, int32_t dt, int rank, const int64_t *sizes,
                       const int64_t *isizes, int dim, int l) {
    bool gather = op == GFP_OP_GATHER;
    ap_tensor x = ap_make(dt, rank, gather ? sizes : isizes, layouts[l], dom_of(dt));
    ap_tensor y = ap_make(dt, rank, gather ? isizes : sizes, layouts[(l + 2) % 4], dom_of(dt));
    ap_tensor ix = index_make(rank, isizes, layouts[(l + 1) % 4], sizes[dim]);
    gfp_dim_params p = {sizeof p, dim};
    ap_tensor *in[2] = {&x, &ix}, *out[1] = {&y};
    char what[120];
    snprintf(what, sizeof what, "op %u dt%d rank %d dim %d layout %d", (unsigned)op, (int)dt,
             rank, dim, l);
    ap_run(what, op, in, 2, out, 1, &p, 0, 0);
    ap_free(&x), ap_free(&y), ap_free(&ix);
}

static void test_select_ops(void) {
    for (int t = 0; t < 5; t++)
        for (int l = 0; l < 4; l++) {
            int32_t dt = dtypes[t];
            for (int dim = 0; dim < 3; dim++) {
                run_select(GFP_OP_INDEX_SELECT, dt, 3, SZ(4, 5, 6), dim, 7, l);
                if (dt != GFP_BOOL) /* 7 indices into 4..6 places: repeats */
                    run_select(GFP_OP_INDEX_ADD, dt, 3, SZ(4, 5, 6), dim, 7, l);
            }
            run_select(GFP_OP_INDEX_SELECT, dt, 1, SZ(9), 0, 20, l);
            if (dt != GFP_BOOL) run_select(GFP_OP_INDEX_ADD, dt, 1, SZ(9), 0, 20, l);
        }
    /* an embedding table and its gradient: runs past the 512-element chunks */
    run_select(GFP_OP_INDEX_SELECT, GFP_F32, 2, SZ(50, 1100), 0, 300, 0);
    run_select(GFP_OP_INDEX_ADD, GFP_F32, 2, SZ(50, 1100), 0, 300, 0);
    run_select(GFP_OP_INDEX_ADD, GFP_F64, 2, SZ(3000, 3), 0, 4000, 1);
}

static void test_gather_ops(void) {
    for (int t = 0; t < 5; t++)
        for (int l = 0; l < 4; l++) {
            int32_t dt = dtypes[t];
            for (int dim = 0; dim < 3; dim++) {
                /* the index smaller than x in the other dims, larger along dim */
                int64_t is[3] = {3, 4, 5};
                is[dim] = 8;
                run_gather(GFP_OP_GATHER, dt, 3, SZ(4, 5, 6), is, dim, l);
                if (dt != GFP_BOOL) run_gather(GFP_OP_SCATTER_ADD, dt, 3, SZ(4, 5, 6), is, dim, l);
            }
            run_gather(GFP_OP_GATHER, dt, 1, SZ(6), SZ(15), 0, l);
            if (dt != GFP_BOOL) run_gather(GFP_OP_SCATTER_ADD, dt, 1, SZ(6), SZ(15), 0, l);
        }
    /* cross entropy's pattern and its gradient, and long runs */
    run_gather(GFP_OP_GATHER, GFP_F32, 2, SZ(256, 10), SZ(256, 1), 1, 0);
    run_gather(GFP_OP_SCATTER_ADD, GFP_F32, 2, SZ(256, 10), SZ(256, 1), 1, 0);
    run_gather(GFP_OP_GATHER, GFP_F64, 2, SZ(40, 1500), SZ(30, 1300), 0, 0);
    run_gather(GFP_OP_SCATTER_ADD, GFP_F64, 2, SZ(40, 1500), SZ(30, 1300), 0, 1);
}

/* An index out of range: both plugins refuse, nothing is written. */
static void test_out_of_range(void) {
    static const uint32_t ops[] = {GFP_OP_INDEX_SELECT, GFP_OP_INDEX_ADD, GFP_OP_GATHER,
                                   GFP_OP_SCATTER_ADD};
    for (int k = 0; k < 4; k++) {
        uint32_t op = ops[k];
        bool one_d = op == GFP_OP_INDEX_SELECT || op == GFP_OP_INDEX_ADD;
        ap_tensor x = ap_make(GFP_F32, 2, SZ(4, 600), AL_CONTIG, AD_ANY);
        ap_tensor y = ap_make(GFP_F32, 2, SZ(4, 600), AL_CONTIG, AD_ANY);
        ap_tensor ix = one_d ? index_make(1, SZ(4), AL_CONTIG, 4)
                           : index_make(2, SZ(4, 600), AL_CONTIG, 4);
        int64_t bad = 4; /* one past the end of dim 0, at the view's last element */
        size_t at = one_d ? 3 * 8 : (size_t)(4 * 600 - 1) * 8;
        memcpy(ix.init + at, &bad, 8);
        for (int s = 0; s < 2; s++)
            ap_write(&ix, s, ix.init, (size_t)ix.storage * 8);
        gfp_dim_params p = {sizeof p, 0};
        ap_tensor *in[2] = {&x, &ix}, *out[1] = {&y};
        gfp_status sf = ap_launch_side(AP_TEST, op, in, 2, out, 1, &p);
        gfp_status sr = ap_launch_side(AP_REF, op, in, 2, out, 1, &p);
        CHECK_MSG(sf == GFP_ERR_INVALID && sr == GFP_ERR_INVALID, "op %u: statuses %d, %d",
                  (unsigned)op, (int)sf, (int)sr);
        CHECK_CONTAINS(ap_side[AP_TEST].error, "out of range");
        unsigned char *got = malloc((size_t)y.storage * 4);
        ap_read(&y, AP_TEST, got, (size_t)y.storage * 4);
        CHECK_MSG(memcmp(got, y.init, (size_t)y.storage * 4) == 0, "op %u wrote its output",
                  (unsigned)op);
        free(got);
        ap_free(&x), ap_free(&y), ap_free(&ix);
    }
}

int main(void) {
    if (!ap_init()) return 1;
    RUN(test_select_ops);
    RUN(test_gather_ops);
    RUN(test_out_of_range);
    return CHECK_REPORT();
}
