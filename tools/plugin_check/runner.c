/* SPDX-License-Identifier: BSD-3-Clause */
/* runner.c — runs the op catalogue on one device against the oracle.
 *
 * For every op and every dtype combination the device declares (query_op, or
 * its default), each case of the op is generated once with seeded random
 * inputs and run on the oracle with contiguous tensors. The plugin then runs
 * the same case in every layout it may meet: contiguous, transposed, sliced
 * with a step, broadcast (stride-0 inputs) and, for elementwise ops, in place.
 * Every tensor sits in a guarded buffer (tensor.c). One result is reported per
 * (op, dtypes, layout), carrying the worst case. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pc.h"

/* ------------------------------------------------------------ helpers for builders */
void pc_case_init(pc_case *c, uint32_t n_in, uint32_t n_out) {
    memset(c, 0, sizeof *c);
    c->n_in = n_in;
    c->n_out = n_out;
}

void pc_arg_set(pc_arg *a, int32_t dtype, int rank, const int64_t *sizes, pc_gen gen, double lo,
                double hi) {
    memset(a, 0, sizeof *a);
    a->dtype = dtype;
    a->absent = dtype < 0;
    a->rank = rank;
    for (int d = 0; d < rank; d++) a->sizes[d] = sizes[d];
    a->gen = gen;
    a->lo = lo;
    a->hi = hi;
    a->tol = PC_TOL_EXACT;
}

void pc_label(pc_case *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->label, sizeof c->label, fmt, ap);
    va_end(ap);
}

/* The real dtypes go through pc_combos_same; complex ones (c64, c128)
 * through pc_combos_complex, for the ops the reference computes on them
 * (elementwise arithmetic, sums, matmul): each combos function adds those. */
uint32_t pc_stored_dtypes(uint32_t dtypes) { return dtypes & ((1u << GFP_DTYPE_COUNT) - 1u); }

int pc_combos_same(uint32_t dtypes, uint32_t n_in, uint32_t n_out, pc_combo *out, int max) {
    int n = 0;
    for (int32_t d = 0; d < GFP_DTYPE_COUNT && n < max; d++) {
        if (!(dtypes & GFP_DTYPE_BIT(d)) || pc_is_complex(d)) continue;
        pc_combo *c = &out[n++];
        memset(c, 0, sizeof *c);
        c->n_in = n_in;
        c->n_out = n_out;
        for (uint32_t i = 0; i < n_in; i++) c->in[i] = d;
        for (uint32_t i = 0; i < n_out; i++) c->out[i] = d;
    }
    return n;
}

int pc_combos_complex(uint32_t dtypes, uint32_t n_in, uint32_t n_out, int32_t out_dtype,
                      pc_combo *out, int max) {
    static const int32_t cx[2] = {GFP_C64, GFP_C128};
    int n = 0;
    for (int k = 0; k < 2 && n < max; k++) {
        int32_t d = cx[k];
        if (!(dtypes & GFP_DTYPE_BIT(d))) continue;
        pc_combo *c = &out[n++];
        memset(c, 0, sizeof *c);
        c->n_in = n_in;
        c->n_out = n_out;
        for (uint32_t i = 0; i < n_in; i++) c->in[i] = d;
        for (uint32_t i = 0; i < n_out; i++)
            c->out[i] = out_dtype == -1 ? d : out_dtype == PC_PART_DTYPE ? pc_part_dtype(d)
                                                                         : out_dtype;
    }
    return n;
}

static pc_op catalogue[GFP_OP_ROW_COUNT];
static size_t catalogue_n;
static const char *missing[GFP_OP_ROW_COUNT];
static size_t missing_n;
static pthread_once_t catalogue_once = PTHREAD_ONCE_INIT;

static void catalogue_init(void) {
    for (int i = 0; i < GFP_OP_ROW_COUNT; i++) {
        const gfp_op_info *row = &gfp_op_table[i];
        pc_op op = {row->op, row->name, 0, NULL, NULL};
        if (pc_cases_elementwise(row, &op) || pc_cases_reduce(row, &op) || pc_cases_nn(row, &op) ||
            pc_cases_optim(row, &op) || pc_cases_fft(row, &op) || pc_cases_rnn(row, &op))
            catalogue[catalogue_n++] = op;
        else
            missing[missing_n++] = row->name;
    }
}

const pc_op *pc_catalogue(size_t *n) {
    pthread_once(&catalogue_once, catalogue_init);
    *n = catalogue_n;
    return catalogue;
}

size_t pc_catalogue_missing(const char **names, size_t max) {
    pthread_once(&catalogue_once, catalogue_init);
    for (size_t i = 0; i < missing_n && i < max; i++) names[i] = missing[i];
    return missing_n;
}

const pc_op *pc_op_by_id(uint32_t id) {
    size_t n;
    const pc_op *ops = pc_catalogue(&n);
    for (size_t i = 0; i < n; i++)
        if (ops[i].id == id) return &ops[i];
    return NULL;
}

const char *pc_op_name(uint32_t id) {
    static _Thread_local char buf[32];
    const pc_op *op = pc_op_by_id(id);
    if (op) return op->name;
    snprintf(buf, sizeof buf, "op %u", (unsigned)id);
    return buf;
}

static void dtypes_text(const pc_combo *c, char *buf, size_t len) {
    size_t n = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; i < c->n_in && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? "," : "", pc_dtype_name(c->in[i]));
    if (n < len) n += (size_t)snprintf(buf + n, len - n, "->");
    for (uint32_t i = 0; i < c->n_out && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? "," : "", pc_dtype_name(c->out[i]));
}

/* The oracle computes f16 and bf16 in f32. */
static int32_t oracle_dtype(int32_t d) { return d == GFP_F16 || d == GFP_BF16 ? GFP_F32 : d; }

/* ------------------------------------------------------------ one launch */
typedef struct run_result {
    gfp_status st;
    char message[512]; /* the plugin's message for a failed call */
    bool guards_ok;
    char guard[512]; /* what was written where it must not be */
} run_result;

/* Runs case c on d in layout L. in: logical inputs (inout ones receive their
 * new contents); out: outputs, initialised by the caller (dtype and shape;
 * initial contents for inout ones), filled on success. */
static void run_on(pc_device *d, uint32_t op, const pc_case *c, pc_array *in, pc_array *out,
                   pc_layout L, const int *bdim, uint64_t seed, run_result *r) {
    pc_dtensor tin[8], tout[4];
    const gfp_tensor *pin[8] = {0}, *pout[4] = {0};
    memset(tin, 0, sizeof tin);
    memset(tout, 0, sizeof tout);
    memset(r, 0, sizeof *r);
    r->guards_ok = true;
    bool alias = L == PC_INPLACE;
    pc_layout lin = L == PC_TRANSPOSED || L == PC_SLICED ? L : PC_CONTIGUOUS;
    pc_layout lout = lin;
    gfp_status st = GFP_OK;
    const char *stage = "buffer_alloc/buffer_write";
    for (uint32_t i = 0; i < c->n_in && st == GFP_OK; i++) {
        if (c->in[i].absent) continue;
        pc_layout li = L == PC_BROADCAST && bdim && bdim[i] >= 0 ? PC_BROADCAST : lin;
        st = pc_dtensor_make(d, &tin[i], &in[i], 0, 0, NULL, li, bdim ? bdim[i] : -1,
                             pc_hash(seed, 100 + i));
        pin[i] = &tin[i].t;
    }
    for (uint32_t o = 0; o < c->n_out && st == GFP_OK; o++) {
        if (alias && o == 0) {
            pout[0] = &tin[0].t;
            continue;
        }
        const pc_arg *a = &c->out[o];
        st = pc_dtensor_make(d, &tout[o], a->inout ? &out[o] : NULL, a->dtype, a->rank, a->sizes,
                             lout, -1, pc_hash(seed, 200 + o));
        pout[o] = &tout[o].t;
    }
    if (st == GFP_OK) {
        stage = "launch";
        st = pc_launch(d, op, pin, c->n_in, pout, c->n_out, c->has_params ? &c->params : NULL);
    }
    if (st == GFP_OK) {
        stage = "synchronize";
        st = pc_sync(d);
    }
    if (st != GFP_OK) {
        r->st = st;
        snprintf(r->message, sizeof r->message, "%s returned %s: %s", stage, pc_status_name(st),
                 pc_error_text()[0] ? pc_error_text() : "(no message)");
        goto done;
    }
    char problem[400];
    size_t used = 0;
    for (uint32_t o = 0; o < c->n_out; o++) {
        const pc_dtensor *t = alias && o == 0 ? &tin[0] : &tout[o];
        pc_array_free(&out[o]);
        if (!pc_dtensor_read(d, t, &out[o], false, problem, sizeof problem, &st)) {
            if (st != GFP_OK) {
                r->st = st;
                snprintf(r->message, sizeof r->message, "output %u: %s", (unsigned)o, problem);
                goto done;
            }
            r->guards_ok = false;
            used += (size_t)snprintf(r->guard + used, used < sizeof r->guard ? sizeof r->guard - used : 0,
                                     "%soutput %u: %s", used ? "; " : "", (unsigned)o, problem);
        }
    }
    for (uint32_t i = 0; i < c->n_in; i++) {
        if (c->in[i].absent || (alias && i == 0)) continue;
        bool inout = c->in[i].inout;
        pc_array after;
        memset(&after, 0, sizeof after);
        bool ok = pc_dtensor_read(d, &tin[i], inout ? &after : NULL, !inout, problem,
                                  sizeof problem, &st);
        if (inout && st == GFP_OK) {
            pc_array_free(&in[i]);
            in[i] = after;
        } else if (inout) {
            pc_array_free(&after);
        }
        if (st != GFP_OK) {
            r->st = st;
            snprintf(r->message, sizeof r->message, "input %u: %s", (unsigned)i, problem);
            goto done;
        }
        if (!ok) {
            r->guards_ok = false;
            used += (size_t)snprintf(r->guard + used, used < sizeof r->guard ? sizeof r->guard - used : 0,
                                     "%sinput %u %s: %s", used ? "; " : "", (unsigned)i,
                                     inout ? "(updated in place)" : "(read-only)", problem);
        }
    }
done:
    for (uint32_t i = 0; i < 8; i++) pc_dtensor_free(d, &tin[i]);
    for (uint32_t o = 0; o < 4; o++) pc_dtensor_free(d, &tout[o]);
}

gfp_status pc_run_simple(pc_device *d, uint32_t op, const pc_array *in, const bool *absent,
                         uint32_t n_in, pc_array *out, uint32_t n_out, const void *params,
                         char *why, size_t why_len) {
    pc_case c;
    pc_case_init(&c, n_in, n_out);
    pc_array ins[8];
    memset(ins, 0, sizeof ins);
    for (uint32_t i = 0; i < n_in; i++) {
        c.in[i].absent = absent && absent[i];
        if (!c.in[i].absent) ins[i] = in[i]; /* read only: not inout */
    }
    for (uint32_t o = 0; o < n_out; o++) {
        c.out[o].dtype = out[o].dtype;
        c.out[o].rank = out[o].rank;
        memcpy(c.out[o].sizes, out[o].sizes, sizeof out[o].sizes);
    }
    if (params) {
        uint32_t size;
        memcpy(&size, params, sizeof size);
        memcpy(&c.params, params, size < sizeof c.params ? size : sizeof c.params);
        c.has_params = true;
    }
    run_result r;
    run_on(d, op, &c, ins, out, PC_CONTIGUOUS, NULL, 0x0d0e, &r);
    if (r.st == GFP_OK && !r.guards_ok) {
        snprintf(why, why_len, "wrote outside its tensors: %s", r.guard);
        return GFP_ERR_INTERNAL;
    }
    if (r.st != GFP_OK) snprintf(why, why_len, "%s", r.message);
    return r.st;
}

/* ------------------------------------------------------------ results per layout */
typedef struct agg {
    int cases, failed, refused, oracle_refused;
    char oracle_message[512];
    double worst_ratio; /* error / threshold of the worst passing or failing case */
    const char *metric;
    double error, threshold;
    char shape[160];
    char message[512];
    bool fail_recorded;
    bool contiguous_only;
} agg;

static void agg_fail(agg *a, const char *label, const char *metric, double error,
                     double threshold, const char *fmt, ...) PC_PRINTF(6, 7);
static void agg_fail(agg *a, const char *label, const char *metric, double error,
                     double threshold, const char *fmt, ...) {
    a->failed++;
    double ratio = threshold > 0 ? error / threshold : INFINITY;
    if (a->fail_recorded && !(ratio > a->worst_ratio)) return;
    a->fail_recorded = true;
    a->worst_ratio = ratio;
    a->metric = metric;
    a->error = error;
    a->threshold = threshold;
    snprintf(a->shape, sizeof a->shape, "%s", label);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->message, sizeof a->message, fmt, ap);
    va_end(ap);
}

static void agg_pass(agg *a, const char *label, const pc_cmp *worst) {
    if (a->fail_recorded || !worst) return;
    double ratio = worst->threshold > 0 ? worst->error / worst->threshold : worst->error;
    if (a->metric && !(ratio > a->worst_ratio)) return;
    a->worst_ratio = ratio;
    a->metric = worst->metric;
    a->error = worst->error;
    a->threshold = worst->threshold;
    snprintf(a->shape, sizeof a->shape, "%s", label);
}

static void emit(pc_ctx *ctx, const pc_op *op, const char *dtypes, pc_layout L, const agg *a) {
    pc_result r;
    memset(&r, 0, sizeof r);
    r.device = ctx->device_index;
    r.suite = "ops";
    snprintf(r.what, sizeof r.what, "%s", op->name);
    snprintf(r.dtypes, sizeof r.dtypes, "%s", dtypes);
    snprintf(r.layout, sizeof r.layout, "%s", pc_layout_name(L));
    r.cases = a->cases;
    r.metric = a->metric;
    r.error = a->error;
    r.threshold = a->threshold;
    snprintf(r.shape, sizeof r.shape, "%s", a->shape);
    if (a->failed) {
        r.status = PC_FAIL;
        snprintf(r.message, sizeof r.message, "%s", a->message);
    } else if (a->contiguous_only) {
        r.status = PC_UNSUPPORTED;
        r.metric = NULL;
        snprintf(r.message, sizeof r.message,
                 "query_op: contiguous tensors only (the core copies strided ones first)");
    } else if (a->cases == 0 && a->oracle_refused) {
        r.status = PC_SKIP;
        r.metric = NULL;
        snprintf(r.message, sizeof r.message, "the reference cannot check it: %s",
                 a->oracle_message);
    } else if (a->cases == 0 && a->refused) {
        r.status = PC_UNSUPPORTED;
        r.metric = NULL;
        snprintf(r.message, sizeof r.message, "%s, refused by launch: %s",
                 ctx->dev->plugin->slots.query_op ? "declared by query_op"
                                                  : "a stored dtype (query_op is NULL)",
                 a->message);
    } else if (a->cases == 0) {
        return; /* no case applies to this layout */
    } else {
        r.status = PC_PASS;
        if (a->refused)
            snprintf(r.message, sizeof r.message, "%d case(s) refused at launch: %s", a->refused,
                     a->message);
    }
    pc_report_add(&r);
}

/* ------------------------------------------------------------ one case, every layout */
static bool layout_applies(const pc_op *op, const pc_combo *cb, const pc_case *c, pc_layout L) {
    bool any_rank2 = false, any_elems = false, any_bcast = false;
    for (uint32_t i = 0; i < c->n_in; i++) {
        const pc_arg *a = &c->in[i];
        if (a->absent) continue;
        int64_t n = 1;
        for (int d = 0; d < a->rank; d++) {
            n *= a->sizes[d];
            if (a->sizes[d] > 1 && !a->no_broadcast && !a->inout) any_bcast = true;
        }
        any_rank2 |= a->rank >= 2;
        any_elems |= n > 0;
    }
    for (uint32_t o = 0; o < c->n_out; o++) any_rank2 |= c->out[o].rank >= 2;
    switch (L) {
    case PC_CONTIGUOUS: return true;
    case PC_TRANSPOSED: return !c->large && !c->contiguous_only && any_rank2;
    case PC_SLICED: return !c->large && !c->contiguous_only;
    case PC_BROADCAST: return !c->large && !c->contiguous_only && any_bcast && any_elems;
    case PC_INPLACE:
        return (op->flags & PC_OP_ELEMENTWISE) && !c->large && c->n_in >= 1 && !c->in[0].absent &&
               !c->in[0].inout && cb->in[0] == cb->out[0];
    default: return false;
    }
}

/* The dim each input broadcasts along: alternately its first and its last
 * dim of size > 1; -1 for none. */
static void choose_bdims(const pc_case *c, int *bdim) {
    int k = 0;
    for (uint32_t i = 0; i < c->n_in; i++) {
        const pc_arg *a = &c->in[i];
        bdim[i] = -1;
        if (a->absent || a->no_broadcast || a->inout) continue;
        if (k++ % 2 == 0) {
            for (int d = 0; d < a->rank && bdim[i] < 0; d++)
                if (a->sizes[d] > 1) bdim[i] = d;
        } else {
            for (int d = a->rank - 1; d >= 0 && bdim[i] < 0; d--)
                if (a->sizes[d] > 1) bdim[i] = d;
        }
    }
}

/* --dump: the values of a failing case (the first 256 of each array). */
static void dump(const char *what, uint32_t i, const pc_array *a) {
    if (pc_is_complex(a->dtype)) { /* the parts, re and im in turn */
        pc_array parts = pc_array_parts(a);
        dump(what, i, &parts);
        return;
    }
    char shape[64];
    printf("    %s %u %s %s:", what, (unsigned)i, pc_dtype_name(a->dtype),
           pc_shape_text(shape, sizeof shape, a->rank, a->sizes));
    for (int64_t k = 0; k < a->numel && k < 256; k++) {
        if (pc_is_float(a->dtype))
            printf(" %.9g", pc_load(a->data, a->dtype, k));
        else
            printf(" %lld", (long long)pc_load_i64(a->data, a->dtype, k));
    }
    printf("%s\n", a->numel > 256 ? " ..." : "");
}

static void free_arrays(pc_array *a, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) pc_array_free(&a[i]);
}

/* Runs the oracle on (a copy of) in; expected outputs and the inout inputs'
 * new contents come back in exp_out / exp_in. */
static gfp_status oracle_run(pc_ctx *ctx, const pc_op *op, const pc_case *c, const pc_array *in,
                             const pc_array *out_init, pc_array *exp_in, pc_array *exp_out,
                             char *why, size_t why_len) {
    pc_case oc = *c;
    gfp_status st = GFP_OK;
    memset(exp_in, 0, sizeof(pc_array) * 8);
    memset(exp_out, 0, sizeof(pc_array) * 4);
    for (uint32_t i = 0; i < c->n_in && st == GFP_OK; i++) {
        if (c->in[i].absent) continue;
        oc.in[i].dtype = oracle_dtype(c->in[i].dtype);
        if (!pc_array_convert(&exp_in[i], &in[i], oc.in[i].dtype)) st = GFP_ERR_OUT_OF_MEMORY;
    }
    for (uint32_t o = 0; o < c->n_out && st == GFP_OK; o++) {
        oc.out[o].dtype = oracle_dtype(c->out[o].dtype);
        if (!pc_array_convert(&exp_out[o], &out_init[o], oc.out[o].dtype))
            st = GFP_ERR_OUT_OF_MEMORY;
    }
    if (st != GFP_OK) {
        snprintf(why, why_len, "the checker ran out of host memory");
        return st;
    }
    run_result r;
    run_on(ctx->oracle, op->id, &oc, exp_in, exp_out, PC_CONTIGUOUS, NULL, 0x0a11, &r);
    if (r.st != GFP_OK) {
        snprintf(why, why_len, "%s", r.message);
        return r.st;
    }
    if (!r.guards_ok) {
        snprintf(why, why_len, "the oracle wrote outside its tensors: %.400s", r.guard);
        return GFP_ERR_INTERNAL;
    }
    return GFP_OK;
}

static uint64_t case_seed(const pc_op *op, int combo, int k) {
    return pc_hash(pc_hash(pc_hash(pc_opt.seed, op->id), (uint64_t)combo), (uint64_t)k);
}

/* Everything about one (op, combo): every case in every layout. */
static void run_combo(pc_ctx *ctx, const pc_op *op, const pc_combo *cb, int combo_index,
                      bool strided_ok, agg *aggs) {
    pc_case c;
    for (int k = 0; op->build(op, cb, k, pc_opt.quick, &c); k++) {
        bool skip = false, any_out = false;
        for (uint32_t i = 0; i < c.n_in; i++)
            if (!c.in[i].absent && (uint32_t)c.in[i].rank > ctx->dev->props.max_rank) skip = true;
        for (uint32_t o = 0; o < c.n_out; o++) {
            int64_t n = 1;
            for (int d = 0; d < c.out[o].rank; d++) n *= c.out[o].sizes[d];
            if (n > 0) any_out = true;
            if ((uint32_t)c.out[o].rank > ctx->dev->props.max_rank) skip = true;
        }
        if (skip || !any_out) continue; /* the core never launches these */

        uint64_t seed = case_seed(op, combo_index, k);
        pc_array in[8], out_init[4], exp_in[8], exp_out[4];
        memset(in, 0, sizeof in);
        memset(out_init, 0, sizeof out_init);
        bool ok = true;
        for (uint32_t i = 0; i < c.n_in && ok; i++) {
            const pc_arg *a = &c.in[i];
            if (a->absent) continue;
            ok = pc_array_init(&in[i], a->dtype, a->rank, a->sizes);
            if (ok) pc_array_fill(&in[i], a->gen, a->lo, a->hi, pc_hash(seed, i));
        }
        for (uint32_t o = 0; o < c.n_out && ok; o++) {
            const pc_arg *a = &c.out[o];
            ok = pc_array_init(&out_init[o], a->dtype, a->rank, a->sizes);
            if (ok && a->inout) pc_array_fill(&out_init[o], a->gen, a->lo, a->hi, pc_hash(seed, 50 + o));
        }
        if (!ok) {
            agg_fail(&aggs[PC_CONTIGUOUS], c.label, NULL, 0, 0, "the checker ran out of host memory");
            free_arrays(in, 8);
            free_arrays(out_init, 4);
            continue;
        }
        if (c.prepare && !c.prepare(&c, in, ctx)) {
            free_arrays(in, 8);
            free_arrays(out_init, 4);
            continue;
        }
        pc_progress("%s %s %s", op->name, pc_dtype_name(cb->out[0]), c.label);
        char why[512];
        gfp_status st = oracle_run(ctx, op, &c, in, out_init, exp_in, exp_out, why, sizeof why);
        if (st != GFP_OK) {
            /* The oracle refusing a case the plugin declared is no fault of the plugin. */
            agg *a = &aggs[PC_CONTIGUOUS];
            if (st == GFP_ERR_UNSUPPORTED) {
                if (!a->oracle_refused++)
                    snprintf(a->oracle_message, sizeof a->oracle_message, "%s", why);
            } else {
                agg_fail(a, c.label, NULL, 0, 0, "the oracle failed (a checker bug): %s", why);
            }
            free_arrays(in, 8);
            free_arrays(out_init, 4);
            free_arrays(exp_in, 8);
            free_arrays(exp_out, 4);
            continue;
        }

        for (int L = 0; L < PC_LAYOUT_COUNT; L++) {
            agg *a = &aggs[L];
            if (!layout_applies(op, cb, &c, (pc_layout)L)) continue;
            bool needs_strides = L == PC_TRANSPOSED || L == PC_SLICED || L == PC_BROADCAST;
            if (needs_strides && !strided_ok) {
                a->contiguous_only = true;
                continue;
            }
            int bdim[8];
            for (int i = 0; i < 8; i++) bdim[i] = -1;
            pc_array pin[8], pout[4], b_exp_in[8], b_exp_out[4];
            memset(pin, 0, sizeof pin);
            memset(pout, 0, sizeof pout);
            const pc_array *want_in = exp_in, *want_out = exp_out;
            bool have_b = false;
            ok = true;
            for (uint32_t i = 0; i < c.n_in && ok; i++)
                if (!c.in[i].absent) ok = pc_array_convert(&pin[i], &in[i], in[i].dtype);
            for (uint32_t o = 0; o < c.n_out && ok; o++)
                ok = pc_array_convert(&pout[o], &out_init[o], out_init[o].dtype);
            if (ok && L == PC_BROADCAST) {
                /* Inputs equal along their broadcast dims: the oracle runs again. */
                choose_bdims(&c, bdim);
                for (uint32_t i = 0; i < c.n_in; i++)
                    if (bdim[i] >= 0) pc_array_collapse(&pin[i], bdim[i]);
                st = oracle_run(ctx, op, &c, pin, out_init, b_exp_in, b_exp_out, why, sizeof why);
                have_b = true;
                if (st != GFP_OK) {
                    agg_fail(a, c.label, NULL, 0, 0, "the oracle failed (a checker bug): %s", why);
                    ok = false;
                }
                want_in = b_exp_in;
                want_out = b_exp_out;
            }
            if (ok) {
                run_result r;
                pc_progress("%s %s %s %s", op->name, pc_dtype_name(cb->out[0]), c.label,
                            pc_layout_name((pc_layout)L));
                run_on(ctx->dev, op->id, &c, pin, pout, (pc_layout)L, bdim, pc_hash(seed, 7 + L), &r);
                if (r.st == GFP_ERR_UNSUPPORTED) {
                    if (!a->refused++) snprintf(a->message, sizeof a->message, "%s", r.message);
                } else if (r.st != GFP_OK) {
                    a->cases++;
                    agg_fail(a, c.label, NULL, 0, 0, "%s", r.message);
                } else if (!r.guards_ok) {
                    a->cases++;
                    agg_fail(a, c.label, NULL, 0, 0, "out-of-bounds write: %s", r.guard);
                } else {
                    a->cases++;
                    pc_cmp worst, cmp;
                    memset(&worst, 0, sizeof worst);
                    bool have_worst = false, failed = false;
                    /* Outputs, then the inputs updated in place. */
                    for (uint32_t j = 0; j < c.n_out + c.n_in && !failed; j++) {
                        const pc_arg *arg = j < c.n_out ? &c.out[j] : &c.in[j - c.n_out];
                        if (j >= c.n_out && (!arg->inout || arg->absent)) continue;
                        const pc_array *got = j < c.n_out ? &pout[j] : &pin[j - c.n_out];
                        const pc_array *want = j < c.n_out ? &want_out[j] : &want_in[j - c.n_out];
                        pc_compare(got, want, arg->tol, &cmp);
                        if (!cmp.ok) {
                            failed = true;
                            if (pc_opt.dump && a->failed == 0) {
                                printf("  dump of %s %s %s:\n", op->name, pc_layout_name((pc_layout)L),
                                       c.label);
                                for (uint32_t i = 0; i < c.n_in; i++)
                                    if (!c.in[i].absent) dump("input", i, &in[i]);
                                dump("got", j, got);
                                dump("expected", j, want);
                            }
                            agg_fail(a, c.label, cmp.metric, cmp.error, cmp.threshold, "%s %u: %s",
                                     j < c.n_out ? "output" : "input (updated in place)",
                                     j < c.n_out ? j : j - c.n_out, cmp.detail);
                        } else if (!have_worst ||
                                   cmp.error / (cmp.threshold > 0 ? cmp.threshold : 1) >
                                       worst.error / (worst.threshold > 0 ? worst.threshold : 1)) {
                            worst = cmp;
                            have_worst = true;
                        }
                    }
                    if (!failed) agg_pass(a, c.label, have_worst ? &worst : NULL);
                }
            }
            free_arrays(pin, 8);
            free_arrays(pout, 4);
            if (have_b) {
                free_arrays(b_exp_in, 8);
                free_arrays(b_exp_out, 4);
            }
        }
        free_arrays(in, 8);
        free_arrays(out_init, 4);
        free_arrays(exp_in, 8);
        free_arrays(exp_out, 4);
    }
}

static void query_text(const pc_combo *cb, gfp_op_query *q, uint32_t op, uint32_t layout,
                       bool for_oracle) {
    memset(q, 0, sizeof *q);
    q->struct_size = sizeof *q;
    q->op = op;
    q->layout = layout;
    q->n_inputs = cb->n_in;
    q->n_outputs = cb->n_out;
    for (uint32_t i = 0; i < cb->n_in; i++)
        q->input_dtypes[i] = for_oracle ? oracle_dtype(cb->in[i]) : cb->in[i];
    for (uint32_t i = 0; i < cb->n_out; i++)
        q->output_dtypes[i] = for_oracle ? oracle_dtype(cb->out[i]) : cb->out[i];
}

static void run_op(pc_ctx *ctx, const pc_op *op) {
    pc_combo combos[PC_MAX_COMBOS];
    int n = op->combos(op, pc_stored_dtypes(ctx->dev->props.dtypes), combos, PC_MAX_COMBOS);
    for (int ci = 0; ci < n; ci++) {
        const pc_combo *cb = &combos[ci];
        char dt[64];
        dtypes_text(cb, dt, sizeof dt);
        gfp_op_query q;
        uint32_t support = GFP_SUPPORT_NONE, strided = GFP_SUPPORT_NONE;
        query_text(cb, &q, op->id, GFP_LAYOUT_CONTIGUOUS, false);
        gfp_status st = pc_query(ctx->dev, &q, &support);
        if (st == GFP_OK && support != GFP_SUPPORT_NONE) {
            query_text(cb, &q, op->id, GFP_LAYOUT_STRIDED, false);
            st = pc_query(ctx->dev, &q, &strided);
        }
        pc_result r;
        memset(&r, 0, sizeof r);
        r.device = ctx->device_index;
        r.suite = "ops";
        snprintf(r.what, sizeof r.what, "%s", op->name);
        snprintf(r.dtypes, sizeof r.dtypes, "%s", dt);
        snprintf(r.layout, sizeof r.layout, "-");
        if (st != GFP_OK) {
            r.status = PC_FAIL;
            snprintf(r.message, sizeof r.message, "query_op returned %s: %s", pc_status_name(st),
                     pc_error_text());
            pc_report_add(&r);
            continue;
        }
        if (support != GFP_SUPPORT_NONE && support != GFP_SUPPORT_CONTIGUOUS &&
            support != GFP_SUPPORT_STRIDED) {
            r.status = PC_FAIL;
            snprintf(r.message, sizeof r.message,
                     "query_op answered %u, which is not a GFP_SUPPORT_* value", (unsigned)support);
            pc_report_add(&r);
            continue;
        }
        if (support == GFP_SUPPORT_NONE) {
            r.status = PC_UNSUPPORTED;
            snprintf(r.message, sizeof r.message, "%s",
                     ctx->dev->plugin->slots.query_op ? "query_op: not provided"
                                                      : "not a stored dtype (query_op is NULL)");
            pc_report_add(&r);
            continue;
        }
        uint32_t osupport = GFP_SUPPORT_NONE;
        query_text(cb, &q, op->id, GFP_LAYOUT_CONTIGUOUS, true);
        if (pc_query(ctx->oracle, &q, &osupport) != GFP_OK || osupport == GFP_SUPPORT_NONE) {
            r.status = PC_SKIP;
            snprintf(r.message, sizeof r.message,
                     "declared, but the reference plugin has no kernel for these dtypes to "
                     "compare with");
            pc_report_add(&r);
            continue;
        }
        agg aggs[PC_LAYOUT_COUNT];
        memset(aggs, 0, sizeof aggs);
        run_combo(ctx, op, cb, ci, strided == GFP_SUPPORT_STRIDED, aggs);
        for (int L = 0; L < PC_LAYOUT_COUNT; L++) emit(ctx, op, dt, (pc_layout)L, &aggs[L]);
    }
}

void pc_run_ops(pc_ctx *ctx) {
    size_t n;
    const pc_op *ops = pc_catalogue(&n);
    for (size_t i = 0; i < n; i++)
        if (pc_op_selected(ops[i].name)) run_op(ctx, &ops[i]);
}
