"""Crashes and hangs the op fuzzer (fuzz_ops.py) found, one test each: they must now raise a
clean exception or compute."""
import numpy as np
import pytest

import mlx.core as mx


@pytest.mark.parametrize(
    "shape,strides,offset",
    [((4,), (1000000000,), 0), ((2,), (1,), 10**9), ((3,), (-5,), 0), ((4,), (1,), 1),
     ((2, 2), (2, 3), 0), ((2,), (2**62,), 0)],
)
def test_as_strided_outside_the_input_is_an_error(shape, strides, offset):
    # used to read (and segfault on) memory past the input
    with pytest.raises(ValueError, match="as_strided"):
        mx.eval(mx.as_strided(mx.zeros((4,)), shape, strides, offset))


def test_as_strided_inside_the_input_still_works():
    x = mx.arange(6)
    assert mx.as_strided(x, (2, 2), (3, 1), 1).tolist() == [[1, 2], [4, 5]]
    assert mx.as_strided(x, (3,), (-1,), 5).tolist() == [5, 4, 3]
    assert mx.as_strided(x, (0, 7), (100, 100), 0).shape == (0, 7)


def test_repr_of_empty_array_with_many_rows_is_short():
    # (10**6, 10**6, 0) used to build a list per row: hours and terabytes
    r = repr(mx.zeros((10**6, 10**6, 0)))
    assert r == "array([], shape=(1000000, 1000000, 0), dtype=float32)"
    assert repr(mx.zeros((2, 0))) == "array([[],\n       []], dtype=float32)"


def test_repr_of_large_array_converts_only_its_corners():
    x = mx.arange(10**7).reshape(1000, 10000)
    r = repr(x)
    assert r.startswith("array([[0, 1, 2, ..., 9997, 9998, 9999],")
    assert r.endswith("[9990000, 9990001, 9990002, ..., 9999997, 9999998, 9999999]], dtype=int32)")
    np.testing.assert_array_equal(np.asarray(x)[0, :3], [0, 1, 2])


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_lapack_on_non_finite_matrices_raises(value):
    # lu with NaN read LAPACK's unwritten pivots (segfault); eig with inf corrupted the heap
    a = mx.full((4, 4), value) + mx.eye(4)
    for f in (mx.linalg.lu, mx.linalg.lu_factor, mx.linalg.eig, mx.linalg.eigvals):
        try:
            mx.eval(f(a, stream=mx.cpu))
        except (RuntimeError, ValueError):
            pass
    good = mx.array([[2.0, 1.0], [1.0, 3.0]])
    np.testing.assert_allclose(np.sort(np.asarray(mx.linalg.eigvals(good, stream=mx.cpu)).real),
                               np.linalg.eigvalsh(np.asarray(good)), rtol=1e-5)
