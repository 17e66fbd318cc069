/* SPDX-License-Identifier: BSD-3-Clause */
/* check_abi_reference.c — docs/abi-reference.md against abi/graft_plugin.h.
 *
 *   check_abi_reference <graft_plugin.h> <abi-reference.md>
 *
 * The page is written by hand from the header; this program keeps the two
 * in step. It checks:
 *  1. every numeric constant of the header (enum members and #defines such
 *     as GFP_DEVICE_FLAG_THREAD_SAFE 0x2u) and every op id of graft_ops.def
 *     (GFP_OP_ADD = 60) has a row
 *     "| `NAME` | value |" in the page with that value, and every such row
 *     of the page names a constant of the header (or a struct size below)
 *     with that value;
 *  2. every struct of the header has a section "### `name`" whose rows
 *     "| offset | size | `field` |" give each field's offset and size as the
 *     compiler lays them out (LP64), with no field missing or extra, and the
 *     struct's GFP_*_SIZE_V1_0 has a row with its value;
 *  3. every field of gfp_plugin whose header comment says REQUIRED or
 *     OPTIONAL has that word in its row, and no other field has either.
 * Exit status 0 when all hold; 1 with one line per difference otherwise. */
#include <ctype.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graft_ops.h"

/* ------------------------------------------------------------ what the compiler knows */
typedef struct field_info {
    const char *type, *field;
    size_t offset, size;
} field_info;

#define F(T, f) {#T, #f, offsetof(T, f), sizeof(((T *)0)->f)}
static const field_info fields[] = {
    F(gfp_host, struct_size), F(gfp_host, abi_major), F(gfp_host, abi_minor),
    F(gfp_host, reserved0), F(gfp_host, host_ctx), F(gfp_host, set_error), F(gfp_host, log),

    F(gfp_tensor, struct_size), F(gfp_tensor, dtype), F(gfp_tensor, buffer),
    F(gfp_tensor, offset), F(gfp_tensor, rank), F(gfp_tensor, reserved0), F(gfp_tensor, sizes),
    F(gfp_tensor, strides),

    F(gfp_device_props, struct_size), F(gfp_device_props, flags), F(gfp_device_props, name),
    F(gfp_device_props, type), F(gfp_device_props, memory_bytes), F(gfp_device_props, dtypes),
    F(gfp_device_props, max_rank), F(gfp_device_props, max_alloc_bytes),
    F(gfp_device_props, driver),

    F(gfp_scalar_params, struct_size), F(gfp_scalar_params, reserved0), F(gfp_scalar_params, a),
    F(gfp_scalar_params, b),
    F(gfp_fill_params, struct_size), F(gfp_fill_params, reserved0), F(gfp_fill_params, value),
    F(gfp_fill_params, ivalue),
    F(gfp_arange_params, struct_size), F(gfp_arange_params, reserved0),
    F(gfp_arange_params, start), F(gfp_arange_params, step),
    F(gfp_clamp_params, struct_size), F(gfp_clamp_params, has_min), F(gfp_clamp_params, has_max),
    F(gfp_clamp_params, reserved0), F(gfp_clamp_params, min), F(gfp_clamp_params, max),
    F(gfp_tri_params, struct_size), F(gfp_tri_params, reserved0), F(gfp_tri_params, diagonal),
    F(gfp_reduce_params, struct_size), F(gfp_reduce_params, dims),
    F(gfp_reduce_params, correction),
    F(gfp_dim_params, struct_size), F(gfp_dim_params, dim),
    F(gfp_layer_norm_params, struct_size), F(gfp_layer_norm_params, normalized_rank),
    F(gfp_layer_norm_params, eps),
    F(gfp_batch_norm_params, struct_size), F(gfp_batch_norm_params, training),
    F(gfp_batch_norm_params, momentum), F(gfp_batch_norm_params, eps),
    F(gfp_conv2d_params, struct_size), F(gfp_conv2d_params, groups),
    F(gfp_conv2d_params, stride), F(gfp_conv2d_params, padding),
    F(gfp_conv2d_params, dilation),
    F(gfp_pool2d_params, struct_size), F(gfp_pool2d_params, kernel), F(gfp_pool2d_params, stride),
    F(gfp_pool2d_params, padding), F(gfp_pool2d_params, dilation),
    F(gfp_pool2d_params, ceil_mode), F(gfp_pool2d_params, count_include_pad),
    F(gfp_random_params, struct_size), F(gfp_random_params, kind), F(gfp_random_params, seed),
    F(gfp_random_params, offset), F(gfp_random_params, a), F(gfp_random_params, b),
    F(gfp_adam_params, struct_size), F(gfp_adam_params, flags), F(gfp_adam_params, lr),
    F(gfp_adam_params, beta1), F(gfp_adam_params, beta2), F(gfp_adam_params, eps),
    F(gfp_adam_params, weight_decay), F(gfp_adam_params, bias_correction1),
    F(gfp_adam_params, bias_correction2_sqrt),
    F(gfp_fft_params, struct_size), F(gfp_fft_params, kind), F(gfp_fft_params, inverse),
    F(gfp_fft_params, n_dims), F(gfp_fft_params, dims), F(gfp_fft_params, scale),

    F(gfp_op_query, struct_size), F(gfp_op_query, op), F(gfp_op_query, layout),
    F(gfp_op_query, n_inputs), F(gfp_op_query, n_outputs), F(gfp_op_query, input_dtypes),
    F(gfp_op_query, output_dtypes),

    F(gfp_plugin, struct_size), F(gfp_plugin, abi_major), F(gfp_plugin, abi_minor),
    F(gfp_plugin, reserved0), F(gfp_plugin, name), F(gfp_plugin, version), F(gfp_plugin, init),
    F(gfp_plugin, shutdown), F(gfp_plugin, device_count), F(gfp_plugin, device_props),
    F(gfp_plugin, device_open), F(gfp_plugin, device_close), F(gfp_plugin, buffer_alloc),
    F(gfp_plugin, buffer_free), F(gfp_plugin, buffer_write), F(gfp_plugin, buffer_read),
    F(gfp_plugin, buffer_copy), F(gfp_plugin, buffer_fill), F(gfp_plugin, synchronize),
    F(gfp_plugin, launch), F(gfp_plugin, query_op), F(gfp_plugin, query_extension),
    F(gfp_plugin, buffer_wrap_host), F(gfp_plugin, graph_create), F(gfp_plugin, graph_launch),
    F(gfp_plugin, graph_destroy),

    F(gfp_graph_node, struct_size), F(gfp_graph_node, op), F(gfp_graph_node, n_inputs),
    F(gfp_graph_node, n_outputs), F(gfp_graph_node, inputs), F(gfp_graph_node, outputs),
    F(gfp_graph_node, params),

    F(gfp_negotiate_request, struct_size), F(gfp_negotiate_request, abi_major),
    F(gfp_negotiate_request, abi_minor), F(gfp_negotiate_request, reserved0),
    F(gfp_negotiate_request, host),
};
#define N_FIELDS (sizeof fields / sizeof fields[0])

typedef struct struct_info {
    const char *type;
    size_t size_of;        /* sizeof */
    size_t align;          /* _Alignof */
    const char *size_name; /* its GFP_*_SIZE_V1_0, or NULL */
    size_t size_v1_0;
} struct_info;

#define S(T, M) {#T, sizeof(T), _Alignof(T), #M, M}
static const struct_info structs[] = {
    S(gfp_host, GFP_HOST_SIZE_V1_0),
    S(gfp_tensor, GFP_TENSOR_SIZE_V1_0),
    S(gfp_device_props, GFP_DEVICE_PROPS_SIZE_V1_0),
    S(gfp_scalar_params, GFP_SCALAR_PARAMS_SIZE_V1_0),
    S(gfp_fill_params, GFP_FILL_PARAMS_SIZE_V1_0),
    S(gfp_arange_params, GFP_ARANGE_PARAMS_SIZE_V1_0),
    S(gfp_clamp_params, GFP_CLAMP_PARAMS_SIZE_V1_0),
    S(gfp_tri_params, GFP_TRI_PARAMS_SIZE_V1_0),
    S(gfp_reduce_params, GFP_REDUCE_PARAMS_SIZE_V1_0),
    S(gfp_dim_params, GFP_DIM_PARAMS_SIZE_V1_0),
    S(gfp_layer_norm_params, GFP_LAYER_NORM_PARAMS_SIZE_V1_0),
    S(gfp_batch_norm_params, GFP_BATCH_NORM_PARAMS_SIZE_V1_0),
    S(gfp_conv2d_params, GFP_CONV2D_PARAMS_SIZE_V1_0),
    S(gfp_pool2d_params, GFP_POOL2D_PARAMS_SIZE_V1_0),
    S(gfp_random_params, GFP_RANDOM_PARAMS_SIZE_V1_0),
    S(gfp_adam_params, GFP_ADAM_PARAMS_SIZE_V1_3),
    S(gfp_fft_params, GFP_FFT_PARAMS_SIZE_V1_3),
    S(gfp_op_query, GFP_OP_QUERY_SIZE_V1_0),
    S(gfp_graph_node, GFP_GRAPH_NODE_SIZE_V1_3),
    S(gfp_plugin, GFP_PLUGIN_SIZE_V1_3),
    S(gfp_negotiate_request, GFP_NEGOTIATE_REQUEST_SIZE_V1_0),
};
#define N_STRUCTS (sizeof structs / sizeof structs[0])

/* Sizes the page lists besides the structs' own. */
static const struct {
    const char *name;
    long long value;
} extra_sizes[] = {{"GFP_PLUGIN_SIZE_MIN", (long long)GFP_PLUGIN_SIZE_MIN},
                   {"GFP_PLUGIN_SIZE_V1_0", (long long)GFP_PLUGIN_SIZE_V1_0},
                   {"GFP_PLUGIN_SIZE_V1_1", (long long)GFP_PLUGIN_SIZE_V1_1}};

/* ------------------------------------------------------------ utilities */
static int failures;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("abi-reference: ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    failures++;
}

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        printf("cannot open %s\n", path);
        exit(1);
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        printf("cannot read %s\n", path);
        exit(1);
    }
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static const char *next_line(const char *line) {
    const char *nl = strchr(line, '\n');
    return nl ? nl + 1 : NULL;
}

static bool is_ident(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* Parses a C integer literal (decimal, hex, negative, u/U suffix); false when
 * s does not hold exactly one. */
static bool parse_int(const char *s, size_t len, long long *out) {
    char buf[64];
    if (len == 0 || len >= sizeof buf) return false;
    memcpy(buf, s, len);
    buf[len] = '\0';
    while (len && (buf[len - 1] == 'u' || buf[len - 1] == 'U' || buf[len - 1] == ' '))
        buf[--len] = '\0';
    char *end;
    long long v = strtoll(buf, &end, 0);
    if (end == buf || *end) return false;
    *out = v;
    return true;
}

/* ------------------------------------------------------------ constants of the header */
typedef struct constant {
    char name[64];
    long long value;
    bool seen; /* a row of the page names it */
} constant;

static constant consts[256];
static int n_consts;

static void add_const(const char *name, size_t len, long long v) {
    if (n_consts == (int)(sizeof consts / sizeof consts[0]) || len >= sizeof consts[0].name) {
        printf("check_abi_reference: too many or too long constants\n");
        exit(1);
    }
    memcpy(consts[n_consts].name, name, len);
    consts[n_consts].name[len] = '\0';
    consts[n_consts].value = v;
    n_consts++;
}

/* Enum members "GFP_X = N" and "#define GFP_X N" whose value is a literal. */
static void header_constants(const char *h) {
    for (const char *p = h; (p = strstr(p, "GFP_")) != NULL; p++) {
        if (p > h && is_ident(p[-1])) continue;
        const char *e = p;
        while (is_ident(*e)) e++;
        size_t len = (size_t)(e - p);
        /* the line must be "#define NAME value" or "    NAME = value," */
        const char *ls = p;
        while (ls > h && ls[-1] != '\n') ls--;
        const char *q = e;
        while (*q == ' ' || *q == '\t') q++;
        bool define = strncmp(ls, "#define ", 8) == 0 && ls + 8 == p;
        bool member = *q == '=' && q[1] != '=';
        if (!define && !member) continue;
        if (member) {
            const char *t = ls;
            while (t < p && (*t == ' ' || *t == '\t')) t++;
            if (t != p) continue; /* not at the start of its line */
            q++;
            while (*q == ' ') q++;
        }
        const char *v = q;
        while (*q && *q != ',' && *q != '\n' && *q != '/' && *q != ' ') q++;
        long long val;
        if (parse_int(v, (size_t)(q - v), &val)) add_const(p, len, val);
    }
}

/* The op ids, from graft_ops.def (the header builds enum gfp_op from it). */
static void table_constants(void) {
    for (int i = 0; i < GFP_OP_ROW_COUNT; i++) {
        char name[64];
        int n = snprintf(name, sizeof name, "GFP_OP_%s", gfp_op_table[i].id);
        add_const(name, (size_t)n, (long long)gfp_op_table[i].op);
    }
}

/* ------------------------------------------------------------ the page's rows */
/* The i-th cell (0-based) of a table row starting at line, trimmed. */
static bool cell(const char *line, int i, const char **s, size_t *len) {
    const char *p = line;
    if (*p != '|') return false;
    for (int k = 0; k <= i; k++) {
        p = strchr(p, '|');
        if (!p) return false;
        p++;
    }
    const char *e = strchr(p, '|');
    const char *nl = strchr(p, '\n');
    if (!e || (nl && nl < e)) return false;
    while (p < e && *p == ' ') p++;
    while (e > p && e[-1] == ' ') e--;
    *s = p;
    *len = (size_t)(e - p);
    return true;
}

/* A cell holding `NAME`: the name without backticks. */
static bool code_cell(const char *s, size_t len, char *out, size_t cap) {
    if (len < 3 || s[0] != '`' || s[len - 1] != '`' || len - 2 >= cap) return false;
    memcpy(out, s + 1, len - 2);
    out[len - 2] = '\0';
    return true;
}

static void check_constant_rows(const char *doc) {
    for (const char *line = doc; line && *line; line = next_line(line)) {
        const char *s, *v;
        size_t sl, vl;
        char name[80];
        if (!cell(line, 0, &s, &sl) || !code_cell(s, sl, name, sizeof name)) continue;
        if (strncmp(name, "GFP_", 4) != 0) continue;
        long long val;
        if (!cell(line, 1, &v, &vl) || !parse_int(v, vl, &val)) continue;
        bool known = false;
        for (int i = 0; i < n_consts; i++) {
            if (strcmp(consts[i].name, name)) continue;
            known = true;
            consts[i].seen = true;
            if (consts[i].value != val)
                fail("row `%s` gives %lld, the header %lld", name, val, consts[i].value);
        }
        for (size_t i = 0; i < N_STRUCTS; i++) {
            if (strcmp(structs[i].size_name, name)) continue;
            known = true;
            if ((long long)structs[i].size_v1_0 != val)
                fail("row `%s` gives %lld, the header %lld", name, val,
                     (long long)structs[i].size_v1_0);
        }
        for (size_t i = 0; i < sizeof extra_sizes / sizeof extra_sizes[0]; i++) {
            if (strcmp(extra_sizes[i].name, name)) continue;
            known = true;
            if (extra_sizes[i].value != val)
                fail("row `%s` gives %lld, the header %lld", name, val, extra_sizes[i].value);
        }
        if (!known) fail("row `%s` names no constant of the header", name);
    }
    for (int i = 0; i < n_consts; i++)
        if (!consts[i].seen)
            fail("the header's %s (= %lld) has no row \"| `%s` | value |\"", consts[i].name,
                 consts[i].value, consts[i].name);
}

/* ------------------------------------------------------------ structs */
/* The page's section for a struct: from "### `type`" to the next heading. */
static const char *section(const char *doc, const char *type, const char **end) {
    char head[96];
    snprintf(head, sizeof head, "\n### `%s`", type);
    const char *s = strstr(doc, head);
    if (!s) return NULL;
    s += strlen(head);
    const char *e = strstr(s, "\n#");
    *end = e ? e : s + strlen(s);
    return s;
}

static void check_struct(const char *doc, const struct_info *st) {
    const char *end, *sec = section(doc, st->type, &end);
    if (!sec) {
        fail("no section \"### `%s`\"", st->type);
        return;
    }
    /* Rows of the section: | offset | size | `field` | ... */
    size_t last_end = 0;
    for (size_t i = 0; i < N_FIELDS; i++) {
        const field_info *f = &fields[i];
        if (strcmp(f->type, st->type)) continue;
        if (f->offset < last_end)
            fail("%s.%s overlaps the field before it", f->type, f->field);
        last_end = f->offset + f->size;
        bool found = false;
        for (const char *line = sec; line && line < end; line = next_line(line)) {
            const char *s;
            size_t sl;
            char name[64];
            if (!cell(line, 2, &s, &sl) || !code_cell(s, sl, name, sizeof name)) continue;
            if (strcmp(name, f->field)) continue;
            found = true;
            const char *o, *z;
            size_t ol, zl;
            long long off, size;
            if (!cell(line, 0, &o, &ol) || !parse_int(o, ol, &off) || !cell(line, 1, &z, &zl) ||
                !parse_int(z, zl, &size)) {
                fail("%s.%s: the row has no offset and size", f->type, f->field);
                continue;
            }
            if (off != (long long)f->offset)
                fail("%s.%s: the page gives offset %lld, the compiler %lld", f->type, f->field,
                     off, (long long)f->offset);
            if (size != (long long)f->size)
                fail("%s.%s: the page gives size %lld, the compiler %lld", f->type, f->field,
                     size, (long long)f->size);
        }
        if (!found) fail("%s.%s has no row in the section", f->type, f->field);
    }
    /* Fields listed here must cover the struct: an appended field grows it. */
    size_t rounded = (last_end + st->align - 1) / st->align * st->align;
    if (rounded != st->size_of)
        fail("%s: sizeof is %lld but its listed fields end at %lld: a field was added to the "
             "header; add it to the page and to this checker",
             st->type, (long long)st->size_of, (long long)last_end);
    if (last_end != st->size_v1_0)
        fail("%s: its v1.0 fields end at %lld but the SIZE_V1_0 macro says %lld", st->type,
             (long long)last_end, (long long)st->size_v1_0);
    /* No row for a field that does not exist. */
    for (const char *line = sec; line && line < end; line = next_line(line)) {
        const char *s, *o;
        size_t sl, ol;
        char name[64];
        long long off;
        if (!cell(line, 2, &s, &sl) || !code_cell(s, sl, name, sizeof name)) continue;
        if (!cell(line, 0, &o, &ol) || !parse_int(o, ol, &off)) continue;
        bool known = false;
        for (size_t i = 0; i < N_FIELDS && !known; i++)
            known = !strcmp(fields[i].type, st->type) && !strcmp(fields[i].field, name);
        if (!known) fail("section %s has a row for `%s`, which is not a field", st->type, name);
    }
}

/* ------------------------------------------------------------ the header's structs */
/* Walks the body of "typedef struct <type> { ... } <type>;", calling fn for
 * each field with the text of the comments attached to it: the comment block
 * on the lines just before it and the comment after it on its own line. */
typedef void (*field_fn)(const char *type, const char *field, const char *comments, void *user);

static void walk_struct(const char *h, const char *type, field_fn fn, void *user) {
    char head[96];
    snprintf(head, sizeof head, "typedef struct %s {", type);
    const char *p = strstr(h, head);
    if (!p) {
        fail("the header has no \"%s\"", head);
        return;
    }
    p += strlen(head);
    char leading[4096] = "", prev_field[64] = "", prev_comments[4096] = "";
    const char *prev_end = NULL; /* the ';' of the previous field */
    while (*p && *p != '}') {
        if (isspace((unsigned char)*p)) {
            p++;
            continue;
        }
        if (p[0] == '/' && p[1] == '*') {
            const char *e = strstr(p, "*/");
            if (!e) break;
            e += 2;
            /* On the previous field's line: its trailing comment. */
            bool trailing = false;
            if (prev_end) {
                trailing = true;
                for (const char *q = prev_end; q < p; q++)
                    if (*q == '\n') trailing = false;
            }
            char *dst = trailing ? prev_comments : leading;
            size_t used = strlen(dst), n = (size_t)(e - p);
            if (used + n + 1 < sizeof leading) {
                memcpy(dst + used, p, n);
                dst[used + n] = '\0';
            }
            p = e;
            continue;
        }
        /* A declaration up to ';'. */
        const char *semi = strchr(p, ';');
        if (!semi) break;
        if (prev_field[0]) fn(type, prev_field, prev_comments, user);
        const char *name_end;
        const char *fp = strstr(p, "(*");
        if (fp && fp < semi) {
            fp += 2;
            name_end = fp;
            while (is_ident(*name_end)) name_end++;
            p = fp;
        } else {
            name_end = semi;
            const char *br = memchr(p, '[', (size_t)(semi - p));
            if (br) name_end = br;
            while (name_end > p && !is_ident(name_end[-1])) name_end--;
            p = name_end;
            while (p > h && is_ident(p[-1])) p--;
        }
        size_t len = (size_t)(name_end - p);
        if (len >= sizeof prev_field) len = sizeof prev_field - 1;
        memcpy(prev_field, p, len);
        prev_field[len] = '\0';
        snprintf(prev_comments, sizeof prev_comments, "%s", leading);
        leading[0] = '\0';
        prev_end = semi;
        p = semi + 1;
    }
    if (prev_field[0]) fn(type, prev_field, prev_comments, user);
}

/* Every field the header declares must be one this checker lists. */
static void field_known(const char *type, const char *field, const char *comments, void *user) {
    (void)comments, (void)user;
    for (size_t i = 0; i < N_FIELDS; i++)
        if (!strcmp(fields[i].type, type) && !strcmp(fields[i].field, field)) return;
    fail("the header's %s.%s is not in this checker (nor, probably, in the page)", type, field);
}

/* REQUIRED / OPTIONAL of a gfp_plugin field, as its row says. */
static void slot_kind(const char *type, const char *field, const char *comments, void *user) {
    const char *doc = user, *end, *sec = section(doc, type, &end);
    if (!sec) return;
    const char *want = strstr(comments, "REQUIRED") ? "REQUIRED"
                       : strstr(comments, "OPTIONAL") ? "OPTIONAL"
                                                      : NULL;
    for (const char *line = sec; line && line < end; line = next_line(line)) {
        const char *s;
        size_t sl;
        char name[64];
        if (!cell(line, 2, &s, &sl) || !code_cell(s, sl, name, sizeof name) || strcmp(name, field))
            continue;
        const char *nl = strchr(line, '\n');
        size_t n = nl ? (size_t)(nl - line) : strlen(line);
        char row[2048];
        snprintf(row, sizeof row, "%.*s", (int)n, line);
        bool req = strstr(row, "REQUIRED") != NULL, opt = strstr(row, "OPTIONAL") != NULL;
        if (want && !strstr(row, want))
            fail("gfp_plugin.%s is %s in the header but its row does not say so", field, want);
        if (!want && (req || opt))
            fail("gfp_plugin.%s: the row says REQUIRED or OPTIONAL, the header neither", field);
        if (req && opt) fail("gfp_plugin.%s: the row says both REQUIRED and OPTIONAL", field);
    }
}

int main(int argc, char **argv) {
    if (argc != 3) {
        printf("usage: %s <graft_plugin.h> <abi-reference.md>\n", argv[0]);
        return 2;
    }
    char *h = read_file(argv[1]), *doc = read_file(argv[2]);
    header_constants(h);
    table_constants();
    if (n_consts < 100) fail("only %d constants found in the header", n_consts);
    check_constant_rows(doc);
    for (size_t i = 0; i < N_STRUCTS; i++) {
        check_struct(doc, &structs[i]);
        walk_struct(h, structs[i].type, field_known, NULL);
    }
    walk_struct(h, "gfp_plugin", slot_kind, doc);
    printf("%d constants, %zu structs, %zu fields checked: %s\n", n_consts, N_STRUCTS, N_FIELDS,
           failures ? "FAILED" : "the page matches the header");
    free(h);
    free(doc);
    return failures ? 1 : 0;
}
