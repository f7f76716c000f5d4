"""mx.fast._adam_update, the fused Adam / AdamW step behind mlx.optimizers.Adam and AdamW."""
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
        assert mx._kernel_counts(False, True).get("AdamUpdate") == 2
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
