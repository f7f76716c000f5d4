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


def test_cpu_work_opens_no_cuda_math_library():
    # cuBLAS(Lt), cuSOLVER, cuFFT and NVRTC open at their first call (about 250 MB of resident
    # memory and 70 ms): importing mlx and working on the CPU, with or without a GPU, loads none.
    import os
    import subprocess
    import sys

    code = """
import mlx.core as mx
mx.set_default_device(mx.cpu)
a = mx.random.normal((64, 64))
mx.eval(a @ a, mx.fft.fft(a), mx.linalg.inv(a, stream=mx.cpu), mx.compile(lambda x: mx.exp(x) + 1)(a))
maps = open("/proc/self/maps").read()
print(",".join(n for n in ("libcublas", "libcusolver", "libcufft", "libnvrtc") if n in maps))
"""
    env = dict(os.environ, MLX_DEFAULT_DEVICE="cpu")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "", out.stdout
