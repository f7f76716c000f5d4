#!/usr/bin/env bash
# On the GPU machine: build, run both suites with the GPU as the default device, and keep the
# logs under $OUT (the device tool's output folder) or build/gpu-logs.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-build/gpu-logs}
mkdir -p "$out"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$out/gpu.txt"
start=$(date +%s)
bash scripts/build.sh > "$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 1; }
echo "build: $(( $(date +%s) - start )) s"
export MLX_DEFAULT_DEVICE=gpu
python=$(cat .mlx-python)
timeout ${CTEST_TIMEOUT:-900} ctest --test-dir build -j 8 --timeout 300 > "$out/ctest.log" 2>&1
grep -E "tests passed|tests failed|Failed|\*\*\*" "$out/ctest.log" | tail -30
# The failures' own output, bounded so that the log comes back from the device machine.
if ! grep -q "100% tests passed" "$out/ctest.log"; then
  timeout 300 ctest --test-dir build --rerun-failed --output-on-failure --timeout 120 2>&1 |
    grep -v "^\[       OK \]\|^\[ RUN      \]" | head -c 4000000 > "$out/ctest_failed.log"
fi
PYTHONPATH=$PWD/python timeout ${PYTEST_TIMEOUT:-900} "$python" -m pytest -q --maxfail=40 -p no:cacheprovider python/tests ${PYTEST_ARGS:-} > "$out/pytest.log" 2>&1
tail -25 "$out/pytest.log"
