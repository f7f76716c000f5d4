"""Ops and parameters added for MLX API completeness: array-API aliases, linspace(endpoint),
scan dtypes, *_like dtypes, var/std correction, minmax, matrix_transpose / mT,
searchsorted, unique, fp8 conversions and get_array_buffer_size."""
import math

import numpy as np
import pytest

import mlx.core as mx
from opsutil import FLOATS, INTS, check, make


@pytest.mark.parametrize(
    "alias,name",
    [
        ("acos", "arccos"),
        ("asin", "arcsin"),
        ("atan", "arctan"),
        ("acosh", "arccosh"),
        ("asinh", "arcsinh"),
        ("atanh", "arctanh"),
        ("atan2", "arctan2"),
        ("pow", "power"),
        ("bitwise_left_shift", "left_shift"),
        ("bitwise_right_shift", "right_shift"),
        ("cumulative_sum", "cumsum"),
        ("cumulative_prod", "cumprod"),
        ("empty", "zeros"),
        ("empty_like", "zeros_like"),
        ("ascontiguous", "contiguous"),
    ],
)
def test_aliases_are_the_same_function(alias, name):
    assert getattr(mx, alias) is getattr(mx, name)


def test_alias_values_match_numpy(rng):
    x = rng.uniform(-0.9, 0.9, (5,))
    check(mx.acos(mx.array(x)), np.arccos(x))
    check(mx.atan2(mx.array(x), mx.array(x[::-1].copy())), np.arctan2(x, x[::-1]))
    check(mx.pow(mx.array([2, 3]), 3), np.array([8, 27]), dtype=mx.int32)
    check(mx.bitwise_left_shift(mx.array([1, 2]), 2), np.array([4, 8]))
    assert mx.matrix_norm is mx.linalg.norm


@pytest.mark.parametrize("num", [0, 1, 2, 5, 50])
@pytest.mark.parametrize("endpoint", [True, False])
def test_linspace_endpoint(num, endpoint):
    out = mx.linspace(-1.5, 3.0, num, endpoint=endpoint)
    check(out, np.linspace(-1.5, 3.0, num, endpoint=endpoint), dtype=mx.float32)


def test_linspace_endpoint_dtype_and_errors():
    out = mx.linspace(0, 10, 5, endpoint=False, dtype=mx.int32)
    check(out, np.array([0, 2, 4, 6, 8]), dtype=mx.int32)
    with pytest.raises(ValueError, match="linspace"):
        mx.linspace(0, 1, -1, endpoint=False)


@pytest.mark.parametrize("fn,ref", [(mx.cumsum, np.cumsum), (mx.cumprod, np.cumprod)])
def test_scan_dtype(fn, ref, rng):
    x, xn = make(rng, (3, 4), mx.int8, low=-2, high=3)
    out = fn(x, axis=1, dtype=mx.int32)
    check(out, ref(xn.astype(np.int32), axis=1), dtype=mx.int32)
    out = x.cumsum(dtype=mx.float32) if fn is mx.cumsum else x.cumprod(dtype=mx.float32)
    check(out, ref(xn.astype(np.float32)), dtype=mx.float32)
    # The dtype composes with reverse / inclusive.
    out = fn(x, axis=0, reverse=True, inclusive=False, dtype=mx.int64)
    assert out.dtype == mx.int64


def test_scan_dtype_gradient():
    x = mx.array([1.0, 2.0, 3.0], dtype=mx.float32)
    g = mx.grad(lambda x: mx.cumsum(x, dtype=mx.float32).sum())(x)
    check(g, np.array([3.0, 2.0, 1.0]))


@pytest.mark.parametrize("fn,val", [(mx.zeros_like, 0), (mx.ones_like, 1), (mx.empty_like, 0)])
@pytest.mark.parametrize("dtype", [None, mx.int16, mx.bfloat16, mx.bool_])
def test_like_dtype(fn, val, dtype):
    a = mx.array([[1.5, 2.5]], dtype=mx.float16)
    out = fn(a, dtype=dtype) if dtype is not None else fn(a)
    assert out.shape == (1, 2)
    assert out.dtype == (dtype or mx.float16)
    assert np.all(np.array(out.astype(mx.float32)) == val)
    assert mx.empty((2, 3), dtype=mx.int32).tolist() == [[0, 0, 0], [0, 0, 0]]


@pytest.mark.parametrize("fn,ref", [(mx.var, np.var), (mx.std, np.std)])
def test_var_std_correction(fn, ref, rng):
    x, xn = make(rng, (4, 5), mx.float32)
    check(fn(x, axis=1, correction=1), ref(xn.astype(np.float64), axis=1, ddof=1))
    # correction wins over ddof, and the method takes it too.
    check(fn(x, ddof=0, correction=2), ref(xn.astype(np.float64), ddof=2))
    method = x.var if fn is mx.var else x.std
    check(method(axis=0, correction=1), ref(xn.astype(np.float64), axis=0, ddof=1))


@pytest.mark.parametrize("dtype", [mx.float32, mx.int32, mx.uint8, mx.bfloat16])
@pytest.mark.parametrize("axis", [None, 0, -1, [0, 1]])
@pytest.mark.parametrize("keepdims", [False, True])
def test_minmax(dtype, axis, keepdims, rng):
    x, xn = make(rng, (3, 4), dtype)
    lo, hi = mx.minmax(x, axis=axis, keepdims=keepdims)
    ax = tuple(axis) if isinstance(axis, list) else axis
    check(lo, np.min(xn, axis=ax, keepdims=keepdims), dtype=dtype)
    check(hi, np.max(xn, axis=ax, keepdims=keepdims), dtype=dtype)


def test_minmax_gradient():
    x = mx.array([3.0, -1.0, 2.0])
    g = mx.grad(lambda x: mx.minmax(x)[1] - 2 * mx.minmax(x)[0])(x)
    check(g, np.array([1.0, -2.0, 0.0]))


def test_matrix_transpose_and_mT(rng):
    x, xn = make(rng, (2, 3, 4), mx.float32)
    check(mx.matrix_transpose(x), np.swapaxes(xn, -1, -2))
    check(x.mT, np.swapaxes(xn, -1, -2))
    check(mx.matrix_transpose(x.T), np.swapaxes(xn.T, -1, -2))
    for bad in (mx.array(1.0), mx.array([1.0, 2.0])):
        with pytest.raises(ValueError, match="matrix_transpose"):
            mx.matrix_transpose(bad)
        with pytest.raises(ValueError, match="matrix_transpose"):
            bad.mT


@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("dtype", [mx.float32, mx.int32, mx.uint8, mx.float16])
@pytest.mark.parametrize("n", [0, 1, 2, 7, 64, 100])
def test_searchsorted_matches_numpy(side, dtype, n, rng):
    seq = np.sort(rng.integers(0, 20, n)).astype(np.float64)
    values = rng.integers(-2, 23, (3, 5)).astype(np.float64)
    s = mx.array(seq, dtype=dtype)
    v = mx.array(values, dtype=dtype)
    out = mx.searchsorted(s, v, side=side)
    check(out, np.searchsorted(np.array(s), np.array(v), side=side), dtype=mx.uint32)


def test_searchsorted_doc_example_scalars_and_errors():
    a = mx.array([1, 2, 2, 4])
    assert mx.searchsorted(a, mx.array([0, 2, 3, 5])).tolist() == [0, 1, 3, 4]
    assert mx.searchsorted(a, mx.array([0, 2, 3, 5]), side="right").tolist() == [0, 3, 3, 4]
    # A scalar value, a Python float against an integer sequence, and non-contiguous input.
    assert mx.searchsorted(a, 2).item() == 1
    assert mx.searchsorted(a, 2.5).item() == 3
    assert mx.searchsorted(mx.arange(10)[::2], mx.array([3, 4])).tolist() == [2, 2]
    with pytest.raises(ValueError, match="searchsorted"):
        mx.searchsorted(a, a, side="middle")
    with pytest.raises(ValueError, match="1-D"):
        mx.searchsorted(mx.zeros((2, 2)), a)


def _np_unique(x, size, fill):
    vals, idx, inv, counts = np.unique(x.ravel(), return_index=True, return_inverse=True,
                                       return_counts=True)
    k = len(vals)
    out_vals = np.full(size, fill, dtype=x.dtype)
    out_idx = np.zeros(size, np.uint32)
    out_counts = np.zeros(size, np.uint32)
    m = min(k, size)
    out_vals[:m] = vals[:m]
    out_idx[:m] = idx[:m]
    out_counts[:m] = counts[:m]
    out_inv = np.minimum(inv.reshape(x.shape), max(size - 1, 0)).astype(np.uint32)
    return out_vals, out_idx, out_inv, out_counts


@pytest.mark.parametrize("dtype", [mx.int32, mx.float32, mx.uint8, mx.int64, mx.bfloat16])
@pytest.mark.parametrize("size", [1, 3, 6, 12])
def test_unique_matches_numpy(dtype, size, rng):
    x, xn = make(rng, (2, 5), dtype, low=0, high=6)
    vals, idx, inv, counts = mx.unique(
        x, size, return_index=True, return_inverse=True, return_counts=True, fill_value=99
    )
    rv, ri, rinv, rc = _np_unique(xn, size, 99)
    check(vals, rv, dtype=dtype)
    check(idx, ri, dtype=mx.uint32)
    check(inv, rinv, dtype=mx.uint32)
    check(counts, rc, dtype=mx.uint32)
    if size >= len(np.unique(xn)):
        # Not truncated: the counts add up and the inverse rebuilds the input.
        assert int(mx.sum(counts).item()) == xn.size
        check(mx.take(vals, inv), xn, dtype=dtype)


def test_unique_defaults_bool_nan_empty_and_errors():
    x = mx.array([3, 1, 3, 2])
    out = mx.unique(x, 5)
    assert isinstance(out, mx.array)
    # The padding defaults to the smallest element.
    assert out.tolist() == [1, 2, 3, 1, 1]
    assert mx.unique(mx.array([True, False, True]), 2, stream=mx.cpu).tolist() == [False, True]
    f = mx.unique(mx.array([np.nan, 1.0, np.nan]), 3, return_counts=True)
    assert f[0].tolist()[0] == 1.0 and math.isnan(f[0].tolist()[1])
    assert f[1].tolist() == [1, 2, 0]
    e = mx.unique(mx.zeros((0,)), 2, return_inverse=True, return_counts=True, fill_value=7)
    assert e[0].tolist() == [7, 7] and e[1].shape == (0,) and e[2].tolist() == [0, 0]
    assert mx.unique(x, 0).shape == (0,)
    with pytest.raises(ValueError, match="unique"):
        mx.unique(x, -1)
    with pytest.raises(ValueError, match="unique"):
        mx.unique(mx.array([1 + 1j]), 1)


def _fp8_table():
    """Every E4M3 code decoded from the bit fields (NumPy float64)."""
    out = np.empty(256)
    for code in range(256):
        e, m = (code >> 3) & 15, code & 7
        v = (m / 8) * 2.0**-6 if e == 0 else (1 + m / 8) * 2.0 ** (e - 7)
        if code & 127 == 127:
            v = np.nan
        out[code] = -v if code & 128 else v
    return out


def test_from_fp8_every_code():
    table = _fp8_table()
    codes = mx.arange(256).astype(mx.uint8)
    for dtype in (mx.float32, mx.float16, mx.bfloat16):
        out = mx.from_fp8(codes, dtype=dtype)
        assert out.dtype == dtype
        np.testing.assert_array_equal(np.array(out.astype(mx.float32)), table.astype(np.float32))
    assert mx.from_fp8(codes).dtype == mx.bfloat16
    assert mx.from_fp8(mx.array(0x38, dtype=mx.uint8), dtype=mx.float32).item() == 1.0
    assert mx.from_fp8(mx.array(0x7E, dtype=mx.uint8), dtype=mx.float32).item() == 448.0


def _nearest_code(x, table):
    """Round to nearest E4M3 value, ties to the even code, saturating at +-448."""
    finite = np.where(np.isnan(table), np.inf, table)
    out = []
    for v in x:
        if np.isnan(v):
            out.append(0x7F)
            continue
        v = np.clip(v, -448, 448)
        d = np.abs(finite - v)
        best = np.flatnonzero(d == d.min())
        # Prefer the sign of v for zero, then the even mantissa.
        best = [c for c in best if (c >> 7) == (np.signbit(v))] or list(best)
        even = [c for c in best if c % 2 == 0]
        out.append((even or best)[0])
    return np.array(out, np.uint8)


def test_to_fp8_round_trip_rounding_and_saturation(rng):
    table = _fp8_table()
    codes = np.array([c for c in range(256) if c & 127 != 127], np.uint8)
    back = mx.to_fp8(mx.from_fp8(mx.array(codes), dtype=mx.float32))
    np.testing.assert_array_equal(np.array(back), codes)
    # Random values over the whole range, midpoints, and saturation.
    x = np.concatenate([
        rng.uniform(-500, 500, 300),
        rng.uniform(-0.02, 0.02, 300),
        (table[1:126] + table[2:127]) / 2,  # ties between neighbours
        [1e6, -1e6, np.inf, -np.inf, np.nan, 0.0, -0.0, 2.0**-10, 2.0**-11],
    ]).astype(np.float32)
    got = np.array(mx.to_fp8(mx.array(x)))
    np.testing.assert_array_equal(got, _nearest_code(x.astype(np.float64), table))
    for dtype in (mx.float16, mx.bfloat16):
        y = mx.array(x[:300]).astype(dtype)
        expect = _nearest_code(np.array(y.astype(mx.float32)).astype(np.float64), table)
        np.testing.assert_array_equal(np.array(mx.to_fp8(y)), expect)
    assert mx.to_fp8(mx.array([[1.0, 2.0]])).shape == (1, 2)
    assert mx.to_fp8(mx.array([1.0])).dtype == mx.uint8


def test_fp8_errors():
    with pytest.raises(ValueError, match="to_fp8"):
        mx.to_fp8(mx.array([1, 2]))
    with pytest.raises(ValueError, match="from_fp8"):
        mx.from_fp8(mx.array([1.0]))
    with pytest.raises(ValueError, match="from_fp8"):
        mx.from_fp8(mx.array([1], dtype=mx.uint8), dtype=mx.int32)


def test_get_array_buffer_size():
    a = mx.zeros((256,), dtype=mx.float32)
    b = mx.ones((3, 5), dtype=mx.int8)
    mx.eval(a, b)
    size_a = mx.get_array_buffer_size(a)
    assert size_a >= a.nbytes
    # Views share the buffer, trees are walked, other leaves ignored.
    view = a[10:20]
    mx.eval(view)
    assert mx.get_array_buffer_size(a, view) == size_a
    total = mx.get_array_buffer_size({"x": [a, b], "n": 3, "s": "text"})
    assert total == size_a + mx.get_array_buffer_size(b)
    assert mx.get_array_buffer_size() == 0
    with pytest.raises(ValueError, match="evaluated"):
        mx.get_array_buffer_size(mx.exp(mx.ones((4,))) + 1)


@pytest.mark.parametrize(
    "name,ref",
    [("arcsin", np.arcsin), ("arccos", np.arccos), ("arctan", np.arctan),
     ("arcsinh", np.arcsinh), ("arccosh", np.arccosh), ("arctanh", np.arctanh)],
)
def test_complex_inverse_trig_matches_numpy(name, ref, rng):
    z = (rng.uniform(-3, 3, 200) + 1j * rng.uniform(-3, 3, 200)).astype(np.complex64)
    # The branch cuts (real inputs outside [-1, 1], imaginary ones outside [-i, i]) with both
    # signs of zero, and the points around them.
    cuts = np.array([2, -2, 0.5, -0.5, 1.5j, -1.5j, 3j, 0.25j], np.complex128)
    extra = np.concatenate([cuts + 0j, np.conj(cuts), cuts + 1e-3, cuts - 1e-3j])
    z = np.concatenate([z, extra.astype(np.complex64)])
    out = getattr(mx, name)(mx.array(z))
    assert out.dtype == mx.complex64
    expect = ref(z.astype(np.complex128))
    np.testing.assert_allclose(np.array(out), expect, rtol=2e-5, atol=2e-5)
    # The array API's alias takes complex input too, and real input is unchanged.
    alias = {"arcsin": "asin", "arccos": "acos", "arctan": "atan",
             "arcsinh": "asinh", "arccosh": "acosh", "arctanh": "atanh"}[name]
    np.testing.assert_allclose(np.array(getattr(mx, alias)(mx.array(z[:5]))), expect[:5],
                               rtol=2e-5, atol=2e-5)
    assert getattr(mx, name)(mx.array([0.5])).dtype == mx.float32


def test_arange_with_stop_none():
    assert mx.arange(start=3, stop=None).tolist() == [0, 1, 2]
    out = mx.arange(1, None, 0.5)
    assert out.dtype == mx.float32 and out.tolist() == [0.0, 0.5]
    assert mx.arange(2, None, dtype=mx.int64).dtype == mx.int64
