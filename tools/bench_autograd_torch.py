#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Runs graft-bench's autograd workload in PyTorch and compares.

    bench_autograd_torch.py [GRAFT_BENCH] [--ops N] [--repeats R] [--scalar]

The workload is the one `graft-bench autograd` times: a chain of N ops on
1-element f32 tensors (alternately y * c and y + d; with --scalar, y * 1.0001
and y + 1e-4 with Python numbers), timed forward with recording, through
backward, and forward under no_grad; median, min and max over R runs after one
warm-up. Given the path of graft-bench, it runs it with --json (same options)
and prints both side by side with the ratio graft / torch.

PyTorch's figures include the Python interpreter's cost of the loop, which a
C program does not pay; torch runs on its CPU device with one thread.
Without torch installed it says so and exits 0 (it is not a test dependency).
"""
import argparse
import json
import statistics
import subprocess
import sys
import time


def summarise(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def run_torch(torch, ops, repeats, scalar):
    torch.set_num_threads(1)
    x = torch.ones(1, dtype=torch.float32, requires_grad=True)
    c = torch.full((1,), 1.0001, dtype=torch.float32)
    d = torch.full((1,), 1e-4, dtype=torch.float32)

    def chain(y):
        if scalar:
            for i in range(ops):
                y = y + 1e-4 if i & 1 else y * 1.0001
        else:
            for i in range(ops):
                y = y + d if i & 1 else y * c
        return y

    def once():
        t0 = time.perf_counter_ns()
        y = chain(x)
        t1 = time.perf_counter_ns()
        y.backward()
        t2 = time.perf_counter_ns()
        del y
        x.grad = None
        with torch.no_grad():
            t3 = time.perf_counter_ns()
            y = chain(x)
            t4 = time.perf_counter_ns()
        del y
        return (t1 - t0) / ops, (t2 - t1) / ops, (t4 - t3) / ops

    once()  # warm-up
    runs = [once() for _ in range(repeats)]
    return {
        "benchmark": "autograd",
        "device": "cpu",
        "plugin": "torch " + torch.__version__,
        "ops": ops,
        "repeats": repeats,
        "form": "scalar" if scalar else "tensor",
        "forward_record_ns_per_op": summarise([r[0] for r in runs]),
        "backward_ns_per_node": summarise([r[1] for r in runs]),
        "forward_no_grad_ns_per_op": summarise([r[2] for r in runs]),
    }


def run_graft(path, ops, repeats, scalar):
    cmd = [path, "autograd", "--ops", str(ops), "--repeats", str(repeats), "--json"]
    if scalar:
        cmd.append("--scalar")
    try:
        out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    except (OSError, subprocess.CalledProcessError) as e:
        err = getattr(e, "stderr", "") or ""
        sys.exit("bench_autograd_torch: running %s failed: %s %s" % (" ".join(cmd), e, err.strip()))
    return json.loads(out.stdout)


ROWS = [
    ("forward + record (ns/op)", "forward_record_ns_per_op"),
    ("backward (ns/node)", "backward_ns_per_node"),
    ("forward, no grad (ns/op)", "forward_no_grad_ns_per_op"),
]


def print_one(name, res):
    print("%s: %s (%s), %d ops, %d repeats, %s operands" % (
        name, res.get("device", "?"), res.get("plugin", "?"), res["ops"], res["repeats"],
        res.get("form", "tensor")))
    print("  %-26s %10s %10s %10s" % ("", "median", "min", "max"))
    for label, key in ROWS:
        s = res[key]
        print("  %-26s %10.1f %10.1f %10.1f" % (label, s["median"], s["min"], s["max"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("graft_bench", nargs="?", help="path of the graft-bench executable")
    ap.add_argument("--ops", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--scalar", action="store_true")
    a = ap.parse_args()
    if a.ops < 1 or a.repeats < 1:
        ap.error("--ops and --repeats must be at least 1")

    graft = run_graft(a.graft_bench, a.ops, a.repeats, a.scalar) if a.graft_bench else None
    if graft:
        print_one("graft", graft)
    try:
        import torch
    except ImportError:
        print("torch not installed: nothing to compare with (install PyTorch for this "
              "Python, %s, e.g. `pip install torch` or Debian's python3-torch)" % sys.executable)
        return 0
    ref = run_torch(torch, a.ops, a.repeats, a.scalar)
    print_one("torch", ref)
    if graft:
        print("median ratio graft / torch:")
        for label, key in ROWS:
            g, t = graft[key]["median"], ref[key]["median"]
            print("  %-26s %10.2f" % (label, g / t if t > 0 else float("inf")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
