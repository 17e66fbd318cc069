/* SPDX-License-Identifier: BSD-3-Clause */
/* output_svg.c — a grouped bar chart of the ratios, as a standalone SVG.
 *
 * One group of bars per workload row, one bar per device (colour, legend),
 * height = speed relative to the baseline on a log axis (1x is the
 * baseline; 10x ten times as fast). Bars stand on the bottom of the axis so
 * the baseline's own bars (exactly 1x) stay visible; the 1x line is drawn
 * dark. A device whose row is n/a or failed gets a label instead of a bar.
 * Each bar carries a <title> with the exact figures (a tooltip in browsers). */
#include <math.h>
#include <string.h>

#include "bench.h"

/* Okabe-Ito: distinguishable with the common colour-vision deficiencies. */
static const char *const COLOURS[] = {"#0072B2", "#E69F00", "#009E73", "#CC79A7",
                                      "#56B4E9", "#D55E00", "#F0E442", "#000000"};
#define N_COLOURS (int)(sizeof COLOURS / sizeof COLOURS[0])
#define FONT "DejaVu Sans, Helvetica, Arial, sans-serif"

static void xml_text(FILE *f, const char *s) {
    for (; *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
    }
}

/* "0.01x", "0.5x", "1x", "20x", "1000x". */
static const char *fmt_ratio(double v, char *buf, size_t len) {
    if (v >= 100) snprintf(buf, len, "%.0fx", v);
    else if (v >= 10) snprintf(buf, len, "%.1fx", v);
    else if (v >= 0.1) snprintf(buf, len, "%.2fx", v);
    else snprintf(buf, len, "%.2gx", v);
    return buf;
}

static const char *fmt_tick(double v, char *buf, size_t len) {
    snprintf(buf, len, "%gx", v);
    return buf;
}

/* The row of name on device d, or NULL. */
static const bench_result *row_of(const bench_run *run, const char *name, int d) {
    for (int i = 0; i < run->n_results; i++)
        if (run->results[i].device == d && !strcmp(run->results[i].name, name))
            return &run->results[i];
    return NULL;
}

int bench_write_svg(const bench_run *run, const char *path) {
    /* The groups: distinct row names in order. */
    const char *groups[BENCH_MAX_ROWS_PER_DEVICE * BENCH_MAX_DEVICES];
    int n_groups = 0;
    double lo = 0, hi = 0; /* log10 range of the ratios, always containing 1x */
    for (int i = 0; i < run->n_results; i++) {
        const bench_result *r = &run->results[i];
        bool seen = false;
        for (int g = 0; g < n_groups && !seen; g++) seen = !strcmp(groups[g], r->name);
        if (!seen) groups[n_groups++] = r->name;
        double ratio = bench_ratio(run, r);
        if (ratio > 0) {
            lo = fmin(lo, log10(ratio));
            hi = fmax(hi, log10(ratio));
        }
    }
    lo = floor(lo);
    hi = ceil(hi + 0.15); /* room for the value labels above the tallest bar */
    if (hi - lo < 2) lo = hi - 2;

    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return -1;
    }
    const int nd = run->n_devices;
    const int bw = nd <= 2 ? 18 : nd <= 4 ? 13 : 9, gap = 16, gw = nd * bw + gap;
    const int legend_h = 18 * nd;
    const int ml = 86, mr = 24, mt = 92 + legend_h, ph = 380, mb = 140;
    const int pw = n_groups * gw, H = mt + ph + mb;
    /* Wide enough for the text lines too (about 6.5 px per character at 11 px,
     * 11 px at the 18 px bold title). */
    int W = ml + pw + mr;
    size_t title = strlen(run->devices[run->baseline].name) + 60;
    size_t notes = strlen(run->threads) + 40;
    if (W < ml + (int)(11 * title) + mr) W = ml + (int)(11 * title) + mr;
    if (W < ml + (int)(6.5 * notes) + mr) W = ml + (int)(6.5 * notes) + mr;
    const bench_device *base = &run->devices[run->baseline];
#define Y(v) (mt + ph * (hi - (v)) / (hi - lo))

    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "viewBox=\"0 0 %d %d\" font-family=\"%s\">\n", W, H, W, H, FONT);
    fprintf(f, "<rect width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", W, H);

    /* Title, subtitle, legend. */
    fprintf(f, "<text x=\"%d\" y=\"26\" font-size=\"18\" font-weight=\"bold\">graft-bench: "
            "speed relative to ", ml);
    xml_text(f, base->spec);
    fprintf(f, " (");
    xml_text(f, base->name);
    fprintf(f, ")%s</text>\n", run->opts.quick ? " [--quick]" : "");
    fprintf(f, "<text x=\"%d\" y=\"46\" font-size=\"12\" fill=\"#444\">Higher is faster. Bar "
            "height: the baseline's median kernel time over the device's, on a log scale "
            "(transfers not included).</text>\n", ml);
    fprintf(f, "<text x=\"%d\" y=\"62\" font-size=\"11\" fill=\"#444\">Threads: ", ml);
    xml_text(f, run->threads);
    if (run->load_start >= 0)
        fprintf(f, "; load average %.2f..%.2f", run->load_start, run->load_end);
    fprintf(f, "</text>\n");
    for (int d = 0; d < nd; d++) {
        const bench_device *v = &run->devices[d];
        int y = 74 + 18 * d;
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"12\" fill=\"%s\"/>\n", ml, y,
                COLOURS[d % N_COLOURS]);
        fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"13\">", ml + 20, y + 11);
        xml_text(f, v->spec);
        fprintf(f, "  ");
        xml_text(f, v->name);
        fprintf(f, " (plugin ");
        xml_text(f, v->plugin);
        fprintf(f, ")%s</text>\n", d == run->baseline ? "  = baseline, 1x" : "");
    }

    /* Grid: a line per power of ten (labelled), fainter ones at 2x and 5x. */
    for (int e = (int)lo; e <= (int)hi; e++) {
        char t[32];
        double y = Y(e);
        fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                "stroke-width=\"%s\"/>\n", ml, ml + pw, y, y, e == 0 ? "#222" : "#bbb",
                e == 0 ? "1.5" : "1");
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" font-size=\"12\" text-anchor=\"end\">%s</text>\n",
                ml - 6, y + 4, fmt_tick(pow(10, e), t, sizeof t));
        for (int m = 2; m <= 5 && e < (int)hi; m += 3) {
            double ym = Y(e + log10(m));
            fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>\n",
                    ml, ml + pw, ym, ym);
            if (hi - lo <= 3)
                fprintf(f, "<text x=\"%d\" y=\"%.1f\" font-size=\"10\" fill=\"#777\" "
                        "text-anchor=\"end\">%s</text>\n", ml - 6, ym + 3,
                        fmt_tick(m * pow(10, e), t, sizeof t));
        }
    }
    fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" stroke=\"#222\"/>\n", ml, ml, mt,
            mt + ph);
    fprintf(f, "<text transform=\"translate(%d,%d) rotate(-90)\" font-size=\"13\" "
            "text-anchor=\"middle\">speed relative to ", 22, mt + ph / 2);
    xml_text(f, base->spec);
    fprintf(f, " (x, log scale)</text>\n");

    /* Bars and workload labels. */
    for (int g = 0; g < n_groups; g++) {
        int gx = ml + g * gw + gap / 2;
        if (g)
            fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" stroke=\"#f0f0f0\"/>\n",
                    gx - gap / 2, gx - gap / 2, mt, mt + ph);
        for (int d = 0; d < nd; d++) {
            const bench_result *r = row_of(run, groups[g], d);
            if (!r) continue;
            int x = gx + d * bw;
            double ratio = bench_ratio(run, r);
            if (ratio > 0) {
                char t[32], med[32];
                double y = Y(log10(ratio));
                fprintf(f, "<rect x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%.1f\" fill=\"%s\">"
                        "<title>", x, y, bw - 1, mt + ph - y, COLOURS[d % N_COLOURS]);
                xml_text(f, r->name);
                fprintf(f, " on ");
                xml_text(f, run->devices[d].spec);
                fprintf(f, ": %s, median %s per %s</title></rect>\n",
                        fmt_ratio(ratio, t, sizeof t), bench_fmt_time(r->time.median, med,
                                                                      sizeof med), r->per);
                if (d != run->baseline) /* its bars are 1x by definition */
                    fprintf(f, "<text transform=\"translate(%.1f,%.1f) rotate(-90)\" "
                            "font-size=\"9\">%s</text>\n", x + bw / 2.0 + 3, y - 3, t);
            } else {
                const char *why = r->state == BENCH_NA ? "n/a" : r->state == BENCH_FAILED
                                                                     ? "FAILED" : "no baseline";
                fprintf(f, "<text transform=\"translate(%.1f,%d) rotate(-90)\" font-size=\"10\" "
                        "fill=\"%s\">%s<title>", x + bw / 2.0 + 3.5, mt + ph - 4,
                        r->state == BENCH_FAILED ? "#c00" : "#777", why);
                xml_text(f, r->note);
                fprintf(f, "</title></text>\n");
            }
        }
        fprintf(f, "<text transform=\"translate(%.1f,%d) rotate(-40)\" font-size=\"12\" "
                "text-anchor=\"end\">", gx + nd * bw / 2.0, mt + ph + 14);
        xml_text(f, groups[g]);
        fprintf(f, "</text>\n");
    }
    fprintf(f, "</svg>\n");
#undef Y
    if (fclose(f) != 0) {
        perror(path);
        return -1;
    }
    return 0;
}
