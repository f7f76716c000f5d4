"""Layouts and odd sizes for the convolution, FFT, quantization, grouped-product and Hadamard
functions: each operand given as a non-contiguous view (column-major storage, a stride-2
slice, broadcast rows, reversed twice, an offset into a larger buffer) gives what the same
values give row-contiguous; empty and one-element operands give the right shapes (and zeros
for empty contractions); sizes that cannot work raise ValueError naming the function."""
import numpy as np
import pytest

import mlx.core as mx

RNG = np.random.default_rng(0)


def normal(*shape):
    return mx.array(RNG.standard_normal(shape).astype(np.float32))


# Views with the operand's shape and values (broadcast_rows changes the values: the reference
# is computed on its contiguous copy).
VIEWS = {
    "column_major": lambda x: mx.swapaxes(
        mx.array(np.ascontiguousarray(np.swapaxes(np.array(x), -1, -2))), -1, -2),
    "strided": lambda x: mx.repeat(x, 2, axis=-1)[..., ::2],
    "broadcast_rows": lambda x: mx.broadcast_to(x[..., :1, :], x.shape),
    "reversed_twice": lambda x: mx.flip(mx.flip(x, -1), -1),
    "offset": lambda x: mx.concatenate([x, x], axis=0)[x.shape[0]:],
}

B_MASKED, B_SEG, B_GATHER, W_CONV = normal(64, 32), normal(6, 3), normal(2, 6, 3), normal(2, 3, 5)
Q_AFFINE = mx.quantize(normal(16, 64))
Q_MXFP4 = mx.quantize(normal(16, 64), mode="mxfp4")
Q_EXPERTS = mx.quantize(normal(3, 16, 64))

# name -> (function of one operand, the operand's shape).
FUNCTIONS = {
    "quantized_matmul": (lambda x: mx.quantized_matmul(x, *Q_AFFINE), (5, 64)),
    "quantized_matmul_mxfp4": (lambda x: mx.quantized_matmul(x, *Q_MXFP4, mode="mxfp4"), (5, 64)),
    "gather_qmm": (lambda x: mx.gather_qmm(x, *Q_EXPERTS, rhs_indices=mx.array([2, 0]),
                                           transpose=True), (2, 3, 64)),
    "dequantize_scales": (lambda s: mx.dequantize(Q_AFFINE[0], s, Q_AFFINE[2]), (16, 1)),
    "block_masked_mm": (lambda a: mx.block_masked_mm(a, B_MASKED, 32,
                                                     mask_out=mx.array([[True], [False]])),
                        (64, 64)),
    "segmented_mm": (lambda a: mx.segmented_mm(a, B_SEG, mx.array([[0, 2], [2, 6]])), (4, 6)),
    "gather_mm": (lambda a: mx.gather_mm(a, B_GATHER, rhs_indices=mx.array([1, 0, 1])),
                  (3, 4, 6)),
    "gather_mm_rhs": (lambda b: mx.gather_mm(normal(1, 2, 4) * 0 + 1, b,
                                             rhs_indices=mx.array([1, 0])), (2, 4, 3)),
    "hadamard_transform": (mx.hadamard_transform, (4, 16)),
    "stft": (lambda x: mx.fft.stft(x[0], n_fft=8), (3, 32)),
    "rfft_axis0": (lambda x: mx.fft.rfft(x, axis=0), (6, 5)),
    "fft2": (lambda x: mx.fft.fft2(x), (4, 6)),
    "irfft": (lambda x: mx.fft.irfft(x.astype(mx.complex64)), (3, 8)),
    "conv1d": (lambda x: mx.conv1d(x[None], W_CONV), (7, 5)),
    "conv1d_weight": (lambda w: mx.conv1d(normal(1, 7, 5) * 0 + 1, w[None].swapaxes(0, 1)),
                      (3, 5)),
}


@pytest.mark.parametrize("view", sorted(VIEWS))
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_non_contiguous_operands(name, view):
    f, shape = FUNCTIONS[name]
    x = normal(*shape)
    xv = VIEWS[view](x)
    assert xv.shape == x.shape
    want = f(mx.array(np.array(xv)))  # the view's values, row-contiguous
    np.testing.assert_allclose(np.array(f(xv)), np.array(want), rtol=1e-5, atol=1e-5)


# name -> (function, operand shapes, expected output shape, whether the output is all zeros).
ODD_SIZES = {
    "conv2d_empty_batch": (lambda x, w: mx.conv2d(x, w), [(0, 5, 5, 2), (3, 3, 3, 2)],
                           (0, 3, 3, 3), False),
    "conv2d_no_channels": (lambda x, w: mx.conv2d(x, w), [(1, 5, 5, 0), (3, 3, 3, 0)],
                           (1, 3, 3, 3), True),
    "conv2d_no_filters": (lambda x, w: mx.conv2d(x, w), [(1, 5, 5, 2), (0, 3, 3, 2)],
                          (1, 3, 3, 0), False),
    "conv1d_one_element": (lambda x, w: mx.conv1d(x, w), [(1, 1, 1), (1, 1, 1)], (1, 1, 1), False),
    "conv_transpose1d_empty_batch": (lambda x, w: mx.conv_transpose1d(x, w), [(0, 4, 2), (3, 3, 2)],
                                     (0, 6, 3), False),
    "fft_empty_batch": (lambda x: mx.fft.fft(x), [(0, 4)], (0, 4), False),
    "fft_one": (lambda x: mx.fft.fft(x), [(1,)], (1,), False),
    "rfft_one": (lambda x: mx.fft.rfft(x), [(1,)], (1,), False),
    "fft_prime": (lambda x: mx.fft.fft(x), [(97,)], (97,), False),
    "quantize_no_rows": (lambda w: mx.quantize(w)[0], [(0, 64)], (0, 8), False),
    "quantized_matmul_no_rows": (lambda x: mx.quantized_matmul(x, *Q_AFFINE), [(0, 64)], (0, 16),
                                 False),
    "gather_mm_no_indices": (lambda a, b: mx.gather_mm(a, b, mx.zeros((0,), mx.uint32),
                                                       mx.zeros((0,), mx.uint32)),
                             [(2, 3, 4), (2, 4, 5)], (0, 3, 5), False),
    "gather_mm_empty_contraction": (mx.gather_mm, [(2, 3, 0), (2, 0, 5)], (2, 3, 5), True),
    "segmented_mm_no_segments": (lambda a, b: mx.segmented_mm(a, b, mx.zeros((0, 2), mx.int32)),
                                 [(3, 4), (4, 5)], (0, 3, 5), False),
    "segmented_mm_empty_contraction": (lambda a, b: mx.segmented_mm(a, b, mx.array([[0, 0]])),
                                       [(3, 0), (0, 5)], (1, 3, 5), True),
    "segmented_mm_empty_segment": (lambda a, b: mx.segmented_mm(a, b, mx.array([[2, 2]])),
                                   [(3, 4), (4, 5)], (1, 3, 5), True),
    "block_masked_mm_no_rows": (lambda a, b: mx.block_masked_mm(a, b, 32), [(0, 32), (32, 32)],
                                (0, 32), False),
    "hadamard_empty_axis": (mx.hadamard_transform, [(3, 0)], (3, 0), False),
    "hadamard_length_one": (mx.hadamard_transform, [(3, 1)], (3, 1), False),
    "hadamard_no_rows": (mx.hadamard_transform, [(0, 8)], (0, 8), False),
    "hadamard_scalar": (mx.hadamard_transform, [()], (), False),
}


@pytest.mark.parametrize("name", sorted(ODD_SIZES))
def test_odd_sizes(name):
    f, shapes, out_shape, zeros = ODD_SIZES[name]
    out = f(*[normal(*s) for s in shapes])
    mx.eval(out)
    assert out.shape == out_shape
    if zeros:
        assert not np.any(np.array(out))


@pytest.mark.parametrize("f,message", [
    (lambda: mx.conv1d(mx.zeros((1, 2, 1)), mx.zeros((1, 3, 1))), r"\[conv\].*does not fit"),
    (lambda: mx.convolve(mx.zeros((0,)), mx.zeros((3,))), r"\[convolve\].*empty"),
    (lambda: mx.fft.fft(mx.zeros((0,))), r"\[fft\].*at least 1"),
    (lambda: mx.fft.fft(mx.zeros((4,)), n=0), r"\[fft\].*at least 1"),
    (lambda: mx.fft.irfft(mx.zeros((1,))), r"\[irfft\].*at least 1"),
    (lambda: mx.fft.stft(mx.zeros((3,)), n_fft=8), r"\[stft\].*longer"),
    (lambda: mx.hadamard_transform(mx.zeros((3,))), r"\[hadamard_transform\].*m \* 2\^k"),
])
def test_sizes_that_cannot_work(f, message):
    with pytest.raises(ValueError, match=message):
        mx.eval(f())
