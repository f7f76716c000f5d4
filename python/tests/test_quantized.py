"""Affine quantization: MLX's packed layout (checked bit by bit against a NumPy packer),
round trips, quantized_matmul against a float64 reference, gradients, and the nn layers."""

import numpy as np
import pytest

import mlx.core as mx
import mlx.nn as nn

RNG = np.random.default_rng(0)


def np_pack(codes, bits):
    """Codes (..., K) as a little-endian bit stream per row, in uint32 words."""
    codes = np.asarray(codes, dtype=np.uint64)
    K = codes.shape[-1]
    words = np.zeros(codes.shape[:-1] + (K * bits // 32,), dtype=np.uint64)
    for i in range(K):
        start = i * bits
        w, sh = divmod(start, 32)
        words[..., w] |= (codes[..., i] << np.uint64(sh)) & np.uint64(0xFFFFFFFF)
        if sh + bits > 32:
            words[..., w + 1] |= codes[..., i] >> np.uint64(32 - sh)
    return words.astype(np.uint32)


def np_quantize(w, group_size, bits):
    """MLX's affine scheme (float32 arithmetic): step d = (max - min) / (2^b - 1); with two
    bits or more the bias is the edge e of larger magnitude and the scale e / round(e / -+d),
    so that zero is a code; with one bit (d, min)."""
    f32 = np.float32
    g = w.reshape(w.shape[:-1] + (-1, group_size)).astype(f32)
    wmax, wmin = g.max(-1, keepdims=True), g.min(-1, keepdims=True)
    delta = np.maximum((wmax - wmin) / f32(2**bits - 1), f32(1e-7)).astype(f32)
    if bits == 1:
        scale, bias = delta, wmin
    else:
        neg = np.abs(wmin) > np.abs(wmax)
        edge = np.where(neg, wmin, wmax).astype(f32)
        step = np.where(neg, delta, -delta).astype(f32)
        q0 = np.round(edge / step)
        scale = np.where(q0 != 0, edge / np.where(q0 != 0, q0, 1), step).astype(f32)
        bias = np.where(q0 == 0, f32(0), edge).astype(f32)
    q = np.clip(np.round((g - bias) / scale), 0, 2**bits - 1)
    return q.reshape(w.shape).astype(np.uint32), scale[..., 0], bias[..., 0]


@pytest.mark.parametrize("bits", [1, 2, 3, 4, 5, 6, 8])
@pytest.mark.parametrize("group_size", [32, 64, 128])
def test_quantize_layout(bits, group_size):
    w = RNG.standard_normal((3, 2 * group_size)).astype(np.float32)
    wq, scales, biases = mx.quantize(mx.array(w), group_size, bits)
    assert wq.dtype == mx.uint32 and wq.shape == (3, 2 * group_size * bits // 32)
    assert scales.shape == biases.shape == (3, 2) and scales.dtype == mx.float32
    q, s, b = np_quantize(w, group_size, bits)
    np.testing.assert_allclose(np.array(scales), s, rtol=1e-6)
    np.testing.assert_allclose(np.array(biases), b, rtol=1e-6)
    # Codes may differ by one where (w - b) / s sits on a rounding boundary in float32.
    packed = np.array(wq)
    assert np.mean(packed == np_pack(q, bits)) > 0.9
    # The dequantized matrix is within half a step of w, except that the edge opposite the
    # bias may sit up to a step beyond the last code (the step was adjusted to make zero a code).
    deq = np.array(mx.dequantize(wq, scales, biases, group_size, bits))
    step = np.abs(np.repeat(s, group_size, axis=-1))
    assert np.all(np.abs(deq - w) <= step * (0.5 if bits == 1 else 1.0) + 1e-5)
    assert np.mean(np.abs(deq - w) <= step * 0.5 + 1e-5) > 0.95


@pytest.mark.parametrize("bits", [2, 3, 4, 5, 6, 8])
def test_dequantize_reads_mlx_layout(bits):
    # Hand-made codes, packed by the NumPy packer (MLX's layout), decode exactly.
    group_size = 32
    q = RNG.integers(0, 2**bits, size=(4, 64)).astype(np.uint32)
    # Every group spans the whole code range, so requantizing the grid finds the same scales.
    q[:, [0, 32]] = 0
    q[:, [1, 33]] = 2**bits - 1
    scales = RNG.uniform(0.1, 1, (4, 2)).astype(np.float32)
    biases = RNG.uniform(-1, 1, (4, 2)).astype(np.float32)
    wq = mx.array(np_pack(q, bits))
    deq = mx.dequantize(wq, mx.array(scales), mx.array(biases), group_size, bits)
    expected = q.reshape(4, 2, 32) * scales[..., None] + biases[..., None]
    np.testing.assert_allclose(np.array(deq), expected.reshape(4, 64), rtol=1e-6, atol=1e-6)
    # Requantizing the grid stays within a step of it (the grid need not contain zero).
    wq2, s2, b2 = mx.quantize(deq, group_size, bits)
    deq2 = mx.dequantize(wq2, s2, b2, group_size, bits)
    step = np.repeat(np.abs(np.array(s2)), group_size, axis=-1)
    assert np.all(np.abs(np.array(deq2) - np.array(deq)) <= step + 1e-5)


@pytest.mark.parametrize("dtype", [mx.float16, mx.bfloat16, mx.float32])
def test_dtypes_and_batch(dtype):
    w = mx.array(RNG.standard_normal((2, 3, 64)).astype(np.float32)).astype(dtype)
    wq, s, b = mx.quantize(w)
    assert s.dtype == dtype and b.dtype == dtype and wq.shape == (2, 3, 8)
    deq = mx.dequantize(wq, s, b)
    assert deq.dtype == dtype
    err = np.abs(np.array(deq.astype(mx.float32)) - np.array(w.astype(mx.float32)))
    assert err.max() <= np.abs(np.array(s.astype(mx.float32))).max() * 1.1 + 1e-2
    assert mx.dequantize(wq, s, b, dtype=mx.float32).dtype == mx.float32


@pytest.mark.parametrize("transpose", [True, False])
@pytest.mark.parametrize("bits", [4, 3, 8])
def test_quantized_matmul(transpose, bits):
    K, N = 128, 192
    w = RNG.standard_normal((N, K) if transpose else (K, N)).astype(np.float32)
    wq, s, b = mx.quantize(mx.array(w), 64, bits)
    W = np.array(mx.dequantize(wq, s, b, 64, bits)).astype(np.float64)
    for xs in [(K,), (5, K), (2, 3, K), (1, K)]:
        x = RNG.standard_normal(xs).astype(np.float32)
        y = mx.quantized_matmul(mx.array(x), wq, s, b, transpose=transpose, group_size=64,
                                bits=bits)
        expected = x.astype(np.float64) @ (W.T if transpose else W)
        np.testing.assert_allclose(np.array(y), expected, rtol=1e-4, atol=1e-4)


def test_quantized_matmul_gradient():
    w = RNG.standard_normal((16, 64)).astype(np.float32)
    wq, s, b = mx.quantize(mx.array(w), 32, 4)
    W = np.array(mx.dequantize(wq, s, b, 32, 4))
    x = mx.array(RNG.standard_normal((3, 64)).astype(np.float32))
    r = RNG.standard_normal((3, 16)).astype(np.float32)
    g = mx.grad(lambda x: mx.sum(mx.quantized_matmul(x, wq, s, b, group_size=32) * mx.array(r)))(x)
    np.testing.assert_allclose(np.array(g), r @ W, rtol=1e-4, atol=1e-4)


def test_errors():
    w = mx.zeros((4, 64))
    with pytest.raises(ValueError, match=r"\[quantize\] The requested group size 48"):
        mx.quantize(w, 48)
    with pytest.raises(ValueError, match=r"\[quantize\] The requested number of bits 7"):
        mx.quantize(w, 64, 7)
    with pytest.raises(ValueError, match=r"\[quantize\] The last dimension of the matrix \(64\)"):
        mx.quantize(w, 128)
    with pytest.raises(ValueError, match=r"at least 2 dimensions"):
        mx.quantize(mx.zeros((64,)))
    with pytest.raises(ValueError, match=r"Invalid quantization mode 'int4'"):
        mx.quantize(w, mode="int4")
    wq, s, b = mx.quantize(w)
    with pytest.raises(ValueError, match=r"\[dequantize\] Shape of scales"):
        mx.dequantize(wq, s[:, :0], b)
    with pytest.raises(ValueError, match=r"\[quantized_matmul\] The last dimension of x"):
        mx.quantized_matmul(mx.zeros((2, 32)), wq, s, b)


def test_nn_quantized_linear_and_quantize():
    lin = nn.Linear(64, 8)
    ql = nn.QuantizedLinear.from_linear(lin, group_size=32, bits=8)
    x = mx.array(RNG.standard_normal((5, 64)).astype(np.float32))
    np.testing.assert_allclose(np.array(ql(x)), np.array(lin(x)), rtol=2e-2, atol=2e-2)
    assert set(ql.trainable_parameters()) == {"bias"}
    layer = nn.QuantizedLinear(64, 16, bias=False)
    assert layer.weight.shape == (16, 8) and layer(x).shape == (5, 16)
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 4))
    ref = np.array(model(x))
    nn.quantize(model, group_size=32, bits=8)
    assert isinstance(model.layers[0], nn.QuantizedLinear)
    assert isinstance(model.layers[2], nn.QuantizedLinear)
    np.testing.assert_allclose(np.array(model(x)), ref, rtol=5e-2, atol=5e-2)
    # class_predicate picks layers and their arguments.
    model = nn.Sequential(nn.Linear(64, 32), nn.Linear(32, 4))
    nn.quantize(model, class_predicate=lambda p, m: {"group_size": 32, "bits": 4}
                if p == "layers.1" else False)
    assert isinstance(model.layers[0], nn.Linear)
    assert isinstance(model.layers[1], nn.QuantizedLinear) and model.layers[1].bits == 4


def test_nn_quantized_embedding():
    emb = nn.Embedding(10, 64)
    qe = nn.QuantizedEmbedding.from_embedding(emb, group_size=32, bits=8)
    idx = mx.array([[1, 3], [9, 0]])
    np.testing.assert_allclose(np.array(qe(idx)), np.array(emb(idx)), rtol=2e-2, atol=2e-2)
    x = mx.array(RNG.standard_normal((3, 64)).astype(np.float32))
    np.testing.assert_allclose(np.array(qe.as_linear(x)), np.array(emb.as_linear(x)), rtol=5e-2,
                               atol=5e-2)
    assert qe.trainable_parameters() == {}
    model = nn.Sequential(nn.Embedding(10, 64), nn.Linear(64, 4))
    nn.quantize(model, group_size=64, bits=4)
    assert isinstance(model.layers[0], nn.QuantizedEmbedding)
    assert model(mx.array([1, 2])).shape == (2, 4)
