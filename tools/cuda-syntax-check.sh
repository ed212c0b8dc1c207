#!/bin/bash
# `make cuda-check`: the files compiled only where libtorch has CUDA (FITSCOPE_WITH_CUDA), compiled here,
# without a GPU, syntax only: against Debian 13's libtorch 2.6 built with CUDA (contrib's
# libtorch-cuda-dev) and NVIDIA's CUDA and NCCL headers (non-free), with trixie's g++ (GCC, as the lent
# GPU machine builds) in the chroot of `make test-libtorch2`. So a session without a device finds a CUDA
# file's compile errors before a device call does. The packages are downloaded with apt-get download and
# their headers unpacked into a cache folder; nothing is installed in the chroot.
#   tools/cuda-syntax-check.sh [FILE...]   (default: every CUDA-only file of the tree; as root)
# Environment: FITSCOPE_TRIXIE_CHROOT (default /var/cache/fitscope/trixie-chroot; `make test-libtorch2`
# prepares it), FITSCOPE_CUDA_HEADERS (the cache; default /var/cache/fitscope/cuda-headers),
# DEBIAN_MIRROR (default http://deb.debian.org/debian), CXX (g++ or clang++; default g++).
# Everything is mounted in a private mount namespace (unshare) that ends with the script.
set -uo pipefail
[ "$(id -u)" -eq 0 ] || { echo "cuda-syntax-check.sh: chroot needs root" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
chroot_dir=${FITSCOPE_TRIXIE_CHROOT:-/var/cache/fitscope/trixie-chroot}
cache=${FITSCOPE_CUDA_HEADERS:-/var/cache/fitscope/cuda-headers}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
cxx=${CXX:-g++}
[ -x "$chroot_dir/usr/bin/$cxx" ] || { echo "cuda-syntax-check.sh: no $cxx in the chroot $chroot_dir (make test-libtorch2 prepares it)" >&2; exit 2; }
[ -d "$root/.gpu-kit/usr/include" ] || { echo "cuda-syntax-check.sh: no device kit in $root/.gpu-kit (make gpu-kit)" >&2; exit 2; }
# the headers: libtorch 2.6 with CUDA, CUDA 12.4 (cuda_fp16.h needs libcu++'s <nv/target>), NCCL
packages=(libtorch-cuda-dev nvidia-cuda-dev libcu++-dev libnccl-dev)
if [ "$(cat "$cache/.packages" 2>/dev/null)" != "${packages[*]}" ]; then
  rm -rf "$cache" && mkdir -p "$cache/lists/partial" "$cache/debs" "$cache/root" || exit 2
  echo "deb $mirror trixie main contrib non-free" > "$cache/sources.list"
  apt=(-o Dir::State::Lists="$cache/lists" -o Dir::Etc::SourceList="$cache/sources.list" -o Dir::Etc::SourceParts=/dev/null
       -o Dir::Cache="$cache/apt-cache" -o APT::Architecture=amd64)
  apt-get "${apt[@]}" update -qq || { echo "cuda-syntax-check.sh: apt-get update of trixie failed ($mirror)" >&2; exit 2; }
  (cd "$cache/debs" && apt-get "${apt[@]}" download "${packages[@]}") ||
    { echo "cuda-syntax-check.sh: apt-get download ${packages[*]} failed" >&2; exit 2; }
  for deb in "$cache"/debs/*.deb; do
    dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$cache/root" ./usr/include || { echo "cuda-syntax-check.sh: unpacking $deb failed" >&2; exit 2; }
  done
  rm -rf "$cache/debs" "$cache/apt-cache"  # 1 GB of packages for their headers
  echo "${packages[*]}" > "$cache/.packages"
fi
files=("$@")
if [ ${#files[@]} -eq 0 ]; then
  mapfile -t files < <(cd "$root" && grep -rl --include='*.cpp' -e 'FITSCOPE_WITH_CUDA' -e 'c10/cuda/' -e 'ATen/cuda/' src tests bench)
fi
# the checkout at its own path in the chroot, the headers at /mnt/cuda-headers, both read-only
unshare -m --propagation private bash -s "$chroot_dir" "$cache/root" "$root" "$cxx" "${files[@]}" <<'INNER'
set -u
chroot_dir=$1 headers=$2 root=$3 cxx=$4
shift 4
mkdir -p "$chroot_dir/mnt/cuda-headers" "$chroot_dir$root"
mount --bind -o ro "$headers" "$chroot_dir/mnt/cuda-headers" && mount -o remount,bind,ro "$chroot_dir/mnt/cuda-headers"
mount --bind "$root" "$chroot_dir$root" && mount -o remount,bind,ro "$chroot_dir$root"
k=/mnt/cuda-headers/usr/include
failed=0
for f in "$@"; do
  path=$(cd "$root" && readlink -f "$f")
  if ! chroot "$chroot_dir" /usr/bin/env -i PATH=/usr/bin:/bin LANG=C.UTF-8 "$cxx" -std=c++17 -fsyntax-only \
      -DFITSCOPE_WITH_CUDA -DUSE_C10D_GLOO -DUSE_C10D_NCCL -DUSE_DISTRIBUTED -DFITSCOPE_CLI='"fitscope"' \
      -I"$root/include" -I"$root/src" -iquote "$(dirname "$path")" -isystem $k -isystem $k/torch/csrc/api/include \
      -isystem "$root/.gpu-kit/usr/include" "$path"; then
    echo "cuda-syntax-check.sh: $f does not compile against libtorch 2.6 with CUDA" >&2
    failed=1
  else
    echo "ok $f"
  fi
done
exit $failed
INNER
