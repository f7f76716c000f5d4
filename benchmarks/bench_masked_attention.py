"""scaled_dot_product_attention with mask arrays on the GPU, ours against PyTorch's (attn_mask)
in the same run: bf16, B8 H12 T1024 D64 (GPT-2's attention), forward and forward + backward.
Masks: a boolean causal mask given as an array, a boolean padding mask per batch entry
(B, 1, 1, T), and an additive bias per head (1, H, T, T, ALiBi-like). Our fused kernels read the
mask in place; the peak memory column shows that the [T, T] scores are never stored
(MLX_SDPA_FUSED=0 runs our composite instead, for comparison).

    python3 benchmarks/bench_masked_attention.py
"""
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import per_call  # noqa: E402

B, H, T, D = 8, 12, 1024, 64


def masks():
    """name -> (mask as float32 NumPy or bool, is_bool)."""
    rng = np.random.default_rng(0)
    causal = np.tril(np.ones((T, T), dtype=bool))
    lengths = rng.integers(T // 2, T + 1, B)
    padding = (np.arange(T)[None, :] < lengths[:, None])[:, None, None, :]
    slopes = 2.0 ** (-8.0 * (np.arange(H) + 1) / H)
    distance = np.arange(T)[None, :] - np.arange(T)[:, None]
    alibi = (slopes[:, None, None] * np.minimum(distance, 0)[None]).astype(np.float32)[None]
    return {"causal as bool array": causal, "padding (B,1,1,T) bool": padding,
            "ALiBi bias (1,H,T,T) bf16": alibi}


def ours(q, k, v, mask):
    import mlx.core as mx

    q, k, v = (mx.array(a).astype(mx.bfloat16) for a in (q, k, v))
    m = mx.array(mask) if mask.dtype == bool else mx.array(mask).astype(mx.bfloat16)
    mx.eval(q, k, v, m)
    scale = 1 / math.sqrt(D)
    attend = lambda a: mx.fast.scaled_dot_product_attention(a, k, v, scale=scale, mask=m)
    grad = mx.grad(lambda a: attend(a).astype(mx.float32).sum())
    fwd = per_call(lambda: mx.async_eval(attend(q)), mx.synchronize)
    mx.reset_peak_memory()
    base = mx.get_active_memory()
    mx.eval(grad(q))
    peak = (mx.get_peak_memory() - base) / 2**20
    both = per_call(lambda: mx.async_eval(grad(q)), mx.synchronize)
    return fwd, both, peak


def torch_time(q, k, v, mask):
    import torch

    q, k, v = (torch.from_numpy(a).to("cuda", torch.bfloat16) for a in (q, k, v))
    m = torch.from_numpy(mask).to("cuda")
    m = m if mask.dtype == bool else m.to(torch.bfloat16)
    f = torch.nn.functional.scaled_dot_product_attention
    qg = q.detach().requires_grad_()

    def both():
        return torch.autograd.grad(f(qg, k, v, attn_mask=m).float().sum(), qg)

    with torch.no_grad():
        fwd = per_call(lambda: f(q, k, v, attn_mask=m), torch.cuda.synchronize)
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    both()
    torch.cuda.synchronize()
    peak = (torch.cuda.max_memory_allocated() - base) / 2**20
    return fwd, per_call(both, torch.cuda.synchronize), peak


def main():
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((B, H, T, D)).astype(np.float32) for _ in range(3))
    try:
        import torch  # noqa: F401
        have_torch = True
    except ImportError:
        have_torch = False
    print(f"bf16 B{B} H{H} T{T} D{D}; ms per call; ratio = PyTorch time / ours (> 1: faster); "
          "peak = extra MiB during one forward + backward (dq)")
    print("| mask | pass | ours ms | PyTorch ms | ratio | ours peak MiB | PyTorch peak MiB |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for name, mask in masks().items():
        o_fwd, o_both, o_peak = ours(q, k, v, mask)
        t = torch_time(q, k, v, mask) if have_torch else (math.nan,) * 3
        for label, a, b in (("fwd", o_fwd, t[0]), ("fwd+bwd", o_both, t[1])):
            peaks = f"{o_peak:.0f} | {t[2]:.0f}" if label == "fwd+bwd" else " | "
            print(f"| {name} | {label} | {a * 1e3:.3f} | {b * 1e3:.3f} | {b / a:.2f} | {peaks} |")


if __name__ == "__main__":
    main()
