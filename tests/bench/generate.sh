#!/usr/bin/env bash
# Generates the benchmark's kernels here (fslc does not run on the GPU machine): the
# stdlib normalizations with the heuristics' schedules at every hidden size, plus the
# A/B baseline of rms_norm_add (static_bdimx = false, compute_with = false).
#
#   generate.sh [--before OLD_FSLC]
#
# --before also generates every kernel with another fslc build (say, of the previous
# commit) into before_<H>/, so bench.py times old and new code in the same process.
set -euo pipefail
before=""
if [ "${1:-}" = "--before" ]; then before="$2"; fi
root="$(cd "$(dirname "$0")/../.." && pwd)"
fslc="$root/build/bin/fslc"
out="$root/bench-build"
rm -rf "$out" && mkdir -p "$out"
# The grid's hidden sizes (those of real models: 2048 ... 16384), and two (2560, 3584)
# where the baseline's thread count is no warp multiple, so the static/baseline A/B
# compares different kernels.
for size in 1024 2048 3072 4096 5120 6144 7168 8192 12288 16384 2560 3584; do
  "$fslc" -D H=$size -D S=$size -o "$out/auto_$size" "$root/stdlib/std/norms.fsl"
  "$fslc" -D H=$size -D S=$size --emit=schedule "$root/stdlib/std/norms.fsl" > "$out/auto_$size/schedules.fsl"
  sed 's/^\(fusion rms_norm_add.*\)$/\1/' "$root/stdlib/std/norms.fsl" > "$out/baseline.fsl"
  printf '\nschedule rms_norm_add = auto(inner_persistent) {\n    static_bdimx = false;\n    compute_with = false;\n}\n' >> "$out/baseline.fsl"
  "$fslc" -D H=$size -D S=$size -o "$out/baseline_$size" "$out/baseline.fsl"
  if [ -n "$before" ]; then
    "$before" -D H=$size -D S=$size -o "$out/before_$size" "$root/stdlib/std/norms.fsl"
  fi
  # One pass (issue 17): the heuristics' schedules with one_pass = true for softmax and
  # layer_norm (bench.py's "onepass" variant; kOnePassByDefault waits for it).
  sed -n '/^\/\/ LayerNorm/,$p' "$root/stdlib/std/norms.fsl" > "$out/onepass.fsl"
  printf '\nschedule softmax = auto(inner_persistent) {\n    one_pass = true;\n}\n' >> "$out/onepass.fsl"
  printf '\nschedule layer_norm = auto(inner_persistent) {\n    one_pass = true;\n}\n' >> "$out/onepass.fsl"
  "$fslc" -D H=$size -D S=$size -o "$out/onepass_$size" "$out/onepass.fsl"
  "$fslc" -D H=$size -D S=$size --emit=schedule "$out/onepass.fsl" > "$out/onepass_$size/schedules.fsl"
  # Variant for the exp-precision experiment: softmax with the fast exp (ex2.approx).
  sed 's/expf(/__expf(/g' "$out/auto_$size/softmax.cu" > "$out/auto_$size/softmax_fastexp.cu"
done
# The hidden size at run time (no -D H): the kernels of a fusion that does not fix H,
# ahead of time: the heuristics' guarded variants (dynamic/), and the one loop for every
# size that was all it had before them (generic/: static_bdimx = true asks for it).
# The four forward fusions only: the training ones' backward kernels keep partial columns
# in registers, which needs a static H.
sed -e '/^\/\/ --- Training/,$d' -e 's/ backward softmax_backward//' -e 's/<H = 4096>//' \
  -e 's/<S = 4096>//' "$root/stdlib/std/norms.fsl" > "$out/dynamic.fsl"
"$fslc" -o "$out/dynamic" "$out/dynamic.fsl"
"$fslc" --emit=schedule "$out/dynamic.fsl" > "$out/dynamic/schedules.fsl"
cp "$out/dynamic.fsl" "$out/generic.fsl"
for fusion in rms_norm_add rms_norm layer_norm softmax; do
  printf '\nschedule %s = auto(inner_persistent) {\n    static_bdimx = true;\n}\n' "$fusion" >> "$out/generic.fsl"
done
"$fslc" -o "$out/generic" "$out/generic.fsl"
# The JIT benchmark (runtime.py) loads the stdlib file itself, through the Python package.

echo "generated $(ls "$out"/*/*.cu | wc -l) sources"
