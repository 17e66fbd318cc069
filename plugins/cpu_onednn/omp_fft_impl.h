/* SPDX-License-Identifier: BSD-3-Clause */
/* omp_fft_impl.h — the FFT kernels, written once for a real type and
 * included by omp_fft_kernels.c for each: FT (float / double), FV (lanes:
 * 64 bytes of FT, one AVX-512 register), FS(name) (name_f32 / name_f64) and
 * FDT (GFP_F32 / GFP_F64) are defined before inclusion.
 *
 * Lanes. Every transform works on FV lines at once, stored lane-major: row
 * j of a work buffer holds element j of each line, the FV real parts then
 * the FV imaginary parts (2 * FV * sizeof(FT) bytes). Every butterfly is
 * then a loop over the lanes, one vector wide on AVX-512 and a few on
 * narrower units, with nothing to shuffle, whatever the radix or stride.
 * Batches fill the lanes with lines; a long line (or a short batch) is cut
 * into columns and rows by the four-step algorithm, whose both steps are
 * again batches.
 *
 * A 1-D transform of complex length n is a Stockham autosort (no bit
 * reversal): passes of radix 8, then 4, 2, 3, 5, 7, 11, 13, each reading one
 * buffer and writing the other, decimation in frequency: pass i, with the
 * length still to split len and stride s = n / len, maps
 *   y[q + s (r p + t)] = w_len^(p t) * sum_k x[q + s (p + k m)] w_r^(k t),
 * m = len / r, for p < m, q < s, t < r. Twiddles are tabled per pass from
 * exact integer angles (in double, then rounded once to FT).
 *
 * A complex length with a prime factor above 13 (up to FFT_LANE_MAX) takes
 * Bluestein's algorithm in the same lanes: the line times a chirp, a
 * Stockham transform of bm >= 2n - 1 (bm = 2^a 3^b 5^c), times the tabled
 * transform of the conjugate chirp, the inverse transform, times the chirp
 * (FS(ctrans)).
 *
 * Real transforms of even length n go through a complex transform of n/2:
 * z[j] = x[2j] + i x[2j+1]; then X[k] = E[k] + w^k O[k] with E, O the
 * transforms of the even and odd samples, E = (Z[k] + conj Z[h-k]) / 2 and
 * O = (Z[k] - conj Z[h-k]) / 2i (and the same steps backwards for C2R).
 * Odd lengths take a complex transform of length n. */

#define FROW(b, j) ((b) + (int64_t)(j) * 2 * FV)
#define FSIMD _Pragma("omp simd")
#define FINLINE static inline __attribute__((always_inline))

/* ------------------------------------------------------------ plans */
#define FFT_MAX_PASS 48

typedef struct FS(cplan) {
    int64_t n;
    int sign;
    int npass;
    int rad[FFT_MAX_PASS];
    int64_t twoff[FFT_MAX_PASS]; /* each pass's twiddles: pairs at tw + 2 * twoff */
    int64_t rtoff[FFT_MAX_PASS]; /* the r-th roots of unity of a generic radix */
    FT *tw, *rt;
} FS(cplan);

/* exp(sign 2 pi i k / n), the angle reduced exactly first. */
static void FS(root)(int64_t k, int64_t n, int sign, FT *re, FT *im) {
    int64_t r = k % n;
    if (r < 0) r += n;
    if (2 * r > n) r -= n;
    double a = 2.0 * 3.14159265358979323846 * (double)r / (double)n * (double)sign;
    *re = (FT)cos(a);
    *im = (FT)sin(a);
}

/* Radices of n (8s, then 4s first); false when a prime factor above 13 remains. */
static bool FS(factor)(int64_t n, int *rad, int *np) {
    int k = 0;
    while (n % 8 == 0 && k < FFT_MAX_PASS) rad[k++] = 8, n /= 8;
    while (n % 4 == 0 && k < FFT_MAX_PASS) rad[k++] = 4, n /= 4;
    static const int primes[] = {2, 3, 5, 7, 11, 13};
    for (int i = 0; i < 6; i++)
        while (n % primes[i] == 0 && k < FFT_MAX_PASS) rad[k++] = primes[i], n /= primes[i];
    *np = k;
    return n == 1;
}

static void *FS(falloc)(int64_t count) {
    if (count <= 0) count = 1;
    if ((uint64_t)count > SIZE_MAX / 64 / sizeof(FT)) return NULL;
    size_t bytes = ((size_t)count * sizeof(FT) + 63) & ~(size_t)63;
    return aligned_alloc(64, bytes);
}

static void FS(cplan_clear)(FS(cplan) *p) {
    free(p->tw);
    free(p->rt);
}

static bool FS(cplan_init)(FS(cplan) *p, int64_t n, int sign) {
    memset(p, 0, sizeof *p);
    p->n = n;
    p->sign = sign;
    if (!FS(factor)(n, p->rad, &p->npass)) return false;
    int64_t ntw = 0, nrt = 0, len = n;
    for (int i = 0; i < p->npass; i++) {
        int r = p->rad[i];
        p->twoff[i] = ntw;
        p->rtoff[i] = nrt;
        ntw += (len / r) * (r - 1);
        if (r % 2) nrt += r;
        len /= r;
    }
    p->tw = FS(falloc)(2 * ntw);
    p->rt = FS(falloc)(2 * nrt);
    if (!p->tw || !p->rt) {
        FS(cplan_clear)(p);
        return false;
    }
    len = n;
    for (int i = 0; i < p->npass; i++) {
        int r = p->rad[i];
        int64_t m = len / r;
        FT *tw = p->tw + 2 * p->twoff[i];
        for (int64_t q = 0; q < m; q++)
            for (int t = 1; t < r; t++)
                FS(root)(q * t, len, sign, &tw[2 * (q * (r - 1) + t - 1)],
                         &tw[2 * (q * (r - 1) + t - 1) + 1]);
        if (r % 2) {
            FT *rt = p->rt + 2 * p->rtoff[i];
            for (int k = 0; k < r; k++) FS(root)(k, r, sign, &rt[2 * k], &rt[2 * k + 1]);
        }
        len = m;
    }
    return true;
}

/* ------------------------------------------------------------ passes */
FINLINE void FS(pass2)(const FT *restrict x, FT *restrict y, int64_t s, int64_t m,
                       const FT *restrict tw) {
    for (int64_t p = 0; p < m; p++) {
        const FT wr = tw[2 * p], wi = tw[2 * p + 1];
        for (int64_t q = 0; q < s; q++) {
            const FT *a = FROW(x, q + s * p), *b = FROW(x, q + s * (p + m));
            FT *c = FROW(y, q + s * 2 * p), *d = FROW(y, q + s * (2 * p + 1));
            FSIMD for (int v = 0; v < FV; v++) {
                FT ar = a[v], ai = a[FV + v], br = b[v], bi = b[FV + v];
                FT dr = ar - br, di = ai - bi;
                c[v] = ar + br;
                c[FV + v] = ai + bi;
                d[v] = dr * wr - di * wi;
                d[FV + v] = dr * wi + di * wr;
            }
        }
    }
}

FINLINE void FS(pass4)(const FT *restrict x, FT *restrict y, int64_t s, int64_t m,
                       const FT *restrict tw, FT sg) {
    for (int64_t p = 0; p < m; p++) {
        const FT *w = tw + 6 * p;
        const FT w1r = w[0], w1i = w[1], w2r = w[2], w2i = w[3], w3r = w[4], w3i = w[5];
        for (int64_t q = 0; q < s; q++) {
            const FT *a0 = FROW(x, q + s * p), *a1 = FROW(x, q + s * (p + m));
            const FT *a2 = FROW(x, q + s * (p + 2 * m)), *a3 = FROW(x, q + s * (p + 3 * m));
            FT *y0 = FROW(y, q + s * 4 * p), *y1 = y0 + 2 * FV * s;
            FT *y2 = y1 + 2 * FV * s, *y3 = y2 + 2 * FV * s;
            FSIMD for (int v = 0; v < FV; v++) {
                FT t0r = a0[v] + a2[v], t0i = a0[FV + v] + a2[FV + v];
                FT t1r = a0[v] - a2[v], t1i = a0[FV + v] - a2[FV + v];
                FT t2r = a1[v] + a3[v], t2i = a1[FV + v] + a3[FV + v];
                FT dr = a1[v] - a3[v], di = a1[FV + v] - a3[FV + v];
                FT t3r = -sg * di, t3i = sg * dr; /* (a1 - a3) * (sign i) */
                FT b1r = t1r + t3r, b1i = t1i + t3i;
                FT b2r = t0r - t2r, b2i = t0i - t2i;
                FT b3r = t1r - t3r, b3i = t1i - t3i;
                y0[v] = t0r + t2r;
                y0[FV + v] = t0i + t2i;
                y1[v] = b1r * w1r - b1i * w1i;
                y1[FV + v] = b1r * w1i + b1i * w1r;
                y2[v] = b2r * w2r - b2i * w2i;
                y2[FV + v] = b2r * w2i + b2i * w2r;
                y3[v] = b3r * w3r - b3i * w3i;
                y3[FV + v] = b3r * w3i + b3i * w3r;
            }
        }
    }
}

/* Radix 8 as 2 x 4: u_k = a_k + a_(k+4) and v_k = (a_k - a_(k+4)) w8^k give
 * the even and the odd outputs by 4-point transforms. */
#define FDFT4(x0r, x0i, x1r, x1i, x2r, x2i, x3r, x3i)                                    \
    do {                                                                                 \
        FT t0r = x0r + x2r, t0i = x0i + x2i, t1r = x0r - x2r, t1i = x0i - x2i;           \
        FT t2r = x1r + x3r, t2i = x1i + x3i, dr = x1r - x3r, di = x1i - x3i;             \
        FT t3r = -sg * di, t3i = sg * dr;                                                \
        x0r = t0r + t2r, x0i = t0i + t2i, x2r = t0r - t2r, x2i = t0i - t2i;              \
        x1r = t1r + t3r, x1i = t1i + t3i, x3r = t1r - t3r, x3i = t1i - t3i;              \
    } while (0)
FINLINE void FS(pass8)(const FT *restrict x, FT *restrict y, int64_t s, int64_t m,
                       const FT *restrict tw, FT sg) {
    const FT h = (FT)0.70710678118654752440;
    for (int64_t p = 0; p < m; p++) {
        const FT *w = tw + 14 * p;
        for (int64_t q = 0; q < s; q++) {
            const FT *a[8];
            for (int k = 0; k < 8; k++) a[k] = FROW(x, q + s * (p + k * m));
            FT *o = FROW(y, q + s * 8 * p);
            const int64_t os = 2 * FV * s;
            FSIMD for (int v = 0; v < FV; v++) {
                FT u0r = a[0][v] + a[4][v], u0i = a[0][FV + v] + a[4][FV + v];
                FT u1r = a[1][v] + a[5][v], u1i = a[1][FV + v] + a[5][FV + v];
                FT u2r = a[2][v] + a[6][v], u2i = a[2][FV + v] + a[6][FV + v];
                FT u3r = a[3][v] + a[7][v], u3i = a[3][FV + v] + a[7][FV + v];
                FT v0r = a[0][v] - a[4][v], v0i = a[0][FV + v] - a[4][FV + v];
                FT d1r = a[1][v] - a[5][v], d1i = a[1][FV + v] - a[5][FV + v];
                FT d2r = a[2][v] - a[6][v], d2i = a[2][FV + v] - a[6][FV + v];
                FT d3r = a[3][v] - a[7][v], d3i = a[3][FV + v] - a[7][FV + v];
                /* w8 = h (1 + sign i), w8^2 = sign i, w8^3 = h (-1 + sign i) */
                FT v1r = h * (d1r - sg * d1i), v1i = h * (d1i + sg * d1r);
                FT v2r = -sg * d2i, v2i = sg * d2r;
                FT v3r = h * (-d3r - sg * d3i), v3i = h * (-d3i + sg * d3r);
                FDFT4(u0r, u0i, u1r, u1i, u2r, u2i, u3r, u3i);
                FDFT4(v0r, v0i, v1r, v1i, v2r, v2i, v3r, v3i);
                /* b_2t = u_t, b_2t+1 = v_t; y_t = b_t w^(p t) */
                o[v] = u0r, o[FV + v] = u0i;
                FT br[7] = {v0r, u1r, v1r, u2r, v2r, u3r, v3r};
                FT bi[7] = {v0i, u1i, v1i, u2i, v2i, u3i, v3i};
                for (int t = 0; t < 7; t++) {
                    FT wr = w[2 * t], wi = w[2 * t + 1];
                    o[(t + 1) * os + v] = br[t] * wr - bi[t] * wi;
                    o[(t + 1) * os + FV + v] = br[t] * wi + bi[t] * wr;
                }
            }
        }
    }
}
#undef FDFT4

/* An odd radix r <= 13, inlined with r a constant at each call (the loops
 * then unroll and the values live in registers): the r-point DFT by its
 * conjugate pairs. With h = (r - 1) / 2, s_k = a_k + a_(r-k) and
 * d_k = a_k - a_(r-k) (k = 1 .. h), output t and r - t are A_t +- i B_t,
 *   A_t = a_0 + sum_k s_k cos(2 pi k t / r),
 *   B_t = sum_k d_k sign sin(2 pi k t / r),
 * half the products of the plain sums; rt holds (cos, sign sin) of
 * 2 pi e / r. Then y_t = b_t w^(p t). */
FINLINE void FS(passo)(const FT *restrict x, FT *restrict y, int64_t s, int64_t m, const int r,
                       const FT *restrict tw, const FT *restrict rt) {
    const int h = (r - 1) / 2;
    FT cs[6][6], sn[6][6]; /* [k - 1][t - 1] */
    for (int k = 1; k <= h; k++)
        for (int t = 1; t <= h; t++) {
            int e = (k * t) % r;
            cs[k - 1][t - 1] = rt[2 * e];
            sn[k - 1][t - 1] = rt[2 * e + 1];
        }
    for (int64_t p = 0; p < m; p++) {
        const FT *w = tw + 2 * (r - 1) * p;
        for (int64_t q = 0; q < s; q++) {
            const FT *a0 = FROW(x, q + s * p);
            FT *o = FROW(y, q + s * r * p);
            const int64_t os = 2 * FV * s, is = 2 * FV * s * m;
            FSIMD for (int v = 0; v < FV; v++) {
                FT sr[6], si[6], dr[6], di[6];
                FT x0r = a0[v], x0i = a0[FV + v], y0r = x0r, y0i = x0i;
                for (int k = 1; k <= h; k++) {
                    const FT *ak = a0 + k * is, *bk = a0 + (r - k) * is;
                    sr[k - 1] = ak[v] + bk[v];
                    si[k - 1] = ak[FV + v] + bk[FV + v];
                    dr[k - 1] = ak[v] - bk[v];
                    di[k - 1] = ak[FV + v] - bk[FV + v];
                    y0r += sr[k - 1];
                    y0i += si[k - 1];
                }
                o[v] = y0r;
                o[FV + v] = y0i;
                for (int t = 1; t <= h; t++) {
                    FT ar = x0r, ai = x0i, br = 0, bi = 0;
                    for (int k = 0; k < h; k++) {
                        ar += sr[k] * cs[k][t - 1];
                        ai += si[k] * cs[k][t - 1];
                        br += dr[k] * sn[k][t - 1];
                        bi += di[k] * sn[k][t - 1];
                    }
                    /* b_t = A + i B, b_(r-t) = A - i B */
                    FT pr = ar - bi, pi = ai + br, mr = ar + bi, mi = ai - br;
                    const FT w1r = w[2 * (t - 1)], w1i = w[2 * (t - 1) + 1];
                    const FT w2r = w[2 * (r - t - 1)], w2i = w[2 * (r - t - 1) + 1];
                    o[t * os + v] = pr * w1r - pi * w1i;
                    o[t * os + FV + v] = pr * w1i + pi * w1r;
                    o[(r - t) * os + v] = mr * w2r - mi * w2i;
                    o[(r - t) * os + FV + v] = mr * w2i + mi * w2r;
                }
            }
        }
    }
}

/* Transforms the FV lines in a (p->n rows); b is scratch of as many rows.
 * Returns the buffer holding the result (a or b). */
ODN_CLONES static FT *FS(lanes_fft)(const FS(cplan) *p, FT *a, FT *b) {
    int64_t s = 1, len = p->n;
    FT *x = a, *y = b;
    const FT sg = (FT)p->sign;
    for (int i = 0; i < p->npass; i++) {
        int r = p->rad[i];
        int64_t m = len / r;
        const FT *tw = p->tw + 2 * p->twoff[i];
        if (r == 8) FS(pass8)(x, y, s, m, tw, sg);
        else if (r == 4) FS(pass4)(x, y, s, m, tw, sg);
        else if (r == 2) FS(pass2)(x, y, s, m, tw);
        else if (r == 3) FS(passo)(x, y, s, m, 3, tw, p->rt + 2 * p->rtoff[i]);
        else if (r == 5) FS(passo)(x, y, s, m, 5, tw, p->rt + 2 * p->rtoff[i]);
        else if (r == 7) FS(passo)(x, y, s, m, 7, tw, p->rt + 2 * p->rtoff[i]);
        else if (r == 11) FS(passo)(x, y, s, m, 11, tw, p->rt + 2 * p->rtoff[i]);
        else FS(passo)(x, y, s, m, 13, tw, p->rt + 2 * p->rtoff[i]);
        FT *t = x;
        x = y, y = t;
        s *= r;
        len = m;
    }
    return x;
}

/* ------------------------------------------------------------ lane I/O */
/* Where FV lines live: element j of lane v has its real part at
 * re[v][j * st] and its imaginary part at im[v][j * st] (im NULL: a real
 * line, imaginary parts 0 on load and not stored); lanes >= nl are absent. */
typedef struct FS(lanes) {
    FT *re[FV], *im[FV];
    int64_t st;
    int nl;
} FS(lanes);

/* Whether the lanes are close together (element j of every lane nearer
 * than elements j and j + 1 of one lane): then rows are the inner loop. */
static bool FS(lanes_dense)(const FS(lanes) *L) {
    if (L->nl < 2) return false;
    int64_t d = L->re[1] - L->re[0];
    if (d < 0) d = -d;
    int64_t st = L->st < 0 ? -L->st : L->st;
    return d < st;
}


/* ---- FV x FV transposes in registers, for lines stored one after the
 * other (rows of a batch): a lane's elements are consecutive there, a row
 * of the work buffer wants one element of each lane. Generic vectors: each
 * clone of the callers gets its own instructions (2-input permutes on
 * AVX-512). Stage h swaps the off-diagonal h x h blocks of every 2h x 2h
 * block; the stages h = FV/2 .. 1 make the transpose. */
typedef FT FS(vec) __attribute__((vector_size(64)));
typedef FI FS(ivec) __attribute__((vector_size(64)));

/* Two-input permutes: GCC's __builtin_shuffle; clang has none with a mask
 * in a variable (its __builtin_shufflevector wants constants), so there a
 * plain loop (the sanitizer and fuzz builds use clang; speed does not
 * matter there). */
#if defined(__clang__)
/* (through pointers: a 64-byte vector passed by value changes the ABI
 * between the clones) */
FINLINE void FS(shuffle2)(FS(vec) *r, const FS(vec) *a, const FS(vec) *b, const FS(ivec) *m) {
    for (int i = 0; i < FV; i++) (*r)[i] = (*m)[i] < FV ? (*a)[(*m)[i]] : (*b)[(*m)[i] - FV];
}
#define FSHUF(d, a, b, m) FS(shuffle2)(&(d), &(a), &(b), &(m))
#else
#define FSHUF(d, a, b, m) ((d) = __builtin_shuffle((a), (b), (m)))
#endif

#define FLO(c) ((c) & h ? FV + ((c) ^ h) : (c))
#define FHI(c) ((c) & h ? FV + (c) : ((c) ^ h))
FINLINE void FS(tstage)(FS(vec) *r, const int h) {
    const FS(ivec) lo = FMASK(FLO), hi = FMASK(FHI);
#pragma GCC unroll 16
    for (int i = 0; i < FV; i++) {
        if (i & h) continue;
        FS(vec) a = r[i], b = r[i | h];
        FSHUF(r[i], a, b, lo);
        FSHUF(r[i | h], a, b, hi);
    }
}
#undef FLO
#undef FHI

FINLINE void FS(transpose)(FS(vec) *r) {
    if (FV == 16) FS(tstage)(r, 8);
    FS(tstage)(r, 4);
    FS(tstage)(r, 2);
    FS(tstage)(r, 1);
}

/* Unaligned vector moves (macros: a vector argument would change the ABI
 * between the clones). */
#define FVLD(d, p) memcpy(&(d), (p), sizeof(d))
#define FVST(p, v) memcpy((p), &(v), sizeof(v))

/* Copies of the first k values (k <= FV) of a register to or from memory,
 * each a copy of a size known when compiled (a variable size would be a
 * call to the C library per lane). */
#define FCASE(k) case k: memcpy(dst, src, (k) * sizeof(FT)); break;
#define FCASES FCASE(1) FCASE(2) FCASE(3) FCASE(4) FCASE(5) FCASE(6) FCASE(7) \
    FCASE(8) FCASE(9) FCASE(10) FCASE(11) FCASE(12) FCASE(13) FCASE(14) FCASE(15)
FINLINE void FS(copy_part)(void *dst, const void *src, int64_t k) {
    if (k == FV) { /* a whole register (a line of FV / 2 complex values) */
        memcpy(dst, src, FV * sizeof(FT));
        return;
    }
    switch (k) {
        FCASES
    default: memcpy(dst, src, (size_t)k * sizeof(FT)); break;
    }
}
#undef FCASE
#undef FCASES

/* How the lanes lie for the transposing paths: 2 when each is complex pairs
 * one after the other (im = re + 1, stride 2), 1 when each is real values
 * one after the other (no im), 0 otherwise. */
static int FS(lanes_packed)(const FS(lanes) *L) {
    if (L->st == 1) {
        for (int v = 0; v < L->nl; v++)
            if (L->im[v]) return 0;
        return 1;
    }
    if (L->st != 2) return 0;
    for (int v = 0; v < L->nl; v++)
        if (L->im[v] != L->re[v] + 1) return 0;
    return 2;
}

/* Whether all FV lanes are adjacent complex elements (re[v] = re[0] + 2v,
 * im = re + 1): a row is then 2 FV consecutive values, split by permutes. */
static bool FS(lanes_adjacent)(const FS(lanes) *L) {
    if (L->nl != FV) return false;
    for (int v = 0; v < FV; v++)
        if (L->re[v] != L->re[0] + 2 * v || L->im[v] != L->re[v] + 1) return false;
    return true;
}

#define FEV(c) (2 * (c))
#define FOD(c) (2 * (c) + 1)
#define FIL(c) ((c) & 1 ? FV + (c) / 2 : (c) / 2)
#define FIH(c) ((c) & 1 ? FV + FV / 2 + (c) / 2 : FV / 2 + (c) / 2)
ODN_CLONES static void FS(load_adj)(FT *buf, int64_t rows, const FT *p, int64_t st) {
    const FS(ivec) ev = FMASK(FEV), od = FMASK(FOD);
    for (int64_t j = 0; j < rows; j++) {
        FS(vec) a, b, re, im;
        FVLD(a, p + j * st);
        FVLD(b, p + j * st + FV);
        FSHUF(re, a, b, ev);
        FSHUF(im, a, b, od);
        FVST(FROW(buf, j), re);
        FVST(FROW(buf, j) + FV, im);
    }
}

ODN_CLONES static void FS(store_adj)(const FT *buf, int64_t rows, FT *p, int64_t st, FT scale) {
    const FS(ivec) il = FMASK(FIL), ih = FMASK(FIH);
    for (int64_t j = 0; j < rows; j++) {
        FS(vec) re, im, a, b;
        FVLD(re, FROW(buf, j));
        FVLD(im, FROW(buf, j) + FV);
        re *= scale;
        im *= scale;
        FSHUF(a, re, im, il);
        FSHUF(b, re, im, ih);
        FVST(p + j * st, a);
        FVST(p + j * st + FV, b);
    }
}
#undef FEV
#undef FOD
#undef FIL
#undef FIH

/* The rows of buf from packed lanes (kind: FS(lanes_packed)), FV rows (or
 * FV / 2 complex ones) per register transpose; returns how many it did
 * (the caller does the rest). */
ODN_CLONES static int64_t FS(load_tr)(FT *buf, int64_t rows, const FS(lanes) *L, int kind) {
    const int64_t full = rows / FV * FV;
    FS(vec) A[FV];
    const FS(vec) zero = {0};
    for (int64_t j0 = 0; j0 < full; j0 += FV) {
        if (kind == 2) {
            for (int half = 0; half < 2; half++) {
                for (int v = 0; v < FV; v++) {
                    if (v < L->nl) FVLD(A[v], L->re[v] + 2 * j0 + half * FV);
                    else A[v] = zero;
                }
                FS(transpose)(A);
                for (int k = 0; k < FV / 2; k++) {
                    FVST(FROW(buf, j0 + half * FV / 2 + k), A[2 * k]);
                    FVST(FROW(buf, j0 + half * FV / 2 + k) + FV, A[2 * k + 1]);
                }
            }
        } else {
            for (int v = 0; v < FV; v++) {
                if (v < L->nl) FVLD(A[v], L->re[v] + j0);
                else A[v] = zero;
            }
            FS(transpose)(A);
            for (int k = 0; k < FV; k++) {
                FVST(FROW(buf, j0 + k), A[k]);
                FVST(FROW(buf, j0 + k) + FV, zero);
            }
        }
    }
    /* The last rows (all of a line shorter than FV): the same transposes of
     * lanes copied partly into zeroed registers; a few rows are left to the
     * caller's element loop, which is faster for them. */
    if (rows - full < FV / 4) return full;
    for (int64_t j0 = full; j0 < rows;) {
        int64_t c = kind == 2 ? (rows - j0 < FV / 2 ? rows - j0 : FV / 2) : rows - j0;
        for (int v = 0; v < FV; v++) {
            A[v] = zero;
            if (v < L->nl) FS(copy_part)(&A[v], L->re[v] + kind * j0, kind * c);
        }
        FS(transpose)(A);
        for (int k = 0; k < c; k++) {
            FVST(FROW(buf, j0 + k), A[kind * k]);
            if (kind == 2) FVST(FROW(buf, j0 + k) + FV, A[2 * k + 1]);
            else FVST(FROW(buf, j0 + k) + FV, zero);
        }
        j0 += c;
    }
    return rows;
}

/* The rows of buf into packed lanes, times scale: load_tr backwards. */
ODN_CLONES static int64_t FS(store_tr)(const FT *buf, int64_t rows, const FS(lanes) *L, int kind,
                                       FT scale) {
    const int64_t full = rows / FV * FV;
    FS(vec) A[FV];
    for (int64_t j0 = 0; j0 < full; j0 += FV) {
        if (kind == 2) {
            for (int half = 0; half < 2; half++) {
                for (int k = 0; k < FV / 2; k++) {
                    FVLD(A[2 * k], FROW(buf, j0 + half * FV / 2 + k));
                    A[2 * k] *= scale;
                    FVLD(A[2 * k + 1], FROW(buf, j0 + half * FV / 2 + k) + FV);
                    A[2 * k + 1] *= scale;
                }
                FS(transpose)(A);
                for (int v = 0; v < L->nl; v++) FVST(L->re[v] + 2 * j0 + half * FV, A[v]);
            }
        } else {
            for (int k = 0; k < FV; k++) {
                FVLD(A[k], FROW(buf, j0 + k));
                A[k] *= scale;
            }
            FS(transpose)(A);
            for (int v = 0; v < L->nl; v++) FVST(L->re[v] + j0, A[v]);
        }
    }
    /* The last rows, as load_tr's */
    if (rows - full < FV / 4) return full;
    const FS(vec) zero = {0};
    for (int64_t j0 = full; j0 < rows;) {
        int64_t c = kind == 2 ? (rows - j0 < FV / 2 ? rows - j0 : FV / 2) : rows - j0;
        for (int k = 0; k < FV; k++) A[k] = zero;
        for (int k = 0; k < c; k++) {
            FVLD(A[kind * k], FROW(buf, j0 + k));
            A[kind * k] *= scale;
            if (kind == 2) {
                FVLD(A[2 * k + 1], FROW(buf, j0 + k) + FV);
                A[2 * k + 1] *= scale;
            }
        }
        FS(transpose)(A);
        for (int v = 0; v < L->nl; v++)
            FS(copy_part)(L->re[v] + kind * j0, &A[v], kind * c);
        j0 += c;
    }
    return rows;
}

ODN_CLONES static void FS(lanes_load)(FT *buf, int64_t rows, const FS(lanes) *L) {
    const int64_t st = L->st;
    if (FS(lanes_adjacent)(L)) {
        FS(load_adj)(buf, rows, L->re[0], st);
        return;
    }
    int packed = FS(lanes_dense)(L) ? 0 : FS(lanes_packed)(L);
    if (packed) {
        int64_t done = FS(load_tr)(buf, rows, L, packed);
        for (int64_t j = done; j < rows; j++) {
            FT *o = FROW(buf, j);
            for (int v = 0; v < FV; v++) {
                o[v] = v < L->nl ? L->re[v][j * st] : 0;
                o[FV + v] = v < L->nl && L->im[v] ? L->im[v][j * st] : 0;
            }
        }
        return;
    }
    if (FS(lanes_dense)(L)) {
        for (int64_t j = 0; j < rows; j++) {
            FT *o = FROW(buf, j);
            for (int v = 0; v < L->nl; v++) {
                o[v] = L->re[v][j * st];
                o[FV + v] = L->im[v] ? L->im[v][j * st] : 0;
            }
            for (int v = L->nl; v < FV; v++) o[v] = o[FV + v] = 0;
        }
        return;
    }
    for (int v = 0; v < FV; v++) {
        if (v >= L->nl) {
            for (int64_t j = 0; j < rows; j++) FROW(buf, j)[v] = FROW(buf, j)[FV + v] = 0;
            continue;
        }
        const FT *re = L->re[v], *im = L->im[v];
        for (int64_t j = 0; j < rows; j++) FROW(buf, j)[v] = re[j * st];
        if (im) for (int64_t j = 0; j < rows; j++) FROW(buf, j)[FV + v] = im[j * st];
        else for (int64_t j = 0; j < rows; j++) FROW(buf, j)[FV + v] = 0;
    }
}

ODN_CLONES static void FS(lanes_store)(const FT *buf, int64_t rows, const FS(lanes) *L,
                                       FT scale) {
    const int64_t st = L->st;
    if (FS(lanes_adjacent)(L)) {
        FS(store_adj)(buf, rows, L->re[0], st, scale);
        return;
    }
    int packed = FS(lanes_dense)(L) ? 0 : FS(lanes_packed)(L);
    if (packed) {
        int64_t done = FS(store_tr)(buf, rows, L, packed, scale);
        for (int64_t j = done; j < rows; j++) {
            const FT *o = FROW(buf, j);
            for (int v = 0; v < L->nl; v++) {
                L->re[v][j * st] = o[v] * scale;
                if (L->im[v]) L->im[v][j * st] = o[FV + v] * scale;
            }
        }
        return;
    }
    if (FS(lanes_dense)(L)) {
        for (int64_t j = 0; j < rows; j++) {
            const FT *o = FROW(buf, j);
            for (int v = 0; v < L->nl; v++) {
                L->re[v][j * st] = o[v] * scale;
                if (L->im[v]) L->im[v][j * st] = o[FV + v] * scale;
            }
        }
        return;
    }
    for (int v = 0; v < L->nl; v++) {
        FT *re = L->re[v], *im = L->im[v];
        for (int64_t j = 0; j < rows; j++) re[j * st] = FROW(buf, j)[v] * scale;
        if (im) for (int64_t j = 0; j < rows; j++) im[j * st] = FROW(buf, j)[FV + v] * scale;
    }
}

/* ------------------------------------------------------------ real pre/post */
/* X[0..h] from Z[0..h) (see the file comment); w: h + 1 pairs w^k. */
ODN_CLONES static void FS(r2c_post)(const FT *z, FT *X, int64_t h, const FT *w, int64_t k0) {
    for (int64_t k = k0; k <= h; k++) {
        const FT *a = FROW(z, k == h ? 0 : k), *b = FROW(z, k == 0 ? 0 : h - k);
        FT *o = FROW(X, k);
        const FT wr = w[2 * k], wi = w[2 * k + 1];
        FSIMD for (int v = 0; v < FV; v++) {
            FT zr = a[v], zi = a[FV + v], cr = b[v], ci = -b[FV + v];
            FT er = (FT)0.5 * (zr + cr), ei = (FT)0.5 * (zi + ci);
            FT or_ = (FT)0.5 * (zi - ci), oi = (FT)-0.5 * (zr - cr);
            o[v] = er + (or_ * wr - oi * wi);
            o[FV + v] = ei + (or_ * wi + oi * wr);
        }
    }
}

/* r2c_post fused with store_tr's transposes into interleaved complex
 * lanes (kind 2): rows [0, full) of X go straight from registers to the
 * lanes; returns full (the caller does the rest). */
ODN_CLONES static int64_t FS(store_r2c_tr)(const FT *z, int64_t h, const FS(lanes) *L,
                                           const FT *w, FT scale) {
    const int64_t full = (h + 1) / FV * FV;
    FS(vec) A[FV];
    for (int64_t j0 = 0; j0 < full; j0 += FV) {
        for (int half = 0; half < 2; half++) {
            for (int k = 0; k < FV / 2; k++) {
                int64_t kk = j0 + half * FV / 2 + k;
                const FT *pa = FROW(z, kk == h ? 0 : kk), *pb = FROW(z, kk == 0 ? 0 : h - kk);
                FS(vec) zr, zi, cr, ci;
                FVLD(zr, pa);
                FVLD(zi, pa + FV);
                FVLD(cr, pb);
                FVLD(ci, pb + FV);
                ci = -ci;
                const FT wr = w[2 * kk], wi = w[2 * kk + 1];
                FS(vec) er = (FT)0.5 * (zr + cr), ei = (FT)0.5 * (zi + ci);
                FS(vec) or_ = (FT)0.5 * (zi - ci), oi = (FT)-0.5 * (zr - cr);
                A[2 * k] = (er + (or_ * wr - oi * wi)) * scale;
                A[2 * k + 1] = (ei + (or_ * wi + oi * wr)) * scale;
            }
            FS(transpose)(A);
            for (int v = 0; v < L->nl; v++) FVST(L->re[v] + 2 * j0 + half * FV, A[v]);
        }
    }
    return full;
}

/* Z'[0..h) from X[0..h] (whose imaginary parts of rows 0 and h are zeroed
 * here): the complex transform of Z' holds x[2j] + i x[2j+1]. */
ODN_CLONES static void FS(c2r_pre)(FT *X, FT *z, int64_t h, const FT *w) {
    for (int v = 0; v < FV; v++) FROW(X, 0)[FV + v] = FROW(X, h)[FV + v] = 0;
    for (int64_t k = 0; k < h; k++) {
        const FT *a = FROW(X, k), *b = FROW(X, h - k);
        FT *o = FROW(z, k);
        const FT wr = w[2 * k], wi = w[2 * k + 1];
        FSIMD for (int v = 0; v < FV; v++) {
            FT xr = a[v], xi = a[FV + v], cr = b[v], ci = -b[FV + v];
            FT er = xr + cr, ei = xi + ci, dr = xr - cr, di = xi - ci;
            FT or_ = dr * wr - di * wi, oi = dr * wi + di * wr;
            o[v] = er - oi;
            o[FV + v] = ei + or_;
        }
    }
}

/* ------------------------------------------------------------ line plans */
/* A plan for the lines of a job: the complex transform (of n, or n/2 for
 * an even real length) and the real pass's roots w^k = exp(sign 2 pi i k/n),
 * k <= n/2; or, for long lines, the four-step split m = n1 n2 with the
 * twiddles w_m^(j2 k1) in the order step C reads them. */

typedef struct FS(lplan) {
    FS(cplan) c;    /* LINE: length m (Bluestein: bm, forward); FOUR: n1 */
    FS(cplan) c2;   /* FOUR: n2; Bluestein: bm, inverse */
    int64_t m;      /* complex length */
    int64_t n1, n2; /* FOUR */
    FT *wr;         /* the real pass's roots (pairs), or NULL */
    FT *tre, *tim;  /* FOUR: twiddles, blocked as Y */
    /* Bluestein, for a complex length m with a prime factor above 13 (the
     * lane path only): the DFT as the circular convolution over bm >= 2m - 1
     * (bm with factors 2, 3 and 5 only) of the line times the chirp with the
     * conjugate chirp, times the chirp. chirp: m pairs exp(sign i pi k^2 /
     * m), k^2 reduced mod 2m exactly; bhat: bm pairs, the forward transform
     * of the wrapped conjugate chirp, / bm. bm is 0 otherwise. */
    int64_t bm;
    FT *chirp, *bhat;
} FS(lplan);

static void FS(lplan_free)(void *pp) {
    FS(lplan) *p = pp;
    if (!p) return;
    FS(cplan_clear)(&p->c);
    FS(cplan_clear)(&p->c2);
    free(p->wr);
    free(p->tre);
    free(p->tim);
    free(p->chirp);
    free(p->bhat);
    free(p);
}

/* Whether every prime factor of m is at most 13 (a Stockham plan). */
static bool FS(smooth)(int64_t m) {
    int rad[FFT_MAX_PASS], np;
    return m >= 1 && FS(factor)(m, rad, &np);
}

/* The least bm >= k whose prime factors are 2, 3 and 5. */
static int64_t FS(smooth235)(int64_t k) {
    int64_t best = INT64_MAX;
    for (int64_t a = 1; a < 2 * k; a *= 2)
        for (int64_t b = a; b < 2 * k; b *= 3)
            for (int64_t c = b; c < 2 * k; c *= 5)
                if (c >= k && c < best) best = c;
    return best;
}

/* Bluestein's tables for the complex length m of p (see FS(lplan)). */
static bool FS(bluestein_init)(FS(lplan) *p, int sign) {
    const int64_t m = p->m, bm = FS(smooth235)(2 * m - 1);
    p->bm = bm;
    p->chirp = FS(falloc)(2 * m);
    p->bhat = FS(falloc)(2 * bm);
    FT *a = FS(falloc)(2 * FV * bm), *b = FS(falloc)(2 * FV * bm);
    bool ok = p->chirp && p->bhat && a && b && FS(cplan_init)(&p->c, bm, -1) &&
              FS(cplan_init)(&p->c2, bm, 1);
    for (int64_t k = 0; ok && k < m; k++) /* m <= FFT_LANE_MAX: k^2 fits */
        FS(root)((k * k) % (2 * m), 2 * m, sign, &p->chirp[2 * k], &p->chirp[2 * k + 1]);
    if (ok) { /* bhat through the lane transform, in lane 0 */
        memset(a, 0, (size_t)(2 * FV * bm) * sizeof(FT));
        for (int64_t j = 0; j < bm; j++) {
            int64_t at = j < m ? j : bm - j < m ? bm - j : -1;
            if (at < 0) continue;
            FROW(a, j)[0] = p->chirp[2 * at];
            FROW(a, j)[FV] = -p->chirp[2 * at + 1];
        }
        const FT *r = FS(lanes_fft)(&p->c, a, b);
        for (int64_t j = 0; j < bm; j++) {
            p->bhat[2 * j] = FROW(r, j)[0] / (FT)bm;
            p->bhat[2 * j + 1] = FROW(r, j)[FV] / (FT)bm;
        }
    }
    free(a);
    free(b);
    return ok;
}

/* Row j of dst = row j of src (every lane) times the pair w[j], rows
 * 0 .. rows - 1 (dst may be src). */
FINLINE void FS(rows_times)(FT *dst, const FT *src, const FT *w, int64_t rows) {
    for (int64_t j = 0; j < rows; j++) {
        const FT *x = FROW(src, j);
        FT *u = FROW(dst, j);
        const FT cr = w[2 * j], ci = w[2 * j + 1];
        FSIMD for (int v = 0; v < FV; v++) {
            FT xr = x[v], xi = x[FV + v];
            u[v] = xr * cr - xi * ci;
            u[FV + v] = xr * ci + xi * cr;
        }
    }
}

/* The complex transform of the lanes' lines of P->m rows in a (b: the other
 * buffer, both of at least P->bm rows for Bluestein); returns a or b. */
ODN_CLONES static FT *FS(ctrans)(const FS(lplan) *P, FT *a, FT *b) {
    if (!P->bm) return FS(lanes_fft)(&P->c, a, b);
    const int64_t m = P->m, bm = P->bm;
    FS(rows_times)(b, a, P->chirp, m);
    memset(FROW(b, m), 0, (size_t)(2 * FV * (bm - m)) * sizeof(FT));
    FT *r = FS(lanes_fft)(&P->c, b, a);
    FS(rows_times)(r, r, P->bhat, bm);
    FT *o = FS(lanes_fft)(&P->c2, r, r == a ? b : a);
    FS(rows_times)(o, o, P->chirp, m);
    return o;
}

/* Key: kind = FFT_PLAN_LINE / FOUR + 4 * (1 when a real pass follows on
 * length n = 2 m), n = the complex length m. */
static void *FS(lplan_build)(const odn_fft_plan_key *key) {
    FS(lplan) *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    int64_t m = key->n;
    bool real = key->kind >= 4, four = (key->kind & 3) == FFT_PLAN_FOUR;
    p->m = m;
    bool ok = true;
    if (real) {
        p->wr = FS(falloc)(2 * (m + 1));
        ok = p->wr != NULL;
        for (int64_t k = 0; ok && k <= m; k++)
            FS(root)(k, 2 * m, key->sign, &p->wr[2 * k], &p->wr[2 * k + 1]);
    }
    if (ok && !four) {
        ok = FS(smooth)(m) ? FS(cplan_init)(&p->c, m, key->sign)
                           : FS(bluestein_init)(p, key->sign);
    } else if (ok) {
        /* n1: the largest divisor <= sqrt(m) */
        int64_t n1 = 1;
        for (int64_t d = 1; d * d <= m; d++)
            if (m % d == 0) n1 = d;
        int64_t n2 = m / n1, nb = (n1 + FV - 1) / FV;
        p->n1 = n1, p->n2 = n2;
        ok = FS(cplan_init)(&p->c, n1, key->sign) && FS(cplan_init)(&p->c2, n2, key->sign);
        p->tre = ok ? FS(falloc)(nb * n2 * FV) : NULL;
        p->tim = ok ? FS(falloc)(nb * n2 * FV) : NULL;
        ok = ok && p->tre && p->tim;
        for (int64_t b = 0; ok && b < nb; b++)
            for (int64_t j2 = 0; j2 < n2; j2++)
                for (int l = 0; l < FV; l++) {
                    int64_t k1 = b * FV + l, i = (b * n2 + j2) * FV + l;
                    if (k1 < n1) FS(root)(j2 * k1, m, key->sign, &p->tre[i], &p->tim[i]);
                    else p->tre[i] = p->tim[i] = 0;
                }
    }
    if (!ok) {
        FS(lplan_free)(p);
        return NULL;
    }
    return p;
}

/* ------------------------------------------------------------ batches of lines */
/* Line b's element offsets (in elements) in source and destination. */
static void FS(line_offsets)(const odn_fft_job *J, int64_t b, int64_t *so, int64_t *dof) {
    int64_t s = 0, d = 0;
    for (int i = J->batch_rank - 1; i >= 0; i--) {
        int64_t sz = J->batch_sizes[i], ix = b % sz;
        b /= sz;
        s += ix * J->src_bstride[i];
        d += ix * J->dst_bstride[i];
    }
    *so = s, *dof = d;
}

/* The lanes of a line set: src side (or dst) of lines b0 .. b0 + nl - 1.
 * pairs: a real line read or written as complex pairs (x[2j], x[2j+1]). */
static void FS(lanes_of)(const odn_fft_job *J, int64_t b0, int nl, bool dst, bool pairs,
                         FS(lanes) *L) {
    bool real = dst ? J->dst_real : J->src_real;
    FT *base = (FT *)(dst ? J->dst : J->src);
    int64_t st = dst ? J->dst_stride : J->src_stride;
    L->nl = nl;
    /* line b0's offset and index, then the next lines' by counting up the
     * index (no division per line) */
    int64_t idx[GFP_MAX_RANK], rest = b0, off = 0;
    const int64_t *bst = dst ? J->dst_bstride : J->src_bstride;
    for (int i = J->batch_rank - 1; i >= 0; i--) {
        idx[i] = i == 0 ? rest : rest % J->batch_sizes[i]; /* b0 < lines */
        rest = i == 0 ? 0 : rest / J->batch_sizes[i];
        off += idx[i] * bst[i];
    }
    const bool one = J->batch_rank == 1;
    for (int v = 0; v < nl; v++) {
        if (one) off = (b0 + v) * bst[0];
        else if (v > 0)
            for (int i = J->batch_rank - 1; i >= 0; i--) {
                off += bst[i];
                if (++idx[i] < J->batch_sizes[i]) break;
                off -= idx[i] * bst[i];
                idx[i] = 0;
            }
        if (!real) {
            L->re[v] = base + 2 * off;
            L->im[v] = L->re[v] + 1;
        } else {
            L->re[v] = base + off;
            L->im[v] = pairs ? L->re[v] + st : NULL;
        }
    }
    L->st = real ? (pairs ? 2 * st : st) : 2 * st;
}

/* One set of up to FV lines by the lane path; a, b: scratch of n + 2 rows. */
static void FS(lines_chunk)(const odn_fft_job *J, const FS(lplan) *P, int64_t b0, int nl,
                            FT *a, FT *b) {
    int64_t n = J->n, h = n / 2;
    bool even = n % 2 == 0;
    FS(lanes) L;
    FT scale = (FT)J->scale;
    switch (J->line) {
    case ODN_FFT_LINE_C2C: {
        FS(lanes_of)(J, b0, nl, false, false, &L);
        FS(lanes_load)(a, n, &L);
        FT *r = FS(ctrans)(P, a, b);
        FS(lanes_of)(J, b0, nl, true, false, &L);
        FS(lanes_store)(r, n, &L, scale);
        break;
    }
    case ODN_FFT_LINE_R2C: {
        FS(lanes_of)(J, b0, nl, false, even, &L);
        FS(lanes_load)(a, even ? h : n, &L);
        FT *r = FS(ctrans)(P, a, b);
        FS(lanes_of)(J, b0, nl, true, false, &L);
        if (even) {
            FT *o = r == a ? b : a;
            int64_t done = 0;
            if (!FS(lanes_dense)(&L) && FS(lanes_packed)(&L) == 2)
                done = FS(store_r2c_tr)(r, h, &L, P->wr, scale);
            FS(r2c_post)(r, o, h, P->wr, done);
            r = o;
            for (int v = 0; v < nl; v++) { /* what is left: rows done .. h */
                L.re[v] += done * L.st;
                L.im[v] += done * L.st;
            }
            FS(lanes_store)(FROW(r, done), h + 1 - done, &L, scale);
            break;
        }
        FS(lanes_store)(r, h + 1, &L, scale);
        break;
    }
    case ODN_FFT_LINE_C2R: {
        FS(lanes_of)(J, b0, nl, false, false, &L);
        FS(lanes_load)(b, h + 1, &L);
        if (even) {
            FS(c2r_pre)(b, a, h, P->wr);
        } else {
            FT *t = a;
            a = b, b = t; /* the bins are in a now */
            for (int64_t k = h + 1; k < n; k++) {
                const FT *s = FROW(a, n - k);
                FT *o = FROW(a, k);
                for (int v = 0; v < FV; v++) o[v] = s[v], o[FV + v] = -s[FV + v];
            }
        }
        FT *r = FS(ctrans)(P, a, b);
        FS(lanes_of)(J, b0, nl, true, even, &L);
        FS(lanes_store)(r, even ? h : n, &L, scale);
        break;
    }
    }
}

/* ------------------------------------------------------------ four-step */
/* One complex line of m = n1 n2 elements, j = n2 j1 + j2, k = k1 + n1 k2:
 *  A. the n2 columns (stride n2) transformed (length n1), stored into Y
 *     blocked by FV values of k1: Y[(k1 / FV) n2 + j2][k1 % FV];
 *  B. Y multiplied by w_m^(j2 k1) as step C reads it;
 *  C. the rows of Y (fixed k1, length n2) transformed into X[k1 + n1 k2].
 * Y is split (real parts, then imaginary parts). */
typedef struct FS(line1) {
    FT *re, *im;
    int64_t st;
} FS(line1);

ODN_CLONES static void FS(four_cols)(const FS(lplan) *P, FS(line1) x, FT *yre, FT *yim, int64_t c0,
                          int64_t c1, FT *a, FT *b) {
    const int64_t n1 = P->n1, n2 = P->n2;
    for (int64_t c = c0; c < c1; c++) {
        FS(lanes) L;
        int64_t j0 = c * FV;
        L.nl = (int)(n2 - j0 < FV ? n2 - j0 : FV);
        for (int v = 0; v < L.nl; v++) {
            L.re[v] = x.re + (j0 + v) * x.st;
            L.im[v] = x.im + (j0 + v) * x.st;
        }
        L.st = n2 * x.st;
        FS(lanes_load)(a, n1, &L);
        const FT *r = FS(lanes_fft)(&P->c, a, b);
        /* block (k1 / FV, j2): the FV x FV tile of k1 % FV by lane, transposed */
        const int64_t full = n1 / FV * FV;
        FS(vec) A[FV], B[FV];
        for (int64_t k0 = 0; k0 < full; k0 += FV) {
            for (int l = 0; l < FV; l++) {
                FVLD(A[l], FROW(r, k0 + l));
                FVLD(B[l], FROW(r, k0 + l) + FV);
            }
            FS(transpose)(A);
            FS(transpose)(B);
            for (int v = 0; v < L.nl; v++) {
                int64_t i = ((k0 / FV) * n2 + j0 + v) * FV;
                FVST(yre + i, A[v]);
                FVST(yim + i, B[v]);
            }
        }
        for (int v = 0; v < L.nl; v++) {
            int64_t j2 = j0 + v;
            for (int64_t k1 = full; k1 < n1; k1++) {
                int64_t i = ((k1 / FV) * n2 + j2) * FV + k1 % FV;
                yre[i] = FROW(r, k1)[v];
                yim[i] = FROW(r, k1)[FV + v];
            }
        }
    }
}

ODN_CLONES static void FS(four_rows)(const FS(lplan) *P, const FT *yre, const FT *yim,
                                     FS(line1) x, FT scale, int64_t b0, int64_t b1, FT *a,
                                     FT *b) {
    const int64_t n1 = P->n1, n2 = P->n2;
    for (int64_t blk = b0; blk < b1; blk++) {
        for (int64_t j2 = 0; j2 < n2; j2++) {
            int64_t i = (blk * n2 + j2) * FV;
            const FT *ur = yre + i, *ui = yim + i, *wr = P->tre + i, *wi = P->tim + i;
            FT *o = FROW(a, j2);
            FSIMD for (int v = 0; v < FV; v++) {
                o[v] = ur[v] * wr[v] - ui[v] * wi[v];
                o[FV + v] = ur[v] * wi[v] + ui[v] * wr[v];
            }
        }
        const FT *r = FS(lanes_fft)(&P->c2, a, b);
        FS(lanes) L;
        int64_t k0 = blk * FV;
        L.nl = (int)(n1 - k0 < FV ? n1 - k0 : FV);
        for (int v = 0; v < L.nl; v++) {
            L.re[v] = x.re + (k0 + v) * x.st;
            L.im[v] = x.im ? x.im + (k0 + v) * x.st : NULL;
        }
        L.st = n1 * x.st;
        FS(lanes_store)(r, n2, &L, scale);
    }
}

/* The next block of work [lo, hi) from a shared counter, a few items at a
 * time: on a busy machine a thread that starts late takes less, instead of
 * holding the others at the end. False when none is left. */
static bool FS(take)(int64_t *next, int64_t count, int k, int64_t *lo, int64_t *hi) {
    int64_t step = count / (4 * (int64_t)k);
    if (step < 1) step = 1;
    *lo = __atomic_fetch_add(next, step, __ATOMIC_RELAXED);
    if (*lo >= count) return false;
    *hi = *lo + step < count ? *lo + step : count;
    return true;
}

/* x -> out (complex lines of P->m), on nt threads; scratch: y (2 * nb * n2
 * * FV) and per thread two buffers of rows = max(n1, n2) rows. */
static void FS(four_line)(const FS(lplan) *P, FS(line1) x, FS(line1) out, FT scale, int nt,
                          FT *y, FT *scratch, int64_t rows) {
    const int64_t nb = (P->n1 + FV - 1) / FV, ncol = (P->n2 + FV - 1) / FV;
    FT *yre = y, *yim = y + nb * P->n2 * FV;
    int64_t next_col = 0, next_row = 0;
    ODN_PARALLEL(nt, t, k, {
        FT *a = scratch + (int64_t)t * 4 * FV * rows, *b = a + 2 * FV * rows;
        int64_t lo, hi;
        while (FS(take)(&next_col, ncol, k, &lo, &hi))
            FS(four_cols)(P, x, yre, yim, lo, hi, a, b);
        ODN_PRAGMA(omp barrier)
        while (FS(take)(&next_row, nb, k, &lo, &hi))
            FS(four_rows)(P, yre, yim, out, scale, lo, hi, a, b);
    });
}

/* ------------------------------------------------------------ the job */
/* Complex length at which (or above which) a line goes through four-step. */
#define FFT_FOUR_MIN ((int64_t)8192)
#define FFT_FOUR_FEW ((int64_t)1024) /* ... or this, when the batch fills few lanes */
#define FFT_LANE_MAX ((int64_t)1 << 16)

static int64_t FS(complex_len)(odn_fft_line line, int64_t n) {
    return line != ODN_FFT_LINE_C2C && n % 2 == 0 ? n / 2 : n;
}

static bool FS(use_four)(odn_fft_line line, int64_t n, int64_t lines) {
    int64_t m = FS(complex_len)(line, n);
    if ((line != ODN_FFT_LINE_C2C && n % 2) || !FS(smooth)(m)) return false;
    if (m < FFT_FOUR_FEW) return false;
    return m >= FFT_FOUR_MIN || lines < FV;
}

bool FS(odn_fft_takes)(odn_fft_line line, int64_t n) {
    if (n < 1) return false;
    int64_t m = FS(complex_len)(line, n);
    if (m <= FFT_LANE_MAX) return true; /* a prime factor above 13: Bluestein */
    if (!FS(smooth)(m)) return false;
    if (line != ODN_FFT_LINE_C2C && n % 2) return false;
    int64_t n1 = 1;
    for (int64_t d = 1; d * d <= m; d++)
        if (m % d == 0) n1 = d;
    return m / n1 <= FFT_LANE_MAX;
}

static gfp_status FS(oom)(const odn_fft_job *J) {
    return pk_fail(GFP_ERR_OUT_OF_MEMORY, "fft: no memory for the plan or scratch of a "
                   "transform of length %lld", (long long)J->n);
}

/* Every line through four-step, one after the other, each on all threads. */
static gfp_status FS(run_four)(const odn_fft_job *J, const FS(lplan) *P, int64_t lines,
                               odn_ctx *cx) {
    const int64_t m = P->m, n1 = P->n1, n2 = P->n2, nb = (n1 + FV - 1) / FV;
    const int64_t rows = n1 > n2 ? n1 : n2;
    bool real = J->line != ODN_FFT_LINE_C2C;
    int nt = odn_threads(m * 16);
    FT *y = odn_arena_alloc(cx, (size_t)(2 * nb * n2 * FV) * sizeof(FT));
    FT *scratch = odn_arena_alloc(cx, (size_t)nt * 4 * FV * (size_t)rows * sizeof(FT));
    /* real lines: the complex line of m values in between (split) */
    FT *z = real ? odn_arena_alloc(cx, (size_t)(2 * (m + 1)) * sizeof(FT)) : NULL;
    if (!y || !scratch || (real && !z)) return FS(oom)(J);
    FT *zre = z, *zim = z ? z + m + 1 : NULL;
    for (int64_t ln = 0; ln < lines; ln++) {
        int64_t so, dof;
        FS(line_offsets)(J, ln, &so, &dof);
        FT *sb = (FT *)J->src, *db = (FT *)J->dst;
        if (J->line == ODN_FFT_LINE_C2C) {
            FS(line1) x = {sb + 2 * so, sb + 2 * so + 1, 2 * J->src_stride};
            FS(line1) o = {db + 2 * dof, db + 2 * dof + 1, 2 * J->dst_stride};
            FS(four_line)(P, x, o, (FT)J->scale, nt, y, scratch, rows);
        } else if (J->line == ODN_FFT_LINE_R2C) {
            FS(line1) x = {sb + so, sb + so + J->src_stride, 2 * J->src_stride};
            FS(line1) o = {zre, zim, 1};
            FS(four_line)(P, x, o, 1, nt, y, scratch, rows);
            /* X[k] from Z[k] and Z[m-k], k <= m */
            FT *xr = db + 2 * dof, *xi = xr + 1;
            const int64_t ds = 2 * J->dst_stride;
            const FT *w = P->wr;
            const FT sc = (FT)J->scale;
            ODN_PARALLEL_FOR(nt, schedule(static), for (int64_t k = 0; k <= m; k++) {
                int64_t ka = k == m ? 0 : k, kb = k == 0 ? 0 : m - k;
                FT zr = zre[ka], zi = zim[ka], cr = zre[kb], ci = -zim[kb];
                FT er = (FT)0.5 * (zr + cr), ei = (FT)0.5 * (zi + ci);
                FT or_ = (FT)0.5 * (zi - ci), oi = (FT)-0.5 * (zr - cr);
                xr[k * ds] = (er + (or_ * w[2 * k] - oi * w[2 * k + 1])) * sc;
                xi[k * ds] = (ei + (or_ * w[2 * k + 1] + oi * w[2 * k])) * sc;
            });
        } else {
            const FT *xr = sb + 2 * so, *xi = xr + 1;
            const int64_t ss = 2 * J->src_stride;
            const FT *w = P->wr;
            ODN_PARALLEL_FOR(nt, schedule(static), for (int64_t k = 0; k < m; k++) {
                FT ar = xr[k * ss], ai = k == 0 ? 0 : xi[k * ss];
                FT cr = xr[(m - k) * ss], ci = k == 0 ? 0 : -xi[(m - k) * ss];
                FT er = ar + cr, ei = ai + ci, dr = ar - cr, di = ai - ci;
                FT or_ = dr * w[2 * k] - di * w[2 * k + 1], oi = dr * w[2 * k + 1] + di * w[2 * k];
                zre[k] = er - oi;
                zim[k] = ei + or_;
            });
            FS(line1) x = {zre, zim, 1};
            FS(line1) o = {db + dof, db + dof + J->dst_stride, 2 * J->dst_stride};
            FS(four_line)(P, x, o, (FT)J->scale, nt, y, scratch, rows);
        }
    }
    return GFP_OK;
}

gfp_status FS(odn_fft_run)(const odn_fft_job *J) {
    int64_t lines = 1;
    for (int i = 0; i < J->batch_rank; i++) lines *= J->batch_sizes[i];
    if (lines == 0) return GFP_OK;
    bool real = J->line != ODN_FFT_LINE_C2C && J->n % 2 == 0;
    bool four = FS(use_four)(J->line, J->n, lines);
    odn_fft_plan_key key = {(four ? FFT_PLAN_FOUR : FFT_PLAN_LINE) + (real ? 4 : 0),
                            FS(complex_len)(J->line, J->n), J->sign, FDT};
    bool owned = false;
    FS(lplan) *P = odn_fft_plan_get(&key, FS(lplan_build), &owned);
    if (!P) return FS(oom)(J);
    odn_ctx *cx = NULL;
    gfp_status st = odn_ctx_acquire(&cx);
    if (st == GFP_OK && four) {
        st = FS(run_four)(J, P, lines, cx);
    } else if (st == GFP_OK) {
        int64_t n = J->n, chunks = (lines + FV - 1) / FV, rows = n + 2;
        if (P->bm > rows) rows = P->bm;
        int64_t work = lines * n * 4;
        int nt = odn_threads(work);
        if (nt > chunks) nt = (int)chunks;
        FT *scratch = odn_arena_alloc(cx, (size_t)nt * 4 * FV * (size_t)rows * sizeof(FT));
        if (!scratch) {
            st = FS(oom)(J);
        } else {
            int64_t next = 0;
            ODN_PARALLEL(nt, t, k, {
                FT *a = scratch + (int64_t)t * 4 * FV * rows, *b = a + 2 * FV * rows;
                int64_t lo, hi;
                while (FS(take)(&next, chunks, k, &lo, &hi))
                    for (int64_t c = lo; c < hi; c++) {
                        int64_t b0 = c * FV;
                        int nl = (int)(lines - b0 < FV ? lines - b0 : FV);
                        FS(lines_chunk)(J, P, b0, nl, a, b);
                    }
            });
        }
    }
    if (owned) FS(lplan_free)(P);
    return st;
}

#undef FROW
#undef FSIMD
#undef FINLINE
#undef FFT_MAX_PASS
#undef FFT_FOUR_MIN
#undef FFT_FOUR_FEW
#undef FFT_LANE_MAX
