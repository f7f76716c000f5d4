"""nn.Module: a dict of parameters (mx.array) and sub-modules, nested in dicts and lists."""

import functools
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any, Optional, Union

import mlx.core as mx
from mlx.utils import tree_flatten, tree_unflatten


def _is_floating(dtype) -> bool:
    return mx.issubdtype(dtype, mx.floating)


def _cast_floating(x, dtype):
    if isinstance(x, mx.array) and _is_floating(x.dtype) and x.dtype != dtype:
        return x.astype(dtype)
    return x


_mixed_precision_dtype = mx._mixed_precision_dtype


def _active_compute_dtype(module):
    """The module's compute dtype, else the one of an active ``mx.mixed_precision`` context."""
    dtype = module._compute_dtype
    return dtype if dtype is not None else _mixed_precision_dtype()


def _with_compute_dtype(call):
    """Wraps a subclass's __call__ so that floating array arguments are cast to the module's
    compute dtype (see Module.set_compute_dtype, mx.mixed_precision); a no-op without one."""

    @functools.wraps(call)
    def wrapped(self, *args, **kwargs):
        dtype = _active_compute_dtype(self)
        if dtype is not None:
            args = tuple(_cast_floating(a, dtype) for a in args)
            kwargs = {k: _cast_floating(v, dtype) for k, v in kwargs.items()}
        return call(self, *args, **kwargs)

    wrapped._mlx_compute_dtype_wrapper = True
    return wrapped


def _unwrap(model, key, value, filter_fn, map_fn, is_leaf_fn):
    """filter_and_map's walk below one attribute: leaves are mapped, containers recursed,
    filtered-out entries of lists and dicts become {} (so list positions are kept)."""
    if is_leaf_fn(model, key, value):
        return map_fn(value)
    if isinstance(value, Module):
        return value.filter_and_map(filter_fn, map_fn, is_leaf_fn)
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            path = f"{key}.{k}"
            out[k] = (
                _unwrap(model, path, v, filter_fn, map_fn, is_leaf_fn)
                if filter_fn(model, path, v)
                else {}
            )
        return out
    if isinstance(value, list):
        out = []
        for i, v in enumerate(value):
            path = f"{key}.{i}"
            out.append(
                _unwrap(model, path, v, filter_fn, map_fn, is_leaf_fn)
                if filter_fn(model, path, v)
                else {}
            )
        return out
    raise RuntimeError(
        f"[Module] Unexpected leaf of type {type(value).__name__} at '{key}' while traversing "
        "the module."
    )


class Module(dict):
    """Base class of every layer and model.

    A Module is a ``dict``: assigning an ``mx.array``, a dict, a list or a tuple to an attribute
    stores it as an item (``self.weight = w`` is ``self["weight"] = w``), so sub-modules and
    parameters nested in lists and dicts form a tree that ``parameters()``, ``update()`` and the
    transforms walk. Other attributes (ints, floats, callables) are ordinary attributes.
    Arrays whose name starts with an underscore are state, not parameters.

    Parameters are trainable unless frozen (``freeze``); ``nn.value_and_grad`` differentiates
    with respect to the trainable ones. ``train()`` / ``eval()`` switch layers such as Dropout
    and BatchNorm. Subclasses must call ``super().__init__()`` first and define ``__call__``.

    Mixed precision: ``set_dtype(mx.bfloat16)`` converts the stored parameters (pure bf16);
    ``set_compute_dtype(mx.bfloat16)`` keeps them (and their gradients) in float32 but runs the
    forward pass in bf16, see :meth:`set_compute_dtype`.
    """

    __call__: Callable
    _compute_dtype = None

    def __init__(self):
        self._no_grad = set()
        self._training = True

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        call = cls.__dict__.get("__call__")
        if call is not None and not getattr(call, "_mlx_compute_dtype_wrapper", False):
            cls.__call__ = _with_compute_dtype(call)

    # ---- attribute <-> item mapping -------------------------------------------------------

    def __getattr__(self, key: str):
        if key in self:
            value = self[key]
            dtype = self._compute_dtype
            if dtype is None:
                dtype = _mixed_precision_dtype()
            return value if dtype is None else _cast_floating(value, dtype)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {key!r}")

    def __setattr__(self, key: str, value: Any):
        if isinstance(value, (mx.array, dict, list, tuple)):
            if key in self.__dict__:
                object.__delattr__(self, key)
            self[key] = value
        else:
            if key in self:
                del self[key]
            super().__setattr__(key, value)

    def __delattr__(self, key: str):
        if key in self:
            del self[key]
        else:
            super().__delattr__(key)

    # dict equality would compare arrays element-wise; modules are equal only to themselves.
    __eq__ = object.__eq__
    __ne__ = object.__ne__
    __hash__ = object.__hash__

    @property
    def training(self) -> bool:
        """True in training mode (the default), False after ``eval()``."""
        return self._training

    @property
    def state(self) -> "Module":
        """The module's state: the module itself, a dict of everything it holds (parameters,
        non-parameter arrays and sub-modules). Pass it to ``mx.compile`` as inputs/outputs."""
        return self

    @property
    def compute_dtype(self):
        """The dtype the forward pass runs in (see set_compute_dtype), or None."""
        return self._compute_dtype

    def _extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        children = tree_flatten(self.children(), is_leaf=self.is_module)
        head = f"{type(self).__name__}({self._extra_repr()}"
        if not children:
            return head + ")"
        lines = [f"({k}): {textwrap.indent(repr(m), '  ').lstrip()}" for k, m in children]
        return head + "\n" + textwrap.indent("\n".join(lines), "  ") + "\n)"

    # ---- traversal --------------------------------------------------------------------------

    @staticmethod
    def is_module(value) -> bool:
        return isinstance(value, Module)

    @staticmethod
    def valid_child_filter(module, key, value) -> bool:
        return isinstance(value, (dict, list))

    @staticmethod
    def valid_parameter_filter(module, key, value) -> bool:
        return isinstance(value, (dict, list, mx.array)) and not key.startswith("_")

    @staticmethod
    def trainable_parameter_filter(module, key, value) -> bool:
        return Module.valid_parameter_filter(module, key, value) and key not in module._no_grad

    def filter_and_map(
        self,
        filter_fn: Callable,
        map_fn: Optional[Callable] = None,
        is_leaf_fn: Optional[Callable] = None,
    ) -> dict:
        """Walks the module tree and returns, for the members that pass
        ``filter_fn(module, key, value)``, a tree of ``map_fn(leaf)``.

        Args:
            filter_fn: selects members (and members of nested lists and dicts, whose key is the
                dotted path below the module, e.g. ``"layers.0"``).
            map_fn: applied to every leaf (default: identity).
            is_leaf_fn: ``is_leaf_fn(module, key, value)`` decides what is a leaf (default:
                anything that is not a Module, dict or list).
        """
        map_fn = map_fn or (lambda x: x)
        is_leaf_fn = is_leaf_fn or (
            lambda m, k, v: not isinstance(v, (Module, dict, list))
        )
        return {
            k: _unwrap(self, k, v, filter_fn, map_fn, is_leaf_fn)
            for k, v in self.items()
            if filter_fn(self, k, v)
        }

    def parameters(self) -> dict:
        """All the arrays of the module tree (names starting with ``_`` excluded) as a tree
        of dicts and lists mirroring the modules."""
        return self.filter_and_map(self.valid_parameter_filter)

    def trainable_parameters(self) -> dict:
        """The parameters that are not frozen."""
        return self.filter_and_map(self.trainable_parameter_filter)

    def children(self) -> dict:
        """The direct sub-modules (also those inside lists and dicts), as a tree."""
        return self.filter_and_map(
            self.valid_child_filter, is_leaf_fn=lambda m, k, v: isinstance(v, Module)
        )

    def leaf_modules(self) -> dict:
        """The sub-modules that have no sub-modules themselves, as a tree."""

        def is_leaf_module(m, k, v):
            return isinstance(v, Module) and not tree_flatten(v.children(), is_leaf=self.is_module)

        return self.filter_and_map(self.valid_child_filter, is_leaf_fn=is_leaf_module)

    def apply_to_modules(self, apply_fn: Callable[[str, "Module"], Any]) -> "Module":
        """Calls ``apply_fn(path, module)`` on this module (path ``""``) and every sub-module
        (paths such as ``"layers.0.attention"``), parents before children."""
        stack = [("", self)]
        while stack:
            prefix, module = stack.pop()
            apply_fn(prefix, module)
            children = tree_flatten(
                module.children(), prefix=f".{prefix}" if prefix else "", is_leaf=self.is_module
            )
            stack.extend(reversed(children))
        return self

    def named_modules(self) -> list:
        """``(path, module)`` for this module (``""``) and every sub-module."""
        out = []
        self.apply_to_modules(lambda k, m: out.append((k, m)))
        return out

    def modules(self) -> list:
        """This module and every sub-module."""
        return [m for _, m in self.named_modules()]

    # ---- updates -------------------------------------------------------------------------

    def update(self, parameters: dict, strict: bool = True) -> "Module":
        """Replaces the parameters found in ``parameters`` (a full or partial tree like
        ``parameters()``). With ``strict`` every entry must name an existing array (ValueError
        otherwise). Returns the module."""

        def recurse(new, dst, path):
            for key, value in _items(new, dst, path, strict, "parameter"):
                current = dst[key]
                if isinstance(current, mx.array):
                    if _is_empty(value):
                        continue  # the placeholder of a filtered-out (e.g. frozen) entry
                    if strict and not isinstance(value, mx.array):
                        raise ValueError(
                            f"[Module.update] Expected an array for parameter '{path}{key}'; "
                            f"got {type(value).__name__}."
                        )
                    dst[key] = value
                elif isinstance(current, (dict, list)):
                    recurse(value, current, f"{path}{key}.")
                elif _is_empty(value):
                    continue  # the placeholder parameters() gives non-array entries (str, int)
                elif strict:
                    raise ValueError(
                        f"[Module.update] '{path}{key}' is not a parameter (it holds a "
                        f"{type(current).__name__})."
                    )

        recurse(parameters, self, "")
        return self

    def update_modules(self, modules: dict, strict: bool = True) -> "Module":
        """Replaces the sub-modules found in ``modules`` (a full or partial tree like
        ``children()``). With ``strict`` every entry must name an existing sub-module."""

        def recurse(new, dst, path):
            for key, value in _items(new, dst, path, strict, "sub-module"):
                current = dst[key]
                if _is_empty(value):
                    continue  # nothing to replace here (a placeholder for a non-module leaf)
                if isinstance(current, Module) and isinstance(value, Module):
                    dst[key] = value
                elif isinstance(current, (dict, list)) and (
                    not isinstance(current, Module) or isinstance(value, dict)
                ):
                    # A dict for a module replaces some of that module's own sub-modules.
                    recurse(value, current, f"{path}{key}.")
                elif strict:
                    raise ValueError(
                        f"[Module.update_modules] Cannot put a {type(value).__name__} in place of "
                        f"the {type(current).__name__} at '{path}{key}'."
                    )

        recurse(modules, self, "")
        return self

    def apply(self, map_fn: Callable, filter_fn: Optional[Callable] = None) -> "Module":
        """Replaces every parameter ``p`` selected by ``filter_fn`` (default: all parameters)
        with ``map_fn(p)``. Returns the module."""
        filter_fn = filter_fn or self.valid_parameter_filter
        self.update(self.filter_and_map(filter_fn, map_fn))
        return self

    def set_dtype(self, dtype, predicate: Optional[Callable] = _is_floating):
        """Converts the parameters whose dtype satisfies ``predicate`` (default: floating
        point) to ``dtype``, e.g. ``model.set_dtype(mx.bfloat16)`` for pure bf16 training."""
        predicate = predicate or (lambda _: True)
        self.apply(lambda x: x.astype(dtype) if predicate(x.dtype) else x)

    def set_compute_dtype(self, dtype, recurse: bool = True) -> "Module":
        """Mixed precision: run the forward pass in ``dtype`` while the parameters stay stored
        (and are trained) in their own dtype, typically float32.

        While a compute dtype is set on a module:

        - reading a floating parameter as an attribute (``self.weight`` inside ``__call__``)
          returns it cast to ``dtype`` (a differentiable ``astype``);
        - floating array arguments of its ``__call__`` are cast to ``dtype``.

        ``parameters()``, ``update()``, ``save_weights()`` and optimizers see the stored arrays,
        and ``nn.value_and_grad`` returns gradients in the stored dtype, since the gradient of
        the cast converts them back. Outputs are in ``dtype``: cast logits to float32 before a
        loss for an accurate reduction. Non-parameter arrays written back by a layer through
        attribute reads (e.g. running statistics) should be read with ``self["name"]``.
        Set the policy before ``mx.compile`` traces a function that calls the model: a compiled
        function replays its trace and does not see a later change.

        Example:
            >>> model = MLP(); model.set_compute_dtype(mx.bfloat16)   # params stay float32
            >>> loss_and_grad = nn.value_and_grad(model, loss_fn)     # grads are float32

        Args:
            dtype: a floating dtype such as ``mx.bfloat16``, or None to switch the policy off.
            recurse: also set it on every sub-module (default True).
        """
        if dtype is not None and not _is_floating(dtype):
            raise ValueError(f"[Module.set_compute_dtype] Expected a floating dtype; got {dtype}.")

        def set_policy(_, m):
            object.__setattr__(m, "_compute_dtype", dtype)

        if recurse:
            self.apply_to_modules(set_policy)
        else:
            set_policy("", self)
        return self

    # ---- freezing and modes ----------------------------------------------------------------

    def _validate_keys(self, keys, strict: bool) -> list:
        keys = [keys] if isinstance(keys, str) else list(keys)
        if strict:
            for k in keys:
                if k not in self:
                    raise KeyError(f"[Module] {type(self).__name__} has no member '{k}'.")
        return keys

    def _local_parameter_keys(self) -> list:
        local = self.filter_and_map(
            lambda m, k, v: not isinstance(v, Module) and m.valid_parameter_filter(m, k, v)
        )
        return [k for k, _ in tree_flatten(local)]

    def _freeze_local(self, keys, strict: bool):
        keys = self._local_parameter_keys() if keys is None else keys
        self._no_grad.update(self._validate_keys(keys, strict))

    def _unfreeze_local(self, keys, strict: bool):
        if keys is None:
            self._no_grad.clear()
        else:
            self._no_grad.difference_update(self._validate_keys(keys, strict))

    def freeze(
        self,
        *,
        recurse: bool = True,
        keys: Optional[Union[str, list]] = None,
        strict: bool = False,
    ) -> "Module":
        """Freezes parameters: they stay in ``parameters()`` but leave
        ``trainable_parameters()``, so no gradient is computed for them.

        Args:
            recurse: also freeze the sub-modules' parameters (default True).
            keys: names (or one name) of the parameters to freeze in each module, e.g.
                ``"bias"``; default all of them.
            strict: with keys, a module lacking one is a KeyError.
        """
        if recurse:
            self.apply_to_modules(lambda _, m: m._freeze_local(keys, strict))
        else:
            self._freeze_local(keys, strict)
        return self

    def unfreeze(
        self,
        *,
        recurse: bool = True,
        keys: Optional[Union[str, list]] = None,
        strict: bool = False,
    ) -> "Module":
        """Undoes ``freeze`` for all parameters or the named ``keys`` (same arguments)."""
        if recurse:
            self.apply_to_modules(lambda _, m: m._unfreeze_local(keys, strict))
        else:
            self._unfreeze_local(keys, strict)
        return self

    def train(self, mode: bool = True) -> "Module":
        """Sets training mode (``mode=False`` is evaluation mode) on the whole tree."""

        def set_mode(_, m):
            m._training = mode

        self.apply_to_modules(set_mode)
        return self

    def eval(self) -> "Module":
        """Sets evaluation mode on the whole tree (dropout off, BatchNorm running stats)."""
        return self.train(False)

    # ---- weights files ---------------------------------------------------------------------

    def load_weights(
        self, file_or_weights: Union[str, Path, list], strict: bool = True
    ) -> "Module":
        """Loads parameters from a ``.npz`` or ``.safetensors`` file or from a list of
        ``(dotted_name, array)`` pairs.

        With ``strict`` (default) the names must match the model's parameters exactly and the
        shapes must agree (ValueError otherwise); without it, only names present in the model
        are loaded and shapes are not checked.
        """
        weights = file_or_weights
        if isinstance(weights, (str, Path)):
            weights = list(mx.load(str(weights)).items())
        else:
            weights = list(weights)

        current = dict(tree_flatten(self.parameters()))
        new = dict(weights)
        if strict:
            extra = sorted(new.keys() - current.keys())
            if extra:
                raise ValueError(f"[load_weights] Received parameters not in the model: {extra}.")
            missing = sorted(current.keys() - new.keys())
            if missing:
                raise ValueError(f"[load_weights] Missing parameters: {missing}.")
            for name, value in current.items():
                if not isinstance(new[name], mx.array):
                    raise ValueError(
                        f"[load_weights] Expected an array for parameter '{name}'; got "
                        f"{type(new[name]).__name__}."
                    )
                if tuple(new[name].shape) != tuple(value.shape):
                    raise ValueError(
                        f"[load_weights] Expected shape {tuple(value.shape)} for parameter "
                        f"'{name}'; got {tuple(new[name].shape)}."
                    )
        else:
            new = {k: v for k, v in new.items() if k in current}
        if new:
            self.update(tree_unflatten(new), strict=False)
        return self

    def save_weights(self, file: Union[str, Path]):
        """Saves the parameters to ``file``; ``.npz`` uses ``mx.savez``, ``.safetensors``
        uses ``mx.save_safetensors``."""
        file = str(file)
        params = dict(tree_flatten(self.parameters()))
        if file.endswith(".npz"):
            mx.savez(file, **params)
        elif file.endswith(".safetensors"):
            mx.save_safetensors(file, params)
        else:
            raise ValueError(
                f"[save_weights] Unsupported file extension for '{file}'; use .npz or "
                ".safetensors."
            )

    def export(
        self,
        file: Union[str, Path],
        *args,
        optimize_memory: bool = True,
        shapeless: bool = False,
        metadata: Optional[str] = None,
        **kwargs,
    ):
        """Exports the module's forward pass with its current parameters to ``file``
        (through ``mx.export_function``): ``mx.import_function(file)`` runs it in any process,
        without the Python class. ``args`` and ``kwargs`` are example inputs (arrays), as for
        ``mx.export_function``.

        With ``optimize_memory`` (the default) the exported graph carries a memory plan: its
        steps are ordered so that fewer intermediate buffers are alive at once (the buffer
        cache reuses the ones freed early), and the imported function evaluates in that order,
        which lowers its peak memory.

        Example:
            >>> model.export("model.mlx", mx.zeros((1, 16)), optimize_memory=True)
            >>> forward = mx.import_function("model.mlx")
            >>> y, = forward(x)
        """
        if not args and not kwargs:
            raise ValueError(
                "[Module.export] Pass example inputs, e.g. model.export(path, mx.zeros((1, 16))): "
                "the forward pass is traced on their shapes and dtypes."
            )

        def forward(*a, **k):
            return self(*a, **k)

        mx._export_function(
            str(file),
            forward,
            args,
            kwargs,
            shapeless=shapeless,
            metadata=metadata,
            optimize_memory=optimize_memory,
        )


def _is_empty(value) -> bool:
    return isinstance(value, (dict, list)) and not isinstance(value, Module) and len(value) == 0


def _items(new, dst, path, strict, what):
    """(key, value) pairs of the update tree ``new`` that exist in ``dst``; entries that do not
    exist are errors with ``strict`` and skipped otherwise."""
    if isinstance(new, dict) and isinstance(dst, dict):
        for key, value in new.items():
            if key in dst:
                yield key, value
            elif strict:
                raise ValueError(f"[Module] The module has no {what} named '{path}{key}'.")
    elif isinstance(new, list) and isinstance(dst, list):
        if strict and len(new) > len(dst):
            raise ValueError(
                f"[Module] '{path.rstrip('.') or 'module'}' has {len(dst)} entries; got "
                f"{len(new)}."
            )
        yield from enumerate(new[: len(dst)])
    elif strict:
        raise ValueError(
            f"[Module] Cannot update '{path.rstrip('.') or 'module'}' "
            f"({type(dst).__name__}) from a {type(new).__name__}."
        )
