#!/bin/bash
# Under `taskset -c 0` (one core of the machine), `--threads auto` must count the one core it may use
# and run as `--threads 1` does (it used to count the machine's cores and run 2 intra-op threads, 17 %
# slower). Runs the seed CNN both ways in turn, A B B A, and prints each pair's steady-state step p50
# (summary.json) and their ratio; the goal is within 3 % (a ratio in 0.97 to 1.03). Both run the same
# setting (intra-op 1, BLAS 1): what is left is the machine's run-to-run noise. The run directories'
# names make both command lines as long (a longer one lays the process's memory out otherwise, which
# moved the step by a few % even with TrainerOptions::keep_freed_memory).
#   bench/taskset_threads.sh build/tools/fitscope/fitscope [pairs, default 5]
set -euo pipefail
fitscope=$1
pairs=${2:-5}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
p50() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["step_ms"]["p50"])' "$1/summary.json"; }
ratios=()
for i in $(seq "$pairs"); do
  order="auto 1"
  [ $((i % 2)) = 0 ] && order="1 auto"  # A B, then B A: neither always runs first
  for threads in $order; do
    taskset -c 0 "$fitscope" train --model cnn --synthetic-size 1200 --epochs 1 --threads "$threads" --quiet \
      --run-dir "$dir/$(printf '%-4s' "$threads" | tr ' ' _)-$i" > /dev/null  # command lines of one length
  done
  a=$(p50 "$dir/auto-$i")
  b=$(p50 "$dir/1___-$i")
  ratios+=("$(python3 -c "print($a / $b)")")
  printf 'pair %d: --threads auto p50 %.3f ms, --threads 1 p50 %.3f ms, ratio %.3f\n' "$i" "$a" "$b" "${ratios[-1]}"
done
python3 - "${ratios[@]}" <<'PY'
import statistics, sys
r = [float(x) for x in sys.argv[1:]]
print(f"under taskset -c 0: --threads auto / --threads 1 step p50, median of {len(r)} pairs {statistics.median(r):.3f} "
      f"(min {min(r):.3f}, max {max(r):.3f}; goal 0.97 to 1.03)")
PY
