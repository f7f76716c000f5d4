"""Composite ops against NumPy: diff, median, count_nonzero, vecdot, positive, asarray, the
window functions, can_cast and isdtype."""
import numpy as np
import pytest

import mlx.core as mx
from opsutil import ALL, FLOATS, INTS, LAYOUTS, check, make


# diff


@pytest.mark.parametrize("dtype", [mx.float32, mx.float64, mx.int32, mx.int64, mx.float16, mx.bool_])
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_diff_matches_numpy(rng, dtype, layout):
    x, _ = make(rng, (5, 6), dtype)
    x = LAYOUTS[layout](x)
    ref = np.array(x)
    for n in (0, 1, 2, 5, 6, 8):
        for axis in (-1, 0, 1, -2):
            check(mx.diff(x, n, axis), np.diff(ref, n, axis), dtype=dtype)
    check(mx.diff(x, n=2, axis=0), np.diff(ref, n=2, axis=0))


def test_diff_edges_and_errors():
    check(mx.diff(mx.array([3.0])), np.diff(np.array([3.0], np.float32)))
    check(mx.diff(mx.zeros((2, 0))), np.zeros((2, 0), np.float32))
    check(mx.diff(mx.array([5, 3], mx.uint8)), np.diff(np.array([5, 3], np.uint8)), dtype=mx.uint8)
    assert mx.diff(mx.array([1.0, 2.0]), 0).tolist() == [1.0, 2.0]
    with pytest.raises(ValueError, match=r"\[diff\]"):
        mx.diff(mx.array([1.0, 2.0]), -1)
    with pytest.raises(ValueError, match=r"\[diff\]"):
        mx.diff(mx.array(1.0))
    with pytest.raises(ValueError, match=r"diff"):
        mx.diff(mx.zeros((2, 3)), 1, 2)


# median


@pytest.mark.parametrize("dtype", [mx.float32, mx.float64, mx.int32, mx.uint8, mx.float16, mx.bfloat16])
@pytest.mark.parametrize("shape", [(7,), (4, 6), (3, 4, 5)])
def test_median_matches_numpy(rng, dtype, shape):
    x, ref = make(rng, shape, dtype)
    out_dtype = dtype if mx.issubdtype(dtype, mx.floating) else mx.float32
    ref = ref.astype(np.float64)
    axes = [None, 0, -1, tuple(range(len(shape)))]
    if len(shape) == 3:
        axes += [(0, 2), [2, 1]]
    for axis in axes:
        for keepdims in (False, True):
            out = mx.median(x, axis, keepdims)
            check(out, np.median(ref, axis=axis, keepdims=keepdims), dtype=out_dtype)
    check(mx.median(x.T, axis=0), np.median(ref.T, axis=0), dtype=out_dtype)


def test_median_nan_empty_errors():
    x = np.array([[1.0, np.nan, 3.0, 4.0], [4.0, 1.0, 2.0, 3.0]], np.float32)
    check(mx.median(mx.array(x), axis=1), np.median(x, axis=1))
    check(mx.median(mx.array([True, False, True])), np.array(1.0, np.float32), dtype=mx.float32)
    out = mx.median(mx.zeros((2, 0)), axis=1)
    assert out.shape == (2,) and np.isnan(np.array(out)).all()
    with pytest.raises(ValueError, match="median"):
        mx.median(mx.zeros((2, 3)), axis=2)
    with pytest.raises(TypeError):
        mx.median(mx.zeros((2, 3)), axis="x")


# count_nonzero


@pytest.mark.parametrize("dtype", ALL)
def test_count_nonzero_matches_numpy(rng, dtype):
    x, ref = make(rng, (4, 5, 3), dtype, low=-1, high=2)
    for axis in (None, 0, -1, (0, 2), (0, 1, 2)):
        for keepdims in (False, True):
            out = mx.count_nonzero(x, axis=axis, keepdims=keepdims)
            check(out, np.count_nonzero(ref, axis=axis, keepdims=keepdims), dtype=mx.int32)
    check(mx.count_nonzero(x.T, axis=0), np.count_nonzero(ref.T, axis=0))


def test_count_nonzero_keyword_only_and_empty():
    with pytest.raises(TypeError):
        mx.count_nonzero(mx.zeros((2, 3)), 0)
    check(mx.count_nonzero(mx.zeros((0, 3)), axis=0), np.zeros(3, np.int32), dtype=mx.int32)
    check(mx.count_nonzero(mx.array([np.nan, 0.0, -0.0])), np.array(1, np.int32))


# vecdot


@pytest.mark.parametrize("dtype", [mx.float32, mx.int32, mx.complex64, mx.float16])
def test_vecdot_matches_numpy(rng, dtype):
    a, ra = make(rng, (3, 1, 4), dtype)
    b, rb = make(rng, (5, 4), dtype)
    check(mx.vecdot(a, b), np.vecdot(ra, rb), dtype=dtype)
    a2, ra2 = make(rng, (4, 3), dtype)
    b2, rb2 = make(rng, (4, 3), dtype)
    check(mx.vecdot(a2, b2, axis=0), np.vecdot(ra2, rb2, axis=0))
    check(mx.vecdot(a2.T, b2.T, axis=-1), np.vecdot(ra2.T, rb2.T, axis=-1))


def test_vecdot_signature_and_errors():
    with pytest.raises(TypeError):
        mx.vecdot(mx.ones((3,)), mx.ones((3,)), 0)  # axis is keyword-only
    with pytest.raises(ValueError, match="vecdot"):
        mx.vecdot(mx.ones((2, 3)), mx.ones((4,)))
    with pytest.raises(ValueError, match="vecdot"):
        mx.vecdot(mx.ones((3,)), mx.ones((3,)), axis=1)
    check(mx.vecdot(mx.ones((2, 0)), mx.ones((0,))), np.zeros(2, np.float32))


# positive, asarray


@pytest.mark.parametrize("dtype", [d for d in ALL if d != mx.bool_])
def test_positive(rng, dtype):
    x, ref = make(rng, (3, 4), dtype)
    check(mx.positive(x), np.positive(ref), dtype=dtype)
    check(mx.positive(2.5), np.array(2.5, np.float32))


def test_positive_bool_raises():
    with pytest.raises(ValueError, match="positive"):
        mx.positive(mx.array([True]))


def test_asarray():
    x = mx.array([1, 2, 3])
    assert mx.asarray(x) is x
    assert mx.asarray(x, mx.int32) is x
    y = mx.asarray(x, mx.float32)
    assert y.dtype == mx.float32 and y.tolist() == [1.0, 2.0, 3.0]
    z = mx.asarray(x, copy=True)
    assert z is not x and z.tolist() == [1, 2, 3]
    with pytest.raises(ValueError, match="asarray"):
        mx.asarray(x, mx.float32, copy=False)
    assert mx.asarray([1.5, 2.5]).dtype == mx.float32
    assert mx.asarray(3).dtype == mx.int32
    assert mx.asarray([1, 2], dtype=mx.int64).dtype == mx.int64
    with pytest.raises(ValueError, match="asarray"):
        mx.asarray([1, 2], copy=False)
    n = np.arange(6, dtype=np.float32).reshape(2, 3)
    check(mx.asarray(n), n, dtype=mx.float32)
    check(mx.asarray(n, mx.int32), n.astype(np.int32), dtype=mx.int32)
    check(mx.asarray(n[:, ::2], copy=True), n[:, ::2])
    check(mx.asarray(n, copy=False), n)


# windows


@pytest.mark.parametrize("name", ["hanning", "hamming", "blackman", "bartlett"])
def test_windows_match_numpy(name):
    fn = getattr(mx, name)
    for M in (-2, 0, 1, 2, 3, 4, 7, 12, 51, 256):
        out = fn(M)
        assert out.dtype == mx.float32
        check(out, getattr(np, name)(M), rtol=1e-6, atol=1e-6)
    assert fn(M=5).shape == (5,)
    with pytest.raises(TypeError):
        fn(2.5)


# can_cast, isdtype


def test_can_cast():
    assert mx.can_cast(mx.int8, mx.int32)
    assert mx.can_cast(mx.uint8, mx.int16)
    assert mx.can_cast(mx.bool_, mx.float16)
    assert mx.can_cast(mx.float32, mx.complex64)
    assert not mx.can_cast(mx.float32, mx.int32)
    assert not mx.can_cast(mx.int64, mx.int32)
    assert not mx.can_cast(mx.complex64, mx.float32)
    assert mx.can_cast(mx.array([1], mx.int16), mx.int32)
    assert not mx.can_cast(mx.array([1.0]), mx.int32)
    assert mx.can_cast(from_=mx.int8, to=mx.int16)
    # Agrees with NumPy's safe casting wherever MLX's promotion follows NumPy's.
    same = [mx.bool_, mx.uint8, mx.uint16, mx.int8, mx.int16, mx.int32, mx.int64, mx.float32,
            mx.float64]
    npd = {mx.bool_: np.bool_, mx.uint8: np.uint8, mx.uint16: np.uint16, mx.int8: np.int8,
           mx.int16: np.int16, mx.int32: np.int32, mx.int64: np.int64, mx.float32: np.float32,
           mx.float64: np.float64}
    for a in same:
        for b in same:
            if a in (mx.int32, mx.int64) and b == mx.float32:
                continue  # MLX promotes int32/int64 with float32 to float32, NumPy to float64
            assert mx.can_cast(a, b) == np.can_cast(npd[a], npd[b]), (a, b)


def test_isdtype():
    assert mx.isdtype(mx.bool_, "bool")
    assert not mx.isdtype(mx.bool_, "numeric")
    assert mx.isdtype(mx.int16, "signed integer")
    assert not mx.isdtype(mx.uint16, "signed integer")
    assert mx.isdtype(mx.uint32, "unsigned integer")
    assert mx.isdtype(mx.uint32, "integral") and mx.isdtype(mx.int64, "integral")
    assert mx.isdtype(mx.bfloat16, "real floating")
    assert mx.isdtype(mx.complex64, "complex floating")
    assert not mx.isdtype(mx.complex64, "real floating")
    assert mx.isdtype(mx.float16, "numeric")
    assert mx.isdtype(mx.float32, mx.float32)
    assert not mx.isdtype(mx.float32, mx.float16)
    assert mx.isdtype(mx.float32, ("integral", mx.float32))
    assert mx.isdtype(mx.int8, ("bool", "integral"))
    assert not mx.isdtype(mx.float32, ("bool", "integral", mx.float16))
    with pytest.raises(ValueError, match="isdtype"):
        mx.isdtype(mx.float32, "floating")
