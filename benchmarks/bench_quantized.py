"""Quantized matrix-vector products (4096 x 4096, batch 1; the decode step of LLM inference):
mlx.core quantized_matmul against PyTorch CPU's packed int4 / int8 products and its dense
float32 product, each library in its own process, printed as one markdown table.

    PYTHONPATH=python .venv/bin/python benchmarks/bench_quantized.py --torch-python /path/bin/python
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import compare, print_table, timeit  # noqa: E402

N = K = 4096


def run_mlx():
    import numpy as np

    import mlx.core as mx

    rng = np.random.default_rng(0)
    w = mx.array(rng.standard_normal((N, K)).astype(np.float32))
    out = {}
    for batch in (1, 8):
        x = mx.array(rng.standard_normal((batch, K)).astype(np.float32))
        mx.eval(x)
        for bits in (4, 8):
            wq, s, b = mx.quantize(w, 64, bits)
            mx.eval(wq, s, b)
            out[f"{bits}-bit, batch {batch}"] = {
                "t": timeit(lambda: mx.eval(mx.quantized_matmul(x, wq, s, b, group_size=64,
                                                                bits=bits)))}
        out[f"float32 dense, batch {batch}"] = {"t": timeit(lambda: mx.eval(x @ w.T))}
    return out


def run_torch():
    import numpy as np
    import torch

    torch.set_num_threads(int(os.environ.get("BENCH_THREADS", os.cpu_count())))
    rng = np.random.default_rng(0)
    w = torch.tensor(rng.standard_normal((N, K)).astype(np.float32))
    out = {}
    with torch.no_grad():
        for batch in (1, 8):
            x = torch.tensor(rng.standard_normal((batch, K)).astype(np.float32))
            out[f"float32 dense, batch {batch}"] = {"t": timeit(lambda: x @ w.T)}
            # int8 weights with one scale per output row.
            try:
                scales = w.abs().amax(1) / 127
                w8 = torch.round(w / scales[:, None]).to(torch.int8)
                out[f"8-bit, batch {batch}"] = {
                    "t": timeit(lambda: torch._weight_int8pack_mm(x, w8, scales))}
            except Exception as e:  # noqa: BLE001 - an op missing from this PyTorch build
                print(f"# torch int8: {e}", file=sys.stderr)
            # int4 weights in groups of 64 (tinygemm's CPU layout).
            try:
                q = torch.randint(0, 16, (N, K), dtype=torch.int32)
                packed = torch._convert_weight_to_int4pack_for_cpu(q, 1)
                sz = torch.rand(K // 64, N, 2, dtype=torch.float32)
                out[f"4-bit, batch {batch}"] = {
                    "t": timeit(lambda: torch._weight_int4pack_mm_for_cpu(x, packed, 64, sz))}
            except Exception as e:  # noqa: BLE001
                print(f"# torch int4: {e}", file=sys.stderr)
    return {"version": torch.__version__, "times": out}


def main():
    ours, theirs, version, threads = compare(__file__, run_mlx, run_torch)
    print(f"{N}x{K} weight, float32 activations, {threads} thread(s) each, best of alternating "
          "rounds; ms per call; PyTorch's 4-bit: _weight_int4pack_mm_for_cpu (groups of 64), "
          "8-bit: _weight_int8pack_mm (per-row scales)\n")
    print_table("product", list(ours), ours, theirs, version)


if __name__ == "__main__":
    main()
