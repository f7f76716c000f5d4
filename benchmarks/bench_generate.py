"""Greedy generation with a small Llama-style decoder (58M parameters: 8 layers of width 512,
SwiGLU 1536, vocabulary 32000, KV cache) in bfloat16, float16 and float32: tokens per second of
this build against Apple MLX for Linux CPU (same API, so the same model code runs in both),
optionally an older build of ours, each in its own process, alternating rounds.

    PYTHONPATH=python .venv/bin/python benchmarks/bench_generate.py \
        --mlx-python /work/mlx-venv/bin/python --before /work/main/python
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import run_worker  # noqa: E402

DTYPES = ["bfloat16", "float16", "float32"]
TOKENS = 48


def run_mlx():
    import mlx.core as mx
    import mlx.nn as nn

    class Block(nn.Module):
        def __init__(self, d, hidden, heads):
            super().__init__()
            self.heads = heads
            self.q, self.k, self.v, self.o = (nn.Linear(d, d, bias=False) for _ in range(4))
            self.gate, self.up = nn.Linear(d, hidden, bias=False), nn.Linear(d, hidden, bias=False)
            self.down = nn.Linear(hidden, d, bias=False)
            self.n1, self.n2 = nn.RMSNorm(d), nn.RMSNorm(d)

        def __call__(self, x, cache, offset):
            B, L, D = x.shape
            h = self.n1(x)
            q, k, v = (p(h).reshape(B, L, self.heads, -1).transpose(0, 2, 1, 3)
                       for p in (self.q, self.k, self.v))
            q = mx.fast.rope(q, q.shape[-1], traditional=False, base=10000.0, scale=1.0,
                             offset=offset)
            k = mx.fast.rope(k, k.shape[-1], traditional=False, base=10000.0, scale=1.0,
                             offset=offset)
            if cache is not None:
                k = mx.concatenate([cache[0], k], axis=2)
                v = mx.concatenate([cache[1], v], axis=2)
            a = mx.fast.scaled_dot_product_attention(q, k, v, scale=q.shape[-1] ** -0.5)
            x = x + self.o(a.transpose(0, 2, 1, 3).reshape(B, L, D))
            h = self.n2(x)
            return x + self.down(nn.silu(self.gate(h)) * self.up(h)), (k, v)

    class Model(nn.Module):
        def __init__(self, vocab=32000, d=512, hidden=1536, layers=8, heads=8):
            super().__init__()
            self.embed = nn.Embedding(vocab, d)
            self.blocks = [Block(d, hidden, heads) for _ in range(layers)]
            self.norm = nn.RMSNorm(d)
            self.head = nn.Linear(d, vocab, bias=False)

        def __call__(self, tokens, caches, offset):
            x = self.embed(tokens)
            new = []
            for b, c in zip(self.blocks, caches):
                x, c = b(x, c, offset)
                new.append(c)
            return self.head(self.norm(x)), new

    out = {}
    for d in DTYPES:
        mx.random.seed(0)
        model = Model()
        model.set_dtype(getattr(mx, d))
        mx.eval(model.parameters())
        prompt = mx.array([[1, 2, 3, 4, 5, 6, 7, 8]])
        logits, caches = model(prompt, [None] * 8, 0)
        tok = mx.argmax(logits[:, -1], axis=-1)
        mx.eval(tok, caches)
        offset = prompt.shape[1]
        start = time.perf_counter()
        for _ in range(TOKENS):
            logits, caches = model(tok[:, None], caches, offset)
            tok = mx.argmax(logits[:, -1], axis=-1)
            mx.eval(tok)
            offset += 1
        out[d] = TOKENS / (time.perf_counter() - start)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mlx-python", default=None, help="interpreter with Apple MLX (mlx[cpu])")
    ap.add_argument("--before", default=None, help="a python/ folder with an older build of ours")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--worker", choices=["mlx"], help=argparse.SUPPRESS)
    ap.add_argument("--worker-out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        with open(args.worker_out, "w") as f:
            json.dump(run_mlx(), f)
        return
    ours = os.environ.get("PYTHONPATH") or os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python")
    libs = {"ours": (sys.executable, ours)}
    if args.before:
        libs["before"] = (sys.executable, args.before)
    if args.mlx_python:
        libs["Apple MLX"] = (args.mlx_python, None)
    best = {lib: {} for lib in libs}
    for _ in range(args.rounds):
        for lib, (py, path) in libs.items():
            res = run_worker(py, "mlx", __file__, args.threads, pythonpath=path)
            for k, v in (res or {}).items():
                best[lib][k] = max(best[lib].get(k, 0), v)
    cols = list(libs)
    print(f"threads: {args.threads or os.cpu_count()}; {TOKENS} tokens, best of {args.rounds}")
    print("| greedy generation, 58M Llama | " + " | ".join(f"{c} tokens/s" for c in cols) +
          (" | ours / Apple MLX |" if "Apple MLX" in libs else " |"))
    print("|---" * (len(cols) + 1 + ("Apple MLX" in libs)) + "|")
    for d in DTYPES:
        row = f"| {d} | " + " | ".join(f"{best[c].get(d, 0):.1f}" for c in cols)
        if "Apple MLX" in libs and best["Apple MLX"].get(d):
            row += f" | {best['ours'][d] / best['Apple MLX'][d]:.2f}x"
        print(row + " |")


if __name__ == "__main__":
    main()
