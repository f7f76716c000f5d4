"""Writes gguf_py_reference.gguf and its dequantized values with llama.cpp's gguf-py (pip install
gguf), the independent writer test_gguf.py checks mx.load against. Run in this folder."""
import numpy as np, gguf
from gguf.quants import quantize, dequantize
rng = np.random.default_rng(0)
w = gguf.GGUFWriter("gguf_py_reference.gguf", "llama")
w.add_uint32("llama.block_count", 2)
w.add_float32("eps", 1e-5)
w.add_string("general.name", "ref")
w.add_array("tokenizer.ggml.tokens", ["a", "b", "c"])
w.add_array("tokenizer.ggml.scores", [0.1, 0.2, 0.3])
w.add_bool("flag", True)
ref = {}
x = rng.standard_normal((8, 64)).astype(np.float32)
w.add_tensor("f32", x); ref["f32"] = x
w.add_tensor("f16", x.astype(np.float16)); ref["f16"] = x.astype(np.float16).astype(np.float32)
for name, qt in (("q40", gguf.GGMLQuantizationType.Q4_0), ("q41", gguf.GGMLQuantizationType.Q4_1), ("q80", gguf.GGMLQuantizationType.Q8_0)):
    try:
        data = quantize(x, qt)
    except Exception as e:
        print("skip", name, e); continue
    w.add_tensor(name + ".weight", data, raw_dtype=qt)
    ref[name] = dequantize(data, qt)
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
np.savez("gguf_py_reference.npz", **ref)
print("ok", list(ref))


# Block types that load as float16: random blocks with finite, small fp16 scales, and
# gguf-py's dequantization of them.
def random_blocks(qt, n_blocks, scale_offsets):
    block_elems, block_bytes = gguf.GGML_QUANT_SIZES[qt]
    raw = rng.integers(0, 256, (n_blocks, block_bytes), dtype=np.uint8)
    for off in scale_offsets:
        raw[:, off : off + 2] = (
            rng.uniform(0.001, 0.05, n_blocks).astype(np.float16).view(np.uint8).reshape(-1, 2)
        )
    return raw, block_elems


w = gguf.GGUFWriter("gguf_py_dequantized.gguf", "llama")
deq = {}
for name, qt, offs in (
    ("q50", gguf.GGMLQuantizationType.Q5_0, [0]),
    ("q51", gguf.GGMLQuantizationType.Q5_1, [0, 2]),
    ("q4k", gguf.GGMLQuantizationType.Q4_K, [0, 2]),
    ("q5k", gguf.GGMLQuantizationType.Q5_K, [0, 2]),
    ("q6k", gguf.GGMLQuantizationType.Q6_K, [208]),
):
    rows = 2
    raw, block_elems = random_blocks(qt, rows * 2, offs)
    raw = raw.reshape(rows, -1)
    w.add_tensor(name, raw, raw_dtype=qt)
    deq[name] = dequantize(raw, qt).reshape(rows, 2 * block_elems)
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
np.savez("gguf_py_dequantized.npz", **deq)
print("ok", list(deq))
