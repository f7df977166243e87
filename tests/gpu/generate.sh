#!/usr/bin/env bash
# Generates the GPU suite's CUDA sources on the build machine (fslc does not run on the
# GPU machine): every example normalization at every hidden size, into gpu-build/.
# A size whose example schedule the checker refuses is listed in gpu-build/refused.txt.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
fslc="$root/build/bin/fslc"
out="$root/gpu-build"
rm -rf "$out" && mkdir -p "$out"
: > "$out/refused.txt"
for fusion in rms_norm_add layer_norm softmax; do
  dim=H
  [ "$fusion" = softmax ] && dim=S
  for size in 1024 4096 8192 16384; do
    dir="$out/${fusion}_${size}"
    if ! "$fslc" --diagnostics-color=never -D "$dim=$size" --emit=cuda -o "$dir" \
        "$root/examples/$fusion.fsl" 2> "$out/err.txt"; then
      echo "$fusion $dim=$size: $(grep -o 'error: .*' "$out/err.txt" | head -1)" >> "$out/refused.txt"
      rm -rf "$dir"
    fi
  done
done
# Variants of the example schedules that exercise other lowering paths.
variant() { # name fusion dim size sed-expression
  local dir="$out/${2}_${4}.$1"
  sed "$5" "$root/examples/$2.fsl" > "$out/$2.$1.fsl"
  "$fslc" --diagnostics-color=never -D "$3=$4" --emit=cuda -o "$dir" "$out/$2.$1.fsl"
  rm "$out/$2.$1.fsl"
}
variant shared rms_norm_add H 16384 's/persistent h in registers/persistent h in shared/'
variant unswitch softmax S 4096 's/    unroll Sp;/    unroll Sp;\n    unswitch Sp;/'
rm -f "$out/err.txt"
# The matrix product: the example's supported schedule (128 x 256 tiles, 4 stages) and a
# 128 x 128 tile with 3 stages.
mkdir -p "$out/matmul"
"$fslc" --diagnostics-color=never -o "$out/matmul/t256" "$root/examples/linear_bias_gelu_simple.fsl"
sed -e 's/tile (128, 256, 64), warp (64, 256), instruction wgmma(64, 256, 16)/tile (128, 128, 64), warp (64, 128), instruction wgmma(64, 128, 16)/' \
    -e 's/pipeline 4 stages/pipeline 3 stages/' "$root/examples/linear_bias_gelu_simple.fsl" \
    > "$out/matmul/t128.fsl"
"$fslc" --diagnostics-color=never -o "$out/matmul/t128" "$out/matmul/t128.fsl"
# The JIT test on the GPU machine builds runtime/src/jit.cpp, which includes the device
# header's text as CMake generated it here.
mkdir -p "$out/jit" && cp "$root/build/runtime/generated/fsl_device_header.inc" "$out/jit/"

echo "generated: $(ls -d "$out"/*_* | wc -l) variants; refused: $(wc -l < "$out/refused.txt")"
