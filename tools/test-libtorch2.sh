#!/bin/bash
# `make test-libtorch2`: the tree built and its whole test suite run against Debian 13's (trixie's)
# libtorch 2.6, in a trixie chroot made from nothing with debootstrap. The chroot holds only the compiler,
# CMake, ninja, libtorch-dev and what the tests need at run time; every other build dependency comes from
# the device kit (make gpu-kit: Debian 12 packages unpacked into .gpu-kit/usr), the way
# bench/device_check.sh builds on the lent GPU machine, so a green run also proves the kit alone supplies
# them.
#   tools/test-libtorch2.sh [prepare|build|run|all]   (default all: prepare, then run; as root)
#   prepare  debootstrap --variant=minbase trixie into the cache directory and install PACKAGES in it; a
#            stamp file listing the packages makes a second prepare a no-op (another list installs again)
#   build    bind-mount the checkout at its own path in the chroot; configure with CMake into
#            build-libtorch2/ (the kit on CMAKE_PREFIX_PATH) and build with ninja (CI runs it in the
#            background, at the lowest priority, while its other stages leave cores idle)
#   run      build (nothing to do when built), then run ctest as `make test` does
# Environment: FITSCOPE_TRIXIE_CHROOT (the cache directory; default /var/cache/fitscope/trixie-chroot),
# DEBIAN_MIRROR (default http://deb.debian.org/debian), JOBS (default: nproc), TESTS (a ctest -R regular
# expression: only those tests; default all).
# Everything runs in a private mount namespace (unshare): /proc, /sys, /dev, /run and the checkout are
# mounted in the chroot only for the step that needs them, unmounted by the exit trap, and whatever a
# failure or a test leaves mounted goes with the namespace, never onto the host.
set -euo pipefail
step=${1:-all}
case $step in prepare | build | run | all) ;; *) echo "test-libtorch2.sh: step '$step' (expected prepare, build, run or all)" >&2; exit 2 ;; esac
[ "$(id -u)" -eq 0 ] || { echo "test-libtorch2.sh: debootstrap and chroot need root" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
chroot_dir=${FITSCOPE_TRIXIE_CHROOT:-/var/cache/fitscope/trixie-chroot}
chroot_dir=${chroot_dir%/}
case $chroot_dir in /?*) ;; *) echo "test-libtorch2.sh: FITSCOPE_TRIXIE_CHROOT must be an absolute path, not '/'" >&2; exit 2 ;; esac
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
jobs=${JOBS:-$(nproc)}
build="build-libtorch2"
stamp=$chroot_dir/.fitscope-packages
# The chroot's packages: the toolchain (clang, as `make test` builds; g++ for its libstdc++) and
# libtorch, then what the tests run: python3-torch (TorchScript
# files), OpenBLAS's pthread build (the thread-policy tests; `make test` has it too), iproute2 (two
# network namespaces), pkg-config (the package test), chromium (the report renders in a browser); ccache,
# whose cache (the chroot's /root/.cache/ccache) stays with the chroot, so a second run rebuilds little.
# Nothing the kit supplies: its CLI11, json, toml++, protobuf + protoc, TurboJPEG, libpng, zlib, gtest,
# benchmark and gloo must be the ones found.
# libgloo-dev too: gloo's headers must be those of the gloo libtorch was built with (trixie's), which
# the kit's (Debian 12's, for wheels that ship none) are not; CMake takes the ones beside libtorch first.
packages=(g++ clang libclang-rt-dev cmake ninja-build libtorch-dev libgloo-dev
  python3-torch libopenblas0-pthread iproute2 pkg-config chromium ccache libtcmalloc-minimal4t64)
# libtorch-dev depends on libprotobuf-dev, and that on zlib1g-dev: their headers, link-time symlinks,
# static libraries and pkg-config files stay out of the chroot (dpkg path-exclude; the packages count as
# installed), so the kit's protobuf and zlib are the only ones a build can find. The shared libraries
# libtorch runs with (libprotobuf.so.32, libz.so.1) stay.
lib=/usr/lib/x86_64-linux-gnu
hidden=("/usr/include/google/protobuf/*" "$lib/libprotobuf*.so" "$lib/libprotobuf*.a" "$lib/pkgconfig/protobuf*.pc"
  /usr/include/zlib.h /usr/include/zconf.h "$lib/libz.so" "$lib/libz.a" "$lib/pkgconfig/zlib.pc")

# the rest of the script in its own mount namespace (the marker keeps the re-run from unsharing again)
if [ "${FITSCOPE_LIBTORCH2_NS:-}" != "$$" ]; then
  command -v unshare > /dev/null || { echo "test-libtorch2.sh: no unshare (util-linux)" >&2; exit 2; }
  exec unshare --mount --propagation private -- /bin/bash -c 'FITSCOPE_LIBTORCH2_NS=$$ exec /bin/bash "$0" "$@"' \
    "$0" "$@"
fi

# mounts made in the chroot, newest first, for unmount_all
mounted=()
# mount_in TARGET MOUNT-ARGS...: mounts on the chroot's TARGET, remembered for the exit trap
mount_in() {
  local target=$chroot_dir$1
  shift
  mkdir -p "$target"
  mount "$@" "$target"
  mounted=("$target" "${mounted[@]}")
}
unmount_all() {
  local m
  for m in "${mounted[@]}"; do
    umount -R "$m" 2> /dev/null || umount -R -l "$m" || echo "test-libtorch2.sh: cannot unmount $m" >&2
  done
  mounted=()
}
trap unmount_all EXIT
trap 'exit 130' INT TERM HUP  # through the EXIT trap

# in_chroot COMMAND...: COMMAND in the chroot with a clean environment
in_chroot() {
  chroot "$chroot_dir" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}" \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"
}

prepare() {
  local want t0
  t0=$(date +%s)
  want=$(printf '%s\n' "${packages[@]}" "${hidden[@]/#/hidden }")
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    echo "test-libtorch2.sh: $chroot_dir is ready (${packages[*]})"
    return
  fi
  if [ ! -x "$chroot_dir/usr/bin/apt-get" ]; then
    command -v debootstrap > /dev/null || { echo "test-libtorch2.sh: no debootstrap (apt-get install debootstrap)" >&2; exit 2; }
    [ ! -e "$chroot_dir" ] || { echo "test-libtorch2.sh: $chroot_dir is there but no chroot: remove it" >&2; exit 1; }
    # into a side directory, renamed once complete: a broken bootstrap never looks like a chroot
    rm -rf "$chroot_dir.new"
    mkdir -p "$(dirname "$chroot_dir")"
    echo "test-libtorch2.sh: debootstrap --variant=minbase trixie into $chroot_dir ($mirror)"
    debootstrap --variant=minbase trixie "$chroot_dir.new" "$mirror" > "$chroot_dir.new.log" 2>&1 || {
      tail -n 30 "$chroot_dir.new.log" >&2
      echo "test-libtorch2.sh: debootstrap failed (log: $chroot_dir.new.log)" >&2
      exit 1
    }
    mv "$chroot_dir.new.log" "$chroot_dir.new/debootstrap.log"
    mv "$chroot_dir.new" "$chroot_dir"
    echo "test-libtorch2.sh: debootstrap took $(($(date +%s) - t0)) s"
  fi
  # no daemons started by maintainer scripts, no recommends, no documentation
  printf '#!/bin/sh\nexit 101\n' > "$chroot_dir/usr/sbin/policy-rc.d"
  chmod 755 "$chroot_dir/usr/sbin/policy-rc.d"
  printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n' > "$chroot_dir/etc/apt/apt.conf.d/90fitscope"
  printf 'path-exclude %s\n' /usr/share/doc/\* /usr/share/man/\* /usr/share/info/\* "${hidden[@]}" \
    > "$chroot_dir/etc/dpkg/dpkg.cfg.d/90fitscope"
  cp /etc/resolv.conf "$chroot_dir/etc/resolv.conf" 2> /dev/null || true
  rm -f "$stamp"
  mount_in /proc -t proc proc
  mount_in /sys --rbind /sys
  mount_in /dev --rbind /dev
  echo "test-libtorch2.sh: apt-get install in the chroot: ${packages[*]}"
  in_chroot apt-get update -q
  in_chroot env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${packages[@]}"
  # unpacked again under the exclusions, should an earlier list have installed them whole
  in_chroot env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --reinstall libprotobuf-dev zlib1g-dev
  local h
  for h in "${hidden[@]}"; do
    if compgen -G "$chroot_dir$h" > /dev/null; then
      echo "test-libtorch2.sh: $h is in the chroot; only the kit may supply it" >&2
      exit 1
    fi
  done
  in_chroot apt-get clean
  rm -rf "$chroot_dir"/var/lib/apt/lists/*
  unmount_all
  printf '%s\n' "$want" > "$stamp"
  echo "test-libtorch2.sh: $chroot_dir ready in $(($(date +%s) - t0)) s, $(du -sm "$chroot_dir" | cut -f1) MiB"
}

# run [test]: builds in the chroot, and runs the tests with `test`
run() {
  local kit=$root/.gpu-kit/usr
  [ -f "$stamp" ] || { echo "test-libtorch2.sh: no chroot in $chroot_dir (tools/test-libtorch2.sh prepare)" >&2; exit 2; }
  [ -d "$kit" ] || { echo "test-libtorch2.sh: no device kit in $kit (make gpu-kit)" >&2; exit 2; }
  # the chroot on itself first: its / must be a mount point for `ip netns exec` (mount --make-rslave /)
  mount_in / --bind "$chroot_dir"
  mount_in /proc -t proc proc
  mount_in /sys --rbind /sys
  mount_in /dev --rbind /dev  # with /dev/pts and /dev/shm
  mount_in /run -t tmpfs tmpfs  # ip netns keeps its namespaces in /run/netns
  mount_in "$root" --bind "$root"
  # the kit outside the checkout, where a user's prefix would be: an installed fitscope's RUNPATH keeps
  # the folders of its dependencies outside the project only (INSTALL_RPATH_USE_LINK_PATH)
  mount_in /opt/fitscope-kit --bind "$root/.gpu-kit"
  # the kit's protoc on PATH and its libraries for protoc in the build only: what is built finds them
  # through its RUNPATH (as bench/device_check.sh)
  in_chroot /bin/bash -c '
    set -eu
    cd "$1"
    kit=/opt/fitscope-kit/usr
    export PATH=$kit/bin:$PATH
    kit_libs=$kit/lib/x86_64-linux-gnu
    echo "== trixie: $(dpkg-query -W -f="\${Package} \${Version}" libtorch-dev), $(clang++ --version | head -n 1), $(cmake --version | head -n 1)"
    LD_LIBRARY_PATH=$kit_libs cmake -S . -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_PREFIX_PATH="$kit"
    LD_LIBRARY_PATH=$kit_libs ninja -C "$2" -j "$3"
    [ "$5" != test ] || ctest --test-dir "$2" --output-on-failure -j "$3" ${4:+-R "$4"}
  ' test-libtorch2 "$root" "$build" "$jobs" "${TESTS:-}" "${1:-}"
  unmount_all
}

case $step in
  prepare) prepare ;;
  build) run ;;
  run) run test ;;
  all)
    prepare
    run test
    ;;
esac
