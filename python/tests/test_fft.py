"""mx.fft against numpy.fft (float64 references), gradients against finite differences, vmap."""

import numpy as np
import pytest

import mlx.core as mx

RNG = np.random.default_rng(0)

# Powers of two, smooth sizes, primes (small ones through the generic radix, large ones through
# Bluestein), a product with a large prime, and 1.
LENGTHS = [1, 2, 3, 4, 5, 7, 8, 12, 16, 30, 31, 37, 64, 97, 100, 101, 210, 243, 1009, 1024,
           2 * 101, 4096, 10007]


def crand(*shape):
    return RNG.uniform(-1, 1, shape) + 1j * RNG.uniform(-1, 1, shape)


def rrand(*shape):
    return RNG.uniform(-1, 1, shape)


def check(out, expected, rtol=2e-5):
    expected = np.asarray(expected)
    out = np.array(out)
    assert out.shape == expected.shape
    scale = max(np.abs(expected).max(initial=0.0), 1.0)
    np.testing.assert_allclose(out, expected, rtol=0, atol=rtol * scale * 10)


@pytest.mark.parametrize("n", LENGTHS)
def test_fft_lengths(n):
    x = crand(3, n)
    xm = mx.array(x.astype(np.complex64))
    check(mx.fft.fft(xm), np.fft.fft(x))
    check(mx.fft.ifft(xm), np.fft.ifft(x))
    r = rrand(2, n)
    rm = mx.array(r.astype(np.float32))
    check(mx.fft.rfft(rm), np.fft.rfft(r))
    spectrum = np.fft.rfft(r)
    check(mx.fft.irfft(mx.array(spectrum.astype(np.complex64)), n), np.fft.irfft(spectrum, n))


@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
def test_norms(norm):
    x = crand(4, 9)
    xm = mx.array(x.astype(np.complex64))
    check(mx.fft.fft(xm, norm=norm), np.fft.fft(x, norm=norm))
    check(mx.fft.ifft(xm, norm=norm), np.fft.ifft(x, norm=norm))
    check(mx.fft.fftn(xm, norm=norm), np.fft.fftn(x, norm=norm))
    r = rrand(4, 10)
    check(mx.fft.rfft2(mx.array(r.astype(np.float32)), norm=norm), np.fft.rfft2(r, norm=norm))
    c = np.fft.rfft2(r)
    check(mx.fft.irfft2(mx.array(c.astype(np.complex64)), norm=norm), np.fft.irfft2(c, norm=norm))


def test_n_pads_and_truncates():
    x = crand(2, 10)
    xm = mx.array(x.astype(np.complex64))
    for n in [3, 10, 17]:
        check(mx.fft.fft(xm, n), np.fft.fft(x, n))
        check(mx.fft.ifft(xm, n=n, axis=0), np.fft.ifft(x, n=n, axis=0))
    r = rrand(7, 6)
    check(mx.fft.rfft(mx.array(r.astype(np.float32)), 9, axis=0), np.fft.rfft(r, 9, axis=0))
    c = np.fft.rfft(r)
    for n in [5, 6, 11, 1]:
        check(mx.fft.irfft(mx.array(c.astype(np.complex64)), n), np.fft.irfft(c, n))


def test_multi_axis():
    x = crand(3, 5, 6, 4)
    xm = mx.array(x.astype(np.complex64))
    check(mx.fft.fft2(xm), np.fft.fft2(x))
    check(mx.fft.ifft2(xm, axes=(0, 2)), np.fft.ifft2(x, axes=(0, 2)))
    check(mx.fft.fftn(xm), np.fft.fftn(x))
    check(mx.fft.fftn(xm, s=(4, 7)), np.fft.fftn(x, s=(4, 7), axes=(2, 3)))
    check(mx.fft.ifftn(xm, s=(2, 3, 8), axes=(3, 0, 1)), np.fft.ifftn(x, s=(2, 3, 8), axes=(3, 0, 1)))
    r = rrand(4, 6, 5)
    rm = mx.array(r.astype(np.float32))
    check(mx.fft.rfftn(rm), np.fft.rfftn(r))
    check(mx.fft.rfftn(rm, axes=(0, 2)), np.fft.rfftn(r, axes=(0, 2)))
    check(mx.fft.rfft2(rm, s=(5, 8)), np.fft.rfft2(r, s=(5, 8)))
    c = np.fft.rfftn(r)
    cm = mx.array(c.astype(np.complex64))
    check(mx.fft.irfftn(cm), np.fft.irfftn(c))
    check(mx.fft.irfftn(cm, s=(4, 6, 5)), np.fft.irfftn(c, s=(4, 6, 5), axes=(0, 1, 2)))
    check(mx.fft.irfft2(cm, s=(3, 7)), np.fft.irfft2(c, s=(3, 7)))


def test_layouts_and_dtypes():
    x = crand(6, 8)
    xm = mx.array(x.astype(np.complex64))
    check(mx.fft.fft(xm.T), np.fft.fft(x.T))
    check(mx.fft.fft(xm[::2, ::-1]), np.fft.fft(x[::2, ::-1]))
    check(mx.fft.fft(mx.broadcast_to(xm[:1], (3, 8))), np.fft.fft(np.broadcast_to(x[:1], (3, 8))))
    # Real and integer inputs of the complex transforms become complex64.
    r = rrand(5, 7)
    for dt in [mx.float32, mx.float16, mx.bfloat16]:
        rm = mx.array(r, dtype=dt)
        ref = np.array(rm.astype(mx.float32)).astype(np.float64)
        out = mx.fft.fft(rm)
        assert out.dtype == mx.complex64
        check(out, np.fft.fft(ref))
        assert mx.fft.rfft(rm).dtype == mx.complex64
        check(mx.fft.rfft(rm), np.fft.rfft(ref))
    i = mx.array(np.arange(12).reshape(3, 4), dtype=mx.int32)
    check(mx.fft.fft(i), np.fft.fft(np.arange(12).reshape(3, 4)))
    assert mx.fft.irfft(mx.fft.rfft(mx.array(r.astype(np.float32)))).dtype == mx.float32
    # Empty batch.
    assert mx.fft.fft(mx.zeros((0, 5), dtype=mx.complex64)).shape == (0, 5)
    assert mx.fft.rfft(mx.zeros((0, 6))).shape == (0, 4)


def test_freqs_and_shifts():
    for n in [1, 2, 7, 8]:
        for d in [1.0, 0.3]:
            check(mx.fft.fftfreq(n, d), np.fft.fftfreq(n, d))
            check(mx.fft.rfftfreq(n, d), np.fft.rfftfreq(n, d))
    assert mx.fft.fftfreq(5).dtype == mx.float32
    x = np.arange(30).reshape(5, 6)
    xm = mx.array(x)
    np.testing.assert_array_equal(np.array(mx.fft.fftshift(xm)), np.fft.fftshift(x))
    np.testing.assert_array_equal(np.array(mx.fft.ifftshift(xm)), np.fft.ifftshift(x))
    np.testing.assert_array_equal(np.array(mx.fft.fftshift(xm, axes=1)), np.fft.fftshift(x, axes=1))
    np.testing.assert_array_equal(np.array(mx.fft.ifftshift(xm, axes=[0])),
                                  np.fft.ifftshift(x, axes=[0]))


def test_errors():
    x = mx.zeros((4, 4), dtype=mx.complex64)
    with pytest.raises(ValueError, match=r"\[fft\] Invalid number of FFT data points \(0\)"):
        mx.fft.fft(x, 0)
    with pytest.raises(ValueError, match=r"\[fft\] Invalid norm 'bad'"):
        mx.fft.fft(x, norm="bad")
    with pytest.raises(ValueError, match=r"\[rfft\] Expected a real input"):
        mx.fft.rfft(x)
    with pytest.raises(ValueError, match=r"fftn"):
        mx.fft.fftn(x, s=(4, 4, 4), axes=(0, 1))
    with pytest.raises(ValueError, match=r"\[fft\] Axis 2 is out of bounds"):
        mx.fft.fft(x, axis=2)
    with pytest.raises(ValueError, match=r"\[fftfreq\] n must be positive"):
        mx.fft.fftfreq(0)


def directional(f, x, t, c):
    """Re(sum(c * df)) along t by central differences (complex64 perturbation in float64)."""
    eps = 1e-3

    def L(z):
        return np.real(np.sum(c * np.array(f(mx.array(z))).astype(np.complex128)))

    return (L(x + eps * t) - L(x - eps * t)) / (2 * eps)


@pytest.mark.parametrize("name,real_in,n", [
    ("fft", False, None), ("ifft", False, None), ("fft", False, 7), ("rfft", True, None),
    ("rfft", True, 5), ("irfft", False, None), ("irfft", False, 9), ("irfft", False, 8),
])
def test_vjp_1d(name, real_in, n):
    f = lambda z: getattr(mx.fft, name)(z, n)
    x = rrand(3, 6) if real_in else crand(3, 6)
    t = rrand(3, 6) if real_in else crand(3, 6)
    dtype = np.float32 if real_in else np.complex64
    out = f(mx.array(x.astype(dtype)))
    c = crand(*out.shape) if out.dtype == mx.complex64 else rrand(*out.shape)
    # The project's convention: the cotangent c pairs with the output as Re(sum(c * y)); the
    # input's cotangent g pairs with its tangent as Re(sum(g * t)).
    _, (g,) = mx.vjp(lambda z: f(z), [mx.array(x.astype(dtype))],
                     [mx.array(c.astype(np.complex64 if out.dtype == mx.complex64 else np.float32))])
    got = np.real(np.sum(np.array(g).astype(np.complex128) * t))
    np.testing.assert_allclose(got, directional(f, x.astype(dtype), t.astype(dtype), c),
                               rtol=2e-3, atol=2e-3)


def test_vjp_nd_and_jvp():
    f = lambda z: mx.fft.irfftn(mx.fft.fftn(z, axes=(0, 1)), s=(4, 6), axes=(0, 1))
    x = crand(4, 6)
    t = crand(4, 6)
    out = f(mx.array(x.astype(np.complex64)))
    c = rrand(*out.shape)
    _, (g,) = mx.vjp(f, [mx.array(x.astype(np.complex64))], [mx.array(c.astype(np.float32))])
    got = np.real(np.sum(np.array(g).astype(np.complex128) * t))
    np.testing.assert_allclose(got, directional(f, x.astype(np.complex64), t.astype(np.complex64), c),
                               rtol=2e-3, atol=2e-3)
    r = rrand(5, 8).astype(np.float32)
    tr = rrand(5, 8).astype(np.float32)
    _, (jt,) = mx.jvp(lambda z: mx.fft.rfft2(z), [mx.array(r)], [mx.array(tr)])
    check(jt, np.fft.rfft2(tr.astype(np.float64)))


def test_grad_of_real_loss():
    # d/dx sum(|rfft(x)|^2) = 2 n x - (corrections of the Hermitian half) : compare with
    # finite differences coordinate by coordinate.
    x = rrand(7)
    f = lambda z: mx.sum(mx.abs(mx.fft.rfft(z)) ** 2)
    g = np.array(mx.grad(f)(mx.array(x.astype(np.float32))))
    eps = 1e-3
    fd = []
    for i in range(7):
        e = np.zeros(7)
        e[i] = eps
        fd.append((f(mx.array((x + e).astype(np.float32))).item()
                   - f(mx.array((x - e).astype(np.float32))).item()) / (2 * eps))
    np.testing.assert_allclose(g, fd, rtol=2e-2, atol=2e-2)


def test_vmap():
    x = crand(3, 4, 6)
    xm = mx.array(x.astype(np.complex64))
    out = mx.vmap(lambda z: mx.fft.fft(z, axis=0), in_axes=1)(xm)
    check(out, np.stack([np.fft.fft(x[:, i], axis=0) for i in range(4)]))
    r = rrand(2, 5, 8).astype(np.float32)
    out = mx.vmap(lambda z: mx.fft.rfft2(z))(mx.array(r))
    check(out, np.fft.rfft2(r.astype(np.float64)))


def ref_stft(x, n_fft, hop, window, center, pad_mode, onesided, norm="backward"):
    """STFT from its definition in float64 NumPy: (..., n_freq, n_frames)."""
    x = np.asarray(x)
    if center:
        mode = {"reflect": "reflect", "constant": "constant", "edge": "edge"}[pad_mode]
        x = np.pad(x, [(0, 0)] * (x.ndim - 1) + [(n_fft // 2, n_fft // 2)], mode=mode)
    wl = len(window)
    left = (n_fft - wl) // 2
    w = np.zeros(n_fft)
    w[left:left + wl] = window
    frames = 1 + (x.shape[-1] - n_fft) // hop
    out = np.stack([x[..., t * hop:t * hop + n_fft] * w for t in range(frames)], axis=-2)
    spec = np.fft.rfft(out, norm=norm) if onesided else np.fft.fft(out, norm=norm)
    return np.swapaxes(spec, -1, -2)


@pytest.mark.parametrize("n_fft,hop,wl,center,pad_mode", [
    (16, 4, 16, True, "reflect"), (15, 5, 11, True, "constant"), (8, 3, 8, False, "reflect"),
    (12, 12, 6, True, "edge"), (7, None, None, True, "reflect"),
])
def test_stft_against_reference(n_fft, hop, wl, center, pad_mode):
    x = rrand(2, 50)
    window = np.hanning((wl or n_fft) + 2)[1:-1]
    out = mx.fft.stft(mx.array(x.astype(np.float32)), n_fft=n_fft, hop_length=hop, win_length=wl,
                      window=mx.array(window.astype(np.float32)), center=center,
                      pad_mode=pad_mode)
    expected = ref_stft(x, n_fft, hop or n_fft // 4, window, center, pad_mode, True)
    check(out, expected)
    # Complex input: two-sided.
    z = crand(40)
    out = mx.fft.stft(mx.array(z.astype(np.complex64)), n_fft=n_fft, hop_length=hop,
                      win_length=wl, window=mx.array(window.astype(np.float32)), center=center,
                      pad_mode=pad_mode, norm="ortho")
    check(out, ref_stft(z, n_fft, hop or n_fft // 4, window, center, pad_mode, False, "ortho"))


@pytest.mark.parametrize("n_fft,hop,center", [(16, 4, True), (16, 8, True), (15, 5, True),
                                             (12, 3, False)])
def test_istft_inverts_stft(n_fft, hop, center):
    x = rrand(3, 64)
    window = np.hanning(n_fft + 1)[:-1] + 0.1
    w = mx.array(window.astype(np.float32))
    spec = mx.fft.stft(mx.array(x.astype(np.float32)), n_fft=n_fft, hop_length=hop, window=w,
                       center=center)
    frames = spec.shape[-1]
    covered = (frames - 1) * hop + n_fft - (2 * (n_fft // 2) if center else 0)
    y = mx.fft.istft(spec, n_fft=n_fft, hop_length=hop, window=w, center=center,
                     length=min(covered, 64))
    check(y, x[:, :min(covered, 64)], rtol=1e-5)
    # length pads with zeros beyond the signal.
    assert mx.fft.istft(spec, n_fft=n_fft, hop_length=hop, window=w, center=center,
                        length=80).shape == (3, 80)


def test_stft_defaults_and_errors():
    x = mx.array(rrand(3000).astype(np.float32))
    out = mx.fft.stft(x)
    assert out.shape == (1025, 1 + 3000 // 512)
    check(out, ref_stft(np.array(x).astype(np.float64), 2048, 512, np.ones(2048), True,
                        "reflect", True), rtol=5e-5)
    with pytest.raises(ValueError, match=r"\[stft\] Invalid pad_mode 'wrap'"):
        mx.fft.stft(x, 16, pad_mode="wrap")
    with pytest.raises(ValueError, match=r"\[stft\] Expected a 1-D window of length"):
        mx.fft.stft(x, 16, window=mx.ones((8,)))
    with pytest.raises(ValueError, match=r"\[stft\] onesided=True needs a real input"):
        mx.fft.stft(x.astype(mx.complex64), 16, onesided=True)
    with pytest.raises(ValueError, match=r"\[istft\] n_fft 10 does not match 5"):
        mx.fft.istft(mx.zeros((5, 3), dtype=mx.complex64), n_fft=10)


def test_stft_gradient():
    x = rrand(40).astype(np.float32)
    t = rrand(40).astype(np.float32)
    f = lambda z: mx.fft.stft(z, n_fft=8, hop_length=3)
    out = f(mx.array(x))
    c = crand(*out.shape)
    _, (g,) = mx.vjp(f, [mx.array(x)], [mx.array(c.astype(np.complex64))])
    got = np.sum(np.real(np.array(g).astype(np.complex128) * t))
    np.testing.assert_allclose(got, directional(f, x, t, c), rtol=2e-3, atol=2e-3)


try:
    import torch
except ImportError:
    torch = None


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
def test_stft_against_torch():
    x = rrand(2, 100).astype(np.float32)
    window = np.hanning(32).astype(np.float32)
    ours = mx.fft.stft(mx.array(x), n_fft=32, hop_length=8, window=mx.array(window))
    theirs = torch.stft(torch.tensor(x), 32, hop_length=8, window=torch.tensor(window),
                        return_complex=True)
    check(ours, theirs.numpy())
    back = mx.fft.istft(ours, n_fft=32, hop_length=8, window=mx.array(window), length=100)
    tback = torch.istft(theirs, 32, hop_length=8, window=torch.tensor(window), length=100)
    check(back, tback.numpy(), rtol=1e-5)


def test_compile():
    f = lambda z: mx.fft.irfft(mx.fft.rfft(z) * 2)
    x = mx.array(rrand(3, 8).astype(np.float32))
    check(mx.compile(f)(x), 2 * np.array(x))
    g = mx.compile(lambda z: mx.fft.rfft(z), shapeless=True)
    assert g(mx.ones((3, 8))).shape == (3, 5)
    assert g(mx.ones((5, 8))).shape == (5, 5)  # other axes may change
    with pytest.raises(ValueError, match=r"\[FFT\] The transform length is fixed"):
        g(mx.ones((2, 10)))
