"""mx.array construction, properties, printing and conversions."""
import numpy as np
import pytest

import mlx.core as mx


def test_construction_infers_mlx_default_dtypes():
    assert mx.array(1).dtype == mx.int32
    assert mx.array(2**40).dtype == mx.int64
    assert mx.array(1.5).dtype == mx.float32
    assert mx.array(True).dtype == mx.bool_
    assert mx.array(1 + 2j).dtype == mx.complex64
    assert mx.array([1, 2.5]).dtype == mx.float32
    assert mx.array([[1, 2], [3, 4]]).shape == (2, 3 - 1)
    assert mx.array([1, 2], dtype=mx.float16).dtype == mx.float16


def test_ragged_lists_are_rejected():
    with pytest.raises(ValueError):
        mx.array([[1, 2], [3]])


def test_numpy_round_trip_any_layout(rng):
    base = rng.standard_normal((4, 6))
    for view in (base, base.T, base[::2, ::-3], base[1:, 2:5]):
        a = mx.array(view, mx.float64)  # float64 NumPy data defaults to float32, as in MLX
        assert a.dtype == mx.float64
        np.testing.assert_array_equal(np.array(a), view)
    for dt in (np.bool_, np.uint8, np.int16, np.int32, np.int64, np.float16, np.float32):
        v = (rng.standard_normal(5) * 10).astype(dt)
        np.testing.assert_array_equal(np.array(mx.array(v)), v)
    assert mx.array(np.float32(3.5)).item() == 3.5


def test_properties_and_scalars():
    a = mx.array([[1, 2, 3], [4, 5, 6]], dtype=mx.int16)
    assert (a.shape, a.ndim, a.size, a.itemsize, a.nbytes) == ((2, 3), 2, 6, 2, 12)
    assert a.T.shape == (3, 2)
    assert a.tolist() == [[1, 2, 3], [4, 5, 6]]
    assert len(a) == 2
    assert [r.tolist() for r in a] == [[1, 2, 3], [4, 5, 6]]
    assert mx.array(2.5).item() == 2.5
    assert int(mx.array(7)) == 7 and float(mx.array(1.5)) == 1.5
    assert bool(mx.array(True))
    with pytest.raises(ValueError):
        mx.array([1, 2]).item()


def test_repr_matches_mlx():
    assert repr(mx.array([1, 2])) == "array([1, 2], dtype=int32)"
    assert repr(mx.array(1.5)) == "array(1.5, dtype=float32)"
    assert repr(mx.array([True, False])) == "array([true, false], dtype=bool)"
    assert repr(mx.array([[1, 2], [3, 4]])) == "array([[1, 2],\n       [3, 4]], dtype=int32)"


def test_weak_python_scalars_keep_the_array_dtype():
    h = mx.array([1, 2], mx.float16)
    assert (h * 2.0).dtype == mx.float16
    assert (2 * h).dtype == mx.float16
    i = mx.array([1, 2], mx.int8)
    assert (i + 1).dtype == mx.int8
    assert (i * 1.5).dtype == mx.float32


def test_python_scalars_are_converted_on_the_host():
    # A scalar operand becomes a constant of the array's dtype, not a cast node: `x * 0.5` on
    # bfloat16 data runs one kernel. The values are the cast's (int8 wraps 300 to 44).
    b = mx.array([1.5, -2.0], mx.bfloat16)
    i = mx.array([1, 2], mx.int8)
    u = mx.array([1, 2], mx.uint8)
    h = mx.array([1.0], mx.float16)
    mx.eval(b, i, u, h)
    mx._kernel_counts(True, True)
    out = [b * 0.5, 3 - b, i + 300, u + (-1), b + 1, h * 1e6]
    mx.eval(out)
    counts = mx._kernel_counts(False, True)
    assert "AsType" not in counts, counts
    np.testing.assert_array_equal(np.array(out[0].astype(mx.float32)), [0.75, -1.0])
    np.testing.assert_array_equal(np.array(out[1].astype(mx.float32)), [1.5, 5.0])
    assert out[2].dtype == mx.int8 and out[2].tolist() == [45, 46]
    assert out[3].dtype == mx.uint8 and out[3].tolist() == [0, 1]
    assert out[4].dtype == mx.bfloat16 and out[4].astype(mx.float32).tolist() == [2.5, -1.0]
    assert out[5].tolist() == [float("inf")]
    # Lists too: mx.array(list, dtype) is a constant, with the cast's values.
    mx._kernel_counts(True, True)
    made = [mx.array([1.5, 2.7], mx.int32), mx.array([300], mx.int8), mx.array([True], mx.float16),
            mx.array([1.0, 2.5]), mx.array([[1, 2]], mx.bfloat16), mx.array([1 + 2j])]
    mx.eval(made)
    assert mx._kernel_counts(False, True) == {}
    assert [m.tolist() for m in made[:3]] == [[1, 2], [44], [1.0]]
    assert [m.dtype for m in made] == [mx.int32, mx.int8, mx.float16, mx.float32, mx.bfloat16,
                                       mx.complex64]


@pytest.mark.parametrize("op", ["__add__", "__sub__", "__mul__", "__truediv__", "__floordiv__",
                                "__mod__", "__pow__", "__lt__", "__ge__", "__eq__", "__ne__"])
def test_operators_match_numpy(op, rng):
    x = rng.uniform(0.5, 2, (3, 4)).astype(np.float32)
    y = rng.uniform(0.5, 2, (4,)).astype(np.float32)
    got = getattr(mx.array(x), op)(mx.array(y))
    np.testing.assert_allclose(np.array(got), getattr(x, op)(y), rtol=1e-6)
    rop = op.replace("__", "__r", 1)
    if hasattr(np.ndarray, rop) and op not in ("__lt__", "__ge__", "__eq__", "__ne__"):
        got = getattr(mx.array(y), rop)(2.0)
        np.testing.assert_allclose(np.array(got), getattr(y, rop)(np.float32(2.0)), rtol=1e-6)


def test_deep_graph_with_repeated_inputs_is_freed():
    # x = x + x holds two handles on x; dropping a 100k-deep chain used to overflow the stack.
    x = mx.array([1.0, 2.0])
    for _ in range(100000):
        x = x + x
    del x
    y = mx.array([0.5])
    for _ in range(20000):
        y = y * y - y * 0.0
    assert y.item() == 0.0
    del y
