"""Activation functions and their Module wrappers (elementwise unless an axis is named)."""

import inspect
from typing import Any

import mlx.core as mx
from mlx.nn.layers.base import Module


def sigmoid(x):
    r"""Logistic sigmoid :math:`\sigma(x) = 1 / (1 + e^{-x})`."""
    return mx.sigmoid(x)


def relu(x):
    r"""Rectified linear unit :math:`\max(x, 0)`."""
    return mx.maximum(x, 0)


def relu2(x):
    r"""The squared ReLU: :math:`\max(x, 0)^2`."""
    return mx.square(mx.maximum(x, 0))


def relu6(x):
    r""":math:`\min(\max(x, 0), 6)`."""
    return mx.minimum(mx.maximum(x, 0), 6)


def leaky_relu(x, negative_slope: float = 0.01):
    r""":math:`\max(\text{negative\_slope} \cdot x, x)`."""
    return mx.maximum(negative_slope * x, x)


def log_softmax(x, axis: int = -1):
    r""":math:`x - \log \sum_j e^{x_j}` along ``axis``."""
    return x - mx.logsumexp(x, axis=axis, keepdims=True)


def elu(x, alpha: float = 1.0):
    r""":math:`x` for :math:`x > 0`, :math:`\alpha (e^x - 1)` otherwise."""
    return mx.where(x > 0, x, alpha * (mx.exp(mx.minimum(x, 0)) - 1))


def celu(x, alpha: float = 1.0):
    r""":math:`\max(0, x) + \min(0, \alpha (e^{x / \alpha} - 1))`."""
    return mx.maximum(x, 0) + alpha * (mx.exp(mx.minimum(x, 0) / alpha) - 1)


def selu(x):
    r""":math:`\lambda \, \text{elu}(x, \alpha)` with :math:`\alpha = 1.67326`,
    :math:`\lambda = 1.0507`."""
    return elu(x, 1.67326) * 1.0507


def softmax(x, axis: int = -1):
    r""":math:`e^{x_i} / \sum_j e^{x_j}` along ``axis``."""
    return mx.softmax(x, axis=axis)


def softmin(x, axis: int = -1):
    r""":math:`e^{-x_i} / \sum_j e^{-x_j}` along ``axis``."""
    return mx.softmax(-x, axis=axis)


def softplus(x):
    r""":math:`\log(1 + e^x)`, computed stably."""
    return mx.logaddexp(x, 0)


def softsign(x):
    r""":math:`x / (1 + |x|)`."""
    return x / (1 + mx.abs(x))


def softshrink(x, lambd: float = 0.5):
    r""":math:`x - \lambda` above :math:`\lambda`, :math:`x + \lambda` below
    :math:`-\lambda`, 0 in between."""
    return mx.where(mx.abs(x) > lambd, x - mx.sign(x) * lambd, 0)


def hard_shrink(x, lambd: float = 0.5):
    r""":math:`x` where :math:`|x| > \lambda`, else 0."""
    return mx.where(mx.abs(x) > lambd, x, 0)


def hard_tanh(x, min_val: float = -1.0, max_val: float = 1.0):
    r""":math:`x` clipped to ``[min_val, max_val]``."""
    return mx.minimum(mx.maximum(x, min_val), max_val)


def silu(x):
    r"""Sigmoid linear unit (swish) :math:`x \sigma(x)`."""
    return mx._silu(x)  # one kernel forward, one (mx._silu_vjp) backward


def log_sigmoid(x):
    r""":math:`\log \sigma(x) = -\text{softplus}(-x)`."""
    return -softplus(-x)


def gelu(x):
    r"""Gaussian error linear unit :math:`x \Phi(x) = \frac{x}{2}(1 + \text{erf}(x / \sqrt 2))`."""
    return mx._gelu(x)  # one kernel forward, one (mx._gelu_vjp) backward


def gelu_approx(x):
    r"""tanh approximation of GELU:
    :math:`\frac{x}{2}(1 + \tanh(\sqrt{2/\pi}\,(x + 0.044715 x^3)))`."""
    return mx._gelu_approx(x)  # one kernel forward, one (mx._gelu_approx_vjp) backward


def gelu_fast_approx(x):
    r"""Sigmoid approximation of GELU: :math:`x \sigma(1.702 x)`."""
    return x * mx.sigmoid(1.702 * x)


def glu(x, axis: int = -1):
    r"""Gated linear unit: splits ``x`` in halves :math:`a, b` along ``axis`` and returns
    :math:`a \sigma(b)`."""
    a, b = mx.split(x, 2, axis=axis)
    return a * mx.sigmoid(b)


def step(x, threshold: float = 0.0):
    r"""1 where :math:`x > \text{threshold}`, else 0 (in the dtype of ``x``)."""
    return mx.where(x > threshold, 1, 0).astype(x.dtype)


def prelu(x, alpha):
    r""":math:`\max(0, x) + \alpha \min(0, x)`, ``alpha`` broadcast against ``x``."""
    return mx.maximum(0, x) + alpha * mx.minimum(0, x)


def mish(x):
    r""":math:`x \tanh(\text{softplus}(x))`."""
    return x * mx.tanh(softplus(x))


def hardswish(x):
    r""":math:`x \min(\max(x + 3, 0), 6) / 6`."""
    return x * mx.minimum(mx.maximum(x + 3, 0), 6) / 6


def tanh(x):
    r"""Hyperbolic tangent."""
    return mx.tanh(x)


def _module(fn, name, doc, **defaults):
    """A Module class that applies ``fn(x, **options)``; ``defaults`` are its constructor's
    keyword options (stored as attributes and shown in repr)."""

    def __init__(self, *args, **kwargs):
        Module.__init__(self)
        if len(args) > len(defaults):
            raise TypeError(f"{name} takes at most {len(defaults)} arguments.")
        options = dict(defaults)
        options.update(zip(defaults, args))
        for k, v in kwargs.items():
            if k not in defaults:
                raise TypeError(f"{name} got an unexpected keyword argument '{k}'.")
            options[k] = v
        for k, v in options.items():
            setattr(self, k, v)

    # The real parameters, so that help() and inspect.signature show them.
    __init__.__signature__ = inspect.Signature(
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        + [
            inspect.Parameter(k, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=v)
            for k, v in defaults.items()
        ]
    )

    def __call__(self, x):
        return fn(x, **{k: getattr(self, k) for k in defaults})

    def _extra_repr(self):
        return ", ".join(f"{k}={getattr(self, k)}" for k in defaults)

    return type(
        name,
        (Module,),
        {
            "__init__": __init__,
            "__call__": __call__,
            "_extra_repr": _extra_repr,
            "__doc__": doc,
            "__module__": __name__,
        },
    )


Sigmoid = _module(sigmoid, "Sigmoid", "Applies :func:`sigmoid`.")
ReLU = _module(relu, "ReLU", "Applies :func:`relu`.")
ReLU2 = _module(relu2, "ReLU2", "Applies :func:`relu2`.")
ReLU6 = _module(relu6, "ReLU6", "Applies :func:`relu6`.")
LeakyReLU = _module(
    leaky_relu, "LeakyReLU", "Applies :func:`leaky_relu`.", negative_slope=0.01
)
ELU = _module(elu, "ELU", "Applies :func:`elu`.", alpha=1.0)
CELU = _module(celu, "CELU", "Applies :func:`celu`.", alpha=1.0)
SELU = _module(selu, "SELU", "Applies :func:`selu`.")
Softmax = _module(softmax, "Softmax", "Applies :func:`softmax` over the last axis.")
Softmin = _module(softmin, "Softmin", "Applies :func:`softmin` over the last axis.")
Softplus = _module(softplus, "Softplus", "Applies :func:`softplus`.")
Softsign = _module(softsign, "Softsign", "Applies :func:`softsign`.")
Softshrink = _module(softshrink, "Softshrink", "Applies :func:`softshrink`.", lambd=0.5)
HardShrink = _module(hard_shrink, "HardShrink", "Applies :func:`hard_shrink`.", lambd=0.5)
HardTanh = _module(
    hard_tanh, "HardTanh", "Applies :func:`hard_tanh`.", min_val=-1.0, max_val=1.0
)
SiLU = _module(silu, "SiLU", "Applies :func:`silu`.")
LogSigmoid = _module(log_sigmoid, "LogSigmoid", "Applies :func:`log_sigmoid`.")
LogSoftmax = _module(log_softmax, "LogSoftmax", "Applies :func:`log_softmax` over the last axis.")
Mish = _module(mish, "Mish", "Applies :func:`mish`.")
Hardswish = _module(hardswish, "Hardswish", "Applies :func:`hardswish`.")
Tanh = _module(tanh, "Tanh", "Applies :func:`tanh`.")
GLU = _module(glu, "GLU", "Applies :func:`glu` along ``axis``.", axis=-1)
Step = _module(step, "Step", "Applies :func:`step`.", threshold=0.0)


class GELU(Module):
    """Applies GELU: ``approx="none"`` is exact (:func:`gelu`), ``"precise"`` or ``"tanh"``
    the tanh approximation (:func:`gelu_approx`), ``"fast"`` the sigmoid one
    (:func:`gelu_fast_approx`)."""

    _functions = {
        "none": gelu,
        "precise": gelu_approx,
        "tanh": gelu_approx,
        "fast": gelu_fast_approx,
    }

    def __init__(self, approx: str = "none"):
        super().__init__()
        if approx not in self._functions:
            raise ValueError(
                f"[GELU] approx must be one of {sorted(self._functions)}; got '{approx}'."
            )
        self.approx = approx
        self._act = self._functions[approx]

    def _extra_repr(self):
        return f"approx={self.approx!r}"

    def __call__(self, x):
        return self._act(x)


class PReLU(Module):
    """:func:`prelu` with a learned slope ``weight`` of shape ``(num_parameters,)``
    (broadcast over the last axis), initialised to ``init``."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25):
        super().__init__()
        self.weight = mx.full([num_parameters], init)

    def __call__(self, x: Any):
        return prelu(x, self.weight)
