"""Indexing: a[idx], a[idx] = v and a.at[idx].<op>(v), against NumPy."""
import numpy as np
import pytest

import mlx.core as mx

# (mx dtype, NumPy dtype used for data and reference); bfloat16 is compared through float32.
DTYPES = [
    (mx.bool_, np.bool_),
    (mx.uint8, np.uint8),
    (mx.int16, np.int16),
    (mx.int32, np.int32),
    (mx.int64, np.int64),
    (mx.float16, np.float16),
    (mx.bfloat16, np.float32),
    (mx.float32, np.float32),
    (mx.float64, np.float64),
    (mx.complex64, np.complex64),
]
DTYPE_IDS = [repr(d[0]) for d in DTYPES]


def data(rng, shape, np_dtype):
    """Small integers, exact in every dtype."""
    x = rng.integers(0, 50, size=shape)
    if np_dtype == np.bool_:
        x = x % 2
    return x.astype(np_dtype)


def to_mx(x, dtype=None):
    a = mx.array(x)
    return a if dtype is None else a.astype(dtype)


def check(got, expected, dtype=None):
    assert isinstance(got, mx.array)
    assert got.shape == expected.shape
    if dtype is not None:
        assert got.dtype == dtype
    np.testing.assert_array_equal(np.array(got), expected)


# Index expressions with NumPy meaning; mx.array entries are spelled as np arrays here and
# converted by `as_mx` (lists and NumPy arrays are also passed through as they are).
S = np.s_
BASIC_CASES = [
    ((5,), S[3]),
    ((5,), S[-1]),
    ((5,), S[1:4]),
    ((5,), S[::-1]),
    ((5,), S[-2:-5:-1]),
    ((5,), S[10:]),
    ((5,), S[-10:2]),
    ((5,), S[4:1]),
    ((5,), S[::3]),
    ((5,), S[None]),
    ((5,), S[...]),
    ((5,), S[()]),
    ((4, 5), S[1]),
    ((4, 5), S[:, 2]),
    ((4, 5), S[-1, -2]),
    ((4, 5), S[1:3, ::-2]),
    ((4, 5), S[..., 1]),
    ((4, 5), S[None, :, None]),
    ((4, 5), S[2, None]),
    ((3, 4, 5), S[1, ..., 2]),
    ((3, 4, 5), S[::-1, 1:3, None, ::2]),
    ((3, 4, 5), S[:, -1]),
    ((3, 4, 5), S[2:0:-1, ..., None]),
    ((2, 3, 4, 5), S[1, :, ::-1, 3]),
    ((2, 3, 4, 5), S[..., None, 1:4:2]),
    ((2, 3, 4, 5), S[-1, -1, -1, -1]),
    ((2, 3, 4, 5), S[:, :, 7:9]),
    ((), S[()]),
    ((), S[...]),
    ((), S[None]),
]

ADVANCED_CASES = [
    ((6,), S[np.array([0, 5, -1, 2])]),
    ((6,), S[np.array([[1, 2], [3, -6]])]),
    ((6,), S[np.array(3)]),
    ((6,), S[np.array([], dtype=np.int32)]),
    ((4, 5), S[np.array([0, 3]), np.array([1, 4])]),
    ((4, 5), S[np.array([[0], [3]]), np.array([1, 4, 2])]),
    ((4, 5), S[:, np.array([4, 0, 0])]),
    ((4, 5), S[np.array([3, 1]), 2:]),
    ((4, 5), S[np.array([3, 1]), None]),
    ((4, 5), S[None, np.array([3, 1]), ::-1]),
    ((4, 5), S[1, np.array([[0, 1], [2, 3]])]),
    ((3, 4, 5), S[np.array([0, 2]), :, np.array([1, 4])]),  # separated: block first
    ((3, 4, 5), S[:, np.array([0, 2]), np.array([1, 4])]),  # adjacent: block in place
    ((3, 4, 5), S[:, np.array([0, 2]), 1]),  # int joins the block
    ((3, 4, 5), S[1, :, np.array([0, 3])]),  # int and array separated by a slice
    ((3, 4, 5), S[:, np.array([1, 0]), None, 2]),  # None separates
    ((3, 4, 5), S[:, np.array([1, 0]), ..., np.array([2, 3])]),  # empty ellipsis separates
    ((3, 4, 5), S[np.array([1]), ..., np.array([[2], [3]])]),
    ((3, 4, 5), S[..., np.array([0, 4, 4])]),
    ((3, 4, 5), S[::-1, np.array([[3, 2, 1]]), 1:4:2]),
    ((2, 3, 4, 5), S[:, np.array([0, 2]), :, np.array([[1], [4]])]),
    ((2, 3, 4, 5), S[1, np.array([0, 2]), np.array([3, 0]), ::-2]),
    ((2, 3, 4, 5), S[np.array([1, 0]), :, 2, None, np.array([4, 4])]),
    ((2, 3, 4, 5), S[None, 0, ..., np.array([1, 2, 3]), None]),
]


def as_mx_index(idx, form):
    """The NumPy index with its arrays as mx.array, list or NumPy array."""
    def conv(e):
        if isinstance(e, np.ndarray):
            if form == "mx":
                return mx.array(e)
            if form == "list":
                return e.tolist() if e.ndim else int(e)
        return e

    if isinstance(idx, tuple):
        return tuple(conv(e) for e in idx)
    return conv(idx)


@pytest.mark.parametrize("dtype,np_dtype", DTYPES, ids=DTYPE_IDS)
def test_basic_getitem_matches_numpy(dtype, np_dtype, rng):
    for shape, idx in BASIC_CASES:
        x = data(rng, shape, np_dtype)
        check(to_mx(x, dtype)[idx], x[idx], dtype)


@pytest.mark.parametrize("form", ["mx", "numpy", "list"])
@pytest.mark.parametrize("dtype,np_dtype", DTYPES, ids=DTYPE_IDS)
def test_advanced_getitem_matches_numpy(dtype, np_dtype, form, rng):
    for shape, idx in ADVANCED_CASES:
        x = data(rng, shape, np_dtype)
        check(to_mx(x, dtype)[as_mx_index(idx, form)], x[idx], dtype)


def test_index_array_dtypes_and_scalars(rng):
    x = data(rng, (5, 6), np.float32)
    a = mx.array(x)
    for t in (mx.uint8, mx.int8, mx.int16, mx.uint32, mx.int64, mx.uint64):
        check(a[mx.array([4, 0, 2]).astype(t)], x[[4, 0, 2]])
    check(a[np.int64(3), np.int32(-1)], x[3, -1])
    check(a[np.array(2)], x[2])
    check(a[[]], x[np.array([], dtype=np.intp)])
    check(a[[[1, 2], [3, 4]], 0], x[[[1, 2], [3, 4]], 0])
    check(a[([1, 2], [3, 4])], x[([1, 2], [3, 4])])
    check(a[2**40:], x[2**40:])
    check(a[-(2**40):2, :: 2**40], x[-(2**40):2, :: 2**40])


def test_non_contiguous_sources(rng):
    x = data(rng, (4, 6, 5), np.float32)
    a = mx.array(x)
    views = [S[::-1, ::2], S[:, 1:5:3, ::-2]]
    for src, ref in [(a.T, x.T)] + [(a[v], x[v]) for v in views]:
        for idx in (S[1], S[::-1, 0], S[np.array([0, -1]), :, np.array([1, 0])], S[..., 1:, None]):
            check(src[as_mx_index(idx, "mx")], ref[idx])
        y = ref.copy()
        y[1, ...] = 7
        s = src
        s[1, ...] = 7
        check(s, y)
        y[..., np.array([0, 0, 1])] = -1
        s[..., mx.array([0, 0, 1])] = -1
        check(s, y)


def test_empty_arrays_and_results(rng):
    x = np.zeros((0, 3), np.float32)
    a = mx.array(x)
    empty = np.array([], dtype=np.int32)
    for idx in (S[:, 1], S[::-1], S[..., None], S[empty], S[:, np.array([0, 2])]):
        check(a[as_mx_index(idx, "mx")], x[idx])
    a[:, 1] = 5.0
    check(a, x)
    y = data(rng, (3, 4), np.int32)
    b = mx.array(y)
    b[2:1] = 9
    b[mx.array([], dtype=mx.int32)] = 9
    check(b, y)
    check(b[1:1, np.array([0, 1])], y[1:1, np.array([0, 1])])


def test_basic_indexing_makes_views():
    x = np.arange(4 * 5 * 6, dtype=np.float32).reshape(4, 5, 6)
    base = mx.array(x)
    mx.eval(base)
    basic = [S[1], S[::-1], S[..., 2], S[None, 1, 1:4, None], S[3:0:-2, 2, ::3], S[:, -1:]]
    for idx in basic:
        r = base[idx]
        mx.eval(r)
        assert np.shares_memory(np.asarray(base), np.asarray(r)), idx
    # Nothing new is allocated for a view; a gather allocates its result.
    before = mx.get_active_memory()
    views = [base[idx] for idx in basic]
    mx.eval(views)
    assert mx.get_active_memory() <= before
    g = base[mx.array([0, 1, 2, 3])]
    mx.eval(g)
    assert mx.get_active_memory() >= before + g.nbytes
    assert not np.shares_memory(np.asarray(base), np.asarray(g))


def set_cases():
    """(shape, index, value shape or None for a scalar); indices without repeated positions."""
    return [
        ((5,), S[3], None),
        ((5,), S[::-2], (3,)),
        ((5,), S[1:4], (1,)),
        ((5,), S[10:], (0,)),
        ((5,), S[...], (5,)),
        ((5,), S[None], (1, 5)),
        ((4, 5), S[1], (5,)),
        ((4, 5), S[:, 2], (4,)),
        ((4, 5), S[1:3, ::-2], (2, 1)),
        ((4, 5), S[1:3, ::-2], (1, 1, 3)),  # extra leading unit dim
        ((4, 5), S[None, :, None, 1], (1, 4, 1)),
        ((4, 5), S[-1, -2], ()),
        ((3, 4, 5), S[1, ..., 2], (4,)),
        ((3, 4, 5), S[::-1, 1:3, None, ::2], (3, 1, 1, 3)),
        ((6,), S[np.array([0, 5, -2])], (3,)),
        ((6,), S[np.array([[1, 2], [3, 0]])], (2,)),
        ((4, 5), S[np.array([0, 3]), np.array([1, 4])], None),
        ((4, 5), S[:, np.array([4, 0])], (4, 1)),
        ((4, 5), S[np.array([[0], [3]]), np.array([1, 4, 2])], (2, 3)),
        ((4, 5), S[1, np.array([[0, 1], [2, 3]])], (2, 1)),
        ((3, 4, 5), S[np.array([0, 2]), :, np.array([1, 4])], (2, 4)),
        ((3, 4, 5), S[:, np.array([0, 2]), np.array([1, 4])], (3, 2)),
        ((3, 4, 5), S[1, :, np.array([0, 3])], (2, 1)),
        ((3, 4, 5), S[:, np.array([1, 0]), None, 2], (2, 3, 1)),
        ((3, 4, 5), S[::-1, np.array([[3, 2, 1]]), 1:4:2], (3, 1, 3, 2)),
        ((2, 3, 4, 5), S[1, np.array([0, 2]), np.array([3, 0]), ::-2], (3,)),
        ((2, 3, 4, 5), S[None, 0, ..., np.array([1, 2, 3]), None], (3, 1, 1, 4, 1)),
    ]


@pytest.mark.parametrize("form", ["mx", "numpy", "list"])
@pytest.mark.parametrize("dtype,np_dtype", DTYPES, ids=DTYPE_IDS)
def test_setitem_matches_numpy(dtype, np_dtype, form, rng):
    for shape, idx, vshape in set_cases():
        x = data(rng, shape, np_dtype)
        a = to_mx(x, dtype)
        if vshape is None:
            v_np = data(rng, (), np_dtype)
            v = v_np.item()
        else:
            v_np = data(rng, vshape, np_dtype)
            v = to_mx(v_np, dtype) if form == "mx" else v_np if form == "numpy" else v_np.tolist()
        x[idx] = v_np
        a[as_mx_index(idx, form)] = v
        check(a, x, dtype)


def test_setitem_casts_values_to_the_array_dtype(rng):
    a = mx.array([1, 2, 3, 4], dtype=mx.int16)
    a[1] = 7.9
    a[mx.array([2, 3])] = mx.array([1.5, -2.5], dtype=mx.float32)
    assert a.dtype == mx.int16
    assert a.tolist() == [1, 7, 1, -2]
    h = mx.array([1.0, 2.0], dtype=mx.float16)
    h[0] = 0.5
    h[1:] = np.array([3.0])
    assert h.dtype == mx.float16 and h.tolist() == [0.5, 3.0]
    b = mx.array([True, False])
    b[1] = 1
    assert b.tolist() == [True, True]
    c = mx.array([[1, 2]])
    c[0, 1] = mx.array([[7]])  # extra leading unit dims are dropped, as in NumPy
    assert c.tolist() == [[1, 7]]


def test_setitem_updates_every_reference_but_not_earlier_slices():
    a = mx.array([1, 2, 3])
    b = a
    c = a[:]
    d = a[mx.array([0, 1, 2])]
    b[2] = 0
    assert a.tolist() == [1, 2, 0]
    assert c.tolist() == [1, 2, 3] and d.tolist() == [1, 2, 3]
    c[0] = 9
    assert a.tolist() == [1, 2, 0]


def test_repeated_set_indices_take_one_of_the_values():
    a = mx.array([1, 2, 3])
    a[[0, 0]] = mx.array([4, 5])
    assert a.tolist()[0] in (4, 5) and a.tolist()[1:] == [2, 3]
    a = mx.array([0, 0])
    idx = mx.array([0, 1, 0, 1])
    a[idx] += 1
    assert a.tolist() == [1, 1]


AT_OPS = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "divide": np.divide,
    "maximum": np.maximum,
    "minimum": np.minimum,
}

AT_CASES = [
    ((6,), S[np.array([0, 2, 0, 1, 2, 2])], (6,)),
    ((6,), S[np.array([[5, 5], [-1, 0]])], None),
    ((6,), S[1:5:2], (2,)),
    ((6,), S[::-1], None),
    ((4, 5), S[np.array([0, 0, 3]), np.array([1, 1, 1])], (3,)),
    ((4, 5), S[:, np.array([4, 0, 4])], (4, 3)),
    ((4, 5), S[np.array([3, 3]), 1:4], (1, 3)),
    ((4, 5), S[2, np.array([1, 1, 1])], None),
    ((3, 4, 5), S[np.array([0, 0]), :, np.array([1, 1])], (2, 4)),
    ((3, 4, 5), S[:, np.array([2, 2]), None, 1], (2, 3, 1)),
    ((3, 4, 5), S[..., np.array([[0], [0]])], (3, 4, 2, 1)),
    ((2, 3, 4, 5), S[1, np.array([0, 0]), np.array([3, 3]), ::-2], (2, 3)),
]


@pytest.mark.parametrize("op", list(AT_OPS))
@pytest.mark.parametrize(
    "dtype,np_dtype",
    [(mx.float32, np.float32), (mx.float64, np.float64), (mx.int32, np.int32),
     (mx.int64, np.int64)],
    ids=["float32", "float64", "int32", "int64"],
)
def test_at_accumulates_like_ufunc_at(op, dtype, np_dtype, rng):
    if op == "divide" and np_dtype in (np.int32, np.int64):
        pytest.skip("NumPy has no in-place true division of integers")
    for shape, idx, vshape in AT_CASES:
        floating = np_dtype in (np.float32, np.float64)
        x = (rng.uniform(0.5, 2.0, shape) if floating else rng.integers(-20, 20, shape))
        x = x.astype(np_dtype)
        v = rng.uniform(0.5, 2.0, vshape or ()) if floating else rng.integers(-5, 6, vshape or ())
        v = np.asarray(v).astype(np_dtype)
        a = mx.array(x, dtype)
        got = getattr(a.at[as_mx_index(idx, "mx")], op)(v.item() if vshape is None else mx.array(v, dtype))
        ref = x.copy()
        AT_OPS[op].at(ref, idx, v)
        assert got.dtype == dtype and got.shape == ref.shape
        rtol = 1e-5 if np_dtype == np.float32 else 1e-12
        np.testing.assert_allclose(np.array(got), ref, rtol=rtol)
        np.testing.assert_array_equal(np.array(a), x)  # a itself is unchanged


def test_at_docs_example_and_integer_divide():
    a = mx.array([0, 0])
    idx = mx.array([0, 1, 0, 1])
    assert a.at[idx].add(1).tolist() == [2, 2]
    assert a.tolist() == [0, 0]
    b = mx.array([100, 7, 9], dtype=mx.int32)
    got = b.at[mx.array([0, 0, 1])].divide(mx.array([2, 5, 2]))
    assert got.dtype == mx.int32 and got.tolist() == [10, 3, 9]
    u = mx.array([5, 5], dtype=mx.uint8)
    assert u.at[[0, 0]].subtract(2).tolist() == [1, 5]
    h = mx.array([1.0, 2.0], dtype=mx.bfloat16)
    assert h.at[[1, 1, 1]].multiply(2.0).tolist() == [1.0, 16.0]


def index_shape_choices(rng, bshape):
    """A shape that broadcasts to bshape."""
    shape = list(bshape[rng.integers(0, len(bshape) + 1):])
    return tuple(1 if rng.random() < 0.3 else d for d in shape)


def random_index(rng, shape, max_arrays=2):
    """A random NumPy index over `shape` and the same index for mlx (arrays in random forms)."""
    nd = len(shape)
    k = int(rng.integers(0, nd + 1))
    ellipsis_at = int(rng.integers(0, k + 1)) if rng.random() < 0.3 else None
    axes = list(range(k)) if ellipsis_at is None else (
        list(range(ellipsis_at)) + list(range(nd - (k - ellipsis_at), nd)))
    bshape = tuple(int(d) for d in rng.integers(1, 4, size=rng.integers(0, 3)))
    np_idx, mx_idx, arrays = [], [], 0
    for pos, ax in enumerate(axes):
        if pos == ellipsis_at:
            np_idx.append(Ellipsis)
            mx_idx.append(Ellipsis)
        n = shape[ax]
        r = rng.random()
        if n > 0 and r < 0.25:
            i = int(rng.integers(-n, n))
            np_idx.append(i)
            mx_idx.append(i)
        elif n > 0 and r < 0.5 and arrays < max_arrays:
            arrays += 1
            ind = rng.integers(-n, n, size=index_shape_choices(rng, bshape))
            np_idx.append(ind)
            form = rng.integers(0, 3)
            mx_idx.append(mx.array(ind) if form == 0 else ind if form == 1 else ind.tolist())
        else:
            pick = lambda: None if rng.random() < 0.3 else int(rng.integers(-n - 2, n + 3))
            step = None if rng.random() < 0.3 else int(rng.choice([-3, -2, -1, 1, 2, 3]))
            sl = slice(pick(), pick(), step)
            np_idx.append(sl)
            mx_idx.append(sl)
        if rng.random() < 0.15:
            np_idx.append(None)
            mx_idx.append(None)
    if ellipsis_at == len(axes):
        np_idx.append(Ellipsis)
        mx_idx.append(Ellipsis)
    return tuple(np_idx), tuple(mx_idx)


def random_value(rng, target_shape, np_dtype):
    """A value that broadcasts to target_shape: scalar, full, unit dims or fewer dims."""
    r = rng.random()
    if r < 0.2:
        return data(rng, (), np_dtype)
    shape = list(target_shape)
    if r < 0.5:
        shape = [1 if rng.random() < 0.5 else d for d in shape]
    elif r < 0.7:
        shape = shape[rng.integers(0, len(shape) + 1):]
    elif r < 0.8:
        shape = [1] + shape
    return data(rng, tuple(shape), np_dtype)


@pytest.mark.parametrize("dtype,np_dtype", DTYPES, ids=DTYPE_IDS)
def test_random_indices_get_set_and_at(dtype, np_dtype):
    rng = np.random.default_rng(1234)
    for trial in range(150):
        shape = tuple(int(d) for d in rng.integers(0, 5, size=rng.integers(1, 5)))
        if rng.random() < 0.8:
            shape = tuple(max(d, 1) for d in shape)
        x = data(rng, shape, np_dtype)
        np_idx, mx_idx = random_index(rng, shape)
        a = to_mx(x, dtype)
        ref = x[np_idx]
        check(a[mx_idx], ref, dtype)

        positions = np.arange(x.size).reshape(x.shape)[np_idx]
        v = random_value(rng, ref.shape, np_dtype)
        if np.unique(positions).size != positions.size:
            v = data(rng, (), np_dtype)  # repeated positions: any one value may win
        y = x.copy()
        y[np_idx] = v
        a[mx_idx] = to_mx(v, dtype) if trial % 2 else v
        check(a, y, dtype)

        if np_dtype in (np.int32, np.float32):
            z = x.copy()
            np.add.at(z, np_idx, v.reshape(v.shape[1:]) if v.ndim > ref.ndim else v)
            check(to_mx(x, dtype).at[mx_idx].add(to_mx(v, dtype)), z, dtype)


def test_large_arrays(rng):
    x = rng.standard_normal((1024, 1100)).astype(np.float32)
    rows = rng.integers(-1024, 1024, 700)
    cols = rng.integers(0, 1100, (3, 5))
    a = mx.array(x)
    check(a[rows], x[rows])
    check(a[::-3, cols], x[::-3, cols])
    check(a[5:1000:7, ::-1], x[5:1000:7, ::-1])
    v = rng.standard_normal((1024, 3, 5)).astype(np.float32)
    y = x.copy()
    y[:, cols] = v
    a[:, mx.array(cols)] = mx.array(v)
    check(a, y)
    z = x.copy()
    np.add.at(z, rows, 1.0)
    np.testing.assert_allclose(np.array(mx.array(x).at[rows].add(1.0)), z, rtol=1e-6)
    mask = x > 0
    y = x.copy()
    y[mask] = 0
    b = mx.array(x)
    b[mx.array(mask)] = 0
    check(b, y)


def test_mask_assignment_matches_numpy(rng):
    x = data(rng, (4, 5, 3), np.float32)
    cases = [
        (rng.random((4, 5, 3)) > 0.5, None),
        (rng.random((4, 5)) > 0.5, (3,)),
        (rng.random((4,)) > 0.5, (5, 3)),
        (rng.random((4, 5)) > 0.5, "count"),
        (np.zeros((4, 5), bool), None),
        (np.ones((4,), bool), "count"),
    ]
    for mask, vkind in cases:
        for form in ("mx", "numpy"):
            count = int(mask.sum())
            if vkind is None:
                v = 3.0
            elif vkind == "count":
                v = data(rng, (count,) + x.shape[mask.ndim:], np.float32)
            else:
                v = data(rng, vkind, np.float32)
            y = x.copy()
            y[mask] = v
            a = mx.array(x)
            m = mx.array(mask) if form == "mx" else mask
            a[m] = mx.array(v) if isinstance(v, np.ndarray) else v
            check(a, y)


def test_mask_assignment_with_basic_indices(rng):
    x = data(rng, (3, 4, 5), np.int32)
    # (index around the mask, mask shape, value shape: "full" for the whole selection)
    cases = [
        (lambda m: (slice(None), m), (4, 5), "full"),
        (lambda m: (Ellipsis, m), (5,), ()),
        (lambda m: (1, m), (4, 5), "full"),
        (lambda m: (slice(None, None, -1), m, None), (4, 5), (1,)),
        (lambda m: (None, m, slice(1, 4)), (3, 4), "full"),
        # An int apart from the mask: NumPy puts the selection axis first in the value's shape.
        (lambda m: (0, slice(None), m), (5,), "full"),
    ]
    for idx_fn, mask_shape, vshape in cases:
        mask = rng.random(mask_shape) > 0.4
        idx_np, idx_mx = idx_fn(mask), idx_fn(mx.array(mask))
        v = data(rng, x[idx_np].shape if vshape == "full" else vshape, np.int32)
        y = x.copy()
        y[idx_np] = v
        a = mx.array(x)
        a[idx_mx] = mx.array(v)
        check(a, y)


def test_mask_assignment_mlx_semantics():
    a = mx.array([1.0, 2.0, 3.0])
    a[mx.array([True, False, True])] = mx.array([5.0, 6.0])
    assert a.tolist() == [5.0, 2.0, 6.0]
    a = mx.zeros((2, 3))
    a[mx.array([[True, False, True], [False, False, True]])] = 1.0
    assert a.tolist() == [[1.0, 0.0, 1.0], [0.0, 0.0, 1.0]]
    # Values beyond the number of selected positions are ignored.
    a = mx.array([0, 0, 0, 0])
    a[mx.array([False, True, False, True])] = mx.array([7, 8, 9, 10])
    assert a.tolist() == [0, 7, 0, 8]
    # Scalar masks (bool, 0-d arrays) cover the whole array or nothing.
    for mask, expect in ((True, [4, 4]), (mx.array(True), [4, 4]), (np.bool_(False), [1, 2])):
        b = mx.array([1, 2])
        b[mask] = 4
        assert b.tolist() == expect
    c = mx.array([1, 2, 3])
    c[[True, False, True]] = 0
    assert c.tolist() == [0, 2, 0]
    # Masked .at updates.
    d = mx.array([1.0, 2.0, 4.0])
    got = d.at[mx.array([True, False, True])].multiply(mx.array([3.0, 0.5]))
    assert got.tolist() == [3.0, 2.0, 2.0]
    assert d.at[mx.array([False, True, True])].maximum(3.0).tolist() == [1.0, 3.0, 4.0]


def test_index_errors():
    a = mx.array(np.arange(12).reshape(3, 4))
    for idx in (3, -4, (0, 4), (0, -5), (0, 0, 0), (Ellipsis, 0, Ellipsis), (None, 1, 2, 3)):
        with pytest.raises(IndexError):
            a[idx]
        with pytest.raises(IndexError):
            a[idx] = 1
        with pytest.raises(IndexError):
            a.at[idx].add(1)
    with pytest.raises(IndexError):
        mx.array(5)[0]
    with pytest.raises(IndexError):  # index arrays that do not broadcast together
        a[mx.array([0, 1]), mx.array([0, 1, 2])]
    with pytest.raises(IndexError):  # mask shape mismatch
        a[mx.array([True, False])] = 0
    with pytest.raises(IndexError):
        a[:, mx.array([[True, False, True, False]])] = 0
    # Out-of-range index arrays fail when evaluated.
    with pytest.raises(IndexError):
        np.array(a[mx.array([0, 3])])
    with pytest.raises(IndexError):
        b = mx.array([1, 2])
        b[mx.array([5])] = 0
        b.tolist()


def test_type_and_value_errors():
    a = mx.array(np.arange(12).reshape(3, 4))
    for idx in (1.5, "x", {0: 1}, (0, 1.0), slice(1.5, 2)):
        with pytest.raises(TypeError):
            a[idx]
        with pytest.raises(TypeError):
            a[idx] = 0
    with pytest.raises(ValueError):  # floating point index arrays
        a[mx.array([0.0, 1.0])]
    with pytest.raises(ValueError):
        a[np.array([0.5])] = 1
    with pytest.raises(ValueError):  # reading through a boolean mask is not supported in MLX
        a[mx.array([True, False, True])]
    with pytest.raises(ValueError):
        a[True]
    with pytest.raises(ValueError):
        a[::0]
    with pytest.raises(ValueError):  # values that do not broadcast
        a[0] = mx.array([1, 2, 3])
    with pytest.raises(ValueError):
        a[:, [0, 1]] = mx.array([[1, 2, 3]])
    with pytest.raises(ValueError):
        a[0:2] = mx.zeros((2, 2, 4))
    with pytest.raises(ValueError):  # masks only combine with basic indices
        a[mx.array([True, False, True]), mx.array([0, 1])] = 0
    with pytest.raises(ValueError):
        a.at.add(1)
    b = mx.array([1, 2])
    with pytest.raises(ValueError):
        b[mx.array([True, False])] = mx.array([[1, 2], [3, 4]])
    assert b.tolist() == [1, 2]  # a failed assignment leaves the array alone
