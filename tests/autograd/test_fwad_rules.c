/* SPDX-License-Identifier: BSD-3-Clause */
/* test_fwad_rules.c — every jvp rule, in f64 (c128 for the complex ones):
 *
 *  1. gf_gradcheck with check_forward_ad: the tangent of the output for a
 *     one-hot tangent of each input element against central differences
 *     (and reverse mode against the same differences);
 *  2. forward against reverse: <u, J v> = <J^T u, v> for random u and v,
 *     J v by gf_jvp and J^T u by gf_vjp (real coordinates for complex);
 *  3. forward-over-reverse: gf_gradgradcheck with check_forward_ad, for the
 *     cases marked `second`: the jvp of every backward formula they run.
 *
 * Then a coverage walk over the op table (abi/graft_ops.def): every op is
 * exercised by a case above, or is listed, with the reason, as one that
 * carries no tangent. A new op row without either fails the test. */
#include <graft.h>
#include <stdint.h>
#include <string.h>

#include "graft_ops.h"
#include "test_rules_util.h"

/* ------------------------------------------------------------ inputs */
static uint64_t g_rng = 0x2545F4914F6CDD1Dull;
static double urand(void) {
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(g_rng >> 11) / 9007199254740992.0;
}

/* f64 (or c128) tensor of sizes with values uniform in [lo, hi). */
static gf_tensor *rnd(const int64_t *sizes, int rank, double lo, double hi, bool cx) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= sizes[i];
    int64_t m = cx ? 2 * n : n;
    double *v = malloc((size_t)(m ? m : 1) * sizeof *v);
    for (int64_t i = 0; i < m; i++) v[i] = lo + (hi - lo) * urand();
    gf_tensor *t = gf_from_data(v, sizes, rank, cx ? GF_C128 : GF_F64, NULL);
    free(v);
    return t;
}

static gf_tensor *rnd_like(const gf_tensor *t) {
    return rnd(gf_tensor_sizes(t), gf_tensor_rank(t), -1, 1, gf_dtype_is_complex(gf_tensor_dtype(t)));
}

static gf_tensor *i64s(const int64_t *v, const int64_t *sizes, int rank) {
    return gf_from_data(v, sizes, rank, GF_I64, NULL);
}

/* ------------------------------------------------------------ the cases */
typedef gf_tensor *(*case_fn)(gf_tensor *const *in, int n);

typedef struct fcase {
    const char *name;
    int ops[4]; /* op numbers of abi/graft_ops.def it exercises (0 ends) */
    case_fn fn;
    int n_in;
    int rank[3];
    int64_t sizes[3][4];
    double lo, hi;
    bool cx;     /* complex inputs */
    bool second; /* also forward-over-reverse (gradgradcheck) */
} fcase;

#define IN1(r, ...) 1, {r, 0, 0}, {__VA_ARGS__}
#define X (in[0])
#define Y (in[1])
#define Z (in[2])

static const int D0[1] = {0}, D1[1] = {1}, D01[2] = {0, 1};

/* unary */
static gf_tensor *c_neg(gf_tensor *const *in, int n) { return gf_neg(X); }
static gf_tensor *c_abs(gf_tensor *const *in, int n) { return gf_abs(X); }
static gf_tensor *c_sign(gf_tensor *const *in, int n) { return gf_mul(gf_sign(X), X); }
static gf_tensor *c_exp(gf_tensor *const *in, int n) { return gf_exp(X); }
static gf_tensor *c_log(gf_tensor *const *in, int n) { return gf_log(X); }
static gf_tensor *c_log1p(gf_tensor *const *in, int n) { return gf_log1p(X); }
static gf_tensor *c_expm1(gf_tensor *const *in, int n) { return gf_expm1(X); }
static gf_tensor *c_sqrt(gf_tensor *const *in, int n) { return gf_sqrt(X); }
static gf_tensor *c_rsqrt(gf_tensor *const *in, int n) { return gf_rsqrt(X); }
static gf_tensor *c_recip(gf_tensor *const *in, int n) { return gf_reciprocal(X); }
static gf_tensor *c_square(gf_tensor *const *in, int n) { return gf_square(X); }
static gf_tensor *c_sin(gf_tensor *const *in, int n) { return gf_sin(X); }
static gf_tensor *c_cos(gf_tensor *const *in, int n) { return gf_cos(X); }
static gf_tensor *c_tanh(gf_tensor *const *in, int n) { return gf_tanh(X); }
static gf_tensor *c_sigmoid(gf_tensor *const *in, int n) { return gf_sigmoid(X); }
static gf_tensor *c_relu(gf_tensor *const *in, int n) { return gf_relu(X); }
static gf_tensor *c_leaky(gf_tensor *const *in, int n) { return gf_leaky_relu(X, 0.1); }
static gf_tensor *c_elu(gf_tensor *const *in, int n) { return gf_elu(X, 1.3); }
static gf_tensor *c_gelu(gf_tensor *const *in, int n) { return gf_gelu(X, false); }
static gf_tensor *c_gelu_tanh(gf_tensor *const *in, int n) { return gf_gelu(X, true); }
static gf_tensor *c_silu(gf_tensor *const *in, int n) { return gf_silu(X); }
static gf_tensor *c_softplus(gf_tensor *const *in, int n) { return gf_softplus(X, 1.5, 20.0); }
static gf_tensor *c_erf(gf_tensor *const *in, int n) { return gf_erf(X); }
/* floor/ceil/round have a zero derivative: times x so the check is not empty */
static gf_tensor *c_floor(gf_tensor *const *in, int n) { return gf_add(gf_floor(X), X); }
static gf_tensor *c_ceil(gf_tensor *const *in, int n) { return gf_add(gf_ceil(X), X); }
static gf_tensor *c_round(gf_tensor *const *in, int n) { return gf_add(gf_round(X), X); }
static gf_tensor *c_clamp(gf_tensor *const *in, int n) { return gf_clamp(X, -0.5, 0.6); }
static gf_tensor *c_pow_s(gf_tensor *const *in, int n) { return gf_pow_scalar(X, 2.5); }
static gf_tensor *c_hardswish(gf_tensor *const *in, int n) { return gf_hardswish(X); }
static gf_tensor *c_asin(gf_tensor *const *in, int n) { return gf_asin(X); }
static gf_tensor *c_acos(gf_tensor *const *in, int n) { return gf_acos(X); }
static gf_tensor *c_atan(gf_tensor *const *in, int n) { return gf_atan(X); }
/* binary, with broadcasting */
static gf_tensor *c_add(gf_tensor *const *in, int n) { return gf_add(X, Y); }
static gf_tensor *c_sub(gf_tensor *const *in, int n) { return gf_sub(X, Y); }
static gf_tensor *c_mul(gf_tensor *const *in, int n) { return gf_mul(X, Y); }
static gf_tensor *c_div(gf_tensor *const *in, int n) { return gf_div(X, Y); }
static gf_tensor *c_pow(gf_tensor *const *in, int n) { return gf_pow(X, Y); }
static gf_tensor *c_maximum(gf_tensor *const *in, int n) { return gf_maximum(X, Y); }
static gf_tensor *c_minimum(gf_tensor *const *in, int n) { return gf_minimum(X, Y); }
static gf_tensor *c_atan2(gf_tensor *const *in, int n) { return gf_atan2(X, Y); }
static gf_tensor *c_where(gf_tensor *const *in, int n) { return gf_where(gf_gt(X, Y), gf_sin(X), Y); }
static gf_tensor *c_masked_fill(gf_tensor *const *in, int n) {
    return gf_masked_fill(X, gf_gt_scalar(X, 0.2), 3.0);
}
static gf_tensor *c_fmod(gf_tensor *const *in, int n) { return gf_fmod(X, Y); }
static gf_tensor *c_remainder(gf_tensor *const *in, int n) { return gf_remainder(X, Y); }
static gf_tensor *c_clamp_t(gf_tensor *const *in, int n) { return gf_clamp_tensor(X, Y, Z); }
/* reductions */
static gf_tensor *c_sum(gf_tensor *const *in, int n) { return gf_sum(X, D1, 1, false); }
static gf_tensor *c_mean(gf_tensor *const *in, int n) { return gf_mean(X, D0, 1, true); }
static gf_tensor *c_prod(gf_tensor *const *in, int n) { return gf_prod(X, D1, 1, false); }
static gf_tensor *c_amax(gf_tensor *const *in, int n) { return gf_amax(X, D1, 1, false); }
static gf_tensor *c_amin(gf_tensor *const *in, int n) { return gf_amin(X, D01, 2, false); }
static gf_tensor *c_var(gf_tensor *const *in, int n) { return gf_var(X, D1, 1, 1.0, false); }
static gf_tensor *c_std(gf_tensor *const *in, int n) { return gf_std(X, D0, 1, 0.0, true); }
static gf_tensor *c_lse(gf_tensor *const *in, int n) { return gf_logsumexp(X, D1, 1, false); }
static gf_tensor *c_max_dim(gf_tensor *const *in, int n) {
    gf_tensor *v = NULL, *i = NULL;
    gf_max_dim(X, 1, false, &v, &i);
    return v;
}
static gf_tensor *c_min_dim(gf_tensor *const *in, int n) {
    gf_tensor *v = NULL, *i = NULL;
    gf_min_dim(X, 0, true, &v, &i);
    return v;
}
static gf_tensor *c_norm(gf_tensor *const *in, int n) { return gf_vector_norm(X, 2.0, D1, 1, false); }
/* linear algebra */
static gf_tensor *c_matmul(gf_tensor *const *in, int n) { return gf_matmul(X, Y); }
static gf_tensor *c_linear(gf_tensor *const *in, int n) { return gf_linear(X, Y, Z); }
static gf_tensor *c_softmax(gf_tensor *const *in, int n) { return gf_softmax(X, 1); }
static gf_tensor *c_log_softmax(gf_tensor *const *in, int n) { return gf_log_softmax(X, 0); }
static gf_tensor *c_layer_norm(gf_tensor *const *in, int n) {
    return gf_layer_norm(X, 1, Y, Z, 1e-5, NULL, NULL);
}
static gf_tensor *c_batch_norm(gf_tensor *const *in, int n) {
    return gf_batch_norm(X, NULL, NULL, Y, Z, true, 0.1, 1e-5, NULL, NULL);
}
static gf_tensor *c_batch_norm_eval(gf_tensor *const *in, int n) {
    gf_tensor *rm = gf_full(SZ(3), 1, 0.2, GF_F64, NULL), *rv = gf_full(SZ(3), 1, 1.7, GF_F64, NULL);
    return gf_batch_norm(X, rm, rv, Y, Z, false, 0.1, 1e-5, NULL, NULL);
}
/* indexing */
static gf_tensor *c_index_select(gf_tensor *const *in, int n) {
    return gf_index_select(X, 1, i64s((const int64_t[]){2, 0, 2}, SZ(3), 1));
}
static gf_tensor *c_gather(gf_tensor *const *in, int n) {
    return gf_gather(X, 1, i64s((const int64_t[]){1, 0, 2, 2, 1, 0}, SZ(2, 3), 2));
}
static gf_tensor *c_scatter_add(gf_tensor *const *in, int n) {
    return gf_scatter_add(X, 1, i64s((const int64_t[]){1, 0, 1, 2, 2, 0}, SZ(2, 3), 2), Y);
}
static gf_tensor *c_index_add(gf_tensor *const *in, int n) {
    return gf_index_add(X, 0, i64s((const int64_t[]){2, 0}, SZ(2), 1), Y);
}
static gf_tensor *c_embedding(gf_tensor *const *in, int n) {
    return gf_embedding(X, i64s((const int64_t[]){3, 1, 1, 0}, SZ(2, 2), 2));
}
static gf_tensor *c_cat(gf_tensor *const *in, int n) {
    gf_tensor *p[3] = {X, gf_exp(Y), X};
    return gf_cat(p, 3, 0);
}
static gf_tensor *c_stack(gf_tensor *const *in, int n) {
    gf_tensor *p[2] = {X, Y};
    return gf_stack(p, 2, 1);
}
static gf_tensor *c_tril(gf_tensor *const *in, int n) { return gf_tril(X, 0); }
static gf_tensor *c_triu(gf_tensor *const *in, int n) { return gf_triu(X, 1); }
/* copies and views */
static gf_tensor *c_clone(gf_tensor *const *in, int n) { return gf_clone(gf_transpose(X, 0, 1)); }
static gf_tensor *c_contig(gf_tensor *const *in, int n) {
    return gf_mul(gf_contiguous(gf_transpose(X, 0, 1)), gf_permute(X, (const int[]){1, 0}, 2));
}
static gf_tensor *c_to_dtype(gf_tensor *const *in, int n) {
    return gf_real(gf_mul(gf_to_dtype(X, GF_C128), gf_to_dtype(X, GF_C128)));
}
static gf_tensor *c_views(gf_tensor *const *in, int n) {
    gf_tensor *a = gf_reshape(X, SZ(3, 4), 2);
    gf_tensor *b = gf_slice(a, 1, 0, 4, 2);               /* [3, 2] */
    gf_tensor *c = gf_expand(gf_unsqueeze(gf_select(a, 1, 3), 1), SZ(3, 2), 2);
    gf_tensor *d = gf_diagonal(a, 0, 0, 1);               /* [3] */
    return gf_add(gf_mul(b, c), gf_unsqueeze(d, 1));
}
static gf_tensor *c_flip(gf_tensor *const *in, int n) { return gf_flip(X, D1, 1); }
static gf_tensor *c_pad(gf_tensor *const *in, int n) {
    return gf_pad(X, (const int64_t[]){1, 2}, 2, GF_PAD_REFLECT, 0.0);
}
/* nn */
static gf_tensor *c_conv2d(gf_tensor *const *in, int n) {
    gf_conv2d_opts o = {.stride = {1, 2}, .padding = {1, 0}};
    return gf_conv2d(X, Y, Z, &o);
}
static gf_tensor *c_conv_bwi(gf_tensor *const *in, int n) {
    gf_conv2d_opts o = {.padding = {1, 1}};
    return gf_conv2d_backward_input(X, Y, (const int64_t[4]){1, 2, 4, 4}, &o);
}
static gf_tensor *c_conv_bww(gf_tensor *const *in, int n) {
    gf_conv2d_opts o = {.padding = {1, 1}};
    return gf_conv2d_backward_weight(X, Y, (const int64_t[4]){3, 2, 3, 3}, &o);
}
static gf_tensor *c_max_pool(gf_tensor *const *in, int n) {
    gf_pool2d_opts o = {.kernel = {2, 2}};
    return gf_max_pool2d(X, &o, NULL);
}
static gf_tensor *c_max_pool_bw(gf_tensor *const *in, int n) {
    gf_pool2d_opts o = {.kernel = {2, 2}};
    gf_tensor *idx = NULL;
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
    double v[32]; /* a fixed input: the same argmax indices at every call */
    for (int i = 0; i < 32; i++) v[i] = sin(1.7 * i + 0.3);
    gf_tensor *ref = gf_from_data(v, SZ(1, 2, 4, 4), 4, GF_F64, NULL);
    gf_max_pool2d(ref, &o, &idx);
    gf_grad_mode_set(prev);
    return gf_max_pool2d_backward(X, idx, ref, &o);
}
static gf_tensor *c_avg_pool(gf_tensor *const *in, int n) {
    gf_pool2d_opts o = {.kernel = {3, 3}, .stride = {1, 1}, .padding = {1, 1}};
    return gf_avg_pool2d(X, &o);
}
static gf_tensor *c_avg_pool_bw(gf_tensor *const *in, int n) {
    gf_pool2d_opts o = {.kernel = {2, 2}};
    gf_tensor *like = gf_zeros(SZ(1, 2, 4, 4), 4, GF_F64, NULL);
    return gf_avg_pool2d_backward(X, like, &o);
}
/* losses (composites) */
static gf_tensor *c_mse(gf_tensor *const *in, int n) { return gf_mse_loss(X, Y, GF_REDUCTION_MEAN); }
static gf_tensor *c_xent(gf_tensor *const *in, int n) {
    return gf_cross_entropy(X, i64s((const int64_t[]){1, 0, 3}, SZ(3), 1), NULL,
                            GF_REDUCTION_MEAN, -100, 0.1);
}
/* complex */
static gf_tensor *c_cx_mul(gf_tensor *const *in, int n) { return gf_mul(gf_exp(X), gf_sin(X)); }
static gf_tensor *c_cx_abs(gf_tensor *const *in, int n) { return gf_abs(X); }
static gf_tensor *c_cx_parts(gf_tensor *const *in, int n) {
    return gf_add(gf_mul(gf_real(X), gf_imag(X)), gf_sum(gf_view_as_real(X), (const int[]){1}, 1, false));
}
static gf_tensor *c_cx_conj(gf_tensor *const *in, int n) { return gf_mul(gf_conj(X), X); }
static gf_tensor *c_cx_complex(gf_tensor *const *in, int n) {
    return gf_view_as_complex(gf_contiguous(gf_stack((gf_tensor *const[]){X, gf_square(Y)}, 2, -1)));
}
static gf_tensor *c_cx_make(gf_tensor *const *in, int n) { return gf_complex(X, Y); }
static gf_tensor *c_cx_matmul(gf_tensor *const *in, int n) { return gf_matmul(X, Y); }
static gf_tensor *c_fft(gf_tensor *const *in, int n) { return gf_fft(X, -1, -1, GF_FFT_NORM_ORTHO); }
static gf_tensor *c_rfft(gf_tensor *const *in, int n) { return gf_rfft(X, -1, -1, GF_FFT_NORM_BACKWARD); }
static gf_tensor *c_irfft(gf_tensor *const *in, int n) { return gf_irfft(X, 6, -1, GF_FFT_NORM_FORWARD); }

/* composites of graft/shape.h and graft/complex.h: tangents through the
 * ops they are made of */
static gf_tensor *c_cumsum(gf_tensor *const *in, int n) { return gf_cumsum(X, 1); }
static gf_tensor *c_cumprod(gf_tensor *const *in, int n) { return gf_cumprod(X, 1); }
static gf_tensor *c_logcumsumexp(gf_tensor *const *in, int n) { return gf_logcumsumexp(X, 0); }
static gf_tensor *c_sort(gf_tensor *const *in, int n) {
    gf_tensor *v = NULL, *i = NULL;
    gf_sort(X, 1, true, &v, &i);
    return v;
}
static gf_tensor *c_topk(gf_tensor *const *in, int n) {
    gf_tensor *v = NULL, *i = NULL;
    gf_topk(X, 2, 1, true, true, &v, &i);
    return v;
}
static gf_tensor *c_median(gf_tensor *const *in, int n) {
    gf_tensor *v = NULL, *i = NULL;
    gf_median_dim(X, 1, false, &v, &i);
    return v;
}
static gf_tensor *c_einsum(gf_tensor *const *in, int n) {
    return gf_einsum("ij,jk->ik", (gf_tensor *const[]){X, Y}, 2);
}
static gf_tensor *c_roll_repeat(gf_tensor *const *in, int n) {
    gf_tensor *r = gf_roll(X, (const int64_t[]){1}, 1, D1, 1);
    return gf_mul(gf_repeat(r, (const int64_t[]){1, 2}, 2), gf_tile(X, (const int64_t[]){2}, 1));
}
static gf_tensor *c_unfold(gf_tensor *const *in, int n) { return gf_unfold(X, 1, 2, 1); }
static gf_tensor *c_scatter(gf_tensor *const *in, int n) {
    return gf_scatter(X, 1, i64s((const int64_t[]){2, 0, 1, 3}, SZ(2, 2), 2), Y);
}
static gf_tensor *c_polar(gf_tensor *const *in, int n) {
    return gf_view_as_real(gf_polar(gf_add_scalar(gf_square(X), 0.5), Y));
}
static gf_tensor *c_angle(gf_tensor *const *in, int n) { return gf_angle(X); }

#define S2 2, {2, 2, 0}
static const fcase CASES[] = {
    {"neg", {20}, c_neg, IN1(2, {3, 4}), -2, 2, false, true},
    {"abs", {21}, c_abs, IN1(2, {3, 4}), -2, 2, false, false},
    {"sign", {22}, c_sign, IN1(1, {7}), -2, 2, false, false},
    {"exp", {23}, c_exp, IN1(2, {3, 4}), -2, 2, false, true},
    {"log", {24}, c_log, IN1(1, {6}), 0.3, 3, false, true},
    {"log1p", {25}, c_log1p, IN1(1, {6}), -0.5, 3, false, true},
    {"expm1", {26}, c_expm1, IN1(1, {6}), -2, 2, false, true},
    {"sqrt", {27}, c_sqrt, IN1(1, {6}), 0.3, 3, false, true},
    {"rsqrt", {28}, c_rsqrt, IN1(1, {6}), 0.3, 3, false, true},
    {"reciprocal", {29}, c_recip, IN1(1, {6}), 0.3, 3, false, true},
    {"square", {30}, c_square, IN1(1, {6}), -2, 2, false, true},
    {"sin", {31}, c_sin, IN1(1, {6}), -3, 3, false, true},
    {"cos", {32}, c_cos, IN1(1, {6}), -3, 3, false, true},
    {"tanh", {33}, c_tanh, IN1(1, {6}), -2, 2, false, true},
    {"sigmoid", {34}, c_sigmoid, IN1(1, {6}), -3, 3, false, true},
    {"relu", {35}, c_relu, IN1(1, {8}), -2, 2, false, false},
    {"leaky_relu", {36}, c_leaky, IN1(1, {8}), -2, 2, false, false},
    {"elu", {37}, c_elu, IN1(1, {8}), -2, 2, false, false},
    {"gelu", {38}, c_gelu, IN1(1, {8}), -3, 3, false, true},
    {"gelu_tanh", {39}, c_gelu_tanh, IN1(1, {8}), -3, 3, false, true},
    {"silu", {40}, c_silu, IN1(1, {8}), -3, 3, false, true},
    {"softplus", {41}, c_softplus, IN1(1, {8}), -3, 3, false, true},
    {"erf", {42}, c_erf, IN1(1, {8}), -2, 2, false, true},
    {"floor", {43}, c_floor, IN1(1, {8}), -3, 3, false, false},
    {"ceil", {44}, c_ceil, IN1(1, {8}), -3, 3, false, false},
    {"round", {45}, c_round, IN1(1, {8}), -3, 3, false, false},
    {"clamp", {46}, c_clamp, IN1(1, {8}), -1, 1, false, false},
    {"pow_scalar", {47}, c_pow_s, IN1(1, {6}), 0.2, 2, false, true},
    {"hardswish", {49}, c_hardswish, IN1(1, {8}), -4, 4, false, false},
    {"asin", {50}, c_asin, IN1(1, {6}), -0.9, 0.9, false, true},
    {"acos", {51}, c_acos, IN1(1, {6}), -0.9, 0.9, false, true},
    {"atan", {52}, c_atan, IN1(1, {6}), -3, 3, false, true},
    {"add", {60}, c_add, 2, {2, 1}, {{3, 4}, {4}}, -2, 2, false, true},
    {"sub", {61}, c_sub, 2, {1, 2}, {{4}, {3, 4}}, -2, 2, false, true},
    {"mul", {62}, c_mul, 2, {2, 2}, {{3, 1}, {1, 4}}, -2, 2, false, true},
    {"div", {63}, c_div, 2, {2, 2}, {{3, 4}, {3, 4}}, 0.5, 2, false, true},
    {"pow", {64}, c_pow, 2, {2, 1}, {{3, 4}, {4}}, 0.5, 2, false, true},
    {"maximum", {65}, c_maximum, 2, {2, 2}, {{3, 4}, {3, 4}}, -2, 2, false, false},
    {"minimum", {66}, c_minimum, 2, {2, 1}, {{3, 4}, {4}}, -2, 2, false, false},
    {"atan2", {76}, c_atan2, 2, {1, 1}, {{6}, {6}}, -2, 2, false, true},
    {"where", {75}, c_where, 2, {2, 2}, {{3, 4}, {3, 4}}, -2, 2, false, false},
    {"masked_fill", {0}, c_masked_fill, IN1(2, {3, 4}), -2, 2, false, false},
    {"fmod", {0}, c_fmod, 2, {1, 1}, {{6}, {6}}, 0.5, 3, false, false},
    {"remainder", {0}, c_remainder, 2, {1, 1}, {{6}, {6}}, 0.5, 3, false, false},
    {"clamp_tensor", {0}, c_clamp_t, 3, {1, 1, 1}, {{8}, {8}, {8}}, -1, 1, false, false},
    {"sum", {100}, c_sum, IN1(2, {3, 4}), -2, 2, false, true},
    {"mean", {101}, c_mean, IN1(2, {3, 4}), -2, 2, false, true},
    {"prod", {102}, c_prod, IN1(2, {3, 4}), 0.5, 1.5, false, true},
    {"amax", {103}, c_amax, IN1(2, {3, 4}), -2, 2, false, false},
    {"amin", {104}, c_amin, IN1(2, {3, 4}), -2, 2, false, false},
    {"var", {105}, c_var, IN1(2, {3, 4}), -2, 2, false, true},
    {"std", {105}, c_std, IN1(2, {3, 4}), -2, 2, false, true},
    {"logsumexp", {106}, c_lse, IN1(2, {3, 4}), -2, 2, false, true},
    {"max_dim", {107}, c_max_dim, IN1(2, {3, 4}), -2, 2, false, false},
    {"min_dim", {108}, c_min_dim, IN1(2, {3, 4}), -2, 2, false, false},
    {"vector_norm", {0}, c_norm, IN1(2, {3, 4}), 0.2, 2, false, true},
    {"matmul", {120}, c_matmul, 2, {2, 2}, {{3, 4}, {4, 2}}, -1, 1, false, true},
    {"bmm", {120}, c_matmul, 2, {3, 3}, {{2, 3, 4}, {2, 4, 2}}, -1, 1, false, true},
    {"matvec", {120}, c_matmul, 2, {2, 1}, {{3, 4}, {4}}, -1, 1, false, true},
    {"linear", {120}, c_linear, 3, {2, 2, 1}, {{3, 4}, {2, 4}, {2}}, -1, 1, false, true},
    {"softmax", {121}, c_softmax, IN1(2, {3, 4}), -2, 2, false, true},
    {"log_softmax", {122}, c_log_softmax, IN1(2, {3, 4}), -2, 2, false, true},
    {"layer_norm", {123}, c_layer_norm, 3, {2, 1, 1}, {{3, 4}, {4}, {4}}, -2, 2, false, true},
    {"batch_norm", {124}, c_batch_norm, 3, {3, 1, 1}, {{4, 3, 2}, {3}, {3}}, -2, 2, false, true},
    {"batch_norm_eval", {124}, c_batch_norm_eval, 3, {3, 1, 1}, {{4, 3, 2}, {3}, {3}}, -2, 2,
     false, true},
    {"index_select", {140}, c_index_select, IN1(2, {2, 3}), -2, 2, false, true},
    {"gather", {141}, c_gather, IN1(2, {2, 3}), -2, 2, false, true},
    {"scatter_add", {142}, c_scatter_add, 2, {2, 2}, {{2, 3}, {2, 3}}, -2, 2, false, true},
    {"index_add", {143}, c_index_add, 2, {2, 2}, {{3, 2}, {2, 2}}, -2, 2, false, true},
    {"embedding", {140}, c_embedding, IN1(2, {4, 3}), -2, 2, false, true},
    {"cat", {0}, c_cat, 2, {2, 2}, {{2, 3}, {1, 3}}, -2, 2, false, true},
    {"stack", {0}, c_stack, 2, {2, 2}, {{2, 3}, {2, 3}}, -2, 2, false, true},
    {"tril", {5}, c_tril, IN1(2, {3, 3}), -2, 2, false, true},
    {"triu", {6}, c_triu, IN1(2, {3, 4}), -2, 2, false, true},
    {"clone", {1}, c_clone, IN1(2, {3, 4}), -2, 2, false, true},
    {"contiguous", {1}, c_contig, IN1(2, {3, 4}), -2, 2, false, true},
    {"to_dtype", {1}, c_to_dtype, IN1(2, {3, 4}), -2, 2, false, true},
    {"views", {0}, c_views, IN1(1, {12}), -2, 2, false, true},
    {"flip", {0}, c_flip, IN1(2, {3, 4}), -2, 2, false, true},
    {"pad", {0}, c_pad, IN1(2, {2, 4}), -2, 2, false, true},
    {"conv2d", {160}, c_conv2d, 3, {4, 4, 1}, {{2, 2, 5, 5}, {3, 2, 3, 3}, {3}}, -1, 1, false,
     true},
    {"conv2d_backward_input", {161}, c_conv_bwi, 2, {4, 4}, {{1, 3, 4, 4}, {3, 2, 3, 3}}, -1, 1,
     false, true},
    {"conv2d_backward_weight", {162}, c_conv_bww, 2, {4, 4}, {{1, 3, 4, 4}, {1, 2, 4, 4}}, -1, 1,
     false, true},
    {"max_pool2d", {163}, c_max_pool, IN1(4, {1, 2, 4, 4}), -2, 2, false, true},
    {"max_pool2d_backward", {164}, c_max_pool_bw, IN1(4, {1, 2, 2, 2}), -2, 2, false, true},
    {"avg_pool2d", {165}, c_avg_pool, IN1(4, {1, 2, 4, 4}), -2, 2, false, true},
    {"avg_pool2d_backward", {166}, c_avg_pool_bw, IN1(4, {1, 2, 2, 2}), -2, 2, false, true},
    {"mse_loss", {0}, c_mse, 2, {2, 2}, {{3, 4}, {3, 4}}, -2, 2, false, true},
    {"cross_entropy", {0}, c_xent, IN1(2, {3, 4}), -2, 2, false, true},
    {"cumsum", {0}, c_cumsum, IN1(2, {3, 4}), -2, 2, false, true},
    {"cumprod", {0}, c_cumprod, IN1(2, {3, 4}), 0.5, 1.5, false, true},
    {"logcumsumexp", {0}, c_logcumsumexp, IN1(2, {3, 4}), -2, 2, false, true},
    {"sort", {0}, c_sort, IN1(2, {3, 4}), -2, 2, false, true},
    {"topk", {0}, c_topk, IN1(2, {3, 4}), -2, 2, false, true},
    {"median_dim", {0}, c_median, IN1(2, {3, 5}), -2, 2, false, true},
    {"einsum", {0}, c_einsum, 2, {2, 2}, {{2, 3}, {3, 4}}, -1, 1, false, true},
    {"roll/repeat/tile", {0}, c_roll_repeat, IN1(2, {2, 3}), -2, 2, false, true},
    {"unfold", {0}, c_unfold, IN1(2, {2, 4}), -2, 2, false, true},
    {"scatter", {0}, c_scatter, 2, {2, 2}, {{2, 4}, {2, 2}}, -2, 2, false, true},
    {"polar", {0}, c_polar, 2, {1, 1}, {{4}, {4}}, -1, 1, false, false},
    {"angle", {0}, c_angle, IN1(1, {4}), -1, 1, true, false},
    {"complex exp*sin", {23, 31, 62}, c_cx_mul, IN1(1, {5}), -1, 1, true, false},
    {"complex abs", {0}, c_cx_abs, IN1(1, {5}), -1, 1, true, false},
    {"complex real/imag/view_as_real", {0}, c_cx_parts, IN1(1, {5}), -1, 1, true, false},
    {"complex conj", {0}, c_cx_conj, IN1(1, {5}), -1, 1, true, false},
    {"view_as_complex", {0}, c_cx_complex, 2, {1, 1}, {{5}, {5}}, -1, 1, false, false},
    {"complex(re, im)", {0}, c_cx_make, 2, {1, 1}, {{5}, {5}}, -1, 1, false, false},
    {"complex matmul", {120}, c_cx_matmul, 2, {2, 2}, {{2, 3}, {3, 2}}, -1, 1, true, false},
    {"fft", {168}, c_fft, IN1(2, {2, 5}), -1, 1, true, false},
    {"rfft", {168}, c_rfft, IN1(1, {6}), -1, 1, false, false},
    {"irfft", {168}, c_irfft, IN1(1, {4}), -1, 1, true, false},
};
#define N_CASES ((int)(sizeof CASES / sizeof CASES[0]))

/* Ops of the table that carry no tangent, and why. */
static const struct {
    int op;
    const char *why;
} NO_TANGENT[] = {
    {2, "fill: a creation op, no tensor input"},
    {3, "arange: a creation op, no tensor input"},
    {4, "random: a creation op, no tensor input"},
    {48, "logical_not: a bool output"},
    {67, "eq: a bool output"}, {68, "ne: a bool output"}, {69, "lt: a bool output"},
    {70, "le: a bool output"}, {71, "gt: a bool output"}, {72, "ge: a bool output"},
    {73, "logical_and: a bool output"}, {74, "logical_or: a bool output"},
    {77, "relu_backward: as batch_norm_backward"},
    {78, "gelu_backward: as batch_norm_backward"},
    {125, "batch_norm_backward: the fused gradient kernel runs only when the gradient needs no "
          "derivative of its own; with a tangent present the composed formula runs instead"},
    {126, "layer_norm_backward: as batch_norm_backward"},
    {127, "softmax_backward: as batch_norm_backward"},
    {128, "log_softmax_backward: as batch_norm_backward"},
    {167, "adam_update: an optimiser step under no-grad, not a differentiable op"},
    {169, "lstm_cell_backward: inside the LSTM's fused sequence node only, which takes the "
          "composed layer whenever a tangent or a gradient's own history is involved"},
    {170, "lstm_cell: inside the LSTM's fused sequence node only, which takes the composed "
          "layer whenever an input carries a tangent"},
};

/* ------------------------------------------------------------ the checks */
static const fcase *g_case;

static gf_tensor *run_case(gf_tensor *const *in, int n, void *user) {
    (void)user;
    gf_scope_begin();
    gf_tensor *r = gf_scope_keep(g_case->fn(in, n));
    gf_scope_end();
    return r;
}

static gf_status run_func(gf_tensor *const *in, int n, gf_tensor **out, int n_out, void *user) {
    (void)n_out;
    out[0] = run_case(in, n, user);
    return out[0] ? GF_OK : gf_last_status();
}

/* Re <a, b> over real coordinates. */
static double dot(const gf_tensor *a, const gf_tensor *b) {
    gf_scope_begin();
    gf_tensor *ra = gf_dtype_is_complex(gf_tensor_dtype(a)) ? gf_view_as_real(a) : (gf_tensor *)a;
    gf_tensor *rb = gf_dtype_is_complex(gf_tensor_dtype(b)) ? gf_view_as_real(b) : (gf_tensor *)b;
    double v = ag_item(gf_sum(gf_mul(ra, rb), NULL, 0, false));
    gf_scope_end();
    return v;
}

static bool g_covered[GFP_OP_ROW_COUNT];

static void mark(int op) {
    for (int i = 0; i < GFP_OP_ROW_COUNT; i++)
        if ((int)gfp_op_table[i].op == op) g_covered[i] = true;
}

/* Whether the default device stores c128 (opencl, vulkan do not): where it
 * does not, the cases that make complex tensors are checked by the runs on
 * the devices that do (reference, cpu_onednn), and are skipped here. */
static bool g_no_c128;
static int g_skipped;

static bool skip_complex(const fcase *c, gf_tensor *const *in) {
    if (!g_no_c128) return false;
    bool cx = c->cx;
    if (!cx) { /* real inputs: does the case make complex tensors? */
        gf_tensor *r = run_case(in, c->n_in, NULL);
        cx = r ? gf_dtype_is_complex(gf_tensor_dtype(r)) /* a view may not need storage */
               : gf_last_status() == GF_ERR_DTYPE && strstr(gf_last_error(), "dtype c");
        gf_tensor_release(r);
    }
    if (!cx) return false;
    printf("skipped here (the device stores no c128; checked where it does): %s\n", c->name);
    g_skipped++;
    for (int k = 0; k < 4 && c->ops[k]; k++) mark(c->ops[k]);
    return true;
}

static void check_case(const fcase *c) {
    int failed_before = check_failed_;
    g_case = c;
    gf_tensor *in[3] = {NULL, NULL, NULL};
    if (g_no_c128 && c->cx) {
        skip_complex(c, in);
        return;
    }
    for (int i = 0; i < c->n_in; i++) {
        in[i] = rnd(c->sizes[i], c->rank[i], c->lo, c->hi, c->cx);
        gf_tensor_set_requires_grad(in[i], true);
    }
    if (skip_complex(c, in)) {
        for (int i = 0; i < c->n_in; i++) gf_tensor_release(in[i]);
        return;
    }
    /* 1: forward and reverse against central differences */
    gf_gradcheck_opts o = GF_GRADCHECK_OPTS_DEFAULT;
    o.check_forward_ad = true;
    gf_status s = gf_gradcheck(run_case, in, c->n_in, NULL, &o);
    CHECK_MSG(s == GF_OK, "%s: %s", c->name, gf_last_error());
    /* 2: <u, J v> = <J^T u, v> */
    gf_tensor *v[3] = {NULL, NULL, NULL}, *y = NULL, *jv = NULL, *vj[3] = {NULL, NULL, NULL};
    for (int i = 0; i < c->n_in; i++) v[i] = rnd_like(in[i]);
    s = gf_jvp(run_func, in, c->n_in, v, 1, NULL, &y, &jv);
    CHECK_MSG(s == GF_OK, "%s: gf_jvp: %s", c->name, gf_last_error());
    gf_tensor *u = y ? rnd_like(y) : NULL;
    if (u) {
        s = gf_vjp(run_func, in, c->n_in, &u, 1, NULL, false, NULL, vj);
        CHECK_MSG(s == GF_OK, "%s: gf_vjp: %s", c->name, gf_last_error());
        if (s == GF_OK) {
            double lhs = dot(u, jv), rhs = 0;
            for (int i = 0; i < c->n_in; i++) rhs += dot(vj[i], v[i]);
            CHECK_MSG(check_close_(lhs, rhs, 1e-10, 1e-9), "%s: <u, Jv> = %.17g but <J^T u, v> = "
                      "%.17g", c->name, lhs, rhs);
        }
    }
    /* 3: forward-over-reverse */
    if (c->second) {
        s = gf_gradgradcheck(run_case, in, c->n_in, NULL, &o);
        CHECK_MSG(s == GF_OK, "%s: gradgradcheck (forward-over-reverse): %s", c->name,
                  gf_last_error());
    }
    if (check_failed_ == failed_before)
        for (int k = 0; k < 4 && c->ops[k]; k++) mark(c->ops[k]);
    gf_tensor_release(u);
    gf_tensor_release(y);
    gf_tensor_release(jv);
    for (int i = 0; i < 3; i++) {
        gf_tensor_release(in[i]);
        gf_tensor_release(v[i]);
        gf_tensor_release(vj[i]);
    }
}

static void test_every_rule(void) {
    gf_device_info info;
    g_no_c128 = gf_device_get_info(gf_device_default(), &info) == GF_OK &&
                !(info.dtypes & (1u << GF_C128));
    for (int i = 0; i < N_CASES; i++) {
        int before = check_failed_;
        check_case(&CASES[i]);
        if (check_failed_ != before) fprintf(stderr, "  (case %s failed)\n", CASES[i].name);
    }
    printf("%d jvp cases checked against central differences and reverse mode (%d skipped: "
           "complex, on a device without c128)\n", N_CASES - g_skipped, g_skipped);
}

/* Every op of the table has a passing case or a reason to carry no tangent. */
static void test_coverage(void) {
    int missing = 0, ruled = 0, exempt = 0;
    for (int i = 0; i < GFP_OP_ROW_COUNT; i++) {
        bool listed = false;
        for (size_t k = 0; k < sizeof NO_TANGENT / sizeof NO_TANGENT[0]; k++)
            if (NO_TANGENT[k].op == (int)gfp_op_table[i].op) listed = true;
        if (g_covered[i]) ruled++;
        else if (listed) exempt++;
        else {
            missing++;
            fprintf(stderr, "op %s (%u) has no passing forward-mode case and is not listed as "
                    "carrying no tangent\n", gfp_op_table[i].name, (unsigned)gfp_op_table[i].op);
        }
        CHECK(!(g_covered[i] && listed));
    }
    CHECK(missing == 0);
    printf("op table: %d ops with a checked jvp rule, %d without a tangent (listed), %d missing\n",
           ruled, exempt, missing);
}

int main(void) {
    RUN(test_every_rule);
    RUN(test_coverage);
    CHECK_MSG(gf_shutdown() == GF_OK, "every buffer released: %s", gf_last_error());
    return CHECK_REPORT();
}
