/* SPDX-License-Identifier: BSD-3-Clause */
/* checks.c — what a plugin must do besides computing right: the memory
 * slots, refusing what it cannot do without crashing, serving two threads at
 * once when it says it can, and not keeping memory it was given back.
 *
 * The leak probe watches the process heap (mallinfo2, where the C library
 * has it) over rounds of allocate / write / launch / read / free: memory that
 * grows in every round after a warm-up is kept by the plugin. The shutdown
 * check (plugin.c) adds what the plugin itself says when it is shut down. */
#define _GNU_SOURCE /* mallinfo2 */

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "pc.h"

#define DEV(ctx) ((ctx)->dev)

/* ------------------------------------------------------------ memory slots */
static void mem_result(pc_ctx *ctx, const char *what, bool ok, const char *fmt, ...)
    PC_PRINTF(4, 5);
static void mem_result(pc_ctx *ctx, const char *what, bool ok, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pc_report_check(ctx->device_index, "memory", what, ok ? PC_PASS : PC_FAIL, "%s", msg);
}

static void pattern(unsigned char *p, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(seed + i * 131u + (i >> 8));
}

/* buffer_wrap_host (ABI 1.1): memory the checker owns, 4-byte aligned only,
 * adopted; the slots work on it in place; buffer_free leaves it alone (were
 * it freed, the writes after it would be a use after free, which the
 * sanitizer builds of the checker catch). Without HOST_ADDRESSABLE the slot
 * must refuse. */
static void check_wrap_host(pc_ctx *ctx, bool host) {
    pc_device *d = DEV(ctx);
    const gfp_plugin *s = &d->plugin->slots;
    enum { N = 600 };
    unsigned char *mem = malloc(N + 8), want[N], got[N];
    if (!mem) return;
    unsigned char *p = mem + 4;
    pattern(p, N, 31);
    memcpy(want, p, N);
    gfp_buffer w = NULL;
    pc_error_clear();
    gfp_status st = s->buffer_wrap_host(d->handle, p, N, &w);
    if (!host) {
        mem_result(ctx, "buffer_wrap_host", st != GFP_OK && !w,
                   "a device without HOST_ADDRESSABLE gave %s%s", pc_status_name(st),
                   st != GFP_OK ? " (refused, as it must be)" : " (it cannot adopt host memory)");
        if (st == GFP_OK && w) s->buffer_free(d->handle, w);
        free(mem);
        return;
    }
    char bad[200] = "";
    if (st != GFP_OK || !w)
        snprintf(bad, sizeof bad, "wrapping %d bytes returned %s: %s", N, pc_status_name(st),
                 pc_error_text());
    if (!bad[0]) {
        st = pc_read(d, w, 0, got, N);
        if (st != GFP_OK || memcmp(got, want, N))
            snprintf(bad, sizeof bad, "buffer_read does not show the adopted memory (%s)",
                     pc_status_name(st));
    }
    if (!bad[0]) {
        unsigned char part[40];
        pattern(part, sizeof part, 77);
        st = pc_write(d, w, 100, part, sizeof part);
        if (st == GFP_OK) st = pc_sync(d);
        memcpy(want + 100, part, sizeof part);
        if (st != GFP_OK || memcmp(p, want, N))
            snprintf(bad, sizeof bad, "buffer_write at offset 100 is not seen in the adopted "
                     "memory itself (%s)", pc_status_name(st));
    }
    if (!bad[0]) {
        pc_error_clear();
        st = pc_write(d, w, N - 8, want, 16);
        if (st == GFP_OK)
            snprintf(bad, sizeof bad, "a 16-byte write at offset %d of a %d-byte adopted buffer "
                     "was accepted (it runs past the end)", N - 8, N);
    }
    if (w) s->buffer_free(d->handle, w);
    if (!bad[0]) {
        p[0] ^= 0xff; /* still the checker's: the plugin did not free it */
        if (p[0] != (unsigned char)(want[0] ^ 0xff)) snprintf(bad, sizeof bad, "memory changed");
    }
    pc_error_clear();
    w = NULL;
    st = s->buffer_wrap_host(d->handle, NULL, N, &w);
    if (!bad[0] && (st == GFP_OK || w))
        snprintf(bad, sizeof bad, "wrapping a NULL pointer returned %s", pc_status_name(st));
    if (st == GFP_OK && w) s->buffer_free(d->handle, w);
    mem_result(ctx, "buffer_wrap_host", !bad[0], "%s",
               bad[0] ? bad : "adopted 600 bytes at a 4-byte aligned address: read and written "
                              "in place, bounds checked, left to their owner by buffer_free; "
                              "NULL refused");
    free(mem);
}

void pc_check_memory(pc_ctx *ctx) {
    pc_device *d = DEV(ctx);
    const gfp_plugin *s = &d->plugin->slots;
    enum { N = 1000 };
    unsigned char want[N], got[N];
    gfp_buffer a = NULL, b = NULL;
    void *hp = NULL;
    pc_progress("memory slots");
    gfp_status st = pc_alloc(d, N, &a, &hp);
    bool host = (d->props.flags & GFP_DEVICE_FLAG_HOST_ADDRESSABLE) != 0;
    bool ok = st == GFP_OK && a != NULL;
    if (ok && host) ok = hp != NULL && ((uintptr_t)hp % 64) == 0;
    if (ok && !host) ok = hp == NULL;
    mem_result(ctx, "buffer_alloc", ok,
               st != GFP_OK ? "buffer_alloc(%d) returned %s: %s"
               : !a         ? "buffer_alloc(%d) returned OK with a NULL buffer handle%s%s"
               : host && !hp ? "buffer_alloc(%d): the device is HOST_ADDRESSABLE but host_ptr is NULL%s%s"
               : host && ((uintptr_t)hp % 64) ? "buffer_alloc(%d): host_ptr is not 64-byte aligned%s%s"
               : !host && hp ? "buffer_alloc(%d): host_ptr must be NULL without HOST_ADDRESSABLE%s%s"
                             : "buffer_alloc(%d): handle and host_ptr as the flags say%s%s",
               N, st != GFP_OK ? pc_status_name(st) : "", st != GFP_OK ? pc_error_text() : "");
    if (st != GFP_OK) return;

    /* Round trip, a partial write, a partial read. */
    pattern(want, N, 7);
    st = pc_write(d, a, 0, want, N);
    if (st == GFP_OK) st = pc_read(d, a, 0, got, N);
    ok = st == GFP_OK && !memcmp(want, got, N);
    if (ok) {
        unsigned char part[33];
        pattern(part, sizeof part, 99);
        memcpy(want + 501, part, sizeof part);
        st = pc_write(d, a, 501, part, sizeof part);
        if (st == GFP_OK) st = pc_read(d, a, 13, got, 777);
        ok = st == GFP_OK && !memcmp(want + 13, got, 777);
    }
    mem_result(ctx, "buffer_write/read", ok, "%s%s%s",
               st != GFP_OK ? pc_status_name(st) : ok ? "round trip, partial write at offset 501, "
                                                        "partial read at offset 13"
                                                      : "the bytes read back differ from those written",
               st != GFP_OK ? ": " : "", st != GFP_OK ? pc_error_text() : "");
    if (ok && host) {
        st = pc_sync(d);
        ok = st == GFP_OK && !memcmp(hp, want, N);
        mem_result(ctx, "host_ptr", ok, "%s",
                   ok ? "host_ptr shows what buffer_write wrote"
                      : "host_ptr does not show the buffer's contents (HOST_ADDRESSABLE says it does)");
    }

    if (s->buffer_copy) {
        st = pc_alloc(d, N, &b, NULL);
        unsigned char bwant[N];
        pattern(bwant, N, 200);
        if (st == GFP_OK) st = pc_write(d, b, 0, bwant, N);
        pc_error_clear();
        if (st == GFP_OK) st = s->buffer_copy(d->handle, a, 100, b, 37, 300);
        if (st == GFP_OK) st = pc_read(d, b, 0, got, N);
        memcpy(bwant + 37, want + 100, 300);
        ok = st == GFP_OK && !memcmp(bwant, got, N);
        mem_result(ctx, "buffer_copy", ok, "%s%s%s",
                   st != GFP_OK ? pc_status_name(st)
                   : ok         ? "300 bytes from offset 100 to offset 37, nothing else touched"
                                : "the destination does not hold exactly the copied bytes",
                   st != GFP_OK ? ": " : "", st != GFP_OK ? pc_error_text() : "");
        if (b) pc_free(d, b);
    }
    if (s->buffer_fill) {
        static const uint32_t sizes[4] = {1, 2, 4, 8};
        char bad[128] = "";
        for (int i = 0; i < 4 && !bad[0]; i++) {
            unsigned char pat[8];
            pattern(pat, 8, 50u + (unsigned)i);
            uint32_t ps = sizes[i];
            uint64_t off = 8, n = ps * 17u;
            pc_error_clear();
            st = s->buffer_fill(d->handle, a, off, n, pat, ps);
            if (st == GFP_OK) st = pc_read(d, a, 0, got, N);
            for (uint64_t j = 0; j < n; j++) want[off + j] = pat[j % ps];
            if (st != GFP_OK)
                snprintf(bad, sizeof bad, "pattern size %u: %s: %s", (unsigned)ps,
                         pc_status_name(st), pc_error_text());
            else if (memcmp(want, got, N))
                snprintf(bad, sizeof bad, "pattern size %u: the buffer does not hold the pattern "
                         "repeated over [8, %llu) and its old bytes elsewhere",
                         (unsigned)ps, (unsigned long long)(off + n));
        }
        mem_result(ctx, "buffer_fill", !bad[0], "%s",
                   bad[0] ? bad : "patterns of 1, 2, 4 and 8 bytes at offset 8, nothing else touched");
    }
    if (s->synchronize) {
        st = pc_sync(d);
        mem_result(ctx, "synchronize", st == GFP_OK, "returned %s%s%s", pc_status_name(st),
                   st == GFP_OK ? "" : ": ", st == GFP_OK ? "" : pc_error_text());
    }
    if (s->query_extension) {
        void *out = (void *)&out;
        pc_error_clear();
        st = s->query_extension(d->plugin->ctx, "graft.plugin-check.no-such-extension", &out);
        mem_result(ctx, "query_extension", st == GFP_ERR_NOT_FOUND,
                   "an unknown extension gave %s%s", pc_status_name(st),
                   st == GFP_ERR_NOT_FOUND ? "" : " (expected NOT_FOUND)");
    }
    pc_free(d, a);
    if (s->buffer_wrap_host) check_wrap_host(ctx, host);
}

/* ------------------------------------------------------------ error paths */
static void err_result(pc_ctx *ctx, const char *what, bool ok, const char *fmt, ...)
    PC_PRINTF(4, 5);
static void err_result(pc_ctx *ctx, const char *what, bool ok, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pc_report_check(ctx->device_index, "errors", what, ok ? PC_PASS : PC_FAIL, "%s", msg);
}

/* The first combination of op the device declares, f32 first. */
static bool declared_combo(pc_ctx *ctx, const pc_op *op, pc_combo *out) {
    pc_combo combos[PC_MAX_COMBOS];
    int n = op->combos(op, pc_stored_dtypes(DEV(ctx)->props.dtypes), combos, PC_MAX_COMBOS);
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < n; i++) {
            if (pass == 0 && combos[i].in[0] != GFP_F32 && (combos[i].n_in || combos[i].out[0] != GFP_F32))
                continue;
            gfp_op_query q;
            memset(&q, 0, sizeof q);
            q.struct_size = sizeof q;
            q.op = op->id;
            q.layout = GFP_LAYOUT_CONTIGUOUS;
            q.n_inputs = combos[i].n_in;
            q.n_outputs = combos[i].n_out;
            memcpy(q.input_dtypes, combos[i].in, sizeof q.input_dtypes);
            memcpy(q.output_dtypes, combos[i].out, sizeof q.output_dtypes);
            uint32_t support = GFP_SUPPORT_NONE;
            if (pc_query(DEV(ctx), &q, &support) == GFP_OK && support != GFP_SUPPORT_NONE) {
                *out = combos[i];
                return true;
            }
        }
    return false;
}

/* Case c's tensors on the device, contiguous, with its generated inputs. */
typedef struct placed {
    pc_dtensor in[8], out[4];
    const gfp_tensor *pin[8], *pout[4];
    bool ok;
} placed;

static void place(pc_ctx *ctx, pc_case *c, uint64_t seed, placed *p) {
    memset(p, 0, sizeof *p);
    pc_array arrays[8];
    memset(arrays, 0, sizeof arrays);
    bool ok = true;
    for (uint32_t i = 0; i < c->n_in && ok; i++) {
        if (c->in[i].absent) continue;
        ok = pc_array_init(&arrays[i], c->in[i].dtype, c->in[i].rank, c->in[i].sizes);
        if (ok) pc_array_fill(&arrays[i], c->in[i].gen, c->in[i].lo, c->in[i].hi, pc_hash(seed, i));
    }
    if (ok && c->prepare) ok = c->prepare(c, arrays, ctx);
    for (uint32_t i = 0; i < c->n_in && ok; i++) {
        if (c->in[i].absent) continue;
        ok = pc_dtensor_make(DEV(ctx), &p->in[i], &arrays[i], 0, 0, NULL, PC_CONTIGUOUS, -1,
                             pc_hash(seed, 10 + i)) == GFP_OK;
        p->pin[i] = &p->in[i].t;
    }
    for (uint32_t o = 0; o < c->n_out && ok; o++) {
        const pc_arg *a = &c->out[o];
        ok = pc_dtensor_make(DEV(ctx), &p->out[o], NULL, a->dtype, a->rank, a->sizes, PC_CONTIGUOUS,
                             -1, pc_hash(seed, 20 + o)) == GFP_OK;
        p->pout[o] = &p->out[o].t;
    }
    for (int i = 0; i < 8; i++) pc_array_free(&arrays[i]);
    p->ok = ok;
}

static void unplace(pc_ctx *ctx, placed *p) {
    for (int i = 0; i < 8; i++) pc_dtensor_free(DEV(ctx), &p->in[i]);
    for (int o = 0; o < 4; o++) pc_dtensor_free(DEV(ctx), &p->out[o]);
}

/* A parameter struct that is missing, or whose struct_size is 0, must be
 * refused with INVALID before anything is read through it. */
static void bad_params(pc_ctx *ctx, const pc_op *op) {
    if (op->id == GFP_OP_MAX_POOL2D_BACKWARD) return; /* needs none: the indices say it all */
    pc_combo cb;
    pc_case c;
    if (!declared_combo(ctx, op, &cb) || !op->build(op, &cb, 0, true, &c) || !c.has_params) return;
    pc_progress("errors: %s with bad parameters", op->name);
    placed p;
    place(ctx, &c, pc_hash(pc_opt.seed, op->id ^ 0xbadu), &p);
    if (!p.ok) {
        err_result(ctx, "bad params", false, "%s: could not place the tensors: %s", op->name,
                   pc_error_text());
        unplace(ctx, &p);
        return;
    }
    /* Only for an op the device runs: with query_op NULL, every op counts as
     * declared and launch refuses what is not there. */
    gfp_status st = pc_launch(DEV(ctx), op->id, p.pin, c.n_in, p.pout, c.n_out, &c.params);
    if (st == GFP_OK) st = pc_sync(DEV(ctx));
    if (st == GFP_ERR_UNSUPPORTED) {
        unplace(ctx, &p);
        return;
    }
    gfp_status null_st = pc_launch(DEV(ctx), op->id, p.pin, c.n_in, p.pout, c.n_out, NULL);
    char null_msg[160];
    snprintf(null_msg, sizeof null_msg, "%s", pc_error_text());
    pc_params zero = c.params;
    zero.fill.struct_size = 0; /* every params struct starts with struct_size */
    gfp_status zero_st = pc_launch(DEV(ctx), op->id, p.pin, c.n_in, p.pout, c.n_out, &zero);
    char zero_msg[160];
    snprintf(zero_msg, sizeof zero_msg, "%s", pc_error_text());
    pc_sync(DEV(ctx));
    bool ok = null_st == GFP_ERR_INVALID && zero_st == GFP_ERR_INVALID;
    char what[64];
    snprintf(what, sizeof what, "bad params: %s", op->name);
    err_result(ctx, what, ok, "params NULL: %s%s%s%s; struct_size 0: %s%s%s%s", pc_status_name(null_st),
               null_st == GFP_ERR_INVALID && !null_msg[0] ? " (no message)" : "",
               null_st != GFP_ERR_INVALID ? " (expected INVALID) " : "",
               null_st != GFP_ERR_INVALID ? null_msg : "", pc_status_name(zero_st),
               zero_st == GFP_ERR_INVALID && !zero_msg[0] ? " (no message)" : "",
               zero_st != GFP_ERR_INVALID ? " (expected INVALID) " : "",
               zero_st != GFP_ERR_INVALID ? zero_msg : "");
    unplace(ctx, &p);
}

void pc_check_errors(pc_ctx *ctx) {
    pc_device *d = DEV(ctx);
    pc_plugin *pl = d->plugin;
    pc_progress("errors: impossible allocation");
    gfp_buffer b = NULL;
    gfp_status st = pc_alloc(d, (uint64_t)1 << 62, &b, NULL);
    err_result(ctx, "impossible allocation", st == GFP_ERR_OUT_OF_MEMORY,
               "buffer_alloc(2^62 bytes) returned %s%s%s", pc_status_name(st),
               st == GFP_ERR_OUT_OF_MEMORY ? (pc_error_text()[0] ? "" : " (no message attached)")
                                           : " (expected OUT_OF_MEMORY)",
               "");
    if (st == GFP_OK) pc_free(d, b);

    /* An op id this ABI does not define: UNSUPPORTED from launch, NONE from query_op. */
    gfp_op_query q;
    memset(&q, 0, sizeof q);
    q.struct_size = sizeof q;
    q.op = 9999;
    q.n_inputs = 1;
    q.n_outputs = 1;
    q.input_dtypes[0] = q.output_dtypes[0] = GFP_F32;
    uint32_t support = 0;
    if (pl->slots.query_op) {
        st = pc_query(d, &q, &support);
        err_result(ctx, "unknown op: query_op", st == GFP_OK && support == GFP_SUPPORT_NONE,
                   "query_op(op 9999) returned %s with support %u (expected OK and NONE)",
                   pc_status_name(st), (unsigned)support);
    }
    /* Malformed launches of an op the device runs: neg, add or copy. */
    static const uint32_t probes[3] = {GFP_OP_NEG, GFP_OP_ADD, GFP_OP_COPY};
    int32_t dt = d->props.dtypes & GFP_DTYPE_BIT(GFP_F32) ? GFP_F32 : GFP_I32;
    bool probed = false;
    for (int k = 0; k < 3 && !probed; k++) {
        uint32_t n_in = probes[k] == GFP_OP_ADD ? 2 : 1;
        pc_case c;
        pc_case_init(&c, n_in, 1);
        int64_t n8 = 8;
        for (uint32_t i = 0; i < n_in; i++) pc_arg_set(&c.in[i], dt, 1, &n8, PC_GEN_UNIFORM, -1, 1);
        pc_arg_set(&c.out[0], dt, 1, &n8, PC_GEN_ZEROS, 0, 0);
        placed p;
        place(ctx, &c, 1, &p);
        st = p.ok ? pc_launch(d, probes[k], p.pin, n_in, p.pout, 1, NULL) : GFP_ERR_OUT_OF_MEMORY;
        if (st == GFP_OK) st = pc_sync(d);
        if (k == 0 && p.ok) {
            /* An op id this ABI does not define. */
            gfp_status u = pc_launch(d, 9999, p.pin, 1, p.pout, 1, NULL);
            pc_sync(d);
            err_result(ctx, "unknown op: launch", u == GFP_ERR_UNSUPPORTED,
                       "launch(op 9999) returned %s%s", pc_status_name(u),
                       u == GFP_ERR_UNSUPPORTED ? "" : " (expected UNSUPPORTED: a newer core may "
                                                       "know ops this plugin does not)");
        }
        if (st == GFP_OK) {
            probed = true;
            const char *name = pc_op_name(probes[k]);
            /* A descriptor whose struct_size covers none of its fields. */
            gfp_tensor bad = p.in[0].t;
            bad.struct_size = 0;
            const gfp_tensor *pin[3] = {&bad, p.pin[1], NULL};
            st = pc_launch(d, probes[k], pin, n_in, p.pout, 1, NULL);
            pc_sync(d);
            err_result(ctx, "tensor struct_size 0", st == GFP_ERR_INVALID,
                       "%s with an input descriptor of struct_size 0 returned %s%s", name,
                       pc_status_name(st), st == GFP_ERR_INVALID ? "" : " (expected INVALID)");
            /* One input too many. */
            const gfp_tensor *more[3] = {p.pin[0], n_in > 1 ? p.pin[1] : p.pin[0], p.pin[0]};
            st = pc_launch(d, probes[k], more, n_in + 1, p.pout, 1, NULL);
            pc_sync(d);
            err_result(ctx, "wrong tensor count", st == GFP_ERR_INVALID,
                       "%s with %u inputs returned %s%s", name, (unsigned)(n_in + 1),
                       pc_status_name(st), st == GFP_ERR_INVALID ? "" : " (expected INVALID)");
        }
        unplace(ctx, &p);
    }

    uint32_t count = 0;
    pc_error_clear();
    pl->slots.device_count(pl->ctx, &count);
    gfp_device_props props;
    memset(&props, 0, sizeof props);
    props.struct_size = sizeof props;
    pc_error_clear();
    st = pl->slots.device_props(pl->ctx, count, &props);
    void *h = NULL;
    gfp_status st2 = st != GFP_OK ? pl->slots.device_open(pl->ctx, count, &h) : GFP_OK;
    err_result(ctx, "device index out of range", st != GFP_OK && st2 != GFP_OK,
               "device_props(%u) returned %s, device_open(%u) %s (device %u does not exist)",
               (unsigned)count, pc_status_name(st), (unsigned)count, pc_status_name(st2),
               (unsigned)count);

    size_t n;
    const pc_op *ops = pc_catalogue(&n);
    for (size_t i = 0; i < n; i++)
        if (pc_op_selected(ops[i].name)) bad_params(ctx, &ops[i]);
}

/* ------------------------------------------------------------ two threads */
typedef struct job {
    pc_ctx *ctx;
    uint32_t op;
    const pc_case *c;
    const pc_array *want; /* the single-threaded result */
    int iterations;
    char problem[256];
} job;

static bool run_once(pc_ctx *ctx, uint32_t op, const pc_case *c, pc_array *out, char *why,
                     size_t len) {
    pc_array in[8];
    memset(in, 0, sizeof in);
    bool ok = true;
    for (uint32_t i = 0; i < c->n_in && ok; i++) {
        ok = pc_array_init(&in[i], c->in[i].dtype, c->in[i].rank, c->in[i].sizes);
        if (ok) pc_array_fill(&in[i], c->in[i].gen, c->in[i].lo, c->in[i].hi, pc_hash(77, i));
    }
    ok = ok && pc_array_init(out, c->out[0].dtype, c->out[0].rank, c->out[0].sizes);
    gfp_status st = ok ? pc_run_simple(DEV(ctx), op, in, NULL, c->n_in, out, 1, NULL, why, len)
                       : GFP_ERR_OUT_OF_MEMORY;
    for (int i = 0; i < 8; i++) pc_array_free(&in[i]);
    if (!ok) snprintf(why, len, "the checker ran out of host memory");
    return st == GFP_OK;
}

static void *thread_main(void *arg) {
    job *j = arg;
    for (int it = 0; it < j->iterations && !j->problem[0]; it++) {
        pc_array out;
        char why[256];
        memset(&out, 0, sizeof out);
        if (!run_once(j->ctx, j->op, j->c, &out, why, sizeof why))
            snprintf(j->problem, sizeof j->problem, "%.100s, iteration %d: %.120s", j->c->label, it, why);
        else if (memcmp(out.data, j->want->data, (size_t)out.numel * pc_dtype_size(out.dtype)))
            snprintf(j->problem, sizeof j->problem,
                     "%s, iteration %d: the result differs from the single-threaded one", j->c->label,
                     it);
        pc_array_free(&out);
    }
    return NULL;
}

void pc_check_threads(pc_ctx *ctx) {
    pc_device *d = DEV(ctx);
    if (!(d->props.flags & GFP_DEVICE_FLAG_THREAD_SAFE)) {
        pc_report_check(ctx->device_index, "threads", "two threads", PC_SKIP,
                        "the device does not declare THREAD_SAFE: the core serialises its calls");
        return;
    }
    pc_combo cb;
    bool have_add = declared_combo(ctx, pc_op_by_id(GFP_OP_ADD), &cb) && cb.in[0] == GFP_F32;
    bool have_mm = declared_combo(ctx, pc_op_by_id(GFP_OP_MATMUL), &cb) && cb.in[0] == GFP_F32;
    if (!have_add && !have_mm) {
        pc_report_check(ctx->device_index, "threads", "two threads", PC_SKIP,
                        "neither add nor matmul is declared for f32");
        return;
    }
    pc_progress("two threads");
    /* Thread 0 adds, thread 1 multiplies matrices (either op when only one is there). */
    pc_case cases[2];
    uint32_t ops[2];
    for (int t = 0; t < 2; t++) {
        bool mm = (t == 1 && have_mm) || !have_add;
        ops[t] = mm ? GFP_OP_MATMUL : GFP_OP_ADD;
        pc_case_init(&cases[t], 2, 1);
        int64_t a[2] = {mm ? 48 : 256, mm ? 40 : 256}, b[2] = {mm ? 40 : 256, mm ? 32 : 256};
        int64_t y[2] = {a[0], b[1]};
        pc_arg_set(&cases[t].in[0], GFP_F32, 2, a, PC_GEN_UNIFORM, -1, 1);
        pc_arg_set(&cases[t].in[1], GFP_F32, 2, b, PC_GEN_UNIFORM, -1, 1);
        pc_arg_set(&cases[t].out[0], GFP_F32, 2, y, PC_GEN_ZEROS, 0, 0);
        pc_label(&cases[t], "%s", mm ? "matmul [48, 40] @ [40, 32]" : "add [256, 256]");
    }
    pc_array want[2];
    memset(want, 0, sizeof want);
    job jobs[2];
    char why[256];
    for (int t = 0; t < 2; t++) {
        if (!run_once(ctx, ops[t], &cases[t], &want[t], why, sizeof why)) {
            pc_report_check(ctx->device_index, "threads", "two threads", PC_FAIL,
                            "%s on one thread: %s", cases[t].label, why);
            pc_array_free(&want[0]);
            pc_array_free(&want[1]);
            return;
        }
        jobs[t] = (job){ctx, ops[t], &cases[t], &want[t], 40, ""};
    }
    pthread_t th[2];
    int started = 0;
    for (int t = 0; t < 2; t++)
        if (pthread_create(&th[t], NULL, thread_main, &jobs[t]) == 0) started++;
    for (int t = 0; t < started; t++) pthread_join(th[t], NULL);
    bool ok = started == 2 && !jobs[0].problem[0] && !jobs[1].problem[0];
    pc_report_check(ctx->device_index, "threads", "two threads", ok ? PC_PASS : PC_FAIL,
                    "%s", started < 2      ? "could not start two threads"
                          : jobs[0].problem[0] ? jobs[0].problem
                          : jobs[1].problem[0] ? jobs[1].problem
                                               : "40 iterations each of alloc, write, launch, read, "
                                                 "free on two threads at once; results identical "
                                                 "to the single-threaded ones");
    pc_array_free(&want[0]);
    pc_array_free(&want[1]);
}

/* ------------------------------------------------------------ graph slots */
/* ABI 1.3's graph slots, where present (all three or none): a run of two
 * launches (y = a + b, z = y * b on f32[64]) taken as a graph gives what
 * the launches give one by one, and again after new inputs are written
 * between two graph_launch calls. Without the slots: nothing to check. */
static void graph_desc(gfp_tensor *t, gfp_buffer b) {
    memset(t, 0, sizeof *t);
    t->struct_size = sizeof *t;
    t->dtype = GFP_F32;
    t->buffer = b;
    t->rank = 1;
    t->sizes[0] = 64;
    t->strides[0] = 1;
}

void pc_check_graphs(pc_ctx *ctx) {
    pc_device *d = DEV(ctx);
    const gfp_plugin *s = &d->plugin->slots;
    int n_slots = !!s->graph_create + !!s->graph_launch + !!s->graph_destroy;
    if (n_slots == 0) return;
    if (n_slots != 3) {
        pc_report_check(ctx->device_index, "graphs", "graph slots", PC_FAIL,
                        "%d of the three graph slots are set: graph_create, graph_launch and "
                        "graph_destroy come together (the core uses none of them otherwise)",
                        n_slots);
        return;
    }
    pc_combo cb;
    if (!declared_combo(ctx, pc_op_by_id(GFP_OP_ADD), &cb) || cb.in[0] != GFP_F32 ||
        !declared_combo(ctx, pc_op_by_id(GFP_OP_MUL), &cb) || cb.in[0] != GFP_F32) {
        pc_report_check(ctx->device_index, "graphs", "graph slots", PC_SKIP,
                        "add and mul are not both declared for f32");
        return;
    }
    pc_progress("graph slots");
    enum { N = 64 };
    gfp_buffer buf[4] = {NULL, NULL, NULL, NULL};
    float a[N], b[N], z[N];
    char bad[300] = "";
    for (int k = 0; k < 4 && !bad[0]; k++)
        if (pc_alloc(d, sizeof a, &buf[k], NULL) != GFP_OK)
            snprintf(bad, sizeof bad, "buffer_alloc failed: %s", pc_error_text());
    gfp_tensor ta, tb, ty, tz;
    graph_desc(&ta, buf[0]);
    graph_desc(&tb, buf[1]);
    graph_desc(&ty, buf[2]);
    graph_desc(&tz, buf[3]);
    const gfp_tensor *in0[2] = {&ta, &tb}, *out0[1] = {&ty}, *in1[2] = {&ty, &tb},
                     *out1[1] = {&tz};
    gfp_graph_node nodes[2] = {
        {.struct_size = sizeof nodes[0], .op = GFP_OP_ADD, .n_inputs = 2, .n_outputs = 1,
         .inputs = in0, .outputs = out0},
        {.struct_size = sizeof nodes[0], .op = GFP_OP_MUL, .n_inputs = 2, .n_outputs = 1,
         .inputs = in1, .outputs = out1}};
    void *g = NULL;
    if (!bad[0]) {
        pc_error_clear();
        gfp_status st = s->graph_create(d->handle, nodes, 2, &g);
        if (st == GFP_ERR_UNSUPPORTED) {
            pc_report_check(ctx->device_index, "graphs", "graph slots", PC_SKIP,
                            "graph_create declined add + mul (UNSUPPORTED): the core replays "
                            "launch by launch");
            g = NULL;
            goto done;
        }
        if (st != GFP_OK || !g)
            snprintf(bad, sizeof bad, "graph_create of add, mul returned %s%s: %s",
                     pc_status_name(st), st == GFP_OK ? " without a graph" : "",
                     pc_error_text());
    }
    for (int round = 0; round < 2 && !bad[0]; round++) {
        for (int i = 0; i < N; i++) {
            a[i] = (float)(i * 0.25 - 3 + round);
            b[i] = (float)(1.5 - i * 0.125 * (round + 1));
        }
        gfp_status st = pc_write(d, buf[0], 0, a, sizeof a);
        if (st == GFP_OK) st = pc_write(d, buf[1], 0, b, sizeof b);
        if (st == GFP_OK) {
            pc_error_clear();
            st = s->graph_launch(d->handle, g);
        }
        if (st == GFP_OK) st = pc_sync(d);
        if (st == GFP_OK) st = pc_read(d, buf[3], 0, z, sizeof z);
        if (st != GFP_OK) {
            snprintf(bad, sizeof bad, "round %d: graph_launch or a transfer returned %s: %s",
                     round, pc_status_name(st), pc_error_text());
            break;
        }
        for (int i = 0; i < N && !bad[0]; i++) {
            float want = (a[i] + b[i]) * b[i]; /* each op rounds once, as the launches */
            if (memcmp(&want, &z[i], sizeof want))
                snprintf(bad, sizeof bad, "round %d: element %d is %.9g, the launches give "
                         "%.9g", round, i, (double)z[i], (double)want);
        }
    }
done:
    if (g) s->graph_destroy(d->handle, g);
    for (int k = 0; k < 4; k++)
        if (buf[k]) pc_free(d, buf[k]);
    if (!g && !bad[0]) return; /* declined: reported above */
    pc_report_check(ctx->device_index, "graphs", "graph slots", bad[0] ? PC_FAIL : PC_PASS, "%s",
                    bad[0] ? bad
                           : "add then mul on f32[64] as one graph: the launches' results, "
                             "twice, with new inputs written between the launches");
}

/* ------------------------------------------------------------ leak probe */
static bool heap_in_use(size_t *bytes) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
    struct mallinfo2 mi = mallinfo2();
    *bytes = mi.uordblks + mi.hblkhd;
    return *bytes > 0;
#else
    *bytes = 0;
    return false;
#endif
}

/* One cycle: a buffer round trip and a small launch, everything freed. */
static void leak_cycle(pc_ctx *ctx, const pc_case *c) {
    pc_device *d = DEV(ctx);
    gfp_buffer b = NULL;
    static unsigned char block[4096];
    if (pc_alloc(d, sizeof block, &b, NULL) == GFP_OK) {
        pc_write(d, b, 0, block, sizeof block);
        pc_read(d, b, 0, block, sizeof block);
        pc_free(d, b);
    }
    if (c) {
        pc_array out;
        char why[256];
        memset(&out, 0, sizeof out);
        run_once(ctx, GFP_OP_ADD, c, &out, why, sizeof why);
        pc_array_free(&out);
    }
}

void pc_check_leaks(pc_ctx *ctx) {
    size_t before;
    if (!heap_in_use(&before)) {
        pc_report_check(ctx->device_index, "accounting", "heap probe", PC_SKIP,
                        "no heap statistics from this C library (mallinfo2): the shutdown check "
                        "still applies");
        return;
    }
    pc_progress("heap probe");
    pc_combo cb;
    pc_case c, *cp = NULL;
    if (declared_combo(ctx, pc_op_by_id(GFP_OP_ADD), &cb) && cb.in[0] == GFP_F32) {
        int64_t s[2] = {16, 16};
        pc_case_init(&c, 2, 1);
        pc_arg_set(&c.in[0], GFP_F32, 2, s, PC_GEN_UNIFORM, -1, 1);
        pc_arg_set(&c.in[1], GFP_F32, 2, s, PC_GEN_UNIFORM, -1, 1);
        pc_arg_set(&c.out[0], GFP_F32, 2, s, PC_GEN_ZEROS, 0, 0);
        pc_label(&c, "add");
        cp = &c;
    }
    enum { WARMUP = 32, ROUND = 64, ROUNDS = 3, MIN_PER_CYCLE = 16 };
    for (int i = 0; i < WARMUP; i++) leak_cycle(ctx, cp);
    long grew[ROUNDS];
    bool leak = true;
    size_t prev;
    heap_in_use(&prev);
    for (int r = 0; r < ROUNDS; r++) {
        for (int i = 0; i < ROUND; i++) leak_cycle(ctx, cp);
        size_t now;
        heap_in_use(&now);
        grew[r] = (long)now - (long)prev;
        prev = now;
        if (grew[r] < ROUND * MIN_PER_CYCLE) leak = false;
    }
    pc_report_check(ctx->device_index, "accounting", "heap probe", leak ? PC_FAIL : PC_PASS,
                    "host heap %s by %ld, %ld and %ld bytes over %d rounds of %d cycles (allocate, "
                    "write, read and free a buffer%s)%s",
                    leak ? "grew" : "changed", grew[0], grew[1], grew[2], ROUNDS, ROUND,
                    cp ? ", launch add on fresh buffers" : "",
                    leak ? ": memory is kept per buffer or per launch (a leak)" : "");
}
