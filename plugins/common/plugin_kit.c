/* SPDX-License-Identifier: BSD-3-Clause */
/* plugin_kit.c — see plugin_kit.h. Compiled into each plugin: its globals
 * (the host table) are the plugin's own. */
#include "plugin_kit.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const gfp_host *pk_host;
const gfp_plugin *pk_self;

static _Thread_local char tl_last[1024];

const char *pk_last_message(void) { return tl_last; }

gfp_status pk_fail(gfp_status status, const char *fmt, ...) {
    char msg[sizeof tl_last]; /* apart from tl_last: an argument may be pk_last_message() */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    memcpy(tl_last, msg, sizeof tl_last);
    /* pk_host is set by negotiation, which precedes every other call. */
    if (pk_host && pk_host->set_error) pk_host->set_error(pk_host->host_ctx, msg);
    return status;
}

void pk_log(gfp_log_level level, const char *fmt, ...) {
    if (!pk_host || !pk_host->log) return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pk_host->log(pk_host->host_ctx, level, msg);
}

gfp_status pk_no_extension(void *plugin_ctx, const char *name, void **out) {
    (void)plugin_ctx;
    if (out) *out = NULL;
    return pk_fail(GFP_ERR_NOT_FOUND, "the %s plugin has no extension \"%s\"",
                   pk_self ? pk_self->name : "this", name ? name : "(null)");
}

gfp_status pk_check_fill_pattern(uint64_t n, const void *pattern, uint32_t pattern_size) {
    if (pattern_size != 1 && pattern_size != 2 && pattern_size != 4 && pattern_size != 8)
        return pk_fail(GFP_ERR_INVALID, "buffer_fill: pattern_size is %u; it must be 1, 2, 4 or 8",
                       (unsigned)pattern_size);
    if (n % pattern_size)
        return pk_fail(GFP_ERR_INVALID,
                       "buffer_fill: %llu bytes is not a multiple of the %u-byte pattern",
                       (unsigned long long)n, (unsigned)pattern_size);
    if (n && !pattern) return pk_fail(GFP_ERR_INVALID, "buffer_fill: pattern is NULL");
    return GFP_OK;
}

void *pk_dlopen_first(const char *const *names, size_t count, const char **err) {
    void *lib = NULL;
    *err = "not found";
    for (size_t i = 0; i < count && !lib; i++) {
        lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (!lib) {
            const char *e = dlerror();
            if (e) *err = e;
        }
    }
    return lib;
}

gfp_status pk_check_range(const char *what, uint64_t size, uint64_t offset, uint64_t n) {
    if (offset > size || n > size - offset)
        return pk_fail(GFP_ERR_INVALID,
                       "%s: %llu bytes at offset %llu run past the end of a %llu-byte buffer",
                       what, (unsigned long long)n, (unsigned long long)offset,
                       (unsigned long long)size);
    return GFP_OK;
}

gfp_status pk_copy_props(gfp_device_props *props, const gfp_device_props *full) {
    size_t n = props->struct_size < sizeof *full ? props->struct_size : sizeof *full;
    if (n > sizeof full->struct_size)
        memcpy((char *)props + sizeof full->struct_size, (const char *)full + sizeof full->struct_size,
               n - sizeof full->struct_size);
    return GFP_OK;
}

/* ------------------------------------------------------------ names */
const char *pk_op_name(uint32_t op) {
    const char *name = gfp_op_name(op);
    if (name) return name;
    static _Thread_local char buf[24];
    snprintf(buf, sizeof buf, "op %u", (unsigned)op);
    return buf;
}

const char *pk_dtype_name(int32_t dtype) {
    switch (dtype) {
    case GFP_F32: return "f32";
    case GFP_F64: return "f64";
    case GFP_I32: return "i32";
    case GFP_I64: return "i64";
    case GFP_BOOL: return "bool";
    case GFP_F16: return "f16";
    case GFP_BF16: return "bf16";
    case GFP_C64: return "c64";
    case GFP_C128: return "c128";
    default: return "unknown";
    }
}

size_t pk_dtype_size(int32_t dtype) {
    switch (dtype) {
    case GFP_F32:
    case GFP_I32: return 4;
    case GFP_F64:
    case GFP_I64:
    case GFP_C64: return 8;
    case GFP_C128: return 16;
    case GFP_BOOL: return 1;
    case GFP_F16:
    case GFP_BF16: return 2;
    default: return 0;
    }
}

bool pk_is_float(int32_t dtype) { return dtype == GFP_F32 || dtype == GFP_F64; }
bool pk_is_half(int32_t dtype) { return dtype == GFP_F16 || dtype == GFP_BF16; }

int64_t pk_numel(const gfp_tensor *t) {
    int64_t n = 1;
    for (int d = 0; d < t->rank; d++) n *= t->sizes[d];
    return n;
}

bool pk_same_shape(const gfp_tensor *a, const gfp_tensor *b) {
    if (a->rank != b->rank) return false;
    for (int d = 0; d < a->rank; d++)
        if (a->sizes[d] != b->sizes[d]) return false;
    return true;
}

bool pk_is_contiguous(const gfp_tensor *t) {
    int64_t expect = 1;
    for (int d = t->rank - 1; d >= 0; d--) {
        if (t->sizes[d] != 1 && t->strides[d] != expect) return false;
        expect *= t->sizes[d];
    }
    return true;
}

/* ------------------------------------------------------------ routing */
const void *pk_route(const void *entries, size_t entry_size, size_t count, uint32_t op) {
    gfp_op_family f = gfp_op_family_of(op);
    if (f == GFP_FAMILY_COUNT) return NULL;
    const char *e = entries;
    for (size_t i = 0; i < count; i++, e += entry_size) {
        uint32_t families;
        memcpy(&families, e, sizeof families);
        if (families & GFP_FAMILY_BIT(f)) return e;
    }
    return NULL;
}

/* ------------------------------------------------------------ elementwise */
typedef enum math_kind { MK_NONE, MK_FLOAT, MK_NUMERIC, MK_COMPARE, MK_LOGICAL } math_kind;

static math_kind math_of(uint32_t op) {
    switch (op) {
#define GF_OP_MATH_UNARY(ID, name, kind, f, i) \
    case GFP_OP_##ID: return MK_##kind;
#define GF_OP_MATH_BINARY(ID, name, kind, f, i) \
    case GFP_OP_##ID: return MK_##kind;
#include "op_math.def"
    default: return MK_NONE;
    }
}

pk_ew_kind pk_ew_kind_of(uint32_t op) {
    math_kind m = math_of(op);
    switch (gfp_op_family_of(op)) {
    case GFP_FAMILY_COPY: return PK_EW_COPY;
    case GFP_FAMILY_CREATE: return op == GFP_OP_FILL ? PK_EW_FILL : PK_EW_ARANGE;
    case GFP_FAMILY_TRI: return PK_EW_TRI;
    case GFP_FAMILY_WHERE: return PK_EW_WHERE;
    case GFP_FAMILY_UNARY:
        return m == MK_LOGICAL ? PK_EW_LOGICAL_NOT : m == MK_NONE ? PK_EW_NONE : PK_EW_UNARY;
    case GFP_FAMILY_BINARY:
        return m == MK_COMPARE   ? PK_EW_COMPARE
               : m == MK_LOGICAL ? PK_EW_LOGICAL
               : m == MK_NONE    ? PK_EW_NONE
                                 : PK_EW_BINARY;
    default: return PK_EW_NONE;
    }
}

bool pk_ew_numeric(uint32_t op) { return math_of(op) == MK_NUMERIC; }

/* ------------------------------------------------------------ query_op */
gfp_status pk_query_begin(const gfp_op_query *q, uint32_t *support) {
    if (!support) return pk_fail(GFP_ERR_INVALID, "query_op: support is NULL");
    *support = GFP_SUPPORT_NONE;
    if (!q) return pk_fail(GFP_ERR_INVALID, "query_op: query is NULL");
    if (q->struct_size < GFP_OP_QUERY_SIZE_V1_0)
        return pk_fail(GFP_ERR_INVALID, "query_op: query struct_size is %u, at least %zu needed",
                       (unsigned)q->struct_size, (size_t)GFP_OP_QUERY_SIZE_V1_0);
    if (q->n_inputs > 8 || q->n_outputs > 4)
        return pk_fail(GFP_ERR_INVALID,
                       "query_op: %u inputs and %u outputs exceed the query's 8 and 4 slots",
                       (unsigned)q->n_inputs, (unsigned)q->n_outputs);
    return GFP_OK;
}

static bool stored(int32_t d, uint32_t dtypes) {
    return d >= 0 && d < GFP_DTYPE_COUNT && (dtypes & GFP_DTYPE_BIT(d));
}

bool pk_query_fits(const gfp_op_query *q, uint32_t dtypes) {
    const gfp_op_info *info = gfp_op_lookup(q->op);
    if (!info || q->n_inputs < info->in_min || q->n_inputs > info->in_max ||
        q->n_outputs != info->n_out)
        return false;
    for (uint32_t i = 0; i < q->n_inputs; i++) {
        bool may_be_absent = i + info->in_optional >= q->n_inputs;
        if (q->input_dtypes[i] == -1 && may_be_absent) continue;
        if (!stored(q->input_dtypes[i], dtypes)) return false;
    }
    for (uint32_t i = 0; i < q->n_outputs; i++)
        if (!stored(q->output_dtypes[i], dtypes)) return false;
    return true;
}

/* ------------------------------------------------------------ launch */
uint64_t pk_view_last(const gfp_tensor *t) {
    uint64_t last = 0;
    for (int d = 0; d < t->rank; d++) {
        uint64_t span = (uint64_t)(t->sizes[d] - 1), stride = (uint64_t)t->strides[d];
        if (stride && span > (UINT64_MAX / 2 - last) / stride) return UINT64_MAX / 2;
        last += span * stride;
    }
    return last;
}

gfp_status pk_check_tensor(const pk_device_rules *r, uint32_t op, const char *role, uint32_t i,
                           const gfp_tensor *t) {
    const char *name = pk_op_name(op);
    if (t->struct_size < GFP_TENSOR_SIZE_V1_0)
        return pk_fail(GFP_ERR_INVALID, "%s: %s %u has struct_size %u, at least %zu needed", name,
                       role, (unsigned)i, (unsigned)t->struct_size, (size_t)GFP_TENSOR_SIZE_V1_0);
    if (t->rank < 0 || t->rank > GFP_MAX_RANK)
        return pk_fail(GFP_ERR_INVALID, "%s: %s %u has rank %d, outside [0, %d]", name, role,
                       (unsigned)i, (int)t->rank, GFP_MAX_RANK);
    if (!stored(t->dtype, r->dtypes)) {
        char list[64] = "";
        size_t n = 0;
        for (int32_t d = 0; d < GFP_DTYPE_COUNT && n < sizeof list; d++)
            if (stored(d, r->dtypes))
                n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", n ? ", " : "",
                                      pk_dtype_name(d));
        return pk_fail(GFP_ERR_UNSUPPORTED,
                       "%s: %s %u has dtype %s (%d), which the %s plugin's device '%s' does not "
                       "store (it stores %s)",
                       name, role, (unsigned)i, pk_dtype_name(t->dtype), (int)t->dtype, r->plugin,
                       r->device, list);
    }
    for (int k = 0; k < t->rank; k++)
        if (t->sizes[k] < 0 || t->strides[k] < 0)
            return pk_fail(GFP_ERR_INVALID,
                           "%s: %s %u has size %lld and stride %lld in dim %d; both must be >= 0",
                           name, role, (unsigned)i, (long long)t->sizes[k],
                           (long long)t->strides[k], k);
    if (pk_numel(t) == 0) return GFP_OK; /* nothing will be touched */
    uint64_t size = 0;
    if (r->buffer_size(r->ctx, t->buffer, &size) != GFP_OK)
        return pk_fail(GFP_ERR_INVALID,
                       "%s: %s %u's buffer is not a live %s buffer (NULL, freed already, or from "
                       "another plugin)",
                       name, role, (unsigned)i, r->plugin);
    uint64_t esize = pk_dtype_size(t->dtype);
    if (t->offset % esize != 0)
        return pk_fail(GFP_ERR_INVALID,
                       "%s: %s %u's byte offset %llu is not a multiple of its element size %llu",
                       name, role, (unsigned)i, (unsigned long long)t->offset,
                       (unsigned long long)esize);
    uint64_t last = pk_view_last(t);
    if (t->offset > size || last >= (size - t->offset) / esize)
        return pk_fail(GFP_ERR_INVALID,
                       "%s: %s %u reaches element %llu from byte offset %llu, past the end of "
                       "its %llu-byte buffer (check sizes, strides and offset)",
                       name, role, (unsigned)i, (unsigned long long)last,
                       (unsigned long long)t->offset, (unsigned long long)size);
    return GFP_OK;
}

gfp_status pk_check_counts(uint32_t op, uint32_t n_in, uint32_t n_out) {
    const gfp_op_info *info = gfp_op_lookup(op);
    if (!info) return pk_fail(GFP_ERR_UNSUPPORTED, "%s: not an op of the table", pk_op_name(op));
    if (n_in >= info->in_min && n_in <= info->in_max && n_out == info->n_out) return GFP_OK;
    if (info->in_min == info->in_max)
        return pk_fail(GFP_ERR_INVALID, "%s: takes %u input(s) and %u output(s), got %u and %u",
                       info->name, (unsigned)info->in_min, (unsigned)info->n_out, (unsigned)n_in,
                       (unsigned)n_out);
    return pk_fail(GFP_ERR_INVALID,
                   "%s: takes %u to %u input(s) and %u output(s), got %u and %u", info->name,
                   (unsigned)info->in_min, (unsigned)info->in_max, (unsigned)info->n_out,
                   (unsigned)n_in, (unsigned)n_out);
}

gfp_status pk_expect_counts(uint32_t n_in, uint32_t want_in, uint32_t n_out, uint32_t want_out,
                            const char *name) {
    if (n_in != want_in || n_out != want_out)
        return pk_fail(GFP_ERR_INVALID, "%s: takes %u input(s) and %u output(s), got %u and %u",
                       name, (unsigned)want_in, (unsigned)want_out, (unsigned)n_in,
                       (unsigned)n_out);
    return GFP_OK;
}

gfp_status pk_check_params(const void *params, size_t min_size, const char *name) {
    if (!params)
        return pk_fail(GFP_ERR_INVALID, "%s: the parameter struct is NULL; this op needs one",
                       name);
    uint32_t size;
    memcpy(&size, params, sizeof size);
    if (size < min_size)
        return pk_fail(GFP_ERR_INVALID,
                       "%s: parameter struct_size is %u bytes, at least %zu are needed (set "
                       "struct_size = sizeof the struct)",
                       name, (unsigned)size, min_size);
    return GFP_OK;
}

gfp_status pk_launch_begin(const pk_device_rules *r, uint32_t op, const gfp_tensor *const *in,
                           uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                           const void *params) {
    const gfp_op_info *info = gfp_op_lookup(op);
    if (!info)
        return pk_fail(GFP_ERR_UNSUPPORTED,
                       "op id %u is not an op the %s plugin knows (unknown or newer than ABI "
                       "%d.%d)",
                       (unsigned)op, r->plugin, GFP_ABI_MAJOR, GFP_ABI_MINOR);
    if ((n_in && !in) || (n_out && !out))
        return pk_fail(GFP_ERR_INVALID, "%s: the inputs or outputs array is NULL", info->name);
    gfp_status st = pk_check_counts(op, n_in, n_out);
    if (st != GFP_OK) return st;
    for (uint32_t i = 0; i < n_in && st == GFP_OK; i++) {
        if (in[i]) {
            st = pk_check_tensor(r, op, "input", i, in[i]);
        } else if (i + info->in_optional < n_in) {
            return pk_fail(GFP_ERR_INVALID, "%s: input %u is NULL; only the last %u may be absent",
                           info->name, (unsigned)i, (unsigned)info->in_optional);
        }
    }
    for (uint32_t i = 0; i < n_out && st == GFP_OK; i++) {
        if (!out[i])
            return pk_fail(GFP_ERR_INVALID, "%s: output %u is NULL", info->name, (unsigned)i);
        st = pk_check_tensor(r, op, "output", i, out[i]);
    }
    if (st != GFP_OK) return st;
    if (info->params != GFP_PARAMS_none)
        return pk_check_params(params, gfp_params_min_size((gfp_params_kind)info->params),
                               info->name);
    return GFP_OK;
}

/* ------------------------------------------------------------ routed slots */
const void *pk_query_route(const gfp_op_query *q, uint32_t *support, uint32_t dtypes,
                           const void *entries, size_t entry_size, size_t count,
                           gfp_status *st) {
    *st = pk_query_begin(q, support);
    if (*st != GFP_OK || !pk_query_fits(q, dtypes)) return NULL;
    return pk_route(entries, entry_size, count, q->op);
}

const void *pk_launch_route(const pk_device_rules *r, uint32_t op, const gfp_tensor *const *in,
                            uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                            const void *params, const void *entries, size_t entry_size,
                            size_t count, gfp_status *st) {
    *st = pk_launch_begin(r, op, in, n_in, out, n_out, params);
    if (*st != GFP_OK) return NULL;
    const void *e = pk_route(entries, entry_size, count, op);
    if (!e)
        *st = pk_fail(GFP_ERR_UNSUPPORTED, "%s: the %s plugin does not provide it",
                      pk_op_name(op), r->plugin);
    return e;
}

/* ------------------------------------------------------------ conv2d */
static gfp_status check_rank4(const char *op, const gfp_tensor *t, const char *name,
                              const char *layout) {
    if (!t) return pk_fail(GFP_ERR_INVALID, "%s: %s is NULL", op, name);
    if (t->rank != 4)
        return pk_fail(GFP_ERR_INVALID, "%s: %s must be rank 4 %s, got rank %d", op, name, layout,
                       (int)t->rank);
    for (int d = 0; d < 4; d++)
        if (t->sizes[d] < 0)
            return pk_fail(GFP_ERR_INVALID, "%s: %s has a negative size %lld in dim %d", op, name,
                           (long long)t->sizes[d], d);
    return GFP_OK;
}

gfp_status pk_check_conv2d(uint32_t op_id, const void *params, const pk_conv2d_roles *r,
                           pk_conv2d_geom *g) {
    const char *op = pk_op_name(op_id);
    gfp_status st = pk_check_params(params, GFP_CONV2D_PARAMS_SIZE_V1_0, op);
    if (st != GFP_OK) return st;
    const gfp_conv2d_params *p = params;
    if (p->groups < 1)
        return pk_fail(GFP_ERR_INVALID, "%s: groups is %d; it must be >= 1", op, (int)p->groups);
    for (int a = 0; a < 2; a++) {
        if (p->stride[a] < 1)
            return pk_fail(GFP_ERR_INVALID, "%s: stride[%d] is %d; strides must be >= 1", op, a,
                           (int)p->stride[a]);
        if (p->dilation[a] < 1)
            return pk_fail(GFP_ERR_INVALID, "%s: dilation[%d] is %d; dilations must be >= 1", op,
                           a, (int)p->dilation[a]);
        if (p->padding[a] < 0)
            return pk_fail(GFP_ERR_INVALID, "%s: padding[%d] is %d; padding must be >= 0", op, a,
                           (int)p->padding[a]);
    }
    g->groups = p->groups;
    g->sh = p->stride[0];
    g->sw = p->stride[1];
    g->ph = p->padding[0];
    g->pw = p->padding[1];
    g->dh = p->dilation[0];
    g->dw = p->dilation[1];
    if ((st = check_rank4(op, r->x, r->xname, "[N, Ci, H, W]")) != GFP_OK) return st;
    if ((st = check_rank4(op, r->w, r->wname, "[Co, Ci/groups, kh, kw]")) != GFP_OK) return st;
    if ((st = check_rank4(op, r->y, r->yname, "[N, Co, Ho, Wo]")) != GFP_OK) return st;
    g->n = r->x->sizes[0];
    g->ci = r->x->sizes[1];
    g->h = r->x->sizes[2];
    g->w = r->x->sizes[3];
    g->co = r->w->sizes[0];
    g->kh = r->w->sizes[2];
    g->kw = r->w->sizes[3];
    if (g->ci % g->groups != 0)
        return pk_fail(GFP_ERR_INVALID,
                       "%s: %s has %lld input channels, not divisible by groups = %lld", op,
                       r->xname, (long long)g->ci, (long long)g->groups);
    if (g->co % g->groups != 0)
        return pk_fail(GFP_ERR_INVALID,
                       "%s: %s has %lld output channels, not divisible by groups = %lld", op,
                       r->wname, (long long)g->co, (long long)g->groups);
    g->cig = g->ci / g->groups;
    g->cog = g->co / g->groups;
    if (r->w->sizes[1] != g->cig)
        return pk_fail(GFP_ERR_INVALID,
                       "%s: %s dim 1 is %lld but must be Ci/groups = %lld/%lld = %lld", op,
                       r->wname, (long long)r->w->sizes[1], (long long)g->ci,
                       (long long)g->groups, (long long)g->cig);
    if (g->kh < 1 || g->kw < 1)
        return pk_fail(GFP_ERR_INVALID, "%s: the kernel size %lldx%lld of %s must be >= 1x1", op,
                       (long long)g->kh, (long long)g->kw, r->wname);
    /* Overflow-safe: sizes and parameters are below 2^31 and 2^63 / 4. */
    if (g->h > INT64_MAX / 4 || g->w > INT64_MAX / 4 || g->kh > INT64_MAX / 4 / g->dh ||
        g->kw > INT64_MAX / 4 / g->dw)
        return pk_fail(GFP_ERR_INVALID, "%s: sizes or dilation too large to compute with", op);
    int64_t span_h = g->h + 2 * g->ph - g->dh * (g->kh - 1) - 1;
    int64_t span_w = g->w + 2 * g->pw - g->dw * (g->kw - 1) - 1;
    if (span_h < 0 || span_w < 0)
        return pk_fail(GFP_ERR_INVALID,
                       "%s: the dilated kernel (%lldx%lld) is larger than the padded input "
                       "(%lldx%lld); use a smaller kernel or dilation, or more padding",
                       op, (long long)(g->dh * (g->kh - 1) + 1),
                       (long long)(g->dw * (g->kw - 1) + 1), (long long)(g->h + 2 * g->ph),
                       (long long)(g->w + 2 * g->pw));
    g->ho = span_h / g->sh + 1;
    g->wo = span_w / g->sw + 1;
    const int64_t *ys = r->y->sizes;
    if (ys[0] != g->n || ys[1] != g->co || ys[2] != g->ho || ys[3] != g->wo)
        return pk_fail(GFP_ERR_INVALID,
                       "%s: %s has sizes [%lld, %lld, %lld, %lld] but %s [%lld, %lld, %lld, %lld] "
                       "with %s [%lld, %lld, %lld, %lld], stride %lldx%lld, padding %lldx%lld and "
                       "dilation %lldx%lld needs [%lld, %lld, %lld, %lld]",
                       op, r->yname, (long long)ys[0], (long long)ys[1], (long long)ys[2],
                       (long long)ys[3], r->xname, (long long)g->n, (long long)g->ci,
                       (long long)g->h, (long long)g->w, r->wname, (long long)g->co,
                       (long long)g->cig, (long long)g->kh, (long long)g->kw, (long long)g->sh,
                       (long long)g->sw, (long long)g->ph, (long long)g->pw, (long long)g->dh,
                       (long long)g->dw, (long long)g->n, (long long)g->co, (long long)g->ho,
                       (long long)g->wo);
    return GFP_OK;
}

/* ------------------------------------------------------------ pool2d */
int64_t pk_floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

int64_t pk_pool2d_out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d,
                           bool ceil_mode) {
    int64_t out = pk_floor_div(in + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0), s) + 1;
    /* The last window must start inside the input or its left padding. */
    if (ceil_mode && (out - 1) * s >= in + p) out--;
    return out;
}

gfp_status pk_check_pool2d(uint32_t op_id, const void *params, const gfp_tensor *x,
                           const char *xname, const gfp_tensor *y, const char *yname,
                           pk_pool2d_geom *g) {
    const char *op = pk_op_name(op_id);
    bool is_max = op_id == GFP_OP_MAX_POOL2D || op_id == GFP_OP_MAX_POOL2D_BACKWARD;
    gfp_status st = pk_check_params(params, GFP_POOL2D_PARAMS_SIZE_V1_0, op);
    if (st != GFP_OK) return st;
    const gfp_pool2d_params *p = params;
    for (int a = 0; a < 2; a++) {
        if (p->kernel[a] < 1)
            return pk_fail(GFP_ERR_INVALID, "%s: kernel[%d] is %d; kernel sizes must be >= 1", op,
                           a, (int)p->kernel[a]);
        if (p->stride[a] < 1)
            return pk_fail(GFP_ERR_INVALID, "%s: stride[%d] is %d; strides must be >= 1", op, a,
                           (int)p->stride[a]);
        if (p->padding[a] < 0)
            return pk_fail(GFP_ERR_INVALID, "%s: padding[%d] is %d; padding must be >= 0", op, a,
                           (int)p->padding[a]);
        if (p->padding[a] > p->kernel[a] / 2)
            return pk_fail(GFP_ERR_INVALID,
                           "%s: padding[%d] is %d but kernel[%d] is %d; padding must be at most "
                           "half the kernel size (kernel/2 = %d)",
                           op, a, (int)p->padding[a], a, (int)p->kernel[a],
                           (int)(p->kernel[a] / 2));
        if (is_max && p->dilation[a] < 1)
            return pk_fail(GFP_ERR_INVALID, "%s: dilation[%d] is %d; dilations must be >= 1", op,
                           a, (int)p->dilation[a]);
    }
    g->kh = p->kernel[0];
    g->kw = p->kernel[1];
    g->sh = p->stride[0];
    g->sw = p->stride[1];
    g->ph = p->padding[0];
    g->pw = p->padding[1];
    g->dh = is_max ? p->dilation[0] : 1; /* avg pool has no dilation */
    g->dw = is_max ? p->dilation[1] : 1;
    g->ceil_mode = p->ceil_mode != 0;
    g->include_pad = p->count_include_pad != 0;
    static const char *const layout = "[N, C, H, W] (the core reshapes 3-D input)";
    if ((st = check_rank4(op, x, xname, layout)) != GFP_OK) return st;
    if ((st = check_rank4(op, y, yname, layout)) != GFP_OK) return st;
    g->n = x->sizes[0];
    g->c = x->sizes[1];
    g->h = x->sizes[2];
    g->w = x->sizes[3];
    g->ho = pk_pool2d_out_size(g->h, g->kh, g->sh, g->ph, g->dh, g->ceil_mode);
    g->wo = pk_pool2d_out_size(g->w, g->kw, g->sw, g->pw, g->dw, g->ceil_mode);
    if (g->ho < 1 || g->wo < 1)
        return pk_fail(GFP_ERR_INVALID,
                       "%s: the output would be %lldx%lld: input %lldx%lld is too small for "
                       "kernel %lldx%lld, padding %lldx%lld and dilation %lldx%lld",
                       op, (long long)g->ho, (long long)g->wo, (long long)g->h, (long long)g->w,
                       (long long)g->kh, (long long)g->kw, (long long)g->ph, (long long)g->pw,
                       (long long)g->dh, (long long)g->dw);
    const int64_t *ys = y->sizes;
    if (ys[0] != g->n || ys[1] != g->c || ys[2] != g->ho || ys[3] != g->wo)
        return pk_fail(GFP_ERR_INVALID,
                       "%s: %s has sizes [%lld, %lld, %lld, %lld] but %s [%lld, %lld, %lld, %lld] "
                       "with kernel %lldx%lld, stride %lldx%lld, padding %lldx%lld, dilation "
                       "%lldx%lld and ceil_mode %d needs [%lld, %lld, %lld, %lld]",
                       op, yname, (long long)ys[0], (long long)ys[1], (long long)ys[2],
                       (long long)ys[3], xname, (long long)g->n, (long long)g->c, (long long)g->h,
                       (long long)g->w, (long long)g->kh, (long long)g->kw, (long long)g->sh,
                       (long long)g->sw, (long long)g->ph, (long long)g->pw, (long long)g->dh,
                       (long long)g->dw, (int)g->ceil_mode, (long long)g->n, (long long)g->c,
                       (long long)g->ho, (long long)g->wo);
    return GFP_OK;
}

gfp_status pk_check_nchw(const char *op, const gfp_tensor *t, const char *name) {
    return check_rank4(op, t, name, "[N, C, H, W] (the core reshapes 3-D input)");
}

gfp_status pk_check_max_pool2d_backward(const gfp_tensor *gy, const gfp_tensor *ind,
                                        const gfp_tensor *gx, pk_pool2d_geom *g) {
    const char *op = pk_op_name(GFP_OP_MAX_POOL2D_BACKWARD);
    gfp_status st;
    if ((st = pk_check_nchw(op, gy, "grad_y")) != GFP_OK) return st;
    if ((st = pk_check_nchw(op, ind, "indices")) != GFP_OK) return st;
    if ((st = pk_check_nchw(op, gx, "grad_x")) != GFP_OK) return st;
    if (ind->dtype != GFP_I64)
        return pk_fail(GFP_ERR_UNSUPPORTED, "%s: indices are %s; they must be i64", op,
                       pk_dtype_name(ind->dtype));
    if (!pk_same_shape(gy, ind))
        return pk_fail(GFP_ERR_INVALID,
                       "%s: indices [%lld, %lld, %lld, %lld] must have grad_y's sizes "
                       "[%lld, %lld, %lld, %lld]",
                       op, (long long)ind->sizes[0], (long long)ind->sizes[1],
                       (long long)ind->sizes[2], (long long)ind->sizes[3],
                       (long long)gy->sizes[0], (long long)gy->sizes[1], (long long)gy->sizes[2],
                       (long long)gy->sizes[3]);
    if (gy->sizes[0] != gx->sizes[0] || gy->sizes[1] != gx->sizes[1])
        return pk_fail(GFP_ERR_INVALID,
                       "%s: grad_y is [%lld, %lld, ...] but grad_x is [%lld, %lld, ...]; N and C "
                       "must match",
                       op, (long long)gy->sizes[0], (long long)gy->sizes[1],
                       (long long)gx->sizes[0], (long long)gx->sizes[1]);
    memset(g, 0, sizeof *g);
    g->n = gx->sizes[0];
    g->c = gx->sizes[1];
    g->h = gx->sizes[2];
    g->w = gx->sizes[3];
    g->ho = gy->sizes[2];
    g->wo = gy->sizes[3];
    return GFP_OK;
}
