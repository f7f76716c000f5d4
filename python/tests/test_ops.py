"""Elementwise ops of mlx.core against NumPy: unary math, binary arithmetic / comparison /
bitwise with broadcasting and weakly typed Python scalars, where, clip, isclose, round, ..."""
import math

import numpy as np
import pytest

import mlx.core as mx
from opsutil import FLOATS, INTS, LAYOUTS, check, make

SHAPES = [(), (0,), (7,), (3, 4, 5)]

_erf = np.vectorize(math.erf, otypes=[np.float64])

# name -> (NumPy reference, low, high) with the range inside the op's domain.
UNARY = {
    "abs": (np.abs, -3, 3),
    "negative": (np.negative, -3, 3),
    "sign": (np.sign, -3, 3),
    "square": (np.square, -3, 3),
    "sqrt": (np.sqrt, 0.1, 4),
    "rsqrt": (lambda x: 1 / np.sqrt(x), 0.1, 4),
    "reciprocal": (np.reciprocal, 0.5, 3),
    "exp": (np.exp, -3, 3),
    "expm1": (np.expm1, -3, 3),
    "log": (np.log, 0.1, 4),
    "log2": (np.log2, 0.1, 4),
    "log10": (np.log10, 0.1, 4),
    "log1p": (np.log1p, -0.5, 3),
    "sin": (np.sin, -3, 3),
    "cos": (np.cos, -3, 3),
    "tan": (np.tan, -1.2, 1.2),
    "arcsin": (np.arcsin, -0.9, 0.9),
    "arccos": (np.arccos, -0.9, 0.9),
    "arctan": (np.arctan, -3, 3),
    "sinh": (np.sinh, -3, 3),
    "cosh": (np.cosh, -3, 3),
    "tanh": (np.tanh, -3, 3),
    "arcsinh": (np.arcsinh, -3, 3),
    "arccosh": (np.arccosh, 1.1, 4),
    "arctanh": (np.arctanh, -0.9, 0.9),
    "erf": (_erf, -2, 2),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), -4, 4),
    "degrees": (np.degrees, -3, 3),
    "radians": (np.radians, -100, 100),
    "floor": (np.floor, -3, 3),
    "ceil": (np.ceil, -3, 3),
    "trunc": (np.trunc, -3, 3),
    "stop_gradient": (lambda x: x, -3, 3),
}
METHODS = ["abs", "square", "sqrt", "rsqrt", "reciprocal", "exp", "log", "log2", "log10", "log1p",
           "sin", "cos"]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_float(rng, name, dtype):
    ref, low, high = UNARY[name]
    for shape in SHAPES:
        x, _ = make(rng, shape, dtype, low, high)
        for layout in LAYOUTS.values():
            v = layout(x)
            out = getattr(mx, name)(v)
            check(out, ref(np.array(v).astype(np.float64)), dtype=dtype)


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("name", ["abs", "negative", "sign", "square", "floor", "ceil", "trunc"])
def test_unary_integer_keeps_dtype(rng, name, dtype):
    x, xn = make(rng, (4, 5), dtype, -5, 5)
    ref = UNARY[name][0](xn.astype(np.int64)).astype(xn.dtype)  # wraps like the array does
    check(getattr(mx, name)(x), ref, dtype=dtype)


@pytest.mark.parametrize("name", ["sqrt", "exp", "log", "sin", "sigmoid", "erf"])
def test_unary_integer_promotes_to_float(rng, name):
    ref, low, high = UNARY[name]
    x, xn = make(rng, (6,), mx.int32, max(low, 1), high + 1)
    check(getattr(mx, name)(x), ref(xn.astype(np.float64)), dtype=mx.float32)


@pytest.mark.parametrize("name", METHODS)
def test_unary_methods_match_functions(rng, name):
    x, _ = make(rng, (3, 4), mx.float32, 0.2, 3)
    check(getattr(x, name)(), np.array(getattr(mx, name)(x)))
    check(getattr(x, name)(stream=mx.cpu), np.array(getattr(mx, name)(x)))


def test_unary_takes_python_scalars():
    check(mx.exp(1.0), math.e, dtype=mx.float32)
    check(mx.abs(-3), 3, dtype=mx.int32)
    check(mx.sqrt(4), 2.0, dtype=mx.float32)
    check(mx.logical_not(True), False, dtype=mx.bool_)
    with pytest.raises(TypeError):
        mx.exp("1")
    with pytest.raises(TypeError):
        mx.exp([1.0, 2.0])


def test_erfinv_inverts_erf(rng):
    x, xn = make(rng, (50,), mx.float32, -0.95, 0.95)
    check(mx.erf(mx.erfinv(x)), xn, rtol=1e-4, atol=1e-5)
    check(mx.erfinv(mx.array([0.5])), [0.4769362762], rtol=1e-5)


def test_logical_bitwise_and_predicates(rng):
    b, bn = make(rng, (3, 5), mx.bool_)
    check(mx.logical_not(b), ~bn, dtype=mx.bool_)
    for dtype in INTS:
        x, xn = make(rng, (3, 5), dtype, -50, 50)
        check(mx.bitwise_invert(x), np.invert(xn), dtype=dtype)
    v = np.array([1.0, np.nan, np.inf, -np.inf, -0.0, 3e38], np.float32)
    for name in ["isnan", "isinf", "isposinf", "isneginf", "isfinite"]:
        check(getattr(mx, name)(mx.array(v)), getattr(np, name)(v), dtype=mx.bool_)
        check(getattr(mx, name)(mx.array([1, 2])), getattr(np, name)(np.array([1, 2])))


def test_complex_parts(rng):
    z, zn = make(rng, (4, 3), mx.complex64)
    check(mx.real(z), zn.real, dtype=mx.float32)
    check(mx.imag(z), zn.imag, dtype=mx.float32)
    check(mx.conj(z), np.conj(zn), dtype=mx.complex64)
    check(mx.conjugate(z), np.conj(zn), dtype=mx.complex64)
    check(z.conj(), np.conj(zn))
    check(mx.abs(z), np.abs(zn), dtype=mx.float32)
    check(mx.exp(z), np.exp(zn.astype(np.complex128)), dtype=mx.complex64, rtol=1e-4)


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16])
@pytest.mark.parametrize("decimals", [0, 1, 2, -1])
def test_round(rng, dtype, decimals):
    x, xn = make(rng, (5, 7), dtype, -300, 300)
    ref = np.round(xn.astype(np.float64), decimals)
    check(mx.round(x, decimals), ref, dtype=dtype, atol=tol_round(dtype, decimals))
    check(x.round(decimals), ref, atol=tol_round(dtype, decimals))
    check(mx.round(x, decimals=decimals), ref, atol=tol_round(dtype, decimals))


def tol_round(dtype, decimals):
    # float16 cannot hold most values with 1 or 2 decimals exactly.
    return 0.25 if dtype == mx.float16 else 1e-4


def test_round_half_to_even_and_integers():
    check(mx.round(mx.array([0.5, 1.5, 2.5, -0.5, -1.5])), [0.0, 2.0, 2.0, -0.0, -2.0])
    check(mx.round(mx.array([1, 15, -7])), [1, 15, -7], dtype=mx.int32)


def test_nan_to_num():
    v = np.array([1.5, np.nan, np.inf, -np.inf], np.float32)
    check(mx.nan_to_num(mx.array(v)), np.nan_to_num(v))
    check(mx.nan_to_num(mx.array(v), nan=7.0, posinf=100.0, neginf=-5.0),
          np.nan_to_num(v, nan=7.0, posinf=100.0, neginf=-5.0))
    h = mx.nan_to_num(mx.array(v, mx.float16))
    check(h, np.nan_to_num(v.astype(np.float16)), dtype=mx.float16)


# name -> (NumPy reference, domain of b: "any" | "nonzero" | "small")
BINARY = {
    "add": (np.add, "any"),
    "subtract": (np.subtract, "any"),
    "multiply": (np.multiply, "any"),
    "divide": (np.true_divide, "nonzero"),
    "floor_divide": (np.floor_divide, "nonzero"),
    "remainder": (np.remainder, "nonzero"),
    "maximum": (np.maximum, "any"),
    "minimum": (np.minimum, "any"),
    "power": (np.power, "small"),
    "equal": (np.equal, "any"),
    "not_equal": (np.not_equal, "any"),
    "less": (np.less, "any"),
    "less_equal": (np.less_equal, "any"),
    "greater": (np.greater, "any"),
    "greater_equal": (np.greater_equal, "any"),
    "logaddexp": (np.logaddexp, "any"),
    "arctan2": (np.arctan2, "any"),
}
BROADCASTS = [((3, 4), (3, 4)), ((2, 1, 4), (3, 1)), ((), (5,)), ((4,), ()), ((0, 3), (1, 3))]


def _operands(rng, name, dtype, sa, sb):
    domain = BINARY[name][1]
    if domain == "small":  # power: non-negative bases and small exponents
        low = 0.5 if mx.issubdtype(dtype, mx.floating) else 0
        a, an = make(rng, sa, dtype, low, 3)
        b, bn = make(rng, sb, dtype, 0, 3)
        return a, an, b, bn
    a, an = make(rng, sa, dtype, -4, 4)
    b, bn = make(rng, sb, dtype, 1 if domain == "nonzero" else -4, 5)
    if domain == "nonzero" and not mx.issubdtype(dtype, mx.unsignedinteger):
        b = mx.multiply(b, mx.array(np.where(rng.random(sb) > 0.5, 1, -1), dtype))
        bn = np.array(b)
    return a, an, b, bn


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.bfloat16, mx.int32, mx.int8,
                                   mx.uint8])
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary(rng, name, dtype):
    ref = BINARY[name][0]
    if name in ("logaddexp", "arctan2") and not mx.issubdtype(dtype, mx.floating):
        pytest.skip("floating point op")
    for sa, sb in BROADCASTS:
        a, an, b, bn = _operands(rng, name, dtype, sa, sb)
        wide = np.float64 if mx.issubdtype(dtype, mx.floating) else np.int64
        expected = ref(an.astype(wide), bn.astype(wide))
        out = getattr(mx, name)(a, b)
        if expected.dtype == np.int64:
            expected = expected.astype(np.array(out).dtype)  # integer results wrap
        check(out, expected)
        # Reversed (negative-stride) operands.
        check(getattr(mx, name)(mx.flip(a), mx.flip(b)),
              np.flip(expected))


def test_operands_from_non_contiguous_numpy(rng):
    base = rng.standard_normal((6, 8)).astype(np.float32)
    for view in (base.T, base[::2, ::-3], base[1:, 2:5]):
        check(mx.multiply(mx.array(view), mx.array(view)), view.astype(np.float64) ** 2)
        check(mx.sum(mx.array(view), axis=0), view.astype(np.float64).sum(0), rtol=1e-5)


def test_binary_result_dtypes():
    i32 = mx.array([1, 2], mx.int32)
    f16 = mx.array([1, 2], mx.float16)
    assert mx.add(i32, f16).dtype == mx.float16
    assert mx.divide(i32, i32).dtype == mx.float32
    assert mx.equal(f16, f16).dtype == mx.bool_
    assert mx.add(mx.array([1], mx.uint8), mx.array([1], mx.int8)).dtype == mx.int16


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "divide", "maximum", "power",
                                  "less", "remainder", "floor_divide"])
def test_binary_python_scalars_on_both_sides(rng, name):
    ref = BINARY[name][0]
    x, xn = make(rng, (3, 4), mx.float32, 0.5, 3)
    check(getattr(mx, name)(x, 2.5), ref(xn.astype(np.float64), 2.5))
    check(getattr(mx, name)(2.5, x), ref(2.5, xn.astype(np.float64)))
    check(getattr(mx, name)(x, 2), ref(xn.astype(np.float64), 2))
    check(getattr(mx, name)(3, 2), ref(np.int64(3), np.int64(2)))


def test_python_scalars_are_weakly_typed():
    f16 = mx.array([1, 2], mx.float16)
    bf16 = mx.array([1, 2], mx.bfloat16)
    i8 = mx.array([1, 2], mx.int8)
    assert mx.multiply(f16, 2.5).dtype == mx.float16
    assert mx.add(3.5, bf16).dtype == mx.bfloat16
    assert mx.add(i8, 3).dtype == mx.int8
    assert mx.add(i8, 2.5).dtype == mx.float32
    assert mx.add(2, 3).dtype == mx.int32
    assert mx.add(2, 3.0).dtype == mx.float32
    assert mx.maximum(mx.array([True]), 2).dtype == mx.int32
    assert mx.where(mx.array([True, False]), f16, 0.5).dtype == mx.float16
    assert mx.clip(f16, 0.5, 1.5).dtype == mx.float16


@pytest.mark.parametrize("name,ref", [("logical_and", np.logical_and),
                                      ("logical_or", np.logical_or),
                                      ("logical_xor", np.logical_xor)])
def test_logical_binary(rng, name, ref):
    a, an = make(rng, (3, 4), mx.bool_)
    b, bn = make(rng, (4,), mx.bool_)
    check(getattr(mx, name)(a, b), ref(an, bn), dtype=mx.bool_)
    check(getattr(mx, name)(a, True), ref(an, True))
    x, xn = make(rng, (3, 4), mx.int32, -2, 2)
    check(getattr(mx, name)(x, 0), ref(xn, 0), dtype=mx.bool_)


@pytest.mark.parametrize("dtype", [mx.bool_, mx.int32, mx.uint8, mx.int8, mx.int64, mx.uint32])
@pytest.mark.parametrize("name,ref", [("bitwise_and", np.bitwise_and),
                                      ("bitwise_or", np.bitwise_or),
                                      ("bitwise_xor", np.bitwise_xor),
                                      ("left_shift", np.left_shift),
                                      ("right_shift", np.right_shift)])
def test_bitwise(rng, dtype, name, ref):
    if dtype == mx.bool_ and "shift" in name:
        pytest.skip("shifts are for integers")
    a, an = make(rng, (3, 4), dtype, 0, 60)
    b, bn = make(rng, (4,), dtype, 0, 5)
    check(getattr(mx, name)(a, b), ref(an, bn), dtype=dtype)
    one = True if dtype == mx.bool_ else 1
    check(getattr(mx, name)(a, one), ref(an, an.dtype.type(one)), dtype=dtype)


def test_divmod(rng):
    a, an = make(rng, (3, 4), mx.float32, -5, 5)
    q, r = mx.divmod(a, 1.5)
    qn, rn = np.divmod(an.astype(np.float64), 1.5)
    check(q, qn)
    check(r, rn, atol=1e-5)
    qi, ri = mx.divmod(mx.array([7, -7, 7]), mx.array([2, 2, -2]))
    check(qi, [3, -4, -4])
    check(ri, [1, 1, -1])
    assert isinstance(mx.divmod(a, 2), tuple)


def test_binary_errors():
    with pytest.raises(ValueError, match="add"):
        mx.add(mx.ones((2, 3)), mx.ones((4,)))
    with pytest.raises(TypeError):
        mx.add(mx.ones((2,)), "a")
    with pytest.raises(TypeError):
        mx.multiply(None, mx.ones((2,)))
    with pytest.raises(TypeError):
        mx.add(mx.ones((2,)))


def test_where(rng):
    c, cn = make(rng, (3, 1, 4), mx.bool_)
    x, xn = make(rng, (2, 4), mx.float32)
    y, yn = make(rng, (4,), mx.float32)
    check(mx.where(c, x, y), np.where(cn, xn, yn))
    check(mx.where(c, x, 0.5), np.where(cn, xn, 0.5))
    check(mx.where(c, -1, y), np.where(cn, -1, yn))
    i, inn = make(rng, (3, 1, 4), mx.int32, -2, 2)
    check(mx.where(i, 1, 2), np.where(inn, 1, 2), dtype=mx.int32)
    check(mx.where(True, 1, 2.5), 1.0, dtype=mx.float32)
    with pytest.raises(ValueError):
        mx.where(mx.ones((2,)), mx.ones((3,)), 1)


@pytest.mark.parametrize("dtype", [mx.float32, mx.int32, mx.float16])
def test_clip(rng, dtype):
    x, xn = make(rng, (4, 5), dtype, -5, 5)
    lo, lon = make(rng, (5,), dtype, -3, 0)
    check(mx.clip(x, -1, 2), np.clip(xn, -1, 2), dtype=dtype)
    check(mx.clip(x, lo, 2), np.clip(xn, lon, 2), dtype=dtype)
    check(mx.clip(x, None, 1), np.clip(xn, None, 1), dtype=dtype)
    check(mx.clip(x, a_min=0, a_max=None), np.clip(xn, 0, None), dtype=dtype)
    with pytest.raises(ValueError, match="clip"):
        mx.clip(x, None, None)


def test_isclose_allclose_array_equal(rng):
    a, an = make(rng, (3, 4), mx.float32)
    b = mx.add(a, mx.array(np.where(np.arange(4) % 2, 1e-7, 1e-3).astype(np.float32)))
    bn = np.array(b)
    check(mx.isclose(a, b), np.isclose(an, bn), dtype=mx.bool_)
    check(mx.isclose(a, b, rtol=0.0, atol=1e-2), np.isclose(an, bn, rtol=0, atol=1e-2))
    assert mx.allclose(a, b).item() == np.allclose(an, bn)
    assert mx.allclose(a, b, atol=1e-2).item()
    nan = mx.array([np.nan, 1.0])
    assert not mx.isclose(nan, nan).tolist()[0]
    assert mx.isclose(nan, nan, equal_nan=True).tolist() == [True, True]
    assert mx.allclose(nan, nan, equal_nan=True).item()
    assert mx.isclose(a, 1).shape == (3, 4)
    assert mx.array_equal(a, a).item()
    assert not mx.array_equal(a, b).item()
    assert not mx.array_equal(a, mx.ones((2,))).item()
    assert mx.array_equal(mx.array([1, 2]), mx.array([1.0, 2.0])).item()
    assert not mx.array_equal(nan, nan).item()
    assert mx.array_equal(nan, nan, equal_nan=True).item()
    assert mx.array_equal(2, 2.0).item()


def test_contiguous(rng):
    x, xn = make(rng, (3, 4), mx.float32)
    check(mx.contiguous(mx.transpose(x)), xn.T)
    check(mx.contiguous(mx.transpose(x), allow_col_major=True), xn.T)


def test_stream_argument(rng):
    x, xn = make(rng, (3, 4), mx.float32)
    check(mx.add(x, x, stream=mx.cpu), 2 * xn)
    check(mx.exp(x, stream=mx.default_stream(mx.cpu)), np.exp(xn.astype(np.float64)))
    check(mx.sum(x, stream=mx.Device(mx.cpu)), xn.astype(np.float64).sum(), rtol=1e-5)
    with pytest.raises(TypeError):
        mx.add(x, x, stream="cpu")


# Every op of the C++ library that MLX's Python API has, and the array methods mirroring them.
FUNCTIONS = """abs add addmm all allclose any arange arccos arccosh arcsin arcsinh arctan arctan2 arctanh
argmax argmin argpartition argsort array_equal as_strided astype atleast_1d atleast_2d atleast_3d
bitwise_and bitwise_invert bitwise_or bitwise_xor broadcast_arrays broadcast_shapes broadcast_to
ceil clip concat concatenate conj conjugate contiguous cos cosh cummax cummin cumprod cumsum
degrees depends diag diagonal divide divmod equal erf erfinv exp expand_dims expm1 eye flatten
flip floor floor_divide full full_like greater greater_equal identity imag inner isclose isfinite
isinf isnan isneginf isposinf kron left_shift less less_equal linspace log log10 log1p log2
logaddexp logcumsumexp logical_and logical_not logical_or logical_xor logsumexp matmul max
maximum mean meshgrid min minimum moveaxis multiply nan_to_num negative not_equal ones ones_like
outer pad partition permute_dims power prod put_along_axis radians real reciprocal remainder
repeat reshape result_type right_shift roll round rsqrt sigmoid sign sin sinh slice slice_update
softmax sort split sqrt square squeeze stack std stop_gradient subtract sum swapaxes take
take_along_axis tan tanh tensordot tile topk trace transpose tri tril triu trunc unflatten unstack
var view where zeros zeros_like""".split()
ARRAY_METHODS = """abs all any argmax argmin astype conj cos cummax cummin cumprod cumsum diag diagonal
exp flatten log log10 log1p log2 logcumsumexp logsumexp max mean min moveaxis prod reciprocal
reshape round rsqrt sin split sqrt square squeeze std sum swapaxes transpose unflatten var
view""".split()


@pytest.mark.parametrize("name", FUNCTIONS)
def test_function_is_bound(name):
    assert callable(getattr(mx, name))


@pytest.mark.parametrize("name", ARRAY_METHODS)
def test_array_method_is_bound(name):
    assert callable(getattr(mx.array([1.0]), name))


def test_astype(rng):
    x, xn = make(rng, (3, 4), mx.float32, -100, 100)
    check(mx.astype(x, mx.int16), xn.astype(np.int16), dtype=mx.int16)
    check(mx.astype(x, dtype=mx.float16), xn.astype(np.float16), dtype=mx.float16)
    check(mx.astype(2, mx.float32), 2.0, dtype=mx.float32)
