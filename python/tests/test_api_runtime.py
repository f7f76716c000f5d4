"""Namespaces and runtime helpers added for MLX API completeness: mx.distributed (a group of
one, without a launcher; test_distributed.py runs several processes), mx.metal, mx.cuda, device_info, thread-local streams, print options and finfo."""
import pickle
import threading

import numpy as np
import pytest

import mlx.core as mx


def test_distributed_group_of_one():
    # The ring is built in; jaccl (Thunderbolt RDMA) does not exist here.
    assert mx.distributed.is_available() is True
    assert mx.distributed.is_available("ring") is True
    assert mx.distributed.is_available("jaccl") is False
    g = mx.distributed.init()
    assert isinstance(g, mx.distributed.Group)
    assert (g.rank(), g.size()) == (0, 1)
    assert "size=1" in repr(g)
    sub = g.split(3)
    assert (sub.rank(), sub.size()) == (0, 1)
    assert g.split(0, key=5).size() == 1
    assert mx.distributed.init(False, "any").size() == 1


def test_distributed_init_errors():
    with pytest.raises(RuntimeError, match="strict"):
        mx.distributed.init(strict=True)
    with pytest.raises(ValueError, match="backend"):
        mx.distributed.init(backend="carrier-pigeon")
    with pytest.raises(ValueError, match="backend"):
        mx.distributed.is_available("carrier-pigeon")


@pytest.mark.parametrize(
    "fn", ["all_sum", "all_max", "all_min", "all_gather", "sum_scatter"]
)
def test_collectives_are_identities_over_one_process(fn, rng):
    x = mx.array(rng.standard_normal((3, 4)).astype(np.float32))
    g = mx.distributed.init()
    out = getattr(mx.distributed, fn)(x, group=g)
    np.testing.assert_array_equal(np.array(out), np.array(x))
    out = getattr(mx.distributed, fn)(mx.array(2, dtype=mx.int8))
    assert out.item() == 2 and out.dtype == mx.int8
    # They are differentiable (identity gradients) like any op.
    grad = mx.grad(lambda y: getattr(mx.distributed, fn)(y).sum())(x)
    np.testing.assert_array_equal(np.array(grad), np.ones((3, 4), np.float32))


def test_point_to_point_needs_a_peer():
    x = mx.ones((2,))
    with pytest.raises(ValueError, match="send"):
        mx.distributed.send(x, 0)
    with pytest.raises(ValueError, match="recv"):
        mx.distributed.recv((2,), mx.float32, 0)
    with pytest.raises(ValueError, match="recv_like"):
        mx.distributed.recv_like(x, 0)


def test_metal_is_absent_but_its_memory_functions_work():
    assert mx.metal.is_available() is False
    mx.metal.reset_peak_memory()
    a = mx.ones((1024,))
    mx.eval(a)
    assert mx.metal.get_active_memory() == mx.get_active_memory() >= a.nbytes
    assert mx.metal.get_peak_memory() == mx.get_peak_memory()
    assert mx.metal.get_cache_memory() == mx.get_cache_memory()
    old = mx.metal.set_cache_limit(1 << 20)
    assert mx.get_cache_limit() == 1 << 20
    mx.set_cache_limit(old)
    old = mx.metal.set_memory_limit(mx.get_memory_limit())
    assert old == mx.get_memory_limit()
    mx.metal.set_wired_limit(0)
    mx.metal.clear_cache()
    assert mx.metal.get_cache_memory() == 0
    assert mx.metal.device_info() == mx.device_info()
    with pytest.raises(RuntimeError, match="Metal"):
        mx.metal.start_capture("trace.gputrace")
    mx.metal.stop_capture()


def test_metal_kernel_raises_clearly():
    # Creating a kernel works (modules build them at import time); calling it raises. CUDA
    # kernels have their own tests (test_custom_kernels.py).
    metal = mx.fast.metal_kernel(name="k", input_names=["a"], output_names=["b"], source="")
    with pytest.raises(RuntimeError, match="Metal is not available"):
        metal(inputs=[mx.ones((2,))], grid=(1, 1, 1), threadgroup=(1, 1, 1),
              output_shapes=[(2,)], output_dtypes=[mx.float32])
    with pytest.raises(TypeError):
        mx.fast.cuda_kernel(name="k", input_names="a")


def test_cuda_namespace_and_device_count():
    assert mx.cuda.is_available() == mx.is_available(mx.gpu)
    assert mx.device_count(mx.cpu) == 1
    assert (mx.device_count(device_type=mx.gpu) > 0) == mx.is_available(mx.gpu)


def test_device_info():
    info = mx.device_info(mx.cpu)
    assert info == mx.device_info(mx.Device(mx.cpu))
    assert isinstance(info["device_name"], str) and info["device_name"]
    assert info["memory_size"] > 0
    assert info["architecture"] in ("x86_64", "aarch64", "unknown")
    assert isinstance(mx.device_info(), dict)
    if not mx.is_available(mx.gpu):
        with pytest.raises(ValueError, match="device_info"):
            mx.device_info(mx.gpu)


def test_thread_local_stream_gives_each_thread_its_own_stream():
    tls = mx.new_thread_local_stream(mx.cpu)
    assert isinstance(tls, mx.ThreadLocalStream)
    assert tls.device == mx.Device(mx.cpu)
    seen = {}
    together = threading.Barrier(3)

    def work(i):
        together.wait()  # all three threads alive at once
        a = mx.add(mx.ones((4,)), i, stream=tls)
        mx.eval(a)
        seen[i] = (a.tolist(), mx.Stream(tls))
        together.wait()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [seen[i][0] for i in range(3)] == [[1.0 + i] * 4 for i in range(3)]
    streams = {seen[i][1] for i in range(3)}
    assert len(streams) == 3
    # The same thread keeps getting the same stream.
    assert mx.Stream(tls) == mx.Stream(tls)
    s = mx.new_thread_unsafe_stream(mx.cpu)
    assert isinstance(s, mx.Stream) and s.device == mx.Device(mx.cpu)
    assert mx.multiply(mx.ones((2,)), 3, stream=s).tolist() == [3.0, 3.0]
    mx.clear_streams()


def test_print_options():
    x = mx.array([1 / 3, 2.0])
    assert repr(x) == "array([0.333333, 2], dtype=float32)"
    assert mx.get_printoptions().precision == 6
    with mx.printoptions(precision=3) as opts:
        assert opts.precision == 3
        assert repr(x) == "array([0.333, 2], dtype=float32)"
        assert mx.get_printoptions().precision == 3
    assert repr(x) == "array([0.333333, 2], dtype=float32)"
    mx.set_printoptions(precision=2)
    try:
        assert repr(mx.array([1 / 3 + 1j])) == "array([0.33+1j], dtype=complex64)"
        assert isinstance(mx.get_printoptions(), mx.PrintOptions)
    finally:
        mx.set_printoptions(precision=6)
    with pytest.raises(ValueError, match="precision"):
        mx.set_printoptions(precision=-1)


def test_finfo_bits_and_smallest_normal():
    for dtype, ref in [(mx.float32, np.float32), (mx.float16, np.float16), (mx.float64, np.float64)]:
        f = mx.finfo(dtype)
        assert f.bits == np.finfo(ref).bits
        assert f.smallest_normal == float(np.finfo(ref).smallest_normal)
    b = mx.finfo(mx.bfloat16)
    assert b.bits == 16 and b.smallest_normal == 2.0**-126


def test_constants():
    assert mx.pi == np.pi and mx.e == np.e and mx.euler_gamma == np.euler_gamma
    assert mx.inf == np.inf and np.isnan(mx.nan) and mx.newaxis is None
    x = mx.arange(3)
    assert x[mx.newaxis].shape == (1, 3)
    assert pickle.loads(pickle.dumps(mx.pi)) == mx.pi
