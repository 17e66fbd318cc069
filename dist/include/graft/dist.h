/* SPDX-License-Identifier: BSD-3-Clause */
/* graft/dist.h — data-parallel training over MPI (library libgraft-dist).
 *
 * Built when CMake finds MPI (GRAFT_WITH_MPI=AUTO|ON|OFF); link graft::dist
 * (or -lgraft-dist -lgraft). libgraft itself never needs MPI. docs/distributed.md
 * is the guide: launching with mpirun, one device per rank, several machines,
 * what happens when a rank dies.
 *
 * One process group: every rank of the MPI job (MPI_COMM_WORLD, duplicated
 * so graft's messages never mix with the program's own). Every collective
 * must be called by every rank, in the same order, as in MPI.
 *
 * Conventions are graft's: functions return a gf_status (or NULL / a value
 * with the thread's error set); messages say what and how to fix. Library
 * code never aborts the job: MPI errors are returned (MPI_ERRORS_RETURN on
 * graft's communicator) as GF_ERR_PLUGIN with MPI's own error string.
 *
 * Errors every rank agrees on: before moving data, each collective
 * exchanges a small descriptor (which collective, dtype, shape, root, op,
 * and whether the call's arguments were valid on that rank). Tensors whose
 * shapes or dtypes differ across ranks, different collectives, different
 * roots, or a bad argument on one rank make the call fail on EVERY rank with
 * the same status (SHAPE, DTYPE or INVALID) and a message naming the ranks,
 * instead of hanging or reducing garbage. */
#ifndef GRAFT_DIST_H
#define GRAFT_DIST_H

#include "graft.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ process group */

/* Initialises MPI (MPI_Init_thread, MPI_THREAD_SERIALIZED: graft serialises
 * its own MPI calls) unless the program already did, and sets up graft's
 * communicator. argc / argv may be NULL. Idempotent.
 * Fails: PLUGIN when MPI cannot start (the message says to launch with
 * mpirun), INVALID after gf_dist_finalize (MPI cannot be started twice). */
GF_API gf_status gf_dist_init(int *argc, char ***argv);
/* Frees graft's communicator; finalises MPI if gf_dist_init started it.
 * Every DDP object must be destroyed first (INVALID otherwise). Harmless
 * when not initialised. */
GF_API gf_status gf_dist_finalize(void);
GF_API bool gf_dist_is_initialized(void);
/* Rank in the job, number of ranks, rank among the ranks of this machine
 * (MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)) and their number. -1 (with
 * INVALID) before gf_dist_init. */
GF_API int gf_dist_rank(void);
GF_API int gf_dist_world_size(void);
GF_API int gf_dist_local_rank(void);
GF_API int gf_dist_local_size(void);

/* The device this rank should use. spec NULL = GRAFT_DEVICE (unset: "cpu").
 * A priority list ("cuda,opencl,cpu") is tried left to right. An entry with
 * an index ("cuda:1") names that device on every rank. An entry without one
 * ("cuda") picks <type>:(local rank mod n), where n counts the devices of
 * that type that are the same model as <type>:0 and not host-addressable:
 * several GPUs of one machine are shared out among its ranks, while host
 * devices (every "cpu") are used by all ranks as they are. Fails as
 * gf_device_find, and INVALID before gf_dist_init. */
GF_API gf_device *gf_dist_device(const char *spec);

/* ------------------------------------------------------------ collectives
 * Tensors of any device and dtype graft has (f16 / bf16 are reduced in f32
 * and rounded back). Host-addressable contiguous tensors are handed to MPI
 * in place; other tensors (strided views, device memory the host cannot
 * address) go through a contiguous host buffer, and the result is written
 * back into the tensor (its version counter is bumped). A tensor that
 * requires grad may be passed (parameters): the write is not recorded by
 * autograd, as with torch.no_grad. Sizes 0 are valid (nothing moves but the
 * descriptor). */
typedef enum gf_reduce_op {
    GF_REDUCE_SUM = 0,
    GF_REDUCE_MEAN = 1, /* the sum divided by the world size; float dtypes only */
    GF_REDUCE_MAX = 2,
    GF_REDUCE_MIN = 3
} gf_reduce_op;
/* bool: SUM and MAX are logical or, MIN logical and. */

/* t = op over ranks of t, on every rank.
 * Fails: SHAPE / DTYPE (differs across ranks), DTYPE (MEAN of an integer or
 * bool tensor), INVALID, PLUGIN (MPI). */
GF_API gf_status gf_dist_all_reduce(gf_tensor *t, gf_reduce_op op);
/* t = root's t on every rank. Fails as all_reduce; INVALID for a root out of
 * range or different across ranks. */
GF_API gf_status gf_dist_broadcast(gf_tensor *t, int root);
/* Concatenates every rank's `in` into out, rank 0 first. out has the dtype
 * of `in` and either the shape [world * n0, n1, ...] (concatenated along dim
 * 0) or [world, n0, n1, ...] (stacked; the only choice for a 0-dim input).
 * Fails: SHAPE for an out of another shape, DTYPE, as all_reduce. */
GF_API gf_status gf_dist_all_gather(gf_tensor *out, const gf_tensor *in);
/* Reduces `in` over ranks and leaves rank r the r-th of world equal parts:
 * in is [world * n0, n1, ...] or [world, n0, n1, ...] for out [n0, n1, ...].
 * Fails as all_gather. */
GF_API gf_status gf_dist_reduce_scatter(gf_tensor *out, const gf_tensor *in, gf_reduce_op op);
GF_API gf_status gf_dist_barrier(void);

/* Non-blocking all-reduce of host memory (count elements of dtype at data,
 * which must stay valid and untouched until the work is waited for): the
 * building block of communication hooks. MEAN divides when the work is
 * waited for. No descriptor is exchanged: the caller guarantees that every
 * rank starts the same reductions in the same order (DDP does). Returns a
 * work to give to gf_dist_work_wait exactly once, or NULL with the error. */
typedef struct gf_dist_work gf_dist_work;
GF_API gf_dist_work *gf_dist_all_reduce_host_async(void *data, int64_t count, gf_dtype dtype,
                                                   gf_reduce_op op);
/* Lets pending works progress; *done (may be NULL) says whether this one is
 * complete. Fails: PLUGIN (MPI). */
GF_API gf_status gf_dist_work_test(gf_dist_work *work, bool *done);
/* Waits for the work and frees it (also when it fails). */
GF_API gf_status gf_dist_work_wait(gf_dist_work *work);

/* ------------------------------------------------------------ data parallel
 * gf_ddp keeps the gradients of replicated parameters equal on every rank,
 * as PyTorch's DistributedDataParallel: each rank runs forward and backward
 * on its own part of the global batch; a post-accumulate-grad hook on every
 * parameter copies its gradient into a bucket (parameters in reverse order of
 * registration, which is roughly the order backward produces them); a full
 * bucket starts a non-blocking all-reduce at once, while backward goes on;
 * buckets start in the same order on every rank. gf_ddp_wait, before the
 * optimiser step, finishes the reductions and writes the mean gradient back
 * into every parameter's .grad.
 *
 *   gf_ddp *ddp = gf_ddp_create(params, n, NULL);  // broadcasts rank 0's values
 *   for each batch:
 *       gf_optimizer_zero_grad(opt);
 *       gf_backward(loss_of_my_shard, NULL, NULL);
 *       gf_ddp_wait(ddp);
 *       gf_optimizer_step(opt);
 *
 * The mean over ranks of each rank's mean loss is the global batch's mean
 * loss when the shards are of equal size, so the update equals that of one
 * process on the whole batch. */
typedef struct gf_ddp gf_ddp;

/* One bucket as a communication hook sees it: `numel` elements of `dtype`
 * at `data` (host memory), the gradients of its parameters end to end. */
typedef struct gf_ddp_bucket {
    int index; /* 0 = the first bucket started */
    void *data;
    int64_t numel;
    gf_dtype dtype;
    int world_size;
} gf_ddp_bucket;

/* Replaces the reduction of buckets. launch starts it (non-blocking, e.g.
 * with gf_dist_all_reduce_host_async) and may keep a state in *state;
 * finish completes it and leaves the MEAN over ranks in bucket->data. Every
 * rank must use the same hook. Errors are returned by gf_ddp_wait. */
typedef struct gf_ddp_comm_hook {
    gf_status (*launch)(const gf_ddp_bucket *bucket, void **state, void *user);
    gf_status (*finish)(const gf_ddp_bucket *bucket, void *state, void *user);
    void *user;
} gf_ddp_comm_hook;
/* A hook that sends gradients as f16 (half the bytes; PyTorch's
 * fp16_compress_hook): divides by the world size, rounds to f16, all-reduces
 * the sum, converts back. Lossy: about 3 significant digits. */
GF_API const gf_ddp_comm_hook *gf_ddp_fp16_compress_hook(void);

typedef struct gf_ddp_opts {
    size_t bucket_cap_bytes;   /* 0 = 25 MiB (PyTorch's default) */
    size_t first_bucket_bytes; /* 0 = 1 MiB: the first bucket fills early */
    bool skip_broadcast;       /* do not broadcast rank 0's parameters */
    const gf_ddp_comm_hook *comm_hook; /* NULL: all-reduce, divide by world */
} gf_ddp_opts;

/* Registers the parameters (float leaves that require grad, any devices;
 * retained until gf_ddp_destroy) and broadcasts rank 0's values to every
 * rank. Collective: every rank must pass the same number of parameters with
 * the same shapes and dtypes, in the same order (checked: SHAPE / DTYPE on
 * every rank otherwise). Fails also: INVALID (not initialised, bad options,
 * a parameter that is not a float leaf requiring grad, the same parameter
 * twice). opts NULL = defaults. */
GF_API gf_ddp *gf_ddp_create(gf_tensor *const *params, int n, const gf_ddp_opts *opts);
/* Completes the iteration's reductions: starts the buckets backward did not
 * fill (a parameter without a gradient on this rank contributes zeros and
 * gets the mean of the others'), waits for all, writes the mean gradients
 * into .grad. Collective. Call it after backward and before the optimiser
 * step; without a backward since the last wait it does nothing. In no_sync
 * mode it does nothing. Fails: PLUGIN (MPI), and the hook's errors. */
GF_API gf_status gf_ddp_wait(gf_ddp *ddp);
/* no_sync: while on, backward only accumulates into .grad locally (the
 * hooks copy nothing); the first backward after turning it off reduces the
 * accumulated gradients. Equivalent to PyTorch's `with ddp.no_sync():`.
 * Every rank must use the same pattern. Returns the previous setting. */
GF_API bool gf_ddp_set_no_sync(gf_ddp *ddp, bool no_sync);
GF_API void gf_ddp_destroy(gf_ddp *ddp);

/* What happened to bucket i in the last synchronised iteration: which
 * parameters it holds (indices into gf_ddp_create's array, the first being
 * the last registered of the bucket), and when its reduction started,
 * counted in parameter hooks fired so far in that backward (hooks_before_launch
 * < n_params of the whole ddp: it started before backward ended) and in
 * CLOCK_MONOTONIC nanoseconds. */
typedef struct gf_ddp_bucket_info {
    int n_params;
    int first_param, last_param; /* first_param >= last_param */
    size_t bytes;
    gf_dtype dtype;
    bool launched_in_backward; /* false: started by gf_ddp_wait */
    int hooks_before_launch;
    uint64_t launch_ns, finish_ns;
} gf_ddp_bucket_info;
GF_API int gf_ddp_bucket_count(const gf_ddp *ddp);
GF_API gf_status gf_ddp_get_bucket_info(const gf_ddp *ddp, int i, gf_ddp_bucket_info *info);

/* ------------------------------------------------------------ sampling */
/* The indices of rank's shard of 0..n-1 for an epoch, as PyTorch's
 * DistributedSampler: with shuffle, a permutation drawn from (seed, epoch)
 * (the same on every rank: pass the same seed, a new epoch each epoch);
 * the list is padded by repeating its start (or, with drop_last, cut) to a
 * multiple of world; rank r takes elements r, r + world, r + 2 world, ...
 * So local batch j of every rank together form global batch j of one
 * process running world * local batch on the same list. Needs no MPI.
 * Writes at most cap indices to out, their number (gf_dist_shard_size) to
 * *count. Fails: INVALID (n < 0, rank outside [0, world), cap too small),
 * OUT_OF_MEMORY. */
GF_API int64_t gf_dist_shard_size(int64_t n, int world, bool drop_last);
GF_API gf_status gf_dist_shard_indices(int64_t n, uint64_t seed, int64_t epoch, bool shuffle,
                                       bool drop_last, int rank, int world, int64_t *out,
                                       int64_t cap, int64_t *count);

#ifdef __cplusplus
}
#endif
#endif
