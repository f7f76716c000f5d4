"""Dropout layers: zero random elements (or whole channels) in training mode."""

import mlx.core as mx
from mlx.nn.layers.base import Module


class _DropoutBase(Module):
    # Number of trailing axes (before the channels) that share one mask value, and the
    # accepted input ranks; Dropout drops single elements.
    _shared_axes = 0
    _ndims = None

    def __init__(self, p: float = 0.5):
        super().__init__()
        if not 0 <= p < 1:
            raise ValueError(f"[{type(self).__name__}] p must be in [0, 1); got {p}.")
        self._p_1 = 1 - p

    def _extra_repr(self) -> str:
        return f"p={1 - self._p_1}"

    def __call__(self, x):
        name = type(self).__name__
        if self._ndims is not None and x.ndim not in self._ndims:
            raise ValueError(
                f"[{name}] Expected input with {' or '.join(map(str, self._ndims))} dimensions; "
                f"got shape {tuple(x.shape)}."
            )
        if self._p_1 == 1 or not self.training:
            return x
        shape = list(x.shape)
        for i in range(2, 2 + self._shared_axes):
            shape[-i] = 1
        keep = mx.random.bernoulli(self._p_1, shape)
        return mx.where(keep, x * (1 / self._p_1), 0)


class Dropout(_DropoutBase):
    r"""Zeroes each element with probability ``p`` in training mode and scales the others by
    :math:`1 / (1 - p)`; identity in evaluation mode."""


class Dropout2d(_DropoutBase):
    r"""Channel dropout for ``(N, H, W, C)`` or ``(H, W, C)`` inputs: each channel of each
    sample is zeroed entirely with probability ``p`` (the others scaled by
    :math:`1 / (1 - p)`)."""

    _shared_axes = 2
    _ndims = (3, 4)


class Dropout3d(_DropoutBase):
    r"""Channel dropout for ``(N, D, H, W, C)`` or ``(D, H, W, C)`` inputs: each channel of each
    sample is zeroed entirely with probability ``p``."""

    _shared_axes = 3
    _ndims = (4, 5)
