#!/bin/sh
# The GPU issue's checks on a machine with a GPU and a CUDA PyTorch 2.x, in stages that each fit one
# device call (10 minutes); logs go to $OUT (the device tool's folder) or /tmp/device-check.
#   bench/device_check.sh build   configure against this Python's torch and build into build-gpu/
#   bench/device_check.sh test    the GPU tests (ctest -L gpu), then the CPU suite against the wheels
#   bench/device_check.sh bench   fit vs hand-written CUDA loop, vs Lightning, GPU sweep, and the
#                                 distributed benchmark (its overlap goal needs spare cores)
set -u
stage=${1:?usage: bench/device_check.sh build|test|bench}
out=${OUT:-/tmp/device-check}
mkdir -p "$out"
build=build-gpu
cli=$build/tools/fitscope/fitscope
step() {  # name command...: runs it, keeps its log, prints its tail and exit status
  name=$1
  shift
  "$@" > "$out/$name.log" 2>&1
  rc=$?
  echo "== $name: exit $rc"
  tail -n 25 "$out/$name.log"
}
case $stage in
  build)
    prefix=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')
    step configure cmake -S . -B $build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
      -DFITSCOPE_PYTHON="$(command -v python3)"
    grep "fitscope:" "$out/configure.log"  # what CMake found: CUDA, NCCL, gloo headers
    step build ninja -C $build -k 0
    grep -E "error|FAILED" "$out/build.log" | head -n 40 ;;
  test)
    step gpu-tests ctest --test-dir $build -L gpu --output-on-failure
    step cpu-tests ctest --test-dir $build -LE gpu -j "$(nproc)" --timeout 300 ;;
  bench)
    step fit-vs-handwritten $build/bench/bench_fit_vs_handwritten 5 gpu
    step lightning python3 bench/lightning_vs_fitscope.py $cli 3
    step sweep-gpu $cli sweep --device cuda --batch-sizes 16,32,64,128,256,512 --run-dir "$out/sweep-gpu"
    step sweep-cpu $cli sweep --device cpu --batch-sizes 16,32,64,128,256 --steps 20 --run-dir "$out/sweep-cpu"
    step distributed $build/bench/bench_distributed 5 300 ;;
  *)
    echo "unknown stage $stage: expected build, test or bench" >&2
    exit 2 ;;
esac
