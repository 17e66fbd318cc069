/* SPDX-License-Identifier: BSD-3-Clause */
/* json_internal.h — just enough JSON for the file formats and checkpoints:
 * a cursor that reads values in place (the safetensors header, the
 * param_groups of an optimiser's state dict), and a growing buffer that
 * writes them. One home for both, core/src/json.c. */
#ifndef GRAFT_JSON_INTERNAL_H
#define GRAFT_JSON_INTERNAL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------ reading */
typedef struct gf__jcur {
    const char *start, *p, *end;
    const char *problem; /* the first failure's description, or NULL */
} gf__jcur;

/* Records problem (the first one wins) and returns false. */
bool gf__jfail(gf__jcur *c, const char *problem);
void gf__jws(gf__jcur *c);
/* Consumes ch (after white space) when it is next. */
bool gf__jlit(gf__jcur *c, char ch);
/* A string into out (UTF-8, NUL-terminated, at most cap bytes with the NUL);
 * *len gets its length. out NULL: the string is checked and skipped. */
bool gf__jstring(gf__jcur *c, char *out, size_t cap, size_t *len);
/* A string into a new malloc'ed buffer (*out, free it); false on malformed
 * text or no memory (problem says which). */
bool gf__jstring_dup(gf__jcur *c, char **out);
/* Skips any value; depth counts the enclosing containers (at most 32). */
bool gf__jskip(gf__jcur *c, int depth);
/* [n, n, ...] of non-negative integers, at most max of them. */
bool gf__jints(gf__jcur *c, uint64_t *v, int max, int *count);
/* A number (JSON's grammar, plus NaN, Infinity and -Infinity as Python's
 * json module writes them). */
bool gf__jnumber(gf__jcur *c, double *v);
/* true or false. */
bool gf__jbool(gf__jcur *c, bool *v);
/* null (consumed) when it is next. */
bool gf__jnull(gf__jcur *c);

/* ------------------------------------------------------------ writing */
typedef struct gf__sbuf {
    char *p; /* NUL-terminated; free it */
    size_t n, cap;
    bool oom; /* an allocation failed: the text is incomplete */
} gf__sbuf;

void gf__sb_put(gf__sbuf *b, const char *s, size_t n);
void gf__sb_str(gf__sbuf *b, const char *s);
/* printf-style append. */
void gf__sb_printf(gf__sbuf *b, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* s as a JSON string (quotes and escapes); _chars: the escaped contents
 * without the quotes. */
void gf__sb_json_string(gf__sbuf *b, const char *s);
void gf__sb_json_chars(gf__sbuf *b, const char *s);
/* v as a JSON number that reads back to the same double (NaN and
 * infinities as Python's json module writes them). */
void gf__sb_number(gf__sbuf *b, double v);
#endif
