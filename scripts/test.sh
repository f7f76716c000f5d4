#!/usr/bin/env bash
# Builds what is not built and runs every test suite (C++ and Python). Exits non-zero on any
# failure.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)" --timeout 900
PYTHONPATH="$PWD/python" "$(cat .mlx-python)" -m pytest -q python/tests
