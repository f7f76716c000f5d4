#!/usr/bin/env bash
# Configures and builds the C++ library, tests, benchmarks, examples and the Python extension
# (python/mlx/core*.so, importable with PYTHONPATH=python) into build/, with the CUDA backend
# where nvcc is found. Extra arguments go to cmake (e.g. -DMLX_BUILD_CUDA=OFF).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
python=$(cat .mlx-python)
jobs=${MLX_BUILD_JOBS:-$(nproc)}
# The system compiler, whatever CC/CXX say: another toolchain (the GPU machine sets /opt/gcc)
# throws C++ exceptions through a libstdc++ other than the one Python loads, and the first
# error raised into Python crashes the process. MLX_CC / MLX_CXX override.
if [ -x /usr/bin/gcc ] && [ -x /usr/bin/g++ ]; then
  export CC=${MLX_CC:-/usr/bin/gcc} CXX=${MLX_CXX:-/usr/bin/g++}
fi
export CUDAHOSTCXX=${CXX:-g++}
if [ -z "${CUDACXX:-}" ] && ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
  export CUDACXX=/usr/local/cuda/bin/nvcc
fi
if [ ! -f build/build.ninja ] || [ $# -gt 0 ] || ! grep -q "Python_EXECUTABLE:FILEPATH=$python$" build/CMakeCache.txt; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DMLX_BUILD_PYTHON=ON \
    -DMLX_PYTHON_INPLACE=ON -DPython_EXECUTABLE="$python" "$@"
fi
# MLX_BUILD_TARGETS (e.g. "core" for the Python module alone) narrows what is built.
cmake --build build -j "$jobs" ${MLX_BUILD_TARGETS:+--target $MLX_BUILD_TARGETS}
