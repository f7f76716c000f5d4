import faulthandler
import os
import sys
import time

import numpy as np
import pytest

# MLX_TEST_TIMEOUT=S: a test still running after S seconds writes every thread's Python stack
# to MLX_TEST_HANG_LOG (default hang.log here) and ends the run, so a hang (on the GPU machine,
# whose minutes are few) names its test and line instead of using up the whole budget.
# Each finished test adds its wall time, so a run cut short still shows where the time went.
_TEST_TIMEOUT = float(os.environ.get("MLX_TEST_TIMEOUT", "0") or 0)
# Under pytest-xdist each worker writes its own log (hang.log.gw0, ...).
_worker = os.environ.get("PYTEST_XDIST_WORKER")
_hang_log = (open(os.environ.get("MLX_TEST_HANG_LOG", "hang.log") + (f".{_worker}" if _worker else ""),
                  "w") if _TEST_TIMEOUT > 0 else None)


@pytest.fixture(autouse=_TEST_TIMEOUT > 0)
def _hang_guard(request):
    _hang_log.write(f"{request.node.nodeid}\n")
    _hang_log.flush()
    faulthandler.dump_traceback_later(_TEST_TIMEOUT, exit=True, file=_hang_log)
    start = time.perf_counter()
    yield
    faulthandler.cancel_dump_traceback_later()
    _hang_log.write(f"  {time.perf_counter() - start:.3f} s\n")
    _hang_log.flush()


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def pytest_terminal_summary(terminalreporter):
    """Prints what the stress suite (test_stress.py, fuzz_ops.py, the loader fuzzers) ran:
    counts per kind."""
    import json

    counts = {}
    for name in ("test_stress", "test_fuzz_ops", "test_io_hostile", "test_gguf_fuzz"):
        mod = sys.modules.get(name)
        counts.update(getattr(mod, "STRESS_COUNTS", {}))
    if not counts:
        return
    terminalreporter.section("stress counts")
    for key in sorted(counts):
        terminalreporter.write_line("%-60s %d" % (key, counts[key]))
    path = os.environ.get("MLX_STRESS_REPORT")
    if path:
        with open(path, "w") as f:
            json.dump(counts, f, indent=1, sort_keys=True)
