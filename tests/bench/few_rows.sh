#!/usr/bin/env bash
# Few rows of a square product (M = 128-320, N = K = 4096, static sizes): the heuristics,
# the H100 database's entries, and swapped tiles (swap_ab: w's columns on wgmma's 64-row
# side, a's rows on its N side) with one or two consumer warpgroups, in the grids cuBLAS
# launches there (docs/performance.md, runs S32B and S32C); then matmul_ab.py alternates
# them with cuBLAS and the fused product's peers.
#   generate (here):      tests/bench/few_rows.sh generate build/bin/fslc
#   run (GPU machine):    OUT=... [ROUNDS=5] tests/bench/few_rows.sh run
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
dir="$root/bench-build/few_rows"
rows=(128 160 256 320)

# Writes examples/<example>.fsl at M x 4096 x 4096 (or at M,N,K) with the schedule block in
# $4 (empty: `= auto(matmul)`), and the CUDA fslc prints for it (further fslc flags after
# the fourth), as bench-build/few_rows/<name>.
variant() { # name example M|M,N,K schedule [fslc flags...]
  local name="$1" example="$2" m="$3" body="$4" n=4096 k=4096
  shift 4
  if [[ "$m" == *,* ]]; then IFS=, read -r m n k <<< "$m"; fi
  mkdir -p "$dir/$name"
  if [ -z "$body" ]; then
    body="schedule $example = auto(matmul);"
  else
    [ "$example" = linear_bias_gelu ] && body="$body
    fast_tanh;"
    body="schedule $example {
$body
}"
  fi
  awk -v body="$body" -v fusion="$example" -v m="$m" -v n="$n" -v k="$k" '
    $0 ~ "^fusion " fusion "\\(" { sub("^fusion " fusion "\\(", "fusion " fusion "<M = " m ", N = " n ", K = " k ">(") }
    /^schedule/ { print body; skip = ($0 !~ /;[ \t]*$/); next }
    skip && /^}/ { skip = 0; next }
    !skip { print }' "$root/examples/$example.fsl" > "$dir/$name.fsl"
  "$fslc" --diagnostics-color=never "$@" -o "$dir/$name" "$dir/$name.fsl"
}
# A swapped tile: R rows of a by C columns of w, the warpgroups' share WR x WC (WR rows of a
# on wgmma's N side), with `stages` stages, one tile a CTA, the epilogue from registers;
# REGS (default 232) the consumers' setmaxnreg count.
swapped() { # name example M R C WR WC consumers stages [cluster]
  local cluster=""
  [ -n "${10:-}" ] && cluster="
    cluster ${10} multicast;"
  variant "$1" "$2" "$3" "    mma over K: tile ($4, $5, 64), warp ($6, $7), instruction wgmma(64, $6, 16), swap_ab;
    pipeline $9 stages via tma;
    warp_specialize producer(regs 40), consumers($8, regs ${REGS:-232});
    tiles one_per_cta;$cluster
    epilogue via registers;"
}

case "${1:-}" in
generate)
  fslc="$2"
  rm -rf "$dir" && mkdir -p "$dir"
  # The heuristics (no database), and the H100 database's entries where it has them.
  for m in "${rows[@]}"; do
    variant "h_$m" matmul "$m" ""
    variant "gelu_h_$m" linear_bias_gelu "$m" ""
  done
  h100_db=(--target h100-sxm --tuning-db "$root/stdlib/tuning/h100-sxm.fsl")
  for m in 128 320; do
    variant "db_$m" matmul "$m" "" "${h100_db[@]}"
    variant "gelu_db_$m" linear_bias_gelu "$m" "" "${h100_db[@]}"
  done
  # Run S32B's form: two M tiles by 64 columns, one consumer warpgroup (stages: what about
  # 200 KB of shared memory holds).
  swapped sw1_128 matmul 128 64 64 64 64 1 13
  swapped sw1_160 matmul 160 80 64 80 64 1 11
  swapped sw1_256 matmul 256 128 64 128 64 1 9
  swapped sw1_320 matmul 320 160 64 160 64 1 7
  # Run S32C: two consumer warpgroups on one swapped tile. At 128 and 160 rows each takes
  # half of a's rows (cuBLAS's 64 x 64 and 64 x 80 grids of 128 CTAs); at 256 and 320 rows
  # cuBLAS's own tiles, 64 or 80 rows of a by 128 columns of w (four M tiles by 32 N
  # tiles), a consumer on each 64 columns, and run S32B's tiles with the rows halved.
  swapped sw2_128 matmul 128 64 64 32 64 2 13
  swapped sw2_160 matmul 160 80 64 40 64 2 11
  swapped sw2n_256 matmul 256 64 128 64 64 2 8
  swapped sw2n_320 matmul 320 80 128 80 64 2 8
  swapped sw2_256 matmul 256 128 64 64 64 2 9
  swapped sw2_320 matmul 320 160 64 80 64 2 7
  # The same with cuBLAS's clusters of two (consecutive N tiles sharing a's tile).
  swapped sw2c_160 matmul 160 80 64 40 64 2 11 "(2, 1)"
  swapped sw2nc_320 matmul 320 80 128 80 64 2 8 "(2, 1)"
  # The fused product in the two-consumer forms.
  swapped gelu_sw2_128 linear_bias_gelu 128 64 64 32 64 2 13
  swapped gelu_sw2_160 linear_bias_gelu 160 80 64 40 64 2 11
  swapped gelu_sw2n_256 linear_bias_gelu 256 64 128 64 64 2 8
  swapped gelu_sw2n_320 linear_bias_gelu 320 80 128 80 64 2 8
  # Residency of the swapped tiles whose CTAs outnumber the SMs (224 tiles at N = 14336):
  # the heuristics (one consumer of 216 registers: two CTAs an SM, 11 stages each), the
  # kernel before (232 registers: one CTA resident beside shared memory for two), and one
  # CTA an SM with 16 stages.
  for r in 16 32; do
    variant "res_h_$r" matmul "$r,14336,5120" ""
    variant "gelu_res_h_$r" linear_bias_gelu "$r,14336,5120" ""
    swapped "res_old_$r" matmul "$r,14336,5120" "$r" 64 "$r" 64 1 "$([ $r = 16 ] && echo 11 || echo 9)"
    swapped "gelu_res_old_$r" linear_bias_gelu "$r,14336,5120" "$r" 64 "$r" 64 1 "$([ $r = 16 ] && echo 11 || echo 9)"
    swapped "res_one_$r" matmul "$r,14336,5120" "$r" 64 "$r" 64 1 "$([ $r = 16 ] && echo 16 || echo 14)"
  done
  ;;
run)
  out="${OUT:-$dir}"
  mkdir -p "$out"
  "$root/tests/bench/build_libraries.sh" "$dir"
  grep -H -E "registers|spill" "$dir"/*/nvcc.txt > "$out/ptxas.txt" 2>/dev/null || true
  # NAME=lib:kind@M,4096,4096 for each M the variant exists at: one column a form.
  column() { # name kind
    local m
    for m in "${rows[@]}"; do
      [ -f "$dir/${1}_$m/libfusion.so" ] && echo "$1=$dir/${1}_$m/libfusion.so:$2@$m,4096,4096"
    done
    return 0
  }
  shapes="128,4096,4096;160,4096,4096;256,4096,4096;320,4096,4096"
  FSL_AB_TAG=_plain python3 "$root/tests/bench/matmul_ab.py" "$out" \
    $(column h plain) $(column db plain) $(column sw1 plain) $(column sw2 plain) \
    $(column sw2n plain) $(column sw2c plain) $(column sw2nc plain) \
    --rounds "${ROUNDS:-5}" --shapes "$shapes"
  FSL_AB_TAG=_gelu python3 "$root/tests/bench/matmul_ab.py" "$out" \
    $(column gelu_h gelu) $(column gelu_db gelu) $(column gelu_sw2 gelu) $(column gelu_sw2n gelu) \
    --rounds "${ROUNDS:-5}" --shapes "$shapes"
  # The residency A/B (res_*): 16 and 32 rows of 14336 x 5120.
  res() { # name kind
    local r
    for r in 16 32; do
      [ -f "$dir/${1}_$r/libfusion.so" ] && echo "$1=$dir/${1}_$r/libfusion.so:$2@$r,14336,5120"
    done
    return 0
  }
  FSL_AB_TAG=_residency python3 "$root/tests/bench/matmul_ab.py" "$out" \
    $(res res_h plain) $(res res_old plain) $(res res_one plain) \
    --rounds "${ROUNDS:-5}" --shapes "16,14336,5120;32,14336,5120"
  FSL_AB_TAG=_residency_gelu python3 "$root/tests/bench/matmul_ab.py" "$out" \
    $(res gelu_res_h gelu) $(res gelu_res_old gelu) \
    --rounds "${ROUNDS:-5}" --shapes "16,14336,5120;32,14336,5120"
  ;;
*)
  echo "usage: $0 generate FSLC | run" >&2
  exit 2
  ;;
esac
