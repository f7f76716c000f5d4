"""nn.init initializers: values, statistics and errors."""
import math

import numpy as np
import pytest

import mlx.core as mx
import mlx.nn as nn
from mlx.nn import init


def test_constant_identity_and_dtypes():
    a = mx.zeros((3, 4))
    out = init.constant(0.5)(a)
    assert out.shape == (3, 4) and out.dtype == mx.float32
    np.testing.assert_array_equal(np.array(out), np.full((3, 4), 0.5))
    assert init.constant(1, dtype=mx.float16)(a).dtype == mx.float16
    np.testing.assert_array_equal(np.array(init.identity()(mx.zeros((3, 3)))), np.eye(3))
    with pytest.raises(ValueError):
        init.identity()(a)


def _stats(x):
    x = np.array(x, np.float64)
    return x.mean(), x.std()


def test_normal_and_uniform():
    mean, std = _stats(init.normal(mean=2.0, std=0.5)(mx.zeros((200, 200))))
    assert abs(mean - 2.0) < 0.02 and abs(std - 0.5) < 0.02
    x = np.array(init.uniform(low=-3, high=1)(mx.zeros((200, 200))))
    assert x.min() >= -3 and x.max() <= 1 and abs(x.mean() + 1) < 0.05
    assert init.normal(dtype=mx.bfloat16)(mx.zeros((2,))).dtype == mx.bfloat16


@pytest.mark.parametrize("shape", [(300, 200), (40, 3, 3, 30)])
def test_glorot_and_he(shape):
    receptive = math.prod(shape[1:-1])
    fan_in, fan_out = shape[-1] * receptive, shape[0] * receptive
    a = mx.zeros(shape)
    _, std = _stats(init.glorot_normal()(a))
    assert abs(std / math.sqrt(2 / (fan_in + fan_out)) - 1) < 0.05
    x = np.array(init.glorot_uniform()(a, gain=2.0))
    limit = 2.0 * math.sqrt(6 / (fan_in + fan_out))
    assert np.abs(x).max() <= limit and np.abs(x).max() > 0.9 * limit
    _, std = _stats(init.he_normal()(a))
    assert abs(std / math.sqrt(1 / fan_in) - 1) < 0.05
    _, std = _stats(init.he_normal()(a, mode="fan_out", gain=3.0))
    assert abs(std / (3.0 / math.sqrt(fan_out)) - 1) < 0.05
    x = np.array(init.he_uniform()(a))
    assert np.abs(x).max() <= math.sqrt(3 / fan_in)
    with pytest.raises(ValueError):
        init.he_uniform()(a, mode="fan_avg")
    with pytest.raises(ValueError):
        init.glorot_normal()(mx.zeros((5,)))


def test_sparse():
    x = np.array(init.sparse(0.25, std=2.0)(mx.zeros((50, 10))))
    assert ((x == 0).sum(1) == 3).all()  # ceil(0.25 * 10) zeros in every row
    assert abs(x[x != 0].std() - 2.0) < 0.4
    with pytest.raises(ValueError):
        init.sparse(0.5)(mx.zeros((2, 2, 2)))


@pytest.mark.parametrize("shape", [(4, 6), (6, 4), (5, 5)])
def test_orthogonal(shape):
    q = np.array(init.orthogonal(gain=2.0)(mx.zeros(shape)), np.float64)
    assert q.shape == shape
    small = min(shape)
    gram = q @ q.T if shape[0] <= shape[1] else q.T @ q
    np.testing.assert_allclose(gram, 4.0 * np.eye(small), atol=1e-4)
    with pytest.raises(ValueError):
        init.orthogonal()(mx.zeros((3,)))


def test_initializer_on_a_layer():
    layer = nn.Linear(3, 3)
    layer.weight = init.identity()(layer.weight)
    x = mx.array([[1.0, 2.0, 3.0]])
    np.testing.assert_allclose(np.array(layer(x) - layer.bias), [[1.0, 2.0, 3.0]], rtol=1e-6)
