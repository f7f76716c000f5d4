#!/usr/bin/env bash
# The main job. For now: linear regression trained by gradient descent with our ops, printing
# loss and memory statistics (the language-model trainer replaces it in a later issue).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
./build/examples/linear_regression "$@"
