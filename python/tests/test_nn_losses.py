"""mlx.nn.losses against NumPy references (float64), every reduction, and argument errors."""
import math

import numpy as np
import pytest

import mlx.core as mx
import mlx.nn as nn
from mlx.nn import losses

REDUCE = {"none": lambda l: l, "mean": np.mean, "sum": np.sum}


def _check(got, expected, reduction, rtol=1e-5, atol=1e-6):
    expected = REDUCE[reduction](expected)
    assert tuple(got.shape) == np.shape(expected)
    np.testing.assert_allclose(np.array(got), expected, rtol=rtol, atol=atol)


def _lse(x, axis):
    m = x.max(axis=axis, keepdims=True)
    return np.squeeze(m, axis) + np.log(np.exp(x - m).sum(axis=axis))


@pytest.fixture
def logits_and_labels(rng):
    logits = rng.standard_normal((6, 5)).astype(np.float32) * 3
    labels = rng.integers(0, 5, 6).astype(np.int32)
    return logits, labels


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_cross_entropy_class_indices(logits_and_labels, reduction):
    logits, labels = logits_and_labels
    x = logits.astype(np.float64)
    expected = _lse(x, 1) - x[np.arange(6), labels]
    got = losses.cross_entropy(mx.array(logits), mx.array(labels), reduction=reduction)
    _check(got, expected, reduction)


def test_cross_entropy_default_reduction_is_none_and_doc_example():
    got = losses.cross_entropy(mx.array([[2.0, -1.0], [-1.0, 2.0]]), mx.array([0, 1]))
    np.testing.assert_allclose(np.array(got), [0.0485873, 0.0485873], rtol=1e-5)


def test_cross_entropy_probabilities_equal_one_hot_indices(logits_and_labels):
    logits, labels = logits_and_labels
    one_hot = np.eye(5, dtype=np.float32)[labels]
    a = losses.cross_entropy(mx.array(logits), mx.array(one_hot))
    b = losses.cross_entropy(mx.array(logits), mx.array(labels))
    np.testing.assert_allclose(np.array(a), np.array(b), rtol=1e-5)
    probs = np.random.default_rng(1).dirichlet(np.ones(5), 6)
    expected = -(probs * (logits - _lse(logits.astype(np.float64), 1)[:, None])).sum(1)
    got = losses.cross_entropy(mx.array(logits), mx.array(probs.astype(np.float32)))
    np.testing.assert_allclose(np.array(got), expected, rtol=1e-5)


@pytest.mark.parametrize("targets_kind", ["indices", "probabilities"])
def test_cross_entropy_label_smoothing(logits_and_labels, targets_kind):
    logits, labels = logits_and_labels
    s, k = 0.2, 5
    one_hot = np.eye(k)[labels]
    smoothed = (1 - s) * one_hot + s / k
    log_p = logits - _lse(logits.astype(np.float64), 1)[:, None]
    expected = -(smoothed * log_p).sum(1)
    targets = labels if targets_kind == "indices" else one_hot.astype(np.float32)
    got = losses.cross_entropy(mx.array(logits), mx.array(targets), label_smoothing=s)
    np.testing.assert_allclose(np.array(got), expected, rtol=1e-5)


def test_cross_entropy_weights_and_axis(rng):
    logits = rng.standard_normal((3, 4, 7)).astype(np.float32)  # classes on axis 1
    labels = rng.integers(0, 4, (3, 7)).astype(np.int32)
    weights = rng.uniform(0, 2, (3, 7)).astype(np.float32)
    x = logits.astype(np.float64)
    picked = np.take_along_axis(x, labels[:, None, :], 1)[:, 0, :]
    expected = (_lse(x, 1) - picked) * weights
    got = losses.cross_entropy(
        mx.array(logits), mx.array(labels), weights=mx.array(weights), axis=1, reduction="sum"
    )
    _check(got, expected, "sum", rtol=1e-5)


def test_cross_entropy_errors(logits_and_labels):
    logits, labels = mx.array(logits_and_labels[0]), mx.array(logits_and_labels[1])
    with pytest.raises(ValueError):
        losses.cross_entropy(logits, labels, label_smoothing=1.0)
    with pytest.raises(ValueError):
        losses.cross_entropy(logits, labels, label_smoothing=-0.1)
    with pytest.raises(ValueError):
        losses.cross_entropy(logits, labels, weights=mx.ones((5,)))
    with pytest.raises(ValueError):
        losses.cross_entropy(logits, mx.zeros((5,), dtype=mx.int32))
    with pytest.raises(ValueError):
        losses.cross_entropy(logits, mx.zeros((6, 4)))
    with pytest.raises(ValueError):
        losses.cross_entropy(logits, labels, reduction="average")


def test_cross_entropy_gradient_is_softmax_minus_onehot(logits_and_labels):
    logits, labels = logits_and_labels
    grad = mx.grad(lambda l: losses.cross_entropy(l, mx.array(labels), reduction="sum"))(
        mx.array(logits)
    )
    e = np.exp(logits - logits.max(1, keepdims=True))
    expected = e / e.sum(1, keepdims=True) - np.eye(5)[labels]
    np.testing.assert_allclose(np.array(grad), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_binary_cross_entropy(rng, reduction):
    logits = rng.standard_normal(10).astype(np.float32) * 4
    targets = rng.uniform(0, 1, 10).astype(np.float32)
    x = logits.astype(np.float64)
    p = 1 / (1 + np.exp(-x))
    expected = -(targets * np.log(p) + (1 - targets) * np.log(1 - p))
    got = losses.binary_cross_entropy(
        mx.array(logits), mx.array(targets), reduction=reduction
    )
    _check(got, expected, reduction, rtol=1e-5)
    got = losses.binary_cross_entropy(
        mx.array(p.astype(np.float32)), mx.array(targets), with_logits=False, reduction=reduction
    )
    _check(got, expected, reduction, rtol=1e-4)


def test_binary_cross_entropy_defaults_weights_and_clipping():
    got = losses.binary_cross_entropy(mx.array([0.0, 2.0]), mx.array([1.0, 0.0]))
    assert got.shape == ()  # mean by default
    probs = mx.array([0.0, 1.0])
    got = losses.binary_cross_entropy(
        probs, mx.array([1.0, 0.0]), with_logits=False, reduction="none"
    )
    np.testing.assert_allclose(np.array(got), [100.0, 100.0])
    w = mx.array([2.0, 0.5])
    got = losses.binary_cross_entropy(
        mx.array([0.0, 0.0]), mx.array([1.0, 0.0]), w, reduction="none"
    )
    np.testing.assert_allclose(np.array(got), [2 * math.log(2), 0.5 * math.log(2)], rtol=1e-6)
    with pytest.raises(ValueError):
        losses.binary_cross_entropy(mx.zeros((2,)), mx.zeros((3,)))
    with pytest.raises(ValueError):
        losses.binary_cross_entropy(mx.zeros((2,)), mx.zeros((2,)), mx.ones((3,)))


@pytest.fixture
def pair(rng):
    return (rng.standard_normal((4, 5)).astype(np.float32) * 2,
            rng.standard_normal((4, 5)).astype(np.float32) * 2)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_regression_losses(pair, reduction):
    p, t = pair
    d = p.astype(np.float64) - t
    a = np.abs(d)
    cases = [
        (losses.l1_loss, {}, a),
        (losses.mse_loss, {}, d**2),
        (losses.smooth_l1_loss, {"beta": 0.8}, np.where(a < 0.8, 0.5 * a**2 / 0.8, a - 0.4)),
        (losses.huber_loss, {"delta": 1.5}, np.where(a <= 1.5, 0.5 * a**2, 1.5 * (a - 0.75))),
        (losses.log_cosh_loss, {}, np.log(np.cosh(d))),
    ]
    for fn, kwargs, expected in cases:
        got = fn(mx.array(p), mx.array(t), reduction=reduction, **kwargs)
        _check(got, expected, reduction, rtol=1e-5)


def test_default_reductions(pair):
    p, t = mx.array(pair[0]), mx.array(pair[1])
    for fn in (losses.l1_loss, losses.mse_loss, losses.smooth_l1_loss):
        assert fn(p, t).shape == ()
    for fn in (losses.huber_loss, losses.log_cosh_loss, losses.hinge_loss):
        assert fn(p, t).shape == (4, 5)
    for fn in (losses.l1_loss, losses.mse_loss, losses.smooth_l1_loss):
        with pytest.raises(ValueError):
            fn(p, t[:2])


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_nll_and_kl_div(rng, reduction):
    logits = rng.standard_normal((6, 4))
    log_p = logits - _lse(logits, 1)[:, None]
    labels = rng.integers(0, 4, 6).astype(np.int32)
    got = losses.nll_loss(mx.array(log_p.astype(np.float32)), mx.array(labels), reduction=reduction)
    _check(got, -log_p[np.arange(6), labels], reduction, rtol=1e-5)
    other = rng.standard_normal((6, 4))
    log_q = other - _lse(other, 1)[:, None]
    got = losses.kl_div_loss(
        mx.array(log_p.astype(np.float32)), mx.array(log_q.astype(np.float32)), reduction=reduction
    )
    _check(got, (np.exp(log_q) * (log_q - log_p)).sum(1), reduction, rtol=1e-5)


@pytest.mark.parametrize("full", [False, True])
def test_gaussian_nll(rng, full):
    mu = rng.standard_normal(8).astype(np.float32)
    t = rng.standard_normal(8).astype(np.float32)
    var = rng.uniform(0.1, 2, 8).astype(np.float32)
    var[0] = 0.0  # clamped at eps
    v = np.maximum(var.astype(np.float64), 1e-6)
    expected = 0.5 * (np.log(v) + (t - mu.astype(np.float64)) ** 2 / v)
    if full:
        expected += 0.5 * np.log(2 * np.pi)
    got = losses.gaussian_nll_loss(
        mx.array(mu), mx.array(t), mx.array(var), full=full, reduction="none"
    )
    np.testing.assert_allclose(np.array(got), expected, rtol=1e-5)
    assert losses.gaussian_nll_loss(mx.array(mu), mx.array(t), mx.array(var)).shape == ()
    with pytest.raises(ValueError):
        losses.gaussian_nll_loss(mx.array(mu), mx.array(t), mx.array(var[:3]))


@pytest.mark.parametrize("p", [1, 2, 3])
def test_triplet_loss(rng, p):
    a, pos, neg = (rng.standard_normal((5, 4)).astype(np.float32) for _ in range(3))

    def dist(x, y):
        return ((np.abs(x.astype(np.float64) - y) ** p).sum(-1) + 1e-6) ** (1 / p)

    expected = np.maximum(dist(a, pos) - dist(a, neg) + 0.5, 0)
    got = losses.triplet_loss(mx.array(a), mx.array(pos), mx.array(neg), p=p, margin=0.5)
    np.testing.assert_allclose(np.array(got), expected, rtol=1e-5, atol=1e-6)
    got = losses.triplet_loss(
        mx.array(a), mx.array(pos), mx.array(neg), p=p, margin=0.5, reduction="mean"
    )
    np.testing.assert_allclose(np.array(got), expected.mean(), rtol=1e-5, atol=1e-6)


def test_hinge_cosine_and_margin_ranking(rng):
    x = rng.standard_normal(7).astype(np.float32)
    y = np.sign(rng.standard_normal(7)).astype(np.float32)
    np.testing.assert_allclose(
        np.array(losses.hinge_loss(mx.array(x), mx.array(y))), np.maximum(1 - x * y, 0), rtol=1e-6
    )
    x1 = rng.standard_normal((3, 6)).astype(np.float32)
    x2 = rng.standard_normal((3, 6)).astype(np.float32)
    expected = (x1 * x2).sum(1) / (np.linalg.norm(x1, axis=1) * np.linalg.norm(x2, axis=1))
    got = losses.cosine_similarity_loss(mx.array(x1), mx.array(x2))
    np.testing.assert_allclose(np.array(got), expected, rtol=1e-5)
    got = losses.cosine_similarity_loss(mx.array(x1.T), mx.array(x2.T), axis=0, reduction="sum")
    np.testing.assert_allclose(np.array(got), expected.sum(), rtol=1e-5)
    zero = losses.cosine_similarity_loss(mx.zeros((2, 3)), mx.ones((2, 3)))
    np.testing.assert_array_equal(np.array(zero), [0.0, 0.0])
    a, b = x1[0], x2[0]
    t = np.sign(rng.standard_normal(6)).astype(np.float32)
    expected = np.maximum(0, -t * (a - b) + 0.3)
    got = losses.margin_ranking_loss(mx.array(a), mx.array(b), mx.array(t), margin=0.3)
    np.testing.assert_allclose(np.array(got), expected, rtol=1e-6)
    with pytest.raises(ValueError):
        losses.margin_ranking_loss(mx.array(a), mx.array(b), mx.array(t[:2]))


def test_losses_are_exported():
    for name in ("binary_cross_entropy", "cosine_similarity_loss", "cross_entropy",
                 "gaussian_nll_loss", "hinge_loss", "huber_loss", "kl_div_loss", "l1_loss",
                 "log_cosh_loss", "margin_ranking_loss", "mse_loss", "nll_loss",
                 "smooth_l1_loss", "triplet_loss"):
        assert callable(getattr(nn.losses, name))
