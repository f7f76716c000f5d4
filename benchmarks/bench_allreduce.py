"""All-reduce bandwidth over loopback: mx.distributed.all_sum on the ring and MPI backends
beside mpi4py's Allreduce (same OpenMPI), float32 messages of 1 KiB to 256 MiB, in one run.

    python benchmarks/bench_allreduce.py --mpi4py-python /tmp/mpi4py-venv/bin/python [-n 2]

mpi4py lives in its own venv (``pip install numpy mpi4py``); without it that column is
empty. Each library runs in its own job, alternating over --rounds rounds; a size's time is
the best round's median. Bus bandwidth = 2 (n - 1) / n * bytes / time (the bytes each rank
sends and receives in a ring all-reduce), as NCCL's tests report it.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SIZES = [1 << k for k in range(10, 29, 2)]  # 1 KiB .. 256 MiB


def measure(allreduce, barrier, nbytes):
    """Median seconds per call. The repetitions depend on the size alone, so that every rank
    makes the same number of calls."""
    reps = max(3, min(50, (64 << 20) // nbytes))
    allreduce()
    times = []
    for _ in range(reps):
        barrier()
        t0 = time.perf_counter()
        allreduce()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def worker_mlx():
    import mlx.core as mx

    g = mx.distributed.init(strict=True)
    tiny = mx.zeros((1,))
    results = {}
    for nbytes in SIZES:
        x = mx.ones((nbytes // 4,))
        mx.eval(x)
        results[nbytes] = measure(lambda: mx.eval(mx.distributed.all_sum(x, group=g)),
                                  lambda: mx.eval(mx.distributed.all_sum(tiny, group=g)), nbytes)
    return g.rank(), g.size(), results


def worker_mpi4py():
    import numpy as np
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    results = {}
    for nbytes in SIZES:
        src = np.ones(nbytes // 4, np.float32)
        dst = np.empty_like(src)
        results[nbytes] = measure(lambda: comm.Allreduce(src, dst, op=MPI.SUM), comm.Barrier,
                                  nbytes)
    return comm.Get_rank(), comm.Get_size(), results


def run_job(kind, args, out):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    worker = "mpi4py" if kind == "mpi4py" else "mlx"
    me = [os.path.abspath(__file__), "--worker", worker, "--out", out]
    if kind == "mpi4py":
        env.pop("PYTHONPATH")
        cmd = ["mpirun", "-np", str(args.n), "--oversubscribe"]
        if os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
        cmd += [args.mpi4py_python] + me
    else:
        backend = kind.split("-")[1]
        cmd = [sys.executable, "-m", "mlx.launch", "--backend", backend, "-n", str(args.n),
               sys.executable] + me
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        print(f"# {kind} failed: {r.stdout.strip()[-1500:]} {r.stderr.strip()[-1500:]}", file=sys.stderr)
        return None
    with open(out) as f:
        return {int(k): v for k, v in json.load(f).items()}


def fmt_size(b):
    return f"{b >> 20} MiB" if b >= 1 << 20 else f"{b >> 10} KiB"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=2, help="ranks (local processes)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--mpi4py-python", default=None, help="a python that has mpi4py")
    ap.add_argument("--worker", default=None)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if args.worker:
        rank, size, results = {"mlx": worker_mlx, "mpi4py": worker_mpi4py}[args.worker]()
        if rank == 0:
            with open(args.out, "w") as f:
                json.dump(results, f)
        return
    kinds = ["mlx-ring"]
    if shutil.which("mpirun"):
        kinds.append("mlx-mpi")
        if args.mpi4py_python:
            kinds.append("mpi4py")
    best = {k: {} for k in kinds}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.rounds):
            for kind in kinds:
                got = run_job(kind, args, os.path.join(tmp, kind + ".json"))
                for nbytes, t in (got or {}).items():
                    best[kind][nbytes] = min(t, best[kind].get(nbytes, float("inf")))
    n = args.n
    print(f"all-reduce (sum, float32) over loopback, {n} ranks on {os.cpu_count()} cores: "
          "time per call, bus bandwidth GB/s")
    header = "| size | " + " | ".join(f"{k} time | {k} GB/s" for k in kinds) + " |"
    print(header)
    print("|" + "---|" * (1 + 2 * len(kinds)))
    for nbytes in SIZES:
        cells = []
        for k in kinds:
            t = best[k].get(nbytes)
            if t is None:
                cells += ["-", "-"]
                continue
            bw = 2 * (n - 1) / n * nbytes / t / 1e9
            cells += [f"{t * 1e6:,.0f} us" if t < 1e-2 else f"{t * 1e3:,.1f} ms", f"{bw:.2f}"]
        print(f"| {fmt_size(nbytes)} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
