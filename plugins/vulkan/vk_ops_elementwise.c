/* SPDX-License-Identifier: BSD-3-Clause */
/* vk_ops_elementwise.c — COPY FILL ARANGE TRIL TRIU, the unary and binary
 * ops, comparisons, logical ops and WHERE, as the reference defines them
 * (plugins/reference/ref_elementwise.c).
 *
 * Every tensor is walked through its own strides: the host merges the dims
 * that are contiguous in every operand (vkp_coalesce), so the usual cases
 * reach the shader as one dim. One pipeline per (shader, op, dtypes): the op
 * and dtypes are specialisation constants. The formulas are generated from
 * plugins/common/op_math.def (shaders/ew_math.glsl); f64 has the ops whose
 * double functions exist in GLSL or plugins/common/glsl_dmath.glsl (the
 * generated list), the others are declared unsupported for f64. Complex
 * operands go to vk_complex.c. */
#include <math.h>
#include <string.h>

#include "op_math_glsl_caps.h"
#include "vk_internal.h"

#define EW_GROUP 256u
#define EW_SCALAR 46u

typedef pk_ew_kind ew_kind; /* plugin_kit.h */

static ew_kind kind_of(uint32_t op) { return pk_ew_kind_of(op); }

static uint32_t inputs_of(ew_kind k) {
    switch (k) {
    case PK_EW_FILL:
    case PK_EW_ARANGE: return 0;
    case PK_EW_BINARY:
    case PK_EW_COMPARE:
    case PK_EW_LOGICAL: return 2;
    case PK_EW_WHERE: return 3;
    default: return 1;
    }
}

#define DT_INT (VKP_BIT(GFP_I32) | VKP_BIT(GFP_I64))

/* The dtypes an UNARY or BINARY op computes in on this plugin: f32 always,
 * f64 and integers when op_math.def gives the op a formula GLSL can express
 * in them (the generated lists). */
static bool listed(uint32_t op, const unsigned *list) {
    for (; *list; list++)
        if (*list == op) return true;
    return false;
}

static uint32_t arith_dtypes(uint32_t op) {
    uint32_t s = VKP_BIT(GFP_F32);
    if (listed(op, gf_glsl_f64_ops)) s |= VKP_BIT(GFP_F64);
    if (listed(op, gf_glsl_int_ops)) s |= DT_INT;
    return s;
}

static bool in_set(int32_t d, uint32_t set) {
    return d >= 0 && d < GFP_DTYPE_COUNT && (set & VKP_BIT(d));
}

static bool accepts(const vkp_device *d, uint32_t op, const int32_t *in, const int32_t *out) {
    /* Complex operands: vk_complex.c (TRIL/TRIU and WHERE move their bits). */
    if (pk_complex_operands(in, inputs_of(kind_of(op)), out))
        return vkp_complex_ew_accepts(d, op, in, out);
    /* f16 (when the device stores it) everywhere but ARANGE: the unary and
     * binary ops compute it in f32, as they compute f32. */
    uint32_t all = vkp_device_dtypes(d) & ~PK_DT_COMPLEX;
    uint32_t arith = (arith_dtypes(op) | VKP_BIT(GFP_F16)) & all;
    switch (kind_of(op)) {
    case PK_EW_COPY: return in_set(in[0], all) && in_set(out[0], all);
    case PK_EW_FILL: return in_set(out[0], all);
    case PK_EW_ARANGE:
        return in_set(out[0], all & ~(VKP_BIT(GFP_BOOL) | VKP_BIT(GFP_F16))) &&
               (d->has_f64 || in_set(out[0], DT_INT));
    case PK_EW_TRI: return in_set(out[0], all) && in[0] == out[0];
    case PK_EW_UNARY: return in_set(out[0], arith) && in[0] == out[0];
    case PK_EW_LOGICAL_NOT: return in_set(in[0], all) && out[0] == GFP_BOOL;
    case PK_EW_BINARY: return in_set(out[0], arith) && in[0] == out[0] && in[1] == out[0];
    case PK_EW_COMPARE: return in_set(in[0], all) && in[1] == in[0] && out[0] == GFP_BOOL;
    case PK_EW_LOGICAL: return in_set(in[0], all) && in_set(in[1], all) && out[0] == GFP_BOOL;
    case PK_EW_WHERE:
        return in[0] == GFP_BOOL && in_set(out[0], all) && in[1] == out[0] && in[2] == out[0];
    default: return false;
    }
}

uint32_t vkp_elementwise_support(vkp_device *d, const gfp_op_query *q) {
    ew_kind k = kind_of(q->op);
    if (k == PK_EW_NONE || q->n_inputs != inputs_of(k) || q->n_outputs != 1) return GFP_SUPPORT_NONE;
    return accepts(d, q->op, q->input_dtypes, q->output_dtypes) ? GFP_SUPPORT_STRIDED
                                                                : GFP_SUPPORT_NONE;
}

/* ------------------------------------------------------------ params */
/* The shared header of every elementwise shader (ew_index.glsl): t[0] is the
 * output, all tensors have its sizes. */
gfp_status vkp_ew_header(vkp_words *p, const gfp_tensor *const *t, int nt, bool coalesce,
                         const char *name) {
    int rank = t[0]->rank;
    int64_t sizes[GFP_MAX_RANK];
    int64_t strides[4][GFP_MAX_RANK];
    memset(strides, 0, sizeof strides);
    for (int dd = 0; dd < rank; dd++) sizes[dd] = t[0]->sizes[dd];
    for (int k = 0; k < nt; k++)
        for (int dd = 0; dd < rank; dd++) strides[k][dd] = t[k]->strides[dd];
    if (coalesce) vkp_coalesce(&rank, sizes, strides, nt);
    int64_t n = pk_numel(t[0]);
    if (n > (int64_t)UINT32_MAX)
        return pk_fail(GFP_ERR_UNSUPPORTED, "%s: %lld elements are more than a vulkan launch "
                        "indexes (2^32 - 1)", name, (long long)n);
    p->n = 0;
    vkp_put(p, (uint32_t)n);
    vkp_put(p, (uint32_t)rank);
    for (int k = 0; k < 4; k++) vkp_put(p, k < nt ? vkp_elem_offset(t[k]) : 0);
    for (int dd = 0; dd < 8; dd++) vkp_put(p, dd < rank ? (uint32_t)sizes[dd] : 1);
    for (int k = 0; k < 4; k++)
        for (int dd = 0; dd < 8; dd++) vkp_put(p, dd < rank ? (uint32_t)strides[k][dd] : 0);
    return GFP_OK;
}

gfp_status vkp_ew_run(vkp_device *d, uint32_t shader, const uint32_t *spec, uint32_t n_spec,
                      const vkp_words *p, const gfp_tensor *const *t, uint32_t nt) {
    vkp_dispatch dp = {.shader = shader, .n_spec = n_spec + 1, .params = p->w, .n_params = p->n,
                       .n_tensors = nt};
    dp.spec[0] = EW_GROUP;
    for (uint32_t i = 0; i < n_spec; i++) dp.spec[i + 1] = spec[i];
    for (uint32_t i = 0; i < nt; i++) dp.tensors[i] = t[i];
    /* Several elements per invocation: its setup is paid once for them. */
    dp.groups[0] = vkp_groups(d, p->w[0], EW_GROUP * 8);
    return vkp_dispatch_run(d, &dp);
}

/* Scalars of the unary ops at EW_SCALAR (layout in shaders/ew_math.glsl). */
static gfp_status unary_scalars(vkp_words *p, uint32_t op, const void *params, const char *name) {
    double a = 0, b = 0, lo = 0, hi = 0;
    uint32_t flags = 0;
    /* The params struct the table names was checked by the launch preamble. */
    (void)name;
    gfp_params_kind kind = (gfp_params_kind)gfp_op_lookup(op)->params;
    if (kind == GFP_PARAMS_scalar) {
        const gfp_scalar_params *sp = params;
        a = sp->a;
        b = sp->b;
    } else if (kind == GFP_PARAMS_clamp) {
        const gfp_clamp_params *cp = params;
        flags = (cp->has_min ? 1u : 0u) | (cp->has_max ? 2u : 0u);
        lo = cp->min;
        hi = cp->max;
    }
    vkp_put_f32(p, (float)a);
    vkp_put_f32(p, (float)b);
    vkp_put_f64(p, a);
    vkp_put_f64(p, b);
    vkp_put(p, flags);
    vkp_put_f32(p, (float)lo);
    vkp_put_f32(p, (float)hi);
    vkp_put_f64(p, lo);
    vkp_put_f64(p, hi);
    /* Integer bounds: truncated and saturated. A NaN bound bounds nothing
     * (x < NaN is false), so its flag is dropped for every dtype. */
    if (isnan(lo)) flags &= ~1u;
    if (isnan(hi)) flags &= ~2u;
    p->w[EW_SCALAR + 6] = flags;
    int64_t ilo = isnan(lo) ? 0 : lo >= 9223372036854775808.0 ? INT64_MAX
                  : lo <= -9223372036854775808.0 ? INT64_MIN : (int64_t)lo;
    int64_t ihi = isnan(hi) ? 0 : hi >= 9223372036854775808.0 ? INT64_MAX
                  : hi <= -9223372036854775808.0 ? INT64_MIN : (int64_t)hi;
    vkp_put_u64(p, (uint64_t)ilo);
    vkp_put_u64(p, (uint64_t)ihi);
    return GFP_OK;
}

gfp_status vkp_ew_unary_f32_scalars(uint32_t op, const void *params, float *pa, float *pb,
                                    uint32_t *flags) {
    vkp_words p;
    p.n = EW_SCALAR;
    gfp_status st = unary_scalars(&p, op, params, pk_op_name(op));
    if (st != GFP_OK) return st;
    /* as ew_math.glsl's ew_unary_f32 reads them */
    bool c = op == GFP_OP_CLAMP;
    float v[2];
    memcpy(&v[0], &p.w[EW_SCALAR + (c ? 7 : 0)], 4);
    memcpy(&v[1], &p.w[EW_SCALAR + (c ? 8 : 1)], 4);
    *pa = v[0];
    *pb = v[1];
    *flags = c ? p.w[EW_SCALAR + 6] & 3u : 0u;
    return GFP_OK;
}

/* The element value of FILL as bytes of y's dtype (as ref run_fill). */
static void fill_bytes(int32_t dt, const gfp_fill_params *fp, vkp_words *p) {
    switch (dt) {
    case GFP_F32: vkp_put_f32(p, (float)fp->value); vkp_put(p, 0); break;
    case GFP_F64: vkp_put_f64(p, fp->value); break;
    case GFP_I32: vkp_put(p, (uint32_t)(uint64_t)fp->ivalue); vkp_put(p, 0); break;
    case GFP_I64: vkp_put_u64(p, (uint64_t)fp->ivalue); break;
    case GFP_F16: vkp_put(p, vkp_f64_to_f16(fp->value)); vkp_put(p, 0); break;
    default: vkp_put(p, fp->value != 0 ? 1u : 0u); vkp_put(p, 0); break; /* NaN is true */
    }
}

static bool is_integral(double v) {
    return v >= -9223372036854775808.0 && v < 9223372036854775808.0 && v == floor(v);
}

/* ------------------------------------------------------------ launch */
gfp_status vkp_elementwise_launch(vkp_device *d, uint32_t op, const gfp_tensor *const *in,
                                  uint32_t n_in, const gfp_tensor *const *out, uint32_t n_out,
                                  const void *params) {
    ew_kind kind = kind_of(op);
    const char *name = pk_op_name(op);
    gfp_status st;
    const gfp_tensor *t[4];
    int32_t in_dt[3], out_dt[1] = {out[0]->dtype};
    pk_ew_operands(in, n_in, out[0], t, in_dt);
    if (pk_complex_operands(in_dt, n_in, out_dt))
        return vkp_complex_ew_launch(d, op, in, n_in, out, params);
    if (!accepts(d, op, in_dt, out_dt))
        return pk_fail(GFP_ERR_UNSUPPORTED,
                        "%s: the vulkan plugin does not provide it for input dtypes (%s, %s, %s) "
                        "and output %s on this device (f64 has only the ops GLSL has in double)",
                        name, n_in > 0 ? pk_dtype_name(in_dt[0]) : "-",
                        n_in > 1 ? pk_dtype_name(in_dt[1]) : "-",
                        n_in > 2 ? pk_dtype_name(in_dt[2]) : "-", pk_dtype_name(out_dt[0]));
    if ((st = pk_check_elementwise(op, in, n_in, out[0])) != GFP_OK) return st;
    int nt = (int)n_in + 1;
    vkp_words p;
    uint32_t spec[3] = {0, 0, 0};
    uint32_t o = (uint32_t)out_dt[0];
    switch (kind) {
    case PK_EW_FILL:
        if ((st = pk_check_params(params, GFP_FILL_PARAMS_SIZE_V1_0, name)) != GFP_OK) return st;
        break;
    case PK_EW_ARANGE:
        if ((st = pk_check_params(params, GFP_ARANGE_PARAMS_SIZE_V1_0, name)) != GFP_OK) return st;
        break;
    case PK_EW_TRI:
        if ((st = pk_check_params(params, GFP_TRI_PARAMS_SIZE_V1_0, name)) != GFP_OK) return st;
        break;
    default: break;
    }
    if (pk_numel(out[0]) == 0) return GFP_OK;
    if ((st = vkp_ew_header(&p, t, nt, kind != PK_EW_TRI, name)) != GFP_OK) return st;

    switch (kind) {
    case PK_EW_COPY:
        spec[0] = o;
        spec[1] = (uint32_t)in_dt[0];
        return vkp_ew_run(d, VKP_SH_EW_COPY, spec, 2, &p, t, 2);
    case PK_EW_FILL: {
        fill_bytes(o, params, &p);
        size_t es = pk_dtype_size(o);
        spec[0] = (uint32_t)es;
        return vkp_ew_run(d, VKP_SH_EW_FILL, spec, 1, &p, t, 1);
    }
    case PK_EW_ARANGE: {
        const gfp_arange_params *ap = params;
        bool exact = !pk_is_float(o) && is_integral(ap->start) && is_integral(ap->step);
        if (!exact && !d->has_f64)
            return pk_fail(GFP_ERR_UNSUPPORTED, "arange: a non-integral start or step needs "
                            "64-bit floats, which this vulkan device does not have");
        vkp_put_u64(&p, exact ? (uint64_t)(int64_t)ap->start : 0);
        vkp_put_u64(&p, exact ? (uint64_t)(int64_t)ap->step : 0);
        vkp_put_f64(&p, ap->start);
        vkp_put_f64(&p, ap->step);
        spec[0] = o;
        spec[1] = exact ? 1u : 0u;
        return vkp_ew_run(d, VKP_SH_EW_ARANGE, spec, 2, &p, t, 1);
    }
    case PK_EW_TRI:
        vkp_put_u64(&p, (uint64_t)((const gfp_tri_params *)params)->diagonal);
        spec[0] = o;
        spec[1] = op == GFP_OP_TRIL ? 1u : 0u;
        return vkp_ew_run(d, VKP_SH_EW_TRI, spec, 2, &p, t, 2);
    case PK_EW_UNARY:
        if ((st = unary_scalars(&p, op, params, name)) != GFP_OK) return st;
        spec[0] = op;
        spec[1] = o;
        return vkp_ew_run(d, VKP_SH_EW_UNARY_P0 + op % VKP_SH_EW_UNARY_PARTS, spec, 2, &p, t, 2);
    case PK_EW_BINARY:
        spec[0] = op;
        spec[1] = o;
        return vkp_ew_run(d, VKP_SH_EW_BINARY_P0 + op % VKP_SH_EW_BINARY_PARTS, spec, 2, &p, t, 3);
    case PK_EW_LOGICAL_NOT:
    case PK_EW_COMPARE:
    case PK_EW_LOGICAL: {
        spec[0] = op;
        spec[1] = (uint32_t)in_dt[0];
        spec[2] = kind == PK_EW_LOGICAL_NOT ? (uint32_t)in_dt[0] : (uint32_t)in_dt[1];
        const gfp_tensor *tt[3] = {t[0], t[1], kind == PK_EW_LOGICAL_NOT ? t[1] : t[2]};
        return vkp_ew_run(d, VKP_SH_EW_PREDICATE, spec, 3, &p, tt, 3);
    }
    case PK_EW_WHERE:
        spec[0] = o;
        return vkp_ew_run(d, VKP_SH_EW_WHERE, spec, 1, &p, t, 4);
    default: return pk_fail(GFP_ERR_INTERNAL, "%s: no kernel", name);
    }
}
