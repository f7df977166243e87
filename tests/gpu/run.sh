#!/usr/bin/env bash
# Runs on the H200 machine: builds every generated fusion with nvcc and checks it against
# PyTorch in float64 on fresh random inputs (outputs poisoned with NaN first).
# Usage there: bash tests/gpu/run.sh   (after tests/gpu/generate.sh here, carrying gpu-build)
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$root/gpu-build"
out="${OUT:-$build}"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
build_one() {  # builds one generated fusion folder (softmax_4096.unswitch -> softmax)
  dir="$1"; name="$(basename "$dir")"; fusion="${name%_*}"
  nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Xptxas -v -shared -Xcompiler -fPIC \
    -I "$root/runtime/include" -I "$dir" -o "$dir/lib$fusion.so" "$dir/$fusion.cu" \
    > "$dir/nvcc.txt" 2>&1 || { echo "BUILD FAILED: $name"; cat "$dir/nvcc.txt"; }
}
export -f build_one; export root
ls -d "$build"/*_*/ | xargs -P 16 -I{} bash -c 'build_one {}'
# The runtime-size norms: one library a fusion of gpu-build/runtime.
for cu in "$build"/runtime/*.cu; do
  fusion="$(basename "$cu" .cu)"
  nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Xptxas -v -shared -Xcompiler -fPIC \
    -I "$root/runtime/include" -I "$build/runtime" -o "$build/runtime/lib$fusion.so" "$cu" \
    > "$build/runtime/$fusion.nvcc.txt" 2>&1 || { echo "BUILD FAILED: runtime/$fusion"; cat "$build/runtime/$fusion.nvcc.txt"; } &
done
wait
for dir in "$build"/*_*/; do
  grep -E "registers" "$dir/nvcc.txt" | sed "s/^/$(basename "$dir"): /" >> "$out/ptxas.txt"
done
# The runtime's JIT path against the ahead-of-time build of the same kernel.
runtime_sources=("$root/runtime/src/jit.cpp" "$root/runtime/src/jit_cache.cpp" "$root/runtime/src/sha256.cpp")
nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -DFSL_RUNTIME_VERSION='"0.1.0"' \
  -I "$root/runtime/include" -I "$build/jit" -I "$build/softmax_4096" -o "$build/jit_gpu_test" \
  "$root/tests/gpu/jit_gpu_test.cu" "$build/softmax_4096/softmax.cu" "${runtime_sources[@]}" \
  -lnvrtc -lcuda -ldl \
  && "$build/jit_gpu_test" "$build/softmax_4096/softmax.cu" /tmp/fsl-jit-cache | tee "$out/jit.txt"
# The specializing JIT: rms_norm_add with H runtime at H = 4096 and 7168, specialized by
# libfslc on the build machine (gpu-build/specialize), against the static kernels.
nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -DFSL_RUNTIME_VERSION='"0.1.0"' \
  -I "$root/runtime/include" -I "$root/jit/include" -I "$root/jit/src" -I "$build/jit" \
  -I "$build/specialize" -o "$build/specialize_gpu_test" "$root/tests/gpu/specialize_gpu_test.cu" \
  "$build/specialize/h4096_rms_norm_add.cu" "$build/specialize/h7168_rms_norm_add.cu" \
  "$root/jit/src/session.cpp" "$root/jit/src/launch_plan.cpp" "${runtime_sources[@]}" -lnvrtc -ldl \
  && "$build/specialize_gpu_test" "$build/specialize" /tmp/fsl-specialize-cache | tee "$out/specialize.txt"
PYTHONUNBUFFERED=1 python3 "$root/tests/gpu/check.py" "$build" "$out"
# Hostile names: the printed CUDA of programs named with keywords and generated names.
PYTHONUNBUFFERED=1 python3 "$root/tests/gpu/hostile_names_gpu.py" "$build" "$out"
# The matrix products: built with ptxas's report (a wgmma serialization warning, C7510 or
# C7515, fails the suite), checked against PyTorch and timed against cuBLAS, all variants
# in one process (tests/gpu/matmul.sh runs this part alone).
bash "$root/tests/gpu/matmul.sh"
# The JIT's matrix products through the Python package (libfsl.so's session: tensor maps,
# workspaces, clusters) against PyTorch, timed against the AOT kernels matmul.sh built.
library="${FSL_LIBRARY:-$root/build/lib/libfsl.so}"
if [ -f "$library" ]; then
  PYTHONUNBUFFERED=1 python3 "$root/tests/gpu/jit_matmul_test.py" --library "$library" \
    --stdlib "$root/stdlib" --aot "$build" 2>&1 | tee "$out/jit_matmul.txt"
else
  echo "SKIPPED: tests/gpu/jit_matmul_test.py needs libfsl.so ($library; set FSL_LIBRARY)"
fi
# The stdlib's training forward fusions (swiglu_fused, rope, cross_entropy) through the
# Python package, against PyTorch in float64.
if [ -f "$library" ]; then
  PYTHONUNBUFFERED=1 python3 "$root/tests/gpu/training_test.py" --library "$library" \
    --stdlib "$root/stdlib" 2>&1 | tee "$out/training.txt"
fi
