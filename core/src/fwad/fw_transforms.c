/* SPDX-License-Identifier: BSD-3-Clause */
/* fw_transforms.c — torch.func's transforms over C callbacks: jvp, vjp,
 * jacrev, jacfwd, hessian, hvp.
 *
 * jacfwd (and so hessian) computes each input's block in batched forward
 * passes (fw_batch.c), jacrev each output's rows in batched backward passes
 * (fw_jacrev.c); both fall back to one pass per element when an op cannot
 * batch. gf_jac_opts.chunk_size bounds the basis vectors of one pass.
 *
 * jvp and jacfwd run the function on dual tensors at a dual level of their
 * own; vjp and jacrev run it on aliases that require grad and call gf_grad;
 * hessian and hvp are forward-over-reverse: the gradient (by gf_grad) is
 * computed from dual inputs, so its tangent is the Hessian times the
 * inputs' tangents — one forward and one backward pass per product, where a
 * double backward needs a second backward through a graph built with
 * create_graph. Every tensor made here is released here (recording in the
 * caller's scope is suspended); results are new references handed out like
 * a returned tensor. */
#include <stdlib.h>
#include <string.h>

#include "autograd/ag_internal.h"
#include "fw_batch.h"
#include "fw_internal.h"

/* Calls f with scope recording suspended; a failure keeps f's message
 * under what it returned. */
static gf_status call_f(gf_func_fn f, gf_tensor *const *in, int n_in, gf_tensor **out, int n_out,
                        void *user, const char *op) {
    for (int j = 0; j < n_out; j++) out[j] = NULL;
    uint64_t seq = gf__error_seq();
    gf_status s = f(in, n_in, out, n_out, user);
    if (s != GF_OK) {
        s = gf__callback_failed(s, seq, "%s: the function", op);
    } else {
        for (int j = 0; j < n_out && s == GF_OK; j++) {
            if (!out[j])
                s = gf__error(GF_ERR_INVALID, "%s: the function returned GF_OK but left output "
                              "%d NULL", op, j);
            else if (!gf__dtype_differentiable(out[j]->dtype))
                s = gf__error(GF_ERR_DTYPE, "%s: output %d of the function is %s; outputs must "
                              "be floating point or complex (convert with gf_to_dtype)", op, j,
                              gf_dtype_name(out[j]->dtype));
        }
    }
    if (s != GF_OK)
        for (int j = 0; j < n_out; j++) {
            gf_tensor_release(out[j]);
            out[j] = NULL;
        }
    return s;
}

static void release_n(gf_tensor **t, int n) {
    for (int i = 0; t && i < n; i++) {
        gf_tensor_release(t[i]);
        t[i] = NULL;
    }
}

static gf_status check_args(gf_func_fn f, gf_tensor *const *in, int n_in, int n_out,
                            const char *op) {
    if (!f) return gf__null_arg_of(op, "f", GF__ARG_FUNCTION);
    if (n_in < 1 || n_out < 1 || !in)
        return gf__error(GF_ERR_INVALID, "%s: %d inputs and %d outputs: at least one of each, "
                         "and the inputs array, are required", op, n_in, n_out);
    for (int i = 0; i < n_in; i++) {
        if (!in[i]) return gf__null_arg(op, "an input");
        if (!gf__dtype_differentiable(in[i]->dtype))
            return gf__error(GF_ERR_DTYPE, "%s: input %d is %s; inputs must be floating point "
                             "or complex (convert with gf_to_dtype)", op, i,
                             gf_dtype_name(in[i]->dtype));
    }
    return GF_OK;
}

/* An array of n tensor pointers (zeroed), or NULL with the error set. */
static gf_tensor **tensors(int n, const char *op) {
    gf_tensor **a = calloc((size_t)(n > 0 ? n : 1), sizeof *a);
    if (!a) gf__error(GF_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    return a;
}

/* ------------------------------------------------------------ jvp */
/* f at dual inputs (primal i with tangent tan[i], NULL: none) at a level of
 * its own: out[j] the outputs, jv[j] their tangents (zeros for none). */
static gf_status jvp_impl(gf_func_fn f, gf_tensor *const *primals, int n_in,
                          gf_tensor *const *tan, int n_out, void *user, gf_tensor **out,
                          gf_tensor **jv, const char *op) {
    int level;
    gf_status s = gf_fwad_level_enter(&level);
    if (s != GF_OK) return s;
    gf_tensor **duals = tensors(n_in, op), **o = tensors(n_out, op);
    if (!duals || !o) s = gf__status();
    for (int i = 0; i < n_in && s == GF_OK; i++) {
        duals[i] = tan && tan[i] ? gf_fwad_make_dual(primals[i], tan[i], level)
                                 : gf_tensor_retain(primals[i]);
        if (!duals[i]) s = gf__status();
    }
    if (s == GF_OK) s = call_f(f, duals, n_in, o, n_out, user, op);
    for (int j = 0; j < n_out && s == GF_OK; j++) {
        gf_tensor *t = NULL;
        s = gf_fwad_unpack_dual(o[j], level, NULL, &t);
        if (s == GF_OK && !t && !(t = gf_zeros_like(o[j]))) s = gf__status();
        jv[j] = t;
    }
    if (s == GF_OK && out)
        for (int j = 0; j < n_out; j++) {
            out[j] = o[j];
            o[j] = NULL;
        }
    if (s != GF_OK) release_n(jv, n_out);
    release_n(o, n_out);
    release_n(duals, n_in);
    free(o);
    free(duals);
    gf_status e = gf_fwad_level_exit(level);
    if (s == GF_OK) s = e;
    if (s != GF_OK) release_n(out, out ? n_out : 0);
    return s;
}

gf_status gf_jvp(gf_func_fn f, gf_tensor *const *primals, int n_inputs, gf_tensor *const *tangents,
                 int n_outputs, void *user, gf_tensor **outputs, gf_tensor **jvps) {
    static const char op[] = "gf_jvp";
    gf_status s = check_args(f, primals, n_inputs, n_outputs, op);
    if (s != GF_OK) return s;
    if (!jvps) return gf__null_arg_of(op, "jvps", GF__ARG_OUT);
    int sc = gf__scope_suspend();
    s = jvp_impl(f, primals, n_inputs, tangents, n_outputs, user, outputs, jvps, op);
    gf__scope_resume(sc);
    for (int j = 0; s == GF_OK && j < n_outputs; j++) {
        if (outputs) gf__ret(outputs[j]);
        gf__ret(jvps[j]);
    }
    return s;
}

/* ------------------------------------------------------------ reverse mode */
/* Inputs the gradient can be taken with respect to: a view of each primal
 * that requires grad (its own history kept), or a fresh leaf sharing its
 * storage (with its tangents) where it needs no grad. */
static gf_status grad_inputs(gf_tensor *const *primals, int n, gf_tensor **in) {
    for (int i = 0; i < n; i++) {
        gf_tensor *p = primals[i];
        if (gf__ag_requires_grad(p) && gf__ag_grad_enabled()) {
            in[i] = gf_reshape(p, p->sizes, p->rank);
        } else {
            in[i] = gf_detach(p);
            if (in[i]) {
                /* the leaf keeps p's tangents (a dual primal stays dual) */
                int depth = gf_fwad_level_count();
                for (int d = 0; d < depth; d++) {
                    gf_tensor *t = gf__fw_tangent(p, d);
                    gf_status s = t ? gf__fw_set(in[i], d, t) : GF_OK;
                    gf_tensor_release(t);
                    if (s != GF_OK) return s;
                }
                if (gf_tensor_set_requires_grad(in[i], true) != GF_OK) return gf__status();
            }
        }
        if (!in[i]) return gf__status();
    }
    return GF_OK;
}

/* u^T J for every input, into g[i] (zeros for an input f does not use). */
static gf_status grads_of(gf_tensor **outs, gf_tensor *const *cot, int n_out, gf_tensor **in,
                          int n_in, bool create_graph, bool keep, gf_tensor **g) {
    int m = 0;
    gf_tensor **ro = calloc((size_t)n_out, sizeof *ro), **rc = calloc((size_t)n_out, sizeof *rc);
    if (!ro || !rc) {
        free(ro);
        free(rc);
        return gf__error(GF_ERR_OUT_OF_MEMORY, "vjp: out of host memory");
    }
    for (int j = 0; j < n_out; j++)
        if (gf__ag_requires_grad(outs[j])) {
            ro[m] = outs[j];
            rc[m++] = cot ? cot[j] : NULL;
        }
    gf_status s = GF_OK;
    if (m == 0) {
        for (int i = 0; i < n_in && s == GF_OK; i++)
            if (!(g[i] = gf_zeros_like(in[i]))) s = gf__status();
    } else {
        gf_grad_opts o = {.retain_graph = keep || create_graph, .create_graph = create_graph,
                          .allow_unused = true, .materialize_grads = true};
        s = gf_grad(ro, m, rc, in, n_in, g, &o);
    }
    free(ro);
    free(rc);
    return s;
}

gf_status gf_vjp(gf_func_fn f, gf_tensor *const *primals, int n_inputs,
                 gf_tensor *const *cotangents, int n_outputs, void *user, bool create_graph,
                 gf_tensor **outputs, gf_tensor **vjps) {
    static const char op[] = "gf_vjp";
    gf_status s = check_args(f, primals, n_inputs, n_outputs, op);
    if (s != GF_OK) return s;
    if (!vjps) return gf__null_arg_of(op, "vjps", GF__ARG_OUT);
    int sc = gf__scope_suspend();
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_GRAD);
    gf_tensor **in = tensors(n_inputs, op), **o = tensors(n_outputs, op);
    if (!in || !o) s = gf__status();
    if (s == GF_OK) s = grad_inputs(primals, n_inputs, in);
    if (s == GF_OK) s = call_f(f, in, n_inputs, o, n_outputs, user, op);
    if (s == GF_OK) s = grads_of(o, cotangents, n_outputs, in, n_inputs, create_graph, false, vjps);
    gf_grad_mode_set(prev);
    if (s == GF_OK && outputs)
        for (int j = 0; j < n_outputs; j++) {
            outputs[j] = create_graph ? o[j] : gf_detach(o[j]);
            if (create_graph) o[j] = NULL;
        }
    release_n(o, n_outputs);
    release_n(in, n_inputs);
    free(o);
    free(in);
    gf__scope_resume(sc);
    for (int j = 0; s == GF_OK && outputs && j < n_outputs; j++) gf__ret(outputs[j]);
    for (int i = 0; s == GF_OK && i < n_inputs; i++) gf__ret(vjps[i]);
    return s;
}

/* ------------------------------------------------------------ Jacobians */
static gf_status no_complex(gf_tensor *const *t, int n, const char *op, const char *what) {
    for (int i = 0; i < n; i++)
        if (gf_dtype_is_complex(t[i]->dtype))
            return gf__error(GF_ERR_UNSUPPORTED, "%s: %s %d is complex; Jacobians are taken of "
                             "real maps only (use gf_jvp / gf_vjp for complex ones)", op, what, i);
    return GF_OK;
}

gf_status gf__jac_joined(const gf_tensor *a, const gf_tensor *b, int64_t *sizes, int *rank,
                         const char *op) {
    if (a->rank + b->rank > GF_MAX_RANK)
        return gf__error(GF_ERR_SHAPE, "%s: a Jacobian block of an output of rank %d and an input "
                         "of rank %d would have rank %d, more than GF_MAX_RANK (%d); flatten them",
                         op, a->rank, b->rank, a->rank + b->rank, GF_MAX_RANK);
    memcpy(sizes, a->sizes, sizeof(int64_t) * (size_t)a->rank);
    memcpy(sizes + a->rank, b->sizes, sizeof(int64_t) * (size_t)b->rank);
    *rank = a->rank + b->rank;
    return GF_OK;
}

/* The one-hot tensor of t's shape and dtype with a 1 at flat index k. */
static gf_tensor *one_hot_like(const gf_tensor *t, int64_t k) {
    int64_t n = gf__numel(t);
    gf_tensor *z = gf_zeros(&n, 1, t->dtype, t->storage->device);
    gf_tensor *e = z ? gf_narrow(z, 0, k, 1) : NULL;
    gf_status s = e ? gf_fill_(e, 1.0) : gf__status();
    gf_tensor_release(e);
    gf_tensor *r = s == GF_OK ? gf_reshape(z, t->sizes, t->rank) : NULL;
    gf_tensor_release(z);
    return r;
}

/* Joins parts[0..n) (each of one shape) along a new first (at == 0) or
 * last dim, then gives the result sizes `sizes` (rank). The parts are
 * flattened first, so a part of rank GF_MAX_RANK joins too (a stack of them
 * would need one more dim). */
static gf_tensor *assemble(gf_tensor **parts, int64_t n, int at, const int64_t *sizes, int rank,
                           const gf_tensor *like) {
    if (n == 0) return gf_zeros(sizes, rank, like->dtype, like->storage->device);
    if (n > INT32_MAX) {
        gf__error(GF_ERR_OVERFLOW, "jacobian: %lld columns are too many", (long long)n);
        return NULL;
    }
    int64_t m = gf__numel(parts[0]), s2[2] = {at == 0 ? 1 : m, at == 0 ? m : 1};
    gf_tensor **flat = calloc((size_t)n, sizeof *flat), *c = NULL;
    bool ok = flat != NULL;
    if (!ok) gf__error(GF_ERR_OUT_OF_MEMORY, "jacobian: out of host memory");
    for (int64_t k = 0; ok && k < n; k++) ok = (flat[k] = gf_reshape(parts[k], s2, 2)) != NULL;
    gf_tensor *j = ok ? gf_cat(flat, (int)n, at == 0 ? 0 : 1) : NULL;
    gf_tensor *r = j ? gf_reshape(j, sizes, rank) : NULL;
    c = r ? gf_contiguous(r) : NULL;
    for (int64_t k = 0; flat && k < n; k++) gf_tensor_release(flat[k]);
    free(flat);
    gf_tensor_release(j);
    gf_tensor_release(r);
    return c;
}

/* Output j's blocks by one backward pass per element of it. */
static gf_status jacrev_loop(gf_tensor **o, int j, gf_tensor **in, int n_in, gf_tensor **g,
                             gf_tensor **jac, const char *op) {
    int64_t no = gf__numel(o[j]);
    gf_tensor ***rows = calloc((size_t)n_in, sizeof *rows);
    gf_status s = rows ? GF_OK : gf__error(GF_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    for (int i = 0; i < n_in && s == GF_OK; i++)
        if (!(rows[i] = calloc((size_t)(no ? no : 1), sizeof **rows)))
            s = gf__error(GF_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
    for (int64_t k = 0; k < no && s == GF_OK; k++) {
        gf_tensor *u = one_hot_like(o[j], k);
        s = u ? grads_of(&o[j], &u, 1, in, n_in, false, true, g) : gf__status();
        gf_tensor_release(u);
        for (int i = 0; i < n_in; i++) {
            gf_tensor *r = g[i] && g[i]->dtype != o[j]->dtype ? gf_to_dtype(g[i], o[j]->dtype)
                                                              : gf_tensor_retain(g[i]);
            gf_tensor_release(g[i]);
            g[i] = NULL;
            rows[i][k] = r;
            if (!r && s == GF_OK) s = gf__status();
        }
    }
    for (int i = 0; i < n_in && s == GF_OK; i++) {
        int64_t sizes[GF_MAX_RANK];
        int rank;
        s = gf__jac_joined(o[j], in[i], sizes, &rank, op);
        if (s == GF_OK && !(jac[j * n_in + i] = assemble(rows[i], no, 0, sizes, rank, o[j])))
            s = gf__status();
    }
    for (int i = 0; rows && i < n_in; i++) {
        if (rows[i]) release_n(rows[i], (int)no);
        free(rows[i]);
    }
    free(rows);
    return s;
}

/* Output j's blocks from the batched backward passes, or *refused. */
static gf_status jacrev_batch(gf_tensor **o, int j, gf_tensor **in, int n_in, int64_t chunk,
                              gf_tensor **g, gf_tensor **jac, bool *refused, const char *op) {
    for (int i = 0; i < n_in; i++) {
        int64_t sizes[GF_MAX_RANK];
        int rank;
        gf_status s = gf__jac_joined(o[j], in[i], sizes, &rank, op);
        if (s != GF_OK) return s;
    }
    gf_status s = gf__jacrev_batched(o[j], in, n_in, chunk, g, refused, op);
    for (int i = 0; i < n_in && s == GF_OK; i++) {
        int64_t sizes[GF_MAX_RANK];
        int rank;
        s = gf__jac_joined(o[j], in[i], sizes, &rank, op);
        if (s == GF_OK && !(jac[j * n_in + i] = gf_reshape(g[i], sizes, rank))) s = gf__status();
    }
    release_n(g, n_in);
    if (s != GF_OK)
        for (int i = 0; i < n_in; i++) {
            gf_tensor_release(jac[j * n_in + i]);
            jac[j * n_in + i] = NULL;
        }
    return s;
}

static gf_status jacrev_impl(gf_func_fn f, gf_tensor *const *inputs, int n_in, int n_out,
                             void *user, int64_t chunk, gf_tensor **jac, const char *op) {
    gf_tensor **in = tensors(n_in, op), **o = tensors(n_out, op), **g = tensors(n_in, op);
    gf_status s = in && o && g ? GF_OK : gf__status();
    gf__jac_mode mode = gf__jacrev_mode();
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_GRAD);
    if (s == GF_OK) s = grad_inputs(inputs, n_in, in);
    if (s == GF_OK) s = call_f(f, in, n_in, o, n_out, user, op);
    if (s == GF_OK) s = no_complex(o, n_out, op, "output");
    for (int j = 0; j < n_out && s == GF_OK; j++) {
        if (mode != GF__JAC_LOOP && gf__numel(o[j]) > 0) {
            /* the rows of output j in batched backward passes; the loop
             * where an op cannot batch (unless GRAFT_JACREV=batched) */
            bool refused = false;
            s = jacrev_batch(o, j, in, n_in, chunk, g, jac, &refused, op);
            if (s == GF_OK || !refused || mode == GF__JAC_BATCHED) continue;
            gf_clear_error();
            s = GF_OK;
        }
        s = jacrev_loop(o, j, in, n_in, g, jac, op);
    }
    gf_grad_mode_set(prev);
    release_n(o, n_out);
    release_n(in, n_in);
    free(g);
    free(o);
    free(in);
    return s;
}

static gf_status jacfwd_impl(gf_func_fn f, gf_tensor *const *inputs, int n_in, int n_out,
                             void *user, int64_t chunk, gf_tensor **jac, const char *op) {
    gf_tensor **tan = tensors(n_in, op), **jv = tensors(n_out, op), **o = tensors(n_out, op);
    gf_tensor ***cols = calloc((size_t)n_out, sizeof *cols);
    gf_status s = tan && jv && o && cols ? GF_OK : gf__error(GF_ERR_OUT_OF_MEMORY, "%s: out of "
                                                             "host memory", op);
    gf__jac_mode mode = gf__jacfwd_mode();
    for (int i = 0; i < n_in && s == GF_OK; i++) {
        int64_t ni = gf__numel(inputs[i]);
        if (mode != GF__JAC_LOOP && ni > 0) {
            /* the whole block in one batched pass; the loop below where an
             * op cannot batch (unless GRAFT_JACFWD=batched) */
            bool refused = false;
            s = gf__jacfwd_batched(f, inputs, n_in, i, n_out, user, chunk, jac, &refused, op);
            if (s == GF_OK || !refused || mode == GF__JAC_BATCHED) continue;
            gf_clear_error();
            s = GF_OK;
        }
        for (int j = 0; j < n_out && s == GF_OK; j++)
            if (!(cols[j] = calloc((size_t)(ni ? ni : 1), sizeof **cols)))
                s = gf__error(GF_ERR_OUT_OF_MEMORY, "%s: out of host memory", op);
        for (int64_t k = 0; k < ni && s == GF_OK; k++) {
            tan[i] = one_hot_like(inputs[i], k);
            s = tan[i] ? jvp_impl(f, inputs, n_in, tan, n_out, user, k == 0 ? o : NULL, jv, op)
                       : gf__status();
            gf_tensor_release(tan[i]);
            tan[i] = NULL;
            if (s == GF_OK && k == 0) s = no_complex(o, n_out, op, "output");
            for (int j = 0; j < n_out; j++) {
                cols[j][k] = jv[j];
                jv[j] = NULL;
            }
        }
        if (s == GF_OK && ni == 0) {
            /* no column to run f for: its outputs' shapes from one plain call */
            release_n(o, n_out);
            s = jvp_impl(f, inputs, n_in, NULL, n_out, user, o, jv, op);
            release_n(jv, n_out);
        }
        for (int j = 0; j < n_out && s == GF_OK; j++) {
            int64_t sizes[GF_MAX_RANK];
            int rank;
            s = gf__jac_joined(o[j], inputs[i], sizes, &rank, op);
            if (s == GF_OK &&
                !(jac[j * n_in + i] = assemble(cols[j], ni, o[j]->rank, sizes, rank, o[j])))
                s = gf__status();
        }
        for (int j = 0; j < n_out; j++) {
            if (cols[j]) release_n(cols[j], (int)ni);
            free(cols[j]);
            cols[j] = NULL;
        }
        release_n(o, n_out);
    }
    free(cols);
    free(o);
    free(jv);
    free(tan);
    return s;
}

typedef gf_status (*jac_impl_fn)(gf_func_fn, gf_tensor *const *, int, int, void *, int64_t,
                                 gf_tensor **, const char *);

static gf_status jacobian(jac_impl_fn impl, gf_func_fn f, gf_tensor *const *inputs, int n_in,
                          int n_out, void *user, const gf_jac_opts *opts, gf_tensor **jac,
                          const char *op) {
    gf_status s = check_args(f, inputs, n_in, n_out, op);
    if (s != GF_OK) return s;
    if (!jac) return gf__null_arg_of(op, "jac", GF__ARG_OUT);
    gf_jac_opts o = GF_JAC_OPTS_DEFAULT;
    if (opts) {
        if ((s = gf__opts_check(op, "gf_jac_opts", "GF_JAC_OPTS_DEFAULT", opts->init)) != GF_OK)
            return s;
        o = *opts;
    }
    if (o.chunk_size < 1 && o.chunk_size != GF_JAC_CHUNK_ALL)
        return gf__error(GF_ERR_INVALID, "%s: chunk_size is %lld; it must be at least 1 (the "
                         "most basis vectors one batched pass carries), or GF_JAC_CHUNK_ALL "
                         "for no chunking", op, (long long)o.chunk_size);
    if ((s = no_complex(inputs, n_in, op, "input")) != GF_OK) return s;
    int64_t blocks;
    if (!gf__mul_ok(n_in, n_out, &blocks))
        return gf__error(GF_ERR_OVERFLOW, "%s: too many Jacobian blocks", op);
    for (int64_t b = 0; b < blocks; b++) jac[b] = NULL;
    int sc = gf__scope_suspend();
    s = impl(f, inputs, n_in, n_out, user, o.chunk_size, jac, op);
    gf__scope_resume(sc);
    for (int64_t b = 0; b < blocks; b++) {
        if (s != GF_OK) {
            gf_tensor_release(jac[b]);
            jac[b] = NULL;
        } else {
            gf__ret(jac[b]);
        }
    }
    return s;
}

gf_status gf_jacrev(gf_func_fn f, gf_tensor *const *inputs, int n_inputs, int n_outputs,
                    void *user, gf_tensor **jac) {
    return jacobian(jacrev_impl, f, inputs, n_inputs, n_outputs, user, NULL, jac, "gf_jacrev");
}

gf_status gf_jacfwd(gf_func_fn f, gf_tensor *const *inputs, int n_inputs, int n_outputs,
                    void *user, gf_tensor **jac) {
    return jacobian(jacfwd_impl, f, inputs, n_inputs, n_outputs, user, NULL, jac, "gf_jacfwd");
}

gf_status gf_jacrev_ex(gf_func_fn f, gf_tensor *const *inputs, int n_inputs, int n_outputs,
                       void *user, const gf_jac_opts *opts, gf_tensor **jac) {
    return jacobian(jacrev_impl, f, inputs, n_inputs, n_outputs, user, opts, jac, "gf_jacrev_ex");
}

gf_status gf_jacfwd_ex(gf_func_fn f, gf_tensor *const *inputs, int n_inputs, int n_outputs,
                       void *user, const gf_jac_opts *opts, gf_tensor **jac) {
    return jacobian(jacfwd_impl, f, inputs, n_inputs, n_outputs, user, opts, jac, "gf_jacfwd_ex");
}

/* ------------------------------------------------------------ second order */
/* The gradient of a one-element f as a function of its inputs (for jacfwd
 * and the hvp): reverse mode inside, so dual inputs give the gradient's
 * tangent, H v. */
typedef struct grad_ctx {
    gf_func_fn f;
    void *user;
    const char *op;
} grad_ctx;

static gf_status grad_fn(gf_tensor *const *inputs, int n_in, gf_tensor **outs, int n_out,
                         void *user) {
    const grad_ctx *c = user;
    gf_tensor **in = tensors(n_in, c->op), *y = NULL;
    gf_status s = in ? GF_OK : gf__status();
    gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_GRAD);
    if (s == GF_OK) s = grad_inputs(inputs, n_in, in);
    if (s == GF_OK) s = call_f(c->f, in, n_in, &y, 1, c->user, c->op);
    if (s == GF_OK && gf__numel(y) != 1) {
        char b[200];
        s = gf__error(GF_ERR_SHAPE, "%s: the function's output has sizes %s; a Hessian needs an "
                      "output of one element (reduce it, e.g. with gf_sum)", c->op,
                      gf__shape_str(y->sizes, y->rank, b, sizeof b));
    }
    if (s == GF_OK && gf_dtype_is_complex(y->dtype))
        s = gf__error(GF_ERR_UNSUPPORTED, "%s: the function's output is complex; a Hessian "
                      "needs a real one", c->op);
    /* The gradient's tangent is what is wanted; no graph of it is kept. */
    if (s == GF_OK) s = grads_of(&y, NULL, 1, in, n_in, false, false, outs);
    gf_grad_mode_set(prev);
    (void)n_out;
    gf_tensor_release(y);
    release_n(in, n_in);
    free(in);
    return s;
}

gf_status gf_hessian(gf_func_fn f, gf_tensor *const *inputs, int n_inputs, void *user,
                     gf_tensor **hess) {
    static const char op[] = "gf_hessian";
    gf_status s = check_args(f, inputs, n_inputs, 1, op);
    if (s != GF_OK) return s;
    grad_ctx c = {f, user, op};
    return jacobian(jacfwd_impl, grad_fn, inputs, n_inputs, n_inputs, &c, NULL, hess, op);
}

gf_status gf_hvp(gf_func_fn f, gf_tensor *const *inputs, int n_inputs, gf_tensor *const *v,
                 void *user, gf_tensor **value, gf_tensor **hvp) {
    static const char op[] = "gf_hvp";
    gf_status s = check_args(f, inputs, n_inputs, 1, op);
    if (s != GF_OK) return s;
    if (!hvp) return gf__null_arg_of(op, "hvp", GF__ARG_OUT);
    if (value) *value = NULL;
    grad_ctx c = {f, user, op};
    int sc = gf__scope_suspend();
    gf_tensor **g = tensors(n_inputs, op);
    s = g ? jvp_impl(grad_fn, inputs, n_inputs, v, n_inputs, &c, g, hvp, op) : gf__status();
    release_n(g, n_inputs);
    free(g);
    if (s == GF_OK && value) {
        /* f's value, without history (the product is what this computes) */
        gf_grad_mode prev = gf_grad_mode_set(GF_GRAD_MODE_NO_GRAD);
        s = call_f(f, inputs, n_inputs, value, 1, user, op);
        gf_grad_mode_set(prev);
        if (s != GF_OK) release_n(hvp, n_inputs);
    }
    gf__scope_resume(sc);
    for (int i = 0; s == GF_OK && i < n_inputs; i++) gf__ret(hvp[i]);
    if (s == GF_OK && value) gf__ret(*value);
    return s;
}
