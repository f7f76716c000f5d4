"""The GPT-2 of benchmarks/gpt2_model.py (what bench_gpt2.py measures) at a tiny configuration:
its loss at initialisation, training, compiled against uncompiled steps, and (when PyTorch is
importable) the same weights giving the same logits and training curve as the PyTorch twin."""
import importlib.util
import math
import os

import numpy as np
import pytest

import mlx.core as mx
from mlx.utils import tree_flatten

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
spec = importlib.util.spec_from_file_location(
    "gpt2_model", os.path.join(ROOT, "benchmarks", "gpt2_model.py"))
gpt2 = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gpt2)
CFG = gpt2.TINY


def batch(seed=1):
    r = np.random.default_rng(seed)
    return [r.integers(0, CFG.vocab, (CFG.batch, CFG.context)).astype(np.int32)
            for _ in range(2)]


def train(model, compiled, steps):
    step, state = gpt2.make_step(model, CFG, compiled)
    idx, tgt = (mx.array(a) for a in batch())
    losses = []
    for _ in range(steps):
        loss = step(idx, tgt)
        mx.eval(loss, state)
        losses.append(loss.item())
    return losses


def test_the_default_configuration_is_gpt2_small():
    cfg = gpt2.GPT2_124M
    assert (cfg.vocab, cfg.context, cfg.layers, cfg.heads, cfg.dims, cfg.batch) == \
        (50304, 1024, 12, 12, 768, 16)
    # Counted from the shapes (no 124M model built): embeddings (tied head), 12 blocks, ln_f.
    d = cfg.dims
    block = 2 * 2 * d + (3 * d * d + 3 * d) + (d * d + d) + (4 * d * d + 4 * d) + (4 * d * d + d)
    assert cfg.vocab * d + cfg.context * d + cfg.layers * block + 2 * d == 124_475_904


def test_loss_at_initialisation_is_near_uniform():
    model = gpt2.make_model(CFG, compute_dtype=None)
    idx, tgt = (mx.array(a) for a in batch())
    loss = gpt2.loss_fn(model, idx, tgt).item()
    assert abs(loss - math.log(CFG.vocab)) < 0.1
    logits = model(idx)
    assert logits.shape == (CFG.batch, CFG.context, CFG.vocab)
    # Causal: changing the last token leaves every earlier position's logits unchanged.
    changed = mx.array(np.concatenate([batch()[0][:, :-1], batch(2)[0][:, -1:]], axis=1))
    assert mx.allclose(model(changed)[:, :-1], logits[:, :-1], atol=1e-5).item()


def test_bf16_compute_keeps_fp32_weights_and_lowers_the_loss():
    model = gpt2.make_model(CFG)
    assert model(mx.array(batch()[0])).dtype == mx.bfloat16
    losses = train(model, compiled=False, steps=6)
    assert losses[-1] < losses[0] - 0.5
    assert {v.dtype for _, v in tree_flatten(model.parameters())} == {mx.float32}


def test_compiled_step_matches_uncompiled():
    eager, compiled = gpt2.make_model(CFG), gpt2.make_model(CFG)
    a, b = train(eager, False, 4), train(compiled, True, 4)
    np.testing.assert_allclose(a, b, rtol=1e-3)
    for (name, p), (_, q) in zip(tree_flatten(eager.parameters()),
                                 tree_flatten(compiled.parameters())):
        np.testing.assert_allclose(np.array(p), np.array(q), atol=2e-3, err_msg=name)


def spread(model, std=0.5):
    """`model` with every parameter redrawn from N(0, std^2): GPT-2's small initialisation keeps
    activations where GELU's tanh approximation and the exact GELU agree to 1e-5, which would
    hide such a difference between the twins."""
    from mlx.utils import tree_map

    mx.random.seed(3)
    model.update(tree_map(lambda p: std * mx.random.normal(p.shape), model.parameters()))
    return model


def torch_twin(model):
    """The PyTorch model holding `model`'s weights."""
    torch = pytest.importorskip("torch")
    twin = gpt2.torch_model(CFG)
    ours = dict(tree_flatten(model.parameters()))
    theirs = dict(twin.named_parameters())
    assert set(ours) == set(theirs)
    with torch.no_grad():
        for name, p in theirs.items():
            p.copy_(torch.from_numpy(np.array(ours[name])))
    return torch, twin


def test_pytorch_twin_computes_the_same_logits():
    model = spread(gpt2.make_model(CFG, compute_dtype=None))
    torch, twin = torch_twin(model)
    idx = batch()[0]
    with torch.no_grad():
        theirs = twin(torch.from_numpy(idx).long()).numpy()
    np.testing.assert_allclose(np.array(model(mx.array(idx))), theirs, atol=2e-4)


def test_pytorch_twin_computes_the_same_gradients():
    import mlx.nn as nn

    model = spread(gpt2.make_model(CFG, compute_dtype=None))
    torch, twin = torch_twin(model)
    idx, tgt = batch()
    loss, grads = nn.value_and_grad(model, gpt2.loss_fn)(model, mx.array(idx), mx.array(tgt))
    logits = twin(torch.from_numpy(idx).long())
    theirs = torch.nn.functional.cross_entropy(logits.view(-1, CFG.vocab),
                                               torch.from_numpy(tgt).long().view(-1))
    theirs.backward()
    assert abs(loss.item() - theirs.item()) < 1e-5
    for name, p in twin.named_parameters():
        g = np.array(dict(tree_flatten(grads))[name])
        np.testing.assert_allclose(g, p.grad.numpy(), atol=1e-5, rtol=1e-3, err_msg=name)


def test_pytorch_twin_trains_the_same_way():
    model = gpt2.make_model(CFG)
    torch, twin = torch_twin(model)
    step = gpt2.torch_step(twin, CFG, compiled=False)
    idx, tgt = (torch.from_numpy(a).long() for a in batch())
    theirs = [step(idx, tgt).item() for _ in range(4)]
    # bf16 compute on both sides, with different casting policies (see gpt2_model.py).
    np.testing.assert_allclose(train(model, False, 4), theirs, atol=5e-3)


def test_benchmark_runs_at_the_tiny_configuration(tmp_path):
    """bench_gpt2.py end to end on the CPU, our column only (torch.compile on a CPU would
    build C++ for a minute)."""
    import json
    import subprocess
    import sys

    out = tmp_path / "bench.json"
    cmd = [sys.executable, os.path.join(ROOT, "benchmarks", "bench_gpt2.py"), "--device", "cpu",
           "--tiny", "--only", "rms_norm", "--only", "gpt2_compiled", "--steps", "2",
           "--warmup", "1", "--iters", "2", "--inner", "1", "--ours-only", "--json", str(out)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "| rms_norm bf16 [256, 512] | GB/s |" in r.stdout
    results = json.loads(out.read_text())["results"]
    assert results["rms_norm"]["ours"]["GB/s"] > 0
    ours = results["gpt2_compiled"]["ours"]
    assert ours["tokens/s"] > 0 and 0 < ours["peak GiB"] < 1
    assert abs(ours["loss"] - math.log(CFG.vocab)) < 1
    assert "torch" not in results["gpt2_compiled"]


def test_step_phases_benchmark_runs_at_the_tiny_configuration():
    """gpt2_step_phases.py end to end (our column; PyTorch's where it is installed): one row per
    phase, each a positive time, the optimizer's Python build within its update."""
    import re
    import subprocess
    import sys

    cmd = [sys.executable, os.path.join(ROOT, "benchmarks", "gpt2_step_phases.py"), "--tiny",
           "--calls", "2"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    rows = dict(re.findall(r"^\| ([^|]+?) \| ([0-9.]+) \|", r.stdout, re.M))
    for phase in ("step", "forward + backward", "forward", "AdamW update"):
        assert float(rows[phase]) > 0, r.stdout
    assert float(rows["AdamW update: Python build"]) <= float(rows["AdamW update"])
