/* SPDX-License-Identifier: BSD-3-Clause */
/* opgen_glsl.c — the GLSL (Vulkan) dialect of the op-math generator.
 *
 *   graft-opgen-glsl glsl <output.glsl> <output caps header>
 *   graft-opgen-glsl --list
 *
 * Like opgen_cuda.c, this file extends opgen.c without changing it: opgen.c
 * is compiled into this translation unit (its main renamed away), so the
 * table, the tokenizer, the vocabulary check and the "gf-math" comment lines
 * are the very code that writes the OpenCL and CUDA kernels. What is GLSL's:
 *  - the spelling: float/double/int64_t, bool predicates, 1.0 / 1.0lf / 1l
 *    literals, and a prelude with what GLSL lacks in f32 (log1p, expm1, erf,
 *    an overflow-free tanh, pow, asin, acos, atan and atan2 with C's special
 *    cases) and the wrapping integer helpers; f32 exp, log, sin and cos come
 *    from glsl_fmath.glsl (beside this file, #included by the output), since
 *    GLSL's are a few ulp off;
 *  - f64: GLSL has no double exp, log, sin, erf, pow...; glsl_dmath.glsl
 *    (beside this file, #included by the output) provides them. An op whose
 *    f64 formula would call a function missing there gets its f64 function
 *    written but not compiled (#if 0), so the gf-math lines still match the
 *    other dialects', and the second output (a C header for the plugin)
 *    lists the op ids that have a compiled one, so the plugin's capability
 *    answer follows the table;
 *  - dispatch functions gf_<group>_<ct>(op, ...) that switch on the ABI op id:
 *    shaders call them with a specialisation constant, so the switch folds to
 *    the one formula at pipeline creation; each case is kept only in its part
 *    of a shader built in parts (GF_IN_PART).
 * The GLSL output expects GL_EXT_shader_explicit_arithmetic_types_int64 and
 * a GF_F64 macro (1 when the shader is built with f64). */
#define main graft_opgen_main
#include "opgen.c"
#undef main

#include "graft_plugin.h"

/* The ABI op id of each table entry, by its ID suffix. */
typedef struct op_id {
    const char *id;
    unsigned value;
} op_id;
static const op_id op_ids[] = {
#define GF_OP_MATH_UNARY(ID, name, kind, f, i) {#ID, GFP_OP_##ID},
#define GF_OP_MATH_BINARY(ID, name, kind, f, i) {#ID, GFP_OP_##ID},
#include "op_math.def"
};

static unsigned id_of(const op_def *op) {
    for (size_t i = 0; i < sizeof op_ids / sizeof op_ids[0]; i++)
        if (!strcmp(op_ids[i].id, op->id)) return op_ids[i].value;
    return 0;
}

static void glsl_prelude(FILE *o) {
    fputs(
        "#include \"glsl_fmath.glsl\" /* plugins/common: f32 exp, log, sin, cos in 1 ulp */\n"
        "#if GF_F64\n"
        "#include \"glsl_dmath.glsl\" /* plugins/common: double exp, log, sin, ... */\n"
        "#endif\n"
        "/* Integer helpers: SPIR-V integer arithmetic wraps modulo 2^64. */\n"
        "int64_t gf_wneg(int64_t x) { return -x; }\n"
        "int64_t gf_wadd(int64_t a, int64_t b) { return a + b; }\n"
        "int64_t gf_wsub(int64_t a, int64_t b) { return a - b; }\n"
        "int64_t gf_wmul(int64_t a, int64_t b) { return a * b; }\n"
        "int64_t gf_idiv(int64_t a, int64_t b) { return b == 0l ? 0l : b == -1l ? -a : a / b; }\n"
        "int64_t gf_ipow(int64_t a, int64_t b) {\n"
        "    if (b < 0l) return a == 1l ? 1l : a == -1l ? ((b & 1l) != 0l ? -1l : 1l) : 0l;\n"
        "    uint64_t base = uint64_t(a), r = 1ul;\n"
        "    for (uint64_t e = uint64_t(b); e != 0ul; e >>= 1) {\n"
        "        if ((e & 1ul) != 0ul) r *= base;\n"
        "        base *= base;\n"
        "    }\n"
        "    return int64_t(r);\n"
        "}\n"
        "/* f32 functions GLSL lacks, or defines only loosely. */\n"
        "#define GF_NAN uintBitsToFloat(0x7fc00000u)\n"
        "#define GF_INF uintBitsToFloat(0x7f800000u)\n"
        "/* Kahan's corrections of log(1 + x) and exp(x) - 1; `precise`, or the\n"
        " * compiler folds (1 + x) - 1 into x. */\n"
        "float gf_log1p(float x) {\n"
        "    if (x < -1.0) return GF_NAN;\n"
        "    precise float u = 1.0 + x;\n"
        "    if (u == 1.0) return x;\n"
        "    if (isinf(u)) return u;\n"
        "    precise float y = gf_log(u) * (x / (u - 1.0)); /* corrects the rounding of 1 + x */\n"
        "    return y;\n"
        "}\n"
        "float gf_expm1(float x) {\n"
        "    if (abs(x) < 1e-5) return x + 0.5 * x * x;\n"
        "    if (x < -17.5) return -1.0; /* exp(x) below half an ulp of 1 */\n"
        "    precise float u = gf_exp(x);\n"
        "    if (isinf(u)) return u;\n"
        "    precise float y = (u - 1.0) * (x / gf_log(u));\n"
        "    return y;\n"
        "}\n"
        "float gf_tanh(float x) {\n"
        "    if (isnan(x)) return x;\n"
        "    float ax = abs(x);\n"
        "    if (ax > 9.5) return x < 0.0 ? -1.0 : 1.0;\n"
        "    float e = gf_expm1(-2.0 * ax);\n"
        "    float r = -e / (2.0 + e);\n"
        "    return x < 0.0 ? -r : r;\n"
        "}\n"
        "/* pow with C's special cases (GLSL leaves a negative base undefined);\n"
        " * small integer exponents by squaring, in double where there is one. */\n"
        "float gf_pow(float x, float y) {\n"
        "    if (y == 0.0 || x == 1.0) return 1.0;\n"
        "    if (isnan(x) || isnan(y)) return x + y;\n"
        "    bool y_int = floor(y) == y;\n"
        "    bool y_odd = y_int && abs(y) < 16777216.0 && (int(abs(y)) & 1) == 1;\n"
        "    if (x == 0.0) {\n"
        "        if (y > 0.0) return y_odd ? x : 0.0;\n"
        "        return y_odd ? 1.0 / x : GF_INF;\n"
        "    }\n"
        "    if (isinf(y)) {\n"
        "        float ax = abs(x);\n"
        "        if (ax == 1.0) return 1.0;\n"
        "        return (ax > 1.0) == (y > 0.0) ? GF_INF : 0.0;\n"
        "    }\n"
        "    if (isinf(x)) {\n"
        "        float r = y > 0.0 ? GF_INF : 0.0;\n"
        "        return x < 0.0 && y_odd ? -r : r;\n"
        "    }\n"
        "    if (x < 0.0 && !y_int) return GF_NAN;\n"
        "    if (y_int && abs(y) <= 64.0) {\n"
        "        uint e = uint(abs(y));\n"
        "#if GF_F64\n"
        "        double base = double(x), r = 1.0lf;\n"
        "        for (; e != 0u; e >>= 1) {\n"
        "            if ((e & 1u) != 0u) r *= base;\n"
        "            base *= base;\n"
        "        }\n"
        "        return float(y < 0.0 ? 1.0lf / r : r);\n"
        "#else\n"
        "        float base = x, r = 1.0;\n"
        "        for (; e != 0u; e >>= 1) {\n"
        "            if ((e & 1u) != 0u) r *= base;\n"
        "            base *= base;\n"
        "        }\n"
        "        return y < 0.0 ? 1.0 / r : r;\n"
        "#endif\n"
        "    }\n"
        "    if (x < 0.0) {\n"
        "        float r = pow(-x, y);\n"
        "        return y_odd ? -r : r;\n"
        "    }\n"
        "    return pow(x, y);\n"
        "}\n"
        "/* Inverse trigonometry with C's special cases, about 2 ulp: GLSL leaves\n"
        " * atan(0, 0) undefined and its asin, acos and atan loosely specified.\n"
        " * atan: |x| reduced to [0, tan(pi/8)] by pi/4 + atan((x-1)/(x+1)) or\n"
        " * pi/2 + atan(-1/x), then an odd minimax polynomial; asin: s + s z P(z)\n"
        " * on |x| <= 0.5, pi/2 - 2 asin(sqrt((1 - |x|) / 2)) above. */\n"
        "float gf_atan(float x) {\n"
        "    if (isnan(x) || x == 0.0) return x; /* keeps the sign of -0 */\n"
        "    float ax = abs(x), y = 0.0, r = ax;\n"
        "    if (ax > 2.414213562373095) {\n"
        "        y = 1.5707963267948966;\n"
        "        r = -1.0 / ax;\n"
        "    } else if (ax > 0.4142135623730950) {\n"
        "        y = 0.7853981633974483;\n"
        "        r = (ax - 1.0) / (ax + 1.0);\n"
        "    }\n"
        "    float z = r * r;\n"
        "    y += (((8.05374449538e-2 * z - 1.38776856032e-1) * z + 1.99777106478e-1) * z -\n"
        "          3.33329491539e-1) * z * r + r;\n"
        "    return x < 0.0 ? -y : y;\n"
        "}\n"
        "float gf_asin(float x) {\n"
        "    if (isnan(x) || x == 0.0) return x;\n"
        "    float a = abs(x), z, s;\n"
        "    if (a > 1.0) return GF_NAN;\n"
        "    bool big = a > 0.5;\n"
        "    if (big) {\n"
        "        z = 0.5 * (1.0 - a);\n"
        "        s = sqrt(z);\n"
        "    } else {\n"
        "        s = a;\n"
        "        z = a * a;\n"
        "    }\n"
        "    float r = ((((4.2163199048e-2 * z + 2.4181311049e-2) * z + 4.5470025998e-2) * z +\n"
        "                7.4953002686e-2) * z + 1.6666752422e-1) * z * s + s;\n"
        "    if (big) r = 1.5707963267948966 - (r + r);\n"
        "    return x < 0.0 ? -r : r;\n"
        "}\n"
        "float gf_acos(float x) {\n"
        "    if (isnan(x)) return x;\n"
        "    if (abs(x) > 1.0) return GF_NAN;\n"
        "    if (x < -0.5) return 3.14159265358979 - 2.0 * gf_asin(sqrt(0.5 * (1.0 + x)));\n"
        "    if (x > 0.5) return 2.0 * gf_asin(sqrt(0.5 * (1.0 - x)));\n"
        "    return 1.5707963267948966 - gf_asin(x);\n"
        "}\n"
        "/* bit 0 of m: y is negative (-0 included), bit 1: x is; pi_lo = pi - float(pi). */\n"
        "float gf_atan2(float y, float x) {\n"
        "    if (isnan(x) || isnan(y)) return x + y;\n"
        "    const float pi = 3.14159274101257, pi_lo = -8.7422776573e-08, pio2 = 1.5707963267948966;\n"
        "    uint m = (floatBitsToUint(y) >> 31) | ((floatBitsToUint(x) >> 30) & 2u);\n"
        "    if (y == 0.0) return m < 2u ? y : m == 2u ? pi : -pi;\n"
        "    if (x == 0.0) return (m & 1u) != 0u ? -pio2 : pio2;\n"
        "    if (isinf(x)) {\n"
        "        if (isinf(y)) {\n"
        "            float r = m < 2u ? 0.7853981633974483 : 2.356194490192345;\n"
        "            return (m & 1u) != 0u ? -r : r;\n"
        "        }\n"
        "        return m == 0u ? 0.0 : m == 1u ? -0.0 : m == 2u ? pi : -pi;\n"
        "    }\n"
        "    if (isinf(y)) return (m & 1u) != 0u ? -pio2 : pio2;\n"
        "    float z = gf_atan(abs(y / x));\n"
        "    switch (m) {\n"
        "    case 0u: return z;\n"
        "    case 1u: return -z;\n"
        "    case 2u: return pi - (z - pi_lo);\n"
        "    default: return (z - pi_lo) - pi;\n"
        "    }\n"
        "}\n",
        o);
    emit_erf_f32(o, "gf_erf", "abs", "gf_exp", "",
                 "    float hi = 1.0 - gf_exp(fma(r, t, -t));\n"
                 "    return t > 0.927734375 ? (a < 0.0 ? -hi : hi) : fma(q, a, a);\n");
}

static void glsl_literal(FILE *o, const char *text, ctype t) {
    switch (t) {
    case CT_F32: fprintf(o, "%s%s", text, has_fraction(text) ? "" : ".0"); break;
    case CT_F64: fprintf(o, "%s%slf", text, has_fraction(text) ? "" : ".0"); break;
    case CT_INT: fprintf(o, "%sl", text); break;
    default: fprintf(o, "%s", text); break;
    }
}

/* The functions there are in double: GLSL's own, and glsl_dmath.glsl's
 * (GLSL.std.450 has no double exp, log, trigonometry, erf or pow). */
static const char *const glsl_f64_functions[] = {
    "sqrt", "floor", "ceil", "rint", "fabs", "isnan", "exp",  "log",  "log1p",
    "expm1", "sin",  "cos",  "tanh", "erf",  "pow",   "asin", "acos", "atan", "atan2"};

static const char *glsl_function(const char *f, ctype t) {
    static char buf[32];
    if (IN(f, int_functions)) {
        snprintf(buf, sizeof buf, "gf_%s", f);
        return buf;
    }
    if (!strcmp(f, "rint")) return "roundEven";
    if (!strcmp(f, "fabs")) return "abs";
    if (t == CT_F32 && (!strcmp(f, "exp") || !strcmp(f, "log") || !strcmp(f, "log1p") || !strcmp(f, "expm1") || !strcmp(f, "erf") ||
                        !strcmp(f, "tanh") || !strcmp(f, "pow") || !strcmp(f, "sin") ||
                        !strcmp(f, "cos") || !strcmp(f, "asin") || !strcmp(f, "acos") ||
                        !strcmp(f, "atan") || !strcmp(f, "atan2"))) {
        snprintf(buf, sizeof buf, "gf_%s", f);
        return buf;
    }
    if (t == CT_F64 && IN(f, glsl_f64_functions) && strcmp(f, "sqrt") && strcmp(f, "floor") &&
        strcmp(f, "ceil") && strcmp(f, "isnan")) {
        snprintf(buf, sizeof buf, "gf_d%s", f); /* glsl_dmath.glsl */
        return buf;
    }
    return f; /* sqrt, floor, ceil, isnan: GLSL built-ins */
}

static const dialect glsl_dialect = {.name = "glsl",
                                     .type = {"float", "double", "int64_t", "bool"},
                                     .pred_type = "bool",
                                     .flag_type = "bool",
                                     .fn_prefix = "",
                                     .fp64_begin = "#if GF_F64\n",
                                     .fp64_end = "#endif\n",
                                     .prelude = glsl_prelude,
                                     .literal = glsl_literal,
                                     .function = glsl_function};

/* True when op's float formula uses only what GLSL has in double. */
static bool glsl_has_f64(const op_def *op) {
    const char *p = op->float_formula;
    token tk;
    while (next_token(&p, &tk, op) && tk.k != T_END) {
        if (tk.k != T_IDENT) continue;
        const char *q = p;
        while (*q == ' ') q++;
        if (*q == '(' && !IN(tk.text, glsl_f64_functions)) return false;
    }
    return true;
}

static bool glsl_wants(const op_def *op, ctype t) {
    return op_has(op, t) && (t != CT_F64 || op->k == K_COMPARE || glsl_has_f64(op));
}

/* gf_<group>_<ct>(op, ...): a switch on the ABI op id over one group. */
static void emit_dispatch(FILE *o, const char *group, int arity, bool pred, ctype t) {
    const dialect *d = &glsl_dialect;
    const char *T = t == CT_BOOL ? d->pred_type : d->type[t];
    const char *R = pred ? d->pred_type : T;
    if (t == CT_F64) fputs(d->fp64_begin, o);
    fprintf(o, "%s gf_%s_%s(uint op, ", R, group, ct_name[t]);
    if (arity == 1 && !pred)
        fprintf(o, "%s x, %s pa, %s pb, bool has_pa, bool has_pb) {\n", T, T, T);
    else if (arity == 1)
        fprintf(o, "%s x) {\n", T);
    else
        fprintf(o, "%s a, %s b) {\n", T, T);
    fputs("    switch (op) {\n", o);
    for (size_t i = 0; i < N_OPS; i++) {
        const op_def *op = &ops[i];
        bool op_pred = op->k == K_COMPARE || op->k == K_LOGICAL;
        if (op->arity != arity || op_pred != pred || !glsl_wants(op, t)) continue;
        if (pred && (op->k == K_LOGICAL) != (t == CT_BOOL)) continue;
        fprintf(o, "#if GF_IN_PART(%u)\n", id_of(op));
        fprintf(o, "    case %uu: return gf_%s_%s(", id_of(op), ct_name[t], op->name);
        if (arity == 1 && !pred) fputs("x, pa, pb, has_pa, has_pb);\n", o);
        else if (arity == 1) fputs("x);\n", o);
        else fputs("a, b);\n", o);
        fputs("#endif\n", o);
    }
    fprintf(o, "    default: return %s;\n    }\n}\n", pred ? "false" : arity == 1 ? "x" : "a");
    if (t == CT_F64) fputs(d->fp64_end, o);
}

static int glsl_generate(FILE *o, FILE *caps) {
    for (size_t i = 0; i < N_OPS; i++)
        for (int t = 0; t < CT_COUNT; t++)
            if (op_has(&ops[i], (ctype)t)) {
                const char *f = t == CT_INT ? ops[i].int_formula : ops[i].float_formula;
                if (!f[0]) {
                    fprintf(stderr, "graft-opgen-glsl: op %s has no %s formula\n", ops[i].name,
                            ct_name[t]);
                    return 1;
                }
                if (!check_formula(&ops[i], f, (ctype)t)) return 1;
            }
    const dialect *d = &glsl_dialect;
    fputs("/* Generated by graft-opgen-glsl from plugins/common/op_math.def.\n"
          " * Do not edit: change op_math.def. */\n",
          o);
    d->prelude(o);
    /* A shader built in parts (the plugin's "// graft: parts N" marker: GF_PARTS
     * and GF_PART defined) keeps in its dispatch switches only the ops of its
     * part, id % GF_PARTS == GF_PART. A driver turns the SPIR-V of the whole
     * module into its IR before the specialisation constant folds the
     * switch, so a pipeline of one op costs what the ops left in it cost. */
    fputs("#ifndef GF_IN_PART\n#ifdef GF_PARTS\n#define GF_IN_PART(id) ((id) % GF_PARTS == GF_PART)\n"
          "#else\n#define GF_IN_PART(id) 1\n#endif\n#endif\n",
          o);
    for (int t = 0; t < CT_COUNT; t++) {
        if (t == CT_F64) fputs(d->fp64_begin, o);
        for (size_t i = 0; i < N_OPS; i++) {
            if (!op_has(&ops[i], (ctype)t)) continue;
            /* Every formula is written, in opgen.c's order, so the gf-math
             * lines match the other dialects' (check_op_math.cmake); those
             * GLSL cannot compute in double stay out of the compiled code. */
            bool compiled = glsl_wants(&ops[i], (ctype)t);
            if (!compiled) fputs("#if 0 /* no double function in GLSL for this formula yet */\n", o);
            emit_function(o, d, &ops[i], (ctype)t);
            if (!compiled) fputs("#endif\n", o);
        }
        if (t == CT_F64) fputs(d->fp64_end, o);
    }
    emit_dispatch(o, "unary", 1, false, CT_F32);
    emit_dispatch(o, "unary", 1, false, CT_F64);
    emit_dispatch(o, "unary", 1, false, CT_INT);
    emit_dispatch(o, "binary", 2, false, CT_F32);
    emit_dispatch(o, "binary", 2, false, CT_F64);
    emit_dispatch(o, "binary", 2, false, CT_INT);
    emit_dispatch(o, "compare", 2, true, CT_F32);
    emit_dispatch(o, "compare", 2, true, CT_F64);
    emit_dispatch(o, "compare", 2, true, CT_INT);
    emit_dispatch(o, "logical", 1, true, CT_BOOL);
    emit_dispatch(o, "logical", 2, true, CT_BOOL);

    /* The plugin's side: which op ids have an f64 and an integer formula. */
    fputs("/* Generated by graft-opgen-glsl from plugins/common/op_math.def: the ops\n"
          " * whose GLSL exists in f64 (GLSL has no double exp, log, trigonometry or\n"
          " * pow) and in integers. Do not edit. */\n"
          "#ifndef GRAFT_OP_MATH_GLSL_CAPS_H\n#define GRAFT_OP_MATH_GLSL_CAPS_H\n",
          caps);
    fputs("static const unsigned gf_glsl_f64_ops[] = {", caps);
    for (size_t i = 0; i < N_OPS; i++)
        if (ops[i].k != K_LOGICAL && glsl_wants(&ops[i], CT_F64))
            fprintf(caps, "%u, ", id_of(&ops[i]));
    fputs("0};\nstatic const unsigned gf_glsl_int_ops[] = {", caps);
    for (size_t i = 0; i < N_OPS; i++)
        if (ops[i].k == K_NUMERIC || ops[i].k == K_COMPARE) fprintf(caps, "%u, ", id_of(&ops[i]));
    fputs("0};\n#endif\n", caps);
    return 0;
}

static int write_both(const char *path, const char *caps_path) {
    char tmp[4096], tmp2[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    snprintf(tmp2, sizeof tmp2, "%s.tmp", caps_path);
    FILE *o = fopen(tmp, "w"), *c = fopen(tmp2, "w");
    if (!o || !c) {
        perror(!o ? tmp : tmp2);
        if (o) fclose(o);
        if (c) fclose(c);
        return 1;
    }
    int rc = glsl_generate(o, c);
    if (fclose(o) != 0) rc = 1;
    if (fclose(c) != 0) rc = 1;
    if (rc == 0 && (rename(tmp, path) != 0 || rename(tmp2, caps_path) != 0)) {
        perror(path);
        rc = 1;
    }
    if (rc != 0) {
        remove(tmp);
        remove(tmp2);
    }
    return rc;
}

int main(int argc, char **argv) {
    if (argc == 2 && !strcmp(argv[1], "--list")) {
        puts(glsl_dialect.name);
        return 0;
    }
    if (argc != 4 || strcmp(argv[1], "glsl") != 0) {
        fprintf(stderr, "usage: %s glsl <output.glsl> <output caps header> | --list\n", argv[0]);
        return 2;
    }
    return write_both(argv[2], argv[3]);
}
