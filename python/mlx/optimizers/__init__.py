"""Optimizers and learning-rate schedules (``mlx.optimizers``)."""

from mlx.optimizers.optimizers import (
    AdaDelta,
    Adafactor,
    Adagrad,
    Adam,
    Adamax,
    AdamW,
    Lion,
    MultiOptimizer,
    Muon,
    Optimizer,
    RMSprop,
    SGD,
    clip_grad_norm,
)
from mlx.optimizers.sharded import ShardedOptimizer
from mlx.optimizers.schedulers import (
    cosine_decay,
    exponential_decay,
    join_schedules,
    linear_schedule,
    step_decay,
)

__all__ = [
    "AdaDelta",
    "Adafactor",
    "Adagrad",
    "Adam",
    "Adamax",
    "AdamW",
    "Lion",
    "MultiOptimizer",
    "Muon",
    "Optimizer",
    "RMSprop",
    "SGD",
    "ShardedOptimizer",
    "clip_grad_norm",
    "cosine_decay",
    "exponential_decay",
    "join_schedules",
    "linear_schedule",
    "step_decay",
]
