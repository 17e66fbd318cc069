/* SPDX-License-Identifier: BSD-3-Clause */
/* cases_fft.c — the catalogue entry of the discrete Fourier transform (FFT).
 *
 * Every kind of the op has a complex input or output (c64, c128), and the
 * checker does not generate or compare complex arrays yet (runner.c's
 * pc_stored_dtypes leaves those dtypes out), so the entry offers no dtype
 * combination: the op is listed, not run. The transforms are checked
 * against numpy's values and through the core in tests/ops/test_fft.c. */
#include "pc.h"

static int combos_fft(const pc_op *op, uint32_t dtypes, pc_combo *out, int max) {
    (void)op, (void)out, (void)max;
    (void)dtypes; /* never holds a complex dtype (see above) */
    return 0;
}

static bool build_fft(const pc_op *op, const pc_combo *cb, int k, bool quick, pc_case *c) {
    (void)op, (void)cb, (void)k, (void)quick, (void)c;
    return false;
}

bool pc_cases_fft(const gfp_op_info *row, pc_op *op) {
    if (row->family != GFP_FAMILY_FFT || row->op != GFP_OP_FFT) return false;
    op->combos = combos_fft;
    op->build = build_fft;
    return true;
}
