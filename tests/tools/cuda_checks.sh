#!/usr/bin/env bash
# Every generated CUDA source compiles for sm_90a (nvcc, no GPU needed), the generated
# launcher refuses bad tensors (tests/launcher/validation_test.cpp, run here), and every
# helper of fsl/device.cuh compiles (tests/device/device_header_test.cu).
# usage: cuda_checks.sh FSLC NVCC REPO_ROOT WORKDIR
set -euo pipefail
fslc="$1" nvcc="$2" root="$3" work="$4"
rm -rf "$work" && mkdir -p "$work"
flags=(-std=c++17 -gencode=arch=compute_90a,code=sm_90a -I "$root/runtime/include")
passed=0
for fusion in rms_norm_add layer_norm softmax; do
  "$fslc" --emit=cuda -o "$work/$fusion" "$root/examples/$fusion.fsl"
  "$nvcc" "${flags[@]}" -Xptxas -v -I "$work/$fusion" -c "$work/$fusion/$fusion.cu" \
    -o "$work/$fusion/$fusion.o" 2> "$work/$fusion/ptxas.txt"
  echo "compiled $fusion for sm_90a: $(grep -c 'registers' "$work/$fusion/ptxas.txt") kernels"
  passed=$((passed + 1))
done
"$nvcc" "${flags[@]}" -I "$work/rms_norm_add" -o "$work/validation" \
  "$root/tests/launcher/validation_test.cpp" "$work/rms_norm_add/rms_norm_add.cu"
"$work/validation"
# fsl/device.cuh on its own: every helper instantiated, its inline PTX assembled by ptxas.
"$nvcc" "${flags[@]}" -c "$root/tests/device/device_header_test.cu" -o "$work/device_header_test.o"
echo "compiled tests/device/device_header_test.cu for sm_90a"
passed=$((passed + 1))
echo "cuda checks: $passed compiled"
