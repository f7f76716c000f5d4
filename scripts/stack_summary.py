"""Summarizes py-spy's raw samples (`py-spy record -f raw`: one line per distinct stack,
frames separated by ';', then the sample count): the functions most often on a stack
(inclusive share) and on top of one (exclusive share). Frames without a symbol are grouped by
their library.

    python3 scripts/stack_summary.py build/host_profile.txt [TOP]
"""
import collections
import re
import sys


def frame_name(frame):
    # "name (file:line)" or "0x7f... (library.so)"
    name, _, where = frame.rpartition(" (")
    if not name:
        return frame
    if name.startswith("0x"):
        return f"[{where.rstrip(')')}]"
    return name


def main():
    path = sys.argv[1]
    top_n = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    inclusive, exclusive = collections.Counter(), collections.Counter()
    total = 0
    for line in open(path, errors="replace"):
        stack, _, count = line.rstrip().rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        frames = [frame_name(f) for f in stack.split(";")]
        total += n
        for name in set(frames):
            inclusive[name] += n
        exclusive[frames[-1]] += n
    print(f"{total} samples")
    print("| inclusive | exclusive | function |\n|---:|---:|---|")
    for name, n in inclusive.most_common(top_n):
        print(f"| {100 * n / max(total, 1):.1f}% | {100 * exclusive[name] / max(total, 1):.1f}% "
              f"| `{re.sub(r'[|`]', ' ', name)[:120]}` |")


if __name__ == "__main__":
    main()
