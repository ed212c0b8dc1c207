#!/bin/sh
# `make gpu-kit`: the build's dependencies other than libtorch, as Debian packages unpacked into one
# folder (.gpu-kit/usr), for a machine that has a compiler, CMake, ninja and a libtorch but no apt and no
# internet (the lent GPU machine). bench/device_check.sh puts .gpu-kit/usr on CMAKE_PREFIX_PATH, PATH
# (protoc) and LD_LIBRARY_PATH. The packages are this machine's Debian's (12): their libraries need
# glibc 2.36 and GCC 12's libstdc++ at most, which any newer system has; protoc and the protobuf
# headers and library come from one package version. Never libc6 or libstdc++6.
set -eu
kit=${1:-.gpu-kit}
packages="libcli11-dev nlohmann-json3-dev libtomlplusplus-dev libtomlplusplus3
  libprotobuf-dev libprotobuf32 protobuf-compiler libprotoc32
  libturbojpeg0-dev libturbojpeg0 libpng-dev libpng16-16 zlib1g-dev zlib1g
  libgtest-dev libbenchmark-dev libbenchmark1debian libgloo-dev"
debs=$(mktemp -d)
trap 'rm -rf "$debs"' EXIT
(cd "$debs" && apt-get download $packages >/dev/null 2>"$debs/apt.log") || {
  cat "$debs/apt.log" >&2
  echo "gpu-kit: apt-get download failed (run apt-get update first?)" >&2
  exit 1
}
rm -rf "$kit"
mkdir -p "$kit"
for f in "$debs"/*.deb; do dpkg -x "$f" "$kit"; done
rm -rf "$kit/usr/share/doc" "$kit/usr/share/man" "$kit/usr/share/lintian"
# absolute links (zlib1g-dev's libz.so -> /lib/x86_64-linux-gnu/libz.so.1.2.13) point into the kit
# instead: the same path on another system is another version or nothing
find "$kit" -type l | while read -r link; do
  target=$(readlink "$link")
  case $target in
    /*) if [ -e "$kit$target" ]; then ln -sfn "$(realpath --relative-to="$(dirname "$link")" "$kit$target")" "$link"; fi ;;
  esac
done
# static archives only where no shared library stands beside them (GoogleTest's): a shared library
# cannot take in a static one built without -fPIC (zlib's libz.a)
find "$kit" -name '*.a' ! -name 'libgtest*' ! -name 'libgmock*' ! -name 'libbenchmark_main.a' -delete
for f in "$debs"/*.deb; do dpkg-deb -W --showformat='${Package} ${Version}\n' "$f"; done > "$kit/packages.txt"
size=$(du -sm "$kit" | cut -f1)
echo "gpu-kit: $(wc -l < "$kit/packages.txt") packages unpacked into $kit ($size MiB)"
if [ "$size" -gt 60 ]; then
  echo "gpu-kit: $kit is $size MiB, over the 60 MiB a device call carries" >&2
  exit 1
fi
