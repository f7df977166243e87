#!/usr/bin/env bash
# Compiles each fusion folder fslc wrote (its .cu files) into a libfusion.so beside them, all
# at once, for the benchmark scripts (matmul_ab.py loads them): on the GPU machine, with
# nvcc for sm_90a, ptxas's report in each folder's nvcc.txt.
#   tests/bench/build_libraries.sh DIR [NAME ...]     (NAME ...: only those folders of DIR)
# A folder whose libfusion.so is newer than its .cu files and the runtime's headers is kept as it is (built here, where
# nvcc is, it need not be built again on the GPU machine's time); FORCE=1 rebuilds all;
# KEEP=1 keeps every library there is (an A/B's baseline built with the headers before a
# change to them), building only the missing ones.
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
dir="$1"
shift
only=" $* "
for d in "$dir"/*/; do
  if [ "$only" != "  " ] && ! [[ "$only" == *" $(basename "$d") "* ]]; then continue; fi
  if [ -n "${KEEP:-}" ] && [ -f "$d/libfusion.so" ]; then continue; fi
  if [ -z "${FORCE:-}" ] && [ -f "$d/libfusion.so" ] &&
    [ -z "$(find "$d" "$root/runtime/include" -maxdepth 2 \( -name '*.cu' -o -name '*.cuh' -o -name '*.h' \) \
      -newer "$d/libfusion.so")" ]; then continue; fi
  (nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Xptxas -v -shared -Xcompiler -fPIC \
    -I "$root/runtime/include" -I "$d" -o "$d/libfusion.so" "$d"/*.cu > "$d/nvcc.txt" 2>&1 ||
    { echo "BUILD FAILED: $d"; cat "$d/nvcc.txt"; }) &
done
wait
