"""conv2d on ResNet-50 layer shapes (and a depthwise layer): mlx.core against PyTorch CPU,
forward and forward+backward, printed as one markdown table.

Each library runs in its own process (idle BLAS / OpenMP threads of one would take cores from
the other). PyTorch comes from any interpreter that has it:

    PYTHONPATH=python .venv/bin/python benchmarks/bench_conv.py --torch-python /path/to/venv/bin/python

PyTorch gets its native NCHW layout; mlx its NHWC. Both use every core of the machine, or
`--threads N` each (on a machine shared with other work, `--threads 1` is the steadiest
comparison: waiting OpenMP / pool threads then cannot be starved by other processes).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import compare, timeit  # noqa: E402

# (name, batch, H, W, C_in, C_out, kernel, stride, padding, groups)
SHAPES = [
    ("conv1 7x7/2", 4, 224, 224, 3, 64, 7, 2, 3, 1),
    ("l1 1x1 64->64", 4, 56, 56, 64, 64, 1, 1, 0, 1),
    ("l1 3x3 64", 4, 56, 56, 64, 64, 3, 1, 1, 1),
    ("l1 1x1 64->256", 4, 56, 56, 64, 256, 1, 1, 0, 1),
    ("l2 3x3/2 128", 4, 56, 56, 128, 128, 3, 2, 1, 1),
    ("l2 3x3 128", 4, 28, 28, 128, 128, 3, 1, 1, 1),
    ("l2 down 1x1/2 256->512", 4, 56, 56, 256, 512, 1, 2, 0, 1),
    ("l3 3x3 256", 4, 14, 14, 256, 256, 3, 1, 1, 1),
    ("l3 1x1 1024->256", 4, 14, 14, 1024, 256, 1, 1, 0, 1),
    ("l4 3x3 512", 4, 7, 7, 512, 512, 3, 1, 1, 1),
    ("l4 1x1 512->2048", 4, 7, 7, 512, 2048, 1, 1, 0, 1),
    ("depthwise 3x3 256", 4, 28, 28, 256, 256, 3, 1, 1, 256),
]
BACKWARD = {"l1 3x3 64", "l3 3x3 256", "l4 1x1 512->2048", "depthwise 3x3 256"}


def run_mlx():
    import numpy as np

    import mlx.core as mx

    out = {}
    rng = np.random.default_rng(0)
    for name, n, h, w, ci, co, k, s, p, g in SHAPES:
        x = mx.array(rng.standard_normal((n, h, w, ci)).astype(np.float32))
        wt = mx.array(rng.standard_normal((co, k, k, ci // g)).astype(np.float32))
        mx.eval(x, wt)
        out[name] = {"fwd": timeit(lambda: mx.eval(mx.conv2d(x, wt, s, p, groups=g)))}
        if name in BACKWARD:
            grad = mx.grad(lambda a, b: mx.sum(mx.conv2d(a, b, s, p, groups=g)), argnums=(0, 1))
            out[name]["bwd"] = timeit(lambda: mx.eval(grad(x, wt)))
    return out


def run_torch():
    import numpy as np
    import torch

    torch.set_num_threads(int(os.environ.get("BENCH_THREADS", os.cpu_count())))
    F = torch.nn.functional
    out = {}
    rng = np.random.default_rng(0)
    for name, n, h, w, ci, co, k, s, p, g in SHAPES:
        x = torch.tensor(rng.standard_normal((n, ci, h, w)).astype(np.float32))
        wt = torch.tensor(rng.standard_normal((co, ci // g, k, k)).astype(np.float32))
        with torch.no_grad():
            out[name] = {"fwd": timeit(lambda: F.conv2d(x, wt, stride=s, padding=p, groups=g))}
        if name in BACKWARD:
            xg, wg = x.clone().requires_grad_(True), wt.clone().requires_grad_(True)

            def step():
                gx, gw = torch.autograd.grad(F.conv2d(xg, wg, stride=s, padding=p, groups=g).sum(),
                                             (xg, wg))
                return gx, gw

            out[name]["bwd"] = timeit(step)
    return {"version": torch.__version__, "times": out}


def main():
    ours, theirs, version, threads = compare(__file__, run_mlx, run_torch)
    tlabel = f"PyTorch {version}" if theirs else "PyTorch (n/a)"
    print(f"conv2d, float32, {threads} thread(s) each, best of alternating rounds; ms per call "
          "(median of a round); ratio = PyTorch / ours (> 1: we are faster)\n")
    print(f"| layer (N=4) | pass | ours ms | {tlabel} ms | ratio |")
    print("|---|---|---|---|---|")
    for name, *_ in SHAPES:
        for kind in ("fwd", "bwd"):
            if kind not in ours[name]:
                continue
            o = ours[name][kind] * 1e3
            t = theirs[name][kind] * 1e3 if theirs else None
            ratio = f"{t / o:.2f}x" if t else "n/a"
            ts = f"{t:.2f}" if t else "n/a"
            label = "fwd" if kind == "fwd" else "fwd+bwd (dx, dw)"
            print(f"| {name} | {label} | {o:.2f} | {ts} | {ratio} |")


if __name__ == "__main__":
    main()
