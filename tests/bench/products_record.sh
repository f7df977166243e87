#!/usr/bin/env bash
# The matrix products' table of record (docs/performance.md): the static-size auto(matmul)
# kernels of examples/matmul.fsl and examples/linear_bias_gelu.fsl at every shape the
# table lists, compiled with the target's shipped tuning database, then matmul_ab.py with
# every peer (max-autotune included), the operands rotated over twice the L2. Where the
# database changes a shape's schedule, the heuristics' kernel (compiled without it) is
# timed beside it (the columns `plain_heur` and `gelu_heur`): the database must not be
# slower than the heuristics at any shape.
#   generate (here):      [DIR=...] tests/bench/products_record.sh generate build/bin/fslc TARGET
#                         (TARGET: h200 or h100-sxm; the database stdlib/tuning/TARGET.fsl,
#                         or TUNING_DB=FILE)
#   run (GPU machine):    OUT=... [DIR=...] [ROUNDS=3] [PART=large|rows|tails|all|changed]
#                         [MAX_AUTOTUNE=0] tests/bench/products_record.sh run
#                         (changed: only the shapes where the database changes a schedule;
#                         MAX_AUTOTUNE=0 leaves out the max-autotune peer, whose compilation
#                         takes minutes a shape)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
# DIR: the libraries' folder (default bench-build/products_record), one a target.
dir="${DIR:-$root/bench-build/products_record}"
large="4096,14336,5120;4096,5120,14336;8192,8192,8192;8192,28672,8192;4096,4096,4096;2048,2048,2048"
rows="1024,14336,5120;256,14336,5120;128,14336,5120;64,14336,5120;16,14336,5120;1,14336,5120"
tails="1000,5000,3000;4000,14000,5000;3000,7000,2000"

case "${1:-}" in
generate)
  fslc="$2" target="$3"
  rm -rf "$dir" && mkdir -p "$dir"
  echo "$target" > "$dir/target.txt"
  for shape in ${large//;/ } ${rows//;/ } ${tails//;/ }; do
    IFS=, read -r m n k <<< "$shape"
    for example in matmul linear_bias_gelu; do
      name="${example}_${m}_${n}_${k}"
      mkdir -p "$dir/$name"
      sed -e "s/^fusion $example(/fusion $example<M = $m, N = $n, K = $k>(/" \
        -e "/^schedule $example/,\$c schedule $example = auto(matmul);" \
        "$root/examples/$example.fsl" > "$dir/$name.fsl"
      "$fslc" --diagnostics-color=never --target "$target" \
        --tuning-db "${TUNING_DB:-$root/stdlib/tuning/$target.fsl}" -o "$dir/$name" "$dir/$name.fsl"
      mkdir -p "$dir/${name}_heur"
      "$fslc" --diagnostics-color=never --target "$target" -o "$dir/${name}_heur" "$dir/$name.fsl"
      # The same code but for the comments (which name the schedule's file): no column.
      for cu in "$dir/$name/$example.cu" "$dir/${name}_heur/$example.cu"; do
        [ -f "$cu" ] || { echo "products_record.sh: fslc wrote no $cu" >&2; exit 1; }
      done
      if diff -q <(sed 's|//.*||' "$dir/$name/$example.cu") \
        <(sed 's|//.*||' "$dir/${name}_heur/$example.cu") > /dev/null; then
        rm -rf "$dir/${name}_heur"
      fi
    done
  done
  ;;
run)
  out="${OUT:-$dir}"
  mkdir -p "$out"
  case "${PART:-all}" in
  large) shapes="$large" ;;
  rows) shapes="$rows" ;;
  tails) shapes="$tails" ;;
  all) shapes="$large;$rows;$tails" ;;
  changed)
    # Only the shapes where the database changes a schedule (a _heur folder beside): the
    # question "is it ever slower than the heuristics" at the fewest shapes.
    shapes=""
    for shape in ${large//;/ } ${rows//;/ } ${tails//;/ }; do
      tag="${shape//,/_}"
      if [ -d "$dir/matmul_${tag}_heur" ] || [ -d "$dir/linear_bias_gelu_${tag}_heur" ]; then
        shapes="${shapes:+$shapes;}$shape"
      fi
    done
    if [ -z "$shapes" ]; then
      echo "products_record.sh: the database changes no shape's schedule" | tee "$out/changed.txt"
      exit 0
    fi
    echo "shapes the database changes: $shapes" | tee "$out/changed.txt"
    ;;
  *) echo "PART is large, rows, tails, all or changed" >&2; exit 2 ;;
  esac
  names=()
  for shape in ${shapes//;/ }; do
    tag="${shape//,/_}"
    for name in "matmul_$tag" "linear_bias_gelu_$tag" "matmul_${tag}_heur" "linear_bias_gelu_${tag}_heur"; do
      [ -d "$dir/$name" ] && names+=("$name")
    done
  done
  "$root/tests/bench/build_libraries.sh" "$dir" "${names[@]}"
  libs=()
  for shape in ${shapes//;/ }; do
    tag="${shape//,/_}"
    libs+=("plain=$dir/matmul_$tag/libfusion.so:plain@$shape"
           "gelu=$dir/linear_bias_gelu_$tag/libfusion.so:gelu@$shape")
    [ -d "$dir/matmul_${tag}_heur" ] && libs+=("plain_heur=$dir/matmul_${tag}_heur/libfusion.so:plain@$shape")
    [ -d "$dir/linear_bias_gelu_${tag}_heur" ] &&
      libs+=("gelu_heur=$dir/linear_bias_gelu_${tag}_heur/libfusion.so:gelu@$shape")
  done
  FSL_AB_TAG="_record_${PART:-all}" python3 "$root/tests/bench/matmul_ab.py" "$out" "${libs[@]}" \
    $([ "${MAX_AUTOTUNE:-1}" = 0 ] || echo --max-autotune) --rounds "${ROUNDS:-3}" --shapes "$shapes"
  ;;
*)
  echo "usage: $0 generate FSLC TARGET | run" >&2
  exit 2
  ;;
esac
