"""Embedding: a lookup table of vectors."""

import math

import mlx.core as mx
from mlx.nn.layers.base import Module, _cast_floating


class Embedding(Module):
    r"""Maps integer indices to vectors: ``weight[x]``.

    ``weight`` has shape ``(num_embeddings, dims)``, initialised from
    :math:`\mathcal{N}(0, 1/\text{dims})`. :meth:`as_linear` reuses the table as an output
    projection (tied embeddings).
    """

    def __init__(self, num_embeddings: int, dims: int):
        super().__init__()
        scale = math.sqrt(1.0 / dims)
        self.weight = mx.random.normal(shape=(num_embeddings, dims), scale=scale)

    def _extra_repr(self) -> str:
        return "{}, {}".format(*self["weight"].shape)

    def __call__(self, x):
        # Gather from the stored table, then cast the rows (not the whole table) to a compute
        # dtype when one is set.
        y = mx.take(self["weight"], x, axis=0)
        return y if self.compute_dtype is None else _cast_floating(y, self.compute_dtype)

    def as_linear(self, x):
        """``x @ weight.T``: scores of ``x`` against every embedding."""
        return mx.matmul(x, self.weight.T)

    def to_quantized(self, group_size: int = None, bits: int = None, mode: str = "affine",
                     quantize_input: bool = False):
        """This layer as a QuantizedEmbedding (see nn.quantize)."""
        from mlx.nn.layers.quantized import QuantizedEmbedding

        if quantize_input:
            raise ValueError("[to_quantized] quantize_input is not supported in the 'affine' mode.")
        return QuantizedEmbedding.from_embedding(self, group_size, bits, mode)
