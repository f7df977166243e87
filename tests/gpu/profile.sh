#!/usr/bin/env bash
# Runs on the H200 machine: Nsight Compute on chosen matmul variants (after
# tests/gpu/generate.sh here). Usage: OUT=... bash tests/gpu/profile.sh "VARIANT M N K" ...
# Writes ncu_VARIANT_M.txt (speed of light, warp states, memory, launch) for each.
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$root/gpu-build"
out="${OUT:-$build}"
build_variant() {
  dir="$build/matmul/$1"
  [ -f "$dir/libfusion.so" ] || nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a \
    -shared -Xcompiler -fPIC -I "$root/runtime/include" -I "$dir" -o "$dir/libfusion.so" "$dir"/*.cu
}
export -f build_variant; export root build
for spec in "$@"; do echo "$spec"; done | cut -d' ' -f1 | sort -u | xargs -P 8 -I{} bash -c 'build_variant {}'
for spec in "$@"; do
  set -- $spec
  ncu --kernel-name regex:"linear|matmul" --launch-skip 4 --launch-count 2 \
    --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis \
    --section LaunchStats --section SchedulerStats \
    python3 "$root/tests/gpu/profile_matmul.py" "$build" "$1" "$2" "$3" "$4" 8 \
    > "$out/ncu_$1_$2.txt" 2>&1
  echo "== $spec"; grep -E "^  [a-z_]+.*\(|Duration|Compute \(SM\) Throughput|DRAM Throughput|Memory Throughput|L2 Hit|Registers Per|Issued Warp|No Eligible|Warp Cycles Per Issued" "$out/ncu_$1_$2.txt" | head -40
done
