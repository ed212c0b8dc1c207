#!/bin/sh
# The compile launcher under ccache when the build folder is the working directory (Ninja's): makes
# the command and the source the same in every clone, so that a clone in another folder hits the cache
# a checkout filled. ccache makes the paths it knows relative to CCACHE_BASEDIR, but not the header
# CMake passes to clang through -Xclang -include (the PCH's), nor the absolute paths CMake writes into
# its unity files (#include "/clone/src/io/atomic_file.cpp"). Here every argument under the build folder
# becomes relative to it, and a unity file is compiled from a copy beside it whose includes are relative
# (written when it differs): the same object, from inputs that name no clone.
#   ccache_launcher.sh BINARY_DIR CCACHE COMPILER ARGS...
set -eu
binary_dir=$1
shift
if [ "$(pwd -P)" != "$(cd "$binary_dir" && pwd -P)" ]; then exec "$@"; fi
previous=""
for arg do
  shift
  case $arg in
    "$binary_dir"/*) arg=${arg#"$binary_dir"/} ;;
  esac
  if [ "$previous" = "-c" ]; then
    case $arg in
      */Unity/unity_*.cxx)
        relocated=${arg%.cxx}.relative.cxx
        folder=$(dirname "$arg")
        sed 's|^#include "\(/[^"]*\)"$|\1|;t;d' "$arg" | while IFS= read -r source; do
          printf '#include "%s"\n' "$(realpath -m --relative-to="$folder" "$source")"
        done > "$relocated.tmp"
        if cmp -s "$relocated.tmp" "$relocated"; then rm -f "$relocated.tmp"; else mv "$relocated.tmp" "$relocated"; fi
        arg=$relocated
        ;;
    esac
  fi
  set -- "$@" "$arg"
  previous=$arg
done
exec "$@"
