"""What the comparison benchmarks share: timing, one process per library, alternating rounds
(each library's best round), and the command line (--torch-python, --rounds, --threads)."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def timeit(fn, min_time=0.5, max_reps=50):
    fn()
    times = []
    start = time.perf_counter()
    while len(times) < 3 or (time.perf_counter() - start < min_time and len(times) < max_reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def cuda_timeit(torch, fn, min_time=0.3, max_reps=30):
    """timeit of fn() on a CUDA device, each call waited for."""

    def step():
        fn()
        torch.cuda.synchronize()

    return timeit(step, min_time, max_reps)


def per_call(fn, sync, min_time=0.2):
    """Seconds per call of fn() queued back to back (at least 10 calls and min_time seconds
    after 3 warm-up calls), sync() waiting for the device after the last."""
    for _ in range(3):
        fn()
    sync()
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < min_time or n < 10:
        fn()
        n += 1
    sync()
    return (time.perf_counter() - start) / n


def run_worker(python, library, script=__file__, threads=None, pythonpath="", args=(),
               timeout=None):
    """The results of `script`'s worker, or None when `python` cannot run it (no PyTorch), it
    fails, or it runs past `timeout` seconds. `pythonpath` replaces PYTHONPATH for the worker
    (None removes it; "" keeps ours); `args` are more arguments for it."""
    env = dict(os.environ)
    if pythonpath is None:
        env.pop("PYTHONPATH", None)
    elif pythonpath:
        env["PYTHONPATH"] = pythonpath
    if threads:
        env.update(BENCH_THREADS=str(threads), MLX_NUM_THREADS=str(threads),
                   OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
    with tempfile.NamedTemporaryFile(suffix=".json") as tmp:
        cmd = [python, os.path.abspath(script), "--worker", library, "--worker-out", tmp.name]
        try:
            r = subprocess.run(cmd + list(args), capture_output=True, text=True, env=env,
                               timeout=timeout)
        except subprocess.TimeoutExpired:
            print(f"# {library} not measured: still running after {timeout} s", file=sys.stderr)
            return None
        if r.returncode != 0:
            print(f"# {library} not measured: {r.stderr.strip().splitlines()[-1:]}",
                  file=sys.stderr)
            return None
        with open(tmp.name) as f:
            return json.load(f)


def best(runs):
    """Per entry, the fastest of the rounds (the least disturbed by other load)."""
    runs = [r for r in runs if r]
    if not runs:
        return None
    out = {}
    for name in runs[0]:
        out[name] = {k: min(r[name][k] for r in runs) for k in runs[0][name]}
    return out


def parse_args(add_options=None):
    """The shared command line (--torch-python, --rounds, --threads), with `add_options(parser)`'s
    own options when given."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--torch-python", default=None, help="interpreter with PyTorch")
    ap.add_argument("--rounds", type=int, default=3,
                    help="alternating rounds of both libraries; the table shows each one's best")
    ap.add_argument("--threads", type=int, default=None, help="threads per library")
    ap.add_argument("--worker", choices=["torch", "mlx"], help=argparse.SUPPRESS)
    ap.add_argument("--worker-out", help=argparse.SUPPRESS)
    if add_options:
        add_options(ap)
    return ap.parse_args()


def compare(script, run_mlx, run_torch, args=None):
    """Runs `script`'s workers (or, in a worker process, one of them) and returns
    (ours, theirs, PyTorch version, threads): per workload the best round's seconds.
    With `args` (parse_args with the script's options) the workers get the same command line
    and run_mlx / run_torch are called with it."""
    call = (lambda f: f()) if args is None else (lambda f: f(args))
    forwarded = () if args is None else sys.argv[1:]
    args = args or parse_args()
    if args.worker:
        result = call(run_torch) if args.worker == "torch" else {"times": call(run_mlx)}
        with open(args.worker_out, "w") as f:
            json.dump(result, f)
        sys.exit(0)
    runs = {"torch": [], "mlx": []}
    version = None
    for _ in range(args.rounds):
        for lib, py in (("torch", args.torch_python or sys.executable), ("mlx", sys.executable)):
            res = run_worker(py, lib, script, threads=args.threads, args=forwarded)
            if res:
                version = res.get("version", version)
                runs[lib].append(res["times"])
    if not runs["mlx"]:
        sys.exit("ours not measured: see the worker's error above")
    return best(runs["mlx"]), best(runs["torch"]) or {}, version, args.threads or os.cpu_count()


def print_table(first_column, names, ours, theirs, version):
    """One row per workload (entries {"t": seconds}): ours, PyTorch's, and their ratio."""
    print(f"| {first_column} | ours ms | PyTorch {version} ms | ratio (PyTorch / ours) |")
    print("|---|---|---|---|")
    for name in names:
        o = ours[name]["t"] * 1e3
        t = theirs.get(name, {}).get("t")
        ts = f"{t * 1e3:.3f}" if t else "n/a"
        ratio = f"{t * 1e3 / o:.2f}x" if t else "n/a"
        print(f"| {name} | {o:.3f} | {ts} | {ratio} |")
