"""Gradients of the convolution, pooling, FFT, quantized, grouped-product and Hadamard
functions against central finite differences, for the cases the family suites do not already
differentiate: transposed convolutions with groups and dilation, convolve, every pooling,
FFT norms and 3-axis real transforms, istft, gather_qmm in both orientations and modes, and
derivatives with respect to the second operand, the scales or block_masked_mm's float masks. Real functions are checked in
float64 where the family computes in it, the others in float32 with a larger step."""
import numpy as np
import pytest

import mlx.core as mx
import mlx.nn as nn

RNG = np.random.default_rng(42)


def normal(*shape):
    return RNG.standard_normal(shape)


def directional(f, args, argnum, dtype, eps, rtol):
    """<grad of Re(sum(f(args) * r)), v> against the central difference of that loss along a
    random direction v, for a random weight r (complex outputs pair as Re(sum(c * y)) and
    complex inputs as Re(sum(g * t)), the project's convention)."""
    args = [mx.array(a, dtype=dtype) if isinstance(a, np.ndarray) else a for a in args]
    out = f(*args)
    r = mx.array(RNG.uniform(-1, 1, out.shape).astype(np.float32))
    if out.dtype == mx.complex64:
        r = r + 1j * mx.array(RNG.uniform(-1, 1, out.shape).astype(np.float32))
    else:
        r = r.astype(out.dtype)

    def loss(*a):
        return mx.sum(mx.real(f(*a) * r)) if out.dtype == mx.complex64 else mx.sum(f(*a) * r)

    g = mx.grad(loss, argnums=argnum)(*args)
    x = args[argnum]
    v = mx.array(RNG.uniform(-1, 1, x.shape).astype(np.float32)).astype(x.dtype)
    plus, minus = list(args), list(args)
    plus[argnum], minus[argnum] = x + eps * v, x - eps * v
    fd = (loss(*plus).item() - loss(*minus).item()) / (2 * eps)
    analytic = mx.real(mx.sum(g * v)).item()
    np.testing.assert_allclose(analytic, fd, rtol=rtol, atol=rtol)


F64 = dict(dtype=mx.float64, eps=1e-5, rtol=1e-6)
F32 = dict(dtype=mx.float32, eps=1e-2, rtol=2e-3)

REAL_CASES = {
    "conv_transpose1d_strided_dilated": (
        lambda x, w: mx.conv_transpose1d(x, w, stride=2, dilation=2, padding=1, output_padding=1),
        [normal(2, 5, 3), normal(4, 3, 3)]),
    "conv_transpose1d_groups": (lambda x, w: mx.conv_transpose1d(x, w, groups=2),
                                [normal(1, 5, 4), normal(4, 3, 2)]),
    "conv_transpose3d": (lambda x, w: mx.conv_transpose3d(x, w, stride=2, padding=1),
                         [normal(1, 3, 2, 3, 2), normal(2, 3, 2, 2, 2)]),
    "conv3d_groups": (lambda x, w: mx.conv3d(x, w, stride=(1, 2, 1), groups=2),
                      [normal(1, 3, 5, 4, 4), normal(4, 2, 2, 2, 2)]),
    "convolve_full": (lambda a, b: mx.convolve(a, b), [normal(9), normal(4)]),
    "convolve_same_long_kernel": (lambda a, b: mx.convolve(a, b, mode="same"),
                                  [normal(4), normal(7)]),
    "convolve_valid": (lambda a, b: mx.convolve(a, b, mode="valid"), [normal(8), normal(3)]),
    "max_pool1d": (lambda x: nn.MaxPool1d(3, stride=2, padding=1)(x), [normal(2, 7, 3)]),
    "max_pool2d": (lambda x: nn.MaxPool2d(2, stride=1)(x), [normal(1, 4, 5, 2)]),
    "max_pool3d": (lambda x: nn.MaxPool3d(2)(x), [normal(1, 4, 4, 2, 2)]),
    "avg_pool1d": (lambda x: nn.AvgPool1d(2)(x), [normal(2, 6, 3)]),
    "avg_pool2d": (lambda x: nn.AvgPool2d((2, 3), stride=(1, 2), padding=1)(x),
                   [normal(1, 5, 6, 2)]),
    "avg_pool3d": (lambda x: nn.AvgPool3d(2, padding=1)(x), [normal(1, 3, 4, 3, 2)]),
    "hadamard_12": (lambda x: mx.hadamard_transform(x), [normal(3, 24)]),
    "hadamard_28": (lambda x: mx.hadamard_transform(x, scale=0.2), [normal(2, 28)]),
    "gather_mm_transposed_b": (lambda a, b: mx.gather_mm(a, b.swapaxes(-1, -2),
                                                         rhs_indices=mx.array([1, 0, 1])),
                               [normal(3, 2, 4), normal(2, 5, 4)]),
    "segmented_mm_empty_segment": (lambda a, b: mx.segmented_mm(a, b, mx.array([[0, 3], [2, 2],
                                                                                [1, 5]])),
                                   [normal(2, 5), normal(5, 3)]),
    "block_masked_mm_every_operand": (
        lambda a, b, mo, ml, mr: mx.block_masked_mm(a, b, 32, mo, ml, mr),
        [normal(40, 33), normal(33, 20), RNG.random((2, 1)), RNG.random((2, 2)),
         RNG.random((2, 1))]),
    "fftshift": (lambda x: mx.fft.ifftshift(mx.fft.fftshift(x * 2, axes=(1,)) + x, axes=(0,)),
                 [normal(3, 5)]),
}


@pytest.mark.parametrize("name", sorted(REAL_CASES))
def test_real_functions(name):
    f, args = REAL_CASES[name]
    for argnum in range(len(args)):
        directional(f, args, argnum, **F64)


QW = mx.array(normal(3, 16, 64).astype(np.float32))


def quantized_case(mode, transpose):
    w = QW if transpose else mx.array(normal(3, 64, 64).astype(np.float32))
    q = mx.quantize(w, mode=mode)
    return lambda x: mx.gather_qmm(x, *q, rhs_indices=mx.array([2, 0, 1]), transpose=transpose,
                                   mode=mode)


FLOAT32_CASES = {
    "fft_ortho": (lambda z: mx.fft.fft(z, norm="ortho"), [normal(3, 7)]),
    "ifft_forward": (lambda z: mx.fft.ifft(z, n=9, norm="forward"), [normal(3, 6)]),
    "fft2_complex_input": (lambda z: mx.fft.fft2(mx.fft.fft(z)), [normal(4, 5)]),
    "ifft2_padded": (lambda z: mx.fft.ifft2(z, s=(5, 4)), [normal(3, 4)]),
    "ifftn_two_of_three_axes": (lambda z: mx.fft.ifftn(z, axes=(0, 2)), [normal(3, 4, 5)]),
    "rfft2_truncated": (lambda z: mx.fft.rfft2(z, s=(3, 4)), [normal(4, 6)]),
    "rfftn_3d": (lambda z: mx.fft.rfftn(z), [normal(3, 4, 5)]),
    "irfftn_3d": (lambda z: mx.fft.irfftn(mx.fft.rfftn(z) * 1.5, s=(3, 4, 5)), [normal(3, 4, 5)]),
    "irfft2_ortho": (lambda z: mx.fft.irfft2(mx.fft.rfft2(z, norm="ortho") * 2, s=(4, 6),
                                             norm="ortho"), [normal(4, 6)]),
    "istft": (lambda x: mx.fft.istft(mx.fft.stft(x, n_fft=8, hop_length=2) * 2, hop_length=2,
                                     length=24), [normal(24)]),
    "gather_qmm_affine": (quantized_case("affine", True), [normal(3, 2, 64)]),
    "gather_qmm_affine_not_transposed": (quantized_case("affine", False), [normal(3, 2, 64)]),
    "gather_qmm_mxfp4": (quantized_case("mxfp4", True), [normal(3, 1, 64)]),
    "quantized_matmul_nvfp4": (lambda x: mx.quantized_matmul(x, *mx.quantize(QW[0], mode="nvfp4"),
                                                             mode="nvfp4"), [normal(3, 64)]),
    "dequantize_scales_biases": (lambda s, b: mx.dequantize(mx.quantize(QW[0])[0], s, b),
                                 [np.array(mx.quantize(QW[0])[1]),
                                  np.array(mx.quantize(QW[0])[2])]),
}


@pytest.mark.parametrize("name", sorted(FLOAT32_CASES))
def test_float32_functions(name):
    f, args = FLOAT32_CASES[name]
    for argnum in range(len(args)):
        directional(f, args, argnum, **F32)
