"""mx.fft against PyTorch CPU's torch.fft (complex64 / float32, each library in its own
process), printed as one markdown table:

    PYTHONPATH=python .venv/bin/python benchmarks/bench_fft.py --torch-python /path/bin/python
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import compare, print_table, timeit  # noqa: E402

# (name, shape, transform)
CASES = [
    ("fft 1M", (1 << 20,), "fft"),
    ("rfft 1M", (1 << 20,), "rfft"),
    ("fft 1024 x 1024 (rows)", (1024, 1024), "fft"),
    ("rfft 1024 x 1024 (rows)", (1024, 1024), "rfft"),
    ("fft 4096 x 1000 (2^3 5^3)", (4096, 1000), "fft"),
    ("fft 64 x 10007 (prime)", (64, 10007), "fft"),
    ("fft2 512 x 512", (512, 512), "fft2"),
    ("irfft 1024 x 513 -> 1024", (1024, 513), "irfft"),
]


def inputs(np, shape, kind):
    rng = np.random.default_rng(0)
    if kind == "rfft":
        return rng.standard_normal(shape).astype(np.float32)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)


def run_mlx():
    import numpy as np

    import mlx.core as mx

    out = {}
    for name, shape, kind in CASES:
        x = mx.array(inputs(np, shape, kind))
        mx.eval(x)
        f = getattr(mx.fft, kind)
        out[name] = {"t": timeit(lambda: mx.eval(f(x)))}
    return out


def run_torch():
    import numpy as np
    import torch

    torch.set_num_threads(int(os.environ.get("BENCH_THREADS", os.cpu_count())))
    out = {}
    for name, shape, kind in CASES:
        x = torch.from_numpy(inputs(np, shape, kind))
        f = getattr(torch.fft, kind)
        out[name] = {"t": timeit(lambda: f(x))}
    return {"version": torch.__version__, "times": out}


def main():
    ours, theirs, version, threads = compare(__file__, run_mlx, run_torch)
    print(f"mx.fft, {threads} thread(s) each, best of alternating rounds; ms per call\n")
    print_table("transform", [c[0] for c in CASES], ours, theirs, version)


if __name__ == "__main__":
    main()
