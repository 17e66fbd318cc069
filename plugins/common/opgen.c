/* SPDX-License-Identifier: BSD-3-Clause */
/* opgen.c — turns op_math.def into the elementwise math of one kernel dialect.
 *
 *   graft-opgen <dialect> <output file>
 *   graft-opgen --list                 the dialects, one a line
 *
 * Dialects: opencl (OpenCL C 1.2), c (host C11: the formula test compiles it
 * and compares it with the reference plugin). To add one (GLSL, CUDA), add a
 * `dialect` below: its type names, how it writes a typed literal, its name for
 * each vocabulary function, and a prelude defining the integer helpers.
 *
 * For every op and compute type the output holds one function
 *   unary  FLOAT/NUMERIC:  T    gf_<ct>_<name>(T x, T pa, T pb, F has_pa, F has_pb)
 *   binary NUMERIC:        T    gf_<ct>_<name>(T a, T b)
 *   COMPARE:               P    gf_<ct>_<name>(T a, T b)        (ct f32, f64, int)
 *   LOGICAL:               P    gf_bool_<name>(P x) / (P a, P b)
 * with ct one of f32, f64, int (i64 arithmetic; i32 and bool widen to it) and
 * bool (truth values), T the compute type, P the dialect's predicate type and
 * F its flag type. Each function is preceded by a line
 *   gf-math <name> <ct>: <formula as vocabulary tokens>
 * (inside a comment) that is the same in every dialect, so a test can check
 * that two generated files come from the same formulas. X-macro lists name
 * the ops of each group, for the kernels to instantiate:
 *   GF_UNARY_FLOAT_OPS GF_UNARY_INT_OPS GF_BINARY_FLOAT_OPS GF_BINARY_INT_OPS
 *   GF_COMPARE_OPS GF_LOGICAL_UNARY_OPS GF_LOGICAL_BINARY_OPS
 *
 * Every identifier of a formula must belong to the vocabulary documented in
 * op_math.def; anything else fails the build with the op's name. */
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ the table */
typedef enum kind { K_FLOAT, K_NUMERIC, K_COMPARE, K_LOGICAL } kind;

typedef struct op_def {
    const char *id, *name;
    int arity;
    kind k;
    const char *float_formula, *int_formula;
} op_def;

static const op_def ops[] = {
#define GF_OP_MATH_UNARY(ID, name, kind, f, i) {#ID, #name, 1, K_##kind, f, i},
#define GF_OP_MATH_BINARY(ID, name, kind, f, i) {#ID, #name, 2, K_##kind, f, i},
#include "op_math.def"
};
#define N_OPS (sizeof ops / sizeof ops[0])

/* Compute types. */
typedef enum ctype { CT_F32, CT_F64, CT_INT, CT_BOOL, CT_COUNT } ctype;
static const char *const ct_name[CT_COUNT] = {"f32", "f64", "int", "bool"};

static const char *const float_functions[] = {"exp",  "log",  "log1p", "expm1", "sqrt",
                                              "sin",  "cos",  "tanh",  "erf",   "floor",
                                              "ceil", "rint", "fabs",  "pow",   "isnan",
                                              "asin", "acos", "atan",  "atan2"};
static const char *const int_functions[] = {"wneg", "wadd", "wsub", "wmul", "idiv", "ipow"};

static bool in_list(const char *s, const char *const *list, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(s, list[i])) return true;
    return false;
}
#define IN(s, arr) in_list((s), (arr), sizeof(arr) / sizeof((arr)[0]))

/* ------------------------------------------------------------------ dialects */
typedef struct dialect {
    const char *name;
    const char *type[CT_COUNT]; /* compute types */
    const char *pred_type;      /* result of COMPARE / LOGICAL, and bool operands */
    const char *flag_type;      /* has_pa, has_pb */
    const char *fn_prefix;      /* written before every function */
    const char *fp64_begin, *fp64_end; /* around the f64 functions */
    void (*prelude)(FILE *out);
    /* Writes literal `text` (decimal digits, '.', exponent) typed as t. */
    void (*literal)(FILE *out, const char *text, ctype t);
    /* The dialect's spelling of vocabulary function f in compute type t. */
    const char *(*function)(const char *f, ctype t);
} dialect;

static bool has_fraction(const char *text) { return strpbrk(text, ".eE") != NULL; }

/* ---- erf in f32, for the dialects whose built-in is missing or slow
 * (GLSL has none; PoCL's OpenCL one is a scalar call per element): about 1
 * ulp, an odd minimax polynomial in a up to |a| = 0.927734375 and
 * 1 - exp(p(|a|)) above. The one home of its coefficients. Both halves are
 * computed without a branch (a CPU driver then vectorizes it); `tail`
 * returns the dialect's selection from q (the low half's polynomial in a^2),
 * r (the high half's in |a|, before its last step), t = |a| and a. */
static const char *const erf_f32_hi[] = {"-1.72853470e-5", "3.83197126e-4", "-3.88396438e-3",
                                         "2.42546219e-2",  "-1.06777877e-1", "-6.34846687e-1",
                                         "-1.28717512e-1"};
static const char *const erf_f32_lo[] = {"-5.96761703e-4", "4.99119423e-3", "-2.67681349e-2",
                                         "1.12819925e-1",  "-3.76125336e-1", "1.28379166e-1"};

static void emit_erf_f32(FILE *o, const char *name, const char *abs_fn, const char *exp_fn,
                         const char *sfx, const char *tail) {
    const char *const *h = erf_f32_hi, *const *l = erf_f32_lo;
    fprintf(o,
            "/* erf in float, about 1 ulp (opgen.c's emit_erf_f32; %s is %s). */\n"
            "float %s(float a) {\n"
            "    float t = %s(a), s = a * a;\n"
            "    float r = fma(%s%s, t, %s%s);\n"
            "    r = fma(r, s, fma(%s%s, t, %s%s));\n",
            exp_fn, !strcmp(exp_fn, "exp") ? "the built-in" : "the prelude's", name, abs_fn,
            h[0], sfx, h[1], sfx, h[2], sfx, h[3], sfx);
    for (int i = 4; i < 7; i++) fprintf(o, "    r = fma(r, t, %s%s);\n", h[i], sfx);
    fprintf(o, "    float q = fma(%s%s, s, %s%s);\n", l[0], sfx, l[1], sfx);
    for (int i = 2; i < 6; i++) fprintf(o, "    q = fma(q, s, %s%s);\n", l[i], sfx);
    fputs(tail, o);
    fputs("}\n", o);
}

/* ---- OpenCL C 1.2 */
static void opencl_prelude(FILE *o) {
    fputs("/* Integer helpers: i64 arithmetic that wraps as two's complement, through\n"
          " * ulong, where signed overflow would be undefined. */\n"
          "long gf_wneg(long x) { return as_long((ulong)0 - as_ulong(x)); }\n"
          "long gf_wadd(long a, long b) { return as_long(as_ulong(a) + as_ulong(b)); }\n"
          "long gf_wsub(long a, long b) { return as_long(as_ulong(a) - as_ulong(b)); }\n"
          "long gf_wmul(long a, long b) { return as_long(as_ulong(a) * as_ulong(b)); }\n"
          "long gf_idiv(long a, long b) { return b == 0 ? 0 : b == -1 ? gf_wneg(a) : a / b; }\n"
          "long gf_ipow(long a, long b) {\n"
          "    if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;\n"
          "    ulong base = as_ulong(a), r = 1;\n"
          "    for (ulong e = as_ulong(b); e; e >>= 1) {\n"
          "        if (e & 1) r *= base;\n"
          "        base *= base;\n"
          "    }\n"
          "    return as_long(r);\n"
          "}\n"
          "/* tanh, exactly +-1 where the correctly rounded result is: OpenCL allows\n"
          " * tanh a few ulp, and some libraries stop an ulp short of 1 for large\n"
          " * arguments (and at +-inf), which turns x * (1 + tanh(-x)) into -inf\n"
          " * instead of NaN at -inf. tanh(x) rounds to 1 beyond 9.1 in float and 19.1\n"
          " * in double. */\n"
          "float gf_tanh_f32(float x) { return fabs(x) > 9.1f ? copysign(1.0f, x) : tanh(x); }\n"
          "#if GF_HAS_FP64\n"
          "double gf_tanh_f64(double x) { return fabs(x) > 19.1 ? copysign(1.0, x) : tanh(x); }\n"
          "#endif\n",
          o);
    /* PoCL's built-in erf is a scalar call per element: 24 ns an element
     * against 1.8 for this one (with a branch instead of select(), PoCL
     * made it a call too: 5.7 ns). */
    emit_erf_f32(o, "gf_erf_f32", "fabs", "exp", "f",
                 "    return select(fma(q, a, a), copysign(1.0f - exp(fma(r, t, -t)), a),\n"
                 "                  isgreater(t, 0.927734375f));\n");
}

static void opencl_literal(FILE *o, const char *text, ctype t) {
    switch (t) {
    case CT_F32: fprintf(o, "%s%sf", text, has_fraction(text) ? "" : ".0"); break;
    case CT_F64: fprintf(o, "%s%s", text, has_fraction(text) ? "" : ".0"); break;
    case CT_INT: fprintf(o, "%sL", text); break;
    default: fprintf(o, "%s", text); break;
    }
}

static const char *opencl_function(const char *f, ctype t) {
    /* OpenCL's math built-ins are overloaded for float and double. */
    static char buf[32];
    if (IN(f, int_functions)) {
        snprintf(buf, sizeof buf, "gf_%s", f);
        return buf;
    }
    if (!strcmp(f, "tanh")) return t == CT_F64 ? "gf_tanh_f64" : "gf_tanh_f32";
    if (!strcmp(f, "erf") && t == CT_F32) return "gf_erf_f32";
    return f;
}

/* ---- host C11 */
static void c_prelude(FILE *o) {
    fputs("#include <math.h>\n"
          "#include <stdint.h>\n"
          "static inline int64_t gf_wneg(int64_t x) { return (int64_t)(0u - (uint64_t)x); }\n"
          "static inline int64_t gf_wadd(int64_t a, int64_t b) {\n"
          "    return (int64_t)((uint64_t)a + (uint64_t)b);\n"
          "}\n"
          "static inline int64_t gf_wsub(int64_t a, int64_t b) {\n"
          "    return (int64_t)((uint64_t)a - (uint64_t)b);\n"
          "}\n"
          "static inline int64_t gf_wmul(int64_t a, int64_t b) {\n"
          "    return (int64_t)((uint64_t)a * (uint64_t)b);\n"
          "}\n"
          "static inline int64_t gf_idiv(int64_t a, int64_t b) {\n"
          "    return b == 0 ? 0 : b == -1 ? gf_wneg(a) : a / b;\n"
          "}\n"
          "static inline int64_t gf_ipow(int64_t a, int64_t b) {\n"
          "    if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;\n"
          "    uint64_t base = (uint64_t)a, r = 1;\n"
          "    for (uint64_t e = (uint64_t)b; e; e >>= 1) {\n"
          "        if (e & 1) r *= base;\n"
          "        base *= base;\n"
          "    }\n"
          "    return (int64_t)r;\n"
          "}\n",
          o);
}

static void c_literal(FILE *o, const char *text, ctype t) {
    switch (t) {
    case CT_F32: fprintf(o, "%s%sf", text, has_fraction(text) ? "" : ".0"); break;
    case CT_F64: fprintf(o, "%s%s", text, has_fraction(text) ? "" : ".0"); break;
    case CT_INT: fprintf(o, "INT64_C(%s)", text); break;
    default: fprintf(o, "%s", text); break;
    }
}

static const char *c_function(const char *f, ctype t) {
    static char buf[32];
    if (IN(f, int_functions)) {
        snprintf(buf, sizeof buf, "gf_%s", f);
        return buf;
    }
    if (!strcmp(f, "isnan")) return "isnan"; /* a type-generic macro */
    snprintf(buf, sizeof buf, "%s%s", f, t == CT_F32 ? "f" : "");
    return buf;
}

static const dialect dialects[] = {
    {.name = "opencl",
     .type = {"float", "double", "long", "int"},
     .pred_type = "int",
     .flag_type = "int",
     .fn_prefix = "",
     .fp64_begin = "#if GF_HAS_FP64\n",
     .fp64_end = "#endif\n",
     .prelude = opencl_prelude,
     .literal = opencl_literal,
     .function = opencl_function},
    {.name = "c",
     .type = {"float", "double", "int64_t", "int"},
     .pred_type = "int",
     .flag_type = "int",
     .fn_prefix = "static inline ",
     .fp64_begin = "",
     .fp64_end = "",
     .prelude = c_prelude,
     .literal = c_literal,
     .function = c_function},
};

/* ------------------------------------------------------------------ formulas */
typedef enum tok_kind { T_END, T_IDENT, T_NUMBER, T_OP } tok_kind;
typedef struct token {
    tok_kind k;
    char text[64];
} token;

/* Reads the next token of *p into t; false (with a message) on a bad character. */
static bool next_token(const char **p, token *t, const op_def *op) {
    const char *s = *p;
    while (*s == ' ') s++;
    size_t n = 0;
    t->text[0] = '\0';
    if (!*s) {
        t->k = T_END;
    } else if (isalpha((unsigned char)*s) || *s == '_') {
        t->k = T_IDENT;
        while ((isalnum((unsigned char)s[n]) || s[n] == '_') && n < sizeof t->text - 1) n++;
    } else if (isdigit((unsigned char)*s) || *s == '.') {
        t->k = T_NUMBER;
        while (n < sizeof t->text - 1 &&
               (isdigit((unsigned char)s[n]) || s[n] == '.' || s[n] == 'e' || s[n] == 'E' ||
                ((s[n] == '+' || s[n] == '-') && n > 0 && (s[n - 1] == 'e' || s[n - 1] == 'E'))))
            n++;
    } else {
        static const char *const two[] = {"==", "!=", "<=", ">=", "&&", "||"};
        t->k = T_OP;
        n = 1;
        for (size_t i = 0; i < sizeof two / sizeof two[0]; i++)
            if (!strncmp(s, two[i], 2)) n = 2;
        if (n == 1 && !strchr("+-*/<>!?:(),", *s)) {
            fprintf(stderr, "graft-opgen: op %s: unexpected character '%c' in a formula\n",
                    op->name, *s);
            return false;
        }
    }
    memcpy(t->text, s, n);
    t->text[n] = '\0';
    *p = s + n;
    return true;
}

/* Checks every identifier of formula f against the vocabulary of compute type
 * t (float functions for float formulas, integer ones for integer formulas). */
static bool check_formula(const op_def *op, const char *f, ctype t) {
    static const char *const params[] = {"pa", "pb", "has_pa", "has_pb"};
    const char *p = f;
    token tk;
    int depth = 0;
    while (next_token(&p, &tk, op) && tk.k != T_END) {
        if (tk.k == T_OP && tk.text[0] == '(') depth++;
        if (tk.k == T_OP && tk.text[0] == ')') depth--;
        if (tk.k != T_IDENT) continue;
        const char *id = tk.text;
        bool ok;
        if (op->arity == 1) ok = !strcmp(id, "x");
        else ok = !strcmp(id, "a") || !strcmp(id, "b");
        if (!ok && op->k != K_LOGICAL && op->k != K_COMPARE && op->arity == 1) ok = IN(id, params);
        if (!ok && (t == CT_F32 || t == CT_F64)) ok = IN(id, float_functions);
        if (!ok && t == CT_INT && op->k == K_NUMERIC) ok = IN(id, int_functions);
        if (!ok) {
            fprintf(stderr,
                    "graft-opgen: op %s (%s): '%s' is not in the formula vocabulary "
                    "(see op_math.def)\n",
                    op->name, ct_name[t], id);
            return false;
        }
    }
    if (tk.k != T_END) return false;
    if (depth != 0) {
        fprintf(stderr, "graft-opgen: op %s: unbalanced parentheses in \"%s\"\n", op->name, f);
        return false;
    }
    return true;
}

/* Writes formula f in dialect d for compute type t. Spacing is cosmetic: one
 * space between tokens, none inside parentheses, before ',' or after a unary
 * operator or a function name. */
static void emit_formula(FILE *o, const dialect *d, const op_def *op, const char *f, ctype t) {
    const char *p = f;
    token tk, prev = {T_END, ""};
    bool prev_unary = false, prev_fn = false;
    while (next_token(&p, &tk, op) && tk.k != T_END) {
        bool is_op = tk.k == T_OP;
        bool unary = is_op && (!strcmp(tk.text, "-") || !strcmp(tk.text, "!")) &&
                     (prev.k == T_END || (prev.k == T_OP && strcmp(prev.text, ")") != 0));
        bool space = prev.k != T_END && !prev_unary && !prev_fn && strcmp(prev.text, "(") != 0 &&
                     !(is_op && (!strcmp(tk.text, ")") || !strcmp(tk.text, ",")));
        if (space) fputc(' ', o);
        prev_fn = false;
        switch (tk.k) {
        case T_NUMBER: d->literal(o, tk.text, t); break;
        case T_IDENT: {
            const char *q = p;
            while (*q == ' ') q++;
            prev_fn = *q == '(';
            fputs(prev_fn ? d->function(tk.text, t) : tk.text, o);
            break;
        }
        default: fputs(tk.text, o); break;
        }
        prev_unary = unary;
        prev = tk;
    }
}

/* The formula as vocabulary tokens separated by single spaces: the same in
 * every dialect. */
static void emit_canonical(FILE *o, const op_def *op, const char *f) {
    const char *p = f;
    token tk;
    bool first = true;
    while (next_token(&p, &tk, op) && tk.k != T_END) {
        fprintf(o, "%s%s", first ? "" : " ", tk.text);
        first = false;
    }
}

static void emit_function(FILE *o, const dialect *d, const op_def *op, ctype t) {
    const char *f = t == CT_INT ? op->int_formula : op->float_formula;
    bool pred = op->k == K_COMPARE || op->k == K_LOGICAL;
    const char *T = t == CT_BOOL ? d->pred_type : d->type[t];
    fprintf(o, "/* gf-math %s %s: ", op->name, ct_name[t]);
    emit_canonical(o, op, f);
    fprintf(o, " */\n%s%s gf_%s_%s(", d->fn_prefix, pred ? d->pred_type : T, ct_name[t],
            op->name);
    if (op->arity == 1 && !pred)
        fprintf(o, "%s x, %s pa, %s pb, %s has_pa, %s has_pb", T, T, T, d->flag_type,
                d->flag_type);
    else if (op->arity == 1)
        fprintf(o, "%s x", T);
    else
        fprintf(o, "%s a, %s b", T, T);
    fputs(") {\n    return ", o);
    emit_formula(o, d, op, f, t);
    fputs(";\n}\n", o);
}

/* The compute types op has a formula for. */
static bool op_has(const op_def *op, ctype t) {
    switch (op->k) {
    case K_FLOAT: return t == CT_F32 || t == CT_F64;
    case K_NUMERIC:
    case K_COMPARE: return t != CT_BOOL;
    case K_LOGICAL: return t == CT_BOOL;
    }
    return false;
}

static void emit_list(FILE *o, const char *macro, int arity, bool (*want)(const op_def *)) {
    fprintf(o, "#define %s(X)", macro);
    for (size_t i = 0; i < N_OPS; i++)
        if (ops[i].arity == arity && want(&ops[i])) fprintf(o, " X(%s)", ops[i].name);
    fputc('\n', o);
}
static bool is_float_math(const op_def *op) { return op->k == K_FLOAT || op->k == K_NUMERIC; }
static bool is_int_math(const op_def *op) { return op->k == K_NUMERIC; }
static bool is_compare(const op_def *op) { return op->k == K_COMPARE; }
static bool is_logical(const op_def *op) { return op->k == K_LOGICAL; }

static int generate(const dialect *d, FILE *o) {
    for (size_t i = 0; i < N_OPS; i++)
        for (int t = 0; t < CT_COUNT; t++)
            if (op_has(&ops[i], (ctype)t)) {
                const char *f = t == CT_INT ? ops[i].int_formula : ops[i].float_formula;
                if (!f[0]) {
                    fprintf(stderr, "graft-opgen: op %s has no %s formula\n", ops[i].name,
                            ct_name[t]);
                    return 1;
                }
                if (!check_formula(&ops[i], f, (ctype)t)) return 1;
            }
    fprintf(o, "/* Generated by graft-opgen (%s) from plugins/common/op_math.def.\n"
               " * Do not edit: change op_math.def. */\n",
            d->name);
    d->prelude(o);
    for (int t = 0; t < CT_COUNT; t++) {
        if (t == CT_F64) fputs(d->fp64_begin, o);
        for (size_t i = 0; i < N_OPS; i++)
            if (op_has(&ops[i], (ctype)t)) emit_function(o, d, &ops[i], (ctype)t);
        if (t == CT_F64) fputs(d->fp64_end, o);
    }
    emit_list(o, "GF_UNARY_FLOAT_OPS", 1, is_float_math);
    emit_list(o, "GF_UNARY_INT_OPS", 1, is_int_math);
    emit_list(o, "GF_BINARY_FLOAT_OPS", 2, is_float_math);
    emit_list(o, "GF_BINARY_INT_OPS", 2, is_int_math);
    emit_list(o, "GF_COMPARE_OPS", 2, is_compare);
    emit_list(o, "GF_LOGICAL_UNARY_OPS", 1, is_logical);
    emit_list(o, "GF_LOGICAL_BINARY_OPS", 2, is_logical);
    return 0;
}

int main(int argc, char **argv) {
    size_t nd = sizeof dialects / sizeof dialects[0];
    if (argc == 2 && !strcmp(argv[1], "--list")) {
        for (size_t i = 0; i < nd; i++) puts(dialects[i].name);
        return 0;
    }
    if (argc != 3) {
        fprintf(stderr, "usage: %s <dialect> <output file> | --list\n", argv[0]);
        return 2;
    }
    const dialect *d = NULL;
    for (size_t i = 0; i < nd; i++)
        if (!strcmp(argv[1], dialects[i].name)) d = &dialects[i];
    if (!d) {
        fprintf(stderr, "graft-opgen: unknown dialect '%s' (try --list)\n", argv[1]);
        return 2;
    }
    /* Write a temporary file and rename it, so a failed run leaves no
     * half-written output for the build to pick up. */
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", argv[2]);
    FILE *o = fopen(tmp, "w");
    if (!o) {
        perror(tmp);
        return 1;
    }
    int rc = generate(d, o);
    if (fclose(o) != 0) rc = 1;
    if (rc == 0 && rename(tmp, argv[2]) != 0) {
        perror(argv[2]);
        rc = 1;
    }
    if (rc != 0) remove(tmp);
    return rc;
}
