"""mx.fast.cuda_kernel and mx.fast.precompiled_cuda_kernel: argument checks everywhere, and the
kernels themselves on a GPU (NVRTC compiles the sources; nvcc makes the PTX of the precompiled
case)."""

import os
import shutil
import subprocess

import numpy as np
import pytest

import mlx.core as mx

needs_gpu = pytest.mark.skipif(not mx.cuda.is_available(), reason="needs a CUDA GPU")

EXP_SOURCE = """
    auto elem = cooperative_groups::this_grid().thread_rank();
    T tmp = inp[elem];
    out[elem] = exp(tmp);
"""


def exp_kernel():
    return mx.fast.cuda_kernel(name="myexp", input_names=["inp"], output_names=["out"],
                               source=EXP_SOURCE)


def run_exp(a, threads=256, **kw):
    return exp_kernel()(inputs=[a], template=[("T", a.dtype)], grid=(a.size, 1, 1),
                        threadgroup=(threads, 1, 1), output_shapes=[a.shape],
                        output_dtypes=[a.dtype], **kw)[0]


def test_kernel_objects_and_their_argument_checks():
    k = exp_kernel()
    assert "myexp" in repr(k)
    a = mx.ones((4,))
    call = dict(inputs=[a], grid=(4, 1, 1), threadgroup=(4, 1, 1), output_shapes=[(4,)],
                output_dtypes=[mx.float32])
    with pytest.raises(ValueError, match="takes 1 inputs; got 2"):
        k(**{**call, "inputs": [a, a]})
    with pytest.raises(ValueError, match="Expected 1 output shapes"):
        k(**{**call, "output_shapes": [(4,), (4,)]})
    with pytest.raises(ValueError, match="positive"):
        k(**{**call, "grid": (0, 1, 1)})
    with pytest.raises(ValueError, match="at most 1024"):
        k(**{**call, "threadgroup": (64, 32, 1)})
    with pytest.raises(ValueError, match="Negative output dimension"):
        k(**{**call, "output_shapes": [(-1,)]})
    with pytest.raises(ValueError, match="distinct C identifiers"):
        k(**call, template=[("T", mx.float32), ("T", mx.float16)])
    with pytest.raises(TypeError, match="Dtype, an int or a bool"):
        k(**call, template=[("T", 1.5)])
    with pytest.raises(ValueError, match="C identifier"):
        mx.fast.cuda_kernel(name="my exp", input_names=["a"], output_names=["b"], source="")
    with pytest.raises(ValueError, match="repeated"):
        mx.fast.cuda_kernel(name="k", input_names=["a"], output_names=["a"], source="")
    with pytest.raises(ValueError, match="at least one output"):
        mx.fast.cuda_kernel(name="k", input_names=["a"], output_names=[], source="")
    # The host has no kernel: a CPU stream is refused by name.
    with pytest.raises(ValueError, match="run on the GPU"):
        k(**call, stream=mx.cpu)
    with pytest.raises(ValueError, match="run on the GPU"):
        mx.fast.precompiled_cuda_kernel(
            name="k", compiled_source=b"x", inputs=[a], output_shapes=[(4,)],
            output_dtypes=[mx.float32], scalars=[], grid=(4, 1, 1), threadgroup=(4, 1, 1),
            stream=mx.cpu)
    with pytest.raises(ValueError, match="compiled_source is empty"):
        mx.fast.precompiled_cuda_kernel(
            name="k", compiled_source=b"", inputs=[a], output_shapes=[(4,)],
            output_dtypes=[mx.float32], scalars=[], grid=(4, 1, 1), threadgroup=(4, 1, 1))
    with pytest.raises(TypeError, match="bool, int or float"):
        mx.fast.precompiled_cuda_kernel(
            name="k", compiled_source=b"x", inputs=[a], output_shapes=[(4,)],
            output_dtypes=[mx.float32], scalars=["s"], grid=(4, 1, 1), threadgroup=(4, 1, 1))


@needs_gpu
@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.bfloat16])
def test_the_documented_example_and_a_grid_that_is_not_a_multiple_of_the_block(dtype):
    # 1000 threads in blocks of 256: the last block's extra threads must not write past `out`.
    a = mx.random.normal((1000,)).astype(dtype)
    b = run_exp(a)
    assert b.dtype == dtype and b.shape == a.shape
    tol = 1e-6 if dtype == mx.float32 else 1e-2
    np.testing.assert_allclose(np.array(b.astype(mx.float32)),
                               np.exp(np.array(a.astype(mx.float32))), rtol=tol, atol=tol)
    # A second call with the same source reuses the compiled kernel.
    assert mx.array_equal(run_exp(a), b).item()


@needs_gpu
def test_shapes_strides_and_ndim_of_a_strided_input():
    # With ensure_row_contiguous=False the kernel reads a transposed view through its strides.
    src = """
        unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
        int64_t loc = 0;
        unsigned rest = i;
        for (int d = x_ndim - 1; d >= 0; --d) {
            loc += (rest % x_shape[d]) * x_strides[d];
            rest /= x_shape[d];
        }
        out[i] = x[loc] * T(SCALE) + (NEGATE ? T(-1) : T(0));
    """
    k = mx.fast.cuda_kernel(name="strided_copy", input_names=["x"], output_names=["out"],
                            source=src, ensure_row_contiguous=False)
    base = mx.arange(6 * 7, dtype=mx.float32).reshape(6, 7)
    for x in (base.T, base[::2, 1:], base):
        for negate in (True, False):
            y = k(inputs=[x], template=[("T", mx.float32), ("SCALE", 3), ("NEGATE", negate)],
                  grid=(x.size, 1, 1), threadgroup=(32, 1, 1), output_shapes=[x.shape],
                  output_dtypes=[mx.float32])[0]
            want = np.array(x) * 3 - (1 if negate else 0)
            np.testing.assert_array_equal(np.array(y), want)


@needs_gpu
def test_init_value_atomics_several_outputs_shared_memory_and_2d_grids():
    # Each block sums its row through shared memory; out starts at init_value and counts rows
    # with atomicAdd; a 2-D grid of (columns, rows).
    src = """
        extern __shared__ float partial[];
        unsigned col = threadIdx.x, row = blockIdx.y;
        partial[col] = x[row * x_shape[1] + col];
        __syncthreads();
        for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
            if (col < s) partial[col] += partial[col + s];
            __syncthreads();
        }
        if (col == 0) {
            sums[row] = partial[0];
            atomicAdd(count, 1.0f);
        }
    """
    k = mx.fast.cuda_kernel(name="row_sums", input_names=["x"], output_names=["sums", "count"],
                            source=src, shared_memory=64 * 4)
    x = mx.random.normal((5, 64))
    sums, count = k(inputs=[x], grid=(64, 5, 1), threadgroup=(64, 1, 1),
                    output_shapes=[(5,), (1,)], output_dtypes=[mx.float32, mx.float32],
                    init_value=10.0)
    np.testing.assert_allclose(np.array(sums), np.array(x).sum(axis=1), rtol=1e-5, atol=1e-5)
    assert count.item() == 15.0  # 10 + one per row


@needs_gpu
def test_a_kernel_that_does_not_compile_says_why_and_the_device_keeps_working():
    k = mx.fast.cuda_kernel(name="broken", input_names=["x"], output_names=["y"],
                            source="y[0] = x[0] + undefined_name;")
    with pytest.raises(ValueError, match="undefined_name"):
        mx.eval(k(inputs=[mx.ones(1)], grid=(1, 1, 1), threadgroup=(1, 1, 1),
                  output_shapes=[(1,)], output_dtypes=[mx.float32])[0])
    assert mx.sum(run_exp(mx.zeros((7,)))).item() == 7.0


@needs_gpu
def test_kernels_in_compiled_functions_and_custom_gradients():
    @mx.custom_function
    def my_exp(a):
        return run_exp(a)

    @my_exp.vjp
    def my_exp_vjp(primals, cotangent, output):
        return cotangent * output

    x = mx.random.normal((300,))
    f = mx.compile(lambda a: mx.sum(my_exp(a)))
    np.testing.assert_allclose(f(x).item(), np.exp(np.array(x)).sum(), rtol=1e-5)
    g = mx.grad(lambda a: mx.sum(my_exp(a)))(x)
    np.testing.assert_allclose(np.array(g), np.exp(np.array(x)), rtol=1e-5)


def nvcc():
    for path in (shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"):
        if path and os.path.exists(path):
            return path
    return None


@needs_gpu
def test_precompiled_ptx_with_scalars_in_the_kernels_widths(tmp_path):
    if nvcc() is None:
        pytest.skip("needs nvcc to make the PTX")
    src = tmp_path / "axpy.cu"
    src.write_text('extern "C" __global__ void axpy(const float* x, const double* y, float* out,'
                   " float a, long long n, bool add) {\n"
                   "  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
                   "  if (i < n) out[i] = a * x[i] + (add ? float(y[i]) : 0.f);\n}\n")
    ptx = tmp_path / "axpy.ptx"
    subprocess.run([nvcc(), "-ptx", "-arch=compute_90", str(src), "-o", str(ptx)], check=True)
    x = mx.random.normal((100,))
    y64 = mx.array(np.arange(100, dtype=np.float64), dtype=mx.float64)
    call = dict(name="axpy", compiled_source=ptx.read_bytes(), inputs=[x, y64],
                output_shapes=[(100,)], output_dtypes=[mx.float32], grid=(100, 1, 1),
                threadgroup=(64, 1, 1))
    out = mx.fast.precompiled_cuda_kernel(**call, scalars=[2.5, 100, True])[0]
    np.testing.assert_allclose(np.array(out), 2.5 * np.array(x) + np.arange(100), rtol=1e-6,
                               atol=1e-6)  # the kernel may fuse a * x + y (one rounding)
    with pytest.raises(ValueError, match="takes 6 parameters"):
        mx.eval(mx.fast.precompiled_cuda_kernel(**call, scalars=[2.5])[0])
    with pytest.raises(ValueError, match="no kernel named"):
        mx.eval(mx.fast.precompiled_cuda_kernel(**{**call, "name": "nope"},
                                                scalars=[2.5, 100, True])[0])
