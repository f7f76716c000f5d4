"""Transforms of functions that use a Module: gradients and checkpointing with respect to its
trainable parameters."""

from collections.abc import Callable
from functools import wraps
from itertools import accumulate
from typing import Optional

import mlx.core as mx
from mlx.utils import tree_flatten, tree_map, tree_unflatten


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

    Small arrays are not sent one by one: consecutive gradients of one dtype are concatenated
    into buckets of about ``all_reduce_size`` bytes, one all-reduce each (``0`` or less: one
    per array). ``communication_stream`` runs the all-reduces on that stream, so they can
    overlap other work. With a group of one the gradients are returned unchanged.
    """
    group = group if group is not None else mx.distributed.init()
    n = group.size()
    if n == 1:
        return gradients

    def average(x):
        return mx.distributed.all_sum(x, group=group, stream=communication_stream) / n

    if all_reduce_size <= 0:
        return tree_map(average, gradients)
    flat = tree_flatten(gradients)
    out = [None] * len(flat)
    for bucket in _buckets([g for _, g in flat], all_reduce_size):
        if len(bucket) == 1:
            out[bucket[0]] = average(flat[bucket[0]][1])
            continue
        arrays = [flat[i][1] for i in bucket]
        summed = average(mx.concatenate([a.reshape(-1) for a in arrays]))
        offsets = list(accumulate(a.size for a in arrays))[:-1]
        for i, a, part in zip(bucket, arrays, mx.split(summed, offsets)):
            out[i] = part.reshape(a.shape)
    return tree_unflatten([(path, g) for (path, _), g in zip(flat, out)])


def _buckets(arrays, max_bytes):
    """Indices of ``arrays`` grouped into runs of one dtype of at most ``max_bytes`` (an
    array larger than that is a bucket alone)."""
    buckets, current, size = [], [], 0
    for i, a in enumerate(arrays):
        if current and (a.dtype != arrays[current[0]].dtype or size + a.nbytes > max_bytes):
            buckets.append(current)
            current, size = [], 0
        current.append(i)
        size += a.nbytes
    if current:
        buckets.append(current)
    return buckets
