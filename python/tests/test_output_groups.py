"""The outputs of one multi-output step (split, a fused backward, an optimizer's update) keep
each other alive until the step runs, and are freed together once nothing holds any of them,
whatever order their handles are dropped in. Freed is observed through what they hold: the
evaluated input they read (its buffer returns to the allocator's active bytes)."""

import random

import mlx.core as mx
import numpy as np
import pytest

N = 1024  # outputs of one step: large enough that a quadratic sibling scheme would show


def held_input():
    """An evaluated array of 4 MB that only the step built on it will hold."""
    x = mx.full((1024, 1024), 2.0)
    mx.eval(x)
    return x


def settle():
    mx.synchronize()
    return mx.get_active_memory()


@pytest.mark.parametrize("order", ["forward", "reverse", "random", "all at once"])
def test_unevaluated_outputs_are_freed_in_any_order(order):
    base = settle()
    parts = mx.split(held_input(), N, axis=1)
    assert settle() >= base + 4 * 2**20  # the input lives on through the outputs
    if order == "all at once":
        del parts
    else:
        idx = list(range(N))
        if order == "reverse":
            idx.reverse()
        elif order == "random":
            random.Random(0).shuffle(idx)
        for i in idx:
            parts[i] = None
        del parts
    assert settle() <= base


def test_one_output_keeps_the_group_and_its_value():
    base = settle()
    parts = mx.split(held_input(), N, axis=1)
    keep = parts[N // 2]
    del parts
    assert settle() >= base + 4 * 2**20  # one output still holds the step
    np.testing.assert_array_equal(np.array(keep), np.full((1024, 1), 2.0, np.float32))
    del keep
    assert settle() <= base


def test_evaluating_one_output_releases_the_others():
    base = settle()
    parts = mx.split(held_input() * 3, 4, axis=0)
    mx.eval(parts[1])
    # The step ran: every output has its value, and the others no longer need the input.
    for p in parts:
        np.testing.assert_array_equal(np.array(p), np.full((256, 1024), 6.0, np.float32))
    del parts, p
    assert settle() <= base


def test_outputs_of_many_pieces_are_correct():
    x = mx.arange(4 * N, dtype=mx.float32).reshape(4, N)
    parts = mx.split(x, N, axis=1)
    out = mx.concatenate(parts[::-1], axis=1)
    np.testing.assert_array_equal(np.array(out), np.array(x)[:, ::-1])
    # Gradients through a many-output step reach every piece.
    g = mx.grad(lambda x: sum((p * (i + 1)).sum() for i, p in enumerate(mx.split(x, 50, 1))))(
        mx.ones((2, 50)))
    np.testing.assert_array_equal(np.array(g), np.tile(np.arange(1, 51, dtype=np.float32), (2, 1)))


def test_steps_whose_outputs_read_the_same_input_never_overwrite_it():
    # Only the step holds its inputs; one output must not take over a buffer another output's
    # kernel still reads (divmod's quotient and remainder both read x and y; a norm's backward
    # reads the cotangent for the input's and the weight's gradients).
    x = mx.arange(1, 4097, dtype=mx.float32)
    y = mx.full((4096,), 7.0)
    q, r = mx.divmod(x * 1, y * 1)  # x * 1, y * 1: evaluated with the step, held by it alone
    want = np.arange(1, 4097, dtype=np.float32)
    np.testing.assert_array_equal(np.array(q), want // 7)
    np.testing.assert_array_equal(np.array(r), want % 7)
    w = mx.linspace(0.5, 1.5, 64)
    b = mx.zeros((64,))
    xs = mx.array(np.random.default_rng(0).standard_normal((32, 64)).astype(np.float32))

    def loss(xs, w, b):
        return (mx.fast.layer_norm(xs, w, b, 1e-5) * mx.arange(64)).sum()

    got = mx.grad(loss, argnums=(0, 1, 2))(xs, w, b)
    ref = mx.grad(lambda xs, w, b: (((xs - xs.mean(-1, keepdims=True)) * mx.rsqrt(
        xs.var(-1, keepdims=True) + 1e-5) * w + b) * mx.arange(64)).sum(), argnums=(0, 1, 2))(
            xs, w, b)
    for a, e in zip(got, ref):
        np.testing.assert_allclose(np.array(a), np.array(e), rtol=1e-4, atol=1e-4)
