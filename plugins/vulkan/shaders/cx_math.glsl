/* SPDX-License-Identifier: BSD-3-Clause */
// cx_math.glsl — complex arithmetic for the complex shaders (cx_*.comp):
// cx_math_body.glsl's formulas in float (vec2) and, in the f64 builds, in
// double (dvec2), over the real functions below. Where the device has
// shaderFloat64, c64 and c128 are both computed in double and rounded once
// on store, as the reference computes them (C99 double complex); without
// it c64 is computed in float, with the 1-ulp exp, log, sin and cos of
// plugins/common/glsl_fmath.glsl.
#include "glsl_fmath.glsl"
#if GF_F64
#include "glsl_dmath.glsl"
#endif

// ---------------------------------------------------------------- float
float r_exp(float x) { return gf_exp(x); }
float r_log(float x) { return gf_log(x); }
float r_sin(float x) { return gf_sin(x); }
float r_cos(float x) { return gf_cos(x); }
// atan of t >= 0 within about 2 ulp (GLSL's atan measured 300 ulp on
// lavapipe): reduced to |u| <= tan(pi/8) through atan t = pi/2 - atan(1/t)
// or pi/4 + atan((t - 1)/(t + 1)), then u + u^3 P(u^2) (Cephes atanf's
// minimax coefficients), the constants in two parts.
float r_atan_pos(float t) {
    const float PIO2_HI = 1.5707963705, PIO2_LO = -4.3711388287e-8;
    const float PIO4_HI = 0.78539818525, PIO4_LO = -2.1855694143e-8;
    float hi = 0.0, lo = 0.0, u = t;
    if (t > 2.414213562373095) {
        hi = PIO2_HI;
        lo = PIO2_LO;
        u = -1.0 / t;
    } else if (t > 0.4142135623730950) {
        hi = PIO4_HI;
        lo = PIO4_LO;
        u = (t - 1.0) / (t + 1.0);
    }
    precise float z = u * u;
    precise float p = ((8.05374449538e-2 * z - 1.38776856032e-1) * z + 1.99777106478e-1) * z -
                      3.33329491539e-1;
    precise float r = hi + (u + (u * z * p + lo));
    return r;
}

// atan2 with C's zeros and infinities (GLSL leaves atan(0, 0) undefined).
float r_atan2(float y, float x) {
    const float PI_HI = 3.1415927410, PI_LO = -8.7422776573e-8;
    if (isnan(x) || isnan(y)) return x + y;
    bool xneg = x < 0.0 || (x == 0.0 && 1.0 / x < 0.0);
    bool yneg = y < 0.0 || (y == 0.0 && 1.0 / y < 0.0);
    float r;
    if (y == 0.0) r = xneg ? PI_HI : 0.0;
    else if (x == 0.0) r = 0.5 * PI_HI;
    else if (isinf(x) && isinf(y)) r = xneg ? 0.75 * PI_HI : 0.25 * PI_HI;
    else if (isinf(x)) r = xneg ? PI_HI : 0.0;
    else if (isinf(y)) r = 0.5 * PI_HI;
    else {
        float t = r_atan_pos(abs(y) / abs(x)); // overflow: inf, whose atan is pi/2
        precise float back = (PI_HI - t) + PI_LO;
        r = xneg ? back : t;
    }
    return yneg ? -r : r;
}
// Kahan's log1p and expm1 over the 1-ulp log and exp.
float r_log1p(float x) {
    precise float u = 1.0 + x;
    if (u == 1.0) return x;
    if (isinf(u) || isnan(u)) return gf_log(u);
    precise float um = u - 1.0;
    return gf_log(u) * (x / um);
}
float r_expm1(float x) {
    if (abs(x) < 1e-5) return x + 0.5 * x * x;
    precise float u = gf_exp(x);
    if (u == 1.0) return x;
    precise float um = u - 1.0;
    if (um == -1.0) return -1.0;
    if (isinf(u)) return u;
    return um * x / gf_log(u);
}

#define CR float
#define CX vec2
#define CR_LN2 0.693147180559945
#include "cx_math_body.glsl"
#undef CR
#undef CX
#undef CR_LN2

// ---------------------------------------------------------------- double
#if GF_F64
double r_exp(double x) { return gf_dexp(x); }
double r_log(double x) { return gf_dlog(x); }
double r_sin(double x) { return gf_dsin(x); }
double r_cos(double x) { return gf_dcos(x); }
double r_atan2(double y, double x) { return gf_datan2(y, x); }
double r_log1p(double x) { return gf_dlog1p(x); }
double r_expm1(double x) { return gf_dexpm1(x); }

#define CR double
#define CX dvec2
#define CR_LN2 0.6931471805599453094lf
#include "cx_math_body.glsl"
#undef CR
#undef CX
#undef CR_LN2
#endif
