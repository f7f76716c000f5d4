"""Runs the hypothesis op fuzzer (fuzz_ops.py) over every function of mlx.core with a fixed,
derandomized budget, in a subprocess: a segfault, abort or hang there is a failure here that
shows the last call made. MLX_STRESS=long raises the budget."""
import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.stress
pytest.importorskip("hypothesis")  # the GPU machine's Python has none

EXAMPLES = 200 if os.environ.get("MLX_STRESS", "") == "long" else 20
STRESS_COUNTS = {}


def test_every_op_survives_hostile_inputs(tmp_path):
    log = tmp_path / "calls.log"
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.join(here, "..")] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    )
    proc = subprocess.run(
        [sys.executable, os.path.join(here, "fuzz_ops.py"), "--examples", str(EXAMPLES),
         "--log", str(log)],
        capture_output=True, text=True, env=env, timeout=1800, cwd=str(tmp_path),
    )
    if proc.returncode != 0:
        last = log.read_text().splitlines()[-3:] if log.exists() else []
        pytest.fail(
            "fuzzer process ended with %d; last calls:\n%s\nstderr:\n%s"
            % (proc.returncode, "\n".join(last), proc.stderr[-4000:])
        )
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["calls"] > 1000 and summary["computed"] > 0
    STRESS_COUNTS["fuzzer: ops fuzzed"] = summary["ops"]
    STRESS_COUNTS["fuzzer: calls made"] = summary["calls"]
    STRESS_COUNTS["fuzzer: calls computed"] = summary["computed"]
    STRESS_COUNTS["fuzzer: calls raised a clean exception"] = summary["raised"]
    STRESS_COUNTS["fuzzer: calls crashed"] = 0
    for fam, n in summary["per_family"].items():
        STRESS_COUNTS["fuzzer: calls in family %s" % fam] = n
