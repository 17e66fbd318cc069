/* SPDX-License-Identifier: BSD-3-Clause */
/* test_onednn_elementwise.c — cpu_onednn against the reference plugin for
 * every elementwise op: unary (f32, f64, integers), binary with broadcasting,
 * comparisons, WHERE, COPY between every dtype pair, FILL, buffer_fill; on
 * contiguous, transposed, step-2, offset, permuted, broadcast, in-place,
 * 0-size, rank-0 and odd shapes, with special values (NaN, infinities, -0). */
#include "graft_ops.h"
#include "abi_pair.h"

typedef struct shape {
    int rank;
    int64_t sizes[4];
} shape;

/* odd, large (above the thresholds for threads and oneDNN), empty, scalar */
static const shape shapes[] = {
    {3, {3, 5, 7}}, {2, {67, 331}}, {2, {0, 4}}, {0, {0}}, {1, {1}}, {4, {2, 3, 1, 5}},
};
#define N_SHAPES (int)(sizeof shapes / sizeof shapes[0])

/* Input and output layouts tried for each shape. */
static const ap_layout in_layouts[] = {AL_CONTIG, AL_TRANSPOSED, AL_STEP,
                                       AL_OFFSET, AL_PERMUTED,   AL_BCAST};
static const ap_layout out_layouts[] = {AL_CONTIG,     AL_CONTIG, AL_STEP,
                                        AL_TRANSPOSED, AL_OFFSET, AL_CONTIG};
#define N_LAYOUTS 6


static ap_domain unary_domain(uint32_t op) {
    switch (op) {
    case GFP_OP_LOG:
    case GFP_OP_LOG1P:
    case GFP_OP_SQRT:
    case GFP_OP_RSQRT:
    case GFP_OP_POW_SCALAR: return AD_POS;
    case GFP_OP_FLOOR:
    case GFP_OP_CEIL:
    case GFP_OP_ROUND: return AD_WIDE;
    default: return AD_ANY;
    }
}

static const void *unary_params(uint32_t op) {
    static const gfp_scalar_params leaky = {sizeof(gfp_scalar_params), 0, 0.1, 0};
    static const gfp_scalar_params elu = {sizeof(gfp_scalar_params), 0, 1.3, 0};
    static const gfp_scalar_params softplus = {sizeof(gfp_scalar_params), 0, 2.0, 3.0};
    static const gfp_scalar_params pw = {sizeof(gfp_scalar_params), 0, 2.5, 0};
    static const gfp_clamp_params clamp = {sizeof(gfp_clamp_params), 1, 1, 0, -0.5, 0.7};
    switch (op) {
    case GFP_OP_LEAKY_RELU: return &leaky;
    case GFP_OP_ELU: return &elu;
    case GFP_OP_SOFTPLUS: return &softplus;
    case GFP_OP_POW_SCALAR: return &pw;
    case GFP_OP_CLAMP: return &clamp;
    default: return NULL;
    }
}

/* f32 tolerance: oneDNN's vector exp/log/tanh are within a few ulps of libm. */
static void run_unary(uint32_t op, int32_t dt, const shape *sh, ap_layout li, ap_layout lo,
                      ap_domain dom, int in_place) {
    char what[160];
    snprintf(what, sizeof what, "%s %s [%d-d %s -> %s]%s%s", gfp_op_name(op),
             dt == GFP_F32 ? "f32" : dt == GFP_F64 ? "f64" : dt == GFP_I32 ? "i32" : "i64",
             sh->rank, ap_layout_names[li], in_place ? "in place" : ap_layout_names[lo],
             dom == AD_SPECIAL ? " specials" : "", "");
    ap_tensor x = ap_make(dt, sh->rank, sh->sizes, in_place ? lo : li, dom);
    double tol = dt == GFP_F32 ? 4e-6 : 1e-14;
    if (in_place) {
        ap_tensor *io[1] = {&x};
        ap_run(what, op, io, 1, io, 1, unary_params(op), tol, tol);
    } else {
        ap_tensor y = ap_make(dt, sh->rank, sh->sizes, lo, AD_ANY);
        ap_tensor *in[1] = {&x}, *out[1] = {&y};
        ap_run(what, op, in, 1, out, 1, unary_params(op), tol, tol);
        ap_free(&y);
    }
    ap_free(&x);
}

/* The unary float ops: every UNARY row of graft_ops.def but logical_not. */
static uint32_t unary_op(int row) {
    const gfp_op_info *r = &gfp_op_table[row];
    return r->family == GFP_FAMILY_UNARY && r->op != GFP_OP_LOGICAL_NOT ? r->op : 0;
}

static void test_unary_float(void) {
    for (int row = 0; row < GFP_OP_ROW_COUNT; row++)
        for (int k = 0; k < 2 && unary_op(row); k++) {
            uint32_t op = unary_op(row);
            int32_t dt = k ? GFP_F64 : GFP_F32;
            for (int s = 0; s < N_SHAPES; s++)
                for (int l = 0; l < N_LAYOUTS; l++)
                    run_unary(op, dt, &shapes[s], in_layouts[l], out_layouts[l], unary_domain(op),
                              0);
            run_unary(op, dt, &shapes[1], AL_CONTIG, AL_CONTIG, unary_domain(op), 1);
            run_unary(op, dt, &shapes[1], AL_CONTIG, AL_TRANSPOSED, unary_domain(op), 1);
        }
}

static void test_unary_specials(void) {
    for (int row = 0; row < GFP_OP_ROW_COUNT; row++)
        for (int k = 0; k < 2 && unary_op(row); k++) {
            uint32_t op = unary_op(row);
            run_unary(op, k ? GFP_F64 : GFP_F32, &shapes[1], AL_CONTIG, AL_CONTIG, AD_SPECIAL, 0);
            run_unary(op, k ? GFP_F64 : GFP_F32, &shapes[0], AL_STEP, AL_CONTIG, AD_SPECIAL, 0);
        }
}

/* Relative accuracy where absolute tolerances hide it: results near 0. */
static void test_unary_precision(void) {
    static const uint32_t ops[] = {GFP_OP_LOG,  GFP_OP_TANH, GFP_OP_GELU,    GFP_OP_GELU_TANH,
                                   GFP_OP_SILU, GFP_OP_ELU,  GFP_OP_SIGMOID, GFP_OP_EXP,
                                   GFP_OP_LOG1P, GFP_OP_EXPM1, GFP_OP_SIN, GFP_OP_ERF};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        ap_domain dom = ops[i] == GFP_OP_LOG ? AD_NEAR1 : AD_SMALL;
        ap_tensor x = ap_make(GFP_F32, 2, SZ(64, 300), AL_CONTIG, dom);
        ap_tensor y = ap_make(GFP_F32, 2, SZ(64, 300), AL_CONTIG, AD_ANY);
        ap_tensor *in[1] = {&x}, *out[1] = {&y};
        char what[64];
        snprintf(what, sizeof what, "%s f32 near its zero", gfp_op_name(ops[i]));
        ap_run(what, ops[i], in, 1, out, 1, unary_params(ops[i]), 0, 2e-6);
        ap_free(&x), ap_free(&y);
    }
}

static void test_unary_int(void) {
    static const uint32_t ops[] = {GFP_OP_NEG, GFP_OP_ABS, GFP_OP_SIGN, GFP_OP_SQUARE,
                                   GFP_OP_RELU, GFP_OP_CLAMP};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        for (int k = 0; k < 2; k++)
            for (int l = 0; l < N_LAYOUTS; l++)
                run_unary(ops[i], k ? GFP_I64 : GFP_I32, &shapes[0], in_layouts[l],
                          out_layouts[l], AD_INT, 0);
}

/* ------------------------------------------------------------------ binary */
/* The binary ops of graft_ops.def but the logical ones (tested below with
 * mixed dtypes): arithmetic, then comparisons (bool out). */
static uint32_t binary_op(int row) {
    const gfp_op_info *r = &gfp_op_table[row];
    bool logical = r->op == GFP_OP_LOGICAL_AND || r->op == GFP_OP_LOGICAL_OR;
    return r->family == GFP_FAMILY_BINARY && !logical ? r->op : 0;
}
static bool is_compare(uint32_t op) {
    switch (op) {
    case GFP_OP_EQ:
    case GFP_OP_NE:
    case GFP_OP_LT:
    case GFP_OP_LE:
    case GFP_OP_GT:
    case GFP_OP_GE: return true;
    default: return false;
    }
}
/* Ops that compute in f32 and f64 only (no integer kernel in the ABI). */
static bool float_only(uint32_t op) { return op == GFP_OP_ATAN2; }

static void run_binary(uint32_t op, int32_t dt, const shape *sh, ap_layout la, ap_layout lb, ap_layout ly,
                       ap_domain dom, int in_place) {
    int compare = is_compare(op);
    int32_t ydt = compare ? GFP_BOOL : dt;
    char what[160];
    snprintf(what, sizeof what, "%s dt%d [%d-d a %s, b %s -> %s]%s", gfp_op_name(op), (int)dt,
             sh->rank, ap_layout_names[la], ap_layout_names[lb], in_place ? "in place" : ap_layout_names[ly],
             dom == AD_SPECIAL ? " specials" : "");
    ap_domain db = op == GFP_OP_POW && dt != GFP_I32 && dt != GFP_I64 ? AD_ANY : dom;
    ap_tensor a = ap_make(dt, sh->rank, sh->sizes, in_place ? ly : la,
                        op == GFP_OP_POW && dom == AD_ANY ? AD_POS : dom);
    ap_tensor b = ap_make(dt, sh->rank, sh->sizes, lb, db);
    double tol = dt == GFP_F64 ? 1e-14 : 1e-6;
    if (in_place) {
        ap_tensor *in[2] = {&a, &b}, *out[1] = {&a};
        ap_run(what, op, in, 2, out, 1, NULL, tol, tol);
    } else {
        ap_tensor y = ap_make(ydt, sh->rank, sh->sizes, ly, AD_ANY);
        ap_tensor *in[2] = {&a, &b}, *out[1] = {&y};
        ap_run(what, op, in, 2, out, 1, NULL, tol, tol);
        ap_free(&y);
    }
    ap_free(&a);
    ap_free(&b);
}

static void test_binary(void) {
    static const int32_t dts[] = {GFP_F32, GFP_F64, GFP_I32, GFP_I64};
    for (int row = 0; row < GFP_OP_ROW_COUNT; row++)
        for (int k = 0; k < 4 && binary_op(row) && binary_op(row) != GFP_OP_GELU_BACKWARD; k++) {
            uint32_t op = binary_op(row);
            int32_t dt = dts[k];
            ap_domain dom = dt == GFP_I32 || dt == GFP_I64 ? AD_INT : AD_ANY;
            if (dom == AD_INT && float_only(op)) continue; /* integer DIV: /0 gives 0, covered */
            for (int s = 0; s < N_SHAPES; s++) {
                const shape *sh = &shapes[s];
                run_binary(op, dt, sh, AL_CONTIG, AL_CONTIG, AL_CONTIG, dom, 0);
                run_binary(op, dt, sh, AL_BCAST, AL_CONTIG, AL_CONTIG, dom, 0);   /* a broadcast */
                run_binary(op, dt, sh, AL_CONTIG, AL_BCAST, AL_CONTIG, dom, 0);   /* b broadcast */
                run_binary(op, dt, sh, AL_TRANSPOSED, AL_STEP, AL_OFFSET, dom, 0);
                run_binary(op, dt, sh, AL_PERMUTED, AL_CONTIG, AL_TRANSPOSED, dom, 0);
                run_binary(op, dt, sh, AL_STEP, AL_BCAST, AL_STEP, dom, 0);
                if (!is_compare(op)) run_binary(op, dt, sh, AL_CONTIG, AL_BCAST, AL_CONTIG, dom, 1);
            }
            if (dt == GFP_F32 || dt == GFP_F64)
                run_binary(op, dt, &shapes[1], AL_CONTIG, AL_CONTIG, AL_CONTIG, AD_SPECIAL, 0);
        }
}

/* GELU_BACKWARD, a * (Phi(b) + b phi(b)): its bracket crosses zero (near
 * b = -0.75) and cancels in Phi's tail, where any f32 erf's last-bit error
 * is all there is of the result; so the error is bounded relative to |a|,
 * not to the result. a is drawn near 1 (its product is a correctly
 * rounded multiply) and the results compared absolutely; b across the
 * curve, wide, and with the specials. */
static void test_gelu_backward(void) {
    static const ap_domain dbs[] = {AD_ANY, AD_WIDE, AD_SPECIAL};
    static const ap_layout la[] = {AL_CONTIG, AL_BCAST, AL_TRANSPOSED, AL_STEP};
    static const ap_layout lb[] = {AL_CONTIG, AL_CONTIG, AL_STEP, AL_BCAST};
    for (int k = 0; k < 2; k++) {
        int32_t dt = k ? GFP_F64 : GFP_F32;
        double tol = dt == GFP_F64 ? 1e-14 : 1e-6;
        for (int s = 0; s < N_SHAPES; s++)
            for (int d = 0; d < 3; d++)
                for (int l = 0; l < 4; l++) {
                    const shape *sh = &shapes[s];
                    char what[160];
                    snprintf(what, sizeof what, "gelu_backward dt%d [%d-d a %s, b %s] b domain %d",
                             (int)dt, sh->rank, ap_layout_names[la[l]], ap_layout_names[lb[l]], d);
                    ap_tensor a = ap_make(dt, sh->rank, sh->sizes, la[l], AD_NEAR1);
                    ap_tensor b = ap_make(dt, sh->rank, sh->sizes, lb[l], dbs[d]);
                    ap_tensor y = ap_make(dt, sh->rank, sh->sizes, AL_CONTIG, AD_ANY);
                    ap_tensor *in[2] = {&a, &b}, *out[1] = {&y};
                    ap_run(what, GFP_OP_GELU_BACKWARD, in, 2, out, 1, NULL, tol, tol);
                    ap_free(&a), ap_free(&b), ap_free(&y);
                }
    }
}

/* Broadcasts the way the core makes them: a row [1, N] and a scalar expanded. */
static void test_binary_core_broadcasts(void) {
    for (int k = 0; k < 2; k++) {
        int32_t dt = k ? GFP_F64 : GFP_F32;
        ap_tensor a = ap_make(dt, 2, SZ(256, 1000), AL_CONTIG, AD_ANY);
        ap_tensor row = ap_make(dt, 2, SZ(1, 1000), AL_CONTIG, AD_ANY);
        ap_tensor one = ap_make(dt, 0, SZ(0), AL_CONTIG, AD_ANY);
        ap_tensor y = ap_make(dt, 2, SZ(256, 1000), AL_CONTIG, AD_ANY);
        for (int kk = 0; kk < 2; kk++) {
            row.t[kk].sizes[0] = 256;
            row.t[kk].strides[0] = 0;
            one.t[kk].rank = 2;
            one.t[kk].sizes[0] = 256;
            one.t[kk].sizes[1] = 1000;
            one.t[kk].strides[0] = one.t[kk].strides[1] = 0;
        }
        for (int r = 0; r < GFP_OP_ROW_COUNT; r++) {
            uint32_t op = binary_op(r);
            if (!op || is_compare(op)) continue;
            ap_tensor *in1[2] = {&a, &row}, *in2[2] = {&one, &a}, *out[1] = {&y};
            ap_run("row broadcast", op, in1, 2, out, 1, NULL, 1e-6, 1e-6);
            ap_run("scalar broadcast", op, in2, 2, out, 1, NULL, 1e-6, 1e-6);
        }
        ap_free(&a), ap_free(&row), ap_free(&one), ap_free(&y);
    }
}

static void test_logical_where(void) {
    static const int32_t dts[] = {GFP_F32, GFP_F64, GFP_I32, GFP_I64, GFP_BOOL};
    for (int k = 0; k < 5; k++) {
        int32_t dt = dts[k];
        for (int s = 0; s < N_SHAPES; s++) {
            const shape *sh = &shapes[s];
            for (int l = 0; l < N_LAYOUTS; l++) {
                ap_tensor c = ap_make(GFP_BOOL, sh->rank, sh->sizes, in_layouts[l], AD_BOOL);
                ap_tensor a = ap_make(dt, sh->rank, sh->sizes, in_layouts[(l + 1) % N_LAYOUTS],
                                    AD_INT);
                ap_tensor b = ap_make(dt, sh->rank, sh->sizes, AL_CONTIG, AD_INT);
                ap_tensor y = ap_make(dt, sh->rank, sh->sizes, out_layouts[l], AD_INT);
                ap_tensor yb = ap_make(GFP_BOOL, sh->rank, sh->sizes, out_layouts[l], AD_BOOL);
                ap_tensor *in3[3] = {&c, &a, &b}, *out[1] = {&y}, *outb[1] = {&yb};
                ap_run("where", GFP_OP_WHERE, in3, 3, out, 1, NULL, 0, 0);
                ap_tensor *in2[2] = {&a, &b}, *in1[1] = {&a};
                ap_run("logical_and", GFP_OP_LOGICAL_AND, in2, 2, outb, 1, NULL, 0, 0);
                ap_run("logical_or", GFP_OP_LOGICAL_OR, in2, 2, outb, 1, NULL, 0, 0);
                ap_run("logical_not", GFP_OP_LOGICAL_NOT, in1, 1, outb, 1, NULL, 0, 0);
                ap_free(&c), ap_free(&a), ap_free(&b), ap_free(&y), ap_free(&yb);
            }
        }
    }
}

/* ------------------------------------------------------------------ copy, fill */
static void test_copy(void) {
    static const int32_t dts[] = {GFP_F32, GFP_F64, GFP_I32, GFP_I64, GFP_BOOL};
    for (int i = 0; i < 5; i++)
        for (int o = 0; o < 5; o++)
            for (int s = 0; s < N_SHAPES; s++)
                for (int l = 0; l < N_LAYOUTS; l++) {
                    const shape *sh = &shapes[s];
                    ap_domain dom = dts[i] == GFP_BOOL ? AD_BOOL
                                 : (dts[i] == GFP_F32 || dts[i] == GFP_F64) ? AD_SPECIAL : AD_INT;
                    ap_tensor x = ap_make(dts[i], sh->rank, sh->sizes, in_layouts[l], dom);
                    ap_tensor y = ap_make(dts[o], sh->rank, sh->sizes, out_layouts[l], AD_ANY);
                    char what[96];
                    snprintf(what, sizeof what, "copy dt%d -> dt%d [%s -> %s]", (int)dts[i],
                             (int)dts[o], ap_layout_names[in_layouts[l]],
                             ap_layout_names[out_layouts[l]]);
                    ap_tensor *in[1] = {&x}, *out[1] = {&y};
                    ap_run(what, GFP_OP_COPY, in, 1, out, 1, NULL, 0, 0);
                    ap_free(&x), ap_free(&y);
                }
    /* Large float -> int values saturate, as the reference defines. */
    static const double big[] = {3e9, -3e9, 1e19, -1e19, NAN, 2.5, -2.5, 2147483647.5};
    ap_tensor x = ap_make(GFP_F64, 1, SZ(8), AL_CONTIG, AD_ANY);
    for (int k = 0; k < 2; k++)
        ap_write(&x, k, big, sizeof big);
    for (int o = GFP_F32; o <= GFP_BOOL; o++) {
        ap_tensor y = ap_make(o, 1, SZ(8), AL_CONTIG, AD_ANY);
        ap_tensor *in[1] = {&x}, *out[1] = {&y};
        ap_run("copy of large values", GFP_OP_COPY, in, 1, out, 1, NULL, 0, 0);
        ap_free(&y);
    }
    ap_free(&x);
}

static void test_fill(void) {
    static const int32_t dts[] = {GFP_F32, GFP_F64, GFP_I32, GFP_I64, GFP_BOOL};
    static const gfp_fill_params values[] = {
        {sizeof(gfp_fill_params), 0, 2.5, 2},
        {sizeof(gfp_fill_params), 0, -7.0, -7},
        {sizeof(gfp_fill_params), 0, 0.0, 0},
        {sizeof(gfp_fill_params), 0, NAN, 0},
        {sizeof(gfp_fill_params), 0, 1e10, INT64_MIN},
    };
    for (int k = 0; k < 5; k++)
        for (int s = 0; s < N_SHAPES; s++)
            for (int l = 0; l < 4; l++)
                for (int v = 0; v < 5; v++) {
                    const ap_layout ls[4] = {AL_CONTIG, AL_STEP, AL_TRANSPOSED, AL_OFFSET};
                    ap_tensor y = ap_make(dts[k], shapes[s].rank, shapes[s].sizes, ls[l], AD_ANY);
                    ap_tensor *out[1] = {&y};
                    ap_run("fill", GFP_OP_FILL, NULL, 0, out, 1, &values[v], 0, 0);
                    ap_free(&y);
                }
}

static void test_buffer_fill(void) {
    static const uint64_t pattern = 0x0102030405060708ull;
    for (uint32_t size = 1; size <= 8; size *= 2)
        for (uint64_t n = 0; n <= 100000; n = n * 7 + size) {
            ap_tensor b = ap_make(GFP_BOOL, 1, (int64_t[]){(int64_t)n + 40}, AL_CONTIG, AD_INT);
            gfp_status st[2];
            for (int k = 0; k < 2; k++)
                st[k] = ap_side[k].t->buffer_fill(ap_side[k].dev, b.t[k].buffer, 8, n - n % size,
                                                &pattern, size);
            CHECK(st[0] == GFP_OK && st[1] == GFP_OK);
            /* every byte compared: the view is the whole buffer */
            b.t[AP_TEST].sizes[0] = b.storage;
            CHECK(ap_compare(&b, 0, 0, "buffer_fill") == 0);
            ap_free(&b);
        }
}

/* bf16 conversions (the reference has none): against closed forms. */
static void test_bf16_copy(void) {
    static const int32_t q_in[1] = {GFP_F32}, q_out[1] = {GFP_BF16};
    if (ap_support(AP_TEST, GFP_OP_COPY, q_in, 1, q_out, 1, GFP_LAYOUT_STRIDED) ==
        GFP_SUPPORT_NONE) {
        fprintf(stderr, "  bf16 not declared by this CPU: skipped\n");
        return;
    }
    /* bf16 keeps 7 fraction bits. 1 + 2^-8 is a tie between 1 and 1 + 2^-7: even
     * (1.0); 1 + 3*2^-8 is a tie between 1 + 2^-7 and 1 + 2^-6: even (the latter);
     * 1 + 2^-8 + 2^-10 rounds up; NaN stays NaN; 3.4e38 is past the largest
     * bf16 (3.3895e38) by more than half an ulp: inf. */
    static const float in[7] = {1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, 1.0f + 0x1p-8f + 0x1p-10f,
                                -2.75f, NAN, INFINITY, 3.4e38f};
    static const double want[7] = {1.0, 1.015625, 1.0078125, -2.75, NAN, INFINITY, INFINITY};
    ap_tensor x = ap_make(GFP_F32, 1, SZ(7), AL_CONTIG, AD_ANY);
    ap_tensor y = ap_make(GFP_BF16, 1, SZ(7), AL_STEP, AD_ANY);
    ap_tensor z = ap_make(GFP_F64, 1, SZ(7), AL_CONTIG, AD_ANY);
    ap_write(&x, AP_TEST, in, sizeof in);
    const gfp_tensor *xi[1] = {&x.t[AP_TEST]}, *yo[1] = {&y.t[AP_TEST]}, *zo[1] = {&z.t[AP_TEST]};
    CHECK(abi_launch(&ap_side[AP_TEST], GFP_OP_COPY, xi, 1, yo, 1, NULL) == GFP_OK);
    const gfp_tensor *yi[1] = {&y.t[AP_TEST]};
    CHECK(abi_launch(&ap_side[AP_TEST], GFP_OP_COPY, yi, 1, zo, 1, NULL) == GFP_OK);
    double got[7];
    ap_read(&z, AP_TEST, got, sizeof got);
    for (int i = 0; i < 7; i++)
        CHECK_MSG(ap_close(got[i], want[i], 0, 0), "bf16 %d: %.9g vs %.9g", i, got[i], want[i]);
    ap_free(&x), ap_free(&y), ap_free(&z);

    /* Transposed views (the tiled path, 2-byte elements too): x^T -> bf16,
     * then the bf16 result read through a transposed view -> bf16 -> f32
     * must give x rounded to bf16 (round to nearest even, done here). */
    enum { R = 48, C = 40 };
    static float xv[R * C];
    double want2[R * C];
    for (int i = 0; i < R * C; i++) {
        xv[i] = (float)(ap_uniform() * 8 - 4);
        unsigned char b[2];
        ap_encode(GFP_BF16, xv[i], b);
        want2[i] = ap_decode(GFP_BF16, b);
    }
    ap_tensor a = ap_make(GFP_F32, 2, SZ(R, C), AL_CONTIG, AD_ANY);
    ap_tensor at = ap_make(GFP_BF16, 2, SZ(C, R), AL_CONTIG, AD_ANY);  /* a^T in bf16 */
    ap_tensor back = ap_make(GFP_BF16, 2, SZ(R, C), AL_CONTIG, AD_ANY); /* (a^T)^T */
    ap_tensor f = ap_make(GFP_F64, 2, SZ(R, C), AL_CONTIG, AD_ANY);
    ap_write(&a, AP_TEST, xv, sizeof xv);
    gfp_tensor av = a.t[AP_TEST], atv = at.t[AP_TEST];
    av.sizes[0] = C, av.sizes[1] = R, av.strides[0] = 1, av.strides[1] = C; /* a^T */
    atv.sizes[0] = R, atv.sizes[1] = C, atv.strides[0] = 1, atv.strides[1] = R;
    const gfp_tensor *i1[1] = {&av}, *o1[1] = {&at.t[AP_TEST]};
    const gfp_tensor *i2[1] = {&atv}, *o2[1] = {&back.t[AP_TEST]};
    const gfp_tensor *i3[1] = {&back.t[AP_TEST]}, *o3[1] = {&f.t[AP_TEST]};
    CHECK(abi_launch(&ap_side[AP_TEST], GFP_OP_COPY, i1, 1, o1, 1, NULL) == GFP_OK);
    CHECK(abi_launch(&ap_side[AP_TEST], GFP_OP_COPY, i2, 1, o2, 1, NULL) == GFP_OK);
    CHECK(abi_launch(&ap_side[AP_TEST], GFP_OP_COPY, i3, 1, o3, 1, NULL) == GFP_OK);
    static double got2[R * C];
    ap_read(&f, AP_TEST, got2, sizeof got2);
    int bad = 0;
    for (int i = 0; i < R * C; i++) bad += got2[i] != want2[i];
    CHECK_MSG(bad == 0, "%d of %d elements differ after the transposed bf16 round trip", bad,
              R * C);
    ap_free(&a), ap_free(&at), ap_free(&back), ap_free(&f);
}

int main(void) {
    if (!ap_init()) return 1;
    RUN(test_unary_float);
    RUN(test_unary_specials);
    RUN(test_unary_precision);
    RUN(test_unary_int);
    RUN(test_binary);
    RUN(test_gelu_backward);
    RUN(test_binary_core_broadcasts);
    RUN(test_logical_where);
    RUN(test_copy);
    RUN(test_fill);
    RUN(test_buffer_fill);
    RUN(test_bf16_copy);
    return CHECK_REPORT();
}
