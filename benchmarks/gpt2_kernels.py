"""The GPU kernels of one GPT-2 124M training step (B16 T1024, benchmarks/gpt2_model.py), ours
or PyTorch's, as CUPTI records them through torch.profiler (which sees every kernel of its
process, ours included): wall time per step, kernel time per step (their difference is the
device idling on the host), and the top kernels by time. Needs PyTorch with CUDA.

    python3 benchmarks/gpt2_kernels.py ours --compiled     # mx.compile'd step
    python3 benchmarks/gpt2_kernels.py torch --compiled    # torch.compile
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np  # noqa: E402
import torch  # noqa: E402

import gpt2_model  # noqa: E402


def make_step(lib, cfg, compiled, idx_np, tgt_np):
    """(run one step, wait for the device) for `lib`."""
    if lib == "ours":
        import mlx.core as mx

        model = gpt2_model.make_model(cfg)
        step, state = gpt2_model.make_step(model, cfg, compiled)
        idx, tgt = mx.array(idx_np), mx.array(tgt_np)
        return (lambda: mx.eval(step(idx, tgt), state)), mx.synchronize
    model = gpt2_model.torch_model(cfg, "cuda")
    step = gpt2_model.torch_step(model, cfg, compiled, "cuda")
    idx, tgt = (torch.from_numpy(a).long().cuda() for a in (idx_np, tgt_np))
    return (lambda: step(idx, tgt)), torch.cuda.synchronize


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("lib", choices=["ours", "torch"])
    p.add_argument("--compiled", action="store_true")
    p.add_argument("--top", type=int, default=30, help="kernels listed")
    p.add_argument("--steps", type=int, default=5, help="timed steps")
    args = p.parse_args()
    cfg = gpt2_model.GPT2_124M
    rng = np.random.default_rng(0)
    idx_np, tgt_np = (rng.integers(0, cfg.vocab, (cfg.batch, cfg.context)).astype(np.int32)
                      for _ in range(2))
    run, sync = make_step(args.lib, cfg, args.compiled, idx_np, tgt_np)
    for _ in range(3):
        run()
    sync()
    start = time.perf_counter()
    for _ in range(args.steps):
        run()
    sync()
    wall = (time.perf_counter() - start) / args.steps
    profiled = 2
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(profiled):
            run()
        sync()
    kernels = sorted((e for e in prof.key_averages() if e.device_time_total > 0),
                     key=lambda e: -e.device_time_total)
    busy = sum(e.device_time_total for e in kernels) / profiled / 1e3  # ms
    count = sum(e.count for e in kernels) // profiled
    print(f"{args.lib}{' compiled' if args.compiled else ''}: {wall * 1e3:.1f} ms per step, "
          f"kernels {busy:.2f} ms ({count} per step), device idle {wall * 1e3 - busy:.2f} ms")
    print("| ms per step | calls | kernel |")
    print("|---:|---:|---|")
    for e in kernels[:args.top]:
        print(f"| {e.device_time_total / profiled / 1e3:.3f} | {e.count // profiled} | "
              f"{e.key[:120]} |")


if __name__ == "__main__":
    main()
