"""Devices, streams and the stream context manager."""
import mlx.core as mx


def test_default_device_is_cpu_without_a_gpu_backend():
    assert mx.default_device() == mx.cpu or mx.is_available(mx.gpu)
    assert mx.Device(mx.cpu) == mx.Device(mx.cpu, 0)


def test_stream_context_sets_and_restores_the_default():
    before = mx.default_stream(mx.cpu)
    s = mx.new_stream(mx.cpu)
    assert s != before
    with mx.stream(s):
        assert mx.default_stream(mx.cpu) == s
        out = mx.array([1.0, 2.0]) * 3
    assert mx.default_stream(mx.cpu) == before
    assert out.tolist() == [3.0, 6.0]


def test_ops_take_a_stream_or_device_keyword():
    s = mx.new_stream(mx.cpu)
    a = mx.add(mx.array([1]), mx.array([2]), stream=s)
    b = mx.add(mx.array([1]), mx.array([2]), stream=mx.cpu)
    mx.synchronize(s)
    assert a.item() == 3 and b.item() == 3
