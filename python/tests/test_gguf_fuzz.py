"""Fuzzing the GGUF loader, as test_io_hostile.py does the npy / npz / safetensors ones: a file
with every metadata type and every tensor type the loader reads, its header fields set one by
one to hostile values, random byte changes, insertions, deletions and truncations, loaded
from memory and lazily from a path (and changed after it was opened). Every file must load
or raise a clean exception; none may crash, hang or allocate what it only claims to hold."""
import io
import struct

import numpy as np
import pytest

import mlx.core as mx

from gguf_util import (ALL_METADATA, ARR, STR, T_BF16, T_F16, T_F32, T_F64, T_I8, T_I16, T_I32,
                       T_I64, T_Q4_0, T_Q4_1, T_Q8_0, q4_0_blocks, q4_1_blocks, q8_0_blocks,
                       write_gguf)

pytestmark = pytest.mark.stress

CLEAN = (ValueError, RuntimeError, TypeError, MemoryError, IndexError, OverflowError)
STRESS_COUNTS = {}
# Block types dequantized to float16: (type, bytes per block, elements per block).
T_Q5_0, T_Q5_1, T_Q4_K, T_Q5_K, T_Q6_K = 6, 7, 12, 13, 14
OTHER_BLOCKS = [(T_Q5_0, 22, 32), (T_Q5_1, 24, 32), (T_Q4_K, 144, 256), (T_Q5_K, 176, 256),
                (T_Q6_K, 210, 256)]
# Scalar value sizes of the GGUF value types (STR and ARR excluded).
VALUE_BYTES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def count(key, n=1):
    STRESS_COUNTS[key] = STRESS_COUNTS.get(key, 0) + n


def rich_file():
    """Every metadata type and every tensor type, with the position where the tensor data
    starts."""
    rng = np.random.default_rng(3)
    f32 = rng.standard_normal((2, 8)).astype(np.float32)
    tensors = [
        ("f32", (8, 2), T_F32, f32.tobytes()),
        ("f16", (4,), T_F16, f32[0, :4].astype(np.float16).tobytes()),
        ("bf16", (3,), T_BF16, (f32[0, :3].view(np.uint32) >> 16).astype(np.uint16).tobytes()),
        ("i8", (5,), T_I8, np.arange(5, dtype=np.int8).tobytes()),
        ("i16", (2, 1), T_I16, np.arange(2, dtype=np.int16).tobytes()),
        ("i32", (3,), T_I32, np.arange(3, dtype=np.int32).tobytes()),
        ("i64", (1,), T_I64, np.arange(1, dtype=np.int64).tobytes()),
        ("f64", (2,), T_F64, f32[1, :2].astype(np.float64).tobytes()),
        ("q4_0.weight", (64, 2), T_Q4_0, q4_0_blocks(rng, 4)[0]),
        ("q4_1.weight", (32, 1), T_Q4_1, q4_1_blocks(rng, 1)[0]),
        ("q8_0.weight", (32, 2), T_Q8_0, q8_0_blocks(rng, 2)[0]),
    ]
    for t, block, elements in OTHER_BLOCKS:
        raw = rng.integers(0, 256, block, dtype=np.uint8)
        raw[:2] = np.frombuffer(np.float16(0.01).tobytes(), np.uint8)  # a finite scale
        tensors.append((f"k{t}", (elements,), t, raw.tobytes()))
    return write_gguf(ALL_METADATA, tensors)


def header_fields(data):
    """(offset, width) of every count, length, type code, dimension and offset in the header,
    found by walking the file independently of the loader."""
    fields = [(8, 8), (16, 8)]  # tensor count, key-value count
    n_tensors, n_kv = struct.unpack_from("<QQ", data, 8)
    pos = 24

    def string(pos):
        fields.append((pos, 8))
        return pos + 8 + struct.unpack_from("<Q", data, pos)[0]

    def value(pos, t):
        if t == STR:
            return string(pos)
        if t == ARR:
            fields.extend([(pos, 4), (pos + 4, 8)])
            et, n = struct.unpack_from("<IQ", data, pos)
            pos += 12
            for _ in range(n):
                pos = value(pos, et)
            return pos
        return pos + VALUE_BYTES[t]

    for _ in range(n_kv):
        pos = string(pos)
        fields.append((pos, 4))
        t = struct.unpack_from("<I", data, pos)[0]
        pos = value(pos + 4, t)
    for _ in range(n_tensors):
        pos = string(pos)
        fields.append((pos, 4))
        nd = struct.unpack_from("<I", data, pos)[0]
        fields.extend((pos + 4 + 8 * i, 8) for i in range(nd))
        pos += 4 + 8 * nd
        fields.extend([(pos, 4), (pos + 4, 8)])  # type, offset
        pos += 12
    return fields


def load_all(data, path=None):
    """Loads from memory (and lazily from `path` when given), evaluating every array; returns
    the number of clean errors."""
    errors = 0
    sources = [lambda: mx.load(io.BytesIO(data), format="gguf", return_metadata=True)]
    if path is not None:
        path.write_bytes(data)
        sources.append(lambda: mx.load(str(path), return_metadata=True))
    for load in sources:
        try:
            arrays, _ = load()
            mx.eval(list(arrays.values()))
        except CLEAN:
            errors += 1
    return errors


def test_the_rich_file_loads():
    data, _ = rich_file()
    arrays, meta = mx.load(io.BytesIO(data), format="gguf", return_metadata=True)
    assert arrays["f32"].shape == (2, 8) and arrays["q4_0.weight"].dtype == mx.uint32
    assert all(arrays[f"k{t}"].dtype == mx.float16 for t, _, _ in OTHER_BLOCKS)
    assert meta["general.architecture"] == "llama"


HOSTILE = {4: [0, 1, 13, 2**31, 2**32 - 1], 8: [0, 1, 2**32, 2**62, 2**63, 2**64 - 1]}


def test_every_header_field_set_to_hostile_values(tmp_path):
    good, _ = rich_file()
    fields = header_fields(good)
    assert len(fields) > 100
    mx.synchronize()
    mx.reset_peak_memory()
    base = mx.get_active_memory()
    errors = loads = 0
    for pos, width in fields:
        for v in HOSTILE[width]:
            bad = good[:pos] + v.to_bytes(width, "little") + good[pos + width:]
            if bad != good:
                errors += load_all(bad, tmp_path / "f.gguf")
                loads += 2
    count("gguf header fields set to hostile values", loads)
    assert errors > loads // 2
    # No declared size was believed: nothing near the claimed gigabytes was ever allocated.
    assert mx.get_peak_memory() - base < 64 << 20


def test_random_mutations(tmp_path):
    good, data_start = rich_file()
    rng = np.random.default_rng(21)
    errors = 0
    trials = 1200
    for trial in range(trials):
        bad = bytearray(good)
        kind = trial % 4
        if kind == 0:  # byte changes, mostly in the header
            for _ in range(int(rng.integers(1, 6))):
                end = data_start if rng.random() < 0.8 else len(bad)
                bad[int(rng.integers(0, end))] = int(rng.integers(0, 256))
        elif kind == 1:  # bytes inserted: every later field shifts
            pos = int(rng.integers(24, data_start))
            bad[pos:pos] = rng.integers(0, 256, int(rng.integers(1, 9)), dtype=np.uint8).tobytes()
        elif kind == 2:  # bytes deleted
            pos = int(rng.integers(24, data_start))
            del bad[pos:pos + int(rng.integers(1, 9))]
        else:  # truncated, then a byte changed
            bad = bad[:int(rng.integers(0, len(bad)))]
            if bad:
                bad[int(rng.integers(0, len(bad)))] ^= 0xFF
        errors += load_all(bytes(bad), tmp_path / "m.gguf")
    count("gguf files mutated (changes, insertions, deletions, truncations)", 2 * trials)
    assert errors > trials // 2


def test_file_changed_after_a_lazy_load(tmp_path):
    good, data_start = rich_file()
    path = tmp_path / "c.gguf"
    for change in ("truncate", "rewrite"):
        path.write_bytes(good)
        arrays = mx.load(str(path))
        if change == "truncate":
            path.write_bytes(good[:data_start + 8])
        else:
            path.write_bytes(good[:-1] + bytes([good[-1] ^ 1]) + b"\0" * 64)
        with pytest.raises(RuntimeError):
            mx.eval(list(arrays.values()))
