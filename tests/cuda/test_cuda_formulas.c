/* SPDX-License-Identifier: BSD-3-Clause */
/* test_cuda_formulas.c — the CUDA elementwise formulas are the ones the
 * OpenCL (and Vulkan) kernels are generated from, and they compute what the
 * reference plugin computes. Needs no GPU.
 *
 * 1. Text: for every op of plugins/common/op_math.def and every compute type
 *    it has, the generated CUDA header and the generated OpenCL source both
 *    carry the op's "gf-math" line, equal to the table's formula, and both
 *    function bodies are that formula token for token once each dialect's
 *    spelling is undone (expf -> exp, 0.5f -> 0.5, gf_wadd -> wadd,
 *    gf_tanh_f32 -> tanh for a dialect's helper). The
 *    spelling itself is checked too: an f32 body calls only f-suffixed
 *    functions and uses only f-suffixed literals, so no f32 kernel silently
 *    computes in double. The Vulkan (GLSL) source, when the build generates
 *    it, carries the same gf-math lines (its bodies call GLSL's own helpers,
 *    so they are not compared token by token).
 * 2. Values: the CUDA header compiles as host C here (the same text nvcc
 *    compiles for the GPU); every op is evaluated on grids of ordinary and
 *    extreme values, with every parameter variant, and compared bit for bit
 *    with the reference plugin driven through the ABI. Host and reference
 *    share the C library, so any difference is a formula that disagrees with
 *    the oracle; on a GPU, tests/cuda/test_cuda_elementwise.c then measures
 *    what CUDA's math library adds. */
#include <math.h>
#include <stdint.h>

#include "check.h"
#include "abi_host.h"
#include "gf_math_cuda.h"

#ifndef GF_CUDA_MATH_FILE
#error "GF_CUDA_MATH_FILE (the generated CUDA header) must be defined"
#endif
#ifndef GF_OPENCL_MATH_FILE
#error "GF_OPENCL_MATH_FILE (the generated OpenCL source) must be defined"
#endif

/* ------------------------------------------------------------ the table */
typedef struct def_op {
    uint32_t op;
    const char *name;
    int arity;
    const char *kind;
    const char *float_formula, *int_formula;
} def_op;

static const def_op defs[] = {
#define GF_OP_MATH_UNARY(ID, name, kind, f, i) {GFP_OP_##ID, #name, 1, #kind, f, i},
#define GF_OP_MATH_BINARY(ID, name, kind, f, i) {GFP_OP_##ID, #name, 2, #kind, f, i},
#include "op_math.def"
};
#define N_DEFS (sizeof defs / sizeof defs[0])

/* The compute types an op has a function for (op_math.def's kinds). */
static int cts_of(const def_op *d, const char **cts) {
    if (!strcmp(d->kind, "FLOAT")) {
        cts[0] = "f32";
        cts[1] = "f64";
        return 2;
    }
    if (!strcmp(d->kind, "LOGICAL")) {
        cts[0] = "bool";
        return 1;
    }
    cts[0] = "f32";
    cts[1] = "f64";
    cts[2] = "int";
    return 3;
}

/* ------------------------------------------------------------ tokens */
#define MAX_TOK 128
typedef struct toks {
    int n;
    char t[MAX_TOK][48];
} toks;

static bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* Splits an expression into identifiers, numbers (with any suffix letters)
 * and operators. Independent of the generator's own tokenizer. */
static void tokenize(const char *s, size_t len, toks *out) {
    out->n = 0;
    size_t i = 0;
    while (i < len && out->n < MAX_TOK) {
        char c = s[i];
        if (c == ' ' || c == '\n') {
            i++;
            continue;
        }
        size_t j = i + 1;
        if (is_ident_start(c)) {
            while (j < len && (is_ident_start(s[j]) || is_digit(s[j]))) j++;
        } else if (is_digit(c) || c == '.') {
            while (j < len && (is_digit(s[j]) || s[j] == '.' ||
                               ((s[j] == 'e' || s[j] == 'E') && j + 1 < len &&
                                (is_digit(s[j + 1]) || s[j + 1] == '-' || s[j + 1] == '+'))))
                j += (s[j] == 'e' || s[j] == 'E') ? 2 : 1;
            while (j < len && is_ident_start(s[j])) j++; /* f, L, LL */
        } else if (j < len && strchr("=!<>&|", c) && (s[j] == '=' || s[j] == c) &&
                   !(c == '<' && s[j] == '<') && !(c == '>' && s[j] == '>')) {
            j++;
        }
        size_t n = j - i < 47 ? j - i : 47;
        memcpy(out->t[out->n], s + i, n);
        out->t[out->n][n] = '\0';
        out->n++;
        i = j;
    }
}

static const char *const float_vocab[] = {"exp",  "log",  "log1p", "expm1", "sqrt",
                                          "sin",  "cos",  "tanh",  "erf",   "floor",
                                          "ceil", "rint", "fabs",  "pow",   "isnan",
                                          "asin", "acos", "atan",  "atan2"};
static bool in_vocab(const char *s) {
    for (size_t i = 0; i < sizeof float_vocab / sizeof float_vocab[0]; i++)
        if (!strcmp(s, float_vocab[i])) return true;
    return false;
}

/* Rewrites token tok of a dialect's body in the table's spelling; problem
 * receives a description when the dialect spelled it wrongly for ct. */
static void unspell(const char *dialect, const char *ct, char *tok, char *problem, size_t plen) {
    bool cuda = !strcmp(dialect, "cuda");
    if (is_ident_start(tok[0])) {
        if (!strncmp(tok, "gf_", 3)) {
            /* A dialect's helper for a vocabulary function: gf_wadd, or
             * gf_tanh_f32 where the dialect's own tanh needs help. */
            memmove(tok, tok + 3, strlen(tok + 3) + 1);
            size_t m = strlen(tok);
            if (m > 4 && (!strcmp(tok + m - 4, "_f32") || !strcmp(tok + m - 4, "_f64"))) {
                char stem[48];
                snprintf(stem, sizeof stem, "%.*s", (int)(m - 4), tok);
                if (in_vocab(stem)) memcpy(tok, stem, strlen(stem) + 1);
            }
            return;
        }
        size_t n = strlen(tok);
        if (cuda && !strcmp(ct, "f32") && strcmp(tok, "isnan") != 0) {
            if (n > 1 && tok[n - 1] == 'f') {
                tok[n - 1] = '\0';
                if (in_vocab(tok)) return;
                tok[n - 1] = 'f';
            }
            if (in_vocab(tok))
                snprintf(problem, plen, "f32 body calls %s, the double function", tok);
        }
        return;
    }
    if (is_digit(tok[0]) || tok[0] == '.') {
        size_t n = strlen(tok), k = n;
        while (k > 0 && is_ident_start(tok[k - 1])) k--;
        const char *suffix = tok + k;
        const char *want = "";
        if (!strcmp(ct, "f32")) want = "f";
        else if (!strcmp(ct, "int")) want = cuda ? "LL" : "L";
        if (strcmp(suffix, want) != 0)
            snprintf(problem, plen, "literal %s in a %s body: its suffix should be \"%s\"", tok, ct,
                     want);
        tok[k] = '\0';
    }
}

static bool same_token(const char *canon, const char *got) {
    if ((is_digit(canon[0]) || canon[0] == '.') && (is_digit(got[0]) || got[0] == '.'))
        return strtod(canon, NULL) == strtod(got, NULL);
    return !strcmp(canon, got);
}

/* ------------------------------------------------------------ files */
static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    if (buf) buf[n] = '\0';
    fclose(f);
    return buf;
}

/* Checks one generated file for op d in compute type ct. */
static void check_dialect(const char *dialect, const char *text, const def_op *d, const char *ct) {
    const char *formula = !strcmp(ct, "int") ? d->int_formula : d->float_formula;
    toks want;
    tokenize(formula, strlen(formula), &want);

    char key[96];
    snprintf(key, sizeof key, "/* gf-math %s %s: ", d->name, ct);
    const char *at = strstr(text, key);
    CHECK_MSG(at != NULL, "%s: no gf-math line for %s %s", dialect, d->name, ct);
    if (!at) return;
    const char *canon = at + strlen(key), *end = strstr(canon, " */");
    CHECK_MSG(end != NULL, "%s: unterminated gf-math line for %s %s", dialect, d->name, ct);
    if (!end) return;
    toks line;
    tokenize(canon, (size_t)(end - canon), &line);
    bool same = line.n == want.n;
    for (int i = 0; same && i < want.n; i++) same = !strcmp(line.t[i], want.t[i]);
    CHECK_MSG(same, "%s: the gf-math line of %s %s is \"%.*s\", the table says \"%s\"", dialect,
              d->name, ct, (int)(end - canon), canon, formula);

    /* The function right after the line: gf_<ct>_<name>(...) { return <expr>; } */
    char fn[96];
    snprintf(fn, sizeof fn, " gf_%s_%s(", ct, d->name);
    const char *sig = strstr(end, fn), *next = strstr(end, "/* gf-math ");
    CHECK_MSG(sig && (!next || sig < next), "%s: no function gf_%s_%s after its gf-math line",
              dialect, ct, d->name);
    if (!sig || (next && sig > next)) return;
    const char *ret = strstr(sig, "return "), *semi = ret ? strstr(ret, ";\n}") : NULL;
    CHECK_MSG(ret && semi, "%s: gf_%s_%s has no return expression", dialect, ct, d->name);
    if (!ret || !semi) return;
    toks body;
    tokenize(ret + 7, (size_t)(semi - ret - 7), &body);
    char problem[160] = "";
    for (int i = 0; i < body.n; i++) unspell(dialect, ct, body.t[i], problem, sizeof problem);
    CHECK_MSG(!problem[0], "%s: gf_%s_%s: %s", dialect, ct, d->name, problem);
    same = body.n == want.n;
    for (int i = 0; same && i < want.n; i++) same = same_token(want.t[i], body.t[i]);
    CHECK_MSG(same, "%s: the body of gf_%s_%s, \"%.*s\", is not the table's formula \"%s\"",
              dialect, ct, d->name, (int)(semi - ret - 7), ret + 7, formula);
}

#ifdef GF_GLSL_MATH_FILE
/* GLSL: the gf-math line of every (op, compute type) equals the table. */
static void check_glsl(const char *text, const def_op *d, const char *ct) {
    const char *formula = !strcmp(ct, "int") ? d->int_formula : d->float_formula;
    char key[96];
    snprintf(key, sizeof key, "/* gf-math %s %s: ", d->name, ct);
    const char *at = strstr(text, key);
    CHECK_MSG(at != NULL, "glsl: no gf-math line for %s %s", d->name, ct);
    if (!at) return;
    const char *canon = at + strlen(key), *end = strstr(canon, " */");
    toks want, line;
    tokenize(formula, strlen(formula), &want);
    tokenize(canon, end ? (size_t)(end - canon) : 0, &line);
    bool same = end && line.n == want.n;
    for (int i = 0; same && i < want.n; i++) same = !strcmp(line.t[i], want.t[i]);
    CHECK_MSG(same, "glsl: the gf-math line of %s %s differs from the table's \"%s\"", d->name,
              ct, formula);
}
#endif

static void test_text(void) {
    char *cuda = read_file(GF_CUDA_MATH_FILE), *ocl = read_file(GF_OPENCL_MATH_FILE);
    CHECK_MSG(cuda != NULL, "cannot read %s", GF_CUDA_MATH_FILE);
    CHECK_MSG(ocl != NULL, "cannot read %s", GF_OPENCL_MATH_FILE);
#ifdef GF_GLSL_MATH_FILE
    char *glsl = read_file(GF_GLSL_MATH_FILE);
    CHECK_MSG(glsl != NULL, "cannot read %s", GF_GLSL_MATH_FILE);
#endif
    if (cuda && ocl) {
        int checked = 0;
        for (size_t i = 0; i < N_DEFS; i++) {
            const char *cts[3];
            int n = cts_of(&defs[i], cts);
            for (int k = 0; k < n; k++) {
                check_dialect("cuda", cuda, &defs[i], cts[k]);
                check_dialect("opencl", ocl, &defs[i], cts[k]);
#ifdef GF_GLSL_MATH_FILE
                if (glsl) check_glsl(glsl, &defs[i], cts[k]);
#endif
                checked++;
            }
        }
        /* Every unary (NEG .. LOGICAL_NOT) and binary (ADD .. LOGICAL_OR) op of
         * the ABI is in the table: none is left to hand-written kernel math. */
        for (uint32_t op = GFP_OP_NEG; op <= GFP_OP_LOGICAL_OR; op++) {
            if (op > GFP_OP_LOGICAL_NOT && op < GFP_OP_ADD) continue;
            bool found = false;
            for (size_t i = 0; i < N_DEFS; i++) found = found || defs[i].op == op;
            CHECK_MSG(found, "ABI op %u is not in op_math.def", (unsigned)op);
        }
        fprintf(stderr, "  %d (op, compute type) formulas compared across the dialects\n",
                checked);
    }
    free(cuda);
    free(ocl);
#ifdef GF_GLSL_MATH_FILE
    free(glsl);
#endif
}

/* ------------------------------------------------------------ the oracle */
static abi_plugin ref;

/* Runs op on the reference with 1-D inputs of n elements (dtypes in_dt,
 * values in bufs) into out (dtype out_dt); returns the output bytes. */
static void *ref_run(uint32_t op, int n_in, const int32_t *in_dt, void *const *in_data, int64_t n,
                     int32_t out_dt, const void *params) {
    gfp_tensor t[4];
    const gfp_tensor *ins[3];
    gfp_buffer bufs[4] = {0};
    void *host[4] = {0};
    bool ok = true;
    for (int i = 0; i <= n_in && ok; i++) {
        int32_t dt = i < n_in ? in_dt[i] : out_dt;
        ok = ref.t->buffer_alloc(ref.dev, (uint64_t)n * abi_esize(dt), &bufs[i], &host[i]) ==
             GFP_OK;
        if (!ok) break;
        t[i] = abi_vec(bufs[i], 0, dt, n);
        if (i < n_in) {
            memcpy(host[i], in_data[i], (size_t)n * abi_esize(dt));
            ins[i] = &t[i];
        }
    }
    const gfp_tensor *outs[1] = {&t[n_in]};
    void *result = NULL;
    if (ok && ref.t->launch(ref.dev, op, ins, (uint32_t)n_in, outs, 1, params) == GFP_OK) {
        result = malloc((size_t)n * abi_esize(out_dt));
        memcpy(result, host[n_in], (size_t)n * abi_esize(out_dt));
    } else {
        fprintf(stderr, "reference launch of op %u failed: %s\n", (unsigned)op, ref.error);
    }
    for (int i = 0; i <= n_in; i++)
        if (bufs[i]) ref.t->buffer_free(ref.dev, bufs[i]);
    return result;
}

/* Bit-equal, except that any NaN equals any NaN. */
static bool same_f32(float a, float b) {
    if (a != a || b != b) return a != a && b != b;
    return memcmp(&a, &b, sizeof a) == 0;
}
static bool same_f64(double a, double b) {
    if (a != a || b != b) return a != a && b != b;
    return memcmp(&a, &b, sizeof a) == 0;
}

/* ------------------------------------------------------------ host formulas */
typedef float (*un_f32_fn)(float, float, float, int, int);
typedef double (*un_f64_fn)(double, double, double, int, int);
typedef long long (*un_int_fn)(long long, long long, long long, int, int);
typedef float (*bin_f32_fn)(float, float);
typedef double (*bin_f64_fn)(double, double);
typedef long long (*bin_int_fn)(long long, long long);
typedef int (*cmp_f32_fn)(float, float);
typedef int (*cmp_f64_fn)(double, double);
typedef int (*cmp_int_fn)(long long, long long);

/* Per table kind: the functions the header has for it. */
#define FN_F32_FLOAT(ID, name) gf_f32_##name
#define FN_F32_NUMERIC(ID, name) gf_f32_##name
#define FN_F32_COMPARE(ID, name) NULL
#define FN_F32_LOGICAL(ID, name) NULL
#define FN_F64_FLOAT(ID, name) gf_f64_##name
#define FN_F64_NUMERIC(ID, name) gf_f64_##name
#define FN_F64_COMPARE(ID, name) NULL
#define FN_F64_LOGICAL(ID, name) NULL
#define FN_INT_FLOAT(ID, name) NULL
#define FN_INT_NUMERIC(ID, name) gf_int_##name
#define FN_INT_COMPARE(ID, name) NULL
#define FN_INT_LOGICAL(ID, name) NULL
#define FN_C32_COMPARE(ID, name) gf_f32_##name
#define FN_C64_COMPARE(ID, name) gf_f64_##name
#define FN_CI_COMPARE(ID, name) gf_int_##name
#define FN_C32_FLOAT(ID, name) NULL
#define FN_C32_NUMERIC(ID, name) NULL
#define FN_C32_LOGICAL(ID, name) NULL
#define FN_C64_FLOAT(ID, name) NULL
#define FN_C64_NUMERIC(ID, name) NULL
#define FN_C64_LOGICAL(ID, name) NULL
#define FN_CI_FLOAT(ID, name) NULL
#define FN_CI_NUMERIC(ID, name) NULL
#define FN_CI_LOGICAL(ID, name) NULL

typedef struct host_unary {
    uint32_t op;
    un_f32_fn f32;
    un_f64_fn f64;
    un_int_fn i;
} host_unary;
static const host_unary host_unaries[] = {
#define GF_OP_MATH_UNARY(ID, name, kind, f, i) \
    {GFP_OP_##ID, FN_F32_##kind(ID, name), FN_F64_##kind(ID, name), FN_INT_##kind(ID, name)},
#include "op_math.def"
};

typedef struct host_binary {
    uint32_t op;
    bin_f32_fn f32;
    bin_f64_fn f64;
    bin_int_fn i;
    cmp_f32_fn c32;
    cmp_f64_fn c64;
    cmp_int_fn ci;
} host_binary;
static const host_binary host_binaries[] = {
#define GF_OP_MATH_BINARY(ID, name, kind, f, i)                                             \
    {GFP_OP_##ID,           FN_F32_##kind(ID, name), FN_F64_##kind(ID, name),              \
     FN_INT_##kind(ID, name), FN_C32_##kind(ID, name), FN_C64_##kind(ID, name),            \
     FN_CI_##kind(ID, name)},
#include "op_math.def"
};

/* ------------------------------------------------------------ value grids */
static const double float_grid_special[] = {
    0.0, -0.0, NAN, INFINITY, -INFINITY, 1.0, -1.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.5,
    1e-30, -1e-30, 1e-40, 1e30, -1e30, 88.5, -88.5, 100.0, -100.0, 20.0, -20.0, 0.1, 3e38};
#define N_FGRID (27 + 240)
static double fgrid[N_FGRID];

static const int64_t int_grid[] = {0, 1, -1, 2, -2, 3, -3, 7, -7, 100, -100, 46341, -46341,
                                   2147483647, -2147483647 - 1, 2147483648LL, 4294967301LL,
                                   3037000499LL, -3037000500LL, INT64_MAX, INT64_MIN,
                                   INT64_MIN + 1, 63, 64, -64};
#define N_IGRID (sizeof int_grid / sizeof int_grid[0])

static void make_grids(void) {
    size_t k = 0;
    for (; k < sizeof float_grid_special / sizeof float_grid_special[0]; k++)
        fgrid[k] = float_grid_special[k];
    for (int i = 0; k < N_FGRID; i++, k++) fgrid[k] = -12.0 + 24.0 * (i + 0.37) / 240.0;
}

/* Unary parameter variants: gfp_scalar_params or gfp_clamp_params. */
typedef struct variant {
    double a, b;
    bool has_a, has_b; /* clamp */
} variant;

static int variants_of(uint32_t op, variant *v) {
    switch (op) {
    case GFP_OP_LEAKY_RELU:
        v[0] = (variant){0.125, 0, 0, 0};
        v[1] = (variant){-0.3, 0, 0, 0};
        return 2;
    case GFP_OP_ELU:
        v[0] = (variant){1.3, 0, 0, 0};
        v[1] = (variant){0.7, 0, 0, 0};
        return 2;
    case GFP_OP_SOFTPLUS:
        v[0] = (variant){2.0, 5.0, 0, 0};
        v[1] = (variant){1.0, 20.0, 0, 0};
        v[2] = (variant){0.5, 1.0, 0, 0};
        return 3;
    case GFP_OP_POW_SCALAR:
        v[0] = (variant){2.5, 0, 0, 0};
        v[1] = (variant){-1.0, 0, 0, 0};
        v[2] = (variant){3.0, 0, 0, 0};
        v[3] = (variant){0.5, 0, 0, 0};
        v[4] = (variant){0.0, 0, 0, 0};
        return 5;
    case GFP_OP_CLAMP:
        v[0] = (variant){-1.5, 2.5, 1, 1};
        v[1] = (variant){-0.5, 0, 1, 0};
        v[2] = (variant){0, 1.0, 0, 1};
        v[3] = (variant){2.0, -1.0, 1, 1}; /* crossed bounds: every element is max */
        v[4] = (variant){NAN, 1.0, 1, 1};  /* a NaN bound is no bound */
        v[5] = (variant){-1e30, 1e30, 1, 1};
        return 6;
    default: v[0] = (variant){0, 0, 0, 0}; return 1;
    }
}

/* The params struct of op for variant v (NULL for ops without). */
static const void *params_of(uint32_t op, const variant *v, gfp_scalar_params *sp,
                             gfp_clamp_params *cp) {
    if (op == GFP_OP_CLAMP) {
        *cp = (gfp_clamp_params){.struct_size = sizeof *cp, .has_min = v->has_a,
                                 .has_max = v->has_b, .min = v->a, .max = v->b};
        return cp;
    }
    if (op == GFP_OP_LEAKY_RELU || op == GFP_OP_ELU || op == GFP_OP_SOFTPLUS ||
        op == GFP_OP_POW_SCALAR) {
        *sp = (gfp_scalar_params){.struct_size = sizeof *sp, .a = v->a, .b = v->b};
        return sp;
    }
    return NULL;
}

/* The parameters in the form the generated functions take (ABI: in the
 * compute type; a clamp bound that is absent or NaN is no bound; integer
 * bounds truncate toward zero and saturate). */
static int64_t trunc_i64(double v) {
    if (v != v) return 0;
    if (v >= 9223372036854775808.0) return INT64_MAX;
    if (v <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)v;
}

static void test_unary_values(void) {
    for (size_t u = 0; u < sizeof host_unaries / sizeof host_unaries[0]; u++) {
        const host_unary *h = &host_unaries[u];
        if (!h->f32) continue; /* logical_not: below */
        variant vs[8];
        int nv = variants_of(h->op, vs);
        for (int k = 0; k < nv; k++) {
            const variant *v = &vs[k];
            gfp_scalar_params sp;
            gfp_clamp_params cp;
            const void *params = params_of(h->op, v, &sp, &cp);
            int ha = h->op == GFP_OP_CLAMP ? v->has_a && v->a == v->a : 0;
            int hb = h->op == GFP_OP_CLAMP ? v->has_b && v->b == v->b : 0;
            /* f32 */
            float xf[N_FGRID];
            for (int i = 0; i < N_FGRID; i++) xf[i] = (float)fgrid[i];
            int32_t dt = GFP_F32;
            void *in[1] = {xf};
            float *rf = ref_run(h->op, 1, &dt, in, N_FGRID, GFP_F32, params);
            int bad = 0;
            for (int i = 0; rf && i < N_FGRID; i++) {
                float got = h->f32(xf[i], (float)v->a, (float)v->b, ha, hb);
                if (!same_f32(got, rf[i]) && bad++ < 3)
                    fprintf(stderr, "  op %u f32 variant %d: x = %.9g: cuda formula %.9g, "
                            "reference %.9g\n", (unsigned)h->op, k, xf[i], got, rf[i]);
            }
            CHECK_MSG(rf && bad == 0, "op %u f32 (variant %d): %d values differ", (unsigned)h->op,
                      k, bad);
            free(rf);
            /* f64 */
            dt = GFP_F64;
            in[0] = fgrid;
            double *rd = ref_run(h->op, 1, &dt, in, N_FGRID, GFP_F64, params);
            bad = 0;
            for (int i = 0; rd && i < N_FGRID; i++) {
                double got = h->f64(fgrid[i], v->a, v->b, ha, hb);
                if (!same_f64(got, rd[i]) && bad++ < 3)
                    fprintf(stderr, "  op %u f64 variant %d: x = %.17g: cuda formula %.17g, "
                            "reference %.17g\n", (unsigned)h->op, k, fgrid[i], got, rd[i]);
            }
            CHECK_MSG(rd && bad == 0, "op %u f64 (variant %d): %d values differ", (unsigned)h->op,
                      k, bad);
            free(rd);
            if (!h->i) continue;
            /* i64 and i32: computed in i64, narrowed modulo 2^32 */
            long long ia = trunc_i64(v->a), ib = trunc_i64(v->b);
            int64_t xi[N_IGRID];
            int32_t x32[N_IGRID];
            for (size_t i = 0; i < N_IGRID; i++) {
                xi[i] = int_grid[i];
                x32[i] = (int32_t)(uint32_t)(uint64_t)int_grid[i];
            }
            dt = GFP_I64;
            in[0] = xi;
            int64_t *ri = ref_run(h->op, 1, &dt, in, (int64_t)N_IGRID, GFP_I64, params);
            dt = GFP_I32;
            in[0] = x32;
            int32_t *r32 = ref_run(h->op, 1, &dt, in, (int64_t)N_IGRID, GFP_I32, params);
            bad = 0;
            for (size_t i = 0; ri && r32 && i < N_IGRID; i++) {
                long long g64 = h->i(xi[i], ia, ib, ha, hb);
                int32_t g32 = (int32_t)(uint32_t)(unsigned long long)h->i(x32[i], ia, ib, ha, hb);
                if ((g64 != ri[i] || g32 != r32[i]) && bad++ < 3)
                    fprintf(stderr, "  op %u int variant %d: x = %lld: cuda formula %lld / %d, "
                            "reference %lld / %d\n", (unsigned)h->op, k, (long long)xi[i], g64,
                            g32, (long long)ri[i], r32[i]);
            }
            CHECK_MSG(ri && r32 && bad == 0, "op %u integers (variant %d): %d values differ",
                      (unsigned)h->op, k, bad);
            free(ri);
            free(r32);
        }
    }
}

/* All pairs of a grid, as two arrays. */
static void pairs_f64(const double *g, int n, double *a, double *b) {
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            a[i * n + j] = g[i];
            b[i * n + j] = g[j];
        }
}

static void test_binary_values(void) {
    /* A smaller float grid for pairs: the specials and a few ordinary values. */
    enum { NG = 27 + 9, NP = NG * NG };
    double g[NG];
    for (int i = 0; i < NG; i++) g[i] = i < 27 ? float_grid_special[i] : -3.7 + 0.9 * (i - 27);
    static double a64[NP], b64[NP];
    static float a32[NP], b32[NP];
    pairs_f64(g, NG, a64, b64);
    for (int i = 0; i < NP; i++) {
        a32[i] = (float)a64[i];
        b32[i] = (float)b64[i];
    }
    enum { NIP = N_IGRID * N_IGRID };
    static int64_t ai[NIP], bi[NIP];
    static int32_t a32i[NIP], b32i[NIP];
    static uint8_t ab[4], bb[4];
    for (size_t i = 0; i < N_IGRID; i++)
        for (size_t j = 0; j < N_IGRID; j++) {
            ai[i * N_IGRID + j] = int_grid[i];
            bi[i * N_IGRID + j] = int_grid[j];
            a32i[i * N_IGRID + j] = (int32_t)(uint32_t)(uint64_t)int_grid[i];
            b32i[i * N_IGRID + j] = (int32_t)(uint32_t)(uint64_t)int_grid[j];
        }
    for (int i = 0; i < 4; i++) {
        ab[i] = (uint8_t)(i >> 1);
        bb[i] = (uint8_t)(i & 1);
    }
    for (size_t u = 0; u < sizeof host_binaries / sizeof host_binaries[0]; u++) {
        const host_binary *h = &host_binaries[u];
        bool compare = h->c32 != NULL;
        if (!h->f32 && !compare) continue; /* logical ops: below */
        int32_t dts[2];
        void *in[2];
        /* f32 */
        dts[0] = dts[1] = GFP_F32;
        in[0] = a32;
        in[1] = b32;
        void *r = ref_run(h->op, 2, dts, in, NP, compare ? GFP_BOOL : GFP_F32, NULL);
        int bad = 0;
        for (int i = 0; r && i < NP; i++) {
            bool ok = compare ? ((uint8_t *)r)[i] == (h->c32(a32[i], b32[i]) != 0)
                              : same_f32(h->f32(a32[i], b32[i]), ((float *)r)[i]);
            if (!ok && bad++ < 3)
                fprintf(stderr, "  op %u f32: %.9g, %.9g differ\n", (unsigned)h->op, a32[i], b32[i]);
        }
        CHECK_MSG(r && bad == 0, "op %u f32: %d pairs differ", (unsigned)h->op, bad);
        free(r);
        /* f64 */
        dts[0] = dts[1] = GFP_F64;
        in[0] = a64;
        in[1] = b64;
        r = ref_run(h->op, 2, dts, in, NP, compare ? GFP_BOOL : GFP_F64, NULL);
        bad = 0;
        for (int i = 0; r && i < NP; i++) {
            bool ok = compare ? ((uint8_t *)r)[i] == (h->c64(a64[i], b64[i]) != 0)
                              : same_f64(h->f64(a64[i], b64[i]), ((double *)r)[i]);
            if (!ok && bad++ < 3)
                fprintf(stderr, "  op %u f64: %.17g, %.17g differ\n", (unsigned)h->op, a64[i],
                        b64[i]);
        }
        CHECK_MSG(r && bad == 0, "op %u f64: %d pairs differ", (unsigned)h->op, bad);
        free(r);
        /* i64, i32 (and bool for comparisons): computed in i64; a FLOAT op
         * (atan2) has no integer formula and the reference refuses integers */
        bin_int_fn fi = h->i;
        cmp_int_fn ci = h->ci;
        if (!compare && !fi) continue;
        dts[0] = dts[1] = GFP_I64;
        in[0] = ai;
        in[1] = bi;
        void *r64 = ref_run(h->op, 2, dts, in, (int64_t)NIP, compare ? GFP_BOOL : GFP_I64, NULL);
        dts[0] = dts[1] = GFP_I32;
        in[0] = a32i;
        in[1] = b32i;
        void *r32 = ref_run(h->op, 2, dts, in, (int64_t)NIP, compare ? GFP_BOOL : GFP_I32, NULL);
        bad = 0;
        for (size_t i = 0; r64 && r32 && i < NIP; i++) {
            bool ok;
            if (compare) {
                ok = ((uint8_t *)r64)[i] == (ci(ai[i], bi[i]) != 0) &&
                     ((uint8_t *)r32)[i] == (ci(a32i[i], b32i[i]) != 0);
            } else {
                ok = fi(ai[i], bi[i]) == ((int64_t *)r64)[i] &&
                     (int32_t)(uint32_t)(unsigned long long)fi(a32i[i], b32i[i]) ==
                         ((int32_t *)r32)[i];
            }
            if (!ok && bad++ < 3)
                fprintf(stderr, "  op %u int: %lld, %lld differ\n", (unsigned)h->op,
                        (long long)ai[i], (long long)bi[i]);
        }
        CHECK_MSG(r64 && r32 && bad == 0, "op %u integers: %d pairs differ", (unsigned)h->op, bad);
        free(r64);
        free(r32);
        if (compare) {
            dts[0] = dts[1] = GFP_BOOL;
            in[0] = ab;
            in[1] = bb;
            uint8_t *rb = ref_run(h->op, 2, dts, in, 4, GFP_BOOL, NULL);
            bad = 0;
            for (int i = 0; rb && i < 4; i++) bad += rb[i] != (ci(ab[i], bb[i]) != 0);
            CHECK_MSG(rb && bad == 0, "op %u bool: %d pairs differ", (unsigned)h->op, bad);
            free(rb);
        }
    }
}

/* LOGICAL ops take truth values of any dtypes. */
static bool truth(int32_t dt, const void *p, int i) {
    switch (dt) {
    case GFP_F32: return ((const float *)p)[i] != 0;
    case GFP_I64: return ((const int64_t *)p)[i] != 0;
    default: return ((const uint8_t *)p)[i] != 0;
    }
}

static void test_logical_values(void) {
    static const float f[6] = {0.0f, -0.0f, NAN, 1.5f, -INFINITY, 1e-40f};
    static const int64_t l[6] = {0, 5, -1, INT64_MIN, 0, 2};
    static const uint8_t b[6] = {0, 1, 1, 0, 1, 0};
    const void *data[3] = {f, l, b};
    const int32_t dts[3] = {GFP_F32, GFP_I64, GFP_BOOL};
    /* logical_not on each dtype */
    for (int d = 0; d < 3; d++) {
        void *in[1] = {(void *)data[d]};
        uint8_t *r = ref_run(GFP_OP_LOGICAL_NOT, 1, &dts[d], in, 6, GFP_BOOL, NULL);
        int bad = 0;
        for (int i = 0; r && i < 6; i++) bad += r[i] != (gf_bool_logical_not(truth(dts[d], data[d], i)) != 0);
        CHECK_MSG(r && bad == 0, "logical_not on dtype %d: %d values differ", (int)dts[d], bad);
        free(r);
    }
    /* and / or on every pair of dtypes, every pair of positions */
    const uint32_t ops[2] = {GFP_OP_LOGICAL_AND, GFP_OP_LOGICAL_OR};
    for (int o = 0; o < 2; o++)
        for (int da = 0; da < 3; da++)
            for (int db = 0; db < 3; db++) {
                size_t ea = dts[da] == GFP_BOOL ? 1 : dts[da] == GFP_F32 ? 4 : 8;
                size_t eb = dts[db] == GFP_BOOL ? 1 : dts[db] == GFP_F32 ? 4 : 8;
                uint8_t A[36 * 8], B[36 * 8];
                for (int i = 0; i < 6; i++)
                    for (int j = 0; j < 6; j++) {
                        memcpy(A + (i * 6 + j) * ea, (const char *)data[da] + i * ea, ea);
                        memcpy(B + (i * 6 + j) * eb, (const char *)data[db] + j * eb, eb);
                    }
                int32_t pair[2] = {dts[da], dts[db]};
                void *in[2] = {A, B};
                uint8_t *r = ref_run(ops[o], 2, pair, in, 36, GFP_BOOL, NULL);
                int bad = 0;
                for (int i = 0; r && i < 36; i++) {
                    int ta = truth(dts[da], A, i), tb = truth(dts[db], B, i);
                    int want = o == 0 ? gf_bool_logical_and(ta, tb) : gf_bool_logical_or(ta, tb);
                    bad += r[i] != (want != 0);
                }
                CHECK_MSG(r && bad == 0, "logical op %u on dtypes %d, %d: %d values differ",
                          (unsigned)ops[o], (int)dts[da], (int)dts[db], bad);
                free(r);
            }
}

int main(void) {
    RUN(test_text);
    if (abi_load_env(&ref, "GRAFT_TEST_REFERENCE_PLUGIN") != 0 || abi_open(&ref) != 0) {
        CHECK_MSG(0, "the reference plugin could not be loaded");
        return CHECK_REPORT();
    }
    make_grids();
    RUN(test_unary_values);
    RUN(test_binary_values);
    RUN(test_logical_values);
    abi_close(&ref);
    return CHECK_REPORT();
}
