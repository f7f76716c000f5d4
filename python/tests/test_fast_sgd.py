"""mx.fast._sgd_update_many, the fused SGD step behind mlx.optimizers.SGD."""
import mlx.core as mx
import mlx.optimizers as optim
import numpy as np
import pytest

DTYPES = [mx.float32, mx.float16, mx.bfloat16, mx.float64]
TOL = {mx.float32: 1e-5, mx.float16: 2e-3, mx.bfloat16: 2e-2, mx.float64: 1e-12}
# (momentum, dampening, weight decay, nesterov)
RULES = [(0.0, 0.0, 0.0, False), (0.0, 0.0, 0.1, False), (0.9, 0.0, 0.0, False),
         (0.9, 0.25, 0.05, False), (0.8, 0.0, 0.01, True)]


def as_np(x):
    return np.array(x.astype(mx.float64) if x.dtype != mx.float64 else x)


def reference(p, g, v, lr, mu, damp, wd, nesterov):
    g = g + wd * p
    if mu <= 0:
        return p - lr * g, None
    v = mu * v + (1 - damp) * g
    return p - lr * (g + mu * v if nesterov else v), v


def arrays(rng, shape, dtype):
    return tuple(mx.array(rng.standard_normal(shape)).astype(dtype) for _ in range(3))


def step(ps, gs, vs, lr, rule):
    mu, damp, wd, nesterov = rule
    return mx.fast._sgd_update_many(ps, gs, vs if mu > 0 else [], lr, momentum=mu,
                                    dampening=damp, weight_decay=wd, nesterov=nesterov)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rule", RULES)
def test_matches_the_formulas(dtype, rule):
    rng = np.random.default_rng(0)
    # Any shapes in one step: empty, scalar, odd, long, and a transposed (strided) view.
    shapes = [(0,), (), (7, 5), (3, 1000)]
    groups = [arrays(rng, s, dtype) for s in shapes]
    groups.append(tuple(a.T for a in arrays(rng, (6, 4), dtype)))
    ps, gs, vs = (list(k) for k in zip(*groups))
    new_p, new_v = step(ps, gs, vs, mx.array(0.05, mx.float64), rule)
    mx.eval(new_p, [v for v in new_v if v is not None])
    for i, (p, g, v) in enumerate(groups):
        want_p, want_v = reference(as_np(p), as_np(g), as_np(v), 0.05, *rule)
        assert new_p[i].dtype == dtype and new_p[i].shape == p.shape
        np.testing.assert_allclose(as_np(new_p[i]), want_p, rtol=TOL[dtype], atol=TOL[dtype])
        if rule[0] > 0:
            np.testing.assert_allclose(as_np(new_v[i]), want_v, rtol=TOL[dtype], atol=TOL[dtype])
        else:
            assert new_v[i] is None
    # The caller still holds the inputs: they keep their values.
    for a, b in zip(ps, (p for p, _, _ in groups)):
        assert a is b


def test_optimizer_takes_one_fused_step_per_dtype():
    rng = np.random.default_rng(1)
    for rule in RULES:
        mu, damp, wd, nesterov = rule
        params = {"a": [mx.array(rng.standard_normal((4,)).astype(np.float32)),
                        {"b": mx.array(rng.standard_normal((2, 3)).astype(np.float32))}],
                  "c": mx.ones((3,), dtype=mx.bfloat16)}
        opt = optim.SGD(learning_rate=0.1, momentum=mu, dampening=damp, weight_decay=wd,
                        nesterov=nesterov)
        ref = {k: (as_np(p), np.zeros(p.shape)) for k, p in
               [("a0", params["a"][0]), ("ab", params["a"][1]["b"]), ("c", params["c"])]}
        for _ in range(3):
            grads = {"a": [mx.array(rng.standard_normal((4,)).astype(np.float32)),
                           {"b": mx.array(rng.standard_normal((2, 3)).astype(np.float32))}],
                     "c": mx.full((3,), 0.5, dtype=mx.bfloat16)}
            mx._kernel_counts(True, True)
            params = opt.apply_gradients(grads, params)
            mx.eval(params, opt.state)
            assert mx._kernel_counts(False, True).get("SgdUpdate") == 2  # float32, bfloat16
            flat = {"a0": (params["a"][0], grads["a"][0]),
                    "ab": (params["a"][1]["b"], grads["a"][1]["b"]),
                    "c": (params["c"], grads["c"])}
            for k, (p, g) in flat.items():
                want_p, want_v = reference(*ref[k][:1], as_np(g), ref[k][1], 0.1, *rule)
                ref[k] = (want_p, want_v if want_v is not None else ref[k][1])
                tol = 2e-2 if p.dtype == mx.bfloat16 else 1e-5
                np.testing.assert_allclose(as_np(p), want_p, rtol=tol, atol=tol)
        assert isinstance(params["a"], list) and set(params["a"][1]) == {"b"}


def test_what_it_cannot_fuse_and_subclass_rules_take_the_ops():
    # An integer parameter, and a gradient of another dtype, are left to apply_single.
    opt = optim.SGD(learning_rate=1.0, momentum=0.5)
    params = {"i": mx.array([4, 8]), "h": mx.ones((2,), dtype=mx.float16)}
    grads = {"i": mx.array([2, 2]), "h": mx.full((2,), 1.0)}
    new = opt.apply_gradients(grads, params)
    mx.eval(new, opt.state)
    np.testing.assert_array_equal(np.array(new["i"]), [2, 6])
    np.testing.assert_allclose(np.array(new["h"].astype(mx.float32)), [0.0, 0.0])

    class Clipped(optim.SGD):
        def apply_single(self, gradient, parameter, state):
            return super().apply_single(mx.clip(gradient, -0.1, 0.1), parameter, state)

    mx._kernel_counts(True, True)
    out = Clipped(learning_rate=1.0).apply_gradients({"w": mx.full((3,), 5.0)},
                                                     {"w": mx.zeros((3,))})
    mx.eval(out)
    assert "SgdUpdate" not in mx._kernel_counts(False, True)
    np.testing.assert_allclose(np.array(out["w"]), [-0.1] * 3, rtol=1e-6)


def test_bad_inputs_are_named():
    a = mx.zeros((3,))
    lr = mx.array(0.1)
    with pytest.raises(ValueError, match="sgd_update.*as many"):
        mx.fast._sgd_update_many([a, a], [a], [a, a], lr, momentum=0.9)
    with pytest.raises(ValueError, match="sgd_update.*Nesterov"):
        mx.fast._sgd_update_many([a], [a], [a], lr, momentum=0.9, dampening=0.1, nesterov=True)
    with pytest.raises(ValueError, match="sgd_update.*scalars"):
        mx.fast._sgd_update_many([a], [a], [], mx.ones((2,)))
    assert mx.fast._sgd_update_many([], [], [], lr) == ([], [])


@pytest.mark.parametrize("rule", [RULES[1], RULES[3], RULES[4]])
def test_gradients_and_vmap_follow_the_formulas(rule):
    rng = np.random.default_rng(2)
    groups = [[a.astype(mx.float64) for a in arrays(rng, s, mx.float32)] for s in [(5,), (2, 3)]]
    flat = [a for k in range(3) for a in (groups[0][k], groups[1][k])]
    lr = mx.array(0.3, mx.float64)

    def fused(*a):
        new_p, new_v = step([a[0], a[1]], [a[2], a[3]], [a[4], a[5]], a[6], rule)
        return new_p + [v for v in new_v if v is not None]

    def composite(*a):
        mu, damp, wd, nesterov = rule
        ps, vs = [], []
        for i in range(2):
            p, g, v = a[i], a[2 + i] + wd * a[i], a[4 + i]
            if mu > 0:
                v = mu * v + (1 - damp) * g
                g = g + mu * v if nesterov else v
                vs.append(v)
            ps.append(p - a[6] * g)
        return ps + vs

    def loss(fn):
        return lambda *a: sum((o * (k + 1)).sum() for k, o in enumerate(fn(*a)))

    argnums = tuple(range(7))
    got = mx.grad(loss(fused), argnums=argnums)(*flat, lr)
    want = mx.grad(loss(composite), argnums=argnums)(*flat, lr)
    for a, b in zip(got, want):
        np.testing.assert_allclose(np.array(a), np.array(b), rtol=1e-12, atol=1e-12)
    batched = [mx.stack([x, x * 0.5]) for x in flat]
    mapped = mx.vmap(fused, in_axes=(0,) * 6 + (None,))(*batched, lr)
    for j in range(2):
        single = fused(*(b[j] for b in batched), lr)
        for a, b in zip(mapped, single):
            np.testing.assert_allclose(np.array(a[j]), np.array(b), rtol=1e-12, atol=1e-12)


def test_an_update_nothing_else_holds_runs_in_place():
    n = 1 << 20
    p, g, v = (mx.full((n,), x) for x in (1.0, 0.5, 0.25))
    lr = mx.array(0.5)
    mx.eval(p, g, v, lr)
    mx.synchronize()
    held = mx.get_active_memory()
    mx.reset_peak_memory()
    (p,), (v,) = mx.fast._sgd_update_many([p], [g], [v], lr, momentum=0.5)
    mx.eval(p, v)
    assert mx.get_peak_memory() - held < 4 * n // 2, (mx.get_peak_memory(), held)
    np.testing.assert_allclose(np.array(v)[:2], [0.625] * 2)
    np.testing.assert_allclose(np.array(p)[:2], [1 - 0.5 * 0.625] * 2)
