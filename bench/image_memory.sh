#!/bin/bash
# Peak memory of training on an image folder larger than 1 GB, without --cache: the images are read
# and decoded batch by batch in the loader's workers, so the process holds the file list, the model
# and a few batches, never the folder. Makes the folder (fitscope make-images, 224x224 JPEGs), trains
# the seed CNN one epoch on it at 64x64, prints the folder's size, the peak RSS and the goal (600 MB).
#   bench/image_memory.sh build/tools/fitscope/fitscope [images]
set -euo pipefail
fitscope=$1
count=${2:-32000}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$fitscope" make-images "$dir/images" --count "$count" --size 224 > /dev/null
bytes=$(du -sb "$dir/images" | cut -f1)
/usr/bin/time -f "%M" -o "$dir/peak_kb" "$fitscope" train --data "images:$dir/images" --image-size 64 --epochs 1 \
  --workers 2 --validation-split 0.05 --run-dir "$dir/run" --quiet
peak_kb=$(cat "$dir/peak_kb")
steps=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['steps'])" "$dir/run/summary.json")
awk -v b="$bytes" -v p="$peak_kb" -v n="$count" -v s="$steps" 'BEGIN {
  printf "image folder: %d JPEGs of 224x224, %.2f GB; one epoch at 64x64 (%d steps of 32), no --cache\n", n, b / 1e9, s
  printf "peak RSS: %.0f MB (goal: under 600 MB; %.2f of it), %.2f of the folder'"'"'s size\n", p / 1024, p / 1024 / 600, p * 1024 / b
}'
