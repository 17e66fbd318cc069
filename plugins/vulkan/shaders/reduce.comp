/* SPDX-License-Identifier: BSD-3-Clause */
#version 450
// graft: bindings 4
// graft: f16
// Reductions over a set of dims: SUM MEAN PROD AMAX AMIN VAR LOGSUMEXP and
// MAX_DIM / MIN_DIM (values and i64 indices). MODE 0: one workgroup per
// output (long lines), MODE 1: one invocation per output (short lines).
#include "common.glsl"
#include "ops.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint OP = 100u;
layout(constant_id = 2) const uint DT = 0u;
layout(constant_id = 3) const uint MODE = 0u;
TENSOR(1, y)
TENSOR(2, x)
TENSOR(3, i)
TENSOR_INT_IO(x)
TENSOR_INT_IO(y)
TENSOR_F32_IO(x)
TENSOR_F32_IO(y)
#include "reduce_params.glsl"

// f32, and f16 through f32 (loads widen, the result is rounded once).
#define FT float
#define FN(n) n##_f32
#define LD(k) x_ldf(DT, k)
#define ST(k, v) y_stf(DT, k, v)
#define CORR pwf(R_CORR32)
#define EXPF exp
#define LOGF log
#include "reduce_float.glsl"
#undef FT
#undef FN
#undef LD
#undef ST
#undef CORR
#undef EXPF
#undef LOGF
#if GF_F64
#define FT double
#define FN(n) n##_f64
#define LD(k) x_f64[k]
#define ST(k, v) y_f64[k] = (v)
#define CORR pwd(R_CORR)
#include "glsl_dmath.glsl" // plugins/common: exp and log in double
#define EXPF gf_dexp
#define LOGF gf_dlog
#include "reduce_float.glsl"
#endif

shared int64_t sh_v[gl_WorkGroupSize.x];
shared uint sh_j[gl_WorkGroupSize.x];

// Integers and bool: sums and products wrap in int64; extremes keep the
// first index. Bool amax / amin are any / all (values load as 0 / 1).
void reduce_int(uint xb, uint yo, uint io, uint lid, uint j0, uint step, bool group) {
    uint n = P.w[R_LEN];
    bool ext = OP != OP_SUM && OP != OP_PROD;
    bool largest = OP == OP_AMAX || OP == OP_MAX_DIM;
    int64_t a = OP == OP_PROD ? 1l : 0l;
    uint ai = 0xffffffffu;
    for (uint j = j0; j < n; j += step) {
        int64_t v = x_ldi(DT, line_offset(xb, j));
        if (OP == OP_SUM) a += v;
        else if (OP == OP_PROD) a *= v;
        else if (ai == 0xffffffffu || (largest ? v > a : v < a)) { a = v; ai = j; }
    }
    if (group) {
        sh_v[lid] = a;
        sh_j[lid] = ai;
        for (uint s = gl_WorkGroupSize.x / 2u; s > 0u; s >>= 1) {
            barrier();
            if (lid < s) {
                uint o = lid + s;
                if (OP == OP_SUM) sh_v[lid] += sh_v[o];
                else if (OP == OP_PROD) sh_v[lid] *= sh_v[o];
                else if (sh_j[o] != 0xffffffffu) {
                    int64_t va = sh_v[o], vb = sh_v[lid];
                    bool better = sh_j[lid] == 0xffffffffu || (largest ? va > vb : va < vb) ||
                                  (va == vb && sh_j[o] < sh_j[lid]);
                    if (better) { sh_v[lid] = va; sh_j[lid] = sh_j[o]; }
                }
            }
        }
        barrier();
        a = sh_v[0];
        ai = sh_j[0];
    }
    if (lid == 0u || !group) {
        y_sti(DT, yo, a);
        if (OP == OP_MAX_DIM || OP == OP_MIN_DIM) i_i64[io] = int64_t(ai);
    }
}

void main() {
    uint nout = P.w[R_NOUT];
    if (MODE == 0u) {
        uint o = group_linear();
        if (o >= nout) return; // uniform across the group
        uint xb, yo, io;
        out_offsets(o, xb, yo, io);
        uint lid = gl_LocalInvocationID.x;
        if (DT == DT_F32 || DT == DT_F16) reduce_line_f32(xb, yo, io, lid, lid, gl_WorkGroupSize.x, true);
        IF_F64(else if (DT == DT_F64) reduce_line_f64(xb, yo, io, lid, lid, gl_WorkGroupSize.x, true);)
        else reduce_int(xb, yo, io, lid, lid, gl_WorkGroupSize.x, true);
    } else {
        FOR_EACH_ITEM(o, nout) {
            uint xb, yo, io;
            out_offsets(o, xb, yo, io);
            if (DT == DT_F32 || DT == DT_F16) reduce_line_f32(xb, yo, io, 0u, 0u, 1u, false);
            IF_F64(else if (DT == DT_F64) reduce_line_f64(xb, yo, io, 0u, 0u, 1u, false);)
            else reduce_int(xb, yo, io, 0u, 0u, 1u, false);
        }
    }
}
