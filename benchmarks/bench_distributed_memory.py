"""Per-rank peak memory of the main job (examples/train_lm.py) in data-parallel training on
1, 2 and 4 local ranks (mlx.launch, ring backend), with the full optimizer state on every
rank and with it sharded (--zero, stages 1 and 2), for the same global batch.

    python benchmarks/bench_distributed_memory.py [--dims 384 --layers 4]

The model is made wide and the batch small so that parameters, gradients and AdamW's two
moments, not activations, decide the peak: that is where sharding the state shows. Peak =
mx.get_peak_memory() over the training steps (parameters and state included), the largest
over the ranks.
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TRAIN_LM = os.path.join(ROOT, "examples", "train_lm.py")


def run(n, extra, args):
    cmd = [sys.executable, "-m", "mlx.launch", "-n", str(n), TRAIN_LM,
           "--dims", str(args.dims), "--layers", str(args.layers), "--heads", "4",
           "--context", str(args.context), "--batch", str(args.batch), "--steps", str(args.steps),
           "--warmup", "1", "--eval-every", "1000000", "--sample", "0", "--cpu", "--json", *extra]
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), MLX_NUM_THREADS="1")
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1200)
    if r.returncode != 0:
        raise RuntimeError(f"{cmd} failed:\n{r.stderr[-2000:]}")
    ranks = [json.loads(line.split("] ", 1)[1]) for line in r.stdout.splitlines()
             if "] {" in line]
    return max(x["peak_memory"] for x in ranks), ranks[0]["losses"][-1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dims", type=int, default=384)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--context", type=int, default=16)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--steps", type=int, default=3)
    args = ap.parse_args()
    params = args.layers * 12 * args.dims**2 + 65 * args.dims  # blocks + embedding (approx.)
    mib = 2**20
    print(f"train_lm --dims {args.dims} --layers {args.layers} (~{params / 1e6:.1f}M params, "
          f"{4 * params / mib:.0f} MiB float32; AdamW state {8 * params / mib:.0f} MiB), global "
          f"batch {args.batch} x {args.context}, {args.steps} steps")
    print("| ranks | optimizer state | peak per rank | vs. full state | last loss |")
    print("|---|---|---|---|---|")
    for n in (1, 2, 4):
        full = None
        for label, extra in [("full on every rank", []),
                             ("ZeRO stage 1", ["--zero", "--zero-stage", "1"]),
                             ("ZeRO stage 2", ["--zero", "--zero-stage", "2"])]:
            if n == 1 and extra:
                continue
            peak, loss = run(n, extra, args)
            full = peak if full is None else full
            print(f"| {n} | {label} | {peak / mib:.1f} MiB | {peak / full:.2f}x | {loss:.4f} |",
                  flush=True)


if __name__ == "__main__":
    main()
