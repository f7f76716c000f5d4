"""Convolutions against a float64 NumPy reference (and PyTorch CPU when importable), their
gradients against finite differences, vmap against loops, and the nn conv / pooling layers."""

import itertools
import math

import numpy as np
import pytest

import mlx.core as mx
import mlx.nn as nn

try:
    import torch
except ImportError:  # PyTorch is optional: its comparisons are skipped without it
    torch = None

RNG = np.random.default_rng(0)


def rand(*shape):
    return RNG.uniform(-1, 1, size=shape)


def arr64(x):
    return mx.array(np.asarray(x, dtype=np.float64), dtype=mx.float64)


def windows(x, K, stride=None, lo=None, hi=None, kdil=None, idil=None, fill=0):
    """(kernel tap, the input each output pixel reads through it) for every tap of a kernel of
    spatial shape K: x dilated (fill between elements), padded (fill; negative crops), and
    sliced per tap with the dilated kernel's offset and the stride."""
    nd = x.ndim - 2
    stride = stride or [1] * nd
    lo = lo if lo is not None else [0] * nd
    hi = hi if hi is not None else lo
    kdil = kdil or [1] * nd
    idil = idil or [1] * nd
    N, C = x.shape[0], x.shape[-1]
    dshape = [N] + [(s - 1) * d + 1 if s else 0 for s, d in zip(x.shape[1:-1], idil)] + [C]
    xd = np.full(dshape, fill, dtype=x.dtype)
    xd[(slice(None),) + tuple(slice(None, None, d) for d in idil)] = x
    for i in range(nd):
        ax = i + 1
        if lo[i] < 0:
            xd = np.take(xd, range(-lo[i], xd.shape[ax]), axis=ax)
        if hi[i] < 0:
            xd = np.take(xd, range(0, xd.shape[ax] + hi[i]), axis=ax)
        widths = [(0, 0)] * xd.ndim
        widths[ax] = (max(lo[i], 0), max(hi[i], 0))
        xd = np.pad(xd, widths, constant_values=fill)
    out_sz = [(xd.shape[1 + i] - ((K[i] - 1) * kdil[i] + 1)) // stride[i] + 1 for i in range(nd)]
    for kidx in itertools.product(*[range(k) for k in K]):
        sl = tuple(slice(k * d, k * d + (o - 1) * s + 1, s)
                   for k, d, o, s in zip(kidx, kdil, out_sz, stride))
        yield kidx, xd[(slice(None),) + sl]


def ref_conv(x, w, stride=None, lo=None, hi=None, kdil=None, idil=None, groups=1, flip=False):
    """conv_general in float64 NumPy, written from the definition: dilate, pad (negative crops),
    correlate with the (flipped) dilated kernel, take every stride-th window."""
    x = np.asarray(x, np.float64)
    w = np.asarray(w, np.float64)
    if flip:
        w = w[(slice(None),) + (slice(None, None, -1),) * (x.ndim - 2)]
    C = x.shape[-1]
    O, K = w.shape[0], w.shape[1:-1]
    Cg, Og = C // groups, O // groups
    out = None
    for kidx, patch in windows(x, K, stride, lo, hi, kdil, idil):
        if out is None:
            out = np.zeros(patch.shape[:-1] + (O,))
        for g in range(groups):
            wk = w[(slice(g * Og, (g + 1) * Og),) + kidx]  # (Og, Cg)
            out[..., g * Og:(g + 1) * Og] += patch[..., g * Cg:(g + 1) * Cg] @ wk.T
    return out


def close(a, b, rtol=1e-4, atol=1e-4):
    np.testing.assert_allclose(np.array(a.astype(mx.float32) if a.dtype != mx.float64 else a),
                               b, rtol=rtol, atol=atol)


# (input shape, weight shape, kwargs of conv_general)
GENERAL_CASES = [
    ((2, 9, 3), (4, 3, 3), {}),
    ((2, 9, 4), (6, 3, 2), dict(groups=2)),
    ((1, 11, 3), (2, 4, 3), dict(stride=[2], padding=([1], [2]), kernel_dilation=[2])),
    ((1, 7, 2), (3, 3, 2), dict(input_dilation=[3], padding=[2], flip=True)),
    ((2, 6, 7, 3), (5, 3, 2, 3), dict(stride=[2, 1], padding=[1, 0])),
    ((1, 5, 6, 4), (4, 3, 3, 1), dict(groups=4, padding=[1, 1])),  # depthwise
    ((1, 5, 6, 4), (8, 3, 3, 1), dict(groups=4, stride=[2, 2])),  # depthwise, multiplier 2
    ((2, 5, 4, 6), (3, 2, 3, 2), dict(groups=3, padding=[1, 0])),  # one output per group
    ((2, 5, 5, 6), (4, 1, 1, 6), {}),  # pointwise
    ((2, 5, 5, 6), (4, 1, 1, 3), dict(groups=2)),  # grouped pointwise
    ((1, 6, 5, 2), (3, 2, 3, 2), dict(kernel_dilation=[2, 1], input_dilation=[1, 2], flip=True)),
    ((1, 4, 5, 3, 2), (2, 2, 3, 2, 2), dict(stride=[1, 2, 1], padding=[1, 0, 1])),
    ((1, 1, 1, 1), (1, 1, 1, 1), {}),  # one element
    ((0, 5, 5, 2), (3, 3, 3, 2), {}),  # empty batch
    ((1, 8, 3), (2, 3, 3), dict(padding=([-1], [1]))),  # negative padding crops
    # Strided (the input derivative goes phase by phase): kernel shorter than the stride (a
    # phase without taps), uneven padding, 1x1 downsampling, negative padding.
    ((1, 10, 2), (3, 2, 2), dict(stride=[3], padding=[1])),
    ((2, 9, 8, 3), (4, 3, 3, 3), dict(stride=[2, 3], padding=([2, 0], [1, 2]))),
    ((1, 7, 7, 2), (2, 1, 1, 2), dict(stride=[2, 2])),
    ((1, 9, 3), (2, 3, 3), dict(stride=[2], padding=([-1], [1]))),
    ((1, 7, 6, 4), (4, 3, 3, 2), dict(stride=[2, 2], padding=[1, 1], groups=2, flip=True)),
]


def general_args(kw, nd):
    pad = kw.get("padding", 0)
    if isinstance(pad, tuple):
        lo, hi = pad
    else:
        lo = hi = [pad] * nd if isinstance(pad, int) else pad
    return dict(stride=kw.get("stride"), lo=list(lo), hi=list(hi),
                kdil=kw.get("kernel_dilation"), idil=kw.get("input_dilation"),
                groups=kw.get("groups", 1), flip=kw.get("flip", False))


@pytest.mark.parametrize("xs,ws,kw", GENERAL_CASES)
def test_conv_general_against_reference(xs, ws, kw):
    x, w = rand(*xs), rand(*ws)
    expected = ref_conv(x, w, **general_args(kw, len(xs) - 2))
    out = mx.conv_general(arr64(x), arr64(w), **kw)
    assert out.shape == expected.shape
    close(out, expected, 1e-12, 1e-12)
    out32 = mx.conv_general(mx.array(x, dtype=mx.float32), mx.array(w, dtype=mx.float32), **kw)
    assert out32.dtype == mx.float32
    close(out32, expected, 1e-4, 1e-5)


# 4 channels take the generic path, 32 the float32 implicit GEMM (half inputs go through it).
@pytest.mark.parametrize("xs,ws", [((2, 7, 6, 4), (5, 3, 3, 4)), ((2, 6, 7, 32), (40, 3, 3, 32))],
                         ids=["generic", "float32 kernel"])
@pytest.mark.parametrize("dtype,tol", [(mx.float16, 2e-2), (mx.bfloat16, 1e-1)])
def test_half_dtypes(dtype, tol, xs, ws):
    x, w = rand(*xs), rand(*ws)
    xq, wq = mx.array(x, dtype=dtype), mx.array(w, dtype=dtype)
    out = mx.conv2d(xq, wq, padding=1)
    assert out.dtype == dtype
    expected = ref_conv(np.array(xq.astype(mx.float32)), np.array(wq.astype(mx.float32)),
                        lo=[1, 1])
    close(out, expected, tol, tol)
    # Mixed operands promote.
    assert mx.conv2d(xq, mx.array(w, dtype=mx.float32)).dtype == mx.float32


@pytest.mark.parametrize("groups", [1, 2])
def test_wide_rows_over_several_chunks(groups):
    """7x7 taps over 256 channels: 49 KB of unrolled input per output pixel, so the GPU's
    im2col (64 MB chunks of output rows) takes 3200 pixels in two or three chunks."""
    x = RNG.standard_normal((2, 46, 46, 256)).astype(np.float32)
    w = RNG.standard_normal((8, 7, 7, 256 // groups)).astype(np.float32)
    out = mx.conv2d(mx.array(x), mx.array(w), groups=groups)
    cg, og = 256 // groups, 8 // groups
    ref = np.zeros((2, 40, 40, 8))
    for i, j, g in itertools.product(range(7), range(7), range(groups)):
        patch = x[:, i:i + 40, j:j + 40, g * cg:(g + 1) * cg].astype(np.float64)
        ref[..., g * og:(g + 1) * og] += patch @ w[g * og:(g + 1) * og, i, j].T
    close(out, ref, 1e-4, 2e-3)


def test_non_contiguous_inputs():
    x = rand(2, 6, 7, 3)
    w = rand(4, 3, 3, 3)
    xt = mx.transpose(mx.array(np.ascontiguousarray(x.transpose(0, 2, 1, 3)), dtype=mx.float64),
                      (0, 2, 1, 3))
    wt = mx.array(w[::-1].copy(), dtype=mx.float64)[::-1]
    close(mx.conv2d(xt, wt, padding=(1, 0)), ref_conv(x, w, lo=[1, 0]), 1e-12, 1e-12)
    xb = mx.broadcast_to(arr64(x[:1]), (3, 6, 7, 3))
    close(mx.conv2d(xb, arr64(w)), ref_conv(np.broadcast_to(x[:1], (3, 6, 7, 3)), w), 1e-12, 1e-12)


@pytest.mark.parametrize("stride", [1, 2, 3])
def test_pointwise_convolution_is_a_product(stride):
    """A 1x1 kernel without padding, input dilation or groups runs as one matmul over the pixels
    (subsampled by the stride first): the same values and gradients as the definition, 1D to
    3D, on non-contiguous inputs and with mixed dtypes; no Convolution node is built."""
    for xs, ws in [((2, 7, 3), (5, 1, 3)), ((2, 7, 5, 4), (6, 1, 1, 4)),
                   ((1, 4, 5, 3, 2), (3, 1, 1, 1, 2))]:
        x, w = rand(*xs), rand(*ws)
        nd = len(xs) - 2
        out = mx.conv_general(arr64(x), arr64(w), stride=stride)
        close(out, ref_conv(x, w, stride=[stride] * nd), 1e-12, 1e-12)
        mx._kernel_counts(True, True)
        mx.eval(mx.conv_general(arr64(x), arr64(w), stride=stride))
        ran = mx._kernel_counts(False, True)
        assert "Convolution" not in ran and ran.get("Matmul", 0) == 1, ran
        for argnum in (0, 1):
            directional_check(lambda a, b: mx.conv_general(a, b, stride=stride),
                              [arr64(x), arr64(w)], argnum)
    x, w = rand(2, 6, 5, 3), rand(4, 1, 1, 3)
    xt = mx.transpose(arr64(np.ascontiguousarray(x.transpose(0, 2, 1, 3))), (0, 2, 1, 3))
    close(mx.conv2d(xt, arr64(w), stride=stride), ref_conv(x, w, stride=[stride] * 2), 1e-12,
          1e-12)
    mixed = mx.conv2d(mx.array(x, dtype=mx.float16), mx.array(w, dtype=mx.float32), stride=stride)
    assert mixed.dtype == mx.float32
    close(mixed, ref_conv(x.astype(np.float16).astype(np.float64), w, stride=[stride] * 2), 1e-5,
          1e-5)


def test_conv1d_2d_3d_wrappers():
    x, w = rand(2, 10, 4), rand(6, 3, 2)
    close(mx.conv1d(arr64(x), arr64(w), stride=2, padding=1, dilation=2, groups=2),
          ref_conv(x, w, stride=[2], lo=[1], kdil=[2], groups=2), 1e-12, 1e-12)
    x, w = rand(1, 8, 9, 3), rand(4, 3, 2, 3)
    close(mx.conv2d(arr64(x), arr64(w), stride=(2, 1), padding=(1, 2), dilation=(1, 2)),
          ref_conv(x, w, stride=[2, 1], lo=[1, 2], kdil=[1, 2]), 1e-12, 1e-12)
    close(mx.conv2d(arr64(x), arr64(w), 2, 1, 1),
          ref_conv(x, w, stride=[2, 2], lo=[1, 1]), 1e-12, 1e-12)
    x, w = rand(1, 5, 4, 6, 2), rand(3, 2, 2, 3, 2)
    close(mx.conv3d(arr64(x), arr64(w), stride=(1, 2, 1), padding=(0, 1, 1)),
          ref_conv(x, w, stride=[1, 2, 1], lo=[0, 1, 1]), 1e-12, 1e-12)


# Shapes for the float32 implicit-GEMM kernel (AVX-512 CPUs; elsewhere the general path):
# at least 16 output channels per group, channel counts and pixel counts off the 12 x 32
# register tile, runs of taps deeper than one pass (300 channels x 3 taps), every option.
FAST_CASES = [
    ((2, 9, 11, 20), (40, 3, 3, 20), dict(padding=[1, 1])),
    ((1, 13, 12, 24), (16, 3, 3, 24), dict(stride=[2, 2], padding=([1, 0], [2, 1]))),
    ((1, 10, 10, 16), (33, 3, 2, 16), dict(kernel_dilation=[2, 3], padding=[2, 1])),
    ((2, 7, 6, 32), (32, 3, 3, 16), dict(groups=2, padding=[1, 1], flip=True)),
    ((2, 6, 6, 64), (96, 3, 3, 32), dict(groups=2, padding=[1, 1])),
    ((1, 6, 5, 16), (20, 3, 3, 16), dict(input_dilation=[2, 2], padding=[1, 1])),
    ((1, 9, 8, 16), (24, 3, 3, 16), dict(padding=([-1, 1], [1, -1]))),
    ((3, 5, 7, 300), (64, 1, 3, 300), dict(padding=[0, 1])),
    ((2, 10, 10, 64), (48, 1, 1, 64), {}),
    ((2, 10, 9, 64), (48, 1, 1, 64), dict(stride=[2, 2])),
    ((2, 8, 8, 3), (64, 7, 7, 3), dict(stride=[2, 2], padding=[3, 3])),
    ((2, 17, 24), (40, 5, 24), dict(padding=[2])),
    ((1, 4, 5, 6, 8), (17, 2, 3, 2, 8), dict(stride=[1, 2, 1], padding=[1, 0, 1])),
    ((0, 6, 6, 16), (32, 3, 3, 16), {}),
]


@pytest.mark.parametrize("xs,ws,kw", FAST_CASES)
def test_float32_kernel_against_reference(xs, ws, kw):
    x, w = rand(*xs), rand(*ws)
    expected = ref_conv(x, w, **general_args(kw, len(xs) - 2))
    out = mx.conv_general(mx.array(x, dtype=mx.float32), mx.array(w, dtype=mx.float32), **kw)
    assert out.shape == expected.shape
    close(out, expected, 1e-4, 1e-4)


@pytest.mark.parametrize("xs,ws,kw", [c for c in FAST_CASES if c[0][0] > 0])
def test_float32_kernel_gradients(xs, ws, kw):
    # Both derivatives are linear maps of the cotangent dy: <dx, v> = <dy, conv(v, w)> and
    # <dw, u> = <dy, conv(x, u)> for any v, u, with the right sides from the NumPy reference.
    args = general_args(kw, len(xs) - 2)
    x, w, v, u = rand(*xs), rand(*ws), rand(*xs), rand(*ws)
    dy = rand(*ref_conv(x, w, **args).shape)
    f = lambda a, b: mx.conv_general(a, b, **kw)
    _, (dx, dw) = mx.vjp(f, [mx.array(x, dtype=mx.float32), mx.array(w, dtype=mx.float32)],
                         [mx.array(dy, dtype=mx.float32)])
    scale = np.sqrt(dy.size * np.prod(ws[1:]))
    np.testing.assert_allclose(np.sum(np.array(dx) * v), np.sum(dy * ref_conv(v, w, **args)),
                               rtol=1e-4, atol=1e-4 * scale)
    np.testing.assert_allclose(np.sum(np.array(dw) * u), np.sum(dy * ref_conv(x, u, **args)),
                               rtol=1e-4, atol=1e-4 * scale)


def test_float32_kernel_non_contiguous():
    x, w = rand(2, 7, 9, 32), rand(40, 3, 3, 32)
    xt = mx.transpose(mx.array(np.ascontiguousarray(x.transpose(0, 2, 1, 3)), dtype=mx.float32),
                      (0, 2, 1, 3))
    wt = mx.array(w[::-1].copy(), dtype=mx.float32)[::-1]
    close(mx.conv2d(xt, wt, padding=1), ref_conv(x, w, lo=[1, 1]), 1e-4, 1e-4)
    # A channel slice: the pointwise product cannot read the input in place.
    xs = mx.array(rand(2, 5, 5, 80), dtype=mx.float32)[..., 8:72]
    w1 = rand(32, 1, 1, 64)
    close(mx.conv2d(xs, mx.array(w1, dtype=mx.float32)), ref_conv(np.array(xs), w1), 1e-4, 1e-4)


# Shapes for the bfloat16 implicit GEMM (AVX512-BF16 CPUs; elsewhere im2col or float32): runs
# of whole pairs of values, channel counts off the 16-lane tile (odd ones where a row of taps
# makes the run even), every option. The derivatives are convolutions too (a flipped kernel
# over the cotangent; the batch as the channels of the weight's).
BF16_CASES = [
    ((2, 9, 8, 18), (20, 3, 3, 18), dict(padding=[1, 1])),
    ((1, 11, 10, 24), (16, 3, 3, 24), dict(stride=[2, 2], padding=([1, 0], [2, 1]))),
    ((2, 10, 10, 10), (32, 3, 3, 10), dict(kernel_dilation=[2, 2], padding=[2, 2])),
    ((2, 7, 6, 32), (48, 3, 3, 16), dict(groups=2, padding=[1, 1], flip=True)),
    ((1, 6, 5, 16), (20, 3, 3, 16), dict(input_dilation=[2, 2], padding=[1, 1])),
    ((2, 6, 7, 5), (17, 2, 2, 5), dict(padding=[1, 1])),  # odd channels, even rows of taps
    ((2, 6, 7, 5), (17, 3, 3, 5), dict(padding=[1, 1])),  # odd runs: another path
    ((1, 3, 5, 300), (40, 1, 3, 300), dict(padding=[0, 1])),  # runs over two passes
    ((1, 1, 1, 8), (16, 3, 3, 8), dict(padding=[1, 1])),  # one output pixel
    ((1, 8, 8, 2), (16, 3, 3, 2), dict(kernel_dilation=[2, 2], padding=[2, 2])),  # runs of 2
    ((2, 9, 9, 16), (16, 3, 3, 16), dict(stride=[2, 2], padding=[1, 1])),  # dw: runs of 2
    ((1, 9, 16), (24, 3, 16), dict(stride=[2], padding=[1])),  # 1-D, batch 1
    ((2, 4, 5, 4, 8), (16, 2, 3, 2, 8), dict(stride=[1, 2, 1], padding=[1, 0, 1])),  # 3-D
]


def bf16_values(a):
    """a rounded to bfloat16, as float64."""
    return np.array(mx.array(a, dtype=mx.bfloat16).astype(mx.float32), dtype=np.float64)


@pytest.mark.parametrize("xs,ws,kw", BF16_CASES)
def test_bfloat16_kernel_values_and_gradients(xs, ws, kw):
    # Operands exact in bfloat16, so only the sums' order and the outputs' rounding differ from
    # float64 (the reference derivatives: float64 convolutions, checked by finite differences).
    x, w = bf16_values(rand(*xs)), bf16_values(rand(*ws))
    expected = ref_conv(x, w, **general_args(kw, len(xs) - 2))
    dy = bf16_values(rand(*expected.shape))
    f = lambda a, b: mx.conv_general(a, b, **kw)
    bf = lambda a: mx.array(a, dtype=mx.bfloat16)
    (out,), (dx, dw) = mx.vjp(f, [bf(x), bf(w)], [bf(dy)])
    _, (dx64, dw64) = mx.vjp(f, [arr64(x), arr64(w)], [arr64(dy)])
    for got, ref in [(out, expected), (dx, np.array(dx64)), (dw, np.array(dw64))]:
        assert got.dtype == mx.bfloat16
        np.testing.assert_allclose(np.array(got.astype(mx.float32)), ref, rtol=1e-2,
                                   atol=1e-2 * np.abs(ref).max())


def test_bfloat16_kernel_keeps_nan_and_inf():
    # The kernel rounds its float32 sums to bfloat16 itself: NaN and infinity reach exactly the
    # outputs whose windows read them.
    x = bf16_values(rand(1, 6, 6, 16))
    x[0, 1, 1, 3], x[0, 4, 4, 5] = np.nan, np.inf
    w = np.abs(bf16_values(rand(24, 3, 3, 16))) + 0.25
    out = mx.conv2d(mx.array(x, dtype=mx.bfloat16), mx.array(w, dtype=mx.bfloat16), padding=1)
    got = np.array(out.astype(mx.float32))
    expected = ref_conv(np.nan_to_num(x, nan=0.0, posinf=0.0), w, lo=[1, 1])
    nan, inf = np.zeros((6, 6), bool), np.zeros((6, 6), bool)
    nan[0:3, 0:3] = True
    inf[3:6, 3:6] = True
    assert np.isnan(got[0][nan]).all() and np.isposinf(got[0][inf]).all()
    np.testing.assert_allclose(got[0][~nan & ~inf], expected[0][~nan & ~inf], rtol=1e-2,
                               atol=1e-2 * np.abs(expected).max())


def ref_depthwise_grads(x, w, dy, stride=None, lo=None, hi=None, kdil=None, idil=None,
                        flip=False):
    """The exact derivatives (dx, dw) of sum(dy * depthwise conv(x, w)) in float64: each tap
    reads the input pixels `windows` names (an index array padded with -1), so dw sums their
    values times dy and dx scatters dy times the tap's weight back to them."""
    x, w, dy = (np.asarray(a, np.float64) for a in (x, w, dy))
    K = w.shape[1:-1]
    pixels = np.arange(x[..., 0].size).reshape(x.shape[:-1] + (1,))
    xf = x.reshape(-1, x.shape[-1])
    dx, dw = np.zeros_like(xf), np.zeros_like(w)
    for kidx, idx in windows(pixels, K, stride, lo, hi, kdil, idil, fill=-1):
        tap = tuple(k - 1 - i for k, i in zip(K, kidx)) if flip else kidx
        idx = idx[..., 0]
        valid = idx >= 0
        g = dy[valid]  # (pixels, C)
        dw[(slice(None),) + tap + (0,)] = np.sum(xf[idx[valid]] * g, axis=0)
        np.add.at(dx, idx[valid], g * w[(slice(None),) + tap + (0,)])
    return dx.reshape(x.shape), dw


# Depthwise convolutions (groups = channels = output channels): their CPU kernels in float32,
# the half types through them. (input shape, kernel spatial shape, kwargs of conv_general)
DEPTHWISE_CASES = [
    ((2, 9, 8, 17), (3, 3), dict(padding=[1, 1])),
    ((1, 12, 11, 3), (3, 3), dict(stride=[2, 2], padding=[1, 1])),
    ((2, 10, 9, 261), (3, 3), dict(stride=[2, 1], padding=([1, 0], [0, 1]))),
    ((1, 13, 12, 1), (5, 5), dict(padding=[2, 2])),
    ((1, 14, 15, 24), (5, 5), dict(stride=[2, 2], padding=[2, 2])),
    ((2, 11, 12, 9), (7, 7), dict(padding=[3, 3])),
    ((1, 16, 15, 40), (7, 7), dict(stride=[2, 2], padding=[3, 3])),
    ((1, 11, 10, 16), (3, 3), dict(kernel_dilation=[2, 2], padding=[2, 2])),
    ((1, 9, 10, 8), (3, 2), dict(kernel_dilation=[1, 3], stride=[1, 2], padding=[0, 2])),
    ((1, 1, 1, 33), (3, 3), dict(padding=[1, 1])),  # 1x1 spatial: border taps only
    ((1, 1, 1, 5), (1, 1), {}),
    ((2, 6, 7, 12), (3, 3), dict(padding=[1, 1], flip=True)),
    ((1, 5, 6, 11), (3, 3), dict(input_dilation=[2, 2], padding=[2, 1])),
    ((1, 7, 9, 10), (3, 4), dict(input_dilation=[1, 3], stride=[1, 2], padding=[1, 3])),
    ((1, 2, 3, 7), (5, 5), dict(padding=[2, 2])),  # kernel wider than the input
    ((1, 8, 9, 13), (3, 3), dict(padding=([-1, 1], [1, -1]))),  # negative padding crops
    ((2, 15, 20), (5,), dict(stride=[2], padding=[2])),  # 1-D
    ((1, 5, 6, 7, 19), (3, 3, 3), dict(stride=[1, 2, 1], padding=[1, 1, 1])),  # 3-D
]


def depthwise_args(xs, ks, kw):
    C = xs[-1]
    return dict(kw, groups=C), (C,) + tuple(ks) + (1,)


@pytest.mark.parametrize("xs,ks,kw", DEPTHWISE_CASES)
def test_depthwise_against_reference(xs, ks, kw):
    kw, ws = depthwise_args(xs, ks, kw)
    args = general_args(kw, len(xs) - 2)
    x, w = rand(*xs), rand(*ws)
    y = ref_conv(x, w, **args)
    dy = rand(*y.shape)
    f = lambda a, b: mx.conv_general(a, b, **kw)
    x32, w32 = mx.array(x, dtype=mx.float32), mx.array(w, dtype=mx.float32)
    (out,), (dx, dw) = mx.vjp(f, [x32, w32], [mx.array(dy, dtype=mx.float32)])
    ref_dx, ref_dw = ref_depthwise_grads(x, w, dy, **{k: v for k, v in args.items()
                                                       if k != "groups"})
    close(out, y, 1e-4, 1e-5)
    close(dx, ref_dx, 1e-4, 1e-4)
    close(dw, ref_dw, 1e-4, 1e-4)
    # Finite differences: the convolution is linear in each operand, so the central difference
    # along v (step 1) is exact up to float32 rounding.
    for argnum, grad in ((0, dx), (1, dw)):
        v = rand(*(xs if argnum == 0 else ws))
        step = [x32, w32]
        plus = list(step)
        minus = list(step)
        plus[argnum] = step[argnum] + mx.array(v, dtype=mx.float32)
        minus[argnum] = step[argnum] - mx.array(v, dtype=mx.float32)
        r = mx.array(dy, dtype=mx.float32)
        fd = (mx.sum(f(*plus) * r) - mx.sum(f(*minus) * r)).item() / 2
        np.testing.assert_allclose(np.sum(np.array(grad) * v), fd, rtol=1e-3,
                                   atol=1e-4 * np.sqrt(dy.size))


@pytest.mark.parametrize("mult", [2, 3])
@pytest.mark.parametrize("xs,ks,kw", [
    ((2, 9, 8, 5), (5, 5), dict(padding=[2, 2])),
    ((1, 11, 10, 17), (3, 3), dict(stride=[2, 2], padding=([1, 0], [0, 1]), kernel_dilation=[1, 2])),
    ((2, 13, 6), (3,), dict(stride=[2], input_dilation=[2], padding=[1])),  # 1-D
], ids=str)
def test_depthwise_channel_multiplier(mult, xs, ks, kw):
    """Depthwise convolutions with several output channels per input channel (groups == C_in,
    C_out = mult C_in) in float32 run the depthwise kernels over the input with each channel
    repeated: values against the float64 reference, both derivatives against float64's."""
    C = xs[-1]
    kw = dict(kw, groups=C)
    ws = (C * mult,) + tuple(ks) + (1,)
    x, w = rand(*xs), rand(*ws)
    y = ref_conv(x, w, **general_args(kw, len(xs) - 2))
    dy = rand(*y.shape)
    f = lambda a, b: mx.conv_general(a, b, **kw)
    (out,), (dx, dw) = mx.vjp(f, [mx.array(x, dtype=mx.float32), mx.array(w, dtype=mx.float32)],
                              [mx.array(dy, dtype=mx.float32)])
    _, (dx64, dw64) = mx.vjp(f, [arr64(x), arr64(w)], [arr64(dy)])
    close(out, y, 1e-4, 1e-5)
    close(dx, np.array(dx64), 1e-4, 1e-4)
    close(dw, np.array(dw64), 1e-4, 1e-4)


@pytest.mark.parametrize("dtype,tol", [(mx.float16, 2e-2), (mx.bfloat16, 1e-1)])
def test_depthwise_half_dtypes(dtype, tol):
    xs, ks, kw = (2, 9, 10, 21), (3, 3), dict(stride=[2, 2], padding=[1, 1])
    kw, ws = depthwise_args(xs, ks, kw)
    args = general_args(kw, 2)
    xq, wq = mx.array(rand(*xs), dtype=dtype), mx.array(rand(*ws), dtype=dtype)
    x, w = np.array(xq.astype(mx.float32)), np.array(wq.astype(mx.float32))
    dyq = mx.array(rand(*ref_conv(x, w, **args).shape), dtype=dtype)
    dy = np.array(dyq.astype(mx.float32))
    (out,), (dx, dw) = mx.vjp(lambda a, b: mx.conv_general(a, b, **kw), [xq, wq], [dyq])
    assert out.dtype == dx.dtype == dw.dtype == dtype
    ref_dx, ref_dw = ref_depthwise_grads(x, w, dy, stride=[2, 2], lo=[1, 1], hi=[1, 1])
    close(out, ref_conv(x, w, **args), tol, tol)
    close(dx, ref_dx, tol, tol)
    close(dw, ref_dw, tol * 4, tol * 4)  # sums of 100 products per entry


def depthwise_weight_grad(kw):
    """(x, dy) -> the weight derivative of the depthwise convolution with these kwargs."""

    def f(x, dy):
        w = mx.zeros((x.shape[-1], 3, 3, 1), dtype=x.dtype)
        return mx.vjp(lambda b: mx.conv_general(x, b, **kw), [w], [dy])[1][0]

    return f


def test_depthwise_weight_grad_transforms():
    # Second order through the weight derivative (its vjp, jvp and vmap), in float32 where the
    # depthwise kernels run. The derivative is bilinear in (x, dy), so central differences with
    # step 1 are exact up to rounding.
    kw = dict(stride=[2, 1], padding=[1, 1], groups=6)
    x, dy, u = rand(2, 8, 7, 6), rand(2, 4, 7, 6), rand(6, 3, 3, 1)
    f = depthwise_weight_grad(kw)
    a = [mx.array(x, dtype=mx.float32), mx.array(dy, dtype=mx.float32)]
    uu = mx.array(u, dtype=mx.float32)
    loss = lambda p, q: mx.sum(f(p, q) * uu)
    grads = mx.grad(loss, argnums=(0, 1))(*a)
    for argnum, v in ((0, rand(*x.shape)), (1, rand(*dy.shape))):
        plus, minus = list(a), list(a)
        plus[argnum] = a[argnum] + mx.array(v, dtype=mx.float32)
        minus[argnum] = a[argnum] - mx.array(v, dtype=mx.float32)
        fd = (loss(*plus) - loss(*minus)).item() / 2
        np.testing.assert_allclose(np.sum(np.array(grads[argnum]) * v), fd, rtol=1e-4, atol=1e-4)
    tx, tdy = rand(*x.shape), rand(*dy.shape)
    _, (t,) = mx.jvp(f, a, [mx.array(tx, dtype=mx.float32), mx.array(tdy, dtype=mx.float32)])
    args = dict(stride=[2, 1], lo=[1, 1], hi=[1, 1])
    w = np.zeros((6, 3, 3, 1))
    expected = ref_depthwise_grads(tx, w, dy, **args)[1] + ref_depthwise_grads(x, w, tdy, **args)[1]
    close(t, expected, 1e-4, 1e-4)
    # vmap over both operands and over one of them.
    xb, dyb = rand(3, 2, 8, 7, 6), rand(3, 2, 4, 7, 6)
    for in_axes in ((0, 0), (0, None), (None, 0)):
        xs = xb if in_axes[0] == 0 else xb[0]
        dys = dyb if in_axes[1] == 0 else dyb[0]
        out = mx.vmap(f, in_axes=in_axes)(mx.array(xs, dtype=mx.float32),
                                           mx.array(dys, dtype=mx.float32))
        expected = np.stack([
            ref_depthwise_grads(xb[i] if in_axes[0] == 0 else xb[0], w,
                                dyb[i] if in_axes[1] == 0 else dyb[0], **args)[1]
            for i in range(3)])
        close(out, expected, 1e-4, 1e-4)


def test_depthwise_weight_grad_exports(tmp_path):
    # The weight derivative's primitive round-trips through export (state and validation).
    f = depthwise_weight_grad(dict(padding=[1, 1], groups=5))
    x = mx.array(rand(2, 6, 7, 5), dtype=mx.float32)
    dy = mx.array(rand(2, 6, 7, 5), dtype=mx.float32)
    path = str(tmp_path / "dw.mlxfn")
    mx.export_function(path, f, x, dy)
    (out,) = mx.import_function(path)(x, dy)
    close(out, np.array(f(x, dy)), 1e-6, 1e-6)


def ref_conv_transpose(x, w, stride, padding, dilation, output_padding, groups=1):
    """Transposed convolution from its definition: scatter each input pixel times the kernel."""
    x = np.asarray(x, np.float64)
    w = np.asarray(w, np.float64)  # (O, K..., Cin / groups)
    nd = x.ndim - 2
    N, C = x.shape[0], x.shape[-1]
    O, K = w.shape[0], w.shape[1:-1]
    Cg, Og = C // groups, O // groups
    full = [(i - 1) * s + d * (k - 1) + 1 + op
            for i, s, d, k, op in zip(x.shape[1:-1], stride, dilation, K, output_padding)]
    out = np.zeros([N] + [f + p for f, p in zip(full, padding)] + [O])
    for pos in itertools.product(*[range(i) for i in x.shape[1:-1]]):
        for kidx in itertools.product(*[range(k) for k in K]):
            o = tuple(p * s + k * d for p, s, k, d in zip(pos, stride, kidx, dilation))
            for g in range(groups):
                xin = x[(slice(None),) + pos + (slice(g * Cg, (g + 1) * Cg),)]  # (N, Cg)
                wk = w[(slice(g * Og, (g + 1) * Og),) + kidx]  # (Og, Cg)
                out[(slice(None),) + o + (slice(g * Og, (g + 1) * Og),)] += xin @ wk.T
    crop = tuple(slice(p, p + f - 2 * p) for p, f in zip(padding, full))
    return out[(slice(None),) + crop]


@pytest.mark.parametrize("case", [
    ((2, 5, 3), (4, 3, 3), 1, 0, 1, 0, 1),
    ((1, 6, 4), (4, 3, 2), 2, 1, 1, 1, 2),
    ((1, 4, 2), (3, 2, 2), 3, 0, 2, 0, 1),
    ((1, 5, 3), (2, 3, 3), 1, 3, 1, 0, 1),  # padding > dilation * (k - 1)
])
def test_conv_transpose1d(case):
    xs, ws, s, p, d, op, g = case
    x, w = rand(*xs), rand(*ws)
    out = mx.conv_transpose1d(arr64(x), arr64(w), s, p, d, op, g)
    close(out, ref_conv_transpose(x, w, [s], [p], [d], [op], g), 1e-12, 1e-12)


def test_conv_transpose2d_3d():
    x, w = rand(2, 4, 5, 3), rand(2, 3, 2, 3)
    out = mx.conv_transpose2d(arr64(x), arr64(w), stride=(2, 1), padding=(1, 0),
                              dilation=(1, 2), output_padding=(1, 0))
    close(out, ref_conv_transpose(x, w, [2, 1], [1, 0], [1, 2], [1, 0]), 1e-12, 1e-12)
    x, w = rand(1, 3, 2, 4, 2), rand(3, 2, 2, 3, 2)
    out = mx.conv_transpose3d(arr64(x), arr64(w), stride=2, padding=1)
    close(out, ref_conv_transpose(x, w, [2] * 3, [1] * 3, [1] * 3, [0] * 3), 1e-12, 1e-12)


@pytest.mark.parametrize("n,m", [(7, 3), (3, 7), (6, 4), (5, 5), (1, 1), (9, 2)])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_convolve_against_numpy(n, m, mode):
    a, v = rand(n), rand(m)
    out = mx.convolve(arr64(a), arr64(v), mode=mode)
    np.testing.assert_allclose(np.array(out), np.convolve(a, v, mode=mode), rtol=1e-12, atol=1e-12)


def test_errors():
    x = mx.zeros((1, 5, 5, 4))
    with pytest.raises(ValueError, match=r"\[conv\].*input channels"):
        mx.conv2d(x, mx.zeros((2, 3, 3, 3)))
    with pytest.raises(ValueError, match=r"divisible by groups"):
        mx.conv2d(x, mx.zeros((2, 3, 3, 2)), groups=3)
    with pytest.raises(ValueError, match=r"output channels \(3\).*groups \(2\)"):
        mx.conv2d(x, mx.zeros((3, 3, 3, 2)), groups=2)
    with pytest.raises(ValueError, match=r"does not fit"):
        mx.conv2d(x, mx.zeros((2, 7, 3, 4)))
    with pytest.raises(ValueError, match=r"Stride must be positive"):
        mx.conv2d(x, mx.zeros((2, 3, 3, 4)), stride=0)
    with pytest.raises(ValueError, match=r"same rank"):
        mx.conv_general(x, mx.zeros((2, 3, 4)))
    with pytest.raises(ValueError, match=r"\[conv2d\] Expected input of shape"):
        mx.conv2d(mx.zeros((5, 5, 4)), mx.zeros((2, 3, 3, 4)))
    with pytest.raises(ValueError, match=r"floating point"):
        mx.conv1d(mx.zeros((1, 5, 2), dtype=mx.int32), mx.zeros((1, 3, 2), dtype=mx.int32))
    with pytest.raises(ValueError, match=r"\[convolve\] Inputs must be 1-D"):
        mx.convolve(mx.zeros((2, 2)), mx.zeros((2,)))
    with pytest.raises(ValueError, match=r"\[convolve\] Invalid mode 'bad'"):
        mx.convolve(mx.zeros((4,)), mx.zeros((2,)), mode="bad")
    with pytest.raises(ValueError, match=r"\[conv2d\] stride must be an int or a tuple of 2"):
        mx.conv2d(x, mx.zeros((2, 3, 3, 4)), stride=(1, 1, 1))


def directional_check(f, args, argnum, seed=0):
    """<grad f, v> against a central difference along a random direction v (float64)."""
    rng = np.random.default_rng(seed)
    out = f(*args)
    r = arr64(rng.uniform(-1, 1, out.shape))

    def loss(*a):
        return mx.sum(f(*a) * r)

    g = mx.grad(loss, argnums=argnum)(*args)
    v = rng.uniform(-1, 1, args[argnum].shape)
    eps = 1e-5
    plus = list(args)
    minus = list(args)
    plus[argnum] = args[argnum] + eps * arr64(v)
    minus[argnum] = args[argnum] - eps * arr64(v)
    fd = (loss(*plus).item() - loss(*minus).item()) / (2 * eps)
    np.testing.assert_allclose(np.sum(np.array(g) * v), fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("xs,ws,kw", [c for c in GENERAL_CASES if c[0][0] > 0])
def test_conv_gradients(xs, ws, kw):
    x, w = arr64(rand(*xs)), arr64(rand(*ws))

    def f(a, b):
        return mx.conv_general(a, b, **kw)

    for argnum in (0, 1):
        directional_check(f, [x, w], argnum)


@pytest.mark.parametrize("dtype", [mx.float32, mx.float64])
def test_weight_gradient_with_blocked_taps(dtype):
    # The weight derivative's kernel is the whole cotangent (46 x 46 taps of 8 channels here),
    # more than one scratch block: its taps are accumulated block by block.
    x = RNG.standard_normal((8, 48, 48, 64))
    g = RNG.standard_normal((8, 46, 46, 8))
    w = mx.zeros((8, 3, 3, 64), dtype=dtype)
    _, (gw,) = mx.vjp(lambda b: mx.conv2d(mx.array(x, dtype=dtype), b), [w],
                      [mx.array(g, dtype=dtype)])
    expected = np.zeros((8, 3, 3, 64))
    for kh in range(3):
        for kw in range(3):
            expected[:, kh, kw] = np.einsum("nyxo,nyxc->oc", g, x[:, kh:kh + 46, kw:kw + 46])
    tol = 1e-10 if dtype == mx.float64 else 2e-3
    np.testing.assert_allclose(np.array(gw.astype(mx.float64) if dtype == mx.float64 else gw),
                               expected, rtol=tol, atol=tol * 10)


def test_conv_transpose_gradients():
    x, w = arr64(rand(1, 5, 4, 2)), arr64(rand(3, 3, 2, 2))

    def f(a, b):
        return mx.conv_transpose2d(a, b, stride=2, padding=1, output_padding=1)

    for argnum in (0, 1):
        directional_check(f, [x, w], argnum)


def test_second_order_gradient():
    x, w = arr64(rand(1, 6, 2)), arr64(rand(2, 3, 2))

    def g(a, b):
        return mx.grad(lambda u: mx.sum(mx.conv1d(u, b, padding=1) ** 2))(a)

    directional_check(g, [x, w], 1)


def test_jvp():
    x, w = arr64(rand(1, 6, 5, 2)), arr64(rand(3, 3, 3, 2))
    tx, tw = arr64(rand(1, 6, 5, 2)), arr64(rand(3, 3, 3, 2))
    f = lambda a, b: mx.conv2d(a, b, stride=2, padding=1)
    _, (t,) = mx.jvp(f, [x, w], [tx, tw])
    expected = ref_conv(np.array(tx), np.array(w), stride=[2, 2], lo=[1, 1]) + ref_conv(
        np.array(x), np.array(tw), stride=[2, 2], lo=[1, 1])
    close(t, expected, 1e-12, 1e-12)


@pytest.mark.parametrize("in_axes", [(0, None), (None, 0), (0, 0), (2, 1)])
def test_vmap(in_axes):
    B = 3
    xs = [rand(2, 7, 6, 4) for _ in range(B)]
    ws = [rand(6, 3, 3, 2) for _ in range(B)]
    ax, aw = in_axes
    x = arr64(np.stack(xs, axis=ax)) if ax is not None else arr64(xs[0])
    w = arr64(np.stack(ws, axis=aw)) if aw is not None else arr64(ws[0])
    f = lambda a, b: mx.conv2d(a, b, stride=(1, 2), padding=1, groups=2)
    out = mx.vmap(f, in_axes=in_axes)(x, w)
    expected = np.stack([
        ref_conv(xs[i if ax is not None else 0], ws[i if aw is not None else 0],
                 stride=[1, 2], lo=[1, 1], groups=2) for i in range(B)])
    close(out, expected, 1e-12, 1e-12)


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
def test_against_torch():
    F = torch.nn.functional
    x, w = rand(2, 9, 8, 6).astype(np.float32), rand(4, 3, 3, 3).astype(np.float32)
    xt = torch.tensor(x.transpose(0, 3, 1, 2), requires_grad=True)
    wt = torch.tensor(w.transpose(0, 3, 1, 2), requires_grad=True)
    yt = F.conv2d(xt, wt, stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2)
    r = np.random.default_rng(1).uniform(-1, 1, yt.shape).astype(np.float32)
    (yt * torch.tensor(r)).sum().backward()

    def loss(a, b):
        y = mx.conv2d(a, b, stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2)
        return mx.sum(y * mx.array(r.transpose(0, 2, 3, 1))), y

    (l, y), (gx, gw) = mx.value_and_grad(loss, argnums=(0, 1))(mx.array(x), mx.array(w))
    np.testing.assert_allclose(np.array(y), yt.detach().numpy().transpose(0, 2, 3, 1),
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.array(gx), xt.grad.numpy().transpose(0, 2, 3, 1), rtol=1e-4,
                               atol=1e-5)
    np.testing.assert_allclose(np.array(gw), wt.grad.numpy().transpose(0, 2, 3, 1), rtol=1e-4,
                               atol=1e-5)
    # Transposed: MLX's weight (C_out, K..., C_in) is PyTorch's (C_in, C_out, K...).
    x, w = rand(1, 5, 6, 3).astype(np.float32), rand(2, 3, 3, 3).astype(np.float32)
    yt = F.conv_transpose2d(torch.tensor(x.transpose(0, 3, 1, 2)),
                            torch.tensor(w.transpose(3, 0, 1, 2)), stride=2, padding=1,
                            output_padding=1)
    y = mx.conv_transpose2d(mx.array(x), mx.array(w), stride=2, padding=1, output_padding=1)
    np.testing.assert_allclose(np.array(y), yt.numpy().transpose(0, 2, 3, 1), rtol=1e-4,
                               atol=1e-5)


def channels_first(a):
    return torch.tensor(np.moveaxis(a, -1, 1))


# (ours, PyTorch's, input shape, weight shape, keyword arguments); weights in our layout.
TORCH_CASES = [
    (mx.conv1d, "conv1d", (2, 11, 4), (6, 3, 2), dict(stride=2, padding=1, dilation=2, groups=2)),
    (mx.conv3d, "conv3d", (1, 5, 6, 4, 3), (4, 2, 3, 2, 3), dict(stride=(1, 2, 1), padding=1)),
    (mx.conv_transpose1d, "conv_transpose1d", (2, 6, 3), (4, 3, 3),
     dict(stride=2, padding=1, dilation=2, output_padding=1)),
    (mx.conv_transpose3d, "conv_transpose3d", (1, 3, 4, 2, 2), (3, 2, 3, 2, 2),
     dict(stride=(2, 1, 2), padding=(1, 0, 1))),
]


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
@pytest.mark.parametrize("ours,theirs,xs,ws,kw", TORCH_CASES, ids=[c[1] for c in TORCH_CASES])
def test_1d_3d_and_transposed_against_torch(ours, theirs, xs, ws, kw):
    x, w = rand(*xs).astype(np.float32), rand(*ws).astype(np.float32)
    # PyTorch's weights: (C_out, C_in / groups, K...) or, transposed, (C_in, C_out, K...).
    wt = torch.tensor(np.moveaxis(w, -1, 0 if "transpose" in theirs else 1))
    yt = getattr(torch.nn.functional, theirs)(channels_first(x), wt, **kw)
    close(ours(mx.array(x), mx.array(w), **kw), np.moveaxis(yt.numpy(), 1, -1), 1e-4, 1e-5)


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pooling_against_torch(nd, kind):
    x = rand(*((2,) + (7, 6, 5)[:nd] + (3,))).astype(np.float32)
    layer = getattr(nn, f"{kind.capitalize()}Pool{nd}d")(3, stride=2, padding=1)
    # MLX's average counts the zero padding, as count_include_pad does.
    yt = getattr(torch.nn.functional, f"{kind}_pool{nd}d")(channels_first(x), 3, stride=2,
                                                           padding=1)
    close(layer(mx.array(x)), np.moveaxis(yt.numpy(), 1, -1), 1e-5, 1e-6)


def test_nn_conv_layers():
    layer = nn.Conv2d(4, 6, 3, stride=2, padding=1, groups=2)
    assert layer.weight.shape == (6, 3, 3, 2)
    assert layer.bias.shape == (6,)
    x = mx.random.uniform(shape=(2, 9, 9, 4))
    y = layer(x)
    expected = ref_conv(np.array(x), np.array(layer.weight), stride=[2, 2], lo=[1, 1], groups=2)
    close(y, expected + np.array(layer.bias), 1e-4, 1e-5)
    assert nn.Conv1d(3, 5, 4, bias=False)(mx.zeros((1, 10, 3))).shape == (1, 7, 5)
    assert "bias" not in nn.Conv1d(3, 5, 4, bias=False)
    assert nn.Conv3d(2, 3, (1, 2, 3))(mx.zeros((1, 4, 4, 4, 2))).shape == (1, 4, 3, 2, 3)
    t = nn.ConvTranspose2d(3, 5, 3, stride=2, padding=1, output_padding=1)
    assert t.weight.shape == (5, 3, 3, 3)
    assert t(mx.zeros((1, 4, 4, 3))).shape == (1, 8, 8, 5)
    assert nn.ConvTranspose1d(2, 3, 3)(mx.zeros((1, 5, 2))).shape == (1, 7, 3)
    assert nn.ConvTranspose3d(2, 3, 2, stride=2)(mx.zeros((1, 2, 2, 2, 2))).shape == (1, 4, 4, 4, 3)
    # Training through a conv layer changes its weights.
    grads = nn.value_and_grad(layer, lambda m, x: mx.sum(m(x) ** 2))(layer, x)[1]
    assert grads["weight"].shape == layer.weight.shape
    assert float(mx.sum(mx.abs(grads["weight"]))) > 0


def ref_pool(x, k, s, p, kind):
    x = np.asarray(x, np.float64)
    nd = x.ndim - 2
    fill = -np.inf if kind == "max" else 0.0
    x = np.pad(x, [(0, 0)] + [(q, q) for q in p] + [(0, 0)], constant_values=fill)
    out_sz = [(x.shape[1 + i] - k[i]) // s[i] + 1 for i in range(nd)]
    out = np.zeros([x.shape[0]] + out_sz + [x.shape[-1]])
    for pos in itertools.product(*[range(o) for o in out_sz]):
        win = x[(slice(None),) + tuple(slice(q * st, q * st + kk) for q, st, kk in
                                       zip(pos, s, k))]
        axes = tuple(range(1, 1 + nd))
        out[(slice(None),) + pos] = win.max(axis=axes) if kind == "max" else win.mean(axis=axes)
    return out


@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pooling(nd, kind):
    cls = getattr(nn, f"{'Max' if kind == 'max' else 'Avg'}Pool{nd}d")
    shape = (2,) + (7, 6, 5)[:nd] + (3,)
    x = rand(*shape)
    for k, s, p in [(2, None, 0), (3, 2, 1), (2, 1, 1)]:
        pool = cls(k, s, p)
        out = pool(mx.array(x, dtype=mx.float32))
        kk = (k,) * nd
        ss = kk if s is None else (s,) * nd
        close(out, ref_pool(x, kk, ss, (p,) * nd, kind), 1e-5, 1e-6)


def test_pooling_tuple_args_and_errors():
    x = rand(1, 6, 8, 2)
    out = nn.MaxPool2d((2, 3), stride=(1, 2), padding=(1, 0))(mx.array(x, dtype=mx.float32))
    close(out, ref_pool(x, (2, 3), (1, 2), (1, 0), "max"), 1e-6, 1e-6)
    with pytest.raises(ValueError, match="Expected input of rank 4"):
        nn.MaxPool2d(2)(mx.zeros((4, 4, 2)))
    with pytest.raises(ValueError, match="padding"):
        nn.AvgPool1d(2, padding=2)
    with pytest.raises(ValueError, match="kernel_size must be an int or a tuple of 2"):
        nn.AvgPool2d((1, 2, 3))
