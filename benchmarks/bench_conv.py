"""conv2d on ResNet-50 layer shapes (and depthwise layers: 3x3, 3x3 stride 2, 5x5 with channel
multiplier 2): mlx.core against PyTorch,
forward and forward+backward, printed as one markdown table.

Each library runs in its own process (idle BLAS / OpenMP threads of one would take cores from
the other). PyTorch comes from any interpreter that has it:

    PYTHONPATH=python .venv/bin/python benchmarks/bench_conv.py --torch-python /path/to/venv/bin/python

On the CPU PyTorch gets its native NCHW layout; mlx its NHWC. Both use every core of the
machine, or `--threads N` each (on a machine shared with other work, `--threads 1` is the
steadiest comparison: waiting OpenMP / pool threads then cannot be starved by other processes).

`--device gpu` runs ours on mx.gpu and PyTorch on CUDA (channels_last, cuDNN autotuned; TF32
only under MLX_ENABLE_TF32, as ours), each call waited for; e.g. on the GPU machine:
`python3 benchmarks/bench_conv.py --device gpu --dtype bfloat16 --batch 32 --rounds 2`.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import compare, cuda_timeit, parse_args, timeit  # noqa: E402

# (name, H, W, C_in, C_out, kernel, stride, padding, groups); the batch is --batch
SHAPES = [
    ("conv1 7x7/2", 224, 224, 3, 64, 7, 2, 3, 1),
    ("l1 1x1 64->64", 56, 56, 64, 64, 1, 1, 0, 1),
    ("l1 3x3 64", 56, 56, 64, 64, 3, 1, 1, 1),
    ("l1 1x1 64->256", 56, 56, 64, 256, 1, 1, 0, 1),
    ("l2 3x3/2 128", 56, 56, 128, 128, 3, 2, 1, 1),
    ("l2 3x3 128", 28, 28, 128, 128, 3, 1, 1, 1),
    ("l2 down 1x1/2 256->512", 56, 56, 256, 512, 1, 2, 0, 1),
    ("l3 3x3 256", 14, 14, 256, 256, 3, 1, 1, 1),
    ("l3 1x1 1024->256", 14, 14, 1024, 256, 1, 1, 0, 1),
    ("l4 3x3 512", 7, 7, 512, 512, 3, 1, 1, 1),
    ("l4 1x1 512->2048", 7, 7, 512, 2048, 1, 1, 0, 1),
    ("depthwise 3x3 256", 28, 28, 256, 256, 3, 1, 1, 256),
    ("depthwise 3x3/2 256", 56, 56, 256, 256, 3, 2, 1, 256),
    ("depthwise 5x5 512 x2", 14, 14, 512, 1024, 5, 1, 2, 512),
]
BACKWARD = {"l1 3x3 64", "l3 3x3 256", "l4 1x1 512->2048", "depthwise 3x3 256",
            "depthwise 3x3/2 256", "depthwise 5x5 512 x2"}


def options(ap):
    ap.add_argument("--device", choices=["cpu", "gpu"], default="cpu", help="where both run")
    ap.add_argument("--dtype", choices=["float32", "bfloat16", "float16"], default="float32")
    ap.add_argument("--batch", type=int, default=4, help="images per call")


def run_mlx(args):
    import numpy as np

    import mlx.core as mx

    mx.set_default_device(mx.gpu if args.device == "gpu" else mx.cpu)
    dtype = getattr(mx, args.dtype)
    if args.device == "gpu":
        def measure(fn):
            return timeit(lambda: (fn(), mx.synchronize()), 0.3, 30)
    else:
        measure = timeit
    out = {}
    rng = np.random.default_rng(0)
    for name, h, w, ci, co, k, s, p, g in SHAPES:
        x = mx.array(rng.standard_normal((args.batch, h, w, ci)).astype(np.float32)).astype(dtype)
        wt = mx.array(rng.standard_normal((co, k, k, ci // g)).astype(np.float32)).astype(dtype)
        mx.eval(x, wt)
        out[name] = {"fwd": measure(lambda: mx.eval(mx.conv2d(x, wt, s, p, groups=g)))}
        if name in BACKWARD:
            grad = mx.grad(lambda a, b: mx.sum(mx.conv2d(a, b, s, p, groups=g)), argnums=(0, 1))
            out[name]["bwd"] = measure(lambda: mx.eval(grad(x, wt)))
    return out


def run_torch(args):
    import numpy as np
    import torch

    gpu = args.device == "gpu"
    torch.set_num_threads(int(os.environ.get("BENCH_THREADS", os.cpu_count())))
    if gpu:
        tf32 = os.environ.get("MLX_ENABLE_TF32", "0") not in ("", "0")
        torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.benchmark = True
    measure = (lambda fn: cuda_timeit(torch, fn)) if gpu else timeit
    fmt = torch.channels_last if gpu else torch.contiguous_format
    dtype = getattr(torch, args.dtype)

    def tensor(a):
        t = torch.tensor(a.astype(np.float32), dtype=dtype, device="cuda" if gpu else "cpu")
        return t.contiguous(memory_format=fmt)

    F = torch.nn.functional
    out = {}
    rng = np.random.default_rng(0)
    for name, h, w, ci, co, k, s, p, g in SHAPES:
        x = tensor(rng.standard_normal((args.batch, h, w, ci)).transpose(0, 3, 1, 2))
        wt = tensor(rng.standard_normal((co, k, k, ci // g)).transpose(0, 3, 1, 2))
        with torch.no_grad():
            out[name] = {"fwd": measure(lambda: F.conv2d(x, wt, stride=s, padding=p, groups=g))}
        if name in BACKWARD:
            xg, wg = x.clone().requires_grad_(True), wt.clone().requires_grad_(True)

            def step():
                gx, gw = torch.autograd.grad(F.conv2d(xg, wg, stride=s, padding=p, groups=g).sum(),
                                             (xg, wg))
                return gx, gw

            out[name]["bwd"] = measure(step)
    name = torch.cuda.get_device_name() if gpu else "CPU"
    return {"version": f"{torch.__version__} ({name})", "times": out}


def main():
    args = parse_args(options)
    ours, theirs, version, threads = compare(__file__, run_mlx, run_torch, args)
    tlabel = f"PyTorch {version}" if theirs else "PyTorch (n/a)"
    where = "GPU" if args.device == "gpu" else f"CPU, {threads} thread(s) each"
    print(f"conv2d, {args.dtype}, {where}, best of alternating rounds; ms per call "
          "(median of a round); ratio = PyTorch / ours (> 1: we are faster)\n")
    print(f"| layer (N={args.batch}) | pass | ours ms | {tlabel} ms | ratio |")
    print("|---|---|---|---|---|")
    for name, *_ in SHAPES:
        for kind in ("fwd", "bwd"):
            if kind not in ours[name]:
                continue
            o = ours[name][kind] * 1e3
            t = theirs[name][kind] * 1e3 if theirs else None
            ratio = f"{t / o:.2f}x" if t else "n/a"
            ts = f"{t:.2f}" if t else "n/a"
            label = "fwd" if kind == "fwd" else "fwd+bwd (dx, dw)"
            print(f"| {name} | {label} | {o:.2f} | {ts} | {ratio} |")


if __name__ == "__main__":
    main()
