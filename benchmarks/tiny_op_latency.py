"""Where a tiny op's eval round trip goes on the GPU: ours (build only, build + async_eval,
build + eval) against the floor of the same work in CuPy and PyTorch (launch one tiny add, wait
for the stream), measured in one run. Run on the GPU machine: python3 benchmarks/tiny_op_latency.py
"""
import time

import mlx.core as mx


def per_call_us(fn, n=5000):
    for _ in range(200):
        fn()
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n * 1e6


def host_speed():
    """The host's own speed, to tell a slow machine from a slow path: pure Python, and the same
    op built for the CPU, which touches no CUDA code."""

    def python_loop():
        total = 0
        for i in range(100):
            total += i

    c = mx.ones((4,), stream=mx.cpu)
    mx.eval(c)
    state = {"y": c}

    def build_cpu():
        state["y"] = mx.add(c, c, stream=mx.cpu)

    return {
        "Python: 100-iteration loop": per_call_us(python_loop),
        "ours: build one op (CPU stream)": per_call_us(build_cpu),
    }


def ours():
    s = mx.ones((4,), stream=mx.gpu)
    mx.eval(s)
    state = {"y": s}

    def build():
        state["y"] = s + s

    def build_async():
        y = s + s
        mx.async_eval(y)

    def build_eval():
        y = s + s
        mx.eval(y)

    res = {"ours: build one op": per_call_us(build)}
    res["ours: build + async_eval"] = per_call_us(build_async)
    mx.synchronize()
    res["ours: build + eval"] = per_call_us(build_eval)
    return res


def cupy_floor():
    try:
        import cupy as cp
    except ImportError:
        return {}
    a = cp.ones(4, dtype=cp.float32)
    stream = cp.cuda.get_current_stream()

    def step():
        _ = a + a
        stream.synchronize()

    return {"CuPy: add + stream sync": per_call_us(step)}


def torch_floor():
    try:
        import torch
    except ImportError:
        return {}
    a = torch.ones(4, device="cuda")

    def step():
        _ = a + a
        torch.cuda.synchronize()

    return {"PyTorch: add + synchronize": per_call_us(step)}


if __name__ == "__main__":
    rows = {}
    for f in (host_speed, ours, cupy_floor, torch_floor):
        rows.update(f())
    print(f"{'round trip':32s} {'us':>8s}")
    for k, v in rows.items():
        print(f"{k:32s} {v:8.2f}")
