"""Building and evaluating arrays from several Python threads at once (evaluation releases
the GIL, so the threads really run together)."""
import threading

import numpy as np

import mlx.core as mx
import threadutil

THREADS = 8


def run_threads(target, n=THREADS):
    threadutil.run_threads(target, n)


def test_independent_graphs_per_thread():
    def work(i):
        rng = np.random.default_rng(i)
        for _ in range(40):
            x = rng.standard_normal((32, 48)).astype(np.float32)
            y = rng.standard_normal((48,)).astype(np.float32)
            a, b = mx.array(x), mx.array(y)
            r = mx.sum(mx.exp(a) * b + a, axis=1)
            np.testing.assert_allclose(np.asarray(r), (np.exp(x) * y + x).sum(axis=1), rtol=1e-4,
                                       atol=1e-4)
            assert (a + i).tolist()[0][0] == np.float32(x[0, 0] + i)

    run_threads(work)


def test_large_multithreaded_kernels_from_many_threads():
    # Arrays big enough that each op itself uses the kernel thread pool.
    n = 1 << 20

    def work(i):
        for k in range(3):
            a = mx.zeros((n,)) + float(i + k)
            s = mx.sum(mx.exp(a * 0.0) * a)
            assert s.item() == float(n * (i + k))

    run_threads(work)


def test_shared_inputs_and_shared_lazy_graph():
    # Every thread evaluates the same unevaluated nodes: exactly one may compute each.
    rng = np.random.default_rng(0)
    for it in range(40):
        x = rng.standard_normal((128, 64)).astype(np.float32)
        base = mx.array(x)  # evaluated, read by all threads
        lazy = mx.exp(base * 0.1) * 2.0  # evaluated by whichever thread gets there first
        for _ in range(3):
            lazy = mx.exp(lazy * 0.1)
        expected = 2.0 * np.exp(0.1 * x)
        for _ in range(3):
            expected = np.exp(expected * 0.1)
        results = [None] * THREADS

        def work(i):
            results[i] = np.asarray(mx.sum(lazy * float(i + 1), axis=0))

        run_threads(work)
        np.testing.assert_allclose(np.asarray(lazy), expected, rtol=1e-5)
        for i, r in enumerate(results):
            np.testing.assert_allclose(r, expected.sum(axis=0) * (i + 1), rtol=1e-4)


def test_conversions_from_many_threads():
    def work(i):
        rng = np.random.default_rng(100 + i)
        for _ in range(50):
            x = rng.standard_normal((17, 5)).astype(np.float32)
            a = mx.array(x.T)
            np.testing.assert_array_equal(np.asarray(a), x.T)
            np.testing.assert_array_equal(np.from_dlpack(a), x.T)
            assert mx.from_dlpack(x).tolist() == x.tolist()

    run_threads(work)


def test_eval_on_worker_threads_while_main_thread_evaluates():
    stop = threading.Event()
    errors = []

    def background():
        try:
            while not stop.is_set():
                assert mx.sum(mx.zeros((1000,)) + 1).item() == 1000
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    workers = [threading.Thread(target=background) for _ in range(3)]
    for w in workers:
        w.start()
    try:
        for k in range(200):
            assert mx.sum(mx.zeros((100,)) + k).item() == 100 * k
    finally:
        stop.set()
        for w in workers:
            w.join()
    assert not errors, errors[0]
