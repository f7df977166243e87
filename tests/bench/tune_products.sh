#!/usr/bin/env bash
# The matrix products' tuning run: `fslc tune` for the plain product (examples/matmul.fsl)
# and the fused one (examples/linear_bias_gelu.fsl) at the shapes where the table of record
# leaves them short of their targets, the runner on the GPU, both results recorded into a
# copy of the target's database; then products_record.sh with that copy times `= auto`
# with and without it (docs/tuning.md, docs/performance.md).
#
#   generate (here):   [DIR=...] tests/bench/tune_products.sh generate FSLC TARGET
#   run (GPU machine): OUT=... [DIR=...] tests/bench/tune_products.sh run plain|fused
#                      (BUDGET=seconds a shape; TIME_LIMIT=seconds for the whole run,
#                      which keeps the shapes finished by then; the results under DIR and OUT)
#   record:            [DIR=...] tests/bench/tune_products.sh record
#                      (writes DIR/<TARGET>_tuned.fsl: the shipped database, updated)
#   then:              TUNING_DB=DIR/<TARGET>_tuned.fsl tests/bench/products_record.sh
#                      generate FSLC TARGET, and PART=changed ... run there
#
# PLAIN_SHAPES and FUSED_SHAPES ("M=..,N=..,K=..;...") replace the default shapes.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
dir="${DIR:-$root/bench-build/tune_products}"
mkdir -p "$dir" && dir="$(cd "$dir" && pwd)"  # absolute: the runner runs from inside it
# The plain product's misses on the H200 (2048^3, 4096^3, the three tails, both MLP
# shapes of 4096 rows, 128 and 16 rows of 14336 x 5120) and the few-row shape where
# swapped tiles led (160 x 4096 x 4096); the fused product's (both MLP shapes, the two
# 8192-row shapes, 128 rows).
plain="${PLAIN_SHAPES:-M=2048,N=2048,K=2048;M=4096,N=4096,K=4096;M=1000,N=5000,K=3000;M=4000,N=14000,K=5000;M=3000,N=7000,K=2000;M=4096,N=14336,K=5120;M=4096,N=5120,K=14336;M=128,N=14336,K=5120;M=16,N=14336,K=5120;M=160,N=4096,K=4096}"
fused="${FUSED_SHAPES:-M=4096,N=14336,K=5120;M=4096,N=5120,K=14336;M=8192,N=8192,K=8192;M=8192,N=28672,K=8192;M=128,N=14336,K=5120}"

case "${1:-}" in
generate)
  fslc="$2" target="$3"
  rm -rf "$dir" && mkdir -p "$dir"
  echo "$target" > "$dir/target.txt"
  "$fslc" tune "$root/examples/matmul.fsl" --fusion matmul --target "$target" \
    --shapes "$plain" -o "$dir/plain"
  "$fslc" tune "$root/examples/linear_bias_gelu.fsl" --fusion linear_bias_gelu \
    --target "$target" --shapes "$fused" -o "$dir/fused"
  ;;
run)
  which="$2"
  case "$which" in
  plain) reference=matmul peer=cublas=tune_references:cublas ;;
  fused) reference=linear_bias_gelu peer=linear_gelu=tune_references:linear_gelu ;;
  *) echo "run plain or run fused" >&2; exit 2 ;;
  esac
  out="${OUT:-$dir}"
  mkdir -p "$out" && out="$(cd "$out" && pwd)"
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > "$out/gpu_$which.txt"
  # A time limit or a failure still copies what the runner wrote (its results after each
  # shape) to OUT, which is what comes back from the GPU machine; then exits as it did.
  status=0
  (cd "$dir" && PYTHONPATH="$root/python:$root/tests/bench${PYTHONPATH:+:$PYTHONPATH}" \
    ${TIME_LIMIT:+timeout "$TIME_LIMIT"} python3 -m fslc.tune run "$which/manifest.json" --reference "tune_references:$reference" \
    --peer "$peer" --rounds 5 --budget "${BUDGET:-20}" -o "$dir/results_$which.json" \
    2> "$out/tune_$which.log") || status=$?
  if [ "$out" != "$dir" ]; then cp "$dir/results_$which.json" "$out/" 2> /dev/null || true; fi
  grep -E "confirmed|failed" "$out/tune_$which.log" || true
  exit "$status"
  ;;
record)
  target="$(cat "$dir/target.txt")"
  db="$dir/${target}_tuned.fsl"
  cp "$root/stdlib/tuning/$target.fsl" "$db"
  for which in plain fused; do
    if [ -f "$dir/results_$which.json" ]; then
      PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}" \
        python3 -m fslc.tune record "$dir/results_$which.json" -o "$db"
    fi
  done
  diff "$root/stdlib/tuning/$target.fsl" "$db" || true
  ;;
*)
  echo "usage: $0 generate FSLC TARGET | run plain|fused | record" >&2
  exit 2
  ;;
esac
