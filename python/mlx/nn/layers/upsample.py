"""Upsample: nearest, (multi)linear and cubic interpolation of channels-last inputs
``(N, *spatial, C)``, one spatial axis at a time (all three are separable)."""

import math
from numbers import Number
from typing import Literal, Tuple, Union

import mlx.core as mx
from mlx.nn.layers.base import Module


def _source_positions(in_size, out_size, scale, align_corners):
    """Where each output sample sits on the input axis (in input index units)."""
    dst = mx.arange(out_size, dtype=mx.float32)
    if align_corners:
        return dst * ((in_size - 1) / (out_size - 1) if out_size > 1 else 0.0)
    return (dst + 0.5) / scale - 0.5


def _interpolate(x, axis, taps):
    """sum_k w_k * x[idx_k] along ``axis``, for (float indices, weights) pairs."""
    shape = [1] * x.ndim
    shape[axis] = -1
    out = None
    for idx, w in taps:
        term = mx.take(x, idx.astype(mx.int32), axis=axis) * mx.reshape(w, shape).astype(x.dtype)
        out = term if out is None else out + term
    return out


def _nearest_axis(x, axis, out_size, scale, align_corners):
    dst = mx.arange(out_size, dtype=mx.float32)
    idx = mx.minimum(mx.floor(dst / scale), x.shape[axis] - 1)
    return mx.take(x, idx.astype(mx.int32), axis=axis)


def _linear_axis(x, axis, out_size, scale, align_corners):
    in_size = x.shape[axis]
    pos = mx.maximum(_source_positions(in_size, out_size, scale, align_corners), 0)
    lo = mx.minimum(mx.floor(pos), in_size - 1)
    hi = mx.minimum(lo + 1, in_size - 1)
    frac = pos - lo
    return _interpolate(x, axis, [(lo, 1 - frac), (hi, frac)])


def _cubic_weights(t, a=-0.75):
    """Keys' cubic convolution weights for the 4 taps at offsets -1, 0, 1, 2 from floor."""

    def near(d):  # |d| <= 1
        return ((a + 2) * d - (a + 3)) * d * d + 1

    def far(d):  # 1 < |d| < 2
        return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _cubic_axis(x, axis, out_size, scale, align_corners):
    in_size = x.shape[axis]
    pos = _source_positions(in_size, out_size, scale, align_corners)
    base = mx.floor(pos)
    weights = _cubic_weights(pos - base)
    taps = [(mx.clip(base + k, 0, in_size - 1), w) for k, w in zip((-1, 0, 1, 2), weights)]
    return _interpolate(x, axis, taps)


def _antialiased_axis(kernel, support):
    """An axis function that, when shrinking (scale < 1), widens ``kernel`` (support
    ``support`` taps each side) by 1 / scale so every input sample contributes (a low-pass
    filter, as PyTorch's ``antialias=True``); growing axes fall back to ``fallback``."""

    def axis_fn(x, axis, out_size, scale, align_corners, fallback):
        in_size = x.shape[axis]
        if scale >= 1 or out_size == 0 or in_size == 0:
            return fallback(x, axis, out_size, scale, align_corners)
        stretch = 1.0 / scale
        centre = (mx.arange(out_size, dtype=mx.float32) + 0.5) * stretch
        src = mx.arange(in_size, dtype=mx.float32) + 0.5
        d = (src[None, :] - centre[:, None]) / stretch
        w = mx.where(mx.abs(d) < support, kernel(mx.abs(d)), 0.0)
        w = w / mx.sum(w, axis=1, keepdims=True)
        moved = mx.moveaxis(x, axis, -1)
        out = mx.matmul(moved, w.T.astype(x.dtype))
        return mx.moveaxis(out, -1, axis)

    return axis_fn


def _triangle(d):
    return 1 - d


def _keys_cubic(d, a=-0.75):
    near = ((a + 2) * d - (a + 3)) * d * d + 1
    far = ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    return mx.where(d <= 1, near, far)


_antialiased_linear = _antialiased_axis(_triangle, 1.0)
_antialiased_cubic = _antialiased_axis(_keys_cubic, 2.0)


def _upsample(x, scale_factor, align_corners, axis_fn):
    dims = x.ndim - 2
    if dims <= 0:
        raise ValueError(
            f"[Upsample] Expected an input (N, *spatial, C) with at least one spatial axis; got "
            f"shape {tuple(x.shape)}."
        )
    scales = (scale_factor,) * dims if isinstance(scale_factor, Number) else tuple(scale_factor)
    if len(scales) != dims:
        raise ValueError(
            f"[Upsample] Got {len(scales)} scale factors for {dims} spatial dimensions."
        )
    for axis, scale in enumerate(scales, start=1):
        out_size = math.floor(x.shape[axis] * scale)
        x = axis_fn(x, axis, out_size, scale, align_corners)
    return x


def upsample_nearest(x, scale_factor: Union[float, Tuple]):
    """Nearest-neighbour upsampling: output ``i`` takes input ``floor(i / scale)``."""
    return _upsample(x, scale_factor, False, _nearest_axis)


def upsample_linear(x, scale_factor: Union[float, Tuple], align_corners: bool = False):
    """Linear (bilinear, trilinear, ...) upsampling."""
    return _upsample(x, scale_factor, align_corners, _linear_axis)


def upsample_cubic(x, scale_factor: Union[float, Tuple], align_corners: bool = False):
    """Cubic (bicubic, ...) upsampling with Keys' kernel (a = -0.75), edges replicated."""
    return _upsample(x, scale_factor, align_corners, _cubic_axis)


class Upsample(Module):
    """Upsamples the spatial axes (1 .. ndim - 2) of ``(N, *spatial, C)`` inputs by
    ``scale_factor`` (one number, or one per spatial axis); the output size of an axis is
    ``floor(size * scale)``.

    Args:
        scale_factor: the multiplier(s) of the spatial sizes.
        mode: ``"nearest"`` (default), ``"linear"`` or ``"cubic"``.
        align_corners: for linear and cubic, map the first and last samples of the input and
            output onto each other (default False: samples are cell centres, as PyTorch's
            ``align_corners=False``).
        antialias: for linear and cubic, axes that shrink (scale < 1) use the interpolation
            kernel stretched by 1 / scale, so every input sample contributes (a low-pass
            filter against aliasing, PyTorch's ``antialias=True``); growing axes are
            unaffected. Default False.
    """

    _modes = {"nearest": _nearest_axis, "linear": _linear_axis, "cubic": _cubic_axis}

    def __init__(
        self,
        scale_factor: Union[float, Tuple],
        mode: Literal["nearest", "linear", "cubic"] = "nearest",
        align_corners: bool = False,
        antialias: bool = False,
    ):
        super().__init__()
        if mode not in self._modes:
            raise ValueError(f"[Upsample] mode must be one of {list(self._modes)}; got '{mode}'.")
        if antialias and mode == "nearest":
            raise ValueError("[Upsample] antialias applies to the linear and cubic modes only.")
        if antialias and align_corners:
            raise ValueError("[Upsample] antialias cannot be combined with align_corners.")
        self.scale_factor = scale_factor
        self.mode = mode
        self.align_corners = align_corners
        self.antialias = antialias

    def _extra_repr(self) -> str:
        return (
            f"scale_factor={self.scale_factor}, mode={self.mode!r}, "
            f"align_corners={self.align_corners}, antialias={self.antialias}"
        )

    def __call__(self, x):
        axis_fn = self._modes[self.mode]
        if self.antialias:
            filtered = _antialiased_linear if self.mode == "linear" else _antialiased_cubic
            plain = axis_fn

            def axis_fn(x, axis, out_size, scale, align_corners):
                return filtered(x, axis, out_size, scale, align_corners, plain)

        return _upsample(x, self.scale_factor, self.align_corners, axis_fn)
