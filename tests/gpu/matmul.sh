#!/usr/bin/env bash
# Runs on the H200 machine: builds every matmul variant tests/gpu/generate.sh wrote (with
# ptxas's report: registers, spills, shared memory; a wgmma serialization warning, C7510 or
# C7515, is a failure), then checks and times them all in one process (matmul.py).
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$root/gpu-build"
out="${OUT:-$build}"
build_variant() {
  dir="$build/matmul/$1"
  nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Xptxas -v -shared -Xcompiler -fPIC \
    -I "$root/runtime/include" -I "$dir" -o "$dir/libfusion.so" "$dir"/*.cu \
    > "$dir/nvcc.txt" 2>&1 || { echo "BUILD FAILED: matmul $1"; cat "$dir/nvcc.txt"; }
}
export -f build_variant; export root build
cut -d' ' -f1 "$build/matmul/variants.txt" | xargs -P 16 -I{} bash -c 'build_variant {}'
for name in $(cut -d' ' -f1 "$build/matmul/variants.txt"); do
  dir="$build/matmul/$name"
  grep -E "registers|spill|smem" "$dir/nvcc.txt" | sed "s/^/matmul $name: /" | tee -a "$out/ptxas.txt"
  if grep -qE "C7510|C7515" "$dir/nvcc.txt"; then echo "FAIL: matmul $name: wgmma serialized"; fi
done
PYTHONUNBUFFERED=1 python3 "$root/tests/gpu/matmul.py" "$build" "$out" \
  2>&1 | grep -v -e Warning -e warnings.warn | tee "$out/matmul.md"
