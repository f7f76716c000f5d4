"""Times the same workloads with mlx.core, NumPy and PyTorch (CPU, when importable) and prints a
markdown table with the times and the ratios to mlx.

Each library is timed in its own process: libraries that share a process fight over cores (idle
OpenMP / OpenBLAS threads spin) and can even swap each other's BLAS symbols. `--python LIB=PATH`
runs a library under another interpreter, e.g. PyTorch from its own venv.

Uses only MLX's public Python API, so `import mlx.core as mx` can be this repository's package or
Apple's MLX: run the script once per implementation, each in its own environment, saving the
results, then merge them as extra columns:

    python benchmarks/bench_python.py --save ours.json
    /path/to/apple-venv/bin/python benchmarks/bench_python.py --libraries mlx \
        --label "Apple MLX" --save apple.json
    python benchmarks/bench_python.py --add apple.json        # table with an Apple MLX column

A workload whose ops an implementation lacks shows as n/a.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

mx = None  # imported by the process that times the library
torch = None

N_ELEMWISE = 1 << 24  # 16M float32
ROWS = 4096  # reductions and softmax work on ROWS x ROWS float32
MLP = dict(batch=512, inputs=784, hidden=1024, outputs=10)


def timeit(fn, min_time=0.3, max_reps=200):
    """Median seconds per call after a warm-up, over at least min_time seconds of calls."""
    fn()
    samples = []
    start = time.perf_counter()
    while len(samples) < 3 or (time.perf_counter() - start < min_time and len(samples) < max_reps):
        t = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t)
    return statistics.median(samples)


def per_op(fn, ops=2000):
    """Seconds per call of fn, timed over a loop of `ops` calls (best of 5 loops)."""
    fn()
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(ops):
            fn()
        best = min(best, (time.perf_counter() - t) / ops)
    return best


# ---- workloads: (name, mlx builder, NumPy builder, PyTorch builder). A builder makes the inputs
# and returns the timed callable, or ("per-op", callable) for per-call overhead loops. ---------


def mx_run(f, *args):
    def run():
        mx.eval(f(*args))

    return run


def mx_inputs(*arrays):
    out = [mx.array(a) for a in arrays]
    mx.eval(out)
    return out


def need(*names):
    missing = [n for n in names if not hasattr(mx, n)]
    if missing:
        raise NotImplementedError("missing " + ", ".join(missing))


def np_mlp(params, x, y):
    w1, b1, w2, b2 = params
    h = x @ w1 + b1
    a = np.maximum(h, 0)
    out = a @ w2 + b2
    diff = out - y
    loss = (diff * diff).sum() / x.shape[0]
    dout = 2 * diff / x.shape[0]
    dh = (dout @ w2.T) * (h > 0)
    return loss, (x.T @ dh, dh.sum(0), a.T @ dout, dout.sum(0))


def mx_mlp_loss(params, x, y):
    w1, b1, w2, b2 = params
    h = x @ w1 + b1
    a = mx.maximum(h, 0.0) if hasattr(mx, "maximum") else h * (h > 0)
    out = a @ w2 + b2
    diff = out - y
    return mx.sum(diff * diff) / x.shape[0]


def torch_mlp(params, x, y):
    for p in params:
        p.grad = None
    w1, b1, w2, b2 = params
    out = torch.relu(x @ w1 + b1) @ w2 + b2
    loss = ((out - y) ** 2).sum() / x.shape[0]
    loss.backward()
    return loss


def workloads(rng):
    big = [rng.standard_normal(N_ELEMWISE).astype(np.float32) for _ in range(2)]
    sq = rng.standard_normal((ROWS, ROWS)).astype(np.float32)
    mats = {n: [rng.standard_normal((n, n)).astype(np.float32) for _ in range(2)]
            for n in (1024, 2048)}
    small = [rng.standard_normal(16).astype(np.float32) for _ in range(2)]
    m = MLP
    mlp = [rng.standard_normal((m["inputs"], m["hidden"])).astype(np.float32) * 0.03,
           np.zeros(m["hidden"], np.float32),
           rng.standard_normal((m["hidden"], m["outputs"])).astype(np.float32) * 0.03,
           np.zeros(m["outputs"], np.float32)]
    mlp_x = rng.standard_normal((m["batch"], m["inputs"])).astype(np.float32)
    mlp_y = rng.standard_normal((m["batch"], m["outputs"])).astype(np.float32)

    def softmax_np(x):
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    def mx_softmax():
        need("softmax")
        (x,) = mx_inputs(sq)
        return mx_run(lambda: mx.softmax(x, axis=-1))

    def mx_sum(axis):
        def build():
            (x,) = mx_inputs(sq)
            return mx_run(lambda: mx.sum(x, axis=axis))

        return build

    def mx_matmul(n):
        def build():
            a, b = mx_inputs(*mats[n])
            return mx_run(lambda: a @ b)

        return build

    def mx_mlp():
        need("value_and_grad")
        params = mx_inputs(*mlp)
        x, y = mx_inputs(mlp_x, mlp_y)
        step = mx.value_and_grad(mx_mlp_loss)
        return mx_run(lambda: step(params, x, y))

    def mx_overhead():
        a, b = mx_inputs(*small)
        return ("per-op", lambda: mx.eval(a + b))

    def torch_inputs(*arrays, grad=False):
        return [torch.from_numpy(a.copy()).requires_grad_(grad) for a in arrays]

    def torch_mlp_build():
        params = torch_inputs(*mlp, grad=True)
        x, y = torch_inputs(mlp_x, mlp_y)
        return lambda: torch_mlp(params, x, y)

    a, b = big
    sq_t = (lambda: torch.from_numpy(sq))
    return [
        ("add 16M f32", lambda: mx_run(lambda x, y: x + y, *mx_inputs(a, b)),
         lambda: lambda: np.add(a, b),
         lambda: (lambda x, y: lambda: torch.add(x, y))(*torch_inputs(a, b))),
        ("exp 16M f32", lambda: mx_run(mx.exp, *mx_inputs(a)), lambda: lambda: np.exp(a),
         lambda: (lambda x: lambda: torch.exp(x))(*torch_inputs(a))),
        (f"sum all {ROWS}x{ROWS}", mx_sum(None), lambda: lambda: sq.sum(),
         lambda: (lambda x: lambda: x.sum())(sq_t())),
        (f"sum axis=0 {ROWS}x{ROWS}", mx_sum(0), lambda: lambda: sq.sum(axis=0),
         lambda: (lambda x: lambda: x.sum(0))(sq_t())),
        (f"sum axis=1 {ROWS}x{ROWS}", mx_sum(1), lambda: lambda: sq.sum(axis=1),
         lambda: (lambda x: lambda: x.sum(1))(sq_t())),
        ("matmul 1024 f32", mx_matmul(1024), lambda: lambda: mats[1024][0] @ mats[1024][1],
         lambda: (lambda x, y: lambda: x @ y)(*torch_inputs(*mats[1024]))),
        ("matmul 2048 f32", mx_matmul(2048), lambda: lambda: mats[2048][0] @ mats[2048][1],
         lambda: (lambda x, y: lambda: x @ y)(*torch_inputs(*mats[2048]))),
        (f"softmax rows {ROWS}x{ROWS}", mx_softmax, lambda: lambda: softmax_np(sq),
         lambda: (lambda x: lambda: torch.softmax(x, -1))(sq_t())),
        ("MLP fwd+bwd {batch}x{inputs}-{hidden}-{outputs}".format(**MLP), mx_mlp,
         lambda: lambda: np_mlp(mlp, mlp_x, mlp_y), torch_mlp_build),
        ("per-op overhead: a + b (16 el.)", mx_overhead,
         lambda: ("per-op", lambda: np.add(*small)),
         lambda: ("per-op", (lambda x, y: lambda: torch.add(x, y))(*torch_inputs(*small)))),
    ]


def measure(build):
    """Seconds per call, or the reason the workload cannot run."""
    try:
        fn = build()
    except (NotImplementedError, AttributeError, TypeError, ValueError) as e:
        return f"n/a ({e})"
    if isinstance(fn, tuple):
        return per_op(fn[1])
    return timeit(fn)


def fmt_time(s):
    if isinstance(s, str):
        return "n/a"
    return f"{s * 1e6:.2f} µs" if s < 1e-3 else f"{s * 1e3:.2f} ms"


def fmt_ratio(other, ours):
    if isinstance(other, str) or isinstance(ours, str):
        return "n/a"
    return f"{other / ours:.2f}x"


def import_library(library):
    global mx, torch
    if library == "mlx":
        import mlx.core

        mx = mlx.core
        if hasattr(mx, "set_default_device") and hasattr(mx, "cpu"):
            mx.set_default_device(mx.cpu)  # Apple MLX defaults to the GPU
        return f"mlx {getattr(mx, '__version__', '?')}"
    if library == "torch":
        import torch as t

        torch = t
        torch.set_grad_enabled(True)
        return f"PyTorch {torch.__version__}"
    return f"NumPy {np.__version__}"


def time_library(library, only):
    """{"label", "times"} of one library, timed in this process."""
    label = import_library(library)
    column = ("mlx", "numpy", "torch").index(library)
    times = {}
    for workload in workloads(np.random.default_rng(0)):
        name = workload[0]
        if only and only not in name:
            continue
        times[name] = measure(workload[1 + column])
        if isinstance(times[name], str):
            print(f"# {label}: {name}: {times[name]}", file=sys.stderr)
    return {"label": label, "times": times}


def time_in_subprocess(library, python, only):
    """time_library run by `python` in a new process; None when it cannot import the library."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        cmd = [python, os.path.abspath(__file__), "--worker", library, "--worker-out", out.name]
        if only:
            cmd += ["--only", only]
        if subprocess.run(cmd).returncode != 0:
            print(f"# {library}: not timed (see the error above)", file=sys.stderr)
            return None
        with open(out.name) as f:
            return json.load(f)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--libraries", default="mlx,numpy,torch",
                        help="comma-separated libraries to time (mlx, numpy, torch); the first "
                             "is the column others are compared with")
    parser.add_argument("--python", action="append", default=[], metavar="LIB=PATH",
                        help="interpreter that times LIB (default: this one)")
    parser.add_argument("--label", default=None, help="name of the mlx column")
    parser.add_argument("--save", help="write this run's mlx times to a JSON file")
    parser.add_argument("--add", action="append", default=[],
                        help="JSON file of another mlx run to show as an extra column")
    parser.add_argument("--only", help="run only workloads whose name contains this text")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--worker-out", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.worker:
        with open(args.worker_out, "w") as f:
            json.dump(time_library(args.worker, args.only), f)
        return

    pythons = dict(p.split("=", 1) for p in args.python)
    results = []
    for library in args.libraries.split(","):
        result = time_in_subprocess(library, pythons.get(library, sys.executable), args.only)
        if result is not None:
            if library == "mlx" and args.label:
                result["label"] = args.label
            results.append(result)
    if args.save:
        with open(args.save, "w") as f:
            json.dump(results[0], f, indent=1)
    for path in args.add:
        with open(path) as f:
            results.append(json.load(f))

    columns = {r["label"]: r["times"] for r in results}
    label = results[0]["label"]
    names = list(results[0]["times"])
    threads = os.environ.get("MLX_NUM_THREADS", "default")
    print(f"\n{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()}, MLX_NUM_THREADS={threads}; median times, "
          f"ratio = other / {label} (above 1: {label} is faster)\n")
    others = [c for c in columns if c != label]
    header = ["workload", label] + [h for c in others for h in (c, f"ratio {c}")]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for name in names:
        ours = columns[label].get(name, "n/a")
        cells = [name, fmt_time(ours)]
        for c in others:
            other = columns[c].get(name, "n/a")
            cells += [fmt_time(other), fmt_ratio(other, ours)]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
