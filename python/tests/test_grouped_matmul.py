"""Grouped and masked products (gather_mm, segmented_mm, block_masked_mm) and the Hadamard
transform against float64 NumPy references: shapes, broadcasting of indices, layouts, dtypes,
gradients by finite differences and errors."""

import numpy as np
import pytest

import mlx.core as mx

RNG = np.random.default_rng(0)
DTYPES = [mx.float32, mx.float16, mx.bfloat16, mx.float64]
TOL = {mx.float32: 1e-4, mx.float16: 2e-2, mx.bfloat16: 1e-1, mx.float64: 1e-10}


def arr(shape, dtype=mx.float32):
    x = mx.array(RNG.standard_normal(shape).astype(np.float32)).astype(dtype)
    return x, np.array(x.astype(mx.float32)).astype(np.float64)


def close(out, ref, dtype=mx.float32):
    got = np.array(out.astype(mx.float32) if out.dtype in (mx.bfloat16,) else out)
    assert got.shape == np.shape(ref), (got.shape, np.shape(ref))
    scale = max(1.0, float(np.abs(ref).max())) if np.size(ref) else 1.0
    np.testing.assert_allclose(got, ref, rtol=TOL[dtype], atol=TOL[dtype] * scale)


def fd_grad(f, x, eps=1e-6):
    """Central finite differences of the scalar f at the float64 NumPy array x."""
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        hi = f(mx.array(x + d, dtype=mx.float64)).item()
        lo = f(mx.array(x - d, dtype=mx.float64)).item()
        g[i] = (hi - lo) / (2 * eps)
    return g


def np_gather_mm(a, b, li=None, ri=None):
    A = a.reshape(-1, *a.shape[-2:])
    B = b.reshape(-1, *b.shape[-2:])
    li = np.arange(A.shape[0]).reshape(a.shape[:-2]) if li is None else np.asarray(li)
    ri = np.arange(B.shape[0]).reshape(b.shape[:-2]) if ri is None else np.asarray(ri)
    li, ri = np.broadcast_arrays(li, ri)
    out = np.stack([A[i] @ B[j] for i, j in zip(li.ravel(), ri.ravel())]) if li.size else \
        np.zeros((0, a.shape[-2], b.shape[-1]))
    return out.reshape(li.shape + (a.shape[-2], b.shape[-1]))


# ---- gather_mm -------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_gather_mm_moe(dtype):
    # Tokens (N, 1, 1, D) routed to I of E experts: the mixture-of-experts product.
    x, xn = arr((6, 1, 1, 16), dtype)
    w, wn = arr((4, 16, 8), dtype)
    idx = RNG.integers(0, 4, (6, 2)).astype(np.uint32)
    out = mx.gather_mm(x, w, rhs_indices=mx.array(idx))
    assert out.shape == (6, 2, 1, 8) and out.dtype == dtype
    close(out, np_gather_mm(xn, wn, None, idx), dtype)


@pytest.mark.parametrize("sorted_indices", [False, True])
def test_gather_mm_both_indices_broadcast(sorted_indices):
    a, an = arr((2, 3, 5, 7))
    b, bn = arr((4, 7, 3))
    li = np.array([[0], [5], [2]])
    ri = np.sort(RNG.integers(0, 4, (1, 4))) if sorted_indices else RNG.integers(0, 4, (1, 4))
    out = mx.gather_mm(a, b, mx.array(li), mx.array(ri), sorted_indices=sorted_indices)
    close(out, np_gather_mm(an, bn, li, ri))


def test_gather_mm_defaults_and_vectors():
    a, an = arr((2, 3, 4))
    b, bn = arr((2, 4, 5))
    close(mx.gather_mm(a, b), an @ bn)  # no indices: a batched matmul
    v, vn = arr((4,))
    out = mx.gather_mm(v, b, rhs_indices=mx.array([1, 0]))
    close(out, np.stack([vn @ bn[1], vn @ bn[0]]))
    out = mx.gather_mm(a, mx.array(vn.astype(np.float32)), lhs_indices=mx.array([1, 1, 0]))
    close(out, np.stack([an[1] @ vn, an[1] @ vn, an[0] @ vn]))


@pytest.mark.parametrize("layout", ["transposed_b", "sliced_a", "broadcast_b"])
def test_gather_mm_layouts(layout):
    a, an = arr((3, 4, 6))
    b, bn = arr((5, 6, 4))
    if layout == "transposed_b":  # experts stored (E, N, K) and used transposed
        wt, wtn = arr((5, 4, 6))
        b, bn = mx.swapaxes(wt, -1, -2), np.swapaxes(wtn, -1, -2)
    elif layout == "sliced_a":
        a, an = a[:, ::2, ::-1], an[:, ::2, ::-1]
    else:
        b = mx.broadcast_to(b[:1], (5, 6, 4))
        bn = np.broadcast_to(bn[:1], (5, 6, 4))
    li, ri = np.array([0, 2, 2, 1]), np.array([4, 4, 0, 4])
    close(mx.gather_mm(a, b, mx.array(li), mx.array(ri)), np_gather_mm(an, bn, li, ri))


def test_gather_mm_odd_shapes():
    a, an = arr((2, 3, 4))
    b, bn = arr((3, 4, 5))
    out = mx.gather_mm(a, b, mx.zeros((0,), mx.uint32), mx.zeros((0,), mx.uint32))
    assert out.shape == (0, 3, 5)
    mx.eval(out)
    out = mx.gather_mm(mx.zeros((2, 3, 0)), mx.zeros((3, 0, 5)), rhs_indices=mx.array([1, 0]))
    close(out, np.zeros((2, 3, 5)))
    out = mx.gather_mm(mx.zeros((2, 0, 4)), b, rhs_indices=mx.array([1, 0]))
    assert out.shape == (2, 0, 5)
    one, onen = arr((1, 1, 1))
    close(mx.gather_mm(one, one, mx.array([0, 0]), mx.array(0)), np.stack([onen[0] @ onen[0]] * 2))


@pytest.mark.parametrize("idx_dtype", [mx.uint32, mx.int32, mx.int64, mx.uint8, mx.int16])
def test_gather_mm_index_dtypes(idx_dtype):
    a, an = arr((2, 3, 4))
    b, bn = arr((3, 4, 5))
    li, ri = np.array([1, 0, 1]), np.array([2, 2, 0])
    out = mx.gather_mm(a, b, mx.array(li, dtype=idx_dtype), mx.array(ri, dtype=idx_dtype))
    close(out, np_gather_mm(an, bn, li, ri))


def test_gather_mm_grad():
    a = RNG.standard_normal((2, 3, 4))
    b = RNG.standard_normal((3, 4, 2))
    li, ri = mx.array([1, 0, 1, 1]), mx.array([2, 2, 0, 1])
    proj = RNG.standard_normal((4, 3, 2))

    def f(A, B):
        return (mx.gather_mm(A, B, li, ri) * mx.array(proj)).sum()

    A, B = mx.array(a, dtype=mx.float64), mx.array(b, dtype=mx.float64)
    ga, gb = mx.grad(f, argnums=(0, 1))(A, B)
    np.testing.assert_allclose(np.array(ga), fd_grad(lambda t: f(t, B), a), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(np.array(gb), fd_grad(lambda t: f(A, t), b), rtol=1e-6, atol=1e-7)
    # jvp: linear in each operand.
    ta, tb = mx.array(RNG.standard_normal(a.shape)), mx.array(RNG.standard_normal(b.shape))
    _, (t,) = mx.jvp(lambda A, B: mx.gather_mm(A, B, li, ri), [A, B], [ta, tb])
    ref = np_gather_mm(np.array(ta), b, np.array(li), np.array(ri)) + np_gather_mm(
        a, np.array(tb), np.array(li), np.array(ri))
    np.testing.assert_allclose(np.array(t), ref, rtol=1e-10, atol=1e-10)


def test_gather_mm_errors():
    a, b = mx.ones((2, 3, 4)), mx.ones((3, 4, 5))
    with pytest.raises(ValueError, match="gather_mm"):
        mx.gather_mm(a, mx.ones((3, 5, 5)), rhs_indices=mx.array([0, 1]))
    with pytest.raises(ValueError, match="integral"):
        mx.gather_mm(a, b, rhs_indices=mx.array([1.0, 0.0]))
    with pytest.raises(ValueError, match="floating"):
        mx.gather_mm(mx.ones((2, 3, 4), mx.int32), mx.ones((3, 4, 5), mx.int32))
    with pytest.raises(ValueError):
        mx.gather_mm(a, b, mx.array([0, 1]), mx.array([0, 1, 2]))  # shapes do not broadcast
    with pytest.raises(ValueError):
        mx.gather_mm(mx.array(1.0), b)
    with pytest.raises(IndexError, match="out of range"):
        mx.eval(mx.gather_mm(a, b, rhs_indices=mx.array([1, 3])))
    with pytest.raises(IndexError, match="out of range"):
        mx.eval(mx.gather_mm(a, b, lhs_indices=mx.array([-1]), rhs_indices=mx.array([0])))


# ---- segmented_mm ----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_segmented_mm(dtype):
    a, an = arr((3, 10), dtype)
    b, bn = arr((10, 4), dtype)
    seg = np.array([[0, 3], [3, 10], [2, 5], [5, 5], [7, 2]], dtype=np.uint32)
    out = mx.segmented_mm(a, b, mx.array(seg))
    assert out.dtype == dtype
    ref = np.stack([an[:, s:e] @ bn[s:e] if e > s else np.zeros((3, 4)) for s, e in seg])
    close(out, ref, dtype)


def test_segmented_mm_shapes_and_layouts():
    a, an = arr((10, 3))
    b, bn = arr((4, 10))
    at, bt = a.T, b.T  # transposed views
    seg = np.array([[[0, 4], [4, 10]], [[1, 2], [0, 10]]], dtype=np.int32)
    out = mx.segmented_mm(at, bt, mx.array(seg))
    assert out.shape == (2, 2, 3, 4)
    ref = np.stack([[an.T[:, s:e] @ bn.T[s:e] for s, e in row] for row in seg])
    close(out, ref)
    close(mx.segmented_mm(at, bt, mx.array([0, 10])), an.T @ bn.T)
    assert mx.segmented_mm(at, bt, mx.zeros((0, 2), mx.int32)).shape == (0, 3, 4)
    close(mx.segmented_mm(mx.zeros((3, 0)), mx.zeros((0, 2)), mx.array([[0, 0]])), np.zeros((1, 3, 2)))


def test_segmented_mm_grad():
    a = RNG.standard_normal((2, 6))
    b = RNG.standard_normal((6, 3))
    seg = mx.array([[0, 2], [1, 6], [4, 4]])
    proj = RNG.standard_normal((3, 2, 3))

    def f(A, B):
        return (mx.segmented_mm(A, B, seg) * mx.array(proj)).sum()

    A, B = mx.array(a, dtype=mx.float64), mx.array(b, dtype=mx.float64)
    ga, gb = mx.grad(f, argnums=(0, 1))(A, B)
    np.testing.assert_allclose(np.array(ga), fd_grad(lambda t: f(t, B), a), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(np.array(gb), fd_grad(lambda t: f(A, t), b), rtol=1e-6, atol=1e-7)


def test_segmented_mm_errors():
    a, b = mx.ones((3, 10)), mx.ones((10, 4))
    with pytest.raises(ValueError, match="Batched"):
        mx.segmented_mm(mx.ones((2, 3, 10)), b, mx.array([[0, 1]]))
    with pytest.raises(ValueError, match="integral"):
        mx.segmented_mm(a, b, mx.array([[0, 3.0]]))
    with pytest.raises(ValueError, match=r"\(\.\.\., 2\)"):
        mx.segmented_mm(a, b, mx.array([0, 1, 2]))
    with pytest.raises(ValueError):
        mx.segmented_mm(a, mx.ones((9, 4)), mx.array([[0, 3]]))
    with pytest.raises(IndexError):
        mx.eval(mx.segmented_mm(a, b, mx.array([[0, 11]])))


# ---- block_masked_mm -------------------------------------------------------------------------


def expand(mask, rows, cols, bs):
    m = np.asarray(mask).astype(np.float64)
    return np.repeat(np.repeat(m, bs, -2), bs, -1)[..., :rows, :cols]


@pytest.mark.parametrize("bs", [32, 64])
@pytest.mark.parametrize("kind", ["bool", "float"])
def test_block_masked_mm(bs, kind):
    M, K, N = 70, 40, 100
    a, an = arr((M, K))
    b, bn = arr((K, N))
    tm, tk, tn = (-(-d // bs) for d in (M, K, N))

    def mask(shape):
        m = RNG.random(shape)
        return (m > 0.4) if kind == "bool" else m.astype(np.float32)

    mo, ml, mr = mask((tm, tn)), mask((tm, tk)), mask((tk, tn))
    out = mx.block_masked_mm(a, b, bs, mx.array(mo), mx.array(ml), mx.array(mr))
    ref = ((an * expand(ml, M, K, bs)) @ (bn * expand(mr, K, N, bs))) * expand(mo, M, N, bs)
    close(out, ref)
    close(mx.block_masked_mm(a, b, bs), an @ bn)
    close(mx.block_masked_mm(a, b, bs, mask_lhs=mx.array(ml)), (an * expand(ml, M, K, bs)) @ bn)


def test_block_masked_mm_batch_dtypes_grad():
    a, an = arr((2, 40, 33))
    b, bn = arr((33, 20))
    mo = RNG.random((2, 2, 1)) > 0.5
    out = mx.block_masked_mm(a, b, 32, mx.array(mo))
    close(out, (an @ bn) * expand(mo, 40, 20, 32))
    for dt in (mx.float16, mx.bfloat16):
        o = mx.block_masked_mm(a.astype(dt), b.astype(dt), 32, mx.array(mo))
        assert o.dtype == dt
    A = RNG.standard_normal((3, 5))
    B = RNG.standard_normal((5, 4))
    ml = mx.array(RNG.random((1, 1)).astype(np.float32))

    def f(x):
        return mx.block_masked_mm(x, mx.array(B), 32, None, ml).sum()

    g = mx.grad(f)(mx.array(A, dtype=mx.float64))
    np.testing.assert_allclose(np.array(g), fd_grad(f, A), rtol=1e-5, atol=1e-6)


def test_block_masked_mm_errors():
    a, b = mx.ones((70, 40)), mx.ones((40, 50))
    with pytest.raises(ValueError, match="mask_out"):
        mx.block_masked_mm(a, b, 32, mx.ones((2, 2), mx.bool_))
    with pytest.raises(ValueError, match="block size"):
        mx.block_masked_mm(a, b, 0)
    with pytest.raises(ValueError, match="floating"):
        mx.block_masked_mm(mx.ones((4, 4), mx.int32), mx.ones((4, 4), mx.int32))


# ---- hadamard_transform ----------------------------------------------------------------------


def sylvester(n):
    h = np.ones((1, 1))
    while h.shape[0] < n:
        h = np.block([[h, h], [h, -h]])
    return h


def test_hadamard_matches_sylvester():
    for n in [1, 2, 4, 64, 1024]:
        x, xn = arr((3, n))
        close(mx.hadamard_transform(x), xn @ sylvester(n).T / np.sqrt(n))
        close(mx.hadamard_transform(x, scale=0.5), xn @ sylvester(n).T * 0.5)


@pytest.mark.parametrize("m", [12, 20, 28])
def test_hadamard_m_sizes_are_hadamard_matrices(m):
    for p in [1, 2, 8]:
        n = m * p
        h = np.array(mx.hadamard_transform(mx.eye(n), scale=1.0)).T  # column i is H e_i
        assert set(np.unique(h)) == {-1.0, 1.0}
        np.testing.assert_array_equal(h @ h.T, n * np.eye(n))
        base = np.array(mx.hadamard_transform(mx.eye(m), scale=1.0)).T
        np.testing.assert_array_equal(h, np.kron(base, sylvester(p)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_hadamard_dtypes_and_layouts(dtype):
    x, xn = arr((4, 2, 24), dtype)
    h = np.array(mx.hadamard_transform(mx.eye(24), scale=1.0)).T
    out = mx.hadamard_transform(x)
    assert out.dtype == dtype
    close(out, xn @ h.T / np.sqrt(24), dtype)
    xt = mx.swapaxes(x, 0, 2)  # non-contiguous, transform along 4
    close(mx.hadamard_transform(xt), np.swapaxes(xn, 0, 2) @ sylvester(4).T / 2, dtype)
    assert mx.hadamard_transform(mx.array([1, 2, 3, 4])).dtype == mx.float32
    close(mx.hadamard_transform(mx.array(3.0)), np.array(3.0))
    assert mx.hadamard_transform(mx.zeros((0, 8))).shape == (0, 8)


def test_hadamard_grad_vmap():
    for n in [8, 20]:
        x = RNG.standard_normal((2, n))
        proj = mx.array(RNG.standard_normal((2, n)))

        def f(t):
            return (mx.hadamard_transform(t, 0.3) * proj).sum()

        g = mx.grad(f)(mx.array(x, dtype=mx.float64))
        np.testing.assert_allclose(np.array(g), fd_grad(f, x), rtol=1e-6, atol=1e-7)
    xs, xn = arr((3, 5, 12))
    out = mx.vmap(mx.hadamard_transform, in_axes=2, out_axes=2)(mx.swapaxes(xs, 1, 2))
    close(mx.swapaxes(out, 1, 2), np.array(mx.hadamard_transform(xs)))
    out = mx.vmap(mx.hadamard_transform, in_axes=0)(xs)
    close(out, np.array(mx.hadamard_transform(xs)))


def test_hadamard_errors():
    for n in [3, 6, 24 * 3, 36]:
        with pytest.raises(ValueError, match="hadamard_transform"):
            mx.hadamard_transform(mx.ones((2, n)))
    with pytest.raises(ValueError, match="Complex"):
        mx.hadamard_transform(mx.ones((2, 4), mx.complex64))
