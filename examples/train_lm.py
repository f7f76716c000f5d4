"""Trains a GPT-style character-level language model on Tiny Shakespeare.

The project's main job: a pre-norm decoder (causal self-attention with RoPE, GELU MLP)
trained with AdamW and a cosine schedule, with a progress line (loss, tokens/s, memory),
validation loss, atomic checkpoints that can be resumed, and a text sample at the end. Uses
the GPU when there is one.

    python examples/train_lm.py                  # default run (a few minutes on 2 cores)
    python examples/train_lm.py --config gpu     # the larger model (the default on a GPU)
    python examples/train_lm.py --steps 50 --dims 64 --layers 2   # quick smoke run
    mlx.launch -n 2 examples/train_lm.py         # data-parallel over 2 processes
    mlx.launch -n 2 examples/train_lm.py --zero  # ... with the optimizer state sharded

Under mlx.launch (or mpirun) the global batch (--batch) is split over the ranks, the
gradients are averaged (nn.average_gradients), and rank 0 prints; with --zero each rank
keeps 1/N of the optimizer state (optim.ShardedOptimizer, ZeRO stage 1 or 2).

--config picks the model and schedule (lm_data.PRESETS; flags given explicitly override
them): "cpu", a 0.8M-parameter model for 600 steps (validation loss 1.785); "gpu", 10.7M
parameters (6 layers of 384, context 256, batch 64, bf16 compute) for 750 steps, where its
validation loss bottoms out (about 1.53; it overfits after), 12M tokens, about 30 s on one
H200 at the 454k tokens/s measured, stopped early by --time-limit (5 minutes);
"auto" (default) is "gpu" when the default device is a GPU.
"""
import argparse
import json
import math
import os
import sys
import time
from functools import partial

import numpy as np

import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
from mlx.utils import tree_flatten, tree_unflatten

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lm_data import (DEFAULT_DATA, PRESETS, load_corpus, sample_windows,  # noqa: E402
                     unigram_loss)


class Block(nn.Module):
    """Pre-norm Transformer block: x + attn(norm(x)), then x + mlp(norm(x))."""

    def __init__(self, dims, heads):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(dims)
        self.qkv = nn.Linear(dims, 3 * dims, bias=False)
        self.out = nn.Linear(dims, dims, bias=False)
        self.rope = nn.RoPE(dims // heads)
        self.norm2 = nn.LayerNorm(dims)
        self.mlp_in = nn.Linear(dims, 4 * dims)
        self.mlp_out = nn.Linear(4 * dims, dims)

    def attention(self, x):
        B, T, D = x.shape
        q, k, v = mx.split(self.qkv(x), 3, axis=-1)
        shape = (B, T, self.heads, D // self.heads)
        q, k, v = (z.reshape(shape).transpose(0, 2, 1, 3) for z in (q, k, v))
        q, k = self.rope(q), self.rope(k)
        scale = 1.0 / math.sqrt(D // self.heads)
        o = mx.fast.scaled_dot_product_attention(q, k, v, scale=scale, mask="causal")
        return self.out(o.transpose(0, 2, 1, 3).reshape(B, T, D))

    def __call__(self, x):
        x = x + self.attention(self.norm1(x))
        return x + self.mlp_out(nn.gelu(self.mlp_in(self.norm2(x))))


class GPT(nn.Module):
    def __init__(self, vocab, dims, layers, heads):
        super().__init__()
        self.embed = nn.Embedding(vocab, dims)
        self.blocks = [Block(dims, heads) for _ in range(layers)]
        self.norm = nn.LayerNorm(dims)

    def __call__(self, tokens):
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        return self.embed.as_linear(self.norm(x))


def loss_of(model, x, y):
    """Mean cross entropy, in float32 whatever the compute dtype (a bf16 log-sum-exp over the
    vocabulary would round the loss and its gradient)."""
    logits = model(x)
    if logits.dtype != mx.float32:
        logits = logits.astype(mx.float32)
    return nn.losses.cross_entropy(logits, y, reduction="mean")


def make_train_step(model, optimizer, group=None, sharded=False):
    """The compiled training step (loss, gradients averaged over the ranks of `group` and
    clipped at 1.0, optimizer update) and the state it reads and writes. A sharded optimizer
    (optim.ShardedOptimizer) averages and clips itself. Returns the global batch's loss."""

    loss_and_grad = nn.value_and_grad(model, loss_of)
    state = [model.state, optimizer.state, mx.random.state]
    world = group.size() if group is not None else 1

    @partial(mx.compile, inputs=state, outputs=state)
    def step(x, y):
        loss, grads = loss_and_grad(model, x, y)
        if not sharded:
            if world > 1:
                grads = nn.average_gradients(grads, group)
            grads, _ = optim.clip_grad_norm(grads, 1.0)
        optimizer.update(model, grads)
        if world > 1:
            loss = mx.distributed.all_sum(loss, group=group) / world
        return loss

    return step, state


def past_time_limit(minutes, t0, group):
    """Whether training has run `minutes` since t0, on every rank if any rank says so (they
    must stop at the same step: the validation after it is collective)."""
    if minutes is None:
        return False
    late = time.perf_counter() - t0 > 60 * minutes
    if group.size() > 1:
        late = mx.distributed.all_sum(mx.array(int(late)), group=group).item() > 0
    return late


def batches(data, batch, context, rng):
    x, y = sample_windows(data, batch, context, rng)
    return mx.array(x), mx.array(y)


_system_allocs = [0]


def memory_line():
    line = (f"mem {mx.get_active_memory() / 2**20:.0f}M active, "
            f"{mx.get_peak_memory() / 2**20:.0f}M peak, {mx.get_cache_memory() / 2**20:.0f}M cache")
    if hasattr(mx, "memory_stats"):  # ours; the rest is MLX's API, so Apple's MLX runs this too
        stats = mx.memory_stats()
        allocs = int(stats["num_system_allocs"])
        line += f", hit {stats['hit_rate']:.3f}, {allocs - _system_allocs[0]} system allocs since"
        _system_allocs[0] = allocs
    return line


def write_memory_trace(trace, args):
    if args.memory_plot:
        trace.plot(args.memory_plot, title=f"train_lm: {args.steps} steps, batch {args.batch}, "
                                           f"context {args.context}, {args.dims} dims")
        print(f"memory timeline written to {args.memory_plot}")
    if args.memory_trace:
        if args.memory_trace.endswith(".json"):
            trace.to_chrome_trace(args.memory_trace)
        else:
            trace.to_memory_viz(args.memory_trace)
        print(f"memory trace written to {args.memory_trace}")


def optimizer_file(group, sharded):
    # A sharded optimizer state is a different part on every rank.
    return f"optimizer.rank{group.rank()}.safetensors" if sharded else "optimizer.safetensors"


def save_checkpoint(path, model, optimizer, step, rng, group, sharded):
    """Writes the checkpoint next to the old one, then renames: a crash mid-save keeps the
    previous checkpoint intact. Rank 0 writes the model; every rank its optimizer part when
    the state is sharded."""
    os.makedirs(path, exist_ok=True)
    files = {}
    if group.rank() == 0:
        files["model.safetensors"] = lambda f: model.save_weights(f)
    if group.rank() == 0 or sharded:
        files[optimizer_file(group, sharded)] = lambda f: mx.save_safetensors(
            f, dict(tree_flatten(optimizer.state)))
    for name, write in files.items():
        tmp = os.path.join(path, "tmp." + name)
        write(tmp)
        os.replace(tmp, os.path.join(path, name))
    if group.rank() != 0:
        return
    meta = {"step": step, "rng": rng.bit_generator.state}
    tmp = os.path.join(path, "tmp.meta.json")
    with open(tmp, "w") as f:
        json.dump(meta, f)
    os.replace(tmp, os.path.join(path, "meta.json"))


def load_checkpoint(path, model, optimizer, rng, group, sharded):
    model.load_weights(os.path.join(path, "model.safetensors"))
    state = mx.load(os.path.join(path, optimizer_file(group, sharded)))
    optimizer.state = tree_unflatten(list(state.items()))
    with open(os.path.join(path, "meta.json")) as f:
        meta = json.load(f)
    rng.bit_generator.state = meta["rng"]
    return meta["step"]


def evaluate(model, data, args, rng, group, batches_count=8):
    """The mean loss of a few global batches, each rank taking its rows of them."""
    world, rank = group.size(), group.rank()
    local = args.batch // world
    total = 0.0
    for _ in range(batches_count):
        x, y = batches(data, args.batch, args.context, rng)
        rows = slice(rank * local, (rank + 1) * local)
        loss = loss_of(model, x[rows], y[rows])
        total += (mx.distributed.all_sum(loss, group=group) / world).item()
    return total / batches_count


def sample(model, chars, prompt, length, temperature, context):
    index = {c: i for i, c in enumerate(chars)}
    tokens = [index.get(c, 0) for c in prompt]
    key = mx.random.key(0)
    for _ in range(length):
        x = mx.array([tokens[-context:]])
        logits = model(x)[0, -1] / temperature
        key, sub = mx.random.split(key)
        tokens.append(int(mx.random.categorical(logits, key=sub).item()))
    return "".join(chars[t] for t in tokens)


def main(argv=None):
    previous = mx.default_device()
    try:
        return train(argv)
    finally:
        mx.set_default_device(previous)  # main() also runs in-process (tests, benchmarks)


def train(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=DEFAULT_DATA)
    p.add_argument("--config", choices=["auto", "cpu", "gpu"], default="auto",
                   help="model and schedule (lm_data.PRESETS): auto is gpu when the default "
                        "device is a GPU; the flags below override single values")
    preset = " (default from --config)"
    p.add_argument("--dims", type=int, help="model width" + preset)
    p.add_argument("--layers", type=int, help="blocks" + preset)
    p.add_argument("--heads", type=int, help="attention heads" + preset)
    p.add_argument("--context", type=int, help="tokens per sequence" + preset)
    p.add_argument("--batch", type=int, help="global batch, sequences" + preset)
    p.add_argument("--steps", type=int, help="training steps" + preset)
    p.add_argument("--lr", type=float, help="peak learning rate" + preset)
    p.add_argument("--warmup", type=int, help="linear warm-up steps" + preset)
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--eval-every", type=int, help="steps between validations" + preset)
    p.add_argument("--compute-dtype", choices=["float32", "bfloat16", "float16"],
                   help="forward/backward dtype; weights and AdamW state stay float32" + preset)
    p.add_argument("--time-limit", type=float, metavar="MINUTES",
                   help="stop training (then validate, checkpoint, sample) after this long"
                        + preset)
    p.add_argument("--checkpoint", default=None, help="directory to save checkpoints into")
    p.add_argument("--resume", action="store_true", help="continue from --checkpoint")
    p.add_argument("--sample", type=int, default=300, help="characters to sample at the end")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cpu", action="store_true", help="use the CPU even when a GPU exists")
    p.add_argument("--loop", choices=["auto", "pipelined", "synchronous"], default="auto",
                   help="queue each step and read the one before it while it runs, or evaluate "
                        "each step before building the next (auto: pipelined on a GPU; on a CPU "
                        "building beside a running step takes cores from it)")
    p.add_argument("--zero", action="store_true",
                   help="shard the optimizer state over the ranks (ZeRO, see --zero-stage)")
    p.add_argument("--zero-stage", type=int, default=2, choices=[1, 2],
                   help="1: shard the state; 2: the state and the averaged gradients")
    p.add_argument("--log-every", type=int, default=10,
                   help="steps between progress lines when several ranks run")
    p.add_argument("--json", action="store_true",
                   help="print every rank's losses and peak memory as a JSON line at the end")
    p.add_argument("--memory-plot", default=None, metavar="FILE",
                   help="trace the allocator during training and draw its timeline (PNG; needs "
                        "matplotlib)")
    p.add_argument("--memory-trace", default=None, metavar="FILE",
                   help="trace the allocator during training and write a memory_viz pickle "
                        "(.pickle) or a Chrome trace (.json)")
    args = p.parse_args(argv)
    tracing = (args.memory_plot or args.memory_trace) and hasattr(mx, "memory_stats")
    group = mx.distributed.init()
    world, rank = group.size(), group.rank()
    if args.cpu:
        mx.set_default_device(mx.cpu)
    elif mx.is_available(mx.gpu):
        mx.set_default_device(mx.gpu)
    if args.config == "auto":
        args.config = "gpu" if mx.default_device() == mx.gpu else "cpu"
    for key, value in PRESETS[args.config].items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.batch % world:
        p.error(f"--batch {args.batch} must be divisible by the number of ranks ({world})")
    local = args.batch // world
    quiet = rank != 0
    log = (lambda *a, **k: None) if quiet else print
    mx.random.seed(args.seed)
    rng = np.random.default_rng(args.seed)

    chars, train, val = load_corpus(args.data)
    vocab = len(chars)
    model = GPT(vocab, args.dims, args.layers, args.heads)
    if args.compute_dtype != "float32":  # this project's mixed precision (not in Apple's MLX)
        model.set_compute_dtype(getattr(mx, args.compute_dtype))
    n_params = sum(v.size for _, v in tree_flatten(model.parameters()))
    schedule = optim.join_schedules(
        [optim.linear_schedule(1e-2 * args.lr, args.lr, args.warmup),
         optim.cosine_decay(args.lr, max(args.steps - args.warmup, 1), 0.1 * args.lr)],
        [args.warmup])
    optimizer = optim.AdamW(learning_rate=schedule, weight_decay=args.weight_decay)
    if args.zero:
        optimizer = optim.ShardedOptimizer(optimizer, group, stage=args.zero_stage,
                                           max_grad_norm=1.0)
    optimizer.init(model.trainable_parameters())

    start = 0
    if args.resume and args.checkpoint and os.path.exists(os.path.join(args.checkpoint, "meta.json")):
        start = load_checkpoint(args.checkpoint, model, optimizer, rng, group, args.zero)
        log(f"resumed from {args.checkpoint} at step {start}")

    step, state = make_train_step(model, optimizer, group, sharded=args.zero)

    device = "gpu" if mx.default_device() == mx.gpu else "cpu"
    log(f"device {device}, config {args.config}: {args.layers} layers x {args.dims}, context "
        f"{args.context}, batch {args.batch}, {args.compute_dtype} compute; "
        f"{n_params / 1e6:.2f}M parameters, vocab {vocab}, "
        f"{len(train)} train / {len(val)} val characters"
        + (f", {world} ranks" + (f", ZeRO stage {args.zero_stage}" if args.zero else "")
           if world > 1 or args.zero else ""))
    log(f"unigram baseline: {unigram_loss(train, val, vocab):.3f} nats/char")
    mx.reset_peak_memory()
    if tracing:
        mx.memory.start_trace()
    tokens_per_step = args.batch * args.context
    t0 = time.perf_counter()
    loss_avg = None
    first_loss = None
    val_loss = None
    t_first = None  # end of the first step (which includes tracing and compiling)
    eval_seconds = 0.0  # validation and checkpoints: not training, left out of tokens/s
    losses = []
    # Pipelined (the default on a GPU): each step is queued with async_eval and the one before
    # it read while it runs, so that the host builds step n + 1 while the device runs step n.
    # Validation and checkpoints read every queued step first.
    pipelined = args.loop == "pipelined" or (args.loop == "auto" and device == "gpu")
    queued = None  # the loss of a step queued and not read yet

    def record(loss):
        nonlocal first_loss, t_first, loss_avg
        loss = loss.item()
        losses.append(loss)
        first_loss = loss if first_loss is None else first_loss
        t_first = time.perf_counter() if t_first is None else t_first
        loss_avg = loss if loss_avg is None else 0.9 * loss_avg + 0.1 * loss
        done = len(losses)
        rate = done * tokens_per_step / (time.perf_counter() - t0 - eval_seconds)
        bar = "#" * int(20 * (start + done) / args.steps)
        # One line per update on a terminal; whole lines under a launcher (rank prefixes).
        end = "\n" if world > 1 else ""
        if not quiet and (world == 1 or (start + done) % args.log_every == 0):
            sys.stdout.write(f"\r[{bar:<20}] step {start + done}/{args.steps} loss {loss_avg:.3f} "
                             f"{rate:,.0f} tok/s {memory_line()}{end}")
            sys.stdout.flush()

    for it in range(start, args.steps):
        # Every rank draws the same global batch (same seed) and takes its rows of it.
        x, y = batches(train, args.batch, args.context, rng)
        loss = step(x[rank * local:(rank + 1) * local], y[rank * local:(rank + 1) * local])
        if pipelined:
            mx.async_eval(loss, state)
            if queued is not None:
                record(queued)
            queued = loss
        else:
            mx.eval(state)
            record(loss)
        out_of_time = it + 1 < args.steps and past_time_limit(args.time_limit, t0, group)
        if (it + 1) % args.eval_every == 0 or it + 1 == args.steps or out_of_time:
            if queued is not None:
                record(queued)
                queued = None
            t_eval = time.perf_counter()
            val_loss = evaluate(model, val, args, rng, group)
            if not quiet:
                sys.stdout.write(f"\n  step {it + 1}: train {loss_avg:.3f}, val {val_loss:.3f}\n")
            if args.checkpoint:
                save_checkpoint(args.checkpoint, model, optimizer, it + 1, rng, group, args.zero)
            eval_seconds += time.perf_counter() - t_eval
        if out_of_time:
            log(f"  stopped at step {it + 1} of {args.steps}: --time-limit {args.time_limit} min")
            break
    elapsed = time.perf_counter() - t0
    if tracing and not quiet:
        write_memory_trace(mx.memory.stop_trace(), args)
    done = len(losses)
    rate = steady_rate = None
    if done > 0:
        rate = done * tokens_per_step / (elapsed - eval_seconds)
        if done > 1:
            steady_rate = (done - 1) * tokens_per_step / (t0 + elapsed - t_first - eval_seconds)
        log(f"{done} steps in {elapsed:.1f} s, {rate:,.0f} tokens/s; {memory_line()}")
    if hasattr(mx, "memory_stats"):
        log(mx.memory.summary())
    text = ""
    if args.sample:
        text = sample(model, chars, "ROMEO:", args.sample, 0.8, args.context)
        log("--- sample ---")
        log(text)
    if args.json:
        print(json.dumps({"rank": rank, "world": world, "zero": args.zero, "losses": losses,
                          "peak_memory": mx.get_peak_memory()}), flush=True)
    stats = mx.memory_stats() if hasattr(mx, "memory_stats") else None
    return {"steps_done": done, "config": args.config, "losses": losses, "first_loss": first_loss,
            "train_loss": loss_avg, "val_loss": val_loss, "sample": text, "tokens_per_s": rate,
            "steady_tokens_per_s": steady_rate,
            "peak_memory": mx.get_peak_memory(), "memory_stats": stats}


if __name__ == "__main__":
    main()
