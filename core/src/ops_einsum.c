/* SPDX-License-Identifier: BSD-3-Clause */
/* ops_einsum.c — torch.einsum (graft/shape.h), lowered to views and
 * batched matmuls so its gradients of every order are those ops' rules.
 *
 * Each operand first loses its repeated labels (gf_diagonal) and the labels
 * no other operand and not the output has (gf_sum). Operands are then
 * contracted left to right: labels of both that are still needed (by the
 * output or a later operand) are batch dims, labels of both that are not
 * are contracted, the others stay; the pair becomes [batch, left, contr] x
 * [batch, contr, right] -> [batch, left, right] through permute, reshape and
 * gf_matmul. A last permute puts the output's order. */
#include <stdio.h>
#include <string.h>

#include "amp/amp_internal.h"
#include "shape_internal.h"

#define EL_MAX 64 /* 52 letters, then the "..." dims */
#define ELL0 52

typedef struct eop {
    gf_tensor *t; /* owned by the tmps list */
    int lab[GF_MAX_RANK];
    int r;
} eop;

static int letter_id(char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return 26 + (c - 'a');
    return -1;
}

/* Parses one term (labels and at most one "..."): ids into lab (ellipsis as
 * -2 once), the count into *n. */
static bool parse_term(const char *op, const char *s, size_t len, int *lab, int *n, bool *ell) {
    *n = 0;
    *ell = false;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == ' ') continue;
        if (s[i] == '.') {
            if (*ell || i + 2 >= len || s[i + 1] != '.' || s[i + 2] != '.') {
                gf__error(GF_ERR_INVALID, "%s: a term has a stray '.' or two \"...\"", op);
                return false;
            }
            *ell = true;
            if (*n >= EL_MAX) return false;
            lab[(*n)++] = -2;
            i += 2;
            continue;
        }
        int id = letter_id(s[i]);
        if (id < 0) {
            gf__error(GF_ERR_INVALID, "%s: '%c' is not a subscript (a-z, A-Z or \"...\")", op,
                      s[i]);
            return false;
        }
        if (*n >= EL_MAX) {
            gf__error(GF_ERR_INVALID, "%s: a term has too many subscripts", op);
            return false;
        }
        lab[(*n)++] = id;
    }
    return true;
}

/* Sums t over its labels marked in `drop`, keeping the others in order. */
static bool sum_labels(sh_tmps *L, eop *o, const bool *drop) {
    int dims[GF_MAX_RANK], nd = 0, keep[GF_MAX_RANK], nk = 0;
    for (int i = 0; i < o->r; i++) {
        if (drop[o->lab[i]])
            dims[nd++] = i;
        else
            keep[nk++] = o->lab[i];
    }
    if (nd == 0) return true;
    o->t = T(gf_sum(o->t, dims, nd, false));
    memcpy(o->lab, keep, sizeof(int) * (size_t)nk);
    o->r = nk;
    return o->t != NULL;
}

/* Expands o's dims to the label sizes (broadcasting sizes of 1). */
static bool expand_to(sh_tmps *L, eop *o, const int64_t *lsize) {
    int64_t sz[GF_MAX_RANK];
    bool need = false;
    for (int i = 0; i < o->r; i++) {
        sz[i] = lsize[o->lab[i]];
        need |= sz[i] != o->t->sizes[i];
    }
    if (need) o->t = T(gf_expand(o->t, sz, o->r));
    return o->t != NULL;
}

static bool has(const eop *o, int l) {
    for (int i = 0; i < o->r; i++)
        if (o->lab[i] == l) return true;
    return false;
}

static bool prod_ok(const char *op, const int64_t *lsize, const int *labs, int n, int64_t *p) {
    *p = 1;
    for (int i = 0; i < n; i++)
        if (!gf__mul_ok(*p, lsize[labs[i]], p)) {
            gf__error(GF_ERR_OVERFLOW, "%s: a contraction's size overflows", op);
            return false;
        }
    return true;
}

/* a and b contracted over the labels both have and `later` does not need. */
static bool contract(sh_tmps *L, const char *op, eop *a, eop *b, const bool *later,
                     const int64_t *lsize) {
    int bat[GF_MAX_RANK], lef[GF_MAX_RANK], con[GF_MAX_RANK], rig[GF_MAX_RANK];
    int nb = 0, nl = 0, nc = 0, nr = 0;
    for (int i = 0; i < a->r; i++) {
        int l = a->lab[i];
        if (has(b, l) && later[l])
            bat[nb++] = l;
        else if (has(b, l))
            con[nc++] = l;
        else
            lef[nl++] = l;
    }
    for (int i = 0; i < b->r; i++)
        if (!has(a, b->lab[i])) rig[nr++] = b->lab[i];
    if (nb + nl + nr > GF_MAX_RANK) {
        gf__error(GF_ERR_SHAPE, "%s: an intermediate result would have rank %d > %d; reorder "
                  "the operands", op, nb + nl + nr, GF_MAX_RANK);
        return false;
    }
    if (!expand_to(L, a, lsize) || !expand_to(L, b, lsize)) return false;
    int64_t B, Lz, C, R;
    if (!prod_ok(op, lsize, bat, nb, &B) || !prod_ok(op, lsize, lef, nl, &Lz) ||
        !prod_ok(op, lsize, con, nc, &C) || !prod_ok(op, lsize, rig, nr, &R))
        return false;
    int pa[GF_MAX_RANK], pb[GF_MAX_RANK], k = 0;
    int order_a[GF_MAX_RANK * 3], order_b[GF_MAX_RANK * 3];
    int na = 0, nbb = 0;
    for (int i = 0; i < nb; i++) order_a[na++] = bat[i];
    for (int i = 0; i < nl; i++) order_a[na++] = lef[i];
    for (int i = 0; i < nc; i++) order_a[na++] = con[i];
    for (int i = 0; i < nb; i++) order_b[nbb++] = bat[i];
    for (int i = 0; i < nc; i++) order_b[nbb++] = con[i];
    for (int i = 0; i < nr; i++) order_b[nbb++] = rig[i];
    for (k = 0; k < na; k++)
        for (int i = 0; i < a->r; i++)
            if (a->lab[i] == order_a[k]) pa[k] = i;
    for (k = 0; k < nbb; k++)
        for (int i = 0; i < b->r; i++)
            if (b->lab[i] == order_b[k]) pb[k] = i;
    gf_tensor *ta = T(gf_permute(a->t, pa, a->r)), *tb = T(gf_permute(b->t, pb, b->r));
    gf_tensor *ma = ta ? T(gf_reshape(ta, (const int64_t[]){B, Lz, C}, 3)) : NULL;
    gf_tensor *mb = tb ? T(gf_reshape(tb, (const int64_t[]){B, C, R}, 3)) : NULL;
    gf_tensor *mm = ma && mb ? T(gf_matmul(ma, mb)) : NULL;
    int64_t sz[GF_MAX_RANK];
    int r = 0;
    for (int i = 0; i < nb; i++) a->lab[r] = bat[i], sz[r++] = lsize[bat[i]];
    for (int i = 0; i < nl; i++) a->lab[r] = lef[i], sz[r++] = lsize[lef[i]];
    for (int i = 0; i < nr; i++) a->lab[r] = rig[i], sz[r++] = lsize[rig[i]];
    a->r = r;
    a->t = mm ? T(gf_reshape(mm, sz, r)) : NULL;
    return a->t != NULL;
}

static gf_tensor *einsum(sh_tmps *L, const char *op, const char *eq, gf_tensor *const *ops,
                         int n) {
    const char *arrow = strstr(eq, "->");
    size_t lhs_len = arrow ? (size_t)(arrow - eq) : strlen(eq);
    eop o[64];
    int ell_n[64];
    int E = 0; /* ellipsis dims */
    int nterms = 0;
    int64_t lsize[EL_MAX];
    for (int i = 0; i < EL_MAX; i++) lsize[i] = -1;
    size_t pos = 0;
    while (pos <= lhs_len) {
        size_t end = pos;
        while (end < lhs_len && eq[end] != ',') end++;
        if (nterms >= n) {
            gf__error(GF_ERR_INVALID, "%s: the equation has more terms than the %d operands", op,
                      n);
            return NULL;
        }
        int lab[EL_MAX], cnt;
        bool ell;
        if (!parse_term(op, eq + pos, end - pos, lab, &cnt, &ell)) return NULL;
        const gf_tensor *t = ops[nterms];
        int letters = cnt - (ell ? 1 : 0);
        if (ell ? letters > t->rank : letters != t->rank) {
            gf__error(GF_ERR_SHAPE, "%s: operand %d has %d dims but its term has %d subscripts%s",
                      op, nterms, t->rank, letters, ell ? " and \"...\"" : "");
            return NULL;
        }
        ell_n[nterms] = t->rank - letters;
        if (ell_n[nterms] > E) E = ell_n[nterms];
        eop *e = &o[nterms];
        e->t = T(gf_tensor_retain((gf_tensor *)t));
        e->r = 0;
        for (int i = 0; i < cnt; i++) {
            if (lab[i] == -2) {
                for (int j = 0; j < ell_n[nterms]; j++) e->lab[e->r++] = -100 - j; /* fixed below */
            } else {
                e->lab[e->r++] = lab[i];
            }
        }
        nterms++;
        pos = end + 1;
    }
    if (nterms != n) {
        gf__error(GF_ERR_INVALID, "%s: the equation has %d terms for %d operands", op, nterms, n);
        return NULL;
    }
    if (E > EL_MAX - ELL0) {
        gf__error(GF_ERR_INVALID, "%s: too many \"...\" dims", op);
        return NULL;
    }
    /* ellipsis labels, right-aligned; sizes (1 broadcasts) */
    for (int k = 0; k < n; k++) {
        for (int i = 0; i < o[k].r; i++)
            if (o[k].lab[i] <= -100) o[k].lab[i] = ELL0 + (E - ell_n[k]) + (-100 - o[k].lab[i]);
        for (int i = 0; i < o[k].r; i++) {
            int l = o[k].lab[i];
            int64_t s = ops[k]->sizes[i];
            if (lsize[l] < 0 || lsize[l] == 1)
                lsize[l] = s;
            else if (s != 1 && s != lsize[l]) {
                char name[8];
                if (l < ELL0)
                    snprintf(name, sizeof name, "'%c'", l < 26 ? 'A' + l : 'a' + l - 26);
                else
                    snprintf(name, sizeof name, "...");
                gf__error(GF_ERR_SHAPE, "%s: subscript %s has size %lld in operand %d but %lld "
                          "elsewhere (sizes must match or be 1)", op, name, (long long)s, k,
                          (long long)lsize[l]);
                return NULL;
            }
        }
    }
    /* output labels */
    int out[EL_MAX], no = 0;
    int count[EL_MAX] = {0};
    for (int k = 0; k < n; k++)
        for (int i = 0; i < o[k].r; i++) count[o[k].lab[i]]++;
    if (arrow) {
        int lab[EL_MAX], cnt;
        bool ell;
        if (!parse_term(op, arrow + 2, strlen(arrow + 2), lab, &cnt, &ell)) return NULL;
        for (int i = 0; i < cnt; i++) {
            if (lab[i] == -2) {
                for (int j = 0; j < E; j++) out[no++] = ELL0 + j;
                continue;
            }
            if (!count[lab[i]]) {
                gf__error(GF_ERR_INVALID, "%s: output subscript '%c' does not appear in any "
                          "input", op, lab[i] < 26 ? 'A' + lab[i] : 'a' + lab[i] - 26);
                return NULL;
            }
            for (int j = 0; j < no; j++)
                if (out[j] == lab[i]) {
                    gf__error(GF_ERR_INVALID, "%s: output subscript '%c' appears more than once",
                              op, lab[i] < 26 ? 'A' + lab[i] : 'a' + lab[i] - 26);
                    return NULL;
                }
            out[no++] = lab[i];
        }
    } else {
        for (int j = 0; j < E; j++) out[no++] = ELL0 + j;
        for (int l = 0; l < ELL0; l++)
            if (count[l] == 1) out[no++] = l;
    }
    if (no > GF_MAX_RANK) {
        gf__error(GF_ERR_SHAPE, "%s: the output would have rank %d > %d", op, no, GF_MAX_RANK);
        return NULL;
    }
    bool in_out[EL_MAX] = {false};
    for (int i = 0; i < no; i++) in_out[out[i]] = true;
    /* per operand: diagonals of repeated labels, then sums of private labels */
    for (int k = 0; k < n; k++) {
        eop *e = &o[k];
        for (bool again = true; again && e->t;) {
            again = false;
            for (int i = 0; i < e->r && !again; i++)
                for (int j = i + 1; j < e->r && !again; j++) {
                    if (e->lab[i] != e->lab[j]) continue;
                    if (e->t->sizes[i] != e->t->sizes[j]) {
                        gf__error(GF_ERR_SHAPE, "%s: a repeated subscript of operand %d spans "
                                  "dims of sizes %lld and %lld", op, k,
                                  (long long)e->t->sizes[i], (long long)e->t->sizes[j]);
                        return NULL;
                    }
                    int l = e->lab[i], nl[GF_MAX_RANK], m = 0;
                    for (int q = 0; q < e->r; q++)
                        if (q != i && q != j) nl[m++] = e->lab[q];
                    nl[m++] = l;
                    e->t = T(gf_diagonal(e->t, 0, i, j));
                    memcpy(e->lab, nl, sizeof(int) * (size_t)m);
                    e->r = m;
                    again = true;
                }
        }
        if (!e->t) return NULL;
    }
    for (int k = 0; k < n; k++) {
        bool drop[EL_MAX];
        for (int l = 0; l < EL_MAX; l++) {
            bool elsewhere = in_out[l];
            for (int j = 0; j < n && !elsewhere; j++) elsewhere = j != k && has(&o[j], l);
            drop[l] = !elsewhere;
        }
        if (!sum_labels(L, &o[k], drop)) return NULL;
    }
    /* left to right */
    for (int k = 1; k < n; k++) {
        bool later[EL_MAX];
        for (int l = 0; l < EL_MAX; l++) {
            later[l] = in_out[l];
            for (int j = k + 1; j < n && !later[l]; j++) later[l] = has(&o[j], l);
        }
        /* labels of o[0] alone that nothing later needs */
        bool drop[EL_MAX];
        for (int l = 0; l < EL_MAX; l++) drop[l] = !later[l] && !has(&o[k], l);
        if (!sum_labels(L, &o[0], drop)) return NULL;
        if (!contract(L, op, &o[0], &o[k], later, lsize)) return NULL;
    }
    eop *r = &o[0];
    bool drop[EL_MAX];
    for (int l = 0; l < EL_MAX; l++) drop[l] = !in_out[l];
    if (!sum_labels(L, r, drop)) return NULL;
    if (!expand_to(L, r, lsize)) return NULL;
    int perm[GF_MAX_RANK];
    for (int i = 0; i < no; i++)
        for (int j = 0; j < r->r; j++)
            if (r->lab[j] == out[i]) perm[i] = j;
    gf_tensor *y = T(gf_permute(r->t, perm, no));
    /* a result sharing an operand's memory (a permuted view) stays a view,
     * as PyTorch's einsum of one operand. */
    return y;
}

gf_tensor *gf_einsum(const char *equation, gf_tensor *const *operands, int n) {
    GF__AMP_HOOK_LIST(EINSUM, operands, n, gf_einsum(equation, amp_list, n));
    const char *op = "einsum";
    if (!equation) {
        gf__null_arg_of(op, "equation", GF__ARG_STRING);
        return NULL;
    }
    if (n < 1 || n > 32 || !operands) {
        gf__error(GF_ERR_INVALID, "einsum: 1 to 32 operands are needed, got %d", n);
        return NULL;
    }
    for (int k = 0; k < n; k++) {
        if (sh_null(op, operands[k], "an operand")) return NULL;
        if (!sh_check_dtype_moved(operands[k], op)) return NULL;
        if (k && !gf__same_device(operands[0], operands[k], op)) return NULL;
        if (operands[k]->dtype != operands[0]->dtype) {
            gf__error(GF_ERR_DTYPE, "einsum: operands must have one dtype, got %s and %s",
                      gf_dtype_name(operands[0]->dtype), gf_dtype_name(operands[k]->dtype));
            return NULL;
        }
    }
    int s = gf__scope_suspend();
    sh_tmps l = {0}, *L = &l;
    gf_tensor *y = einsum(L, op, equation, operands, n);
    if (!y) L->bad = true;
    y = sh_finish(L, y);
    gf__scope_resume(s);
    return sh_ret(y);
}
