"""Index-based ops (take, take_along_axis, put_along_axis, sort, partition, topk), products
(matmul, addmm, inner, outer, kron, tensordot) and graph ops (stop_gradient, depends,
result_type) of mlx.core against NumPy."""
import numpy as np
import pytest

import mlx.core as mx
from opsutil import check, make


@pytest.mark.parametrize("dtype", [mx.float32, mx.int16, mx.bool_, mx.bfloat16])
def test_take(rng, dtype):
    x, xn = make(rng, (3, 4, 5), dtype)
    idx = np.array([[0, 2], [-1, 1]])
    for idx_dtype in (mx.int32, mx.uint8, mx.int64):
        i = mx.array(np.abs(idx) if idx_dtype == mx.uint8 else idx, idx_dtype)
        inn = np.array(i)
        for axis in (0, 1, -1):
            check(mx.take(x, i, axis), np.take(xn, inn, axis), dtype=dtype)
        check(mx.take(x, i), np.take(xn, inn), dtype=dtype)
    check(mx.take(x, 2, axis=1), np.take(xn, 2, axis=1))
    check(mx.take(x, -1, axis=0), np.take(xn, -1, axis=0))
    check(mx.take(x, 7), np.take(xn, 7))
    check(mx.take(x, indices=mx.array([], mx.int32), axis=2), np.take(xn, [], axis=2))


def test_take_errors():
    x = mx.ones((3, 4))
    with pytest.raises(IndexError, match="take"):
        mx.take(x, 5, axis=0)
    with pytest.raises(ValueError):
        mx.take(x, mx.array([0]), axis=2)
    with pytest.raises(ValueError):
        mx.take(x, mx.array([0.5]), axis=0)
    with pytest.raises(IndexError):
        mx.eval(mx.take(x, mx.array([7]), axis=1))


def test_take_along_and_put_along_axis(rng):
    x, xn = make(rng, (3, 4, 5), mx.float32)
    for axis in (0, 1, -1):
        order = np.argsort(xn, axis=axis)[..., :2] if axis == -1 else np.argsort(xn, axis=axis)
        i = mx.array(order.astype(np.int32))
        check(mx.take_along_axis(x, i, axis), np.take_along_axis(xn, order, axis))
        v, vn = make(rng, order.shape, mx.float32)
        expected = xn.copy()
        np.put_along_axis(expected, order, vn, axis)
        check(mx.put_along_axis(x, i, v, axis), expected)
        expected = xn.copy()
        np.put_along_axis(expected, order, 9.0, axis)
        check(mx.put_along_axis(x, i, 9.0, axis=axis), expected)
    # Broadcast indices and no axis (the flattened array).
    b = mx.array([[[1], [0], [2], [0]]])
    check(mx.take_along_axis(x, b, 0), np.take_along_axis(xn, np.array(b), 0))
    flat = mx.array([3, 0, 59])
    check(mx.take_along_axis(x, flat), np.take_along_axis(xn, np.array(flat), None))
    expected = xn.copy().reshape(-1)
    expected[[3, 0, 59]] = [1, 2, 3]
    check(mx.put_along_axis(x, flat, mx.array([1.0, 2, 3])), expected.reshape(xn.shape))
    with pytest.raises(ValueError):
        mx.take_along_axis(x, mx.array([[0]]), 0)


@pytest.mark.parametrize("dtype", [mx.float32, mx.int32, mx.uint8, mx.float16, mx.bool_])
def test_sort_argsort(rng, dtype):
    x, xn = make(rng, (3, 4, 6), dtype, -20, 20)
    for axis in (-1, 0, 1, None):
        check(mx.sort(x, axis), np.sort(xn, axis=axis), dtype=dtype)
        idx = mx.argsort(x, axis=axis)
        assert idx.dtype == mx.uint32
        src = xn.reshape(-1) if axis is None else xn
        check(mx.take_along_axis(x, idx, axis), np.sort(xn, axis=axis))
        if dtype == mx.float32:  # no ties: the permutation itself is unique
            check(idx, np.argsort(src, axis=-1 if axis is None else axis))
    check(mx.sort(x), np.sort(xn))
    check(mx.sort(mx.transpose(x)), np.sort(xn.T))
    with pytest.raises(ValueError, match="sort"):
        mx.sort(x, 3)


@pytest.mark.parametrize("kth", [0, 2, 5, -1])
def test_partition(rng, kth):
    x, xn = make(rng, (3, 6), mx.float32)
    for axis in (-1, None):
        p = np.array(mx.partition(x, kth, axis=axis))
        ref = np.sort(xn, axis=axis)
        k = kth % p.shape[-1]
        np.testing.assert_array_equal(p[..., k], ref[..., k])
        assert np.all(p[..., :k] <= p[..., k:k + 1]) and np.all(p[..., k + 1:] >= p[..., k:k + 1])
        idx = mx.argpartition(x, kth, axis)
        check(mx.take_along_axis(x, idx, axis), p)
    check(mx.sort(mx.partition(x, kth=min(kth, 2), axis=0), 0), np.sort(xn, 0))
    with pytest.raises(IndexError, match="partition"):
        mx.partition(x, 6)


@pytest.mark.parametrize("k", [1, 3, 6, 0])
def test_topk(rng, k):
    x, xn = make(rng, (4, 6), mx.float32)
    check(mx.sort(mx.topk(x, k), -1), np.sort(xn, -1)[:, 6 - k:])
    check(mx.sort(mx.topk(x, k, axis=None)), np.sort(xn.reshape(-1))[24 - k:])
    if k <= 4:
        check(mx.sort(mx.topk(x, k=k, axis=0), 0), np.sort(xn, 0)[4 - k:])
    with pytest.raises(ValueError, match="topk"):
        mx.topk(x, 7)


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.bfloat16, mx.int32])
@pytest.mark.parametrize("sa,sb", [((3, 4), (4, 5)), ((2, 3, 4), (4, 2)), ((4,), (4, 3)),
                                   ((3, 4), (4,)), ((4,), (4,)), ((2, 1, 3, 4), (5, 4, 2)),
                                   ((0, 4), (4, 3)), ((3, 0), (0, 2))])
def test_matmul(rng, dtype, sa, sb):
    a, an = make(rng, sa, dtype)
    b, bn = make(rng, sb, dtype)
    wide = np.float64 if dtype != mx.int32 else np.int64
    expected = np.matmul(an.astype(wide), bn.astype(wide))
    rtol = {mx.float16: 1e-2, mx.bfloat16: 5e-2}.get(dtype)
    check(mx.matmul(a, b), expected, dtype=dtype, rtol=rtol, atol=rtol)
    check(a @ b, expected, rtol=rtol, atol=rtol)
    if len(sa) == 2 and len(sb) == 2:
        check(mx.matmul(mx.transpose(mx.transpose(a)), mx.transpose(mx.array(bn.T, dtype))),
              expected, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("dtype", [mx.float16, mx.bfloat16, mx.float32])
@pytest.mark.parametrize("rows", [1, 3, 4, 5, 16, 17, 120])
@pytest.mark.parametrize("layout", ["transposed", "row_major", "strided"])
def test_matmul_few_rows(rng, dtype, rows, layout):
    # Few rows times a matrix read in place by the small-rows kernels (a Linear's x @ W.T in
    # decode: 16-bit up to 16 rows, float32 while the rows fit in L1), next to the BLAS paths,
    # for odd K and N (vector tails) and an addmm with beta.
    K, N = 37, 29
    w, wn = make(rng, (N, K), dtype)
    x, xn = make(rng, (rows, K), dtype)
    if layout == "transposed":
        b, bn = mx.transpose(w), wn.T
    elif layout == "row_major":
        b, bn = mx.array(np.ascontiguousarray(wn.T), dtype), wn.T
    else:
        wide, widen = make(rng, (K, 2 * N), dtype)
        b, bn = wide[:, ::2], widen[:, ::2]
    expected = xn.astype(np.float64) @ bn.astype(np.float64)
    rtol = {mx.float16: 1e-2, mx.bfloat16: 5e-2, mx.float32: 1e-5}[dtype]
    check(x @ b, expected, dtype=dtype, rtol=rtol, atol=rtol)
    c, cn = make(rng, (N,), dtype)
    check(mx.addmm(c, x, b, alpha=0.5, beta=2.0), 0.5 * expected + 2.0 * cn, dtype=dtype,
          rtol=rtol, atol=rtol)
    batched, bxn = make(rng, (2, rows, K), dtype)
    check(batched @ b, bxn.astype(np.float64) @ bn.astype(np.float64), rtol=rtol, atol=rtol)


def test_matmul_errors():
    with pytest.raises(ValueError, match="matmul"):
        mx.matmul(mx.ones((2, 3)), mx.ones((4, 5)))
    with pytest.raises(ValueError):
        mx.matmul(mx.ones((2, 3)), 2.0)


def test_addmm(rng):
    a, an = make(rng, (3, 4), mx.float32)
    b, bn = make(rng, (4, 5), mx.float32)
    c, cn = make(rng, (5,), mx.float32)
    check(mx.addmm(c, a, b), cn + an @ bn, rtol=1e-5, atol=1e-5)
    check(mx.addmm(c, a, b, alpha=2.0, beta=0.5), 0.5 * cn + 2 * (an @ bn), rtol=1e-5, atol=1e-5)
    check(mx.addmm(c, a, b, 0.0, 1.0), np.broadcast_to(cn, (3, 5)))
    with pytest.raises(ValueError):
        mx.addmm(mx.ones((2,)), a, b)


def test_inner_outer_kron(rng):
    a, an = make(rng, (3, 4), mx.float32)
    b, bn = make(rng, (2, 4), mx.float32)
    v, vn = make(rng, (5,), mx.float32)
    check(mx.inner(a, b), np.inner(an, bn), rtol=1e-5, atol=1e-5)
    check(mx.inner(v, v), np.inner(vn, vn), rtol=1e-5)
    check(mx.outer(v, mx.array(an[0])), np.outer(vn, an[0]))
    check(mx.outer(a, v), np.outer(an, vn))
    check(mx.kron(a, b), np.kron(an, bn))
    check(mx.kron(v, a), np.kron(vn, an))
    i, inn = make(rng, (2, 2), mx.int32)
    check(mx.kron(i, i), np.kron(inn, inn), dtype=mx.int32)
    with pytest.raises(ValueError, match="inner"):
        mx.inner(a, v)


@pytest.mark.parametrize("axes,sb", [(2, (4, 5, 2)), (1, (5, 3, 2)), (0, (2, 2)),
                                     (([1], [0]), (4, 3, 2)), (((0, 2), (1, 0)), (5, 3, 2)),
                                     ((2, 0), (5, 6)), (([-1], [0]), (5, 3))])
def test_tensordot(rng, axes, sb):
    a, an = make(rng, (3, 4, 5), mx.float32)
    b, bn = make(rng, sb, mx.float32)
    check(mx.tensordot(a, b, axes=axes), np.tensordot(an, bn, axes), rtol=1e-5, atol=1e-5)
    check(mx.tensordot(a, b, axes), np.tensordot(an, bn, axes), rtol=1e-5, atol=1e-5)


def test_tensordot_errors():
    with pytest.raises(ValueError, match="tensordot"):
        mx.tensordot(mx.ones((2, 3)), mx.ones((4, 3)), axes=1)
    with pytest.raises(ValueError):
        mx.tensordot(mx.ones((2, 3)), mx.ones((3, 2)), axes=([0, 1], [0]))


def test_stop_gradient_depends_result_type(rng):
    x, xn = make(rng, (3,), mx.float32)
    y, _ = make(rng, (3,), mx.float32)
    check(mx.stop_gradient(x), xn)
    out = mx.depends(x, y)
    assert isinstance(out, mx.array)
    check(out, xn)
    outs = mx.depends([x, mx.exp(x)], [y])
    assert isinstance(outs, list) and len(outs) == 2
    check(outs[1], np.exp(xn.astype(np.float64)))
    assert mx.result_type(x, mx.float16) == mx.float32
    assert mx.result_type(mx.array([1], mx.int8), mx.uint8) == mx.int16
    assert mx.result_type(mx.bfloat16, mx.float16) == mx.float32
    assert mx.result_type(mx.array([True])) == mx.bool_
    with pytest.raises(TypeError):
        mx.result_type(x, "float")
    with pytest.raises(ValueError):
        mx.result_type()
    with pytest.raises(TypeError):
        mx.depends(x, 3)
