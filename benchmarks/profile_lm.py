"""Where the main job's training step (examples/train_lm.py, its compiled step and model) goes:
the step timed as a whole, then again with every primitive timed (mx._kernel_times), printed
as a table by total time; --by-shape keys each primitive by its inputs' shapes and layouts, so
that one slow product or copy of the model stands out.

    python benchmarks/profile_lm.py                       # --config cpu on the CPU
    python benchmarks/profile_lm.py --by-shape --top 40
    python benchmarks/profile_lm.py --uncompiled

The timed steps run one primitive at a time (on the GPU each is synchronized), so their total
exceeds the untimed step by what overlap it removes; the shares still say where to look.
"""
import argparse
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples"))
import mlx.core as mx  # noqa: E402
import mlx.optimizers as optim  # noqa: E402
import train_lm  # noqa: E402
from lm_data import DEFAULT_DATA, PRESETS, load_corpus  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", choices=["cpu", "gpu"], default="cpu")
    p.add_argument("--warmup", type=int, default=40, help="steps before timing (default 40)")
    p.add_argument("--steps", type=int, default=30, help="untimed steps measured (default 30)")
    p.add_argument("--profiled", type=int, default=10, help="steps profiled (default 10)")
    p.add_argument("--top", type=int, default=25, help="rows printed (default 25)")
    p.add_argument("--by-shape", action="store_true", help="one row per input shapes")
    p.add_argument("--uncompiled", action="store_true", help="run the step uncompiled")
    args = p.parse_args()
    m = PRESETS[args.config]
    mx.set_default_device(mx.gpu if args.config == "gpu" and mx.is_available(mx.gpu) else mx.cpu)
    mx.random.seed(0)
    chars, train, _ = load_corpus(DEFAULT_DATA)
    model = train_lm.GPT(len(chars), m["dims"], m["layers"], m["heads"])
    if m["compute_dtype"] != "float32":
        model.set_compute_dtype(getattr(mx, m["compute_dtype"]))
    opt = optim.AdamW(learning_rate=m["lr"], weight_decay=0.1)
    opt.init(model.trainable_parameters())
    if args.uncompiled:
        mx.disable_compile()
    step, state = train_lm.make_train_step(model, opt)
    rng = np.random.default_rng(0)

    def run(n):
        start = time.perf_counter()
        for _ in range(n):
            x, y = train_lm.batches(train, m["batch"], m["context"], rng)
            loss = step(x, y)
            mx.eval(state)
            loss.item()
        return (time.perf_counter() - start) / n

    run(args.warmup)
    untimed = run(args.steps)
    mx._kernel_times(True, True, by_shape=args.by_shape)
    timed = run(args.profiled)
    rows = sorted(mx._kernel_times(False, True).items(), key=lambda kv: -kv[1][1])
    total = sum(s for _, (_, s) in rows) / args.profiled
    tokens = m["batch"] * m["context"]
    print(f"{args.config} config, {'uncompiled' if args.uncompiled else 'compiled'}, "
          f"{mx.default_device()}: step {untimed * 1e3:.1f} ms ({tokens / untimed:,.0f} tokens/s); "
          f"profiled step {timed * 1e3:.1f} ms, primitives {total * 1e3:.1f} ms of it\n")
    print("| primitive | calls per step | ms per step | share |")
    print("|---|---|---|---|")
    for name, (count, seconds) in rows[:args.top]:
        ms = seconds / args.profiled * 1e3
        print(f"| {name} | {count / args.profiled:g} | {ms:.2f} | {ms / (total * 1e3):.1%} |")


if __name__ == "__main__":
    main()
