"""Every public op family through export_function: each case is exported here, imported in a
fresh process and run there on new inputs of the traced shapes; the results must match what
the function computes here. (test_export.py covers the file format and its hostile inputs.)"""
import os
import subprocess
import sys

import numpy as np
import pytest

import mlx.core as mx
import mlx.nn as nn

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(mx.__file__)))


def normal(*shape, seed=0):
    return mx.array(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


def quantized(shape, mode="affine", **kw):
    return list(mx.quantize(normal(*shape, seed=9), mode=mode, **kw))


def cases():
    """name -> (function, example inputs, a function giving other inputs of the same
    signature). Weights captured by a function are exported as constants."""
    w_conv2 = normal(4, 3, 3, 3, seed=1)
    qw, qs, qb = quantized((32, 64))
    q_experts = quantized((3, 32, 64))
    fp_experts = quantized((3, 32, 64), mode="mxfp4")
    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.AvgPool2d(1))
    qlinear = nn.QuantizedLinear(64, 16, bias=True)
    mx.eval(model.parameters(), qlinear.parameters())
    c = {
        # Convolutions: every dimension, transposed, dilated, grouped, flipped.
        "conv1d": (lambda x, w: mx.conv1d(x, w, stride=2, padding=1, dilation=2),
                   [normal(2, 11, 4), normal(5, 3, 4)]),
        "conv2d_captured_weight": (lambda x: mx.conv2d(x, w_conv2, stride=(2, 1), padding=1),
                          [normal(1, 7, 6, 3)]),
        "conv3d": (lambda x, w: mx.conv3d(x, w, padding=(1, 0, 1)),
                   [normal(1, 4, 5, 3, 2), normal(3, 2, 2, 2, 2)]),
        "conv_transpose1d": (lambda x, w: mx.conv_transpose1d(x, w, stride=2, output_padding=1),
                             [normal(2, 5, 4), normal(3, 3, 4)]),
        "conv_transpose2d": (lambda x, w: mx.conv_transpose2d(x, w, padding=1),
                             [normal(1, 4, 5, 2), normal(3, 3, 3, 2)]),
        "conv_transpose3d": (lambda x, w: mx.conv_transpose3d(x, w),
                             [normal(1, 3, 3, 3, 2), normal(2, 2, 2, 2, 2)]),
        "conv_general": (lambda x, w: mx.conv_general(x, w, stride=(1, 2), padding=([1, 0], [0, 1]),
                                                      kernel_dilation=(2, 1), input_dilation=(1, 2),
                                                      groups=2, flip=True),
                         [normal(1, 6, 5, 4), normal(4, 2, 3, 2)]),
        "convolve": (lambda a, b: mx.convolve(a, b, mode="same"), [normal(9), normal(4)]),
        "nn_conv_pool": (model, [normal(2, 8, 8, 3)]),
        # FFT: complex and real transforms of any length, several axes, STFT.
        "fft": (lambda x: mx.fft.ifft(mx.fft.fft(x, n=7) * 2), [normal(3, 5)]),
        "fftn": (lambda x: mx.fft.fftn(x.astype(mx.complex64), axes=(0, 2)), [normal(3, 4, 5)]),
        "rfft_irfft": (lambda x: mx.fft.irfft(mx.fft.rfft(x, axis=0), n=9, axis=0), [normal(9, 2)]),
        "rfft2_irfftn": (lambda x: mx.fft.irfftn(mx.fft.rfft2(x), s=(6, 5)), [normal(6, 5)]),
        "ifft2": (lambda x: mx.fft.ifft2(x.astype(mx.complex64)), [normal(4, 3)]),
        "shifts": (lambda x: mx.fft.ifftshift(mx.fft.fftshift(x) * 2, axes=(0,)), [normal(5, 4)]),
        "stft_istft": (lambda x: mx.fft.istft(mx.fft.stft(x, n_fft=8, hop_length=2), hop_length=2,
                                              length=32), [normal(32)]),
        # Quantization in every mode, quantized products, gathered and doubly quantized ones.
        "quantize_dequantize": (lambda w: mx.dequantize(*mx.quantize(w, bits=3, group_size=32),
                                                        bits=3, group_size=32), [normal(4, 64)]),
        "quantized_matmul": (lambda x: mx.quantized_matmul(x, qw, qs, qb, transpose=True),
                             [normal(3, 64)]),
        "quantized_matmul_mxfp8": (lambda x, *q: mx.quantized_matmul(x, *q, transpose=False,
                                                                     mode="mxfp8"),
                                   [normal(2, 32)] + quantized((32, 64), mode="mxfp8")),
        "gather_qmm": (lambda x, li, ri: mx.gather_qmm(x, *q_experts, lhs_indices=li,
                                                       rhs_indices=ri, transpose=True),
                       [normal(4, 2, 64), mx.array([0, 3, 1, 1]), mx.array([2, 0, 2, 1])]),
        "gather_qmm_mxfp4": (lambda x, ri: mx.gather_qmm(x, *fp_experts, rhs_indices=ri,
                                                         transpose=True, mode="mxfp4"),
                             [normal(1, 64), mx.array([[1, 0], [2, 2]])]),
        "qqmm": (lambda x, w: mx.qqmm(x, w, mode="mxfp8"), [normal(2, 64), normal(8, 64)]),
        "gather_qqmm": (lambda x, w, ri: mx.gather_qqmm(x, w, rhs_indices=ri, mode="mxfp8"),
                        [normal(2, 64), normal(3, 8, 64), mx.array([2, 0])]),
        "nn_quantized_linear": (qlinear, [normal(5, 64)]),
        # Grouped and masked products, the Hadamard transform.
        "gather_mm": (lambda a, b, li, ri: mx.gather_mm(a, b, li, ri),
                      [normal(2, 3, 4), normal(3, 4, 5), mx.array([[0, 1], [1, 1]]),
                       mx.array([[2, 0], [1, 2]])]),
        "gather_mm_transposed_b": (lambda a, b, ri: mx.gather_mm(a, b.swapaxes(-1, -2),
                                                                 rhs_indices=ri),
                                   [normal(4, 1, 6), normal(3, 5, 6), mx.array([2, 0, 0, 1])]),
        "segmented_mm": (lambda a, b, seg: mx.segmented_mm(a, b, seg),
                         [normal(3, 7), normal(7, 2), mx.array([[0, 3], [3, 3], [2, 7]])]),
        "block_masked_mm": (lambda a, b, m: mx.block_masked_mm(a, b, 32, mask_out=m),
                            [normal(64, 32), normal(32, 64), mx.array([[True, False], [False, True]])]),
        "hadamard": (lambda x: (mx.hadamard_transform(x, scale=0.5),
                                mx.hadamard_transform(x[..., :12])),
                     [normal(3, 16)]),
        "hadamard_20": (lambda x: mx.hadamard_transform(x.astype(mx.float16)), [normal(2, 20)]),
        # A compiled function called by the exported one (its fused regions are written as
        # the ordinary primitives they fuse).
        "compiled": (mx.compile(lambda x, y: (mx.sum(mx.exp(x) * y + 1, axis=-1), mx.tanh(x) - y)),
                     [normal(3, 4), normal(3, 4)]),
    }
    return c


def other_inputs(args, seed):
    """Inputs of the same dtypes and shapes with other values (indices kept: they must stay
    in range; boolean masks kept)."""
    out = []
    for i, a in enumerate(args):
        if mx.issubdtype(a.dtype, mx.floating) and a.ndim > 0:
            out.append(normal(*a.shape, seed=seed + i).astype(a.dtype))
        else:
            out.append(a)
    return out


def as_list(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


def test_every_family_runs_the_same_in_a_fresh_process(tmp_path):
    names, expected = [], {}
    for name, (fun, args) in cases().items():
        path = str(tmp_path / f"{name}.mlxfn")
        mx.export_function(path, fun, *args)
        new = other_inputs(args, seed=100)
        for k, a in enumerate(new):
            np.save(tmp_path / f"{name}.in{k}.npy", np.array(a))
        expected[name] = [np.array(o) for o in as_list(fun(*new))]
        names.append(name)
    code = f"""
import numpy as np, mlx.core as mx, os
d = {str(tmp_path)!r}
for name in {names!r}:
    f = mx.import_function(os.path.join(d, name + ".mlxfn"))
    ins, k = [], 0
    while os.path.exists(os.path.join(d, f"{{name}}.in{{k}}.npy")):
        ins.append(mx.array(np.load(os.path.join(d, f"{{name}}.in{{k}}.npy"))))
        k += 1
    for j, o in enumerate(f(*ins)):
        np.save(os.path.join(d, f"{{name}}.out{{j}}.npy"), np.array(o))
"""
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    for name in names:
        for j, want in enumerate(expected[name]):
            got = np.load(tmp_path / f"{name}.out{j}.npy")
            assert got.shape == want.shape and got.dtype == want.dtype, name
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=name)
        assert not (tmp_path / f"{name}.out{len(expected[name])}.npy").exists(), name


@pytest.mark.parametrize("name", ["gather_mm", "segmented_mm", "gather_qmm", "hadamard"])
def test_new_primitives_round_trip_in_process(tmp_path, name):
    fun, args = cases()[name]
    path = str(tmp_path / "f.mlxfn")
    mx.export_function(path, fun, *args)
    got = as_list(mx.import_function(path)(*args))
    for g, w in zip(got, as_list(fun(*args))):
        np.testing.assert_allclose(np.array(g), np.array(w), rtol=1e-5, atol=1e-5)


def test_out_of_range_indices_in_an_imported_gather_raise(tmp_path):
    # Index values are data: the kernels check them when they run.
    fun, args = cases()["gather_mm"]
    path = str(tmp_path / "g.mlxfn")
    mx.export_function(path, fun, *args)
    f = mx.import_function(path)
    bad = args[:3] + [mx.array([[2, 0], [1, 3]])]
    with pytest.raises(IndexError, match="gather_mm"):
        mx.eval(f(*bad))


@pytest.mark.parametrize("name", ["gather_mm", "segmented_mm", "gather_qmm", "hadamard"])
def test_new_primitives_parameters_are_checked_on_import(tmp_path, name):
    """Each new primitive's step is checked against its inputs: a file whose step reads
    inputs of the wrong kind is refused when it is imported, never run."""
    fun, args = cases()[name]
    path = tmp_path / "f.mlxfn"
    mx.export_function(str(path), fun, *args)
    good = path.read_bytes()
    prim = {"gather_mm": b"GatherMM", "segmented_mm": b"SegmentedMM", "gather_qmm": b"GatherQMM",
            "hadamard": b"Hadamard"}[name]
    assert prim in good
    if name == "hadamard":
        # A length the transform does not have: the input declared (3, 15) instead of (3, 16).
        bad = _with_input_shape(good, (3, 16), (3, 15))
    elif name == "gather_qmm":
        # The packed matrix's bits changed: its scales no longer match.
        bad = good.replace(b"GatherQMM" + np.int64(64).tobytes() + np.int64(4).tobytes(),
                           b"GatherQMM" + np.int64(64).tobytes() + np.int64(5).tobytes())
    else:
        bad = _with_input_shape(good, args[0].shape, tuple(args[0].shape[:-1]) + (9,))
    assert bad != good
    p = tmp_path / "bad.mlxfn"
    p.write_bytes(bad)
    why = {"gather_mm": "do not multiply", "segmented_mm": "do not multiply",
           "gather_qmm": "Invalid packed matrix", "hadamard": "m \\* 2\\^k"}[name]
    with pytest.raises(RuntimeError, match="Invalid function file.*" + why):
        mx.import_function(str(p))


def _with_input_shape(data, shape, new_shape):
    """The file with the first input's declared shape replaced (a u32 count, then i64 each)."""
    def enc(s):
        return np.uint32(len(s)).tobytes() + b"".join(np.int64(d).tobytes() for d in s)
    i = data.index(enc(shape))
    return data[:i] + enc(new_shape) + data[i + len(enc(shape)):]
