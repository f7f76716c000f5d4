#!/usr/bin/env bash
# Configures and builds the C++ library, tests, benchmarks, examples and the Python extension
# (python/mlx/core*.so, importable with PYTHONPATH=python) into build/.
# Extra arguments go to cmake (e.g. -DMLX_BUILD_CUDA=OFF).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
jobs=${MLX_BUILD_JOBS:-$(nproc)}
if [ ! -f build/build.ninja ] || [ $# -gt 0 ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DMLX_BUILD_PYTHON=ON \
    -DMLX_PYTHON_INPLACE=ON -DPython_EXECUTABLE="$PWD/.venv/bin/python" "$@"
fi
cmake --build build -j "$jobs"
