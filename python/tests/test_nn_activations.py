"""mlx.nn activation functions and classes against NumPy references (float64)."""
import math

import numpy as np
import pytest

import mlx.core as mx
import mlx.nn as nn

_erf = np.vectorize(math.erf)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _softplus(x):
    return np.logaddexp(x, 0)


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _elu(x, alpha=1.0):
    return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))


# name -> (function, NumPy reference, keyword options)
REFERENCES = {
    "sigmoid": (nn.sigmoid, _sigmoid, {}),
    "relu": (nn.relu, lambda x: np.maximum(x, 0), {}),
    "relu6": (nn.relu6, lambda x: np.clip(x, 0, 6), {}),
    "leaky_relu": (nn.leaky_relu, lambda x, s=0.01: np.where(x > 0, x, s * x), {}),
    "leaky_relu_slope": (
        nn.leaky_relu,
        lambda x, negative_slope: np.where(x > 0, x, negative_slope * x),
        {"negative_slope": 0.2},
    ),
    "elu": (nn.elu, _elu, {"alpha": 0.7}),
    "celu": (
        nn.celu,
        lambda x, alpha: np.maximum(x, 0) + np.minimum(0, alpha * np.expm1(x / alpha)),
        {"alpha": 1.3},
    ),
    "selu": (nn.selu, lambda x: 1.0507 * _elu(x, 1.67326), {}),
    "softplus": (nn.softplus, _softplus, {}),
    "softsign": (nn.softsign, lambda x: x / (1 + np.abs(x)), {}),
    "softshrink": (
        nn.softshrink,
        lambda x, lambd: np.where(x > lambd, x - lambd, np.where(x < -lambd, x + lambd, 0)),
        {"lambd": 0.7},
    ),
    "hard_shrink": (
        nn.hard_shrink,
        lambda x, lambd: np.where(np.abs(x) > lambd, x, 0),
        {"lambd": 0.4},
    ),
    "hard_tanh": (
        nn.hard_tanh,
        lambda x, min_val, max_val: np.clip(x, min_val, max_val),
        {"min_val": -0.5, "max_val": 2.0},
    ),
    "silu": (nn.silu, lambda x: x * _sigmoid(x), {}),
    "log_sigmoid": (nn.log_sigmoid, lambda x: -_softplus(-x), {}),
    "gelu": (nn.gelu, lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2))), {}),
    "gelu_approx": (
        nn.gelu_approx,
        lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3))),
        {},
    ),
    "gelu_fast_approx": (nn.gelu_fast_approx, lambda x: x * _sigmoid(1.702 * x), {}),
    "mish": (nn.mish, lambda x: x * np.tanh(_softplus(x)), {}),
    "hardswish": (nn.hardswish, lambda x: x * np.clip(x + 3, 0, 6) / 6, {}),
    "tanh": (nn.tanh, np.tanh, {}),
    "step": (nn.step, lambda x, threshold: (x > threshold).astype(x.dtype), {"threshold": 0.5}),
    "softmax": (nn.softmax, _softmax, {"axis": 0}),
    "softmin": (nn.softmin, lambda x, axis: _softmax(-x, axis), {"axis": 1}),
    "log_softmax": (nn.log_softmax, lambda x, axis: np.log(_softmax(x, axis)), {"axis": -1}),
    "glu": (
        nn.glu,
        lambda x, axis: np.split(x, 2, axis)[0] * _sigmoid(np.split(x, 2, axis)[1]),
        {"axis": 1},
    ),
}


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_function_matches_numpy(name, rng):
    fn, ref, options = REFERENCES[name]
    x = (rng.standard_normal((3, 4, 6)) * 3).astype(np.float32)
    got = fn(mx.array(x), **options)
    assert got.dtype == mx.float32
    np.testing.assert_allclose(
        np.array(got), ref(x.astype(np.float64), **options), rtol=2e-5, atol=2e-6
    )


@pytest.mark.parametrize("name", ["relu", "gelu", "silu", "softplus", "log_sigmoid", "mish"])
def test_function_keeps_half_precision(name, rng):
    fn, ref, options = REFERENCES[name]
    x = rng.standard_normal(64).astype(np.float32)
    got = fn(mx.array(x).astype(mx.bfloat16), **options)
    assert got.dtype == mx.bfloat16
    np.testing.assert_allclose(
        np.array(got.astype(mx.float32)), ref(x.astype(np.float64)), rtol=3e-2, atol=3e-2
    )


def test_stable_at_extremes():
    x = mx.array([-1000.0, -50.0, 0.0, 50.0, 1000.0])
    for fn in (nn.softplus, nn.log_sigmoid, nn.elu, nn.celu, nn.selu, nn.mish, nn.silu):
        assert np.isfinite(np.array(fn(x))).all(), fn.__name__
    np.testing.assert_allclose(np.array(nn.softplus(x))[[0, 4]], [0.0, 1000.0])
    np.testing.assert_allclose(np.array(nn.log_sigmoid(x))[[0, 4]], [-1000.0, 0.0])


def test_prelu_function_and_layer(rng):
    x = rng.standard_normal((5, 3)).astype(np.float32)
    alpha = np.array([0.1, 0.2, 0.3], np.float32)
    expected = np.where(x > 0, x, alpha * x)
    np.testing.assert_allclose(np.array(nn.prelu(mx.array(x), mx.array(alpha))), expected)
    layer = nn.PReLU(3, init=0.5)
    assert layer.weight.shape == (3,)
    np.testing.assert_allclose(np.array(layer(mx.array(x))), np.where(x > 0, x, 0.5 * x))
    assert set(layer.parameters()) == {"weight"}


# class -> (function name in REFERENCES, constructor keywords)
CLASSES = [
    (nn.Sigmoid, "sigmoid", {}),
    (nn.ReLU, "relu", {}),
    (nn.ReLU6, "relu6", {}),
    (nn.LeakyReLU, "leaky_relu_slope", {"negative_slope": 0.2}),
    (nn.ELU, "elu", {"alpha": 0.7}),
    (nn.CELU, "celu", {"alpha": 1.3}),
    (nn.SELU, "selu", {}),
    (nn.Softplus, "softplus", {}),
    (nn.Softsign, "softsign", {}),
    (nn.Softshrink, "softshrink", {"lambd": 0.7}),
    (nn.HardShrink, "hard_shrink", {"lambd": 0.4}),
    (nn.HardTanh, "hard_tanh", {"min_val": -0.5, "max_val": 2.0}),
    (nn.SiLU, "silu", {}),
    (nn.LogSigmoid, "log_sigmoid", {}),
    (nn.Mish, "mish", {}),
    (nn.Hardswish, "hardswish", {}),
    (nn.Tanh, "tanh", {}),
    (nn.Step, "step", {"threshold": 0.5}),
    (nn.Softmax, "softmax", {}),
    (nn.Softmin, "softmin", {}),
    (nn.LogSoftmax, "log_softmax", {}),
    (nn.GLU, "glu", {"axis": 1}),
]


@pytest.mark.parametrize("cls,name,kwargs", CLASSES, ids=[c[0].__name__ for c in CLASSES])
def test_class_matches_function(cls, name, kwargs, rng):
    fn, _, _ = REFERENCES[name]
    x = mx.array(rng.standard_normal((4, 6)).astype(np.float32))
    layer = cls(**kwargs)
    assert isinstance(layer, nn.Module) and layer.parameters() == {}
    np.testing.assert_allclose(np.array(layer(x)), np.array(fn(x, **kwargs)), rtol=1e-6)


def test_class_positional_options_and_repr():
    assert nn.LeakyReLU(0.3).negative_slope == 0.3
    assert "alpha=2.0" in repr(nn.ELU(alpha=2.0))
    with pytest.raises(TypeError):
        nn.ELU(beta=1.0)


@pytest.mark.parametrize("approx,fn", [
    ("none", nn.gelu), ("precise", nn.gelu_approx), ("tanh", nn.gelu_approx),
    ("fast", nn.gelu_fast_approx),
])
def test_gelu_class(approx, fn, rng):
    x = mx.array(rng.standard_normal(10).astype(np.float32))
    np.testing.assert_allclose(np.array(nn.GELU(approx)(x)), np.array(fn(x)), rtol=1e-6)


def test_gelu_class_rejects_unknown_approximation():
    with pytest.raises(ValueError):
        nn.GELU("cubic")


def test_activation_gradients_match_finite_differences(rng):
    x = rng.uniform(-2, 2, 20)
    x = x[np.abs(x) > 0.05]  # away from kinks
    for name in ("gelu", "silu", "softplus", "mish", "elu", "log_sigmoid", "gelu_approx"):
        fn = REFERENCES[name][0]
        grad = mx.grad(lambda a: mx.sum(fn(a)))(mx.array(x, dtype=mx.float64))
        h = 1e-6
        def at(v):
            return np.array(fn(mx.array(v, dtype=mx.float64)))

        fd = (at(x + h) - at(x - h)) / (2 * h)
        np.testing.assert_allclose(np.array(grad), fd, rtol=1e-4, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("name", ["gelu", "gelu_approx", "silu"])
def test_fused_activation_second_derivatives(name, rng):
    """The fused activations' vjps are kernels of their own (the derivative); differentiating
    those again must match finite differences of the first derivative."""
    fn = REFERENCES[name][0]
    x = rng.uniform(-4, 4, 32)
    first = mx.grad(lambda a: mx.sum(fn(a)))
    second = mx.grad(lambda a: mx.sum(first(a)))(mx.array(x, dtype=mx.float64))
    h = 1e-6
    fd = (np.array(first(mx.array(x + h, dtype=mx.float64)))
          - np.array(first(mx.array(x - h, dtype=mx.float64)))) / (2 * h)
    np.testing.assert_allclose(np.array(second), fd, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("name,kernel", [("gelu_approx", "GeluApprox"), ("silu", "Silu")])
def test_fused_activation_is_one_kernel_each_way(name, kernel, rng):
    fn = REFERENCES[name][0]
    x = mx.array(rng.standard_normal((8, 16)).astype(np.float32))
    mx.eval(x)
    mx._kernel_counts(True, True)
    mx.eval(fn(x))
    assert mx._kernel_counts(False, True) == {kernel: 1}
    # The backward: the derivative's kernel times the cotangent, nothing of tanh or sigmoid.
    mx._kernel_counts(True, True)
    mx.eval(mx.vjp(fn, [x], [mx.ones_like(x)])[1])
    counts = mx._kernel_counts(False, True)
    assert counts.get(kernel + "Grad") == 1 and not {"Tanh", "Sigmoid", "Power"} & set(counts)
