/* SPDX-License-Identifier: BSD-3-Clause */
/* pk_complex.c — which complex (c64, c128) operations a plugin in this tree
 * provides, decided once for every plugin (declared in plugin_kit.h).
 *
 * The rules are the reference plugin's (ref_complex.c computes them in C99
 * double complex): COPY into complex from a complex or stored real dtype,
 * FILL, the unary ops of the table below on one complex dtype, ABS into the
 * part dtype, ADD SUB MUL DIV POW on one complex dtype, EQ and NE to bool;
 * SUM MEAN PROD into the input's dtype; MATMUL of one complex dtype. The
 * position of an op in its table is the op code the device kernels of
 * opencl (kernels/complex.cl) and vulkan (shaders/cx_math.glsl) switch on. */
#include "plugin_kit.h"

static const uint32_t unary_ops[] = {
    GFP_OP_NEG,     GFP_OP_EXP,        GFP_OP_LOG,    GFP_OP_LOG1P, GFP_OP_EXPM1, GFP_OP_SQRT,
    GFP_OP_RSQRT,   GFP_OP_RECIPROCAL, GFP_OP_SQUARE, GFP_OP_SIN,   GFP_OP_COS,   GFP_OP_TANH,
    GFP_OP_SIGMOID, GFP_OP_POW_SCALAR, GFP_OP_ASIN,   GFP_OP_ACOS,  GFP_OP_ATAN};
static const uint32_t binary_ops[] = {GFP_OP_ADD, GFP_OP_SUB, GFP_OP_MUL, GFP_OP_DIV,
                                      GFP_OP_POW};

static int code_of(uint32_t op, const uint32_t *table, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (table[i] == op) return (int)i;
    return -1;
}

bool pk_is_complex(int32_t dtype) { return dtype == GFP_C64 || dtype == GFP_C128; }

int32_t pk_complex_part(int32_t dtype) { return dtype == GFP_C64 ? GFP_F32 : GFP_F64; }

gfp_tensor pk_dense_in(const gfp_tensor *t, int32_t dt, gfp_buffer b) {
    gfp_tensor v = *t;
    v.dtype = dt;
    v.buffer = b;
    v.offset = 0;
    int64_t st = 1;
    for (int k = t->rank - 1; k >= 0; k--) {
        v.strides[k] = st;
        st *= t->sizes[k];
    }
    return v;
}

gfp_tensor pk_complex_real_view(const gfp_tensor *t) {
    gfp_tensor v = *t;
    v.dtype = pk_complex_part(t->dtype);
    for (int k = 0; k < t->rank - 1; k++) v.strides[k] = 2 * t->strides[k];
    v.sizes[t->rank - 1] = 2 * t->sizes[t->rank - 1];
    v.strides[t->rank - 1] = 1;
    return v;
}

int pk_complex_unary_code(uint32_t op) {
    return code_of(op, unary_ops, sizeof unary_ops / sizeof unary_ops[0]);
}

int pk_complex_binary_code(uint32_t op) {
    return code_of(op, binary_ops, sizeof binary_ops / sizeof binary_ops[0]);
}

bool pk_complex_operands(const int32_t *in, uint32_t n_in, const int32_t *out) {
    bool cx = pk_is_complex(out[0]);
    for (uint32_t i = 0; i < n_in; i++) cx = cx || pk_is_complex(in[i]);
    return cx;
}

bool pk_complex_ew_accepts(uint32_t op, const int32_t *in, const int32_t *out,
                           uint32_t cx_dtypes, uint32_t reals) {
    uint32_t cx = cx_dtypes & PK_DT_COMPLEX;
    bool cx_out = pk_dtype_in(out[0], cx);
    switch (pk_ew_kind_of(op)) {
    case PK_EW_COPY:
        return cx_out && (pk_dtype_in(in[0], cx) || pk_dtype_in(in[0], reals));
    case PK_EW_FILL: return cx_out;
    case PK_EW_UNARY:
        if (op == GFP_OP_ABS)
            return pk_dtype_in(in[0], cx) && out[0] == pk_complex_part(in[0]);
        return pk_complex_unary_code(op) >= 0 && cx_out && in[0] == out[0];
    case PK_EW_BINARY:
        return pk_complex_binary_code(op) >= 0 && cx_out && in[0] == out[0] && in[1] == out[0];
    case PK_EW_COMPARE:
        return (op == GFP_OP_EQ || op == GFP_OP_NE) && pk_dtype_in(in[0], cx) &&
               in[1] == in[0] && out[0] == GFP_BOOL;
    default: return false;
    }
}

const char *pk_complex_ew_rule(uint32_t op) {
    switch (pk_ew_kind_of(op)) {
    case PK_EW_COPY: return "a complex output from a complex or real input";
    case PK_EW_FILL: return "a complex output";
    case PK_EW_UNARY:
        if (op == GFP_OP_ABS) return "a complex input and its real dtype as output";
        return pk_complex_unary_code(op) >= 0 ? "one complex dtype for input and output"
                                              : "no complex dtype (the op needs an ordering)";
    case PK_EW_BINARY:
        return pk_complex_binary_code(op) >= 0
                   ? "one complex dtype for both inputs and the output"
                   : "no complex dtype (the op needs an ordering)";
    case PK_EW_COMPARE:
        return op == GFP_OP_EQ || op == GFP_OP_NE ? "two inputs of one complex dtype, bool out"
                                                  : "no complex dtype (complex has no order)";
    default: return "no complex dtype";
    }
}

bool pk_complex_reduce_ok(uint32_t op, int32_t in, int32_t out, uint32_t cx_dtypes) {
    return (op == GFP_OP_SUM || op == GFP_OP_MEAN || op == GFP_OP_PROD) &&
           pk_dtype_in(in, cx_dtypes & PK_DT_COMPLEX) && out == in;
}

bool pk_complex_matmul_ok(int32_t a, int32_t b, int32_t y, uint32_t cx_dtypes) {
    return pk_dtype_in(a, cx_dtypes & PK_DT_COMPLEX) && b == a && y == a;
}

/* ------------------------------------------------------------ FFT */
bool pk_fft_kind_dtypes(uint32_t kind, int32_t x, int32_t y) {
    switch (kind) {
    case GFP_FFT_C2C: return pk_is_complex(x) && y == x;
    case GFP_FFT_R2C: return (x == GFP_F32 && y == GFP_C64) || (x == GFP_F64 && y == GFP_C128);
    case GFP_FFT_C2R: return (x == GFP_C64 && y == GFP_F32) || (x == GFP_C128 && y == GFP_F64);
    default: return false;
    }
}

bool pk_fft_dtypes_ok(uint32_t kind, int32_t x, int32_t y, uint32_t cx_dtypes) {
    int32_t c = pk_is_complex(x) ? x : y;
    return pk_fft_kind_dtypes(kind, x, y) && pk_dtype_in(c, cx_dtypes & PK_DT_COMPLEX);
}

gfp_status pk_check_fft(const gfp_fft_params *p, const gfp_tensor *x, const gfp_tensor *y,
                        uint32_t cx_dtypes, const char *note, int *dl) {
    static const char *const kinds[3] = {"C2C", "R2C", "C2R"};
    if (p->kind > GFP_FFT_C2R)
        return pk_fail(GFP_ERR_INVALID, "fft: kind %u is not GFP_FFT_C2C, R2C or C2R",
                       (unsigned)p->kind);
    if (p->inverse > 1)
        return pk_fail(GFP_ERR_INVALID, "fft: inverse is %u; it must be 0 or 1",
                       (unsigned)p->inverse);
    if (x->rank != y->rank)
        return pk_fail(GFP_ERR_INVALID, "fft: x has rank %d and y rank %d; they must be equal",
                       (int)x->rank, (int)y->rank);
    int rank = x->rank;
    if (p->n_dims < 1 || p->n_dims > (uint32_t)rank)
        return pk_fail(GFP_ERR_INVALID, "fft: n_dims is %u; it must be in [1, rank %d]",
                       (unsigned)p->n_dims, rank);
    bool seen[GFP_MAX_RANK] = {false};
    for (uint32_t i = 0; i < p->n_dims; i++) {
        int32_t dd = p->dims[i];
        if (dd < 0 || dd >= rank || seen[dd])
            return pk_fail(GFP_ERR_INVALID, "fft: dims[%u] = %d is out of [0, %d) or repeated",
                           (unsigned)i, (int)dd, rank);
        seen[dd] = true;
    }
    *dl = p->dims[p->n_dims - 1];
    if (!pk_fft_dtypes_ok(p->kind, x->dtype, y->dtype, cx_dtypes))
        return pk_fail(pk_fft_kind_dtypes(p->kind, x->dtype, y->dtype) ? GFP_ERR_UNSUPPORTED
                                                                       : GFP_ERR_INVALID,
                       "fft: %s takes %s; got %s to %s%s", kinds[p->kind],
                       p->kind == GFP_FFT_C2C   ? "c64 or c128 to the same dtype"
                       : p->kind == GFP_FFT_R2C ? "f32 to c64 or f64 to c128"
                                                : "c64 to f32 or c128 to f64",
                       pk_dtype_name(x->dtype), pk_dtype_name(y->dtype), note ? note : "");
    for (int dd = 0; dd < rank; dd++) {
        bool half = dd == *dl && p->kind != GFP_FFT_C2C;
        int64_t xs = x->sizes[dd], ys = y->sizes[dd];
        bool ok = !half ? ys == xs : p->kind == GFP_FFT_R2C ? ys == xs / 2 + 1 : xs == ys / 2 + 1;
        if (!ok)
            return pk_fail(GFP_ERR_INVALID,
                           "fft: dim %d has size %lld in x and %lld in y, which %s does not "
                           "allow%s", dd, (long long)xs, (long long)ys, kinds[p->kind],
                           half ? " (the onesided dim holds n/2 + 1 bins)" : "");
        int64_t n = p->kind == GFP_FFT_C2R ? ys : xs;
        if (seen[dd] && n == 0)
            return pk_fail(GFP_ERR_INVALID, "fft: the transformed dim %d has signal length 0",
                           dd);
    }
    return GFP_OK;
}
