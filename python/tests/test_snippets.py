"""The fine-tuning patterns MLX users write, run as written."""
import numpy as np

import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
from mlx.utils import tree_map


class LinearRegression(nn.Module):
    def __init__(self, dims):
        super().__init__()
        self.w = mx.zeros((dims,))
        self.b = mx.array(0.0)

    def __call__(self, x):
        return x @ self.w + self.b


def data(rng, n=64, dims=3):
    X = rng.standard_normal((n, dims)).astype(np.float32)
    w = np.array([1.5, -2.0, 0.5], dtype=np.float32)
    return mx.array(X), mx.array(X @ w + 0.25), w


def test_module_with_array_attributes_trained_with_mx_grad_and_update(rng):
    X, y, w_true = data(rng)
    model = LinearRegression(3)

    def loss_fn(model, X, y):
        return mx.mean(mx.square(model(X) - y))

    grad_fn = mx.grad(loss_fn)
    for _ in range(200):
        grads = grad_fn(model, X, y)
        model.update(tree_map(lambda p, g: p - 0.1 * g, model.parameters(), grads))
        mx.eval(model.parameters())
    np.testing.assert_allclose(np.array(model.w), w_true, atol=1e-3)
    assert abs(model.b.item() - 0.25) < 1e-3


def test_nn_value_and_grad_with_an_optimizer(rng):
    X, y, w_true = data(rng)
    model = nn.Sequential(nn.Linear(3, 16), nn.ReLU(), nn.Linear(16, 1))
    optimizer = optim.Adam(learning_rate=1e-2)

    def loss_fn(model, X, y):
        return nn.losses.mse_loss(model(X).squeeze(-1), y)

    loss_and_grad = nn.value_and_grad(model, loss_fn)
    first = None
    for _ in range(150):
        loss, grads = loss_and_grad(model, X, y)
        optimizer.update(model, grads)
        mx.eval(model.parameters(), optimizer.state)
        first = loss.item() if first is None else first
    assert loss.item() < 0.1 * first


def test_transformer_encoder_positional_arguments():
    num_layers, dims, num_heads, mlp_dims, dropout = 2, 32, 4, 64, 0.1
    encoder = nn.TransformerEncoder(num_layers, dims, num_heads, mlp_dims, dropout)
    encoder.eval()
    x = mx.random.normal((2, 5, dims))
    mask = nn.MultiHeadAttention.create_additive_causal_mask(5)
    out = encoder(x, mask)
    assert out.shape == (2, 5, dims)
    assert np.isfinite(np.array(out)).all()


def test_transformer_called_with_all_masks():
    model = nn.Transformer(dims=512, num_heads=8, num_encoder_layers=6, num_decoder_layers=6)
    model.eval()
    src = mx.random.normal((1, 7, 512))
    tgt = mx.random.normal((1, 5, 512))
    src_mask = mx.zeros((7, 7))
    tgt_mask = nn.MultiHeadAttention.create_additive_causal_mask(5)
    memory_mask = mx.zeros((5, 7))
    out = model(src, tgt, src_mask, tgt_mask, memory_mask)
    assert out.shape == (1, 5, 512)
    assert np.isfinite(np.array(out)).all()
