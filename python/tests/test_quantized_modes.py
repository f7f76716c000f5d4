"""The microscaled quantization modes (mxfp4, mxfp8, nvfp4) and 1-bit affine: bit-exact against
outputs of Apple MLX 0.32.4 (data/mlx_quantized_modes.npz, made by its quantize, dequantize,
quantized_matmul and gather_qmm on the CPU) and against a NumPy model of the documented
formats; gather_qmm, qqmm and gather_qqmm against float64 references; QQLinear and the
quantized sharded layers."""

import os

import numpy as np
import pytest

import mlx.core as mx
import mlx.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
REF = np.load(os.path.join(HERE, "data", "mlx_quantized_modes.npz"))
RNG = np.random.default_rng(0)
MODES = ["mxfp4", "mxfp8", "nvfp4"]
FP4 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6])


def f32(a):
    return np.array(a.astype(mx.float32))


def unpack(q, bits):
    q = np.asarray(q).astype(np.uint64)
    per = 32 // bits
    codes = [(q >> np.uint64(bits * j)) & np.uint64((1 << bits) - 1) for j in range(per)]
    return np.stack(codes, -1).reshape(q.shape[:-1] + (-1,))


def np_fp4(codes):
    return np.where(codes & 8, -1.0, 1.0) * FP4[codes & 7]


def np_e4m3(codes):
    codes = np.asarray(codes).astype(np.int64)
    e, m = (codes >> 3) & 15, codes & 7
    v = np.where(e == 0, m / 8 * 2.0**-6, (1 + m / 8) * 2.0 ** (e - 7))
    v = np.where((codes & 0x7F) == 0x7F, np.nan, v)
    return np.where(codes & 0x80, -v, v)


def np_dequantize(q, s, mode, global_scale=None):
    """The documented decoding: element value times the group's scale."""
    bits = 8 if mode == "mxfp8" else 4
    gs = 16 if mode == "nvfp4" else 32
    codes = unpack(q, bits)
    vals = np_e4m3(codes) if mode == "mxfp8" else np_fp4(codes)
    if mode == "nvfp4":
        scale = np_e4m3(s) * (1 if global_scale is None else global_scale / 2688)
    else:
        scale = 2.0 ** (np.asarray(s).astype(np.float64) - 127)
    return (vals.reshape(vals.shape[:-1] + (-1, gs)) * scale[..., None]).reshape(vals.shape)


@pytest.mark.parametrize("mode", MODES)
def test_bit_exact_with_mlx(mode):
    w = mx.array(REF["w"])
    q, s = mx.quantize(w, mode=mode)
    assert q.dtype == mx.uint32 and s.dtype == mx.uint8
    np.testing.assert_array_equal(np.array(q), REF[f"{mode}_q"])
    np.testing.assert_array_equal(np.array(s), REF[f"{mode}_s"])
    qb, sb = mx.quantize(w.astype(mx.bfloat16), mode=mode)
    np.testing.assert_array_equal(np.array(qb), REF[f"{mode}_bf16_q"])
    np.testing.assert_array_equal(np.array(sb), REF[f"{mode}_bf16_s"])
    # MLX's codes decode to MLX's values, and the documented decoding gives the same.
    deq = mx.dequantize(mx.array(REF[f"{mode}_q"]), mx.array(REF[f"{mode}_s"]), mode=mode,
                        dtype=mx.float32)
    np.testing.assert_array_equal(np.array(deq), REF[f"{mode}_deq"])
    np.testing.assert_array_equal(np.array(deq), np_dequantize(REF[f"{mode}_q"], REF[f"{mode}_s"], mode))
    y = mx.quantized_matmul(mx.array(REF["x"]), mx.array(REF[f"{mode}_q"]),
                            mx.array(REF[f"{mode}_s"]), mode=mode)
    np.testing.assert_allclose(np.array(y), REF[f"{mode}_qmm"], rtol=1e-5, atol=1e-4)


def test_nvfp4_global_scale_bit_exact():
    gs = mx.array(37.5)
    q, s = mx.quantize(mx.array(REF["w"]), mode="nvfp4", global_scale=gs)
    np.testing.assert_array_equal(np.array(q), REF["nvfp4_gs_q"])
    np.testing.assert_array_equal(np.array(s), REF["nvfp4_gs_s"])
    deq = mx.dequantize(q, s, mode="nvfp4", global_scale=gs, dtype=mx.float32)
    np.testing.assert_allclose(np.array(deq), REF["nvfp4_gs_deq"], rtol=1e-6)
    np.testing.assert_allclose(np.array(deq), np_dequantize(REF["nvfp4_gs_q"], REF["nvfp4_gs_s"],
                                                            "nvfp4", 37.5), rtol=1e-6)


@pytest.mark.parametrize("bits", [1, 2, 3, 4, 5, 6, 8])
def test_affine_bit_exact_with_mlx(bits):
    q, s, b = mx.quantize(mx.array(REF["w"]), 64, bits)
    # Codes on a rounding boundary may differ by one ulp of arithmetic; nearly all match.
    assert np.mean(np.array(q) == REF[f"affine{bits}_q"]) > 0.95
    np.testing.assert_allclose(np.array(s), REF[f"affine{bits}_s"], rtol=1e-6)
    np.testing.assert_allclose(np.array(b), REF[f"affine{bits}_b"], rtol=1e-6)
    y = mx.quantized_matmul(mx.array(REF["x"]), mx.array(REF[f"affine{bits}_q"]),
                            mx.array(REF[f"affine{bits}_s"]), mx.array(REF[f"affine{bits}_b"]),
                            True, 64, bits)
    np.testing.assert_allclose(np.array(y), REF[f"affine{bits}_qmm"], rtol=1e-4, atol=1e-3)


def test_fp4_rounding_rules():
    # Ties round toward zero; saturation at 6; -0 has no sign bit (fp4); scale 2^0 for amax 6.
    t = [6, 0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5, 0.3, 0.76, 5.1, -0.75, -5, -0.1, 7, -100]
    v = np.zeros((1, 32), np.float32)
    v[0, : len(t)] = t
    q, s = mx.quantize(mx.array(v), mode="mxfp4")
    assert int(np.array(s)[0, 0]) == 127 + 5  # amax 100 -> 2^5: 100 / 32 <= 6
    w = v.copy()
    w[0, 14:] = 0
    q, s = mx.quantize(mx.array(w), mode="mxfp4")
    codes = unpack(np.array(q), 4)[0, :14]
    np.testing.assert_array_equal(np_fp4(codes), [6, 0, 0.5, 1, 1.5, 2, 3, 4, 0.5, 1, 6, -0.5, -4, 0])
    assert int(np.array(s)[0, 0]) == 127  # amax 6 -> 2^0


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.bfloat16])
def test_round_trip_and_matmul(mode, dtype):
    w = mx.array(RNG.standard_normal((2, 32, 64)).astype(np.float32)).astype(dtype)
    q, s = mx.quantize(w, mode=mode)
    gs = 16 if mode == "nvfp4" else 32
    assert s.shape == (2, 32, 64 // gs)
    deq = mx.dequantize(q, s, mode=mode)
    assert deq.dtype == mx.bfloat16 and deq.shape == w.shape
    rel = np.abs(f32(deq) - f32(w)).max() / np.abs(f32(w)).max()
    assert rel < (0.04 if mode == "mxfp8" else 0.2)
    x = mx.array(RNG.standard_normal((3, 64)).astype(np.float32)).astype(dtype)
    W = np_dequantize(np.array(q[0]), np.array(s[0]), mode)
    for transpose, xx, ref in [(True, x, f32(x) @ W.T), (False, x[:, :32], f32(x)[:, :32] @ W)]:
        y = mx.quantized_matmul(xx, q[0], s[0], transpose=transpose, mode=mode)
        assert y.dtype == dtype
        tol = 1e-4 if dtype == mx.float32 else 3e-2
        np.testing.assert_allclose(f32(y), ref, rtol=tol, atol=tol * np.abs(ref).max())
    # Many rows (the blocked path) and one row (the decode path).
    xs = mx.array(RNG.standard_normal((33, 64)).astype(np.float32))
    y = mx.quantized_matmul(xs, q[0], s[0], mode=mode)
    np.testing.assert_allclose(np.array(y), np.array(xs) @ W.T, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("mode,bits", [("affine", 4), ("affine", 3), ("affine", 8), ("mxfp4", None),
                                       ("mxfp8", None), ("nvfp4", None)])
@pytest.mark.parametrize("M,N,K", [(1, 1, 64), (1, 13, 64), (3, 7, 96), (17, 33, 32)])
def test_quantized_matmul_odd_sizes(mode, bits, M, N, K):
    """Row and output counts that fill no tile or vector of the kernels; not transposed, an odd
    contraction (quantization runs along the outputs then)."""
    kw = dict(mode=mode, bits=bits, group_size=32 if mode == "affine" else None)
    cases = [(True, (N, K))] + ([(False, (N + 4, 64))] if mode == "affine" else [])
    for transpose, ws in cases:
        w = mx.array(RNG.standard_normal(ws).astype(np.float32))
        q = mx.quantize(w, **kw)
        W = f32(mx.dequantize(*q, **kw, dtype=mx.float32)).astype(np.float64)
        x = RNG.standard_normal((M, ws[1] if transpose else ws[0])).astype(np.float32)
        y = mx.quantized_matmul(mx.array(x), *q, transpose=transpose, **kw)
        np.testing.assert_allclose(np.array(y), x @ (W.T if transpose else W), rtol=1e-4,
                                   atol=1e-4)


def test_quantized_matmul_grad_microscaled():
    w = mx.array(RNG.standard_normal((16, 32)).astype(np.float32))
    q, s = mx.quantize(w, mode="mxfp8")
    W = np_dequantize(np.array(q), np.array(s), "mxfp8")
    g = mx.grad(lambda x: mx.quantized_matmul(x, q, s, mode="mxfp8").sum())(mx.ones((2, 32)))
    np.testing.assert_allclose(np.array(g), np.ones((2, 16)) @ W, rtol=1e-5, atol=1e-5)


def test_mode_errors():
    w = mx.ones((4, 64))
    with pytest.raises(ValueError, match="group size 32"):
        mx.quantize(w, 16, mode="mxfp4")
    with pytest.raises(ValueError, match="bits to be 8"):
        mx.quantize(w, 32, 4, mode="mxfp8")
    with pytest.raises(ValueError, match="group size 16"):
        mx.quantize(w, 32, mode="nvfp4")
    with pytest.raises(ValueError, match="mode"):
        mx.quantize(w, mode="int4")
    with pytest.raises(ValueError, match="global scale"):
        mx.quantize(w, mode="mxfp4", global_scale=mx.array(1.0))
    q, s = mx.quantize(w, mode="mxfp4")
    with pytest.raises(ValueError, match="Biases must be null"):
        mx.quantized_matmul(mx.ones((1, 64)), q, s, mx.zeros_like(s), mode="mxfp4")
    with pytest.raises(ValueError, match="uint8"):
        mx.dequantize(q, s.astype(mx.float32), mode="mxfp4")
    with pytest.raises(ValueError, match="biases"):
        mx.dequantize(q, s, mode="affine", group_size=32)


# ---- gather_qmm ------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["affine", "mxfp4", "nvfp4"])
def test_gather_qmm_matches_mlx(mode):
    qs = mx.quantize(mx.array(REF["gW"]), mode=mode)
    y = mx.gather_qmm(mx.array(REF["gX"]), *qs, rhs_indices=mx.array(REF["gidx"]), mode=mode)
    assert y.shape == (4, 1, 16)
    np.testing.assert_allclose(np.array(y), REF[f"gqmm_{mode}"], rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("transpose", [True, False])
@pytest.mark.parametrize("dtype", [mx.float32, mx.bfloat16])
def test_gather_qmm_against_dequantized(transpose, dtype):
    E, N, K = 3, 64, 64
    W = mx.array(RNG.standard_normal((E, N, K)).astype(np.float32)).astype(dtype)
    q, s, b = mx.quantize(W, 32, 4)
    Wd = np.array(mx.dequantize(q, s, b, 32, 4, dtype=mx.float32)).astype(np.float64)
    x = mx.array(RNG.standard_normal((2, 5, 3, K)).astype(np.float32)).astype(dtype)
    li = np.array([[0], [9], [4]])
    ri = RNG.integers(0, E, (3, 4))
    y = mx.gather_qmm(x, q, s, b, mx.array(li), mx.array(ri), transpose=transpose, group_size=32)
    assert y.shape == (3, 4, 3, N) and y.dtype == dtype
    X = f32(x).reshape(-1, 3, K)
    li_b, ri_b = np.broadcast_arrays(li, ri)
    ref = np.stack([X[i] @ (Wd[j].T if transpose else Wd[j]) for i, j in
                    zip(li_b.ravel(), ri_b.ravel())]).reshape(3, 4, 3, N)
    tol = 1e-4 if dtype == mx.float32 else 3e-2
    np.testing.assert_allclose(f32(y), ref, rtol=tol, atol=tol * np.abs(ref).max())
    # The gradient for x is the cotangent times the (transposed) quantized matrices.
    g = mx.grad(lambda t: mx.gather_qmm(t, q, s, b, mx.array(li), mx.array(ri),
                                        transpose=transpose, group_size=32).sum())(x.astype(mx.float32))
    ref_g = np.zeros((10, 3, K))
    for i, j in zip(li_b.ravel(), ri_b.ravel()):
        ref_g[i] += np.ones((3, N)) @ (Wd[j] if transpose else Wd[j].T)
    np.testing.assert_allclose(np.array(g).reshape(10, 3, K), ref_g, rtol=1e-4, atol=1e-3)


def test_gather_qmm_errors():
    q, s, b = mx.quantize(mx.ones((3, 16, 64)))
    with pytest.raises(ValueError, match="last dimension"):
        mx.gather_qmm(mx.ones((2, 1, 32)), q, s, b, rhs_indices=mx.array([0, 1]))
    with pytest.raises(ValueError, match="integral"):
        mx.gather_qmm(mx.ones((2, 1, 64)), q, s, b, rhs_indices=mx.array([0.0, 1.0]))
    with pytest.raises(IndexError):
        mx.eval(mx.gather_qmm(mx.ones((2, 1, 64)), q, s, b, rhs_indices=mx.array([0, 3])))


# ---- qqmm, gather_qqmm -----------------------------------------------------------------------


def fake(a, mode, gs=None):
    q, s = mx.quantize(a, mode=mode, global_scale=gs)
    return f32(mx.dequantize(q, s, mode=mode, global_scale=gs, dtype=mx.float32)).astype(np.float64)


@pytest.mark.parametrize("mode", ["nvfp4", "mxfp8", "mxfp4"])
def test_qqmm(mode):
    x = mx.array(RNG.standard_normal((2, 3, 64)).astype(np.float32))
    w = mx.array(RNG.standard_normal((8, 64)).astype(np.float32))
    ref = fake(x.reshape(6, 64), mode).reshape(2, 3, 64) @ fake(w, mode).T
    y = mx.qqmm(x, w, mode=mode)
    assert y.shape == (2, 3, 8) and y.dtype == mx.float32
    np.testing.assert_allclose(np.array(y), ref, rtol=1e-5, atol=1e-5)
    q, s = mx.quantize(w, mode=mode)
    np.testing.assert_allclose(np.array(mx.qqmm(x, q, s, mode=mode)), ref, rtol=1e-5, atol=1e-5)
    assert mx.qqmm(x.astype(mx.bfloat16), w, mode=mode).dtype == mx.bfloat16
    # Straight-through gradients.
    gx, gw = mx.grad(lambda a, b: mx.qqmm(a, b, mode=mode).sum(), argnums=(0, 1))(x, w)
    np.testing.assert_allclose(np.array(gx), np.ones((2, 3, 8)) @ fake(w, mode), rtol=1e-5, atol=1e-5)
    xq = fake(x.reshape(6, 64), mode)
    np.testing.assert_allclose(np.array(gw), np.ones((8, 6)) @ xq, rtol=1e-5, atol=1e-4)


def test_qqmm_global_scales_and_errors():
    x = mx.array(RNG.standard_normal((3, 32)).astype(np.float32))
    w = mx.array(RNG.standard_normal((4, 32)).astype(np.float32))
    gx, gw = mx.array(3.0), mx.array(5.0)
    y = mx.qqmm(x, w, global_scale_x=gx, global_scale_w=gw)
    np.testing.assert_allclose(np.array(y), fake(x, "nvfp4", gx) @ fake(w, "nvfp4", gw).T,
                               rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="affine"):
        mx.qqmm(x, w, mode="affine")
    with pytest.raises(ValueError, match="dimensions"):
        mx.qqmm(x, mx.ones((2, 4, 32)))
    with pytest.raises(ValueError, match="divisible"):
        mx.qqmm(mx.ones((3, 24)), mx.ones((4, 24)))
    with pytest.raises(ValueError, match="global scale"):
        mx.qqmm(x, w, mode="mxfp8", global_scale_x=gx)


def test_gather_qqmm():
    W = mx.array(RNG.standard_normal((3, 8, 32)).astype(np.float32))
    X = mx.array(RNG.standard_normal((4, 1, 32)).astype(np.float32))
    idx = np.array([2, 0, 1, 2])
    y = mx.gather_qqmm(X, W, rhs_indices=mx.array(idx))
    Wq = fake(W.reshape(24, 32), "nvfp4").reshape(3, 8, 32)
    Xq = fake(X.reshape(4, 32), "nvfp4").reshape(4, 1, 32)
    ref = np.stack([Xq[i] @ Wq[j].T for i, j in enumerate(idx)])
    np.testing.assert_allclose(np.array(y), ref, rtol=1e-5, atol=1e-5)
    q, s = mx.quantize(W, mode="nvfp4")
    np.testing.assert_allclose(np.array(mx.gather_qqmm(X, q, s, rhs_indices=mx.array(idx))), ref,
                               rtol=1e-5, atol=1e-5)
    # Straight-through gradients: each row's cotangent times its quantized matrix, and per
    # matrix the sum over the rows that chose it of the cotangent times the quantized row.
    gx, gw = mx.grad(lambda a, b: mx.gather_qqmm(a, b, rhs_indices=mx.array(idx)).sum(),
                     argnums=(0, 1))(X, W)
    np.testing.assert_allclose(np.array(gx), np.stack([np.ones((1, 8)) @ Wq[j] for j in idx]),
                               rtol=1e-5, atol=1e-5)
    ref_gw = np.zeros((3, 8, 32))
    for i, j in enumerate(idx):
        ref_gw[j] += np.ones((8, 1)) @ Xq[i]
    np.testing.assert_allclose(np.array(gw), ref_gw, rtol=1e-5, atol=1e-5)


# ---- nn --------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["nvfp4", "mxfp8"])
def test_qqlinear(mode):
    layer = nn.QQLinear(64, 16, mode=mode)
    assert "scales" not in layer and layer.weight.dtype == mx.float32
    x = mx.array(RNG.standard_normal((5, 64)).astype(np.float32))
    w = layer.weight
    y_train = layer(x)
    np.testing.assert_allclose(np.array(y_train), np.array(mx.qqmm(x, w, mode=mode)))
    grads = nn.value_and_grad(layer, lambda m, v: m(v).sum())(layer, x)[1]
    assert grads["weight"].shape == (16, 64)
    layer.eval()
    assert layer.weight.dtype == mx.uint32 and layer.scales.dtype == mx.uint8
    np.testing.assert_allclose(np.array(layer(x)), np.array(y_train), rtol=1e-5, atol=1e-5)
    layer.train()
    assert "scales" not in layer and layer.weight.shape == (16, 64)
    assert "QQLinear(input_dims=64, output_dims=16" in repr(layer)
    lin = nn.Linear(64, 16, bias=False)
    qq = lin.to_quantized(mode=mode, quantize_input=True)
    assert isinstance(qq, nn.QQLinear)
    with pytest.raises(NotImplementedError):
        nn.QQLinear.from_linear(nn.Linear(64, 16))
    model = nn.Sequential(nn.Linear(64, 32, bias=False), nn.Linear(32, 16, bias=False))
    nn.quantize(model, mode=mode, quantize_input=True)
    assert all(isinstance(m, nn.QQLinear) for m in model.layers)
    with pytest.raises(ValueError):
        nn.quantize(model, quantize_input=True)


@pytest.mark.parametrize("mode", ["affine", "mxfp4", "nvfp4"])
def test_quantized_linear_modes(mode):
    lin = nn.Linear(64, 16)
    ql = nn.QuantizedLinear.from_linear(lin, mode=mode)
    assert ("biases" in ql) == (mode == "affine")
    x = mx.array(RNG.standard_normal((3, 64)).astype(np.float32))
    Wd = f32(mx.dequantize(ql.weight, ql.scales, ql.get("biases"), ql.group_size, ql.bits, mode))
    np.testing.assert_allclose(np.array(ql(x)), np.array(x) @ Wd.T + np.array(lin.bias),
                               rtol=1e-4, atol=1e-4)
    assert ql.trainable_parameters().keys() == {"bias"}


@pytest.mark.parametrize("mode", ["affine", "mxfp4"])
def test_quantized_sharded_layers(mode):
    group = mx.distributed.init()
    a = nn.QuantizedAllToShardedLinear(64, 32, mode=mode, group_size=32)
    b = nn.QuantizedShardedToAllLinear(64, 32, bias=False, mode=mode, group_size=32)
    assert a.trainable_parameters() == {} and b.trainable_parameters() == {}
    assert "bias" in a and "bias" not in b
    x = mx.array(RNG.standard_normal((2, 64)).astype(np.float32))
    for layer in (a, b):
        Wd = mx.dequantize(layer.weight, layer.scales, layer.get("biases"), 32, 4, mode)
        ref = x @ Wd.T.astype(mx.float32) + (layer["bias"] if "bias" in layer else 0)
        np.testing.assert_allclose(np.array(layer(x)), np.array(ref), rtol=1e-4, atol=1e-4)
    ql = nn.QuantizedLinear.from_linear(nn.Linear(64, 32), group_size=32, mode=mode)
    for cls, sharding in [(nn.QuantizedAllToShardedLinear, "all-to-sharded"),
                          (nn.QuantizedShardedToAllLinear, "sharded-to-all")]:
        sl = cls.from_quantized_linear(ql, group=group)
        np.testing.assert_allclose(np.array(sl(x)), np.array(ql(x)), rtol=1e-5, atol=1e-5)
        assert isinstance(nn.layers.distributed.shard_linear(ql, sharding), cls)
    assert "mode=" + mode in repr(a)


@pytest.mark.parametrize("mode", ["mxfp4", "mxfp8", "nvfp4"])
def test_quantized_embedding_modes(mode):
    emb = nn.Embedding(10, 64)
    qe = nn.QuantizedEmbedding.from_embedding(emb, mode=mode)
    assert "biases" not in qe and qe.scales.dtype == mx.uint8
    table = f32(mx.dequantize(qe.weight, qe.scales, None, mode=mode))
    idx = mx.array([[3, 0], [9, 3]])
    np.testing.assert_array_equal(f32(qe(idx)), table[np.array(idx)])
    x = mx.array(RNG.standard_normal((2, 64)).astype(np.float32))
    np.testing.assert_allclose(np.array(qe.as_linear(x)), np.array(x) @ table.T, rtol=1e-4,
                               atol=1e-4)
