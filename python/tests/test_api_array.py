"""Array additions for MLX API completeness: copies, pickling, iteration, __mlx_array__ and
ArrayLike, in-place matmul, operands of unknown types, and MLX interop fixes (safetensors
metadata written as null, shapeless compile of reshape and where)."""
import copy
import json
import pickle
import struct

import numpy as np
import pytest

import mlx.core as mx
from opsutil import ALL, make


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 3)])
def test_pickle_round_trip(dtype, shape, rng):
    x, xn = make(rng, shape, dtype)
    y = pickle.loads(pickle.dumps(x))
    assert isinstance(y, mx.array)
    assert y.dtype == dtype and y.shape == x.shape
    assert np.array_equal(np.array(y), xn)


def test_pickle_non_contiguous_and_state_errors():
    x = mx.arange(12).reshape(3, 4).T[::2]
    y = pickle.loads(pickle.dumps(x))
    assert y.tolist() == x.tolist()
    state = x.__getstate__()
    assert isinstance(state, tuple)
    for bad in [(b"abc", (2,), "float32"), (b"", (1,), "float32"), (b"", (0,), "shape"), (1, 2)]:
        z = mx.array.__new__(mx.array)
        with pytest.raises(ValueError, match="setstate"):
            z.__setstate__(bad)


def test_copy_and_deepcopy():
    x = mx.array([[1.0, 2.0], [3.0, 4.0]])
    for y in (copy.copy(x), copy.deepcopy(x)):
        assert y is not x
        assert y.tolist() == x.tolist() and y.dtype == x.dtype
    tree = {"w": x, "layers": [x, {"b": mx.zeros((2,))}]}
    deep = copy.deepcopy(tree)
    assert deep["w"] is not x and deep["layers"][0].tolist() == x.tolist()


def test_deepcopy_of_a_module():
    import mlx.nn as nn

    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    clone = copy.deepcopy(model)
    x = mx.ones((1, 3))
    assert np.allclose(np.array(clone(x)), np.array(model(x)))
    clone.layers[0].weight = mx.zeros((4, 3))
    assert not np.allclose(np.array(model.layers[0].weight), 0)


def test_iteration_is_lazy_row_by_row():
    x = mx.arange(6).reshape(3, 2)
    it = iter(x)
    assert type(it).__name__ == "ArrayIterator"
    assert iter(it) is it
    assert [r.tolist() for r in it] == [[0, 1], [2, 3], [4, 5]]
    with pytest.raises(StopIteration):
        next(it)
    assert list(mx.zeros((0, 2))) == []
    with pytest.raises(TypeError):
        iter(mx.array(1))


def test_mlx_array_protocol_and_arraylike():
    class Wrapper:
        def __init__(self, v):
            self.v = v

        def __mlx_array__(self):
            return mx.array(self.v)

    w = Wrapper([1, 2, 3])
    assert mx.array(w).tolist() == [1, 2, 3]
    assert mx.array(w, dtype=mx.float32).dtype == mx.float32
    assert (mx.array([1, 1, 1]) + w).tolist() == [2, 3, 4]
    assert mx.array(mx.ArrayLike([4, 5])).tolist() == [4, 5]
    assert mx.array(mx.ArrayLike(np.arange(3))).tolist() == [0, 1, 2]

    class Bad:
        def __mlx_array__(self):
            return [1, 2]

    with pytest.raises(TypeError, match="__mlx_array__"):
        mx.array(Bad())


def test_imatmul():
    a = mx.array([[1.0, 2.0], [3.0, 4.0]])
    b = a
    a @= mx.eye(2) * 2
    assert a.tolist() == [[2.0, 4.0], [6.0, 8.0]]
    assert b.tolist() == [[1.0, 2.0], [3.0, 4.0]]


def test_operators_with_unknown_objects():
    x = mx.array([1.0, 2.0])

    class Unknown:
        pass

    for op in (lambda: x + Unknown(), lambda: Unknown() * x, lambda: x < Unknown(),
               lambda: x + None, lambda: x ** object()):
        with pytest.raises(TypeError) as err:
            op()
        assert "bad_cast" not in str(err.value)

    class Reflected:
        def __radd__(self, other):
            return "reflected"

        def __rmul__(self, other):
            return "reflected"

    assert x + Reflected() == "reflected"
    assert x * Reflected() == "reflected"
    assert (x == Unknown()) is False


def test_load_safetensors_with_null_metadata(tmp_path):
    data = np.arange(6, dtype=np.float32)
    header = {"__metadata__": None, "w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}}
    raw = json.dumps(header).encode()
    path = tmp_path / "null_meta.safetensors"
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + data.tobytes())
    loaded = mx.load(str(path))
    assert loaded["w"].tolist() == data.reshape(2, 3).tolist()
    arrays, meta = mx.load(str(path), return_metadata=True)
    assert meta == {} and set(arrays) == {"w"}
    header["__metadata__"] = 3
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + data.tobytes())
    with pytest.raises(RuntimeError, match="__metadata__"):
        mx.load(str(path))


def test_shapeless_compile_replays_reshape_and_where():
    def f(x, y):
        b, l, d = x.shape
        h = x.reshape(b, l, 2, -1)
        return mx.where(h > 0, h, y.reshape(b, l, 2, -1)).reshape(b, l, -1)

    cf = mx.compile(f, shapeless=True)
    for shape in [(2, 3, 4), (1, 5, 4), (3, 2, 8)]:
        x = mx.array(np.random.default_rng(1).standard_normal(shape).astype(np.float32))
        y = mx.ones(shape)
        out = cf(x, y)
        assert out.shape == shape
        np.testing.assert_allclose(np.array(out), np.array(f(x, y)))

    def flat(x):
        return mx.where(x > 0, x, 0.0).reshape(-1)

    cflat = mx.compile(flat, shapeless=True)
    assert cflat(mx.ones((2, 3))).shape == (6,)
    assert cflat(mx.ones((4, 5))).shape == (20,)


def test_shapeless_reshape_that_cannot_follow_is_a_clear_error():
    # (6, 4) -> (2, 3, 4): two leading dimensions cannot both follow a new input.
    cf = mx.compile(lambda x: x.reshape(2, 3, 4), shapeless=True)
    assert cf(mx.ones((6, 4))).shape == (2, 3, 4)
    with pytest.raises(ValueError, match="shapeless"):
        cf(mx.ones((8, 4)))


def test_shapeless_compile_replays_transpose():
    def f(x):
        b, l, d = x.shape
        return x.reshape(b, l, 2, -1).transpose(0, 2, 1, 3).swapaxes(-1, -2)

    cf = mx.compile(f, shapeless=True)
    for shape in [(1, 3, 4), (2, 5, 8)]:
        x = mx.array(np.random.default_rng(0).standard_normal(shape).astype(np.float32))
        out = cf(x)
        assert out.shape == f(x).shape
        np.testing.assert_array_equal(np.array(out), np.array(f(x)))


def test_shapeless_compile_replays_broadcasting_matmul():
    @mx.compile
    def plain(q, w):
        return q @ w[:, None, :].swapaxes(-1, -2)

    gate = mx.compile(lambda q, w: q @ w[:, None, :].swapaxes(-1, -2), shapeless=True)
    w = mx.array(np.random.default_rng(2).standard_normal((4, 8)).astype(np.float32))
    for shape in [(1, 4, 2, 8), (3, 4, 5, 8)]:
        q = mx.array(np.random.default_rng(3).standard_normal(shape).astype(np.float32))
        out = gate(q, w)
        assert out.shape == shape[:3] + (1,)
        np.testing.assert_allclose(np.array(out), np.array(plain(q, w)), rtol=1e-5, atol=1e-6)


def test_python_ints_beyond_64_bits_are_overflow_errors():
    for make in (lambda: mx.array(2**70), lambda: mx.array([1, -(2**70)]),
                 lambda: mx.array([1.0]) + 2**70, lambda: mx.add(2**64, mx.array(1))):
        with pytest.raises(OverflowError, match="64-bit"):
            make()
    assert mx.array(2**62).item() == 2**62 and mx.array(2**62).dtype == mx.int64


def test_format():
    x = mx.array(1.23456)
    assert f"{x:.2f}" == "1.23"
    assert f"{mx.array(7):>4}" == "   7"
    assert f"{mx.array([2.5]):.1f}" == "2.5"
    assert f"{x}" == repr(x) and format(mx.array([1, 2])) == repr(mx.array([1, 2]))
    with pytest.raises(TypeError, match="single-element"):
        f"{mx.array([1.0, 2.0]):.2f}"
