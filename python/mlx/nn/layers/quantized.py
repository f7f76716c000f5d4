"""Quantized layers (affine mode, MLX's packed layout) and nn.quantize."""

import math
from typing import Callable, Optional, Union

import mlx.core as mx
from mlx.nn.layers.base import Module
from mlx.utils import tree_map_with_path


class QuantizedLinear(Module):
    r"""Affine map :math:`y = x W^\top + b` with ``W`` quantized in groups of ``group_size``
    values along the input dimension (``weight`` packed uint32, ``scales`` and ``biases`` per
    group). The quantized parameters are frozen; ``bias`` stays trainable.
    """

    def __init__(self, input_dims: int, output_dims: int, bias: bool = True,
                 group_size: int = None, bits: int = None, mode: str = "affine"):
        super().__init__()
        self.group_size = group_size or 64
        self.bits = bits or 4
        self.mode = mode
        scale = math.sqrt(1.0 / input_dims)
        weight = mx.random.uniform(-scale, scale, (output_dims, input_dims))
        self.weight, self.scales, self.biases = mx.quantize(weight, self.group_size, self.bits,
                                                            mode=mode)
        if bias:
            self.bias = mx.zeros((output_dims,))
        self.freeze(keys=["weight", "scales", "biases"], recurse=False)

    def _extra_repr(self):
        out_dims, in_dims = self["weight"].shape
        in_dims = in_dims * 32 // self.bits
        return (f"input_dims={in_dims}, output_dims={out_dims}, bias={'bias' in self}, "
                f"group_size={self.group_size}, bits={self.bits}, mode={self.mode}")

    def __call__(self, x):
        y = mx.quantized_matmul(x, self["weight"], scales=self["scales"], biases=self["biases"],
                                transpose=True, group_size=self.group_size, bits=self.bits,
                                mode=self.mode)
        return y + self["bias"] if "bias" in self else y

    @classmethod
    def from_linear(cls, linear_layer: Module, group_size: int = None, bits: int = None,
                    mode: str = "affine"):
        """A QuantizedLinear holding the quantized weights of ``linear_layer``."""
        output_dims, input_dims = linear_layer.weight.shape
        ql = cls(input_dims, output_dims, False, group_size, bits, mode)
        ql.weight, ql.scales, ql.biases = mx.quantize(linear_layer.weight, ql.group_size,
                                                      ql.bits, mode=mode)
        if "bias" in linear_layer:
            ql.bias = linear_layer.bias
        ql.freeze(keys=["weight", "scales", "biases"], recurse=False)
        return ql


class QuantizedEmbedding(Module):
    """Embedding whose table is quantized in groups of ``group_size`` along the embedding
    dimension; rows are dequantized on lookup. The quantized parameters are frozen."""

    def __init__(self, num_embeddings: int, dims: int, group_size: int = None, bits: int = None,
                 mode: str = "affine"):
        super().__init__()
        self.group_size = group_size or 64
        self.bits = bits or 4
        self.mode = mode
        table = mx.random.normal(shape=(num_embeddings, dims), scale=math.sqrt(1.0 / dims))
        self.weight, self.scales, self.biases = mx.quantize(table, self.group_size, self.bits,
                                                            mode=mode)
        self.num_embeddings, self.dims = num_embeddings, dims
        self.freeze(recurse=False)

    def _extra_repr(self):
        return (f"{self.num_embeddings}, {self.dims}, group_size={self.group_size}, "
                f"bits={self.bits}, mode={self.mode}")

    def __call__(self, x):
        return mx.dequantize(self["weight"][x], self["scales"][x], self["biases"][x],
                             self.group_size, self.bits, self.mode)

    def as_linear(self, x):
        """``x @ weight.T`` with the quantized table (tied output projection)."""
        return mx.quantized_matmul(x, self["weight"], self["scales"], self["biases"],
                                   transpose=True, group_size=self.group_size, bits=self.bits,
                                   mode=self.mode)

    @classmethod
    def from_embedding(cls, embedding_layer: Module, group_size: int = None, bits: int = None,
                       mode: str = "affine"):
        """A QuantizedEmbedding holding the quantized table of ``embedding_layer``."""
        num_embeddings, dims = embedding_layer.weight.shape
        qe = cls(num_embeddings, dims, group_size, bits, mode)
        qe.weight, qe.scales, qe.biases = mx.quantize(embedding_layer.weight, qe.group_size,
                                                      qe.bits, mode=mode)
        qe.freeze(recurse=False)
        return qe


def quantize(model: Module, group_size: int = None, bits: int = None, *, mode: str = "affine",
             quantize_input: bool = False,
             class_predicate: Optional[Callable[[str, Module], Union[bool, dict]]] = None):
    """Replaces, in place, every leaf module of ``model`` that has ``to_quantized`` (and that
    ``class_predicate(path, module)`` accepts; a dict return gives that layer's own
    quantization arguments) by its quantized version."""
    if quantize_input:
        raise ValueError("[quantize] quantize_input is not supported in the 'affine' mode.")
    class_predicate = class_predicate or (lambda _, m: hasattr(m, "to_quantized"))

    def maybe_quantize(path, m):
        decision = class_predicate(path, m)
        if not decision:
            return m
        if not hasattr(m, "to_quantized"):
            raise ValueError(f"Unable to quantize model of type {type(m)}")
        if isinstance(decision, dict):
            return m.to_quantized(**decision)
        return m.to_quantized(group_size=group_size, bits=bits, mode=mode)

    leaves = tree_map_with_path(maybe_quantize, model.leaf_modules(), is_leaf=Module.is_module)
    model.update_modules(leaves)
