"""16-bit matrix-vector and small-batch products on the CPU (the decode step of inference with
float16 / bfloat16 weights: x @ W.T with W (N, K)), and float32 for reference: this build
against Apple MLX for Linux CPU (which has the same Python API, so the same worker code runs
in both), optionally an older build of ours (--before, a folder with its mlx package) and
PyTorch CPU, each in its own process, alternating rounds, printed as one markdown table.

    PYTHONPATH=python .venv/bin/python benchmarks/bench_half_matmul.py \
        --mlx-python /work/mlx-venv/bin/python --before /work/main/python \
        --torch-python /work/torch-venv/bin/python
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import run_worker, timeit  # noqa: E402

SHAPES = [(4096, 4096), (11008, 4096), (2048, 512)]  # (N, K); the 11008 x 4096 weights outgrow the cache
BATCHES = [1, 4, 16]
DTYPES = ["bfloat16", "float16", "float32"]


def names():
    return [f"{d} {n}x{k}, batch {b}" for d in DTYPES for (n, k) in SHAPES for b in BATCHES]


def run_mlx():
    import numpy as np

    import mlx.core as mx

    rng = np.random.default_rng(0)
    out = {}
    for d in DTYPES:
        dt = getattr(mx, d)
        for n, k in SHAPES:
            w = mx.array(rng.standard_normal((n, k)).astype(np.float32)).astype(dt)
            for b in BATCHES:
                x = mx.array(rng.standard_normal((b, k)).astype(np.float32)).astype(dt)
                mx.eval(w, x)
                out[f"{d} {n}x{k}, batch {b}"] = timeit(lambda: mx.eval(x @ w.T))
    return out


def run_torch():
    import numpy as np
    import torch

    torch.set_num_threads(int(os.environ.get("BENCH_THREADS", os.cpu_count())))
    rng = np.random.default_rng(0)
    out = {}
    with torch.no_grad():
        for d in DTYPES:
            dt = getattr(torch, d)
            for n, k in SHAPES:
                w = torch.tensor(rng.standard_normal((n, k)).astype(np.float32)).to(dt)
                for b in BATCHES:
                    x = torch.tensor(rng.standard_normal((b, k)).astype(np.float32)).to(dt)
                    out[f"{d} {n}x{k}, batch {b}"] = timeit(lambda: x @ w.T)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mlx-python", default=None, help="interpreter with Apple MLX (mlx[cpu])")
    ap.add_argument("--torch-python", default=None, help="interpreter with PyTorch")
    ap.add_argument("--before", default=None, help="a python/ folder with an older build of ours")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--worker", choices=["mlx", "torch"], help=argparse.SUPPRESS)
    ap.add_argument("--worker-out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        res = run_mlx() if args.worker == "mlx" else run_torch()
        with open(args.worker_out, "w") as f:
            json.dump(res, f)
        return
    ours_path = os.environ.get("PYTHONPATH") or os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python")
    libs = {"ours": (sys.executable, "mlx", ours_path)}
    if args.before:
        libs["before"] = (sys.executable, "mlx", args.before)
    if args.mlx_python:
        libs["Apple MLX"] = (args.mlx_python, "mlx", None)
    if args.torch_python:
        libs["PyTorch"] = (args.torch_python, "torch", None)
    runs = {lib: [] for lib in libs}
    for _ in range(args.rounds):
        for lib, (py, kind, path) in libs.items():
            res = run_worker(py, kind, __file__, args.threads, pythonpath=path)
            if res:
                runs[lib].append(res)
    best = {lib: ({k: min(r[k] for r in rs) for k in rs[0]} if rs else {})
            for lib, rs in runs.items()}
    cols = list(libs)
    ref = "Apple MLX" if "Apple MLX" in libs else None
    header = "| x @ W.T (W: N x K) | " + " | ".join(f"{c} ms" for c in cols)
    header += " | Apple MLX / ours |" if ref else " |"
    print(f"threads: {args.threads or os.cpu_count()}")
    print(header)
    print("|---" * (len(cols) + 1 + (1 if ref else 0)) + "|")
    for name in names():
        cells = []
        for c in cols:
            t = best[c].get(name)
            cells.append(f"{t * 1e3:.3f}" if t else "n/a")
        row = f"| {name} | " + " | ".join(cells)
        if ref:
            o, r = best["ours"].get(name), best[ref].get(name)
            row += f" | {r / o:.2f}x" if o and r else " | n/a"
        print(row + " |")


if __name__ == "__main__":
    main()
