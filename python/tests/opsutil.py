"""Helpers of the op tests: random inputs with their exact NumPy values, and comparisons."""
import numpy as np

import mlx.core as mx

FLOATS = [mx.float32, mx.float16, mx.bfloat16]
INTS = [mx.int32, mx.int8, mx.uint8, mx.int64, mx.uint32]
ALL = [mx.bool_, *INTS, *FLOATS, mx.complex64]


def _broadcast(x):
    """A stride-0 view: the first entry of the last axis repeated along it."""
    if x.ndim == 0 or x.size == 0:
        return x
    return mx.broadcast_to(mx.take(x, mx.array([0]), axis=-1), x.shape)


# Layouts an op must read correctly: row-major, transposed, broadcast (stride 0), reversed.
LAYOUTS = {
    "dense": lambda x: x,
    "transposed": mx.transpose,
    "broadcast": _broadcast,
    "flipped": mx.flip,
}

_TOL = {
    mx.float32: (2e-5, 1e-6),
    mx.float16: (4e-3, 2e-3),
    mx.bfloat16: (2.5e-2, 1e-2),
    mx.float64: (1e-12, 1e-12),
    mx.complex64: (2e-5, 1e-6),
}


def make(rng, shape, dtype, low=-3.0, high=3.0):
    """A random array of `dtype` and a NumPy copy of exactly the values it holds."""
    shape = tuple(shape)
    if dtype == mx.bool_:
        v = rng.random(shape) > 0.5
    elif mx.issubdtype(dtype, mx.integer):
        lo = int(np.floor(low))
        lo = max(lo, 0) if mx.issubdtype(dtype, mx.unsignedinteger) else lo
        v = rng.integers(lo, max(int(np.ceil(high)), lo + 1), size=shape)
    elif dtype == mx.complex64:
        v = (rng.uniform(low, high, shape) + 1j * rng.uniform(low, high, shape)).astype(np.complex64)
    else:
        v = rng.uniform(low, high, shape)
    x = mx.array(np.asarray(v), dtype=dtype)
    return x, np.array(x)


def tol(dtype):
    return _TOL.get(dtype, (0, 0))


def check(out, expected, dtype=None, rtol=None, atol=None):
    """Compares an array with a NumPy reference: same shape, values within the tolerance of the
    result dtype (exact for integers and bools), NaNs in the same places."""
    assert isinstance(out, mx.array), type(out)
    if dtype is not None:
        assert out.dtype == dtype, (out.dtype, dtype)
    got = np.array(out)
    expected = np.asarray(expected)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    r, a = tol(out.dtype)
    r = r if rtol is None else rtol
    a = a if atol is None else atol
    if r == 0 and a == 0:
        np.testing.assert_array_equal(got, expected.astype(got.dtype))
    else:
        np.testing.assert_allclose(got, expected, rtol=r, atol=a, equal_nan=True)
