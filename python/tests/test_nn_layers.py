"""mlx.nn layers: forward passes against NumPy references (float64), shapes and errors."""
import math

import numpy as np
import pytest

import mlx.core as mx
import mlx.nn as nn
from mlx.utils import tree_flatten, tree_map


def np_(a):
    return np.array(a, dtype=np.float64)


def randomize(module, rng, scale=1.0):
    """Gives every parameter random values (so that e.g. norm weights are not all ones)."""
    module.update(
        tree_map(
            lambda p: mx.array((rng.standard_normal(p.shape) * scale).astype(np.float32)),
            module.parameters(),
        )
    )
    return module


def close(got, expected, rtol=1e-4, atol=1e-5):
    np.testing.assert_allclose(np_(got), expected, rtol=rtol, atol=atol)


# ---- linear layers -------------------------------------------------------------------------


def test_linear(rng):
    layer = nn.Linear(5, 3)
    assert layer.weight.shape == (3, 5) and layer.bias.shape == (3,)
    bound = 1 / math.sqrt(5)
    assert np.abs(np_(layer.weight)).max() <= bound and np.abs(np_(layer.bias)).max() <= bound
    x = rng.standard_normal((2, 4, 5)).astype(np.float32)
    close(layer(mx.array(x)), x @ np_(layer.weight).T + np_(layer.bias))
    no_bias = nn.Linear(5, 3, bias=False)
    assert set(no_bias.parameters()) == {"weight"}
    close(no_bias(mx.array(x)), x @ np_(no_bias.weight).T)
    assert "input_dims=5, output_dims=3, bias=True" in repr(layer)


def test_bilinear(rng):
    layer = nn.Bilinear(4, 3, 2)
    assert layer.weight.shape == (2, 3, 4) and layer.bias.shape == (2,)
    x1 = rng.standard_normal((5, 6, 4)).astype(np.float32)
    x2 = rng.standard_normal((5, 6, 3)).astype(np.float32)
    expected = np.einsum("abi,kji,abj->abk", x1, np_(layer.weight), x2) + np_(layer.bias)
    close(layer(mx.array(x1), mx.array(x2)), expected)
    no_bias = nn.Bilinear(4, 3, 2, bias=False)
    expected = np.einsum("abi,kji,abj->abk", x1, np_(no_bias.weight), x2)
    close(no_bias(mx.array(x1), mx.array(x2)), expected)


def test_identity_and_sequential(rng):
    x = mx.array(rng.standard_normal((3, 4)).astype(np.float32))
    assert nn.Identity(1, foo=2)(x) is x
    seq = nn.Sequential(nn.Linear(4, 8), nn.relu, nn.Linear(8, 2))
    h = np.maximum(np_(x) @ np_(seq.layers[0].weight).T + np_(seq.layers[0].bias), 0)
    close(seq(x), h @ np_(seq.layers[2].weight).T + np_(seq.layers[2].bias))
    keys = [k for k, _ in tree_flatten(seq.parameters())]
    assert keys == ["layers.0.weight", "layers.0.bias", "layers.2.weight", "layers.2.bias"]


def test_embedding(rng):
    emb = nn.Embedding(10, 4)
    assert emb.weight.shape == (10, 4)
    idx = rng.integers(0, 10, (2, 3)).astype(np.int32)
    out = emb(mx.array(idx))
    assert out.shape == (2, 3, 4)
    close(out, np_(emb.weight)[idx])
    h = rng.standard_normal((2, 4)).astype(np.float32)
    close(emb.as_linear(mx.array(h)), h @ np_(emb.weight).T)


# ---- dropout -------------------------------------------------------------------------------


def test_dropout_training_and_eval():
    x = mx.ones((200, 100))
    layer = nn.Dropout(0.25)
    y = np_(layer(x))
    assert set(np.unique(y)) <= {0.0, float(np.float32(1 / 0.75))}
    assert abs((y == 0).mean() - 0.25) < 0.02
    layer.eval()
    assert layer(x) is x
    assert nn.Dropout(0.0)(x) is x
    for p in (-0.1, 1.0):
        with pytest.raises(ValueError):
            nn.Dropout(p)


@pytest.mark.parametrize(
    "cls,shape", [(nn.Dropout2d, (4, 5, 6, 32)), (nn.Dropout3d, (4, 2, 3, 5, 32))]
)
def test_channel_dropout_zeroes_whole_channels(cls, shape):
    y = np_(cls(0.5)(mx.ones(shape)))
    per_channel = y.reshape(shape[0], -1, shape[-1])
    assert (per_channel == per_channel[:, :1]).all()  # one value per (sample, channel)
    assert set(np.unique(y)) <= {0.0, 2.0}
    assert 0 < (y == 0).mean() < 1
    unbatched = cls(0.5)(mx.ones(shape[1:]))
    assert unbatched.shape == shape[1:]
    with pytest.raises(ValueError):
        cls(0.5)(mx.ones((3, 4)))


# ---- normalization -------------------------------------------------------------------------


def np_layer_norm(x, w=None, b=None, eps=1e-5):
    y = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps)
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y


def test_layer_norm(rng):
    x = rng.standard_normal((2, 3, 8)).astype(np.float32) * 2 + 1
    layer = nn.LayerNorm(8)
    close(layer(mx.array(x)), np_layer_norm(np_(x)))
    randomize(layer, rng)
    close(layer(mx.array(x)), np_layer_norm(np_(x), np_(layer.weight), np_(layer.bias)))
    assert nn.LayerNorm(8, affine=False).parameters() == {}
    no_bias = randomize(nn.LayerNorm(8, eps=1e-3, bias=False), rng)
    assert set(no_bias.parameters()) == {"weight"}
    close(no_bias(mx.array(x)), np_layer_norm(np_(x), np_(no_bias.weight), eps=1e-3))


def test_rms_norm(rng):
    x = rng.standard_normal((4, 16)).astype(np.float32)
    layer = randomize(nn.RMSNorm(16, eps=1e-4), rng)
    expected = x / np.sqrt((np_(x) ** 2).mean(-1, keepdims=True) + 1e-4) * np_(layer.weight)
    close(layer(mx.array(x)), expected)


@pytest.mark.parametrize("pytorch_compatible", [False, True])
def test_group_norm(rng, pytorch_compatible):
    x = rng.standard_normal((2, 5, 3, 12)).astype(np.float32) * 3
    layer = randomize(nn.GroupNorm(4, 12, pytorch_compatible=pytorch_compatible), rng)
    xd = np_(x)
    if pytorch_compatible:
        g = xd.reshape(2, 15, 4, 3)
        axes = (1, 3)
    else:
        g = xd.reshape(2, 45, 4)  # channel c in group c % 4
        axes = (1,)
    g = (g - g.mean(axes, keepdims=True)) / np.sqrt(g.var(axes, keepdims=True) + 1e-5)
    expected = g.reshape(x.shape) * np_(layer.weight) + np_(layer.bias)
    close(layer(mx.array(x)), expected)
    assert nn.GroupNorm(4, 12, affine=False).parameters() == {}
    with pytest.raises(ValueError):
        nn.GroupNorm(5, 12)


def test_instance_norm(rng):
    x = rng.standard_normal((2, 4, 5, 3)).astype(np.float32)
    xd = np_(x)
    expected = (xd - xd.mean((1, 2), keepdims=True)) / np.sqrt(xd.var((1, 2), keepdims=True) + 1e-5)
    plain = nn.InstanceNorm(3)
    assert plain.parameters() == {}
    close(plain(mx.array(x)), expected)
    affine = randomize(nn.InstanceNorm(3, affine=True), rng)
    close(affine(mx.array(x)), expected * np_(affine.weight) + np_(affine.bias))


def test_batch_norm_training_eval_and_running_stats(rng):
    x = rng.standard_normal((8, 5, 4)).astype(np.float32) * 2 + 3
    layer = nn.BatchNorm(4, momentum=0.2)
    assert set(layer.parameters()) == {"weight", "bias", "running_mean", "running_var"}
    assert set(layer.trainable_parameters()) == {"weight", "bias"}
    randomize(layer, rng)
    layer.update({"running_mean": mx.zeros((4,)), "running_var": mx.ones((4,))})
    xd = np_(x)
    mean, var = xd.mean((0, 1)), xd.var((0, 1))
    y = layer(mx.array(x))
    close(y, (xd - mean) / np.sqrt(var + 1e-5) * np_(layer.weight) + np_(layer.bias))
    close(layer.running_mean, 0.2 * mean)
    close(layer.running_var, 0.8 + 0.2 * var)
    layer.eval()
    rm, rv = np_(layer.running_mean), np_(layer.running_var)
    close(layer(mx.array(x)), (xd - rm) / np.sqrt(rv + 1e-5) * np_(layer.weight) + np_(layer.bias))
    close(layer.running_mean, rm)  # unchanged in eval mode
    layer.unfreeze()
    assert set(layer.trainable_parameters()) == {"weight", "bias"}
    with pytest.raises(ValueError):
        layer(mx.zeros((2, 2, 2, 2, 4)))


def test_batch_norm_without_running_stats_or_affine(rng):
    x = rng.standard_normal((6, 3)).astype(np.float32)
    layer = nn.BatchNorm(3, affine=False, track_running_stats=False)
    assert layer.parameters() == {}
    layer.eval()
    xd = np_(x)
    close(layer(mx.array(x)), (xd - xd.mean(0)) / np.sqrt(xd.var(0) + 1e-5))


# ---- attention and transformers ------------------------------------------------------------


def np_softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def np_linear(p, x):
    y = x @ np_(p["weight"]).T
    return y + np_(p["bias"]) if "bias" in p else y


def np_mha(p, q, k, v, heads, mask=None):
    def split(x):
        b, length, d = x.shape
        return x.reshape(b, length, heads, d // heads).transpose(0, 2, 1, 3)

    qh = split(np_linear(p["query_proj"], q))
    kh = split(np_linear(p["key_proj"], k))
    vh = split(np_linear(p["value_proj"], v))
    scores = qh @ kh.transpose(0, 1, 3, 2) / math.sqrt(qh.shape[-1])
    if mask is not None:
        scores = scores + mask
    out = np_softmax(scores) @ vh
    b, _, length, _ = out.shape
    return np_linear(p["out_proj"], out.transpose(0, 2, 1, 3).reshape(b, length, -1))


@pytest.mark.parametrize("bias", [False, True])
def test_multi_head_attention(rng, bias):
    mha = nn.MultiHeadAttention(16, 4, bias=bias)
    assert ("bias" in mha.query_proj) == bias
    q = rng.standard_normal((2, 5, 16)).astype(np.float32)
    kv = rng.standard_normal((2, 7, 16)).astype(np.float32)
    p = mha.parameters()
    close(mha(mx.array(q), mx.array(kv), mx.array(kv)), np_mha(p, q, kv, kv, 4))
    mask = np_(nn.MultiHeadAttention.create_additive_causal_mask(5))
    close(
        mha(mx.array(q), mx.array(q), mx.array(q), mask=mx.array(mask.astype(np.float32))),
        np_mha(p, q, q, q, 4, mask),
    )


def test_multi_head_attention_input_and_output_dims(rng):
    mha = nn.MultiHeadAttention(
        8, 2, query_input_dims=3, key_input_dims=5, value_input_dims=6, value_dims=4,
        value_output_dims=9,
    )
    shapes = {k: tuple(v.shape) for k, v in tree_flatten(mha.parameters())}
    assert shapes == {
        "query_proj.weight": (8, 3), "key_proj.weight": (8, 5),
        "value_proj.weight": (4, 6), "out_proj.weight": (9, 4),
    }
    q = rng.standard_normal((1, 2, 3)).astype(np.float32)
    k = rng.standard_normal((1, 4, 5)).astype(np.float32)
    v = rng.standard_normal((1, 4, 6)).astype(np.float32)
    out = mha(mx.array(q), mx.array(k), mx.array(v))
    close(out, np_mha(mha.parameters(), q, k, v, 2))
    with pytest.raises(ValueError):
        nn.MultiHeadAttention(10, 3)


def test_causal_mask():
    m = np_(nn.MultiHeadAttention.create_additive_causal_mask(4))
    assert m.shape == (4, 4)
    assert (m[np.tril_indices(4)] == 0).all()
    assert (m[np.triu_indices(4, 1)] <= -1e9).all() and np.isfinite(m).all()
    half = nn.MultiHeadAttention.create_additive_causal_mask(3, dtype=mx.float16)
    assert half.dtype == mx.float16 and np.isfinite(np_(half)).all()


def np_encoder_layer(p, x, heads, mask, norm_first, act):
    def mlp(y):
        return np_linear(p["linear2"], act(np_linear(p["linear1"], y)))

    def ln(name, y):
        return np_layer_norm(y, np_(p[name]["weight"]), np_(p[name]["bias"]))

    if norm_first:
        y = ln("ln1", x)
        x = x + np_mha(p["attention"], y, y, y, heads, mask)
        return x + mlp(ln("ln2", x))
    x = ln("ln1", x + np_mha(p["attention"], x, x, x, heads, mask))
    return ln("ln2", x + mlp(x))


@pytest.mark.parametrize("norm_first", [True, False])
def test_transformer_encoder(rng, norm_first):
    enc = randomize(nn.TransformerEncoder(2, 8, 2, mlp_dims=12, norm_first=norm_first), rng, 0.5)
    x = rng.standard_normal((2, 5, 8)).astype(np.float32)
    mask = np_(nn.MultiHeadAttention.create_additive_causal_mask(5))
    p = enc.parameters()
    y = np_(x)
    for lp in p["layers"]:
        y = np_encoder_layer(lp, y, 2, mask, norm_first, lambda h: np.maximum(h, 0))
    y = np_layer_norm(y, np_(p["ln"]["weight"]), np_(p["ln"]["bias"]))
    close(enc(mx.array(x), mx.array(mask.astype(np.float32))), y, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("norm_first", [True, False])
def test_transformer_decoder_layer(rng, norm_first):
    layer = randomize(nn.TransformerDecoderLayer(8, 2, 16, norm_first=norm_first), rng, 0.5)
    p = layer.parameters()
    x = rng.standard_normal((1, 4, 8)).astype(np.float32)
    mem = rng.standard_normal((1, 6, 8)).astype(np.float32)
    mask = np_(nn.MultiHeadAttention.create_additive_causal_mask(4))

    def ln(name, y):
        return np_layer_norm(y, np_(p[name]["weight"]), np_(p[name]["bias"]))

    def mlp(y):
        return np_linear(p["linear2"], np.maximum(np_linear(p["linear1"], y), 0))

    y = np_(x)
    if norm_first:
        h = ln("ln1", y)
        y = y + np_mha(p["self_attention"], h, h, h, 2, mask)
        h = ln("ln2", y)
        y = y + np_mha(p["cross_attention"], h, mem, mem, 2)
        y = y + mlp(ln("ln3", y))
    else:
        y = ln("ln1", y + np_mha(p["self_attention"], y, y, y, 2, mask))
        y = ln("ln2", y + np_mha(p["cross_attention"], y, mem, mem, 2))
        y = ln("ln3", y + mlp(y))
    got = layer(mx.array(x), mx.array(mem), mx.array(mask.astype(np.float32)), None)
    close(got, y, rtol=1e-3, atol=1e-4)


def test_transformer_shapes_defaults_and_gelu(rng):
    model = nn.Transformer(dims=8, num_heads=2, num_encoder_layers=1, num_decoder_layers=2,
                           activation=nn.GELU())
    assert len(model.encoder.layers) == 1 and len(model.decoder.layers) == 2
    assert model.encoder.layers[0].linear1.weight.shape == (32, 8)  # mlp_dims = 4 * dims
    src = mx.array(rng.standard_normal((2, 3, 8)).astype(np.float32))
    tgt = mx.array(rng.standard_normal((2, 4, 8)).astype(np.float32))
    out = model(src, tgt, None, nn.MultiHeadAttention.create_additive_causal_mask(4), None)
    assert out.shape == (2, 4, 8)
    custom = nn.Transformer(8, 2, custom_encoder=nn.Identity(), num_decoder_layers=1)
    assert isinstance(custom.encoder, nn.Identity)


def test_transformer_checkpoint_gives_same_values_and_gradients(rng):
    mx.random.seed(3)
    plain = nn.Transformer(8, 2, 2, 2, mlp_dims=16)
    ckpt = nn.Transformer(8, 2, 2, 2, mlp_dims=16, checkpoint=True)
    ckpt.update(plain.parameters())
    src = mx.array(rng.standard_normal((2, 3, 8)).astype(np.float32))
    tgt = mx.array(rng.standard_normal((2, 4, 8)).astype(np.float32))
    mask = nn.MultiHeadAttention.create_additive_causal_mask(4)

    def loss_of(model):
        return nn.value_and_grad(model, lambda: mx.sum(model(src, tgt, None, mask, None) ** 2))()

    (l1, g1), (l2, g2) = loss_of(plain), loss_of(ckpt)
    close(l2, np_(l1), rtol=1e-5)
    for (k, a), (_, b) in zip(tree_flatten(g1), tree_flatten(g2)):
        close(b, np_(a), rtol=1e-4, atol=1e-5)


# ---- positional encodings ------------------------------------------------------------------


def np_rope(x, dims, traditional, base, scale, offset):
    length = x.shape[-2]
    pos = (np.arange(length) + offset)[:, None] * scale
    theta = pos * base ** (-np.arange(0, dims, 2) / dims)
    cos, sin = np.cos(theta), np.sin(theta)
    out = x.copy()
    if traditional:
        a, b = x[..., 0:dims:2], x[..., 1:dims:2]
        out[..., 0:dims:2] = a * cos - b * sin
        out[..., 1:dims:2] = a * sin + b * cos
    else:
        a, b = x[..., : dims // 2], x[..., dims // 2 : dims]
        out[..., : dims // 2] = a * cos - b * sin
        out[..., dims // 2 : dims] = a * sin + b * cos
    return out


@pytest.mark.parametrize("traditional", [False, True])
def test_rope(rng, traditional):
    x = rng.standard_normal((2, 3, 6, 8)).astype(np.float32)
    rope = nn.RoPE(6, traditional=traditional, base=500, scale=0.5)
    close(rope(mx.array(x), offset=3), np_rope(np_(x), 6, traditional, 500, 0.5, 3))
    close(nn.RoPE(8)(mx.array(x)), np_rope(np_(x), 8, False, 10000, 1.0, 0))
    assert rope.parameters() == {}


@pytest.mark.parametrize("cos_first,full_turns", [(False, False), (True, True)])
def test_sinusoidal_positional_encoding(rng, cos_first, full_turns):
    pe = nn.SinusoidalPositionalEncoding(8, min_freq=0.01, max_freq=2, cos_first=cos_first,
                                         full_turns=full_turns)
    assert pe.parameters() == {}
    x = rng.uniform(0, 20, (3, 4)).astype(np.float32)
    sig = np.exp(np.linspace(np.log(2), np.log(0.01), 4))
    if full_turns:
        sig = sig * 2 * np.pi
    y = np_(x)[..., None] * sig
    parts = [np.cos(y), np.sin(y)] if cos_first else [np.sin(y), np.cos(y)]
    expected = np.concatenate(parts, -1) * math.sqrt(2 / 8)
    close(pe(mx.array(x)), expected, rtol=1e-4, atol=1e-5)
    scaled = nn.SinusoidalPositionalEncoding(8, scale=1.0)
    assert scaled(mx.array([1.0])).shape == (1, 8)


def test_alibi(rng):
    scores = rng.standard_normal((2, 4, 3, 5)).astype(np.float32)
    slopes = 2.0 ** (-8 * np.arange(1, 5) / 4)
    q = np.arange(2, 5)[:, None]  # offset 2: queries at positions 2..4
    k = np.arange(5)[None, :]
    bias = -np.abs(q - k)[None, None] * slopes[None, :, None, None]
    mask = rng.standard_normal((3, 5)).astype(np.float32)
    alibi = nn.ALiBi()
    close(alibi(mx.array(scores), offset=2), scores + bias)
    close(alibi(mx.array(scores), offset=2, mask=mx.array(mask)), scores + bias + mask)
    m = nn.ALiBi.create_alibi_matrix(3, 5, 4, 0)
    assert m.shape == (1, 4, 3, 5)
    assert nn.ALiBi.create_alibi_slope(4).shape == (4, 1, 1)


# ---- recurrent layers ----------------------------------------------------------------------


def np_sigmoid(x):
    return 1 / (1 + np.exp(-x))


@pytest.mark.parametrize("batched", [True, False])
def test_rnn(rng, batched):
    layer = nn.RNN(3, 5, nonlinearity=nn.relu)
    shape = (2, 4, 3) if batched else (4, 3)
    x = rng.standard_normal(shape).astype(np.float32)
    p = {k: np_(v) for k, v in layer.parameters().items()}
    h = np.zeros(shape[:-2] + (5,))
    expected = []
    for t in range(4):
        h = np.maximum(x[..., t, :] @ p["Wxh"].T + p["bias"] + h @ p["Whh"].T, 0)
        expected.append(h)
    close(layer(mx.array(x)), np.stack(expected, -2))
    h0 = rng.standard_normal(shape[:-2] + (5,)).astype(np.float32)
    tanh_layer = nn.RNN(3, 5, bias=False)
    q = {k: np_(v) for k, v in tanh_layer.parameters().items()}
    h = np_(h0)
    for t in range(4):
        h = np.tanh(x[..., t, :] @ q["Wxh"].T + h @ q["Whh"].T)
    close(tanh_layer(mx.array(x), mx.array(h0))[..., -1, :], h)
    with pytest.raises(ValueError):
        nn.RNN(3, 5, nonlinearity="relu")


def test_gru(rng):
    layer = nn.GRU(3, 4)
    p = {k: np_(v) for k, v in layer.parameters().items()}
    x = rng.standard_normal((2, 5, 3)).astype(np.float32)
    h = np.zeros((2, 4))
    expected = []
    for t in range(5):
        gx = x[:, t] @ p["Wx"].T + p["b"]
        gh = h @ p["Wh"].T
        r = np_sigmoid(gx[:, :4] + gh[:, :4])
        z = np_sigmoid(gx[:, 4:8] + gh[:, 4:8])
        n = np.tanh(gx[:, 8:] + r * (gh[:, 8:] + p["bhn"]))
        h = (1 - z) * n + z * h
        expected.append(h)
    close(layer(mx.array(x)), np.stack(expected, 1))
    assert nn.GRU(3, 4, bias=False)(mx.array(x[0])).shape == (5, 4)


def test_lstm(rng):
    layer = nn.LSTM(3, 4)
    p = {k: np_(v) for k, v in layer.parameters().items()}
    x = rng.standard_normal((2, 5, 3)).astype(np.float32)
    h0 = rng.standard_normal((2, 4)).astype(np.float32)
    c0 = rng.standard_normal((2, 4)).astype(np.float32)
    h, c = np_(h0), np_(c0)
    hs, cs = [], []
    for t in range(5):
        g = x[:, t] @ p["Wx"].T + h @ p["Wh"].T + p["bias"]
        i, f, gg, o = np.split(g, 4, axis=-1)
        c = np_sigmoid(f) * c + np_sigmoid(i) * np.tanh(gg)
        h = np_sigmoid(o) * np.tanh(c)
        hs.append(h)
        cs.append(c)
    got_h, got_c = layer(mx.array(x), mx.array(h0), mx.array(c0))
    close(got_h, np.stack(hs, 1))
    close(got_c, np.stack(cs, 1))
    h_only, c_only = nn.LSTM(3, 4, bias=False)(mx.array(x[0]))
    assert h_only.shape == c_only.shape == (5, 4)


# ---- upsampling ----------------------------------------------------------------------------


def np_taps(in_size, out_size, scale, mode, align_corners):
    """For each output index, the (input index, weight) pairs of the interpolation."""
    taps = []
    for o in range(out_size):
        if mode == "nearest":
            taps.append([(min(int(math.floor(o / scale)), in_size - 1), 1.0)])
            continue
        if align_corners:
            pos = o * (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
        else:
            pos = (o + 0.5) / scale - 0.5
        if mode == "linear":
            pos = max(pos, 0.0)
            lo = min(int(math.floor(pos)), in_size - 1)
            t = pos - lo
            taps.append([(lo, 1 - t), (min(lo + 1, in_size - 1), t)])
        else:
            a, base = -0.75, int(math.floor(pos))
            row = []
            for k in (-1, 0, 1, 2):
                d = abs(pos - (base + k))
                w = ((a + 2) * d**3 - (a + 3) * d**2 + 1) if d <= 1 else (
                    a * d**3 - 5 * a * d**2 + 8 * a * d - 4 * a)
                row.append((min(max(base + k, 0), in_size - 1), w))
            taps.append(row)
    return taps


def np_upsample_2d(x, scales, mode, align_corners):
    n, h, w, c = x.shape
    oh, ow = int(h * scales[0]), int(w * scales[1])
    th = np_taps(h, oh, scales[0], mode, align_corners)
    tw = np_taps(w, ow, scales[1], mode, align_corners)
    out = np.zeros((n, oh, ow, c))
    for i in range(oh):
        for j in range(ow):
            for hi, wh in th[i]:
                for wi, ww in tw[j]:
                    out[:, i, j] += wh * ww * x[:, hi, wi]
    return out


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_upsample_2d(rng, mode, align_corners):
    x = rng.standard_normal((2, 3, 4, 2)).astype(np.float32)
    scales = (2, 1.5)
    layer = nn.Upsample(scales, mode=mode, align_corners=align_corners)
    out = layer(mx.array(x))
    assert out.shape == (2, 6, 6, 2)
    close(out, np_upsample_2d(np_(x), scales, mode, align_corners and mode != "nearest"))


def test_upsample_known_values_and_errors():
    x = mx.reshape(mx.array([0.0, 1.0, 2.0]), (1, 3, 1))
    close(nn.Upsample(2)(x).reshape(-1), [0, 0, 1, 1, 2, 2])
    lin = nn.Upsample(5 / 3, mode="linear", align_corners=True)(x)
    close(lin.reshape(-1), [0, 0.5, 1, 1.5, 2])
    assert nn.Upsample((2, 3))(mx.zeros((1, 2, 2, 1))).shape == (1, 4, 6, 1)
    assert nn.Upsample(2, mode="linear")(mx.zeros((1, 2, 2, 2, 3))).shape == (1, 4, 4, 4, 3)
    with pytest.raises(ValueError):
        nn.Upsample(2, mode="area")
    with pytest.raises(ValueError):
        nn.Upsample((2, 2))(mx.zeros((1, 4, 1)))
    with pytest.raises(ValueError):
        nn.Upsample(2)(mx.zeros((4, 1)))


def test_upsample_gradient_spreads_to_sources():
    x = mx.reshape(mx.arange(4, dtype=mx.float32), (1, 4, 1))
    grad = mx.grad(lambda a: mx.sum(nn.Upsample(2, mode="linear")(a)))(x)
    close(mx.sum(grad), 8.0)  # every output's weights sum to one
