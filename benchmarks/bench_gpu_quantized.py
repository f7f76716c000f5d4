"""Quantized products on the GPU: our 4-bit and 8-bit affine quantized_matmul (bfloat16
activations, group size 64) against PyTorch's bfloat16 dense matmul of the same shape and, for
4 bits, PyTorch's own int4 product, measured in one run. Decode (1 row) is bound by reading the
weights: the table gives the time and the weights' read rate (packed codes + scales + biases,
or the dense bfloat16 matrix). Run on the GPU machine: python3 benchmarks/bench_gpu_quantized.py
"""
import time


def median(ts):
    ts = sorted(ts)
    return ts[len(ts) // 2]


def ours(rows, n, k, bits):
    import mlx.core as mx

    w = mx.random.normal((n, k)).astype(mx.bfloat16)
    wq, s, b = mx.quantize(w, group_size=64, bits=bits)
    x = mx.random.normal((rows, k)).astype(mx.bfloat16)
    mx.eval(wq, s, b, x)
    f = lambda: mx.quantized_matmul(x, wq, s, b, transpose=True, group_size=64, bits=bits)
    for _ in range(5):
        mx.eval(f())
    mx.synchronize()
    ts = []
    for _ in range(30):
        t = time.perf_counter()
        y = None
        for _ in range(10):
            y = f()
            mx.async_eval(y)
        mx.eval(y)
        mx.synchronize()
        ts.append((time.perf_counter() - t) / 10)
    nbytes = wq.nbytes + s.nbytes + b.nbytes
    return median(ts), nbytes


def cuda_median(torch, f):
    """Median seconds of f() over 30 batches of 10 calls, by CUDA events."""
    for _ in range(5):
        f()
    torch.cuda.synchronize()
    ts = []
    for _ in range(30):
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(10):
            f()
        e.record()
        torch.cuda.synchronize()
        ts.append(s.elapsed_time(e) / 1e3 / 10)
    return median(ts)


def torch_dense(rows, n, k):
    import torch

    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(rows, k, device="cuda", dtype=torch.bfloat16)
    return cuda_median(torch, lambda: x @ w.T), w.numel() * 2


def torch_int4(rows, n, k):
    """PyTorch's own 4-bit product (tinygemm's _weight_int4pack_mm: bfloat16, groups of 64),
    or None where this build lacks it."""
    import torch

    try:
        q = torch.randint(0, 16, (n, k), dtype=torch.int32, device="cuda")
        packed = torch._convert_weight_to_int4pack((q[:, ::2] << 4 | q[:, 1::2]).to(torch.uint8), 8)
        sz = torch.rand(k // 64, n, 2, device="cuda", dtype=torch.bfloat16)
        x = torch.randn(rows, k, device="cuda", dtype=torch.bfloat16)
        f = lambda: torch._weight_int4pack_mm(x, packed, 64, sz)
        f()
    except Exception as e:  # noqa: BLE001 - an op missing from this PyTorch build
        print(f"# torch int4: {e}".splitlines()[0])
        return None
    return cuda_median(torch, f), packed.nbytes + sz.nbytes


def main():
    print("time per call (us), the weights' read rate (GB/s), speedup = PyTorch / ours; "
          "PyTorch's int4 is tinygemm's _weight_int4pack_mm")
    print(f"{'case':34s} {'ours us':>9s} {'GB/s':>7s} {'torch bf16 us':>14s} {'GB/s':>7s} "
          f"{'speedup':>8s} {'torch int4 us':>14s} {'GB/s':>7s} {'speedup':>8s}")
    for rows, n, k in [(1, 4096, 4096), (1, 14336, 4096), (8, 4096, 4096), (512, 4096, 4096)]:
        for bits in (4, 8):
            t_ours, b_ours = ours(rows, n, k, bits)
            t_torch, b_torch = torch_dense(rows, n, k)
            name = f"{bits}-bit x({rows},{k}) @ W({n},{k}).T"
            line = (f"{name:34s} {t_ours * 1e6:9.1f} {b_ours / t_ours / 1e9:7.0f} "
                    f"{t_torch * 1e6:14.1f} {b_torch / t_torch / 1e9:7.0f} {t_torch / t_ours:8.2f}")
            int4 = torch_int4(rows, n, k) if bits == 4 else None
            if int4:
                t4, b4 = int4
                line += f" {t4 * 1e6:14.1f} {b4 / t4 / 1e9:7.0f} {t4 / t_ours:8.2f}"
            print(line)


if __name__ == "__main__":
    main()
