"""The options of benchmarks/memory_scenarios.py, fast: no model is trained here."""
import importlib.util
import os
import subprocess
import sys

import pytest

import mlx.core as mx

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "benchmarks", "memory_scenarios.py")


@pytest.fixture(scope="module")
def ms():
    spec = importlib.util.spec_from_file_location("memory_scenarios", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_device_option_defaults_to_cpu_and_rejects_others(ms):
    assert ms.parse_args([]).device == "cpu"
    assert ms.parse_args(["--device", "auto"]).device == "auto"
    with pytest.raises(SystemExit):
        ms.parse_args(["--device", "tpu"])


def test_resolve_device(ms):
    assert ms.resolve_device("auto", False) == "cpu"
    assert ms.resolve_device("auto", True) == "gpu"
    assert ms.resolve_device("cpu", True) == "cpu"
    with pytest.raises(SystemExit, match="--device gpu"):
        ms.resolve_device("gpu", False)


@pytest.mark.skipif(mx.cuda.is_available(), reason="a GPU is available: the script would run")
def test_gpu_without_one_fails_with_a_message():
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    r = subprocess.run([sys.executable, SCRIPT, "--device", "gpu"], capture_output=True,
                       text=True, env=env, timeout=120)
    assert r.returncode != 0
    assert "mx.cuda.is_available() is False" in r.stderr
    assert r.stdout == ""


def test_gpu_table_counts_device_allocs_per_step(ms, capsys):
    ours = [{"peak_active": 2**20, "peak_footprint": 2 * 2**20, "system_allocs": n, "time": 0.01}
            for n in (5, 7, 7)]
    theirs = [{"peak_active": 3 * 2**20, "peak_footprint": 4 * 2**20, "system_allocs": n,
               "retries": 0, "time": 0.02} for n in (9, 9, 10)]
    ms.print_tide_gpu(ours, theirs)
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")][1:]
    assert [r.split(" | ")[3] for r in rows] == ["5", "2", "0"]
    assert [r.split(" | ")[7] for r in rows] == ["9", "0", "1"]
    assert rows[0].split(" | ")[1:3] == ["1.0M", "2.0M"]


def test_distributed_is_na_on_one_gpu(ms, capsys, monkeypatch):
    monkeypatch.setattr(ms, "gpu_count", lambda: 1)
    ms.print_distributed("gpu", skip=False)
    assert "n/a (one GPU)" in capsys.readouterr().out
