"""mlx.nn additions for MLX API completeness: relu2 / ReLU2, the activation classes'
constructor signatures, Upsample(antialias=), Module.update with non-array entries,
average_gradients and mlx.nn.layers.distributed on a group of one."""
import inspect

import numpy as np
import pytest

import mlx.core as mx
import mlx.nn as nn
from mlx.nn.layers.distributed import (
    AllToShardedLinear,
    ShardedToAllLinear,
    fully_shard,
    shard_inplace,
    shard_linear,
    sum_gradients,
)
from mlx.utils import tree_flatten


def test_relu2(rng):
    x = rng.standard_normal((4, 5)).astype(np.float32)
    np.testing.assert_allclose(np.array(nn.relu2(mx.array(x))), np.maximum(x, 0) ** 2)
    np.testing.assert_allclose(np.array(nn.ReLU2()(mx.array(x))), np.maximum(x, 0) ** 2)
    g = mx.grad(lambda v: nn.relu2(v).sum())(mx.array(x))
    np.testing.assert_allclose(np.array(g), 2 * np.maximum(x, 0), rtol=1e-6)


@pytest.mark.parametrize(
    "cls,param,value,fn",
    [
        (nn.ELU, "alpha", 0.5, lambda x: nn.elu(x, alpha=0.5)),
        (nn.CELU, "alpha", 2.0, lambda x: nn.celu(x, alpha=2.0)),
        (nn.GLU, "axis", 0, lambda x: nn.glu(x, axis=0)),
        (nn.LeakyReLU, "negative_slope", 0.2, lambda x: nn.leaky_relu(x, negative_slope=0.2)),
        (nn.HardShrink, "lambd", 1.0, lambda x: nn.hard_shrink(x, lambd=1.0)),
        (nn.Softshrink, "lambd", 1.0, lambda x: nn.softshrink(x, lambd=1.0)),
        (nn.Step, "threshold", 0.5, lambda x: nn.step(x, threshold=0.5)),
    ],
)
def test_activation_class_arguments(cls, param, value, fn, rng):
    assert param in inspect.signature(cls).parameters
    x = mx.array(rng.standard_normal((4, 6)).astype(np.float32))
    for layer in (cls(value), cls(**{param: value})):
        np.testing.assert_allclose(np.array(layer(x)), np.array(fn(x)), rtol=1e-6)
    with pytest.raises(TypeError):
        cls(**{"not_a_parameter": 1})


def _antialias_reference(x, scale, kernel, support):
    """NumPy float64 reference of one axis (axis 1 of (N, W, C))."""
    n_in = x.shape[1]
    n_out = int(np.floor(n_in * scale))
    stretch = 1 / scale
    out = np.zeros((x.shape[0], n_out, x.shape[2]))
    for i in range(n_out):
        centre = (i + 0.5) * stretch
        d = np.abs((np.arange(n_in) + 0.5 - centre) / stretch)
        w = np.where(d < support, kernel(d), 0.0)
        w /= w.sum()
        out[:, i] = np.einsum("w,nwc->nc", w, x)
    return out


def test_upsample_antialias_downsampling(rng):
    x = rng.standard_normal((2, 8, 3))
    up = nn.Upsample(scale_factor=0.5, mode="linear", antialias=True)
    # Halving [0, 1, 2, 3]: the triangle stretched to 2 samples weighs (0.75, 0.75, 0.25) around
    # each output centre (PyTorch's antialias=True gives the same).
    ramp = mx.arange(4, dtype=mx.float32).reshape(1, 4, 1)
    np.testing.assert_allclose(np.array(up(ramp)).ravel(), [1.25 / 1.75, 4 / 1.75], rtol=1e-6)
    ref = _antialias_reference(x, 0.375, lambda d: 1 - d, 1.0)
    out = np.array(nn.Upsample(0.375, mode="linear", antialias=True)(mx.array(x, dtype=mx.float32)))
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)

    def keys(d, a=-0.75):
        return np.where(d <= 1, ((a + 2) * d - (a + 3)) * d * d + 1,
                        ((a * d - 5 * a) * d + 8 * a) * d - 4 * a)

    out = np.array(nn.Upsample(0.5, mode="cubic", antialias=True)(mx.array(x, dtype=mx.float32)))
    np.testing.assert_allclose(out, _antialias_reference(x, 0.5, keys, 2.0), rtol=1e-4, atol=1e-5)
    # Constants stay constant; growing axes are unaffected by antialias.
    c = mx.full((1, 9, 9, 2), 3.0)
    np.testing.assert_allclose(np.array(nn.Upsample((0.4, 0.7), "linear", antialias=True)(c)), 3.0,
                               rtol=1e-6)
    y = mx.array(rng.standard_normal((1, 4, 2)).astype(np.float32))
    np.testing.assert_array_equal(
        np.array(nn.Upsample(2.0, "linear", antialias=True)(y)),
        np.array(nn.Upsample(2.0, "linear")(y)),
    )
    assert "antialias=True" in repr(up)


def test_upsample_antialias_errors():
    with pytest.raises(ValueError, match="antialias"):
        nn.Upsample(0.5, mode="nearest", antialias=True)
    with pytest.raises(ValueError, match="antialias"):
        nn.Upsample(0.5, mode="linear", align_corners=True, antialias=True)


def test_module_update_with_string_and_int_lists():
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(2, 2)
            self.layer_types = ["full", "sliding"]
            self.ids = [3, 4]

    m = Model()
    params = m.parameters()
    m.update(params)
    m.update(m.trainable_parameters())
    assert m.layer_types == ["full", "sliding"] and m.ids == [3, 4]
    with pytest.raises(ValueError, match="not a parameter"):
        m.update({"ids": [mx.zeros((1,)), {}]})


def test_average_gradients_on_one_process():
    grads = {"w": mx.ones((2, 2)), "b": [mx.zeros((3,))]}
    out = nn.average_gradients(grads)
    assert out is grads
    from mlx.nn.utils import average_gradients

    assert average_gradients(grads, group=mx.distributed.init()) is grads


def test_sharded_linears_match_linear_on_one_process(rng):
    lin = nn.Linear(6, 4)
    x = mx.array(rng.standard_normal((3, 6)).astype(np.float32))
    for sharding, cls in [("all-to-sharded", AllToShardedLinear),
                          ("sharded-to-all", ShardedToAllLinear)]:
        layer = shard_linear(lin, sharding)
        assert isinstance(layer, cls)
        np.testing.assert_allclose(np.array(layer(x)), np.array(lin(x)), rtol=1e-6)
        g = mx.grad(lambda v: layer(v).sum())(x)
        np.testing.assert_allclose(np.array(g), np.array(mx.grad(lambda v: lin(v).sum())(x)),
                                   rtol=1e-6)
    no_bias = AllToShardedLinear.from_linear(nn.Linear(6, 4, bias=False), segments=2)
    assert "bias" not in no_bias and no_bias.weight.shape == (4, 6)
    assert ShardedToAllLinear(6, 4).weight.shape == (4, 6)
    with pytest.raises(ValueError, match="sharding"):
        shard_linear(lin, "diagonal")
    with pytest.raises(TypeError, match="Linear"):
        shard_linear(nn.ReLU(), "all-to-sharded")


def test_shard_inplace_and_sum_gradients_on_one_process():
    model = nn.Sequential(nn.Linear(4, 6), nn.Linear(6, 2))
    before = {k: np.array(v) for k, v in tree_flatten(model.parameters())}
    shard_inplace(model, "all-to-sharded", segments=3 - 1)
    shard_inplace(model, lambda path, w: (0, 1) if w.ndim == 2 else None)
    after = {k: np.array(v) for k, v in tree_flatten(model.parameters())}
    assert before.keys() == after.keys()
    for k in before:
        np.testing.assert_array_equal(before[k], after[k])
    with pytest.raises(ValueError, match="segments"):
        shard_inplace(model, "all-to-sharded", segments=4)
    f = sum_gradients()
    x = mx.ones((3,))
    assert f(x) is x


def test_fully_shard_on_one_process():
    model = nn.Linear(3, 2)
    assert fully_shard(model) is model
    wrapped = fully_shard(model, compute_dtype=mx.bfloat16)
    assert isinstance(wrapped, nn.FullyShardedModule)
    out = wrapped(mx.ones((1, 3), dtype=mx.bfloat16))
    assert out.dtype == mx.bfloat16
    assert model.weight.dtype == mx.float32
    np.testing.assert_allclose(np.array(out.astype(mx.float32)),
                               np.array(model(mx.ones((1, 3)))), rtol=2e-2, atol=2e-2)


def test_mixed_precision_context(rng):
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    x = mx.array(rng.standard_normal((3, 4)).astype(np.float32))
    ref = np.array(model(x))
    assert mx._mixed_precision_dtype() is None
    with mx.mixed_precision(mx.bfloat16) as dtype:
        assert dtype == mx.bfloat16 and mx._mixed_precision_dtype() == mx.bfloat16
        out = model(x)
        assert out.dtype == mx.bfloat16
        # Raw matrix products compute in the dtype too; elementwise ops are unchanged.
        assert (x @ x.T).dtype == mx.bfloat16 and mx.matmul(x, x.T).dtype == mx.bfloat16
        assert mx.addmm(mx.zeros((3, 3)), x, x.T).dtype == mx.bfloat16
        assert (x + 1).dtype == mx.float32

        def loss(params, x):
            model.update(params)
            return model(x).astype(mx.float32).sum()

        grads = mx.grad(loss)(model.trainable_parameters(), x)
    np.testing.assert_allclose(np.array(out.astype(mx.float32)), ref, rtol=3e-2, atol=3e-2)
    # Parameters and gradients keep float32; the context is gone afterwards.
    assert all(v.dtype == mx.float32 for _, v in tree_flatten(model.parameters()))
    assert all(v.dtype == mx.float32 for _, v in tree_flatten(grads))
    assert mx._mixed_precision_dtype() is None and model(x).dtype == mx.float32
    # Nesting restores the outer dtype; integer dtypes are refused.
    with mx.mixed_precision(mx.float16):
        with mx.mixed_precision(mx.bfloat16):
            assert mx._mixed_precision_dtype() == mx.bfloat16
        assert mx._mixed_precision_dtype() == mx.float16
    with pytest.raises(TypeError, match="floating"):
        mx.mixed_precision(mx.int32)


class _FakeGroup:
    """Stands for one member of a larger group, to exercise the code paths of sizes > 1."""

    def __init__(self, rank, size):
        self._rank, self._size = rank, size

    def rank(self):
        return self._rank

    def size(self):
        return self._size


def test_sharding_code_paths_for_larger_groups(monkeypatch):
    import mlx.nn.layers.distributed as dist

    g = _FakeGroup(1, 2)
    # Every member holds the same values, so the sum over the group is size * x.
    monkeypatch.setattr(mx.distributed, "all_sum", lambda x, group=None, stream=None: x * group.size())
    lin = nn.Linear(4, 6)
    w = np.array(lin.weight)
    # all-to-sharded: rank 1 of 2 takes the second half of the output rows, of each segment
    # separately with segments=3 (rows 1, 3, 5).
    layer = dist.shard_linear(lin, "all-to-sharded", group=g)
    np.testing.assert_array_equal(np.array(layer.weight), w[3:])
    np.testing.assert_array_equal(np.array(layer.bias), np.array(lin.bias)[3:])
    seg = dist.shard_linear(lin, "all-to-sharded", segments=3, group=g)
    np.testing.assert_array_equal(np.array(seg.weight), w[[1, 3, 5]])
    # sharded-to-all: the second half of the input columns; the bias stays whole.
    s2a = dist.shard_linear(lin, "sharded-to-all", group=g)
    np.testing.assert_array_equal(np.array(s2a.weight), w[:, 2:])
    np.testing.assert_array_equal(np.array(s2a.bias), np.array(lin.bias))
    x = mx.ones((1, 2))
    np.testing.assert_allclose(np.array(s2a(x)), 2 * (np.ones((1, 2)) @ w[:, 2:].T)
                               + np.array(lin.bias), rtol=1e-6)
    # The input gradient of an all-to-sharded layer is summed over the group.
    xin = mx.ones((1, 4))
    grad = mx.grad(lambda v: layer(v).sum())(xin)
    np.testing.assert_allclose(np.array(grad), 2 * w[3:].sum(0, keepdims=True), rtol=1e-6)
    # Data parallel: the mean over the group.
    grads = {"w": mx.full((2,), 3.0)}
    out = nn.average_gradients(grads, group=g)
    assert out["w"].tolist() == [3.0, 3.0]
    with pytest.raises(ValueError, match="divisible"):
        dist.AllToShardedLinear(4, 5, group=g)
    with pytest.raises(ValueError, match="divisible"):
        dist.ShardedToAllLinear(5, 4, group=g)


def test_fully_sharded_module_for_larger_groups(monkeypatch):
    g = _FakeGroup(0, 2)
    # Members hold equal shards here: gathering repeats the shard, scattering sums the halves.
    monkeypatch.setattr(mx.distributed, "all_gather",
                        lambda x, group=None: mx.concatenate([x] * group.size()))
    monkeypatch.setattr(mx.distributed, "sum_scatter",
                        lambda x, group=None: sum(mx.split(x, group.size())))
    model = nn.Linear(3, 4)
    w = np.array(model.weight)
    wrapped = nn.fully_shard(model, group=g)
    assert isinstance(wrapped, nn.FullyShardedModule)
    assert model.weight.shape == (2, 3) and model.bias.shape == (2,)
    np.testing.assert_array_equal(np.array(model.weight), w[:2])
    x = mx.ones((1, 3))
    out = wrapped(x)
    assert out.shape == (1, 4)
    expect = np.ones((1, 3)) @ np.concatenate([w[:2], w[:2]]).T
    np.testing.assert_allclose(np.array(out) - np.concatenate([np.array(model.bias)] * 2),
                               expect, rtol=1e-6)
    # Gradients come back shaped like the shards (summed over the gathered copies).
    grads = nn.value_and_grad(wrapped, lambda v: wrapped(v).sum())(x)[1]
    assert grads["module"]["weight"].shape == (2, 3)
    np.testing.assert_allclose(np.array(grads["module"]["weight"]), np.full((2, 3), 2.0))
