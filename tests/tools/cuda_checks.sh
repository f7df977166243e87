#!/usr/bin/env bash
# Every generated CUDA source compiles for sm_90a (nvcc, no GPU needed) without a single
# warning, two specializations of one fusion link into one program, the generated
# launcher refuses bad tensors and launches beyond the target's limits
# (tests/launcher/validation_test.cpp, limits_test.cpp, run here), its status
# is its own launch's (tests/launcher/launch_status_test.cu, run when a GPU is visible),
# and every helper of fsl/device.cuh compiles (tests/device/device_header_test.cu).
# usage: cuda_checks.sh FSLC NVCC REPO_ROOT WORKDIR
set -euo pipefail
fslc="$1" nvcc="$2" root="$3" work="$4"
rm -rf "$work" && mkdir -p "$work"
flags=(-std=c++17 -gencode=arch=compute_90a,code=sm_90a -I "$root/runtime/include")
# Users build generated code with their own warning flags: any warning of nvcc's front end,
# of ptxas or of the host compiler fails the check.
strict=(-Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror)
passed=0

# generate NAME FSL [fslc options...]: NAME.cu and NAME.h into $work/NAME.
generate() {
  local name="$1" input="$2"
  shift 2
  "$fslc" --emit=cuda -o "$work/$name" "$@" "$input"
}

# The examples, and a launcher without overlap checks (no overlap helpers to leave unused).
for fusion in rms_norm_add layer_norm softmax greedy_token; do
  generate "$fusion" "$root/examples/$fusion.fsl"
done
generate scale_inout "$root/tests/launcher/scale_inout.fsl"
for fusion in rms_norm_add layer_norm softmax greedy_token scale_inout; do
  "$nvcc" "${flags[@]}" "${strict[@]}" -Xptxas -v -I "$work/$fusion" -c "$work/$fusion/$fusion.cu" \
    -o "$work/$fusion/$fusion.o" 2> "$work/$fusion/ptxas.txt" || { cat "$work/$fusion/ptxas.txt"; exit 1; }
  echo "compiled $fusion for sm_90a without warnings: $(grep -c 'registers' "$work/$fusion/ptxas.txt") kernels"
  passed=$((passed + 1))
done
# An sm_80 target: launches without programmatic dependent launch.
generate a100 "$root/examples/rms_norm_add.fsl" --target=a100
"$nvcc" -std=c++17 -gencode=arch=compute_80,code=sm_80 -I "$root/runtime/include" "${strict[@]}" \
  -I "$work/a100" -c "$work/a100/rms_norm_add.cu" -o "$work/a100/rms_norm_add.o"
echo "compiled rms_norm_add for sm_80 (--target=a100) without warnings"
passed=$((passed + 1))

# Two specializations of one fusion, told apart by --prefix, link into one program: whole
# program compilation, and relocatable device code (where the device linker sees both).
spec="$work/specializations"
generate specializations "$root/examples/rms_norm_add.fsl" -D H=4096 --prefix=h4096_
generate specializations "$root/examples/rms_norm_add.fsl" -D H=8192 --prefix=h8192_
for rdc in false true; do
  "$nvcc" "${flags[@]}" "${strict[@]}" -rdc=$rdc -I "$spec" -o "$spec/test_rdc_$rdc" \
    "$root/tests/launcher/specializations_test.cpp" "$spec/h4096_rms_norm_add.cu" \
    "$spec/h8192_rms_norm_add.cu"
  "$spec/test_rdc_$rdc"
  echo "linked h4096_rms_norm_add and h8192_rms_norm_add into one program (-rdc=$rdc)"
  passed=$((passed + 1))
done

"$nvcc" "${flags[@]}" "${strict[@]}" -I "$work/rms_norm_add" -o "$work/validation" \
  "$root/tests/launcher/validation_test.cpp" "$work/rms_norm_add/rms_norm_add.cu"
"$work/validation"
# Launch limits, checked byte counts, natural alignment and empty calls (no GPU needed):
# a runtime grid on BIDx and BIDy, a runtime block.
# A grid reduction (two kernels, a workspace) whose rows may be empty.
generate rows "$root/tests/launcher/rows.fsl"
generate row_sum "$root/tests/launcher/row_sum.fsl"
"$nvcc" "${flags[@]}" "${strict[@]}" -I "$work/rms_norm_add" -I "$work/rows" -I "$work/row_sum" \
  -o "$work/limits" "$root/tests/launcher/limits_test.cpp" "$work/rms_norm_add/rms_norm_add.cu" \
  "$work/rows/rows.cu" "$work/row_sum/row_sum.cu"
"$work/limits"
# The matmul launcher refuses what TMA cannot copy, before any CUDA call (no GPU needed).
"$fslc" --emit=cuda -o "$work/matmul" "$root/examples/linear_bias_gelu_simple.fsl"
"$nvcc" "${flags[@]}" "${strict[@]}" -I "$work/matmul" -o "$work/tma_validation" \
  "$root/tests/launcher/tma_validation_test.cpp" "$work/matmul/linear_bias_gelu.cu"
"$work/tma_validation"
# Every matmul strategy (warp roles, persistent tiles, stream-K, shared and TMA-store epilogues,
# b as [K, N]) compiles strictly, launcher included, and ptxas does not serialize its wgmma.
for input in warp-specialized persistent shared-epilogue kn stream-k pingpong two-products; do
  generate "mm_$input" "$root/tests/lit/matmul/Inputs/$input.fsl"
  src="$(ls "$work/mm_$input"/*.cu)"
  "$nvcc" "${flags[@]}" "${strict[@]}" -Xptxas -v -I "$work/mm_$input" -c "$src" \
    -o "$work/mm_$input/kernel.o" 2> "$work/mm_$input/ptxas.txt" || { cat "$work/mm_$input/ptxas.txt"; exit 1; }
  if grep -qE "C7510|C7515|spill stores, [1-9]" "$work/mm_$input/ptxas.txt"; then
    cat "$work/mm_$input/ptxas.txt"; echo "FAIL: matmul $input: wgmma serialized or spilled"; exit 1
  fi
  echo "compiled matmul $input for sm_90a without warnings"
  passed=$((passed + 1))
done
# Reductions of every combine: argmax/argmin pairs (a tree, one warp, two rows a block, a
# column a thread; bf16, f32, f64 and i32 values), integer max and min from int64's
# extremes, f32 and f64 block reductions sharing one scratch buffer.
for input in argmax-shapes integer-min-max; do
  generate "red_$input" "$root/tests/lit/lower/Inputs/$input.fsl"
  for src in "$work/red_$input"/*.cu; do
    "$nvcc" "${flags[@]}" "${strict[@]}" -I "$work/red_$input" -c "$src" -o "${src%.cu}.o"
  done
  echo "compiled the reductions of $input.fsl for sm_90a without warnings"
  passed=$((passed + 1))
done
# The launch status test needs a GPU; without one it says so and passes.
"$nvcc" "${flags[@]}" "${strict[@]}" -I "$work/rms_norm_add" -o "$work/launch_status" \
  "$root/tests/launcher/launch_status_test.cu" "$work/rms_norm_add/rms_norm_add.cu"
"$work/launch_status"
# fsl/device.cuh on its own: every helper instantiated, its inline PTX assembled by ptxas.
"$nvcc" "${flags[@]}" "${strict[@]}" -c "$root/tests/device/device_header_test.cu" \
  -o "$work/device_header_test.o"
echo "compiled tests/device/device_header_test.cu for sm_90a without warnings"
passed=$((passed + 1))
echo "cuda checks: $passed compiled"
