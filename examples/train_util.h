/* train_util.h — what the training examples share (header-only): the
 * progress display, a seeded shuffle, a clock and number parsing.
 * Include it after defining _POSIX_C_SOURCE >= 200809L (clock_gettime, isatty).
 *
 * Progress: on a terminal, one line per epoch is redrawn in place as batches
 * finish,
 *   epoch   3/30 [##########....................]   10/30  loss 0.4812
 * and replaced by the epoch's summary line when it ends. When stdout is not
 * a terminal (a log file, CTest), nothing is drawn: only the summary lines
 * are printed, so logs stay one line per epoch. */
#ifndef GRAFT_EXAMPLES_TRAIN_UTIL_H
#define GRAFT_EXAMPLES_TRAIN_UTIL_H

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "graft.h"

#if defined(__GNUC__)
#define TRAIN_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define TRAIN_PRINTF(a, b)
#endif

/* ------------------------------------------------------------ progress */
#define PROGRESS_WIDTH 30

typedef struct progress {
    bool tty;   /* stdout is a terminal: draw the bar */
    bool drawn; /* a bar is on the current line */
    int epochs;
} progress;

static inline void progress_init(progress *p, int epochs) {
    p->tty = isatty(STDOUT_FILENO) == 1;
    p->drawn = false;
    p->epochs = epochs;
}

/* Redraws the bar after `done` of `total` batches of `epoch`; loss is the
 * running mean so far. */
static inline void progress_update(progress *p, int epoch, int done, int total, double loss) {
    if (!p->tty || total <= 0) return;
    int fill = (int)((long long)done * PROGRESS_WIDTH / total);
    char bar[PROGRESS_WIDTH + 1];
    for (int i = 0; i < PROGRESS_WIDTH; i++) bar[i] = i < fill ? '#' : '.';
    bar[PROGRESS_WIDTH] = '\0';
    /* \r goes back to column 0; \033[K clears what a longer line left. */
    printf("\repoch %3d/%d [%s] %4d/%d  loss %.4f\033[K", epoch, p->epochs, bar, done, total,
           loss);
    fflush(stdout);
    p->drawn = true;
}

/* Prints a whole line (printf format; the newline is added) over the bar if
 * one is drawn. */
static inline void progress_line(progress *p, const char *fmt, ...) TRAIN_PRINTF(2, 3);
static inline void progress_line(progress *p, const char *fmt, ...) {
    if (p->drawn) printf("\r\033[K");
    p->drawn = false;
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
}

/* Ends a bar left on screen, before an error message goes to stderr. */
static inline void progress_abort(progress *p) {
    if (p->drawn) putchar('\n');
    p->drawn = false;
    fflush(stdout);
}

/* ------------------------------------------------------------ helpers */

/* A permutation of 0..n-1 on dev (Fisher-Yates driven by graft's generator,
 * so a seed gives the same order on every device). perm and u are scratch
 * arrays of n entries. Returns a new reference, NULL on error. */
static inline gf_tensor *shuffled_index(gf_device *dev, int64_t *perm, float *u, int n) {
    gf_tensor *r = gf_rand((const int64_t[]){n}, 1, GF_F32, dev);
    gf_status s = r ? gf_tensor_to_host(r, u, (size_t)n * sizeof *u) : gf_last_status();
    gf_tensor_release(r);
    if (s != GF_OK) return NULL;
    for (int i = 0; i < n; i++) perm[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(u[i] * (float)(i + 1));
        if (j > i) j = i; /* u may round up to 1.0 in f32 */
        int64_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    return gf_from_data(perm, (const int64_t[]){n}, 1, GF_I64, dev);
}

static inline double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Parses the whole of s as a number in [lo, hi]; -1 otherwise. */
static inline int parse_num(const char *s, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi)) return -1;
    *out = v;
    return 0;
}

#endif
