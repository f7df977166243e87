#!/usr/bin/env bash
# Generates the benchmark's kernels here (fslc does not run on the GPU machine): the
# stdlib normalizations with the heuristics' schedules at every hidden size, plus the
# A/B baseline of rms_norm_add (static_bdimx = false, compute_with = false).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
fslc="$root/build/bin/fslc"
out="$root/bench-build"
rm -rf "$out" && mkdir -p "$out"
for size in 1024 4096 5120 8192 16384; do
  "$fslc" -D H=$size -D S=$size -o "$out/auto_$size" "$root/stdlib/std/norms.fsl"
  "$fslc" -D H=$size --emit=schedule "$root/stdlib/std/norms.fsl" > "$out/auto_$size/schedules.fsl"
  sed 's/^\(fusion rms_norm_add.*\)$/\1/' "$root/stdlib/std/norms.fsl" > "$out/baseline.fsl"
  printf '\nschedule rms_norm_add = auto(inner_persistent) {\n    static_bdimx = false;\n    compute_with = false;\n}\n' >> "$out/baseline.fsl"
  "$fslc" -D H=$size -D S=$size -o "$out/baseline_$size" "$out/baseline.fsl"
done
cp "$root/tests/bench/bench.py" "$root/tests/bench/copy16.cu" "$out/"
echo "generated $(ls "$out"/*/*.cu | wc -l) sources"
