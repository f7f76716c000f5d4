"""Optimizer-state sharding for data-parallel training (ZeRO stages 1 and 2; not in MLX).

In plain data-parallel training every rank holds the whole optimizer state (two arrays per
parameter for Adam), the largest part of a job's memory after activations. Here each
parameter is split, flattened, into ``group.size()`` equal parts; rank ``r`` keeps the
optimizer state of part ``r`` only and updates only that part, then the updated parts are
gathered so that every rank again holds the full parameters.

- stage 1: the gradients are averaged in full (all_sum), then each rank takes its part.
- stage 2: the gradients are reduce-scattered (sum_scatter): each rank only ever receives
  the average of its own part, so the averaged full gradients never exist.

The update equals the unsharded optimizer's for optimizers that act elementwise (SGD,
RMSprop, Adagrad, AdaDelta, Adam, AdamW, Adamax, Lion); the others are refused.
"""

from typing import Optional

import mlx.core as mx
from mlx.optimizers.optimizers import (
    SGD,
    AdaDelta,
    Adagrad,
    Adam,
    Adamax,
    AdamW,
    Lion,
    Optimizer,
    RMSprop,
    rescale_to_norm,
    square_norm,
)
from mlx.utils import tree_flatten, tree_map, tree_unflatten

_ELEMENTWISE = (SGD, RMSprop, Adagrad, AdaDelta, Adam, AdamW, Adamax, Lion)


class ShardedOptimizer:
    """Wraps ``optimizer`` so that each rank of ``group`` keeps ``1/group.size()`` of its state.

    Args:
        optimizer: An elementwise optimizer (its state will hold only this rank's parts).
        group: The data-parallel group (default: the global group).
        stage: 1 (shard the state) or 2 (shard the state and the averaged gradients).
        communication_stream: Stream for the collectives (default: the default stream).
        max_grad_norm: If set, the averaged gradients are clipped to this global norm first
            (as ``clip_grad_norm``; the norm is summed over the ranks' parts, which are
            disjoint, so it is the norm of the full averaged gradients).

    ``update(model, gradients)`` takes this rank's *local* gradients (not averaged): the
    averaging is part of the sharded update.
    """

    def __init__(
        self,
        optimizer: Optimizer,
        group: Optional[mx.distributed.Group] = None,
        stage: int = 2,
        communication_stream: Optional[mx.Stream] = None,
        max_grad_norm: Optional[float] = None,
    ):
        if not isinstance(optimizer, _ELEMENTWISE):
            raise ValueError(
                f"[ShardedOptimizer] {type(optimizer).__name__} does not update elementwise, "
                "so its state cannot be split; use one of "
                + ", ".join(c.__name__ for c in _ELEMENTWISE)
                + "."
            )
        if stage not in (1, 2):
            raise ValueError(f"[ShardedOptimizer] stage must be 1 or 2; got {stage!r}.")
        self.optimizer = optimizer
        self.group = group if group is not None else mx.distributed.init()
        self.stage = stage
        self.stream = communication_stream
        self.max_grad_norm = max_grad_norm

    @property
    def state(self):
        """The wrapped optimizer's state: this rank's parts only."""
        return self.optimizer.state

    @state.setter
    def state(self, state):
        self.optimizer.state = state

    @property
    def learning_rate(self):
        return self.optimizer.learning_rate

    @property
    def step(self):
        return self.optimizer.step

    def _layout(self, p):
        n = self.group.size()
        part = -(-p.size // n)  # ceil
        return part, n * part - p.size

    def _flat_padded(self, x):
        part, pad = self._layout(x)
        x = x.reshape(-1)
        if pad:
            x = mx.concatenate([x, mx.zeros((pad,), x.dtype)])
        return x, part

    def _my_part(self, x):
        x, part = self._flat_padded(x)
        r = self.group.rank()
        return x[r * part : (r + 1) * part]

    def init(self, parameters: dict):
        """Creates the state of this rank's parts of ``parameters``."""
        self.optimizer.init(tree_map(self._my_part, parameters))

    def _averaged_part(self, g):
        n = self.group.size()
        flat, part = self._flat_padded(g)
        if n == 1:
            return flat
        if self.stage == 2:
            return mx.distributed.sum_scatter(flat, group=self.group, stream=self.stream) / n
        r = self.group.rank()
        total = mx.distributed.all_sum(flat, group=self.group, stream=self.stream) / n
        return total[r * part : (r + 1) * part]

    def apply_gradients(self, gradients: dict, parameters: dict):
        """The updated parameters (in full) for this rank's local ``gradients``."""
        grads = tree_flatten(gradients)
        params = tree_flatten(tree_map(lambda g, p: p, gradients, parameters))
        parts_g = tree_unflatten([(k, self._averaged_part(g)) for k, g in grads])
        parts_p = tree_unflatten([(k, self._my_part(p)) for k, p in params])
        if self.max_grad_norm is not None:
            total = square_norm(parts_g)
            if self.group.size() > 1:
                total = mx.distributed.all_sum(total, group=self.group, stream=self.stream)
            self.grad_norm = mx.sqrt(total)
            parts_g = rescale_to_norm(parts_g, self.grad_norm, self.max_grad_norm)
        updated = dict(tree_flatten(self.optimizer.apply_gradients(parts_g, parts_p)))
        full = []
        for k, p in params:
            u = updated[k]
            if self.group.size() > 1:
                u = mx.distributed.all_gather(u, group=self.group, stream=self.stream)
            full.append((k, u[: p.size].reshape(p.shape)))
        return tree_unflatten(full)

    def update(self, model, gradients: dict):
        """Applies this rank's local ``gradients`` to ``model`` (averaged over the group)."""
        model.update(self.apply_gradients(gradients, model))
