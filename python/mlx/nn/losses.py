"""Loss functions. ``reduction`` is ``"none"`` (the per-element losses), ``"mean"`` or
``"sum"``."""

import math
from typing import Literal

import mlx.core as mx

Reduction = Literal["none", "mean", "sum"]


def _reduce(loss, reduction: Reduction):
    if reduction == "mean":
        return mx.mean(loss)
    if reduction == "sum":
        return mx.sum(loss)
    if reduction == "none":
        return loss
    raise ValueError(f"Invalid reduction '{reduction}'; must be 'none', 'mean' or 'sum'.")


def _check_same_shape(name: str, **arrays):
    shapes = {k: tuple(v.shape) for k, v in arrays.items()}
    if len(set(shapes.values())) > 1:
        described = ", ".join(f"{k} {s}" for k, s in shapes.items())
        raise ValueError(f"[{name}] The shapes must match; got {described}.")


def _apply_weights(name: str, loss, weights):
    if weights is None:
        return loss
    if tuple(weights.shape) != tuple(loss.shape):
        raise ValueError(
            f"[{name}] Weights with shape {tuple(weights.shape)} do not match the loss shape "
            f"{tuple(loss.shape)}."
        )
    return loss * weights


def _fusable(logits, targets) -> bool:
    """Whether mx.fast.cross_entropy computes this class-index cross entropy."""
    return (
        isinstance(logits, mx.array)
        and isinstance(targets, mx.array)
        and mx.issubdtype(logits.dtype, mx.floating)
        and mx.issubdtype(targets.dtype, mx.integer)
        and logits.shape[-1] > 0
    )


def cross_entropy(
    logits,
    targets,
    weights=None,
    axis: int = -1,
    label_smoothing: float = 0.0,
    reduction: Reduction = "none",
):
    r"""Softmax cross entropy :math:`\log\sum_j e^{x_j} - \sum_j t_j x_j`.

    Args:
        logits: unnormalized scores; classes along ``axis``.
        targets: class indices (the shape of ``logits`` without ``axis``) or probabilities /
            one-hot vectors (the shape of ``logits``).
        weights: optional per-target weights (the shape of the unreduced loss).
        axis: the class axis (default -1).
        label_smoothing: in ``[0, 1)``; the targets become
            :math:`(1 - s)\,t + s / K` for ``K`` classes (default 0).
        reduction: ``"none"`` (default), ``"mean"`` or ``"sum"``.
    """
    if not 0 <= label_smoothing < 1:
        raise ValueError(
            f"[cross_entropy] label_smoothing must be in [0, 1); got {label_smoothing}."
        )
    if targets.ndim == logits.ndim:
        _check_same_shape("cross_entropy", logits=logits, targets=targets)
        score = mx.sum(logits * targets, axis=axis)
    else:
        expected = list(logits.shape)
        expected.pop(axis)
        if list(targets.shape) != expected:
            raise ValueError(
                f"[cross_entropy] Class-index targets must have the shape of the logits without "
                f"axis {axis}, {tuple(expected)}; got {tuple(targets.shape)}."
            )
        if label_smoothing == 0 and axis in (-1, logits.ndim - 1) and _fusable(logits, targets):
            # One fused pass per row forward and backward; the loss keeps the logits' dtype.
            loss = mx.fast.cross_entropy(logits, targets).astype(logits.dtype)
            return _reduce(_apply_weights("cross_entropy", loss, weights), reduction)
        picked = mx.take_along_axis(logits, mx.expand_dims(targets, axis), axis=axis)
        score = mx.squeeze(picked, axis)
    loss = mx.logsumexp(logits, axis=axis)
    if label_smoothing > 0:
        loss = loss - (1 - label_smoothing) * score - label_smoothing * mx.mean(logits, axis=axis)
    else:
        loss = loss - score
    return _reduce(_apply_weights("cross_entropy", loss, weights), reduction)


def binary_cross_entropy(
    inputs,
    targets,
    weights=None,
    with_logits: bool = True,
    reduction: Reduction = "mean",
):
    r"""Binary cross entropy :math:`-t \log p - (1 - t) \log(1 - p)`.

    Args:
        inputs: logits (``with_logits=True``, default; computed stably as
            :math:`\log(1 + e^x) - t x`) or probabilities (logs clipped at -100).
        targets: targets in ``[0, 1]``, the shape of ``inputs``.
        weights: optional per-element weights, the shape of ``inputs``.
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.
    """
    _check_same_shape("binary_cross_entropy", inputs=inputs, targets=targets)
    if with_logits:
        loss = mx.logaddexp(0.0, inputs) - inputs * targets
    else:
        log_p = mx.maximum(mx.log(inputs), -100)
        log_1mp = mx.maximum(mx.log(1 - inputs), -100)
        loss = -(targets * log_p + (1 - targets) * log_1mp)
    return _reduce(_apply_weights("binary_cross_entropy", loss, weights), reduction)


def l1_loss(predictions, targets, reduction: Reduction = "mean"):
    r"""Absolute error :math:`|p - t|`."""
    _check_same_shape("l1_loss", predictions=predictions, targets=targets)
    return _reduce(mx.abs(predictions - targets), reduction)


def mse_loss(predictions, targets, reduction: Reduction = "mean"):
    r"""Squared error :math:`(p - t)^2`."""
    _check_same_shape("mse_loss", predictions=predictions, targets=targets)
    return _reduce(mx.square(predictions - targets), reduction)


def nll_loss(inputs, targets, axis: int = -1, reduction: Reduction = "none"):
    r"""Negative log likelihood :math:`-x_{t}` of log probabilities ``inputs`` (classes along
    ``axis``) at the class indices ``targets``."""
    picked = mx.take_along_axis(inputs, mx.expand_dims(targets, axis), axis=axis)
    return _reduce(-mx.squeeze(picked, axis), reduction)


def gaussian_nll_loss(
    inputs,
    targets,
    vars,
    full: bool = False,
    eps: float = 1e-6,
    reduction: Reduction = "mean",
):
    r"""Gaussian negative log likelihood
    :math:`\frac12\left(\log \sigma^2 + (t - \mu)^2 / \sigma^2\right)` (plus
    :math:`\frac12 \log 2\pi` when ``full``), with ``inputs`` the means :math:`\mu`, ``vars``
    the variances :math:`\sigma^2` (clamped below at ``eps``)."""
    _check_same_shape("gaussian_nll_loss", inputs=inputs, targets=targets, vars=vars)
    vars = mx.maximum(vars, eps)
    loss = 0.5 * (mx.log(vars) + mx.square(targets - inputs) / vars)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def kl_div_loss(inputs, targets, axis: int = -1, reduction: Reduction = "none"):
    r"""Kullback-Leibler divergence :math:`\sum_j e^{t_j} (t_j - x_j)` along ``axis``, with
    ``inputs`` and ``targets`` log probabilities."""
    return _reduce(mx.sum(mx.exp(targets) * (targets - inputs), axis=axis), reduction)


def smooth_l1_loss(predictions, targets, beta: float = 1.0, reduction: Reduction = "mean"):
    r"""Smooth L1: :math:`\frac{0.5 d^2}{\beta}` for :math:`d = |p - t| < \beta`, else
    :math:`d - 0.5\beta`."""
    _check_same_shape("smooth_l1_loss", predictions=predictions, targets=targets)
    diff = mx.abs(predictions - targets)
    loss = mx.where(diff < beta, 0.5 * mx.square(diff) / beta, diff - 0.5 * beta)
    return _reduce(loss, reduction)


def triplet_loss(
    anchors,
    positives,
    negatives,
    axis: int = -1,
    p: int = 2,
    margin: float = 1.0,
    eps: float = 1e-6,
    reduction: Reduction = "none",
):
    r"""Triplet margin loss :math:`\max(\|a - p\|_p - \|a - n\|_p + \text{margin}, 0)`, the
    norms taken along ``axis`` (``eps`` is added inside them for a finite gradient at 0)."""

    def distance(x, y):
        return mx.power(mx.sum(mx.power(mx.abs(x - y), p), axis=axis) + eps, 1.0 / p)

    loss = mx.maximum(distance(anchors, positives) - distance(anchors, negatives) + margin, 0)
    return _reduce(loss, reduction)


def hinge_loss(inputs, targets, reduction: Reduction = "none"):
    r"""Hinge loss :math:`\max(1 - x t, 0)` for targets in :math:`\{-1, 1\}`."""
    return _reduce(mx.maximum(1 - inputs * targets, 0), reduction)


def huber_loss(inputs, targets, delta: float = 1.0, reduction: Reduction = "none"):
    r"""Huber loss: :math:`\frac12 d^2` for :math:`|d| \le \delta`, else
    :math:`\delta (|d| - \frac12 \delta)`, with :math:`d = x - t`."""
    abs_err = mx.abs(inputs - targets)
    quadratic = mx.minimum(abs_err, delta)
    return _reduce(0.5 * mx.square(quadratic) + delta * (abs_err - quadratic), reduction)


def log_cosh_loss(inputs, targets, reduction: Reduction = "none"):
    r""":math:`\log\cosh(x - t)`, computed stably."""
    err = inputs - targets
    return _reduce(mx.logaddexp(err, -err) - math.log(2), reduction)


def cosine_similarity_loss(
    x1, x2, axis: int = 1, eps: float = 1e-8, reduction: Reduction = "none"
):
    r"""Cosine similarity :math:`\frac{x_1 \cdot x_2}{\max(\|x_1\| \|x_2\|, \epsilon)}` along
    ``axis``."""
    norm1 = mx.sqrt(mx.sum(mx.square(x1), axis=axis))
    norm2 = mx.sqrt(mx.sum(mx.square(x2), axis=axis))
    loss = mx.sum(x1 * x2, axis=axis) / mx.maximum(norm1 * norm2, eps)
    return _reduce(loss, reduction)


def margin_ranking_loss(
    inputs1, inputs2, targets, margin: float = 0.0, reduction: Reduction = "none"
):
    r"""Margin ranking loss :math:`\max(0, -t (x_1 - x_2) + \text{margin})` for targets in
    :math:`\{-1, 1\}` (1: ``inputs1`` should rank higher)."""
    _check_same_shape("margin_ranking_loss", inputs1=inputs1, inputs2=inputs2, targets=targets)
    return _reduce(mx.maximum(0, -targets * (inputs1 - inputs2) + margin), reduction)
