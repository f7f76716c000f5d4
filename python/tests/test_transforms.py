"""Transforms over Python functions of trees: grad, value_and_grad, vjp, jvp, vmap, checkpoint,
custom_function, compile (with captured state) and eval."""
import numpy as np
import pytest

import mlx.core as mx
from mlx.utils import tree_flatten, tree_map, tree_unflatten


def arr(x, dtype=mx.float32):
    return mx.array(np.asarray(x), dtype)


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.array(a, dtype=np.float64), b, rtol=tol, atol=tol)


def finite_difference(f, params, eps=1e-6):
    """d f / d params by central differences, float64, over a tree of arrays."""
    flat = tree_flatten(params)
    grads = []
    for i, (key, value) in enumerate(flat):
        base = np.array(value, dtype=np.float64)
        g = np.zeros_like(base)
        for idx in np.ndindex(base.shape):
            for sign in (1, -1):
                moved = base.copy()
                moved[idx] += sign * eps
                trial = list(flat)
                trial[i] = (key, mx.array(moved, value.dtype))
                g[idx] += sign * f(tree_unflatten(trial)).item() / (2 * eps)
        grads.append((key, g))
    return tree_unflatten(grads)


# ---------------------------------------------------------------- grad and value_and_grad


def mlp_loss(params, x):
    h = x @ params["layers"][0]["w"] + params["layers"][0]["b"]
    h = mx.exp(h * -1.0) * h
    y = h @ params["layers"][1]["w"]
    return mx.sum(y * y) * params["scale"]


def make_params(rng, dtype=mx.float64):
    return {
        "layers": [
            {"w": mx.array(rng.standard_normal((3, 4)), dtype), "b": mx.array(rng.standard_normal(4), dtype)},
            {"w": mx.array(rng.standard_normal((4, 2)), dtype)},
        ],
        "scale": mx.array(0.5, dtype),
    }


def test_grad_of_dict_params_matches_finite_differences(rng):
    params = make_params(rng)
    x = mx.array(rng.standard_normal((5, 3)))
    grads = mx.grad(mlp_loss)(params, x)
    expected = finite_difference(lambda p: mlp_loss(p, x), params)
    # Same structure, same values.
    assert [k for k, _ in tree_flatten(grads)] == [k for k, _ in tree_flatten(params)]
    for (_, g), (_, e) in zip(tree_flatten(grads), tree_flatten(expected)):
        assert g.dtype == mx.float64
        close(g, e, 1e-6)


def test_grad_simple_functions():
    x = arr([1.0, -2.0, 3.0])
    close(mx.grad(lambda x: mx.sum(x * x * x))(x), 3 * np.array([1.0, -2.0, 3.0]) ** 2)
    close(mx.grad(lambda x: mx.sum(mx.exp(x)))(x), np.exp([1.0, -2.0, 3.0]))
    # Second derivative of x^3 at 2.
    d2 = mx.grad(mx.grad(lambda x: x * x * x))(arr(2.0))
    close(d2, 12.0)


def test_argnums_and_argnames_structures():
    def f(a, b, c=None, *, d):
        return mx.sum(a * b * 2.0 + d["k"] * a)

    a, b, d = arr([1.0, 2.0]), arr([3.0, 4.0]), {"k": arr([5.0, 6.0])}
    close(mx.grad(f)(a, b, d=d), 2 * np.array([3.0, 4.0]) + [5.0, 6.0])
    ga, gb = mx.grad(f, argnums=(0, 1))(a, b, d=d)
    close(ga, [11.0, 14.0])
    close(gb, [2.0, 4.0])
    # argnums as a one-element sequence gives the single gradient.
    close(mx.grad(f, argnums=[1])(a, b, d=d), [2.0, 4.0])
    # Only keyword arguments: a dict by name.
    gk = mx.grad(f, argnames="d")(a, b, d=d)
    assert list(gk) == ["d"] and list(gk["d"]) == ["k"]
    close(gk["d"]["k"], [1.0, 2.0])
    # Both kinds: (positional, keyword).
    pos, kw = mx.grad(f, argnums=1, argnames=["d"])(a, b, d=d)
    close(pos, [2.0, 4.0])
    close(kw["d"]["k"], [1.0, 2.0])


def test_value_and_grad_with_aux():
    def loss(params, x):
        err = params["w"] * x - 1.0
        mse = mx.sum(err * err)
        return mse * 2.0, {"mse": mse, "note": "hi", "pair": (err, 3)}

    params = {"w": arr([1.0, 2.0])}
    x = arr([3.0, 4.0])
    (value, aux), grads = mx.value_and_grad(loss)(params, x)
    err = np.array([2.0, 7.0])
    close(value, 2 * np.sum(err**2))
    close(aux["mse"], np.sum(err**2))
    assert aux["note"] == "hi" and aux["pair"][1] == 3
    close(aux["pair"][0], err)
    close(grads["w"], 4 * err * np.array([3.0, 4.0]))

    value, g = mx.value_and_grad(lambda x: mx.sum(x * x))(x)
    close(value, 25.0)
    close(g, [6.0, 8.0])


def test_grad_errors():
    x = arr([1.0, 2.0])
    with pytest.raises(ValueError):
        mx.grad(lambda x: x * x)(x)  # not a scalar
    with pytest.raises(ValueError):
        mx.grad(lambda x: mx.sum(x), argnums=-1)
    with pytest.raises(ValueError):
        mx.grad(lambda x, y: mx.sum(x), argnums=(0, 0))
    with pytest.raises(ValueError):
        mx.grad(lambda x: mx.sum(x), argnums=1)(x)  # not enough arguments
    with pytest.raises(ValueError):
        mx.grad(lambda x, y=None: mx.sum(x), argnames="y")(x)  # keyword not given
    with pytest.raises(ValueError):
        mx.grad(lambda p: mx.sum(p["a"]))({"a": x, "n": 3})  # non-array leaf
    with pytest.raises(ValueError):
        mx.grad(lambda x: (mx.sum(x), x))(x)  # grad takes no auxiliary outputs
    with pytest.raises(ValueError):
        mx.value_and_grad(lambda x: "nope")(x)
    with pytest.raises(ValueError):
        mx.grad(lambda x: mx.sum(x))(mx.array([1, 2]))  # integer input
    with pytest.raises(TypeError):
        mx.grad(lambda x: mx.sum(x), argnums="a")
    # Python errors raised inside the function propagate unchanged.
    with pytest.raises(KeyError):
        mx.grad(lambda p: mx.sum(p["missing"]))({"a": x})


def test_function_can_eval_inside_grad():
    def f(x):
        y = x * 3.0
        mx.eval(y)
        return mx.sum(y * y)

    close(mx.grad(f)(arr([1.0, 2.0])), [18.0, 36.0])


def test_eval_inside_grad_keeps_the_values_the_gradient_reads():
    # Each intermediate here is held only by its consumer, whose kernel could write its output
    # into that input's buffer; the vjp rules read the overwritten values afterwards.
    x = mx.array(np.linspace(-1.0, 1.0, 4099).astype(np.float32))

    def evaluated(x):
        z = mx.sin(mx.exp(x) * 2.0 + 1.0)
        mx.eval(z)
        return mx.sum(z)

    x64 = np.array(x, dtype=np.float64)
    expected = np.cos(np.exp(x64) * 2.0 + 1.0) * 2.0 * np.exp(x64)
    close(mx.grad(evaluated)(x), expected, tol=1e-4)


# ---------------------------------------------------------------- vjp and jvp


def test_vjp_and_jvp():
    x, y = arr([1.0, 2.0]), arr([3.0, 4.0])
    outs, vjps = mx.vjp(lambda a, b: (a * b, a + b), [x, y], [arr([1.0, 1.0]), arr([2.0, 2.0])])
    assert isinstance(outs, list) and len(outs) == 2 and len(vjps) == 2
    close(outs[0], [3.0, 8.0])
    close(vjps[0], [3.0 + 2, 4.0 + 2])
    close(vjps[1], [1.0 + 2, 2.0 + 2])

    outs, jvps = mx.jvp(lambda a, b: a * b, (x, y), (arr([1.0, 0.0]), arr([0.0, 1.0])))
    close(outs[0], [3.0, 8.0])
    close(jvps[0], [3.0, 2.0])

    with pytest.raises(ValueError):
        mx.vjp(lambda a: a * 2.0, [x], [arr([1.0, 2.0, 3.0])])


# ---------------------------------------------------------------- vmap


def test_vmap_axes_none_and_out_axes(rng):
    a = rng.standard_normal((4, 3)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    f = mx.vmap(lambda x, y: x * y + 1.0, in_axes=(0, None))
    close(f(mx.array(a), mx.array(b)), a * b + 1)
    # Map over axis 1 of the first input, put the batch last.
    g = mx.vmap(lambda x, y: x * y, in_axes=(1, 0), out_axes=-1)
    out = g(mx.array(a.T), mx.array(a))
    assert out.shape == (3, 4)
    close(out, (a * a).T)
    # A scalar in_axes applies to every input.
    close(mx.vmap(lambda x, y: mx.sum(x * y))(mx.array(a), mx.array(a)), np.sum(a * a, axis=1))


def test_vmap_nested_trees(rng):
    w = rng.standard_normal((5, 3)).astype(np.float32)
    xs = rng.standard_normal((2, 3)).astype(np.float32)
    b = rng.standard_normal(5).astype(np.float32)

    def f(params, x):
        return {"y": mx.sum(params["w"] * x), "pair": (x * 2.0, params["b"])}

    params = {"w": mx.array(w), "b": mx.array(b)}
    out = mx.vmap(f, in_axes=({"w": 0, "b": 0}, None), out_axes={"y": 0, "pair": (1, 0)})(
        params, mx.array(xs[0])
    )
    close(out["y"], w @ xs[0])
    assert out["pair"][0].shape == (3, 5)
    close(out["pair"][0], np.broadcast_to(2 * xs[0][:, None], (3, 5)))
    close(out["pair"][1], b)
    # A list of arrays mapped entry by entry, with non-array constants passed through.
    out = mx.vmap(lambda l, scale: l[0] * l[1] * scale, in_axes=([0, 1], None))(
        [mx.array(w), mx.array(w.T)], 2.0
    )
    close(out, 2 * w * w)


def test_vmap_out_axes_none_and_errors(rng):
    x = mx.array(rng.standard_normal((4, 2)).astype(np.float32))
    c = arr([1.0, 2.0])
    mapped, const = mx.vmap(lambda x, c: (x + c, c * 2.0), in_axes=(0, None), out_axes=(0, None))(x, c)
    assert mapped.shape == (4, 2) and const.shape == (2,)
    close(const, [2.0, 4.0])
    with pytest.raises(ValueError):
        mx.vmap(lambda x: x * 2.0, out_axes=None)(x)
    with pytest.raises(ValueError):
        mx.vmap(lambda x, y: x + y)(x, mx.zeros((3, 2)))  # inconsistent sizes
    with pytest.raises(ValueError):
        mx.vmap(lambda x: x, in_axes=2)(x)  # axis out of range
    with pytest.raises(ValueError):
        mx.vmap(lambda x, y: x, in_axes=(0,))(x, x)  # in_axes tree does not match


def test_per_example_gradients_and_grad_of_vmap(rng):
    w = arr(rng.standard_normal(3))
    xs = rng.standard_normal((4, 3)).astype(np.float32)
    loss = lambda w, x: mx.sum(w * x) * mx.sum(w * x)
    per_example = mx.vmap(mx.grad(loss), in_axes=(None, 0))(w, mx.array(xs))
    expected = 2 * (xs @ np.array(w))[:, None] * xs
    close(per_example, expected, 1e-4)
    total = mx.grad(lambda w: mx.sum(mx.vmap(loss, in_axes=(None, 0))(w, mx.array(xs))))(w)
    close(total, expected.sum(0), 1e-4)


# ---------------------------------------------------------------- checkpoint and custom_function


def test_checkpoint_matches_plain_grad_and_recomputes():
    calls = []

    def block(p, x):
        calls.append(1)
        return {"h": mx.exp(x * p["a"]) * p["b"]}

    p = {"a": arr([0.5, -0.3]), "b": arr([2.0, 1.0])}
    x = arr([1.0, 2.0])
    loss = lambda f: lambda p: mx.sum(f(p, x)["h"] * f(p, x)["h"])
    plain = mx.grad(loss(block))(p)
    calls.clear()
    ckpt = mx.grad(loss(mx.checkpoint(block)))(p)
    for k in p:
        close(ckpt[k], np.array(plain[k]), 1e-5)
    # Two forward calls plus one recomputation each for the backward pass.
    assert len(calls) == 4
    out = mx.checkpoint(block)(p, x=x)
    close(out["h"], np.exp(np.array([0.5, -0.6])) * [2.0, 1.0])


def test_custom_function_vjp_jvp_vmap():
    @mx.custom_function
    def f(x, y):
        return x * y

    @f.vjp
    def f_vjp(primals, cotangent, output):
        x, y = primals
        return cotangent * 10.0, None  # y gets zeros

    @f.jvp
    def f_jvp(primals, tangents):
        x, y = primals
        dx, dy = tangents
        return dx * 100.0 + dy

    @f.vmap
    def f_vmap(inputs, axes):
        x, y = inputs
        assert axes == (0, None)
        return x * y + 1000.0, 0

    x, y = arr([1.0, 2.0]), arr([3.0, 4.0])
    close(f(x, y), [3.0, 8.0])
    gx, gy = mx.grad(lambda x, y: mx.sum(f(x, y)), argnums=(0, 1))(x, y)
    close(gx, [10.0, 10.0])
    close(gy, [0.0, 0.0])
    _, jvps = mx.jvp(f, [x, y], [arr([1.0, 1.0]), arr([1.0, 2.0])])
    close(jvps[0], [101.0, 102.0])
    close(mx.vmap(f, in_axes=(0, None))(arr([[1.0, 2.0], [3.0, 4.0]]), y), [[1003, 1008], [1009, 1016]])
    assert f_vjp is not None and callable(f_vjp)


def test_custom_function_single_argument_and_fallbacks():
    @mx.custom_function
    def g(x):
        return {"sq": x * x}

    @g.vjp
    def g_vjp(x, cotangent, output):
        # One argument: primal and cotangent come unwrapped, with the output's structure.
        assert isinstance(x, mx.array) and list(cotangent) == ["sq"]
        return cotangent["sq"] * x * 4.0

    x = arr([1.0, 3.0])
    close(mx.grad(lambda x: mx.sum(g(x)["sq"]))(x), [4.0, 12.0])
    # Without a jvp rule, forward mode uses the function's own graph.
    _, jvps = mx.jvp(lambda x: g(x)["sq"], [x], [arr([1.0, 1.0])])
    close(jvps[0], [2.0, 6.0])
    # Captured arrays are constants: no gradient flows to them.
    c = arr([5.0, 5.0])
    h = mx.custom_function(lambda x: x * c)
    close(mx.grad(lambda c_: mx.sum(h(x) * c_))(c), [5.0, 15.0])


# ---------------------------------------------------------------- compile


def test_compile_traces_once_per_signature():
    traces = []

    def fun(x, y, scale=1.0):
        traces.append(1)
        return {"sum": (x + y) * scale, "prod": x * y}

    c = mx.compile(fun)
    x, y = arr([1.0, 2.0]), arr([3.0, 4.0])
    out = c(x, y)
    close(out["sum"], [4.0, 6.0])
    close(out["prod"], [3.0, 8.0])
    c(arr([5.0, 6.0]), y)
    assert len(traces) == 1
    close(c(arr([5.0, 6.0]), y)["prod"], [15.0, 24.0])
    c(arr([1.0, 2.0, 3.0]), arr([1.0, 1.0, 1.0]))  # new shape
    assert len(traces) == 2
    c(x, y, scale=2.0)  # new constant
    assert len(traces) == 3
    close(c(x, y, scale=2.0)["sum"], [8.0, 12.0])
    c(x.astype(mx.float16), y.astype(mx.float16))  # new dtype
    assert len(traces) == 4
    # The cache belongs to the function: compiling it again reuses the traces.
    mx.compile(fun)(x, y)
    assert len(traces) == 4


def test_compile_keys_on_tree_structure():
    traces = []

    def fun(tree):
        traces.append(1)
        return tree_map(lambda v: v * 2.0, tree)

    c = mx.compile(fun)
    x = arr([1.0])
    close(c({"a": x, "b": x})["b"], [2.0])
    close(c({"a": x, "c": x})["c"], [2.0])
    assert len(traces) == 2
    close(c([x, x])[1], [2.0])
    c({"a": x, "b": x})
    assert len(traces) == 3


def test_compile_results_keep_constants_and_errors_propagate():
    c = mx.compile(lambda x, tag: {"y": x + 1.0, "tag": tag, "pair": (x, None)})
    for _ in range(2):
        out = c(arr([1.0]), "a")
        assert out["tag"] == "a" and out["pair"][1] is None
        close(out["y"], [2.0])
        close(out["pair"][0], [1.0])

    def bad(x):
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        mx.compile(bad)(arr([1.0]))


def test_compile_shapeless_and_disable():
    traces = []

    def fun(x):
        traces.append(1)
        return x * 2.0 + 1.0

    c = mx.compile(fun, shapeless=True)
    close(c(arr([1.0, 2.0])), [3.0, 5.0])
    close(c(arr([1.0, 2.0, 3.0])), [3.0, 5.0, 7.0])
    assert len(traces) == 1
    mx.disable_compile()
    try:
        c(arr([1.0]))
        c(arr([1.0]))
        assert len(traces) == 3
    finally:
        mx.enable_compile()
    c(arr([4.0]))
    assert len(traces) == 3


def test_compile_state_counter():
    state = [mx.array(0.0)]
    traces = []

    def step(y):
        traces.append(1)
        state[0] = state[0] + y
        return state[0] * 2.0

    c = mx.compile(step, inputs=state, outputs=state)
    for i in range(1, 4):
        close(c(arr(1.0)), 2.0 * i)
        close(state[0], float(i))
    assert len(traces) == 1
    # The state is read each call: an outside change is seen.
    state[0] = mx.array(10.0)
    close(c(arr(1.0)), 22.0)


def test_compile_sgd_step_updates_params(rng):
    def loss(params, x, y):
        pred = x @ params["w"] + params["b"]
        err = pred - y
        return mx.sum(err * err)

    def make():
        return {"w": mx.array(rng_w), "b": mx.array(np.zeros(1, np.float32))}

    rng_w = rng.standard_normal((3, 1)).astype(np.float32)
    x = mx.array(rng.standard_normal((8, 3)).astype(np.float32))
    y = mx.array(rng.standard_normal((8, 1)).astype(np.float32))

    def step(params, state):
        def sgd(x, y):
            value, grads = mx.value_and_grad(loss)(params, x, y)
            for k in params:
                params[k] = params[k] - 0.01 * grads[k]
            state["steps"] = state["steps"] + 1
            return value

        return sgd

    ref_params, ref_state = make(), {"steps": mx.array(0)}
    ref = step(ref_params, ref_state)
    params, state = make(), {"steps": mx.array(0), "lr": 0.01}
    compiled = mx.compile(step(params, state), inputs=[params, state], outputs=[params, state])
    for _ in range(5):
        close(compiled(x, y), np.array(ref(x, y)), 1e-5)
    close(params["w"], np.array(ref_params["w"]), 1e-5)
    close(params["b"], np.array(ref_params["b"]), 1e-5)
    assert state["steps"].item() == 5 and state["lr"] == 0.01


def test_compile_with_random_state():
    def noisy(x):
        return x + mx.random.uniform(shape=x.shape)

    c = mx.compile(noisy, inputs=[mx.random.state], outputs=[mx.random.state])
    x = mx.zeros((4,))
    a, b = np.array(c(x)), np.array(c(x))
    assert not np.array_equal(a, b)
    assert np.all((a >= 0) & (a < 1))


def test_compile_composes_with_grad():
    c = mx.compile(lambda x: mx.sum(x * x * x))
    close(mx.grad(c)(arr([1.0, 2.0])), [3.0, 12.0])
    close(mx.compile(mx.grad(lambda x: mx.sum(x * x)))(arr([1.0, 2.0])), [2.0, 4.0])


# ---------------------------------------------------------------- eval


def test_eval_trees_ignores_other_leaves():
    x = mx.array(1) + 1 + 1
    y = mx.exp(arr([0.0]))
    mx.eval([x, 0, "hello", {"y": (y, None)}])
    mx.eval(x, y)
    mx.eval()
    assert x.item() == 3
    z = x * 2
    mx.async_eval({"z": z}, 5)
    assert z.item() == 6


def test_gradients_of_evaluated_inputs_add_no_copy_nodes():
    # An evaluated input is traced through an alias of its buffer, not a Copy node per
    # parameter; an input passed twice still gets its two gradients, and gradients of
    # gradients still reach the outer input.
    x = mx.array([1.0, 2.0, 3.0])
    y = mx.array([0.5, -1.0, 2.0])
    mx.eval(x, y)
    mx._kernel_counts(True, True)
    value, grads = mx.value_and_grad(lambda a, b: (a * a * b).sum(), argnums=(0, 1))(x, y)
    mx.eval(value, grads)
    counts = mx._kernel_counts(False, True)
    assert "Copy" not in counts, counts
    np.testing.assert_allclose(np.array(grads[0]), 2 * np.array(x) * np.array(y))
    np.testing.assert_allclose(np.array(grads[1]), np.array(x) ** 2)
    same = mx.grad(lambda a, b: (a * b * b).sum(), argnums=(0, 1))(x, x)
    np.testing.assert_allclose(np.array(same[0]), np.array(x) ** 2)
    np.testing.assert_allclose(np.array(same[1]), 2 * np.array(x) ** 2)
    second = mx.grad(lambda a: mx.grad(lambda b: (b ** 3).sum())(a).sum())(x)
    np.testing.assert_allclose(np.array(second), 6 * np.array(x))
    tangent = mx.jvp(lambda a: a * a, [x], [mx.ones_like(x)])[1][0]
    np.testing.assert_allclose(np.array(tangent), 2 * np.array(x))
    # An input still being computed (aliased with its event, or copied once it is scheduled).
    for _ in range(20):
        z = x * 2
        mx.async_eval(z)
        g = mx.grad(lambda a: (a * a).sum())(z)
        np.testing.assert_allclose(np.array(g), 4 * np.array(x))
