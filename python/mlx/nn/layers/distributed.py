"""Layers and helpers for tensor- and data-parallel models over an ``mx.distributed`` group.

With one process (the only case this build can run until a communication backend lands), the
collectives are identities, so every layer here computes what its plain counterpart computes;
the code is written for any group size.
"""

from functools import reduce
from typing import Callable, Optional, Union

import mlx.core as mx
from mlx.nn.layers.base import Module
from mlx.nn.layers.linear import Linear
from mlx.utils import tree_flatten, tree_map, tree_unflatten


def _group(group):
    return group if group is not None else mx.distributed.init()


def sum_gradients(group: Optional[mx.distributed.Group] = None) -> Callable:
    """A function that returns its input unchanged and sums its gradient over ``group``.

    Put it in front of a computation whose inputs every member holds in full but whose
    parameters are sharded, so that each member receives the whole input gradient.
    """
    group = _group(group)
    if group.size() == 1:
        return lambda x: x

    @mx.custom_function
    def f(x):
        return x

    @f.vjp
    def f_vjp(primals, cotangent, output):
        return mx.distributed.all_sum(cotangent, group=group)

    return f


def _split_segments(weight, segments, axis):
    """``weight`` split along ``axis`` into its segments: a count of equal parts or the
    indices where they start."""
    if isinstance(segments, int):
        if weight.shape[axis] % segments != 0:
            raise ValueError(
                f"[shard] Cannot split an axis of size {weight.shape[axis]} into {segments} "
                "equal segments."
            )
        return mx.split(weight, segments, axis=axis)
    return mx.split(weight, list(segments), axis=axis)


def _shard(weight, axis, segments, group):
    """This member's part of ``weight``: every segment split ``group.size()`` ways along
    ``axis``, this rank's piece of each, concatenated."""
    n, r = group.size(), group.rank()
    pieces = []
    for segment in _split_segments(weight, segments, axis):
        if segment.shape[axis] % n != 0:
            raise ValueError(
                f"[shard] A segment of size {segment.shape[axis]} does not split evenly over "
                f"{n} processes."
            )
        pieces.append(mx.split(segment, n, axis=axis)[r])
    return mx.concatenate(pieces, axis=axis) if len(pieces) > 1 else pieces[0]


def _sharding_rule(sharding, segments):
    """(path, weight) -> (axis, segments) or None for the string shardings."""
    if callable(sharding):
        return sharding
    if sharding == "all-to-sharded":
        return lambda path, w: (0, segments)
    if sharding == "sharded-to-all":
        # Weights split their input features; a bias (1-D) stays whole.
        return lambda path, w: (-1, segments) if w.ndim > 1 else None
    raise ValueError(
        f"[shard] sharding must be 'all-to-sharded', 'sharded-to-all' or a callable; got "
        f"{sharding!r}."
    )


def shard_inplace(
    module: Module,
    sharding: Union[str, Callable],
    *,
    segments: Union[int, list] = 1,
    group: Optional[mx.distributed.Group] = None,
):
    """Replaces the parameters of ``module`` with this member's shards of them.

    Args:
        module: The module whose parameters are sharded (its code is unchanged, so it must do
            its own communication if any is needed).
        sharding: ``"all-to-sharded"`` (split the output features: axis 0 of weights and
            biases), ``"sharded-to-all"`` (split the input features: the last axis of weights)
            or a callable ``(path, weight) -> axis | (axis, segments) | None``.
        segments: The weight is made of this many equal segments (or of segments starting at
            these indices), each sharded separately; 3 for a fused QKV projection.
        group: The group to shard across (default: the global group).
    """
    group = _group(group)
    rule = _sharding_rule(sharding, segments)
    sharded = []
    for path, weight in tree_flatten(module.parameters()):
        spec = rule(path, weight)
        if spec is None:
            continue
        axis, segs = spec if isinstance(spec, tuple) else (spec, segments)
        sharded.append((path, _shard(weight, axis, segs, group)))
    module.update(tree_unflatten(sharded))


class _ShardedLinear(Module):
    """What both sharded linears share: the shard of the weight this member holds (its output
    features for all-to-sharded, its input features for sharded-to-all) and conversion from
    an nn.Linear."""

    _sharding = None  # "all-to-sharded" or "sharded-to-all"

    def __init__(
        self,
        input_dims: int,
        output_dims: int,
        bias: bool = True,
        group: Optional[mx.distributed.Group] = None,
    ):
        super().__init__()
        self.group = _group(group)
        n = self.group.size()
        split_outputs = self._sharding == "all-to-sharded"
        dims = output_dims if split_outputs else input_dims
        if dims % n != 0:
            which = "output_dims" if split_outputs else "input_dims"
            raise ValueError(
                f"[{type(self).__name__}] {which} ({dims}) must be divisible by the group size "
                f"({n})."
            )
        scale = (1.0 / input_dims) ** 0.5
        shape = (output_dims // n, input_dims) if split_outputs else (output_dims, input_dims // n)
        self.weight = mx.random.uniform(-scale, scale, shape)
        if bias:
            self.bias = mx.random.uniform(-scale, scale, (shape[0] if split_outputs else output_dims,))

    def _extra_repr(self) -> str:
        out, inp = self.weight.shape
        n = self.group.size()
        if self._sharding == "all-to-sharded":
            out *= n
        else:
            inp *= n
        return f"input_dims={inp}, output_dims={out}, bias={'bias' in self}"

    @classmethod
    def from_linear(cls, linear_layer: Module, *, segments: Union[int, list] = 1, group=None):
        """This member's shard of ``linear_layer`` as a layer of this class."""
        group = _group(group)
        out, inp = linear_layer.weight.shape
        layer = cls(inp, out, "bias" in linear_layer, group)
        layer.update(linear_layer.parameters())
        shard_inplace(layer, cls._sharding, segments=segments, group=group)
        return layer


class AllToShardedLinear(_ShardedLinear):
    """A linear layer whose output features are split across ``group``: every member takes the
    full input and computes its slice of the output (gradients of the input are summed over
    the group).

    Args:
        input_dims: Input features.
        output_dims: Output features over the whole group (divisible by its size).
        bias: Whether to add a bias. Default True.
        group: The group to shard across (default: the global group).
    """

    _sharding = "all-to-sharded"

    def __call__(self, x):
        x = sum_gradients(self.group)(x)
        if "bias" in self:
            return mx.addmm(self["bias"], x, self["weight"].T)
        return x @ self["weight"].T


class ShardedToAllLinear(_ShardedLinear):
    """A linear layer whose input features are split across ``group``: every member multiplies
    its slice of the input, the partial products are summed over the group, and every member
    gets the full output.

    Args:
        input_dims: Input features over the whole group (divisible by its size).
        output_dims: Output features.
        bias: Whether to add a bias. Default True.
        group: The group to shard across (default: the global group).
    """

    _sharding = "sharded-to-all"

    def __call__(self, x):
        y = mx.distributed.all_sum(x @ self["weight"].T, group=self.group)
        if "bias" in self:
            y = y + self["bias"]
        return y


class _QuantizedShardedLinear(Module):
    """What both quantized sharded linears share: this member's shard of a quantized weight
    (its output features for all-to-sharded, its input features for sharded-to-all, whole
    quantization groups either way), frozen like nn.QuantizedLinear's, and conversion from an
    nn.QuantizedLinear."""

    _sharding = None  # "all-to-sharded" or "sharded-to-all"

    def __init__(
        self,
        input_dims: int,
        output_dims: int,
        bias: bool = True,
        group_size: int = 64,
        bits: int = 4,
        mode: str = "affine",
        group: Optional[mx.distributed.Group] = None,
    ):
        from mlx.nn.layers.quantized import _defaults, _set_quantized

        super().__init__()
        self.group = _group(group)
        self.group_size, self.bits = _defaults(group_size, bits, mode)
        self.mode = mode
        n = self.group.size()
        split_outputs = self._sharding == "all-to-sharded"
        dims = output_dims if split_outputs else input_dims
        if dims % n != 0:
            which = "output_dims" if split_outputs else "input_dims"
            raise ValueError(
                f"[{type(self).__name__}] {which} ({dims}) must be divisible by the group size "
                f"({n})."
            )
        if not split_outputs and (input_dims // n) % self.group_size != 0:
            raise ValueError(
                f"[{type(self).__name__}] The input features of each member ({input_dims // n}) "
                f"must be a multiple of the group size ({self.group_size})."
            )
        scale = (1.0 / input_dims) ** 0.5
        shape = (output_dims // n, input_dims) if split_outputs else (output_dims, input_dims // n)
        _set_quantized(self, mx.random.uniform(-scale, scale, shape), self.group_size, self.bits,
                       mode)
        if bias:
            self.bias = mx.zeros((shape[0] if split_outputs else output_dims,))
        self.freeze()

    def _extra_repr(self) -> str:
        out, packed = self["weight"].shape
        inp = packed * 32 // self.bits
        n = self.group.size()
        if self._sharding == "all-to-sharded":
            out *= n
        else:
            inp *= n
        return (f"input_dims={inp}, output_dims={out}, bias={'bias' in self}, "
                f"group_size={self.group_size}, bits={self.bits}, mode={self.mode}")

    def _product(self, x):
        return mx.quantized_matmul(x, self["weight"], self["scales"], self.get("biases"),
                                   transpose=True, group_size=self.group_size, bits=self.bits,
                                   mode=self.mode)

    @classmethod
    def from_quantized_linear(
        cls,
        quantized_linear_layer: Module,
        *,
        segments: Union[int, list] = 1,
        group: Optional[mx.distributed.Group] = None,
    ):
        """This member's shard of the nn.QuantizedLinear ``quantized_linear_layer``."""
        group = _group(group)
        ql = quantized_linear_layer
        out, packed = ql.weight.shape
        inp = packed * 32 // ql.bits
        layer = cls(inp, out, "bias" in ql, ql.group_size, ql.bits, ql.mode, group)
        layer.update(ql.parameters())
        if cls._sharding == "sharded-to-all":
            # Weight words and scales split their last axis; the bias stays whole. The split
            # points are in quantized columns, so each piece keeps whole groups.
            def rule(path, w):
                if w.ndim < 2:
                    return None
                if isinstance(segments, int):
                    return (-1, segments)
                per = w.shape[-1] / inp
                return (-1, [int(i * per) for i in segments])
        else:
            def rule(path, w):
                return (0, segments)
        shard_inplace(layer, rule, group=group)
        layer.freeze()
        return layer


class QuantizedAllToShardedLinear(_QuantizedShardedLinear):
    """The quantized :class:`AllToShardedLinear`: every member takes the full input and
    computes its slice of the output with its shard of a quantized weight (see
    nn.QuantizedLinear); the parameters are frozen.

    Args:
        input_dims: Input features.
        output_dims: Output features over the whole group (divisible by its size).
        bias: Whether to add a bias. Default True.
        group_size: Elements per quantization group. Default 64.
        bits: Bits per weight. Default 4.
        mode: The quantization mode (see mx.quantize). Default ``"affine"``.
        group: The group to shard across (default: the global group).
    """

    _sharding = "all-to-sharded"

    def __call__(self, x):
        y = self._product(sum_gradients(self.group)(x))
        return y + self["bias"] if "bias" in self else y


class QuantizedShardedToAllLinear(_QuantizedShardedLinear):
    """The quantized :class:`ShardedToAllLinear`: every member multiplies its slice of the
    input with its shard of a quantized weight, the partial products are summed over the
    group, and every member gets the full output; the parameters are frozen.

    Args:
        input_dims: Input features over the whole group (divisible by its size, each member's
            share a multiple of group_size).
        output_dims: Output features.
        bias: Whether to add a bias. Default True.
        group_size: Elements per quantization group. Default 64.
        bits: Bits per weight. Default 4.
        mode: The quantization mode (see mx.quantize). Default ``"affine"``.
        group: The group to shard across (default: the global group).
    """

    _sharding = "sharded-to-all"

    def __call__(self, x):
        y = mx.distributed.all_sum(self._product(x), group=self.group)
        return y + self["bias"] if "bias" in self else y


def shard_linear(
    module: Module,
    sharding: str,
    *,
    segments: Union[int, list] = 1,
    group: Optional[mx.distributed.Group] = None,
):
    """A new sharded layer made from the linear layer ``module`` (which is left unchanged):
    an :class:`AllToShardedLinear` for ``"all-to-sharded"``, a :class:`ShardedToAllLinear`
    for ``"sharded-to-all"``, and their quantized versions for an nn.QuantizedLinear."""
    from mlx.nn.layers.quantized import QuantizedLinear

    layers = {"all-to-sharded": AllToShardedLinear, "sharded-to-all": ShardedToAllLinear}
    quantized = {
        "all-to-sharded": QuantizedAllToShardedLinear,
        "sharded-to-all": QuantizedShardedToAllLinear,
    }
    if sharding not in layers:
        raise ValueError(
            f"[shard_linear] sharding must be 'all-to-sharded' or 'sharded-to-all'; got "
            f"{sharding!r}."
        )
    if isinstance(module, QuantizedLinear):
        return quantized[sharding].from_quantized_linear(module, segments=segments, group=group)
    if not isinstance(module, Linear):
        raise TypeError(
            f"[shard_linear] Expected an nn.Linear or nn.QuantizedLinear; got "
            f"{type(module).__name__}."
        )
    return layers[sharding].from_linear(module, segments=segments, group=group)


def _all_gather_params(group):
    """Gathers a parameter's shards (axis 0); its gradient is summed and scattered back."""
    if group.size() == 1:
        return lambda p: p

    @mx.custom_function
    def gather(p):
        return mx.distributed.all_gather(p, group=group)

    @gather.vjp
    def gather_vjp(primals, cotangent, output):
        return mx.distributed.sum_scatter(cotangent, group=group)

    return gather


class FullyShardedModule(Module):
    """Wraps ``module`` so that each member of ``group`` stores only its shard (along axis 0)
    of every parameter; the full parameters are gathered for the forward pass and the
    gradients are summed and scattered back, so each member updates only its shard.

    Args:
        module: The module to wrap; every parameter's first axis must be divisible by the
            group size.
        group: The group to shard across (default: the global group).
        compute_dtype: If set, the gathered floating-point parameters are cast to it for the
            forward pass.
    """

    def __init__(
        self,
        module: Module,
        group: Optional[mx.distributed.Group] = None,
        compute_dtype: Optional[mx.Dtype] = None,
    ):
        super().__init__()
        self.group = _group(group)
        self._gather_dtype = compute_dtype
        self.module = module
        n = self.group.size()
        if n > 1:
            shard_inplace(module, lambda path, w: (0, 1), group=self.group)

    def __call__(self, *args, **kwargs):
        gather = _all_gather_params(self.group)
        dtype = self._gather_dtype

        def full(p):
            p = gather(p)
            if dtype is not None and mx.issubdtype(p.dtype, mx.floating):
                p = p.astype(dtype)
            return p

        sharded = self.module.parameters()
        self.module.update(tree_map(full, sharded))
        try:
            return self.module(*args, **kwargs)
        finally:
            self.module.update(sharded)


def fully_shard(
    module: Module,
    *,
    group: Optional[mx.distributed.Group] = None,
    compute_dtype: Optional[mx.Dtype] = None,
) -> Module:
    """``module`` wrapped in a :class:`FullyShardedModule` (returned unchanged when there is
    nothing to do: a group of one and no compute dtype)."""
    group = _group(group)
    if group.size() == 1 and compute_dtype is None:
        return module
    return FullyShardedModule(module, group=group, compute_dtype=compute_dtype)
