"""float32 matmul / addmm / batched matmul / conv through both CPU GEMMs (MLX_CPU_GEMM=own, the
AVX-512 kernel, and =blas), against NumPy float64. On CPUs without AVX-512 "own" falls back to
BLAS and these tests check that path."""

import numpy as np
import pytest

import mlx.core as mx

SIZES = [1, 2, 7, 16, 17, 33, 127, 255]


@pytest.fixture(params=["own", "blas"])
def gemm(request, monkeypatch):
    monkeypatch.setenv("MLX_CPU_GEMM", request.param)
    return request.param


def check(got, want, tol=2e-5):
    got = np.array(got)
    scale = max(1.0, float(np.max(np.abs(want)))) if want.size else 1.0
    np.testing.assert_allclose(got, want, atol=tol * scale * 4, rtol=tol)


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_shapes_and_transposes(gemm, rng, ta, tb):
    for m, n, k in [(s, SIZES[(i + 3) % len(SIZES)], SIZES[(i + 5) % len(SIZES)]) for i, s in enumerate(SIZES)] + [(513, 31, 300), (64, 64, 64)]:
        a = rng.standard_normal((k, m) if ta else (m, k)).astype(np.float32)
        b = rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32)
        A, B = (a.T if ta else a), (b.T if tb else b)
        xa, xb = mx.array(a), mx.array(b)
        got = (xa.T if ta else xa) @ (xb.T if tb else xb)
        check(got, A.astype(np.float64) @ B.astype(np.float64))


@pytest.mark.parametrize("m", [2, 7, 16, 48, 96])
def test_few_rows_times_transposed_b(gemm, rng, m):
    # x @ W.T with few rows (own: the unpacked dot-product kernel), past its 512-deep K blocks.
    x = rng.standard_normal((m, 1031)).astype(np.float32)
    w = rng.standard_normal((37, 1031)).astype(np.float32)
    check(mx.array(x) @ mx.array(w).T, x.astype(np.float64) @ w.T.astype(np.float64))


def test_zero_sizes(gemm):
    for m, n, k in [(0, 5, 3), (4, 0, 3), (4, 5, 0), (0, 0, 0)]:
        got = mx.zeros((m, k)) @ mx.zeros((k, n))
        assert got.shape == (m, n)
        check(got, np.zeros((m, n)))
    c = mx.full((3, 4), 2.0)
    check(mx.addmm(c, mx.zeros((3, 0)), mx.zeros((0, 4)), alpha=1.0, beta=0.5), np.ones((3, 4)))


def test_leading_dimensions_and_views(gemm, rng):
    big = rng.standard_normal((70, 90)).astype(np.float32)
    a, b = big[3:40, 5:68], big[1:64, 20:57]  # odd leading dimension 90
    check(mx.array(big)[3:40, 5:68] @ mx.array(big)[1:64, 20:57], a.astype(np.float64) @ b)
    # A non-unit column stride is copied first.
    check(mx.array(big)[:, ::2] @ mx.array(big)[:45, :33], big[:, ::2].astype(np.float64) @ big[:45, :33])


def test_batched_broadcast(gemm, rng):
    a = rng.standard_normal((3, 1, 33, 20)).astype(np.float32)
    b = rng.standard_normal((4, 20, 17)).astype(np.float32)
    check(mx.array(a) @ mx.array(b), a.astype(np.float64) @ b)
    shared = rng.standard_normal((20, 65)).astype(np.float32)
    check(mx.array(a) @ mx.array(shared), a.astype(np.float64) @ shared)


@pytest.mark.parametrize("alpha,beta", [(1.0, 1.0), (0.5, 2.0), (-1.5, 0.0), (0.0, 0.25)])
def test_addmm(gemm, rng, alpha, beta):
    a = rng.standard_normal((65, 40)).astype(np.float32)
    b = rng.standard_normal((40, 33)).astype(np.float32)
    c = rng.standard_normal((33,)).astype(np.float32)  # broadcast over rows
    got = mx.addmm(mx.array(c), mx.array(a), mx.array(b), alpha=alpha, beta=beta)
    check(got, alpha * (a.astype(np.float64) @ b) + beta * c)


def test_nan_inf(gemm):
    a = np.ones((40, 40), np.float32)
    b = np.ones((40, 40), np.float32)
    a[3, 5] = np.nan
    b[7, 9] = np.inf
    got = np.array(mx.array(a) @ mx.array(b))
    assert np.isnan(got[3]).all()
    assert np.isinf(got[np.arange(40) != 3, 9]).all()
    assert (got[np.arange(40) != 3][:, np.arange(40) != 9] == 40).all()


def test_conv2d(gemm, rng):
    x = rng.standard_normal((2, 9, 11, 20)).astype(np.float32)
    w = rng.standard_normal((24, 3, 3, 20)).astype(np.float32)
    got = np.array(mx.conv2d(mx.array(x), mx.array(w), padding=1))
    xp = np.pad(x.astype(np.float64), ((0, 0), (1, 1), (1, 1), (0, 0)))
    want = np.zeros((2, 9, 11, 24))
    for i in range(3):
        for j in range(3):
            want += np.einsum("nhwc,oc->nhwo", xp[:, i : i + 9, j : j + 11], w[:, i, j])
    check(got, want)
