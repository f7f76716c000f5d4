"""Max and average pooling over the spatial axes of channels-last inputs (N, spatial..., C)."""

import math
from typing import Optional, Tuple, Union

import mlx.core as mx
from mlx.nn.layers.base import Module
from mlx.nn.layers.convolution import _ntuple


class _Pool(Module):
    _nd = 0

    def __init__(self, kernel_size, stride, padding, pad_value, reduce):
        super().__init__()
        n = self._nd
        self.kernel_size = _ntuple(kernel_size, n, "kernel_size")
        self.stride = self.kernel_size if stride is None else _ntuple(stride, n, "stride")
        self.padding = _ntuple(padding or 0, n, "padding")
        if any(k < 1 for k in self.kernel_size) or any(s < 1 for s in self.stride):
            raise ValueError(
                f"kernel_size {self.kernel_size} and stride {self.stride} must be positive."
            )
        if any(p < 0 or 2 * p > k for p, k in zip(self.padding, self.kernel_size)):
            raise ValueError(
                f"padding {self.padding} must be non-negative and at most half of kernel_size "
                f"{self.kernel_size}."
            )
        self._pad_value = pad_value
        self._reduce = reduce

    def _extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"

    def __call__(self, x):
        n = self._nd
        if x.ndim != n + 2:
            raise ValueError(
                f"[{type(self).__name__}] Expected input of rank {n + 2} (N, spatial..., C), "
                f"got shape {x.shape}."
            )
        if any(self.padding):
            widths = [(0, 0)] + [(p, p) for p in self.padding] + [(0, 0)]
            x = mx.pad(x, widths, constant_values=self._pad_value)
        out = [(x.shape[1 + i] - k) // s + 1
               for i, (k, s) in enumerate(zip(self.kernel_size, self.stride))]
        if any(o < 1 for o in out):
            raise ValueError(
                f"[{type(self).__name__}] Window {self.kernel_size} larger than the padded "
                f"input {x.shape[1:-1]}."
            )
        # One strided slice per window offset, reduced elementwise.
        acc = None
        for offset in _offsets(self.kernel_size):
            start = [0] + list(offset) + [0]
            stop = ([x.shape[0]] + [o + (q - 1) * s + 1 for o, q, s in
                                    zip(offset, out, self.stride)] + [x.shape[-1]])
            strides = [1] + list(self.stride) + [1]
            idx = tuple(slice(a, b, c) for a, b, c in zip(start, stop, strides))
            w = x[idx]
            acc = w if acc is None else self._reduce(acc, w)
        return self._finish(acc)

    def _finish(self, acc):
        return acc


def _offsets(kernel):
    if not kernel:
        yield ()
        return
    for k in range(kernel[0]):
        for rest in _offsets(kernel[1:]):
            yield (k, *rest)


class _MaxPool(_Pool):
    def __init__(self, kernel_size, stride, padding):
        super().__init__(kernel_size, stride, padding, float("-inf"), mx.maximum)


class _AvgPool(_Pool):
    def __init__(self, kernel_size, stride, padding):
        super().__init__(kernel_size, stride, padding, 0, mx.add)

    def _finish(self, acc):
        return acc / math.prod(self.kernel_size)


class MaxPool1d(_MaxPool):
    """Max pooling over ``(N, L, C)``; stride defaults to kernel_size, padding with -inf."""

    _nd = 1

    def __init__(self, kernel_size: Union[int, Tuple[int]],
                 stride: Optional[Union[int, Tuple[int]]] = None,
                 padding: Union[int, Tuple[int]] = 0):
        super().__init__(kernel_size, stride, padding)


class MaxPool2d(_MaxPool):
    """Max pooling over ``(N, H, W, C)``."""

    _nd = 2

    def __init__(self, kernel_size: Union[int, Tuple[int, int]],
                 stride: Optional[Union[int, Tuple[int, int]]] = None,
                 padding: Optional[Union[int, Tuple[int, int]]] = 0):
        super().__init__(kernel_size, stride, padding)


class MaxPool3d(_MaxPool):
    """Max pooling over ``(N, D, H, W, C)``."""

    _nd = 3

    def __init__(self, kernel_size: Union[int, Tuple[int, int, int]],
                 stride: Optional[Union[int, Tuple[int, int, int]]] = None,
                 padding: Optional[Union[int, Tuple[int, int, int]]] = 0):
        super().__init__(kernel_size, stride, padding)


class AvgPool1d(_AvgPool):
    """Average pooling over ``(N, L, C)``; zero padding counts in the average."""

    _nd = 1

    def __init__(self, kernel_size: Union[int, Tuple[int]],
                 stride: Optional[Union[int, Tuple[int]]] = None,
                 padding: Union[int, Tuple[int]] = 0):
        super().__init__(kernel_size, stride, padding)


class AvgPool2d(_AvgPool):
    """Average pooling over ``(N, H, W, C)``."""

    _nd = 2

    def __init__(self, kernel_size: Union[int, Tuple[int, int]],
                 stride: Optional[Union[int, Tuple[int, int]]] = None,
                 padding: Optional[Union[int, Tuple[int, int]]] = 0):
        super().__init__(kernel_size, stride, padding)


class AvgPool3d(_AvgPool):
    """Average pooling over ``(N, D, H, W, C)``."""

    _nd = 3

    def __init__(self, kernel_size: Union[int, Tuple[int, int, int]],
                 stride: Optional[Union[int, Tuple[int, int, int]]] = None,
                 padding: Optional[Union[int, Tuple[int, int, int]]] = 0):
        super().__init__(kernel_size, stride, padding)
