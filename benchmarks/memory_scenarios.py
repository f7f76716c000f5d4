"""The memory documents' scenarios, this framework side by side with PyTorch on the CPU or on
the GPU (--device), in one run (each measurement in its own process, so that one framework's memory never counts for
the other):

1. Training with activation peaks ("memory tide"): the main job's model (examples/train_lm.py,
   default size) trained step by step; per step the process's peak RSS above its RSS before
   the step and, for us, the allocator's own peak of active bytes and of active + cache.
2. Repeated inference with fixed shapes: the same model's forward pass called again and
   again; system allocations per call after the first, and latency with the cache on and off.
3. Data-parallel training with and without sharded optimizer state: per-rank peaks of 2 CPU
   ranks, full AdamW state against ZeRO stages 1 and 2 (bench_distributed_memory's
   measurement); with --device gpu it is n/a unless more than one GPU is visible.

On the GPU (--device gpu, or auto when mx.cuda.is_available()) the figures come from the
allocators instead of RSS: ours from mx.memory_stats(mx.gpu) (peak active, peak active + cache,
num_system_allocs = the CUDA allocator's allocation calls), PyTorch's from torch.cuda
(max_memory_allocated, max_memory_reserved = with its cache, memory_stats()
["segment.all.allocated"] = cudaMalloc calls, ["num_alloc_retries"]).

    PYTHONPATH=python python benchmarks/memory_scenarios.py [--device cpu|gpu|auto]

PyTorch columns are left out (and say so) when torch cannot be imported.
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # bench_distributed_memory

DIMS, LAYERS, HEADS, CONTEXT, BATCH, VOCAB = 128, 4, 4, 128, 32, 65
MiB = 2.0**20


def status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return 0


def reset_rss_peak():
    """Restarts the kernel's RSS high-water mark (VmHWM) from the current RSS."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def tokens(rng, batch=BATCH):
    x = rng.integers(0, VOCAB, size=(batch, CONTEXT + 1))
    return x[:, :-1], x[:, 1:]


# -- ours ------------------------------------------------------------------------------------
def use_device(mx, device):
    """Makes `device` ("cpu" or "gpu") the default and returns it for mx.memory_stats."""
    dev = mx.gpu if device == "gpu" else mx.cpu
    mx.set_default_device(dev)
    return dev


def mlx_train(steps, device):
    import numpy as np

    import mlx.core as mx
    import mlx.optimizers as optim
    from train_lm import GPT, make_train_step

    dev = use_device(mx, device)
    mx.random.seed(0)
    model = GPT(VOCAB, DIMS, LAYERS, HEADS)
    optimizer = optim.AdamW(learning_rate=1e-3, weight_decay=0.1)
    optimizer.init(model.trainable_parameters())
    step, state = make_train_step(model, optimizer)
    rng = np.random.default_rng(0)
    mx.eval(state)
    rows = []
    for _ in range(steps):
        x, y = (mx.array(a) for a in tokens(rng))
        mx.eval(x, y)
        rss0 = status("VmRSS")
        reset_rss_peak()
        mx.reset_peak_memory()
        t = time.perf_counter()
        loss = step(x, y)
        mx.eval(state, loss)
        dt = time.perf_counter() - t
        s = mx.memory_stats(dev)
        rows.append({"rss_peak_above": status("VmHWM") - rss0, "rss_peak": status("VmHWM"),
                     "rss": status("VmRSS"), "peak_active": s["peak_memory"], "peak_footprint": s["peak_footprint"],
                     "time": dt, "system_allocs": s["num_system_allocs"]})
    return rows


def mlx_infer(calls, cache, device):
    import numpy as np

    import mlx.core as mx
    from train_lm import GPT

    dev = use_device(mx, device)
    if not cache:
        mx.set_cache_limit(0)
    model = GPT(VOCAB, DIMS, LAYERS, HEADS)
    mx.eval(model.parameters())
    x = mx.array(tokens(np.random.default_rng(0), batch=8)[0])
    mx.eval(x)
    rows = []
    for _ in range(calls):
        before = mx.memory_stats(dev)["num_system_allocs"]
        t = time.perf_counter()
        mx.eval(model(x))
        rows.append({"time": time.perf_counter() - t,
                     "system_allocs": mx.memory_stats(dev)["num_system_allocs"] - before})
    return rows


# -- PyTorch ---------------------------------------------------------------------------------
def torch_model():
    import torch
    import torch.nn as tnn
    import torch.nn.functional as F

    class Rope(tnn.Module):  # rotary encoding of halves, as nn.RoPE(traditional=False)
        def __init__(self, dims):
            super().__init__()
            inv = 10000.0 ** (-torch.arange(0, dims, 2).float() / dims)
            angles = torch.arange(CONTEXT).float()[:, None] * inv[None]
            self.register_buffer("cos", angles.cos(), persistent=False)
            self.register_buffer("sin", angles.sin(), persistent=False)

        def forward(self, x):
            h = x.shape[-1] // 2
            a, b = x[..., :h], x[..., h:]
            c, s = self.cos[: x.shape[-2]], self.sin[: x.shape[-2]]
            return torch.cat([a * c - b * s, a * s + b * c], dim=-1)

    class Block(tnn.Module):
        def __init__(self):
            super().__init__()
            self.norm1, self.norm2 = tnn.LayerNorm(DIMS), tnn.LayerNorm(DIMS)
            self.qkv = tnn.Linear(DIMS, 3 * DIMS, bias=False)
            self.out = tnn.Linear(DIMS, DIMS, bias=False)
            self.rope = Rope(DIMS // HEADS)
            self.mlp_in, self.mlp_out = tnn.Linear(DIMS, 4 * DIMS), tnn.Linear(4 * DIMS, DIMS)

        def forward(self, x):
            B, T, D = x.shape
            q, k, v = self.qkv(self.norm1(x)).split(D, dim=-1)
            q, k, v = (z.view(B, T, HEADS, D // HEADS).transpose(1, 2) for z in (q, k, v))
            o = F.scaled_dot_product_attention(self.rope(q), self.rope(k), v, is_causal=True)
            x = x + self.out(o.transpose(1, 2).reshape(B, T, D))
            return x + self.mlp_out(F.gelu(self.mlp_in(self.norm2(x))))

    class GPT(tnn.Module):
        def __init__(self):
            super().__init__()
            self.embed = tnn.Embedding(VOCAB, DIMS)
            self.blocks = tnn.ModuleList([Block() for _ in range(LAYERS)])
            self.norm = tnn.LayerNorm(DIMS)

        def forward(self, t):
            x = self.embed(t)
            for b in self.blocks:
                x = b(x)
            return self.norm(x) @ self.embed.weight.T

    torch.manual_seed(0)
    return GPT()


def torch_cuda_stats(torch):
    """PyTorch's peaks on the GPU and its cudaMalloc calls so far (None on the CPU)."""
    s = torch.cuda.memory_stats()
    return {"peak_active": torch.cuda.max_memory_allocated(),
            "peak_footprint": torch.cuda.max_memory_reserved(),
            "system_allocs": s.get("segment.all.allocated", 0),
            "retries": s.get("num_alloc_retries", 0)}


def torch_train(steps, device):
    import numpy as np
    import torch
    import torch.nn.functional as F

    cuda = device == "gpu"
    dev = "cuda" if cuda else "cpu"
    model = torch_model().to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1)
    rng = np.random.default_rng(0)
    rows = []
    for _ in range(steps):
        x, y = (torch.from_numpy(a).long().to(dev) for a in tokens(rng))
        rss0 = status("VmRSS")
        reset_rss_peak()
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        t = time.perf_counter()
        loss = F.cross_entropy(model(x).reshape(-1, VOCAB), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        loss.item()
        rows.append({"rss_peak_above": status("VmHWM") - rss0, "rss_peak": status("VmHWM"),
                     "rss": status("VmRSS"), "time": time.perf_counter() - t,
                     **(torch_cuda_stats(torch) if cuda else {})})
    return rows


def torch_infer(calls, device):
    import numpy as np
    import torch

    cuda = device == "gpu"
    dev = "cuda" if cuda else "cpu"
    model = torch_model().to(dev).eval()
    x = torch.from_numpy(tokens(np.random.default_rng(0), batch=8)[0]).long().to(dev)
    allocs = lambda: torch_cuda_stats(torch)["system_allocs"] if cuda else 0  # noqa: E731
    rows = []
    with torch.no_grad():
        for _ in range(calls):
            before = allocs()
            t = time.perf_counter()
            model(x).sum().item()
            rows.append({"time": time.perf_counter() - t, "system_allocs": allocs() - before})
    return rows


# -- driver ----------------------------------------------------------------------------------
def run_child(*args):
    out = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True,
                         text=True, env=dict(os.environ, OMP_NUM_THREADS="2"))
    if out.returncode != 0:
        return {"error": out.stderr.strip().splitlines()[-1] if out.stderr else "failed"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def has_torch(device):
    check = "import torch; assert torch.cuda.is_available()" if device == "gpu" else "import torch"
    return subprocess.run([sys.executable, "-c", check], capture_output=True).returncode == 0


def gpu_available():
    check = "import mlx.core as mx; assert mx.cuda.is_available()"
    return subprocess.run([sys.executable, "-c", check], capture_output=True).returncode == 0


def gpu_count():
    """GPUs visible to this process (nvidia-smi's list, narrowed by CUDA_VISIBLE_DEVICES)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return len([d for d in visible.split(",") if d.strip()])
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(line.startswith("GPU ") for line in out.stdout.splitlines())


def resolve_device(requested, available):
    """cpu / gpu from --device; gpu without one is an error the caller reports."""
    if requested == "auto":
        return "gpu" if available else "cpu"
    if requested == "gpu" and not available:
        raise SystemExit("memory_scenarios: --device gpu, but mx.cuda.is_available() is False "
                         "here (no CUDA GPU or a CPU-only build); use --device cpu or auto.")
    return requested


def print_tide_cpu(ours, theirs):
    print("Peak RSS: the process's high-water mark during the step (libraries included: compare "
          "the rise above the step's start); allocator columns: ours only.\n")
    print("| step | ours: peak RSS | ours: rise above step start | ours: allocator peak active | "
          "ours: peak active+cache | ours: ms | PyTorch: peak RSS | PyTorch: rise above step "
          "start | PyTorch: ms |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for i, r in enumerate(ours):
        t = theirs[i] if theirs and "error" not in theirs else None
        tcols = (f"{t['rss_peak'] / MiB:.0f}M | {t['rss_peak_above'] / MiB:.1f}M | "
                 f"{1e3 * t['time']:.0f}" if t else "n/a | n/a | n/a")
        print(f"| {i + 1} | {r['rss_peak'] / MiB:.0f}M | {r['rss_peak_above'] / MiB:.1f}M | "
              f"{r['peak_active'] / MiB:.1f}M | {r['peak_footprint'] / MiB:.1f}M | "
              f"{1e3 * r['time']:.0f} | {tcols} |")


def print_tide_gpu(ours, theirs):
    print("GPU allocators: peak active = bytes of live tensors (ours: mx.get_peak_memory; "
          "PyTorch: max_memory_allocated), with cache = what the allocator holds from the device "
          "(ours: peak_footprint; PyTorch: max_memory_reserved); device allocs = cudaMalloc-style "
          "calls during the step (ours: num_system_allocs; PyTorch: segment.all.allocated).\n")
    print("| step | ours: peak active | ours: peak with cache | ours: device allocs | ours: ms | "
          "PyTorch: peak active | PyTorch: peak with cache | PyTorch: device allocs | "
          "PyTorch: alloc retries | PyTorch: ms |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    prev_ours = prev_theirs = 0
    for i, r in enumerate(ours):
        t = theirs[i] if theirs and "error" not in theirs else None
        tcols = "n/a | n/a | n/a | n/a | n/a"
        if t:
            tcols = (f"{t['peak_active'] / MiB:.1f}M | {t['peak_footprint'] / MiB:.1f}M | "
                     f"{t['system_allocs'] - prev_theirs} | {t['retries']} | {1e3 * t['time']:.1f}")
            prev_theirs = t["system_allocs"]
        print(f"| {i + 1} | {r['peak_active'] / MiB:.1f}M | {r['peak_footprint'] / MiB:.1f}M | "
              f"{r['system_allocs'] - prev_ours} | {1e3 * r['time']:.1f} | {tcols} |")
        prev_ours = r["system_allocs"]


def distributed_rows():
    """bench_distributed_memory's measurement on 2 CPU ranks: (label, peak per rank, loss)."""
    import bench_distributed_memory as bdm

    cfg = argparse.Namespace(dims=384, layers=4, context=16, batch=4, steps=3)
    rows = []
    for label, extra in [("full on every rank", []),
                         ("ZeRO stage 1", ["--zero", "--zero-stage", "1"]),
                         ("ZeRO stage 2", ["--zero", "--zero-stage", "2"])]:
        peak, loss = bdm.run(2, extra, cfg)
        rows.append((label, peak, loss))
    return rows


def print_distributed(device, skip):
    print("\n## 3. Data-parallel training, per-rank memory with and without sharded optimizer "
          "state\n")
    if skip:
        print("Not run (--no-distributed).")
        return
    if device == "gpu" and gpu_count() < 2:
        print("n/a (one GPU): data-parallel ranks need more than one visible GPU.")
        return
    # bench_distributed_memory launches its ranks with --cpu: the figures are the host's.
    print("2 ranks on the CPU (mlx.launch, ring backend), train_lm --dims 384 --layers 4, global "
          "batch 4 x 16, 3 steps; peak = mx.get_peak_memory() over the steps, the largest "
          "rank's.\n")
    print("| optimizer state | peak per rank | vs. full state | last loss |")
    print("|---|---:|---:|---:|")
    try:
        rows = distributed_rows()
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        print(f"Failed: {str(e).splitlines()[0]}")
        return
    full = rows[0][1]
    for label, peak, loss in rows:
        print(f"| {label} | {peak / MiB:.1f} MiB | {peak / full:.2f}x | {loss:.4f} |")


def parse_args(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--calls", type=int, default=30)
    p.add_argument("--device", choices=["cpu", "gpu", "auto"], default="cpu",
                   help="where both frameworks run (auto: gpu when mx.cuda.is_available())")
    p.add_argument("--no-distributed", action="store_true", help="skip scenario 3")
    p.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main():
    args = parse_args()
    if args.child:
        what, n, device = args.child[0], int(args.child[1]), args.child[2]
        fn = {"mlx_train": lambda: mlx_train(n, device),
              "torch_train": lambda: torch_train(n, device),
              "mlx_infer": lambda: mlx_infer(n, True, device),
              "mlx_infer_nocache": lambda: mlx_infer(n, False, device),
              "torch_infer": lambda: torch_infer(n, device)}[what]
        print(json.dumps(fn()))
        return
    device = resolve_device(args.device, args.device != "cpu" and gpu_available())
    torch_ok = has_torch(device)
    steps, calls = str(args.steps), str(args.calls)
    ours = run_child("mlx_train", steps, device)
    if "error" in ours:
        raise SystemExit(f"memory_scenarios: our training child failed: {ours['error']}")
    theirs = run_child("torch_train", steps, device) if torch_ok else None
    print(f"\n## 1. Memory tide: main-job model training (dims {DIMS}, {LAYERS} layers, batch "
          f"{BATCH}, context {CONTEXT}), per step" + (", on the GPU" if device == "gpu" else "")
          + "\n")
    (print_tide_gpu if device == "gpu" else print_tide_cpu)(ours, theirs)
    if not torch_ok:
        print("\nPyTorch is not importable by this Python" +
              (" or has no CUDA" if device == "gpu" else "") + ": its columns are n/a.")

    on = run_child("mlx_infer", calls, device)
    off = run_child("mlx_infer_nocache", calls, device)
    tinf = run_child("torch_infer", calls, device) if torch_ok else None
    med = lambda rows: 1e3 * statistics.median(r["time"] for r in rows[1:])  # noqa: E731
    where = ", on the GPU" if device == "gpu" else ""
    print(f"\n## 2. Repeated inference with fixed shapes (batch 8, context {CONTEXT}, {calls} "
          f"calls{where})\n")
    print("| | first call: system allocs | later calls: system allocs (total) | "
          "median latency after the first (ms) |")
    print("|---|---:|---:|---:|")
    for label, rows in [("ours, cache on", on), ("ours, cache off (set_cache_limit(0))", off)]:
        print(f"| {label} | {rows[0]['system_allocs']:.0f} | "
              f"{sum(r['system_allocs'] for r in rows[1:]):.0f} | {med(rows):.2f} |")
    if tinf and "error" not in tinf:
        if device == "gpu":
            print(f"| PyTorch CUDA (torch.no_grad; cudaMalloc = segment.all.allocated) | "
                  f"{tinf[0]['system_allocs']:.0f} | "
                  f"{sum(r['system_allocs'] for r in tinf[1:]):.0f} | {med(tinf):.2f} |")
        else:
            print(f"| PyTorch CPU (torch.no_grad) | n/a | n/a | {med(tinf):.2f} |")

    print_distributed(device, args.no_distributed)


if __name__ == "__main__":
    main()
