#!/bin/bash
# Peak memory against the number of classes: the seed MLP trained on the built-in set with 10 and with
# 3,000 output classes (--num-classes), the default metrics (accuracy: two numbers of state, not a
# class x class matrix). Prints each run's peak RSS, its weights' size and the ratio (goal: <= 1.5x).
#   bench/class_count_memory.sh build/tools/fitscope/fitscope [classes]
set -euo pipefail
fitscope=$1
many=${2:-3000}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
peak() {  # classes -> peak RSS in kB of one short run
  /usr/bin/time -f "%M" -o "$dir/peak-$1" "$fitscope" train --model mlp --num-classes "$1" --epochs 2 \
    --synthetic-size 4000 --validation-split 0.2 --checkpoint-every epoch --threads 1 --workers 0 \
    --run-dir "$dir/run-$1" --quiet
  cat "$dir/peak-$1"
}
few_kb=$(peak 10)
many_kb=$(peak "$many")
weights_mb=$(du -m "$dir/run-$many/model.weights.pt" | cut -f1)
awk -v f="$few_kb" -v m="$many_kb" -v c="$many" -v w="$weights_mb" 'BEGIN {
  printf "seed MLP, 2 epochs of 3200 examples, accuracy on, a backup every epoch\n"
  printf "peak RSS: 10 classes %.0f MB, %d classes %.0f MB (weights %d MB): %.2fx (goal: <= 1.5x)\n", f / 1024, c, m / 1024, w, m / f
}'
