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
 * With a chunk size k (gf_jac_opts), the basis is split into passes of at
 * most k vectors (rows k0 .. k0 + k of eye(n)); their tangents are joined
 * along the batch dim before the block is transposed.
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

static gf__jac_mode mode_of(const char *var) {
    const char *v = gf__getenv(var);
    if (v && !strcmp(v, "loop")) return GF__JAC_LOOP;
    if (v && !strcmp(v, "batched")) return GF__JAC_BATCHED;
    return GF__JAC_AUTO;
}

gf__jac_mode gf__jacfwd_mode(void) { return mode_of("GRAFT_JACFWD"); }
gf__jac_mode gf__jacrev_mode(void) { return mode_of("GRAFT_JACREV"); }

int64_t gf__jac_chunk(int64_t chunk, int64_t n) {
    if (chunk == GF_JAC_CHUNK_ALL || chunk > n) chunk = n;
    return chunk < 1 ? 1 : chunk;
}

gf_tensor *gf__jac_basis(const gf_tensor *like, int64_t n, int64_t k0, int64_t c) {
    int64_t s[2] = {c, n};
    gf_tensor *z = gf_zeros(s, 2, like->dtype, like->storage->device);
    /* the ones at (r, k0 + r): the diagonal at offset k0 */
    gf_tensor *dg = z ? gf_diagonal(z, k0, 0, 1) : NULL;
    gf_status st = dg ? gf_fill_(dg, 1.0) : gf__status();
    gf_tensor_release(dg);
    int64_t bs[GF_MAX_RANK + 1];
    bs[0] = c;
    memcpy(bs + 1, like->sizes, sizeof(int64_t) * (size_t)like->rank);
    gf_tensor *r = st == GF_OK ? gf_reshape(z, bs, like->rank + 1) : NULL;
    gf_tensor_release(z);
    return r;
}

/* The block of output o from its tangents parts[0 .. np) ([c_k, *o] each,
 * NULL: zeros, in basis order) as [*o, *in]. New reference, no scope. */
static gf_tensor *block(const gf_tensor *o, gf_tensor **parts, int np, const int64_t *counts,
                        const gf_tensor *in, int64_t n, const char *op) {
    int64_t no = gf__numel(o), s2[2] = {n, no}, sizes[GF_MAX_RANK];
    int rank = 0;
    if (gf__jac_joined(o, in, sizes, &rank, op) != GF_OK) return NULL;
    bool any = false;
    for (int k = 0; k < np; k++) any |= parts[k] != NULL;
    if (!any) return gf_zeros(sizes, rank, o->dtype, o->storage->device);
    gf_scope_begin();
    gf_tensor **flat = calloc((size_t)np, sizeof *flat), *r = NULL;
    bool ok = flat != NULL;
    if (!ok) gf__error(GF_ERR_OUT_OF_MEMORY, "jacfwd: out of host memory");
    for (int k = 0; ok && k < np; k++) {
        int64_t sk[2] = {counts[k], no};
        flat[k] = parts[k] ? gf_reshape(parts[k], sk, 2)
                           : gf_zeros(sk, 2, o->dtype, o->storage->device);
        ok = flat[k] != NULL;
    }
    if (ok) {
        gf_tensor *t = np == 1 ? flat[0] : gf_cat(flat, np, 0);
        r = gf_contiguous(gf_transpose(gf_reshape(t, s2, 2), 0, 1));
        r = gf_scope_keep(gf_reshape(r, sizes, rank));
    }
    free(flat);
    gf_scope_end();
    if (r && !gf__is_contiguous(r)) {
        gf_tensor *c = gf_contiguous(r);
        gf_tensor_release(r);
        r = c;
    }
    return r;
}

/* One batched forward pass over basis vectors k0 .. k0 + c of input i:
 * tan[j] gets output j's tangent [c, *out_j] (NULL: none), o[j] the
 * outputs (first pass only: when o[j] is NULL). */
static gf_status pass(gf_func_fn f, gf_tensor *const *inputs, int n_in, int i, int n_out,
                      void *user, int64_t k0, int64_t c, gf_tensor **o, gf_tensor **tan,
                      bool *refused, const char *op) {
    const gf_tensor *in = inputs[i];
    int64_t n = gf__numel(in);
    int level;
    gf_status s = gf__fw_level_enter_batched(&level, c);
    if (s != GF_OK) return s;
    gf_tensor **x = calloc((size_t)n_in, sizeof *x), **y = calloc((size_t)n_out, sizeof *y);
    if (!x || !y) s = gf__error(GF_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    for (int k = 0; k < n_in && s == GF_OK; k++) {
        if (k != i) {
            x[k] = gf_tensor_retain(inputs[k]);
            continue;
        }
        /* the dual: a view of the input (its history kept) with the basis
         * vectors as its tangent */
        gf_tensor *seed = gf__jac_basis(in, n, k0, c);
        x[k] = seed ? gf__fw_batched_dual(inputs[k], seed, level) : NULL;
        if (!x[k]) s = gf__status();
        gf_tensor_release(seed);
    }
    if (s == GF_OK) {
        uint64_t seq = gf__error_seq();
        s = f(x, n_in, y, n_out, user);
        if (s != GF_OK) s = gf__callback_failed(s, seq, "%s: the function", op);
        for (int j = 0; j < n_out && s == GF_OK; j++)
            if (!y[j]) s = gf__error(GF_ERR_INVALID, "%s: the function returned GF_OK but left "
                                     "output %d NULL", op, j);
            else if (!gf__dtype_differentiable(y[j]->dtype) || gf_dtype_is_complex(y[j]->dtype))
                s = gf__error(GF_ERR_DTYPE, "%s: output %d of the function is %s; a Jacobian "
                              "needs real floating-point outputs", op, j,
                              gf_dtype_name(y[j]->dtype));
    }
    const char *who = NULL;
    if (gf__fw_batch_refused(level, &who)) {
        *refused = true;
        s = gf__error(GF_ERR_UNSUPPORTED, "%s: the Jacobian with respect to input %d could not "
                      "be computed in batched passes: %s does not handle batched tangents",
                      op, i, who ? who : "an op");
    }
    for (int j = 0; j < n_out && s == GF_OK; j++) {
        tan[j] = gf__fw_tangent(y[j], level);
        if (gf__fw_batch_refused(level, &who)) {
            *refused = true;
            s = gf__error(GF_ERR_UNSUPPORTED, "%s: output %d's batched tangent could not be read "
                          "(%s)", op, j, who ? who : "a view");
            break;
        }
        if (!o[j]) o[j] = gf_tensor_retain(y[j]);
    }
    if (s != GF_OK)
        for (int j = 0; j < n_out; j++) {
            gf_tensor_release(tan[j]);
            tan[j] = NULL;
        }
    for (int j = 0; y && j < n_out; j++) gf_tensor_release(y[j]);
    for (int k = 0; x && k < n_in; k++) gf_tensor_release(x[k]);
    free(y);
    free(x);
    gf_status e = gf_fwad_level_exit(level);
    return s != GF_OK ? s : e;
}

gf_status gf__jacfwd_batched(gf_func_fn f, gf_tensor *const *inputs, int n_in, int i, int n_out,
                             void *user, int64_t chunk, gf_tensor **jac, bool *refused,
                             const char *op) {
    *refused = false;
    const gf_tensor *in = inputs[i];
    int64_t n = gf__numel(in);
    if (in->rank + 1 > GF_MAX_RANK) {
        *refused = true;
        return gf__error(GF_ERR_UNSUPPORTED, "%s: input %d has rank %d; a batched tangent needs "
                         "one more dim than GF_MAX_RANK allows", op, i, in->rank);
    }
    int64_t c = gf__jac_chunk(chunk, n), np64 = (n + c - 1) / c;
    if (np64 > INT32_MAX)
        return gf__error(GF_ERR_OVERFLOW, "%s: %lld batched passes are too many; raise "
                         "chunk_size", op, (long long)np64);
    int np = (int)np64;
    gf_tensor **o = calloc((size_t)n_out, sizeof *o);
    gf_tensor **tan = calloc((size_t)n_out * (size_t)np, sizeof *tan);
    int64_t *counts = calloc((size_t)np, sizeof *counts);
    gf_status s = o && tan && counts
                      ? GF_OK
                      : gf__error(GF_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    gf_tensor **col = calloc((size_t)n_out, sizeof *col);
    if (!col && s == GF_OK) s = gf__error(GF_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    for (int k = 0; k < np && s == GF_OK; k++) {
        int64_t k0 = (int64_t)k * c;
        counts[k] = n - k0 < c ? n - k0 : c;
        s = pass(f, inputs, n_in, i, n_out, user, k0, counts[k], o, col, refused, op);
        for (int j = 0; j < n_out; j++) {
            tan[(size_t)j * (size_t)np + (size_t)k] = col[j];
            col[j] = NULL;
        }
    }
    for (int j = 0; j < n_out && s == GF_OK; j++) {
        jac[j * n_in + i] = block(o[j], tan + (size_t)j * (size_t)np, np, counts, in, n, op);
        if (!jac[j * n_in + i]) s = gf__status();
    }
    if (s != GF_OK)
        for (int j = 0; j < n_out; j++) {
            gf_tensor_release(jac[j * n_in + i]);
            jac[j * n_in + i] = NULL;
        }
    for (size_t k = 0; tan && k < (size_t)n_out * (size_t)np; k++) gf_tensor_release(tan[k]);
    for (int j = 0; o && j < n_out; j++) gf_tensor_release(o[j]);
    free(col);
    free(counts);
    free(tan);
    free(o);
    return s;
}
