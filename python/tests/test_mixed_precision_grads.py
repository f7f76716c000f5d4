"""Gradients of float32 weights used as float16 / bfloat16 in matrix products (mixed precision).

AsType's vjp makes the product that computes such a gradient store it in float32 (a Matmul or
MatmulColumnSums with float32 outputs, transforms/widen_products.cpp): no cast runs after it and
the gradient is never rounded to 16 bits. It does so only where nothing else reads the 16-bit
product. References are float64 NumPy products of the same 16-bit values."""

import io
import re

import numpy as np
import pytest

import mlx.core as mx
import mlx.nn as nn

DTYPES = [mx.bfloat16, mx.float16]
# float32 accumulation of a few dozen terms, against a gradient rounded to 16 bits: relative
# error up to 2^-9 (bfloat16) or 2^-12 (float16).
RTOL = 1e-5


def widening_casts(*arrays):
    """The casts of a 16-bit product (Matmul / MatmulColumnSums, through views) to float32 in the
    unevaluated graph below arrays, read from export_to_dot."""
    text = dot(*arrays)
    dtype_of = dict(re.findall(r'(A\d+) \[label="\([0-9,]*\) (\w+)", shape=box\]', text))
    label_of = dict(re.findall(r'(P\d+) \[label="(\w+)"\]', text))
    inputs, producer, output = {}, {}, {}
    for a, b in re.findall(r"(\w+) -> (\w+);", text):
        if a.startswith("A"):
            inputs.setdefault(b, []).append(a)
        else:
            producer[b] = a
            output[a] = b

    def from_product(a):
        p = producer.get(a)
        while p is not None and label_of[p] in ("Transpose", "Reshape"):
            p = producer.get(inputs[p][0])
        return p is not None and label_of[p] in ("Matmul", "MatmulColumnSums")

    return sum(
        1
        for p, label in label_of.items()
        if label == "AsType"
        and dtype_of[inputs[p][0]] in ("bfloat16", "float16")
        and dtype_of[output[p]] == "float32"
        and from_product(inputs[p][0])
    )


def dot(*arrays):
    buf = io.StringIO()
    mx.export_to_dot(buf, *arrays)
    return buf.getvalue()


def values(x):
    """x's values in float64 (NumPy)."""
    return np.array(x.astype(mx.float32)).astype(np.float64)


def rand(rng, shape, dtype=mx.float32):
    x = mx.array(rng.uniform(-1, 1, shape).astype(np.float32)).astype(dtype)
    mx.eval(x)
    return x


def max_rel_error(got, want):
    return np.max(np.abs(values(got) - want)) / max(np.max(np.abs(want)), 1e-30)


def rounded(x, dtype):
    """float64 values rounded to a 16-bit dtype (what an unfolded gradient would hold)."""
    return values(mx.array(x.astype(np.float32)).astype(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_linear_gradients_are_float32_products(dtype):
    rng = np.random.default_rng(1)
    lin = nn.Linear(24, 10)
    lin.set_compute_dtype(dtype)
    x = rand(rng, (3, 7, 24))
    c = rand(rng, (3, 7, 10))

    def loss(params):
        lin.update(params)
        return (lin(x).astype(mx.float32) * c).sum()

    grads = mx.grad(loss)(lin.trainable_parameters())
    assert widening_casts(grads) == 0
    assert grads["weight"].dtype == mx.float32 and grads["bias"].dtype == mx.float32
    # The product's cotangent is c rounded to the compute dtype; x is rounded on entry.
    g = values(c.astype(dtype)).reshape(-1, 10)
    xv = values(x.astype(dtype)).reshape(-1, 24)
    for got, want in ((grads["weight"], g.T @ xv), (grads["bias"], g.sum(0))):
        err = max_rel_error(got, want)
        assert err < RTOL
        # At least as close as the gradient rounded to 16 bits (before: a 16-bit product, cast).
        assert err <= np.max(np.abs(rounded(want, dtype) - want)) / np.max(np.abs(want))


@pytest.mark.parametrize("gemm", ["own", "blas"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rows", [1, 3, 16, 40, 100])
def test_product_kernels_store_float32(monkeypatch, gemm, dtype, rows):
    """Every CPU path of a 16-bit product (few rows read in place, skinny x @ W.T dot products,
    the bfloat16 GEMM, float32 copies for BLAS) writes a float32 output; on a GPU, cuBLASLt's."""
    monkeypatch.setenv("MLX_CPU_GEMM", gemm)
    rng = np.random.default_rng(rows)
    b = rand(rng, (96, 48), dtype)
    x = rand(rng, (rows, 96))
    g = rand(rng, (rows, 48), dtype)
    # dx = g @ b.T: b read transposed, as W in x @ W.T.
    _, (dx,) = mx.vjp(lambda x: [x.astype(dtype) @ b], [x], [g])
    assert widening_casts(dx) == 0
    assert dx.dtype == mx.float32
    assert max_rel_error(dx, values(g) @ values(b).T) < RTOL


@pytest.mark.parametrize("dtype", DTYPES)
def test_layouts_and_degenerate_shapes(dtype):
    rng = np.random.default_rng(2)
    cases = [  # x's shape, w's, the product, and whether a product computes dw
        ((2, 5, 6), (2, 6, 3), lambda x, w: x @ w, True),  # batched
        ((2, 5, 6), (2, 3, 6), lambda x, w: x @ mx.swapaxes(w, -1, -2), True),
        ((2, 6, 4), (3, 6), lambda x, w: w @ x, True),  # on the left, summed over the batch
        ((1, 1), (1, 1), lambda x, w: x @ w, True),
        ((4, 6), (0, 6), lambda x, w: x @ w.T, True),
        ((0, 6), (3, 6), lambda x, w: x @ w.T, False),  # an empty sum: zeros, cast
    ]
    for xs, ws, f, product in cases:
        x = rand(rng, xs, dtype)
        w = rand(rng, ws)
        shape = f(x, w).shape
        ones = mx.ones(shape, dtype)
        mx.eval(ones)
        _, (dw,) = mx.vjp(lambda w: [f(x, w.astype(dtype))], [w], [ones])
        assert widening_casts(dw) == 0
        if product:
            assert "AsType" not in dot(dw)
        assert dw.dtype == mx.float32 and dw.shape == w.shape
        # The same rule in float64 on the same 16-bit values.
        x64 = mx.array(values(x), dtype=mx.float64)
        w64 = mx.array(values(w.astype(dtype)), dtype=mx.float64)
        _, (want,) = mx.vjp(lambda w: [f(x64, w)], [w64], [mx.ones(shape, mx.float64)])
        np.testing.assert_allclose(values(dw), np.array(want), rtol=RTOL, atol=RTOL)


def test_shared_products_keep_the_cast():
    """A 16-bit product that something else reads is not retyped: the cast stays, both right."""
    rng = np.random.default_rng(3)
    a, b = rand(rng, (4, 5), mx.bfloat16), rand(rng, (5, 3), mx.bfloat16)
    w = rand(rng, (4, 3))
    c = a @ b  # held here
    _, (dw,) = mx.vjp(lambda w: [w.astype(mx.bfloat16)], [w], [c])
    assert widening_casts(dw) == 1
    assert c.dtype == mx.bfloat16
    np.testing.assert_array_equal(np.array(dw), np.array(c.astype(mx.float32)))

    kept = []

    @mx.custom_function
    def through(w16):
        return w16 * 1

    @through.vjp
    def through_vjp(primals, cotangent, output):
        p = a @ b
        kept.append(p)  # a second reader of the product
        return p

    _, (dw2,) = mx.vjp(lambda w: [through(w.astype(mx.bfloat16))], [w], [c])
    assert widening_casts(dw2) == 1
    np.testing.assert_array_equal(np.array(dw2), np.array(kept[0].astype(mx.float32)))

    # The cast weight read twice: its cotangent is a sum, cast as before.
    x = rand(rng, (6, 3), mx.bfloat16)

    def twice(w):
        w16 = w.astype(mx.bfloat16)
        return ((x @ w16.T).astype(mx.float32).sum() + (w16 * 2).astype(mx.float32).sum())

    dw3 = mx.grad(twice)(w)
    want = values(x).sum(0)[None, :].repeat(4, 0) + 2
    np.testing.assert_allclose(values(dw3), want, rtol=1e-2)


def test_gradient_of_gradient():
    """d/dx <dW(x), V>: through the float32 product's own rule (V in bfloat16 for its product)."""
    rng = np.random.default_rng(4)
    x, w = rand(rng, (6, 5)), rand(rng, (3, 5))
    c, v = rand(rng, (6, 3)), rand(rng, (3, 5))

    def f(x, w):
        return ((x.astype(mx.bfloat16) @ w.astype(mx.bfloat16).T).astype(mx.float32) * c).sum()

    def h(x):
        dw = mx.grad(f, argnums=1)(x, w)
        assert dw.dtype == mx.float32
        return (dw * v).sum()

    dx = mx.grad(h)(x)
    assert widening_casts(dx) == 0
    want = values(c.astype(mx.bfloat16)) @ values(v.astype(mx.bfloat16))
    assert dx.dtype == mx.float32
    assert max_rel_error(dx, want) < RTOL


def test_backward_runs_no_cast():
    rng = np.random.default_rng(5)
    x = rand(rng, (8, 16), mx.bfloat16)
    w = rand(rng, (4, 16))
    g = rand(rng, (8, 4), mx.bfloat16)
    outs, grads = mx.vjp(lambda w: [x @ w.astype(mx.bfloat16).T], [w], [g])
    mx.eval(outs)
    mx._kernel_counts(True, True)
    mx.eval(grads)
    counts = mx._kernel_counts(False, True)
    assert "AsType" not in counts, counts
    assert counts.get("Matmul") == 1, counts
    assert max_rel_error(grads[0], values(g).T @ values(x)) < RTOL


def test_mixed_precision_model_step():
    """A two-layer MLP with biases under set_compute_dtype: every parameter's gradient comes
    out of its product in float32, compiled or not."""
    rng = np.random.default_rng(6)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8))
    model.set_compute_dtype(mx.bfloat16)
    x, t = rand(rng, (10, 16)), rand(rng, (10, 8))

    def loss(model, x, t):
        return ((model(x).astype(mx.float32) - t) ** 2).mean()

    _, grads = nn.value_and_grad(model, loss)(model, x, t)
    flat = [g for _, g in mlx_tree_flatten(grads)]
    assert len(flat) == 4 and widening_casts(*flat) == 0
    assert all(g.dtype == mx.float32 for g in flat)

    # The same step as a function of its parameters, compiled.
    def functional(p, x, t):
        h = mx.addmm(p["b1"].astype(mx.bfloat16), x.astype(mx.bfloat16), p["w1"].astype(mx.bfloat16).T)
        y = mx.addmm(p["b2"].astype(mx.bfloat16), mx.maximum(h, 0), p["w2"].astype(mx.bfloat16).T)
        return ((y.astype(mx.float32) - t) ** 2).mean()

    raw = model.parameters()["layers"]  # float32 (attribute access would cast them)
    params = {"w1": raw[0]["weight"], "b1": raw[0]["bias"], "w2": raw[2]["weight"], "b2": raw[2]["bias"]}
    assert all(v.dtype == mx.float32 for v in params.values())
    plain = mx.grad(functional)(params, x, t)
    assert widening_casts(*plain.values()) == 0
    compiled = mx.compile(mx.grad(functional))(params, x, t)
    for k in params:
        assert compiled[k].dtype == mx.float32
        np.testing.assert_allclose(np.array(compiled[k]), np.array(plain[k]), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(np.array(plain["w2"]), np.array(grads["layers"][2]["weight"]), rtol=1e-5,
                               atol=1e-7)


def test_export_round_trip(tmp_path):
    rng = np.random.default_rng(7)
    x = rand(rng, (5, 4), mx.bfloat16)

    def grads(w, b):
        def f(w, b):
            return mx.addmm(b.astype(mx.bfloat16), x, w.astype(mx.bfloat16).T).astype(mx.float32).sum()

        return mx.grad(f, argnums=(0, 1))(w, b)

    w, b = rand(rng, (3, 4)), rand(rng, (3,))
    path = str(tmp_path / "grads.mlxfn")
    mx.export_function(path, grads, w, b)
    imported = mx.import_function(path)
    got = imported(w, b)
    want = grads(w, b)
    for a, e in zip(got, want):
        assert a.dtype == mx.float32
        np.testing.assert_array_equal(np.array(a), np.array(e))


def mlx_tree_flatten(tree):
    from mlx.utils import tree_flatten

    return tree_flatten(tree)
