"""compile's fusion: fused regions equal the unfused ops (values, gradients, every elementwise op
and dtype), run as one kernel per region, keep working for broadcast, strided and shapeless
inputs, and the memory plan predicts the measured peak."""
import os
import subprocess
import sys
from functools import partial

import numpy as np
import pytest

import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
from mlx.utils import tree_flatten

# The names eval counts for elementwise kernels (Unary and Binary count as their op).
ELEMENTWISE = {
    "Select", "AsType", "Compiled", "Abs", "Negative", "Sign", "Square", "Sqrt", "Rsqrt", "Exp",
    "Expm1", "Log", "Log2", "Log10", "Log1p", "Sin", "Cos", "Tan", "ArcSin", "ArcCos", "ArcTan",
    "Sinh", "Cosh", "Tanh", "ArcSinh", "ArcCosh", "ArcTanh", "Erf", "ErfInv", "Sigmoid", "Gelu",
    "GeluApprox", "Silu", "Floor", "Ceil", "Round", "Trunc", "LogicalNot", "BitwiseInvert",
    "Conjugate",
    "Real", "Imag", "IsNaN", "IsInf", "IsPosInf", "IsNegInf", "IsFinite", "Add", "Subtract",
    "Multiply", "Divide", "Remainder", "FloorDivide", "Power", "Maximum", "Minimum", "Equal",
    "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual", "LogicalAnd", "LogicalOr",
    "LogAddExp", "ArcTan2", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "LeftShift", "RightShift",
    "NaNEqual", "GeluVjp", "GeluApproxVjp", "SiluVjp"}
# Primitives that never run a kernel of their own on the host.
VIEWS = {"Broadcast", "DynamicBroadcast", "Transpose", "Slice", "Split", "Reshape", "AsStrided",
         "Diagonal", "StopGradient", "Depends", "SqueezeAxes", "ExpandAxes", "Copy"}

DTYPES = [mx.bool_, mx.uint8, mx.uint16, mx.uint32, mx.uint64, mx.int8, mx.int16, mx.int32,
          mx.int64, mx.float16, mx.bfloat16, mx.float32, mx.complex64]

UNARY = ["abs", "negative", "sign", "square", "sqrt", "rsqrt", "exp", "expm1", "log", "log2",
         "log10", "log1p", "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh",
         "tanh", "arcsinh", "arccosh", "arctanh", "erf", "erfinv", "sigmoid", "floor", "ceil",
         "round", "logical_not", "bitwise_invert", "conjugate", "real", "imag", "isnan", "isinf",
         "isposinf", "isneginf", "isfinite", "_gelu", "_gelu_approx", "_silu"]
BINARY = ["add", "subtract", "multiply", "divide", "remainder", "floor_divide", "power",
          "maximum", "minimum", "equal", "not_equal", "less", "less_equal", "greater",
          "greater_equal", "logical_and", "logical_or", "logaddexp", "arctan2", "bitwise_and",
          "bitwise_or", "bitwise_xor", "left_shift", "right_shift", "_gelu_vjp",
          "_gelu_approx_vjp", "_silu_vjp"]


@pytest.fixture(autouse=True)
def on_the_host(monkeypatch):
    """These tests check the host's fused kernels (interpreter, generated C++, reduction
    epilogues, memory plans), so they run on the host whatever the default device, and so do
    their subprocesses. The GPU's generated kernels: test_cross_device.py."""
    saved = mx.default_device()
    mx.set_default_device(mx.cpu)
    monkeypatch.setenv("MLX_DEFAULT_DEVICE", "cpu")
    yield
    mx.set_default_device(saved)


def counts(fn):
    """The primitives that ran while fn() was evaluated, by name."""
    mx._kernel_counts(True, True)
    try:
        mx.eval(fn())
    finally:
        c = mx._kernel_counts(False, True)
    return c


def kernels(c):
    return {k: v for k, v in c.items() if k not in VIEWS}


def elementwise(c):
    return {k: v for k, v in c.items() if k in ELEMENTWISE}


def warm_counts(f, *args):
    """The kernels of a call of f after a first call (which traces and folds constants)."""
    mx.eval(f(*args))
    return counts(lambda: f(*args))


def sample(dtype, shape, rng, positive=False):
    if dtype == mx.bool_:
        return mx.array(rng.random(shape) > 0.5)
    if dtype == mx.complex64:
        return mx.array((rng.standard_normal(shape) + 1j * rng.standard_normal(shape))
                        .astype(np.complex64))
    if mx.issubdtype(dtype, mx.integer):
        lo = 1 if positive else (0 if mx.issubdtype(dtype, mx.unsignedinteger) else -5)
        return mx.array(rng.integers(lo, 7, shape)).astype(dtype)
    x = rng.uniform(0.1, 0.9, shape) if positive else rng.standard_normal(shape)
    return mx.array(x.astype(np.float32)).astype(dtype)


def as_numpy(a):
    if a.dtype == mx.bfloat16:
        a = a.astype(mx.float32)
    return np.array(a)


def same(a, b):
    assert a.shape == b.shape and a.dtype == b.dtype
    x, y = as_numpy(a), as_numpy(b)
    if np.issubdtype(x.dtype, np.inexact):
        np.testing.assert_array_equal(np.isnan(x), np.isnan(y))
        x, y = np.where(np.isnan(x), 0, x), np.where(np.isnan(y), 0, y)
    np.testing.assert_array_equal(x, y)


def interpreted_and_generated(f, *args):
    """f's results through the fused-region interpreter, then through generated kernels (built
    first; regions without a generated form stay interpreted)."""
    mx._set_fused_kernel_generation(False)
    try:
        interpreted = f(*args)
        mx.eval(interpreted)
    finally:
        mx._set_fused_kernel_generation(True)
    mx.eval(f(*args))
    mx._fused_kernel_stats(True)
    return interpreted, f(*args)


def unfused_and_fused(fun, *args):
    """(uncompiled, compiled) results; the compiled one runs fewer elementwise kernels (one per
    region instead of one per op), and its interpreter and generated kernels agree exactly."""
    ref = fun(*args)
    unfused = sum(elementwise(counts(lambda: fun(*args))).values())
    compiled = mx.compile(fun)
    fused = sum(elementwise(warm_counts(compiled, *args)).values())
    assert fused <= 1 or fused < unfused, (fused, unfused)
    interpreted, generated = interpreted_and_generated(compiled, *args)
    for a, b in zip(*(r if isinstance(r, (list, tuple)) else [r]
                      for r in (interpreted, generated))):
        same(a, b)
    return ref, generated


@pytest.mark.parametrize("name", UNARY)
def test_every_unary_op_and_dtype(name, rng):
    op = getattr(mx, name)
    checked = 0
    for dt in DTYPES:
        x = sample(dt, (3, 37), rng, positive=name in {"arccosh"})
        if name == "arccosh" and mx.issubdtype(dt, mx.floating):
            x = x + 1
        cond = mx.array(rng.random((3, 37)) > 0.3)
        fun = lambda x, c: mx.where(c, op(x), op(x))  # noqa: E731  two ops: one region
        try:
            mx.eval(fun(x, cond))
        except ValueError:
            continue  # the op does not take this dtype
        ref, got = unfused_and_fused(fun, x, cond)
        same(ref, got)
        checked += 1
    assert checked > 0


@pytest.mark.parametrize("name", BINARY)
def test_every_binary_op_and_dtype(name, rng):
    op = getattr(mx, name)
    checked = 0
    for dt in DTYPES:
        pos = name in {"remainder", "floor_divide", "divide", "left_shift", "right_shift",
                       "power"}
        x, y = sample(dt, (4, 29), rng), sample(dt, (4, 29), rng, positive=pos)
        fun = lambda x, y: op(mx.where(x == x, x, y), y)  # noqa: E731
        try:
            mx.eval(fun(x, y))
        except ValueError:
            continue
        ref, got = unfused_and_fused(fun, x, y)
        same(ref, got)
        checked += 1
    assert checked > 0


def test_casts_and_scalar_power_fuse_exactly(rng):
    x = sample(mx.float16, (8, 33), rng)
    fun = lambda x: (x.astype(mx.float32) ** 2 + 1).astype(mx.bfloat16) * 3  # noqa: E731
    ref, got = unfused_and_fused(fun, x)
    same(ref, got)


@pytest.mark.parametrize("name", ["exp", "sin", "tanh", "sigmoid", "erf", "log1p", "sqrt"])
def test_gradients_equal(name, rng):
    op = getattr(mx, name)
    x = sample(mx.float32, (5, 41), rng, positive=True)
    y = sample(mx.float32, (41,), rng)
    loss = lambda x, y: mx.sum(op(x) * y + x * x / (y * y + 1))  # noqa: E731
    g = mx.grad(loss, argnums=[0, 1])
    ref = g(x, y)
    for got in (mx.compile(g)(x, y), mx.grad(mx.compile(loss), argnums=[0, 1])(x, y)):
        for a, b in zip(ref, got):
            np.testing.assert_allclose(np.array(a), np.array(b), rtol=1e-5, atol=1e-6)


def test_jvp_and_vmap_through_a_fused_region(rng):
    x = sample(mx.float32, (6, 7), rng)
    f = mx.compile(lambda x: mx.exp(x) * x + 1)
    ref = mx.jvp(lambda x: mx.exp(x) * x + 1, [x], [mx.ones_like(x)])[1][0]
    np.testing.assert_allclose(np.array(mx.jvp(f, [x], [mx.ones_like(x)])[1][0]),
                               np.array(ref), rtol=1e-6)
    np.testing.assert_allclose(np.array(mx.vmap(f)(x)), np.array(mx.exp(x) * x + 1), rtol=1e-6)


def test_broadcast_strided_and_empty_inputs(rng):
    fun = lambda a, b, c: mx.tanh(a * b + c) - a / (mx.abs(c) + 1)  # noqa: E731
    a = sample(mx.float32, (7, 1, 5), rng)
    b = sample(mx.float32, (3, 1), rng)
    c = sample(mx.float32, (5, 3, 7), rng).transpose(2, 1, 0)  # not contiguous
    ref, got = unfused_and_fused(fun, a, b, c)
    np.testing.assert_allclose(np.array(got), np.array(ref), rtol=1e-6)
    s = sample(mx.float32, (9, 20), rng)[::2, 3::3]  # strided slice
    ref, got = unfused_and_fused(lambda x: mx.exp(x) * 2 + 1, s)
    np.testing.assert_allclose(np.array(got), np.array(ref), rtol=1e-6)
    e = mx.zeros((0, 4))
    assert mx.compile(lambda x: mx.exp(x) * 2 + 1)(e).shape == (0, 4)
    one = mx.array([[2.0]])
    ref, got = unfused_and_fused(lambda x: mx.exp(x) * 2 + 1, one)
    same(ref, got)


def test_multiple_outputs_and_intermediates_used_outside(rng):
    def fun(x, w):
        h = mx.exp(x) + 1
        return h * 2, mx.sum(h), (h @ w) * 3 + h[:, :1]

    x, w = sample(mx.float32, (8, 8), rng), sample(mx.float32, (8, 8), rng)
    ref = fun(x, w)
    got = mx.compile(fun)(x, w)
    for a, b in zip(ref, got):
        np.testing.assert_allclose(np.array(a), np.array(b), rtol=1e-5)


def test_donation_keeps_inputs_intact(rng):
    x = sample(mx.float32, (64, 64), rng)
    keep = np.array(x)
    f = mx.compile(lambda x: mx.exp(x * 2) + x)
    y = f(x)
    mx.eval(y)
    np.testing.assert_array_equal(np.array(x), keep)
    # An intermediate the region consumes last is written in place.
    f2 = mx.compile(lambda x: mx.sin(x @ x) * 2 + 1)
    plan = f2.memory_plan(x)
    assert any(step.startswith("Compiled") for step, _ in plan["reused_in_place"]), plan


def test_shapeless_recompiles_once_and_falls_back_when_shapes_split(rng):
    traces = []

    def fun(x, y):
        traces.append(1)
        h = mx.exp(x)
        return h, h * y

    f = mx.compile(fun, shapeless=True)
    for shape in [(4, 6), (2, 9), (5, 1)]:
        x, y = sample(mx.float32, shape, rng), sample(mx.float32, shape, rng)
        a, b = f(x, y)
        np.testing.assert_allclose(np.array(b), np.array(mx.exp(x) * y), rtol=1e-6)
    assert len(traces) == 1  # cache hits for every later shape
    # exp(x) keeps x's shape while h * y broadcasts: the region runs unfused, still right.
    x, y = sample(mx.float32, (1, 6), rng), sample(mx.float32, (3, 6), rng)
    a, b = f(x, y)
    assert a.shape == (1, 6) and b.shape == (3, 6)
    np.testing.assert_allclose(np.array(b), np.array(mx.exp(x) * y), rtol=1e-6)
    assert len(traces) == 1


def test_gelu_is_one_kernel(rng):
    x = sample(mx.float32, (64, 256), rng)
    erf_gelu = lambda x: 0.5 * x * (1 + mx.erf(x / np.sqrt(2.0)))  # noqa: E731
    assert kernels(warm_counts(mx.compile(erf_gelu), x)) == {"Compiled": 1}
    tanh_gelu = lambda x: 0.5 * x * (  # noqa: E731
        1 + mx.tanh(0.7978845608 * (x + 0.044715 * (x * x * x))))
    assert kernels(warm_counts(mx.compile(tanh_gelu), x)) == {"Compiled": 1}
    # The unfused composition pays one kernel per op.
    assert sum(elementwise(counts(lambda: erf_gelu(x))).values()) >= 4


def test_adamw_update_is_one_step_per_dtype(rng):
    model = nn.Linear(64, 128)
    opt = optim.AdamW(learning_rate=1e-3, weight_decay=0.1)
    opt.init(model.trainable_parameters())
    grads = {"weight": mx.ones((128, 64)), "bias": mx.ones((128,))}
    state = [model.state, opt.state]

    @partial(mx.compile, inputs=state, outputs=state)
    def update(grads):
        opt.update(model, grads)

    update(grads)
    mx.eval(state)
    mx._kernel_counts(True, True)
    update(grads)
    mx.eval(state)
    c = mx._kernel_counts(False, True)
    # One fused step for both parameters (m, v and each parameter in one pass: AdamW takes
    # fast._adam_update_many) and the step counter's add: nothing runs per op over a parameter.
    assert c["AdamUpdate"] == 1 and elementwise(c) == {"Add": 1}, c


def test_residual_dropout_attention_is_one_elementwise_kernel(rng):
    B, H, L, D = 2, 2, 16, 8
    x = sample(mx.float32, (B, H, L, D), rng)
    drop = nn.Dropout(0.1)
    drop.train()

    def block(x, key):
        a = mx.fast.scaled_dot_product_attention(x, x, x, scale=D ** -0.5)
        keep = mx.random.uniform(shape=a.shape, key=key) < 0.9
        return x + mx.where(keep, a / 0.9, 0)

    key = mx.random.key(0)
    c = warm_counts(mx.compile(block), x, key)
    assert elementwise(c) == {"Compiled": 1}, c
    del drop


def test_generated_kernels_are_cached_in_memory_and_on_disk(rng, tmp_path):
    code = ("import mlx.core as mx\n"
            "f = mx.compile(lambda x, y: mx.exp(x) * y + 1.0)\n"
            "for n in (3, 1000, 4099):\n"
            "    mx.eval(f(mx.ones((n,)), mx.ones((n,))))\n"
            "    mx._fused_kernel_stats(True)\n"
            "    mx.eval(f(mx.ones((n,)), mx.ones((n,))))\n"
            "print(mx._fused_kernel_stats(True))\n")
    env = dict(os.environ, MLX_KERNEL_CACHE=str(tmp_path))
    runs = [eval(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                                text=True, check=True).stdout) for _ in range(2)]
    # One kernel for every shape; the second process finds it on disk.
    assert runs[0]["built"] == 1 and runs[0]["from_disk"] == 0 and runs[0]["memory_hits"] >= 3
    assert runs[1]["built"] == 0 and runs[1]["from_disk"] == 1 and runs[1]["interpreted"] == 0
    assert len([p for p in os.listdir(tmp_path) if p.endswith(".so")]) == 1


def test_disable_compile_and_debug_print(rng, tmp_path):
    x = sample(mx.float32, (16, 16), rng)
    f = mx.compile(lambda x: mx.exp(x) * 2 + 1)
    mx.disable_compile()
    try:
        c = kernels(counts(lambda: f(x)))
    finally:
        mx.enable_compile()
    assert "Compiled" not in c and c.get("Multiply", 0) == 1 and c.get("Exp", 0) == 1
    code = ("import mlx.core as mx\n"
            "x = mx.ones((4, 4))\n"
            "mx._kernel_counts(True)\n"
            "mx.eval(mx.compile(lambda x: mx.exp(x) * 2 + 1)(x))\n"
            "print(mx._kernel_counts(False))\n")
    env = dict(os.environ, MLX_COMPILE_DEBUG="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    assert "fused region of 3 ops" in out.stderr and "Exp(v0)" in out.stderr
    assert "Compiled" in out.stdout
    env = dict(os.environ, MLX_DISABLE_COMPILE="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    assert "Compiled" not in out.stdout and "Exp" in out.stdout


def test_memory_plan_rejects_nothing_and_reports(rng):
    x = sample(mx.float32, (32, 32), rng)
    plan = mx.compile(lambda x: mx.exp(x @ x) + 1).memory_plan(x)
    for key in ["peak_bytes", "input_bytes", "num_allocations", "allocated_bytes",
                "reused_in_place", "peak_step", "live_at_peak"]:
        assert key in plan
    assert plan["peak_bytes"] >= plan["input_bytes"] > 0
    assert plan["num_allocations"] >= 1


def measured_peak(f, plan, *args):
    """The peak of one call of f, counted like the plan: what the call adds to memory held
    before it, plus the plan's held inputs. The cache is emptied first: a cached block larger
    than asked for (left by earlier tests) would count its whole size."""
    mx.eval(args)
    mx.synchronize()
    mx.clear_cache()
    others = mx.get_active_memory() - plan["input_bytes"]
    mx.reset_peak_memory()
    out = f(*args)
    mx.eval(out)
    return mx.get_peak_memory() - others, out


def assert_plan_close(f, *args):
    plan = f.memory_plan(*args)
    peak, _ = measured_peak(f, plan, *args)
    assert abs(plan["peak_bytes"] - peak) <= 0.1 * peak, (plan["peak_bytes"], peak)
    return plan


def test_memory_plan_predicts_mlp_and_transformer_block(rng):
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
    import train_lm

    mlp = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 64))
    x = mx.random.normal((128, 64))
    mx.eval(mlp.parameters(), x)
    plan = assert_plan_close(mx.compile(lambda x: mlp(x)), x)
    assert plan["num_allocations"] >= 2 and plan["live_at_peak"]
    block = train_lm.Block(64, 4)
    xb = mx.random.normal((4, 32, 64))
    mx.eval(block.parameters(), xb)
    plan = assert_plan_close(mx.compile(lambda x: block(x)), xb)
    assert plan["reused_in_place"]


@pytest.mark.parametrize("lower_peak", ["0", "1"])
def test_memory_plan_predicts_the_lm_training_step(rng, monkeypatch, lower_peak):
    # Also with the memory passes on (the Depends nodes and recomputed steps they add).
    monkeypatch.setenv("MLX_COMPILE_LOWER_PEAK", lower_peak)
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
    import train_lm

    model = train_lm.GPT(65, 64, 2, 4)
    mx.eval(model.parameters())
    opt = optim.AdamW(learning_rate=1e-3, weight_decay=0.1)
    opt.init(model.trainable_parameters())
    step, state = train_lm.make_train_step(model, opt)

    x = mx.random.randint(0, 65, (8, 64))
    y = mx.random.randint(0, 65, (8, 64))
    step(x, y)
    mx.eval(state)
    plan = step.memory_plan(x, y)
    mx.eval(x, y)
    mx.synchronize()
    mx.clear_cache()
    others = mx.get_active_memory() - plan["input_bytes"]
    mx.reset_peak_memory()
    mx.eval(step(x, y), state)
    peak = mx.get_peak_memory() - others
    assert abs(plan["peak_bytes"] - peak) <= 0.1 * peak, (plan["peak_bytes"], peak)


def remat_training_step(layers=4, width=2048):
    """A step whose forward keeps GELU(h) and LayerNorm(x) alive until the backward: the
    activations rematerialization recomputes instead."""
    mlp = nn.Sequential(*[nn.Sequential(nn.LayerNorm(64), nn.Linear(64, width), nn.GELU("precise"),
                                        nn.Linear(width, 64)) for _ in range(layers)])
    mx.eval(mlp.parameters())
    loss_and_grad = nn.value_and_grad(mlp, lambda m, x: (m(x) ** 2).mean())

    def step(x):
        return loss_and_grad(mlp, x)

    return step


def compiled_lowering_peak(fun, x, lower):
    """fun compiled with compile's memory passes (rematerialization, the memory schedule) on or
    off, whatever the device's default (on for the GPU)."""
    saved = os.environ.get("MLX_COMPILE_LOWER_PEAK")
    os.environ["MLX_COMPILE_LOWER_PEAK"] = "1" if lower else "0"
    try:
        f = mx.compile(lambda x: fun(x))  # a function of its own: traced apart from fun's
        f.memory_plan(x)  # traced for x now
        return f
    finally:
        if saved is None:
            del os.environ["MLX_COMPILE_LOWER_PEAK"]
        else:
            os.environ["MLX_COMPILE_LOWER_PEAK"] = saved


def test_rematerialization_lowers_the_peak_and_keeps_the_values(rng):
    step = remat_training_step()
    x = mx.array(rng.standard_normal((256, 64)).astype(np.float32))
    plain, remat = compiled_lowering_peak(step, x, False), compiled_lowering_peak(step, x, True)
    plain_plan, remat_plan = plain.memory_plan(x), remat.memory_plan(x)
    hidden = 256 * 2048 * 4  # one GELU output: 2 MiB
    # Three of the four layers' GELU outputs no longer wait for the backward (the last one's is
    # read right after the peak either way).
    assert remat_plan["peak_bytes"] <= plain_plan["peak_bytes"] - 3 * hidden, (
        remat_plan["peak_bytes"], plain_plan["peak_bytes"])
    plain_peak, (plain_loss, plain_grads) = measured_peak(plain, plain_plan, x)
    remat_peak, (loss, grads) = measured_peak(remat, remat_plan, x)
    assert remat_peak <= plain_peak - 3 * hidden, (remat_peak, plain_peak)
    assert abs(remat_plan["peak_bytes"] - remat_peak) <= 0.1 * remat_peak
    # The recomputed kernels are the same kernels on the same inputs: equal results.
    assert np.array_equal(np.array(loss), np.array(plain_loss))
    for (path, g), (_, h) in zip(tree_flatten(grads), tree_flatten(plain_grads)):
        assert np.array_equal(np.array(g), np.array(h)), path
    ref_loss, ref_grads = step(x)
    np.testing.assert_allclose(np.array(loss), np.array(ref_loss), rtol=1e-5)
    for (path, g), (_, h) in zip(tree_flatten(grads), tree_flatten(ref_grads)):
        np.testing.assert_allclose(np.array(g), np.array(h), rtol=1e-4, atol=1e-6, err_msg=path)


def test_memory_passes_keep_shapeless_steps_right(rng, monkeypatch):
    # A shapeless trace replays the recomputed steps and Depends nodes at other batch sizes.
    step = remat_training_step(layers=3)
    x = mx.zeros((256, 64))
    monkeypatch.setenv("MLX_COMPILE_LOWER_PEAK", "0")
    plain = mx.compile(lambda x: step(x), shapeless=True).memory_plan(x)["peak_bytes"]
    monkeypatch.setenv("MLX_COMPILE_LOWER_PEAK", "1")
    f = mx.compile(lambda x: step(x), shapeless=True)
    assert f.memory_plan(x)["peak_bytes"] < plain  # traced at 256 rows, with the passes
    for rows in (256, 100, 7):
        x = mx.array(rng.standard_normal((rows, 64)).astype(np.float32))
        (loss, grads), (ref_loss, ref_grads) = f(x), step(x)
        np.testing.assert_allclose(np.array(loss), np.array(ref_loss), rtol=1e-5)
        for (path, g), (_, h) in zip(tree_flatten(grads), tree_flatten(ref_grads)):
            np.testing.assert_allclose(np.array(g), np.array(h), rtol=1e-4, atol=1e-6,
                                       err_msg=path)


def test_rematerialization_leaves_inference_alone(rng):
    # Without a backward nothing is read again after the peak: the program is unchanged.
    mlp = nn.Sequential(nn.Linear(64, 1024), nn.GELU(), nn.Linear(1024, 64))
    mx.eval(mlp.parameters())
    x = mx.array(rng.standard_normal((128, 64)).astype(np.float32))
    plain = compiled_lowering_peak(mlp, x, False)
    assert compiled_lowering_peak(mlp, x, True).memory_plan(x) == plain.memory_plan(x)


GENERATED_UNARY = ["exp", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan", "tanh",
                   "sigmoid", "erf", "erfinv", "_gelu", "_gelu_approx", "_silu", "sinh", "cosh",
                   "arctan", "arcsin", "arccos", "arcsinh", "arccosh", "arctanh", "sqrt", "rsqrt",
                   "negative", "square", "abs"]
GENERATED_BINARY = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "_gelu_vjp",
                    "_gelu_approx_vjp", "_silu_vjp"]


@pytest.mark.parametrize("name", GENERATED_UNARY + GENERATED_BINARY)
def test_generated_kernels_equal_unfused_ops(name, rng):
    op = getattr(mx, name)
    special = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1e-40, -3.5, 0.5, 2.0, 90.0],
                       dtype=np.float32)
    x = mx.array(np.concatenate([special, rng.standard_normal(1013).astype(np.float32) * 3]))
    if name in {"arccosh"}:
        x = mx.abs(x) + 1
    y = mx.array(rng.standard_normal(x.size).astype(np.float32))
    y = mx.where(mx.arange(x.size) % 7 == 0, mx.array(np.nan), y)
    binary = name in GENERATED_BINARY
    fun = (lambda x, y: op(x * 1.0, y)) if binary else (lambda x, y: op(x * 1.0) + y * 0.0)
    ref = op(x, y) if binary else op(x) + y * 0.0
    compiled = mx.compile(fun)
    failed_before = mx._fused_kernel_stats(True)["failed"]
    interpreted, generated = interpreted_and_generated(compiled, x, y)
    assert mx._fused_kernel_stats()["failed"] == failed_before
    same(ref, interpreted)
    same(ref, generated)


REDUCTIONS = {
    "sum(x * y)": lambda x, y: mx.sum(x * y),
    "row dot": lambda x, y: mx.sum(x * y, axis=-1),
    "rms norm": lambda x, y: x * mx.rsqrt(mx.mean(x * x, axis=-1, keepdims=True) + 1e-5),
    "softmax": lambda x, y: (lambda e: e / mx.sum(e, axis=-1, keepdims=True))(
        mx.exp(x - mx.max(x, axis=-1, keepdims=True))),
    "mse loss": lambda x, y: mx.mean(mx.square(x - y)),
    "max abs error": lambda x, y: mx.max(mx.abs(x - y), axis=(1, 2)),
    "min over rows": lambda x, y: mx.min(mx.exp(x) - y, axis=-1, keepdims=True),
}


@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_reductions_with_fused_prologues(name, rng):
    fun = REDUCTIONS[name]
    for shape in [(3, 5, 1031), (2, 1, 7), (4, 3, 1)]:
        x, y = sample(mx.float32, shape, rng), sample(mx.float32, shape, rng)
        ref = fun(x, y)
        compiled = mx.compile(fun)
        c = warm_counts(compiled, x, y)
        # The elementwise prologue and its reduction run as one kernel: no op of the prologue
        # runs alone (rows of one element need no reduction at all).
        if shape[-1] > 1:
            assert c.get("Compiled", 0) >= 1 and "Sum" not in c and "Square" not in c, c
        interpreted, generated = interpreted_and_generated(compiled, x, y)
        for got in (interpreted, generated):
            np.testing.assert_allclose(np.array(got), np.array(ref), rtol=2e-5, atol=1e-5)
    g = mx.grad(lambda x, y: mx.sum(fun(x, y)))
    np.testing.assert_allclose(np.array(mx.compile(g)(x, y)), np.array(g(x, y)), rtol=1e-5,
                               atol=1e-6)


def test_reduction_with_nan_and_shapeless(rng):
    f = mx.compile(lambda x: mx.max(x * 2, axis=-1), shapeless=True)
    x = mx.array([[1.0, np.nan, 3.0], [1.0, 2.0, -3.0]])
    np.testing.assert_array_equal(np.isnan(np.array(f(x))), [True, False])
    for shape in [(5, 9), (2, 4000)]:
        x = sample(mx.float32, shape, rng)
        np.testing.assert_allclose(np.array(f(x)), np.array(mx.max(x * 2, axis=-1)))
