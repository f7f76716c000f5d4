"""Shapeless compile (mx.compile(f, shapeless=True)) replayed on shapes other than the first
trace's: axes of size 1 in the first trace must not be baked into reductions, broadcasts,
reshapes, squeezes or gradients. Every case compares with the uncompiled function."""
import numpy as np
import pytest

import mlx.core as mx

RNG = np.random.default_rng(0)


def rand(shape, dtype=mx.float32):
    return mx.array(RNG.standard_normal(shape).astype(np.float32)).astype(dtype)


def assert_same(got, want, atol=1e-5):
    got = got if isinstance(got, (list, tuple)) else [got]
    want = want if isinstance(want, (list, tuple)) else [want]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(np.array(g.astype(mx.float32)), np.array(w.astype(mx.float32)),
                                   rtol=1e-5, atol=atol)


def replays(f, *calls):
    """Compiles f shapelessly, then calls it on each list of shapes in turn (the first call
    traces), comparing with f itself."""
    c = mx.compile(f, shapeless=True)
    for shapes in calls:
        args = [rand(s) for s in shapes]
        assert_same(c(*args), f(*args))


REDUCTIONS = {
    "sum": lambda x: mx.sum(x, axis=1),
    "sum_keepdims": lambda x: mx.sum(x, axis=1, keepdims=True),
    "prod": lambda x: mx.prod(x, axis=1),
    "max": lambda x: mx.max(x, axis=1),
    "min": lambda x: mx.min(x, axis=1),
    "mean": lambda x: mx.mean(x, axis=1),
    "var": lambda x: mx.var(x, axis=1),
    "std_keepdims": lambda x: mx.std(x, axis=1, keepdims=True),
    "all": lambda x: mx.all(x > 0, axis=1),
    "any": lambda x: mx.any(x > 0, axis=1),
    "logsumexp": lambda x: mx.logsumexp(x, axis=1),
    "argmax": lambda x: mx.argmax(x, axis=1),
    "norm": lambda x: mx.linalg.norm(x, axis=1),
    # Fused: an elementwise region with the reduction as its epilogue.
    "exp_sum": lambda x: mx.sum(mx.exp(x) * 2, axis=1),
    "centered": lambda x: x - mx.mean(x, axis=-1, keepdims=True),
    "softmax_by_hand": lambda x: mx.exp(x) / mx.sum(mx.exp(x), axis=-1, keepdims=True),
}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reduction_over_an_axis_of_size_one_in_the_first_trace(name):
    # The reported bug: sum over axis 1 traced with (2, 1) became a no-op (or a squeeze) and a
    # later (2, 3) input raised or came back unreduced.
    replays(REDUCTIONS[name], [(2, 1)], [(2, 3)], [(5, 1)], [(4, 7)])


def test_reductions_over_several_and_leading_axes():
    replays(lambda x: mx.sum(x * 2, axis=(1, 2)), [(2, 1, 1)], [(2, 3, 4)])
    replays(lambda x: mx.sum(mx.exp(x), axis=1), [(2, 1, 4)], [(2, 3, 4)])
    replays(lambda x: mx.sum(x, axis=0) + 1, [(1, 3)], [(4, 3)])
    replays(lambda x: x / mx.sum(x, keepdims=True), [(1, 1)], [(2, 3)])
    replays(lambda x: mx.std(x), [(1, 1)], [(2, 3)])


def test_reduction_dtypes():
    for dtype in (mx.int32, mx.float16, mx.bfloat16, mx.bool_):
        f = lambda x: mx.sum(x.astype(dtype), axis=1)
        replays(f, [(2, 1)], [(2, 3)])


GRADIENTS = {
    "sum": lambda x: (mx.sum(x, axis=1) ** 2).sum(),
    "mean": lambda x: (mx.mean(x, axis=1) ** 2).sum(),
    "max": lambda x: (mx.max(x, axis=1) ** 2).sum(),
    "prod": lambda x: (mx.prod(x, axis=1) ** 2).sum(),
    "var": lambda x: mx.var(x, axis=1).sum(),
    "logsumexp": lambda x: (mx.logsumexp(x, axis=1) ** 2).sum(),
    "softmax": lambda x: (mx.softmax(x, axis=1) ** 2).sum(),
    "sum_all": lambda x: mx.sum(x * x),
}


@pytest.mark.parametrize("name", sorted(GRADIENTS))
def test_gradient_of_a_reduction_traced_with_size_one(name):
    replays(mx.grad(GRADIENTS[name]), [(2, 1)], [(2, 3)], [(3, 1)])


def test_gradient_through_broadcasts_traced_without_broadcasting():
    # Traced with equal shapes, nothing was broadcast; replayed, x or y is stretched and its
    # gradient must be summed back to its own shape.
    loss = lambda x, y: ((x * y + x) ** 2).sum()
    replays(mx.grad(loss, argnums=(0, 1)), [(2, 1), (2, 1)], [(2, 1), (2, 3)], [(2, 4), (2, 1)],
            [(1, 3), (4, 3)])
    # A bias added to a batch traced with one row.
    replays(mx.grad(lambda x, b: mx.sum(mx.tanh(x + b)), argnums=1), [(1, 4), (1, 4)],
            [(6, 4), (1, 4)])
    # Different ranks: the missing leading axes are summed too.
    replays(mx.grad(lambda x, y: ((x * y) ** 2).sum(), argnums=1), [(2, 1), (1,)],
            [(2, 3), (1,)], [(2, 3), (3,)])


def test_value_and_grad_of_a_layer():
    w = rand((3, 4))

    def loss(x):
        h = mx.maximum(x @ w, 0.0)
        return mx.mean((h - mx.mean(h, axis=-1, keepdims=True)) ** 2)

    replays(mx.value_and_grad(loss), [(1, 3)], [(5, 3)], [(2, 3)])


def test_broadcasts_of_size_one_axes():
    replays(lambda x, y: x + y, [(2, 1), (2, 3)], [(2, 4), (2, 4)], [(2, 1), (1, 5)])
    replays(lambda x, y: mx.where(x > 0, x, y), [(2, 1), (2, 1)], [(2, 1), (2, 3)])
    replays(lambda x, y: mx.broadcast_arrays(x, y)[0] * 1, [(2, 1), (2, 1)], [(2, 1), (2, 3)])
    replays(lambda x, y: mx.broadcast_arrays(x, y)[1] * 1, [(1, 1), (1, 1)], [(3, 1), (1, 4)])
    replays(lambda x: mx.zeros_like(x) + mx.ones_like(x) * 2 + mx.full_like(x, 3.0),
            [(2, 1)], [(2, 3)])
    replays(lambda x: mx.exp(x - mx.max(x, axis=-1, keepdims=True)), [(2, 1)], [(2, 3)])
    # Fill values that do not fit the shape are refused, as without compile.
    with pytest.raises(ValueError, match="full_like"):
        mx.compile(lambda x: mx.full_like(x, mx.ones((2, 2, 3))), shapeless=True)(mx.ones((2, 3)))


def test_reshapes_with_an_inferred_axis_that_was_one():
    replays(lambda x: x.reshape(-1) * 2, [(2, 1)], [(2, 3)])
    replays(lambda x: x.reshape(-1) * 2, [(1, 1)], [(2, 3)])
    replays(lambda x: x.reshape(x.shape[0], -1) * 2, [(2, 1, 1)], [(2, 3, 4)])
    replays(lambda x: x.reshape(x.shape[0], -1) * 2, [(1, 1, 1)], [(2, 3, 4)])
    replays(lambda x: x.reshape(-1, x.shape[-1]) * 2, [(1, 1, 3)], [(2, 4, 3)])
    replays(lambda x: mx.flatten(x) * 2, [(2, 1)], [(2, 3)])
    replays(lambda x: mx.flatten(x, 1, 2) * 2, [(2, 1, 1, 3)], [(2, 3, 4, 3)])
    replays(lambda x: mx.unflatten(x, 1, (-1, 1)) * 2, [(2, 1)], [(2, 3)])
    # A reshape to the traced input's own shape is not the identity on other inputs.
    replays(lambda x: x.reshape(x.shape[0], -1) + 1, [(2, 1)], [(3, 5)])


def test_squeeze_and_expand():
    replays(lambda x: mx.squeeze(x, axis=1) * 2, [(2, 1)], [(4, 1)])
    replays(lambda x: mx.expand_dims(x, 1) * 2, [(2, 1)], [(2, 3)])
    replays(lambda x: mx.sum(mx.expand_dims(x, 1), axis=2), [(2, 1)], [(2, 3)])
    replays(lambda x: mx.squeeze(mx.sum(x, axis=1, keepdims=True), 1), [(2, 1)], [(2, 3)])
    # squeeze() without axes squeezes what had size 1 in the trace; an input where that axis
    # is longer cannot be squeezed and says so (never a wrong shape).
    c = mx.compile(lambda x: mx.squeeze(x) * 2, shapeless=True)
    assert c(mx.ones((2, 1))).shape == (2,)
    assert c(mx.ones((5, 1))).shape == (5,)
    with pytest.raises(ValueError, match="squeeze"):
        c(mx.ones((2, 3)))


def test_shape_dependent_ops_refuse_rather_than_bake():
    for f in (lambda x: mx.repeat(x, 2, axis=1), lambda x: mx.tile(x, (1, 2))):
        with pytest.raises(ValueError, match="[Ss]hapeless"):
            mx.compile(f, shapeless=True)(mx.ones((2, 1)))


def test_shapeless_export_of_a_reduction_traced_with_size_one(tmp_path):
    path = str(tmp_path / "r.mlxfn")
    f = lambda x, b: (mx.sum(mx.exp(x), axis=1, keepdims=True) + b, mx.mean(x, axis=-1))
    mx.export_function(path, f, mx.ones((2, 1)), mx.ones((2, 1)), shapeless=True)
    g = mx.import_function(path)
    for shapes in ([(2, 1), (2, 1)], [(3, 4), (3, 1)], [(1, 6), (1, 6)]):
        args = [rand(s) for s in shapes]
        assert_same(list(g(*args)), list(f(*args)))


def test_unbroadcast_gradients_can_be_taken_again():
    # grad of grad runs the rules of the nodes the first gradient made (DynamicUnbroadcast).
    f = lambda x, y: mx.sum(mx.sin(x * y))
    g = lambda x, y: mx.sum(mx.grad(f, argnums=1)(x, y) ** 2)
    replays(mx.grad(g), [(2, 1), (2, 1)], [(2, 3), (2, 1)])


def test_shapeless_export_of_a_gradient_through_broadcasts(tmp_path):
    # The exported trace holds DynamicUnbroadcast steps; the imported function sums over the
    # axes its own inputs broadcast.
    path = str(tmp_path / "g.mlxfn")
    f = mx.grad(lambda x, b: mx.sum(mx.tanh(x * b)), argnums=(0, 1))
    mx.export_function(path, f, mx.ones((1, 4)), mx.ones((1, 4)), shapeless=True)
    g = mx.import_function(path)
    for shapes in ([(1, 4), (1, 4)], [(5, 4), (1, 4)], [(3, 1), (3, 6)]):
        args = [rand(s) for s in shapes]
        assert_same(list(g(*args)), list(f(*args)))


def test_vmap_of_broadcasts_and_their_gradients():
    # vmap lines operands up with expand_dims (a reshape there would bake the first shapes).
    replays(mx.vmap(lambda x, y: x * y, in_axes=(0, None)), [(2, 1), (1,)], [(2, 3), (3,)])
    g = mx.grad(lambda x, y: mx.sum((x * y) ** 2), argnums=(0, 1))
    replays(mx.vmap(g), [(2, 1), (2, 1)], [(2, 3), (2, 1)], [(2, 1), (2, 4)])
    replays(mx.vmap(g, in_axes=(0, None)), [(2, 1), (1,)], [(2, 3), (1,)], [(2, 3), (3,)])
    replays(mx.vmap(g, in_axes=(None, 0)), [(1,), (2, 1)], [(3,), (2, 1)], [(1,), (2, 4)])
    replays(mx.vmap(g, in_axes=(1, 1)), [(1, 2), (1, 2)], [(3, 2), (1, 2)], [(1, 2), (4, 2)])
    bias = mx.grad(lambda x, b: mx.sum(mx.tanh(x + b)), argnums=1)
    replays(mx.vmap(bias, in_axes=(0, None)), [(2, 1, 3), (3,)], [(2, 5, 3), (3,)])


def test_forward_mode_through_shape_lending_operands():
    # A constant exponent broadcast against x (x only lends its shape) has no tangent: its
    # derivative (log of a negative x) must not be computed.
    x = mx.array([[-1.5], [0.5]])
    for f in (lambda b: mx.jvp(lambda d: d ** 2, [b], [b])[1][0],
              lambda b: mx.jvp(lambda c: mx.grad(lambda d: mx.sum(d ** 2))(c), [b], [b])[1][0]):
        got = mx.compile(f, shapeless=True)(x)
        np.testing.assert_allclose(np.array(got), np.array(f(x)), rtol=1e-6)
    replays(lambda x, y, t: mx.jvp(lambda b: mx.grad(lambda a, c: mx.sum((a * c) ** 2),
                                                     argnums=1)(x, b), [y], [t])[1][0],
            [(2, 1), (2, 1), (2, 1)], [(2, 3), (2, 1), (2, 1)])


def test_slices_that_cover_the_first_input_are_not_the_identity():
    # x[:, :1] of an (n, 1) input covers it, but not an (n, 3) one: the trace refuses the
    # slice (as it does x[:, :1] of an (n, 3) input) instead of baking the identity.
    for f in (lambda x: x[:, :1] * 2, lambda x: x[:, 0] * 2, lambda x: x[0] + 1,
              lambda x: mx.topk(x, 1, axis=-1)):
        with pytest.raises(ValueError, match="Slice"):
            mx.compile(f, shapeless=True)(mx.ones((1, 1)))
    # Slices to the end of every axis, and one split piece, are the identity for any shape.
    replays(lambda x: x[:, :] * 2, [(2, 1)], [(2, 3)])
    replays(lambda x: x[...] * 2, [(1, 1)], [(4, 3)])
    replays(lambda x: mx.split(x, 1, axis=1)[0] * 2, [(2, 1)], [(2, 3)])
