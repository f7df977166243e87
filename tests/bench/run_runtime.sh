#!/usr/bin/env bash
# On the H200 machine: the runtime-hidden-size benchmark (runtime.py) and the large-T
# profile of rms_norm_add against Inductor (profile_large_t.py under Nsight Compute).
#
#   OUT=... bash tests/bench/run_runtime.sh FUSIONS [H,... [T,...]] [--profile H,H T]
#   (FSL_BENCH_SKIP=1: the profile only)
#
# Needs, carried from the build machine: bench-build/ (tests/bench/generate.sh) and the
# JIT's shared library with python/ (FSL_LIBRARY, default build/lib/libfsl.so).
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$root/bench-build"
out="${OUT:-$build}"
fusions="$1"; shift
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader > "$out/gpu.txt"
build_lib() { # a generated .cu into lib<fusion>.so next to it
  f="$1"; d="$(dirname "$f")"; n="$(basename "$f" .cu)"
  [ -f "$d/lib$n.so" ] || nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -shared \
    -Xcompiler -fPIC -I "$root/runtime/include" -I "$d" -o "$d/lib$n.so" "$f" || echo "BUILD FAILED $f"
}
export -f build_lib; export root
for fusion in ${fusions//,/ }; do
  ls "$build"/auto_*/"$fusion.cu" "$build/dynamic/$fusion.cu" "$build/generic/$fusion.cu"
done | xargs -P 16 -I{} bash -c 'build_lib {}'
[ -f "$build/libcopy16.so" ] || nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -shared \
  -Xcompiler -fPIC -o "$build/libcopy16.so" "$root/tests/bench/copy16.cu"
export PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}"
export FSL_LIBRARY="${FSL_LIBRARY:-$root/build/lib/libfsl.so}"
export FSLC_STDLIB="$root/stdlib"
status=0
bench_args=()
while [ $# -gt 0 ] && [ "$1" != "--profile" ]; do bench_args+=("$1"); shift; done
if [ -z "${FSL_BENCH_SKIP:-}" ]; then
  PYTHONUNBUFFERED=1 python3 "$root/tests/bench/runtime.py" "$build" "$out" "$fusions" "${bench_args[@]}" || status=1
fi
# --profile H,H T: Nsight Compute on ours and Inductor's rms_norm_add at each H and T.
while [ $# -gt 0 ]; do
  if [ "$1" = "--profile" ]; then
    for H in ${2//,/ }; do
      build_lib "$build/auto_$H/rms_norm_add.cu"
      TORCH_LOGS=output_code ncu --profile-from-start off \
        --section SpeedOfLight --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables \
        --section WarpStateStats --section InstructionStats --section LaunchStats --section Occupancy \
        --section SchedulerStats \
        python3 "$root/tests/bench/profile_large_t.py" "$build" "$H" "$3" > "$out/ncu_rms_norm_add_${H}_$3.txt" 2>&1
      echo "== ncu rms_norm_add H=$H T=$3"
      grep -E "^  [A-Za-z_].*\(|Duration|DRAM Throughput|Memory Throughput|L2 Hit Rate|L1/TEX Hit|Registers Per|Achieved Occupancy|Issued Warp|No Eligible|Warp Cycles Per Issued|Executed Instructions  " \
        "$out/ncu_rms_norm_add_${H}_$3.txt" | head -40
    done
    shift 3
  else
    shift
  fi
done
exit $status
