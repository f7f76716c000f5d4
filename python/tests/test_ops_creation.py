"""Array creation ops of mlx.core against NumPy: arange, linspace, full, zeros, ones, eye,
identity, tri and the *_like forms, with MLX's dtype defaults and inference."""
import numpy as np
import pytest

import mlx.core as mx
from opsutil import check, make


@pytest.mark.parametrize("args,dtype", [((5,), mx.int32), ((2, 9), mx.int32), ((2, 9, 3), mx.int32),
                                        ((9, 2, -2), mx.int32), ((0.5,), mx.float32),
                                        ((0, 1, 0.25), mx.float32), ((1.5, -2, -0.5), mx.float32),
                                        ((3, 1), mx.int32), ((0,), mx.int32), ((-3.0,), mx.float32)])
def test_arange_infers_int32_or_float32(args, dtype):
    check(mx.arange(*args), np.arange(*args), dtype=dtype)


def test_arange_keywords_and_dtype():
    check(mx.arange(10, step=3), np.arange(0, 10, 3), dtype=mx.int32)
    check(mx.arange(start=1, stop=4), np.arange(1, 4), dtype=mx.int32)
    check(mx.arange(5, dtype=mx.float16), np.arange(5), dtype=mx.float16)
    check(mx.arange(0, 2, 0.5, mx.float64), np.arange(0, 2, 0.5), dtype=mx.float64)
    check(mx.arange(1, 10, 2, dtype=mx.int8), np.arange(1, 10, 2), dtype=mx.int8)
    check(mx.arange(0.0, 3.0, stream=mx.cpu), np.arange(3.0), dtype=mx.float32)
    with pytest.raises(ValueError, match="arange"):
        mx.arange(0, 10, 0)
    with pytest.raises(ValueError):
        mx.arange(5, dtype=mx.bool_)
    with pytest.raises(ValueError):
        mx.arange(0, float("inf"))
    with pytest.raises(TypeError):
        mx.arange("5")


@pytest.mark.parametrize("start,stop,num", [(0, 1, 5), (-2.5, 7, 11), (3, -3, 4), (1, 2, 1),
                                            (0, 1, 0), (0, 10, 50)])
def test_linspace(start, stop, num):
    check(mx.linspace(start, stop, num), np.linspace(start, stop, num), dtype=mx.float32)
    check(mx.linspace(start, stop, num=num, dtype=mx.float16),
          np.linspace(start, stop, num), dtype=mx.float16)
    assert mx.linspace(start, stop).shape == (50,)
    with pytest.raises(ValueError, match="linspace"):
        mx.linspace(0, 1, -1)


def test_linspace_integer_dtype():
    check(mx.linspace(0, 10, 5, dtype=mx.int32), np.linspace(0, 10, 5).astype(np.int32), dtype=mx.int32)


@pytest.mark.parametrize("shape", [3, (2, 3), (), (0, 4), [1, 2, 1]])
def test_zeros_ones_full(shape):
    check(mx.zeros(shape), np.zeros(shape), dtype=mx.float32)
    check(mx.ones(shape), np.ones(shape), dtype=mx.float32)
    check(mx.zeros(shape, mx.int8), np.zeros(shape), dtype=mx.int8)
    check(mx.ones(shape, dtype=mx.bool_), np.ones(shape, bool), dtype=mx.bool_)
    check(mx.zeros(shape, None), np.zeros(shape), dtype=mx.float32)
    check(mx.full(shape, 2.5), np.full(shape, 2.5), dtype=mx.float32)
    check(mx.full(shape, 7), np.full(shape, 7), dtype=mx.int32)
    check(mx.full(shape, True), np.full(shape, True), dtype=mx.bool_)
    check(mx.full(shape, 2.5, mx.float16), np.full(shape, 2.5), dtype=mx.float16)
    check(mx.full(shape, 2.7, dtype=mx.int32), np.full(shape, 2), dtype=mx.int32)
    check(mx.full(shape, 1 + 2j), np.full(shape, 1 + 2j), dtype=mx.complex64)


def test_full_with_array_values(rng):
    v, vn = make(rng, (3,), mx.float16)
    check(mx.full((2, 3), v), np.broadcast_to(vn, (2, 3)), dtype=mx.float16)
    check(mx.full((2, 3), v, mx.float32), np.broadcast_to(vn, (2, 3)), dtype=mx.float32)
    with pytest.raises(ValueError, match="full|broadcast"):
        mx.full((2, 4), v)
    with pytest.raises(ValueError):
        mx.full((-1,), 1)
    with pytest.raises(ValueError):
        mx.zeros((2, -3))
    with pytest.raises(TypeError):
        mx.zeros("a")


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.int8, mx.bool_, mx.complex64])
def test_like(rng, dtype):
    x, xn = make(rng, (2, 3), dtype)
    check(mx.zeros_like(x), np.zeros_like(xn), dtype=dtype)
    check(mx.ones_like(x), np.ones_like(xn), dtype=dtype)
    check(mx.full_like(x, 1), np.full_like(xn, 1), dtype=dtype)
    check(mx.full_like(x, 3, dtype=mx.int32), np.full(xn.shape, 3), dtype=mx.int32)
    check(mx.full_like(x, mx.array([1, 0, 1])), np.broadcast_to(np.array([1, 0, 1]), (2, 3)),
          dtype=dtype)


def test_full_like_keeps_the_input_dtype_for_python_floats():
    h = mx.ones((2,), mx.float16)
    check(mx.full_like(h, 2.5), [2.5, 2.5], dtype=mx.float16)
    check(mx.zeros_like(mx.transpose(mx.ones((2, 3)))), np.zeros((3, 2)))
    check(mx.ones_like(3.0), 1.0, dtype=mx.float32)


@pytest.mark.parametrize("n,m,k", [(3, None, 0), (3, 5, 1), (4, 2, -1), (3, 3, 5), (0, None, 0),
                                   (2, 4, -3)])
def test_eye_tri_identity(n, m, k):
    check(mx.eye(n, m, k), np.eye(n, m, k), dtype=mx.float32)
    check(mx.eye(n, m=m, k=k, dtype=mx.int32), np.eye(n, m, k), dtype=mx.int32)
    check(mx.tri(n, m, k), np.tri(n, m, k), dtype=mx.float32)
    check(mx.tri(n, m, k, mx.bool_), np.tri(n, m, k, bool), dtype=mx.bool_)
    check(mx.identity(n), np.identity(n), dtype=mx.float32)
    check(mx.identity(n, dtype=mx.float16), np.identity(n), dtype=mx.float16)
    check(mx.eye(n), np.eye(n))
    check(mx.tri(n), np.tri(n))


def test_eye_errors():
    with pytest.raises(ValueError, match="eye"):
        mx.eye(-1)
    with pytest.raises(ValueError):
        mx.tri(2, -2)
    with pytest.raises(TypeError):
        mx.eye(2.5)
