"""The fused mx.fast.cross_entropy (CrossEntropy / CrossEntropyVJP primitives): values against
a float64 NumPy log-softmax, gradients against the closed form, finite differences and the
composed formula, over dtypes, target dtypes, shapes, layouts and extreme values; under
compile and vmap; through nn.losses.cross_entropy; and its errors."""
import numpy as np
import pytest

import mlx.core as mx
import mlx.nn as nn

FLOATS = [mx.float32, mx.float16, mx.bfloat16, mx.float64]
# Tolerances against float64 references, by logits dtype (16-bit logits are compared after
# the same rounding, so only the float32 accumulation differs; the loss is float32 always).
TOL = {mx.float32: 2e-5, mx.float16: 2e-5, mx.bfloat16: 2e-5, mx.float64: 2e-7}
GRAD_TOL = {mx.float32: 1e-6, mx.float16: 2e-3, mx.bfloat16: 1e-2, mx.float64: 1e-12}


def ref_loss(x, t):
    """Cross entropy in float64 from a stable log-softmax."""
    x = np.asarray(x, np.float64)
    m = np.max(x, -1, keepdims=True)
    logp = x - m - np.log(np.sum(np.exp(x - m), -1, keepdims=True))
    return -np.take_along_axis(logp, t[..., None].astype(np.int64), -1)[..., 0]


def ref_grad(x, t, g=None):
    x = np.asarray(x, np.float64)
    p = np.exp(x - x.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    idx = t.astype(np.int64)[..., None]
    np.put_along_axis(p, idx, np.take_along_axis(p, idx, -1) - 1, -1)
    return p if g is None else p * np.asarray(g, np.float64)[..., None]


def composed(x, t):
    xf = x.astype(mx.float32)
    picked = mx.take_along_axis(xf, mx.expand_dims(t, -1), -1)
    return mx.logsumexp(xf, axis=-1) - mx.squeeze(picked, -1)


def as_np(a):
    return np.array(a.astype(mx.float64) if a.dtype != mx.float64 else a)


def grad_of(x, t, weights=None):
    w = mx.ones(t.shape) if weights is None else weights
    return mx.grad(lambda v: (mx.fast.cross_entropy(v, t) * w).sum())(x)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(1, 1), (1, 7), (5,), (6, 33), (2, 3, 17), (3, 5000)])
def test_values_and_gradients(dtype, shape, rng):
    xn = rng.standard_normal(shape) * 4
    tn = rng.integers(0, shape[-1], shape[:-1])
    x, t = mx.array(xn).astype(dtype), mx.array(tn)
    out = mx.fast.cross_entropy(x, t)
    assert out.dtype == mx.float32 and out.shape == shape[:-1]
    xr = as_np(x)  # the logits as the op sees them, after rounding to dtype
    np.testing.assert_allclose(as_np(out), ref_loss(xr, tn), rtol=TOL[dtype], atol=TOL[dtype])
    g = rng.standard_normal(shape[:-1])
    dx = grad_of(x, t, mx.array(g, dtype=mx.float32))
    assert dx.dtype == dtype and dx.shape == shape
    np.testing.assert_allclose(as_np(dx), ref_grad(xr, tn, g), atol=GRAD_TOL[dtype] * 4, rtol=0.02)


@pytest.mark.parametrize("tdtype", [mx.int8, mx.uint8, mx.int16, mx.uint16, mx.int32,
                                    mx.uint32, mx.int64, mx.uint64])
def test_target_dtypes(tdtype, rng):
    xn = rng.standard_normal((9, 100)).astype(np.float32)
    tn = rng.integers(0, 100, 9)
    out = mx.fast.cross_entropy(mx.array(xn), mx.array(tn).astype(tdtype))
    np.testing.assert_allclose(np.array(out), ref_loss(xn, tn), rtol=1e-5, atol=1e-5)
    dx = grad_of(mx.array(xn), mx.array(tn).astype(tdtype))
    np.testing.assert_allclose(np.array(dx), ref_grad(xn, tn), atol=1e-6)


def test_target_gets_zero_cotangent(rng):
    x = mx.array(rng.standard_normal((4, 6)).astype(np.float32))
    t = mx.array([0, 5, 2, 3])
    _, dt = mx.vjp(lambda a, b: mx.fast.cross_entropy(a, b), [x, t], [mx.ones((4,))])
    assert dt[1].shape == (4,) and not np.any(np.array(dt[1]))


def test_finite_differences_float64(rng):
    xn = rng.standard_normal((3, 7))
    tn = rng.integers(0, 7, 3)
    t = mx.array(tn)
    dx = np.array(grad_of(mx.array(xn), t))
    eps = 1e-6
    fd = np.zeros_like(xn)
    for i in np.ndindex(xn.shape):
        d = np.zeros_like(xn)
        d[i] = eps
        fd[i] = (ref_loss(xn + d, tn).sum() - ref_loss(xn - d, tn).sum()) / (2 * eps)
    np.testing.assert_allclose(dx, fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("dtype", [mx.float32, mx.bfloat16])
def test_matches_composed_formula(dtype, rng):
    x = mx.array(rng.standard_normal((2, 5, 301)) * 3).astype(dtype)
    t = mx.array(rng.integers(0, 301, (2, 5)))
    np.testing.assert_allclose(as_np(mx.fast.cross_entropy(x, t)), as_np(composed(x, t)),
                               rtol=1e-5, atol=1e-5)
    ref = mx.grad(lambda v: composed(v, t).sum())(x)
    np.testing.assert_allclose(as_np(grad_of(x, t)), as_np(ref), atol=GRAD_TOL[dtype] * 2)


def test_large_vocab(rng):
    xn = (rng.standard_normal((4, 50304)) * 3).astype(np.float32)
    tn = rng.integers(0, 50304, 4)
    x, t = mx.array(xn), mx.array(tn)
    np.testing.assert_allclose(np.array(mx.fast.cross_entropy(x, t)), ref_loss(xn, tn),
                               rtol=1e-5)
    np.testing.assert_allclose(np.array(grad_of(x, t)), ref_grad(xn, tn), atol=1e-6)


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16])
def test_long_rows(dtype, rng):
    # 256k classes: many chunks of the online logsumexp, with the max in a late chunk.
    xn = rng.standard_normal((2, 262144)).astype(np.float32)
    xn[0, 200000] = 30.0
    tn = np.array([200000, 5])
    x = mx.array(xn).astype(dtype)
    xr = as_np(x)
    np.testing.assert_allclose(np.array(mx.fast.cross_entropy(x, mx.array(tn))),
                               ref_loss(xr, tn), rtol=2e-5, atol=2e-5)


def test_zero_rows_and_empty_batch():
    for shape in [(0, 5), (2, 0, 5)]:
        x = mx.zeros(shape)
        t = mx.zeros(shape[:-1], dtype=mx.int32)
        out = mx.fast.cross_entropy(x, t)
        assert out.shape == shape[:-1] and out.dtype == mx.float32
        assert grad_of(x, t).shape == shape


def test_non_contiguous_logits_and_targets(rng):
    xn = rng.standard_normal((7, 40)).astype(np.float32)
    tn = rng.integers(0, 7, 40)
    xt = mx.array(xn).T  # (40, 7), transposed
    out = mx.fast.cross_entropy(xt, mx.array(tn))
    np.testing.assert_allclose(np.array(out), ref_loss(xn.T, tn), rtol=1e-5)
    np.testing.assert_allclose(np.array(grad_of(xt, mx.array(tn))), ref_grad(xn.T, tn), atol=1e-6)
    # Strided slices of both, and broadcast logits.
    big = mx.array(rng.standard_normal((6, 30)).astype(np.float32))
    tb = mx.array(rng.integers(0, 15, 12))[::2]
    xs = big[:, ::2]
    np.testing.assert_allclose(np.array(mx.fast.cross_entropy(xs, tb)),
                               ref_loss(np.array(xs), np.array(tb)), rtol=1e-5)
    row = mx.array(rng.standard_normal((1, 9)).astype(np.float32))
    xb = mx.broadcast_to(row, (4, 9))
    tb = mx.array([0, 3, 8, 3])
    np.testing.assert_allclose(np.array(mx.fast.cross_entropy(xb, tb)),
                               ref_loss(np.array(xb), np.array(tb)), rtol=1e-5)
    np.testing.assert_allclose(np.array(grad_of(xb, tb)), ref_grad(np.array(xb), np.array(tb)),
                               atol=1e-6)


def test_extreme_values():
    big = 1e30
    x = mx.array([[big, 0.0, -big], [0.0, -np.inf, 1.0], [-np.inf, 2.0, -np.inf],
                  [3.0, 3.0, 3.0]], dtype=mx.float32)
    t = mx.array([0, 2, 1, 1])
    out = np.array(mx.fast.cross_entropy(x, t))
    np.testing.assert_allclose(out, ref_loss(np.array(x), np.array(t)), atol=1e-6)
    dx = np.array(grad_of(x, t))
    np.testing.assert_allclose(dx, ref_grad(np.array(x), np.array(t)), atol=1e-6)
    assert np.isfinite(dx).all()
    # The target at -big costs 2e30; an infinite or NaN logit makes the loss non-finite.
    assert np.isclose(np.array(mx.fast.cross_entropy(x[:1], mx.array([2])))[0], 2 * big)
    special = mx.array([[np.inf, 0.0], [np.nan, 0.0], [-np.inf, -np.inf]], dtype=mx.float32)
    o = np.array(mx.fast.cross_entropy(special, mx.array([1, 1, 0])))
    assert o[0] == np.inf and np.isnan(o[1]) and np.isnan(o[2])


def test_out_of_range_targets_give_nan(rng):
    x = mx.array(rng.standard_normal((4, 5)).astype(np.float32))
    for bad in ([0, 5, 1, 2], [0, -1, 1, 2]):
        t = mx.array(bad)
        out = np.array(mx.fast.cross_entropy(x, t))
        assert np.isnan(out[1]) and np.isfinite(out[[0, 2, 3]]).all()
        dx = np.array(grad_of(x, t))
        assert np.isnan(dx[1]).all() and np.isfinite(dx[[0, 2, 3]]).all()
    out = np.array(mx.fast.cross_entropy(x, mx.array([0, 255, 1, 2], dtype=mx.uint8)))
    assert np.isnan(out[1])


def test_compile_and_shapeless_compile(rng):
    def loss(x, t):
        return mx.fast.cross_entropy(x, t).mean()

    vg = mx.value_and_grad(loss)
    for shapeless in (False, True):
        f = mx.compile(vg, shapeless=shapeless)
        for rows in (3, 8):
            xn = rng.standard_normal((rows, 11)).astype(np.float32)
            tn = rng.integers(0, 11, rows)
            v, g = f(mx.array(xn), mx.array(tn))
            np.testing.assert_allclose(v.item(), ref_loss(xn, tn).mean(), rtol=1e-5)
            np.testing.assert_allclose(np.array(g), ref_grad(xn, tn) / rows, atol=1e-6)


def test_vmap(rng):
    xn = rng.standard_normal((3, 4, 6)).astype(np.float32)
    tn = rng.integers(0, 6, (4, 3))
    x, t = mx.array(xn), mx.array(tn)
    # Logits mapped over axis 1 (rows 4, batch 3 -> mapped axis 0 of x), targets over axis 1.
    out = mx.vmap(mx.fast.cross_entropy, in_axes=(0, 1))(x, t)
    np.testing.assert_allclose(np.array(out), ref_loss(xn, tn.T), rtol=1e-5)
    # An unmapped target vector shared by every batch entry.
    out = mx.vmap(mx.fast.cross_entropy, in_axes=(0, None))(x, t[:, 0])
    np.testing.assert_allclose(np.array(out), ref_loss(xn, np.broadcast_to(tn[:, 0], (3, 4))),
                               rtol=1e-5)
    # vmap of the gradient (CrossEntropyVJP's rule).
    g = mx.vmap(mx.grad(lambda a, b: mx.fast.cross_entropy(a, b).sum()), in_axes=(0, 1))(x, t)
    np.testing.assert_allclose(np.array(g), ref_grad(xn, tn.T), atol=1e-6)


def test_jvp_and_second_derivative(rng):
    xn = rng.standard_normal((3, 5))
    tn = rng.integers(0, 5, 3)
    x, t = mx.array(xn), mx.array(tn)
    vn = rng.standard_normal((3, 5))
    _, (tan,) = mx.jvp(lambda a: mx.fast.cross_entropy(a, t), [x], [mx.array(vn)])
    np.testing.assert_allclose(np.array(tan), (ref_grad(xn, tn) * vn).sum(-1), rtol=1e-6)
    # Hessian-vector product through CrossEntropyVJP: H v = diag(p) v - p (p . v) per row.
    hv = mx.grad(lambda a: (grad_of(a, t) * mx.array(vn)).sum())(x)
    p = np.exp(xn - xn.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    expect = p * vn - p * (p * vn).sum(-1, keepdims=True)
    np.testing.assert_allclose(np.array(hv), expect, rtol=1e-6, atol=1e-10)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("dtype", [mx.float32, mx.bfloat16])
def test_nn_losses_cross_entropy(reduction, dtype, rng):
    xn = rng.standard_normal((4, 3, 10))
    tn = rng.integers(0, 10, (4, 3))
    x, t = mx.array(xn).astype(dtype), mx.array(tn)
    w = mx.array(rng.random((4, 3)).astype(np.float32))
    out = nn.losses.cross_entropy(x, t, weights=w, reduction=reduction)
    assert nn.losses.cross_entropy(x, t).dtype == dtype  # the loss keeps the logits' dtype
    ref = ref_loss(as_np(x), tn) * np.array(w)
    ref = {"none": ref, "mean": ref.mean(), "sum": ref.sum()}[reduction]
    np.testing.assert_allclose(as_np(out), ref, rtol=2e-2 if dtype == mx.bfloat16 else 1e-5)
    # Gradients equal those of the composed path (label_smoothing forces it, at ~0 smoothing).
    g = mx.grad(lambda v: nn.losses.cross_entropy(v, t, reduction="sum"))(x.astype(mx.float32))
    np.testing.assert_allclose(np.array(g), ref_grad(as_np(x), tn), atol=1e-5)


def test_nn_losses_uses_fused_primitive_only_for_the_plain_case():
    x, t = mx.zeros((2, 4)), mx.array([1, 2])
    fused = nn.losses.cross_entropy(x, t)
    assert fused.dtype == mx.float32
    # Other axes and label smoothing still work (composed path).
    np.testing.assert_allclose(np.array(nn.losses.cross_entropy(x.T, t, axis=0)),
                               np.log(4) * np.ones(2), rtol=1e-6)
    np.testing.assert_allclose(
        np.array(nn.losses.cross_entropy(x, t, label_smoothing=0.1)), np.log(4) * np.ones(2),
        rtol=1e-6)


@pytest.mark.parametrize("dtype", [mx.float16, mx.bfloat16])
def test_widened_half_logits_are_read_in_place(dtype, rng):
    # cross_entropy(x.astype(float32)) of half-precision x reads x itself: the same loss and,
    # through the cotangent's rounding to x's dtype, the same gradient as a float32 copy made
    # beforehand, without the copy's memory.
    xn, tn = rng.standard_normal((64, 300)), rng.integers(0, 300, (64,))
    x, t = mx.array(xn).astype(dtype), mx.array(tn)
    widened = mx.array(np.array(x.astype(mx.float32)))  # a float32 array with no graph
    for loss in (lambda v: mx.fast.cross_entropy(v.astype(mx.float32), t).sum(),
                 lambda v: nn.losses.cross_entropy(v.astype(mx.float32), t, reduction="sum")):
        value, grad = mx.value_and_grad(loss)(x)
        ref_value, ref_grad_f32 = mx.value_and_grad(
            lambda v: mx.fast.cross_entropy(v, t).sum())(widened)
        assert value.dtype == mx.float32 and grad.dtype == dtype
        # Equal on the CPU; a GPU kernel may sum a half row in another order (one ulp).
        ulp = 2.0**-10 if dtype == mx.float16 else 2.0**-7
        np.testing.assert_allclose(np.array(value), np.array(ref_value), rtol=1e-6)
        np.testing.assert_allclose(np.array(grad.astype(mx.float32)),
                                   np.array(ref_grad_f32.astype(dtype).astype(mx.float32)),
                                   rtol=ulp, atol=1e-7)
    # Peak memory: logits of 16 MiB in half precision would need 32 MiB more as float32.
    big = mx.array(rng.standard_normal((1024, 8192)).astype(np.float32)).astype(dtype)
    tb = mx.array(rng.integers(0, 8192, (1024,)))
    mx.eval(big, tb)
    mx.reset_peak_memory()
    base = mx.get_active_memory()
    mx.eval(mx.grad(lambda v: mx.fast.cross_entropy(v.astype(mx.float32), tb).sum())(big))
    assert mx.get_peak_memory() - base < 24 * 2**20, mx.get_peak_memory() - base


def test_the_gradient_takes_over_logits_that_die_in_it(rng):
    # An LM head's logits die in the loss's backward: dlogits is written over them, so the
    # step holds one logits-sized buffer, not two (32 MiB here), and the values are the same.
    xn = rng.standard_normal((1024, 64)).astype(np.float32)
    wn = (0.1 * rng.standard_normal((64, 8192))).astype(np.float32)
    tn = rng.integers(0, 8192, (1024,))
    x, w, t = mx.array(xn), mx.array(wn), mx.array(tn)
    mx.eval(x, w, t)
    mx.synchronize()
    mx.reset_peak_memory()
    base = mx.get_active_memory()
    dw = mx.grad(lambda w: mx.fast.cross_entropy(x @ w, t).sum())(w)
    mx.eval(dw)
    assert mx.get_peak_memory() - base < 48 * 2**20, mx.get_peak_memory() - base
    logits = xn.astype(np.float64) @ wn
    p = np.exp(logits - logits.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    p[np.arange(1024), tn] -= 1
    np.testing.assert_allclose(np.array(dw), xn.T.astype(np.float64) @ p, rtol=2e-3, atol=2e-4)


def test_errors():
    x = mx.zeros((2, 3))
    with pytest.raises(ValueError, match=r"cross_entropy.*shape \(2\)"):
        mx.fast.cross_entropy(x, mx.zeros((3,), dtype=mx.int32))
    with pytest.raises(ValueError, match=r"cross_entropy.*shape"):
        mx.fast.cross_entropy(x, mx.zeros((2, 1), dtype=mx.int32))
    with pytest.raises(ValueError, match="integer class indices; got float32"):
        mx.fast.cross_entropy(x, mx.zeros((2,)))
    with pytest.raises(ValueError, match="integer class indices; got bool"):
        mx.fast.cross_entropy(x, mx.zeros((2,), dtype=mx.bool_))
    with pytest.raises(ValueError, match="floating point; got int32"):
        mx.fast.cross_entropy(x.astype(mx.int32), mx.zeros((2,), dtype=mx.int32))
    with pytest.raises(ValueError, match="at least one dimension"):
        mx.fast.cross_entropy(mx.array(1.0), mx.array(0))
    with pytest.raises(ValueError, match="at least one class"):
        mx.fast.cross_entropy(mx.zeros((2, 0)), mx.zeros((2,), dtype=mx.int32))


def test_export_round_trip(tmp_path, rng):
    # Both primitives go through the file: the loss and its fused backward.
    def f(x, t):
        return mx.value_and_grad(lambda v: mx.fast.cross_entropy(v, t).sum())(x)

    path = str(tmp_path / "xent.mlxfn")
    xn = rng.standard_normal((3, 6)).astype(np.float32)
    tn = np.array([1, 5, 0], dtype=np.int32)
    mx.export_function(path, f, mx.array(xn), mx.array(tn))
    v, g = mx.import_function(path)(mx.array(xn), mx.array(tn))
    np.testing.assert_allclose(v.item(), ref_loss(xn, tn).sum(), rtol=1e-5)
    np.testing.assert_allclose(np.array(g), ref_grad(xn, tn), atol=1e-6)
