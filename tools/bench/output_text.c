/* SPDX-License-Identifier: BSD-3-Clause */
/* output_text.c — the terminal table, CSV and JSON.
 *
 * Rows are grouped by workload (in the order of the set), one line per
 * device, so a workload's devices sit under each other. The ratio column is
 * the baseline's median time over the device's: 4.0x means four times as
 * fast as the baseline, 0.5x half as fast. */
#include <math.h>
#include <string.h>

#include "bench.h"

const char *bench_fmt_time(double s, char *buf, size_t len) {
    static const struct { double scale; const char *unit; } U[] = {
        {1, "s"}, {1e-3, "ms"}, {1e-6, "\xc2\xb5s"}, {1e-9, "ns"}};
    int u = 0;
    while (u < 3 && fabs(s) < U[u].scale) u++;
    double v = s / U[u].scale;
    snprintf(buf, len, v >= 100 ? "%.0f %s" : v >= 10 ? "%.1f %s" : "%.2f %s", v, U[u].unit);
    return buf;
}

static const char *state_name(bench_state s) {
    return s == BENCH_OK ? "ok" : s == BENCH_NA ? "n/a" : "failed";
}

/* The rate of r: work per second in its unit ("GFLOP/s" and "GB/s" are 1e9). */
static double rate_of(const bench_result *r) {
    if (!r->rate_unit || !(r->work > 0) || !(r->time.median > 0)) return 0;
    double per_s = r->work / r->time.median;
    return strcmp(r->rate_unit, "samples/s") ? per_s / 1e9 : per_s;
}

/* The rate of the peak row of that name (its fastest run: the uncontended
 * rate), 0 when there is none. */
static double peak_row_gflops(const bench_run *run, const char *name) {
    for (int i = 0; i < run->n_results; i++) {
        const bench_result *r = &run->results[i];
        if (!strcmp(r->name, name) && r->state == BENCH_OK && r->time.min > 0)
            return r->work / r->time.min * 1e-9;
    }
    return 0;
}

double bench_peak_gflops(const bench_run *run) { return peak_row_gflops(run, "peak fma"); }

/* r's GFLOP/s as a share of its peak (peak_bf16: the vdpbf16ps row's, else
 * peak_share of the FMA row's), 0 when none. */
static double peak_fraction(const bench_run *run, const bench_result *r) {
    double peak = r->peak_bf16 ? peak_row_gflops(run, "peak bf16")
                               : bench_peak_gflops(run) * r->peak_share;
    double rate = rate_of(r);
    return peak > 0 && rate > 0 && r->rate_unit && !strcmp(r->rate_unit, "GFLOP/s") ? rate / peak
                                                                                     : 0;
}

/* The ratio of the fastest runs (baseline min over r's): the figure least
 * moved by other load on the machine. 0 when there is none. */
static double ratio_min(const bench_run *run, const bench_result *r) {
    const bench_result *b = bench_baseline_of(run, r);
    if (!b || b == r || b->state != BENCH_OK || r->state != BENCH_OK || !(r->time.min > 0)) return 0;
    return b->time.min / r->time.min;
}

/* The device column: the spec, and the variant when there is one. */
static const char *device_label(const bench_run *run, const bench_result *r, char *buf, size_t len) {
    snprintf(buf, len, "%s%s%s", run->devices[r->device].spec, r->variant[0] ? " " : "", r->variant);
    return buf;
}

/* 3 significant digits. */
static const char *fmt_sig(double v, char *buf, size_t len) {
    if (v >= 1) snprintf(buf, len, v >= 100 ? "%.0f" : v >= 10 ? "%.1f" : "%.2f", v);
    else snprintf(buf, len, "%.3g", v);
    return buf;
}

/* Writes s padded to width display columns (UTF-8 aware: the table holds "µ"). */
static void cell(FILE *out, const char *s, int width, bool right) {
    int cols = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) cols += (*p & 0xC0) != 0x80;
    int pad = width > cols ? width - cols : 0;
    if (right) fprintf(out, "%*s%s", pad, "", s);
    else fprintf(out, "%s%*s", s, pad, "");
}

/* Calls fn for each row, grouped by name in first-appearance order. */
static void for_each_grouped(const bench_run *run, void (*fn)(const bench_run *, const bench_result *,
                                                              bool first, void *), void *user) {
    for (int i = 0; i < run->n_results; i++) {
        const bench_result *r = &run->results[i];
        bool seen = false;
        for (int j = 0; j < i && !seen; j++) seen = !strcmp(run->results[j].name, r->name);
        if (seen) continue;
        bool first = true;
        for (int d = 0; d < run->n_devices; d++)
            for (int j = i; j < run->n_results; j++) {
                const bench_result *q = &run->results[j];
                if (q->device == d && !strcmp(q->name, r->name)) {
                    fn(run, q, first, user);
                    first = false;
                }
            }
    }
}

/* ------------------------------------------------------------ table */
static void per_time(const bench_result *r, double s, char *buf, size_t len) {
    bench_fmt_time(s, buf, len);
    if (!strcmp(r->per, "op") || !strcmp(r->per, "node")) {
        size_t n = strlen(buf);
        if (n + 1 < len) buf[n++] = '/';
        buf[n] = 0;
        strncat(buf, r->per, len - n - 1);
    }
}

static void table_row(const bench_run *run, const bench_result *r, bool first, void *user) {
    FILE *out = user;
    char buf[128];
    cell(out, first ? r->name : "", 17, false);
    cell(out, device_label(run, r, buf, sizeof buf), 30, false);
    if (r->state != BENCH_OK) {
        /* The table keeps one line per row; CSV and JSON carry the whole note. */
        int max = 150, len = (int)strlen(r->note);
        fprintf(out, "%s: %.*s%s\n", r->state == BENCH_NA ? "n/a" : "FAILED",
                len > max ? max - 3 : len, r->note, len > max ? "..." : "");
        return;
    }
    per_time(r, r->time.median, buf, sizeof buf);
    cell(out, buf, 13, true);
    char lo[32], hi[32];
    bench_fmt_time(r->time.min, lo, sizeof lo);
    bench_fmt_time(r->time.max, hi, sizeof hi);
    snprintf(buf, sizeof buf, "%s..%s", lo, hi);
    cell(out, buf, 22, true);
    double rate = rate_of(r), peak = peak_fraction(run, r);
    if (rate > 0) {
        char v[32];
        int n = snprintf(buf, sizeof buf, "%s %s", fmt_sig(rate, v, sizeof v), r->rate_unit);
        if (peak > 0) snprintf(buf + n, sizeof buf - (size_t)n, " %3.0f%%", 100 * peak);
    } else {
        snprintf(buf, sizeof buf, "-");
    }
    cell(out, buf, 23, true);
    if (r->has_transfer) {
        bench_fmt_time(r->h2d.median, buf, sizeof buf);
        cell(out, buf, 11, true);
        bench_fmt_time(r->d2h.median, buf, sizeof buf);
        cell(out, buf, 11, true);
    } else {
        cell(out, "-", 11, true);
        cell(out, "-", 11, true);
    }
    double ratio = bench_ratio(run, r);
    if (ratio > 0) {
        char v[32];
        snprintf(buf, sizeof buf, "%sx", fmt_sig(ratio, v, sizeof v));
    } else {
        snprintf(buf, sizeof buf, "-");
    }
    cell(out, buf, 10, true);
    if (r->fallback_ops) snprintf(buf, sizeof buf, "%llu ops", (unsigned long long)r->fallback_ops);
    else snprintf(buf, sizeof buf, "-");
    cell(out, buf, 10, true);
    /* The first run's excess over the median: compiles, first touches. */
    double excess = r->time.first - r->time.median;
    if (r->time.first > 0 && excess > 0) {
        char t[32];
        snprintf(buf, sizeof buf, "+%s", bench_fmt_time(excess, t, sizeof t));
    } else {
        snprintf(buf, sizeof buf, "-");
    }
    cell(out, buf, 11, true);
    if (r->has_fused && r->fused_launches)
        fprintf(out, "  fused %llu of the graph's launches into %llu runs (%llu fewer per replay)",
                (unsigned long long)r->fused_launches, (unsigned long long)r->fused_runs,
                (unsigned long long)(r->fused_launches - r->fused_runs));
    if (r->has_loss) {
        char t[32];
        fprintf(out, "  loss %.4g -> %.4g, cpu %s/step", r->loss_first, r->loss_last,
                bench_fmt_time(r->time.cpu, t, sizeof t));
        if (r->time.median > 0) fprintf(out, " (%.2fx wall)", r->time.cpu / r->time.median);
        fprintf(out, ", %.0f faults/step", r->time.faults);
        double fma_peak = bench_peak_gflops(run);
        if (r->step_flops > 0 && r->time.median > 0) {
            double gf = r->step_flops / r->time.median / 1e9;
            fprintf(out, ", %.3g GFLOP/step = %.1f GFLOP/s", r->step_flops / 1e9, gf);
            if (fma_peak > 0) fprintf(out, " (%.0f%% of the FMA peak)", 100 * gf / fma_peak);
        }
    }
    fprintf(out, "\n");
}

static void print_header(const bench_run *run, FILE *out) {
    const bench_opts *o = &run->opts;
    fprintf(out, "graft-bench%s: %d device%s, f32; median of %d..%d timed runs (at least %.2g s) "
            "after %d warm-up\n", o->quick ? " --quick" : "", run->n_devices,
            run->n_devices == 1 ? "" : "s", o->min_repeats, o->max_repeats, o->min_time,
            o->warmup);
    fprintf(out, "threads: %s\n", run->threads);
    if (o->cold) fprintf(out, "kernel caches: off (--cold): first runs compile from source\n");
    double peak = bench_peak_gflops(run);
    if (peak > 0) fprintf(out, "CPU peak (FMA loop, fastest run): %.1f GFLOP/s f32\n", peak);
    if (run->load_start >= 0)
        fprintf(out, "load average (1 min): %.2f at the start, %.2f at the end\n",
                run->load_start, run->load_end);
    for (int d = 0; d < run->n_devices; d++) {
        const bench_device *v = &run->devices[d];
        fprintf(out, "  %-8s %s (plugin %s%s%s)%s\n", v->spec, v->name, v->plugin,
                *v->driver ? ", " : "", v->driver, d == run->baseline ? "  <- baseline" : "");
    }
}

void bench_print_table(const bench_run *run, FILE *out) {
    print_header(run, out);
    char ratio_head[48];
    snprintf(ratio_head, sizeof ratio_head, "vs %s", run->devices[run->baseline].spec);
    fprintf(out, "\n");
    cell(out, "workload", 17, false);
    cell(out, "device", 30, false);
    cell(out, "median", 13, true);
    cell(out, "min..max", 22, true);
    cell(out, "rate (peak)", 23, true);
    cell(out, "in (h2d)", 11, true);
    cell(out, "out (d2h)", 11, true);
    cell(out, ratio_head, 10, true);
    cell(out, "fallback", 10, true);
    cell(out, "first run", 11, true);
    fprintf(out, "\n");
    for_each_grouped(run, table_row, out);
    fprintf(out, "\nmedian, min..max: kernel time per run (per op / node for the chains, per "
            "step for training),\n  device synchronized, inputs already on the device. in/out: "
            "median time to write the\n  inputs from host memory / read the output back. "
            "vs %s: its median time over this\n  device's (2x = twice as fast). fallback: ops "
            "of the workload (all runs) that ran on the\n  fallback device because this "
            "device lacks them (graft/device.h). peak: the share of the\n  CPU's FMA peak "
            "(f64: of half of it). first run: the first warm-up run's excess over\n  the median "
            "(kernel compiles, first touches of memory). A device followed by a\n  variant is "
            "the plugin's other kernel forced through its extension; host rows\n  are "
            "libraries and loops called without graft. cpu: the process's CPU time (every\n"
            "  thread) per training step, and its ratio to the wall time.\n",
            run->devices[run->baseline].spec);
}

/* ------------------------------------------------------------ CSV */
static void csv_text(FILE *out, const char *s) {
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"') fputc('"', out);
        fputc(*s, out);
    }
    fputc('"', out);
}

static void csv_row(const bench_run *run, const bench_result *r, bool first, void *user) {
    (void)first;
    FILE *out = user;
    const bench_device *d = &run->devices[r->device];
    csv_text(out, r->name);
    fputc(',', out);
    csv_text(out, r->variant);
    fputc(',', out);
    csv_text(out, r->detail);
    fputc(',', out);
    csv_text(out, d->spec);
    fputc(',', out);
    csv_text(out, d->name);
    fputc(',', out);
    csv_text(out, d->plugin);
    fprintf(out, ",%s,", state_name(r->state));
    csv_text(out, r->note);
    fprintf(out, ",%s", r->per);
    if (r->state != BENCH_OK) {
        fprintf(out, ",,,,,,,,,,,,,,,,,,,,,,\n");
        return;
    }
    const bench_stats *t = &r->time;
    fprintf(out, ",%.6g,%.6g,%.6g,%.6g,%.6g,%d", t->median, t->min, t->max, t->q1, t->q3,
            t->runs);
    double rate = rate_of(r);
    if (rate > 0) fprintf(out, ",%.6g,%s", rate, r->rate_unit);
    else fprintf(out, ",,");
    if (r->has_transfer)
        fprintf(out, ",%.6g,%.0f,%.6g,%.0f", r->h2d.median, r->h2d_bytes, r->d2h.median,
                r->d2h_bytes);
    else fprintf(out, ",,,,");
    double ratio = bench_ratio(run, r);
    if (ratio > 0) fprintf(out, ",%.6g", ratio);
    else fprintf(out, ",");
    double rmin = ratio_min(run, r), peak = peak_fraction(run, r);
    if (rmin > 0) fprintf(out, ",%.6g", rmin);
    else fprintf(out, ",");
    fprintf(out, ",%llu,%llu", (unsigned long long)r->fallback_ops,
            (unsigned long long)r->fallback_bytes);
    fprintf(out, ",%.6g,%.6g,%.6g", r->time.first, r->time.cpu, r->time.faults);
    if (peak > 0) fprintf(out, ",%.6g", peak);
    else fprintf(out, ",");
    if (r->has_loss) fprintf(out, ",%.6g,%.6g\n", r->loss_first, r->loss_last);
    else fprintf(out, ",,\n");
}

void bench_print_csv(const bench_run *run, FILE *out) {
    fprintf(out, "workload,variant,detail,device,device_name,plugin,status,note,per,median_s,"
            "min_s,max_s,q1_s,q3_s,runs,rate,rate_unit,h2d_median_s,h2d_bytes,d2h_median_s,"
            "d2h_bytes,ratio_to_baseline,ratio_min_to_baseline,fallback_ops,fallback_bytes,"
            "first_run_s,cpu_median_s,faults_per_run,fraction_of_peak,loss_first,loss_last\n");
    for_each_grouped(run, csv_row, out);
}

/* ------------------------------------------------------------ JSON */
static void json_text(FILE *out, const char *s) {
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') fprintf(out, "\\%c", *p);
        else if (*p < 0x20) fprintf(out, "\\u%04x", *p);
        else fputc(*p, out);
    }
    fputc('"', out);
}

static void json_stats(FILE *out, const char *key, const bench_stats *s) {
    fprintf(out, ", \"%s\": {\"median\": %.6g, \"min\": %.6g, \"max\": %.6g, \"q1\": %.6g, "
            "\"q3\": %.6g, \"runs\": %d}", key, s->median, s->min, s->max, s->q1, s->q3, s->runs);
}

typedef struct json_ctx {
    FILE *out;
    int n;
} json_ctx;

static void json_row(const bench_run *run, const bench_result *r, bool first, void *user) {
    (void)first;
    json_ctx *j = user;
    FILE *out = j->out;
    fprintf(out, "%s    {\"workload\": ", j->n++ ? ",\n" : "");
    json_text(out, r->name);
    fprintf(out, ", \"variant\": ");
    json_text(out, r->variant);
    fprintf(out, ", \"detail\": ");
    json_text(out, r->detail);
    fprintf(out, ", \"device\": ");
    json_text(out, run->devices[r->device].spec);
    fprintf(out, ", \"status\": \"%s\", \"note\": ", state_name(r->state));
    json_text(out, r->note);
    fprintf(out, ", \"per\": \"%s\"", r->per);
    if (r->state == BENCH_OK) {
        json_stats(out, "time_s", &r->time);
        double rate = rate_of(r);
        if (rate > 0) fprintf(out, ", \"rate\": %.6g, \"rate_unit\": \"%s\"", rate, r->rate_unit);
        if (r->has_transfer) {
            json_stats(out, "h2d_s", &r->h2d);
            json_stats(out, "d2h_s", &r->d2h);
            fprintf(out, ", \"h2d_bytes\": %.0f, \"d2h_bytes\": %.0f", r->h2d_bytes, r->d2h_bytes);
        }
        double ratio = bench_ratio(run, r);
        if (ratio > 0) fprintf(out, ", \"ratio_to_baseline\": %.6g", ratio);
        double rmin = ratio_min(run, r), peak = peak_fraction(run, r);
        if (rmin > 0) fprintf(out, ", \"ratio_min_to_baseline\": %.6g", rmin);
        if (peak > 0) fprintf(out, ", \"fraction_of_peak\": %.6g", peak);
        fprintf(out, ", \"first_run_s\": %.6g, \"cpu_median_s\": %.6g, \"faults_per_run\": %.6g",
                r->time.first, r->time.cpu, r->time.faults);
        /* Above 1: more than one thread busy (or spinning) during a run. */
        if (r->time.median > 0 && r->time.cpu > 0)
            fprintf(out, ", \"cpu_to_wall\": %.4g", r->time.cpu / r->time.median);
        if (r->has_loss)
            fprintf(out, ", \"loss_first\": %.6g, \"loss_last\": %.6g", r->loss_first,
                    r->loss_last);
        if (r->step_flops > 0) fprintf(out, ", \"step_flops\": %.6g", r->step_flops);
        fprintf(out, ", \"fallback_ops\": %llu, \"fallback_bytes\": %llu",
                (unsigned long long)r->fallback_ops, (unsigned long long)r->fallback_bytes);
    }
    fprintf(out, "}");
}

void bench_print_json(const bench_run *run, FILE *out) {
    const bench_opts *o = &run->opts;
    fprintf(out, "{\n  \"tool\": \"graft-bench\",\n  \"quick\": %s,\n", o->quick ? "true" : "false");
    fprintf(out, "  \"settings\": {\"warmup\": %d, \"min_repeats\": %d, \"max_repeats\": %d, "
            "\"min_time_s\": %g},\n", o->warmup, o->min_repeats, o->max_repeats, o->min_time);
    fprintf(out, "  \"threads\": ");
    json_text(out, run->threads);
    fprintf(out, ",\n  \"cpus_online\": %d,\n", run->cpus_online);
    if (run->openmp_threads > 0) fprintf(out, "  \"openmp_threads\": %d,\n", run->openmp_threads);
    fprintf(out, "  \"load_average_1min\": {\"start\": %.2f, \"end\": %.2f},\n  \"baseline\": ",
            run->load_start, run->load_end);
    json_text(out, run->devices[run->baseline].spec);
    fprintf(out, ",\n  \"devices\": [\n");
    for (int d = 0; d < run->n_devices; d++) {
        const bench_device *v = &run->devices[d];
        fprintf(out, "    {\"spec\": ");
        json_text(out, v->spec);
        fprintf(out, ", \"name\": ");
        json_text(out, v->name);
        fprintf(out, ", \"plugin\": ");
        json_text(out, v->plugin);
        fprintf(out, ", \"driver\": ");
        json_text(out, v->driver);
        fprintf(out, "}%s\n", d + 1 < run->n_devices ? "," : "");
    }
    fprintf(out, "  ],\n  \"results\": [\n");
    json_ctx j = {out, 0};
    for_each_grouped(run, json_row, &j);
    fprintf(out, "\n  ]\n}\n");
}
