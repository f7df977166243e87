#!/usr/bin/env bash
# Tile shapes against cuBLAS (docs/performance.md, runs T1, T2 and T3): hand schedules of
# examples/matmul.fsl and examples/linear_bias_gelu.fsl at runtime sizes, with tiles whose N
# is not a power of two (128 x 224, 128 x 192) and small tiles with deep pipelines for few
# rows, next to the heuristics' choice; then matmul_ab.py alternates them with the peers.
#   generate (here):      tests/bench/matmul_tiles.sh generate build/bin/fslc [OLD_FSLC]
#   run (GPU machine):    OUT=... [RUN=T3|T4|S1|K1|K2|E1|Q1|Q2|W1|W2|W5|W6|W7|W8|W11|W12|W13|W14|W15|W16] [ONLY="variant ..."]
#                         tests/bench/matmul_tiles.sh run
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
dir="$root/bench-build/tiles"
# Writes examples/<example>.fsl with its schedule replaced by the directives in $3 (fast_tanh
# added for the GELU), and the CUDA fslc prints for it, as bench-build/tiles/<name>.
write_schedule() { # name example directives
  local body="$3"
  [ "$2" = linear_bias_gelu ] && body="$body
    fast_tanh;"
  mkdir -p "$dir/$1"
  awk -v body="$body" -v fusion="$2" '
    /^schedule/ { print "schedule " fusion " {"; print body; print "}"; skip = 1; next }
    skip && /^}/ { skip = 0; next }
    !skip { print }' "$root/examples/$2.fsl" > "$dir/$1.fsl"
  "$fslc" --diagnostics-color=never -o "$dir/$1" "$dir/$1.fsl"
}
schedule() { # name example tile warp instruction-N stages consumers regs tiles epilogue
  write_schedule "$1" "$2" "    mma over K: tile ($3, 64), warp ($4), instruction wgmma(64, $5, 16);
    pipeline $6 stages via tma;
    warp_specialize producer(regs 40), consumers($7, regs $8);
    tiles $9;
    epilogue via ${10};"
}
swapped() { # name example tile-M tile-N consumers stages tiles: the operands swapped (swap_ab)
  write_schedule "$1" "$2" "    mma over K: tile ($3, $4, 64), warp ($3, 64), instruction wgmma(64, $3, 16), swap_ab;
    pipeline $6 stages via tma;
    warp_specialize producer(regs 40), consumers($5, regs 232);
    tiles $7;
    epilogue via registers;"
}
case "${1:-}" in
generate)
  fslc="$2"
  rm -rf "$dir" && mkdir -p "$dir"
  mkdir -p "$dir/plain_auto" && "$fslc" -o "$dir/plain_auto" "$root/examples/matmul.fsl"
  mkdir -p "$dir/gelu_example" && "$fslc" -o "$dir/gelu_example" "$root/examples/linear_bias_gelu.fsl"
  # The heuristics' earlier choices (before 224- and 192-wide tiles and 64-row tiles for
  # few rows): 128 x 256 above two waves, 128 x 128 below, split_k 3 below 64 rows.
  schedule plain_t256 matmul "128, 256" "64, 256" 256 3 2 232 "persistent swizzle 8" "shared tma_store"
  schedule plain_t128 matmul "128, 128" "64, 128" 128 5 2 232 "persistent swizzle 8" "shared tma_store"
  schedule plain_splitk matmul "128, 256" "64, 256" 256 4 2 232 "split_k 3" "registers"
  # The new widths and the few-rows tiles.
  schedule plain_t224 matmul "128, 224" "64, 224" 224 3 2 232 "persistent swizzle 8" "shared tma_store"
  schedule plain_t192 matmul "128, 192" "64, 192" 192 4 2 232 "persistent swizzle 8" "shared tma_store"
  schedule plain_s64x112 matmul "64, 112" "64, 112" 112 8 1 232 "one_per_cta" "registers"
  schedule plain_s64x64 matmul "64, 64" "64, 64" 64 8 1 232 "one_per_cta" "registers"
  schedule gelu_t224 linear_bias_gelu "128, 224" "64, 224" 224 3 2 232 "persistent swizzle 8" "shared tma_store"
  schedule gelu_t192 linear_bias_gelu "128, 192" "64, 192" 192 4 2 232 "persistent swizzle 8" "shared tma_store"
  schedule gelu_s64x112 linear_bias_gelu "64, 112" "64, 112" 112 8 1 232 "one_per_cta" "registers"
  # Run T4: the few-rows tiles with a deeper pipeline (10 stages: what 232448 bytes hold).
  schedule plain_s64x112d matmul "64, 112" "64, 112" 112 10 1 232 "one_per_cta" "registers"
  schedule gelu_s64x112d linear_bias_gelu "64, 112" "64, 112" 112 10 1 232 "one_per_cta" "registers"
  # Run S1: the operands swapped for few rows (w's rows on wgmma's 64-row side).
  swapped plain_sw16 matmul 16 64 1 11 "one_per_cta"
  swapped plain_sw16p matmul 16 64 1 20 "persistent"
  swapped plain_sw16w matmul 16 128 2 12 "one_per_cta"
  swapped plain_sw8 matmul 8 64 1 12 "one_per_cta"
  swapped plain_sw32 matmul 32 64 1 9 "one_per_cta"
  swapped plain_sw16k2 matmul 16 64 1 11 "split_k 2"
  swapped gelu_sw16 linear_bias_gelu 16 64 1 11 "one_per_cta"
  # Run T3: taller tiles, more flops a loaded element (256 x 128: two warpgroups of
  # 128 x 128, each two m64n128k16 a k step; 192 x 192: three warpgroups of 64 x 192).
  schedule plain_t256x128 matmul "256, 128" "128, 128" 128 3 2 232 "persistent swizzle 8" "shared tma_store"
  schedule plain_t192x192 matmul "192, 192" "64, 192" 192 3 3 152 "persistent swizzle 8" "shared tma_store"
  schedule gelu_t256x128 linear_bias_gelu "256, 128" "128, 128" 128 3 2 232 "persistent swizzle 8" "shared tma_store"
  schedule gelu_t192x192 linear_bias_gelu "192, 192" "64, 192" 192 3 3 152 "persistent swizzle 8" "shared tma_store"
  # Run K1: stream-K (its fix-up kernel after the first) and split-K against the
  # persistent tiles at the shapes whose tiles fill their waves worst.
  schedule plain_t192sk matmul "128, 192" "64, 192" 192 4 2 232 "stream_k swizzle 8" "registers"
  schedule plain_t128sk matmul "128, 128" "64, 128" 128 5 2 232 "stream_k swizzle 8" "registers"
  schedule plain_t256sk matmul "128, 256" "64, 256" 256 3 2 232 "stream_k swizzle 8" "registers"
  schedule plain_t192k2 matmul "128, 192" "64, 192" 192 4 2 232 "split_k 2" "registers"
  schedule gelu_t192sk linear_bias_gelu "128, 192" "64, 192" 192 4 2 232 "stream_k swizzle 8" "registers"
  # Run K2: deeper pipelines (the epilogue in registers frees the output tile's shared
  # memory for stages) and clusters of two M tiles sharing w's tile, for one-wave shapes.
  schedule plain_t224r5 matmul "128, 224" "64, 224" 224 5 2 232 "persistent swizzle 8" "registers"
  schedule plain_t192r5 matmul "128, 192" "64, 192" 192 5 2 232 "persistent swizzle 8" "registers"
  schedule plain_t256r4 matmul "128, 256" "64, 256" 256 4 2 232 "persistent swizzle 8" "registers"
  schedule plain_t224c2 matmul "128, 224" "64, 224" 224 3 2 232 "persistent swizzle 8;
    cluster (2, 1) multicast" "shared tma_store"
  schedule plain_t224r4c2 matmul "128, 224" "64, 224" 224 4 2 232 "persistent swizzle 8;
    cluster (2, 1) multicast" "registers"
  schedule gelu_t224r5 linear_bias_gelu "128, 224" "64, 224" 224 5 2 232 "persistent swizzle 8" "registers"
  # Run E1: the output tile stored in pieces through two smaller shared tiles, so that
  # one more stage fits beside it (128 x 256: 4 stages instead of 3; 256 x 128 and
  # 192 x 192 in pieces of 32 columns: 4 instead of 3).
  schedule plain_t256e matmul "128, 256" "64, 256" 256 4 2 232 "persistent swizzle 8" "shared tma_store, tile (128, 64)"
  schedule plain_t256x128e matmul "256, 128" "128, 128" 128 4 2 232 "persistent swizzle 8" "shared tma_store, tile (256, 32)"
  schedule plain_t192x192e matmul "192, 192" "64, 192" 192 4 3 152 "persistent swizzle 8" "shared tma_store, tile (192, 32)"
  schedule gelu_t256 linear_bias_gelu "128, 256" "64, 256" 256 3 2 232 "persistent swizzle 8" "shared tma_store"
  schedule gelu_t256e linear_bias_gelu "128, 256" "64, 256" 256 4 2 232 "persistent swizzle 8" "shared tma_store, tile (128, 64)"
  schedule gelu_t256x128e linear_bias_gelu "256, 128" "128, 128" 128 4 2 232 "persistent swizzle 8" "shared tma_store, tile (256, 32)"
  # Run Q1: parts of tiles added inside the kernel by the CTA whose part arrives last
  # (stream-K and split-K without a second kernel), against the same schedules built by
  # an earlier fslc whose second kernel added them (OLD_FSLC, the old_ variants).
  schedule plain_t192skt matmul "128, 192" "64, 192" 192 4 2 232 "stream_k swizzle 8" "shared tma_store"
  schedule plain_t256skt matmul "128, 256" "64, 256" 256 3 2 232 "stream_k swizzle 8" "shared tma_store"
  schedule gelu_t192skt linear_bias_gelu "128, 192" "64, 192" 192 4 2 232 "stream_k swizzle 8" "shared tma_store"
  swapped plain_sw16k3 matmul 16 64 1 11 "split_k 3"
  # Run Q2: split-K for few rows, the heuristics' choice before (K in ceil(SMs / tiles)
  # parts, two CTAs an SM, the parts added by a second kernel: the old_ variants) and now
  # (floor(SMs / tiles) parts, one CTA an SM with all its shared memory for stages).
  swapped plain_sw8d2 matmul 8 64 1 16 "split_k 2"
  swapped plain_sw8d3 matmul 8 64 1 12 "split_k 3"
  swapped plain_sw16d2 matmul 16 64 1 16 "split_k 2"
  swapped plain_sw16d3 matmul 16 64 1 11 "split_k 3"
  swapped plain_sw32d2 matmul 32 64 1 16 "split_k 2"
  swapped plain_sw32d3 matmul 32 64 1 9 "split_k 3"
  schedule plain_s64d2 matmul "64, 64" "64, 64" 64 8 1 232 "split_k 2" "registers"
  schedule plain_s64d3 matmul "64, 64" "64, 64" 64 8 1 232 "split_k 3" "registers"
  # Run W1: tiles wider than one TMA box (128 x 320: w's tile in two boxes of 160 rows,
  # each consumer warpgroup 64 x 320 as two m64n160k16 a k step, 160 accumulators a
  # thread; cuBLAS's 320 x 128 at the MLP shape) and 256 x 160 (two warpgroups of
  # 128 x 160), against the heuristics' 128 x 256.
  schedule plain_t320 matmul "128, 320" "64, 320" 160 3 2 232 "persistent swizzle 8" "shared tma_store, tile (128, 32)"
  schedule plain_t320e64 matmul "128, 320" "64, 320" 160 3 2 232 "persistent swizzle 8" "shared tma_store, tile (128, 64)"
  schedule plain_t256x160 matmul "256, 160" "128, 160" 160 3 2 232 "persistent swizzle 8" "shared tma_store, tile (256, 32)"
  schedule gelu_t320 linear_bias_gelu "128, 320" "64, 320" 160 3 2 232 "persistent swizzle 8" "shared tma_store, tile (128, 32)"
  schedule gelu_t256x160 linear_bias_gelu "256, 160" "128, 160" 160 3 2 232 "persistent swizzle 8" "shared tma_store, tile (256, 32)"
  # Run W5: two consumer groups on alternate tiles of 128 x 128 or 128 x 160, one
  # warpgroup each (two m64 instructions a k step), so that one group's epilogue runs
  # under the other's products; the pingpong knob's form is 64 x 256 a group.
  schedule plain_pp128 matmul "128, 128" "128, 128" 128 6 2 232 "persistent swizzle 8" "shared tma_store, tile (128, 32)"
  schedule plain_pp160 matmul "128, 160" "128, 160" 160 5 2 232 "persistent swizzle 8" "shared tma_store, tile (128, 32)"
  schedule gelu_pp128 linear_bias_gelu "128, 128" "128, 128" 128 6 2 232 "persistent swizzle 8" "shared tma_store, tile (128, 32)"
  schedule gelu_pp160 linear_bias_gelu "128, 160" "128, 160" 160 5 2 232 "persistent swizzle 8" "shared tma_store, tile (128, 32)"
  schedule gelu_pp64 linear_bias_gelu "64, 256" "64, 256" 256 4 2 232 "persistent swizzle 8" "shared tma_store, tile (64, 32)"
  # Run W6: the wide tiles in clusters of two M tiles sharing w's tile by multicast (each
  # CTA loads one of its two boxes, 160 rows, into both), against cuBLAS's clusters of two.
  schedule plain_t320c2 matmul "128, 320" "64, 320" 160 3 2 232 "persistent swizzle 8;
    cluster (2, 1) multicast" "shared tma_store, tile (128, 32)"
  schedule plain_t256x160c2 matmul "256, 160" "128, 160" 160 3 2 232 "persistent swizzle 8;
    cluster (2, 1) multicast" "shared tma_store, tile (256, 32)"
  schedule gelu_t320c2 linear_bias_gelu "128, 320" "64, 320" 160 3 2 232 "persistent swizzle 8;
    cluster (2, 1) multicast" "shared tma_store, tile (128, 32)"
  # Run W7: widths that fill the waves at 128-1024 rows of N = 14336 (128 x 112: 128 tiles
  # in one wave at 128 rows; 128 x 176: 656 tiles, 4.97 waves, at 1024 rows, cuBLAS's
  # 176 x 128 there), against the heuristics' 128 x 128 and 128 x 224 (4 stages, pieces).
  schedule plain_t224p matmul "128, 224" "64, 224" 224 4 2 232 "persistent swizzle 8" "shared tma_store, tile (128, 32)"
  schedule plain_t176 matmul "128, 176" "64, 176" 176 5 2 232 "persistent swizzle 8" "shared tma_store, tile (128, 16)"
  schedule plain_t160 matmul "128, 160" "64, 160" 160 5 2 232 "persistent swizzle 8" "shared tma_store, tile (128, 32)"
  schedule plain_t112 matmul "128, 112" "64, 112" 112 6 2 232 "persistent swizzle 8" "shared tma_store, tile (128, 16)"
  schedule gelu_t224p linear_bias_gelu "128, 224" "64, 224" 224 4 2 232 "persistent swizzle 8" "shared tma_store, tile (128, 32)"
  schedule gelu_t176 linear_bias_gelu "128, 176" "64, 176" 176 5 2 232 "persistent swizzle 8" "shared tma_store, tile (128, 16)"
  schedule gelu_t112 linear_bias_gelu "128, 112" "64, 112" 112 6 2 232 "persistent swizzle 8" "shared tma_store, tile (128, 16)"
  schedule gelu_t128 linear_bias_gelu "128, 128" "64, 128" 128 5 2 232 "persistent swizzle 8" "shared tma_store"
  # Run W8: 128 x 128 tiles against 128 x 256 ones at square shapes (W7 had 128 x 128 at
  # 713 TFLOP/s at 4096^3 where the heuristics pick 128 x 256 in pieces; 613 at 8192^3).
  schedule plain_t128p matmul "128, 128" "64, 128" 128 6 2 232 "persistent swizzle 8" "shared tma_store, tile (128, 32)"
  schedule plain_t256p matmul "128, 256" "64, 256" 256 4 2 232 "persistent swizzle 8" "shared tma_store, tile (128, 32)"
  schedule gelu_t128p linear_bias_gelu "128, 128" "64, 128" 128 6 2 232 "persistent swizzle 8" "shared tma_store, tile (128, 32)"
  # Run W11: clusters along N (two N tiles of one M tile sharing a's tile by multicast)
  # against the same tiles without a cluster and against clusters along M, at the shapes
  # where cuBLAS runs 256 x 128 tiles in clusters of (1, 2).
  schedule plain_t256x128n2 matmul "256, 128" "128, 128" 128 4 2 232 "persistent swizzle 8;
    cluster (1, 2) multicast" "shared tma_store, tile (256, 32)"
  schedule plain_t256x128n2u matmul "256, 128" "128, 128" 128 4 2 232 "persistent swizzle 8;
    cluster (1, 2)" "shared tma_store, tile (256, 32)"
  schedule plain_t256pn2 matmul "128, 256" "64, 256" 256 4 2 232 "persistent swizzle 8;
    cluster (1, 2) multicast" "shared tma_store, tile (128, 32)"
  schedule plain_t256pm2 matmul "128, 256" "64, 256" 256 4 2 232 "persistent swizzle 8;
    cluster (2, 1) multicast" "shared tma_store, tile (128, 32)"
  schedule gelu_t256x128n2 linear_bias_gelu "256, 128" "128, 128" 128 4 2 232 "persistent swizzle 8;
    cluster (1, 2) multicast" "shared tma_store, tile (256, 32)"
  # Run W12: the same clusters at shapes whose rows are not whole 128-byte lines (K = 5000)
  # and on 192 x 192 and 256 x 160 tiles.
  schedule plain_t192x192n2 matmul "192, 192" "64, 192" 192 4 3 152 "persistent swizzle 8;
    cluster (1, 2) multicast" "shared tma_store, tile (192, 32)"
  schedule plain_t256x160n2 matmul "256, 160" "128, 160" 160 3 2 232 "persistent swizzle 8;
    cluster (1, 2) multicast" "shared tma_store, tile (256, 32)"
  schedule gelu_t192x192e linear_bias_gelu "192, 192" "64, 192" 192 4 3 152 "persistent swizzle 8" "shared tma_store, tile (192, 32)"
  schedule gelu_t192x192n2 linear_bias_gelu "192, 192" "64, 192" 192 4 3 152 "persistent swizzle 8;
    cluster (1, 2) multicast" "shared tma_store, tile (192, 32)"
  # Run W13: the static-size auto(matmul) with and without the shipped tuning database
  # (whose entries at these shapes predate the clusters along N), and clusters along N on
  # the 128-row tiles of 1024 rows (cuBLAS's 176 x 128 in clusters of (1, 2) there).
  static_auto() { # name example M,N,K [database]
    IFS=, read -r m n k <<< "$3"
    mkdir -p "$dir/$1"
    sed -e "s/^fusion $2(/fusion $2<M = $m, N = $n, K = $k>(/" \
      -e "/^schedule $2/,\$c schedule $2 = auto(matmul);" "$root/examples/$2.fsl" > "$dir/$1.fsl"
    "$fslc" --diagnostics-color=never ${4:+--tuning-db "$4"} -o "$dir/$1" "$dir/$1.fsl"
  }
  for shape in 4000,14000,5000 1000,5000,3000 3000,7000,2000; do
    tag=${shape//,/_}
    static_auto "new_plain_$tag" matmul "$shape"
    static_auto "new_gelu_$tag" linear_bias_gelu "$shape"
    static_auto "db_plain_$tag" matmul "$shape" "$root/stdlib/tuning/h200.fsl"
    static_auto "db_gelu_$tag" linear_bias_gelu "$shape" "$root/stdlib/tuning/h200.fsl"
  done
  # Run W16: the static plain product's whole output tile (3 stages) against pieces of 32
  # columns (4 stages) at the large shapes, each order timed twice in a round (its place).
  for shape in 4096,14336,5120 8192,8192,8192 8192,28672,8192 4096,4096,4096 4096,5120,14336; do
    tag=${shape//,/_}
    static_auto "whole_plain_$tag" matmul "$shape"
    IFS=, read -r m n k <<< "$shape"
    mkdir -p "$dir/pieces_plain_$tag"
    sed -e "s/^fusion matmul(/fusion matmul<M = $m, N = $n, K = $k>(/" \
      -e '/^schedule matmul/,$c schedule matmul = auto(matmul) { epilogue_piece = 32; }' \
      "$root/examples/matmul.fsl" > "$dir/pieces_plain_$tag.fsl"
    "$fslc" --diagnostics-color=never -o "$dir/pieces_plain_$tag" "$dir/pieces_plain_$tag.fsl"
  done
  schedule plain_t176n2 matmul "128, 176" "64, 176" 176 5 2 232 "persistent swizzle 8;
    cluster (1, 2) multicast" "shared tma_store, tile (128, 16)"
  schedule plain_t224pn2 matmul "128, 224" "64, 224" 224 4 2 232 "persistent swizzle 8;
    cluster (1, 2) multicast" "shared tma_store, tile (128, 32)"
  schedule plain_t128n2 matmul "128, 128" "64, 128" 128 6 2 232 "persistent swizzle 8;
    cluster (1, 2) multicast" "shared tma_store, tile (128, 32)"
  # Run W14: a runtime M with K and N static (as the JIT specializes them), the rows of a
  # not whole lines: the heuristics' variants (rtm_new; rtm_old from OLD_FSLC).
  runtime_m() { # name fslc N,K
    IFS=, read -r n k <<< "$3"
    mkdir -p "$dir/$1"
    sed -e "s/^fusion matmul(/fusion matmul<N = $n, K = $k>(/" "$root/examples/matmul.fsl" > "$dir/$1.fsl"
    "$2" --diagnostics-color=never -o "$dir/$1" "$dir/$1.fsl"
  }
  runtime_m rtm_new_14000_5000 "$fslc" 14000,5000
  runtime_m rtm_new_14336_5000 "$fslc" 14336,5000
  if [ -n "${3:-}" ]; then
    runtime_m rtm_old_14000_5000 "$3" 14000,5000
    runtime_m rtm_old_14336_5000 "$3" 14336,5000
  fi
  # Run W15: the Hilbert tile order (blocks of 4, 8 and 16 tiles a side) against the
  # grouped one (swizzle 8) on the large shapes' tiles.
  for order in h4 h8 h16; do
    schedule plain_t256p_$order matmul "128, 256" "64, 256" 256 4 2 232 "persistent hilbert ${order#h}" "shared tma_store, tile (128, 32)"
  done
  schedule plain_t256x128e_h8 matmul "256, 128" "128, 128" 128 4 2 232 "persistent hilbert 8" "shared tma_store, tile (256, 32)"
  schedule gelu_example_h8 linear_bias_gelu "128, 256" "64, 256" 256 4 2 232 "persistent hilbert 8" "shared tma_store, tile (128, 32)"
  schedule gelu_example_s8 linear_bias_gelu "128, 256" "64, 256" 256 4 2 232 "persistent swizzle 8" "shared tma_store, tile (128, 32)"
  if [ -n "${3:-}" ]; then
    fslc="$3"
    for name in plain_t192sk plain_t128sk plain_t192k2 gelu_t192sk plain_sw16k2 plain_sw16k3 \
        plain_sw8d3 plain_sw16d3 plain_sw32d3 plain_s64d3; do
      src="$dir/$name.fsl"
      mkdir -p "$dir/old_$name" && "$fslc" --diagnostics-color=never -o "$dir/old_$name" "$src"
    done
    # Run W2: the epilogue's instructions (GELU in five, the K = 0 zeroing once a CTA).
    mkdir -p "$dir/old_plain_t256" && "$fslc" -o "$dir/old_plain_t256" "$dir/plain_t256.fsl"
    mkdir -p "$dir/old_gelu_example" &&
      "$fslc" -o "$dir/old_gelu_example" "$root/examples/linear_bias_gelu.fsl"
    mkdir -p "$dir/old_gelu_t256" && "$fslc" -o "$dir/old_gelu_t256" "$dir/gelu_t256.fsl"
  fi
  ;;
run)
  out="${OUT:-$dir}"
  # ONLY="name name ...": build just those variants (a run's own), which saves the device
  # a minute of compiling the others.
  # shellcheck disable=SC2086 # ONLY: the variants' names, one word each
  "$root/tests/bench/build_libraries.sh" "$dir" ${ONLY:-}
  grep -H -E "registers|spill" "$dir"/*/nvcc.txt > "$out/ptxas.txt" 2>/dev/null || true
  lib() { echo "$1=$dir/$1/libfusion.so:$2"; }
  if [ "${RUN:-T2}" = Q1 ]; then
    FSL_AB_TAG=_large python3 "$root/tests/bench/matmul_ab.py" "$out" \
      $(lib plain_t192 plain) $(lib plain_auto plain) $(lib plain_t192sk plain) $(lib old_plain_t192sk plain) \
      $(lib plain_t192skt plain) $(lib plain_t256skt plain) $(lib plain_t128sk plain) $(lib old_plain_t128sk plain) \
      $(lib plain_t192k2 plain) $(lib old_plain_t192k2 plain) \
      $(lib gelu_t192 gelu) $(lib gelu_t192sk gelu) $(lib old_gelu_t192sk gelu) $(lib gelu_t192skt gelu) \
      --rounds "${ROUNDS:-5}" --shapes "${SHAPES:-1000,5000,3000;3000,7000,2000;4000,14000,5000;256,14336,5120;128,14336,5120;2048,2048,2048;4096,14336,5120}"
    FSL_AB_TAG=_few_rows python3 "$root/tests/bench/matmul_ab.py" "$out" \
      $(lib plain_auto plain) $(lib plain_sw16 plain) $(lib plain_sw16k2 plain) $(lib old_plain_sw16k2 plain) \
      $(lib plain_sw16k3 plain) $(lib old_plain_sw16k3 plain) \
      --rounds "${ROUNDS:-7}" --shapes "${SHAPES_FEW:-16,14336,5120;16,4096,4096;8,4096,4096;1,4096,14336;16,5120,14336}"
    exit
  fi
  if [ "${RUN:-T2}" = W1 ]; then
    for v in gelu_example gelu_t320 plain_t320; do
      cuobjdump -sass "$dir/$v/libfusion.so" > "$out/$v.sass" 2>&1 || true
    done
    python3 "$root/tests/bench/matmul_ab.py" "$out" \
      $(lib plain_t256 plain) $(lib plain_t256e plain) $(lib plain_t320 plain) $(lib plain_t320e64 plain) \
      $(lib plain_t256x160 plain) $(lib gelu_example gelu) $(lib gelu_t320 gelu) $(lib gelu_t256x160 gelu) \
      --rounds "${ROUNDS:-5}" --shapes "${SHAPES:-4096,14336,5120;8192,8192,8192;4096,5120,14336;8192,28672,8192;4096,4096,4096;1024,14336,5120;4000,14000,5000}"
    exit
  fi
  if [ "${RUN:-T2}" = W2 ]; then
    # The tile shapes at the shapes whose waves they fill differently, then the epilogue's
    # instructions before (old_, the previous fslc) and after.
    for v in gelu_example old_gelu_example; do
      cuobjdump -sass "$dir/$v/libfusion.so" > "$out/$v.sass" 2>&1 || true
    done
    FSL_AB_TAG=_widths python3 "$root/tests/bench/matmul_ab.py" "$out" \
      $(lib plain_t256 plain) $(lib plain_t224 plain) $(lib plain_t192 plain) $(lib plain_t320 plain) \
      $(lib plain_t256x160 plain) $(lib plain_t256x128 plain) $(lib plain_t192x192 plain) \
      --rounds "${ROUNDS:-5}" --shapes "${SHAPES:-1000,5000,3000;3000,7000,2000;4000,14000,5000;256,14336,5120;512,14336,5120;1024,14336,5120;2048,2048,2048;4096,7424,5120;4096,14336,5120;8192,8192,8192;4096,5120,14336}"
    FSL_AB_TAG=_epilogue python3 "$root/tests/bench/matmul_ab.py" "$out" \
      $(lib old_gelu_example gelu) $(lib gelu_example gelu) $(lib old_gelu_t256 gelu) $(lib gelu_t256 gelu) \
      $(lib old_plain_t256 plain) $(lib plain_t256 plain) $(lib gelu_t320 gelu) $(lib gelu_t256x160 gelu) \
      --rounds "${ROUNDS:-7}" --shapes "${SHAPES_E:-4096,14336,5120;8192,8192,8192;4096,5120,14336;8192,28672,8192;4096,4096,4096;2048,2048,2048;1024,14336,5120;256,14336,5120;1000,5000,3000}"
    exit
  fi
  if [ "${RUN:-T2}" = W5 ]; then
    python3 "$root/tests/bench/matmul_ab.py" "$out" \
      $(lib gelu_example gelu) $(lib gelu_pp128 gelu) $(lib gelu_pp160 gelu) $(lib gelu_pp64 gelu) \
      $(lib gelu_t256x160 gelu) $(lib plain_t256 plain) $(lib plain_pp128 plain) $(lib plain_pp160 plain) \
      --rounds "${ROUNDS:-5}" --shapes "${SHAPES:-4096,14336,5120;4096,5120,14336;8192,8192,8192;8192,28672,8192;4096,4096,4096;2048,2048,2048;1024,14336,5120;4000,14000,5000}"
    exit
  fi
  if [ "${RUN:-T2}" = W6 ]; then
    python3 "$root/tests/bench/matmul_ab.py" "$out" \
      $(lib plain_t256x160 plain) $(lib plain_t256x160c2 plain) $(lib plain_t320 plain) $(lib plain_t320c2 plain) \
      $(lib plain_t256 plain) $(lib gelu_t256x160 gelu) $(lib gelu_t320c2 gelu) $(lib gelu_example gelu) \
      --rounds "${ROUNDS:-5}" --shapes "${SHAPES:-1000,5000,3000;4000,14000,5000;3000,7000,2000;1024,14336,5120;4096,14336,5120;8192,8192,8192;4096,5120,14336}"
    exit
  fi
  if [ "${RUN:-T2}" = W7 ]; then
    python3 "$root/tests/bench/matmul_ab.py" "$out" \
      $(lib plain_t128 plain) $(lib plain_t112 plain) $(lib plain_t224p plain) $(lib plain_t176 plain) \
      $(lib plain_t160 plain) $(lib gelu_t128 gelu) $(lib gelu_t112 gelu) $(lib gelu_t224p gelu) \
      $(lib gelu_t176 gelu) \
      --rounds "${ROUNDS:-5}" --shapes "${SHAPES:-128,14336,5120;256,14336,5120;1024,14336,5120;3000,7000,2000;4096,4096,4096;8192,8192,8192}"
    exit
  fi
  if [ "${RUN:-T2}" = W8 ]; then
    python3 "$root/tests/bench/matmul_ab.py" "$out" \
      $(lib plain_t256p plain) $(lib plain_t128 plain) $(lib plain_t128p plain) $(lib plain_t224p plain) \
      $(lib plain_t256x128e plain) $(lib gelu_example gelu) $(lib gelu_t128 gelu) $(lib gelu_t128p gelu) \
      --rounds "${ROUNDS:-5}" --shapes "${SHAPES:-2048,2048,2048;3072,3072,3072;4096,4096,4096;4096,4096,8192;6144,6144,6144;8192,8192,8192;4096,14336,5120}"
    exit
  fi
  if [ "${RUN:-T2}" = W11 ]; then
    python3 "$root/tests/bench/matmul_ab.py" "$out" \
      $(lib plain_t256x128e plain) $(lib plain_t256x128n2 plain) $(lib plain_t256x128n2u plain) \
      $(lib plain_t256p plain) $(lib plain_t256pn2 plain) $(lib plain_t256pm2 plain) \
      $(lib gelu_t256x128e gelu) $(lib gelu_t256x128n2 gelu) \
      --rounds "${ROUNDS:-5}" --shapes "${SHAPES:-4096,14336,5120;8192,8192,8192;4096,4096,4096;2048,2048,2048;8192,28672,8192;4000,14000,5000}"
    # Where each variant's L2 sectors come from (tests/gpu/profile_l2.sh reads variants
    # from BUILD/matmul, as tests/gpu/generate.sh lays them out).
    mkdir -p "$dir/l2/matmul" && : > "$dir/l2/matmul/variants.txt"
    for v in plain_t256x128e plain_t256x128n2 plain_t256p plain_t256pm2; do
      ln -sfn "$dir/$v" "$dir/l2/matmul/$v" && echo "$v nk plain" >> "$dir/l2/matmul/variants.txt"
    done
    mkdir -p "$dir/l2/out" && BUILD="$dir/l2" OUT="$dir/l2/out" bash "$root/tests/gpu/profile_l2.sh" \
      "plain_t256x128e 4096 14336 5120" "plain_t256x128n2 4096 14336 5120" \
      "plain_t256x128e 8192 8192 8192" "plain_t256x128n2 8192 8192 8192" \
      "plain_t256p 4096 14336 5120" "plain_t256pm2 4096 14336 5120" > "$out/l2.txt" 2>&1
    exit
  fi
  if [ "${RUN:-T2}" = W12 ]; then
    python3 "$root/tests/bench/matmul_ab.py" "$out" \
      $(lib plain_auto plain) $(lib plain_t256x128e plain) $(lib plain_t256x128n2 plain) \
      $(lib plain_t192x192e plain) $(lib plain_t192x192n2 plain) $(lib plain_t256x160 plain) \
      $(lib plain_t256x160n2 plain) $(lib gelu_example gelu) $(lib gelu_t256x128n2 gelu) \
      $(lib gelu_t192x192e gelu) $(lib gelu_t192x192n2 gelu) \
      --rounds "${ROUNDS:-5}" --shapes "${SHAPES:-4000,14000,5000;4096,14336,5000;4000,14000,5120;1000,5000,3000;3000,7000,2000;1024,14336,5120;4096,5120,14336;4096,14336,5120}"
    mkdir -p "$dir/l2/matmul" && : > "$dir/l2/matmul/variants.txt"
    for v in plain_t256x128e plain_t256x128n2; do
      ln -sfn "$dir/$v" "$dir/l2/matmul/$v" && echo "$v nk plain" >> "$dir/l2/matmul/variants.txt"
    done
    mkdir -p "$dir/l2/out" && BUILD="$dir/l2" OUT="$dir/l2/out" bash "$root/tests/gpu/profile_l2.sh" \
      "plain_t256x128e 4000 14000 5000" "plain_t256x128n2 4000 14000 5000" \
      "plain_t256x128e 4096 14336 5000" "plain_t256x128e 4000 14000 5120" > "$out/l2.txt" 2>&1
    exit
  fi
  if [ "${RUN:-T2}" = W16 ]; then
    for shape in 4096,14336,5120 8192,8192,8192 8192,28672,8192 4096,4096,4096 4096,5120,14336; do
      tag=${shape//,/_}
      whole=$dir/whole_plain_$tag/libfusion.so:plain@$shape pieces=$dir/pieces_plain_$tag/libfusion.so:plain@$shape
      FSL_AB_TAG=_w16_whole_first_$tag python3 "$root/tests/bench/matmul_ab.py" "$out" \
        whole=$whole pieces=$pieces whole_again=$whole --rounds "${ROUNDS:-7}" --shapes "$shape"
      FSL_AB_TAG=_w16_pieces_first_$tag python3 "$root/tests/bench/matmul_ab.py" "$out" \
        pieces=$pieces whole=$whole pieces_again=$pieces --rounds "${ROUNDS:-7}" --shapes "$shape"
    done
    exit
  fi
  if [ "${RUN:-T2}" = W15 ]; then
    python3 "$root/tests/bench/matmul_ab.py" "$out" \
      $(lib plain_t256p plain) $(lib plain_t256p_h4 plain) $(lib plain_t256p_h8 plain) $(lib plain_t256p_h16 plain) \
      $(lib plain_t256x128e plain) $(lib plain_t256x128e_h8 plain) \
      $(lib gelu_example_s8 gelu) $(lib gelu_example_h8 gelu) \
      --rounds "${ROUNDS:-5}" --shapes "${SHAPES:-4096,14336,5120;8192,8192,8192;8192,28672,8192;4096,4096,4096;4096,5120,14336}"
    mkdir -p "$dir/l2/matmul" && : > "$dir/l2/matmul/variants.txt"
    for v in plain_t256p plain_t256p_h8 plain_t256p_h16; do
      ln -sfn "$dir/$v" "$dir/l2/matmul/$v" && echo "$v nk plain" >> "$dir/l2/matmul/variants.txt"
    done
    mkdir -p "$dir/l2/out" && BUILD="$dir/l2" OUT="$dir/l2/out" bash "$root/tests/gpu/profile_l2.sh" \
      "plain_t256p 4096 14336 5120" "plain_t256p_h8 4096 14336 5120" "plain_t256p_h16 4096 14336 5120" \
      "plain_t256p 8192 8192 8192" "plain_t256p_h8 8192 8192 8192" > "$out/l2.txt" 2>&1
    exit
  fi
  if [ "${RUN:-T2}" = W13 ]; then
    for shape in 4000,14000,5000 1000,5000,3000 3000,7000,2000; do
      tag=${shape//,/_}
      FSL_AB_TAG=_$tag python3 "$root/tests/bench/matmul_ab.py" "$out" \
        new_plain=$dir/new_plain_$tag/libfusion.so:plain@$shape db_plain=$dir/db_plain_$tag/libfusion.so:plain@$shape \
        new_gelu=$dir/new_gelu_$tag/libfusion.so:gelu@$shape db_gelu=$dir/db_gelu_$tag/libfusion.so:gelu@$shape \
        $(lib plain_t256x128e plain) --rounds "${ROUNDS:-7}" --shapes "${shape/,/,}"
    done
    FSL_AB_TAG=_rows python3 "$root/tests/bench/matmul_ab.py" "$out" \
      $(lib plain_t224p plain) $(lib plain_t224pn2 plain) $(lib plain_t176 plain) $(lib plain_t176n2 plain) \
      $(lib plain_t128p plain) $(lib plain_t128n2 plain) $(lib plain_t256x128e plain) \
      --rounds "${ROUNDS:-5}" --shapes "${SHAPES:-1024,14336,5120;256,14336,5120;2048,14336,5120;3000,7000,2000;4096,4096,4096}"
    exit
  fi
  if [ "${RUN:-T2}" = W14 ]; then
    for nk in 14000,5000 14336,5000; do
      tag=${nk//,/_}; IFS=, read -r n k <<< "$nk"
      FSL_AB_TAG=_rtm_$tag python3 "$root/tests/bench/matmul_ab.py" "$out" \
        rtm_old=$dir/rtm_old_$tag/libfusion.so:plain@,$n,$k rtm_new=$dir/rtm_new_$tag/libfusion.so:plain@,$n,$k \
        --rounds "${ROUNDS:-7}" --shapes "640,$n,$k;1000,$n,$k;2048,$n,$k;4000,$n,$k;4096,$n,$k;8192,$n,$k"
    done
    exit
  fi
  if [ "${RUN:-T2}" = Q2 ]; then
    for rows in 8 16 32; do
      FSL_AB_TAG=_m$rows python3 "$root/tests/bench/matmul_ab.py" "$out" \
        $(lib old_plain_sw${rows}d3 plain) $(lib plain_sw${rows}d3 plain) $(lib plain_sw${rows}d2 plain) \
        --rounds "${ROUNDS:-9}" --shapes "$rows,4096,4096;$rows,4096,14336"
    done
    FSL_AB_TAG=_m64 python3 "$root/tests/bench/matmul_ab.py" "$out" \
      $(lib old_plain_s64d3 plain) $(lib plain_s64d3 plain) $(lib plain_s64d2 plain) \
      --rounds "${ROUNDS:-9}" --shapes "64,4096,4096;48,4096,4096;64,4096,14336"
    exit
  fi
  if [ "${RUN:-T2}" = E1 ]; then
    python3 "$root/tests/bench/matmul_ab.py" "$out" \
      $(lib plain_auto plain) $(lib plain_t256 plain) $(lib plain_t256e plain) \
      $(lib plain_t256x128 plain) $(lib plain_t256x128e plain) \
      $(lib plain_t192x192 plain) $(lib plain_t192x192e plain) \
      $(lib gelu_example gelu) $(lib gelu_t256 gelu) $(lib gelu_t256e gelu) \
      $(lib gelu_t256x128 gelu) $(lib gelu_t256x128e gelu) \
      --rounds "${ROUNDS:-5}" --shapes "${SHAPES:-4096,14336,5120;8192,8192,8192;4096,5120,14336;4096,4096,4096;2048,2048,2048;1000,5000,3000;4000,14000,5000}"
    exit
  fi
  if [ "${RUN:-T2}" = S1 ]; then
    python3 "$root/tests/bench/matmul_ab.py" "$out" \
      $(lib plain_s64x112 plain) $(lib plain_auto plain) $(lib plain_s64x112d plain) \
      $(lib plain_sw16 plain) $(lib plain_sw16p plain) $(lib plain_sw16w plain) \
      $(lib plain_sw8 plain) $(lib plain_sw32 plain) $(lib plain_sw16k2 plain) \
      $(lib gelu_s64x112 gelu) $(lib gelu_sw16 gelu) \
      --rounds "${ROUNDS:-5}" --shapes "${SHAPES:-1,14336,5120;8,14336,5120;16,14336,5120;32,14336,5120;64,14336,5120;16,28672,8192;16,4096,4096}"
    exit
  fi
  if [ "${RUN:-T2}" = T4 ]; then
    python3 "$root/tests/bench/matmul_ab.py" "$out" \
      $(lib plain_s64x112 plain) $(lib plain_s64x112d plain) \
      $(lib gelu_s64x112 gelu) $(lib gelu_s64x112d gelu) \
      --rounds "${ROUNDS:-7}" --shapes "${SHAPES:-1,14336,5120;16,14336,5120;64,14336,5120;32,4096,4096;16,28672,8192}"
    exit
  fi
  if [ "${RUN:-T2}" = K2 ]; then
    python3 "$root/tests/bench/matmul_ab.py" "$out" \
      $(lib plain_auto plain) $(lib plain_t224 plain) $(lib plain_t224r5 plain) $(lib plain_t192r5 plain) \
      $(lib plain_t256r4 plain) $(lib plain_t224c2 plain) $(lib plain_t224r4c2 plain) \
      $(lib gelu_t224 gelu) $(lib gelu_t224r5 gelu) \
      --rounds "${ROUNDS:-5}" --shapes "${SHAPES:-256,14336,5120;128,14336,5120;512,14336,5120;1024,14336,5120;4096,14336,5120;256,4096,4096}"
    exit
  fi
  if [ "${RUN:-T2}" = K1 ]; then
    python3 "$root/tests/bench/matmul_ab.py" "$out" \
      $(lib plain_auto plain) $(lib plain_t192 plain) $(lib plain_t192sk plain) $(lib plain_t128sk plain) \
      $(lib plain_t256sk plain) $(lib plain_t192k2 plain) $(lib gelu_t192 gelu) $(lib gelu_t192sk gelu) \
      --rounds "${ROUNDS:-5}" --shapes "${SHAPES:-1000,5000,3000;3000,7000,2000;4000,14000,5000;256,14336,5120;128,14336,5120}"
    exit
  fi
  if [ "${RUN:-T2}" = T3 ]; then
    python3 "$root/tests/bench/matmul_ab.py" "$out" \
      $(lib plain_auto plain) $(lib plain_t256 plain) $(lib plain_t224 plain) \
      $(lib plain_t256x128 plain) $(lib plain_t192x192 plain) \
      $(lib gelu_example gelu) $(lib gelu_t256x128 gelu) $(lib gelu_t192x192 gelu) \
      --rounds "${ROUNDS:-5}" --shapes "${SHAPES:-4096,14336,5120;4000,14000,5000;8192,8192,8192;4096,5120,14336;1024,14336,5120;2048,2048,2048}"
    exit
  fi
  python3 "$root/tests/bench/matmul_ab.py" "$out" \
    $(lib plain_auto plain) $(lib plain_t256 plain) $(lib plain_t128 plain) $(lib plain_splitk plain) \
    $(lib plain_t224 plain) $(lib plain_t192 plain) $(lib plain_s64x112 plain) $(lib plain_s64x64 plain) \
    $(lib gelu_example gelu) $(lib gelu_t224 gelu) $(lib gelu_t192 gelu) $(lib gelu_s64x112 gelu) \
    --rounds "${ROUNDS:-5}" --shapes "${SHAPES:-4096,14336,5120;1024,14336,5120;256,14336,5120;128,14336,5120;64,14336,5120;16,14336,5120;1,14336,5120;3000,7000,2000;4096,7424,5120;4000,14000,5000;8192,8192,8192;1000,5000,3000}"
  ;;
*) echo "usage: $0 generate FSLC | run" >&2; exit 2 ;;
esac
