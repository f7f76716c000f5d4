"""mlx.nn activation functions and classes against NumPy references (float64)."""
import math

import numpy as np
import pytest

import mlx.core as mx
import mlx.nn as nn

_erf = np.vectorize(math.erf, otypes=[np.float64])


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
    """The fused activations' vjps are kernels of their own (g f'(x)); differentiating those
    again must match finite differences of the first derivative."""
    fn = REFERENCES[name][0]
    x = rng.uniform(-4, 4, 32)
    first = mx.grad(lambda a: mx.sum(fn(a)))
    second = mx.grad(lambda a: mx.sum(first(a)))(mx.array(x, dtype=mx.float64))
    h = 1e-6
    fd = (np.array(first(mx.array(x + h, dtype=mx.float64)))
          - np.array(first(mx.array(x - h, dtype=mx.float64)))) / (2 * h)
    np.testing.assert_allclose(np.array(second), fd, rtol=1e-4, atol=1e-6)


FUSED = [("gelu", "Gelu"), ("gelu_approx", "GeluApprox"), ("silu", "Silu")]


def _kernels_of(*arrays):
    mx._kernel_counts(True, True)
    mx.eval(*arrays)
    return mx._kernel_counts(False, True)


@pytest.mark.parametrize("name,kernel", FUSED)
def test_fused_activation_is_one_kernel_each_way(name, kernel, rng):
    fn = REFERENCES[name][0]
    x = mx.array(rng.standard_normal((8, 16)).astype(np.float32))
    g = mx.array(rng.standard_normal((8, 16)).astype(np.float32))
    mx.eval(x, g)
    assert _kernels_of(fn(x)) == {kernel: 1}
    # The backward graph is one node, g f'(x) (not f'(x) and then a product), and so is the
    # forward-mode derivative.
    # On a GPU stream vjp starts computing fn(x) while it builds the backward (its forward
    # overlap): that is evaluated before the count starts.
    value, grads = mx.vjp(fn, [x], [g])
    mx.eval(value)
    assert _kernels_of(grads[0]) == {kernel + "Vjp": 1}
    assert _kernels_of(mx.jvp(fn, [x], [g])[1][0]) == {kernel + "Vjp": 1}


# f'(x) in float64, and the fused g f'(x) ops.
def _gelu_grad(x):
    return 0.5 * (1 + _erf(x / math.sqrt(2))) + x * np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)


def _gelu_approx_grad(x):
    c = math.sqrt(2 / math.pi)
    t = np.tanh(c * (x + 0.044715 * x**3))
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * 0.044715 * x * x)


def _silu_grad(x):
    s = _sigmoid(x)
    return s * (1 + x * (1 - s))


VJPS = {
    "gelu": (mx._gelu_vjp, _gelu_grad),
    "gelu_approx": (mx._gelu_approx_vjp, _gelu_approx_grad),
    "silu": (mx._silu_vjp, _silu_grad),
}


def _f64(a):
    return np.array(a.astype(mx.float32) if a.dtype == mx.bfloat16 else a).astype(np.float64)


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.bfloat16])
@pytest.mark.parametrize("name", sorted(VJPS))
def test_fused_vjp_matches_numpy(name, dtype, rng):
    op, grad = VJPS[name]
    tol = {mx.float32: 1e-5, mx.float16: 2e-3, mx.bfloat16: 1.6e-2}[dtype]

    def check(x, g):
        got = op(x, g)
        shape = np.broadcast_shapes(x.shape, g.shape)
        assert got.dtype == dtype and got.shape == shape
        want = _f64(g) * grad(_f64(x))
        np.testing.assert_allclose(_f64(got), np.broadcast_to(want, shape), rtol=tol, atol=tol)

    def sample(shape, scale=3.0):
        return mx.array((rng.standard_normal(shape) * scale).astype(np.float32)).astype(dtype)

    x, g = sample((6, 35)), sample((6, 35), 1.0)
    check(x, g)
    check(x.T, g.T)  # both transposed
    check(x[:, ::-2], g[:, :18])  # x reversed with a step, g sliced
    check(x, g[2])  # g broadcast along rows
    check(x, mx.array(0.5, dtype))  # g a scalar
    check(mx.array(-1.25, dtype), g)  # x a scalar
    check(sample((1,)), sample((1,)))
    check(sample((0, 4)), sample((0, 4)))
    big = sample((1000003,))
    check(big, sample((1000003,), 1.0))
    check(big, mx.array(-2.0, dtype))


@pytest.mark.parametrize("dtype", [mx.float16, mx.bfloat16])
@pytest.mark.parametrize("name", sorted(VJPS))
def test_fused_vjp_rounds_once(name, dtype, rng):
    """Half inputs compute g f'(x) in float32 and round once: every result is within half an
    ulp of the exact value (plus float32's error), which rounding f'(x) first would miss."""
    op, grad = VJPS[name]
    x = mx.array(rng.uniform(-4, 4, 4096).astype(np.float32)).astype(dtype)
    g = mx.array(rng.uniform(-2, 2, 4096).astype(np.float32)).astype(dtype)
    exact = _f64(g) * grad(_f64(x))
    bits, emin = (10, -14) if dtype == mx.float16 else (7, -126)
    _, e = np.frexp(np.abs(exact))
    half_ulp = 0.5 * np.exp2(np.maximum(e - 1, emin) - bits)
    err = np.abs(_f64(op(x, g)) - exact)
    assert np.all(err <= half_ulp * 1.001 + 1e-6 * np.abs(_f64(g))), np.max(err / half_ulp)


@pytest.mark.parametrize("name", sorted(VJPS))
def test_fused_vjp_gradients_match_finite_differences(name, rng):
    """d/dx g f'(x) = g f''(x) and d/dg = f'(x), against central differences in float64."""
    op = VJPS[name][0]
    f64 = lambda v: mx.array(v, dtype=mx.float64)  # noqa: E731
    x = rng.uniform(-3, 3, 24)
    g = rng.uniform(-2, 2, 24)
    w = f64(rng.standard_normal(24))
    loss = lambda a, b: mx.sum(op(a, b) * w)  # noqa: E731
    dx, dg = mx.grad(loss, argnums=(0, 1))(f64(x), f64(g))
    h = 1e-6

    def fd(i):
        def at(d):
            args = [x, g]
            args[i] = args[i] + d
            return np.array(op(f64(args[0]), f64(args[1])) * w)

        return (at(h) - at(-h)) / (2 * h)

    np.testing.assert_allclose(np.array(dx), fd(0), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(np.array(dg), fd(1), rtol=1e-5, atol=1e-7)
    # Forward mode gives the same partials.
    tx, tg = rng.standard_normal(24), rng.standard_normal(24)
    _, (t,) = mx.jvp(op, [f64(x), f64(g)], [f64(tx), f64(tg)])
    np.testing.assert_allclose(np.array(t * w), fd(0) * tx + fd(1) * tg, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name", sorted(VJPS))
def test_fused_activation_third_derivatives(name, rng):
    """grad of grad of grad: the rules of the f''(x) composites behind the fused vjp."""
    fn = REFERENCES[name][0]
    f64 = lambda v: mx.array(v, dtype=mx.float64)  # noqa: E731
    x = rng.uniform(-3, 3, 16)
    d = lambda f: mx.grad(lambda a: mx.sum(f(a)))  # noqa: E731
    second, third = d(d(fn)), d(d(d(fn)))
    h = 1e-5
    fd = (np.array(second(f64(x + h))) - np.array(second(f64(x - h)))) / (2 * h)
    np.testing.assert_allclose(np.array(third(f64(x))), fd, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name", sorted(VJPS))
def test_fused_vjp_vmap(name, rng):
    op = VJPS[name][0]
    x = mx.array(rng.standard_normal((4, 7)).astype(np.float32))
    g = mx.array(rng.standard_normal((7, 4)).astype(np.float32))
    got = mx.vmap(op, in_axes=(0, 1))(x, g)
    want = mx.stack([op(x[i], g[:, i]) for i in range(4)])
    np.testing.assert_array_equal(np.array(got), np.array(want))
    got = mx.vmap(op, in_axes=(1, None), out_axes=1)(x, g[0, :4])
    want = mx.stack([op(x[:, j], g[0, :4]) for j in range(7)], axis=1)
    np.testing.assert_array_equal(np.array(got), np.array(want))
    # The activation's gradient under vmap, per row.
    fn = REFERENCES[name][0]
    grad = mx.grad(lambda a: mx.sum(fn(a) * a))
    got = mx.vmap(grad)(x)
    want = mx.stack([grad(x[i]) for i in range(4)])
    np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-6, atol=1e-7)
