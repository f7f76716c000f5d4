"""GPT-2 (124M at the default configuration) in mlx.nn, its PyTorch twin, and one AdamW training
step for each: what benchmarks/bench_gpt2.py measures and python/tests/test_gpt2_model.py checks.

Both models: learned token and position embeddings, pre-LayerNorm blocks (fused QKV with bias,
causal scaled-dot-product attention, GELU with the tanh approximation), a final LayerNorm and
the output projection tied to the token embedding. Weights start as in GPT-2 (normal, std 0.02;
biases zero), so the loss at initialisation is close to ln(vocab). Parameter names are the same
on both sides ("blocks.3.qkv.weight"), so weights can be copied from one to the other.

Mixed precision (fp32 master weights, bf16 compute):
- ours: ``model.set_compute_dtype(mx.bfloat16)`` (this project's nn; Apple MLX has no autocast,
  its users cast by hand): every module reads its parameters cast to bf16 and computes in bf16
  (the residual stream and LayerNorms too); parameters, gradients and AdamW state stay fp32.
  The logits are cast to fp32 for the loss.
- PyTorch: ``torch.autocast(dtype=torch.bfloat16)``: matmuls and attention in bf16; LayerNorm,
  the residual adds it sees in fp32 and cross_entropy in fp32 (autocast's own lists).
"""
import math
from dataclasses import dataclass

import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
from mlx.utils import tree_map_with_path


@dataclass(frozen=True)
class Config:
    vocab: int = 50304  # GPT-2's 50257 rounded up to a multiple of 64
    context: int = 1024
    layers: int = 12
    heads: int = 12
    dims: int = 768
    batch: int = 16
    lr: float = 3e-4


GPT2_124M = Config()
# Small enough for a CPU test in seconds; still two blocks and two heads.
TINY = Config(vocab=256, context=64, layers=2, heads=2, dims=64, batch=2, lr=1e-3)
INIT_STD = 0.02


class Block(nn.Module):
    """x + attn(ln1(x)), then x + mlp(ln2(x))."""

    def __init__(self, dims, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dims)
        self.qkv = nn.Linear(dims, 3 * dims)
        self.proj = nn.Linear(dims, dims)
        self.ln2 = nn.LayerNorm(dims)
        self.fc = nn.Linear(dims, 4 * dims)
        self.fc2 = nn.Linear(4 * dims, dims)

    def __call__(self, x):
        B, T, C = x.shape
        q, k, v = mx.split(self.qkv(self.ln1(x)), 3, axis=-1)
        q, k, v = (t.reshape(B, T, self.heads, C // self.heads).transpose(0, 2, 1, 3)
                   for t in (q, k, v))
        y = mx.fast.scaled_dot_product_attention(q, k, v, scale=1 / math.sqrt(C // self.heads),
                                                 mask="causal")
        x = x + self.proj(y.transpose(0, 2, 1, 3).reshape(B, T, C))
        return x + self.fc2(nn.gelu_approx(self.fc(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.wte = nn.Embedding(cfg.vocab, cfg.dims)
        self.wpe = nn.Embedding(cfg.context, cfg.dims)
        self.blocks = [Block(cfg.dims, cfg.heads) for _ in range(cfg.layers)]
        self.lnf = nn.LayerNorm(cfg.dims)
        # GPT-2's initialisation: LayerNorms stay (1, 0); matrices and embeddings N(0, 0.02).
        self.update(tree_map_with_path(
            lambda path, p: p if ".ln" in "." + path else
            (mx.zeros_like(p) if path.endswith("bias") else INIT_STD * mx.random.normal(p.shape)),
            self.parameters()))

    def __call__(self, idx):
        x = self.wte(idx) + self.wpe(mx.arange(idx.shape[1]))
        for block in self.blocks:
            x = block(x)
        return self.wte.as_linear(self.lnf(x))


def loss_fn(model, idx, targets):
    return nn.losses.cross_entropy(model(idx).astype(mx.float32), targets, reduction="mean")


def make_model(cfg: Config, compute_dtype=mx.bfloat16, seed=0):
    mx.random.seed(seed)
    model = GPT(cfg)
    if compute_dtype is not None:
        model.set_compute_dtype(compute_dtype)
    mx.eval(model.parameters())
    return model


def make_step(model, cfg: Config, compiled: bool):
    """step(idx, targets) -> loss: forward, backward and an AdamW update, and the state to
    evaluate after each call. AdamW as PyTorch's defaults: betas (0.9, 0.999), eps 1e-8,
    weight decay 0.01 on every parameter, and bias correction (off by default in MLX)."""
    optimizer = optim.AdamW(learning_rate=cfg.lr, weight_decay=0.01, bias_correction=True)
    # Our mx.compile needs the state's structure fixed before tracing (Apple MLX's lets the
    # first update fill it in): make the AdamW moments now.
    optimizer.init(model.trainable_parameters())
    loss_and_grad = nn.value_and_grad(model, loss_fn)

    def step(idx, targets):
        loss, grads = loss_and_grad(model, idx, targets)
        optimizer.update(model, grads)
        return loss

    state = [model.state, optimizer.state]
    return (mx.compile(step, inputs=state, outputs=state) if compiled else step), state


def torch_model(cfg: Config, device="cpu", seed=0):
    """The same model in PyTorch (imported here: the rest of this file runs without it)."""
    import torch
    import torch.nn.functional as F

    class TorchBlock(torch.nn.Module):
        def __init__(self, dims, heads):
            super().__init__()
            self.heads = heads
            self.ln1, self.ln2 = torch.nn.LayerNorm(dims), torch.nn.LayerNorm(dims)
            self.qkv, self.proj = torch.nn.Linear(dims, 3 * dims), torch.nn.Linear(dims, dims)
            self.fc, self.fc2 = torch.nn.Linear(dims, 4 * dims), torch.nn.Linear(4 * dims, dims)

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
            q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2)
                       for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(B, T, C))
            return x + self.fc2(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))

    class TorchGPT(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = torch.nn.Embedding(cfg.vocab, cfg.dims)
            self.wpe = torch.nn.Embedding(cfg.context, cfg.dims)
            self.blocks = torch.nn.ModuleList(TorchBlock(cfg.dims, cfg.heads)
                                              for _ in range(cfg.layers))
            self.lnf = torch.nn.LayerNorm(cfg.dims)
            for name, p in self.named_parameters():
                if ".ln" not in "." + name:
                    torch.nn.init.zeros_(p) if name.endswith("bias") else \
                        torch.nn.init.normal_(p, std=INIT_STD)

        def forward(self, idx):
            pos = torch.arange(idx.shape[1], device=idx.device)
            x = self.wte(idx) + self.wpe(pos)
            for block in self.blocks:
                x = block(x)
            return F.linear(self.lnf(x), self.wte.weight)  # tied output projection

    torch.manual_seed(seed)
    return TorchGPT().to(device)


def torch_step(model, cfg: Config, compiled: bool, device="cpu"):
    """The PyTorch step: autocast to bf16, backward, AdamW (fused kernel on CUDA; on the CPU
    the default implementation) with the same hyperparameters as make_step."""
    import torch
    import torch.nn.functional as F

    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.01,
                                  fused=device == "cuda" or None)
    kind = "cuda" if device == "cuda" else "cpu"

    def loss_of(idx, targets):
        logits = model(idx)
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))

    # The loss inside the compiled graph, as the issues' reference measured torch.compile: it
    # fuses the cross-entropy with the logits (no float32 copy of them).
    loss_fn = torch.compile(loss_of) if compiled else loss_of

    def step(idx, targets):
        with torch.autocast(kind, dtype=torch.bfloat16):
            loss = loss_fn(idx, targets)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss

    return step
