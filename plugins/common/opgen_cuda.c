/* SPDX-License-Identifier: BSD-3-Clause */
/* opgen_cuda.c — the CUDA dialect of the op-math generator.
 *
 *   graft-opgen-cuda <dialect> <output file>    dialect: cuda, or any of opgen.c's
 *   graft-opgen-cuda --list
 *
 * This file extends opgen.c without changing it: it compiles opgen.c into the
 * same translation unit (its main renamed away), so the table, the tokenizer,
 * the vocabulary check and the canonical "gf-math" comment lines are the very
 * code that writes the OpenCL kernels. Only the spelling below is CUDA's.
 *
 * The output is one header that is valid CUDA C++ and valid host C11:
 *   - under nvcc every function is __host__ __device__, so the plugin's kernels
 *     call it on the GPU;
 *   - under a C compiler it is plain static inline C, so the formula test
 *     compiles this exact text on the host and compares it with the reference
 *     plugin (tests/cuda/test_cuda_formulas.c), with no GPU.
 * f32 formulas call the f-suffixed functions (expf, erff, rintf), which exist
 * on both sides; integers compute in long long with the wrapping helpers. */
#define main graft_opgen_main
#include "opgen.c"
#undef main

static void cuda_prelude(FILE *o) {
    fputs("#ifndef GF_MATH_CUDA_H\n"
          "#define GF_MATH_CUDA_H\n"
          "#ifdef __CUDACC__\n"
          "#define GF_CUDA_FN static __host__ __device__ __forceinline__\n"
          "#else\n"
          "#include <math.h>\n"
          "#define GF_CUDA_FN static inline\n"
          "#endif\n"
          "/* Integer helpers: i64 arithmetic that wraps as two's complement, through\n"
          " * unsigned long long, where signed overflow would be undefined. */\n"
          "GF_CUDA_FN long long gf_wneg(long long x) {\n"
          "    return (long long)(0ull - (unsigned long long)x);\n"
          "}\n"
          "GF_CUDA_FN long long gf_wadd(long long a, long long b) {\n"
          "    return (long long)((unsigned long long)a + (unsigned long long)b);\n"
          "}\n"
          "GF_CUDA_FN long long gf_wsub(long long a, long long b) {\n"
          "    return (long long)((unsigned long long)a - (unsigned long long)b);\n"
          "}\n"
          "GF_CUDA_FN long long gf_wmul(long long a, long long b) {\n"
          "    return (long long)((unsigned long long)a * (unsigned long long)b);\n"
          "}\n"
          "GF_CUDA_FN long long gf_idiv(long long a, long long b) {\n"
          "    return b == 0 ? 0 : b == -1 ? gf_wneg(a) : a / b;\n"
          "}\n"
          "GF_CUDA_FN long long gf_ipow(long long a, long long b) {\n"
          "    if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;\n"
          "    unsigned long long base = (unsigned long long)a, r = 1;\n"
          "    for (unsigned long long e = (unsigned long long)b; e; e >>= 1) {\n"
          "        if (e & 1) r *= base;\n"
          "        base *= base;\n"
          "    }\n"
          "    return (long long)r;\n"
          "}\n",
          o);
}

static void cuda_literal(FILE *o, const char *text, ctype t) {
    switch (t) {
    case CT_F32: fprintf(o, "%s%sf", text, has_fraction(text) ? "" : ".0"); break;
    case CT_F64: fprintf(o, "%s%s", text, has_fraction(text) ? "" : ".0"); break;
    case CT_INT: fprintf(o, "%sLL", text); break;
    default: fprintf(o, "%s", text); break;
    }
}

static const char *cuda_function(const char *f, ctype t) {
    static char buf[32];
    if (IN(f, int_functions)) {
        snprintf(buf, sizeof buf, "gf_%s", f);
        return buf;
    }
    /* isnan is overloaded in CUDA C++ and type-generic in C. */
    if (!strcmp(f, "isnan")) return "isnan";
    snprintf(buf, sizeof buf, "%s%s", f, t == CT_F32 ? "f" : "");
    return buf;
}

static const dialect cuda_dialect = {.name = "cuda",
                                     .type = {"float", "double", "long long", "int"},
                                     .pred_type = "int",
                                     .flag_type = "int",
                                     .fn_prefix = "GF_CUDA_FN ",
                                     .fp64_begin = "",
                                     .fp64_end = "",
                                     .prelude = cuda_prelude,
                                     .literal = cuda_literal,
                                     .function = cuda_function};

/* Writes dialect d's output to path through a temporary file, so a failed run
 * leaves nothing half-written for the build to pick up. */
static int write_dialect(const dialect *d, const char *path) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *o = fopen(tmp, "w");
    if (!o) {
        perror(tmp);
        return 1;
    }
    int rc = generate(d, o);
    if (rc == 0 && d == &cuda_dialect) fputs("#endif /* GF_MATH_CUDA_H */\n", o);
    if (fclose(o) != 0) rc = 1;
    if (rc == 0 && rename(tmp, path) != 0) {
        perror(path);
        rc = 1;
    }
    if (rc != 0) remove(tmp);
    return rc;
}

int main(int argc, char **argv) {
    size_t nd = sizeof dialects / sizeof dialects[0];
    if (argc == 2 && !strcmp(argv[1], "--list")) {
        puts(cuda_dialect.name);
        for (size_t i = 0; i < nd; i++) puts(dialects[i].name);
        return 0;
    }
    if (argc != 3) {
        fprintf(stderr, "usage: %s <dialect> <output file> | --list\n", argv[0]);
        return 2;
    }
    const dialect *d = !strcmp(argv[1], cuda_dialect.name) ? &cuda_dialect : NULL;
    for (size_t i = 0; !d && i < nd; i++)
        if (!strcmp(argv[1], dialects[i].name)) d = &dialects[i];
    if (!d) {
        fprintf(stderr, "graft-opgen-cuda: unknown dialect '%s' (try --list)\n", argv[1]);
        return 2;
    }
    return write_dialect(d, argv[2]);
}
