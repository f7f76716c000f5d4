"""GPU results against CPU results for every primitive, over dtypes and layouts (dense,
transposed, sliced with negative steps, broadcast, 0-size). Runs where a GPU is available."""

import os
import subprocess
import sys

import numpy as np
import pytest

import mlx.core as mx

pytestmark = pytest.mark.skipif(not mx.is_available(mx.gpu), reason="no GPU")

FLOATS = [mx.float32, mx.float16, mx.bfloat16, mx.float64]
INTS = [mx.int8, mx.int16, mx.int32, mx.int64, mx.uint8, mx.uint16, mx.uint32, mx.uint64]
ALL = FLOATS + INTS + [mx.bool_, mx.complex64]


def sample(shape, dtype, seed=0, low=-3.0, high=3.0):
    rng = np.random.default_rng(seed)
    if dtype == mx.bool_:
        return mx.array(rng.random(shape) > 0.5)
    if dtype == mx.complex64:
        return mx.array(
            (rng.uniform(low, high, shape) + 1j * rng.uniform(low, high, shape)).astype(np.complex64)
        )
    if dtype in INTS:
        lo = 0 if "uint" in str(dtype) else -20
        return mx.array(rng.integers(lo, 20, shape)).astype(dtype)
    return mx.array(rng.uniform(low, high, shape).astype(np.float32)).astype(dtype)


def layouts(x):
    """The same values in several memory layouts."""
    yield "dense", x
    if x.ndim >= 2:
        yield "T", x.T
    if x.ndim >= 1 and x.shape[-1] > 1:
        yield "reversed", x[..., ::-1]
        yield "strided", x[..., ::2]


def to_np(a):
    a = a.astype(mx.float32) if a.dtype == mx.bfloat16 else a
    return np.array(a)


def check(fn, *args, rtol=None, atol=None):
    cpu = fn(*args, stream=mx.cpu)
    gpu = fn(*args, stream=mx.gpu)
    cpu = cpu if isinstance(cpu, (list, tuple)) else [cpu]
    gpu = gpu if isinstance(gpu, (list, tuple)) else [gpu]
    for c, g in zip(cpu, gpu):
        assert c.dtype == g.dtype and c.shape == g.shape
        dt = c.dtype
        if rtol is None:
            r = {mx.float16: 2e-3, mx.bfloat16: 2e-2, mx.float32: 1e-5}.get(dt, 1e-6 if dt == mx.float64 else 0)
            if dt == mx.complex64:
                r = 1e-5
        else:
            r = rtol
        a = atol if atol is not None else (r * 1e-2 if r else 0)
        np.testing.assert_allclose(to_np(g), to_np(c), rtol=r, atol=a, equal_nan=True)


UNARY_FLOAT = ["exp", "log", "sin", "cos", "tan", "tanh", "sinh", "cosh", "sqrt", "rsqrt",
               "sigmoid", "erf", "erfinv", "expm1", "log1p", "log2", "log10", "arctan", "arcsinh",
               "floor", "ceil", "round", "abs", "negative", "sign", "square", "isnan", "isinf",
               "isfinite", "logical_not"]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", UNARY_FLOAT)
def test_unary_float(name, dtype):
    low = 0.1 if name in ("log", "sqrt", "rsqrt", "log2", "log10", "log1p") else -0.9 if name == "erfinv" else -3
    high = 0.9 if name == "erfinv" else 3
    x = sample((7, 33), dtype, low=low, high=high)
    for _, v in layouts(x):
        check(getattr(mx, name), v)


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("name", ["abs", "negative", "square", "sign", "logical_not"])
def test_unary_any(name, dtype):
    if dtype == mx.bool_ and name in ("negative",):
        pytest.skip("negative of bool is rejected by the op")
    x = sample((5, 9), dtype)
    for _, v in layouts(x):
        check(getattr(mx, name), v)


BINARY = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "equal", "not_equal",
          "less", "less_equal", "greater", "greater_equal", "power", "remainder", "floor_divide",
          "logaddexp", "arctan2", "logical_and", "logical_or", "_gelu_vjp", "_gelu_approx_vjp",
          "_silu_vjp"]


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.bfloat16, mx.int32, mx.int64, mx.uint8])
@pytest.mark.parametrize("name", BINARY)
def test_binary(name, dtype):
    float_only = ("logaddexp", "arctan2", "_gelu_vjp", "_gelu_approx_vjp", "_silu_vjp")
    if name in float_only and dtype not in FLOATS:
        pytest.skip("float-only op")
    a = sample((6, 17), dtype, 1)
    b = sample((6, 17), dtype, 2)
    if name in ("divide", "remainder", "floor_divide", "power") and dtype not in FLOATS:
        b = mx.where(b == 0, mx.array(1, dtype), b)
        if name == "power":
            b = mx.abs(b) % 4
            a = a % 5
    for (_, va), (_, vb) in zip(layouts(a), layouts(b)):
        check(getattr(mx, name), va, vb)
    check(getattr(mx, name), a, b[0:1])  # broadcast row
    check(getattr(mx, name), a[:, :1], b)  # broadcast column
    check(getattr(mx, name), a, mx.array(2, dtype))  # scalar


@pytest.mark.parametrize("name", ["bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"])
@pytest.mark.parametrize("dtype", [mx.int8, mx.int32, mx.uint16, mx.uint64, mx.int64])
def test_bitwise(name, dtype):
    a = sample((4, 10), dtype, 3)
    b = mx.abs(sample((4, 10), dtype, 4)) % 9
    check(getattr(mx, name), a, b)


def test_complex_arith():
    a = sample((5, 6), mx.complex64, 1)
    b = sample((5, 6), mx.complex64, 2)
    for name in ["add", "subtract", "multiply", "divide", "equal"]:
        check(getattr(mx, name), a, b)
    for name in ["exp", "abs", "sqrt", "conjugate", "real", "imag"]:
        check(getattr(mx, name), a)


@pytest.mark.parametrize("dtype", ALL)
def test_astype_and_copy(dtype):
    x = sample((9, 13), dtype)
    for _, v in layouts(x):
        for to in [mx.float32, mx.float16, mx.int32, mx.bool_, mx.uint8, mx.bfloat16, mx.complex64]:
            check(lambda t, stream: t.astype(to, stream=stream), v)
        check(lambda t, stream: mx.contiguous(t, stream=stream), v)


def test_transposing_copy_large():
    x = sample((300, 257), mx.float32)
    check(lambda t, stream: mx.contiguous(t.T, stream=stream), x)
    y = sample((3, 64, 130), mx.float16)
    check(lambda t, stream: mx.contiguous(mx.swapaxes(t, 1, 2), stream=stream), y)


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.bfloat16, mx.int32, mx.int8, mx.bool_, mx.float64])
@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "all", "any", "mean"])
def test_reductions(name, dtype):
    if name == "mean" and dtype == mx.bool_:
        pytest.skip("mean of bool is float: covered by float dtypes")
    x = sample((6, 37, 5), dtype, low=0.5, high=1.5) if name == "prod" else sample((6, 37, 5), dtype)
    fn = getattr(mx, name)
    for axes in [None, 0, 1, 2, (0, 2), (1, 2), (0, 1)]:
        for _, v in layouts(x):
            # Summation order differs between the devices.
            rt = 1e-2 if dtype in (mx.float16, mx.bfloat16) else 1e-4 if dtype == mx.float32 else None
            check(lambda t, stream: fn(t, axis=axes, stream=stream), v, rtol=rt, atol=rt)
    check(lambda t, stream: fn(t, axis=1, keepdims=True, stream=stream), x, rtol=1e-2, atol=1e-2)


def test_large_reductions():
    x = sample((1 << 20,), mx.float32)
    check(lambda t, stream: mx.sum(t, stream=stream), x, rtol=1e-4, atol=1e-2)
    y = sample((4096, 300), mx.float32)
    check(lambda t, stream: mx.sum(t, axis=0, stream=stream), y, rtol=1e-4, atol=1e-3)
    check(lambda t, stream: mx.max(t, axis=1, stream=stream), y)


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.int32, mx.uint8])
def test_arg_reductions(dtype):
    x = sample((7, 45, 3), dtype)
    for axis in [0, 1, 2]:
        check(lambda t, stream: mx.argmax(t, axis=axis, stream=stream), x)
        check(lambda t, stream: mx.argmin(t, axis=axis, stream=stream), x)
    check(lambda t, stream: mx.argmax(t, stream=stream), x)


def test_arg_reduce_nan_and_ties():
    x = mx.array([[1.0, 3.0, 3.0, float("nan"), 2.0, float("nan")], [0.0, 0.0, -1.0, -1.0, 5.0, 5.0]])
    check(lambda t, stream: mx.argmax(t, axis=1, stream=stream), x)
    check(lambda t, stream: mx.argmin(t, axis=1, stream=stream), x)


@pytest.mark.parametrize("dtype", FLOATS)
def test_softmax_logsumexp(dtype):
    x = sample((9, 300), dtype)
    rt = 2e-2 if dtype in (mx.float16, mx.bfloat16) else 1e-5
    for _, v in layouts(x):
        check(lambda t, stream: mx.softmax(t, axis=-1, stream=stream), v, rtol=rt, atol=rt * 1e-2)
        check(lambda t, stream: mx.logsumexp(t, axis=-1, stream=stream), v, rtol=rt, atol=rt)
    inf = mx.array([[float("-inf")] * 4, [1.0, float("inf"), 0.0, 2.0]])
    check(lambda t, stream: mx.logsumexp(t, axis=-1, stream=stream), inf)


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.bfloat16, mx.float64, mx.int32, mx.complex64])
def test_matmul(dtype):
    a = sample((2, 3, 40, 33), dtype, 1)
    b = sample((2, 3, 33, 21), dtype, 2)
    rt = {mx.float16: 1e-2, mx.bfloat16: 5e-2, mx.float32: 1e-4, mx.complex64: 1e-4}.get(dtype)
    check(mx.matmul, a, b, rtol=rt, atol=rt)
    check(mx.matmul, mx.swapaxes(a, -1, -2).swapaxes(-1, -2), b, rtol=rt, atol=rt)
    check(lambda x, y, stream: mx.matmul(mx.swapaxes(y, -1, -2), mx.swapaxes(x, -1, -2), stream=stream), a, b, rtol=rt, atol=rt)
    check(mx.matmul, a, b[0, 0], rtol=rt, atol=rt)  # shared weight
    check(mx.matmul, a[:, :, ::2], b[::-1], rtol=rt, atol=rt)  # irregular batches and rows
    check(mx.matmul, sample((5, 0), dtype), sample((0, 4), dtype))
    if dtype != mx.int32:
        c = sample((2, 3, 40, 21), dtype, 3)
        check(lambda x, y, z, stream: mx.addmm(z, x, y, alpha=0.5, beta=2.0, stream=stream), a, b, c, rtol=rt, atol=rt)


def test_matmul_vector_shapes():
    a = sample((64,), mx.float32)
    b = sample((64, 7), mx.float32)
    check(mx.matmul, a, b, rtol=1e-4, atol=1e-4)
    check(mx.matmul, b.T, a, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", ALL)
def test_where_concat_slice_update(dtype):
    c = sample((8, 11), mx.bool_, 5)
    x = sample((8, 11), dtype, 1)
    y = sample((8, 11), dtype, 2)
    check(mx.where, c, x, y)
    check(mx.where, c, x[:, ::-1], y[:1])
    check(lambda a, b, stream: mx.concatenate([a, b.T.T[:, :3]], axis=1, stream=stream), x, y)
    check(lambda a, b, stream: mx.concatenate([a, b], axis=0, stream=stream), x, y)

    def update(a, b, stream):
        with mx.stream(stream):
            z = a + 0 if dtype != mx.bool_ else mx.logical_or(a, a)
            z[2:7:2, ::3] = b[:3, :4]
            return z

    check(update, x, y)


def test_creation_and_views():
    for dtype in [mx.float32, mx.int32, mx.float16, mx.bool_, mx.int64]:
        check(lambda stream: mx.full((3, 5), 2, dtype=dtype, stream=stream))
        check(lambda stream: mx.arange(0, 17, 3, dtype=dtype, stream=stream) if dtype != mx.bool_ else mx.arange(2, stream=stream))
    x = sample((4, 6, 5), mx.float32)
    check(lambda t, stream: mx.reshape(t.T, (5, 24), stream=stream), x)
    check(lambda t, stream: mx.broadcast_to(t[:, :1], (4, 6, 5), stream=stream) * 1, x)
    check(lambda t, stream: mx.view(t[:, ::2], mx.int32, stream=stream), x)


def test_random_bits_match():
    key = mx.random.key(7)
    for shape, dtype in [((5, 7), mx.uint32), ((13,), mx.uint8), ((3, 3), mx.uint16), ((6,), mx.uint64)]:
        width = {mx.uint32: 4, mx.uint8: 1, mx.uint16: 2, mx.uint64: 8}[dtype]
        check(lambda k, stream: mx.random.bits(shape, width, key=k, stream=stream), key)
    keys = mx.random.split(key, 4)
    check(lambda k, stream: mx.random.uniform(shape=(4, 100), key=k[1], stream=stream), keys)
    check(lambda k, stream: mx.random.normal(shape=(1000,), key=k, stream=stream), key, rtol=1e-5, atol=1e-5)


def test_zero_size_and_one_element():
    for shape in [(0,), (0, 5), (1,), (1, 1)]:
        x = sample(shape, mx.float32)
        check(mx.exp, x)
        check(mx.add, x, x)
        check(lambda t, stream: mx.sum(t, axis=0, stream=stream), x)
        check(lambda t, stream: t.astype(mx.int32, stream=stream), x)


def test_unified_memory_transfers():
    # A CPU-made array feeds GPU ops and back without explicit copies.
    x = mx.array(np.arange(12, dtype=np.float32).reshape(3, 4))
    y = mx.exp(x, stream=mx.gpu)
    z = mx.add(y, x, stream=mx.cpu)
    w = mx.multiply(z, 2, stream=mx.gpu)
    ref = (np.exp(np.arange(12, dtype=np.float32).reshape(3, 4)) + np.arange(12).reshape(3, 4)) * 2
    np.testing.assert_allclose(np.array(w), ref, rtol=1e-6)
    assert w.item() if w.size == 1 else True
    assert w.tolist()[2][3] == pytest.approx(float(ref[2, 3]), rel=1e-6)


SCANS = ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"]


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.bfloat16, mx.float64, mx.int32, mx.int8, mx.uint16, mx.int64, mx.bool_, mx.complex64])
@pytest.mark.parametrize("name", SCANS)
def test_scans(name, dtype):
    if name == "logcumsumexp" and dtype not in FLOATS:
        pytest.skip("logcumsumexp takes floats")
    if dtype == mx.complex64 and name in ("cummax", "cummin"):
        pytest.skip("ordering of complex scans is covered by sort")
    lo, hi = (0.8, 1.2) if name == "cumprod" else (-3, 3)
    fn = getattr(mx, name)
    # Short lines, long lines (several tiles of one block) and strided axes.
    for shape in [(5, 7, 3), (3, 2500), (4000,), (2, 9, 1)]:
        x = sample(shape, dtype, low=lo, high=hi)
        if dtype == mx.complex64 and name == "cumprod":
            x = x / mx.abs(x)  # on the unit circle: long products stay finite
        rt = 3e-2 if dtype in (mx.float16, mx.bfloat16) else 1e-4 if dtype in (mx.float32, mx.complex64) else None
        for axis in range(x.ndim):
            for reverse in (False, True):
                for inclusive in (True, False):
                    for _, v in layouts(x):
                        check(lambda t, stream: fn(t, axis=axis, reverse=reverse, inclusive=inclusive, stream=stream),
                              v, rtol=rt, atol=rt)
    check(lambda t, stream: fn(t, stream=stream), sample((6, 5), dtype, low=lo, high=hi), rtol=3e-2, atol=3e-2)


def test_scan_special_values():
    x = mx.array([[1.0, float("nan"), 2.0, -1.0], [float("-inf"), float("-inf"), 3.0, float("inf")]])
    for name in SCANS[2:]:
        check(lambda t, stream: getattr(mx, name)(t, axis=1, stream=stream), x)
    check(lambda t, stream: mx.cumsum(t, axis=0, stream=stream), mx.zeros((0, 3)))


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.bfloat16, mx.float64, mx.int8, mx.int16, mx.int32, mx.uint32, mx.int64, mx.uint64, mx.bool_])
def test_sorts(dtype):
    rng = np.random.default_rng(5)
    for shape in [(7, 33), (3, 2000), (70000,), (2, 1, 5)]:
        # Few distinct values so that ties are common (argsort must be stable).
        x = mx.array(rng.integers(-4 if dtype not in (mx.uint32, mx.uint64, mx.bool_) else 0, 5, shape)).astype(dtype)
        for axis in range(-1, -x.ndim - 1, -1):
            for _, v in layouts(x):
                check(lambda t, stream: mx.sort(t, axis=axis, stream=stream), v)
                check(lambda t, stream: mx.argsort(t, axis=axis, stream=stream), v)
        n = x.shape[-1]
        k = n // 2
        # Partitions: the k-th element, and what lies on each side of it, match a full sort.
        for name in ("partition", "argpartition"):
            c = getattr(mx, name)(x, k, axis=-1, stream=mx.cpu)
            g = getattr(mx, name)(x, k, axis=-1, stream=mx.gpu)
            if name == "argpartition":
                c = mx.take_along_axis(x, c, axis=-1, stream=mx.cpu)
                g = mx.take_along_axis(x, g, axis=-1, stream=mx.cpu)
            np.testing.assert_array_equal(to_np(g)[..., k], to_np(c)[..., k])
            np.testing.assert_array_equal(np.sort(to_np(g)[..., :k], -1), np.sort(to_np(c)[..., :k], -1))


def test_sort_nan_zero_and_complex():
    x = mx.array([[3.0, float("nan"), -0.0, 0.0, -float("inf"), 1.0, float("nan"), -2.0]] * 3)
    check(lambda t, stream: mx.sort(t, axis=-1, stream=stream), x)
    check(lambda t, stream: mx.argsort(t, axis=-1, stream=stream), x)
    z = sample((4, 50), mx.complex64)
    z = mx.concatenate([z, z[:, :7]], axis=1)  # ties
    check(lambda t, stream: mx.sort(t, axis=-1, stream=stream), z)
    check(lambda t, stream: mx.argsort(t, axis=-1, stream=stream), z)
    # topk's order within the k is unspecified (as in MLX): compare them sorted.
    check(lambda t, stream: mx.sort(mx.topk(t, 5, axis=-1, stream=stream), axis=-1, stream=stream),
          sample((6, 100), mx.float32))


@pytest.mark.parametrize("dtype", [mx.float32, mx.bfloat16, mx.int8, mx.int64, mx.uint16, mx.bool_, mx.complex64, mx.float64])
def test_gathers(dtype):
    x = sample((6, 9, 4), dtype)
    idx = mx.array([[0, -1], [5, 2], [3, 3]])
    for _, v in layouts(x):
        check(lambda t, stream: mx.take(t, idx, axis=1, stream=stream), v)
        check(lambda t, stream: mx.take(t, mx.array([7, 0, -3]).astype(mx.int16), stream=stream), v)
    check(lambda t, stream: mx.take(t, mx.abs(idx).astype(mx.uint32), axis=0, stream=stream), x)
    i3 = mx.array(np.random.default_rng(1).integers(0, 9, (6, 5, 4)))
    check(lambda t, stream: mx.take_along_axis(t, i3, axis=1, stream=stream), x)
    check(lambda t, stream: mx.take_along_axis(t, i3[:, :, :1], axis=1, stream=stream), x)
    # Several index arrays (fancy indexing) with broadcasting and slices.
    a = mx.array([0, 5, -1])
    b = mx.array([[1], [2]])
    cpu = x[a, b]
    with mx.stream(mx.gpu):
        gpu = x[a, b]
    np.testing.assert_array_equal(to_np(gpu), to_np(cpu))
    check(lambda t, stream: mx.take(t, mx.zeros((0,), mx.int32), axis=1, stream=stream), x)


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.bfloat16, mx.int8, mx.int32, mx.uint64, mx.int16, mx.bool_, mx.complex64, mx.float64])
def test_scatters(dtype):
    x = sample((6, 5, 3), dtype, low=0.5, high=1.5)
    u = sample((4, 5, 3), dtype, seed=3, low=0.5, high=1.5)
    unique = mx.array([4, 0, -1, 2])
    dup = mx.array([1, 1, 3, 1])
    rt = 2e-2 if dtype in (mx.float16, mx.bfloat16) else 1e-5 if dtype in (mx.float32, mx.complex64) else None
    for v in (x, x[::-1]):
        check(lambda t, stream: put(t, unique, u, "set", stream), v)
    for op in ["add", "multiply", "maximum", "minimum"]:
        if dtype == mx.complex64 and op in ("maximum", "minimum"):
            continue
        for i in (unique, dup):
            check(lambda t, stream: put(t, i, u, op, stream), x, rtol=rt, atol=rt)
    iax = mx.array(np.random.default_rng(2).integers(0, 5, (6, 2, 3)))
    ua = sample((6, 2, 3), dtype, seed=4)
    check(lambda t, stream: mx.put_along_axis(t, iax[:, :1], ua[:, :1], axis=1, stream=stream), x)
    if dtype in (mx.float32, mx.float16, mx.float64):
        check(lambda t, stream: scatter_add_axis(t, iax, ua, 1, stream), x, rtol=rt, atol=rt)


def put(t, idx, upd, op, stream):
    with mx.stream(stream):
        at = t.at[idx]
        return at.add(upd) if op == "add" else at.multiply(upd) if op == "multiply" else \
            at.maximum(upd) if op == "maximum" else at.minimum(upd) if op == "minimum" else \
            mx.array(scatter_set(t, idx, upd))


def scatter_set(t, idx, upd):
    y = mx.array(t)
    y[idx] = upd
    return y


def scatter_add_axis(t, idx, upd, axis, stream):
    # The derivative of take_along_axis adds along the axis (ScatterAxis with a sum).
    with mx.stream(stream):
        return mx.grad(lambda a: (mx.take_along_axis(a, idx, axis=axis) * upd).sum())(t)


def test_gpu_index_errors_raise_and_recover():
    x = mx.arange(10, stream=mx.gpu)
    with pytest.raises((IndexError, ValueError, RuntimeError)):
        mx.eval(mx.take(x, mx.array([1, 12]), stream=mx.gpu))
    with pytest.raises((IndexError, ValueError, RuntimeError)):
        mx.eval(mx.take_along_axis(x, mx.array([-11]), axis=0, stream=mx.gpu))
    with pytest.raises((IndexError, ValueError, RuntimeError)):
        with mx.stream(mx.gpu):
            mx.eval(x.at[mx.array([3, 10])].add(1))
    # The device and its streams keep working afterwards.
    y = mx.take(x, mx.array([9, -1, 0]), stream=mx.gpu)
    assert y.tolist() == [9, 9, 0]
    assert mx.sum(x, stream=mx.gpu).item() == 45


def grads(fn, argnums):
    """fn's value and its gradient with respect to `argnums`, for check()."""
    def loss(*a):
        # Summed in float32, or float64 for float64 results (the sum order differs by device).
        y = fn(*a)
        return y.astype(mx.float64 if y.dtype == mx.float64 else mx.float32).sum()

    def run(*args, stream):
        with mx.stream(stream):
            value, g = mx.value_and_grad(loss, argnums)(*args)
            return [value] + (list(g) if isinstance(g, (list, tuple)) else [g])
    return run


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.bfloat16])
def test_norms_and_rope(dtype):
    x = sample((4, 7, 96), dtype)
    w = sample((96,), dtype, seed=1)
    b = sample((96,), dtype, seed=2)
    rt = 3e-2 if dtype != mx.float32 else 1e-4
    for _, v in layouts(x):
        if v.shape[-1] != 96:
            continue
        check(lambda t, stream: mx.fast.rms_norm(t, w, 1e-5, stream=stream), v, rtol=rt, atol=rt)
        check(lambda t, stream: mx.fast.layer_norm(t, w, b, 1e-5, stream=stream), v, rtol=rt, atol=rt)
        check(lambda t, stream: mx.fast.layer_norm(t, None, None, 1e-5, stream=stream), v, rtol=rt, atol=rt)
    check(grads(lambda t, g: mx.fast.rms_norm(t, g, 1e-5), (0, 1)), x, w, rtol=5e-2, atol=5e-2)
    check(grads(lambda t, g, c: mx.fast.layer_norm(t, g, c, 1e-5), (0, 1, 2)), x, w, b, rtol=5e-2, atol=5e-2)
    y = sample((2, 3, 9, 64), dtype)
    for trad in (False, True):
        for offset in (0, 5):
            check(lambda t, stream: mx.fast.rope(t, 64, traditional=trad, base=10000.0, scale=1.0,
                                                 offset=offset, stream=stream), y, rtol=rt, atol=rt)
        check(lambda t, stream: mx.fast.rope(t, 32, traditional=trad, base=500.0, scale=0.5, offset=2,
                                             stream=stream), y, rtol=rt, atol=rt)
    check(grads(lambda t: mx.fast.rope(t, 64, traditional=False, base=10000.0, scale=1.0, offset=3), 0),
          y, rtol=5e-2, atol=5e-2)


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.bfloat16])
def test_attention(dtype):
    # Scores of unit scale, as in a model: larger ones make half-precision scores coarser than
    # any tolerance (the GPU composite forms them in the input dtype until the fused kernel).
    q = sample((2, 4, 9, 32), dtype, seed=1, low=-1, high=1)
    k = sample((2, 2, 13, 32), dtype, seed=2, low=-1, high=1)  # grouped queries
    v = sample((2, 2, 13, 32), dtype, seed=3)
    rt = 3e-2 if dtype != mx.float32 else 1e-4
    mask = mx.array(np.random.default_rng(0).random((9, 13)) > 0.3)
    for m in (None, "causal", mask, mask.astype(dtype)):
        check(lambda a, b, c, stream: mx.fast.scaled_dot_product_attention(a, b, c, scale=0.2, mask=m,
                                                                           stream=stream),
              q, k, v, rtol=rt, atol=rt)
    check(grads(lambda a, b, c: mx.fast.scaled_dot_product_attention(a, b, c, scale=0.2, mask="causal"),
                (0, 1, 2)), q, k, v, rtol=5e-2, atol=5e-2)


@pytest.mark.parametrize("nbytes", [2**20 - 4, 2**20, 4 * 2**20 + 12, 17 * 2**20 + 20])
def test_large_transfers_round_trip(nbytes):
    # Copies of 1 MiB and more go through pinned staging buffers in 4 MiB chunks, several at
    # once; sizes around the chunk and ring boundaries, both directions, from two threads.
    import threading
    rng = np.random.default_rng(nbytes)
    host = rng.standard_normal(nbytes // 4).astype(np.float32)
    results = {}

    def work(i):
        x = mx.array(host + i)  # host memory, moved to the GPU by the GPU op
        y = mx.add(x, 1.0, stream=mx.gpu)
        results[i] = np.array(y)  # back to the host
    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(2):
        np.testing.assert_array_equal(results[i], host + i + 1.0)


@pytest.mark.parametrize("dtype", [mx.float32, mx.bfloat16, mx.float16, mx.float64])
@pytest.mark.parametrize("shape", [(7, 65), (3, 2, 50304), (1, 1), (0, 9)], ids=str)
def test_fused_cross_entropy(dtype, shape):
    logits = sample(shape, dtype, seed=1)
    targets = mx.array(np.random.default_rng(2).integers(0, shape[-1], shape[:-1]), dtype=mx.int32)
    check(lambda x, t, stream: mx.fast.cross_entropy(x, t, stream=stream), logits, targets)
    check(grads(lambda x, t: mx.fast.cross_entropy(x, t), 0), logits, targets,
          rtol=5e-2 if dtype == mx.bfloat16 else None, atol=5e-2 if dtype == mx.bfloat16 else None)


def test_fused_cross_entropy_special_values():
    # Rows with +inf, -inf, NaN and an out-of-range target: the GPU gives the CPU's results.
    x = mx.array([[0.0, 1.0, 2.0], [float("inf"), 0.0, 1.0], [-float("inf"), 0.0, 1.0],
                  [float("nan"), 0.0, 1.0], [1.0, 2.0, 3.0], [-1e30, 1e30, 0.0]])
    t = mx.array([0, 1, 2, 1, 5, 1])
    check(lambda a, b, stream: mx.fast.cross_entropy(a, b, stream=stream), x, t)
    check(grads(lambda a, b: mx.fast.cross_entropy(a, b), 0), x, t)


@pytest.mark.parametrize("dtype", [mx.float32, mx.bfloat16, mx.float16])
def test_fused_cross_entropy_special_values_in_long_rows(dtype):
    # Rows of whole 16-byte words take the GPU's vector paths (LM heads): +inf, -inf and NaN
    # anywhere in them, a row of -inf, hugely negative logits and an out-of-range target give
    # the CPU's results.
    n = 4096
    x = np.random.default_rng(3).uniform(-5, 5, (8, n))
    x[1, 77] = np.inf
    x[2, 5] = -np.inf
    x[3, n - 1] = np.nan
    x[4, :] = -np.inf
    x[5, 100:200] = -1e30 if dtype == mx.float32 else -6e4
    x[6, 0], x[6, 9] = np.inf, np.inf
    logits = mx.array(x.astype(np.float32)).astype(dtype)
    t = mx.array([3, 77, 5, 4095, 0, 150, 9, n])
    check(lambda a, b, stream: mx.fast.cross_entropy(a, b, stream=stream), logits, t)
    tol = 5e-2 if dtype == mx.bfloat16 else None
    check(grads(lambda a, b: mx.fast.cross_entropy(a, b), 0), logits, t, rtol=tol, atol=tol)
    ragged = logits[:, 3:]  # rows that are not whole words: the scalar paths
    check(lambda a, b, stream: mx.fast.cross_entropy(a, b, stream=stream), ragged, t % (n - 3))
    check(grads(lambda a, b: mx.fast.cross_entropy(a, b), 0), ragged, t % (n - 3), rtol=tol,
          atol=tol)


def relative_error(got, want, scale_of=None):
    """The largest |got - want| over the largest magnitude of scale_of (want by default),
    floored at 1e-3: gradients compared at the scale of the reference's largest entry."""
    ref = want if scale_of is None else scale_of
    return np.abs(got - want).max(initial=0) / max(np.abs(ref).max(initial=0), 1e-3)


def attention_scores(q, k, scale, causal, mask=None):
    """float64 NumPy scaled scores with grouped heads, -inf where a causal row does not look;
    under a mask array as the op takes it (booleans keep, others are added in q's dtype)."""
    dtype = q.dtype
    q, k = (np.array(t.astype(mx.float32)).astype(np.float64) for t in (q, k))
    k = np.repeat(k, q.shape[1] // k.shape[1], axis=1)
    s = scale * q @ k.swapaxes(-1, -2)
    tq, tk = s.shape[-2:]
    if causal:
        seen = np.arange(tk)[None, :] <= np.arange(tq)[:, None] + (tk - tq)
        s = np.where(seen, s, -np.inf)
    if mask is not None and mask.dtype == mx.bool_:
        s = np.where(np.array(mask), s, -np.inf)
    elif mask is not None:
        s = s + np.array(mask.astype(dtype).astype(mx.float32)).astype(np.float64)
    return s


def attention_lse_reference(q, k, scale, causal):
    """Each query row's natural-log log-sum-exp of its scaled scores, -inf where it sees none."""
    s = attention_scores(q, k, scale, causal)
    m = s.max(axis=-1, initial=-np.inf)
    safe = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        return np.where(np.isfinite(m), safe + np.log(np.exp(s - safe[..., None]).sum(-1)), -np.inf)


def attention_reference(q, k, v, scale, causal, mask=None):
    """float64 NumPy attention with grouped heads; rows that see no key are zeros."""
    v = np.array(v.astype(mx.float32)).astype(np.float64)
    v = np.repeat(v, q.shape[1] // v.shape[1], axis=1)
    s = attention_scores(q, k, scale, causal, mask)
    if s.shape[-1] == 0:
        return np.zeros(q.shape[:-1] + v.shape[-1:])
    m = s.max(axis=-1, keepdims=True)
    p = np.exp(s - np.where(np.isfinite(m), m, 0))
    l = p.sum(axis=-1, keepdims=True)
    return np.where(l > 0, (p / np.where(l > 0, l, 1)) @ v, 0.0)


@pytest.mark.parametrize("dtype", [mx.float16, mx.bfloat16])
@pytest.mark.parametrize("d", [64, 80, 96, 128])
@pytest.mark.parametrize("tq,tk", [(1, 300), (70, 130), (128, 128), (130, 64), (64, 0)],
                         ids=str)
def test_fused_attention_kernel(dtype, d, tq, tk):
    """The GPU's flash kernel (half precision, head dims 64 / 80 / 96 / 128, causal or none, grouped
    heads, decode rows, ragged tiles, more queries than keys, no keys) against float64."""
    q = sample((2, 4, tq, d), dtype, seed=1, low=-1, high=1)
    k = sample((2, 2, tk, d), dtype, seed=2, low=-1, high=1)
    v = sample((2, 2, tk, d), dtype, seed=3)
    tol = 2e-2 if dtype == mx.bfloat16 else 5e-3
    for causal in (False, True):
        out = mx.fast.scaled_dot_product_attention(q, k, v, scale=d**-0.5,
                                                   mask="causal" if causal else None,
                                                   stream=mx.gpu)
        assert out.dtype == dtype and out.shape == (2, 4, tq, d)
        np.testing.assert_allclose(np.array(out.astype(mx.float32)),
                                   attention_reference(q, k, v, d**-0.5, causal),
                                   rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [mx.float16, mx.bfloat16])
@pytest.mark.parametrize("d", [64, 80, 96, 128])
@pytest.mark.parametrize("tq,tk", [(1, 300), (70, 130), (128, 128), (130, 64), (64, 0)],
                         ids=str)
def test_fused_attention_backward_kernel(dtype, d, tq, tk):
    """The GPU's fused backward (dq, dk, dv through grouped heads, ragged tiles, rows that see
    no key, no keys) against the float64 gradients on the CPU, for a random cotangent."""
    q = sample((2, 4, tq, d), dtype, seed=1, low=-1, high=1)
    k = sample((2, 2, tk, d), dtype, seed=2, low=-1, high=1)
    v = sample((2, 2, tk, d), dtype, seed=3)
    w = sample((2, 4, tq, d), mx.float32, seed=4)
    tol = 3e-2 if dtype == mx.bfloat16 else 1e-2
    for causal in (False, True):
        mask = "causal" if causal else None

        def loss(a, b, c, stream):
            out = mx.fast.scaled_dot_product_attention(a, b, c, scale=d**-0.5, mask=mask,
                                                       stream=stream)
            return (out.astype(mx.float32) * w).sum(stream=stream)

        got = mx.grad(lambda a, b, c: loss(a, b, c, mx.gpu), argnums=(0, 1, 2))(q, k, v)
        want = mx.grad(lambda a, b, c: loss(a, b, c, mx.cpu), argnums=(0, 1, 2))(
            *(x.astype(mx.float64) for x in (q, k, v)))
        for name, g, r in zip("qkv", got, want):
            assert g.dtype == dtype and g.shape == r.shape, name
            g, r = np.array(g.astype(mx.float32)), np.array(r)
            err = relative_error(g, r)
            assert err < tol, (name, causal, err)


@pytest.mark.parametrize("dtype", [mx.float16, mx.bfloat16])
@pytest.mark.parametrize("layout", ["one_projection", "grouped", "unaligned"])
def test_fused_attention_on_time_major_views(dtype, layout):
    """Attention layers pass q, k, v as time-major views of one projection (B, T, 3C); the GPU
    kernels read them in place and write the output and the gradients in that order, so the
    layer's transpose-and-reshape back is a view, and so is the concatenation of the gradients.
    Rows the kernels cannot address (not 16-byte aligned) are copied first. Values and
    gradients against float64."""
    b, t, heads, d = 2, 70, 4, 64
    kv_heads = 2 if layout == "grouped" else heads
    pad = 4 if layout == "unaligned" else 0
    x = sample((b, t, pad + (heads + 2 * kv_heads) * d), dtype, seed=1, low=-1, high=1)
    w = sample((b, t, heads * d), mx.float32, seed=2)

    def split(x):
        cuts = [pad, pad + heads * d, pad + (heads + kv_heads) * d, x.shape[-1]]
        return [x[..., lo:hi].reshape(b, t, -1, d).transpose(0, 2, 1, 3)
                for lo, hi in zip(cuts, cuts[1:])]

    def attention(x):
        q, k, v = split(x)
        return mx.fast.scaled_dot_product_attention(q, k, v, scale=d**-0.5, mask="causal")

    def loss(x):
        y = attention(x).transpose(0, 2, 1, 3).reshape(b, t, heads * d)
        return (y.astype(mx.float32) * w).sum()

    tol = 3e-2 if dtype == mx.bfloat16 else 1e-2
    want = attention_reference(*split(x), d**-0.5, True)
    with mx.stream(mx.gpu):
        y = attention(x)
        merged = y.transpose(0, 2, 1, 3).reshape(b, t, heads * d) + 1
        got = mx.grad(loss)(x)
    np.testing.assert_allclose(np.array(y.astype(mx.float32)), want, rtol=tol, atol=tol)
    np.testing.assert_allclose(np.array(y).astype(np.float32), want, rtol=tol, atol=tol)
    np.testing.assert_allclose(np.array(merged.astype(mx.float32)),
                               want.transpose(0, 2, 1, 3).reshape(b, t, -1) + 1, rtol=tol, atol=tol)
    with mx.stream(mx.cpu):
        ref = np.array(mx.grad(loss)(x.astype(mx.float64)))
    assert got.dtype == dtype and got.shape == x.shape
    err = np.abs(np.array(got.astype(mx.float32)) - ref).max() / np.abs(ref).max()
    assert err < tol, err
    if layout == "one_projection":
        # The gradients share one buffer laid out as the projection: its gradient, their
        # concatenation (split's derivative), is a view of it.
        def split_loss(x):
            q, k, v = (p.reshape(b, t, heads, d).transpose(0, 2, 1, 3) for p in mx.split(x, 3, -1))
            y = mx.fast.scaled_dot_product_attention(q, k, v, scale=d**-0.5, mask="causal")
            return (y.transpose(0, 2, 1, 3).reshape(b, t, heads * d).astype(mx.float32) * w).sum()

        mx._kernel_counts(True, True)
        with mx.stream(mx.gpu):
            packed = mx.grad(split_loss)(x)
            mx.eval(packed)
        counts = mx._kernel_counts(False, True)
        err = np.abs(np.array(packed.astype(mx.float32)) - ref).max() / np.abs(ref).max()
        assert err < tol, err
        assert counts.get("ScaledDotProductAttentionVJP:packed") == 1, counts
        assert counts.get("Concatenate:view") == 1, counts


def test_fused_attention_never_stores_the_scores_and_differentiates():
    # (1, 2, 4096, 64) bf16: the scores would be 2 * 4096^2 floats (128 MiB); the fused kernel
    # needs the inputs and the output (4 MiB).
    q, k, v = (sample((1, 2, 4096, 64), mx.bfloat16, seed=s, low=-1, high=1) for s in (1, 2, 3))
    mx.eval(q, k, v)
    mx.reset_peak_memory()
    base = mx.get_active_memory()
    out = mx.fast.scaled_dot_product_attention(q, k, v, scale=0.125, mask="causal", stream=mx.gpu)
    mx.eval(out)
    assert mx.get_peak_memory() - base < 32 * 2**20, mx.get_peak_memory() - base
    # Nor does the fused backward (the composite's would take 2 * 4096^2 floats at least).
    mx.reset_peak_memory()
    base = mx.get_active_memory()
    dq = mx.grad(lambda a: mx.fast.scaled_dot_product_attention(
        a, k, v, scale=0.125, mask="causal", stream=mx.gpu).astype(mx.float32).sum())(q)
    mx.eval(dq)
    assert mx.get_peak_memory() - base < 32 * 2**20, mx.get_peak_memory() - base
    # Gradients (the fused backward recomputes the probabilities tile by tile) match the CPU's.
    small = [sample((1, 2, 40, 64), mx.bfloat16, seed=s, low=-1, high=1) for s in (4, 5, 6)]
    check(grads(lambda a, b, c: mx.fast.scaled_dot_product_attention(a, b, c, scale=0.125,
                                                                     mask="causal"), (0, 1, 2)),
          *small, rtol=5e-2, atol=5e-2)


def attention_masks(b, heads, tq, tk, dtype):
    """Mask arrays an attention layer passes, by name: booleans broadcast over batch and heads
    (with rows that see no key, and ragged padding per batch entry), a transposed view,
    additive masks of the inputs' dtype, one with -inf, and masks that hide whole tiles."""
    rng = np.random.default_rng(7)
    keep = rng.random((tq, tk)) > 0.3
    keep[: min(3, tq)] = False  # rows that see no key: zeros out, no gradient
    lengths = np.array([tk, max(tk // 2, 1)])[:b]
    padding = np.arange(tk)[None, :] < lengths[:, None]
    bias = rng.uniform(-4, 2, (1, heads, tq, tk))
    bias_inf = np.where(rng.random((tq, tk)) > 0.5, 0.0, -np.inf)
    bias_inf[:, 0] = 0.0  # every row sees a key
    # Whole 64 x 64 tiles hidden (the kernels skip them): causal as an array, and a checkerboard
    # of tiles (rows whose tiles are all hidden see no key).
    rows, keys = np.arange(tq)[:, None], np.arange(tk)[None, :]
    causal = keys <= rows + (tk - tq)
    checkerboard = (rows // 64 + keys // 64) % 2 == 0
    return {
        "bool_2d": mx.array(keep),
        "bool_padding": mx.array(padding[:, None, None, :]),
        "bool_transposed": mx.array(np.ascontiguousarray(keep.T)).T,
        "additive": mx.array(bias.astype(np.float32)).astype(dtype),
        "additive_inf": mx.array(bias_inf.astype(np.float32)).astype(dtype),
        "bool_causal": mx.array(causal),
        "bool_tiles": mx.array(checkerboard & keep),
        "additive_tiles": mx.array(np.where(checkerboard, bias, -np.inf)[0].astype(np.float32))
        .astype(dtype),
    }


@pytest.mark.parametrize("dtype", [mx.float16, mx.bfloat16])
@pytest.mark.parametrize("d", [64, 96, 128])
@pytest.mark.parametrize("tq,tk", [(1, 300), (70, 130), (128, 128), (130, 64)], ids=str)
def test_fused_attention_array_masks(dtype, d, tq, tk):
    """Mask arrays (boolean and additive, broadcast, transposed, rows that see no key) run in the
    fused flash kernels, forward and backward, with grouped heads and ragged tiles: values
    against float64 and gradients against the CPU's in float64 (the mask gets none)."""
    b, heads = 2, 4
    q = sample((b, heads, tq, d), dtype, seed=1, low=-1, high=1)
    k = sample((b, 2, tk, d), dtype, seed=2, low=-1, high=1)
    v = sample((b, 2, tk, d), dtype, seed=3)
    w = sample((b, heads, tq, d), mx.float32, seed=4)
    tol = 3e-2 if dtype == mx.bfloat16 else 1e-2
    for name, mask in attention_masks(b, heads, tq, tk, dtype).items():
        def attention(a, c, e, m=mask, stream=mx.gpu):
            return mx.fast.scaled_dot_product_attention(a, c, e, scale=d**-0.5, mask=m,
                                                        stream=stream)

        def loss(a, c, e, m, stream):
            return (attention(a, c, e, m, stream).astype(mx.float32) * w).sum(stream=stream)

        fwd_bwd = lambda a, c, e: mx.value_and_grad(
            lambda x, y, z: loss(x, y, z, mask, mx.gpu), argnums=(0, 1, 2))(a, c, e)
        paths = attention_paths(fwd_bwd, q, k, v)
        assert paths.get("ScaledDotProductAttention:flash") == 1, (name, paths)
        assert paths.get("ScaledDotProductAttentionVJP:flash") == 1, (name, paths)

        out = attention(q, k, v)
        assert out.dtype == dtype and out.shape == (b, heads, tq, d)
        np.testing.assert_allclose(np.array(out.astype(mx.float32)),
                                   attention_reference(q, k, v, d**-0.5, False, mask),
                                   rtol=tol, atol=tol, err_msg=name)

        got = mx.grad(lambda a, c, e: loss(a, c, e, mask, mx.gpu), argnums=(0, 1, 2))(q, k, v)
        m64 = mask if mask.dtype == mx.bool_ else mask.astype(dtype).astype(mx.float64)
        want = mx.grad(lambda a, c, e: loss(a, c, e, m64, mx.cpu), argnums=(0, 1, 2))(
            *(x.astype(mx.float64) for x in (q, k, v)))
        for arg, g, r in zip("qkv", got, want):
            assert g.dtype == dtype and g.shape == r.shape, (name, arg)
            g, r = np.array(g.astype(mx.float32)), np.array(r)
            assert np.isfinite(g).all(), (name, arg)
            err = relative_error(g, r)
            assert err < tol, (name, arg, err)


def test_fused_attention_array_mask_never_stores_the_scores():
    # A (4096, 4096) boolean mask (16 MiB, made beforehand) broadcast over two heads: the
    # composite's scores would take 2 * 4096^2 elements (64 MiB or more); the fused kernels read
    # the mask in place, in both passes.
    t = 4096
    q, k, v = (sample((1, 2, t, 64), mx.bfloat16, seed=s, low=-1, high=1) for s in (1, 2, 3))
    keep = mx.array(np.random.default_rng(5).random((t, t)) > 0.2)
    mx.eval(q, k, v, keep)

    def attention(a):
        return mx.fast.scaled_dot_product_attention(a, k, v, scale=0.125, mask=keep,
                                                    stream=mx.gpu)

    mx.reset_peak_memory()
    base = mx.get_active_memory()
    mx.eval(attention(q))
    assert mx.get_peak_memory() - base < 32 * 2**20, mx.get_peak_memory() - base
    mx.reset_peak_memory()
    base = mx.get_active_memory()
    mx.eval(mx.grad(lambda a: attention(a).astype(mx.float32).sum())(q))
    assert mx.get_peak_memory() - base < 32 * 2**20, mx.get_peak_memory() - base


def attention_paths(fn, *args):
    """{path: count} of the fused attention passes that evaluating fn(*args) ran."""
    mx._kernel_counts(True)
    mx.eval(fn(*args))
    counts = mx._kernel_counts(False)
    return {k: v for k, v in counts.items() if k.startswith("ScaledDotProductAttention")
            and ":" in k}


def test_fused_attention_names_its_path():
    """Each fused pass runs once, through cuDNN's fused attention or our flash kernels, and says
    which (MLX_SDPA_CUDNN=0 keeps cuDNN out)."""
    q, k, v = (sample((2, 4, 96, 64), mx.bfloat16, seed=s, low=-1, high=1) for s in (1, 2, 3))

    def fwd_bwd(a, b, c):
        return mx.value_and_grad(lambda a: mx.fast.scaled_dot_product_attention(
            a, b, c, scale=0.125, mask="causal", stream=mx.gpu).astype(mx.float32).sum())(a)

    paths = attention_paths(fwd_bwd, q, k, v)
    # (The lse paths, counted beside these, say whether the backward reused the forward's.)
    paths = {p: n for p, n in paths.items() if ":lse" not in p}
    assert sum(n for p, n in paths.items() if p.startswith("ScaledDotProductAttention:")) == 1
    assert sum(n for p, n in paths.items() if p.startswith("ScaledDotProductAttentionVJP:")) == 1
    assert set(p.split(":")[1] for p in paths) <= {"cudnn", "flash"}, paths  # 96 rows: no decode
    if os.environ.get("MLX_SDPA_CUDNN") == "0":
        assert all(p.endswith(":flash") for p in paths), paths


def attention_with_lse(q, k, v, causal):
    """(out, lse, {kernel path: count} of evaluating them) of the GPU's attention with its lse
    output, scale 1/sqrt(D)."""
    mx._kernel_counts(True)
    out, lse = mx.fast._scaled_dot_product_attention_with_lse(
        q, k, v, scale=q.shape[-1]**-0.5, mask="causal" if causal else None, stream=mx.gpu)
    mx.eval(out, lse)
    return out, lse, mx._kernel_counts(False)


@pytest.mark.parametrize("dtype", [mx.float16, mx.bfloat16])
@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("tq,tk", [(1, 300), (70, 130), (128, 128), (130, 64), (64, 0)],
                         ids=str)
def test_fused_attention_lse_output(dtype, d, tq, tk):
    """The lse a forward traced for a backward writes beside out (cuDNN's stats, or the flash
    kernel's with MLX_SDPA_CUDNN=0 or where cuDNN declines): float32 natural-log log-sum-exp of
    the scaled scores, -inf for causal rows that see no key and with no keys, against float64."""
    q = sample((2, 4, tq, d), dtype, seed=1, low=-1, high=1)
    k = sample((2, 2, tk, d), dtype, seed=2, low=-1, high=1)
    v = sample((2, 2, tk, d), dtype, seed=3)
    tol = 2e-2 if dtype == mx.bfloat16 else 5e-3
    for causal in (False, True):
        out, lse, counts = attention_with_lse(q, k, v, causal)
        assert counts.get("ScaledDotProductAttention:lse") == 1
        assert lse.dtype == mx.float32 and lse.shape == (2, 4, tq)
        want = attention_lse_reference(q, k, d**-0.5, causal)
        got = np.array(lse)
        np.testing.assert_array_equal(np.isneginf(got), np.isneginf(want))
        seen = np.isfinite(want)
        np.testing.assert_allclose(got[seen], want[seen], rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(np.array(out.astype(mx.float32)),
                                   attention_reference(q, k, v, d**-0.5, causal), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [mx.float16, mx.bfloat16])
@pytest.mark.parametrize("d", [64, 80, 96, 128])
@pytest.mark.parametrize("batch,heads,kv_heads,tq,tk", [
    (1, 32, 8, 1, 4099),   # grouped heads, 4 rows per cache head
    (3, 8, 8, 1, 777),     # one row per cache head
    (2, 16, 1, 1, 2000),   # one cache head for all 16 (multi-query)
    (2, 8, 2, 2, 513),     # two new tokens, 8 rows per cache head
    (1, 5, 5, 3, 3),       # as many keys as queries
    (2, 12, 4, 1, 1),      # a single key
], ids=str)
def test_flash_decoding_kernel(dtype, d, batch, heads, kv_heads, tq, tk):
    """A few query rows against a long cache run the decoding kernel (keys split over the GPU,
    grouped heads scored together, the parts folded): its output and lse against float64, causal
    or not, with the cache a slice of a longer preallocated one (as a KV cache is)."""
    q = sample((batch, heads, tq, d), dtype, seed=1, low=-1, high=1)
    cache = tk + 37
    k = sample((batch, kv_heads, cache, d), dtype, seed=2, low=-1, high=1)[:, :, :tk]
    v = sample((batch, kv_heads, cache, d), dtype, seed=3)[:, :, :tk]
    tol = 2e-2 if dtype == mx.bfloat16 else 5e-3
    for causal in (False, True):
        out, lse, counts = attention_with_lse(q, k, v, causal)
        assert counts.get("ScaledDotProductAttention:decode") == 1
        assert out.dtype == dtype and out.shape == (batch, heads, tq, d)
        np.testing.assert_allclose(np.array(out.astype(mx.float32)),
                                   attention_reference(q, k, v, d**-0.5, causal),
                                   rtol=tol, atol=tol)
        np.testing.assert_allclose(np.array(lse), attention_lse_reference(q, k, d**-0.5, causal),
                                   rtol=1e-4, atol=1e-4)
        plain = mx.fast.scaled_dot_product_attention(q, k, v, scale=d**-0.5,
                                                     mask="causal" if causal else None,
                                                     stream=mx.gpu)
        np.testing.assert_array_equal(np.array(plain.astype(mx.float32)),
                                      np.array(out.astype(mx.float32)))


def test_flash_decoding_leaves_longer_queries_to_the_other_kernels():
    """More than 16 query rows per cache head (here 8 heads per cache head, 3 tokens) go to
    the flash kernels or cuDNN, and their results agree with the decoding kernel's per token."""
    q = sample((1, 16, 3, 64), mx.bfloat16, seed=1, low=-1, high=1)
    k, v = (sample((1, 2, 300, 64), mx.bfloat16, seed=s, low=-1, high=1) for s in (2, 3))
    attend = lambda q: mx.fast.scaled_dot_product_attention(q, k, v, scale=0.125, stream=mx.gpu)
    paths = attention_paths(attend, q)
    assert "ScaledDotProductAttention:decode" not in paths, paths
    assert attention_paths(attend, q[:, :, :1]) == {"ScaledDotProductAttention:decode": 1}
    whole = np.array(attend(q).astype(mx.float32))
    for t in range(3):
        np.testing.assert_allclose(np.array(attend(q[:, :, t:t + 1]).astype(mx.float32)),
                                   whole[:, :, t:t + 1], rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("dtype", [mx.float16, mx.bfloat16])
@pytest.mark.parametrize("tq,tk", [(96, 96), (70, 130), (130, 64)], ids=str)
def test_fused_attention_backward_reuses_the_forward_lse(dtype, tq, tk):
    """A training step's forward writes lse and its backward reads it instead of running another
    forward pass (ScaledDotProductAttentionVJP:lse-reused), under compile too; a plain forward
    writes none, and with lse turned off the backward recomputes it. The gradients agree either
    way, and with the CPU's float64 ones."""
    d = 64
    q = sample((2, 4, tq, d), dtype, seed=1, low=-1, high=1)
    k = sample((2, 2, tk, d), dtype, seed=2, low=-1, high=1)
    v = sample((2, 2, tk, d), dtype, seed=3)
    w = sample((2, 4, tq, d), mx.float32, seed=4)

    def loss(a, b, c, stream=mx.gpu):
        out = mx.fast.scaled_dot_product_attention(a, b, c, scale=d**-0.5, mask="causal",
                                                   stream=stream)
        return (out.astype(mx.float32) * w).sum(stream=stream)

    step = mx.value_and_grad(loss, argnums=(0, 1, 2))
    for fn in (step, mx.compile(mx.value_and_grad(loss, argnums=(0, 1, 2)))):
        paths = attention_paths(fn, q, k, v)
        assert paths.get("ScaledDotProductAttention:lse") == 1, paths
        assert paths.get("ScaledDotProductAttentionVJP:lse-reused") == 1, paths
        assert "ScaledDotProductAttentionVJP:lse-recomputed" not in paths, paths
    assert "ScaledDotProductAttention:lse" not in attention_paths(loss, q, k, v)
    # Evaluated now: vjp's forward overlap starts this step's forward at once, which must not
    # run inside the next count.
    reused = step(q, k, v)[1]
    mx.eval(reused)
    previous = mx.fast._set_attention_lse("never")
    try:
        paths = attention_paths(step, q, k, v)
        recomputed = step(q, k, v)[1]
    finally:
        mx.fast._set_attention_lse(previous)
    assert "ScaledDotProductAttention:lse" not in paths, paths
    assert paths.get("ScaledDotProductAttentionVJP:lse-recomputed") == 1, paths
    want = mx.grad(lambda a, b, c: loss(a, b, c, mx.cpu), argnums=(0, 1, 2))(
        *(x.astype(mx.float64) for x in (q, k, v)))
    tol = 3e-2 if dtype == mx.bfloat16 else 1e-2
    for name, g, g0, r in zip("qkv", reused, recomputed, want):
        assert g.dtype == dtype and g.shape == r.shape, name
        g, g0, r = np.array(g.astype(mx.float32)), np.array(g0.astype(mx.float32)), np.array(r)
        assert relative_error(g, r) < tol, name
        assert relative_error(g, g0, scale_of=r) < tol / 4, name


def test_fused_attention_lse_under_vmap_of_grad():
    """vmap of a training step: the forward's lse is mapped with it (its head axis folded and
    split as out's) and the mapped backward reads it; per-slice gradients agree."""
    d, tq, tk = 64, 40, 72
    qs = sample((3, 2, 4, tq, d), mx.bfloat16, seed=1, low=-1, high=1)
    ks = sample((3, 2, 2, tk, d), mx.bfloat16, seed=2, low=-1, high=1)
    vs = sample((3, 2, 2, tk, d), mx.bfloat16, seed=3)

    def loss(a, b, c):
        out = mx.fast.scaled_dot_product_attention(a, b, c, scale=0.125, mask="causal",
                                                   stream=mx.gpu)
        return out.astype(mx.float32).sum()

    grad = mx.grad(loss, argnums=(0, 1, 2))
    for in_axes, args in (((0, 0, 0), (qs, ks, vs)), ((0, None, None), (qs, ks[0], vs[0]))):
        mapped = mx.vmap(grad, in_axes=in_axes)
        paths = attention_paths(mapped, *args)
        assert paths.get("ScaledDotProductAttentionVJP:lse-reused") == 1, paths
        got = mapped(*args)  # each gradient per batch entry (shared k, v too), along axis 0
        for i in range(3):
            per = grad(*(a[i] if ax == 0 else a for a, ax in zip(args, in_axes)))
            for name, g, p in zip("qkv", got, per):
                g, p = np.array(g[i].astype(mx.float32)), np.array(p.astype(mx.float32))
                assert relative_error(g, p) < 2e-2, (in_axes, name, i)


def test_fused_attention_array_mask_under_vmap_and_compile():
    """A mask array mapped with the queries (its head axis folded as theirs) or shared, through
    vmap of grad and through compile, on the flash path: per-slice values and gradients agree
    with the unmapped, uncompiled calls."""
    d, tq, tk = 64, 40, 72
    qs = sample((3, 1, 4, tq, d), mx.bfloat16, seed=1, low=-1, high=1)
    k = sample((1, 2, tk, d), mx.bfloat16, seed=2, low=-1, high=1)
    v = sample((1, 2, tk, d), mx.bfloat16, seed=3)
    rng = np.random.default_rng(4)
    keep = rng.random((3, tq, tk)) > 0.4
    keep[:, :, 0] = True
    masks = mx.array(keep)

    def attention(a, m):
        return mx.fast.scaled_dot_product_attention(a, k, v, scale=0.125, mask=m, stream=mx.gpu)

    def loss(a, m):
        return attention(a, m).astype(mx.float32).sum()

    grad = mx.grad(loss)
    for in_axes, m in (((0, 0), masks), ((0, None), masks[0])):
        mapped = mx.vmap(grad, in_axes=in_axes)
        paths = attention_paths(mapped, qs, m)
        assert paths.get("ScaledDotProductAttentionVJP:flash") == 1, paths
        got = mapped(qs, m)
        compiled = mx.compile(attention)
        for i in range(3):
            mi = m[i] if in_axes[1] == 0 else m
            want = np.array(grad(qs[i], mi).astype(mx.float32))
            err = relative_error(np.array(got[i].astype(mx.float32)), want)
            assert err < 2e-2, (in_axes, i, err)
            np.testing.assert_array_equal(np.array(compiled(qs[i], mi).astype(mx.float32)),
                                          np.array(attention(qs[i], mi).astype(mx.float32)))


@pytest.mark.parametrize("switch", ["MLX_SDPA_CUDNN=0", "MLX_SDPA_CUDNN_AUTOTUNE=1",
                                    "MLX_SDPA_CUDNN_AUTOTUNE=0"])
def test_fused_attention_tests_under_cudnn_switches(switch):
    """Where cuDNN takes the fused passes, the fused attention tests of this file still pass with
    cuDNN switched off (the flash kernels, the fallback), with the inference forward's plans
    timed too (autotuned on each geometry's first call, as the training graphs are by default)
    and with no plan timed (the heuristics' first)."""
    paths = attention_paths(lambda *a: mx.fast.scaled_dot_product_attention(
        *a, scale=0.125, stream=mx.gpu), *(sample((1, 2, 8, 64), mx.float16, s) for s in (1, 2, 3)))
    if "ScaledDotProductAttention:cudnn" not in paths:
        pytest.skip("cuDNN's fused attention is not in use: the other tests ran the flash kernels")
    name, value = switch.split("=")
    env = dict(os.environ, **{name: value})
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__,
                          "-k", "fused_attention and not switches"], env=env, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert " passed" in out.stdout and " failed" not in out.stdout, out.stdout[-2000:]


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.bfloat16, mx.float64])
def test_addmm_and_batched_matmul(dtype):
    a = sample((3, 17, 24), dtype, 1)
    b = sample((24, 9), dtype, 2)
    c = sample((17, 9), dtype, 3)
    rt = {mx.float16: 1e-2, mx.bfloat16: 5e-2, mx.float32: 1e-4}.get(dtype)
    check(lambda x, y, z, stream: mx.addmm(z, x, y, alpha=0.5, beta=2.0, stream=stream), a, b, c, rtol=rt, atol=rt)
    d = sample((9, 17), dtype, 4)
    check(lambda x, y, stream: mx.matmul(x.transpose(0, 2, 1), y.T, stream=stream),
          a, d, rtol=rt, atol=rt)
    check(grads(lambda x, y: x @ y, (0, 1)), a, b, rtol=5e-2, atol=5e-2)


@pytest.mark.parametrize("dtype", FLOATS)
def test_linear_bias_epilogues(dtype):
    # A bias row is added by cuBLASLt's bias epilogue, and its gradient comes with the weight's
    # from the bias-gradient epilogue (MatmulColumnSums). Rows the epilogue cannot take (a
    # strided or misaligned bias, beta != 1) are spread to the output's shape first.
    rt = {mx.float16: 1e-2, mx.bfloat16: 5e-2, mx.float32: 1e-4}.get(dtype)
    x = sample((3, 37, 24), dtype, 1)
    w = sample((40, 24), dtype, 2)
    weights = sample((3, 37, 40), dtype, 3, low=-1, high=1)
    wide = sample((81,), dtype, 4)
    biases = {"row": sample((40,), dtype, 5), "(1, N)": sample((1, 40), dtype, 6),
              "strided": wide[:80:2], "misaligned": wide[1:41]}
    acc = mx.float64 if dtype == mx.float64 else mx.float32

    def loss_and_grads(alpha, beta):
        def run(b, x, w, stream):
            with mx.stream(stream):
                def f(b, x, w):
                    y = mx.addmm(b, x, w.T, alpha, beta)
                    return (y * weights[: y.shape[0], : y.shape[1]]).astype(acc).sum()
                value, g = mx.value_and_grad(f, (0, 1, 2))(b, x, w)
                return [value, *g]
        return run

    for name, b in biases.items():
        for alpha, beta in [(1.0, 1.0), (0.5, 2.0)]:
            check(lambda b, x, w, stream: mx.addmm(b, x, w.T, alpha, beta, stream=stream),
                  b, x, w, rtol=rt, atol=rt)
            check(loss_and_grads(alpha, beta), b, x, w, rtol=rt and 4 * rt, atol=rt and 4 * rt)
    # One row, a 1-D input, and no rows at all.
    b = biases["row"]
    check(loss_and_grads(1.0, 1.0), b, x[:1, :1], w, rtol=rt and 4 * rt, atol=rt and 4 * rt)
    check(lambda b, x, w, stream: mx.addmm(b, x, w.T, stream=stream), b, x[0, 0], w,
          rtol=rt, atol=rt)
    check(loss_and_grads(1.0, 1.0), b, x[:, :0], w)
    # Each MatmulColumnSums names the way it ran: the epilogue, or a product and a reduction.
    mx._kernel_counts(True, True)
    mx.eval(loss_and_grads(1.0, 1.0)(b, x[0], w, mx.gpu))
    c = mx._kernel_counts(False, True)
    assert c.get("MatmulColumnSums", 0) >= 1, c
    assert c["MatmulColumnSums"] == (c.get("MatmulColumnSums:epilogue", 0)
                                     + c.get("MatmulColumnSums:gemm+reduce", 0)), c


def test_products_under_gemm_autotune():
    """MLX_GEMM_AUTOTUNE=1 times cuBLASLt's candidate algorithms on each shape's first call,
    writing to scratch: the products, accumulations into c, the epilogues (bias, bias gradient,
    GELU and its gradient) and the mixed-precision gradients still match, in a fresh process."""
    tests = os.path.join(os.path.dirname(__file__), "test_matmul_epilogues.py")
    env = dict(os.environ, MLX_GEMM_AUTOTUNE="1")
    chosen = "addmm or bias_epilogues or mixed_precision or matmul_epilogues"
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__,
                          tests, "-k", chosen], env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert " passed" in out.stdout and " failed" not in out.stdout, out.stdout[-2000:]


@pytest.mark.parametrize("dtype", [mx.float16, mx.bfloat16])
def test_mixed_precision_gradients(dtype):
    # float32 weights (and biases) cast to 16 bits: their gradients come out of the products as
    # float32 (cuBLASLt with a float32 D; the bias-gradient epilogue with a float32 bias vector
    # or, with one output widened, its bias type set apart or the product and a reduction).
    x = sample((3, 37, 24), dtype, 1)
    c = sample((3, 37, 40), dtype, 2, low=-1, high=1)
    w = sample((40, 24), mx.float32, 3)
    b = sample((40,), mx.float32, 4)
    mx.eval(x, c, w, b)

    def grads(cast_w, cast_b):
        def run(b, x, w, stream):
            with mx.stream(stream):
                def f(b, w):
                    wc = w.astype(dtype) if cast_w else w
                    bc = b.astype(dtype) if cast_b else b
                    return [mx.addmm(bc, x, wc.T)]

                primals = [b if cast_b else b.astype(dtype), w if cast_w else w.astype(dtype)]
                return mx.vjp(f, primals, [c if x.ndim == 3 else c[0]])[1]
        return run

    for cast_w, cast_b in [(True, True), (True, False), (False, True)]:
        # float32 gradients to float32 rounding; a 16-bit one to its own.
        tol = 1e-4 if cast_w and cast_b else 2e-2
        check(grads(cast_w, cast_b), b, x[0], w, rtol=tol, atol=tol)
        check(grads(cast_w, cast_b), b, x, w, rtol=tol, atol=tol)

    def no_bias(x, w, stream):  # a Matmul of the batch's rows
        with mx.stream(stream):
            return mx.vjp(lambda w: [x @ w.astype(dtype).T], [w], [c])[1]

    check(no_bias, x, w, rtol=1e-4, atol=1e-4)
    # Both outputs float32: one pass, the bias-gradient epilogue.
    mx._kernel_counts(True, True)
    mx.eval(grads(True, True)(b, x[0], w, mx.gpu))
    counts = mx._kernel_counts(False, True)
    assert counts.get("MatmulColumnSums:epilogue", 0) == 1, counts


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.bfloat16])
def test_convolutions(dtype):
    rt = {mx.float16: 2e-2, mx.bfloat16: 8e-2}.get(dtype, 1e-4)
    x1 = sample((2, 20, 6), dtype, 1)
    w1 = sample((8, 3, 6), dtype, 2)
    check(lambda a, b, stream: mx.conv1d(a, b, stride=2, padding=1, stream=stream), x1, w1, rtol=rt, atol=rt)
    x2 = sample((2, 11, 12, 4), dtype, 3)
    w2 = sample((6, 3, 3, 4), dtype, 4)
    check(lambda a, b, stream: mx.conv2d(a, b, stride=(1, 2), padding=1, dilation=(2, 1), stream=stream),
          x2, w2, rtol=rt, atol=rt)
    wg = sample((8, 3, 3, 2), dtype, 5)
    check(lambda a, b, stream: mx.conv2d(a, b, groups=2, stream=stream), x2, wg, rtol=rt, atol=rt)
    check(lambda a, b, stream: mx.conv_transpose2d(a, b, stride=2, padding=1, stream=stream),
          x2, sample((5, 3, 3, 4), dtype, 6), rtol=rt, atol=rt)
    check(grads(lambda a, b: mx.conv2d(a, b, padding=1), (0, 1)), x2, w2, rtol=5e-2, atol=5e-2)
    # Depthwise (the depthwise kernels), a true convolution (flipped kernel) with input dilation,
    # 3-D, and non-contiguous operands.
    check(lambda a, b, stream: mx.conv2d(a, b, groups=4, padding=2, stream=stream),
          x2, sample((4, 5, 5, 1), dtype, 7), rtol=rt, atol=rt)
    check(lambda a, b, stream: mx.conv_general(a, b, stride=2, padding=([1, 0], [2, 1]),
                                               input_dilation=(2, 1), flip=True, stream=stream),
          x2, w2, rtol=rt, atol=rt)
    x3 = sample((1, 5, 6, 7, 3), dtype, 8)
    check(lambda a, b, stream: mx.conv3d(a, b, stride=(1, 2, 1), padding=1, stream=stream),
          x3, sample((4, 3, 2, 3, 3), dtype, 9), rtol=rt, atol=rt)
    check(lambda a, b, stream: mx.conv2d(a, b, padding=1, stream=stream),
          x2[:, ::-1, ::2], w2.transpose(0, 2, 1, 3), rtol=rt, atol=rt)


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.bfloat16, mx.float64])
def test_depthwise_weight_grad(dtype):
    # The weight derivative of a depthwise convolution is its own primitive on both devices:
    # strided, dilated, flipped, cropped, 1-D and 3-D geometries, non-contiguous operands.
    rt = {mx.float16: 2e-2, mx.bfloat16: 8e-2, mx.float64: 1e-9}.get(dtype, 1e-4)
    cases = [((2, 11, 12, 37), (37, 3, 3, 1), dict(stride=[2, 1], padding=[1, 1])),
             ((1, 9, 10, 8), (8, 3, 2, 1), dict(kernel_dilation=[1, 3], padding=[0, 2], flip=True)),
             ((1, 7, 9, 5), (5, 3, 4, 1), dict(input_dilation=[1, 3], stride=[1, 2], padding=[1, 3])),
             ((1, 8, 9, 6), (6, 3, 3, 1), dict(padding=([-1, 1], [1, -1]))),
             ((3, 40, 33), (33, 5, 1), dict(stride=[2], padding=[2])),
             ((1, 5, 6, 7, 19), (19, 3, 3, 3, 1), dict(stride=[1, 2, 1], padding=[1, 1, 1]))]
    # The depthwise kernels take every one (cuDNN refuses float64) but a transposed
    # convolution's (input dilation), which is a convolution.
    path = "depthwise" if dtype == mx.float64 else depthwise_path()
    for i, (xs, ws, kw) in enumerate(cases):
        x, w = sample(xs, dtype, 10 + i), sample(ws, dtype, 20 + i)
        f = lambda a, b: mx.conv_general(a, b, groups=xs[-1], **kw)
        check(grads(f, (1,)), x, w, rtol=rt, atol=rt)
        weight_paths = conv_paths(grads(f, (1,)), x, w, primitive="ConvWeightGrad")
        if "input_dilation" in kw:
            assert weight_paths == {}, weight_paths
        elif path == "depthwise":
            assert weight_paths == {"depthwise": 1}, weight_paths
    # A batch of 64 (the pixels split over many blocks) and a transposed (strided) input.
    x = sample((64, 14, 14, 40), dtype, 30)
    w = sample((40, 3, 3, 1), dtype, 31)
    check(grads(lambda a, b: mx.conv2d(a, b, padding=1, groups=40), (1,)), x, w,
          rtol=rt * 4, atol=rt * 4)
    xt = sample((2, 12, 11, 16), dtype, 32).transpose(0, 2, 1, 3)
    check(grads(lambda a, b: mx.conv2d(a, b, padding=1, groups=16), (1,)), xt,
          sample((16, 3, 3, 1), dtype, 33), rtol=rt, atol=rt)



def conv_paths(fn, *args, primitive="Convolution"):
    """The GPU paths that evaluating fn(*args, stream=mx.gpu) took for `primitive`
    (Convolution or ConvWeightGrad), with counts: {"cudnn": n, "im2col": n, "direct": n}
    (conv.cu counts them while mx._kernel_counts is on)."""
    mx._kernel_counts(True)
    try:
        mx.eval(fn(*args, stream=mx.gpu))
    finally:
        counts = mx._kernel_counts(False)
    prefix = primitive + ":"
    return {k[len(prefix):]: v for k, v in counts.items() if k.startswith(prefix)}


def cudnn_findable():
    """Whether a cuDNN 9 library is findable: the nvidia-cudnn-cu13 wheel (recorded by
    `import mlx`), MLX_CUDNN_LIBNAME or the system's."""
    import ctypes.util
    return bool(os.environ.get("MLX_CUDNN_LIBNAME") or os.environ.get("MLX_CUDNN_WHEEL_LIBNAME")
                or ctypes.util.find_library("cudnn"))


def cudnn_expected():
    """Whether GPU convolutions should reach cuDNN here: a cuDNN library is findable and
    MLX_CUDA_CONV does not turn it off."""
    return os.environ.get("MLX_CUDA_CONV") != "im2col" and cudnn_findable()


def depthwise_path():
    """The path of depthwise convolutions (and their derivatives) on the GPU: their own kernels,
    unless MLX_CUDA_CONV=cudnn hands them to a cuDNN that is present."""
    return "cudnn" if os.environ.get("MLX_CUDA_CONV") == "cudnn" and cudnn_expected() else "depthwise"


def conv_op(name, **kw):
    return lambda a, b, stream: getattr(mx, name)(a, b, stream=stream, **kw)


# (input shape, weight shape, op, arguments): each maps to cuDNN (backend/common/cudnn_conv_plan.h).
CUDNN_CONVS = [
    ((2, 20, 6), (8, 3, 6), "conv1d", dict(stride=2, padding=1)),
    ((2, 11, 12, 4), (6, 3, 3, 4), "conv2d", dict(stride=(1, 2), padding=1, dilation=(2, 1))),
    ((2, 11, 12, 4), (8, 3, 3, 2), "conv2d", dict(groups=2)),
    ((4, 16, 16, 32), (64, 3, 3, 32), "conv2d", dict(stride=2, padding=1)),
    ((2, 14, 14, 64), (32, 1, 1, 64), "conv2d", dict(padding=1)),  # pointwise (unpadded: a product)
    ((1, 5, 6, 7, 3), (4, 3, 2, 3, 3), "conv3d", dict(stride=(1, 2, 1), padding=1)),
    ((2, 9, 10, 4), (6, 2, 3, 4), "conv_general", dict(stride=2, padding=([1, 0], [2, 1]))),
    ((2, 9, 10, 4), (6, 3, 3, 4), "conv_general", dict(padding=([-1, 1], [1, -1]))),
    ((2, 9, 10, 4), (6, 3, 3, 4), "conv_general", dict(padding=1, kernel_dilation=2, flip=True)),
    ((2, 7, 8, 4), (5, 3, 3, 4), "conv_transpose2d", dict(stride=2, padding=1)),
    ((2, 9, 6), (5, 4, 6), "conv_transpose1d", dict(stride=3, padding=1, output_padding=2)),
    ((2, 7, 8, 4), (6, 3, 3, 2), "conv_transpose2d", dict(stride=2, padding=1, groups=2)),
    ((1, 4, 5, 6, 2), (3, 2, 3, 2, 2), "conv_transpose3d", dict(stride=(2, 1, 2), padding=1)),
]


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.bfloat16])
@pytest.mark.parametrize("case", range(len(CUDNN_CONVS)))
def test_cudnn_convolutions(case, dtype):
    """GPU against CPU for convolutions cuDNN runs (forward, then both derivatives), and the
    path they took: cuDNN for the convolution itself wherever a cuDNN library is present."""
    xs, ws, op, kw = CUDNN_CONVS[case]
    rt = {mx.float16: 2e-2, mx.bfloat16: 8e-2}.get(dtype, 1e-4)
    x, w = sample(xs, dtype, 40 + case, -1, 1), sample(ws, dtype, 60 + case, -1, 1)
    f = conv_op(op, **kw)
    check(f, x, w, rtol=rt, atol=rt)
    paths = conv_paths(f, x, w)
    if cudnn_expected():
        assert paths == {"cudnn": 1}, paths
    else:
        assert "cudnn" not in paths, paths
    fg = grads(lambda a, b: getattr(mx, op)(a, b, **kw), (0, 1))
    check(fg, x, w, rtol=max(rt, 5e-2) if dtype != mx.float32 else 1e-3,
          atol=max(rt, 5e-2) if dtype != mx.float32 else 1e-3)
    paths = conv_paths(fg, x, w)
    if cudnn_expected():
        assert paths.get("cudnn", 0) >= 1, paths
    # The weight derivative: cuDNN's filter pass, except for transposed convolutions (a
    # convolution there) and depthwise ones, which may take the direct kernels.
    weight_paths = conv_paths(fg, x, w, primitive="ConvWeightGrad")
    if "transpose" in op:
        assert weight_paths == {}, weight_paths
    elif cudnn_expected() and kw.get("groups", 1) != xs[-1]:
        assert weight_paths == {"cudnn": 1}, weight_paths
    else:
        assert sum(weight_paths.values()) == 1, weight_paths


@pytest.mark.parametrize("dtype", [mx.float32, mx.float64])
def test_convolutions_off_cudnn(dtype):
    """What cuDNN cannot take runs im2col (depthwise geometries their own kernels) and still
    matches the CPU: float64, and input dilation with a stride above 1."""
    x, w = sample((2, 9, 10, 4), dtype, 80, -1, 1), sample((6, 3, 3, 4), dtype, 81, -1, 1)
    f = conv_op("conv_general", stride=2, padding=1, input_dilation=(2, 1))
    check(f, x, w, rtol=1e-4, atol=1e-4)
    assert "cudnn" not in conv_paths(f, x, w)
    if dtype == mx.float64:
        plain = conv_op("conv2d", padding=1)
        check(plain, x, w, rtol=1e-9, atol=1e-9)
        assert conv_paths(plain, x, w) == {"im2col": 1}
        depthwise = conv_op("conv2d", padding=1, groups=4)
        wd = sample((4, 3, 3, 1), dtype, 82, -1, 1)
        check(depthwise, x, wd, rtol=1e-9, atol=1e-9)
        assert conv_paths(depthwise, x, wd) == {"depthwise": 1}
        # Weight derivatives off cuDNN: the im2col products (grouped, strided, flipped) and
        # the depthwise kernels.
        for kw, wshape, path in ((dict(stride=(2, 1), padding=1, groups=2), (6, 3, 3, 2), "im2col"),
                                 (dict(padding=([1, 0], [0, 1]), flip=True), (6, 2, 3, 4), "im2col"),
                                 (dict(padding=1, groups=4), (4, 3, 3, 1), "depthwise")):
            wk = sample(wshape, dtype, 83, -1, 1)
            fg = grads(lambda a, b: mx.conv_general(a, b, **kw), (1,))
            check(fg, x, wk, rtol=1e-9, atol=1e-9)
            assert conv_paths(fg, x, wk, primitive="ConvWeightGrad") == {path: 1}


# (input shape, weight shape, op, arguments): depthwise convolutions (groups = input channels,
# channel multiplier m = weight rows / groups, 1 to 4) and the transposed form (groups of
# several input channels and one output, as a multiplier's input derivative is), which run
# their own GPU kernels (backend/cuda/conv_depthwise.h). Channels not a multiple of the kernels'
# 8-wide packs (3, 5, 13, 33: element by element) and multiples (8, 16, 256: 16-byte packs).
DEPTHWISE_CONVS = [
    ((3, 7, 5, 13), (13, 3, 3, 1), "conv2d", dict(padding=1, groups=13)),
    ((1, 7, 5, 3), (6, 3, 3, 1), "conv2d", dict(stride=2, padding=1, groups=3)),  # m = 2
    ((3, 9, 8, 256), (256, 3, 3, 1), "conv2d", dict(padding=2, dilation=2, groups=256)),
    ((1, 11, 10, 256), (512, 3, 3, 1), "conv2d", dict(stride=2, padding=1, dilation=2, groups=256)),
    ((3, 7, 5, 16), (16, 3, 2, 1), "conv_general",
     dict(stride=(2, 1), padding=([1, 0], [2, 1]), groups=16)),  # asymmetric padding
    ((2, 8, 9, 6), (12, 3, 3, 1), "conv_general", dict(padding=([-1, 1], [1, -1]), groups=6)),
    ((2, 9, 10, 8), (8, 3, 3, 1), "conv_general",
     dict(padding=1, kernel_dilation=(2, 1), flip=True, groups=8)),
    ((2, 1, 1, 13), (13, 3, 3, 1), "conv2d", dict(padding=1, groups=13)),  # a 1x1 input
    ((3, 13, 5, 5), (15, 3, 3, 1), "conv2d", dict(padding=(0, 1), groups=5)),  # m = 3
    ((1, 6, 7, 8), (32, 5, 5, 1), "conv2d", dict(padding=2, groups=8)),  # m = 4, 25 taps
    ((1, 9, 10, 256), (256, 7, 7, 1), "conv2d", dict(padding=3, groups=256)),  # taps in chunks
    ((3, 40, 33), (33, 5, 1), "conv1d", dict(stride=2, padding=2, groups=33)),
    ((1, 17, 8), (16, 3, 1), "conv1d", dict(padding=2, dilation=2, groups=8)),  # m = 2
    ((2, 100, 256), (256, 80, 1), "conv1d", dict(padding=10, groups=256)),  # 80 taps
    ((1, 5, 6, 7, 19), (19, 3, 3, 3, 1), "conv3d", dict(stride=(1, 2, 1), padding=1, groups=19)),
    ((2, 4, 5, 6, 8), (16, 2, 3, 3, 1), "conv3d", dict(padding=(0, 1, 1), groups=8)),  # m = 2
    ((2, 7, 6, 26), (13, 3, 3, 2), "conv2d", dict(padding=1, groups=13)),  # transposed form
    ((2, 7, 8, 12), (12, 3, 3, 1), "conv_transpose2d", dict(stride=2, padding=1, groups=12)),
]


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.bfloat16])
@pytest.mark.parametrize("case", range(len(DEPTHWISE_CONVS)))
def test_depthwise_convolutions(case, dtype):
    """GPU against CPU for depthwise convolutions, forward and both derivatives, and their
    paths: the depthwise kernels for the convolution, for its input derivative (a transposed
    depthwise convolution) and for its weight derivative (ConvWeightGrad)."""
    xs, ws, op, kw = DEPTHWISE_CONVS[case]
    rt = {mx.float16: 2e-2, mx.bfloat16: 8e-2}.get(dtype, 1e-4)
    x, w = sample(xs, dtype, 90 + case, -1, 1), sample(ws, dtype, 120 + case, -1, 1)
    f = conv_op(op, **kw)
    check(f, x, w, rtol=rt, atol=rt)
    path = depthwise_path()
    assert conv_paths(f, x, w) == {path: 1}
    fg = grads(lambda a, b: getattr(mx, op)(a, b, **kw), (0, 1))
    gt = max(rt, 5e-2) if dtype != mx.float32 else 1e-3
    check(fg, x, w, rtol=gt, atol=gt)
    if path != "depthwise":
        return
    # The forward convolution and its input derivative (a transposed convolution's weight
    # derivative is a convolution too, with the batch as channels, and may take any path).
    paths = conv_paths(fg, x, w)
    assert paths.get("depthwise", 0) >= 2, paths
    weight_paths = conv_paths(fg, x, w, primitive="ConvWeightGrad")
    if "transpose" in op:
        assert weight_paths == {}, weight_paths
    else:
        assert paths == {"depthwise": 2}, paths
        if ws[-1] == 1:
            assert weight_paths == {"depthwise": 1}, weight_paths
        else:  # groups of two input channels: cuDNN's filter pass or im2col
            assert sum(weight_paths.values()) == 1 and "depthwise" not in weight_paths, weight_paths


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.bfloat16, mx.float64])
def test_depthwise_layouts_and_sizes(dtype):
    """Depthwise convolutions of non-contiguous and offset operands, float64 (the kernels take
    it too), empty batches and inputs that only padding reaches."""
    rt = {mx.float16: 2e-2, mx.bfloat16: 8e-2, mx.float64: 1e-9}.get(dtype, 1e-4)
    x = sample((2, 9, 8, 40), dtype, 150, -1, 1)
    w = sample((40, 3, 3, 1), dtype, 151, -1, 1)
    f = conv_op("conv2d", padding=1, groups=40)
    fg = grads(lambda a, b: mx.conv2d(a, b, padding=1, groups=40), (0, 1))
    gt = max(rt, 5e-2) if dtype in (mx.float16, mx.bfloat16) else rt * 10
    for v in (x[:, ::-1, ::2], x.transpose(0, 2, 1, 3), x[..., ::-1]):
        check(f, v, w, rtol=rt, atol=rt)
        check(fg, v, w, rtol=gt, atol=gt)
    flat = sample((2 * 9 * 8 * 40 + 3,), dtype, 152, -1, 1)
    check(f, flat[3:].reshape(2, 9, 8, 40), w[::-1], rtol=rt, atol=rt)  # data 3 elements in
    check(fg, flat[3:].reshape(2, 9, 8, 40), w[::-1], rtol=gt, atol=gt)
    path = "depthwise" if dtype == mx.float64 else depthwise_path()
    assert conv_paths(f, x[:, ::-1, ::2], w) == {path: 1}
    # No batch; an input of height 0 whose output only padding reaches (zeros).
    check(f, sample((0, 9, 8, 40), dtype, 153), w)
    empty = conv_op("conv2d", padding=1, groups=40)
    check(empty, sample((2, 0, 8, 40), dtype, 154), sample((40, 1, 3, 1), dtype, 155))
    # More than 1024 taps over few outputs: left to products that split the sums.
    xl, wl = sample((1, 1200, 8), dtype, 156, -1, 1), sample((8, 1100, 1), dtype, 157, -1, 1)
    long = conv_op("conv1d", groups=8)
    check(long, xl, wl, rtol=rt, atol=rt)
    assert "depthwise" not in conv_paths(long, xl, wl)


CONV_DEPTHWISE_SWITCH = """
import mlx.core as mx
x = mx.random.uniform(shape=(2, 9, 10, 8), key=mx.random.key(0))
w = mx.random.uniform(shape=(8, 3, 3, 1), key=mx.random.key(1))
f = lambda a, b: mx.sum(mx.conv2d(a, b, stride=2, padding=1, groups=8, stream=mx.gpu))
mx._kernel_counts(True)
mx.eval(mx.value_and_grad(f, argnums=(0, 1))(x, w))
counts = mx._kernel_counts(False)
print(repr({k: v for k, v in counts.items() if k.startswith(("Convolution:", "ConvWeightGrad:"))}))
"""


@pytest.mark.parametrize("mode", ["im2col", "cudnn"])
def test_cuda_conv_switch_depthwise(mode):
    """MLX_CUDA_CONV=im2col keeps depthwise convolutions and their derivatives on the depthwise
    kernels; MLX_CUDA_CONV=cudnn hands them to cuDNN where a cuDNN library is findable."""
    env = dict(os.environ, MLX_CUDA_CONV=mode)
    out = subprocess.run([sys.executable, "-c", CONV_DEPTHWISE_SWITCH], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    got = eval(out.stdout.strip().splitlines()[-1])
    if mode == "cudnn" and cudnn_findable():
        assert got.get("Convolution:cudnn", 0) >= 1, got
    else:
        assert got == {"Convolution:depthwise": 2, "ConvWeightGrad:depthwise": 1}, got


CONV_IM2COL = """
import mlx.core as mx, numpy as np
x = mx.random.uniform(shape=(2, 9, 10, 4), key=mx.random.key(0))
w = mx.random.uniform(shape=(6, 3, 3, 4), key=mx.random.key(1))
f = lambda s: mx.conv2d(x, w, stride=2, padding=1, stream=s)
mx._kernel_counts(True)
gpu = f(mx.gpu)
dw = lambda s: mx.grad(lambda w_: mx.sum(mx.conv2d(x, w_, stride=2, padding=1, stream=s)))(w)
gpu_dw = dw(mx.gpu)
mx.eval(gpu, gpu_dw)
counts = mx._kernel_counts(False)
np.testing.assert_allclose(np.array(gpu), np.array(f(mx.cpu)), rtol=1e-4, atol=1e-4)
np.testing.assert_allclose(np.array(gpu_dw), np.array(dw(mx.cpu)), rtol=1e-4, atol=1e-4)
print(repr({k: v for k, v in counts.items() if k.startswith(("Convolution:", "ConvWeightGrad:"))}))
"""


def test_cuda_conv_im2col_switch():
    """MLX_CUDA_CONV=im2col keeps convolutions and their weight derivatives off cuDNN."""
    env = dict(os.environ, MLX_CUDA_CONV="im2col")
    out = subprocess.run([sys.executable, "-c", CONV_IM2COL], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    got = eval(out.stdout.strip().splitlines()[-1])
    assert got.get("Convolution:im2col", 0) >= 1 and got.get("ConvWeightGrad:im2col") == 1, got
    assert not any(k.endswith("cudnn") for k in got), got

CONV_GRAPHS = """
import sys
import mlx.core as mx, numpy as np
dtype = getattr(mx, sys.argv[1])
key = lambda i: mx.random.key(i)
x = mx.random.uniform(-1, 1, (2, 9, 10, 16), key=key(0)).astype(dtype)
cases = [(mx.random.uniform(-1, 1, (24, 3, 3, 16), key=key(1)).astype(dtype), 1, 1),
         (mx.random.uniform(-1, 1, (8, 3, 3, 16), key=key(2)).astype(dtype), 2, 1),
         (mx.random.uniform(-1, 1, (8, 2, 3, 16), key=key(3)).astype(dtype), 1, (0, 2))]
graphs = cudnn = 0
for i, (w, stride, pad) in enumerate(cases):
    c = mx.random.uniform(-1, 1, mx.conv2d(x, w, stride, pad).shape, key=key(10 + i))
    def loss(a, b, s):
        return mx.sum(mx.conv2d(a, b, stride, pad, stream=s).astype(mx.float32) * c)
    mx._kernel_counts(True)
    got = mx.value_and_grad(lambda a, b: loss(a, b, mx.gpu), argnums=(0, 1))(x, w)
    mx.eval(got)
    counts = mx._kernel_counts(False)
    graphs += counts.get("CudnnConvGraph", 0)
    cudnn += counts.get("Convolution:cudnn", 0) + counts.get("ConvWeightGrad:cudnn", 0)
    want = mx.value_and_grad(lambda a, b: loss(a, b, mx.cpu), argnums=(0, 1))(
        x.astype(mx.float32), w.astype(mx.float32))
    for g, r in zip([got[0], *got[1]], [want[0], *want[1]]):
        g, r = np.array(g.astype(mx.float32)), np.array(r)
        np.testing.assert_allclose(g, r, rtol=3e-2, atol=3e-2 * max(1.0, np.abs(r).max()))
print(repr({"graphs": graphs, "cudnn": cudnn}))
"""


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("graphs", ["on", "off"])
def test_cudnn_conv_graphs(dtype, graphs):
    """16-bit convolutions and both their derivatives (a strided one's input derivative is cuDNN's
    backward data) run through cuDNN's frontend graphs where the build has the frontend, every
    cuDNN pass of them (MLX_CUDNN_DEBUG says why where not); MLX_CUDNN_CONV_GRAPHS=0 keeps them on
    the legacy calls. The values agree with the CPU's float32 either way."""
    if not cudnn_expected():
        pytest.skip("no cuDNN library here")
    env = dict(os.environ, MLX_CUDNN_DEBUG="1")
    if graphs == "off":
        env["MLX_CUDNN_CONV_GRAPHS"] = "0"
    out = subprocess.run([sys.executable, "-c", CONV_GRAPHS, dtype], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    got = eval(out.stdout.strip().splitlines()[-1])
    assert got["cudnn"] >= 6, (got, out.stderr[-3000:])
    if graphs == "off" or "built without cuDNN's frontend headers" in out.stderr:
        assert got["graphs"] == 0, got
    else:
        assert got["graphs"] == got["cudnn"], (got, out.stderr[-3000:])


def test_ffts():
    x = sample((6, 30), mx.complex64)
    r = sample((6, 30), mx.float32)
    for name, arg in [("fft", x), ("ifft", x), ("rfft", r), ("fft2", x), ("rfftn", r)]:
        check(lambda t, stream: getattr(mx.fft, name)(t, stream=stream), arg, rtol=1e-4, atol=1e-4)
    check(lambda t, stream: mx.fft.irfft(t, n=30, stream=stream), mx.fft.rfft(r), rtol=1e-4, atol=1e-4)
    check(lambda t, stream: mx.fft.fft(t, n=17, axis=0, stream=stream), x, rtol=1e-4, atol=1e-4)
    tol = dict(rtol=1e-4, atol=1e-3)
    z = sample((3, 8, 31), mx.complex64)
    for axis in (0, 1, 2):  # axes that are not last take the copies around cuFFT
        for v in (z, z[:, ::-2], z.transpose(2, 0, 1)):
            check(lambda t, stream: mx.fft.fft(t, axis=axis, stream=stream), v, **tol)
            check(lambda t, stream: mx.fft.ifft(t, axis=axis, stream=stream), v, **tol)
    w = sample((5, 29), mx.float32)
    for n in (1, 2, 29, 64):
        check(lambda t, stream: mx.fft.rfft(t, n=n, stream=stream), w, **tol)
        check(lambda t, stream: mx.fft.irfft(t, n=n, stream=stream), mx.fft.rfft(w, n=n), **tol)
    check(lambda t, stream: mx.fft.rfft(t, axis=0, stream=stream), w.T[::-1], **tol)
    check(lambda t, stream: mx.fft.irfft2(t, stream=stream), mx.fft.rfft2(w), **tol)
    big = sample((4, 4096), mx.complex64)
    check(lambda t, stream: mx.fft.fft(t, stream=stream), big, rtol=1e-4, atol=1e-2)


QMODES = [("affine", 32, 2), ("affine", 64, 3), ("affine", 128, 4), ("affine", 64, 5),
          ("affine", 32, 6), ("affine", 64, 8), ("mxfp4", 32, 4), ("mxfp8", 32, 8),
          ("nvfp4", 16, 4)]


def quantized(w, mode, group_size, bits):
    """w quantized along its last axis: (wq, scales, biases or None)."""
    parts = mx.quantize(w, group_size=group_size, bits=bits, mode=mode)
    return tuple(parts) if mode == "affine" else (parts[0], parts[1], None)


@pytest.mark.parametrize("mode,group_size,bits", QMODES)
@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.bfloat16])
def test_quantized_matmul(mode, group_size, bits, dtype):
    w = sample((96, 256), dtype, 1)
    q = dict(group_size=group_size, bits=bits, mode=mode)

    def compare(fn, x):
        # Half precision: the GPU multiplies W decoded into x's dtype (the CPU decodes into
        # float32), so errors scale with the outputs: 1% of the largest.
        tol = dict(rtol=1e-4, atol=1e-4)
        if dtype != mx.float32:
            ref = fn(x, stream=mx.cpu).astype(mx.float32)
            tol = dict(rtol=2e-2, atol=1e-2 * mx.abs(ref).max().item())
        check(fn, x, **tol)

    wq, scales, biases = quantized(w, mode, group_size, bits)
    # 1 and 8 rows take the matrix-vector kernel, 9 and 2 x 17 the decoded product.
    for rows in [(1, 256), (8, 256), (9, 256), (2, 17, 256)]:
        compare(lambda a, stream: mx.quantized_matmul(a, wq, scales, biases, transpose=True, **q,
                                                      stream=stream), sample(rows, dtype, 2))
    # The same codes used as (96, 256): x @ W.
    compare(lambda a, stream: mx.quantized_matmul(a, wq, scales, biases, transpose=False, **q,
                                                  stream=stream), sample((5, 96), dtype, 3))
    check(lambda a, stream: mx.dequantize(a, scales, biases, **q, stream=stream), wq)


@pytest.mark.parametrize("mode,group_size,bits", [QMODES[2], QMODES[6]])
def test_gather_qmm(mode, group_size, bits):
    w = sample((4, 64, 128), mx.float32, 1)  # four experts
    wq, scales, biases = quantized(w, mode, group_size, bits)
    x = sample((6, 2, 128), mx.float32, 2)
    lhs = mx.array([0, 1, 2, 3, 4, 5, 5, 0])
    rhs = mx.array([3, 0, 3, 1, 3, 0, 2, 3])
    check(lambda a, stream: mx.gather_qmm(a, wq, scales, biases, lhs, rhs, transpose=True,
                                          group_size=group_size, bits=bits, mode=mode,
                                          stream=stream), x, rtol=1e-4, atol=1e-4)
    x1 = sample((8, 1, 128), mx.float32, 3)  # one token per product: the matrix-vector kernel
    check(lambda a, stream: mx.gather_qmm(a, wq, scales, biases, rhs_indices=rhs, transpose=True,
                                          group_size=group_size, bits=bits, mode=mode,
                                          stream=stream), x1, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.bfloat16])
def test_gather_and_segmented_mm(dtype):
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == mx.float32 else dict(rtol=2e-2, atol=5e-2)
    a = sample((5, 3, 16), dtype, 1)
    b = sample((4, 16, 7), dtype, 2)
    lhs = mx.array([[0, 4], [2, 2], [1, 3]])
    rhs = mx.array([[3, 3], [0, 1], [3, 2]])
    check(lambda x, y, stream: mx.gather_mm(x, y, lhs, rhs, stream=stream), a, b, **tol)
    check(lambda x, y, stream: mx.gather_mm(x, y, None, rhs, stream=stream),
          sample((3, 2, 3, 16), dtype, 3), b.swapaxes(-1, -2).swapaxes(-1, -2), **tol)
    # Non-contiguous operands: a transposed right-hand stack and a strided left-hand one.
    check(lambda x, y, stream: mx.gather_mm(x, y, lhs, rhs, stream=stream), a[:, :, ::-1],
          sample((4, 7, 16), dtype, 4).swapaxes(-1, -2), **tol)
    x = sample((6, 40), dtype, 5)
    y = sample((40, 9), dtype, 6)
    segs = mx.array([[0, 10], [10, 10], [5, 40], [30, 12]])  # empty and reversed segments: zeros
    check(lambda p, q, stream: mx.segmented_mm(p, q, segs, stream=stream), x, y, **tol)
    check(lambda p, q, stream: mx.segmented_mm(p, q, segs, stream=stream), x[:, ::-1], y.T.T, **tol)


@pytest.mark.parametrize("n", [1, 2, 64, 12, 20 * 8, 28 * 4, 4096])
@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.float64])
def test_hadamard(n, dtype):
    x = sample((3, n), dtype, 1)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype != mx.float16 else dict(rtol=2e-2, atol=2e-2)
    if dtype == mx.float64:
        tol = dict(rtol=1e-10, atol=1e-10)
    check(lambda t, stream: mx.hadamard_transform(t, stream=stream), x, **tol)
    check(lambda t, stream: mx.hadamard_transform(t, scale=0.5, stream=stream), x.T.T[:, ::-1], **tol)


def test_linalg():
    rng = np.random.default_rng(7)
    m = mx.array((rng.standard_normal((3, 5, 5)) + 5 * np.eye(5)).astype(np.float32))
    spd = m @ m.swapaxes(-1, -2)
    b = mx.array(rng.standard_normal((3, 5, 2)).astype(np.float32))
    tol = dict(rtol=1e-3, atol=1e-3)
    check(lambda t, stream: mx.linalg.inv(t, stream=stream), m, **tol)
    check(lambda t, stream: mx.linalg.cholesky(t, stream=stream), spd, **tol)
    check(lambda t, u, stream: mx.linalg.solve(t, u, stream=stream), m, b, **tol)
    check(lambda t, stream: mx.linalg.eigvalsh(t, stream=stream), spd, **tol)
    check(lambda t, stream: mx.linalg.svd(t, compute_uv=False, stream=stream), m, **tol)
    # Factorizations are unique up to signs: compare what they reconstruct.
    def qr_product(t, stream):
        q, r = mx.linalg.qr(t, stream=stream)
        return mx.matmul(q, r, stream=stream)
    check(qr_product, m, **tol)
    def svd_product(t, stream):
        u, s, vt = mx.linalg.svd(t, stream=stream)
        return mx.matmul(u * s[..., None, :], vt, stream=stream)
    check(svd_product, m, **tol)
    check(lu_product, m, **tol)
    def eig_values(t, stream):
        w = mx.linalg.eigvals(t, stream=stream)
        return mx.sort(mx.real(w), stream=stream)
    check(eig_values, spd, **tol)


def lu_product(t, stream):
    """L[p] @ U, which lu promises equals t."""
    p, l, u = mx.linalg.lu(t, stream=stream)
    rows = mx.broadcast_to(p[..., None], l.shape)
    return mx.matmul(mx.take_along_axis(l, rows, axis=-2, stream=stream), u, stream=stream)


LINALG_SHAPES = [(4, 4), (1, 1), (2, 3, 6, 4), (5, 7), (3, 9, 9), (2, 70, 70)]


@pytest.mark.parametrize("dtype", [mx.float32, mx.float64])
@pytest.mark.parametrize("shape", LINALG_SHAPES, ids=str)
def test_linalg_kernels(shape, dtype):
    """Every cuSOLVER-backed primitive against the CPU's LAPACK: tall, wide, square, batched,
    1 x 1; unique outputs directly, sign-ambiguous factors through what they reconstruct."""
    rng = np.random.default_rng(11)
    a = mx.array(rng.standard_normal(shape)).astype(dtype)
    tol = dict(rtol=2e-3, atol=2e-3) if dtype == mx.float32 else dict(rtol=1e-9, atol=1e-9)
    la = mx.linalg
    check(lambda t, stream: la.svd(t, compute_uv=False, stream=stream), a, **tol)

    def svd_parts(t, stream):
        u, s, vt = la.svd(t, stream=stream)
        k = min(t.shape[-2:])
        usv = mx.matmul(u[..., :k] * s[..., None, :], vt[..., :k, :], stream=stream)
        eye_u = mx.matmul(u.swapaxes(-1, -2), u, stream=stream)
        eye_v = mx.matmul(vt, vt.swapaxes(-1, -2), stream=stream)
        return [usv, eye_u, eye_v]
    check(svd_parts, a, **tol)

    def qr_parts(t, stream):
        q, r = la.qr(t, stream=stream)
        return [mx.matmul(q, r, stream=stream), mx.matmul(q.swapaxes(-1, -2), q, stream=stream),
                mx.abs(r, stream=stream)]
    check(qr_parts, a, **tol)
    # Partial pivoting picks the same rows on both sides for random matrices.
    check(lambda t, stream: la.lu_factor(t, stream=stream), a, **tol)

    check(lu_product, a, **tol)
    np.testing.assert_allclose(np.array(lu_product(a, mx.gpu)), np.array(a), **tol)
    if shape[-1] != shape[-2]:
        return
    n = shape[-1]
    m = a + 4 * mx.eye(n, dtype=dtype)
    spd = mx.matmul(a, a.swapaxes(-1, -2)) + n * mx.eye(n, dtype=dtype)
    b = mx.array(rng.standard_normal(shape[:-1] + (3,))).astype(dtype)
    check(lambda t, stream: la.inv(t, stream=stream), m, **tol)
    check(lambda t, u, stream: la.solve(t, u, stream=stream), m, b, **tol)
    for upper in (False, True):
        check(lambda t, stream: la.cholesky(t, upper=upper, stream=stream), spd, **tol)
        check(lambda t, stream: la.tri_inv(t, upper=upper, stream=stream), m, **tol)
        factor = la.cholesky(spd, upper=upper, stream=mx.cpu)
        check(lambda t, stream: la.cholesky_inv(t, upper=upper, stream=stream), factor, **tol)
        check(lambda t, stream: la.eigvalsh(t, UPLO="U" if upper else "L", stream=stream), spd,
              **tol)

    def eigh_parts(t, stream):
        w, v = la.eigh(t, stream=stream)
        vwv = mx.matmul(v * w[..., None, :], v.swapaxes(-1, -2), stream=stream)
        return [w, vwv, mx.matmul(v.swapaxes(-1, -2), v, stream=stream)]
    check(eigh_parts, spd, **tol)

    def eig_parts(t, stream):
        w, v = la.eig(t, stream=stream)
        residual = mx.matmul(t.astype(mx.complex64), v, stream=stream) - v * w[..., None, :]
        return [mx.sort(mx.real(w), stream=stream), mx.sort(mx.imag(w), stream=stream),
                mx.abs(residual, stream=stream)]
    check(eig_parts, a, rtol=1e-4, atol=1e-4)  # complex64 results whatever the input


def test_linalg_failures_raise_on_the_gpu():
    singular = mx.array([[1.0, 2.0], [2.0, 4.0]])
    with pytest.raises(ValueError, match="singular"):
        mx.eval(mx.linalg.inv(singular, stream=mx.gpu))
    with pytest.raises(ValueError, match="singular"):
        mx.eval(mx.linalg.solve(singular, mx.ones((2, 1)), stream=mx.gpu))
    with pytest.raises(ValueError, match="singular"):
        mx.eval(mx.linalg.tri_inv(mx.array([[1.0, 0.0], [3.0, 0.0]]), stream=mx.gpu))
    with pytest.raises(ValueError, match="singular"):
        mx.eval(mx.linalg.cholesky_inv(mx.array([[2.0, 0.0], [1.0, 0.0]]), stream=mx.gpu))
    with pytest.raises(ValueError, match="positive definite"):
        mx.eval(mx.linalg.cholesky(mx.array([[1.0, 2.0], [2.0, 1.0]]), stream=mx.gpu))
    with pytest.raises(RuntimeError, match="NaN or infinite"):
        mx.eval(mx.linalg.eig(mx.array([[1.0, float("inf")], [0.0, 1.0]]), stream=mx.gpu))
    # Batches of small matrices take one batched call; a failure in any matrix still raises.
    batch = mx.stack([mx.eye(2) * 3, singular, mx.eye(2)])
    with pytest.raises(ValueError, match="singular"):
        mx.eval(mx.linalg.inv(batch, stream=mx.gpu))
    with pytest.raises(ValueError, match="singular"):
        mx.eval(mx.linalg.solve(batch, mx.ones((3, 2, 1)), stream=mx.gpu))
    with pytest.raises(ValueError, match="positive definite"):
        mx.eval(mx.linalg.cholesky(mx.stack([mx.eye(2), mx.array([[1.0, 2.0], [2.0, 1.0]])]),
                                   stream=mx.gpu))
    # A zero pivot is not an error for lu: the factors are still valid.
    lu, piv = mx.linalg.lu_factor(singular, stream=mx.gpu)
    np.testing.assert_allclose(np.array(lu), [[2.0, 4.0], [0.5, 0.0]])
    # The device keeps working after the failures.
    x = mx.linalg.inv(mx.array([[2.0, 0.0], [0.0, 4.0]]), stream=mx.gpu)
    np.testing.assert_allclose(np.array(x), [[0.5, 0.0], [0.0, 0.25]])


def test_divmod_diagonal_strided_views():
    a = sample((5, 6), mx.int32)
    b = mx.where(sample((5, 6), mx.int32, seed=2) == 0, 3, sample((5, 6), mx.int32, seed=2))
    check(lambda x, y, stream: mx.divmod(x, y, stream=stream), a, b)
    f = sample((5, 6), mx.float32)
    check(lambda x, y, stream: mx.divmod(x, y, stream=stream), f, f[::-1] + 5)
    check(lambda x, stream: mx.diagonal(x, offset=1, stream=stream), f)
    check(lambda x, stream: mx.as_strided(x, (3, 4), (6, 1), 2, stream=stream) + 1, f)


COMPILED_ON_GPU = r"""
import numpy as np
import mlx.core as mx

rng = np.random.default_rng(0)
x = mx.array(rng.standard_normal((4, 33)).astype(np.float32))
y = mx.array(rng.standard_normal((33,)).astype(np.float32))
x3 = mx.array(rng.standard_normal((3, 5, 7)).astype(np.float32))
a3 = mx.where(mx.arange(7) == 3, float("nan"), 1.0)  # one NaN per row: the max is NaN
xh = x.astype(mx.float16)
long = mx.array(rng.standard_normal((3000, 6)).astype(np.float32))
cases = {
    "broadcast chain": (lambda a, b: mx.exp(a) * b + 2.0, (x, y)),
    "select and cast": (lambda a: mx.where(a > 0, a, 0.1 * a).astype(mx.float16), (x,)),
    "two outputs": (lambda a, b: (mx.tanh(a - b), mx.sigmoid(a) * b), (x, y)),
    "reduction epilogue": (lambda a: mx.sum(mx.square(a - 1.0), axis=-1), (x,)),
    "max over two axes with NaN": (lambda a: mx.max(a * a3, axis=(-2, -1)), (x3,)),
    "min of a half input": (lambda a: mx.min(a.astype(mx.float32) + 1.0, axis=-1), (xh,)),
    "reduction and an output": (lambda a, b: (mx.exp(a) * b, mx.sum(mx.exp(a) * b, axis=-1)),
                                (x, y)),
    "long rows, strided": (lambda a: mx.sum(mx.sin(a) * 2.0, axis=-1), (long.T,)),
    "one long row (unfused reduction)": (lambda a: mx.sum(mx.sin(a), axis=(0, 1)), (long,)),
    "reduction alone over a broadcast": (lambda a, b: mx.sum(a * b, axis=-1), (y, x)),
    "strided input": (lambda a: mx.abs(a) + mx.cos(a), (x.T[::-1],)),
}
for name, (f, args) in cases.items():
    want = f(*args)
    mx._kernel_counts(True, True)
    got = mx.compile(f)(*args)
    mx.eval(got)
    ran = mx._kernel_counts(False, True)
    assert ran.get("Compiled", 0) >= 1, (name, ran)
    for w, g in zip(want if isinstance(want, tuple) else [want],
                    got if isinstance(got, tuple) else [got]):
        assert w.dtype == g.dtype and w.shape == g.shape, name
        np.testing.assert_allclose(np.array(g).astype(np.float32), np.array(w).astype(np.float32),
                                   rtol=1e-5, atol=1e-5, err_msg=name)
shapeless = mx.compile(lambda a, b: mx.exp(a) * b + 2.0, shapeless=True)
for n in (33, 7):
    a = mx.array(rng.standard_normal((3, n)).astype(np.float32))
    b = mx.array(rng.standard_normal((n,)).astype(np.float32))
    np.testing.assert_allclose(np.array(shapeless(a, b)), np.array(mx.exp(a) * b + 2.0),
                               rtol=1e-6, atol=1e-6)
stats = mx._fused_kernel_stats(True)
print("stats", stats)
assert stats["failed"] == 0, stats
generated = stats["built"] + stats["from_disk"]
assert (generated > 0 and stats["memory_hits"] > 0) == (jit == "sync"), stats
print("ok")
"""


@pytest.mark.parametrize("jit", ["sync", "0"])
def test_compiled_regions_run_on_the_gpu(jit, tmp_path):
    """Compiled functions run their fused regions (Compiled) on the GPU and give the eager
    results: broadcasts, casts, selects, several outputs, reduction epilogues (sum, max with
    NaN, min; one or two axes; long strided rows; beside an output), a strided input,
    shapeless replays at two shapes; through generated kernels (MLX_COMPILE_JIT=sync
    builds them before the first run) and op by op (=0)."""
    env = dict(os.environ, MLX_DEFAULT_DEVICE="gpu", MLX_COMPILE_JIT=jit,
               MLX_KERNEL_CACHE=str(tmp_path))
    code = f"jit = {jit!r}\n" + COMPILED_ON_GPU
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0 and "ok" in out.stdout, (out.stdout[-2000:], out.stderr[-3000:])


NVRTC_FIRST_USE = r"""
import time
import mlx.core as mx
f = mx.compile(lambda x, y: mx.exp(x) * y + 1.0)
x, y = mx.ones((1000,)), mx.ones((1000,))
mx.eval(f(x, y))  # op by op, and the build starts
start = time.perf_counter()
mx._fused_kernel_stats(True)
waited = time.perf_counter() - start
mx.eval(f(x, y))
print(repr((mx._fused_kernel_stats(True), waited)))
"""


def test_gpu_kernels_build_in_process_at_first_use_and_load_from_disk(tmp_path):
    """NVRTC builds a GPU region's kernel in process from its first run (op by op meanwhile),
    the next run uses it, and a second process loads the cubin from the disk cache. Prints how
    long the first process waited for the build."""
    env = dict(os.environ, MLX_DEFAULT_DEVICE="gpu", MLX_KERNEL_CACHE=str(tmp_path))
    env.pop("MLX_COMPILE_JIT", None)
    runs = []
    for _ in range(2):
        out = subprocess.run([sys.executable, "-c", NVRTC_FIRST_USE], env=env,
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr[-3000:]
        runs.append(eval(out.stdout.strip().splitlines()[-1]))
    (first, waited), (second, _) = runs
    print(f"first-use build: waited {waited:.3f} s")
    assert first["built"] == 1 and first["failed"] == 0 and first["memory_hits"] >= 1, first
    assert second["built"] == 0 and second["from_disk"] == 1 and second["interpreted"] == 0, second
    assert len([p for p in os.listdir(tmp_path) if p.endswith(".cubin")]) == 1
