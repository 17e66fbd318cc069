/* SPDX-License-Identifier: BSD-3-Clause */
/* error.c — the thread's last error, status and dtype names, logging. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define GF_MSG_MAX 1024

static _Thread_local gf_status tl_status = GF_OK;
static _Thread_local char tl_message[GF_MSG_MAX];
/* The user has read the error (gf_last_error / gf_last_status): it is no
 * longer the cause of a NULL that reaches a later call. */
static _Thread_local bool tl_read;
/* Counts the errors recorded on this thread: tells whether a callback
 * recorded one while it ran (gf__callback_failed). */
static _Thread_local uint64_t tl_seq;

static const char *const status_names[] = {
    [0] = "GF_OK",
    [-GF_ERR_INVALID] = "GF_ERR_INVALID",
    [-GF_ERR_SHAPE] = "GF_ERR_SHAPE",
    [-GF_ERR_DTYPE] = "GF_ERR_DTYPE",
    [-GF_ERR_DEVICE] = "GF_ERR_DEVICE",
    [-GF_ERR_INDEX] = "GF_ERR_INDEX",
    [-GF_ERR_OVERFLOW] = "GF_ERR_OVERFLOW",
    [-GF_ERR_OUT_OF_MEMORY] = "GF_ERR_OUT_OF_MEMORY",
    [-GF_ERR_UNSUPPORTED] = "GF_ERR_UNSUPPORTED",
    [-GF_ERR_PLUGIN] = "GF_ERR_PLUGIN",
    [-GF_ERR_AUTOGRAD] = "GF_ERR_AUTOGRAD",
    [-GF_ERR_NOT_FOUND] = "GF_ERR_NOT_FOUND",
};

const char *gf_status_name(gf_status status) {
    int i = -(int)status;
    if (i < 0 || i >= (int)(sizeof status_names / sizeof status_names[0]) || !status_names[i])
        return "GF_ERR_UNKNOWN";
    return status_names[i];
}

gf_status gf__error(gf_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tl_message, sizeof tl_message, fmt, ap);
    va_end(ap);
    tl_status = status;
    tl_read = false;
    tl_seq++;
    gf__log(GFP_LOG_DEBUG, "error %s: %s", gf_status_name(status), tl_message);
    return status;
}

gf_status gf_set_error(gf_status status, const char *fmt, ...) {
    char msg[GF_MSG_MAX];
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
    } else {
        msg[0] = '\0';
    }
    if (status >= 0)
        return gf__error(GF_ERR_INVALID, "gf_set_error: status %d is not a failure (use a "
                         "negative GF_ERR_* status); message: %s", (int)status, msg);
    return gf__error(status, "%s", msg[0] ? msg : "(no message given)");
}

uint64_t gf__error_seq(void) { return tl_seq; }

gf_status gf__callback_failed(gf_status s, uint64_t seq, const char *fmt, ...) {
    char where[GF_MSG_MAX / 2];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(where, sizeof where, fmt, ap);
    va_end(ap);
    if (tl_seq == seq || tl_status == GF_OK)
        return gf__error(s, "%s returned %s without a message (attach one with gf_set_error "
                         "before returning a failure)", where, gf_status_name(s));
    char inner[GF_MSG_MAX];
    snprintf(inner, sizeof inner, "%s", tl_message);
    return gf__error(s, "%s: %s", where, inner);
}

bool gf__error_pending(void) { return tl_status != GF_OK; }

static const char *const null_remedy[] = {
    [GF__ARG_TENSOR] = "pass a valid tensor; if it came from an earlier graft call, that call "
                       "failed",
    [GF__ARG_DEVICE] = "pass a device from gf_device_default or gf_device_find; if it came from "
                       "an earlier graft call, that call failed",
    [GF__ARG_DICT] = "pass a valid tensor dict; if it came from an earlier graft call, that "
                     "call failed",
    [GF__ARG_ARRAY] = "pass an array with as many elements as the call says",
    [GF__ARG_FUNCTION] = "pass the function to call",
    [GF__ARG_OUT] = "pass the address of the variable that receives the result",
    [GF__ARG_STRING] = "pass a NUL-terminated string",
    [GF__ARG_HOST] = "pass host memory holding the bytes the call reads",
    [GF__ARG_OPTIONS] = "pass an options struct, set up from its defaults initialiser",
};

gf_status gf__null_arg(const char *op, const char *what) {
    return gf__null_arg_of(op, what, GF__ARG_TENSOR);
}

gf_status gf__null_arg_of(const char *op, const char *what, gf__arg_kind kind) {
    bool made_by_graft = kind == GF__ARG_TENSOR || kind == GF__ARG_DEVICE || kind == GF__ARG_DICT;
    const char *remedy = (unsigned)kind < sizeof null_remedy / sizeof null_remedy[0] &&
                                 null_remedy[kind]
                             ? null_remedy[kind]
                             : null_remedy[GF__ARG_TENSOR];
    if (!made_by_graft)
        return gf__error(GF_ERR_INVALID, "%s: %s is NULL (%s)", op, what, remedy);
    /* NULL propagation: a NULL argument is usually the result of an earlier
     * failed call, whose error is the one worth reporting. Once the user
     * has read it, a NULL may also be a new mistake: the message says both. */
    if (tl_status != GF_OK && !tl_read) return tl_status;
    if (tl_status != GF_OK) {
        /* Read already: say what happened now, and keep the earlier cause
         * (and its status) in view, since it is the likely reason. */
        char earlier[GF_MSG_MAX / 2];
        snprintf(earlier, sizeof earlier, "%s", tl_message);
        return gf__error(tl_status, "%s: %s is NULL; the thread's last error (already read) "
                         "may be why: %s", op, what, earlier);
    }
    return gf__error(GF_ERR_INVALID, "%s: %s is NULL (%s)", op, what, remedy);
}

const char *gf__message(void) { return tl_status == GF_OK ? "" : tl_message; }
gf_status gf__status(void) { return tl_status; }
const char *gf_last_error(void) {
    tl_read = true;
    return gf__message();
}
gf_status gf_last_status(void) {
    tl_read = true;
    return tl_status;
}
void gf_clear_error(void) {
    tl_status = GF_OK;
    tl_read = false;
    tl_message[0] = '\0';
}

/* ---- dtypes */
static const struct {
    const char *name;
    size_t size;
    bool is_float;
    bool is_complex;
    gf_dtype real;    /* the dtype of the parts (itself when real) */
    gf_dtype complex; /* the complex dtype of these parts */
} dtype_table[] = {
    [GF_F32] = {"f32", 4, true, false, GF_F32, GF_C64},
    [GF_F64] = {"f64", 8, true, false, GF_F64, GF_C128},
    [GF_I32] = {"i32", 4, false, false, GF_I32, GF_C64},
    [GF_I64] = {"i64", 8, false, false, GF_I64, GF_C64},
    [GF_BOOL] = {"bool", 1, false, false, GF_BOOL, GF_C64},
    [GF_F16] = {"f16", 2, true, false, GF_F16, GF_C64},
    [GF_BF16] = {"bf16", 2, true, false, GF_BF16, GF_C64},
    [GF_C64] = {"c64", 8, false, true, GF_F32, GF_C64},
    [GF_C128] = {"c128", 16, false, true, GF_F64, GF_C128},
};
#define N_DTYPES ((int)(sizeof dtype_table / sizeof dtype_table[0]))
_Static_assert(N_DTYPES == GFP_DTYPE_COUNT, "one row per ABI dtype");

const char *gf_dtype_name(gf_dtype d) {
    return ((int)d >= 0 && (int)d < N_DTYPES) ? dtype_table[d].name : "?";
}
size_t gf_dtype_size(gf_dtype d) { return ((int)d >= 0 && (int)d < N_DTYPES) ? dtype_table[d].size : 0; }
bool gf_dtype_is_float(gf_dtype d) {
    return ((int)d >= 0 && (int)d < N_DTYPES) ? dtype_table[d].is_float : false;
}
bool gf_dtype_is_complex(gf_dtype d) {
    return ((int)d >= 0 && (int)d < N_DTYPES) ? dtype_table[d].is_complex : false;
}
gf_dtype gf_dtype_to_real(gf_dtype d) {
    return ((int)d >= 0 && (int)d < N_DTYPES) ? dtype_table[d].real : d;
}
gf_dtype gf_dtype_to_complex(gf_dtype d) {
    return ((int)d >= 0 && (int)d < N_DTYPES) ? dtype_table[d].complex : d;
}

/* ---- environment and logging */
const char *gf__getenv(const char *name) {
#if defined(__GLIBC__)
    return secure_getenv(name);
#else
    return getenv(name);
#endif
}

static int log_level_cached = -1;

int gf__log_level(void) {
    int lvl = __atomic_load_n(&log_level_cached, __ATOMIC_RELAXED);
    if (lvl >= 0) return lvl;
    const char *v = gf__getenv("GRAFT_LOG");
    lvl = GFP_LOG_ERROR;
    if (v) {
        if (!strcmp(v, "warn")) lvl = GFP_LOG_WARN;
        else if (!strcmp(v, "info")) lvl = GFP_LOG_INFO;
        else if (!strcmp(v, "debug")) lvl = GFP_LOG_DEBUG;
    }
    __atomic_store_n(&log_level_cached, lvl, __ATOMIC_RELAXED);
    return lvl;
}

void gf__log(gfp_log_level level, const char *fmt, ...) {
    if ((int)level > gf__log_level()) return;
    static const char *names[] = {"error", "warn", "info", "debug"};
    char buf[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(stderr, "graft[%s]: %s\n", names[level], buf);
}

gf_status gf__opts_check(const char *op, const char *type, const char *macro, uint32_t init) {
    if (init == GF_OPTS_INIT) return GF_OK;
    return gf__error(GF_ERR_INVALID, "%s: this %s was not started from %s (its init field is "
                     "0x%x, not GF_OPTS_INIT); every field now means its value, 0 included, "
                     "so a zero-initialised struct would run with zeros where PyTorch has "
                     "defaults: write `%s o = %s;` and then set the fields you change, or "
                     "pass NULL for every default", op, type, macro, (unsigned)init, type, macro);
}
