"""Shape and layout ops of mlx.core against NumPy: reshape, transpose, squeeze, concatenate,
split, pad, roll, tile, repeat, diagonal, meshgrid, view, as_strided, slice, ... and the array
methods that mirror them."""
import numpy as np
import pytest

import mlx.core as mx
from opsutil import ALL, check, make


@pytest.fixture
def x3(rng):
    return make(rng, (2, 3, 4), mx.float32)


@pytest.mark.parametrize("dtype", ALL)
def test_reshape_any_dtype(rng, dtype):
    x, xn = make(rng, (2, 3, 4), dtype)
    for shape in [(24,), (4, -1), (2, 2, 2, 3), -1]:
        check(mx.reshape(x, shape), xn.reshape(shape), dtype=dtype)
    check(mx.reshape(mx.transpose(x), (6, 4)), xn.T.reshape(6, 4))


def test_reshape_forms_and_errors(x3):
    x, xn = x3
    check(x.reshape(4, 6), xn.reshape(4, 6))
    check(x.reshape((4, 6)), xn.reshape(4, 6))
    check(x.reshape([-1]), xn.reshape(-1))
    check(x.reshape(24, stream=mx.cpu), xn.reshape(24))
    check(mx.reshape(mx.zeros((0, 3)), (3, 0)), np.zeros((3, 0)))
    check(mx.reshape(mx.array(5), (1, 1)), [[5]])
    with pytest.raises(ValueError, match="reshape"):
        mx.reshape(x, (5, 5))
    with pytest.raises(ValueError):
        x.reshape(-1, -1)
    with pytest.raises(TypeError):
        x.reshape("a")


def test_flatten_unflatten(x3):
    x, xn = x3
    check(mx.flatten(x), xn.reshape(-1))
    check(mx.flatten(x, 1), xn.reshape(2, 12))
    check(mx.flatten(x, start_axis=0, end_axis=1), xn.reshape(6, 4))
    check(x.flatten(-2, -1), xn.reshape(2, 12))
    check(mx.flatten(mx.array(3.0)), [3.0])
    check(mx.unflatten(x, 2, (2, 2)), xn.reshape(2, 3, 2, 2))
    check(x.unflatten(-1, (2, -1)), xn.reshape(2, 3, 2, 2))
    with pytest.raises(ValueError):
        mx.flatten(x, 2, 1)
    with pytest.raises(ValueError):
        mx.unflatten(x, 0, (3,))


def test_squeeze_expand_dims(rng):
    x, xn = make(rng, (1, 3, 1, 2), mx.int32)
    check(mx.squeeze(x), np.squeeze(xn))
    check(mx.squeeze(x, 0), np.squeeze(xn, 0))
    check(mx.squeeze(x, axis=(0, -2)), np.squeeze(xn, (0, 2)))
    check(x.squeeze(2), np.squeeze(xn, 2))
    check(mx.expand_dims(x, 0), np.expand_dims(xn, 0))
    check(mx.expand_dims(x, -1), np.expand_dims(xn, -1))
    check(mx.expand_dims(x, (0, 5)), np.expand_dims(xn, (0, 5)))
    check(mx.expand_dims(mx.array(2), 0), [2])
    with pytest.raises(ValueError, match="squeeze"):
        mx.squeeze(x, 1)
    with pytest.raises(ValueError):
        mx.expand_dims(x, 6)


def test_transpose_family(x3):
    x, xn = x3
    check(mx.transpose(x), xn.T)
    check(mx.transpose(x, (1, 0, 2)), xn.transpose(1, 0, 2))
    check(mx.transpose(x, axes=[-1, 0, 1]), xn.transpose(2, 0, 1))
    check(mx.permute_dims(x, (2, 1, 0)), xn.transpose(2, 1, 0))
    check(x.transpose(), xn.T)
    check(x.transpose(1, 2, 0), xn.transpose(1, 2, 0))
    check(x.transpose((1, 2, 0)), xn.transpose(1, 2, 0))
    check(x.T, xn.T)
    check(mx.swapaxes(x, 0, 2), np.swapaxes(xn, 0, 2))
    check(x.swapaxes(-1, 1), np.swapaxes(xn, -1, 1))
    check(mx.moveaxis(x, 0, -1), np.moveaxis(xn, 0, -1))
    check(x.moveaxis(2, 0), np.moveaxis(xn, 2, 0))
    with pytest.raises(ValueError, match="transpose"):
        mx.transpose(x, (0, 0, 1))
    with pytest.raises(ValueError):
        x.transpose(0, 1)
    with pytest.raises(ValueError):
        mx.swapaxes(x, 0, 3)
    with pytest.raises(ValueError):
        mx.moveaxis(x, -4, 0)


def test_broadcasting_ops(rng):
    x, xn = make(rng, (3, 1), mx.float16)
    check(mx.broadcast_to(x, (2, 3, 4)), np.broadcast_to(xn, (2, 3, 4)), dtype=mx.float16)
    check(mx.broadcast_to(mx.array(1), 3), [1, 1, 1])
    y, yn = make(rng, (4,), mx.int32)
    a, b = mx.broadcast_arrays(x, y)
    an, bn = np.broadcast_arrays(xn, yn)
    check(a, an)
    check(b, bn)
    assert isinstance(mx.broadcast_arrays(x, y, x), tuple)
    assert mx.broadcast_shapes((3, 1), (4,), (2, 1, 1)) == (2, 3, 4)
    assert mx.broadcast_shapes((0, 1), (3,)) == (0, 3)
    with pytest.raises(ValueError, match="broadcast"):
        mx.broadcast_to(x, (3, 2, 2))
    with pytest.raises(ValueError):
        mx.broadcast_shapes((2,), (3,))
    with pytest.raises(ValueError):
        mx.broadcast_arrays(x, mx.ones((2, 2)))
    with pytest.raises(TypeError):
        mx.broadcast_arrays(x, 1)


@pytest.mark.parametrize("name", ["concatenate", "concat"])
def test_concatenate(rng, name):
    a, an = make(rng, (2, 3), mx.float32)
    b, bn = make(rng, (4, 3), mx.float32)
    c, cn = make(rng, (2, 5), mx.int32)
    f = getattr(mx, name)
    check(f([a, b]), np.concatenate([an, bn]))
    check(f([a, c], axis=1), np.concatenate([an, cn], axis=1), dtype=mx.float32)
    check(f([a, c], -1), np.concatenate([an, cn], -1))
    check(f([a, b, c], axis=None), np.concatenate([an, bn, cn], axis=None))
    check(f([mx.transpose(b), mx.zeros((3, 0))], 1), np.concatenate([bn.T, np.zeros((3, 0))], 1))
    check(f((a,)), an)
    with pytest.raises(ValueError, match="concatenate"):
        f([a, b], axis=1)
    with pytest.raises(ValueError):
        f([a, mx.ones((3,))])
    with pytest.raises(ValueError):
        f([a, b], axis=2)
    with pytest.raises(TypeError):
        f([a, 1])


def concatenate_counted(parts, axis):
    mx._kernel_counts(True, True)
    out = mx.concatenate(parts, axis=axis)
    mx.eval(out)
    return out, mx._kernel_counts(False, True)


def test_concatenating_adjacent_pieces_of_one_buffer_is_a_view(rng):
    x, xn = make(rng, (2, 3, 12), mx.float32)
    r, rn = x[..., ::-1], xn[..., ::-1]
    cases = [  # pieces that already lie side by side as the result would
        (x, xn, [(0, 4), (4, 8), (8, 12)], -1),
        (r, rn, [(0, 5), (5, 12)], -1),  # negative strides
        (x, xn, [(0, 1), (1, 3)], 1),
        (x.transpose(2, 0, 1), xn.transpose(2, 0, 1), [(0, 6), (6, 12)], 0),
    ]
    for v, vn, bounds, axis in cases:
        idx = lambda b: tuple([slice(None)] * (axis % 3) + [slice(*b)])  # noqa: E731
        out, counts = concatenate_counted([v[idx(b)] for b in bounds], axis)
        assert counts.get("Concatenate:view") == 1, counts
        check(out, np.concatenate([vn[idx(b)] for b in bounds], axis))
        check(out * 2 + 1, np.concatenate([vn[idx(b)] for b in bounds], axis) * 2 + 1)
    # The same piece twice: a broadcast view along the axis.
    out, counts = concatenate_counted([x[:, 1:2], x[:, 1:2]], 1)
    assert counts.get("Concatenate:view") == 1, counts
    check(out, np.concatenate([xn[:, 1:2]] * 2, 1))
    # Writing into the result never writes into the input it views.
    y = mx.concatenate([x[..., :6], x[..., 6:]], axis=-1)
    y[0, 0, 0] = 1e6
    y = y + 0
    check(x, xn)
    assert y[0, 0, 0].item() == 1e6


def test_concatenating_pieces_out_of_place_copies(rng):
    x, xn = make(rng, (4, 12), mx.float32)
    y, yn = make(rng, (4, 12), mx.float32)
    cases = [([x[:, 4:8], x[:, 0:4]], [xn[:, 4:8], xn[:, 0:4]]),  # out of order
             ([x[:, 0:4], x[:, 5:9]], [xn[:, 0:4], xn[:, 5:9]]),  # a gap
             ([x[:, 0:6], x[:, 3:9]], [xn[:, 0:6], xn[:, 3:9]]),  # overlapping
             ([x[:, 0:6:2], x[:, 6:9]], [xn[:, 0:6:2], xn[:, 6:9]]),  # other strides
             ([x[:, 0:6], y[:, 6:12]], [xn[:, 0:6], yn[:, 6:12]]),  # two buffers
             ([x[:, 0:6], x[:, 6:12].astype(mx.float16)], [xn[:, 0:6], xn[:, 6:12].astype(np.float16)])]
    for parts, ref in cases:
        out, counts = concatenate_counted(parts, 1)
        assert "Concatenate:view" not in counts, counts
        check(out, np.concatenate(ref, 1))


def test_stack_unstack(rng):
    a, an = make(rng, (2, 3), mx.float32)
    b, bn = make(rng, (2, 3), mx.float32)
    for axis in (0, 1, 2, -1, -3):
        check(mx.stack([a, b], axis=axis), np.stack([an, bn], axis=axis))
    check(mx.stack([a, b]), np.stack([an, bn]))
    parts = mx.unstack(a)
    assert isinstance(parts, list) and len(parts) == 2
    for p, pn in zip(parts, an):
        check(p, pn)
    for p, pn in zip(mx.unstack(a, axis=-1), an.T):
        check(p, pn)
    with pytest.raises(ValueError, match="stack"):
        mx.stack([])
    with pytest.raises(ValueError):
        mx.stack([a, mx.ones((3, 2))])
    with pytest.raises(ValueError):
        mx.unstack(a, axis=2)


@pytest.mark.parametrize("sections,axis", [(2, 0), (3, 1), (1, 2), ([1, 3], 2), ([], 0),
                                           ((0, 2, 2), 1), (4, -1), ([5], 2)])
def test_split(x3, sections, axis):
    x, xn = x3
    parts = mx.split(x, sections, axis)
    ref = np.split(xn, sections, axis)
    assert isinstance(parts, list) and len(parts) == len(ref)
    for p, pn in zip(parts, ref):
        check(p, pn)
    for p, pn in zip(x.split(sections, axis=axis), ref):
        check(p, pn)


@pytest.mark.parametrize("sections", [[3, 1], [-2], [0, 9], [2, 2, -1]])
def test_split_unsorted_and_negative_boundaries(rng, sections):
    # NumPy's pieces for boundaries out of order, negative or past the end (Slice per piece).
    x, xn = make(rng, (7, 3), mx.float32)
    parts = mx.split(x, sections)
    ref = np.split(xn, sections)
    assert len(parts) == len(ref)
    for p, pn in zip(parts, ref):
        check(p, pn)


def test_split_views_and_layouts(rng):
    # Pieces of transposed, reversed and sliced inputs, and pieces that are empty.
    x, xn = make(rng, (6, 5, 4), mx.float32)
    for v, vn in [(x.transpose(2, 0, 1), xn.transpose(2, 0, 1)), (x[::-1, :, 1:], xn[::-1, :, 1:]),
                  (x[:, ::2], xn[:, ::2])]:
        for sections, axis in [(2, 0), ([1, 1, 3], 1), ([0, 2], -1)]:
            for p, pn in zip(mx.split(v, sections, axis), np.split(vn, sections, axis)):
                check(p, pn)
                check(p + 1, pn + 1)  # a kernel reading the view
    z = mx.zeros((0, 4))
    assert [p.shape for p in mx.split(z, 2, axis=1)] == [(0, 2), (0, 2)]


def slice_pieces_gradient(x, pieces):
    """The gradient of sum_i (x[piece_i] * (i + 1)).sum() and the primitives it ran."""
    def f(a):
        return sum((a[p] * (i + 1)).sum() for i, p in enumerate(pieces))

    mx.eval(x)
    mx._kernel_counts(True, True)
    g = mx.grad(f)(x)
    mx.eval(g)
    return g, mx._kernel_counts(False, True)


def test_slice_derivatives_write_disjoint_pieces_into_one_zero_fill(rng):
    x, xn = make(rng, (4, 12), mx.float32)
    cases = [  # pieces that share no element: each written once into one array of zeros
        [np.s_[:, 0:4], np.s_[:, 4:8], np.s_[:, 8:12]],
        [np.s_[:, 0::2], np.s_[:, 1::2]],  # interleaved
        [np.s_[0:2, 5:], np.s_[2:, ::-3], np.s_[0:1, 0:2]],  # rows apart, reversed
    ]
    for pieces in cases:
        g, counts = slice_pieces_gradient(x, pieces)
        ref = np.zeros_like(xn)
        for i, p in enumerate(pieces):
            ref[p] += i + 1
        check(g, ref)
        assert counts.get("SliceUpdate") == len(pieces) and "Add" not in counts, counts
    # Pieces that overlap (or repeat) are added.
    for pieces in ([np.s_[:, 0:6], np.s_[:, 4:10]], [np.s_[:, 1:3], np.s_[:, 1:3]],
                   [np.s_[:, 0::2], np.s_[:, 0::4]]):
        g, counts = slice_pieces_gradient(x, pieces)
        ref = np.zeros_like(xn)
        for i, p in enumerate(pieces):
            ref[p] += i + 1
        check(g, ref)
        assert counts.get("Add", 0) >= 1, counts
    # A piece and a use of the whole: added.
    g = mx.grad(lambda a: (a[:, 2:5] * 3).sum() + (a * 2).sum())(x)
    ref = np.full_like(xn, 2)
    ref[:, 2:5] += 3
    check(g, ref)


def test_split_derivatives_are_one_concatenation(rng):
    x, xn = make(rng, (4, 9), mx.float32)
    w = [mx.array(rng.standard_normal((4, k)).astype(np.float32)) for k in (2, 3)]

    def f(a):  # pieces [5, 9) and the empty [9, 9) unused: their cotangents are zeros
        p = mx.split(a, [2, 5, 9], axis=1)
        return (p[0] * w[0]).sum() + (p[1] * w[1]).sum()

    g = mx.grad(f)(x)
    ref = np.concatenate([np.array(w[0]), np.array(w[1]), np.zeros((4, 4))], axis=1)
    np.testing.assert_allclose(np.array(g), ref, rtol=1e-6)
    # No zero-filled copy of the input per piece: a concatenation, no SliceUpdate or Full.
    mx.eval(x)
    mx._kernel_counts(True, True)
    mx.eval(mx.grad(lambda a: sum((p * (i + 1)).sum() for i, p in
                                  enumerate(mx.split(a, 3, axis=1))))(x))
    counts = mx._kernel_counts(False, True)
    assert counts.get("Concatenate") == 1 and "SliceUpdate" not in counts, counts
    # jvp and vmap, the batch axis before and after the split axis.
    t = mx.array(rng.standard_normal((4, 9)).astype(np.float32))
    _, tangents = mx.jvp(lambda a: mx.split(a, [4], axis=1), [x], [t])
    for tt, tn in zip(tangents, np.split(np.array(t), [4], axis=1)):
        check(tt, tn)
    xb, xbn = make(rng, (3, 4, 9), mx.float32)
    for in_axis in (0, 1, 2):
        moved = mx.moveaxis(xb, 0, in_axis)
        out = mx.vmap(lambda a: mx.split(a, [1, 6], axis=1), in_axes=in_axis)(moved)
        for p, pn in zip(out, np.split(xbn, [1, 6], axis=2)):
            check(p, pn)


def test_split_exports_and_compiles(rng, tmp_path):
    x, xn = make(rng, (5, 6), mx.float32)
    f = lambda a: [p * (i + 1) for i, p in enumerate(mx.split(a, [1, 4], axis=1))]
    path = str(tmp_path / "split.mlxfn")
    mx.export_function(path, f, x)
    for p, pn in zip(mx.import_function(path)(x), f(x)):
        check(p, np.array(pn))
    for p, pn in zip(mx.compile(f)(x), f(x)):
        check(p, np.array(pn))
    # Shapeless traces keep a Slice per piece, refused as slices are.
    g = mx.compile(lambda a: mx.split(a, [2], axis=0)[1] * 2, shapeless=True)
    with pytest.raises(ValueError, match="Slice"):
        g(x)


def test_split_errors(x3):
    x, _ = x3
    with pytest.raises(ValueError, match="split"):
        mx.split(x, 5, axis=1)
    with pytest.raises(ValueError):
        mx.split(x, 2, axis=3)


def test_tile_repeat(rng):
    x, xn = make(rng, (2, 3), mx.int32)
    for reps in [2, (2, 1), (1, 2, 3), (0, 2)]:
        check(mx.tile(x, reps), np.tile(xn, reps))
    check(mx.repeat(x, 2), np.repeat(xn, 2))
    check(mx.repeat(x, 3, axis=1), np.repeat(xn, 3, axis=1))
    check(mx.repeat(x, 2, -2), np.repeat(xn, 2, -2))
    check(mx.repeat(x, 0, 0), np.repeat(xn, 0, 0))
    with pytest.raises(ValueError):
        mx.repeat(x, -1, 0)
    with pytest.raises(ValueError):
        mx.repeat(x, 2, 2)


@pytest.mark.parametrize("dtype", [mx.float32, mx.int8, mx.bool_, mx.bfloat16])
def test_pad(rng, dtype):
    x, xn = make(rng, (2, 3), dtype)
    for width in [1, (2,), (1, 2), [(0, 1), (2, 0)], [(1, 1)], 0]:
        check(mx.pad(x, width), np.pad(xn, width), dtype=dtype)
        check(mx.pad(x, width, mode="edge"), np.pad(xn, width, mode="edge"), dtype=dtype)
    value = True if dtype == mx.bool_ else 2
    check(mx.pad(x, 1, constant_values=value), np.pad(xn, 1, constant_values=value), dtype=dtype)
    check(mx.pad(x, ((1, 0), (0, 1)), "constant", mx.array(value)),
          np.pad(xn, ((1, 0), (0, 1)), constant_values=value))


def test_pad_weak_value_and_errors(rng):
    h = mx.ones((2,), mx.float16)
    assert mx.pad(h, 1, constant_values=0.5).dtype == mx.float16
    with pytest.raises(ValueError, match="pad"):
        mx.pad(h, 1, mode="reflect")
    with pytest.raises(ValueError):
        mx.pad(h, -1)
    with pytest.raises(ValueError):
        mx.pad(mx.ones((2, 2)), [(1, 1), (1, 1), (1, 1)])
    with pytest.raises(ValueError):
        mx.pad(h, (1, 2, 3))


@pytest.mark.parametrize("shift,axis", [(1, None), (-7, None), (2, 0), (-1, -1), ((1, 2), (0, 1)),
                                        (3, (0, 2)), ((1, -1), 2), (0, 1), (25, 2)])
def test_roll(x3, shift, axis):
    x, xn = x3
    check(mx.roll(x, shift, axis), np.roll(xn, shift, axis))
    check(mx.roll(mx.transpose(x), shift, axis), np.roll(xn.T, shift, axis))


def test_roll_errors(x3):
    x, _ = x3
    with pytest.raises(ValueError, match="roll"):
        mx.roll(x, (1, 2), (0, 1, 2))
    with pytest.raises(ValueError):
        mx.roll(x, 1, 3)


def test_flip(x3):
    x, xn = x3
    for axis in [None, 0, -1, (0, 2)]:
        check(mx.flip(x, axis), np.flip(xn, axis))
    check(mx.flip(mx.flip(x, 1), axis=1), xn)
    with pytest.raises(ValueError):
        mx.flip(x, 3)


@pytest.mark.parametrize("k", [0, 1, -1, 5, -5])
def test_tril_triu(rng, k):
    x, xn = make(rng, (2, 4, 5), mx.int32)
    check(mx.tril(x, k), np.tril(xn, k))
    check(mx.triu(x, k=k), np.triu(xn, k))
    check(mx.tril(x), np.tril(xn))
    with pytest.raises(ValueError):
        mx.tril(mx.ones((3,)))


@pytest.mark.parametrize("offset,axis1,axis2", [(0, 0, 1), (1, 0, 1), (-2, 1, 0), (1, -1, 0),
                                                (9, 0, 1)])
def test_diagonal(rng, offset, axis1, axis2):
    x, xn = make(rng, (4, 5, 3), mx.float32)
    check(mx.diagonal(x, offset, axis1, axis2), np.diagonal(xn, offset, axis1, axis2))
    check(x.diagonal(offset=offset, axis1=axis1, axis2=axis2),
          np.diagonal(xn, offset, axis1, axis2))


def test_diag(rng):
    v, vn = make(rng, (4,), mx.float32)
    m, mn = make(rng, (3, 5), mx.float32)
    for k in (0, 1, -2):
        check(mx.diag(v, k), np.diag(vn, k))
        check(mx.diag(m, k=k), np.diag(mn, k))
        check(m.diag(k), np.diag(mn, k))
    with pytest.raises(ValueError, match="diag"):
        mx.diag(mx.ones((2, 2, 2)))
    with pytest.raises(ValueError):
        mx.diagonal(v)


@pytest.mark.parametrize("indexing", ["xy", "ij"])
@pytest.mark.parametrize("sparse", [False, True])
def test_meshgrid(rng, indexing, sparse):
    a, an = make(rng, (3,), mx.float32)
    b, bn = make(rng, (4,), mx.int32)
    c, cn = make(rng, (2,), mx.float32)
    out = mx.meshgrid(a, b, c, sparse=sparse, indexing=indexing)
    ref = np.meshgrid(an, bn, cn, sparse=sparse, indexing=indexing)
    assert len(out) == 3
    for o, r in zip(out, ref):
        check(o, r)
    with pytest.raises(ValueError):
        mx.meshgrid(a, b, indexing="xx")


@pytest.mark.parametrize("src,dst", [(mx.float32, mx.int32), (mx.float32, mx.uint8),
                                     (mx.int16, mx.float16), (mx.uint8, mx.bool_),
                                     (mx.int64, mx.float32), (mx.float16, mx.bfloat16)])
def test_view(rng, src, dst):
    x, xn = make(rng, (3, 4), src)
    out = mx.view(x, dst)
    assert out.dtype == dst
    np_dst = {mx.bfloat16: np.uint16}.get(dst, np.array(mx.zeros((1,), dst)).dtype)
    expected = xn.view(np_dst)
    got = out if dst != mx.bfloat16 else mx.view(out, mx.uint16)
    check(got, expected)
    check(x.view(dst) if dst != mx.bfloat16 else mx.view(x.view(dst), mx.uint16), expected)
    with pytest.raises(ValueError):
        mx.view(mx.ones((3,), mx.int8), mx.int32)


def test_as_strided(rng):
    x, xn = make(rng, (10,), mx.int32)
    check(mx.as_strided(x, (4, 3), (2, 1)), np.lib.stride_tricks.as_strided(
        xn, (4, 3), (2 * xn.itemsize, xn.itemsize)))
    check(mx.as_strided(x, (3, 2), (1, 4), offset=2), [[xn[2 + i + 4 * j] for j in range(2)]
                                                        for i in range(3)])
    check(mx.as_strided(x), xn)
    check(mx.as_strided(x, shape=(2, 5)), xn.reshape(2, 5))
    m, mn = make(rng, (3, 4), mx.float32)
    # The view reads the array in row-major order whatever its layout.
    check(mx.as_strided(mx.transpose(m), (12,), (1,)), mn.T.reshape(-1))
    with pytest.raises(ValueError):
        mx.as_strided(x, (2, 2), (1,))


@pytest.mark.parametrize("name,ref", [("atleast_1d", np.atleast_1d), ("atleast_2d", np.atleast_2d),
                                      ("atleast_3d", np.atleast_3d)])
def test_atleast(name, ref):
    arrays = [np.array(1.0, np.float32), np.ones((2,), np.float32), np.ones((2, 3), np.float32),
              np.ones((2, 3, 4), np.float32)]
    f = getattr(mx, name)
    for a in arrays:
        check(f(mx.array(a)), ref(a))
    out = f(*[mx.array(a) for a in arrays])
    assert isinstance(out, list) and len(out) == 4
    for o, r in zip(out, ref(*arrays)):
        check(o, r)
    with pytest.raises(TypeError):
        f([1, 2])


def test_slice_and_slice_update(rng):
    x, xn = make(rng, (4, 5, 6), mx.float32)
    check(mx.slice(x, mx.array([1, 2]), (0, 2), (2, 5, 3)), xn[1:3, :, 2:5])
    check(mx.slice(x, mx.array(3), [1], [4, 2, 6]), xn[:, 3:5, :])
    check(mx.slice(x, start_indices=mx.array([-2]), axes=(2,), slice_size=(4, 5, 2)),
          xn[:, :, -2:])
    start = mx.add(mx.array([0, 1]), 1)  # computed start indices
    check(mx.slice(x, start, (0, 1), (1, 2, 6)), xn[1:2, 2:4, :])
    u, un = make(rng, (2, 5, 3), mx.float32)
    expected = xn.copy()
    expected[1:3, :, 2:5] = un
    check(mx.slice_update(x, u, mx.array([1, 2]), (0, 2)), expected)
    expected = xn.copy()
    expected[:, 4:5, :] = 7
    check(mx.slice_update(x, mx.full((4, 1, 6), 7.0), mx.array(4), (1,)), expected)
    expected = xn.copy()
    expected[0, 4, 0] = 7  # the update's shape is the slice's
    check(mx.slice_update(x, 7, mx.array(4), (1,)), expected)
    check(mx.slice_update(mx.zeros((3, 3)), mx.ones((1, 2)), mx.array([1, 1]), (0, 1)),
          [[0, 0, 0], [0, 1, 1], [0, 0, 0]])
    with pytest.raises(ValueError):
        mx.slice(x, mx.array([1, 2]), (0, 2), (2, 5))
    with pytest.raises(ValueError):
        mx.slice(x, mx.array([1.5]), (0,), (1, 5, 6))
    with pytest.raises(IndexError):
        mx.eval(mx.slice(x, mx.array([3]), (0,), (2, 5, 6)))
