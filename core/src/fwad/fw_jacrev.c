/* SPDX-License-Identifier: BSD-3-Clause */
/* fw_jacrev.c — gf_jacrev's batched path (torch.func.jacrev's vmap over
 * vjp).
 *
 * The vjp u -> J^T u is linear in u, so a backward pass whose grad_output u
 * carries a tangent v computes, besides J^T u, the tangent J^T v of every
 * input gradient (every backward formula is made of graft ops, and their
 * jvp rules run whatever the grad mode). With v the basis of the output's
 * space, stacked on the leading dim of a batched dual level ([c, *out] for
 * c basis vectors), the tangent of input i's gradient, [c, *in_i], is c
 * rows of the Jacobian: one backward pass per chunk instead of one per
 * output element. The primal u is zeros: its own gradient is not wanted.
 *
 * The function runs once, before the level is opened, so nothing saved for
 * backward carries a tangent at it: the tangents of the backward pass come
 * from u alone. The fused gradient kernels (layer and batch norm, softmax)
 * see the incoming gradient's tangent and compose instead, as they do for
 * forward-over-reverse. Anything on the way that cannot carry the batch dim
 * refuses the level (gf__fw_batch_refuse); the pass is discarded and the
 * caller runs one backward per output element, so a refusal is never a
 * wrong answer. */
#include <stdlib.h>
#include <string.h>

#include "autograd/ag_internal.h"
#include "fw_batch.h"
#include "fw_internal.h"

/* One backward pass for basis vectors k0 .. k0 + c of out's space: part[i]
 * gets the tangent [c, *in_i] of input i's gradient (NULL: none, a zero
 * block). */
static gf_status pass(gf_tensor *out, gf_tensor *const *in, int n_in, int64_t k0, int64_t c,
                      gf_tensor **part, bool *refused, const char *op) {
    int64_t no = gf__numel(out);
    int level;
    gf_status s = gf__fw_level_enter_batched(&level, c);
    if (s != GF_OK) return s;
    gf_tensor **g = calloc((size_t)n_in, sizeof *g);
    gf_tensor *zero = gf_zeros_like(out), *u = NULL;
    gf_tensor *seed = zero ? gf__jac_basis(out, no, k0, c) : NULL;
    if (!g) s = gf__error(GF_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    else if (!seed || !(u = gf__fw_batched_dual(zero, seed, level))) s = gf__status();
    if (s == GF_OK) {
        gf_grad_opts o = {.retain_graph = 1, .create_graph = false, .allow_unused = true,
                          .materialize_grads = true};
        s = gf_grad(&out, 1, &u, in, n_in, g, &o);
    }
    const char *who = NULL;
    for (int i = 0; i < n_in && s == GF_OK; i++) part[i] = gf__fw_tangent(g[i], level);
    if (gf__fw_batch_refused(level, &who)) {
        *refused = true;
        s = gf__error(GF_ERR_UNSUPPORTED, "%s: the Jacobian's rows could not be computed in "
                      "batched backward passes: %s does not handle batched tangents", op,
                      who ? who : "an op");
    }
    if (s != GF_OK)
        for (int i = 0; i < n_in; i++) {
            gf_tensor_release(part[i]);
            part[i] = NULL;
        }
    for (int i = 0; g && i < n_in; i++) gf_tensor_release(g[i]);
    free(g);
    gf_tensor_release(u);
    gf_tensor_release(seed);
    gf_tensor_release(zero);
    gf_status e = gf_fwad_level_exit(level);
    return s != GF_OK ? s : e;
}

/* The rows [no, *in] from the parts [counts[k], *in] (NULL: zeros). New
 * reference, no scope. */
static gf_tensor *rows_of(gf_tensor **parts, int np, const int64_t *counts, int64_t no,
                          const gf_tensor *in, gf_dtype dt) {
    int64_t sizes[GF_MAX_RANK];
    sizes[0] = no;
    memcpy(sizes + 1, in->sizes, sizeof(int64_t) * (size_t)in->rank);
    bool any = false;
    for (int k = 0; k < np; k++) any |= parts[k] != NULL;
    if (!any) return gf_zeros(sizes, in->rank + 1, dt, in->storage->device);
    gf_scope_begin();
    gf_tensor **p = calloc((size_t)np, sizeof *p), *r = NULL;
    bool ok = p != NULL;
    if (!ok) gf__error(GF_ERR_OUT_OF_MEMORY, "jacrev: out of host memory");
    for (int k = 0; ok && k < np; k++) {
        int64_t sk[GF_MAX_RANK];
        memcpy(sk, sizes, sizeof sk);
        sk[0] = counts[k];
        p[k] = parts[k] ? gf_to_dtype(parts[k], dt)
                        : gf_zeros(sk, in->rank + 1, dt, in->storage->device);
        ok = p[k] != NULL;
    }
    /* the rows are values: a backward formula that recorded a graph of its
     * own (a recomputed recurrent layer) leaves none on them */
    if (ok) r = gf_scope_keep(gf_detach(gf_contiguous(np == 1 ? p[0] : gf_cat(p, np, 0))));
    free(p);
    gf_scope_end();
    return r;
}

gf_status gf__jacrev_batched(gf_tensor *out, gf_tensor *const *in, int n_in, int64_t chunk,
                             gf_tensor **rows, bool *refused, const char *op) {
    *refused = false;
    for (int i = 0; i < n_in; i++) rows[i] = NULL;
    int64_t no = gf__numel(out);
    int top = out->rank;
    for (int i = 0; i < n_in; i++)
        if (in[i]->rank > top) top = in[i]->rank;
    if (top + 1 > GF_MAX_RANK) {
        *refused = true;
        return gf__error(GF_ERR_UNSUPPORTED, "%s: a tensor of rank %d takes part; a batched "
                         "tangent needs one more dim than GF_MAX_RANK allows", op, top);
    }
    int64_t c = gf__jac_chunk(chunk, no), np64 = no ? (no + c - 1) / c : 0;
    if (np64 > INT32_MAX)
        return gf__error(GF_ERR_OVERFLOW, "%s: %lld batched passes are too many; raise "
                         "chunk_size", op, (long long)np64);
    int np = (int)np64;
    bool live = gf__ag_requires_grad(out);
    gf_tensor **parts = calloc((size_t)n_in * (size_t)(np ? np : 1), sizeof *parts);
    gf_tensor **col = calloc((size_t)n_in, sizeof *col);
    int64_t *counts = calloc((size_t)(np ? np : 1), sizeof *counts);
    gf_status s = parts && col && counts
                      ? GF_OK
                      : gf__error(GF_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    for (int k = 0; k < np && s == GF_OK; k++) {
        int64_t k0 = (int64_t)k * c;
        counts[k] = no - k0 < c ? no - k0 : c;
        /* an output without a graph: every row zero */
        if (live) s = pass(out, in, n_in, k0, counts[k], col, refused, op);
        for (int i = 0; i < n_in; i++) {
            parts[(size_t)i * (size_t)np + (size_t)k] = col[i];
            col[i] = NULL;
        }
    }
    for (int i = 0; i < n_in && s == GF_OK; i++)
        if (!(rows[i] = rows_of(parts + (size_t)i * (size_t)np, np, counts, no, in[i],
                                out->dtype)))
            s = gf__status();
    if (s != GF_OK)
        for (int i = 0; i < n_in; i++) {
            gf_tensor_release(rows[i]);
            rows[i] = NULL;
        }
    for (size_t k = 0; parts && k < (size_t)n_in * (size_t)np; k++) gf_tensor_release(parts[k]);
    free(counts);
    free(col);
    free(parts);
    return s;
}
