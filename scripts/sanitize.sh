#!/usr/bin/env bash
# Builds the C++ tests with AddressSanitizer + UndefinedBehaviorSanitizer into build-asan/ and
# runs them. Not part of .ci/run (a full extra build); run it before larger changes land.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMLX_BUILD_CUDA=OFF \
  -DMLX_BUILD_BENCHMARKS=OFF -DMLX_BUILD_EXAMPLES=OFF \
  -DCMAKE_CXX_FLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
cmake --build build-asan -j "${MLX_BUILD_JOBS:-$(nproc)}" --target mlx_tests
ASAN_OPTIONS=detect_leaks=1 ./build-asan/tests/cpp/mlx_tests "$@"
