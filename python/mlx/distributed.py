"""``mlx.distributed``: ``mx.distributed`` (groups and collectives) plus model sharding.

    import mlx.distributed as dist
    dist.init()
    model = dist.shard_model(model, axis=0)   # each rank stores 1/N of every linear's weight
    outputs = model(inputs)                   # the same outputs, communication included

``shard_model`` is the project documents' API (not MLX's); it is built on the sharded layers
of ``mlx.nn`` (AllToShardedLinear, ShardedToAllLinear and their quantized versions).
"""

from typing import Optional

import mlx.core as mx
from mlx.core.distributed import (  # noqa: F401  (the namespace, re-exported)
    Group,
    all_gather,
    all_max,
    all_min,
    all_sum,
    init,
    is_available,
    recv,
    recv_like,
    send,
    sum_scatter,
)
from mlx.nn.layers.base import Module
from mlx.nn.layers.distributed import shard_linear, sum_gradients
from mlx.nn.layers.linear import Linear
from mlx.nn.layers.quantized import QuantizedLinear


class _GatherOutputs(Module):
    """An all-to-sharded linear whose output slices are gathered: the layer's own outputs."""

    def __init__(self, layer, group):
        super().__init__()
        self.layer = layer
        self.group = group

    def __call__(self, x):
        y = self.layer(x)
        y = mx.distributed.all_gather(mx.moveaxis(y, -1, 0), group=self.group)
        return mx.moveaxis(y, 0, -1)


class _SliceInputs(Module):
    """A sharded-to-all linear fed this rank's slice of the full input (whose gradient is
    summed over the group, since every rank holds the input whole)."""

    def __init__(self, layer, group):
        super().__init__()
        self.layer = layer
        self.group = group

    def __call__(self, x):
        x = sum_gradients(self.group)(x)
        part = x.shape[-1] // self.group.size()
        r = self.group.rank()
        return self.layer(x[..., r * part : (r + 1) * part])


def shard_model(model: Module, axis: int = 0, *, group: Optional[Group] = None) -> Module:
    """Shards every ``nn.Linear`` and ``nn.QuantizedLinear`` of ``model`` over ``group`` (in
    place; returns ``model``), keeping what each layer computes.

    Args:
        model: The model; each linear's split dimension must divide by the group size.
        axis: ``0`` splits the weights' rows (output features: each rank computes its slice of
            the outputs, then they are gathered); ``1`` splits their columns (input features:
            each rank multiplies its slice of the input, then the products are summed).
        group: The group (default: the global group).

    Each rank then stores ``1/N`` of every linear weight; the other layers stay replicated.
    """
    group = group if group is not None else init()
    if axis not in (0, 1, -1):
        raise ValueError(f"[shard_model] axis must be 0 (rows) or 1 (columns); got {axis}.")
    if group.size() == 1:
        return model
    sharding, wrap = ("all-to-sharded", _GatherOutputs) if axis == 0 else (
        "sharded-to-all", _SliceInputs)
    replaced = {}
    for path, m in model.named_modules():
        if isinstance(m, (Linear, QuantizedLinear)) and path:
            replaced[path] = wrap(shard_linear(m, sharding, group=group), group)
    if isinstance(model, (Linear, QuantizedLinear)):
        raise TypeError("[shard_model] Pass the model that contains the linear layers.")
    _replace(model, replaced)
    return model


def _replace(model, replaced):
    """Puts each module of ``replaced`` (by dotted path) in place of the one there."""
    for path, new in replaced.items():
        *parents, last = path.split(".")
        owner = model
        for key in parents:
            owner = owner[int(key)] if isinstance(owner, list) else owner[key]
        if isinstance(owner, list):
            owner[int(last)] = new
        else:
            owner[last] = new
