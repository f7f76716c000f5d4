"""mx.einsum and mx.einsum_path against np.einsum / np.einsum_path."""
import numpy as np
import pytest

import mlx.core as mx
from opsutil import check

# (subscripts, operand shapes)
CASES = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("ij,kj->ik", [(3, 4), (5, 4)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("bij,bjk->kbi", [(2, 3, 4), (2, 4, 5)]),
    ("i,i", [(6,), (6,)]),
    ("i,i->i", [(6,), (6,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("i,j", [(3,), (4,)]),
    ("ij->ji", [(3, 4)]),
    ("ji", [(3, 4)]),
    ("ijk->kji", [(2, 3, 4)]),
    ("ii", [(4, 4)]),
    ("ii->i", [(4, 4)]),
    ("iij->j", [(3, 3, 2)]),
    ("iji->ij", [(3, 2, 3)]),
    ("ij->", [(3, 4)]),
    ("ij->i", [(3, 4)]),
    ("ij", [(3, 4)]),
    ("abcd,cdbe->ae", [(2, 3, 4, 5), (4, 5, 3, 2)]),
    ("bA,aB", [(2, 3), (4, 5)]),
    ("ij,jk,kl->il", [(3, 4), (4, 5), (5, 2)]),
    ("ij,jk,kl", [(5, 8), (8, 10), (10, 7)]),
    ("ab,bc,cd,da->", [(2, 3), (3, 4), (4, 5), (5, 2)]),
    ("ea,fb,abcd,gc,hd->efgh", [(2, 3), (2, 2), (3, 2, 2, 3), (3, 2), (2, 3)]),
    ("ii,ij,jk->k", [(3, 3), (3, 4), (4, 2)]),
    ("i,j,k", [(2,), (3,), (4,)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
    ("...ij,...jk", [(2, 3, 4), (4, 5)]),
    ("i...->...", [(3, 2, 4)]),
    ("...ii->...i", [(2, 3, 3)]),
    ("...,...", [(2, 3), (3,)]),
    ("i...,i...->...", [(2, 3), (2, 1)]),
    ("...", [(2, 3)]),
    ("...ij->j...i", [(2, 5, 3, 4)]),
    ("a...b,b...c->...ac", [(2, 3, 4), (4, 1, 5)]),
    (",ij->ij", [(), (2, 3)]),
    (",", [(), ()]),
    ("", [()]),
    ("ij,jk->ik", [(2, 0), (0, 3)]),
    ("ij,jk->ik", [(0, 4), (4, 3)]),
    ("bij,bjk->bik", [(0, 2, 3), (0, 3, 4)]),
    ("i->", [(0,)]),
    ("ij , jk -> ik", [(3, 4), (4, 5)]),
]


def _operands(rng, shapes, np_dtype):
    if np.issubdtype(np_dtype, np.integer):
        return [rng.integers(-5, 6, size=s).astype(np_dtype) for s in shapes]
    return [rng.uniform(-1, 1, size=s).astype(np_dtype) for s in shapes]


@pytest.mark.parametrize("subscripts,shapes", CASES)
@pytest.mark.parametrize(
    "dtype,np_dtype",
    [(mx.float32, np.float32), (mx.float16, np.float16), (mx.int32, np.int32)],
)
def test_matches_numpy(rng, subscripts, shapes, dtype, np_dtype):
    ops = _operands(rng, shapes, np_dtype)
    out = mx.einsum(subscripts, *[mx.array(o) for o in ops])
    ref = np.einsum(subscripts, *[o.astype(np.float64) for o in ops])
    rtol = {mx.float32: 1e-5, mx.float16: 5e-3, mx.int32: 0}[dtype]
    check(out, ref.astype(np.float64), dtype=dtype, rtol=rtol, atol=rtol)
    assert out.shape == np.einsum(subscripts, *ops).shape


def test_non_contiguous_inputs(rng):
    a = rng.standard_normal((6, 5)).astype(np.float32).T  # transposed
    b = rng.standard_normal((12, 4)).astype(np.float32)[::2]  # stepped rows
    c = rng.standard_normal((4, 7)).astype(np.float32)[::-1, ::-1]  # reversed
    out = mx.einsum("ij,jk,kl->il", mx.array(a), mx.array(b), mx.array(c))
    check(out, np.einsum("ij,jk,kl->il", a, b, c), rtol=1e-5, atol=1e-5)
    x = mx.array(rng.standard_normal((5, 6)).astype(np.float32))
    xt = mx.transpose(x)
    ref = np.einsum("ij,jk", np.array(xt), np.array(x))
    check(mx.einsum("ij,jk", xt, x), ref, rtol=1e-5, atol=1e-5)
    sl = x[::2, ::-1]
    check(mx.einsum("ij->ji", sl), np.array(sl).T)


def test_mixed_dtypes_promote(rng):
    a = mx.array(rng.integers(-3, 3, (3, 4)).astype(np.int32))
    b = mx.array(rng.standard_normal((4, 2)).astype(np.float16))
    out = mx.einsum("ij,jk", a, b)
    assert out.dtype == mx.float16
    i8 = mx.full((2, 2), 100, mx.int8)
    s = mx.einsum("ij->", i8)
    assert s.dtype == mx.int8
    assert s.item() == np.einsum("ij->", np.full((2, 2), 100, np.int8))


def test_broadcast_size_one(rng):
    a, b = rng.standard_normal(1), rng.standard_normal(3)
    check(mx.einsum("i,i->i", mx.array(a), mx.array(b)), (a * b).astype(np.float32), rtol=1e-5)


def test_stream_keyword(rng):
    a = mx.array(rng.standard_normal((3, 4)).astype(np.float32))
    out = mx.einsum("ij->ji", a, stream=mx.cpu)
    check(out, np.array(a).T)


def test_large_contraction(rng):
    a = rng.standard_normal((8, 128, 96)).astype(np.float32)
    b = rng.standard_normal((8, 96, 64)).astype(np.float32)
    out = mx.einsum("bij,bjk->bik", mx.array(a), mx.array(b))
    check(out, np.einsum("bij,bjk->bik", a, b), rtol=1e-4, atol=1e-4)


def test_grad_matches_matmul(rng):
    a = mx.array(rng.standard_normal((2, 3, 4)).astype(np.float32))
    b = mx.array(rng.standard_normal((2, 4, 5)).astype(np.float32))
    ga, gb = mx.grad(lambda x, y: mx.einsum("bij,bjk->bik", x, y).sum(), argnums=(0, 1))(a, b)
    ra, rb = mx.grad(lambda x, y: (x @ y).sum(), argnums=(0, 1))(a, b)
    check(ga, np.array(ra), rtol=1e-5, atol=1e-5)
    check(gb, np.array(rb), rtol=1e-5, atol=1e-5)


def test_grad_finite_differences(rng):
    x = rng.standard_normal((3, 3))
    w = mx.array(rng.standard_normal((3, 4)).astype(np.float32))

    def f(m):
        return mx.einsum("ii,ij->j", m, w).sum()

    g = np.array(mx.grad(f)(mx.array(x.astype(np.float32))))
    eps = 1e-3
    fd = np.zeros_like(x)
    for i in range(3):
        for j in range(3):
            d = np.zeros_like(x)
            d[i, j] = eps
            hi = f(mx.array((x + d).astype(np.float32))).item()
            lo = f(mx.array((x - d).astype(np.float32))).item()
            fd[i, j] = (hi - lo) / (2 * eps)
    np.testing.assert_allclose(g, fd, rtol=1e-2, atol=1e-2)


def test_vmap(rng):
    a = mx.array(rng.standard_normal((3, 4, 5)).astype(np.float32))
    b = mx.array(rng.standard_normal((5, 2)).astype(np.float32))
    out = mx.vmap(lambda x: mx.einsum("ij,jk->ik", x, b))(a)
    check(out, np.einsum("bij,jk->bik", np.array(a), np.array(b)), rtol=1e-5, atol=1e-5)


def test_path():
    z = mx.zeros
    path, info = mx.einsum_path("ii", z((5, 5)))
    assert path == [(0,)]
    assert isinstance(info, str)
    assert mx.einsum_path("ij->i", z((5, 5)))[0] == [(0,)]
    assert mx.einsum_path("ij,jk", z((5, 8)), z((8, 3)))[0] == [(0, 1)]
    assert mx.einsum_path("ij,jk,kl", z((5, 8)), z((8, 3)), z((3, 7)))[0] == [(0, 1), (0, 1)]
    path, info = mx.einsum_path("ij,jk,kl", z((5, 8)), z((8, 10)), z((10, 7)))
    assert path == [(1, 2), (0, 1)]
    # NumPy's greedy path agrees on these.
    np_ops = [np.zeros((5, 8)), np.zeros((8, 10)), np.zeros((10, 7))]
    np_path = np.einsum_path("ij,jk,kl", *np_ops, optimize="greedy")[0]
    assert [tuple(p) for p in np_path[1:]] == path
    assert "Complete contraction:  ij,jk,kl->il" in info


@pytest.mark.parametrize(
    "subscripts,shapes",
    [
        ("ij,jk->ik", [(2, 3)]),  # operand count
        ("ij", [(2, 3), (2, 3)]),
        ("i1", [(2, 3)]),  # invalid character
        ("i.j", [(2, 3)]),
        ("ij->k", [(2, 3)]),  # output not in inputs
        ("ij->ii", [(2, 3)]),  # repeated output
        ("ij,ij->ij", [(2, 3), (3, 3)]),  # dimension mismatch
        ("ii", [(2, 3)]),
        ("ijk", [(2, 3)]),  # subscript count
        ("...i...", [(2, 3)]),  # two ellipses
        ("...ij->ij", [(2, 2, 3)]),
    ],
)
def test_errors(subscripts, shapes):
    ops = [mx.zeros(s) for s in shapes]
    with pytest.raises(ValueError, match=r"\[einsum\]"):
        mx.einsum(subscripts, *ops)
    with pytest.raises(ValueError, match=r"\[einsum\]"):
        mx.einsum_path(subscripts, *ops)


def test_type_errors():
    with pytest.raises(TypeError):
        mx.einsum("i", [1.0, 2.0])
    with pytest.raises(TypeError):
        mx.einsum(3, mx.zeros(2))
