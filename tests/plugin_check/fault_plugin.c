/* SPDX-License-Identifier: BSD-3-Clause */
/* fault_plugin.c — the reference plugin with one planted fault, to show that
 * graft-plugin-check finds it and names it.
 *
 * Built from plugins/reference/ref_*.c, whose entry point is renamed at
 * compile time (-Dgraft_plugin_negotiate=ref_inner_negotiate), plus this
 * file, which exports the real entry point: it takes the reference's table
 * and changes one behaviour, chosen by one of
 *   FAULT_OOB     mul writes one element past the end of its output
 *   FAULT_WRONG   sigmoid is off by a relative 1e-3 on every other element
 *   FAULT_LEAK    buffer_free keeps every 7th buffer (never freed)
 *   FAULT_STRUCT  the table's struct_size is 16 bytes more than its minor's table
 *   FAULT_CONJ    complex matmul returns the conjugate of the product (a sign
 *                 slip in a complex GEMM)
 *   FAULT_FFTSIGN an FFT with a complex output returns the conjugate (for a
 *                 real input, the transform with the exponent's sign flipped)
 * Nothing else differs from the reference, so anything else the checker
 * reports for these plugins is a false alarm. */
#include <stdatomic.h>
#include <string.h>

#include "ref_internal.h"

#undef graft_plugin_negotiate

gfp_status ref_inner_negotiate(const gfp_negotiate_request *request, const gfp_plugin **table);

#if defined(FAULT_OOB)
#define FAULT_NAME "fault-oob"
#elif defined(FAULT_WRONG)
#define FAULT_NAME "fault-wrong"
#elif defined(FAULT_LEAK)
#define FAULT_NAME "fault-leak"
#elif defined(FAULT_STRUCT)
#define FAULT_NAME "fault-struct"
#elif defined(FAULT_CONJ)
#define FAULT_NAME "fault-conj"
#elif defined(FAULT_FFTSIGN)
#define FAULT_NAME "fault-fftsign"
#else
#error "define one of FAULT_OOB, FAULT_WRONG, FAULT_LEAK, FAULT_STRUCT, FAULT_CONJ, FAULT_FFTSIGN"
#endif

static const gfp_plugin *inner;
static gfp_plugin table;

#if defined(FAULT_OOB)
/* Element offset of t's last element. */
static int64_t last_offset(const gfp_tensor *t) {
    int64_t off = 0;
    for (int d = 0; d < t->rank; d++) off += (t->sizes[d] - 1) * t->strides[d];
    return off;
}
#endif

static gfp_status fault_launch(void *device, uint32_t op, const gfp_tensor *const *in,
                               uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                               const void *params) {
    gfp_status st = inner->launch(device, op, in, n_in, out, n_out, params);
    if (st != GFP_OK || n_out < 1 || pk_numel(out[0]) == 0) return st;
    const gfp_tensor *y = out[0];
#if defined(FAULT_OOB)
    if (op == GFP_OP_MUL) {
        /* The element after the last one: outside the view, maybe outside the buffer. */
        size_t es = pk_dtype_size(y->dtype);
        memset(ref_base(y) + (last_offset(y) + 1) * (int64_t)es, 0x42, es);
    }
#elif defined(FAULT_WRONG)
    if (op == GFP_OP_SIGMOID) {
        int64_t idx[GFP_MAX_RANK] = {0}, i = 0;
        do {
            int64_t off = ref_offset(y, idx);
            if (i++ % 2) ref_store(y, off, ref_load(y, off) * (1 + 1e-3));
        } while (ref_next_index(idx, y->sizes, y->rank));
    }
#elif defined(FAULT_CONJ) || defined(FAULT_FFTSIGN)
#if defined(FAULT_CONJ)
    if (op == GFP_OP_MATMUL && ref_is_complex(y->dtype)) {
#else
    if (op == GFP_OP_FFT && ref_is_complex(y->dtype)) {
#endif
        int64_t idx[GFP_MAX_RANK] = {0};
        do {
            int64_t off = ref_offset(y, idx);
            ref_store_c(y, off, conj(ref_load_c(y, off)));
        } while (ref_next_index(idx, y->sizes, y->rank));
    }
#else
    (void)y;
#endif
    return st;
}

#if defined(FAULT_LEAK)
static atomic_long frees;

static void fault_buffer_free(void *device, gfp_buffer buffer) {
    if (atomic_fetch_add(&frees, 1) % 7 == 6) return; /* kept: a leak */
    inner->buffer_free(device, buffer);
}
#endif

GFP_EXPORT gfp_status graft_plugin_negotiate(const gfp_negotiate_request *request,
                                             const gfp_plugin **out);

GFP_EXPORT gfp_status graft_plugin_negotiate(const gfp_negotiate_request *request,
                                             const gfp_plugin **out) {
    gfp_status st = ref_inner_negotiate(request, &inner);
    if (out) *out = NULL;
    if (st != GFP_OK || !out) return st;
    table = *inner;
    table.name = FAULT_NAME;
    table.launch = fault_launch;
#if defined(FAULT_LEAK)
    table.buffer_free = fault_buffer_free;
#elif defined(FAULT_STRUCT)
    table.struct_size = sizeof table + 16; /* claims slots it does not have */
#endif
    *out = &table;
    return GFP_OK;
}
