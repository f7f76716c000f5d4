"""compile's fusion on the CPU, in one run: uncompiled vs compiled without fusion vs compiled
with fusion (the blocked interpreter, backend/cpu/compiled.cpp) on GELU, an AdamW step,
layer_norm composed from primitives and a 12-op elementwise chain over 16 MB; the same chain
as generated C++ built by the system compiler (the alternative backend, measured here: its
build latency and its speed); first-call latencies; and the main job's training step against
PyTorch CPU eager (benchmarks/bench_lm.py's workers).

    python benchmarks/bench_compile.py [--torch-python /tmp/torch-venv/bin/python] [--lm-steps N]
"""
import argparse
import ctypes
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_common import timeit  # noqa: E402

import mlx.core as mx  # noqa: E402
import mlx.nn as nn  # noqa: E402
import mlx.optimizers as optim  # noqa: E402
from mlx.utils import tree_map  # noqa: E402


def chain(x):
    """12 elementwise ops."""
    y = x * 1.5 + 0.25
    y = mx.maximum(y, -2.0) * mx.minimum(y, 2.0)
    y = mx.abs(y) + 1.0
    y = y * y - x
    y = y / (mx.abs(x) + 2.0)
    return y * 0.5 - 1.0


CHAIN_CPP = r"""
#include <algorithm>
#include <cmath>
#include <cstdint>
extern "C" void chain(const float* x, float* out, int64_t n) {
  #pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i];
    float y = v * 1.5f + 0.25f;
    y = std::max(y, -2.0f) * std::min(y, 2.0f);
    y = std::fabs(y) + 1.0f;
    y = y * y - v;
    y = y / (std::fabs(v) + 2.0f);
    out[i] = y * 0.5f - 1.0f;
  }
}
"""


def generated_chain(n):
    """The chain as generated C++ (what a code generator would emit): build latency and a
    callable over NumPy buffers (one thread, as the generator would run per block)."""
    d = tempfile.mkdtemp()
    src, lib = os.path.join(d, "chain.cpp"), os.path.join(d, "chain.so")
    with open(src, "w") as f:
        f.write(CHAIN_CPP)
    t0 = time.perf_counter()
    subprocess.run(["c++", "-O3", "-march=native", "-shared", "-fPIC", src, "-o", lib],
                   check=True)
    build = time.perf_counter() - t0
    fn = ctypes.CDLL(lib).chain
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    out = np.empty_like(x)
    return build, lambda: fn(x.ctypes.data, out.ctypes.data, n)


def layer_norm(x, w, b):
    mu = mx.mean(x, axis=-1, keepdims=True)
    var = mx.mean(mx.square(x - mu), axis=-1, keepdims=True)
    return (x - mu) * mx.rsqrt(var + 1e-5) * w + b


def gelu(x):
    return 0.5 * x * (1 + mx.erf(x / math.sqrt(2.0)))


def adamw_case():
    model = nn.Sequential(nn.Linear(1024, 1024), nn.Linear(1024, 1024))
    opt = optim.AdamW(learning_rate=1e-3, weight_decay=0.1)
    opt.init(model.trainable_parameters())
    grads = tree_map(lambda p: mx.ones_like(p) * 1e-3, model.trainable_parameters())
    mx.eval(grads)
    state = [model.state, opt.state]

    def step(g):
        opt.update(model, g)

    def make(compiled):
        f = mx.compile(lambda g: step(g), inputs=state, outputs=state) if compiled else step
        return lambda: (f(grads), mx.eval(state))

    return make


def measure(name, fn, args, rows, latencies):
    """uncompiled / compiled unfused / compiled fused; fn must be a fresh function per call of
    mx.compile (traces are cached per Python function)."""
    times = {}
    times["uncompiled"] = timeit(lambda: mx.eval(fn(*args)))
    mx._set_fusion(False)
    unfused = mx.compile(lambda *a: fn(*a))
    times["compiled"] = timeit(lambda: mx.eval(unfused(*args)))
    mx._set_fusion(True)
    fused = mx.compile(lambda *a: fn(*a))
    t0 = time.perf_counter()
    mx.eval(fused(*args))
    first = time.perf_counter() - t0
    times["fused"] = timeit(lambda: mx.eval(fused(*args)))
    latencies.append((name, first, times["fused"]))
    rows.append((name, times))


def lm_rows(torch_python, steps):
    """tokens/s of the main job's step: fused, unfused (MLX_DISABLE_FUSION=1), PyTorch eager."""
    out = []
    runs = [("ours, compiled + fused", sys.executable, {}),
            ("ours, compiled, fusion off", sys.executable, {"MLX_DISABLE_FUSION": "1"})]
    if torch_python and os.path.exists(torch_python):
        runs.append(("PyTorch eager", torch_python, {}))
    import json

    for label, python, extra in runs:
        with tempfile.NamedTemporaryFile(suffix=".json") as tmp:
            kind = "torch" if label.startswith("PyTorch") else "mlx"
            cmd = [python, os.path.join(HERE, "bench_lm.py"), "--worker", kind, "--worker-steps",
                   str(steps), "--worker-out", tmp.name]
            env = dict(os.environ, **extra)
            r = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True)
            if r.returncode != 0:
                print(f"# {label}: failed: {r.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
                continue
            with open(tmp.name) as f:
                out.append((label, json.load(f)))
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--torch-python", default="/tmp/torch-venv/bin/python")
    p.add_argument("--lm-steps", type=int, default=12)
    args = p.parse_args()
    rng = np.random.default_rng(0)
    rows, latencies = [], []
    x16 = mx.array(rng.standard_normal(4 << 20).astype(np.float32))  # 16 MB
    act = mx.array(rng.standard_normal((2048, 1024)).astype(np.float32))
    w, b = mx.ones((1024,)), mx.zeros((1024,))
    mx.eval(x16, act, w, b)
    measure("12-op chain, 16 MB float32", chain, (x16,), rows, latencies)
    measure("GELU (erf composition), 8 MB", gelu, (act,), rows, latencies)
    measure("GELU tanh approximation, 8 MB", nn.gelu_approx, (act,), rows, latencies)
    measure("layer_norm from primitives, 8 MB", layer_norm, (act, w, b), rows, latencies)
    make = adamw_case()
    times = {"uncompiled": timeit(make(False))}
    mx._set_fusion(False)
    times["compiled"] = timeit(make(True))
    mx._set_fusion(True)
    f = make(True)
    t0 = time.perf_counter()
    f()
    latencies.append(("AdamW step, 2.1M parameters", time.perf_counter() - t0, timeit(f)))
    times["fused"] = latencies[-1][2]
    rows.append(("AdamW step, 2.1M parameters", times))

    print(f"\nCPU, {os.cpu_count()} cores; median ms per call\n")
    print("| workload | uncompiled | compiled, no fusion | compiled + fused | fused vs uncompiled |")
    print("|---|---|---|---|---|")
    for name, t in rows:
        print(f"| {name} | {t['uncompiled'] * 1e3:.2f} | {t['compiled'] * 1e3:.2f} | "
              f"{t['fused'] * 1e3:.2f} | {t['uncompiled'] / t['fused']:.2f}x |")

    build, run = generated_chain(x16.size)
    t_gen = timeit(run)
    t_fused = rows[0][1]["fused"]
    print("\n12-op chain over 16 MB: fused interpreter vs generated C++ (system compiler)\n")
    print("| backend | build latency | ms per call |")
    print("|---|---|---|")
    print(f"| blocked interpreter (all threads) | none (IR interpreted) | {t_fused * 1e3:.2f} |")
    print(f"| generated C++, -O3 -march=native, one thread | {build * 1e3:.0f} ms | "
          f"{t_gen * 1e3:.2f} |")

    print("\nFirst call (trace + fusion + run) vs a later call\n")
    print("| function | first call ms | later call ms |")
    print("|---|---|---|")
    for name, first, later in latencies:
        print(f"| {name} | {first * 1e3:.1f} | {later * 1e3:.2f} |")

    if args.lm_steps > 0:
        lm = lm_rows(args.torch_python, args.lm_steps)
        if lm:
            ours = lm[0][1]["tokens_per_s"]
            print(f"\nMain job training step (bench_lm.py model), {args.lm_steps} steps, "
                  "steady tokens/s\n")
            print("| implementation | tokens/s | relative to fused |")
            print("|---|---|---|")
            for label, r in lm:
                print(f"| {label} | {r['tokens_per_s']:,.0f} | {r['tokens_per_s'] / ours:.2f}x |")


if __name__ == "__main__":
    main()
