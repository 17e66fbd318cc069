/* SPDX-License-Identifier: BSD-3-Clause */
/* dist_internal.h — what the files of libgraft-dist share: the process
 * group's state, MPI serialisation, errors, dtype mapping, host staging. */
#ifndef GRAFT_DIST_INTERNAL_H
#define GRAFT_DIST_INTERNAL_H

#include <mpi.h>
#include <pthread.h>

#include "graft/dist.h"

#if defined(__GNUC__)
#define GD_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define GD_PRINTF(a, b)
#endif

typedef struct gd_group {
    bool initialized;
    bool finalized;
    bool we_started_mpi; /* gf_dist_init called MPI_Init_thread */
    MPI_Comm comm;       /* MPI_COMM_WORLD duplicated, MPI_ERRORS_RETURN */
    int rank, size, local_rank, local_size;
    int live_ddp; /* gf_ddp objects not yet destroyed */
} gd_group;

extern gd_group gd_g;
/* Every MPI call of the library holds it (MPI_THREAD_SERIALIZED). */
extern pthread_mutex_t gd_mpi_lock;

/* Records the thread's graft error; returns status. */
gf_status gd_error(gf_status status, const char *fmt, ...) GD_PRINTF(2, 3);
/* GF_ERR_PLUGIN naming the call and MPI's error string when rc != MPI_SUCCESS. */
gf_status gd_mpi_check(int rc, const char *what);
/* INVALID unless gf_dist_init succeeded; `fn` names the caller. */
gf_status gd_require_init(const char *fn);

/* MPI datatype of a graft dtype (f16 / bf16: MPI_UINT16_T with the ops of
 * gd_mpi_op), MPI_DATATYPE_NULL for an unknown one. */
MPI_Datatype gd_mpi_type(gf_dtype dtype);
/* The MPI op for a reduction (MEAN reduces as SUM). MPI_OP_NULL when the
 * dtype cannot be reduced that way (an error message is recorded). */
MPI_Op gd_mpi_op(gf_dtype dtype, gf_reduce_op op, const char *fn);
/* data[0..n) /= div, for float dtypes. */
void gd_scale_host(void *data, int64_t n, gf_dtype dtype, double div);
float gd_f16_to_f32(uint16_t h);
uint16_t gd_f32_to_f16(float f);
float gd_bf16_to_f32(uint16_t h);
uint16_t gd_f32_to_bf16(float f);
/* Creates the user-defined ops (called by gf_dist_init, freed at finalize). */
gf_status gd_ops_create(void);
void gd_ops_free(void);

/* Lets every pending work make progress (call with gd_mpi_lock held). */
void gd_progress_locked(void);
uint64_t gd_now_ns(void);

#endif
