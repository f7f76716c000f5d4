"""mlx.optimizers: updates against NumPy references, state, schedules,
clip_grad_norm, MultiOptimizer, compile and an end-to-end regression."""

import math

import mlx.core as mx
import mlx.optimizers as optim
import numpy as np
import pytest
from mlx.utils import tree_flatten, tree_unflatten

SHAPES = {
    "w": (3, 4),
    "b": (4,),
    "layers": [{"k": (2, 3, 2)}, {"k": (5,)}],
    "s": (),
}


def random_tree(rng, shapes=SHAPES, scale=1.0):
    """A NumPy float64 tree with the structure of ``shapes``."""
    if isinstance(shapes, dict):
        return {k: random_tree(rng, v, scale) for k, v in shapes.items()}
    if isinstance(shapes, list):
        return [random_tree(rng, v, scale) for v in shapes]
    return scale * rng.standard_normal(shapes)


def to_mx(tree, dtype=np.float32):
    return tree_unflatten(
        [(k, mx.array(np.asarray(v, dtype))) for k, v in tree_flatten(tree)]
    )


def flat_np(tree):
    return {k: np.array(v) for k, v in tree_flatten(tree)}


def run_against_reference(opt, ref, rng, steps=4, shapes=SHAPES, rtol=2e-5, atol=2e-6):
    """Applies ``steps`` random gradients with ``opt`` and with the NumPy
    reference ``ref(g, p, state, t) -> p`` (t counts updates from 1)."""
    params_np = random_tree(rng, shapes)
    params = to_mx(params_np)
    ref_params = dict(tree_flatten(params_np))
    ref_states = {k: {} for k in ref_params}
    for t in range(1, steps + 1):
        grads_np = random_tree(rng, shapes)
        params = opt.apply_gradients(to_mx(grads_np), params)
        mx.eval(params, opt.state)
        for k, g in tree_flatten(grads_np):
            ref_params[k] = ref(g, ref_params[k], ref_states[k], t)
        got = flat_np(params)
        assert got.keys() == ref_params.keys()
        for k, want in ref_params.items():
            np.testing.assert_allclose(got[k], want, rtol=rtol, atol=atol, err_msg=f"{k} step {t}")
    return params


# ---------------------------------------------------------------------------
# NumPy references (float64), one parameter at a time.


def sgd_ref(lr, momentum=0.0, weight_decay=0.0, dampening=0.0, nesterov=False):
    def ref(g, p, s, t):
        g = g + weight_decay * p
        if momentum <= 0:
            return p - lr * g
        s["v"] = momentum * s.get("v", 0.0) + (1 - dampening) * g
        return p - lr * (g + momentum * s["v"] if nesterov else s["v"])

    return ref


def rmsprop_ref(lr, alpha=0.99, eps=1e-8):
    def ref(g, p, s, t):
        s["v"] = alpha * s.get("v", 0.0) + (1 - alpha) * g**2
        return p - lr * g / (np.sqrt(s["v"]) + eps)

    return ref


def adagrad_ref(lr, eps=1e-8):
    def ref(g, p, s, t):
        s["v"] = s.get("v", 0.0) + g**2
        return p - lr * g / (np.sqrt(s["v"]) + eps)

    return ref


def adadelta_ref(lr, rho=0.9, eps=1e-6):
    def ref(g, p, s, t):
        s["v"] = rho * s.get("v", 0.0) + (1 - rho) * g**2
        d = np.sqrt(s.get("u", 0.0) + eps) / np.sqrt(s["v"] + eps) * g
        s["u"] = rho * s.get("u", 0.0) + (1 - rho) * d**2
        return p - lr * d

    return ref


def adam_ref(lr, betas=(0.9, 0.999), eps=1e-8, bias_correction=False, weight_decay=0.0):
    b1, b2 = betas

    def ref(g, p, s, t):
        p = p * (1 - lr * weight_decay)
        s["m"] = b1 * s.get("m", 0.0) + (1 - b1) * g
        s["v"] = b2 * s.get("v", 0.0) + (1 - b2) * g**2
        m, v = s["m"], s["v"]
        if bias_correction:
            m, v = m / (1 - b1**t), v / (1 - b2**t)
        return p - lr * m / (np.sqrt(v) + eps)

    return ref


def adamax_ref(lr, betas=(0.9, 0.999), eps=1e-8):
    b1, b2 = betas

    def ref(g, p, s, t):
        s["m"] = b1 * s.get("m", 0.0) + (1 - b1) * g
        s["v"] = np.maximum(b2 * s.get("v", 0.0), np.abs(g))
        return p - lr * s["m"] / (s["v"] + eps)

    return ref


def lion_ref(lr, betas=(0.9, 0.99), weight_decay=0.0):
    b1, b2 = betas

    def ref(g, p, s, t):
        m = s.get("m", 0.0)
        c = b1 * m + (1 - b1) * g
        s["m"] = b2 * m + (1 - b2) * g
        return p - lr * (np.sign(c) + weight_decay * p)

    return ref


def rms(x):
    return np.sqrt(np.mean(np.square(x)))


def adafactor_ref(
    lr=None,
    eps=(1e-30, 1e-3),
    clip_threshold=1.0,
    decay_rate=-0.8,
    beta_1=None,
    weight_decay=0.0,
    scale_parameter=True,
    relative_step=True,
    warmup_init=False,
):
    def ref(g, p, s, t):
        if relative_step:
            size = min(1e-6 * t if warmup_init else 1e-2, 1 / math.sqrt(t))
        else:
            size = lr
        if scale_parameter:
            size *= max(eps[1], rms(p))
        beta_2 = 1 - t**decay_rate
        u = g**2 + eps[0]
        if g.ndim >= 2:
            s["row"] = beta_2 * s.get("row", 0.0) + (1 - beta_2) * u.mean(-1)
            s["col"] = beta_2 * s.get("col", 0.0) + (1 - beta_2) * u.mean(-2)
            r = s["row"] / s["row"].mean(-1, keepdims=True)
            u = g / np.sqrt(r[..., :, None] * s["col"][..., None, :])
        else:
            s["v"] = beta_2 * s.get("v", 0.0) + (1 - beta_2) * u
            u = g / np.sqrt(s["v"])
        u = size * u / max(1.0, rms(u) / clip_threshold)
        if beta_1 is not None:
            s["m"] = beta_1 * s.get("m", 0.0) + (1 - beta_1) * u
            u = s["m"]
        return p - weight_decay * size * p - u

    return ref


def newton_schulz_ref(g, steps):
    a, b, c = 3.4445, -4.7750, 2.0315
    tall = g.shape[0] > g.shape[1]
    x = g.T if tall else g
    x = x / (np.linalg.norm(x) + 1e-7)
    for _ in range(steps):
        gram = x @ x.T
        x = a * x + (b * gram + c * gram @ gram) @ x
    return x.T if tall else x


def muon_ref(lr, momentum=0.95, weight_decay=0.01, nesterov=True, ns_steps=5):
    def ref(g, p, s, t):
        g = g + weight_decay * p
        s["v"] = momentum * s.get("v", 0.0) + (1 - momentum) * g
        u = (1 - momentum) * g + momentum * s["v"] if nesterov else s["v"]
        step = lr
        if u.ndim >= 2:
            m = u.reshape(u.shape[0], -1)
            step *= math.sqrt(max(1.0, m.shape[0] / m.shape[1]))
            u = newton_schulz_ref(m, ns_steps).reshape(u.shape)
        return p - step * u

    return ref


# ---------------------------------------------------------------------------
# Updates against the references.

CASES = [
    ("sgd", lambda: optim.SGD(0.1), sgd_ref(0.1)),
    (
        "sgd_momentum_wd",
        lambda: optim.SGD(0.05, momentum=0.9, weight_decay=0.01),
        sgd_ref(0.05, momentum=0.9, weight_decay=0.01),
    ),
    (
        "sgd_dampening",
        lambda: optim.SGD(0.05, momentum=0.8, dampening=0.3),
        sgd_ref(0.05, momentum=0.8, dampening=0.3),
    ),
    (
        "sgd_nesterov",
        lambda: optim.SGD(0.05, momentum=0.9, nesterov=True),
        sgd_ref(0.05, momentum=0.9, nesterov=True),
    ),
    ("rmsprop", lambda: optim.RMSprop(0.01, alpha=0.9), rmsprop_ref(0.01, alpha=0.9)),
    ("adagrad", lambda: optim.Adagrad(0.1), adagrad_ref(0.1)),
    ("adadelta", lambda: optim.AdaDelta(1.0, rho=0.8), adadelta_ref(1.0, rho=0.8)),
    ("adam", lambda: optim.Adam(0.01), adam_ref(0.01)),
    (
        "adam_bias_correction",
        lambda: optim.Adam(0.01, betas=[0.8, 0.95], bias_correction=True),
        adam_ref(0.01, betas=(0.8, 0.95), bias_correction=True),
    ),
    ("adamw", lambda: optim.AdamW(0.01, weight_decay=0.1), adam_ref(0.01, weight_decay=0.1)),
    (
        "adamw_bias_correction",
        lambda: optim.AdamW(0.01, bias_correction=True),
        adam_ref(0.01, weight_decay=0.01, bias_correction=True),
    ),
    ("adamax", lambda: optim.Adamax(0.01, betas=[0.8, 0.9]), adamax_ref(0.01, (0.8, 0.9))),
    ("lion", lambda: optim.Lion(0.01), lion_ref(0.01)),
    ("lion_wd", lambda: optim.Lion(0.01, weight_decay=0.1), lion_ref(0.01, weight_decay=0.1)),
    ("adafactor", lambda: optim.Adafactor(), adafactor_ref()),
    (
        "adafactor_lr_beta1_wd",
        lambda: optim.Adafactor(
            learning_rate=0.05, relative_step=False, beta_1=0.9, weight_decay=0.1
        ),
        adafactor_ref(lr=0.05, relative_step=False, beta_1=0.9, weight_decay=0.1),
    ),
    (
        "adafactor_warmup_clip",
        lambda: optim.Adafactor(warmup_init=True, clip_threshold=0.5, scale_parameter=False),
        adafactor_ref(warmup_init=True, clip_threshold=0.5, scale_parameter=False),
    ),
    ("muon", lambda: optim.Muon(0.02), muon_ref(0.02)),
    (
        "muon_plain_momentum",
        lambda: optim.Muon(0.02, momentum=0.9, weight_decay=0.0, nesterov=False, ns_steps=3),
        muon_ref(0.02, momentum=0.9, weight_decay=0.0, nesterov=False, ns_steps=3),
    ),
]


@pytest.mark.parametrize("make, ref", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_updates_match_numpy(make, ref, rng):
    tol = {"rtol": 1e-4, "atol": 1e-5} if isinstance(make(), optim.Muon) else {}
    run_against_reference(make(), ref, rng, **tol)


def test_muon_orthogonalizes_matrices(rng):
    # Newton-Schulz maps the singular values of the update close to 1.
    for shape in [(6, 4), (4, 6)]:
        opt = optim.Muon(1.0, momentum=0.0, weight_decay=0.0, nesterov=False)
        p = mx.zeros(shape)
        g = mx.array(rng.standard_normal(shape).astype(np.float32))
        delta = -np.array(opt.apply_gradients({"p": g}, {"p": p})["p"])
        delta /= math.sqrt(max(1.0, shape[0] / shape[1]))
        sv = np.linalg.svd(delta, compute_uv=False)
        assert np.all((sv > 0.5) & (sv < 1.5)), sv


def test_superset_parameters_and_update_model(rng):
    params = to_mx(random_tree(rng))
    grads = {"w": mx.ones((3, 4)), "layers": [{}, {"k": mx.ones((5,))}]}
    out = optim.SGD(0.5).apply_gradients(grads, params)
    assert set(out) == {"w", "layers"}
    assert out["layers"][0] == {}
    np.testing.assert_allclose(np.array(out["w"]), np.array(params["w"]) - 0.5, rtol=1e-6)

    # update() calls model.update with the new parameters (a dict model here).
    model = {"w": mx.zeros((5, 5))}
    optim.SGD(0.1).update(model, {"w": mx.ones((5, 5))})
    np.testing.assert_allclose(np.array(model["w"]), np.full((5, 5), -0.1), rtol=1e-6)


@pytest.mark.parametrize("dtype", [mx.float16, mx.bfloat16, mx.float64])
@pytest.mark.parametrize(
    "make",
    [
        lambda: optim.SGD(0.1, momentum=0.9),
        lambda: optim.Adam(0.1, bias_correction=True),
        lambda: optim.AdamW(0.1),
        lambda: optim.Lion(0.1),
        lambda: optim.Adafactor(),
    ],
)
def test_parameter_dtype_is_kept(make, dtype):
    opt = make()
    params = {"w": mx.ones((2, 3), dtype), "b": mx.ones((3,), dtype)}
    grads = {"w": mx.full((2, 3), 0.5, dtype), "b": mx.full((3,), 0.5, dtype)}
    for _ in range(2):
        params = opt.apply_gradients(grads, params)
    assert all(v.dtype == dtype for _, v in tree_flatten(params))
    per_param = {k: v for k, v in opt.state.items() if k not in ("step", "learning_rate")}
    assert all(v.dtype == dtype for _, v in tree_flatten(per_param))


# ---------------------------------------------------------------------------
# State.


def test_state_after_init():
    opt = optim.SGD(learning_rate=1e-1, momentum=0.9)
    params = {"weight": mx.zeros((2, 2)), "bias": mx.zeros((2,)), "layers": [{"w": mx.zeros((3,))}]}
    opt.init(params)
    assert list(opt.state.keys()) == ["step", "learning_rate", "weight", "bias", "layers"]
    assert opt.state["step"].dtype == mx.uint64 and opt.state["step"].item() == 0
    assert opt.state["learning_rate"].dtype == mx.float32
    assert opt.learning_rate.item() == pytest.approx(0.1)
    assert set(opt.state["weight"]) == {"v"} and opt.state["weight"]["v"].shape == (2, 2)
    assert isinstance(opt.state["layers"], list) and opt.state["layers"][0]["w"]["v"].shape == (3,)

    adam = optim.Adam(1e-3)
    adam.init(params)
    assert set(adam.state["bias"]) == {"m", "v"}
    np.testing.assert_array_equal(np.array(adam.state["bias"]["m"]), np.zeros(2))

    factor = optim.Adafactor(beta_1=0.9)
    factor.init({"w": mx.zeros((2, 3, 4)), "b": mx.zeros((4,))})
    assert factor.state["w"]["exp_avg_sq_row"].shape == (2, 3)
    assert factor.state["w"]["exp_avg_sq_col"].shape == (2, 4)
    assert set(factor.state["b"]) == {"exp_avg_sq", "exp_avg"}
    assert "learning_rate" not in factor.state


def test_state_updates_in_place_and_counts_steps():
    opt = optim.Adam(0.1)
    state = opt.state
    params = {"w": mx.ones((2,))}
    opt.init(params)
    per_param = state["w"]
    for _ in range(3):
        params = opt.apply_gradients({"w": mx.ones((2,))}, params)
    assert opt.state is state and state["w"] is per_param
    assert state["step"].item() == 3 and state["step"].dtype == mx.uint64
    np.testing.assert_allclose(np.array(per_param["m"]), 1 - 0.9**3, rtol=1e-6)


def test_init_keeps_existing_state():
    opt = optim.SGD(0.1, momentum=0.5)
    opt.init({"a": mx.ones((2,))})
    opt.state["a"]["v"] = mx.full((2,), 7.0)
    opt.init({"a": mx.ones((2,)), "b": [mx.ones((3,))]})
    np.testing.assert_array_equal(np.array(opt.state["a"]["v"]), [7.0, 7.0])
    assert opt.state["b"][0]["v"].shape == (3,)
    with pytest.raises(TypeError):
        opt.init([mx.ones((2,))])


def test_state_save_and_load_resumes_identically(rng):
    params0 = to_mx(random_tree(rng))
    grads = [to_mx(random_tree(rng)) for _ in range(4)]
    schedule = optim.cosine_decay(0.1, 10)

    def steps(opt, params, gs):
        for g in gs:
            params = opt.apply_gradients(g, params)
        return params

    full = steps(optim.AdamW(schedule), params0, grads)

    first = optim.AdamW(schedule)
    params = steps(first, params0, grads[:2])
    mx.eval(params, first.state)
    saved = dict(tree_flatten(first.state))  # what a checkpoint stores
    second = optim.AdamW(schedule)
    second.state = tree_unflatten(list(saved.items()))
    resumed = steps(second, params, grads[2:])
    assert second.state["step"].item() == 4
    for (k, a), (_, b) in zip(tree_flatten(full), tree_flatten(resumed)):
        np.testing.assert_allclose(np.array(a), np.array(b), rtol=1e-6, err_msg=k)


def test_learning_rate_setter_and_schedule_evaluation():
    opt = optim.SGD(0.5)
    opt.learning_rate = 0.25
    out = opt.apply_gradients({"w": mx.ones((1,))}, {"w": mx.zeros((1,))})
    np.testing.assert_allclose(np.array(out["w"]), [-0.25])

    # A schedule sees the step count before the update: 0 on the first one.
    seen = []
    opt = optim.SGD(lambda step: (seen.append(step.item()), 0.1 * (step + 1))[1])
    assert opt.learning_rate.item() == pytest.approx(0.1)
    w = {"w": mx.zeros((1,))}
    for _ in range(3):
        w = opt.apply_gradients({"w": mx.ones((1,))}, w)
    assert seen == [0, 0, 1, 2]
    np.testing.assert_allclose(np.array(w["w"]), [-(0.1 + 0.2 + 0.3)], rtol=1e-6)


def test_constructor_errors():
    with pytest.raises(ValueError):
        optim.SGD(0.1, nesterov=True)
    with pytest.raises(ValueError):
        optim.SGD(0.1, momentum=0.9, dampening=0.1, nesterov=True)
    with pytest.raises(ValueError):
        optim.RMSprop(0.1, alpha=-0.5)
    with pytest.raises(ValueError):
        optim.Adagrad(0.1, eps=-1.0)
    with pytest.raises(ValueError):
        optim.AdaDelta(0.1, rho=-0.1)
    with pytest.raises(ValueError):
        optim.Adamax(0.1, eps=-1.0)
    with pytest.raises(ValueError):
        optim.Adafactor(relative_step=False)


# ---------------------------------------------------------------------------
# Schedules.


def updated_lr(schedule, updates, make=optim.SGD):
    opt = make(learning_rate=schedule)
    for _ in range(updates):
        opt.update({}, {})
    return opt.learning_rate.item()


def test_schedule_values():
    steps = np.arange(0, 40)
    cases = [
        (optim.exponential_decay(0.1, 0.9), 0.1 * 0.9**steps),
        (optim.step_decay(0.1, 0.9, 10), 0.1 * 0.9 ** (steps // 10)),
        (
            optim.cosine_decay(0.1, 25),
            0.05 * (1 + np.cos(np.pi * np.minimum(steps, 25) / 25)),
        ),
        (
            optim.cosine_decay(0.1, 25, end=0.02),
            0.02 + 0.04 * (1 + np.cos(np.pi * np.minimum(steps, 25) / 25)),
        ),
        (optim.linear_schedule(0.0, 0.1, 30), 0.1 * np.minimum(steps, 30) / 30),
        (optim.linear_schedule(0.5, 0.1, 8), 0.5 - 0.4 * np.minimum(steps, 8) / 8),
    ]
    for schedule, want in cases:
        got = [schedule(mx.array(int(s), mx.uint64)).item() for s in steps]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-8)
        got_int = [float(np.array(schedule(int(s)))) for s in steps[:3]]
        np.testing.assert_allclose(got_int, want[:3], rtol=1e-5, atol=1e-8)


def test_schedules_in_optimizers_match_documented_examples():
    assert updated_lr(optim.cosine_decay(1e-1, 1000), 0) == pytest.approx(0.1)
    assert updated_lr(optim.cosine_decay(1e-1, 1000), 5) == pytest.approx(0.0999961, rel=1e-6)
    assert updated_lr(optim.exponential_decay(1e-1, 0.9), 5) == pytest.approx(0.06561, rel=1e-5)
    assert updated_lr(optim.step_decay(1e-1, 0.9, 10), 21) == pytest.approx(0.081, rel=1e-5)
    assert updated_lr(optim.linear_schedule(0, 1e-1, 100), 0, optim.Adam) == 0.0
    assert updated_lr(optim.linear_schedule(0, 1e-1, 100), 101, optim.Adam) == pytest.approx(0.1)
    joined = optim.join_schedules(
        [optim.linear_schedule(0, 1e-1, steps=10), optim.cosine_decay(1e-1, 200)], [10]
    )
    assert updated_lr(joined, 0, optim.Adam) == 0.0
    assert updated_lr(joined, 12, optim.Adam) == pytest.approx(0.0999938, rel=1e-6)


def test_join_schedules_values_and_errors():
    warm = optim.linear_schedule(0.0, 1.0, 4)
    flat = lambda step: mx.full([], 2.0) + 0 * step
    decay = optim.exponential_decay(1.0, 0.5)
    joined = optim.join_schedules([warm, flat, decay], [4, 6])
    got = [joined(mx.array(s, mx.uint64)).item() for s in range(10)]
    want = [0.0, 0.25, 0.5, 0.75, 2.0, 2.0, 1.0, 0.5, 0.25, 0.125]
    np.testing.assert_allclose(got, want, rtol=1e-6)
    with pytest.raises(ValueError):
        optim.join_schedules([], [])
    with pytest.raises(ValueError):
        optim.join_schedules([warm, decay], [])
    with pytest.raises(ValueError):
        optim.linear_schedule(0.0, 1.0, 0)
    with pytest.raises(ValueError):
        optim.cosine_decay(1.0, 0)
    with pytest.raises(ValueError):
        optim.step_decay(1.0, 0.5, 0)


# ---------------------------------------------------------------------------
# clip_grad_norm.


@pytest.mark.parametrize("max_norm", [0.5, 3.0, 100.0])
def test_clip_grad_norm(rng, max_norm):
    grads_np = random_tree(rng)
    total = math.sqrt(sum(float(np.sum(v**2)) for _, v in tree_flatten(grads_np)))
    clipped, norm = optim.clip_grad_norm(to_mx(grads_np), max_norm)
    assert norm.item() == pytest.approx(total, rel=1e-5)
    scale = min(1.0, max_norm / total)
    got = flat_np(clipped)
    for k, g in tree_flatten(grads_np):
        np.testing.assert_allclose(got[k], g * scale, rtol=1e-5, atol=1e-7)
    assert isinstance(clipped["layers"], list)
    new_total = math.sqrt(sum(float(np.sum(v.astype(np.float64) ** 2)) for v in got.values()))
    assert new_total <= max_norm * (1 + 1e-5)


def test_clip_grad_norm_dtypes():
    clipped, norm = optim.clip_grad_norm({"w1": mx.array([2, 3]), "w2": mx.array([1])}, 2.0)
    assert norm.item() == pytest.approx(math.sqrt(14), rel=1e-6)
    want = np.array([2, 3]) * 2 / math.sqrt(14)
    np.testing.assert_allclose(np.array(clipped["w1"]), want, rtol=1e-5)

    # Half-precision gradients keep their dtype; the norm does not overflow.
    big = {"g": mx.full((4,), 60000.0, mx.float16)}
    clipped, norm = optim.clip_grad_norm(big, 1.0)
    assert clipped["g"].dtype == mx.float16
    assert norm.item() == pytest.approx(120000.0, rel=1e-3)
    np.testing.assert_allclose(np.array(clipped["g"]).astype(np.float32), 0.5, rtol=1e-3)


# ---------------------------------------------------------------------------
# MultiOptimizer.


def test_multi_optimizer_routing(rng):
    params_np = random_tree(rng)
    is_vector = lambda path, w: w.ndim <= 1
    is_layer = lambda path, w: path.startswith("layers.")
    multi = optim.MultiOptimizer(
        [optim.SGD(0.1), optim.Adam(0.01), optim.SGD(0.3, momentum=0.5)],
        [is_layer, is_vector],
    )
    refs = {"layers": sgd_ref(0.1), "vector": adam_ref(0.01), "rest": sgd_ref(0.3, momentum=0.5)}
    params = to_mx(params_np)
    multi.init(params)

    ref_params = dict(tree_flatten(params_np))
    ref_states = {k: {} for k in ref_params}
    route = {
        k: "layers" if k.startswith("layers.") else "vector" if v.ndim <= 1 else "rest"
        for k, v in ref_params.items()
    }
    assert route == {
        "w": "rest",
        "b": "vector",
        "layers.0.k": "layers",
        "layers.1.k": "layers",
        "s": "vector",
    }
    for t in range(1, 4):
        grads_np = random_tree(rng)
        params = multi.apply_gradients(to_mx(grads_np), params)
        for k, g in tree_flatten(grads_np):
            ref_params[k] = refs[route[k]](g, ref_params[k], ref_states[k], t)
        got = flat_np(params)
        assert list(got) == list(ref_params)  # the gradients' order and structure
        for k, want in ref_params.items():
            np.testing.assert_allclose(got[k], want, rtol=2e-5, atol=2e-6, err_msg=k)

    states = multi.state["states"]
    assert len(states) == 3
    assert set(states[0]) == {"step", "learning_rate", "layers"}
    assert set(states[1]) == {"step", "learning_rate", "b", "s"}
    assert set(states[2]) == {"step", "learning_rate", "w"}
    assert [s["step"].item() for s in states] == [3, 3, 3]
    assert multi.learning_rate.item() == pytest.approx(0.1)


def test_multi_optimizer_state_roundtrip_and_errors():
    multi = optim.MultiOptimizer([optim.SGD(0.1), optim.Adam(0.1)], [lambda p, w: p == "a"])
    params = {"a": mx.ones((2,)), "b": mx.ones((2,))}
    params = multi.apply_gradients({"a": mx.ones((2,)), "b": mx.ones((2,))}, params)
    saved = tree_unflatten(tree_flatten(multi.state))
    other = optim.MultiOptimizer([optim.SGD(0.1), optim.Adam(0.1)], [lambda p, w: p == "a"])
    other.state = saved
    np.testing.assert_allclose(np.array(other.state["states"][1]["b"]["m"]), [0.1, 0.1], rtol=1e-6)
    with pytest.raises(ValueError):
        optim.MultiOptimizer([optim.SGD(0.1), optim.Adam(0.1)])
    with pytest.raises(ValueError):
        optim.MultiOptimizer([])
    with pytest.raises(ValueError):
        other.state = {"states": [{}]}


# ---------------------------------------------------------------------------
# Transforms: compile with the state as inputs/outputs, end-to-end training.


def regression_problem(rng, n=64, d=3):
    x = rng.standard_normal((n, d)).astype(np.float32)
    w = np.array([[1.5], [-2.0], [0.5]], np.float32)
    y = x @ w + 0.3
    return mx.array(x), mx.array(y)


def mse(params, x, y):
    return mx.mean(mx.square(x @ params["w"] + params["b"] - y))


@pytest.mark.parametrize(
    "make",
    [
        lambda: optim.SGD(0.1, momentum=0.9),
        lambda: optim.Adam(0.05, bias_correction=True),
        lambda: optim.AdamW(optim.cosine_decay(0.05, 300, 0.005), weight_decay=0.0),
        lambda: optim.RMSprop(0.01),
        lambda: optim.Lion(0.02),
    ],
)
def test_end_to_end_regression_converges(make, rng):
    x, y = regression_problem(rng)
    params = {"w": mx.zeros((3, 1)), "b": mx.zeros((1,))}
    opt = make()
    loss_and_grad = mx.value_and_grad(mse)
    first = None
    for _ in range(300):
        loss, grads = loss_and_grad(params, x, y)
        grads, _ = optim.clip_grad_norm(grads, 10.0)
        params = opt.apply_gradients(grads, params)
        mx.eval(params, opt.state)
        first = loss.item() if first is None else first
    assert mse(params, x, y).item() < 1e-2 * first


@pytest.mark.parametrize("init_first", [True, False], ids=["init", "state made by the first step"])
def test_compiled_step_with_state_inputs_outputs(rng, init_first):
    # Without init the optimizer creates its state inside the first (traced) update, as MLX's
    # compile examples do: the outputs tree grows during that call.
    x, y = regression_problem(rng)
    eager = {"w": mx.zeros((3, 1)), "b": mx.zeros((1,))}
    compiled = {"w": mx.zeros((3, 1)), "b": mx.zeros((1,))}
    eager_opt = optim.Adam(optim.exponential_decay(0.05, 0.99))
    opt = optim.Adam(optim.exponential_decay(0.05, 0.99))
    if init_first:
        opt.init(compiled)
    loss_and_grad = mx.value_and_grad(mse)
    state = [compiled, opt.state]

    def step(x, y):
        loss, grads = loss_and_grad(compiled, x, y)
        grads, _ = optim.clip_grad_norm(grads, 1.0)
        opt.update(compiled, grads)
        return loss

    compiled_step = mx.compile(step, inputs=state, outputs=state)
    for _ in range(5):
        loss, grads = loss_and_grad(eager, x, y)
        grads, _ = optim.clip_grad_norm(grads, 1.0)
        eager_opt.update(eager, grads)
        compiled_loss = compiled_step(x, y)
        mx.eval(state, eager, eager_opt.state)
        assert compiled_loss.item() == pytest.approx(loss.item(), rel=1e-5)
    assert opt.state["step"].item() == 5
    assert opt.learning_rate.item() == pytest.approx(0.05 * 0.99**4, rel=1e-5)
    for k in ("w", "b"):
        np.testing.assert_allclose(np.array(compiled[k]), np.array(eager[k]), rtol=1e-5, atol=1e-6)


def test_update_nn_module():
    nn = pytest.importorskip("mlx.nn")
    model = nn.Linear(2, 2)
    opt = optim.SGD(learning_rate=1e-1, momentum=0.9)
    opt.init(model.trainable_parameters())
    assert list(opt.state.keys()) == ["step", "learning_rate", "weight", "bias"]
    before = {k: np.array(v) for k, v in tree_flatten(model.parameters())}
    x = mx.array([[1.0, 2.0]])
    grads = nn.value_and_grad(model, lambda m: mx.sum(m(x)))(model)[1]
    opt.update(model, grads)
    after = {k: np.array(v) for k, v in tree_flatten(model.parameters())}
    # d sum(W x + b) / dW has rows x; the first momentum step is plain SGD.
    want = before["weight"] - 0.1 * np.array([[1.0, 2.0], [1.0, 2.0]])
    np.testing.assert_allclose(after["weight"], want, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(after["bias"], before["bias"] - 0.1, rtol=1e-6, atol=1e-7)


def test_adam_bias_corrections_are_shared_by_the_parameters(rng):
    # One pair of bias corrections per update, not one per parameter: an eager AdamW update of
    # 40 parameters runs one fused update for all of them and a handful of scalar kernels.
    params = {f"p{i}": mx.array(rng.standard_normal((3, 4)).astype(np.float32)) for i in range(40)}
    grads = {k: mx.array(rng.standard_normal((3, 4)).astype(np.float32)) for k in params}
    opt = optim.AdamW(0.01, bias_correction=True)
    ref = adam_ref(0.01, weight_decay=0.01, bias_correction=True)
    expected = {k: np.array(v, np.float64) for k, v in params.items()}
    states = {k: {} for k in params}
    opt.init(params)  # the moments' zeros are not the update's kernels
    mx.eval(params, grads, opt.state)
    for t in range(1, 4):
        mx._kernel_counts(True, True)
        params = opt.apply_gradients(grads, params)
        mx.eval(params, opt.state)
        counts = mx._kernel_counts(False, True)
        assert counts.get("AdamUpdate") == 1 and sum(counts.values()) <= 1 + 10, counts
        for k in expected:
            expected[k] = ref(np.array(grads[k], np.float64), expected[k], states[k], t)
            np.testing.assert_allclose(np.array(params[k]), expected[k], rtol=1e-5, atol=1e-6)
    # apply_single outside an update sees the corrections of the step count it is given.
    single = optim.Adam(0.1, bias_correction=True)
    p, g = params["p0"], grads["p0"]
    for t in (1, 2, 5):
        single.state["step"] = mx.array(t, mx.uint64)
        state = {}
        single.init_single(p, state)
        out = single.apply_single(g, p, state)
        want = adam_ref(0.1, bias_correction=True)(np.array(g, np.float64),
                                                   np.array(p, np.float64), {}, t)
        np.testing.assert_allclose(np.array(out), want, rtol=1e-5, atol=1e-6)
