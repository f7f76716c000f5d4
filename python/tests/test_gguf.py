"""mx.save_gguf and mx.load of .gguf files: metadata of every GGUF type, unquantized tensors,
Q4_0 / Q4_1 / Q8_0 into MLX's quantized layout (checked against a NumPy dequantization of
blocks written here by an independent writer), lazy loading, and hostile files (truncation,
random mutations, huge counts and sizes, bad offsets and types)."""
import io
import os
import struct

import numpy as np
import pytest

import mlx.core as mx

from gguf_util import (ALL_METADATA, ARR, BOOL, I32, NP_OF, STR, T_BF16, T_F16, T_F32, T_F64,
                       T_I8, T_I16, T_I32, T_I64, T_Q4_0, T_Q4_1, T_Q8_0, U32, gstr, q4_0_blocks,
                       q4_1_blocks, q8_0_blocks, write_gguf)


def test_load_every_metadata_type(tmp_path):
    data, _ = write_gguf(ALL_METADATA, [])
    p = tmp_path / "meta.gguf"
    p.write_bytes(data)
    arrays, meta = mx.load(str(p), return_metadata=True)
    assert arrays == {}
    assert meta["general.architecture"] == "llama"
    assert meta["tokens"] == ["a", "bc", ""]
    for key, t, v in ALL_METADATA:
        if t in NP_OF:
            assert isinstance(meta[key], mx.array) and meta[key].ndim == 0
            assert meta[key].dtype == getattr(mx, np.dtype(NP_OF[t]).name if t != BOOL else "bool_")
            assert meta[key].item() == v
    np.testing.assert_array_equal(np.array(meta["scores"]), [0.5, -1.0])
    assert meta["ids"].dtype == mx.int32 and meta["ids"].tolist() == [1, 2, 3]
    assert meta["mask"].tolist() == [True, False]
    # Without return_metadata: just the arrays.
    assert mx.load(str(p)) == {}


@pytest.mark.parametrize(
    "t,np_dtype",
    [(T_F32, np.float32), (T_F16, np.float16), (T_F64, np.float64), (T_I8, np.int8),
     (T_I16, np.int16), (T_I32, np.int32), (T_I64, np.int64)],
)
def test_load_unquantized(tmp_path, t, np_dtype):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((3, 5, 4)) * 50).astype(np_dtype)
    data, _ = write_gguf([], [("x", (4, 5, 3), t, x.tobytes()), ("s", (), t, x.flat[0].tobytes())])
    p = tmp_path / "t.gguf"
    p.write_bytes(data)
    w = mx.load(str(p))
    assert w["x"].shape == (3, 5, 4)
    np.testing.assert_array_equal(np.array(w["x"]), x)
    assert w["s"].shape == () and w["s"].item() == x.flat[0]


def test_load_bfloat16(tmp_path):
    x = np.array([1.0, -2.5, 3.0, 0.0], np.float32)
    bf = (x.view(np.uint32) >> 16).astype(np.uint16)
    data, _ = write_gguf([], [("b", (4,), T_BF16, bf.tobytes())])
    p = tmp_path / "b.gguf"
    p.write_bytes(data)
    b = mx.load(str(p))["b"]
    assert b.dtype == mx.bfloat16
    np.testing.assert_array_equal(np.array(b.astype(mx.float32)), x)


@pytest.mark.parametrize(
    "t,make,bits", [(T_Q4_0, q4_0_blocks, 4), (T_Q4_1, q4_1_blocks, 4), (T_Q8_0, q8_0_blocks, 8)]
)
def test_load_quantized_into_mlx_layout(tmp_path, t, make, bits):
    rng = np.random.default_rng(3)
    rows, cols = 6, 96
    raw, values = make(rng, rows * cols // 32)
    values = values.reshape(rows, cols)
    data, _ = write_gguf([("general.file_type", U32, 2)], [("blk.0.attn_q.weight", (cols, rows), t, raw)])
    p = tmp_path / "q.gguf"
    p.write_bytes(data)
    w = mx.load(str(p))
    assert set(w) == {"blk.0.attn_q.weight", "blk.0.attn_q.scales", "blk.0.attn_q.biases"}
    q, s, b = w["blk.0.attn_q.weight"], w["blk.0.attn_q.scales"], w["blk.0.attn_q.biases"]
    assert q.dtype == mx.uint32 and q.shape == (rows, cols * bits // 32)
    assert s.shape == b.shape == (rows, cols // 32) and s.dtype == mx.float16
    deq = mx.dequantize(q, s, b, group_size=32, bits=bits)
    np.testing.assert_allclose(np.array(deq.astype(mx.float32)), values, rtol=2e-3, atol=2e-3)
    # And it computes: the quantized product against the dequantized matrix.
    x = mx.array(rng.standard_normal((2, cols)).astype(np.float32))
    y = mx.quantized_matmul(x, q, s.astype(mx.float32), b.astype(mx.float32), group_size=32, bits=bits)
    np.testing.assert_allclose(np.array(y), np.array(x) @ values.T, rtol=2e-2, atol=2e-2)


def test_file_written_by_gguf_py():
    """A file from llama.cpp's own Python writer (data/make_gguf_reference.py): metadata as it
    wrote it, and every tensor equal to gguf-py's dequantization of its blocks."""
    data = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
    ref = np.load(os.path.join(data, "gguf_py_reference.npz"))
    w, meta = mx.load(os.path.join(data, "gguf_py_reference.gguf"), return_metadata=True)
    assert meta["general.architecture"] == "llama" and meta["general.name"] == "ref"
    assert meta["tokenizer.ggml.tokens"] == ["a", "b", "c"]
    assert meta["llama.block_count"].item() == 2 and meta["flag"].item() is True
    for name in ("f32", "f16"):
        np.testing.assert_array_equal(np.array(w[name].astype(mx.float32)), ref[name])
    for name, bits in (("q40", 4), ("q41", 4), ("q80", 8)):
        q, s, b = (w[f"{name}.{k}"] for k in ("weight", "scales", "biases"))
        deq = mx.dequantize(q, s.astype(mx.float32), b.astype(mx.float32), group_size=32, bits=bits)
        np.testing.assert_array_equal(np.array(deq), ref[name])


def test_other_block_types_load_as_float16():
    """Q5_0, Q5_1, Q4_K, Q5_K and Q6_K blocks (random bytes written by gguf-py) load as
    float16, equal to gguf-py's own dequantization rounded to float16."""
    data = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
    ref = np.load(os.path.join(data, "gguf_py_dequantized.npz"))
    w = mx.load(os.path.join(data, "gguf_py_dequantized.gguf"))
    assert set(w) == set(ref.files)
    for name in ref.files:
        assert w[name].dtype == mx.float16 and w[name].shape == ref[name].shape, name
        np.testing.assert_array_equal(
            np.array(w[name].astype(mx.float32)), ref[name].astype(np.float16).astype(np.float32)
        )


def test_save_gguf_round_trip(tmp_path):
    rng = np.random.default_rng(4)
    arrays = {
        "f32": mx.array(rng.standard_normal((2, 3)).astype(np.float32)),
        "f16": mx.array(rng.standard_normal((5,)).astype(np.float16)),
        "bf16": mx.array([1.0, 2.0], dtype=mx.bfloat16),
        "i8": mx.array([-1, 2], dtype=mx.int8),
        "i16": mx.array([3], dtype=mx.int16),
        "i32": mx.arange(6).reshape(2, 3),
        "i64": mx.array([2**40], dtype=mx.int64),
        "t": mx.transpose(mx.arange(6).reshape(2, 3).astype(mx.float32)),
    }
    meta = {
        "name": "model",
        "tokens": ["x", "yz"],
        "n": mx.array(7, dtype=mx.uint32),
        "eps": mx.array(1e-5),
        "flags": mx.array([True, False]),
        "ids": mx.array([1, 2, 3], dtype=mx.int64),
    }
    path = str(tmp_path / "out")
    mx.save_gguf(path, arrays, meta)
    loaded, m = mx.load(path + ".gguf", return_metadata=True)
    assert set(loaded) == set(arrays)
    for k, v in arrays.items():
        assert loaded[k].dtype == v.dtype and loaded[k].shape == v.shape
        np.testing.assert_array_equal(np.array(loaded[k].astype(mx.float32)), np.array(v.astype(mx.float32)))
    assert m["name"] == "model" and m["tokens"] == ["x", "yz"]
    assert m["n"].dtype == mx.uint32 and m["n"].item() == 7
    assert m["eps"].item() == pytest.approx(1e-5)
    assert m["flags"].tolist() == [True, False] and m["ids"].tolist() == [1, 2, 3]
    # The file follows the format: magic, version 3, counts, 32-byte aligned data.
    raw = open(path + ".gguf", "rb").read()
    assert raw[:4] == b"GGUF" and struct.unpack_from("<IQQ", raw, 4) == (3, len(arrays), len(meta))
    # File-like objects.
    buf = io.BytesIO()
    mx.save_gguf(buf, {"a": mx.array([1.0])}, {})
    assert mx.load(io.BytesIO(buf.getvalue()), format="gguf")["a"].tolist() == [1.0]


def test_save_gguf_errors(tmp_path):
    p = str(tmp_path / "e.gguf")
    with pytest.raises(ValueError, match="dtype"):
        mx.save_gguf(p, {"c": mx.array([1 + 2j])}, {})
    with pytest.raises(ValueError, match="dtype"):
        mx.save_gguf(p, {"u": mx.array([1], dtype=mx.uint32)}, {})
    with pytest.raises(TypeError):
        mx.save_gguf(p, {}, {"k": 3})
    with pytest.raises(TypeError):
        mx.save_gguf(p, {}, {"k": ["a", 1]})
    with pytest.raises(ValueError):
        mx.save_gguf(p, {}, {"k": mx.zeros((2, 2))})


def test_loading_is_lazy(tmp_path):
    x = np.arange(1 << 16, dtype=np.float32)
    for ext, save in (
        ("gguf", lambda p: mx.save_gguf(p, {"x": mx.array(x)}, {})),
        ("safetensors", lambda p: mx.save_safetensors(p, {"x": mx.array(x)})),
    ):
        p = str(tmp_path / f"lazy.{ext}")
        save(p)
        mx.synchronize()
        before = mx.get_active_memory()
        w = mx.load(p)
        # Nothing is read (nor allocated) until the array is evaluated.
        assert mx.get_active_memory() - before < x.nbytes
        np.testing.assert_array_equal(np.array(w["x"]), x)
        # A file rewritten after loading is a clear error, not stale or torn data.
        w2 = mx.load(p)
        with open(p, "r+b") as f:
            f.seek(0, 2)
            f.write(b"\0" * 64)
        with pytest.raises(RuntimeError, match="changed after it was loaded"):
            mx.eval(w2["x"])


@pytest.mark.parametrize("ext", ["gguf", "safetensors"])
def test_converting_a_checkpoint_never_holds_it_twice(tmp_path, ext):
    """Loading 16 MB of float32 and converting each tensor to float16: with lazy loading only
    one float32 tensor is alive at a time (an eager load would hold all 16 MB first)."""
    rng = np.random.default_rng(6)
    arrays = {f"w{i}": mx.array(rng.standard_normal((1024, 1024)).astype(np.float32)) for i in range(4)}
    p = str(tmp_path / f"ckpt.{ext}")
    (mx.save_gguf(p, arrays, {}) if ext == "gguf" else mx.save_safetensors(p, arrays))
    del arrays
    mx.synchronize()
    mx.clear_cache()
    mx.reset_peak_memory()
    base = mx.get_active_memory()
    weights = mx.load(p)
    half = {}
    for k in sorted(weights):
        half[k] = weights.pop(k).astype(mx.float16)
        mx.eval(half[k])
    peak = mx.get_peak_memory() - base
    total_f32 = 4 * 1024 * 1024 * 4
    # On a GPU the tensor being converted also has its device copy.
    on_gpu = mx.default_device() == mx.gpu
    assert peak < total_f32 + (total_f32 // 4 if on_gpu else 0), peak
    assert all(v.dtype == mx.float16 for v in half.values())


# ---- hostile files ----------------------------------------------------------------------


def sample_file():
    rng = np.random.default_rng(5)
    raw, _ = q4_0_blocks(rng, 4)
    x = rng.standard_normal((2, 8)).astype(np.float32)
    return write_gguf(
        [("general.name", STR, "m"), ("ids", ARR, (I32, [1, 2])), ("tok", ARR, (STR, ["a"]))],
        [("x", (8, 2), T_F32, x.tobytes()), ("q.weight", (64, 2), T_Q4_0, raw)],
    )[0]


def load_bytes(tmp_path, data):
    p = tmp_path / "h.gguf"
    p.write_bytes(data)
    out = mx.load(str(p), return_metadata=True)
    mx.eval(list(out[0].values()))
    return out


def test_truncated_gguf_raises(tmp_path):
    good = sample_file()
    assert set(load_bytes(tmp_path, good)[0]) == {"x", "q.weight", "q.scales", "q.biases"}
    for n in range(len(good)):
        with pytest.raises(RuntimeError, match=r"Invalid \.gguf file"):
            load_bytes(tmp_path, good[:n])
        with pytest.raises(RuntimeError):
            mx.load(io.BytesIO(good[:n]), format="gguf")


def test_hostile_gguf_headers_raise(tmp_path):
    def header(version=3, n_tensors=0, n_kv=0):
        return b"GGUF" + struct.pack("<IQQ", version, n_tensors, n_kv)

    tensor = gstr("x") + struct.pack("<I", 1) + struct.pack("<Q", 4)
    cases = [
        ("magic", b"GGUX" + b"\0" * 60, "magic"),
        ("version", header(version=7) + b"\0" * 40, "version"),
        ("tensor count", header(n_tensors=2**62) + b"\0" * 40, "more than the file"),
        ("kv count", header(n_kv=2**40) + b"\0" * 40, "more than the file"),
        ("key length", header(n_kv=1) + struct.pack("<Q", 2**62) + b"\0" * 40, "exceeds"),
        ("value type", header(n_kv=1) + gstr("k") + struct.pack("<I", 99) + b"\0" * 40, "value type"),
        ("array count", header(n_kv=1) + gstr("k") + struct.pack("<IIQ", ARR, I32, 2**61) + b"\0" * 40,
         "exceeds"),
        ("array of arrays", header(n_kv=1) + gstr("k") + struct.pack("<IIQ", ARR, ARR, 1) + b"\0" * 40,
         "unsupported type"),
        ("dims", header(n_tensors=1) + gstr("x") + struct.pack("<I", 99) + b"\0" * 64, "dimensions"),
        ("dim size", header(n_tensors=1) + gstr("x") + struct.pack("<IQ", 1, 2**40) + b"\0" * 64,
         "dimension"),
        ("elements", header(n_tensors=1) + gstr("x") + struct.pack("<IQQQ", 3, 2**30, 2**30, 2**30)
         + struct.pack("<IQ", T_F32, 0) + b"\0" * 64, "more elements"),
        ("tensor type", header(n_tensors=1) + tensor + struct.pack("<IQ", 10, 0) + b"\0" * 64,
         "unsupported type 10"),
        ("k-quant row", header(n_tensors=1) + tensor + struct.pack("<IQ", 12, 0) + b"\0" * 64,
         "multiple of 256"),
        ("offset", header(n_tensors=1) + tensor + struct.pack("<IQ", T_F32, 2**60) + b"\0" * 64,
         "outside"),
        ("size", header(n_tensors=1) + gstr("x") + struct.pack("<IQQ", 2, 2**20, 2**20)
         + struct.pack("<IQ", T_F32, 0) + b"\0" * 64, "outside"),
        ("quantized row", header(n_tensors=1) + tensor + struct.pack("<IQ", T_Q4_0, 0) + b"\0" * 64,
         "multiple of 32"),
        ("alignment", header(n_kv=1) + gstr("general.alignment") + struct.pack("<II", U32, 3)
         + b"\0" * 40, "alignment"),
        ("duplicate", header(n_tensors=2) + (tensor + struct.pack("<IQ", T_F32, 0)) * 2 + b"\0" * 64,
         "twice"),
    ]
    for what, data, message in cases:
        with pytest.raises(RuntimeError, match=message):
            load_bytes(tmp_path, data)


def test_mutated_gguf_never_crashes(tmp_path):
    good = sample_file()
    rng = np.random.default_rng(11)
    errors = 0
    for trial in range(400):
        data = bytearray(good)
        for _ in range(int(rng.integers(1, 4))):
            pos = int(rng.integers(0, 200))
            data[pos] = int(rng.integers(0, 256))
        try:
            load_bytes(tmp_path, bytes(data))
        except (RuntimeError, ValueError, MemoryError):
            errors += 1
    assert errors > 0


def test_load_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        mx.load(str(tmp_path / "missing.gguf"))
    p = tmp_path / "x.gguf"
    p.write_bytes(write_gguf([], [])[0])
    with pytest.raises(ValueError, match="Unknown format"):
        mx.load(str(p), format="ggml")
