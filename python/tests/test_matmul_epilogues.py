"""compile's matrix-product epilogues (mlx/transforms/matmul_epilogues.h): a tanh-approximated
GELU after a Linear layer whose output nothing else reads (MatmulGeluApprox; on the GPU,
cuBLASLt's GELU and GELU_BIAS epilogues), and the GELU's gradient behind a Linear layer
(MatmulGeluApproxVjp; cuBLASLt's DGELU epilogue), each become one step with the product before
it. Compiled results equal the unfused ops' for values and gradients, on the default device
(the GPU where there is one)."""
import numpy as np
import pytest

import mlx.core as mx
import mlx.nn as nn

ON_GPU = mx.default_device() == mx.gpu
# Relative error allowed between fused and unfused results: the epilogue rounds the product
# once, after the GELU or its derivative, where the unfused ops round it before.
TOLERANCE = {mx.float32: 1e-5, mx.float16: 4e-3, mx.bfloat16: 3e-2}


def close(a, b, dtype):
    a, b = (np.array(v.astype(mx.float32)) for v in (a, b))
    assert a.shape == b.shape
    if a.size == 0:
        return
    scale = max(np.abs(b).max(), 1e-6)
    assert np.abs(a - b).max() <= TOLERANCE[dtype] * scale, np.abs(a - b).max() / scale


def counts(fn, *args):
    """The primitives (and, on the GPU, the kernels' paths) that evaluating fn(*args) ran."""
    mx._kernel_counts(True, True)
    try:
        mx.eval(fn(*args))
    finally:
        c = mx._kernel_counts(False, True)
    return c


class MLP(nn.Module):
    def __init__(self, dims, hidden):
        super().__init__()
        self.fc, self.fc2 = nn.Linear(dims, hidden), nn.Linear(hidden, dims)

    def __call__(self, x):
        return x + self.fc2(nn.gelu_approx(self.fc(x)))


def loss(model, x):
    return (model(x).astype(mx.float32) ** 2).sum()


def sample(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    return mx.array(rng.normal(0, 1, shape).astype(np.float32)).astype(dtype)


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.bfloat16])
@pytest.mark.parametrize("batch,tokens,dims,hidden", [(2, 16, 64, 256), (3, 5, 12, 36),
                                                      (1, 1, 8, 8)])
def test_the_mlp_gradient_fuses_and_equals_the_unfused_ops(dtype, batch, tokens, dims, hidden):
    mx.random.seed(0)
    model = MLP(dims, hidden)
    model.set_dtype(dtype)
    x = sample((batch, tokens, dims), dtype, 1)
    step = nn.value_and_grad(model, loss)
    fused = mx.compile(lambda x: step(model, x))
    (l1, g1), (l2, g2) = step(model, x), fused(x)
    close(l2, l1, dtype)
    for layer in ("fc", "fc2"):
        for name in ("weight", "bias"):
            close(g2[layer][name], g1[layer][name], dtype)
    ran = counts(fused, x)
    assert ran.get("MatmulGeluApproxVjp") == 1 and "GeluApproxVjp" not in ran, ran
    # The gradient reads the GELU's input: the forward's product stays apart from its GELU.
    assert "MatmulGeluApprox" not in ran and ran.get("GeluApprox") == 1, ran
    if ON_GPU:
        # cuBLASLt reads the GELU input in the product's layout: rows of a multiple of 8.
        path = "epilogue" if hidden % 8 == 0 else "gemm+vjp"
        assert ran.get(f"MatmulGeluApproxVjp:{path}") == 1, ran


def fused_gelu_vjp(a, b, x):
    return mx._gelu_approx_vjp(x, (a @ b).reshape(x.shape[0], -1, x.shape[-1]))


def operands(m=24, k=16, n=40, dtype=mx.float32):
    return sample((m, k), dtype, 2), sample((k, n), dtype, 3), sample((2, m // 2, n), dtype, 4)


def test_only_products_read_by_the_gelu_gradient_alone_fuse():
    a, b, x = operands()
    assert counts(mx.compile(fused_gelu_vjp), a, b, x).get("MatmulGeluApproxVjp") == 1

    def product_also_returned(a, b, x):
        p = a @ b
        return mx._gelu_approx_vjp(x, p.reshape(x.shape)), p

    def batched(a, b, x):  # (2, 12, 16) @ (2, 16, 40): a batched product, left as it is
        return (mx._gelu_approx_vjp(x, a.reshape(2, 12, 16) @ mx.stack([b, -b])),)

    for fn in (product_also_returned, batched):
        ran = counts(mx.compile(fn), a, b, x)
        assert "MatmulGeluApproxVjp" not in ran and ran.get("GeluApproxVjp") == 1, ran
        for got, want in zip(mx.compile(fn)(a, b, x), fn(a, b, x)):
            close(got, want, mx.float32)


def test_transposed_and_sliced_operands():
    a, b, x = operands(n=48)
    cases = [(a, b, x), (mx.array(np.array(a).T.copy()).T, b.T.T, x),
             (a, b[:, ::-1], x), (a, b, mx.swapaxes(mx.swapaxes(x, 1, 2), 1, 2) + 0)]
    for args in cases:
        close(mx.compile(fused_gelu_vjp)(*args), fused_gelu_vjp(*args), mx.float32)
    # x read through strides (a transposed view): the GPU's epilogue needs it dense, and falls
    # back to the product followed by the derivative.
    xt = sample((2, 40, 12), mx.float32, 5).swapaxes(1, 2)
    close(mx.compile(fused_gelu_vjp)(a, b[:, :40], xt), fused_gelu_vjp(a, b[:, :40], xt),
          mx.float32)


def check_transforms(fn, args, mapped):
    """grad (each argument), jvp and vmap (over a stack of argument `mapped`) of fn compiled
    equal those of fn; the compiled step is the fused one."""
    fused = mx.compile(fn)

    def total(f):
        return lambda *a: (f(*a) ** 2).sum()

    for argnum in range(len(args)):
        close(mx.grad(total(fused), argnums=argnum)(*args),
              mx.grad(total(fn), argnums=argnum)(*args), mx.float32)
    tangents = [sample(v.shape, mx.float32, 7 + i) for i, v in enumerate(args)]
    close(mx.jvp(fused, list(args), tangents)[1][0], mx.jvp(fn, list(args), tangents)[1][0],
          mx.float32)
    stacked = list(args)
    stacked[mapped] = mx.stack([args[mapped], 2 * args[mapped], -args[mapped]])
    in_axes = tuple(0 if i == mapped else None for i in range(len(args)))
    close(mx.vmap(fused, in_axes=in_axes)(*stacked), mx.vmap(fn, in_axes=in_axes)(*stacked),
          mx.float32)


def test_gradients_jvp_and_vmap_through_the_fused_step():
    check_transforms(fused_gelu_vjp, operands(), mapped=2)


def test_shapeless_compile_replays_the_fused_step_for_new_shapes():
    fused = mx.compile(fused_gelu_vjp, shapeless=True)
    for m in (24, 8, 40):
        a, b, x = operands(m=m)
        close(fused(a, b, x), fused_gelu_vjp(a, b, x), mx.float32)
    # New shapes the replaced reshape would have refused: an error, never a product written
    # or read past x's end.
    a, b, _ = operands(m=24)
    with pytest.raises(ValueError):
        mx.eval(fused(a, b, sample((2, 8, 40), mx.float32, 9)))


def test_empty_products():
    def fn(a, b, x):
        return mx._gelu_approx_vjp(x, (a @ b).reshape(x.shape))

    for a, b, x in [(mx.zeros((6, 0)), mx.zeros((0, 8)), sample((2, 3, 8), mx.float32, 6)),
                    (mx.zeros((0, 4)), mx.zeros((4, 8)), mx.zeros((2, 0, 8)))]:
        close(mx.compile(fn)(a, b, x), fn(a, b, x), mx.float32)


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.bfloat16])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("batch,tokens,dims,hidden", [(2, 16, 64, 256), (3, 5, 12, 36),
                                                      (1, 1, 8, 8)])
def test_the_mlp_forward_fuses_its_gelu_into_the_product(dtype, bias, batch, tokens, dims,
                                                         hidden):
    mx.random.seed(0)
    fc = nn.Linear(dims, hidden, bias=bias)
    fc.set_dtype(dtype)
    x = sample((batch, tokens, dims), dtype, 1)

    def forward(x):
        return nn.gelu_approx(fc(x))

    fused = mx.compile(forward)
    close(fused(x), forward(x), dtype)
    ran = counts(fused, x)
    assert ran.get("MatmulGeluApprox") == 1, ran
    assert not {"GeluApprox", "AddMM", "Matmul"} & ran.keys(), ran
    if ON_GPU and hidden % 8 == 0:
        assert ran.get("MatmulGeluApprox:epilogue") == 1, ran


def test_only_products_read_by_the_gelu_alone_fuse():
    a, b, _ = operands()
    bias = sample((40,), mx.float32, 5)

    def product_also_returned(a, b):
        p = a @ b
        return nn.gelu_approx(p), p

    def scaled(a, b):  # alpha != 1: not the Linear layer's pattern
        return (nn.gelu_approx(mx.addmm(bias, a, b, alpha=2.0)),)

    def full_c(a, b):  # c of the product's shape, not a row of biases
        return (nn.gelu_approx(mx.addmm(a @ b, a, b)),)

    def batched(a, b):
        return (nn.gelu_approx(a.reshape(2, 12, 16) @ mx.stack([b, -b])),)

    for fn in (product_also_returned, scaled, full_c, batched):
        ran = counts(mx.compile(fn), a, b)
        assert "MatmulGeluApprox" not in ran and ran.get("GeluApprox") == 1, (fn.__name__, ran)
        for got, want in zip(mx.compile(fn)(a, b), fn(a, b)):
            close(got, want, mx.float32)


def linear_gelu(a, b, bias):
    return nn.gelu_approx(mx.addmm(bias, a, b))


def test_the_fused_forward_reads_transposed_and_sliced_operands():
    a, b, _ = operands(n=48)
    bias = sample((48,), mx.float32, 5)
    cases = [(a, b, bias), (mx.array(np.array(a).T.copy()).T, b, bias), (a, b[:, ::-1], bias),
             (a[::2], b, bias[::-1])]
    for args in cases:
        close(mx.compile(linear_gelu)(*args), linear_gelu(*args), mx.float32)


def test_gradients_jvp_and_vmap_through_the_fused_forward():
    a, b, _ = operands()
    bias = sample((40,), mx.float32, 5)
    assert counts(mx.compile(linear_gelu), a, b, bias).get("MatmulGeluApprox") == 1
    check_transforms(linear_gelu, (a, b, bias), mapped=1)


def test_shapeless_compile_replays_the_fused_forward_for_new_shapes():
    fc = nn.Linear(16, 40)

    def forward(x):
        return nn.gelu_approx(fc(x))

    fused = mx.compile(forward, shapeless=True)
    for rows in (24, 5, 1):
        x = sample((rows, 16), mx.float32, 6)
        close(fused(x), forward(x), mx.float32)
        assert counts(fused, x).get("MatmulGeluApprox") == 1


def test_empty_fused_forwards():
    bias = sample((8,), mx.float32, 6)
    for a, b in [(mx.zeros((6, 0)), mx.zeros((0, 8))), (mx.zeros((0, 4)), mx.zeros((4, 8)))]:
        close(mx.compile(linear_gelu)(a, b, bias), linear_gelu(a, b, bias), mx.float32)
