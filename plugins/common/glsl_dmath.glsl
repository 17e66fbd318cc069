/* SPDX-License-Identifier: BSD-3-Clause */
// glsl_dmath.glsl — double-precision functions GLSL lacks (GLSL.std.450 has
// no double exp, log, trigonometry or pow), for graft-opgen-glsl's f64
// formulas and the Vulkan RANDOM shader. Ports of the classic fdlibm
// algorithms (e_exp.c, e_log.c, k_cos.c, k_sin.c, the medium path of
// e_rem_pio2.c, s_tanh.c, s_erf.c, e_asin.c, e_acos.c, s_atan.c, e_atan2.c),
// accurate to about 1 ulp; log1p and expm1 use
// Kahan's corrections of log(1 + x) and exp(x) - 1 (a few ulp). Temporaries
// are `precise`: no contraction into fma, no reassociation.
// Limits: sin and cos reduce their argument exactly for |x| < 2^19 pi/2
// (about 8e5); beyond, precision falls off.
uint gf_dhi(double x) { return unpackDouble2x32(x).y; }
double gf_dwith_hi(double x, uint hi) { return packDouble2x32(uvec2(unpackDouble2x32(x).x, hi)); }
#define GF_DNAN packDouble2x32(uvec2(0u, 0x7ff80000u))
#define GF_DINF packDouble2x32(uvec2(0u, 0x7ff00000u))

double gf_dlog(double xin) {
    if (isnan(xin) || xin < 0.0lf) return GF_DNAN;
    if (xin == 0.0lf) return -GF_DINF;
    if (isinf(xin)) return xin;
    const double ln2_hi = 6.93147180369123816490e-01lf, ln2_lo = 1.90821492927058770002e-10lf;
    const double Lg1 = 6.666666666666735130e-01lf, Lg2 = 3.999999999940941908e-01lf,
                 Lg3 = 2.857142874366239149e-01lf, Lg4 = 2.222219843214978396e-01lf,
                 Lg5 = 1.818357216161805012e-01lf, Lg6 = 1.531383769920937332e-01lf,
                 Lg7 = 1.479819860511658591e-01lf;
    int k = 0;
    if (gf_dhi(xin) < 0x00100000u) { // subnormal: scale up by 2^54
        xin *= 18014398509481984.0lf;
        k = -54;
    }
    uint hx = gf_dhi(xin);
    k += int(hx >> 20) - 1023;
    hx &= 0x000fffffu;
    uint i = (hx + 0x95f64u) & 0x100000u;
    precise double x = gf_dwith_hi(xin, hx | (i ^ 0x3ff00000u)); // in [sqrt2/2, sqrt2)
    k += int(i >> 20);
    precise double f = x - 1.0lf;
    precise double dk = double(k);
    if ((0x000fffffu & (2u + hx)) < 3u) { // |f| < 2^-20
        if (f == 0.0lf) return k == 0 ? 0.0lf : dk * ln2_hi + dk * ln2_lo;
        precise double R = f * f * (0.5lf - 0.33333333333333333lf * f);
        return k == 0 ? f - R : dk * ln2_hi - ((R - dk * ln2_lo) - f);
    }
    precise double s = f / (2.0lf + f);
    precise double z = s * s;
    int ii = int(hx) - 0x6147a;
    precise double w = z * z;
    int j = 0x6b851 - int(hx);
    precise double t1 = w * (Lg2 + w * (Lg4 + w * Lg6));
    precise double t2 = z * (Lg1 + w * (Lg3 + w * (Lg5 + w * Lg7)));
    ii |= j;
    precise double R = t2 + t1;
    if (ii > 0) {
        precise double hfsq = 0.5lf * f * f;
        return k == 0 ? f - (hfsq - s * (hfsq + R))
                      : dk * ln2_hi - ((hfsq - (s * (hfsq + R) + dk * ln2_lo)) - f);
    }
    return k == 0 ? f - s * (f - R) : dk * ln2_hi - ((s * (f - R) - dk * ln2_lo) - f);
}

double gf_dexp(double x) {
    if (isnan(x)) return x;
    if (x > 7.09782712893383973096e+02lf) return GF_DINF;
    if (x < -7.45133219101941108420e+02lf) return 0.0lf;
    const double ln2HI = 6.93147180369123816490e-01lf, ln2LO = 1.90821492927058770002e-10lf,
                 invln2 = 1.44269504088896338700e+00lf;
    const double P1 = 1.66666666666666019037e-01lf, P2 = -2.77777777770155933842e-03lf,
                 P3 = 6.61375632143793436117e-05lf, P4 = -1.65339022054652515390e-06lf,
                 P5 = 4.13813679705723846039e-08lf;
    if (abs(x) < 3.725290298461914e-09lf) return 1.0lf + x; // 2^-28
    int k = 0;
    precise double hi = x, lo = 0.0lf;
    if (abs(x) > 0.5lf * ln2HI) { // reduce: x = k ln2 + r, |r| <= ln2 / 2
        k = int(invln2 * x + (x < 0.0lf ? -0.5lf : 0.5lf));
        precise double dk = double(k);
        hi = x - dk * ln2HI;
        lo = dk * ln2LO;
    }
    precise double r = hi - lo;
    precise double t = r * r;
    precise double c = r - t * (P1 + t * (P2 + t * (P3 + t * (P4 + t * P5))));
    if (k == 0) return 1.0lf - ((r * c) / (c - 2.0lf) - r);
    precise double y = 1.0lf - ((lo - (r * c) / (2.0lf - c)) - hi);
    return ldexp(y, k);
}

// log(1 + x), with the rounding of 1 + x corrected (Kahan).
double gf_dlog1p(double x) {
    if (isnan(x) || x < -1.0lf) return GF_DNAN;
    precise double u = 1.0lf + x;
    if (u == 1.0lf) return x;
    if (isinf(u)) return u;
    precise double um1 = u - 1.0lf;
    return gf_dlog(u) * (x / um1);
}

// exp(x) - 1, with the rounding of exp(x) corrected (Kahan).
double gf_dexpm1(double x) {
    if (isnan(x)) return x;
    if (abs(x) < 1e-10lf) return x + 0.5lf * x * x;
    precise double u = gf_dexp(x);
    if (isinf(u)) return u;
    if (u == 1.0lf) return x;
    precise double um1 = u - 1.0lf;
    if (um1 == -1.0lf) return -1.0lf;
    return um1 * (x / gf_dlog(u));
}

double gf_dkcos(double x, double y) {
    const double C1 = 4.16666666666666019037e-02lf, C2 = -1.38888888888741095749e-03lf,
                 C3 = 2.48015872894767294178e-05lf, C4 = -2.75573143513906633035e-07lf,
                 C5 = 2.08757232129817482790e-09lf, C6 = -1.13596475577881948265e-11lf;
    uint ix = gf_dhi(x) & 0x7fffffffu;
    precise double z = x * x;
    precise double r = z * (C1 + z * (C2 + z * (C3 + z * (C4 + z * (C5 + z * C6)))));
    if (ix < 0x3FD33333u) return 1.0lf - (0.5lf * z - (z * r - x * y));
    precise double qx = ix > 0x3fe90000u ? 0.28125lf : packDouble2x32(uvec2(0u, ix - 0x00200000u));
    precise double hz = 0.5lf * z - qx;
    precise double a = 1.0lf - qx;
    return a - (hz - (z * r - x * y));
}

double gf_dksin(double x, double y) {
    const double S1 = -1.66666666666666324348e-01lf, S2 = 8.33333333332248946124e-03lf,
                 S3 = -1.98412698298579493134e-04lf, S4 = 2.75573137070700676789e-06lf,
                 S5 = -2.50507602534068634195e-08lf, S6 = 1.58969099521155010221e-10lf;
    precise double z = x * x;
    precise double v = z * x;
    precise double r = S2 + z * (S3 + z * (S4 + z * (S5 + z * S6)));
    return x - ((z * (0.5lf * y - v * r) - y) - v * S1);
}

// x = n pi/2 + (y0 + y1), |y0 + y1| <= pi/4: Cody-Waite in three parts.
int gf_drem_pio2(double x, out double y0, out double y1) {
    const double invpio2 = 6.36619772367581382433e-01lf;
    const double pio2_1 = 1.57079632673412561417e+00lf, pio2_2 = 6.07710050630396597660e-11lf,
                 pio2_2t = 2.02226624879595063154e-21lf, pio2_3 = 2.02226624871116645580e-21lf,
                 pio2_3t = 8.47842766036889956997e-32lf;
    if (abs(x) <= 0.785398163397448279lf) {
        y0 = x;
        y1 = 0.0lf;
        return 0;
    }
    precise double fn = floor(x * invpio2 + 0.5lf);
    precise double t = x - fn * pio2_1; // exact: pio2_1 has 33 bits
    precise double w = fn * pio2_2;
    precise double r = t - w;
    w = fn * pio2_2t - ((t - r) - w);
    precise double t2 = r - w;
    precise double w2 = fn * pio2_3;
    precise double r2 = t2 - w2;
    w2 = fn * pio2_3t - ((t2 - r2) - w2);
    y0 = r2 - w2;
    y1 = (r2 - y0) - w2;
    return int(mod(fn, 4.0lf));
}

double gf_dsin(double x) {
    if (isnan(x) || isinf(x)) return GF_DNAN;
    double y0, y1;
    int n = gf_drem_pio2(x, y0, y1);
    if (n == 0 && y1 == 0.0lf && abs(x) < 7.450580596923828e-09lf) return x;
    switch (n & 3) {
    case 0: return gf_dksin(y0, y1);
    case 1: return gf_dkcos(y0, y1);
    case 2: return -gf_dksin(y0, y1);
    default: return -gf_dkcos(y0, y1);
    }
}

double gf_dcos(double x) {
    if (isnan(x) || isinf(x)) return GF_DNAN;
    double y0, y1;
    int n = gf_drem_pio2(x, y0, y1);
    switch (n & 3) {
    case 0: return gf_dkcos(y0, y1);
    case 1: return -gf_dksin(y0, y1);
    case 2: return -gf_dkcos(y0, y1);
    default: return gf_dksin(y0, y1);
    }
}

double gf_dtanh(double x) {
    if (isnan(x)) return x;
    double ax = abs(x), z;
    if (ax >= 22.0lf) z = 1.0lf;
    else if (ax < 2.7755575615628914e-17lf) return x; // 2^-55
    else if (ax >= 1.0lf) {
        precise double t = gf_dexpm1(2.0lf * ax);
        z = 1.0lf - 2.0lf / (t + 2.0lf);
    } else {
        precise double t = gf_dexpm1(-2.0lf * ax);
        z = -t / (t + 2.0lf);
    }
    return x < 0.0lf ? -z : z;
}

// pow with C's special cases; small integer exponents by squaring, others as
// exp(y log x) (its error grows with |y log x|: about 1e-15 relative for
// the magnitudes of ML data).
double gf_dpow(double x, double y) {
    if (y == 0.0lf || x == 1.0lf) return 1.0lf;
    if (isnan(x) || isnan(y)) return x + y;
    bool y_int = floor(y) == y;
    bool y_odd = y_int && abs(y) < 9007199254740992.0lf && mod(abs(y), 2.0lf) == 1.0lf;
    if (x == 0.0lf) {
        if (y > 0.0lf) return y_odd ? x : 0.0lf;
        return y_odd ? 1.0lf / x : GF_DINF;
    }
    if (isinf(y)) {
        double ax = abs(x);
        if (ax == 1.0lf) return 1.0lf;
        return (ax > 1.0lf) == (y > 0.0lf) ? GF_DINF : 0.0lf;
    }
    if (isinf(x)) {
        double r = y > 0.0lf ? GF_DINF : 0.0lf;
        return x < 0.0lf && y_odd ? -r : r;
    }
    if (x < 0.0lf && !y_int) return GF_DNAN;
    double ax = abs(x), r;
    if (y_int && abs(y) <= 64.0lf) {
        uint e = uint(abs(y));
        precise double base = ax, acc = 1.0lf;
        for (; e != 0u; e >>= 1) {
            if ((e & 1u) != 0u) acc *= base;
            base *= base;
        }
        r = y < 0.0lf ? 1.0lf / acc : acc;
    } else {
        r = gf_dexp(y * gf_dlog(ax));
    }
    return x < 0.0lf && y_odd ? -r : r;
}

// erf (fdlibm s_erf.c): rational approximations on |x| < 0.84375, < 1.25,
// < 1/0.35, < 6, and +-1 beyond.
double gf_derf(double x) {
    if (isnan(x)) return x;
    uint hx = gf_dhi(x), ix = hx & 0x7fffffffu;
    bool neg = (hx & 0x80000000u) != 0u;
    if (ix >= 0x7ff00000u) return neg ? -1.0lf : 1.0lf;
    if (ix < 0x3feb0000u) { // |x| < 0.84375
        if (ix < 0x3e300000u) return x + 1.28379167095512586316e-01lf * x;
        precise double z = x * x;
        precise double r = 1.28379167095512558561e-01lf +
                           z * (-3.25042107247001499370e-01lf +
                                z * (-2.84817495755985104766e-02lf +
                                     z * (-5.77027029648944159157e-03lf +
                                          z * -2.37630166566501626084e-05lf)));
        precise double s = 1.0lf + z * (3.97917223959155352819e-01lf +
                                        z * (6.50222499887672944485e-02lf +
                                             z * (5.08130628187576562776e-03lf +
                                                  z * (1.32494738004321644526e-04lf +
                                                       z * -3.96022827877536812320e-06lf))));
        precise double y = r / s;
        return x + x * y;
    }
    if (ix < 0x3ff40000u) { // 0.84375 <= |x| < 1.25
        precise double s = abs(x) - 1.0lf;
        precise double P = -2.36211856075265944077e-03lf +
                           s * (4.14856118683748331666e-01lf +
                                s * (-3.72207876035701323847e-01lf +
                                     s * (3.18346619901161753674e-01lf +
                                          s * (-1.10894694282396677476e-01lf +
                                               s * (3.54783043256182359371e-02lf +
                                                    s * -2.16637559486879084300e-03lf)))));
        precise double Q = 1.0lf + s * (1.06420880400844228286e-01lf +
                                        s * (5.40397917702171048937e-01lf +
                                             s * (7.18286544141962662868e-02lf +
                                                  s * (1.26171219808761642112e-01lf +
                                                       s * (1.36370839120290507362e-02lf +
                                                            s * 1.19844998467991074170e-02lf)))));
        const double erx = 8.45062911510467529297e-01lf;
        return neg ? -erx - P / Q : erx + P / Q;
    }
    if (ix >= 0x40180000u) return neg ? -1.0lf : 1.0lf; // |x| >= 6
    precise double ax = abs(x);
    precise double s = 1.0lf / (ax * ax);
    precise double R, S;
    if (ix < 0x4006DB6Eu) { // |x| < 1/0.35
        R = -9.86494403484714822705e-03lf +
            s * (-6.93858572707181764372e-01lf +
                 s * (-1.05586262253232909814e+01lf +
                      s * (-6.23753324503260060396e+01lf +
                           s * (-1.62396669462573470355e+02lf +
                                s * (-1.84605092906711035994e+02lf +
                                     s * (-8.12874355063065934246e+01lf +
                                          s * -9.81432934416914548592e+00lf))))));
        S = 1.0lf + s * (1.96512716674392571292e+01lf +
                         s * (1.37657754143519042600e+02lf +
                              s * (4.34565877475229228821e+02lf +
                                   s * (6.45387271733267880336e+02lf +
                                        s * (4.29008140027567833386e+02lf +
                                             s * (1.08635005541779435134e+02lf +
                                                  s * (6.57024977031928170135e+00lf +
                                                       s * -6.04244152148580987438e-02lf)))))));
    } else {
        R = -9.86494292470009928597e-03lf +
            s * (-7.99283237680523006574e-01lf +
                 s * (-1.77579549177547519889e+01lf +
                      s * (-1.60636384855821916062e+02lf +
                           s * (-6.37566443368389627722e+02lf +
                                s * (-1.02509513161107724954e+03lf +
                                     s * -4.83519191608651397019e+02lf)))));
        S = 1.0lf + s * (3.03380607434824582924e+01lf +
                         s * (3.25792512996573918826e+02lf +
                              s * (1.53672958608443695994e+03lf +
                                   s * (3.19985821950859553908e+03lf +
                                        s * (2.55305040643316442583e+03lf +
                                             s * (4.74528541206955367215e+02lf +
                                                  s * -2.24409524465858183362e+01lf))))));
    }
    precise double z = packDouble2x32(uvec2(0u, gf_dhi(ax))); // ax with its low word cleared
    precise double r = gf_dexp(-z * z - 0.5625lf) * gf_dexp((z - ax) * (z + ax) + R / S);
    return neg ? r / ax - 1.0lf : 1.0lf - r / ax;
}

// Inverse trigonometry (fdlibm e_asin.c, e_acos.c, s_atan.c, e_atan2.c),
// about 1 ulp. asin and acos: x + x R(x^2) on |x| < 0.5 with R a rational
// approximation of (asin(x) - x) / x^3; beyond, asin x = pi/2 - 2 asin(s)
// with s = sqrt((1 - |x|) / 2), s split into a 32-bit head and a corrected
// tail so the subtraction keeps full precision.
const double GF_DPIO2_HI = 1.57079632679489655800e+00lf, GF_DPIO2_LO = 6.12323399573676603587e-17lf,
             GF_DPIO4_HI = 7.85398163397448278999e-01lf, GF_DPI = 3.14159265358979311600e+00lf,
             GF_DPI_LO = 1.22464679914735317720e-16lf;

double gf_dasin_r(double t) {
    precise double p = t * (1.66666666666666657415e-01lf +
                            t * (-3.25565818622400915405e-01lf +
                                 t * (2.01212532134862925881e-01lf +
                                      t * (-4.00555345006794114027e-02lf +
                                           t * (7.91534994289814532176e-04lf +
                                                t * 3.47933107596021167570e-05lf)))));
    precise double q = 1.0lf + t * (-2.40339491173441421878e+00lf +
                                    t * (2.02094576023350569471e+00lf +
                                         t * (-6.88283971605453293030e-01lf +
                                              t * 7.70381505559019352791e-02lf)));
    return p / q;
}

double gf_dclear_lo(double x) { return packDouble2x32(uvec2(0u, gf_dhi(x))); }

double gf_dasin(double x) {
    if (isnan(x)) return x;
    double ax = abs(x);
    if (ax > 1.0lf) return GF_DNAN;
    if (ax == 1.0lf) return x * GF_DPIO2_HI + x * GF_DPIO2_LO;
    if (ax < 0.5lf) {
        if (ax < 7.450580596923828e-09lf) return x; // 2^-27
        precise double r = x + x * gf_dasin_r(x * x);
        return r;
    }
    precise double t = (1.0lf - ax) * 0.5lf;
    precise double r = gf_dasin_r(t);
    precise double s = sqrt(t);
    precise double res;
    if (ax >= 0.975lf) {
        res = GF_DPIO2_HI - (2.0lf * (s + s * r) - GF_DPIO2_LO);
    } else {
        precise double w = gf_dclear_lo(s);
        precise double c = (t - w * w) / (s + w);
        precise double p = 2.0lf * s * r - (GF_DPIO2_LO - 2.0lf * c);
        precise double q = GF_DPIO4_HI - 2.0lf * w;
        res = GF_DPIO4_HI - (p - q);
    }
    return x < 0.0lf ? -res : res;
}

double gf_dacos(double x) {
    if (isnan(x)) return x;
    double ax = abs(x);
    if (ax > 1.0lf) return GF_DNAN;
    if (x == 1.0lf) return 0.0lf;
    if (x == -1.0lf) return GF_DPI + 2.0lf * GF_DPIO2_LO;
    if (ax < 0.5lf) {
        if (ax <= 6.938893903907228e-18lf) return GF_DPIO2_HI + GF_DPIO2_LO; // 2^-57
        precise double r = GF_DPIO2_HI - (x - (GF_DPIO2_LO - x * gf_dasin_r(x * x)));
        return r;
    }
    if (x < 0.0lf) { // acos x = pi - 2 asin(sqrt((1 + x) / 2))
        precise double z = (1.0lf + x) * 0.5lf;
        precise double s = sqrt(z);
        precise double w = gf_dasin_r(z) * s - GF_DPIO2_LO;
        precise double r = GF_DPI - 2.0lf * (s + w);
        return r;
    }
    precise double z = (1.0lf - x) * 0.5lf; // acos x = 2 asin(sqrt((1 - x) / 2))
    precise double s = sqrt(z);
    precise double df = gf_dclear_lo(s);
    precise double c = (z - df * df) / (s + df);
    precise double w = gf_dasin_r(z) * s + c;
    precise double r = 2.0lf * (df + w);
    return r;
}

// atan: |x| reduced to [-7/16, 7/16] around atan(0.5), atan(1), atan(1.5)
// or atan(inf), whose values are kept in two parts; an odd polynomial there.
double gf_datan(double x) {
    if (isnan(x)) return x;
    const double atanhi[4] = double[4](4.63647609000806093515e-01lf, 7.85398163397448278999e-01lf,
                                       9.82793723247329054082e-01lf, 1.57079632679489655800e+00lf);
    const double atanlo[4] = double[4](2.26987774529616870924e-17lf, 3.06161699786838301793e-17lf,
                                       1.39033110312309984516e-17lf, 6.12323399573676603587e-17lf);
    precise double ax = abs(x);
    int id;
    if (ax >= 7.378697629483821e19lf) { // 2^66, and inf
        double r = atanhi[3] + atanlo[3];
        return x < 0.0lf ? -r : r;
    }
    if (ax < 0.4375lf) {
        if (ax < 1.862645149230957e-09lf) return x; // 2^-29
        id = -1;
        ax = x;
    } else if (ax < 0.6875lf) {
        id = 0;
        ax = (2.0lf * ax - 1.0lf) / (2.0lf + ax);
    } else if (ax < 1.1875lf) {
        id = 1;
        ax = (ax - 1.0lf) / (ax + 1.0lf);
    } else if (ax < 2.4375lf) {
        id = 2;
        ax = (ax - 1.5lf) / (1.0lf + 1.5lf * ax);
    } else {
        id = 3;
        ax = -1.0lf / ax;
    }
    precise double z = ax * ax;
    precise double w = z * z;
    precise double s1 = z * (3.33333333333329318027e-01lf +
                             w * (1.42857142725034663711e-01lf +
                                  w * (9.09088713343650656196e-02lf +
                                       w * (6.66107313738753120669e-02lf +
                                            w * (4.97687799461593236017e-02lf +
                                                 w * 1.62858201153657823623e-02lf)))));
    precise double s2 = w * (-1.99999999998764832476e-01lf +
                             w * (-1.11111104054623557880e-01lf +
                                  w * (-7.69187620504482999495e-02lf +
                                       w * (-5.83357013379057348645e-02lf +
                                            w * -3.65315727442169155270e-02lf))));
    if (id < 0) {
        precise double r = ax - ax * (s1 + s2);
        return r;
    }
    precise double r = atanhi[id] - ((ax * (s1 + s2) - atanlo[id]) - ax);
    return x < 0.0lf ? -r : r;
}

// atan2 with C's special cases: the signs of zeros pick the half-plane.
double gf_datan2(double y, double x) {
    if (isnan(x) || isnan(y)) return x + y;
    uint m = (gf_dhi(y) >> 31) | ((gf_dhi(x) >> 30) & 2u); // bit 0: y < 0, bit 1: x < 0
    double pio2 = GF_DPIO2_HI + GF_DPIO2_LO;
    if (y == 0.0lf) return m < 2u ? y : m == 2u ? GF_DPI : -GF_DPI;
    if (x == 0.0lf) return (m & 1u) != 0u ? -pio2 : pio2;
    if (isinf(x)) {
        if (isinf(y)) {
            double r = m < 2u ? GF_DPIO4_HI : 3.0lf * GF_DPIO4_HI;
            return (m & 1u) != 0u ? -r : r;
        }
        return m == 0u ? 0.0lf : m == 1u ? -0.0lf : m == 2u ? GF_DPI : -GF_DPI;
    }
    if (isinf(y)) return (m & 1u) != 0u ? -pio2 : pio2;
    int k = int((gf_dhi(y) >> 20) & 0x7ffu) - int((gf_dhi(x) >> 20) & 0x7ffu);
    precise double z;
    if (k > 60) { // |y / x| > 2^60
        z = GF_DPIO2_HI + 0.5lf * GF_DPI_LO;
        m &= 1u;
    } else if (m >= 2u && k < -60) {
        z = 0.0lf; // |y / x| < 2^-60 and x < 0: pi, less nothing
    } else {
        z = gf_datan(abs(y / x));
    }
    switch (m) {
    case 0u: return z;
    case 1u: return -z;
    case 2u: {
        precise double r = GF_DPI - (z - GF_DPI_LO);
        return r;
    }
    default: {
        precise double r = (z - GF_DPI_LO) - GF_DPI;
        return r;
    }
    }
}
