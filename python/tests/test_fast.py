"""mx.fast against NumPy references (computed in float64)."""
import numpy as np
import pytest

import mlx.core as mx


def close(a, ref, tol=1e-4):
    np.testing.assert_allclose(np.array(a, dtype=np.float64), ref, rtol=tol, atol=tol)


def rms_norm_ref(x, w, eps):
    y = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    return y if w is None else y * w


def layer_norm_ref(x, w, b, eps):
    y = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps)
    if w is not None:
        y = y * w
    return y if b is None else y + b


@pytest.mark.parametrize("shape", [(7,), (3, 16), (2, 3, 33)])
def test_norms(rng, shape):
    x = rng.standard_normal(shape)
    w = rng.standard_normal(shape[-1])
    b = rng.standard_normal(shape[-1])
    xm = mx.array(x, mx.float32)
    wm, bm = mx.array(w, mx.float32), mx.array(b, mx.float32)
    close(mx.fast.rms_norm(xm, wm, 1e-5), rms_norm_ref(x, w, 1e-5))
    close(mx.fast.rms_norm(xm, None, 1e-3), rms_norm_ref(x, None, 1e-3))
    close(mx.fast.layer_norm(xm, wm, bm, 1e-5), layer_norm_ref(x, w, b, 1e-5))
    close(mx.fast.layer_norm(xm, None, None, 1e-5), layer_norm_ref(x, None, None, 1e-5))
    close(mx.fast.layer_norm(xm, wm, None, eps=1e-5), layer_norm_ref(x, w, None, 1e-5))
    y = mx.fast.rms_norm(mx.array(x, mx.float16), mx.array(w, mx.float16), 1e-5)
    assert y.dtype == mx.float16
    close(y, rms_norm_ref(x, w, 1e-5), 2e-2)
    # Non-contiguous input.
    close(mx.fast.rms_norm(mx.array(x.T.copy(), mx.float32).T, None, 1e-5), rms_norm_ref(x, None, 1e-5))


def test_norm_errors():
    with pytest.raises(ValueError):
        mx.fast.rms_norm(mx.zeros((2, 3)), mx.zeros((4,)), 1e-5)
    with pytest.raises(ValueError):
        mx.fast.layer_norm(mx.zeros((2, 3)), None, mx.zeros((2,)), 1e-5)


def rope_ref(x, dims, traditional, base, scale, offset, freqs=None):
    x = x.astype(np.float64)
    out = x.copy()
    T = x.shape[-2]
    half = dims // 2
    inv = 1.0 / freqs if freqs is not None else base ** (-2.0 * np.arange(half) / dims)
    offset = np.asarray(offset, dtype=np.float64).reshape(-1)
    pos = offset[:, None] + np.arange(T)[None, :]  # (B or 1, T)
    pos = pos.reshape(pos.shape[0], *([1] * (x.ndim - 3)), T, 1)
    theta = pos * scale * inv
    c, s = np.cos(theta), np.sin(theta)
    if traditional:
        x1, x2 = x[..., 0:dims:2], x[..., 1:dims:2]
        out[..., 0:dims:2] = x1 * c - x2 * s
        out[..., 1:dims:2] = x1 * s + x2 * c
    else:
        x1, x2 = x[..., :half], x[..., half:dims]
        out[..., :half] = x1 * c - x2 * s
        out[..., half:dims] = x1 * s + x2 * c
    return out


@pytest.mark.parametrize("traditional", [False, True])
def test_rope(rng, traditional):
    x = rng.standard_normal((2, 3, 5, 16))
    xm = mx.array(x, mx.float32)
    out = mx.fast.rope(xm, 16, traditional=traditional, base=10000.0, scale=1.0, offset=0)
    close(out, rope_ref(x, 16, traditional, 10000.0, 1.0, 0))
    out = mx.fast.rope(xm, 8, traditional=traditional, base=500.0, scale=0.5, offset=3)
    close(out, rope_ref(x, 8, traditional, 500.0, 0.5, 3))
    # Per-batch offsets as an array.
    off = mx.array([2, 7])
    out = mx.fast.rope(xm, 16, traditional=traditional, base=10000.0, scale=1.0, offset=off)
    close(out, rope_ref(x, 16, traditional, 10000.0, 1.0, [2, 7]))
    freqs = rng.uniform(1, 100, 8)
    out = mx.fast.rope(xm, 16, traditional=traditional, base=None, scale=1.0, offset=1,
                       freqs=mx.array(freqs, mx.float32))
    close(out, rope_ref(x, 16, traditional, None, 1.0, 1, freqs), 1e-3)


def test_rope_errors():
    x = mx.zeros((1, 4, 8))
    with pytest.raises(ValueError):
        mx.fast.rope(x, 8, traditional=False, base=10000.0, scale=1.0, offset=0, freqs=mx.zeros((4,)))
    with pytest.raises(TypeError):
        mx.fast.rope(x, 8, False, 10000.0, 1.0, 0)  # keyword-only parameters


def sdpa_scores(q, k, scale, mask=None):
    """The masked scaled scores (B, Nq, Tq, Tkv) of grouped-query attention, -inf where masked."""
    Tq, Tkv = q.shape[2], k.shape[2]
    k = np.repeat(k, q.shape[1] // k.shape[1], axis=1)
    s = scale * q @ np.swapaxes(k, -1, -2)
    if isinstance(mask, str):
        keep = np.arange(Tkv)[None, :] <= np.arange(Tq)[:, None] + Tkv - Tq
        s = np.where(keep, s, -np.inf)
    elif mask is not None and mask.dtype == np.bool_:
        s = np.where(mask, s, -np.inf)
    elif mask is not None:
        s = s + mask
    return s


def sdpa_ref(q, k, v, scale, mask=None, sinks=None):
    v = np.repeat(v, q.shape[1] // k.shape[1], axis=1)
    s = sdpa_scores(q, k, scale, mask)
    m = s.max(-1, keepdims=True)
    if sinks is not None:
        m = np.maximum(m, sinks[None, :, None, None])
    e = np.exp(s - m)
    denom = e.sum(-1, keepdims=True)
    if sinks is not None:
        denom = denom + np.exp(sinks[None, :, None, None] - m)
    return (e / denom) @ v


@pytest.mark.parametrize("heads", [(4, 4), (4, 2), (6, 1)])
def test_scaled_dot_product_attention(rng, heads):
    nq, nkv = heads
    q = rng.standard_normal((2, nq, 5, 8))
    k = rng.standard_normal((2, nkv, 7, 8))
    v = rng.standard_normal((2, nkv, 7, 6))
    qm, km, vm = (mx.array(a, mx.float32) for a in (q, k, v))
    scale = 1 / np.sqrt(8)
    close(mx.fast.scaled_dot_product_attention(qm, km, vm, scale=scale), sdpa_ref(q, k, v, scale))
    close(
        mx.fast.scaled_dot_product_attention(qm, km, vm, scale=scale, mask="causal"),
        sdpa_ref(q, k, v, scale, "causal"),
    )
    keep = rng.random((5, 7)) > 0.3
    keep[:, 0] = True
    close(
        mx.fast.scaled_dot_product_attention(qm, km, vm, scale=scale, mask=mx.array(keep)),
        sdpa_ref(q, k, v, scale, keep),
    )
    additive = rng.standard_normal((2, 1, 5, 7))
    close(
        mx.fast.scaled_dot_product_attention(qm, km, vm, scale=scale,
                                             mask=mx.array(additive, mx.float32)),
        sdpa_ref(q, k, v, scale, additive),
    )
    sinks = rng.standard_normal(nq)
    close(
        mx.fast.scaled_dot_product_attention(qm, km, vm, scale=scale, mask="causal",
                                             sinks=mx.array(sinks, mx.float32)),
        sdpa_ref(q, k, v, scale, "causal", sinks),
    )


def test_sdpa_errors():
    q = mx.zeros((1, 2, 3, 4))
    with pytest.raises(ValueError):
        mx.fast.scaled_dot_product_attention(q, q, q, scale=1.0, mask="banded")
    with pytest.raises(TypeError):
        mx.fast.scaled_dot_product_attention(q, q, q, scale=1.0, mask=3)
    with pytest.raises(ValueError):
        mx.fast.scaled_dot_product_attention(q, mx.zeros((1, 3, 3, 4)), mx.zeros((1, 3, 3, 4)),
                                             scale=1.0)


@pytest.mark.parametrize("d", [16, 40, 72])
def test_attention_rows_do_not_depend_on_their_neighbours(d):
    # A prompt evaluated in chunks (a KV cache) must give the same bits as evaluated whole:
    # a query row's result may not depend on which other rows share its kernel tile.
    rng = np.random.default_rng(0)
    for tq, tk, (hq, hk) in [(4, 4, (2, 1)), (17, 64, (8, 2)), (70, 64, (1, 1)), (70, 73, (8, 2))]:
        q = mx.array(rng.standard_normal((1, hq, tq, d)).astype(np.float32))
        k = mx.array(rng.standard_normal((1, hk, tk, d)).astype(np.float32))
        v = mx.array(rng.standard_normal((1, hk, tk, d)).astype(np.float32))
        whole = mx.fast.scaled_dot_product_attention(q, k, v, scale=0.25, mask="causal", stream=mx.cpu)
        for split in (1, tq // 2, tq - 1):
            part = mx.fast.scaled_dot_product_attention(
                q[:, :, split:], k, v, scale=0.25, mask="causal", stream=mx.cpu)
            np.testing.assert_array_equal(np.array(whole[:, :, split:]), np.array(part))


def sdpa_vjp_ref(q, k, v, do, scale, mask=None):
    """float64 (dq, dk, dv) of grouped-query attention for the output cotangent do."""
    g = q.shape[1] // k.shape[1]
    kr, vr = np.repeat(k, g, axis=1), np.repeat(v, g, axis=1)
    s = sdpa_scores(q, k, scale, mask)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    dp = do @ np.swapaxes(vr, -1, -2)
    ds = p * (dp - (dp * p).sum(-1, keepdims=True))
    dq = scale * ds @ kr
    dk = scale * np.swapaxes(ds, -1, -2) @ q
    dv = np.swapaxes(p, -1, -2) @ do

    def fold(x):  # the group's query heads summed into their key/value head
        return x.reshape(x.shape[0], -1, g, *x.shape[2:]).sum(2)

    return dq, fold(dk), fold(dv)


@pytest.mark.parametrize("d", [8, 24, 40, 72])
@pytest.mark.parametrize("heads", [(4, 4), (4, 2)])
@pytest.mark.parametrize("mask", [None, "causal", "bool", "additive"])
def test_attention_head_dims(rng, d, heads, mask):
    """Head dims that are not whole vectors (padded rows in both passes; 72 takes the dot
    products, the others the outer products), forward and backward against float64."""
    nq, nkv = heads
    tq, tk = 21, 70
    q = rng.standard_normal((2, nq, tq, d))
    k = rng.standard_normal((2, nkv, tk, d))
    v = rng.standard_normal((2, nkv, tk, d))
    do = rng.standard_normal((2, nq, tq, d))
    m = mask
    if mask == "bool":
        m = rng.random((tq, tk)) > 0.3
        m[:, 0] = True
    elif mask == "additive":
        m = rng.standard_normal((2, 1, tq, tk))
    mm = m
    if mask in ("bool", "additive"):
        mm = mx.array(m, mx.bool_ if mask == "bool" else mx.float32)
    scale = 1 / np.sqrt(d)

    def f(a, b, c):
        return mx.fast.scaled_dot_product_attention(a, b, c, scale=scale, mask=mm, stream=mx.cpu)

    args = [mx.array(a, mx.float32) for a in (q, k, v)]
    out, grads = mx.vjp(f, args, [mx.array(do, mx.float32)])
    close(out[0], sdpa_ref(q, k, v, scale, m), 2e-4)
    for got, ref in zip(grads, sdpa_vjp_ref(q, k, v, do, scale, m)):
        close(got, ref, 2e-4)


# ---------------------------------------------------------------------------- attention's lse
# A forward traced for a backward outputs each query row's log-sum-exp (float32 (B, N_q, T_q))
# for its backward to read (on GPU streams; mx.fast._set_attention_lse("always") forces it on
# the CPU, whose backward ignores it, so every result below must be unchanged by it).


def sdpa_lse_ref(q, k, scale, mask=None, sinks=None):
    """float64 log-sum-exp of each row's logits (a sink's included), -inf for a row of none."""
    s = sdpa_scores(q, k, scale, mask)
    if sinks is not None:
        sink = np.broadcast_to(np.asarray(sinks)[None, :, None, None], s.shape[:-1] + (1,))
        s = np.concatenate([sink, s], axis=-1)
    m = s.max(-1, initial=-np.inf)
    safe = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        return np.where(np.isfinite(m), safe + np.log(np.exp(s - safe[..., None]).sum(-1)), -np.inf)


@pytest.fixture
def lse_mode():
    """Sets mx.fast._set_attention_lse's mode for the test, and restores it after."""
    previous = mx.fast._set_attention_lse("gpu")
    yield mx.fast._set_attention_lse
    mx.fast._set_attention_lse(previous)


def lse_count(fn, *args):
    """How many fused attention forwards that wrote lse evaluating fn(*args) ran."""
    mx._kernel_counts(True)
    mx.eval(fn(*args))
    return mx._kernel_counts(False).get("ScaledDotProductAttention:lse", 0)


@pytest.mark.parametrize("dtype", [mx.float32, mx.float64, mx.float16, mx.bfloat16])
def test_sdpa_lse_output(rng, dtype):
    """The lse output against NumPy's float64 log-sum-exp: grouped heads, causal rows that see no
    key (-inf), masks (a fully masked row), additive masks, sinks, no keys."""
    def check(shape_q, shape_k, mask=None, sinks=None, dv=6):
        q = mx.array(rng.standard_normal(shape_q)).astype(dtype)
        k = mx.array(rng.standard_normal(shape_k)).astype(dtype)
        v = mx.array(rng.standard_normal(shape_k[:3] + (dv,))).astype(dtype)
        mm = mask if isinstance(mask, (str, type(None))) else mx.array(mask)
        if isinstance(mask, np.ndarray) and mask.dtype != np.bool_:  # additive: in the dtype
            mm = mm.astype(dtype)
            mask = np.array(mm.astype(mx.float64))
        sm = None if sinks is None else mx.array(sinks).astype(dtype)
        out, lse = mx.fast._scaled_dot_product_attention_with_lse(
            q, k, v, scale=0.4, mask=mm, sinks=sm, stream=mx.cpu)
        assert lse.dtype == mx.float32 and lse.shape == shape_q[:3]
        f64 = [np.array(a.astype(mx.float64)) for a in (q, k)]
        sinks64 = None if sm is None else np.array(sm.astype(mx.float64))
        want = sdpa_lse_ref(*f64, 0.4, mask, sinks64)
        got = np.array(lse)
        np.testing.assert_array_equal(np.isneginf(got), np.isneginf(want))
        np.testing.assert_allclose(got[np.isfinite(want)], want[np.isfinite(want)], rtol=1e-5,
                                   atol=1e-5)
        plain = mx.fast.scaled_dot_product_attention(q, k, v, scale=0.4, mask=mm, sinks=sm,
                                                     stream=mx.cpu)
        np.testing.assert_array_equal(np.array(out.astype(mx.float32)),
                                      np.array(plain.astype(mx.float32)))

    check((2, 4, 5, 8), (2, 2, 7, 8), "causal")
    check((1, 6, 9, 8), (1, 2, 70, 8))
    check((1, 2, 9, 8), (1, 1, 4, 8), "causal")  # rows 0..4 see no key
    keep = rng.random((5, 7)) > 0.3
    keep[2] = False
    check((2, 4, 5, 8), (2, 2, 7, 8), keep)
    check((2, 4, 5, 8), (2, 2, 7, 8), keep, sinks=rng.standard_normal(4))
    check((2, 4, 5, 8), (2, 2, 7, 8), rng.standard_normal((2, 1, 5, 7)).astype(np.float32))
    check((1, 2, 3, 8), (1, 2, 0, 8))
    check((1, 2, 3, 8), (1, 2, 0, 8), sinks=np.array([0.5, -1.0]))


def attention_loss(causal=True, stream=mx.cpu):
    def loss(q, k, v, w):
        out = mx.fast.scaled_dot_product_attention(q, k, v, scale=0.35,
                                                   mask="causal" if causal else None, stream=stream)
        return (out * w).sum(stream=stream)
    return loss


def attention_args(rng, dtype=mx.float32, b=2, nq=4, nkv=2, tq=6, tk=9, d=8, dv=5):
    return [mx.array(rng.standard_normal(s)).astype(dtype)
            for s in ((b, nq, tq, d), (b, nkv, tk, d), (b, nkv, tk, dv), (b, nq, tq, dv))]


def test_sdpa_lse_only_where_traced(rng, lse_mode):
    """Plain calls never ask for lse; a forward traced by grad, value_and_grad or compile (either
    way round) does where the mode says (the default: GPU streams only, so not here)."""
    args = attention_args(rng)
    loss = attention_loss()
    grad = mx.grad(loss, argnums=(0, 1, 2))
    vg = mx.value_and_grad(loss, argnums=(0, 1, 2))
    for mode, traced in (("gpu", 0), ("never", 0), ("always", 1)):
        lse_mode(mode)
        assert lse_count(loss, *args) == 0
        assert lse_count(grad, *args) == traced
        assert lse_count(vg, *args) == traced
        assert lse_count(mx.compile(vg), *args) == traced
        assert lse_count(mx.compile(grad), *args) == traced
        assert lse_count(mx.grad(mx.compile(loss), argnums=(0, 1, 2)), *args) == traced


def test_sdpa_lse_gradients_are_unchanged(rng, lse_mode):
    """With lse forced on the CPU, gradients are the same bits (the CPU backward forms its row
    statistics itself) and match finite differences in float64."""
    args = attention_args(rng, mx.float64)
    for causal in (False, True):
        grad = mx.grad(attention_loss(causal), argnums=(0, 1, 2))
        lse_mode("never")
        want = grad(*args)
        lse_mode("always")
        got = grad(*args)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(np.array(g), np.array(w))
        loss = attention_loss(causal)
        for i, g in enumerate(got):
            x = np.array(args[i])
            direction = rng.standard_normal(x.shape)
            eps = 1e-6
            plus, minus = list(args), list(args)
            plus[i] = mx.array(x + eps * direction, dtype=mx.float64)
            minus[i] = mx.array(x - eps * direction, dtype=mx.float64)
            fd = (loss(*plus).item() - loss(*minus).item()) / (2 * eps)
            np.testing.assert_allclose((np.array(g) * direction).sum(), fd, rtol=1e-6, atol=1e-8)


def test_sdpa_lse_vmap_and_grad_of_grad(rng, lse_mode):
    """vmap of grad (the backward's lse folded like the queries) and grad of grad (the
    backward's own rules recompute lse) with lse forced, against the same without it."""
    q, k, v, w = attention_args(rng, mx.float64)
    qs = mx.stack([q, q * 0.5, -q])
    loss = attention_loss()
    results = {}
    for mode in ("never", "always"):
        lse_mode(mode)
        assert lse_count(mx.vmap(mx.grad(loss, argnums=(0, 1)), in_axes=(0, None, None, None)),
                         qs, k, v, w) == (mode == "always")
        mapped = mx.vmap(mx.grad(loss, argnums=(0, 1)), in_axes=(0, None, None, None))(qs, k, v, w)
        keys_mapped = mx.vmap(mx.grad(loss, argnums=2), in_axes=(None, 0, None, None))(
            q, mx.stack([k, 2 * k]), v, w)
        second = mx.grad(lambda a, b: (mx.grad(loss, argnums=(0, 1))(a, b, v, w)[1] ** 2).sum(),
                         argnums=(0, 1))(q, k)
        results[mode] = [*mapped, keys_mapped, *second]
    for got, want in zip(results["always"], results["never"]):
        np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-10, atol=1e-12)
    # vmap of grad equals grad per slice.
    for i in range(3):
        per = mx.grad(loss, argnums=(0, 1))(qs[i], k, v, w)
        np.testing.assert_allclose(np.array(results["always"][0][i]), np.array(per[0]),
                                   rtol=1e-10, atol=1e-12)


def test_sdpa_lse_export_round_trip(rng, tmp_path, lse_mode):
    """A training step exported with lse forced holds the two-output forward and the backward
    reading it; the imported step gives the same values and still writes lse."""
    args = attention_args(rng)
    vg = mx.value_and_grad(attention_loss(), argnums=(0, 1, 2))

    def step(q, k, v, w):
        value, grads = vg(q, k, v, w)
        return [value, *grads]

    lse_mode("always")
    path = str(tmp_path / "attention_lse.mlxfn")
    mx.export_function(path, step, *args)
    lse_mode("never")
    # An imported function runs on the default device: the CPU here, whose kernel takes any
    # head size (the GPU's fused kernels need 64 or more and would run the composite).
    with mx.stream(mx.cpu):
        imported = mx.import_function(path)
    assert lse_count(lambda *a: imported(*a), *args) == 1
    for got, want in zip(imported(*args), step(*args)):
        np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-5, atol=1e-6)


def test_sdpa_lse_compile_and_jvp(rng, lse_mode):
    """compile of a training step and jvp (whose rule gives lse a tangent too) with lse forced,
    against the same without it."""
    args = attention_args(rng)
    loss = attention_loss()
    tangents = [mx.array(rng.standard_normal(a.shape).astype(np.float32)) for a in args[:3]]
    jvp = lambda *a: mx.jvp(lambda q, k, v: loss(q, k, v, args[3]), list(a), tangents)[1]
    results = {}
    for mode in ("never", "always"):
        lse_mode(mode)
        vg = mx.compile(mx.value_and_grad(loss, argnums=(0, 1, 2)))  # traced in this mode
        assert lse_count(vg, *args) == (mode == "always")
        value, grads = vg(*args)
        results[mode] = [value, *grads, *jvp(*args[:3])]
    for got, want in zip(results["always"], results["never"]):
        np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-6, atol=1e-7)
