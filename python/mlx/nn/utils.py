"""Transforms of functions that use a Module: gradients and checkpointing with respect to its
trainable parameters."""

from collections.abc import Callable
from functools import wraps
from typing import Optional

import mlx.core as mx
from mlx.utils import tree_map


def _with_parameters(model, fn: Callable) -> Callable:
    """``inner(params, *args, **kwargs)``: ``fn(*args, **kwargs)`` with the model's trainable
    parameters replaced by ``params`` (the transform's tracers)."""

    def inner(params, *args, **kwargs):
        model.update(params)
        return fn(*args, **kwargs)

    return inner


def value_and_grad(model, fn: Callable) -> Callable:
    """Transforms ``fn(*args, **kwargs)``, a function that uses ``model``, into one that
    returns ``(fn(*args, **kwargs), grads)`` where ``grads`` is the gradient with respect to
    ``model.trainable_parameters()`` (a tree of the same structure).

    ``fn`` must return a scalar array (or a tuple whose first entry is one). The model's
    parameters are unchanged afterwards.

    Example:
        >>> loss_and_grad = nn.value_and_grad(model, lambda x, y: mse_loss(model(x), y))
        >>> loss, grads = loss_and_grad(x, y)
        >>> optimizer.update(model, grads)
    """
    value_grad = mx.value_and_grad(_with_parameters(model, fn))

    @wraps(fn)
    def wrapped(*args, **kwargs):
        params = model.trainable_parameters()
        try:
            return value_grad(params, *args, **kwargs)
        finally:
            model.update(params)

    return wrapped


def checkpoint(module, fn: Optional[Callable] = None) -> Callable:
    """Gradient checkpointing of ``fn`` (default: calling ``module``) with respect to the
    module's trainable parameters and the arguments: the intermediate activations are not kept
    for the backward pass but recomputed (``mx.checkpoint``), trading compute for memory.

    Example:
        >>> y = nn.utils.checkpoint(block)(x)   # inside a loss being differentiated
    """
    fn = module if fn is None else fn
    checkpointed = mx.checkpoint(_with_parameters(module, fn))

    def wrapped(*args, **kwargs):
        params = module.trainable_parameters()
        try:
            return checkpointed(params, *args, **kwargs)
        finally:
            module.update(params)

    return wrapped


def average_gradients(
    gradients,
    group: Optional[mx.distributed.Group] = None,
    all_reduce_size: int = 32 * 1024**2,
    communication_stream: Optional[mx.Stream] = None,
):
    """The mean of ``gradients`` (a tree of arrays) over the members of ``group`` (default:
    the global group), for data-parallel training: each member computes gradients on its own
    batch, then all of them apply the average.

    With a group of one (always the case until a communication backend lands) the gradients
    are returned unchanged. ``all_reduce_size`` and ``communication_stream`` tune how the
    reduction is batched and where it runs; with one array per collective here they change
    nothing.
    """
    group = group if group is not None else mx.distributed.init()
    n = group.size()
    if n == 1:
        return gradients
    return tree_map(lambda g: mx.distributed.all_sum(g, group=group) / n, gradients)
