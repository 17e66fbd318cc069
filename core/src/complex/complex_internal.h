/* SPDX-License-Identifier: BSD-3-Clause */
/* complex_internal.h — what the core's files ask about complex dtypes
 * (complex_ops.c, complex_grad.c). Not installed. */
#ifndef GRAFT_COMPLEX_INTERNAL_H
#define GRAFT_COMPLEX_INTERNAL_H

#include "../internal.h"

/* Floating or complex: the dtypes that may require grad. */
bool gf__dtype_differentiable(gf_dtype d);
/* PyTorch's promotion when a complex dtype is involved (a and b need not
 * both be complex): the complex dtype of the promoted real parts. */
gf_dtype gf__promote_complex(gf_dtype a, gf_dtype b);
/* DTYPE: opname is not defined for complex tensors (dtype dt). */
gf_status gf__complex_refused(const char *opname, gf_dtype dt);
/* gf__complex_refused when t is complex, else GF_OK. */
gf_status gf__refuse_complex(const gf_tensor *t, const char *opname);
/* Before a launch whose query names a complex dtype: refuses an op that
 * has no complex meaning in graft (the message names the public call). */
gf_status gf__complex_check_launch(gfp_op op, const char *opname, const gfp_op_query *q);
/* The (re, im) view of complex z, of its real dtype, without autograd;
 * NULL (SHAPE, message set) when z has rank GF_MAX_RANK. */
gf_tensor *gf__parts_view(const gf_tensor *z);
/* |z| of a complex z (gf_abs's complex path), recorded for autograd. */
gf_tensor *gf__complex_abs(const gf_tensor *z);
/* gf_conj(t) for a complex t, a new reference to t otherwise; not in any
 * scope; differentiable. */
gf_tensor *gf__conj_if_complex(const gf_tensor *t);
/* A gradient g converted to dtype dt for an input of that dtype: a complex
 * g for a real input gives its real part (PyTorch's rule at the
 * real-to-complex boundary), then the dtype's conversion. New reference,
 * not in any scope; differentiable. */
gf_tensor *gf__grad_to_dtype(const gf_tensor *g, gf_dtype dt);

/* ---- autograd of the complex ops (complex_grad.c) */
typedef enum gf_cx_view {
    GF_CX_VIEW_AS_REAL = 0,
    GF_CX_VIEW_AS_COMPLEX,
    GF_CX_REAL,
    GF_CX_IMAG
} gf_cx_view;
gf_status gf__cx_record_view(const gf_tensor *in, gf_tensor *out, gf_cx_view kind);
gf_status gf__cx_record_complex(const gf_tensor *re, const gf_tensor *im, gf_tensor *z);
gf_status gf__cx_record_conj(const gf_tensor *z, gf_tensor *y);
gf_status gf__cx_record_abs(const gf_tensor *z, gf_tensor *y);

#endif
