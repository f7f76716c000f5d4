#!/usr/bin/env bash
# Where a running program's host time goes, on a machine without perf (the GPU machine has
# cuda-gdb, which attaches to any process, and no gdb): starts the command, attaches N times
# and keeps every thread's stack, then prints the functions most often on a stack (inclusive)
# and at its top (exclusive), over the samples of threads that were not idle.
# Usage: N=30 DELAY=10 bash scripts/sample_stacks.sh COMMAND [ARGS...]
# For Python programs, build the extension with its symbols first:
#   bash scripts/build.sh -DMLX_PYTHON_NOSTRIP=ON
# The stacks go to $OUT/stacks.txt (or build/stacks.txt); the command is killed afterwards.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-build}
mkdir -p "$out"
debugger=$(command -v cuda-gdb || command -v gdb) || { echo "no cuda-gdb or gdb"; exit 1; }
"$@" > "$out/sampled_program.log" 2>&1 &
pid=$!
sleep "${DELAY:-10}"
for _ in $(seq "${N:-30}"); do
  kill -0 "$pid" 2>/dev/null || break
  timeout 20 "$debugger" -p "$pid" -batch -nx -ex "thread apply all bt 40" 2>/dev/null |
    grep -E "^#|^Thread"
  echo "== sample"
done > "$out/stacks.txt"
kill "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
python3 - "$out/stacks.txt" <<'EOF'
import collections, re, sys

# A thread waiting in the kernel (a condition variable, a sleep, poll) is idle, not host work.
IDLE = re.compile(r"futex|pthread_cond|nanosleep|epoll_wait|poll |select |sem_wait|^#0\s+syscall")
FRAME = re.compile(r"^#\d+\s+(?:0x[0-9a-f]+ in )?(\S+) \(")
samples = inclusive = 0
inc, top = collections.Counter(), collections.Counter()
stack = []


def flush():
    global samples
    if not stack or IDLE.search(stack[0]):
        return
    names = [m.group(1) for f in stack if (m := FRAME.search(f)) and m.group(1) != "??"]
    if not names:
        return
    samples += 1
    top[names[0]] += 1
    for n in set(names):
        inc[n] += 1


for line in open(sys.argv[1], errors="replace"):
    if line.startswith("Thread") or line.startswith("== sample"):
        flush()
        stack = []
    elif line.startswith("#"):
        stack.append(line)
flush()
print(f"{samples} busy thread stacks")
print("| inclusive | exclusive | function |\n|---:|---:|---|")
for name, n in inc.most_common(40):
    print(f"| {100 * n / max(samples, 1):.0f}% | {100 * top[name] / max(samples, 1):.0f}% | "
          f"`{name[:90]}` |")
EOF
