"""bfloat16 products and convolutions on the CPU through both paths: MLX_CPU_GEMM=own takes the
AVX512-BF16 kernels (gemm_bf16.cpp: the blocked GEMM, and dot products of rows for few rows
times W.T) where the CPU has them, =blas the float32 copies (the
fallback of every other CPU), against float64 references of the same bfloat16 values. Both
accumulate in float32 and round once, so the tolerance is half a bfloat16 ulp of the result
plus float32 sums."""

import numpy as np
import pytest

import mlx.core as mx
from test_conv import general_args, ref_conv

HALF_ULP = 2.0**-8  # bfloat16's 8-bit significand, round to nearest


@pytest.fixture(params=["own", "blas"], autouse=True)
def gemm(request, monkeypatch):
    monkeypatch.setenv("MLX_CPU_GEMM", request.param)
    with mx.stream(mx.cpu):
        yield request.param


def bf16(x):
    """x as a bfloat16 array and its values in float64."""
    a = mx.array(np.asarray(x, np.float32)).astype(mx.bfloat16)
    return a, np.array(a.astype(mx.float32)).astype(np.float64)


def check(got, want, mag, rtol=HALF_ULP):
    assert got.dtype == mx.bfloat16
    got = np.array(got.astype(mx.float32)).astype(np.float64)
    assert got.shape == want.shape
    np.testing.assert_array_less(np.abs(got - want), rtol * np.abs(want) + 1e-5 * mag + 1e-30)


SHAPES = [(1, 1, 1), (1, 7, 5), (2, 33, 31), (13, 12, 1), (17, 40, 65), (33, 31, 129),
          (100, 70, 3), (130, 45, 515), (12, 32, 32), (25, 70, 1041)]


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_products_odd_shapes_and_transposes(rng, ta, tb):
    for m, n, k in SHAPES:
        a, a64 = bf16(rng.standard_normal((k, m) if ta else (m, k)))
        b, b64 = bf16(rng.standard_normal((n, k) if tb else (k, n)))
        A, A64 = (a.T, a64.T) if ta else (a, a64)
        B, B64 = (b.T, b64.T) if tb else (b, b64)
        check(A @ B, A64 @ B64, np.abs(A64) @ np.abs(B64))


def test_zero_sizes():
    for m, n, k in [(0, 5, 3), (4, 0, 3), (4, 5, 0), (0, 0, 0)]:
        got = mx.zeros((m, k), mx.bfloat16) @ mx.zeros((k, n), mx.bfloat16)
        assert got.shape == (m, n) and got.dtype == mx.bfloat16
        assert not np.array(got.astype(mx.float32)).any()


def test_strided_views_and_batches(rng):
    big, big64 = bf16(rng.standard_normal((70, 90)))
    # Column strides of 2 in both operands, and an odd leading dimension.
    check(big[3:40, ::2] @ big[1:46, 20:57], big64[3:40, ::2] @ big64[1:46, 20:57],
          np.abs(big64[3:40, ::2]) @ np.abs(big64[1:46, 20:57]))
    a, a64 = bf16(rng.standard_normal((3, 1, 33, 20)))
    b, b64 = bf16(rng.standard_normal((4, 20, 17)))
    check(a @ b, a64 @ b64, np.abs(a64) @ np.abs(b64))
    w, w64 = bf16(rng.standard_normal((65, 20)))  # a shared weight, transposed
    check(a @ w.T, a64 @ w64.T, np.abs(a64) @ np.abs(w64.T))


@pytest.mark.parametrize("m", [1, 2, 5, 16, 17, 96, 97])
def test_few_rows_times_weight(rng, m):
    # x @ W.T in decode and small batches: K odd, past the 32-value steps and the 1024-value
    # blocks; N past the groups of 4 rows of W; W padded (ldw > K) and with rows 2 apart.
    for n, k in [(13, 1), (70, 33), (9, 1041), (5, 2100)]:
        x, x64 = bf16(rng.standard_normal((m, k)))
        big, big64 = bf16(rng.standard_normal((2 * n, k + 3)))
        for w, w64 in [(big[:n, :k], big64[:n, :k]), (big[::2, 2:k + 2], big64[::2, 2:k + 2])]:
            check(x @ w.T, x64 @ w64.T, np.abs(x64) @ np.abs(w64.T))
        # x transposed in memory, and W not transposed (K x N): the other kernels.
        xt, xt64 = bf16(rng.standard_normal((k, m)))
        w, w64 = bf16(rng.standard_normal((k, n)))
        check(xt.T @ w, xt64.T @ w64, np.abs(xt64.T) @ np.abs(w64))


def test_few_rows_batched_and_empty(rng):
    w, w64 = bf16(rng.standard_normal((37, 300)))
    x, x64 = bf16(rng.standard_normal((3, 5, 300)))  # one shared weight: 15 rows
    check(x @ w.T, x64 @ w64.T, np.abs(x64) @ np.abs(w64.T))
    ws, ws64 = bf16(rng.standard_normal((3, 37, 300)))  # a weight per batch
    check(x @ ws.swapaxes(1, 2), x64 @ ws64.swapaxes(1, 2),
          np.abs(x64) @ np.abs(ws64.swapaxes(1, 2)))
    for m, n in [(0, 37), (4, 0)]:
        got = mx.zeros((m, 300), mx.bfloat16) @ mx.zeros((n, 300), mx.bfloat16).T
        assert got.shape == (m, n) and got.dtype == mx.bfloat16


def test_few_rows_nan_inf():
    x = np.ones((5, 67), np.float32)
    w = np.ones((11, 67), np.float32)
    x[2, 60] = np.nan
    w[7, 3] = np.inf
    got = np.array((mx.array(x).astype(mx.bfloat16) @ mx.array(w).astype(mx.bfloat16).T)
                   .astype(mx.float32))
    want = np.full((5, 11), 67.0)
    want[:, 7] = np.inf
    want[2] = np.nan
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("alpha,beta", [(1.0, 1.0), (0.5, 2.0), (-1.5, 0.0)])
def test_addmm(rng, alpha, beta):
    a, a64 = bf16(rng.standard_normal((65, 41)))
    b, b64 = bf16(rng.standard_normal((41, 33)))
    c, c64 = bf16(rng.standard_normal((33,)))
    mag = abs(alpha) * (np.abs(a64) @ np.abs(b64)) + abs(beta) * np.abs(c64)
    check(mx.addmm(c, a, b, alpha=alpha, beta=beta), alpha * (a64 @ b64) + beta * c64, mag)


# (input shape, weight shape, conv_general arguments): at least 16 channels per group take the
# bfloat16 kernel; the last takes float32 whatever the CPU.
CONV_CASES = [
    ((2, 9, 11, 32), (40, 3, 3, 32), dict(padding=[1, 1])),
    ((1, 13, 12, 16), (24, 3, 3, 16), dict(stride=[2, 2], padding=([1, 2], [2, 1]),
                                           kernel_dilation=[2, 1])),
    ((2, 8, 9, 64), (48, 3, 3, 32), dict(groups=2, padding=[1, 1])),
    ((1, 6, 7, 16), (17, 3, 3, 16), dict(input_dilation=[2, 2], padding=[2, 2], flip=True)),
    ((2, 5, 7, 48), (33, 1, 1, 48), {}),
    ((3, 21, 17), (19, 5, 17), dict(stride=[2], padding=[2])),  # 85 = 5 x 17 deep: odd K
    ((2, 7, 6, 4), (5, 3, 3, 4), dict(padding=[1, 1])),
]


@pytest.mark.parametrize("xs,ws,kw", CONV_CASES)
def test_conv_forward(rng, xs, ws, kw):
    x, x64 = bf16(rng.uniform(-1, 1, xs))
    w, w64 = bf16(rng.uniform(-1, 1, ws))
    args = general_args(kw, len(xs) - 2)
    want = ref_conv(x64, w64, **args)
    check(mx.conv_general(x, w, **kw), want, ref_conv(np.abs(x64), np.abs(w64), **args))


@pytest.mark.parametrize("xs,ws,kw", CONV_CASES)
def test_conv_gradients(rng, xs, ws, kw):
    x, x64 = bf16(rng.uniform(-1, 1, xs))
    w, w64 = bf16(rng.uniform(-1, 1, ws))
    out_shape = mx.conv_general(x, w, **kw).shape
    cot, cot64 = bf16(rng.uniform(-1, 1, out_shape))
    _, got = mx.vjp(lambda a, b: mx.conv_general(a, b, **kw), [x, w], [cot])
    f64 = [mx.array(v, dtype=mx.float64) for v in (x64, w64, cot64)]
    with mx.stream(mx.cpu):
        _, want = mx.vjp(lambda a, b: mx.conv_general(a, b, **kw), f64[:2], [f64[2]])
        absf = [mx.abs(v) for v in f64]
        _, mags = mx.vjp(lambda a, b: mx.conv_general(a, b, **kw), absf[:2], [absf[2]])
    for g, e, m in zip(got, want, mags):
        check(g, np.array(e), np.array(m))
