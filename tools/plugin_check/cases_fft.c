/* SPDX-License-Identifier: BSD-3-Clause */
/* cases_fft.c — the cases of the discrete Fourier transform (FFT).
 *
 * The dtypes say the kind (graft_ops.def): complex to the same complex
 * dtype is C2C, real to the complex dtype of its precision R2C, complex to
 * the real dtype of its precision C2R; each combination the device stores
 * runs forward and inverse transforms, scaled or not, over one, two and three
 * dims listed in any order (for R2C and C2R the last one listed is the
 * onesided dim, and it need not be the tensor's last), over lengths that
 * are powers of two, mixed radices, primes (Bluestein's territory in most
 * libraries), 1, and an empty batch; without --quick also long lines
 * (2^14) and a long prime (1021). The runner's layouts add transposed,
 * sliced and stride-0 (broadcast) inputs. C2R inputs are random in every
 * bin: the imaginary parts the definition ignores (bins 0 and n/2 of the
 * onesided dim) must be ignored. Outputs are sums over the whole line:
 * PC_TOL_ACCUMULATE, part by part. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "pc.h"

static int combos_fft(const pc_op *op, uint32_t dtypes, pc_combo *out, int max) {
    (void)op;
    int n = 0;
    static const int32_t cx[2] = {GFP_C64, GFP_C128};
    for (int k = 0; k < 2; k++) {
        int32_t c = cx[k], r = pc_part_dtype(c);
        if (!(dtypes & GFP_DTYPE_BIT(c))) continue;
        int32_t pairs[3][2] = {{c, c}, {r, c}, {c, r}}; /* C2C, R2C, C2R */
        for (int j = 0; j < 3 && n < max; j++) {
            if (!(dtypes & GFP_DTYPE_BIT(pairs[j][0])) || !(dtypes & GFP_DTYPE_BIT(pairs[j][1])))
                continue;
            pc_combo *cb = &out[n++];
            memset(cb, 0, sizeof *cb);
            cb->n_in = cb->n_out = 1;
            cb->in[0] = pairs[j][0];
            cb->out[0] = pairs[j][1];
        }
    }
    return n;
}

typedef struct fft_case {
    int rank;
    int64_t sizes[3]; /* the real side's sizes (the signal lengths) */
    int n_dims;
    int32_t dims[3]; /* for R2C / C2R the last listed is onesided */
    bool inverse;
    int scale; /* 0: 1, 1: 1/n, 2: 1/sqrt(n) */
    const char *what;
    bool large;
} fft_case;

static const fft_case fft_cases[] = {
    {2, {3, 16}, 1, {1}, false, 0, "radix 2", false},
    {2, {4, 12}, 1, {1}, true, 1, "mixed radix", false},
    {2, {17, 3}, 1, {0}, false, 2, "prime, strided dim", false},
    {2, {6, 10}, 2, {0, 1}, false, 0, "2-D", false},
    {3, {5, 3, 8}, 2, {2, 0}, true, 1, "2-D, dims out of order", false},
    {3, {4, 6, 9}, 3, {1, 2, 0}, false, 0, "3-D, onesided dim 0", false},
    {2, {4, 1}, 1, {1}, false, 0, "length 1", false},
    {2, {5, 2}, 1, {1}, true, 0, "length 2", false},
    {2, {0, 8}, 1, {1}, false, 0, "empty batch", false},
    {2, {4, 16384}, 1, {1}, false, 1, "long lines", true},
    {2, {3, 1021}, 1, {1}, true, 2, "long prime", true},
};
#define N_FFT_CASES (sizeof fft_cases / sizeof fft_cases[0])

static bool build_fft(const pc_op *op, const pc_combo *cb, int k, bool quick, pc_case *c) {
    (void)op;
    const fft_case *fc = NULL;
    for (size_t i = 0; i < N_FFT_CASES; i++) {
        if (fft_cases[i].large && quick) continue;
        if (k-- == 0) {
            fc = &fft_cases[i];
            break;
        }
    }
    if (!fc) return false;
    int32_t in_dt = cb->in[0], out_dt = cb->out[0];
    uint32_t kind = pc_is_complex(in_dt) && pc_is_complex(out_dt) ? GFP_FFT_C2C
                    : pc_is_complex(out_dt)                       ? GFP_FFT_R2C
                                                                  : GFP_FFT_C2R;
    int64_t full[GFP_MAX_RANK], half[GFP_MAX_RANK];
    for (int d = 0; d < fc->rank; d++) full[d] = half[d] = fc->sizes[d];
    int one = fc->dims[fc->n_dims - 1];
    half[one] = full[one] / 2 + 1;
    const int64_t *in_s = kind == GFP_FFT_C2R ? half : full;
    const int64_t *out_s = kind == GFP_FFT_R2C ? half : full;
    double n = 1;
    for (int i = 0; i < fc->n_dims; i++) n *= (double)full[fc->dims[i]];
    pc_case_init(c, 1, 1);
    pc_arg_set(&c->in[0], in_dt, fc->rank, in_s, PC_GEN_UNIFORM, -1, 1);
    pc_arg_set(&c->out[0], out_dt, fc->rank, out_s, PC_GEN_ZEROS, 0, 0);
    c->out[0].tol = PC_TOL_ACCUMULATE;
    gfp_fft_params *p = &c->params.fft;
    p->struct_size = sizeof *p;
    p->kind = kind;
    p->inverse = fc->inverse;
    p->n_dims = (uint32_t)fc->n_dims;
    for (int i = 0; i < fc->n_dims; i++) p->dims[i] = fc->dims[i];
    p->scale = fc->scale == 0 ? 1.0 : fc->scale == 1 ? 1.0 / n : 1.0 / sqrt(n);
    c->has_params = true;
    c->large = fc->large;
    char buf[48], dims[24] = "";
    pc_shape_text(buf, sizeof buf, fc->rank, full);
    for (int i = 0; i < fc->n_dims; i++)
        snprintf(dims + strlen(dims), sizeof dims - strlen(dims), "%s%d", i ? "," : "",
                 (int)fc->dims[i]);
    static const char *kinds[3] = {"c2c", "r2c", "c2r"};
    pc_label(c, "%s %s %s dims %s (%s)", kinds[kind], fc->inverse ? "inverse" : "forward", buf,
             dims, fc->what);
    return true;
}

bool pc_cases_fft(const gfp_op_info *row, pc_op *op) {
    if (row->family != GFP_FAMILY_FFT || row->op != GFP_OP_FFT) return false;
    op->combos = combos_fft;
    op->build = build_fft;
    return true;
}
