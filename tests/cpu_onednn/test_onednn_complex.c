/* SPDX-License-Identifier: BSD-3-Clause */
/* test_onednn_complex.c — cpu_onednn against the reference plugin on c64
 * and c128: the plugin stores them and answers query_op as the reference
 * does; MATMUL (one real GEMM of the parts: oneDNN's f32 matmul for c64,
 * the plugin's f64 GEMM for c128) on sizes 1, 3, 17, 64, 129, transposed,
 * sliced, offset and permuted operands and outputs, batches and broadcast
 * batch dims; the elementwise ops the reference takes on complex dtypes
 * (bit for bit: the plugin computes the reference's formulas), in every
 * layout, broadcast, in place and with NaN / infinity; SUM and MEAN over
 * every dims mask; COPY, FILL and WHERE.
 *
 * Tolerances of MATMUL: the reference accumulates in double complex; c64
 * here sums in f32 (|error| <= about k * 2^-24 * sum |a||b|, with |a|, |b|
 * <= 2 * sqrt(2): atol = rtol = 1.2e-7 * 16 * sqrt(2k) covers the random
 * walk of the rounding errors with a wide margin), c128 in double (1e-12). */
#include "graft_ops.h"
#include "abi_pair.h"

static const char *dtn(int32_t dt) {
    switch (dt) {
    case GFP_C64: return "c64";
    case GFP_C128: return "c128";
    case GFP_F32: return "f32";
    case GFP_F64: return "f64";
    case GFP_BOOL: return "bool";
    default: return "?";
    }
}

/* ------------------------------------------------------------------ storage, query */
static void test_declared(void) {
    gfp_device_props props;
    memset(&props, 0, sizeof props);
    props.struct_size = sizeof props;
    CHECK(ap_side[AP_TEST].t->device_props(ap_side[AP_TEST].ctx, 0, &props) == GFP_OK);
    CHECK_MSG(props.dtypes & GFP_DTYPE_BIT(GFP_C64), "%s does not declare c64", ap_name());
    CHECK_MSG(props.dtypes & GFP_DTYPE_BIT(GFP_C128), "%s does not declare c128", ap_name());
    /* query_op answers what the reference answers, for every op of the table
     * on the complex combinations its families see */
    static const int32_t cx[] = {GFP_C64, GFP_C128};
    int differ = 0;
    for (int row = 0; row < GFP_OP_ROW_COUNT; row++) {
        const gfp_op_info *r = &gfp_op_table[row];
        for (int c = 0; c < 2; c++) {
            int32_t d = cx[c], part = d == GFP_C64 ? GFP_F32 : GFP_F64;
            int32_t in[8], out[4];
            for (int i = 0; i < 8; i++) in[i] = d;
            for (int i = 0; i < 4; i++) out[i] = d;
            int32_t outs[3] = {d, part, GFP_BOOL};
            for (int o = 0; o < 3; o++) {
                out[0] = outs[o];
                for (uint32_t lk = GFP_LAYOUT_CONTIGUOUS; lk <= GFP_LAYOUT_STRIDED; lk++) {
                    uint32_t a = ap_support(AP_TEST, r->op, in, r->in_max, out,
                                            r->n_out, lk);
                    uint32_t b = ap_support(AP_REF, r->op, in, r->in_max, out,
                                            r->n_out, lk);
                    if (a != b && differ++ < 8)
                        fprintf(stderr, "  query_op %s %s -> %s: %s %u, reference %u\n", r->name,
                                dtn(d), dtn(out[0]), ap_name(), a, b);
                }
            }
        }
    }
    CHECK_MSG(differ == 0, "query_op differs from the reference's on %d complex queries", differ);
}

/* ------------------------------------------------------------------ matmul */
static void broadcast_dim(ap_tensor *p, int d) {
    for (int k = 0; k < 2; k++) p->t[k].strides[d] = 0;
}

static void run_matmul(int32_t dt, int nb, const int64_t *batch, int64_t m, int64_t k, int64_t n,
                       ap_layout la, ap_layout lb, ap_layout ly, unsigned bcast_a,
                       unsigned bcast_b) {
    int64_t as[GFP_MAX_RANK], bs[GFP_MAX_RANK], ys[GFP_MAX_RANK];
    for (int d = 0; d < nb; d++) as[d] = bs[d] = ys[d] = batch[d];
    as[nb] = m, as[nb + 1] = k;
    bs[nb] = k, bs[nb + 1] = n;
    ys[nb] = m, ys[nb + 1] = n;
    ap_tensor a = ap_make(dt, nb + 2, as, la, AD_ANY), b = ap_make(dt, nb + 2, bs, lb, AD_ANY);
    ap_tensor y = ap_make(dt, nb + 2, ys, ly, AD_ANY);
    for (int d = 0; d < nb; d++) {
        if (bcast_a >> d & 1) broadcast_dim(&a, d);
        if (bcast_b >> d & 1) broadcast_dim(&b, d);
    }
    char what[192];
    snprintf(what, sizeof what, "matmul %s batch %d [%lldx%lldx%lld] a %s%s b %s%s y %s", dtn(dt),
             nb, (long long)m, (long long)k, (long long)n, ap_layout_names[la],
             bcast_a ? " (bcast)" : "", ap_layout_names[lb], bcast_b ? " (bcast)" : "",
             ap_layout_names[ly]);
    double tol = dt == GFP_C64 ? 1.2e-7 * 16 * sqrt(2.0 * (double)k) : 1e-12;
    ap_tensor *in[2] = {&a, &b}, *out[1] = {&y};
    ap_run(what, GFP_OP_MATMUL, in, 2, out, 1, NULL, tol, tol);
    ap_free(&a), ap_free(&b), ap_free(&y);
}

static void test_matmul(void) {
    static const int64_t sizes[] = {1, 3, 17, 64, 129};
    static const ap_layout las[] = {AL_CONTIG, AL_TRANSPOSED, AL_STEP, AL_OFFSET, AL_PERMUTED};
    static const ap_layout lbs[] = {AL_CONTIG, AL_CONTIG, AL_TRANSPOSED, AL_STEP, AL_TRANSPOSED};
    static const ap_layout lys[] = {AL_CONTIG, AL_STEP, AL_CONTIG, AL_TRANSPOSED, AL_OFFSET};
    for (int t = 0; t < 2; t++) {
        int32_t dt = t ? GFP_C128 : GFP_C64;
        /* every (m, k, n) of the sizes, contiguous */
        for (int i = 0; i < 5; i++)
            for (int j = 0; j < 5; j++)
                for (int l = 0; l < 5; l++)
                    run_matmul(dt, 0, NULL, sizes[i], sizes[j], sizes[l], AL_CONTIG, AL_CONTIG,
                               AL_CONTIG, 0, 0);
        /* layouts, batches and broadcasts on a few odd shapes */
        static const int64_t dims[][3] = {{1, 1, 1}, {3, 17, 1}, {17, 3, 129}, {64, 129, 17},
                                          {129, 64, 3}};
        for (size_t s = 0; s < sizeof dims / sizeof dims[0]; s++)
            for (int l = 0; l < 5; l++) {
                const int64_t *d = dims[s];
                run_matmul(dt, 0, NULL, d[0], d[1], d[2], las[l], lbs[l], lys[l], 0, 0);
                run_matmul(dt, 1, SZ(3), d[0], d[1], d[2], las[l], lbs[l], lys[l], 0, 0);
                run_matmul(dt, 2, SZ(2, 3), d[0], d[1], d[2], las[l], lbs[l], lys[l], 1, 0);
                run_matmul(dt, 2, SZ(2, 3), d[0], d[1], d[2], las[l], lbs[l], lys[l], 2, 1);
                run_matmul(dt, 1, SZ(2), d[0], d[1], d[2], las[l], lbs[l], lys[l], 1, 1);
            }
        /* empty: M, N or batch 0 (nothing to write), K 0 (zeros) */
        run_matmul(dt, 0, NULL, 0, 4, 5, AL_CONTIG, AL_CONTIG, AL_CONTIG, 0, 0);
        run_matmul(dt, 0, NULL, 3, 4, 0, AL_CONTIG, AL_CONTIG, AL_CONTIG, 0, 0);
        run_matmul(dt, 1, SZ(0), 3, 4, 5, AL_CONTIG, AL_CONTIG, AL_CONTIG, 0, 0);
        run_matmul(dt, 0, NULL, 3, 0, 5, AL_CONTIG, AL_CONTIG, AL_CONTIG, 0, 0);
    }
}

/* ------------------------------------------------------------------ elementwise */
typedef struct shape {
    int rank;
    int64_t sizes[4];
} shape;
static const shape shapes[] = {{1, {1}}, {1, {37}}, {2, {17, 33}}, {3, {3, 5, 40}}, {2, {4, 0}}};
#define N_SHAPES (int)(sizeof shapes / sizeof shapes[0])

static const gfp_scalar_params pow_params[] = {
    {sizeof(gfp_scalar_params), 0, 3.0, 0}, {sizeof(gfp_scalar_params), 0, -2.0, 0},
    {sizeof(gfp_scalar_params), 0, 0.5, 0}};

static bool is_compare(uint32_t op);

static void run_ew(uint32_t op, int32_t dt, const shape *sh, ap_layout la, ap_layout lb,
                   ap_layout ly, ap_domain dom, bool in_place, const void *params) {
    const gfp_op_info *r = gfp_op_lookup(op);
    int n_in = r->in_max;
    int32_t ydt = op == GFP_OP_ABS ? ap_part_dtype(dt)
                  : is_compare(op)                     ? GFP_BOOL
                                                       : dt;
    char what[192];
    snprintf(what, sizeof what, "%s %s [%d-d a %s, b %s -> %s]%s", r->name, dtn(dt), sh->rank,
             ap_layout_names[la], ap_layout_names[lb], in_place ? "in place" : ap_layout_names[ly],
             dom == AD_SPECIAL ? " specials" : "");
    ap_tensor a = ap_make(dt, sh->rank, sh->sizes, in_place ? ly : la, dom);
    ap_tensor b = ap_make(dt, sh->rank, sh->sizes, lb, dom);
    if (op == GFP_OP_EQ || op == GFP_OP_NE) { /* equal elements too: b's first = a's */
        size_t es = abi_esize(dt);
        for (int k = 0; k < 2; k++) ap_write(&b, k, a.init, es);
    }
    ap_tensor y = ap_make(ydt, sh->rank, sh->sizes, ly, AD_ANY);
    ap_tensor *in[2] = {&a, &b}, *out[1] = {in_place ? &a : &y};
    if (!in_place || ydt == dt) ap_run(what, op, in, n_in, out, 1, params, 0, 0);
    ap_free(&a), ap_free(&b), ap_free(&y);
}

static bool is_compare(uint32_t op) {
    return op == GFP_OP_EQ || op == GFP_OP_NE || op == GFP_OP_LT || op == GFP_OP_LE ||
           op == GFP_OP_GT || op == GFP_OP_GE;
}

/* The unary and binary ops the reference takes on dt. */
static bool complex_op(uint32_t op, int32_t dt) {
    const gfp_op_info *r = gfp_op_lookup(op);
    if (r->family != GFP_FAMILY_UNARY && r->family != GFP_FAMILY_BINARY) return false;
    int32_t in[2] = {dt, dt};
    int32_t out = op == GFP_OP_ABS ? ap_part_dtype(dt) : is_compare(op) ? GFP_BOOL : dt;
    return ap_support(AP_REF, op, in, r->in_max, &out, 1, GFP_LAYOUT_STRIDED) != 0;
}

static void test_elementwise(void) {
    int ops = 0;
    for (int row = 0; row < GFP_OP_ROW_COUNT; row++) {
        uint32_t op = gfp_op_table[row].op;
        for (int t = 0; t < 2; t++) {
            int32_t dt = t ? GFP_C128 : GFP_C64;
            if (!complex_op(op, dt)) continue;
            ops++;
            int np = op == GFP_OP_POW_SCALAR ? 3 : 1;
            for (int pi = 0; pi < np; pi++) {
                const void *params = op == GFP_OP_POW_SCALAR ? &pow_params[pi] : NULL;
                for (int s = 0; s < N_SHAPES; s++) {
                    const shape *sh = &shapes[s];
                    run_ew(op, dt, sh, AL_CONTIG, AL_CONTIG, AL_CONTIG, AD_ANY, false, params);
                    run_ew(op, dt, sh, AL_BCAST, AL_CONTIG, AL_CONTIG, AD_ANY, false, params);
                    run_ew(op, dt, sh, AL_CONTIG, AL_BCAST, AL_CONTIG, AD_ANY, false, params);
                    run_ew(op, dt, sh, AL_TRANSPOSED, AL_STEP, AL_OFFSET, AD_ANY, false, params);
                    run_ew(op, dt, sh, AL_PERMUTED, AL_CONTIG, AL_TRANSPOSED, AD_ANY, false,
                           params);
                    run_ew(op, dt, sh, AL_CONTIG, AL_CONTIG, AL_CONTIG, AD_SPECIAL, false, params);
                    run_ew(op, dt, sh, AL_STEP, AL_TRANSPOSED, AL_STEP, AD_SPECIAL, false, params);
                    run_ew(op, dt, sh, AL_CONTIG, AL_CONTIG, AL_CONTIG, AD_ANY, true, params);
                    run_ew(op, dt, sh, AL_CONTIG, AL_TRANSPOSED, AL_STEP, AD_SPECIAL, true,
                           params);
                }
                /* long rows, tiles of a transposed input */
                run_ew(op, dt, &(shape){2, {70, 300}}, AL_TRANSPOSED, AL_CONTIG, AL_CONTIG,
                       AD_SPECIAL, false, params);
                run_ew(op, dt, &(shape){1, {10007}}, AL_CONTIG, AL_CONTIG, AL_CONTIG, AD_SPECIAL,
                       false, params);
            }
        }
    }
    CHECK_MSG(ops >= 2 * 20, "only %d complex elementwise ops found", ops);
}

static void test_copy_fill_where(void) {
    static const int32_t srcs[] = {GFP_C64, GFP_C128, GFP_F32, GFP_F64, GFP_I32, GFP_I64,
                                   GFP_BOOL};
    const shape *sh = &shapes[3];
    for (int t = 0; t < 2; t++) {
        int32_t dt = t ? GFP_C128 : GFP_C64;
        for (size_t s = 0; s < sizeof srcs / sizeof srcs[0]; s++)
            for (int l = 0; l < 3; l++) {
                ap_layout lx = l == 0 ? AL_CONTIG : l == 1 ? AL_TRANSPOSED : AL_BCAST;
                ap_layout ly = l == 2 ? AL_STEP : AL_CONTIG;
                ap_domain dom = srcs[s] == GFP_BOOL ? AD_BOOL
                                : srcs[s] == GFP_I32 || srcs[s] == GFP_I64 ? AD_INT
                                                                           : AD_SPECIAL;
                ap_tensor x = ap_make(srcs[s], sh->rank, sh->sizes, lx, dom);
                ap_tensor y = ap_make(dt, sh->rank, sh->sizes, ly, AD_ANY);
                char what[96];
                snprintf(what, sizeof what, "copy %s -> %s [%s -> %s]", dtn(srcs[s]), dtn(dt),
                         ap_layout_names[lx], ap_layout_names[ly]);
                ap_run(what, GFP_OP_COPY, AP_TS(&x), 1, AP_TS(&y), 1, NULL, 0, 0);
                ap_free(&x), ap_free(&y);
            }
        /* complex -> real is refused on both */
        ap_tensor x = ap_make(dt, sh->rank, sh->sizes, AL_CONTIG, AD_ANY);
        ap_tensor y = ap_make(GFP_F64, sh->rank, sh->sizes, AL_CONTIG, AD_ANY);
        ap_run("copy complex -> f64", GFP_OP_COPY, AP_TS(&x), 1, AP_TS(&y), 1, NULL, 0, 0);
        ap_free(&x), ap_free(&y);
        for (int l = 0; l < 3; l++) {
            ap_layout ly = l == 0 ? AL_CONTIG : l == 1 ? AL_STEP : AL_TRANSPOSED;
            ap_tensor f = ap_make(dt, sh->rank, sh->sizes, ly, AD_ANY);
            gfp_fill_params fp = {sizeof fp, 0, -2.5, 0};
            ap_run("fill", GFP_OP_FILL, NULL, 0, AP_TS(&f), 1, &fp, 0, 0);
            ap_free(&f);
            ap_tensor c = ap_make(GFP_BOOL, sh->rank, sh->sizes, AL_CONTIG, AD_BOOL);
            ap_tensor a = ap_make(dt, sh->rank, sh->sizes, l == 2 ? AL_BCAST : AL_CONTIG, AD_ANY);
            ap_tensor b = ap_make(dt, sh->rank, sh->sizes, l == 1 ? AL_TRANSPOSED : AL_CONTIG,
                                  AD_ANY);
            ap_tensor w = ap_make(dt, sh->rank, sh->sizes, ly, AD_ANY);
            ap_run("where", GFP_OP_WHERE, AP_TS(&c, &a, &b), 3, AP_TS(&w), 1, NULL, 0, 0);
            ap_free(&c), ap_free(&a), ap_free(&b), ap_free(&w);
        }
    }
}

/* ------------------------------------------------------------------ reductions */
static void run_reduce(uint32_t op, int32_t dt, int rank, const int64_t *sizes, uint32_t dims,
                       ap_layout lx, ap_layout ly, ap_domain dom) {
    int64_t ysz[GFP_MAX_RANK], n_line = 1;
    for (int d = 0; d < rank; d++) {
        ysz[d] = (dims >> d) & 1u ? 1 : sizes[d];
        if ((dims >> d) & 1u) n_line *= sizes[d];
    }
    char what[160];
    snprintf(what, sizeof what, "%s %s rank %d dims 0x%x [%s -> %s]%s", gfp_op_name(op), dtn(dt),
             rank, (unsigned)dims, ap_layout_names[lx], ap_layout_names[ly],
             dom == AD_SPECIAL ? " specials" : "");
    ap_tensor x = ap_make(dt, rank, sizes, lx, dom);
    ap_tensor y = ap_make(dt, rank, ysz, ly, AD_ANY);
    gfp_reduce_params p = {sizeof p, dims, 1.0};
    /* both sides sum in double; the reference compensates (the tolerance
     * covers the order of additions) */
    double tol = dt == GFP_C128 ? 1e-12 : 2e-6;
    double atol = tol * (n_line > 1 ? sqrt((double)n_line) : 1);
    ap_run(what, op, AP_TS(&x), 1, AP_TS(&y), 1, &p, atol, tol);
    ap_free(&x), ap_free(&y);
}

static void test_reduce(void) {
    static const uint32_t ops[] = {GFP_OP_SUM, GFP_OP_MEAN, GFP_OP_PROD};
    static const int64_t odd[3] = {5, 7, 9}, big[2] = {300, 257}, wide[2] = {3, 70001};
    for (int t = 0; t < 2; t++) {
        int32_t dt = t ? GFP_C128 : GFP_C64;
        for (int o = 0; o < 3; o++) {
            for (uint32_t dims = 0; dims < 8; dims++) {
                run_reduce(ops[o], dt, 3, odd, dims, AL_CONTIG, AL_CONTIG, AD_ANY);
                run_reduce(ops[o], dt, 3, odd, dims, AL_TRANSPOSED, AL_CONTIG, AD_ANY);
                run_reduce(ops[o], dt, 3, odd, dims, AL_STEP, AL_OFFSET, AD_ANY);
                run_reduce(ops[o], dt, 3, odd, dims, AL_PERMUTED, AL_CONTIG, AD_ANY);
                run_reduce(ops[o], dt, 3, odd, dims, AL_BCAST, AL_TRANSPOSED, AD_ANY);
            }
            for (uint32_t dims = 1; dims < 4; dims++) {
                run_reduce(ops[o], dt, 2, big, dims, AL_CONTIG, AL_CONTIG, AD_ANY);
                run_reduce(ops[o], dt, 2, big, dims, AL_TRANSPOSED, AL_CONTIG, AD_ANY);
                run_reduce(ops[o], dt, 2, wide, dims, AL_CONTIG, AL_CONTIG, AD_ANY);
                /* NaN and infinities (huge finite values too, whose cancellation
                 * only the reference's compensated sum survives: long lines,
                 * where NaN and infinities win, as in the real dtypes' test) */
                run_reduce(ops[o], dt, 2, big, dims, AL_CONTIG, AL_CONTIG, AD_SPECIAL);
            }
            run_reduce(ops[o], dt, 2, SZ(4, 0), 2, AL_CONTIG, AL_CONTIG, AD_ANY);
            run_reduce(ops[o], dt, 2, SZ(0, 4), 2, AL_CONTIG, AL_CONTIG, AD_ANY);
        }
    }
}

int main(void) {
    if (!ap_init()) return 1;
    RUN(test_declared);
    RUN(test_matmul);
    RUN(test_elementwise);
    RUN(test_copy_fill_where);
    RUN(test_reduce);
    return CHECK_REPORT();
}
