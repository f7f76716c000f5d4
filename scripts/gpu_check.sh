#!/usr/bin/env bash
# On the GPU machine: build, run both suites with the GPU as the default device, and keep the
# logs under build/gpu-logs (and, for the device tool, in $OUT/gpu_check-logs.tar.gz).
set -uo pipefail
cd "$(dirname "$0")/.."
out=build/gpu-logs
mkdir -p "$out"
# The device tool brings back at most 8 files from $OUT: the logs (one per benchmark, one per
# pytest worker) travel as one archive, written however the script ends.
[ -n "${OUT:-}" ] && trap 'tar czf "$OUT/gpu_check-logs.tar.gz" -C build gpu-logs' EXIT
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; uname -r; nproc; } | tee "$out/gpu.txt"
start=$(date +%s)
bash scripts/build.sh > "$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 1; }
echo "build: $(( $(date +%s) - start )) s"
export MLX_DEFAULT_DEVICE=gpu
python=$(cat .mlx-python)
# A hung test names itself and its Python stack in hang.log and ends the run (conftest.py).
export MLX_TEST_TIMEOUT=${MLX_TEST_TIMEOUT:-120} MLX_TEST_HANG_LOG="$out/hang.log"
# Fail fast: one reduction, read back, within seconds (a hang here would eat the whole budget).
if ! PYTHONPATH=$PWD/python timeout 30 "$python" -c \
    "import mlx.core as mx; assert mx.sum(mx.ones((6, 37, 5))).item() == 1110" > "$out/smoke.log" 2>&1; then
  echo "smoke test failed or hung (30 s):"; tail -20 "$out/smoke.log"; exit 1
fi
# cuDNN (GPU convolutions) comes from the nvidia-cudnn-cu13 wheel there: `import mlx` names it
# for Python; the C++ suite gets the same through the environment.
if [ -z "${MLX_CUDNN_LIBNAME:-}${MLX_CUDNN_WHEEL_LIBNAME:-}" ]; then
  wheel=$(PYTHONPATH=$PWD/python "$python" -c "import os, mlx; print(os.environ.get('MLX_CUDNN_WHEEL_LIBNAME', ''))" 2>/dev/null || true)
  [ -n "$wheel" ] && export MLX_CUDNN_WHEEL_LIBNAME=$wheel
fi
echo "cuDNN: ${MLX_CUDNN_LIBNAME:-libcudnn.so.9, then ${MLX_CUDNN_WHEEL_LIBNAME:-no wheel}}"
# The standalone kernel harnesses (benchmarks/cuda): their checks, then their timings.
for b in build/benchmarks/bench_flash build/benchmarks/bench_norms; do
  [ -x "$b" ] && { timeout 120 "$b" > "$out/$(basename "$b").log" 2>&1; echo "$(basename "$b"): rc $?"; tail -8 "$out/$(basename "$b").log"; }
done
# A tiny op's round trip beside the CUDA floor (seconds; issue 10's latency bound).
[ -x build/benchmarks/bench_eval_latency ] && timeout 60 build/benchmarks/bench_eval_latency gpu | tee "$out/latency.log"
timeout ${CTEST_TIMEOUT:-900} ctest --test-dir build -j 8 --timeout 150 > "$out/ctest.log" 2>&1
grep -E "tests passed|tests failed|Failed|\*\*\*" "$out/ctest.log" | tail -30
# The failures' own output, bounded so that the log comes back from the device machine.
if ! grep -q "100% tests passed" "$out/ctest.log"; then
  timeout 300 ctest --test-dir build --rerun-failed --output-on-failure --timeout 120 2>&1 |
    grep -v "^\[       OK \]\|^\[ RUN      \]" | head -c 4000000 > "$out/ctest_failed.log"
fi
# With pytest-xdist (the GPU machine has it) files run in parallel processes sharing the GPU,
# one file per worker (--dist loadfile keeps a file's tests, and the distributed launcher's
# ports, together); the stress suite and the fuzzer run alone afterwards so that their
# summary counts are printed (SERIAL_TESTS= leaves them out when device time is short).
serial=${SERIAL_TESTS-python/tests/test_stress.py python/tests/test_fuzz_ops.py}
parallel=()
if "$python" -c "import xdist" 2>/dev/null; then
  parallel=(-n "${PYTEST_WORKERS:-6}" --dist loadfile)
  for f in $serial; do parallel+=(--ignore "$f"); done
fi
start=$(date +%s)
PYTHONPATH=$PWD/python timeout ${PYTEST_TIMEOUT:-900} "$python" -m pytest -q --maxfail=40 -p no:cacheprovider "${parallel[@]}" python/tests ${PYTEST_ARGS:-} > "$out/pytest.log" 2>&1
tail -25 "$out/pytest.log"
if [ ${#parallel[@]} -gt 0 ] && [ -n "$serial" ]; then
  PYTHONPATH=$PWD/python timeout ${PYTEST_TIMEOUT:-900} "$python" -m pytest -q -p no:cacheprovider $serial > "$out/pytest_serial.log" 2>&1
  tail -15 "$out/pytest_serial.log"
fi
echo "pytest: $(( $(date +%s) - start )) s"
