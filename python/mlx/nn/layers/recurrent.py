"""Recurrent layers: Elman RNN, GRU and LSTM over ``(N, L, D)`` or ``(L, D)`` inputs."""

import math
from collections.abc import Callable
from typing import Optional

import mlx.core as mx
from mlx.nn.layers.base import Module


def _uniform(hidden_size, shape):
    scale = 1.0 / math.sqrt(hidden_size)
    return mx.random.uniform(-scale, scale, shape)


def _steps(x):
    """The time steps of an (..., L, D) input."""
    return [mx.take(x, t, axis=-2) for t in range(x.shape[-2])]


class RNN(Module):
    r"""Elman recurrent layer: :math:`h_{t+1} = f(W_{xh} x_t + W_{hh} h_t + b)` with
    ``nonlinearity`` :math:`f` (default tanh).

    ``__call__(x, hidden=None)`` takes ``(N, L, D)`` or ``(L, D)`` inputs and an optional
    initial hidden state (``(N, H)`` or ``(H,)``; zeros by default) and returns the hidden
    states of every step, ``(N, L, H)`` or ``(L, H)``.
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        nonlinearity: Optional[Callable] = None,
    ):
        super().__init__()
        if nonlinearity is not None and not callable(nonlinearity):
            raise ValueError(f"[RNN] nonlinearity must be callable; got {nonlinearity!r}.")
        self.nonlinearity = mx.tanh if nonlinearity is None else nonlinearity
        self.hidden_size = hidden_size
        self.Wxh = _uniform(hidden_size, (hidden_size, input_size))
        self.Whh = _uniform(hidden_size, (hidden_size, hidden_size))
        if bias:
            self.bias = _uniform(hidden_size, (hidden_size,))

    def _extra_repr(self):
        return (
            f"input_dims={self['Wxh'].shape[1]}, hidden_size={self.hidden_size}, "
            f"bias={'bias' in self}"
        )

    def __call__(self, x, hidden=None):
        x = mx.matmul(x, self.Wxh.T)
        if "bias" in self:
            x = x + self.bias
        whh_t = self.Whh.T
        out = []
        for x_t in _steps(x):
            h = x_t if hidden is None else x_t + mx.matmul(hidden, whh_t)
            hidden = self.nonlinearity(h)
            out.append(hidden)
        return mx.stack(out, axis=-2)


class GRU(Module):
    r"""Gated recurrent unit layer:

    .. math::
        r_t = \sigma(W_{xr} x_t + W_{hr} h_t + b_r), \quad
        z_t = \sigma(W_{xz} x_t + W_{hz} h_t + b_z) \\
        n_t = \tanh(W_{xn} x_t + b_n + r_t \odot (W_{hn} h_t + b_{hn})), \quad
        h_{t+1} = (1 - z_t) \odot n_t + z_t \odot h_t

    Parameters: ``Wx`` ``(3H, D)`` and ``Wh`` ``(3H, H)`` (rows ``r, z, n``), biases ``b``
    ``(3H,)`` and ``bhn`` ``(H,)``. ``__call__(x, hidden=None)`` as in RNN (the initial state
    defaults to zeros).
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True):
        super().__init__()
        self.hidden_size = hidden_size
        self.Wx = _uniform(hidden_size, (3 * hidden_size, input_size))
        self.Wh = _uniform(hidden_size, (3 * hidden_size, hidden_size))
        if bias:
            self.b = _uniform(hidden_size, (3 * hidden_size,))
            self.bhn = _uniform(hidden_size, (hidden_size,))

    def _extra_repr(self):
        return (
            f"input_dims={self['Wx'].shape[1]}, hidden_size={self.hidden_size}, "
            f"bias={'b' in self}"
        )

    def __call__(self, x, hidden=None):
        size = self.hidden_size
        x = mx.matmul(x, self.Wx.T)
        if "b" in self:
            x = x + self.b
        if hidden is None:
            hidden = mx.zeros((*x.shape[:-2], size), dtype=x.dtype)
        wh_t = self.Wh.T
        out = []
        for x_t in _steps(x):
            x_rz, x_n = mx.split(x_t, [2 * size], axis=-1)
            h_rz, h_n = mx.split(mx.matmul(hidden, wh_t), [2 * size], axis=-1)
            if "bhn" in self:
                h_n = h_n + self.bhn
            r, z = mx.split(mx.sigmoid(x_rz + h_rz), 2, axis=-1)
            n = mx.tanh(x_n + r * h_n)
            hidden = (1 - z) * n + z * hidden
            out.append(hidden)
        return mx.stack(out, axis=-2)


class LSTM(Module):
    r"""Long short-term memory layer:

    .. math::
        i_t = \sigma(W_{xi} x_t + W_{hi} h_t + b_i), \quad
        f_t = \sigma(W_{xf} x_t + W_{hf} h_t + b_f) \\
        g_t = \tanh(W_{xg} x_t + W_{hg} h_t + b_g), \quad
        o_t = \sigma(W_{xo} x_t + W_{ho} h_t + b_o) \\
        c_{t+1} = f_t \odot c_t + i_t \odot g_t, \quad h_{t+1} = o_t \odot \tanh(c_{t+1})

    Parameters: ``Wx`` ``(4H, D)`` and ``Wh`` ``(4H, H)`` (rows ``i, f, g, o``) and ``bias``
    ``(4H,)``. ``__call__(x, hidden=None, cell=None)`` returns the hidden and the cell states
    of every step, each ``(N, L, H)`` or ``(L, H)``.
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True):
        super().__init__()
        self.hidden_size = hidden_size
        self.Wx = _uniform(hidden_size, (4 * hidden_size, input_size))
        self.Wh = _uniform(hidden_size, (4 * hidden_size, hidden_size))
        if bias:
            self.bias = _uniform(hidden_size, (4 * hidden_size,))

    def _extra_repr(self):
        return (
            f"input_dims={self['Wx'].shape[1]}, hidden_size={self.hidden_size}, "
            f"bias={'bias' in self}"
        )

    def __call__(self, x, hidden=None, cell=None):
        x = mx.matmul(x, self.Wx.T)
        if "bias" in self:
            x = x + self.bias
        state_shape = (*x.shape[:-2], self.hidden_size)
        hidden = mx.zeros(state_shape, dtype=x.dtype) if hidden is None else hidden
        cell = mx.zeros(state_shape, dtype=x.dtype) if cell is None else cell
        wh_t = self.Wh.T
        hiddens, cells = [], []
        for x_t in _steps(x):
            i, f, g, o = mx.split(x_t + mx.matmul(hidden, wh_t), 4, axis=-1)
            cell = mx.sigmoid(f) * cell + mx.sigmoid(i) * mx.tanh(g)
            hidden = mx.sigmoid(o) * mx.tanh(cell)
            hiddens.append(hidden)
            cells.append(cell)
        return mx.stack(hiddens, axis=-2), mx.stack(cells, axis=-2)
