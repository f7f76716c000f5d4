"""mx.memory: see where memory goes, and find what leaks.

- ``start_trace(stacks=False)`` / ``stop_trace()`` (or ``with trace() as t:``) record every
  allocation, free, system allocation and release, retry and out-of-memory of every device's
  allocator, with size, device, stream, the op that asked and, with ``stacks=True``, the Python
  stack that created the op. The resulting :class:`Trace` exports to PyTorch's memory_viz
  pickle (``to_memory_viz``), a Chrome trace (``to_chrome_trace``) and a PNG timeline
  (``plot``, needs matplotlib).
- ``snapshot()`` lists the live buffers grouped by origin (op and stack).
- ``check_no_leaks()`` (context manager or decorator) fails with the origins of the buffers
  allocated inside it that are still alive after it.
- ``summary()`` is a printable table of the statistics of every device.

The statistics, limits and cache policy are in mlx.core: ``memory_stats``, ``memory_info``,
``set_cache_policy``, ``set_memory_pool_limit``, ``set_env``.
"""

import collections
import contextlib
import gc
import json
import pickle

import mlx.core as mx

_m = mx._memory

Event = collections.namedtuple(
    "Event", "seq time_ns kind address size requested op device stack stream cached active cache")
Event.__doc__ = """One allocator event of a trace.

kind: 'alloc', 'free', 'segment_alloc' (the system allocator was called), 'segment_free' (a
block went back to the system), 'retry' (a failed system allocation retried after releasing
the cache) or 'oom'. cached: for 'alloc', served from the cache; for 'free', kept in it.
active / cache: the device's active and cached bytes after the event. op: the primitive that
asked (None outside evaluation). stack: id of the creation stack (0: none; see Trace.frames)."""

Block = collections.namedtuple("Block", "device address size requested op stack stream serial")


def _frames(stack):
    return [tuple(f) for f in _m.stack_frames(stack)] if stack else []


def _origin_label(op, frames):
    """'Op at file:line (function)' for the innermost frame outside mlx itself."""
    name = op or "user (outside evaluation)"
    for filename, line, func in frames:
        if "/mlx/" not in filename.replace("\\", "/"):
            return f"{name} at {filename}:{line} ({func})"
    return name


def _fmt_bytes(n):
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{int(n)} B"


class Trace:
    """The events of a finished trace, in order, and the exports built from them."""

    def __init__(self, events, live_at_end):
        self.events = [Event(*e) for e in events]
        self.live_at_end = live_at_end  # snapshot() taken when the trace stopped
        self._frames = {}

    def frames(self, stack):
        """The frames (filename, line, function) of a stack id, innermost first."""
        if stack not in self._frames:
            self._frames[stack] = _frames(stack)
        return self._frames[stack]

    def devices(self):
        seen = []
        for e in self.events:
            if e.device not in seen:
                seen.append(e.device)
        return seen

    def unmatched_allocs(self):
        """The 'alloc' events whose block was not freed before the trace stopped."""
        live = {}
        for e in self.events:
            if e.kind == "alloc":
                live[(e.device, e.address)] = e
            elif e.kind == "free":
                live.pop((e.device, e.address), None)
        return sorted(live.values(), key=lambda e: e.seq)

    def peaks(self):
        """Per device: (peak active bytes, peak active + cache bytes) during the trace."""
        out = {}
        for e in self.events:
            a, f = out.get(e.device, (0, 0))
            out[e.device] = (max(a, e.active), max(f, e.active + e.cache))
        return out

    def summary(self):
        """Counts per kind, the peaks and the ops that allocated the most bytes."""
        kinds = collections.Counter(e.kind for e in self.events)
        by_op = collections.Counter()
        for e in self.events:
            if e.kind == "alloc":
                by_op[e.op or "user"] += e.size
        return {"events": dict(kinds), "peaks": self.peaks(), "top_ops": by_op.most_common(10)}

    # -- PyTorch memory_viz ------------------------------------------------------------------
    def memory_viz_snapshot(self):
        """The trace as the dict PyTorch's memory_viz page loads (pytorch.org/memory_viz):
        'segments' (the blocks held at the end: one segment per system allocation, as this
        allocator never splits blocks) and 'device_traces' (per device, its trace entries).
        Each frame list starts with the op that asked, then the Python stack."""
        devices = self.devices()
        for snap in self.live_at_end:
            if snap["device"] not in devices:
                devices.append(snap["device"])
        index = {d: i for i, d in enumerate(devices)}

        def frames(op, stack):
            top = [{"filename": "<mlx op>", "line": 0, "name": op or "user"}]
            return top + [{"filename": f, "line": l, "name": n} for f, l, n in self.frames(stack)]

        segments = []
        for snap in self.live_at_end:
            dev = index[snap["device"]]
            blocks = [(b, "active_allocated") for b in snap["live"]]
            blocks += [((addr, size, 0, None, 0, 0, -1), "inactive") for addr, size in snap["cached"]]
            for (addr, size, requested, op, stack, stream, _), state in blocks:
                active = size if state == "active_allocated" else 0
                segments.append({
                    "device": dev, "address": addr, "total_size": size,
                    "stream": max(stream, 0), "segment_type": "large" if size > 2**20 else "small",
                    "allocated_size": active, "active_size": active, "requested_size": requested,
                    "blocks": [{"address": addr, "size": size, "requested_size": requested,
                                "state": state,
                                "frames": frames(op, stack) if active else []}],
                })
        traces = [[] for _ in devices]
        actions = {"alloc": ["alloc"], "free": ["free_requested", "free_completed"],
                   "segment_alloc": ["segment_alloc"], "segment_free": ["segment_free"],
                   "oom": ["oom"]}
        for e in self.events:
            for action in actions.get(e.kind, ()):
                entry = {"action": action, "addr": e.address, "size": e.size,
                         "stream": max(e.stream, 0), "frames": frames(e.op, e.stack),
                         "time_us": e.time_ns // 1000}
                if action == "oom":
                    entry["device_free"] = max(self._limit(e.device) - e.active - e.cache, 0)
                traces[index[e.device]].append(entry)
        return {"segments": segments, "device_traces": traces}

    @staticmethod
    def _limit(device):
        return int(mx.memory_stats(device)["memory_limit"])

    def to_memory_viz(self, path):
        """Writes the memory_viz pickle (drag it onto pytorch.org/memory_viz)."""
        with open(path, "wb") as f:
            pickle.dump(self.memory_viz_snapshot(), f)

    # -- Chrome trace ------------------------------------------------------------------------
    def chrome_trace(self):
        """The trace in Chrome's trace event format (chrome://tracing, ui.perfetto.dev): a
        counter of active and cached bytes per device, each buffer as an async span from its
        allocation to its free named by its op, retries and OOMs as instant events."""
        out = []
        open_spans = {}
        pid = {d: i for i, d in enumerate(self.devices())}
        for d, p in pid.items():
            out.append({"name": "process_name", "ph": "M", "pid": p, "args": {"name": f"mlx {d}"}})
        for e in self.events:
            ts = e.time_ns / 1000.0
            p = pid[e.device]
            if e.kind in ("alloc", "free", "segment_free"):
                out.append({"name": "memory", "ph": "C", "ts": ts, "pid": p,
                            "args": {"active": e.active, "cache": e.cache}})
            if e.kind == "alloc":
                open_spans[(e.device, e.address)] = (e.seq, e.op or "user", max(e.stream, 0))
                out.append({"name": e.op or "user", "cat": "buffer", "ph": "b", "id": e.seq,
                            "ts": ts, "pid": p, "tid": max(e.stream, 0),
                            "args": {"size": e.size, "requested": e.requested,
                                     "address": hex(e.address), "cache_hit": e.cached}})
            elif e.kind == "free" and (e.device, e.address) in open_spans:
                # The end names the span as its begin did (the op that allocated it).
                seq, name, tid = open_spans.pop((e.device, e.address))
                out.append({"name": name, "cat": "buffer", "ph": "e", "id": seq, "ts": ts,
                            "pid": p, "tid": tid})
            elif e.kind in ("retry", "oom"):
                out.append({"name": e.kind, "ph": "i", "s": "p", "ts": ts, "pid": p,
                            "args": {"requested": e.requested, "op": e.op}})
        return {"traceEvents": out, "displayTimeUnit": "ms"}

    def to_chrome_trace(self, path):
        with open(path, "w") as f:
            json.dump(self.chrome_trace(), f)

    # -- PNG timeline ------------------------------------------------------------------------
    def plot(self, path, label=6, title=None):
        """Draws active and active + cache bytes over time per device, the peak, and labels the
        `label` largest allocations by op. Needs matplotlib (an optional dependency)."""
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError as e:
            raise ImportError("mx.memory.Trace.plot needs matplotlib (pip install matplotlib)") from e
        devices = self.devices()
        fig, axes = plt.subplots(len(devices) or 1, 1, figsize=(9, 3.2 * max(len(devices), 1)),
                                 squeeze=False)
        mib = 2.0**20
        for ax, device in zip(axes[:, 0], devices):
            ev = [e for e in self.events if e.device == device]
            t = [e.time_ns / 1e9 for e in ev]
            active = [e.active / mib for e in ev]
            held = [(e.active + e.cache) / mib for e in ev]
            ax.fill_between(t, active, step="post", alpha=0.5, color="tab:blue", label="active")
            ax.step(t, held, where="post", color="tab:orange", lw=1, label="active + cache")
            peak = max(active, default=0)
            ax.axhline(peak, color="tab:red", ls="--", lw=0.8, label=f"peak active {peak:.1f} MiB")
            # The largest allocation of each of the ops that allocate the most, labels stacked
            # so that they do not cover each other.
            largest = {}
            for e in ev:
                if e.kind == "alloc" and e.size > largest.get(e.op, (0, None))[0]:
                    largest[e.op] = (e.size, e)
            big = sorted(largest.values(), key=lambda p: -p[0])[:label]
            t_end = t[-1] if t else 1.0
            for k, (_, e) in enumerate(sorted(big, key=lambda p: p[1].time_ns)):
                ax.annotate(f"{e.op or 'user'} {_fmt_bytes(e.size)}",
                            (e.time_ns / 1e9, e.active / mib), fontsize=7,
                            xytext=(0.06 * t_end + 0.11 * t_end * k, 0.15 * peak * (1 + k % 3)),
                            textcoords="data", bbox={"boxstyle": "round", "fc": "w", "lw": 0.3},
                            arrowprops={"arrowstyle": "->", "lw": 0.5})
            ax.set_ylabel(f"{device} MiB")
            ax.legend(loc="upper right", fontsize=7)
        axes[-1, 0].set_xlabel("seconds since the trace started")
        if title:
            axes[0, 0].set_title(title)
        fig.tight_layout()
        fig.savefig(path, dpi=80)
        plt.close(fig)


def start_trace(stacks=False, max_events=None):
    """Starts recording allocator events on every device (discarding an unfinished trace).
    stacks=True also records the Python stack that created each op (slower). max_events keeps
    only the latest that many events (a ring, for long runs; None: all)."""
    if max_events is not None and max_events <= 0:
        raise ValueError(f"[start_trace] max_events must be positive or None, got {max_events}.")
    _m.start_trace(bool(stacks), int(max_events or 0))


def is_tracing():
    return _m.is_tracing()


def stop_trace():
    """Stops the trace and returns it as a :class:`Trace`."""
    events = _m.stop_trace()
    return Trace(events, _m.snapshot())


class trace(contextlib.AbstractContextManager):
    """``with mx.memory.trace(stacks=False) as t: ...``: t.events and the exports are
    available after the block."""

    def __init__(self, stacks=False, max_events=None):
        self.stacks = stacks
        self.max_events = max_events
        self.events = []
        self._trace = None

    def __enter__(self):
        start_trace(self.stacks, self.max_events)
        return self

    def __exit__(self, *exc):
        self._trace = stop_trace()
        self.events = self._trace.events
        return False

    def __getattr__(self, name):
        if name.startswith("_") or self._trace is None:
            raise AttributeError(name)
        return getattr(self._trace, name)


class Snapshot:
    """The live buffers of every device (and the cached ones), grouped by origin."""

    def __init__(self, raw):
        self._raw = raw
        self.blocks = []
        self.cached = []
        for snap in raw:
            d = snap["device"]
            self.blocks += [Block(d, *b) for b in snap["live"]]
            self.cached += [(d, addr, size) for addr, size in snap["cached"]]
        self.next_serial = {snap["device"]: snap["next_serial"] for snap in raw}

    @property
    def total_bytes(self):
        return sum(b.size for b in self.blocks)

    def by_origin(self, blocks=None):
        """[(label, count, bytes, frames)] sorted by bytes, one per (device, op, stack)."""
        groups = {}
        for b in self.blocks if blocks is None else blocks:
            key = (b.device, b.op, b.stack)
            n, size = groups.get(key, (0, 0))
            groups[key] = (n + 1, size + b.size)
        out = []
        for (device, op, stack), (n, size) in groups.items():
            frames = _frames(stack)
            out.append((f"[{device}] {_origin_label(op, frames)}", n, size, frames))
        return sorted(out, key=lambda g: -g[2])

    def format(self, blocks=None, limit=20):
        rows = self.by_origin(blocks)
        lines = [f"{len(self.blocks if blocks is None else blocks)} live buffers, "
                 f"{_fmt_bytes(sum(r[2] for r in rows))}"]
        for label, n, size, _ in rows[:limit]:
            lines.append(f"  {_fmt_bytes(size):>12}  {n:6d} x  {label}")
        if len(rows) > limit:
            lines.append(f"  ... {len(rows) - limit} more origins")
        return "\n".join(lines)

    def __str__(self):
        return self.format()

    def to_memory_viz(self, path):
        """Writes the live and cached blocks as a memory_viz pickle (segments only, no trace)."""
        Trace([], self._raw).to_memory_viz(path)


def snapshot():
    """The live buffers now (see :class:`Snapshot`). Origins carry stacks for the buffers made
    while a trace with stacks=True ran (check_no_leaks starts one)."""
    return Snapshot(_m.snapshot())


class MemoryLeakError(AssertionError):
    """Raised by check_no_leaks; ``.blocks`` are the leaked buffers."""

    def __init__(self, message, blocks):
        super().__init__(message)
        self.blocks = blocks


def _state_buffers():
    """Buffers that mlx itself replaces and keeps (the global random key), not leaks."""
    out = set()
    for a in mx.random.state:
        mx.eval(a)  # a lazy key (a slice of the last split) would show no block of its own
        out.update(_m.block_addresses(a))  # its host and GPU blocks
    out.discard(0)
    return out


class check_no_leaks(contextlib.ContextDecorator):
    """Fails (MemoryLeakError) when buffers allocated inside the block are still alive after
    it, listing them by origin (op and, with stacks=True, the Python stack that created it).

    As a decorator (``@check_no_leaks`` or ``@check_no_leaks()``) the function's locals are
    gone when it returns; in a ``with`` block, arrays still bound to names of the enclosing
    scope are alive, so they count: delete what is not meant to outlive the block. The global
    random key, which mlx replaces as it is used, is not a leak. ``allow_bytes`` tolerates
    that many leaked bytes."""

    def __new__(cls, fn=None, **kwargs):
        self = super().__new__(cls)
        if callable(fn):  # bare @check_no_leaks
            self.__init__(**kwargs)
            return self(fn)
        return self

    def __init__(self, fn=None, *, stacks=True, allow_bytes=0):
        self.stacks = stacks
        self.allow_bytes = allow_bytes
        self._own_trace = False

    def __enter__(self):
        gc.collect()
        mx.synchronize()
        if self.stacks and not is_tracing():
            start_trace(stacks=True)
            self._own_trace = True
        self._start = snapshot().next_serial
        return self

    def __exit__(self, exc_type, exc, tb):
        gc.collect()
        mx.synchronize()
        snap = snapshot()
        if self._own_trace:
            _m.stop_trace()
            self._own_trace = False
        if exc_type is not None:
            return False
        keep = _state_buffers()
        leaked = [b for b in snap.blocks
                  if b.serial >= self._start.get(b.device, 0) and b.address not in keep]
        size = sum(b.size for b in leaked)
        if leaked and size > self.allow_bytes:
            raise MemoryLeakError("check_no_leaks: buffers allocated in the block are still "
                                  "alive after it:\n" + snap.format(leaked), leaked)
        return False


def summary(device=None):
    """A printable table of the allocator statistics, one column per device."""
    devices = [device] if device else mx.memory_devices()
    stats = {d: mx.memory_stats(d) for d in devices}
    if len(devices) > 1 and device is None:
        stats["total"] = mx.memory_stats()
    rows = [("peak active", "peak_memory", _fmt_bytes),
            ("peak active + cache", "peak_footprint", _fmt_bytes),
            ("active now", "active_memory", _fmt_bytes),
            ("cache now", "cache_memory", _fmt_bytes),
            ("cache hit rate", "cache_hit_rate", lambda v: f"{v:.2%}"),
            ("fragmentation", "fragmentation_rate", lambda v: f"{v:.2%}"),
            ("system allocs / frees", None, None),
            ("retries / OOMs", None, None)]
    cols = list(stats)
    lines = [f"{'memory':<24}" + "".join(f"{c:>14}" for c in cols)]
    for name, key, fmt in rows:
        cells = []
        for c in cols:
            s = stats[c]
            if key is not None:
                cells.append(fmt(s[key]))
            elif name.startswith("system"):
                cells.append(f"{int(s['num_system_allocs'])} / {int(s['num_system_frees'])}")
            else:
                cells.append(f"{int(s['num_retries'])} / {int(s['num_ooms'])}")
        lines.append(f"{name:<24}" + "".join(f"{v:>14}" for v in cells))
    return "\n".join(lines)


__all__ = ["Event", "Block", "Trace", "Snapshot", "MemoryLeakError", "start_trace",
           "stop_trace", "is_tracing", "trace", "snapshot", "check_no_leaks", "summary"]
