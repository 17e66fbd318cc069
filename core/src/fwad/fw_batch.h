/* SPDX-License-Identifier: BSD-3-Clause */
/* fw_batch.h — gf_jacfwd's batched pass (fw_batch.c). */
#ifndef GRAFT_FW_BATCH_H
#define GRAFT_FW_BATCH_H

#include <stdbool.h>

#include "graft/forward_ad.h"

typedef enum { GF__JAC_AUTO, GF__JAC_LOOP, GF__JAC_BATCHED } gf__jac_mode;

/* The path GRAFT_JACFWD asks for (auto when unset). */
gf__jac_mode gf__jacfwd_mode(void);

/* Writes jac[j * n_in + i] for every output j: the Jacobian blocks with
 * respect to input i (which has at least one element), by one batched
 * forward pass. On failure writes nothing; *refused is true when the
 * failure is only that some op could not batch (the loop will do). */
gf_status gf__jacfwd_batched(gf_func_fn f, gf_tensor *const *inputs, int n_in, int i, int n_out,
                             void *user, gf_tensor **jac, bool *refused, const char *op);

#endif
