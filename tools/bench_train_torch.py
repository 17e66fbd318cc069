#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""One training step of graft-bench's MLP, CNN, LSTM, GRU and encoder layer: graft vs PyTorch.

    bench_train_torch.py GRAFT_BENCH [--threads 1,2] [--reps 15] [--device cpu]

Runs `graft-bench --only mlp,cnn,lstm,gru,encoder --device D --threads N --json` for
each thread count (OMP threads, as graft's CPU plugins use them), then the same
workloads in PyTorch on the CPU with torch.set_num_threads(n), in this
one run, and prints both with the ratio torch / graft (above 1: graft is
faster). The workloads are those of tools/bench/workloads_train.c:

  MLP: x [256, 784] -> Linear(784, 1024) -> ReLU -> Linear(1024, 1024) -> ReLU
       -> Linear(1024, 10) -> cross entropy (mean)
  CNN: x [64, 1, 28, 28] -> Conv2d(1, 16, 3, padding=1) -> ReLU -> MaxPool2d(2)
       -> Conv2d(16, 32, 3, padding=1) -> ReLU -> MaxPool2d(2) -> Linear(1568, 10)
       -> cross entropy (mean)
  LSTM, GRU: x [64, 32, 64] (seq, batch, features) -> nn.LSTM / nn.GRU(64, 256,
       num_layers=2) -> the last layer's h_n [32, 256] -> Linear(256, 10)
       -> cross entropy (mean)

A step is zero_grad(set_to_none=True), forward, backward and
torch.optim.Adam(lr=1e-3); the median (and the fastest) of --reps steps after
two warm-up steps, and the median CPU time of a step (every thread of the
process summed: what other load on the machine disturbs least, since time
spent descheduled is not counted; with more than one thread it also counts
the work of the extra threads, so compare it between the two libraries, not
with the wall time). Both run with OMP_WAIT_POLICY=passive unless it is set
(it is read when the OpenMP runtime loads: here, before torch is imported,
and inherited by graft's run): with OpenMP's default spinning on a busy
machine, threads waiting at a barrier take the CPU from the thread they wait
for. The policy is printed in the header line.
Thread counts: OpenMP and OpenBLAS read theirs (OMP_NUM_THREADS,
OPENBLAS_NUM_THREADS, MKL_NUM_THREADS) when they load, and
torch.set_num_threads does not reach a pthreads OpenBLAS; so each count of
--threads runs in a new Python process started with those variables set
before torch is imported (and torch.set_num_threads as well), and graft-bench
gets --threads (it restarts itself with the variables set). A count either
library did not use (graft-bench's openmp_threads, torch.get_num_threads())
is reported on stderr.
PyTorch's speed on the MLP depends on the BLAS that provides libblas.so.3
(printed in the header line): with Debian's reference BLAS it is ~30x slower,
not a fair comparison. Without changing the system's alternative, OpenBLAS
can be given to this run alone: `apt-get download libopenblas0-openmp`,
`dpkg -x` it into a directory D and set
LD_LIBRARY_PATH=D/usr/lib/x86_64-linux-gnu/openblas-openmp.
PyTorch's figure includes its Python interpreter's share, which a C program
does not pay. Without torch this says so and exits 0: it is not a test
dependency (Debian: apt-get install python3-torch; or pip install torch
--index-url https://download.pytorch.org/whl/cpu).
"""
import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time


class Recurrent:
    """nn.LSTM / nn.GRU, then a linear head on the last layer's h_n."""

    def __init__(self, torch, kind):
        nn = torch.nn
        self.rnn = (nn.LSTM if kind == "lstm" else nn.GRU)(64, 256, num_layers=2)
        self.head = nn.Linear(256, 10)

    def parameters(self):
        return list(self.rnn.parameters()) + list(self.head.parameters())

    def __call__(self, x):
        out = self.rnn(x)[1]
        h_n = out[0] if isinstance(out, tuple) else out
        return self.head(h_n[-1])


class Encoder:
    """nn.TransformerEncoderLayer (d_model 256, 8 heads, feed-forward 1024,
    dropout 0, batch_first), the first token's output through a linear head."""

    def __init__(self, torch):
        nn = torch.nn
        self.layer = nn.TransformerEncoderLayer(256, 8, 1024, dropout=0.0, batch_first=True)
        self.head = nn.Linear(256, 10)

    def parameters(self):
        return list(self.layer.parameters()) + list(self.head.parameters())

    def __call__(self, x):
        return self.head(self.layer(x)[:, 0])


def torch_step_times(torch, name, reps):
    nn = torch.nn
    torch.manual_seed(1234)
    cnn = name == "cnn"
    if name in ("lstm", "gru"):
        model = Recurrent(torch, name)
        x = torch.rand(64, 32, 64)
    elif name == "encoder":
        model = Encoder(torch)
        x = torch.rand(32, 64, 256)
    elif cnn:
        model = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(1568, 10))
        x = torch.rand(64, 1, 28, 28)
    else:
        model = nn.Sequential(
            nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
            nn.Linear(1024, 10))
        x = torch.rand(256, 784)
    batch = x.shape[1] if name in ("lstm", "gru") else x.shape[0]
    target = torch.tensor([(i * 7) % 10 for i in range(batch)])
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    times, cpus, losses = [], [], []
    for r in range(reps + 2):
        t0, c0 = time.perf_counter(), time.process_time()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), target)
        loss.backward()
        opt.step()
        value = loss.item()
        dt, dc = time.perf_counter() - t0, time.process_time() - c0
        losses.append(value)
        if r >= 2:
            times.append(dt)
            cpus.append(dc)
    return (statistics.median(times), min(times), losses[0], losses[-1],
            statistics.median(cpus))


def torch_blas(torch):
    """The BLAS library PyTorch's matmuls run on. Debian's torch links
    libblas.so.3, whose provider is a system alternative: the reference
    netlib BLAS (libblas3) makes its linear layers ~30x slower than OpenBLAS
    (libopenblas0-openmp), so a comparison must say which one it had."""
    torch.ones(2, 2) @ torch.ones(2, 2)
    try:
        with open("/proc/self/maps") as f:
            libs = {line.split()[-1] for line in f if "blas" in line.split()[-1].lower()}
    except OSError:
        return "?"
    return ", ".join(sorted(os.path.realpath(p) for p in libs if p.startswith("/"))) or "none"


ROWS = {"mlp train step": "mlp", "cnn train step": "cnn", "lstm train step": "lstm",
        "gru train step": "gru", "encoder train step": "encoder"}
NAMES = ("mlp", "cnn", "lstm", "gru", "encoder")
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def graft_times(bench, device, threads, reps):
    env = dict(os.environ)
    env.setdefault("GRAFT_PLUGINS", "cpu_onednn")
    cmd = [bench, "--only", ",".join(NAMES), "--device", device, "--threads", str(threads),
           "--warmup", "2", "--repeats", str(reps), "--max-repeats", str(reps),
           "--min-time", "0", "--no-progress", "--json"]
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    report = json.loads(out)
    omp = report.get("openmp_threads")
    if omp is not None and omp != threads:
        print("bench_train_torch.py: graft-bench --threads %d ran OpenMP with %d threads"
              % (threads, omp), file=sys.stderr)
    found = {}
    for row in report["results"]:
        name = ROWS.get(row["workload"])
        if name and row["status"] == "ok" and not row.get("variant"):
            t = row["time_s"]
            found[name] = (t["median"], t["min"], row["loss_first"], row["loss_last"],
                           row["cpu_median_s"])
    if set(found) != set(NAMES):
        sys.exit("bench_train_torch.py: unexpected output from %s:\n%s" % (" ".join(cmd), out))
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
        print("bench_train_torch.py: PyTorch is not installed; nothing to compare")
        return 0
    if len(counts) > 1 or any(os.environ.get(v) != str(counts[0]) for v in THREAD_VARS):
        # One process per count, started with the variables set (they are
        # equal there, so it runs the count itself).
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
        print("bench_train_torch.py: torch.get_num_threads() is %d, not %d"
              % (torch.get_num_threads(), threads), file=sys.stderr)
    if not args.no_header:
        print("PyTorch %s (BLAS %s), graft %s, OMP_WAIT_POLICY=%s" % (
            torch.__version__, torch_blas(torch), args.bench, os.environ["OMP_WAIT_POLICY"]))
        print("%-7s %7s %10s %10s %11s %14s %18s   %s" % (
            "", "threads", "graft ms", "torch ms", "torch/graft", "(min: g, t)",
            "cpu ms: g, t, t/g", "loss graft | torch (first -> last)"))
    graft = graft_times(args.bench, args.device, threads, args.reps)
    for name in NAMES:
        tm, tmin, tl0, tl1, tc = torch_step_times(torch, name, args.reps)
        gm, gmin, gl0, gl1, gc = graft[name]
        print("%-7s %7d %10.2f %10.2f %11.2f %6.1f, %6.1f %5.1f, %5.1f, %4.2f   "
              "%.4f -> %.4f | %.4f -> %.4f" % (
                  name, threads, gm * 1e3, tm * 1e3, tm / gm, gmin * 1e3, tmin * 1e3,
                  gc * 1e3, tc * 1e3, tc / gc, gl0, gl1, tl0, tl1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
