"""mx._kernel_times: the per-primitive profile behind benchmarks/profile_gpt2.py."""
import time

import mlx.core as mx
import pytest


@pytest.fixture(autouse=True)
def counting_off():
    yield
    mx._kernel_times(False, True)


def test_counts_and_times_of_each_primitive():
    a = mx.random.normal((64, 64))
    mx.eval(a)
    mx._kernel_times(True, True)
    start = time.perf_counter()
    y = mx.exp(a @ a) + 1
    z = mx.sum(y * y)
    mx.eval(z)
    wall = time.perf_counter() - start
    got = mx._kernel_times(False, True)
    for name in ("Exp", "Add", "Multiply", "Sum"):
        count, seconds = got[name]
        assert count == 1 and seconds >= 0, (name, got[name])
    assert got["Matmul"][0] == 1, got
    # The primitives run one after another inside the evaluation.
    assert 0 < sum(s for _, s in got.values()) <= wall, (got, wall)


def test_counting_stops_and_resets():
    a = mx.ones((8,))
    mx._kernel_times(True, True)
    mx.eval(mx.exp(a))
    assert mx._kernel_times(False, False)["Exp"][0] == 1
    assert mx._kernel_times(False, True)["Exp"][0] == 1  # not reset by the call before
    mx.eval(mx.exp(a + 1))
    assert mx._kernel_times(False, True) == {}
    # The plain counter reads the same store.
    mx._kernel_times(True, True)
    mx.eval(mx.log(a))
    assert mx._kernel_counts(False, True)["Log"] == 1


def test_by_shape_counts_each_input_layout_apart():
    a = mx.random.normal((16, 8))
    b = mx.random.normal((8, 4))
    mx.eval(a, b)
    mx._kernel_times(True, True, by_shape=True)
    mx.eval(a @ b, a.T @ a, mx.exp(a), mx.exp(a[:, ::2]), mx.sum(a))
    got = mx._kernel_times(False, True)
    assert got["Matmul [16x8 r, 8x4 r]"][0] == 1, got
    assert got["Matmul [8x16 c, 16x8 r]"][0] == 1, got
    assert got["Exp [16x8 r]"][0] == 1, got
    assert got["Exp [16x4 s]"][0] == 1, got
    assert got["Sum [16x8 r]"][0] == 1, got
    # Counting by shape ends with the profile: the next one keys by name alone.
    mx._kernel_times(True, True)
    mx.eval(mx.exp(b))
    assert mx._kernel_times(False, True)["Exp"][0] == 1
