/* SPDX-License-Identifier: BSD-3-Clause */
/* report.c — the results: a text report written as the checks run, and a
 * JSON document (--json) written at the end.
 *
 * One line per result: the plugin-wide checks (abi, accounting) first, then
 * per device its memory, ops (one line per op, dtypes and layout), errors,
 * threads and gradcheck results, then a summary per device and overall. */
#define _POSIX_C_SOURCE 200809L /* strdup */

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pc.h"

typedef struct device_info {
    int index;
    gfp_device_props props;
} device_info;

static struct {
    pc_result *results;
    size_t n, cap;
    char **notes;
    size_t n_notes;
    device_info devices[64];
    int n_devices;
    char plugin_path[1024], plugin_name[64], plugin_version[64], oracle_path[1024];
    unsigned table_major, table_minor;
    FILE *text; /* where the text report goes */
} rep;

static const char *status_word(pc_status s) {
    switch (s) {
    case PC_PASS: return "passed";
    case PC_FAIL: return "FAILED";
    case PC_UNSUPPORTED: return "not supported";
    default: return "skipped";
    }
}

static const char *status_json(pc_status s) {
    switch (s) {
    case PC_PASS: return "passed";
    case PC_FAIL: return "failed";
    case PC_UNSUPPORTED: return "unsupported";
    default: return "skipped";
    }
}

static FILE *text_out(void) {
    if (!rep.text) rep.text = pc_opt.json_path && !strcmp(pc_opt.json_path, "-") ? stderr : stdout;
    return rep.text;
}

void pc_report_begin(const char *plugin_path, const char *oracle_path) {
    snprintf(rep.plugin_path, sizeof rep.plugin_path, "%s", plugin_path);
    snprintf(rep.oracle_path, sizeof rep.oracle_path, "%s", oracle_path);
    fprintf(text_out(), "graft-plugin-check %s (plugin ABI %d.%d): %s\noracle: %s\n", PC_VERSION,
            GFP_ABI_MAJOR, GFP_ABI_MINOR, plugin_path, oracle_path);
}

void pc_report_plugin(const pc_plugin *p) {
    snprintf(rep.plugin_name, sizeof rep.plugin_name, "%s", p->name);
    snprintf(rep.plugin_version, sizeof rep.plugin_version, "%s", p->version);
    if (p->table) {
        rep.table_major = p->table->abi_major;
        rep.table_minor = p->table->abi_minor;
    }
    fprintf(text_out(), "plugin \"%s\" version %s, table ABI %u.%u\n", rep.plugin_name,
            rep.plugin_version, rep.table_major, rep.table_minor);
}

void pc_report_device(int index, const gfp_device_props *props) {
    if (rep.n_devices < (int)(sizeof rep.devices / sizeof rep.devices[0])) {
        rep.devices[rep.n_devices].index = index;
        rep.devices[rep.n_devices].props = *props;
        rep.n_devices++;
    }
    char dtypes[64] = "";
    size_t n = 0;
    for (int32_t d = 0; d < GFP_DTYPE_COUNT; d++)
        if (props->dtypes & GFP_DTYPE_BIT(d))
            n += (size_t)snprintf(dtypes + n, sizeof dtypes - n, "%s%s", n ? " " : "",
                                  pc_dtype_name(d));
    fprintf(text_out(), "\ndevice %d: \"%.127s\", type %.31s, %s%s, dtypes %s, max rank %u%s%.127s\n",
            index, props->name, props->type,
            props->flags & GFP_DEVICE_FLAG_HOST_ADDRESSABLE ? "host-addressable" : "device memory",
            props->flags & GFP_DEVICE_FLAG_THREAD_SAFE ? ", thread-safe" : "", dtypes,
            (unsigned)props->max_rank, props->driver[0] ? ", driver " : "", props->driver);
}

static void print_result(const pc_result *r) {
    if (pc_opt.brief && r->status != PC_FAIL) return;
    FILE *f = text_out();
    fprintf(f, "  %-13s %-10s %-22s", status_word(r->status), r->suite, r->what);
    if (r->dtypes[0]) fprintf(f, " %-20s %-10s", r->dtypes, r->layout);
    if (r->status == PC_PASS && r->metric) {
        fprintf(f, " %d case(s), worst %s %.3g", r->cases, r->metric, r->error);
        if (r->threshold > 0) fprintf(f, " (limit %.3g)", r->threshold);
        if (r->shape[0]) fprintf(f, " at %s", r->shape);
        if (r->message[0]) fprintf(f, "; %s", r->message);
    } else if (r->status == PC_PASS && r->cases) {
        fprintf(f, " %d case(s)", r->cases);
        if (r->message[0]) fprintf(f, "; %s", r->message);
    } else {
        if (r->shape[0]) fprintf(f, " at %s:", r->shape);
        if (r->message[0]) fprintf(f, " %s", r->message);
    }
    fputc('\n', f);
    fflush(f);
}

void pc_report_add(const pc_result *r) {
    if (rep.n == rep.cap) {
        size_t cap = rep.cap ? rep.cap * 2 : 256;
        pc_result *grown = realloc(rep.results, cap * sizeof *grown);
        if (!grown) {
            /* Keep going without storing: the line is still printed. */
            print_result(r);
            return;
        }
        rep.results = grown;
        rep.cap = cap;
    }
    rep.results[rep.n++] = *r;
    print_result(r);
}

void pc_report_check(int device, const char *suite, const char *what, pc_status st,
                     const char *fmt, ...) {
    pc_result r;
    memset(&r, 0, sizeof r);
    r.device = device;
    r.suite = suite;
    r.status = st;
    snprintf(r.what, sizeof r.what, "%s", what);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r.message, sizeof r.message, fmt, ap);
    va_end(ap);
    pc_report_add(&r);
}

void pc_report_note(const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(text_out(), "  note: %s\n", buf);
    char **grown = realloc(rep.notes, (rep.n_notes + 1) * sizeof *grown);
    if (!grown) return;
    rep.notes = grown;
    rep.notes[rep.n_notes] = strdup(buf);
    if (rep.notes[rep.n_notes]) rep.n_notes++;
}

long pc_report_count(pc_status st) {
    long n = 0;
    for (size_t i = 0; i < rep.n; i++) n += rep.results[i].status == st;
    return n;
}

long pc_report_failures(void) { return pc_report_count(PC_FAIL); }

static void counts(int device, bool all, long c[4]) {
    c[0] = c[1] = c[2] = c[3] = 0;
    for (size_t i = 0; i < rep.n; i++)
        if (all || rep.results[i].device == device) c[rep.results[i].status]++;
}

/* ------------------------------------------------------------ JSON */
static void json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (*p < 0x20)
                fprintf(f, "\\u%04x", *p);
            else
                fputc(*p, f);
        }
    }
    fputc('"', f);
}

static void json_number(FILE *f, double v) {
    if (isfinite(v))
        fprintf(f, "%.6g", v);
    else
        fputs("null", f);
}

static void json_counts(FILE *f, const long c[4]) {
    fprintf(f, "{\"passed\": %ld, \"failed\": %ld, \"unsupported\": %ld, \"skipped\": %ld}", c[0],
            c[1], c[2], c[3]);
}

static bool write_json(FILE *f) {
    long c[4];
    fprintf(f, "{\n  \"tool\": \"graft-plugin-check\",\n  \"version\": \"%s\",\n", PC_VERSION);
    fprintf(f, "  \"abi\": \"%d.%d\",\n  \"plugin\": {\"path\": ", GFP_ABI_MAJOR, GFP_ABI_MINOR);
    json_string(f, rep.plugin_path);
    fputs(", \"name\": ", f);
    json_string(f, rep.plugin_name);
    fputs(", \"version\": ", f);
    json_string(f, rep.plugin_version);
    fprintf(f, ", \"table_abi\": \"%u.%u\"},\n  \"reference\": ", rep.table_major, rep.table_minor);
    json_string(f, rep.oracle_path);
    fprintf(f, ",\n  \"quick\": %s,\n  \"seed\": %llu,\n  \"notes\": [", pc_opt.quick ? "true" : "false",
            (unsigned long long)pc_opt.seed);
    for (size_t i = 0; i < rep.n_notes; i++) {
        fputs(i ? ", " : "", f);
        json_string(f, rep.notes[i]);
    }
    fputs("],\n  \"devices\": [", f);
    for (int i = 0; i < rep.n_devices; i++) {
        const device_info *d = &rep.devices[i];
        fprintf(f, "%s\n    {\"index\": %d, \"name\": ", i ? "," : "", d->index);
        json_string(f, d->props.name);
        fputs(", \"type\": ", f);
        json_string(f, d->props.type);
        fprintf(f, ", \"flags\": %u, \"dtypes\": [", (unsigned)d->props.flags);
        int k = 0;
        for (int32_t t = 0; t < GFP_DTYPE_COUNT; t++)
            if (d->props.dtypes & GFP_DTYPE_BIT(t)) fprintf(f, "%s\"%s\"", k++ ? ", " : "", pc_dtype_name(t));
        fputs("], \"summary\": ", f);
        counts(d->index, false, c);
        json_counts(f, c);
        fputc('}', f);
    }
    fputs(rep.n_devices ? "\n  ],\n  \"results\": [" : "],\n  \"results\": [", f);
    for (size_t i = 0; i < rep.n; i++) {
        const pc_result *r = &rep.results[i];
        fprintf(f, "%s\n    {\"device\": %d, \"suite\": ", i ? "," : "", r->device);
        json_string(f, r->suite);
        fputs(", \"what\": ", f);
        json_string(f, r->what);
        if (r->dtypes[0]) {
            fputs(", \"dtypes\": ", f);
            json_string(f, r->dtypes);
            fputs(", \"layout\": ", f);
            json_string(f, r->layout);
        }
        fprintf(f, ", \"status\": \"%s\", \"cases\": %d", status_json(r->status), r->cases);
        if (r->metric) {
            fputs(", \"metric\": ", f);
            json_string(f, r->metric);
            fputs(", \"error\": ", f);
            json_number(f, r->error);
            fputs(", \"threshold\": ", f);
            json_number(f, r->threshold);
        }
        if (r->shape[0]) {
            fputs(", \"shape\": ", f);
            json_string(f, r->shape);
        }
        fputs(", \"message\": ", f);
        json_string(f, r->message);
        fputc('}', f);
    }
    fputs(rep.n ? "\n  ],\n  \"summary\": " : "],\n  \"summary\": ", f);
    counts(0, true, c);
    json_counts(f, c);
    fputs("\n}\n", f);
    return !ferror(f);
}

bool pc_report_finish(void) {
    FILE *f = text_out();
    long c[4];
    for (int i = 0; i < rep.n_devices; i++) {
        counts(rep.devices[i].index, false, c);
        fprintf(f, "device %d: %ld passed, %ld FAILED, %ld not supported, %ld skipped\n",
                rep.devices[i].index, c[0], c[1], c[2], c[3]);
    }
    counts(-1, false, c);
    fprintf(f, "plugin-wide checks: %ld passed, %ld FAILED\n", c[0], c[1]);
    counts(0, true, c);
    fprintf(f, "%s: %ld passed, %ld FAILED, %ld not supported, %ld skipped\n",
            c[1] ? "FAILED" : "PASSED", c[0], c[1], c[2], c[3]);
    fflush(f);
    bool ok = true;
    if (pc_opt.json_path) {
        bool to_stdout = !strcmp(pc_opt.json_path, "-");
        FILE *j = to_stdout ? stdout : fopen(pc_opt.json_path, "w");
        if (!j) {
            fprintf(stderr, "graft-plugin-check: cannot write %s\n", pc_opt.json_path);
            ok = false;
        } else {
            ok = write_json(j);
            if (!to_stdout && fclose(j) != 0) ok = false;
            if (to_stdout) fflush(stdout);
        }
    }
    free(rep.results);
    rep.results = NULL;
    rep.n = rep.cap = 0;
    for (size_t i = 0; i < rep.n_notes; i++) free(rep.notes[i]);
    free(rep.notes);
    rep.notes = NULL;
    rep.n_notes = 0;
    return ok;
}
