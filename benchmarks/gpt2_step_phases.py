"""Where the GPT-2 training step's time goes, by phase, ours and PyTorch's in one run: the
forward pass, forward + backward, the whole step (AdamW included), and for us the optimizer
update alone (Python build and evaluation apart), all untimed steps of benchmarks/gpt2_model.py.
profile_gpt2.py breaks a step down by primitive; this says which phase to work on.

    python benchmarks/gpt2_step_phases.py           # GPT-2 124M, B16 T1024 (the GPU machine)
    python benchmarks/gpt2_step_phases.py --tiny    # seconds, on any device
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt2_model  # noqa: E402
import mlx.core as mx  # noqa: E402
import mlx.nn as nn  # noqa: E402
import mlx.optimizers as optim  # noqa: E402


def per_call_ms(fn, sync, calls):
    for _ in range(2):
        fn()
    sync()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    sync()
    return (time.perf_counter() - start) / calls * 1e3


def ours(cfg, calls):
    model = gpt2_model.make_model(cfg)
    step, state = gpt2_model.make_step(model, cfg, compiled=False)
    idx = mx.random.randint(0, cfg.vocab, (cfg.batch, cfg.context))
    tgt = mx.random.randint(0, cfg.vocab, (cfg.batch, cfg.context))
    loss_and_grad = nn.value_and_grad(model, gpt2_model.loss_fn)
    res = {
        "step": per_call_ms(lambda: mx.eval(step(idx, tgt), state), mx.synchronize, calls),
        "forward + backward": per_call_ms(lambda: mx.eval(loss_and_grad(model, idx, tgt)),
                                          mx.synchronize, calls),
        "forward": per_call_ms(lambda: mx.eval(gpt2_model.loss_fn(model, idx, tgt)),
                               mx.synchronize, calls),
    }
    _, grads = loss_and_grad(model, idx, tgt)
    mx.eval(grads)
    opt = optim.AdamW(learning_rate=cfg.lr, weight_decay=0.01, bias_correction=True)
    opt.init(model.trainable_parameters())
    build = []

    def update():
        start = time.perf_counter()
        opt.update(model, grads)
        build.append(time.perf_counter() - start)
        mx.eval(model.parameters(), opt.state)

    res["AdamW update"] = per_call_ms(update, mx.synchronize, calls)
    res["AdamW update: Python build"] = sum(build[-calls:]) / calls * 1e3
    return res


def torch_phases(cfg, calls):
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        return {}
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = gpt2_model.torch_model(cfg, device)
    step = gpt2_model.torch_step(model, cfg, compiled=False, device=device)
    idx = torch.randint(0, cfg.vocab, (cfg.batch, cfg.context), device=device)
    tgt = torch.randint(0, cfg.vocab, (cfg.batch, cfg.context), device=device)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    def loss():
        with torch.autocast(device, dtype=torch.bfloat16):
            logits = model(idx)
            return F.cross_entropy(logits.view(-1, logits.shape[-1]), tgt.view(-1))

    def forward_backward():
        loss().backward()
        model.zero_grad(set_to_none=True)

    def forward():
        with torch.no_grad():
            loss()

    return {"step": per_call_ms(lambda: step(idx, tgt), sync, calls),
            "forward + backward": per_call_ms(forward_backward, sync, calls),
            "forward": per_call_ms(forward, sync, calls)}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tiny", action="store_true", help="gpt2_model.TINY instead of GPT-2 124M")
    p.add_argument("--calls", type=int, default=8)
    args = p.parse_args()
    cfg = gpt2_model.TINY if args.tiny else gpt2_model.GPT2_124M
    mine = ours(cfg, args.calls)
    theirs = torch_phases(cfg, args.calls)
    print(f"{mx.default_device()}; GPT-2 {cfg.layers}L {cfg.dims}d B{cfg.batch} T{cfg.context}, "
          "bf16 compute, AdamW")
    print(f"| phase (ms) | ours | PyTorch eager | ratio |\n|---|---:|---:|---:|")
    for name, ms in mine.items():
        ref = theirs.get(name)
        ratio = f"{ref / ms:.2f}x" if ref else ""
        print(f"| {name} | {ms:.2f} | {f'{ref:.2f}' if ref else ''} | {ratio} |")
    if theirs:
        print(f"| optimizer (step - forward + backward) | "
              f"{mine['step'] - mine['forward + backward']:.2f} | "
              f"{theirs['step'] - theirs['forward + backward']:.2f} | |")


if __name__ == "__main__":
    main()
