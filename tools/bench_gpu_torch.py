#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""graft-bench on a GPU against PyTorch on the same GPU, in one run.

    bench_gpu_torch.py GRAFT_BENCH [--device cuda:0] [--other vulkan] [--other opencl]
                       [--matmul-sizes 1024,4096] [--quick] [--json FILE]

Runs graft-bench --json on --device (matmul f32 at --matmul-sizes, add,
dispatch, conv2d forward and backward, the MLP and CNN training steps, and
the complex rows: cmatmul c64 1024, cmul c64 16M, fft c64 1M and 128 lines
of 1000 and 1031 points, rfft of 1024 lines, stft of 10 s at 16 kHz), then
the same work in PyTorch on its CUDA device (cuda:0), and prints one table:
graft's and torch's median time, the rate of each and the ratio torch / graft
(above 1: graft is faster), with the target the row has, if any:

    matmul (cuBLAS through graft)  >= 0.95 x torch
    cmatmul (cuBLAS cgemm)         >= 0.95 x torch
    fft c64 (cuFFT through graft)  >= 0.9 x torch
    MLP and CNN training steps     >= 1.0 x torch (eager)
    dispatch of a small op         <= 5 us per op

TF32 is off on both sides: graft's cuBLAS matmul computes in plain f32
(CUBLAS_COMPUTE_32F), and torch runs with allow_tf32 False for matmul and
cuDNN and float32 matmul precision "highest". Torch's shapes are read from the
detail of each graft-bench row, so --quick (graft-bench's small shapes)
compares like with like. Torch's GPU times come from CUDA events around the
op (median of repeats after warm-up); the dispatch chain and the training
steps are wall time ended by a synchronize, as graft-bench measures them.

Each --other device (a Vulkan or OpenCL device on the same GPU) runs matmul
at the largest --matmul-sizes and add 16M only, reported as a fraction of
cuBLAS (graft's cuda row, else torch's) and of the device-to-device copy
bandwidth (torch's x.copy_(y), bytes read plus written): the targets are
matmul >= 1/4 of cuBLAS; add has none (an add moves 3 arrays, a copy 2, so
1.0 means the add streams as fast as a copy).

Without torch, or without a CUDA device for it, the torch columns say why
and the graft figures are still printed. Exit status: 0 when graft-bench ran
(missed targets are reported, not failures), 1 when it failed.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

TARGETS = {  # workload prefix: (kind, bound)
    "matmul": ("ratio>=", 0.95),
    "cmatmul": ("ratio>=", 0.95),
    "fft ": ("ratio>=", 0.9),
    "mlp train step": ("ratio>=", 1.0),
    "cnn train step": ("ratio>=", 1.0),
    "dispatch add": ("graft<=", 5e-6),
}


def run_bench(bench, device, args, quick):
    cmd = [bench, "--device", device, "--baseline", device, "--no-progress", "--json"] + args
    if quick:
        cmd.append("--quick")
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    sys.stderr.write(p.stderr)
    if p.returncode not in (0, 1) or not p.stdout.strip():
        raise RuntimeError("%s exited with %d" % (" ".join(cmd), p.returncode))
    doc = json.loads(p.stdout)
    print("graft-bench %s: %.1f s (exit %d)" % (" ".join(cmd[1:]), time.time() - t0,
                                                p.returncode), file=sys.stderr)
    return doc


def graft_rows(bench, device, matmul_sizes, quick, only_matmul_add=False):
    """{(workload, variant): row} of graft-bench's results on device."""
    runs = [["--only", "matmul", "--sizes", ",".join(str(s) for s in matmul_sizes)]]
    if only_matmul_add:
        runs.append(["--only", "add", "--sizes", "262144" if quick else "16777216"])
    else:
        runs.append(["--only", "add,dispatch,conv2d,conv2d_bwd,mlp,cnn"])
        runs.append(["--only", "cmatmul,cmul,fft,rfft,stft"])
    rows, devices = {}, []
    for a in runs:
        doc = run_bench(bench, device, a, quick)
        devices += doc.get("devices", [])
        for r in doc["results"]:  # one device (and the same as baseline): all its rows
            rows[(r["workload"], r.get("variant", ""))] = r
    return rows, devices


# ------------------------------------------------------------------ torch side
def ints(s):
    return [int(v) for v in re.findall(r"\d+", s)]


class Torch:
    def __init__(self):
        import torch
        self.torch = torch
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")
        self.dev = torch.device("cuda:0")
        self.name = "torch %s, %s" % (torch.__version__, torch.cuda.get_device_name(0))

    def events(self, fn, min_reps=5, max_reps=50, min_time=0.3):
        """Median and min seconds of fn() by CUDA events, after 2 warm-ups."""
        torch = self.torch
        for _ in range(2):
            fn()
        torch.cuda.synchronize()
        times, spent = [], 0.0
        while len(times) < min_reps or (spent < min_time and len(times) < max_reps):
            a = torch.cuda.Event(enable_timing=True)
            b = torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            t = a.elapsed_time(b) / 1e3
            times.append(t)
            spent += t
        return statistics.median(times), min(times)

    def wall(self, fn, min_reps=5, max_reps=50, min_time=0.3):
        """Median and min wall seconds of fn() ended by a synchronize."""
        torch = self.torch
        for _ in range(2):
            fn()
        torch.cuda.synchronize()
        times, spent = [], 0.0
        while len(times) < min_reps or (spent < min_time and len(times) < max_reps):
            t0 = time.perf_counter()
            fn()
            torch.cuda.synchronize()
            t = time.perf_counter() - t0
            times.append(t)
            spent += t
        return statistics.median(times), min(times)

    def rand(self, *shape):
        return self.torch.rand(*shape, device=self.dev) * 2 - 1

    # Each returns (median s, min s, work per run or None, per) for a graft row.
    def matmul(self, row):
        m, k, _, n = ints(row["detail"])[:4]
        a, b = self.rand(m, k), self.rand(k, n)
        c = self.torch.empty(m, n, device=self.dev)
        med, mn = self.events(lambda: self.torch.mm(a, b, out=c))
        return med, mn, 2.0 * m * n * k

    def add(self, row):
        n = ints(row["detail"])[0]
        x, y = self.rand(n), self.rand(n)
        z = self.torch.empty(n, device=self.dev)
        med, mn = self.events(lambda: self.torch.add(x, y, out=z))
        return med, mn, 3.0 * n * 4

    def copy(self, n):
        x = self.rand(n)
        z = self.torch.empty(n, device=self.dev)
        med, mn = self.events(lambda: z.copy_(x))
        return med, mn, 2.0 * n * 4

    def dispatch(self, row):
        ops = ints(row["detail"])[0]
        one = self.torch.ones(1, device=self.dev)

        def chain():
            with self.torch.no_grad():
                y = self.torch.zeros(1, device=self.dev)
                for _ in range(ops):
                    y = y + one
        med, mn = self.wall(chain)
        return med / ops, mn / ops, None

    def conv_shapes(self, row):
        d = row["detail"]
        x = ints(re.search(r"x \[([\d,]+)\]", d).group(1))
        w = ints(re.search(r"w \[([\d,]+)\]", d).group(1))
        return x, w

    def conv2d(self, row):
        F = self.torch.nn.functional
        xs, ws = self.conv_shapes(row)
        x, w, b = self.rand(*xs), self.rand(*ws), self.rand(ws[0])
        med, mn = self.events(lambda: F.conv2d(x, w, b, padding=1))
        return med, mn, 2.0 * xs[0] * ws[0] * xs[2] * xs[3] * ws[1] * ws[2] * ws[3]

    def conv2d_bwd(self, row):
        xs, ws = self.conv_shapes(row)
        x, w = self.rand(*xs), self.rand(*ws)
        gy = self.rand(xs[0], ws[0], xs[2], xs[3])
        aten = self.torch.ops.aten
        mask = [True, False, False] if "input" in row["workload"] else [False, True, False]

        def bwd():
            return aten.convolution_backward(gy, x, w, [ws[0]], [1, 1], [1, 1], [1, 1],
                                             False, [0, 0], 1, mask)
        med, mn = self.events(bwd)
        return med, mn, 2.0 * xs[0] * ws[0] * xs[2] * xs[3] * ws[1] * ws[2] * ws[3]

    def train(self, row):
        torch, nn = self.torch, self.torch.nn
        d = row["detail"]
        batch = int(re.search(r"batch (\d+)", d).group(1))
        torch.manual_seed(1234)
        if row["workload"].startswith("cnn"):
            model = nn.Sequential(
                nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                nn.Flatten(), nn.Linear(1568, 10))
            x = torch.rand(batch, 1, 28, 28, device=self.dev)
        else:
            sizes = ints(re.match(r"([\d-]+)", d).group(1))
            layers = []
            for i in range(len(sizes) - 1):
                layers.append(nn.Linear(sizes[i], sizes[i + 1]))
                if i < len(sizes) - 2:
                    layers.append(nn.ReLU())
            model = nn.Sequential(*layers)
            x = torch.rand(batch, sizes[0], device=self.dev)
        model = model.to(self.dev)
        target = torch.tensor([(i * 7) % 10 for i in range(batch)], device=self.dev)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        loss_fn = nn.CrossEntropyLoss()

        def step():
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(x), target)
            loss.backward()
            opt.step()
        med, mn = self.wall(step, min_reps=10)
        return med, mn, float(batch)

    def complex_op(self, row):
        """The complex rows: the same op on torch's complex64 (cuBLAS cgemm,
        cuFFT); the work is graft's row's (its rate times its time)."""
        torch, w, d = self.torch, row["workload"], row["detail"]
        shape = ints(re.search(r"\[([\d,]+)\]", d).group(1))

        def crand(*sh):
            return torch.complex(self.rand(*sh), self.rand(*sh))
        if w.startswith("cmatmul"):
            a, b = crand(*shape), crand(*shape)
            c = torch.empty(*shape, dtype=torch.complex64, device=self.dev)
            fn = lambda: torch.mm(a, b, out=c)
        elif w.startswith("cmul"):
            a, b = crand(*shape), crand(*shape)
            c = torch.empty_like(a)
            fn = lambda: torch.mul(a, b, out=c)
        elif w.startswith("rfft"):
            x = self.rand(*shape)
            fn = lambda: torch.fft.rfft(x)
        elif w.startswith("stft"):
            nfft = int(re.search(r"n_fft (\d+)", d).group(1))
            hop = int(re.search(r"hop (\d+)", d).group(1))
            x, win = self.rand(*shape), torch.hann_window(nfft, device=self.dev)
            fn = lambda: torch.stft(x, nfft, hop_length=hop, window=win, return_complex=True)
        else:
            x = crand(*shape)
            fn = lambda: torch.fft.fft(x)
        med, mn = self.events(fn)
        work = None
        if row.get("rate") and row.get("time_s"):
            work = row["rate"] * row["time_s"]["median"] * 1e9
        return med, mn, work

    def measure(self, row):
        w = row["workload"]
        if w.split(" ")[0] in ("cmatmul", "cmul", "fft", "rfft", "stft"):
            return self.complex_op(row)
        if w.startswith("matmul"):
            return self.matmul(row)
        if w.startswith("add"):
            return self.add(row)
        if w.startswith("dispatch"):
            return self.dispatch(row)
        if w.startswith("conv2d backward"):
            return self.conv2d_bwd(row)
        if w.startswith("conv2d"):
            return self.conv2d(row)
        if "train step" in w:
            return self.train(row)
        return None


def load_torch():
    try:
        import torch
    except ImportError:
        return None, "torch is not installed for %s" % sys.executable
    if not torch.cuda.is_available():
        return None, "torch %s sees no CUDA device" % torch.__version__
    return Torch(), ""


# ------------------------------------------------------------------ the table
def fmt_time(s):
    if s is None:
        return "-"
    if s < 1e-3:
        return "%.2f us" % (s * 1e6)
    return "%.3f ms" % (s * 1e3)


def fmt_rate(rate, unit):
    return "-" if rate is None else "%.1f %s" % (rate, unit)


def verdict(workload, ratio, graft_s):
    for prefix, (kind, bound) in TARGETS.items():
        if workload.startswith(prefix):
            if kind == "ratio>=":
                if ratio is None:
                    return ">= %.2f: n/a" % bound
                return ">= %.2f: %s" % (bound, "met" if ratio >= bound else "MISSED")
            if graft_s is None:
                return "<= %.0f us: n/a" % (bound * 1e6)
            return "<= %.0f us: %s" % (bound * 1e6, "met" if graft_s <= bound else "MISSED")
    return ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("bench", help="path of graft-bench")
    ap.add_argument("--device", default="cuda:0",
                    help="graft's CUDA device (default cuda:0; empty: only the --other devices)")
    ap.add_argument("--other", action="append", default=[],
                    help="another graft device on the same GPU (vulkan, opencl); repeatable")
    ap.add_argument("--matmul-sizes", default=None,
                    help="matmul sizes (default 1024,4096; --quick 64,128)")
    ap.add_argument("--quick", action="store_true", help="graft-bench's small shapes")
    ap.add_argument("--no-torch", action="store_true", help="graft's figures alone")
    ap.add_argument("--json", help="also write the rows as JSON here")
    ap.add_argument("--reference-json", help="an earlier run's --json: its cuBLAS matmul and "
                    "copy figures for the --other devices (else they are measured in torch)")
    a = ap.parse_args()
    sizes = [int(s) for s in (a.matmul_sizes or ("64,128" if a.quick else "1024,4096")).split(",")]

    rows_out, failed = [], False
    tch, why = (None, "--no-torch") if a.no_torch else load_torch()
    print("graft %s on %s; %s" % (a.bench, a.device or ", ".join(a.other),
                                  tch.name if tch else "torch: " + why))

    graft, devices = {}, []
    if a.device:
        try:
            graft, devices = graft_rows(a.bench, a.device, sizes, a.quick)
        except (RuntimeError, OSError, ValueError) as e:
            print("graft-bench failed on %s: %s" % (a.device, e))
            failed = True
    seen = set()
    for d in devices:
        if d.get("spec") in seen:
            continue
        seen.add(d.get("spec"))
        print("  device %s: %s (plugin %s%s)" % (d.get("spec"), d.get("name"), d.get("plugin"),
                                                 ", " + d["driver"] if d.get("driver") else ""))

    hdr = "%-28s %-12s %12s %12s %16s %16s %8s  %s" % (
        "workload", "variant", "graft", "torch", "graft rate", "torch rate", "t/g", "target")
    if a.device:
        print(hdr)
        print("-" * len(hdr))
    for (w, variant), r in graft.items():
        g_s = r["time_s"]["median"] if r.get("status") == "ok" else None
        t_s = t_rate = None
        note = "" if r.get("status") == "ok" else "graft: %s %s" % (r.get("status"), r.get("note", ""))
        if tch and not variant:
            try:
                m = tch.measure(r)
            except Exception as e:  # a torch failure must not lose graft's figures
                m, note = None, (note + " torch: %s" % e).strip()
            if m:
                t_s, _, work = m
                if work and r.get("rate_unit"):
                    scale = 1e9
                    t_rate = work / t_s / scale
        ratio = t_s / g_s if (t_s and g_s) else None
        target = verdict(w, ratio, g_s) if not variant else ""
        print("%-28s %-12s %12s %12s %16s %16s %8s  %s%s" % (
            w, variant or "-", fmt_time(g_s), fmt_time(t_s),
            fmt_rate(r.get("rate") if g_s else None, r.get("rate_unit", "")),
            fmt_rate(t_rate, r.get("rate_unit", "")),
            "%.2f" % ratio if ratio else "-", target, ("  " + note) if note else ""))
        rows_out.append({"device": a.device, "workload": w, "variant": variant, "graft_s": g_s,
                         "torch_s": t_s, "graft_rate": r.get("rate"), "torch_rate": t_rate,
                         "rate_unit": r.get("rate_unit"), "torch_over_graft": ratio,
                         "target": target, "note": note})

    # The device-to-device copy bandwidth, what add is compared with.
    copy_n = 262144 if a.quick else 16 << 20
    copy_rate = None
    if tch and graft:
        try:
            med, _, work = tch.copy(copy_n)
            copy_rate = work / med / 1e9
            print("%-28s %-12s %12s %12s %16s %16s" % (
                "copy %s d2d (torch)" % ("256K" if a.quick else "16M"), "-", "-", fmt_time(med),
                "-", fmt_rate(copy_rate, "GB/s")))
            rows_out.append({"device": "torch", "workload": "copy d2d", "n": copy_n,
                             "torch_s": med, "torch_rate": copy_rate, "rate_unit": "GB/s"})
        except Exception as e:
            print("torch copy failed: %s" % e)

    # The other devices of the same GPU: fractions of cuBLAS and of a copy.
    if a.other:
        big = max(sizes)
        cublas = graft.get(("matmul %d" % big, ""))
        cublas_rate = cublas.get("rate") if cublas and cublas.get("status") == "ok" else None
        cublas_src = "graft cuda (cuBLAS)"
        copy_src = "torch copy_"
        if a.reference_json and os.path.exists(a.reference_json):
            with open(a.reference_json) as f:
                for r in json.load(f).get("rows", []):
                    if (cublas_rate is None and r.get("workload") == "matmul %d" % big
                            and not r.get("variant") and r.get("graft_rate")):
                        cublas_rate = r["graft_rate"]
                        cublas_src = "graft %s%s, from %s" % (
                            r.get("device"), " (cuBLAS)" if str(r.get("device")).startswith("cuda")
                            else "", os.path.basename(a.reference_json))
                    if copy_rate is None and r.get("workload") == "copy d2d" and r.get("n") == copy_n:
                        copy_rate = r.get("torch_rate")
        if tch and (cublas_rate is None or copy_rate is None):
            try:
                if cublas_rate is None:
                    med, _, work = tch.matmul({"detail": "f32 [%d,%d] @ [%d,%d]" % (big, big, big, big)})
                    cublas_rate, cublas_src = work / med / 1e9, "torch (cuBLAS)"
                if copy_rate is None:
                    med, _, work = tch.copy(copy_n)
                    copy_rate = work / med / 1e9
            except Exception as e:
                print("torch reference figures failed: %s" % e)
        print()
        print("other devices: matmul %d against %s (%s GFLOP/s), add against %s (%s GB/s)" % (
            big, cublas_src, "%.0f" % cublas_rate if cublas_rate else "n/a", copy_src,
            "%.0f" % copy_rate if copy_rate else "n/a"))
        hdr2 = "%-10s %-16s %-18s %16s %10s  %s" % ("device", "workload", "variant", "rate",
                                                   "fraction", "target")
        print(hdr2)
        print("-" * len(hdr2))
        for dev in a.other:
            try:
                orows, _ = graft_rows(a.bench, dev, [big], a.quick, only_matmul_add=True)
            except (RuntimeError, OSError, ValueError) as e:
                print("%-10s graft-bench failed: %s" % (dev, e))
                failed = True
                continue
            for (w, variant), r in orows.items():
                ok = r.get("status") == "ok"
                rate = r.get("rate") if ok else None
                ref = cublas_rate if w.startswith("matmul") else copy_rate
                frac = rate / ref if (rate and ref) else None
                target = ""
                if w.startswith("matmul") and not variant:
                    target = ">= 0.25: " + ("n/a" if frac is None else "met" if frac >= 0.25 else "MISSED")
                print("%-10s %-16s %-18s %16s %10s  %s%s" % (
                    dev, w, variant or "-", fmt_rate(rate, r.get("rate_unit", "")),
                    "%.3f" % frac if frac else "-", target,
                    "" if ok else "  graft: %s %s" % (r.get("status"), r.get("note", ""))))
                rows_out.append({"device": dev, "workload": w, "variant": variant,
                                 "graft_s": r["time_s"]["median"] if ok else None,
                                 "graft_rate": rate, "rate_unit": r.get("rate_unit"),
                                 "fraction": frac, "target": target})

    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": a.device, "torch": tch.name if tch else why, "rows": rows_out},
                      f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
