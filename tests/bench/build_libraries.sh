#!/usr/bin/env bash
# Compiles each fusion folder fslc wrote (its .cu files) into a libfusion.so beside them, all
# at once, for the benchmark scripts (matmul_ab.py loads them): on the GPU machine, with
# nvcc for sm_90a, ptxas's report in each folder's nvcc.txt.
#   tests/bench/build_libraries.sh DIR [NAME ...]     (NAME ...: only those folders of DIR)
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
dir="$1"
shift
only=" $* "
for d in "$dir"/*/; do
  if [ "$only" != "  " ] && ! [[ "$only" == *" $(basename "$d") "* ]]; then continue; fi
  (nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Xptxas -v -shared -Xcompiler -fPIC \
    -I "$root/runtime/include" -I "$d" -o "$d/libfusion.so" "$d"/*.cu > "$d/nvcc.txt" 2>&1 ||
    { echo "BUILD FAILED: $d"; cat "$d/nvcc.txt"; }) &
done
wait
