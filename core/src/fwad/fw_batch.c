/* SPDX-License-Identifier: BSD-3-Clause */
/* fw_batch.c — the Jacobian with respect to one input in one batched
 * forward pass (torch.func.jacfwd's vmap over the basis).
 *
 * The input of n elements gets, at a batched dual level of count n, the
 * tangent eye(n) reshaped to [n, *input]: the n basis vectors stacked on a
 * leading dim. Every rule applied with gf__fw_apply_batched carries that
 * dim through (fw_level.c); an output's tangent [n, *out] is then the
 * Jacobian block, transposed. A rule, view path, in-place write or custom
 * function that cannot carry it refuses the level (gf__fw_batch_refuse):
 * the pass is discarded and the caller computes the block column by column,
 * so the answer is the loop's either way.
 *
 * GRAFT_JACFWD (read at each call) picks the path: unset or "auto" =
 * batched with the loop as fallback; "loop" = always the loop; "batched" =
 * batched or an UNSUPPORTED error naming the op that refused (tests and
 * graft-bench use it to pin the path they measure). */
#include <stdlib.h>
#include <string.h>

#include "autograd/ag_internal.h"
#include "fw_internal.h"
#include "fw_batch.h"

gf__jac_mode gf__jacfwd_mode(void) {
    const char *v = gf__getenv("GRAFT_JACFWD");
    if (v && !strcmp(v, "loop")) return GF__JAC_LOOP;
    if (v && !strcmp(v, "batched")) return GF__JAC_BATCHED;
    return GF__JAC_AUTO;
}

/* Rows k0 .. k0 + c of eye(n) as [c, *like]. New reference, no scope. */
static gf_tensor *basis(const gf_tensor *like, int64_t n) {
    int64_t s[2] = {n, n};
    gf_tensor *z = gf_zeros(s, 2, like->dtype, like->storage->device);
    gf_tensor *dg = z ? gf_diagonal(z, 0, 0, 1) : NULL;
    gf_status st = dg ? gf_fill_(dg, 1.0) : gf__status();
    gf_tensor_release(dg);
    int64_t bs[GF_MAX_RANK + 1];
    bs[0] = n;
    memcpy(bs + 1, like->sizes, sizeof(int64_t) * (size_t)like->rank);
    gf_tensor *r = st == GF_OK ? gf_reshape(z, bs, like->rank + 1) : NULL;
    gf_tensor_release(z);
    return r;
}

/* The block of output o (tangent tan [n, *o], or NULL: zeros) as
 * [*o, *in]. New reference, no scope. */
static gf_tensor *block(const gf_tensor *o, gf_tensor *tan, const gf_tensor *in, int64_t n) {
    int64_t no = gf__numel(o), s2[2] = {n, no}, sizes[GF_MAX_RANK];
    memcpy(sizes, o->sizes, sizeof(int64_t) * (size_t)o->rank);
    memcpy(sizes + o->rank, in->sizes, sizeof(int64_t) * (size_t)in->rank);
    int rank = o->rank + in->rank;
    if (!tan) return gf_zeros(sizes, rank, o->dtype, o->storage->device);
    gf_scope_begin();
    gf_tensor *r = gf_contiguous(gf_transpose(gf_reshape(tan, s2, 2), 0, 1));
    r = gf_scope_keep(gf_reshape(r, sizes, rank));
    gf_scope_end();
    if (r && !gf__is_contiguous(r)) {
        gf_tensor *c = gf_contiguous(r);
        gf_tensor_release(r);
        r = c;
    }
    return r;
}

gf_status gf__jacfwd_batched(gf_func_fn f, gf_tensor *const *inputs, int n_in, int i, int n_out,
                             void *user, gf_tensor **jac, bool *refused, const char *op) {
    *refused = false;
    const gf_tensor *in = inputs[i];
    int64_t n = gf__numel(in);
    if (in->rank + 1 > GF_MAX_RANK) {
        *refused = true;
        return gf__error(GF_ERR_UNSUPPORTED, "%s: input %d has rank %d; a batched tangent needs "
                         "one more dim than GF_MAX_RANK allows", op, i, in->rank);
    }
    int level;
    gf_status s = gf__fw_level_enter_batched(&level, n);
    if (s != GF_OK) return s;
    gf_tensor **x = calloc((size_t)n_in, sizeof *x), **o = calloc((size_t)n_out, sizeof *o);
    if (!x || !o) s = gf__error(GF_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    for (int k = 0; k < n_in && s == GF_OK; k++) {
        if (k != i) {
            x[k] = gf_tensor_retain(inputs[k]);
            continue;
        }
        /* the dual: a view of the input (its history kept) with the basis
         * as its tangent */
        gf_tensor *seed = basis(in, n);
        x[k] = seed ? gf__fw_batched_dual(inputs[k], seed, level) : NULL;
        if (!x[k]) s = gf__status();
        gf_tensor_release(seed);
    }
    if (s == GF_OK) {
        uint64_t seq = gf__error_seq();
        s = f(x, n_in, o, n_out, user);
        if (s != GF_OK) s = gf__callback_failed(s, seq, "%s: the function", op);
        for (int j = 0; j < n_out && s == GF_OK; j++)
            if (!o[j]) s = gf__error(GF_ERR_INVALID, "%s: the function returned GF_OK but left "
                                     "output %d NULL", op, j);
            else if (!gf__dtype_differentiable(o[j]->dtype) || gf_dtype_is_complex(o[j]->dtype))
                s = gf__error(GF_ERR_DTYPE, "%s: output %d of the function is %s; a Jacobian "
                              "needs real floating-point outputs", op, j,
                              gf_dtype_name(o[j]->dtype));
    }
    const char *who = NULL;
    if (gf__fw_batch_refused(level, &who)) {
        *refused = true;
        s = gf__error(GF_ERR_UNSUPPORTED, "%s: the Jacobian with respect to input %d could not "
                      "be computed in one batched pass: %s does not handle batched tangents",
                      op, i, who ? who : "an op");
    }
    for (int j = 0; j < n_out && s == GF_OK; j++) {
        gf_tensor *tan = gf__fw_tangent(o[j], level);
        if (gf__fw_batch_refused(level, &who)) {
            gf_tensor_release(tan);
            *refused = true;
            s = gf__error(GF_ERR_UNSUPPORTED, "%s: output %d's batched tangent could not be read "
                          "(%s)", op, j, who ? who : "a view");
            break;
        }
        jac[j * n_in + i] = block(o[j], tan, in, n);
        gf_tensor_release(tan);
        if (!jac[j * n_in + i]) s = gf__status();
    }
    if (s != GF_OK)
        for (int j = 0; j < n_out; j++) {
            gf_tensor_release(jac[j * n_in + i]);
            jac[j * n_in + i] = NULL;
        }
    for (int j = 0; o && j < n_out; j++) gf_tensor_release(o[j]);
    for (int k = 0; x && k < n_in; k++) gf_tensor_release(x[k]);
    free(o);
    free(x);
    gf_status e = gf_fwad_level_exit(level);
    return s != GF_OK ? s : e;
}
