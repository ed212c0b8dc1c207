#!/bin/sh
# The compiler launcher of the precompiled header's target under clang and ccache: runs the compile
# (the launcher and compiler after the first argument), and when it wrote a .pch, writes beside it
# the .pch.sum that ccache hashes instead of the .pch (CCACHE_PCH_EXTSUM). A clang PCH holds the
# absolute paths of its build folder, so the same headers give another .pch in every clone and no unit
# that uses it would hit the cache across clones; the .sum is a digest of what the PCH was made of: its
# options and its input files' bytes (clang -module-file-info), the folders' paths left out. The
# old .sum goes first, so that a failed compile leaves none to stand for a .pch it did not make. The
# .pch itself is not taken from the cache: one made in another clone names that clone's files, which
# clang then looks for (and, when they are gone, calls the PCH malformed).
#   pch_checksum.sh SOURCE_DIR BINARY_DIR COMPILER LAUNCHER... COMPILER ARGS...
set -eu
source_dir=$1 binary_dir=$2 compiler=$3
shift 3
pch=""
previous=""
for arg in "$@"; do
  [ "$previous" = "-o" ] && case $arg in *.pch) pch=$arg ;; esac
  previous=$arg
done
if [ -n "$pch" ]; then
  rm -f "$pch.sum"
  CCACHE_DISABLE=1
  export CCACHE_DISABLE
fi
"$@"
[ -n "$pch" ] || exit 0
# (a clang without -module-file-info leaves no .sum: ccache then hashes the .pch, as without this)
info=$("$compiler" -module-file-info "$pch" 2> /dev/null) || exit 0
{
  printf '%s\n' "$info" | sed "s|$binary_dir|@build|g; s|$source_dir|@source|g"
  printf '%s\n' "$info" | sed -n 's/^  Input file: \(.*\) \[System\]$/\1/p; t; s/^  Input file: \(.*\)$/\1/p' |
    while IFS= read -r input; do cat "$input"; done
} | sha256sum | cut -d ' ' -f 1 > "$pch.sum.tmp"
mv "$pch.sum.tmp" "$pch.sum"
