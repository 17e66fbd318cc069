/* SPDX-License-Identifier: BSD-3-Clause */
/* inplace.c — in-place ops: the checks before writing, the version bump,
 * and the history afterwards (rules 10–15 of docs/autograd.md).
 *
 * An in-place op computes its value with the out-of-place op (which records
 * the node that knows the gradient), writes it into self, and moves that
 * node onto self — or, when self is a view, onto its base through
 * CopySlices. */
#include <string.h>

#include "ag_internal.h"
#include "fwad/fw_internal.h"

static bool has_internal_overlap(const gf_tensor *t) {
    for (int i = 0; i < t->rank; i++)
        if (t->strides[i] == 0 && t->sizes[i] > 1) return true;
    return false;
}

gf_status gf__ag_check_inplace(gf_tensor *self, const char *op) {
    if (!self) return gf__null_arg(op, "self");
    if (self->storage->inference && !gf__ag_inference_mode())
        return gf__error(GF_ERR_AUTOGRAD, "%s: in-place update of an inference tensor (created "
                         "in inference mode) outside inference mode is not allowed; make a "
                         "normal copy with gf_clone outside inference mode", op);
    if (has_internal_overlap(self))
        return gf__error(GF_ERR_INVALID, "%s: more than one element of the written-to tensor "
                         "refers to a single memory location (an expanded view); gf_clone it "
                         "before writing in place", op);
    const gf_autograd_meta *m = self->autograd;
    if (!m || !gf__ag_grad_enabled()) return GF_OK;
    if (m->requires_grad && !m->grad_fn && !m->base)
        return gf__error(GF_ERR_AUTOGRAD, "%s: a leaf tensor that requires grad is being used in "
                         "an in-place operation; do it under GF_GRAD_MODE_NO_GRAD (as optimisers "
                         "do), or work on a gf_clone", op);
    if (m->base) {
        const gf_autograd_meta *bm = m->base->autograd;
        bool base_rg = bm && (bm->requires_grad || bm->grad_fn);
        /* As PyTorch: a view of a leaf (a base without history) that
         * requires grad, itself or through its base. The view may have been
         * made a leaf itself (set_requires_grad on a view of a base that
         * needs no grad), or be a view of such a view: rebasing its base's
         * history would route the base's gradient through the view's own
         * accumulator, which holds the view (a cycle, and the leaf would
         * silently gain a grad_fn). */
        bool base_leaf = !bm || !bm->grad_fn;
        if (base_leaf && ((bm && bm->requires_grad) || gf__ag_requires_grad(self)))
            return gf__error(GF_ERR_AUTOGRAD, "%s: a view of a leaf tensor that requires grad is "
                             "being used in an in-place operation; do it under no-grad mode, or "
                             "work on a gf_clone", op);
        if (m->view_creation == GF_VIEW_NO_GRAD)
            return gf__error(GF_ERR_AUTOGRAD, "%s: this view was created in no-grad mode and is "
                             "being modified in place with grad mode on; create the view in grad "
                             "mode, or gf_clone it", op);
        if (m->view_creation == GF_VIEW_INFERENCE && base_rg)
            return gf__error(GF_ERR_AUTOGRAD, "%s: this view was created in inference mode and is "
                             "being modified in place with grad mode on; gf_clone it first", op);
        /* view_as_real and kin: the base's history cannot be rebased from a
         * region counted in elements of another dtype. */
        if (m->base->dtype != self->dtype && base_rg)
            return gf__error(GF_ERR_AUTOGRAD, "%s: this tensor is a view with another dtype than "
                             "its base (gf_view_as_real, gf_view_as_complex, gf_real, gf_imag, "
                             "or a view of one), and in-place writes through such views are not "
                             "supported while the base requires grad; gf_clone it first, or write "
                             "under no-grad mode", op);
        if (m->view_creation == GF_VIEW_MULTI_OUTPUT && base_rg)
            return gf__error(GF_ERR_AUTOGRAD, "%s: this view is one of several returned by "
                             "gf_split/gf_chunk, and such views cannot be modified in place while "
                             "their base requires grad; gf_clone the piece first", op);
    }
    return GF_OK;
}

gf_status gf__ag_commit_inplace(gf_tensor *self, gf_tensor *result, int self_input,
                                uint64_t recorded_since, const char *op) {
    if (result->rank != self->rank ||
        memcmp(result->sizes, self->sizes, sizeof(int64_t) * (size_t)self->rank)) {
        char a[200], b[200];
        return gf__error(GF_ERR_SHAPE, "%s: the result has sizes %s, which do not fit the tensor "
                         "written in place (sizes %s); broadcasting may not grow the destination",
                         op, gf__shape_str(result->sizes, result->rank, a, sizeof a),
                         gf__shape_str(self->sizes, self->rank, b, sizeof b));
    }
    gf_status s = GF_OK;
    if (result != self) { /* else the kernel wrote into self: nothing was recorded */
        s = gf__ag_save_originals(result, self, recorded_since);
        if (s == GF_OK) s = gf__copy_into(self, result);
    }
    if (s != GF_OK) return s;
    gf__bump_version(self);
    if ((s = gf__fw_commit_inplace(self, result, op)) != GF_OK) return s;
    gf_node *n = result->autograd ? result->autograd->grad_fn : NULL;
    if (!n || !gf__ag_grad_enabled()) return GF_OK;
    gf_autograd_meta *m = self->autograd;
    if (m && m->base) {
        s = gf__ag_copy_slices(m->base, self, n, self_input);
        /* The view's own history is regenerated from the base's on next use. */
        return s;
    }
    gf__ag_set_history(self, n, result->autograd->output_nr);
    return GF_OK;
}

/* True when an in-place op on self with these other inputs records
 * nothing: then its kernel may write straight into self. */
static bool unrecorded(const gf_tensor *self, const gf_tensor *a, const gf_tensor *b) {
    const gf_tensor *ts[3] = {self, a, b};
    int n = 1;
    if (a) ts[n++] = a;
    if (b) ts[n++] = b;
    /* Forward mode needs self's old value for the tangent (mul_: t_self *
     * other + self * t_other), so a dual operand is computed out of place. */
    if (gf__fw_any_tangent(ts, n)) return false;
    if (!gf__ag_grad_enabled()) return true;
    return !gf__ag_any_requires_grad(ts, n);
}

/* PyTorch's rule for writing an op's result into self: not to a lower
 * kind (bool < integer < float < complex). A float result does not go into
 * an integer tensor, nor a complex one into a real tensor, nor a number
 * into a bool one; within a kind any width goes. */
static int dtype_kind(gf_dtype d) {
    return d == GF_BOOL ? 0 : gf_dtype_is_complex(d) ? 3 : gf_dtype_is_float(d) ? 2 : 1;
}
static bool castable(gf_dtype from, gf_dtype to) { return dtype_kind(from) <= dtype_kind(to); }

static gf_status cast_refused(const char *op, gf_dtype result, gf_dtype self) {
    return gf__error(GF_ERR_DTYPE, "%s: the result is %s, which cannot be written in place into "
                     "a %s tensor (as in PyTorch: no complex result into a real tensor, no "
                     "float result into an integer tensor, no number into a bool one); use the out-of-place op, or convert the tensor "
                     "first with gf_to_dtype", op, gf_dtype_name(result), gf_dtype_name(self));
}

/* Runs an in-place op: check, compute, commit. `expr` returns the new value
 * of self with self's old value as input number self_input of its node; it
 * may use dst_, the destination for an elementwise op's gf__*_into form:
 * when nothing is recorded (no-grad, or nothing requires grad) dst_ is self,
 * so the kernel writes into self itself (the result is then self);
 * otherwise dst_ is NULL, the value is computed out of place and copied in,
 * so the node sees self's old value. a and b are the op's other tensor
 * inputs. The nodes expr records save what they need as they always do,
 * aliasing their inputs; the commit is told which nodes those are (the ones
 * recorded since mark_) and, before it overwrites self, gives every one of
 * them that saved self, or another view of its storage, a copy of that old
 * value instead (as PyTorch saves original_self), so x.mul_(x) or
 * x.mul_(x.t()) differentiate with the values they read. */
#define INPLACE_AB(name, expr, self_input, direct, a, b)                 \
    do {                                                                 \
        gf_status s_ = gf__ag_check_inplace(self, name);                 \
        if (s_ != GF_OK) return s_;                                      \
        int sc_ = gf__scope_suspend();                                   \
        uint64_t mark_ = gf__ag_seq_mark();                              \
        gf_tensor *dst_ = (direct) && unrecorded(self, (a), (b)) ? self : NULL; \
        (void)dst_;                                                      \
        const gf_storage *tgt_ = gf__ag_inplace_target_set(self->storage); \
        gf_tensor *r_ = (expr);                                          \
        gf__ag_inplace_target_set(tgt_);                                 \
        gf__scope_resume(sc_);                                           \
        if (!r_) return gf__status();                                \
        if ((direct) && !castable(r_->dtype, self->dtype)) {             \
            gf_dtype rd_ = r_->dtype;                                    \
            gf_tensor_release(r_);                                       \
            return cast_refused(name, rd_, self->dtype);                 \
        }                                                                \
        gf_tensor *c_ = r_;                                              \
        int si_ = (self_input);                                          \
        if (r_->dtype != self->dtype) {                                  \
            sc_ = gf__scope_suspend();                                   \
            c_ = gf_to_dtype(r_, self->dtype);                           \
            gf__scope_resume(sc_);                                       \
            gf_tensor_release(r_);                                       \
            if (!c_) return gf__status();                            \
            /* the recorded node is now the cast, whose one input is   \
             * the op's result, not self: self's old value keeps its   \
             * own edge inside the op */                                \
            si_ = -1;                                                    \
        }                                                                \
        s_ = gf__ag_commit_inplace(self, c_, si_, mark_, name);          \
        gf_tensor_release(c_);                                           \
        return s_;                                                       \
    } while (0)
/* Elementwise ops write into self directly when they may (dst_); other ops
 * never do. */
#define INPLACE_EW(name, expr, a) INPLACE_AB(name, expr, 0, true, a, NULL)
#define INPLACE(name, expr, self_input) INPLACE_AB(name, expr, self_input, false, NULL, NULL)

gf_status gf_add_(gf_tensor *self, const gf_tensor *other) { INPLACE_EW("gf_add_", gf__add_into(dst_, self, other), other); }
gf_status gf_sub_(gf_tensor *self, const gf_tensor *other) { INPLACE_EW("gf_sub_", gf__sub_into(dst_, self, other), other); }
gf_status gf_mul_(gf_tensor *self, const gf_tensor *other) { INPLACE_EW("gf_mul_", gf__mul_into(dst_, self, other), other); }
gf_status gf_div_(gf_tensor *self, const gf_tensor *other) { INPLACE_EW("gf_div_", gf__div_into(dst_, self, other), other); }
gf_status gf_add_scalar_(gf_tensor *self, double v) { INPLACE_EW("gf_add_scalar_", gf__add_scalar_into(dst_, self, v), NULL); }
gf_status gf_mul_scalar_(gf_tensor *self, double v) { INPLACE_EW("gf_mul_scalar_", gf__mul_scalar_into(dst_, self, v), NULL); }
gf_status gf_clamp_(gf_tensor *self, double lo, double hi) { INPLACE_EW("gf_clamp_", gf__clamp_into(dst_, self, lo, hi), NULL); }
gf_status gf_add_scalar_int_(gf_tensor *self, int64_t v) {
    INPLACE_EW("gf_add_scalar_int_", gf__add_scalar_int_into(dst_, self, v), NULL);
}
gf_status gf_mul_scalar_int_(gf_tensor *self, int64_t v) {
    INPLACE_EW("gf_mul_scalar_int_", gf__mul_scalar_int_into(dst_, self, v), NULL);
}
gf_status gf_clamp_int_(gf_tensor *self, int64_t lo, int64_t hi) {
    INPLACE_EW("gf_clamp_int_", gf__clamp_int_into(dst_, self, lo, hi), NULL);
}
gf_status gf_relu_(gf_tensor *self) { INPLACE_EW("gf_relu_", gf__relu_into(dst_, self), NULL); }
gf_status gf_sigmoid_(gf_tensor *self) { INPLACE_EW("gf_sigmoid_", gf__sigmoid_into(dst_, self), NULL); }
gf_status gf_tanh_(gf_tensor *self) { INPLACE_EW("gf_tanh_", gf__tanh_into(dst_, self), NULL); }
gf_status gf_exp_(gf_tensor *self) { INPLACE_EW("gf_exp_", gf__exp_into(dst_, self), NULL); }
gf_status gf_masked_fill_(gf_tensor *self, const gf_tensor *mask, double value) {
    INPLACE_EW("gf_masked_fill_", gf__masked_fill_into(dst_, self, mask, value), mask);
}
gf_status gf_index_add_(gf_tensor *self, int dim, const gf_tensor *index, const gf_tensor *src) {
    INPLACE("gf_index_add_", gf_index_add(self, dim, index, src), 0);
}
gf_status gf_scatter_add_(gf_tensor *self, int dim, const gf_tensor *index, const gf_tensor *src) {
    INPLACE("gf_scatter_add_", gf_scatter_add(self, dim, index, src), 0);
}

/* fill_/zero_/copy_ replace every element: self's old value gets a zero
 * gradient. Built as where(all-true, new, self) so the graph says exactly
 * that without a dedicated node. */
static gf_tensor *replace_all(gf_tensor *self, const gf_tensor *src) {
    const gf_tensor *both[2] = {self, src};
    if (!gf__fw_any_tangent(both, 2) &&
        (!gf__ag_grad_enabled() || !gf__ag_any_requires_grad(both, 2))) {
        gf_tensor *r = gf__empty(self->sizes, self->rank, self->dtype, self->storage->device);
        if (r && gf__copy_into(r, src) != GF_OK) {
            gf_tensor_release(r);
            r = NULL;
        }
        return r;
    }
    gf_tensor *yes = gf__full_like_raw(self, 1.0);
    gf_tensor *mask = yes ? gf__cast(yes, GF_BOOL) : NULL;
    gf_tensor *r = mask ? gf_where(mask, src, self) : NULL;
    gf_tensor_release(yes);
    gf_tensor_release(mask);
    return r;
}

static gf_status copy_named(gf_tensor *self, const gf_tensor *src, const char *name) {
    if (!src) return gf__null_arg(name, "src");
    if (self && !gf__same_device(self, src, name)) return gf__status();
    INPLACE(name, replace_all(self, src), 2);
}

gf_status gf_copy_(gf_tensor *self, const gf_tensor *src) { return copy_named(self, src, "gf_copy_"); }

static gf_status fill_named(gf_tensor *self, double value, const char *name) {
    if (!self) return gf__null_arg(name, "self");
    if (gf__check_value(value, self->dtype, name) != GF_OK) return gf__status();
    gf_tensor *v = gf__scalar(value, self->dtype, self->storage->device);
    if (!v) return gf__status();
    gf_status s = copy_named(self, v, name);
    gf_tensor_release(v);
    return s;
}

gf_status gf_fill_(gf_tensor *self, double value) { return fill_named(self, value, "gf_fill_"); }
gf_status gf_zero_(gf_tensor *self) { return fill_named(self, 0.0, "gf_zero_"); }

/* The in-place forms defined in other files (ops_more.c): the same check,
 * compute and commit as INPLACE_EW, with fn computing self's new value.
 * self_input as INPLACE_AB's: -1 for a composite whose last node does not
 * take self itself as input 0 (self's old value then keeps its own edges
 * inside the composite, and a view's base is rebased through them).
 * fn may write into dst when it is not NULL (nothing is recorded then) or
 * ignore it and return a new tensor, which is copied in. */
gf_status gf__ag_inplace_ew(gf_tensor *self, const char *name, gf__ag_inplace_fn fn,
                            const void *ctx, const gf_tensor *other, int self_input) {
    INPLACE_AB(name, fn(dst_, self, ctx), self_input, true, other, NULL);
}
