"""Learning-rate schedules: callables mapping the optimizer step to a value.

An optimizer evaluates its schedule with the step count *before* the update
(0 for the first update) and stores the result in its state, so the schedules
are written with array operations only and stay traceable under ``mx.compile``.
"""

import math
from typing import Callable, List

import mlx.core as mx


def exponential_decay(init: float, decay_rate: float) -> Callable:
    r"""Make an exponential decay scheduler: ``init * decay_rate ** step``.

    Args:
        init (float): Initial value.
        decay_rate (float): Multiplicative factor to decay by.

    Example:
        >>> lr_schedule = optim.exponential_decay(1e-1, 0.9)
        >>> optimizer = optim.SGD(learning_rate=lr_schedule)
        >>> optimizer.learning_rate
        array(0.1, dtype=float32)
    """

    def schedule(step):
        return init * decay_rate**step

    return schedule


def step_decay(init: float, decay_rate: float, step_size: int) -> Callable:
    r"""Make a step decay scheduler: ``init * decay_rate ** (step // step_size)``.

    Args:
        init (float): Initial value.
        decay_rate (float): Multiplicative factor to decay by.
        step_size (int): Decay every ``step_size`` steps.
    """
    if step_size < 1:
        raise ValueError(f"[step_decay] step_size must be positive; got {step_size}.")

    def schedule(step):
        return init * decay_rate ** (step // step_size)

    return schedule


def cosine_decay(init: float, decay_steps: int, end: float = 0.0) -> Callable:
    r"""Make a cosine decay scheduler from ``init`` to ``end``.

    Args:
        init (float): Initial value.
        decay_steps (int): Number of steps to decay over. The decayed value is
            constant (``end``) for steps beyond ``decay_steps``.
        end (float, optional): Final value to decay to. Default: ``0``.
    """
    if decay_steps < 1:
        raise ValueError(
            f"[cosine_decay] decay_steps must be positive; got {decay_steps}."
        )

    def schedule(step):
        s = mx.minimum(step, decay_steps)
        decay = 0.5 * (1.0 + mx.cos((math.pi / decay_steps) * s))
        return end + decay * (init - end)

    return schedule


def linear_schedule(init: float, end: float, steps: int) -> Callable:
    r"""Make a linear scheduler from ``init`` to ``end``.

    Args:
        init (float): Initial value.
        end (float): Final value.
        steps (int): Number of steps to apply the schedule over. The value is
            ``end`` for any steps beyond ``steps``.
    """
    if steps < 1:
        raise ValueError(f"[linear_schedule] steps must be positive; got {steps}.")

    def schedule(step):
        s = mx.minimum(step, steps)
        return s * ((end - init) / steps) + init

    return schedule


def join_schedules(schedules: List[Callable], boundaries: List[int]) -> Callable:
    r"""Join multiple schedules to create a new schedule.

    Args:
        schedules (list(Callable)): A list of schedules. Schedule :math:`i+1`
            receives a step count indicating the number of steps since the
            :math:`i`-th boundary.
        boundaries (list(int)): A list of integers of length
            ``len(schedules) - 1`` that indicates when to transition between
            schedules.
    """
    if len(schedules) == 0:
        raise ValueError("[join_schedules] Must provide at least one schedule.")
    if len(boundaries) != len(schedules) - 1:
        raise ValueError(
            "[join_schedules] Received "
            f"{len(boundaries)} boundaries for {len(schedules)} schedules; "
            f"expected {len(schedules) - 1}."
        )

    def schedule(step):
        output = schedules[0](step)
        for boundary, later in zip(boundaries, schedules[1:]):
            # Steps before the boundary keep the earlier value; the later
            # schedule is evaluated there too (its value is discarded).
            output = mx.where(step < boundary, output, later(step - boundary))
        return output

    return schedule
