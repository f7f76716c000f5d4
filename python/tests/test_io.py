"""mx.save / mx.savez / mx.savez_compressed / mx.save_safetensors / mx.load, checked against
NumPy's own reader and writer."""
import io
import json
import pathlib
import struct
import zipfile

import numpy as np
import pytest

import mlx.core as mx

NP_DTYPES = [
    np.bool_,
    np.uint8,
    np.uint16,
    np.uint32,
    np.uint64,
    np.int8,
    np.int16,
    np.int32,
    np.int64,
    np.float16,
    np.float32,
    np.float64,
    np.complex64,
]
SHAPES = [(), (0,), (1,), (7,), (2, 3, 4), (3, 0, 2)]


def sample(rng, shape, dt):
    x = rng.standard_normal(shape) * 50
    if dt == np.complex64:
        x = x + 1j * rng.standard_normal(shape)
    elif dt == np.bool_:
        x = x > 0
    elif np.issubdtype(dt, np.unsignedinteger):
        x = np.abs(x)
    return np.asarray(x).astype(dt)


def keep(x):
    """mx.array of NumPy data with its dtype (mx.array alone turns float64 into float32)."""
    x = np.asarray(x)
    return mx.array(x, mx.float64) if x.dtype == np.float64 else mx.array(x)


def check_same(mx_array, expected):
    got = np.array(mx_array)
    assert got.dtype == expected.dtype
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


def bf16_bits_to_float32(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


@pytest.mark.parametrize("dt", NP_DTYPES, ids=lambda d: np.dtype(d).name)
def test_npy_round_trip_with_numpy(tmp_path, rng, dt):
    for i, shape in enumerate(SHAPES):
        x = sample(rng, shape, dt)
        ours = tmp_path / f"ours_{i}.npy"
        mx.save(str(ours), keep(x))
        check_same(mx.load(str(ours)), x)
        loaded = np.load(ours)
        assert loaded.dtype == x.dtype
        np.testing.assert_array_equal(loaded, x)
        theirs = tmp_path / f"theirs_{i}.npy"
        np.save(theirs, x)
        check_same(mx.load(str(theirs)), x)


def test_npy_fortran_order_and_byte_orders(tmp_path, rng):
    x = rng.standard_normal((4, 5, 3)).astype(np.float32)
    f = np.asfortranarray(x)
    np.save(tmp_path / "f.npy", f)
    check_same(mx.load(str(tmp_path / "f.npy")), x)
    # A transposed MLX array is written in Fortran order, as NumPy does for such arrays.
    a = keep(x).T
    mx.save(str(tmp_path / "t.npy"), a)
    loaded = np.load(tmp_path / "t.npy")
    assert loaded.flags.f_contiguous and not loaded.flags.c_contiguous
    np.testing.assert_array_equal(loaded, x.T)
    check_same(mx.load(str(tmp_path / "t.npy")), x.T)
    # Big-endian files written by NumPy.
    for dt in (">i2", ">u4", ">i8", ">f4", ">f8", ">c8", ">f2"):
        y = sample(rng, (3, 4), np.dtype(dt).newbyteorder("=").type).astype(dt)
        np.save(tmp_path / "be.npy", y)
        check_same(mx.load(str(tmp_path / "be.npy")), y.astype(np.dtype(dt).newbyteorder("<")))


def test_npy_non_contiguous_numpy_input(tmp_path, rng):
    base = rng.standard_normal((6, 8)).astype(np.float32)
    for view in (base[::2, ::-3], base.T, base[1:, 2:5]):
        mx.save(str(tmp_path / "v.npy"), keep(view))
        np.testing.assert_array_equal(np.load(tmp_path / "v.npy"), view)


def test_npy_header_versions_2_and_3(tmp_path, rng):
    x = rng.standard_normal((3, 2)).astype(np.float64)
    for version in ((2, 0), (3, 0)):
        buf = io.BytesIO()
        np.lib.format.write_array(buf, x, version=version)
        path = tmp_path / f"v{version[0]}.npy"
        path.write_bytes(buf.getvalue())
        check_same(mx.load(str(path)), x)


def test_bfloat16_is_stored_as_two_byte_records(tmp_path, rng):
    x = rng.standard_normal((5, 3)).astype(np.float32)
    a = mx.array(x).astype(mx.bfloat16)
    mx.save(str(tmp_path / "b.npy"), a)
    b = mx.load(str(tmp_path / "b.npy"))
    assert b.dtype == mx.bfloat16
    np.testing.assert_array_equal(np.array(b), np.array(a))
    raw = np.load(tmp_path / "b.npy")
    assert raw.dtype == np.dtype("V2") and raw.shape == (5, 3)
    bits = np.frombuffer(raw.tobytes(), dtype="<u2").reshape(5, 3)
    np.testing.assert_array_equal(bf16_bits_to_float32(bits), np.array(a))


def test_npz_round_trip_with_numpy(tmp_path, rng):
    arrays = {np.dtype(dt).name: sample(rng, (3, 4), dt) for dt in NP_DTYPES}
    arrays["empty"] = np.zeros((0, 3), np.float32)
    arrays["scalar"] = np.array(3.5, np.float64)
    pos = [sample(rng, (5,), np.int32), sample(rng, (), np.float16)]
    for save, compress_type in (
        (mx.savez, zipfile.ZIP_STORED),
        (mx.savez_compressed, zipfile.ZIP_DEFLATED),
    ):
        path = tmp_path / f"{save.__name__}.npz"
        save(str(path), *[keep(p) for p in pos], **{k: keep(v) for k, v in arrays.items()})
        with zipfile.ZipFile(path) as z:
            assert z.testzip() is None
            assert all(info.compress_type == compress_type for info in z.infolist())
        with np.load(path) as loaded:
            assert sorted(loaded.files) == sorted(["arr_0", "arr_1", *arrays])
            np.testing.assert_array_equal(loaded["arr_0"], pos[0])
            np.testing.assert_array_equal(loaded["arr_1"], pos[1])
            for k, v in arrays.items():
                assert loaded[k].dtype == v.dtype
                np.testing.assert_array_equal(loaded[k], v)
        ours = mx.load(str(path))
        assert isinstance(ours, dict)
        check_same(ours["arr_0"], pos[0])
        for k, v in arrays.items():
            check_same(ours[k], v)

    for np_save in (np.savez, np.savez_compressed):
        path = tmp_path / f"np_{np_save.__name__}.npz"
        np_save(path, *pos, f=np.asfortranarray(arrays["float32"]), **arrays)
        ours = mx.load(str(path))
        assert sorted(ours) == sorted(["arr_0", "arr_1", "f", *arrays])
        check_same(ours["f"], arrays["float32"])
        for k, v in arrays.items():
            check_same(ours[k], v)


def test_npz_compression_shrinks_zeros(tmp_path):
    z = mx.zeros((1 << 16,))
    mx.savez(str(tmp_path / "u"), z=z)
    mx.savez_compressed(str(tmp_path / "c"), z=z)
    assert (tmp_path / "u.npz").stat().st_size > (1 << 18)
    assert (tmp_path / "c.npz").stat().st_size < 4096
    check_same(mx.load(str(tmp_path / "c.npz"))["z"], np.zeros(1 << 16, np.float32))


def test_npz_unicode_names(tmp_path):
    names = {"caf\u00e9": mx.array([1.0]), "\u6570\u636e/x y": mx.array([2])}
    mx.savez(str(tmp_path / "u.npz"), **names)
    with np.load(tmp_path / "u.npz") as loaded:
        assert sorted(loaded.files) == sorted(names)
    np.savez(tmp_path / "n.npz", **{k: np.array(v) for k, v in names.items()})
    assert sorted(mx.load(str(tmp_path / "n.npz"))) == sorted(names)


def test_npz_name_conflict(tmp_path):
    with pytest.raises(ValueError):
        mx.savez(str(tmp_path / "x.npz"), mx.zeros((1,)), arr_0=mx.zeros((2,)))


def test_safetensors_round_trip_and_format(tmp_path, rng):
    arrays = {np.dtype(dt).name: sample(rng, (2, 3), dt) for dt in NP_DTYPES}
    arrays["zero_size"] = np.zeros((0, 4), np.int8)
    arrays["scalar"] = np.array(-2, np.int64)
    metadata = {"format": "mlx", "note": 'with "quotes" and\nnewlines \u00e9'}
    path = tmp_path / "m.safetensors"
    mx_arrays = {k: keep(v) for k, v in arrays.items()}
    mx_arrays["bf16"] = mx.array(arrays["float32"]).astype(mx.bfloat16)
    mx_arrays["transposed"] = keep(arrays["float64"]).T
    mx.save_safetensors(str(path), mx_arrays, metadata=metadata)

    loaded, meta = mx.load(str(path), return_metadata=True)
    assert meta == metadata
    assert sorted(loaded) == sorted(mx_arrays)
    for k, v in arrays.items():
        check_same(loaded[k], v)
    check_same(loaded["transposed"], arrays["float64"].T)
    assert loaded["bf16"].dtype == mx.bfloat16
    np.testing.assert_array_equal(np.array(loaded["bf16"]), np.array(mx_arrays["bf16"]))
    assert sorted(mx.load(str(path))) == sorted(mx_arrays)

    # Check the layout independently: header length, JSON, offsets, little-endian data.
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    assert (8 + n) % 8 == 0
    header = json.loads(raw[8 : 8 + n])
    assert header["__metadata__"] == metadata
    names = {"float32": "F32", "complex64": "C64", "bool": "BOOL", "uint16": "U16"}
    for k, code in names.items():
        entry = header[k]
        assert entry["dtype"] == code and entry["shape"] == list(arrays[k].shape)
        begin, end = entry["data_offsets"]
        data = raw[8 + n + begin : 8 + n + end]
        stored = np.frombuffer(data, arrays[k].dtype).reshape(entry["shape"])
        np.testing.assert_array_equal(stored, arrays[k])
    assert header["bf16"]["dtype"] == "BF16"
    ends = sorted(tuple(e["data_offsets"]) for k, e in header.items() if k != "__metadata__")
    assert ends[-1][1] == len(raw) - 8 - n


def test_safetensors_hand_written(tmp_path):
    header = json.dumps(
        {
            "w": {"dtype": "F16", "shape": [2], "data_offsets": [0, 4]},
            "__metadata__": {"a": "b"},
        }
    ).encode()
    data = np.array([1.5, -2.0], np.float16).tobytes()
    path = tmp_path / "h.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header + data)
    arrays, meta = mx.load(str(path), return_metadata=True)
    check_same(arrays["w"], np.array([1.5, -2.0], np.float16))
    assert meta == {"a": "b"}
    assert mx.load(str(path), format="safetensors")["w"].shape == (2,)


def test_file_like_objects(tmp_path, rng):
    x = sample(rng, (3, 4), np.float32)
    y = sample(rng, (5,), np.int16)
    buf = io.BytesIO()
    mx.save(buf, keep(x))
    mx.save(buf, keep(y))
    buf.seek(0)
    # Several arrays in one stream load one after another, as with NumPy.
    check_same(mx.load(buf, format="npy"), x)
    check_same(mx.load(buf, format="npy"), y)
    buf.seek(0)
    np.testing.assert_array_equal(np.load(buf), x)
    np.testing.assert_array_equal(np.load(buf), y)

    buf = io.BytesIO()
    np.save(buf, x)
    buf.seek(0)
    check_same(mx.load(buf, format="npy"), x)

    for save in (mx.savez, mx.savez_compressed):
        buf = io.BytesIO()
        save(buf, a=keep(x), b=keep(y))
        buf.seek(0)
        loaded = mx.load(buf, format="npz")
        check_same(loaded["a"], x)
        buf.seek(0)
        np.testing.assert_array_equal(np.load(buf)["b"], y)

    buf = io.BytesIO()
    mx.save_safetensors(buf, {"x": keep(x)}, metadata={"k": "v"})
    buf.seek(0)
    arrays, meta = mx.load(buf, format="safetensors", return_metadata=True)
    check_same(arrays["x"], x)
    assert meta == {"k": "v"}

    # Real files: the format comes from the file's name.
    with open(tmp_path / "f.npy", "wb") as f:
        mx.save(f, keep(x))
    with open(tmp_path / "f.npy", "rb") as f:
        check_same(mx.load(f), x)
    # Raw (unbuffered) files, which may read and write in parts.
    with open(tmp_path / "raw.npz", "wb", buffering=0) as f:
        mx.savez(f, x=keep(x))
    with open(tmp_path / "raw.npz", "rb", buffering=0) as f:
        check_same(mx.load(f)["x"], x)


def test_paths_and_extensions(tmp_path):
    mx.save(tmp_path / "a", mx.array([1, 2]))
    mx.savez(tmp_path / "b", x=mx.array([1]))
    mx.savez_compressed(str(tmp_path / "c.npz"), x=mx.array([1]))
    mx.save_safetensors(tmp_path / "d", {"x": mx.array([1])})
    for name in ("a.npy", "b.npz", "c.npz", "d.safetensors"):
        assert (tmp_path / name).exists(), name
    check_same(mx.load(pathlib.Path(tmp_path / "a.npy")), np.array([1, 2], np.int32))
    check_same(mx.load(tmp_path / "a.npy", stream=mx.cpu), np.array([1, 2], np.int32))
    # An explicit format overrides the extension.
    (tmp_path / "a.npy").rename(tmp_path / "a.bin")
    check_same(mx.load(str(tmp_path / "a.bin"), format="npy"), np.array([1, 2], np.int32))


def test_saves_evaluate_lazy_and_converted_inputs(tmp_path):
    a = mx.array([1.0, 2.0, 3.0]) * 2
    mx.save(str(tmp_path / "lazy.npy"), a)
    np.testing.assert_array_equal(np.load(tmp_path / "lazy.npy"), [2.0, 4.0, 6.0])
    mx.savez(str(tmp_path / "conv.npz"), np.arange(3), x=[1.5, 2.5])
    loaded = mx.load(str(tmp_path / "conv.npz"))
    np.testing.assert_array_equal(np.array(loaded["arr_0"]), np.arange(3))
    check_same(loaded["x"], np.array([1.5, 2.5], np.float32))


def test_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        mx.load(str(tmp_path / "missing.npy"))
    with pytest.raises(FileNotFoundError):
        mx.load(tmp_path / "missing.safetensors")
    with pytest.raises(ValueError, match="extension"):
        mx.load(str(tmp_path / "noextension"))
    with pytest.raises(ValueError, match="Unknown format"):
        mx.load(str(tmp_path / "x.txt"))
    with pytest.raises(FileNotFoundError):
        mx.load(str(tmp_path / "x.gguf"))
    mx.save(str(tmp_path / "a.npy"), mx.array([1]))
    with pytest.raises(ValueError, match="etadata"):
        mx.load(str(tmp_path / "a.npy"), return_metadata=True)
    with pytest.raises(ValueError):
        mx.load(io.BytesIO(b"\x93NUMPY"))  # no name, no format
    with pytest.raises(TypeError):
        mx.load(12, format="npy")
    with pytest.raises(TypeError):
        mx.save(object(), mx.array([1]))
    with pytest.raises(TypeError):
        mx.save_safetensors(str(tmp_path / "m"), {"x": mx.array([1])}, metadata={"k": 1})
    with pytest.raises(ValueError):
        mx.save_safetensors(str(tmp_path / "m"), {"__metadata__": mx.array([1])})
    with pytest.raises(RuntimeError, match="Failed to open"):
        mx.save(str(tmp_path / "no" / "dir" / "x.npy"), mx.array([1]))


def test_corrupt_files_raise(tmp_path, rng):
    x = sample(rng, (3, 5), np.float32)
    for fmt, write in (
        ("npy", lambda p: np.save(p, x)),
        ("npz", lambda p: np.savez(p, x=x)),
        ("npz", lambda p: np.savez_compressed(p, x=x)),
        ("safetensors", lambda p: mx.save_safetensors(str(p), {"x": mx.array(x)})),
    ):
        path = tmp_path / f"good.{fmt}"
        write(path)
        good = path.read_bytes()
        for n in range(0, len(good), 7):
            bad = tmp_path / f"bad.{fmt}"
            bad.write_bytes(good[:n])
            with pytest.raises(RuntimeError, match=r"Invalid \.%s file" % fmt):
                mx.load(str(bad))
            with pytest.raises(RuntimeError):
                mx.load(io.BytesIO(good[:n]), format=fmt)
    with pytest.raises(RuntimeError, match="unsupported dtype"):
        buf = io.BytesIO()
        np.save(buf, np.zeros(3, np.complex128))
        mx.load(io.BytesIO(buf.getvalue()), format="npy")
