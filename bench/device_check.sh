#!/bin/bash
# The GPU issue's checks in one device call (at most 10 minutes, a bare machine): from the device kit
# (make gpu-kit, carried as .gpu-kit) and this Python's torch, configure and build only what the checks
# need, run the GPU tests, the demo, and the figures, then leave in $OUT one summary JSON
# (gpu-summary.json, bench/device_summary.py) and every log and run file (device-check.tar.gz).
# Stages run by priority under one time budget: a stage gets what is left of it, and the stages the
# budget cannot reach are skipped and named, so whatever ran comes back.
#   bench/device_check.sh [cuda|cpu]   cpu: the rehearsal of the same script on a machine without a GPU
# Environment: OUT (default /tmp/device-check), BUDGET_S (default 560), SCALE (each stage's own limit
# times this; default 1, more for a slow rehearsal), PYTHON (default python3), TORCH_PREFIX (libtorch's
# CMake prefix; default: PYTHON's torch.utils.cmake_prefix_path, cuda only), BUILD_DIR (default
# build-gpu), ROUNDS (default 3), BUILT (1: BUILD_DIR is built already; configure and build are skipped),
# STAGES (the names of the stages to run, space-separated; default all: a second call runs what the
# first could not), CMAKE_ARGS (more configure arguments).
set -u
device=${1:-cuda}
case $device in cuda | cpu) ;; *) echo "device_check.sh: device '$device' (expected cuda or cpu)" >&2; exit 2 ;; esac
root=$(pwd)
out=${OUT:-/tmp/device-check}
logs=$out/logs
runs=$out/runs
rm -rf "$logs" "$runs" && mkdir -p "$logs" "$runs"
start=$(date +%s)
budget=${BUDGET_S:-560}
rounds=${ROUNDS:-3}
python=${PYTHON:-python3}
build=${BUILD_DIR:-build-gpu}
cli=$build/tools/fitscope/fitscope
kit=$root/.gpu-kit/usr
[ -d "$kit" ] || { echo "device_check.sh: no device kit in $kit (make gpu-kit, and carry .gpu-kit)" >&2; exit 2; }
scale=${SCALE:-1}
export PATH=$kit/bin:/usr/local/cuda/bin:$PATH  # the kit's protoc
# the kit's libraries for its protoc, in the build only: what is built finds them through its RUNPATH
kit_libs=$kit/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0}
stages=$out/stages.tsv
: > "$stages"

# stage NAME SECONDS COMMAND...: runs COMMAND for at most SECONDS or what the budget has left (20 s
# stay for packing), its output in $logs/NAME.log; records NAME, exit status and seconds in stages.tsv
stage() {
  local name=$1 most=$2 left t0 rc
  shift 2
  if [ -n "${STAGES:-}" ] && [[ " $STAGES " != *" $name "* ]]; then
    printf '%s\tnot asked\t0\n' "$name" >> "$stages"
    return 1
  fi
  left=$((start + budget - 20 - $(date +%s)))
  if [ "$left" -lt 10 ]; then
    printf '%s\tskipped\t0\n' "$name" >> "$stages"
    echo "== $name: skipped, the budget is spent"
    return 1
  fi
  most=$((most * scale))
  [ "$most" -gt "$left" ] && most=$left
  t0=$(date +%s)
  timeout -k 5 "$most" bash -c '"$@"' "$name" "$@" > "$logs/$name.log" 2>&1  # bash: a stage may be a function
  rc=$?
  printf '%s\t%s\t%s\n' "$name" "$rc" "$(($(date +%s) - t0))" >> "$stages"
  echo "== $name: exit $rc in $(($(date +%s) - t0)) s"
  tail -n 4 "$logs/$name.log" | cut -c1-300
  return $rc
}

facts() {
  echo "device: $device"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>&1 || true
  "$python" -c 'import torch, sys; print("torch", torch.__version__, "cuda", torch.version.cuda, "python", sys.version.split()[0])'
  g++ --version | head -n 1
  cmake --version | head -n 1
  ldd --version | head -n 1
  echo "cores $(nproc)"
  for h in cublas_v2.h cublasLt.h cusparse.h cusolverDn.h nccl.h; do
    [ -f /usr/local/cuda/include/$h ] && echo "cuda header $h: /usr/local/cuda/include" || echo "cuda header $h: missing"
  done
  "$python" -c 'import glob, os, torch; d = os.path.dirname(os.path.dirname(torch.__file__)); print("nccl.h beside torch:", glob.glob(d + "/nvidia/**/nccl.h", recursive=True)); print("gloo headers in the wheel:", os.path.exists(os.path.join(os.path.dirname(torch.__file__), "include", "gloo", "algorithm.h")))' 2>&1
}

configure() {
  local prefix=$kit extra=()
  if [ "$device" = cuda ]; then
    prefix="$kit;${TORCH_PREFIX:-$("$python" -c 'import torch; print(torch.utils.cmake_prefix_path)')}"
    extra+=(-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc -DCUDAToolkit_ROOT=/usr/local/cuda)
    # the CUDA libraries' headers that ATen's CUDA headers include, from the wheels where the toolkit lacks them
    if [ ! -f /usr/local/cuda/include/cublas_v2.h ]; then
      local inc
      inc=$("$python" -c 'import glob, os, torch; d = os.path.dirname(os.path.dirname(torch.__file__)); print(" ".join("-isystem " + os.path.dirname(p) for p in sorted(set(glob.glob(d + "/nvidia/**/include/cublas_v2.h", recursive=True) + glob.glob(d + "/nvidia/**/include/cusparse.h", recursive=True) + glob.glob(d + "/nvidia/**/include/cusolverDn.h", recursive=True)))))')
      extra+=("-DCMAKE_CXX_FLAGS=$inc")
    fi
  elif [ -n "${TORCH_PREFIX:-}" ]; then
    prefix="$kit;$TORCH_PREFIX"
  fi
  LD_LIBRARY_PATH=$kit_libs cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
    -DFITSCOPE_PYTHON="$(command -v "$python")" -DFITSCOPE_BUILD_EXAMPLES=OFF -DCMAKE_POLICY_VERSION_MINIMUM=3.5 \
    "${extra[@]}" ${CMAKE_ARGS:-}
}

build_targets() {
  local targets=(fitscope_cli bench_gpu_figures bench_fit_vs_handwritten bench_layer_probe)
  [ "$device" = cuda ] && targets+=(fitscope_gpu_tests bench_cuda_graph)
  LD_LIBRARY_PATH=$kit_libs ninja -C "$build" -j "$(nproc)" -k 0 "${targets[@]}"
}

# train NAME ARGS...: `fitscope train` into $runs/NAME (the run directory's summary.json is kept)
train() {
  local name=$1
  shift
  "$cli" train --device "$device" --run-dir "$runs/$name" --overwrite --no-progress "$@"
}

# one level below the phases, eager (a replayed graph has no layers to probe): the seed CNN and MLP
# with their layers probed one step in 8 and their memory counted (summary.json's layers, memory, peak)
layer_runs() {
  train layers-cnn --model cnn --batch-size 256 --epochs 2 --synthetic-size 30000 --layer-probe-every 8 --cuda-graph off &&
    train layers-mlp --model mlp --batch-size 32 --epochs 1 --synthetic-size 20000 --layer-probe-every 8 --cuda-graph off
}

export -f facts configure build_targets train layer_runs
export device root out runs python build cli kit kit_libs
stage facts 30 facts
if [ "${BUILT:-0}" != 1 ]; then
  stage configure 240 configure && stage build 9999 build_targets  # the build takes what the budget has
fi
if [ "$device" = cuda ]; then
  stage gpu-tests 180 "$build/tests/fitscope_gpu_tests" --gtest_output="json:$out/gpu-tests.json"
fi
stage demo 90 train demo --epochs 3
stage layers 90 layer_runs
stage layer-probe 150 "$build/bench/bench_layer_probe" 4 "$((${SCALE:-1} * 300))" "$device"
stage figures 200 "$build/bench/bench_gpu_figures" "$rounds" "$device"
stage launch-mlp-32 60 train launch-mlp-32 --model mlp --batch-size 32 --epochs 1 --synthetic-size 20000 --warmup-steps 11
stage launch-cnn-1024 60 train launch-cnn-1024 --model cnn --batch-size 1024 --epochs 2 --synthetic-size 30000 --warmup-steps 11
stage launch-cnn-4096 60 train launch-cnn-4096 --model cnn --batch-size 4096 --epochs 2 --synthetic-size 65536 --warmup-steps 11
if [ "$device" = cuda ]; then
  stage cuda-graph 150 "$build/bench/bench_cuda_graph" 5 32 2000
  stage handwritten 150 "$build/bench/bench_fit_vs_handwritten" "$rounds" gpu
  stage lightning 150 "$python" bench/lightning_vs_fitscope.py "$cli" 2
  stage sweep 120 "$cli" sweep --device cuda --batch-sizes 16,32,64,128,256,512,1024 --memory-budget 150M --run-dir "$runs/sweep"
else
  stage sweep 120 "$cli" sweep --device cpu --batch-sizes 16,64 --steps 10 --run-dir "$runs/sweep"
fi

"$python" bench/device_summary.py "$out" "$device" > "$logs/summary.log" 2>&1 || tail -n 5 "$logs/summary.log"
tar -czf "$out/device-check.tar.gz" -C "$out" logs runs stages.tsv $(cd "$out" && ls gpu-tests.json 2>/dev/null)
# the binaries, should a second call want to run without building
if [ -f "$cli" ]; then
  tar -czf "$out/build-bin.tar.gz" "$build"/tools/fitscope/fitscope "$build"/src/libfitscope.so* "$build"/bench/bench_gpu_figures \
    "$build"/bench/bench_fit_vs_handwritten "$build"/bench/bench_layer_probe $(ls "$build"/tests/fitscope_gpu_tests "$build"/bench/bench_cuda_graph 2>/dev/null) 2>/dev/null
fi
rm -rf "$runs" "$logs"  # in the archive: at most 8 files come back from a device call
echo "== stages (name, exit, seconds):"
cat "$stages"
[ -f "$out/gpu-summary.json" ] && "$python" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(json.dumps(d.get("headline", {}), indent=1))' "$out/gpu-summary.json"
