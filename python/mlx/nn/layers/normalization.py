"""Normalization layers. Inputs are channels-last: the features are the last axis."""

import mlx.core as mx
from mlx.nn.layers.base import Module


def _normalize(x, axes, eps):
    mean = mx.mean(x, axis=axes, keepdims=True)
    var = mx.var(x, axis=axes, keepdims=True)
    return (x - mean) * mx.rsqrt(var + eps)


class LayerNorm(Module):
    r"""Normalizes over the last axis to zero mean and unit variance, then applies
    :math:`\gamma x + \beta` (``weight`` and ``bias``, learned when ``affine``; ``bias=False``
    drops :math:`\beta`). Uses ``mx.fast.layer_norm``.

    Args:
        dims: size of the last axis.
        eps: added to the variance (default 1e-5).
        affine: learn ``weight`` (and ``bias``) (default True).
        bias: learn ``bias`` when ``affine`` (default True).
    """

    def __init__(self, dims: int, eps: float = 1e-5, affine: bool = True, bias: bool = True):
        super().__init__()
        if affine:
            self.weight = mx.ones((dims,))
            if bias:
                self.bias = mx.zeros((dims,))
        self.dims = dims
        self.eps = eps

    def _extra_repr(self) -> str:
        return f"{self.dims}, eps={self.eps}, affine={'weight' in self}"

    def __call__(self, x):
        weight = self.weight if "weight" in self else None
        bias = self.bias if "bias" in self else None
        return mx.fast.layer_norm(x, weight, bias, self.eps)


class RMSNorm(Module):
    r"""Root-mean-square normalization over the last axis:
    :math:`\gamma \, x / \sqrt{\text{mean}(x^2) + \epsilon}` with a learned ``weight``
    :math:`\gamma` (initialised to ones). Uses ``mx.fast.rms_norm``."""

    def __init__(self, dims: int, eps: float = 1e-5):
        super().__init__()
        self.weight = mx.ones((dims,))
        self.eps = eps

    def _extra_repr(self) -> str:
        return f"{self['weight'].shape[0]}, eps={self.eps}"

    def __call__(self, x):
        return mx.fast.rms_norm(x, self.weight, self.eps)


class GroupNorm(Module):
    r"""Splits the features (last axis) of each sample into ``num_groups`` groups and
    normalizes every group over all its positions and features, then applies an affine map.

    Inputs are ``(batch, ..., dims)``. By default channel ``c`` belongs to group
    ``c % num_groups`` (MLX's layout); ``pytorch_compatible=True`` uses contiguous groups of
    ``dims // num_groups`` channels, as PyTorch does.
    """

    def __init__(
        self,
        num_groups: int,
        dims: int,
        eps: float = 1e-5,
        affine: bool = True,
        pytorch_compatible: bool = False,
    ):
        super().__init__()
        if dims % num_groups != 0:
            raise ValueError(
                f"[GroupNorm] dims ({dims}) must be divisible by num_groups ({num_groups})."
            )
        if affine:
            self.weight = mx.ones((dims,))
            self.bias = mx.zeros((dims,))
        self.num_groups = num_groups
        self.dims = dims
        self.eps = eps
        self.pytorch_compatible = pytorch_compatible

    def _extra_repr(self) -> str:
        return (
            f"{self.num_groups}, {self.dims}, eps={self.eps}, affine={'weight' in self}, "
            f"pytorch_compatible={self.pytorch_compatible}"
        )

    def __call__(self, x):
        shape = x.shape
        batch, dims, groups = shape[0], shape[-1], self.num_groups
        if self.pytorch_compatible:
            # (B, L, G, D/G): statistics over L and the channels of each group.
            y = mx.reshape(x, (batch, -1, groups, dims // groups))
            y = _normalize(y, (1, 3), self.eps)
        else:
            # (B, L * D/G, G): channel c goes to group c % G.
            y = _normalize(mx.reshape(x, (batch, -1, groups)), 1, self.eps)
        y = mx.reshape(y, shape)
        if "weight" in self:
            y = self.weight * y + self.bias
        return y


class InstanceNorm(Module):
    r"""Normalizes each channel of each sample over its spatial positions (all axes but the
    first and the last), then applies :math:`\gamma x + \beta` when ``affine``."""

    def __init__(self, dims: int, eps: float = 1e-5, affine: bool = False):
        super().__init__()
        if affine:
            self.weight = mx.ones((dims,))
            self.bias = mx.zeros((dims,))
        self.dims = dims
        self.eps = eps

    def _extra_repr(self) -> str:
        return f"{self.dims}, eps={self.eps}, affine={'weight' in self}"

    def __call__(self, x):
        y = _normalize(x, tuple(range(1, x.ndim - 1)), self.eps)
        if "weight" in self:
            y = self.weight * y + self.bias
        return y


class BatchNorm(Module):
    r"""Batch normalization over all axes but the last (inputs ``(N, C)``, ``(N, L, C)`` or
    ``(N, H, W, C)``).

    In training mode the batch statistics normalize the input and, with
    ``track_running_stats``, update ``running_mean`` / ``running_var`` as
    :math:`(1 - m) \cdot \text{running} + m \cdot \text{batch}` (biased batch variance). In
    evaluation mode the running statistics are used. The running statistics are parameters
    (saved and loaded) that are always frozen.

    Args:
        num_features: size of the last axis.
        eps: added to the variance (default 1e-5).
        momentum: the update rate ``m`` of the running statistics (default 0.1).
        affine: learn ``weight`` and ``bias`` (default True).
        track_running_stats: keep running statistics (default True).
    """

    _stats = ("running_mean", "running_var")

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
    ):
        super().__init__()
        if affine:
            self.weight = mx.ones((num_features,))
            self.bias = mx.zeros((num_features,))
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.track_running_stats = track_running_stats
        if track_running_stats:
            self.running_mean = mx.zeros((num_features,))
            self.running_var = mx.ones((num_features,))
            self.freeze(keys=list(self._stats), recurse=False)

    def _unfreeze_local(self, keys, strict):
        super()._unfreeze_local(keys, strict)
        if self.track_running_stats:
            self._no_grad.update(self._stats)

    def _extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
            f"affine={'weight' in self}, track_running_stats={self.track_running_stats}"
        )

    def __call__(self, x):
        if not 2 <= x.ndim <= 4:
            raise ValueError(
                f"[BatchNorm] Expected input with 2, 3 or 4 dimensions; got shape "
                f"{tuple(x.shape)}."
            )
        axes = tuple(range(x.ndim - 1))
        if self.training or not self.track_running_stats:
            mean = mx.mean(x, axis=axes)
            var = mx.var(x, axis=axes)
            if self.track_running_stats:
                # Read and write the stored arrays directly: a compute dtype must not leak
                # into the running statistics, and they get no gradient.
                m = self.momentum
                for name, batch in zip(self._stats, (mean, var)):
                    old = self[name]
                    new = (1 - m) * old + m * mx.stop_gradient(batch).astype(old.dtype)
                    self[name] = new
        else:
            mean = self.running_mean
            var = self.running_var
        y = (x - mean) * mx.rsqrt(var + self.eps)
        if "weight" in self:
            y = self.weight * y + self.bias
        return y
