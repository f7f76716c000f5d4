"""compile's fusion on the GPU, in one run: elementwise chains over 64 MB of float32, uncompiled
(one kernel per op) against mx.compile (one generated kernel per region,
backend/cuda/compiled.cu), and PyTorch eager (one kernel per op) on the same GPU, each library
in its own process.

    python3 benchmarks/bench_gpu_fusion.py
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import compare, cuda_timeit, timeit  # noqa: E402

N = 1 << 24  # float32 elements: 64 MB per array


def chain(lib, x):
    """14 elementwise ops."""
    y = x * 1.5 + 0.25
    y = y * y - x
    y = lib.abs(y) + 1.0
    y = y / (lib.abs(x) + 2.0)
    y = lib.exp(-y) * y
    return y * 0.5 - 1.0


def gelu_tanh(lib, x):
    return 0.5 * x * (1.0 + lib.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)))


def silu_gate(lib, x, g):
    return x / (1.0 + lib.exp(-x)) * g


CASES = [("14-op chain", chain, 1), ("GELU (tanh)", gelu_tanh, 1), ("SiLU gate", silu_gate, 2)]


def run_mlx():
    import mlx.core as mx

    xs = [mx.random.normal((N,)) for _ in range(2)]
    mx.eval(xs)
    out = {}
    for name, f, nargs in CASES:
        args = xs[:nargs]
        eager = lambda *a: f(mx, *a)  # noqa: E731
        fused = mx.compile(eager)
        mx.eval(fused(*args))
        mx._fused_kernel_stats(True)  # the kernel is built before timing
        out[f"{name} [eager]"] = {"t": timeit(lambda: mx.eval(eager(*args)), 0.3, 30)}
        out[f"{name} [compiled]"] = {"t": timeit(lambda: mx.eval(fused(*args)), 0.3, 30)}
    out["stats"] = {k: float(v) for k, v in mx._fused_kernel_stats().items()}
    return out


def run_torch():
    import torch

    xs = [torch.randn(N, device="cuda") for _ in range(2)]
    out = {}
    for name, f, nargs in CASES:
        args = xs[:nargs]
        out[name] = {"t": cuda_timeit(torch, lambda: f(torch, *args))}
    return {"version": torch.__version__, "times": out}


def main():
    ours, theirs, version, _ = compare(__file__, run_mlx, run_torch)
    print(f"| {N * 4 >> 20} MB float32 | ours eager ms | ours compiled ms | PyTorch {version} "
          "eager ms | compiled / eager | PyTorch / ours compiled |")
    print("|---|---|---|---|---|---|")
    for name, _, _ in CASES:
        e = ours[f"{name} [eager]"]["t"] * 1e3
        c = ours[f"{name} [compiled]"]["t"] * 1e3
        t = theirs.get(name, {}).get("t")
        ts = f"{t * 1e3:.3f}" if t else "n/a"
        ratio = f"{t * 1e3 / c:.2f}x" if t else "n/a"
        print(f"| {name} | {e:.3f} | {c:.3f} | {ts} | {e / c:.2f}x faster | {ratio} |")
    print("generated kernels:", ours["stats"])


if __name__ == "__main__":
    main()
