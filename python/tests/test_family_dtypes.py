"""Every dtype through each function of the convolution, FFT, quantization, grouped-product
and Hadamard families: a dtype the function accepts gives MLX's result dtype and the values
of the computation on the inputs converted to float64 (within the dtype's precision); any
other raises ValueError naming the function, never a crash or a silent conversion."""
import numpy as np
import pytest

import mlx.core as mx

DTYPES = [mx.bool_, mx.uint8, mx.uint16, mx.uint32, mx.uint64, mx.int8, mx.int16, mx.int32,
          mx.int64, mx.float16, mx.bfloat16, mx.float32, mx.float64, mx.complex64]
REAL_FLOATS = {mx.float16, mx.bfloat16, mx.float32, mx.float64}
TOL = {mx.float16: 2e-2, mx.bfloat16: 1e-1, mx.float32: 1e-4, mx.float64: 1e-4,
       mx.complex64: 1e-4}


def small_ints(*shape, seed=0):
    """Values every dtype holds exactly (0..3), so only the arithmetic's precision differs."""
    return np.random.default_rng(seed).integers(0, 4, shape).astype(np.float64)


def fft_out(dt):
    return mx.complex64


def same_float(dt):
    return dt


def float_or_float32(dt):
    return dt if dt in REAL_FLOATS else mx.float32


QW = mx.quantize(mx.array(small_ints(8, 64, seed=5), dtype=mx.float32))
QE = mx.quantize(mx.array(small_ints(2, 8, 64, seed=6), dtype=mx.float32))
NV = mx.quantize(mx.array(small_ints(2, 8, 64, seed=7), dtype=mx.float32), mode="nvfp4")
HALF_AND_FLOAT32 = {mx.float16, mx.bfloat16, mx.float32}

# name -> (op name in errors, function of the input arrays, input shapes, accepted dtypes,
# result dtype for an accepted dtype).
CASES = {
    "conv1d": ("conv", lambda x, w: mx.conv1d(x, w, padding=1), [(1, 7, 2), (3, 3, 2)],
               REAL_FLOATS, same_float),
    "conv2d": ("conv", lambda x, w: mx.conv2d(x, w, stride=2), [(1, 5, 5, 2), (3, 3, 3, 2)],
               REAL_FLOATS, same_float),
    "conv3d": ("conv", mx.conv3d, [(1, 3, 3, 3, 1), (2, 2, 2, 2, 1)], REAL_FLOATS, same_float),
    "conv_transpose1d": ("conv", mx.conv_transpose1d, [(1, 5, 2), (3, 3, 2)], REAL_FLOATS,
                         same_float),
    "conv_transpose2d": ("conv", mx.conv_transpose2d, [(1, 3, 4, 2), (3, 2, 2, 2)],
                         REAL_FLOATS, same_float),
    "conv_transpose3d": ("conv", mx.conv_transpose3d, [(1, 3, 3, 3, 2), (2, 2, 2, 2, 2)],
                         REAL_FLOATS, same_float),
    "conv_general": ("conv", lambda x, w: mx.conv_general(x, w, stride=2, padding=1,
                                                          input_dilation=2, flip=True),
                     [(1, 5, 5, 2), (3, 3, 3, 2)], REAL_FLOATS, same_float),
    "convolve": ("conv", mx.convolve, [(7,), (3,)], REAL_FLOATS, same_float),
    "fft": ("fft", mx.fft.fft, [(6,)], set(DTYPES), fft_out),
    "ifft": ("fft", mx.fft.ifft, [(6,)], set(DTYPES), fft_out),
    "fft2": ("fft", mx.fft.fft2, [(3, 4)], set(DTYPES), fft_out),
    "ifft2": ("fft", mx.fft.ifft2, [(3, 4)], set(DTYPES), fft_out),
    "fftn": ("fft", mx.fft.fftn, [(2, 3, 4)], set(DTYPES), fft_out),
    "ifftn": ("fft", mx.fft.ifftn, [(2, 3, 5)], set(DTYPES), fft_out),
    "rfft": ("rfft", mx.fft.rfft, [(7,)], set(DTYPES) - {mx.complex64}, fft_out),
    "rfft2": ("rfftn", mx.fft.rfft2, [(3, 5)], set(DTYPES) - {mx.complex64}, fft_out),
    "rfftn": ("rfftn", mx.fft.rfftn, [(2, 3, 5)], set(DTYPES) - {mx.complex64}, fft_out),
    "irfft": ("irfft", mx.fft.irfft, [(5,)], set(DTYPES), lambda dt: mx.float32),
    "irfft2": ("irfft", mx.fft.irfft2, [(3, 4)], set(DTYPES), lambda dt: mx.float32),
    "irfftn": ("irfft", mx.fft.irfftn, [(2, 3, 4)], set(DTYPES), lambda dt: mx.float32),
    "fftshift": ("fftshift", mx.fft.fftshift, [(3, 5)], set(DTYPES), same_float),
    "ifftshift": ("ifftshift", mx.fft.ifftshift, [(3, 5)], set(DTYPES), same_float),
    "stft": ("stft", lambda x: mx.fft.stft(x, n_fft=4, hop_length=2), [(12,)], set(DTYPES),
             fft_out),
    "istft": ("istft", lambda s: mx.fft.istft(s, n_fft=4, hop_length=2), [(3, 7)], set(DTYPES),
              lambda dt: mx.float32),
    "quantize": ("quantize", lambda w: mx.dequantize(*mx.quantize(w), dtype=mx.float32),
                 [(2, 64)], HALF_AND_FLOAT32, lambda dt: mx.float32),
    "dequantize": ("dequantize", lambda s, b: mx.dequantize(QW[0][:2], s, b), [(2, 1), (2, 1)],
                   REAL_FLOATS, same_float),
    "quantized_matmul": ("quantized_matmul", lambda x: mx.quantized_matmul(x, *QW), [(3, 64)],
                         set(DTYPES) - {mx.float64, mx.complex64}, lambda dt: mx.float32),
    "gather_qmm": ("gather_qmm", lambda x: mx.gather_qmm(x, *QE, rhs_indices=mx.array([1, 0]),
                                                         transpose=True),
                   [(2, 1, 64)], set(DTYPES) - {mx.float64, mx.complex64}, lambda dt: mx.float32),
    "qqmm": ("qqmm", lambda x: mx.qqmm(x, NV[0][0], NV[1][0]), [(3, 64)], HALF_AND_FLOAT32,
             same_float),
    "qqmm_unquantized_w": ("qqmm", lambda w: mx.qqmm(mx.ones((3, 64)), w), [(8, 64)],
                           HALF_AND_FLOAT32, lambda dt: mx.float32),
    "gather_qqmm": ("gather_qqmm", lambda x: mx.gather_qqmm(x, *NV, rhs_indices=mx.array([1, 0])),
                    [(2, 1, 64)], HALF_AND_FLOAT32, same_float),
    "gather_mm": ("gather_mm", lambda a, b: mx.gather_mm(a, b, rhs_indices=mx.array([1, 0, 1])),
                  [(3, 2, 4), (2, 4, 3)], REAL_FLOATS, same_float),
    "segmented_mm": ("segmented_mm", lambda a, b: mx.segmented_mm(a, b, mx.array([[0, 2], [1, 4]])),
                     [(2, 4), (4, 3)], REAL_FLOATS, same_float),
    "block_masked_mm": ("block_masked_mm", lambda a, b: mx.block_masked_mm(a, b, 32),
                        [(32, 32), (32, 32)], REAL_FLOATS, same_float),
    "hadamard_transform": ("hadamard_transform", mx.hadamard_transform, [(3, 12)],
                           set(DTYPES) - {mx.complex64}, float_or_float32),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", sorted(CASES))
def test_every_dtype(name, dtype):
    op, f, shapes, accepted, out_dtype = CASES[name]
    values = [small_ints(*s, seed=i) for i, s in enumerate(shapes)]
    args = [mx.array(v, dtype=dtype) for v in values]
    if dtype not in accepted:
        with pytest.raises(ValueError, match=rf"\[{op}\]"):
            mx.eval(f(*args))
        return
    out = f(*args)
    assert out.dtype == out_dtype(dtype)
    # The reference: the same computation on float64 inputs (float32 where the function
    # takes no float64), which the family suites check against NumPy.
    # Bools hold 0 / 1; complex inputs stay complex (stft of one is two-sided).
    ref_dtype = mx.float64 if mx.float64 in accepted else mx.float32
    ref_dtype = mx.complex64 if dtype == mx.complex64 else ref_dtype
    ref = f(*[a.astype(ref_dtype) for a in args])
    tol = TOL.get(out.dtype if out.dtype in REAL_FLOATS - {mx.float32} else dtype, 1e-4)
    scale = max(1.0, float(np.max(np.abs(np.array(ref)))))
    np.testing.assert_allclose(np.array(out.astype(ref.dtype)), np.array(ref), rtol=tol,
                               atol=tol * scale)
