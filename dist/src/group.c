/* SPDX-License-Identifier: BSD-3-Clause */
/* group.c — the process group: MPI start and end, ranks, the device of a
 * rank, errors, and the reduction ops graft adds to MPI (f16, bf16). */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dist_internal.h"

gd_group gd_g = {.comm = MPI_COMM_NULL, .rank = -1, .size = -1, .local_rank = -1,
                 .local_size = -1};
pthread_mutex_t gd_mpi_lock = PTHREAD_MUTEX_INITIALIZER;

gf_status gd_error(gf_status status, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return gf_set_error(status, "%s", msg);
}

gf_status gd_mpi_check(int rc, const char *what) {
    if (rc == MPI_SUCCESS) return GF_OK;
    char s[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    if (MPI_Error_string(rc, s, &len) != MPI_SUCCESS) snprintf(s, sizeof s, "MPI error %d", rc);
    return gd_error(GF_ERR_PLUGIN, "%s failed: %s (a rank may have died or the network failed; "
                    "the job cannot go on: end it and restart from a checkpoint)", what, s);
}

gf_status gd_require_init(const char *fn) {
    if (gd_g.initialized) return GF_OK;
    return gd_error(GF_ERR_INVALID, "%s: the process group is not initialised (call "
                    "gf_dist_init first, in a program launched by mpirun)", fn);
}

uint64_t gd_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------ start, end */

gf_status gf_dist_init(int *argc, char ***argv) {
    if (gd_g.initialized) return GF_OK;
    if (gd_g.finalized)
        return gd_error(GF_ERR_INVALID, "gf_dist_init: MPI was finalised and cannot be started "
                        "again in this process (call gf_dist_finalize only at the end)");
    int inited = 0, fin = 0;
    MPI_Initialized(&inited);
    MPI_Finalized(&fin);
    if (fin)
        return gd_error(GF_ERR_INVALID, "gf_dist_init: MPI was already finalised by the program");
    pthread_mutex_lock(&gd_mpi_lock);
    gf_status s = GF_OK;
    if (!inited) {
        int provided = 0;
        /* MPI_Init errors abort by MPI's rules: nothing graft can change. */
        int rc = MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided);
        if (rc != MPI_SUCCESS) {
            pthread_mutex_unlock(&gd_mpi_lock);
            return gd_error(GF_ERR_PLUGIN, "gf_dist_init: MPI_Init_thread failed (%d): launch "
                            "the program with mpirun / mpiexec", rc);
        }
        gd_g.we_started_mpi = true;
    }
    /* Started by the program at a lower thread level: graft makes its MPI
     * calls from the threads that call it, under one lock, which
     * MPI_THREAD_FUNNELED programs must keep to one thread themselves. */
    MPI_Comm node = MPI_COMM_NULL;
    s = gd_mpi_check(MPI_Comm_dup(MPI_COMM_WORLD, &gd_g.comm), "MPI_Comm_dup");
    if (s == GF_OK)
        s = gd_mpi_check(MPI_Comm_set_errhandler(gd_g.comm, MPI_ERRORS_RETURN),
                         "MPI_Comm_set_errhandler");
    if (s == GF_OK) s = gd_mpi_check(MPI_Comm_rank(gd_g.comm, &gd_g.rank), "MPI_Comm_rank");
    if (s == GF_OK) s = gd_mpi_check(MPI_Comm_size(gd_g.comm, &gd_g.size), "MPI_Comm_size");
    /* Ranks of this machine: the ones that can share memory. */
    if (s == GF_OK)
        s = gd_mpi_check(MPI_Comm_split_type(gd_g.comm, MPI_COMM_TYPE_SHARED, gd_g.rank,
                                             MPI_INFO_NULL, &node),
                         "MPI_Comm_split_type");
    if (s == GF_OK) s = gd_mpi_check(MPI_Comm_rank(node, &gd_g.local_rank), "MPI_Comm_rank");
    if (s == GF_OK) s = gd_mpi_check(MPI_Comm_size(node, &gd_g.local_size), "MPI_Comm_size");
    if (node != MPI_COMM_NULL) MPI_Comm_free(&node);
    if (s == GF_OK) s = gd_ops_create();
    if (s != GF_OK) {
        if (gd_g.comm != MPI_COMM_NULL) MPI_Comm_free(&gd_g.comm);
        gd_g.comm = MPI_COMM_NULL;
        pthread_mutex_unlock(&gd_mpi_lock);
        return s;
    }
    gd_g.initialized = true;
    pthread_mutex_unlock(&gd_mpi_lock);
    return GF_OK;
}

gf_status gf_dist_finalize(void) {
    if (!gd_g.initialized) return GF_OK;
    if (gd_g.live_ddp > 0)
        return gd_error(GF_ERR_INVALID, "gf_dist_finalize: %d DDP object(s) still alive: "
                        "gf_ddp_destroy them first", gd_g.live_ddp);
    pthread_mutex_lock(&gd_mpi_lock);
    gd_ops_free();
    MPI_Comm_free(&gd_g.comm);
    gd_g.comm = MPI_COMM_NULL;
    gf_status s = GF_OK;
    if (gd_g.we_started_mpi) s = gd_mpi_check(MPI_Finalize(), "MPI_Finalize");
    gd_g.initialized = false;
    gd_g.finalized = gd_g.we_started_mpi;
    gd_g.rank = gd_g.size = gd_g.local_rank = gd_g.local_size = -1;
    pthread_mutex_unlock(&gd_mpi_lock);
    return s;
}

bool gf_dist_is_initialized(void) { return gd_g.initialized; }

static int group_value(const char *fn, int v) {
    return gd_require_init(fn) == GF_OK ? v : -1;
}
int gf_dist_rank(void) { return group_value("gf_dist_rank", gd_g.rank); }
int gf_dist_world_size(void) { return group_value("gf_dist_world_size", gd_g.size); }
int gf_dist_local_rank(void) { return group_value("gf_dist_local_rank", gd_g.local_rank); }
int gf_dist_local_size(void) { return group_value("gf_dist_local_size", gd_g.local_size); }

/* ------------------------------------------------------------ device */

/* One entry of the list: "type" alone picks among identical devices. */
static gf_device *pick_one(const char *entry) {
    if (strchr(entry, ':')) return gf_device_find(entry);
    gf_device *first = gf_device_find(entry);
    if (!first) return NULL;
    gf_device_info info0;
    if (gf_device_get_info(first, &info0) != GF_OK) return NULL;
    if (info0.host_addressable) return first;
    /* The devices of that type, from the same plugin, the same model. */
    gf_device *same[64];
    int n = 0;
    for (int i = 0; i < gf_device_count() && n < 64; i++) {
        gf_device *d = gf_device_at(i);
        if (!d || strcmp(gf_device_type(d), gf_device_type(first)) ||
            strcmp(gf_device_plugin(d), gf_device_plugin(first)) ||
            strcmp(gf_device_name(d), gf_device_name(first)))
            continue;
        same[n++] = d;
    }
    return n ? same[gd_g.local_rank % n] : first;
}

gf_device *gf_dist_device(const char *spec) {
    if (gd_require_init("gf_dist_device") != GF_OK) return NULL;
    if (!spec) spec = getenv("GRAFT_DEVICE");
    if (!spec || !*spec) spec = "cpu";
    char list[512];
    if (strlen(spec) >= sizeof list) {
        gd_error(GF_ERR_INVALID, "gf_dist_device: device list too long (%zu characters)",
                 strlen(spec));
        return NULL;
    }
    strcpy(list, spec);
    char msg[1024] = "";
    gf_status first_status = GF_OK;
    for (char *save = NULL, *e = strtok_r(list, ",", &save); e; e = strtok_r(NULL, ",", &save)) {
        while (*e == ' ') e++;
        gf_device *d = pick_one(e);
        if (d) {
            if (first_status != GF_OK) gf_clear_error(); /* an earlier entry's failure */
            return d;
        }
        if (first_status == GF_OK) {
            first_status = gf_last_status();
            snprintf(msg, sizeof msg, "%s", gf_last_error());
        }
    }
    gd_error(first_status == GF_OK ? GF_ERR_NOT_FOUND : first_status,
             "gf_dist_device: none of \"%s\" is available on rank %d: %s", spec, gd_g.rank, msg);
    return NULL;
}

/* ------------------------------------------------------------ f16, bf16 */

float gd_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else { /* subnormal: normalise */
            int e = -1;
            do {
                e++;
                man <<= 1;
            } while (!(man & 0x400u));
            bits = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ffu) << 13);
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | (man << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t gd_f32_to_f16(float f) { /* round to nearest even */
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0));
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds past 65504 */
    if (ax < 0x38800000u) { /* subnormal or zero in f16 */
        if (ax < 0x33000000u) return (uint16_t)sign;
        uint32_t e = ax >> 23, m = (ax & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126 - e; /* 14 + (112 - e) ... in [14, 24] */
        uint32_t r = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1))) r++;
        return (uint16_t)(sign | r);
    }
    uint32_t r = ((ax >> 13) - (112u << 10)), rem = ax & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1))) r++;
    return (uint16_t)(sign | r);
}

float gd_bf16_to_f32(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t gd_f32_to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u); /* quiet NaN */
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

/* User-defined MPI ops over 16-bit floats, computed in f32. */
#define HALF_OP(name, to32, from32, expr)                                          \
    static void name(void *in, void *inout, int *len, MPI_Datatype *dt) {          \
        (void)dt;                                                                  \
        const uint16_t *a = in;                                                    \
        uint16_t *b = inout;                                                       \
        for (int i = 0; i < *len; i++) {                                           \
            float x = to32(a[i]), y = to32(b[i]);                                  \
            b[i] = from32(expr);                                                   \
        }                                                                          \
    }
HALF_OP(f16_sum, gd_f16_to_f32, gd_f32_to_f16, x + y)
HALF_OP(f16_max, gd_f16_to_f32, gd_f32_to_f16, (x > y || x != x) ? x : y)
HALF_OP(f16_min, gd_f16_to_f32, gd_f32_to_f16, (x < y || x != x) ? x : y)
HALF_OP(bf16_sum, gd_bf16_to_f32, gd_f32_to_bf16, x + y)
HALF_OP(bf16_max, gd_bf16_to_f32, gd_f32_to_bf16, (x > y || x != x) ? x : y)
HALF_OP(bf16_min, gd_bf16_to_f32, gd_f32_to_bf16, (x < y || x != x) ? x : y)

static MPI_Op half_ops[2][3] = {{MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL},
                                {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL}};

gf_status gd_ops_create(void) {
    MPI_User_function *fns[2][3] = {{f16_sum, f16_max, f16_min}, {bf16_sum, bf16_max, bf16_min}};
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++) {
            gf_status s = gd_mpi_check(MPI_Op_create(fns[i][j], 1, &half_ops[i][j]),
                                       "MPI_Op_create");
            if (s != GF_OK) {
                gd_ops_free();
                return s;
            }
        }
    return GF_OK;
}

void gd_ops_free(void) {
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            if (half_ops[i][j] != MPI_OP_NULL) MPI_Op_free(&half_ops[i][j]);
}

MPI_Datatype gd_mpi_type(gf_dtype dtype) {
    switch (dtype) {
    case GF_F32: return MPI_FLOAT;
    case GF_F64: return MPI_DOUBLE;
    case GF_I32: return MPI_INT32_T;
    case GF_I64: return MPI_INT64_T;
    case GF_BOOL: return MPI_UINT8_T; /* graft's bool is one byte, 0 or 1 */
    case GF_F16:
    case GF_BF16: return MPI_UINT16_T;
    case GF_C64: return MPI_C_FLOAT_COMPLEX;
    case GF_C128: return MPI_C_DOUBLE_COMPLEX;
    }
    return MPI_DATATYPE_NULL;
}

MPI_Op gd_mpi_op(gf_dtype dtype, gf_reduce_op op, const char *fn) {
    if (op < GF_REDUCE_SUM || op > GF_REDUCE_MIN) {
        gd_error(GF_ERR_INVALID, "%s: unknown reduction %d (use GF_REDUCE_SUM, MEAN, MAX or MIN)",
                 fn, (int)op);
        return MPI_OP_NULL;
    }
    if (op == GF_REDUCE_MEAN && !gf_dtype_is_float(dtype) && !gf_dtype_is_complex(dtype)) {
        gd_error(GF_ERR_DTYPE, "%s: GF_REDUCE_MEAN of a %s tensor would not be exact: reduce "
                 "with GF_REDUCE_SUM and divide, or convert to a float dtype first", fn,
                 gf_dtype_name(dtype));
        return MPI_OP_NULL;
    }
    int k = op == GF_REDUCE_MAX ? 1 : op == GF_REDUCE_MIN ? 2 : 0;
    switch (dtype) {
    case GF_F16: return half_ops[0][k];
    case GF_BF16: return half_ops[1][k];
    case GF_BOOL: return k == 2 ? MPI_BAND : MPI_BOR; /* on bytes 0 / 1: and, or */
    case GF_F32:
    case GF_F64:
    case GF_I32:
    case GF_I64: return k == 0 ? MPI_SUM : k == 1 ? MPI_MAX : MPI_MIN;
    case GF_C64:
    case GF_C128:
        if (k == 0) return MPI_SUM;
        gd_error(GF_ERR_DTYPE, "%s: GF_REDUCE_MAX / MIN are not defined for complex tensors (%s "
                 "has no ordering); reduce gf_real / gf_abs of it instead", fn,
                 gf_dtype_name(dtype));
        return MPI_OP_NULL;
    }
    gd_error(GF_ERR_DTYPE, "%s: unknown dtype %d", fn, (int)dtype);
    return MPI_OP_NULL;
}

void gd_scale_host(void *data, int64_t n, gf_dtype dtype, double div) {
    switch (dtype) {
    case GF_F32:
        for (int64_t i = 0; i < n; i++) ((float *)data)[i] = (float)(((float *)data)[i] / div);
        break;
    case GF_F64:
        for (int64_t i = 0; i < n; i++) ((double *)data)[i] /= div;
        break;
    case GF_C64: /* both parts */
        for (int64_t i = 0; i < 2 * n; i++) ((float *)data)[i] = (float)(((float *)data)[i] / div);
        break;
    case GF_C128:
        for (int64_t i = 0; i < 2 * n; i++) ((double *)data)[i] /= div;
        break;
    case GF_F16:
        for (int64_t i = 0; i < n; i++) {
            uint16_t *p = (uint16_t *)data + i;
            *p = gd_f32_to_f16((float)(gd_f16_to_f32(*p) / div));
        }
        break;
    case GF_BF16:
        for (int64_t i = 0; i < n; i++) {
            uint16_t *p = (uint16_t *)data + i;
            *p = gd_f32_to_bf16((float)(gd_bf16_to_f32(*p) / div));
        }
        break;
    default: break;
    }
}
