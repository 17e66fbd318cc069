#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""graft-bench's fft, rfft and stft rows: graft vs torch.fft on the CPU.

    bench_fft_torch.py GRAFT_BENCH [--threads 1,2] [--reps 15] [--device cpu]

Runs `graft-bench --only fft,rfft,stft --device D --threads N --json` for each
thread count, then the same transforms in PyTorch on the CPU with
torch.set_num_threads(n), in this one run, and prints the medians with the
ratio torch / graft (above 1: graft is faster). The workloads are those of
tools/bench/workloads_fft.c:

  fft:  torch.fft.fft of a complex64 vector of 2^20 points;
  fft1000, fft1031: torch.fft.fft of complex64 [128, n] along the last dim
        (n = 2^3 5^3, mixed radix; n = 1031, a prime);
  rfft: torch.fft.rfft of float32 [1024, 1024] along the last dim;
  stft: torch.stft of 160000 float32 samples (10 s at 16 kHz), n_fft=512,
        hop_length=128, window=torch.hann_window(512), return_complex=True
        (centred, reflect padding: the defaults).

Each figure is the median (and the fastest) of --reps runs after two warm-up
runs, with the median CPU time of a run (every thread of the process summed;
on a shared machine it is disturbed least by other load, but with more than
one thread it also counts the extra threads' work and spinning: compare it
between the two libraries). graft's time is the op on an input already on the
device, synchronised; torch's is the call. Both run with
OMP_WAIT_POLICY=passive unless it is set (read when the OpenMP runtime loads:
here, before torch is imported, and inherited by graft's run). Thread counts
are read when OpenMP and MKL load, so each count runs in a new Python process
started with OMP_NUM_THREADS and MKL_NUM_THREADS set before torch is imported
(and torch.set_num_threads as well); graft-bench gets --threads. A count either
library did not use is reported on stderr. The 1-minute load average
(/proc/loadavg) is printed before and after each count: on a shared machine
the times are only comparable within one run. Without torch this says so and
exits 0: it is not a test dependency.
"""
import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time

FAMILIES = ("fft", "rfft", "stft")
NAMES = ("fft", "fft1000", "fft1031", "rfft", "stft")
ROWS = {"fft 1M": "fft", "fft 128x1000": "fft1000", "fft 128x1031": "fft1031",
        "rfft 1024x1024": "rfft", "stft 160000": "stft"}
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def load():
    try:
        with open("/proc/loadavg") as f:
            return f.read().split()[0]
    except OSError:
        return "?"


def torch_times(torch, name, reps):
    g = torch.Generator().manual_seed(1234)
    if name == "fft":
        x = torch.complex(torch.rand(1 << 20, generator=g) * 2 - 1,
                          torch.rand(1 << 20, generator=g) * 2 - 1)
        fn = lambda: torch.fft.fft(x)
    elif name in ("fft1000", "fft1031"):
        n = int(name[3:])
        x = torch.complex(torch.rand(128, n, generator=g) * 2 - 1,
                          torch.rand(128, n, generator=g) * 2 - 1)
        fn = lambda: torch.fft.fft(x)
    elif name == "rfft":
        x = torch.rand(1024, 1024, generator=g) * 2 - 1
        fn = lambda: torch.fft.rfft(x)
    else:
        x = torch.rand(160000, generator=g) * 2 - 1
        w = torch.hann_window(512)
        fn = lambda: torch.stft(x, 512, hop_length=128, window=w, return_complex=True)
    times, cpus = [], []
    for r in range(reps + 2):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        dt, dc = time.perf_counter() - t0, time.process_time() - c0
        if r >= 2:
            times.append(dt)
            cpus.append(dc)
    return statistics.median(times), min(times), statistics.median(cpus)


def graft_times(bench, device, threads, reps):
    env = dict(os.environ)
    env.setdefault("GRAFT_PLUGINS", "cpu_onednn")
    cmd = [bench, "--only", ",".join(FAMILIES), "--device", device, "--threads", str(threads),
           "--warmup", "2", "--repeats", str(reps), "--max-repeats", str(reps),
           "--min-time", "0", "--no-progress", "--no-variants", "--json"]
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    report = json.loads(out)
    omp = report.get("openmp_threads")
    if omp is not None and omp != threads:
        print("bench_fft_torch.py: graft-bench --threads %d ran OpenMP with %d threads"
              % (threads, omp), file=sys.stderr)
    found = {}
    for row in report["results"]:
        name = ROWS.get(row["workload"])
        if name and row["status"] == "ok" and not row.get("variant"):
            t = row["time_s"]
            found[name] = (t["median"], t["min"], row["cpu_median_s"])
    if set(found) != set(NAMES):
        sys.exit("bench_fft_torch.py: unexpected output from %s:\n%s" % (" ".join(cmd), out))
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("bench", help="path of graft-bench")
    ap.add_argument("--device", default="cpu", help="the graft device (default cpu)")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--no-header", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    counts = [int(t) for t in args.threads.split(",")]
    if min(counts) < 1:
        ap.error("--threads: counts from 1")
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    if importlib.util.find_spec("torch") is None:
        print("bench_fft_torch.py: PyTorch is not installed; nothing to compare")
        return 0
    if len(counts) > 1 or any(os.environ.get(v) != str(counts[0]) for v in THREAD_VARS):
        for i, n in enumerate(counts):
            env = dict(os.environ, **{v: str(n) for v in THREAD_VARS})
            cmd = [sys.executable, os.path.abspath(__file__), args.bench, "--device",
                   args.device, "--threads", str(n), "--reps", str(args.reps)]
            if i or args.no_header:
                cmd.append("--no-header")
            sys.stdout.flush()
            rc = subprocess.run(cmd, env=env).returncode
            if rc:
                return rc
        return 0
    import torch
    threads = counts[0]
    torch.set_num_threads(threads)
    if torch.get_num_threads() != threads:
        print("bench_fft_torch.py: torch.get_num_threads() is %d, not %d"
              % (torch.get_num_threads(), threads), file=sys.stderr)
    if not args.no_header:
        print("PyTorch %s (MKL %s), graft %s, OMP_WAIT_POLICY=%s" % (
            torch.__version__, torch.backends.mkl.is_available(), args.bench,
            os.environ["OMP_WAIT_POLICY"]))
        print("%-8s %7s %10s %10s %11s %16s %20s   %s" % (
            "", "threads", "graft ms", "torch ms", "torch/graft", "(min: g, t)",
            "cpu ms: g, t, t/g", "load before, after"))
    before = load()
    graft = graft_times(args.bench, args.device, threads, args.reps)
    for name in NAMES:
        tm, tmin, tc = torch_times(torch, name, args.reps)
        gm, gmin, gc = graft[name]
        print("%-8s %7d %10.2f %10.2f %11.2f %7.2f, %6.2f %6.1f, %5.1f, %5.2f   %s, %s" % (
            name, threads, gm * 1e3, tm * 1e3, tm / gm, gmin * 1e3, tmin * 1e3, gc * 1e3,
            tc * 1e3, tc / gc if gc > 0 else 0.0, before, load()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
