#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Writes tests/ops/fft_expected.h: what torch.fft computes for a set of
transforms, which tests/ops/test_fft.c compares graft against (no PyTorch at
test time).

Each case applies one torch.fft function with fixed arguments (n / s, dim /
dims, norm) to an input x of fixed values and records y and the gradient of
the loss L = sum(view_as_real(y) * w) (w fixed weights, y's real values in
row-major order, complex as (re, im) pairs) with respect to x
(torch.autograd.grad, PyTorch's conjugate Wirtinger convention). The cases
cover prime lengths (7, 13, 97: the reference's generic radix and Bluestein
paths), odd and even lengths, length 1, n padding and trimming, every norm,
several dims in any order, the onesided dim first, a transposed (strided)
input, batches, f32 and integer inputs. Also fftfreq, rfftfreq, fftshift
and ifftshift; and torch.stft / torch.istft with their gradients with
respect to the signal and the window.

Usage: python3 tools/expected/gen_fft.py > tests/ops/fft_expected.h
       python3 tools/expected/gen_fft.py stft > tests/ops/stft_expected.h
"""
import math
import sys

import torch

NORMS = {"backward": 0, "ortho": 1, "forward": 2}
FNS = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fftn", "ifftn", "rfftn", "irfftn",
       "fft2", "ifft2", "rfft2", "irfft2", "hfftn", "ihfftn", "hfft2", "ihfft2"]
ONE_D = {"fft", "ifft", "rfft", "irfft", "hfft", "ihfft"}

# (name, fn, x shape, x kind, kwargs, layout); kind: "r" f64, "c" c128,
# "r32" f32, "c64" c64, "i" i64. layout "t": x is the transpose of a
# contiguous tensor (a strided view).
CASES = [
    ("fft_real13", "fft", [13], "r", {}, ""),
    ("fft_c7_pad10_ortho", "fft", [7], "c", {"n": 10, "norm": "ortho"}, ""),
    ("fft_c97", "fft", [97], "c", {}, ""),
    ("fft_c3x12_dim0_trim2_fwd", "fft", [3, 12], "c", {"n": 2, "dim": 0, "norm": "forward"}, ""),
    ("fft_c1", "fft", [1], "c", {}, ""),
    ("fft_c42", "fft", [42], "c", {"norm": "ortho"}, ""),
    ("fft_transposed", "fft", [5, 6], "c", {"dim": 1}, "t"),
    ("fft_r32_16", "fft", [16], "r32", {}, ""),
    ("fft_i64_6", "fft", [6], "i", {}, ""),
    ("ifft_c2x13_pad16", "ifft", [2, 13], "c", {"n": 16}, ""),
    ("ifft_r1_ortho", "ifft", [1], "r", {"norm": "ortho"}, ""),
    ("ifft_r9_fwd", "ifft", [9], "r", {"norm": "forward"}, ""),
    ("rfft_2x97", "rfft", [2, 97], "r", {}, ""),
    ("rfft_10_trim7_ortho", "rfft", [10], "r", {"n": 7, "norm": "ortho"}, ""),
    ("rfft_6x5_dim0_pad9_fwd", "rfft", [6, 5], "r", {"n": 9, "dim": 0, "norm": "forward"}, ""),
    ("rfft_1", "rfft", [1], "r", {}, ""),
    ("rfft_transposed", "rfft", [4, 7], "r", {"dim": 0}, "t"),
    ("rfft_r32_5x13", "rfft", [5, 13], "r32", {}, ""),
    ("irfft_3x7", "irfft", [3, 7], "c", {}, ""),
    ("irfft_9_n17_ortho", "irfft", [9], "c", {"n": 17, "norm": "ortho"}, ""),
    ("irfft_5x4_dim0_n8_fwd", "irfft", [5, 4], "c", {"n": 8, "dim": 0, "norm": "forward"}, ""),
    ("irfft_4_n1", "irfft", [4], "c", {"n": 1}, ""),
    ("irfft_2x49_n97", "irfft", [2, 49], "c", {"n": 97}, ""),
    ("irfft_real_input", "irfft", [5], "r", {}, ""),
    ("hfft_6", "hfft", [6], "c", {}, ""),
    ("hfft_2x4_n7_ortho", "hfft", [2, 4], "c", {"n": 7, "norm": "ortho"}, ""),
    ("hfft_3_n13_fwd", "hfft", [3], "c", {"n": 13, "norm": "forward"}, ""),
    ("ihfft_11", "ihfft", [11], "r", {}, ""),
    ("ihfft_3x8_dim0_n5_fwd", "ihfft", [3, 8], "r", {"n": 5, "dim": 0, "norm": "forward"}, ""),
    ("ihfft_12_ortho", "ihfft", [12], "r", {"norm": "ortho"}, ""),
    ("fftn_c3x4x5", "fftn", [3, 4, 5], "c", {}, ""),
    ("fftn_r4x6_s5_m1_ortho", "fftn", [4, 6], "r", {"s": [5, -1], "norm": "ortho"}, ""),
    ("fftn_c2x3x4_s3_6_d2_0_fwd", "fftn", [2, 3, 4], "c",
     {"s": [3, 6], "dim": [2, 0], "norm": "forward"}, ""),
    ("fftn_c3x4_dims_empty", "fftn", [3, 4], "c", {"dim": []}, ""),
    ("fftn_c2x7_s13", "fftn", [2, 7], "c", {"s": [13]}, ""),
    ("ifftn_c3x5x4_d0_2", "ifftn", [3, 5, 4], "c", {"dim": [0, 2]}, ""),
    ("ifftn_r3x5_ortho", "ifftn", [3, 5], "r", {"norm": "ortho"}, ""),
    ("rfftn_4x6x7", "rfftn", [4, 6, 7], "r", {}, ""),
    ("rfftn_5x6_s4_9_d1_0_ortho", "rfftn", [5, 6], "r",
     {"s": [4, 9], "dim": [1, 0], "norm": "ortho"}, ""),
    ("rfftn_3x13_fwd", "rfftn", [3, 13], "r", {"dim": [-1], "norm": "forward"}, ""),
    ("irfftn_4x3x5", "irfftn", [4, 3, 5], "c", {}, ""),
    ("irfftn_6x4_s5_7_d1_0_fwd", "irfftn", [6, 4], "c",
     {"s": [5, 7], "dim": [1, 0], "norm": "forward"}, ""),
    ("irfftn_3x4_s_m1_m1_ortho", "irfftn", [3, 4], "c", {"s": [-1, -1], "norm": "ortho"}, ""),
    ("fft2_c2x5x6", "fft2", [2, 5, 6], "c", {}, ""),
    ("ifft2_r3x4x5_s4_4_ortho", "ifft2", [3, 4, 5], "r", {"s": [4, 4], "norm": "ortho"}, ""),
    ("rfft2_2x6x9_fwd", "rfft2", [2, 6, 9], "r", {"norm": "forward"}, ""),
    ("irfft2_3x5x4_s6_7", "irfft2", [3, 5, 4], "c", {"s": [6, 7]}, ""),
    ("fft2_c4x3x2_d0_2", "fft2", [4, 3, 2], "c", {"dim": [0, 2]}, ""),
    ("hfftn_c3x4x5", "hfftn", [3, 4, 5], "c", {}, ""),
    ("hfftn_c6x4_s5_7_d1_0_ortho", "hfftn", [6, 4], "c",
     {"s": [5, 7], "dim": [1, 0], "norm": "ortho"}, ""),
    ("hfftn_c3x4_fwd", "hfftn", [3, 4], "c", {"dim": [-1], "norm": "forward"}, ""),
    ("hfftn_r3x5", "hfftn", [3, 5], "r", {}, ""),
    ("ihfftn_4x6x7", "ihfftn", [4, 6, 7], "r", {}, ""),
    ("ihfftn_5x6_s4_9_d1_0_fwd", "ihfftn", [5, 6], "r",
     {"s": [4, 9], "dim": [1, 0], "norm": "forward"}, ""),
    ("ihfftn_r32_3x8_ortho", "ihfftn", [3, 8], "r32", {"norm": "ortho"}, ""),
    ("hfft2_c2x5x4_s6_7", "hfft2", [2, 5, 4], "c", {"s": [6, 7]}, ""),
    ("hfft2_c64_3x4", "hfft2", [3, 4], "c64", {"norm": "forward"}, ""),
    ("ihfft2_2x6x9", "ihfft2", [2, 6, 9], "r", {}, ""),
    ("ihfft2_4x3x2_d0_2_ortho", "ihfft2", [4, 3, 2], "r", {"dim": [0, 2], "norm": "ortho"}, ""),
    ("ihfft2_transposed", "ihfft2", [5, 6], "r", {}, "t"),
]

DTYPES = {"r": torch.float64, "c": torch.complex128, "r32": torch.float32,
          "c64": torch.complex64, "i": torch.int64}
DT_CODE = {"r": 0, "c": 1, "r32": 2, "c64": 3, "i": 4}


def make_input(shape, kind, seed):
    numel = math.prod(shape)
    parts = 2 if kind in ("c", "c64") else 1
    vals = [math.sin(0.7 * j + 0.3 * seed + 0.1) + 0.5 * math.cos(1.9 * j + seed)
            for j in range(numel * parts)]
    if kind == "i":
        return torch.tensor([int(round(3 * v)) for v in vals], dtype=torch.int64).reshape(shape)
    t = torch.tensor(vals, dtype=torch.float64)
    if parts == 2:
        t = torch.view_as_complex(t.reshape(numel, 2))
    return t.reshape(shape).to(DTYPES[kind])


def flat(t):
    t = t.detach()
    if t.is_complex():
        return torch.view_as_real(t.resolve_conj().contiguous()).reshape(-1).tolist()
    return t.reshape(-1).tolist()


def weights(count):
    return [math.cos(0.45 * j + 0.2) for j in range(count)]


def c_list(vals):
    return ", ".join(repr(float(v)) for v in vals)


def call(fn, x, kw):
    f = getattr(torch.fft, fn)
    if fn in ONE_D:
        return f(x, n=kw.get("n"), dim=kw.get("dim", -1), norm=kw.get("norm"))
    args = {"norm": kw.get("norm")}
    if "s" in kw:
        args["s"] = kw["s"]
    if "dim" in kw:
        args["dim"] = kw["dim"]
    return f(x, **args)


def main():
    out = sys.stdout
    data = []
    rows = []
    for seed, (name, fn, shape, kind, kw, layout) in enumerate(CASES):
        x = make_input(shape, kind, seed)
        xin = x.clone()
        if layout == "t":  # the same values, through a transposed view
            xin = x.t().contiguous().t()
        differentiable = kind != "i"
        if differentiable:
            xin.requires_grad_(True)
        y = call(fn, xin, kw)
        yv = flat(y)
        w = weights(len(yv))
        grad = []
        if differentiable:
            yr = torch.view_as_real(y.resolve_conj()) if y.is_complex() else y
            loss = (yr.reshape(-1) * torch.tensor(w, dtype=yr.dtype)).sum()
            (g,) = torch.autograd.grad(loss, xin)
            grad = flat(g)
        xo = len(data)
        data += flat(x)
        yo = len(data)
        data += yv
        go = len(data)
        data += grad
        s = kw.get("s")
        dims = kw.get("dim")
        dim1 = kw.get("dim", -1) if fn in ONE_D else 0
        dims_list = dims if (dims is not None and fn not in ONE_D) else []
        rows.append(
            "    {\"%s\", FFT_FN_%s, %d, %s, %d, {%s}, %d, %d, %s, %d, {%s}, %s, %d, {%s}, %d, "
            "%s, %d, {%s}, %d, %d, %d, %d}," % (
                name, fn.upper(), DT_CODE[kind], "true" if layout == "t" else "false",
                len(shape), ", ".join(str(v) for v in shape),
                kw.get("n", -1) if fn in ONE_D else -1, dim1,
                "true" if s is not None else "false", len(s) if s else 0,
                ", ".join(str(v) for v in (s or [0])),
                "true" if dims is not None and fn not in ONE_D else "false", len(dims_list),
                ", ".join(str(v) for v in (dims_list or [0])),
                NORMS[kw.get("norm") or "backward"],
                "true" if y.is_complex() else "false", y.dim(),
                ", ".join(str(v) for v in y.shape) or "0",
                xo, yo, go, 1 if differentiable else 0))

    out.write("/* SPDX-License-Identifier: BSD-3-Clause */\n")
    out.write("/* fft_expected.h — generated by tools/expected/gen_fft.py with PyTorch %s;\n"
              " * do not edit. What torch.fft computes for the cases of that script\n"
              " * (tests/ops/test_fft.c runs the same cases with graft). */\n" % torch.__version__)
    out.write("#ifndef GRAFT_TESTS_FFT_EXPECTED_H\n#define GRAFT_TESTS_FFT_EXPECTED_H\n\n")
    out.write("#include <stdbool.h>\n#include <stdint.h>\n\n")
    out.write("enum {\n%s\n};\n\n" % "\n".join("    FFT_FN_%s," % f.upper() for f in FNS))
    out.write("/* x's dtype: 0 f64, 1 c128, 2 f32, 3 c64, 4 i64. Offsets index fft_data:\n"
              " * x's values, y's, and the gradient of L = sum(view_as_real(y) * w) with\n"
              " * w[j] = cos(0.45 j + 0.2); complex values as (re, im) pairs. */\n")
    out.write("typedef struct fft_case {\n"
              "    const char *name;\n"
              "    int fn;\n"
              "    int x_dtype;\n"
              "    bool transposed; /* x is passed as a transposed (strided) view */\n"
              "    int x_rank;\n"
              "    int64_t x_sizes[4];\n"
              "    int64_t n; /* the 1-D forms; -1: default */\n"
              "    int dim;   /* the 1-D forms */\n"
              "    bool has_s;\n"
              "    int n_s;\n"
              "    int64_t s[4];\n"
              "    bool has_dims;\n"
              "    int n_dims;\n"
              "    int dims[4];\n"
              "    int norm; /* gf_fft_norm */\n"
              "    bool y_complex;\n"
              "    int y_rank;\n"
              "    int64_t y_sizes[4];\n"
              "    int x_off, y_off, g_off;\n"
              "    int has_grad;\n"
              "} fft_case;\n\n")
    out.write("static const double fft_data[%d] = {\n" % len(data))
    for i in range(0, len(data), 6):
        out.write("    %s,\n" % c_list(data[i:i + 6]))
    out.write("};\n\n")
    out.write("static const fft_case fft_cases[] = {\n%s\n};\n\n" % "\n".join(rows))

    # helpers: fftfreq, rfftfreq, fftshift, ifftshift
    freqs = [("fftfreq", 7, 0.5), ("fftfreq", 8, 1.0), ("fftfreq", 1, 2.0),
             ("rfftfreq", 9, 0.1), ("rfftfreq", 8, 1.0)]
    out.write("/* fftfreq / rfftfreq (f64): is_rfft, n, d, count, values. */\n")
    out.write("typedef struct fft_freq_case {\n    int is_rfft;\n    int64_t n;\n    double d;\n"
              "    int count;\n    double v[9];\n} fft_freq_case;\n")
    out.write("static const fft_freq_case fft_freq_cases[] = {\n")
    for fn, n, d in freqs:
        v = getattr(torch.fft, fn)(n, d, dtype=torch.float64).tolist()
        out.write("    {%d, %d, %r, %d, {%s}},\n" % (fn == "rfftfreq", n, d, len(v),
                                                 c_list(v + [0.0] * (9 - len(v)))))
    out.write("};\n\n")
    out.write("/* f32 fftfreq(7, 0.3) (torch rounds k and 1/(n d) to f32 first). */\n")
    out.write("static const float fft_freq_f32[7] = {%s};\n\n" % ", ".join(
        "%sf" % repr(v) for v in torch.fft.fftfreq(7, 0.3, dtype=torch.float32).tolist()))
    base = torch.arange(2 * 5 * 3, dtype=torch.float64).reshape(2, 5, 3)
    out.write("/* fftshift / ifftshift of arange(30) as [2, 5, 3]: every dim, dims {1},\n"
              " * dims {-1, 0}. */\n")
    for fn in ("fftshift", "ifftshift"):
        for tag, dims in (("all", None), ("d1", [1]), ("dm1_0", [-1, 0])):
            v = getattr(torch.fft, fn)(base, dim=dims).reshape(-1).tolist()
            out.write("static const double fft_%s_%s[30] = {%s};\n" % (fn, tag, c_list(v)))
    out.write("\n#endif\n")


# (name, inverse, x shape, x complex, n_fft, hop, win_length, window, center,
#  pad_mode, normalized, onesided, return_complex, length); -1: default;
# window: None, "hann" (periodic, of win_length) or "hann+0.2".
STFT_CASES = [
    ("stft_hann_center", 0, [40], False, 16, 4, -1, "hann", True, "reflect", False, -1, True, -1),
    ("stft_batch_win6_nocenter_norm", 0, [2, 30], False, 8, -1, 6, None, False, "reflect", True,
     -1, True, -1),
    ("stft_complex_constant_pad", 0, [24], True, 8, 3, -1, "hann", True, "constant", False, -1,
     True, -1),
    ("stft_twosided_replicate_parts", 0, [20], False, 6, 2, 5, "hann", True, "replicate", False,
     0, False, -1),
    ("istft_hann", 1, [9, 11], True, 16, 4, -1, "hann", True, "", False, -1, False, -1),
    ("istft_batch_norm_length", 1, [2, 5, 14], True, 8, 2, -1, "hann", True, "", True, -1, False,
     25),
    ("istft_complex_out", 1, [8, 9], True, 8, 2, -1, "hann+0.2", False, "", False, -1, True, -1),
    ("istft_twosided_long", 1, [6, 7], True, 6, 2, -1, "hann+0.2", True, "", False, -1,
     False, 20),
]
PAD_MODES = {"": 0, "constant": 0, "reflect": 1, "replicate": 2, "circular": 3}


def write_stft(out):
    data = []
    rows = []
    for seed, (name, inverse, shape, cx, n_fft, hop, win, window, center, pad_mode, normalized,
               onesided, return_complex, length) in enumerate(STFT_CASES):
        x = make_input(shape, "c" if cx else "r", seed + 100).requires_grad_(True)
        wl = n_fft if win == -1 else win
        w = None
        if window:
            w = torch.hann_window(wl, dtype=torch.float64)
            if window == "hann+0.2":
                w = w + 0.2
            w = w.detach().requires_grad_(True)
        kw = dict(n_fft=n_fft, hop_length=None if hop == -1 else hop,
                  win_length=None if win == -1 else win, window=w, center=center,
                  normalized=normalized, onesided=None if onesided == -1 else bool(onesided),
                  return_complex=return_complex)
        if inverse:
            y = torch.istft(x, length=None if length == -1 else length, **kw)
        else:
            y = torch.stft(x, pad_mode=pad_mode, **kw)
        yv = flat(y)
        weights_ = torch.tensor(weights(len(yv)), dtype=torch.float64)
        yr = torch.view_as_real(y) if y.is_complex() else y
        loss = (yr.reshape(-1) * weights_).sum()
        wrt = [x] + ([w] if w is not None else [])
        grads = torch.autograd.grad(loss, wrt)
        xo = len(data)
        data += flat(x)
        wo = len(data)
        data += flat(w) if w is not None else []
        yo = len(data)
        data += yv
        gxo = len(data)
        data += flat(grads[0])
        gwo = len(data)
        data += flat(grads[1]) if w is not None else []
        rows.append("    {\"%s\", %d, %d, %d, {%s}, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, %d, "
                    "{%s}, %d, %d, %d, %d, %d}," % (
                        name, inverse, int(cx), len(shape), ", ".join(str(v) for v in shape),
                        n_fft, hop, win, int(w is not None), int(center), PAD_MODES[pad_mode],
                        int(normalized), onesided, int(return_complex), length,
                        int(y.is_complex()), y.dim(), ", ".join(str(v) for v in y.shape), xo, wo,
                        yo, gxo, gwo))
    out.write("/* SPDX-License-Identifier: BSD-3-Clause */\n")
    out.write("/* stft_expected.h — generated by tools/expected/gen_fft.py stft with PyTorch\n"
              " * %s; do not edit. What torch.stft and torch.istft compute for the cases of\n"
              " * that script (tests/ops/test_stft.c runs them with graft). */\n" % torch.__version__)
    out.write("#ifndef GRAFT_TESTS_STFT_EXPECTED_H\n#define GRAFT_TESTS_STFT_EXPECTED_H\n\n")
    out.write("#include <stdint.h>\n")
    out.write("\n/* torch.stft / torch.istft: x (the signal, or the spectrogram for istft),\n"
              " * the window (when has_window), y, and the gradients of L = sum(view_as_real(y)\n"
              " * * w) with respect to x and the window; -1: the default. */\n")
    out.write("typedef struct stft_case {\n"
              "    const char *name;\n"
              "    int inverse, x_complex, x_rank;\n"
              "    int64_t x_sizes[3];\n"
              "    int64_t n_fft, hop, win;\n"
              "    int has_window, center, pad_mode, normalized, onesided, return_complex;\n"
              "    int64_t length;\n"
              "    int y_complex, y_rank;\n"
              "    int64_t y_sizes[4];\n"
              "    int x_off, w_off, y_off, gx_off, gw_off;\n"
              "} stft_case;\n\n")
    out.write("static const double stft_data[%d] = {\n" % len(data))
    for i in range(0, len(data), 6):
        out.write("    %s,\n" % c_list(data[i:i + 6]))
    out.write("};\n\n")
    out.write("static const stft_case stft_cases[] = {\n%s\n};\n" % "\n".join(rows))
    out.write("\n#endif\n")


if __name__ == "__main__":
    if sys.argv[1:] == ["stft"]:
        write_stft(sys.stdout)
    else:
        main()
