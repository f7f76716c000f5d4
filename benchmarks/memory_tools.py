"""Memory tooling on the main job (examples/train_lm.py): the cost of tracing, and what each
cache policy preset does to speed, peaks, hit rate, fragmentation and the footprint left after
training (idle trimming).

    PYTHONPATH=python python benchmarks/memory_tools.py [--steps 40] [--reps 2]

Trace overhead: runs of the same configuration in one process, tracing off / on without
stacks / on with stacks, interleaved (after a warm-up run), compared by steady tokens/s.
Presets: one fresh process per preset (the policy from MLX_CACHE_POLICY, as a user would set
it); the footprint after training is read again after `idle` seconds of doing nothing (a preset
that trims idle blocks gets idle / 3 seconds for that wait only, not during training).
"""
import argparse
import contextlib
import io
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples"))


def rss_bytes():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def train(steps, trace=None):
    """One main-job run; trace: None, 'plain' or 'stacks'. Returns the trainer's result (with
    the process CPU seconds of the run added) and the number of events recorded."""
    import mlx.core as mx

    import train_lm

    args = ["--steps", str(steps), "--eval-every", str(10 * steps), "--sample", "0", "--cpu"]
    with contextlib.redirect_stdout(io.StringIO()):
        if trace:
            mx.memory.start_trace(stacks=trace == "stacks")
        cpu = time.process_time()
        result = train_lm.main(args)
        result["cpu_s"] = time.process_time() - cpu
        events = len(mx.memory.stop_trace().events) if trace else 0
    return result, events


def overhead(steps, reps):
    train(max(steps // 4, 5))  # warm-up: first-run costs outside the loop being measured
    modes = ["off", "plain", "stacks"]
    rates = {m: [] for m in modes}
    cpu = {m: [] for m in modes}
    events = {}
    for rep in range(reps):
        for mode in modes[rep % 3:] + modes[:rep % 3]:  # rotate the order: no mode always first
            result, n = train(steps, None if mode == "off" else mode)
            rates[mode].append(result["steady_tokens_per_s"])
            cpu[mode].append(result["cpu_s"])
            events[mode] = n
    base, base_cpu = statistics.median(rates["off"]), statistics.median(cpu["off"])
    print(f"\n## Trace overhead on the main job ({steps} steps, median of {reps} interleaved runs)\n")
    print("| tracing | steady tokens/s | slower by | CPU s per run | more CPU | events recorded |")
    print("|---|---:|---:|---:|---:|---:|")
    for mode, label in [("off", "off"), ("plain", "on, no stacks"), ("stacks", "on, stacks")]:
        r, c = statistics.median(rates[mode]), statistics.median(cpu[mode])
        print(f"| {label} | {r:,.0f} | {100 * (base - r) / base:+.1f}% | {c:.2f} | "
              f"{100 * (c - base_cpu) / base_cpu:+.1f}% | {events[mode]:,} |")


def overhead_by_step(blocks, per_block):
    """Tracing off / on / on with stacks, switched every few steps of one training run, so that
    changes in the machine's load hit every mode alike. Median step time per mode."""
    import numpy as np

    import mlx.core as mx
    import mlx.optimizers as optim
    import train_lm

    mx.set_default_device(mx.cpu)
    chars, data, _ = train_lm.load_corpus(train_lm.DEFAULT_DATA)
    model = train_lm.GPT(len(chars), 128, 4, 4)
    optimizer = optim.AdamW(learning_rate=1e-3)
    optimizer.init(model.trainable_parameters())
    step, state = train_lm.make_train_step(model, optimizer)
    rng = np.random.default_rng(0)
    modes = ["off", "plain", "stacks"]
    times = {m: [] for m in modes}
    events = {m: 0 for m in modes}

    def run(n):
        out = []
        for _ in range(n):
            x, y = train_lm.batches(data, 32, 128, rng)
            mx.eval(x, y)
            t = time.perf_counter()
            step(x, y)
            mx.eval(state)
            out.append(time.perf_counter() - t)
        return out

    run(3)  # compile and fill the cache
    for b in range(blocks):
        for mode in modes[b % 3:] + modes[:b % 3]:
            if mode != "off":
                mx.memory.start_trace(stacks=mode == "stacks")
            times[mode] += run(per_block)
            if mode != "off":
                events[mode] += len(mx.memory.stop_trace().events)
    base = statistics.median(times["off"])
    n = blocks * per_block
    print(f"\n## Trace overhead per training step ({n} steps per mode, modes switched every "
          f"{per_block} steps of one run)\n")
    print("| tracing | median step (ms) | slower by | events per step |")
    print("|---|---:|---:|---:|")
    for mode, label in [("off", "off"), ("plain", "on, no stacks"), ("stacks", "on, stacks")]:
        m = statistics.median(times[mode])
        print(f"| {label} | {1e3 * m:.1f} | {100 * (m - base) / base:+.1f}% | "
              f"{events[mode] / n:,.0f} |")


def child(steps, idle):
    """Runs the main job once under the environment's policy; prints one JSON line."""
    import mlx.core as mx

    rss0 = rss_bytes()
    result, _ = train(steps)
    s = result["memory_stats"]
    after = {"cache": mx.get_cache_memory(), "rss": rss_bytes()}
    if mx.get_cache_policy()["idle_seconds"] > 0:
        # A policy that trims idle blocks: after training, short enough to show within `idle`.
        mx.set_cache_policy(idle_seconds=idle / 3)
    time.sleep(idle)
    idle_after = {"cache": mx.get_cache_memory(), "rss": rss_bytes()}
    print(json.dumps({"tokens_per_s": result["steady_tokens_per_s"], "stats": s,
                      "rss_start": rss0, "after": after, "idle": idle_after,
                      "policy": mx.get_cache_policy()}))


def presets(steps, idle):
    names = ["default", "throughput_training", "low_latency_inference", "distributed_training",
             "adaptive"]
    print(f"\n## Cache policy presets on the main job ({steps} steps, one process each)\n")
    print("| preset | page | trim chunk | max cache | steady tok/s | peak active | "
          "peak active+cache | hit rate | fragmentation | system allocs | cache at end | "
          f"cache {idle:g} s later | RSS at end | RSS {idle:g} s later |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    mib = 2**20
    for name in names:
        env = dict(os.environ, MLX_CACHE_POLICY=name)
        out = subprocess.run([sys.executable, __file__, "--child", "--steps", str(steps),
                              "--idle", str(idle)], env=env, capture_output=True, text=True,
                             check=True).stdout
        r = json.loads(out.strip().splitlines()[-1])
        s, p = r["stats"], r["policy"]
        max_cache = f"{p['max_cache'] / 2**30:.0f}G" if p["max_cache"] < 2**40 else "-"
        print(f"| {name} | {p['page_size'] // 1024}K | {p['trim_bytes'] // mib}M | {max_cache} | "
              f"{r['tokens_per_s']:,.0f} | {s['peak_memory'] / mib:.1f}M | "
              f"{s['peak_footprint'] / mib:.1f}M | {s['cache_hit_rate']:.2%} | "
              f"{s['fragmentation_rate']:.2%} | {int(s['num_system_allocs'])} | "
              f"{r['after']['cache'] / mib:.1f}M | {r['idle']['cache'] / mib:.1f}M | "
              f"{r['after']['rss'] / mib:.0f}M | {r['idle']['rss'] / mib:.0f}M |")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--reps", type=int, default=2)
    p.add_argument("--idle", type=float, default=3.0)
    p.add_argument("--only", choices=["overhead", "steps", "presets"], default=None)
    p.add_argument("--blocks", type=int, default=10)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child(args.steps, args.idle)
        return
    if args.only in (None, "steps"):
        overhead_by_step(args.blocks, 3)
    if args.only in (None, "overhead"):
        overhead(args.steps, args.reps)
    if args.only in (None, "presets"):
        presets(args.steps, args.idle)


if __name__ == "__main__":
    main()
