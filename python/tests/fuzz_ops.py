"""Property-based op fuzzer (issue 12): every public function of mlx.core and its namespaces
(linalg, fft, random, fast, ...) is called with inputs drawn by hypothesis: arrays of random
shapes (0-size, 1, high rank) and dtypes with extreme values, axes in and out of range,
repeated and negative, shapes with negative or huge dimensions, wrong Python types, extreme
scalars. Every call must compute (its outputs are evaluated and printed) or raise a clean
Python exception; a crash, abort or hang ends the process.

Run by test_fuzz_ops.py in a subprocess (so a crash is a test failure that names the call):
    python fuzz_ops.py [--examples N] [--only NAME,...] [--log FILE]
The last line printed is a JSON summary: calls made, per op family, outcomes."""
import argparse
import faulthandler
import json
import os
import re
import sys
import warnings

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mlx.core as mx

NAMESPACES = ["", "linalg", "fft", "random", "fast", "metal", "cuda", "distributed"]
# Functions that touch files, global settings or other processes: not fuzzed.
SKIP = re.compile(
    r"^(save.*|load|export_.*|import_function|exporter|set_.*|.*start_capture|.*stop_capture|"
    r"distributed\.(init|send|recv.*|all_.*|sum_scatter)|seed|disable_compile|enable_compile|"
    r"random\.seed|.*metal_kernel|.*cuda_kernel|precompiled_cuda_kernel)$"
)
# The exceptions a wrong input may raise.
CLEAN = (ValueError, TypeError, IndexError, RuntimeError, MemoryError, OverflowError,
         ZeroDivisionError, NotImplementedError, KeyError, AttributeError, BufferError)

DTYPES = [mx.float32, mx.int32, mx.bool_, mx.uint8, mx.uint16, mx.uint32, mx.uint64, mx.int8,
          mx.int16, mx.int64, mx.float16, mx.bfloat16, mx.float64, mx.complex64]
NP_OF = {mx.bool_: np.bool_, mx.uint8: np.uint8, mx.uint16: np.uint16, mx.uint32: np.uint32,
         mx.uint64: np.uint64, mx.int8: np.int8, mx.int16: np.int16, mx.int32: np.int32,
         mx.int64: np.int64, mx.float16: np.float16, mx.bfloat16: np.float32,
         mx.float32: np.float32, mx.float64: np.float64, mx.complex64: np.complex64}
EXTREME_FLOATS = [0.0, -0.0, 1.0, -1.0, float("nan"), float("inf"), float("-inf"), 1e38, -1e38,
                  1e-45, 3.4e38, 1e308, 65504.0]
EXTREME_INTS = [0, 1, -1, 2, 3, 7, -7, 127, 255, 2**15, 2**31 - 1, -(2**31), 2**32, 2**63 - 1,
                -(2**63), 2**64, 10**30]


def signatures():
    """(qualified name, function, [(param, annotation, kind, has_default)]) for each op."""
    with open(os.path.join(os.path.dirname(__file__), "data", "mlx_api.json")) as f:
        api = json.load(f)["modules"]
    ops = []
    for ns in NAMESPACES:
        mod = mx if not ns else getattr(mx, ns, None)
        if mod is None:
            continue
        listed = api.get("mlx.core" + ("." + ns if ns else ""), {})
        for name in sorted(dir(mod)):
            if name.startswith("_"):
                continue
            fn = getattr(mod, name)
            qual = (ns + "." if ns else "") + name
            if isinstance(fn, type) or not callable(fn) or SKIP.match(qual) or SKIP.match(name):
                continue
            entry = listed.get(name, {})
            params = parse(entry.get("signature", [""])[0]) if entry.get("signature") else None
            ops.append((qual, fn, params))
    return ops


def split_top(s):
    parts, depth, cur = [], 0, ""
    for c in s:
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        if c == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += c
    if cur.strip():
        parts.append(cur)
    return [p.strip() for p in parts]


def parse(sig):
    m = re.match(r"def \w+\((.*)\)( -> .*)?$", sig)
    if not m:
        return None
    kind, params = "positional", []
    parts = split_top(m.group(1))
    if "/" in parts:
        kind = "posonly"
    for p in parts:
        if p == "/":
            kind = "positional"
            continue
        if p == "*":
            kind = "keyword"
            continue
        if p.startswith("*"):
            kind = "keyword"
            continue
        name, _, rest = p.partition(":")
        ann, _, default = rest.partition("=")
        if "=" in name:
            name, _, default = name.partition("=")
        params.append((name.strip(), ann.strip(), kind, bool(default.strip())))
    return params


# Strategies ---------------------------------------------------------------------------------


@st.composite
def arrays(draw, dtypes=DTYPES, max_rank=6):
    dtype = draw(st.sampled_from(dtypes))
    rank = draw(st.sampled_from([r for r in (2, 1, 0, 3, 4, 6) if r <= max_rank]))
    dims = [3, 2, 1, 4, 0, 5, 1] + ([17, 64, 1000] if rank <= 2 else [])
    shape = tuple(draw(st.sampled_from(dims)) for _ in range(rank))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape)) if shape else 1
    mode = draw(st.sampled_from(["normal", "small_ints", "extreme", "positive"]))
    if mode == "normal":
        values = rng.standard_normal(n) * 3
    elif mode == "small_ints":
        values = rng.integers(-4, 5, n).astype(np.float64)
    elif mode == "positive":
        values = rng.uniform(0.1, 4, n)
    else:
        values = rng.choice(np.array(EXTREME_FLOATS), n)
    if dtype == mx.complex64:
        values = values + 1j * rng.standard_normal(n)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if np.dtype(NP_OF[dtype]).kind in "iub":
            values = np.nan_to_num(values, nan=0, posinf=100, neginf=-100).clip(-1e6, 1e6)
        data = values.astype(NP_OF[dtype]).reshape(shape)
    a = mx.array(data, dtype=dtype)
    if draw(st.integers(0, 5)) == 0 and a.ndim >= 2:
        a = mx.swapaxes(a, 0, 1)  # a non-contiguous view
    if draw(st.integers(0, 7)) == 0 and a.ndim >= 1 and a.shape[-1] > 1:
        a = a[..., ::-1]
    return a


def axes_strategy():
    return st.one_of(st.integers(-6, 6), st.none(),
                     st.lists(st.integers(-5, 5), max_size=4).map(tuple))


def shape_strategy():
    return st.lists(
        st.one_of(st.integers(0, 5), st.sampled_from([-1, -3, 2**31, 2**40, 10**6])),
        max_size=5,
    ).map(tuple)


HOSTILE = st.one_of(
    st.sampled_from([None, "", "float32", "a", b"x", object(), [1, [2, 3]], {"a": 1}, (),
                     mx.cpu, mx.float32, [], [[]], 1j, float("nan"), 2**70, -(2**70),
                     [mx.zeros(2), 3], slice(1, 2), Ellipsis]),
    st.integers(), st.floats(allow_nan=True), st.booleans(), st.text(max_size=4),
)


def scalar_strategy():
    return st.one_of(st.sampled_from(EXTREME_INTS), st.sampled_from(EXTREME_FLOATS),
                     st.booleans(), st.complex_numbers(max_magnitude=1e3, allow_nan=False))


def callable_strategy():
    return st.sampled_from([
        lambda *a, **k: a[0] if a else mx.array(0.0),
        lambda *a, **k: mx.sum(a[0]) if a and isinstance(a[0], mx.array) else mx.array(1.0),
        lambda *a, **k: "not an array",
        lambda *a, **k: (_ for _ in ()).throw(ValueError("raised by the function")),
    ])


ARRAY_NAMES = {"a", "b", "x", "y", "array", "arr", "input", "condition", "x1", "x2", "w", "q",
               "k", "v", "keys", "queries", "values", "scales", "biases", "indices", "updates",
               "mask", "weight", "bias", "key", "vals", "data", "c", "m", "v_", "val", "tangents"}
INT_NAMES = {"n", "num", "N", "M", "bits", "group_size", "decimals", "offset", "ord", "kth",
             "start", "stop", "step", "base", "num_splits", "repeats", "dims", "nperseg"}


def param_strategy(name, ann):
    if name in ("stream", "s"):
        return st.sampled_from([None, mx.cpu, mx.default_stream(mx.cpu)])
    if name == "dtype" or "Dtype" in ann:
        return st.one_of(st.sampled_from(DTYPES), st.none())
    if name in ("axis", "dim", "axis1", "axis2", "source", "destination") or name == "axes":
        return axes_strategy()
    if name in ("shape", "newshape", "s", "sizes", "strides", "start_indices", "padding"):
        return shape_strategy()
    if name in ("keepdims", "inplace", "stable", "upper", "traditional", "return_metadata"):
        return st.booleans()
    if name in ("arrays", "inputs", "primals", "cotangents", "tangents", "outputs") or (
        "list[array]" in ann or "Sequence[array]" in ann
    ):
        return st.lists(arrays(max_rank=3), max_size=4)
    if name in ARRAY_NAMES or "array" in ann:
        return st.one_of(arrays(), arrays(), scalar_strategy())
    if "Callable" in ann or name in ("fun", "f", "func", "fn"):
        return callable_strategy()
    if name in INT_NAMES or ann.startswith("int"):
        return st.one_of(st.integers(1, 4), st.sampled_from(EXTREME_INTS), st.integers(-8, 8))
    if "Sequence[int]" in ann or "tuple[int" in ann:
        return st.one_of(shape_strategy(), st.integers(-8, 8))
    if ann.startswith("float") or "float" in ann:
        return st.one_of(st.sampled_from(EXTREME_FLOATS), st.floats(-10, 10))
    if ann.startswith("bool"):
        return st.booleans()
    if "str" in ann:
        return st.sampled_from(["constant", "edge", "ij", "xy", "fro", "nuc", "left", "right",
                                "same", "valid", "full", "float32", "causal", "", "nonsense"])
    return st.one_of(arrays(), scalar_strategy(), HOSTILE)


def index_strategy():
    one = st.one_of(
        st.integers(-6, 6), st.sampled_from([2**31, -(2**31) - 1, 2**63 - 1, 2**70]),
        st.builds(slice, st.one_of(st.none(), st.integers(-8, 8), st.just(2**62)),
                  st.one_of(st.none(), st.integers(-8, 8), st.just(-(2**62))),
                  st.one_of(st.none(), st.integers(-3, 3), st.just(2**40))),
        st.none(), st.just(Ellipsis), st.lists(st.integers(-6, 6), max_size=4),
        arrays(dtypes=[mx.int32, mx.bool_, mx.uint8, mx.int64], max_rank=2), HOSTILE,
    )
    return st.one_of(one, st.lists(one, max_size=5).map(tuple))


# Array methods with indices (getitem, setitem, .at[] updates) fuzzed like functions.
def _getitem(a, idx):
    return a[idx]


def _setitem(a, idx, v):
    a = mx.array(a)
    a[idx] = v
    return a


def _at_add(a, idx, v):
    return a.at[idx].add(v)


INDEXING = [("array.__getitem__", _getitem, 2), ("array.__setitem__", _setitem, 3),
            ("array.at.add", _at_add, 3)]


@st.composite
def index_args(draw, nargs):
    args = [draw(arrays()), draw(index_strategy())]
    if nargs == 3:
        args.append(draw(st.one_of(arrays(max_rank=2), scalar_strategy(), HOSTILE)))
    return args, {}


@st.composite
def call_args(draw, params):
    # Hypothesis starts from (and shrinks towards) small draws: 0 means "an ordinary value".
    args, kwargs = [], {}
    if params is None:  # unlisted: a few positional values of any kind
        for _ in range(draw(st.integers(0, 3))):
            args.append(draw(st.one_of(arrays(), scalar_strategy(), HOSTILE)))
        return args, kwargs
    positional = True  # false once an optional positional argument was left out
    for name, ann, kind, has_default in params:
        if has_default and draw(st.integers(0, 2)) == 2:
            positional = False  # omit an optional argument
            continue
        if kind == "posonly" and not positional:
            continue
        hostile = draw(st.integers(0, 11)) == 11
        value = draw(HOSTILE if hostile else param_strategy(name, ann))
        if name == "stream":
            kwargs[name] = value
        elif kind == "posonly" or (kind == "positional" and positional):
            args.append(value)
        else:
            kwargs[name] = value
    if draw(st.integers(0, 19)) == 19:
        args.append(draw(HOSTILE))  # one argument too many
    return args, kwargs


# Driver -------------------------------------------------------------------------------------


def arrays_in(out, found, depth=0):
    if depth > 4:
        return found
    if isinstance(out, mx.array):
        found.append(out)
    elif isinstance(out, (list, tuple)):
        for o in out:
            arrays_in(o, found, depth + 1)
    elif isinstance(out, dict):
        for o in out.values():
            arrays_in(o, found, depth + 1)
    return found


class Stats:
    def __init__(self):
        self.calls = 0
        self.raised = 0
        self.computed = 0
        self.per_family = {}
        self.per_exception = {}
        self.per_op = {}  # calls, computed


def family(qual):
    return qual.split(".")[0] if "." in qual else "core"


def call_once(qual, fn, args, kwargs, stats, log):
    if log:
        log.write("%s %r %r\n" % (qual, [describe(a) for a in args],
                                  {k: describe(v) for k, v in kwargs.items()}))
        log.flush()
    stats.calls += 1
    stats.per_op.setdefault(qual, [0, 0])[0] += 1
    stats.per_family[family(qual)] = stats.per_family.get(family(qual), 0) + 1
    faulthandler.dump_traceback_later(120, exit=True)  # a hang ends the process, loudly
    try:
        out = fn(*args, **kwargs)
        found = arrays_in(out, [])
        mx.eval(found)
        for a in found:
            if a.size <= 256:
                repr(a)
                if a.dtype != mx.bfloat16:
                    np.asarray(a)
        stats.computed += 1
        stats.per_op[qual][1] += 1
    except CLEAN as e:
        stats.raised += 1
        key = type(e).__name__
        stats.per_exception[key] = stats.per_exception.get(key, 0) + 1
    finally:
        faulthandler.cancel_dump_traceback_later()


def describe(v):
    if isinstance(v, mx.array):
        return "array(%s, %s)" % (v.shape, v.dtype)
    if isinstance(v, list):
        return [describe(x) for x in v]
    return repr(v)[:60]


def fuzz(examples, only=None, log=None):
    stats = Stats()
    mx.set_memory_limit(1 << 30)  # an op that asks for far more than its inputs raises
    for qual, fn, params in signatures():
        if only and qual not in only:
            continue

        @settings(max_examples=examples, derandomize=True, database=None, deadline=None,
                  suppress_health_check=list(HealthCheck), print_blob=False)
        @given(call_args(params))
        def run(ca):
            call_once(qual, fn, ca[0], ca[1], stats, log)

        run()
        mx.synchronize()
    for qual, fn, nargs in INDEXING:
        if only and qual not in only:
            continue

        @settings(max_examples=examples * 5, derandomize=True, database=None, deadline=None,
                  suppress_health_check=list(HealthCheck), print_blob=False)
        @given(index_args(nargs))
        def run_index(ca):
            call_once(qual, fn, ca[0], ca[1], stats, log)

        run_index()
    return stats


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--examples", type=int, default=20)
    parser.add_argument("--only", default="")
    parser.add_argument("--log", default="")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--never-computed", action="store_true")
    opts = parser.parse_args()
    if opts.list:
        for qual, _, params in signatures():
            print(qual, "(listed)" if params is not None else "(unlisted)")
        return
    faulthandler.enable()
    log = open(opts.log, "w") if opts.log else None
    stats = fuzz(opts.examples, set(filter(None, opts.only.split(","))), log)
    if opts.never_computed:
        print(sorted(q for q, (c, ok) in stats.per_op.items() if ok == 0))
    print(json.dumps({"ops": len(signatures()) + len(INDEXING), "calls": stats.calls,
                      "computed": stats.computed, "raised": stats.raised,
                      "per_family": stats.per_family, "per_exception": stats.per_exception,
                      "crashed": 0}))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
