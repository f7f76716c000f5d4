#!/usr/bin/env bash
# The main job: builds what is missing, then trains the GPT-style character language model on
# Tiny Shakespeare (examples/train_lm.py), printing loss, tokens/s and memory statistics, on the
# GPU when there is one. Arguments go to the trainer (e.g. --steps 100, --checkpoint ckpt).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
PYTHONPATH="$PWD/python" exec "$(cat .mlx-python)" examples/train_lm.py "$@"
