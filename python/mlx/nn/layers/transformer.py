"""Multi-head attention and the Transformer encoder / decoder."""

import math
from collections.abc import Callable
from typing import Any, Optional

import mlx.core as mx
from mlx.nn.layers.activations import relu
from mlx.nn.layers.base import Module
from mlx.nn.layers.dropout import Dropout
from mlx.nn.layers.linear import Linear
from mlx.nn.layers.normalization import LayerNorm
from mlx.nn.utils import checkpoint as checkpoint_module


class MultiHeadAttention(Module):
    r"""Scaled dot-product attention with ``num_heads`` heads.

    Queries, keys and values are projected (without bias unless ``bias``), split into heads,
    attended with ``mx.fast.scaled_dot_product_attention`` (scale :math:`1/\sqrt{d_h}`) and the
    concatenated heads projected to the output.

    ``__call__(queries, keys, values, mask=None)`` takes ``(B, L, *)`` inputs; ``mask`` is
    additive (or boolean, True = attend) and broadcastable to ``(B, num_heads, L_q, L_k)``,
    or the string ``"causal"``.

    Args:
        dims: model dimensions; the default of the other sizes.
        num_heads: number of heads (must divide ``dims`` and ``value_dims``).
        query_input_dims: input size of the queries (default ``dims``).
        key_input_dims: input size of the keys (default ``dims``).
        value_input_dims: input size of the values (default ``key_input_dims``).
        value_dims: size of the projected values (default ``dims``).
        value_output_dims: output size (default ``dims``).
        bias: whether the projections have biases (default False).
    """

    def __init__(
        self,
        dims: int,
        num_heads: int,
        query_input_dims: Optional[int] = None,
        key_input_dims: Optional[int] = None,
        value_input_dims: Optional[int] = None,
        value_dims: Optional[int] = None,
        value_output_dims: Optional[int] = None,
        bias: bool = False,
    ):
        super().__init__()
        if dims % num_heads != 0:
            raise ValueError(
                f"[MultiHeadAttention] The input feature dimensions should be divisible by "
                f"the number of heads ({dims} % {num_heads}) != 0."
            )
        query_input_dims = query_input_dims or dims
        key_input_dims = key_input_dims or dims
        value_input_dims = value_input_dims or key_input_dims
        value_dims = value_dims or dims
        value_output_dims = value_output_dims or dims
        if value_dims % num_heads != 0:
            raise ValueError(
                f"[MultiHeadAttention] value_dims ({value_dims}) must be divisible by "
                f"num_heads ({num_heads})."
            )
        self.num_heads = num_heads
        self.query_proj = Linear(query_input_dims, dims, bias=bias)
        self.key_proj = Linear(key_input_dims, dims, bias=bias)
        self.value_proj = Linear(value_input_dims, value_dims, bias=bias)
        self.out_proj = Linear(value_dims, value_output_dims, bias=bias)

    def _heads(self, x):
        b, length, _ = x.shape
        return mx.transpose(mx.reshape(x, (b, length, self.num_heads, -1)), (0, 2, 1, 3))

    def __call__(self, queries, keys, values, mask=None):
        q = self._heads(self.query_proj(queries))
        k = self._heads(self.key_proj(keys))
        v = self._heads(self.value_proj(values))
        out = mx.fast.scaled_dot_product_attention(
            q, k, v, scale=1.0 / math.sqrt(q.shape[-1]), mask=mask
        )
        b, _, length, _ = out.shape
        out = mx.reshape(mx.transpose(out, (0, 2, 1, 3)), (b, length, -1))
        return self.out_proj(out)

    @staticmethod
    def create_additive_causal_mask(N: int, dtype=mx.float32):
        """An ``(N, N)`` additive mask: 0 on and below the diagonal, the most negative finite
        value of ``dtype`` above it (query ``i`` may attend to keys ``j <= i``)."""
        idx = mx.arange(N)
        future = mx.expand_dims(idx, 1) < mx.expand_dims(idx, 0)
        return future.astype(dtype) * mx.finfo(dtype).min


def _call(layer, use_checkpoint: bool):
    return checkpoint_module(layer) if use_checkpoint else layer


class TransformerEncoderLayer(Module):
    """Self-attention and an MLP (``dims -> mlp_dims -> dims``), each with a residual
    connection and a LayerNorm: before the block when ``norm_first`` (default), after the
    residual sum otherwise. Dropout follows the attention and the activation.

    ``__call__(x, mask)`` with ``x`` shaped ``(B, L, dims)``.
    """

    def __init__(
        self,
        dims: int,
        num_heads: int,
        mlp_dims: Optional[int] = None,
        dropout: float = 0.0,
        activation: Callable[[Any], Any] = relu,
        norm_first: bool = True,
    ):
        super().__init__()
        mlp_dims = mlp_dims or dims * 4
        self.attention = MultiHeadAttention(dims, num_heads)
        self.ln1 = LayerNorm(dims)
        self.ln2 = LayerNorm(dims)
        self.linear1 = Linear(dims, mlp_dims)
        self.linear2 = Linear(mlp_dims, dims)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = activation
        self.norm_first = norm_first

    def _mlp(self, x):
        return self.linear2(self.dropout2(self.activation(self.linear1(x))))

    def __call__(self, x, mask):
        if self.norm_first:
            y = self.ln1(x)
            x = x + self.dropout1(self.attention(y, y, y, mask))
            return x + self._mlp(self.ln2(x))
        x = self.ln1(x + self.dropout1(self.attention(x, x, x, mask)))
        return self.ln2(x + self._mlp(x))


class TransformerEncoder(Module):
    """``num_layers`` TransformerEncoderLayers followed by a LayerNorm. With ``checkpoint``
    each layer runs under gradient checkpointing (``mx.checkpoint``): its activations are
    recomputed in the backward pass instead of stored."""

    def __init__(
        self,
        num_layers: int,
        dims: int,
        num_heads: int,
        mlp_dims: Optional[int] = None,
        dropout: float = 0.0,
        activation=relu,
        norm_first: bool = True,
        checkpoint: bool = False,
    ):
        super().__init__()
        self.layers = [
            TransformerEncoderLayer(dims, num_heads, mlp_dims, dropout, activation, norm_first)
            for _ in range(num_layers)
        ]
        self.ln = LayerNorm(dims)
        self.checkpoint = checkpoint

    def __call__(self, x, mask):
        for layer in self.layers:
            x = _call(layer, self.checkpoint)(x, mask)
        return self.ln(x)


class TransformerDecoderLayer(Module):
    """Self-attention on the target, cross-attention to the encoder output ``memory`` and an
    MLP, each with a residual connection, a LayerNorm (placed as in
    TransformerEncoderLayer) and dropout.

    ``__call__(x, memory, x_mask, memory_mask)``.
    """

    def __init__(
        self,
        dims: int,
        num_heads: int,
        mlp_dims: Optional[int] = None,
        dropout: float = 0.0,
        activation: Callable[[Any], Any] = relu,
        norm_first: bool = True,
    ):
        super().__init__()
        mlp_dims = mlp_dims or dims * 4
        self.self_attention = MultiHeadAttention(dims, num_heads)
        self.cross_attention = MultiHeadAttention(dims, num_heads)
        self.ln1 = LayerNorm(dims)
        self.ln2 = LayerNorm(dims)
        self.ln3 = LayerNorm(dims)
        self.linear1 = Linear(dims, mlp_dims)
        self.linear2 = Linear(mlp_dims, dims)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = activation
        self.norm_first = norm_first

    def _mlp(self, x):
        return self.linear2(self.dropout3(self.activation(self.linear1(x))))

    def __call__(self, x, memory, x_mask, memory_mask):
        if self.norm_first:
            y = self.ln1(x)
            x = x + self.dropout1(self.self_attention(y, y, y, x_mask))
            y = self.ln2(x)
            x = x + self.dropout2(self.cross_attention(y, memory, memory, memory_mask))
            return x + self._mlp(self.ln3(x))
        x = self.ln1(x + self.dropout1(self.self_attention(x, x, x, x_mask)))
        x = self.ln2(x + self.dropout2(self.cross_attention(x, memory, memory, memory_mask)))
        return self.ln3(x + self._mlp(x))


class TransformerDecoder(Module):
    """``num_layers`` TransformerDecoderLayers followed by a LayerNorm; ``checkpoint`` as in
    TransformerEncoder."""

    def __init__(
        self,
        num_layers: int,
        dims: int,
        num_heads: int,
        mlp_dims: Optional[int] = None,
        dropout: float = 0.0,
        activation=relu,
        norm_first: bool = True,
        checkpoint: bool = False,
    ):
        super().__init__()
        self.layers = [
            TransformerDecoderLayer(dims, num_heads, mlp_dims, dropout, activation, norm_first)
            for _ in range(num_layers)
        ]
        self.ln = LayerNorm(dims)
        self.checkpoint = checkpoint

    def __call__(self, x, memory, x_mask, memory_mask):
        for layer in self.layers:
            x = _call(layer, self.checkpoint)(x, memory, x_mask, memory_mask)
        return self.ln(x)


class Transformer(Module):
    """The encoder-decoder Transformer of "Attention Is All You Need".

    ``__call__(src, tgt, src_mask, tgt_mask, memory_mask)`` encodes ``src`` (``(B, L_s,
    dims)``) and decodes ``tgt`` (``(B, L_t, dims)``) attending to the encoding.

    Args:
        dims: model size (default 512).
        num_heads: attention heads (default 8).
        num_encoder_layers, num_decoder_layers: depths (default 6 each).
        mlp_dims: hidden size of the MLPs (default ``4 * dims``).
        dropout: dropout rate after attentions and activations (default 0).
        activation: MLP activation (default ``nn.relu``).
        custom_encoder, custom_decoder: modules replacing the default encoder / decoder.
        norm_first: pre-LayerNorm blocks (default True).
        checkpoint: gradient checkpointing of every layer (default False).
    """

    def __init__(
        self,
        dims: int = 512,
        num_heads: int = 8,
        num_encoder_layers: int = 6,
        num_decoder_layers: int = 6,
        mlp_dims: Optional[int] = None,
        dropout: float = 0.0,
        activation: Callable[[Any], Any] = relu,
        custom_encoder: Optional[Any] = None,
        custom_decoder: Optional[Any] = None,
        norm_first: bool = True,
        checkpoint: bool = False,
    ):
        super().__init__()
        # `is None`, not `or`: an empty Module (a dict) is falsy.
        if custom_encoder is None:
            custom_encoder = TransformerEncoder(
                num_encoder_layers, dims, num_heads, mlp_dims, dropout, activation, norm_first,
                checkpoint,
            )
        if custom_decoder is None:
            custom_decoder = TransformerDecoder(
                num_decoder_layers, dims, num_heads, mlp_dims, dropout, activation, norm_first,
                checkpoint,
            )
        self.encoder = custom_encoder
        self.decoder = custom_decoder

    def __call__(self, src, tgt, src_mask, tgt_mask, memory_mask):
        memory = self.encoder(src, src_mask)
        return self.decoder(tgt, memory, tgt_mask, memory_mask)
