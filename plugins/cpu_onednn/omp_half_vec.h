/* SPDX-License-Identifier: BSD-3-Clause */
/* omp_half_vec.h — sixteen lanes between f32 and f16 / bf16 in AVX-512
 * registers, with pk_half.h's results bit for bit (round to nearest even;
 * a NaN stays a NaN with pk_half.h's pattern). The one home of these
 * conversions: omp_half.c's runs and the kernels that convert as they load
 * or store (omp_conv_thin.c) use them. Include after immintrin.h, in code
 * compiled for AVX-512F (the functions carry the target themselves). */
#ifndef GRAFT_OMP_HALF_VEC_H
#define GRAFT_OMP_HALF_VEC_H

#include <immintrin.h>

#define ODN_HV static inline __attribute__((always_inline, target("avx512f,f16c")))

/* NaN lanes of f32 bits u: |u| above the infinity pattern. */
ODN_HV __mmask16 odn_hv_nan_lanes(__m512i u) {
    return _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                   _mm512_set1_epi32(0x7f800000));
}

ODN_HV __m512 odn_hv_bf16_to_f32(__m256i h) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

ODN_HV __m256i odn_hv_f32_to_bf16(__m512 f) {
    __m512i u = _mm512_castps_si512(f);
    __m512i hi = _mm512_srli_epi32(u, 16);
    /* ties to even: add 0x7fff plus the lowest kept bit, keep the top half */
    __m512i r = _mm512_srli_epi32(
        _mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff),
                                             _mm512_and_si512(hi, _mm512_set1_epi32(1)))),
        16);
    r = _mm512_mask_blend_epi32(odn_hv_nan_lanes(u), r,
                                _mm512_or_si512(hi, _mm512_set1_epi32(0x40)));
    return _mm512_cvtepi32_epi16(r);
}

/* f32 lanes that each hold a bf16 value exactly (a widened bf16, 0, or
 * a selection among those): pk_half.h's bf16 without the rounding, only its
 * NaN rule (the quiet bit set). */
ODN_HV __m256i odn_hv_exact_to_bf16(__m512 f) {
    __m512i u = _mm512_castps_si512(f);
    __m512i r = _mm512_srli_epi32(u, 16);
    r = _mm512_mask_or_epi32(r, odn_hv_nan_lanes(u), r, _mm512_set1_epi32(0x40));
    return _mm512_cvtepi32_epi16(r);
}

ODN_HV __m512 odn_hv_f16_to_f32(__m256i h) {
    __m512i f = _mm512_castps_si512(_mm512_cvtph_ps(h));
    __m512i w = _mm512_cvtepu16_epi32(h);
    /* NaN: the payload kept as it is (the hardware would set the quiet bit) */
    __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(w, _mm512_set1_epi32(0x7fff)),
                                            _mm512_set1_epi32(0x7c00));
    if (nan) {
        __m512i sign = _mm512_slli_epi32(_mm512_and_si512(w, _mm512_set1_epi32(0x8000)), 16);
        __m512i man = _mm512_slli_epi32(_mm512_and_si512(w, _mm512_set1_epi32(0x3ff)), 13);
        __m512i b = _mm512_or_si512(_mm512_or_si512(sign, man), _mm512_set1_epi32(0x7f800000));
        f = _mm512_mask_blend_epi32(nan, f, b);
    }
    return _mm512_castsi512_ps(f);
}

ODN_HV __m256i odn_hv_f32_to_f16(__m512 f) {
    __m256i h = _mm512_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512i u = _mm512_castps_si512(f);
    __mmask16 nan = odn_hv_nan_lanes(u);
    if (nan) { /* pk_half.h's quiet NaN: the sign and 0x7e00 */
        __m512i sign = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x8000));
        __m512i q = _mm512_or_si512(sign, _mm512_set1_epi32(0x7e00));
        __m512i w = _mm512_mask_blend_epi32(nan, _mm512_cvtepu16_epi32(h), q);
        h = _mm512_cvtepi32_epi16(w);
    }
    return h;
}

/* dtype GFP_BF16 or GFP_F16 (a constant after inlining, or a predictable
 * branch). */
ODN_HV __m512 odn_hv_to_f32(__m256i h, int32_t dtype) {
    return dtype == GFP_BF16 ? odn_hv_bf16_to_f32(h) : odn_hv_f16_to_f32(h);
}
ODN_HV __m256i odn_hv_from_f32(__m512 f, int32_t dtype) {
    return dtype == GFP_BF16 ? odn_hv_f32_to_bf16(f) : odn_hv_f32_to_f16(f);
}
/* The same for lanes known to hold dtype's values exactly (the f16 form has
 * no shortcut: its NaN pattern needs the full rule). */
ODN_HV __m256i odn_hv_exact_from_f32(__m512 f, int32_t dtype) {
    return dtype == GFP_BF16 ? odn_hv_exact_to_bf16(f) : odn_hv_f32_to_f16(f);
}

#endif
