#!/bin/bash
# Peak memory of `fitscope make-images` at 1024x1024: the images are made and written in parts of at
# most 64 MiB of pixels, so the peak does not grow with the count (it was 6.6 GB for 300 images when
# they were made 1,000 at a time). Prints each count's peak RSS and their ratio (goal: about 1).
#   bench/make_images_memory.sh build/tools/fitscope/fitscope
set -euo pipefail
fitscope=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for count in 30 300; do
  /usr/bin/time -f "%M" -o "$dir/peak_$count" "$fitscope" make-images "$dir/images_$count" --count "$count" --size 1024 \
    --classes 2 > /dev/null
  rm -rf "$dir/images_$count"
done
awk -v a="$(cat "$dir/peak_30")" -v b="$(cat "$dir/peak_300")" 'BEGIN {
  printf "make-images at 1024x1024: 30 images peak %.0f MB, 300 images peak %.0f MB: %.2fx (goal: about 1)\n", a / 1024, b / 1024, b / a
}'
