"""nn.Module tree behaviour, weights files, nn.value_and_grad / checkpoint and the mixed
precision policy."""
import numpy as np
import pytest

import mlx.core as mx
import mlx.nn as nn
from mlx.utils import tree_flatten, tree_map, tree_reduce


class MLP(nn.Module):
    def __init__(self, dims=(4, 8, 8, 3)):
        super().__init__()
        self.layers = [nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:])]
        self.scale = mx.array(1.0)
        self.extras = {"norm": nn.LayerNorm(dims[-1]), "offsets": [mx.zeros((2,))]}
        self.depth = len(dims) - 1  # not an array: a plain attribute
        self._cache = mx.ones((3,))  # underscore: state, not a parameter

    def __call__(self, x):
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i < len(self.layers) - 1:
                x = nn.relu(x)
        return self.extras["norm"](x) * self.scale


def keys(tree):
    return [k for k, _ in tree_flatten(tree)]


def test_attributes_live_in_the_dict():
    m = MLP()
    assert isinstance(m, dict)
    assert set(m.keys()) == {"layers", "scale", "extras", "_cache"}
    assert m.depth == 3 and "depth" not in m
    assert m["scale"] is m.scale
    m.scale = 2.0  # replacing an array by a plain value removes it from the dict
    assert "scale" not in m and m.scale == 2.0
    m.scale = mx.array(3.0)
    assert "scale" in m and "scale" not in m.__dict__
    del m.scale
    assert "scale" not in m
    with pytest.raises(AttributeError):
        m.missing


def test_parameters_children_and_modules():
    m = MLP()
    assert keys(m.parameters()) == [
        "layers.0.weight", "layers.0.bias", "layers.1.weight", "layers.1.bias",
        "layers.2.weight", "layers.2.bias", "scale", "extras.norm.weight", "extras.norm.bias",
        "extras.offsets.0",
    ]
    count = tree_reduce(lambda acc, p: acc + p.size, m.parameters(), 0)
    assert count == (4 * 8 + 8) + (8 * 8 + 8) + (8 * 3 + 3) + 1 + 3 + 3 + 2
    children = m.children()
    assert set(children) == {"layers", "extras"}
    assert children["layers"][1] is m.layers[1]
    assert children["extras"]["norm"] is m.extras["norm"]
    names = [k for k, _ in m.named_modules()]
    assert names == ["", "layers.0", "layers.1", "layers.2", "extras.norm"]
    assert m.modules()[0] is m and len(m.modules()) == 5
    leaves = tree_flatten(m.leaf_modules(), is_leaf=nn.Module.is_module)
    assert [k for k, _ in leaves] == ["layers.0", "layers.1", "layers.2", "extras.norm"]
    assert m.state is m


def test_update_and_strictness():
    m = MLP()
    w = mx.zeros((8, 4))
    m.update({"layers": [{"weight": w}], "extras": {"offsets": [mx.ones((2,))]}})
    assert m.layers[0].weight is w
    np.testing.assert_array_equal(np.array(m.extras["offsets"][0]), [1, 1])
    with pytest.raises(ValueError):
        m.update({"nope": mx.zeros(1)})
    with pytest.raises(ValueError):
        m.update({"scale": 3})
    with pytest.raises(ValueError):
        m.update({"layers": [{}, {}, {}, {"weight": w}]})
    m.update({"nope": mx.zeros(1), "layers": [{}, {}, {}, {}]}, strict=False)
    assert "nope" not in m
    assert m.update({}) is m


def test_apply_set_dtype_and_update_modules():
    m = MLP()
    m.apply(lambda p: p * 0)
    assert all((np.array(p) == 0).all() for _, p in tree_flatten(m.parameters()))
    assert (np.array(m._cache) == 1).all()  # not a parameter
    m.set_dtype(mx.float16)
    assert {p.dtype for _, p in tree_flatten(m.parameters())} == {mx.float16}
    m.set_dtype(mx.float32, predicate=lambda d: d == mx.float16)
    assert {p.dtype for _, p in tree_flatten(m.parameters())} == {mx.float32}
    def not_bias(mod, k, v):
        return k != "bias" and nn.Module.valid_parameter_filter(mod, k, v)

    m.apply(lambda p: p + 1, filter_fn=not_bias)
    assert (np.array(m.layers[0].bias) == 0).all() and (np.array(m.layers[0].weight) == 1).all()

    seen = []
    m.apply_to_modules(lambda k, mod: seen.append((k, type(mod).__name__)))
    assert seen[0] == ("", "MLP") and ("extras.norm", "LayerNorm") in seen

    new = nn.Linear(8, 8)
    m.update_modules({"layers": [{}, new, {}]})
    assert m.layers[1] is new
    m.update_modules({"extras": {"norm": nn.Identity()}})
    assert isinstance(m.extras["norm"], nn.Identity)
    with pytest.raises(ValueError):
        m.update_modules({"missing": nn.Identity()})

    # A dict in place of a module reaches into that module (what nn.quantize's tree holds).
    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = MLP()

    o = Outer()
    deep = nn.Linear(8, 8)
    o.update_modules({"inner": {"layers": [{}, deep, {}]}})
    assert o.inner.layers[1] is deep
    with pytest.raises(ValueError):
        o.update_modules({"inner": {"nothing_here": nn.Identity()}})
    with pytest.raises(ValueError):
        m.update_modules({"scale": nn.Identity()})


def test_freeze_and_unfreeze():
    m = MLP()
    all_keys = keys(m.parameters())
    m.freeze()
    assert m.trainable_parameters() == {
        "layers": [{}, {}, {}], "extras": {"norm": {}, "offsets": [{}]}
    }
    assert keys(m.parameters()) == all_keys  # frozen parameters are still parameters
    m.unfreeze(keys="bias")
    assert keys(m.trainable_parameters()) == [
        "layers.0.bias", "layers.1.bias", "layers.2.bias", "extras.norm.bias",
    ]
    m.unfreeze()
    assert keys(m.trainable_parameters()) == all_keys
    m.freeze(recurse=False)
    assert "scale" not in m.trainable_parameters()
    assert "layers.0.weight" in keys(m.trainable_parameters())
    m.unfreeze()
    m.layers[0].freeze(keys=["weight"])
    assert "layers.0.weight" not in keys(m.trainable_parameters())
    with pytest.raises(KeyError):
        m.freeze(keys="nope", strict=True)
    m.freeze(keys="nope")  # not strict: ignored
    assert m.freeze() is m and m.unfreeze() is m


def test_train_eval_propagate():
    m = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5), nn.Sequential(nn.Dropout(0.1)))
    assert m.training and m.layers[2].layers[0].training
    assert m.eval() is m
    assert not any(mod.training for mod in m.modules())
    m.train()
    assert all(mod.training for mod in m.modules())


def test_repr_shows_the_tree():
    text = repr(nn.Sequential(nn.Linear(2, 3), nn.ReLU()))
    assert text.startswith("Sequential(")
    assert "(layers.0): Linear(input_dims=2, output_dims=3, bias=True)" in text
    assert "(layers.1): ReLU()" in text


@pytest.mark.parametrize("ext", ["npz", "safetensors"])
def test_save_load_round_trip(tmp_path, ext):
    src, dst = MLP(), MLP()
    path = tmp_path / f"weights.{ext}"
    src.save_weights(str(path))
    assert dst.load_weights(str(path)) is dst
    for (k, a), (_, b) in zip(tree_flatten(src.parameters()), tree_flatten(dst.parameters())):
        np.testing.assert_array_equal(np.array(a), np.array(b), err_msg=k)
    dst.load_weights(path)  # pathlib.Path works too


def test_save_weights_rejects_unknown_extension(tmp_path):
    with pytest.raises(ValueError):
        MLP().save_weights(str(tmp_path / "weights.bin"))


def test_load_weights_from_list_and_strictness():
    m = nn.Linear(3, 2)
    w, b = mx.ones((2, 3)), mx.zeros((2,))
    m.load_weights([("weight", w), ("bias", b)])
    assert m.weight is w and m.bias is b
    with pytest.raises(ValueError):
        m.load_weights([("weight", w)])  # missing bias
    with pytest.raises(ValueError):
        m.load_weights([("weight", w), ("bias", b), ("extra", b)])
    with pytest.raises(ValueError):
        m.load_weights([("weight", mx.ones((3, 2))), ("bias", b)])  # wrong shape
    w2 = mx.full((2, 3), 5.0)
    m.load_weights([("weight", w2), ("extra", b)], strict=False)
    assert m.weight is w2 and m.bias is b


def np_mlp_loss_and_grads(params, x, y):
    """Loss mean((relu(x W0^T + b0) W1^T + b1 - y)^2) and its gradients, by hand."""
    w0, b0, w1, b1 = (
        np.array(params[layer][name], np.float64)
        for layer in ("l0", "l1")
        for name in ("weight", "bias")
    )
    z = x @ w0.T + b0
    h = np.maximum(z, 0)
    out = h @ w1.T + b1
    d_out = 2 * (out - y) / out.size
    d_h = d_out @ w1
    d_z = d_h * (z > 0)
    grads = {
        "l0": {"weight": d_z.T @ x, "bias": d_z.sum(0)},
        "l1": {"weight": d_out.T @ h, "bias": d_out.sum(0)},
    }
    return np.mean((out - y) ** 2), grads


class TwoLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.l0 = nn.Linear(5, 7)
        self.l1 = nn.Linear(7, 3)

    def __call__(self, x):
        return self.l1(nn.relu(self.l0(x)))


def test_value_and_grad_matches_numpy(rng):
    model = TwoLayer()
    x = rng.standard_normal((6, 5)).astype(np.float32)
    y = rng.standard_normal((6, 3)).astype(np.float32)
    before = model.parameters()

    def loss_fn(inputs, targets):
        return nn.losses.mse_loss(model(inputs), targets)

    loss, grads = nn.value_and_grad(model, loss_fn)(mx.array(x), targets=mx.array(y))
    expected_loss, expected_grads = np_mlp_loss_and_grads(before, x.astype(np.float64), y)
    np.testing.assert_allclose(loss.item(), expected_loss, rtol=1e-5)
    assert keys(grads) == keys(expected_grads)
    for (k, g), (_, e) in zip(tree_flatten(grads), tree_flatten(expected_grads)):
        np.testing.assert_allclose(np.array(g), e, rtol=1e-4, atol=1e-6, err_msg=k)
    for (_, a), (_, b) in zip(tree_flatten(before), tree_flatten(model.parameters())):
        assert a is b  # the model holds its own arrays again afterwards


def test_value_and_grad_only_trainable_and_aux(rng):
    model = TwoLayer()
    model.l0.freeze()
    x = mx.array(rng.standard_normal((2, 5)).astype(np.float32))

    def loss_fn(inputs):
        out = model(inputs)
        return mx.sum(out), out

    (loss, out), grads = nn.value_and_grad(model, loss_fn)(x)
    assert keys(grads) == ["l1.weight", "l1.bias"]
    assert out.shape == (2, 3)
    np.testing.assert_allclose(np.array(grads["l1"]["bias"]), [2.0, 2.0, 2.0])


def test_a_training_step_lowers_the_loss(rng):
    model = TwoLayer()
    x = mx.array(rng.standard_normal((16, 5)).astype(np.float32))
    y = mx.array(rng.standard_normal((16, 3)).astype(np.float32))
    step = nn.value_and_grad(model, lambda: nn.losses.mse_loss(model(x), y))
    first, _ = step()
    for _ in range(20):
        loss, grads = step()
        model.update(tree_map(lambda p, g: p - 0.1 * g, model.trainable_parameters(), grads))
        mx.eval(model.parameters())
    assert loss.item() < first.item()


def test_checkpoint_utility_matches_plain_call(rng):
    model = TwoLayer()
    x = mx.array(rng.standard_normal((4, 5)).astype(np.float32))
    plain = nn.value_and_grad(model, lambda: mx.sum(model(x) ** 2))()
    wrapped = nn.utils.checkpoint(model)
    ckpt = nn.value_and_grad(model, lambda: mx.sum(wrapped(x) ** 2))()
    np.testing.assert_allclose(ckpt[0].item(), plain[0].item(), rtol=1e-6)
    for (k, a), (_, b) in zip(tree_flatten(plain[1]), tree_flatten(ckpt[1])):
        np.testing.assert_allclose(np.array(b), np.array(a), rtol=1e-5, atol=1e-7, err_msg=k)
    np.testing.assert_allclose(np.array(wrapped(x)), np.array(model(x)), rtol=1e-6)


# ---- mixed precision -----------------------------------------------------------------------


class TinyLM(nn.Module):
    def __init__(self, vocab=11, dims=16):
        super().__init__()
        self.embedding = nn.Embedding(vocab, dims)
        self.encoder = nn.TransformerEncoder(1, dims, 2, mlp_dims=32)
        self.norm = nn.RMSNorm(dims)
        self.out = nn.Linear(dims, vocab)

    def __call__(self, tokens):
        mask = nn.MultiHeadAttention.create_additive_causal_mask(tokens.shape[1])
        h = self.encoder(self.embedding(tokens), mask)
        return self.out(self.norm(h))


def test_compute_dtype_policy_keeps_float32_parameters_and_gradients(rng):
    mx.random.seed(0)
    model = TinyLM()
    tokens = mx.array(rng.integers(0, 11, (3, 6)).astype(np.int32))
    targets = mx.array(rng.integers(0, 11, (3, 6)).astype(np.int32))

    def loss_fn():
        logits = model(tokens)
        return nn.losses.cross_entropy(logits.astype(mx.float32), targets, reduction="mean"), logits

    step = nn.value_and_grad(model, loss_fn)
    (ref_loss, ref_logits), ref_grads = step()
    assert ref_logits.dtype == mx.float32

    assert model.set_compute_dtype(mx.bfloat16) is model
    assert all(m.compute_dtype == mx.bfloat16 for m in model.modules())
    (loss, logits), grads = step()
    assert logits.dtype == mx.bfloat16  # the forward pass ran in bf16
    assert {p.dtype for _, p in tree_flatten(model.parameters())} == {mx.float32}
    assert model["out"]["weight"].dtype == mx.float32
    assert {g.dtype for _, g in tree_flatten(grads)} == {mx.float32}
    np.testing.assert_allclose(loss.item(), ref_loss.item(), rtol=2e-2)
    for (k, g), (_, r) in zip(tree_flatten(grads), tree_flatten(ref_grads)):
        g, r = np.array(g), np.array(r)
        assert np.linalg.norm(g - r) <= 0.1 * np.linalg.norm(r) + 1e-4, k

    model.set_compute_dtype(None)
    (loss_again, logits_again), _ = step()
    assert logits_again.dtype == mx.float32
    np.testing.assert_allclose(loss_again.item(), ref_loss.item(), rtol=1e-6)


def test_compute_dtype_casts_inputs_and_rejects_non_float(rng):
    layer = nn.Linear(4, 2).set_compute_dtype(mx.bfloat16)
    x = mx.array(rng.standard_normal((3, 4)).astype(np.float32))
    assert layer(x).dtype == mx.bfloat16
    assert layer.weight.dtype == mx.bfloat16 and layer["weight"].dtype == mx.float32
    emb = nn.Embedding(5, 3).set_compute_dtype(mx.bfloat16)
    rows = emb(mx.array([1, 4]))
    assert rows.dtype == mx.bfloat16 and emb["weight"].dtype == mx.float32
    np.testing.assert_allclose(
        np.array(rows.astype(mx.float32)), np.array(emb["weight"])[[1, 4]], rtol=1e-2
    )
    with pytest.raises(ValueError):
        layer.set_compute_dtype(mx.int32)
    parent = nn.Sequential(nn.Linear(4, 4))
    parent.set_compute_dtype(mx.float16, recurse=False)
    assert parent.compute_dtype == mx.float16 and parent.layers[0].compute_dtype is None


def test_set_dtype_pure_bfloat16(rng):
    model = TwoLayer()
    model.set_dtype(mx.bfloat16)
    x = mx.array(rng.standard_normal((2, 5)).astype(np.float32)).astype(mx.bfloat16)
    assert model(x).dtype == mx.bfloat16
    _, grads = nn.value_and_grad(model, lambda: mx.sum(model(x)))()
    assert {g.dtype for _, g in tree_flatten(grads)} == {mx.bfloat16}


def test_batch_norm_running_stats_stay_float32_under_compute_dtype(rng):
    bn = nn.BatchNorm(3).set_compute_dtype(mx.bfloat16)
    y = bn(mx.array(rng.standard_normal((4, 3)).astype(np.float32)))
    assert y.dtype == mx.bfloat16
    assert bn["running_mean"].dtype == mx.float32 and bn["running_var"].dtype == mx.float32
