#!/usr/bin/env bash
# Where a Python program's host time goes, C++ frames included, on a machine without perf (the
# GPU machine): py-spy samples the program and its child processes after DELAY seconds (past
# imports and warm-up) for DURATION seconds, then stack_summary.py prints the functions most
# often on a stack (inclusive) and on top of one (exclusive).
#   DELAY=20 DURATION=10 bash scripts/host_profile.sh python3 benchmarks/bench_gpt2.py ...
# py-spy comes from PyPI, which the GPU machine cannot reach: fetch it here once into the
# ignored tools_local/ and carry that folder (the device tool's `carry`):
#   pip download py-spy --no-deps -d /tmp/pyspy && unzip -o -q /tmp/pyspy/*.whl -d /tmp/pyspy
#   mkdir -p tools_local && cp /tmp/pyspy/py_spy-*.data/scripts/py-spy tools_local/
# Build the extension with its symbols first (bash scripts/build.sh -DMLX_PYTHON_NOSTRIP=ON),
# or its frames are bare addresses. The raw samples go to $OUT/host_profile.txt (or build/).
set -uo pipefail
cd "$(dirname "$0")/.."
pyspy=${PYSPY:-$(command -v py-spy || echo tools_local/py-spy)}
[ -x "$pyspy" ] || { echo "no py-spy (see the header of $0)"; exit 1; }
out=${OUT:-build}
mkdir -p "$out"
"$@" > "$out/profiled_program.log" 2>&1 &
pid=$!
sleep "${DELAY:-10}"
"$pyspy" record --native --subprocesses -r "${RATE:-200}" -d "${DURATION:-10}" \
  -f raw -o "$out/host_profile.txt" --pid "$pid" > /dev/null 2>&1
kill "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
python3 scripts/stack_summary.py "$out/host_profile.txt" "${TOP:-50}"
