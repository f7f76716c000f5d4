"""Peak memory of imported functions: Module.export(path, x, optimize_memory=False) against
optimize_memory=True (the memory plan), each imported and run in its own fresh process and
measured as mx.get_peak_memory() after mx.reset_peak_memory() (minus what was active then:
the weights and the input). Printed as one markdown table.

    PYTHONPATH=python .venv/bin/python benchmarks/bench_export_memory.py
"""
import json
import os
import subprocess
import sys
import tempfile

MODELS = """
import mlx.core as mx
import mlx.nn as nn


class Gated(nn.Module):
    # out = proj(x) * sigmoid(mean(relu(up(x)))): a squeeze-and-gate block.
    def __init__(self, d, wide):
        super().__init__()
        self.proj = nn.Linear(d, d)
        self.up = nn.Linear(d, wide)

    def __call__(self, x):
        return self.proj(x) * mx.sigmoid(mx.mean(nn.relu(self.up(x)), axis=-1, keepdims=True))


class Residual(nn.Module):
    # A pre-norm MLP block with a gated skip, four of them.
    def __init__(self, d, wide, n=4):
        super().__init__()
        self.blocks = [Gated(d, wide) for _ in range(n)]
        self.norms = [nn.LayerNorm(d) for _ in range(n)]

    def __call__(self, x):
        for norm, block in zip(self.norms, self.blocks):
            x = x + block(norm(x))
        return x


def build(name):
    mx.random.seed(0)
    if name == "gated block (512 x 1024, wide 4096)":
        return Gated(1024, 4096), mx.random.normal((512, 1024))
    if name == "4 residual gated blocks (256 x 512, wide 4096)":
        return Residual(512, 4096), mx.random.normal((256, 512))
    model = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024))
    return model, mx.random.normal((512, 1024))
"""

NAMES = [
    "gated block (512 x 1024, wide 4096)",
    "4 residual gated blocks (256 x 512, wide 4096)",
    "MLP 1024-4096-1024 (batch 512)",
]


def child(path, name):
    env = {}
    exec(MODELS, env)
    import mlx.core as mx
    import numpy as np

    _, x = env["build"](name)
    f = mx.import_function(path)
    mx.eval(x)
    out = f(x)[0]  # a warm-up run fills nothing we measure: the cache is cleared below
    mx.eval(out)
    del out
    mx.clear_cache()
    mx.synchronize()
    mx.reset_peak_memory()
    base = mx.get_active_memory()
    out = f(x)[0]
    mx.eval(out)
    peak = mx.get_peak_memory() - base
    print(json.dumps({"peak": peak, "checksum": float(np.array(out).astype(np.float64).sum())}))


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3])
        return
    env = {}
    exec(MODELS, env)
    import mlx.core as mx

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in NAMES:
            model, x = env["build"](name)
            mx.eval(model.parameters())
            results = {}
            for opt in (False, True):
                path = os.path.join(tmp, f"m{int(opt)}.mlx")
                model.export(path, x, optimize_memory=opt)
                out = subprocess.run(
                    [sys.executable, os.path.abspath(__file__), "--child", path, name],
                    capture_output=True, text=True, check=True, env=dict(os.environ),
                )
                results[opt] = json.loads(out.stdout.strip().splitlines()[-1])
            same = abs(results[False]["checksum"] - results[True]["checksum"]) <= 1e-3 * max(
                1.0, abs(results[False]["checksum"]))
            rows.append((name, results[False]["peak"], results[True]["peak"], same))
    print("| model | peak, optimize_memory=False | peak, optimize_memory=True | ratio | same output |")
    print("|---|---|---|---|---|")
    for name, a, b, same in rows:
        print(f"| {name} | {a / 2**20:.1f} MiB | {b / 2**20:.1f} MiB | {b / a:.2f} | {same} |")


if __name__ == "__main__":
    main()
