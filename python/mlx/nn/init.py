"""Parameter initializers. Each function returns an initializer: a callable that takes an
array and returns a new array of the same shape, e.g.
``linear.weight = nn.init.glorot_uniform()(linear.weight)``."""

import math
from collections.abc import Callable
from typing import Literal

import mlx.core as mx

Initializer = Callable[..., mx.array]


def constant(value: float, dtype=mx.float32) -> Initializer:
    """Fills with ``value``."""

    def initializer(a):
        return mx.full(a.shape, value, dtype=dtype)

    return initializer


def normal(mean: float = 0.0, std: float = 1.0, dtype=mx.float32) -> Initializer:
    r"""Samples :math:`\mathcal{N}(\text{mean}, \text{std}^2)`."""

    def initializer(a):
        return mx.random.normal(shape=a.shape, scale=std, loc=mean, dtype=dtype)

    return initializer


def uniform(low: float = 0.0, high: float = 1.0, dtype=mx.float32) -> Initializer:
    r"""Samples :math:`\mathcal{U}(\text{low}, \text{high})`."""

    def initializer(a):
        return mx.random.uniform(low, high, a.shape, dtype=dtype)

    return initializer


def identity(dtype=mx.float32) -> Initializer:
    """The identity matrix; the input must be a square 2-D array."""

    def initializer(a):
        if a.ndim != 2 or a.shape[0] != a.shape[1]:
            raise ValueError(
                f"[identity] The input must be a square 2-D array; got shape {tuple(a.shape)}."
            )
        return mx.eye(a.shape[0], dtype=dtype)

    return initializer


def _fans(a, name):
    """(fan_in, fan_out) of a weight shaped ``(out, *receptive, in)``."""
    if a.ndim < 2:
        raise ValueError(
            f"[{name}] Fan in and fan out need an array with at least 2 dimensions; got shape "
            f"{tuple(a.shape)}."
        )
    receptive = math.prod(a.shape[1:-1])
    return a.shape[-1] * receptive, a.shape[0] * receptive


def glorot_normal(dtype=mx.float32) -> Initializer:
    r"""Glorot (Xavier) normal: :math:`\mathcal{N}(0, \sigma^2)` with
    :math:`\sigma = \text{gain} \sqrt{2 / (\text{fan\_in} + \text{fan\_out})}`.
    The initializer is ``initializer(a, gain=1.0)``."""

    def initializer(a, gain: float = 1.0):
        fan_in, fan_out = _fans(a, "glorot_normal")
        std = gain * math.sqrt(2.0 / (fan_in + fan_out))
        return mx.random.normal(shape=a.shape, scale=std, dtype=dtype)

    return initializer


def glorot_uniform(dtype=mx.float32) -> Initializer:
    r"""Glorot (Xavier) uniform: :math:`\mathcal{U}(-l, l)` with
    :math:`l = \text{gain} \sqrt{6 / (\text{fan\_in} + \text{fan\_out})}`.
    The initializer is ``initializer(a, gain=1.0)``."""

    def initializer(a, gain: float = 1.0):
        fan_in, fan_out = _fans(a, "glorot_uniform")
        limit = gain * math.sqrt(6.0 / (fan_in + fan_out))
        return mx.random.uniform(-limit, limit, a.shape, dtype=dtype)

    return initializer


def _he_fan(a, mode, name):
    fan_in, fan_out = _fans(a, name)
    if mode == "fan_in":
        return fan_in
    if mode == "fan_out":
        return fan_out
    raise ValueError(f"[{name}] mode must be 'fan_in' or 'fan_out'; got '{mode}'.")


def he_normal(dtype=mx.float32) -> Initializer:
    r"""He (Kaiming) normal: :math:`\mathcal{N}(0, \sigma^2)` with
    :math:`\sigma = \text{gain} / \sqrt{\text{fan}}`. The initializer is
    ``initializer(a, mode="fan_in", gain=1.0)`` (``mode``: ``"fan_in"`` or ``"fan_out"``)."""

    def initializer(a, mode: Literal["fan_in", "fan_out"] = "fan_in", gain: float = 1.0):
        std = gain / math.sqrt(_he_fan(a, mode, "he_normal"))
        return mx.random.normal(shape=a.shape, scale=std, dtype=dtype)

    return initializer


def he_uniform(dtype=mx.float32) -> Initializer:
    r"""He (Kaiming) uniform: :math:`\mathcal{U}(-l, l)` with
    :math:`l = \text{gain} \sqrt{3 / \text{fan}}`. The initializer is
    ``initializer(a, mode="fan_in", gain=1.0)``."""

    def initializer(a, mode: Literal["fan_in", "fan_out"] = "fan_in", gain: float = 1.0):
        limit = gain * math.sqrt(3.0 / _he_fan(a, mode, "he_uniform"))
        return mx.random.uniform(-limit, limit, a.shape, dtype=dtype)

    return initializer


def sparse(sparsity: float, mean: float = 0.0, std: float = 1.0, dtype=mx.float32) -> Initializer:
    r"""A 2-D array of :math:`\mathcal{N}(\text{mean}, \text{std}^2)` samples in which each row
    has :math:`\lceil \text{sparsity} \cdot \text{cols} \rceil` entries, at random columns, set
    to zero."""

    def initializer(a):
        if a.ndim != 2:
            raise ValueError(f"[sparse] Only 2-D arrays are supported; got shape {tuple(a.shape)}.")
        rows, cols = a.shape
        num_zeros = math.ceil(sparsity * cols)
        values = mx.random.normal(shape=a.shape, scale=std, loc=mean, dtype=dtype)
        # The rank of each entry within its row under a random order: the num_zeros lowest
        # ranks are zeroed, which picks a uniformly random subset of columns per row.
        ranks = mx.argsort(mx.argsort(mx.random.uniform(shape=a.shape), axis=1), axis=1)
        return mx.where(ranks < num_zeros, 0, values)

    return initializer


def orthogonal(gain: float = 1.0, dtype=mx.float32) -> Initializer:
    r"""A (semi-)orthogonal matrix times ``gain``: the Q factor of the QR decomposition of a
    standard normal matrix, with the signs fixed so that the distribution is uniform
    (Haar). Rows are orthonormal when ``rows <= cols``, columns otherwise."""

    def initializer(a):
        if a.ndim != 2:
            raise ValueError(
                f"[orthogonal] Only 2-D arrays are supported; got shape {tuple(a.shape)}."
            )
        rows, cols = a.shape
        n = max(rows, cols)
        q, r = _qr(mx.random.normal(shape=(n, n)))
        q = q * mx.sign(mx.diagonal(r))
        q = q[:rows, :cols]
        return (gain * q).astype(dtype)

    return initializer


def _qr(a):
    """QR of a square float32 matrix: mx.linalg.qr where it exists, else NumPy's (an
    initializer runs once, so the round trip through NumPy is cheap)."""
    linalg = getattr(mx, "linalg", None)
    if linalg is not None and hasattr(linalg, "qr"):
        return linalg.qr(a, stream=mx.cpu)
    import numpy as np

    q, r = np.linalg.qr(np.array(a, dtype=np.float32))
    return mx.array(q), mx.array(r)
