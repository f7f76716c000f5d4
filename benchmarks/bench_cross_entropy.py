"""mx.fast.cross_entropy (fused primitives) against the same loss composed from ops (what the
op was before: float32 logsumexp minus the picked logit, backward softmax - one_hot) and
PyTorch CPU's F.cross_entropy(reduction='none'), forward and forward+backward, float32 logits
(each library in its own process), printed as one markdown table:

    PYTHONPATH=python .venv/bin/python benchmarks/bench_cross_entropy.py \
        --torch-python /work/torch-venv/bin/python
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import compare, timeit  # noqa: E402

# (name, rows, classes): a GPT-2 batch (8 x 1024 tokens, vocab 50304) and the main job's
# character model (64 x 256 tokens, 65 classes).
CASES = [
    ("[8*1024, 50304]", 8 * 1024, 50304),
    ("[64*256, 65]", 64 * 256, 65),
]


def inputs(np, rows, classes):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((rows, classes), dtype=np.float32) * 2
    t = rng.integers(0, classes, rows).astype(np.int32)
    return x, t


def run_mlx():
    import numpy as np

    import mlx.core as mx

    def composed(x, t):
        xf = x.astype(mx.float32)
        picked = mx.take_along_axis(xf, mx.expand_dims(t, -1), -1)
        return mx.logsumexp(xf, axis=-1) - mx.squeeze(picked, -1)

    composed_vjp = mx.custom_function(composed)

    @composed_vjp.vjp
    def _(primals, cotangent, _):
        x, t = primals
        p = mx.softmax(x.astype(mx.float32), axis=-1, precise=True)
        hit = mx.expand_dims(t, -1) == mx.arange(x.shape[-1], dtype=t.dtype)
        d = mx.where(hit, p - 1.0, p)
        return (d * mx.expand_dims(cotangent, -1)).astype(x.dtype), mx.zeros_like(t)

    out = {}
    for name, rows, classes in CASES:
        xn, tn = inputs(np, rows, classes)
        x, t = mx.array(xn), mx.array(tn)
        mx.eval(x, t)
        for label, f in (("fused", mx.fast.cross_entropy), ("composed", composed_vjp)):
            grad = mx.grad(lambda x, f=f: f(x, t).sum())
            out[f"{name} fwd {label}"] = {"t": timeit(lambda: mx.eval(f(x, t)))}
            out[f"{name} fwd+bwd {label}"] = {"t": timeit(lambda: mx.eval(grad(x)))}
    return out


def run_torch():
    import numpy as np
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(int(os.environ.get("BENCH_THREADS", os.cpu_count())))
    out = {}
    for name, rows, classes in CASES:
        xn, tn = inputs(np, rows, classes)
        x, t = torch.from_numpy(xn), torch.from_numpy(tn).long()
        xg = x.clone().requires_grad_(True)

        def fwd_bwd():
            xg.grad = None
            F.cross_entropy(xg, t, reduction="none").sum().backward()

        with torch.no_grad():
            out[f"{name} fwd"] = {"t": timeit(lambda: F.cross_entropy(x, t, reduction="none"))}
        out[f"{name} fwd+bwd"] = {"t": timeit(fwd_bwd)}
    return {"version": torch.__version__, "times": out}


def main():
    ours, theirs, version, threads = compare(__file__, run_mlx, run_torch)
    print(f"cross entropy, float32 logits, int32 targets, {threads} threads, best of rounds")
    print(f"| shape | pass | fused ms | composed ms | PyTorch {version} ms "
          "| composed / fused | PyTorch / fused |")
    print("|---|---|---|---|---|---|---|")
    for name, _, _ in CASES:
        for kind in ("fwd", "fwd+bwd"):
            fused = ours[f"{name} {kind} fused"]["t"] * 1e3
            comp = ours[f"{name} {kind} composed"]["t"] * 1e3
            t = theirs.get(f"{name} {kind}", {}).get("t")
            ts, tr = (f"{t * 1e3:.2f}", f"{t * 1e3 / fused:.2f}x") if t else ("n/a", "n/a")
            print(f"| {name} | {kind} | {fused:.2f} | {comp:.2f} | {ts} | {comp / fused:.2f}x "
                  f"| {tr} |")


if __name__ == "__main__":
    main()
