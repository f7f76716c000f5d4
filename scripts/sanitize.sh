#!/usr/bin/env bash
# Sanitizer runs of the C++ tests (not part of .ci/run: each is a full extra build).
#   bash scripts/sanitize.sh [asan|tsan|all] [gtest filter]
# asan (default): AddressSanitizer + UndefinedBehaviorSanitizer in build-asan/, every C++ test
#   (or those the filter names), leaks detected.
# tsan: ThreadSanitizer in build-tsan/, the threading tests (Concurrency.*, Eval.*, Memory.*
#   unless a filter is given).
# all: both. MLX_BUILD_JOBS caps the build jobs (default: every core). Exits non-zero when a
# sanitizer reports anything.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-asan}
filter=${2:-}
bash scripts/setup.sh
jobs=${MLX_BUILD_JOBS:-$(nproc)}
if [ -x /usr/bin/gcc ] && [ -x /usr/bin/g++ ]; then
  export CC=${MLX_CC:-/usr/bin/gcc} CXX=${MLX_CXX:-/usr/bin/g++}
fi

build() {  # dir, flags
  cmake -S . -B "$1" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMLX_BUILD_CUDA=OFF \
    -DMLX_BUILD_BENCHMARKS=OFF -DMLX_BUILD_EXAMPLES=OFF -DMLX_BUILD_PYTHON=OFF \
    -DCMAKE_CXX_FLAGS="$2 -fno-omit-frame-pointer" \
    -DCMAKE_EXE_LINKER_FLAGS="$2" -DCMAKE_SHARED_LINKER_FLAGS="$2"
  cmake --build "$1" -j "$jobs" --target mlx_tests
}

run_asan() {
  build build-asan "-fsanitize=address,undefined -fno-sanitize-recover=undefined"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ./build-asan/tests/cpp/mlx_tests ${filter:+--gtest_filter="$filter"}
}

run_tsan() {
  build build-tsan "-fsanitize=thread"
  # OpenBLAS's own threads are not instrumented: one BLAS thread keeps its reports out.
  OPENBLAS_NUM_THREADS=1 TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
    ./build-tsan/tests/cpp/mlx_tests --gtest_filter="${filter:-Concurrency.*:Eval.*:Memory.*}"
}

case "$mode" in
  asan) run_asan ;;
  tsan) run_tsan ;;
  all) run_asan && run_tsan ;;
  *) echo "usage: $0 [asan|tsan|all] [gtest filter]" >&2; exit 2 ;;
esac
