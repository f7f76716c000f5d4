"""What `import mlx.core` costs a process: wall time and resident memory right after the import,
for this build and, in the same run, for other interpreters that import an `mlx.core` (Apple's
MLX in its own venv) or torch. Each import runs in a fresh process, best (smallest) of --rounds,
alternating; a CPU-only process must not pay for the GPU's libraries (lazy_libraries.cpp).

    PYTHONPATH=python .venv/bin/python benchmarks/bench_import.py \\
        --python apple=/path/to/apple-mlx-venv/bin/python --python torch=/path/to/torch-venv/bin/python
"""
import argparse
import json
import os
import subprocess
import sys

PROBE = """
import json, sys, time
start = time.perf_counter()
import {module}
seconds = time.perf_counter() - start
rss = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmRSS"))
print(json.dumps({{"ms": seconds * 1e3, "rss_mb": rss / 1024}}))
"""


def measure(python, module, env):
    out = subprocess.run([python, "-c", PROBE.format(module=module)], capture_output=True,
                         text=True, env=env, timeout=120)
    if out.returncode != 0:
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--python", action="append", default=[],
                   help="label=interpreter: another import to measure (torch imports torch)")
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args()
    ours_env = dict(os.environ)
    others_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    runs = [("ours", sys.executable, "mlx.core", ours_env)]
    for spec in args.python:
        label, python = spec.split("=", 1)
        runs.append((label, python, "torch" if label == "torch" else "mlx.core", others_env))
    best = {}
    for _ in range(args.rounds):
        for label, python, module, env in runs:
            r = measure(python, module, env)
            if r and (label not in best or r["ms"] < best[label]["ms"]):
                best[label] = {"ms": r["ms"], "rss_mb": min(r["rss_mb"], best.get(label, r)["rss_mb"])}
    print(f"import cost, best of {args.rounds} fresh processes each\n")
    print("| import | wall ms | resident MB after |")
    print("|---|---:|---:|")
    for label, python, module, _ in runs:
        r = best.get(label)
        name = f"{label} (`import {module}`)"
        print(f"| {name} | {r['ms']:.1f} | {r['rss_mb']:.0f} |" if r else f"| {name} | failed | |")


if __name__ == "__main__":
    main()
