"""mx.random: keys, the global key, and the statistics of each sampler."""
import math

import numpy as np
import pytest

import mlx.core as mx

N = 200_000


def np_(a):
    return np.array(a, dtype=np.float64)


def test_keys_and_split():
    k = mx.random.key(0)
    assert k.dtype == mx.uint32 and k.shape == (2,)
    assert np.array_equal(np.array(mx.random.key(0)), np.array(k))
    assert not np.array_equal(np.array(mx.random.key(1)), np.array(k))
    assert np.array(mx.random.key(2**32 + 5)).tolist() == [1, 5]
    keys = mx.random.split(k)
    assert keys.shape == (2, 2) and keys.dtype == mx.uint32
    k1, k2 = keys
    assert not np.array_equal(np.array(k1), np.array(k2))
    assert np.array_equal(np.array(mx.random.split(k)), np.array(keys))
    assert mx.random.split(k, 10).shape == (10, 2)
    with pytest.raises(ValueError):
        mx.random.split(k, -1)


def test_same_key_same_numbers_global_key_advances():
    k = mx.random.key(7)
    for sampler in (
        lambda key: mx.random.uniform(shape=(5,), key=key),
        lambda key: mx.random.normal((5,), key=key),
        lambda key: mx.random.randint(0, 100, (5,), key=key),
        lambda key: mx.random.bits((5,), key=key),
        lambda key: mx.random.permutation(10, key=key),
    ):
        assert np.array_equal(np.array(sampler(k)), np.array(sampler(k)))
    mx.random.seed(3)
    a, b = mx.random.uniform(shape=(4,)), mx.random.uniform(shape=(4,))
    assert not np.array_equal(np.array(a), np.array(b))
    mx.random.seed(3)
    assert np.array_equal(np.array(mx.random.uniform(shape=(4,))), np.array(a))
    assert np.array_equal(np.array(mx.random.uniform(shape=(4,))), np.array(b))
    # The global key is the first entry of mx.random.state.
    assert isinstance(mx.random.state, list) and mx.random.state[0].shape == (2,)
    mx.random.seed(3)
    before = np.array(mx.random.state[0])
    mx.random.normal()
    assert not np.array_equal(np.array(mx.random.state[0]), before)


def test_uniform():
    u = np_(mx.random.uniform(shape=(N,), key=mx.random.key(1)))
    assert u.min() >= 0 and u.max() < 1
    assert abs(u.mean() - 0.5) < 0.005 and abs(u.var() - 1 / 12) < 0.002
    assert mx.random.uniform().shape == ()
    v = mx.random.uniform(-2, 3, (N,), key=mx.random.key(2))
    assert v.dtype == mx.float32
    v = np_(v)
    assert v.min() >= -2 and v.max() < 3 and abs(v.mean() - 0.5) < 0.03
    # Array bounds broadcast against the shape.
    low = mx.array([0.0, 10.0, 100.0])
    w = np_(mx.random.uniform(low, low + 1.0, (1000, 3), key=mx.random.key(3)))
    assert np.all((w >= [0, 10, 100]) & (w < [1, 11, 101]))
    for dt in (mx.float16, mx.bfloat16, mx.float64):
        x = mx.random.uniform(shape=(1000,), dtype=dt, key=mx.random.key(4))
        assert x.dtype == dt and 0 <= np_(x).min() and np_(x).max() < 1
    with pytest.raises(ValueError):
        mx.random.uniform(shape=(2,), dtype=mx.int32)
    with pytest.raises(ValueError):
        mx.random.uniform(mx.zeros((3,)), 1, (2,))


def test_normal():
    x = np_(mx.random.normal((N,), key=mx.random.key(5)))
    assert abs(x.mean()) < 0.01 and abs(x.std() - 1) < 0.01
    y = np_(mx.random.normal((N,), loc=2.0, scale=3.0, key=mx.random.key(6)))
    assert abs(y.mean() - 2) < 0.03 and abs(y.std() - 3) < 0.03
    z = mx.random.normal((2, 3), dtype=mx.float16, loc=mx.array([0.0, 10.0, 20.0]))
    assert z.dtype == mx.float16 and abs(np_(z)[:, 2].mean() - 20) < 5
    c = mx.random.normal((N,), dtype=mx.complex64, key=mx.random.key(7))
    c = np.array(c)
    assert abs(c.real.var() - 0.5) < 0.01 and abs(c.imag.var() - 0.5) < 0.01


def test_randint():
    x = mx.random.randint(-3, 5, (N,), key=mx.random.key(8))
    assert x.dtype == mx.int32
    x = np.array(x)
    assert x.min() == -3 and x.max() == 4
    counts = np.bincount(x + 3)
    assert np.all(np.abs(counts / N - 1 / 8) < 0.01)
    assert mx.random.randint(0, 10, (3,), dtype=mx.uint8).dtype == mx.uint8
    with pytest.raises(ValueError):
        mx.random.randint(0, 10, (3,), dtype=mx.float32)


def test_bernoulli():
    b = mx.random.bernoulli(0.3, (N,), key=mx.random.key(9))
    assert b.dtype == mx.bool_ and abs(np.array(b).mean() - 0.3) < 0.01
    p = mx.array([0.0, 1.0, 0.5])
    b = mx.random.bernoulli(p, key=mx.random.key(10))
    assert b.shape == (3,)
    b = np.array(mx.random.bernoulli(p, (N, 3), key=mx.random.key(11)))
    assert b[:, 0].sum() == 0 and b[:, 1].all() and abs(b[:, 2].mean() - 0.5) < 0.01
    assert mx.random.bernoulli().shape == ()


def test_truncated_normal():
    x = np_(mx.random.truncated_normal(-1, 2, (N,), key=mx.random.key(12)))
    assert x.min() > -1 and x.max() < 2
    # Mean of the standard normal truncated to (a, b).
    pdf = lambda t: math.exp(-t * t / 2) / math.sqrt(2 * math.pi)
    cdf = lambda t: 0.5 * (1 + math.erf(t / math.sqrt(2)))
    mean = (pdf(-1) - pdf(2)) / (cdf(2) - cdf(-1))
    assert abs(x.mean() - mean) < 0.01
    y = mx.random.truncated_normal(mx.array([0.0, 5.0]), mx.array([1.0, 6.0]))
    assert y.shape == (2,) and 0 < np_(y)[0] < 1 and 5 < np_(y)[1] < 6


def test_categorical():
    logits = mx.array(np.log([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]]).astype(np.float32))
    s = mx.random.categorical(logits, num_samples=N, key=mx.random.key(13))
    assert s.shape == (2, N) and s.dtype == mx.uint32
    s = np.array(s)
    np.testing.assert_allclose(np.bincount(s[0], minlength=3) / N, [0.1, 0.2, 0.7], atol=0.01)
    np.testing.assert_allclose(np.bincount(s[1], minlength=3) / N, [0.5, 0.25, 0.25], atol=0.01)
    assert mx.random.categorical(logits).shape == (2,)
    assert mx.random.categorical(logits, axis=0).shape == (3,)
    assert mx.random.categorical(logits, shape=(4, 2)).shape == (4, 2)
    with pytest.raises(ValueError):
        mx.random.categorical(logits, shape=(4, 2), num_samples=3)


def test_gumbel_and_laplace():
    g = np_(mx.random.gumbel((N,), key=mx.random.key(14)))
    assert abs(g.mean() - 0.5772156649) < 0.01 and abs(g.var() - math.pi**2 / 6) < 0.05
    assert mx.random.gumbel(dtype=mx.float16).dtype == mx.float16
    l = np_(mx.random.laplace((N,), loc=1.0, scale=2.0, key=mx.random.key(15)))
    assert abs(l.mean() - 1) < 0.03 and abs(l.var() - 8) < 0.2
    l0 = np_(mx.random.laplace((N,), key=mx.random.key(16)))
    assert abs(np.median(l0)) < 0.02 and abs(np.abs(l0).mean() - 1) < 0.02


def test_permutation():
    p = mx.random.permutation(100, key=mx.random.key(17))
    assert p.dtype == mx.int32 and sorted(np.array(p).tolist()) == list(range(100))
    assert np.array(p).tolist() != list(range(100))
    x = mx.array(np.arange(12).reshape(4, 3))
    rows = np.array(mx.random.permutation(x, key=mx.random.key(18)))
    assert sorted(rows[:, 0].tolist()) == [0, 3, 6, 9]
    np.testing.assert_array_equal(rows[:, 1] - rows[:, 0], 1)
    cols = np.array(mx.random.permutation(x, axis=1, key=mx.random.key(18)))
    np.testing.assert_array_equal(np.sort(cols, axis=1), np.arange(12).reshape(4, 3))


def test_bits():
    for width, dt in ((1, mx.uint8), (2, mx.uint16), (4, mx.uint32), (8, mx.uint64)):
        b = mx.random.bits((1000,), width, key=mx.random.key(19))
        assert b.dtype == dt
    b = np.array(mx.random.bits((N,), key=mx.random.key(20)), dtype=np.float64)
    assert abs(b.mean() / 2**32 - 0.5) < 0.005
    with pytest.raises(ValueError):
        mx.random.bits((3,), 3)
    with pytest.raises(ValueError):
        mx.random.bits((3,), key=mx.array([1, 2, 3], mx.uint32))
