/* SPDX-License-Identifier: BSD-3-Clause */
/* ref_internal.h — what the reference plugin's files share.
 *
 * The reference plugin is plain C, written for clarity over speed: it is the
 * oracle of every cross-device test and the starting point of third-party
 * plugins. Buffers are host memory (malloc'ed, 64-byte aligned), so a buffer
 * handle is simply the address of byte 0.
 *
 * Each op family lives in its own file and exports two functions:
 *   uint32_t ref_<family>_support(const gfp_op_query *q);  GFP_SUPPORT_* for q
 *   gfp_status ref_<family>_launch(uint32_t op, const gfp_tensor *const *in,
 *                                  uint32_t n_in, const gfp_tensor *const *out,
 *                                  uint32_t n_out, const void *params);
 * ref_plugin.c routes query_op and launch to them by the op's family
 * (graft_ops.def), after the kit's launch preamble (plugin_kit.h) has checked
 * the counts, the params struct and every tensor descriptor.
 * Kernels validate what they rely on (counts, ranks, params struct_size) and
 * fail with GFP_ERR_INVALID and a message rather than read out of bounds. */
#ifndef GRAFT_REF_INTERNAL_H
#define GRAFT_REF_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "plugin_kit.h"

/* The float dtypes the reference computes in: f32 and f64, and f16 and bf16
 * (loaded exactly, computed in double or, for the elementwise formulas, in
 * f32 as PyTorch does, and rounded once to nearest even on store). */
#define REF_DT_FLOAT (PK_DT_FLOAT | PK_DT_HALF)
static inline bool ref_is_float(int32_t dtype) { return pk_is_float(dtype) || pk_is_half(dtype); }

/* ---- host buffers (ref_hostbuf.c; the cpu_onednn plugin uses them too) */
/* Defined by each plugin's entry file: its name for messages and the magic
 * number in front of its buffers (so a buffer of another plugin is caught). */
typedef struct ref_hostbuf_kind {
    const char *plugin;
    uint64_t magic;
} ref_hostbuf_kind;
extern const ref_hostbuf_kind ref_hostbuf_self;
/* The slots buffer_alloc, buffer_free and buffer_wrap_host (ABI 1.1) of a
 * plugin with one host device (the device handle is not used). */
gfp_status ref_hostbuf_alloc(void *device, uint64_t nbytes, gfp_buffer *buffer, void **host_ptr);
void ref_hostbuf_free(void *device, gfp_buffer buffer);
gfp_status ref_hostbuf_wrap(void *device, void *host_ptr, uint64_t nbytes, gfp_buffer *buffer);
/* Size of a live buffer (own or adopted); INVALID with a message otherwise. */
gfp_status ref_hostbuf_size(gfp_buffer buffer, uint64_t *nbytes);
/* Checks buffer+offset..+n against the buffer; messages start with `what`. */
gfp_status ref_hostbuf_range(const char *what, gfp_buffer buffer, uint64_t offset, uint64_t n);
/* ref_hostbuf_size for the kit's view checks (pk_device_rules.buffer_size):
 * INVALID for NULL too. */
gfp_status ref_hostbuf_size_of(const void *ctx, gfp_buffer buffer, uint64_t *nbytes);
uint64_t ref_hostbuf_max_alloc(void);
long ref_hostbuf_live(void); /* own and adopted buffers not yet freed (ref_hostdev.c reports them) */

/* ---- the one host device (ref_hostdev.c; the cpu_onednn plugin uses it too) */
/* The slot device_count: one device. */
gfp_status ref_hostdev_count(void *plugin_ctx, uint32_t *count);
/* NOT_FOUND with a message for an index other than 0; `what` names the slot. */
gfp_status ref_hostdev_check(const char *what, uint32_t index);
/* The device handle device_open gives out. */
void *ref_hostdev_handle(void);
/* device_props of a host device (host-addressable, thread-safe, type "cpu",
 * the machine's memory, the host buffers' largest allocation), written as
 * far as props->struct_size covers. */
gfp_status ref_hostdev_props(uint32_t index, gfp_device_props *props, const char *name,
                             uint32_t dtypes, const char *driver);
/* At shutdown: logs a warning when buffers are still live. */
void ref_hostdev_report_leaks(void);

/* ---- element access (ref_util.c) */
/* Address of element 0 of t (buffer + byte offset). */
char *ref_base(const gfp_tensor *t);
/* Element offset (in elements) of multi-index idx through t's strides. */
int64_t ref_offset(const gfp_tensor *t, const int64_t *idx);
/* Advances a row-major multi-index over sizes; false once past the end. */
bool ref_next_index(int64_t *idx, const int64_t *sizes, int rank);
/* Load/store the element at element offset off, converted to/from double or
 * int64 (integers are exact through the i64 forms). Bool stores value != 0. */
double ref_load(const gfp_tensor *t, int64_t off);
void ref_store(const gfp_tensor *t, int64_t off, double v);
int64_t ref_load_i64(const gfp_tensor *t, int64_t off);
void ref_store_i64(const gfp_tensor *t, int64_t off, int64_t v);
/* t's elements as doubles (ref_load's values), dense in row-major order, in
 * a malloc'd array the caller frees; NULL when out of memory. Kernels that
 * read each element many times (convolutions, matmul) read them from here:
 * the same values, without a dtype switch and a stride walk per use. */
double *ref_dense_f64(const gfp_tensor *t);

/* ---- complex dtypes (ref_complex.c) */
/* ref_complex.c includes <complex.h>; the other files see the values as
 * the C99 type too. */
#include <complex.h>
/* glibc's <complex.h> defines CMPLX for GCC only; clang has the builtin. */
#ifndef CMPLX
#define CMPLX(x, y) __builtin_complex((double)(x), (double)(y))
#endif
/* <complex.h>'s one-letter macro I is no name for anything else in the
 * plugin to collide with. */
#undef I
bool ref_is_complex(int32_t dtype);
/* Element at off as a complex number (a real dtype gives value + 0i). */
double complex ref_load_c(const gfp_tensor *t, int64_t off);
/* Stores v, rounding each part once; a real t takes the real part. */
void ref_store_c(const gfp_tensor *t, int64_t off, double complex v);
/* The elementwise family on complex dtypes: what it takes (dtype arrays as
 * in gfp_op_query), that said for a message, and the kernel (t[0] the
 * output, t[1..n) the inputs, of the output's shape; numel > 0). */
bool ref_complex_accepts(uint32_t op, const int32_t *in, const int32_t *out);
const char *ref_complex_accepted_text(uint32_t op);
gfp_status ref_complex_run(uint32_t op, const gfp_tensor *const *t, int n, const void *params);
/* One value of a unary op (a: POW_SCALAR's exponent) or a binary op that
 * the kernel above computes, in double complex; the cpu_onednn plugin's
 * complex loops call them so that their results are the reference's. */
double complex ref_complex_unary(uint32_t op, double complex z, double a);
double complex ref_complex_binary(uint32_t op, double complex a, double complex b);

/* Neumaier's compensated sum: the rounding error of every addition is
 * carried apart, so the result is close to the exact sum rounded once. */
typedef struct ref_ksum {
    double s, c;
} ref_ksum;
void ref_ksum_add(ref_ksum *k, double v);
/* Once the sum is inf or NaN the compensation means nothing. */
double ref_ksum_value(const ref_ksum *k);

/* ---- families */
/* One handler per family (PK_FAMILIES in plugin_kit.h). */
#define REF_FAMILY(f, set)                                                                 \
    uint32_t ref_##f##_support(const gfp_op_query *q);                                                        \
    gfp_status ref_##f##_launch(uint32_t op, const gfp_tensor *const *in, uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out, const void *params);
PK_FAMILIES(REF_FAMILY)
REF_FAMILY(optim, 0) /* ref_optim.c: ADAM_UPDATE (1.3); the CPU plugins only */
REF_FAMILY(fft, 0)   /* ref_fft.c: FFT (1.3); cpu_onednn serves it with these kernels too */
REF_FAMILY(rnn, 0)   /* ref_rnn.c: LSTM_CELL_BACKWARD (1.3); the CPU plugins only */
#undef REF_FAMILY

#endif
