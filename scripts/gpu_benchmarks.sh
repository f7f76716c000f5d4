#!/usr/bin/env bash
# On the GPU machine, after gpu_check.sh built the tree: every GPU benchmark, ours against
# PyTorch in the same run, each under its own time limit, logs under build/gpu-logs (and, for the
# device tool, in $OUT/gpu_benchmarks-logs.tar.gz).
# BENCHES picks a subset, e.g. BENCHES="bench_gpu bench_gpt2" bash scripts/gpu_benchmarks.sh.
set -uo pipefail
cd "$(dirname "$0")/.."
out=build/gpu-logs
mkdir -p "$out"
# The device tool brings back at most 8 files from $OUT: the logs (one per benchmark, one per
# pytest worker) travel as one archive, written however the script ends.
[ -n "${OUT:-}" ] && trap 'tar czf "$OUT/gpu_benchmarks-logs.tar.gz" -C build gpu-logs' EXIT
python=$(cat .mlx-python)
export PYTHONPATH=$PWD/python
all="bench_gpu tiny_op_latency bench_gpu_fusion bench_gpu_linalg bench_gpu_quantized bench_conv bench_gpt2 gpt2_step_phases memory_scenarios main_job"
for b in ${BENCHES:-$all}; do
  start=$(date +%s)
  case $b in
    main_job) cmd=("$python" examples/train_lm.py) ;;
    memory_scenarios) cmd=("$python" benchmarks/memory_scenarios.py --device gpu) ;;
    bench_conv) cmd=("$python" benchmarks/bench_conv.py --device gpu --dtype bfloat16 --batch 32 --rounds 2) ;;
    *) cmd=("$python" benchmarks/$b.py) ;;
  esac
  timeout "${BENCH_TIMEOUT:-300}" "${cmd[@]}" > "$out/$b.log" 2>&1
  rc=$?
  echo "== $b (rc $rc, $(( $(date +%s) - start )) s)"
  tail -${BENCH_TAIL:-25} "$out/$b.log"
done
