"""Writes GGUF files byte by byte (independently of the loader) for the GGUF tests."""
import struct

import numpy as np

# GGUF value types.
U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)
SCALAR_FMT = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f",
              BOOL: "<?", U64: "<Q", I64: "<q", F64: "<d"}
NP_OF = {U8: np.uint8, I8: np.int8, U16: np.uint16, I16: np.int16, U32: np.uint32,
         I32: np.int32, F32: np.float32, BOOL: np.bool_, U64: np.uint64, I64: np.int64,
         F64: np.float64}
# ggml tensor types.
T_F32, T_F16, T_Q4_0, T_Q4_1, T_Q8_0 = 0, 1, 2, 3, 8
T_I8, T_I16, T_I32, T_I64, T_F64, T_BF16 = 24, 25, 26, 27, 28, 30


def gstr(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def gvalue(t, v):
    if t == STR:
        return gstr(v)
    if t == ARR:
        et, items = v
        out = struct.pack("<IQ", et, len(items))
        return out + b"".join(gvalue(et, x) for x in items)
    return struct.pack(SCALAR_FMT[t], v)


def write_gguf(metadata, tensors, alignment=32, version=3):
    """metadata: [(key, type, value)]; tensors: [(name, ne (innermost first), type, bytes)]."""
    out = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(metadata))
    for key, t, v in metadata:
        out += gstr(key) + struct.pack("<I", t) + gvalue(t, v)
    offset, blobs = 0, []
    for name, ne, t, data in tensors:
        out += gstr(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne)
        out += struct.pack("<IQ", t, offset)
        blobs.append((offset, data))
        offset += (len(data) + alignment - 1) // alignment * alignment
    out += b"\0" * ((alignment - len(out) % alignment) % alignment)
    start = len(out)
    # No padding after the last tensor: then every truncation cuts declared data.
    end = blobs[-1][0] + len(blobs[-1][1]) if blobs else 0
    body = bytearray(end)
    for off, data in blobs:
        body[off : off + len(data)] = data
    return out + bytes(body), start


def q4_0_blocks(rng, n_blocks):
    d = rng.uniform(0.01, 0.1, n_blocks).astype(np.float16)
    q = rng.integers(0, 16, (n_blocks, 32)).astype(np.uint8)
    raw = b"".join(d[i].tobytes() + bytes(q[i, :16] | (q[i, 16:] << 4)) for i in range(n_blocks))
    values = d.astype(np.float32)[:, None] * (q.astype(np.float32) - 8)
    return raw, values


def q4_1_blocks(rng, n_blocks):
    d = rng.uniform(0.01, 0.1, n_blocks).astype(np.float16)
    m = rng.uniform(-1, 1, n_blocks).astype(np.float16)
    q = rng.integers(0, 16, (n_blocks, 32)).astype(np.uint8)
    raw = b"".join(
        d[i].tobytes() + m[i].tobytes() + bytes(q[i, :16] | (q[i, 16:] << 4)) for i in range(n_blocks)
    )
    values = d.astype(np.float32)[:, None] * q + m.astype(np.float32)[:, None]
    return raw, values


def q8_0_blocks(rng, n_blocks):
    d = rng.uniform(0.001, 0.01, n_blocks).astype(np.float16)
    q = rng.integers(-128, 128, (n_blocks, 32)).astype(np.int8)
    raw = b"".join(d[i].tobytes() + q[i].tobytes() for i in range(n_blocks))
    values = d.astype(np.float32)[:, None] * q.astype(np.float32)
    return raw, values


# One key of every value type, arrays included.
ALL_METADATA = [
    ("general.architecture", STR, "llama"),
    ("u8", U8, 200), ("i8", I8, -100), ("u16", U16, 60000), ("i16", I16, -30000),
    ("u32", U32, 4_000_000_000), ("i32", I32, -2_000_000_000), ("f32", F32, 1.5),
    ("flag", BOOL, True), ("u64", U64, 2**63 + 5), ("i64", I64, -(2**62)), ("f64", F64, 0.25),
    ("tokens", ARR, (STR, ["a", "bc", ""])),
    ("scores", ARR, (F32, [0.5, -1.0])),
    ("ids", ARR, (I32, [1, 2, 3])),
    ("mask", ARR, (BOOL, [True, False])),
]
