"""mx.export_function / mx.import_function / mx.exporter / mx.export_to_dot and
nn.Module.export: round trips in this process and in a fresh one, input conventions, several
traces, shapeless traces, transforms of imported functions, and hostile files."""
import io
import os
import struct
import subprocess
import sys

import numpy as np
import pytest

import mlx.core as mx
import mlx.nn as nn

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(mx.__file__)))


def run_fresh(code):
    """Runs `code` in a new interpreter that imports this mlx; returns its stdout."""
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_basic_round_trip(tmp_path):
    path = str(tmp_path / "add.mlxfn")

    def fun(x, y):
        return x + y

    mx.export_function(path, fun, mx.array(1.0), mx.array(1.0))
    add = mx.import_function(path)
    out = add(mx.array(1.0), mx.array(2.0))
    assert isinstance(out, tuple) and len(out) == 1
    assert out[0].item() == 3.0
    (out,) = add(mx.array(1.0), mx.array(3.0))
    assert out.item() == 4.0
    with pytest.raises(ValueError, match="No exported trace"):
        add(mx.array(1), mx.array(3.0))
    with pytest.raises(ValueError, match="No exported trace"):
        add(mx.array([1.0, 2.0]), mx.array(3.0))


def test_fresh_process_computes_the_same(tmp_path):
    path = str(tmp_path / "fun.mlxfn")
    rng = np.random.default_rng(0)
    w = mx.array(rng.standard_normal((8, 5)).astype(np.float32))
    b = mx.array(rng.standard_normal((5,)).astype(np.float32))

    def fun(x, scale):
        h = mx.maximum(x @ w + b, 0.0)
        return mx.softmax(h * scale, axis=-1), mx.sum(h, axis=0)

    x = mx.array(rng.standard_normal((3, 8)).astype(np.float32))
    scale = mx.array(0.5)
    mx.export_function(path, fun, x, scale=scale)
    expected = [np.array(o) for o in fun(x, scale)]
    np.save(tmp_path / "x.npy", np.array(x))
    code = f"""
import numpy as np, mlx.core as mx
f = mx.import_function({path!r})
a, b = f(mx.array(np.load({str(tmp_path / 'x.npy')!r})), scale=mx.array(0.5))
np.save({str(tmp_path / 'a.npy')!r}, np.array(a)); np.save({str(tmp_path / 'b.npy')!r}, np.array(b))
"""
    run_fresh(code)
    np.testing.assert_allclose(np.load(tmp_path / "a.npy"), expected[0], rtol=1e-6)
    np.testing.assert_allclose(np.load(tmp_path / "b.npy"), expected[1], rtol=1e-6)


def test_input_conventions(tmp_path):
    path = str(tmp_path / "f.mlxfn")

    def fun(x, y, z):
        return x * y - z

    x, y, z = mx.array([1.0, 2.0]), mx.array([3.0, 4.0]), mx.array([0.5, 0.5])
    mx.export_function(path, fun, (x, y), {"z": z})
    f = mx.import_function(path)
    expected = np.array(fun(x, y, z))
    for out in (f(x, y, z=z), f((x, y), {"z": z}), f((x, y), z=z)):
        np.testing.assert_array_equal(np.array(out[0]), expected)
    with pytest.raises(ValueError):
        f(x, y, z)  # z was a keyword
    with pytest.raises(ValueError):
        f(x, y, w=z)
    # Only keyword inputs.
    mx.export_function(path, lambda a, b: a - b, a=x, b=y)
    g = mx.import_function(path)
    np.testing.assert_array_equal(np.array(g(b=y, a=x)[0]), np.array(x - y))
    with pytest.raises(ValueError, match="Inputs"):
        mx.export_function(path, fun, x, "not an array")


def test_metadata_and_return_metadata(tmp_path):
    path = str(tmp_path / "m.mlxfn")
    mx.export_function(path, lambda x: x * 2, mx.array([1]), metadata="version 7")
    f, meta = mx.import_function(path, return_metadata=True)
    assert meta == "version 7"
    assert f(mx.array([4]))[0].tolist() == [8]
    mx.export_function(path, lambda x: x * 2, mx.array([1]))
    assert mx.import_function(path, return_metadata=True)[1] == ""


def test_exporter_multiple_traces(tmp_path):
    path = str(tmp_path / "sum.mlxfn")

    def fun(*args):
        return sum(args)

    with mx.exporter(path, fun) as exporter:
        exporter(mx.array(1))
        exporter(mx.array(1), mx.array(2))
        exporter(mx.array(1), mx.array(2), mx.array(3))
    f = mx.import_function(path)
    assert f(mx.array(5))[0].item() == 5
    assert f(mx.array(5), mx.array(6))[0].item() == 11
    assert f(mx.array(5), mx.array(6), mx.array(7))[0].item() == 18
    with pytest.raises(ValueError):
        f(mx.array(5), mx.array(6), mx.array(7), mx.array(8))
    assert isinstance(exporter, mx.FunctionExporter)
    e = mx.exporter(str(tmp_path / "two.mlxfn"), lambda x: x + 1)
    e(mx.array([1.0]))
    e(mx.array([[1.0]]))
    e.close()
    g = mx.import_function(str(tmp_path / "two.mlxfn"))
    assert g(mx.array([[2.0]]))[0].tolist() == [[3.0]]
    with pytest.raises(ValueError, match="closed"):
        e(mx.array([1, 2]))


def test_shapeless(tmp_path):
    path = str(tmp_path / "s.mlxfn")

    def fun(x, y):
        return mx.exp(x) * y + mx.softmax(x, axis=-1) + mx.sum(x, axis=-1, keepdims=True)

    mx.export_function(path, fun, mx.array([1.0, 2.0]), mx.array([2.0, 3.0]), shapeless=True)
    f = mx.import_function(path)
    for n in (1, 3, 8):
        x = mx.arange(n).astype(mx.float32)
        y = mx.ones((n,))
        np.testing.assert_allclose(np.array(f(x, y)[0]), np.array(fun(x, y)), rtol=1e-6)
    with pytest.raises(ValueError):
        f(mx.ones((2, 2)), mx.ones((2, 2)))  # ranks are fixed
    # Not shapeless: other shapes are refused.
    mx.export_function(path, fun, mx.array([1.0]), mx.array([2.0]))
    with pytest.raises(ValueError):
        mx.import_function(path)(mx.ones((3,)), mx.ones((3,)))


def test_linear_layer_and_its_gradients_round_trip(tmp_path):
    # A Linear layer's addmm keeps its bias as a (1, N) row, and its weight and bias gradients
    # come from one MatmulColumnSums step: both survive export, shapeless in the batch.
    lin = nn.Linear(8, 5)
    mx.eval(lin.parameters())

    def grads(w, b, x):
        return mx.grad(lambda w, b: (mx.addmm(b, x, w.T) ** 2).sum(), argnums=(0, 1))(w, b)

    path = str(tmp_path / "g.mlxfn")
    mx.export_function(path, grads, lin.weight, lin.bias, mx.ones((3, 8)), shapeless=True)
    f = mx.import_function(path)
    for rows in (3, 6):
        x = mx.array(np.linspace(-1, 1, rows * 8, dtype=np.float32).reshape(rows, 8))
        y = np.array(x) @ np.array(lin.weight).T + np.array(lin.bias)
        gw, gb = f(lin.weight, lin.bias, x)
        np.testing.assert_allclose(np.array(gb), 2 * y.sum(0), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(np.array(gw), 2 * y.T @ np.array(x), rtol=1e-5, atol=1e-5)


def test_fused_optimizer_steps_round_trip(tmp_path):
    # A bucket of parameters of two shapes in one AdamUpdate and one SgdUpdate (with momentum):
    # exported, imported and run again, the same updates.
    def steps(p1, p2, g1, g2, m1, m2, v1, v2):
        lr, c = mx.array(0.1), mx.array(1.0)
        adam = mx.fast._adam_update_many([p1, p2], [g1, g2], [m1, m2], [v1, v2], lr, c, c,
                                         beta1=0.9, beta2=0.99, eps=1e-8, weight_decay=0.01)
        sgd = mx.fast._sgd_update_many([p1, p2], [g1, g2], [m1, m2], lr, momentum=0.9,
                                       nesterov=True)
        return [x for part in adam + sgd for x in part]

    rng = np.random.default_rng(0)
    args = [mx.array(rng.standard_normal(s).astype(np.float32)) for s in [(3, 4), (5,)] * 3]
    args += [mx.array(rng.random(s).astype(np.float32)) for s in [(3, 4), (5,)]]
    path = str(tmp_path / "opt.mlxfn")
    mx.export_function(path, steps, *args)
    f = mx.import_function(path)
    mx._kernel_counts(True, True)
    got = f(*args)
    mx.eval(got)
    counts = mx._kernel_counts(False, True)
    assert counts.get("AdamUpdate") == 1 and counts.get("SgdUpdate") == 1, counts
    for a, b in zip(got, steps(*args)):
        np.testing.assert_array_equal(np.array(a), np.array(b))


def test_shapeless_exporter_with_reshape(tmp_path):
    path = str(tmp_path / "r.mlxfn")

    def fun(x):
        return (x.reshape(x.shape[0], -1, 2) * 2).sum(axis=-1)

    with mx.exporter(path, fun, shapeless=True) as e:
        e(mx.ones((2, 4)))
    f = mx.import_function(path)
    x = mx.arange(24).reshape(3, 8).astype(mx.float32)
    np.testing.assert_array_equal(np.array(f(x)[0]), np.array(fun(x)))


def test_imported_functions_compose_with_transforms(tmp_path):
    path = str(tmp_path / "t.mlxfn")

    def fun(x):
        return mx.sum(mx.sin(x) * x)

    x = mx.array([0.1, 0.5, 2.0])
    mx.export_function(path, fun, x)
    f = mx.import_function(path)
    g = mx.grad(lambda v: f(v)[0])(x)
    np.testing.assert_allclose(np.array(g), np.array(mx.grad(fun)(x)), rtol=1e-6)
    v = mx.vmap(lambda v: f(v)[0])(mx.stack([x, 2 * x]))
    np.testing.assert_allclose(np.array(v), [fun(x).item(), fun(2 * x).item()], rtol=1e-6)
    c = mx.compile(lambda v: f(v)[0] * 2)(x)
    np.testing.assert_allclose(c.item(), 2 * fun(x).item(), rtol=1e-6)


def test_many_primitives_round_trip(tmp_path):
    rng = np.random.default_rng(1)
    a = mx.array(rng.standard_normal((4, 6)).astype(np.float32))
    idx = mx.array([3, 0, 2])

    def fun(x, i):
        outs = [
            mx.transpose(x)[1:, ::2],
            mx.cumsum(x, axis=1),
            mx.argmax(x, axis=0),
            mx.sort(x, axis=-1),
            mx.take(x, i, axis=1),
            mx.concatenate([x, x * 2], axis=0),
            mx.where(x > 0, x, -x),
            mx.logsumexp(x, axis=-1),
            x.astype(mx.float16),
            mx.fast.rms_norm(x, mx.ones((6,)), 1e-5),
            mx.fast.layer_norm(x, None, None, 1e-5),
            x[i],
            mx.matmul(x, x.T),
            mx.addmm(mx.zeros((4, 4)), x, x.T, alpha=0.5),
            mx.fft.rfft(x).real if hasattr(mx, "fft") else x,
            x.at[i].add(1.0),
            mx.diagonal(x),
            mx.expand_dims(x, 0),
            mx._gelu_approx_vjp(x, x * 2),
            mx._silu_vjp(x, x),  # the last Binary op code
        ]
        return outs

    path = str(tmp_path / "many.mlxfn")
    mx.export_function(path, fun, a, idx)
    f = mx.import_function(path)
    got = f(a, idx)
    want = fun(a, idx)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(np.array(g.astype(mx.float32)), np.array(w.astype(mx.float32)), rtol=1e-5)


def test_custom_functions_are_inlined(tmp_path):
    @mx.custom_function
    def f(x):
        return mx.exp(x)

    @f.vjp
    def f_vjp(primals, cotangent, output):
        return (cotangent * 0,)

    path = str(tmp_path / "c.mlxfn")
    mx.export_function(path, lambda x: f(x) + 1, mx.array([0.0, 1.0]))
    g = mx.import_function(path)
    np.testing.assert_allclose(np.array(g(mx.array([0.0, 1.0]))[0]), np.exp([0.0, 1.0]) + 1, rtol=1e-6)


def test_callback_receives_the_graph():
    seen = []
    mx.export_function(seen.append, lambda x, y: x * y + 1, mx.array([1.0]), y=mx.array([2.0]))
    assert len(seen) == 1
    g = seen[0]
    assert g["keyword_names"] == ["y"] and len(g["inputs"]) == 2
    names = [p["primitive"] for p in g["primitives"]]
    assert "Binary" in names
    assert len(g["outputs"]) == 1 and g["shapeless"] is False


def test_export_to_dot(tmp_path):
    x = mx.array([1.0, 2.0])
    y = mx.exp(x) + x
    buf = io.StringIO()
    mx.export_to_dot(buf, y, x=x)
    text = buf.getvalue()
    assert text.startswith("digraph") and "Exp" in text and "Add" in text and "x\\n" in text
    path = tmp_path / "g.dot"
    mx.export_to_dot(str(path), y)
    assert path.read_text() == mx_dot(y)


def mx_dot(*arrays):
    buf = io.StringIO()
    mx.export_to_dot(buf, *arrays)
    return buf.getvalue()


class GatedBlock(nn.Module):
    """out = proj(x) * sigmoid(mean(up(x))) : eval's input order keeps proj(x) alive while
    the wide up(x) is computed; the memory plan computes the gate first."""

    def __init__(self, d, wide):
        super().__init__()
        self.proj = nn.Linear(d, d)
        self.up = nn.Linear(d, wide)

    def __call__(self, x):
        gate = mx.sigmoid(mx.mean(nn.relu(self.up(x)), axis=-1, keepdims=True))
        return self.proj(x) * gate


def peak_of(f, x):
    mx.eval(x)
    mx.synchronize()
    mx.reset_peak_memory()
    base = mx.get_active_memory()
    out = f(x)[0]
    mx.eval(out)
    return mx.get_peak_memory() - base, out


def test_module_export_and_memory_plan(tmp_path):
    mx.random.seed(0)
    model = GatedBlock(256, 4096)
    mx.eval(model.parameters())
    x = mx.random.normal((512, 256))
    plain, optimized = str(tmp_path / "plain.mlx"), str(tmp_path / "opt.mlx")
    model.export(plain, x, optimize_memory=False)
    model.export(optimized, x)  # optimize_memory=True is the default
    expected = model(x)
    f_plain, f_opt = mx.import_function(plain), mx.import_function(optimized)
    peak_plain, out_plain = peak_of(f_plain, x)
    peak_opt, out_opt = peak_of(f_opt, x)
    np.testing.assert_allclose(np.array(out_plain), np.array(expected), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.array(out_opt), np.array(expected), rtol=1e-5, atol=1e-6)
    # proj(x) is 512 KB, up(x) 8 MB: the plan never holds proj(x) next to both wide buffers.
    assert peak_opt < peak_plain
    with pytest.raises(ValueError, match="example inputs"):
        model.export(plain)


def test_module_export_fresh_process(tmp_path):
    mx.random.seed(1)
    model = nn.Sequential(nn.Linear(6, 16), nn.GELU(), nn.LayerNorm(16), nn.Linear(16, 3))
    x = mx.random.normal((4, 6))
    path = str(tmp_path / "mlp.mlx")
    model.export(path, x)
    np.save(tmp_path / "x.npy", np.array(x))
    code = f"""
import numpy as np, mlx.core as mx
f = mx.import_function({path!r})
np.save({str(tmp_path / 'y.npy')!r}, np.array(f(mx.array(np.load({str(tmp_path / 'x.npy')!r})))[0]))
"""
    run_fresh(code)
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), np.array(model(x)), rtol=1e-5, atol=1e-6)


# ---- hostile files ----------------------------------------------------------------------


def good_file(tmp_path):
    path = tmp_path / "good.mlxfn"
    w = mx.arange(12).reshape(3, 4).astype(mx.float32)
    mx.export_function(str(path), lambda x: mx.sum(mx.transpose(x @ w) * 2, axis=0), mx.ones((2, 3)))
    return path.read_bytes()


def import_bytes(tmp_path, data, name="bad.mlxfn"):
    p = tmp_path / name
    p.write_bytes(data)
    return mx.import_function(str(p))


def test_truncated_files_raise(tmp_path):
    good = good_file(tmp_path)
    f = import_bytes(tmp_path, good)
    assert f(mx.ones((2, 3)))[0].shape == (2,)
    for n in range(len(good)):
        with pytest.raises(RuntimeError, match="Invalid function file"):
            import_bytes(tmp_path, good[:n])


def test_hostile_headers_raise(tmp_path):
    good = good_file(tmp_path)
    header_len = struct.unpack_from("<Q", good, 12)[0]
    cases = {
        "bad magic": b"NOTMLXFN" + good[8:],
        "version": good[:8] + struct.pack("<I", 99) + good[12:],
        "huge header": good[:12] + struct.pack("<Q", 1 << 60) + good[20:],
        "unknown primitive": good.replace(b"Transpose", b"Transpos!"),
        "primitive name length": good.replace(b"\x06\x00\x00\x00Matmul", b"\xff\xff\xff\x7fMatmul"),
    }
    for what, data in cases.items():
        assert data != good, what
        with pytest.raises(RuntimeError, match="Invalid function file") as e:
            import_bytes(tmp_path, data)
        if what == "unknown primitive":
            assert "unknown primitive 'Transpos!'" in str(e.value)
    # A huge count right after the metadata string (the constant count).
    meta_len = struct.unpack_from("<I", good, 20)[0]
    pos = 24 + meta_len
    data = good[:pos] + struct.pack("<I", 0xFFFFFFFF) + good[pos + 4 :]
    with pytest.raises(RuntimeError, match="exceeds"):
        import_bytes(tmp_path, data)
    assert header_len < len(good)


def test_mutated_files_never_crash(tmp_path):
    """Random byte changes in the header: each file either imports and runs, or raises."""
    good = good_file(tmp_path)
    header_end = 20 + struct.unpack_from("<Q", good, 12)[0]
    rng = np.random.default_rng(7)
    outcomes = {"ok": 0, "error": 0}
    for trial in range(300):
        data = bytearray(good)
        for _ in range(int(rng.integers(1, 4))):
            pos = int(rng.integers(20, header_end))
            data[pos] = int(rng.integers(0, 256))
        try:
            f = import_bytes(tmp_path, bytes(data))
            mx.eval(f(mx.ones((2, 3))))
            outcomes["ok"] += 1
        except (RuntimeError, ValueError, IndexError, MemoryError):
            outcomes["error"] += 1
    assert outcomes["error"] > 0


def test_step_parameters_are_checked(tmp_path):
    """A transpose whose axes are not a permutation would read outside its input."""
    path = tmp_path / "t.mlxfn"
    mx.export_function(str(path), lambda x: mx.transpose(x, (1, 0)) + 1, mx.ones((2, 3)))
    good = path.read_bytes()
    # Transpose's state: its name then the axes (u32 count, two i64).
    marker = b"Transpose" + struct.pack("<I", 2) + struct.pack("<q", 1) + struct.pack("<q", 0)
    assert marker in good
    bad = good.replace(marker, b"Transpose" + struct.pack("<I", 2) + struct.pack("<qq", 1, 1))
    with pytest.raises(RuntimeError, match="permutation"):
        import_bytes(tmp_path, bad)


class TinyLM(nn.Module):
    """A decoder block of an LLM: embedding, RMSNorm, RoPE, fused attention with a causal
    mask, a SwiGLU MLP and tied output weights."""

    def __init__(self, vocab=50, d=32, heads=4):
        super().__init__()
        self.heads = heads
        self.embed = nn.Embedding(vocab, d)
        self.norm1, self.norm2 = nn.RMSNorm(d), nn.RMSNorm(d)
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.out = nn.Linear(d, d, bias=False)
        self.rope = nn.RoPE(d // heads)
        self.gate, self.up = nn.Linear(d, 64, bias=False), nn.Linear(d, 64, bias=False)
        self.down = nn.Linear(64, d, bias=False)

    def __call__(self, tokens):
        B, L = tokens.shape
        x = self.embed(tokens)
        q, k, v = mx.split(self.qkv(self.norm1(x)), 3, axis=-1)
        q, k, v = (t.reshape(B, L, self.heads, -1).transpose(0, 2, 1, 3) for t in (q, k, v))
        q, k = self.rope(q), self.rope(k)
        a = mx.fast.scaled_dot_product_attention(q, k, v, scale=0.5, mask="causal")
        x = x + self.out(a.transpose(0, 2, 1, 3).reshape(B, L, -1))
        h = self.norm2(x)
        x = x + self.down(nn.silu(self.gate(h)) * self.up(h))
        return self.embed.as_linear(x)


@pytest.mark.parametrize("optimize_memory", [False, True])
def test_transformer_block_round_trip(tmp_path, optimize_memory):
    mx.random.seed(3)
    model = TinyLM()
    tokens = mx.array([[1, 5, 7, 2, 9, 3], [4, 4, 8, 0, 1, 2]])
    path = str(tmp_path / "lm.mlx")
    model.export(path, tokens, optimize_memory=optimize_memory)
    f = mx.import_function(path)
    other = mx.array([[3, 1, 4, 1, 5, 9], [2, 6, 5, 3, 5, 8]])
    for t in (tokens, other):
        np.testing.assert_allclose(np.array(f(t)[0]), np.array(model(t)), rtol=1e-4, atol=1e-5)


def test_optimized_imports_compose_with_transforms(tmp_path):
    mx.random.seed(4)
    model = GatedBlock(8, 32)
    x = mx.random.normal((4, 8))
    path = str(tmp_path / "g.mlx")
    model.export(path, x, optimize_memory=True)
    f = mx.import_function(path)
    got = mx.grad(lambda v: mx.sum(f(v)[0]))(x)
    want = mx.grad(lambda v: mx.sum(model(v)))(x)
    np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-5, atol=1e-6)
    batched = mx.vmap(lambda v: f(v)[0])(mx.stack([x, 2 * x]))
    np.testing.assert_allclose(np.array(batched[1]), np.array(model(2 * x)), rtol=1e-5, atol=1e-6)


def test_module_as_function_and_parameters_as_inputs(tmp_path):
    from mlx.utils import tree_flatten, tree_unflatten

    model = nn.Linear(4, 2)
    x = mx.ones((3, 4))
    mx.export_function(str(tmp_path / "m1.mlxfn"), model, x)
    assert mx.import_function(str(tmp_path / "m1.mlxfn"))(x)[0].shape == (3, 2)
    params = dict(tree_flatten(model.parameters()))

    def call(x, **params):
        model.update(tree_unflatten(list(params.items())))
        return model(x)

    mx.export_function(str(tmp_path / "m2.mlxfn"), call, (x,), params)
    model.update(tree_unflatten(list(params.items())))
    f = mx.import_function(str(tmp_path / "m2.mlxfn"))
    zeros = {k: mx.zeros_like(v) for k, v in params.items()}
    assert f((x,), zeros)[0].tolist() == [[0.0, 0.0]] * 3
    np.testing.assert_allclose(np.array(f((x,), params)[0]), np.array(model(x)), rtol=1e-6)


def test_linalg_round_trip(tmp_path):
    rng = np.random.default_rng(8)
    a = rng.standard_normal((3, 3)).astype(np.float32)
    spd = mx.array(a @ a.T + 3 * np.eye(3, dtype=np.float32))
    x = mx.array(a)

    def fun(x, spd):
        q, r = mx.linalg.qr(x)
        u, s, vt = mx.linalg.svd(x)
        w, v = mx.linalg.eigh(spd)
        return [q @ r, s, w, mx.linalg.inv(spd), mx.linalg.cholesky(spd), mx.linalg.solve(spd, x),
                mx.linalg.lu_factor(x)[0]]

    path = str(tmp_path / "la.mlxfn")
    mx.export_function(path, fun, x, spd)
    got = mx.import_function(path)(x, spd)
    want = fun(x, spd)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.array(g), np.array(w), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode", ["affine", "mxfp4", "mxfp8", "nvfp4"])
def test_quantized_modes_round_trip(tmp_path, mode):
    # The quantization mode is part of the exported step: an mxfp4 product must not come back
    # as an affine one.
    group = 64 if mode == "affine" else 32 if mode != "nvfp4" else 16
    bits = 4 if mode != "mxfp8" else 8
    w = mx.random.normal((32, 64), key=mx.random.key(1))
    q = mx.quantize(w, group_size=group, bits=bits, mode=mode)
    x = mx.random.normal((3, 64), key=mx.random.key(2))

    def f(x, *q):
        return mx.quantized_matmul(x, *q, transpose=True, group_size=group, bits=bits, mode=mode)

    path = str(tmp_path / "q.mlxfn")
    mx.export_function(path, f, x, *q)
    g = mx.import_function(path)
    np.testing.assert_array_equal(np.array(g(x, *q)[0]), np.array(f(x, *q)))
