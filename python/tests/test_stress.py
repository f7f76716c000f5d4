"""Stress suite (issue 12): deep graphs in every pattern, many threads, errors and interrupts in
the middle of work, exhausted memory. Marked `stress`: the default run is bounded (CI runs it in
a few minutes); MLX_STRESS=long multiplies depths, threads and iterations. Each test records
what it ran in STRESS_COUNTS, which conftest.py prints in the session summary (and writes as
JSON to $MLX_STRESS_REPORT when set)."""
import gc
import os

import numpy as np
import pytest

import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
from threadutil import interrupt_during, run_threads

pytestmark = pytest.mark.stress

LONG = os.environ.get("MLX_STRESS", "") == "long"
DEPTH = 1_000_000 if LONG else 100_000  # graph patterns built, destroyed and evaluated
GRAD_DEPTH = 100_000 if LONG else 10_000  # grad / vmap / compile through a chain
THREADS = (2, 4, 8, 16) if LONG else (2, 4, 8)
ITERATIONS = 200 if LONG else 25

STRESS_COUNTS = {}


def count(key, n=1):
    STRESS_COUNTS[key] = STRESS_COUNTS.get(key, 0) + n


def active_memory_settled():
    gc.collect()
    mx.synchronize()
    return mx.get_active_memory()


# Each pattern: (name, start value, step). A step keeps the value fixed, so the result of any
# depth is known; every step uses its input more than once or makes views / siblings.
def _streams():
    if not hasattr(_streams, "cache"):
        _streams.cache = [mx.new_stream(mx.cpu), mx.new_stream(mx.cpu)]
    return _streams.cache


PATTERNS = {
    "unary chain": (2.0, lambda x, i: mx.negative(x)),  # depth is even
    "x + x": (0.0, lambda x, i: x + x),
    "x * x - x": (2.0, lambda x, i: x * x - x),
    "concatenate(split(x, 2))": (1.5, lambda x, i: mx.concatenate(mx.split(x, 2))),
    "views of views": (3.0, lambda x, i: (x.T if i % 2 else x[::-1]).reshape(x.shape)),
    "mixed streams": (
        1.0,
        lambda x, i: mx.multiply(x, 1.0, stream=_streams()[i % 2] if i % 3 else mx.cpu),
    ),
}


def build(pattern, depth, shape=(2, 2)):
    start, step = PATTERNS[pattern]
    x = mx.full(shape, start)
    for i in range(depth):
        x = step(x, i)
    return x, start


@pytest.mark.parametrize("pattern", sorted(PATTERNS))
def test_deep_graph_destroyed_unevaluated(pattern):
    before = active_memory_settled()
    x, _ = build(pattern, DEPTH)
    del x
    assert active_memory_settled() == before
    count("graph patterns x depth: destroyed unevaluated (nodes)", DEPTH)


@pytest.mark.parametrize("pattern", sorted(PATTERNS))
def test_deep_graph_evaluated(pattern):
    x, start = build(pattern, DEPTH)
    np.testing.assert_array_equal(np.asarray(x), np.full((2, 2), start, np.float32))
    del x
    count("graph patterns x depth: evaluated (nodes)", DEPTH)


@pytest.mark.parametrize("pattern", sorted(PATTERNS))
def test_deep_graph_destroyed_half_evaluated(pattern):
    # A node deep inside the chain is evaluated, then the whole graph is dropped.
    start, step = PATTERNS[pattern]
    x = mx.full((2, 2), start)
    middle = None
    for i in range(DEPTH // 2):
        x = step(x, i)
        if i == DEPTH // 4:
            middle = x
    mx.eval(middle)
    del x, middle
    count("graph patterns x depth: half evaluated then destroyed (nodes)", DEPTH // 2)


def _chain(x, depth):
    # Derivative known in closed form: d/dx of sin applied through (x * 1) + 0 steps.
    for _ in range(depth):
        x = x * 1.0 + x * 0.0
    return mx.sum(mx.sin(x))


def test_grad_through_deep_chain():
    x = mx.array([0.25, 0.5, 1.0])
    g = mx.grad(lambda v: _chain(v, GRAD_DEPTH))(x)
    np.testing.assert_allclose(np.asarray(g), np.cos([0.25, 0.5, 1.0]), rtol=1e-5)
    count("grad through chain (depth)", GRAD_DEPTH)


def test_grad_of_repeated_input_chain():
    # x * x - x repeated: every node is an input twice; the derivative at the fixed point 2
    # of f(x) = x^2 - x is f'(2)^depth = 3^depth, so use depth 1 steps of x + x - x instead.
    def f(v):
        for _ in range(GRAD_DEPTH):
            v = v + v - v
        return mx.sum(v * v)

    x = mx.array([1.0, -2.0])
    np.testing.assert_allclose(np.asarray(mx.grad(f)(x)), [2.0, -4.0], rtol=1e-5)
    count("grad through x + x - x chain (depth)", GRAD_DEPTH)


def test_vmap_through_deep_chain():
    x = mx.array(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3))
    out = mx.vmap(lambda v: _chain(v, GRAD_DEPTH))(x)
    np.testing.assert_allclose(np.asarray(out), np.sin(np.asarray(x)).sum(axis=1), rtol=1e-5)
    count("vmap through chain (depth)", GRAD_DEPTH)


def test_compile_through_deep_chain():
    f = mx.compile(lambda v: _chain(v, GRAD_DEPTH))
    x = mx.array([0.1, 0.2])
    for k in range(3):
        np.testing.assert_allclose(f(x + k).item(), np.sin([0.1 + k, 0.2 + k]).sum(), rtol=1e-5)
    count("compile through chain (depth)", GRAD_DEPTH)


def test_grad_of_compiled_deep_chain():
    g = mx.grad(mx.compile(lambda v: _chain(v, GRAD_DEPTH // 2)))
    np.testing.assert_allclose(np.asarray(g(mx.array([0.3]))), np.cos([0.3]), rtol=1e-5)
    count("grad of compile through chain (depth)", GRAD_DEPTH // 2)


def test_lazy_loop_memory_is_bounded():
    # A long lazy loop that evaluates as it goes keeps only the live values, not the history.
    x = mx.zeros((1 << 16,))
    mx.eval(x)
    base = active_memory_settled()
    peak = 0
    for i in range(2000 if LONG else 300):
        x = x + 1.0
        if i % 10 == 0:
            mx.eval(x)
            peak = max(peak, mx.get_active_memory())
    assert x[0].item() == (2000 if LONG else 300)
    assert peak - base <= 4 * x.nbytes
    count("lazy loop steps with bounded memory", 2000 if LONG else 300)


# Threads ---------------------------------------------------------------------------------


@pytest.mark.parametrize("n", THREADS)
def test_threads_train_their_own_models(n):
    # Parameters made in each thread from explicit arrays: the global random key is shared
    # between threads, so models are initialised from NumPy instead.
    def make(seed):
        rng = np.random.default_rng(seed)
        model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
        model.update(
            {
                "layers": [
                    {"weight": mx.array(rng.standard_normal((16, 8), np.float32) * 0.3),
                     "bias": mx.zeros((16,))},
                    {},
                    {"weight": mx.array(rng.standard_normal((1, 16), np.float32) * 0.3),
                     "bias": mx.zeros((1,))},
                ]
            }
        )
        x = mx.array(rng.standard_normal((32, 8), np.float32))
        y = mx.array(rng.standard_normal((32, 1), np.float32))
        return model, x, y

    def train(seed):
        model, x, y = make(seed)
        opt = optim.Adam(learning_rate=1e-2)
        step = nn.value_and_grad(model, lambda m, a, b: mx.mean((m(a) - b) ** 2))
        losses = []
        for _ in range(ITERATIONS):
            loss, grads = step(model, x, y)
            opt.update(model, grads)
            mx.eval(model.parameters(), opt.state, loss)
            losses.append(loss.item())
        return losses

    serial = [train(100 + i) for i in range(n)]
    results = [None] * n

    def work(i):
        results[i] = train(100 + i)

    run_threads(work, n)
    for i in range(n):
        np.testing.assert_allclose(results[i], serial[i], rtol=1e-5, atol=1e-6)
        assert results[i][-1] < results[i][0]
    count("threads x training steps (own models)", n * ITERATIONS)


@pytest.mark.parametrize("n", THREADS)
def test_threads_share_inputs_and_lazy_graphs(n):
    rng = np.random.default_rng(n)
    for it in range(ITERATIONS // 5 + 1):
        data = rng.standard_normal((64, 32)).astype(np.float32)
        shared = mx.array(data)  # evaluated, read by all
        lazy = mx.tanh(shared @ shared.T)  # unevaluated, claimed by whoever gets there first
        for _ in range(20):
            lazy = lazy * 0.5 + mx.sin(lazy) * 0.25  # contracting: rounding errors shrink
        ref = np.tanh(data.astype(np.float64) @ data.T)
        for _ in range(20):
            ref = ref * 0.5 + np.sin(ref) * 0.25
        parts = mx.split(lazy, 4, axis=0)  # siblings shared between threads
        results = [None] * n

        def work(i):
            s = mx.new_thread_local_stream(mx.cpu) if i % 2 else mx.cpu
            own = mx.sum(parts[i % 4] * (i + 1), axis=1, stream=s)
            if i % 3 == 0:
                mx.async_eval(own)
            results[i] = np.asarray(own)

        run_threads(work, n)
        for i in range(n):
            np.testing.assert_allclose(
                results[i], np.split(ref, 4)[i % 4].sum(axis=1) * (i + 1), rtol=2e-4, atol=2e-4
            )
    count("threads x iterations (shared lazy graph)", n * (ITERATIONS // 5 + 1))


def test_threads_run_library_calls_on_their_own_streams():
    # Each thread has its own default stream, so on the GPU their library calls run at once:
    # products with a long inner dimension (cuBLASLt splits them and keeps partial sums in a
    # workspace), FFTs (cuFFT's work area), convolutions and attention with its gradient (cuDNN
    # with workspace per call) and a compiled elementwise chain (a generated kernel). Each
    # thread's results equal those it computes alone.
    n = max(THREADS)
    rng = np.random.default_rng(7)

    def normal(*shape, dtype=mx.float32):
        return mx.array(rng.standard_normal(shape, np.float32)).astype(dtype)

    inputs = [
        {
            "a": normal(16, 1 << 16), "b": normal(1 << 16, 16), "c": normal(64, 4096),
            "image": normal(2, 16, 16, 8), "kernel": normal(8, 3, 3, 8),
            "q": normal(2, 4, 64, 64, dtype=mx.bfloat16),
        }
        for _ in range(n)
    ]
    chain = mx.compile(lambda x: mx.tanh(x * 0.5 + 1.0) * mx.sigmoid(x) - x / 3.0)
    attention_grad = mx.grad(lambda q: mx.fast.scaled_dot_product_attention(
        q, q, q, scale=0.125, mask="causal").astype(mx.float32).sum())

    def compute(i):
        t = inputs[i]
        results = []
        for it in range(ITERATIONS):
            outs = [(t["a"] * (k + it + 1)) @ t["b"] for k in range(4)]
            outs.append(mx.fft.rfft(t["c"] * (it + 1)))
            outs.append(mx.conv2d(t["image"] * (it + 1), t["kernel"], padding=1))
            outs.append(attention_grad(t["q"] * (1 + it / 8)).astype(mx.float32))
            outs.append(chain(t["c"] + it))
            mx.eval(outs)
            results.append([np.array(o) for o in outs])
        return results

    alone = [compute(i) for i in range(n)]
    together = [None] * n

    def work(i):
        together[i] = compute(i)

    run_threads(work, n)
    for i in range(n):
        for got, want in zip(together[i], alone[i]):
            for k, (g, w) in enumerate(zip(got, want)):
                rtol = 2e-2 if k == 6 else 1e-5  # bfloat16 attention gradients
                np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * np.abs(w).max())
    count("threads x iterations (library calls)", n * ITERATIONS)


def test_generation_on_a_stream_of_its_own_with_async_eval():
    # mlx-lm's decoding loop: the model runs on a stream made for it, each next token is queued
    # with async_eval and the previous one read while it computes, and a cache grows (buffers
    # freed while the other stream may still use them). The tokens equal a plain loop's.
    rng = np.random.default_rng(3)
    vocab, dims, steps = 97, 32, 150
    emb = mx.array(rng.standard_normal((vocab, dims), np.float32) * 0.5)
    w = mx.array(rng.standard_normal((dims, dims), np.float32) * 0.5)
    mx.eval(emb, w)

    def step(tok, cache):
        h = mx.tanh(emb[tok] + mx.mean(cache, axis=0, keepdims=True) @ w)
        return mx.argmax(h @ emb.T, axis=-1), mx.concatenate([cache, h])

    def plain():
        tok, cache, out = mx.array([5]), mx.zeros((1, dims)), []
        for _ in range(steps):
            tok, cache = step(tok, cache)
            out.append(tok.item())
        return out

    def pipelined(stream):
        tok, cache, out = mx.array([5]), mx.zeros((1, dims)), []
        with mx.stream(stream):
            tok, cache = step(tok, cache)
        mx.async_eval(tok, cache)
        for _ in range(steps - 1):
            with mx.stream(stream):
                following, cache = step(tok, cache)
            mx.async_eval(following, cache)
            out.append(tok.item())
            tok = following
        out.append(tok.item())
        return out

    expected = plain()
    assert len(set(expected)) > 3  # the walk visits several tokens
    assert pipelined(mx.new_stream(mx.default_device())) == expected
    count("decoding steps on a stream of their own", steps)


def test_index_errors_reach_only_the_thread_that_made_them():
    # Threads on their own default streams index one table at once, half of them out of range:
    # each bad take raises in its own thread (on the GPU, at the wait for its stream), and the
    # threads that index correctly never see another's error.
    n = max(THREADS)
    table = mx.arange(100)
    mx.eval(table)
    outcomes = [None] * n

    def work(i):
        raised, wrong = 0, 0
        for it in range(ITERATIONS):
            good = mx.array([it, 99 - it])
            idx = mx.array([it, 100 + i]) if i % 2 else good
            try:
                got = np.array(mx.take(table, idx))
                wrong += int(i % 2 == 1 or got.tolist() != [it, 99 - it])
            except IndexError as e:
                raised += int(i % 2 == 1 and f"Index {100 + i} is out of bounds" in str(e))
                wrong += int(i % 2 == 0)
        outcomes[i] = (raised, wrong)

    run_threads(work, n)
    for i in range(n):
        assert outcomes[i] == ((ITERATIONS if i % 2 else 0), 0), (i, outcomes[i])
    count("threads x takes (index errors)", n * ITERATIONS)


def test_a_raised_index_error_is_not_raised_again_by_synchronize():
    # A thread's out-of-range take raises in that thread. mx.synchronize() afterwards visits
    # every stream, that thread's too, and has nothing new to raise (on the GPU it raised the
    # thread's error again, in whichever test synchronized next).
    table = mx.arange(100)
    mx.eval(table)
    seen = []

    def work(i):
        try:
            mx.eval(mx.take(table, mx.array([107])))
        except IndexError as e:
            seen.append(str(e))

    run_threads(work, 1)
    assert len(seen) == 1 and "Index 107 is out of bounds" in seen[0], seen
    mx.synchronize()
    assert mx.take(table, mx.array([7])).item() == 7


def test_thread_local_stream_behaves_as_documented():
    tls = mx.new_thread_local_stream(mx.cpu)
    assert isinstance(tls, mx.ThreadLocalStream) and tls.device == mx.cpu
    mine = mx.Stream(tls)
    assert mx.Stream(tls) == mine  # the same stream for the same thread
    seen = {}

    def work(i):
        s = mx.Stream(tls)
        assert mx.Stream(tls) == s
        seen[i] = s
        assert mx.add(mx.ones(3), i, stream=tls).tolist() == [1.0 + i] * 3

    run_threads(work, 4)
    assert len({s.index for s in seen.values()} | {mine.index}) == 5
    with mx.stream(tls):
        assert mx.default_stream(mx.cpu) == mine
        assert (mx.ones(2) * 3).tolist() == [3.0, 3.0]
    count("thread-local stream threads", 4)


# Errors, interrupts and memory --------------------------------------------------------------


def test_errors_at_eval_leave_the_process_usable():
    x = mx.arange(10)
    mx.eval(x)
    before = active_memory_settled()
    n = 20 if LONG else 5
    for _ in range(n):
        # A singular matrix fails inside the LAPACK kernel at eval time.
        big = mx.exp(mx.zeros((256, 256)))  # all ones: singular
        with pytest.raises((ValueError, RuntimeError)):
            mx.eval(mx.linalg.inv(big, stream=mx.cpu) + 1)
        del big
        # Out-of-range indices are found only at eval (data-dependent).
        idx = mx.array([3, 1000000]) * 1
        with pytest.raises((IndexError, ValueError, RuntimeError)):
            mx.eval(mx.put_along_axis(mx.zeros(10), idx, mx.array([1.0, 2.0]), axis=0) + 1)
        assert (x + 1).tolist() == list(range(1, 11))
        del idx
    assert active_memory_settled() == before
    count("kernel / index errors at eval, then usable", 2 * n)


def test_failed_shared_node_is_reported_to_every_thread():
    for _ in range(3):
        bad = mx.linalg.inv(mx.zeros((8, 8)), stream=mx.cpu)
        failures = []

        def work(i):
            try:
                mx.eval(mx.sum(bad) + i)
            except (ValueError, RuntimeError):
                failures.append(i)

        run_threads(work, 4)
        assert sorted(failures) == [0, 1, 2, 3]
    assert mx.sum(mx.ones(5)).item() == 5
    count("threads told about a shared failed node", 12)


def test_keyboard_interrupt_during_long_eval():
    before = active_memory_settled()

    def long_eval():
        x = mx.zeros((1 << 18,))
        for _ in range(200):
            x = mx.exp(x) * 0.5
        mx.eval(x)

    interrupt_during(long_eval, rounds=100000)
    assert mx.sum(mx.zeros((4,)) + 1).item() == 4
    assert active_memory_settled() == before
    count("interrupts during long eval", 1)


def test_out_of_memory_raises_and_recovers():
    kept = mx.arange(1000) * 2
    mx.eval(kept)
    before = active_memory_settled()
    old = mx.set_memory_limit(8 << 20)
    try:
        for size in (1 << 22, 1 << 24, 1 << 26):
            with pytest.raises(MemoryError) as info:
                mx.eval(mx.exp(mx.zeros((size,))) + 1)
            msg = str(info.value)
            # names the op and the sizes (requested / limit)
            assert "limit" in msg and any(c.isdigit() for c in msg), msg
            assert any(op in msg for op in ("Full", "Exp", "Unary", "Binary", "Add")), msg
            assert kept[999].item() == 1998  # earlier arrays stay valid
        mx.clear_cache()
        assert (kept + 1)[0].item() == 1  # small work still fits
    finally:
        mx.set_memory_limit(old)
    mx.clear_cache()
    assert active_memory_settled() <= before  # nothing the failures allocated stays
    # The same program continues once memory is there.
    assert mx.sum(mx.exp(mx.zeros((1 << 22,)))).item() == 1 << 22
    count("out-of-memory errors recovered", 3)


@pytest.mark.skipif(not mx.is_available(mx.gpu), reason="no GPU")
def test_gpu_allocation_beyond_the_device_raises_and_recovers():
    """A cudaMalloc that fails (1 TiB, more than the GPU has, under a limit that allows it): the
    allocator releases its cache, waits for the device, retries, then raises MemoryError naming
    the device and the sizes; the device keeps working and nothing stays allocated."""
    kept = mx.arange(1000, stream=mx.gpu) * 2
    mx.eval(kept)
    before = active_memory_settled()
    old = mx.set_memory_limit(1 << 42)
    try:
        with pytest.raises(MemoryError) as info:
            mx.eval(mx.zeros((1 << 20, 1 << 18), stream=mx.gpu))
    finally:
        mx.set_memory_limit(old)
    msg = str(info.value)
    assert "cuda" in msg and "requested 1099511627776 B" in msg, msg
    assert kept[999].item() == 1998
    assert mx.sum(mx.ones((1 << 20,), stream=mx.gpu), stream=mx.gpu).item() == 1 << 20
    mx.clear_cache()
    assert active_memory_settled() <= before
    count("device allocation failures recovered", 1)
