/* SPDX-License-Identifier: BSD-3-Clause */
/* vk_util.c — tensor descriptors: sizes, checks against buffers, dim
 * coalescing, op names, and the params-word writer. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "vk_internal.h"

/* Rounds to nearest even in one step: to f32 rounding to odd (enough bits
 * for the second rounding), then to f16 on the bits (as the shaders' f2h). */
uint16_t vkp_f64_to_f16(double v) {
    float f = (float)v;
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    if (!isnan(v) && !isinf(f) && (double)f != v) {
        if (fabs((double)f) > fabs(v)) x -= 1; /* toward zero */
        x |= 1;
    }
    uint32_t s = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(s | 0x7e00u | ((a >> 13) & 0x3ffu));
    if (a >= 0x477ff000u) return (uint16_t)(s | 0x7c00u);
    if (a >= 0x38800000u) return (uint16_t)(s | ((a - 0x38000000u + 0xfffu + ((a >> 13) & 1u)) >> 13));
    if (a < 0x33000000u) return (uint16_t)s;
    uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u, sh = 126u - e;
    uint32_t h = m >> sh, rem = m & ((1u << sh) - 1u), half = 1u << (sh - 1u);
    if (rem > half || (rem == half && (h & 1u))) h++;
    return (uint16_t)(s | h);
}

bool vkp_same_shape(const gfp_tensor *a, const gfp_tensor *b) { return pk_same_shape(a, b); }

uint32_t vkp_elem_offset(const gfp_tensor *t) {
    const vkp_buf *b = t->buffer;
    if (!b) return 0;
    return (uint32_t)((b->offset + t->offset) / pk_dtype_size(t->dtype));
}

void vkp_coalesce(int *rank, int64_t *sizes, int64_t (*strides)[GFP_MAX_RANK], int n) {
    int r = 0;
    for (int d = 0; d < *rank; d++) {
        if (sizes[d] == 1) continue; /* contributes nothing to any offset */
        if (r > 0) {
            bool joins = true; /* dim r-1 continues through dim d in every tensor */
            for (int k = 0; k < n && joins; k++)
                joins = strides[k][r - 1] == strides[k][d] * sizes[d];
            if (joins) {
                sizes[r - 1] *= sizes[d];
                for (int k = 0; k < n; k++) strides[k][r - 1] = strides[k][d];
                continue;
            }
        }
        sizes[r] = sizes[d];
        for (int k = 0; k < n; k++) strides[k][r] = strides[k][d];
        r++;
    }
    *rank = r;
}

void vkp_put_u64(vkp_words *p, uint64_t v) {
    vkp_put(p, (uint32_t)v);
    vkp_put(p, (uint32_t)(v >> 32));
}

void vkp_put_f64(vkp_words *p, double v) {
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    vkp_put_u64(p, bits);
}

void vkp_put_f32(vkp_words *p, float v) {
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    vkp_put(p, bits);
}
