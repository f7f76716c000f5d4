import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def pytest_terminal_summary(terminalreporter):
    """Prints what the stress suite (test_stress.py, fuzz_ops.py) ran: counts per kind."""
    import json
    import os
    import sys

    counts = {}
    for name in ("test_stress", "test_fuzz_ops", "test_io_hostile"):
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
