"""The public API against MLX's: every name of data/mlx_api.json (a copy of MLX 0.32.4's
surface: names, kinds and signatures) must exist, and every function must take every parameter
MLX's takes, so that the count cannot regress. Names another open issue owns are listed in
OWNED_ELSEWHERE with the issue; when one lands, remove its names here and the test keeps them."""
import enum
import importlib
import inspect
import json
import os
import re

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REFERENCE = json.load(open(os.path.join(HERE, "data", "mlx_api.json")))

# Issue 14 (convolutions, FFT, quantization, export, GGUF) owns these.
_ISSUE_14 = {
    "mlx.core": (
        "conv1d conv2d conv3d conv_general conv_transpose1d conv_transpose2d conv_transpose3d "
        "convolve fft"
    ),
    "mlx.core.fft": "*",
    "mlx.nn": (
        "AvgPool1d AvgPool2d AvgPool3d Conv1d Conv2d Conv3d ConvTranspose1d ConvTranspose2d "
        "ConvTranspose3d MaxPool1d MaxPool2d MaxPool3d"
    ),
}
OWNED_ELSEWHERE = {ns: (None if v == "*" else set(v.split())) for ns, v in _ISSUE_14.items()}


def _owned(ns, name):
    if ns not in OWNED_ELSEWHERE:
        return False
    names = OWNED_ELSEWHERE[ns]
    return names is None or name in names


def _params(sig):
    m = re.search(r"\((.*)\)", sig, re.S)
    if not m:
        return set()
    body, depth, cur, parts = m.group(1), 0, "", []
    for ch in body:
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    names = set()
    for p in parts:
        n = re.split(r"[:=]", p.strip().lstrip("*"))[0].strip()
        if n and n not in ("/", "self", "cls") and re.match(r"^\w+$", n):
            names.add(n)
    return names


def _ours(obj):
    nb = getattr(obj, "__nb_signature__", None)
    if nb:
        return [s[0] for s in nb]
    try:
        return ["def f%s" % inspect.signature(obj)]
    except (TypeError, ValueError):
        return []


def _resolve(path):
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for p in parts[i:]:
            obj = getattr(obj, p)
        return obj
    raise ImportError(path)


ENTRIES = [
    (ns, name, d)
    for ns, names in sorted(REFERENCE["modules"].items())
    for name, d in sorted(names.items())
    if not _owned(ns, name)
]


NAMESPACES = [ns for ns in sorted(REFERENCE["modules"]) if OWNED_ELSEWHERE.get(ns, set()) is not None]


def test_reference_copy_is_whole():
    assert REFERENCE["reference"].startswith("MLX 0.32")
    assert len(ENTRIES) > 700


@pytest.mark.parametrize("ns", NAMESPACES)
def test_every_name_exists(ns):
    obj = _resolve(ns)
    missing = [n for n in REFERENCE["modules"][ns] if not _owned(ns, n) and not hasattr(obj, n)]
    assert not missing, f"{ns} lacks {missing}"


@pytest.mark.parametrize("ns", NAMESPACES)
def test_every_parameter_exists(ns):
    obj = _resolve(ns)
    differ = []
    for name, d in REFERENCE["modules"][ns].items():
        if _owned(ns, name) or name.startswith("__") or not d.get("signature"):
            continue
        if d.get("kind") not in ("function", "class"):
            continue
        target = getattr(obj, name)
        if isinstance(target, type) and issubclass(target, enum.Enum):
            continue  # Enum's own call signature changes between Python versions
        ours = _ours(target)
        if not ours:
            continue
        want = set().union(*(_params(s) for s in d["signature"]))
        mine = set().union(*(_params(s) for s in ours))
        if want - mine:
            differ.append(f"{name} lacks {sorted(want - mine)}")
    assert not differ, f"{ns}: " + "; ".join(differ)


def test_constants_have_mlx_values():
    import math

    import mlx.core as mx

    consts = {n: d for n, d in REFERENCE["modules"]["mlx.core"].items() if d["kind"] == "constant"}
    assert set(consts) >= {"e", "pi", "inf", "nan", "newaxis", "euler_gamma"}
    for name, d in consts.items():
        value = getattr(mx, name)
        assert type(value).__name__ == d["type"], name
        if d["type"] == "float" and not math.isnan(value):
            assert value == float(d["repr"]), name
    assert math.isnan(mx.nan) and mx.newaxis is None


def test_public_functions_have_docstrings():
    """help() must show more than the signature for every public function."""
    import mlx.core as mx

    missing = []
    for mod, prefix in [(mx, ""), (mx.linalg, "linalg."), (mx.random, "random."),
                        (mx.fast, "fast."), (mx.distributed, "distributed."), (mx.metal, "metal.")]:
        for name in dir(mod):
            obj = getattr(mod, name)
            if name.startswith("_") or inspect.ismodule(obj) or isinstance(obj, type):
                continue
            if not callable(obj):
                continue
            lines = [l for l in (obj.__doc__ or "").splitlines() if l.strip()]
            signatures = len(getattr(obj, "__nb_signature__", ()) or ())
            if len(lines) <= max(signatures, 1) - (0 if signatures else 1):
                missing.append(prefix + name)
    assert not missing, f"no docstring: {missing}"
