"""Reductions, scans, softmax and trace of mlx.core against NumPy, as functions and as array
methods: every axis form (None, int, negative, tuple), keepdims, empty arrays and bad axes."""
import numpy as np
import pytest

import mlx.core as mx
from opsutil import LAYOUTS, check, make


def _logsumexp(x, axis=None, keepdims=False):
    m = np.max(x, axis=axis, keepdims=True) if x.size else 0.0
    m = np.where(np.isfinite(m), m, 0.0)
    out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


REDUCE = {
    "sum": np.sum,
    "prod": np.prod,
    "max": np.max,
    "min": np.min,
    "mean": np.mean,
    "all": np.all,
    "any": np.any,
    "logsumexp": _logsumexp,
}
AXES = [None, 0, -1, 1, (0, 2), (-1, -3), (), (2, 0, 1)]


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.int32, mx.bool_])
@pytest.mark.parametrize("name", sorted(REDUCE))
def test_reduce(rng, name, dtype):
    if name == "logsumexp" and dtype in (mx.int32, mx.bool_):
        pytest.skip("floating point reduction")
    ref = REDUCE[name]
    x, xn = make(rng, (2, 3, 4), dtype, -2, 2)
    wide = xn.astype(np.float64) if xn.dtype.kind == "f" else xn.astype(np.int64)
    rtol = 2e-2 if dtype == mx.float16 and name in ("prod", "sum", "mean") else None
    for axis in AXES:
        for keepdims in (False, True):
            expected = ref(wide, axis=axis, keepdims=keepdims)
            check(getattr(mx, name)(x, axis=axis, keepdims=keepdims), expected, rtol=rtol)
            check(getattr(x, name)(axis, keepdims), expected, rtol=rtol)
    for layout in LAYOUTS.values():
        v = layout(x)
        vn = np.array(v).astype(wide.dtype)
        check(getattr(mx, name)(v, axis=1), ref(vn, axis=1), rtol=rtol)
    check(getattr(mx, name)(x), ref(wide), rtol=rtol)


def test_reduce_dtypes():
    i8 = mx.array([1, 2], mx.int8)
    b = mx.array([True, False])
    assert mx.sum(b).dtype == mx.int32
    assert mx.mean(mx.array([1, 2])).dtype == mx.float32
    assert mx.max(i8).dtype == mx.int8
    assert mx.all(i8).dtype == mx.bool_
    assert mx.sum(mx.array([1.0], mx.float16)).dtype == mx.float16


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name", ["sum", "prod", "all", "any", "mean", "logsumexp"])
def test_reduce_empty(name):
    x = mx.zeros((0, 3))
    xn = np.zeros((0, 3))
    with np.errstate(invalid="ignore", divide="ignore"):
        check(getattr(mx, name)(x, axis=0), REDUCE[name](xn, axis=0))
        check(getattr(mx, name)(x, axis=1), REDUCE[name](xn, axis=1))
        check(getattr(mx, name)(x), REDUCE[name](xn))


def test_reduce_scalars_and_errors():
    check(mx.sum(3), 3, dtype=mx.int32)
    check(mx.max(2.5), 2.5)
    check(mx.sum(mx.array(4.0), axis=()), 4.0)
    x = mx.ones((2, 3))
    for name in REDUCE:
        with pytest.raises(ValueError, match=name):
            getattr(mx, name)(x, axis=2)
        with pytest.raises(ValueError):
            getattr(mx, name)(x, axis=(0, 0))
        with pytest.raises(ValueError):
            getattr(x, name)(axis=-3)
    with pytest.raises(ValueError, match="max"):
        mx.max(mx.zeros((0,)))
    with pytest.raises(TypeError):
        mx.sum(x, axis="0")


@pytest.mark.parametrize("name,ref", [("var", np.var), ("std", np.std)])
@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.int32])
def test_moments(rng, name, ref, dtype):
    x, xn = make(rng, (3, 4, 5), dtype, -3, 3)
    rtol = 1e-2 if dtype == mx.float16 else 1e-5
    for axis in [None, 0, -1, (0, 2)]:
        for ddof in (0, 1):
            for keepdims in (False, True):
                expected = ref(xn.astype(np.float64), axis=axis, ddof=ddof, keepdims=keepdims)
                out = getattr(mx, name)(x, axis=axis, keepdims=keepdims, ddof=ddof)
                check(out, expected, rtol=rtol, atol=1e-5)
                check(getattr(x, name)(axis, keepdims, ddof), expected, rtol=rtol, atol=1e-5)
    with pytest.raises(ValueError):
        getattr(mx, name)(x, axis=3)


@pytest.mark.parametrize("name,ref", [("argmax", np.argmax), ("argmin", np.argmin)])
@pytest.mark.parametrize("dtype", [mx.float32, mx.int8, mx.bfloat16, mx.bool_])
def test_arg_reduce(rng, name, ref, dtype):
    x, xn = make(rng, (3, 4, 5), dtype, -50, 50)
    xn = xn.astype(np.float64) if xn.dtype.kind == "f" else xn
    for axis in [None, 0, 1, -1]:
        for keepdims in (False, True):
            expected = ref(xn, axis=axis, keepdims=keepdims)
            out = getattr(mx, name)(x, axis=axis, keepdims=keepdims)
            assert out.dtype == mx.uint32
            check(out, expected)
            check(getattr(x, name)(axis, keepdims), expected)
    check(getattr(mx, name)(mx.flip(x), axis=1), ref(np.flip(xn), axis=1))
    with pytest.raises(ValueError, match=name):
        getattr(mx, name)(x, axis=3)
    with pytest.raises(ValueError):
        getattr(mx, name)(mx.zeros((0,)))


def test_arg_reduce_ties_take_the_first():
    check(mx.argmax(mx.array([1, 3, 3, 0])), 1)
    check(mx.argmin(mx.array([[2, 0, 0], [1, 1, 5]]), axis=1), [1, 0])


def _scan_ref(name, x, axis, reverse, inclusive):
    acc = {
        "cumsum": np.cumsum,
        "cumprod": np.cumprod,
        "cummax": np.maximum.accumulate,
        "cummin": np.minimum.accumulate,
        "logcumsumexp": np.logaddexp.accumulate,
    }[name]
    if axis is None:
        x, axis = x.reshape(-1), 0
    if reverse:
        x = np.flip(x, axis)
    out = acc(x, axis=axis)
    if not inclusive:
        ident = {"cumsum": 0, "cumprod": 1, "logcumsumexp": -np.inf}.get(name)
        first = np.full_like(np.take(out, [0], axis=axis), ident)
        out = np.concatenate([first, np.delete(out, -1, axis=axis)], axis=axis)
    return np.flip(out, axis) if reverse else out


@pytest.mark.parametrize("dtype", [mx.float32, mx.int32, mx.float16])
@pytest.mark.parametrize("name", ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"])
def test_scans(rng, name, dtype):
    if name == "logcumsumexp" and dtype == mx.int32:
        pytest.skip("floating point scan")
    x, xn = make(rng, (3, 4, 5), dtype, -2, 3)
    wide = xn.astype(np.float64) if xn.dtype.kind == "f" else xn.astype(np.int64)
    rtol = 2e-2 if dtype == mx.float16 else None
    for axis in [None, 0, 1, -1]:
        for reverse in (False, True):
            inclusive_forms = (True, False) if name not in ("cummax", "cummin") else (True,)
            for inclusive in inclusive_forms:
                expected = _scan_ref(name, wide, axis, reverse, inclusive)
                out = getattr(mx, name)(x, axis=axis, reverse=reverse, inclusive=inclusive)
                check(out, expected, rtol=rtol, atol=1e-2 if rtol else None)
                meth = getattr(x, name)(axis, reverse=reverse, inclusive=inclusive)
                check(meth, expected, rtol=rtol, atol=1e-2 if rtol else None)
    check(getattr(mx, name)(mx.transpose(x), axis=0), _scan_ref(name, wide.T, 0, False, True),
          rtol=rtol, atol=1e-2 if rtol else None)
    with pytest.raises(ValueError):
        getattr(mx, name)(x, axis=3)
    with pytest.raises(TypeError):
        getattr(mx, name)(x, 0, True)  # reverse is keyword-only


def test_exclusive_max_min_start_from_the_dtype_limits():
    check(mx.cummax(mx.array([1.0, 3.0, 2.0]), inclusive=False), [-np.inf, 1, 3])
    check(mx.cummin(mx.array([1, 3, 2]), inclusive=False), [np.iinfo(np.int32).max, 1, 1])


def _softmax(x, axis):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.bfloat16])
def test_softmax(rng, dtype):
    x, xn = make(rng, (3, 4, 5), dtype, -5, 5)
    wide = xn.astype(np.float64)
    for axis in [None, -1, 0, (0, 2)]:
        for precise in (False, True):
            check(mx.softmax(x, axis=axis, precise=precise), _softmax(wide, axis), dtype=dtype)
    check(mx.softmax(x, -1), _softmax(wide, -1))
    check(mx.softmax(mx.flip(x), axis=1), _softmax(np.flip(wide), 1))
    check(mx.softmax(mx.array([-np.inf, 0.0])), [0.0, 1.0])
    with pytest.raises(ValueError, match="softmax"):
        mx.softmax(x, axis=5)


@pytest.mark.parametrize("shape,offset,axis1,axis2",
                         [((4, 5), 0, 0, 1), ((4, 5), 2, 0, 1), ((4, 5), -1, 0, 1),
                          ((3, 4, 5), 1, 1, 2), ((3, 4, 5), 0, -1, 0), ((4, 5), 7, 0, 1)])
def test_trace(rng, shape, offset, axis1, axis2):
    x, xn = make(rng, shape, mx.float32)
    expected = np.trace(xn.astype(np.float64), offset, axis1, axis2)
    check(mx.trace(x, offset, axis1, axis2), expected)
    check(mx.trace(x, offset=offset, axis1=axis1, axis2=axis2, dtype=mx.float16),
          expected.astype(np.float16), dtype=mx.float16, rtol=1e-2, atol=1e-2)
    i, inn = make(rng, shape, mx.int32, -5, 5)
    check(mx.trace(i, offset, axis1, axis2), np.trace(inn, offset, axis1, axis2))


def test_trace_errors():
    with pytest.raises(ValueError, match="trace"):
        mx.trace(mx.ones((3,)))
    with pytest.raises(ValueError):
        mx.trace(mx.ones((3, 3)), axis1=0, axis2=0)
