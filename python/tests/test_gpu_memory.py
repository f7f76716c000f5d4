"""Each GPU's allocator: its own statistics and limits ("cuda:0", "cuda:1", ...), and frees
that wait for GPU streams leave the statistics once the GPU is done. Runs where a GPU is."""
import pytest

import mlx.core as mx

pytestmark = pytest.mark.skipif(not mx.is_available(mx.gpu), reason="no GPU")

MiB = 1 << 20


def gpus():
    return [f"cuda:{i}" for i in range(mx.device_count(mx.gpu))]


def active(device):
    return mx.memory_stats(device)["active_memory"]


def test_one_allocator_per_gpu():
    assert mx.memory_devices() == ["cpu"] + gpus()
    assert mx.memory_stats("cuda")["memory_limit"] == mx.memory_stats("cuda:0")["memory_limit"]
    assert mx.memory_info(mx.gpu).total == mx.memory_info("cuda:0").total > 0


def test_an_allocation_counts_on_its_own_gpu_only():
    last = mx.device_count(mx.gpu) - 1
    before = {d: active(d) for d in gpus()}
    with mx.stream(mx.new_stream(mx.Device(mx.gpu, last))):
        x = mx.ones((16 * MiB // 4,))
        mx.eval(x)
    grew = {d: active(d) - before[d] for d in gpus()}
    assert grew[f"cuda:{last}"] >= 16 * MiB
    assert all(g < MiB for d, g in grew.items() if d != f"cuda:{last}"), grew
    device = mx.Device(mx.gpu, last)
    assert mx.memory_stats(device)["active_memory"] == active(f"cuda:{last}")


def test_pool_limit_is_a_fraction_of_each_gpu():
    old = mx.get_memory_limit()
    try:
        mx.set_memory_pool_limit(0.5)
        for d in gpus():
            assert abs(mx.memory_stats(d)["memory_limit"] - 0.5 * mx.memory_info(d).total) < MiB
    finally:
        mx.set_memory_limit(old)


def test_freed_buffers_leave_the_statistics_once_the_gpu_is_done():
    other = mx.new_stream(mx.gpu)  # with two GPU streams a free waits for the streams' events
    mx.synchronize()
    base = active("cuda:0")
    n = 4096
    a = mx.random.normal((n, n), stream=mx.gpu)
    mx.eval(a)
    with mx.stream(other):
        b = a
        for _ in range(20):  # each product is freed while the next ones still run
            b = (b @ a) / n
    mx.async_eval(b)
    del a
    mx.eval(b)
    mx.synchronize(other)
    # Read with no allocation since: only b (and small things) may still count.
    assert active("cuda:0") <= base + b.nbytes + 4 * MiB


def test_leak_checker_passes_clean_code_on_two_gpu_streams():
    other = mx.new_stream(mx.gpu)
    with mx.memory.check_no_leaks():  # the last frees wait on stream events at the check
        a = mx.random.normal((1024, 1024), stream=mx.gpu)
        b = mx.exp(a, stream=other) @ a
        mx.eval(b)
        del a, b
