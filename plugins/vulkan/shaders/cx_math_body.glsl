/* SPDX-License-Identifier: BSD-3-Clause */
// cx_math_body.glsl — the complex formulas, written once for a real type CR
// and its pair CX (cx_math.glsl includes this file for float / vec2 and,
// with GF_F64, for double / dvec2: GLSL overloads the functions by type).
// The real functions (r_exp, r_log, ...) are cx_math.glsl's. The formulas
// are the textbook ones for finite values, written so that nothing cancels
// in the ordinary range: asin and acos by Kahan's products of square roots,
// atan's imaginary part by log1p, tanh by Kahan's tan/sinh form. Infinite
// and NaN parts propagate through the arithmetic rather than following C99
// Annex G (as the OpenCL plugin's kernels/complex.cl).

CR r_copysign(CR a, CR s) {
    return (s < CR(0) || (s == CR(0) && CR(1) / s < CR(0))) ? -abs(a) : abs(a);
}

// sqrt(x^2 + y^2) without overflow or underflow of the squares.
CR r_hypot(CR x, CR y) {
    CR a = abs(x), b = abs(y);
    if (isinf(a) || isinf(b)) return a + b; // inf, also with a NaN part
    CR m = max(a, b), n = min(a, b);
    if (m == CR(0) || isnan(m) || isnan(n)) return m + n;
    CR r = n / m;
    return m * sqrt(CR(1) + r * r);
}

CR r_sinh(CR x) {
    CR a = abs(x), s;
    if (a < CR(1)) {
        CR e = r_expm1(a);
        s = CR(0.5) * (e + e / (e + CR(1)));
    } else {
        CR e = r_exp(CR(0.5) * a); // e^a / 2 = (e^(a/2) / 2) e^(a/2): no early overflow
        s = (CR(0.5) * e) * e - CR(0.5) / (e * e);
    }
    return x < CR(0) ? -s : s;
}

CR r_cosh(CR x) {
    CR e = r_exp(CR(0.5) * abs(x));
    return (CR(0.5) * e) * e + CR(0.5) / (e * e);
}

CR r_tan(CR x) { return r_sin(x) / r_cos(x); }

// asinh x = sign(x) log1p(|x| + x^2 / (1 + sqrt(1 + x^2))); huge |x|: log 2|x|.
CR r_asinh(CR x) {
    CR a = abs(x), r;
    if (a > CR(1.0e15)) r = r_log(a) + CR_LN2;
    else r = r_log1p(a + a * a / (CR(1) + sqrt(CR(1) + a * a)));
    return x < CR(0) ? -r : r;
}

CX cx_mul(CX a, CX b) { return CX(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }

// Smith's division: no overflow of |b|^2.
CX cx_div(CX a, CX b) {
    if (abs(b.x) >= abs(b.y)) {
        CR r = b.y / b.x, den = b.x + b.y * r;
        return CX((a.x + a.y * r) / den, (a.y - a.x * r) / den);
    }
    CR r = b.x / b.y, den = b.x * r + b.y;
    return CX((a.x * r + a.y) / den, (a.y * r - a.x) / den);
}

CX cx_exp(CX z) {
    CR e = r_exp(z.x);
    if (z.y == CR(0)) return CX(e, z.y); // exp of a real stays real (exp(inf) too)
    return CX(e * r_cos(z.y), e * r_sin(z.y));
}

// Near the unit circle log |z| = log1p(x^2 + y^2 - 1) / 2, with x^2 - 1
// as (x - 1)(x + 1) for the larger part x: log of the hypot would cancel.
CX cx_log(CX z) {
    CR a = max(abs(z.x), abs(z.y)), b = min(abs(z.x), abs(z.y)), re;
    if (a > CR(0.5) && a < CR(2)) re = CR(0.5) * r_log1p((a - CR(1)) * (a + CR(1)) + b * b);
    else re = r_log(r_hypot(z.x, z.y));
    return CX(re, r_atan2(z.y, z.x));
}

CX cx_sqrt(CX z) {
    if (z.x == CR(0) && z.y == CR(0)) return CX(CR(0), z.y);
    CR t = sqrt((abs(z.x) + r_hypot(z.x, z.y)) * CR(0.5));
    if (z.x >= CR(0)) return CX(t, z.y / (CR(2) * t));
    return CX(abs(z.y) / (CR(2) * t), r_copysign(t, z.y));
}

// Kahan: tanh(x + iy) with t = tan y, s = sinh x, rho = sqrt(1 + s^2),
// b = 1 + t^2: (b rho s + i t) / (1 + b s^2). Past |x| = 22 the real part is
// +-1 to double precision.
CX cx_tanh(CX z) {
    if (abs(z.x) > CR(22)) {
        CR e = r_exp(CR(-2) * abs(z.x));
        return CX(r_copysign(CR(1), z.x), CR(4) * r_sin(z.y) * r_cos(z.y) * e);
    }
    CR t = r_tan(z.y), b = CR(1) + t * t, s = r_sinh(z.x), rho = sqrt(CR(1) + s * s);
    CR den = CR(1) + b * s * s;
    return CX(b * rho * s / den, t / den);
}

// Kahan's arcsin and arccos from s1 = sqrt(1 - z) and s2 = sqrt(1 + z).
CX cx_asin(CX z) {
    CX s1 = cx_sqrt(CX(CR(1) - z.x, -z.y)), s2 = cx_sqrt(CX(CR(1) + z.x, z.y));
    return CX(r_atan2(z.x, s1.x * s2.x - s1.y * s2.y), r_asinh(s1.x * s2.y - s1.y * s2.x));
}
CX cx_acos(CX z) {
    CX s1 = cx_sqrt(CX(CR(1) - z.x, -z.y)), s2 = cx_sqrt(CX(CR(1) + z.x, z.y));
    return CX(CR(2) * r_atan2(s1.x, s2.x), r_asinh(s2.x * s1.y - s2.y * s1.x));
}
// atan z = (1/2) atan2(2x, 1 - x^2 - y^2) + (i/4) log(n / d), n = (1+y)^2 + x^2,
// d = (1-y)^2 + x^2: n / d = 1 + 4y / d, by log1p when that is near 1, else
// as log n - log d (near z = +-i the quotient's rounding would dominate).
CX cx_atan(CX z) {
    CR x = z.x, y = z.y;
    CR re = CR(0.5) * r_atan2(CR(2) * x, (CR(1) - x) * (CR(1) + x) - y * y);
    CR d = (CR(1) - y) * (CR(1) - y) + x * x, r = CR(4) * y / d, im;
    if (abs(r) < CR(0.5)) im = r_log1p(r);
    else im = r_log((CR(1) + y) * (CR(1) + y) + x * x) - r_log(d);
    return CX(re, CR(0.25) * im);
}

CX cx_pow(CX a, CX b) { return cx_exp(cx_mul(b, cx_log(a))); }

// The unary ops by their code (plugins/common/pk_complex.c's table). Each
// case is compiled only into its part of cx_ew (GF_IN_PART, common.glsl).
CX cx_unary(uint op, CX z, CR a) {
    const CX one = CX(CR(1), CR(0));
    switch (op) {
#if GF_IN_PART(0)
    case 0u: return -z;                        // NEG
#endif
#if GF_IN_PART(1)
    case 1u: return cx_exp(z);                 // EXP
#endif
#if GF_IN_PART(2)
    case 2u: return cx_log(z);                 // LOG
#endif
#if GF_IN_PART(3)
    case 3u: return cx_log(z + one);           // LOG1P
#endif
#if GF_IN_PART(4)
    case 4u: return cx_exp(z) - one;           // EXPM1
#endif
#if GF_IN_PART(5)
    case 5u: return cx_sqrt(z);                // SQRT
#endif
#if GF_IN_PART(6)
    case 6u: return cx_div(one, cx_sqrt(z));   // RSQRT
#endif
#if GF_IN_PART(7)
    case 7u: return cx_div(one, z);            // RECIPROCAL
#endif
#if GF_IN_PART(8)
    case 8u: return cx_mul(z, z);              // SQUARE
#endif
#if GF_IN_PART(9)
    case 9u: return CX(r_sin(z.x) * r_cosh(z.y), r_cos(z.x) * r_sinh(z.y));    // SIN
#endif
#if GF_IN_PART(10)
    case 10u: return CX(r_cos(z.x) * r_cosh(z.y), -(r_sin(z.x) * r_sinh(z.y))); // COS
#endif
#if GF_IN_PART(11)
    case 11u: return cx_tanh(z);               // TANH
#endif
#if GF_IN_PART(12)
    case 12u: return cx_div(one, one + cx_exp(-z)); // SIGMOID
#endif
#if GF_IN_PART(13)
    case 13u:                                  // POW_SCALAR
        // small integral exponents by repeated products, as the reference
        if (a == floor(a) && abs(a) <= CR(64)) {
            CX r = one, base = a < CR(0) ? cx_div(one, z) : z;
            int n = int(abs(a));
            for (int i = 0; i < n; i++) r = cx_mul(r, base);
            return r;
        }
        return cx_exp(a * cx_log(z));
#endif
#if GF_IN_PART(14)
    case 14u: return cx_asin(z);               // ASIN
#endif
#if GF_IN_PART(15)
    case 15u: return cx_acos(z);               // ACOS
#endif
#if GF_IN_PART(16)
    case 16u: return cx_atan(z);               // ATAN
#endif
    default: return z;
    }
}

// The binary ops by their code: ADD SUB MUL DIV POW.
CX cx_binary(uint op, CX a, CX b) {
    switch (op) {
#if GF_IN_PART(0)
    case 0u: return a + b;
#endif
#if GF_IN_PART(1)
    case 1u: return a - b;
#endif
#if GF_IN_PART(2)
    case 2u: return cx_mul(a, b);
#endif
#if GF_IN_PART(3)
    case 3u: return cx_div(a, b);
#endif
#if GF_IN_PART(4)
    case 4u: return b.x == CR(0) && b.y == CR(0) ? CX(CR(1), CR(0)) : cx_pow(a, b);
#endif
    default: return a;
    }
}
