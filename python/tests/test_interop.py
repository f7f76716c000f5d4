"""Interchange with NumPy and other libraries (buffer protocol, __array__, DLPack), C++ error
mapping and Ctrl-C during evaluation."""
import array as pyarray
import ctypes
import gc
import hashlib
import weakref

import numpy as np
import pytest

import mlx.core as mx
import threadutil

# Every dtype NumPy can hold, with its buffer format.
NUMPY_DTYPES = {
    mx.bool_: (np.bool_, "?"),
    mx.uint8: (np.uint8, "B"),
    mx.uint16: (np.uint16, "H"),
    mx.uint32: (np.uint32, "I"),
    mx.uint64: (np.uint64, "Q"),
    mx.int8: (np.int8, "b"),
    mx.int16: (np.int16, "h"),
    mx.int32: (np.int32, "i"),
    mx.int64: (np.int64, "q"),
    mx.float16: (np.float16, "e"),
    mx.float32: (np.float32, "f"),
    mx.float64: (np.float64, "d"),
    mx.complex64: (np.complex64, "Zf"),
}


def sample(rng, shape, np_dtype):
    v = rng.standard_normal(shape) * 10
    if np.issubdtype(np_dtype, np.complexfloating):
        v = v + 1j * rng.standard_normal(shape)
    if np_dtype == np.bool_:
        return v > 0
    if np.issubdtype(np_dtype, np.unsignedinteger):
        v = np.abs(v)
    return v.astype(np_dtype)


# ---- export: buffer protocol -------------------------------------------------------------


@pytest.mark.parametrize("dtype", list(NUMPY_DTYPES))
def test_memoryview_describes_the_array(dtype, rng):
    np_dtype, fmt = NUMPY_DTYPES[dtype]
    x = sample(rng, (3, 4), np_dtype)
    a = mx.array(x, dtype)
    m = memoryview(a)
    assert (m.format, m.shape, m.ndim, m.itemsize) == (fmt, (3, 4), 2, x.itemsize)
    assert m.strides == (4 * x.itemsize, x.itemsize)
    assert not m.readonly
    assert m.nbytes == x.nbytes
    np.testing.assert_array_equal(np.asarray(m), x)


def test_numpy_views_evaluated_arrays_without_copying():
    a = mx.exp(mx.zeros((2, 3)))  # lazy: exporting evaluates it
    v = np.asarray(a)
    assert not v.flags.owndata and v.flags.writeable
    np.testing.assert_array_equal(v, np.ones((2, 3), np.float32))
    # A view, as MLX documents: writes through it show in the array.
    v[0, 1] = 5
    assert a.tolist() == [[1, 5, 1], [1, 1, 1]]
    w = np.array(a, copy=False)
    w[1, 2] = 7
    assert a.tolist()[1][2] == 7


def test_buffer_of_transposed_array_has_its_strides(rng):
    x = rng.standard_normal((3, 5)).astype(np.float32)
    t = mx.array(x).T
    m = memoryview(t)
    assert m.shape == (5, 3) and m.strides == (4, 20)
    np.testing.assert_array_equal(np.asarray(t), x.T)
    assert m.tobytes() == np.ascontiguousarray(x.T).tobytes()
    x3 = rng.standard_normal((2, 3, 4)).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(mx.array(x3).T), x3.T)


class PyBuffer(ctypes.Structure):
    _fields_ = [
        ("buf", ctypes.c_void_p),
        ("obj", ctypes.py_object),
        ("len", ctypes.c_ssize_t),
        ("itemsize", ctypes.c_ssize_t),
        ("readonly", ctypes.c_int),
        ("ndim", ctypes.c_int),
        ("format", ctypes.c_char_p),
        ("shape", ctypes.POINTER(ctypes.c_ssize_t)),
        ("strides", ctypes.POINTER(ctypes.c_ssize_t)),
        ("suboffsets", ctypes.POINTER(ctypes.c_ssize_t)),
        ("internal", ctypes.c_void_p),
    ]


PyBUF_WRITABLE, PyBUF_FORMAT, PyBUF_ND, PyBUF_STRIDES = 0x1, 0x4, 0x8, 0x18
PyBUF_C, PyBUF_F, PyBUF_ANY = 0x38, 0x58, 0x98


def get_buffer(obj, flags):
    """PyObject_GetBuffer with explicit flags: (readonly, ndim, shape, strides, bytes)."""
    get = ctypes.pythonapi.PyObject_GetBuffer
    get.argtypes = [ctypes.py_object, ctypes.POINTER(PyBuffer), ctypes.c_int]
    release = ctypes.pythonapi.PyBuffer_Release
    release.argtypes = [ctypes.POINTER(PyBuffer)]
    view = PyBuffer()
    if get(obj, ctypes.byref(view), flags) != 0:
        raise AssertionError("unreachable: ctypes raises the Python error")
    try:
        shape = tuple(view.shape[i] for i in range(view.ndim)) if view.shape else None
        strides = tuple(view.strides[i] for i in range(view.ndim)) if view.strides else None
        data = ctypes.string_at(view.buf, view.len) if view.len else b""
        return view.readonly, view.ndim, shape, strides, data
    finally:
        release(ctypes.byref(view))


def test_buffer_request_flags(rng):
    x = rng.standard_normal((4, 6)).astype(np.float32)
    a, t = mx.array(x), mx.array(x).T
    tc = np.ascontiguousarray(x.T)
    # Plain bytes (hashlib asks for these): one dimension, no shape.
    assert get_buffer(a, 0) == (0, 1, None, None, x.tobytes())
    assert hashlib.sha256(a).hexdigest() == hashlib.sha256(x).hexdigest()
    assert get_buffer(a, PyBUF_ND) == (0, 2, (4, 6), None, x.tobytes())
    assert get_buffer(a, PyBUF_C | PyBUF_WRITABLE)[:4] == (0, 2, (4, 6), (24, 4))
    assert get_buffer(t, PyBUF_STRIDES)[:4] == (0, 2, (6, 4), (4, 24))
    assert get_buffer(t, PyBUF_F | PyBUF_WRITABLE)[:4] == (0, 2, (6, 4), (4, 24))
    assert get_buffer(t, PyBUF_ANY)[:4] == (0, 2, (6, 4), (4, 24))
    # Dense requests on a non-dense layout get a read-only dense copy...
    assert get_buffer(t, PyBUF_C) == (1, 2, (6, 4), (16, 4), tc.tobytes())
    assert get_buffer(t, 0) == (1, 1, None, None, tc.tobytes())
    assert get_buffer(a, PyBUF_F)[0] == 1
    assert hashlib.sha256(t).hexdigest() == hashlib.sha256(tc).hexdigest()
    # ...and writable ones are refused.
    for flags in (PyBUF_WRITABLE, PyBUF_C | PyBUF_WRITABLE, PyBUF_ND | PyBUF_WRITABLE):
        with pytest.raises(BufferError, match="contiguous"):
            get_buffer(t, flags)
    # A writable dense buffer shares the array's memory.
    buf = (ctypes.c_float * 24).from_buffer(a)
    buf[0] = 42.0
    assert a.tolist()[0][0] == 42.0


def test_scalar_and_empty_buffers():
    m = memoryview(mx.array(2.5))
    assert m.shape == () and m.ndim == 0 and np.asarray(m) == 2.5
    e = np.asarray(mx.zeros((0, 3)))
    assert e.shape == (0, 3) and e.dtype == np.float32
    assert memoryview(mx.zeros((2, 0))).nbytes == 0


def test_bfloat16_has_no_buffer_format():
    b = mx.array([1.5, -2.0], mx.bfloat16)
    with pytest.raises(BufferError, match="bfloat16"):
        memoryview(b)
    # NumPy falls back to __array__, which converts to float32 (NumPy has no bfloat16).
    v = np.array(b)
    assert v.dtype == np.float32
    np.testing.assert_array_equal(v, [1.5, -2.0])
    with pytest.raises(ValueError, match="bfloat16"):
        np.array(b, copy=False)


def test_views_keep_the_array_alive_and_unchanged():
    v = np.asarray(mx.exp(mx.zeros((1000,))))
    gc.collect()
    mx.eval(mx.exp(mx.zeros((1000,))) * 3)  # reuse of freed buffers would show in v
    np.testing.assert_array_equal(v, np.ones(1000, np.float32))


@pytest.mark.parametrize("export", [np.asarray, np.from_dlpack, lambda a: a.__array__()])
def test_exported_memory_is_never_donated(export):
    # While a view exists, no op may write its output into the array's buffer, even when the
    # Python array object is gone and the op holds the last handle to it.
    a = mx.exp(mx.zeros((1 << 16,)))
    v = export(a)
    b = mx.exp(a)
    del a
    gc.collect()
    mx.eval(b)
    np.testing.assert_array_equal(v, np.ones(1 << 16, np.float32))
    np.testing.assert_allclose(np.asarray(b), np.e, rtol=1e-6)


# ---- export: __array__ ---------------------------------------------------------------------


def test_dunder_array_respects_dtype_and_copy(rng):
    x = rng.standard_normal((2, 3)).astype(np.float32)
    a = mx.array(x)
    view = a.__array__()
    assert view.dtype == np.float32 and not view.flags.owndata
    copied = a.__array__(copy=True)
    copied[0, 0] = 100
    assert a.tolist()[0][0] == x[0, 0]
    as64 = a.__array__(np.float64)
    assert as64.dtype == np.float64
    np.testing.assert_array_equal(as64, x.astype(np.float64))
    assert a.__array__(np.float32, copy=False).dtype == np.float32
    with pytest.raises(ValueError):
        a.__array__(np.float64, copy=False)
    np.testing.assert_array_equal(np.array(a, dtype=np.int32), x.astype(np.int32))


# ---- export: DLPack ------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", list(NUMPY_DTYPES))
def test_numpy_from_dlpack_every_dtype(dtype, rng):
    np_dtype, _ = NUMPY_DTYPES[dtype]
    x = sample(rng, (5, 3), np_dtype)
    a = mx.array(x, dtype)
    np.testing.assert_array_equal(np.from_dlpack(a), x)
    np.testing.assert_array_equal(np.from_dlpack(a.T), x.T)


def test_dlpack_protocol_details():
    a = mx.array([[1.0, 2.0], [3.0, 4.0]])
    assert a.__dlpack_device__() == (1, 0)
    assert "dltensor" in repr(a.__dlpack__())
    assert "dltensor_versioned" in repr(a.__dlpack__(max_version=(1, 0)))
    assert "dltensor" in repr(a.__dlpack__(dl_device=(1, 0)))
    with pytest.raises(BufferError):
        a.__dlpack__(dl_device=(2, 0))
    with pytest.raises(BufferError):
        a.__dlpack__(stream=1)
    shared = np.from_dlpack(a)
    shared[0, 0] = 9
    assert a.tolist()[0][0] == 9
    private = np.from_dlpack(a, copy=True)
    private[0, 0] = -1
    assert a.tolist()[0][0] == 9
    # bfloat16 travels through DLPack; the consumer decides whether it knows the type.
    b = mx.array([1.0, 2.5], mx.bfloat16)
    assert mx.from_dlpack(b).tolist() == [1.0, 2.5]


# ---- import --------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", list(NUMPY_DTYPES))
def test_from_dlpack_keeps_the_dtype(dtype, rng):
    np_dtype, _ = NUMPY_DTYPES[dtype]
    x = sample(rng, (4, 5), np_dtype)
    a = mx.from_dlpack(x)
    assert a.dtype == dtype and a.shape == (4, 5)
    np.testing.assert_array_equal(np.asarray(a), x)


def layouts(x):
    return {
        "contiguous": x,
        "transposed": x.T,
        "stepped": x[::2, 1::3],
        "reversed": x[::-1, ::-2],
        "broadcast": np.broadcast_to(x[:1], x.shape),
        "fortran": np.asfortranarray(x),
        "scalar": x[:1, :1].reshape(()),
        "empty": x[:0],
    }


@pytest.mark.parametrize("layout", list(layouts(np.zeros((2, 2)))))
@pytest.mark.parametrize("np_dtype", [np.float32, np.int16, np.uint64, np.complex64, np.bool_])
def test_array_from_numpy_any_layout(layout, np_dtype, rng):
    x = layouts(sample(rng, (6, 7), np_dtype))[layout]
    for a in (mx.array(x), mx.from_dlpack(x)):
        assert a.shape == x.shape
        assert a.dtype == mx.array(np.ascontiguousarray(x)).dtype
        np.testing.assert_array_equal(np.asarray(a), x)


def test_array_copies_and_from_dlpack_shares(rng):
    x = rng.standard_normal((3, 3)).astype(np.float32)
    for view in (x, x.T, x[::-1, 1:]):
        copied, shared = mx.array(view), mx.from_dlpack(view)
        before = view.copy()
        x[...] += 1
        np.testing.assert_array_equal(np.asarray(copied), before)
        np.testing.assert_array_equal(np.asarray(shared), view)
        assert np.asarray(shared).ctypes.data == view.ctypes.data


def test_from_dlpack_copy_argument(rng):
    x = rng.standard_normal(5).astype(np.float32)
    private = mx.from_dlpack(x, copy=True)
    shared = mx.from_dlpack(x, copy=False)
    x[0] = 100
    assert private.tolist()[0] != 100 and shared.tolist()[0] == 100
    # complex128 has no array dtype: it can only be imported as a (complex64) copy
    z = np.ones(3, np.complex128)
    assert mx.from_dlpack(z).dtype == mx.complex64
    with pytest.raises(BufferError, match="copy=False"):
        mx.from_dlpack(z, copy=False)


def test_ops_never_write_into_shared_memory():
    # Ops write their output into an input buffer that only they hold (donation); shared
    # memory belongs to the producer and must never be written.
    for x in (np.ones(1 << 16, np.float32), np.ones((256, 256), np.float32).T):
        y = mx.exp(mx.from_dlpack(x))
        mx.eval(y)
        a = mx.from_dlpack(x)
        a[3] = 7.0  # a rebinds to the updated array
        b = mx.from_dlpack(x).astype(mx.float32) * 2
        s = mx.sort(mx.from_dlpack(x), axis=None)
        mx.eval(a, b, s)
        np.testing.assert_array_equal(x, 1)
        assert (np.asarray(a)[3] == 7.0).all()


def test_shared_memory_lives_while_arrays_view_it():
    x = np.arange(1 << 12, dtype=np.float32)
    owner = weakref.ref(x)
    a = mx.from_dlpack(x)
    view = a[::2]
    del x, a
    gc.collect()
    assert owner() is not None
    assert view[:3].tolist() == [0.0, 2.0, 4.0]
    del view
    gc.collect()
    assert owner() is None


def test_shared_memory_released_by_an_evaluation_thread():
    # The evaluation drops the last view while the GIL is released; the release of the
    # producer's memory then waits for the main thread.
    x = np.ones(1 << 12, np.float32)
    owner = weakref.ref(x)
    y = mx.exp(mx.from_dlpack(x))
    del x
    mx.eval(y)
    for _ in range(3):
        gc.collect()
    assert owner() is None
    np.testing.assert_allclose(np.asarray(y), np.e, rtol=1e-6)


def test_torch_round_trip_without_copies():
    torch = pytest.importorskip("torch")
    t = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    a = mx.from_dlpack(t)
    t[0, 0] = 42
    assert a.tolist()[0][0] == 42
    back = torch.from_dlpack(a)
    assert back.data_ptr() == t.data_ptr()
    u = torch.from_dlpack(mx.arange(4) * 2)
    assert u.tolist() == [0, 2, 4, 6]


def test_numpy_dtype_defaults_follow_mlx(rng):
    x = rng.standard_normal((3, 2))
    assert mx.array(x).dtype == mx.float32  # MLX: float64 NumPy data becomes float32
    assert mx.array(x, mx.float64).dtype == mx.float64
    np.testing.assert_allclose(np.asarray(mx.array(x)), x, rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(mx.array(x, mx.float64)), x)
    np.testing.assert_array_equal(np.asarray(mx.array(x, mx.float64).T), x.T)
    c = (x + 1j * x).T
    assert mx.array(c).dtype == mx.complex64  # no complex128: narrowed
    np.testing.assert_allclose(np.asarray(mx.array(c)), c, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(mx.array(c[::-1])), c[::-1], rtol=1e-6)
    assert mx.array(x.astype(np.int64)).dtype == mx.int64
    assert mx.array(x.astype(np.float16), mx.float32).dtype == mx.float32
    assert mx.array(np.float64(2.5)).dtype == mx.float32
    assert mx.array(np.float32(2.5)).dtype == mx.float32
    assert mx.array(np.int16(3)).dtype == mx.int16


def test_unusual_numpy_arrays(rng):
    big_endian = np.arange(6, dtype=">i4").reshape(2, 3)
    np.testing.assert_array_equal(np.asarray(mx.array(big_endian)), big_endian)
    assert mx.array(np.array([1, 2.5], dtype=object)).tolist() == [1.0, 2.5]
    # Misaligned data (offset by one byte), contiguous and strided.
    raw = np.zeros(8 * 9 + 1, np.uint8)
    mis = np.frombuffer(raw.data, dtype=np.float64, count=9, offset=1)
    mis[:] = np.arange(9)
    assert not mis.flags.aligned
    np.testing.assert_array_equal(np.asarray(mx.array(mis, mx.float64)), mis)
    np.testing.assert_array_equal(np.asarray(mx.array(mis[::-3], mx.float64)), mis[::-3])
    rawc = np.zeros(16 * 5 + 1, np.uint8)
    misc = np.frombuffer(rawc.data, dtype=np.complex128, count=5, offset=1)
    misc[:] = np.arange(5) * (1 - 2j)
    np.testing.assert_array_equal(np.asarray(mx.array(misc[::2])), misc[::2])
    ro = np.arange(4, dtype=np.int32)
    ro.flags.writeable = False
    assert mx.array(ro).tolist() == [0, 1, 2, 3]
    with pytest.raises(TypeError, match="float128|longdouble"):
        mx.array(np.zeros(2, np.longdouble))
    with pytest.raises(TypeError):
        mx.array(np.array(["a", "b"]))


def test_array_from_buffer_protocol_objects():
    assert mx.array(pyarray.array("i", [1, -2, 3])).tolist() == [1, -2, 3]
    assert mx.array(pyarray.array("i", [1])).dtype == mx.int32
    assert mx.array(pyarray.array("q", [2**40])).dtype == mx.int64
    assert mx.array(pyarray.array("B", [255])).dtype == mx.uint8
    assert mx.array(pyarray.array("h", [-7])).tolist() == [-7]
    f = mx.array(pyarray.array("f", [0.5, 1.5]))
    assert f.dtype == mx.float32 and f.tolist() == [0.5, 1.5]
    d = mx.array(pyarray.array("d", [0.25]))
    assert d.dtype == mx.float32 and d.tolist() == [0.25]
    assert mx.array(pyarray.array("d", [0.25]), mx.float64).dtype == mx.float64
    assert mx.array(b"\x01\x02").tolist() == [1, 2]
    assert mx.array(bytearray(b"\x03")).dtype == mx.uint8
    strided = memoryview(np.arange(10, dtype=np.int32))[::3]
    assert mx.array(strided).tolist() == [0, 3, 6, 9]
    m2 = memoryview(np.arange(6, dtype=np.int16).reshape(2, 3))
    assert mx.array(m2).tolist() == [[0, 1, 2], [3, 4, 5]]


class DLPackOnly:
    """A producer with only the DLPack methods."""

    def __init__(self, x):
        self.x = x

    def __dlpack__(self, **kwargs):
        return self.x.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.x.__dlpack_device__()


def test_from_dlpack_accepts_any_producer(rng):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    a = mx.from_dlpack(DLPackOnly(x[:, ::-1]))
    np.testing.assert_array_equal(np.asarray(a), x[:, ::-1])
    np.testing.assert_array_equal(np.asarray(mx.array(DLPackOnly(x))), x)
    # mlx arrays themselves
    m = mx.array(x)
    assert mx.from_dlpack(m) is not None and mx.from_dlpack(m).tolist() == m.tolist()
    assert mx.from_dlpack(m, copy=True).tolist() == m.tolist()
    assert mx.from_dlpack(np.from_dlpack(m)).tolist() == m.tolist()


def test_from_dlpack_errors():
    with pytest.raises(TypeError, match="__dlpack__"):
        mx.from_dlpack([1, 2])


# ---- errors --------------------------------------------------------------------------------


def test_cpp_errors_map_to_python_exceptions():
    with pytest.raises(ValueError, match=r"\[add\]"):
        mx.add(mx.zeros((2, 3)), mx.zeros((4,)))
    with pytest.raises(ValueError, match=r"\[sum\]"):
        mx.sum(mx.zeros((2, 3)), axis=5)
    with pytest.raises(TypeError):
        mx.array("text")
    with pytest.raises(TypeError):
        mx.add(mx.zeros(2), "text")


def test_index_errors_are_index_errors():
    if not hasattr(mx.array, "__getitem__"):
        pytest.skip("indexing is not bound yet")
    with pytest.raises(IndexError):
        mx.zeros((2, 3))[5]


def test_out_of_memory_is_memory_error():
    old = mx.set_memory_limit(1 << 20)
    try:
        with pytest.raises(MemoryError, match="limit"):
            mx.eval(mx.exp(mx.zeros((1 << 22,))))
        with pytest.raises(MemoryError):
            np.asarray(mx.exp(mx.zeros((1 << 22,))))
        with pytest.raises(MemoryError):
            mx.array(np.zeros(1 << 22, np.float32))
    finally:
        mx.set_memory_limit(old)
    assert mx.sum(mx.exp(mx.zeros((1 << 22,)))).item() == 1 << 22


def test_ctrl_c_during_eval_raises_keyboard_interrupt():
    """SIGINT while the main thread evaluates (with the GIL released) is not lost: it raises
    KeyboardInterrupt, at the latest when that evaluation returns, and arrays work after."""
    def long_graph():
        x = mx.zeros((1 << 20,))
        for _ in range(50):
            x = mx.exp(x) * 0.5
        return x

    threadutil.interrupt_during(lambda: mx.eval(long_graph()))
    assert mx.sum(mx.zeros((4,)) + 1).item() == 4
