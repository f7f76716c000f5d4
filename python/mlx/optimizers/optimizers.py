"""Optimizers over arbitrary parameter trees (dicts and lists of arrays).

The optimizer state is a dict holding ``"step"``, the scheduled hyperparameters
(``"learning_rate"``) and, mirroring the parameter tree, one dict of arrays per
parameter. Every update rebinds keys of these dicts in place (never replaces
them), so ``mx.compile(step, inputs=optimizer.state, outputs=optimizer.state)``
sees the new values after each call.
"""

import math
from typing import Callable, List, Optional, Tuple, Union

import mlx.core as mx
from mlx.utils import tree_flatten, tree_map, tree_reduce, tree_unflatten

LearningRate = Union[float, Callable[[mx.array], mx.array]]


class Optimizer:
    """The base class for all optimizers. It allows us to implement an
    optimizer on a per-parameter basis and apply it to a parameter tree.

    Subclasses implement :meth:`init_single` (create the state of one
    parameter) and :meth:`apply_single` (return the updated parameter).

    Args:
        schedulers (dict, optional): Maps state names to schedules evaluated
            from the step before every update.
    """

    def __init__(self, schedulers=None):
        self._initialized = False
        self._state = {"step": mx.array(0, mx.uint64)}
        self._schedulers = dict(schedulers or {})

    def update(self, model, gradients: dict):
        """Apply the gradients to the parameters of the model and update the
        model with the new parameters.

        Args:
            model (Module): An mlx module to be updated (or a dict tree of
                arrays, updated with ``dict.update``).
            gradients (dict): A Python tree of gradients, most likely computed
                via :func:`mlx.nn.value_and_grad`.
        """
        model.update(self.apply_gradients(gradients, model))

    def init(self, parameters: dict):
        """Initialize the optimizer's state.

        Optional: the optimizer initializes itself on the first update. Entries
        already present in the state (e.g. loaded from a checkpoint) are kept.

        Args:
            parameters (dict): A Python tree of parameters.
        """
        if not isinstance(parameters, dict):
            raise TypeError(
                "[Optimizer.init] The parameters must be a dict tree; got "
                f"{type(parameters).__name__}."
            )
        self._init_tree(parameters, self._state)
        self._initialized = True

    def _init_tree(self, parameters, state):
        # Builds the state subtree mirroring ``parameters``, keeping existing
        # entries; per-parameter state dicts are filled by init_single.
        if isinstance(parameters, (list, tuple)):
            if not isinstance(state, list):
                state = []
            state.extend({} for _ in range(len(parameters) - len(state)))
            for i, p in enumerate(parameters):
                state[i] = self._init_tree(p, state[i])
            return state
        if isinstance(parameters, dict):
            for k, p in parameters.items():
                state[k] = self._init_tree(p, state.get(k, {}))
            return state
        if not state:
            self.init_single(parameters, state)
        return state

    def init_single(self, parameter: mx.array, state: dict):
        """Create the state of one parameter in the dict ``state``."""
        raise NotImplementedError

    def apply_gradients(self, gradients: dict, parameters: dict):
        """Apply the gradients to the parameters and return the updated
        parameters.

        Can be used to update a model via
        ``model.update(opt.apply_gradients(grads, model))`` which is precisely
        how :meth:`Optimizer.update` is implemented.

        Args:
            gradients (dict): A Python tree of gradients.
            parameters (dict): A Python tree of parameters. It can be a
                superset of the gradients. In that case the returned python
                tree will be of the same structure as the gradients.
        """
        self._advance(gradients)
        return tree_map(self.apply_single, gradients, parameters, self._state)

    def _advance(self, gradients: dict):
        # Before an update: the state initialized, the schedules read, the step counted.
        if not self._initialized:
            self.init(gradients)
        for name, schedule in self._schedulers.items():
            self._state[name] = _as_array(schedule(self.step))
        self._state["step"] = self.step + 1

    def _apply_fused(self, gradients: dict, parameters: dict, fused: Callable,
                     unfused: Callable):
        # An update whose parameters mostly take one fused step per dtype: one walk gathers the
        # leaves, fused(gradients, parameters, states) returns the new parameters (updating
        # the states) with None for those it leaves to unfused (apply_single's signature), and
        # one walk rebuilds.
        self._advance(gradients)
        gs, ps, states = [], [], []

        def gather(g, p, st):
            gs.append(g)
            ps.append(p)
            states.append(st)
            return len(gs) - 1

        index = tree_map(gather, gradients, parameters, self._state)
        new = fused(gs, ps, states)
        for i, p in enumerate(new):
            if p is None:
                new[i] = unfused(gs[i], ps[i], states[i])
        return tree_map(new.__getitem__, index)

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: dict):
        """Return the updated ``parameter``, updating ``state`` in place."""
        raise NotImplementedError

    @property
    def state(self):
        """The optimizer's state dictionary."""
        return self._state

    @state.setter
    def state(self, state: dict):
        # A loaded state may lack entries; the next update fills them in.
        self._initialized = False
        self._state = state

    @property
    def step(self):
        """The number of updates applied so far (an array)."""
        return self._state["step"]

    @property
    def learning_rate(self):
        """The current learning rate (an array)."""
        return self._state["learning_rate"]

    @learning_rate.setter
    def learning_rate(self, learning_rate: Union[float, mx.array]):
        self._state["learning_rate"] = _as_array(learning_rate)

    def _maybe_schedule(self, name: str, value):
        """Store ``value`` in the state under ``name``; a callable is a
        schedule, evaluated now and before every update."""
        if callable(value):
            self._schedulers[name] = value
            value = value(self.step)
        self._state[name] = _as_array(value)

    def _lr(self, like: mx.array):
        # The learning rate in the parameter's dtype, so that float16 and
        # bfloat16 parameters are not promoted to float32.
        return self.learning_rate.astype(like.dtype)


def _as_array(value):
    if isinstance(value, mx.array):
        return value
    return mx.array(float(value))


def _check_nonnegative(name: str, **values):
    for key, value in values.items():
        if value < 0:
            raise ValueError(f"[{name}] {key} must be non-negative; got {value}.")


class SGD(Optimizer):
    r"""The stochastic gradient descent optimizer.

    Updates a parameter :math:`w` with a gradient :math:`g` as follows

    .. math::

        v_{t+1} &= \mu v_t + (1 - \tau) g_t \\
        w_{t+1} &= w_t - \lambda v_{t+1}

    Args:
        learning_rate (float or callable): The learning rate :math:`\lambda`.
        momentum (float, optional): The momentum strength :math:`\mu`. Default: ``0``
        weight_decay (float, optional): The weight decay (L2 penalty). Default: ``0``
        dampening (float, optional): Dampening for momentum :math:`\tau`. Default: ``0``
        nesterov (bool, optional): Enables Nesterov momentum. Default: ``False``
    """

    def __init__(
        self,
        learning_rate: LearningRate,
        momentum: float = 0.0,
        weight_decay: float = 0.0,
        dampening: float = 0.0,
        nesterov: bool = False,
    ):
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError(
                "[SGD] Nesterov momentum requires a positive momentum and zero "
                f"dampening; got momentum={momentum}, dampening={dampening}."
            )
        super().__init__()
        self._maybe_schedule("learning_rate", learning_rate)
        self.momentum = momentum
        self.weight_decay = weight_decay
        self.dampening = dampening
        self.nesterov = nesterov

    def init_single(self, parameter: mx.array, state: dict):
        state["v"] = mx.zeros_like(parameter)

    def apply_gradients(self, gradients: dict, parameters: dict):
        if type(self).apply_single is not SGD.apply_single:  # a subclass's own rule
            return super().apply_gradients(gradients, parameters)
        return self._apply_fused(gradients, parameters, self._fused_steps, self.apply_single)

    def _fused_steps(self, gradients, parameters, states):
        # One fused step per dtype (mx.fast._sgd_update_many): a model's update is a primitive
        # or two for the host to schedule instead of a few ops per parameter.
        momentum = self.momentum > 0
        new_p, new_v = mx.fast._sgd_update_many(
            parameters, gradients, [st["v"] for st in states] if momentum else [],
            self.learning_rate, momentum=self.momentum, dampening=self.dampening,
            weight_decay=self.weight_decay, nesterov=self.nesterov)
        if momentum:
            for st, v in zip(states, new_v):
                if v is not None:
                    st["v"] = v
        return new_p

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: dict):
        if self.weight_decay != 0:
            gradient = gradient + self.weight_decay * parameter
        lr = self._lr(gradient)
        if self.momentum <= 0:
            return parameter - lr * gradient
        v = self.momentum * state["v"] + (1 - self.dampening) * gradient
        state["v"] = v
        update = gradient + self.momentum * v if self.nesterov else v
        return parameter - lr * update


class RMSprop(Optimizer):
    r"""The RMSprop optimizer [1].

    [1]: Tieleman, T. and Hinton, G. 2012. Lecture 6.5-rmsprop, coursera:
    Neural networks for machine learning

    .. math::

        v_{t+1} &= \alpha v_t + (1 - \alpha) g_t^2 \\
        w_{t+1} &= w_t - \lambda \frac{g_t}{\sqrt{v_{t+1}} + \epsilon}

    Args:
        learning_rate (float or callable): The learning rate :math:`\lambda`.
        alpha (float, optional): The smoothing constant :math:`\alpha`. Default: ``0.99``
        eps (float, optional): The term :math:`\epsilon` added to the
            denominator to improve numerical stability. Default: ``1e-8``
    """

    def __init__(self, learning_rate: LearningRate, alpha: float = 0.99, eps: float = 1e-8):
        _check_nonnegative("RMSprop", alpha=alpha, eps=eps)
        super().__init__()
        self._maybe_schedule("learning_rate", learning_rate)
        self.alpha = alpha
        self.eps = eps

    def init_single(self, parameter: mx.array, state: dict):
        state["v"] = mx.zeros_like(parameter)

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: dict):
        v = self.alpha * state["v"] + (1 - self.alpha) * mx.square(gradient)
        state["v"] = v
        return parameter - self._lr(gradient) * gradient / (mx.sqrt(v) + self.eps)


class Adagrad(Optimizer):
    r"""The Adagrad optimizer [1].

    [1]: Duchi, J., Hazan, E. and Singer, Y., 2011. Adaptive subgradient
    methods for online learning and stochastic optimization. JMLR 2011.

    .. math::

        v_{t+1} &= v_t + g_t^2 \\
        w_{t+1} &= w_t - \lambda \frac{g_t}{\sqrt{v_{t+1}} + \epsilon}

    Args:
        learning_rate (float or callable): The learning rate :math:`\lambda`.
        eps (float, optional): The term :math:`\epsilon` added to the
            denominator to improve numerical stability. Default: ``1e-8``
    """

    def __init__(self, learning_rate: LearningRate, eps: float = 1e-8):
        _check_nonnegative("Adagrad", eps=eps)
        super().__init__()
        self._maybe_schedule("learning_rate", learning_rate)
        self.eps = eps

    def init_single(self, parameter: mx.array, state: dict):
        state["v"] = mx.zeros_like(parameter)

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: dict):
        v = state["v"] + mx.square(gradient)
        state["v"] = v
        return parameter - self._lr(gradient) * gradient / (mx.sqrt(v) + self.eps)


class AdaDelta(Optimizer):
    r"""The AdaDelta optimizer with a learning rate [1].

    [1]: Zeiler, M.D., 2012. ADADELTA: an adaptive learning rate method.
    arXiv preprint arXiv:1212.5701.

    .. math::

        v_{t+1} &= \rho v_t + (1 - \rho) g_t^2 \\
        \Delta w_{t+1} &= \frac{\sqrt{u_t + \epsilon}}{\sqrt{v_{t+1} + \epsilon}} g_t \\
        u_{t+1} &= \rho u_t + (1 - \rho) \Delta w_{t+1}^2 \\
        w_{t+1} &= w_t - \lambda \Delta w_{t+1}

    Args:
        learning_rate (float or callable): The learning rate :math:`\lambda`.
        rho (float, optional): The coefficient :math:`\rho` used for computing
            a running average of squared gradients. Default: ``0.9``
        eps (float, optional): The term :math:`\epsilon` added to the
            denominator to improve numerical stability. Default: ``1e-6``
    """

    def __init__(self, learning_rate: LearningRate, rho: float = 0.9, eps: float = 1e-6):
        _check_nonnegative("AdaDelta", rho=rho, eps=eps)
        super().__init__()
        self._maybe_schedule("learning_rate", learning_rate)
        self.rho = rho
        self.eps = eps

    def init_single(self, parameter: mx.array, state: dict):
        state["v"] = mx.zeros_like(parameter)
        state["u"] = mx.zeros_like(parameter)

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: dict):
        rho, eps = self.rho, self.eps
        v = rho * state["v"] + (1 - rho) * mx.square(gradient)
        d = mx.sqrt(state["u"] + eps) / mx.sqrt(v + eps) * gradient
        state["v"] = v
        state["u"] = rho * state["u"] + (1 - rho) * mx.square(d)
        return parameter - self._lr(gradient) * d


class Adam(Optimizer):
    r"""The Adam optimizer [1].

    [1]: Kingma, D.P. and Ba, J., 2015. Adam: A method for stochastic
    optimization. ICLR 2015.

    .. math::

        m_{t+1} &= \beta_1 m_t + (1 - \beta_1) g_t \\
        v_{t+1} &= \beta_2 v_t + (1 - \beta_2) g_t^2 \\
        w_{t+1} &= w_t - \lambda \frac{m_{t+1}}{\sqrt{v_{t+1}} + \epsilon}

    With ``bias_correction``, :math:`m_{t+1}` and :math:`v_{t+1}` are divided
    by :math:`1 - \beta_1^t` and :math:`1 - \beta_2^t` (:math:`t` counts the
    updates, starting at 1).

    Args:
        learning_rate (float or callable): The learning rate :math:`\lambda`.
        betas (Tuple[float, float], optional): The coefficients
            :math:`(\beta_1, \beta_2)` used for computing running averages of
            the gradient and its square. Default: ``(0.9, 0.999)``
        eps (float, optional): The term :math:`\epsilon` added to the
            denominator to improve numerical stability. Default: ``1e-8``
        bias_correction (bool, optional): If set to ``True``, bias correction
            is applied. Default: ``False``
    """

    def __init__(
        self,
        learning_rate: LearningRate,
        betas: List[float] = [0.9, 0.999],
        eps: float = 1e-8,
        bias_correction: bool = False,
    ):
        super().__init__()
        self._maybe_schedule("learning_rate", learning_rate)
        self.betas = betas
        self.eps = eps
        self.bias_correction = bias_correction

    def init_single(self, parameter: mx.array, state: dict):
        state["m"] = mx.zeros_like(parameter)
        state["v"] = mx.zeros_like(parameter)

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: dict):
        # The fused step where the gradient and state match the parameter, as they do in
        # training; the same formulas as ops otherwise.
        (new,) = self._fused_steps([gradient], [parameter], [state])
        return new if new is not None else self._unfused_step(gradient, parameter, state)

    def _decay(self):
        # The decoupled weight decay (AdamW's); Adam has none.
        return 0.0

    def apply_gradients(self, gradients: dict, parameters: dict):
        try:  # the first parameter's update makes the bias corrections, the rest share them
            if type(self).apply_single is not Adam.apply_single:  # a subclass's own rule
                return super().apply_gradients(gradients, parameters)
            return self._apply_fused(gradients, parameters, self._fused_steps,
                                     self._unfused_step)
        finally:
            self._corrections = None  # holds no array (a tracer under compile) past the update

    def _fused_steps(self, gradients, parameters, states):
        # One fused step per dtype for every parameter whose gradient and moments are like it
        # (mx.fast._adam_update_many): a model's update is a primitive or two for the host to
        # schedule, not one per parameter.
        b1, b2 = self.betas
        c1, c2 = self._bias_corrections()
        new_p, new_m, new_v = mx.fast._adam_update_many(
            parameters, gradients, [st["m"] for st in states], [st["v"] for st in states],
            self.learning_rate, c1, c2, beta1=b1, beta2=b2, eps=self.eps,
            weight_decay=self._decay())
        for st, m, v in zip(states, new_m, new_v):
            if m is not None:
                st["m"], st["v"] = m, v
        return new_p

    def _bias_corrections(self):
        # (1 - beta1^t, 1 - beta2^t) once per step count: per parameter they were seven scalar
        # kernels each (1036 of GPT-2's step). Keyed on the step array itself, so a caller of
        # apply_single between updates never sees another step's values.
        cached = getattr(self, "_corrections", None)
        if cached is None or cached[0] is not self.step:
            if self.bias_correction:
                b1, b2 = self.betas
                step = self.step.astype(mx.float32)
                cached = (self.step, 1 - b1**step, 1 - b2**step)
            else:
                cached = (self.step, mx.array(1.0), mx.array(1.0))
            self._corrections = cached
        return cached[1], cached[2]

    def _unfused_step(self, gradient, parameter, state):
        # The step as ops, for a gradient or state unlike the parameter.
        b1, b2 = self.betas
        c1, c2 = self._bias_corrections()
        m, v = state["m"], state["v"]
        weight_decay = self._decay()
        lr = self._lr(gradient)
        if weight_decay != 0:
            parameter = parameter * (1 - lr * weight_decay)
        m = b1 * m + (1 - b1) * gradient
        v = b2 * v + (1 - b2) * mx.square(gradient)
        state["m"] = m
        state["v"] = v
        if not self.bias_correction:
            return parameter - lr * m / (mx.sqrt(v) + self.eps)
        c1, c2 = c1.astype(gradient.dtype), c2.astype(gradient.dtype)
        return parameter - lr * (m / c1) / (mx.sqrt(v / c2) + self.eps)


class AdamW(Adam):
    r"""The AdamW optimizer [1]. We update the weights with a weight_decay
    (:math:`\lambda`) value:

    [1]: Loshchilov, I. and Hutter, F., 2019. Decoupled weight decay
    regularization. ICLR 2019.

    .. math::

        m_{t+1} &= \beta_1 m_t + (1 - \beta_1) g_t \\
        v_{t+1} &= \beta_2 v_t + (1 - \beta_2) g_t^2 \\
        w_{t+1} &= w_t - \alpha (\frac{m_{t+1}}{\sqrt{v_{t+1}} + \epsilon} + \lambda w_t)

    Args:
        learning_rate (float or callable): The learning rate :math:`\alpha`.
        betas (Tuple[float, float], optional): The coefficients
            :math:`(\beta_1, \beta_2)`. Default: ``(0.9, 0.999)``
        eps (float, optional): The term :math:`\epsilon` added to the
            denominator to improve numerical stability. Default: ``1e-8``
        weight_decay (float, optional): The weight decay :math:`\lambda`.
            Default: ``0.01``.
        bias_correction (bool, optional): If set to ``True``, bias correction
            is applied. Default: ``False``
    """

    def __init__(
        self,
        learning_rate: LearningRate,
        betas: List[float] = [0.9, 0.999],
        eps: float = 1e-8,
        weight_decay: float = 0.01,
        bias_correction: bool = False,
    ):
        super().__init__(
            learning_rate=learning_rate,
            betas=betas,
            eps=eps,
            bias_correction=bias_correction,
        )
        self.weight_decay = weight_decay

    def _decay(self):
        return self.weight_decay


class Adamax(Adam):
    r"""The Adamax optimizer, a variant of Adam based on the infinity norm [1].

    [1]: Kingma, D.P. and Ba, J., 2015. Adam: A method for stochastic
    optimization. ICLR 2015.

    .. math::

        m_{t+1} &= \beta_1 m_t + (1 - \beta_1) g_t \\
        v_{t+1} &= \max(\beta_2 v_t, |g_t|) \\
        w_{t+1} &= w_t - \lambda \frac{m_{t+1}}{v_{t+1} + \epsilon}

    Args:
        learning_rate (float or callable): The learning rate :math:`\lambda`.
        betas (Tuple[float, float], optional): The coefficients
            :math:`(\beta_1, \beta_2)`. Default: ``(0.9, 0.999)``
        eps (float, optional): The term :math:`\epsilon` added to the
            denominator to improve numerical stability. Default: ``1e-8``
    """

    def __init__(
        self,
        learning_rate: LearningRate,
        betas: List[float] = [0.9, 0.999],
        eps: float = 1e-8,
    ):
        _check_nonnegative("Adamax", eps=eps)
        super().__init__(learning_rate, betas, eps)

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: dict):
        b1, b2 = self.betas
        m = b1 * state["m"] + (1 - b1) * gradient
        v = mx.maximum(b2 * state["v"], mx.abs(gradient))
        state["m"] = m
        state["v"] = v
        return parameter - self._lr(gradient) * m / (v + self.eps)


class Lion(Optimizer):
    r"""The Lion optimizer [1].

    Since updates are computed through the sign operation, they tend to have
    larger norm than for other optimizers such as SGD and Adam. We recommend
    a learning rate that is 3-10x smaller than AdamW and a weight decay 3-10x
    larger than AdamW to maintain the strength (lr * wd).

    [1]: Chen, X. Symbolic Discovery of Optimization Algorithms. arXiv
    preprint arXiv:2302.06675.

    .. math::

        c_{t + 1} &= \beta_1 m_t + (1 - \beta_1) g_t \\
        m_{t + 1} &= \beta_2 m_t + (1 - \beta_2) g_t \\
        w_{t + 1} &= w_t - \eta (\text{sign}(c_t) + \lambda w_t)

    Args:
        learning_rate (float or callable): The learning rate :math:`\eta`.
        betas (Tuple[float, float], optional): The coefficients
            :math:`(\beta_1, \beta_2)` used for computing the gradient momentum
            and update direction. Default: ``(0.9, 0.99)``
        weight_decay (float, optional): The weight decay :math:`\lambda`.
            Default: ``0.0``
    """

    def __init__(
        self,
        learning_rate: LearningRate,
        betas: List[float] = [0.9, 0.99],
        weight_decay: float = 0.0,
    ):
        super().__init__()
        self._maybe_schedule("learning_rate", learning_rate)
        self.betas = betas
        self.weight_decay = weight_decay

    def init_single(self, parameter: mx.array, state: dict):
        state["m"] = mx.zeros_like(parameter)

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: dict):
        b1, b2 = self.betas
        m = state["m"]
        c = b1 * m + (1 - b1) * gradient
        state["m"] = b2 * m + (1 - b2) * gradient
        lr = self._lr(gradient)
        if self.weight_decay != 0:
            parameter = parameter * (1 - lr * self.weight_decay)
        return parameter - lr * mx.sign(c)


class Adafactor(Optimizer):
    r"""The Adafactor optimizer.

    Our Adafactor implementation follows the original paper: `Adafactor:
    Adaptive Learning Rates with Sublinear Memory Cost
    <https://arxiv.org/abs/1804.04235>`_. Parameters with two or more
    dimensions keep factored (row and column) second-moment estimates.

    Args:
        learning_rate (float or callable, optional): The learning rate, used
            when ``relative_step`` is ``False``. Default: ``None``.
        eps (tuple(float, float), optional): The first term
            :math:`\epsilon_1` added to the square of the gradients to improve
            numerical stability and the second term :math:`\epsilon_2` is used
            for parameter scaling if ``scale_parameter`` is set to ``True``.
            Default: ``(1e-30, 1e-3)``.
        clip_threshold (float, optional): Clips the unscaled update at
            ``clip_threshold``. Default: ``1.0``.
        decay_rate (float, optional): Coefficient for the running average of
            the squared gradient. Default: ``-0.8``.
        beta_1 (float, optional): If set to a value bigger than zero then
            first moment will be used. Default: ``None``.
        weight_decay (float, optional): The weight decay :math:`\lambda`.
            Default: ``0.0``.
        scale_parameter (bool, optional): If set to ``True`` the learning rate
            will be scaled by :math:`\max(\epsilon_2, \text{RMS}(w_{t-1}))`.
            Default: ``True``.
        relative_step (bool, optional): If set to ``True`` the
            ``learning_rate`` is ignored and the relative step size
            :math:`\min(10^{-2}, 1/\sqrt{t})` is used. Default: ``True``.
        warmup_init (bool, optional): If set to ``True`` the relative step
            size is :math:`\min(10^{-6} t, 1/\sqrt{t})`. Default: ``False``.
    """

    def __init__(
        self,
        learning_rate: Optional[LearningRate] = None,
        eps: Tuple[float, float] = (1e-30, 1e-3),
        clip_threshold: float = 1.0,
        decay_rate: float = -0.8,
        beta_1: Optional[float] = None,
        weight_decay: float = 0.0,
        scale_parameter: bool = True,
        relative_step: bool = True,
        warmup_init: bool = False,
    ):
        if learning_rate is None and not relative_step:
            raise ValueError(
                "[Adafactor] A learning_rate is required when relative_step is False."
            )
        super().__init__()
        if learning_rate is not None:
            self._maybe_schedule("learning_rate", learning_rate)
        self.eps = eps
        self.clip_threshold = clip_threshold
        self.decay_rate = decay_rate
        self.beta_1 = beta_1
        self.weight_decay = weight_decay
        self.scale_parameter = scale_parameter
        self.relative_step = relative_step
        self.warmup_init = warmup_init

    def init_single(self, parameter: mx.array, state: dict):
        if parameter.ndim >= 2:
            shape = parameter.shape
            state["exp_avg_sq_row"] = mx.zeros(shape[:-1], parameter.dtype)
            state["exp_avg_sq_col"] = mx.zeros(shape[:-2] + shape[-1:], parameter.dtype)
        else:
            state["exp_avg_sq"] = mx.zeros_like(parameter)
        if self.beta_1 is not None:
            state["exp_avg"] = mx.zeros_like(parameter)

    def _step_size(self, step: mx.array, parameter: mx.array):
        if self.relative_step:
            min_step = 1e-6 * step if self.warmup_init else 1e-2
            size = mx.minimum(min_step, mx.rsqrt(step))
        else:
            size = self.learning_rate
        if self.scale_parameter:
            size = mx.maximum(self.eps[1], _rms(parameter)) * size
        return size

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: dict):
        step = self.step.astype(mx.float32)
        dtype = gradient.dtype
        lr = self._step_size(step, parameter).astype(dtype)
        beta_2 = (1.0 - step**self.decay_rate).astype(dtype)
        update = mx.square(gradient) + self.eps[0]
        if "exp_avg_sq_row" in state:
            row = beta_2 * state["exp_avg_sq_row"] + (1 - beta_2) * mx.mean(update, axis=-1)
            col = beta_2 * state["exp_avg_sq_col"] + (1 - beta_2) * mx.mean(update, axis=-2)
            state["exp_avg_sq_row"] = row
            state["exp_avg_sq_col"] = col
            row_factor = mx.rsqrt(row / mx.mean(row, axis=-1, keepdims=True))
            col_factor = mx.rsqrt(col)
            update = mx.expand_dims(row_factor, -1) * mx.expand_dims(col_factor, -2)
        else:
            v = beta_2 * state["exp_avg_sq"] + (1 - beta_2) * update
            state["exp_avg_sq"] = v
            update = mx.rsqrt(v)
        update = update * gradient
        update = update / mx.maximum(1.0, _rms(update) / self.clip_threshold)
        update = lr * update
        if self.beta_1 is not None:
            update = self.beta_1 * state["exp_avg"] + (1 - self.beta_1) * update
            state["exp_avg"] = update
        if self.weight_decay != 0:
            parameter = parameter - self.weight_decay * lr * parameter
        return parameter - update


def _rms(x: mx.array):
    return mx.sqrt(mx.mean(mx.square(x)))


class Muon(Optimizer):
    r"""The Muon optimizer (MomentUm Orthogonalized by Newton-Schulz).

    Our Muon optimizer follows the original implementation: `Muon: An
    optimizer for hidden layers in neural networks
    <https://kellerjordan.github.io/posts/muon/>`_. For parameters with two or
    more dimensions the momentum update is orthogonalized with a quintic
    Newton-Schulz iteration (dimensions after the first are flattened) and the
    learning rate is scaled by :math:`\sqrt{\max(1, \text{rows}/\text{cols})}`;
    other parameters get plain momentum updates.

    Note:
        Muon may be sub-optimal for the embedding layer, the final fully
        connected layer, or any 0D/1D parameters. Those should be optimized
        by a different method (e.g., AdamW).

    Args:
        learning_rate (float or callable): The learning rate.
        momentum (float, optional): The momentum strength. Default: ``0.95``
        weight_decay (float, optional): The weight decay (L2 penalty).
            Default: ``0.01``
        nesterov (bool, optional): Enables Nesterov momentum. Recommended for
            better performance. Default: ``True``
        ns_steps (int, optional): Number of Newton-Schulz iteration steps for
            orthogonalization. Default: ``5``
    """

    def __init__(
        self,
        learning_rate: LearningRate,
        momentum: float = 0.95,
        weight_decay: float = 0.01,
        nesterov: bool = True,
        ns_steps: int = 5,
    ):
        super().__init__()
        self._maybe_schedule("learning_rate", learning_rate)
        self.momentum = momentum
        self.weight_decay = weight_decay
        self.nesterov = nesterov
        self.ns_steps = ns_steps

    def init_single(self, parameter: mx.array, state: dict):
        state["v"] = mx.zeros_like(parameter)

    def apply_single(self, gradient: mx.array, parameter: mx.array, state: dict):
        mu = self.momentum
        if self.weight_decay != 0:
            gradient = gradient + self.weight_decay * parameter
        v = mu * state["v"] + (1 - mu) * gradient
        state["v"] = v
        update = (1 - mu) * gradient + mu * v if self.nesterov else v
        lr = self._lr(gradient)
        if update.ndim >= 2:
            shape = update.shape
            matrix = update.reshape(shape[0], -1)
            rows, cols = matrix.shape
            update = _newton_schulz(matrix, self.ns_steps).reshape(shape)
            lr = lr * math.sqrt(max(1.0, rows / cols))
        return parameter - lr * update


def _newton_schulz(g: mx.array, steps: int):
    """Approximately orthogonalizes the matrix ``g`` (maps its singular values
    near 1) with the quintic Newton-Schulz iteration of Muon."""
    a, b, c = 3.4445, -4.7750, 2.0315
    tall = g.shape[0] > g.shape[1]
    # Iterate on the wide orientation: X X^T is then the smaller Gram matrix.
    x = g.T if tall else g
    x = x / (mx.sqrt(mx.sum(mx.square(x))) + 1e-7)
    for _ in range(steps):
        gram = x @ x.T
        x = a * x + (b * gram + c * (gram @ gram)) @ x
    return x.T if tall else x


class MultiOptimizer(Optimizer):
    """Wraps a list of optimizers with corresponding weight predicates/filters
    to make it easy to use different optimizers for different weights.

    The predicates take the full "path" of the weight (e.g.
    ``"layers.0.weight"``) and the weight itself and return ``True`` if it
    should be considered for this optimizer. The last optimizer in the list is
    a fallback optimizer and no predicate should be given for it.

    Args:
        optimizers (list[Optimizer]): A list of optimizers to delegate to
        filters (list[Callable[[str, array], bool]]): A list of predicates that
            should be one less than the provided optimizers.
    """

    def __init__(self, optimizers, filters: list = []):
        if len(optimizers) == 0:
            raise ValueError("[MultiOptimizer] At least one optimizer is required.")
        if len(filters) != len(optimizers) - 1:
            raise ValueError(
                f"[MultiOptimizer] Given {len(filters)} filters for "
                f"{len(optimizers)} optimizers; expected {len(optimizers) - 1}."
            )
        super().__init__()
        self.optimizers = list(optimizers)
        self.filters = list(filters)

    def _split(self, tree, parameters):
        """Splits the leaves of ``tree`` into one tree per optimizer; each
        predicate sees the path and the parameter at that path."""
        weights = dict(tree_flatten(parameters))
        parts = [[] for _ in self.optimizers]
        for path, leaf in tree_flatten(tree):
            weight = weights.get(path, leaf)
            index = next(
                (i for i, f in enumerate(self.filters) if f(path, weight)),
                len(self.filters),
            )
            parts[index].append((path, leaf))
        return [tree_unflatten(part) for part in parts]

    def init(self, parameters: dict):
        for optimizer, part in zip(self.optimizers, self._split(parameters, parameters)):
            optimizer.init(part)

    def apply_gradients(self, gradients: dict, parameters: dict):
        updated = {}
        for optimizer, part in zip(self.optimizers, self._split(gradients, parameters)):
            updated.update(tree_flatten(optimizer.apply_gradients(part, parameters)))
        # Rebuild in the gradients' own order and structure.
        return tree_unflatten([(path, updated[path]) for path, _ in tree_flatten(gradients)])

    @property
    def state(self):
        """The states of the wrapped optimizers, as ``{"states": [...]}``."""
        return {"states": [o.state for o in self.optimizers]}

    @state.setter
    def state(self, state: dict):
        if "states" not in state or len(state["states"]) != len(self.optimizers):
            raise ValueError(
                "[MultiOptimizer] The state must be a dict with one entry in "
                f'"states" per optimizer ({len(self.optimizers)}).'
            )
        for optimizer, s in zip(self.optimizers, state["states"]):
            optimizer.state = s

    @property
    def step(self):
        return self.optimizers[0].step

    @property
    def learning_rate(self):
        return self.optimizers[0].learning_rate

    @learning_rate.setter
    def learning_rate(self, learning_rate):
        self.optimizers[0].learning_rate = learning_rate


def clip_grad_norm(grads, max_norm: float):
    """Clips the global norm of the gradients.

    This function ensures that the global norm of the gradients does not
    exceed ``max_norm``. It scales down the gradients proportionally if their
    norm is greater than ``max_norm``.

    Example:
        >>> grads = {"w1": mx.array([2, 3]), "w2": mx.array([1])}
        >>> clipped_grads, total_norm = clip_grad_norm(grads, max_norm=2.0)

    Args:
        grads (dict): A dictionary containing the gradient arrays.
        max_norm (float): The maximum allowed global norm of the gradients.

    Returns:
        (dict, array): The possibly rescaled gradients and the original
        gradient norm.
    """

    total_norm = mx.sqrt(square_norm(grads))
    return rescale_to_norm(grads, total_norm, max_norm), total_norm


def square_norm(grads):
    """The sum of the squares of every gradient, accumulated in at least float32 (half
    precision squares overflow)."""

    def add_square_norm(total, g):
        if g.dtype != mx.float64:
            g = g.astype(mx.float32)
        return total + mx.sum(mx.square(g))

    return tree_reduce(add_square_norm, grads, mx.array(0.0))


def rescale_to_norm(grads, total_norm, max_norm: float):
    """``grads`` scaled down so that a global norm of ``total_norm`` becomes at most
    ``max_norm`` (clip_grad_norm's second half)."""
    scale = mx.minimum(max_norm / (total_norm + 1e-6), 1.0)

    def rescale(g):
        # Floating gradients keep their dtype; integer ones become floats.
        if mx.issubdtype(g.dtype, mx.floating):
            return g * scale.astype(g.dtype)
        return g * scale

    return tree_map(rescale, grads)
