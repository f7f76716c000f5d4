"""mx.fast additions: cross_entropy, gated_delta_update and the force_fused flag of
scaled_dot_product_attention; mx.random.multivariate_normal."""
import numpy as np
import pytest

import mlx.core as mx


def _finite_difference(f, x, eps=1e-4):
    x = np.array(x, dtype=np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        g[i] = (f(x + d) - f(x - d)) / (2 * eps)
    return g


def _np_cross_entropy(logits, targets):
    m = logits.max(-1, keepdims=True)
    lse = np.log(np.exp(logits - m).sum(-1)) + m[..., 0]
    return lse - np.take_along_axis(logits, targets[..., None], -1)[..., 0]


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.bfloat16])
@pytest.mark.parametrize("shape", [(5,), (3, 7), (2, 3, 4)])
def test_cross_entropy_matches_numpy(dtype, shape, rng):
    logits = rng.standard_normal(shape) * 3
    targets = rng.integers(0, shape[-1], shape[:-1])
    x = mx.array(logits).astype(dtype)
    out = mx.fast.cross_entropy(x, mx.array(targets))
    assert out.dtype == mx.float32 and out.shape == shape[:-1]
    ref = _np_cross_entropy(np.array(x.astype(mx.float32)).astype(np.float64), targets)
    np.testing.assert_allclose(np.array(out), ref, rtol=1e-5, atol=1e-5)


def test_cross_entropy_gradient(rng):
    logits = rng.standard_normal((3, 5))
    targets = rng.integers(0, 5, (3,))
    g = mx.grad(lambda x: mx.fast.cross_entropy(x, mx.array(targets)).sum())(
        mx.array(logits, dtype=mx.float32)
    )
    softmax = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    onehot = np.eye(5)[targets]
    np.testing.assert_allclose(np.array(g), softmax - onehot, rtol=1e-5, atol=1e-6)
    fd = _finite_difference(lambda v: _np_cross_entropy(v, targets).sum(), logits)
    np.testing.assert_allclose(np.array(g), fd, rtol=1e-4, atol=1e-5)


def test_cross_entropy_errors():
    with pytest.raises(ValueError, match="cross_entropy"):
        mx.fast.cross_entropy(mx.zeros((2, 3)), mx.zeros((3,), dtype=mx.int32))
    with pytest.raises(ValueError, match="integer"):
        mx.fast.cross_entropy(mx.zeros((2, 3)), mx.zeros((2,)))
    with pytest.raises(ValueError, match="floating"):
        mx.fast.cross_entropy(mx.zeros((2, 3), dtype=mx.int32), mx.zeros((2,), dtype=mx.int32))


def _np_gated_delta(q, k, v, g, beta, state, mask):
    B, T, Hk, Dk = q.shape
    Hv, Dv = v.shape[2], v.shape[3]
    rep = Hv // Hk
    S = state.copy()
    y = np.zeros((B, T, Hv, Dv))
    for b in range(B):
        for t in range(T):
            if mask is not None and not mask[b, t]:
                continue
            for h in range(Hv):
                kh = h // rep
                decay = g[b, t, h] if g.ndim == 3 else g[b, t, h][None, :]
                Snew = S[b, h] * decay
                pred = Snew @ k[b, t, kh]
                delta = (v[b, t, h] - pred) * beta[b, t, h]
                Snew = Snew + np.outer(delta, k[b, t, kh])
                y[b, t, h] = Snew @ q[b, t, kh]
                S[b, h] = Snew
    return y, S


@pytest.mark.parametrize("per_key", [False, True])
@pytest.mark.parametrize("heads", [(1, 1), (2, 4)])
@pytest.mark.parametrize("masked", [False, True])
def test_gated_delta_update_matches_numpy(per_key, heads, masked, rng):
    B, T, Dk, Dv = 2, 5, 4, 3
    Hk, Hv = heads
    q = rng.standard_normal((B, T, Hk, Dk)) * 0.5
    k = rng.standard_normal((B, T, Hk, Dk)) * 0.5
    v = rng.standard_normal((B, T, Hv, Dv))
    g = rng.uniform(0.5, 1.0, (B, T, Hv, Dk) if per_key else (B, T, Hv))
    beta = rng.uniform(0, 1, (B, T, Hv))
    state = rng.standard_normal((B, Hv, Dv, Dk)) * 0.1
    mask = rng.random((B, T)) > 0.3 if masked else None
    f32 = lambda a: mx.array(a, dtype=mx.float32)
    y, s = mx.fast.gated_delta_update(
        f32(q), f32(k), f32(v), f32(g), f32(beta), f32(state),
        None if mask is None else mx.array(mask),
    )
    ry, rs = _np_gated_delta(q, k, v, g, beta, state, mask)
    assert y.shape == (B, T, Hv, Dv) and s.shape == (B, Hv, Dv, Dk)
    assert s.dtype == mx.float32
    np.testing.assert_allclose(np.array(y), ry, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.array(s), rs, rtol=1e-4, atol=1e-5)


def test_gated_delta_update_defaults_dtype_and_gradient(rng):
    B, T, H, D = 1, 3, 1, 2
    q = rng.standard_normal((B, T, H, D))
    k = rng.standard_normal((B, T, H, D)) * 0.5
    v = rng.standard_normal((B, T, H, D))
    g = rng.uniform(0.5, 1, (B, T, H))
    beta = rng.uniform(0, 1, (B, T, H))
    y, s = mx.fast.gated_delta_update(*(mx.array(a, dtype=mx.bfloat16) for a in (q, k, v, g, beta)))
    assert y.dtype == mx.bfloat16 and s.dtype == mx.float32
    ry, _ = _np_gated_delta(q, k, v, g, beta, np.zeros((B, H, D, D)), None)
    np.testing.assert_allclose(np.array(y.astype(mx.float32)), ry, rtol=5e-2, atol=5e-2)

    def loss(qq):
        out, _ = mx.fast.gated_delta_update(qq, *(mx.array(a, dtype=mx.float32) for a in (k, v, g, beta)))
        return out.sum()

    grad = mx.grad(loss)(mx.array(q, dtype=mx.float32))
    fd = _finite_difference(
        lambda qq: _np_gated_delta(qq, k, v, g, beta, np.zeros((B, H, D, D)), None)[0].sum(), q
    )
    np.testing.assert_allclose(np.array(grad), fd, rtol=1e-3, atol=1e-4)


def test_gated_delta_update_errors():
    q = mx.zeros((1, 2, 2, 4))
    v = mx.zeros((1, 2, 3, 4))
    g = mx.zeros((1, 2, 3))
    with pytest.raises(ValueError, match="multiple"):
        mx.fast.gated_delta_update(q, q, v, g, g)
    with pytest.raises(ValueError, match="gamma"):
        mx.fast.gated_delta_update(q, q, mx.zeros((1, 2, 2, 4)), mx.zeros((1, 2)), mx.zeros((1, 2, 2)))
    with pytest.raises(ValueError, match="initial_state"):
        mx.fast.gated_delta_update(q, q, mx.zeros((1, 2, 2, 4)), mx.zeros((1, 2, 2)),
                                   mx.zeros((1, 2, 2)), mx.zeros((1, 2, 4, 3)))


def test_sdpa_force_fused_gives_the_same_result(rng):
    q = mx.array(rng.standard_normal((1, 2, 3, 4)).astype(np.float32))
    a = mx.fast.scaled_dot_product_attention(q, q, q, scale=0.5, mask="causal")
    b = mx.fast.scaled_dot_product_attention(q, q, q, scale=0.5, mask="causal", force_fused=True)
    np.testing.assert_array_equal(np.array(a), np.array(b))


def test_multivariate_normal_moments():
    mean = mx.array([1.0, -2.0, 0.5])
    cov_np = np.array([[2.0, 0.6, 0.0], [0.6, 1.0, 0.3], [0.0, 0.3, 0.5]])
    x = mx.random.multivariate_normal(mean, mx.array(cov_np), shape=(20000,), key=mx.random.key(3))
    assert x.shape == (20000, 3) and x.dtype == mx.float32
    xn = np.array(x).astype(np.float64)
    np.testing.assert_allclose(xn.mean(0), np.array(mean), atol=0.05)
    np.testing.assert_allclose(np.cov(xn.T), cov_np, atol=0.06)
    # Singular (rank-deficient) covariances work: the samples stay on the line.
    line = mx.random.multivariate_normal(mx.zeros((2,)), mx.array([[1.0, 1.0], [1.0, 1.0]]),
                                         shape=(50,), key=mx.random.key(0))
    ln = np.array(line)
    # A float32 factorization of the singular covariance leaves an eigenvalue of about 1e-7,
    # whose square root moves samples off the line by about 3e-4.
    np.testing.assert_allclose(ln[:, 0], ln[:, 1], atol=2e-3)
    # The same key gives the same samples; batch shapes broadcast.
    a = mx.random.multivariate_normal(mean, mx.array(cov_np), key=mx.random.key(1))
    b = mx.random.multivariate_normal(mean, mx.array(cov_np), key=mx.random.key(1))
    assert a.shape == (3,) and a.tolist() == b.tolist()
    batched = mx.random.multivariate_normal(mx.zeros((4, 2)), mx.eye(2), shape=(4,))
    assert batched.shape == (4, 2)


def test_multivariate_normal_errors():
    with pytest.raises(ValueError, match="float32"):
        mx.random.multivariate_normal(mx.zeros((2,)), mx.eye(2), dtype=mx.float16)
    with pytest.raises(ValueError, match="cov"):
        mx.random.multivariate_normal(mx.zeros((2,)), mx.eye(3))
    with pytest.raises(ValueError, match="multivariate_normal"):
        mx.random.multivariate_normal(mx.zeros((4, 2)), mx.eye(2), shape=(3,))
    with pytest.raises(ValueError, match="batch shapes"):
        mx.random.multivariate_normal(mx.zeros((4, 2)), mx.eye(2), shape=())


def test_sdpa_fully_masked_rows_are_zeros_and_do_not_spread(rng):
    # Left padding: the padded query rows see no key. They are zeros (not NaN), so feeding the
    # output back as keys/values of the next layer leaves the other rows finite and exact.
    q = mx.array(rng.standard_normal((1, 1, 4, 8)).astype(np.float32))
    keep = mx.array(np.tril(np.ones((4, 4), bool)) & (np.arange(4) >= 2)[None, :])
    out = mx.fast.scaled_dot_product_attention(q, q, q, scale=0.3, mask=keep)
    o = np.array(out)
    assert np.all(o[0, 0, :2] == 0)
    again = mx.fast.scaled_dot_product_attention(out, out, out, scale=0.3, mask=keep)
    assert np.all(np.isfinite(np.array(again)))
    # Rows 2 and 3 match attention over the visible keys alone.
    sub = mx.fast.scaled_dot_product_attention(q[:, :, 2:], q[:, :, 2:], q[:, :, 2:], scale=0.3,
                                               mask="causal")
    np.testing.assert_allclose(o[0, 0, 2:], np.array(sub)[0, 0], rtol=1e-5, atol=1e-6)
    # The gradient of a fully masked row is zero, and finite everywhere.
    g = mx.grad(lambda x: mx.fast.scaled_dot_product_attention(x, x, x, scale=0.3, mask=keep).sum())(q)
    gn = np.array(g)
    assert np.all(np.isfinite(gn))
    # The composed rule (used by jvp) agrees with the kernel.
    _, tangent = mx.jvp(lambda x: mx.fast.scaled_dot_product_attention(x, x, x, scale=0.3, mask=keep),
                        [q], [mx.ones_like(q)])
    assert np.all(np.isfinite(np.array(tangent[0])))
    assert np.all(np.array(tangent[0])[0, 0, :2] == 0)


def test_cross_entropy_backward_dtypes_and_other_transforms(rng):
    logits = rng.standard_normal((4, 6)).astype(np.float32)
    targets = mx.array(rng.integers(0, 6, (4,)), dtype=mx.uint32)
    g = mx.grad(lambda x: (mx.fast.cross_entropy(x, targets) * mx.arange(4)).sum())(
        mx.array(logits).astype(mx.bfloat16))
    assert g.dtype == mx.bfloat16
    softmax = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    ref = (softmax - np.eye(6)[np.array(targets)]) * np.arange(4)[:, None]
    np.testing.assert_allclose(np.array(g.astype(mx.float32)), ref, atol=3e-2)
    # jvp and vmap go through the forward graph.
    t = rng.standard_normal((4, 6)).astype(np.float32)
    _, (tan,) = mx.jvp(lambda x: mx.fast.cross_entropy(x, targets), [mx.array(logits)], [mx.array(t)])
    np.testing.assert_allclose(np.array(tan), (softmax * t).sum(-1) - t[np.arange(4), np.array(targets)],
                               rtol=1e-5, atol=1e-5)
    batched = mx.vmap(lambda x: mx.fast.cross_entropy(x, targets))(mx.array(np.stack([logits] * 2)))
    np.testing.assert_allclose(np.array(batched[1]), np.array(mx.fast.cross_entropy(mx.array(logits), targets)),
                               rtol=1e-6)
