"""The memory documents' scenarios, this framework side by side with PyTorch on the CPU, in
one run (each measurement in its own process, so that one framework's memory never counts for
the other):

1. Training with activation peaks ("memory tide"): the main job's model (examples/train_lm.py,
   default size) trained step by step; per step the process's peak RSS above its RSS before
   the step and, for us, the allocator's own peak of active bytes and of active + cache.
2. Repeated inference with fixed shapes: the same model's forward pass called again and
   again; system allocations per call after the first, and latency with the cache on and off.
3. Data-parallel training with and without sharded optimizer state: needs the distributed
   work (mx.distributed with several ranks and a sharded optimizer); reported as not run
   until it exists.

    PYTHONPATH=python python benchmarks/memory_scenarios.py     # python with torch installed

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
def mlx_train(steps):
    import numpy as np

    import mlx.core as mx
    import mlx.optimizers as optim
    from train_lm import GPT, make_train_step

    mx.set_default_device(mx.cpu)
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
        s = mx.memory_stats()
        rows.append({"rss_peak_above": status("VmHWM") - rss0, "rss_peak": status("VmHWM"),
                     "rss": status("VmRSS"), "peak_active": s["peak_memory"], "peak_footprint": s["peak_footprint"],
                     "time": dt, "system_allocs": s["num_system_allocs"]})
    return rows


def mlx_infer(calls, cache):
    import numpy as np

    import mlx.core as mx
    from train_lm import GPT

    mx.set_default_device(mx.cpu)
    if not cache:
        mx.set_cache_limit(0)
    model = GPT(VOCAB, DIMS, LAYERS, HEADS)
    mx.eval(model.parameters())
    x = mx.array(tokens(np.random.default_rng(0), batch=8)[0])
    mx.eval(x)
    rows = []
    for _ in range(calls):
        before = mx.memory_stats()["num_system_allocs"]
        t = time.perf_counter()
        mx.eval(model(x))
        rows.append({"time": time.perf_counter() - t,
                     "system_allocs": mx.memory_stats()["num_system_allocs"] - before})
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


def torch_train(steps):
    import numpy as np
    import torch
    import torch.nn.functional as F

    model = torch_model()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1)
    rng = np.random.default_rng(0)
    rows = []
    for _ in range(steps):
        x, y = (torch.from_numpy(a).long() for a in tokens(rng))
        rss0 = status("VmRSS")
        reset_rss_peak()
        t = time.perf_counter()
        loss = F.cross_entropy(model(x).reshape(-1, VOCAB), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        loss.item()
        rows.append({"rss_peak_above": status("VmHWM") - rss0, "rss_peak": status("VmHWM"),
                     "rss": status("VmRSS"), "time": time.perf_counter() - t})
    return rows


def torch_infer(calls):
    import numpy as np
    import torch

    model = torch_model().eval()
    x = torch.from_numpy(tokens(np.random.default_rng(0), batch=8)[0]).long()
    rows = []
    with torch.no_grad():
        for _ in range(calls):
            t = time.perf_counter()
            model(x).sum().item()
            rows.append({"time": time.perf_counter() - t})
    return rows


# -- driver ----------------------------------------------------------------------------------
def run_child(*args):
    out = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True,
                         text=True, env=dict(os.environ, OMP_NUM_THREADS="2"))
    if out.returncode != 0:
        return {"error": out.stderr.strip().splitlines()[-1] if out.stderr else "failed"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def has_torch():
    return subprocess.run([sys.executable, "-c", "import torch"], capture_output=True).returncode == 0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--calls", type=int, default=30)
    p.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        what, n = args.child[0], int(args.child[1])
        fn = {"mlx_train": lambda: mlx_train(n), "torch_train": lambda: torch_train(n),
              "mlx_infer": lambda: mlx_infer(n, True), "mlx_infer_nocache": lambda: mlx_infer(n, False),
              "torch_infer": lambda: torch_infer(n)}[what]
        print(json.dumps(fn()))
        return
    torch_ok = has_torch()
    steps, calls = str(args.steps), str(args.calls)
    ours = run_child("mlx_train", steps)
    theirs = run_child("torch_train", steps) if torch_ok else None
    print(f"\n## 1. Memory tide: main-job model training (dims {DIMS}, {LAYERS} layers, batch "
          f"{BATCH}, context {CONTEXT}), per step\n")
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
    if not torch_ok:
        print("\nPyTorch is not importable by this Python: its columns are n/a.")

    on = run_child("mlx_infer", calls)
    off = run_child("mlx_infer_nocache", calls)
    tinf = run_child("torch_infer", calls) if torch_ok else None
    med = lambda rows: 1e3 * statistics.median(r["time"] for r in rows[1:])  # noqa: E731
    print(f"\n## 2. Repeated inference with fixed shapes (batch 8, context {CONTEXT}, {calls} calls)\n")
    print("| | first call: system allocs | later calls: system allocs (total) | "
          "median latency after the first (ms) |")
    print("|---|---:|---:|---:|")
    for label, rows in [("ours, cache on", on), ("ours, cache off (set_cache_limit(0))", off)]:
        print(f"| {label} | {rows[0]['system_allocs']:.0f} | "
              f"{sum(r['system_allocs'] for r in rows[1:]):.0f} | {med(rows):.2f} |")
    if tinf and "error" not in tinf:
        print(f"| PyTorch CPU (torch.no_grad) | n/a | n/a | {med(tinf):.2f} |")

    print("\n## 3. Data-parallel training, per-rank memory with and without sharded optimizer "
          "state\n")
    print("Not run: it needs the distributed work (several ranks and a sharded optimizer state), "
          "which is being done in parallel by another issue.")


if __name__ == "__main__":
    main()
