"""Decoding's attention on the GPU: one new token's queries against a KV cache (bf16), ours
against PyTorch's scaled_dot_product_attention (enable_gqa) in the same run. GB/s counts the
cache bytes read (K and V), the floor of the operation; ratio = ours / PyTorch (> 1: faster).
MLX_SDPA_DECODE=0 measures our flash kernels on the same calls instead of the decoding kernel.

    python3 benchmarks/bench_decode_attention.py
"""
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import per_call  # noqa: E402

# (batch, query heads, cache heads, head dim, cache length)
CASES = [(1, 32, 8, 128, 1024), (1, 32, 8, 128, 4096), (1, 32, 8, 128, 16384),
         (1, 32, 8, 128, 65536), (8, 32, 8, 128, 4096), (8, 32, 8, 128, 16384),
         (1, 32, 32, 128, 16384), (16, 12, 12, 64, 1024), (1, 64, 8, 128, 8192)]


def ours(case, arrays):
    import mlx.core as mx

    q, k, v = (mx.array(a).astype(mx.bfloat16) for a in arrays)
    mx.eval(q, k, v)
    scale = 1 / math.sqrt(case[3])
    # Queued without waiting, as PyTorch's calls are; the loop ends with a synchronize.
    return per_call(lambda: mx.async_eval(mx.fast.scaled_dot_product_attention(q, k, v, scale=scale)),
                    mx.synchronize)


def torch_time(case, arrays):
    import torch

    q, k, v = (torch.from_numpy(a).to("cuda", torch.bfloat16) for a in arrays)
    gqa = case[1] != case[2]
    f = torch.nn.functional.scaled_dot_product_attention
    with torch.no_grad():
        return per_call(lambda: f(q, k, v, enable_gqa=gqa), torch.cuda.synchronize)


def main():
    try:
        import torch  # noqa: F401
        have_torch = True
    except ImportError:
        have_torch = False
    rng = np.random.default_rng(0)
    print("| batch | heads q/kv | D | cache | ours µs | ours GB/s | PyTorch µs | PyTorch GB/s | ratio |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for case in CASES:
        b, hq, hkv, d, t = case
        arrays = [rng.standard_normal(s, dtype=np.float32)
                  for s in ((b, hq, 1, d), (b, hkv, t, d), (b, hkv, t, d))]
        cache_bytes = 2 * b * hkv * t * d * 2
        t_ours = ours(case, arrays)
        row = f"| {b} | {hq}/{hkv} | {d} | {t} | {t_ours * 1e6:.1f} | {cache_bytes / t_ours / 1e9:.0f} |"
        if have_torch:
            t_torch = torch_time(case, arrays)
            row += f" {t_torch * 1e6:.1f} | {cache_bytes / t_torch / 1e9:.0f} | {t_torch / t_ours:.2f}x |"
        else:
            row += " | | |"
        print(row, flush=True)


if __name__ == "__main__":
    main()
