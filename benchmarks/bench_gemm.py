"""float32 matrix products on the CPU: mlx.core's own AVX-512 GEMM (MLX_CPU_GEMM=own), the
system BLAS (MLX_CPU_GEMM=blas) and PyTorch CPU (MKL), in one run, as a markdown table of
GFLOP/s. Each library runs in its own process, alternating rounds (bench_common.py):

    PYTHONPATH=python .venv/bin/python benchmarks/bench_gemm.py --torch-python /work/torch-venv/bin/python

Shapes: squares, the main job's products (examples/train_lm.py defaults: 32 x 128 tokens,
dims 128; forward x @ W.T, backward dx = dy @ W and dW = dy.T @ x) and LLM decode / prefill
shapes (M = 1 is a matrix-vector product, bound by reading the weights).
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import compare, timeit  # noqa: E402

# (name, M, N, K, a transposed, b transposed): C (M x N) = op(A) op(B).
SHAPES = [(f"square {n}", n, n, n, False, False) for n in (256, 512, 1024, 2048, 4096)] + [
    ("lm qkv x@W.T", 4096, 384, 128, False, True),
    ("lm mlp_in x@W.T", 4096, 512, 128, False, True),
    ("lm mlp_out x@W.T", 4096, 128, 512, False, True),
    ("lm dx = dy@W", 4096, 128, 512, False, False),
    ("lm dW = dy.T@x", 512, 128, 4096, True, False),
    ("llm decode 1x4096x4096", 1, 4096, 4096, False, True),
    ("llm 16x4096x4096", 16, 4096, 4096, False, True),
    ("llm prefill 512x4096x4096", 512, 4096, 4096, False, True),
    ("llm mlp 512x11008x4096", 512, 11008, 4096, False, True),
]
BIG = 2 * 4096**3  # flops above which fewer repetitions are timed


def operands(rng, m, n, k, ta, tb):
    import numpy as np

    a = rng.standard_normal((k, m) if ta else (m, k)).astype(np.float32)
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32)
    return a, b


def warm_up(fn, seconds=0.5):
    """Runs fn for a while before anything is timed: the first shape's 50 calls (about 10 ms
    at 256^3) otherwise include the threads' and caches' start (own, BLAS and default of square
    256 measured first in a process: 109 / 102 / 168 GFLOP/s, then 193 / 197 / 195)."""
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        fn()


def run_mlx():
    import numpy as np

    import mlx.core as mx

    out = {}
    rng = np.random.default_rng(0)
    a, b = (mx.array(x) for x in operands(np.random.default_rng(1), 256, 256, 256, False, False))
    warm_up(lambda: mx.eval(a @ b))
    for name, m, n, k, ta, tb in SHAPES:
        a, b = (mx.array(x) for x in operands(rng, m, n, k, ta, tb))
        A, B = (a.T if ta else a), (b.T if tb else b)
        out[name] = {}
        for mode in ("own", "blas", "default"):
            if mode == "default":
                os.environ.pop("MLX_CPU_GEMM", None)
            else:
                os.environ["MLX_CPU_GEMM"] = mode
            out[name][mode] = timeit(lambda: mx.eval(A @ B), min_time=0.3)
    return out


def run_torch():
    import numpy as np
    import torch

    torch.set_num_threads(int(os.environ.get("BENCH_THREADS", os.cpu_count())))
    out = {}
    rng = np.random.default_rng(0)
    a, b = (torch.tensor(x) for x in operands(np.random.default_rng(1), 256, 256, 256, False, False))
    warm_up(lambda: a @ b)
    for name, m, n, k, ta, tb in SHAPES:
        a, b = (torch.tensor(x) for x in operands(rng, m, n, k, ta, tb))
        A, B = (a.T if ta else a), (b.T if tb else b)
        with torch.no_grad():
            out[name] = {"torch": timeit(lambda: A @ B, min_time=0.3)}
    return {"version": torch.__version__, "times": out}


def main():
    ours, theirs, version, threads = compare(__file__, run_mlx, run_torch)
    tlabel = f"PyTorch {version}" if theirs else "PyTorch (n/a)"
    print(f"float32 GEMM, {threads} thread(s) each, GFLOP/s (best round's median call); "
          "ratio = ours / PyTorch (> 1: we are faster). own and BLAS are forced "
          "(MLX_CPU_GEMM); default is what matmul picks per shape (gemm_avx512.cpp's policy).\n")
    print(f"| shape | M x N x K | own GF/s | BLAS GF/s | default GF/s | {tlabel} GF/s "
          "| own/PyTorch | BLAS/PyTorch | default/PyTorch |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, m, n, k, ta, tb in SHAPES:
        fl = 2.0 * m * n * k / 1e9
        own, blas, default = (fl / ours[name][mode] for mode in ("own", "blas", "default"))
        t = fl / theirs[name]["torch"] if theirs else None
        r = (lambda x: f"{x / t:.2f}x") if t else (lambda x: "n/a")
        ts = f"{t:.1f}" if t else "n/a"
        print(f"| {name} | {m}x{n}x{k} | {own:.1f} | {blas:.1f} | {default:.1f} | {ts} | {r(own)} "
              f"| {r(blas)} | {r(default)} |")


if __name__ == "__main__":
    main()
