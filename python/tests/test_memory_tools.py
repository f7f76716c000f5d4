"""mx.memory: traces, exports, snapshots, the leak checker, statistics, cache policies and
run-time debug variables."""
import gc
import json
import os
import pickle
import subprocess
import sys
import time

import pytest

import mlx.core as mx

from test_train_lm import ROOT, TINY, load_trainer

HERE = os.path.abspath(__file__)


@pytest.fixture(autouse=True)
def restore_policy():
    old = mx.get_cache_policy()
    old_limit = mx.get_memory_limit()
    yield
    if mx.memory.is_tracing():
        mx.memory.stop_trace()
    mx.set_cache_policy(**old)
    mx.set_memory_limit(old_limit)


def work(n=64, steps=4):
    x = mx.random.normal((n, n))
    kept = []
    for i in range(steps):
        y = mx.exp(x) @ x + i
        mx.eval(y)
        if i % 2 == 0:
            kept.append(y)
    return kept


def test_every_traced_allocation_is_freed_or_live_in_the_snapshot():
    with mx.memory.trace() as t:
        kept = work()
        del kept[0]
    assert t.events and {"alloc", "free"} <= {e.kind for e in t.events}
    live = {}
    for e in t.events:
        if e.kind == "alloc":
            assert (e.device, e.address) not in live, "a block handed out twice"
            live[(e.device, e.address)] = e
        elif e.kind == "free":
            live.pop((e.device, e.address), None)
    snap = {(b.device, b.address) for b in mx.memory.snapshot().blocks}
    assert live and set(live) <= snap
    assert [e.seq for e in t.events] == sorted(e.seq for e in t.events)
    assert {"Matmul", "Exp"} & {e.op for e in t.events if e.kind == "alloc"}
    assert all(e.stream >= 0 for e in t.events if e.op is not None)


def test_tracing_off_records_nothing():
    mx.memory.start_trace()
    mx.memory.stop_trace()
    work()
    assert not mx.memory.is_tracing()
    mx.memory.start_trace()
    assert mx.memory.stop_trace().events == []


def test_cache_releases_are_traced():
    del work()[:]
    cached = mx.get_cache_memory()
    with mx.memory.trace() as t:
        mx.clear_cache()
    released = [e for e in t.events if e.kind == "segment_free"]
    assert cached > 0 and sum(e.size for e in released) == cached
    assert all(e.cache <= cached for e in released)


def test_stacks_name_the_line_that_created_the_op():
    with mx.memory.trace(stacks=True) as t:
        a = mx.ones((300, 300))
        b = mx.exp(a)  # the line the trace must name
        mx.eval(b)
    line = next(i for i, text in enumerate(open(HERE), 1) if "the line the trace must name" in text)
    exp_allocs = [e for e in t.events if e.kind == "alloc" and e.op == "Exp"]
    assert exp_allocs
    frames = t.frames(exp_allocs[0].stack)
    assert (HERE, line) in [(f, l) for f, l, _ in frames]


def check_memory_viz_structure(snap):
    """The structure memory_viz loads, as PyTorch documents its snapshot (torch.cuda.memory
    _snapshot): segments of blocks, and per device a list of trace entries."""
    assert set(snap) >= {"segments", "device_traces"}
    frame_keys = {"filename", "line", "name"}
    for seg in snap["segments"]:
        for key, kind in [("device", int), ("address", int), ("total_size", int), ("stream", int),
                          ("segment_type", str), ("allocated_size", int), ("active_size", int),
                          ("blocks", list)]:
            assert isinstance(seg[key], kind), key
        assert seg["segment_type"] in ("large", "small")
        assert sum(b["size"] for b in seg["blocks"]) == seg["total_size"]
        for block in seg["blocks"]:
            assert isinstance(block["address"], int) and isinstance(block["size"], int)
            assert isinstance(block["requested_size"], int)
            assert block["state"] in ("active_allocated", "active_pending_free", "inactive")
            for f in block["frames"]:
                assert set(f) >= frame_keys
    actions = {"alloc", "free_requested", "free_completed", "segment_alloc", "segment_free",
               "segment_map", "segment_unmap", "snapshot", "oom"}
    for device_trace in snap["device_traces"]:
        assert isinstance(device_trace, list)
        for entry in device_trace:
            assert entry["action"] in actions
            for key in ("addr", "size", "stream"):
                assert isinstance(entry[key], int), key
            assert isinstance(entry["frames"], list)
            for f in entry["frames"]:
                assert set(f) >= frame_keys and isinstance(f["line"], int)
            if entry["action"] == "oom":
                assert isinstance(entry["device_free"], int)


def test_memory_viz_pickle_has_the_documented_structure(tmp_path):
    with mx.memory.trace(stacks=True) as t:
        kept = work()
    path = tmp_path / "snap.pickle"
    t.to_memory_viz(str(path))
    with open(path, "rb") as f:
        snap = pickle.load(f)
    check_memory_viz_structure(snap)
    live = [b for s in snap["segments"] for b in s["blocks"] if b["state"] == "active_allocated"]
    assert len(live) >= len(kept)
    allocs = [e for d in snap["device_traces"] for e in d if e["action"] == "alloc"]
    assert any(f["filename"] == HERE for e in allocs for f in e["frames"])
    frees = [e for d in snap["device_traces"] for e in d if e["action"] == "free_completed"]
    assert frees


def test_bounded_trace_keeps_the_latest_events(tmp_path):
    with mx.memory.trace(max_events=10) as t:
        work()
    assert len(t.events) == 10
    seqs = [e.seq for e in t.events]
    assert seqs == sorted(seqs) and seqs[0] > 0  # the oldest were dropped
    with pytest.raises(ValueError, match="max_events"):
        mx.memory.start_trace(max_events=0)


def test_snapshot_alone_exports_for_memory_viz(tmp_path):
    kept = work()
    path = tmp_path / "live.pickle"
    mx.memory.snapshot().to_memory_viz(str(path))
    snap = pickle.load(open(path, "rb"))
    check_memory_viz_structure(snap)
    assert snap["device_traces"] == [[]] * len(snap["device_traces"])
    assert sum(b["state"] == "active_allocated" for s in snap["segments"]
               for b in s["blocks"]) >= len(kept)


def test_main_job_writes_a_memory_viz_trace(tmp_path):
    path = tmp_path / "main.pickle"
    load_trainer().main(TINY + ["--steps", "2", "--sample", "0", "--memory-trace", str(path)])
    snap = pickle.load(open(path, "rb"))
    check_memory_viz_structure(snap)
    assert any(e["action"] == "alloc" for d in snap["device_traces"] for e in d)


def test_chrome_trace_spans_open_and_close(tmp_path):
    with mx.memory.trace() as t:
        work()
    path = tmp_path / "trace.json"
    t.to_chrome_trace(str(path))
    data = json.load(open(path))
    events = data["traceEvents"]
    begins = {e["id"]: e for e in events if e["ph"] == "b"}
    ends = [e for e in events if e["ph"] == "e"]
    assert ends and all(begins[e["id"]]["name"] == e["name"] and begins[e["id"]]["ts"] <= e["ts"]
                        for e in ends)
    counters = [e for e in events if e["ph"] == "C"]
    assert counters and all({"active", "cache"} <= set(e["args"]) for e in counters)


def test_timeline_png(tmp_path):
    pytest.importorskip("matplotlib")
    with mx.memory.trace() as t:
        work()
    path = tmp_path / "timeline.png"
    t.plot(str(path))
    assert open(path, "rb").read(8) == b"\x89PNG\r\n\x1a\n"


def test_oom_is_traced_and_counted():
    mx.reset_memory_stats()
    mx.set_memory_limit(mx.get_active_memory() + (64 << 20))
    with mx.memory.trace() as t:
        with pytest.raises(MemoryError, match="Out of memory"):
            mx.eval(mx.zeros((1 << 28,)))
    assert [e for e in t.events if e.kind == "oom"]
    assert mx.memory_stats()["num_ooms"] >= 1
    oom = next(e for d in t.memory_viz_snapshot()["device_traces"] for e in d
               if e["action"] == "oom")
    assert oom["device_free"] >= 0


def test_leak_checker_catches_a_planted_leak():
    leaked = []

    @mx.memory.check_no_leaks
    def leaky():
        leaked.append(mx.exp(mx.ones((128, 128))))  # the planted leak
        mx.eval(leaked[-1])

    with pytest.raises(mx.memory.MemoryLeakError) as info:
        leaky()
    message = str(info.value)
    line = next(i for i, text in enumerate(open(HERE), 1) if "the planted leak" in text)
    assert f"{HERE}:{line}" in message
    assert sum(b.size for b in info.value.blocks) >= 128 * 128 * 4


def test_leak_checker_passes_clean_code():
    @mx.memory.check_no_leaks()
    def clean():
        y = mx.exp(mx.random.normal((128, 128))) @ mx.ones((128, 8))
        mx.eval(y)
        return y.shape

    assert clean() == (128, 8)
    with mx.memory.check_no_leaks():
        z = mx.sum(mx.ones((1000,)) * 3)
        assert z.item() == 3000
        del z


def test_leak_checker_as_context_manager_sees_names_that_outlive_it():
    with pytest.raises(mx.memory.MemoryLeakError):
        with mx.memory.check_no_leaks():
            kept = mx.ones((64, 64)) + 1  # still bound after the block
            mx.eval(kept)
    del kept


def test_snapshot_groups_by_origin():
    gc.collect()
    with mx.memory.trace(stacks=True):
        big = [mx.ones((256, 256)) + i for i in range(3)]
        mx.eval(big)
    snap = mx.memory.snapshot()
    label, count, size, frames = next(g for g in snap.by_origin() if HERE in g[0])
    assert count >= 3 and size >= 3 * 256 * 256 * 4
    assert "test_snapshot_groups_by_origin" in str(snap) or HERE in str(snap)


def test_statistics_keys_of_the_documents():
    mx.reset_memory_stats()
    for _ in range(3):
        mx.eval(mx.exp(mx.ones((512, 512))))
    s = mx.memory_stats()
    for key in ("cache_hit_rate", "peak_memory", "fragmentation_rate", "peak_footprint",
                "num_retries", "num_ooms"):
        assert key in s
    assert 0 < s["cache_hit_rate"] <= 1 and s["cache_hit_rate"] == s["hit_rate"]
    assert 0 <= s["fragmentation_rate"] < 1
    assert s["peak_footprint"] >= s["peak_memory"] >= 512 * 512 * 4
    assert mx.memory_stats("cpu")["peak_memory"] <= s["peak_footprint"]
    assert mx.memory_stats(mx.cpu)["active_memory"] == mx.memory_stats("cpu")["active_memory"]
    with pytest.raises(ValueError, match="devices: cpu"):
        mx.memory_stats("tpu")
    info = mx.memory_info()
    assert info.total > 0 and info.used == info.active + info.cache
    assert info.used == mx.get_active_memory() + mx.get_cache_memory()


def test_memory_pool_limit_is_a_fraction():
    total = mx.memory_info("cpu").total
    mx.set_memory_pool_limit(0.8)
    assert abs(mx.get_memory_limit() - 0.8 * total) < 2**20
    with pytest.raises(ValueError, match="set_memory_pool_limit"):
        mx.set_memory_pool_limit(0)


def test_page_size_changes_what_the_statistics_show():
    mx.clear_cache()
    mx.set_cache_policy(page_size=16384)
    mx.reset_memory_stats()
    mx.eval(mx.zeros((5000,), dtype=mx.float32))  # 20000 bytes: two 16 KiB pages
    coarse = mx.memory_stats()
    mx.set_cache_policy("default")
    mx.clear_cache()
    mx.reset_memory_stats()
    mx.eval(mx.zeros((5000,), dtype=mx.float32))  # five 4 KiB pages
    fine = mx.memory_stats()
    assert coarse["total_handed_out"] - coarse["total_requested"] >= 32768 - 20000
    assert fine["fragmentation_rate"] < coarse["fragmentation_rate"]


def test_max_cache_and_trim_bytes():
    mx.clear_cache()
    mx.set_cache_policy(max_cache="1M", trim_bytes="512K")
    assert mx.get_cache_limit() == 1 << 20
    arrays = [mx.ones((64 * 1024,)) + i for i in range(8)]  # 256 KiB each
    mx.eval(arrays)
    del arrays
    for device in mx.memory_devices():  # the limit holds on each device (host, each GPU)
        assert mx.memory_stats(device)["cache_memory"] <= 1 << 20, device
    policy = mx.get_cache_policy()
    assert policy["trim_bytes"] == 512 << 10 and policy["max_cache"] == 1 << 20


def test_presets_and_bad_values():
    assert {"throughput_training", "low_latency_inference", "distributed_training",
            "adaptive"} <= set(mx.cache_policy_presets())
    mx.set_cache_policy("throughput_training")
    p = mx.get_cache_policy()
    assert (p["page_size"], p["trim_bytes"], p["max_cache"]) == (16384, 512 << 20, 4 << 30)
    with pytest.raises(ValueError, match="known: default"):
        mx.set_cache_policy("fastest")
    with pytest.raises(ValueError, match="page_size"):
        mx.set_cache_policy(page_size=1000)
    with pytest.raises(ValueError, match="byte count"):
        mx.set_cache_policy(max_cache="lots")


def wait_for_empty_cache(seconds=10):
    deadline = time.time() + seconds  # the trimmer runs in the background, every idle/4
    while mx.get_cache_memory() > 0 and time.time() < deadline:
        time.sleep(0.05)
    return mx.get_cache_memory()


def test_idle_cache_returns_to_the_system():
    mx.eval([mx.ones((1 << 18,)) + i for i in range(4)])
    assert mx.get_cache_memory() >= 4 << 20
    mx.set_cache_policy(idle_seconds=0.05)
    assert wait_for_empty_cache() == 0


def test_main_job_footprint_shrinks_after_training():
    mx.set_cache_policy(idle_seconds=0.5)
    result = load_trainer().main(TINY + ["--steps", "3", "--sample", "0"])
    cached_at_end = mx.get_cache_memory()
    assert result["memory_stats"]["cache_memory"] > 0 and cached_at_end > 0
    assert wait_for_empty_cache() == 0


def test_set_env_switches_the_cache_log_at_run_time(capfd):
    x = mx.ones((4096,))
    mx.eval(mx.exp(x))  # cached for the next one
    capfd.readouterr()
    mx.set_env("MLX_CACHE_DEBUG", "1")
    try:
        mx.eval(mx.exp(x))
    finally:
        mx.set_env("MLX_CACHE_DEBUG", "0")
    assert "cache hit" in capfd.readouterr().err
    assert os.environ["MLX_CACHE_DEBUG"] == "0"
    mx.eval(mx.exp(x))
    assert capfd.readouterr().err == ""
    with pytest.raises(ValueError):
        mx.set_env("MLX_CACHE_PAGE_SIZE", "3000")
    assert "MLX_CACHE_PAGE_SIZE" not in os.environ


def main_job_cache_stats(policy, steps=60):
    """The main job's cache hit rate and system allocations in a fresh process, the policy set
    by the environment."""
    env = dict(os.environ, MLX_CACHE_POLICY=policy,
               PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.dirname(mx.__file__)),
                                           os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "train_lm.py"), *TINY,
                          "--steps", str(steps), "--eval-every", "1000", "--sample", "0"],
                         env=env, capture_output=True, text=True, check=True).stdout
    row = lambda label: next(l for l in out.splitlines() if l.startswith(label)).split()  # noqa
    return float(row("cache hit rate")[-1].rstrip("%")) / 100, int(row("system allocs")[-3])


def test_adaptive_hit_rate_is_no_worse_than_the_default_on_the_main_job():
    # 60 steps: enough requests for the size classes to be picked (every 2048 requests).
    adaptive_hits, adaptive_allocs = main_job_cache_stats("adaptive")
    default_hits, default_allocs = main_job_cache_stats("default")
    assert adaptive_hits >= default_hits and adaptive_allocs <= default_allocs


def test_main_job_writes_the_memory_plot(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    path = tmp_path / "memory.png"
    load_trainer().main(TINY + ["--steps", "3", "--sample", "0", "--memory-plot", str(path)])
    assert open(path, "rb").read(4) == b"\x89PNG"
    out = capsys.readouterr().out
    assert "peak active + cache" in out and "cache hit rate" in out
