"""Hostile file headers for the loaders (issue 12): huge declared shapes, negative or
overlapping offsets, duplicate keys, wrong dtypes, deep JSON, zip bombs and random byte
mutations of valid files. Every file must load correctly or raise a clean exception, never
crash, hang or allocate what the file only claims to hold."""
import io
import json
import struct
import zipfile
import zlib

import numpy as np
import pytest

import mlx.core as mx

pytestmark = pytest.mark.stress

CLEAN = (ValueError, RuntimeError, TypeError, MemoryError, IndexError, OverflowError)
STRESS_COUNTS = {}


def count(key, n=1):
    STRESS_COUNTS[key] = STRESS_COUNTS.get(key, 0) + n


def load_bytes(data, fmt):
    """Loads from memory; returns the dict/array or the exception type raised."""
    try:
        out = mx.load(io.BytesIO(data), format=fmt)
    except CLEAN as e:
        return type(e)
    arrays = out.values() if isinstance(out, dict) else [out]
    mx.eval(list(arrays))
    return out


def npy(header, payload=b""):
    h = header.encode("latin1")
    pad = 64 - (10 + len(h) + 1) % 64
    h = h + b" " * pad + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h + payload


@pytest.mark.parametrize(
    "header,payload",
    [
        ("{'descr': '<f4', 'fortran_order': False, 'shape': (2147483647, 2147483647), }", b"\0" * 16),
        ("{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000000,), }", b"\0" * 16),
        ("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", b"\0" * 16),
        ("{'descr': '<f4', 'fortran_order': False, 'shape': (-4, -4), }", b"\0" * 64),
        ("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,), }", b""),
        ("{'descr': '<f4', 'fortran_order': False, 'shape': (" + "1, " * 200 + "), }", b"\0" * 4),
        ("{'descr': '<f3', 'fortran_order': False, 'shape': (2,), }", b"\0" * 8),
        ("{'descr': '<U10', 'fortran_order': False, 'shape': (2,), }", b"\0" * 80),
        ("{'descr': '|O', 'fortran_order': False, 'shape': (2,), }", b"\0" * 16),
        ("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", b"\0" * 8),
        ("{'descr': '<f4', 'fortran_order': 'maybe', 'shape': (2,), }", b"\0" * 8),
        ("{'descr': '<f4', 'descr': '<i8', 'fortran_order': False, 'shape': (2,), }", b"\0" * 16),
        ("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'shape': (3,), }", b"\0" * 12),
        ("{'descr': '<f4', 'fortran_order': False, }", b"\0" * 8),
        ("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1, }", b"\0" * 8),
        ("{'descr': '<f4', 'fortran_order': False, 'shape': (2, }", b"\0" * 8),
        ("{" * 10000, b""),
        ("", b""),
        ("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", b"\0" * 3),
    ],
)
def test_hostile_npy_headers(header, payload):
    out = load_bytes(npy(header, payload), "npy")
    if not isinstance(out, type):
        # accepted: then it must hold exactly what the payload holds
        assert out.nbytes <= len(payload)
    count("hostile npy headers", 1)


def test_npy_header_length_past_the_end():
    data = b"\x93NUMPY\x01\x00" + struct.pack("<H", 0xFFFF) + b"{'descr'"
    assert load_bytes(data, "npy") in CLEAN
    data = b"\x93NUMPY\x02\x00" + struct.pack("<I", 0xFFFFFFFF) + b"{'descr'"
    assert load_bytes(data, "npy") in CLEAN
    count("hostile npy headers", 2)


def safetensors(header, payload=b"", raw_len=None):
    h = header if isinstance(header, bytes) else json.dumps(header).encode()
    n = len(h) if raw_len is None else raw_len
    return struct.pack("<Q", n) + h + payload


@pytest.mark.parametrize(
    "header,payload",
    [
        ({"x": {"dtype": "F32", "shape": [2147483647, 2147483647], "data_offsets": [0, 8]}}, 8),
        ({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 1000000000000]}}, 8),
        ({"x": {"dtype": "F32", "shape": [2], "data_offsets": [-8, 0]}}, 8),
        ({"x": {"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}}, 8),
        ({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
          "y": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, 12),  # overlapping
        ({"x": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}}, 8),
        ({"x": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, 8),
        ({"x": {"dtype": "F128", "shape": [1], "data_offsets": [0, 16]}}, 16),
        ({"x": {"dtype": "STRING", "shape": [1], "data_offsets": [0, 8]}}, 8),
        ({"x": {"dtype": 7, "shape": [2], "data_offsets": [0, 8]}}, 8),
        ({"x": {"dtype": "F32", "shape": "2", "data_offsets": [0, 8]}}, 8),
        ({"x": {"dtype": "F32", "shape": [2.5], "data_offsets": [0, 8]}}, 8),
        ({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8, 16]}}, 16),
        ({"x": {"dtype": "F32", "shape": [1] * 1000, "data_offsets": [0, 4]}}, 4),
        ({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 18446744073709551615]}}, 8),
        ({"x": [1, 2]}, 0),
        ({"__metadata__": {"k": 5}}, 0),
        ({"__metadata__": "text"}, 0),
        ([1, 2, 3], 0),
        ("just a string", 0),
    ],
)
def test_hostile_safetensors_headers(header, payload):
    out = load_bytes(safetensors(header, b"\0" * payload), "safetensors")
    if not isinstance(out, type):
        assert sum(a.nbytes for a in out.values()) <= payload or len(out) == 2  # overlap
    count("hostile safetensors headers", 1)


def test_safetensors_raw_headers():
    cases = [
        safetensors(b"{}", raw_len=2**63),
        safetensors(b"{}", raw_len=2**64 - 1),
        safetensors(b"{}", raw_len=0),
        safetensors(b"[" * 100000 + b"]" * 100000),  # deep nesting: bounded recursion
        safetensors(b'{"x": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, '
                    b'"x": {"dtype": "I32", "shape": [1], "data_offsets": [0, 4]}}',
                    b"\1\0\0\0"),  # duplicate key
        safetensors(b'{"x": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}', b"\0" * 4),
        safetensors(b'{"x\xff\xfe": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}',
                    b"\0" * 4),
        safetensors(b'{"x": {"dtype": "F32", "shape": [1e400], "data_offsets": [0, 4]}}', b""),
        safetensors(b'{"x": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}\0\0', b"\0" * 4),
    ]
    for data in cases:
        load_bytes(data, "safetensors")
    count("hostile safetensors headers", len(cases))


def npz_bytes(members, compression=zipfile.ZIP_STORED):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as z:
        for name, data in members:
            z.writestr(name, data)
    return buf.getvalue()


def valid_npy(arr):
    b = io.BytesIO()
    np.save(b, arr)
    return b.getvalue()


def test_npz_duplicate_names_and_bad_members():
    a = valid_npy(np.arange(4, dtype=np.float32))
    b = valid_npy(np.arange(3, dtype=np.int32))
    with pytest.warns(UserWarning):
        dup = npz_bytes([("x.npy", a), ("x.npy", b)])
    out = load_bytes(dup, "npz")
    if not isinstance(out, type):
        assert list(out) == ["x"] and out["x"].size in (3, 4)
    for members in ([("x.npy", b"not npy")], [("x.npy", a[:20])], [("../../etc/x.npy", a)],
                    [("x.npy", a), ("y.npy", npy("{'descr': '<f4'"))]):
        load_bytes(npz_bytes(members), "npz")
    count("hostile npz archives", 5)


def _patch_sizes(data, usize):
    """Writes `usize` as the uncompressed size in the local and central headers."""
    data = bytearray(data)
    lh = data.find(b"PK\x03\x04")
    data[lh + 22:lh + 26] = struct.pack("<I", usize)
    cd = data.find(b"PK\x01\x02")
    data[cd + 24:cd + 28] = struct.pack("<I", usize)
    return bytes(data)


def test_zip_bombs():
    # 64 MB of zeros in 64 KB: the member says it holds a small array.
    header = npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }")
    bomb = npz_bytes([("x.npy", header + b"\0" * (64 << 20))], zipfile.ZIP_DEFLATED)
    assert len(bomb) < 1 << 20
    for usize in (len(header) + 16, 2**32 - 2, 0):
        load_bytes(_patch_sizes(bomb, usize), "npz")
    # A member claiming 4 GB from a few bytes.
    tiny = npz_bytes([("x.npy", valid_npy(np.zeros(4, np.float32)))], zipfile.ZIP_DEFLATED)
    assert load_bytes(_patch_sizes(tiny, 2**32 - 1), "npz") in CLEAN
    # The npy inside declares a huge shape and the stream inflates to match only in part.
    big = npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1073741824,), }")
    claim = npz_bytes([("x.npy", big + b"\0" * (8 << 20))], zipfile.ZIP_DEFLATED)
    assert load_bytes(claim, "npz") in CLEAN
    count("zip bombs", 5)


def test_random_mutations_of_valid_files():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    sources = {"npy": valid_npy(x)}
    b = io.BytesIO()
    np.savez(b, x=x, y=x[0])
    sources["npz"] = b.getvalue()
    b = io.BytesIO()
    np.savez_compressed(b, x=x)
    sources["npz_c"] = b.getvalue()
    sources["safetensors"] = safetensors(
        {"x": {"dtype": "F32", "shape": [3, 4], "data_offsets": [0, 48]},
         "__metadata__": {"k": "v"}}, x.tobytes())
    n = 0
    for kind, good in sources.items():
        fmt = kind.split("_")[0]
        for _ in range(150):
            bad = bytearray(good)
            for _ in range(int(rng.integers(1, 6))):
                pos = int(rng.integers(0, len(bad)))
                bad[pos] = int(rng.integers(0, 256))
            load_bytes(bytes(bad), fmt)
            n += 1
    count("files mutated (random bytes)", n)
