"""mx.linalg against numpy.linalg on random well-conditioned inputs."""

import math

import numpy as np
import pytest

import mlx.core as mx

RNG = np.random.default_rng(0)


def rand(*shape, dtype=np.float32):
    return RNG.uniform(-1, 1, size=shape).astype(dtype)


def well_conditioned(*batch, n=4, dtype=np.float32):
    return (rand(*batch, n, n, dtype=np.float64) + n * np.eye(n)).astype(dtype)


def spd(*batch, n=4, dtype=np.float32):
    r = rand(*batch, n, n, dtype=np.float64)
    return (r @ np.swapaxes(r, -1, -2) + n * np.eye(n)).astype(dtype)


def arr(x):
    """mx.array keeping float64 (mx.array alone converts it to float32)."""
    x = np.asarray(x)
    return mx.array(x, dtype=mx.float64) if x.dtype == np.float64 else mx.array(x)


def close(got, want, tol=1e-4):
    got = np.array(got)
    assert got.shape == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


# norm

VECTOR_ORDS = [None, 2, 1, 0, 3, 0.5, math.inf, -math.inf]
MATRIX_ORDS = [None, "fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf]


@pytest.mark.parametrize("ord", VECTOR_ORDS)
def test_vector_norm(ord):
    x = rand(7)
    close(mx.linalg.norm(arr(x), ord), np.linalg.norm(x, ord))
    b = rand(3, 5, 2)
    for axis in (0, 1, -1):
        for keepdims in (False, True):
            close(
                mx.linalg.norm(arr(b), ord, axis=axis, keepdims=keepdims),
                np.linalg.norm(b, ord, axis=axis, keepdims=keepdims),
            )


@pytest.mark.parametrize("ord", MATRIX_ORDS)
def test_matrix_norm(ord):
    m = rand(4, 3)
    close(mx.linalg.norm(arr(m), ord), np.linalg.norm(m, ord))
    b = rand(3, 5, 2)
    for axis in ((0, 1), (2, 0), (-1, -2)):
        for keepdims in (False, True):
            close(
                mx.linalg.norm(arr(b), ord, axis=axis, keepdims=keepdims),
                np.linalg.norm(b, ord, axis=axis, keepdims=keepdims),
            )


def test_norm_defaults_and_dtypes():
    t = rand(2, 3, 4)
    close(mx.linalg.norm(arr(t)), np.linalg.norm(t))
    assert mx.linalg.norm(arr(t), keepdims=True).shape == (1, 1, 1)
    i = np.arange(6, dtype=np.int32).reshape(2, 3)
    n = mx.linalg.norm(arr(i), axis=1)
    assert n.dtype == mx.float32
    close(n, np.linalg.norm(i, axis=1))
    d = rand(5, dtype=np.float64)
    assert mx.linalg.norm(arr(d)).dtype == mx.float64
    # Non-contiguous input.
    nc = rand(6, 4)[::2, ::-1]
    close(mx.linalg.norm(arr(nc), 1), np.linalg.norm(nc, 1))


def test_norm_errors():
    t = arr(rand(2, 3, 4))
    with pytest.raises(ValueError):
        mx.linalg.norm(t, 2)
    with pytest.raises(ValueError):
        mx.linalg.norm(t, "fro", axis=0)
    with pytest.raises(ValueError):
        mx.linalg.norm(t, 3, axis=(0, 1))
    with pytest.raises(ValueError):
        mx.linalg.norm(t, "bad", axis=(0, 1))
    with pytest.raises(ValueError):
        mx.linalg.norm(t, axis=5)


# cross


def test_cross():
    a, b = rand(4, 3), rand(4, 3)
    close(mx.linalg.cross(arr(a), arr(b)), np.cross(a, b))
    a0, b0 = rand(3, 5), rand(1, 5)
    b0 = np.broadcast_to(rand(3, 1), (3, 5)).copy()
    close(mx.linalg.cross(arr(a0), arr(b0), axis=0), np.cross(a0, b0, axis=0))
    # 2-vectors get a zero third component.
    a2, b2 = rand(4, 2), rand(4, 3)
    a2z = np.concatenate([a2, np.zeros((4, 1), np.float32)], -1)
    close(mx.linalg.cross(arr(a2), arr(b2)), np.cross(a2z, b2))
    with pytest.raises(ValueError):
        mx.linalg.cross(arr(rand(4)), arr(rand(4)))


# inverses and solves


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_inv(dtype):
    a = well_conditioned(3, 2, n=5, dtype=dtype)
    x = mx.linalg.inv(arr(a))
    assert x.dtype == (mx.float32 if dtype == np.float32 else mx.float64)
    close(x, np.linalg.inv(a))
    at = np.swapaxes(a, -1, -2)
    close(mx.linalg.inv(mx.swapaxes(arr(a), -1, -2)), np.linalg.inv(at))
    lo = np.tril(a)
    close(mx.linalg.tri_inv(arr(a)), np.linalg.inv(lo))
    close(mx.linalg.tri_inv(arr(a), upper=True), np.linalg.inv(np.triu(a)))


def test_inv_errors():
    with pytest.raises(ValueError):
        mx.linalg.inv(arr(rand(3, 4)))
    with pytest.raises(ValueError):
        mx.linalg.inv(arr(rand(3)))
    with pytest.raises(ValueError):
        mx.linalg.inv(mx.zeros((3, 3), dtype=mx.float16))
    with pytest.raises(ValueError):
        mx.eval(mx.linalg.inv(arr([[1.0, 2.0], [2.0, 4.0]])))
    with pytest.raises(ValueError):
        mx.eval(mx.linalg.solve(arr([[1.0, 2.0], [2.0, 4.0]]), mx.ones(2)))


def test_cholesky():
    a = spd(2, 3, n=5)
    l = mx.linalg.cholesky(arr(a))
    close(l, np.linalg.cholesky(a))
    close(mx.linalg.cholesky(arr(a), upper=True), np.swapaxes(np.linalg.cholesky(a), -1, -2))
    close(mx.linalg.cholesky_inv(l), np.linalg.inv(a), 1e-3)
    u = mx.linalg.cholesky(arr(a), upper=True)
    close(mx.linalg.cholesky_inv(u, upper=True), np.linalg.inv(a), 1e-3)
    with pytest.raises(ValueError):
        mx.eval(mx.linalg.cholesky(arr([[1.0, 2.0], [2.0, 1.0]])))


def test_solve():
    a = well_conditioned(4, n=5)
    b = rand(4, 5, 3)
    close(mx.linalg.solve(arr(a), arr(b)), np.linalg.solve(a, b))
    v = rand(5)
    close(mx.linalg.solve(arr(a), arr(v)), np.linalg.solve(a, v))
    close(mx.linalg.solve(arr(a[0]), arr(v)), np.linalg.solve(a[0], v))
    lo = np.tril(a)
    close(mx.linalg.solve_triangular(arr(a), arr(b)), np.linalg.solve(lo, b))
    close(
        mx.linalg.solve_triangular(arr(a), arr(b), upper=True),
        np.linalg.solve(np.triu(a), b),
    )
    with pytest.raises(ValueError):
        mx.linalg.solve(arr(a), arr(rand(4)))
    with pytest.raises(TypeError):
        mx.linalg.solve_triangular(arr(a), arr(b), True)


def test_pinv():
    a = rand(4, 6)
    close(mx.linalg.pinv(arr(a)), np.linalg.pinv(a), 1e-3)
    a = rand(2, 5, 3)
    close(mx.linalg.pinv(arr(a)), np.linalg.pinv(a), 1e-3)


# factorizations


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4)])
def test_qr(shape):
    a = rand(*shape)
    q, r = mx.linalg.qr(arr(a))
    k = min(shape[-2:])
    assert q.shape == shape[:-1] + (k,) and r.shape == shape[:-2] + (k, shape[-1])
    close(q @ r, a)
    close(mx.swapaxes(q, -1, -2) @ q, np.broadcast_to(np.eye(k), shape[:-2] + (k, k)))
    close(r, np.triu(np.array(r)), 0)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4)])
def test_svd(shape):
    a = rand(*shape)
    u, s, vt = mx.linalg.svd(arr(a))
    m, n = shape[-2:]
    k = min(m, n)
    assert u.shape[-2:] == (m, m) and vt.shape[-2:] == (n, n)
    close(s, np.linalg.svd(a, compute_uv=False))
    us = np.array(u)[..., :k] * np.array(s)[..., None, :]
    close(us @ np.array(vt)[..., :k, :], a)
    close(mx.linalg.svd(arr(a), compute_uv=False), np.linalg.svd(a, compute_uv=False))


def test_eigh():
    a = spd(3, n=5)
    w, v = mx.linalg.eigh(arr(a))
    close(w, np.linalg.eigvalsh(a), 1e-3)
    close(arr(a) @ v, np.array(v) * np.array(w)[..., None, :], 1e-3)
    close(mx.linalg.eigvalsh(arr(np.triu(a)), UPLO="U"), np.linalg.eigvalsh(a), 1e-3)
    with pytest.raises(ValueError):
        mx.linalg.eigh(arr(a), UPLO="X")


def test_eig():
    a = well_conditioned(2, n=4)
    w, v = mx.linalg.eig(arr(a))
    assert w.dtype == mx.complex64
    wn = np.sort_complex(np.linalg.eigvals(a).astype(np.complex64))
    close(np.sort_complex(np.array(w)), wn, 1e-3)
    close(np.sort_complex(np.array(mx.linalg.eigvals(arr(a)))), wn, 1e-3)
    av = a.astype(np.complex64) @ np.array(v)
    close(av, np.array(v) * np.array(w)[..., None, :], 1e-3)


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 4, 4)])
def test_lu(shape):
    a = rand(*shape)
    p, l, u = mx.linalg.lu(arr(a))
    assert p.dtype == mx.uint32
    close(mx.take_along_axis(l, p[..., None].astype(mx.int32), axis=-2) @ u, a)
    lu, piv = mx.linalg.lu_factor(arr(a))
    assert lu.shape == shape and piv.shape == shape[:-2] + (min(shape[-2:]),)


def test_det():
    a = rand(3, 4, 4)
    close(mx.linalg.det(arr(a)), np.linalg.det(a), 1e-4)
    sign, logabs = mx.linalg.slogdet(arr(a))
    ns, nl = np.linalg.slogdet(a)
    close(sign, ns)
    close(logabs, nl, 1e-4)
    with pytest.raises(ValueError):
        mx.linalg.det(arr(rand(2, 3)))


# transforms


def test_vmap():
    a = well_conditioned(3, n=4)
    moved = np.moveaxis(a, 0, 1)
    got = mx.vmap(mx.linalg.inv, in_axes=1)(arr(moved))
    close(got, np.linalg.inv(a))
    got = mx.vmap(lambda x: mx.linalg.svd(x, compute_uv=False))(arr(a))
    close(got, np.linalg.svd(a, compute_uv=False))


def finite_diff_check(f, x, seed=0):
    rng = np.random.default_rng(seed)
    w = arr(rng.uniform(-1, 1, f(arr(x)).shape))
    d = rng.uniform(-1, 1, x.shape)
    loss = lambda y: mx.sum(w * f(y))
    g = np.array(mx.grad(loss)(arr(x)))
    h = 1e-6
    fd = (loss(arr(x + h * d)).item() - loss(arr(x - h * d)).item()) / (2 * h)
    assert abs((g * d).sum() - fd) < 1e-5 * (1 + abs(fd))


def test_gradients():
    a = well_conditioned(2, n=4, dtype=np.float64)
    finite_diff_check(mx.linalg.inv, a)
    finite_diff_check(lambda x: mx.linalg.tri_inv(x, upper=True), a)
    b = rand(2, 4, 3, dtype=np.float64)
    finite_diff_check(lambda x: mx.linalg.solve(x, arr(b)), a)
    finite_diff_check(lambda y: mx.linalg.solve(arr(a), y), b)
    sym = lambda x: x @ mx.swapaxes(x, -1, -2) + 4 * mx.eye(4, dtype=mx.float64)
    r = rand(2, 4, 4, dtype=np.float64)
    finite_diff_check(lambda x: mx.linalg.cholesky(sym(x)), r)
    finite_diff_check(lambda x: mx.linalg.eigvalsh(sym(x)), r)
    finite_diff_check(lambda x: mx.linalg.eigh(sym(x))[1] ** 2, r)
    with pytest.raises(ValueError, match="not supported"):
        mx.grad(lambda x: mx.sum(mx.linalg.qr(x)[1]))(arr(a))


@pytest.mark.parametrize("dtype", [mx.int32, mx.int64, mx.uint8, mx.bool_])
def test_integer_matrices_are_promoted_to_float32(dtype):
    a_np = np.array([[2, 1, 0], [1, 3, 1], [0, 1, 4]])
    if dtype == mx.bool_:
        a_np = np.eye(3, dtype=bool)
    a = mx.array(a_np, dtype=dtype)
    ref = a_np.astype(np.float64)
    det = mx.linalg.det(a, stream=mx.cpu)
    assert det.dtype == mx.float32
    np.testing.assert_allclose(det.item(), np.linalg.det(ref), rtol=1e-5)
    np.testing.assert_allclose(np.array(mx.linalg.inv(a, stream=mx.cpu)), np.linalg.inv(ref),
                               rtol=1e-5, atol=1e-6)
    sign, logdet = mx.linalg.slogdet(a, stream=mx.cpu)
    np.testing.assert_allclose(logdet.item(), np.linalg.slogdet(ref)[1], rtol=1e-5, atol=1e-6)
    b = mx.array([1, 2, 3])
    np.testing.assert_allclose(np.array(mx.linalg.solve(a, b, stream=mx.cpu)),
                               np.linalg.solve(ref, [1, 2, 3]), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.array(mx.linalg.svd(a, compute_uv=False, stream=mx.cpu)),
                               np.linalg.svd(ref, compute_uv=False), rtol=1e-5, atol=1e-6)
