"""Trains the main job's model (examples/train_lm.py) for a few steps with each implementation and
prints a table of training throughput: this repository's mlx, Apple's MLX (same script, run by
another interpreter) and the same model written in PyTorch (eager, CPU).

Each implementation runs in its own process, with the same data, batch, model and optimizer
(AdamW with warm-up and cosine decay, gradient clipping at 1.0). Throughput excludes the first
step, which traces and compiles. The implementations run one after another, --rounds times
(alternating), and each one's best run counts: a shared 2-core VM moves single runs by 10%.

    python benchmarks/bench_lm.py --python torch=/path/to/torch-venv/bin/python \\
        --python apple=/path/to/apple-mlx-venv/bin/python --steps apple=8
    python benchmarks/bench_lm.py --config gpu --steps 200   # on the GPU machine: the GPU preset

--config picks the main job's configuration (examples/lm_data.PRESETS): "cpu" (default) on the
CPU, PyTorch on its threads; "gpu" on the GPU, PyTorch on CUDA, both in the preset's compute
dtype (ours Module.set_compute_dtype, PyTorch torch.autocast).
"""
import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "examples"))
from lm_data import PRESETS  # noqa: E402


def model_config(config):
    """The main job's model and schedule of `config` (the full run's steps set its schedule)."""
    return dict(PRESETS[config], weight_decay=0.1, total_steps=PRESETS[config]["steps"])


def run_mlx(steps, config):
    """The main job itself, cut to `steps` steps (same schedule as the full run)."""
    import train_lm

    argv = ["--steps", str(steps), "--sample", "0", "--eval-every", str(10**9),
            "--config", config] + (["--cpu"] if config == "cpu" else [])
    out = train_lm.main(argv)
    import mlx.core as mx

    return {"label": f"mlx {getattr(mx, '__version__', '?')} ({mx.default_device()})",
            "tokens_per_s": out["steady_tokens_per_s"], "peak_memory": out["peak_memory"],
            "first_loss": out["first_loss"], "last_loss": out["train_loss"]}


def run_torch(steps, config):
    """The same model in PyTorch: pre-norm blocks, fused bias-free QKV, RoPE (rotating halves,
    as nn.RoPE does by default), causal SDPA, exact GELU, output tied to the embedding."""
    import torch
    import torch.nn.functional as F
    from lm_data import DEFAULT_DATA, load_corpus, sample_windows

    m = model_config(config)
    # The GPU preset runs on the CPU where there is no GPU (as train_lm does): a smoke test.
    device = "cuda" if config == "gpu" and torch.cuda.is_available() else "cpu"
    autocast = torch.autocast(device, dtype=getattr(torch, m["compute_dtype"]),
                              enabled=m["compute_dtype"] != "float32")
    torch.manual_seed(0)
    chars, train, _ = load_corpus(DEFAULT_DATA)

    def rope_tables(T, d):
        half = d // 2
        freqs = 10000.0 ** (-torch.arange(half, dtype=torch.float32, device=device) / half)
        angles = torch.arange(T, dtype=torch.float32, device=device)[:, None] * freqs[None]
        return angles.cos(), angles.sin()

    def rope(x, cos, sin):
        half = x.shape[-1] // 2
        x1, x2 = x[..., :half], x[..., half:]
        return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)

    class Block(torch.nn.Module):
        def __init__(self, dims, heads):
            super().__init__()
            self.heads = heads
            self.norm1 = torch.nn.LayerNorm(dims)
            self.qkv = torch.nn.Linear(dims, 3 * dims, bias=False)
            self.out = torch.nn.Linear(dims, dims, bias=False)
            self.norm2 = torch.nn.LayerNorm(dims)
            self.mlp_in = torch.nn.Linear(dims, 4 * dims)
            self.mlp_out = torch.nn.Linear(4 * dims, dims)

        def forward(self, x, cos, sin):
            B, T, D = x.shape
            q, k, v = self.qkv(self.norm1(x)).split(D, dim=-1)
            q, k, v = (z.view(B, T, self.heads, D // self.heads).transpose(1, 2) for z in (q, k, v))
            o = F.scaled_dot_product_attention(rope(q, cos, sin), rope(k, cos, sin), v,
                                               is_causal=True)
            x = x + self.out(o.transpose(1, 2).reshape(B, T, D))
            return x + self.mlp_out(F.gelu(self.mlp_in(self.norm2(x))))

    class GPT(torch.nn.Module):
        def __init__(self, vocab, dims, layers, heads):
            super().__init__()
            self.embed = torch.nn.Embedding(vocab, dims)
            torch.nn.init.normal_(self.embed.weight, std=dims**-0.5)  # as MLX's nn.Embedding
            self.blocks = torch.nn.ModuleList(Block(dims, heads) for _ in range(layers))
            self.norm = torch.nn.LayerNorm(dims)
            self.head_dim = dims // heads

        def forward(self, tokens):
            cos, sin = rope_tables(tokens.shape[1], self.head_dim)
            x = self.embed(tokens)
            for block in self.blocks:
                x = block(x, cos, sin)
            return self.norm(x) @ self.embed.weight.T

    model = GPT(len(chars), m["dims"], m["layers"], m["heads"]).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=m["lr"], weight_decay=m["weight_decay"])
    warmup, total, lr = m["warmup"], m["total_steps"], m["lr"]

    def schedule(step):  # multiplier of lr, as train_lm's join_schedules
        if step < warmup:
            return 1e-2 + (1 - 1e-2) * step / warmup
        t = min(step - warmup, total - warmup) / (total - warmup)
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, schedule)
    rng = np.random.default_rng(0)
    losses, t_first = [], None
    for _ in range(steps):
        x, y = (torch.from_numpy(a) for a in sample_windows(
            train, m["batch"], m["context"], rng))
        x, y = x.long().to(device), y.long().to(device)
        with autocast:  # cross_entropy runs in float32 under it
            logits = model(x)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(loss.item())
        t_first = time.perf_counter() if t_first is None else t_first
    elapsed = time.perf_counter() - t_first
    avg = losses[0]
    for v in losses[1:]:
        avg = 0.9 * avg + 0.1 * v
    where = torch.cuda.get_device_name() if device == "cuda" else \
        f"{torch.get_num_threads()} threads"
    return {"label": f"PyTorch {torch.__version__} (eager, {where}, {m['compute_dtype']})",
            "tokens_per_s": (steps - 1) * m["batch"] * m["context"] / elapsed,
            "first_loss": losses[0], "last_loss": avg}


def worker(kind, steps, config, out_path):
    result = run_torch(steps, config) if kind == "torch" else run_mlx(steps, config)
    result["max_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    with open(out_path, "w") as f:
        json.dump(result, f)


def run_worker(name, python, n, config):
    """One run of implementation `name` in its own process: its result, None if it failed."""
    env = dict(os.environ)
    if name == "apple":
        env.pop("PYTHONPATH", None)  # Apple's mlx, not this repository's
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        cmd = [python, os.path.abspath(__file__), "--worker", "torch" if name == "torch" else "mlx",
               "--worker-steps", str(n), "--worker-out", out.name, "--config", config]
        print(f"# {name}: {n} steps", file=sys.stderr)
        if subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL).returncode != 0:
            print(f"# {name}: failed (see above)", file=sys.stderr)
            return None
        with open(out.name) as f:
            result = json.load(f)
    names = {"ours": "ours", "apple": "Apple MLX", "torch": "PyTorch"}
    return dict(result, label=f"{names.get(name, name)}: {result['label']}", steps=n)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--python", action="append", default=[], metavar="NAME=PATH",
                   help="interpreter for 'torch' or 'apple' (Apple's MLX); those without one "
                        "are skipped")
    p.add_argument("--steps", action="append", default=[], metavar="[NAME=]N",
                   help="steps per implementation (default 30)")
    p.add_argument("--config", choices=["cpu", "gpu"], default="cpu",
                   help="the main job's configuration, and its device (default cpu)")
    p.add_argument("--rounds", type=int, default=3,
                   help="runs of each implementation, alternating; the best counts (default 3)")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--worker-steps", type=int, help=argparse.SUPPRESS)
    p.add_argument("--worker-out", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        worker(args.worker, args.worker_steps, args.config, args.worker_out)
        return

    pythons = {"ours": sys.executable, **dict(s.split("=", 1) for s in args.python)}
    steps = {"default": 30}
    for s in args.steps:
        name, _, n = s.rpartition("=")
        steps[name or "default"] = int(n)
    best = {}
    for _ in range(args.rounds):
        for name, python in pythons.items():
            result = run_worker(name, python, steps.get(name, steps["default"]), args.config)
            if result and result["tokens_per_s"] > best.get(name, {}).get("tokens_per_s", 0):
                best[name] = result
    rows = list(best.values())
    ours = rows[0]["tokens_per_s"]
    m = model_config(args.config)
    where = "on the GPU where there is one" if args.config == "gpu" else \
        f"CPU, {os.cpu_count()} cores"
    print(f"\nGPT {m['layers']} layers x {m['dims']} dims, {m['heads']} heads, context "
          f"{m['context']}, batch {m['batch']}, {m['compute_dtype']} compute; {where}\n")
    print("| implementation | steps | tokens/s | relative to ours | loss at step 1 | "
          "loss (EMA) at the end | max RSS |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['label']} | {r['steps']} | {r['tokens_per_s']:,.0f} | "
              f"{r['tokens_per_s'] / ours:.2f}x | {r['first_loss']:.3f} | {r['last_loss']:.3f} | "
              f"{r['max_rss_mib']:.0f} MiB |")


if __name__ == "__main__":
    main()
