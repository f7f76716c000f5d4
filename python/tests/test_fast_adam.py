"""mx.fast._adam_update and _adam_update_many, the fused Adam / AdamW step behind
mlx.optimizers.Adam and AdamW."""
import mlx.core as mx
import mlx.optimizers as optim
import numpy as np
import pytest

DTYPES = [mx.float32, mx.float16, mx.bfloat16, mx.float64]
TOL = {mx.float32: 1e-5, mx.float16: 2e-3, mx.bfloat16: 2e-2, mx.float64: 1e-12}


def as_np(x):
    return np.array(x.astype(mx.float64) if x.dtype != mx.float64 else x)


def reference(p, g, m, v, lr, c1, c2, b1, b2, eps, wd):
    m2 = b1 * m + (1 - b1) * g
    v2 = b2 * v + (1 - b2) * g * g
    p2 = p * (1 - lr * wd) - lr * (m2 / c1) / (np.sqrt(v2 / c2) + eps)
    return p2, m2, v2


def arrays(rng, shape, dtype):
    p, g, m = (mx.array(rng.standard_normal(shape)).astype(dtype) for _ in range(3))
    v = mx.array(rng.random(shape)).astype(dtype)
    return p, g, m, v


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(0,), (1,), (7, 5), (3, 1000)])
@pytest.mark.parametrize("wd,c1,c2", [(0.0, 1.0, 1.0), (0.1, 0.19, 0.002)])
def test_matches_the_formulas(dtype, shape, wd, c1, c2):
    rng = np.random.default_rng(0)
    p, g, m, v = arrays(rng, shape, dtype)
    acc = mx.float64 if dtype == mx.float64 else mx.float32
    lr, c1_, c2_ = (mx.array(x, dtype=acc) for x in (0.01, c1, c2))
    out = mx.fast._adam_update(p, g, m, v, lr, c1_, c2_, beta1=0.9, beta2=0.999, eps=1e-8,
                               weight_decay=wd)
    want = reference(*(as_np(a) for a in (p, g, m, v)), 0.01, c1, c2, 0.9, 0.999, 1e-8, wd)
    for got, w in zip(out, want):
        assert got.dtype == dtype and got.shape == shape
        np.testing.assert_allclose(as_np(got), w, rtol=TOL[dtype], atol=TOL[dtype])


def test_strided_inputs_and_kept_inputs_are_not_overwritten():
    rng = np.random.default_rng(1)
    p, g, m, v = arrays(rng, (6, 4), mx.float32)
    before = [np.array(a) for a in (p, g, m, v)]
    pt, gt, mt, vt = (a.T for a in (p, g, m, v))  # transposed views
    out = mx.fast._adam_update(pt, gt, mt, vt, mx.array(0.1), mx.array(1.0), mx.array(1.0),
                               beta1=0.5, beta2=0.9, eps=1e-6)
    mx.eval(out)
    want = reference(*(b.T.astype(np.float64) for b in before), 0.1, 1, 1, 0.5, 0.9, 1e-6, 0)
    for got, w in zip(out, want):
        np.testing.assert_allclose(np.array(got), w, rtol=1e-5, atol=1e-6)
    # The caller still holds the inputs: they keep their values (no buffer was reused).
    out = mx.fast._adam_update(p, g, m, v, mx.array(0.1), mx.array(1.0), mx.array(1.0),
                               beta1=0.5, beta2=0.9, eps=1e-6)
    mx.eval(out)
    for a, b in zip((p, g, m, v), before):
        np.testing.assert_array_equal(np.array(a), b)


def test_bad_inputs_are_named():
    p = mx.zeros((3,))
    one = mx.array(1.0)
    with pytest.raises(ValueError, match=r"adam_update.*shape \(3\)"):
        mx.fast._adam_update(p, mx.zeros((4,)), p, p, one, one, one, beta1=0.9, beta2=0.99,
                             eps=1e-8)
    with pytest.raises(ValueError, match="adam_update.*float16"):
        mx.fast._adam_update(p, p.astype(mx.float16), p, p, one, one, one, beta1=0.9,
                             beta2=0.99, eps=1e-8)
    with pytest.raises(ValueError, match="adam_update.*scalars"):
        mx.fast._adam_update(p, p, p, p, mx.ones((2,)), one, one, beta1=0.9, beta2=0.99,
                             eps=1e-8)
    with pytest.raises(ValueError, match="adam_update.*floating"):
        q = mx.zeros((3,), dtype=mx.int32)
        mx.fast._adam_update(q, q, q, q, one, one, one, beta1=0.9, beta2=0.99, eps=1e-8)


def composite(p, g, m, v, lr, c1, c2, b1=0.9, b2=0.99, eps=1e-3, wd=0.05):
    m2 = b1 * m + (1 - b1) * g
    v2 = b2 * v + (1 - b2) * mx.square(g)
    return p * (1 - lr * wd) - lr * (m2 / c1) / (mx.sqrt(v2 / c2) + eps), m2, v2


def fused(p, g, m, v, lr, c1, c2):
    return mx.fast._adam_update(p, g, m, v, lr, c1, c2, beta1=0.9, beta2=0.99, eps=1e-3,
                                weight_decay=0.05)


def test_gradients_jvp_and_vmap_follow_the_formulas():
    rng = np.random.default_rng(2)
    p, g, m, v = (a.astype(mx.float64) for a in arrays(rng, (5,), mx.float32))
    scalars = [mx.array(0.3, mx.float64), mx.array(0.7, mx.float64), mx.array(0.4, mx.float64)]

    def loss(fn):
        return lambda *a: sum((o * (k + 1)).sum() for k, o in enumerate(fn(*a)))

    argnums = (0, 1, 2, 3)
    got = mx.grad(loss(fused), argnums=argnums)(p, g, m, v, *scalars)
    want = mx.grad(loss(composite), argnums=argnums)(p, g, m, v, *scalars)
    for a, b in zip(got, want):
        np.testing.assert_allclose(np.array(a), np.array(b), rtol=1e-5, atol=1e-6)
    tangents = [mx.ones_like(p)] * 4 + [mx.array(0.0)] * 3
    _, jf = mx.jvp(fused, [p, g, m, v, *scalars], tangents)
    _, jc = mx.jvp(composite, [p, g, m, v, *scalars], tangents)
    for a, b in zip(jf, jc):
        np.testing.assert_allclose(np.array(a), np.array(b), rtol=1e-5, atol=1e-6)
    # A batch of parameters, the scalars shared; then per-batch learning rates.
    batch = [mx.array(rng.standard_normal((3, 4))) for _ in range(4)]
    batch[3] = mx.abs(batch[3])
    lr, one = mx.array(0.1), mx.array(1.0)
    mapped = mx.vmap(fused, in_axes=(0, 0, 0, 0, None, None, None))(*batch, lr, one, one)
    for i in range(3):
        single = fused(*(b[i] for b in batch), lr, one, one)
        for a, b in zip(mapped, single):
            np.testing.assert_allclose(np.array(a[i]), np.array(b), rtol=1e-5, atol=1e-6)
    lrs = mx.array([0.1, 0.2, 0.3])
    mapped = mx.vmap(fused, in_axes=(0, 0, 0, 0, 0, None, None))(*batch, lrs, one, one)
    for i in range(3):
        single = fused(*(b[i] for b in batch), lrs[i], one, one)
        for a, b in zip(mapped, single):
            np.testing.assert_allclose(np.array(a[i]), np.array(b), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("cls,kwargs", [(optim.Adam, {}), (optim.Adam, {"bias_correction": True}),
                                        (optim.AdamW, {"weight_decay": 0.1}),
                                        (optim.AdamW, {"bias_correction": True})])
def test_optimizers_take_the_fused_step_and_match_the_formulas(cls, kwargs):
    rng = np.random.default_rng(3)
    params = {"w": mx.array(rng.standard_normal((4, 3)).astype(np.float32)),
              "b": mx.array(rng.standard_normal((3,)).astype(np.float32))}
    opt = cls(learning_rate=0.05, **kwargs)
    ref = {k: (np.array(p, np.float64), 0.0, 0.0) for k, p in params.items()}
    wd = kwargs.get("weight_decay", 0.01 if cls is optim.AdamW else 0.0)
    for step in range(1, 4):
        grads = {k: mx.array(rng.standard_normal(p.shape).astype(np.float32))
                 for k, p in params.items()}
        mx._kernel_counts(True, True)
        params = opt.apply_gradients(grads, params)
        mx.eval(params, opt.state)
        assert mx._kernel_counts(False, True).get("AdamUpdate") == 1  # both, one bucket
        c1, c2 = ((1 - 0.9**step, 1 - 0.999**step) if kwargs.get("bias_correction")
                  else (1.0, 1.0))
        for k in ref:
            p, m, v = ref[k]
            ref[k] = reference(p, np.array(grads[k], np.float64), m, v, 0.05, c1, c2, 0.9,
                               0.999, 1e-8, wd)
            np.testing.assert_allclose(np.array(params[k]), ref[k][0], rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(np.array(opt.state[k]["m"]), ref[k][1], rtol=1e-5,
                                       atol=1e-6)


def test_a_gradient_of_another_dtype_takes_the_ops():
    opt = optim.AdamW(learning_rate=0.1)
    params = {"w": mx.ones((3,), dtype=mx.bfloat16)}
    grads = {"w": mx.full((3,), 0.5)}  # float32
    new = opt.apply_gradients(grads, params)
    mx.eval(new, opt.state)
    m = 0.1 * 0.5
    want = (1 - 0.1 * 0.01) - 0.1 * m / (np.sqrt(0.001 * 0.25) + 1e-8)
    np.testing.assert_allclose(np.array(new["w"].astype(mx.float32)), [want] * 3, rtol=1e-2)


def test_compiled_training_step_uses_it():
    opt = optim.Adam(learning_rate=0.1, bias_correction=True)
    w = {"w": mx.array([1.0, -2.0, 3.0])}
    opt.init(w)
    state = [w, opt.state]

    def update(g):
        w.update(opt.apply_gradients({"w": g}, w))
        return w["w"]

    step = mx.compile(update, inputs=state, outputs=state)

    def eager_reference():
        o = optim.Adam(learning_rate=0.1, bias_correction=True)
        p = {"w": mx.array([1.0, -2.0, 3.0])}
        for g in grads:
            p = o.apply_gradients({"w": g}, p)
        return np.array(p["w"])

    grads = [mx.array([0.5, -1.0, 2.0]), mx.array([1.0, 1.0, -1.0])]
    for g in grads:
        out = step(g)
        mx.eval(out, state)
    np.testing.assert_allclose(np.array(w["w"]), eager_reference(), rtol=1e-6)


def test_a_bucket_equals_its_parameters_one_by_one():
    # Any shapes (0-size, scalar, strided views) in one step, each as _adam_update computes it.
    rng = np.random.default_rng(4)
    shapes = [(0,), (), (7, 5), (3, 1000), (1,)]
    groups = [arrays(rng, s, mx.float32) for s in shapes]
    groups.append(tuple(a.T for a in arrays(rng, (6, 4), mx.float32)))
    lr, c1, c2 = mx.array(0.02), mx.array(0.3), mx.array(0.05)
    kw = dict(beta1=0.8, beta2=0.95, eps=1e-6, weight_decay=0.1)
    ps, ms, vs = mx.fast._adam_update_many(*(list(k) for k in zip(*groups)), lr, c1, c2, **kw)
    assert len(ps) == len(ms) == len(vs) == len(groups)
    for (p, g, m, v), got in zip(groups, zip(ps, ms, vs)):
        want = mx.fast._adam_update(p, g, m, v, lr, c1, c2, **kw)
        for a, b in zip(got, want):
            assert a.shape == p.shape and a.dtype == p.dtype
            np.testing.assert_array_equal(np.array(a), np.array(b))


def test_buckets_group_dtypes_and_leave_what_they_cannot_fuse():
    one = mx.array(1.0)
    kw = dict(beta1=0.9, beta2=0.99, eps=1e-8)
    a, b = mx.zeros((3,)), mx.zeros((2,), dtype=mx.float16)
    with pytest.raises(ValueError, match="adam_update.*as many"):
        mx.fast._adam_update_many([a, a], [a], [a, a], [a, a], one, one, one, **kw)
    # Two dtypes: two fused steps. An integer parameter, or a gradient unlike its parameter,
    # comes back as None for the caller's ops.
    i = mx.zeros((3,), dtype=mx.int32)
    mx._kernel_counts(True, True)
    ps, ms, vs = mx.fast._adam_update_many([a, b, i, a], [a + 1, b + 1, i, mx.ones((1,))],
                                           [a, b, i, a], [a, b, i, a], one, one, one, **kw)
    assert [x is None for x in ps] == [False, False, True, True]
    assert [x is None for x in ms] == [x is None for x in vs] == [False, False, True, True]
    mx.eval(ps[:2], ms[:2], vs[:2])
    assert mx._kernel_counts(False, True).get("AdamUpdate") == 2
    assert ps[1].dtype == mx.float16 and ms[0].shape == (3,)
    assert mx.fast._adam_update_many([], [], [], [], one, one, one, **kw) == ([], [], [])


def test_bucket_gradients_and_vmap_follow_the_formulas():
    rng = np.random.default_rng(5)
    groups = [[a.astype(mx.float64) for a in arrays(rng, s, mx.float32)] for s in [(5,), (2, 3)]]
    flat = [a for k in range(4) for a in (groups[0][k], groups[1][k])]
    scalars = [mx.array(0.3, mx.float64), mx.array(0.7, mx.float64), mx.array(0.4, mx.float64)]

    def many(*a):
        ps, gs, ms, vs = ([a[2 * k], a[2 * k + 1]] for k in range(4))
        out = mx.fast._adam_update_many(ps, gs, ms, vs, *a[8:], beta1=0.9, beta2=0.99, eps=1e-3,
                                        weight_decay=0.05)
        return [x for part in out for x in part]

    def one_by_one(*a):
        out = [composite(*(a[2 * k + i] for k in range(4)), *a[8:]) for i in range(2)]
        return [out[i][k] for k in range(3) for i in range(2)]

    def loss(fn):
        return lambda *a: sum((o * (k + 1)).sum() for k, o in enumerate(fn(*a)))

    argnums = tuple(range(8))
    got = mx.grad(loss(many), argnums=argnums)(*flat, *scalars)
    want = mx.grad(loss(one_by_one), argnums=argnums)(*flat, *scalars)
    for a, b in zip(got, want):
        np.testing.assert_allclose(np.array(a), np.array(b), rtol=1e-5, atol=1e-6)
    batched = [mx.stack([x, x * 0.5]) for x in flat]
    batched[6:] = [mx.abs(x) for x in batched[6:]]
    mapped = mx.vmap(many, in_axes=(0,) * 8 + (None,) * 3)(*batched, *scalars)
    for j in range(2):
        single = many(*(b[j] for b in batched), *scalars)
        for a, b in zip(mapped, single):
            np.testing.assert_allclose(np.array(a[j]), np.array(b), rtol=1e-12, atol=1e-12)


def test_optimizer_buckets_by_dtype_and_keeps_subclass_rules():
    rng = np.random.default_rng(6)
    params = {"a": [mx.array(rng.standard_normal((4,)).astype(np.float32)),
                    {"b": mx.array(rng.standard_normal((2, 2)).astype(np.float32))}],
              "c": mx.ones((3,), dtype=mx.bfloat16), "d": mx.ones((5,), dtype=mx.bfloat16)}
    grads = {"a": [mx.full((4,), 0.5), {"b": mx.full((2, 2), -0.25)}],
             "c": mx.full((3,), 0.5, dtype=mx.bfloat16), "d": mx.full((5,), 1.0, dtype=mx.bfloat16)}
    opt = optim.AdamW(learning_rate=0.1, weight_decay=0.1)
    mx._kernel_counts(True, True)
    new = opt.apply_gradients(grads, params)
    mx.eval(new, opt.state)
    assert mx._kernel_counts(False, True).get("AdamUpdate") == 2  # float32 and bfloat16
    assert isinstance(new["a"], list) and set(new["a"][1]) == {"b"}
    single = optim.AdamW(learning_rate=0.1, weight_decay=0.1)
    for path, g, p in [(("a", 0), grads["a"][0], params["a"][0]), (("c",), grads["c"], params["c"])]:
        state = {"m": mx.zeros_like(p), "v": mx.zeros_like(p)}
        single._state["step"] = mx.array(1, mx.uint64)
        want = single.apply_single(g, p, state)
        got = new["a"][0] if path[0] == "a" else new["c"]
        np.testing.assert_array_equal(np.array(got.astype(mx.float32)),
                                      np.array(want.astype(mx.float32)))

    class Clipped(optim.Adam):  # a subclass's own rule is used, parameter by parameter
        def apply_single(self, gradient, parameter, state):
            return super().apply_single(mx.clip(gradient, -0.1, 0.1), parameter, state)

    clipped = Clipped(learning_rate=0.1)
    out = clipped.apply_gradients({"w": mx.full((3,), 5.0)}, {"w": mx.zeros((3,))})
    plain = optim.Adam(learning_rate=0.1).apply_gradients({"w": mx.full((3,), 0.1)},
                                                          {"w": mx.zeros((3,))})
    np.testing.assert_allclose(np.array(out["w"]), np.array(plain["w"]), rtol=1e-6)


@pytest.mark.parametrize("bucket", [False, True])
def test_an_update_nothing_else_holds_runs_in_place(bucket):
    # When only the step holds the parameter and moments, p', m' and v' take over their
    # buffers: the update allocates nothing the size of a parameter.
    n = 1 << 20
    p, g, m, v = (mx.full((n,), x) for x in (1.0, 0.5, 0.0, 0.0))
    one = mx.array(1.0)
    mx.eval(p, g, m, v, one)
    mx.synchronize()
    held = mx.get_active_memory()
    mx.reset_peak_memory()
    kw = dict(beta1=0.9, beta2=0.999, eps=1e-8)
    if bucket:
        (p,), (m,), (v,) = mx.fast._adam_update_many([p], [g], [m], [v], one, one, one, **kw)
    else:
        p, m, v = mx.fast._adam_update(p, g, m, v, one, one, one, **kw)
    mx.eval(p, m, v)
    assert mx.get_peak_memory() - held < 4 * n // 2, (mx.get_peak_memory(), held)
    np.testing.assert_allclose(np.array(m)[:3], [0.05] * 3, rtol=1e-6)
    np.testing.assert_allclose(np.array(v)[:3], [0.00025] * 3, rtol=1e-6)
    np.testing.assert_allclose(np.array(p)[:3], [1 - 0.05 / (0.00025**0.5 + 1e-8)] * 3, rtol=1e-5)
