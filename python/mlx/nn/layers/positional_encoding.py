"""Positional encodings: rotary (RoPE), sinusoidal and ALiBi attention biases."""

import math
from typing import Optional

import mlx.core as mx
from mlx.nn.layers.base import Module


class RoPE(Module):
    r"""Rotary positional encoding (Su et al., RoFormer) of the first ``dims`` features of
    inputs shaped ``(..., L, D)``: feature pairs are rotated by the angle
    :math:`(\text{offset} + l) \cdot \text{scale} \cdot \text{base}^{-2i/\text{dims}}`.

    Args:
        dims: number of features to rotate (the rest pass through).
        traditional: pair consecutive features ``(2i, 2i+1)`` instead of the halves
            ``(i, i + dims/2)`` (default False).
        base: the base of the frequencies (default 10000).
        scale: scales the positions (default 1.0).
    """

    def __init__(
        self, dims: int, traditional: bool = False, base: float = 10000, scale: float = 1.0
    ):
        super().__init__()
        self.dims = dims
        self.traditional = traditional
        self.base = base
        self.scale = scale

    def _extra_repr(self) -> str:
        return f"{self.dims}, traditional={self.traditional}"

    def __call__(self, x, offset: int = 0):
        return mx.fast.rope(
            x,
            self.dims,
            traditional=self.traditional,
            base=self.base,
            scale=self.scale,
            offset=offset,
        )


class SinusoidalPositionalEncoding(Module):
    r"""Sinusoidal encoding of (possibly fractional) positions: for an input ``x`` of any
    shape, returns ``x.shape + (dims,)`` holding :math:`\sin(x \sigma_i)` and
    :math:`\cos(x \sigma_i)` for ``dims // 2`` frequencies :math:`\sigma_i` spaced
    geometrically from ``max_freq`` down to ``min_freq``, times ``scale``.

    Args:
        dims: output features (twice the number of frequencies).
        min_freq: lowest frequency (default 0.0001).
        max_freq: highest frequency (default 1).
        scale: output multiplier (default :math:`\sqrt{2 / \text{dims}}`).
        cos_first: put the cosines before the sines (default False).
        full_turns: multiply the frequencies by :math:`2\pi` (default False).
    """

    def __init__(
        self,
        dims: int,
        min_freq: float = 0.0001,
        max_freq: float = 1,
        scale: Optional[float] = None,
        cos_first: bool = False,
        full_turns: bool = False,
    ):
        super().__init__()
        half = dims // 2
        one_zero = 1 - mx.arange(0, half, dtype=mx.float32) / max(half - 1, 1)
        log_min, log_max = math.log(min_freq), math.log(max_freq)
        sigmas = mx.exp(one_zero * (log_max - log_min) + log_min)
        if full_turns:
            sigmas = sigmas * (2 * math.pi)
        self._sigmas = sigmas
        self.scale = scale if scale is not None else math.sqrt(2 / dims)
        self.cos_first = cos_first

    def __call__(self, x):
        y = mx.expand_dims(x, -1) * self._sigmas
        sin, cos = mx.sin(y), mx.cos(y)
        y = mx.concatenate([cos, sin] if self.cos_first else [sin, cos], axis=-1)
        if self.scale != 1:
            y = y * self.scale
        return y


class ALiBi(Module):
    r"""Attention with Linear Biases (Press et al.): adds :math:`-m_h |i - j|` to the
    attention scores of head :math:`h` (query position :math:`i`, key position :math:`j`),
    with slopes :math:`m_h = 2^{-8h/H}`, :math:`h = 1..H`.

    ``__call__(attention_scores, offset=0, mask=None)`` takes scores shaped
    ``(B, H, L_q, L_k)``; ``offset`` is the position of the first query; ``mask`` (additive)
    is added too.
    """

    @staticmethod
    def create_alibi_slope(num_heads: int):
        """The per-head slopes, shaped ``(num_heads, 1, 1)``."""
        exponents = mx.arange(1, num_heads + 1, dtype=mx.float32) * (-8.0 / num_heads)
        return mx.reshape(mx.power(2.0, exponents), (num_heads, 1, 1))

    @staticmethod
    def create_alibi_matrix(
        q_sequence_length: int,
        k_sequence_length: int,
        num_heads: int,
        offset: int,
        dtype=mx.float32,
    ):
        """The ``(1, num_heads, q_sequence_length - offset, k_sequence_length)`` bias for
        queries at positions ``offset .. q_sequence_length - 1``."""
        q = mx.arange(offset, q_sequence_length, dtype=mx.float32)
        k = mx.arange(0, k_sequence_length, dtype=mx.float32)
        distance = -mx.abs(mx.expand_dims(q, 1) - mx.expand_dims(k, 0))
        bias = mx.expand_dims(distance, 0) * ALiBi.create_alibi_slope(num_heads)
        return mx.expand_dims(bias, 0).astype(dtype)

    def __call__(self, attention_scores, offset: int = 0, mask=None):
        _, heads, q_len, k_len = attention_scores.shape
        bias = self.create_alibi_matrix(
            q_sequence_length=q_len + offset,
            k_sequence_length=k_len,
            num_heads=heads,
            offset=offset,
            dtype=attention_scores.dtype,
        )
        if mask is not None:
            bias = bias + mask
        return attention_scores + bias
