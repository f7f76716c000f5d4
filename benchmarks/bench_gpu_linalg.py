"""mx.linalg on GPU streams (cuSOLVER) against the same ops on our CPU stream (LAPACK, what a GPU
stream ran before) and torch.linalg on CUDA, each library in its own process, float32:

    python3 benchmarks/bench_gpu_linalg.py [--rounds N]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import compare, cuda_timeit, timeit  # noqa: E402

# (name, shape, op)
CASES = [
    ("inv 512", (512, 512), "inv"),
    ("inv 64 x (32, 32)", (64, 32, 32), "inv"),
    ("solve 1024, 16 rhs", (1024, 1024), "solve"),
    ("cholesky 1024", (1024, 1024), "cholesky"),
    ("eigh 512", (512, 512), "eigh"),
    ("svd 512 (values)", (512, 512), "svdvals"),
    ("svd 256 x 128", (256, 128), "svd"),
    ("qr 1024 x 512", (1024, 512), "qr"),
    ("lu 1024", (1024, 1024), "lu"),
]


def inputs(np, shape, op):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(shape).astype(np.float32)
    n = shape[-1]
    if op in ("cholesky", "eigh"):
        a = a @ np.swapaxes(a, -1, -2) + n * np.eye(n, dtype=np.float32)
    elif op in ("inv", "solve", "lu"):
        a = a + n ** 0.5 * np.eye(n, dtype=np.float32)
    return a, rng.standard_normal((shape[-1], 16)).astype(np.float32)


def mlx_ops(mx, s):
    la = mx.linalg
    return {
        "inv": lambda a, b: la.inv(a, stream=s),
        "solve": lambda a, b: la.solve(a, b, stream=s),
        "cholesky": lambda a, b: la.cholesky(a, stream=s),
        "eigh": lambda a, b: la.eigh(a, stream=s),
        "svdvals": lambda a, b: la.svd(a, compute_uv=False, stream=s),
        "svd": lambda a, b: la.svd(a, stream=s),
        "qr": lambda a, b: la.qr(a, stream=s),
        "lu": lambda a, b: la.lu_factor(a, stream=s),
    }


def run_mlx():
    import numpy as np

    import mlx.core as mx

    out = {}
    devices = [("cpu", mx.cpu)] + ([("gpu", mx.gpu)] if mx.is_available(mx.gpu) else [])
    for label, device in devices:
        ops = mlx_ops(mx, device)
        for name, shape, op in CASES:
            a, b = (mx.array(x) for x in inputs(np, shape, op))
            mx.eval(a, b)
            out[f"{name} [{label}]"] = {"t": timeit(lambda: mx.eval(ops[op](a, b)), 0.3, 20)}
    return out


def run_torch():
    import numpy as np
    import torch

    la = torch.linalg
    ops = {
        "inv": lambda a, b: la.inv(a),
        "solve": lambda a, b: la.solve(a, b),
        "cholesky": lambda a, b: la.cholesky(a),
        "eigh": lambda a, b: la.eigh(a),
        "svdvals": lambda a, b: la.svdvals(a),
        "svd": lambda a, b: la.svd(a),
        "qr": lambda a, b: la.qr(a),
        "lu": lambda a, b: la.lu_factor(a),
    }
    out = {}
    for name, shape, op in CASES:
        a, b = (torch.from_numpy(x).cuda() for x in inputs(np, shape, op))
        out[name] = {"t": cuda_timeit(torch, lambda: ops[op](a, b), 0.3, 20)}
    return {"version": torch.__version__, "times": out}


def main():
    ours, theirs, version, _ = compare(__file__, run_mlx, run_torch)
    print(f"| op (float32) | ours GPU ms | ours CPU ms | PyTorch {version} CUDA ms "
          "| GPU speedup over CPU | PyTorch / ours GPU |")
    print("|---|---|---|---|---|---|")
    for name, _, _ in CASES:
        c = ours[f"{name} [cpu]"]["t"] * 1e3
        g = ours.get(f"{name} [gpu]", {}).get("t", float("nan")) * 1e3  # nan: no GPU here
        t = theirs.get(name, {}).get("t")
        ts = f"{t * 1e3:.3f}" if t else "n/a"
        ratio = f"{t * 1e3 / g:.2f}x" if t else "n/a"
        print(f"| {name} | {g:.3f} | {c:.3f} | {ts} | {c / g:.1f}x | {ratio} |")


if __name__ == "__main__":
    main()
