#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Time to accuracy on Fashion-MNIST: graft's examples/fashion_mnist against
PyTorch on the same network, loss, batch size, optimiser, learning-rate
schedule, initialisation and epochs, with 1 and 2 threads, in one run (both sides see
the same machine load); then a graft checkpoint loaded into the PyTorch
module through safetensors gives the same test accuracy.

    python3 tools/fashion_mnist_torch.py --graft build/examples/fashion_mnist
        [--epochs 1] [--threads 1,2] [--limit N] [--seed 0] [--lr-decay G] [--work DIR]
        [--autocast bf16]

With --autocast bf16 both sides train in mixed precision: graft's
`fashion_mnist --autocast bf16` against the forward and the loss inside
torch.autocast("cpu", dtype=torch.bfloat16), f32 weights and optimiser on
both sides.

Needs PyTorch and NumPy, and the safetensors package for the checkpoint
check; none of them is a dependency of graft. Without torch the script says
where to get it and exits with status 0 (nothing compared). They install
into a virtual environment from PyPI:
    python3 -m venv /tmp/tv && /tmp/tv/bin/pip install torch numpy safetensors
    /tmp/tv/bin/python tools/fashion_mnist_torch.py --graft build/examples/fashion_mnist

PyTorch's official x86 wheels compute with MKL / oneDNN, which pick slower
code paths on AMD processors than on Intel ones: the header names the CPU's
vendor and model so that figures from different machines are read right.
graft's threads are set with OMP_NUM_THREADS (its cpu plugin's OpenMP).
PyTorch runs in a process of its own per thread count, started with
OMP_NUM_THREADS, MKL_NUM_THREADS and OPENBLAS_NUM_THREADS set before torch
loads, and torch.set_num_threads. Timings are medians of the epochs'
training times (the test pass is not timed). Each side's peak resident
memory (VmHWM of its own process: fashion_mnist prints it, the PyTorch
process reads it at its end) is printed beside its times: both hold the same data as f32
tensors and train the same network on the same batches."""
import argparse
import gzip
import json
import os
import re
import statistics
import subprocess
import sys
import time

DATA = "/usr/share/datasets/fashion-mnist"
MEAN, STD = 0.2860, 0.3530
HIDDEN = 512                     # fc1's width, as examples/fashion_mnist.c's
DROPOUT_FEATURES, DROPOUT_HIDDEN = 0.25, 0.5
AUTOCAST = {"bf16": "bfloat16"}  # --autocast: graft's name -> torch's dtype


def cpu_model():
    vendor = model = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                k, _, v = line.partition(":")
                k = k.strip()
                if k == "vendor_id" and vendor == "unknown":
                    vendor = v.strip()
                elif k == "model name" and model == "unknown":
                    model = v.strip()
    except OSError:
        pass
    return vendor, model


def load_idx(path, np):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    if raw[0] or raw[1] or raw[2] != 8:
        sys.exit(f"{path}: not an IDX file of unsigned bytes")
    rank = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(rank)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * rank).reshape(dims)


def torch_model(torch):
    nn = torch.nn

    class Net(nn.Module):
        """examples/fashion_mnist.c's network, under the same names."""

        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 32, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(32)
            self.conv2 = nn.Conv2d(32, 64, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(64)
            self.fc1 = nn.Linear(64 * 7 * 7, HIDDEN)
            self.fc2 = nn.Linear(HIDDEN, 10)
            self.drop_features = nn.Dropout(DROPOUT_FEATURES)
            self.drop_hidden = nn.Dropout(DROPOUT_HIDDEN)

        def forward(self, x):
            f = nn.functional
            x = f.max_pool2d(f.relu(self.bn1(self.conv1(x))), 2)
            x = f.max_pool2d(f.relu(self.bn2(self.conv2(x))), 2)
            x = self.drop_features(x.flatten(1))
            x = self.drop_hidden(f.relu(self.fc1(x)))
            return self.fc2(x)

    return Net()


def accuracy(torch, model, x, y):
    model.eval()
    hits = 0
    with torch.no_grad():
        for i in range(0, len(x), 500):
            hits += (model(x[i:i + 500]).argmax(1) == y[i:i + 500]).sum().item()
    model.train()
    return hits / len(x)


def torch_run(torch, data, threads, epochs, seed, lr, decay, batch, autocast=""):
    """Per-epoch training seconds and the final test accuracy (the forward and
    the loss under torch.autocast when autocast names a dtype)."""
    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    xtr, ytr, xte, yte = data
    model = torch_model(torch)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    # fashion_mnist's schedules: a cosine over the epochs, or x decay per epoch.
    sched = (torch.optim.lr_scheduler.ExponentialLR(opt, gamma=decay) if decay > 0 else
             torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs))
    loss_fn = torch.nn.CrossEntropyLoss()
    times, accs = [], []
    n = len(xtr)
    for epoch in range(1, epochs + 1):
        t0 = time.perf_counter()
        order = torch.randperm(n)
        for i in range(0, n, batch):
            idx = order[i:i + batch]
            opt.zero_grad(set_to_none=True)
            if autocast:
                with torch.autocast("cpu", dtype=getattr(torch, AUTOCAST[autocast])):
                    loss = loss_fn(model(xtr[idx]), ytr[idx])
            else:
                loss = loss_fn(model(xtr[idx]), ytr[idx])
            loss.backward()
            opt.step()
        times.append(time.perf_counter() - t0)
        sched.step()
        accs.append(accuracy(torch, model, xte, yte))
        print(f"  torch  {threads} thread(s) epoch {epoch}: {times[-1]:.1f} s, "
              f"{n / times[-1]:.0f} images/s, test accuracy {accs[-1]:.4f}", flush=True)
    return times, accs[-1]


RSS_RE = re.compile(r"^peak resident memory ([0-9.]+) MB")
EPOCH_RE = re.compile(r"^epoch +(\d+) .*test accuracy ([0-9.]+) +train ([0-9.]+) s")


def graft_run(exe, threads, epochs, seed, limit, decay, save, autocast=""):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    env.setdefault("GRAFT_DEVICE", "cpu")
    cmd = [exe, "--epochs", str(epochs), "--seed", str(seed)]
    if autocast:
        cmd += ["--autocast", autocast]
    if decay > 0:
        cmd += ["--lr-decay", str(decay)]
    if limit:
        cmd += ["--limit", str(limit)]
    if save:
        cmd += ["--save", save]
    out, rc = run_captured(cmd, env)
    if rc:
        sys.exit(f"{' '.join(cmd)} failed ({rc}):\n{out}")
    times, acc, rss_mb = [], None, float("nan")
    for line in out.splitlines():
        m = RSS_RE.match(line)
        if m:
            rss_mb = float(m.group(1))
        m = EPOCH_RE.match(line)
        if m:
            times.append(float(m.group(3)))
            acc = float(m.group(2))
            n = limit or 60000
            print(f"  graft  {threads} thread(s) epoch {m.group(1)}: {times[-1]:.1f} s, "
                  f"{n / times[-1]:.0f} images/s, test accuracy {acc:.4f}", flush=True)
    if not times:
        sys.exit(f"no epoch lines in the output of {' '.join(cmd)}:\n{out}")
    print(f"  graft  {threads} thread(s): peak resident memory {rss_mb:.0f} MB", flush=True)
    return times, acc, rss_mb


def run_captured(cmd, env):
    """Runs cmd; its output (stdout and stderr) and exit status."""
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return p.stdout, p.returncode


def peak_rss_mb():
    """This process's peak resident memory (VmHWM: its own memory map since
    its exec; ru_maxrss would count the parent's pages before the exec)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def torch_child(a, threads):
    """PyTorch's side in a process of its own (thread variables set before
    torch loads): its times, accuracy and peak RSS."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads),
               OPENBLAS_NUM_THREADS=str(threads))
    cmd = [sys.executable, os.path.abspath(__file__), "--graft", a.graft, "--epochs",
           str(a.epochs), "--limit", str(a.limit), "--seed", str(a.seed), "--lr-decay",
           str(a.lr_decay), "--data", a.data, "--torch-child", str(threads)]
    if a.autocast:
        cmd += ["--autocast", a.autocast]
    out, rc = run_captured(cmd, env)
    result = None
    for line in out.splitlines():
        if line.startswith("TORCH_RESULT "):
            result = json.loads(line[len("TORCH_RESULT "):])
        else:
            print(line, flush=True)
    if rc or result is None:
        sys.exit(f"the PyTorch run failed ({rc}):\n{out}")
    rss_mb = result["rss_mb"]
    print(f"  torch  {threads} thread(s): peak resident memory {rss_mb:.0f} MB", flush=True)
    return result["times"], result["acc"], rss_mb


def checkpoint_check(torch, exe, path, data):
    """The graft checkpoint in the PyTorch module: same test accuracy."""
    try:
        from safetensors.torch import load_file
    except ImportError:
        print("checkpoint: the safetensors package is not installed (pip install safetensors):"
              " skipped")
        return True
    tensors = load_file(path)
    model = torch_model(torch)
    state = {k: v for k, v in tensors.items() if k in model.state_dict()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [k for k in missing if not k.endswith("num_batches_tracked")]
    if missing or unexpected:
        sys.exit(f"checkpoint {path}: missing {missing}, unexpected {unexpected}")
    torch_acc = accuracy(torch, model, data[2], data[3])
    p = subprocess.run([exe, "--eval", path], capture_output=True, text=True)
    m = re.search(r"test accuracy ([0-9.]+) \((\d+) of", p.stdout)
    if p.returncode or not m:
        sys.exit(f"{exe} --eval {path} failed:\n{p.stdout}{p.stderr}")
    graft_hits, torch_hits = int(m.group(2)), round(torch_acc * len(data[2]))
    print(f"checkpoint {os.path.basename(path)} ({len(tensors)} tensors, of which "
          f"{len(state)} the model's): test accuracy in graft {float(m.group(1)):.4f}, "
          f"loaded in PyTorch {torch_acc:.4f} ({abs(graft_hits - torch_hits)} of "
          f"{len(data[2])} predictions differ in count)")
    return abs(graft_hits - torch_hits) <= 2


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--graft", required=True, help="path of graft's fashion_mnist example")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--threads", default="1,2", help="thread counts, comma-separated")
    ap.add_argument("--limit", type=int, default=0, help="first N training images (0: all)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lr-decay", type=float, default=0,
                    help="learning rate factor per epoch, as fashion_mnist's --lr-decay "
                         "(default 0: its cosine over the epochs)")
    ap.add_argument("--work", default="/tmp", help="where the checkpoint is written")
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--autocast", default="", choices=["", *AUTOCAST],
                    help="mixed precision on both sides (bf16)")
    ap.add_argument("--torch-child", type=int, default=0, help=argparse.SUPPRESS)
    a = ap.parse_args()
    vendor, model = cpu_model()
    try:
        import numpy as np
        import torch
    except ImportError as e:
        print(f"SKIP: {e.name} is not installed; PyTorch and NumPy come from PyPI, e.g.\n"
              "  python3 -m venv /tmp/tv && /tmp/tv/bin/pip install torch numpy safetensors\n"
              f"  /tmp/tv/bin/python {sys.argv[0]} --graft {a.graft}")
        return 0
    files = ["train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
             "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"]
    paths = [os.path.join(a.data, f) for f in files]
    if not all(os.path.exists(p) for p in paths):
        print(f"SKIP: the data set is not in {a.data}: install dataset-fashion-mnist")
        return 0
    raw = [load_idx(p, np) for p in paths]
    n = a.limit or len(raw[0])

    def images(r):
        return ((torch.from_numpy(r.astype(np.float32)) / 255 - MEAN) / STD).unsqueeze(1)

    data = (images(raw[0][:n]), torch.from_numpy(raw[1][:n].astype(np.int64)),
            images(raw[2]), torch.from_numpy(raw[3].astype(np.int64)))
    del raw
    if a.torch_child:
        times, acc = torch_run(torch, data, a.torch_child, a.epochs, a.seed, 1e-3, a.lr_decay,
                               128, a.autocast)
        print("TORCH_RESULT " + json.dumps({"times": times, "acc": acc, "rss_mb": peak_rss_mb()}),
              flush=True)
        return 0
    threads = [int(t) for t in a.threads.split(",")]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"CPU: {vendor}, {model}; {os.cpu_count()} logical cores; load average {load:.2f}")
    print(f"PyTorch {torch.__version__} (MKL: {torch.backends.mkl.is_available()}, "
          f"oneDNN: {torch.backends.mkldnn.is_available()}); graft {a.graft}")
    sched = f"x {a.lr_decay} per epoch" if a.lr_decay > 0 else f"cosine over {a.epochs} epoch(s)"
    print(f"network: conv 32 + BN, conv 64 + BN, dropout {DROPOUT_FEATURES}, linear "
          f"3136->{HIDDEN}->10, dropout {DROPOUT_HIDDEN}; Adam lr 0.001, {sched}, batch 128, "
          f"{a.epochs} epoch(s) of {n} "
          f"images, seed {a.seed}"
          + (f"; autocast {a.autocast} on both sides" if a.autocast else ""))
    rows = []
    ckpt = os.path.join(a.work, f"fashion_mnist_compare_{os.getpid()}.safetensors")
    for t in threads:
        g_times, g_acc, g_rss = graft_run(a.graft, t, a.epochs, a.seed, a.limit, a.lr_decay,
                                          ckpt if t == threads[-1] else None, a.autocast)
        t_times, t_acc, t_rss = torch_child(a, t)
        rows.append((t, statistics.median(g_times), g_acc, statistics.median(t_times), t_acc,
                     g_rss, t_rss))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"\nmedian epoch training time, {n} images (load average now {load:.2f}):")
    print(f"{'threads':>7} {'graft s':>8} {'img/s':>7} {'acc':>7} {'torch s':>8} {'img/s':>7} "
          f"{'acc':>7} {'graft/torch speed':>18} {'graft MB':>9} {'torch MB':>9} "
          f"{'graft/torch RSS':>16}")
    for t, gt, ga, tt, ta, gr, tr in rows:
        print(f"{t:>7} {gt:>8.1f} {n / gt:>7.0f} {ga:>7.4f} {tt:>8.1f} {n / tt:>7.0f} "
              f"{ta:>7.4f} {tt / gt:>17.2f}x {gr:>9.0f} {tr:>9.0f} {gr / tr:>15.2f}x")
    ok = checkpoint_check(torch, a.graft, ckpt, data)
    os.remove(ckpt)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
