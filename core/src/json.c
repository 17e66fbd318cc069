/* SPDX-License-Identifier: BSD-3-Clause */
/* json.c — the JSON reader and writer of json_internal.h. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_internal.h"

/* Object keys skipped by gf__jskip: names of tensors and options. */
#define GF__JSON_MAX_KEY 4096

/* ------------------------------------------------------------ reading */
bool gf__jfail(gf__jcur *c, const char *problem) {
    if (!c->problem) c->problem = problem;
    return false;
}

void gf__jws(gf__jcur *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

bool gf__jlit(gf__jcur *c, char ch) {
    gf__jws(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return true;
    }
    return false;
}

static int hexval(char ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

static bool read_hex4(gf__jcur *c, unsigned *v) {
    if (c->end - c->p < 4) return gf__jfail(c, "a short \\u escape");
    *v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(c->p[i]);
        if (h < 0) return gf__jfail(c, "a bad \\u escape");
        *v = *v << 4 | (unsigned)h;
    }
    c->p += 4;
    return true;
}

/* A JSON string into out (UTF-8, NUL-terminated); *len gets its length.
 * out NULL: checked and skipped, of any length. */
bool gf__jstring(gf__jcur *c, char *out, size_t cap, size_t *len) {
    gf__jws(c);
    if (c->p >= c->end || *c->p != '"') return gf__jfail(c, "expected a string");
    c->p++;
    size_t n = 0;
    while (c->p < c->end && *c->p != '"') {
        unsigned cp = (unsigned char)*c->p++;
        if (cp < 0x20) return gf__jfail(c, "a control character in a string");
        if (cp == '\\') {
            if (c->p >= c->end) break;
            char e = *c->p++;
            switch (e) {
            case '"': case '\\': case '/': cp = (unsigned char)e; break;
            case 'b': cp = '\b'; break;
            case 'f': cp = '\f'; break;
            case 'n': cp = '\n'; break;
            case 'r': cp = '\r'; break;
            case 't': cp = '\t'; break;
            case 'u': {
                if (!read_hex4(c, &cp)) return false;
                if (cp >= 0xD800 && cp < 0xDC00) { /* a surrogate pair */
                    unsigned lo;
                    if (c->end - c->p < 2 || c->p[0] != '\\' || c->p[1] != 'u')
                        return gf__jfail(c, "an unpaired surrogate");
                    c->p += 2;
                    if (!read_hex4(c, &lo)) return false;
                    if (lo < 0xDC00 || lo > 0xDFFF) return gf__jfail(c, "an unpaired surrogate");
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                }
                if (cp == 0) return gf__jfail(c, "a NUL character in a string");
                unsigned char u[4];
                size_t k;
                if (cp < 0x80) { u[0] = (unsigned char)cp; k = 1; }
                else if (cp < 0x800) { u[0] = (unsigned char)(0xC0 | cp >> 6); u[1] = (unsigned char)(0x80 | (cp & 0x3F)); k = 2; }
                else if (cp < 0x10000) { u[0] = (unsigned char)(0xE0 | cp >> 12); u[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F)); u[2] = (unsigned char)(0x80 | (cp & 0x3F)); k = 3; }
                else { u[0] = (unsigned char)(0xF0 | cp >> 18); u[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F)); u[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F)); u[3] = (unsigned char)(0x80 | (cp & 0x3F)); k = 4; }
                if (out && n + k >= cap) return gf__jfail(c, "a string is too long");
                if (out) memcpy(out + n, u, k);
                n += k;
                continue;
            }
            default: return gf__jfail(c, "a bad escape in a string");
            }
        }
        if (out && n + 1 >= cap) return gf__jfail(c, "a string is too long");
        if (out) out[n] = (char)cp;
        n++;
    }
    if (c->p >= c->end) return gf__jfail(c, "an unterminated string");
    c->p++;
    if (out) out[n] = '\0';
    *len = n;
    return true;
}

bool gf__jstring_dup(gf__jcur *c, char **out) {
    *out = NULL;
    gf__jws(c);
    const char *at = c->p;
    size_t n;
    if (!gf__jstring(c, NULL, 0, &n)) return false; /* n: the decoded length */
    char *s = malloc(n + 1);
    if (!s) return gf__jfail(c, "out of host memory for a string");
    c->p = at;
    if (!gf__jstring(c, s, n + 1, &n)) {
        free(s);
        return false;
    }
    *out = s;
    return true;
}

static bool jword(gf__jcur *c, const char *w) {
    gf__jws(c);
    size_t n = strlen(w);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, w, n) != 0) return false;
    c->p += n;
    return true;
}

bool gf__jnull(gf__jcur *c) { return jword(c, "null"); }

bool gf__jbool(gf__jcur *c, bool *v) {
    if (jword(c, "true")) *v = true;
    else if (jword(c, "false")) *v = false;
    else return gf__jfail(c, "expected true or false");
    return true;
}

bool gf__jnumber(gf__jcur *c, double *v) {
    gf__jws(c);
    if (jword(c, "NaN")) *v = NAN;
    else if (jword(c, "Infinity")) *v = INFINITY;
    else if (jword(c, "-Infinity")) *v = -INFINITY;
    else {
        char buf[64];
        size_t n = 0;
        while (c->p + n < c->end && n + 1 < sizeof buf && strchr("+-.eE0123456789", c->p[n]))
            n++;
        if (!n) return gf__jfail(c, "expected a number");
        memcpy(buf, c->p, n);
        buf[n] = '\0';
        char *endp;
        *v = strtod(buf, &endp);
        if (endp != buf + n) return gf__jfail(c, "a malformed number");
        c->p += n;
    }
    return true;
}

static bool jskip_container(gf__jcur *c, char close, bool object, int depth) {
    if (gf__jlit(c, close)) return true;
    for (;;) {
        if (object) {
            char key[GF__JSON_MAX_KEY];
            size_t kl;
            if (!gf__jstring(c, key, sizeof key, &kl)) return false;
            if (!gf__jlit(c, ':')) return gf__jfail(c, "expected ':' after a key");
        }
        if (!gf__jskip(c, depth + 1)) return false;
        if (gf__jlit(c, close)) return true;
        if (!gf__jlit(c, ',')) return gf__jfail(c, "expected ',' between items");
    }
}

/* Skips any JSON value (metadata, unknown keys). */
bool gf__jskip(gf__jcur *c, int depth) {
    if (depth > 32) return gf__jfail(c, "values nested too deeply");
    gf__jws(c);
    if (c->p >= c->end) return gf__jfail(c, "expected a value");
    char ch = *c->p;
    if (ch == '{') { c->p++; return jskip_container(c, '}', true, depth); }
    if (ch == '[') { c->p++; return jskip_container(c, ']', false, depth); }
    if (ch == '"') {
        size_t n;
        return gf__jstring(c, NULL, 0, &n);
    }
    const char *s = c->p;
    while (c->p < c->end && (strchr("+-.eE", *c->p) || (*c->p >= '0' && *c->p <= '9') ||
                             (*c->p >= 'a' && *c->p <= 'z')))
        c->p++;
    return c->p > s ? true : gf__jfail(c, "expected a value");
}

/* [n, n, ...] of non-negative integers, at most max of them. */
bool gf__jints(gf__jcur *c, uint64_t *v, int max, int *count) {
    if (!gf__jlit(c, '[')) return gf__jfail(c, "expected '['");
    *count = 0;
    if (gf__jlit(c, ']')) return true;
    for (;;) {
        gf__jws(c);
        const char *s = c->p;
        uint64_t x = 0;
        while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
            unsigned d = (unsigned)(*c->p - '0');
            if (x > (UINT64_MAX - d) / 10) return gf__jfail(c, "an integer too large");
            x = x * 10 + d;
            c->p++;
        }
        if (c->p == s) return gf__jfail(c, "expected a non-negative integer");
        if (*count == max) return gf__jfail(c, "too many integers (a shape has at most 8 dims)");
        v[(*count)++] = x;
        if (gf__jlit(c, ']')) return true;
        if (!gf__jlit(c, ',')) return gf__jfail(c, "expected ',' or ']'");
    }
}

/* ------------------------------------------------------------ writing */
void gf__sb_put(gf__sbuf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1) cap *= 2;
        char *np = realloc(b->p, cap);
        if (!np) {
            b->oom = true;
            return;
        }
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

void gf__sb_str(gf__sbuf *b, const char *s) { gf__sb_put(b, s, strlen(s)); }

void gf__sb_printf(gf__sbuf *b, const char *fmt, ...) {
    if (b->oom) return;
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (w < 0) return;
    if ((size_t)w < sizeof small) {
        gf__sb_put(b, small, (size_t)w);
        return;
    }
    char *big = malloc((size_t)w + 1);
    if (!big) {
        b->oom = true;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)w + 1, fmt, ap);
    va_end(ap);
    gf__sb_put(b, big, (size_t)w);
    free(big);
}

void gf__sb_json_string(gf__sbuf *b, const char *s) {
    gf__sb_put(b, "\"", 1);
    gf__sb_json_chars(b, s);
    gf__sb_put(b, "\"", 1);
}

void gf__sb_json_chars(gf__sbuf *b, const char *s) {
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        char esc[8];
        if (ch == '"' || ch == '\\') {
            esc[0] = '\\';
            esc[1] = (char)ch;
            gf__sb_put(b, esc, 2);
        } else if (ch < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", ch);
            gf__sb_put(b, esc, 6);
        } else {
            gf__sb_put(b, s, 1);
        }
    }
}


void gf__sb_number(gf__sbuf *b, double v) {
    char num[40];
    if (isnan(v)) snprintf(num, sizeof num, "NaN");
    else if (isinf(v)) snprintf(num, sizeof num, v > 0 ? "Infinity" : "-Infinity");
    else snprintf(num, sizeof num, "%.17g", v);
    gf__sb_str(b, num);
}
