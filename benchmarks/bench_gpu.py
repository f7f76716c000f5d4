"""GPU figures of issue 10, ours against PyTorch, measured in one run on the GPU machine.

Each library runs in its own process (TF32 on and off as separate processes, since both
libraries read the switch once). Prints a table with ratios ours / PyTorch (higher is better
for rates, lower for times). Run: python3 benchmarks/bench_gpu.py [--small]
"""
import json
import os
import subprocess
import sys
import time

import numpy as np

SMALL = "--small" in sys.argv


def median(ts):
    ts = sorted(ts)
    return ts[len(ts) // 2]


def run_ours(tf32):
    import mlx.core as mx

    def bench(fn, warm=3, iters=20):
        for _ in range(warm):
            mx.eval(fn())
        mx.synchronize()
        ts = []
        for _ in range(iters):
            t = time.perf_counter()
            mx.eval(fn())
            mx.synchronize()
            ts.append(time.perf_counter() - t)
        return median(ts)

    def to_device(h):  # a NumPy array read by a GPU op: one host-to-device copy
        y = mx.array(h) * 1.0
        mx.eval(y)
        return y

    return figures(mx, bench, tf32, lambda x: x.T, mx.contiguous, mx.random.normal,
                   lambda a: mx.eval(a), lambda: mx.synchronize(), mx.bfloat16, mx.float32,
                   lambda x, dt: x.astype(dt), to_device, lambda d: np.array(d))


def run_torch(tf32):
    import torch

    torch.backends.cuda.matmul.allow_tf32 = tf32

    def bench(fn, warm=3, iters=20):
        for _ in range(warm):
            fn()
        torch.cuda.synchronize()
        ts = []
        for _ in range(iters):
            s = torch.cuda.Event(enable_timing=True)
            e = torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            torch.cuda.synchronize()
            ts.append(s.elapsed_time(e) / 1e3)
        return median(ts)

    normal = lambda shape: torch.randn(*shape, device="cuda")
    return figures(torch, bench, tf32, lambda x: x.t(), lambda x: x.contiguous(), normal,
                   lambda a: None, torch.cuda.synchronize, torch.bfloat16, torch.float32,
                   lambda x, dt: x.to(dt), lambda h: torch.from_numpy(h).cuda() * 1.0,
                   lambda d: d.cpu().numpy())


def transfer_figures(to_device, to_host, sync):
    """Host-to-device and back of 256 MiB of float32 from / to pageable NumPy memory, timed on
    the host (the copy is the work; both sides include one elementwise kernel)."""
    n = (1 << 16) if SMALL else (1 << 26)
    h = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    res = {}
    on_device = to_device(h)
    for key, fn in [("h2d_fp32_256MiB_GBps", lambda: to_device(h)),
                    ("d2h_fp32_256MiB_GBps", lambda: to_host(on_device))]:
        ts = []
        for _ in range(6):
            sync()
            t = time.perf_counter()
            fn()
            sync()
            ts.append(time.perf_counter() - t)
        res[key] = 4 * n / median(ts[1:]) / 1e9
    return res


def figures(lib, bench, tf32, transpose, contiguous, normal, evaluate, sync, bf16, fp32, cast,
            to_device, to_host):
    res = {}
    if tf32:
        n = 256 if SMALL else 4096
        a, b = normal((n, n)), normal((n, n))
        evaluate(a), evaluate(b)
        res["matmul_fp32_tf32_TFLOPs"] = 2 * n**3 / bench(lambda: a @ b) / 1e12
        return res
    res.update(transfer_figures(to_device, to_host, sync))
    n = (1 << 16) if SMALL else (1 << 28)
    a, b = normal((n,)), normal((n,))
    evaluate(a), evaluate(b)
    res["add_fp32_256M_GBps"] = 12 * n / bench(lambda: a + b) / 1e9
    del a, b
    r = 256 if SMALL else 16384
    x = normal((r, r))
    evaluate(x)
    res["transpose_copy_fp32_GBps"] = 8 * r * r / bench(lambda: contiguous(transpose(x))) / 1e9
    res["sum_rows_fp32_GBps"] = 4 * r * r / bench(lambda: x.sum(1)) / 1e9
    res["sum_cols_fp32_GBps"] = 4 * r * r / bench(lambda: x.sum(0)) / 1e9
    del x
    for dt, name, m in [(bf16, "bf16", 8192), (fp32, "fp32", 4096)]:
        m = 256 if SMALL else m
        p, q = cast(normal((m, m)), dt), cast(normal((m, m)), dt)
        evaluate(p), evaluate(q)
        res[f"matmul_{name}_{m}_TFLOPs"] = 2 * m**3 / bench(lambda: p @ q) / 1e12
        del p, q
    # Per-op overhead, as ../shared/bench measures it for Apple MLX: 20000 chained tiny adds
    # evaluated once (per add), and a tiny add evaluated each time (per add).
    s = normal((4,))
    evaluate(s)
    sync()

    def chain(n, each):
        y = s
        for _ in range(n):
            y = y + s
            if each:
                evaluate(y)
                if lib.__name__ == "torch":
                    sync()
        evaluate(y)
        sync()

    for each, n, key in [(False, 20000, "lazy_tiny_op_us"), (True, 2000, "tiny_op_plus_eval_us")]:
        chain(n, each)
        start = time.perf_counter()
        chain(n, each)
        res[key] = (time.perf_counter() - start) / n * 1e6
    return res


if __name__ == "__main__":
    if "--child" in sys.argv:
        lib, tf32 = sys.argv[sys.argv.index("--child") + 1], "--tf32" in sys.argv
        out = run_ours(tf32) if lib == "ours" else run_torch(tf32)
        print(json.dumps(out))
        sys.exit(0)
    results = {}
    for lib in ("ours", "torch"):
        for tf32 in (False, True):
            env = dict(os.environ)
            if tf32:
                env["MLX_ENABLE_TF32"] = "1"
            cmd = [sys.executable, __file__, "--child", lib] + (["--tf32"] if tf32 else [])
            cmd += ["--small"] if SMALL else []
            p = subprocess.run(cmd, env=env, capture_output=True, text=True)
            if p.returncode != 0:
                print(p.stderr[-2000:], file=sys.stderr)
                continue
            results.setdefault(lib, {}).update(json.loads(p.stdout.strip().splitlines()[-1]))
    ours, torch = results.get("ours", {}), results.get("torch", {})
    print(f"{'figure':32s} {'ours':>10s} {'PyTorch':>10s} {'ours/PyTorch':>13s}")
    for key in dict.fromkeys(list(ours) + list(torch)):
        o, t = ours.get(key), torch.get(key)
        ratio = f"{o / t:.2f}" if o and t else "-"
        fo = f"{o:.2f}" if o is not None else "-"
        ft = f"{t:.2f}" if t is not None else "-"
        print(f"{key:32s} {fo:>10s} {ft:>10s} {ratio:>13s}")
    print(json.dumps(results))
