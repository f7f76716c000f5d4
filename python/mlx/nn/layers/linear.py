"""Identity, Linear and Bilinear layers."""

import math
from typing import Any

import mlx.core as mx
from mlx.nn.layers.base import Module


class Identity(Module):
    """Returns its input unchanged; accepts (and ignores) any constructor arguments."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__()

    def __call__(self, x):
        return x


class Linear(Module):
    r"""Affine map :math:`y = x W^\top + b`.

    ``weight`` has shape ``(output_dims, input_dims)`` and ``bias`` ``(output_dims,)``, both
    initialised from :math:`\mathcal{U}(-k, k)` with :math:`k = 1 / \sqrt{\text{input\_dims}}`.

    Args:
        input_dims: size of the last axis of the input.
        output_dims: size of the last axis of the output.
        bias: whether to add a bias (default True).
    """

    def __init__(self, input_dims: int, output_dims: int, bias: bool = True):
        super().__init__()
        scale = math.sqrt(1.0 / input_dims)
        self.weight = mx.random.uniform(-scale, scale, (output_dims, input_dims))
        if bias:
            self.bias = mx.random.uniform(-scale, scale, (output_dims,))

    def _extra_repr(self) -> str:
        out_dims, in_dims = self["weight"].shape
        return f"input_dims={in_dims}, output_dims={out_dims}, bias={'bias' in self}"

    def __call__(self, x):
        if "bias" in self:
            return mx.addmm(self.bias, x, self.weight.T)
        return mx.matmul(x, self.weight.T)

    def to_quantized(self, group_size: int = None, bits: int = None, mode: str = "affine",
                     quantize_input: bool = False):
        """This layer as a QuantizedLinear, or as a QQLinear (inputs quantized too) with
        ``quantize_input`` (nvfp4, mxfp8 and mxfp4 modes; see nn.quantize)."""
        from mlx.nn.layers.quantized import QQLinear, QuantizedLinear

        if quantize_input:
            if mode not in ("nvfp4", "mxfp8", "mxfp4"):
                raise ValueError(
                    f"[to_quantized] quantize_input is not supported in the {mode!r} mode."
                )
            return QQLinear.from_linear(self, group_size, bits, mode)
        return QuantizedLinear.from_linear(self, group_size, bits, mode)


class Bilinear(Module):
    r"""Bilinear map :math:`y_k = x_1^\top W_k x_2 + b_k`.

    ``weight`` has shape ``(output_dims, input2_dims, input1_dims)`` and ``bias``
    ``(output_dims,)``, initialised from :math:`\mathcal{U}(-k, k)` with
    :math:`k = 1 / \sqrt{\text{input1\_dims}}`. Leading axes of the two inputs must match.
    """

    def __init__(self, input1_dims: int, input2_dims: int, output_dims: int, bias: bool = True):
        super().__init__()
        scale = math.sqrt(1.0 / input1_dims)
        self.weight = mx.random.uniform(-scale, scale, (output_dims, input2_dims, input1_dims))
        if bias:
            self.bias = mx.random.uniform(-scale, scale, (output_dims,))

    def _extra_repr(self) -> str:
        out, in2, in1 = self["weight"].shape
        return (
            f"input1_dims={in1}, input2_dims={in2}, output_dims={out}, bias={'bias' in self}"
        )

    def __call__(self, x1, x2):
        w = self.weight
        out, in2, in1 = w.shape
        lead = x1.shape[:-1]
        # (N, in1) @ (in1, out*in2) -> (N, out, in2), then contract in2 with x2 per row.
        y = mx.matmul(mx.reshape(x1, (-1, in1)), mx.reshape(w, (out * in2, in1)).T)
        y = mx.reshape(y, (-1, out, in2))
        y = mx.matmul(y, mx.reshape(x2, (-1, in2, 1)))
        y = mx.reshape(y, (*lead, out))
        if "bias" in self:
            y = y + self.bias
        return y
