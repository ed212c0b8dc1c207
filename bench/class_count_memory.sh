#!/bin/bash
# Peak memory against the number of classes: the seed MLP trained on the built-in set with 10 and with
# 3,000 output classes (--num-classes), with the default metrics (accuracy: two numbers of state, not a
# class x class matrix). Prints each run's peak RSS and the ratio (goal: <= 1.5x with the default
# flags), then the same with a backup every epoch, whose copies of the weights and the optimizer's
# state grow with the model, for comparison.
#   bench/class_count_memory.sh build/tools/fitscope/fitscope [classes]
set -euo pipefail
fitscope=$1
many=${2:-3000}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
peak() {  # classes, more flags... -> peak RSS in kB of one short run
  local classes=$1
  shift
  rm -rf "$dir/run"
  /usr/bin/time -f "%M" -o "$dir/peak" "$fitscope" train --model mlp --num-classes "$classes" --epochs 2 \
    --synthetic-size 4000 --validation-split 0.2 --threads 1 --workers 0 --run-dir "$dir/run" --quiet "$@"
  cat "$dir/peak"
}
base_kb=$(/usr/bin/time -f "%M" "$fitscope" --version 2>&1 >/dev/null | tail -1)
for flags in "" "--checkpoint-every epoch"; do
  # shellcheck disable=SC2086
  few_kb=$(peak 10 $flags)
  # shellcheck disable=SC2086
  many_kb=$(peak "$many" $flags)
  awk -v f="$few_kb" -v m="$many_kb" -v c="$many" -v b="$base_kb" -v flags="${flags:-default flags}" 'BEGIN {
    printf "seed MLP, 2 epochs of 3200 examples, %s: peak RSS 10 classes %.0f MB, %d classes %.0f MB: %.2fx%s\n",
      flags, f / 1024, c, m / 1024, m / f, flags == "default flags" ? " (goal: <= 1.5x)" : ""
  }'
done
echo "(the process with libtorch loaded and nothing run: $((base_kb / 1024)) MB)"
