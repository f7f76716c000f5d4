"""Issue 13's table, ours against PyTorch in one run: bf16 softmax / layer_norm / rms_norm
bandwidth, causal bf16 attention, and the GPT-2 124M training step (benchmarks/gpt2_model.py).

    python benchmarks/bench_gpt2.py                      # every row, on the GPU when there is one
    python benchmarks/bench_gpt2.py --only gpt2 --steps 20
    python benchmarks/bench_gpt2.py --device cpu --tiny --torch-python /work/torch-venv/bin/python

Each row runs in two fresh processes, ours then PyTorch's (a crash, an out-of-memory or a hang
past --row-timeout loses that row only, and peak memory is the row's own). The PyTorch worker
imports benchmarks/gpt2_model.py, hence this package too: give --torch-python an interpreter
of the same Python version. Results also go to $OUT/bench_gpt2.json when $OUT is set.

Timing, the same on both sides: wall clock of --inner calls followed by a wait for the device
(mx.eval + mx.synchronize; torch.cuda.synchronize), divided by --inner; the median of --iters
such batches after --warmup. The training step: --steps steps after --warmup, one wait at the
end (ours evaluates loss and state at every step, as a training loop must). On a GPU our loop
is pipelined (--loop): each step is queued (mx.async_eval) and the one before it waited for, so
that the next step's graph is built while the device runs this one, as PyTorch's loop launches
ahead of its device; --loop synchronous evaluates each step before building the next (the
default on a CPU, where building beside a running step takes cores from it).

Figures: bandwidth = bytes read + written (x in, y out, bf16) / time. Attention FLOPs, causal
(half the score matrix): forward 4 B H T^2 D / 2 (Q K^T and P V); forward + backward 3.5 times
that (the backward's five matrix products against the forward's two). Training: B T / step
time, and peak memory from the allocator (ours mx.get_peak_memory, PyTorch
torch.cuda.max_memory_allocated; both reset after warm-up). On the CPU, PyTorch has no allocator
peak (n/a): the table adds each process's max RSS, labelled as such.

Mixed precision: ours Module.set_compute_dtype(mx.bfloat16), PyTorch torch.autocast(bf16); both
keep fp32 master weights and AdamW state (details in gpt2_model.py).
"""
import argparse
import json
import math
import os
import resource
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_common import run_worker  # noqa: E402

ROWS = ["softmax", "layer_norm", "rms_norm", "sdpa_T1024", "sdpa_T4096", "gpt2", "gpt2_compiled"]
# Issue 13's targets, ours / PyTorch (memory: at most PyTorch eager's peak).
TARGETS = {("softmax", "GB/s"): 2.5, ("layer_norm", "GB/s"): 1.4, ("rms_norm", "GB/s"): 1.15,
           ("sdpa_T1024", "fwd TFLOP/s"): 1.0, ("sdpa_T1024", "fwd+bwd TFLOP/s"): 1.0,
           ("sdpa_T4096", "fwd TFLOP/s"): 1.0, ("sdpa_T4096", "fwd+bwd TFLOP/s"): 1.0,
           ("gpt2", "tokens/s"): 1.0, ("gpt2", "peak GiB"): 1.0}
LOWER_IS_BETTER = {"peak GiB", "max RSS GiB", "ms/step"}
INFO = {"loss"}  # printed for comparison, no ratio


def shapes(tiny):
    """(rows, cols) of the bandwidth cases; (B, H, D, T for each sdpa row); the model."""
    import gpt2_model

    if tiny:
        return (256, 512), (1, 2, 64, {"sdpa_T1024": 64, "sdpa_T4096": 128}), gpt2_model.TINY
    return (16384, 4096), (8, 12, 64, {"sdpa_T1024": 1024, "sdpa_T4096": 4096}), \
        gpt2_model.GPT2_124M


def median_time(run, finish, warmup, iters, inner):
    """Seconds per call of run(): `inner` calls, then finish(their results) waits for them."""
    for _ in range(warmup):
        finish([run() for _ in range(inner)])
    times = []
    for _ in range(iters):
        start = time.perf_counter()
        finish([run() for _ in range(inner)])
        times.append((time.perf_counter() - start) / inner)
    return statistics.median(times)


class Ours:
    """This package (mlx.core), the figures' operations in its API."""

    def __init__(self, device):
        import mlx.core as mx

        self.mx = mx
        mx.set_default_device(mx.gpu if device == "gpu" else mx.cpu)
        self.gpu = device == "gpu"

    def finish(self, outs):
        self.mx.eval(outs)
        self.mx.synchronize()

    def normal(self, shape):
        x = self.mx.random.normal(shape).astype(self.mx.bfloat16)
        self.mx.eval(x)
        return x

    def norms(self, x):
        mx = self.mx
        w = mx.ones((x.shape[-1],), mx.bfloat16)
        return {"softmax": lambda: mx.softmax(x, axis=-1),
                "layer_norm": lambda: mx.fast.layer_norm(x, w, w, 1e-5),
                "rms_norm": lambda: mx.fast.rms_norm(x, w, 1e-5)}

    def attention(self, q, k, v):
        mx = self.mx
        scale = 1 / math.sqrt(q.shape[-1])

        def fwd(q, k, v):
            return mx.fast.scaled_dot_product_attention(q, k, v, scale=scale, mask="causal")

        grad = mx.grad(lambda q, k, v: fwd(q, k, v).astype(mx.float32).sum(), argnums=(0, 1, 2))
        return lambda: fwd(q, k, v), lambda: grad(q, k, v)

    def train(self, cfg, compiled, idx, tgt, steps, warmup, pipelined=False):
        import gpt2_model

        mx = self.mx
        model = gpt2_model.make_model(cfg)
        step, state = gpt2_model.make_step(model, cfg, compiled)
        idx, tgt = mx.array(idx), mx.array(tgt)
        for _ in range(warmup):
            mx.eval(step(idx, tgt), state)
        mx.synchronize()
        mx.reset_peak_memory()
        start = time.perf_counter()
        previous = None
        for _ in range(steps):
            loss = step(idx, tgt)
            if pipelined:
                mx.async_eval(loss, state)
                if previous is not None:
                    mx.eval(previous)  # at most two steps in flight
                previous = loss
            else:
                mx.eval(loss, state)
        mx.eval(loss, state)
        mx.synchronize()
        return (time.perf_counter() - start) / steps, mx.get_peak_memory(), loss.item()


class Torch:
    """PyTorch, the same operations."""

    def __init__(self, device):
        import torch

        self.torch = torch
        self.device = "cuda" if device == "gpu" else "cpu"
        self.gpu = device == "gpu"

    def finish(self, outs):
        if self.gpu:
            self.torch.cuda.synchronize()

    def normal(self, shape):
        return self.torch.randn(*shape, device=self.device, dtype=self.torch.bfloat16)

    def norms(self, x):
        F = self.torch.nn.functional
        w = self.torch.ones(x.shape[-1], device=self.device, dtype=x.dtype)
        return {"softmax": lambda: self.torch.softmax(x, -1),
                "layer_norm": lambda: F.layer_norm(x, (x.shape[-1],), w, w, 1e-5),
                "rms_norm": lambda: F.rms_norm(x, (x.shape[-1],), w, 1e-5)}

    def attention(self, q, k, v):
        torch = self.torch
        sdpa = torch.nn.functional.scaled_dot_product_attention
        q, k, v = (t.requires_grad_() for t in (q, k, v))

        def fwd():
            with torch.no_grad():
                return sdpa(q, k, v, is_causal=True)

        def fwd_bwd():
            return torch.autograd.grad(sdpa(q, k, v, is_causal=True).float().sum(), (q, k, v))

        return fwd, fwd_bwd

    def train(self, cfg, compiled, idx, tgt, steps, warmup, pipelined=False):
        import gpt2_model

        torch = self.torch
        model = gpt2_model.torch_model(cfg, self.device)
        step = gpt2_model.torch_step(model, cfg, compiled, self.device)
        idx, tgt = (torch.from_numpy(a).long().to(self.device) for a in (idx, tgt))
        for _ in range(warmup):
            step(idx, tgt)
        if self.gpu:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        start = time.perf_counter()
        for _ in range(steps):
            loss = step(idx, tgt)
        loss = loss.item()  # waits for the device
        elapsed = (time.perf_counter() - start) / steps
        return elapsed, torch.cuda.max_memory_allocated() if self.gpu else None, loss


def measure(lib, row, args):
    """{figure: value} of one row with one library (run in a worker process)."""
    import numpy as np

    (R, C), (B, H, D, Ts), cfg = shapes(args.tiny)
    if row in ("softmax", "layer_norm", "rms_norm"):
        x = lib.normal((R, C))
        t = median_time(lib.norms(x)[row], lib.finish, args.warmup, args.iters, args.inner)
        return {"GB/s": 2 * R * C * 2 / t / 1e9}
    if row.startswith("sdpa"):
        T = Ts[row]
        fwd, fwd_bwd = lib.attention(*(lib.normal((B, H, T, D)) for _ in range(3)))
        flops = 4 * B * H * T * T * D / 2
        t_fwd = median_time(fwd, lib.finish, args.warmup, args.iters, args.inner)
        t_bwd = median_time(fwd_bwd, lib.finish, args.warmup, args.iters, args.inner)
        return {"fwd TFLOP/s": flops / t_fwd / 1e12, "fwd+bwd TFLOP/s": 3.5 * flops / t_bwd / 1e12}
    rng = np.random.default_rng(0)
    idx, tgt = (rng.integers(0, cfg.vocab, (cfg.batch, cfg.context)).astype(np.int32)
                for _ in range(2))
    dt, peak, loss = lib.train(cfg, row == "gpt2_compiled", idx, tgt, args.steps, args.warmup,
                               args.loop == "pipelined")
    out = {"tokens/s": cfg.batch * cfg.context / dt, "ms/step": dt * 1e3}
    out["peak GiB"] = None if peak is None else peak / 2**30
    if not lib.gpu:  # the process's high-water mark (ru_maxrss is in KiB on Linux)
        out["max RSS GiB"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    out["loss"] = loss
    return out


def version(lib):
    if lib == "torch":
        import torch

        return {"version": torch.__version__,
                "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else None}
    import mlx.core as mx

    return {"version": getattr(mx, "__version__", "?"), "device": str(mx.default_device())}


def fmt(v):
    return "n/a" if v is None else f"{v:,.1f}" if abs(v) >= 100 else f"{v:.3g}"


def print_table(results, rows, labels, meta):
    print(f"\nours: mlx {meta.get('ours', {}).get('version', '?')}, PyTorch "
          f"{meta.get('torch', {}).get('version', 'not measured')}; "
          f"{meta.get('torch', {}).get('gpu') or meta.get('ours', {}).get('device', '')}\n")
    print("| row | figure | ours | PyTorch | ours / PyTorch | target |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        ours, theirs = results[row].get("ours") or {}, results[row].get("torch") or {}
        for fig in dict.fromkeys(list(ours) + list(theirs)):
            o, t = ours.get(fig), theirs.get(fig)
            ratio = f"{o / t:.2f}" if o and t and fig not in INFO else "-"
            target = TARGETS.get((row, fig))
            cmp = "<=" if fig in LOWER_IS_BETTER else ">="
            print(f"| {labels[row]} | {fig} | {fmt(o)} | {fmt(t)} | {ratio} | "
                  f"{f'{cmp} {target}' if target else ''} |")
    print("\nSDPA FLOPs (causal): fwd 4 B H T^2 D / 2, fwd+bwd 3.5x that. Bandwidth: x read + y "
          "written. Training: fp32 weights and AdamW state; bf16 compute through "
          "Module.set_compute_dtype (ours) and torch.autocast (PyTorch). Peak: allocator peak "
          "after warm-up (n/a for PyTorch on the CPU; max RSS is the whole process's).")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", choices=["gpu", "cpu"], default=None,
                   help="default: gpu when this package sees one")
    p.add_argument("--tiny", action="store_true",
                   help="small shapes and a 2-layer, 64-wide model (a CPU check of the script)")
    p.add_argument("--only", action="append", choices=ROWS, help="run this row (repeatable)")
    p.add_argument("--steps", type=int, default=None, help="timed training steps (12; tiny 4)")
    p.add_argument("--warmup", type=int, default=3, help="untimed calls or steps first")
    p.add_argument("--iters", type=int, default=20, help="timed batches per kernel figure")
    p.add_argument("--inner", type=int, default=5, help="kernel calls per timed batch")
    p.add_argument("--torch-python", default=sys.executable, help="interpreter with PyTorch")
    p.add_argument("--ours-only", action="store_true", help="leave PyTorch's column empty")
    p.add_argument("--loop", choices=["auto", "pipelined", "synchronous"], default="auto",
                   help="our training loop: steps queued with async_eval, two in flight, or each "
                        "evaluated before the next is built (auto: pipelined on a GPU)")
    p.add_argument("--row-timeout", type=float, default=300, help="seconds per worker")
    p.add_argument("--json", default=None, help="also write the results to this file")
    p.add_argument("--worker", choices=["ours", "torch"], help=argparse.SUPPRESS)
    p.add_argument("--worker-out", help=argparse.SUPPRESS)
    p.add_argument("--row", choices=ROWS, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.steps is None:
        args.steps = 4 if args.tiny else 12
    if args.worker:
        lib = (Ours if args.worker == "ours" else Torch)(args.device)
        result = {"figures": measure(lib, args.row, args), **version(args.worker)}
        with open(args.worker_out, "w") as f:
            json.dump(result, f)
        return
    if args.device is None:
        import mlx.core as mx

        args.device = "gpu" if mx.is_available(mx.gpu) else "cpu"
    if args.loop == "auto":
        args.loop = "pipelined" if args.device == "gpu" else "synchronous"
    rows = [r for r in ROWS if r in (args.only or ROWS)]
    (R, C), (B, H, D, Ts), cfg = shapes(args.tiny)
    labels = {r: f"{r} bf16 [{R}, {C}]" for r in ("softmax", "layer_norm", "rms_norm")}
    labels.update({r: f"SDPA causal bf16 B{B} H{H} T{Ts[r]} D{D}" for r in Ts})
    model = (f"GPT-2 {cfg.layers}L {cfg.dims}d V{cfg.vocab} B{cfg.batch} T{cfg.context}, "
             "bf16 compute, AdamW")
    labels.update(gpt2=f"{model}: ours uncompiled / PyTorch eager",
                  gpt2_compiled=f"{model}: mx.compile / torch.compile")
    forward = ["--device", args.device, "--steps", str(args.steps), "--warmup", str(args.warmup),
               "--iters", str(args.iters), "--inner", str(args.inner)] + \
        (["--tiny"] if args.tiny else []) + ["--loop", args.loop]
    results, meta = {}, {}
    for row in rows:
        results[row] = {}
        libs = [("ours", sys.executable)]
        libs += [] if args.ours_only else [("torch", args.torch_python)]
        for lib, python in libs:
            print(f"# {row}: {lib}", file=sys.stderr, flush=True)
            res = run_worker(python, lib, __file__, args=forward + ["--row", row],
                             timeout=args.row_timeout)
            if res:
                results[row][lib] = res.pop("figures")
                meta[lib] = res
    print_table(results, rows, labels, meta)
    record = {"device": args.device, "loop": args.loop, "tiny": args.tiny, "labels": labels,
              "meta": meta, "results": results}
    for path in [args.json] + ([os.path.join(os.environ["OUT"], "bench_gpt2.json")]
                               if os.environ.get("OUT") else []):
        if path:
            with open(path, "w") as f:
                json.dump(record, f, indent=1)


if __name__ == "__main__":
    main()
