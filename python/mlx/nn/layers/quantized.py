"""Quantized layers (MLX's modes and packed layouts), QQLinear (quantized weights and inputs)
and nn.quantize."""

import math
from typing import Callable, Optional, Union

import mlx.core as mx
from mlx.nn.layers.base import Module
from mlx.utils import tree_map_with_path


_QUANTIZED_KEYS = ["weight", "scales", "biases"]
_MODE_DEFAULTS = {"affine": (64, 4), "mxfp4": (32, 4), "mxfp8": (32, 8), "nvfp4": (16, 4)}


def _defaults(group_size, bits, mode):
    """The group size and bits of ``mode`` where not given."""
    if mode not in _MODE_DEFAULTS:
        raise ValueError(
            f"Invalid quantization mode {mode!r}; the modes are {', '.join(_MODE_DEFAULTS)}."
        )
    gs, b = _MODE_DEFAULTS[mode]
    return group_size or gs, bits or b


def _set_quantized(module, weight, group_size, bits, mode):
    """Stores the quantized ``weight`` in ``module``: weight and scales, and biases in the
    affine mode (removed otherwise)."""
    module.weight, module.scales, *biases = mx.quantize(weight, group_size, bits, mode=mode)
    if biases:
        module.biases = biases[0]
    elif "biases" in module:
        del module["biases"]


class QuantizedLinear(Module):
    r"""Affine map :math:`y = x W^\top + b` with ``W`` quantized in groups of ``group_size``
    values along the input dimension (``weight`` packed uint32, ``scales`` and ``biases`` per
    group). The quantized parameters are frozen; ``bias`` stays trainable.
    """

    def __init__(self, input_dims: int, output_dims: int, bias: bool = True,
                 group_size: int = None, bits: int = None, mode: str = "affine"):
        super().__init__()
        self.group_size, self.bits = _defaults(group_size, bits, mode)
        self.mode = mode
        scale = math.sqrt(1.0 / input_dims)
        weight = mx.random.uniform(-scale, scale, (output_dims, input_dims))
        _set_quantized(self, weight, self.group_size, self.bits, mode)
        if bias:
            self.bias = mx.zeros((output_dims,))
        self.freeze(keys=_QUANTIZED_KEYS, recurse=False, strict=False)

    def _extra_repr(self):
        out_dims, in_dims = self["weight"].shape
        in_dims = in_dims * 32 // self.bits
        return (f"input_dims={in_dims}, output_dims={out_dims}, bias={'bias' in self}, "
                f"group_size={self.group_size}, bits={self.bits}, mode={self.mode}")

    def __call__(self, x):
        y = mx.quantized_matmul(x, self["weight"], scales=self["scales"],
                                biases=self.get("biases"), transpose=True,
                                group_size=self.group_size, bits=self.bits, mode=self.mode)
        return y + self["bias"] if "bias" in self else y

    @classmethod
    def from_linear(cls, linear_layer: Module, group_size: int = None, bits: int = None,
                    mode: str = "affine"):
        """A QuantizedLinear holding the quantized weights of ``linear_layer``."""
        output_dims, input_dims = linear_layer.weight.shape
        ql = cls(input_dims, output_dims, False, group_size, bits, mode)
        _set_quantized(ql, linear_layer.weight, ql.group_size, ql.bits, mode)
        if "bias" in linear_layer:
            ql.bias = linear_layer.bias
        ql.freeze(keys=_QUANTIZED_KEYS, recurse=False, strict=False)
        return ql


class QuantizedEmbedding(Module):
    """Embedding whose table is quantized in groups of ``group_size`` along the embedding
    dimension; rows are dequantized on lookup. The quantized parameters are frozen."""

    def __init__(self, num_embeddings: int, dims: int, group_size: int = None, bits: int = None,
                 mode: str = "affine"):
        super().__init__()
        self.group_size, self.bits = _defaults(group_size, bits, mode)
        self.mode = mode
        table = mx.random.normal(shape=(num_embeddings, dims), scale=math.sqrt(1.0 / dims))
        _set_quantized(self, table, self.group_size, self.bits, mode)
        self.num_embeddings, self.dims = num_embeddings, dims
        self.freeze(recurse=False)

    def _extra_repr(self):
        return (f"{self.num_embeddings}, {self.dims}, group_size={self.group_size}, "
                f"bits={self.bits}, mode={self.mode}")

    def __call__(self, x):
        biases = self["biases"][x] if "biases" in self else None
        return mx.dequantize(self["weight"][x], self["scales"][x], biases, self.group_size,
                             self.bits, self.mode)

    def as_linear(self, x):
        """``x @ weight.T`` with the quantized table (tied output projection)."""
        return mx.quantized_matmul(x, self["weight"], self["scales"], self.get("biases"),
                                   transpose=True, group_size=self.group_size, bits=self.bits,
                                   mode=self.mode)

    @classmethod
    def from_embedding(cls, embedding_layer: Module, group_size: int = None, bits: int = None,
                       mode: str = "affine"):
        """A QuantizedEmbedding holding the quantized table of ``embedding_layer``."""
        num_embeddings, dims = embedding_layer.weight.shape
        qe = cls(num_embeddings, dims, group_size, bits, mode)
        _set_quantized(qe, embedding_layer.weight, qe.group_size, qe.bits, mode)
        qe.freeze(recurse=False)
        return qe


class QQLinear(Module):
    r"""Affine map :math:`y = x W^\top` with both the input and the weight quantized
    (``mode`` ``"nvfp4"``, ``"mxfp8"`` or ``"mxfp4"``; see :func:`mlx.core.qqmm`).

    In training mode the weight is kept in full precision and quantized on the fly (gradients
    pass straight through the quantization); ``eval()`` stores it quantized (``weight`` packed
    and ``scales``), ``train()`` dequantizes it again. There is no bias.

    Args:
        input_dims: Input features.
        output_dims: Output features.
        group_size: Elements per scale. Default: the mode's.
        bits: Bits per element. Default: the mode's.
        mode: The quantization mode. Default: ``"nvfp4"``.
    """

    def __init__(self, input_dims: int, output_dims: int, group_size: int = None,
                 bits: int = None, mode: str = "nvfp4"):
        super().__init__()
        if mode == "affine":
            raise ValueError("[QQLinear] The 'affine' mode is not supported; use nvfp4, mxfp8 or "
                             "mxfp4.")
        self.group_size, self.bits = _defaults(group_size, bits, mode)
        self.mode = mode
        scale = math.sqrt(1.0 / input_dims)
        self.weight = mx.random.uniform(-scale, scale, (output_dims, input_dims))

    def _extra_repr(self):
        out_dims, in_dims = self["weight"].shape
        if "scales" in self:
            in_dims = in_dims * 32 // self.bits
        return (f"input_dims={in_dims}, output_dims={out_dims}, group_size={self.group_size}, "
                f"bits={self.bits}, mode={self.mode}")

    def quantize(self):
        """Stores the weight quantized (what evaluation mode uses)."""
        if "scales" not in self:
            self.weight, self.scales = mx.quantize(self["weight"], self.group_size, self.bits,
                                                   mode=self.mode)

    def dequantize(self):
        """Stores the weight in full precision again (what training mode uses)."""
        if "scales" in self:
            self.weight = mx.dequantize(self["weight"], self["scales"], None, self.group_size,
                                        self.bits, self.mode)
            del self["scales"]

    def _sync(self):
        if self.training:
            self.dequantize()
        else:
            self.quantize()

    def train(self, mode: bool = True):
        super().train(mode)
        self._sync()
        return self

    def __call__(self, x):
        self._sync()
        return mx.qqmm(x, self["weight"], self.get("scales"), group_size=self.group_size,
                       bits=self.bits, mode=self.mode)

    @classmethod
    def from_linear(cls, linear_layer: Module, group_size: int = None, bits: int = None,
                    mode: str = "nvfp4"):
        """A QQLinear holding the weight of ``linear_layer`` (which must have no bias)."""
        if "bias" in linear_layer:
            raise NotImplementedError("[QQLinear] Layers with a bias are not supported.")
        output_dims, input_dims = linear_layer.weight.shape
        layer = cls(input_dims, output_dims, group_size, bits, mode)
        layer.weight = linear_layer.weight
        layer._training = linear_layer.training
        layer._sync()
        return layer


def quantize(model: Module, group_size: int = None, bits: int = None, *, mode: str = "affine",
             quantize_input: bool = False,
             class_predicate: Optional[Callable[[str, Module], Union[bool, dict]]] = None):
    """Replaces, in place, every leaf module of ``model`` that has ``to_quantized`` (and that
    ``class_predicate(path, module)`` accepts; a dict return gives that layer's own
    quantization arguments) by its quantized version."""
    if quantize_input and mode not in ("nvfp4", "mxfp8", "mxfp4"):
        raise ValueError(f"[quantize] quantize_input is not supported in the {mode!r} mode.")
    class_predicate = class_predicate or (lambda _, m: hasattr(m, "to_quantized"))

    def maybe_quantize(path, m):
        decision = class_predicate(path, m)
        if not decision:
            return m
        if not hasattr(m, "to_quantized"):
            raise ValueError(f"Unable to quantize model of type {type(m)}")
        if isinstance(decision, dict):
            return m.to_quantized(**decision)
        if quantize_input:
            return m.to_quantized(group_size=group_size, bits=bits, mode=mode,
                                  quantize_input=True)
        return m.to_quantized(group_size=group_size, bits=bits, mode=mode)

    leaves = tree_map_with_path(maybe_quantize, model.leaf_modules(), is_leaf=Module.is_module)
    model.update_modules(leaves)
