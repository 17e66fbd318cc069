/* SPDX-License-Identifier: BSD-3-Clause */
/* fw_internal.h — forward-mode AD as the core's files see it.
 *
 * Tangents live in a tensor's autograd metadata, one entry per dual level
 * (fw_level.c). An op reports its inputs and outputs to its gf__ag_record_*
 * function (ag_record.h); that function first calls gf__fw_apply with the
 * op's jvp rule (fw_rules*.c), which runs only when a level is open and an
 * input carries a tangent at it. A rule computes the output's tangent with
 * graft's own public ops, so the tangent has reverse-mode history of its
 * own (forward-over-reverse) and tangents at other levels (nested levels).
 *
 * While the rule of level L runs, L is masked on this thread: the primals it
 * reads behave as if they had no tangent at L (PyTorch's _fw_primal), while
 * tangents at the other levels flow through the rule's ops as usual. Levels
 * are handled from the outermost in, so an inner level's tangent carries
 * the outer level's tangent of itself (forward-over-forward). */
#ifndef GRAFT_FW_INTERNAL_H
#define GRAFT_FW_INTERNAL_H

#include <stdatomic.h>

#include "internal.h"
#include "graft/forward_ad.h"

/* One tangent of a tensor: at the level whose serial is level_id. tangent
 * NULL: explicitly none (a primal unpacked from a dual, which must not take
 * its base's tangent). */
typedef struct gf_fw_entry {
    uint64_t level_id;
    gf_tensor *tangent; /* reference, or NULL */
    struct gf_fw_entry *next;
} gf_fw_entry;

/* Number of open levels (process-wide); 0 makes every hook return at once. */
extern atomic_int gf__fw_depth;
static inline bool gf__fw_enabled(void) {
    return atomic_load_explicit(&gf__fw_depth, memory_order_relaxed) > 0;
}

/* The serial of open level d (0 = outermost), or 0 when none. */
uint64_t gf__fw_level_id(int d);
/* Whether level d is masked on this thread (its rule is running). */
bool gf__fw_masked(int d);
/* Masks / unmasks level d on this thread; returns the previous mask. */
uint64_t gf__fw_mask_push(int d);
void gf__fw_mask_pop(uint64_t prev);
/* Masks every level (a custom function's forward: its tangents are the
 * jvp callback's to compute); returns the previous mask for _pop. */
uint64_t gf__fw_mask_all(void);

/* t's tangent at open level d: a new reference, or NULL (no tangent, or a
 * masked level, or a non-float tensor). A view without a tangent of its own
 * takes the region of its base's tangent when the base has one laid out
 * like the base (after an in-place write into the base). */
gf_tensor *gf__fw_tangent(const gf_tensor *t, int d);
/* Whether any of the tensors has a tangent at some unmasked open level. */
bool gf__fw_any_tangent(const gf_tensor *const *ts, int n);
/* Sets t's tangent at level d (tangent is retained; NULL: explicitly none).
 * Replaces an existing entry. */
gf_status gf__fw_set(gf_tensor *t, int d, gf_tensor *tangent);
/* t's tangents at the open, unmasked levels into *out, as entries holding
 * aliases without history (a saved tensor keeps them: gf__ag_save); *out
 * is NULL when it has none. */
gf_status gf__fw_snapshot(const gf_tensor *t, gf_fw_entry **out);
/* Gives t the tangents of a snapshot at the levels still open. */
gf_status gf__fw_restore(gf_tensor *t, const gf_fw_entry *snap);
/* Frees every entry (from gf__ag_meta_free). */
void gf__fw_entries_free(gf_fw_entry *e);

/* A jvp rule: the tangent of output j of the op, given its inputs x, their
 * tangents t at the level being handled (NULL: zero) and its outputs y.
 * Runs inside a scope: returns a reference recorded in that scope (a
 * result of graft ops, or gf__ret(gf_tensor_retain(t)) to pass a tensor
 * through); NULL with no new error means a zero tangent, NULL after an
 * error is that error. The result may have any shape
 * that broadcasts to y[j]'s and any dtype that converts to it. */
typedef gf_tensor *(*gf__fw_rule)(const void *p, gf_tensor *const *x, gf_tensor *const *t,
                                  gf_tensor *const *y, int j);

/* The hook of every op: for each open, unmasked level (outermost first)
 * where some input has a tangent, computes the tangent of every float
 * output y[j] with rule (NULL: the op has no rule, an AUTOGRAD error naming
 * op) and stores it on y[j]. view: the outputs are views of x[0] (their
 * tangents are then views of its tangent); otherwise a tangent that aliases
 * an input or its tangent, or is not laid out like its output, is copied.
 * Returns GF_OK at once when no level is open. */
gf_status gf__fw_apply(const char *op, gf__fw_rule rule, const void *p, const gf_tensor *const *x,
                       int nx, gf_tensor *const *y, int ny, bool view);

/* ---- batched levels (fw_batch.c drives them for gf_jacfwd, fw_jacrev.c
 * for gf_jacrev)
 * A batched level has a batch count B > 0: every tangent at it has sizes
 * [B, *primal sizes] (B tangents of the primal stacked on a leading dim).
 * Only rules applied with gf__fw_apply_batched know this layout; they read
 * B with gf__fw_rule_batch() (0 at a plain level) and shift their dims by
 * one. Anything that cannot honour it calls gf__fw_batch_refuse: that marks
 * the level refused (the batched pass is then discarded and gf_jacfwd /
 * gf_jacrev take the per-element loop, so a refusal never yields a wrong
 * answer) and sets an UNSUPPORTED error naming the op, which stops the
 * pass early. */
gf_status gf__fw_apply_batched(const char *op, gf__fw_rule rule, const void *p,
                               const gf_tensor *const *x, int nx, gf_tensor *const *y, int ny,
                               bool view);
/* A view of primal (its history kept) whose tangent at batched level d is
 * seed ([B, *primal]). New reference, no scope. */
gf_tensor *gf__fw_batched_dual(const gf_tensor *primal, gf_tensor *seed, int d);
/* Opens a level whose tangents carry a leading batch dim of count batch. */
gf_status gf__fw_level_enter_batched(int *level, int64_t batch);
/* The batch count of open level d (0: a plain level). */
int64_t gf__fw_batch(int d);
/* The batch count of the level whose rule runs on this thread (0: plain). */
int64_t gf__fw_rule_batch(void);
/* Marks the level whose rule runs (or level d when d >= 0) refused, and
 * sets the UNSUPPORTED error naming op. Returns that status. */
gf_status gf__fw_batch_refuse(int d, const char *op);
/* Whether batched level d was refused, and the op that refused first. */
bool gf__fw_batch_refused(int d, const char **op);
/* t ([B, *s] with s of rank r) as [B, 1, ..., 1, *s] of rank 1 + to: so
 * that it broadcasts right-aligned against primals of rank <= to. In the
 * open scope; t itself (retained into the scope) when nothing changes. */
gf_tensor *gf__fw_batch_align(gf_tensor *t, int to);

/* In-place: self was overwritten with result's value (inplace.c). self's
 * tangent at each level becomes result's, written into self's existing
 * tangent (so that views of self and its base see it), or into a new
 * tangent of self's base laid out like it when self is a view. */
gf_status gf__fw_commit_inplace(gf_tensor *self, const gf_tensor *result, const char *op);
/* The same for one level: self's new tangent there is nt (NULL: zero). */
gf_status gf__fw_commit_level(gf_tensor *self, int d, gf_tensor *nt, const char *op);
/* Stores r (a tangent of y's shape; [B, *y] at a batched level) as y's
 * tangent at level d: converted, and copied when it aliases an input x[i],
 * its tangent t[i] or y, or is not laid out like y. r stays the caller's. */
gf_status gf__fw_store(gf_tensor *y, int d, gf_tensor *r, const gf_tensor *const *x,
                       gf_tensor *const *t, int nx);

#endif
