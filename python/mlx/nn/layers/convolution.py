"""Convolution layers (channels last): Conv1d/2d/3d and ConvTranspose1d/2d/3d."""

import math
from typing import Sequence, Union

import mlx.core as mx
from mlx.nn.layers.base import Module


def _ntuple(value, n, name):
    if isinstance(value, int):
        return (value,) * n
    value = tuple(value)
    if len(value) != n or not all(isinstance(v, int) for v in value):
        raise ValueError(f"{name} must be an int or a tuple of {n} ints, got {value}.")
    return value


class _ConvNd(Module):
    """Shared parameters: ``weight`` (out, kernel..., in / groups) and ``bias`` (out,)."""

    _nd = 0

    def __init__(self, in_channels, out_channels, kernel_size, weight_in, fan_in, bias):
        super().__init__()
        kernel = _ntuple(kernel_size, self._nd, "kernel_size")
        scale = math.sqrt(1.0 / (fan_in * math.prod(kernel)))
        self.weight = mx.random.uniform(-scale, scale, (out_channels, *kernel, weight_in))
        if bias:
            self.bias = mx.zeros((out_channels,))

    def _with_bias(self, y):
        return y + self.bias if "bias" in self else y


class _Conv(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
                 bias):
        if in_channels % groups != 0:
            raise ValueError(
                f"The number of input channels ({in_channels}) must be divisible by the "
                f"number of groups ({groups})."
            )
        super().__init__(in_channels, out_channels, kernel_size, in_channels // groups,
                         in_channels // groups, bias)
        n = self._nd
        self.stride = _ntuple(stride, n, "stride")
        self.padding = _ntuple(padding, n, "padding")
        self.dilation = _ntuple(dilation, n, "dilation")
        self.groups = groups

    def _extra_repr(self):
        w = self["weight"]
        return (
            f"{w.shape[-1] * self.groups}, {w.shape[0]}, kernel_size={tuple(w.shape[1:-1])}, "
            f"stride={self.stride}, padding={self.padding}, dilation={self.dilation}, "
            f"groups={self.groups}, bias={'bias' in self}"
        )

    def __call__(self, x):
        y = mx.conv_general(x, self.weight, self.stride, self.padding, self.dilation,
                            groups=self.groups)
        return self._with_bias(y)


class Conv1d(_Conv):
    """1-D convolution over inputs of shape ``(N, L, C_in)``; weight ``(C_out, K, C_in / groups)``."""

    _nd = 1

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1,
                 padding: int = 0, dilation: int = 1, groups: int = 1, bias: bool = True):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias)


class Conv2d(_Conv):
    """2-D convolution over inputs ``(N, H, W, C_in)``; weight ``(C_out, KH, KW, C_in / groups)``."""

    _nd = 2

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Union[int, tuple],
                 stride: Union[int, tuple] = 1, padding: Union[int, tuple] = 0,
                 dilation: Union[int, tuple] = 1, groups: int = 1, bias: bool = True):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias)


class Conv3d(_Conv):
    """3-D convolution over inputs ``(N, D, H, W, C_in)``; weight ``(C_out, KD, KH, KW, C_in)``."""

    _nd = 3

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Union[int, tuple],
                 stride: Union[int, tuple] = 1, padding: Union[int, tuple] = 0,
                 dilation: Union[int, tuple] = 1, bias: bool = True):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, 1,
                         bias)


class _ConvTranspose(_ConvNd):
    _fn = None

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation,
                 output_padding, bias):
        super().__init__(in_channels, out_channels, kernel_size, in_channels, in_channels, bias)
        n = self._nd
        self.stride = _ntuple(stride, n, "stride")
        self.padding = _ntuple(padding, n, "padding")
        self.dilation = _ntuple(dilation, n, "dilation")
        self.output_padding = _ntuple(output_padding, n, "output_padding")

    def _extra_repr(self):
        w = self["weight"]
        return (
            f"{w.shape[-1]}, {w.shape[0]}, kernel_size={tuple(w.shape[1:-1])}, "
            f"stride={self.stride}, padding={self.padding}, dilation={self.dilation}, "
            f"output_padding={self.output_padding}, bias={'bias' in self}"
        )

    def __call__(self, x):
        fn = getattr(mx, f"conv_transpose{self._nd}d")
        args = (self.stride, self.padding, self.dilation, self.output_padding)
        if self._nd == 1:
            args = tuple(a[0] for a in args)
        return self._with_bias(fn(x, self.weight, *args))


class ConvTranspose1d(_ConvTranspose):
    """1-D transposed convolution; weight ``(C_out, K, C_in)``."""

    _nd = 1

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1,
                 padding: int = 0, dilation: int = 1, output_padding: int = 0, bias: bool = True):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         output_padding, bias)


class ConvTranspose2d(_ConvTranspose):
    """2-D transposed convolution; weight ``(C_out, KH, KW, C_in)``."""

    _nd = 2

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Union[int, tuple],
                 stride: Union[int, tuple] = 1, padding: Union[int, tuple] = 0,
                 dilation: Union[int, tuple] = 1, output_padding: Union[int, tuple] = 0,
                 bias: bool = True):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         output_padding, bias)


class ConvTranspose3d(_ConvTranspose):
    """3-D transposed convolution; weight ``(C_out, KD, KH, KW, C_in)``."""

    _nd = 3

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Union[int, tuple],
                 stride: Union[int, tuple] = 1, padding: Union[int, tuple] = 0,
                 dilation: Union[int, tuple] = 1, output_padding: Union[int, tuple] = 0,
                 bias: bool = True):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         output_padding, bias)
