/* SPDX-License-Identifier: BSD-3-Clause */
/* fw_batch.h — the batched passes of gf_jacfwd (fw_batch.c) and gf_jacrev
 * (fw_jacrev.c). */
#ifndef GRAFT_FW_BATCH_H
#define GRAFT_FW_BATCH_H

#include <stdbool.h>

#include "graft/forward_ad.h"

typedef enum { GF__JAC_AUTO, GF__JAC_LOOP, GF__JAC_BATCHED } gf__jac_mode;

/* The path GRAFT_JACFWD / GRAFT_JACREV asks for (auto when unset). */
gf__jac_mode gf__jacfwd_mode(void);
gf__jac_mode gf__jacrev_mode(void);

/* Rows k0 .. k0 + c of eye(n) as [c, *like]: c basis vectors of like's
 * space stacked on a leading dim. New reference, no scope. */
gf_tensor *gf__jac_basis(const gf_tensor *like, int64_t n, int64_t k0, int64_t c);
/* The number of basis vectors per batched pass: chunk (GF_JAC_CHUNK_ALL
 * or >= 1) capped at n, at least 1. */
int64_t gf__jac_chunk(int64_t chunk, int64_t n);

/* The sizes of a Jacobian block, a's ++ b's (rank a + b), or SHAPE (named
 * after op, message set) when that rank would exceed GF_MAX_RANK; sizes
 * holds GF_MAX_RANK. fw_transforms.c. */
gf_status gf__jac_joined(const gf_tensor *a, const gf_tensor *b, int64_t *sizes, int *rank,
                         const char *op);

/* Writes jac[j * n_in + i] for every output j: the Jacobian blocks with
 * respect to input i (which has at least one element), by batched forward
 * passes of at most chunk basis vectors each (GF_JAC_CHUNK_ALL: one pass).
 * On failure writes nothing; *refused is true when the failure is only
 * that some op could not batch (the loop will do). */
gf_status gf__jacfwd_batched(gf_func_fn f, gf_tensor *const *inputs, int n_in, int i, int n_out,
                             void *user, int64_t chunk, gf_tensor **jac, bool *refused,
                             const char *op);

/* The rows of the Jacobian of out (which has a graph back to the n_in
 * inputs in, each requiring grad) by backward passes whose grad_output
 * carries a batched tangent of at most chunk basis vectors of out's space:
 * rows[i] (a new reference) gets [numel(out), *in_i]. On failure writes
 * nothing; *refused as above. The graph is kept (retain_graph). */
gf_status gf__jacrev_batched(gf_tensor *out, gf_tensor *const *in, int n_in, int64_t chunk,
                             gf_tensor **rows, bool *refused, const char *op);

#endif
