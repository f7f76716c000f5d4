"""Where the GPT-2 training step's time goes: the step of benchmarks/gpt2_model.py timed as a
whole, then once more with every primitive timed (mx._kernel_times: each GPU primitive up to
the end of its device work), printed as a table by total time.

    python benchmarks/profile_gpt2.py                 # GPT-2 124M, B16 T1024, on the GPU
    python benchmarks/profile_gpt2.py --tiny --top 10 # a seconds-long run, on any device

The timed step runs one primitive at a time, so its total exceeds the untimed step by the
launch latency and the overlap it removes; the shares still say which kernels to improve.
"""
import argparse
import dataclasses
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt2_model  # noqa: E402
import mlx.core as mx  # noqa: E402


def profile(cfg, steps, top, compiled):
    model = gpt2_model.make_model(cfg)
    step, state = gpt2_model.make_step(model, cfg, compiled)
    idx = mx.random.randint(0, cfg.vocab, (cfg.batch, cfg.context))
    tgt = mx.random.randint(0, cfg.vocab, (cfg.batch, cfg.context))
    for _ in range(2):
        mx.eval(step(idx, tgt), state)
    mx.synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        mx.eval(step(idx, tgt), state)
    mx.synchronize()
    untimed = (time.perf_counter() - start) / steps
    mx._kernel_times(True, True)
    start = time.perf_counter()
    mx.eval(step(idx, tgt), state)
    mx.synchronize()
    timed = time.perf_counter() - start
    rows = sorted(mx._kernel_times(False, True).items(), key=lambda kv: -kv[1][1])
    total = sum(t for _, (_, t) in rows)
    print(f"step: {untimed * 1e3:.1f} ms untimed, {timed * 1e3:.1f} ms with each primitive "
          f"timed ({total * 1e3:.1f} ms inside primitives); {cfg.batch * cfg.context / untimed:,.0f}"
          f" tokens/s")
    print("| primitive | calls | ms | share |")
    print("|---|---:|---:|---:|")
    for name, (count, seconds) in rows[:top]:
        print(f"| {name} | {count} | {seconds * 1e3:.2f} | {seconds / max(total, 1e-12):.1%} |")
    rest = rows[top:]
    if rest:
        print(f"| ({len(rest)} others) | {sum(c for _, (c, _) in rest)} | "
              f"{sum(t for _, (_, t) in rest) * 1e3:.2f} | "
              f"{sum(t for _, (_, t) in rest) / max(total, 1e-12):.1%} |")
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tiny", action="store_true", help="gpt2_model.TINY instead of GPT-2 124M")
    p.add_argument("--batch", type=int, default=None)
    p.add_argument("--steps", type=int, default=3, help="untimed steps to average")
    p.add_argument("--top", type=int, default=25, help="rows of the table")
    p.add_argument("--compiled", action="store_true", help="the mx.compile'd step")
    args = p.parse_args()
    cfg = gpt2_model.TINY if args.tiny else gpt2_model.GPT2_124M
    if args.batch:
        cfg = dataclasses.replace(cfg, batch=args.batch)
    print(f"{mx.default_device()}; layers {cfg.layers}, dims {cfg.dims}, batch {cfg.batch}, "
          f"context {cfg.context}, vocab {cfg.vocab}" + (", compiled" if args.compiled else ""))
    profile(cfg, args.steps, args.top, args.compiled)


if __name__ == "__main__":
    main()
