"""mx.fast against NumPy references (computed in float64)."""
import numpy as np
import pytest

import mlx.core as mx


def close(a, ref, tol=1e-4):
    np.testing.assert_allclose(np.array(a, dtype=np.float64), ref, rtol=tol, atol=tol)


def rms_norm_ref(x, w, eps):
    y = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    return y if w is None else y * w


def layer_norm_ref(x, w, b, eps):
    y = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps)
    if w is not None:
        y = y * w
    return y if b is None else y + b


@pytest.mark.parametrize("shape", [(7,), (3, 16), (2, 3, 33)])
def test_norms(rng, shape):
    x = rng.standard_normal(shape)
    w = rng.standard_normal(shape[-1])
    b = rng.standard_normal(shape[-1])
    xm = mx.array(x, mx.float32)
    wm, bm = mx.array(w, mx.float32), mx.array(b, mx.float32)
    close(mx.fast.rms_norm(xm, wm, 1e-5), rms_norm_ref(x, w, 1e-5))
    close(mx.fast.rms_norm(xm, None, 1e-3), rms_norm_ref(x, None, 1e-3))
    close(mx.fast.layer_norm(xm, wm, bm, 1e-5), layer_norm_ref(x, w, b, 1e-5))
    close(mx.fast.layer_norm(xm, None, None, 1e-5), layer_norm_ref(x, None, None, 1e-5))
    close(mx.fast.layer_norm(xm, wm, None, eps=1e-5), layer_norm_ref(x, w, None, 1e-5))
    y = mx.fast.rms_norm(mx.array(x, mx.float16), mx.array(w, mx.float16), 1e-5)
    assert y.dtype == mx.float16
    close(y, rms_norm_ref(x, w, 1e-5), 2e-2)
    # Non-contiguous input.
    close(mx.fast.rms_norm(mx.array(x.T.copy(), mx.float32).T, None, 1e-5), rms_norm_ref(x, None, 1e-5))


def test_norm_errors():
    with pytest.raises(ValueError):
        mx.fast.rms_norm(mx.zeros((2, 3)), mx.zeros((4,)), 1e-5)
    with pytest.raises(ValueError):
        mx.fast.layer_norm(mx.zeros((2, 3)), None, mx.zeros((2,)), 1e-5)


def rope_ref(x, dims, traditional, base, scale, offset, freqs=None):
    x = x.astype(np.float64)
    out = x.copy()
    T = x.shape[-2]
    half = dims // 2
    inv = 1.0 / freqs if freqs is not None else base ** (-2.0 * np.arange(half) / dims)
    offset = np.asarray(offset, dtype=np.float64).reshape(-1)
    pos = offset[:, None] + np.arange(T)[None, :]  # (B or 1, T)
    pos = pos.reshape(pos.shape[0], *([1] * (x.ndim - 3)), T, 1)
    theta = pos * scale * inv
    c, s = np.cos(theta), np.sin(theta)
    if traditional:
        x1, x2 = x[..., 0:dims:2], x[..., 1:dims:2]
        out[..., 0:dims:2] = x1 * c - x2 * s
        out[..., 1:dims:2] = x1 * s + x2 * c
    else:
        x1, x2 = x[..., :half], x[..., half:dims]
        out[..., :half] = x1 * c - x2 * s
        out[..., half:dims] = x1 * s + x2 * c
    return out


@pytest.mark.parametrize("traditional", [False, True])
def test_rope(rng, traditional):
    x = rng.standard_normal((2, 3, 5, 16))
    xm = mx.array(x, mx.float32)
    out = mx.fast.rope(xm, 16, traditional=traditional, base=10000.0, scale=1.0, offset=0)
    close(out, rope_ref(x, 16, traditional, 10000.0, 1.0, 0))
    out = mx.fast.rope(xm, 8, traditional=traditional, base=500.0, scale=0.5, offset=3)
    close(out, rope_ref(x, 8, traditional, 500.0, 0.5, 3))
    # Per-batch offsets as an array.
    off = mx.array([2, 7])
    out = mx.fast.rope(xm, 16, traditional=traditional, base=10000.0, scale=1.0, offset=off)
    close(out, rope_ref(x, 16, traditional, 10000.0, 1.0, [2, 7]))
    freqs = rng.uniform(1, 100, 8)
    out = mx.fast.rope(xm, 16, traditional=traditional, base=None, scale=1.0, offset=1,
                       freqs=mx.array(freqs, mx.float32))
    close(out, rope_ref(x, 16, traditional, None, 1.0, 1, freqs), 1e-3)


def test_rope_errors():
    x = mx.zeros((1, 4, 8))
    with pytest.raises(ValueError):
        mx.fast.rope(x, 8, traditional=False, base=10000.0, scale=1.0, offset=0, freqs=mx.zeros((4,)))
    with pytest.raises(TypeError):
        mx.fast.rope(x, 8, False, 10000.0, 1.0, 0)  # keyword-only parameters


def sdpa_ref(q, k, v, scale, mask=None, sinks=None):
    B, Nq, Tq, D = q.shape
    Nkv, Tkv = k.shape[1], k.shape[2]
    rep = Nq // Nkv
    k = np.repeat(k, rep, axis=1)
    v = np.repeat(v, rep, axis=1)
    s = scale * q @ np.swapaxes(k, -1, -2)
    if isinstance(mask, str):
        keep = np.arange(Tkv)[None, :] <= np.arange(Tq)[:, None] + Tkv - Tq
        s = np.where(keep, s, -np.inf)
    elif mask is not None and mask.dtype == np.bool_:
        s = np.where(mask, s, -np.inf)
    elif mask is not None:
        s = s + mask
    m = s.max(-1, keepdims=True)
    if sinks is not None:
        m = np.maximum(m, sinks[None, :, None, None])
    e = np.exp(s - m)
    denom = e.sum(-1, keepdims=True)
    if sinks is not None:
        denom = denom + np.exp(sinks[None, :, None, None] - m)
    return (e / denom) @ v


@pytest.mark.parametrize("heads", [(4, 4), (4, 2), (6, 1)])
def test_scaled_dot_product_attention(rng, heads):
    nq, nkv = heads
    q = rng.standard_normal((2, nq, 5, 8))
    k = rng.standard_normal((2, nkv, 7, 8))
    v = rng.standard_normal((2, nkv, 7, 6))
    qm, km, vm = (mx.array(a, mx.float32) for a in (q, k, v))
    scale = 1 / np.sqrt(8)
    close(mx.fast.scaled_dot_product_attention(qm, km, vm, scale=scale), sdpa_ref(q, k, v, scale))
    close(
        mx.fast.scaled_dot_product_attention(qm, km, vm, scale=scale, mask="causal"),
        sdpa_ref(q, k, v, scale, "causal"),
    )
    keep = rng.random((5, 7)) > 0.3
    keep[:, 0] = True
    close(
        mx.fast.scaled_dot_product_attention(qm, km, vm, scale=scale, mask=mx.array(keep)),
        sdpa_ref(q, k, v, scale, keep),
    )
    additive = rng.standard_normal((2, 1, 5, 7))
    close(
        mx.fast.scaled_dot_product_attention(qm, km, vm, scale=scale,
                                             mask=mx.array(additive, mx.float32)),
        sdpa_ref(q, k, v, scale, additive),
    )
    sinks = rng.standard_normal(nq)
    close(
        mx.fast.scaled_dot_product_attention(qm, km, vm, scale=scale, mask="causal",
                                             sinks=mx.array(sinks, mx.float32)),
        sdpa_ref(q, k, v, scale, "causal", sinks),
    )


def test_sdpa_errors():
    q = mx.zeros((1, 2, 3, 4))
    with pytest.raises(ValueError):
        mx.fast.scaled_dot_product_attention(q, q, q, scale=1.0, mask="banded")
    with pytest.raises(TypeError):
        mx.fast.scaled_dot_product_attention(q, q, q, scale=1.0, mask=3)
    with pytest.raises(ValueError):
        mx.fast.scaled_dot_product_attention(q, mx.zeros((1, 3, 3, 4)), mx.zeros((1, 3, 3, 4)),
                                             scale=1.0)


def test_attention_rows_do_not_depend_on_their_neighbours():
    # A prompt evaluated in chunks (a KV cache) must give the same bits as evaluated whole:
    # a query row's result may not depend on which other rows share its kernel tile.
    rng = np.random.default_rng(0)
    for tq, tk, (hq, hk) in [(4, 4, (2, 1)), (17, 64, (8, 2)), (70, 64, (1, 1)), (70, 73, (8, 2))]:
        q = mx.array(rng.standard_normal((1, hq, tq, 16)).astype(np.float32))
        k = mx.array(rng.standard_normal((1, hk, tk, 16)).astype(np.float32))
        v = mx.array(rng.standard_normal((1, hk, tk, 16)).astype(np.float32))
        whole = mx.fast.scaled_dot_product_attention(q, k, v, scale=0.25, mask="causal", stream=mx.cpu)
        for split in (1, tq // 2, tq - 1):
            part = mx.fast.scaled_dot_product_attention(
                q[:, :, split:], k, v, scale=0.25, mask="causal", stream=mx.cpu)
            np.testing.assert_array_equal(np.array(whole[:, :, split:]), np.array(part))
